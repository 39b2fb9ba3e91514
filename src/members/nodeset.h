/* SPDX-License-Identifier: MIT */
/* nodeset.h - the current membership: valid node records keyed by id, from
 * which each new ring is built (internal).  Single-threaded. */
#ifndef HR_NODESET_H
#define HR_NODESET_H

#include "record.h"
#include "ring_stream.h"
#include "tokens.h"

#include <stdbool.h>

/* A record in the set, with what etcd says about its key. */
typedef struct hr__member {
	hr__record rec;          /* valid (hr__record_parse) */
	hr__tokens tokens;       /* its record's (tokens placement), or none */
	int64_t create_revision; /* orders admission (see hr__nodeset_derive) */
	int64_t mod_revision;
	bool left_out;           /* not in the last ring built from the set */
} hr__member;

typedef struct hr__nodeset {
	hr__member *m;      /* sorted by id, bytewise */
	size_t n, cap;
	/* A ring's limits; 0 means HR_NODES_MAX and HR_POINTS_MAX (tests
	 * lower them to exercise admission on small rings). */
	size_t max_nodes, max_points;
	/* NULL, or the points of the nodes put in id order, placed as they
	 * come (ring_stream.h) for the next build, which takes them.  Any
	 * other change spoils it.  The set frees it. */
	hr__ring_stream *stream;
} hr__nodeset;

/* Inserts or replaces the record with rec->id, a valid record as
 * hr__record_parse() gives, taking over its strings (the caller's `rec` is
 * zeroed), with its key's create and mod revisions.  HR_ENOMEM leaves the
 * set as it was. */
int hr__nodeset_put(hr__nodeset *s, hr__record *rec, int64_t create_revision,
		    int64_t mod_revision);

/* hr__nodeset_put() of a record with its tokens (n == 0: none), whose
 * array the set takes over as well (`tokens` zeroed). */
int hr__nodeset_put_tokens(hr__nodeset *s, hr__record *rec, hr__tokens *tokens,
			   int64_t create_revision, int64_t mod_revision);

/* Removes `id`; returns 1 if it was there, else 0. */
int hr__nodeset_remove(hr__nodeset *s, const char *id);

/* Empties the set (its limits stay; its stream is freed). */
void hr__nodeset_clear(hr__nodeset *s);

/* Called for each member the ring leaves out that the previous build of the
 * set did not leave out (or that was put since), with the reason. */
typedef void (*hr__left_out_fn)(void *userdata, const hr__member *m,
				const hr_error *why);

/*
 * Builds the ring of the set at `revision`, derived from `prev` (may be
 * NULL) to save work when few nodes changed (see hr__ring_derive).
 *
 * The ring holds every member it can (docs/placement.md, "Rings that follow
 * etcd"): a member whose own points exceed the point limit (or that ketama
 * placement cannot place) is left out; when the others exceed the node or
 * point limit together, they are taken in order of (create_revision, id),
 * each one that still fits, and the rest left out.  So the ring depends on
 * the records alone, and the members that were there first stay.  Sets each
 * member's left_out and calls `left_out` (may be NULL) for the newly left
 * out.  Errors: HR_ENOMEM, leaving the set as it was.
 */
int hr__nodeset_derive(hr__nodeset *s, const hr_ring *prev,
		       const hr_ring_options *opts, uint64_t revision,
		       hr__left_out_fn left_out, void *userdata, hr_ring **out,
		       hr_error *err);

/* hr__nodeset_derive() without a previous ring or a callback. */
int hr__nodeset_build(hr__nodeset *s, const hr_ring_options *opts,
		      uint64_t revision, hr_ring **out, hr_error *err);

#endif
