/* publish.h - RCU publication of immutable rings (internal).
 *
 * One writer (the watcher thread) swaps in new rings; any number of threads
 * read.  Readers use liburcu's "bulletproof" flavour, which needs no thread
 * registration, so a host application's threads can call lookups directly.
 * An old ring is released only after a grace period, so no reader that could
 * still see it is left.  Rings handed out with hr__publish_acquire() carry
 * their own reference and outlive the swap. */
#ifndef HR_PUBLISH_H
#define HR_PUBLISH_H

#include "hashring.h"

typedef struct hr__publisher {
	hr_ring *current;   /* holds one reference; accessed through RCU only */
} hr__publisher;

/* Takes ownership of `initial` (one reference). */
void hr__publish_init(hr__publisher *p, hr_ring *initial);

/* Swaps in `ring` (takes its reference), waits for a grace period and
 * releases the previous ring.  Writer thread only; blocks briefly. */
void hr__publish_swap(hr__publisher *p, hr_ring *ring);

/* Read section: the returned ring stays valid until hr__publish_read_end()
 * on the same thread.  Sections may nest; never block inside one. */
const hr_ring *hr__publish_read_begin(hr__publisher *p);
void hr__publish_read_end(hr__publisher *p);

/* A counted reference to the current ring (release with hr_ring_release). */
hr_ring *hr__publish_acquire(hr__publisher *p);

/* Drops the current ring.  No reader or writer may be active. */
void hr__publish_destroy(hr__publisher *p);

#endif
