/* The chat-completions client.  libcurl is loaded when the agent starts
 * (util/curl.h says why): only `codecell agent` and a server given a
 * model endpoint load it.
 *
 * Everything the endpoint sends is untrusted: the body is capped at
 * AGENT_REPLY_MAX, parsed by jansson, and quoted in messages only in
 * part, with control characters replaced. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/internal.h"
#include "util/curl.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define CONNECT_TIMEOUT_MAX_MS 10000L

/* loaded by llm_new (util/curl.h) */
static const struct curl_fns *cc;

struct llm {
	const struct agent_config *cfg;
	char *url;
	struct curl_slist *headers;
	CURL *h;
};

static int load(struct buf *err)
{
	char msg[256];
	int r = curl_fns_load(&cc, msg, sizeof(msg));

	if (r < 0)
		(void)buf_puts(err, msg);
	return r;
}

int llm_new(const struct agent_config *cfg, struct llm **ret, struct buf *err)
{
	struct llm *l;
	size_t n;
	int r = load(err);

	if (r < 0)
		return r;
	if (!cfg->base_url || !*cfg->base_url)
		return buf_puts(err,
				"no model endpoint: set OPENAI_BASE_URL (llama.cpp's server: "
				"http://127.0.0.1:8080/v1, Ollama: http://127.0.0.1:11434/v1)"),
		       -EINVAL;
	if (strncmp(cfg->base_url, "http://", 7) && strncmp(cfg->base_url, "https://", 8))
		return buf_printf(err,
				  "invalid OPENAI_BASE_URL '%s': expected http://HOST:PORT/v1 "
				  "or https://...",
				  cfg->base_url),
		       -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->cfg = cfg;
	n = strlen(cfg->base_url);
	while (n && cfg->base_url[n - 1] == '/')
		n--;
	if (asprintf(&l->url, "%.*s/chat/completions", (int)n, cfg->base_url) < 0)
		l->url = NULL;
	l->headers = cc->slist_append(NULL, "Content-Type: application/json");
	if (l->headers)
		l->headers = cc->slist_append(l->headers, "Accept: application/json");
	/* a large body must not wait a second for "100 Continue" */
	if (l->headers)
		l->headers = cc->slist_append(l->headers, "Expect:");
	if (l->headers && cfg->api_key && *cfg->api_key) {
		char *auth;

		if (asprintf(&auth, "Authorization: Bearer %s", cfg->api_key) >= 0) {
			l->headers = cc->slist_append(l->headers, auth);
			free(auth);
		}
	}
	l->h = cc->easy_init();
	if (!l->url || !l->headers || !l->h) {
		llm_free(l);
		return -ENOMEM;
	}
	*ret = l;
	return 0;
}

void llm_free(struct llm *l)
{
	if (!l)
		return;
	if (l->h)
		cc->easy_cleanup(l->h);
	if (l->headers)
		cc->slist_free_all(l->headers);
	free(l->url);
	free(l);
}

static bool stopped(const struct llm *l)
{
	return l->cfg->stop_flag && __atomic_load_n(l->cfg->stop_flag, __ATOMIC_SEQ_CST);
}

/* ---- one attempt ---- */

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
	struct buf *b = userdata;

	/* past the cap, a short count makes curl fail with CURLE_WRITE_ERROR */
	return buf_append(b, p, size * n) < 0 ? 0 : size * n;
}

/* Retry-After in seconds (an HTTP date is left to the backoff).  curl's
 * CURLINFO_RETRY_AFTER says 0 both for "Retry-After: 0" and for none. */
static size_t on_header(char *p, size_t size, size_t n, void *userdata)
{
	double *after = userdata;
	size_t len = size * n;
	char num[32];

	if (len > 12 && len < 12 + sizeof(num) && !strncasecmp(p, "retry-after:", 12)) {
		char *end;
		double v;

		memcpy(num, p + 12, len - 12);
		num[len - 12] = 0;
		v = strtod(num, &end);
		while (*end == ' ' || *end == '\r' || *end == '\n')
			end++;
		if (end != num && !*end && v >= 0 && isfinite(v))
			*after = v;
	}
	return len;
}

static int on_progress(void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	return stopped(userdata) ? 1 : 0;
}

/* The part of an endpoint's text fit to quote: at most
 * AGENT_ERROR_QUOTE_MAX bytes, printable ASCII, the rest replaced. */
static void quote(struct buf *b, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n && i < AGENT_ERROR_QUOTE_MAX; i++)
		(void)buf_append(b, isprint((unsigned char)s[i]) ? &s[i] : "?", 1);
	if (i < n)
		(void)buf_puts(b, "...");
}

/* An error body's message: {"error": {"message"}}, {"error": "..."},
 * {"detail": "..."} or {"message": "..."} (OpenAI, Ollama, vLLM, llama.cpp
 * and FastAPI servers), else the body itself. */
static void error_text(const struct buf *body, struct buf *out)
{
	json_t *j = json_loadb(body->data ? body->data : "", body->len, 0, NULL), *e;
	const char *m = NULL;

	e = json_object_get(j, "error");
	m = json_string_value(json_object_get(e, "message"));
	if (!m)
		m = json_string_value(e);
	if (!m)
		m = json_string_value(json_object_get(j, "detail"));
	if (!m)
		m = json_string_value(json_object_get(j, "message"));
	if (m)
		quote(out, m, strlen(m));
	else
		quote(out, body->data ? body->data : "", body->len);
	json_decref(j);
}

static int transport_error(const struct llm *l, CURLcode c, const struct buf *body, struct buf *err)
{
	switch (c) {
	case CURLE_ABORTED_BY_CALLBACK:
		return buf_puts(err, "stopped"), -EINTR;
	case CURLE_OPERATION_TIMEDOUT:
		return buf_printf(err,
				  "the model endpoint '%s' sent no complete reply within %g s: "
				  "raise --llm-timeout, or use a smaller model",
				  l->url, l->cfg->llm_timeout_s),
		       -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return buf_printf(err,
				  "cannot connect to the model endpoint '%s' (%s): is the server "
				  "running? set OPENAI_BASE_URL",
				  l->url, cc->easy_strerror(c)),
		       -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return buf_printf(err, "cannot resolve the host of '%s': check OPENAI_BASE_URL",
				  l->url),
		       -EHOSTUNREACH;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return buf_printf(err, "invalid OPENAI_BASE_URL '%s' (%s)", l->cfg->base_url,
				  cc->easy_strerror(c)),
		       -EINVAL;
	case CURLE_WRITE_ERROR:
		if (body->len + CURL_MAX_WRITE_SIZE > body->max)
			return buf_printf(
				       err,
				       "the model endpoint's reply is larger than %u MiB: refused",
				       AGENT_REPLY_MAX >> 20),
			       -E2BIG;
		break;
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
		return buf_printf(err,
				  "the model endpoint's reply was cut off after %zu bytes (%s): "
				  "the server closed the connection early; is it overloaded?",
				  body->len, cc->easy_strerror(c)),
		       -EPROTO;
	default:
		break;
	}
	return buf_printf(err, "cannot talk to the model endpoint '%s': %s", l->url,
			  cc->easy_strerror(c)),
	       -EIO;
}

/* POST once.  0 with the HTTP status and the body, or a transport error. */
static int post(struct llm *l, const char *data, size_t len, long *ret_status,
		double *ret_retry_after, struct buf *body, struct buf *err)
{
	long timeout_ms = (long)(l->cfg->llm_timeout_s * 1000.0);
	CURLcode c;
	CURL *h = l->h;

	buf_reset(body);
	cc->easy_setopt(h, CURLOPT_URL, l->url);
	cc->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	cc->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	cc->easy_setopt(h, CURLOPT_HTTPHEADER, l->headers);
	cc->easy_setopt(h, CURLOPT_POST, 1L);
	cc->easy_setopt(h, CURLOPT_POSTFIELDS, data);
	cc->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	cc->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	cc->easy_setopt(h, CURLOPT_WRITEDATA, body);
	*ret_retry_after = -1.0;
	cc->easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	cc->easy_setopt(h, CURLOPT_HEADERDATA, ret_retry_after);
	cc->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	cc->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	cc->easy_setopt(h, CURLOPT_XFERINFODATA, l);
	cc->easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	cc->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			timeout_ms < CONNECT_TIMEOUT_MAX_MS ? timeout_ms : CONNECT_TIMEOUT_MAX_MS);
	c = cc->easy_perform(h);
	if (c != CURLE_OK)
		return transport_error(l, c, body, err);
	cc->easy_getinfo(h, CURLINFO_RESPONSE_CODE, ret_status);
	return 0;
}

/* ---- the reply ---- */

static int parse_reply(const struct buf *body, json_t **ret_choice, struct buf *err)
{
	json_error_t je;
	json_t *j = json_loadb(body->data ? body->data : "", body->len, 0, &je), *choice, *msg;

	if (!j) {
		/* jansson stops at the end of input when the text was cut */
		if ((size_t)je.position >= body->len && body->len > 0)
			return buf_printf(
				       err,
				       "the model endpoint's reply was cut off: %zu bytes that end "
				       "inside the JSON (%s)",
				       body->len, je.text),
			       -EPROTO;
		(void)buf_printf(err, "the model endpoint's reply is not JSON (%s): '", je.text);
		quote(err, body->data ? body->data : "", body->len);
		return buf_puts(err, "': is OPENAI_BASE_URL a chat-completions API?"), -EBADMSG;
	}
	choice = json_array_get(json_object_get(j, "choices"), 0);
	msg = json_object_get(choice, "message");
	if (!json_is_object(msg)) {
		(void)buf_puts(err, "the model endpoint's reply is not a chat completion (no "
				    "choices[0].message)");
		if (json_object_get(j, "error")) {
			(void)buf_puts(err, ": '");
			error_text(body, err);
			(void)buf_puts(err, "'");
		}
		json_decref(j);
		return -EBADMSG;
	}
	if (json_object_get(msg, "content") && !json_is_string(json_object_get(msg, "content")) &&
	    !json_is_null(json_object_get(msg, "content"))) {
		json_decref(j);
		return buf_puts(err, "the model endpoint's reply is not a chat completion "
				     "(message.content is neither a string nor null)"),
		       -EBADMSG;
	}
	*ret_choice = json_incref(choice);
	json_decref(j);
	return 0;
}

static int http_error(const struct llm *l, long status, const struct buf *body, unsigned attempts,
		      struct buf *err)
{
	char said[4 * AGENT_ERROR_QUOTE_MAX + 8];
	struct buf q;

	buf_init(&q, sizeof(said) - 1);
	error_text(body, &q);
	snprintf(said, sizeof(said), "%s", buf_str(&q));
	buf_release(&q);
	if (status == 401 || status == 403)
		return buf_printf(err,
				  "the model endpoint refused the API key (HTTP %ld: '%s'): set "
				  "OPENAI_API_KEY",
				  status, said),
		       -EACCES;
	if (status == 404 && strcasestr(said, "model"))
		return buf_printf(err,
				  "the endpoint has no model '%s' (HTTP 404: '%s'): check --model "
				  "or CODECELL_MODEL (GET %s/models lists those it has)",
				  l->cfg->model, said, l->cfg->base_url),
		       -ENOENT;
	if (status == 404)
		return buf_printf(
			       err,
			       "no chat-completions API at '%s' (HTTP 404: '%s'): OPENAI_BASE_URL "
			       "should end in /v1, like http://127.0.0.1:8080/v1",
			       l->url, said),
		       -ENOENT;
	if (status == 429 || status >= 500)
		return buf_printf(err,
				  "the model endpoint is %s (HTTP %ld: '%s') after %u attempt%s: "
				  "try again later",
				  status == 429 ? "rate limiting" : "failing", status, said,
				  attempts, attempts == 1 ? "" : "s"),
		       -EAGAIN;
	return buf_printf(err, "the model endpoint answered HTTP %ld: '%s'", status, said), -EIO;
}

/* Sleep delay_s, in slices, unless the stop flag rises.  false: it did. */
static bool pause_for(const struct llm *l, double delay_s)
{
	while (delay_s > 0) {
		double d = delay_s < 0.05 ? delay_s : 0.05;
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)(d * 1e9) };

		if (stopped(l))
			return false;
		nanosleep(&ts, NULL);
		delay_s -= d;
	}
	return !stopped(l);
}

int llm_chat(struct llm *l, json_t *body, json_t **ret_choice, int *ret_http, struct buf *err,
	     void (*on_retry)(void *userdata, unsigned attempt, long http, double delay_s,
			      const char *why),
	     void *userdata)
{
	char *data = json_dumps(body, JSON_COMPACT);
	struct buf resp;
	long status = 0;
	int r = 0;

	*ret_http = 0;
	if (!data)
		return -ENOMEM;
	buf_init(&resp, AGENT_REPLY_MAX);
	for (unsigned attempt = 1;; attempt++) {
		double after = -1, delay;

		r = post(l, data, strlen(data), &status, &after, &resp, err);
		if (r < 0)
			break;
		*ret_http = (int)status;
		if (status >= 200 && status < 300) {
			r = parse_reply(&resp, ret_choice, err);
			break;
		}
		if ((status != 429 && status < 500) || attempt > l->cfg->retries) {
			r = http_error(l, status, &resp, attempt, err);
			break;
		}
		delay = l->cfg->retry_delay_s * pow(2.0, attempt - 1);
		if (after >= 0)
			delay = after;
		if (delay > AGENT_RETRY_DELAY_MAX_S)
			delay = AGENT_RETRY_DELAY_MAX_S;
		if (on_retry)
			on_retry(userdata, attempt, status, delay,
				 status == 429 ? "rate limited" : "server error");
		if (!pause_for(l, delay)) {
			(void)buf_puts(err, "stopped");
			r = -EINTR;
			break;
		}
	}
	buf_release(&resp);
	free(data);
	return r;
}
