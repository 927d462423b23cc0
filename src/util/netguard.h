/* util/netguard: which addresses a tool may connect to (the http tool, the
 * egress proxy for sandboxed code).  Pure functions but for the list of
 * this process's own listening addresses (netguard_self_add): the
 * callers resolve names themselves and pass every address they would
 * connect to.
 *
 * The rule both callers apply (README "http" / "egress"): a connection
 * passes when the policy's list allows the host (and port), and the
 * address actually connected to is public -- or the list names that
 * non-public address explicitly:
 * - an IP literal entry ("127.0.0.1", "[::1]:8080") allows exactly that
 *   address, whatever its class (except the unspecified 0.0.0.0 and ::,
 *   which are refused when the list is parsed: connecting to them reaches
 *   the local host);
 * - a CIDR entry ("10.0.0.0/8") allows the non-public addresses in it that
 *   are of the same class as its network address (10.0.0.0/8 allows
 *   private 10.x addresses; "0.0.0.0/0" and "::/0" allow public addresses
 *   only; 169.254.0.0/16 allows link-local addresses but not the
 *   metadata address 169.254.169.254, which only an exact entry allows);
 * - a name entry followed by the word "private" ("localhost private",
 *   "db.internal:5432 private") allows whatever that name resolves to,
 *   except unspecified and metadata addresses;
 * - any other name entry ("api.example.com", "*.example.com", "*")
 *   allows public addresses only.
 *
 * IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), IPv4-
 * translated (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
 * addresses are classified by the IPv4 address inside them. */
#ifndef CODECELL_UTIL_NETGUARD_H
#define CODECELL_UTIL_NETGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define NETGUARD_HOST_MAX 253	/* bytes of a DNS name, without the trailing dot */
#define NETGUARD_LIST_MAX 1024	/* entries of one list */
#define NETGUARD_ADDR_STRLEN 48 /* "ffff:...:ffff" and a NUL */

enum netguard_class {
	NG_PUBLIC,
	NG_LOOPBACK,	 /* 127/8, ::1 */
	NG_PRIVATE,	 /* 10/8, 172.16/12, 192.168/16 */
	NG_LINK_LOCAL,	 /* 169.254/16, fe80::/10 */
	NG_UNIQUE_LOCAL, /* fc00::/7 */
	NG_UNSPECIFIED,	 /* 0.0.0.0, :: */
	NG_METADATA,	 /* cloud metadata: 169.254.169.254, fd00:ec2::254, ... */
	NG_MULTICAST,	 /* 224/4, ff00::/8 */
	NG_RESERVED,	 /* 0/8, 100.64/10 (CGNAT), 192.0.0/24, documentation nets,
			    198.18/15, 240/4, broadcast, fec0::/10, 2001:db8::/32,
			    Teredo, NAT64 local-use, discard-only, ... */
	NG_INVALID,	 /* not an AF_INET/AF_INET6 address */
	_NG_MAX
};

/* The class of the address sa points to (AF_INET or AF_INET6; anything
 * else is NG_INVALID). */
enum netguard_class netguard_classify(const struct sockaddr *sa);
/* "public", "loopback", "private", "link-local", ... (static). */
const char *netguard_class_name(enum netguard_class c);

/* Parse an IP literal the way URL parsers and inet_aton do, so that no
 * spelling gets past the guard: dotted, decimal ("2130706433"), octal
 * ("0177.0.0.1"), hex ("0x7f.1"), short ("127.1"), a trailing dot, and
 * IPv6 with or without brackets ("[::ffff:127.0.0.1]", "::1").  IPv4-
 * mapped IPv6 is normalized to AF_INET.  The port of *ss is 0.
 * Returns 0; -EINVAL when host is not an IP literal (a name to resolve);
 * -ERANGE when it is a malformed one ("1.2.3.256", "0x1.2.3.4.5", a zone
 * id "[fe80::1%eth0]"): refuse it, do not resolve it as a name. */
int netguard_parse_ip(const char *host, struct sockaddr_storage *ss, socklen_t *len);

/* Normalize a DNS name in place: lower case, no trailing dot.  0, or
 * -EINVAL when it is not a host name (labels of letters, digits, '-',
 * '_', 1 to 63 bytes, at most NETGUARD_HOST_MAX bytes in all). */
int netguard_name_normalize(char *name);

/* The address as text ("127.0.0.1", "::1"; IPv4-mapped as IPv4), or
 * "?" for anything else.  Returns buf. */
const char *netguard_format(const struct sockaddr *sa, char *buf, size_t n);

struct netguard_entry {
	enum { NGE_NAME, NGE_WILDCARD, NGE_ANY, NGE_NET } kind;
	/* NGE_NAME: the name; NGE_WILDCARD: the suffix with its dot
	 * (".example.com") */
	char host[NETGUARD_HOST_MAX + 2];
	unsigned port; /* 0: any port */
	bool private_ok;
	/* NGE_NET: the network, IPv4 as 4 bytes, IPv6 as 16 */
	int family;
	unsigned char addr[16];
	unsigned prefix;
};

struct netguard_list {
	struct netguard_entry *v; /* owned */
	size_t n;
};

/* Parse "api.example.com, *.example.com, localhost:8080 private,
 * 10.0.0.0/8, [::1]:443, *": entries separated by commas or newlines.
 * Fills *ret (release it with netguard_list_release).  0, or -EINVAL with
 * a message naming the entry in err (n bytes), -ENOMEM. */
int netguard_list_parse(const char *text, struct netguard_list *ret, char *err, size_t n);
void netguard_list_release(struct netguard_list *l);

/* May a connection go to host:port at addr?  host is the URL's host
 * (a name or an IP literal, as netguard_parse_ip takes it); addr the
 * address that will be connected to, or NULL to ask about the host and
 * port only (before resolving; a NULL answer of true is not enough to
 * connect).  0 when allowed; -EPERM with the reason in why (n bytes). */
int netguard_check(const struct netguard_list *l, const char *host, unsigned port,
		   const struct sockaddr *addr, char *why, size_t n);

/* This process's own listening addresses (the server's): a connection
 * to one of them is refused by netguard_check whatever the list says,
 * since the model would reach codecell's own API (its approval routes
 * on a keyless server) through a tool.  A wildcard address (0.0.0.0,
 * ::) stands for every address of this host on its port: checking one
 * then reads the host's addresses (getifaddrs), the one I/O here.
 * Process-wide state, thread-safe; added and removed in pairs (each
 * counted).  0, or -ENOSPC past NETGUARD_SELF_MAX, -EAFNOSUPPORT. */
#define NETGUARD_SELF_MAX 32
int netguard_self_add(const struct sockaddr *sa);
void netguard_self_remove(const struct sockaddr *sa);
/* Is addr on port one of them? */
bool netguard_is_self(const struct sockaddr *addr, unsigned port);
bool netguard_allowed(const struct netguard_list *l, const char *host, unsigned port,
		      const struct sockaddr *addr);

#endif
