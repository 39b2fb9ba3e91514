/* SPDX-License-Identifier: MIT */
/* rebalance_redis.c - the rebalancer's Redis backend (hr_rebalance_redis):
 * SCAN, DUMP + PTTL, RESTORE without REPLACE, a checked delete; a
 * connection per node over redis.c, made on first use and made again
 * after an error. */
#define _GNU_SOURCE
#include "rebalance_impl.h"

#include "redis.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The RDB version and CRC-64 that end a DUMP payload. */
#define DUMP_TRAILER 10

/* The checksum that ends the DUMP of KEYS[1], or nil: the copy's CAS.
 * The destination's own, not the source's: a set or hash in a hash table
 * may serialise in another order once restored. */
static const char crc_script[] = "local d = redis.call('DUMP', KEYS[1]) "
				 "if d then return string.sub(d, -8) end return false";

/* Deletes KEYS[1] only if its DUMP still ends in the checksum ARGV[1]:
 * the copy's own, not a value a client wrote since. */
static const char remove_script[] =
	"local d = redis.call('DUMP', KEYS[1]) "
	"if d and string.sub(d, -8) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
	"return 0";

typedef struct rd_conn {
	char *addr;
	hr__redis *r;
} rd_conn;

typedef struct rd_backend {
	hr_rebalance_redis_config cfg;  /* user and password: our copies */
	rd_conn *conns;
	size_t n, cap;
	/* The last value fetched: its payload, and its TTL when read. */
	redisReply *dump;
	long long pttl_ms;              /* -1: none */
	uint64_t fetched_ns;
} rd_backend;

static rd_conn *find_conn(rd_backend *b, const char *addr, hr_error *err)
{
	size_t i;

	for (i = 0; i < b->n && strcmp(b->conns[i].addr, addr); i++)
		;
	if (i < b->n)
		return &b->conns[i];
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 8;
		rd_conn *c = realloc(b->conns, cap * sizeof *c);

		if (!c)
			goto oom;
		b->conns = c;
		b->cap = cap;
	}
	b->conns[i] = (rd_conn){ strdup(addr), NULL };
	if (!b->conns[i].addr)
		goto oom;
	b->n++;
	return &b->conns[i];
oom:
	hr__rb_error_set(err, HR_ENOMEM, "out of memory (connections)");
	return NULL;
}

static void free_replies(redisReply **replies, size_t n)
{
	for (size_t i = 0; i < n; i++)
		freeReplyObject(replies[i]);
}

/* Pauses between the attempts of a node coming back. */
#define RETRY_MS 50

static void nap_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Runs the commands on the connection to `addr`, made if there is none.
 * A connection that breaks (the server restarted, a timeout) is dropped
 * and the commands tried again on a new one, while the server comes back
 * (refuses connections, answers LOADING) for at most the timeout: each
 * command is idempotent, a RESTORE that landed before the break answers
 * BUSYKEY the second time.  A connection never made is not retried.
 */
static int run(rd_backend *b, const char *addr, const hr__redis_cmd *cmds, size_t n,
	       redisReply **replies, hr_error *err)
{
	rd_conn *c = find_conn(b, addr, err);
	uint64_t end_ns = 0;
	int rc;

	if (!c)
		return HR_ENOMEM;
	for (;;) {
		int had = c->r != NULL;

		rc = had ? 0 : hr__redis_connect(addr, b->cfg.timeout_ms, b->cfg.user,
						  b->cfg.password, b->cfg.db, &c->r, err);
		if (rc == 0) {
			rc = hr__redis_pipeline(c->r, cmds, n, replies, err);
			if (rc == 0 && !(n && hr__redis_is_error(replies[0], "LOADING")))
				return 0;
			if (rc == 0) {
				/* A reply: the connection is sound, the data not there yet. */
				free_replies(replies, n);
				rc = hr__rb_error_set(err, HR_EIO, "%s is still loading its data (LOADING)",
						      addr);
			} else {
				hr__redis_close(c->r);
				c->r = NULL;
			}
		}
		if (rc == HR_ENOMEM || rc == HR_EAUTH || rc == HR_EINVAL)
			return rc;
		if (!end_ns) {
			/* A node never reached is down, not coming back. */
			if (!had && rc == HR_ECONNECT)
				return rc;
			end_ns = hr__rate_now_ns() + (uint64_t)b->cfg.timeout_ms * 1000000u;
		} else if (hr__rate_now_ns() >= end_ns) {
			return rc;
		}
		nap_ms(RETRY_MS);
	}
}

static long long max_bulk(rd_backend *b, const char *addr)
{
	for (size_t i = 0; i < b->n; i++)
		if (!strcmp(b->conns[i].addr, addr) && b->conns[i].r)
			return hr__redis_max_bulk(b->conns[i].r);
	return HR__REDIS_DEFAULT_MAX_BULK;
}

/* An error reply to a command on `addr`, as a code with the server's words. */
static int refused(rd_backend *b, const char *addr, const char *what, const redisReply *reply,
		   hr_error *err)
{
	rd_conn *c = find_conn(b, addr, err);

	if (c && c->r)
		return hr__redis_reply_error(c->r, what, reply, err);
	return hr__rb_error_set(err, HR_EIO, "%s refused %s", addr, what);
}

/* SCAN in COUNT batches: every key present for the whole iteration is
 * listed at least once, so one pass lists all.  A key may come twice
 * (the table grew meanwhile): the rebalancer drops repeats. */
static int rd_enumerate(void *userdata, const char *addr, unsigned pass,
			hr_rebalance_key_fn fn, void *ctx, hr_error *err)
{
	rd_backend *b = userdata;
	char cursor[32] = "0", count[24];
	int rc = 0;

	(void)pass;
	snprintf(count, sizeof count, "%zu", b->cfg.scan_count);
	do {
		hr__redis_cmd cmd = { 4, { "SCAN", cursor, "COUNT", count },
				      { 4, strlen(cursor), 5, strlen(count) } };
		redisReply *reply, *keys;

		rc = run(b, addr, &cmd, 1, &reply, err);
		if (rc)
			return rc;
		if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
		    reply->element[0]->type != REDIS_REPLY_STRING ||
		    reply->element[0]->len >= sizeof cursor ||
		    reply->element[1]->type != REDIS_REPLY_ARRAY) {
			rc = refused(b, addr, "SCAN", reply, err);
			freeReplyObject(reply);
			return rc;
		}
		memcpy(cursor, reply->element[0]->str, reply->element[0]->len);
		cursor[reply->element[0]->len] = '\0';
		keys = reply->element[1];
		for (size_t i = 0; rc == 0 && i < keys->elements; i++)
			if (keys->element[i]->type == REDIS_REPLY_STRING)
				rc = fn(ctx, keys->element[i]->str, keys->element[i]->len, 0);
		freeReplyObject(reply);
	} while (rc == 0 && strcmp(cursor, "0"));
	return rc ? rc : HR_REBALANCE_LISTED_ALL;
}

static int rd_fetch(void *userdata, const char *addr, const void *key, size_t len,
		    hr_rebalance_value *out, hr_error *err)
{
	rd_backend *b = userdata;
	hr__redis_cmd cmds[2] = {
		{ 2, { "DUMP", key }, { 4, len } },
		{ 2, { "PTTL", key }, { 4, len } },
	};
	redisReply *r[2];
	int rc;

	if (!out) {
		cmds[0] = (hr__redis_cmd){ 2, { "EXISTS", key }, { 6, len } };
		rc = run(b, addr, cmds, 1, r, err);
		if (rc)
			return rc;
		rc = r[0]->type == REDIS_REPLY_INTEGER ? r[0]->integer > 0 :
			refused(b, addr, "EXISTS", r[0], err);
		freeReplyObject(r[0]);
		return rc;
	}
	rc = run(b, addr, cmds, 2, r, err);
	if (rc)
		return rc;
	if (r[0]->type == REDIS_REPLY_ERROR || r[1]->type != REDIS_REPLY_INTEGER) {
		rc = refused(b, addr, r[0]->type == REDIS_REPLY_ERROR ? "DUMP" : "PTTL",
			     r[0]->type == REDIS_REPLY_ERROR ? r[0] : r[1], err);
		free_replies(r, 2);
		return rc;
	}
	/* Gone, or expired between the two (PTTL -2). */
	if (r[0]->type != REDIS_REPLY_STRING || r[1]->integer == -2) {
		free_replies(r, 2);
		return 0;
	}
	freeReplyObject(b->dump);
	b->dump = r[0];
	b->pttl_ms = r[1]->integer < 0 ? -1 : r[1]->integer;
	b->fetched_ns = hr__rate_now_ns();
	freeReplyObject(r[1]);
	*out = (hr_rebalance_value){ b->dump->str, b->dump->len, 0,
				     b->pttl_ms < 0 ? -1 : b->pttl_ms / 1000 };
	return 1;
}

/* The CRC-64 that ends a payload, as its CAS. */
static uint64_t payload_crc(const void *data, size_t len)
{
	uint64_t v = 0;

	if (len >= DUMP_TRAILER)
		memcpy(&v, (const char *)data + len - 8, 8);
	return v;
}

static int rd_add(void *userdata, const char *addr, const void *key, size_t len,
		  const hr_rebalance_value *value, uint64_t *cas, hr_error *err)
{
	rd_backend *b = userdata;
	long long ttl = 0, limit;
	char ttlarg[24];
	hr__redis_cmd cmds[2];
	redisReply *rs[2], *r;
	int rc;

	*cas = payload_crc(value->data, value->len);
	if (value->ttl_s >= 0) {
		/* The milliseconds left now: the wait for the rate cap ran
		 * down the TTL read at the fetch. */
		if (b->dump && value->data == b->dump->str)
			ttl = b->pttl_ms - (long long)((hr__rate_now_ns() - b->fetched_ns) / 1000000u);
		else
			ttl = (long long)value->ttl_s * 1000;
		/* Expired on its way: it stays expired.  Nothing is stored,
		 * and the look at the source that follows finds it gone. */
		if (ttl <= 0)
			return 1;
	}
	/* A longer argument would make the server drop the connection. */
	rc = run(b, addr, NULL, 0, NULL, err); /* connected: its limit known */
	if (rc)
		return rc;
	limit = max_bulk(b, addr);
	if ((long long)value->len > limit || (long long)len > limit)
		return hr__rb_error_set(err, HR_ELIMIT,
					"a %s of %zu bytes is over the proto-max-bulk-len of %s (%lld)",
					(long long)len > limit ? "key" : "value",
					(long long)len > limit ? len : value->len, addr, limit);
	snprintf(ttlarg, sizeof ttlarg, "%lld", ttl);
	cmds[0] = (hr__redis_cmd){ 4, { "RESTORE", key, ttlarg, value->data },
				   { 7, len, strlen(ttlarg), value->len } };
	cmds[1] = (hr__redis_cmd){ 4, { "EVAL", crc_script, "1", key },
				   { 4, sizeof crc_script - 1, 1, len } };
	rc = run(b, addr, cmds, 2, rs, err);
	if (rc)
		return rc;
	r = rs[0];
	if (r->type == REDIS_REPLY_STATUS) {
		rc = 1;
		if (rs[1]->type == REDIS_REPLY_STRING && rs[1]->len == 8)
			memcpy(cas, rs[1]->str, 8);
	}
	else if (hr__redis_is_error(r, "BUSYKEY"))
		rc = 0; /* a client wrote it there since the ring changed */
	else if (r->type == REDIS_REPLY_ERROR &&
		 (strstr(r->str, "payload version") || strstr(r->str, "Bad data format")))
		/* Another RDB version (a newer Redis, or Valkey), or a value
		 * this server cannot read: the key stays on its source. */
		rc = hr__rb_error_set(err, HR_ELIMIT, "%s refused its payload: %.*s", addr,
				      (int)(r->len > 120 ? 120 : r->len), r->str);
	else
		rc = refused(b, addr, "RESTORE", r, err);
	free_replies(rs, 2);
	return rc;
}

static int rd_remove(void *userdata, const char *addr, const void *key, size_t len,
		     uint64_t cas, hr_error *err)
{
	rd_backend *b = userdata;
	char crc[8];
	hr__redis_cmd cmd;
	redisReply *r;
	int rc;

	memcpy(crc, &cas, 8);
	if (cas)
		cmd = (hr__redis_cmd){ 5, { "EVAL", remove_script, "1", key, crc },
				       { 4, sizeof remove_script - 1, 1, len, 8 } };
	else
		cmd = (hr__redis_cmd){ 2, { "DEL", key }, { 3, len } };
	rc = run(b, addr, &cmd, 1, &r, err);
	if (rc)
		return rc;
	rc = r->type == REDIS_REPLY_INTEGER ? r->integer > 0 :
		refused(b, addr, cas ? "EVAL (a checked DEL)" : "DEL", r, err);
	freeReplyObject(r);
	return rc;
}

static void rd_close(void *userdata)
{
	rd_backend *b = userdata;

	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		hr__redis_close(b->conns[i].r);
		free(b->conns[i].addr);
	}
	free(b->conns);
	freeReplyObject(b->dump);
	free((char *)b->cfg.user);
	if (b->cfg.password) {
		/* Not left in freed memory. */
		explicit_bzero((char *)b->cfg.password, strlen(b->cfg.password));
		free((char *)b->cfg.password);
	}
	free(b);
}

int hr_rebalance_redis(const hr_rebalance_redis_config *cfg, hr_rebalance_backend *out,
		       hr_error *err)
{
	hr_rebalance_backend be;
	hr_rebalance_redis_config c;
	rd_backend *b;
	int rc;

	if (!out || out->size < offsetof(hr_rebalance_backend, userdata) + sizeof(void *) ||
	    out->size > 4096)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalance_redis: out must be set up with"
					" hr_rebalance_backend_init()");
	rc = hr__rebalance_redis_config_read(cfg, &c, err);
	if (rc)
		return rc;
	b = calloc(1, sizeof *b);
	if (!b)
		return hr__rb_error_set(err, HR_ENOMEM, "out of memory (Redis backend)");
	b->cfg = c;
	b->cfg.user = c.user ? strdup(c.user) : NULL;
	b->cfg.password = c.password ? strdup(c.password) : NULL;
	if ((c.user && !b->cfg.user) || (c.password && !b->cfg.password)) {
		rd_close(b);
		return hr__rb_error_set(err, HR_ENOMEM, "out of memory (Redis backend)");
	}
	be = (hr_rebalance_backend){
		.size = sizeof be,
		.userdata = b,
		.enumerate = rd_enumerate,
		.fetch = rd_fetch,
		.add = rd_add,
		.remove = rd_remove,
		.close = rd_close,
		.enumerate_passes = 1,
		.name = "redis",
	};
	/* The caller's struct, no byte beyond its size. */
	memcpy((char *)out + sizeof out->size, (char *)&be + sizeof be.size,
	       (out->size < sizeof be ? out->size : sizeof be) - sizeof be.size);
	return 0;
}
