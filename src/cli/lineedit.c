/* libedit for `codecell shell`, loaded with dlopen (see lineedit.h).
 *
 * libedit reads keys through our read function (EL_GETCFN), which polls
 * the terminal beside codecell's signalfd and the idle deadline: Ctrl-C
 * while typing drops the line as python3 does, SIGTERM ends the shell, and
 * an idle session expires even while its prompt waits.  libedit's own
 * signal handling stays off (EL_SIGNAL 0): codecell's signals are blocked
 * and arrive on the signalfd. */
#include <dlfcn.h>
#include <errno.h>
#include <histedit.h>
#include <locale.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <wchar.h>

#include "cli/lineedit.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define EDIT_LIBRARY "libedit.so.2"
#define HISTORY_FILE ".codecell_history"
#define HISTORY_SIZE 1000

static struct {
	EditLine *(*el_init)(const char *, FILE *, FILE *, FILE *);
	void (*el_end)(EditLine *);
	void (*el_reset)(EditLine *);
	const char *(*el_gets)(EditLine *, int *);
	int (*el_set)(EditLine *, int, ...);
	int (*el_get)(EditLine *, int, ...);
	History *(*history_init)(void);
	void (*history_end)(History *);
	int (*history)(History *, HistEvent *, int, ...);
	int (*el_wset)(EditLine *, int, ...);
	const LineInfo *(*el_line)(EditLine *);
	int (*el_insertstr)(EditLine *, const char *);
} le;

struct lineedit {
	EditLine *el;
	History *hist;
	const char *prompt;
	int sig_fd;
	uint64_t deadline_ns;
	int stop; /* why the read function gave up: -EINTR, -ETIMEDOUT */
	int sig;  /* the signal, with -EINTR */
	mbstate_t mbs;
	char history_path[4096];
	lineedit_complete_fn complete;
	void (*complete_free)(char **, size_t);
	void *complete_data;
};

static int load(const char **ret_why)
{
	static const char *const names[] = {
		"el_init",	"el_end",      "el_reset", "el_gets", "el_set",	 "el_get",
		"history_init", "history_end", "history",  "el_wset", "el_line", "el_insertstr",
	};
	void **slots = (void **)&le;
	void *lib;

	if (le.el_init)
		return 0;
	_Static_assert(sizeof(le) == sizeof(names) / sizeof(names[0]) * sizeof(void *),
		       "one name per slot");
	lib = dlopen(EDIT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		*ret_why =
			"cannot load " EDIT_LIBRARY " (install Debian's libedit2): no line editing";
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		slots[i] = dlsym(lib, names[i]);
		if (!slots[i]) {
			memset(&le, 0, sizeof(le));
			*ret_why = EDIT_LIBRARY " is too old: no line editing";
			return -ENOENT;
		}
	}
	return 0;
}

static char *prompt_fn(EditLine *el)
{
	struct lineedit *ed = NULL;

	le.el_get(el, EL_CLIENTDATA, &ed);
	return (char *)(ed && ed->prompt ? ed->prompt : "");
}

static int wait_input(struct lineedit *ed)
{
	for (;;) {
		struct pollfd pf[2] = { { STDIN_FILENO, POLLIN, 0 }, { ed->sig_fd, POLLIN, 0 } };
		int timeout = -1;

		if (ed->deadline_ns) {
			uint64_t now = now_ns();

			if (now >= ed->deadline_ns)
				return -ETIMEDOUT;
			timeout = (int)((ed->deadline_ns - now) / 1000000) + 1;
		}
		if (poll(pf, ed->sig_fd >= 0 ? 2 : 1, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (ed->sig_fd >= 0 && (pf[1].revents & POLLIN)) {
			struct signalfd_siginfo si;

			if (read(ed->sig_fd, &si, sizeof(si)) == sizeof(si)) {
				ed->sig = (int)si.ssi_signo;
				return -EINTR;
			}
		}
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR))
			return 0;
	}
}

/* libedit's read function: one character, 0 at end of input, -1 to stop
 * (ed->stop says why). */
static int getc_fn(EditLine *el, wchar_t *ret)
{
	struct lineedit *ed = NULL;

	le.el_get(el, EL_CLIENTDATA, &ed);
	for (;;) {
		unsigned char byte;
		wchar_t wc;
		size_t k;
		ssize_t n;
		int r = wait_input(ed);

		if (r < 0) {
			ed->stop = r;
			errno = -r;
			return -1;
		}
		n = read(STDIN_FILENO, &byte, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? 0 : -1;
		k = mbrtowc(&wc, (const char *)&byte, 1, &ed->mbs);
		if (k == (size_t)-2)
			continue; /* more bytes of one character to come */
		if (k == (size_t)-1) {
			memset(&ed->mbs, 0, sizeof(ed->mbs));
			wc = 0xfffd;
		}
		*ret = wc;
		return 1;
	}
}

static void history_open(struct lineedit *ed)
{
	const char *home = getenv("HOME");
	HistEvent ev;

	ed->hist = le.history_init();
	if (!ed->hist)
		return;
	le.history(ed->hist, &ev, H_SETSIZE, HISTORY_SIZE);
	le.history(ed->hist, &ev, H_SETUNIQUE, 1);
	if (home && *home &&
	    (size_t)snprintf(ed->history_path, sizeof(ed->history_path), "%s/%s", home,
			     HISTORY_FILE) < sizeof(ed->history_path))
		le.history(ed->hist, &ev, H_LOAD, ed->history_path);
	else
		ed->history_path[0] = '\0';
	le.el_set(ed->el, EL_HIST, le.history, ed->hist);
}

struct lineedit *lineedit_new(const char *prog, const char **ret_why)
{
	struct lineedit *ed;
	const char *loc;

	*ret_why = NULL;
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO) || load(ret_why) < 0)
		return NULL;
	/* wide characters in, UTF-8 out: without a UTF-8 locale every byte
	 * over 127 would be an error */
	loc = setlocale(LC_CTYPE, "");
	if (!loc || !strstr(loc, "UTF-8"))
		setlocale(LC_CTYPE, "C.UTF-8");
	ed = calloc(1, sizeof(*ed));
	if (!ed)
		return NULL;
	ed->sig_fd = -1;
	ed->el = le.el_init(prog, stdin, stdout, stderr);
	if (!ed->el) {
		free(ed);
		*ret_why = "libedit could not start on this terminal: no line editing";
		return NULL;
	}
	le.el_set(ed->el, EL_CLIENTDATA, ed);
	le.el_set(ed->el, EL_SIGNAL, 0);
	le.el_set(ed->el, EL_EDITOR, "emacs");
	le.el_set(ed->el, EL_PROMPT, prompt_fn);
	le.el_set(ed->el, EL_GETCFN, getc_fn);
	/* No key of ours is bound: libedit 3.1 never frees what EL_ADDFN
	 * and a string binding (bind -s) copy, and LeakSanitizer says so.
	 * Tab inserts a tab, as in the emacs map. */
	history_open(ed);
	return ed;
}

int lineedit_read(struct lineedit *ed, const char *prompt, struct buf *line, int sig_fd,
		  uint64_t deadline_ns, int *ret_sig)
{
	const char *s;
	int n = 0;
	size_t len;

	buf_reset(line);
	ed->prompt = prompt;
	ed->sig_fd = sig_fd;
	ed->deadline_ns = deadline_ns;
	ed->stop = 0;
	s = le.el_gets(ed->el, &n);
	if (!s || n <= 0) {
		int stop = ed->stop;

		if (!stop)
			return 0; /* Ctrl-D on an empty line, or the terminal went away */
		/* drop what was typed, and give the terminal back its modes */
		le.el_reset(ed->el);
		*ret_sig = ed->sig;
		return stop;
	}
	len = strlen(s);
	if (len && s[len - 1] == '\n')
		len--;
	return buf_append(line, s, len) < 0 ? -E2BIG : 1;
}

/* A byte of a word Tab completes: a Python name or dotted name (UTF-8
 * letters included). */
static bool word_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c >= 0x80;
}

/* How many leading bytes all names share, cut back to a whole UTF-8
 * character. */
static size_t common_prefix(char **names, size_t n)
{
	size_t len = strlen(names[0]);

	for (size_t i = 1; i < n; i++) {
		size_t k = 0;

		while (k < len && names[i][k] == names[0][k])
			k++;
		len = k;
	}
	while (len > 0 && len < strlen(names[0]) && ((unsigned char)names[0][len] & 0xc0) == 0x80)
		len--;
	return len;
}

#define LIST_MAX 100 /* names listed below the line on an ambiguous Tab */

/* The candidates, below the line, two spaces apart; the prompt and line
 * are drawn again after them (CC_REDISPLAY). */
static void list_names(char **names, size_t n)
{
	struct winsize ws;
	size_t width = 80, col = 0;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10)
		width = ws.ws_col;
	fputs("\n", stdout);
	for (size_t i = 0; i < n && i < LIST_MAX; i++) {
		size_t len = strlen(names[i]);

		if (col && col + 2 + len > width) {
			fputs("\n", stdout);
			col = 0;
		}
		fprintf(stdout, "%s%s", col ? "  " : "", names[i]);
		col += (col ? 2 : 0) + len;
	}
	if (n > LIST_MAX)
		fprintf(stdout, "\n... and %zu more", n - LIST_MAX);
	fputs("\n", stdout);
	fflush(stdout);
}

/* Tab: the word before the cursor, completed by the session (as python3's
 * prompt does): one name is inserted, several give their common part and,
 * if there is none to add, their list.  Tab after a blank (indenting a
 * block) inserts a tab. */
static unsigned char complete_fn(EditLine *el, int ch)
{
	struct lineedit *ed = NULL;
	const LineInfo *li = le.el_line(el);
	const char *start;
	char word[LINEEDIT_WORD_MAX + 1], **names = NULL;
	size_t n = 0, wlen, common;

	(void)ch;
	le.el_get(el, EL_CLIENTDATA, &ed);
	if (!li || !ed || !ed->complete)
		return CC_ERROR;
	for (start = li->cursor; start > li->buffer && word_byte((unsigned char)start[-1]); start--)
		;
	wlen = (size_t)(li->cursor - start);
	if (!wlen) {
		le.el_insertstr(el, "\t");
		return CC_REFRESH;
	}
	if (wlen > LINEEDIT_WORD_MAX)
		return CC_REFRESH_BEEP;
	memcpy(word, start, wlen);
	word[wlen] = '\0';
	if (ed->complete(ed->complete_data, word, &names, &n) < 0 || !n)
		return CC_REFRESH_BEEP;
	common = common_prefix(names, n);
	if (common > wlen) {
		char *add = strndup(names[0] + wlen, common - wlen);

		if (add)
			le.el_insertstr(el, add);
		free(add);
		ed->complete_free(names, n);
		return CC_REFRESH;
	}
	if (n > 1)
		list_names(names, n);
	ed->complete_free(names, n);
	return n > 1 ? CC_REDISPLAY : CC_REFRESH;
}

void lineedit_set_completer(struct lineedit *ed, lineedit_complete_fn fn,
			    void (*free_fn)(char **, size_t), void *userdata)
{
	ed->complete = fn;
	ed->complete_free = free_fn;
	ed->complete_data = userdata;
	/* the wide calls: the narrow el_set() copies the function's name
	 * and help and libedit 3.1 never frees them (LeakSanitizer says so);
	 * el_wset() keeps these static strings as they are */
	le.el_wset(ed->el, EL_ADDFN, L"codecell-complete", L"complete a name from the session",
		   complete_fn);
	le.el_wset(ed->el, EL_BIND, L"^I", L"codecell-complete", NULL);
}

void lineedit_remember(struct lineedit *ed, const char *line)
{
	HistEvent ev;

	if (ed->hist && line[strspn(line, " \t")])
		le.history(ed->hist, &ev, H_ENTER, line);
}

void lineedit_free(struct lineedit *ed)
{
	HistEvent ev;

	if (!ed)
		return;
	if (ed->hist) {
		if (ed->history_path[0])
			le.history(ed->hist, &ev, H_SAVE, ed->history_path);
		le.history_end(ed->hist);
	}
	le.el_end(ed->el);
	free(ed);
}
