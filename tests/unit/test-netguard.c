/* util/netguard: address classes, every spelling of an IP literal, the
 * allowlist and its rule for non-public addresses. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util/netguard.h"

/* The literal as netguard_parse_ip reads it, formatted back ("" when it
 * is refused: then r says how). */
static int parse(const char *host, char *out, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	int r = netguard_parse_ip(host, &ss, &len);

	out[0] = '\0';
	if (r == 0)
		netguard_format((struct sockaddr *)&ss, out, n);
	return r;
}

static void literal_spellings(void **state)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "127.0.0.1", "127.0.0.1" },
		{ "2130706433", "127.0.0.1" },
		{ "0177.0.0.1", "127.0.0.1" },
		{ "0x7f.1", "127.0.0.1" },
		{ "0X7F.0.0.1", "127.0.0.1" },
		{ "127.1", "127.0.0.1" },
		{ "127.0.1", "127.0.0.1" },
		{ "0x7f000001", "127.0.0.1" },
		{ "017700000001", "127.0.0.1" },
		{ "127.0.0.1.", "127.0.0.1" },
		{ "00000000000177.0.0.1", "127.0.0.1" },
		{ "[::ffff:127.0.0.1]", "127.0.0.1" },
		{ "::ffff:7f00:1", "127.0.0.1" },
		{ "[::1]", "::1" },
		{ "::1", "::1" },
		{ "[0:0:0:0:0:0:0:1]", "::1" },
		{ "0", "0.0.0.0" },
		{ "169.254.43518", "169.254.169.254" },
		{ "0xa9fea9fe", "169.254.169.254" },
		{ "[fd00:ec2::254]", "fd00:ec2::254" },
		{ "[::127.0.0.1]", "::127.0.0.1" },
	};
	static const char *const names[] = { "localhost",    "example.com", "1.2.3.example",
					     "0x7f.example", "a.b",	    "deadbeef" };
	static const char *const bad[] = {
		"1.2.3.256",  "1.2.3.4.5", "0x100000000",	  "4294967296",
		"1.16777216", "09.1.1.1",  "[fe80::1%eth0]",	  "fe80::1%25eth0",
		"[::1",	      "[1.2.3.4]", "[::ffff:0177.0.0.1]", "example.0x7f",
		"1..2",	      ".1",	   "99999999999999999999"
	};
	char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(parse(ok[i].in, out, sizeof(out)), 0);
		if (strcmp(out, ok[i].out))
			fail_msg("'%s' -> '%s', expected '%s'", ok[i].in, out, ok[i].out);
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (parse(names[i], out, sizeof(out)) != -EINVAL)
			fail_msg("'%s' should be a name, got '%s'", names[i], out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], out, sizeof(out)) != -ERANGE)
			fail_msg("'%s' should be refused as malformed, got '%s'", bad[i], out);
}

static enum netguard_class cls(const char *ip)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (netguard_parse_ip(ip, &ss, &len) < 0)
		fail_msg("'%s' does not parse", ip);
	return netguard_classify((struct sockaddr *)&ss);
}

static void classes(void **state)
{
	static const struct {
		const char *ip;
		enum netguard_class c;
	} t[] = {
		{ "8.8.8.8", NG_PUBLIC },
		{ "1.1.1.1", NG_PUBLIC },
		{ "127.0.0.1", NG_LOOPBACK },
		{ "127.255.255.254", NG_LOOPBACK },
		{ "10.1.2.3", NG_PRIVATE },
		{ "172.16.0.1", NG_PRIVATE },
		{ "172.31.255.255", NG_PRIVATE },
		{ "172.32.0.1", NG_PUBLIC },
		{ "192.168.1.1", NG_PRIVATE },
		{ "169.254.1.1", NG_LINK_LOCAL },
		{ "169.254.169.254", NG_METADATA },
		{ "169.254.170.2", NG_METADATA },
		{ "100.100.100.200", NG_METADATA },
		{ "0.0.0.0", NG_UNSPECIFIED },
		{ "0.1.2.3", NG_RESERVED },
		{ "100.64.0.1", NG_RESERVED },
		{ "100.127.255.255", NG_RESERVED },
		{ "100.128.0.1", NG_PUBLIC },
		{ "198.18.0.1", NG_RESERVED },
		{ "198.19.255.255", NG_RESERVED },
		{ "192.0.2.1", NG_RESERVED },
		{ "240.0.0.1", NG_RESERVED },
		{ "255.255.255.255", NG_RESERVED },
		{ "224.0.0.1", NG_MULTICAST },
		{ "::", NG_UNSPECIFIED },
		{ "::1", NG_LOOPBACK },
		{ "::ffff:127.0.0.1", NG_LOOPBACK },
		{ "::127.0.0.1", NG_LOOPBACK },
		{ "::ffff:0:127.0.0.1", NG_LOOPBACK },
		{ "64:ff9b::127.0.0.1", NG_LOOPBACK },
		{ "64:ff9b::a9fe:a9fe", NG_METADATA },
		{ "2002:7f00:1::", NG_LOOPBACK },
		{ "64:ff9b::8.8.8.8", NG_PUBLIC },
		{ "64:ff9b:1::1", NG_RESERVED },
		{ "::ffff:10.0.0.1", NG_PRIVATE },
		{ "fe80::1", NG_LINK_LOCAL },
		{ "fc00::1", NG_UNIQUE_LOCAL },
		{ "fd12:3456::1", NG_UNIQUE_LOCAL },
		{ "fd00:ec2::254", NG_METADATA },
		{ "ff02::1", NG_MULTICAST },
		{ "2001:db8::1", NG_RESERVED },
		{ "2001::1", NG_RESERVED },
		{ "fec0::1", NG_RESERVED },
		{ "100::1", NG_RESERVED },
		{ "2606:4700::1111", NG_PUBLIC },
		{ "2a00:1450::1", NG_PUBLIC },
		{ "4000::1", NG_RESERVED },
	};
	struct sockaddr_un_like {
		sa_family_t family;
	} unix_sa = { AF_UNIX };

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (cls(t[i].ip) != t[i].c)
			fail_msg("'%s' is %s, expected %s", t[i].ip,
				 netguard_class_name(cls(t[i].ip)), netguard_class_name(t[i].c));
	assert_int_equal(netguard_classify((struct sockaddr *)&unix_sa), NG_INVALID);
	assert_int_equal(netguard_classify(NULL), NG_INVALID);
	assert_string_equal(netguard_class_name(NG_METADATA), "cloud metadata");
}

static void list_parse_normalizes(void **state)
{
	struct netguard_list l;
	char err[256];

	(void)state;
	assert_int_equal(
		netguard_list_parse(
			"API.Example.COM., *.Example.org:443, 10.1.2.3/8,"
			" localhost:8080 private,[::1]:9000,\n0x7f.1, *, ::ffff:10.0.0.0/104",
			&l, err, sizeof(err)),
		0);
	assert_int_equal(l.n, 8);
	assert_int_equal(l.v[0].kind, NGE_NAME);
	assert_string_equal(l.v[0].host, "api.example.com");
	assert_int_equal(l.v[0].port, 0);
	assert_int_equal(l.v[1].kind, NGE_WILDCARD);
	assert_string_equal(l.v[1].host, ".example.org");
	assert_int_equal(l.v[1].port, 443);
	assert_int_equal(l.v[2].kind, NGE_NET);
	assert_int_equal(l.v[2].prefix, 8);
	assert_memory_equal(l.v[2].addr, "\x0a\0\0\0", 4); /* host bits cleared */
	assert_true(l.v[3].private_ok);
	assert_int_equal(l.v[3].port, 8080);
	assert_int_equal(l.v[4].family, AF_INET6);
	assert_int_equal(l.v[4].port, 9000);
	assert_int_equal(l.v[5].prefix, 32);
	assert_memory_equal(l.v[5].addr, "\x7f\0\0\x01", 4);
	assert_int_equal(l.v[6].kind, NGE_ANY);
	assert_int_equal(l.v[7].family, AF_INET);
	assert_int_equal(l.v[7].prefix, 8);
	netguard_list_release(&l);

	static const char *const bad[] = { "",
					   ",",
					   "exa mple.com",
					   "host:0",
					   "host:65536",
					   "host:http",
					   "0.0.0.0",
					   "[::]",
					   "10.0.0.0/33",
					   "::/129",
					   "* private",
					   "10.0.0.1 private",
					   "a.com public",
					   "*.",
					   "1.2.3.256",
					   "[::1",
					   "-bad-%.com",
					   "::ffff:10.0.0.0/8" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (netguard_list_parse(bad[i], &l, err, sizeof(err)) != -EINVAL || !err[0])
			fail_msg("'%s' should be refused with a message", bad[i]);
	}
}

static bool allowed(const char *list, const char *host, unsigned port, const char *addr)
{
	struct sockaddr_storage ss;
	struct netguard_list l;
	char err[256], why[256];
	socklen_t len;
	bool ok;

	if (netguard_list_parse(list, &l, err, sizeof(err)) < 0)
		fail_msg("'%s': %s", list, err);
	if (addr && netguard_parse_ip(addr, &ss, &len) < 0)
		fail_msg("'%s' does not parse", addr);
	why[0] = '\0';
	ok = netguard_check(&l, host, port, addr ? (struct sockaddr *)&ss : NULL, why,
			    sizeof(why)) == 0;
	if (!ok && !why[0])
		fail_msg("refused without a reason");
	assert_int_equal(netguard_allowed(&l, host, port, addr ? (struct sockaddr *)&ss : NULL),
			 ok);
	netguard_list_release(&l);
	return ok;
}

static void rule_for_names(void **state)
{
	(void)state;
	/* a plain name: public addresses only */
	assert_true(allowed("api.example.com", "api.example.com", 443, "93.184.216.34"));
	assert_true(allowed("api.example.com", "API.example.com.", 443, "93.184.216.34"));
	assert_false(allowed("api.example.com", "api.example.com", 443, "127.0.0.1"));
	assert_false(allowed("api.example.com", "api.example.com", 443, "::ffff:127.0.0.1"));
	assert_false(allowed("api.example.com", "api.example.com", 443, "10.0.0.1"));
	assert_false(allowed("api.example.com", "api.example.com", 443, "169.254.169.254"));
	assert_false(allowed("api.example.com", "api.example.com", 443, "0.0.0.0"));
	assert_false(allowed("api.example.com", "other.example.com", 443, "93.184.216.34"));
	assert_false(allowed("api.example.com", "xapi.example.com", 443, NULL));
	assert_true(allowed("api.example.com", "api.example.com", 443, NULL));
	/* ports */
	assert_true(allowed("api.example.com:443", "api.example.com", 443, "93.184.216.34"));
	assert_false(allowed("api.example.com:443", "api.example.com", 80, "93.184.216.34"));
	/* wildcards: subdomains, not the domain itself */
	assert_true(allowed("*.example.com", "a.b.example.com", 443, "93.184.216.34"));
	assert_false(allowed("*.example.com", "example.com", 443, NULL));
	assert_false(allowed("*.example.com", "badexample.com", 443, NULL));
	assert_true(allowed("*", "anything.test", 80, "93.184.216.34"));
	assert_false(allowed("*", "anything.test", 80, "127.0.0.1"));
	/* "private": whatever the name resolves to, but not metadata or 0.0.0.0 */
	assert_true(allowed("localhost private", "localhost", 8080, "127.0.0.1"));
	assert_true(allowed("localhost private", "localhost", 8080, "::1"));
	assert_false(allowed("localhost private", "localhost", 8080, "169.254.169.254"));
	assert_false(allowed("localhost private", "localhost", 8080, "0.0.0.0"));
	assert_false(allowed("localhost", "localhost", 8080, "127.0.0.1"));
	/* or a name and a network entry for its address */
	assert_true(allowed("db.internal, 10.0.0.0/8", "db.internal", 5432, "10.1.2.3"));
	assert_false(allowed("db.internal, 10.0.0.0/8", "db.internal", 5432, "192.168.1.1"));
	/* a name that is not a name */
	assert_false(allowed("*", "a b", 80, NULL));
	assert_false(allowed("*", "1.2.3.256", 80, NULL));
}

static void rule_for_literals(void **state)
{
	(void)state;
	/* every spelling of loopback is loopback */
	static const char *const loop[] = { "127.0.0.1", "2130706433", "0177.0.0.1",
					    "0x7f.1",	 "127.1",      "[::ffff:127.0.0.1]",
					    "127.0.0.1." };
	for (size_t i = 0; i < sizeof(loop) / sizeof(loop[0]); i++) {
		if (allowed("*", loop[i], 80, NULL))
			fail_msg("'%s' passed '*'", loop[i]);
		if (!allowed("127.0.0.1", loop[i], 80, NULL))
			fail_msg("'%s' did not pass '127.0.0.1'", loop[i]);
	}
	assert_false(allowed("*", "[::1]", 80, NULL));
	assert_false(allowed("127.0.0.1", "[::1]", 80, NULL));
	assert_true(allowed("[::1]:80", "[::1]", 80, NULL));
	assert_false(allowed("[::1]:80", "[::1]", 81, NULL));
	assert_false(allowed("*", "0.0.0.0", 80, NULL));
	assert_false(allowed("0.0.0.0/0", "0.0.0.0", 80, NULL));
	assert_false(allowed("0.0.0.0/0", "127.0.0.1", 80, NULL));
	assert_true(allowed("0.0.0.0/0", "8.8.8.8", 80, NULL));
	assert_false(allowed("::/0", "[::1]", 80, NULL));
	assert_false(allowed("*", "169.254.169.254", 80, NULL));
	assert_false(allowed("169.254.0.0/16", "169.254.169.254", 80, NULL));
	assert_true(allowed("169.254.0.0/16", "169.254.1.1", 80, NULL));
	assert_true(allowed("169.254.169.254", "169.254.169.254", 80, NULL));
	assert_false(allowed("fc00::/7", "[fd00:ec2::254]", 80, NULL));
	assert_true(allowed("fc00::/7", "[fd00::1]", 80, NULL));
	assert_true(allowed("10.0.0.0/8", "10.9.9.9", 80, NULL));
	assert_false(allowed("10.0.0.0/8", "11.0.0.1", 80, NULL));
	assert_true(allowed("*", "8.8.8.8", 80, NULL));
	assert_false(allowed("api.example.com", "8.8.8.8", 80, NULL));
	assert_false(allowed("*", "[::127.0.0.1]", 80, NULL));
	assert_false(allowed("*", "[64:ff9b::7f00:1]", 80, NULL));
	/* the connected address must be the literal's */
	assert_true(allowed("127.0.0.1", "0x7f.1", 80, "127.0.0.1"));
	assert_true(allowed("127.0.0.1", "127.0.0.1", 80, "::ffff:127.0.0.1"));
	assert_false(allowed("127.0.0.1", "127.0.0.1", 80, "127.0.0.2"));
	assert_false(allowed("*", "8.8.8.8", 80, "127.0.0.1"));
}

/* The server's own listening address is refused whatever the list
 * says; a wildcard one stands for every address of this host. */
static void own_listening_address_is_refused(void **state)
{
	struct sockaddr_in one = { .sin_family = AF_INET, .sin_port = htons(8080) },
			   any = { .sin_family = AF_INET, .sin_port = htons(9090) };
	struct sockaddr_in6 six = { .sin6_family = AF_INET6, .sin6_port = htons(7070) };
	const char *list = "127.0.0.0/8, localhost private, [::1], 8.8.8.8";

	(void)state;
	inet_pton(AF_INET, "127.0.0.1", &one.sin_addr);
	six.sin6_addr = in6addr_loopback;
	assert_true(allowed(list, "127.0.0.1", 8080, NULL));
	assert_int_equal(netguard_self_add((struct sockaddr *)&one), 0);
	assert_int_equal(netguard_self_add((struct sockaddr *)&any), 0);
	assert_int_equal(netguard_self_add((struct sockaddr *)&six), 0);
	/* the literal before connecting, the address connected to after */
	assert_false(allowed(list, "127.0.0.1", 8080, NULL));
	assert_false(allowed(list, "2130706433", 8080, "127.0.0.1"));
	assert_false(allowed(list, "localhost", 8080, "127.0.0.1"));
	assert_false(allowed(list, "localhost", 8080, "::ffff:127.0.0.1"));
	assert_false(allowed("127.0.0.1", "[::ffff:127.0.0.1]", 8080, NULL));
	assert_false(allowed(list, "[::1]", 7070, NULL));
	/* another loopback address or port is not the server */
	assert_true(allowed(list, "127.0.0.2", 8080, NULL));
	assert_true(allowed(list, "127.0.0.1", 8081, NULL));
	/* 0.0.0.0:9090: any loopback address, and this host's own */
	assert_false(allowed(list, "127.0.0.2", 9090, NULL));
	assert_false(allowed(list, "localhost", 9090, "127.9.9.9"));
	assert_true(allowed(list, "8.8.8.8", 9090, NULL));
	assert_true(netguard_is_self((struct sockaddr *)&one, 8080));
	/* added twice, removed twice */
	assert_int_equal(netguard_self_add((struct sockaddr *)&one), 0);
	netguard_self_remove((struct sockaddr *)&one);
	assert_false(allowed(list, "127.0.0.1", 8080, NULL));
	netguard_self_remove((struct sockaddr *)&one);
	netguard_self_remove((struct sockaddr *)&any);
	netguard_self_remove((struct sockaddr *)&six);
	assert_true(allowed(list, "127.0.0.1", 8080, NULL));
	assert_true(allowed(list, "127.0.0.2", 9090, NULL));
	assert_true(allowed(list, "[::1]", 7070, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(literal_spellings),
		cmocka_unit_test(classes),
		cmocka_unit_test(list_parse_normalizes),
		cmocka_unit_test(rule_for_names),
		cmocka_unit_test(rule_for_literals),
		cmocka_unit_test(own_listening_address_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
