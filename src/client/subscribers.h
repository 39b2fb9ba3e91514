/* SPDX-License-Identifier: MIT */
/* subscribers.h - the clients a watcher publishes to (internal).
 *
 * Every client follows a watcher through its subscriber: its own publisher
 * (which its lookups read, so that each client keeps its thread caches and
 * counts), its callbacks and its acker.  A watcher builds one ring per
 * revision and publishes it to all its subscribers at once: each
 * publisher gets an alias of the ring (hr__ring_alias: a ring object of
 * its own over the same memory), all are swapped, then one grace period
 * covers them all, so that a watcher followed by 2,000 clients waits for
 * one grace period, not 2,000.  An alias per client keeps a ring object
 * in one publisher only, which a thread's cached reference relies on
 * (thread_cache.h).
 *
 * The watcher keeps a reference to the current ring (what the next ring
 * is derived from, and what a client that subscribes later gets an alias
 * of); the aliases hold theirs, so a ring lives until its last client's
 * followers let its alias go.
 *
 * `mu` orders publications, subscriptions and unsubscriptions: a
 * subscriber added during a publication gets the new ring, and one
 * removed is never touched again once hr__subs_remove() returns.  The
 * callbacks run under it, on the watcher thread.
 */
#ifndef HR_SUBSCRIBERS_H
#define HR_SUBSCRIBERS_H

#include "ack_sender.h"
#include "announce.h"
#include "log.h"
#include "publish.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hr__subscriber {
	/* Set by the client before hr__subs_add(). */
	hr__publisher *pub;              /* initialised by hr__subs_add() */
	hr__listener listener;
	hr__acker *acker;                /* NULL: no acks */
	/* The subscribers' own, under the list's lock. */
	bool pending;                    /* its first ring not announced yet */
	hr_ring *swap;                   /* during a publication: its alias
					    of the new ring, then the old */
	struct hr__subscriber *next, *prev;
} hr__subscriber;

typedef struct hr__subscribers {
	pthread_mutex_t mu;
	hr_ring *current;                /* the watcher's reference */
	hr_ring *next;                   /* prepared, not yet swapped in */
	hr_ring *empty;                  /* the first ring's predecessor */
	const hr__log *log;              /* the event=ring lines */
	uint64_t confirmed;              /* the revision last told the ackers */
	hr__subscriber *head;
	size_t n;                        /* written under mu, read atomically */
	int pending;                     /* atomic: subscribers pending */
} hr__subscribers;

/* Takes the reference of `empty`, the ring published before the first
 * sync (a client that subscribes before the first ring starts with it). */
void hr__subs_init(hr__subscribers *s, hr_ring *empty, const hr__log *log);

/* No subscriber may be left. */
void hr__subs_destroy(hr__subscribers *s);

/*
 * Initialises sub->pub with an alias of the current ring and adds `sub`.
 * *pending is set when a ring was already published: the subscriber's
 * callbacks are then called by the next hr__subs_flush() or publication,
 * with the empty ring as the old one (the caller wakes the watcher).
 * HR_ENOMEM: nothing was done.
 */
int hr__subs_add(hr__subscribers *s, hr__subscriber *sub, bool *pending);

/* Removes `sub` (its publisher is left to its owner); returns how many
 * remain. */
size_t hr__subs_remove(hr__subscribers *s, hr__subscriber *sub);

/* How many subscribers there are; any thread, callbacks included. */
size_t hr__subs_count(hr__subscribers *s);

/* A counted reference to the current ring.  Watcher thread. */
hr_ring *hr__subs_current(hr__subscribers *s);

/*
 * A publication in three steps, under the lock from the first to the
 * last: hr__subs_prepare() takes `ring`'s reference and makes every
 * subscriber's alias of it (HR_ENOMEM: nothing changed, `ring` released,
 * the lock not held); hr__subs_swap() publishes them and returns the ring
 * replaced, so that the caller can count the publication before anyone is
 * told; hr__subs_announce() tells.  Watcher thread.
 */
int hr__subs_prepare(hr__subscribers *s, hr_ring *ring);
hr_ring *hr__subs_swap(hr__subscribers *s);

/* The event=ring line, every subscriber's callbacks (with its own rings)
 * and acker, for the ring just swapped in in place of `old`; then
 * releases `old` and the lock. */
void hr__subs_announce(hr__subscribers *s, hr_ring *old, double build_ms);

/* The current ring is confirmed at `revision` without a new publication:
 * tells every subscriber's acker.  Watcher thread. */
void hr__subs_confirmed(hr__subscribers *s, uint64_t revision);

/* Announces their first ring to the pending subscribers (cheap when none
 * is).  Watcher thread. */
void hr__subs_flush(hr__subscribers *s);

/* Frees the retired rings that no follower holds any more (cheap when
 * none are retired).  Watcher thread. */
void hr__subs_reclaim(hr__subscribers *s);

#endif
