/* SPDX-License-Identifier: MIT */
/* thread_cache.c - per-thread ring references behind hr_client_lookup(). */
#include "thread_cache.h"
#include "counters.h"

#include <pthread.h>
#include <string.h>

__thread hr__thread_cache hr__thread_cache_tls
	__attribute__((tls_model("initial-exec")));

/* Process-wide, but written once: the key whose destructor releases a
 * thread's references when it exits.  The shared library is linked
 * "nodelete", so the destructor outlives any dlclose(). */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static bool key_ok;

static void release_all(void *arg)
{
	hr__thread_cache *tc = arg;

	for (int i = 0; i < HR__THREAD_CACHE_WAYS; i++)
		hr_ring_release(tc->way[i].ring);
	memset(tc, 0, sizeof *tc);
}

static void make_key(void)
{
	key_ok = pthread_key_create(&key, release_all) == 0;
}

static bool arm(hr__thread_cache *tc)
{
	pthread_once(&key_once, make_key);
	if (!key_ok || pthread_setspecific(key, tc) != 0)
		return false;
	tc->armed = true;
	return true;
}

/* Moves way `i` to the front, keeping the others in order. */
static void to_front(hr__thread_cache *tc, int i)
{
	hr__thread_cache_way w = tc->way[i];

	memmove(&tc->way[1], &tc->way[0], (size_t)i * sizeof w);
	tc->way[0] = w;
}

const hr_ring *hr__thread_cache_miss(hr__publisher *p)
{
	hr__thread_cache *tc = &hr__thread_cache_tls;
	const hr_ring *ring;
	hr_ring *prev;
	int i;

	if (p->host && hr__host_changed(p->host))
		p->follow(p);
	if (!tc->armed && !arm(tc))
		return NULL;
	for (i = 0; i < HR__THREAD_CACHE_WAYS - 1; i++)
		if (tc->way[i].pub == p)
			break;
	if (tc->way[i].pub != p) {
		/* Not cached: take the least recent way.  Its reference may
		 * be the last one if its client is gone; freeing it here is
		 * then the only choice left. */
		hr_ring_release(tc->way[i].ring);
		tc->way[i] = (hr__thread_cache_way){ NULL, p, NULL };
	}
	to_front(tc, i);
	prev = tc->way[0].ring;
	ring = hr__publish_follow(p, &tc->way[0].ring);
	/* Counts follow the ring: a new one starts a new segment. */
	if (ring != prev)
		tc->way[0].cnt = p->counters ?
			hr__counters_switch(p->counters, ring, tc) : NULL;
	return ring;
}

void hr__thread_cache_forget(const hr__publisher *p)
{
	hr__thread_cache *tc = &hr__thread_cache_tls;
	int last = HR__THREAD_CACHE_WAYS - 1;

	for (int i = 0; i <= last; i++) {
		if (tc->way[i].pub != p)
			continue;
		hr_ring_release(tc->way[i].ring);
		/* Keep the used ways first: eviction takes the last one. */
		memmove(&tc->way[i], &tc->way[i + 1],
			(size_t)(last - i) * sizeof tc->way[0]);
		tc->way[last] = (hr__thread_cache_way){ NULL, NULL, NULL };
		return;
	}
}
