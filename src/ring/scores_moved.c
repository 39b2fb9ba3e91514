/* SPDX-License-Identifier: MIT */
/*
 * scores_moved.c - what moves between two rings when keys are not on
 * arcs: a rendezvous ring's owner of a key comes from scores, so the
 * moved share and a diff's totals come from the nodes' weights in both
 * rings (rendezvous.c's formulas, docs/placement.md section 15) or, when
 * only one of the two rings is a rendezvous ring, from the owners of a
 * sample of 65,536 positions.
 */
#include "scores_moved.h"

#include "ring_impl.h"
#include "state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* True when the two rings' owners come from the formulas: both rendezvous
 * (or missing, or with an empty view). */
static bool analytic(const hr_ring *a, const hr_ring *b, hr_view view)
{
	bool ea = !a || !a->views[view].npoints, eb = !b || !b->views[view].npoints;

	return (ea || a->pl->kind == HR__PLACE_SCORES) &&
	       (eb || b->pl->kind == HR__PLACE_SCORES);
}

static double view_weight_of(const hr_ring *ring, hr_view view, size_t slot)
{
	const hr_node *nd = &ring->nodes[slot].pub;

	return hr__in_view(nd->state, view) ? nd->weight : 0;
}

/* The union of two rings' nodes by id with their weights in `view`; NULL
 * only for lack of memory.  *wa and *wb get the views' W. */
static struct rdv_pair *merge(const hr_ring *a, const hr_ring *b, hr_view view,
			      size_t *n, double *wa, double *wb)
{
	size_t na = a ? a->nnodes : 0, nb = b ? b->nnodes : 0, i = 0, j = 0;
	struct rdv_pair *u = malloc((na + nb + 1) * sizeof *u);

	*n = 0;
	*wa = *wb = 0;
	if (!u)
		return NULL;
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 :
			strcmp(a->nodes[i].pub.id, b->nodes[j].pub.id);
		struct rdv_pair e = { NULL, NULL, 0, 0, 0 };

		if (c <= 0) {
			e.a = view_weight_of(a, view, i);
			e.an = &a->nodes[i++].pub;
		}
		if (c >= 0) {
			e.b = view_weight_of(b, view, j);
			e.bn = &b->nodes[j++].pub;
		}
		if (!e.a && !e.b)
			continue;
		*wa += e.a;
		*wb += e.b;
		u[(*n)++] = e;
	}
	return u;
}

/* ---- rings placed differently: a sample ---------------------------------------- */

#define SAMPLE_BITS 16

/* Sample s of 2^SAMPLE_BITS: the middle of its part of the circle. */
static uint64_t sample_pos(uint64_t s)
{
	return (s << (64 - SAMPLE_BITS)) | ((uint64_t)1 << (63 - SAMPLE_BITS));
}

static const hr_node *owner_at(const hr_ring *ring, hr_view view, uint64_t pos)
{
	const struct ring_node *rn;

	if (!ring)
		return NULL;
	rn = view_owner(ring, &ring->views[view], pos);
	return rn ? &rn->pub : NULL;
}

static bool same_id(const hr_node *x, const hr_node *y)
{
	return x == y || (x && y && strcmp(x->id, y->id) == 0);
}

/* Totals of the sample: its moved positions as (old, new) pairs. */
static int sample_totals(const hr_ring *a, const hr_ring *b, hr_view view,
			 hr_arc_total **out, size_t *n)
{
	hr_arc_total *t = malloc(((size_t)1 << SAMPLE_BITS) * sizeof *t);
	size_t m = 0;

	*n = 0;
	if (!t)
		return HR_ENOMEM;
	for (uint64_t s = 0; s < (1u << SAMPLE_BITS); s++) {
		const hr_node *x = owner_at(a, view, sample_pos(s));
		const hr_node *y = owner_at(b, view, sample_pos(s));

		if (!same_id(x, y))
			t[m++] = (hr_arc_total){ x, y, 0, 1 };
	}
	qsort(t, m, sizeof *t, hr__rdv_total_cmp);
	for (size_t i = 0; i < m;) {
		size_t j = i;

		while (j < m && hr__rdv_total_cmp(&t[i], &t[j]) == 0)
			j++;
		t[*n] = (hr_arc_total){ t[i].old_node, t[i].new_node, 0,
					ldexp((double)(j - i), -SAMPLE_BITS) };
		(*n)++;
		i = j;
	}
	if (!*n) {
		free(t);
		t = NULL;
	}
	*out = t;
	return HR_OK;
}

/* ---- the two ------------------------------------------------------------------ */

double hr__scores_moved_share(const hr_ring *a, const hr_ring *b, hr_view view)
{
	struct rdv_pair *u;
	size_t n;
	double wa, wb, moved;

	if (!analytic(a, b, view)) {
		size_t k = 0;

		for (uint64_t s = 0; s < (1u << SAMPLE_BITS); s++)
			k += !same_id(owner_at(a, view, sample_pos(s)),
				      owner_at(b, view, sample_pos(s)));
		return ldexp((double)k, -SAMPLE_BITS);
	}
	u = merge(a, b, view, &n, &wa, &wb);
	if (!u)
		return NAN;
	moved = hr__rdv_moved(u, n, wa, wb);
	free(u);
	return moved;
}

int hr__scores_totals(const hr_ring *a, const hr_ring *b, hr_view view,
		      hr_arc_total **out, size_t *n)
{
	struct rdv_pair *u;
	size_t nu;
	double wa, wb;
	int rc;

	*out = NULL;
	*n = 0;
	if (!analytic(a, b, view))
		return sample_totals(a, b, view, out, n);
	u = merge(a, b, view, &nu, &wa, &wb);
	if (!u)
		return HR_ENOMEM;
	rc = hr__rdv_totals(u, nu, wa, wb, out, n);
	free(u);
	return rc;
}
