/* SPDX-License-Identifier: MIT */
/* ring_build.h - building rings: from a caller's nodes (checked), from
 * nodes already valid (the nodeset, members documents), derived from the
 * previous ring (internal). */
#ifndef HR_RING_BUILD_H
#define HR_RING_BUILD_H

#include "hashring.h"
#include "ring.h"
#include "ring_impl.h"	/* hr__layout, hr__point_hash_fn */

#include <stdbool.h>

struct hr__tokens;
struct hr__ring_stream;

/* The contract's point hash of named points (docs/placement.md): every
 * ring's but those tests build with another (hr__ring_build_hashed). */
uint64_t hr__point_hash_contract(const void *buf, size_t len);

/* hr_ring_build() with the point hash given explicitly. */
int hr__ring_build_hashed(const hr_node *nodes, size_t n,
			  const hr_ring_options *opts, uint64_t revision,
			  hr__point_hash_fn hash, hr_ring **out, hr_error *err);

/* hr__ring_build_hashed() with its points' layout chosen (hr__layout);
 * the rings derived from it keep it.  Tests compare the two layouts on the
 * same rings. */
int hr__ring_build_layout(const hr_node *nodes, size_t n,
			  const hr_ring_options *opts, uint64_t revision,
			  hr__point_hash_fn hash, hr__layout layout,
			  hr_ring **out, hr_error *err);

/*
 * hr_ring_build() of `nodes` by way of `prev` (NULL: a full build): the
 * points of nodes whose id and vnode count prev already had are reused, so
 * a small change costs about one pass over the points instead of hashing
 * and sorting them all.  The ring is identical to a full build's with
 * prev's point hash (same points, digest and answers); placement options
 * other than prev's, or a large change, take the full build.
 */
int hr__ring_derive(const hr_ring *prev, const hr_node *nodes, size_t n,
		    const hr_ring_options *opts, uint64_t revision,
		    hr_ring **out, hr_error *err);

/*
 * hr__ring_derive() for nodes that already passed hr__node_validate():
 * `nodes` holds `n` pointers (at most HR_NODES_MAX), in any order unless
 * `in_order` says they are in id order and unique (a nodeset's: not
 * checked); the nodes are copied.  `tokens` (may be NULL) is parallel to
 * `nodes`: each node's tokens (NULL: none), checked (hr__tokens_parse,
 * _copy) and read by a placement placed by them, ignored by the others.
 * Checks the placement, that the ids are unique (HR_EDUPLICATE) and the
 * placement's rules and limits; the rest of each node is trusted.
 * `stream` (may be NULL) holds the points placed while the nodes arrived
 * (ring_stream.h): a full build takes them when they are these nodes'.
 */
int hr__ring_build_valid(const hr_ring *prev, const hr_node *const *nodes,
			 const struct hr__tokens *const *tokens, size_t n,
			 bool in_order, const hr_ring_options *opts,
			 uint64_t revision, struct hr__ring_stream *stream,
			 hr_ring **out, hr_error *err);

/* The options `ring` was built with: its placement, points per weight
 * and Maglev table size (with hr__ring_derive(ring, ...), a ring built as
 * it was). */
void hr__ring_options_of(const hr_ring *ring, hr_ring_options *out);

#endif
