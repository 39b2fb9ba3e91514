/* SPDX-License-Identifier: MIT */
/* arc_sum.h - sums of arc lengths on the 64-bit circle, exact: in 128
 * bits (a whole circle is 2^64), and their share of the circle
 * (internal; the tools of src/cli/ may use it too, so that the dashboard's
 * shares are the library's to the last bit). */
#ifndef HR_ARC_SUM_H
#define HR_ARC_SUM_H

#include <math.h>
#include <stdint.h>

typedef struct hr__arc_sum {
	uint64_t hi, lo;
} hr__arc_sum;

static inline void hr__arc_add(hr__arc_sum *s, uint64_t len)
{
	s->lo += len;
	if (s->lo < len)
		s->hi++;
}

/* Adds the positions first .. last (inclusive, first <= last): up to the
 * whole circle. */
static inline void hr__arc_add_span(hr__arc_sum *s, uint64_t first,
				    uint64_t last)
{
	hr__arc_add(s, last - first);
	hr__arc_add(s, 1);
}

static inline double hr__arc_share(const hr__arc_sum *s)
{
	return s->hi ? 1.0 : ldexp((double)s->lo, -64);
}

#endif
