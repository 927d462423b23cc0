/* LD_PRELOAD shim for tests/security/test_surface_report.py and
 * test_kernel_surface.py: the process, and everything it runs, sees a
 * host that refuses the i386 entry (int 0x80), as a kernel without
 * 32-bit emulation does (CONFIG_IA32_EMULATION off, or ia32_emulation=0
 * on the command line), where the entry faults before any seccomp filter
 * or system call table sees it.
 *
 * A seccomp filter stands in for that kernel: every call made through the
 * i386 entry fails ENOSYS, the others pass.  It is stacked from a
 * constructor, so a static program (the surface prober) started by a
 * dynamic one under LD_PRELOAD (`env`) inherits it across exec.  The
 * control run sees the entry refused; a sandbox started under it would
 * still show its own filter's verdict (SIGSYS wins over ENOSYS). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef AUDIT_ARCH_I386
#define AUDIT_ARCH_I386 0x40000003
#endif

__attribute__((constructor)) static void no_ia32(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_I386, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	/* a shim that cannot stand in must not let the test pass as if it
	 * had: the program never starts */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
		fprintf(stderr, "no_ia32: cannot install the filter: %s\n", strerror(errno));
		_exit(125);
	}
}
