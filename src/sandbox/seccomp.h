/* seccomp: the sandbox's system call policy, a default-deny allowlist
 * compiled to BPF with libseccomp in the supervisor (before clone, since
 * libseccomp allocates) and loaded by the child as its last step.
 *
 * Policy: calls on the allowlist run; the dangerous calls of DESIGN.md
 * fail with EPERM; every other call fails with ENOSYS so programs take
 * their "not supported" fallback; clone() with namespace flags fails with
 * EPERM; clone3() with ENOSYS (its flags live in memory, unfilterable, and
 * glibc falls back to clone); ioctl TIOCSTI/TIOCLINUX/TIOCSETD fail with
 * EPERM whatever the upper 32 bits of the request (CVE-2019-10063);
 * mknod makes FIFOs, files and sockets, never devices (EPERM); personality
 * only queries and the harmless domains (seccomp_policy.c).  Any
 * architecture but x86_64/aarch64 native, including x32 and int 0x80
 * entry, kills the process. */
#ifndef CODECELL_SANDBOX_SECCOMP_H
#define CODECELL_SANDBOX_SECCOMP_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The names denied with EPERM, NULL-terminated (for tests and docs). */
extern const char *const sandbox_seccomp_denied[];
/* The names allowed, NULL-terminated. */
extern const char *const sandbox_seccomp_allowed[];

/* The policy is two stacked filters.  The kernel runs both and takes the
 * most restrictive verdict, which is how the terminal-ioctl rule wins over
 * the main filter's ALLOW for ioctl: in one libseccomp filter an
 * unconditional ALLOW swallows argument-filtered rules for the same call.
 *   SECCOMP_MAIN  default ENOSYS, the allowlist, EPERM list, clone rules
 *   SECCOMP_ARGS  default ALLOW, argument rules that must win over an
 *                 ALLOW: ioctl TIOCSTI/TIOCLINUX/TIOCSETD -> EPERM, socket() of a
 *                 family other than unix, inet, inet6, netlink ->
 *                 EAFNOSUPPORT (vsock reaches the host whatever the
 *                 network namespace; AF_ALG and friends are kernel
 *                 surface an interpreter does not need) */
enum { SECCOMP_MAIN, SECCOMP_ARGS, SANDBOX_SECCOMP_N };

/* The socket families a sandboxed program may create. */
extern const int sandbox_seccomp_families[];

/* The filters compiled at build time (tools/gen-seccomp): what sandboxes
 * load. */
extern const struct sock_fprog sandbox_seccomp_programs[SANDBOX_SECCOMP_N];
/* "libseccomp X.Y.Z": what compiled them. */
extern const char sandbox_seccomp_built_with[];

/* The rest is in seccomp_policy.c, linked into tools/gen-seccomp and the
 * tests only. */

/* Build filter `which`.  On success *ret is a heap program (free with
 * sandbox_seccomp_free()).  Returns 0 or -errno.  On x86_64 the main
 * filter is libseccomp's recompiled into a search tree over runs of call
 * numbers (seccomp_policy.c, compact()): the same verdicts in 203
 * instructions against 515. */
int sandbox_seccomp_build(int which, struct sock_fprog **ret);
/* The filter as libseccomp compiles it: what the compact one must equal
 * in every verdict. */
int sandbox_seccomp_build_reference(int which, struct sock_fprog **ret);
/* Run a classic BPF seccomp program on d, as the kernel would (the
 * instructions libseccomp and compact() emit); *read_args (if given):
 * whether it looked at an argument. */
struct seccomp_data;
uint32_t sandbox_bpf_run(const struct sock_fprog *prog, const struct seccomp_data *d,
			 bool *read_args);
/* sandbox_bpf_run()'s answer for a program it cannot run as the kernel
 * would (an instruction neither program uses, a load out of bounds, no
 * return): not a seccomp action. */
#define SANDBOX_BPF_BAD 0xffffffffu
/* The constant of each comparison in prog, and one below and above it,
 * into out (at most max): where a verdict can change.  The count. */
size_t sandbox_bpf_constants(const struct sock_fprog *prog, uint32_t *out, size_t max);
void sandbox_seccomp_free(struct sock_fprog *prog);
/* Load the n filters into the calling thread (no allocation; safe after
 * fork).  Requires no_new_privs.  0 or -errno. */
int sandbox_seccomp_load(const struct sock_fprog *progs, int n);

#endif
