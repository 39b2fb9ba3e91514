/* nodeset.h - the current membership: valid node records keyed by id, from
 * which each new ring is built (internal).  Single-threaded. */
#ifndef HR_NODESET_H
#define HR_NODESET_H

#include "member.h"

typedef struct hr__nodeset {
	hr__record *recs;   /* sorted by id, bytewise */
	size_t n, cap;
} hr__nodeset;

/* Inserts or replaces the record with rec->id, taking over its strings (the
 * caller's `rec` is zeroed).  HR_ENOMEM leaves the set as it was. */
int hr__nodeset_put(hr__nodeset *s, hr__record *rec);

/* Removes `id`; returns 1 if it was there, else 0. */
int hr__nodeset_remove(hr__nodeset *s, const char *id);

/* Empties the set. */
void hr__nodeset_clear(hr__nodeset *s);

/* Builds a ring of the set's nodes at `revision` (see hr_ring_build). */
int hr__nodeset_build(const hr__nodeset *s, const hr_ring_options *opts,
		      uint64_t revision, hr_ring **out, hr_error *err);

/* The same ring, derived from `prev` (may be NULL) to save work when few
 * nodes changed (see hr__ring_derive). */
int hr__nodeset_derive(const hr__nodeset *s, const hr_ring *prev,
		       const hr_ring_options *opts, uint64_t revision,
		       hr_ring **out, hr_error *err);

#endif
