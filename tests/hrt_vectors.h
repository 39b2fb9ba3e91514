/* SPDX-License-Identifier: MIT */
/* hrt_vectors.h - the check of one placement vector set (the "sets" of
 * tests/vectors/ files) against a ring, shared by the unit suites of every
 * placement (tests only; linked into every unit suite). */
#ifndef HRT_VECTORS_H
#define HRT_VECTORS_H

#include "hashring.h"

#include <cjson/cJSON.h>

#include <stdbool.h>

/* The ring hr_ring_from_json() builds from `set`'s members with `opts`;
 * the test fails if it cannot.  hr_ring_release() it. */
hr_ring *hrt_vectors_ring(const cJSON *set, const hr_ring_options *opts);

/* Checks `ring`, built by the caller from `set`'s members and options,
 * against `set`: its digest, point_count, vnodes and write and read
 * shares, and every one of its (at least 1000) keys' write and read owners
 * and first `r` replicas of each view (r: the document's "replicas", at
 * most 8).  `may_be_empty`: a lookup may answer HR_EEMPTY (a set whose
 * members own nothing in a view); otherwise every lookup must be HR_OK. */
void hrt_vectors_check_set(const cJSON *set, const hr_ring *ring, int r,
			   bool may_be_empty);

#endif
