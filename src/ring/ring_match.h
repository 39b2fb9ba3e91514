/* SPDX-License-Identifier: MIT */
/* ring_match.h - the nodes of two rings matched by id (internal). */
#ifndef HR_RING_MATCH_H
#define HR_RING_MATCH_H

#include "hashring.h"

#include <stdint.h>

/* For each node slot of `a`, the slot of the node with the same id in `b`,
 * or UINT32_MAX: one merge walk of the id-ordered nodes, so that owners
 * of two rings compare as integers.  malloc'd; NULL when out of memory. */
uint32_t *hr__ring_slot_map(const hr_ring *a, const hr_ring *b);

#endif
