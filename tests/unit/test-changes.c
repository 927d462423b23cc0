/* session/changes: a planned apply (the bytes a person approved) writes
 * all of them or, when the sandbox changed one since it was read,
 * nothing at all. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "session/changes.h"
#include "util/fs.h"

static void put(const char *dir, const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *get(const char *dir, const char *name)
{
	static char text[256];
	char p[512];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "r");
	if (!f)
		return NULL;
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

/* the names in dir, sorted, joined by spaces */
static void names(const char *dir, char *out, size_t n)
{
	struct dirent **v;
	int k = scandir(dir, &v, NULL, alphasort);

	assert_true(k >= 0);
	out[0] = '\0';
	for (int i = 0; i < k; i++) {
		if (strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, ".."))
			snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? " " : "",
				 v[i]->d_name);
		free(v[i]);
	}
	free(v);
}

static void planned_apply_is_all_or_nothing(void **state)
{
	char top[] = "/tmp/cc-changes-XXXXXX", project[64], upper[64], sub[80], seen[512];
	char digest[2 * SHA256_LEN + 1], msg[512];
	struct changes_base b;
	struct change_list l;
	struct ws_owner o = { .uid = getuid(), .gid = getgid(), .chown = false };
	uint64_t bytes;
	int up, dst;

	(void)state;
	assert_non_null(mkdtemp(top));
	snprintf(project, sizeof(project), "%s/project", top);
	snprintf(upper, sizeof(upper), "%s/upper", top);
	assert_int_equal(mkdir(project, 0755), 0);
	assert_int_equal(mkdir(upper, 0755), 0);
	put(project, "keep.txt", "kept\n");
	/* what the program wrote: a new file, a new directory with a file,
	 * and a file last in the list */
	put(upper, "a.txt", "new a\n");
	snprintf(sub, sizeof(sub), "%s/d", upper);
	assert_int_equal(mkdir(sub, 0755), 0);
	put(sub, "c.txt", "new c\n");
	put(upper, "z.txt", "as approved\n");
	assert_int_equal(changes_base_init(&b, project), 0);
	up = open(upper, O_PATH | O_DIRECTORY | O_CLOEXEC);
	dst = open(project, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(up >= 0 && dst >= 0);
	assert_int_equal(changes_list(up, &b, &l), 0);
	assert_int_equal(l.n, 4);
	assert_int_equal(changes_digest(up, &l, digest, &bytes), 0);

	/* the sandbox rewrites the last file after the person approved */
	put(upper, "z.txt", "rewritten\n");
	assert_int_equal(changes_copy(up, dst, &l, &o, msg, sizeof(msg)), -ECANCELED);
	assert_non_null(strstr(msg, "z.txt"));
	assert_non_null(strstr(msg, "nothing was written"));
	names(project, seen, sizeof(seen));
	assert_string_equal(seen, "keep.txt"); /* no a.txt, no d, no staging left */

	/* as approved again: every change lands, nothing else */
	put(upper, "z.txt", "as approved\n");
	assert_int_equal(changes_copy(up, dst, &l, &o, msg, sizeof(msg)), 0);
	names(project, seen, sizeof(seen));
	assert_string_equal(seen, "a.txt d keep.txt z.txt");
	assert_string_equal(get(project, "a.txt"), "new a\n");
	assert_string_equal(get(project, "d/c.txt"), "new c\n");
	assert_string_equal(get(project, "z.txt"), "as approved\n");

	change_list_release(&l);
	close(up);
	close(dst);
	assert_int_equal(rm_rf_at(AT_FDCWD, top), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(planned_apply_is_all_or_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
