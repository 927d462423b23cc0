/* changes: what a program changed in a host project it saw through an
 * overlay (sandbox_config.project_dir), read from the overlay's upper
 * layer, shown as a unified diff, checked against the project and copied
 * to it, or dropped.
 *
 * The upper layer is written by sandboxed code: every name, size, type
 * and byte in it is untrusted.  It is read through an fd with
 * RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, regular files only with
 * O_NONBLOCK (a FIFO never blocks us), and every count is capped.  The
 * project is written the same way: never through a symlink, never into
 * an existing inode (a temporary file renamed over the name, so a hard
 * link in the project to a file elsewhere is replaced, not written
 * through), and as the project's owner (fsuid), never as root.
 *
 * A change list is the upper layer compared with the project, in
 * pre-order (a directory before what is in it), sorted by name:
 * added and modified files, directories and symlinks; deletions
 * (whiteouts, and what an opaque directory hides) expanded to each entry
 * below them.  Entries identical to the project (a copy-up with nothing
 * changed, a change already applied) are left out. */
#ifndef CODECELL_SESSION_CHANGES_H
#define CODECELL_SESSION_CHANGES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "session/workspace.h"
#include "util/buf.h"
#include "util/sha256.h"

#define CHANGES_MAX_ENTRIES 20000   /* listed; the rest: truncated */
#define CHANGES_MAX_DEPTH 64	    /* directories deep */
#define CHANGES_TEXT_MAX (1u << 20) /* a side larger than this is not diffed */
#define CHANGES_DIFF_MAX (1u << 20) /* the diff's text, by default */
#define CHANGES_BASE_FILE "base"    /* in a saved changes directory */
#define CHANGES_UPPER_DIR "upper"

/* The project, and when the session started: the fingerprint an apply
 * checks against (changes_check). */
struct changes_base {
	char project[4096]; /* absolute, symlinks resolved */
	dev_t dev;
	ino_t ino;
	uid_t uid; /* the project directory's owner: files applied get it */
	gid_t gid;
	int64_t since_ns; /* CLOCK_REALTIME_COARSE when the session started */
};
/* dir resolved, its identity and owner, since changes_start_ns().  0 or
 * -errno (-ENOTDIR, -ENOENT, -ENAMETOOLONG). */
int changes_base_init(struct changes_base *b, const char *dir);
/* The start of a session (or of what follows an apply) as file times
 * see it: the ctime of a fence (a memfd changed now).  A change after it
 * has a ctime at or past it; one before it, an earlier one. */
int64_t changes_start_ns(void);

enum change_kind { CHANGE_ADDED, CHANGE_MODIFIED, CHANGE_DELETED };
enum change_type { CHANGE_FILE, CHANGE_DIR, CHANGE_SYMLINK };
const char *change_kind_name(enum change_kind k);
const char *change_type_name(enum change_type t);

struct change {
	char *path; /* relative, no leading slash */
	enum change_kind kind;
	enum change_type type;
	uint64_t size;	 /* the new side's (the old one's for a deletion) */
	mode_t mode;	 /* permission bits, the new side's */
	mode_t old_mode; /* modified: the project's */
	bool mode_only;	 /* modified file: same bytes, other mode */
	/* changes_digest(): the new side's bytes (a file's content, a
	 * symlink's target) as they were read */
	unsigned char sha256[SHA256_LEN];
};

struct change_list {
	struct change *v;
	size_t n, cap;
	bool truncated;	  /* CHANGES_MAX_ENTRIES reached */
	unsigned skipped; /* FIFOs, sockets, devices: never carried */
	/* changes_digest() read every entry: changes_copy() writes those
	 * bytes, modes and types and no others */
	bool planned;
};
void change_list_release(struct change_list *l);

/* Compare the upper layer (upper_fd, an O_PATH directory fd) with the
 * project.  0 or -errno (the project is gone: -ENOENT). */
int changes_list(int upper_fd, const struct changes_base *b, struct change_list *ret);
/* The unified diff (git's format: text hunks, "Binary files ... differ",
 * symlinks as their target) of l into out, up to out's cap: -E2BIG when
 * it was cut there (what fits is kept). */
int changes_diff(int upper_fd, const struct changes_base *b, const struct change_list *l,
		 struct buf *out);
/* {"project", "changes": [{path, change, type, size, mode, binary?}],
 * "truncated", "diff", "diff_truncated"}: a new reference, NULL on ENOMEM. */
json_t *changes_json(const struct changes_base *b, const struct change_list *l,
		     const struct buf *diff, bool diff_truncated);
/* The digest of what l would write (an apply's changes_sha256): each
 * entry's path, change, type, mode and size and the new side's bytes (a
 * file's content, a symlink's target), read from upper_fd now, in l's
 * order.  A diff's text leaves out the bytes of binary and large files;
 * this does not.  Each entry keeps its own digest and size, and l is
 * marked planned.  *ret_bytes: the new sides' bytes in all.  0, or
 * -errno (-ECANCELED: an entry is no longer of its listed type). */
int changes_digest(int upper_fd, struct change_list *l, char out[2 * SHA256_LEN + 1],
		   uint64_t *ret_bytes);
/* Did the project change underneath since b->since_ns, where l would
 * write?  A path l touches that now has a ctime at or after it, or that
 * is missing now while its nearest existing ancestor does (an entry was
 * removed or added there), refuses; so does a project directory that is
 * another one now.  0, or -ESTALE with the path in msg. */
int changes_check(const struct changes_base *b, const struct change_list *l, char *msg, size_t n);
/* Make every path of l under dst_fd (the project, or a new sandbox's
 * workspace) what it is in src_fd (the upper layer; a whiteout or a
 * missing entry: removed), as owner o (o->chown: as o->uid/o->gid).
 * With l from changes_list() and src the same upper layer this applies
 * the changes (or replays them into a new sandbox's overlay).  0 or -errno with the path
 * in msg (what was done before stays done).  A planned l (changes_digest)
 * is written as planned and all or nothing where the sandbox can make it
 * fail: every file and symlink is staged under dst_fd first and its bytes
 * checked against its digest; one that differs (the sandbox wrote it
 * since) gives -ECANCELED with nothing in dst changed.  Then deletions,
 * directories and the staged entries take their places (types and modes
 * the plan's); only a filesystem error stops that step part way.  For an
 * undo, use changes_revert(). */
int changes_copy(int src_fd, int dst_fd, const struct change_list *l, const struct ws_owner *o,
		 char *msg, size_t n);

/* Undo l in a live sandbox's workspace (ws_fd, the overlay): every path
 * made what the project has, as owner o, but for files the program could
 * not read through its lower layer (the project owner's without the
 * owner's read bit, others' without the others' read bit): those are
 * left as they are, never copied in.  How many were left so, or -errno
 * with msg. */
int changes_revert(int ws_fd, const struct changes_base *b, const struct change_list *l,
		   const struct ws_owner *o, char *msg, size_t n);

/* A changes directory on the host (after `codecell run --project`): the
 * upper layer copied (whiteouts as 0/0 character devices, opaque marks
 * as the user.overlay.opaque xattr, as overlayfs writes them) and the
 * base.  dir must not exist; made 0700.  0 or -errno with msg. */
int changes_save(int upper_fd, const struct changes_base *b, const char *dir, char *msg, size_t n);
/* Open a changes directory: its base, and an O_PATH fd of its upper
 * layer (the caller's).  0 or -errno with msg. */
int changes_load(const char *dir, struct changes_base *b, int *ret_upper_fd, char *msg, size_t n);
/* Remove a changes directory (only what changes_save makes).  0 or
 * -errno. */
int changes_remove(const char *dir);

#endif
