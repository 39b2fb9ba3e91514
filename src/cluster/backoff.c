/* SPDX-License-Identifier: MIT */
/*
 * backoff.c - the wait between the attempts of a conditional write under
 * contention, shared by token joins (register_tokens.c) and hand-overs
 * (update_heirs.c) so that both spread a burst out the same way.
 */
#include "backoff.h"

#include "clock.h"

#include <errno.h>
#include <time.h>

#define BACKOFF_FIRST_MS 20
#define BACKOFF_MAX_MS 1000

void hr__backoff_init(hr__backoff *b, int64_t budget_ms, const char *id)
{
	uint64_t h;

	b->t0_ms = hr__now_ms();
	b->budget_ms = budget_ms ? budget_ms : HR__BACKOFF_BUDGET_MS;
	b->bound_ms = BACKOFF_FIRST_MS;
	h = (uint64_t)b->t0_ms * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)b;
	for (const char *c = id; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	b->rng = h ? h : 1;
}

/* A xorshift64 draw in [0, n]. */
static int64_t rand_upto(uint64_t *rng, int64_t n)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return (int64_t)(*rng % (uint64_t)(n + 1));
}

int64_t hr__backoff_next(hr__backoff *b)
{
	int64_t ms;

	if (hr__backoff_elapsed_ms(b) >= b->budget_ms)
		return -1;
	ms = rand_upto(&b->rng, b->bound_ms);
	b->bound_ms = b->bound_ms * 2 < BACKOFF_MAX_MS ? b->bound_ms * 2 : BACKOFF_MAX_MS;
	return ms;
}

int64_t hr__backoff_elapsed_ms(const hr__backoff *b)
{
	return hr__now_ms() - b->t0_ms;
}

void hr__sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (ms > 0 && nanosleep(&ts, &ts) && errno == EINTR)
		;
}
