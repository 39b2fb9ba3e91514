/* SPDX-License-Identifier: MIT */
/*
 * rate.h - the rebalancer's rate cap: two token buckets, keys per second
 * and bytes per second, that a copy takes from before each store.
 *
 * The buckets take time as given: every call takes the caller's monotonic
 * "now" in nanoseconds, so that the copy passes a real clock (through
 * hr__rate_throttle()) and the unit test a fake one.  Each bucket holds
 * at most 1/20 s of its rate (and at least one unit, one key), so over any 1 s window at most rate + rate/20 units pass
 * (docs/handoff.md section 5).  A cost larger than the bucket waits for a
 * full bucket, then passes and leaves the bucket in debt.  A rate of 0
 * means no cap.  An hr__rate is plain data, used by one thread (internal).
 */
#ifndef HR_RATE_H
#define HR_RATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hr__bucket {
	double rate;     /* units per second; 0: uncapped              */
	double capacity; /* most units held                            */
	double tokens;   /* units held now; negative after a large cost */
} hr__bucket;

typedef struct hr__rate {
	hr__bucket keys;
	hr__bucket bytes;
	uint64_t last_ns; /* when the buckets were last refilled */
} hr__rate;

/* Caps at `keys_per_s` and `bytes_per_s` (0 or less: no cap), the buckets
 * full at `now_ns`. */
void hr__rate_init(hr__rate *r, double keys_per_s, double bytes_per_s,
		  uint64_t now_ns);

/* Nanoseconds to wait from `now_ns` before one key of `bytes` bytes may
 * pass; 0 when it may pass now.  Refills the buckets up to `now_ns` (a
 * `now_ns` before the last call counts as no time). */
uint64_t hr__rate_wait_ns(hr__rate *r, uint64_t now_ns, size_t bytes);

/* Takes one key of `bytes` bytes at `now_ns`, whether or not it had to
 * wait (call it once hr__rate_wait_ns() gave 0). */
void hr__rate_take(hr__rate *r, uint64_t now_ns, size_t bytes);

/* CLOCK_MONOTONIC in nanoseconds: the clock the copy and the purge pass. */
uint64_t hr__rate_now_ns(void);

/* Sleeps on that clock until one key of `bytes` bytes may pass, then takes
 * it; returns early, taking nothing, once *stop is nonzero (stop may be
 * NULL; it is looked at every 100 ms at least).  A NULL `r` is no cap. */
void hr__rate_throttle(hr__rate *r, size_t bytes, const atomic_int *stop);

#endif
