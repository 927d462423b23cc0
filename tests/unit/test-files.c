/* engine/files.c on a plain directory standing in for a workspace: the
 * one depth cap, paths that lead out, uploads renamed into place, and
 * the one errno table every door answers from. */
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

#include "engine/files.h"

struct tmp_ws {
	char dir[64];
	struct engine_ws w;
};

static int ws_setup(void **state)
{
	struct tmp_ws *t = calloc(1, sizeof(*t));

	snprintf(t->dir, sizeof(t->dir), "/tmp/cc-files-XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	t->w.fd = open(t->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	t->w.owner.chown = 0; /* as ourselves: no user namespace here */
	*state = t;
	return t->w.fd < 0 ? -1 : 0;
}

static int ws_teardown(void **state)
{
	struct tmp_ws *t = *state;
	char cmd[128];

	close(t->w.fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	if (system(cmd) != 0)
		return -1;
	free(t);
	return 0;
}

static int count(void *arg, int dir, const char *name, const char *rel, const struct stat *st)
{
	(void)dir;
	(void)name;
	(void)rel;
	(void)st;
	(*(int *)arg)++;
	return 0;
}

static void write_list_move_remove(void **state)
{
	struct tmp_ws *t = *state;
	struct engine_files_listing l = { .depth = 1 };
	struct stat st;
	bool replaced;
	int n = 0, fd;

	assert_int_equal(engine_files_write(&t->w, "a/b/c.txt", "hi", 2, &replaced), 0);
	assert_false(replaced);
	assert_int_equal(engine_files_write(&t->w, "a/b/c.txt", "hey", 3, &replaced), 0);
	assert_true(replaced);
	fd = engine_files_open(&t->w, "a/b/c.txt", &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_size, 3);
	close(fd);
	assert_int_equal(engine_files_mkdir(&t->w, "a/b"), -EEXIST);
	assert_int_equal(engine_files_mkdir(&t->w, "x/y"), 0);
	assert_int_equal(engine_files_move(&t->w, "a/b/c.txt", "x/y/z/d.txt"), 0);
	assert_int_equal(engine_files_stat(&t->w, "a/b/c.txt", &st), -ENOENT);
	assert_int_equal(engine_files_stat(&t->w, "x/y/z/d.txt", &st), 0);
	/* a, a/b, x, x/y, x/y/z, x/y/z/d.txt */
	l.depth = 4;
	assert_int_equal(engine_files_list(&t->w, "", &l, count, &n), 0);
	assert_int_equal(n, 6);
	assert_int_equal(engine_files_list(&t->w, "x/y/z/d.txt", &l, count, &n), -ENOTDIR);
	assert_int_equal(engine_files_remove(&t->w, "x"), 0);
	assert_int_equal(engine_files_stat(&t->w, "x", &st), -ENOENT);
	assert_int_equal(engine_files_remove(&t->w, ""), -EBUSY);
	assert_int_equal(engine_files_move(&t->w, ".", "q"), -EBUSY);
}

static void paths_do_not_lead_out(void **state)
{
	struct tmp_ws *t = *state;
	struct stat st;
	bool replaced;
	char link[128];
	int fd;

	snprintf(link, sizeof(link), "%s/out", t->dir);
	assert_int_equal(symlink("/etc", link), 0);
	fd = engine_files_open(&t->w, "out/passwd", &st);
	assert_true(fd == -EXDEV || fd == -ELOOP);
	assert_true(engine_files_write(&t->w, "out/x", "x", 1, &replaced) < 0);
	assert_true(engine_files_open(&t->w, "../etc/passwd", &st) < 0);
	/* removing the link removes the link, not what it points to */
	assert_int_equal(engine_files_remove(&t->w, "out"), 0);
	assert_int_equal(stat("/etc/passwd", &st), 0);
}

/* One cap for every walk: a path of FILES_DEPTH_MAX + 1 directories is
 * refused; a tree deeper than the cap is removed in part (-EMLINK). */
static void one_depth_cap(void **state)
{
	struct tmp_ws *t = *state;
	char path[2 * (FILES_DEPTH_MAX + 2) + 8] = "", host[sizeof(path) + 80];
	struct stat st;
	bool replaced;

	for (int i = 0; i < FILES_DEPTH_MAX; i++)
		strcat(path, i ? "/d" : "d");
	assert_int_equal(engine_files_mkdir(&t->w, path), 0);
	strcat(path, "/d/f");
	assert_int_equal(engine_files_write(&t->w, path, "x", 1, &replaced), -ENAMETOOLONG);
	/* one level deeper than any door goes, made by "the sandboxed code" */
	path[strlen(path) - 4] = '\0';
	snprintf(host, sizeof(host), "%s/%s/d", t->dir, path);
	assert_int_equal(mkdir(host, 0755), 0);
	assert_int_equal(engine_files_remove(&t->w, "d"), -EMLINK);
	assert_int_equal(engine_files_stat(&t->w, "d", &st), 0);
}

static void one_error_table(void **state)
{
	struct engine_files_error e;

	(void)state;
	engine_files_error(-ENOENT, "read", "a.txt", &e);
	assert_int_equal(e.http, 404);
	assert_int_equal(e.e2b_http, 404);
	assert_string_equal(e.code, "file_not_found");
	assert_non_null(strstr(e.message, "'a.txt'"));
	/* /v1 says conflict, envd a bad argument (E2B's SDK: InvalidArgumentError) */
	engine_files_error(-EISDIR, "write", "d", &e);
	assert_int_equal(e.http, 409);
	assert_int_equal(e.e2b_http, 400);
	engine_files_error(-ENOSPC, "write", "big", &e);
	assert_int_equal(e.http, 507);
	assert_non_null(strstr(e.message, "write 'big'"));
	engine_files_error(-EBUSY, "remove", "", &e);
	assert_non_null(strstr(e.message, "cannot remove the workspace itself"));
	engine_files_error(-EPROTO, "read", "p", &e);
	assert_int_equal(e.http, 500);
	assert_string_equal(e.code, "file_error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(write_list_move_remove, ws_setup, ws_teardown),
		cmocka_unit_test_setup_teardown(paths_do_not_lead_out, ws_setup, ws_teardown),
		cmocka_unit_test_setup_teardown(one_depth_cap, ws_setup, ws_teardown),
		cmocka_unit_test(one_error_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
