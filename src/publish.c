/* publish.c - RCU pointer swap and grace-period reclamation of rings. */
#include "publish.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <urcu/urcu-bp.h>

/*
 * ThreadSanitizer cannot see liburcu's grace periods (the library is not
 * instrumented), so under TSan each read section ends with a release on the
 * publisher and the writer acquires it after synchronize: that is exactly
 * the ordering a grace period guarantees.  The pointer itself is always
 * loaded and exchanged with C11-style atomics, which TSan understands.
 */
#ifdef HR_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define tsan_acquire(a) __tsan_acquire(a)
#define tsan_release(a) __tsan_release(a)
#else
#define tsan_acquire(a) ((void)(a))
#define tsan_release(a) ((void)(a))
#endif

static long membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0);
}

void hr__publish_init(hr__publisher *p, hr_ring *initial)
{
	pthread_mutex_init(&p->lock, NULL);
	p->slots = NULL;
	p->epoch = 1;
	/* Registering is per process and may be repeated.  Where seccomp or
	 * an old kernel refuses it, slot readers fall back to a fence. */
	p->fence = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0;
	__atomic_store_n(&p->current, initial, __ATOMIC_RELEASE);
}

void hr__publish_slot_add(hr__publisher *p, hr__reader_slot *s)
{
	s->epoch = 0;
	pthread_mutex_lock(&p->lock);
	s->prev = NULL;
	s->next = p->slots;
	if (p->slots)
		p->slots->prev = s;
	p->slots = s;
	pthread_mutex_unlock(&p->lock);
}

void hr__publish_slot_remove(hr__publisher *p, hr__reader_slot *s)
{
	pthread_mutex_lock(&p->lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		p->slots = s->next;
	if (s->next)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&p->lock);
}

/* Waits until no slot reader can still hold a ring published before this
 * call (see hr__slot_read_begin for why this suffices). */
static void wait_slots(hr__publisher *p)
{
	uint64_t e;

	pthread_mutex_lock(&p->lock);
	if (!p->slots) {
		pthread_mutex_unlock(&p->lock);
		return;
	}
	e = __atomic_add_fetch(&p->epoch, 1, __ATOMIC_SEQ_CST);
#ifndef HR_TSAN
	if (p->fence || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	for (hr__reader_slot *s = p->slots; s; s = s->next) {
		for (int spins = 0;; spins++) {
			uint64_t v = __atomic_load_n(&s->epoch, __ATOMIC_SEQ_CST);

			if (!v || v >= e)
				break;
			if (spins > 100)
				sched_yield();
		}
	}
	pthread_mutex_unlock(&p->lock);
}

void hr__publish_swap(hr__publisher *p, hr_ring *ring)
{
	hr_ring *old = __atomic_exchange_n(&p->current, ring, __ATOMIC_SEQ_CST);

	urcu_bp_synchronize_rcu();
	wait_slots(p);
	tsan_acquire(p);
	hr_ring_release(old);
}

const hr_ring *hr__publish_read_begin(hr__publisher *p)
{
	urcu_bp_read_lock();
	/* Acquire pairs with the exchange's release: the ring's contents were
	 * written before it was published. */
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
	hr__publish_read_begin(p);
	ring = hr_ring_retain(__atomic_load_n(&p->current, __ATOMIC_ACQUIRE));
	hr__publish_read_end(p);
	return ring;
}

void hr__publish_destroy(hr__publisher *p)
{
	hr_ring *old = __atomic_exchange_n(&p->current, NULL, __ATOMIC_ACQ_REL);

	hr_ring_release(old);
	pthread_mutex_destroy(&p->lock);
}
