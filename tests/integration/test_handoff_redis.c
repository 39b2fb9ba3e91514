/* SPDX-License-Identifier: MIT */
/*
 * test_handoff_redis.c - the handoff's copy between real redis-server
 * processes (Debian's 7.0) through the Redis backend (docs/handoff.md
 * section 6).  Values of every type move with their remaining TTL; a key
 * the new owner holds is kept, never overwritten; keys expired on the way
 * stay expired; other databases are not touched.  Faults, each named: a
 * destination at maxmemory (nothing lost, a rerun finishes), a closed
 * port, a wrong password, a value over the destination's
 * proto-max-bulk-len and a payload of a foreign RDB version (skipped,
 * counted, named once), a source restarted in the middle of a copy.  The
 * rate cap holds on a real copy.  `hashring rebalance --backend redis`
 * runs the join against etcd, reads its credentials from a file or the
 * environment, never shows them, and a copy killed by SIGKILL and rerun
 * converges.
 */
#define _GNU_SOURCE
#include "etcd_fixture.h"
#include "hrt_check.h"
#include "hrt_cli.h"
#include "hrt_ring.h"
#include "redis_fixture.h"

#include "hashring/rebalance.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PREFIX "/t/nodes/"
#define ACKS "/t/acks/"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A ring of `n` nodes "r<i>" at addrs[i] in states[i]. */
static hr_ring *ring_of(size_t n, const char *const *addrs, const hr_state *states)
{
	hr_node nodes[8];
	char ids[8][24];
	hr_ring *ring = NULL;
	hr_error err = { 0 };

	for (size_t i = 0; i < n; i++) {
		snprintf(ids[i], sizeof ids[i], "r%zu", i);
		nodes[i] = (hr_node){ .id = ids[i], .addr = addrs[i], .weight = 1,
				      .state = states[i] };
	}
	ck_assert_msg(hr_ring_build(nodes, n, NULL, 1, &ring, &err) == 0, "%s", err.message);
	return ring;
}

/* Everything moves: r0 draining (read view), r1 warming (write view). */
static hr_ring *move_all(const char *from, const char *to)
{
	return ring_of(2, (const char *const[]){ from, to },
		       (const hr_state[]){ HR_STATE_DRAINING, HR_STATE_WARMING });
}

/* hr_rebalancer_copy() of `ring` over a new Redis backend with `rcfg`
 * (NULL: defaults) and caps `keys_per_s`; lines into `log` (may be NULL);
 * the figures in *p. */
static int copy_ring(const hr_ring *ring, const hr_rebalance_redis_config *rcfg,
		     double keys_per_s, hrt_log *log, hr_rebalance_progress *p, hr_error *err)
{
	hr_rebalance_backend be;
	hr_rebalance_config cfg;
	hr_rebalancer *rb = NULL;
	int rc;

	hr_rebalance_backend_init(&be);
	ck_assert_msg(hr_rebalance_redis(rcfg, &be, err) == 0, "%s", err->message);
	hr_rebalance_config_init(&cfg);
	cfg.keys_per_s = keys_per_s;
	cfg.log_level = log ? HR_LOG_INFO : HR_LOG_WARN;
	cfg.log = log ? hrt_log_fn : NULL;
	cfg.log_userdata = log;
	ck_assert_msg(hr_rebalancer_new(&be, &cfg, &rb, err) == 0, "%s", err->message);
	rc = hr_rebalancer_copy(rb, ring, NULL, err);
	ck_assert_int_eq(hr_rebalancer_progress(rb, p, NULL), 0);
	hr_rebalancer_free(rb);
	return rc;
}

static redisReply *cmd(redisContext *c, const char *fmt, ...)
{
	redisReply *reply;
	va_list ap;

	va_start(ap, fmt);
	reply = redisvCommand(c, fmt, ap);
	va_end(ap);
	ck_assert_msg(reply != NULL, "'%s': %s", fmt, c->errstr);
	return reply;
}

static void ok(redisContext *c, const char *fmt, ...)
{
	redisReply *reply;
	va_list ap;

	va_start(ap, fmt);
	reply = redisvCommand(c, fmt, ap);
	va_end(ap);
	ck_assert_msg(reply && reply->type != REDIS_REPLY_ERROR, "'%s': %s", fmt,
		      reply ? reply->str : c->errstr);
	freeReplyObject(reply);
}

static long long integer(redisContext *c, const char *fmt, const char *key)
{
	redisReply *r = cmd(c, fmt, key);
	long long v;

	ck_assert_msg(r->type == REDIS_REPLY_INTEGER, "'%s' %s: not an integer", fmt, key);
	v = r->integer;
	freeReplyObject(r);
	return v;
}

/* Whether `key` has the same DUMP on both: the same type and value.  A
 * set or hash in a hash table may serialise in another order once
 * restored: its members are compared then, sorted by SORT ... ALPHA. */
static int same_value(redisContext *a, redisContext *b, const char *key)
{
	redisReply *x = cmd(a, "DUMP %s", key), *y = cmd(b, "DUMP %s", key), *t;
	int same = x->type == REDIS_REPLY_STRING && y->type == REDIS_REPLY_STRING &&
		   x->len == y->len && !memcmp(x->str, y->str, x->len);

	freeReplyObject(x);
	freeReplyObject(y);
	t = cmd(a, "TYPE %s", key);
	if (!same && !strcmp(t->str, "set")) {
		x = cmd(a, "SORT %s ALPHA", key);
		y = cmd(b, "SORT %s ALPHA", key);
		same = x->elements == y->elements;
		for (size_t i = 0; same && i < x->elements; i++)
			same = x->element[i]->len == y->element[i]->len &&
			       !memcmp(x->element[i]->str, y->element[i]->str, x->element[i]->len);
		freeReplyObject(x);
		freeReplyObject(y);
	} else if (!same && !strcmp(t->str, "hash")) {
		x = cmd(a, "HGETALL %s", key);
		same = x->elements / 2 == (size_t)integer(b, "HLEN %s", key);
		for (size_t i = 0; same && i + 1 < x->elements; i += 2) {
			y = cmd(b, "HGET %s %b", key, x->element[i]->str, x->element[i]->len);
			same = y->type == REDIS_REPLY_STRING && y->len == x->element[i + 1]->len &&
			       !memcmp(y->str, x->element[i + 1]->str, y->len);
			freeReplyObject(y);
		}
		freeReplyObject(x);
	}
	freeReplyObject(t);
	return same;
}

/* Writes n strings "k:<i>" of `size` bytes, pipelined. */
static void fill_strings(redisContext *c, const char *prefix, int n, size_t size)
{
	char *v = malloc(size + 1);

	memset(v, 'v', size);
	for (int i = 0; i < n; i++)
		redisAppendCommand(c, "SET %s%d %b", prefix, i, v, size);
	for (int i = 0; i < n; i++) {
		void *reply = NULL;

		ck_assert_int_eq(redisGetReply(c, &reply), REDIS_OK);
		ck_assert_int_ne(((redisReply *)reply)->type, REDIS_REPLY_ERROR);
		freeReplyObject(reply);
	}
	free(v);
}

/* ---- values, TTLs, what is kept --------------------------------------------- */

/* Every type moves with its TTL; what the new owner holds is kept; the
 * other database is not touched. */
START_TEST(every_type_moves_with_its_ttl)
{
	hrt_redis *src = hrt_redis_start(NULL, NULL), *dst = hrt_redis_start(NULL, NULL);
	const char *keys[] = { "str", "hash", "list", "set", "zset", "stream", "big-hash",
			       "ttl-str", "ttl-zset" };
	redisContext *a, *b, *a1, *b1;
	hr_rebalance_progress p;
	hr_error err = { 0 };
	hr_ring *ring;
	long long pttl;

	ck_assert(src && dst);
	a = hrt_redis_connect(src, 0);
	b = hrt_redis_connect(dst, 0);
	a1 = hrt_redis_connect(src, 1);
	b1 = hrt_redis_connect(dst, 1);
	ok(a, "SET str hello");
	ok(a, "HSET hash f1 v1 f2 v2");
	ok(a, "RPUSH list a b c d");
	ok(a, "SADD set x y z");
	ok(a, "ZADD zset 1 one 2 two 3 three");
	ok(a, "XADD stream 1-1 field value");
	ok(a, "XADD stream 2-1 field other");
	ok(a, "XGROUP CREATE stream readers 0");
	for (int i = 0; i < 600; i++) /* past listpack: a real hash table */
		ok(a, "HSET big-hash field%d value%d", i, i);
	ok(a, "SET ttl-str soon PX 3600000");
	ok(a, "ZADD ttl-zset 1 a");
	ok(a, "PEXPIRE ttl-zset 7200000");
	/* Written at the new owner by a client since the ring changed. */
	ok(a, "SET present from-source");
	ok(b, "SET present from-client");
	/* Database 1, on both: neither read nor written. */
	ok(a1, "SET other-db source");
	ok(b1, "SET other-db-dest dest");

	ring = move_all(hrt_redis_addr(src), hrt_redis_addr(dst));
	ck_assert_msg(copy_ring(ring, NULL, 0, NULL, &p, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(p.scanned, 10);
	ck_assert_uint_eq(p.moving, 10);
	ck_assert_uint_eq(p.copied, 9);
	ck_assert_uint_eq(p.present, 1);
	ck_assert_uint_eq(p.gone + p.skipped + p.taken_back, 0);
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		ck_assert_msg(same_value(a, b, keys[i]), "%s differs", keys[i]);
	{
		redisReply *r = cmd(b, "GET present");

		ck_assert_str_eq(r->str, "from-client");
		freeReplyObject(r);
		r = cmd(b, "TYPE stream");
		ck_assert_str_eq(r->str, "stream");
		freeReplyObject(r);
		r = cmd(b, "XINFO GROUPS stream");
		ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
		ck_assert_uint_eq(r->elements, 1);
		freeReplyObject(r);
	}
	ck_assert_int_eq(integer(b, "PTTL %s", "str"), -1);
	pttl = integer(b, "PTTL %s", "ttl-str");
	ck_assert_msg(pttl > 3600000 - 10000 && pttl <= 3600000, "ttl-str: %lld ms", pttl);
	pttl = integer(b, "PTTL %s", "ttl-zset");
	ck_assert_msg(pttl > 7200000 - 10000 && pttl <= 7200000, "ttl-zset: %lld ms", pttl);
	/* The source keeps everything (a copy only adds). */
	ck_assert_int_eq(hrt_redis_dbsize(src, 0), 10);
	ck_assert_int_eq(hrt_redis_dbsize(dst, 0), 10);
	ck_assert_int_eq(hrt_redis_dbsize(src, 1), 1);
	ck_assert_int_eq(hrt_redis_dbsize(dst, 1), 1);
	ck_assert_int_eq(integer(b1, "EXISTS %s", "other-db"), 0);

	/* A rerun copies nothing again. */
	ck_assert_msg(copy_ring(ring, NULL, 0, NULL, &p, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(p.copied, 0);
	ck_assert_uint_eq(p.present, 10);

	/* The database is a setting: database 1 alone, with its own keys. */
	{
		hr_rebalance_redis_config rc;

		hr_rebalance_redis_config_init(&rc);
		rc.db = 1;
		ck_assert_msg(copy_ring(ring, &rc, 0, NULL, &p, &err) == 0, "%s", err.message);
		ck_assert_uint_eq(p.scanned, 1);
		ck_assert_uint_eq(p.copied, 1);
		ck_assert_int_eq(integer(b1, "EXISTS %s", "other-db"), 1);
		ck_assert_int_eq(hrt_redis_dbsize(dst, 0), 10);
	}
	hr_ring_release(ring);
	redisFree(a);
	redisFree(b);
	redisFree(a1);
	redisFree(b1);
	hrt_redis_stop(src);
	hrt_redis_stop(dst);
}
END_TEST

/* The take-back of a copy compares the payload: a value a client wrote
 * over the copy is not deleted. */
START_TEST(remove_compares_the_payload)
{
	hrt_redis *r = hrt_redis_start(NULL, NULL);
	redisContext *c = hrt_redis_connect(r, 0);
	hr_rebalance_backend be;
	hr_rebalance_value v = { .data = NULL };
	hr_error err = { 0 };
	uint64_t cas = 0;
	char copy[256];
	size_t len;

	ok(c, "SET k original");
	hr_rebalance_backend_init(&be);
	ck_assert_int_eq(hr_rebalance_redis(NULL, &be, &err), 0);
	ck_assert_int_eq(be.fetch(be.userdata, hrt_redis_addr(r), "k", 1, &v, &err), 1);
	ck_assert_int_eq(v.ttl_s, -1);
	len = v.len;
	memcpy(copy, v.data, len);
	v.data = copy;
	ck_assert_int_eq(be.add(be.userdata, hrt_redis_addr(r), "k2", 2, &v, &cas, &err), 1);
	ck_assert(cas != 0);
	ck_assert_int_eq(be.add(be.userdata, hrt_redis_addr(r), "k2", 2, &v, &cas, &err), 0);
	/* Rewritten since: kept. */
	ok(c, "SET k2 client");
	ck_assert_int_eq(be.remove(be.userdata, hrt_redis_addr(r), "k2", 2, cas, &err), 0);
	ck_assert_int_eq(integer(c, "EXISTS %s", "k2"), 1);
	/* Still the copy: deleted. */
	ok(c, "DEL k2");
	ck_assert_int_eq(be.add(be.userdata, hrt_redis_addr(r), "k2", 2, &v, &cas, &err), 1);
	ck_assert_int_eq(be.remove(be.userdata, hrt_redis_addr(r), "k2", 2, cas, &err), 1);
	ck_assert_int_eq(integer(c, "EXISTS %s", "k2"), 0);
	ck_assert_int_eq(be.fetch(be.userdata, hrt_redis_addr(r), "k2", 2, NULL, &err), 0);
	ck_assert_int_eq(be.fetch(be.userdata, hrt_redis_addr(r), "k", 1, NULL, &err), 1);
	/* A set in a hash table: its copy's checksum is the copy's own, and
	 * the copy is taken back by it. */
	for (int i = 0; i < 300; i++)
		ok(c, "SADD bigset member%d", i);
	ck_assert_int_eq(be.fetch(be.userdata, hrt_redis_addr(r), "bigset", 6, &v, &err), 1);
	ck_assert_int_eq(be.add(be.userdata, hrt_redis_addr(r), "bigset2", 7, &v, &cas, &err), 1);
	ck_assert_int_eq(be.remove(be.userdata, hrt_redis_addr(r), "bigset2", 7, cas, &err), 1);
	ck_assert_int_eq(integer(c, "EXISTS %s", "bigset2"), 0);
	be.close(be.userdata);
	redisFree(c);
	hrt_redis_stop(r);
}
END_TEST

/* Keys that expire on the way stay expired at the new owner; those with
 * time left arrive with what is left. */
START_TEST(expired_keys_stay_expired)
{
	enum { N = 1500 };
	hrt_redis *src = hrt_redis_start(NULL, NULL), *dst = hrt_redis_start(NULL, NULL);
	redisContext *a = hrt_redis_connect(src, 0), *b = hrt_redis_connect(dst, 0);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	hr_ring *ring = move_all(hrt_redis_addr(src), hrt_redis_addr(dst));
	redisReply *r;

	/* TTLs of 1.2 to 2.7 s, copied at 1000 keys/s: most expire before
	 * their turn comes, or within the second after. */
	for (int i = 0; i < N; i++)
		ok(a, "SET short:%d v PX %d", i, 1200 + i);
	ok(a, "SET long v EX 3600");
	ck_assert_msg(copy_ring(ring, NULL, 1000, NULL, &p, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(p.copied + p.gone, p.moving);
	ck_assert_uint_gt(p.gone, 0);
	ck_assert_int_eq(integer(b, "EXISTS %s", "long"), 1);
	/* No copy outlives its source's TTL. */
	sleep_ms(2800);
	r = cmd(b, "KEYS short:*");
	ck_assert_uint_eq(r->elements, 0);
	freeReplyObject(r);
	ck_assert_int_eq(hrt_redis_dbsize(dst, 0), 1);
	hr_ring_release(ring);
	redisFree(a);
	redisFree(b);
	hrt_redis_stop(src);
	hrt_redis_stop(dst);
}
END_TEST

/* ---- faults ------------------------------------------------------------------- */

/* A destination at maxmemory: the copy stops naming it, nothing is lost,
 * and once it has room a rerun finishes. */
START_TEST(full_destination_stops_and_rerun_finishes)
{
	enum { N = 4000 };
	hrt_redis *src = hrt_redis_start(NULL, NULL);
	hrt_redis *dst = hrt_redis_start(NULL, (const char *const[]){ "--maxmemory", "3mb",
		"--maxmemory-policy", "noeviction", NULL });
	redisContext *a = hrt_redis_connect(src, 0), *b = hrt_redis_connect(dst, 0);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	hr_ring *ring = move_all(hrt_redis_addr(src), hrt_redis_addr(dst));
	hrt_log log;
	uint64_t first;
	int rc;

	hrt_log_init(&log);
	fill_strings(a, "k:", N, 1000);
	rc = copy_ring(ring, NULL, 0, &log, &p, &err);
	ck_assert_int_eq(rc, HR_EIO);
	hrt_assert_clean_message(err.message);
	ck_assert_msg(strstr(err.message, "destination r1: ") &&
		      strstr(err.message, hrt_redis_addr(dst)) && strstr(err.message, "maxmemory"),
		      "%s", err.message);
	ck_assert_int_eq(hrt_log_count(&log, "event=rebalance_failed", "node=r1", "role=destination",
				       "backend=redis", NULL), 1);
	ck_assert_uint_gt(p.copied, 0);
	ck_assert_uint_lt(p.copied, N);
	first = p.copied;
	ck_assert_int_eq(hrt_redis_dbsize(src, 0), N);
	ck_assert_int_eq(hrt_redis_dbsize(dst, 0), (long long)first);

	ok(b, "CONFIG SET maxmemory 0");
	ck_assert_msg(copy_ring(ring, NULL, 0, NULL, &p, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(p.present, first);
	ck_assert_uint_eq(p.copied, N - first);
	ck_assert_int_eq(hrt_redis_dbsize(dst, 0), N);
	hrt_log_free(&log);
	hr_ring_release(ring);
	redisFree(a);
	redisFree(b);
	hrt_redis_stop(src);
	hrt_redis_stop(dst);
}
END_TEST

/* A node on a closed loopback port is named, with its role. */
START_TEST(closed_port_is_named)
{
	hrt_redis *src = hrt_redis_start(NULL, NULL), *gone = hrt_redis_start(NULL, NULL);
	redisContext *a = hrt_redis_connect(src, 0);
	char addr[32];
	hr_rebalance_progress p;
	hr_error err = { 0 };
	hr_ring *ring;

	snprintf(addr, sizeof addr, "%s", hrt_redis_addr(gone));
	hrt_redis_stop(gone); /* its port now closed */
	ok(a, "SET k v");
	ring = move_all(hrt_redis_addr(src), addr);
	ck_assert_int_eq(copy_ring(ring, NULL, 0, NULL, &p, &err), HR_ECONNECT);
	hrt_assert_clean_message(err.message);
	ck_assert_msg(strstr(err.message, "destination r1: cannot connect to ") &&
		      strstr(err.message, addr) && strstr(err.message, "refused"), "%s",
		      err.message);
	hr_ring_release(ring);
	ring = move_all(addr, hrt_redis_addr(src));
	ck_assert_int_eq(copy_ring(ring, NULL, 0, NULL, &p, &err), HR_ECONNECT);
	ck_assert_msg(strstr(err.message, "source r0: cannot connect to "), "%s", err.message);
	hr_ring_release(ring);
	redisFree(a);
	hrt_redis_stop(src);
}
END_TEST

/* A wrong or missing password is HR_EAUTH, the password never in the
 * message; a user and password (ACL) work. */
START_TEST(wrong_password_is_refused)
{
	const char *const extra[] = { "--requirepass", "s3cret-pw", NULL };
	hrt_redis *src = hrt_redis_start("s3cret-pw", extra), *dst = hrt_redis_start("s3cret-pw",
										    extra);
	redisContext *a = hrt_redis_connect(src, 0), *b = hrt_redis_connect(dst, 0);
	hr_rebalance_redis_config rc;
	hr_rebalance_progress p;
	hr_error err = { 0 };
	hr_ring *ring = move_all(hrt_redis_addr(src), hrt_redis_addr(dst));

	ok(a, "SET k v");
	hr_rebalance_redis_config_init(&rc);
	rc.password = "not-the-pw";
	ck_assert_int_eq(copy_ring(ring, &rc, 0, NULL, &p, &err), HR_EAUTH);
	hrt_assert_clean_message(err.message);
	ck_assert_msg(strstr(err.message, "source r0: ") && strstr(err.message, "WRONGPASS") &&
		      !strstr(err.message, "not-the-pw"), "%s", err.message);
	ck_assert_int_eq(copy_ring(ring, NULL, 0, NULL, &p, &err), HR_EAUTH);
	ck_assert_msg(strstr(err.message, "requires a password") && strstr(err.message, "NOAUTH"),
		      "%s", err.message);
	/* A user of its own on both. */
	ok(a, "ACL SETUSER mover on >mover-pw ~* +@all");
	ok(b, "ACL SETUSER mover on >mover-pw ~* +@all");
	rc.user = "mover";
	rc.password = "wrong";
	ck_assert_int_eq(copy_ring(ring, &rc, 0, NULL, &p, &err), HR_EAUTH);
	ck_assert_msg(strstr(err.message, "as mover") && !strstr(err.message, "wrong"), "%s",
		      err.message);
	rc.password = "mover-pw";
	ck_assert_msg(copy_ring(ring, &rc, 0, NULL, &p, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(p.copied, 1);
	hr_ring_release(ring);
	redisFree(a);
	redisFree(b);
	hrt_redis_stop(src);
	hrt_redis_stop(dst);
}
END_TEST

/* A value over the destination's proto-max-bulk-len is skipped, named
 * once, and the copy goes on. */
START_TEST(too_big_for_the_destination_is_skipped)
{
	hrt_redis *src = hrt_redis_start(NULL, NULL);
	hrt_redis *dst = hrt_redis_start(NULL, (const char *const[]){ "--proto-max-bulk-len", "1mb",
								      NULL });
	redisContext *a = hrt_redis_connect(src, 0), *b = hrt_redis_connect(dst, 0);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	hr_ring *ring = move_all(hrt_redis_addr(src), hrt_redis_addr(dst));
	size_t big = 2u << 20;
	char *v = malloc(big);
	hrt_log log;
	redisReply *r;

	hrt_log_init(&log);
	/* Random bytes: DUMP compresses a run of one byte to almost nothing. */
	srand(37);
	for (size_t i = 0; i < big; i++)
		v[i] = (char)(rand() >> 7);
	r = cmd(a, "SET huge %b", v, big);
	freeReplyObject(r);
	fill_strings(a, "small:", 50, 100);
	ck_assert_msg(copy_ring(ring, NULL, 0, &log, &p, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(p.skipped, 1);
	ck_assert_uint_eq(p.copied, 50);
	ck_assert_int_eq(hrt_log_count(&log, "event=rebalance_skipped", "huge", NULL), 1);
	ck_assert_int_eq(hrt_log_count(&log, "proto-max-bulk-len", NULL), 1);
	ck_assert_int_eq(integer(b, "EXISTS %s", "huge"), 0);
	ck_assert_int_eq(integer(a, "EXISTS %s", "huge"), 1);
	/* The connection was not broken by it. */
	ck_assert_int_eq(hrt_redis_dbsize(dst, 0), 50);
	free(v);
	hrt_log_free(&log);
	hr_ring_release(ring);
	redisFree(a);
	redisFree(b);
	hrt_redis_stop(src);
	hrt_redis_stop(dst);
}
END_TEST

/* Redis's CRC-64 (Jones polynomial, reflected), which ends a DUMP payload. */
static uint64_t crc64_jones(const unsigned char *p, size_t n)
{
	uint64_t crc = 0;

	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int b = 0; b < 8; b++)
			crc = crc & 1 ? (crc >> 1) ^ 0x95ac9329ac4bc9b5ull : crc >> 1;
	}
	return crc;
}

/* A backend that gives the keys "foreign:*" a payload of RDB version 12
 * (Redis 7.4, or Valkey 8) with a valid CRC-64, as a newer source would. */
typedef struct forging {
	hr_rebalance_backend inner;
	unsigned char buf[64 * 64];
} forging;

static int forge_enumerate(void *ud, const char *addr, unsigned pass, hr_rebalance_key_fn fn,
			   void *ctx, hr_error *err)
{
	forging *f = ud;

	return f->inner.enumerate(f->inner.userdata, addr, pass, fn, ctx, err);
}

/* Gives the value of a key "foreign:<n>" RDB version 12 (in a buffer of
 * its own, `slot` of 64). */
static void forge(forging *f, size_t slot, const void *key, size_t len, hr_rebalance_value *v)
{
	unsigned char *buf = f->buf + slot * 64;
	uint64_t crc;

	if (len < 8 || memcmp(key, "foreign:", 8))
		return;
	ck_assert_uint_le(v->len, 64);
	memcpy(buf, v->data, v->len);
	/* The genuine trailer first: the test's CRC is Redis's. */
	crc = crc64_jones(buf, v->len - 8);
	ck_assert_int_eq(memcmp(&crc, buf + v->len - 8, 8), 0);
	buf[v->len - 10] = 12;
	buf[v->len - 9] = 0;
	crc = crc64_jones(buf, v->len - 8);
	memcpy(buf + v->len - 8, &crc, 8);
	v->data = buf;
}

static int forge_fetch(void *ud, const char *addr, const void *key, size_t len,
		       hr_rebalance_value *out, hr_error *err)
{
	forging *f = ud;
	int rc = f->inner.fetch(f->inner.userdata, addr, key, len, out, err);

	if (rc == 1 && out)
		forge(f, 0, key, len, out);
	return rc;
}

static int forge_fetch_batch(void *ud, const char *addr, size_t n, const void *const *keys,
			     const size_t *lens, hr_rebalance_value *out, int *rcs, hr_error *err)
{
	forging *f = ud;
	int rc = f->inner.fetch_batch(f->inner.userdata, addr, n, keys, lens, out, rcs, err);

	for (size_t i = 0; rc == 0 && out && i < n; i++)
		if (rcs[i] == 1)
			forge(f, i, keys[i], lens[i], &out[i]);
	return rc;
}

static int forge_add_batch(void *ud, const char *addr, size_t n, const void *const *keys,
			   const size_t *lens, const hr_rebalance_value *values, uint64_t *cas,
			   int *rcs, hr_error *err)
{
	forging *f = ud;

	return f->inner.add_batch(f->inner.userdata, addr, n, keys, lens, values, cas, rcs, err);
}

static int forge_add(void *ud, const char *addr, const void *key, size_t len,
		     const hr_rebalance_value *value, uint64_t *cas, hr_error *err)
{
	forging *f = ud;

	return f->inner.add(f->inner.userdata, addr, key, len, value, cas, err);
}

static int forge_remove(void *ud, const char *addr, const void *key, size_t len, uint64_t cas,
			hr_error *err)
{
	forging *f = ud;

	return f->inner.remove(f->inner.userdata, addr, key, len, cas, err);
}

static void forge_close(void *ud)
{
	forging *f = ud;

	f->inner.close(f->inner.userdata);
	free(f);
}

/* RESTORE refuses a payload of a foreign RDB version: the key is skipped,
 * counted, named once, and the rest is copied. */
START_TEST(foreign_payload_is_skipped)
{
	int batched = _i; /* 0: a key at a time, 1: in batches */
	hrt_redis *src = hrt_redis_start(NULL, NULL), *dst = hrt_redis_start(NULL, NULL);
	redisContext *a = hrt_redis_connect(src, 0), *b = hrt_redis_connect(dst, 0);
	forging *f = calloc(1, sizeof *f);
	hr_rebalance_backend be;
	hr_rebalance_config cfg;
	hr_rebalance_progress p;
	hr_rebalancer *rb = NULL;
	hr_error err = { 0 };
	hr_ring *ring = move_all(hrt_redis_addr(src), hrt_redis_addr(dst));
	hrt_log log;

	hrt_log_init(&log);
	ok(a, "SET foreign:1 a");
	ok(a, "HSET foreign:2 f v");
	ok(a, "RPUSH foreign:3 x");
	fill_strings(a, "native:", 20, 10);
	hr_rebalance_backend_init(&f->inner);
	ck_assert_int_eq(hr_rebalance_redis(NULL, &f->inner, &err), 0);
	hr_rebalance_backend_init(&be);
	be.userdata = f;
	be.enumerate = forge_enumerate;
	be.fetch = forge_fetch;
	be.add = forge_add;
	be.remove = forge_remove;
	be.close = forge_close;
	be.name = "redis";
	if (batched) {
		be.fetch_batch = forge_fetch_batch;
		be.add_batch = forge_add_batch;
	}
	hr_rebalance_config_init(&cfg);
	cfg.log = hrt_log_fn;
	cfg.log_userdata = &log;
	ck_assert_int_eq(hr_rebalancer_new(&be, &cfg, &rb, &err), 0);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	ck_assert_int_eq(hr_rebalancer_progress(rb, &p, NULL), 0);
	ck_assert_uint_eq(p.skipped, 3);
	ck_assert_uint_eq(p.copied, 20);
	for (int i = 1; i <= 3; i++) {
		char key[16];

		snprintf(key, sizeof key, "foreign:%d", i);
		ck_assert_int_eq(hrt_log_count(&log, "event=rebalance_skipped", key, NULL), 1);
		ck_assert_int_eq(integer(b, "EXISTS %s", key), 0);
	}
	ck_assert_int_eq(hrt_log_count(&log, "event=rebalance_skipped", "payload", NULL), 3);
	hr_rebalancer_free(rb);
	hrt_log_free(&log);
	hr_ring_release(ring);
	redisFree(a);
	redisFree(b);
	hrt_redis_stop(src);
	hrt_redis_stop(dst);
}
END_TEST

struct copier {
	const hr_ring *ring;
	hr_rebalance_progress p;
	hr_error err;
	int rc;
};

static void *copy_thread(void *arg)
{
	struct copier *c = arg;

	c->rc = copy_ring(c->ring, NULL, 2000, NULL, &c->p, &c->err);
	return NULL;
}

/* The source killed and started again (from its saved data) in the
 * middle of a copy: the copy goes on over a new connection, or stops
 * naming the source; a rerun then has every key. */
START_TEST(source_restarted_mid_copy)
{
	enum { N = 3000 };
	hrt_redis *src = hrt_redis_start(NULL, NULL), *dst = hrt_redis_start(NULL, NULL);
	redisContext *a = hrt_redis_connect(src, 0);
	hr_ring *ring = move_all(hrt_redis_addr(src), hrt_redis_addr(dst));
	struct copier cp = { .ring = ring };
	hr_rebalance_progress p;
	hr_error err = { 0 };
	pthread_t t;
	int rc, runs = 1;

	fill_strings(a, "k:", N, 200);
	ok(a, "SAVE");
	redisFree(a);
	/* The copy on a thread, the restart on this one: the server dies
	 * with the thread that started it (PR_SET_PDEATHSIG). */
	ck_assert_int_eq(pthread_create(&t, NULL, copy_thread, &cp), 0);
	sleep_ms(700);
	ck_assert_int_eq(hrt_redis_restart(src), 0);
	pthread_join(t, NULL);
	rc = cp.rc;
	p = cp.p;
	err = cp.err;
	fprintf(stderr, "source restarted mid-copy: rc=%d (%s) copied=%" PRIu64 "\n", rc,
		rc ? err.message : "ok", p.copied);
	if (rc) {
		ck_assert_msg(strstr(err.message, "source r0: "), "%s", err.message);
		ck_assert_msg(copy_ring(ring, NULL, 0, NULL, &p, &err) == 0, "%s", err.message);
		runs++;
	}
	ck_assert_uint_eq(p.gone + p.skipped, 0);
	ck_assert_int_eq(hrt_redis_dbsize(dst, 0), N);
	fprintf(stderr, "source restarted mid-copy: done in %d run(s)\n", runs);
	hr_ring_release(ring);
	hrt_redis_stop(src);
	hrt_redis_stop(dst);
}
END_TEST

/* The keys cap holds on a real copy, within 5% (plus the 1/20 s burst). */
START_TEST(rate_cap_holds)
{
	enum { N = 3000, CAP = 1000 };
	hrt_redis *src = hrt_redis_start(NULL, NULL), *dst = hrt_redis_start(NULL, NULL);
	redisContext *a = hrt_redis_connect(src, 0);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	hr_ring *ring = move_all(hrt_redis_addr(src), hrt_redis_addr(dst));
	double t0, secs, rate;

	fill_strings(a, "k:", N, 100);
	t0 = now_s();
	ck_assert_msg(copy_ring(ring, NULL, CAP, NULL, &p, &err) == 0, "%s", err.message);
	secs = now_s() - t0;
	rate = (double)(p.copied - CAP / 20) / secs;
	fprintf(stderr, "rate cap %d keys/s: %" PRIu64 " keys in %.3f s, %.0f keys/s\n", CAP,
		p.copied, secs, (double)p.copied / secs);
	ck_assert_uint_eq(p.copied, N);
	ck_assert_msg(rate <= CAP * 1.05 && rate >= CAP * 0.9, "%.0f keys/s", rate);
	hr_ring_release(ring);
	redisFree(a);
	hrt_redis_stop(src);
	hrt_redis_stop(dst);
}
END_TEST

/* ---- the command ------------------------------------------------------------------ */

static hrt_etcd_cluster *etcd;

static int64_t put_node(const char *id, const hrt_redis *r, const char *state)
{
	char key[64], value[128];
	int64_t rev;

	snprintf(key, sizeof key, PREFIX "%s", id);
	snprintf(value, sizeof value, "{\"addr\":\"%s\",\"state\":\"%s\"}", hrt_redis_addr(r),
		 state);
	rev = hrt_put(hrt_etcd_client_url(etcd, 0), key, value);
	ck_assert_int_gt(rev, 0);
	return rev;
}

/* Keys [0, n) at their owners in `ring`, which names redis r0/r1. */
static void fill_by_ring(const hr_ring *ring, hrt_redis *const *nodes, int n)
{
	redisContext *c[2] = { hrt_redis_connect(nodes[0], 0), hrt_redis_connect(nodes[1], 0) };
	int sent[2] = { 0, 0 };

	for (int i = 0; i < n; i++) {
		char key[32];
		int len = snprintf(key, sizeof key, "key:%d", i);
		hr_lookup lk;
		int at;

		ck_assert_int_eq(hr_ring_lookup(ring, key, (size_t)len, &lk, NULL), 0);
		at = lk.node->id[1] - '0';
		redisAppendCommand(c[at], "SET %s value-%d EX 3600", key, i);
		sent[at]++;
	}
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < sent[k]; i++) {
			void *reply = NULL;

			ck_assert_int_eq(redisGetReply(c[k], &reply), REDIS_OK);
			freeReplyObject(reply);
		}
		redisFree(c[k]);
	}
}

/* Every key [0, n) at its owner in `ring`. */
static void check_all(const hr_ring *ring, hrt_redis *const *nodes, int n)
{
	redisContext *c[3];

	for (int k = 0; k < 3; k++)
		c[k] = hrt_redis_connect(nodes[k], 0);
	for (int i = 0; i < n; i++) {
		char key[32];
		int len = snprintf(key, sizeof key, "key:%d", i);
		hr_lookup lk;

		ck_assert_int_eq(hr_ring_lookup(ring, key, (size_t)len, &lk, NULL), 0);
		EXPECT(integer(c[lk.node->id[1] - '0'], "EXISTS %s", key) == 1);
	}
	for (int k = 0; k < 3; k++)
		redisFree(c[k]);
}

/* `hashring rebalance --backend redis`: credentials from a file or the
 * environment and never shown; a copy killed by SIGKILL and rerun
 * converges; --promote makes the node active. */
START_TEST(cli_runs_the_join)
{
	enum { N = 6000 };
	const char *const extra[] = { "--requirepass", "cli-pw", NULL };
	hrt_redis *nodes[3];
	const char *endpoints;
	char authfile[] = "/tmp/hrt-redis-auth-XXXXXX", env_pw[64];
	hr_etcd_config ecfg;
	hr_client_config ccfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	hr_ring *before, *ring;
	hrt_cli_run r;
	hrt_child ch;
	hr_acks *acks = NULL;
	int64_t rev;
	int fd;

	etcd = hrt_etcd_start(1, NULL);
	ck_assert(etcd != NULL);
	endpoints = hrt_etcd_endpoints(etcd);
	for (int i = 0; i < 3; i++) {
		nodes[i] = hrt_redis_start("cli-pw", extra);
		ck_assert(nodes[i] != NULL);
	}
	put_node("r0", nodes[0], "active");
	put_node("r1", nodes[1], "active");
	hr_etcd_config_init(&ecfg);
	ecfg.endpoints = endpoints;
	ecfg.prefix = PREFIX;
	ecfg.log_level = HR_LOG_WARN;
	hr_client_config_init(&ccfg);
	ccfg.ack_client_id = "app-1";
	ccfg.ack_prefix = ACKS;
	ck_assert_msg(hr_client_open(&ecfg, &ccfg, &c, &err) == 0, "%s", err.message);
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 10000), 0);
	before = hr_client_ring(c);
	fill_by_ring(before, nodes, N);
	rev = put_node("r2", nodes[2], "warming");
	ck_assert_msg(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev, 10000, &acks, &err) == 0, "%s",
		      err.message);
	hr_acks_free(acks);

	fd = mkstemp(authfile);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "# the movers' secret\npassword=cli-pw\n", 37), 37);
	close(fd);
	/* mkstemp made it 0600: no warning then (checked below). */

	/* No credentials: refused, naming a node. */
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--backend", "redis",
		"--endpoints", endpoints, "--prefix", PREFIX, "--ack-prefix", ACKS, NULL });
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "NOAUTH"), "%s", r.err);
	/* A wrong one from the environment: refused, never shown. */
	hrt_cli_run_cmd(&r, (const char *const[]){ "HASHRING_REDIS_PASSWORD=env-wrong-pw", NULL },
		(const char *const[]){ "rebalance", "--backend", "redis", "--endpoints", endpoints,
		"--prefix", PREFIX, "--ack-prefix", ACKS, "--log-level", "debug", NULL });
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "WRONGPASS") && !strstr(r.err, "env-wrong-pw"), "%s", r.err);
	/* An option only for the Redis backend. */
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--redis-db", "1",
		"--endpoints", endpoints, "--prefix", PREFIX, "--ack-prefix", ACKS, NULL });
	ck_assert_int_eq(r.status, 2);

	/* Killed mid-copy, then run again with --promote. */
	ch = hrt_cli_spawn((const char *const[]){ "rebalance", "--backend", "redis",
		"--redis-auth-file", authfile, "--endpoints", endpoints, "--prefix", PREFIX,
		"--ack-prefix", ACKS, "--rate", "1500", "--json", NULL }, NULL);
	sleep_ms(800);
	kill(ch.pid, SIGKILL);
	hrt_cli_wait(&ch, &r);
	ck_assert_int_eq(r.signal, SIGKILL);
	ck_assert_msg(!strstr(r.err, "readable by every user"), "%s", r.err);
	/* Readable by all: said, and the run goes on. */
	chmod(authfile, 0644);
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--backend", "redis",
		"--redis-auth-file", authfile, "--endpoints", endpoints, "--prefix", PREFIX,
		"--ack-prefix", ACKS, "--id", "r9", NULL });
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "is readable by every user") &&
		      strstr(r.err, "node 'r9' is not in the ring"), "%s", r.err);
	{
		long long partial = hrt_redis_dbsize(nodes[2], 0);

		fprintf(stderr, "cli: killed with %lld keys on r2\n", partial);
		ck_assert_int_gt(partial, 0);
	}
	snprintf(env_pw, sizeof env_pw, "HASHRING_REDIS_PASSWORD=cli-pw");
	hrt_cli_run_cmd(&r, (const char *const[]){ env_pw, NULL }, (const char *const[]){
		"rebalance", "--backend", "redis", "--endpoints", endpoints, "--prefix", PREFIX,
		"--ack-prefix", ACKS, "--promote", "--json", "--log-level", "debug", NULL });
	ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.out, "{\"step\":\"copy\",\"scanned\":6000,"), "%s", r.out);
	ck_assert_msg(strstr(r.out, "\"present\":") && !strstr(r.out, "\"present\":0,"), "%s",
		      r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "{\"step\":\"promote\",\"nodes\":1,"));
	ck_assert_msg(!strstr(r.out, "cli-pw") && !strstr(r.err, "cli-pw"), "%s", r.err);
	ck_assert_msg(strstr(r.err, "backend=redis") || strstr(r.err, "event=rebalance_done"), "%s",
		      r.err);
	ck_assert_int_eq(hrt_wait_state(c, "r2", HR_STATE_ACTIVE, 10000), 0);
	ring = hr_client_ring(c);
	check_all(ring, nodes, N);

	unlink(authfile);
	hr_ring_release(ring);
	hr_ring_release(before);
	hr_client_close(c);
	for (int i = 0; i < 3; i++)
		hrt_redis_stop(nodes[i]);
	hrt_etcd_destroy(etcd);
	etcd = NULL;
}
END_TEST

int main(void)
{
	Suite *s = suite_create("handoff_redis");
	TCase *tc = tcase_create("handoff_redis");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, every_type_moves_with_its_ttl);
	tcase_add_test(tc, remove_compares_the_payload);
	tcase_add_test(tc, expired_keys_stay_expired);
	tcase_add_test(tc, full_destination_stops_and_rerun_finishes);
	tcase_add_test(tc, closed_port_is_named);
	tcase_add_test(tc, wrong_password_is_refused);
	tcase_add_test(tc, too_big_for_the_destination_is_skipped);
	tcase_add_loop_test(tc, foreign_payload_is_skipped, 0, 2);
	tcase_add_test(tc, source_restarted_mid_copy);
	tcase_add_test(tc, rate_cap_holds);
	tcase_add_test(tc, cli_runs_the_join);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
