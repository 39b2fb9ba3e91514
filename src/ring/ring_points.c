/* SPDX-License-Identifier: MIT */
/*
 * ring_points.c - the views of a placement of points (placement.h,
 * HR__PLACE_POINTS: XXH3, tokens): every point placed and sorted, or, for
 * a placement whose points depend on their node's id and index alone,
 * derived from the previous ring when that is cheaper; big rings of those
 * in pages (pages.h).  Then the write and read views taken from them.
 */
#include "ring_points.h"

#include "error.h"
#include "pages.h"
#include "ring_derive.h"
#include "ring_views.h"
#include "state.h"

#include <stdlib.h>
#include <string.h>

/* Bits of the positions that group a big ring's placed points. */
#define PART_BITS 8
/* Vnodes placed at a time while grouping. */
#define PLACE_CHUNK 4096

/* Sorts points p .. p + n of `v` (n >= 2): a few in place, more through
 * `scratch` (room for n). */
static void sort_range(struct view *v, size_t p, size_t n, struct point *scratch)
{
	if (n <= 16) {
		for (size_t i = p + 1; i < p + n; i++) {
			struct point t = { v->pos[i], view_node(v, i) };
			size_t j = i;

			for (; j > p; j--) {
				struct point q = { v->pos[j - 1], view_node(v, j - 1) };

				if (!point_less(&t, &q))
					break;
				v->pos[j] = q.pos;
				view_set_node(v, j, q.node);
			}
			v->pos[j] = t.pos;
			view_set_node(v, j, t.node);
		}
		return;
	}
	for (size_t i = 0; i < n; i++)
		scratch[i] = (struct point){ v->pos[p + i], view_node(v, p + i) };
	qsort(scratch, n, sizeof *scratch, hr__point_cmp);
	for (size_t i = 0; i < n; i++) {
		v->pos[p + i] = scratch[i].pos;
		view_set_node(v, p + i, scratch[i].node);
	}
}

/*
 * Sorts in[0 .. m) into points base .. base + m of `v`: a counting sort on
 * the index bucket of each position, its low log2(nbuckets) bits (`count`
 * has room for nbuckets + 1), which writes index[0 .. nbuckets), then each
 * crowded bucket on its own with `in` as the scratch array.
 */
static void sort_into(struct view *v, size_t base, struct point *in, size_t m,
		      uint32_t *index, uint32_t *count, size_t nbuckets)
{
	size_t mask = nbuckets - 1, s = 0;

	memset(count, 0, (nbuckets + 1) * sizeof *count);
	for (size_t i = 0; i < m; i++)
		count[((in[i].pos >> v->shift) & mask) + 1]++;
	for (size_t k = 0; k < nbuckets; k++) {
		count[k + 1] += count[k];
		index[k] = (uint32_t)(base + count[k]);
	}
	for (size_t i = 0; i < m; i++) {
		size_t at = base + count[(in[i].pos >> v->shift) & mask]++;

		v->pos[at] = in[i].pos;
		view_set_node(v, at, in[i].node);
	}
	/* count[k] is now the end of bucket k. */
	for (size_t k = 0; k < nbuckets; k++) {
		if (count[k] - s > 1)
			sort_range(v, base + s, count[k] - s, in);
		s = count[k];
	}
}

/*
 * A big ring's points, sorted into `all` group by group (the top
 * PART_BITS bits of their positions).  Every point is placed twice, once
 * to count each group's points and once to write it at its group's next
 * place in the view itself: 256 write streams, which the caches keep up
 * with.  Then each group, a window of about a megabyte, is copied to one
 * scratch array as large as the largest group and sorted back into its
 * place, which gives its part of the index.  Fresh memory is most of a big build's
 * cost (a page fault and a zeroed page per page first touched), so
 * nothing as large as the ring is allocated besides the view.  HR_ENOMEM.
 */
static int sort_grouped(hr_ring *ring, struct view *all)
{
	enum { PARTS = 1 << PART_BITS, SHIFT = 64 - PART_BITS };
	/* A big ring has at least 2^16 buckets: sub > 0. */
	unsigned sub = 64 - all->shift - PART_BITS;
	size_t nsub = (size_t)1 << sub, first[PARTS + 1] = { 0 }, next[PARTS];
	size_t largest = 1;
	struct point *chunk = malloc(PLACE_CHUNK * sizeof *chunk), *scratch = NULL;
	uint32_t *count = NULL;
	int rc = HR_ENOMEM;

	if (!chunk)
		goto out;
	for (int write = 0; write < 2; write++) {
		for (uint32_t j = 0; j < ring->nnodes; j++) {
			unsigned vnodes = ring->nodes[j].vnodes;

			for (unsigned from = 0; from < vnodes; from += PLACE_CHUNK) {
				unsigned to = vnodes - from > PLACE_CHUNK ?
					      from + PLACE_CHUNK : vnodes;

				ring_points_of(ring, j, from, to, chunk);
				for (unsigned i = 0; i < to - from; i++) {
					size_t g = chunk[i].pos >> SHIFT, at;

					if (!write) {
						first[g + 1]++;
						continue;
					}
					at = next[g]++;
					all->pos[at] = chunk[i].pos;
					view_set_node(all, at, chunk[i].node);
				}
			}
		}
		for (size_t g = 0; !write && g < PARTS; g++) {
			if (first[g + 1] > largest)
				largest = first[g + 1];
			first[g + 1] += first[g];
			next[g] = first[g];
		}
	}
	scratch = malloc(largest * sizeof *scratch);
	count = malloc((nsub + 1) * sizeof *count);
	if (!scratch || !count)
		goto out;
	for (size_t g = 0; g < PARTS; g++) {
		size_t base = first[g], m = first[g + 1] - base;

		for (size_t i = 0; i < m; i++)
			scratch[i] = (struct point){ all->pos[base + i],
						     view_node(all, base + i) };
		sort_into(all, base, scratch, m, all->index + (g << sub), count, nsub);
	}
	rc = HR_OK;
out:
	free(chunk);
	free(scratch);
	free(count);
	return rc;
}

/* A small ring's points: placed as they come into one scratch array,
 * then sorted straight into the view.  HR_ENOMEM. */
static int sort_placed(hr_ring *ring, struct view *all)
{
	size_t n = ring->npoints, buckets = (size_t)1 << (64 - all->shift), p = 0;
	struct point *raw = malloc((n ? n : 1) * sizeof *raw);
	uint32_t *count = malloc((buckets + 1) * sizeof *count);

	if (!raw || !count) {
		free(raw);
		free(count);
		return HR_ENOMEM;
	}
	for (uint32_t j = 0; j < ring->nnodes; j++) {
		unsigned vnodes = ring->nodes[j].vnodes;

		ring_points_of(ring, j, 0, vnodes, raw + p);
		p += vnodes;
	}
	sort_into(all, 0, raw, n, all->index, count, buckets);
	free(raw);
	free(count);
	return HR_OK;
}

/* Places every point into `all` and sorts it (positions are uniform, so
 * counting sorts on the top bits do most of it). */
static int build_points(hr_ring *ring, struct view *all, hr_error *err)
{
	int rc;

	if (hr__view_alloc(all, ring->npoints, ring_wide(ring)) != HR_OK)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	all->nnodes = ring->nnodes;
	if (ring->npoints * sizeof(struct point) >= HR__BIG_BLOCK)
		rc = sort_grouped(ring, all);
	else
		rc = sort_placed(ring, all);
	if (rc)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	return HR_OK;
}

/* Whether `prev` (may be NULL) has points placed as `ring` places them,
 * by their node's id and index. */
static bool placed_alike(const hr_ring *ring, const hr_ring *prev)
{
	return prev && prev->nnodes && prev->pl == ring->pl && ring->pl->by_index &&
	       prev->place.vnodes_per_weight == ring->place.vnodes_per_weight &&
	       prev->place.hash == ring->place.hash;
}

/* Derived from `prev` when it was placed the same way and that is
 * cheaper, else placed from scratch. */
static int place_points(hr_ring *ring, const hr_ring *prev, struct view *all,
			hr_error *err)
{
	bool done = false;
	int rc;

	if (placed_alike(ring, prev) && !view_paged(&prev->all)) {
		rc = hr__points_derive(ring, prev, all, &done, err);
		ring->derived = done;
		if (rc || done)
			return rc;
	}
	return build_points(ring, all, err);
}

/* Both views from `all`, every point placed: `all` itself when a view
 * holds every node, else a copy of its nodes' points. */
static int take_views(hr_ring *ring, struct view all, int rc, hr_error *err)
{
	if (!rc)
		rc = hr__ring_view_subset(ring, &all, HR_VIEW_WRITE, err);
	if (!rc)
		rc = hr__ring_view_subset(ring, &all, HR_VIEW_READ, err);
	if (rc || (ring->views[HR_VIEW_WRITE].mem && ring->views[HR_VIEW_READ].mem))
		free(all.mem);
	else
		ring->shared = all.mem;
	return rc;
}

/* A big ring's views, paged: ring->all derived from prev's pages when it
 * can be, else every point placed into pages and sorted there. */
static int fill_paged(hr_ring *ring, const hr_ring *prev, hr_error *err)
{
	bool done = false;
	int rc = HR_OK;

	if (placed_alike(ring, prev))
		rc = hr__pages_derive(ring, prev, &done, err);
	ring->derived = done;
	if (!rc && !done)
		rc = hr__pages_build(ring, err);
	return rc ? rc : hr__pages_views(ring, err);
}

static bool draining(const hr_ring *ring, const struct view *v, size_t i)
{
	return ring->nodes[view_node(v, i)].pub.state == HR_STATE_DRAINING;
}

/*
 * Points at one position in flat view `v`: a draining node's first, then
 * by id (placement.h, draining_first), so that a leaver keeps the reads of
 * a token it has handed to an heir, whose point at it takes the writes
 * (the write view has no draining node).  Such runs are short and rare:
 * insertion, moving only node numbers.
 */
static void draining_first(const hr_ring *ring, struct view *v)
{
	for (size_t i = 1; i < v->npoints; i++) {
		size_t b = i - 1;

		if (v->pos[i] != v->pos[b])
			continue;
		for (; i < v->npoints && v->pos[i] == v->pos[b]; i++) {
			uint32_t node = view_node(v, i);
			size_t k = i;

			if (!draining(ring, v, i))
				continue;
			for (; k > b && !draining(ring, v, k - 1); k--)
				view_set_node(v, k, view_node(v, k - 1));
			view_set_node(v, k, node);
		}
	}
}

int hr__points_fill(hr_ring *ring, const hr_ring *prev, hr_error *err)
{
	struct view all = { 0 };
	int rc;

	if (ring->pl->by_index && hr__pages_wanted(ring))
		return fill_paged(ring, prev, err);
	/* Points that follow more than their node's id and index (tokens)
	 * are placed afresh. */
	rc = ring->pl->by_index ? place_points(ring, prev, &all, err) :
		build_points(ring, &all, err);
	rc = take_views(ring, all, rc, err);
	if (!rc && ring->pl->draining_first) {
		for (size_t j = 0; j < ring->nnodes; j++) {
			if (ring->nodes[j].pub.state == HR_STATE_DRAINING) {
				draining_first(ring, &ring->views[HR_VIEW_READ]);
				break;
			}
		}
	}
	return rc;
}
