/* SPDX-License-Identifier: MIT */
/* publish.h - RCU publication of immutable rings (internal).
 *
 * One writer (the watcher thread) swaps in new rings; any number of threads
 * read, in one of two ways:
 *
 *  - Read sections (liburcu's "bulletproof" flavour, which needs no thread
 *    registration, so a host application's threads can enter one directly).
 *    A ring read in a section is valid until the section ends.
 *  - Held references that follow the current ring (hr__publish_follow):
 *    the reader keeps one counted reference to the last ring it used and
 *    only compares pointers while the ring does not change, so the common
 *    case costs one load and touches no shared cache line for writing.
 *
 * A ring leaving publication is released after a grace period (no section
 * can still see it); while references held by followers remain, the writer
 * keeps it on a retired list and frees it once it is the last holder, so a
 * follower never frees a ring on its lookup path while the publisher lives.
 */
#ifndef HR_PUBLISH_H
#define HR_PUBLISH_H

#include "hashring.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct hr__host_reader;

typedef struct hr__publisher {
	hr_ring *current;   /* holds one reference; swapped atomically   */
	/* A client attached to an agent (host_reader.h): the control page
	 * every lookup tests, beside `current`, and what maps the snapshot
	 * it names when that is new (called by the thread cache's slow path
	 * and hr_client_ring(); returns at once if another thread maps).
	 * NULL: the rings come from a watcher. */
	struct hr__host_reader *host;
	void (*follow)(struct hr__publisher *p);
	/* Rings out of publication still held by followers, each with the
	 * publisher's reference.  The lock is the writers' (a test may
	 * publish while the watcher reclaims); readers never take it. */
	pthread_mutex_t lock;
	hr_ring **retired;
	size_t nretired, retired_cap;	/* nretired: written under the lock,
					   read without it (reclaim) */
	/* The lookup counters the thread cache moves with each ring (a
	 * client's, see counters.h); NULL: none. */
	struct hr__counters *counters;
} hr__publisher;

/* Takes ownership of `initial` (one reference). */
void hr__publish_init(hr__publisher *p, hr_ring *initial);

/* Swaps in `ring` (takes its reference), waits for a grace period and
 * releases or retires the previous ring.  Writer thread only; blocks
 * briefly. */
void hr__publish_swap(hr__publisher *p, hr_ring *ring);

/*
 * hr__publish_swap() in steps, for a writer that swaps several publishers
 * with one grace period (subscribers.h): exchange each (taking the new
 * ring's reference, returning the previous one's), wait for one grace
 * period, then retire each previous ring.  Writer thread only.
 */
hr_ring *hr__publish_exchange(hr__publisher *p, hr_ring *ring);
void hr__publish_grace(void);
void hr__publish_retire(hr__publisher *p, hr_ring *old);

/* Frees retired rings whose followers have all moved on.  Cheap when
 * nothing is retired; the watcher calls it whenever it wakes. */
void hr__publish_reclaim(hr__publisher *p);

/* Read section: the returned ring stays valid until hr__publish_read_end()
 * on the same thread.  Sections may nest; never block inside one. */
const hr_ring *hr__publish_read_begin(hr__publisher *p);
void hr__publish_read_end(hr__publisher *p);

/* A counted reference to the current ring (release with hr_ring_release). */
hr_ring *hr__publish_acquire(hr__publisher *p);

/* Slow half of hr__publish_follow(): trades *held for the current ring. */
const hr_ring *hr__publish_refresh(hr__publisher *p, hr_ring **held);

/*
 * Returns the current ring through a reference the caller keeps in *held
 * (NULL at first; it belongs to one thread at a time).  The ring is valid
 * while *held is not refreshed again or released.  Why the fast path is
 * safe without a read section: *held is a counted reference, so the ring it
 * points to cannot be freed, hence cannot be replaced by another ring at
 * the same address; if the current pointer equals it, the current ring is
 * that very ring, alive and fully visible (it was acquired when it was
 * published).  When *held is released, hr_ring_release() on it never frees
 * while the publisher lives (see hr__publish_reclaim).
 */
static inline const hr_ring *hr__publish_follow(hr__publisher *p, hr_ring **held)
{
	hr_ring *cur = __atomic_load_n(&p->current, __ATOMIC_ACQUIRE);

	if (__builtin_expect(cur == *held, 1))
		return cur;
	return hr__publish_refresh(p, held);
}

/* Drops the current ring and the retired ones (rings still held by
 * followers are freed by their last holder).  No writer may be active and
 * no read section open. */
void hr__publish_destroy(hr__publisher *p);

/* hr__publish_destroy() in a child of fork(), where the writer is gone and
 * may have held the lock at the fork: waits for nothing, and leaves the
 * retired rings if the lock is held (fork.h). */
void hr__publish_destroy_in_child(hr__publisher *p);

#endif
