/* util/curl: libcurl loaded with dlopen (see curl.h for why). */
#include "util/curl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "util/macro.h"
#include "util/banned.h"

static struct curl_fns fns;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

int curl_fns_load(const struct curl_fns **ret, char *err, size_t n)
{
	static const char *const names[] = {
		"curl_global_init",   "curl_easy_init",	   "curl_easy_setopt",
		"curl_easy_perform",  "curl_easy_getinfo", "curl_easy_cleanup",
		"curl_easy_strerror", "curl_slist_append", "curl_slist_free_all",
		"curl_url",	      "curl_url_cleanup",  "curl_url_dup",
		"curl_url_get",	      "curl_url_set",	   "curl_free",
	};
	void **slots = (void **)&fns;
	void *lib;
	int r = 0;

	_Static_assert(sizeof(fns) == ARRAY_SIZE(names) * sizeof(void *), "one name per slot");
	pthread_mutex_lock(&load_lock);
	if (fns.easy_init)
		goto out;
	lib = dlopen(CURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(err, n, "cannot load %s (%s): install Debian's libcurl4", CURL_LIBRARY,
			 dlerror());
		r = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!(slots[i] = dlsym(lib, names[i]))) {
			snprintf(err, n, "%s has no %s: it is too old", CURL_LIBRARY, names[i]);
			memset(&fns, 0, sizeof(fns));
			r = -ENOENT;
			goto out;
		}
	if (fns.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, n, "cannot initialize libcurl");
		memset(&fns, 0, sizeof(fns));
		r = -EIO;
	}
out:
	if (r == 0)
		*ret = &fns;
	pthread_mutex_unlock(&load_lock);
	return r;
}
