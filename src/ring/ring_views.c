/* SPDX-License-Identifier: MIT */
/*
 * ring_views.c - a ring's two views: which nodes each holds, a view taken
 * from all the points of a ring (the placements of points, ring_points.c),
 * and the views of the placements that make each view from all its nodes
 * at once: ketama's continuum (a flat view), a Maglev table (a table view),
 * rendezvous' score inputs (a scores view).
 */
#include "ring_views.h"

#include "error.h"
#include "state.h"

#include <stdlib.h>
#include <string.h>

int hr__ring_view_count(const hr_ring *ring, hr_view which, struct view *v)
{
	bool *zone_seen;

	v->nnodes = v->nzones = 0;
	for (size_t i = 0; i < ring->nnodes; i++)
		v->nnodes += hr__in_view(ring->nodes[i].pub.state, which);
	/* Every node in the view: every zone too. */
	if (v->nnodes == ring->nnodes) {
		v->nzones = ring->nzones;
		return HR_OK;
	}
	zone_seen = calloc(ring->nzones ? ring->nzones : 1, sizeof *zone_seen);
	if (!zone_seen)
		return HR_ENOMEM;
	for (size_t i = 0; i < ring->nnodes; i++) {
		const struct ring_node *rn = &ring->nodes[i];

		if (!hr__in_view(rn->pub.state, which))
			continue;
		if (!zone_seen[rn->zone]) {
			zone_seen[rn->zone] = true;
			v->nzones++;
		}
	}
	free(zone_seen);
	return HR_OK;
}

int hr__ring_view_subset(hr_ring *ring, const struct view *all, hr_view which,
			 hr_error *err)
{
	struct view *v = &ring->views[which];
	struct view counted;
	size_t npoints = 0, j = 0;

	if (hr__ring_view_count(ring, which, &counted))
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	if (counted.nnodes == ring->nnodes) {
		*v = *all;
		v->mem = NULL;
		v->nnodes = counted.nnodes;
		v->nzones = counted.nzones;
		return HR_OK;
	}
	for (size_t i = 0; i < ring->nnodes; i++)
		if (hr__in_view(ring->nodes[i].pub.state, which))
			npoints += ring->nodes[i].vnodes;
	if (hr__view_alloc(v, npoints, ring_wide(ring)) != HR_OK)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < all->npoints; i++) {
		uint32_t nd = view_node(all, i);

		if (!hr__in_view(ring->nodes[nd].pub.state, which))
			continue;
		v->pos[j] = all->pos[i];
		view_set_node(v, j, nd);
		j++;
	}
	hr__view_index(v);
	v->nnodes = counted.nnodes;
	v->nzones = counted.nzones;
	return HR_OK;
}

/* ---- views made from all their nodes at once ------------------------------ */

/* The nodes of view `which`, in id order: their records and slots (room
 * for every node of the ring); their count. */
static size_t view_nodes(const hr_ring *ring, hr_view which, const hr_node **nodes,
			 uint32_t *slots)
{
	size_t n = 0;

	for (size_t i = 0; i < ring->nnodes; i++) {
		if (!hr__in_view(ring->nodes[i].pub.state, which))
			continue;
		nodes[n] = &ring->nodes[i].pub;
		slots[n++] = (uint32_t)i;
	}
	return n;
}

/* ketama: the view's points, numbered by slot. */
static int continuum_view(hr_ring *ring, struct view *v, const hr_node *const *nodes,
			  const uint32_t *slots, size_t n, hr_error *err)
{
	struct point *pts = NULL;
	size_t npoints = 0;
	int rc = ring->pl->view_points(&ring->place, nodes, n, &pts, &npoints, err);

	if (!rc && hr__view_alloc(v, npoints, ring_wide(ring)))
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
	if (!rc) {
		for (size_t j = 0; j < npoints; j++) {
			v->pos[j] = pts[j].pos;
			view_set_node(v, j, slots[pts[j].node]);
		}
		hr__view_index(v);
	}
	free(pts);
	return rc;
}

/* Maglev: the view's table, its slots numbered by slot; a view without
 * nodes has no table, no points. */
static int table_view(hr_ring *ring, struct view *v, const hr_node *const *nodes,
		      const uint32_t *slots, size_t n, hr_error *err)
{
	uint64_t m = ring->place.maglev_size;
	uint32_t *table;
	int rc;

	if (!n) {
		if (hr__view_alloc(v, 0, ring_wide(ring)))
			return hr__error_set(err, HR_ENOMEM, "out of memory");
		hr__view_index(v);
		return HR_OK;
	}
	table = malloc(m * sizeof *table);
	if (!table)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	rc = ring->pl->view_table(&ring->place, nodes, n, table, err);
	for (uint64_t j = 0; !rc && j < m; j++)
		table[j] = slots[table[j]];
	if (!rc && hr__view_table(v, table, m, ring_wide(ring)))
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
	free(table);
	return rc;
}

/* Rendezvous: each node's score inputs; a view without nodes is empty. */
static int scores_view(hr_ring *ring, struct view *v, const hr_node *const *nodes,
		       const uint32_t *slots, size_t n, hr_error *err)
{
	struct rdv_member *m;

	if (!n) {
		if (hr__view_alloc(v, 0, ring_wide(ring)))
			return hr__error_set(err, HR_ENOMEM, "out of memory");
		hr__view_index(v);
		return HR_OK;
	}
	if (hr__view_scores(v, n, &m))
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t j = 0; j < n; j++) {
		const struct ring_node *rn = &ring->nodes[slots[j]];

		hr__rdv_member(&m[j], rn->pub.id, rn->id_len, rn->pub.weight);
		view_set_node(v, j, slots[j]);
	}
	return HR_OK;
}

/* View `which` of `ring` made by its placement, and the vnodes of the
 * nodes whose home view it is: their points in it. */
static int build_view(hr_ring *ring, hr_view which, hr_error *err)
{
	struct view *v = &ring->views[which];
	size_t size = ring->nnodes ? ring->nnodes : 1, n;
	const hr_node **nodes = malloc(size * sizeof *nodes);
	uint32_t *slots = malloc(size * sizeof *slots);
	struct view counted;
	int rc;

	if (!nodes || !slots || hr__ring_view_count(ring, which, &counted)) {
		free(nodes);
		free(slots);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	n = view_nodes(ring, which, nodes, slots);
	memset(v, 0, sizeof *v);
	switch (ring->pl->kind) {
	case HR__PLACE_CONTINUUM:
		rc = continuum_view(ring, v, nodes, slots, n, err);
		break;
	case HR__PLACE_TABLE:
		rc = table_view(ring, v, nodes, slots, n, err);
		break;
	default:
		rc = scores_view(ring, v, nodes, slots, n, err);
		break;
	}
	if (!rc) {
		v->nnodes = counted.nnodes;
		v->nzones = counted.nzones;
		for (size_t k = 0; k < n; k++)
			if (hr__home_view(nodes[k]->state) == which)
				ring->nodes[slots[k]].vnodes = 0;
		for (size_t j = 0; j < v->npoints; j++) {
			struct ring_node *rn = &ring->nodes[view_node(v, j)];

			if (hr__home_view(rn->pub.state) == which)
				rn->vnodes++;
		}
	}
	free(nodes);
	free(slots);
	return rc;
}

int hr__ring_views_each(hr_ring *ring, hr_error *err)
{
	bool all_active = true;
	int rc;

	for (size_t i = 0; i < ring->nnodes; i++)
		all_active = all_active && ring->nodes[i].pub.state == HR_STATE_ACTIVE;
	rc = build_view(ring, HR_VIEW_WRITE, err);
	if (!rc && all_active) {
		ring->shared = ring->views[HR_VIEW_WRITE].mem;
		ring->views[HR_VIEW_WRITE].mem = NULL;
		ring->views[HR_VIEW_READ] = ring->views[HR_VIEW_WRITE];
	} else if (!rc) {
		rc = build_view(ring, HR_VIEW_READ, err);
	}
	if (rc)
		return rc;
	for (size_t i = 0; i < ring->nnodes; i++)
		ring->npoints += ring->nodes[i].vnodes;
	return HR_OK;
}
