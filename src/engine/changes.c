/* A project's changes applied as approved (changes.h). */
#include "engine/changes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/macro.h"
#include "util/banned.h"

int engine_changes_read(int upper_fd, const struct changes_base *b, struct engine_changes *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	r = changes_list(upper_fd, b, &ret->l);
	if (r < 0)
		return r;
	r = changes_digest(upper_fd, &ret->l, ret->sha256, &ret->bytes);
	if (r < 0)
		engine_changes_release(ret);
	return r;
}

void engine_changes_release(struct engine_changes *c)
{
	change_list_release(&c->l);
}

int engine_changes_apply(int upper_fd, struct changes_base *b, const char *sha256, size_t *ret_n,
			 char *msg, size_t n)
{
	struct ws_owner o = { .uid = b->uid, .gid = b->gid, .chown = geteuid() == 0 };
	_cleanup_close_ int dst = -1;
	struct engine_changes c;
	int r = engine_changes_read(upper_fd, b, &c);

	if (r == -ECANCELED || (r == 0 && strcmp(c.sha256, sha256))) {
		snprintf(msg, n,
			 "the changes changed since they were read for approval (changes_sha256 "
			 "%.16s...): nothing was applied; look at them again",
			 sha256);
		if (r == 0)
			engine_changes_release(&c);
		return -ECANCELED;
	}
	if (r < 0) {
		snprintf(msg, n, "cannot read the changes to '%s': %s", b->project, strerror(-r));
		return r;
	}
	if (c.l.truncated) {
		snprintf(msg, n, "more than %u changes: too many to apply at once",
			 CHANGES_MAX_ENTRIES);
		r = -E2BIG;
	} else if ((r = changes_check(b, &c.l, msg, n)) == 0) {
		dst = open(b->project, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dst < 0) {
			r = -errno;
			snprintf(msg, n, "cannot open the project '%s': %s", b->project,
				 strerror(-r));
		} else {
			r = changes_copy(upper_fd, dst, &c.l, &o, msg, n);
		}
	}
	if (r == 0) {
		/* what the project holds now is the start of what comes next */
		b->since_ns = changes_start_ns();
		*ret_n = c.l.n;
	}
	engine_changes_release(&c);
	return r;
}

int engine_changes_check(const struct changes_base *b, const struct engine_changes *c, char *msg,
			 size_t n)
{
	return changes_check(b, &c->l, msg, n);
}

int engine_changes_diff(int upper_fd, const struct changes_base *b, const struct engine_changes *c,
			struct buf *diff, bool *ret_cut)
{
	int r = changes_diff(upper_fd, b, &c->l, diff);

	/* what fits is kept: a long diff is shown cut, not refused */
	*ret_cut = r == -E2BIG;
	return r == -E2BIG ? 0 : r;
}

json_t *engine_changes_json(const struct changes_base *b, const struct engine_changes *c,
			    const struct buf *diff, bool cut)
{
	json_t *j = changes_json(b, &c->l, diff, cut);

	if (j && (json_object_set_new(j, "changes_sha256", json_string(c->sha256)) < 0 ||
		  json_object_set_new(j, "bytes", json_integer((json_int_t)c->bytes)) < 0)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

int engine_changes_open(const char *dir, struct changes_base *b, int *ret_upper_fd, char *msg,
			size_t n)
{
	return changes_load(dir, b, ret_upper_fd, msg, n);
}

int engine_changes_remove(const char *dir)
{
	return changes_remove(dir);
}
