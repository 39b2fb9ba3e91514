/* SPDX-License-Identifier: MIT */
/*
 * ring_derive.c - a ring's points from the previous ring's.
 *
 * Where a node's points depend only on the node (its id and vnode count,
 * and vnode i sits where it sits whatever the count), a ring after a small
 * change is the previous ring's points minus those of removed or shrunk
 * nodes plus the points of new vnodes, merged: the ring a full build would
 * make, point for point, for about one pass over the points instead of
 * placing and sorting them all.
 */
#include "ring_derive.h"

#include "error.h"
#include "ring_match.h"
#include "ring_views.h"

#include <stdlib.h>
#include <string.h>

/*
 * The points of a ring that kept no all-points view (it has warming and
 * draining nodes): the union of both views, in order.  Points of active
 * nodes are in both and taken once.
 */
static int union_points(const hr_ring *ring, struct view *u)
{
	const struct view *a = &ring->views[HR_VIEW_WRITE];
	const struct view *b = &ring->views[HR_VIEW_READ];
	size_t i = 0, j = 0, k = 0;

	if (hr__view_alloc(u, ring->npoints, ring_wide(ring)) != HR_OK)
		return HR_ENOMEM;
	while (i < a->npoints || j < b->npoints) {
		struct point pa = { UINT64_MAX, UINT32_MAX }, pb = pa;

		if (i < a->npoints)
			pa = (struct point){ a->pos[i], view_node(a, i) };
		if (j < b->npoints)
			pb = (struct point){ b->pos[j], view_node(b, j) };
		if (j == b->npoints || (i < a->npoints && point_less(&pa, &pb))) {
			u->pos[k] = pa.pos;
			view_set_node(u, k++, pa.node);
			i++;
		} else {
			if (i < a->npoints && !point_less(&pb, &pa))
				i++;	/* the same point, in both views */
			u->pos[k] = pb.pos;
			view_set_node(u, k++, pb.node);
			j++;
		}
	}
	return HR_OK;
}

/*
 * Writes into `all` the points of `src` whose node the new ring keeps,
 * renumbered (the renumbering keeps their order), with the sorted `fresh`
 * points merged in.
 */
static void merge_points(struct view *all, const struct view *src,
			 const uint32_t *map, const struct point *fresh,
			 size_t nfresh)
{
	size_t k = 0, f = 0;

	for (size_t i = 0; i < src->npoints; i++) {
		struct point p = { src->pos[i], map[view_node(src, i)] };

		if (p.node == NO_NODE)
			continue;
		while (f < nfresh && point_less(&fresh[f], &p)) {
			all->pos[k] = fresh[f].pos;
			view_set_node(all, k++, fresh[f++].node);
		}
		all->pos[k] = p.pos;
		view_set_node(all, k++, p.node);
	}
	for (; f < nfresh; f++) {
		all->pos[k] = fresh[f].pos;
		view_set_node(all, k++, fresh[f].node);
	}
}

/* merge_points() over two-byte node numbers on both sides (rings of up to
 * 65,536 nodes): no width test per point, the next fresh position kept in
 * a register. */
static void merge_points_narrow(struct view *all, const struct view *src,
				const uint32_t *map, const struct point *fresh,
				size_t nfresh)
{
	const uint64_t *sp = src->pos;
	const uint16_t *sn = src->node;
	uint64_t *ap = all->pos;
	uint16_t *an = all->node;
	uint64_t next = nfresh ? fresh[0].pos : UINT64_MAX;
	size_t k = 0, f = 0;

	for (size_t i = 0; i < src->npoints; i++) {
		uint64_t pos = sp[i];
		uint32_t node = map[sn[i]];

		if (node == NO_NODE)
			continue;
		while (next <= pos && f < nfresh &&
		       (next < pos || fresh[f].node < node)) {
			ap[k] = next;
			an[k++] = (uint16_t)fresh[f++].node;
			next = f < nfresh ? fresh[f].pos : UINT64_MAX;
		}
		ap[k] = pos;
		an[k++] = (uint16_t)node;
	}
	for (; f < nfresh; f++) {
		ap[k] = fresh[f].pos;
		an[k++] = (uint16_t)fresh[f].node;
	}
}

int hr__points_derive(hr_ring *ring, const hr_ring *prev, struct view *all,
		      bool *done, hr_error *err)
{
	uint32_t *map, *kept;	/* prev slot -> new slot; vnodes kept */
	struct point *fresh = NULL;
	struct view u = { 0 };
	const struct view *src;
	size_t nkept = 0, nfresh, f = 0;
	int rc = HR_OK;

	*done = false;
	/* The big block first, while the block of the ring freed last is
	 * still whole (see block_size in view.c). */
	if (hr__view_alloc(all, ring->npoints, ring_wide(ring)))
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	map = hr__ring_slot_map(prev, ring);
	kept = calloc(ring->nnodes ? ring->nnodes : 1, sizeof *kept);
	if (!map || !kept) {
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		goto out;
	}
	/* A node keeps its old points unless it lost vnodes (then all are
	 * placed again). */
	for (size_t i = 0; i < prev->nnodes; i++) {
		uint32_t j = map[i];

		if (j == NO_NODE || prev->nodes[i].vnodes > ring->nodes[j].vnodes) {
			map[i] = NO_NODE;
			continue;
		}
		kept[j] = prev->nodes[i].vnodes;
		nkept += kept[j];
	}
	nfresh = ring->npoints - nkept;
	if (nfresh > ring->npoints / 4)
		goto out;

	/* Twice the room: the second half is the sort's scratch. */
	fresh = malloc((nfresh ? 2 * nfresh : 1) * sizeof *fresh);
	if (!fresh) {
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		goto out;
	}
	all->nnodes = ring->nnodes;
	for (uint32_t n = 0; n < ring->nnodes; n++) {
		unsigned vnodes = ring->nodes[n].vnodes;

		ring_points_of(ring, n, kept[n], vnodes, fresh + f);
		f += vnodes - kept[n];
	}
	/* Stable: equal positions stay in node order, as placed. */
	hr__sort_records(fresh, fresh + nfresh, nfresh);

	/* A view that holds every node holds every point. */
	if (prev->views[HR_VIEW_WRITE].nnodes == prev->nnodes) {
		src = &prev->views[HR_VIEW_WRITE];
	} else if (prev->views[HR_VIEW_READ].nnodes == prev->nnodes) {
		src = &prev->views[HR_VIEW_READ];
	} else {
		if (union_points(prev, &u) != HR_OK) {
			rc = hr__error_set(err, HR_ENOMEM, "out of memory");
			goto out;
		}
		src = &u;
	}
	if (!src->wide && !all->wide)
		merge_points_narrow(all, src, map, fresh, nfresh);
	else
		merge_points(all, src, map, fresh, nfresh);
	hr__view_index(all);
	*done = true;
out:
	if (!*done) {
		free(all->mem);
		all->mem = NULL;
	}
	free(u.mem);
	free(fresh);
	free(kept);
	free(map);
	return rc;
}
