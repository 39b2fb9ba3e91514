/* SPDX-License-Identifier: MIT */
/* sim_rows.h - the figures of `hashring sim`, computed by their definitions
 * on the library's ring built with any point hash (tests only).
 *
 * N nodes "node-0".."node-<N-1>" (weight 1, active) and K keys
 * "key-0".."key-<K-1>".  The share of keys that `hash % N` moves when N
 * grows by one; then, for a vnode count, the balance of the ring (heaviest
 * and lightest node over the mean, population standard deviation of
 * keys/mean) and the share of keys that move when "node-<N>" joins, beside
 * the ideal 1/(N+1).  Keys and point names ("<id>#<i>") are hashed with the
 * same function, and each key goes to the first point at or after it.
 *
 * With XXH3 these are the figures `hashring sim` must print; with MD5 or
 * FNV-1a they are the seed articles' tables (tests/tools/sim_hashes.c). */
#ifndef HRT_SIM_ROWS_H
#define HRT_SIM_ROWS_H

#include "ring.h"
#include "ring_build.h"

typedef struct hrt_sim_row {
	unsigned long vnodes;
	double max_mean;
	double min_mean;
	double stddev;
	double moved;
	double ideal_moved;
} hrt_sim_row;

/* The point and key hashes the tables are made with. */
uint64_t hrt_sim_xxh3(const void *s, size_t len);
uint64_t hrt_sim_md5(const void *s, size_t len);   /* first 8 bytes, big-endian */
uint64_t hrt_sim_fnv1a(const void *s, size_t len); /* 64-bit FNV-1a */

/* The share of the keys whose hash % nodes differs from hash % (nodes + 1). */
double hrt_sim_modulo_moved(hr__point_hash_fn hash, unsigned long nodes,
			    unsigned long keys);

/* One row; 0, or the HR_E* code of a ring that could not be built (err says
 * why). */
int hrt_sim_row_of(hr__point_hash_fn hash, unsigned long nodes, unsigned long keys,
		   unsigned long vnodes, hrt_sim_row *row, hr_error *err);

#endif
