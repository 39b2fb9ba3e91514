/*
 * diff.c - which arcs of the circle changed owner between two rings, for
 * rebalancers: the arcs in ring order and their totals per pair of nodes.
 */
#include "diff.h"
#include "ring.h"

#include "error.h"

#include <math.h>
#include <stdbool.h>
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

/* Adds the length of arc `a`: end - start, an end of 0 meaning 2^64 (so
 * the whole circle is 2^64 - 1 plus 1). */
static void sum_add(hr__arc_sum *s, const hr_arc *a)
{
	hr__arc_add(s, a->end - a->start - 1);
	hr__arc_add(s, 1);
}

/* One view of one ring, walked in position order. */
struct side {
	const hr_ring *ring;
	hr_view view;
	size_t n, i;		/* points, next point at or after x */
};

static uint64_t side_pos(const struct side *s, size_t i)
{
	uint64_t pos;
	size_t node;

	hr__ring_view_point(s->ring, s->view, i, &pos, &node);
	return pos;
}

/* The owner of the interval starting at x: the node of point i, or of
 * point 0 once past the last one; NULL for an empty view. */
static const hr_node *side_owner(const struct side *s)
{
	uint64_t pos;
	size_t node;

	if (!s->n)
		return NULL;
	hr__ring_view_point(s->ring, s->view, s->i < s->n ? s->i : 0, &pos, &node);
	return hr_ring_node(s->ring, node);
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

/* Appends [x, e] (inclusive) or extends the last arc when it ends at x
 * with the same owners. */
static void add_arc(hr_diff *d, uint64_t x, uint64_t e, const hr_node *o,
		    const hr_node *n)
{
	hr_arc *last = d->narcs ? &d->arcs[d->narcs - 1] : NULL;

	if (last && last->end == x && x != 0 && !cmp_id(last->old_node, o) &&
	    !cmp_id(last->new_node, n)) {
		last->end = e + 1;
		return;
	}
	d->arcs[d->narcs++] = (hr_arc){ x, e + 1, o, n };
}

static int walk(hr_diff *d, struct side *a, struct side *b)
{
	uint64_t x = 0;

	d->arcs = malloc((a->n + b->n + 1) * sizeof *d->arcs);
	if (!d->arcs)
		return HR_ENOMEM;
	if (!a->n && !b->n)
		return HR_OK;
	/* Inside [x, e], e the next point of either ring, each ring has one
	 * owner: that of its first point at or after x. */
	for (;;) {
		const hr_node *oa = side_owner(a), *ob = side_owner(b);
		uint64_t e = UINT64_MAX;

		if (a->i < a->n && side_pos(a, a->i) < e)
			e = side_pos(a, a->i);
		if (b->i < b->n && side_pos(b, b->i) < e)
			e = side_pos(b, b->i);
		if (cmp_id(oa, ob))
			add_arc(d, x, e, oa, ob);
		if (e == UINT64_MAX)
			break;
		x = e + 1;
		while (a->i < a->n && side_pos(a, a->i) < x)
			a->i++;
		while (b->i < b->n && side_pos(b, b->i) < x)
			b->i++;
	}
	return HR_OK;
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

int hr_ring_diff(const hr_ring *old_ring, const hr_ring *new_ring,
		 hr_view view, hr_diff **out, hr_error *err)
{
	struct side a = { old_ring, view, 0, 0 }, b = { new_ring, view, 0, 0 };
	hr_diff *d;
	int rc;

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
	a.n = hr__ring_view_points(old_ring, view);
	b.n = hr__ring_view_points(new_ring, view);
	rc = walk(d, &a, &b);
	if (!rc)
		rc = make_totals(d);
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
