/* SPDX-License-Identifier: MIT */
/*
 * cli_svg.h - plain SVG written by the commands (`nodes --svg`, `sim
 * --svg`, `sim --compare --svg`), and the ring's arcs that both the plots and the dashboard draw.
 */
#ifndef HR_CLI_SVG_H
#define HR_CLI_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hashring.h"

#define CLI_NO_NODE UINT32_MAX

/* A view with more arcs than this is drawn with those shorter than
 * CLI_ARC_MIN_LEN (1/16384 of the circle, under a tenth of a pixel)
 * merged into the one before, in the plots and the dashboard alike. */
#define CLI_ARCS_DRAWN_MAX 4096
#define CLI_ARC_MIN_LEN (UINT64_C(1) << 50)

/* An arc [start, end) of a view (end 0 stands for 2^64) and its owner's
 * number in the ring (hr_ring_node(ring, node)), or CLI_NO_NODE. */
struct cli_arc {
	uint64_t start, end;
	uint32_t node;
};

/*
 * Every arc of `view` in ring order from position 0, adjacent arcs of one
 * owner merged: the public diff of an empty ring and `ring`.  An empty
 * view is one arc without owner.  A rendezvous ring, whose keys are not
 * on arcs, shows each node's share as one arc, in id order.  Returns the count (at least 1) with
 * *out malloc'd, or 0 without memory.
 */
size_t cli_ring_arcs(const hr_ring *ring, hr_view view, struct cli_arc **out);

/*
 * Calls `fn` for every stretch of the circle where the write view's owner
 * differs from the read view's (the arcs a warming node takes over, or a
 * draining one hands over), in ring order: start and end as shares of the
 * circle, then the read and the write owner.  Returns the share they sum
 * to.
 */
typedef void (*cli_takeover_fn)(void *userdata, double start, double end,
				uint32_t read_node, uint32_t write_node);
double cli_takeover(const struct cli_arc *w, size_t nw, const struct cli_arc *r,
		    size_t nr, cli_takeover_fn fn, void *userdata);

/* Position as a share of the circle, in [0, 1). */
double cli_arc_share(uint64_t pos);

/* Each node's fair share of `view`, by weight alone, into shares[0..n) (n
 * the ring's node count): 0 for a node the view leaves out.  The plots and
 * the dashboard set it against the node's real share. */
void cli_fair_shares(const hr_ring *ring, hr_view view, double *shares, size_t n);

/* A node's hue, 0-359, from its id alone: a node keeps its colour while
 * others come and go, in the plots and the dashboard alike. */
unsigned cli_node_hue(const char *id);

/* Writes `s` as XML character data or an attribute value: & < > " '
 * escaped, valid UTF-8 kept, every other byte (and the control bytes XML
 * cannot hold) as U+FFFD. */
void cli_svg_text(FILE *out, const char *s);

/*
 * `nodes --svg`: the ring as a circle (outer band the write view, inner
 * band the read view, dashed arcs outside where they differ) beside each
 * node's share of the write view against its fair share by weight.
 * Returns 0 or HR_ENOMEM.
 */
int cli_svg_ring(FILE *out, const hr_ring *ring);

/* One row of `sim --svg`: what the sim's table prints. */
struct cli_sim_point {
	unsigned long vnodes;
	double max_mean, min_mean, moved, ideal_moved;
};

/* `sim --svg`: max/mean and min/mean by vnodes, and the share of keys
 * moved by vnodes beside the ideal and hash % N's. */
void cli_svg_sim(FILE *out, unsigned long nodes, unsigned long keys,
		 double modulo_moved, const struct cli_sim_point *rows, size_t n);

/* One row of `sim --compare --svg`: a placement's balance, and its keys
 * moved on a join and on a leave over the ideal. */
struct cli_compare_bar {
	const char *name;
	double max_mean, min_mean, add_ratio, remove_ratio;
};

/* `sim --compare --svg`: per placement, bars of max/mean (min/mean marked)
 * and of keys moved over the ideal, on a join and a leave (log scale). */
void cli_svg_compare(FILE *out, unsigned long nodes, unsigned long keys,
		     const struct cli_compare_bar *rows, size_t n);

/* Opens `path` for a plot; NULL after an error line. */
FILE *cli_svg_open(const char *cmd, const char *path);
/* Closes it: CLI_EXIT_OK, or CLI_EXIT_ERROR after an error line (a full
 * disk shows here). */
int cli_svg_close(const char *cmd, const char *path, FILE *f);

#endif
