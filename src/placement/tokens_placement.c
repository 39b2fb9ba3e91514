/* SPDX-License-Identifier: MIT */
/*
 * tokens_placement.c - the tokens placement (docs/placement.md section
 * 16): a node with tokens has one point at each, a node without has the
 * points of the native placement (section 3); keys sit as there.  Points
 * at one position take a draining node's first.
 */
#include "placement.h"

/* What opens the digest: u32le(0), "tokn", then u32le(vnodes_per_weight)
 * (the points of nodes without tokens). */
#define DIGEST_WORD 0x6e6b6f74u

static size_t digest_opening(const hr__place_opts *o, unsigned char *out)
{
	hr__put_u32le(out, 0);
	hr__put_u32le(out + 4, DIGEST_WORD);
	hr__put_u32le(out + 8, o->vnodes_per_weight);
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
static void point_positions(const hr__place_opts *o, const hr__place_node *node,
			    uint32_t slot, unsigned from, unsigned to, struct point *p)
{
	if (!node->ntokens) {
		hr__placement_xxh3.point_positions(o, node, slot, from, to, p);
		return;
	}
	for (unsigned i = from; i < to; i++, p++) {
		p->pos = node->tokens[i];
		p->node = slot;
	}
}

const hr__placement hr__placement_tokens = {
	.name = "tokens",
	.kind = HR__PLACE_POINTS,
	.digest_opening = digest_opening,
	.node_points = node_points,
	.point_positions = point_positions,
	.by_index = false,	/* points follow the record, not id and index */
	.draining_first = true,
	.key_pos = NULL,	/* XXH3_64bits(key), as native */
	.tokens = true,
};
