/* SPDX-License-Identifier: MIT */
/* thread_cache.h - per-thread ring references behind hr_client_lookup()
 * (internal).
 *
 * hr_client_lookup() takes no handle, yet a read section would reach
 * liburcu's thread-local storage through a shared library's dynamic TLS
 * model, which costs more than the lookup itself.  Instead each thread
 * keeps, in one small initial-exec TLS block, a followed reference (see
 * hr__publish_follow) for each of the last few clients it looked up, most
 * recent first.  While a client's ring does not change, a lookup costs one
 * pointer load and compare.  The references go when the thread exits, when
 * a fifth client evicts the oldest, or at hr_client_close() for the closing
 * thread; a thread that stops looking up keeps its last ring alive until
 * then.
 */
#ifndef HR_THREAD_CACHE_H
#define HR_THREAD_CACHE_H

#include "host_reader.h"
#include "publish.h"

#include <stdbool.h>
#include <stdint.h>

struct hr__count_seg;

#define HR__THREAD_CACHE_WAYS 4

typedef struct hr__thread_cache_way {
	hr_ring *ring;			/* a counted reference, or NULL */
	const hr__publisher *pub;	/* whose ring it is; compared only */
	struct hr__count_seg *cnt;	/* this thread's counts on `ring`,
					   or NULL (counters.h) */
} hr__thread_cache_way;

typedef struct hr__thread_cache {
	hr__thread_cache_way way[HR__THREAD_CACHE_WAYS];
	bool armed;		/* the release at thread exit is registered */
} hr__thread_cache;

/* Small on purpose: initial-exec TLS comes from the static TLS surplus that
 * dlopen() draws on. */
extern __thread hr__thread_cache hr__thread_cache_tls
	__attribute__((tls_model("initial-exec")));

/* Slow half of hr__thread_cache_ring(). */
const hr_ring *hr__thread_cache_miss(hr__publisher *p);

/* The current ring of `p` if the thread's most recent way holds it (the
 * fast path of hr__thread_cache_ring()), else NULL. */
static inline const hr_ring *hr__thread_cache_hit(const hr__publisher *p)
{
	hr_ring *cur;

	/* An agent's reader: a newer snapshot takes the slow path, which
	 * maps it.  One load from the control page. */
	if (__builtin_expect(p->host != NULL, 0) && hr__host_changed(p->host))
		return NULL;
	cur = __atomic_load_n(&p->current, __ATOMIC_ACQUIRE);

	/* The reasoning of hr__publish_follow(), on the most recent way: a
	 * ring object is published by one publisher only (clients that share
	 * a watcher get aliases, subscribers.h), so the ring names the
	 * client, whose counts the way holds. */
	return cur == hr__thread_cache_tls.way[0].ring ? cur : NULL;
}

/*
 * The current ring of `p`, valid on this thread until its next call into
 * the cache (for any client) or hr__thread_cache_forget().  NULL when the
 * thread cannot keep references (no thread-exit hook could be registered):
 * the caller then uses a read section.  Not async-signal-safe.
 */
static inline const hr_ring *hr__thread_cache_ring(hr__publisher *p)
{
	const hr_ring *ring = hr__thread_cache_hit(p);

	if (__builtin_expect(ring != NULL, 1))
		return ring;
	return hr__thread_cache_miss(p);
}

/* The lookup counts of the ring hr__thread_cache_ring() returned last
 * (not NULL), or NULL: not counted. */
static inline struct hr__count_seg *hr__thread_cache_counts(void)
{
	return hr__thread_cache_tls.way[0].cnt;
}

/* Releases the calling thread's reference for `p`, if any (before the
 * publisher is destroyed, so its last ring is freed with it). */
void hr__thread_cache_forget(const hr__publisher *p);

#endif
