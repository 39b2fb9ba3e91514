/*
 * ring_points.c - the views of a placement whose points depend on their
 * node alone (placement.h, point_positions; XXH3 today): every point
 * placed and sorted, or derived from the previous ring when that is
 * cheaper, then the write and read views taken from them.
 */
#include "ring_points.h"

#include "error.h"
#include "ring_derive.h"
#include "ring_view.h"

#include <stdlib.h>
#include <string.h>

static int cmp_point(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	return point_less(x, y) ? -1 : point_less(y, x) ? 1 : 0;
}

static void sort_bucket(struct point *p, size_t n)
{
	if (n > 16) {
		qsort(p, n, sizeof *p, cmp_point);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		struct point t = p[i];
		size_t j = i;

		while (j > 0 && point_less(&t, &p[j - 1])) {
			p[j] = p[j - 1];
			j--;
		}
		p[j] = t;
	}
}

/* Bits of the positions that group a big ring's placed points. */
#define PART_BITS 8
/* Vnodes placed at a time while grouping. */
#define PLACE_CHUNK 4096

/*
 * Places every point of `ring` into raw[0..n), grouped by the top
 * PART_BITS bits of their positions.  The points are placed twice, once
 * to count the groups and once to write each where its group goes: 256
 * write streams, which the caches keep up with.  Grouped, the counting
 * sort into the view then works in one sliding window of its index and
 * points instead of missing the caches at every point of a ring of
 * hundreds of megabytes.  HR_ENOMEM.
 */
static int place_grouped(hr_ring *ring, hr__point_positions_fn positions,
			 struct point *raw)
{
	enum { PARTS = 1 << PART_BITS, SHIFT = 64 - PART_BITS };
	struct point *chunk = malloc(PLACE_CHUNK * sizeof *chunk);
	size_t next[PARTS] = { 0 }, sum = 0;

	if (!chunk)
		return HR_ENOMEM;
	for (int write = 0; write < 2; write++) {
		for (uint32_t j = 0; j < ring->nnodes; j++) {
			unsigned vnodes = ring->nodes[j].vnodes;

			for (unsigned from = 0; from < vnodes; from += PLACE_CHUNK) {
				unsigned to = vnodes - from > PLACE_CHUNK ?
					      from + PLACE_CHUNK : vnodes;

				positions(ring, j, from, to, chunk);
				for (unsigned i = 0; i < to - from; i++) {
					size_t g = chunk[i].pos >> SHIFT;

					if (write)
						raw[next[g]++] = chunk[i];
					else
						next[g]++;
				}
			}
		}
		for (size_t g = 0; !write && g < PARTS; g++) {
			size_t count = next[g];

			next[g] = sum;
			sum += count;
		}
	}
	free(chunk);
	return HR_OK;
}

/* Places every point into `all` and sorts it: a counting sort on the top
 * bits (positions are uniform) straight into the view, then each small
 * bucket on its own.  Fresh memory is most of the cost (page faults), so
 * the only scratch array is the placed points, reused to sort buckets. */
static int build_points(hr_ring *ring, struct view *all,
			hr__point_positions_fn positions, hr_error *err)
{
	size_t n = ring->npoints, buckets, p = 0;
	struct point *raw;
	uint32_t *start;	/* point counts fit: HR_POINTS_MAX < 2^32 */

	if (hr__view_alloc(ring, all, n) != HR_OK)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	all->nnodes = ring->nnodes;
	buckets = (size_t)1 << (64 - all->shift);
	raw = hr__big_alloc((n ? n : 1) * sizeof *raw);
	start = calloc(buckets + 1, sizeof *start);
	if (!raw || !start) {
		free(raw);
		free(start);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	if (n * sizeof *raw >= HR__BIG_BLOCK) {
		if (place_grouped(ring, positions, raw)) {
			free(raw);
			free(start);
			return hr__error_set(err, HR_ENOMEM, "out of memory");
		}
	} else {
		/* Small enough for the caches as they come. */
		for (uint32_t j = 0; j < ring->nnodes; j++) {
			unsigned vnodes = ring->nodes[j].vnodes;

			positions(ring, j, 0, vnodes, raw + p);
			p += vnodes;
		}
	}

	for (size_t i = 0; i < n; i++)
		start[(raw[i].pos >> all->shift) + 1]++;
	for (size_t k = 0; k < buckets; k++)
		start[k + 1] += start[k];
	for (size_t i = 0; i < n; i++) {
		size_t at = start[raw[i].pos >> all->shift]++;

		all->pos[at] = raw[i].pos;
		view_set_node(all, at, raw[i].node);
	}
	/* start[k] is now the end of bucket k, the start of bucket k + 1;
	 * buckets of two or more are sorted through the scratch array. */
	for (size_t k = 0, b = 0; k < buckets; k++) {
		size_t m = start[k] - b;

		if (m > 1) {
			for (size_t i = 0; i < m; i++) {
				raw[i].pos = all->pos[b + i];
				raw[i].node = view_node(all, b + i);
			}
			sort_bucket(raw, m);
			for (size_t i = 0; i < m; i++) {
				all->pos[b + i] = raw[i].pos;
				view_set_node(all, b + i, raw[i].node);
			}
		}
		b = start[k];
	}
	/* Bucket k starts where bucket k - 1 ends: that is the index. */
	all->index[0] = 0;
	memcpy(all->index + 1, start, (buckets - 1) * sizeof *start);
	free(raw);
	free(start);
	return HR_OK;
}

/* Derived from `prev` when it was placed the same way and that is
 * cheaper, else placed from scratch. */
static int place_points(hr_ring *ring, const hr_ring *prev, struct view *all,
			hr_error *err)
{
	bool done = false;
	int rc;

	if (prev && prev->nnodes && prev->pl == ring->pl &&
	    prev->vnodes_per_weight == ring->vnodes_per_weight &&
	    prev->hash == ring->hash) {
		rc = hr__points_derive(ring, prev, all, &done, err);
		ring->derived = done;
		if (rc || done)
			return rc;
	}
	return build_points(ring, all, ring->pl->point_positions, err);
}

/* Both views from `all`, every point placed: `all` itself when a view
 * holds every node, else a copy of its nodes' points. */
static int take_views(hr_ring *ring, struct view all, int rc, hr_error *err)
{
	if (!rc)
		rc = hr__view_subset(ring, &all, HR_VIEW_WRITE, err);
	if (!rc)
		rc = hr__view_subset(ring, &all, HR_VIEW_READ, err);
	if (rc || (ring->views[HR_VIEW_WRITE].mem && ring->views[HR_VIEW_READ].mem))
		free(all.mem);
	else
		ring->shared = all.mem;
	return rc;
}

int hr__points_fill(hr_ring *ring, const hr_ring *prev, hr_error *err)
{
	struct view all = { 0 };
	int rc = place_points(ring, prev, &all, err);

	return take_views(ring, all, rc, err);
}

int hr__points_fill_fresh(hr_ring *ring, hr__point_positions_fn positions,
			  hr_error *err)
{
	struct view all = { 0 };
	int rc = build_points(ring, &all, positions, err);

	return take_views(ring, all, rc, err);
}
