/* SPDX-License-Identifier: MIT */
/* hrt_rand.h - a small seeded generator for reproducible test inputs. */
#ifndef HRT_RAND_H
#define HRT_RAND_H

#include <stdint.h>

/* SplitMix64: advances *s and returns the next 64 well-mixed bits. */
static inline uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

#endif
