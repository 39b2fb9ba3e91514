/* publish.h - RCU publication of immutable rings (internal).
 *
 * One writer (the watcher thread) swaps in new rings; any number of threads
 * read.  Readers use liburcu's "bulletproof" flavour, which needs no thread
 * registration, so a host application's threads can call lookups directly.
 * Reader handles (hr_reader) use registered slots instead, which avoid
 * liburcu's thread-local storage; a swap waits for both kinds of reader.
 * An old ring is released only after a grace period, so no reader that could
 * still see it is left.  Rings handed out with hr__publish_acquire() carry
 * their own reference and outlive the swap. */
#ifndef HR_PUBLISH_H
#define HR_PUBLISH_H

#include "hashring.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* ThreadSanitizer builds: TSan understands neither membarrier nor
 * standalone fences, so there the slot protocol uses sequentially
 * consistent accesses instead (slower, equally correct). */
#if defined(__SANITIZE_THREAD__)
#define HR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HR_TSAN 1
#endif
#endif

/*
 * A registered reader (behind a public hr_reader): a small epoch-based
 * scheme with no thread-local storage, so its read side is two plain
 * stores and two loads, inlined.  `epoch` is 0 outside a section, else the
 * publisher's epoch seen on entry; a swap waits until no slot holds an
 * epoch older than its own.  One cache line each, so readers never share.
 */
typedef struct hr__reader_slot {
	_Alignas(64) uint64_t epoch;
	struct hr__reader_slot *next, *prev;
} hr__reader_slot;

typedef struct hr__publisher {
	hr_ring *current;   /* holds one reference; accessed through RCU only */
	uint64_t epoch;     /* starts at 1; bumped by every swap          */
	bool fence;         /* no membarrier: slot readers pay a fence     */
	pthread_mutex_t lock;        /* the slot list (never readers' path) */
	hr__reader_slot *slots;
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

/* Registers and unregisters a slot (any thread; they take a mutex). */
void hr__publish_slot_add(hr__publisher *p, hr__reader_slot *s);
void hr__publish_slot_remove(hr__publisher *p, hr__reader_slot *s);

/*
 * Read section of a registered slot; its owner thread only, no nesting.
 * Why it is safe: the epoch is loaded with acquire, so a reader that sees a
 * swap's new epoch sees its new ring; a swap bumps the epoch after the
 * exchange, then makes every running thread pass a full barrier
 * (membarrier) before it reads the slots, so a reader whose slot store it
 * misses loads the new ring.  Without membarrier the reader fences itself.
 */
static inline const hr_ring *hr__slot_read_begin(hr__publisher *p,
						 hr__reader_slot *s)
{
#ifdef HR_TSAN
	__atomic_store_n(&s->epoch, __atomic_load_n(&p->epoch, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
	return __atomic_load_n(&p->current, __ATOMIC_SEQ_CST);
#else
	__atomic_store_n(&s->epoch, __atomic_load_n(&p->epoch, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELAXED);
	if (__builtin_expect(p->fence, 0))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&p->current, __ATOMIC_ACQUIRE);
#endif
}

static inline void hr__slot_read_end(hr__reader_slot *s)
{
	__atomic_store_n(&s->epoch, 0, __ATOMIC_RELEASE);
}

/* A counted reference to the current ring (release with hr_ring_release). */
hr_ring *hr__publish_acquire(hr__publisher *p);

/* Drops the current ring.  No reader or writer may be active. */
void hr__publish_destroy(hr__publisher *p);

#endif
