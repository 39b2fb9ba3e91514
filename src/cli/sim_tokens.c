/* SPDX-License-Identifier: MIT */
/*
 * sim_tokens.c - `hashring sim --placement tokens`: N nodes join an empty
 * ring one at a time, each with the tokens hr_tokens_allocate() gives it
 * against the ring it sees, then a tenth of them leave at random, once
 * with their arcs falling to the next points and once with their tokens
 * handed to the heirs hr_tokens_heirs() chooses.
 *
 * Prints the balance after the joins (each node's share over its fair
 * share by weight: the largest and the smallest), what each join moved
 * beside the joiner's own share and its fair share, and the balance after
 * both kinds of leaves.  Shares are exact (hr_ring_node_shares), not
 * sampled keys.
 */
#include "sim_tokens.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_LEN 32	/* "node-" and any size_t */

struct sim {
	const struct sim_tokens_args *a;
	hr_node *nodes;
	char (*ids)[ID_LEN];
	uint64_t **tokens;	/* node i's tokens[i][0 .. tn[i]), cap[i] room */
	size_t *tn, *cap;
	double *shares;
	size_t n;		/* nodes in the ring */
};

struct balance {
	double max, min;	/* share over fair share */
};

struct join_figures {
	double moved_over_fair_max, moved_over_fair_min;
	double moved_minus_own_max;	/* |moved - the joiner's share| */
};

/* Weight of node i: 1 to 4 in turn when weighted, else 1. */
static double node_weight(const struct sim_tokens_args *a, size_t i)
{
	return a->weighted ? (double)(i % 4 + 1) : 1.0;
}

static int build(struct sim *s, hr_ring **out, hr_error *err)
{
	hr_ring_options o;

	hr_ring_options_init(&o);
	o.placement = HR_PLACEMENT_TOKENS;
	for (size_t i = 0; i < s->n; i++) {
		s->nodes[i].tokens = s->tokens[i];
		s->nodes[i].ntokens = s->tn[i];
	}
	return hr_ring_build(s->nodes, s->n, &o, 0, out, err);
}

/* The write share in `ring` of the node with this id. */
static double share_of(struct sim *s, const hr_ring *ring, const char *id)
{
	const hr_node *node = hr_ring_find(ring, id);
	size_t n = hr_ring_node_shares(ring, HR_VIEW_WRITE, s->shares, s->n);

	for (size_t i = 0; i < n; i++)
		if (hr_ring_node(ring, i) == node)
			return s->shares[i];
	return 0;
}

static struct balance balance_of(struct sim *s, const hr_ring *ring)
{
	struct balance b = { 0, 1e300 };
	size_t n = hr_ring_node_shares(ring, HR_VIEW_WRITE, s->shares, s->n);
	double total = 0;

	for (size_t i = 0; i < n; i++)
		total += hr_ring_node(ring, i)->weight;
	for (size_t i = 0; i < n; i++) {
		double r = s->shares[i] / (hr_ring_node(ring, i)->weight / total);

		if (r > b.max)
			b.max = r;
		if (r < b.min)
			b.min = r;
	}
	return b;
}

/* Room for `more` tokens in node i's array. */
static int reserve(struct sim *s, size_t i, size_t more)
{
	size_t cap = s->cap[i];
	uint64_t *t;

	if (s->tn[i] + more <= cap)
		return HR_OK;
	while (cap < s->tn[i] + more)
		cap = cap ? 2 * cap : 16;
	t = realloc(s->tokens[i], cap * sizeof *t);
	if (!t)
		return HR_ENOMEM;
	s->tokens[i] = t;
	s->cap[i] = cap;
	return HR_OK;
}

/* Node i joins: its tokens against `ring`, then the ring with it. */
static int join(struct sim *s, size_t i, hr_ring **ring, struct join_figures *f,
		hr_error *err)
{
	hr_node *nd = &s->nodes[i];
	hr_ring *next = NULL;
	double total = 0, moved, own;
	int rc;

	snprintf(s->ids[i], ID_LEN, "node-%zu", i);
	*nd = (hr_node){ .id = s->ids[i], .addr = "127.0.0.1:11211",
			 .zone = "", .weight = node_weight(s->a, i),
			 .state = HR_STATE_ACTIVE };
	/* Tokens per unit of weight, as `hashring register --tokens`. */
	if (reserve(s, i, s->a->tokens * (size_t)nd->weight))
		return HR_ENOMEM;
	s->tn[i] = s->a->tokens * (size_t)nd->weight;
	rc = hr_tokens_allocate(*ring, nd, s->tn[i], s->tokens[i], err);
	if (rc)
		return rc;
	s->n = i + 1;
	rc = build(s, &next, err);
	if (rc)
		return rc;
	for (size_t k = 0; k <= i; k++)
		total += s->nodes[k].weight;
	moved = hr_ring_moved_share(*ring, next, HR_VIEW_WRITE);
	own = share_of(s, next, nd->id);
	if (i > 0) {
		double r = moved / (nd->weight / total), d = moved - own;

		if (r > f->moved_over_fair_max)
			f->moved_over_fair_max = r;
		if (r < f->moved_over_fair_min)
			f->moved_over_fair_min = r;
		if (d < 0)
			d = -d;
		if (d > f->moved_minus_own_max)
			f->moved_minus_own_max = d;
	}
	hr_ring_release(*ring);
	*ring = next;
	return HR_OK;
}

/* The node array index of the ring's node `nd`. */
static size_t index_of(const struct sim *s, const hr_node *nd)
{
	size_t i = 0;

	while (i < s->n && strcmp(s->nodes[i].id, nd->id))
		i++;
	return i;
}

/* Node j hands its tokens to the heirs hr_tokens_heirs() chooses in
 * `ring`: each heir's record lists them as well. */
static int hand_over(struct sim *s, const hr_ring *ring, size_t j, hr_error *err)
{
	const hr_node *self = hr_ring_find(ring, s->nodes[j].id), **heirs;
	size_t n = self ? self->ntokens : 0;
	int rc;

	heirs = calloc(n ? n : 1, sizeof *heirs);
	if (!heirs)
		return HR_ENOMEM;
	rc = hr_tokens_heirs(ring, self, heirs, err);
	for (size_t t = 0; !rc && t < n; t++) {
		size_t h = index_of(s, heirs[t]);

		if (reserve(s, h, 1)) {
			rc = HR_ENOMEM;
			break;
		}
		s->tokens[h][s->tn[h]++] = self->tokens[t];
	}
	free(heirs);
	return rc;
}

/*
 * A tenth of the nodes leave one at a time, picked by a fixed xorshift
 * sequence; with `moved_minus_own`, each first hands its tokens to heirs,
 * and it gets the largest |moved - the leaver's share|.
 */
static int leave_tenth(struct sim *s, hr_ring **ring, double *moved_minus_own,
		       hr_error *err)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t leave = s->n / 10;
	int rc = HR_OK;

	if (moved_minus_own)
		*moved_minus_own = 0;
	for (size_t k = 0; !rc && k < leave; k++) {
		hr_ring *next = NULL;
		uint64_t *t;
		size_t j, c;
		double own, d;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = (size_t)(x % s->n);
		own = share_of(s, *ring, s->nodes[j].id);
		if (moved_minus_own)
			rc = hand_over(s, *ring, j, err);
		if (rc)
			break;
		/* The leaver's slot takes the last node; its array is kept
		 * for reuse. */
		s->n--;
		t = s->tokens[j];
		c = s->cap[j];
		s->nodes[j] = s->nodes[s->n];
		s->tokens[j] = s->tokens[s->n];
		s->tn[j] = s->tn[s->n];
		s->cap[j] = s->cap[s->n];
		s->tokens[s->n] = t;
		s->cap[s->n] = c;
		s->tn[s->n] = 0;
		rc = build(s, &next, err);
		if (rc)
			break;
		d = moved_minus_own ? hr_ring_moved_share(*ring, next, HR_VIEW_WRITE) - own : 0;
		if (d < 0)
			d = -d;
		if (moved_minus_own && d > *moved_minus_own)
			*moved_minus_own = d;
		hr_ring_release(*ring);
		*ring = next;
	}
	return rc;
}

/* A copy of the joined nodes and their tokens, for the second kind of
 * leaves. */
static int copy_sim(struct sim *dst, const struct sim *src)
{
	for (size_t i = 0; i < src->n; i++) {
		if (reserve(dst, i, src->tn[i]))
			return HR_ENOMEM;
		memcpy(dst->tokens[i], src->tokens[i], src->tn[i] * sizeof **src->tokens);
		dst->tn[i] = src->tn[i];
		dst->nodes[i] = src->nodes[i];
		memcpy(dst->ids[i], src->ids[i], ID_LEN);
		dst->nodes[i].id = dst->ids[i];
	}
	dst->n = src->n;
	return HR_OK;
}

static int sim_alloc(struct sim *s, const struct sim_tokens_args *a)
{
	s->a = a;
	s->nodes = calloc(a->nodes, sizeof *s->nodes);
	s->ids = calloc(a->nodes, sizeof *s->ids);
	s->tokens = calloc(a->nodes, sizeof *s->tokens);
	s->tn = calloc(a->nodes, sizeof *s->tn);
	s->cap = calloc(a->nodes, sizeof *s->cap);
	s->shares = calloc(a->nodes, sizeof *s->shares);
	return s->nodes && s->ids && s->tokens && s->tn && s->cap && s->shares ?
	       HR_OK : HR_ENOMEM;
}

static void sim_free(struct sim *s)
{
	for (size_t i = 0; s->tokens && i < s->a->nodes; i++)
		free(s->tokens[i]);
	free(s->nodes);
	free(s->ids);
	free(s->tokens);
	free(s->tn);
	free(s->cap);
	free(s->shares);
}

int sim_tokens_run(const char *cmd, const struct sim_tokens_args *a)
{
	struct sim s = { 0 }, h = { 0 };
	struct join_figures f = { 0, 1e300, 0 };
	struct balance joined, left = { 0, 0 }, handed = { 0, 0 };
	double handed_moved = 0;
	hr_ring *ring = NULL, *ring_h = NULL;
	hr_error err = { 0 };
	int rc = HR_ENOMEM;

	if (sim_alloc(&s, a) || sim_alloc(&h, a))
		goto out;
	rc = HR_OK;
	for (size_t i = 0; !rc && i < a->nodes; i++)
		rc = join(&s, i, &ring, &f, &err);
	if (rc)
		goto out;
	joined = balance_of(&s, ring);
	/* The same joined ring twice: leaves without heirs, then with. */
	rc = copy_sim(&h, &s);
	if (rc) {
		rc = HR_ENOMEM;
		goto out;
	}
	ring_h = hr_ring_retain(ring);
	rc = leave_tenth(&s, &ring, NULL, &err);
	if (!rc)
		rc = leave_tenth(&h, &ring_h, &handed_moved, &err);
	if (rc)
		goto out;
	left = balance_of(&s, ring);
	handed = balance_of(&h, ring_h);
	if (a->nodes < 2)
		f.moved_over_fair_min = f.moved_over_fair_max = 1;
	if (a->json) {
		printf("{\"placement\":\"tokens\",\"nodes\":%lu,\"tokens\":%lu,\"weighted\":%s,"
		       "\"joined\":{\"max_fair\":%.6f,\"min_fair\":%.6f},"
		       "\"moved_over_fair\":{\"max\":%.6f,\"min\":%.6f},"
		       "\"moved_minus_own_max\":%.3g,"
		       "\"left\":{\"nodes\":%zu,\"max_fair\":%.6f,\"min_fair\":%.6f},"
		       "\"left_with_heirs\":{\"nodes\":%zu,\"max_fair\":%.6f,\"min_fair\":%.6f,"
		       "\"moved_minus_own_max\":%.3g}}\n",
		       a->nodes, a->tokens, a->weighted ? "true" : "false",
		       joined.max, joined.min, f.moved_over_fair_max,
		       f.moved_over_fair_min, f.moved_minus_own_max, s.n,
		       left.max, left.min, h.n, handed.max, handed.min, handed_moved);
	} else {
		printf("%lu nodes joined one at a time, %lu tokens per unit of weight, weights %s\n",
		       a->nodes, a->tokens, a->weighted ? "1-4" : "equal");
		printf("  share/fair share    max %.4f  min %.4f\n", joined.max,
		       joined.min);
		printf("  moved per join      %.4f to %.4f of the joiner's fair share;"
		       " |moved - its share| <= %.3g\n",
		       f.moved_over_fair_min, f.moved_over_fair_max,
		       f.moved_minus_own_max);
		printf("after %lu leave at random (%zu nodes), one at a time\n",
		       a->nodes / 10, s.n);
		printf("  arcs to the next point    max %.4f  min %.4f\n", left.max,
		       left.min);
		printf("  tokens handed to heirs    max %.4f  min %.4f;"
		       " |moved - the leaver's share| <= %.3g\n",
		       handed.max, handed.min, handed_moved);
	}
out:
	hr_ring_release(ring);
	hr_ring_release(ring_h);
	sim_free(&s);
	sim_free(&h);
	if (rc)
		return cli_fail(cmd, rc, &err);
	return CLI_EXIT_OK;
}
