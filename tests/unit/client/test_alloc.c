/* SPDX-License-Identifier: MIT */
/* test_alloc.c - the lookup path never allocates: malloc and friends are
 * interposed with counters for the calling thread, and many lookups after
 * a warm-up must count zero, lookup counting included.  A check that the counters do count keeps the
 * test from passing vacuously.  The same interposition makes one chosen
 * allocation fail, for the builds' out-of-memory paths. */
#define _GNU_SOURCE
#include "client.h"
#include "owner.h"
#include "ring.h"
#include "ring_build.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALLS 200000

/* glibc's own entry points, which the interposed functions forward to. */
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void __libc_free(void *p);

/* Counted on the calling thread only: the client's watcher thread
 * allocates as it likes. */
static __thread int counting;
static __thread unsigned long allocs;
/* While counting, the allocation that fails (1 for the first; 0: none),
 * and the allocations asked for so far (frees are calls, not these). */
static __thread unsigned long fail_at, attempts;

/* Counts an allocation; whether it is the one that fails (errno set as
 * malloc sets it: glibc's thread creation checks it). */
static int failing(void)
{
	attempts += counting;
	if (!counting || !fail_at || attempts != fail_at)
		return 0;
	errno = ENOMEM;
	return 1;
}

/* While counting, the blocks still allocated and the bytes asked for them:
 * what a call leaves behind (a ring's own memory, hr__ring_bytes()). */
#define LIVE_MAX 256
static __thread struct { void *p; size_t size; } live[LIVE_MAX];
static __thread size_t nlive, live_bytes;
static __thread int live_overflow;

static void *live_add(void *p, size_t size)
{
	if (!counting || !p)
		return p;
	if (nlive == LIVE_MAX) {
		live_overflow = 1;
		return p;
	}
	live[nlive].p = p;
	live[nlive++].size = size;
	live_bytes += size;
	return p;
}

static void live_del(void *p)
{
	for (size_t i = 0; counting && p && i < nlive; i++) {
		if (live[i].p == p) {
			live_bytes -= live[i].size;
			live[i] = live[--nlive];
			return;
		}
	}
}

void *malloc(size_t size)
{
	allocs += counting;
	return failing() ? NULL : live_add(__libc_malloc(size), size);
}

void *calloc(size_t n, size_t size)
{
	allocs += counting;
	return failing() ? NULL : live_add(__libc_calloc(n, size), n * size);
}

void *realloc(void *p, size_t size)
{
	void *q;

	allocs += counting;
	if (failing())
		return NULL;
	q = __libc_realloc(p, size);
	if (q || !size)
		live_del(p);
	return live_add(q, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	allocs += counting;
	return failing() ? NULL : live_add(__libc_memalign(align, size), size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	allocs += counting;
	p = failing() ? NULL : __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = live_add(p, size);
	return 0;
}

void free(void *p)
{
	allocs += counting;
	live_del(p);
	__libc_free(p);
}

static void count_start(void)
{
	allocs = attempts = 0;
	nlive = live_bytes = 0;
	live_overflow = 0;
	counting = 1;
}

static unsigned long count_stop(void)
{
	counting = 0;
	fail_at = 0;
	return allocs;
}

/* 40 nodes, some warming and some draining, so the two views differ and
 * both are searched. */
static hr_ring *make_ring(void)
{
	hrt_nodes *s = hrt_nodes_new(40, "node-%02zu", "127.0.0.%zu:11211", 0);
	hr_ring *ring;

	for (size_t i = 0; i < 40; i++) {
		snprintf(s->zones[i], sizeof s->zones[i], "z%zu", i % 3);
		s->nodes[i].zone = s->zones[i];
		s->nodes[i].weight = 1.0 + (double)(i % 2);
		s->nodes[i].state = i % 7 == 0 ? HR_STATE_WARMING :
				    i % 7 == 1 ? HR_STATE_DRAINING : HR_STATE_ACTIVE;
	}
	ring = hrt_ring_build(s->nodes, 40, NULL, 5);
	hrt_nodes_free(s);
	return ring;
}

static void key_of(unsigned long i, char *key, size_t *len)
{
	*len = (size_t)snprintf(key, 32, "key:%lu", i * 2654435761u);
}

/* A client whose ring is published by the test through the client's own
 * publisher. */
static hr_client *open_client(hr_ring *ring)
{
	hr_client *c = hrt_offline_client("/alloc/");

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	return c;
}

/* The write counts of every node of `c`: its lookups, as counted. */
static unsigned long lookups_counted(hr_client *c)
{
	hr_node_lookups counts[64];
	unsigned long sum = 0;
	size_t total;
	int n = hr_client_lookup_counts(c, counts, 64, &total, NULL);

	ck_assert_int_eq(n, 40);
	ck_assert_uint_eq(total, 40);
	for (int i = 0; i < n; i++)
		sum += counts[i].write;
	return sum;
}

START_TEST(counters_count)
{
	/* Through volatile pointers: the compiler may assume a direct malloc
	 * call touches no counter of ours. */
	void *(*volatile m)(size_t) = malloc;
	void *(*volatile r)(void *, size_t) = realloc;
	void *(*volatile c)(size_t, size_t) = calloc;
	void (*volatile f)(void *) = free;
	void *p;
	unsigned long n;

	count_start();
	p = m(24);
	p = r(p, 4000);
	f(p);
	p = c(3, 8);
	f(p);
	n = count_stop();
	ck_assert_uint_eq(n, 5);
}
END_TEST

START_TEST(ring_lookups_do_not_allocate)
{
	hr_ring *ring = make_ring();
	const hr_node *pl[8];
	hr_lookup l;
	hr_owner o;
	char key[32];
	size_t len;
	unsigned long n, found = 0;

	count_start();
	for (unsigned long i = 0; i < CALLS; i++) {
		key_of(i, key, &len);
		found += hr_ring_lookup(ring, key, len, &l, NULL) == 0;
		found += hr_ring_preflist(ring, key, len, (hr_view)(i & 1), pl,
					  1 + i % 8, NULL) > 0;
		found += hr__ring_lookup_owner(ring, key, len, &o, NULL) == 0;
	}
	n = count_stop();
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(found, 3 * CALLS);
	hr_ring_release(ring);
}
END_TEST

START_TEST(client_lookups_do_not_allocate)
{
	hr_ring *ring = make_ring();
	hr_client *c = open_client(ring);
	hr_owner o;
	hr_replica reps[3];
	hr_lookup l;
	char key[32];
	size_t len;
	unsigned long n, bad = 0;

	/* Warm-up: liburcu-bp registers a thread on its first read section;
	 * the thread starts its counts on the ring. */
	ck_assert_int_eq(hr_client_lookup(c, "warm", 4, &o, NULL), 0);
	/* No ck_assert inside: a passing Check assertion records a mark
	 * point, and that allocates. */
	count_start();
	for (unsigned long i = 0; i < CALLS; i++) {
		key_of(i, key, &len);
		bad += hr_client_lookup(c, key, len, &o, NULL) != 0;
		bad += hr_client_replicas(c, key, len, HR_VIEW_WRITE, reps, 3,
					  NULL, NULL) != 3;
		/* The copies say what the ring says. */
		bad += hr_ring_lookup(ring, key, len, &l, NULL) != 0;
		bad += strcmp(o.node, l.node->id) != 0;
		bad += strcmp(o.addr, l.node->addr) != 0;
		bad += strcmp(o.read_node, l.read_node->id) != 0;
		bad += strcmp(o.read_addr, l.read_node->addr) != 0;
		bad += o.revision != 5;
	}
	n = count_stop();
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(bad, 0);
	/* And they were counted. */
	ck_assert_uint_eq(lookups_counted(c), CALLS + 1);
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

START_TEST(batch_lookups_do_not_allocate)
{
	enum { BATCH = 100 };
	hr_ring *ring = make_ring();
	hr_client *c = open_client(ring);
	char keys[BATCH][32];
	const void *ptrs[BATCH];
	size_t lens[BATCH];
	hr_batch_owner raw[BATCH], api[BATCH];
	hr_epoch ep;
	hr_error err;
	unsigned long n, bad = 0;

	for (int k = 0; k < BATCH; k++)
		ptrs[k] = keys[k];
	ck_assert_int_eq(hr_client_lookup_batch(c, ptrs, lens, 0, NULL, &ep, &err), 0);
	count_start();
	for (unsigned long i = 0; i < CALLS / BATCH; i++) {
		for (int k = 0; k < BATCH; k++)
			key_of(i * BATCH + (unsigned long)k, keys[k], &lens[k]);
		bad += hr_ring_lookup_batch(ring, ptrs, lens, BATCH, raw, &err) != 0;
		bad += hr_client_lookup_batch(c, ptrs, lens, BATCH, api, &ep, &err) != 0;
		bad += memcmp(raw, api, sizeof raw) != 0;
		bad += ep.revision != 5;
	}
	n = count_stop();
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(bad, 0);
	ck_assert_uint_eq(lookups_counted(c), CALLS);
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

/* Sampled lookups, and a hot key's spread reads, with the hot keys
 * re-chosen by the lookups themselves (every 1024 samples of a thread)
 * during the count. */
START_TEST(sampled_and_spread_lookups_do_not_allocate)
{
	hr_ring *ring = make_ring();
	hr_client_config cfg;
	hr_client *c;
	hr_hot_key hot[2];
	hr_owner o;
	hr_lookup l;
	char key[32];
	size_t len;
	unsigned long n, bad = 0, moved = 0;

	hr_client_config_init(&cfg);
	cfg.hot_key_sample = 16;
	cfg.hot_key_spread = 0.05;
	c = hrt_offline_client_with("/alloc/", &cfg);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	for (unsigned long i = 0; i < 20000; i++) {
		key_of(i % 10 ? i : 0, key, &len);
		ck_assert_int_eq(hr_client_lookup(c, key, len, &o, NULL), 0);
	}
	ck_assert_int_ge(hr_client_hot_keys(c, hot, 2, NULL), 1);
	ck_assert_int_eq(hot[0].spread, 1);
	count_start();
	for (unsigned long i = 0; i < CALLS; i++) {
		key_of(i % 10 ? i : 0, key, &len);
		bad += hr_client_lookup(c, key, len, &o, NULL) != 0;
		bad += hr_ring_lookup(ring, key, len, &l, NULL) != 0;
		bad += strcmp(o.node, l.node->id) != 0;
		moved += strcmp(o.read_node, l.read_node->id) != 0;
	}
	n = count_stop();
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(bad, 0);
	/* The hot key's reads went elsewhere two times in three. */
	ck_assert_uint_gt(moved, CALLS / 10 / 2);
	ck_assert_uint_lt(moved, CALLS / 10);
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

/* hr__ring_bytes() is exactly what a build leaves allocated, for every
 * placement, with one shared view and with two. */
START_TEST(ring_bytes_are_what_a_build_keeps)
{
	static const hr_placement placements[] = { HR_PLACEMENT_XXH3, HR_PLACEMENT_KETAMA,
						   HR_PLACEMENT_MAGLEV, HR_PLACEMENT_RENDEZVOUS,
						   HR_PLACEMENT_TOKENS };

	for (size_t p = 0; p < sizeof placements / sizeof placements[0]; p++) {
		for (int states = 0; states < 2; states++) {
			hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 37,
						 .placement = placements[p] };
			hrt_nodes *s = hrt_nodes_new(12, "node-%zu", "127.0.0.%zu:11211", 0);
			hr_ring *ring;
			size_t kept;

			for (size_t i = 0; states && i < 12; i++)
				s->nodes[i].state = i == 3 ? HR_STATE_WARMING :
						    i == 5 ? HR_STATE_DRAINING : HR_STATE_ACTIVE;
			/* Tokens for all but node 7, which keeps the native
			 * points. */
			uint64_t tok[12][3];

			for (size_t i = 0; i < 12; i++) {
				for (size_t k = 0; k < 3; k++)
					tok[i][k] = 0x9e3779b97f4a7c15ull * (3 * i + k + 1);
				if (placements[p] == HR_PLACEMENT_TOKENS) {
					s->nodes[i].tokens = tok[i];
					s->nodes[i].ntokens = i == 7 ? 0 : 3;
				}
			}
			count_start();
			ring = hrt_ring_build(s->nodes, 12, &opts, 0);
			kept = live_bytes;
			count_stop();
			ck_assert(!live_overflow);
			ck_assert_uint_gt(kept, 0);
			ck_assert_msg(hr__ring_bytes(ring) == kept,
				      "placement %d, states %d: hr__ring_bytes %zu, allocated %zu",
				      (int)placements[p], states, hr__ring_bytes(ring), kept);
			hr_ring_release(ring);
			hrt_nodes_free(s);
		}
	}
	ck_assert_uint_eq(hr__ring_bytes(NULL), 0);
}
END_TEST

/* Runs build(arg) with each of its allocations failing in turn, then none:
 * each failure is HR_ENOMEM with no ring and nothing left allocated, or a
 * ring all the same (a block that only shrinks may stay as it was).
 * Returns how many allocations the build makes. */
static unsigned long fail_each(int (*build)(void *arg, hr_ring **out), void *arg)
{
	for (unsigned long k = 1;; k++) {
		hr_ring *ring = NULL;
		unsigned long made;
		size_t left;
		int rc, overflow;

		count_start();
		fail_at = k;
		rc = build(arg, &ring);
		made = attempts;
		left = nlive;
		overflow = live_overflow;
		count_stop();
		if (rc == HR_OK) {
			hr_ring_release(ring);
			if (made < k)	/* none failed */
				return made;
			continue;
		}
		ck_assert_msg(rc == HR_ENOMEM, "allocation %lu failing: %d", k, rc);
		ck_assert_ptr_null(ring);
		ck_assert_msg(left == 0 && !overflow, "allocation %lu failing: %zu blocks left",
			      k, left);
	}
}

struct paged_case {
	hrt_nodes *s;
	size_t n;
	hr_ring_options opts;
	hr_ring *prev;
};

static int paged_build(void *arg, hr_ring **out)
{
	struct paged_case *c = arg;

	return hr__ring_build_layout(c->s->nodes, c->n, &c->opts, 1, hr_hash_key,
				     HR__LAYOUT_PAGED, out, NULL);
}

static int paged_derive(void *arg, hr_ring **out)
{
	struct paged_case *c = arg;

	return hr__ring_derive(c->prev, c->s->nodes, c->n, &c->opts, 2, out, NULL);
}

/* Paged rings (pages.h) built and derived with every allocation
 * failing in turn: out of memory is an error, never a crash or a leak,
 * and the previous ring stays whole. */
START_TEST(paged_rings_out_of_memory)
{
	struct paged_case c = { .n = 30, .opts = { .size = sizeof c.opts, .vnodes_per_weight = 20 } };
	unsigned long made;

	c.s = hrt_nodes_new(31, "node-%02zu", "127.0.0.%zu:11211", 0);
	/* A zone each: the zone table grows twice. */
	hrt_nodes_zones(c.s, 40);
	for (size_t i = 0; i < 31; i++)
		c.s->nodes[i].state = i % 5 == 1 ? HR_STATE_WARMING :
				      i % 5 == 2 ? HR_STATE_DRAINING : HR_STATE_ACTIVE;
	made = fail_each(paged_build, &c);
	ck_assert_uint_gt(made, 5);
	ck_assert_int_eq(paged_build(&c, &c.prev), HR_OK);
	ck_assert(hr__ring_paged(c.prev));
	/* A node joins, one grows, one leaves the read view. */
	c.n = 31;
	c.s->nodes[4].weight = 2;
	c.s->nodes[6].state = HR_STATE_WARMING;
	made = fail_each(paged_derive, &c);
	ck_assert_uint_gt(made, 5);
	{
		hr_ring *d;

		ck_assert_int_eq(paged_derive(&c, &d), HR_OK);
		ck_assert(hr__ring_derived(d) && hr__ring_paged(d));
		hr_ring_release(d);
	}
	hr_ring_release(c.prev);
	hrt_nodes_free(c.s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("alloc");
	TCase *tc = tcase_create("lookup path");

	tcase_add_test(tc, counters_count);
	tcase_add_test(tc, ring_lookups_do_not_allocate);
	tcase_add_test(tc, client_lookups_do_not_allocate);
	tcase_add_test(tc, batch_lookups_do_not_allocate);
	tcase_add_test(tc, sampled_and_spread_lookups_do_not_allocate);
	tcase_add_test(tc, ring_bytes_are_what_a_build_keeps);
	tcase_add_test(tc, paged_rings_out_of_memory);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
