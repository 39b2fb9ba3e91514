/* SPDX-License-Identifier: MIT */
/*
 * test_memcache.c - the rebalancer's memcached connection against a
 * scripted server on loopback: good answers are read exactly, and every
 * broken one (garbage, a server error, a value cut short or not ended by
 * CRLF, an endless line, a dump that breaks off, silence) is an error
 * naming the server and what failed, never a crash or a hang.  A key the
 * text protocol cannot carry is refused before anything is sent.
 */
#define _GNU_SOURCE
#include "hrt_check.h"

#include "hashring/rebalance.h"
#include "memcache.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A server that accepts one connection, reads one request, writes
 * `reply` (`len` bytes) and then closes, or with `hold` waits for the
 * client to close first. */
typedef struct script {
	const char *reply;
	size_t len;
	const char *reply2;     /* if set, read a second request and send this */
	int hold;
	int listen_fd;
	char addr[32];
	char request[512], request2[512];
	pthread_t thread;
} script;

static void *serve(void *arg)
{
	script *s = arg;
	int fd = accept(s->listen_fd, NULL, NULL);
	char buf[256];
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, s->request, sizeof s->request - 1);
	if (n > 0)
		s->request[n] = '\0';
	/* A client that gives up early fails this send: no SIGPIPE. */
	if (s->len)
		(void)send(fd, s->reply, s->len, MSG_NOSIGNAL);
	if (s->reply2) {
		n = read(fd, s->request2, sizeof s->request2 - 1);
		if (n > 0)
			s->request2[n] = '\0';
		(void)send(fd, s->reply2, strlen(s->reply2), MSG_NOSIGNAL);
	}
	if (s->hold)
		while (read(fd, buf, sizeof buf) > 0)
			;
	close(fd);
	return NULL;
}

static void start_two(script *s, const char *reply, size_t len, const char *reply2,
		      int hold)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof sa;

	s->reply = reply;
	s->len = len;
	s->reply2 = reply2;
	s->request[0] = s->request2[0] = '\0';
	s->hold = hold;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(s->listen_fd, 0);
	ck_assert_int_eq(bind(s->listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(listen(s->listen_fd, 1), 0);
	ck_assert_int_eq(getsockname(s->listen_fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(s->addr, sizeof s->addr, "127.0.0.1:%d", ntohs(sa.sin_port));
	ck_assert_int_eq(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void start(script *s, const char *reply, size_t len, int hold)
{
	start_two(s, reply, len, NULL, hold);
}

static void finish(script *s, hr__mc *mc)
{
	hr__mc_close(mc);
	pthread_join(s->thread, NULL);
	close(s->listen_fd);
}

static hr__mc *connect_to(const script *s, int timeout_ms)
{
	hr__mc *mc = NULL;
	hr_error err = { 0 };

	ck_assert_msg(hr__mc_connect(s->addr, timeout_ms, &mc, &err) == 0, "%s", err.message);
	return mc;
}

/* A script answering `reply`, and a connection to it (2 s timeout). */
static hr__mc *answer_with(script *s, const char *reply, size_t len, int hold)
{
	start(s, reply, len, hold);
	return connect_to(s, 2000);
}

/* One mg against `reply`: its result, and the error's message in `msg`. */
static int get_with(const char *reply, size_t len, int hold, int timeout_ms,
		    hr__mc_value *v, char *msg, size_t msize)
{
	script s;
	hr__mc *mc;
	hr_error err = { 0 };
	int rc;

	start(&s, reply, len, hold);
	mc = connect_to(&s, timeout_ms);
	rc = hr__mc_get(mc, "k", 1, v, &err);
	snprintf(msg, msize, "%s", err.message);
	finish(&s, mc);
	if (rc < 0) {
		hrt_assert_clean_message(msg);
		ck_assert_msg(strstr(msg, "memcached 127.0.0.1:") == msg, "no server in \"%s\"", msg);
	}
	return rc;
}

START_TEST(good_answers)
{
	static const char hit[] = "VA 3 s3 f7 t10\r\nxyz\r\n";
	hr__mc_value v = { 0 };
	char msg[HR_ERROR_MSG_MAX];

	ck_assert_int_eq(get_with(hit, sizeof hit - 1, 1, 2000, &v, msg, sizeof msg), 1);
	ck_assert_uint_eq(v.len, 3);
	ck_assert(!memcmp(v.data, "xyz", 3));
	ck_assert_uint_eq(v.flags, 7);
	ck_assert_int_eq(v.ttl, 10);
	ck_assert_int_eq(get_with("EN\r\n", 4, 1, 2000, &v, msg, sizeof msg), 0);
	hr__mc_value_free(&v);
	hr__mc_value_free(NULL);
}
END_TEST

START_TEST(broken_answers)
{
	static const struct {
		const char *reply;
		int rc;
		const char *says;
	} cases[] = {
		{ "VA 5 s5 f1 t-1\r\nab", HR_EIO, "connection closed during mg" },
		{ "VA x\r\n", HR_EIO, "mg answered \"VA x\"" },
		{ "VA 2 s2 f-1 t-1\r\nab\r\n", HR_EIO, "mg answered" },
		{ "VA 2 s2 f1 t-1\r\nabXY", HR_EIO, "a value not ended by CRLF during mg" },
		{ "SERVER_ERROR out of memory\r\n", HR_EIO, "\"SERVER_ERROR out of memory\"" },
		{ "ERROR\r\n", HR_EIO, "mg answered \"ERROR\"" },
		{ "", HR_EIO, "connection closed during mg" },
	};
	hr__mc_value v = { 0 };
	char msg[HR_ERROR_MSG_MAX];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int rc = get_with(cases[i].reply, strlen(cases[i].reply), 0, 2000, &v, msg,
				  sizeof msg);

		ck_assert_msg(rc == cases[i].rc, "case %zu: %d", i, rc);
		ck_assert_msg(strstr(msg, cases[i].says), "case %zu: \"%s\"", i, msg);
	}
	hr__mc_value_free(&v);
}
END_TEST

/* A line that never ends, and a server that never answers. */
START_TEST(endless_line_and_silence)
{
	size_t len = 70000;
	char *garbage = malloc(len);
	hr__mc_value v = { 0 };
	char msg[HR_ERROR_MSG_MAX];

	memset(garbage, 'x', len);
	ck_assert_int_eq(get_with(garbage, len, 1, 2000, &v, msg, sizeof msg), HR_EIO);
	ck_assert_ptr_nonnull(strstr(msg, "a line over 65536 bytes during mg"));
	ck_assert_int_eq(get_with("", 0, 1, 200, &v, msg, sizeof msg), HR_ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(msg, "no answer to mg within 200 ms"));
	free(garbage);
	hr__mc_value_free(&v);
}
END_TEST

static int count_items(void *userdata, const hr__mc_item *item)
{
	(void)item;
	++*(int *)userdata;
	return 0;
}

START_TEST(dumps)
{
	static const char good[] = "key=a exp=-1 la=1 cas=1 fetch=no cls=1 size=65\n"
				   "key=b%20c exp=5 la=1 cas=2 fetch=no cls=1 size=66\nEND\r\n";
	static const struct {
		const char *reply;
		int rc;
		const char *says;
	} bad[] = {
		{ "BUSY currently processing crawler request\r\n", HR_EIO, "answered \"BUSY" },
		{ "key=a exp=-1\nkey=%zz exp=-1\n", HR_EPARSE, "a bad %XX escape" },
		{ "key=a exp=-1\nkey=b", HR_EIO, "connection closed during lru_crawler metadump" },
	};
	script s;
	hr__mc *mc;
	hr_error err = { 0 };
	int n = 0;

	mc = answer_with(&s, good, sizeof good - 1, 1);
	ck_assert_int_eq(hr__mc_metadump(mc, HR__MC_WALK_LRU, count_items, &n, &err), 0);
	ck_assert_str_eq(s.request, "lru_crawler metadump all\r\n");
	finish(&s, mc);
	ck_assert_int_eq(n, 2);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&err, 0, sizeof err);
		mc = answer_with(&s, bad[i].reply, strlen(bad[i].reply), 0);
		ck_assert_int_eq(hr__mc_metadump(mc, HR__MC_WALK_LRU, count_items, &n, &err),
				 bad[i].rc);
		ck_assert_msg(strstr(err.message, bad[i].says), "case %zu: \"%s\"", i, err.message);
		hrt_assert_clean_message(err.message);
		finish(&s, mc);
	}
}
END_TEST

static int count_keys(void *ctx, const void *key, size_t len, uint64_t cas)
{
	(void)key, (void)len, (void)cas;
	++*(int *)ctx;
	return 0;
}

/* The hash walk, which misses no item, and the LRU walk when a server
 * before 1.6.9 takes "hash" for a class id. */
START_TEST(hash_walk)
{
	static const char good[] = "key=a exp=-1 la=1 cas=1 fetch=no cls=1 size=65\n"
				   "key=b exp=-1 la=1 cas=2 fetch=no cls=1 size=65\nEND\r\n";
	static const char badclass[] = "BADCLASS invalid class id\r\n";
	hr_rebalance_backend b;
	script s;
	hr__mc *mc;
	hr_error err = { 0 };
	int n = 0;

	mc = answer_with(&s, good, sizeof good - 1, 1);
	ck_assert_int_eq(hr__mc_metadump(mc, HR__MC_WALK_HASH, count_items, &n, &err), 0);
	ck_assert_str_eq(s.request, "lru_crawler metadump hash\r\n");
	finish(&s, mc);
	ck_assert_int_eq(n, 2);

	mc = answer_with(&s, badclass, sizeof badclass - 1, 1);
	ck_assert_int_eq(hr__mc_metadump(mc, HR__MC_WALK_HASH, count_items, &n, &err),
			 HR__MC_NO_HASH_WALK);
	finish(&s, mc);
	mc = answer_with(&s, badclass, sizeof badclass - 1, 1);
	ck_assert_int_eq(hr__mc_metadump(mc, HR__MC_WALK_LRU, count_items, &n, &err), HR_EIO);
	ck_assert_ptr_nonnull(strstr(err.message, "answered \"BADCLASS"));
	finish(&s, mc);

	/* The backend: a complete listing from the hash walk; the LRU walk,
	 * which the rebalancer repeats, from an older server. */
	hr_rebalance_backend_init(&b);
	ck_assert_int_eq(hr_rebalance_memcached(2000, &b, &err), 0);
	start(&s, good, sizeof good - 1, 1);
	n = 0;
	ck_assert_msg(b.enumerate(b.userdata, s.addr, 0, count_keys, &n, &err) ==
		      HR_REBALANCE_LISTED_ALL, "%s", err.message);
	finish(&s, NULL);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(s.request, "lru_crawler metadump hash\r\n");

	start_two(&s, badclass, sizeof badclass - 1, good, 1);
	n = 0;
	ck_assert_msg(b.enumerate(b.userdata, s.addr, 1, count_keys, &n, &err) == 0, "%s",
		      err.message);
	finish(&s, NULL);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(s.request2, "lru_crawler metadump all\r\n");
	b.close(b.userdata);
}
END_TEST

/* What goes on the wire: add mode, flags, TTLs, base64 for keys the text
 * protocol cannot carry, and the CAS of a compare-and-delete. */
START_TEST(requests)
{
	hr__mc_value v = { .data = "hi", .len = 2, .flags = 9, .ttl = 60 };
	script s;
	hr__mc *mc;
	hr_error err = { 0 };
	uint64_t cas = 0;

	mc = answer_with(&s, "HD c42\r\n", 8, 1);
	ck_assert_int_eq(hr__mc_store(mc, "k", 1, &v, HR__MC_ADD, &cas, &err), 1);
	ck_assert_uint_eq(cas, 42);
	finish(&s, mc);
	ck_assert_str_eq(s.request, "ms k 2 F9 T60 ME c\r\nhi\r\n");

	v.ttl = -1;
	mc = answer_with(&s, "NS\r\n", 4, 1);
	ck_assert_int_eq(hr__mc_store(mc, "a b", 3, &v, HR__MC_SET, NULL, &err), 0);
	finish(&s, mc);
	ck_assert_str_eq(s.request, "ms YSBi 2 F9 MS c b\r\nhi\r\n");

	mc = answer_with(&s, "EX\r\n", 4, 1);
	ck_assert_int_eq(hr__mc_delete(mc, "k", 1, 7, &err), 0);
	finish(&s, mc);
	ck_assert_str_eq(s.request, "md k C7\r\n");
}
END_TEST

/* A key with a blank goes base64-encoded, and memcached takes a token of
 * at most 250 characters: 186 bytes (248) go, 187 (252) are HR_ELIMIT,
 * sent nowhere, the connection still good.  Every command alike. */
START_TEST(long_binary_keys)
{
	char key[HR__MC_KEY_MAX];
	hr__mc_value v = { .data = "hi", .len = 2, .ttl = -1 };
	script s;
	hr__mc *mc;
	hr_error err = { 0 };

	memset(key, 'y', sizeof key);
	key[1] = ' ';
	for (size_t len = 187; len <= HR__MC_KEY_MAX; len += HR__MC_KEY_MAX - 187) {
		mc = answer_with(&s, "EN\r\n", 4, 1);
		ck_assert_int_eq(hr__mc_get(mc, key, len, &v, &err), HR_ELIMIT);
		ck_assert_msg(strstr(err.message, "memcached 127.0.0.1:") == err.message &&
			      strstr(err.message, "a key of") && strstr(err.message, "base64"),
			      "%s", err.message);
		hrt_assert_clean_message(err.message);
		ck_assert_int_eq(hr__mc_exists(mc, key, len, &err), HR_ELIMIT);
		ck_assert_int_eq(hr__mc_store(mc, key, len, &v, HR__MC_ADD, NULL, &err), HR_ELIMIT);
		ck_assert_int_eq(hr__mc_delete(mc, key, len, 7, &err), HR_ELIMIT);
		/* Nothing went out: the next command is the first the server reads. */
		ck_assert_int_eq(hr__mc_exists(mc, "k", 1, &err), 0);
		finish(&s, mc);
		ck_assert_str_eq(s.request, "mg k\r\n");
	}
	mc = answer_with(&s, "EN\r\n", 4, 1);
	ck_assert_int_eq(hr__mc_exists(mc, key, 186, &err), 0);
	finish(&s, mc);
	ck_assert_uint_eq(strlen(s.request), 3 + 248 + 4);
	ck_assert_str_eq(s.request + 3 + 248, " b\r\n");
}
END_TEST

START_TEST(bad_addresses)
{
	static const char *const bad[] = { "localhost", "127.0.0.1:", ":11211", "[::1]11211", "[::1" };
	hr__mc *mc = NULL;
	hr_error err = { 0 };

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(hr__mc_connect(bad[i], 1000, &mc, &err) == HR_EINVAL, "%s", bad[i]);
		ck_assert_ptr_null(mc);
		hrt_assert_clean_message(err.message);
	}
	ck_assert_int_eq(hr__mc_connect("127.0.0.1:1", 1000, &mc, &err), HR_ECONNECT);
	ck_assert_str_eq(err.message, "memcached 127.0.0.1:1: cannot connect");
	ck_assert_int_eq(hr__mc_connect(NULL, 1000, &mc, &err), HR_EINVAL);
	hr__mc_close(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("memcache");
	TCase *tc = tcase_create("memcache");

	tcase_add_test(tc, good_answers);
	tcase_add_test(tc, broken_answers);
	tcase_add_test(tc, endless_line_and_silence);
	tcase_add_test(tc, dumps);
	tcase_add_test(tc, hash_walk);
	tcase_add_test(tc, requests);
	tcase_add_test(tc, long_binary_keys);
	tcase_add_test(tc, bad_addresses);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
