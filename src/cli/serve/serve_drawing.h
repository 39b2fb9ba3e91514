/* SPDX-License-Identifier: MIT */
/*
 * serve_drawing.h - the insides of a drawing of `hashring serve`, shared by
 * the files that make and write one (and by nothing else: the rest of serve
 * sees serve.h):
 *   serve_walk.c          the walk over a ring's points: arcs, takeover, shares
 *   serve_drawing_json.c  the JSON of a drawing: /overview.json's and
 *                         /ring.json's "ring", a node's row
 *   serve_nodes.c         the nodes in order: by load, by share, and the
 *                         pages of /nodes.json
 *   serve_drawer.c        the drawer thread, and its publication of each
 *                         drawing to the HTTP thread
 */
#ifndef HR_CLI_SERVE_DRAWING_H
#define HR_CLI_SERVE_DRAWING_H

#include "serve.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a drawing holds; immutable once published. */
struct serve_drawing {
	unsigned refs;       /* counted references, atomic */
	hr_ring *ring;
	uint64_t seq;
	size_t n;
	double *shares;      /* write, read, fair write, fair read: n each */
	uint32_t *by_load;   /* node numbers, most loaded first */
	uint32_t *by_share;  /* largest write share first */
	char *overview, *full;
	size_t overview_len, full_len;
};

/* Whether the drawer is stopping: what the long loops look at (the flag is
 * set under the drawer's mutex, read without it). */
static inline int serve_stopping(const int *stop)
{
	return __atomic_load_n(stop, __ATOMIC_ACQUIRE);
}

/* ---- the walk (serve_walk.c) --------------------------------------------- */

struct serve_arc {
	uint64_t start;
	uint32_t node; /* the ring's node number, CLI_NO_NODE for none */
};

/* The arcs of one view, each ending where the next starts. */
struct serve_arcs {
	uint64_t min_len;  /* thinned: a shorter arc joins the one before */
	size_t thin_over;  /* thinned once there are more arcs than this;
			      0: from the start */
	int thin;
	struct serve_arc *a;
	size_t n, cap;
	int open;          /* the arc under way */
	uint64_t start;
	uint32_t node;
	int failed;        /* out of memory */
};

/* A stretch whose read owner is not its write owner; `last` inclusive. */
struct serve_take {
	uint64_t first, last;
	uint32_t read, write;
};

/* The stretches whose two owners differ, adjacent ones with the same
 * owners joined; with `gap`, also one that starts that close to the one
 * before (which keeps its owners): the page's, from the full ones. */
struct serve_takes {
	uint64_t gap;
	struct serve_take *t;
	size_t n, cap;
	int failed;
};

/* What a walk makes, by view: the arcs in full (/ring.json) and for the
 * page's circle (/overview.json), the takeover likewise, and the share of
 * the circle taken over. */
struct serve_walk {
	struct serve_arcs full[2], page[2];
	struct serve_takes full_take, page_take;
	double takeover_share;
};

/* Walks `ring` (stopping early once *stop is set), each node's share of
 * the write view into shares[0..n) and of the read view into
 * shares[n..2n).  Returns 0 with *out (serve_walk_free()), HR_ENOMEM, or
 * SERVE_WALK_STOPPED. */
#define SERVE_WALK_STOPPED (-1)
int serve_walk_ring(const hr_ring *ring, double *shares, const int *stop,
		    struct serve_walk **out);
void serve_walk_free(struct serve_walk *w);

/* ---- JSON (serve_drawing_json.c) ----------------------------------------- */

/* /overview.json's "ring": 0 or HR_ENOMEM. */
int serve_drawing_overview_json(FILE *out, const struct serve_drawing *d,
				const struct serve_walk *w);
/* /ring.json's "ring": every node, and the arcs in full; left unfinished
 * once *stop is set. */
void serve_drawing_full_json(FILE *out, const struct serve_drawing *d,
			     const struct serve_walk *w, const int *stop);
/* Node i as a row, without the closing brace (a caller may add members). */
void serve_drawing_node_json(FILE *out, const struct serve_drawing *d, size_t i);

/* ---- orders (serve_nodes.c) ------------------------------------------------ */

/* A node's load: its write share over its fair share; -1 outside the
 * write view, which sorts it after every node in it. */
double serve_drawing_load(const struct serve_drawing *d, size_t i);
/* d->by_load and d->by_share, from d->shares: 0 or HR_ENOMEM. */
int serve_drawing_orders(struct serve_drawing *d);

#endif
