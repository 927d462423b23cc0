/* util/curl: libcurl, loaded with dlopen on first use rather than linked
 * (as api/mhd.c does libmicrohttpd): linked, it would bring OpenSSL,
 * nghttp2, libssh2, LDAP and a dozen more libraries into every `codecell
 * run`, which would pay for loading them and for the page tables each
 * clone() copies.  Only the commands that talk HTTP load it: the agent's
 * model client (agent/llm.c) and the http tool (engine/tool_http.c). */
#ifndef CODECELL_UTIL_CURL_H
#define CODECELL_UTIL_CURL_H

#include <stddef.h>

#include <curl/curl.h>

#define CURL_LIBRARY "libcurl.so.4"

/* The libcurl functions codecell calls (the slots are filled in this
 * order by curl_fns_load). */
struct curl_fns {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLU *(*url)(void);
	void (*url_cleanup)(CURLU *);
	CURLU *(*url_dup)(const CURLU *);
	CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
	CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
	void (*free)(void *);
};

/* Load libcurl and run curl_global_init, once per process (thread-safe:
 * curl_global_init is not, before 7.84).  0 with *ret (static, valid for
 * the life of the process), or -ENOENT / -EIO with a message in err
 * (n bytes) that says what to install. */
int curl_fns_load(const struct curl_fns **ret, char *err, size_t n);

#endif
