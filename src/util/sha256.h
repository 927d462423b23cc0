/* util/sha256: FIPS 180-4 SHA-256, for the audit log's code digests and
 * the policy file's client keys (stored as digests, never in clear). */
#ifndef CODECELL_UTIL_SHA256_H
#define CODECELL_UTIL_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char block[64];
	size_t fill;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t n);
void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN]);
/* One call: the digest of data[0..n) as 64 lower-case hex digits and a NUL. */
void sha256_hex(const void *data, size_t n, char out[2 * SHA256_LEN + 1]);
/* given[0..glen) == secret[0..slen), in a time that depends on slen only:
 * nothing about a token leaks through the time a wrong guess takes. */
bool secret_equal(const char *given, size_t glen, const char *secret, size_t slen);

#endif
