#include "sandbox/ids.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/timeutil.h"
#include "util/banned.h"

/* A decimal field [s, e) of a line. */
static int field_u64(const char *s, const char *e, uint64_t *ret)
{
	char num[24];

	if (e <= s || (size_t)(e - s) >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, (size_t)(e - s));
	num[e - s] = '\0';
	return parse_u64(num, ret) < 0 ? -EINVAL : 0;
}

int ids_parse_range(const char *s, uint64_t *ret_base, uint64_t *ret_count)
{
	const char *colon = strchr(s, ':');
	uint64_t base, count;

	if (!colon || field_u64(s, colon, &base) < 0 ||
	    field_u64(colon + 1, colon + 1 + strlen(colon + 1), &count) < 0)
		return -EINVAL;
	*ret_base = base;
	*ret_count = count;
	return 0;
}

int ids_subid_find(const char *text, const char *name, uint64_t *ret_base, uint64_t *ret_count)
{
	size_t nl = strlen(name);

	for (const char *l = text; l && *l;) {
		const char *end = strchr(l, '\n');
		char line[128];
		size_t len = end ? (size_t)(end - l) : strlen(l);

		if (len > nl && !strncmp(l, name, nl) && l[nl] == ':') {
			if (len >= sizeof(line))
				return -EINVAL;
			memcpy(line, l + nl + 1, len - nl - 1);
			line[len - nl - 1] = '\0';
			return ids_parse_range(line, ret_base, ret_count);
		}
		l = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

static bool in_range(uint64_t id, uint64_t base, uint64_t count)
{
	return id >= base && id - base < count;
}

int ids_check_range(uint64_t base, uint64_t count)
{
	if (count < 1 || base > UINT32_MAX || count > UINT32_MAX || base + count > 0xfffffffeull)
		return -ERANGE;
	/* root, nobody, and the "no id" values chown(2) and setresuid(2)
	 * read as "unchanged" */
	if (in_range(0, base, count) || in_range(65534, base, count))
		return -ERANGE;
	return 0;
}

static int load_subid(const char *path, uint64_t *ret_base, uint64_t *ret_count)
{
	char text[65536];
	int r = read_small_fileat(AT_FDCWD, path, text, sizeof(text));

	if (r < 0)
		return r == -ENOENT ? -ENOENT : r;
	return ids_subid_find(text, IDS_RANGE_NAME, ret_base, ret_count);
}

int ids_load(struct id_range *ret)
{
	const char *env = getenv("CODECELL_ID_RANGE");
	uint64_t ub, uc, gb, gc;
	int r;

	if (env && *env) {
		r = ids_parse_range(env, &ub, &uc);
		if (r < 0)
			return r;
		gb = ub;
		gc = uc;
		ret->source = "CODECELL_ID_RANGE";
	} else {
		r = load_subid("/etc/subuid", &ub, &uc);
		if (r == 0)
			r = load_subid("/etc/subgid", &gb, &gc);
		if (r < 0)
			return r;
		ret->source = "/etc/subuid and /etc/subgid";
	}
	if ((r = ids_check_range(ub, uc)) < 0 || (r = ids_check_range(gb, gc)) < 0)
		return r;
	ret->uid_base = (uint32_t)ub;
	ret->gid_base = (uint32_t)gb;
	uc = uc < gc ? uc : gc;
	ret->count = (uint32_t)(uc < IDS_MAX_COUNT ? uc : IDS_MAX_COUNT);
	return 0;
}

/* /run/codecell/ids.lock, a new open file description each call (locks
 * of one description never conflict with each other).  The directory
 * and the file must be root's and not links: another user who could
 * replace them could hand out ids in use. */
static int open_lock_file(void)
{
	_cleanup_close_ int dfd = -1;
	struct stat st;
	int fd;

	if (mkdir(IDS_LOCK_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	dfd = open(IDS_LOCK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	fd = openat(dfd, "ids.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int ids_take(const struct id_range *r, uid_t *ret_uid, gid_t *ret_gid, int *ret_lock_fd)
{
	uint32_t start;
	int fd = open_lock_file();

	if (fd < 0)
		return fd;
	if (getrandom(&start, sizeof(start), GRND_NONBLOCK) != sizeof(start))
		start = (uint32_t)now_ns();
	for (uint32_t k = 0; k < r->count; k++) {
		uint32_t i = (uint32_t)(((uint64_t)start + k) % r->count);
		struct flock fl = {
			.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)i, .l_len = 1
		};

		if (fcntl(fd, F_OFD_SETLK, &fl) == 0) {
			*ret_uid = (uid_t)(r->uid_base + i);
			*ret_gid = (gid_t)(r->gid_base + i);
			*ret_lock_fd = fd;
			return 0;
		}
		if (errno != EAGAIN && errno != EACCES) {
			int e = -errno;

			close(fd);
			return e;
		}
	}
	close(fd);
	return -EAGAIN;
}
