/* make bench: what the engine's pipeline adds to every call, whatever the
 * door: argument validation (a typical /v1/execute body through the
 * request parser and the limits table), the policy check (engine_check
 * with a policy that sets ceilings and a rate), and the audit record (one
 * JSON line appended with one write(2)).  The figures are per call, next
 * to the cost of a bare write(2) of a line of the same size measured in
 * the same run: the floor any audit log pays.  Target: < 50 us in all. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http/request.h"
#include "engine/audit.h"
#include "engine/policy.h"

#define N 20000

static const char body[] =
	"{\"code\": \"import math\\nprint(math.pi)\\n\", \"language\": \"python\", \"timeout\": \"10s\", "
	"\"limits\": {\"memory\": \"256M\", \"pids\": 64, \"output_limit\": 65536}, "
	"\"env\": {\"API_KEY\": \"secret\", \"MODE\": \"test\"}}";

static const char policy[] = "[default]\nlanguages = python, bash\nlimit.memory = 1G\n"
			     "limit.timeout = 1m\nrate = 1000000/s\nburst = 1000000\nmax_file = 16M\n";

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(void)
{
	char dir[] = "/tmp/cc-bench-pipeline-XXXXXX", path[64], err[512], line[600];
	struct engine_policies *ps = NULL;
	struct engine_audit *au = NULL;
	double t, parse_us, check_us, audit_us, write_us;
	struct run_result res = { .status = RESULT_OK, .has_exit_code = true, .out_len = 18 };
	int fd;

	if (!mkdtemp(dir))
		return perror("mkdtemp"), 1;
	snprintf(path, sizeof(path), "%s/audit.log", dir);
	if (engine_policies_parse(policy, strlen(policy), &ps, err, sizeof(err)) < 0 ||
	    engine_audit_open(path, 1ull << 40, &au, err, sizeof(err)) < 0)
		return fprintf(stderr, "%s\n", err), 1;

	t = now_us();
	for (int i = 0; i < N; i++) {
		struct api_request r;
		struct api_error e;

		if (api_request_parse(API_BODY_EXECUTE, body, strlen(body), &r, &e) < 0)
			return fprintf(stderr, "%s\n", e.message), 1;
		api_request_release(&r);
	}
	parse_us = (now_us() - t) / N;

	t = now_us();
	for (int i = 0; i < N; i++) {
		struct engine_verdict v = { 0 };
		struct run_request rq;

		run_request_init(&rq);
		rq.limits.memory_bytes = 256u << 20;
		if (engine_check_run(&ps->clients[0], DOOR_API, &rq, 1u << LIMIT_MEMORY, false, &v) < 0)
			return fprintf(stderr, "%s\n", v.message), 1;
		engine_release(&ps->clients[0], ACTION_RUN);
	}
	check_us = (now_us() - t) / N;

	t = now_us();
	for (int i = 0; i < N; i++) {
		struct engine_verdict v = { .allowed = true };
		struct run_request rq;
		json_t *args;

		run_request_init(&rq);
		args = engine_audit_run_args(&rq, 1u << LIMIT_MEMORY);
		struct engine_audit_record rec = {
			.client = "bench", .door = DOOR_API, .action = ACTION_RUN, .has_lang = true,
			.code = body, .code_len = 40, .args = args, .verdict = &v, .duration_ms = 12.5,
			.res = &res,
		};
		if (engine_audit_write(au, &rec) < 0)
			return perror("audit"), 1;
		json_decref(args);
	}
	audit_us = (now_us() - t) / N;

	/* the floor: one O_APPEND write(2) of a line as long as a record */
	snprintf(path, sizeof(path), "%s/plain.log", dir);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	t = now_us();
	for (int i = 0; i < N && fd >= 0; i++)
		if (write(fd, line, sizeof(line)) != (ssize_t)sizeof(line))
			return perror("write"), 1;
	write_us = (now_us() - t) / N;
	close(fd);

	printf("pipeline per call (%d calls each):\n", N);
	printf("  validation (request parser, limits table)  %7.2f us\n", parse_us);
	printf("  policy check (engine_check)                %7.2f us\n", check_us);
	printf("  audit record (JSON line, one write)        %7.2f us  (a bare write of %zu bytes: %.2f us, x%.1f)\n",
	       audit_us, sizeof(line), write_us, audit_us / write_us);
	printf("  total                                      %7.2f us  (target < 50 us: %s)\n",
	       parse_us + check_us + audit_us, parse_us + check_us + audit_us < 50 ? "met" : "MISSED");
	engine_audit_close(au);
	engine_policies_free(ps);
	unlink(path);
	snprintf(path, sizeof(path), "%s/audit.log", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}
