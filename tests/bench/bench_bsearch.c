/* SPDX-License-Identifier: MIT */
/* bench_bsearch.c - the textbook ring of bench_bsearch.h. */
#include "bench_bsearch.h"

#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

struct bs_point {
	uint64_t pos;
	uint32_t node;
};

static int cmp_bs_point(const void *a, const void *b)
{
	const struct bs_point *x = a, *y = b;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return (x->node > y->node) - (x->node < y->node);
}

int bs_build(struct bs_ring *b, const hr_ring *ring)
{
	size_t n = hr_ring_point_count(ring), k = 0;
	struct bs_point *tmp = malloc(n * sizeof *tmp);
	char name[HR_ID_MAX + 16];

	b->pos = malloc(n * sizeof *b->pos);
	b->node = malloc(n * sizeof *b->node);
	b->n = 0;
	if (!tmp || !b->pos || !b->node) {
		free(tmp);
		return -1;
	}
	for (size_t j = 0; j < hr_ring_node_count(ring); j++) {
		const hr_node *nd = hr_ring_node(ring, j);
		unsigned v = hr_ring_node_vnodes(ring, nd);

		for (unsigned i = 0; i < v; i++) {
			int len = snprintf(name, sizeof name, "%s#%u", nd->id, i);

			tmp[k].pos = XXH3_64bits(name, (size_t)len);
			tmp[k].node = (uint32_t)j;
			k++;
		}
	}
	qsort(tmp, n, sizeof *tmp, cmp_bs_point);
	for (size_t i = 0; i < n; i++) {
		b->pos[i] = tmp[i].pos;
		b->node[i] = tmp[i].node;
	}
	b->n = n;
	free(tmp);
	return 0;
}

void bs_free(struct bs_ring *b)
{
	free(b->pos);
	free(b->node);
	b->pos = NULL;
	b->node = NULL;
	b->n = 0;
}
