/*
 * arcs.c - measuring the circle (docs/placement.md sections 6 and 12): the
 * share of each node of one view, and the one walk over two views that
 * finds the arcs whose owner differs, which hr_ring_moved_share() sums and
 * hr_ring_diff() (diff.c) lists.
 */
#include "arcs.h"

#include "ring_impl.h"
#include "ring_view.h"

#include <stdlib.h>
#include <string.h>

/* ---- one view's shares --------------------------------------------------- */

/* A 128-bit sum of arc lengths, as a share of 2^64. */
double hr_ring_node_share(const hr_ring *ring, const hr_node *node,
			  hr_view view)
{
	size_t slot = ring_slot(ring, node);
	const struct view *v;
	hr__arc_sum sum = { 0, 0 };

	if (slot == SIZE_MAX || !hr__valid_view(view))
		return 0;
	v = &ring->views[view];
	if (!v->npoints)
		return 0;
	if (v->rdv)
		return hr__in_view(node->state, view) ? hr__rdv_share(v, node->weight) : 0;
	/* All points at one position: the first owns the whole circle. */
	if (v->pos[0] == v->pos[v->npoints - 1])
		return view_node(v, 0) == slot ? 1.0 : 0.0;
	/* Point i owns the arc (pos[i - 1], pos[i]]; point 0 wraps. */
	for (size_t i = 0; i < v->npoints; i++) {
		uint64_t prev = v->pos[i ? i - 1 : v->npoints - 1];

		if (view_node(v, i) == slot)
			hr__arc_add(&sum, v->pos[i] - prev);
	}
	return hr__arc_share(&sum);
}

/*
 * The arcs of every node summed in one pass, in `out` itself (a sum is as
 * wide as a double) modulo 2^64: no node's sum reaches 2^64 unless it owns
 * the whole circle, which leaves every sum 0, so the sums are exact.
 */
static inline void add_arc_at(double *out, uint32_t node, uint64_t len)
{
	uint64_t s;

	memcpy(&s, &out[node], sizeof s);
	s += len;
	memcpy(&out[node], &s, sizeof s);
}

#define SUM_ARCS(type) do {						\
		const type *nd = v->node;					\
									\
		for (size_t i = 0; i < v->npoints; i++) {			\
			add_arc_at(out, nd[i], v->pos[i] - prev);		\
			prev = v->pos[i];					\
		}							\
	} while (0)

size_t hr_ring_node_shares(const hr_ring *ring, hr_view view, double *out,
			   size_t n)
{
	size_t count = hr_ring_node_count(ring);
	const struct view *v;
	bool any = false;
	uint64_t prev;

	if (!count || !out || n < count)
		return count;
	memset(out, 0, count * sizeof *out);	/* 0.0 and sums of 0 alike */
	if (!hr__valid_view(view) || !ring->views[view].npoints)
		return count;
	v = &ring->views[view];
	if (v->rdv) {
		hr__rdv_shares(ring, view, out);
		return count;
	}
	prev = v->pos[v->npoints - 1];
	if (v->wide)
		SUM_ARCS(uint32_t);
	else
		SUM_ARCS(uint16_t);
	for (size_t j = 0; j < count; j++) {
		uint64_t s;

		memcpy(&s, &out[j], sizeof s);
		any = any || s;
		out[j] = ldexp((double)s, -64);	/* rounded once */
	}
	/* One node owns everything (all points at one position, or every
	 * other arc empty): the node of point 0, whose arc is the circle. */
	if (!any)
		out[view_node(v, 0)] = 1.0;
	return count;
}

#undef SUM_ARCS

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
};

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
 * From points ia of a and ib of b on, how many pairs in a row sit at one
 * position below `hi`, with one owner, and each alone at its position
 * (the padding ends both arrays, so looking one past is safe): the arcs up
 * to them have not moved.  Two-byte node numbers and a slot map only, the
 * rings of up to 65,536 nodes, where this loop is most of a walk.
 */
static size_t same_run(const struct walk *w, size_t ia, size_t ib, uint64_t hi)
{
	const struct view *va = w->va, *vb = w->vb;
	const uint64_t *pa = va->pos + ia, *pb = vb->pos + ib;
	const uint16_t *da = (const uint16_t *)va->node + ia;
	const uint16_t *db = (const uint16_t *)vb->node + ib;
	size_t n = va->npoints - ia < vb->npoints - ib ? va->npoints - ia :
		vb->npoints - ib, k = 0;

	if (va->wide || vb->wide || !w->map)
		return 0;
	while (k < n && pa[k] == pb[k] && pa[k] < hi && w->map[da[k]] == db[k] &&
	       pa[k + 1] != pa[k] && pb[k + 1] != pb[k])
		k++;
	return k;
}

/*
 * The moved positions in [lo, hi], both views not empty.  Inside one
 * interval [x, e] between consecutive positions of both views each has one
 * owner, the node of its first point at or after x.
 */
static void walk_span(struct walk *w, uint64_t lo, uint64_t hi)
{
	const struct view *va = w->va, *vb = w->vb;
	size_t ia = view_lower_bound(va, lo), ib = view_lower_bound(vb, lo);
	uint64_t x = lo;

	for (;;) {
		size_t run = same_run(w, ia, ib, hi);
		uint32_t na, nb;
		uint64_t e = hi;

		if (run) {
			ia += run;
			ib += run;
			x = va->pos[ia - 1] + 1;
		}
		na = view_node(va, ia < va->npoints ? ia : 0);
		nb = view_node(vb, ib < vb->npoints ? ib : 0);

		/* Long runs of equal points in rings a few changes apart: the
		 * interval up to a shared point has not moved. */
		while (ia < va->npoints && ib < vb->npoints &&
		       va->pos[ia] == vb->pos[ib] && va->pos[ia] < hi &&
		       same_owner(w, na, nb)) {
			x = va->pos[ia] + 1;
			do
				ia++;
			while (ia < va->npoints && va->pos[ia] < x);
			while (ib < vb->npoints && vb->pos[ib] < x)
				ib++;
			na = view_node(va, ia < va->npoints ? ia : 0);
			nb = view_node(vb, ib < vb->npoints ? ib : 0);
		}
		if (ia < va->npoints && va->pos[ia] < e)
			e = va->pos[ia];
		if (ib < vb->npoints && vb->pos[ib] < e)
			e = vb->pos[ib];
		if (!same_owner(w, na, nb))
			moved(w, x, e, na, nb);
		if (e == hi)
			return;
		x = e + 1;
		while (ia < va->npoints && va->pos[ia] < x)
			ia++;
		while (ib < vb->npoints && vb->pos[ib] < x)
			ib++;
	}
}

/* One view empty: every position moved, from or to nobody. */
static void walk_one(struct walk *w, const struct view *v, bool from_v)
{
	uint64_t x = 0;
	size_t i = 0;

	for (;;) {
		uint32_t nd = view_node(v, i < v->npoints ? i : 0);
		uint64_t e = i < v->npoints ? v->pos[i] : UINT64_MAX;

		moved(w, x, e, from_v ? nd : HR__NO_OWNER,
		      from_v ? HR__NO_OWNER : nd);
		if (e == UINT64_MAX)
			return;
		x = e + 1;
		while (i < v->npoints && v->pos[i] < x)
			i++;
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

				rs[r]->pl->point_positions(rs[r], (uint32_t)i, from,
							   to, p);
				for (size_t q = 0; q < to - from; q++) {
					size_t at = view_lower_bound(v, p[q].pos);

					if (at > 0) {
						sp[k++] = (struct span){ v->pos[at - 1] + 1,
									 p[q].pos };
						continue;
					}
					/* The first point also owns the wrap. */
					sp[k++] = (struct span){ 0, p[q].pos };
					if (v->pos[v->npoints - 1] < UINT64_MAX)
						sp[k++] = (struct span){
							v->pos[v->npoints - 1] + 1,
							UINT64_MAX };
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
	struct walk w = { a, b, va, vb, NULL, fn, userdata, false, 0, 0, 0, 0 };
	struct span *sp = NULL;
	uint32_t *map = NULL;
	size_t n = 0;

	if (!va || !va->npoints) {
		if (vb && vb->npoints)
			walk_one(&w, vb, false);
	} else if (!vb || !vb->npoints) {
		walk_one(&w, va, true);
	} else {
		w.map = map = hr__ring_slot_map(a, b);
		/* Placed the same way: look only where points differ. */
		if (map && a->pl == b->pl && a->pl->point_positions &&
		    a->hash == b->hash && moved_spans(a, b, view, map, &sp, &n)) {
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
		return 0;
	/* One view empty: the whole circle moved, known without a walk (the
	 * first ring a client builds, as large as it may be). */
	if (!na != !nb)
		return 1.0;
	/* Rendezvous keys are not on arcs (docs/placement.md section 15). */
	if (hr__ring_rendezvous(a) || hr__ring_rendezvous(b))
		return hr__rdv_moved_share(a, b, view);
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
