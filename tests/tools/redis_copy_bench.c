/* SPDX-License-Identifier: MIT */
/*
 * redis_copy_bench.c - the Redis copy measured (docs/performance.md,
 * "Redis"), against two running servers; tests/tools/redis_bench.sh
 * starts them and runs it.
 *
 *   fill ADDR N SIZE          N strings "k:<i>" of SIZE random bytes, no TTL
 *   proto N SIZE              the same as RESP on stdout, for redis-cli --pipe
 *   copy SRC DST [KEYS_S [BYTES_S]]  hr_rebalancer_copy() through the Redis
 *                             backend, every key moving, capped at KEYS_S
 *                             keys/s and BYTES_S bytes/s (0: no cap)
 *   migrate SRC DST BATCH     MIGRATE ... COPY (no REPLACE) of SRC's keys,
 *                             BATCH keys a command (KEYS form when > 1)
 *   dumprestore SRC DST BATCH DUMP + PTTL then RESTORE, BATCH keys a pipeline
 *
 * Each measuring mode prints one line: mode, keys, bytes, seconds, keys/s,
 * MB/s (value bytes: the strings' SIZE, not the payloads').
 */
#define _GNU_SOURCE
#include "hashring/rebalance.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "redis_copy_bench: %s: %s\n", what, why);
	exit(1);
}

static redisContext *connect_to(const char *addr, char *host, int *port)
{
	const char *colon = strrchr(addr, ':');
	redisContext *c;

	if (!colon || colon - addr > 60)
		die(addr, "not host:port");
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	*port = atoi(colon + 1);
	c = redisConnect(host, *port);
	if (!c || c->err)
		die(addr, c ? c->errstr : "out of memory");
	return c;
}

static void random_bytes(char *p, size_t n, uint64_t *state)
{
	for (size_t i = 0; i < n; i++) {
		*state = *state * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (char)(*state >> 56);
	}
}

static void reply_ok(redisContext *c, const char *what)
{
	void *r = NULL;

	if (redisGetReply(c, &r) != REDIS_OK)
		die(what, c->errstr);
	if (((redisReply *)r)->type == REDIS_REPLY_ERROR)
		die(what, ((redisReply *)r)->str);
	freeReplyObject(r);
}

static void fill(const char *addr, long n, size_t size)
{
	char host[64], *v = malloc(size);
	int port;
	redisContext *c = connect_to(addr, host, &port);
	uint64_t st = 37;

	for (long i = 0; i < n; i += 1000) {
		long end = i + 1000 < n ? i + 1000 : n;

		for (long k = i; k < end; k++) {
			random_bytes(v, size, &st);
			redisAppendCommand(c, "SET k:%ld %b", k, v, size);
		}
		for (long k = i; k < end; k++)
			reply_ok(c, "SET");
	}
	free(v);
	redisFree(c);
}

static void proto(long n, size_t size)
{
	char *v = malloc(size), key[32];
	uint64_t st = 37;

	for (long i = 0; i < n; i++) {
		int klen = snprintf(key, sizeof key, "k:%ld", i);

		random_bytes(v, size, &st);
		printf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%zu\r\n", klen, key, size);
		fwrite(v, 1, size, stdout);
		fputs("\r\n", stdout);
	}
	free(v);
}

static void report(const char *mode, uint64_t keys, uint64_t bytes, double secs)
{
	printf("%s\tkeys=%" PRIu64 "\tbytes=%" PRIu64 "\tseconds=%.3f\tkeys_per_s=%.0f\tMB_per_s=%.1f\n",
	       mode, keys, bytes, secs, (double)keys / secs, (double)bytes / secs / 1e6);
}

static void copy(const char *src, const char *dst, double keys_per_s, double bytes_per_s)
{
	hr_node nodes[2] = {
		{ .id = "r0", .addr = src, .weight = 1, .state = HR_STATE_DRAINING },
		{ .id = "r1", .addr = dst, .weight = 1, .state = HR_STATE_WARMING },
	};
	hr_rebalance_backend be;
	hr_rebalance_config cfg;
	hr_rebalance_progress p;
	hr_rebalancer *rb = NULL;
	hr_ring *ring = NULL;
	hr_error err = { 0 };
	double t0;

	if (hr_ring_build(nodes, 2, NULL, 1, &ring, &err))
		die("ring", err.message);
	hr_rebalance_backend_init(&be);
	if (hr_rebalance_redis(NULL, &be, &err))
		die("backend", err.message);
	hr_rebalance_config_init(&cfg);
	cfg.keys_per_s = keys_per_s;
	cfg.bytes_per_s = bytes_per_s;
	cfg.log_level = HR_LOG_WARN;
	if (hr_rebalancer_new(&be, &cfg, &rb, &err))
		die("rebalancer", err.message);
	t0 = now_s();
	if (hr_rebalancer_copy(rb, ring, NULL, &err))
		die("copy", err.message);
	hr_rebalancer_progress(rb, &p, NULL);
	report(keys_per_s > 0 || bytes_per_s > 0 ? "copy-capped" : "copy", p.copied, p.bytes,
	       now_s() - t0);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
}

/* Every key of `c`, by SCAN; *n of them. */
static char **all_keys(redisContext *c, size_t *n)
{
	char **keys = NULL, cursor[32] = "0";
	size_t cap = 0;

	*n = 0;
	do {
		redisReply *r = redisCommand(c, "SCAN %s COUNT 1000", cursor);

		if (!r || r->type != REDIS_REPLY_ARRAY)
			die("SCAN", c->errstr);
		snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
		for (size_t i = 0; i < r->element[1]->elements; i++) {
			if (*n == cap) {
				cap = cap ? 2 * cap : 1024;
				keys = realloc(keys, cap * sizeof *keys);
			}
			keys[(*n)++] = strdup(r->element[1]->element[i]->str);
		}
		freeReplyObject(r);
	} while (strcmp(cursor, "0"));
	return keys;
}

static uint64_t value_bytes(redisContext *c, char **keys, size_t n)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++)
		redisAppendCommand(c, "STRLEN %s", keys[i]);
	for (size_t i = 0; i < n; i++) {
		void *r = NULL;

		if (redisGetReply(c, &r) != REDIS_OK)
			die("STRLEN", c->errstr);
		total += (uint64_t)((redisReply *)r)->integer;
		freeReplyObject(r);
	}
	return total;
}

static void migrate(const char *src, const char *dst, size_t batch)
{
	char host[64], dhost[64];
	int port, dport;
	redisContext *c = connect_to(src, host, &port), *d = connect_to(dst, dhost, &dport);
	size_t n;
	char **keys = all_keys(c, &n), portarg[16];
	uint64_t bytes = value_bytes(c, keys, n);
	const char **argv = malloc((batch + 9) * sizeof *argv);
	double t0 = now_s();

	snprintf(portarg, sizeof portarg, "%d", dport);
	for (size_t i = 0; i < n; i += batch) {
		size_t end = i + batch < n ? i + batch : n;
		int argc = 0;
		redisReply *r;

		argv[argc++] = "MIGRATE";
		argv[argc++] = dhost;
		argv[argc++] = portarg;
		argv[argc++] = batch > 1 ? "" : keys[i];
		argv[argc++] = "0";
		argv[argc++] = "5000";
		argv[argc++] = "COPY";
		if (batch > 1) {
			argv[argc++] = "KEYS";
			for (size_t k = i; k < end; k++)
				argv[argc++] = keys[k];
		}
		r = redisCommandArgv(c, argc, argv, NULL);
		if (!r || (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYKEY", 7)))
			die("MIGRATE", r ? r->str : c->errstr);
		freeReplyObject(r);
	}
	report(batch > 1 ? "migrate-keys" : "migrate", n, bytes, now_s() - t0);
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	free(argv);
	redisFree(c);
	redisFree(d);
}

static void dumprestore(const char *src, const char *dst, size_t batch)
{
	char host[64], dhost[64];
	int port, dport;
	redisContext *c = connect_to(src, host, &port), *d = connect_to(dst, dhost, &dport);
	size_t n;
	char **keys = all_keys(c, &n);
	uint64_t bytes = value_bytes(c, keys, n);
	redisReply **dumps = malloc(batch * sizeof *dumps);
	long long *ttls = malloc(batch * sizeof *ttls);
	double t0 = now_s();

	for (size_t i = 0; i < n; i += batch) {
		size_t end = i + batch < n ? i + batch : n;

		for (size_t k = i; k < end; k++) {
			redisAppendCommand(c, "DUMP %s", keys[k]);
			redisAppendCommand(c, "PTTL %s", keys[k]);
		}
		for (size_t k = i; k < end; k++) {
			void *r = NULL, *t = NULL;

			if (redisGetReply(c, &r) != REDIS_OK || redisGetReply(c, &t) != REDIS_OK)
				die("DUMP", c->errstr);
			dumps[k - i] = r;
			ttls[k - i] = ((redisReply *)t)->integer;
			freeReplyObject(t);
		}
		for (size_t k = i; k < end; k++)
			redisAppendCommand(d, "RESTORE %s %lld %b", keys[k],
					   ttls[k - i] < 0 ? 0 : ttls[k - i], dumps[k - i]->str,
					   dumps[k - i]->len);
		for (size_t k = i; k < end; k++) {
			void *r = NULL;

			if (redisGetReply(d, &r) != REDIS_OK)
				die("RESTORE", d->errstr);
			freeReplyObject(r);
			freeReplyObject(dumps[k - i]);
		}
	}
	report("dumprestore", n, bytes, now_s() - t0);
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	free(dumps);
	free(ttls);
	redisFree(c);
	redisFree(d);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "fill"))
		fill(argv[2], atol(argv[3]), (size_t)atol(argv[4]));
	else if (argc == 4 && !strcmp(argv[1], "proto"))
		proto(atol(argv[2]), (size_t)atol(argv[3]));
	else if (argc >= 4 && argc <= 6 && !strcmp(argv[1], "copy"))
		copy(argv[2], argv[3], argc >= 5 ? atof(argv[4]) : 0, argc == 6 ? atof(argv[5]) : 0);
	else if (argc == 5 && !strcmp(argv[1], "migrate"))
		migrate(argv[2], argv[3], (size_t)atol(argv[4]));
	else if (argc == 5 && !strcmp(argv[1], "dumprestore"))
		dumprestore(argv[2], argv[3], (size_t)atol(argv[4]));
	else {
		fprintf(stderr, "usage: redis_copy_bench fill ADDR N SIZE | proto N SIZE |"
				" copy SRC DST [KEYS_S [BYTES_S]] | migrate SRC DST BATCH |"
				" dumprestore SRC DST BATCH\n");
		return 2;
	}
	return 0;
}
