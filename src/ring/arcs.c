/* SPDX-License-Identifier: MIT */
/*
 * arcs.c - measuring the circle (docs/placement.md sections 6 and 12): the
 * share of each node of one view, and the one walk over two views that
 * finds the arcs whose owner differs, which hr_ring_moved_share() sums and
 * hr_diff_new() (diff.c) lists.  Points are named as view.h names them,
 * VIEW_END past the last one (no wrap): the same code walks every layout
 * of points.
 */
#include "arcs.h"

#include "arc_sum.h"
#include "ring.h"
#include "ring_impl.h"
#include "ring_match.h"
#include "scores_moved.h"

#include <stdlib.h>
#include <string.h>

/* ---- one view's shares --------------------------------------------------- */

int hr_ring_node_shares(const hr_ring *ring, hr_view view, double *out,
			size_t n)
{
	size_t count = hr_ring_node_count(ring);

	if (!hr__valid_view(view))
		return HR_EINVAL;
	if (!count || !out || n < count)
		return (int)count;
	if (!ring->views[view].npoints)
		memset(out, 0, count * sizeof *out);
	else
		hr__view_shares(&ring->views[view], out, count);
	return (int)count;
}

/* ---- two views: where owners differ -------------------------------------- */

struct walk {
	const hr_ring *a, *b;
	const struct view *va, *vb;
	const uint32_t *map;	/* a's slots to b's; NULL: compare ids */
	hr__moved_fn fn;
	void *userdata;
	/* The arc found last, told once it cannot grow. */
	bool open;
	uint64_t first, last;
	uint32_t na, nb;
	/* The slots of the first points of a and b: the owners past their
	 * last ones. */
	uint32_t wrap_a, wrap_b;
};

/* The owners at points ia of a and ib of b (VIEW_END: the wrap). */
static inline uint32_t owner_a(const struct walk *w, size_t ia)
{
	return ia == VIEW_END ? w->wrap_a : (uint32_t)view_slot(w->va, ia);
}

static inline uint32_t owner_b(const struct walk *w, size_t ib)
{
	return ib == VIEW_END ? w->wrap_b : (uint32_t)view_slot(w->vb, ib);
}

static inline bool same_owner(const struct walk *w, uint32_t na, uint32_t nb)
{
	if (__builtin_expect(w->map != NULL, 1))
		return w->map[na] == nb;
	return strcmp(w->a->nodes[na].pub.id, w->b->nodes[nb].pub.id) == 0;
}

/* The positions x .. e moved from na to nb: joined to the open arc when it
 * ends at x - 1 with the same owners. */
static void moved(struct walk *w, uint64_t x, uint64_t e, uint32_t na,
		  uint32_t nb)
{
	if (w->open && x != 0 && w->last == x - 1 && w->na == na && w->nb == nb) {
		w->last = e;
		return;
	}
	if (w->open)
		w->fn(w->userdata, w->first, w->last, w->na, w->nb);
	w->open = true;
	w->first = x;
	w->last = e;
	w->na = na;
	w->nb = nb;
}

/*
 * The moved positions in [lo, hi], both views not empty.  Inside one
 * interval [x, e] between consecutive positions of both views each has one
 * owner, the node of its first point at or after x.
 */
static void walk_span(struct walk *w, uint64_t lo, uint64_t hi)
{
	const struct view *va = w->va, *vb = w->vb;
	size_t ia = view_lower(va, lo), ib = view_lower(vb, lo);
	uint64_t x = lo;

	for (;;) {
		size_t run = w->map && ia != VIEW_END && ib != VIEW_END ?
			view_same_run(va, ia, vb, ib, hi, w->map) : 0;
		uint32_t na, nb;
		uint64_t e = hi;

		/* Points are indices where view_same_run() runs. */
		if (run) {
			ia += run;
			ib += run;
			x = view_pos(va, ia - 1) + 1;
			ia = ia == va->npoints ? VIEW_END : ia;
			ib = ib == vb->npoints ? VIEW_END : ib;
		}
		na = owner_a(w, ia);
		nb = owner_b(w, ib);

		/* Long runs of equal points in rings a few changes apart: the
		 * interval up to a shared point has not moved. */
		while (ia != VIEW_END && ib != VIEW_END &&
		       view_pos(va, ia) == view_pos(vb, ib) && view_pos(va, ia) < hi &&
		       same_owner(w, na, nb)) {
			x = view_pos(va, ia) + 1;
			do
				ia = view_after(va, ia);
			while (ia != VIEW_END && view_pos(va, ia) < x);
			while (ib != VIEW_END && view_pos(vb, ib) < x)
				ib = view_after(vb, ib);
			na = owner_a(w, ia);
			nb = owner_b(w, ib);
		}
		if (ia != VIEW_END && view_pos(va, ia) < e)
			e = view_pos(va, ia);
		if (ib != VIEW_END && view_pos(vb, ib) < e)
			e = view_pos(vb, ib);
		if (!same_owner(w, na, nb))
			moved(w, x, e, na, nb);
		if (e == hi)
			return;
		x = e + 1;
		while (ia != VIEW_END && view_pos(va, ia) < x)
			ia = view_after(va, ia);
		while (ib != VIEW_END && view_pos(vb, ib) < x)
			ib = view_after(vb, ib);
	}
}

/* One view empty: every position moved, from or to nobody. */
static void walk_one(struct walk *w, const hr_ring *r, const struct view *v,
		     bool from_v)
{
	uint32_t wrap = (uint32_t)view_slot(v, view_first(v));
	uint64_t x = 0;
	size_t i = view_lower(v, 0);

	for (;;) {
		uint32_t nd = i == VIEW_END ? wrap : (uint32_t)view_slot(v, i);
		uint64_t e = i == VIEW_END ? UINT64_MAX : view_pos(v, i);

		moved(w, x, e, from_v ? nd : HR__NO_OWNER,
		      from_v ? HR__NO_OWNER : nd);
		if (e == UINT64_MAX)
			return;
		x = e + 1;
		while (i != VIEW_END && view_pos(v, i) < x)
			i = view_after(v, i);
	}
}

/* An interval [lo, hi] of positions. */
struct span {
	uint64_t lo, hi;
};

_Static_assert(sizeof(struct span) == sizeof(struct point),
	       "spans sort as records");

/*
 * Where owners can differ at all, for rings placed the same way with
 * point_positions.  A position whose next point in both views belongs to a
 * node with the same points in both (same id and vnodes, in the view in
 * both) has the same owner in both; so owners can only differ on the arcs
 * leading to points of the other nodes.  Returns those arcs, sorted and
 * merged, in *out (count in *n); false when there are too many for this to
 * pay or memory is short.
 */
static bool moved_spans(const hr_ring *a, const hr_ring *b, hr_view view,
			const uint32_t *map, struct span **out, size_t *n)
{
	const struct view *vs[2] = { &a->views[view], &b->views[view] };
	const hr_ring *rs[2] = { a, b };
	size_t changed = 0, cap, k = 0, m = 0;
	struct span *sp;
	bool *same;

	same = calloc(b->nnodes ? b->nnodes : 1, sizeof *same);
	if (!same)
		return false;
	for (size_t i = 0; i < a->nnodes; i++) {
		const struct ring_node *ra = &a->nodes[i];

		if (map[i] != NO_NODE && hr__in_view(ra->pub.state, view) &&
		    hr__in_view(b->nodes[map[i]].pub.state, view) &&
		    ra->vnodes == b->nodes[map[i]].vnodes)
			same[map[i]] = true;
		else if (hr__in_view(ra->pub.state, view))
			changed += ra->vnodes;
	}
	for (size_t j = 0; j < b->nnodes; j++)
		if (!same[j] && hr__in_view(b->nodes[j].pub.state, view))
			changed += b->nodes[j].vnodes;
	if (changed > (vs[0]->npoints + vs[1]->npoints) / 16) {
		free(same);
		return false;
	}
	cap = 2 * changed + 1;
	sp = malloc(2 * cap * sizeof *sp);	/* the sort's scratch too */
	for (int r = 0; sp && r < 2; r++) {
		const struct view *v = vs[r];

		for (size_t i = 0; i < rs[r]->nnodes; i++) {
			const struct ring_node *rn = &rs[r]->nodes[i];
			bool kept = r == 0 ? map[i] != NO_NODE && same[map[i]] :
				same[i];
			struct point p[64];

			if (kept || !hr__in_view(rn->pub.state, view))
				continue;
			for (unsigned from = 0; from < rn->vnodes; from += 64) {
				unsigned to = from + 64 < rn->vnodes ? from + 64 :
					rn->vnodes;

				ring_points_of(rs[r], (uint32_t)i, from, to, p);
				for (size_t q = 0; q < to - from; q++) {
					uint64_t before, last;

					if (view_pos_before(v, p[q].pos, &before)) {
						sp[k++] = (struct span){ before + 1, p[q].pos };
						continue;
					}
					/* The first point also owns the wrap. */
					sp[k++] = (struct span){ 0, p[q].pos };
					last = view_last_pos(v);
					if (last < UINT64_MAX)
						sp[k++] = (struct span){ last + 1, UINT64_MAX };
				}
			}
		}
	}
	free(same);
	if (!sp)
		return false;
	hr__sort_records(sp, sp + cap, k);
	for (size_t i = 0; i < k; i++) {
		if (m && (sp[m - 1].hi == UINT64_MAX || sp[i].lo <= sp[m - 1].hi + 1)) {
			if (sp[i].hi > sp[m - 1].hi)
				sp[m - 1].hi = sp[i].hi;
		} else {
			sp[m++] = sp[i];
		}
	}
	*out = sp;
	*n = m;
	return true;
}

void hr__arcs_moved(const hr_ring *a, const hr_ring *b, hr_view view,
		    hr__moved_fn fn, void *userdata)
{
	const struct view *va = a ? &a->views[view] : NULL;
	const struct view *vb = b ? &b->views[view] : NULL;
	struct walk w = { a, b, va, vb, NULL, fn, userdata, false, 0, 0, 0, 0, 0, 0 };
	struct span *sp = NULL;
	uint32_t *map = NULL;
	size_t n = 0;

	if (!va || !va->npoints) {
		if (vb && vb->npoints)
			walk_one(&w, b, vb, false);
	} else if (!vb || !vb->npoints) {
		walk_one(&w, a, va, true);
	} else {
		w.wrap_a = (uint32_t)view_slot(va, view_first(va));
		w.wrap_b = (uint32_t)view_slot(vb, view_first(vb));
		w.map = map = hr__ring_slot_map(a, b);
		/* Placed the same way: look only where points differ. */
		if (map && a->pl == b->pl && a->pl->by_index &&
		    a->place.hash == b->place.hash && moved_spans(a, b, view, map, &sp, &n)) {
			for (size_t i = 0; i < n; i++)
				walk_span(&w, sp[i].lo, sp[i].hi);
		} else {
			walk_span(&w, 0, UINT64_MAX);
		}
	}
	if (w.open)
		fn(userdata, w.first, w.last, w.na, w.nb);
	free(sp);
	free(map);
}

/* ---- the moved share ----------------------------------------------------- */

static void sum_moved(void *userdata, uint64_t first, uint64_t last,
		      uint32_t old_slot, uint32_t new_slot)
{
	hr__arc_add_span(userdata, first, last);
}

double hr_ring_moved_share(const hr_ring *a, const hr_ring *b, hr_view view)
{
	hr__arc_sum sum = { 0, 0 };
	size_t na = hr__ring_view_points(a, view), nb = hr__ring_view_points(b, view);

	if (!hr__valid_view(view))
		return HR_EINVAL;
	/* One view empty: the whole circle moved, known without a walk (the
	 * first ring a client builds, as large as it may be). */
	if (!na != !nb)
		return 1.0;
	/* Rendezvous keys are not on arcs (docs/placement.md section 15). */
	if (hr__ring_rendezvous(a) || hr__ring_rendezvous(b))
		return hr__scores_moved_share(a, b, view);
	hr__arcs_moved(a, b, view, sum_moved, &sum);
	return hr__arc_share(&sum);
}

/* Whether the write and read views of `r` (NULL: empty) are one. */
static bool views_same(const hr_ring *r)
{
	return !r || hr__ring_views_shared(r);
}

void hr__ring_moved_shares(const hr_ring *a, const hr_ring *b, double *write,
			   double *read)
{
	*write = hr_ring_moved_share(a, b, HR_VIEW_WRITE);
	*read = views_same(a) && views_same(b) ? *write :
		hr_ring_moved_share(a, b, HR_VIEW_READ);
}
