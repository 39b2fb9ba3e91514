/* SPDX-License-Identifier: MIT */
/*
 * ring_match.c - the nodes of two rings matched by id: what a derived ring
 * keeps of the previous one (ring_derive.c, pages_derive.c) and whose arcs
 * moved between two rings (arcs.c).
 */
#include "ring_match.h"

#include "ring_impl.h"

#include <stdlib.h>
#include <string.h>

uint32_t *hr__ring_slot_map(const hr_ring *a, const hr_ring *b)
{
	uint32_t *map = malloc((a->nnodes ? a->nnodes : 1) * sizeof *map);
	size_t i = 0, j = 0;

	if (!map)
		return NULL;
	while (i < a->nnodes) {
		int c = j < b->nnodes ?
			strcmp(a->nodes[i].pub.id, b->nodes[j].pub.id) : -1;

		if (c > 0) {
			j++;
			continue;
		}
		map[i++] = c == 0 ? (uint32_t)j++ : NO_NODE;
	}
	return map;
}
