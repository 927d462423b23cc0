/* engine/files: the file operations on a session's workspace that every
 * door offers (/v1's files routes, E2B's envd, MCP's tools): read,
 * write and upload, list, stat, mkdir, move, remove.  The doors only
 * translate their requests and answers.
 *
 * Every path is relative to the workspace root (the doors strip their
 * own prefixes, /home/user) and is resolved beneath it with
 * openat2(RESOLVE_BENEATH) one directory at a time, so neither "..", an
 * absolute path nor a symlink planted by the sandboxed code leads out.
 * Changes are made as the workspace's owner (session/workspace.h), and
 * a file is written to a temporary name (WS_UPLOAD_PREFIX) renamed over
 * the target, which never writes through a link already there.
 * Functions return 0 (or an fd) or -errno; they never log. */
#ifndef CODECELL_ENGINE_FILES_H
#define CODECELL_ENGINE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "session/workspace.h"

#define FILES_LIST_MAX 10000 /* entries of one listing */
/* Directory levels beneath the workspace any operation goes: the
 * parents a path names (and a write makes), a listing's depth, a
 * removal's recursion (past it: -EMLINK, the rest is left); the same
 * cap as the workspace's copies.  The sandboxed code can nest
 * directories tens of thousands deep; each level of a recursion holds
 * a stack frame and an fd. */
#define FILES_DEPTH_MAX WS_DEPTH_MAX
#define FILES_NAME_MAX 255 /* bytes of one path component */

/* A session's workspace: the O_PATH fd its sandbox hands out, and who
 * owns what is created in it. */
struct engine_ws {
	int fd;
	struct ws_owner owner;
};

struct session;
/* The workspace of s now (it changes when the kernel restarts): 0,
 * -ESRCH (no session), -ENOENT (no workspace: the kernel is not
 * running). */
int engine_ws_of_session(const struct session *s, struct engine_ws *w);

/* Split "a/b/c" into its parent ("a/b", or "." for none) and last name
 * (pointing into path). */
void engine_files_split(const char *path, char *parent, size_t n, const char **ret_name);

/* The directory path ("" or "." is the root), an O_PATH fd; its
 * missing components made (as the owner) when mkdir. */
int engine_files_open_dir(const struct engine_ws *w, const char *path, bool mkdir);

/* Open path for reading (O_NONBLOCK: a FIFO the sandboxed code made
 * must not hang the caller): a regular file or a directory, with its
 * stat in *st.  -ENXIO: neither (a socket, a FIFO, a device). */
int engine_files_open(const struct engine_ws *w, const char *path, struct stat *st);

/* path's own stat (a symlink is not followed).  0 or -errno. */
int engine_files_stat(const struct engine_ws *w, const char *path, struct stat *st);

/* One entry of a listing: its path relative to the workspace, its name
 * (in dir), its stat.  Return < 0 to stop the walk with that error. */
typedef int (*engine_files_entry_fn)(void *arg, int dir, const char *name, const char *rel,
				     const struct stat *st);
struct engine_files_listing {
	unsigned depth;	  /* levels: 1 lists the directory itself only */
	bool uploads;	  /* list uploads in progress (WS_UPLOAD_PREFIX) too */
	bool truncated;	  /* FILES_LIST_MAX entries were listed, more are there */
	unsigned skipped; /* names that are not UTF-8 (the sandboxed code may make any) */
};
/* List the directory path, l->depth levels down (at most
 * FILES_DEPTH_MAX), in no order.
 * -ENOTDIR: path is not a directory. */
int engine_files_list(const struct engine_ws *w, const char *path, struct engine_files_listing *l,
		      engine_files_entry_fn fn, void *arg);

/* Make the directory path and its missing parents.  -EEXIST if it is
 * there. */
int engine_files_mkdir(const struct engine_ws *w, const char *path);
/* Rename from to to (to's parents made).  -EBUSY: either is the root. */
int engine_files_move(const struct engine_ws *w, const char *from, const char *to);
/* Remove path, a directory with what it holds (never through a symlink
 * nor across a mount).  -EBUSY: the root; -EMLINK: nested over
 * FILES_DEPTH_MAX, removed in part. */
int engine_files_remove(const struct engine_ws *w, const char *path);

/* A file written in pieces (an upload as its body arrives): a temporary
 * file beside the target, renamed over it by engine_upload_commit(). */
struct engine_upload {
	int dir, fd;   /* -1 when not open */
	char tmp[48];  /* the temporary file's name in dir */
	uint64_t size; /* bytes written */
	dev_t ws_dev;  /* the workspace written to (a restart makes another) */
	ino_t ws_ino;
	struct ws_owner owner;
	bool done; /* renamed into place */
};
/* Create the temporary file for path (its parents made).  u is reset
 * first. */
int engine_upload_open(struct engine_upload *u, const struct engine_ws *w, const char *path);
/* Append; -E2BIG past max bytes in all. */
int engine_upload_write(struct engine_upload *u, const void *data, size_t len, uint64_t max);
/* Rename it over path if w is still the workspace it was opened in
 * (-ESTALE: the session restarted); *ret_replaced: a file was there.
 * -EISDIR: path is a directory. */
int engine_upload_commit(struct engine_upload *u, const struct engine_ws *w, const char *path,
			 bool *ret_replaced);
/* Close, and remove the temporary file unless committed. */
void engine_upload_drop(struct engine_upload *u);

/* A whole file at once: engine_upload_open + write + commit. */
int engine_files_write(const struct engine_ws *w, const char *path, const void *data, size_t len,
		       bool *ret_replaced);

/* What a door answers for a failed operation: one table for every door
 * (the message names the operation and the path, and says what to do). */
struct engine_files_error {
	int http;	   /* /v1's status */
	int e2b_http;	   /* envd's, where E2B's SDK maps another to its own error */
	const char *code;  /* /v1's error code */
	char message[400]; /* room for a door's hint in its own 512 */
};
void engine_files_error(int err, const char *what, const char *path,
			struct engine_files_error *out);

#endif
