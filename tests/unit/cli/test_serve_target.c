/* SPDX-License-Identifier: MIT */
/*
 * test_serve_target.c - what `hashring serve` reads of a request target and
 * its authority (src/cli/serve/serve_target.c, linked in): the origin and
 * the absolute form, and the DNS-rebinding guard of a loopback server,
 * including a Host without a port, which names port 80.
 */
#include "hrt_check.h"

#include "serve.h"

#include <string.h>

START_TEST(origin_and_absolute_form)
{
	char auth[32];

	ck_assert_str_eq(serve_target_path("/status.json", auth, sizeof auth), "/status.json");
	ck_assert_str_eq(auth, "");
	ck_assert_str_eq(serve_target_path("http://127.0.0.1:8080/ring.json", auth, sizeof auth),
			 "/ring.json");
	ck_assert_str_eq(auth, "127.0.0.1:8080");
	/* The scheme is case-insensitive; no path is "/". */
	ck_assert_str_eq(serve_target_path("HTTP://localhost:1", auth, sizeof auth), "/");
	ck_assert_str_eq(auth, "localhost:1");
	ck_assert_str_eq(serve_target_path("http://[::1]:9/x", auth, sizeof auth), "/x");
	ck_assert_str_eq(auth, "[::1]:9");
}
END_TEST

START_TEST(bad_targets)
{
	char auth[16];

	ck_assert_ptr_null(serve_target_path("*", auth, sizeof auth));
	ck_assert_ptr_null(serve_target_path("status.json", auth, sizeof auth));
	ck_assert_ptr_null(serve_target_path("https://127.0.0.1:1/", auth, sizeof auth));
	ck_assert_ptr_null(serve_target_path("http:///x", auth, sizeof auth));
	/* Userinfo is forbidden in http URIs; an authority too long is refused. */
	ck_assert_ptr_null(serve_target_path("http://a@127.0.0.1:1/", auth, sizeof auth));
	ck_assert_ptr_null(serve_target_path("http://127.000.000.001:65535/", auth, sizeof auth));
}
END_TEST

START_TEST(loopback_names_with_our_port)
{
	ck_assert(serve_host_ok("127.0.0.1:8080", 8080));
	ck_assert(serve_host_ok("127.1.2.3:8080", 8080));
	ck_assert(serve_host_ok("localhost:8080", 8080));
	ck_assert(serve_host_ok("LocalHost:8080", 8080));
	ck_assert(serve_host_ok("[::1]:8080", 8080));
	ck_assert(serve_host_ok(NULL, 8080)); /* HTTP/1.0 without Host */
	/* Another port, another name: another server. */
	ck_assert(!serve_host_ok("127.0.0.1:8081", 8080));
	ck_assert(!serve_host_ok("127.0.0.1:08080", 8080));
	ck_assert(!serve_host_ok("rebound.example:8080", 8080));
	ck_assert(!serve_host_ok("128.0.0.1:8080", 8080));
	ck_assert(!serve_host_ok("[::2]:8080", 8080));
	ck_assert(!serve_host_ok(":8080", 8080));
	ck_assert(!serve_host_ok("", 8080));
}
END_TEST

START_TEST(no_port_means_80)
{
	ck_assert(!serve_host_ok("127.0.0.1", 8080));
	ck_assert(!serve_host_ok("localhost", 8080));
	ck_assert(!serve_host_ok("[::1]", 8080));
	ck_assert(serve_host_ok("127.0.0.1", 80));
	ck_assert(serve_host_ok("localhost", 80));
	ck_assert(serve_host_ok("[::1]", 80));
	ck_assert(serve_host_ok("127.0.0.1:80", 80));
	ck_assert(!serve_host_ok("rebound.example", 80));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("serve_target");
	TCase *tc = tcase_create("targets");

	tcase_add_test(tc, origin_and_absolute_form);
	tcase_add_test(tc, bad_targets);
	tcase_add_test(tc, loopback_names_with_our_port);
	tcase_add_test(tc, no_port_means_80);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
