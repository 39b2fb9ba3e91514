/* counters.h - a client's per-node lookup counters (internal).
 *
 * A lookup adds one to its write owner's and its read owner's count in a
 * segment that belongs to the calling thread and to the ring it looked up
 * in: an array of two counts per node slot of that ring, written by that
 * thread alone, with relaxed atomics (plain loads and stores on x86), so
 * no lookup writes a cache line another thread writes.  The thread cache
 * keeps a pointer to the array beside its ring reference.
 *
 * When a thread moves to a new ring (the thread cache's slow path), it
 * starts a new segment and, if the counters' lock is free (a trylock: a
 * lookup never waits), folds its older segments into the client's totals
 * by node id; otherwise the reader holding the lock folds them.  So a
 * node's count follows its id across rings, and a node that leaves and
 * comes back continues from its count: the totals never go down.
 *
 * A thread's segments hang from its block, one per thread and client
 * (found by the thread's cache address; a reader handle's by the handle's,
 * for it counts as a thread of its own), newest first; the newest is the
 * one the thread writes, the others are sealed.  Blocks live until the
 * client closes; a segment holds a reference to its ring.
 */
#ifndef HR_COUNTERS_H
#define HR_COUNTERS_H

#include "hashring.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct hr__count_block;

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
	struct hr__count_block *blocks;		/* atomic; pushed, never popped */
	pthread_mutex_t mu;			/* folds and reads */
	hr__tally totals;			/* folded segments, under mu */
} hr__counters;

void hr__counters_init(hr__counters *c);
/* Frees every block and segment; no lookup may run. */
void hr__counters_destroy(hr__counters *c);

/* Counting on or off for the threads' next moves to a ring (the
 * benchmark measures lookups both ways on one client). */
void hr__counters_enable(hr__counters *c, bool on);

/* The calling thread's count array for `ring` (2 per node slot: write,
 * read; a ring whose views are one array, hr__ring_views_shared(), keeps
 * only the write counts), which the thread cache keeps with the ring; NULL
 * when counting is off or memory ran out (lookups are then not counted
 * until the thread's next ring).  Lock free; allocates a segment. */
uint64_t *hr__counters_switch(hr__counters *c, const hr_ring *ring,
			      const void *thread);

/* Adds one to slot `slot`'s count in view `view`; the calling thread's
 * array only. */
static inline void hr__count(uint64_t *cnt, size_t slot, int view)
{
	uint64_t *p = &cnt[2 * slot + (size_t)view];

	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

/* Every node counted so far or in `ring` (may be NULL), with its totals,
 * into `out` (borrowed ids, valid until hr__counters_read_end()); takes
 * the lock.  HR_ENOMEM (lock released). */
int hr__counters_read(hr__counters *c, const hr_ring *ring, hr__tally *out);
void hr__counters_read_end(hr__counters *c, hr__tally *out);

#endif
