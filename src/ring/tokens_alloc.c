/* SPDX-License-Identifier: MIT */
/*
 * tokens_alloc.c - hr_tokens_allocate(): the tokens of a joining node,
 * chosen against the ring it sees (docs/placement.md section 16).
 *
 * Greedy water-filling.  A token at x inside the arc (start, p] of a
 * node's point p takes (start, x] from that node and nothing from anyone
 * else, so a join moves keys only to the joiner.  The donors are the
 * nodes most loaded against their fair share by weight (computed with the
 * joiner counted); taking from the m most loaded down to one level r, the
 * joiner ending at r as well, gives
 *
 *     r = (sum of the donors' loads) / (sum of their fair shares + the
 *          joiner's fair share),
 *
 * and more donors give a higher level (a smaller drop for each).  A take
 * larger than a donor's longest arc needs a second token, so the tokens
 * may not reach every donor's part: each m is tried and the one with the
 * smallest worst deviation from the fair share wins.  Tokens left over
 * spread the donors' takes over more of their arcs, cutting the longest
 * arcs down to one length (the donor keeps even arcs, which later joins
 * can split again), then halve the joiner's own longest arcs, which moves
 * nothing.
 *
 * The allocator is not part of the contract (its output, the tokens in
 * the records, is): it may improve between releases.
 */
#include "error.h"
#include "node.h"
#include "ring_impl.h"
#include "state.h"
#include "tokens.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One arc (start, start + len] of the view, owned by `node`. */
struct arc {
	uint64_t start;
	uint64_t len;
	uint32_t node;
};

/* A node of the view as a possible donor. */
struct donor {
	uint32_t node;
	double load;		/* share of the circle it owns now */
	double fair;		/* its fair share with the joiner in */
	double take;		/* what it gives the joiner */
	size_t first, narcs;	/* its arcs in the sorted array */
	size_t tokens;		/* tokens allotted to it */
};

#define TWO64 18446744073709551616.0

/* Arcs by node, each node's longest first, equal lengths by position. */
static int cmp_arc(const void *a, const void *b)
{
	const struct arc *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Donors by load over fair share, the highest first, ties by node. */
static int cmp_donor(const void *a, const void *b)
{
	const struct donor *x = a, *y = b;
	double rx = x->load / x->fair, ry = y->load / y->fair;

	if (rx != ry)
		return rx > ry ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/*
 * Cuts donor d's `tokens` longest arcs down to one length lambda so that
 * they give d->take in all (each keeps at least one position), writing one
 * token per arc cut into out and the joiner's new arc into own[].  Returns
 * the tokens written: arcs already shorter than lambda are not cut.
 */
static size_t cut_donor(const struct donor *d, const struct arc *arcs,
			uint64_t *out, struct arc *own)
{
	const struct arc *a = arcs + d->first;
	double want = d->take * TWO64, sum = 0, lambda = 1;
	size_t t = d->tokens, n = 0;

	/* lambda for the c longest arcs: (sum of their lengths - want) / c,
	 * valid when no longer than the c-th arc and no shorter than the
	 * next one. */
	for (size_t c = 1; c <= t; c++) {
		double l;

		sum += (double)a[c - 1].len;
		l = (sum - want) / (double)c;
		if (c == t || l >= (double)a[c].len) {
			lambda = l;
			break;
		}
	}
	if (lambda < 1)
		lambda = 1;
	for (size_t k = 0; k < t; k++) {
		double cut = (double)a[k].len - lambda;
		uint64_t c;

		if (cut < 1)
			continue;
		c = cut >= (double)(a[k].len - 1) ? a[k].len - 1 : (uint64_t)cut;
		if (c < 1)
			continue;
		out[n] = a[k].start + c;
		own[n] = (struct arc){ a[k].start, c, 0 };
		n++;
	}
	return n;
}

/* Tokens evenly spaced from a point of the id's hash: the first node's. */
static void spread_evenly(const hr_node *node, size_t ntokens, uint64_t *out)
{
	uint64_t base = XXH3_64bits(node->id, strlen(node->id));
	uint64_t step = UINT64_MAX / ntokens;

	for (size_t i = 0; i < ntokens; i++)
		out[i] = base + (uint64_t)i * step;
	qsort(out, ntokens, sizeof *out, hr__token_cmp);
}

/* The arcs of the write view without the joiner's points (`skip`): the
 * ring as it would be without it.  Returns their count (0: no point). */
static size_t view_arcs(const hr_ring *ring, uint32_t skip, struct arc *arcs)
{
	const struct view *v = &ring->views[HR_VIEW_WRITE];
	size_t n = 0, last = SIZE_MAX, i = view_first(v);

	for (size_t k = 0; k < v->npoints; k++, i = view_succ(v, i))
		if (view_slot(v, i) != skip)
			last = i;
	if (last == SIZE_MAX)
		return 0;
	i = view_first(v);
	for (size_t k = 0, prev = last; k < v->npoints; k++, i = view_succ(v, i)) {
		uint32_t node = (uint32_t)view_slot(v, i);
		uint64_t pos = view_pos(v, i), prev_pos = view_pos(v, prev);

		if (node == skip)
			continue;
		/* A point at its predecessor's position owns nothing. */
		if (pos != prev_pos || i == prev)
			arcs[n++] = (struct arc){
				prev_pos, i == prev ? UINT64_MAX : pos - prev_pos, node };
		prev = i;
	}
	return n;
}

/* The donors, loads and fair shares of the view's nodes but the joiner. */
static size_t view_donors(const hr_ring *ring, uint32_t skip,
			  const struct arc *arcs, size_t narcs, double w_new,
			  struct donor *d, double *fair_new)
{
	double total = w_new;
	size_t n = 0;

	for (size_t i = 0; i < ring->nnodes; i++)
		if (i != skip && hr__in_view(ring->nodes[i].pub.state, HR_VIEW_WRITE))
			total += ring->nodes[i].pub.weight;
	*fair_new = w_new / total;
	for (size_t k = 0; k < narcs; k++) {
		if (!n || d[n - 1].node != arcs[k].node) {
			d[n] = (struct donor){ .node = arcs[k].node, .first = k,
				.fair = ring->nodes[arcs[k].node].pub.weight / total };
			n++;
		}
		d[n - 1].load += (double)arcs[k].len / TWO64;
		d[n - 1].narcs++;
	}
	qsort(d, n, sizeof *d, cmp_donor);
	return n;
}

/* What donor d's `t` longest arcs can give, each keeping one position, as
 * a share of the circle. */
static double capacity(const struct donor *d, const struct arc *arcs, size_t t)
{
	double got = 0;

	for (size_t k = 0; k < t && k < d->narcs; k++)
		got += (double)(arcs[d->first + k].len - 1);
	return got / TWO64;
}

/*
 * The takes of donors d[0 .. m) down to level r with `ntokens` tokens: one
 * each, then one more at a time to the donor whose take its tokens still
 * cannot give the most of.  Sets take (what its tokens can give, at most
 * down to r) and tokens; returns the worst deviation from the fair share
 * among the donors, the joiner and `next`, the ratio of the most loaded
 * node that gives nothing (0: none).
 */
static double try_donors(struct donor *d, size_t m, const struct arc *arcs,
			 double r, double fair_new, size_t ntokens, double next)
{
	double given = 0, hi = next, lo;
	size_t spare = ntokens - m;

	for (size_t i = 0; i < m; i++)
		d[i].tokens = 1;
	while (spare) {
		size_t best = SIZE_MAX;
		double best_short = 0;

		for (size_t i = 0; i < m; i++) {
			double want = d[i].load - r * d[i].fair;
			double shortfall = want - capacity(&d[i], arcs, d[i].tokens);

			if (d[i].tokens < d[i].narcs && shortfall > best_short) {
				best = i;
				best_short = shortfall;
			}
		}
		if (best == SIZE_MAX)
			break;
		d[best].tokens++;
		spare--;
	}
	for (size_t i = 0; i < m; i++) {
		double want = d[i].load - r * d[i].fair;
		double cap = capacity(&d[i], arcs, d[i].tokens);
		double after;

		d[i].take = want < cap ? want : cap;
		given += d[i].take;
		after = (d[i].load - d[i].take) / d[i].fair;
		if (after > hi)
			hi = after;
	}
	lo = given / fair_new;
	if (r < lo)
		lo = r;
	return hi - 1 > 1 - lo ? hi - 1 : 1 - lo;
}

/*
 * Chooses the donors d[0 .. m) and their takes and tokens; returns m.  For
 * each m the level r makes the donors and the joiner equal; a donor whose
 * tokens cannot give its part stays above it.  The m with the smallest
 * worst deviation wins, the larger m on a tie.
 */
static size_t choose_donors(struct donor *d, size_t n, const struct arc *arcs,
			    double fair_new, size_t ntokens)
{
	double load = 0, fair = fair_new, best_dev = 0, best_r = 0;
	size_t best = 0;

	/* m = 1 is always taken: one donor is above the level it shares
	 * with the joiner. */
	for (size_t m = 1; m <= n && m <= ntokens; m++) {
		double r, dev, next;

		load += d[m - 1].load;
		fair += d[m - 1].fair;
		r = load / fair;
		if (d[m - 1].load / d[m - 1].fair <= r)
			break;
		next = m < n ? d[m].load / d[m].fair : 0;
		dev = try_donors(d, m, arcs, r, fair_new, ntokens, next);
		if (!best || dev <= best_dev) {
			best = m;
			best_dev = dev;
			best_r = r;
		}
	}
	try_donors(d, best, arcs, best_r, fair_new, ntokens,
		   best < n ? d[best].load / d[best].fair : 0);
	return best;
}

/* Tokens left over go, one by one, to the donor whose take per token is
 * largest and that has an arc to spare. */
static void spread_spare(struct donor *d, size_t m, size_t spare)
{
	while (spare) {
		size_t best = SIZE_MAX;

		for (size_t i = 0; i < m; i++)
			if (d[i].tokens < d[i].narcs &&
			    (best == SIZE_MAX ||
			     d[i].take / (double)d[i].tokens >
			     d[best].take / (double)d[best].tokens))
				best = i;
		if (best == SIZE_MAX)
			return;
		d[best].tokens++;
		spare--;
	}
}

/* Halves the joiner's longest arcs with the tokens still unplaced.
 * HR_ELIMIT when no arc is long enough to split. */
static int halve_own(struct arc *own, size_t *nown, uint64_t *out, size_t *n,
		     size_t ntokens, hr_error *err)
{
	while (*n < ntokens) {
		size_t best = SIZE_MAX;
		uint64_t half;

		for (size_t k = 0; k < *nown; k++)
			if (own[k].len >= 2 &&
			    (best == SIZE_MAX || own[k].len > own[best].len))
				best = k;
		if (best == SIZE_MAX)
			return hr__error_set(err, HR_ELIMIT,
					     "the ring has no room for %zu tokens",
					     ntokens);
		half = own[best].len / 2;
		out[(*n)++] = own[best].start + half;
		own[*nown] = (struct arc){ own[best].start + half,
					   own[best].len - half, 0 };
		own[best].len = half;
		(*nown)++;
	}
	return HR_OK;
}

int hr_tokens_allocate(const hr_ring *ring, const hr_node *node,
		       size_t ntokens, uint64_t *out, hr_error *err)
{
	const hr_node *self;
	struct arc *arcs = NULL, *own = NULL;
	struct donor *d = NULL;
	uint32_t skip = NO_NODE;
	size_t narcs, ndonors, m, n = 0, nown;
	double fair_new;
	int rc;

	if (!node || !out)
		return hr__error_set(err, HR_EINVAL, "node or token output is NULL");
	rc = hr__node_validate(node, err);
	if (rc)
		return rc;
	if (ntokens == 0)
		return hr__error_set(err, HR_EINVAL,
				     "node \"%.*s\": 0 tokens: a node needs at least one",
				     HR__ID_SHOWN, node->id);
	if (ntokens > HR_TOKENS_MAX)
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%.*s\": %zu tokens exceed the limit of %d",
				     HR__ID_SHOWN, node->id, ntokens, HR_TOKENS_MAX);
	self = ring ? hr_ring_find(ring, node->id) : NULL;
	if (self)
		skip = (uint32_t)ring_slot(ring, self);
	if (!ring || !ring->views[HR_VIEW_WRITE].npoints) {
		spread_evenly(node, ntokens, out);
		return HR_OK;
	}
	arcs = malloc(ring->views[HR_VIEW_WRITE].npoints * sizeof *arcs);
	d = calloc(ring->nnodes, sizeof *d);
	own = malloc(2 * ntokens * sizeof *own);
	if (!arcs || !d || !own) {
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		goto done;
	}
	narcs = view_arcs(ring, skip, arcs);
	if (!narcs) {
		spread_evenly(node, ntokens, out);
		goto done;
	}
	qsort(arcs, narcs, sizeof *arcs, cmp_arc);
	ndonors = view_donors(ring, skip, arcs, narcs, node->weight, d, &fair_new);
	m = choose_donors(d, ndonors, arcs, fair_new, ntokens);
	{
		size_t used = 0;

		for (size_t i = 0; i < m; i++)
			used += d[i].tokens;
		spread_spare(d, m, ntokens - used);
	}
	for (size_t i = 0; i < m; i++)
		n += cut_donor(&d[i], arcs, out + n, own + n);
	nown = n;
	rc = halve_own(own, &nown, out, &n, ntokens, err);
	if (!rc)
		qsort(out, ntokens, sizeof *out, hr__token_cmp);
done:
	free(own);
	free(d);
	free(arcs);
	return rc;
}
