/* util/netguard: address classes, IP literal parsing, the allowlist. */
#include "util/netguard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <pthread.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/macro.h"
#include "util/banned.h"

/* ---- classes ---- */

struct v4net {
	uint32_t net;
	unsigned prefix;
	enum netguard_class cls;
};

/* First match wins: the metadata addresses come before the nets they are
 * in.  169.254.169.254: AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle;
 * 169.254.170.2: ECS task credentials; 169.254.170.23: EKS pod identity;
 * 100.100.100.200: Alibaba Cloud. */
static const struct v4net v4_table[] = {
	{ 0xa9fea9fe, 32, NG_METADATA },    { 0xa9feaa02, 32, NG_METADATA },
	{ 0xa9feaa17, 32, NG_METADATA },    { 0x646464c8, 32, NG_METADATA },
	{ 0x00000000, 32, NG_UNSPECIFIED }, { 0x00000000, 8, NG_RESERVED },
	{ 0x7f000000, 8, NG_LOOPBACK },	    { 0x0a000000, 8, NG_PRIVATE },
	{ 0xac100000, 12, NG_PRIVATE },	    { 0xc0a80000, 16, NG_PRIVATE },
	{ 0xa9fe0000, 16, NG_LINK_LOCAL },  { 0x64400000, 10, NG_RESERVED }, /* CGNAT */
	{ 0xc0000000, 24, NG_RESERVED }, /* IETF protocol assignments */
	{ 0xc0000200, 24, NG_RESERVED }, /* TEST-NET-1 */
	{ 0xc0586300, 24, NG_RESERVED }, /* 6to4 relay anycast */
	{ 0xc6120000, 15, NG_RESERVED }, /* benchmarking */
	{ 0xc6336400, 24, NG_RESERVED }, /* TEST-NET-2 */
	{ 0xcb007100, 24, NG_RESERVED }, /* TEST-NET-3 */
	{ 0xe0000000, 4, NG_MULTICAST },    { 0xf0000000, 4, NG_RESERVED }, /* and broadcast */
};

static uint32_t mask4(unsigned prefix)
{
	return prefix ? 0xffffffffu << (32 - prefix) : 0;
}

static enum netguard_class classify4(uint32_t a)
{
	for (size_t i = 0; i < ARRAY_SIZE(v4_table); i++)
		if ((a & mask4(v4_table[i].prefix)) == v4_table[i].net)
			return v4_table[i].cls;
	return NG_PUBLIC;
}

static uint32_t be32(const unsigned char *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static bool prefix_is(const unsigned char *b, const unsigned char *p, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;

	if (memcmp(b, p, whole))
		return false;
	return !rest || ((b[whole] ^ p[whole]) & (0xff00 >> rest)) == 0;
}

/* The IPv4 address an IPv6 address carries to an IPv4 host, if any: a
 * connection to it reaches that IPv4 address (mapped on a dual-stack
 * socket; the others through a translator or tunnel on the path). */
static bool embedded_v4(const unsigned char *b, uint32_t *ret)
{
	static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff },
				   translated[12] = { [8] = 0xff, [9] = 0xff },
				   nat64[12] = { 0x00, 0x64, 0xff, 0x9b }, zero[12] = { 0 };

	if (!memcmp(b, mapped, 12) || !memcmp(b, translated, 12) || !memcmp(b, nat64, 12) ||
	    !memcmp(b, zero, 12)) {
		*ret = be32(b + 12);
		return true;
	}
	if (b[0] == 0x20 && b[1] == 0x02) { /* 6to4 */
		*ret = be32(b + 2);
		return true;
	}
	return false;
}

struct v6net {
	unsigned char net[16];
	unsigned prefix;
	enum netguard_class cls;
};

static const struct v6net v6_table[] = {
	{ { 0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02 },
	  128,
	  NG_METADATA },					     /* fd00:ec2::254 */
	{ { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48, NG_RESERVED }, /* NAT64 local use */
	{ { 0x01 }, 64, NG_RESERVED },				     /* 100::/64 discard */
	{ { 0x20, 0x01, 0x00, 0x00 }, 32, NG_RESERVED },	     /* Teredo */
	{ { 0x20, 0x01, 0x00, 0x02, 0x00, 0x00 }, 48, NG_RESERVED }, /* benchmarking */
	{ { 0x20, 0x01, 0x00, 0x10 }, 28, NG_RESERVED },	     /* ORCHID */
	{ { 0x20, 0x01, 0x00, 0x20 }, 28, NG_RESERVED },	     /* ORCHIDv2 */
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, NG_RESERVED },	     /* documentation */
	{ { 0x3f, 0xff }, 20, NG_RESERVED },			     /* documentation */
	{ { 0xfc }, 7, NG_UNIQUE_LOCAL },
	{ { 0xfe, 0x80 }, 10, NG_LINK_LOCAL },
	{ { 0xfe, 0xc0 }, 10, NG_RESERVED }, /* site-local, deprecated */
	{ { 0xff }, 8, NG_MULTICAST },
	{ { 0x20 }, 3, NG_PUBLIC }, /* global unicast; the rest is not assigned */
};

static enum netguard_class classify6(const unsigned char *b)
{
	static const unsigned char zero[16] = { 0 }, one[16] = { [15] = 1 };
	uint32_t v4;

	if (!memcmp(b, zero, 16))
		return NG_UNSPECIFIED;
	if (!memcmp(b, one, 16))
		return NG_LOOPBACK;
	if (embedded_v4(b, &v4))
		return classify4(v4);
	for (size_t i = 0; i < ARRAY_SIZE(v6_table); i++)
		if (prefix_is(b, v6_table[i].net, v6_table[i].prefix))
			return v6_table[i].cls;
	return NG_RESERVED;
}

enum netguard_class netguard_classify(const struct sockaddr *sa)
{
	if (!sa)
		return NG_INVALID;
	if (sa->sa_family == AF_INET)
		return classify4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return classify6(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
	return NG_INVALID;
}

const char *netguard_class_name(enum netguard_class c)
{
	static const char *const n[_NG_MAX] = {
		[NG_PUBLIC] = "public",
		[NG_LOOPBACK] = "loopback",
		[NG_PRIVATE] = "private",
		[NG_LINK_LOCAL] = "link-local",
		[NG_UNIQUE_LOCAL] = "unique-local",
		[NG_UNSPECIFIED] = "unspecified",
		[NG_METADATA] = "cloud metadata",
		[NG_MULTICAST] = "multicast",
		[NG_RESERVED] = "reserved",
		[NG_INVALID] = "invalid",
	};

	return (unsigned)c < _NG_MAX ? n[c] : "invalid";
}

/* ---- addresses as (family, bytes) ---- */

struct addr {
	int family; /* AF_INET: 4 bytes; AF_INET6: 16 */
	unsigned char b[16];
};

/* IPv4-mapped IPv6 becomes IPv4: the same host to connect to. */
static int addr_from(const struct sockaddr *sa, struct addr *ret)
{
	static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff };

	memset(ret, 0, sizeof(*ret));
	if (sa && sa->sa_family == AF_INET) {
		ret->family = AF_INET;
		memcpy(ret->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const unsigned char *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		if (!memcmp(b, mapped, 12)) {
			ret->family = AF_INET;
			memcpy(ret->b, b + 12, 4);
		} else {
			ret->family = AF_INET6;
			memcpy(ret->b, b, 16);
		}
		return 0;
	}
	return -EAFNOSUPPORT;
}

static void addr_to(const struct addr *a, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, a->b, 4);
		*len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, a->b, 16);
		*len = sizeof(*in6);
	}
}

static enum netguard_class addr_class(const struct addr *a)
{
	return a->family == AF_INET ? classify4(be32(a->b)) : classify6(a->b);
}

const char *netguard_format(const struct sockaddr *sa, char *buf, size_t n)
{
	struct addr a;

	if (addr_from(sa, &a) < 0 || !inet_ntop(a.family, a.b, buf, (socklen_t)n))
		snprintf(buf, n, "?");
	return buf;
}

/* ---- IP literals ---- */

/* One part of an IPv4 literal: decimal, 0x hex or 0 octal, as inet_aton
 * and the URL standard read it.  -ERANGE past 2^32 or on a bad digit. */
static int v4_part(const char *s, size_t len, uint64_t *ret)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16, s += 2, len -= 2;
	else if (len >= 2 && s[0] == '0')
		base = 8, s++, len--;
	else if (!len)
		return -ERANGE;
	for (size_t i = 0; i < len; i++) {
		unsigned d;
		char c = s[i];

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -ERANGE;
		if (d >= base)
			return -ERANGE;
		v = v * base + d;
		if (v > 0xffffffffu)
			return -ERANGE;
	}
	*ret = v;
	return 0;
}

/* Is the last dot-separated part a number?  Then the whole host is an
 * IPv4 literal or nothing (the URL standard's "ends in a number"). */
static bool ends_in_number(const char *s, size_t len)
{
	const char *last = s;

	for (size_t i = 0; i < len; i++)
		if (s[i] == '.')
			last = s + i + 1;
	len -= (size_t)(last - s);
	if (!len)
		return false;
	if (len >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) {
		for (size_t i = 2; i < len; i++)
			if (!strchr("0123456789abcdefABCDEF", last[i]))
				return false;
		return true;
	}
	for (size_t i = 0; i < len; i++)
		if (last[i] < '0' || last[i] > '9')
			return false;
	return true;
}

static int parse_v4(const char *s, uint32_t *ret)
{
	size_t len = strlen(s), start = 0, np = 0;
	uint64_t parts[4], v;

	if (len && s[len - 1] == '.') /* "127.0.0.1." is the same host */
		len--;
	if (!ends_in_number(s, len))
		return -EINVAL;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '.')
			continue;
		if (np == 4 || v4_part(s + start, i - start, &parts[np]) < 0)
			return -ERANGE;
		np++;
		start = i + 1;
	}
	v = 0;
	for (size_t i = 0; i + 1 < np; i++) {
		if (parts[i] > 255)
			return -ERANGE;
		v |= parts[i] << (8 * (3 - i));
	}
	if (parts[np - 1] >= (1ull << (8 * (5 - np))))
		return -ERANGE;
	*ret = (uint32_t)(v | parts[np - 1]);
	return 0;
}

static int parse_v6(const char *s, size_t len, struct addr *ret)
{
	char tmp[INET6_ADDRSTRLEN + 1];

	/* a zone id names an interface of this host: never from a request */
	if (len >= sizeof(tmp) || memchr(s, '%', len))
		return -ERANGE;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	ret->family = AF_INET6;
	if (inet_pton(AF_INET6, tmp, ret->b) != 1)
		return -ERANGE;
	return 0;
}

static int parse_ip(const char *host, struct addr *ret)
{
	size_t len = strlen(host);
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
	uint32_t v4;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (host[0] == '[') {
		if (len < 2 || host[len - 1] != ']')
			return -ERANGE;
		r = parse_v6(host + 1, len - 2, ret);
	} else if (strchr(host, ':')) {
		r = parse_v6(host, len, ret);
	} else {
		if ((r = parse_v4(host, &v4)) < 0)
			return r;
		ret->family = AF_INET;
		v4 = htonl(v4);
		memcpy(ret->b, &v4, 4);
		return 0;
	}
	if (r < 0)
		return r;
	memcpy(&in6.sin6_addr, ret->b, 16);
	return addr_from((struct sockaddr *)&in6, ret); /* mapped -> IPv4 */
}

int netguard_parse_ip(const char *host, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addr a;
	int r;

	if (!host || !*host)
		return -EINVAL;
	if ((r = parse_ip(host, &a)) < 0)
		return r;
	addr_to(&a, ss, len);
	return 0;
}

int netguard_name_normalize(char *name)
{
	size_t len = strlen(name), label = 0;

	if (len && name[len - 1] == '.')
		name[--len] = '\0';
	if (!len || len > NETGUARD_HOST_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (c >= 'A' && c <= 'Z')
			name[i] = c = (char)(c - 'A' + 'a');
		if (c == '.') {
			if (!label)
				return -EINVAL;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return -EINVAL;
		if (++label > 63)
			return -EINVAL;
	}
	return label ? 0 : -EINVAL;
}

/* ---- the list ---- */

static int lfail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lfail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int parse_port(const char *s, unsigned *ret)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > 65535)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

static void net_mask(struct netguard_entry *e)
{
	unsigned bytes = e->family == AF_INET ? 4 : 16;

	for (unsigned i = 0; i < bytes; i++) {
		unsigned keep = e->prefix > 8 * i ? e->prefix - 8 * i : 0;

		e->addr[i] &= keep >= 8 ? 0xff : (unsigned char)(0xff00 >> keep);
	}
}

static int entry_net(struct netguard_entry *e, const char *ip, const char *prefix, char *err,
		     size_t n, const char *orig)
{
	struct addr a;
	unsigned long p = 0;
	bool was_v6 = ip[0] == '[' || strchr(ip, ':');

	if (parse_ip(ip, &a) < 0)
		return lfail(err, n, "'%.80s': not an IP address", orig);
	e->kind = NGE_NET;
	e->family = a.family;
	memcpy(e->addr, a.b, 16);
	e->prefix = a.family == AF_INET ? 32 : 128;
	if (prefix) {
		char *end;

		if (*prefix < '0' || *prefix > '9' || strlen(prefix) > 3)
			return lfail(err, n, "'%.80s': expected a prefix length after '/'", orig);
		p = strtoul(prefix, &end, 10);
		if (*end)
			return lfail(err, n, "'%.80s': expected a prefix length after '/'", orig);
		/* ::ffff:10.0.0.0/104 is 10.0.0.0/8 */
		if (was_v6 && a.family == AF_INET) {
			if (p < 96)
				return lfail(
					err, n,
					"'%.80s': an IPv4-mapped network needs a prefix of 96 to 128",
					orig);
			p -= 96;
		}
		if (p > e->prefix)
			return lfail(err, n, "'%.80s': the prefix is at most %u", orig, e->prefix);
		e->prefix = (unsigned)p;
		net_mask(e);
	}
	if (addr_class(&a) == NG_UNSPECIFIED && e->prefix == (a.family == AF_INET ? 32u : 128u))
		return lfail(err, n,
			     "'%.80s': the unspecified address reaches this host; name 127.0.0.1 "
			     "or ::1 instead",
			     orig);
	return 0;
}

/* "HOST[:PORT]", "[V6][:PORT]", "V6", "NET/PREFIX", "*.SUFFIX[:PORT]",
 * "*[:PORT]". */
static int entry_target(struct netguard_entry *e, char *t, char *err, size_t n)
{
	char orig[128], *colon, *slash;
	struct addr a;
	int r;

	snprintf(orig, sizeof(orig), "%s", t);
	if ((slash = strchr(t, '/'))) {
		*slash = '\0';
		if (t[0] == '[') {
			size_t l = strlen(t);

			if (l < 2 || t[l - 1] != ']')
				return lfail(err, n, "'%.80s': not a network", orig);
		}
		return entry_net(e, t, slash + 1, err, n, orig);
	}
	if (t[0] == '[') {
		char *close = strchr(t, ']');

		if (!close)
			return lfail(err, n, "'%.80s': a ']' is missing", orig);
		if (close[1] == ':' && parse_port(close + 2, &e->port) < 0)
			return lfail(err, n, "'%.80s': the port is 1 to 65535", orig);
		if (close[1] && close[1] != ':')
			return lfail(err, n, "'%.80s': expected [IPv6]:PORT", orig);
		close[1] = '\0';
		return entry_net(e, t, NULL, err, n, orig);
	}
	colon = strchr(t, ':');
	if (colon && strchr(colon + 1, ':')) /* a bare IPv6 address */
		return entry_net(e, t, NULL, err, n, orig);
	if (colon) {
		*colon = '\0';
		if (parse_port(colon + 1, &e->port) < 0)
			return lfail(err, n, "'%.80s': the port is 1 to 65535", orig);
	}
	if (!strcmp(t, "*")) {
		e->kind = NGE_ANY;
		return 0;
	}
	if (!strncmp(t, "*.", 2)) {
		e->kind = NGE_WILDCARD;
		if (netguard_name_normalize(t + 2) < 0 || strlen(t + 1) > NETGUARD_HOST_MAX)
			return lfail(err, n, "'%.80s': not a host name after '*.'", orig);
		snprintf(e->host, sizeof(e->host), "%s", t + 1);
		return 0;
	}
	r = parse_ip(t, &a);
	if (r == 0)
		return entry_net(e, t, NULL, err, n, orig);
	if (r != -EINVAL || netguard_name_normalize(t) < 0)
		return lfail(err, n, "'%.80s': not a host name, an IP address or a network", orig);
	e->kind = NGE_NAME;
	snprintf(e->host, sizeof(e->host), "%s", t);
	return 0;
}

static int entry_parse(struct netguard_entry *e, char *s, char *err, size_t n)
{
	char *save = NULL, *t = strtok_r(s, " \t\r", &save), *w;

	memset(e, 0, sizeof(*e));
	if (entry_target(e, t, err, n) < 0)
		return -EINVAL;
	while ((w = strtok_r(NULL, " \t\r", &save))) {
		if (strcmp(w, "private"))
			return lfail(
				err, n,
				"'%.80s': unknown word '%.32s' after the host (known: private)", t,
				w);
		if (e->kind == NGE_NET)
			return lfail(err, n,
				     "'%.80s': an address or network is allowed already; 'private' "
				     "is for names",
				     t);
		if (e->kind == NGE_ANY)
			return lfail(err, n,
				     "'* private' would allow every address; name the private "
				     "hosts or networks instead");
		e->private_ok = true;
	}
	return 0;
}

void netguard_list_release(struct netguard_list *l)
{
	if (!l)
		return;
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int netguard_list_parse(const char *text, struct netguard_list *ret, char *err, size_t n)
{
	struct netguard_list l = { 0 };
	char *copy, *save = NULL;
	int r = 0;

	if (!(copy = strdup(text)))
		return lfail(err, n, "out of memory"), -ENOMEM;
	for (char *s = strtok_r(copy, ",\n", &save); s; s = strtok_r(NULL, ",\n", &save)) {
		struct netguard_entry *v;

		if (!s[strspn(s, " \t\r")]) {
			r = lfail(err, n, "an empty entry");
			break;
		}
		if (l.n == NETGUARD_LIST_MAX) {
			r = lfail(err, n, "too many entries: at most %d", NETGUARD_LIST_MAX);
			break;
		}
		if (!(v = realloc(l.v, (l.n + 1) * sizeof(*v)))) {
			r = lfail(err, n, "out of memory"), r = -ENOMEM;
			break;
		}
		l.v = v;
		if ((r = entry_parse(&l.v[l.n], s, err, n)) < 0)
			break;
		l.n++;
	}
	free(copy);
	if (r == 0 && !l.n)
		r = lfail(err, n, "no entries");
	if (r < 0) {
		netguard_list_release(&l);
		return r;
	}
	*ret = l;
	return 0;
}

/* ---- the check ---- */

static bool in_net(const struct netguard_entry *e, const struct addr *a)
{
	return e->family == a->family && prefix_is(a->b, e->addr, e->prefix);
}

static bool port_ok(const struct netguard_entry *e, unsigned port)
{
	return !e->port || e->port == port;
}

/* Does a network entry allow a (see netguard.h for the rule)? */
static bool net_allows(const struct netguard_list *l, const struct addr *a, unsigned port)
{
	enum netguard_class c = addr_class(a);

	for (size_t i = 0; i < l->n; i++) {
		const struct netguard_entry *e = &l->v[i];
		struct addr net = { .family = e->family };

		if (e->kind != NGE_NET || !port_ok(e, port) || !in_net(e, a))
			continue;
		if (c == NG_PUBLIC || e->prefix == (e->family == AF_INET ? 32u : 128u))
			return c != NG_UNSPECIFIED && c != NG_INVALID;
		memcpy(net.b, e->addr, 16);
		if (c == addr_class(&net) && c != NG_METADATA && c != NG_UNSPECIFIED)
			return true;
	}
	return false;
}

static bool any_allows(const struct netguard_list *l, unsigned port)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind == NGE_ANY && port_ok(&l->v[i], port))
			return true;
	return false;
}

static int refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -EPERM;
}

static int check_literal(const struct netguard_list *l, const char *host, const struct addr *lit,
			 unsigned port, const struct sockaddr *sa, char *why, size_t n)
{
	enum netguard_class c = addr_class(lit);
	char text[NETGUARD_ADDR_STRLEN];
	struct addr a;

	if (sa && (addr_from(sa, &a) < 0 || a.family != lit->family || memcmp(a.b, lit->b, 16)))
		return refuse(why, n, "'%.80s': the address connected to is not the one in the URL",
			      host);
	if (!inet_ntop(lit->family, lit->b, text, sizeof(text)))
		snprintf(text, sizeof(text), "?");
	if (net_allows(l, lit, port))
		return 0;
	if (c == NG_PUBLIC && any_allows(l, port))
		return 0;
	if (c != NG_PUBLIC)
		return refuse(why, n,
			      "'%.80s' is %s, a %s address, which the allowed hosts do not name",
			      host, text, netguard_class_name(c));
	return refuse(why, n, "'%.80s' (port %u) is not one of the allowed hosts", host, port);
}

static bool name_matches(const struct netguard_entry *e, const char *name, size_t len)
{
	size_t sl;

	if (e->kind == NGE_ANY)
		return true;
	if (e->kind == NGE_NAME)
		return !strcmp(e->host, name);
	if (e->kind != NGE_WILDCARD)
		return false;
	sl = strlen(e->host);
	return len > sl && !strcmp(name + len - sl, e->host);
}

/* ---- this process's own listening addresses ---- */

static struct {
	struct addr a;
	unsigned port;
	bool any; /* a wildcard: every address of this host */
	unsigned refs;
} self[NETGUARD_SELF_MAX];
static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned sa_port(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET	   ? ntohs(((const struct sockaddr_in *)sa)->sin_port)
	       : sa->sa_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)sa)->sin6_port)
					   : 0;
}

static bool addr_eq(const struct addr *a, const struct addr *b)
{
	return a->family == b->family && !memcmp(a->b, b->b, 16);
}

int netguard_self_add(const struct sockaddr *sa)
{
	struct addr a;
	unsigned port = sa ? sa_port(sa) : 0;
	int r = -ENOSPC;

	if (addr_from(sa, &a) < 0)
		return -EAFNOSUPPORT;
	pthread_mutex_lock(&self_lock);
	for (size_t i = 0; i < NETGUARD_SELF_MAX; i++)
		if (self[i].refs && self[i].port == port && addr_eq(&self[i].a, &a)) {
			self[i].refs++;
			r = 0;
			goto out;
		}
	for (size_t i = 0; i < NETGUARD_SELF_MAX; i++)
		if (!self[i].refs) {
			self[i].a = a;
			self[i].port = port;
			self[i].any = addr_class(&a) == NG_UNSPECIFIED;
			self[i].refs = 1;
			r = 0;
			break;
		}
out:
	pthread_mutex_unlock(&self_lock);
	return r;
}

void netguard_self_remove(const struct sockaddr *sa)
{
	struct addr a;
	unsigned port = sa ? sa_port(sa) : 0;

	if (addr_from(sa, &a) < 0)
		return;
	pthread_mutex_lock(&self_lock);
	for (size_t i = 0; i < NETGUARD_SELF_MAX; i++)
		if (self[i].refs && self[i].port == port && addr_eq(&self[i].a, &a)) {
			self[i].refs--;
			break;
		}
	pthread_mutex_unlock(&self_lock);
}

/* Is a an address of this host?  Loopback always is; the others are
 * the interfaces' (read each time: addresses come and go).  When they
 * cannot be read, every address counts as local: refused rather than
 * reaching the server. */
static bool addr_local(const struct addr *a)
{
	struct ifaddrs *ifs, *i;
	bool local = false;

	if (addr_class(a) == NG_LOOPBACK || addr_class(a) == NG_UNSPECIFIED)
		return true;
	if (getifaddrs(&ifs) < 0)
		return true;
	for (i = ifs; i && !local; i = i->ifa_next) {
		struct addr x;

		if (i->ifa_addr && addr_from(i->ifa_addr, &x) == 0)
			local = addr_eq(&x, a);
	}
	freeifaddrs(ifs);
	return local;
}

static bool self_has(const struct addr *a, unsigned port)
{
	bool exact = false, any = false;

	pthread_mutex_lock(&self_lock);
	for (size_t i = 0; i < NETGUARD_SELF_MAX; i++)
		if (self[i].refs && self[i].port == port) {
			any |= self[i].any;
			exact |= addr_eq(&self[i].a, a);
		}
	pthread_mutex_unlock(&self_lock);
	return exact || (any && addr_local(a));
}

bool netguard_is_self(const struct sockaddr *addr, unsigned port)
{
	struct addr a;

	return addr_from(addr, &a) == 0 && self_has(&a, port);
}

static int check_allowed(const struct netguard_list *l, const char *host, unsigned port,
			 const struct sockaddr *sa, char *why, size_t n)
{
	char name[NETGUARD_HOST_MAX + 2], text[NETGUARD_ADDR_STRLEN];
	bool found = false, private_ok = false;
	enum netguard_class c;
	struct addr lit, a;
	size_t len;
	int r;

	if (!host || !*host)
		return refuse(why, n, "no host");
	r = parse_ip(host, &lit);
	if (r == 0)
		return check_literal(l, host, &lit, port, sa, why, n);
	if (r != -EINVAL)
		return refuse(why, n, "'%.80s': a malformed IP address", host);
	len = strlen(host);
	if (len >= sizeof(name))
		return refuse(why, n, "the host name is over %d bytes", NETGUARD_HOST_MAX);
	memcpy(name, host, len + 1);
	if (netguard_name_normalize(name) < 0)
		return refuse(why, n, "'%.80s' is not a host name", host);
	len = strlen(name);
	for (size_t i = 0; i < l->n; i++)
		if (port_ok(&l->v[i], port) && name_matches(&l->v[i], name, len)) {
			found = true;
			private_ok |= l->v[i].private_ok;
		}
	if (!found)
		return refuse(why, n, "'%.80s' (port %u) is not one of the allowed hosts", name,
			      port);
	if (!sa)
		return 0;
	if (addr_from(sa, &a) < 0)
		return refuse(why, n, "'%.80s': not an IPv4 or IPv6 address", name);
	c = addr_class(&a);
	if (c == NG_PUBLIC)
		return 0;
	if (private_ok && c != NG_UNSPECIFIED && c != NG_METADATA)
		return 0;
	if (net_allows(l, &a, port))
		return 0;
	return refuse(why, n,
		      "'%.80s' resolves to %s, a %s address, which the allowed hosts do not name",
		      name, inet_ntop(a.family, a.b, text, sizeof(text)) ? text : "?",
		      netguard_class_name(c));
}

int netguard_check(const struct netguard_list *l, const char *host, unsigned port,
		   const struct sockaddr *sa, char *why, size_t n)
{
	int r = check_allowed(l, host, port, sa, why, n);
	struct addr a;

	if (r < 0)
		return r;
	/* the address connected to, or the URL's literal before that */
	if ((sa && addr_from(sa, &a) == 0) || (!sa && parse_ip(host, &a) == 0))
		if (self_has(&a, port))
			return refuse(why, n,
				      "'%.80s' port %u is codecell's own listening address: no "
				      "tool connects to it, whatever the policy says",
				      host, port);
	return 0;
}

bool netguard_allowed(const struct netguard_list *l, const char *host, unsigned port,
		      const struct sockaddr *addr)
{
	char why[256];

	return netguard_check(l, host, port, addr, why, sizeof(why)) == 0;
}
