/* SPDX-License-Identifier: MIT */
/* test_publish.c - RCU publication under stress: one writer swaps rings as
 * fast as it can while reader threads look up through read sections, held
 * references and the per-thread cache, and every answer must come from one
 * whole ring (never a mix, never freed memory: run it under ASan and TSan).
 * Then the reclamation of rings that followers held, and the publication
 * of one ring to several clients' publishers (subscribers.h). */
#include "nodeset.h"
#include "publish.h"
#include "ring.h"
#include "ring_build.h"
#include "ring_impl.h"
#include "subscribers.h"
#include "thread_cache.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define READERS 3
#define SWAPS 3000

/* Ring `gen`: any answer tells which ring it came from. */
static hr_ring *make_ring(unsigned gen)
{
	return hrt_ring_generation("g", gen, 16);
}

struct shared {
	hr__publisher pub;
	int done;
	unsigned long reads[READERS];
	unsigned long mismatches;
};

struct reader_arg {
	struct shared *s;
	int index;
};

static int from_generation(const hr_node *n, uint64_t gen)
{
	char want[32];

	snprintf(want, sizeof want, "g%llu-", (unsigned long long)gen);
	return n && strncmp(n->id, want, strlen(want)) == 0;
}

/* One checked read of `ring` (revision `gen`). */
static unsigned long check_read(const hr_ring *ring, unsigned long i)
{
	uint64_t gen = hr_ring_revision(ring);
	unsigned long bad = 0;
	char key[32];
	hr_lookup l;

	snprintf(key, sizeof key, "key-%lu", i);
	if (hr_ring_lookup(ring, key, strlen(key), &l, NULL) != 0 ||
	    !from_generation(l.node, gen) || !from_generation(l.read_node, gen) ||
	    l.revision != gen)
		bad++;
	for (size_t n = 0; n < hr_ring_node_count(ring); n++)
		if (!from_generation(hr_ring_node(ring, n), gen))
			bad++;
	return bad;
}

/* Reads in turn through a read section, a held reference of its own and
 * the thread cache. */
static void *reader(void *p)
{
	struct reader_arg *a = p;
	struct shared *s = a->s;
	unsigned long reads = 0, bad = 0;
	uint64_t last_gen = 0, gen;
	hr_ring *held = NULL;

	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		const hr_ring *ring;

		switch (reads % 3) {
		case 0:
			ring = hr__publish_read_begin(&s->pub);
			bad += check_read(ring, reads);
			gen = hr_ring_revision(ring);
			hr__publish_read_end(&s->pub);
			break;
		case 1:
			ring = hr__publish_follow(&s->pub, &held);
			bad += check_read(ring, reads);
			gen = hr_ring_revision(ring);
			break;
		default:
			ring = hr__thread_cache_ring(&s->pub);
			if (!ring) {
				bad++;
				continue;
			}
			bad += check_read(ring, reads);
			gen = hr_ring_revision(ring);
			break;
		}
		/* Rings only move forward for a reader, whichever way it
		 * reads. */
		if (gen < last_gen)
			bad++;
		last_gen = gen;

		if (reads % 64 == 0) {
			/* The long-hold path: a counted reference outlives
			 * the swaps that happen meanwhile. */
			hr_ring *hold = hr__publish_acquire(&s->pub);
			uint64_t g = hr_ring_revision(hold);
			struct timespec ts = { 0, 20000 };
			nanosleep(&ts, NULL);
			if (!from_generation(hr_ring_node(hold, 0), g))
				bad++;
			hr_ring_release(hold);
		}
		reads++;
	}
	hr_ring_release(held);
	s->reads[a->index] = reads;
	__atomic_fetch_add(&s->mismatches, bad, __ATOMIC_RELAXED);
	/* The thread cache's reference goes as the thread exits. */
	return NULL;
}

START_TEST(swap_under_readers)
{
	struct shared s;
	struct reader_arg args[READERS];
	pthread_t th[READERS];
	unsigned long total = 0;

	memset(&s, 0, sizeof s);
	hr__publish_init(&s.pub, make_ring(1));
	for (int i = 0; i < READERS; i++) {
		args[i] = (struct reader_arg){ &s, i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader, &args[i]), 0);
	}
	for (unsigned gen = 2; gen < SWAPS + 2; gen++)
		hr__publish_swap(&s.pub, make_ring(gen));
	__atomic_store_n(&s.done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++) {
		pthread_join(th[i], NULL);
		total += s.reads[i];
		ck_assert_uint_gt(s.reads[i], 0);
	}
	ck_assert_uint_eq(s.mismatches, 0);
	ck_assert_uint_eq(hr_ring_revision(hr__publish_read_begin(&s.pub)), SWAPS + 1);
	hr__publish_read_end(&s.pub);
	/* Every reader let go of its rings (the thread cache's at exit), so
	 * nothing is left to reclaim. */
	hr__publish_reclaim(&s.pub);
	ck_assert_uint_eq(s.pub.nretired, 0);
	hr__publish_destroy(&s.pub);
	fprintf(stderr, "publish stress: %d swaps, %lu checked reads\n", SWAPS, total);
}
END_TEST

START_TEST(acquire_outlives_destroy)
{
	hr__publisher pub;
	hr_ring *held;

	hr__publish_init(&pub, make_ring(7));
	held = hr__publish_acquire(&pub);
	hr__publish_swap(&pub, make_ring(8));
	hr__publish_destroy(&pub);
	/* The counted reference is still good after its ring was replaced
	 * and the publisher destroyed. */
	ck_assert_uint_eq(hr_ring_revision(held), 7);
	ck_assert_str_eq(hr_ring_node(held, 0)->id, "g7-a");
	hr_ring_release(held);
}
END_TEST

START_TEST(nested_sections)
{
	hr__publisher pub;
	const hr_ring *outer, *inner;

	hr__publish_init(&pub, make_ring(3));
	outer = hr__publish_read_begin(&pub);
	inner = hr__publish_read_begin(&pub);
	ck_assert_ptr_eq(outer, inner);
	hr__publish_read_end(&pub);
	hr__publish_read_end(&pub);
	hr__publish_destroy(&pub);
}
END_TEST

START_TEST(retired_until_followers_move)
{
	hr__publisher pub;
	hr_ring *held = NULL;

	hr__publish_init(&pub, make_ring(1));
	ck_assert_uint_eq(hr_ring_revision(hr__publish_follow(&pub, &held)), 1);
	/* Held by a follower: retired, not freed. */
	hr__publish_swap(&pub, make_ring(2));
	ck_assert_uint_eq(pub.nretired, 1);
	hr__publish_reclaim(&pub);
	ck_assert_uint_eq(pub.nretired, 1);
	ck_assert_uint_eq(hr_ring_revision(held), 1);
	/* The follower moves on; the next reclaim frees ring 1. */
	ck_assert_uint_eq(hr_ring_revision(hr__publish_follow(&pub, &held)), 2);
	ck_assert_ptr_eq(hr__publish_follow(&pub, &held), held);
	hr__publish_reclaim(&pub);
	ck_assert_uint_eq(pub.nretired, 0);
	/* Ring 3 replaces ring 2 (held) then ring 4 replaces ring 3, which
	 * nobody holds: freed at once, ring 2 stays retired. */
	hr__publish_swap(&pub, make_ring(3));
	hr__publish_swap(&pub, make_ring(4));
	ck_assert_uint_eq(pub.nretired, 1);
	hr_ring_release(held);
	hr__publish_swap(&pub, make_ring(5));
	ck_assert_uint_eq(pub.nretired, 0);
	/* Destroy hands retired rings to their last holder. */
	held = NULL;
	hr__publish_follow(&pub, &held);
	hr__publish_swap(&pub, make_ring(6));
	ck_assert_uint_eq(pub.nretired, 1);
	hr__publish_destroy(&pub);
	ck_assert_uint_eq(hr_ring_revision(held), 5);
	hr_ring_release(held);
}
END_TEST

struct idle_arg {
	hr__publisher *pub;
	pthread_barrier_t looked, swapped;
	uint64_t seen;
};

static void *look_then_idle(void *p)
{
	struct idle_arg *a = p;
	const hr_ring *ring = hr__thread_cache_ring(a->pub);

	a->seen = ring ? hr_ring_revision(ring) : 0;
	pthread_barrier_wait(&a->looked);
	pthread_barrier_wait(&a->swapped);
	return NULL;
}

START_TEST(thread_cache_released_at_exit)
{
	hr__publisher pub;
	struct idle_arg a;
	pthread_t th;

	memset(&a, 0, sizeof a);
	a.pub = &pub;
	hr__publish_init(&pub, make_ring(1));
	pthread_barrier_init(&a.looked, NULL, 2);
	pthread_barrier_init(&a.swapped, NULL, 2);
	ck_assert_int_eq(pthread_create(&th, NULL, look_then_idle, &a), 0);
	pthread_barrier_wait(&a.looked);
	ck_assert_uint_eq(a.seen, 1);
	/* The idle thread still holds ring 1. */
	hr__publish_swap(&pub, make_ring(2));
	hr__publish_reclaim(&pub);
	ck_assert_uint_eq(pub.nretired, 1);
	pthread_barrier_wait(&a.swapped);
	pthread_join(th, NULL);
	/* Its exit released it. */
	hr__publish_reclaim(&pub);
	ck_assert_uint_eq(pub.nretired, 0);
	pthread_barrier_destroy(&a.looked);
	pthread_barrier_destroy(&a.swapped);
	hr__publish_destroy(&pub);
}
END_TEST

/* More publishers than the cache has ways, on one thread: every answer
 * comes from the right publisher, evicted ways let their rings go, and
 * forgetting a publisher drops this thread's reference. */
START_TEST(thread_cache_ways)
{
	enum { PUBS = HR__THREAD_CACHE_WAYS + 2 };
	hr__publisher pubs[PUBS];
	unsigned long bad = 0;

	for (unsigned i = 0; i < PUBS; i++)
		hr__publish_init(&pubs[i], make_ring(100 * (i + 1)));
	for (unsigned round = 0; round < 50; round++) {
		for (unsigned i = 0; i < PUBS; i++) {
			/* A pattern that both hits and evicts. */
			unsigned k = round % 2 ? i : (i * 5) % PUBS;
			const hr_ring *ring = hr__thread_cache_ring(&pubs[k]);

			bad += !ring || hr_ring_revision(ring) / 100 != k + 1;
		}
		if (round % 10 == 9)
			for (unsigned i = 0; i < PUBS; i++)
				hr__publish_swap(&pubs[i],
						 make_ring(100 * (i + 1) + round));
	}
	ck_assert_uint_eq(bad, 0);
	for (unsigned i = 0; i < PUBS; i++) {
		int cached = 0;

		hr__thread_cache_forget(&pubs[i]);
		for (int w = 0; w < HR__THREAD_CACHE_WAYS; w++)
			cached += hr__thread_cache_tls.way[w].pub == &pubs[i];
		ck_assert_int_eq(cached, 0);
		hr__publish_reclaim(&pubs[i]);
		ck_assert_uint_eq(pubs[i].nretired, 0);
		hr__publish_destroy(&pubs[i]);
	}
}
END_TEST

/* ---- one watcher's rings to several clients ------------------------------ */

/* Quiet: the event=ring lines are info. */
static const hr__log quiet_log = { NULL, NULL, HR_LOG_ERROR };

struct client_pub {
	hr__publisher pub;
	hr__subscriber sub;
	unsigned changes;
	uint64_t last_old, last_new;
	bool pending;
};

static void count_change(void *ud, const hr_ring *old_ring, const hr_ring *new_ring)
{
	struct client_pub *c = ud;

	c->changes++;
	c->last_old = hr_ring_revision(old_ring);
	c->last_new = hr_ring_revision(new_ring);
}

static void subscribe(hr__subscribers *s, struct client_pub *c)
{
	memset(c, 0, sizeof *c);
	c->sub.pub = &c->pub;
	c->sub.listener.on_change = count_change;
	c->sub.listener.on_change_userdata = c;
	ck_assert_int_eq(hr__subs_add(s, &c->sub, &c->pending), 0);
}

/* What the watcher does for each ring. */
static void publish_to_all(hr__subscribers *s, unsigned gen)
{
	ck_assert_int_eq(hr__subs_prepare(s, make_ring(gen)), 0);
	hr__subs_announce(s, hr__subs_swap(s), 0.0);
}

struct sub_reader_arg {
	hr__publisher *pub;
	int *done;
	unsigned long reads, bad;
};

static void *sub_reader(void *p)
{
	struct sub_reader_arg *a = p;
	uint64_t last = 0;

	while (!__atomic_load_n(a->done, __ATOMIC_ACQUIRE)) {
		const hr_ring *ring = hr__thread_cache_ring(a->pub);
		uint64_t gen = ring ? hr_ring_revision(ring) : 0;

		a->bad += !ring || check_read(ring, a->reads) || gen < last;
		last = gen;
		__atomic_store_n(&a->reads, a->reads + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Readers of three clients while one writer publishes to all of them:
 * whole rings only, every client at the last ring, nothing left retired
 * once the readers are gone (ASan: nothing leaked either). */
START_TEST(subscribers_under_readers)
{
	enum { CLIENTS = 3, RINGS = 1000 };
	hr__subscribers s;
	struct client_pub c[CLIENTS];
	struct sub_reader_arg args[CLIENTS];
	pthread_t th[CLIENTS];
	int done = 0;

	hr__subs_init(&s, make_ring(1), &quiet_log);
	for (int i = 0; i < CLIENTS; i++) {
		subscribe(&s, &c[i]);
		args[i] = (struct sub_reader_arg){ &c[i].pub, &done, 0, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, sub_reader, &args[i]), 0);
	}
	/* Publishing starts once every reader has read: on two cores the
	 * writer can otherwise finish before a reader is first scheduled. */
	for (int i = 0; i < CLIENTS; i++)
		while (__atomic_load_n(&args[i].reads, __ATOMIC_ACQUIRE) == 0)
			sched_yield();
	for (unsigned gen = 2; gen < RINGS + 2; gen++) {
		publish_to_all(&s, gen);
		hr__subs_reclaim(&s);
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_uint_gt(args[i].reads, 0);
		ck_assert_uint_eq(args[i].bad, 0);
		ck_assert_uint_eq(c[i].changes, RINGS);
		ck_assert_uint_eq(c[i].last_new, RINGS + 1);
		ck_assert_uint_eq(hr_ring_revision(c[i].pub.current), RINGS + 1);
	}
	/* One ring, an object each: the same answers, another address. */
	ck_assert_ptr_ne(c[0].pub.current, c[1].pub.current);
	ck_assert_uint_eq(hr_ring_digest(c[0].pub.current), hr_ring_digest(c[1].pub.current));
	ck_assert_uint_eq(check_read(c[0].pub.current, 7), 0);
	hr__subs_reclaim(&s);
	for (int i = 0; i < CLIENTS; i++) {
		ck_assert_uint_eq(c[i].pub.nretired, 0);
		ck_assert_uint_eq(hr__subs_remove(&s, &c[i].sub), (size_t)(CLIENTS - 1 - i));
		hr__publish_destroy(&c[i].pub);
	}
	hr__subs_destroy(&s);
}
END_TEST

static bool retired_has(const hr__publisher *p, uint64_t revision)
{
	for (size_t i = 0; i < p->nretired; i++)
		if (hr_ring_revision(p->retired[i]) == revision)
			return true;
	return false;
}

/* A ring a client's follower holds is retired by that client's
 * publisher alone (the other clients' aliases go at once), and freed when
 * the follower moves on (with the ring under the aliases: ASan). */
START_TEST(subscribers_retire_each)
{
	hr__subscribers s;
	struct client_pub a, b;
	hr_ring *held = NULL;

	hr__subs_init(&s, make_ring(1), &quiet_log);
	subscribe(&s, &a);
	subscribe(&s, &b);
	publish_to_all(&s, 2);
	ck_assert_uint_eq(hr_ring_revision(hr__publish_follow(&a.pub, &held)), 2);
	publish_to_all(&s, 3);
	ck_assert_uint_eq(a.pub.nretired, 1);
	ck_assert_uint_eq(b.pub.nretired, 0);
	hr__subs_reclaim(&s);
	ck_assert_uint_eq(a.pub.nretired, 1);
	ck_assert_uint_eq(hr_ring_revision(held), 2);
	ck_assert_uint_eq(check_read(held, 3), 0);
	ck_assert_uint_eq(hr_ring_revision(hr__publish_follow(&a.pub, &held)), 3);
	hr__subs_reclaim(&s);
	ck_assert_uint_eq(a.pub.nretired, 0);
	/* A ring published into one client's publisher alone (as a test
	 * does) is retired there when the watcher's next ring replaces it,
	 * and freed there once its follower moves on. */
	hr__publish_swap(&b.pub, make_ring(50));
	hr_ring_release(held);
	held = NULL;
	ck_assert_uint_eq(hr_ring_revision(hr__publish_follow(&b.pub, &held)), 50);
	publish_to_all(&s, 4);
	ck_assert_uint_eq(hr_ring_revision(b.pub.current), 4);
	ck_assert(retired_has(&b.pub, 50));
	hr_ring_release(held);
	hr__subs_reclaim(&s);
	ck_assert(!retired_has(&b.pub, 50));
	hr__subs_remove(&s, &a.sub);
	hr__subs_remove(&s, &b.sub);
	hr__publish_destroy(&a.pub);
	hr__publish_destroy(&b.pub);
	hr__subs_destroy(&s);
}
END_TEST

/* A client that subscribes after the first ring starts with it, and its
 * callback hears of it once, from the empty ring, before the next; one
 * that left hears of nothing more. */
START_TEST(subscriber_joins_late)
{
	hr__subscribers s;
	struct client_pub a, b;

	hr__subs_init(&s, make_ring(0), &quiet_log);
	subscribe(&s, &a);
	ck_assert(!a.pending);
	publish_to_all(&s, 5);
	ck_assert_uint_eq(a.changes, 1);
	ck_assert_uint_eq(a.last_old, 0);
	subscribe(&s, &b);
	ck_assert(b.pending);
	ck_assert_uint_eq(hr_ring_revision(b.pub.current), 5);
	ck_assert_uint_eq(b.changes, 0);
	hr__subs_flush(&s);
	ck_assert_uint_eq(b.changes, 1);
	ck_assert_uint_eq(b.last_old, 0);
	ck_assert_uint_eq(b.last_new, 5);
	hr__subs_flush(&s);
	ck_assert_uint_eq(b.changes, 1);
	ck_assert_uint_eq(a.changes, 1);
	/* Pending at the next ring: told of both, in order. */
	hr__subs_remove(&s, &b.sub);
	hr__publish_destroy(&b.pub);
	subscribe(&s, &b);
	publish_to_all(&s, 6);
	ck_assert_uint_eq(b.changes, 2);
	ck_assert_uint_eq(b.last_old, 5);
	ck_assert_uint_eq(b.last_new, 6);
	ck_assert_uint_eq(hr__subs_remove(&s, &a.sub), 1);
	publish_to_all(&s, 7);
	ck_assert_uint_eq(a.changes, 2);
	ck_assert_uint_eq(b.changes, 3);
	ck_assert_uint_eq(hr_ring_revision(a.pub.current), 6);
	hr__subs_remove(&s, &b.sub);
	hr__publish_destroy(&a.pub);
	hr__publish_destroy(&b.pub);
	hr__subs_destroy(&s);
}
END_TEST

/* ---- paged rings released on other threads ------------------------------ */

struct paged_shared {
	pthread_mutex_t mu;
	hr_ring *current;
	int done;
	unsigned long reads, bad;
};

/* Takes the current ring, looks keys up in it and lets it go, often the
 * last to: its pages then die here, beside the writer's next derive. */
static void *paged_reader(void *arg)
{
	struct paged_shared *s = arg;
	unsigned long reads = 0, bad = 0;

	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		hr_ring *ring;

		pthread_mutex_lock(&s->mu);
		ring = hr_ring_retain(s->current);
		pthread_mutex_unlock(&s->mu);
		for (unsigned long i = 0; i < 50; i++) {
			char key[32];
			hr_lookup l;
			int len = snprintf(key, sizeof key, "key-%lu", reads + i);

			if (hr_ring_lookup(ring, key, (size_t)len, &l, NULL) != HR_OK ||
			    hr_ring_find(ring, l.node->id) != l.node)
				bad++;
		}
		reads += 50;
		hr_ring_release(ring);
	}
	pthread_mutex_lock(&s->mu);
	s->reads += reads;
	s->bad += bad;
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Paged rings (pages.h) share pages and recycle their regions across
 * rings; the last reference to a ring, and so to its pages, may go on any
 * thread while the next ring is derived. */
START_TEST(paged_rings_released_anywhere)
{
	struct paged_shared s = { .mu = PTHREAD_MUTEX_INITIALIZER };
	hrt_nodes *ns = hrt_nodes_new(60, "node-%02zu", "127.0.0.1:%zu", 20000);
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 40 };
	pthread_t th[READERS];

	for (size_t i = 0; i < 60; i++)
		ns->nodes[i].state = i % 7 == 3 ? HR_STATE_WARMING : HR_STATE_ACTIVE;
	ck_assert_int_eq(hr__ring_build_layout(ns->nodes, 60, &opts, 1, hr_hash_key,
					       HR__LAYOUT_PAGED, &s.current, NULL), HR_OK);
	ck_assert(hr__ring_paged(s.current));
	for (int i = 0; i < READERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, paged_reader, &s), 0);
	for (unsigned gen = 2; gen < 2000; gen++) {
		/* Node gen % 60 leaves, or comes back. */
		size_t gone = gen % 60, n = 0;
		hr_node nodes[60];
		hr_ring *next, *old;

		for (size_t i = 0; i < 60; i++)
			if (i != gone || gen % 120 >= 60)
				nodes[n++] = ns->nodes[i];
		ck_assert_int_eq(hr__ring_derive(s.current, nodes, n, &opts, gen, &next, NULL),
				 HR_OK);
		ck_assert(hr__ring_paged(next));
		pthread_mutex_lock(&s.mu);
		old = s.current;
		s.current = next;
		pthread_mutex_unlock(&s.mu);
		hr_ring_release(old);
	}
	__atomic_store_n(&s.done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_gt(s.reads, 0);
	ck_assert_uint_eq(s.bad, 0);
	hr_ring_release(s.current);
	hrt_nodes_free(ns);
}
END_TEST

/* A first sync's ring (ring_stream.c): one thread places the points while
 * the nodes are put, the build sorts them on two; the ring then goes to
 * readers on other threads and the next ring is derived from it. */
START_TEST(placed_ahead_rings)
{
	size_t n = 1400;	/* 280,000 points: paged */
	hrt_nodes *ns = hrt_nodes_new(n, "node-%05zu", "127.0.0.1:%zu", 20000);
	struct paged_shared s = { .mu = PTHREAD_MUTEX_INITIALIZER };
	hr__nodeset set = { 0 };
	hr_ring *empty, *plain, *next;
	pthread_t th[READERS];

	ck_assert_int_eq(hr_ring_build(NULL, 0, NULL, 0, &empty, NULL), HR_OK);
	set.stream = hr__ring_stream_open(empty, NULL, n);
	ck_assert_ptr_nonnull(set.stream);
	for (size_t i = 0; i < n; i++) {
		hr__record rec = ns->nodes[i];

		rec.id = strdup(rec.id);
		rec.addr = strdup(rec.addr);
		rec.zone = strdup(rec.zone ? rec.zone : "");
		ck_assert(rec.id && rec.addr && rec.zone);
		ck_assert_int_eq(hr__nodeset_put(&set, &rec, (int64_t)i + 1, (int64_t)i + 1),
				 HR_OK);
	}
	ck_assert_int_eq(hr__nodeset_derive(&set, empty, NULL, 2, NULL, NULL, &s.current, NULL),
			 HR_OK);
	ck_assert(s.current->placed_ahead);
	ck_assert_int_eq(hr_ring_build(ns->nodes, n, NULL, 2, &plain, NULL), HR_OK);
	ck_assert(!plain->placed_ahead);
	ck_assert_uint_eq(hr_ring_digest(s.current), hr_ring_digest(plain));
	for (int k = 0; k < 20000; k++) {
		char key[16];
		hr_lookup a, b;

		snprintf(key, sizeof key, "k%d", k);
		ck_assert_int_eq(hr_ring_lookup(s.current, key, strlen(key), &a, NULL), HR_OK);
		ck_assert_int_eq(hr_ring_lookup(plain, key, strlen(key), &b, NULL), HR_OK);
		ck_assert_str_eq(a.node->id, b.node->id);
	}
	for (int i = 0; i < READERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, paged_reader, &s), 0);
	/* The last node leaves. */
	ck_assert_int_eq(hr__ring_derive(s.current, ns->nodes, n - 1, NULL, 3, &next, NULL),
			 HR_OK);
	ck_assert(hr__ring_derived(next) && hr__ring_paged(next));
	pthread_mutex_lock(&s.mu);
	hr_ring_release(s.current);
	s.current = next;
	pthread_mutex_unlock(&s.mu);
	__atomic_store_n(&s.done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(s.bad, 0);
	hr_ring_release(s.current);
	hr_ring_release(plain);
	hr_ring_release(empty);
	hr__nodeset_clear(&set);
	hrt_nodes_free(ns);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("publish");
	TCase *tc = tcase_create("rcu");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, swap_under_readers);
	tcase_add_test(tc, acquire_outlives_destroy);
	tcase_add_test(tc, nested_sections);
	tcase_add_test(tc, retired_until_followers_move);
	tcase_add_test(tc, thread_cache_released_at_exit);
	tcase_add_test(tc, thread_cache_ways);
	tcase_add_test(tc, subscribers_under_readers);
	tcase_add_test(tc, subscribers_retire_each);
	tcase_add_test(tc, subscriber_joins_late);
	tcase_add_test(tc, paged_rings_released_anywhere);
	tcase_add_test(tc, placed_ahead_rings);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
