/* arcs.h - measuring the circle: arc lengths summed exactly (internal). */
#ifndef HR_ARCS_H
#define HR_ARCS_H

#include "hashring.h"

#include <math.h>
#include <stdint.h>

/* A sum of arc lengths on the 64-bit circle, in 128 bits (a whole circle
 * is 2^64), and its share of the circle. */
typedef struct hr__arc_sum {
	uint64_t hi, lo;
} hr__arc_sum;

static inline void hr__arc_add(hr__arc_sum *s, uint64_t len)
{
	s->lo += len;
	if (s->lo < len)
		s->hi++;
}

static inline double hr__arc_share(const hr__arc_sum *s)
{
	return s->hi ? 1.0 : ldexp((double)s->lo, -64);
}

#endif
