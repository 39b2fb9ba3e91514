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

/* A value fetched: its payload, and its TTL when read. */
typedef struct rd_fetched {
	redisReply *dump;
	long long pttl_ms;              /* -1: none */
	uint64_t at_ns;
} rd_fetched;

typedef struct rd_backend {
	hr_rebalance_redis_config cfg;  /* user and password: our copies */
	rd_conn *conns;
	size_t n, cap;
	/* The values fetched last, valid until the next fetch. */
	rd_fetched fetched[HR_REBALANCE_BATCH_MAX];
	size_t nfetched;
	uint64_t breaks;                /* connections that broke and were made again */
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
			/* Only a connection that broke is waited for: a node
			 * never reached, or refusing us, is no restart. */
			if (!had)
				return rc;
			end_ns = hr__rate_now_ns() + (uint64_t)b->cfg.timeout_ms * 1000000u;
			b->breaks++;
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
 * (the table grew meanwhile): the rebalancer drops repeats.  A cursor
 * means nothing to a server restarted since it was given: a connection
 * made again during the scan fails it (a rerun scans again). */
static int rd_enumerate(void *userdata, const char *addr, unsigned pass,
			hr_rebalance_key_fn fn, void *ctx, hr_error *err)
{
	rd_backend *b = userdata;
	char cursor[32] = "0", count[24];
	uint64_t breaks = b->breaks;
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
		if (b->breaks != breaks) {
			freeReplyObject(reply);
			return hr__rb_error_set(err, HR_EIO,
						"%s: the connection broke during SCAN (the server"
						" restarted?): its cursor is void, scan again", addr);
		}
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

/* Forgets the values fetched last. */
static void release_fetched(rd_backend *b)
{
	for (size_t i = 0; i < b->nfetched; i++)
		freeReplyObject(b->fetched[i].dump);
	b->nfetched = 0;
}

/* One key's DUMP and PTTL replies: 1 with *out (the reply kept until the
 * next fetch), 0 gone, or the error (the replies freed). */
static int take_value(rd_backend *b, const char *addr, redisReply *dump, redisReply *pttl,
		      hr_rebalance_value *out, hr_error *err)
{
	rd_fetched *f = &b->fetched[b->nfetched];
	int rc;

	if (dump->type == REDIS_REPLY_ERROR || pttl->type != REDIS_REPLY_INTEGER) {
		rc = refused(b, addr, dump->type == REDIS_REPLY_ERROR ? "DUMP" : "PTTL",
			     dump->type == REDIS_REPLY_ERROR ? dump : pttl, err);
		freeReplyObject(dump);
		freeReplyObject(pttl);
		return rc;
	}
	/* Gone, or expired between the two (PTTL -2). */
	if (dump->type != REDIS_REPLY_STRING || pttl->integer == -2) {
		freeReplyObject(dump);
		freeReplyObject(pttl);
		return 0;
	}
	*f = (rd_fetched){ dump, pttl->integer < 0 ? -1 : pttl->integer, hr__rate_now_ns() };
	b->nfetched++;
	freeReplyObject(pttl);
	*out = (hr_rebalance_value){ dump->str, dump->len, 0,
				     f->pttl_ms < 0 ? -1 : f->pttl_ms / 1000 };
	return 1;
}

/* EXISTS of each key, pipelined: rcs[i] 1 or 0, or an error. */
static int exist(rd_backend *b, const char *addr, size_t n, const void *const *keys,
		 const size_t *lens, int *rcs, hr_error *err)
{
	/* Zeroed: GCC cannot see that n > 0 fills what run() reads. */
	hr__redis_cmd cmds[HR_REBALANCE_BATCH_MAX] = { { 0 } };
	redisReply *r[HR_REBALANCE_BATCH_MAX];
	int rc;

	if (n == 0 || n > HR_REBALANCE_BATCH_MAX)
		return hr__rb_error_set(err, HR_EINVAL, "a batch of %zu keys (1 to %d)", n,
					HR_REBALANCE_BATCH_MAX);
	for (size_t i = 0; i < n; i++)
		cmds[i] = (hr__redis_cmd){ 2, { "EXISTS", keys[i] }, { 6, lens[i] } };
	rc = run(b, addr, cmds, n, r, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rcs[i] = r[i]->type == REDIS_REPLY_INTEGER ? r[i]->integer > 0 :
			 refused(b, addr, "EXISTS", r[i], err);
		freeReplyObject(r[i]);
	}
	return 0;
}

/* DUMP and PTTL of each key, all in one round trip. */
static int rd_fetch_batch(void *userdata, const char *addr, size_t n, const void *const *keys,
			  const size_t *lens, hr_rebalance_value *out, int *rcs, hr_error *err)
{
	rd_backend *b = userdata;
	hr__redis_cmd cmds[2 * HR_REBALANCE_BATCH_MAX];
	redisReply *r[2 * HR_REBALANCE_BATCH_MAX];
	int rc;

	if (n > HR_REBALANCE_BATCH_MAX)
		return hr__rb_error_set(err, HR_EINVAL, "a batch of %zu keys (at most %d)", n,
					HR_REBALANCE_BATCH_MAX);
	if (!out)
		return exist(b, addr, n, keys, lens, rcs, err);
	release_fetched(b);
	for (size_t i = 0; i < n; i++) {
		cmds[2 * i] = (hr__redis_cmd){ 2, { "DUMP", keys[i] }, { 4, lens[i] } };
		cmds[2 * i + 1] = (hr__redis_cmd){ 2, { "PTTL", keys[i] }, { 4, lens[i] } };
	}
	rc = run(b, addr, cmds, 2 * n, r, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		rcs[i] = take_value(b, addr, r[2 * i], r[2 * i + 1], &out[i], err);
	return 0;
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
		int there;

		rc = exist(b, addr, 1, &key, &len, &there, err);
		return rc ? rc : there;
	}
	release_fetched(b);
	rc = run(b, addr, cmds, 2, r, err);
	if (rc)
		return rc;
	return take_value(b, addr, r[0], r[1], out, err);
}

/* The RDB type of a plain string, the payload's first byte. */
#define RDB_TYPE_STRING 0

/* Whether the destination's own checksum of a restored `value` must be
 * read: a string serialises as it came (the same bytes, the same
 * checksum), a collection in a hash table may not.  Reading it costs the
 * server a DUMP of the value. */
static int needs_own_crc(const hr_rebalance_value *value)
{
	return !value->len || ((const unsigned char *)value->data)[0] != RDB_TYPE_STRING;
}

/* The CRC-64 that ends a payload, as its CAS. */
static uint64_t payload_crc(const void *data, size_t len)
{
	uint64_t v = 0;

	if (len >= DUMP_TRAILER)
		memcpy(&v, (const char *)data + len - 8, 8);
	return v;
}

/* The milliseconds `value` has left now, RESTORE's TTL (0: no expiry):
 * the wait for the rate cap ran down the TTL read at the fetch.
 * *expired when its time ran out on the way. */
static long long ttl_left(const rd_backend *b, const hr_rebalance_value *value, int *expired)
{
	long long ttl;

	*expired = 0;
	if (value->ttl_s < 0)
		return 0;
	ttl = (long long)value->ttl_s * 1000;
	for (size_t i = 0; i < b->nfetched; i++) {
		const rd_fetched *f = &b->fetched[i];

		if (f->dump->str == value->data) {
			ttl = f->pttl_ms - (long long)((hr__rate_now_ns() - f->at_ns) / 1000000u);
			break;
		}
	}
	*expired = ttl <= 0;
	return ttl;
}

/* Whether `key` and its value fit the destination's proto-max-bulk-len:
 * a longer argument would make the server drop the connection. */
static int fits(rd_backend *b, const char *addr, const void *key, size_t len,
		const hr_rebalance_value *value, hr_error *err)
{
	long long limit = max_bulk(b, addr);

	if ((long long)value->len > limit || (long long)len > limit)
		return hr__rb_error_set(err, HR_ELIMIT,
					"a %s of %zu bytes is over the proto-max-bulk-len of %s (%lld)",
					(long long)len > limit ? "key" : "value",
					(long long)len > limit ? len : value->len, addr, limit);
	(void)key;
	return 0;
}

/* The replies of RESTORE and of the checksum script: 1 stored (*cas the
 * destination's checksum), 0 present, or the error. */
static int restored(rd_backend *b, const char *addr, redisReply *r, redisReply *crc,
		    uint64_t *cas, hr_error *err)
{
	int rc;

	if (r->type == REDIS_REPLY_STATUS) {
		rc = 1;
		if (crc && crc->type == REDIS_REPLY_STRING && crc->len == 8)
			memcpy(cas, crc->str, 8);
	} else if (hr__redis_is_error(r, "BUSYKEY")) {
		rc = 0; /* a client wrote it there since the ring changed */
	} else if (r->type == REDIS_REPLY_ERROR &&
		   (strstr(r->str, "payload version") || strstr(r->str, "Bad data format"))) {
		/* Another RDB version (a newer Redis, or Valkey), or a value
		 * this server cannot read: the key stays on its source. */
		rc = hr__rb_error_set(err, HR_ELIMIT, "%s refused its payload: %.*s", addr,
				      (int)(r->len > 120 ? 120 : r->len), r->str);
	} else {
		rc = refused(b, addr, "RESTORE", r, err);
	}
	freeReplyObject(r);
	if (crc)
		freeReplyObject(crc);
	return rc;
}

/* RESTORE (no REPLACE) and the checksum script of each key admitted, all
 * in one round trip; a key expired on its way or too long is not sent. */
static int rd_add_batch(void *userdata, const char *addr, size_t n, const void *const *keys,
			const size_t *lens, const hr_rebalance_value *values, uint64_t *cas,
			int *rcs, hr_error *err)
{
	rd_backend *b = userdata;
	hr__redis_cmd cmds[2 * HR_REBALANCE_BATCH_MAX];
	redisReply *r[2 * HR_REBALANCE_BATCH_MAX];
	char ttls[HR_REBALANCE_BATCH_MAX][24];
	size_t sent[HR_REBALANCE_BATCH_MAX], ns = 0, nc = 0;
	int rc, with_crc[HR_REBALANCE_BATCH_MAX];

	if (n > HR_REBALANCE_BATCH_MAX)
		return hr__rb_error_set(err, HR_EINVAL, "a batch of %zu keys (at most %d)", n,
					HR_REBALANCE_BATCH_MAX);
	rc = run(b, addr, NULL, 0, NULL, err); /* connected: its limit known */
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		int expired;
		long long ttl = ttl_left(b, &values[i], &expired);

		cas[i] = payload_crc(values[i].data, values[i].len);
		/* Expired on its way: it stays expired.  Nothing is stored,
		 * and the look at the source that follows finds it gone. */
		if (expired) {
			rcs[i] = 1;
			continue;
		}
		rcs[i] = fits(b, addr, keys[i], lens[i], &values[i], err);
		if (rcs[i])
			continue;
		snprintf(ttls[i], sizeof ttls[i], "%lld", ttl);
		cmds[nc++] = (hr__redis_cmd){ 4, { "RESTORE", keys[i], ttls[i], values[i].data },
					      { 7, lens[i], strlen(ttls[i]), values[i].len } };
		with_crc[ns] = needs_own_crc(&values[i]);
		if (with_crc[ns])
			cmds[nc++] = (hr__redis_cmd){ 4, { "EVAL", crc_script, "1", keys[i] },
						      { 4, sizeof crc_script - 1, 1, lens[i] } };
		sent[ns++] = i;
	}
	if (!ns)
		return 0;
	rc = run(b, addr, cmds, nc, r, err);
	if (rc)
		return rc;
	for (size_t k = 0, at = 0; k < ns; k++) {
		redisReply *restore = r[at++], *crc = with_crc[k] ? r[at++] : NULL;

		rcs[sent[k]] = restored(b, addr, restore, crc, &cas[sent[k]], err);
	}
	return 0;
}

static int rd_add(void *userdata, const char *addr, const void *key, size_t len,
		  const hr_rebalance_value *value, uint64_t *cas, hr_error *err)
{
	rd_backend *b = userdata;
	hr__redis_cmd cmds[2];
	redisReply *r[2];
	char ttlarg[24];
	int rc, expired;
	long long ttl = ttl_left(b, value, &expired);

	*cas = payload_crc(value->data, value->len);
	if (expired)
		return 1; /* as in rd_add_batch */
	rc = run(b, addr, NULL, 0, NULL, err);
	if (rc == 0)
		rc = fits(b, addr, key, len, value, err);
	if (rc)
		return rc;
	snprintf(ttlarg, sizeof ttlarg, "%lld", ttl);
	cmds[0] = (hr__redis_cmd){ 4, { "RESTORE", key, ttlarg, value->data },
				   { 7, len, strlen(ttlarg), value->len } };
	cmds[1] = (hr__redis_cmd){ 4, { "EVAL", crc_script, "1", key },
				   { 4, sizeof crc_script - 1, 1, len } };
	rc = run(b, addr, cmds, needs_own_crc(value) ? 2 : 1, r, err);
	if (rc)
		return rc;
	return restored(b, addr, r[0], needs_own_crc(value) ? r[1] : NULL, cas, err);
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
	release_fetched(b);
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
		.fetch_batch = rd_fetch_batch,
		.add_batch = rd_add_batch,
	};
	/* The caller's struct, no byte beyond its size. */
	memcpy((char *)out + sizeof out->size, (char *)&be + sizeof be.size,
	       (out->size < sizeof be ? out->size : sizeof be) - sizeof be.size);
	return 0;
}
