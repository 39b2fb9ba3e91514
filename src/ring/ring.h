/* SPDX-License-Identifier: MIT */
/* ring.h - a built ring's references, accessors and lookups: the internal
 * side of ring.c, for the library's other rooms and for tests. */
#ifndef HR_RING_H
#define HR_RING_H

#include "hashring.h"
#include "ring_inspect.h"
#include "state.h"

#include <stdbool.h>
#include <stdint.h>

/* Whether the ring keeps its points in pages (for tests). */
bool hr__ring_paged(const hr_ring *ring);

/* hr_ring_lookup() for a position already hashed.  Same results. */
int hr__ring_lookup_pos(const hr_ring *ring, uint64_t pos, hr_lookup *out);

/* The HR_EINVAL of a lookup's arguments, in `err`: `obj` (the ring,
 * client or counter, named `what`) or `out` NULL, or a NULL key of
 * non-zero length.  Call it only when one of them is wrong. */
int hr__lookup_args(hr_error *err, const void *obj, const char *what,
		    const void *out, const void *key, size_t len);

/* A lookup's failure `rc` (HR_EEMPTY, ...) in `err`; returns rc.  Out of
 * the lookups' hot paths. */
int hr__lookup_failed(hr_error *err, int rc) __attribute__((cold));

/* hr_ring_preflist() for a position already hashed.  Same results. */
int hr__ring_preflist_pos(const hr_ring *ring, uint64_t pos, hr_view view,
			  const hr_node **out, size_t r);

/* Whether hr__ring_derive() reused the previous ring's points (for tests
 * and figures: the answers are the same either way). */
bool hr__ring_derived(const hr_ring *ring);

/* Releases `ring` and returns true if the caller holds its only reference;
 * otherwise returns false and changes nothing.  Sound only when nobody can
 * take a new reference meanwhile (a ring out of publication). */
bool hr__ring_release_if_last(hr_ring *ring);

/*
 * A new ring object that answers exactly as `ring` does, sharing all its
 * memory and holding a reference to it (to its origin, for an alias): for
 * clients that follow one watcher, each publisher gets a ring object of
 * its own, so that a thread's cached reference (thread_cache.h) names one
 * client's ring and that client's counts.  NULL when out of memory.
 */
hr_ring *hr__ring_alias(hr_ring *ring);

/* Points per unit of weight the ring was built with. */
unsigned hr__ring_vnodes_per_weight(const hr_ring *ring);


/* A key's position on the ring's circle: hr_hash_key(), or in ketama mode
 * the MD5 key hash shifted into the top 32 bits. */
uint64_t hr__ring_key_pos(const hr_ring *ring, const void *key, size_t len);

#endif
