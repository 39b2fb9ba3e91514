/* SPDX-License-Identifier: MIT */
/*
 * same_ring.h - two rings that must be one ring (a derived ring and a full
 * build, a nodeset's ring and the reference rule's): every answer
 * compared, and the seeded choices the suites that compare them share.
 */
#ifndef HRT_SAME_RING_H
#define HRT_SAME_RING_H

#include "hashring.h"
#include "nodeset.h"
#include "ring_build.h"

#include <stddef.h>
#include <stdint.h>

/* A seeded choice in 0 .. n - 1. */
size_t below(uint64_t *rng, size_t n);
/* The point hash of the contract, XXH3_64bits. */
uint64_t xxh3(const void *buf, size_t len);
/* A weight of those that make rounding interesting, or a random one. */
double random_weight(uint64_t *rng);

/* The members' ids of a model membership: at most this many. */
#define UNIVERSE 40

/* d and f give the same owners for position `pos`. */
void expect_same_at(const hr_ring *d, const hr_ring *f, uint64_t pos);

/* d (derived) and f (full build) give the same answer to everything. */
void expect_same(const hr_ring *d, const hr_ring *f,
		 hr__point_hash_fn hash, uint64_t *rng);

/* Puts a record of node `id` (an address of its own, `weight`) into `s`,
 * created and last modified at revision `crev`. */
void put_record(hr__nodeset *s, const char *id, double weight, int64_t crev);

#endif
