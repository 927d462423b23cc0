/* e2b/internal.h: what e2b.c, jupyter.c, envd.c and kernel.c
 * share.  Not a public interface. */
#ifndef CODECELL_E2B_INTERNAL_H
#define CODECELL_E2B_INTERNAL_H

#include "http/http.h"
#include "http/internal.h"
#include "engine/limits.h"
#include "engine/sessions.h"

#define E2B_ENVD_VERSION "0.5.7"  /* the SDKs take their current paths from 0.5.7 on */
#define E2B_TIMEOUT_DEFAULT_S 300 /* a sandbox's life when create gives none (E2B's) */
#define E2B_TIMEOUT_MAX_S 86400
#define E2B_JSON_MAX (64u << 10) /* control plane, contexts and RPC bodies */
#define E2B_CTX_MAX 16		 /* contexts of one sandbox, the default one included */
#define E2B_CTX_ID_LEN 32
#define E2B_PART_HEAD_MAX 8192	/* the headers of a multipart part */
#define E2B_BOUNDARY_MAX 200	/* RFC 2046: at most 70; some clients send more */
#define E2B_UPLOAD_FILES_MAX 64 /* files of one multipart upload */
/* Connect-Timeout-Ms beyond it is taken as it: the limits table's
 * timeout ceiling (engine/limits.h) */
#define E2B_COMMAND_TIMEOUT_MAX_MS ((uint64_t)(ENGINE_TIMEOUT_CEILING_S * 1000))

enum e2b_lang { E2B_PYTHON, E2B_JAVASCRIPT, E2B_BASH };

struct e2b_ctx {
	char id[E2B_CTX_ID_LEN + 1];
	enum e2b_lang lang;
	char cwd[API_PATH_MAX + 16]; /* absolute, as the client gave it */
	bool main;		     /* the kernel's own namespace */
};

struct e2b_sandbox {
	char id[API_ID_LEN + 1];      /* its session's id */
	struct engine_session *entry; /* a reference */
	char template_id[64];
	char access[API_ID_LEN + 1]; /* its access token, "" without a server token */
	json_t *metadata;
	uint64_t started_ms, end_ms; /* epoch milliseconds */
	unsigned executions;
	struct e2b_ctx ctx[E2B_CTX_MAX];
	unsigned n_ctx;
	struct e2b_sandbox *next;
};

struct e2b_state {
	pthread_mutex_t lock;
	struct e2b_sandbox *head;
};

enum e2b_route {
	E2B_R_CREATE,
	E2B_R_LIST,
	E2B_R_INFO,
	E2B_R_KILL,
	E2B_R_TIMEOUT,
	E2B_R_CONNECT,
	E2B_R_REFRESH,
	E2B_R_METRICS,
	E2B_R_UNSUPPORTED, /* pause, snapshots, fork, network, ... */
	E2B_R_HEALTH,
	E2B_R_EXECUTE,
	E2B_R_CTX_LIST,
	E2B_R_CTX_CREATE,
	E2B_R_CTX_DELETE,
	E2B_R_CTX_RESTART,
	E2B_R_FILES_GET,
	E2B_R_FILES_POST,
	E2B_R_FS_LISTDIR,
	E2B_R_FS_STAT,
	E2B_R_FS_MAKEDIR,
	E2B_R_FS_MOVE,
	E2B_R_FS_REMOVE,
	E2B_R_PROC_START,
	E2B_R_PROC_SIGNAL,
	E2B_R_PROC_LIST,
	E2B_R_PROC_CONNECT,
	E2B_R_RPC_UNIMPLEMENTED,
};

/* A multipart/form-data body on its way to files.c's upload: the first
 * part's bytes, without its headers and the closing boundary. */
struct e2b_multipart {
	char delim[E2B_BOUNDARY_MAX + 8]; /* "\r\n--" boundary */
	size_t delim_len;
	int state; /* e2b/envd.c */
	char head[E2B_PART_HEAD_MAX];
	size_t head_len;
	char hold[E2B_BOUNDARY_MAX + 8]; /* bytes that may begin the delimiter */
	size_t hold_len;
};

struct e2b_call {
	enum e2b_route route;
	char id[API_ID_LEN + 1]; /* the sandbox */
	int port;		 /* 49983 envd, 49999 code interpreter; 0 control plane */
	char ctx[E2B_CTX_ID_LEN + 1];
	const char *rpc; /* the RPC's name */
	bool multipart;
	struct e2b_multipart mp;
	bool path_from_part; /* POST /files without ?path=: the part's file name */
	int upload_err;	     /* -EINVAL: the framing (upload_why says how); another
			   -errno: putting a part in place (upload_why: its path) */
	char upload_why[API_PATH_MAX + 64];
	/* the workspace paths of the parts put in place so far (strings) */
	json_t *written;
	/* a multipart part refused by the policy while the body is read
	 * (e2b_refuse): answered once it is */
	bool answer_later, refused;
	struct api_error refusal;
	bool connect;	/* a Connect RPC: errors in Connect's shape */
	unsigned count; /* number_of_executions of this /execute */
	uint64_t
		timeout_ms; /* Connect-Timeout-Ms (at most E2B_COMMAND_TIMEOUT_MAX_MS), 0: none given */
};

/* The door's request state (c->door_call, made by e2b_start). */
static inline struct e2b_call *e2b_of(const struct api_call *c)
{
	return c->door_call;
}

/* sandbox.c */
/* The door's state in srv (http_door_state). */
struct e2b_state *e2b_state_of(const struct api_server *srv);
/* Not ended, and its time not up at now (epoch ms). */
bool e2b_sandbox_alive(const struct e2b_sandbox *sb, uint64_t now);
/* An error in the door's shape: {"code": HTTP, "message"} (REST), or
 * Connect's {"code": "not_found", "message"} with its HTTP status. */
enum MHD_Result e2b_respond_error(struct api_call *c, const struct api_error *e);
/* Under st->lock: the live sandbox with this id, or NULL. */
struct e2b_sandbox *e2b_find(struct e2b_state *st, const char *id);
/* e2b_find() in c's server, NULL also when c may not see the sandbox
 * (api_sees: another client's).  Under st->lock. */
struct e2b_sandbox *e2b_find_seen(struct api_call *c, const char *id);
/* The sandbox of the request's E2b-Sandbox-Id with a new reference to
 * its session, or NULL (answered: 502, as E2B's proxy does). */
struct engine_session *e2b_sandbox_session(struct api_call *c, enum MHD_Result *ret);
/* A workspace path from the client's ("/home/user/a", "a", "/home/user")
 * into r->path; 0 or -EINVAL with e set (400: outside /home/user, ".."). */
int e2b_path(const char *in, struct api_route *r, struct api_error *e);
/* The client's path of a workspace path ("a" -> "/home/user/a"). */
void e2b_abs_path(const char *rel, char *out, size_t n);
/* The request's JSON body as an object (an empty body: {}); NULL with e
 * set (400). */
json_t *e2b_body(struct api_call *c, struct api_error *e);
/* A query argument, percent-decoded into out; 1 found, 0 absent, or
 * -EINVAL with e set. */
int e2b_query(struct api_call *c, const char *name, char *out, size_t n, struct api_error *e);
enum MHD_Result e2b_respond_empty(struct api_call *c, unsigned status);

/* e2b/parse.c: the door's parsers of client bytes that need no server,
 * fuzzed by tests/fuzz/fuzz-e2b-forms.c */
/* Whether every "k=v" pair of q (?metadata=, as URLSearchParams wrote it
 * from keys and values the SDK had URL-encoded first) is a string of
 * meta's.  Pairs are cut at 2047 bytes. */
bool e2b_metadata_matches(const json_t *meta, const char *q);
/* The file name of a multipart part's headers (filename="..."), as
 * WHATWG's FormData escapes it, into out (n bytes).  0, -ENOENT (none),
 * -ENAMETOOLONG, -EINVAL (no closing quote). */
int e2b_part_filename(const char *head, char *out, size_t n);
/* The delimiter ("\r\n--" boundary) of a Content-Type (may be NULL) into
 * out (n bytes) and *ret_len: 1; 0 for a type that is not
 * multipart/form-data with a boundary; -EINVAL for a boundary empty or
 * over E2B_BOUNDARY_MAX bytes (or over n). */
int e2b_multipart_delim(const char *type, char *out, size_t n, size_t *ret_len);
/* Connect's code for an HTTP status ("not_found" for 404, ...). */
const char *e2b_connect_code(int http);

/* e2b/jupyter.c */
enum MHD_Result e2b_handle_execute(struct api_call *c);
enum MHD_Result e2b_handle_contexts(struct api_call *c);

/* e2b/envd.c */
enum MHD_Result e2b_handle_files(struct api_call *c);
enum MHD_Result e2b_handle_fs(struct api_call *c);
enum MHD_Result e2b_handle_process(struct api_call *c);
int e2b_upload_start(struct api_call *c, struct api_error *e);
/* A process stream that ends at once with err (Connect: HTTP 200, the
 * error in the end message). */
enum MHD_Result e2b_stream_error(struct api_call *c, const struct api_error *err);
void e2b_upload_data(struct api_call *c, const char *data, size_t len);

/* e2b/kernel.c: cells of the helper (kernels/e2b_helper.py) */
/* Code of a cell that calls builtins._codecell_e2b.CALL, installing the
 * helper first if this kernel has not got it.  Owned by the caller. */
char *e2b_helper_cell(const char *call);
/* A JSON value as a Python literal (strings, numbers, objects of them,
 * true/false/null spelled as Python does).  Owned by the caller. */
char *e2b_py_literal(const json_t *v);
/* Run code as one cell in e's session, waiting for the lock; the result
 * in *res (release it).  0, -ESRCH (the session is gone), or -errno. */
int e2b_cell(struct engine_session *e, const char *code, double timeout_s, struct run_result *res);
/* The text/plain of the cell's main result, or NULL. */
const char *e2b_cell_text(const struct run_result *res);

/* stream.c: an execution's NDJSON events in Jupyter's shape (the
 * door's stream hook, http/door.h). */
extern const struct http_stream_shape e2b_stream_shape;

#endif
