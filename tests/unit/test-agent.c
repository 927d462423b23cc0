/* agent: code out of a model's reply (tags, fences), and the head-and-tail
 * cut of long observations. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent.h"
#include "engine/result_text.h"
#include "util/utf8.h"

static char *code_of(const char *reply, const char *lang, const char **ret_source, bool *ret_cut)
{
	struct agent_code c;

	assert_int_equal(agent_extract(reply, strlen(reply), lang, &c), 0);
	if (ret_source)
		*ret_source = c.source;
	if (ret_cut)
		*ret_cut = c.cut;
	return c.code;
}

static void tags_win_and_are_joined(void **state)
{
	const char *src;
	char *code;

	(void)state;
	code = code_of("First\n<execute_python>\nx = 1\n</execute_python>\nthen\n"
		       "<execute_python>print(x)</execute_python>\n```python\nnot this\n```",
		       "python", &src, NULL);
	assert_string_equal(code, "x = 1\n\nprint(x)");
	assert_string_equal(src, "tag");
	free(code);
	/* a fence inside the tags is taken off */
	code = code_of("<execute_python>\n```python\nimport os\n  y = 2\n```\n</execute_python>",
		       "python", NULL, NULL);
	assert_string_equal(code, "import os\n  y = 2");
	free(code);
}

static void fences_of_the_language_only(void **state)
{
	const char *src;
	char *code;

	(void)state;
	code = code_of(
		"Try:\n```py\na = 1\n```\nand\n```bash\nrm -rf /\n```\n```Python\nb = 2\n```\n",
		"python", &src, NULL);
	assert_string_equal(code, "a = 1\n\nb = 2");
	assert_string_equal(src, "fence");
	free(code);
	/* bare fences and prose are not code */
	assert_null(code_of("```\nls\n```\nThe answer is 4.", "python", NULL, NULL));
	code = code_of("```js\nconsole.log(1)\n```", "javascript", NULL, NULL);
	assert_string_equal(code, "console.log(1)");
	free(code);
	assert_null(code_of("<execute_python>x</execute_python>", "bash", NULL, NULL));
}

static void cut_replies_are_flagged(void **state)
{
	bool cut;

	(void)state;
	assert_null(code_of("<execute_python>\nfor i in", "python", NULL, &cut));
	assert_true(cut);
	assert_null(code_of("```python\nfor i in", "python", NULL, &cut));
	assert_true(cut);
	assert_null(code_of("no code at all", "python", NULL, &cut));
	assert_false(cut);
}

static void head_and_tail_keep_characters_whole(void **state)
{
	struct buf b;
	char in[3000];
	uint64_t bad;

	(void)state;
	/* "é" is two bytes: every cut point falls inside one somewhere */
	for (size_t i = 0; i + 1 < sizeof(in); i += 2)
		memcpy(in + i, "\xc3\xa9", 2);
	for (size_t max = 64; max < 400; max += 7) {
		buf_init(&b, 1 << 20);
		assert_int_equal(text_head_tail(in, sizeof(in) - 2, max, &b), 0);
		assert_true(utf8_valid(b.data, b.len, &bad));
		assert_true(b.len <= max + 16);
		assert_non_null(strstr(buf_str(&b), "bytes left out"));
		buf_release(&b);
	}
	buf_init(&b, 1 << 20);
	assert_int_equal(text_head_tail("short", 5, 100, &b), 0);
	assert_string_equal(buf_str(&b), "short");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tags_win_and_are_joined),
		cmocka_unit_test(fences_of_the_language_only),
		cmocka_unit_test(cut_replies_are_flagged),
		cmocka_unit_test(head_and_tail_keep_characters_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
