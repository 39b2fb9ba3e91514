/*
 * rendezvous.h - weighted rendezvous (highest random weight) placement by
 * the logarithmic method (internal; docs/placement.md section 15 is the
 * specification).  A view holds no points on the circle but its nodes'
 * score inputs; a key goes to the node of highest score, and the walk of a
 * preference list or a bounded lookup is the order of descending scores.
 * The placement itself is hr__placement_rendezvous (placement.h).
 */
#ifndef HR_RENDEZVOUS_H
#define HR_RENDEZVOUS_H

#include "hashring.h"

#include <stddef.h>
#include <stdint.h>

struct view;

/* The weights rendezvous places: their scores neither overflow nor lose
 * bits to subnormals (section 15, "Nodes"). */
#define HR__RDV_WEIGHT_MIN 1e-300
#define HR__RDV_WEIGHT_MAX 1e290

/* What a view keeps per node, in id order: the score's inputs. */
struct rdv_member {
	unsigned char id_hash[8];	/* u64le(XXH3_64bits(id)) */
	double weight;
};

/* The score of `m` for the key hash `k` (section 15, "Scores"). */
double hr__rdv_score(const struct rdv_member *m, uint64_t k);

/* The natural logarithm of section 15, from IEEE-754 basic operations
 * alone; `x` in (0, 1). */
double hr__rdv_ln(double x);

/* The index in `v` (a rendezvous view, not empty) of the highest score
 * for the key hash `k`: the owner. */
size_t hr__rdv_find(const struct view *v, uint64_t k);

/* The index after `i` in the walk for `k`: the next lower score (equal
 * scores in id order); `i` itself if none is lower. */
size_t hr__rdv_next(const struct view *v, uint64_t k, size_t i);

/* The share w / W of a node of weight `weight` in rendezvous view `v`. */
double hr__rdv_share(const struct view *v, double weight);

/* Every node's share of view `view` of `ring` (a rendezvous ring): w/W
 * into out[slot], 0 for nodes not in the view; out has ring->nnodes. */
void hr__rdv_shares(const hr_ring *ring, hr_view view, double *out);

/* The share of keys whose owner in `view` differs between two rendezvous
 * rings (either may be NULL), by the formula of section 15. */
double hr__rdv_moved_share(const hr_ring *a, const hr_ring *b, hr_view view);

/* The per-pair totals of a diff between two rendezvous rings (either may
 * be NULL): *out (malloc'ed, NULL if none) and *n.  HR_ENOMEM. */
int hr__rdv_totals(const hr_ring *a, const hr_ring *b, hr_view view,
		   hr_arc_total **out, size_t *n);

#endif
