/* A name lookup with a deadline (resolve.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/resolve.h"
#include "util/banned.h"

/* Shared by the caller and the lookup's thread; the last to leave frees
 * it (and the result, if the caller gave up on it). */
struct lookup {
	pthread_mutex_t lock;
	pthread_cond_t done_cv;
	unsigned refs;
	bool done;
	int rc;
	struct addrinfo *res;
	struct addrinfo hints;
	char host[];
};

static void lookup_unref(struct lookup *l)
{
	bool last;

	pthread_mutex_lock(&l->lock);
	last = --l->refs == 0;
	pthread_mutex_unlock(&l->lock);
	if (!last)
		return;
	if (l->res)
		freeaddrinfo(l->res);
	pthread_cond_destroy(&l->done_cv);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static void *lookup_main(void *arg)
{
	struct lookup *l = arg;
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(l->host, NULL, &l->hints, &res);

	pthread_mutex_lock(&l->lock);
	l->rc = rc;
	l->res = rc == 0 ? res : NULL;
	l->done = true;
	pthread_cond_signal(&l->done_cv);
	pthread_mutex_unlock(&l->lock);
	lookup_unref(l);
	return NULL;
}

static int start_lookup(struct lookup *l)
{
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (pthread_attr_init(&attr))
		return -ENOMEM;
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* glibc's resolver and NSS modules want more than a small stack */
	(void)pthread_attr_setstacksize(&attr, 256u << 10);
	r = pthread_create(&t, &attr, lookup_main, l);
	pthread_attr_destroy(&attr);
	return -r;
}

int resolve_bounded(const char *host, const struct addrinfo *hints, unsigned timeout_ms,
		    struct addrinfo **ret)
{
	size_t len = strlen(host);
	struct lookup *l = calloc(1, sizeof(*l) + len + 1);
	pthread_condattr_t ca;
	struct timespec until;
	int rc;

	*ret = NULL;
	if (!l)
		return EAI_MEMORY;
	memcpy(l->host, host, len + 1);
	if (hints)
		l->hints = *hints;
	l->hints.ai_addr = NULL;
	l->hints.ai_canonname = NULL;
	l->hints.ai_next = NULL;
	l->refs = 2;
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (start_lookup(l) < 0) {
		l->refs = 1;
		lookup_unref(l);
		return getaddrinfo(host, NULL, hints, ret);
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&l->lock);
	while (!l->done && pthread_cond_timedwait(&l->done_cv, &l->lock, &until) != ETIMEDOUT)
		;
	if (l->done) {
		rc = l->rc;
		*ret = l->res;
		l->res = NULL;
	} else {
		rc = RESOLVE_TIMEOUT;
	}
	pthread_mutex_unlock(&l->lock);
	lookup_unref(l);
	return rc;
}

const char *resolve_strerror(int r)
{
	return r == RESOLVE_TIMEOUT ? "the name lookup timed out" : gai_strerror(r);
}
