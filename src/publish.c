/* publish.c - RCU pointer swap and grace-period reclamation of rings. */
#include "publish.h"

#include <urcu/urcu-bp.h>

/*
 * ThreadSanitizer cannot see liburcu's grace periods (the library is not
 * instrumented), so under TSan each read section ends with a release on the
 * publisher and the writer acquires it after synchronize: that is exactly
 * the ordering a grace period guarantees.  The pointer itself is always
 * loaded and exchanged with C11-style atomics, which TSan understands.
 */
#if defined(__SANITIZE_THREAD__)
#define HR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HR_TSAN 1
#endif
#endif

#ifdef HR_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define tsan_acquire(a) __tsan_acquire(a)
#define tsan_release(a) __tsan_release(a)
#else
#define tsan_acquire(a) ((void)(a))
#define tsan_release(a) ((void)(a))
#endif

void hr__publish_init(hr__publisher *p, hr_ring *initial)
{
	__atomic_store_n(&p->current, initial, __ATOMIC_RELEASE);
}

void hr__publish_swap(hr__publisher *p, hr_ring *ring)
{
	hr_ring *old = __atomic_exchange_n(&p->current, ring, __ATOMIC_ACQ_REL);

	urcu_bp_synchronize_rcu();
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
}
