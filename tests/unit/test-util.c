/* util: buffers with caps, strict parsers, UTF-8 validation. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/base64.h"
#include "util/buf.h"
#include "util/capture.h"
#include "util/envname.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/outorder.h"
#include "util/parse.h"
#include "util/utf8.h"
#include "util/percent.h"
#include "util/textdiff.h"

static void buf_append_and_cap(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 8);
	assert_string_equal(buf_str(&b), "");
	assert_int_equal(buf_puts(&b, "abcd"), 0);
	assert_int_equal(buf_printf(&b, "%d", 123), 0);
	assert_string_equal(buf_str(&b), "abcd123");
	/* one more byte fits, two do not; the buffer is unchanged */
	assert_int_equal(buf_puts(&b, "xy"), -E2BIG);
	assert_string_equal(buf_str(&b), "abcd123");
	assert_int_equal(buf_puts(&b, "x"), 0);
	assert_int_equal(b.len, 8);
	assert_int_equal(buf_printf(&b, "%s", "z"), -E2BIG);
	buf_release(&b);
}

static void buf_detach_hands_over(void **state)
{
	struct buf b;
	size_t len;
	char *p;

	(void)state;
	buf_init(&b, 100);
	p = buf_detach(&b, &len); /* empty buffer: still a string */
	assert_non_null(p);
	assert_int_equal(len, 0);
	free(p);
	assert_int_equal(buf_append(&b, "a\0b", 3), 0);
	p = buf_detach(&b, &len);
	assert_int_equal(len, 3);
	assert_memory_equal(p, "a\0b", 3);
	assert_int_equal(b.len, 0);
	free(p);
}

static void buf_read_fd_respects_cap(void **state)
{
	int p[2];
	struct buf b;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "0123456789", 10), 10);
	close(p[1]);
	buf_init(&b, 5);
	assert_int_equal(buf_read_fd(&b, p[0]), -E2BIG);
	close(p[0]);
	buf_release(&b);
	buf_init(&b, 5);
	assert_int_equal(buf_read_file(&b, "/nonexistent/x"), -ENOENT);
	buf_release(&b);
}

static void parse_sizes(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse_size("512", &v), 0);
	assert_int_equal(v, 512);
	assert_int_equal(parse_size("64K", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(parse_size("256M", &v), 0);
	assert_int_equal(v, 256ull << 20);
	assert_int_equal(parse_size("1.5G", &v), 0);
	assert_int_equal(v, 3ull << 29);
	assert_int_equal(parse_size("2MiB", &v), 0);
	assert_int_equal(v, 2ull << 20);
	assert_int_equal(parse_size("1g", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(parse_size("12Q", &v), -EINVAL);
	assert_int_equal(parse_size("", &v), -EINVAL);
	assert_int_equal(parse_size("-1M", &v), -EINVAL);
	assert_int_equal(parse_size("M", &v), -EINVAL);
	assert_int_equal(parse_size("1.5", &v), -EINVAL);
	assert_int_equal(parse_size("99999999999T", &v), -ERANGE);
}

static void parse_durations(void **state)
{
	double s;

	(void)state;
	assert_int_equal(parse_duration("2", &s), 0);
	assert_true(s == 2.0);
	assert_int_equal(parse_duration("0.5", &s), 0);
	assert_true(s == 0.5);
	assert_int_equal(parse_duration("1500ms", &s), 0);
	assert_true(s > 1.499 && s < 1.501);
	assert_int_equal(parse_duration("1m", &s), 0);
	assert_true(s == 60.0);
	assert_int_equal(parse_duration("0", &s), -EINVAL);
	assert_int_equal(parse_duration("abc", &s), -EINVAL);
	assert_int_equal(parse_duration("5x", &s), -EINVAL);
	assert_int_equal(parse_duration("-1", &s), -EINVAL);
	assert_int_equal(parse_duration("1e300", &s), -ERANGE);
}

static void parse_integers(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse_u64("64", &v), 0);
	assert_int_equal(v, 64);
	assert_int_equal(parse_u64("-1", &v), -EINVAL);
	assert_int_equal(parse_u64("+1", &v), -EINVAL);
	assert_int_equal(parse_u64("1 ", &v), -EINVAL);
	assert_int_equal(parse_u64("99999999999999999999999", &v), -ERANGE);
}

static void utf8(void **state)
{
	uint64_t off = 99;

	(void)state;
	assert_true(utf8_valid("plain", 5, NULL));
	assert_true(utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, NULL));
	assert_false(utf8_valid("ab\xff", 3, &off));
	assert_int_equal(off, 2);
	assert_false(utf8_valid("\xc0\xaf", 2, &off)); /* overlong '/' */
	assert_int_equal(off, 0);
	assert_false(utf8_valid("\xed\xa0\x80", 3, &off));     /* surrogate */
	assert_false(utf8_valid("\xe2\x82", 2, &off));	       /* truncated */
	assert_false(utf8_valid("\xf4\x90\x80\x80", 4, &off)); /* > U+10FFFF */
}

/* the checker, the chunk cut and the repair agree on every sequence */
static void utf8_cut_and_repair(void **state)
{
	static const struct {
		const char *in, *out;
	} rep[] = {
		{ "ok \xc3\xa9", "ok \xc3\xa9" },
		{ "a\xffz", "a\xef\xbf\xbdz" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },		    /* overlong */
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* surrogate */
		{ "x\xe2\x82", "x\xef\xbf\xbd\xef\xbf\xbd" },		    /* cut */
		{ "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
	};
	size_t len;
	char *t;

	(void)state;
	for (size_t i = 0; i < sizeof(rep) / sizeof(rep[0]); i++) {
		t = utf8_repair(rep[i].in, strlen(rep[i].in), &len);
		assert_non_null(t);
		assert_string_equal(t, rep[i].out);
		assert_int_equal(len, strlen(rep[i].out));
		assert_true(utf8_valid(t, len, NULL));
		assert_int_equal(utf8_valid(rep[i].in, strlen(rep[i].in), NULL),
				 !strcmp(rep[i].in, rep[i].out));
		free(t);
	}
	/* a character split between chunks waits; a bad byte does not */
	assert_int_equal(utf8_complete_len("ab\xe2\x82", 4), 2);
	assert_int_equal(utf8_complete_len("ab\xe2\x82\xac", 5), 5);
	assert_int_equal(utf8_complete_len("ab\xf0", 3), 2);
	assert_int_equal(utf8_complete_len("ab\xff", 3), 3);
	assert_int_equal(utf8_complete_len("", 0), 0);
}

static void openat_beneath_stays_inside(void **state)
{
	char dir[] = "/tmp/cc-unit-XXXXXX";
	int d, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	d = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(d >= 0);
	assert_int_equal(symlinkat("/etc/passwd", d, "abs"), 0);
	assert_int_equal(symlinkat("../../etc/passwd", d, "rel"), 0);
	assert_int_equal(openat_beneath(d, "abs", O_RDONLY, 0), -EXDEV);
	assert_int_equal(openat_beneath(d, "rel", O_RDONLY, 0), -EXDEV);
	assert_int_equal(openat_beneath(d, "../x", O_RDONLY, 0), -EXDEV);
	fd = openat_beneath(d, "ok", O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	assert_int_equal(rm_rf_at(AT_FDCWD, dir), 0);
	assert_int_equal(access(dir, F_OK), -1);
	close(d);
}

/* Feed both the captures and the order, as the pumps do. */
static void feed(struct capture *c, struct outorder *o, unsigned stream, const char *text)
{
	capture_add(&c[stream], text, strlen(text), NULL);
	outorder_add(o, stream, strlen(text));
}

static void outorder_keeps_order_and_the_cut(void **state)
{
	struct capture c[2];
	struct outorder o;
	const struct capture *caps[2] = { &c[0], &c[1] };
	struct outorder_chunk *v;
	size_t n, len[2];
	char *text[2];

	(void)state;
	capture_init(&c[0], 1 << 20);
	capture_init(&c[1], 8);
	outorder_init(&o);
	feed(c, &o, 1, "A\n");
	feed(c, &o, 0, "B");
	feed(c, &o, 0, "b\n");	      /* merged with B */
	feed(c, &o, 1, "0123456789"); /* stderr cut: 4 head + 4 tail of 12 */
	feed(c, &o, 0, "");	      /* nothing: no piece */
	assert_int_equal(outorder_chunks(&o, caps, &v, &n), 0);
	text[0] = capture_text(&c[0], &len[0]);
	text[1] = capture_text(&c[1], &len[1]);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].stream, 1);
	assert_int_equal(v[0].off, 0);
	assert_int_equal(v[0].len, 2);
	assert_int_equal(v[1].stream, 0);
	assert_int_equal(v[1].len, 3);
	assert_int_equal(v[2].stream, 1);
	/* the pieces of a stream join to its text, marker included */
	assert_int_equal(v[2].off, 2);
	assert_int_equal(v[0].len + v[2].len, len[1]);
	assert_non_null(strstr(text[1] + v[2].off, "bytes cut"));
	free(v);
	free(text[0]);
	free(text[1]);
	outorder_release(&o);
	capture_release(&c[0]);
	capture_release(&c[1]);
}

static void outorder_keeps_first_and_last_half(void **state)
{
	struct capture c[2];
	struct outorder o;
	const struct capture *caps[2] = { &c[0], &c[1] };
	struct outorder_chunk *v;
	size_t n, sum[2] = { 0, 0 };

	(void)state;
	capture_init(&c[0], 1 << 20);
	capture_init(&c[1], 1 << 20);
	outorder_init(&o);
	for (int i = 0; i < 3 * OUTORDER_KEEP; i++)
		feed(c, &o, (unsigned)(i & 1), "xy\n");
	assert_int_equal(outorder_chunks(&o, caps, &v, &n), 0);
	assert_int_equal(n, OUTORDER_KEEP + 2);
	for (size_t i = 0; i < n; i++)
		sum[v[i].stream] += v[i].len;
	/* every byte once: the middle as one piece per stream */
	assert_int_equal(sum[0], c[0].total);
	assert_int_equal(sum[1], c[1].total);
	assert_int_equal(v[OUTORDER_KEEP / 2].stream, 0);
	assert_int_equal(v[OUTORDER_KEEP / 2 + 1].stream, 1);
	assert_int_equal(v[n - 1].stream, 1);
	assert_int_equal(v[n - 1].len, 3);
	free(v);
	outorder_release(&o);
	capture_release(&c[0]);
	capture_release(&c[1]);
}

static void check_diff(const char *a, const char *b, const char *want)
{
	struct buf out;

	buf_init(&out, 1 << 20);
	assert_int_equal(text_diff(a, strlen(a), b, strlen(b), &out), 0);
	assert_string_equal(buf_str(&out), want);
	buf_release(&out);
}

static void text_diff_hunks(void **state)
{
	char a[512] = "", b[512] = "";
	struct buf small;

	(void)state;
	check_diff("a\nb\n", "a\nb\n", "");
	check_diff("a\nb\nc\n", "a\nB\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
	check_diff("", "x\n", "@@ -0,0 +1,1 @@\n+x\n");
	check_diff("x\n", "", "@@ -1,1 +0,0 @@\n-x\n");
	check_diff("a", "a\n", "@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+a\n");
	/* two changes 9 equal lines apart: two hunks with 3 lines of context */
	for (int i = 1; i <= 20; i++) {
		snprintf(a + strlen(a), sizeof(a) - strlen(a), "%d\n", i);
		snprintf(b + strlen(b), sizeof(b) - strlen(b), "%d%s\n", i,
			 i == 2 || i == 18 ? "x" : "");
	}
	check_diff(a, b,
		   "@@ -1,5 +1,5 @@\n 1\n-2\n+2x\n 3\n 4\n 5\n"
		   "@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+18x\n 19\n 20\n");
	/* 6 equal lines apart: one hunk */
	check_diff("1\n2\n3\n4\n5\n6\n7\n8\n", "0\n2\n3\n4\n5\n6\n7\n9\n",
		   "@@ -1,8 +1,8 @@\n-1\n+0\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+9\n");
	buf_init(&small, 8);
	assert_int_equal(text_diff("a\n", 2, "b\n", 2, &small), -E2BIG);
	buf_release(&small);
}

/* RFC 4648's test vectors, both ways; then what a strict decoder refuses */
static void base64_rfc4648(void **state)
{
	static const char *const vec[][2] = {
		{ "", "" },
		{ "f", "Zg==" },
		{ "fo", "Zm8=" },
		{ "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" },
		{ "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
	};
	static const char *const bad[] = { "Zg",   "Zg=",  "Z===", "Zm9v\n",   "Zm 9",
					   "Zm-_", "=Zm9", "Zg=a", "Zm9vYg=Y", "Zm9v====" };
	struct buf b;

	(void)state;
	for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		char *enc = base64_encode(vec[i][0], strlen(vec[i][0]));

		assert_non_null(enc);
		assert_string_equal(enc, vec[i][1]);
		free(enc);
		buf_init(&b, 64);
		assert_int_equal(base64_decode(vec[i][1], strlen(vec[i][1]), &b), 0);
		assert_int_equal(b.len, strlen(vec[i][0]));
		assert_memory_equal(buf_str(&b), vec[i][0], b.len);
		buf_release(&b);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_init(&b, 64);
		assert_int_equal(base64_decode(bad[i], strlen(bad[i]), &b), -EINVAL);
		buf_release(&b);
	}
	/* a NUL inside is not part of the alphabet */
	buf_init(&b, 64);
	assert_int_equal(base64_decode("Zm\0v", 4, &b), -EINVAL);
	buf_release(&b);
	/* every byte value survives the round trip; the cap holds */
	{
		unsigned char all[256];
		char *enc;

		for (int i = 0; i < 256; i++)
			all[i] = (unsigned char)i;
		enc = base64_encode(all, sizeof(all));
		assert_non_null(enc);
		buf_init(&b, 256);
		assert_int_equal(base64_decode(enc, strlen(enc), &b), 0);
		assert_memory_equal(b.data, all, 256);
		buf_release(&b);
		buf_init(&b, 255);
		assert_int_equal(base64_decode(enc, strlen(enc), &b), -E2BIG);
		buf_release(&b);
		free(enc);
	}
}

static void check_percent(const char *in, unsigned flags, int want, const char *out)
{
	char b[64];
	size_t len = 99;

	assert_int_equal(percent_decode(in, strlen(in), flags, b, sizeof(b), &len), want);
	if (want == 0) {
		assert_int_equal(len, strlen(out));
		assert_string_equal(b, out);
	}
}

/* each variant of util/percent.h on what tells them apart */
static void percent_variants(void **state)
{
	char in[] = "a+b%20c%2Fd", small[4];

	(void)state;
	/* a path or a query value: strict, '+' is itself */
	check_percent("a+b%20c%2fd%C3%A9", 0, 0, "a+b c/d\xc3\xa9");
	check_percent("%zz", 0, -EINVAL, NULL);
	check_percent("a%", 0, -EINVAL, NULL);
	check_percent("a%4", 0, -EINVAL, NULL);
	check_percent("a%00b", 0, -EILSEQ, NULL);
	/* a form: '+' is a space */
	check_percent("a+b%2B", PERCENT_PLUS_SPACE, 0, "a b+");
	check_percent("a+%zz", PERCENT_PLUS_SPACE, -EINVAL, NULL);
	/* URLSearchParams: what is not an escape stays as it stands */
	check_percent("%zz%00%4%", PERCENT_PLUS_SPACE | PERCENT_LENIENT, 0, "%zz%00%4%");
	/* FormData's file names: only ", CR and LF were escaped */
	check_percent("a%22b%0d%0A%41%25%", PERCENT_FORM_NAME, 0, "a\"b\r\n%41%25%");
	/* a bounded input: an escape past n is not read */
	{
		char b[8];

		assert_int_equal(percent_decode("a%41", 2, 0, b, sizeof(b), NULL), -EINVAL);
	}
	/* in place, and the size holds */
	assert_int_equal(percent_decode(in, strlen(in), PERCENT_PLUS_SPACE, in, sizeof(in), NULL),
			 0);
	assert_string_equal(in, "a b c/d");
	assert_int_equal(percent_decode("abcd", 4, 0, small, sizeof(small), NULL), -ENOBUFS);
	assert_string_equal(small, "abc");
	assert_int_equal(percent_decode("ab%41", 5, 0, small, sizeof(small), NULL), 0);
	assert_string_equal(small, "abA");
	assert_int_equal(percent_decode("", 0, 0, small, 0, NULL), -ENOBUFS);
}

/* the two rules of util/envname.h, on what tells them apart */
static void env_name_rules(void **state)
{
	static const char *const ident_ok[] = { "A", "_", "a1_B", "_9", "PATH" };
	static const char *const any_only[] = { "1A", "A-B", "A B", "\xc3\x89", "a.b", "%" };
	static const char *const neither[] = { "", "A=B", "=" };
	char longest[ENV_NAME_MAX + 2];

	(void)state;
	for (size_t i = 0; i < sizeof(ident_ok) / sizeof(ident_ok[0]); i++) {
		assert_int_equal(
			env_name_check(ident_ok[i], strlen(ident_ok[i]), ENV_NAME_IDENTIFIER), 0);
		assert_int_equal(env_name_check(ident_ok[i], strlen(ident_ok[i]), ENV_NAME_ANY), 0);
	}
	for (size_t i = 0; i < sizeof(any_only) / sizeof(any_only[0]); i++) {
		assert_int_equal(
			env_name_check(any_only[i], strlen(any_only[i]), ENV_NAME_IDENTIFIER),
			-EINVAL);
		assert_int_equal(env_name_check(any_only[i], strlen(any_only[i]), ENV_NAME_ANY), 0);
	}
	for (size_t i = 0; i < sizeof(neither) / sizeof(neither[0]); i++) {
		assert_int_equal(
			env_name_check(neither[i], strlen(neither[i]), ENV_NAME_IDENTIFIER),
			-EINVAL);
		assert_int_equal(env_name_check(neither[i], strlen(neither[i]), ENV_NAME_ANY),
				 -EINVAL);
	}
	/* a NUL inside the length is no name's */
	assert_int_equal(env_name_check("A\0B", 3, ENV_NAME_ANY), -EINVAL);
	/* the cap is the same for both */
	memset(longest, 'A', sizeof(longest));
	assert_int_equal(env_name_check(longest, ENV_NAME_MAX, ENV_NAME_IDENTIFIER), 0);
	assert_int_equal(env_name_check(longest, ENV_NAME_MAX, ENV_NAME_ANY), 0);
	assert_int_equal(env_name_check(longest, ENV_NAME_MAX + 1, ENV_NAME_IDENTIFIER), -EINVAL);
	assert_int_equal(env_name_check(longest, ENV_NAME_MAX + 1, ENV_NAME_ANY), -EINVAL);
}

static int read_json(const char *s, unsigned flags, struct json_body_error *err)
{
	json_t *j = NULL;
	int r = json_body_read(s, strlen(s), flags, &j, err);

	assert_true(r == 0 ? j != NULL : j == NULL);
	json_decref(j);
	return r;
}

/* one reader: a key twice is refused at any depth, and says which */
static void json_body_reader(void **state)
{
	struct json_body_error err;
	json_t *j = NULL;

	(void)state;
	assert_int_equal(read_json("{\"a\": 1, \"b\": {\"c\": [1, {\"d\": 2}]}}", 0, &err), 0);
	assert_int_equal(read_json("{\"a\": 1, \"a\": 2}", 0, &err), -EINVAL);
	assert_int_equal(err.problem, JSON_BODY_DUPLICATE);
	assert_non_null(strstr(err.message, "\"a\" appears twice"));
	assert_int_equal(read_json("{\"x\": {\"k\": 1, \"k\": 1}}", 0, &err), -EINVAL);
	assert_int_equal(err.problem, JSON_BODY_DUPLICATE);
	assert_non_null(strstr(err.message, "\"k\""));
	assert_int_equal(read_json("[{\"k\": 1, \"k\": 2}]", JSON_BODY_ANY_VALUE, &err), -EINVAL);
	assert_int_equal(err.problem, JSON_BODY_DUPLICATE);
	/* what else a body can be refused for */
	assert_int_equal(read_json("", 0, &err), -EINVAL);
	assert_int_equal(err.problem, JSON_BODY_EMPTY);
	assert_int_equal(json_body_read("", 0, JSON_BODY_EMPTY_OBJECT, &j, &err), 0);
	assert_true(json_is_object(j) && json_object_size(j) == 0);
	json_decref(j);
	assert_int_equal(read_json("[1]", 0, &err), -EINVAL);
	assert_int_equal(err.problem, JSON_BODY_NOT_OBJECT);
	assert_int_equal(read_json("[1]", JSON_BODY_ANY_VALUE, &err), 0);
	assert_int_equal(read_json("{\"a\": 1} x", 0, &err), -EINVAL);
	assert_int_equal(err.problem, JSON_BODY_SYNTAX);
	assert_int_equal(read_json("{\"a\": \"\xff\"}", 0, &err), -EINVAL);
	assert_int_equal(err.problem, JSON_BODY_UTF8);
	assert_int_equal(read_json("{\"a\": \"x\\u0000\"}", 0, &err), -EINVAL);
	assert_int_equal(err.problem, JSON_BODY_NUL);
	assert_int_equal(read_json("{\"a\": \"x\\u0000\"}", JSON_BODY_ALLOW_NUL, &err), 0);
	assert_int_equal(read_json("{\"a\\u0000\": 1}", JSON_BODY_ALLOW_NUL, &err), -EINVAL);
	assert_int_equal(err.problem, JSON_BODY_NUL);
	/* err may be NULL */
	assert_int_equal(read_json("{\"a\": 1, \"a\": 1}", 0, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(buf_append_and_cap),
		cmocka_unit_test(text_diff_hunks),
		cmocka_unit_test(buf_detach_hands_over),
		cmocka_unit_test(buf_read_fd_respects_cap),
		cmocka_unit_test(parse_sizes),
		cmocka_unit_test(parse_durations),
		cmocka_unit_test(parse_integers),
		cmocka_unit_test(utf8),
		cmocka_unit_test(utf8_cut_and_repair),
		cmocka_unit_test(base64_rfc4648),
		cmocka_unit_test(percent_variants),
		cmocka_unit_test(env_name_rules),
		cmocka_unit_test(json_body_reader),
		cmocka_unit_test(openat_beneath_stays_inside),
		cmocka_unit_test(outorder_keeps_order_and_the_cut),
		cmocka_unit_test(outorder_keeps_first_and_last_half),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
