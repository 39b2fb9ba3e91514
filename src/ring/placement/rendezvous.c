/*
 * rendezvous.c - weighted rendezvous placement (docs/placement.md section
 * 15): Schindelhauer and Schomaker's logarithmic method.  A key of hash k
 * scores -w / ln(h) on a node of weight w, h in (0, 1) from one XXH3 of
 * the node's id hash seeded by k; the highest score owns the key.  A node's
 * score depends on it and the key alone, so a join moves keys only to the
 * joiner and a leave only the leaver's, and a node's share is w / W.
 *
 * Every floating-point step is an IEEE-754 basic operation (this file is
 * compiled without contraction into fused multiply-adds), the logarithm
 * included, so that another language reproduces the scores bit for bit.
 */
#include "rendezvous.h"

#include "error.h"
#include "node.h"
#include "ring_impl.h"
#include "ring_view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What opens the digest: u32le(0), then "rdzv", above any node count
 * ketama writes there (section 7). */
#define DIGEST_WORD 0x767a6472u

/* ---- scores ------------------------------------------------------------- */

/* The doubles nearest sqrt(2) and ln(2). */
#define SQRT2 0x1.6a09e667f3bcdp+0
#define LN2 0x1.62e42fefa39efp-1

/* ln(m) for m in [sqrt(1/2), sqrt(2)] is 2 atanh(s), s = (m - 1) / (m + 1):
 * 2s (1 + s^2/3 + s^4/5 + ...), |s| < 0.172; ten terms past the first
 * reach below 2^-53 of it.  The polynomial in z = s^2 is evaluated in
 * Estrin's order, a third of Horner's dependent steps: nodes' scores are
 * computed one after the other, and the latency is the lookup's cost. */
static inline double ln_parts(double m, int e)
{
	static const double c[10] = {
		1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11,
		1.0 / 13, 1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21,
	};
	static const double scale[2] = { 1.0, 0.5 };
	double f, s, z, z2, z4, p, t;
	/* Without a branch: half the scores take it, at random, and a
	 * mispredicted one stops the next nodes' scores from overlapping. */
	int up = m > SQRT2;

	m *= scale[up];		/* exact */
	e += up;
	f = m - 1;		/* exact (Sterbenz) */
	s = f / (2 + f);
	z = s * s;
	z2 = z * z;
	z4 = z2 * z2;
	p = ((c[0] + c[1] * z) + (c[2] + c[3] * z) * z2) +
	    ((c[4] + c[5] * z) + (c[6] + c[7] * z) * z2) * z4 +
	    (c[8] + c[9] * z) * (z4 * z4);
	t = s + s;
	return (double)e * LN2 + (t + t * (z * p));
}

double hr__rdv_ln(double x)
{
	int e;
	double m = 2 * frexp(x, &e);

	return ln_parts(m, e - 1);	/* x = m 2^(e - 1), 1 <= m < 2: exact */
}

/* 2^k for -1022 <= k <= 1023, from its bits. */
static inline double pow2(int k)
{
	uint64_t bits = (uint64_t)(1023 + k) << 52;
	double d;

	memcpy(&d, &bits, sizeof d);
	return d;
}

/*
 * ln(h) for h = (2 u + 1) / 2^53, u the top 52 bits of the hash x: h is
 * exact in a double, in [2^-53, 1 - 2^-53], never 0 or 1.  The odd v =
 * 2u + 1 < 2^53 has b bits, so h = (v 2^(1 - b)) 2^(b - 54) splits into
 * m in [1, 2) and e exactly, as frexp would, without the call.
 */
static inline double ln_unit(uint64_t x)
{
	uint64_t v = ((x >> 12) << 1) | 1;
	int b = 64 - __builtin_clzll(v);

	return ln_parts((double)v * pow2(1 - b), b - 54);
}

static inline __attribute__((always_inline)) double
score(const struct rdv_member *m, uint64_t k)
{
	return -m->weight / ln_unit(XXH3_64bits_withSeed(m->id_hash, 8, k));
}

double hr__rdv_score(const struct rdv_member *m, uint64_t k)
{
	return score(m, k);
}

/* Scanned in id order, a score must be higher to win: equal scores go to
 * the smaller id. */
size_t hr__rdv_find(const struct view *v, uint64_t k)
{
	size_t best = 0;
	double top = score(&v->rdv[0], k);

	for (size_t i = 1; i < v->npoints; i++) {
		double s = score(&v->rdv[i], k);

		if (s > top) {
			top = s;
			best = i;
		}
	}
	return best;
}

size_t hr__rdv_next(const struct view *v, uint64_t k, size_t i)
{
	double at = score(&v->rdv[i], k), top = 0;
	size_t best = i;

	for (size_t j = 0; j < v->npoints; j++) {
		double s = score(&v->rdv[j], k);

		/* Below `i` in the walk: a lower score, or an equal one of a
		 * later id. */
		if (!(s < at || (s == at && j > i)))
			continue;
		if (best == i || s > top) {
			top = s;
			best = j;
		}
	}
	return best;
}

/* ---- the placement -------------------------------------------------------- */

static size_t digest_opening(const hr_ring *ring, unsigned char *out)
{
	hr__put_u32le(out, 0);
	hr__put_u32le(out + 4, DIGEST_WORD);
	return 8;
}

static int node_points(const hr_node *node, unsigned vnodes_per_weight,
		       unsigned *points, hr_error *err)
{
	if (!(node->weight >= HR__RDV_WEIGHT_MIN &&
	      node->weight <= HR__RDV_WEIGHT_MAX))
		return hr__error_set(err, HR_EINVAL,
				     "node \"%.*s\": weight %g is out of rendezvous' range,"
				     " 1e-300 to 1e290", HR__ID_SHOWN, node->id,
				     node->weight);
	*points = 0;		/* fill_views counts one per node */
	return HR_OK;
}

/*
 * A view's block: the members, then the arrays every view has (positions,
 * all 0 with the padding after them, a two-bucket index, node numbers), so
 * that the emptiness and sharing tests of the lookup path hold as they do
 * for points.  Lookups never search the positions: view_find() goes to
 * hr__rdv_find().
 */
static int build_view(hr_ring *ring, hr_view which, hr_error *err)
{
	struct view *v = &ring->views[which];
	struct view counted;
	struct rdv_member *members;
	size_t n = 0, j = 0, bytes;
	char *mem;

	if (hr__view_count(ring, which, &counted))
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	n = counted.nnodes;
	bytes = n * sizeof(struct rdv_member) +
		(n + POS_PAD) * sizeof(uint64_t) + 2 * sizeof(uint32_t) +
		(n ? n : 1) * sizeof(uint32_t);
	mem = malloc(bytes);
	if (!mem)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	memset(v, 0, sizeof *v);
	v->mem = mem;
	v->bytes = bytes;
	v->rdv = members = (struct rdv_member *)mem;
	v->pos = (uint64_t *)(mem + n * sizeof(struct rdv_member));
	v->index = (uint32_t *)(v->pos + n + POS_PAD);
	v->node = v->index + 2;
	v->wide = true;
	v->shift = 63;
	v->npoints = n;
	v->nnodes = n;
	v->nzones = counted.nzones;
	v->index[0] = 0;
	v->index[1] = (uint32_t)n;
	for (size_t i = 0; i < ring->nnodes; i++) {
		struct ring_node *rn = &ring->nodes[i];
		struct rdv_member *m = &members[j];
		uint64_t h;

		if (!hr__in_view(rn->pub.state, which))
			continue;
		h = XXH3_64bits(rn->pub.id, rn->id_len);
		for (int b = 0; b < 8; b++)
			m->id_hash[b] = (unsigned char)(h >> (8 * b));
		m->weight = rn->pub.weight;
		v->pos[j] = 0;
		view_set_node(v, j, (uint32_t)i);
		rn->vnodes = 1;
		j++;
	}
	for (size_t i = 0; i < POS_PAD; i++)
		v->pos[n + i] = UINT64_MAX;
	return HR_OK;
}

static int fill_views(hr_ring *ring, const hr_ring *prev, hr_error *err)
{
	return hr__view_fill_each(ring, build_view, err);
}

const hr__placement hr__placement_rendezvous = {
	.name = "rendezvous",
	.digest_opening = digest_opening,
	.node_points = node_points,
	.point_positions = NULL,	/* no points on the circle */
	.fill_views = fill_views,
	.key_pos = NULL,		/* the key hash: XXH3_64bits(key) */
};

/* ---- shares ----------------------------------------------------------------- */

/* hr__ring_rendezvous() asks the same, but ring.c calls into this file:
 * calling back would make the two depend on each other. */
static bool is_rdv(const hr_ring *ring)
{
	return ring && ring->pl == &hr__placement_rendezvous;
}

/* W: the view's weights added in id order. */
static double view_weight(const struct view *v)
{
	double w = 0;

	for (size_t i = 0; i < v->npoints; i++)
		w += v->rdv[i].weight;
	return w;
}

double hr__rdv_share(const struct view *v, double weight)
{
	return weight / view_weight(v);
}

void hr__rdv_shares(const hr_ring *ring, hr_view view, double *out)
{
	const struct view *v = &ring->views[view];
	double w = view_weight(v);

	for (size_t i = 0; i < v->npoints; i++)
		out[view_node(v, i)] = v->rdv[i].weight / w;
}

/* ---- two rings ---------------------------------------------------------------- */

/* A node of either ring's view, with its weight in each (0: not there). */
struct both {
	const hr_node *an, *bn;
	double a, b;
	double rho;		/* a / b: +inf for b = 0, 0 for a = 0 */
};

static double view_w(const hr_ring *ring, hr_view view, size_t slot)
{
	const hr_node *nd = &ring->nodes[slot].pub;

	return hr__in_view(nd->state, view) ? nd->weight : 0;
}

/* The union of two rings' nodes by id with their weights in `view`; NULL
 * only for lack of memory.  *wa and *wb get the views' W. */
static struct both *merge(const hr_ring *a, const hr_ring *b, hr_view view,
			  size_t *n, double *wa, double *wb)
{
	size_t na = a ? a->nnodes : 0, nb = b ? b->nnodes : 0, i = 0, j = 0;
	struct both *u = malloc((na + nb + 1) * sizeof *u);

	*n = 0;
	*wa = *wb = 0;
	if (!u)
		return NULL;
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 :
			strcmp(a->nodes[i].pub.id, b->nodes[j].pub.id);
		struct both e = { NULL, NULL, 0, 0, 0 };

		if (c <= 0) {
			e.a = view_w(a, view, i);
			e.an = &a->nodes[i++].pub;
		}
		if (c >= 0) {
			e.b = view_w(b, view, j);
			e.bn = &b->nodes[j++].pub;
		}
		if (!e.a && !e.b)
			continue;
		e.rho = !e.b ? INFINITY : e.a / e.b;
		*wa += e.a;
		*wb += e.b;
		u[(*n)++] = e;
	}
	return u;
}

static int cmp_rho(const void *x, const void *y)
{
	const struct both *p = *(const struct both *const *)x;
	const struct both *q = *(const struct both *const *)y;

	return p->rho < q->rho ? -1 : p->rho > q->rho;
}

/*
 * The nodes sorted by rho = a / b, with the sums the formulas take: for
 * sorted position x, pre_b[x] is the sum of b over positions below x,
 * suf_a[x] that of a over x and above; grp[x] is the end of x's run of
 * equal rho.
 */
struct order {
	struct both **s;
	double *pre_b, *suf_a;
	size_t *grp, *start;
	size_t n;
};

static void order_free(struct order *o)
{
	free(o->s);
	free(o->pre_b);
	free(o->suf_a);
	free(o->grp);
	free(o->start);
}

static int order_make(struct order *o, struct both *u, size_t n)
{
	o->n = n;
	o->s = malloc((n + 1) * sizeof *o->s);
	o->pre_b = malloc((n + 1) * sizeof *o->pre_b);
	o->suf_a = malloc((n + 1) * sizeof *o->suf_a);
	o->grp = malloc((n + 1) * sizeof *o->grp);
	o->start = malloc((n + 1) * sizeof *o->start);
	if (!o->s || !o->pre_b || !o->suf_a || !o->grp || !o->start) {
		order_free(o);
		return HR_ENOMEM;
	}
	for (size_t x = 0; x < n; x++)
		o->s[x] = &u[x];
	qsort(o->s, n, sizeof *o->s, cmp_rho);
	o->pre_b[0] = 0;
	for (size_t x = 0; x < n; x++)
		o->pre_b[x + 1] = o->pre_b[x] + o->s[x]->b;
	o->suf_a[n] = 0;
	for (size_t x = n; x-- > 0;)
		o->suf_a[x] = o->suf_a[x + 1] + o->s[x]->a;
	for (size_t x = 0; x < n;) {
		size_t y = x;

		while (y < n && o->s[y]->rho == o->s[x]->rho)
			y++;
		for (size_t z = x; z < y; z++) {
			o->start[z] = x;
			o->grp[z] = y;
		}
		x = y;
	}
	return HR_OK;
}

/* The integral of exp(-P x - Q y) over x > 0, tl x < y < th x. */
static double sector(double p, double q, double tl, double th)
{
	if (!(th > tl))
		return 0;
	if (isinf(th))
		return 1 / (q * (p + q * tl));
	return (th - tl) / ((p + q * tl) * (p + q * th));
}

/*
 * The share of keys with owner i (sorted position x) in ring a and j
 * (position y, rho below i's) in ring b, where the exponential variables
 * E_i = x and E_j = y decide: the other nodes' conditions split the cone
 * a_j / a_i < y / x < b_j / b_i at the rho of each node between them.
 */
static double pair_share(const struct order *o, size_t x, size_t y)
{
	const struct both *bi = o->s[x], *bj = o->s[y];
	double tl = bj->a / bi->a;
	double t2 = bi->b > 0 ? bj->b / bi->b : INFINITY;
	size_t p = o->grp[y];
	double sum = 0;

	for (; p < o->start[x]; p++) {
		double th = o->s[p]->rho * (bj->b / bi->a);

		sum += sector(o->suf_a[p] / bi->a, o->pre_b[p] / bj->b, tl, th);
		tl = th;
	}
	return sum + sector(o->suf_a[p] / bi->a, o->pre_b[p] / bj->b, tl, t2);
}

/* True when the two rings' owners come from the formulas: both rendezvous
 * (or missing, or with an empty view). */
static bool analytic(const hr_ring *a, const hr_ring *b, hr_view view)
{
	bool ea = !a || !a->views[view].npoints, eb = !b || !b->views[view].npoints;

	return (ea || is_rdv(a)) && (eb || is_rdv(b));
}

/* The positions of the sample for rings placed differently. */
#define SAMPLE_BITS 16

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

double hr__rdv_moved_share(const hr_ring *a, const hr_ring *b, hr_view view)
{
	struct both *u;
	struct order o;
	size_t n;
	double wa, wb, stay = 0;

	if (!analytic(a, b, view)) {
		size_t moved = 0;

		for (uint64_t s = 0; s < (1u << SAMPLE_BITS); s++)
			moved += !same_id(owner_at(a, view, sample_pos(s)),
					  owner_at(b, view, sample_pos(s)));
		return ldexp((double)moved, -SAMPLE_BITS);
	}
	u = merge(a, b, view, &n, &wa, &wb);
	if (!u || order_make(&o, u, n)) {
		free(u);
		return NAN;
	}
	if (!wa || !wb) {
		stay = !wa && !wb ? 1 : 0;
	} else {
		/* A key stays on i with probability 1 / (sum over k of
		 * max(a_k / a_i, b_k / b_i)): a_k / a_i for rho_k >= rho_i. */
		for (size_t x = 0; x < n; x++) {
			const struct both *e = o.s[x];

			if (e->a > 0 && e->b > 0)
				stay += 1 / (o.suf_a[o.start[x]] / e->a +
					     o.pre_b[o.start[x]] / e->b);
		}
	}
	order_free(&o);
	free(u);
	return stay >= 1 ? 0 : stay <= 0 ? 1 : 1 - stay;
}

static int cmp_id(const hr_node *x, const hr_node *y)
{
	if (!x || !y)
		return !y - !x;
	return strcmp(x->id, y->id);
}

static int cmp_total(const void *x, const void *y)
{
	const hr_arc_total *p = x, *q = y;
	int c = cmp_id(p->old_node, q->old_node);

	return c ? c : cmp_id(p->new_node, q->new_node);
}

/* Room for one more total. */
static hr_arc_total *grow(hr_arc_total **t, size_t n, size_t *cap)
{
	if (n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;
		hr_arc_total *g = realloc(*t, c * sizeof *g);

		if (!g)
			return NULL;
		*t = g;
		*cap = c;
	}
	return &(*t)[n];
}

/* Totals of the sample: its moved positions as (old, new) pairs. */
static int sample_totals(const hr_ring *a, const hr_ring *b, hr_view view,
			 hr_arc_total **out, size_t *n)
{
	size_t cap = 0, m = 0;
	hr_arc_total *t = NULL;

	for (uint64_t s = 0; s < (1u << SAMPLE_BITS); s++) {
		const hr_node *x = owner_at(a, view, sample_pos(s));
		const hr_node *y = owner_at(b, view, sample_pos(s));
		hr_arc_total *e;

		if (same_id(x, y))
			continue;
		if (!(e = grow(&t, m, &cap))) {
			free(t);
			return HR_ENOMEM;
		}
		*e = (hr_arc_total){ x, y, 0, 1 };
		m++;
	}
	qsort(t, m, sizeof *t, cmp_total);
	*n = 0;
	for (size_t i = 0; i < m;) {
		size_t j = i;

		while (j < m && cmp_total(&t[i], &t[j]) == 0)
			j++;
		t[*n] = (hr_arc_total){ t[i].old_node, t[i].new_node, 0,
					ldexp((double)(j - i), -SAMPLE_BITS) };
		(*n)++;
		i = j;
	}
	*out = t;
	return HR_OK;
}

int hr__rdv_totals(const hr_ring *a, const hr_ring *b, hr_view view,
		   hr_arc_total **out, size_t *n)
{
	struct both *u;
	struct order o;
	size_t nu, cap = 0;
	double wa, wb;
	hr_arc_total *t = NULL;

	*out = NULL;
	*n = 0;
	if (!analytic(a, b, view))
		return sample_totals(a, b, view, out, n);
	u = merge(a, b, view, &nu, &wa, &wb);
	if (!u || order_make(&o, u, nu)) {
		free(u);
		return HR_ENOMEM;
	}
	for (size_t x = 0; x < nu; x++) {
		const struct both *e = o.s[x];

		if (!wa || !wb) {
			/* One view empty: every key moves from or to none. */
			hr_arc_total *g;

			if (!(g = grow(&t, *n, &cap)))
				goto nomem;
			*g = wa ? (hr_arc_total){ e->an, NULL, 0, e->a / wa } :
				  (hr_arc_total){ NULL, e->bn, 0, e->b / wb };
			(*n)++;
			continue;
		}
		if (!(e->a > 0))
			continue;
		/* j below i by rho: the pairs that move at all. */
		for (size_t y = 0; y < o.start[x]; y++) {
			hr_arc_total *g;
			double share;

			if (!(o.s[y]->b > 0))
				continue;
			share = pair_share(&o, x, y);
			if (!(share > 0))
				continue;
			if (!(g = grow(&t, *n, &cap)))
				goto nomem;
			*g = (hr_arc_total){ e->an, o.s[y]->bn, 0, share };
			(*n)++;
		}
	}
	order_free(&o);
	free(u);
	if (*n)
		qsort(t, *n, sizeof *t, cmp_total);
	*out = t;
	return HR_OK;
nomem:
	order_free(&o);
	free(u);
	free(t);
	*n = 0;
	return HR_ENOMEM;
}
