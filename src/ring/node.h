/* SPDX-License-Identifier: MIT */
/* node.h - one node's validity: the rules of hr_node (hashring.h) and of
 * the placement a ring uses, checked the same way wherever a node enters
 * (internal). */
#ifndef HR_NODE_H
#define HR_NODE_H

#include "hashring.h"

#include <stdbool.h>

/* Room for hr__show() of any string. */
#define HR__SHOW_SIZE (64 * 4 + 8)

/* Writes `s` (`len` bytes, not yet validated) into buf for a message:
 * printable ASCII as is, anything else (and '"', '\\') as \xNN, cut after
 * 64 bytes with "...".  Returns buf. */
const char *hr__show(char *buf, size_t size, const char *s, size_t len);

/* A byte no text field may hold. */
static inline bool hr__is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* Checks a node id (`len` bytes).  HR_EINVAL or HR_ELIMIT with a reason. */
int hr__id_validate(const char *id, size_t len, hr_error *err);

/* Checks an address of `len` bytes for the node `id` (valid): the addr rule
 * of hr__node_validate().  HR_EINVAL or HR_ELIMIT. */
int hr__addr_validate(const char *id, const char *addr, size_t len,
		      hr_error *err);

/* Checks one node against the rules in hashring.h; the message names the
 * node and the field.  HR_EINVAL or HR_ELIMIT. */
int hr__node_validate(const hr_node *node, hr_error *err);

/* Checks that a valid node's weight is one a node record may carry:
 * HR_RECORD_WEIGHT_MIN to HR_RECORD_WEIGHT_MAX.  HR_EINVAL naming the node
 * and the range. */
int hr__record_weight_validate(const hr_node *node, hr_error *err);

/*
 * The points a valid `node` has in a ring built with `opts` (may be NULL),
 * checked with that ring's placement: docs/placement.md section 3, or 11
 * for ketama, where the continuum decides the count (*points is 0) and the
 * node is only checked to be placeable (HR_EINVAL).  HR_ELIMIT when the
 * node alone is over HR_POINTS_MAX, the message naming the node and the
 * limit; HR_EINVAL for an unknown placement.  The one per-node check of
 * ring builds and of the records a watcher follows.
 */
int hr__node_points(const hr_node *node, const hr_ring_options *opts,
		    unsigned *points, hr_error *err);

/* The points per unit of weight `opts` ask for (NULL, 0: the default). */
unsigned hr__vnodes_per_weight(const hr_ring_options *opts);

#endif
