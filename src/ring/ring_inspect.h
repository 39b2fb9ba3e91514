/* SPDX-License-Identifier: MIT */
/*
 * ring_inspect.h - what may be read of a built ring beyond the public API:
 * its views' points one by one, in ring order, and how the ring keeps
 * them.  An internal interface of the ring layer that the tools of src/cli/
 * may use too (`hashring serve` draws the arcs with the walk, `hashring sim
 * --compare` reports the bytes); docs/architecture.md lists such
 * interfaces, tests/tools/check_cycles.py holds the tools to them.
 * ring.h includes it for the library's own rooms.
 */
#ifndef HR_RING_INSPECT_H
#define HR_RING_INSPECT_H

#include "hashring.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether the write and the read view are one array (no node warms or
 * drains): every key then has one owner in both, and lookup counts keep
 * only the write count of such a ring (counters.h). */
bool hr__ring_views_shared(const hr_ring *ring);

/* True for a ring of rendezvous placement, whose keys are not on arcs. */
bool hr__ring_rendezvous(const hr_ring *ring);

/* Bytes the ring holds, as asked of malloc (not the allocator's own
 * overhead): the ring, its nodes and their strings, and its views' points,
 * index and node numbers, a block shared by both views counted once.  0
 * for NULL.  For figures (`hashring sim --compare`). */
size_t hr__ring_bytes(const hr_ring *ring);

/* Number of nodes and points in one view. */
size_t hr__ring_view_nodes(const hr_ring *ring, hr_view view);
size_t hr__ring_view_points(const hr_ring *ring, hr_view view);

/* Point i (0 <= i < hr__ring_view_points()) of a view, in ring order: its
 * position and its node's index in id order.  HR_EINVAL out of range.
 * For walks over the circle (bounded loads, tests, the dashboard). */
int hr__ring_view_point(const hr_ring *ring, hr_view view, size_t i,
			uint64_t *pos, size_t *node);

/* Index of the point owning `pos` in a view that is not empty: the first
 * at or after it, wrapping to 0. */
size_t hr__ring_view_find(const hr_ring *ring, hr_view view, uint64_t pos);

/* The point after point `i` in the walk from `pos` (preference lists,
 * bounded loads): the next clockwise, wrapping; for rendezvous the node of
 * the next lower score. */
size_t hr__ring_view_next(const hr_ring *ring, hr_view view, uint64_t pos,
			  size_t i);

#endif
