/* landlock: the second wall behind the mount namespace.  After
 * pivot_root the child limits itself to reading and executing the
 * sandbox tree, writing only /tmp, the workspace and the /dev nodes, and
 * (ABI 6+) to signalling and reaching abstract unix sockets only inside
 * its own domain.  Best effort: the ABI in force is reported. */
#ifndef CODECELL_SANDBOX_LANDLOCK_H
#define CODECELL_SANDBOX_LANDLOCK_H

/* The kernel's Landlock ABI version, 0 if unavailable (disabled, or too
 * old a kernel). */
int sandbox_landlock_abi(void);
/* Restrict the calling thread.  Needs no_new_privs.  workspace is the
 * absolute path of the writable workspace.  Returns the ABI applied (>=1),
 * 0 when Landlock is unavailable, or -errno.  No allocation. */
int sandbox_landlock_apply(const char *workspace);

#endif
