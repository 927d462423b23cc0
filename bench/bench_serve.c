/* bench_serve PORT: load on a running `codecell serve` (bench/bench_serve.sh
 * starts one).  A small HTTP/1.1 client of our own, keep-alive, one
 * connection and one session per client thread:
 *
 *   - executions/s and p50/p99 latency of POST /v1/sessions/{id}/execute
 *     with trivial code, for 1, 16 and 64 concurrent clients;
 *   - the round trip of create + execute + delete of a session.
 *
 * Prints figures; asserts nothing about them. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RUN_SECONDS 3.0
#define WARMUP 20
#define MAX_SAMPLES 400000
#define RESP_MAX (1 << 20)

static int port;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_server(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("bench_serve: connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* One request on a keep-alive connection; the body of the answer in out
 * (NUL-terminated).  Returns the HTTP status, or -1. */
static int http(int fd, const char *method, const char *path, const char *body, char *out)
{
	char req[4096];
	size_t blen = body ? strlen(body) : 0, have = 0, need = 0;
	int n = snprintf(req, sizeof(req),
			 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\n\r\n%s",
			 method, path, blen, body ? body : "");
	char *hdr_end = NULL;

	if (write(fd, req, (size_t)n) != n)
		return -1;
	for (;;) {
		ssize_t r = read(fd, out + have, RESP_MAX - 1 - have);

		if (r <= 0)
			return -1;
		have += (size_t)r;
		out[have] = '\0';
		if (!hdr_end && (hdr_end = strstr(out, "\r\n\r\n"))) {
			const char *cl = strcasestr(out, "Content-Length:");

			need = (size_t)(hdr_end + 4 - out) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
		}
		if (hdr_end && have >= need)
			break;
	}
	n = (int)strtol(out + 9, NULL, 10); /* "HTTP/1.1 200" */
	memmove(out, hdr_end + 4, have - (size_t)(hdr_end + 4 - out) + 1);
	return n;
}

static void new_session(int fd, char *id, char *buf)
{
	const char *p;

	if (http(fd, "POST", "/v1/sessions", "{}", buf) != 201 || !(p = strstr(buf, "\"id\":\""))) {
		fprintf(stderr, "bench_serve: cannot create a session: %.200s\n", buf);
		exit(1);
	}
	memcpy(id, p + 6, 32);
	id[32] = '\0';
}

struct client {
	pthread_t t;
	char id[33];
	double *lat;
	size_t n;
	double until;
	pthread_barrier_t *start;
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	char path[128], *buf = malloc(RESP_MAX);
	int fd = connect_server();

	snprintf(path, sizeof(path), "/v1/sessions/%s/execute", c->id);
	for (int i = 0; i < WARMUP; i++)
		http(fd, "POST", path, "{\"code\": \"x = 1\"}", buf);
	pthread_barrier_wait(c->start);
	c->until = now_s() + RUN_SECONDS;
	while (now_s() < c->until && c->n < MAX_SAMPLES / 64) {
		double t0 = now_s();

		if (http(fd, "POST", path, "{\"code\": \"x = 1\"}", buf) != 200) {
			fprintf(stderr, "bench_serve: execute failed: %.200s\n", buf);
			break;
		}
		c->lat[c->n++] = now_s() - t0;
	}
	close(fd);
	free(buf);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	return n ? v[(size_t)(p * (double)(n - 1))] : 0;
}

static void run_clients(int nclients)
{
	struct client *cs = calloc((size_t)nclients, sizeof(*cs));
	double *all = malloc(sizeof(double) * MAX_SAMPLES), t0, t1;
	char *buf = malloc(RESP_MAX), path[128];
	pthread_barrier_t start;
	size_t total = 0;
	int fd = connect_server();

	pthread_barrier_init(&start, NULL, (unsigned)nclients + 1);
	for (int i = 0; i < nclients; i++) {
		new_session(fd, cs[i].id, buf);
		cs[i].lat = malloc(sizeof(double) * (MAX_SAMPLES / 64));
		cs[i].start = &start;
	}
	for (int i = 0; i < nclients; i++)
		pthread_create(&cs[i].t, NULL, client_main, &cs[i]);
	pthread_barrier_wait(&start); /* every client warmed up */
	t0 = now_s();
	for (int i = 0; i < nclients; i++)
		pthread_join(cs[i].t, NULL);
	t1 = now_s();
	for (int i = 0; i < nclients; i++) {
		memcpy(all + total, cs[i].lat, cs[i].n * sizeof(double));
		total += cs[i].n;
		snprintf(path, sizeof(path), "/v1/sessions/%s", cs[i].id);
		http(fd, "DELETE", path, NULL, buf);
		free(cs[i].lat);
	}
	qsort(all, total, sizeof(double), cmp_double);
	printf("  execute x = 1, %2d clients   %7.0f executions/s   p50 %7.3f ms   p99 %7.3f ms   (n=%zu)\n",
	       nclients, (double)total / (t1 - t0), pct(all, total, 0.5) * 1e3,
	       pct(all, total, 0.99) * 1e3, total);
	fflush(stdout);
	close(fd);
	free(all);
	free(buf);
	free(cs);
	pthread_barrier_destroy(&start);
}

static void round_trips(int n)
{
	double *lat = malloc(sizeof(double) * (size_t)n);
	char *buf = malloc(RESP_MAX), id[33], path[128];
	int fd = connect_server();

	for (int i = 0; i < n; i++) {
		double t0 = now_s();

		new_session(fd, id, buf);
		snprintf(path, sizeof(path), "/v1/sessions/%s/execute", id);
		if (http(fd, "POST", path, "{\"code\": \"1 + 1\"}", buf) != 200)
			fprintf(stderr, "bench_serve: execute failed: %.200s\n", buf);
		snprintf(path, sizeof(path), "/v1/sessions/%s", id);
		http(fd, "DELETE", path, NULL, buf);
		lat[i] = now_s() - t0;
	}
	qsort(lat, (size_t)n, sizeof(double), cmp_double);
	printf("  create + execute + delete (cold)   median %7.1f ms   p99 %7.1f ms   (n=%d)\n",
	       pct(lat, (size_t)n, 0.5) * 1e3, pct(lat, (size_t)n, 0.99) * 1e3, n);
	close(fd);
	free(lat);
	free(buf);
}

int main(int argc, char **argv)
{
	if (argc < 2 || (port = (int)strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: bench_serve PORT [CLIENTS...]\n");
		return 2;
	}
	printf("codecell serve (HTTP on loopback, keep-alive, one session per client, %.0f s each)\n",
	       RUN_SECONDS);
	if (argc > 2) {
		for (int i = 2; i < argc; i++)
			run_clients((int)strtol(argv[i], NULL, 10));
	} else {
		run_clients(1);
		run_clients(16);
		run_clients(64);
	}
	round_trips(20);
	return 0;
}
