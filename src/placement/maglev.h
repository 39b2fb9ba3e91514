/* SPDX-License-Identifier: MIT */
/*
 * maglev.h - Maglev placement (Eisenbud et al., NSDI 2016): a table of M
 * slots per view, each slot a point of the circle, filled by the nodes'
 * permutations in weighted turns.  The placement itself is
 * hr__placement_maglev (placement.h).  Internal (the tools of src/cli/ may
 * use it too, to check a table size before they connect);
 * docs/placement.md section 14 is the specification.
 */
#ifndef HR_MAGLEV_H
#define HR_MAGLEV_H

#include "hashring.h"

#include <stdint.h>

/* HR_OK if `m` is a table size maglev takes (a prime within
 * HR_MAGLEV_SIZE_MIN .. HR_MAGLEV_SIZE_MAX), else HR_EINVAL naming it. */
int hr__maglev_size_check(uint64_t m, hr_error *err);

#endif
