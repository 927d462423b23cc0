/* errno names for the probes' reports (text, not numbers), the kernel's
 * internal ones included: one table for probe.c and surface.c.  Each
 * caller says how it spells 0 and a number the table lacks. */
#ifndef CODECELL_TESTS_ERRNAME_H
#define CODECELL_TESTS_ERRNAME_H

#include <errno.h>
#include <stddef.h>

/* The name of errno value e, or NULL. */
static inline const char *errno_name(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case ENXIO: return "ENXIO";
	case E2BIG: return "E2BIG";
	case EBADF: return "EBADF";
	case ECHILD: return "ECHILD";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case EXDEV: return "EXDEV";
	case ENODEV: return "ENODEV";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case EINVAL: return "EINVAL";
	case ENFILE: return "ENFILE";
	case EMFILE: return "EMFILE";
	case ENOTTY: return "ENOTTY";
	case EFBIG: return "EFBIG";
	case ENOSPC: return "ENOSPC";
	case ESPIPE: return "ESPIPE";
	case EROFS: return "EROFS";
	case EPIPE: return "EPIPE";
	case ERANGE: return "ERANGE";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ENOSYS: return "ENOSYS";
	case ENOTEMPTY: return "ENOTEMPTY";
	case ELOOP: return "ELOOP";
	case ENOMSG: return "ENOMSG";
	case ENODATA: return "ENODATA";
	case EOVERFLOW: return "EOVERFLOW";
	case EBADFD: return "EBADFD";
	case ENOTSOCK: return "ENOTSOCK";
	case EDESTADDRREQ: return "EDESTADDRREQ";
	case EMSGSIZE: return "EMSGSIZE";
	case EPROTOTYPE: return "EPROTOTYPE";
	case ENOPROTOOPT: return "ENOPROTOOPT";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EPFNOSUPPORT: return "EPFNOSUPPORT";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EADDRINUSE: return "EADDRINUSE";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case ENETDOWN: return "ENETDOWN";
	case ENETUNREACH: return "ENETUNREACH";
	case ENOTCONN: return "ENOTCONN";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ECONNREFUSED: return "ECONNREFUSED";
	case EALREADY: return "EALREADY";
	case EINPROGRESS: return "EINPROGRESS";
	case ENOKEY: return "ENOKEY";
	case ENOPKG: return "ENOPKG";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ENOMEDIUM: return "ENOMEDIUM";
	case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
	case EOWNERDEAD: return "EOWNERDEAD";
	case ENOLINK: return "ENOLINK";
	case EBADMSG: return "EBADMSG";
	case EIDRM: return "EIDRM";
	case ETXTBSY: return "ETXTBSY";
	case ENOEXEC: return "ENOEXEC";
	case ENOLCK: return "ENOLCK";
	case ENOSTR: return "ENOSTR";
	case ENOTUNIQ: return "ENOTUNIQ";
	case EREMOTEIO: return "EREMOTEIO";
	case EUCLEAN: return "EUCLEAN";
	case ECANCELED: return "ECANCELED";
	case EHWPOISON: return "EHWPOISON";
	case 512: return "ERESTARTSYS";
	case 513: return "ERESTARTNOINTR";
	case 514: return "ERESTARTNOHAND";
	case 515: return "ENOIOCTLCMD";
	case 516: return "ERESTART_RESTARTBLOCK";
	case 524: return "ENOTSUPP";
	}
	return NULL;
}

#endif
