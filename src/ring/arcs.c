/*
 * arcs.c - measuring the circle (docs/placement.md sections 6 and 12): the
 * share of each node of one view, and the one walk over two views that
 * finds the arcs whose owner differs, which hr_ring_moved_share() sums and
 * hr_diff_new() (diff.c) lists.
 */
#include "arcs.h"

#include "ring_impl.h"
#include "ring_match.h"
#include "ring_view.h"

#include <stdlib.h>
#include <string.h>

/* ---- walking a view ------------------------------------------------------
 * Points named as view_find() names them, and END past the last one (no
 * wrap): the same code walks flat and paged views. */

#define END PAGED_END

/* The first point at or after `pos`, or END. */
static size_t at_lower(const struct view *v, uint64_t pos)
{
	size_t i;

	if (v->pages)
		return paged_lower(v, pos);
	i = view_lower_bound(v, pos);
	return i == v->npoints ? END : i;
}

/* The point after `at` (not END), or END. */
static size_t at_next(const struct view *v, size_t at)
{
	if (v->pages)
		return paged_after(v, at);
	return at + 1 == v->npoints ? END : at + 1;
}

/* The last position of a view (not empty). */
static uint64_t last_pos(const struct view *v)
{
	if (!v->pages)
		return v->pos[v->npoints - 1];
	for (size_t p = v->npages; p-- > 0;)
		if (v->pages[p]->n)
			return v->pages[p]->pos[v->pages[p]->n - 1];
	return 0;	/* not reached: the view has a point */
}

/* The position of the last point below `pos`; false when none is (the
 * view is not empty). */
static bool pos_before(const struct view *v, uint64_t pos, uint64_t *out)
{
	size_t p, i;

	if (!v->pages) {
		i = view_lower_bound(v, pos);
		if (i)
			*out = v->pos[i - 1];
		return i != 0;
	}
	p = paged_page(v, pos);
	i = paged_scan(v, v->pages[p], pos);
	if (i) {
		*out = v->pages[p]->pos[i - 1];
		return true;
	}
	while (p-- > 0) {
		if (v->pages[p]->n) {
			*out = v->pages[p]->pos[v->pages[p]->n - 1];
			return true;
		}
	}
	return false;
}

/* ---- one view's shares --------------------------------------------------- */

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
	prev = last_pos(v);
	if (v->pages) {
		for (size_t p = 0; p < v->npages; p++) {
			const struct vpage *pg = v->pages[p];

			for (size_t i = 0; i < pg->n; i++) {
				add_arc_at(out, ring->handle_slot[pg->node[i]], pg->pos[i] - prev);
				prev = pg->pos[i];
			}
		}
	} else if (v->wide) {
		SUM_ARCS(uint32_t);
	} else {
		SUM_ARCS(uint16_t);
	}
	for (size_t j = 0; j < count; j++) {
		uint64_t s;

		memcpy(&s, &out[j], sizeof s);
		any = any || s;
		out[j] = ldexp((double)s, -64);	/* rounded once */
	}
	/* One node owns everything (all points at one position, or every
	 * other arc empty): the node of point 0, whose arc is the circle. */
	if (!any)
		out[view_slot(ring, v, view_first(v))] = 1.0;
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
	/* The slots of the first points of a and b: the owners past their
	 * last ones. */
	uint32_t wrap_a, wrap_b;
};

/* The owners at points ia of a and ib of b (END: the wrap). */
static inline uint32_t owner_a(const struct walk *w, size_t ia)
{
	return ia == END ? w->wrap_a : (uint32_t)view_slot(w->a, w->va, ia);
}

static inline uint32_t owner_b(const struct walk *w, size_t ib)
{
	return ib == END ? w->wrap_b : (uint32_t)view_slot(w->b, w->vb, ib);
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
 * From points ia of a and ib of b on, how many pairs in a row sit at one
 * position below `hi`, with one owner, and each alone at its position
 * (the padding ends both arrays, so looking one past is safe): the arcs up
 * to them have not moved.  Two-byte node numbers and a slot map only, the
 * rings of up to 65,536 nodes, where this loop is most of a walk.
 */
static size_t same_run(const struct walk *w, size_t ia, size_t ib, uint64_t hi)
{
	const struct view *va = w->va, *vb = w->vb;
	const uint64_t *pa, *pb;
	const uint16_t *da, *db;
	size_t n, k = 0;

	/* Paged views are wide. */
	if (va->wide || vb->wide || !w->map || ia == END || ib == END)
		return 0;
	pa = va->pos + ia;
	pb = vb->pos + ib;
	da = (const uint16_t *)va->node + ia;
	db = (const uint16_t *)vb->node + ib;
	n = va->npoints - ia < vb->npoints - ib ? va->npoints - ia : vb->npoints - ib;
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
	size_t ia = at_lower(va, lo), ib = at_lower(vb, lo);
	uint64_t x = lo;

	for (;;) {
		size_t run = same_run(w, ia, ib, hi);
		uint32_t na, nb;
		uint64_t e = hi;

		if (run) {
			ia += run;
			ib += run;
			x = va->pos[ia - 1] + 1;
			ia = ia == va->npoints ? END : ia;
			ib = ib == vb->npoints ? END : ib;
		}
		na = owner_a(w, ia);
		nb = owner_b(w, ib);

		/* Long runs of equal points in rings a few changes apart: the
		 * interval up to a shared point has not moved. */
		while (ia != END && ib != END &&
		       view_pos(va, ia) == view_pos(vb, ib) && view_pos(va, ia) < hi &&
		       same_owner(w, na, nb)) {
			x = view_pos(va, ia) + 1;
			do
				ia = at_next(va, ia);
			while (ia != END && view_pos(va, ia) < x);
			while (ib != END && view_pos(vb, ib) < x)
				ib = at_next(vb, ib);
			na = owner_a(w, ia);
			nb = owner_b(w, ib);
		}
		if (ia != END && view_pos(va, ia) < e)
			e = view_pos(va, ia);
		if (ib != END && view_pos(vb, ib) < e)
			e = view_pos(vb, ib);
		if (!same_owner(w, na, nb))
			moved(w, x, e, na, nb);
		if (e == hi)
			return;
		x = e + 1;
		while (ia != END && view_pos(va, ia) < x)
			ia = at_next(va, ia);
		while (ib != END && view_pos(vb, ib) < x)
			ib = at_next(vb, ib);
	}
}

/* One view empty: every position moved, from or to nobody. */
static void walk_one(struct walk *w, const hr_ring *r, const struct view *v,
		     bool from_v)
{
	uint32_t wrap = (uint32_t)view_slot(r, v, view_first(v));
	uint64_t x = 0;
	size_t i = at_lower(v, 0);

	for (;;) {
		uint32_t nd = i == END ? wrap : (uint32_t)view_slot(r, v, i);
		uint64_t e = i == END ? UINT64_MAX : view_pos(v, i);

		moved(w, x, e, from_v ? nd : HR__NO_OWNER,
		      from_v ? HR__NO_OWNER : nd);
		if (e == UINT64_MAX)
			return;
		x = e + 1;
		while (i != END && view_pos(v, i) < x)
			i = at_next(v, i);
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
					uint64_t before, last;

					if (pos_before(v, p[q].pos, &before)) {
						sp[k++] = (struct span){ before + 1, p[q].pos };
						continue;
					}
					/* The first point also owns the wrap. */
					sp[k++] = (struct span){ 0, p[q].pos };
					last = last_pos(v);
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
		w.wrap_a = (uint32_t)view_slot(a, va, view_first(va));
		w.wrap_b = (uint32_t)view_slot(b, vb, view_first(vb));
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
