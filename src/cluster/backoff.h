/* SPDX-License-Identifier: MIT */
/* backoff.h - the randomized, doubling wait between the attempts of a
 * conditional write that others' writes keep failing (token joins and
 * hand-overs), within a time budget (internal). */
#ifndef HR_BACKOFF_H
#define HR_BACKOFF_H

#include <stdint.h>

/*
 * The wait before the next attempt is drawn at random up to a bound of
 * 20 ms, doubling with each attempt up to 1 s, for up to the budget (30 s
 * unless given).  Writers that start together thus spread out instead of
 * meeting again at once: an attempt fails only when another write lands
 * within its read and put.
 */
#define HR__BACKOFF_BUDGET_MS 30000

typedef struct hr__backoff {
	int64_t t0_ms;     /* when the first attempt began */
	int64_t budget_ms;
	int64_t bound_ms;  /* of the next wait */
	uint64_t rng;
} hr__backoff;

/* Starts the clock.  The clock, `id` and the address of *b (on the
 * caller's stack) seed the draws: processes started together have
 * distinct ids, threads of one process distinct stacks.  budget_ms 0:
 * HR__BACKOFF_BUDGET_MS. */
void hr__backoff_init(hr__backoff *b, int64_t budget_ms, const char *id);

/* The wait before the next attempt, in ms, and the bound doubled; -1 once
 * the budget is spent. */
int64_t hr__backoff_next(hr__backoff *b);

/* Milliseconds since hr__backoff_init(). */
int64_t hr__backoff_elapsed_ms(const hr__backoff *b);

/* Sleeps `ms` (<= 0: not at all), through signals. */
void hr__sleep_ms(int64_t ms);

#endif
