/* workspace: move files between the host and a sandbox's workspace
 * through the O_PATH fd the sandbox hands out.  Every path inside is
 * resolved beneath the workspace root (openat2 RESOLVE_BENEATH): a
 * symlink planted by sandboxed code never leads out. */
#ifndef CODECELL_SESSION_WORKSPACE_H
#define CODECELL_SESSION_WORKSPACE_H

#include <stdint.h>
#include <sys/types.h>

#include "util/buf.h"

/* The temporary name of a file being uploaded into a workspace (the
 * server's PUT .../files/{path}), followed by 16 random hex digits.
 * ws_copy_between() does not carry such files over: a restart or a fork
 * during an upload would copy the part that came so far. */
#define WS_UPLOAD_PREFIX ".codecell-upload-"

/* Directory levels beneath a workspace that anything walks: the copies
 * here, and every door's file operations (engine/files.h). */
#define WS_DEPTH_MAX 128

struct ws_owner {
	uid_t uid; /* what files created inside must belong to */
	gid_t gid;
	int chown; /* 1 when entries must be created as uid/gid (root) */
};

/* Create, rename and remove in a workspace as its owner: the tmpfs
 * belongs to the sandbox's user namespace, where host root is not
 * mapped (EOVERFLOW).  Sets this thread's fsuid/fsgid when o->chown;
 * ws_restore_ids() puts the previous ones back. */
struct ws_fsid {
	int uid, gid; /* -1: nothing was changed */
};
struct ws_fsid ws_become_owner(const struct ws_owner *o);
void ws_restore_ids(struct ws_fsid prev);

/* Copy the host file at path into the workspace as name.  0 or -errno
 * (-EEXIST: name taken; -ENOSPC: workspace full; -EISDIR: a directory). */
int ws_copy_in_file(int wsfd, const char *path, const char *name, const struct ws_owner *o);
/* Copy the contents of host directory dir into the workspace root,
 * recursively (regular files and directories; symlinks are skipped).
 * 0 or -errno. */
int ws_copy_in_dir(int wsfd, const char *dir, const struct ws_owner *o);
/* Copy one sandbox's workspace into another's (a session restart):
 * regular files and directories, as ws_copy_in_dir does, but for
 * uploads in progress (WS_UPLOAD_PREFIX).  The source's
 * processes must be gone.  0 or -errno. */
int ws_copy_between(int from_wsfd, int to_wsfd, const struct ws_owner *o);
/* Copy the workspace out into host directory dir (created if missing),
 * recursively; regular files and directories only.  What was skipped
 * (symlinks, sockets, ...) is listed in skipped (one path a line).
 * 0 or -errno. */
int ws_copy_out(int wsfd, const char *dir, struct buf *skipped);

/* The user-facing steps built on the above, shared by one-shot runs and
 * sessions.  Each returns 0 or -errno with a message for the user in
 * *ret_msg (free()). */

/* --workspace DIR: made now (with parents) so results always have
 * somewhere to go.  dir NULL: nothing to do. */
int ws_prepare_dir(const char *dir, char **ret_msg);
/* DIR's contents (if DIR exists), then each of files (by basename), then
 * db (by basename; may already be there from DIR). */
int ws_fill(int wsfd, const struct ws_owner *o, const char *dir, const char *const *files,
	    const char *db, char **ret_msg);
/* Copy the workspace out to dir (NULL: nothing).  What could not be
 * copied, or entries that are not regular files, make *ret_warning. */
int ws_sync_out(int wsfd, const char *dir, char **ret_warning);

#endif
