/* SPDX-License-Identifier: MIT */
/*
 * test_rebalance.c - the rebalancer API (hashring.h, "Rebalancing") over a
 * fake in-memory store: the copy of a join and of a drain, one node only,
 * keys present, gone and taken back (by CAS), the purge, the rate cap's
 * bookkeeping, cancel, backend errors (naming the node they came from),
 * keys the backend cannot move (skipped, named, the copy going on), bad
 * input, the figures read from another thread (a source's progress never
 * going back), the event=rebalance_* lines (read back by a logfmt parser)
 * and the metrics.
 */
#define _GNU_SOURCE
#include "hrt_check.h"
#include "hrt_logfmt.h"

#include "hashring.h"
#include "hashring/rebalance.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a fake store ----------------------------------------------------------- */

#define NODES 5
#define KEYS 3000

typedef struct item {
	char key[32];
	size_t len;
	char value[64];
	size_t vlen;
	uint32_t flags;
	int64_t ttl;
	uint64_t cas;
	int live;
} item;

/* One fake server per address "n0".."n4"; hooks make the races that the
 * handoff must survive happen at a chosen call. */
typedef struct store {
	item items[NODES][KEYS + 64];
	uint64_t next_cas;
	hr_rebalancer *rb;          /* for the cancel hook */
	const char *last_src;       /* the source of the last fetch */
	int adds, fetches, enumerates, removes, closes, batches;
	int cancel_after_adds;      /* cancel once this many adds ran (0: never) */
	int fail_add_at;            /* the add that fails (0: none)              */
	int fail_add_code;          /* with this code (0: HR_EIO)                */
	int refuse_blank;           /* fetch and remove: HR_ELIMIT for a key with
				       a byte <= 0x20, as memcached's text
				       protocol cannot carry a long one        */
	int delete_before_add;      /* every n-th add: a client deletes at the source
				       between the copy's fetch and its add      */
	int rewrite_after_add;      /* of those, a client rewrites the key at the
				       destination just after the add, too      */
	int delete_before_fetch;    /* every n-th fetch: the key is gone first   */
	int listing_doubles;        /* list every key twice in pass 0           */
	unsigned drop_passes;       /* passes below this list only the slots i
				       with i % drop_passes == pass, as a store
				       whose items move while it lists them    */
	int listing_complete;       /* say HR_REBALANCE_LISTED_ALL              */
	size_t passes;              /* the backend's enumerate_passes           */
} store;

static int node_of(const char *addr)
{
	ck_assert(addr[0] == 'n' && addr[1] >= '0' && addr[1] < '0' + NODES && !addr[2]);
	return addr[1] - '0';
}

static item *find(store *s, int node, const void *key, size_t len)
{
	for (int i = 0; i < KEYS + 64; i++) {
		item *it = &s->items[node][i];

		if (it->live && it->len == len && !memcmp(it->key, key, len))
			return it;
	}
	return NULL;
}

static item *put(store *s, int node, const void *key, size_t len, const char *value,
		 size_t vlen, uint32_t flags, int64_t ttl)
{
	item *it = find(s, node, key, len);

	for (int i = 0; !it && i < KEYS + 64; i++)
		if (!s->items[node][i].live)
			it = &s->items[node][i];
	ck_assert_ptr_nonnull(it);
	ck_assert(len <= sizeof it->key && vlen <= sizeof it->value);
	memcpy(it->key, key, len);
	it->len = len;
	memcpy(it->value, value, vlen);
	it->vlen = vlen;
	it->flags = flags;
	it->ttl = ttl;
	it->cas = ++s->next_cas;
	it->live = 1;
	return it;
}

static int count_on(store *s, int node)
{
	int n = 0;

	for (int i = 0; i < KEYS + 64; i++)
		n += s->items[node][i].live;
	return n;
}

static int fake_enumerate(void *ud, const char *addr, unsigned pass, hr_rebalance_key_fn fn,
			  void *ctx, hr_error *err)
{
	store *s = ud;
	int node = node_of(addr);

	(void)err;
	s->enumerates++;
	for (int rep = 0; rep < (pass == 0 && s->listing_doubles ? 2 : 1); rep++) {
		for (int i = 0; i < KEYS + 64; i++) {
			item *it = &s->items[node][i];
			int rc;

			if (pass < s->drop_passes && (unsigned)i % s->drop_passes != pass)
				continue;
			if (it->live && (rc = fn(ctx, it->key, it->len, it->cas)) != 0)
				return rc;
		}
	}
	return s->listing_complete ? HR_REBALANCE_LISTED_ALL : 0;
}

static int has_blank(const void *key, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (((const unsigned char *)key)[i] <= 0x20)
			return 1;
	return 0;
}

static int refuse(const char *addr, hr_error *err)
{
	err->code = HR_ELIMIT;
	snprintf(err->message, sizeof err->message, "fake %s: cannot carry that key", addr);
	return HR_ELIMIT;
}

static int fake_fetch(void *ud, const char *addr, const void *key, size_t len,
		      hr_rebalance_value *out, hr_error *err)
{
	store *s = ud;
	item *it;

	if (s->refuse_blank && has_blank(key, len))
		return refuse(addr, err);
	if (out && s->delete_before_fetch && ++s->fetches % s->delete_before_fetch == 0 &&
	    (it = find(s, node_of(addr), key, len)))
		it->live = 0;
	it = find(s, node_of(addr), key, len);
	if (out)
		s->last_src = addr;
	if (!it)
		return 0;
	if (out)
		*out = (hr_rebalance_value){ it->value, it->vlen, it->flags, it->ttl };
	return 1;
}

static int fake_add(void *ud, const char *addr, const void *key, size_t len,
		    const hr_rebalance_value *v, uint64_t *cas, hr_error *err)
{
	store *s = ud;
	int node = node_of(addr), n = ++s->adds, race;
	item *it;

	if (s->fail_add_at && n == s->fail_add_at) {
		err->code = s->fail_add_code ? s->fail_add_code : HR_EIO;
		snprintf(err->message, sizeof err->message, "fake %s: out of memory", addr);
		return err->code;
	}
	if (s->cancel_after_adds && n > s->cancel_after_adds)
		hr_rebalancer_cancel(s->rb);
	race = s->delete_before_add && n % s->delete_before_add == 0;
	if (race && (it = find(s, node_of(s->last_src), key, len)))
		it->live = 0;
	if (find(s, node, key, len))
		return 0;
	it = put(s, node, key, len, v->data, v->len, v->flags, v->ttl_s);
	*cas = it->cas;
	if (race && s->rewrite_after_add && (n / s->delete_before_add) % s->rewrite_after_add == 0)
		put(s, node, key, len, "client", 6, 1, 600);
	return 1;
}

static int fake_remove(void *ud, const char *addr, const void *key, size_t len, uint64_t cas,
		       hr_error *err)
{
	store *s = ud;
	item *it = find(s, node_of(addr), key, len);

	if (s->refuse_blank && has_blank(key, len))
		return refuse(addr, err);
	s->removes++;
	if (!it || (cas && it->cas != cas))
		return 0;
	it->live = 0;
	return 1;
}

static void fake_close(void *ud)
{
	((store *)ud)->closes++;
}

/* The batch forms, over the single ones: what a store that pipelines
 * answers, key by key. */
static int fake_fetch_batch(void *ud, const char *addr, size_t n, const void *const *keys,
			    const size_t *lens, hr_rebalance_value *out, int *rcs, hr_error *err)
{
	store *s = ud;

	(void)err;
	ck_assert_uint_le(n, HR_REBALANCE_BATCH_MAX);
	s->batches++;
	for (size_t i = 0; i < n; i++) {
		hr_error e = { 0 };

		rcs[i] = fake_fetch(ud, addr, keys[i], lens[i], out ? &out[i] : NULL, &e);
	}
	return 0;
}

static int fake_add_batch(void *ud, const char *addr, size_t n, const void *const *keys,
			  const size_t *lens, const hr_rebalance_value *values, uint64_t *cas,
			  int *rcs, hr_error *err)
{
	(void)err;
	ck_assert_uint_le(n, HR_REBALANCE_BATCH_MAX);
	for (size_t i = 0; i < n; i++) {
		hr_error e = { 0 };

		rcs[i] = fake_add(ud, addr, keys[i], lens[i], &values[i], &cas[i], &e);
	}
	return 0;
}

/* Whether backend_of() gives the batch forms: the tests run both ways. */
static int batched;

static void backend_of(store *s, hr_rebalance_backend *b)
{
	hr_rebalance_backend_init(b);
	b->userdata = s;
	b->enumerate = fake_enumerate;
	b->fetch = fake_fetch;
	b->add = fake_add;
	b->remove = fake_remove;
	b->close = fake_close;
	b->enumerate_passes = s->passes;
	b->name = "fake";
	if (batched) {
		b->fetch_batch = fake_fetch_batch;
		b->add_batch = fake_add_batch;
	}
}

/* ---- rings and keys ------------------------------------------------------------ */

static const char *const ids[NODES] = { "a", "b", "c", "d", "e" };
static const char *const addrs[NODES] = { "n0", "n1", "n2", "n3", "n4" };

/* A ring of the first `n` nodes, with the states given ('a' active,
 * 'w' warming, 'd' draining), built with `opts` (NULL: the defaults). */
static hr_ring *ring_with(const char *states, const hr_ring_options *opts)
{
	hr_node nodes[NODES];
	hr_ring *ring = NULL;
	hr_error err = { 0 };
	size_t n = strlen(states);

	for (size_t i = 0; i < n; i++)
		nodes[i] = (hr_node){ .id = ids[i], .addr = addrs[i], .weight = 1,
				      .state = states[i] == 'w' ? HR_STATE_WARMING :
					       states[i] == 'd' ? HR_STATE_DRAINING :
								  HR_STATE_ACTIVE };
	ck_assert_msg(hr_ring_build(nodes, n, opts, 7, &ring, &err) == 0, "%s", err.message);
	return ring;
}

static hr_ring *ring_of(const char *states)
{
	return ring_with(states, NULL);
}

static size_t key_of(int i, char *out)
{
	return (size_t)sprintf(out, "key:%d", i);
}

static int addr_node(const hr_node *n)
{
	return node_of(n->addr);
}

/* Writes keys [0, KEYS) at their read owners in `ring`. */
static void fill(store *s, const hr_ring *ring)
{
	for (int i = 0; i < KEYS; i++) {
		char key[32], value[64];
		size_t len = key_of(i, key);
		int vlen = sprintf(value, "value of %d", i);
		hr_lookup lk;

		ck_assert_int_eq(hr_ring_lookup(ring, key, len, &lk, NULL), 0);
		put(s, addr_node(lk.read_node), key, len, value, (size_t)vlen, (uint32_t)i * 7,
		    i % 2 ? 3600 : -1);
	}
}

/* The keys whose write owner differs from their read owner; with
 * `dest`, only those going there. */
static int moving_keys(const hr_ring *ring, const char *dest)
{
	int n = 0;

	for (int i = 0; i < KEYS; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		n += lk.node != lk.read_node && (!dest || !strcmp(lk.node->id, dest));
	}
	return n;
}

/* Every key at its write owner, as it was written. */
static void check_copied(store *s, const hr_ring *ring)
{
	for (int i = 0; i < KEYS; i++) {
		char key[32], value[64];
		size_t len = key_of(i, key);
		int vlen = sprintf(value, "value of %d", i);
		hr_lookup lk;
		item *it;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		it = find(s, addr_node(lk.node), key, len);
		ck_assert_msg(it, "%s: not at its write owner %s", key, lk.node->id);
		ck_assert(it->vlen == (size_t)vlen && !memcmp(it->value, value, it->vlen));
		ck_assert_uint_eq(it->flags, (uint32_t)i * 7);
		ck_assert_int_eq(it->ttl, i % 2 ? 3600 : -1);
	}
}

static store *store_new(void)
{
	store *s = calloc(1, sizeof *s);

	ck_assert_ptr_nonnull(s);
	return s;
}

static hr_rebalancer *rebalancer_of(store *s, hr_rebalance_config *cfg)
{
	hr_rebalance_backend b;
	hr_error err = { 0 };
	hr_rebalance_config quiet;

	backend_of(s, &b);
	if (!cfg) {
		hr_rebalance_config_init(&quiet);
		quiet.log_level = HR_LOG_WARN;
		cfg = &quiet;
	}
	ck_assert_msg(hr_rebalancer_new(&b, cfg, &s->rb, &err) == 0, "%s", err.message);
	return s->rb;
}

static hr_rebalance_progress progress_of(hr_rebalancer *rb)
{
	hr_rebalance_progress p;

	ck_assert_int_eq(hr_rebalancer_progress(rb, &p, NULL), 0);
	return p;
}

/* ---- the copy ------------------------------------------------------------------- */

/* A node joins warming: every key whose write owner is the new node is
 * copied there from its read owner, with its flags and TTL; nothing else
 * moves; a rerun finds everything present. */
START_TEST(join_copies_the_moving_keys)
{
	batched = _i; /* 1: the batch forms */
	store *s = store_new();
	hr_ring *ring = ring_of("aaaw");
	hr_rebalancer *rb = rebalancer_of(s, NULL);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	int moving = moving_keys(ring, "d");

	fill(s, ring);
	ck_assert_int_eq(count_on(s, 3), 0);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_int_eq(p.step, HR_REBALANCE_STEP_DONE);
	ck_assert_int_eq(p.error, 0);
	ck_assert_uint_eq(p.revision, 7);
	ck_assert_uint_eq(p.scanned, KEYS);
	ck_assert_uint_eq(p.moving, (uint64_t)moving);
	ck_assert_uint_eq(p.copied, (uint64_t)moving);
	ck_assert_uint_eq(p.present + p.gone + p.taken_back, 0);
	ck_assert_uint_eq(p.nodes_total, 3);
	ck_assert_uint_eq(p.nodes_done, 3);
	ck_assert_msg(p.moving > 0.85 * p.expected && p.moving < 1.15 * p.expected,
		      "%" PRIu64 " moved, %.0f expected", p.moving, p.expected);
	ck_assert_uint_gt(p.bytes, 0);
	ck_assert_int_eq(count_on(s, 3), moving);
	check_copied(s, ring);
	/* In batches of at most 64 keys: 3 sources, a fetch and a look a batch. */
	if (batched)
		ck_assert_int_ge(s->batches, 2 * (moving + 63) / 64);
	else
		ck_assert_int_eq(s->batches, 0);

	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_uint_eq(p.copied, 0);
	ck_assert_uint_eq(p.present, (uint64_t)moving);
	ck_assert_int_eq(count_on(s, 3), moving);

	hr_rebalancer_free(rb);
	ck_assert_int_eq(s->closes, 1);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* A node drains: all its keys go to their next owners, whichever they are. */
START_TEST(drain_empties_the_node)
{
	batched = _i; /* 1: the batch forms */
	store *s = store_new();
	hr_ring *ring = ring_of("aada");
	hr_rebalancer *rb = rebalancer_of(s, NULL);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	int on_drained;

	fill(s, ring);
	on_drained = count_on(s, 2);
	ck_assert_int_gt(on_drained, 0);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, "c", &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_uint_eq(p.scanned, (uint64_t)on_drained);
	ck_assert_uint_eq(p.copied, (uint64_t)on_drained);
	ck_assert_uint_eq(p.nodes_total, 1);
	/* Every key of the draining node moves, as the diff says. */
	ck_assert_uint_eq((uint64_t)(p.expected + 0.5), (uint64_t)on_drained);
	check_copied(s, ring);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* A Maglev ring with a table size of its own: the ring the handoff leads
 * to is built with that size too, so the arcs that move, and the keys the
 * copy expects from them, are those of the ring's own two views (with the
 * default size, most of the table would seem to move). */
START_TEST(maglev_size_kept_in_the_promoted_ring)
{
	hr_ring_options opts = { .size = sizeof opts, .placement = HR_PLACEMENT_MAGLEV,
				 .maglev_size = 1009 };
	store *s = store_new();
	hr_ring *ring = ring_with("aada", &opts);
	hr_rebalancer *rb = rebalancer_of(s, NULL);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	int moving = moving_keys(ring, NULL);

	fill(s, ring);
	ck_assert_int_gt(moving, 0);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_uint_eq(p.moving, (uint64_t)moving);
	ck_assert_uint_eq(p.copied, (uint64_t)moving);
	ck_assert_msg(p.expected > 0.85 * moving && p.expected < 1.15 * moving,
		      "%d keys move, %.0f expected", moving, p.expected);
	check_copied(s, ring);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* Two nodes join: --id copies only the keys of the one named. */
START_TEST(one_node_only)
{
	batched = _i; /* 1: the batch forms */
	store *s = store_new();
	hr_ring *ring = ring_of("aaaww");
	hr_rebalancer *rb = rebalancer_of(s, NULL);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	int to_d = moving_keys(ring, "d"), to_e = moving_keys(ring, "e");

	fill(s, ring);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, "e", &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_uint_eq(p.copied, (uint64_t)to_e);
	ck_assert_int_eq(count_on(s, 3), 0);
	ck_assert_int_eq(count_on(s, 4), to_e);
	ck_assert_msg(p.moving > 0.85 * p.expected && p.moving < 1.15 * p.expected,
		      "%" PRIu64 " moved, %.0f expected", p.moving, p.expected);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, "d", &err) == 0, "%s", err.message);
	ck_assert_int_eq(count_on(s, 3), to_d);
	check_copied(s, ring);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* What clients did meanwhile wins: a key written at the new owner stays
 * (present), a key gone from the source is not copied (gone), a key
 * deleted at the source while it was copied is taken back, unless a
 * client rewrote it at the destination since (the CAS differs). */
START_TEST(clients_win_the_races)
{
	batched = _i; /* 1: the batch forms */
	store *s = store_new();
	hr_ring *ring = ring_of("aaaw");
	hr_rebalancer *rb = rebalancer_of(s, NULL);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	static char pre[KEYS];
	int moving = moving_keys(ring, "d"), written = 0, rewritten = 0, taken = 0;

	memset(pre, 0, sizeof pre);
	fill(s, ring);
	for (int i = 0; i < KEYS && written < 50; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		if (lk.node != lk.read_node) {
			put(s, 3, key, len, "client", 6, 1, 600);
			pre[i] = 1;
			written++;
		}
	}
	s->delete_before_fetch = 13;
	s->delete_before_add = 10;
	s->rewrite_after_add = 4;
	s->listing_doubles = 1;
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_uint_eq(p.scanned, 2 * KEYS); /* a listing that repeats keys */
	ck_assert_uint_eq(p.moving, (uint64_t)moving);
	ck_assert_uint_eq(p.present + p.copied + p.gone, (uint64_t)moving);
	/* The clients' keys, but those whose source went before the fetch. */
	ck_assert_msg(p.present <= 50 && p.present >= 40, "%" PRIu64 " present", p.present);
	ck_assert_uint_gt(p.gone, 0);
	ck_assert_uint_gt(p.taken_back, 0);
	/* Every key at the new owner is a client's or a copy of a live key. */
	for (int i = 0; i < KEYS; i++) {
		char key[32];
		size_t len = key_of(i, key);
		hr_lookup lk;
		item *dst, *src;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		if (lk.node == lk.read_node)
			continue;
		dst = find(s, 3, key, len);
		src = find(s, addr_node(lk.read_node), key, len);
		if (dst && dst->vlen == 6 && !memcmp(dst->value, "client", 6)) {
			rewritten += !src && !pre[i];
			continue;
		}
		ck_assert_msg(!dst || src, "%s: deleted at the source, copied anyway", key);
		taken += !dst && !src;
	}
	ck_assert_uint_ge((uint64_t)taken, p.taken_back);
	/* The rewritten keys kept the clients' values: the take-back's CAS
	 * no longer matched. */
	ck_assert_int_gt(rewritten, 0);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* After the promotion the old owners' copies are purged; a rerun of the
 * purge finds nothing. */
START_TEST(purge_removes_the_old_copies)
{
	store *s = store_new();
	hr_ring *ring = ring_of("aaaw"), *promoted = ring_of("aaaa");
	hr_rebalancer *rb = rebalancer_of(s, NULL);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	int moving = moving_keys(ring, "d");

	fill(s, ring);
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, NULL, &err), 0);
	ck_assert_msg(hr_rebalancer_purge(rb, promoted, &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_uint_eq(p.purge_scanned, KEYS + (uint64_t)moving);
	ck_assert_uint_eq(p.purge_stale, (uint64_t)moving);
	ck_assert_uint_eq(p.purged, (uint64_t)moving);
	ck_assert_uint_eq(p.purge_changed, 0);
	ck_assert_uint_eq(p.nodes_total, 4);
	ck_assert_int_eq(count_on(s, 0) + count_on(s, 1) + count_on(s, 2) + count_on(s, 3), KEYS);
	check_copied(s, promoted);
	ck_assert_int_eq(hr_rebalancer_purge(rb, promoted, &err), 0);
	ck_assert_uint_eq(progress_of(rb).purged, 0);
	hr_rebalancer_free(rb);
	hr_ring_release(promoted);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* ---- stopping and failing --------------------------------------------------------- */

START_TEST(cancel_stops_the_copy)
{
	store *s = store_new();
	hr_ring *ring = ring_of("aaw");
	hr_rebalancer *rb = rebalancer_of(s, NULL);
	hr_rebalance_progress p;
	hr_error err = { 0 };

	fill(s, ring);
	s->cancel_after_adds = 100;
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, NULL, &err), HR_ECLOSED);
	ck_assert_msg(strstr(err.message, "rebalance cancelled after ") &&
		      strstr(err.message, " keys from "), "%s", err.message);
	hrt_assert_clean_message(err.message);
	p = progress_of(rb);
	ck_assert_int_eq(p.step, HR_REBALANCE_STEP_FAILED);
	ck_assert_int_eq(p.error, HR_ECLOSED);
	/* The add that saw the cancel still stored; nothing after it. */
	ck_assert_uint_eq(p.copied, 101);
	ck_assert_int_eq(s->adds, 101);
	/* Cancelled for good: the next step fails at once. */
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, NULL, &err), HR_ECLOSED);
	ck_assert_str_eq(err.message, "rebalance cancelled before the copy");
	ck_assert_int_eq(s->adds, 101);
	hr_rebalancer_free(rb);

	/* A new rebalancer finishes the copy: the keys copied are present. */
	rb = rebalancer_of(s, NULL);
	s->cancel_after_adds = 0;
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, NULL, &err), 0);
	ck_assert_uint_eq(progress_of(rb).present, 101);
	check_copied(s, ring);
	hr_rebalancer_cancel(NULL);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

START_TEST(backend_errors_end_the_step)
{
	store *s = store_new();
	hr_ring *ring = ring_of("aaw");
	hr_rebalancer *rb = rebalancer_of(s, NULL);
	hr_error err = { 0 };

	fill(s, ring);
	s->fail_add_at = 10;
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, NULL, &err), HR_EIO);
	/* The destination's failure, named by its role and id. */
	ck_assert_str_eq(err.message, "destination c: fake n2: out of memory");
	ck_assert_int_eq(progress_of(rb).error, HR_EIO);
	ck_assert_uint_eq(progress_of(rb).copied, 9);
	ck_assert_int_eq(s->adds, 10);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* Bad input: a clear HR_EINVAL (or HR_ENOTFOUND) naming it, never a crash. */
START_TEST(bad_input)
{
	store *s = store_new();
	hr_ring *ring = ring_of("aaw");
	hr_rebalance_backend b;
	hr_rebalance_config cfg;
	hr_rebalance_progress p;
	hr_rebalancer *rb = (hr_rebalancer *)&b;
	hr_error err = { 0 };

	backend_of(s, &b);
	ck_assert_int_eq(hr_rebalancer_new(NULL, NULL, &rb, &err), HR_EINVAL);
	ck_assert_ptr_null(rb);
	ck_assert_str_eq(err.message, "hr_rebalance_backend must not be NULL");
	ck_assert_int_eq(hr_rebalancer_new(&b, NULL, NULL, &err), HR_EINVAL);
	b.size = 0;
	ck_assert_int_eq(hr_rebalancer_new(&b, NULL, &rb, &err), HR_EINVAL);
	ck_assert_str_eq(err.message,
			 "hr_rebalance_backend: size is 0: set it up with hr_rebalance_backend_init()");
	backend_of(s, &b);
	b.fetch = NULL;
	ck_assert_int_eq(hr_rebalancer_new(&b, NULL, &rb, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_rebalance_backend: fetch is NULL (required)");
	backend_of(s, &b);
	b.enumerate = NULL;
	ck_assert_int_eq(hr_rebalancer_new(&b, NULL, &rb, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_rebalance_backend: enumerate is NULL (required)");
	backend_of(s, &b);
	b.add = NULL;
	ck_assert_int_eq(hr_rebalancer_new(&b, NULL, &rb, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_rebalance_backend: add is NULL (required)");
	backend_of(s, &b);
	b.name = "";
	ck_assert_int_eq(hr_rebalancer_new(&b, NULL, &rb, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_rebalance_backend: name must hold 1..64 bytes");
	backend_of(s, &b);
	/* A struct of a later release whose extra field is set. */
	{
		struct { hr_rebalance_backend b; uint64_t later; } big = { b, 1 };

		big.b.size = sizeof big;
		ck_assert_int_eq(hr_rebalancer_new(&big.b, NULL, &rb, &err), HR_EINVAL);
		ck_assert_ptr_nonnull(strstr(err.message, "a field of a later release"));
	}

	hr_rebalance_config_init(&cfg);
	cfg.keys_per_s = -1;
	ck_assert_int_eq(hr_rebalancer_new(&b, &cfg, &rb, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_rebalance_config: keys_per_s must be a finite number >= 0");
	hr_rebalance_config_init(&cfg);
	cfg.bytes_per_s = 1.0 / 0.0;
	ck_assert_int_eq(hr_rebalancer_new(&b, &cfg, &rb, &err), HR_EINVAL);
	hr_rebalance_config_init(&cfg);
	cfg.flags = 0x8;
	ck_assert_int_eq(hr_rebalancer_new(&b, &cfg, &rb, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_rebalance_config: unknown flags 0x8");
	hr_rebalance_config_init(&cfg);
	cfg.ack_prefix = "";
	ck_assert_int_eq(hr_rebalancer_new(&b, &cfg, &rb, &err), HR_EINVAL);
	hr_rebalance_config_init(&cfg);
	cfg.wait_timeout_ms = -1;
	ck_assert_int_eq(hr_rebalancer_new(&b, &cfg, &rb, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_rebalance_config: wait_timeout_ms must be >= 0");
	cfg = (hr_rebalance_config){ 0 };
	ck_assert_int_eq(hr_rebalancer_new(&b, &cfg, &rb, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "size is 0"));
	ck_assert_int_eq(s->closes, 0); /* the caller still owns the backend */

	rb = rebalancer_of(s, NULL);
	ck_assert_int_eq(hr_rebalancer_copy(NULL, ring, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr_rebalancer_copy(rb, NULL, NULL, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_rebalancer_copy: ring is NULL");
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, "zz", &err), HR_ENOTFOUND);
	ck_assert_str_eq(err.message, "node zz is not in the ring (revision 7)");
	ck_assert_int_eq(progress_of(rb).error, HR_ENOTFOUND);
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, "a", &err), HR_EINVAL);
	ck_assert_str_eq(err.message,
			 "node a is active, not warming or draining: nothing to hand off");
	ck_assert_int_eq(hr_rebalancer_purge(rb, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr_rebalancer_run(rb, NULL, NULL, NULL, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_rebalancer_run: client is NULL");
	ck_assert_int_eq(hr_rebalancer_progress(NULL, &p, NULL), HR_EINVAL);
	/* Below the size of the first 1.1 struct, which ended at `promoted`. */
	ck_assert_int_eq(hr_rebalancer_progress_size(rb, &p, offsetof(hr_rebalance_progress,
								       promoted), NULL),
			 HR_EINVAL);
	ck_assert_int_eq(hr_rebalancer_progress_size(rb, NULL, sizeof p, NULL), HR_EINVAL);
	ck_assert_int_eq(s->enumerates, 0);
	hr_rebalancer_free(rb);

	/* Without remove: no take-back, no purge. */
	backend_of(s, &b);
	b.remove = NULL;
	ck_assert_int_eq(hr_rebalancer_new(&b, NULL, &rb, &err), 0);
	ck_assert_int_eq(hr_rebalancer_purge(rb, ring, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_rebalancer_purge: the backend has no remove");
	hr_rebalancer_free(rb);

	ck_assert_ptr_null(hr_rebalance_step_name((hr_rebalance_step)99));
	ck_assert_str_eq(hr_rebalance_step_name(HR_REBALANCE_STEP_COPY), "copy");
	ck_assert_int_eq(hr_rebalance_memcached(0, NULL, &err), HR_EINVAL);
	b = (hr_rebalance_backend){ 0 };
	ck_assert_int_eq(hr_rebalance_memcached(0, &b, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "hr_rebalance_backend_init()"));
	hr_rebalance_backend_init(&b);
	ck_assert_int_eq(hr_rebalance_memcached(-1, &b, &err), HR_EINVAL);
	ck_assert_int_eq(hr_rebalance_memcached(100, &b, &err), 0);
	ck_assert(b.enumerate && b.fetch && b.add && b.remove && b.close);
	ck_assert_uint_eq(b.enumerate_passes, 8);
	ck_assert(!b.fetch_batch && !b.add_batch);
	b.close(b.userdata);

	/* The Redis backend's settings (no connection is made here). */
	{
		hr_rebalance_redis_config rc;

		b = (hr_rebalance_backend){ 0 };
		ck_assert_int_eq(hr_rebalance_redis(NULL, &b, &err), HR_EINVAL);
		hr_rebalance_backend_init(&b);
		rc = (hr_rebalance_redis_config){ 0 };
		ck_assert_int_eq(hr_rebalance_redis(&rc, &b, &err), HR_EINVAL);
		ck_assert_ptr_nonnull(strstr(err.message, "hr_rebalance_redis_config_init()"));
		hr_rebalance_redis_config_init(&rc);
		ck_assert_int_eq(rc.timeout_ms, 2000);
		ck_assert_uint_eq(rc.scan_count, 1000);
		rc.db = -1;
		ck_assert_int_eq(hr_rebalance_redis(&rc, &b, &err), HR_EINVAL);
		ck_assert_str_eq(err.message, "hr_rebalance_redis_config: db must be >= 0");
		rc.db = 0;
		rc.user = "u";
		ck_assert_int_eq(hr_rebalance_redis(&rc, &b, &err), HR_EINVAL);
		ck_assert_str_eq(err.message, "hr_rebalance_redis_config: a user needs a password");
		rc.password = "p";
		rc.scan_count = 0;
		ck_assert_int_eq(hr_rebalance_redis(&rc, &b, &err), HR_EINVAL);
		rc.scan_count = 10;
		ck_assert_int_eq(hr_rebalance_redis(&rc, &b, &err), 0);
		ck_assert(b.enumerate && b.fetch && b.add && b.remove && b.close);
		ck_assert(b.fetch_batch && b.add_batch);
		ck_assert_uint_eq(b.enumerate_passes, 1);
		ck_assert_str_eq(b.name, "redis");
		b.close(b.userdata);
		/* One batch form without the other. */
		backend_of(s, &b);
		b.fetch_batch = fake_fetch_batch;
		b.add_batch = NULL;
		ck_assert_int_eq(hr_rebalancer_new(&b, NULL, &rb, &err), HR_EINVAL);
		ck_assert_str_eq(err.message, "hr_rebalance_backend: fetch_batch and add_batch go"
					      " together (add_batch is NULL)");
	}
	hr_rebalancer_free(NULL);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* ---- the figures, from another thread ---------------------------------------------- */

typedef struct watcher {
	hr_rebalancer *rb;
	atomic_int stop;
	int reads, went_back;
	uint64_t max_copied;
	int saw_copy, saw_rate;
	/* The node worked on and how far along its keys, which must only
	 * grow while it is the same node (a progress bar per source). */
	char node[HR_ID_MAX + 1];
	uint64_t node_done;
	int node_went_back, node_over, saw_node_keys;
} watcher;

static void *watch_progress(void *arg)
{
	watcher *w = arg;

	while (!atomic_load(&w->stop)) {
		hr_rebalance_progress p;

		ck_assert_int_eq(hr_rebalancer_progress(w->rb, &p, NULL), 0);
		w->reads++;
		if (p.copied < w->max_copied && p.step == HR_REBALANCE_STEP_COPY)
			w->went_back++;
		if (p.copied > w->max_copied)
			w->max_copied = p.copied;
		w->saw_copy |= p.step == HR_REBALANCE_STEP_COPY;
		w->saw_rate |= p.keys_per_s > 0;
		if (strcmp(p.node, w->node))
			snprintf(w->node, sizeof w->node, "%s", p.node);
		else if (p.node_keys_done < w->node_done)
			w->node_went_back++;
		w->node_done = p.node_keys_done;
		w->node_over += p.node_keys_done > p.node_keys;
		w->saw_node_keys |= p.node_keys > 0;
	}
	return NULL;
}

/* Figures read while the copy runs at a cap (long enough to be seen)
 * only grow, and so does the progress through the keys of each source
 * (node_keys_done of node_keys), which a bar shows; the cap's tokens are
 * the rebalancer's. */
START_TEST(progress_from_another_thread)
{
	store *s = store_new();
	hr_ring *ring = ring_of("aaw");
	hr_rebalance_config cfg;
	hr_rebalancer *rb;
	watcher w = { 0 };
	pthread_t t;
	hr_error err = { 0 };
	int moving = moving_keys(ring, NULL);

	hr_rebalance_config_init(&cfg);
	cfg.log_level = HR_LOG_WARN;
	/* About 1.2 s for the copy: long enough for a rate to be measured. */
	cfg.keys_per_s = moving / 1.2;
	rb = rebalancer_of(s, &cfg);
	fill(s, ring);
	w.rb = rb;
	ck_assert_int_eq(pthread_create(&t, NULL, watch_progress, &w), 0);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	atomic_store(&w.stop, 1);
	pthread_join(t, NULL);
	ck_assert_int_gt(w.reads, 10);
	ck_assert_int_eq(w.went_back, 0);
	ck_assert(w.saw_copy);
	ck_assert(w.saw_rate);
	ck_assert(w.saw_node_keys);
	ck_assert_int_eq(w.node_went_back, 0);
	ck_assert_int_eq(w.node_over, 0);
	ck_assert_uint_eq(progress_of(rb).copied, (uint64_t)moving);
	ck_assert(progress_of(rb).elapsed_s > 0);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* ---- log lines and metrics ---------------------------------------------------------- */

typedef struct capture {
	char text[1 << 16];
	size_t len;
} capture;

static void capture_line(void *userdata, hr_log_level level, const char *line)
{
	capture *c = userdata;
	size_t n = strlen(line);

	(void)level;
	if (c->len + n + 1 < sizeof c->text) {
		memcpy(c->text + c->len, line, n);
		c->text[c->len + n] = '\n';
		c->len += n + 1;
	}
}

/* A default configuration whose log lines go, from now on, into `cap`. */
static void config_capturing(hr_rebalance_config *cfg, capture *cap)
{
	cap->len = 0;
	hr_rebalance_config_init(cfg);
	cfg->log = capture_line;
	cfg->log_userdata = cap;
}

/* The lines of `event`, decoded; *n of them. */
static const cJSON *find_event(const cJSON *all, const char *event, int nth)
{
	const cJSON *line;

	cJSON_ArrayForEach(line, all) {
		const char *e = hrt_logfmt_get(line, "event");

		if (e && !strcmp(e, event) && nth-- == 0)
			return line;
	}
	return NULL;
}

static uint64_t field_u64(const cJSON *line, const char *key)
{
	const char *v = hrt_logfmt_get(line, key);

	ck_assert_msg(v != NULL, "no %s", key);
	return strtoull(v, NULL, 10);
}

/* ---- listings that miss keys ----------------------------------------------------- */

/* A listing that misses keys in its first passes (memcached's LRU walk
 * under reads) is repeated until a pass adds no moving key: three passes
 * that each list a third, and a fourth that finds nothing new. */
START_TEST(a_listing_is_repeated_until_it_settles)
{
	static capture cap;
	store *s = store_new();
	hr_ring *ring = ring_of("aaaw");
	hr_rebalance_config cfg;
	hr_rebalancer *rb;
	hr_rebalance_progress p;
	hr_error err = { 0 };
	int moving = moving_keys(ring, "d");
	cJSON *all;
	const cJSON *l;

	config_capturing(&cfg, &cap);
	s->drop_passes = 3;
	s->passes = 8;
	rb = rebalancer_of(s, &cfg);
	fill(s, ring);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_uint_eq(p.moving, (uint64_t)moving);
	ck_assert_uint_eq(p.copied, (uint64_t)moving);
	check_copied(s, ring);
	ck_assert_int_eq(s->enumerates, 3 * 4); /* 3 sources, 4 passes each */
	all = hrt_logfmt_decode(cap.text, cap.len);
	ck_assert_ptr_nonnull(all);
	ck_assert_ptr_null(find_event(all, "rebalance_scan_unsettled", 0));
	l = find_event(all, "rebalance_copied", 0);
	ck_assert_ptr_nonnull(l);
	ck_assert_uint_eq(field_u64(l, "passes"), 4);
	cJSON_Delete(all);

	/* A listing that misses nothing takes two passes: the second checks. */
	s->drop_passes = 0;
	s->enumerates = 0;
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	ck_assert_int_eq(s->enumerates, 3 * 2);
	ck_assert_uint_eq(progress_of(rb).present, (uint64_t)moving);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* At the bound, the scan stops, says so, and copies what it found. */
START_TEST(an_unsettled_listing_is_logged)
{
	static capture cap;
	store *s = store_new();
	hr_ring *ring = ring_of("aaaw");
	hr_rebalance_config cfg;
	hr_rebalancer *rb;
	hr_rebalance_progress p;
	hr_error err = { 0 };
	int moving = moving_keys(ring, "d");
	cJSON *all;
	const cJSON *l;

	config_capturing(&cfg, &cap);
	s->drop_passes = 5;
	s->passes = 3;
	rb = rebalancer_of(s, &cfg);
	fill(s, ring);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_uint_lt(p.moving, (uint64_t)moving);
	ck_assert_uint_gt(p.moving, (uint64_t)moving / 2);
	ck_assert_uint_eq(p.copied, p.moving);
	ck_assert_int_eq(s->enumerates, 3 * 3);
	all = hrt_logfmt_decode(cap.text, cap.len);
	ck_assert_ptr_nonnull(all);
	l = find_event(all, "rebalance_scan_unsettled", 0);
	ck_assert_ptr_nonnull(l);
	ck_assert_str_eq(hrt_logfmt_get(l, "level"), "warn");
	ck_assert_uint_eq(field_u64(l, "passes"), 3);
	ck_assert_uint_gt(field_u64(l, "last_added"), 0);
	ck_assert_ptr_nonnull(find_event(all, "rebalance_scan_unsettled", 2));
	cJSON_Delete(all);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* A backend that says its listing is complete is listed once, by the
 * copy and by the purge. */
START_TEST(a_complete_listing_is_listed_once)
{
	store *s = store_new();
	hr_ring *ring = ring_of("aaaw");
	hr_rebalancer *rb;
	hr_error err = { 0 };
	int moving = moving_keys(ring, "d");

	s->listing_complete = 1;
	s->passes = 8;
	rb = rebalancer_of(s, NULL);
	fill(s, ring);
	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(progress_of(rb).copied, (uint64_t)moving);
	check_copied(s, ring);
	ck_assert_int_eq(s->enumerates, 3);
	ck_assert_msg(hr_rebalancer_purge(rb, ring, &err) == 0, "%s", err.message);
	ck_assert_int_eq(s->enumerates, 3 + 4);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

START_TEST(log_lines_say_each_step)
{
	static capture cap;
	store *s = store_new();
	hr_ring *ring = ring_of("aaw");
	hr_rebalance_config cfg;
	hr_rebalance_progress p;
	hr_rebalancer *rb;
	hr_error err = { 0 };
	const cJSON *l;
	cJSON *all;
	uint64_t copied = 0;

	config_capturing(&cfg, &cap);
	cfg.progress_interval_ms = 100;
	cfg.keys_per_s = 3000; /* about half a second: a few progress lines */
	rb = rebalancer_of(s, &cfg);
	fill(s, ring);
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, NULL, &err), 0);
	p = progress_of(rb);
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, "c", &err), 0); /* all present */
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, "zz", &err), HR_ENOTFOUND);

	all = hrt_logfmt_decode(cap.text, cap.len);
	ck_assert_ptr_nonnull(all);
	ck_assert_int_ge(cJSON_GetArraySize(all), 6);
	cJSON_ArrayForEach(l, all)
		ck_assert_msg(!cJSON_IsObject(l), "a line the logfmt parser refuses");

	l = find_event(all, "rebalance_start", 0);
	ck_assert_ptr_nonnull(l);
	ck_assert_str_eq(hrt_logfmt_get(l, "step"), "copy");
	ck_assert_str_eq(hrt_logfmt_get(l, "node"), "all");
	ck_assert_uint_eq(field_u64(l, "revision"), 7);
	ck_assert_str_eq(hrt_logfmt_get(l, "keys_cap"), "3000");
	ck_assert_str_eq(hrt_logfmt_get(l, "level"), "info");

	l = find_event(all, "rebalance_progress", 0);
	ck_assert_msg(l != NULL, "no progress line");
	ck_assert_ptr_nonnull(hrt_logfmt_get(l, "keys_per_s"));
	ck_assert_ptr_nonnull(hrt_logfmt_get(l, "eta_s"));
	ck_assert_ptr_nonnull(hrt_logfmt_get(l, "node"));

	for (int i = 0; (l = find_event(all, "rebalance_copied", i)); i++) {
		ck_assert_ptr_nonnull(hrt_logfmt_get(l, "node"));
		copied += field_u64(l, "copied");
	}
	ck_assert_uint_eq(copied, p.copied);

	l = find_event(all, "rebalance_done", 0);
	ck_assert_ptr_nonnull(l);
	ck_assert_uint_eq(field_u64(l, "copied"), p.copied);
	ck_assert_uint_eq(field_u64(l, "scanned"), p.scanned);
	ck_assert_uint_eq(field_u64(l, "moving"), p.moving);
	ck_assert_uint_eq(field_u64(l, "revision"), 7);
	l = find_event(all, "rebalance_done", 1);
	ck_assert_uint_eq(field_u64(l, "present"), p.copied);

	l = find_event(all, "rebalance_failed", 0);
	ck_assert_ptr_nonnull(l);
	ck_assert_str_eq(hrt_logfmt_get(l, "level"), "error");
	ck_assert_str_eq(hrt_logfmt_get(l, "code"), "-14");
	ck_assert_str_eq(hrt_logfmt_get(l, "error"), "not found");
	ck_assert_str_eq(hrt_logfmt_get(l, "node"), "zz");
	ck_assert_str_eq(hrt_logfmt_get(l, "msg"), "node zz is not in the ring (revision 7)");
	cJSON_Delete(all);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

typedef struct text {
	char buf[1 << 16];
	size_t len;
} text;

static int text_write(void *userdata, const char *data, size_t len)
{
	text *t = userdata;

	ck_assert(t->len + len < sizeof t->buf);
	memcpy(t->buf + t->len, data, len);
	t->len += len;
	t->buf[t->len] = '\0';
	return 0;
}

START_TEST(metrics_count_per_node)
{
	static text t;
	store *s = store_new();
	hr_ring *ring = ring_of("aaw");
	hr_rebalancer *rb = rebalancer_of(s, NULL);
	hr_rebalance_progress p;
	hr_error err = { 0 };
	hr_metrics_label bad = { "result", "x" };
	hr_metrics_options opts = { .size = sizeof opts, .labels = &bad, .label_count = 1 };
	char want[256];
	uint64_t a = 0, b = 0;

	fill(s, ring);
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, NULL, &err), 0);
	p = progress_of(rb);
	t.len = 0;
	ck_assert_int_eq(hr_rebalancer_metrics_write(rb, text_write, &t, NULL, &err), 0);
	ck_assert_ptr_nonnull(strstr(t.buf, "# TYPE hashring_rebalance_keys_total counter\n"));
	ck_assert_ptr_nonnull(strstr(t.buf, "hashring_rebalance_step{step=\"done\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t.buf, "hashring_rebalance_step{step=\"copy\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(t.buf, "hashring_rebalance_runs_total{result=\"ok\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t.buf, "hashring_rebalance_eta_seconds -1\n"));
	{
		const char *x = strstr(t.buf, "hashring_rebalance_keys_total{node=\"a\",result=\"copied\"} ");
		const char *y = strstr(t.buf, "hashring_rebalance_keys_total{node=\"b\",result=\"copied\"} ");

		ck_assert(x && y);
		a = strtoull(strchr(x, '}') + 2, NULL, 10);
		b = strtoull(strchr(y, '}') + 2, NULL, 10);
	}
	ck_assert_uint_eq(a + b, p.copied);
	snprintf(want, sizeof want, "hashring_rebalance_bytes_total{node=\"a\"} ");
	ck_assert_ptr_nonnull(strstr(t.buf, want));
	/* Counters over the rebalancer's life: a rerun adds to them. */
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, NULL, &err), 0);
	t.len = 0;
	ck_assert_int_eq(hr_rebalancer_metrics_write(rb, text_write, &t, NULL, &err), 0);
	snprintf(want, sizeof want,
		 "hashring_rebalance_keys_total{node=\"a\",result=\"present\"} %" PRIu64 "\n", a);
	ck_assert_ptr_nonnull(strstr(t.buf, want));
	ck_assert_ptr_nonnull(strstr(t.buf, "hashring_rebalance_runs_total{result=\"ok\"} 2\n"));

	ck_assert_int_eq(hr_rebalancer_metrics_write(rb, text_write, &t, &opts, &err), HR_EINVAL);
	ck_assert_int_eq(hr_rebalancer_metrics_write(NULL, text_write, &t, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr_rebalancer_metrics_write(rb, NULL, &t, NULL, &err), HR_EINVAL);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* ---- keys that cannot be moved, failures that name their node -------------------- */

#define ODD 600

/* Key i of the keys a text protocol cannot carry: a blank and a control
 * byte. */
static size_t odd_key(int i, char *out)
{
	return (size_t)sprintf(out, "odd key\x01%d", i);
}

/* The index of an odd key, or -1 for another. */
static int odd_index(const char *key)
{
	return strncmp(key, "odd key\x01", 8) ? -1 : atoi(key + 8);
}

/* The sum of every series of an exposition that ends in `series_end`. */
static uint64_t metric_sum(const char *exposition, const char *series_end)
{
	uint64_t sum = 0;

	for (const char *at = exposition; (at = strstr(at, series_end));
	     at += strlen(series_end))
		sum += strtoull(at + strlen(series_end), NULL, 10);
	return sum;
}

/* Keys the backend cannot move (HR_ELIMIT, as memcached's text protocol
 * for a long key with a blank) are skipped: counted, each named once with
 * its bytes escaped in an event=rebalance_skipped line (the first 100 of a
 * step, then one line saying that more are only counted), and the copy
 * goes on with every other key.  The purge skips them too. */
START_TEST(unmovable_keys_are_skipped)
{
	batched = _i; /* 1: the batch forms */
	static capture cap;
	static text t;
	static char named[ODD];
	store *s = store_new();
	hr_ring *ring = ring_of("aaaw"), *promoted = ring_of("aaaa");
	hr_rebalance_config cfg;
	hr_rebalancer *rb;
	hr_rebalance_progress p;
	hr_error err = { 0 };
	uint64_t moving = (uint64_t)moving_keys(ring, "d"), odd_moving = 0, copied_lines = 0;
	int lines = 0;
	const cJSON *l;
	cJSON *all;

	memset(named, 0, sizeof named);
	config_capturing(&cfg, &cap);
	s->refuse_blank = 1;
	rb = rebalancer_of(s, &cfg);
	fill(s, ring);
	for (int i = 0; i < ODD; i++) {
		char key[32];
		size_t len = odd_key(i, key);
		hr_lookup lk;

		ck_assert_int_eq(hr_ring_lookup(ring, key, len, &lk, NULL), 0);
		put(s, addr_node(lk.read_node), key, len, "odd", 3, 0, -1);
		odd_moving += lk.node != lk.read_node;
	}
	ck_assert_uint_gt(odd_moving, 100);

	ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_int_eq(p.step, HR_REBALANCE_STEP_DONE);
	ck_assert_uint_eq(p.moving, moving + odd_moving);
	ck_assert_uint_eq(p.skipped, odd_moving);
	ck_assert_uint_eq(p.copied, moving);
	ck_assert_uint_eq(p.nodes_done, 3);
	check_copied(s, ring);
	ck_assert_int_eq(count_on(s, 3), (int)moving);

	all = hrt_logfmt_decode(cap.text, cap.len);
	ck_assert_ptr_nonnull(all);
	for (int i = 0; (l = find_event(all, "rebalance_skipped", i)); i++) {
		const char *key = hrt_logfmt_get(l, "key");
		int k = key ? odd_index(key) : -1;
		char want[32];
		hr_lookup lk;

		ck_assert_msg(k >= 0 && k < ODD, "not an odd key: %s", key ? key : "(none)");
		ck_assert_msg(!named[k]++, "key %d named twice", k);
		ck_assert_str_eq(key, (odd_key(k, want), want));
		hr_ring_lookup(ring, want, strlen(want), &lk, NULL);
		ck_assert_str_eq(hrt_logfmt_get(l, "node"), lk.read_node->id);
		ck_assert_str_eq(hrt_logfmt_get(l, "addr"), lk.read_node->addr);
		ck_assert_str_eq(hrt_logfmt_get(l, "dest"), "d");
		ck_assert_str_eq(hrt_logfmt_get(l, "backend"), "fake");
		ck_assert_str_eq(hrt_logfmt_get(l, "level"), "warn");
		ck_assert_ptr_nonnull(strstr(hrt_logfmt_get(l, "msg"), ": cannot carry that key"));
		lines++;
	}
	ck_assert_int_eq(lines, 100);
	ck_assert_ptr_nonnull(find_event(all, "rebalance_skipped_more", 0));
	ck_assert_ptr_null(find_event(all, "rebalance_skipped_more", 1));
	for (int i = 0; (l = find_event(all, "rebalance_copied", i)); i++)
		copied_lines += field_u64(l, "skipped");
	ck_assert_uint_eq(copied_lines, odd_moving);
	l = find_event(all, "rebalance_done", 0);
	ck_assert_ptr_nonnull(l);
	ck_assert_uint_eq(field_u64(l, "skipped"), odd_moving);
	ck_assert_str_eq(hrt_logfmt_get(l, "level"), "warn");
	cJSON_Delete(all);

	t.len = 0;
	ck_assert_int_eq(hr_rebalancer_metrics_write(rb, text_write, &t, NULL, &err), 0);
	ck_assert_uint_eq(metric_sum(t.buf, ",result=\"skipped\"} "), odd_moving);

	/* The purge: the copies' old owners lose them, the skipped keys stay. */
	ck_assert_msg(hr_rebalancer_purge(rb, promoted, &err) == 0, "%s", err.message);
	p = progress_of(rb);
	ck_assert_uint_eq(p.purged, moving);
	ck_assert_uint_eq(p.skipped, odd_moving);
	for (int i = 0; i < ODD; i++) {
		char key[32];
		size_t len = odd_key(i, key);
		hr_lookup lk;

		hr_ring_lookup(ring, key, len, &lk, NULL);
		ck_assert_ptr_nonnull(find(s, addr_node(lk.read_node), key, len));
	}
	hr_rebalancer_free(rb);
	hr_ring_release(promoted);
	hr_ring_release(ring);
	free(s);
}
END_TEST

/* A backend's failure names the node it came from: its role and id lead
 * the message, and event=rebalance_failed gives that node, its address,
 * its role, the backend and the source being copied, so that a
 * destination that fails is not blamed on the source. */
START_TEST(failures_name_the_node)
{
	static capture cap;
	store *s = store_new();
	hr_ring *ring = ring_of("aaw");
	hr_rebalance_config cfg;
	hr_rebalancer *rb;
	hr_error err = { 0 };
	const cJSON *l;
	cJSON *all;

	config_capturing(&cfg, &cap);
	s->fail_add_at = 10;
	s->fail_add_code = HR_ECONNECT;
	rb = rebalancer_of(s, &cfg);
	fill(s, ring);
	ck_assert_int_eq(hr_rebalancer_copy(rb, ring, NULL, &err), HR_ECONNECT);
	ck_assert_str_eq(err.message, "destination c: fake n2: out of memory");
	all = hrt_logfmt_decode(cap.text, cap.len);
	ck_assert_ptr_nonnull(all);
	l = find_event(all, "rebalance_failed", 0);
	ck_assert_ptr_nonnull(l);
	ck_assert_str_eq(hrt_logfmt_get(l, "node"), "c");
	ck_assert_str_eq(hrt_logfmt_get(l, "addr"), "n2");
	ck_assert_str_eq(hrt_logfmt_get(l, "role"), "destination");
	ck_assert_str_eq(hrt_logfmt_get(l, "backend"), "fake");
	ck_assert_str_eq(hrt_logfmt_get(l, "source"), progress_of(rb).node);
	ck_assert_str_ne(hrt_logfmt_get(l, "source"), "c");
	ck_assert_str_eq(hrt_logfmt_get(l, "code"), "-8");
	/* Not etcd's: the code is any connection's. */
	ck_assert_str_eq(hrt_logfmt_get(l, "error"), "cannot connect");
	ck_assert_str_eq(hr_strerror(HR_ECONNECT), "cannot connect");
	cJSON_Delete(all);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rebalance");
	TCase *tc = tcase_create("rebalance");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, join_copies_the_moving_keys, 0, 2);
	tcase_add_loop_test(tc, drain_empties_the_node, 0, 2);
	tcase_add_test(tc, maglev_size_kept_in_the_promoted_ring);
	tcase_add_loop_test(tc, one_node_only, 0, 2);
	tcase_add_loop_test(tc, clients_win_the_races, 0, 2);
	tcase_add_test(tc, purge_removes_the_old_copies);
	tcase_add_test(tc, cancel_stops_the_copy);
	tcase_add_test(tc, backend_errors_end_the_step);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, progress_from_another_thread);
	tcase_add_test(tc, log_lines_say_each_step);
	tcase_add_test(tc, a_listing_is_repeated_until_it_settles);
	tcase_add_test(tc, an_unsettled_listing_is_logged);
	tcase_add_test(tc, a_complete_listing_is_listed_once);
	tcase_add_test(tc, metrics_count_per_node);
	tcase_add_loop_test(tc, unmovable_keys_are_skipped, 0, 2);
	tcase_add_test(tc, failures_name_the_node);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
