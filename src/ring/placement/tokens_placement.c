/*
 * tokens_placement.c - the tokens placement (docs/placement.md section
 * 16): a node with tokens has one point at each, a node without has the
 * points of the native placement (section 3); keys sit as there.
 */
#include "ring_impl.h"
#include "ring_points.h"

/* What opens the digest: u32le(0), "tokn", then u32le(vnodes_per_weight)
 * (the points of nodes without tokens). */
#define DIGEST_WORD 0x6e6b6f74u

static size_t digest_opening(const hr_ring *ring, unsigned char *out)
{
	hr__put_u32le(out, 0);
	hr__put_u32le(out + 4, DIGEST_WORD);
	hr__put_u32le(out + 8, ring->vnodes_per_weight);
	return 12;
}

/* A node without tokens has the native count (section 3); the build
 * counts a node's tokens itself (ring_build.c, nodeset.c). */
static int node_points(const hr_node *node, unsigned vpw, unsigned *points,
		       hr_error *err)
{
	return hr__placement_xxh3.node_points(node, vpw, points, err);
}

/* A node with tokens has one point at each; the others are placed as the
 * native placement places them. */
static void point_positions(const hr_ring *ring, uint32_t slot, unsigned from,
			    unsigned to, struct point *p)
{
	const struct ring_node *rn = &ring->nodes[slot];

	if (!rn->ntokens) {
		hr__placement_xxh3.point_positions(ring, slot, from, to, p);
		return;
	}
	for (unsigned i = from; i < to; i++, p++) {
		p->pos = rn->tokens[i];
		p->node = slot;
	}
}

static bool draining(const hr_ring *ring, const struct view *v, size_t i)
{
	return ring->nodes[view_node(v, i)].pub.state == HR_STATE_DRAINING;
}

/*
 * Points at one position: a draining node's first, then by id (section
 * 16), so that a leaver keeps the reads of a token it has handed to an
 * heir, whose point at it takes the writes (the write view has no
 * draining node).  Such runs are short and rare: insertion, moving only
 * node numbers.
 */
static void draining_first(const hr_ring *ring, struct view *v)
{
	for (size_t i = 1; i < v->npoints; i++) {
		size_t b = i - 1;

		if (v->pos[i] != v->pos[b])
			continue;
		for (; i < v->npoints && v->pos[i] == v->pos[b]; i++) {
			uint32_t node = view_node(v, i);
			size_t k = i;

			if (!draining(ring, v, i))
				continue;
			for (; k > b && !draining(ring, v, k - 1); k--)
				view_set_node(v, k, view_node(v, k - 1));
			view_set_node(v, k, node);
		}
	}
}

/* The build counted the points (a node's tokens, or section 3's count):
 * every point placed afresh, since a node's points follow its record. */
static int fill_views(hr_ring *ring, const hr_ring *prev, hr_error *err)
{
	int rc = hr__points_fill_fresh(ring, point_positions, err);

	(void)prev;
	for (size_t j = 0; !rc && j < ring->nnodes; j++) {
		if (ring->nodes[j].pub.state == HR_STATE_DRAINING) {
			draining_first(ring, &ring->views[HR_VIEW_READ]);
			break;
		}
	}
	return rc;
}

const hr__placement hr__placement_tokens = {
	.name = "tokens",
	.digest_opening = digest_opening,
	.node_points = node_points,
	.point_positions = NULL, /* points follow the record, not id and index */
	.fill_views = fill_views,
	.key_pos = NULL,	 /* XXH3_64bits(key), as native */
	.tokens = true,
};
