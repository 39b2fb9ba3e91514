/*
 * sim_tokens.c - `hashring sim --placement tokens`: N nodes join an empty
 * ring one at a time, each with the tokens hr_tokens_allocate() gives it
 * against the ring it sees, then a tenth of them leave at random.
 *
 * Prints the balance after the joins (each node's share over its fair
 * share by weight: the largest and the smallest), what each join moved
 * beside the joiner's own share and its fair share, and the balance after
 * the leaves.  Shares are exact (hr_ring_node_shares), not sampled keys.
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
	uint64_t *tokens;	/* node i's at tokens + i * 4 * a->tokens */
	const uint64_t **tp;
	size_t *tn;
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
	return hr_ring_build_tokens(s->nodes, s->tp, s->tn, s->n, &o, 0, out, err);
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
	s->tp[i] = s->tokens + i * 4 * s->a->tokens;
	s->tn[i] = s->a->tokens * (size_t)nd->weight;
	rc = hr_tokens_allocate(*ring, nd, s->tn[i], (uint64_t *)s->tp[i], err);
	if (rc)
		return rc;
	s->n = i + 1;
	rc = build(s, &next, err);
	if (rc)
		return rc;
	for (size_t k = 0; k <= i; k++)
		total += s->nodes[k].weight;
	moved = hr_ring_moved_share(*ring, next, HR_VIEW_WRITE);
	own = hr_ring_node_share(next, hr_ring_find(next, nd->id), HR_VIEW_WRITE);
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

/* A tenth of the nodes leave, picked by a fixed xorshift sequence. */
static int leave_tenth(struct sim *s, hr_ring **ring, hr_error *err)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t leave = s->n / 10;
	hr_ring *next = NULL;
	int rc;

	for (size_t k = 0; k < leave; k++) {
		size_t j;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = (size_t)(x % s->n);
		s->n--;
		s->nodes[j] = s->nodes[s->n];
		s->tp[j] = s->tp[s->n];
		s->tn[j] = s->tn[s->n];
	}
	rc = build(s, &next, err);
	if (rc)
		return rc;
	hr_ring_release(*ring);
	*ring = next;
	return HR_OK;
}

int sim_tokens_run(const char *cmd, const struct sim_tokens_args *a)
{
	struct sim s = { .a = a };
	struct join_figures f = { 0, 1e300, 0 };
	struct balance joined, left;
	hr_ring *ring = NULL;
	hr_error err = { 0 };
	int rc = HR_ENOMEM;

	s.nodes = calloc(a->nodes, sizeof *s.nodes);
	s.ids = calloc(a->nodes, sizeof *s.ids);
	s.tokens = calloc(a->nodes * 4 * a->tokens, sizeof *s.tokens);
	s.tp = calloc(a->nodes, sizeof *s.tp);
	s.tn = calloc(a->nodes, sizeof *s.tn);
	s.shares = calloc(a->nodes, sizeof *s.shares);
	if (!s.nodes || !s.ids || !s.tokens || !s.tp || !s.tn || !s.shares)
		goto out;
	rc = HR_OK;
	for (size_t i = 0; !rc && i < a->nodes; i++)
		rc = join(&s, i, &ring, &f, &err);
	if (rc)
		goto out;
	joined = balance_of(&s, ring);
	rc = leave_tenth(&s, &ring, &err);
	if (rc)
		goto out;
	left = balance_of(&s, ring);
	if (a->nodes < 2)
		f.moved_over_fair_min = f.moved_over_fair_max = 1;
	if (a->json) {
		printf("{\"placement\":\"tokens\",\"nodes\":%lu,\"tokens\":%lu,\"weighted\":%s,"
		       "\"joined\":{\"max_fair\":%.6f,\"min_fair\":%.6f},"
		       "\"moved_over_fair\":{\"max\":%.6f,\"min\":%.6f},"
		       "\"moved_minus_own_max\":%.3g,"
		       "\"left\":{\"nodes\":%zu,\"max_fair\":%.6f,\"min_fair\":%.6f}}\n",
		       a->nodes, a->tokens, a->weighted ? "true" : "false",
		       joined.max, joined.min, f.moved_over_fair_max,
		       f.moved_over_fair_min, f.moved_minus_own_max, s.n,
		       left.max, left.min);
	} else {
		printf("%lu nodes joined one at a time, %lu tokens per unit of weight, weights %s\n",
		       a->nodes, a->tokens, a->weighted ? "1-4" : "equal");
		printf("  share/fair share    max %.4f  min %.4f\n", joined.max,
		       joined.min);
		printf("  moved per join      %.4f to %.4f of the joiner's fair share;"
		       " |moved - its share| <= %.3g\n",
		       f.moved_over_fair_min, f.moved_over_fair_max,
		       f.moved_minus_own_max);
		printf("after %lu leave at random (%zu nodes)\n", a->nodes / 10, s.n);
		printf("  share/fair share    max %.4f  min %.4f\n", left.max, left.min);
	}
out:
	hr_ring_release(ring);
	free(s.nodes);
	free(s.ids);
	free(s.tokens);
	free(s.tp);
	free(s.tn);
	free(s.shares);
	if (rc)
		return cli_fail(cmd, rc, &err);
	return CLI_EXIT_OK;
}
