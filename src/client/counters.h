/* SPDX-License-Identifier: MIT */
/* counters.h - a client's per-node lookup counters (internal).
 *
 * A lookup adds one to its write owner's and its read owner's count in a
 * segment that belongs to the calling thread and to the ring it looked up
 * in: an array of two counts per node slot of that ring, written by that
 * thread alone, with relaxed atomics, so no lookup writes a cache line
 * another thread writes.  The thread cache keeps a pointer to the segment
 * beside its ring reference.  A single lookup does not add to its write
 * owner's count itself: it appends the owner's slot to the segment's log
 * (HR__COUNT_LOG slots), which every HR__COUNT_LOG-th lookup adds into
 * the counts.  A store to a count's address, known only once the search
 * ends, costs the lookup more than the search's last step (the younger
 * loads wait on it); the log's address is known from the start.  Readers
 * add the log's slots to the counts they read, so the counts stay exact.
 *
 * Hot keys: one in `sample` of a thread's logged lookups on a ring (the
 * client's sampling period) goes to the thread's Space-Saving sketch
 * (sketch.h), one of two windows of HR__HOT_WINDOW_MS kept in the
 * thread's block under the block's lock, which the lookup only tries.
 * The gaps between two samples are drawn at random, 1 to 2 * sample - 1
 * lookups, so that no stream that repeats with a period aliases with
 * them; every key's lookups are sampled alike, and a key's samples
 * estimate its share.  The lookup's one test (is its new log length
 * `due`?) finds both the samples and the full logs.  Readers merge the
 * blocks' windows.  When the client spreads reads, the keys whose share
 * is above the threshold go into a small table that every counted lookup
 * probes (hr__hot_table).
 *
 * When a thread moves to a new ring (the thread cache's slow path), it
 * starts a new segment and, if the counters' lock is free (a trylock: a
 * lookup never waits), folds its older segments into the client's totals
 * by node id; otherwise the reader holding the lock folds them.  So a
 * node's count follows its id across rings, and a node that leaves and
 * comes back continues from its count: the totals never go down.
 *
 * A thread's segments hang from its block, one per thread and client
 * (found by the thread's cache address), newest first; the newest is the
 * one the thread writes, the others are sealed.  Blocks live until the
 * client closes; a segment holds a reference to its ring.
 */
#ifndef HR_COUNTERS_H
#define HR_COUNTERS_H

#include "hashring.h"
#include "sketch.h"
#include "tsan.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct hr__count_block;

/* How long a hot-key window lasts: hr_client_hot_keys() estimates over
 * the last one to two of them. */
#define HR__HOT_WINDOW_MS 10000
/* Keys whose reads are spread at most, and the table they are probed in
 * (a power of two, four times as many: short probes). */
#define HR__HOT_SPREAD_MAX 16
#define HR__HOT_TABLE 64

/*
 * The ids (ring positions) of the keys whose reads are spread, probed by
 * every counted lookup when the client spreads reads.  Two tables: a
 * refresh writes the one lookups do not probe, then flips `cur`.  Relaxed
 * atomics throughout; a lookup that probes a table while it is rewritten
 * (two refreshes during one probe) may take a hot key for a cold one or
 * the reverse, once.  Id 0 marks a free slot (a key at position 0 is
 * never spread).
 */
typedef struct hr__hot_table {
	uint64_t slot[2][HR__HOT_TABLE];
	int cur;
} hr__hot_table;

static inline bool hr__hot_has(const hr__hot_table *h, uint64_t id)
{
	const uint64_t *t = h->slot[__atomic_load_n(&h->cur, __ATOMIC_RELAXED)];

	/* At most HR__HOT_SPREAD_MAX slots are taken: a probe ends. */
	for (size_t i = id & (HR__HOT_TABLE - 1);; i = (i + 1) & (HR__HOT_TABLE - 1)) {
		uint64_t v = __atomic_load_n(&t[i], __ATOMIC_RELAXED);

		if (v == id)
			return id != 0;
		if (v == 0)
			return false;
	}
}

/* The most a count holds before its carry takes it (a power of two). */
#define HR__COUNT_CARRY (1u << 30)
/* Lookups logged before their write counts are added (a power of two):
 * the log is four lines, the flush's adds a burst of independent stores. */
#define HR__COUNT_LOG 64u

/*
 * One thread's counts on one ring; the thread cache keeps a pointer to it
 * beside its ring reference, and a lookup touches nothing else: its first
 * line (test, logged) and the line of the log it appends to.
 *
 * A count is 32 bits, the write and read count of a slot side by side in
 * 8 bytes: a lookup's increment is one load and store at [seg + 8 * slot]
 * (no index arithmetic), both owners' counts share a cache line when they
 * are one node, and a thread's array is half the size.  A slot's value is
 * carry[i] + the count, sign-extended, modular: the owning thread keeps
 * each count within +-HR__COUNT_CARRY by moving HR__COUNT_CARRY at a time
 * into its 64-bit carry, under `seq` (a sequence lock: a reader that
 * overlaps a move reads again), so readers see exact, monotonic totals
 * however long no one reads.  Every change of a count checks it.
 *
 * The log: single lookup k of the thread (from 0, modulo 2^32) puts its
 * write owner's slot at log[k % HR__COUNT_LOG], then sets `logged` to
 * k + 1 (release: a reader that sees `logged` sees the slot).  The slots
 * of lookups `flushed` to `logged` are not in the counts yet; when the log
 * is full the lookup adds them (hr__count_flush, under `seq`), and sets
 * `flushed` to `logged`.
 */
typedef struct hr__count_seg {
	/* A lookup whose new `logged` is this takes the slow path
	 * (owner.c): the next of the log's end and the next sample; every
	 * lookup when `flags` are set. */
	uint32_t due;
	uint32_t logged;	/* single lookups logged; atomic */
	uint32_t flushed;	/* `logged` at the last flush; atomic */
	uint32_t sample_at;	/* the `logged` sampled next */
	uint32_t sample;	/* the client's period (0: none) */
	uint32_t rng;		/* xorshift32: the gaps between samples */
	uint8_t flags;
#define HR__SEG_READS 0x1	/* views differ: count the read owner too */
#define HR__SEG_SPREAD 0x2	/* the client spreads hot keys' reads */
	uint32_t seq;		/* odd while a carry or a flush moves; atomic */
	uint32_t turn;		/* the thread's next replica of a hot key */
	unsigned replicas;	/* a hot key's reads go to this many */
	const hr__hot_table *hot;	/* the client's */
	struct hr__count_block *block;	/* the thread's */
	struct hr__count_seg *next;	/* older; under the lock once sealed */
	hr_ring *ring;		/* a counted reference */
	size_t nodes;
	size_t bytes;		/* of the segment, as allocated */
	/* 2 * (nodes + 1), after cnt[]; atomic, written under `seq`. */
	uint64_t *carry;
	/* The write owners' slots of the lookups not yet in cnt[] (see
	 * above); atomic. */
	uint32_t log[HR__COUNT_LOG];
	/* 2 * (nodes + 1): write, read per slot; the pair at slot `nodes`
	 * counts lookups without an owner in a view, and is never read.
	 * Without HR__SEG_READS (one view array) a read count is a
	 * correction to the write count: a read moved by spreading is -1 at
	 * its owner and +1 at its replica (modular, summed right). */
	uint32_t cnt[];
} hr__count_seg;

/* Node ids with their totals, in id order (bytewise). */
typedef struct hr__tally {
	struct hr__tally_entry {
		const char *id;
		uint64_t n[2];	/* by hr_view */
	} *e;
	size_t n, cap;
	bool own;		/* the ids are copies, freed with the tally */
} hr__tally;

typedef struct hr__counters {
	bool on;				/* atomic; counting at all */
	unsigned sample;			/* 1 in this many lookups is
						   sampled (a power of two);
						   0: none */
	double spread;				/* the share above which a
						   key's reads spread; 0: off */
	unsigned replicas;
	struct hr__count_block *blocks;		/* atomic; pushed, never popped */
	pthread_mutex_t mu;			/* folds, reads, hot refreshes */
	hr__tally totals;			/* folded segments, under mu */
	hr__hot_table hot;
	struct hot *buf;			/* a lookup's refresh merges
						   here, under mu */
	size_t buf_cap;
} hr__counters;

/* With the client's hot-key settings (hr_client_config). */
void hr__counters_init(hr__counters *c, unsigned sample, double spread,
		       unsigned replicas);
/* Frees every block and segment; no lookup may run. */
void hr__counters_destroy(hr__counters *c);

/* hr__counters_destroy() in a child of fork(), where the parent's lookup
 * threads are gone: frees it all unless one of them held the counters'
 * lock at the fork (then false: it is left as it is, fork.h). */
bool hr__counters_destroy_in_child(hr__counters *c);

/* Counting on or off for the threads' next moves to a ring (the
 * benchmark measures lookups both ways on one client). */
void hr__counters_enable(hr__counters *c, bool on);

/* The calling thread's segment for `ring`, which the thread cache keeps
 * with the ring; NULL when counting is off or memory ran out (lookups are
 * then not counted until the thread's next ring).  Lock free; allocates
 * a segment (and the thread's block on its first ring). */
hr__count_seg *hr__counters_switch(hr__counters *c, const hr_ring *ring,
				   const void *thread);

/* Adds one to slot `slot`'s count in view `view` and returns the new
 * count; the calling thread's segment only.  A relaxed load and store: no
 * other thread writes it.  The caller then calls hr__count_fix() with it
 * (a batch's counts, read counts). */
static inline uint32_t hr__count(hr__count_seg *s, size_t slot, int view)
{
	uint32_t *p = &s->cnt[2 * slot + (size_t)view];
	uint32_t v = __atomic_load_n(p, __ATOMIC_RELAXED) + 1;

	__atomic_store_n(p, v, __ATOMIC_RELAXED);
	return v;
}

/*
 * A single lookup's write count: appends its write owner's `slot` to the
 * log, and returns true when the lookup is to take the slow path (its new
 * `logged` is s->due): then hr__count_due().  Two stores at addresses
 * known before the search ends, and a test of values known before it
 * starts.
 */
static inline bool hr__count_log(hr__count_seg *s, size_t slot)
{
	uint32_t k = __atomic_load_n(&s->logged, __ATOMIC_RELAXED);

	__atomic_store_n(&s->log[k % HR__COUNT_LOG], (uint32_t)slot, __ATOMIC_RELEASE);
	__atomic_store_n(&s->logged, k + 1, __ATOMIC_RELEASE);
	return k + 1 == s->due;
}

/* The slow path's part of the log, once hr__count_log() said so: adds
 * the log into the counts if it is full, sets the next `due`, and returns
 * whether this lookup is sampled (then hr__counters_sample()).  The owning
 * thread only. */
bool hr__count_due(hr__count_seg *s);

/* Subtracts one (a read counted at `slot` that went elsewhere). */
static inline uint32_t hr__uncount(hr__count_seg *s, size_t slot, int view)
{
	uint32_t *p = &s->cnt[2 * slot + (size_t)view];
	uint32_t v = __atomic_load_n(p, __ATOMIC_RELAXED) - 1;

	__atomic_store_n(p, v, __ATOMIC_RELAXED);
	return v;
}

/* Moves count `i` (2 * slot + view), `v` now, into its carry. */
void hr__count_carry(hr__count_seg *s, size_t i, uint32_t v);

/* After a change of count `i` to `v`: keeps it within its carry's reach. */
static inline void hr__count_fix(hr__count_seg *s, size_t i, uint32_t v)
{
	if (__builtin_expect(v + HR__COUNT_CARRY >= 2 * HR__COUNT_CARRY, 0))
		hr__count_carry(s, i, v);
}

/* The slow half of a sampled lookup: adds the key (its ring position
 * `pos`) to the thread's hot-key sketch, unless a reader holds it (a
 * lookup never waits). */
void hr__counters_sample(hr__count_seg *s, const void *key, size_t len,
			 uint64_t pos);

/* The hot keys of every thread, merged, most frequent first, into
 * out[0..n) (fields key, len, rate, share, error, spread; not the owners)
 * and their ids (ring positions) into ids[0..n); returns how many.
 * Refreshes the keys whose reads are spread.  Takes the locks;
 * allocates: HR_ENOMEM. */
int hr__counters_hot_keys(hr__counters *c, hr_hot_key *out, uint64_t *ids,
			  size_t n);

/* Every node counted so far or in `ring` (may be NULL), with its totals,
 * into `out` (borrowed ids, valid until hr__counters_read_end()); takes
 * the lock.  HR_ENOMEM (lock released). */
int hr__counters_read(hr__counters *c, const hr_ring *ring, hr__tally *out);
void hr__counters_read_end(hr__counters *c, hr__tally *out);

/* ---- shared by counters.c and hot_keys.c --------------------------------- */

/* One key of the merge: a rate in lookups per second. */
struct hot {
	uint64_t id;
	double rate, err;
	size_t len;
	unsigned char key[HR_HOT_KEY_MAX];
};

struct hr__count_block {
	struct hr__count_block *next;	/* set before the push */
	const void *thread;		/* its thread cache; compared only */
	hr__counters *c;
	hr__count_seg *head;		/* atomic; the thread's only writer */
	hr__count_seg *seen;		/* the head a read folded up to; under
					   the client's lock */
	unsigned since_refresh;		/* samples since its last hot refresh */
	/* The hot-key windows: win[cur] since `start`, the other since
	 * `prev_start` (0: none) until `start`; under `mu`, which the thread
	 * only tries.  Absent when the client samples nothing. */
	pthread_mutex_t mu;
	int cur;
	int64_t start, prev_start;
	hr__sketch win[];
};

/* Samples of a thread between two refreshes of the hot table. */
#define REFRESH_SAMPLES 1024

/* Makes the refresh's merge buffer room for every block's windows (a
 * lookup's refresh must not allocate: it merges into this).  Under c->mu;
 * without memory it stays as it was. */
void hr__counters_grow_buf(hr__counters *c);

#endif
