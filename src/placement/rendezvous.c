/* SPDX-License-Identifier: MIT */
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
#include "placement.h"

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

void hr__rdv_member(struct rdv_member *m, const char *id, size_t len,
		    double weight)
{
	uint64_t h = XXH3_64bits(id, len);

	for (int b = 0; b < 8; b++)
		m->id_hash[b] = (unsigned char)(h >> (8 * b));
	m->weight = weight;
}

/* Scanned in id order, a score must be higher to win: equal scores go to
 * the smaller id. */
size_t hr__rdv_find(const struct rdv_member *m, size_t n, uint64_t k)
{
	size_t best = 0;
	double top = score(&m[0], k);

	for (size_t i = 1; i < n; i++) {
		double s = score(&m[i], k);

		if (s > top) {
			top = s;
			best = i;
		}
	}
	return best;
}

size_t hr__rdv_next(const struct rdv_member *m, size_t n, uint64_t k, size_t i)
{
	double at = score(&m[i], k), top = 0;
	size_t best = i;

	for (size_t j = 0; j < n; j++) {
		double s = score(&m[j], k);

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

/* W: the view's weights added in id order. */
double hr__rdv_weight(const struct rdv_member *m, size_t n)
{
	double w = 0;

	for (size_t i = 0; i < n; i++)
		w += m[i].weight;
	return w;
}

/* ---- the placement -------------------------------------------------------- */

static size_t digest_opening(const hr__place_opts *o, unsigned char *out)
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
	*points = 0;		/* a view counts one per node */
	return HR_OK;
}

const hr__placement hr__placement_rendezvous = {
	.name = "rendezvous",
	.kind = HR__PLACE_SCORES,	/* no points on the circle */
	.digest_opening = digest_opening,
	.node_points = node_points,
	.key_pos = NULL,		/* the key hash: XXH3_64bits(key) */
};

/* ---- two rings ---------------------------------------------------------------- */

/* rho = a / b orders the nodes in the formulas: +inf for b = 0, 0 for a = 0. */
static int cmp_rho(const void *x, const void *y)
{
	const struct rdv_pair *p = *(const struct rdv_pair *const *)x;
	const struct rdv_pair *q = *(const struct rdv_pair *const *)y;

	return p->rho < q->rho ? -1 : p->rho > q->rho;
}

/*
 * The nodes sorted by rho = a / b, with the sums the formulas take: for
 * sorted position x, pre_b[x] is the sum of b over positions below x,
 * suf_a[x] that of a over x and above; grp[x] is the end of x's run of
 * equal rho.
 */
struct order {
	struct rdv_pair **s;
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

static int order_make(struct order *o, struct rdv_pair *u, size_t n)
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
	for (size_t x = 0; x < n; x++) {
		u[x].rho = !u[x].b ? INFINITY : u[x].a / u[x].b;
		o->s[x] = &u[x];
	}
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
	const struct rdv_pair *bi = o->s[x], *bj = o->s[y];
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

double hr__rdv_moved(struct rdv_pair *u, size_t n, double wa, double wb)
{
	struct order o;
	double stay = 0;

	if (order_make(&o, u, n))
		return NAN;
	if (!wa || !wb) {
		stay = !wa && !wb ? 1 : 0;
	} else {
		/* A key stays on i with probability 1 / (sum over k of
		 * max(a_k / a_i, b_k / b_i)): a_k / a_i for rho_k >= rho_i. */
		for (size_t x = 0; x < n; x++) {
			const struct rdv_pair *e = o.s[x];

			if (e->a > 0 && e->b > 0)
				stay += 1 / (o.suf_a[o.start[x]] / e->a +
					     o.pre_b[o.start[x]] / e->b);
		}
	}
	order_free(&o);
	return stay >= 1 ? 0 : stay <= 0 ? 1 : 1 - stay;
}

static int cmp_id(const hr_node *x, const hr_node *y)
{
	if (!x || !y)
		return !y - !x;
	return strcmp(x->id, y->id);
}

int hr__rdv_total_cmp(const void *x, const void *y)
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

int hr__rdv_totals(struct rdv_pair *u, size_t nu, double wa, double wb,
		   hr_arc_total **out, size_t *n)
{
	struct order o;
	size_t cap = 0;
	hr_arc_total *t = NULL;

	*out = NULL;
	*n = 0;
	if (order_make(&o, u, nu))
		return HR_ENOMEM;
	for (size_t x = 0; x < nu; x++) {
		const struct rdv_pair *e = o.s[x];

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
	if (*n)
		qsort(t, *n, sizeof *t, hr__rdv_total_cmp);
	*out = t;
	return HR_OK;
nomem:
	order_free(&o);
	free(t);
	*n = 0;
	return HR_ENOMEM;
}
