/* SPDX-License-Identifier: MIT */
/* subscribers.c - one watcher's rings published to every client that
 * follows it, an alias each, with one grace period per ring. */
#include "subscribers.h"

#include "error.h"
#include "ring.h"

void hr__subs_init(hr__subscribers *s, hr_ring *empty, const hr__log *log)
{
	pthread_mutex_init(&s->mu, NULL);
	s->current = hr_ring_retain(empty);
	s->next = NULL;
	s->empty = empty;
	s->log = log;
	s->head = NULL;
	s->n = 0;
	s->confirmed = 0;
	s->pending = 0;
}

void hr__subs_destroy(hr__subscribers *s)
{
	hr_ring_release(s->current);
	hr_ring_release(s->empty);
	pthread_mutex_destroy(&s->mu);
}

int hr__subs_add(hr__subscribers *s, hr__subscriber *sub, bool *pending)
{
	hr_ring *own;

	pthread_mutex_lock(&s->mu);
	own = hr__ring_alias(s->current);
	if (!own) {
		pthread_mutex_unlock(&s->mu);
		return HR_ENOMEM;
	}
	hr__publish_init(sub->pub, own);
	/* Kept: the watcher may announce and clear it once unlocked. */
	*pending = sub->pending = s->current != s->empty;
	sub->swap = NULL;
	sub->prev = NULL;
	sub->next = s->head;
	if (s->head)
		s->head->prev = sub;
	s->head = sub;
	__atomic_store_n(&s->n, s->n + 1, __ATOMIC_RELAXED);
	if (sub->pending) {
		__atomic_add_fetch(&s->pending, 1, __ATOMIC_RELAXED);
		/* Its open may wait for its first ack: this ring's. */
		hr__acker_note(sub->acker, s->confirmed, hr_ring_digest(s->current));
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

size_t hr__subs_remove(hr__subscribers *s, hr__subscriber *sub)
{
	size_t left;

	pthread_mutex_lock(&s->mu);
	if (sub->prev)
		sub->prev->next = sub->next;
	else
		s->head = sub->next;
	if (sub->next)
		sub->next->prev = sub->prev;
	if (sub->pending)
		__atomic_sub_fetch(&s->pending, 1, __ATOMIC_RELAXED);
	left = s->n - 1;
	__atomic_store_n(&s->n, left, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->mu);
	return left;
}

size_t hr__subs_count(hr__subscribers *s)
{
	/* Not under the lock: callbacks, which run under it, may ask. */
	return __atomic_load_n(&s->n, __ATOMIC_RELAXED);
}

hr_ring *hr__subs_current(hr__subscribers *s)
{
	/* Only the watcher thread, the caller, replaces it. */
	return hr_ring_retain(s->current);
}

static bool wants_diffs(const hr__subscribers *s)
{
	for (const hr__subscriber *b = s->head; b; b = b->next)
		if (b->listener.on_diff)
			return true;
	return false;
}

/* The ring a subscriber's lookups read now: its alias of s->current. */
static const hr_ring *own_ring(const hr__subscriber *b)
{
	return __atomic_load_n(&b->pub->current, __ATOMIC_RELAXED);
}

/* The pending subscribers' first ring, from the empty ring, to their
 * callbacks alone: the log had its line. */
static void flush_locked(hr__subscribers *s)
{
	for (hr__subscriber *b = s->head;
	     b && __atomic_load_n(&s->pending, __ATOMIC_RELAXED); b = b->next) {
		hr__announcement a;

		if (!b->pending)
			continue;
		b->pending = false;
		__atomic_sub_fetch(&s->pending, 1, __ATOMIC_RELAXED);
		hr__announce_begin(&a, s->log, s->empty, own_ring(b),
				   b->listener.on_diff != NULL);
		hr__announce_to(&a, &b->listener);
		hr__announce_end(&a);
	}
}

void hr__subs_flush(hr__subscribers *s)
{
	if (!__atomic_load_n(&s->pending, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&s->mu);
	flush_locked(s);
	pthread_mutex_unlock(&s->mu);
}

int hr__subs_prepare(hr__subscribers *s, hr_ring *ring)
{
	pthread_mutex_lock(&s->mu);
	/* Every alias first: a ring goes to all clients or to none. */
	for (hr__subscriber *b = s->head; b; b = b->next) {
		b->swap = hr__ring_alias(ring);
		if (b->swap)
			continue;
		for (hr__subscriber *u = s->head; u != b; u = u->next) {
			hr_ring_release(u->swap);
			u->swap = NULL;
		}
		pthread_mutex_unlock(&s->mu);
		hr_ring_release(ring);
		return HR_ENOMEM;
	}
	s->next = ring;
	return 0;
}

hr_ring *hr__subs_swap(hr__subscribers *s)
{
	hr_ring *old = s->current;

	/* A pending subscriber hears of the ring it has before the next. */
	flush_locked(s);
	s->current = s->next;
	s->next = NULL;
	for (hr__subscriber *b = s->head; b; b = b->next)
		b->swap = hr__publish_exchange(b->pub, b->swap);
	hr__publish_grace();
	return old;
}

void hr__subs_announce(hr__subscribers *s, hr_ring *old, double build_ms)
{
	hr__announcement a;

	s->confirmed = hr_ring_revision(s->current);
	hr__announce_begin(&a, s->log, old, s->current, wants_diffs(s));
	hr__announce_log(&a, build_ms);
	for (hr__subscriber *b = s->head; b; b = b->next) {
		/* Each client is told of its own rings, as its lookups see
		 * them; the diffs are the same for all. */
		hr__announcement own = a;

		own.old = b->swap;
		own.ring = own_ring(b);
		hr__announce_to(&own, &b->listener);
	}
	hr__announce_end(&a);
	for (hr__subscriber *b = s->head; b; b = b->next) {
		hr__acker_note(b->acker, s->confirmed, hr_ring_digest(s->current));
		/* After its callbacks, which may read it. */
		hr__publish_retire(b->pub, b->swap);
		b->swap = NULL;
	}
	hr_ring_release(old);
	pthread_mutex_unlock(&s->mu);
}

void hr__subs_confirmed(hr__subscribers *s, uint64_t revision)
{
	pthread_mutex_lock(&s->mu);
	s->confirmed = revision;
	for (hr__subscriber *b = s->head; b; b = b->next)
		hr__acker_note(b->acker, revision, hr_ring_digest(s->current));
	pthread_mutex_unlock(&s->mu);
}

void hr__subs_reclaim(hr__subscribers *s)
{
	pthread_mutex_lock(&s->mu);
	for (hr__subscriber *b = s->head; b; b = b->next)
		hr__publish_reclaim(b->pub);
	pthread_mutex_unlock(&s->mu);
}
