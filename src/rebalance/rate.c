/* SPDX-License-Identifier: MIT */
/* rate.c - two token buckets, keys and bytes per second (see rate.h). */
#define _GNU_SOURCE
#include "rate.h"

#include <math.h>
#include <time.h>

/* A bucket holds this fraction of a second of its rate: the burst above the
 * cap in any 1 s window. */
#define BURST_S 0.05

static void bucket_init(hr__bucket *b, double rate, double min_capacity)
{
	b->rate = rate > 0 ? rate : 0;
	b->capacity = fmax(b->rate * BURST_S, min_capacity);
	b->tokens = b->capacity;
}

static void bucket_refill(hr__bucket *b, double dt_s)
{
	if (b->rate > 0)
		b->tokens = fmin(b->capacity, b->tokens + b->rate * dt_s);
}

/* Seconds until the bucket holds what a cost of `cost` needs: the cost, or
 * a full bucket for a cost larger than the bucket. */
static double bucket_wait_s(const hr__bucket *b, double cost)
{
	double need = fmin(cost, b->capacity);

	if (b->rate <= 0 || b->tokens >= need)
		return 0;
	return (need - b->tokens) / b->rate;
}

static void refill(hr__rate *r, uint64_t now_ns)
{
	double dt_s;

	if (now_ns <= r->last_ns)
		return;
	dt_s = (double)(now_ns - r->last_ns) / 1e9;
	bucket_refill(&r->keys, dt_s);
	bucket_refill(&r->bytes, dt_s);
	r->last_ns = now_ns;
}

void hr__rate_init(hr__rate *r, double keys_per_s, double bytes_per_s,
		  uint64_t now_ns)
{
	bucket_init(&r->keys, keys_per_s, 1);
	/* A byte bucket smaller than one value makes that value wait for a
	 * full bucket (rate.h); no minimum is needed for it to work. */
	bucket_init(&r->bytes, bytes_per_s, 0);
	r->last_ns = now_ns;
}

uint64_t hr__rate_wait_ns(hr__rate *r, uint64_t now_ns, size_t bytes)
{
	double s;

	refill(r, now_ns);
	s = fmax(bucket_wait_s(&r->keys, 1), bucket_wait_s(&r->bytes, (double)bytes));
	if (s <= 0)
		return 0;
	/* Rounded up, plus one: a wait of exactly this long must be enough,
	 * whatever the rounding of the refill. */
	return (uint64_t)ceil(s * 1e9) + 1;
}

void hr__rate_take(hr__rate *r, uint64_t now_ns, size_t bytes)
{
	refill(r, now_ns);
	if (r->keys.rate > 0)
		r->keys.tokens -= 1;
	if (r->bytes.rate > 0)
		r->bytes.tokens -= (double)bytes;
}

uint64_t hr__rate_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The longest sleep between two looks at the stop flag. */
#define STOP_POLL_NS 100000000u

void hr__rate_throttle(hr__rate *r, size_t bytes, const atomic_int *stop)
{
	uint64_t w;

	if (!r)
		return;
	while ((w = hr__rate_wait_ns(r, hr__rate_now_ns(), bytes)) > 0) {
		struct timespec ts;

		if (stop && atomic_load(stop))
			return;
		if (w > STOP_POLL_NS)
			w = STOP_POLL_NS;
		ts = (struct timespec){ .tv_sec = 0, .tv_nsec = (long)w };
		/* A signal ends the sleep early: the loop looks at the flag. */
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	}
	hr__rate_take(r, hr__rate_now_ns(), bytes);
}
