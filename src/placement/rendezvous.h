/* SPDX-License-Identifier: MIT */
/*
 * rendezvous.h - weighted rendezvous (highest random weight) placement by
 * the logarithmic method (internal; docs/placement.md section 15 is the
 * specification).  A view holds no points on the circle but its nodes'
 * score inputs (a scores view, src/ring/view.h); a key goes to the node of
 * highest score, and the walk of a preference list or a bounded lookup is
 * the order of descending scores.  What moves between two rings follows
 * from the weights alone.  The placement itself is
 * hr__placement_rendezvous (placement.h).
 */
#ifndef HR_RENDEZVOUS_H
#define HR_RENDEZVOUS_H

#include "hashring.h"

#include <stddef.h>
#include <stdint.h>

/* The weights rendezvous places: their scores neither overflow nor lose
 * bits to subnormals (section 15, "Nodes"). */
#define HR__RDV_WEIGHT_MIN 1e-300
#define HR__RDV_WEIGHT_MAX 1e290

/* What a view keeps per node, in id order: the score's inputs. */
struct rdv_member {
	unsigned char id_hash[8];	/* u64le(XXH3_64bits(id)) */
	double weight;
};

/* The score inputs of a node of id id[0 .. len) and weight `weight`. */
void hr__rdv_member(struct rdv_member *m, const char *id, size_t len,
		    double weight);

/* The score of `m` for the key hash `k` (section 15, "Scores"). */
double hr__rdv_score(const struct rdv_member *m, uint64_t k);

/* The natural logarithm of section 15, from IEEE-754 basic operations
 * alone; `x` in (0, 1). */
double hr__rdv_ln(double x);

/* The index among m[0 .. n) (n > 0, in id order) of the highest score for
 * the key hash `k`: the owner. */
size_t hr__rdv_find(const struct rdv_member *m, size_t n, uint64_t k);

/* The index after `i` in the walk for `k`: the next lower score (equal
 * scores in id order); `i` itself if none is lower. */
size_t hr__rdv_next(const struct rdv_member *m, size_t n, uint64_t k, size_t i);

/* W: the weights of m[0 .. n) added in id order; a node's share of the
 * keys is its weight over W. */
double hr__rdv_weight(const struct rdv_member *m, size_t n);

/* A node of two rings' views (either may lack it), with its weight in
 * each: 0 where it is not in the view.  `rho` is the formulas' own. */
struct rdv_pair {
	const hr_node *an, *bn;
	double a, b;
	double rho;
};

/* The share of keys whose owner differs between two rendezvous views
 * whose nodes, matched by id, are u[0 .. n) (W: wa and wb), by the
 * formula of section 15; NAN when out of memory. */
double hr__rdv_moved(struct rdv_pair *u, size_t n, double wa, double wb);

/* qsort() order of hr_arc_total: by the old node's id, then the new
 * node's (NULL first). */
int hr__rdv_total_cmp(const void *x, const void *y);

/* The per-pair totals (old node, new node, share) of a diff between the
 * same two views: *out (malloc'ed, NULL if none), sorted by ids, and *nout.
 * HR_ENOMEM. */
int hr__rdv_totals(struct rdv_pair *u, size_t n, double wa, double wb,
		   hr_arc_total **out, size_t *nout);

#endif
