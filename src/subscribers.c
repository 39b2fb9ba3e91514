/* subscribers.c - one watcher's rings published to every client that
 * follows it, with one grace period per ring. */
#include "subscribers.h"

void hr__subs_init(hr__subscribers *s, hr_ring *empty, const hr__log *log)
{
	pthread_mutex_init(&s->mu, NULL);
	hr__publish_init(&s->pub, hr_ring_retain(empty));
	s->empty = empty;
	s->log = log;
	s->head = NULL;
	s->n = 0;
	s->confirmed = 0;
	s->pending = 0;
}

void hr__subs_destroy(hr__subscribers *s)
{
	hr__publish_destroy(&s->pub);
	hr_ring_release(s->empty);
	pthread_mutex_destroy(&s->mu);
}

bool hr__subs_add(hr__subscribers *s, hr__subscriber *sub)
{
	hr_ring *cur;
	bool pending;

	pthread_mutex_lock(&s->mu);
	cur = hr__publish_acquire(&s->pub);
	hr__publish_init(sub->pub, cur);
	sub->pub->counters = sub->counters;
	/* Kept: the watcher may announce and clear it once unlocked. */
	pending = sub->pending = cur != s->empty;
	sub->swapped_out = NULL;
	sub->prev = NULL;
	sub->next = s->head;
	if (s->head)
		s->head->prev = sub;
	s->head = sub;
	__atomic_store_n(&s->n, s->n + 1, __ATOMIC_RELAXED);
	if (sub->pending) {
		__atomic_add_fetch(&s->pending, 1, __ATOMIC_RELAXED);
		/* Its open may wait for its first ack: this ring's. */
		hr__acker_note(sub->acker, s->confirmed, hr_ring_digest(cur));
	}
	pthread_mutex_unlock(&s->mu);
	return pending;
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
	return hr__publish_acquire(&s->pub);
}

static bool wants_diffs(const hr__subscribers *s)
{
	for (const hr__subscriber *b = s->head; b; b = b->next)
		if (b->listener.on_diff)
			return true;
	return false;
}

/* The pending subscribers' first ring (the current one), from the empty
 * ring, to their callbacks alone: the log had its line. */
static void flush_locked(hr__subscribers *s)
{
	const hr_ring *cur = __atomic_load_n(&s->pub.current, __ATOMIC_RELAXED);

	for (hr__subscriber *b = s->head;
	     b && __atomic_load_n(&s->pending, __ATOMIC_RELAXED); b = b->next) {
		hr__announcement a;

		if (!b->pending)
			continue;
		b->pending = false;
		__atomic_sub_fetch(&s->pending, 1, __ATOMIC_RELAXED);
		hr__announce_begin(&a, s->log, s->empty, cur, b->listener.on_diff != NULL);
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

const hr_ring *hr__subs_swap(hr__subscribers *s, hr_ring *ring)
{
	hr_ring *old;

	pthread_mutex_lock(&s->mu);
	/* A pending subscriber hears of the ring it has before the next. */
	flush_locked(s);
	old = hr__publish_exchange(&s->pub, ring);
	for (hr__subscriber *b = s->head; b; b = b->next)
		b->swapped_out = hr__publish_exchange(b->pub, hr_ring_retain(ring));
	hr__publish_grace();
	for (hr__subscriber *b = s->head; b; b = b->next) {
		/* The watcher's reference to the same ring outlives every
		 * follower; a ring a test published into one client's
		 * publisher is retired there. */
		if (b->swapped_out == old)
			hr__publish_drop(b->pub, b->swapped_out);
		else
			hr__publish_retire(b->pub, b->swapped_out);
		b->swapped_out = NULL;
	}
	return old;
}

void hr__subs_announce(hr__subscribers *s, const hr_ring *old, double build_ms)
{
	const hr_ring *ring = __atomic_load_n(&s->pub.current, __ATOMIC_RELAXED);
	hr__announcement a;

	s->confirmed = hr_ring_revision(ring);
	hr__announce_begin(&a, s->log, old, ring, wants_diffs(s));
	hr__announce_log(&a, build_ms);
	for (hr__subscriber *b = s->head; b; b = b->next)
		hr__announce_to(&a, &b->listener);
	hr__announce_end(&a);
	for (hr__subscriber *b = s->head; b; b = b->next)
		hr__acker_note(b->acker, s->confirmed, hr_ring_digest(ring));
	/* After the callbacks, which may read `old`.  The empty ring is kept
	 * for late subscribers: its followers cannot be the last holders. */
	if (old == s->empty)
		hr__publish_drop(&s->pub, (hr_ring *)old);
	else
		hr__publish_retire(&s->pub, (hr_ring *)old);
	pthread_mutex_unlock(&s->mu);
}

void hr__subs_confirmed(hr__subscribers *s, uint64_t revision)
{
	pthread_mutex_lock(&s->mu);
	s->confirmed = revision;
	for (hr__subscriber *b = s->head; b; b = b->next)
		hr__acker_note(b->acker, revision,
			       hr_ring_digest(__atomic_load_n(&s->pub.current,
							      __ATOMIC_RELAXED)));
	pthread_mutex_unlock(&s->mu);
}

void hr__subs_reclaim(hr__subscribers *s)
{
	pthread_mutex_lock(&s->mu);
	hr__publish_reclaim(&s->pub);
	for (hr__subscriber *b = s->head; b; b = b->next)
		hr__publish_reclaim(b->pub);
	pthread_mutex_unlock(&s->mu);
}
