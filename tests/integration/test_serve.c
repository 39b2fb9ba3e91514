/* SPDX-License-Identifier: MIT */
/*
 * test_serve.c - `hashring serve` against a real etcd, over raw loopback
 * sockets: the paths and their answers, an update after a put,
 * read-only methods, the Host check, /lookup and the lookup rates and hot
 * keys it makes, and bad clients: oversized, slow, trickling,
 * malformed, too many; a clean exit on SIGTERM with a client hanging; and
 * etcd down at the start, then up.  A ring of 10,000 nodes: /lookup is
 * answered while the ring is drawn, SIGTERM ends it at once, the page's
 * answers stay small, and its nodes are searched and paged.  Records of
 * weights 1e-6 beside 1e7 and 1e290: every answer is JSON of short, finite
 * numbers.  The metrics' options.
 */
#define _GNU_SOURCE
#include "etcd_fixture.h"
#include "hrt_cli.h"
#include "hrt_ring.h"
#include "hrt_check.h"
#include "serve_http.h"

#include <cjson/cJSON.h>
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PREFIX "/serve/nodes/"
#define ANSWER_MAX (1 << 20)
/* A ring of 10,000 nodes, node-000005 warming, put once for the suite. */
#define BIG_PREFIX "/serve/big/"
#define BIG_NODES 10000
#define BIG_ANSWER_MAX (64 << 20)

static hrt_etcd_cluster *etcd;
static char *buf;

static void up(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	buf = malloc(ANSWER_MAX);
	ck_assert_ptr_nonnull(buf);
	hrt_serve_put_nodes(hrt_etcd_client_url(etcd, 0), BIG_PREFIX, BIG_NODES, 5);
}

static void down(void)
{
	hrt_etcd_destroy(etcd);
	etcd = NULL;
	free(buf);
}

static void put(const char *id, const char *value)
{
	char key[256];

	snprintf(key, sizeof key, PREFIX "%s", id);
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), key, value), 0);
}

static void three_nodes(void)
{
	put("cache-a", "{\"addr\":\"127.0.0.1:11211\",\"zone\":\"z1\"}");
	put("cache-b", "{\"addr\":\"127.0.0.1:11212\",\"zone\":\"z2\"}");
	put("cache-c", "{\"addr\":\"127.0.0.1:11213\",\"zone\":\"z3\",\"state\":\"warming\"}");
}

/* serve following `prefix`, once its first ring is up: it listens before
 * etcd answers and says 503 until then, which a slow first sync (a
 * sanitizer's build on a busy machine) would make every test here see. */
static void start_at(hrt_serve *s, const char *prefix, const char *const *extra)
{
	int64_t deadline = hrt_now_ms() + 30000;
	int st;

	hrt_serve_start(s, hrt_etcd_endpoints(etcd), prefix, extra);
	while ((st = hrt_http_request(s->port, "GET", "/ring.json", buf, ANSWER_MAX)) == 503 &&
	       hrt_now_ms() < deadline)
		hrt_sleep_ms(20);
	ck_assert_msg(st == 200, "no ring from serve after 30 s: status %d, %.300s", st,
		      hrt_http_body(buf));
}

static void start(hrt_serve *s, const char *const *extra)
{
	start_at(s, PREFIX, extra);
}

/* /ring.json, parsed. */
static cJSON *ring_json(int port)
{
	cJSON *j;

	ck_assert_int_eq(hrt_http_request(port, "GET", "/ring.json", buf, ANSWER_MAX), 200);
	ck_assert_ptr_nonnull(strstr(buf, "Content-Type: application/json"));
	j = cJSON_Parse(hrt_http_body(buf));
	ck_assert_msg(j != NULL, "/ring.json is not JSON: %.300s", hrt_http_body(buf));
	return j;
}

static const cJSON *node_named(const cJSON *ring, const char *id)
{
	const cJSON *n;

	cJSON_ArrayForEach(n, cJSON_GetObjectItem(ring, "nodes"))
		if (!strcmp(cJSON_GetObjectItem(n, "id")->valuestring, id))
			return n;
	return NULL;
}

static int get_json(int port, const char *path, cJSON **out);

/* A good server still answers a good request. */
static void still_serves(int port)
{
	ck_assert_int_eq(hrt_http_request(port, "GET", "/ring.json", buf, ANSWER_MAX), 200);
}

START_TEST(paths_and_update)
{
	hrt_serve s;
	cJSON *j, *ring, *first;
	int64_t deadline;

	hrt_del(hrt_etcd_client_url(etcd, 0), PREFIX "cache-d"); /* a rerun's */
	three_nodes();
	start(&s, NULL);

	/* The page: self-contained HTML, a policy that loads nothing else. */
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/", buf, ANSWER_MAX), 200);
	ck_assert_ptr_nonnull(strstr(buf, "Content-Type: text/html; charset=utf-8"));
	ck_assert_ptr_nonnull(strstr(buf, "Content-Security-Policy: default-src 'none'"));
	ck_assert_ptr_nonnull(strstr(buf, "<svg id=\"ring\""));
	ck_assert_ptr_null(strstr(buf, "src=\"http"));
	/* HEAD: the same headers, no body. */
	ck_assert_int_eq(hrt_http_request(s.port, "HEAD", "/", buf, ANSWER_MAX), 200);
	ck_assert_str_eq(hrt_http_body(buf), "");

	j = ring_json(s.port);
	ring = cJSON_GetObjectItem(j, "ring");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(ring, "nodes")), 3);
	ck_assert_str_eq(cJSON_GetObjectItem(node_named(ring, "cache-c"), "state")->valuestring,
			 "warming");
	/* The warming node takes over about a third of the key space. */
	ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(ring, "takeover")), 0);
	ck_assert_double_eq_tol(cJSON_GetObjectItem(ring, "takeover_share")->valuedouble,
				cJSON_GetObjectItem(node_named(ring, "cache-c"),
						    "share_write")->valuedouble, 1e-5);
	ck_assert_double_eq_tol(cJSON_GetObjectItem(node_named(ring, "cache-a"),
						    "fair_write")->valuedouble, 1.0 / 3, 1e-5);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "history")), 1);
	/* Nothing looked up yet: counts of 0, no rate, no hot key. */
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "lookups"),
						   "interval_s")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "hot_keys")), 0);
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "status"),
					     "unconfirmed_ms")->valueint, 0);
	cJSON_Delete(j);

	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/metrics", buf, ANSWER_MAX), 200);
	ck_assert_ptr_nonnull(strstr(buf, "hashring_ring_revision "));
	ck_assert_ptr_nonnull(strstr(buf, "node=\"cache-c\""));

	/* What the page polls: the status, which ring is drawn... */
	ck_assert_int_eq(get_json(s.port, "/status.json", &j), 200);
	ring = cJSON_GetObjectItem(j, "ring");
	ck_assert_int_eq(cJSON_GetObjectItem(ring, "nodes")->valueint, 3);
	ck_assert_int_eq(cJSON_GetObjectItem(ring, "seq")->valueint, 1);
	ck_assert(cJSON_IsObject(cJSON_GetObjectItem(j, "lookups")));
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(j, "hot_keys")));
	cJSON_Delete(j);
	/* ...the drawing of that ring, with its owners and the takeover... */
	ck_assert_int_eq(get_json(s.port, "/overview.json", &j), 200);
	ring = cJSON_GetObjectItem(j, "ring");
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(ring, "states"),
					     "warming")->valueint, 1);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(ring, "owners")), 3);
	ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(ring, "takeover")), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "history")), 1);
	cJSON_Delete(j);
	/* ...and its nodes. */
	ck_assert_int_eq(get_json(s.port, "/nodes.json?state=warming", &j), 200);
	ck_assert_int_eq(cJSON_GetObjectItem(j, "matched")->valueint, 1);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rows"), 0),
					     "id")->valuestring, "cache-c");
	cJSON_Delete(j);

	/* Read-only, four paths, loopback names only. */
	ck_assert_int_eq(hrt_http_request(s.port, "POST", "/", buf, ANSWER_MAX), 405);
	ck_assert_ptr_nonnull(strstr(buf, "Allow: GET, HEAD"));
	ck_assert_int_eq(hrt_http_request(s.port, "DELETE", "/ring.json", buf, ANSWER_MAX), 405);
	ck_assert_int_eq(hrt_http_request(s.port, "PUT", "/metrics", buf, ANSWER_MAX), 405);
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/etc/passwd", buf, ANSWER_MAX), 404);
	{
		static const char rebound[] = "GET / HTTP/1.1\r\nHost: rebound.example\r\n"
					      "Connection: close\r\n\r\n";

		ck_assert_int_eq(hrt_http_raw(s.port, rebound, strlen(rebound), buf, ANSWER_MAX), 403);
	}
	{
		/* No port is port 80: another server than ours. */
		static const char portless[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
					       "Connection: close\r\n\r\n";

		ck_assert_int_eq(hrt_http_raw(s.port, portless, strlen(portless), buf, ANSWER_MAX),
				 403);
		ck_assert_ptr_nonnull(strstr(buf, "with the server's port"));
	}
	{
		char req[256];
		int len = snprintf(req, sizeof req, "GET /ring.json HTTP/1.1\r\nHost: localhost:%d\r\n"
				   "Connection: close\r\n\r\n", s.port);

		ck_assert_int_eq(hrt_http_raw(s.port, req, (size_t)len, buf, ANSWER_MAX), 200);
	}

	/* Two requests on one connection: kept alive for the page's polls. */
	{
		char req[256];
		int fd = hrt_http_connect(s.port), len, n = 0;

		len = snprintf(req, sizeof req, "GET /ring.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n"
			       "HEAD / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
			       s.port, s.port);
		ck_assert_int_eq(send(fd, req, (size_t)len, MSG_NOSIGNAL), len);
		hrt_http_read_all(fd, buf, ANSWER_MAX);
		close(fd);
		for (const char *p = buf; (p = strstr(p, "HTTP/1.1 200 OK")); p++)
			n++;
		ck_assert_msg(n == 2, "two requests on one connection gave: %.300s", buf);
	}

	/* A node joins: the next ring is served, with what moved to it. */
	put("cache-d", "{\"addr\":\"127.0.0.1:11214\",\"zone\":\"z1\"}");
	deadline = hrt_now_ms() + 30000;
	for (;;) {
		j = ring_json(s.port);
		if (cJSON_GetArraySize(cJSON_GetObjectItem(j, "history")) == 2)
			break;
		cJSON_Delete(j);
		ck_assert_msg(hrt_now_ms() < deadline, "no second ring in /ring.json");
		hrt_sleep_ms(100);
	}
	ring = cJSON_GetObjectItem(j, "ring");
	ck_assert_ptr_nonnull(node_named(ring, "cache-d"));
	first = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "history"), 0); /* newest */
	ck_assert_int_eq(cJSON_GetObjectItem(first, "revision")->valuedouble,
			 cJSON_GetObjectItem(ring, "revision")->valuedouble);
	ck_assert_double_gt(cJSON_GetObjectItem(first, "moved_write")->valuedouble, 0.1);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(first, "moves"), 0),
					     "to")->valuestring, "cache-d");
	cJSON_Delete(j);
	ck_assert_int_eq(get_json(s.port, "/overview.json", &j), 200);
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "ring"), "nodes")->valueint, 4);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "history")), 2);
	cJSON_Delete(j);
	hrt_serve_stop(&s);
}
END_TEST

/* Oversized request lines and headers get a 4xx, and cost the server
 * nothing it keeps. */
START_TEST(oversized_requests)
{
	size_t big = 256 * 1024;
	char *req = malloc(big + 256);
	hrt_serve s;
	int st;

	three_nodes();
	start(&s, NULL);
	ck_assert_ptr_nonnull(req);
	/* A 256 KiB URL. */
	memcpy(req, "GET /", 5);
	memset(req + 5, 'a', big);
	strcpy(req + 5 + big, " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
	st = hrt_http_raw(s.port, req, strlen(req), buf, ANSWER_MAX);
	ck_assert_msg(st == 414 || st == 431, "a 256 KiB URL got %d: %.200s", st, buf);
	still_serves(s.port);
	/* One 256 KiB header. */
	strcpy(req, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ");
	memset(req + strlen(req), 'b', big);
	req[41 + big] = '\0';
	strcat(req, "\r\n\r\n");
	st = hrt_http_raw(s.port, req, strlen(req), buf, ANSWER_MAX);
	ck_assert_msg(st == 431 || st == 413 || st == 400, "a 256 KiB header got %d: %.200s", st, buf);
	still_serves(s.port);
	/* Thousands of small headers. */
	strcpy(req, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
	for (int i = 0; strlen(req) < big; i++)
		sprintf(req + strlen(req), "X-%d: %d\r\n", i, i);
	strcat(req, "\r\n");
	st = hrt_http_raw(s.port, req, strlen(req), buf, ANSWER_MAX);
	ck_assert_msg(st == 431 || st == 413 || st == 400, "256 KiB of headers got %d: %.200s", st, buf);
	still_serves(s.port);
	/* A body, which a GET-only server never reads. */
	strcpy(req, "POST /ring.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n");
	ck_assert_int_eq(hrt_http_raw(s.port, req, strlen(req), buf, ANSWER_MAX), 405);
	strcpy(req, "GET /ring.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n");
	ck_assert_int_eq(hrt_http_raw(s.port, req, strlen(req), buf, ANSWER_MAX), 413);
	strcpy(req, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "100000\r\n");
	ck_assert_int_eq(hrt_http_raw(s.port, req, strlen(req), buf, ANSWER_MAX), 413);
	still_serves(s.port);
	free(req);
	hrt_serve_stop(&s);
}
END_TEST

/* Garbage gets a 4xx (or a closed connection), never a crash; what
 * libmicrohttpd tolerates (bare LF, a space before a colon, a NUL in a
 * value) is answered, and the server goes on either way. */
START_TEST(malformed_requests)
{
	static const struct { const char *req; size_t len; int must_fail; } bad[] = {
#define BAD(lit, fail) { lit, sizeof lit - 1, fail }
		BAD("GARBAGE\r\n\r\n", 1),
		BAD("GET\r\n\r\n", 1),
		BAD("GET / HTTP/9.9\r\nHost: %s\r\n\r\n", 1),
		BAD("GET / HTTP/1.1\r\n\r\n", 1), /* no Host */
		BAD("GET / HTTP/1.1\r\nHost: %s\r\nHost: %s\r\n\r\n", 1),
		BAD("GET / HTTP/1.1\r\nHost: %s\r\nNo colon here\r\n\r\n", 1),
		BAD("GET / HTTP/1.1\r\nHost: %s\r\n folded\r\n\r\n", 1),
		BAD("GET / HTTP/1.1\r\nHost: %s\r\nContent-Length: -1\r\n\r\n", 1),
		BAD("GET / HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n", 1),
		BAD("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 1), /* a TLS hello */
		BAD("GET /\x01\x7f HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", 1),
		BAD("GET / HTTP/1.1\r\nHost: %s\r\nBad : space\r\nConnection: close\r\n\r\n", 0),
		BAD("GET / HTTP/1.1\nHost: %s\nConnection: close\n\n", 0),
		BAD("GET / HTTP/1.1\r\nHost: %s\r\nX: a\0b\r\nConnection: close\r\n\r\n", 0),
#undef BAD
	};
	char host[32], req[512];
	hrt_serve s;

	three_nodes();
	start(&s, NULL);
	snprintf(host, sizeof host, "127.0.0.1:%d", s.port);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		size_t len = 0;
		int st;

		/* Every %s is the good Host: only what is wrong on purpose is. */
		for (size_t k = 0; k < bad[i].len; k++) {
			if (bad[i].req[k] == '%' && bad[i].req[k + 1] == 's') {
				len += (size_t)snprintf(req + len, sizeof req - len, "%s", host);
				k++;
			} else {
				req[len++] = bad[i].req[k];
			}
		}
		st = hrt_http_raw(s.port, req, len, buf, ANSWER_MAX);
		if (bad[i].must_fail)
			ck_assert_msg(st == 0 || (st >= 400 && st < 500) || st == 505,
				      "bad request %zu got %d: %.200s", i, st, buf);
		else
			ck_assert_msg(st > 0, "request %zu got no answer", i);
		still_serves(s.port);
	}
	hrt_serve_stop(&s);
}
END_TEST

/* `req` (NUL bytes and all, `len` of them) on a connection of its own:
 * its status, the answer in buf. */
static int raw(int port, const char *req, size_t len)
{
	return hrt_http_raw(port, req, len, buf, ANSWER_MAX);
}

/* `fmt` with each %d the port, Connection: close added before the blank
 * line ending it; `nul_at` (or -1): a byte of the request line made NUL. */
static int request_line(int port, const char *fmt, int nul_at)
{
	char req[512];
	int len = snprintf(req, sizeof req, fmt, port, port, port);

	ck_assert_int_lt(len, (int)sizeof req);
	if (nul_at >= 0)
		req[nul_at] = '\0';
	return raw(port, req, (size_t)len);
}

/*
 * The request target in the absolute form (RFC 9112 3.2.2), which a
 * server must accept: served as its path, its authority standing for the
 * Host header in the loopback check (a good Host does not save a bad
 * authority, nor a bad Host a good one).  A NUL byte in the target is a
 * 400, not the target up to it.  A loopback name without a port means
 * port 80: not ours.
 */
START_TEST(request_targets)
{
	static const struct { const char *req; int status; const char *body; } cases[] = {
		{ "GET http://127.0.0.1:%d/status.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 200, "\"lookups\":" },
		{ "GET HTTP://localhost:%d/lookup?key=a HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 200, "\"key\":\"a\"" },
		{ "GET http://127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 200, "<svg id=\"ring\"" },
		{ "GET http://[::1]:%d/nodes.json?state=warming HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 200, "\"cache-c\"" },
		/* The authority replaces the Host, both ways. */
		{ "GET http://127.0.0.1:%d/status.json HTTP/1.1\r\nHost: rebound.example\r\n"
		  "Connection: close\r\n\r\n", 200, "\"lookups\":" },
		{ "GET http://rebound.example:%d/status.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 403, "not a loopback name" },
		{ "GET http://127.0.0.1:%d@rebound.example/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 400, "http://HOST:PORT/PATH" },
		{ "GET http:///status.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 400, "http://HOST:PORT/PATH" },
		{ "GET https://127.0.0.1:%d/status.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 400, "http://HOST:PORT/PATH" },
		{ "GET status.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 400, "http://HOST:PORT/PATH" },
		{ "GET http://127.0.0.1:%d/etc/passwd HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 404, "not found" },
		/* Without a port: port 80, not ours. */
		{ "GET /status.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
		  403, "not a loopback name" },
		{ "GET /status.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
		  403, "not a loopback name" },
		{ "GET /status.json HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n",
		  403, "not a loopback name" },
		{ "GET /status.json HTTP/1.1\r\nHost: 127.0.0.1:80\r\nConnection: close\r\n\r\n",
		  403, "not a loopback name" },
		{ "GET http://127.0.0.1/status.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		  "Connection: close\r\n\r\n", 403, "not a loopback name" },
	};
	/* Each request line with a NUL at the marked byte ('@'). */
	static const char *const nul_lines[] = {
		"GET /status.json@x HTTP/1.1",
		"GET /status.json@ HTTP/1.1",
		"GET /@status.json HTTP/1.1",
		"GET @/status.json HTTP/1.1",
		"GET /lookup?key=a@b HTTP/1.1",
		"GET /lookup?key=@ HTTP/1.1",
		"GET http://127.0.0.1:%d/status.json@ HTTP/1.1",
		"GET /status.json@HTTP/1.1 HTTP/1.1",
		"HEAD /ring.json@.bak HTTP/1.1",
	};
	hrt_serve s;

	three_nodes();
	start(&s, NULL);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int st = request_line(s.port, cases[i].req, -1);

		ck_assert_msg(st == cases[i].status, "request %zu got %d, not %d: %.300s", i, st,
			      cases[i].status, buf);
		ck_assert_msg(strstr(buf, cases[i].body), "request %zu: no %s in %.300s", i,
			      cases[i].body, buf);
	}
	for (size_t i = 0; i < sizeof nul_lines / sizeof nul_lines[0]; i++) {
		char fmt[384], line[256];
		int st, at;

		snprintf(line, sizeof line, nul_lines[i], s.port);
		at = (int)(strchr(line, '@') - line);
		snprintf(fmt, sizeof fmt, "%s\r\nHost: 127.0.0.1:%%d\r\nConnection: close\r\n\r\n",
			 line);
		/* The port is in the Host: the line has none left to fill. */
		st = request_line(s.port, fmt, at);
		ck_assert_msg(st == 400, "%s (@ a NUL) got %d: %.300s", nul_lines[i], st, buf);
		ck_assert_msg(!strncmp(line, "HEAD", 4) || strstr(buf, "NUL"), "%s: %.300s",
			      nul_lines[i], buf);
	}
	/* The same without the NUL: served. */
	ck_assert_int_eq(request_line(s.port, "GET /status.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
				      "Connection: close\r\n\r\n", -1), 200);
	/* A NUL %-encoded in the path, which libmicrohttpd decodes into one,
	 * too; in a query's value it is a byte of the key. */
	ck_assert_int_eq(request_line(s.port, "GET /status.json%%00 HTTP/1.1\r\n"
				      "Host: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", -1), 400);
	ck_assert_int_eq(request_line(s.port, "GET /status.json%%00.x HTTP/1.1\r\n"
				      "Host: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", -1), 400);
	ck_assert_int_eq(request_line(s.port, "GET /lookup?key=a%%00b HTTP/1.1\r\n"
				      "Host: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", -1), 200);
	ck_assert_ptr_nonnull(strstr(buf, "\"key\":\"a\\u0000b\""));
	still_serves(s.port);
	hrt_serve_stop(&s);
}
END_TEST

/* Whether 127.0.0.1:80 can be listened on here (root, and free). */
static int port_80_free(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(80) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* On port 80, the scheme's default, a loopback name without a port names
 * the server: served; a name that is not loopback still is not. */
START_TEST(host_without_port_on_port_80)
{
	static const char *const listen80[] = { "--listen", "127.0.0.1:80", NULL };
	static const struct { const char *host; int status; } hosts[] = {
		{ "127.0.0.1", 200 }, { "localhost", 200 }, { "LocalHost", 200 },
		{ "[::1]", 200 }, { "127.0.0.1:80", 200 }, { "127.1.2.3", 200 },
		{ "rebound.example", 403 }, { "127.0.0.1:8080", 403 }, { "10.0.0.1", 403 },
	};
	char req[256];
	hrt_serve s;

	if (!port_80_free()) {
		fprintf(stderr, "host_without_port_on_port_80: 127.0.0.1:80 is taken or not"
			" allowed here; skipped\n");
		return;
	}
	three_nodes();
	start(&s, listen80);
	ck_assert_int_eq(s.port, 80);
	for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
		int len = snprintf(req, sizeof req, "GET /status.json HTTP/1.1\r\nHost: %s\r\n"
				   "Connection: close\r\n\r\n", hosts[i].host);

		ck_assert_msg(raw(s.port, req, (size_t)len) == hosts[i].status,
			      "Host: %s on port 80: %.200s", hosts[i].host, buf);
	}
	ck_assert_int_eq(request_line(s.port, "GET http://localhost/status.json HTTP/1.1\r\n"
				      "Host: 127.0.0.1\r\nConnection: close\r\n\r\n", -1), 200);
	hrt_serve_stop(&s);
}
END_TEST

/* Whether the server has closed `fd` (within `ms`). */
static int closed_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, ms) <= 0)
		return 0;
	return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* Slow clients hold only their own connection: others are served at once
 * meanwhile, and one that goes quiet is closed after --http-timeout. */
START_TEST(slow_clients)
{
	static const char *const extra[] = { "--http-timeout", "2", NULL };
	hrt_serve s;
	int slow[8];
	char req[128];

	three_nodes();
	start(&s, extra);
	snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: ", s.port);
	for (int i = 0; i < 8; i++) {
		slow[i] = hrt_http_connect(s.port);
		/* Half a request, and then a byte now and then. */
		ck_assert_int_gt(send(slow[i], req, strlen(req), MSG_NOSIGNAL), 0);
	}
	for (int round = 0; round < 5; round++) {
		int64_t t0 = hrt_now_ms();

		for (int i = 0; i < 8; i++)
			send(slow[i], "x", 1, MSG_NOSIGNAL);
		still_serves(s.port);
		/* Generous: a loaded machine; the point is that nobody waits
		 * for the slow ones. */
		ck_assert_int_lt(hrt_now_ms() - t0, 1500);
		hrt_sleep_ms(300);
	}
	/* Now quiet: closed by the server after the timeout. */
	for (int i = 0; i < 8; i++) {
		ck_assert_msg(closed_within(slow[i], 15000), "slow connection %d not closed", i);
		close(slow[i]);
	}
	/* A connection that never says anything is closed too. */
	slow[0] = hrt_http_connect(s.port);
	ck_assert(closed_within(slow[0], 15000));
	close(slow[0]);
	still_serves(s.port);
	/* SIGTERM with a client mid-request: a clean, prompt exit. */
	slow[0] = hrt_http_connect(s.port);
	send(slow[0], req, strlen(req), MSG_NOSIGNAL);
	hrt_serve_stop(&s);
	close(slow[0]);
}
END_TEST

/* More connections than --max-connections: the extra ones wait in the
 * kernel's backlog, unanswered, and are served once a slot is free. */
START_TEST(connection_limit)
{
	static const char *const extra[] = { "--max-connections", "4", NULL };
	struct pollfd p;
	hrt_serve s;
	int held[4], fifth;
	char req[128];
	int len;

	three_nodes();
	start(&s, extra);
	for (int i = 0; i < 4; i++) {
		held[i] = hrt_http_connect(s.port);
		send(held[i], "GET", 3, MSG_NOSIGNAL);
	}
	hrt_sleep_ms(200); /* accepted by now */
	fifth = hrt_http_connect(s.port);
	len = snprintf(req, sizeof req, "GET /ring.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		       "Connection: close\r\n\r\n", s.port);
	ck_assert_int_eq(send(fifth, req, (size_t)len, MSG_NOSIGNAL), len);
	p = (struct pollfd){ .fd = fifth, .events = POLLIN };
	ck_assert_msg(poll(&p, 1, 1000) == 0, "a fifth connection was served");
	close(held[0]);
	hrt_http_read_all(fifth, buf, ANSWER_MAX);
	ck_assert_msg(!strncmp(buf, "HTTP/1.1 200", 12), "the fifth got: %.200s", buf);
	close(fifth);
	for (int i = 1; i < 4; i++)
		close(held[i]);
	hrt_serve_stop(&s);
}
END_TEST

/* --listen: loopback unless told otherwise, and checked before etcd is
 * asked anything (no etcd here: 127.0.0.1:1 is closed). */
START_TEST(listen_options)
{
	static const struct { const char *listen; const char *msg; } bad[] = {
		{ "0.0.0.0:8080", "not a loopback address: add --allow-remote" },
		{ "[::]:8080", "not a loopback address" },
		{ "127.0.0.1", "--listen wants HOST:PORT" },
		{ "127.0.0.1:65536", "bad port" },
		{ "127.0.0.1:-1", "bad port" },
		{ "127.0.0.1:80x", "bad port" },
		{ "cache.example:80", "bad address" },
		{ "[::1:80", "bad address" },
	};
	hrt_cli_run run;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *argv[] = { "serve", "--endpoints", "127.0.0.1:1", "--listen",
				       bad[i].listen, NULL };

		hrt_cli_run_cmd(&run, NULL, argv);
		ck_assert_msg(run.status == 2, "--listen %s: exit %d", bad[i].listen, run.status);
		ck_assert_msg(strstr(run.err, bad[i].msg), "--listen %s: %s", bad[i].listen, run.err);
	}
	{
		const char *argv[] = { "serve", "--endpoints", "127.0.0.1:1", "--ack-prefix",
				       "/a/", NULL };

		hrt_cli_run_cmd(&run, NULL, argv);
		ck_assert_int_eq(run.status, 2);
		ck_assert_ptr_nonnull(strstr(run.err, "--ack-prefix needs --client-id"));
	}
}
END_TEST

/* A port already taken: one error line, exit 1. */
START_TEST(port_in_use)
{
	hrt_serve s;
	hrt_cli_run run;
	char listen[32];

	three_nodes();
	start(&s, NULL);
	snprintf(listen, sizeof listen, "127.0.0.1:%d", s.port);
	{
		const char *argv[] = { "serve", "--endpoints", hrt_etcd_endpoints(etcd), "--prefix",
				       PREFIX, "--listen", listen, NULL };

		hrt_cli_run_cmd(&run, NULL, argv);
	}
	ck_assert_int_eq(run.status, 1);
	ck_assert_ptr_nonnull(strstr(run.err, "cannot listen on 127.0.0.1 port"));
	hrt_serve_stop(&s);
}
END_TEST

/* GET of `path`: its status, the body parsed when it is 200. */
static int get_json(int port, const char *path, cJSON **out)
{
	int status = hrt_http_request(port, "GET", path, buf, ANSWER_MAX);

	*out = NULL;
	if (status == 200) {
		ck_assert_ptr_nonnull(strstr(buf, "Content-Type: application/json"));
		*out = cJSON_Parse(hrt_http_body(buf));
		ck_assert_msg(*out != NULL, "%s is not JSON: %.300s", path, hrt_http_body(buf));
	}
	return status;
}

static const char *str_of(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItem(o, name);

	ck_assert_msg(cJSON_IsString(v), "no string %s", name);
	return v->valuestring;
}

/* A bad /lookup: 400 with `msg` in its body. */
static void bad_lookup(int port, const char *path, const char *msg)
{
	ck_assert_int_eq(hrt_http_request(port, "GET", path, buf, ANSWER_MAX), 400);
	ck_assert_msg(strstr(hrt_http_body(buf), msg), "%s answered %s", path,
		      hrt_http_body(buf));
}

#define NODES_MAX 8
#define KEYS 60

struct expect {
	char id[NODES_MAX][64];
	unsigned write[NODES_MAX], read[NODES_MAX];
	int n;
};

static unsigned *slot(struct expect *e, const char *id, int read)
{
	int i;

	for (i = 0; i < e->n && strcmp(e->id[i], id); i++)
		;
	if (i == e->n) {
		ck_assert_int_lt(e->n, NODES_MAX);
		snprintf(e->id[e->n++], sizeof e->id[0], "%s", id);
	}
	return read ? &e->read[i] : &e->write[i];
}

START_TEST(lookup_path)
{
	char path[128], hot_node[64], hot_read[64], *big;
	const cJSON *l, *hot;
	struct expect e = { .n = 0 };
	int64_t base_ms;
	uint64_t revision;
	unsigned total = 0;
	hrt_serve s;
	cJSON *j;
	size_t len;

	hrt_del(hrt_etcd_client_url(etcd, 0), PREFIX "cache-d");
	three_nodes();
	start(&s, NULL);
	j = ring_json(s.port); /* the first sample of the counts */
	base_ms = hrt_now_ms();
	revision = (uint64_t)cJSON_GetObjectItem(cJSON_GetObjectItem(j, "ring"),
						 "revision")->valuedouble;
	cJSON_Delete(j);

	/* Two thirds of the lookups are of one key. */
	for (int i = 0; i < KEYS; i++) {
		const cJSON *r;

		if (i % 3)
			snprintf(path, sizeof path, "/lookup?key=hot");
		else
			snprintf(path, sizeof path, "/lookup?key=cold-%d", i);
		ck_assert_int_eq(get_json(s.port, path, &j), 200);
		ck_assert_str_eq(str_of(j, "key"), i % 3 ? "hot" : path + strlen("/lookup?key="));
		r = cJSON_GetObjectItem(j, "replicas");
		ck_assert_int_eq(cJSON_GetArraySize(r), 3);
		/* The preference list starts at the write owner. */
		ck_assert_str_eq(cJSON_GetArrayItem(r, 0)->valuestring, str_of(j, "node"));
		ck_assert_str_ne(str_of(j, "addr"), "");
		ck_assert_str_ne(str_of(j, "read_addr"), "");
		ck_assert_uint_eq((uint64_t)cJSON_GetObjectItem(j, "revision")->valuedouble,
				  revision);
		++*slot(&e, str_of(j, "node"), 0);
		++*slot(&e, str_of(j, "read_node"), 1);
		if (i == 1) {
			snprintf(hot_node, sizeof hot_node, "%s", str_of(j, "node"));
			snprintf(hot_read, sizeof hot_read, "%s", str_of(j, "read_node"));
		}
		cJSON_Delete(j);
	}

	/* Rates need a second sample a second after the first. */
	while (hrt_now_ms() - base_ms < 1100)
		hrt_sleep_ms(50);
	j = ring_json(s.port);
	l = cJSON_GetObjectItem(j, "lookups");
	ck_assert_double_ge(cJSON_GetObjectItem(l, "interval_s")->valuedouble, 1.0);
	cJSON_ArrayForEach(hot, cJSON_GetObjectItem(l, "nodes")) {
		const char *id = str_of(hot, "node");
		double dt = cJSON_GetObjectItem(l, "interval_s")->valuedouble;
		unsigned w = *slot(&e, id, 0), r = *slot(&e, id, 1);

		ck_assert_int_eq(cJSON_GetObjectItem(hot, "write")->valueint, (int)w);
		ck_assert_int_eq(cJSON_GetObjectItem(hot, "read")->valueint, (int)r);
		ck_assert_double_eq_tol(cJSON_GetObjectItem(hot, "write_per_s")->valuedouble * dt,
					w, 0.1);
		ck_assert_double_eq_tol(cJSON_GetObjectItem(hot, "read_per_s")->valuedouble * dt,
					r, 0.1);
		total += w;
	}
	ck_assert_uint_eq(total, KEYS);
	/* The hot key first, with the owners /lookup gave it. */
	hot = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "hot_keys"), 0);
	ck_assert_ptr_nonnull(hot);
	ck_assert_str_eq(str_of(hot, "key"), "hot");
	ck_assert_str_eq(str_of(hot, "node"), hot_node);
	ck_assert_str_eq(str_of(hot, "read_node"), hot_read);
	ck_assert_double_eq_tol(cJSON_GetObjectItem(hot, "share")->valuedouble, 2.0 / 3, 0.05);
	ck_assert_double_gt(cJSON_GetObjectItem(hot, "rate")->valuedouble, 0);
	cJSON_Delete(j);
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/metrics", buf, ANSWER_MAX), 200);
	ck_assert_ptr_nonnull(strstr(buf, "hashring_hot_key_share_ratio{rank=\"1\",key=\"hot\""));

	/* Decoded keys; R bounded by the nodes there are. */
	ck_assert_int_eq(get_json(s.port, "/lookup?key=a%20b%2Fc&replicas=1", &j), 200);
	ck_assert_str_eq(str_of(j, "key"), "a b/c");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "replicas")), 1);
	cJSON_Delete(j);
	ck_assert_int_eq(get_json(s.port, "/lookup?replicas=64&key=", &j), 200);
	ck_assert_str_eq(str_of(j, "key"), "");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "replicas")), 3);
	cJSON_Delete(j);
	ck_assert_int_eq(hrt_http_request(s.port, "HEAD", "/lookup?key=x", buf, ANSWER_MAX), 200);
	ck_assert_str_eq(hrt_http_body(buf), "");

	/* Bad queries: 400 naming what is wrong. */
	bad_lookup(s.port, "/lookup", "no key");
	bad_lookup(s.port, "/lookup?replicas=2", "no key");
	bad_lookup(s.port, "/lookup?key=a&key=b", "one key");
	bad_lookup(s.port, "/lookup?key=a&replicas=1&replicas=2", "at most one replicas");
	bad_lookup(s.port, "/lookup?key=a&replicas=0", "replicas=0: a number of 1 to 64");
	bad_lookup(s.port, "/lookup?key=a&replicas=65", "replicas=65");
	bad_lookup(s.port, "/lookup?key=a&replicas=99999999999999999999", "a number of 1 to 64");
	bad_lookup(s.port, "/lookup?key=a&replicas=-1", "replicas=-1");
	bad_lookup(s.port, "/lookup?key=a&replicas=2x", "replicas=2x");
	bad_lookup(s.port, "/lookup?key=a&replicas", "replicas=:");
	bad_lookup(s.port, "/lookup?key=a&node=b", "unknown parameter node");
	ck_assert_int_eq(hrt_http_request(s.port, "POST", "/lookup?key=a", buf, ANSWER_MAX), 405);
	/* A key of 4096 bytes is one; of 4097, too long. */
	big = malloc(8192);
	ck_assert_ptr_nonnull(big);
	for (int n = 4096; n <= 4097; n++) {
		len = (size_t)snprintf(big, 8192, "GET /lookup?key=%0*d HTTP/1.1\r\n"
				       "Host: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
				       n, 7, s.port);
		ck_assert_int_eq(hrt_http_raw(s.port, big, len, buf, ANSWER_MAX),
				 n == 4096 ? 200 : 400);
	}
	ck_assert_ptr_nonnull(strstr(hrt_http_body(buf), "key of 4097 bytes: at most 4096"));
	free(big);

	/* Bad queries looked nothing up: the good ones since were 4. */
	j = ring_json(s.port);
	total = 0;
	cJSON_ArrayForEach(hot, cJSON_GetObjectItem(cJSON_GetObjectItem(j, "lookups"), "nodes"))
		total += (unsigned)cJSON_GetObjectItem(hot, "write")->valueint;
	ck_assert_uint_eq(total, KEYS + 4);
	cJSON_Delete(j);
	hrt_serve_stop(&s);

	/* A ring with no node: 503. */
	start_at(&s, "/serve/none/", NULL);
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/lookup?key=a", buf, ANSWER_MAX), 503);
	ck_assert_ptr_nonnull(strstr(hrt_http_body(buf), "the ring has no node"));
	hrt_serve_stop(&s);
}
END_TEST

/* A client that trickles its request, a byte at a time well inside
 * --http-timeout, is closed once --request-timeout is over, while a
 * normal client is served meanwhile; one that keeps a connection alive
 * and asks again and again, each request whole, is never cut. */
START_TEST(trickling_client)
{
	static const char *const extra[] = { "--http-timeout", "3", "--request-timeout",
					     "4", NULL };
	hrt_serve s;
	char req[160];
	int slow, alive;
	int64_t t0;

	three_nodes();
	start(&s, extra);
	snprintf(req, sizeof req, "GET /ring.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
		 s.port);
	slow = hrt_http_connect(s.port);
	alive = hrt_http_connect(s.port);
	t0 = hrt_now_ms();
	for (int i = 0;; i++) {
		/* One byte a second: the idle timeout never fires. */
		if (send(slow, i % 2 ? "X" : "-", 1, MSG_NOSIGNAL) != 1 ||
		    closed_within(slow, 0))
			break;
		/* Meanwhile the others are served, on a connection of their
		 * own and on one kept alive across the deadline. */
		still_serves(s.port);
		ck_assert_int_gt(send(alive, req, strlen(req), MSG_NOSIGNAL), 0);
		ck_assert_int_gt(recv(alive, buf, ANSWER_MAX, 0), 0);
		ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 200"));
		ck_assert_msg(hrt_now_ms() - t0 < 30000, "the trickling client was never closed");
		hrt_sleep_ms(1000);
	}
	/* Closed by the deadline, not by the idle timeout or a full buffer:
	 * it had sent a few bytes, each inside the idle timeout. */
	ck_assert_int_ge(hrt_now_ms() - t0, 4000);
	close(slow);
	ck_assert_int_gt(send(alive, req, strlen(req), MSG_NOSIGNAL), 0);
	ck_assert_int_gt(recv(alive, buf, ANSWER_MAX, 0), 0);
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 200"));
	close(alive);
	hrt_serve_stop(&s);
}
END_TEST

/* GET of `path`: its status, with the body's "error" when it is 503
 * JSON (NULL otherwise, or when the body is not JSON). */
static int get_error(int port, const char *path, char *error, size_t size)
{
	int status = hrt_http_request(port, "GET", path, buf, ANSWER_MAX);
	cJSON *j = cJSON_Parse(hrt_http_body(buf));
	const cJSON *e = cJSON_GetObjectItem(j, "error");

	error[0] = '\0';
	if (status == 503) {
		ck_assert_ptr_nonnull(strstr(buf, "Content-Type: application/json"));
		ck_assert_msg(cJSON_IsString(e), "503 without an error: %.300s",
			      hrt_http_body(buf));
		ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "ring")));
		snprintf(error, size, "%s", e->valuestring);
	}
	cJSON_Delete(j);
	return status;
}

/* etcd down when serve starts: it listens at once, and the page,
 * /ring.json, /lookup and /metrics say there is no ring yet and why,
 * until etcd comes up; then the ring is served. */
START_TEST(etcd_down_at_start)
{
	hrt_etcd_cluster *later = hrt_etcd_start(1, NULL);
	hrt_serve s;
	char error[512];
	int64_t deadline;
	cJSON *j;

	ck_assert_ptr_nonnull(later);
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(later, 0), PREFIX "cache-a",
				 "{\"addr\":\"127.0.0.1:11211\"}"), 0);
	ck_assert_int_eq(hrt_etcd_stop_member(later, 0), 0);
	/* Listening before any answer from etcd (hrt_serve_start waits for
	 * the line); the default --timeout (3 s) does not end it. */
	hrt_serve_start(&s, hrt_etcd_endpoints(later), PREFIX, NULL);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(get_error(s.port, "/ring.json", error, sizeof error), 503);
		ck_assert_msg(strstr(error, "no ring yet"), "%s", error);
		ck_assert_int_eq(get_error(s.port, "/lookup?key=a", error, sizeof error), 503);
		ck_assert_msg(strstr(error, "no ring yet"), "%s", error);
		ck_assert_int_eq(hrt_http_request(s.port, "GET", "/metrics", buf, ANSWER_MAX), 200);
		ck_assert_ptr_nonnull(strstr(hrt_http_body(buf), "# no ring yet"));
		ck_assert_int_eq(hrt_http_request(s.port, "GET", "/", buf, ANSWER_MAX), 200);
		hrt_sleep_ms(3500);
	}
	/* By now the watcher has failed to connect, and says how. */
	ck_assert_int_eq(get_error(s.port, "/ring.json", error, sizeof error), 503);
	ck_assert_msg(strstr(error, "no ring yet, etcd unreachable: "), "%s", error);
	ck_assert_msg(strstr(error, "127.0.0.1"), "%s", error);

	ck_assert_int_eq(hrt_etcd_restart_member(later, 0), 0);
	deadline = hrt_now_ms() + 30000;
	while (get_error(s.port, "/ring.json", error, sizeof error) == 503) {
		ck_assert_msg(hrt_now_ms() < deadline, "no ring after etcd came up: %s", error);
		hrt_sleep_ms(200);
	}
	j = ring_json(s.port);
	ck_assert_ptr_nonnull(node_named(cJSON_GetObjectItem(j, "ring"), "cache-a"));
	cJSON_Delete(j);
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/lookup?key=a", buf, ANSWER_MAX), 200);
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/metrics", buf, ANSWER_MAX), 200);
	ck_assert_ptr_null(strstr(hrt_http_body(buf), "# no ring yet"));
	hrt_serve_stop(&s);
	hrt_etcd_destroy(later);
}
END_TEST

/* ---- a ring of 10,000 nodes --------------------------------------------------- */

/* The revision of the ring serve looks keys up in. */
static uint64_t lookup_revision(int port)
{
	cJSON *j;
	uint64_t rev;

	ck_assert_int_eq(get_json(port, "/lookup?key=probe", &j), 200);
	rev = (uint64_t)cJSON_GetObjectItem(j, "revision")->valuedouble;
	cJSON_Delete(j);
	return rev;
}

/* Puts one more node, `name`-k, into the big ring and waits until serve
 * looks keys up in the new ring, which it has then to draw. */
static void big_change(int port, const char *name, int k)
{
	char key[64];
	uint64_t rev = lookup_revision(port);
	int64_t deadline = hrt_now_ms() + 30000;

	snprintf(key, sizeof key, BIG_PREFIX "%s-%d", name, k);
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), key,
				 "{\"addr\":\"127.0.0.1:11299\"}"), 0);
	while (lookup_revision(port) == rev) {
		ck_assert_msg(hrt_now_ms() < deadline, "serve never saw %s", key);
		hrt_sleep_ms(5);
	}
}

/* Deletes what big_change() put (a failed run's too). */
static void big_extras_del(const char *name, int n)
{
	char key[64];

	for (int k = 0; k < n; k++) {
		snprintf(key, sizeof key, BIG_PREFIX "%s-%d", name, k);
		hrt_del(hrt_etcd_client_url(etcd, 0), key);
	}
}

/* serve following the big ring, once it has answered a /ring.json of it
 * (drawn or made, seconds before the fixes). */
static void start_big(hrt_serve *s)
{
	int64_t deadline = hrt_now_ms() + 90000;
	int st;

	hrt_serve_start(s, hrt_etcd_endpoints(etcd), BIG_PREFIX, NULL);
	while ((st = hrt_http_request(s->port, "GET", "/ring.json", buf, ANSWER_MAX)) != 200) {
		ck_assert_msg(hrt_now_ms() < deadline, "no ring of %d nodes after 90 s: %d",
			      BIG_NODES, st);
		hrt_sleep_ms(20);
	}
}

/* GET `path` sent on a connection of its own, its answer left unread. */
static int send_get(int port, const char *path)
{
	char req[256];
	int fd = hrt_http_connect(port);
	int len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
			   "Connection: close\r\n\r\n", path, port);

	ck_assert_int_eq(send(fd, req, (size_t)len, MSG_NOSIGNAL), len);
	return fd;
}

/* After each change of a ring of 10,000 nodes, the first /ring.json asks
 * for what has to be drawn again, which took seconds on the server's only
 * HTTP thread: a /lookup meanwhile is still answered at once.  /ring.json
 * gives the ring it drew with the history up to that ring. */
START_TEST(lookup_while_drawing)
{
	char *big = malloc(BIG_ANSWER_MAX);
	hrt_serve s;

	ck_assert_ptr_nonnull(big);
	big_extras_del("during", 3);
	start_big(&s);
	for (int k = 0; k < 3; k++) {
		int fd, st;
		int64_t t0, lookup_ms;
		cJSON *j, *ring;

		big_change(s.port, "during", k);
		fd = send_get(s.port, "/ring.json");
		hrt_sleep_ms(50); /* on its way */
		t0 = hrt_now_ms();
		st = hrt_http_request(s.port, "GET", "/lookup?key=during", buf, ANSWER_MAX);
		lookup_ms = hrt_now_ms() - t0;
		/* Generous for a loaded machine: it used to wait for seconds. */
		ck_assert_msg(lookup_ms < 1000, "/lookup took %lld ms while /ring.json was made",
			      (long long)lookup_ms);
		ck_assert_int_eq(st, 200);
		hrt_http_read_all(fd, big, BIG_ANSWER_MAX);
		close(fd);
		ck_assert_msg(!strncmp(big, "HTTP/1.1 200", 12), "/ring.json: %.200s", big);
		j = cJSON_Parse(hrt_http_body(big));
		ck_assert_ptr_nonnull(j);
		ring = cJSON_GetObjectItem(j, "ring");
		ck_assert_int_ge(cJSON_GetArraySize(cJSON_GetObjectItem(ring, "nodes")), BIG_NODES);
		ck_assert_double_eq(cJSON_GetObjectItem(ring, "revision")->valuedouble,
				    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "history"), 0),
							"revision")->valuedouble);
		cJSON_Delete(j);
	}
	hrt_serve_stop(&s);
	big_extras_del("during", 3);
	free(big);
}
END_TEST

/* Every family `hashring serve`'s /metrics has with the defaults. */
static const char *const families[] = {
	"hashring_build_info", "hashring_ring_revision", "hashring_ring_info",
	"hashring_confirmed_revision", "hashring_unconfirmed_seconds",
	"hashring_rings_published_total", "hashring_resyncs_total",
	"hashring_reconnects_total", "hashring_watcher_clients",
	"hashring_etcd_endpoint_info", "hashring_ring_nodes", "hashring_ring_points",
	"hashring_node_info", "hashring_node_state", "hashring_node_weight",
	"hashring_node_points", "hashring_node_share_ratio", "hashring_node_lookups_total",
	"hashring_hot_key_lookups_per_second", "hashring_hot_key_share_ratio",
};
#define FAMILIES (sizeof families / sizeof families[0])

/*
 * `text` (NUL-terminated) is an exposition that holds every family above:
 * each one's HELP and TYPE once, its samples right after them and nowhere
 * else (families in any order), comment lines aside.  Returns "" or what
 * is wrong, in `why`.
 */
static const char *exposition_bad(const char *text, char *why, size_t size)
{
	int seen[FAMILIES] = { 0 };
	char current[128] = "";
	size_t k;

	why[0] = '\0';
	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char name[128];
		size_t n;

		if (!end) {
			snprintf(why, size, "no newline after \"%.60s\"", line);
			return why;
		}
		if (!strncmp(line, "# TYPE ", 7) || !strncmp(line, "# HELP ", 7)) {
			n = strcspn(line + 7, " \n");
			snprintf(name, sizeof name, "%.*s", (int)n, line + 7);
			if (strcmp(name, current)) {
				for (k = 0; k < FAMILIES && strcmp(families[k], name); k++)
					;
				if (k == FAMILIES) {
					snprintf(why, size, "unknown family %s", name);
					return why;
				}
				if (seen[k]++) {
					snprintf(why, size, "family %s twice", name);
					return why;
				}
				snprintf(current, sizeof current, "%s", name);
			}
		} else if (line[0] != '#') {
			n = strcspn(line, "{ \n");
			if (n != strlen(current) || strncmp(line, current, n)) {
				snprintf(why, size, "sample \"%.60s\" outside family %s", line,
					 current);
				return why;
			}
		}
		line += len + 1;
	}
	for (k = 0; k < FAMILIES; k++)
		if (!seen[k]) {
			snprintf(why, size, "no family %s", families[k]);
			return why;
		}
	return why;
}

/* The body of the answer on `fd` (read to its end into big), which must
 * be a 200. */
static const char *answer_of(int fd, char *big, const char *path)
{
	hrt_http_read_all(fd, big, BIG_ANSWER_MAX);
	close(fd);
	ck_assert_msg(!strncmp(big, "HTTP/1.1 200", 12), "%s: %.200s", path, big);
	return hrt_http_body(big);
}

#define SLOW_AT_ONCE 8

/* Whether every one of `n` sockets has something to read. */
static int all_readable(const int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		struct pollfd p = { .fd = fds[i], .events = POLLIN };

		if (poll(&p, 1, 0) != 1)
			return 0;
	}
	return 1;
}

/*
 * /metrics and /ring.json of 10,000 nodes, several at once, used to be
 * made one after the other on the server's only HTTP thread: a /lookup
 * meanwhile waited until they all were made.  Now they are made
 * elsewhere, and /lookup is answered again and again before the last of
 * them begins to arrive (an order, not a speed).  What they answer is
 * whole: /ring.json parses, /metrics is a valid exposition with every
 * family (the ring's part made once per ring, the client's per scrape)
 * and, once the ring changes, the node families of the new ring.
 */
START_TEST(slow_answers_beside_lookups)
{
	char *big = malloc(BIG_ANSWER_MAX), why[256];
	int64_t deadline;
	hrt_serve s;

	ck_assert_ptr_nonnull(big);
	big_extras_del("beside", 1);
	start_big(&s);
	/* The ring's part of /metrics comes a moment after the ring. */
	deadline = hrt_now_ms() + 60000;
	for (;;) {
		ck_assert_int_eq(hrt_http_request(s.port, "GET", "/metrics", big,
						  BIG_ANSWER_MAX), 200);
		if (strstr(big, "\nhashring_node_share_ratio{"))
			break;
		ck_assert_msg(hrt_now_ms() < deadline, "no node families in /metrics: %.300s",
			      hrt_http_body(big));
		hrt_sleep_ms(100);
	}
	ck_assert_str_eq(exposition_bad(hrt_http_body(big), why, sizeof why), "");
	for (int round = 0; round < 2; round++) {
		int slow[2 * SLOW_AT_ONCE], before_last = 0;

		for (int i = 0; i < SLOW_AT_ONCE; i++) {
			slow[2 * i] = send_get(s.port, "/metrics");
			slow[2 * i + 1] = send_get(s.port, "/ring.json");
		}
		hrt_sleep_ms(20); /* on their way */
		for (int i = 0; i < 200 && !all_readable(slow, 2 * SLOW_AT_ONCE); i++) {
			int64_t t0 = hrt_now_ms(), ms;
			int st = hrt_http_request(s.port, "GET", "/lookup?key=beside", buf,
						  ANSWER_MAX);

			ms = hrt_now_ms() - t0;
			ck_assert_int_eq(st, 200);
			/* Generous for a loaded machine. */
			ck_assert_msg(ms < 1000, "/lookup took %lld ms beside %d /metrics and"
				      " %d /ring.json", (long long)ms, SLOW_AT_ONCE, SLOW_AT_ONCE);
			before_last += !all_readable(slow, 2 * SLOW_AT_ONCE);
		}
		ck_assert_msg(before_last >= 3, "%d /lookup answered before the last of %d"
			      " /metrics and /ring.json began", before_last, 2 * SLOW_AT_ONCE);
		for (int i = 0; i < SLOW_AT_ONCE; i++) {
			int *metrics = &slow[2 * i], *ring = &slow[2 * i + 1];
			const char *body = answer_of(*metrics, big, "/metrics");
			cJSON *j;

			ck_assert_msg(!exposition_bad(body, why, sizeof why)[0], "/metrics: %s", why);
			ck_assert_ptr_nonnull(strstr(body, "\nhashring_node_lookups_total{"
						     "node=\"node-"));
			body = answer_of(*ring, big, "/ring.json");
			j = cJSON_Parse(body);
			ck_assert_ptr_nonnull(j);
			ck_assert_int_ge(cJSON_GetArraySize(cJSON_GetObjectItem(
						 cJSON_GetObjectItem(j, "ring"), "nodes")), BIG_NODES);
			cJSON_Delete(j);
		}
		/* The next ring: its node families come in their turn. */
		if (round == 0) {
			big_change(s.port, "beside", 0);
			deadline = hrt_now_ms() + 60000;
			for (;;) {
				ck_assert_int_eq(hrt_http_request(s.port, "GET", "/metrics", big,
								  BIG_ANSWER_MAX), 200);
				if (strstr(big, "\nhashring_node_info{node=\"beside-0\""))
					break;
				ck_assert_msg(hrt_now_ms() < deadline,
					      "no beside-0 in /metrics' node families");
				hrt_sleep_ms(100);
			}
			ck_assert_str_eq(exposition_bad(hrt_http_body(big), why, sizeof why), "");
		}
	}
	hrt_serve_stop(&s);
	big_extras_del("beside", 1);
	free(big);
}
END_TEST

/* SIGTERM while a ring of 10,000 nodes is drawn (its first /ring.json
 * asked for), its metrics made, and /metrics and /ring.json answers made
 * or waiting for their turn: a clean exit, at once rather than once the
 * work is done. */
START_TEST(sigterm_while_drawing)
{
	hrt_serve s;
	int64_t t0, took;
	int fd, slow[8];

	big_extras_del("sigterm", 1);
	start_big(&s);
	big_change(s.port, "sigterm", 0);
	fd = send_get(s.port, "/ring.json");
	/* And answers being made, and waiting their turn, on their
	 * suspended connections. */
	for (int i = 0; i < 4; i++) {
		slow[2 * i] = send_get(s.port, "/metrics");
		slow[2 * i + 1] = send_get(s.port, i % 2 ? "/ring.json" : "/status.json");
	}
	hrt_sleep_ms(100);
	t0 = hrt_now_ms();
	hrt_serve_stop(&s); /* exit status 0, nothing on stderr but log lines */
	took = hrt_now_ms() - t0;
	close(fd);
	for (int i = 0; i < 8; i++)
		close(slow[i]);
	/* Generous for a loaded machine: it took as long as the drawing. */
	ck_assert_msg(took < 2000, "serve took %lld ms to exit after SIGTERM", (long long)took);
	big_extras_del("sigterm", 1);
}
END_TEST

static size_t body_len(void)
{
	const char *b = hrt_http_body(buf);

	return b ? strlen(b) : 0;
}

/* /nodes.json?query: 200, parsed; its rows' ids in *rows. */
static cJSON *nodes_page(int port, const char *query, const cJSON **rows)
{
	char path[512];
	cJSON *j;

	snprintf(path, sizeof path, "/nodes.json%s", query);
	ck_assert_int_eq(get_json(port, path, &j), 200);
	*rows = cJSON_GetObjectItem(j, "rows");
	ck_assert_ptr_nonnull(*rows);
	return j;
}

static double num_of(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItem(o, name);

	ck_assert_msg(cJSON_IsNumber(v), "no number %s", name);
	return v->valuedouble;
}

static double load_of(const cJSON *row)
{
	double fair = num_of(row, "fair_write");

	return fair > 0 ? num_of(row, "share_write") / fair : 0;
}

/* What the page polls stays small at 10,000 nodes: /status.json each
 * second, /overview.json (the ring drawn for a page, the summary) for
 * each ring, and /nodes.json a page of nodes at a time: the most loaded
 * first, or searched, filtered by state, sorted by share or id, paged. */
START_TEST(page_answers_at_10000_nodes)
{
	const cJSON *rows, *row, *ring;
	hrt_serve s;
	cJSON *j;
	double prev;
	char want[32];
	int64_t deadline;

	big_extras_del("during", 3); /* a failed run's */
	big_extras_del("sigterm", 1);
	start_big(&s);
	deadline = hrt_now_ms() + 30000;
	while (get_json(s.port, "/status.json", &j) != 200) {
		ck_assert_msg(hrt_now_ms() < deadline, "the ring is never drawn");
		hrt_sleep_ms(20);
	}
	ck_assert_uint_lt(body_len(), 2048);
	ring = cJSON_GetObjectItem(j, "ring");
	ck_assert_int_eq(num_of(ring, "nodes"), BIG_NODES);
	ck_assert_int_eq(num_of(ring, "points"), 200 * BIG_NODES);
	cJSON_Delete(j);

	ck_assert_int_eq(get_json(s.port, "/overview.json", &j), 200);
	ck_assert_uint_lt(body_len(), 256 * 1024);
	ring = cJSON_GetObjectItem(j, "ring");
	ck_assert_int_eq(num_of(cJSON_GetObjectItem(ring, "states"), "warming"), 1);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(ring, "zones")), 4);
	ck_assert_int_le(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(ring, "arcs"),
								"write")), 1024);
	ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(ring, "takeover")), 0);
	ck_assert_double_gt(num_of(cJSON_GetObjectItem(ring, "load"), "max"), 1.0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "history")), 1);
	cJSON_Delete(j);

	/* The most loaded first, 50 of them. */
	j = nodes_page(s.port, "", &rows);
	ck_assert_uint_lt(body_len(), 32 * 1024);
	ck_assert_int_eq(num_of(j, "total"), BIG_NODES);
	ck_assert_int_eq(num_of(j, "matched"), BIG_NODES);
	ck_assert_int_eq(cJSON_GetArraySize(rows), 50);
	prev = 1e9;
	cJSON_ArrayForEach(row, rows) {
		ck_assert_double_le(load_of(row), prev);
		prev = load_of(row);
	}
	cJSON_Delete(j);
	/* The next page goes on where it ended. */
	j = nodes_page(s.port, "?offset=50&limit=10", &rows);
	ck_assert_int_eq(cJSON_GetArraySize(rows), 10);
	ck_assert_double_le(load_of(cJSON_GetArrayItem(rows, 0)), prev);
	cJSON_Delete(j);
	/* A search: by id (any case), address or zone. */
	j = nodes_page(s.port, "?q=NODE-004242", &rows);
	ck_assert_int_eq(num_of(j, "matched"), 1);
	ck_assert_str_eq(str_of(cJSON_GetArrayItem(rows, 0), "id"), "node-004242");
	ck_assert_str_eq(str_of(cJSON_GetArrayItem(rows, 0), "addr"), "10.0.16.146:11211");
	cJSON_Delete(j);
	j = nodes_page(s.port, "?q=z3&sort=id&limit=3", &rows);
	ck_assert_int_eq(num_of(j, "matched"), BIG_NODES / 4);
	ck_assert_str_eq(str_of(cJSON_GetArrayItem(rows, 0), "id"), "node-000003");
	ck_assert_str_eq(str_of(cJSON_GetArrayItem(rows, 1), "id"), "node-000007");
	cJSON_Delete(j);
	j = nodes_page(s.port, "?state=warming", &rows);
	ck_assert_int_eq(num_of(j, "matched"), 1);
	ck_assert_str_eq(str_of(cJSON_GetArrayItem(rows, 0), "id"), "node-000005");
	cJSON_Delete(j);
	j = nodes_page(s.port, "?sort=share&limit=20", &rows);
	prev = 1;
	cJSON_ArrayForEach(row, rows) {
		ck_assert_double_le(num_of(row, "share_write"), prev);
		prev = num_of(row, "share_write");
	}
	cJSON_Delete(j);
	j = nodes_page(s.port, "?q=nothing-like-it", &rows);
	ck_assert_int_eq(num_of(j, "matched"), 0);
	ck_assert_int_eq(cJSON_GetArraySize(rows), 0);
	cJSON_Delete(j);
	/* The node a key was looked up on comes first by lookups. */
	ck_assert_int_eq(get_json(s.port, "/lookup?key=hot", &j), 200);
	snprintf(want, sizeof want, "%s", str_of(j, "node"));
	cJSON_Delete(j);
	hrt_sleep_ms(1100); /* a second sample of the counts, for a rate */
	j = nodes_page(s.port, "?sort=lookups&limit=1", &rows);
	cJSON_Delete(j);
	j = nodes_page(s.port, "?sort=lookups&limit=1", &rows);
	ck_assert_str_eq(str_of(cJSON_GetArrayItem(rows, 0), "id"), want);
	ck_assert_double_eq(num_of(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 0), "lookups"),
				   "write"), 1);
	cJSON_Delete(j);

	/* Bad queries: 400 naming what is wrong. */
	bad_lookup(s.port, "/nodes.json?sort=weight", "sort=weight: load, share, id or lookups");
	bad_lookup(s.port, "/nodes.json?limit=0", "limit=0: a number of 1 to 1000");
	bad_lookup(s.port, "/nodes.json?limit=1001", "limit=1001");
	bad_lookup(s.port, "/nodes.json?offset=-1", "offset=-1");
	bad_lookup(s.port, "/nodes.json?state=gone", "state=gone: active, warming or draining");
	bad_lookup(s.port, "/nodes.json?page=2", "unknown parameter page");
	hrt_serve_stop(&s);
}
END_TEST

/* ---- extreme weights ------------------------------------------------------------- */

#define EXTREME_PREFIX "/serve/extreme/"
#define EXTREME_RDV_PREFIX "/serve/extreme-rdv/"

/* Every number of the JSON text `s` (outside its strings) is short: no
 * load of 300 digits. */
static void numbers_short(const char *path, const char *s)
{
	for (const char *p = s; *p; p++) {
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++)
				if (*p == '\\' && p[1])
					p++;
			if (!*p)
				break;
		} else if (*p == '-' || (*p >= '0' && *p <= '9')) {
			size_t n = strspn(p, "0123456789+-.eE");

			ck_assert_msg(n <= 24, "%s: a number of %zu characters: %.40s", path, n, p);
			p += n - 1;
		}
	}
}

/* Every number in `j` is finite: cJSON reads 1e999 as infinite. */
static void numbers_finite(const char *path, const cJSON *j)
{
	const cJSON *c;

	if (cJSON_IsNumber(j))
		ck_assert_msg(isfinite(j->valuedouble), "%s: %s is not finite", path,
			      j->string ? j->string : "an element");
	cJSON_ArrayForEach(c, j)
		numbers_finite(path, c);
}

/* GET `path`: 200 and JSON of short, finite numbers, parsed. */
static cJSON *sane_json(int port, const char *path)
{
	cJSON *j;

	ck_assert_int_eq(get_json(port, path, &j), 200);
	numbers_short(path, hrt_http_body(buf));
	numbers_finite(path, j);
	return j;
}

/* Every JSON answer of the page, and /ring.json, sane; /nodes.json (the
 * most loaded first, a page of every node here) and /overview.json kept. */
static void sane_answers(int port, cJSON **nodes, cJSON **overview)
{
	static const char *const paths[] = { "/status.json", "/ring.json",
					     "/nodes.json?sort=share", "/nodes.json?sort=id" };

	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		cJSON_Delete(sane_json(port, paths[i]));
	*overview = sane_json(port, "/overview.json");
	*nodes = sane_json(port, "/nodes.json");
}

static const cJSON *row_of(const cJSON *nodes, const char *id)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, cJSON_GetObjectItem(nodes, "rows"))
		if (!strcmp(str_of(r, "id"), id))
			return r;
	ck_abort_msg("no row of %s", id);
	return NULL;
}

/* The overview's most loaded node: its load is its row's share over its
 * fair share, both there and neither 0; returns the load. */
static double max_load(const cJSON *nodes, const cJSON *overview)
{
	const cJSON *load = cJSON_GetObjectItem(cJSON_GetObjectItem(overview, "ring"), "load");
	const cJSON *row = row_of(nodes, str_of(load, "max_node"));
	double share = num_of(row, "share_write"), fair = num_of(row, "fair_write");

	ck_assert_double_gt(share, 0);
	ck_assert_double_gt(fair, 0);
	ck_assert_double_eq_tol(num_of(load, "max") / (share / fair), 1, 1e-4);
	return num_of(load, "max");
}

/* Records at the ends of the weights they may have, 1e-6 beside 1e6 and
 * 1e7 (a third of a ring's point limit at one point per unit of weight)
 * and, on a rendezvous ring, which has no points, beside 1e290: every
 * answer is JSON of short, finite numbers, and a node of weight 1e-6 has
 * a fair share (it was 0.000000, and its load a division by it). */
START_TEST(extreme_weights)
{
	static const char *const points[] = { "--vnodes-per-weight", "1", NULL };
	static const char *const rdv[] = { "--placement", "rendezvous", NULL };
	static const struct {
		const char *id, *value;
	} recs[] = {
		{ "tiny", "{\"addr\":\"127.0.0.1:11211\",\"weight\":1e-6}" },
		{ "tiny-warming", "{\"addr\":\"127.0.0.1:11212\",\"weight\":0.000001,"
				  "\"state\":\"warming\"}" },
		{ "one", "{\"addr\":\"127.0.0.1:11213\"}" },
	};
	const char *url = hrt_etcd_client_url(etcd, 0);
	const cJSON *tiny;
	cJSON *nodes, *overview;
	hrt_serve s;
	char key[64];

	for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++) {
		snprintf(key, sizeof key, EXTREME_PREFIX "%s", recs[i].id);
		ck_assert_int_gt(hrt_put(url, key, recs[i].value), 0);
		snprintf(key, sizeof key, EXTREME_RDV_PREFIX "%s", recs[i].id);
		ck_assert_int_gt(hrt_put(url, key, recs[i].value), 0);
	}
	ck_assert_int_gt(hrt_put(url, EXTREME_PREFIX "big",
				 "{\"addr\":\"127.0.0.1:11214\",\"weight\":1e6}"), 0);
	ck_assert_int_gt(hrt_put(url, EXTREME_PREFIX "huge",
				 "{\"addr\":\"127.0.0.1:11215\",\"weight\":1e7}"), 0);
	ck_assert_int_gt(hrt_put(url, EXTREME_RDV_PREFIX "huge",
				 "{\"addr\":\"127.0.0.1:11215\",\"weight\":1e290}"), 0);

	/* 11,000,003 points: a node of 1e-6 has one, a million times its
	 * fair share's worth. */
	start_at(&s, EXTREME_PREFIX, points);
	sane_answers(s.port, &nodes, &overview);
	tiny = row_of(nodes, "tiny");
	ck_assert_double_eq(num_of(tiny, "weight"), 1e-6);
	ck_assert_double_eq_tol(num_of(tiny, "fair_write") / (1e-6 / (2e-6 + 1 + 1e6 + 1e7)), 1,
				1e-5);
	ck_assert_double_gt(max_load(nodes, overview), 1e3);
	cJSON_Delete(nodes);
	cJSON_Delete(overview);
	hrt_serve_stop(&s);

	/* Rendezvous: shares by weight, of 1e-296 beside 1e290. */
	start_at(&s, EXTREME_RDV_PREFIX, rdv);
	sane_answers(s.port, &nodes, &overview);
	tiny = row_of(nodes, "tiny");
	ck_assert_double_eq_tol(num_of(tiny, "fair_write") / 1e-296, 1, 1e-5);
	ck_assert_double_eq_tol(max_load(nodes, overview), 1, 1e-3);
	ck_assert_double_eq(num_of(row_of(nodes, "huge"), "weight"), 1e290);
	cJSON_Delete(nodes);
	cJSON_Delete(overview);
	hrt_serve_stop(&s);
}
END_TEST

/* The metrics' options, as `hashring metrics` has them. */
START_TEST(metrics_options)
{
	static const char *const trimmed[] = { "--name-prefix", "app_", "--label", "env=prod",
					       "--label", "dc=x\"y", "--omit-nodes", NULL };
	static const char *const no_lookups[] = { "--omit-lookups", NULL };
	hrt_serve s;

	three_nodes();
	start(&s, trimmed);
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/lookup?key=a", buf, ANSWER_MAX), 200);
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/metrics", buf, ANSWER_MAX), 200);
	ck_assert_ptr_nonnull(strstr(buf, "\napp_hashring_ring_revision{env=\"prod\",dc=\"x\\\"y\"} "));
	ck_assert_ptr_nonnull(strstr(buf, "\napp_hashring_ring_nodes{env=\"prod\",dc=\"x\\\"y\","
				     "state=\"warming\"} 1\n"));
	ck_assert_ptr_null(strstr(buf, "hashring_node_info"));
	ck_assert_ptr_null(strstr(buf, "hashring_node_share_ratio"));
	ck_assert_ptr_nonnull(strstr(buf, "\napp_hashring_node_lookups_total{"));
	ck_assert_ptr_null(strstr(buf, "\nhashring_"));
	hrt_serve_stop(&s);

	start(&s, no_lookups);
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/lookup?key=a", buf, ANSWER_MAX), 200);
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/metrics", buf, ANSWER_MAX), 200);
	ck_assert_ptr_nonnull(strstr(buf, "\nhashring_node_info{node=\"cache-a\""));
	ck_assert_ptr_null(strstr(buf, "hashring_node_lookups_total"));
	ck_assert_ptr_nonnull(strstr(buf, "\nhashring_hot_key_share_ratio{rank=\"1\",key=\"a\""));
	hrt_serve_stop(&s);
}
END_TEST

/* Bad metrics' options: usage errors, before etcd is asked anything. */
START_TEST(bad_metrics_options)
{
	static const struct { const char *opt, *value, *msg; } bad[] = {
		{ "--label", "env", "--label wants NAME=VALUE" },
		{ "--label", "=x", "--label wants NAME=VALUE" },
		{ "--label", "node=x", "is one the library's metrics use" },
		{ "--label", "__x=1", "starts with \"__\"" },
		{ "--name-prefix", "1app_", "--name-prefix: \"1app_\" is not" },
	};
	hrt_cli_run run;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *argv[] = { "serve", "--endpoints", "127.0.0.1:1", bad[i].opt,
				       bad[i].value, NULL };

		hrt_cli_run_cmd(&run, NULL, argv);
		ck_assert_msg(run.status == 2, "%s %s: exit %d", bad[i].opt, bad[i].value,
			      run.status);
		ck_assert_msg(strstr(run.err, bad[i].msg), "%s %s: %s", bad[i].opt, bad[i].value,
			      run.err);
		ck_assert_ptr_null(strstr(run.out, "serving"));
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("serve");
	TCase *tc = tcase_create("serve");
	TCase *offline = tcase_create("offline");

	/* One etcd for every test (each forks from here): each starts its
	 * own serve, and the records they put are the same ones. */
	tcase_add_unchecked_fixture(tc, up, down);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, paths_and_update);
	tcase_add_test(tc, lookup_path);
	tcase_add_test(tc, oversized_requests);
	tcase_add_test(tc, malformed_requests);
	tcase_add_test(tc, request_targets);
	tcase_add_test(tc, host_without_port_on_port_80);
	tcase_add_test(tc, slow_clients);
	tcase_add_test(tc, connection_limit);
	tcase_add_test(tc, port_in_use);
	tcase_add_test(tc, trickling_client);
	tcase_add_test(tc, etcd_down_at_start);
	tcase_add_test(tc, lookup_while_drawing);
	tcase_add_test(tc, slow_answers_beside_lookups);
	tcase_add_test(tc, sigterm_while_drawing);
	tcase_add_test(tc, page_answers_at_10000_nodes);
	tcase_add_test(tc, extreme_weights);
	tcase_add_test(tc, metrics_options);
	suite_add_tcase(s, tc);
	tcase_add_test(offline, listen_options);
	tcase_add_test(offline, bad_metrics_options);
	suite_add_tcase(s, offline);
	return hrt_run(s);
}
