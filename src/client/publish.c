/* SPDX-License-Identifier: MIT */
/* publish.c - RCU pointer swap, grace periods, and reclamation of rings
 * that followers still hold. */
#include "publish.h"
#include "ring.h"
#include "tsan.h"

#include <pthread.h>
#include <stdlib.h>
#include <urcu/urcu-bp.h>

/*
 * ThreadSanitizer cannot see liburcu's grace periods (the library is not
 * instrumented), so under TSan each read section ends with a release on the
 * publisher and the writer acquires it after synchronize: that is exactly
 * the ordering a grace period guarantees.  The pointer itself is always
 * loaded and exchanged with C11-style atomics, which TSan understands.
 */
#if HR__TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define tsan_acquire(a) __tsan_acquire(a)
#define tsan_release(a) __tsan_release(a)
#else
#define tsan_acquire(a) ((void)(a))
#define tsan_release(a) ((void)(a))
#endif

/*
 * fork() without exec: liburcu-bp keeps a registry of reader threads and
 * two locks a grace period holds, and leaves it to the program to call its
 * fork hooks.  Without them a child inherits the registry entry of a parent
 * thread that was inside a read section at the fork, and its first grace
 * period (a client it opens publishing its first ring) waits forever for
 * that thread, or the child's first read section waits for a registry
 * lock the watcher held.  The hooks take the locks across the fork and
 * drop the parent's other threads from the child's registry.  Registered
 * once, with the first publisher: no read section happens before one.
 * The library is never unloaded (linked "nodelete"), so neither are they.
 */
static pthread_once_t fork_hooks_once = PTHREAD_ONCE_INIT;

static void fork_hooks(void)
{
	/* On failure (no memory) fork() works as without them. */
	(void)pthread_atfork(urcu_bp_before_fork, urcu_bp_after_fork_parent,
			     urcu_bp_after_fork_child);
}

void hr__publish_init(hr__publisher *p, hr_ring *initial)
{
	pthread_once(&fork_hooks_once, fork_hooks);
	pthread_mutex_init(&p->lock, NULL);
	p->retired = NULL;
	p->nretired = p->retired_cap = 0;
	p->counters = NULL;
	p->host = NULL;
	p->follow = NULL;
	__atomic_store_n(&p->current, initial, __ATOMIC_RELEASE);
}

static void reclaim_locked(hr__publisher *p)
{
	size_t kept = 0;

	for (size_t i = 0; i < p->nretired; i++)
		if (!hr__ring_release_if_last(p->retired[i]))
			p->retired[kept++] = p->retired[i];
	__atomic_store_n(&p->nretired, kept, __ATOMIC_RELAXED);
}

void hr__publish_reclaim(hr__publisher *p)
{
	/* Nothing retired, the common case: no lock.  A ring retired
	 * meanwhile waits for the next call. */
	if (!__atomic_load_n(&p->nretired, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&p->lock);
	reclaim_locked(p);
	pthread_mutex_unlock(&p->lock);
}

/* Called after a grace period: no section can still see `old`, and no new
 * reference to it can be taken, so its count only falls from here on. */
static void retire(hr__publisher *p, hr_ring *old)
{
	if (!old || hr__ring_release_if_last(old))
		return;
	if (p->nretired == p->retired_cap) {
		size_t cap = p->retired_cap ? 2 * p->retired_cap : 8;
		hr_ring **grown = realloc(p->retired, cap * sizeof *grown);

		if (!grown) {
			/* Correct still: the last follower frees it, only
			 * on its own thread. */
			hr_ring_release(old);
			return;
		}
		p->retired = grown;
		p->retired_cap = cap;
	}
	p->retired[p->nretired] = old;
	__atomic_store_n(&p->nretired, p->nretired + 1, __ATOMIC_RELAXED);
}

void hr__publish_swap(hr__publisher *p, hr_ring *ring)
{
	hr_ring *old = hr__publish_exchange(p, ring);

	hr__publish_grace();
	hr__publish_retire(p, old);
}

hr_ring *hr__publish_exchange(hr__publisher *p, hr_ring *ring)
{
	return __atomic_exchange_n(&p->current, ring, __ATOMIC_SEQ_CST);
}

void hr__publish_grace(void)
{
	urcu_bp_synchronize_rcu();
}

void hr__publish_retire(hr__publisher *p, hr_ring *old)
{
	tsan_acquire(p);
	pthread_mutex_lock(&p->lock);
	reclaim_locked(p);
	retire(p, old);
	pthread_mutex_unlock(&p->lock);
}

const hr_ring *hr__publish_read_begin(hr__publisher *p)
{
	urcu_bp_read_lock();
	/* Acquire pairs with the exchange: the ring's contents were written
	 * before it was published. */
	return __atomic_load_n(&p->current, __ATOMIC_ACQUIRE);
}

void hr__publish_read_end(hr__publisher *p)
{
	tsan_release(p);
	urcu_bp_read_unlock();
}

hr_ring *hr__publish_acquire(hr__publisher *p)
{
	hr_ring *ring;

	/* Inside the section the publisher's own reference keeps the count
	 * above zero, so taking another one is safe. */
	ring = hr_ring_retain((hr_ring *)hr__publish_read_begin(p));
	hr__publish_read_end(p);
	return ring;
}

const hr_ring *hr__publish_refresh(hr__publisher *p, hr_ring **held)
{
	hr_ring *fresh = hr__publish_acquire(p);

	/* While the publisher lives this is not the last reference (the ring
	 * is current or retired, and both hold one; retire() under memory
	 * exhaustion is the exception), so lookups do not free. */
	hr_ring_release(*held);
	*held = fresh;
	return fresh;
}

void hr__publish_destroy(hr__publisher *p)
{
	hr_ring_release(__atomic_exchange_n(&p->current, NULL, __ATOMIC_ACQ_REL));
	for (size_t i = 0; i < p->nretired; i++)
		hr_ring_release(p->retired[i]);
	free(p->retired);
	pthread_mutex_destroy(&p->lock);
}

void hr__publish_destroy_in_child(hr__publisher *p)
{
	hr_ring_release(__atomic_exchange_n(&p->current, NULL, __ATOMIC_ACQ_REL));
	/* A lock held at the fork (the watcher retiring a ring) stays held,
	 * and the list it guards may be half-written: then it is left. */
	if (pthread_mutex_trylock(&p->lock))
		return;
	for (size_t i = 0; i < p->nretired; i++)
		hr_ring_release(p->retired[i]);
	free(p->retired);
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_destroy(&p->lock);
}
