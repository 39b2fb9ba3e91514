/* SPDX-License-Identifier: MIT */
/* clock.h - monotonic time for timers and timed condition waits
 * (internal; the tools of src/cli/ may use it too).  Wall-clock steps never
 * shorten or stretch a wait. */
#ifndef HR_CLOCK_H
#define HR_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t hr__now_ms(void);
/* Microseconds on CLOCK_MONOTONIC: for the durations the log reports. */
int64_t hr__now_us(void);

/* Initialises `cv` to time its waits on CLOCK_MONOTONIC. */
void hr__cond_init_monotonic(pthread_cond_t *cv);

/* Sets `ts` to `ms` milliseconds from now, on CLOCK_MONOTONIC: the
 * deadline of a pthread_cond_timedwait() on such a condition. */
void hr__deadline_in(struct timespec *ts, int64_t ms);

#endif
