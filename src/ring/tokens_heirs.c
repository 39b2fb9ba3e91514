/* SPDX-License-Identifier: MIT */
/*
 * tokens_heirs.c - hr_tokens_heirs(): which node takes each token of a
 * node that leaves (docs/placement.md section 16, "Leaving").
 *
 * An heir lists the token in its own record, so the token's arc goes to
 * it whole: a leave then moves keys only from the leaver, each arc to one
 * heir.  Without heirs every arc falls to the point after it, the node the
 * leaver took it from when it joined, and nodes that gave to several
 * leavers end far above their fair share.  Greedy: the leaver's arcs,
 * longest first, each to the node that ends lowest against its fair share
 * by weight with it (the leaver left out).
 *
 * Like the allocator, the choice is not part of the contract (the records
 * it leads to are).
 */
#include "error.h"
#include "ring_impl.h"
#include "state.h"

#include <stdlib.h>

#define TWO64 18446744073709551616.0

/* One of the leaver's tokens with the arc it owns. */
struct lot {
	uint64_t pos;
	double len;		/* share of the circle */
	uint32_t index;		/* in the leaver's tokens */
};

/* Longest arcs first, equal ones by position. */
static int cmp_lot(const void *a, const void *b)
{
	const struct lot *x = a, *y = b;

	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/*
 * The write view as it is with the leaver's points at its tokens (it may
 * be draining, and out of that view): the arcs of its tokens into lots[],
 * every other node's share into load[].  Points at one position: the
 * leaver's first when it drains (section 16), else by slot.
 */
static void measure(const hr_ring *ring, uint32_t slot, struct lot *lots,
		    double *load)
{
	const struct view *v = &ring->views[HR_VIEW_WRITE];
	const struct ring_node *rn = &ring->nodes[slot];
	bool first = rn->pub.state == HR_STATE_DRAINING;
	/* The view's point `at`, the i-th in ring order; the leaver's k-th
	 * token. */
	size_t at = view_first(v), i = 0, k = 0, total = v->npoints + rn->ntokens, seen = 0;
	uint64_t prev = 0, first_pos = 0;
	double *first_len = NULL;

	while (seen < total) {
		uint64_t pos;
		double *len;

		while (i < v->npoints && view_slot(v, at) == slot) {
			at = view_succ(v, at);
			i++;
			total--;
		}
		if (seen == total)
			break;
		if (k < rn->ntokens &&
		    (i == v->npoints || rn->tokens[k] < view_pos(v, at) ||
		     (rn->tokens[k] == view_pos(v, at) &&
		      (first || slot < view_slot(v, at))))) {
			pos = rn->tokens[k];
			lots[k] = (struct lot){ pos, 0, (uint32_t)k };
			len = &lots[k++].len;
		} else {
			pos = view_pos(v, at);
			len = &load[view_slot(v, at)];
			at = view_succ(v, at);
			i++;
		}
		if (!seen++) {
			first_pos = pos;
			first_len = len;
		} else {
			*len += (double)(pos - prev) / TWO64;
		}
		prev = pos;
	}
	/* The first point owns the wrap from the last one (all of the
	 * circle when every point is at one position). */
	if (first_len)
		*first_len += prev == first_pos ? 1.0 : (double)(first_pos - prev) / TWO64;
}

int hr_tokens_heirs(const hr_ring *ring, const hr_node *node,
		    const hr_node **heirs, hr_error *err)
{
	size_t slot = ring_slot(ring, node), best;
	const struct ring_node *rn;
	struct lot *lots = NULL;
	double *load = NULL, *fair = NULL, total = 0;
	uint32_t *gained = NULL;
	int rc = HR_OK;

	if (!ring || !node || !heirs)
		return hr__error_set(err, HR_EINVAL, "ring, node or heirs is NULL");
	if (!ring->pl->tokens)
		return hr__error_set(err, HR_EINVAL,
				     "heirs need a ring of the tokens placement, not %s",
				     ring->pl->name);
	if (slot == SIZE_MAX)
		return hr__error_set(err, HR_EINVAL, "the node is not one of this ring's");
	rn = &ring->nodes[slot];
	if (!rn->ntokens)
		return hr__error_set(err, HR_EINVAL,
				     "node \"%.*s\" has no tokens to hand over",
				     HR__ID_SHOWN, node->id);
	lots = malloc(rn->ntokens * sizeof *lots);
	load = calloc(ring->nnodes, sizeof *load);
	fair = calloc(ring->nnodes, sizeof *fair);
	gained = calloc(ring->nnodes, sizeof *gained);
	if (!lots || !load || !fair || !gained) {
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		goto done;
	}
	measure(ring, (uint32_t)slot, lots, load);
	qsort(lots, rn->ntokens, sizeof *lots, cmp_lot);
	for (size_t j = 0; j < ring->nnodes; j++)
		if (j != slot && hr__in_view(ring->nodes[j].pub.state, HR_VIEW_WRITE))
			total += ring->nodes[j].pub.weight;
	for (size_t j = 0; j < ring->nnodes; j++)
		if (j != slot && hr__in_view(ring->nodes[j].pub.state, HR_VIEW_WRITE))
			fair[j] = ring->nodes[j].pub.weight / total;
	for (size_t t = 0; t < rn->ntokens; t++) {
		double best_after = 0;

		best = SIZE_MAX;
		/* Only nodes with tokens can list one more: a node without
		 * has the hashed points of section 3 instead. */
		for (size_t j = 0; j < ring->nnodes; j++) {
			const struct ring_node *c = &ring->nodes[j];
			double after;

			if (!fair[j] || !c->ntokens ||
			    c->ntokens + gained[j] >= HR_TOKENS_MAX)
				continue;
			after = (load[j] + lots[t].len) / fair[j];
			if (best == SIZE_MAX || after < best_after) {
				best = j;
				best_after = after;
			}
		}
		if (best == SIZE_MAX) {
			rc = hr__error_set(err, HR_EINVAL,
					   "node \"%.*s\": no other node of the write view has tokens and room for more",
					   HR__ID_SHOWN, node->id);
			goto done;
		}
		load[best] += lots[t].len;
		gained[best]++;
		heirs[lots[t].index] = &ring->nodes[best].pub;
	}
done:
	free(lots);
	free(load);
	free(fair);
	free(gained);
	return rc;
}
