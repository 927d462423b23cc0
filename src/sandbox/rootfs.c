/* The sandbox's root filesystem: a tmpfs with read-only binds of what
 * interpreters need, a generated /etc, fresh /proc, a minimal /dev, and
 * size-capped /tmp and workspace. */
#include <ctype.h>
#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

/* Only ids the sandbox has: its own (the one id mapped into its user
 * namespace) and the overflow id, which is how every unmapped owner
 * shows (host root's files in /usr, /proc's): "nobody" names those in
 * ls -l.  No root: uid 0 is never mapped, nothing runs or owns as it. */
static const char etc_passwd[] = "user:x:1000:1000:codecell:" SANDBOX_HOME ":/bin/bash\n"
				 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char etc_group[] = "user:x:1000:\nnogroup:x:65534:\n";
static const char etc_hosts[] =
	"127.0.0.1\tlocalhost " SANDBOX_HOSTNAME "\n::1\tlocalhost ip6-localhost ip6-loopback\n";
static const char etc_nsswitch[] = "passwd: files\ngroup: files\nhosts: files\n"
				   "services: files\nprotocols: files\n";

/* Host /etc entries that programs read at run time and that hold no
 * secrets.  Files are copied into the root tmpfs (cheaper than a bind
 * mount, which costs two mount calls to set up and one to tear down);
 * directories are bound read-only. */
static const char *const etc_copies[] = {
	"ld.so.cache",
	"matplotlibrc",
	"mime.types",
	"ssl/openssl.cnf",
	"bash.bashrc",
	"inputrc",
	"localtime",
	/* getservbyname, getaddrinfo(host, "https"), getprotobyname */
	"services",
	"protocols",
	NULL,
};
/* ssl/certs: the CA bundle and its hashed links (public certificates
 * only; the keys are in ssl/private, never bound), for TLS clients once
 * egress is allowed */
static const char *const etc_binds[] = { "alternatives", "fonts", "ssl/certs", NULL };
/* A copied file larger than this is left out (no allocation in the
 * child: copies go through a stack buffer, and /etc files are small). */
#define ETC_COPY_MAX (1 << 20)
/* Top-level host paths: a symlink is copied as a symlink (merged /usr),
 * a directory is bound read-only. */
static const char *const top_links[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32", NULL };
/* What /proc shows of the host, masked with an empty file (or, for the
 * directories, an empty directory).  The host's boot arguments and kernel
 * config (Docker masks these too); host-wide counters that identify the
 * host or let two sandboxes on it find each other (interrupt and softirq
 * counts, disk and memory-zone statistics, pressure, open-file and dentry
 * counts, the ptys in use, /proc/locks, which lists every lock on the
 * host with its device and inode, codecell's id locks among them); the
 * host's devices and filesystems (/proc/fs/ext4/<disk>, /proc/bus,
 * /proc/irq).  What stays visible, and why: README "What a sandbox can
 * see of the host". */
static const char *const proc_masks[] = {
	"/proc/cmdline",
	"/proc/config.gz",
	"/proc/interrupts",
	"/proc/softirqs",
	"/proc/locks",
	"/proc/diskstats",
	"/proc/partitions",
	"/proc/swaps",
	"/proc/vmstat",
	"/proc/zoneinfo",
	"/proc/buddyinfo",
	"/proc/pagetypeinfo",
	"/proc/iomem",
	"/proc/ioports",
	"/proc/pressure/cpu",
	"/proc/pressure/io",
	"/proc/pressure/memory",
	"/proc/pressure/irq",
	"/proc/sys/fs/dentry-state",
	"/proc/sys/fs/dentry-negative",
	"/proc/sys/fs/inode-nr",
	"/proc/sys/fs/inode-state",
	"/proc/sys/fs/file-nr",
	"/proc/sys/fs/aio-nr",
	"/proc/sys/kernel/pty/nr",
	"/proc/sys/kernel/tainted",
	"/proc/sys/kernel/hung_task_detect_count",
	NULL,
};
static const char *const proc_dir_masks[] = { "/proc/fs",     "/proc/bus",	    "/proc/irq",
					      "/proc/driver", "/proc/sys/fs/quota", NULL };
/* Scratch names in the new root for OP_VIRT (unlinked once bound). */
#define VIRT_BOOT_ID "etc/.boot_id"
#define VIRT_STAT "etc/.stat"
#define VIRT_LOADAVG "etc/.loadavg"
#define VIRT_MEMINFO "etc/.meminfo"
/* At most this many ptys in a sandbox's own devpts instance: the host's
 * kernel.pty.max is shared by every devpts but the host's own. */
#define SANDBOX_MAX_PTYS "128"
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", NULL };

static int add(struct rootfs *fs, enum rootfs_op_type t, const char *src, const char *dst,
	       const char *data, unsigned long flags)
{
	if (fs->n >= ROOTFS_MAX_OPS)
		return -E2BIG;
	fs->ops[fs->n++] = (struct rootfs_op){ t, src, dst, data, flags, false, 0 };
	return 0;
}

static const char *keep(struct rootfs *fs, char *s)
{
	if (!s || fs->n_strings >= ROOTFS_MAX_OPS) {
		free(s);
		return NULL;
	}
	fs->strings[fs->n_strings++] = s;
	return s;
}

static int add_tmpfs(struct rootfs *fs, const char *dst, uint64_t size, const char *mode,
		     bool owned)
{
	char *opts = NULL;

	/* an inode cap too: empty files and directories cost no blocks, and
	 * without one a 1 MiB tmpfs holds a million of them */
	uint64_t inodes = size / 4096 < 64 ? 64 : size / 4096;

	if (asprintf(&opts, "mode=%s,size=%" PRIu64 ",nr_inodes=%" PRIu64 "%s", mode, size, inodes,
		     owned ? ",uid=1000,gid=1000" : "") < 0)
		return -ENOMEM;
	if (!keep(fs, opts))
		return -ENOMEM;
	return add(fs, OP_TMPFS, NULL, dst, opts, MS_NOSUID | MS_NODEV);
}

static int add_host_binds(struct rootfs *fs)
{
	char path[512], target[512];
	struct stat st;
	int r = 0;

	for (const char *const *t = top_links; *t && r == 0; t++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/%s", *t);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(path, target, sizeof(target) - 1);
			if (n < 0)
				continue;
			target[n] = '\0';
			r = add(fs, OP_SYMLINK, keep(fs, strdup(target)), *t, NULL, 0);
		} else if (S_ISDIR(st.st_mode)) {
			r = add(fs, OP_BIND_RO, keep(fs, strdup(path)), *t, NULL, 0);
			fs->ops[fs->n - 1].is_dir = true;
		}
	}
	for (const char *const *e = etc_binds; *e && r == 0; e++) {
		snprintf(path, sizeof(path), "/etc/%s", *e);
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (strchr(*e, '/') && (r = add(fs, OP_DIR, NULL, "etc/ssl", NULL, 0)) < 0)
			break;
		snprintf(target, sizeof(target), "etc/%s", *e);
		r = add(fs, OP_BIND_RO, keep(fs, strdup(path)), keep(fs, strdup(target)), NULL, 0);
		fs->ops[fs->n - 1].is_dir = true;
	}
	for (const char *const *e = etc_copies; *e && r == 0; e++) {
		snprintf(path, sizeof(path), "/etc/%s", *e);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > ETC_COPY_MAX)
			continue;
		if (strchr(*e, '/') && (r = add(fs, OP_DIR, NULL, "etc/ssl", NULL, 0)) < 0)
			break;
		snprintf(target, sizeof(target), "etc/%s", *e);
		r = add(fs, OP_COPY, keep(fs, strdup(path)), keep(fs, strdup(target)), NULL, 0);
	}
	return r;
}

/* A boot id of the sandbox's own (the host's names the host's boot, the
 * same in every sandbox on it): a random version-4 UUID. */
static char *random_boot_id(void)
{
	unsigned char b[16];
	char *s;

	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		return NULL;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	if (asprintf(&s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
		     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		     b[12], b[13], b[14], b[15]) < 0)
		return NULL;
	return s;
}

/* Is "cpuN" (name, len bytes) the aggregate line or a CPU the tree may
 * use? */
static bool stat_cpu_listed(const struct rootfs *fs, const char *name, size_t len)
{
	unsigned n = 0;

	if (len == 3 || fs->n_cpus == 0)
		return true;
	for (size_t i = 3; i < len; i++) {
		if (name[i] < '0' || name[i] > '9' || n > 100000)
			return false;
		n = n * 10 + (unsigned)(name[i] - '0');
	}
	return n < CPU_SETSIZE && CPU_ISSET(n, &fs->cpus);
}

/* /proc/stat without the host: the same "cpuN" lines (glibc counts CPUs
 * from them when /sys/devices/system/cpu is absent: os.cpu_count(),
 * nproc --all), only those of fs->cpus under a CPU quota, all counters 0, and
 * the boot time the sandbox's own (now).  The host's counters add up to
 * its uptime times its CPUs, and btime is its boot. */
static char *virtual_stat(const struct rootfs *fs)
{
	static const char zeros[] = " 0 0 0 0 0 0 0 0 0 0\n";
	char host[65536], out[16384], *p, *save = NULL;
	size_t len = 0;
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, host, sizeof(host) - 1);

	if (fd >= 0)
		close(fd);
	host[n > 0 ? n : 0] = '\0';
	for (p = strtok_r(host, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		size_t name = strcspn(p, " ");
		int k;

		if (strncmp(p, "cpu", 3) != 0 || name >= 16 || !stat_cpu_listed(fs, p, name))
			continue;
		k = snprintf(out + len, sizeof(out) - len, "%.*s%s%s", (int)name, p,
			     name == 3 ? " " : "", zeros);
		if (k < 0 || (size_t)k >= sizeof(out) - len)
			break;
		len += (size_t)k;
	}
	if (len == 0)
		len = (size_t)snprintf(out, sizeof(out), "cpu %scpu0%s", zeros, zeros);
	if (len < sizeof(out))
		snprintf(out + len, sizeof(out) - len,
			 "intr 0\nctxt 0\nbtime %lld\nprocesses 1\nprocs_running 1\n"
			 "procs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
			 (long long)time(NULL));
	return strdup(out);
}

/* The value /proc/meminfo shows for key under a memory limit of lim
 * kB (host: what the host's file says).  The limit is the machine's
 * size, all of it free at the start; no swap (the cgroup allows none);
 * host-wide counters (caches, slab, page tables, huge pages) 0.  Kernel
 * constants stay. */
static unsigned long long meminfo_value(const char *key, unsigned long long lim,
					unsigned long long host)
{
	static const char *const as_limit[] = { "MemTotal", "MemFree", "MemAvailable",
						"CommitLimit", NULL };
	static const char *const kept[] = { "VmallocTotal", "Hugepagesize", NULL };

	for (const char *const *k = as_limit; *k; k++)
		if (!strcmp(key, *k))
			return lim;
	for (const char *const *k = kept; *k; k++)
		if (!strcmp(key, *k))
			return host;
	return 0;
}

/* /proc/meminfo under a memory limit of mem bytes (lxcfs-style, but a
 * snapshot taken when the sandbox starts: MemFree and MemAvailable stay
 * the limit however much is in use; the live figures are in
 * /sys/fs/cgroup).  The host's keys in the host's order and format.
 * NULL: no limit, or no /proc/meminfo (keep the host's). */
static char *virtual_meminfo(uint64_t mem)
{
	char host[16384], out[16384], *p, *save = NULL;
	unsigned long long lim = mem / 1024, total = 0;
	size_t len = 0;
	int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, host, sizeof(host) - 1);

	if (fd >= 0)
		close(fd);
	if (!mem || n <= 0)
		return NULL;
	host[n] = '\0';
	if (sscanf(host, "MemTotal: %llu", &total) == 1 && total && total < lim)
		lim = total; /* a limit above the host's memory means the host's */
	for (p = strtok_r(host, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		char key[64];
		unsigned long long v = 0;
		const char *colon = strchr(p, ':');
		size_t kl = colon ? (size_t)(colon - p) : 0;
		int k;

		if (!colon || kl + 2 > sizeof(key))
			continue;
		memcpy(key, p, kl);
		key[kl] = '\0';
		(void)sscanf(colon + 1, "%llu", &v);
		v = meminfo_value(key, lim, v);
		key[kl] = ':';
		key[kl + 1] = '\0';
		k = snprintf(out + len, sizeof(out) - len, "%-16s%8llu%s\n", key, v,
			     strstr(colon, " kB") ? " kB" : "");
		if (k < 0 || (size_t)k >= sizeof(out) - len)
			break;
		len += (size_t)k;
	}
	return len ? strdup(out) : NULL;
}

static int add_virt(struct rootfs *fs, const char *scratch, const char *dst, char *data)
{
	if (!keep(fs, data))
		return -ENOMEM;
	return add(fs, OP_VIRT, scratch, dst, data, 0);
}

/* Mask and virtualize what /proc tells of the host (after OP_PROC). */
static int add_proc_masks(struct rootfs *fs, const struct sandbox_limits *l)
{
	const char *first_dir = NULL;
	int r = 0;

	/* the mask is an empty file we made anyway: resolv.conf.  A file
	 * this kernel does not have is skipped by the init (ENOENT): the
	 * sandbox's /proc is of the same kernel, and asking here first cost
	 * a system call per file */
	for (const char *const *m = proc_masks; *m && r == 0; m++)
		r = add(fs, OP_MASK, "etc/resolv.conf", *m + 1, NULL, 0);
	/* and a directory with an empty tmpfs, born read-only: one, bound
	 * over the others after pivot_root (a bind is cheaper than a new
	 * tmpfs, and of a read-only mount is read-only) */
	for (const char *const *m = proc_dir_masks; *m && r == 0; m++) {
		if (access(*m, F_OK) < 0)
			continue;
		if (!first_dir)
			r = add(fs, OP_TMPFS, NULL, first_dir = *m + 1,
				"size=4k,nr_inodes=1,mode=0555",
				MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
		else
			r = add(fs, OP_MASK, first_dir, *m + 1, NULL, 0);
	}
	if (r == 0 && access("/proc/sys/kernel/random/boot_id", F_OK) == 0)
		r = add_virt(fs, VIRT_BOOT_ID, "proc/sys/kernel/random/boot_id", random_boot_id());
	if (r == 0)
		r = add_virt(fs, VIRT_STAT, "proc/stat", virtual_stat(fs));
	if (r == 0 && l->memory_bytes) {
		char *mi = virtual_meminfo(l->memory_bytes);

		if (mi)
			r = add_virt(fs, VIRT_MEMINFO, "proc/meminfo", mi);
	}
	/* the host's load, the same for every sandbox */
	if (r == 0)
		r = add_virt(fs, VIRT_LOADAVG, "proc/loadavg", strdup("0.00 0.00 0.00 1/1 1\n"));
	return r;
}

/* ---- /sys/devices/system/cpu: the CPUs the tree may use ---- */

/* Programs count CPUs and read the topology from here (glibc's
 * get_nprocs() and so os.cpu_count() read "online", get_nprocs_conf()
 * and OpenBLAS "possible", hwloc, psutil and PyTorch the topology and the
 * caches).  The sandbox gets a copy, not the host's sysfs: files in its
 * read-only root with the values of the host's, for the CPUs the tree is
 * pinned to (all the caller may use when it is not), every list and mask
 * of CPUs cut down to those.  Only the names below are copied: nothing
 * writable, nothing that names the machine (topology/ppin, the CPU's
 * serial on Intel server parts), no cpufreq or power controls.  In a
 * pool cell the source is the template's own copy, which has every
 * CPU. */
#define SYS_CPU "/sys/devices/system/cpu"
/* the whole tree: some 2 KiB a CPU */
#define CPU_TREE_MAX (4u << 20)
/* a file copied: one line of text */
#define CPU_FILE_MAX 512

static const char *const cpu_top_files[] = { "kernel_max", NULL };
static const char *const cpu_topology_files[] = {
	"physical_package_id",
	"die_id",
	"cluster_id",
	"core_id",
	"book_id",
	"drawer_id",
	"thread_siblings",
	"thread_siblings_list",
	"core_cpus",
	"core_cpus_list",
	"core_siblings",
	"core_siblings_list",
	"cluster_cpus",
	"cluster_cpus_list",
	"die_cpus",
	"die_cpus_list",
	"package_cpus",
	"package_cpus_list",
	NULL,
};
static const char *const cpu_cache_files[] = {
	"id",
	"level",
	"type",
	"size",
	"coherency_line_size",
	"ways_of_associativity",
	"number_of_sets",
	"physical_line_partition",
	"shared_cpu_map",
	"shared_cpu_list",
	NULL,
};
/* the names above that hold a mask of CPUs (the others ending in
 * "_list" hold a list) */
static const char *const cpu_mask_files[] = { "thread_siblings", "core_cpus", "core_siblings",
					      "cluster_cpus",	 "die_cpus",  "package_cpus",
					      "shared_cpu_map",	 NULL };

static bool in_list(const char *const *names, const char *name)
{
	for (; *names; names++)
		if (!strcmp(*names, name))
			return true;
	return false;
}

/* A CPU list ("0-3,8\n") into set.  -EINVAL if it is not one. */
static int cpulist_parse(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s && *s != '\n') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;

		if (end == s)
			return -EINVAL;
		if (*end == '-') {
			s = end + 1;
			b = strtoul(s, &end, 10);
			if (end == s || b < a)
				return -EINVAL;
		}
		for (unsigned long c = a; c <= b && c < CPU_SETSIZE; c++)
			CPU_SET(c, set);
		s = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end && *end != '\n')
			return -EINVAL;
	}
	return 0;
}

static int cpulist_put(struct buf *b, const cpu_set_t *set)
{
	bool first = true;
	int r = 0;

	for (int c = 0; c < CPU_SETSIZE && r == 0; c++) {
		int e = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		r = e == c ? buf_printf(b, "%s%d", first ? "" : ",", c)
			   : buf_printf(b, "%s%d-%d", first ? "" : ",", c, e);
		first = false;
		c = e;
	}
	return r < 0 ? r : buf_puts(b, "\n");
}

/* A CPU mask as the kernel prints it ("ff,00000003\n": groups of 32
 * bits, the highest first, the first group only as wide as the CPUs
 * need), cut down to use, in the host's layout. */
static int cpumask_cut(struct buf *b, const char *host, const cpu_set_t *use)
{
	size_t len = strcspn(host, "\n"), groups = 1, first = strcspn(host, ",\n");
	const char *p = host;
	int r = 0;

	for (size_t i = 0; i < len; i++) {
		if (host[i] == ',')
			groups++;
		else if (!isxdigit((unsigned char)host[i]))
			return -EINVAL;
	}
	if (first == 0 || first > 8 || groups * 32 > CPU_SETSIZE)
		return -EINVAL;
	for (size_t g = 0; g < groups && r == 0; g++) {
		unsigned bit = (unsigned)((groups - 1 - g) * 32);
		char *end;
		unsigned long word = strtoul(p, &end, 16);

		if (end - p > 8 || (*end != ',' && end != host + len))
			return -EINVAL;
		p = end + 1;
		for (unsigned k = 0; k < 32; k++)
			if (!CPU_ISSET(bit + k, use))
				word &= ~(1ul << k);
		r = g ? buf_printf(b, ",%08lx", word) : buf_printf(b, "%0*lx", (int)first, word);
	}
	return r < 0 ? r : buf_puts(b, "\n");
}

/* A record of the tree (OP_TREE): 'd' a directory, by its path from the
 * root's top; 'f' a file in the last directory, by its name. */
static int tree_put(struct buf *t, char kind, const char *path, const char *content)
{
	int r = buf_printf(t, "%c%s", kind, path);

	if (r == 0)
		r = buf_append(t, "", 1);
	if (r == 0 && content)
		r = buf_append(t, content, strlen(content) + 1);
	return r;
}

/* The host's file name in dirfd into the tree, cut down to use; a file
 * the host lacks is left out. */
static int tree_copy(struct buf *t, int dirfd, const char *name, const cpu_set_t *use)
{
	char v[CPU_FILE_MAX];
	struct buf out;
	cpu_set_t set;
	int r;

	if (read_small_fileat(dirfd, name, v, sizeof(v)) < 0 || !strchr(v, '\n'))
		return 0;
	buf_init(&out, CPU_FILE_MAX * 2);
	if (in_list(cpu_mask_files, name)) {
		r = cpumask_cut(&out, v, use);
	} else if (strlen(name) > 5 && !strcmp(name + strlen(name) - 5, "_list")) {
		r = cpulist_parse(v, &set);
		CPU_AND(&set, &set, use);
		if (r == 0)
			r = cpulist_put(&out, &set);
	} else {
		r = buf_puts(&out, v);
	}
	/* a value this code does not understand is left out, not guessed */
	if (r == 0)
		r = tree_put(t, 'f', name, buf_str(&out));
	else if (r != -ENOMEM && r != -E2BIG)
		r = 0;
	buf_release(&out);
	return r;
}

/* The host's directory dir (absolute) and its files of names into the
 * tree.  1 when it was there, 0 when not (nothing added), or -errno. */
static int tree_copy_dir(struct buf *t, const char *dir, const char *const *names,
			 const cpu_set_t *use)
{
	/* one lookup of the directory, not one a file: a sysfs path walk
	 * is most of a read's cost */
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), r;

	if (fd < 0)
		return 0;
	r = tree_put(t, 'd', dir + 1, NULL);
	for (const char *const *n = names; *n && r == 0; n++)
		r = tree_copy(t, fd, *n, use);
	close(fd);
	return r < 0 ? r : 1;
}

/* cpuN/: its topology and caches */
static int add_cpu_dir(struct buf *t, int cpu, const cpu_set_t *use)
{
	static const char *const online[] = { "online", NULL }, *const none[] = { NULL };
	char dir[128], sub[160];
	int r;

	snprintf(dir, sizeof(dir), SYS_CPU "/cpu%d", cpu);
	r = tree_copy_dir(t, dir, online, use);
	snprintf(sub, sizeof(sub), "%s/topology", dir);
	if (r > 0)
		r = tree_copy_dir(t, sub, cpu_topology_files, use);
	snprintf(sub, sizeof(sub), "%s/cache", dir);
	if (r >= 0)
		r = tree_copy_dir(t, sub, none, use);
	for (int i = 0; i < 16 && r > 0; i++) {
		snprintf(sub, sizeof(sub), "%s/cache/index%d", dir, i);
		r = tree_copy_dir(t, sub, cpu_cache_files, use);
	}
	return r < 0 ? r : 0;
}

static int add_sys_cpus(struct rootfs *fs)
{
	char v[CPU_FILE_MAX];
	struct buf t, list;
	cpu_set_t use, online;
	size_t len;
	char *data;
	int r;

	/* no sysfs here (or no such directory): there is nothing to agree
	 * with, and the sandbox goes without, as before */
	if (read_small_fileat(AT_FDCWD, SYS_CPU "/online", v, sizeof(v)) < 0 ||
	    cpulist_parse(v, &online) < 0)
		return 0;
	if (fs->n_cpus)
		use = fs->cpus;
	else if (sched_getaffinity(0, sizeof(use), &use) < 0)
		return 0;
	CPU_AND(&use, &use, &online);
	if (CPU_COUNT(&use) == 0)
		return 0;
	buf_init(&t, CPU_TREE_MAX);
	buf_init(&list, CPU_FILE_MAX * 8);
	r = cpulist_put(&list, &use);
	if (r == 0)
		r = tree_put(&t, 'd', "sys", NULL);
	if (r == 0)
		r = tree_put(&t, 'd', "sys/devices", NULL);
	if (r == 0)
		r = tree_put(&t, 'd', "sys/devices/system", NULL);
	if (r == 0 && (r = tree_copy_dir(&t, SYS_CPU, cpu_top_files, &use)) > 0)
		r = 0;
	/* all the CPUs there are, as the tree sees them: the ones it may use */
	if (r == 0)
		r = tree_put(&t, 'f', "online", buf_str(&list));
	if (r == 0)
		r = tree_put(&t, 'f', "possible", buf_str(&list));
	if (r == 0)
		r = tree_put(&t, 'f', "present", buf_str(&list));
	if (r == 0)
		r = tree_put(&t, 'f', "offline", "\n");
	for (int c = 0; c < CPU_SETSIZE && r == 0; c++)
		if (CPU_ISSET(c, &use))
			r = add_cpu_dir(&t, c, &use);
	buf_release(&list);
	if (r < 0) {
		buf_release(&t);
		return r;
	}
	data = buf_detach(&t, &len);
	if (!keep(fs, data))
		return -ENOMEM;
	r = add(fs, OP_TREE, NULL, &SYS_CPU[1], data, 0); /* relative to the new root */
	if (r == 0)
		fs->ops[fs->n - 1].len = len;
	return r;
}

/* cgroup_ctrl_name()'s, here too: this file is built into cell.so,
 * which has no cgroup.c */
static const char *const ctrl_names[_CGROUP_CTRL_MAX] = {
	[CGROUP_CTRL_MEMORY] = "memory",
	[CGROUP_CTRL_PIDS] = "pids",
	[CGROUP_CTRL_CPUACCT] = "cpuacct",
	[CGROUP_CTRL_CPU] = "cpu",
};

/* The cgroup v1 hierarchy ctrl is in, as /proc/self/cgroup names it
 * ("memory", or "cpu,cpuacct" where co-mounted), into out; -ENOENT. */
static int v1_hierarchy(const char *self, enum cgroup_ctrl ctrl, char *out, size_t n)
{
	const char *want = ctrl_names[ctrl];

	for (const char *line = self; line && *line;) {
		const char *nl = strchr(line, '\n');
		const char *c1 = strchr(line, ':');
		const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (c2 && (!nl || c2 < nl) && (size_t)(c2 - c1 - 1) < n) {
			size_t len = (size_t)(c2 - c1 - 1);
			const char *e;

			memcpy(out, c1 + 1, len);
			out[len] = '\0';
			for (const char *w = out; *w; w = *e ? e + 1 : e) {
				e = w + strcspn(w, ",");
				if ((size_t)(e - w) == strlen(want) &&
				    !strncmp(w, want, (size_t)(e - w)))
					return 0;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* The sandbox's own cgroups, read-only at /sys/fs/cgroup: on v2 the
 * cgroup2 filesystem there, on v1 each hierarchy the sandbox has a
 * cgroup in at /sys/fs/cgroup/<hierarchy> (and, for a co-mounted one,
 * a link per controller), as Docker lays them out.  Mounted in the
 * sandbox's cgroup namespace, a hierarchy's root is the sandbox's own
 * cgroup: nothing of the host's other cgroups shows.  A mount that
 * fails leaves an empty directory (is_dir on OP_MOUNT). */
static int add_cgroup_mounts(struct rootfs *fs, const struct rootfs_host *host)
{
	static const unsigned long ro = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
	char self[4096], list[64];
	int r = add(fs, OP_DIR, NULL, "sys", NULL, 0);

	if (r == 0)
		r = add(fs, OP_DIR, NULL, "sys/fs", NULL, 0);
	if (r < 0 || !host || host->cgroup_version == CGROUP_NONE || !host->cgroup_ctrls)
		return r;
	if (host->cgroup_version == CGROUP_V2) {
		r = add(fs, OP_MOUNT, "cgroup2", "sys/fs/cgroup", NULL, ro);
		fs->ops[fs->n - 1].is_dir = r == 0;
		return r;
	}
	r = add(fs, OP_DIR, NULL, "sys/fs/cgroup", NULL, 0);
	if (r < 0 || read_small_fileat(AT_FDCWD, "/proc/self/cgroup", self, sizeof(self)) < 0)
		return r;
	for (int c = 0; c < _CGROUP_CTRL_MAX && r == 0; c++) {
		bool dup = false;
		char *dst;

		if (!(host->cgroup_ctrls & (1u << c)) ||
		    v1_hierarchy(self, c, list, sizeof(list)) < 0)
			continue;
		for (size_t i = 0; i < fs->n; i++)
			dup |= fs->ops[i].type == OP_MOUNT && fs->ops[i].data &&
			       !strcmp(fs->ops[i].data, list);
		if (dup)
			continue;
		if (asprintf(&dst, "sys/fs/cgroup/%s", list) < 0)
			return -ENOMEM;
		r = add(fs, OP_MOUNT, "cgroup", keep(fs, dst), keep(fs, strdup(list)), ro);
		if (r == 0)
			fs->ops[fs->n - 1].is_dir = true;
		/* "cpu" -> "cpu,cpuacct" */
		if (r == 0 && strcmp(list, ctrl_names[c]) != 0) {
			if (asprintf(&dst, "sys/fs/cgroup/%s", ctrl_names[c]) < 0)
				return -ENOMEM;
			r = add(fs, OP_SYMLINK, keep(fs, strdup(list)), keep(fs, dst), NULL, 0);
		}
	}
	return r;
}

/* A devpts of the sandbox's own (a new instance: no other sandbox's or
 * the host's ptys in it), /dev/ptmx a link into it as bwrap and Docker
 * make it.  No gid= option: only the sandbox's gid is mapped (the
 * host's tty group is not), and a new pty then gets its creator's. */
static int add_devpts(struct rootfs *fs)
{
	int r = add(fs, OP_MOUNT, "devpts", "dev/pts",
		    "newinstance,ptmxmode=0666,mode=0620,max=" SANDBOX_MAX_PTYS,
		    MS_NOSUID | MS_NOEXEC);

	/* optional: a host that refuses it (a container's seccomp or
	 * AppArmor) still runs sandboxes, without ptys as before */
	if (r == 0)
		fs->ops[fs->n - 1].is_dir = true;
	if (r == 0)
		r = add(fs, OP_SYMLINK, "pts/ptmx", "dev/ptmx", NULL, 0);
	return r;
}

/* The compiled sitecustomize for python3.v: written under /etc and bound
 * over the host's .pyc (which must exist: a mount needs a target) after
 * pivot_root, read-only like the root it comes from. */
static int add_python_site_pyc(struct rootfs *fs, int v)
{
	char host[96], *dir = NULL, *file = NULL, *dst = NULL;
	struct stat st;
	int r;

	snprintf(host, sizeof(host),
		 "/usr/lib/python3.%d/__pycache__/sitecustomize.cpython-3%d.pyc", v, v);
	if (stat(host, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	if (asprintf(&dir, "etc/python3.%d/__pycache__", v) < 0 || !keep(fs, dir))
		return -ENOMEM;
	if (asprintf(&file, "%s/sitecustomize.cpython-3%d.pyc", dir, v) < 0 || !keep(fs, file))
		return -ENOMEM;
	dst = strdup(host + 1);
	if (!keep(fs, dst))
		return -ENOMEM;
	r = add(fs, OP_DIR, NULL, dir, NULL, 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, file, (const char *)sandbox_site_pyc, 0);
	if (r == 0)
		fs->ops[fs->n - 1].len = sandbox_site_pyc_len;
	if (r == 0)
		r = add(fs, OP_MASK, file, dst, NULL, 0);
	return r;
}

/* Python's sitecustomize in the sandbox.  Debian links
 * /usr/lib/python3.N/sitecustomize.py to /etc/python3.N/, which the
 * generated /etc lacks: codecell puts its own there (sitecustomize.py
 * here: the seed option, and the order of a one-shot program's stdout and
 * stderr).  And, for the Python it was compiled by at build time, its
 * .pyc over the host's in /usr/lib/python3.N/__pycache__, where Python
 * looks for it: a file written fresh each run has no valid .pyc, and
 * compiling it cost every Python start in the sandbox about 12 million
 * instructions (scripts/embed-site.sh). */
/* The N of each /etc/python3.N the host has (where Debian's links
 * point), as bits of *ret (N < 64): one directory read instead of a
 * readlink for every version there could be. */
static void python_versions(uint64_t *ret)
{
	DIR *d = opendir("/etc");
	struct dirent *de;

	*ret = 0;
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long v;

		if (strncmp(de->d_name, "python3.", 8) != 0 ||
		    !isdigit((unsigned char)de->d_name[8]))
			continue;
		v = strtol(de->d_name + 8, &end, 10);
		if (*end == '\0' && v >= 0 && v < 64)
			*ret |= 1ull << v;
	}
	closedir(d);
}

static int add_python_site(struct rootfs *fs, bool in_template)
{
	uint64_t have;

	python_versions(&have);
	for (int v = 6; v < 64; v++) {
		char link[64], target[64], want[64], *dir = NULL, *file = NULL;
		ssize_t n;
		int r;

		if (!(have & (1ull << v)))
			continue;
		snprintf(link, sizeof(link), "/usr/lib/python3.%d/sitecustomize.py", v);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		snprintf(want, sizeof(want), "/etc/python3.%d/sitecustomize.py", v);
		if (strcmp(target, want) != 0)
			continue;
		if (asprintf(&dir, "etc/python3.%d", v) < 0)
			return -ENOMEM;
		if (asprintf(&file, "etc/python3.%d/sitecustomize.py", v) < 0) {
			free(dir);
			return -ENOMEM;
		}
		r = add(fs, OP_DIR, NULL, keep(fs, dir), NULL, 0);
		if (r == 0)
			r = add(fs, OP_FILE, NULL, keep(fs, file), sandbox_site_py, 0);
		else
			free(file);
		if (r == 0 && v == sandbox_site_pyc_minor && sandbox_site_pyc_len && !in_template)
			r = add_python_site_pyc(fs, v);
		if (r < 0)
			return r;
	}
	return 0;
}

int rootfs_build(struct rootfs *fs, const struct sandbox_limits *l, const struct rootfs_host *host)
{
	int r;

	memset(fs, 0, sizeof(*fs));
	if (host && host->n_cpus) {
		fs->cpus = host->cpus;
		fs->n_cpus = host->n_cpus;
	}
	r = add(fs, OP_BIND_RO, "/usr", "usr", NULL, 0);
	if (r == 0)
		fs->ops[0].is_dir = true;
	if (r == 0)
		r = add(fs, OP_DIR, NULL, "etc", NULL, 0);
	if (r == 0)
		r = add_host_binds(fs);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/passwd", etc_passwd, 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/group", etc_group, 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/hosts", etc_hosts, 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/hostname", SANDBOX_HOSTNAME "\n", 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/nsswitch.conf", etc_nsswitch, 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/resolv.conf", "", 0);
	if (r == 0)
		r = add_python_site(fs, host && host->in_template);
	if (r == 0)
		r = add(fs, OP_PROC, NULL, "proc", NULL, 0);
	if (r == 0)
		r = add_proc_masks(fs, l);
	if (r == 0)
		r = add_sys_cpus(fs);
	fs->n_early = fs->n;
	if (r == 0)
		r = add_cgroup_mounts(fs, host);
	if (r == 0)
		r = add_tmpfs(fs, "dev", 65536, "0755", false);
	for (const char *const *d = dev_nodes; *d && r == 0; d++) {
		char *src = NULL, *dst = NULL;

		if (asprintf(&src, "/dev/%s", *d) < 0 || asprintf(&dst, "dev/%s", *d) < 0) {
			free(src);
			return -ENOMEM;
		}
		r = add(fs, OP_BIND_DEV, keep(fs, src), keep(fs, dst), NULL, 0);
	}
	if (r == 0)
		r = add(fs, OP_SYMLINK, "/proc/self/fd", "dev/fd", NULL, 0);
	if (r == 0)
		r = add(fs, OP_SYMLINK, "/proc/self/fd/0", "dev/stdin", NULL, 0);
	if (r == 0)
		r = add(fs, OP_SYMLINK, "/proc/self/fd/1", "dev/stdout", NULL, 0);
	if (r == 0)
		r = add(fs, OP_SYMLINK, "/proc/self/fd/2", "dev/stderr", NULL, 0);
	if (r == 0)
		r = add_devpts(fs);
	/* POSIX shm and semaphores land in /tmp's size cap */
	if (r == 0)
		r = add(fs, OP_SYMLINK, "/tmp", "dev/shm", NULL, 0);
	if (r == 0)
		r = add(fs, OP_RO, NULL, "dev", NULL, MS_NOSUID | MS_NOEXEC);
	if (r == 0)
		r = add_tmpfs(fs, "tmp", l->tmp_bytes, "1777", false);
	if (r == 0)
		r = add(fs, OP_DIR, NULL, "home", NULL, 0);
	if (r == 0)
		r = add_tmpfs(fs, &SANDBOX_HOME[1], l->workspace_bytes, "0755", true);
	if (r == 0)
		r = add(fs, OP_DIR, NULL, "root", NULL, 0);
	if (r < 0)
		rootfs_release(fs);
	return r;
}

void rootfs_release(struct rootfs *fs)
{
	for (size_t i = 0; i < fs->n_strings; i++)
		free(fs->strings[i]);
	fs->n_strings = 0;
	fs->n = 0;
}

/* ---- child side: no allocation from here on ---- */

/* Flags a read-only remount must keep: in a user namespace the kernel
 * refuses to clear flags the parent mount has locked. */
static unsigned long locked_flags(const char *path)
{
	static const struct {
		unsigned long st, ms;
	} map[] = {
		{ ST_NOSUID, MS_NOSUID },	  { ST_NODEV, MS_NODEV },
		{ ST_NOEXEC, MS_NOEXEC },	  { ST_NOATIME, MS_NOATIME },
		{ ST_NODIRATIME, MS_NODIRATIME }, { ST_RELATIME, MS_RELATIME },
	};
	struct statvfs sv;
	unsigned long f = 0;

	if (statvfs(path, &sv) < 0)
		return 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (sv.f_flag & map[i].st)
			f |= map[i].ms;
	return f;
}

static int remount_ro(const char *path, unsigned long extra)
{
	unsigned long f = MS_BIND | MS_REMOUNT | MS_RDONLY | extra | locked_flags(path);

	return mount(NULL, path, NULL, f, NULL) < 0 ? -errno : 0;
}

/* data: len bytes, or (len 0) a string */
static int make_file_at(int dirfd, const char *path, const char *data, size_t len, mode_t mode)
{
	int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	int r = 0;

	if (fd < 0)
		return -errno;
	if (data)
		r = write_all(fd, data, len ? len : strlen(data));
	close(fd);
	return r;
}

static int make_file(const char *path, const char *data, size_t len)
{
	return make_file_at(AT_FDCWD, path, data, len, 0644);
}

/* A host file, src (absolute), from host_root: an fd of the host's root,
 * which a pivot_root leaves reachable, as the root of the lookup too, so
 * that an absolute symlink (/etc on NixOS is made of them) means the
 * host's path, not the new root's (openat_in_root).  -1 and errno on
 * failure, as open(). */
static int open_host(int host_root, const char *src)
{
	int fd;

	if (host_root < 0 || src[0] != '/')
		return open(src, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	fd = openat_in_root(host_root, src + 1, O_RDONLY | O_NOCTTY);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	return fd;
}

/* src: a host path (open_host()) */
static int copy_file(int host_root, const char *src, const char *dst)
{
	char chunk[16384];
	struct stat st;
	off_t left;
	int in, out, r = 0;
	ssize_t n = 0;

	in = open_host(host_root, src);
	if (in < 0)
		return errno == ENOENT ? 0 : -errno; /* gone since the parent looked */
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	/* in the kernel, page cache to tmpfs: no copy through us, one call
	 * for a file (ld.so.cache, mime.types: 190 KiB a run in all), and
	 * none to find the end once the size is copied (nine calls a run);
	 * read/write where sendfile cannot */
	left = fstat(in, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1; /* -1: to the end */
	while (left != 0 && (n = sendfile(out, in, NULL, 1 << 20)) > 0)
		if (left > 0)
			left = n < left ? left - n : 0;
	if (n < 0 && (errno == EINVAL || errno == ENOSYS) && lseek(in, 0, SEEK_CUR) == 0)
		while ((n = read(in, chunk, sizeof(chunk))) > 0 && r == 0)
			r = write_all(out, chunk, (size_t)n);
	if (n < 0 && r == 0)
		r = -errno;
	close(in);
	close(out);
	return r;
}

static int mkdir_ok(const char *path, mode_t mode)
{
	return mkdir(path, mode) < 0 && errno != EEXIST ? -errno : 0;
}

/* OP_TREE's records, made in order: read-only files, like sysfs's, each
 * in the directory made last (one path walk a directory, not a file) */
static int make_tree(const char *data, size_t len)
{
	const char *p = data, *end = data + len;
	int dir = -1, r = 0;

	while (p < end && r == 0) {
		const char *path = p + 1, *content;
		size_t pl = strnlen(path, (size_t)(end - path)), cl;

		if (path + pl >= end) {
			r = -EINVAL;
			break;
		}
		content = path + pl + 1;
		p = content;
		if (*path == '\0') {
			r = -EINVAL;
		} else if (path[-1] == 'd') {
			if (dir >= 0)
				close(dir);
			r = mkdir_ok(path, 0755);
			dir = r < 0 ? -1
				    : open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (r == 0 && dir < 0)
				r = -errno;
		} else if (path[-1] == 'f' && dir >= 0 && !strchr(path, '/') &&
			   (cl = strnlen(content, (size_t)(end - content))) <
				   (size_t)(end - content)) {
			r = make_file_at(dir, path, content, 0, 0444);
			p = content + cl + 1;
		} else {
			r = -EINVAL;
		}
	}
	if (dir >= 0)
		close(dir);
	return r;
}

static int apply_op(const struct rootfs_op *op, int host_root)
{
	int r;

	switch (op->type) {
	case OP_DIR:
		return mkdir_ok(op->dst, 0755);
	case OP_TMPFS:
		r = mkdir_ok(op->dst, 0755);
		if (r == 0 && mount("tmpfs", op->dst, "tmpfs", op->flags, op->data) < 0)
			r = -errno;
		return r;
	case OP_BIND_RO:
		r = op->is_dir ? mkdir_ok(op->dst, 0755) : make_file(op->dst, NULL, 0);
		if (r < 0)
			return r;
		if (mount(op->src, op->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
			return -errno;
		return remount_ro(op->dst, MS_NOSUID | MS_NODEV);
	case OP_BIND_DEV:
		r = make_file(op->dst, NULL, 0);
		if (r == 0 && mount(op->src, op->dst, NULL, MS_BIND, NULL) < 0)
			r = -errno;
		return r;
	case OP_MASK:
		return 0; /* rootfs_apply_late() */
	case OP_SYMLINK:
		return symlink(op->src, op->dst) < 0 ? -errno : 0;
	case OP_FILE:
		return make_file(op->dst, op->data, op->len);
	case OP_COPY:
		return copy_file(host_root, op->src, op->dst);
	case OP_PROC:
		r = mkdir_ok(op->dst, 0555);
		if (r == 0 &&
		    mount("proc", op->dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
			r = -errno;
		return r;
	case OP_RO:
		return remount_ro(op->dst, op->flags);
	case OP_MOUNT:
		r = mkdir_ok(op->dst, 0755);
		if (r == 0 && mount(op->src, op->dst, op->src, op->flags, op->data) < 0)
			r = -errno;
		return op->is_dir ? 0 : r;
	case OP_TREE:
		return make_tree(op->data, op->len);
	case OP_VIRT:
		r = make_file(op->src, op->data, 0);
		if (r == 0 && mount(op->src, op->dst, NULL, MS_BIND, NULL) < 0)
			r = -errno;
		if (r == 0)
			r = remount_ro(op->dst, MS_NOSUID | MS_NODEV | MS_NOEXEC);
		if (unlink(op->src) < 0 && r == 0)
			r = -errno;
		return r;
	}
	return -EINVAL;
}

int rootfs_apply_late(const struct rootfs *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		const struct rootfs_op *op = &fs->ops[i];

		/* the root is read-only now, and a bind of it is born so (the
		 * new mount copies the old one's flags): no remount.  A file
		 * that is not there has nothing to hide (add_proc_masks). */
		if (op->type == OP_MASK && mount(op->src, op->dst, NULL, MS_BIND, NULL) < 0 &&
		    errno != ENOENT)
			return -errno;
	}
	return 0;
}

/* The files either side may write into the root while the init mounts
 * (rootfs_apply_etc_files): /etc's, and the CPU view's tree */
static bool is_etc_file(const struct rootfs_op *op)
{
	return ((op->type == OP_FILE || op->type == OP_COPY) && !strncmp(op->dst, "etc/", 4)) ||
	       op->type == OP_TREE;
}

int rootfs_apply_ops(const struct rootfs *fs, size_t from, size_t to, bool without_etc_files,
		     int host_root)
{
	for (size_t i = from; i < to && i < fs->n; i++) {
		int r;

		if (without_etc_files && is_etc_file(&fs->ops[i]))
			continue;
		r = apply_op(&fs->ops[i], host_root);
		if (r < 0)
			return r;
	}
	return 0;
}

int rootfs_apply_etc_files(const struct rootfs *fs, unsigned *next, int host_root)
{
	for (;;) {
		/* the next op not taken yet, if it is a file of /etc */
		unsigned i = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
		const struct rootfs_op *op;
		char dir[PATH_MAX];
		size_t len;
		int r;

		if (i >= fs->n)
			return 0;
		op = &fs->ops[i];
		if (!is_etc_file(op))
			continue;
		/* the directories on the way (the other side may be making
		 * the same ones: EEXIST is fine) */
		len = strlen(op->dst);
		if (len >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, op->dst, len + 1);
		for (char *slash = strchr(dir, '/'); slash; slash = strchr(slash + 1, '/')) {
			*slash = '\0';
			r = mkdir_ok(dir, 0755);
			*slash = '/';
			if (r < 0)
				return r;
		}
		r = apply_op(op, host_root);
		if (r < 0)
			return r;
	}
}
