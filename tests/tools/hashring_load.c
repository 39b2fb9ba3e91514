/* SPDX-License-Identifier: MIT */
/*
 * hashring_load.c - `hashring-load`, a cache client under load: a watching
 * client of the ring (acknowledging its rings when given a client id)
 * reads and writes keys on memcached (or Redis, --backend redis) following
 * docs/handoff.md's client
 * rules (writes to the write owner; reads from the write owner, then on a
 * miss from the read owner), at a given rate and read/write mix, and
 * prints per second and in total what it saw.  Values carry a version
 * (a counter of the process's writes), so that --check can tell a key the
 * run wrote from an older copy of it.  Used by the end-to-end suite and by
 * deploy/demo-cache.sh.
 */
#define _GNU_SOURCE
#include "mc_text.h"

#include <hashring.h>
#include <hiredis/hiredis.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CONN_TIMEOUT_MS 2000
#define VERSION_DIGITS 20
#define VALUE_MAX 65536
#define CONNS_MAX 256     /* memcached servers one run talks to */
/* A server that fails is said at once, then at most once this often (as
 * the library logs a failing lease renewal): servers down would otherwise
 * give a line per operation. */
#define FAILURE_LINE_S 5.0

static const char usage[] =
	"usage: hashring-load [--endpoints URLS] [--prefix P] [--client-id ID]\n"
	"         [--ack-prefix P] [--keys N] [--key-prefix S] [--value-size B]\n"
	"         [--fill] [--rate OPS] [--write-ratio F] [--duration S | --until-signal]\n"
	"         [--check] [--seed N] [--timeout S] [--json] [--backend memcached|redis]\n"
	"\n"
	"Reads and writes the keys <key-prefix>0 .. <key-prefix>N-1 on the memcached\n"
	"servers of the ring under P (default /hashring/nodes/), following the\n"
	"handoff's client rules: writes to the write owner; reads from the write\n"
	"owner, then, on a miss, from the read owner.  With --client-id the client\n"
	"acknowledges its rings under --ack-prefix (default /hashring/acks/).\n"
	"  --fill          first write every key once (unpaced)\n"
	"  --rate OPS      operations a second (default 5000; 0: no pacing)\n"
	"  --write-ratio F share of the operations that are writes (default 0.1)\n"
	"  --duration S    seconds of load (default 10; 0: none)\n"
	"  --until-signal  load until SIGINT or SIGTERM instead\n"
	"  --check         at the end, read every key at its owners: found, missing,\n"
	"                  and stale (an older version than this run last wrote)\n"
	"  --timeout S     seconds to wait for etcd's first answer (default 10)\n"
	"  --backend NAME  memcached (default) or redis: the servers are Redis, AUTH\n"
	"                  from HASHRING_REDIS_USER and HASHRING_REDIS_PASSWORD if set\n"
	"One line per step, tab-separated (or with --json one JSON object each,\n"
	"with these names in lower case and \"step\" first):\n"
	"  fill    KEYS ERRORS SECONDS REVISION\n"
	"  second  T REVISION READS HITS FALLBACK_HITS MISSES WRITES ERRORS HIT_RATE\n"
	"  total   the same, over the whole load\n"
	"  check   KEYS FOUND FOUND_READ_OWNER MISSING STALE ERRORS REVISION\n"
	"HITS are found at the write owner, FALLBACK_HITS at the read owner after a\n"
	"miss there, MISSES at neither.  A server that fails is named on stderr at\n"
	"once, then at most once every 5 s with the failures since; the number of\n"
	"failures in all at the end.  Exit 0, or 1 on a failure (etcd, a check\n"
	"that found a stale or missing key), 2 on bad usage.\n";

struct opts {
	const char *endpoints, *prefix, *client_id, *ack_prefix, *key_prefix;
	long keys, value_size, duration, timeout;
	double rate, write_ratio;
	int fill, until_signal, check, json, redis;
	uint64_t seed;
};

/* What the load saw, per second and in total. */
struct counts {
	uint64_t reads, hits, fallback_hits, misses, writes, errors;
};

/* A connection to one server: memcached's or Redis's, as --backend says. */
struct conn {
	char addr[HR_ADDR_MAX + 1];
	mct *c;
	redisContext *r;
	char rerr[160];
};

struct load {
	const struct opts *o;
	hr_client *client;
	struct conn conns[CONNS_MAX];
	size_t nconns;
	uint64_t *last;    /* per key: the version this run wrote last, 0: none */
	uint64_t version;  /* versions written so far */
	uint64_t rng;
	char *value;
	char *rbuf;
	/* Failures of the servers: in all, since the last line, its time. */
	uint64_t failures, unsaid;
	double said_at;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("hashring-load: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n", stderr);
	exit(2);
}

static uint64_t next_rand(struct load *l)
{
	/* xorshift64*: enough to spread keys and mix operations. */
	l->rng ^= l->rng >> 12;
	l->rng ^= l->rng << 25;
	l->rng ^= l->rng >> 27;
	return l->rng * 2685821657736338717ull;
}

static double parse_num(const char *name, const char *arg, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || v < min || v > max)
		die_usage("--%s: '%s' is not a number in %g..%g", name, arg, min, max);
	return v;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	enum { ENDPOINTS = 256, PREFIX, CLIENT_ID, ACK_PREFIX, KEYS, KEY_PREFIX, VALUE_SIZE,
	       FILL, RATE, WRITE_RATIO, DURATION, UNTIL_SIGNAL, CHECK, SEED, TIMEOUT, JSON,
	       BACKEND, HELP };
	static const struct option longs[] = {
		{ "endpoints", required_argument, NULL, ENDPOINTS },
		{ "prefix", required_argument, NULL, PREFIX },
		{ "client-id", required_argument, NULL, CLIENT_ID },
		{ "ack-prefix", required_argument, NULL, ACK_PREFIX },
		{ "keys", required_argument, NULL, KEYS },
		{ "key-prefix", required_argument, NULL, KEY_PREFIX },
		{ "value-size", required_argument, NULL, VALUE_SIZE },
		{ "fill", no_argument, NULL, FILL },
		{ "rate", required_argument, NULL, RATE },
		{ "write-ratio", required_argument, NULL, WRITE_RATIO },
		{ "duration", required_argument, NULL, DURATION },
		{ "until-signal", no_argument, NULL, UNTIL_SIGNAL },
		{ "check", no_argument, NULL, CHECK },
		{ "seed", required_argument, NULL, SEED },
		{ "timeout", required_argument, NULL, TIMEOUT },
		{ "json", no_argument, NULL, JSON },
		{ "backend", required_argument, NULL, BACKEND },
		{ "help", no_argument, NULL, HELP },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	*o = (struct opts){ .endpoints = getenv("ETCDCTL_ENDPOINTS"),
			    .prefix = "/hashring/nodes/", .ack_prefix = "/hashring/acks/",
			    .key_prefix = "key:", .keys = 100000, .value_size = 100,
			    .duration = 10, .timeout = 10, .rate = 5000, .write_ratio = 0.1, .seed = 1 };
	/* "+": options end at the first operand, which is then refused. */
	while ((c = getopt_long(argc, argv, "+", longs, NULL)) != -1) {
		switch (c) {
		case ENDPOINTS: o->endpoints = optarg; break;
		case PREFIX: o->prefix = optarg; break;
		case CLIENT_ID: o->client_id = optarg; break;
		case ACK_PREFIX: o->ack_prefix = optarg; break;
		case KEYS: o->keys = (long)parse_num("keys", optarg, 1, 100000000); break;
		case KEY_PREFIX: o->key_prefix = optarg; break;
		case VALUE_SIZE:
			o->value_size = (long)parse_num("value-size", optarg, VERSION_DIGITS + 1,
							VALUE_MAX);
			break;
		case FILL: o->fill = 1; break;
		case RATE: o->rate = parse_num("rate", optarg, 0, 10000000); break;
		case WRITE_RATIO: o->write_ratio = parse_num("write-ratio", optarg, 0, 1); break;
		case DURATION: o->duration = (long)parse_num("duration", optarg, 0, 86400); break;
		case UNTIL_SIGNAL: o->until_signal = 1; break;
		case CHECK: o->check = 1; break;
		case SEED: o->seed = (uint64_t)parse_num("seed", optarg, 1, 1e15); break;
		case TIMEOUT: o->timeout = (long)parse_num("timeout", optarg, 1, 3600); break;
		case JSON: o->json = 1; break;
		case BACKEND:
			if (strcmp(optarg, "memcached") && strcmp(optarg, "redis"))
				die_usage("--backend: memcached or redis, not '%s'", optarg);
			o->redis = !strcmp(optarg, "redis");
			break;
		case HELP: fputs(usage, stdout); exit(0);
		default: fputs(usage, stderr); exit(2);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s' (see --help)", argv[optind]);
	if (strlen(o->key_prefix) > 200 || strpbrk(o->key_prefix, " \t\r\n"))
		die_usage("--key-prefix: at most 200 bytes, no blank");
}

/* A call to node n's server failed (`why`): said at once the first time,
 * then at most once every FAILURE_LINE_S with the count since. */
static void failed(struct load *l, const hr_node *n, const char *why)
{
	double now = now_s();

	l->failures++;
	l->unsaid++;
	if (l->failures > 1 && now - l->said_at < FAILURE_LINE_S)
		return;
	if (l->unsaid > 1)
		fprintf(stderr, "hashring-load: %s: %s (%" PRIu64 " failures in the last %.0f s)\n",
			n->id, why, l->unsaid, now - l->said_at);
	else
		fprintf(stderr, "hashring-load: %s: %s\n", n->id, why);
	l->unsaid = 0;
	l->said_at = now;
}

/* ---- the store: memcached's text protocol, or Redis through hiredis ---- */

static int redis_connect(struct conn *slot, char *err, size_t errlen)
{
	struct timeval tv = { CONN_TIMEOUT_MS / 1000, (CONN_TIMEOUT_MS % 1000) * 1000 };
	const char *user = getenv("HASHRING_REDIS_USER"), *pw = getenv("HASHRING_REDIS_PASSWORD");
	char host[HR_ADDR_MAX + 1], *colon;
	redisReply *r;

	snprintf(host, sizeof host, "%s", slot->addr);
	colon = strrchr(host, ':');
	if (!colon) {
		snprintf(err, errlen, "%.200s: not host:port", slot->addr);
		return -1;
	}
	*colon = '\0';
	slot->r = redisConnectWithTimeout(host, atoi(colon + 1), tv);
	if (!slot->r || slot->r->err) {
		snprintf(err, errlen, "%s", slot->r ? slot->r->errstr : "out of memory");
		redisFree(slot->r);
		slot->r = NULL;
		return -1;
	}
	redisSetTimeout(slot->r, tv);
	if (pw && *pw) {
		r = user && *user ? redisCommand(slot->r, "AUTH %s %s", user, pw) :
				    redisCommand(slot->r, "AUTH %s", pw);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			snprintf(err, errlen, "AUTH: %s", r ? r->str : slot->r->errstr);
			freeReplyObject(r);
			redisFree(slot->r);
			slot->r = NULL;
			return -1;
		}
		freeReplyObject(r);
	}
	return 0;
}

static void store_close(struct conn *slot)
{
	mct_close(slot->c);
	slot->c = NULL;
	if (slot->r)
		redisFree(slot->r);
	slot->r = NULL;
}

static const char *store_error(const struct conn *slot)
{
	if (slot->c)
		return mct_error(slot->c);
	if (slot->rerr[0])
		return slot->rerr;
	return slot->r && slot->r->errstr[0] ? slot->r->errstr : "connection failed";
}

/* 1 and the value in buf (at most cap bytes), 0 on a miss, -1 on failure. */
static int store_get(struct conn *slot, const char *key, char *buf, size_t cap, size_t *len)
{
	redisReply *r;
	int rc = 0;

	if (slot->c)
		return mct_get(slot->c, key, buf, cap, len, NULL);
	r = redisCommand(slot->r, "GET %s", key);
	if (!r)
		return -1;
	if (r->type == REDIS_REPLY_STRING && r->len <= cap) {
		memcpy(buf, r->str, r->len);
		*len = r->len;
		rc = 1;
	} else if (r->type != REDIS_REPLY_NIL) {
		snprintf(slot->rerr, sizeof slot->rerr, "GET: %s",
			 r->type == REDIS_REPLY_ERROR ? r->str : "an unexpected reply");
		rc = -1;
	}
	freeReplyObject(r);
	return rc;
}

/* 0 once stored (whatever was there is replaced), -1 on failure. */
static int store_set(struct conn *slot, const char *key, const void *val, size_t len)
{
	redisReply *r;
	int rc;

	if (slot->c)
		return mct_set(slot->c, key, val, len, 0, 0);
	r = redisCommand(slot->r, "SET %s %b", key, val, len);
	rc = r && r->type == REDIS_REPLY_STATUS ? 0 : -1;
	if (r && rc)
		snprintf(slot->rerr, sizeof slot->rerr, "SET: %s",
			 r->type == REDIS_REPLY_ERROR ? r->str : "an unexpected reply");
	freeReplyObject(r);
	return rc;
}

static struct conn *conn_of(struct load *l, const hr_node *n)
{
	char err[256];
	struct conn *slot = NULL;

	for (size_t i = 0; i < l->nconns; i++)
		if (!strcmp(l->conns[i].addr, n->addr)) {
			slot = &l->conns[i];
			break;
		}
	if (!slot) {
		if (l->nconns == CONNS_MAX)
			return NULL;
		slot = &l->conns[l->nconns++];
		snprintf(slot->addr, sizeof slot->addr, "%s", n->addr);
	}
	if (!slot->c && !slot->r) {
		slot->rerr[0] = '\0';
		if (l->o->redis)
			redis_connect(slot, err, sizeof err);
		else
			slot->c = mct_connect(slot->addr, CONN_TIMEOUT_MS, err, sizeof err);
		if (!slot->c && !slot->r) {
			failed(l, n, err);
			return NULL;
		}
	}
	return slot;
}

/* After a failed call the connection is dropped; the next call connects
 * again. */
static void drop_conn(struct load *l, const hr_node *n)
{
	for (size_t i = 0; i < l->nconns; i++)
		if (!strcmp(l->conns[i].addr, n->addr) && (l->conns[i].c || l->conns[i].r)) {
			failed(l, n, store_error(&l->conns[i]));
			store_close(&l->conns[i]);
		}
}

static void key_name(const struct load *l, long i, char *out, size_t cap)
{
	snprintf(out, cap, "%s%ld", l->o->key_prefix, i);
}

/* Writes key i with the next version to its write owner: 0, or -1. */
static int write_key(struct load *l, const hr_ring *ring, long i)
{
	char key[256];
	hr_lookup lk;
	struct conn *c;

	key_name(l, i, key, sizeof key);
	if (hr_ring_lookup(ring, key, strlen(key), &lk, NULL) || !lk.node)
		return -1;
	c = conn_of(l, lk.node);
	if (!c)
		return -1;
	l->version++;
	/* The version leads the value, in fixed width; the rest is padding. */
	snprintf(l->value, VERSION_DIGITS + 1, "%0*" PRIu64, VERSION_DIGITS, l->version);
	l->value[VERSION_DIGITS] = '.';
	if (store_set(c, key, l->value, (size_t)l->o->value_size)) {
		drop_conn(l, lk.node);
		return -1;
	}
	l->last[i] = l->version;
	return 0;
}

/* Reads key i from one node: 1 found (its version in *version), 0 miss,
 * -1 error. */
static int read_at(struct load *l, const hr_node *n, const char *key, uint64_t *version)
{
	struct conn *c = conn_of(l, n);
	size_t len;
	int rc;

	if (!c)
		return -1;
	rc = store_get(c, key, l->rbuf, VALUE_MAX, &len);
	if (rc < 0) {
		drop_conn(l, n);
		return -1;
	}
	if (rc == 1) {
		char digits[VERSION_DIGITS + 1] = { 0 };

		memcpy(digits, l->rbuf, len < VERSION_DIGITS ? len : VERSION_DIGITS);
		*version = strtoull(digits, NULL, 10);
	}
	return rc;
}

/* A read by the client rules; counts it. */
static void read_key(struct load *l, const hr_ring *ring, long i, struct counts *c)
{
	char key[256];
	hr_lookup lk;
	uint64_t version;
	int rc;

	key_name(l, i, key, sizeof key);
	c->reads++;
	if (hr_ring_lookup(ring, key, strlen(key), &lk, NULL) || !lk.node) {
		c->errors++;
		return;
	}
	rc = read_at(l, lk.node, key, &version);
	if (rc == 1) {
		c->hits++;
		return;
	}
	if (rc == 0 && lk.read_node && lk.read_node != lk.node)
		rc = read_at(l, lk.read_node, key, &version) == 1 ? 2 : rc;
	if (rc == 2)
		c->fallback_hits++;
	else if (rc == 0)
		c->misses++;
	else
		c->errors++;
}

static double hit_rate(const struct counts *c)
{
	return c->reads ? (double)(c->hits + c->fallback_hits) / (double)c->reads : 0;
}

static void print_counts(const struct load *l, const char *step, double t, uint64_t revision,
			 const struct counts *c)
{
	if (l->o->json)
		printf("{\"step\":\"%s\",\"t\":%.3f,\"revision\":%" PRIu64 ",\"reads\":%" PRIu64
		       ",\"hits\":%" PRIu64 ",\"fallback_hits\":%" PRIu64 ",\"misses\":%" PRIu64
		       ",\"writes\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"hit_rate\":%.4f}\n",
		       step, t, revision, c->reads, c->hits, c->fallback_hits, c->misses, c->writes,
		       c->errors, hit_rate(c));
	else
		printf("%s\t%.3f\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
		       "\t%" PRIu64 "\t%" PRIu64 "\t%.4f\n",
		       step, t, revision, c->reads, c->hits, c->fallback_hits, c->misses, c->writes,
		       c->errors, hit_rate(c));
	fflush(stdout);
}

static void add_counts(struct counts *to, const struct counts *c)
{
	to->reads += c->reads;
	to->hits += c->hits;
	to->fallback_hits += c->fallback_hits;
	to->misses += c->misses;
	to->writes += c->writes;
	to->errors += c->errors;
}

static int fill(struct load *l)
{
	double t0 = now_s();
	hr_ring *ring = hr_client_ring(l->client);
	uint64_t errors = 0;

	for (long i = 0; i < l->o->keys && !stop; i++)
		errors += write_key(l, ring, i) != 0;
	if (l->o->json)
		printf("{\"step\":\"fill\",\"keys\":%ld,\"errors\":%" PRIu64
		       ",\"seconds\":%.3f,\"revision\":%" PRIu64 "}\n",
		       l->o->keys, errors, now_s() - t0, hr_ring_revision(ring));
	else
		printf("fill\t%ld\t%" PRIu64 "\t%.3f\t%" PRIu64 "\n", l->o->keys, errors,
		       now_s() - t0, hr_ring_revision(ring));
	fflush(stdout);
	hr_ring_release(ring);
	return errors ? -1 : 0;
}

/* The load: operations paced at --rate, one line a second, the total at
 * the end. */
static void run(struct load *l)
{
	const struct opts *o = l->o;
	double t0 = now_s(), next_op = t0, next_line = t0 + 1;
	double end = o->until_signal ? -1 : t0 + (double)o->duration;
	struct counts sec = { 0 }, total = { 0 };
	uint64_t revision = 0;

	if (!o->until_signal && !o->duration)
		return;
	while (!stop) {
		double now = now_s();
		hr_ring *ring;
		long i;

		if (now >= next_line || (end >= 0 && now >= end)) {
			ring = hr_client_ring(l->client);
			revision = hr_ring_revision(ring);
			hr_ring_release(ring);
			print_counts(l, "second", next_line - t0, revision, &sec);
			add_counts(&total, &sec);
			sec = (struct counts){ 0 };
			next_line += 1;
			if (end >= 0 && now >= end)
				break;
		}
		if (o->rate > 0) {
			if (now < next_op) {
				double d = next_op - now;
				struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };

				nanosleep(&ts, NULL);
				continue;
			}
			/* Behind by more than a second (a stall): no catch-up burst. */
			next_op = now - next_op > 1 ? now : next_op + 1 / o->rate;
		}
		ring = hr_client_ring(l->client);
		i = (long)(next_rand(l) % (uint64_t)o->keys);
		if ((double)(next_rand(l) >> 11) / 9007199254740992.0 < o->write_ratio) {
			sec.writes++;
			sec.errors += write_key(l, ring, i) != 0;
		} else {
			read_key(l, ring, i, &sec);
		}
		hr_ring_release(ring);
	}
	if (sec.reads + sec.writes) {
		print_counts(l, "second", now_s() - t0, revision, &sec);
		add_counts(&total, &sec);
	}
	print_counts(l, "total", now_s() - t0, revision, &total);
}

/* Every key read at its write owner (and at its read owner if that
 * differs and the first misses): found, missing, stale (older than what
 * this run last wrote). */
static int check(struct load *l)
{
	hr_ring *ring = hr_client_ring(l->client);
	uint64_t found = 0, found_read = 0, missing = 0, stale = 0, errors = 0;

	for (long i = 0; i < l->o->keys; i++) {
		char key[256];
		hr_lookup lk;
		uint64_t version = 0;
		int rc = -1;

		key_name(l, i, key, sizeof key);
		if (hr_ring_lookup(ring, key, strlen(key), &lk, NULL) == 0 && lk.node)
			rc = read_at(l, lk.node, key, &version);
		if (rc == 0 && lk.read_node && lk.read_node != lk.node) {
			rc = read_at(l, lk.read_node, key, &version);
			found_read += rc == 1;
		}
		found += rc == 1;
		missing += rc == 0;
		if (rc == 0 && missing <= 10)
			fprintf(stderr, "hashring-load: check: %s missing at %s (read owner %s)\n", key,
				lk.node->id, lk.read_node ? lk.read_node->id : "-");
		errors += rc < 0;
		stale += rc == 1 && version < l->last[i];
	}
	if (l->o->json)
		printf("{\"step\":\"check\",\"keys\":%ld,\"found\":%" PRIu64
		       ",\"found_read_owner\":%" PRIu64 ",\"missing\":%" PRIu64 ",\"stale\":%" PRIu64
		       ",\"errors\":%" PRIu64 ",\"revision\":%" PRIu64 "}\n",
		       l->o->keys, found, found_read, missing, stale, errors,
		       hr_ring_revision(ring));
	else
		printf("check\t%ld\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
		       "\t%" PRIu64 "\n",
		       l->o->keys, found, found_read, missing, stale, errors, hr_ring_revision(ring));
	fflush(stdout);
	hr_ring_release(ring);
	return stale || missing || errors ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct load l = { 0 };
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_error err = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	int rc = 0;

	parse_opts(argc, argv, &o);
	l.o = &o;
	l.rng = o.seed * 0x9e3779b97f4a7c15ull | 1;
	l.last = calloc((size_t)o.keys, sizeof *l.last);
	l.value = malloc((size_t)o.value_size);
	l.rbuf = malloc(VALUE_MAX);
	if (!l.last || !l.value || !l.rbuf) {
		fprintf(stderr, "hashring-load: out of memory for %ld keys\n", o.keys);
		rc = 1;
		goto out;
	}
	memset(l.value, 'x', (size_t)o.value_size);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	hr_etcd_config_init(&ecfg);
	ecfg.endpoints = o.endpoints;
	ecfg.prefix = o.prefix;
	ecfg.log_level = HR_LOG_WARN;
	hr_client_config_init(&cfg);
	cfg.open_timeout_ms = (int)o.timeout * 1000;
	cfg.ack_client_id = o.client_id;
	cfg.ack_prefix = o.client_id ? o.ack_prefix : NULL;
	if (hr_client_open(&ecfg, &cfg, &l.client, &err)) {
		fprintf(stderr, "hashring-load: %s\n", err.message);
		rc = 1;
		goto out;
	}
	if (o.fill && fill(&l))
		rc = 1;
	if (!rc)
		run(&l);
	if (!rc && o.check && check(&l))
		rc = 1;
	if (l.failures)
		fprintf(stderr, "hashring-load: %" PRIu64 " failures of the servers in all\n",
			l.failures);
	hr_client_close(l.client);
	for (size_t i = 0; i < l.nconns; i++)
		store_close(&l.conns[i]);
out:
	free(l.last);
	free(l.value);
	free(l.rbuf);
	return rc;
}
