/* SPDX-License-Identifier: MIT */
/*
 * diff.c - which arcs of the circle changed owner between two rings, for
 * rebalancers: the arcs of hr__arcs_moved() (arcs.c) in ring order, and
 * their totals per pair of nodes.
 */
#include "diff.h"

#include "arc_sum.h"
#include "arcs.h"
#include "error.h"
#include "ring.h"
#include "scores_moved.h"

#include <stdlib.h>
#include <string.h>

struct hr_diff {
	hr_ring *old_ring, *new_ring;	/* held: the arcs point into them */
	hr_arc *arcs;
	size_t narcs;
	hr_arc_total *totals;
	size_t ntotals;
	double moved;
};

/* Adds the length of arc `a`: end - start, an end of 0 meaning 2^64. */
static void sum_add(hr__arc_sum *s, const hr_arc *a)
{
	hr__arc_add_span(s, a->start, a->end - 1);
}

static int cmp_id(const hr_node *a, const hr_node *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a->id, b->id);
}

static int cmp_pair(const void *x, const void *y)
{
	const hr_arc *a = *(const hr_arc *const *)x;
	const hr_arc *b = *(const hr_arc *const *)y;
	int c = cmp_id(a->old_node, b->old_node);

	return c ? c : cmp_id(a->new_node, b->new_node);
}

/* An arc of hr__arcs_moved(), into the room made for all of them. */
static void add_arc(void *userdata, uint64_t first, uint64_t last,
		    uint32_t old_slot, uint32_t new_slot)
{
	hr_diff *d = userdata;

	d->arcs[d->narcs++] = (hr_arc){
		first, last + 1,
		old_slot == HR__NO_OWNER ? NULL : hr_ring_node(d->old_ring, old_slot),
		new_slot == HR__NO_OWNER ? NULL : hr_ring_node(d->new_ring, new_slot),
	};
}

static int make_totals(hr_diff *d)
{
	const hr_arc **by_pair;
	hr__arc_sum all = { 0, 0 };

	if (!d->narcs)
		return HR_OK;
	by_pair = malloc(d->narcs * sizeof *by_pair);
	d->totals = malloc(d->narcs * sizeof *d->totals);
	if (!by_pair || !d->totals) {
		free(by_pair);
		return HR_ENOMEM;
	}
	for (size_t i = 0; i < d->narcs; i++) {
		by_pair[i] = &d->arcs[i];
		sum_add(&all, &d->arcs[i]);
	}
	d->moved = hr__arc_share(&all);
	qsort(by_pair, d->narcs, sizeof *by_pair, cmp_pair);
	for (size_t i = 0; i < d->narcs;) {
		hr__arc_sum s = { 0, 0 };
		size_t j = i;

		while (j < d->narcs && cmp_pair(&by_pair[i], &by_pair[j]) == 0)
			sum_add(&s, by_pair[j++]);
		d->totals[d->ntotals++] = (hr_arc_total){
			by_pair[i]->old_node, by_pair[i]->new_node, j - i,
			hr__arc_share(&s)
		};
		i = j;
	}
	free(by_pair);
	return HR_OK;
}

int hr_diff_new(const hr_ring *old_ring, const hr_ring *new_ring,
		hr_view view, hr_diff **out, hr_error *err)
{
	hr_diff *d;
	size_t most;
	int rc = HR_ENOMEM;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "diff output pointer is NULL");
	*out = NULL;
	if (!hr__valid_view(view))
		return hr__error_set(err, HR_EINVAL, "unknown view %d", (int)view);
	d = calloc(1, sizeof *d);
	if (!d)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	/* A ring is immutable; only its reference count changes. */
	d->old_ring = hr_ring_retain((hr_ring *)old_ring);
	d->new_ring = hr_ring_retain((hr_ring *)new_ring);
	/* Rendezvous keys are not on arcs: totals alone (docs/placement.md
	 * section 15). */
	if (hr__ring_rendezvous(old_ring) || hr__ring_rendezvous(new_ring)) {
		rc = hr__scores_totals(old_ring, new_ring, view, &d->totals,
				       &d->ntotals);
		d->moved = hr_ring_moved_share(old_ring, new_ring, view);
		if (rc) {
			hr_diff_free(d);
			return hr__error_set(err, rc, "out of memory");
		}
		*out = d;
		return HR_OK;
	}
	most = hr__ring_view_points(old_ring, view) +
	       hr__ring_view_points(new_ring, view) + 1;
	d->arcs = malloc(most * sizeof *d->arcs);
	if (d->arcs) {
		hr__arcs_moved(old_ring, new_ring, view, add_arc, d);
		rc = make_totals(d);
	}
	if (rc) {
		hr_diff_free(d);
		return hr__error_set(err, rc, "out of memory");
	}
	*out = d;
	return HR_OK;
}

size_t hr_diff_arc_count(const hr_diff *diff)
{
	return diff ? diff->narcs : 0;
}

const hr_arc *hr_diff_arcs(const hr_diff *diff)
{
	return diff && diff->narcs ? diff->arcs : NULL;
}

size_t hr_diff_total_count(const hr_diff *diff)
{
	return diff ? diff->ntotals : 0;
}

const hr_arc_total *hr_diff_totals(const hr_diff *diff)
{
	return diff && diff->ntotals ? diff->totals : NULL;
}

double hr__diff_moved_share(const hr_diff *diff)
{
	return diff ? diff->moved : 0;
}

void hr_diff_free(hr_diff *diff)
{
	if (!diff)
		return;
	hr_ring_release(diff->old_ring);
	hr_ring_release(diff->new_ring);
	free(diff->arcs);
	free(diff->totals);
	free(diff);
}
