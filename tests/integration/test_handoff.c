/* SPDX-License-Identifier: MIT */
/*
 * test_handoff.c - the handoff's copy against real memcached servers and a
 * real etcd (docs/handoff.md sections 2 and 5).  Keys are written through
 * a watching client's ring; a node joins warming (or one drains); once the
 * client acknowledges that ring, the copy fills every key the write view
 * moves, with the source's flags and remaining TTL, keeps what clients
 * wrote to the new owner meanwhile and what they deleted deleted, copies
 * nothing that does not move, and copies nothing again on a rerun; once
 * the node is promoted the purge removes the old owners' copies.  Deletes
 * racing the copy stay deleted; a copy stopped halfway and rerun copies
 * exactly the rest.  The rate cap is checked on a real copy, and the
 * uncapped rate is printed.  The backend's listing misses no key while
 * readers make memcached move items between its LRU queues.  Keys only the
 * binary protocol can write are skipped without stopping the run; a run
 * that no client acknowledges is refused unless asked for, and its wait
 * for clients sleeps; a failing server is named with its role.
 */
#define _GNU_SOURCE
#include "etcd_fixture.h"
#include "hrt_check.h"
#include "hrt_cli.h"
#include "hrt_rand.h"
#include "hrt_ring.h"
#include "memcached_fixture.h"

#include "hashring/rebalance.h"
#include "memcache.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PREFIX "/t/nodes/"
#define ACKS "/t/acks/"
#define MAX_MC 4
#define DAY 86400

static hrt_etcd_cluster *etcd;
static hrt_memcached *mcs[MAX_MC];
static hr__mc *conns[MAX_MC];
static hr_etcd_config ecfg;

static void up(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hr_etcd_config_init(&ecfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	ecfg.log_level = HR_LOG_WARN;
	for (int i = 0; i < MAX_MC; i++) {
		hr_error err = { 0 };

		mcs[i] = hrt_memcached_start(64);
		ck_assert_msg(mcs[i] != NULL, "memcached did not start");
		ck_assert_msg(hr__mc_connect(hrt_memcached_addr(mcs[i]), 5000, &conns[i], &err) == 0,
			      "%s", err.message);
	}
}

static void down(void)
{
	for (int i = 0; i < MAX_MC; i++) {
		hr__mc_close(conns[i]);
		conns[i] = NULL;
		hrt_memcached_stop(mcs[i]);
		mcs[i] = NULL;
	}
	hrt_etcd_destroy(etcd);
	etcd = NULL;
}

/* Node "mc<i>" is memcached i. */
static int64_t put_node(int i, const char *state)
{
	char key[64], value[128];
	int64_t rev;

	snprintf(key, sizeof key, PREFIX "mc%d", i);
	snprintf(value, sizeof value, "{\"addr\":\"%s\",\"state\":\"%s\"}",
		 hrt_memcached_addr(mcs[i]), state);
	rev = hrt_put(hrt_etcd_client_url(etcd, 0), key, value);
	ck_assert_int_gt(rev, 0);
	return rev;
}

/* The connection to a node of a ring (its id is "mc<i>"). */
static hr__mc *conn_of(const hr_node *n)
{
	int i = atoi(n->id + 2);

	ck_assert(i >= 0 && i < MAX_MC);
	return conns[i];
}

static hr_client *acking_client(void)
{
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_client_config_init(&cfg);
	cfg.ack_client_id = "app-1";
	cfg.ack_prefix = ACKS;
	ck_assert_msg(hr_client_open(&ecfg, &cfg, &c, &err) == 0, "open: %s", err.message);
	return c;
}

/* Key i: "key:<i>", and every 97th "key <i>" (a space: only the binary
 * protocol can write it, and the copy carries it base64-encoded). */
static size_t key_of(int i, char *out)
{
	return (size_t)sprintf(out, i % 97 == 0 ? "key %d" : "key:%d", i);
}

/* Its value (lengths 9..~400), flags and TTL: none, 1 hour, or 40 days
 * (past memcached's 30 days of relative TTL). */
static void value_of(int i, hr__mc_value *v)
{
	int reps = i % 50 + 1;

	v->len = 0;
	if (v->cap < 1024) {
		v->data = realloc(v->data, 1024);
		v->cap = 1024;
	}
	for (int r = 0; r < reps; r++)
		v->len += (size_t)sprintf(v->data + v->len, "v%d.", i);
	v->flags = (uint32_t)i * 2654435761u;
	v->ttl = i % 3 == 0 ? -1 : i % 3 == 1 ? 3600 : 40 * DAY;
}

/* Writes keys [0, n) to their write owners in `ring`. */
static void fill(const hr_ring *ring, int n)
{
	hr__mc_value v = { 0 };
	hr_error err = { 0 };

	for (int i = 0; i < n; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;

		value_of(i, &v);
		ck_assert_int_eq(hr_ring_lookup(ring, key, len, &lk, NULL), 0);
		EXPECT(hr__mc_store(conn_of(lk.node), key, len, &v, HR__MC_SET, NULL, &err) == 1);
	}
	hr__mc_value_free(&v);
}

/* Nodes 0 and 1 active and holding keys [0, n): an acking client that
 * sees both, and its ring then (*before, the caller releases it). */
static hr_client *two_filled_nodes(int n, hr_ring **before)
{
	hr_client *c;

	put_node(0, "active");
	put_node(1, "active");
	c = acking_client();
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 10000), 0);
	*before = hr_client_ring(c);
	fill(*before, n);
	return c;
}

/* Items on memcached i, by its metadump. */
static int count_item(void *userdata, const hr__mc_item *item)
{
	(void)item;
	++*(size_t *)userdata;
	return 0;
}

static size_t items_on(int i)
{
	hr__mc *d = NULL;
	hr_error err = { 0 };
	size_t n = 0;

	ck_assert_int_eq(hr__mc_connect(hrt_memcached_addr(mcs[i]), 5000, &d, &err), 0);
	ck_assert_msg(hr__mc_metadump(d, HR__MC_WALK_HASH, count_item, &n, &err) == 0, "%s",
		      err.message);
	hr__mc_close(d);
	return n;
}

/* Waits until the client acknowledged `rev` (and is the one client). */
static void wait_acked(int64_t rev)
{
	hr_acks *last = NULL;
	hr_error err = { 0 };

	ck_assert_msg(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev, 10000, &last, &err) == 0, "%s",
		      err.message);
	ck_assert_uint_eq(hr_acks_count(last), 1);
	hr_acks_free(last);
}

/* What the copy must have left at key i's write owner: `mark` says what
 * the test did to it (0: nothing, 'w': a client rewrote it there, 'd': a
 * client deleted it). */
static void check_key(const hr_ring *ring, int i, char mark, hr__mc_value *got)
{
	char key[32];
	size_t len = key_of(i, key);
	hr__mc_value want = { 0 };
	hr_lookup lk;
	hr_error err = { 0 };
	int rc;

	ck_assert_int_eq(hr_ring_lookup(ring, key, len, &lk, NULL), 0);
	rc = hr__mc_get(conn_of(lk.node), key, len, got, &err);
	ck_assert_int_ge(rc, 0);
	if (mark == 'd') {
		ck_assert_msg(rc == 0, "%s: deleted by a client, copied back to %s", key, lk.node->id);
		return;
	}
	ck_assert_msg(rc == 1, "%s: not at its write owner %s", key, lk.node->id);
	if (mark == 'w') {
		ck_assert_msg(got->len == 6 && !memcmp(got->data, "client", 6),
			      "%s: the client's value was overwritten", key);
		return;
	}
	value_of(i, &want);
	ck_assert_msg(got->len == want.len && !memcmp(got->data, want.data, want.len),
		      "%s: value differs", key);
	ck_assert_msg(got->flags == want.flags, "%s: flags %" PRIu32 ", want %" PRIu32, key,
		      got->flags, want.flags);
	if (want.ttl < 0)
		ck_assert_msg(got->ttl == -1, "%s: ttl %" PRId64 ", want none", key, got->ttl);
	else
		/* A TTL beyond 30 days goes as a Unix time, which memcached
		 * reads against its own clock (updated once a second) and the
		 * test sends twice (the fill, the copy): a few seconds more. */
		ck_assert_msg(got->ttl <= want.ttl + 5 && got->ttl > want.ttl - 120,
			      "%s: ttl %" PRId64 ", want about %" PRId64, key, got->ttl, want.ttl);
	hr__mc_value_free(&want);
}

static void print_stats(const char *what, const hr_rebalance_progress *s, double secs)
{
	fprintf(stderr,
		"%s: scanned=%" PRIu64 " moving=%" PRIu64 " expected=%.0f copied=%" PRIu64
		" present=%" PRIu64 " gone=%" PRIu64 " taken_back=%" PRIu64 " bytes=%" PRIu64
		" seconds=%.3f keys_per_s=%.0f\n",
		what, s->scanned, s->moving, s->expected, s->copied, s->present, s->gone,
		s->taken_back, s->bytes, secs, secs > 0 ? (double)s->copied / secs : 0);
}

/* A rebalancer over memcached, quiet but for errors; `cfg` may be NULL. */
static hr_rebalancer *mc_rebalancer(hr_rebalance_config *cfg)
{
	hr_rebalance_backend be;
	hr_rebalance_config quiet;
	hr_rebalancer *rb = NULL;
	hr_error err = { 0 };

	hr_rebalance_backend_init(&be);
	ck_assert_int_eq(hr_rebalance_memcached(5000, &be, &err), 0);
	if (!cfg) {
		hr_rebalance_config_init(&quiet);
		quiet.log_level = HR_LOG_WARN;
		cfg = &quiet;
	}
	ck_assert_msg(hr_rebalancer_new(&be, cfg, &rb, &err) == 0, "%s", err.message);
	return rb;
}

/* hr_rebalancer_copy() on `ring` by a new rebalancer: 0 or the error,
 * the figures in *out. */
static int copy_ring(const hr_ring *ring, hr_rebalance_config *cfg, hr_rebalance_progress *out,
		     hr_error *err)
{
	hr_rebalancer *rb = mc_rebalancer(cfg);
	int rc = hr_rebalancer_copy(rb, ring, NULL, err);

	ck_assert_int_eq(hr_rebalancer_progress(rb, out, NULL), 0);
	hr_rebalancer_free(rb);
	return rc;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Two nodes with keys, a third joins warming: the copy fills it. */
START_TEST(warming_node_is_filled)
{
	enum { N = 20000, WRITTEN = 200, DELETED = 100 };
	static char mark[N];
	hr_client *c;
	hr_ring *before, *ring;
	hr_rebalance_progress st, again;
	hr__mc_value v = { 0 };
	hr_error err = { 0 };
	int64_t rev;
	size_t to_new = 0, moving = 0, written = 0, deleted = 0;
	uint64_t purged = 0;
	double t0;

	c = two_filled_nodes(N, &before);

	rev = put_node(2, "warming");
	wait_acked(rev);
	ring = hr_client_ring(c);
	ck_assert_uint_ge(hr_ring_revision(ring), (uint64_t)rev);

	/* Meanwhile clients write the new owner's keys there, and delete at
	 * both owners, the read owner first. */
	memset(mark, 0, sizeof mark);
	for (int i = 0; i < N; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		if (strcmp(lk.node->id, "mc2") || !strcmp(lk.read_node->id, "mc2"))
			continue;
		if (written < WRITTEN) {
			hr__mc_value cv = { .data = "client", .len = 6, .flags = 1, .ttl = 600 };

			ck_assert_int_eq(hr__mc_store(conn_of(lk.node), key, len, &cv, HR__MC_SET,
						     NULL, &err), 1);
			mark[i] = 'w';
			written++;
		} else if (deleted < DELETED) {
			ck_assert_int_eq(hr__mc_delete(conn_of(lk.read_node), key, len, 0, &err), 1);
			ck_assert_int_eq(hr__mc_delete(conn_of(lk.node), key, len, 0, &err), 0);
			mark[i] = 'd';
			deleted++;
		}
	}
	ck_assert_uint_eq(deleted, DELETED);

	t0 = now_s();
	ck_assert_msg(copy_ring(ring, NULL, &st, &err) == 0, "%s", err.message);
	print_stats("join", &st, now_s() - t0);

	for (int i = 0; i < N; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		if (strcmp(lk.node->id, "mc2"))
			continue;
		to_new++;
		if (mark[i] != 'd')
			moving++;
		check_key(ring, i, mark[i], &v);
	}
	ck_assert_uint_eq(st.scanned, N - DELETED);
	ck_assert_uint_eq(st.moving, moving);
	ck_assert_uint_eq(st.present, WRITTEN);
	ck_assert_uint_eq(st.copied, moving - WRITTEN);
	ck_assert_uint_eq(st.gone, 0);
	ck_assert_uint_eq(st.taken_back, 0);
	ck_assert_msg(st.moving > 0.9 * st.expected && st.moving < 1.1 * st.expected,
		      "%" PRIu64 " keys moved, the diff expects %.0f", st.moving, st.expected);
	/* Nothing that stays with its owner was copied. */
	ck_assert_uint_eq(items_on(2), to_new - DELETED);

	/* A rerun finds every key present. */
	ck_assert_msg(copy_ring(ring, NULL, &again, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(again.moving, st.moving);
	ck_assert_uint_eq(again.copied, 0);
	ck_assert_uint_eq(again.present, st.moving);

	/* Promoted and acknowledged: the old owners' copies are purged, and
	 * every key is still read from its owner. */
	rev = put_node(2, "active");
	wait_acked(rev);
	hr_ring_release(ring);
	ring = hr_client_ring(c);
	{
		hr_rebalancer *rb = mc_rebalancer(NULL);
		hr_rebalance_progress ps;

		ck_assert_msg(hr_rebalancer_purge(rb, ring, &err) == 0, "%s", err.message);
		ck_assert_int_eq(hr_rebalancer_progress(rb, &ps, NULL), 0);
		ck_assert_uint_eq(ps.purged, ps.purge_stale);
		ck_assert_uint_eq(ps.purge_changed, 0);
		purged = ps.purged;
		hr_rebalancer_free(rb);
	}
	ck_assert_uint_eq(purged, st.moving);
	ck_assert_uint_eq(items_on(0) + items_on(1), N - DELETED - st.moving);
	for (int i = 0; i < N; i++)
		check_key(ring, i, mark[i], &v);

	hr__mc_value_free(&v);
	hr_ring_release(ring);
	hr_ring_release(before);
	hr_client_close(c);
}
END_TEST

/* Three nodes with keys, one drains: its keys go to their next owners. */
START_TEST(draining_node_is_emptied)
{
	enum { N = 12000 };
	hr_client *c;
	hr_ring *before, *ring;
	hr_rebalance_progress st, again;
	hr__mc_value v = { 0 };
	hr_error err = { 0 };
	uint64_t from_drained = 0;
	int64_t rev;

	for (int i = 0; i < 3; i++)
		put_node(i, "active");
	c = acking_client();
	ck_assert_int_eq(hrt_wait_nodes(c, 3, 10000), 0);
	before = hr_client_ring(c);
	fill(before, N);

	rev = put_node(1, "draining");
	wait_acked(rev);
	ring = hr_client_ring(c);
	ck_assert_msg(copy_ring(ring, NULL, &st, &err) == 0, "%s", err.message);
	print_stats("drain", &st, 0);

	for (int i = 0; i < N; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		ck_assert_str_ne(lk.node->id, "mc1");
		if (!strcmp(lk.read_node->id, "mc1"))
			from_drained++;
		check_key(ring, i, 0, &v);
	}
	ck_assert_uint_eq(st.scanned, items_on(1));
	ck_assert_uint_eq(st.moving, from_drained);
	ck_assert_uint_eq(st.copied, from_drained);
	/* The diff expects every key of the draining node to move. */
	ck_assert_uint_eq((uint64_t)(st.expected + 0.5), from_drained);

	ck_assert_msg(copy_ring(ring, NULL, &again, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(again.copied, 0);
	ck_assert_uint_eq(again.present, from_drained);

	hr__mc_value_free(&v);
	hr_ring_release(ring);
	hr_ring_release(before);
	hr_client_close(c);
}
END_TEST

/* A client deleting keys while the copy runs, as docs/handoff.md says:
 * at the read owner first, then at the write owner. */
typedef struct deleter {
	const hr_ring *ring;
	const int *keys;   /* the moving keys to delete, in this order */
	int n;
	char *deleted;     /* deleted[i] once key i is deleted at both  */
	hr__mc *conn[MAX_MC];
	atomic_int done;
} deleter;

static void *delete_keys(void *arg)
{
	deleter *d = arg;
	hr_error err = { 0 };

	for (int j = 0; j < d->n && !atomic_load(&d->done); j++) {
		char key[32];
		size_t len = key_of(d->keys[j], key);
		hr_lookup lk;

		hr_ring_lookup(d->ring, key, len, &lk, NULL);
		if (hr__mc_delete(d->conn[atoi(lk.read_node->id + 2)], key, len, 0, &err) < 0 ||
		    hr__mc_delete(d->conn[atoi(lk.node->id + 2)], key, len, 0, &err) < 0) {
			fprintf(stderr, "deleter: %s\n", err.message);
			break;
		}
		d->deleted[d->keys[j]] = 1;
	}
	return NULL;
}

/* Keys deleted by a client while they are being copied stay deleted:
 * the copy takes back what it stored for a key gone from the source. */
START_TEST(deletes_during_the_copy_stay_deleted)
{
	enum { N = 20000 };
	static char deleted[N];
	static int order[N];
	hr_node nodes[2] = {
		{ .id = "mc0", .weight = 1, .state = HR_STATE_ACTIVE },
		{ .id = "mc1", .weight = 1, .state = HR_STATE_WARMING },
	};
	hr_ring *one, *ring;
	hr_rebalance_progress st;
	hr__mc_value v = { 0 };
	hr_error err = { 0 };
	deleter d = { 0 };
	pthread_t t;
	uint64_t rng = 11;
	int n = 0, ndeleted = 0;

	nodes[0].addr = hrt_memcached_addr(mcs[0]);
	nodes[1].addr = hrt_memcached_addr(mcs[1]);
	ck_assert_int_eq(hr_ring_build(nodes, 1, NULL, 0, &one, &err), 0);
	fill(one, N);
	ck_assert_int_eq(hr_ring_build(nodes, 2, NULL, 0, &ring, &err), 0);
	/* Every other moving key, shuffled. */
	for (int i = 0; i < N; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		if (!strcmp(lk.node->id, "mc1") && i % 2)
			order[n++] = i;
	}
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(splitmix64(&rng) % (uint64_t)(i + 1)), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	memset(deleted, 0, sizeof deleted);
	d.ring = ring;
	d.keys = order;
	d.n = n;
	d.deleted = deleted;
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(hr__mc_connect(hrt_memcached_addr(mcs[i]), 5000, &d.conn[i], &err), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, delete_keys, &d), 0);
	ck_assert_msg(copy_ring(ring, NULL, &st, &err) == 0, "%s", err.message);
	atomic_store(&d.done, 1);
	pthread_join(t, NULL);
	print_stats("deletes during the copy", &st, 0);

	for (int i = 0; i < N; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		if (strcmp(lk.node->id, "mc1"))
			continue;
		ndeleted += deleted[i];
		check_key(ring, i, deleted[i] ? 'd' : 0, &v);
	}
	fprintf(stderr, "deleted during the copy: %d of %" PRIu64 " moving keys\n", ndeleted,
		st.moving);
	ck_assert_int_gt(ndeleted, 0);
	for (int i = 0; i < 2; i++)
		hr__mc_close(d.conn[i]);
	hr__mc_value_free(&v);
	hr_ring_release(ring);
	hr_ring_release(one);
}
END_TEST

/* The memcached backend with hooks, through the backend interface: what
 * clients and operators do at a chosen point of a copy, made exact. */
typedef struct hook {
	hr_rebalance_backend inner;
	hr_rebalancer *rb;
	const char *src;         /* the source of the last fetch            */
	int adds, stored;
	int cancel_after;        /* cancel once this many keys were stored  */
	int delete_every;        /* every n-th add: a client deletes the key at
				    the source just before it (after the fetch) */
	int rewrite_every;       /* every n-th of those: and rewrites it at the
				    destination just after the add           */
	int deleted, rewritten;
	int kill_dest_at;        /* the add before which its server is killed */
	int adds_seen;
	void (*on_first_enumerate)(struct hook *h);
	int enumerates;
	double first_add_s, last_add_s; /* when the first and last adds ended */
} hook;

static hr__mc *conn_of_addr(const char *addr)
{
	for (int i = 0; i < MAX_MC; i++)
		if (mcs[i] && !strcmp(hrt_memcached_addr(mcs[i]), addr))
			return conns[i];
	ck_abort_msg("no memcached at %s", addr);
	return NULL;
}

static int hook_enumerate(void *ud, const char *addr, unsigned pass, hr_rebalance_key_fn fn,
			  void *ctx, hr_error *err)
{
	hook *h = ud;

	if (h->on_first_enumerate && h->enumerates++ == 0)
		h->on_first_enumerate(h);
	return h->inner.enumerate(h->inner.userdata, addr, pass, fn, ctx, err);
}

static int hook_fetch(void *ud, const char *addr, const void *key, size_t len,
		      hr_rebalance_value *out, hr_error *err)
{
	hook *h = ud;

	if (out)
		h->src = addr;
	return h->inner.fetch(h->inner.userdata, addr, key, len, out, err);
}

static int hook_add(void *ud, const char *addr, const void *key, size_t len,
		    const hr_rebalance_value *v, uint64_t *cas, hr_error *err)
{
	hook *h = ud;
	int race = h->delete_every && ++h->adds % h->delete_every == 0, rc;

	if (h->kill_dest_at && h->adds_seen++ == h->kill_dest_at) {
		/* The destination dies mid-copy: mc2 in these tests. */
		ck_assert_str_eq(addr, hrt_memcached_addr(mcs[2]));
		hrt_memcached_stop(mcs[2]);
		mcs[2] = NULL;
	}
	if (race) {
		ck_assert_int_eq(hr__mc_delete(conn_of_addr(h->src), key, len, 0, err), 1);
		h->deleted++;
	}
	rc = h->inner.add(h->inner.userdata, addr, key, len, v, cas, err);
	if (rc == 1 && race && h->rewrite_every && h->deleted % h->rewrite_every == 0) {
		hr__mc_value cv = { .data = "client", .len = 6, .flags = 1, .ttl = 600 };

		ck_assert_int_eq(hr__mc_store(conn_of_addr(addr), key, len, &cv, HR__MC_SET, NULL,
					      err), 1);
		h->rewritten++;
	}
	if (rc == 1 && h->cancel_after && ++h->stored >= h->cancel_after)
		hr_rebalancer_cancel(h->rb);
	h->last_add_s = now_s();
	if (!h->first_add_s)
		h->first_add_s = h->last_add_s;
	return rc;
}

static int hook_remove(void *ud, const char *addr, const void *key, size_t len, uint64_t cas,
		       hr_error *err)
{
	hook *h = ud;

	return h->inner.remove(h->inner.userdata, addr, key, len, cas, err);
}

static void hook_close(void *ud)
{
	hook *h = ud;

	h->inner.close(h->inner.userdata);
}

/* A rebalancer over `h` (zeroed but for its settings). */
static hr_rebalancer *hooked_rebalancer(hook *h, hr_rebalance_config *cfg)
{
	hr_rebalance_backend be;
	hr_rebalance_config quiet;
	hr_error err = { 0 };

	hr_rebalance_backend_init(&h->inner);
	ck_assert_int_eq(hr_rebalance_memcached(5000, &h->inner, &err), 0);
	be = h->inner;
	be.userdata = h;
	be.enumerate = hook_enumerate;
	be.fetch = hook_fetch;
	be.add = hook_add;
	be.remove = hook_remove;
	be.close = hook_close;
	if (!cfg) {
		hr_rebalance_config_init(&quiet);
		quiet.log_level = HR_LOG_WARN;
		cfg = &quiet;
	}
	ck_assert_msg(hr_rebalancer_new(&be, cfg, &h->rb, &err) == 0, "%s", err.message);
	return h->rb;
}

/* A copy cancelled halfway (a rebalancer stopped mid-copy) and run again:
 * the rerun copies exactly the rest, and every key ends at its owner. */
START_TEST(stopped_copy_and_rerun_converge)
{
	enum { N = 9000 };
	hr_node nodes[2] = {
		{ .id = "mc0", .weight = 1, .state = HR_STATE_ACTIVE },
		{ .id = "mc1", .weight = 1, .state = HR_STATE_WARMING },
	};
	hr_ring *one, *ring;
	hr_rebalance_progress first, rest;
	hook h = { .cancel_after = 1000 };
	hr_rebalancer *rb;
	hr__mc_value v = { 0 };
	hr_error err = { 0 };

	nodes[0].addr = hrt_memcached_addr(mcs[0]);
	nodes[1].addr = hrt_memcached_addr(mcs[1]);
	ck_assert_int_eq(hr_ring_build(nodes, 1, NULL, 0, &one, &err), 0);
	fill(one, N);
	ck_assert_int_eq(hr_ring_build(nodes, 2, NULL, 0, &ring, &err), 0);

	rb = hooked_rebalancer(&h, NULL);
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, NULL, &err), HR_ECLOSED);
	ck_assert_msg(strstr(err.message, "rebalance cancelled after 1000 of ") &&
		      strstr(err.message, " keys from mc0"), "%s", err.message);
	ck_assert_int_eq(hr_rebalancer_progress(rb, &first, NULL), 0);
	ck_assert_uint_eq(first.copied, 1000);
	ck_assert_int_eq(first.step, HR_REBALANCE_STEP_FAILED);
	hr_rebalancer_free(rb);
	ck_assert_msg(copy_ring(ring, NULL, &rest, &err) == 0, "%s", err.message);
	print_stats("after a stop, the rerun", &rest, 0);
	ck_assert_uint_eq(rest.present, 1000);
	ck_assert_uint_eq(rest.copied, rest.moving - 1000);
	for (int i = 0; i < N; i++)
		check_key(ring, i, 0, &v);
	ck_assert_uint_eq(items_on(1), rest.moving);

	hr__mc_value_free(&v);
	hr_ring_release(ring);
	hr_ring_release(one);
}
END_TEST

/* The take-back, made exact: for every 7th key a client deletes it at the
 * source after the copy fetched it and before it stores it; the copy's
 * second look sees it gone and removes its copy by CAS, except where a
 * client rewrote the key at the destination in between (every 3rd of
 * those), which stays as the client wrote it. */
START_TEST(take_back_by_cas)
{
	enum { N = 6000 };
	hr_node nodes[2] = {
		{ .id = "mc0", .weight = 1, .state = HR_STATE_ACTIVE },
		{ .id = "mc1", .weight = 1, .state = HR_STATE_WARMING },
	};
	hr_ring *one, *ring;
	hr_rebalance_progress st;
	hook h = { .delete_every = 7, .rewrite_every = 3 };
	hr_rebalancer *rb;
	hr__mc_value v = { 0 };
	hr_error err = { 0 };
	int absent = 0, clients = 0;

	nodes[0].addr = hrt_memcached_addr(mcs[0]);
	nodes[1].addr = hrt_memcached_addr(mcs[1]);
	ck_assert_int_eq(hr_ring_build(nodes, 1, NULL, 0, &one, &err), 0);
	fill(one, N);
	ck_assert_int_eq(hr_ring_build(nodes, 2, NULL, 0, &ring, &err), 0);
	rb = hooked_rebalancer(&h, NULL);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	ck_assert_int_eq(hr_rebalancer_progress(rb, &st, NULL), 0);
	hr_rebalancer_free(rb);
	print_stats("take-back", &st, 0);
	ck_assert_int_gt(h.deleted, 100);
	ck_assert_int_gt(h.rewritten, 30);
	ck_assert_uint_eq(st.copied, st.moving);
	ck_assert_uint_eq(st.taken_back, (uint64_t)(h.deleted - h.rewritten));
	for (int i = 0; i < N; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;
		int rc;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		if (strcmp(lk.node->id, "mc1"))
			continue;
		rc = hr__mc_get(conn_of(lk.read_node), key, len, &v, &err);
		ck_assert_int_ge(rc, 0);
		if (rc == 1) {
			check_key(ring, i, 0, &v);
			continue;
		}
		/* Deleted at the source during its copy. */
		rc = hr__mc_get(conn_of(lk.node), key, len, &v, &err);
		ck_assert_int_ge(rc, 0);
		if (rc == 0) {
			absent++;
			continue;
		}
		ck_assert_msg(v.len == 6 && !memcmp(v.data, "client", 6),
			      "%s: deleted at the source, its copy left at mc1", key);
		clients++;
	}
	ck_assert_int_eq(absent, h.deleted - h.rewritten);
	ck_assert_int_eq(clients, h.rewritten);
	hr__mc_value_free(&v);
	hr_ring_release(ring);
	hr_ring_release(one);
}
END_TEST

/* The cap on a real copy: the rate measured never exceeds it by more than
 * 10%.  The same keys copied uncapped to another node give the copy's own
 * speed. */
START_TEST(rate_cap_on_a_real_copy)
{
	enum { N = 9000 };
	/* Well below the copy's own speed, also under the sanitizers (~5,000/s). */
	static const double cap = 1000;
	hr_node nodes[2] = {
		{ .id = "mc0", .weight = 1, .state = HR_STATE_ACTIVE },
		{ .id = "mc1", .weight = 1, .state = HR_STATE_WARMING },
	};
	hr_ring *one, *ring;
	hr_rebalance_progress st, fast;
	hr_rebalance_config cfg;
	hook h = { 0 }, fast_h = { 0 };
	hr_rebalancer *rb;
	hr_error err = { 0 };
	double t0, secs, fast_secs, fast_rate;

	nodes[0].addr = hrt_memcached_addr(mcs[0]);
	nodes[1].addr = hrt_memcached_addr(mcs[1]);
	ck_assert_int_eq(hr_ring_build(nodes, 1, NULL, 0, &one, &err), 0);
	fill(one, N);
	ck_assert_int_eq(hr_ring_build(nodes, 2, NULL, 0, &ring, &err), 0);

	hr_rebalance_config_init(&cfg);
	cfg.log_level = HR_LOG_WARN;
	cfg.keys_per_s = cap;
	rb = hooked_rebalancer(&h, &cfg);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	ck_assert_int_eq(hr_rebalancer_progress(rb, &st, NULL), 0);
	hr_rebalancer_free(rb);
	/* The copy's own time, from its first store to its last (the scan
	 * before it is not capped). */
	secs = h.last_add_s - h.first_add_s;
	print_stats("capped", &st, secs);
	ck_assert_uint_gt(st.copied, 2000);
	/* The bucket starts full: its burst (1/20 s) comes on top. */
	ck_assert_msg((double)(st.copied - 1) <= 1.1 * cap * secs + cap / 20,
		      "%.0f keys/s against a cap of %.0f", (double)(st.copied - 1) / secs, cap);

	/* Uncapped, to a third node in mc1's place. */
	nodes[1].addr = hrt_memcached_addr(mcs[2]);
	hr_ring_release(ring);
	ck_assert_int_eq(hr_ring_build(nodes, 2, NULL, 0, &ring, &err), 0);
	fast_h.first_add_s = 0;
	t0 = now_s();
	rb = hooked_rebalancer(&fast_h, NULL);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	ck_assert_int_eq(hr_rebalancer_progress(rb, &fast, NULL), 0);
	hr_rebalancer_free(rb);
	fast_secs = now_s() - t0;
	print_stats("uncapped", &fast, fast_secs);
	fast_rate = (double)(fast.copied - 1) / (fast_h.last_add_s - fast_h.first_add_s);
	fprintf(stderr, "uncapped copy alone: %.0f keys/s\n", fast_rate);
	/* How close to the cap the copy came is a figure, not a check: a
	 * loaded machine slows the copy itself below it at times (test_rate
	 * checks the buckets' own accuracy on a fake clock). */
	fprintf(stderr, "capped copy alone: %.0f keys/s against a cap of %.0f (%+.1f%%)\n",
		(double)(st.copied - 1) / secs, cap,
		100.0 * ((double)(st.copied - 1) / secs / cap - 1));
	/* The same keys, but from a server whose LRU queues the first copy's
	 * reads set moving: a dump may miss one (docs/handoff.md section 5),
	 * which the test allows here (the other tests count every key). */
	ck_assert_msg(fast.copied <= st.copied && fast.copied + 3 >= st.copied,
		      "%" PRIu64 " copied uncapped, %" PRIu64 " capped", fast.copied, st.copied);

	hr_ring_release(ring);
	hr_ring_release(one);
}
END_TEST

/* Bad input and unreachable servers fail with messages naming them. */
START_TEST(failures_name_their_cause)
{
	hr_node nodes[2] = {
		{ .id = "a", .addr = "127.0.0.1:1", .weight = 1, .state = HR_STATE_ACTIVE },
		{ .id = "b", .addr = "127.0.0.1:1", .weight = 1, .state = HR_STATE_WARMING },
	};
	hr_ring *ring;
	hr_rebalance_progress st;
	hr_rebalancer *rb;
	hr__mc *mc = NULL;
	hr_error err = { 0 };

	ck_assert_int_eq(hr_ring_build(nodes, 2, NULL, 0, &ring, &err), 0);
	ck_assert_int_eq(copy_ring(ring, NULL, &st, &err), HR_ECONNECT);
	ck_assert_str_eq(err.message, "source a: memcached 127.0.0.1:1: cannot connect");
	ck_assert_int_eq(st.error, HR_ECONNECT);
	rb = mc_rebalancer(NULL);
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, "zz", &err), HR_ENOTFOUND);
	ck_assert_str_eq(err.message, "node zz is not in the ring (revision 0)");
	hr_rebalancer_free(rb);
	ck_assert_int_eq(hr__mc_connect("localhost", 1000, &mc, &err), HR_EINVAL);
	hrt_assert_clean_message(err.message);
	ck_assert_int_eq(hr__mc_get(conns[0], "", 0, &(hr__mc_value){ 0 }, &err), HR_EINVAL);
	ck_assert_int_eq(hr__mc_get(conns[0], "x", 251, &(hr__mc_value){ 0 }, &err), HR_EINVAL);
	/* The connection is still usable after refused input. */
	ck_assert_int_eq(hr__mc_exists(conns[0], "nothing", 7, &err), 0);
	hr_ring_release(ring);
}
END_TEST

/* `hashring rebalance` runs the whole join: wait, copy, promote, wait,
 * purge; it refuses to go on with fewer clients than told. */
START_TEST(cli_runs_the_join)
{
	enum { N = 6000 };
	hr_client *c;
	hr_ring *before, *ring;
	hr__mc_value v = { 0 };
	hrt_cli_run r;
	const char *endpoints = hrt_etcd_endpoints(etcd);
	int64_t rev;

	c = two_filled_nodes(N, &before);
	rev = put_node(2, "warming");
	wait_acked(rev);

	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--endpoints", endpoints,
		"--prefix", PREFIX, "--ack-prefix", ACKS, "--clients", "2", "--timeout", "1", NULL });
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "hashring: rebalance: 1 live client acknowledged under " ACKS
				    " within 1000 ms (at least 2 required)\n"), "%s", r.err);
	ck_assert_msg(!strstr(r.err, "rebalance: rebalance:"), "%s", r.err);

	/* --id names a warming or draining node of the ring. */
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--endpoints", endpoints,
		"--prefix", PREFIX, "--ack-prefix", ACKS, "--id", "mc9", NULL });
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "hashring: rebalance: node 'mc9' is not in the ring (revision "),
		      "%s", r.err);
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--endpoints", endpoints,
		"--prefix", PREFIX, "--ack-prefix", ACKS, "--id", "mc0", NULL });
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "node 'mc0' is active, not warming or draining: nothing to"
				    " hand off"), "%s", r.err);
	ck_assert_uint_eq(items_on(2), 0);

	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--endpoints", endpoints,
		"--prefix", PREFIX, "--ack-prefix", ACKS, "--clients", "1", "--rate", "20000",
		"--id", "mc2", "--promote", "--purge", "--json", "--log-level", "info", NULL });
	ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "{\"step\":\"wait\",\"revision\":"));
	ck_assert_ptr_nonnull(strstr(r.out, "{\"step\":\"copy\",\"scanned\":6000,"));
	ck_assert_ptr_nonnull(strstr(r.out, "{\"step\":\"promote\",\"nodes\":1,"));
	ck_assert_ptr_nonnull(strstr(r.out, "{\"step\":\"purge\","));
	/* The library's lines, through the command's log. */
	ck_assert_msg(strstr(r.err, "event=rebalance_start step=run node=mc2 ") &&
		      strstr(r.err, "event=rebalance_promoted node=mc2 ") &&
		      strstr(r.err, "event=rebalance_done step=run node=mc2 "), "%s", r.err);
	ck_assert_int_eq(hrt_wait_state(c, "mc2", HR_STATE_ACTIVE, 10000), 0);
	ring = hr_client_ring(c);
	for (int i = 0; i < N; i++)
		check_key(ring, i, 0, &v);
	ck_assert_uint_eq(items_on(0) + items_on(1) + items_on(2), N);

	/* Nothing left to hand over: a warning, and success. */
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--endpoints", endpoints,
		"--prefix", PREFIX, "--ack-prefix", ACKS, NULL });
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.err, "no warming or draining node: nothing to copy"));

	hr__mc_value_free(&v);
	hr_ring_release(ring);
	hr_ring_release(before);
	hr_client_close(c);
}
END_TEST

/* ---- the whole handoff through hr_rebalancer_run ------------------------------ */

/* A client that never acknowledges: its ack stays at revision 1, under a
 * live lease.  The run's wait times out naming it, and nothing is copied. */
START_TEST(client_that_never_acks_times_out)
{
	enum { N = 2000 };
	hr_client *c;
	hr_ring *before;
	hr_rebalance_config cfg;
	hr_rebalance_progress p;
	hr_rebalancer *rb;
	hr_error err = { 0 };
	hrt_log log;
	char out[256], lease[64];

	c = two_filled_nodes(N, &before);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "lease grant 120"), 0);
	ck_assert_int_eq(sscanf(out, "lease %63s granted", lease), 1);
	ck_assert_int_eq(hrt_etcdctl(etcd, NULL, 0,
		"put --lease=%s " ACKS "stuck-7 '{\"client\":\"stuck-7\",\"revision\":1,"
		"\"digest\":\"0123456789abcdef\",\"version\":\"1.1.0\","
		"\"time\":\"2026-12-01T12:00:00.000Z\"}'", lease), 0);
	put_node(2, "warming");
	ck_assert_int_eq(hrt_wait_nodes(c, 3, 10000), 0);

	hrt_log_init(&log);
	hr_rebalance_config_init(&cfg);
	cfg.ack_prefix = ACKS;
	cfg.wait_timeout_ms = 1500;
	cfg.flags = HR_REBALANCE_PROMOTE;
	cfg.log = hrt_log_fn;
	cfg.log_userdata = &log;
	rb = mc_rebalancer(&cfg);
	ck_assert_int_eq(hr_rebalancer_run(rb, c, &ecfg, NULL, &err), HR_ETIMEDOUT);
	ck_assert_msg(strstr(err.message, "stuck-7") && strstr(err.message, "1"), "%s",
		      err.message);
	ck_assert_int_eq(hr_rebalancer_progress(rb, &p, NULL), 0);
	ck_assert_int_eq(p.error, HR_ETIMEDOUT);
	ck_assert_uint_eq(p.scanned + p.copied, 0);
	ck_assert_uint_eq(items_on(2), 0);
	ck_assert_int_eq(hrt_node_state(c, "mc2"), HR_STATE_WARMING);
	ck_assert_int_eq(hrt_log_count(&log, "level=error event=rebalance_failed step=run",
				       "code=-9", "stuck-7", NULL), 1);
	ck_assert_int_eq(hrt_log_count(&log, "event=rebalance_start", "step=run", NULL), 1);
	hr_rebalancer_free(rb);
	hrt_log_free(&log);
	hr_ring_release(before);
	hr_client_close(c);
}
END_TEST

static hr_client *changing_client;

/* Another node joins while the copy runs (at its first listing). */
static void another_node_joins(hook *h)
{
	(void)h;
	put_node(3, "warming");
	ck_assert_int_eq(hrt_wait_nodes(changing_client, 4, 10000), 0);
}

typedef struct steps {
	hr_rebalance_step step[8];
	hr_rebalance_progress last[8];
	int n;
} steps;

static void record_step(void *userdata, hr_rebalance_step step, const hr_rebalance_progress *p)
{
	steps *s = userdata;

	if (s->n < 8) {
		s->last[s->n] = *p;
		s->step[s->n++] = step;
	}
}

/* A ring that changes during the copy is not promoted: its new arcs were
 * not copied.  The rerun copies them, promotes both nodes, waits for the
 * clients and purges: every key at its owner, once. */
START_TEST(ring_changed_during_the_copy_is_refused)
{
	enum { N = 6000 };
	hr_client *c;
	hr_ring *before, *ring;
	hr_rebalance_config cfg;
	hr_rebalancer *rb;
	hook h = { .on_first_enumerate = another_node_joins };
	steps st = { 0 };
	hr__mc_value v = { 0 };
	hr_error err = { 0 };
	hrt_log log;

	c = two_filled_nodes(N, &before);
	changing_client = c;
	put_node(2, "warming");
	ck_assert_int_eq(hrt_wait_nodes(c, 3, 10000), 0);

	hrt_log_init(&log);
	hr_rebalance_config_init(&cfg);
	cfg.ack_prefix = ACKS;
	cfg.wait_timeout_ms = 10000;
	cfg.flags = HR_REBALANCE_PROMOTE | HR_REBALANCE_PURGE;
	cfg.min_clients = 1;
	cfg.log = hrt_log_fn;
	cfg.log_userdata = &log;
	rb = hooked_rebalancer(&h, &cfg);
	ck_assert_int_eq(hr_rebalancer_run(rb, c, &ecfg, NULL, &err), HR_ECONFLICT);
	ck_assert_msg(strstr(err.message, "the ring changed during the copy (revision ") &&
		      strstr(err.message, "run again to copy its new arcs"), "%s", err.message);
	hr_rebalancer_free(rb);
	ck_assert_int_eq(hrt_node_state(c, "mc2"), HR_STATE_WARMING);
	ck_assert_int_eq(hrt_node_state(c, "mc3"), HR_STATE_WARMING);

	cfg.on_step = record_step;
	cfg.on_step_userdata = &st;
	rb = mc_rebalancer(&cfg);
	ck_assert_msg(hr_rebalancer_run(rb, c, &ecfg, NULL, &err) == 0, "%s", err.message);
	hr_rebalancer_free(rb);
	ck_assert_int_eq(st.n, 5);
	ck_assert_int_eq(st.step[0], HR_REBALANCE_STEP_WAIT);
	ck_assert_uint_eq(st.last[0].clients, 1);
	ck_assert_int_eq(st.step[1], HR_REBALANCE_STEP_COPY);
	ck_assert_uint_gt(st.last[1].copied, 0);
	ck_assert_int_eq(st.step[2], HR_REBALANCE_STEP_PROMOTE);
	ck_assert_uint_eq(st.last[2].promoted, 2);
	ck_assert_int_eq(st.step[3], HR_REBALANCE_STEP_WAIT);
	ck_assert_uint_ge(st.last[3].acked_revision, st.last[2].revision);
	ck_assert_int_eq(st.step[4], HR_REBALANCE_STEP_PURGE);
	ck_assert_uint_gt(st.last[4].purged, 0);
	ck_assert_int_eq(hrt_log_count(&log, "event=rebalance_promoted", "node=mc2", NULL), 1);
	ck_assert_int_eq(hrt_log_count(&log, "event=rebalance_promoted", "node=mc3", NULL), 1);
	ck_assert_int_eq(hrt_log_count(&log, "event=rebalance_purged", NULL), 4);
	ck_assert_int_eq(hrt_log_count(&log, "event=rebalance_done", "step=run", NULL), 1);

	ring = hr_client_ring(c);
	ck_assert_int_eq(hrt_node_state(c, "mc2"), HR_STATE_ACTIVE);
	ck_assert_int_eq(hrt_node_state(c, "mc3"), HR_STATE_ACTIVE);
	for (int i = 0; i < N; i++)
		check_key(ring, i, 0, &v);
	ck_assert_uint_eq(items_on(0) + items_on(1) + items_on(2) + items_on(3), N);
	hr__mc_value_free(&v);
	hrt_log_free(&log);
	hr_ring_release(ring);
	hr_ring_release(before);
	hr_client_close(c);
}
END_TEST

/* ---- keys the backend cannot move, runs without clients, failing servers ------ */

#define LONG_KEYS 20
#define LONG_KEY_LEN 200

/* Long key i, "K <i> yyy...": LONG_KEY_LEN bytes with blanks, which only
 * the binary protocol writes, and whose base64 form is over the text
 * protocol's 250 characters. */
static size_t long_key(int i, char *out)
{
	int n = sprintf(out, "K %02d ", i);

	memset(out + n, 'y', (size_t)(LONG_KEY_LEN - n));
	return LONG_KEY_LEN;
}

/* How many times `needle` occurs in `hay`. */
static int occurrences(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *at = hay; (at = strstr(at, needle)); at += strlen(needle))
		n++;
	return n;
}

/* The copy line's tab-separated fields (the text output); *n of them. */
static int copy_fields(const char *out, char fields[16][32])
{
	const char *line = strstr(out, "copy\t");
	int n = 0;

	ck_assert_msg(line != NULL, "no copy line: %s", out);
	while (n < 16) {
		size_t len = strcspn(line, "\t\n");

		snprintf(fields[n++], 32, "%.*s", (int)len, line);
		if (line[len] != '\t')
			break;
		line += len + 1;
	}
	return n;
}

/* Legal keys the copy cannot move (20 of 200 bytes with blanks, set over
 * the binary protocol; one of them used to stop every run and rerun):
 * `hashring rebalance` names each once, skips it, copies every other key
 * and exits 3; the rerun, with --promote, finds the rest present, skips
 * the same keys, promotes and exits 3 again. */
START_TEST(unmovable_keys_do_not_stop_the_run)
{
	enum { N = 3000 };
	const char *endpoints = hrt_etcd_endpoints(etcd);
	hr_client *c;
	hr_ring *before, *ring;
	hr__mc_value v = { 0 };
	hrt_cli_run r;
	char fields[16][32], want[128];
	int skipping = 0, moving = 0;
	int64_t rev;

	c = two_filled_nodes(N, &before);
	for (int i = 0; i < LONG_KEYS; i++) {
		char key[LONG_KEY_LEN];
		size_t len = long_key(i, key);
		hr_lookup lk;

		ck_assert_int_eq(hr_ring_lookup(before, key, len, &lk, NULL), 0);
		ck_assert_int_eq(hrt_memcached_binary_set(mcs[atoi(lk.node->id + 2)], key, len,
							  "long", 4), 0);
	}
	rev = put_node(2, "warming");
	wait_acked(rev);
	ck_assert_int_eq(hrt_wait_nodes(c, 3, 10000), 0);
	ring = hr_client_ring(c);
	for (int i = 0; i < LONG_KEYS; i++) {
		char key[LONG_KEY_LEN];
		size_t len = long_key(i, key);
		hr_lookup lk;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		skipping += lk.node != lk.read_node;
	}
	for (int i = 0; i < N; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		moving += lk.node != lk.read_node;
	}
	ck_assert_int_gt(skipping, 0);

	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--endpoints", endpoints,
		"--prefix", PREFIX, "--ack-prefix", ACKS, NULL });
	printf("%d of %d long keys move: status %d\n%s", skipping, LONG_KEYS, r.status, r.out);
	ck_assert_msg(r.status == 3, "status %d: %s", r.status, r.err);
	/* copy SCANNED MOVING EXPECTED COPIED PRESENT GONE TAKEN_BACK SKIPPED
	 * BYTES SECONDS */
	ck_assert_int_eq(copy_fields(r.out, fields), 11);
	ck_assert_int_eq(atoi(fields[2]), moving + skipping);
	ck_assert_int_eq(atoi(fields[4]), moving);
	ck_assert_str_eq(fields[7], "0");
	ck_assert_int_eq(atoi(fields[8]), skipping);
	snprintf(want, sizeof want, "warning: %d keys skipped, which the backend cannot move",
		 skipping);
	ck_assert_msg(strstr(r.err, want), "%s", r.err);
	/* Each moving long key named once, its blanks kept in a quoted value. */
	ck_assert_int_eq(occurrences(r.err, "level=warn event=rebalance_skipped "), skipping);
	for (int i = 0; i < LONG_KEYS; i++) {
		char key[LONG_KEY_LEN + 8];
		size_t len = long_key(i, key + 5);
		hr_lookup lk;

		hr_ring_lookup(ring, key + 5, len, &lk, NULL);
		memcpy(key, "key=\"", 5);
		memcpy(key + 5 + len, "\"\n", 3);
		ck_assert_int_eq(occurrences(r.err, key), lk.node != lk.read_node);
	}
	ck_assert_uint_eq(items_on(2), (size_t)moving);
	ck_assert_int_eq(hrt_node_state(c, "mc2"), HR_STATE_WARMING);

	/* The rerun: the same keys skipped, the others present, promoted. */
	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--endpoints", endpoints,
		"--prefix", PREFIX, "--ack-prefix", ACKS, "--promote", "--json", NULL });
	ck_assert_msg(r.status == 3, "status %d: %s", r.status, r.err);
	snprintf(want, sizeof want, "\"present\":%d,\"gone\":0,\"taken_back\":0,\"skipped\":%d,",
		 moving, skipping);
	ck_assert_msg(strstr(r.out, want), "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "{\"step\":\"promote\",\"nodes\":1,"));
	ck_assert_int_eq(hrt_wait_state(c, "mc2", HR_STATE_ACTIVE, 10000), 0);
	hr_ring_release(ring);
	ring = hr_client_ring(c);
	for (int i = 0; i < N; i++)
		check_key(ring, i, 0, &v);
	hr__mc_value_free(&v);
	hr_ring_release(ring);
	hr_ring_release(before);
	hr_client_close(c);
}
END_TEST

/* A run that no client acknowledges proves nothing (an ack prefix with a
 * typo, services started without an ack client id): it is refused, by
 * the library's default and by the command, which says how to ask for it;
 * asked for (min_clients 0, --clients 0), it runs. */
START_TEST(run_without_acknowledging_clients_is_asked_for)
{
	enum { N = 2000 };
	const char *endpoints = hrt_etcd_endpoints(etcd);
	hr_client_config ccfg;
	hr_client *c = NULL;
	hr_ring *ring;
	hr_rebalance_config cfg;
	hr_rebalancer *rb;
	hr_error err = { 0 };
	hrt_cli_run r;

	put_node(0, "active");
	put_node(1, "active");
	hr_client_config_init(&ccfg); /* no ack client id: invisible to waits */
	ck_assert_msg(hr_client_open(&ecfg, &ccfg, &c, &err) == 0, "%s", err.message);
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 10000), 0);
	ring = hr_client_ring(c);
	fill(ring, N);
	hr_ring_release(ring);
	put_node(2, "warming");
	ck_assert_int_eq(hrt_wait_nodes(c, 3, 10000), 0);

	hr_rebalance_config_init(&cfg);
	cfg.ack_prefix = ACKS;
	cfg.wait_timeout_ms = 1000;
	cfg.flags = HR_REBALANCE_PROMOTE;
	cfg.log_level = HR_LOG_ERROR;
	rb = mc_rebalancer(&cfg);
	ck_assert_int_eq(hr_rebalancer_run(rb, c, &ecfg, NULL, &err), HR_ETIMEDOUT);
	ck_assert_str_eq(err.message, "no live client acknowledged under " ACKS
				      " within 1000 ms (at least 1 required)");
	hr_rebalancer_free(rb);
	ck_assert_uint_eq(items_on(2), 0);
	ck_assert_int_eq(hrt_node_state(c, "mc2"), HR_STATE_WARMING);

	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--endpoints", endpoints,
		"--prefix", PREFIX, "--ack-prefix", ACKS, "--promote", "--timeout", "1", NULL });
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "hashring: rebalance: no live client acknowledged under " ACKS) &&
		      strstr(r.err, "pass --clients 0 to run with no acknowledging client"),
		      "%s", r.err);
	ck_assert_uint_eq(items_on(2), 0);

	hrt_cli_run_cmd(&r, NULL, (const char *const[]){ "rebalance", "--endpoints", endpoints,
		"--prefix", PREFIX, "--ack-prefix", ACKS, "--promote", "--clients", "0", NULL });
	ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "no live client acknowledges: nothing waited for"));
	ck_assert_int_eq(hrt_wait_state(c, "mc2", HR_STATE_ACTIVE, 10000), 0);
	ck_assert_uint_gt(items_on(2), 0);
	hr_client_close(c);
}
END_TEST

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waiting for more clients than acknowledge sleeps between its reads of
 * the acks: it used to ask etcd again at once, spending about a sixth of
 * the wait's time on the CPU (2.8 s of 30 s in `hashring rebalance`). */
START_TEST(waiting_for_clients_sleeps)
{
	hr_client *c;
	hr_ring *before;
	hr_rebalance_config cfg;
	hr_rebalancer *rb;
	hr_error err = { 0 };
	double t0, cpu0, wall, cpu;

	c = two_filled_nodes(10, &before);
	wait_acked(put_node(2, "warming"));
	hr_rebalance_config_init(&cfg);
	cfg.ack_prefix = ACKS;
	cfg.wait_timeout_ms = 3000;
	cfg.min_clients = 2;
	cfg.log_level = HR_LOG_ERROR;
	rb = mc_rebalancer(&cfg);
	t0 = now_s();
	cpu0 = thread_cpu_s();
	ck_assert_int_eq(hr_rebalancer_run(rb, c, &ecfg, NULL, &err), HR_ETIMEDOUT);
	cpu = thread_cpu_s() - cpu0;
	wall = now_s() - t0;
	printf("waiting for 2 clients with 1: %.3f s of CPU in %.2f s\n", cpu, wall);
	ck_assert_msg(cpu < 0.03 * wall, "%.3f s of CPU in %.2f s", cpu, wall);
	ck_assert_str_eq(err.message, "1 live client acknowledged under " ACKS
				      " within 3000 ms (at least 2 required)");
	hr_rebalancer_free(rb);
	hr_ring_release(before);
	hr_client_close(c);
}
END_TEST

/* A destination that dies mid-copy is named as such: the message leads
 * with its role and id, and event=rebalance_failed gives its id, its
 * address, its role, the backend and the source then copied from. */
START_TEST(dead_destination_is_named)
{
	enum { N = 3000 };
	hr_client *c;
	hr_ring *before, *ring;
	hr_rebalance_config cfg;
	hr_rebalancer *rb;
	hook h = { .kill_dest_at = 50 };
	hr_error err = { 0 };
	hrt_log log;
	char addr[64], want[160];
	int rc;

	c = two_filled_nodes(N, &before);
	put_node(2, "warming");
	ck_assert_int_eq(hrt_wait_nodes(c, 3, 10000), 0);
	snprintf(addr, sizeof addr, "%s", hrt_memcached_addr(mcs[2]));
	ring = hr_client_ring(c);
	hrt_log_init(&log);
	hr_rebalance_config_init(&cfg);
	cfg.log = hrt_log_fn;
	cfg.log_userdata = &log;
	rb = hooked_rebalancer(&h, &cfg);
	rc = hr_rebalancer_copy(rb, ring, NULL, &err);
	ck_assert_msg(rc == HR_EIO || rc == HR_ECONNECT, "%d: %s", rc, err.message);
	snprintf(want, sizeof want, "destination mc2: memcached %s: ", addr);
	ck_assert_msg(strstr(err.message, want) == err.message, "%s", err.message);
	snprintf(want, sizeof want, "node=mc2 addr=%s role=destination backend=memcached source=mc",
		 addr);
	ck_assert_int_eq(hrt_log_count(&log, "level=error event=rebalance_failed step=copy ", want,
				       NULL), 1);
	hr_rebalancer_free(rb);
	hrt_log_free(&log);
	hr_ring_release(ring);
	hr_ring_release(before);
	hr_client_close(c);
}
END_TEST

/* ---- listing under reads ---------------------------------------------------------- */

#define LISTED_N 20000

typedef struct reader {
	const char *addr;
	atomic_int *stop;
	uint64_t seed, reads;
} reader;

/* Reads random keys as fast as it can: memcached's LRU maintainer then
 * moves items between its queues, as under a cache's real load. */
static void *read_keys(void *arg)
{
	reader *r = arg;
	hr__mc *mc = NULL;
	hr__mc_value v = { 0 };
	hr_error err = { 0 };

	if (hr__mc_connect(r->addr, 5000, &mc, &err) != 0)
		return NULL;
	while (!atomic_load(r->stop)) {
		char key[32];
		size_t len = key_of((int)(splitmix64(&r->seed) % LISTED_N), key);

		if (hr__mc_get(mc, key, len, &v, &err) < 0)
			break;
		r->reads++;
	}
	hr__mc_value_free(&v);
	hr__mc_close(mc);
	return NULL;
}

typedef struct listing {
	unsigned char seen[LISTED_N];
	size_t lines, distinct;
} listing;

static int list_key(void *ctx, const void *key, size_t len, uint64_t cas)
{
	listing *l = ctx;
	char buf[32];
	int i;

	(void)cas;
	ck_assert_uint_lt(len, sizeof buf);
	memcpy(buf, key, len);
	buf[len] = '\0';
	ck_assert_int_eq(sscanf(buf + 4, "%d", &i), 1);
	ck_assert(i >= 0 && i < LISTED_N);
	l->lines++;
	l->distinct += !l->seen[i]++;
	return 0;
}

static int list_item(void *ctx, const hr__mc_item *item)
{
	return list_key(ctx, item->key, item->key_len, item->cas);
}

/* The backend's listing, while two readers make memcached move items
 * between its LRU queues, lists every key once (the LRU walk, printed
 * for comparison, misses some and lists others twice). */
START_TEST(listing_under_reads_misses_nothing)
{
	atomic_int stop = 0;
	reader readers[2];
	pthread_t threads[2];
	hr_rebalance_backend b;
	hr__mc_value v = { 0 };
	hr_error err = { 0 };
	const char *addr = hrt_memcached_addr(mcs[0]);
	static listing l;

	for (int i = 0; i < LISTED_N; i++) {
		char key[32];
		size_t len = key_of(i, key);

		value_of(i, &v);
		EXPECT(hr__mc_store(conns[0], key, len, &v, HR__MC_SET, NULL, &err) == 1);
	}
	hr__mc_value_free(&v);
	for (int t = 0; t < 2; t++) {
		readers[t] = (reader){ addr, &stop, 7 + (uint64_t)t, 0 };
		ck_assert_int_eq(pthread_create(&threads[t], NULL, read_keys, &readers[t]), 0);
	}
	nanosleep(&(struct timespec){ 0, 300 * 1000 * 1000 }, NULL);
	hr_rebalance_backend_init(&b);
	ck_assert_int_eq(hr_rebalance_memcached(5000, &b, &err), 0);
	for (int pass = 0; pass < 3; pass++) {
		hr__mc *d = NULL;

		memset(&l, 0, sizeof l);
		ck_assert_msg(b.enumerate(b.userdata, addr, 0, list_key, &l, &err) ==
			      HR_REBALANCE_LISTED_ALL, "%s", err.message);
		ck_assert_uint_eq(l.distinct, LISTED_N);
		ck_assert_uint_eq(l.lines, LISTED_N);
		memset(&l, 0, sizeof l);
		ck_assert_int_eq(hr__mc_connect(addr, 5000, &d, &err), 0);
		ck_assert_msg(hr__mc_metadump(d, HR__MC_WALK_LRU, list_item, &l, &err) == 0, "%s",
			      err.message);
		hr__mc_close(d);
		printf("listing under reads: the hash walk %d of %d keys, the LRU walk %zu"
		       " (%zu lines)\n", LISTED_N, LISTED_N, l.distinct, l.lines);
	}
	atomic_store(&stop, 1);
	for (int t = 0; t < 2; t++)
		pthread_join(threads[t], NULL);
	printf("listing under reads: %" PRIu64 " reads meanwhile\n",
	       readers[0].reads + readers[1].reads);
	ck_assert_uint_gt(readers[0].reads + readers[1].reads, 0);
	b.close(b.userdata);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("handoff");
	TCase *tc = tcase_create("handoff");

	tcase_add_checked_fixture(tc, up, down);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, warming_node_is_filled);
	tcase_add_test(tc, draining_node_is_emptied);
	tcase_add_test(tc, deletes_during_the_copy_stay_deleted);
	tcase_add_test(tc, stopped_copy_and_rerun_converge);
	tcase_add_test(tc, take_back_by_cas);
	tcase_add_test(tc, rate_cap_on_a_real_copy);
	tcase_add_test(tc, failures_name_their_cause);
	tcase_add_test(tc, cli_runs_the_join);
	tcase_add_test(tc, client_that_never_acks_times_out);
	tcase_add_test(tc, ring_changed_during_the_copy_is_refused);
	tcase_add_test(tc, unmovable_keys_do_not_stop_the_run);
	tcase_add_test(tc, run_without_acknowledging_clients_is_asked_for);
	tcase_add_test(tc, waiting_for_clients_sleeps);
	tcase_add_test(tc, dead_destination_is_named);
	tcase_add_test(tc, listing_under_reads_misses_nothing);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
