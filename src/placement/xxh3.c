/* SPDX-License-Identifier: MIT */
/*
 * xxh3.c - the native placement, docs/placement.md sections 1 and 3: a
 * node of weight w has max(1, round(w * vnodes_per_weight)) points, point i
 * at XXH3_64bits("<id>#<i>"), and a key sits at XXH3_64bits(key).  A
 * node's points depend on its id and their index alone.
 */
#include "placement.h"

#include "decimal.h"
#include "error.h"

#include <math.h>
#include <string.h>

/* The digest opens with vnodes_per_weight (never 0). */
static size_t digest_opening(const hr__place_opts *o, unsigned char *out)
{
	hr__put_u32le(out, o->vnodes_per_weight);
	return 4;
}

static int node_points(const hr_node *node, unsigned vpw, unsigned *points,
		       hr_error *err)
{
	double x, v;

	/* Compared in double arithmetic before any conversion, so that no
	 * weight, however large, overflows one. */
	x = node->weight * (double)vpw;
	if (!(x <= (double)HR_POINTS_MAX))
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%.*s\": weight %.15g gives %.15g points at %u per unit of weight,"
				     " more than %u points, a ring's limit",
				     HR__ID_SHOWN, node->id, node->weight, x, vpw,
				     HR_POINTS_MAX);
	v = round(x);
	*points = v < 1 ? 1 : (unsigned)v;
	return HR_OK;
}

/* Point i of a node is at hash("<id>#<i>"), the ring's point hash being
 * XXH3_64bits but for tests. */
static void point_positions(const hr__place_opts *o, const hr__place_node *node,
			    uint32_t slot, unsigned from, unsigned to, struct point *p)
{
	char name[HR_ID_MAX + 16];
	size_t len = node->id_len;

	memcpy(name, node->id, len);
	name[len] = '#';
	for (unsigned i = from; i < to; i++, p++) {
		size_t dl = hr__decimal(name + len + 1, i);

		p->pos = o->hash(name, len + 1 + dl);
		p->node = slot;
	}
}

const hr__placement hr__placement_xxh3 = {
	.name = "xxh3",
	.kind = HR__PLACE_POINTS,
	.digest_opening = digest_opening,
	.node_points = node_points,
	.point_positions = point_positions,
	.by_index = true,
	.key_pos = NULL,	/* hr_hash_key(), inline on the lookup path */
};
