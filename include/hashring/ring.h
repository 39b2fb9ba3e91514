/* SPDX-License-Identifier: MIT */
/*
 * hashring/ring.h - rings, offline and pure: nodes and their states, ring
 * options and placements, building and loading rings, lookups, batch
 * lookups, preference lists, shares, epochs, ring diffs, bounded loads,
 * and allocated tokens.  Nothing here talks to etcd.
 */
#ifndef HASHRING_RING_H
#define HASHRING_RING_H

#include "hashring/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Nodes                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Limits, documented in docs/placement.md.  Exceeding one is HR_ELIMIT
 * (or HR_EPARSE for a record that is not valid in the first place) when a
 * ring is built from nodes given at once (hr_ring_build, members
 * documents).  A client following etcd never fails on them: it leaves out
 * the records that do not fit, oldest kept first (see hr_client_open).
 * HR_NODES_MAX nodes of weight 1 at the default 200 points per weight are
 * 20,000,000 points: they fit under HR_POINTS_MAX (2^25 = 33,554,432).
 */
#define HR_ID_MAX 255           /* bytes in a node id                        */
#define HR_ADDR_MAX 255         /* bytes in an address                       */
#define HR_ZONE_MAX 255         /* bytes in a zone                           */
#define HR_RECORD_MAX 65536     /* bytes in one record value                 */
#define HR_NODES_MAX 100000     /* nodes in one ring                         */
#define HR_POINTS_MAX (1u << 25) /* points (all vnodes) in one ring          */
#define HR_JSON_DEPTH_MAX 1000  /* arrays and objects nested in one record or
				   members document (HR_EPARSE beyond)       */
#define HR_VNODES_PER_WEIGHT_DEFAULT 200

/*
 * The weights a node record in etcd may carry (docs/placement.md section
 * 8), bounds included; a record outside them is skipped as bad
 * (HR_EINVAL), and hr_node_check() refuses them.  Weights are ratios, and
 * within this range the total weight of HR_NODES_MAX nodes over the
 * smallest weight (at most 1e301) is still a finite double, so every sum,
 * share and load derived from a ring's weights is finite and nonzero.
 * Rings built from nodes given at once (hr_ring_build, members documents)
 * take any weight hr_node allows.
 */
#define HR_RECORD_WEIGHT_MIN 1e-6
#define HR_RECORD_WEIGHT_MAX 1e290

typedef enum hr_state {
	HR_STATE_ACTIVE = 0,   /* serves reads and writes                        */
	HR_STATE_WARMING = 1,  /* joining: takes writes, reads go to old owner   */
	HR_STATE_DRAINING = 2  /* leaving: serves reads, writes go to next owner */
} hr_state;

/* "active", "warming", "draining"; NULL for an invalid value. */
HR_EXPORT const char *hr_state_name(hr_state state);
/* Parses a state name (exact, lowercase).  HR_EINVAL if unknown. */
HR_EXPORT int hr_state_parse(const char *name, hr_state *out, hr_error *err);

/*
 * A node.  As input (hr_ring_build) the strings and tokens belong to the
 * caller and are copied.  As output (lookups, hr_ring_node) they belong to
 * the ring and stay valid while the ring is held (see "Rings" below), so
 * that the nodes of a ring, given to hr_ring_build() with the ring's
 * options (hr_ring_options_get), build the same ring.
 *
 *   id       1..HR_ID_MAX bytes of printable ASCII (0x21-0x7e), no '/'
 *   addr     1..HR_ADDR_MAX bytes, no control characters
 *   zone     0..HR_ZONE_MAX bytes, no control characters; NULL means ""
 *   weight   finite and > 0 (1 is the usual value)
 *   tokens   the node's points with HR_PLACEMENT_TOKENS (docs/placement.md
 *   ntokens  section 16), 0 to HR_TOKENS_MAX distinct positions in any
 *            order (a ring's nodes show them ascending); none (0, NULL):
 *            the points of HR_PLACEMENT_XXH3.  Tokens with another
 *            placement are HR_EINVAL.  A token two nodes claim belongs to
 *            the lower id (bytewise), as equal positions always do.
 */
typedef struct hr_node {
	const char *id;
	const char *addr;
	const char *zone;
	double weight;
	hr_state state;
	const uint64_t *tokens;
	size_t ntokens;
} hr_node;

/* ------------------------------------------------------------------------ */
/* Rings                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * An immutable placement snapshot with two views:
 *   write view  active + warming nodes  (where writes go)
 *   read view   active + draining nodes (where the data is)
 * A ring is reference counted: hr_ring_build() and hr_client_ring()
 * return a reference owned by the caller, hr_ring_retain() adds one and
 * hr_ring_release() drops one.  Every const function on a ring is safe to
 * call from any number of threads at once; none allocates or locks.
 */
typedef struct hr_ring hr_ring;

/* A view is HR_VIEW_WRITE or HR_VIEW_READ.  Any other value is HR_EINVAL
 * for every function that takes a view, the same check everywhere: the
 * ones returning an error code or a count return it (negative), and
 * hr_ring_moved_share(), which returns a share, returns it as a double
 * (below every share).  Nothing is written for a bad view. */
typedef enum hr_view { HR_VIEW_WRITE = 0, HR_VIEW_READ = 1 } hr_view;

/*
 * How points and keys are placed (docs/placement.md):
 *   HR_PLACEMENT_XXH3    the native contract: XXH3-64 of "<id>#<i>",
 *                        vnodes_per_weight points per unit of weight.
 *   HR_PLACEMENT_KETAMA  libmemcached 1.1.4's weighted ketama, bit for bit
 *                        (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED): MD5 keys,
 *                        points named from each node's addr, the server
 *                        list being the view's nodes in id order.  Weights
 *                        must be whole numbers; vnodes_per_weight is unused.
 *                        Lookups hash keys with MD5 (slower than XXH3).
 *   HR_PLACEMENT_MAGLEV  (1.1) Maglev (Eisenbud et al., NSDI 2016): a table of
 *                        maglev_size slots per view, filled by the nodes'
 *                        permutations in weighted turns; a lookup is the
 *                        key's XXH3 hash and one table read.  Near-perfect
 *                        balance; a change moves somewhat more than the
 *                        minimum.  vnodes_per_weight is unused; a node's
 *                        "vnodes" are its slots.
 *   HR_PLACEMENT_RENDEZVOUS  (1.1) weighted rendezvous hashing (highest
 *                        random weight, logarithmic method): a key goes to
 *                        the node of highest score -w / ln(h), h from one
 *                        XXH3 per node.  Exact weighted balance (a node's
 *                        share is w / W) and minimal movement, at O(nodes)
 *                        per lookup: for small clusters (docs/placement.md
 *                        section 15).  Weights from 1e-300 to 1e290;
 *                        vnodes_per_weight is unused; every node has one
 *                        "vnode".  Diffs list no arcs (keys are not on
 *                        arcs), only per-pair totals.
 *   HR_PLACEMENT_TOKENS  (1.1) allocated tokens: a node's points are the
 *                        positions its record lists ("tokens"), chosen by
 *                        hr_tokens_allocate() when it joined so that its
 *                        share is its fair share by weight; a node without
 *                        tokens has the points of HR_PLACEMENT_XXH3.
 */
typedef enum hr_placement {
	HR_PLACEMENT_XXH3 = 0,
	HR_PLACEMENT_KETAMA = 1,
	HR_PLACEMENT_MAGLEV = 2,
	HR_PLACEMENT_RENDEZVOUS = 3,
	HR_PLACEMENT_TOKENS = 4
} hr_placement;

/* Tokens of one node (HR_PLACEMENT_TOKENS): at most HR_TOKENS_MAX; the
 * CLI allocates HR_TOKENS_DEFAULT unless told otherwise. */
#define HR_TOKENS_MAX 1024
#define HR_TOKENS_DEFAULT 16

/* Maglev table size: a prime from HR_MAGLEV_SIZE_MIN to HR_MAGLEV_SIZE_MAX
 * (two views of it stay within HR_POINTS_MAX); 65537 by default. */
#define HR_MAGLEV_SIZE_DEFAULT 65537
#define HR_MAGLEV_SIZE_MIN 101
#define HR_MAGLEV_SIZE_MAX 16777213 /* the largest prime below 2^24 */

/*
 * How a ring is built.  A NULL `const hr_ring_options *` means the
 * defaults.  Grows (see "Structs that grow"); every field defaults to 0.
 * A size or placement that is not valid is HR_EINVAL for every function
 * taking the options.
 */
typedef struct hr_ring_options {
	size_t size;               /* sizeof, set by hr_ring_options_init() */
	/* Points per unit of weight; 0 means HR_VNODES_PER_WEIGHT_DEFAULT. */
	unsigned vnodes_per_weight;
	/* HR_PLACEMENT_XXH3 (0, the default), HR_PLACEMENT_KETAMA,
	 * HR_PLACEMENT_MAGLEV, HR_PLACEMENT_RENDEZVOUS or HR_PLACEMENT_TOKENS. */
	hr_placement placement;
	/* (1.1) Maglev's table size M, a prime (see HR_MAGLEV_SIZE_*); 0 means
	 * HR_MAGLEV_SIZE_DEFAULT.  Read with maglev placement only (which
	 * checks it: HR_EINVAL naming the value); about 100 slots per node
	 * keep every node within 1% of its share. */
	uint64_t maglev_size;
} hr_ring_options;

/* Sets `size` bytes of `opts` (NULL: nothing) to the defaults, with
 * opts->size = size.  Call it through the macro. */
HR_EXPORT void hr_ring_options_init_size(hr_ring_options *opts, size_t size);
#define hr_ring_options_init(opts) \
	hr_ring_options_init_size((opts), sizeof *(opts))

/*
 * (1.2) The options `ring` was built with, written into *out (set up with
 * hr_ring_options_init()): its placement, vnodes_per_weight and
 * maglev_size, the fields within out->size.  hr_ring_build() of the
 * ring's nodes (which carry their tokens) with them builds the same ring.
 * Errors: HR_EINVAL (NULL ring or out, a size not set up by
 * hr_ring_options_init()).  Thread safe.
 */
HR_EXPORT int hr_ring_options_get(const hr_ring *ring, hr_ring_options *out,
				  hr_error *err);

/*
 * Checks one node with the rules that every watching client with ring
 * options `opts` (NULL: the defaults) applies to a record: the rules of
 * hr_node above, a weight from HR_RECORD_WEIGHT_MIN to
 * HR_RECORD_WEIGHT_MAX whose points alone stay within HR_POINTS_MAX, in
 * ketama mode a whole weight and an address ketama can name.  These are
 * the rules of a ring built with `opts` but for the record weight range,
 * stricter.  For writers of records (registrars, tools) that must not
 * write what clients would skip.  Cheap: builds nothing.  Errors:
 * HR_EINVAL, HR_ELIMIT, with a message naming the node.
 * Thread safe.
 */
HR_EXPORT int hr_node_check(const hr_node *node, const hr_ring_options *opts,
			    hr_error *err);

/*
 * Builds a ring from `n` nodes (order does not matter) at `revision` (the
 * etcd revision it reflects; 0 when offline).  `opts` may be NULL.  On
 * success *out holds one reference.  Errors: HR_EINVAL (NULL out, bad id,
 * addr, zone, weight or state, tokens with another placement, NULL tokens
 * with ntokens > 0, a token given twice by one node; names the node),
 * HR_EDUPLICATE, HR_ELIMIT (too many nodes, points or tokens: the caller
 * gives the whole set, so nothing is left out), HR_ENOMEM.  Thread safe.  A
 * ring kept in pages (262,144 points or more, placed by XXH3) sorts half of
 * them on a second thread, started and joined within the call (on this one
 * alone when no thread can be had).
 */
HR_EXPORT int hr_ring_build(const hr_node *nodes, size_t n,
			    const hr_ring_options *opts, uint64_t revision,
			    hr_ring **out, hr_error *err);

/*
 * Builds a ring from a members document: a JSON object mapping node id to
 * record, where a record is an object {"addr":..,"weight":..,"zone":..,
 * "state":..} (only addr required, unknown fields ignored) or a JSON string
 * holding a bare address (an active node of weight 1).  Ids and strings are
 * the decoded JSON strings (docs/placement.md section 8).  Errors as for
 * hr_ring_build (HR_EDUPLICATE for an id given twice, naming it) plus
 * HR_EPARSE (invalid JSON, wrong types, nesting deeper than
 * HR_JSON_DEPTH_MAX; the message gives the byte, and says when the document
 * ends too early).
 */
HR_EXPORT int hr_ring_from_json(const char *json, size_t len,
				const hr_ring_options *opts, hr_ring **out,
				hr_error *err);

/* hr_ring_from_json() on the contents of file `path`.  HR_EIO if it cannot
 * be read, HR_ELIMIT over 256 MiB.  Every message starts with the path,
 * once: `members.json: node "a": duplicate node id`, ready to print. */
HR_EXPORT int hr_ring_load_file(const char *path, const hr_ring_options *opts,
				hr_ring **out, hr_error *err);

/*
 * (1.1) Allocates `ntokens` (1 to HR_TOKENS_MAX) tokens for `node` (a
 * valid node, checked) joining `ring` (the ring it sees; NULL or empty: no
 * other node), docs/placement.md section 16: they split arcs of the most
 * loaded nodes of the write view (load over fair share by weight) so that
 * those and the joiner end at one level, as near their fair share as
 * ntokens splits allow.  A node of that id already in the ring is ignored
 * (a re-allocation).  Writes the tokens ascending into out[0 .. ntokens);
 * none is a position of a point of the write view.  Deterministic: the
 * same ring and node give the same tokens.  Errors: HR_EINVAL (NULL node
 * or out, ntokens 0, an invalid node), HR_ELIMIT (ntokens over
 * HR_TOKENS_MAX), HR_ENOMEM.  Thread safe.
 */
HR_EXPORT int hr_tokens_allocate(const hr_ring *ring, const hr_node *node,
				 size_t ntokens, uint64_t *out, hr_error *err);

/*
 * (1.1) Chooses an heir for each token of `node` (a pointer from this
 * HR_PLACEMENT_TOKENS ring) that leaves, docs/placement.md section 16,
 * "Leaving": heirs[i] takes node->tokens[i].
 * An heir lists the token in its record as well; the token's arc then
 * goes to it whole, so the leave moves keys only from `node`, and the
 * arcs go, longest first, to the nodes of the write view furthest below
 * their fair share by weight.  Heirs are other nodes of the write view
 * that have tokens and room for more (HR_TOKENS_MAX); the pointers are
 * valid while the ring is held.  Deterministic.  Errors: HR_EINVAL (a
 * NULL argument, another placement, a node not from this ring or without
 * tokens, no node that can be an heir), HR_ENOMEM.  Thread safe.
 */
HR_EXPORT int hr_tokens_heirs(const hr_ring *ring, const hr_node *node,
			      const hr_node **heirs, hr_error *err);

/* Adds a reference; returns `ring`.  Thread safe; NULL gives NULL. */
HR_EXPORT hr_ring *hr_ring_retain(hr_ring *ring);
/* Drops a reference; the last one frees the ring.  Accepts NULL. */
HR_EXPORT void hr_ring_release(hr_ring *ring);

/* The etcd revision the ring reflects (0 for offline rings). */
HR_EXPORT uint64_t hr_ring_revision(const hr_ring *ring);
/*
 * A 64-bit digest of the canonical membership (every node's id, addr,
 * zone, weight and state, plus the placement and its option:
 * vnodes_per_weight, or maglev_size; with the tokens placement, every
 * node's tokens too): equal digests give equal answers for every key.
 * Defined in docs/placement.md.
 */
HR_EXPORT uint64_t hr_ring_digest(const hr_ring *ring);

/* Number of nodes (all states) and points in the ring. */
HR_EXPORT size_t hr_ring_node_count(const hr_ring *ring);
HR_EXPORT size_t hr_ring_point_count(const hr_ring *ring);

/*
 * Node `i` in id order (bytewise), 0 <= i < hr_ring_node_count().  The
 * pointer stays valid while the ring is held.  NULL if out of range.
 */
HR_EXPORT const hr_node *hr_ring_node(const hr_ring *ring, size_t i);
/* The node with this id, or NULL. */
HR_EXPORT const hr_node *hr_ring_find(const hr_ring *ring, const char *id);
/*
 * The number i of `node` in `ring`, hr_ring_node(ring, i) == node: the
 * number batch lookups answer with and hr_ring_node_shares() writes at.
 * `node` is a pointer from this ring (from a lookup, hr_ring_node() or
 * hr_ring_find()); O(1), compares pointers only.  HR_ENOTFOUND for a node
 * not of this ring (a copy, or the node of another ring, even one of the
 * same id), HR_EINVAL for NULL.  Thread safe.
 */
HR_EXPORT int hr_ring_node_index(const hr_ring *ring, const hr_node *node,
				 hr_error *err);
/* Points owned by `node` (a pointer from this ring). */
HR_EXPORT unsigned hr_ring_node_vnodes(const hr_ring *ring,
				       const hr_node *node);

/*
 * Every node's share of `view`, in one pass over the view's points: out[i]
 * gets the share of the 64-bit key space that hr_ring_node(ring, i) owns in
 * `view`, in [0, 1], 0 for a node outside the view: the exact sum of its
 * arcs' lengths over 2^64, rounded once (rendezvous: its weight over the
 * view's total, docs/placement.md section 15).  Returns the number of nodes,
 * and writes out[0..that) only when `n` is at least that number (so
 * hr_ring_node_shares(ring, view, NULL, 0) asks for it); a NULL ring has no
 * node.  HR_EINVAL for a bad view (see hr_view).  Never allocates or locks.
 */
HR_EXPORT int hr_ring_node_shares(const hr_ring *ring, hr_view view,
				  double *out, size_t n);

/* The answer of a lookup.  Node pointers belong to the ring. */
typedef struct hr_lookup {
	const hr_node *node;      /* write-view owner; NULL if that view is empty */
	const hr_node *read_node; /* read-view owner; NULL if that view is empty  */
	uint64_t revision;        /* the ring's revision                          */
	uint64_t digest;          /* the ring's digest                            */
} hr_lookup;

/* The position of a key on the circle: XXH3_64bits(key), seed 0. */
HR_EXPORT uint64_t hr_hash_key(const void *key, size_t len);

/*
 * Looks up `key` (`len` bytes; any bytes).  Returns 0 with at least one
 * owner, or HR_EEMPTY when the ring has no node in either view (then both
 * owners are NULL), HR_EINVAL for NULL ring or out.  O(1) expected
 * (rendezvous: O(nodes of the views)); never allocates or locks.  `err`
 * costs nothing measurable (filled out of line, only on failure): 9.9 ns
 * best with it, 10.4 without, at 10 nodes x 200 (hashring-bench
 * --lookups-only, both builds alternating; docs/abi.md, "Changes in 2.0").
 */
HR_EXPORT int hr_ring_lookup(const hr_ring *ring, const void *key, size_t len,
			     hr_lookup *out, hr_error *err);

/*
 * Batch lookups: the owners of many keys at once, all from one ring.  A
 * batch hashes keys ahead of the one it answers and prefetches the memory
 * their searches will read, so that the cache misses of several keys
 * overlap instead of following one another: on a ring larger than the
 * caches a key costs less than half of what a single lookup does
 * (docs/performance.md, "Batch lookups"); on a small ring about the same.
 * The answers are exactly hr_ring_lookup()'s.
 *
 * An answer is compact: the owners' numbers in the ring that answered,
 * the i of hr_ring_node(ring, i) (id order), or HR_NO_NODE for an empty
 * view.  Numbers belong to that ring: they change with the membership.
 */
#define HR_NO_NODE UINT32_MAX

typedef struct hr_batch_owner {
	uint32_t node;       /* write-view owner's number, or HR_NO_NODE     */
	uint32_t read_node;  /* read-view owner's number, or HR_NO_NODE      */
} hr_batch_owner;

/* Which ring answered a batch: its revision and digest (hr_lookup's). */
typedef struct hr_epoch {
	uint64_t revision;
	uint64_t digest;
} hr_epoch;

/*
 * Looks up keys[i] (lens[i] bytes; a NULL key of length 0 is the empty
 * key) into out[i] for every i < n, as hr_ring_lookup() would: out[i].node
 * is the number of its write-view owner, out[i].read_node that of its
 * read-view owner.  The caller owns the three arrays; none is kept, and
 * they may be NULL when n is 0.  Returns 0; HR_EEMPTY when the ring has no
 * node in either view (every out[i] then holds HR_NO_NODE twice; also for
 * n = 0); HR_EINVAL for a NULL ring, a NULL array with n > 0, or a NULL
 * key of non-zero length (the message names the first such i), and then
 * nothing is written.  Never allocates or locks; thread safe like every
 * const function on a ring.
 */
HR_EXPORT int hr_ring_lookup_batch(const hr_ring *ring,
				   const void *const *keys, const size_t *lens,
				   size_t n, hr_batch_owner *out,
				   hr_error *err);

/*
 * The preference list for `key` in `view` (rendezvous placement walks the
 * nodes in descending score instead, O(nodes) per node taken): walk
 * clockwise, take each node
 * not yet taken whose zone is not yet used; nodes skipped only for their
 * zone are appended in walk order if the walk ends with fewer than `r`.
 * Fills out[0..k) with k = min(r, nodes in the view) distinct nodes and
 * returns k (0 for an empty view), or HR_EINVAL.  Never allocates.
 */
HR_EXPORT int hr_ring_preflist(const hr_ring *ring, const void *key, size_t len,
			       hr_view view, const hr_node **out, size_t r,
			       hr_error *err);

/*
 * Share of the key space whose owner in `view` differs between two rings,
 * in [0, 1] (1 if exactly one of them has an empty view, 0 if both do):
 * the exact length of the arcs hr_diff_new() would list, rounded once.
 * For rendezvous rings, the method's exact formula in double
 * (docs/placement.md section 15).  Either ring may be NULL, meaning an
 * empty ring.  HR_EINVAL for a bad view (see hr_view).  Cheaper than a
 * diff, whose share it is: it lists no arc.
 */
HR_EXPORT double hr_ring_moved_share(const hr_ring *a, const hr_ring *b,
				     hr_view view);

/* Comparing the (revision, digest) epochs of two views of one cluster. */
typedef enum hr_epoch_order {
	HR_EPOCH_SAME = 0,          /* same revision and digest                 */
	HR_EPOCH_LOCAL_STALE = 1,   /* the local view is older                  */
	HR_EPOCH_REMOTE_STALE = 2,  /* the remote view is older                 */
	HR_EPOCH_CONFLICT = 3       /* same revision, different digest: the two
				       sides watch different data or options    */
} hr_epoch_order;

/* Compares a local and a remote (revision, digest).  Pure; thread safe. */
HR_EXPORT hr_epoch_order hr_epoch_compare(uint64_t local_revision,
					  uint64_t local_digest,
					  uint64_t remote_revision,
					  uint64_t remote_digest);

/* ------------------------------------------------------------------------ */
/* Ring diffs                                                               */
/* ------------------------------------------------------------------------ */

/*
 * An arc of the circle whose owner changed between two rings: the key
 * positions [start, end), where `end` == 0 stands for 2^64 (the top of the
 * circle).  Positions are those of the rings' placement: XXH3-64 of the key,
 * or in ketama mode the 32-bit MD5 key hash shifted left by 32 bits.  Node
 * pointers belong to the rings the diff holds.
 */
typedef struct hr_arc {
	uint64_t start;
	uint64_t end;
	const hr_node *old_node; /* owner in the old ring; NULL: none (empty view) */
	const hr_node *new_node; /* owner in the new ring; NULL: none             */
} hr_arc;

/* The arcs moved from one node to another, summed. */
typedef struct hr_arc_total {
	const hr_node *old_node;
	const hr_node *new_node;
	size_t arcs;     /* arcs with this pair                             */
	double share;    /* their part of the key space, in (0, 1]          */
} hr_arc_total;

/* hr_diff is the difference between two rings in one view.  Immutable
 * once made. */
typedef struct hr_diff hr_diff;

/*
 * Lists every arc whose owner in `view` differs between `old_ring` and
 * `new_ring` (owners compared by node id), in ring order from position 0;
 * adjacent arcs with the same pair of owners are one arc, so an arc across
 * position 0 shows as two.  A key is in an arc exactly when its owner
 * differs.  Either ring may be NULL, meaning an empty ring.  The diff holds
 * a reference to both rings until hr_diff_free(); it is the tool of a
 * rebalancer, which a watching client hands over ready made through
 * hr_client_config.on_diff.  Cost O(points of both views).  A rendezvous
 * ring's keys are not on arcs: its diff has no arc, only the totals, by
 * the formulas of docs/placement.md section 15.
 * Errors: HR_EINVAL (NULL out, bad view), HR_ENOMEM.  Thread safe.
 */
HR_EXPORT int hr_diff_new(const hr_ring *old_ring, const hr_ring *new_ring,
			  hr_view view, hr_diff **out, hr_error *err);

/* The arcs, in ring order: hr_diff_arc_count() of them (NULL if none). */
HR_EXPORT size_t hr_diff_arc_count(const hr_diff *diff);
HR_EXPORT const hr_arc *hr_diff_arcs(const hr_diff *diff);

/* Totals per (old, new) pair, sorted by old id then new id (bytewise, no
 * owner first): hr_diff_total_count() of them (NULL if none). */
HR_EXPORT size_t hr_diff_total_count(const hr_diff *diff);
HR_EXPORT const hr_arc_total *hr_diff_totals(const hr_diff *diff);

/* The share of the key space a diff moves, the exact sum of its arcs, is
 * hr_ring_moved_share() of the same two rings and view (a client's
 * on_change gets them just before its on_diff). */

/* Frees the diff and drops its ring references.  Accepts NULL. */
HR_EXPORT void hr_diff_free(hr_diff *diff);

/* ------------------------------------------------------------------------ */
/* Bounded loads                                                            */
/* ------------------------------------------------------------------------ */

/*
 * Consistent hashing with bounded loads (Mirrokni, Thorup and
 * Zadimoghaddam; HAProxy's hash-balance-factor): a key goes to its owner
 * unless that node is at capacity, else to the next node clockwise that is
 * not.  With `c` >= 1, node i of weight w_i has the capacity
 *
 *     ceil(c * (T + 1) * w_i / W)
 *
 * where T is the load of the view's nodes before this key and W their
 * total weight (so ceil(c * (T + 1) / n) for equal weights), and it is at
 * capacity when its load is not below that.  No node then ever takes more
 * than about c times its fair share.
 *
 * Use it when a few hot keys or a burst could overload one node and its
 * neighbours in turn (cascading overload): keys overflow to the next nodes
 * while their owner is busy, and return as soon as it is not.  It trades
 * some cache affinity for that: c = 1.25 moves few keys, smaller c more.
 * Without hot spots (every node below capacity) answers are the plain
 * lookup's.  Not for placement that must be stable (where data lives):
 * it is for routing requests.  See docs/bounded.md.
 */

/*
 * The node for `key` in `view`, given the caller's current load of every
 * node: loads[i] is that of hr_ring_node(ring, i), for all
 * hr_ring_node_count(ring) nodes (nodes outside the view are ignored).
 * Returns 0 with *out set, HR_EEMPTY (no node in the view), HR_EINVAL (NULL
 * argument, bad view, c not a finite number >= 1).  Never allocates or
 * locks; O(nodes) to sum the loads plus the points walked.
 */
HR_EXPORT int hr_ring_lookup_bounded(const hr_ring *ring, const void *key,
				     size_t len, hr_view view,
				     const uint64_t *loads, double c,
				     const hr_node **out, hr_error *err);

/*
 * An in-flight counter: bounded-load routing that counts the requests
 * itself.  hr_inflight_acquire() picks a node as hr_ring_lookup_bounded()
 * does, from the requests in flight, and counts one on it;
 * hr_inflight_release() ends it.  Counters are per node id (they survive
 * ring changes) and atomic: any number of threads may acquire and release
 * at once, with no lock.  Under such races the bound holds approximately.
 */
typedef struct hr_inflight hr_inflight;

/* Creates a counter for up to `max_ids` distinct node ids over its life
 * (0: 1024), with balance factor `c` (a finite number >= 1).  Errors:
 * HR_EINVAL, HR_ELIMIT (max_ids over HR_NODES_MAX), HR_ENOMEM. */
HR_EXPORT int hr_inflight_new(double c, size_t max_ids, hr_inflight **out,
			      hr_error *err);

/* Frees the counter (no call on it may be running).  Accepts NULL. */
HR_EXPORT void hr_inflight_free(hr_inflight *inflight);

/*
 * Picks the node for `key` in `view` of `ring` and counts a request on it;
 * release it with its id when the request ends.  Returns 0 with *out set,
 * HR_EEMPTY (no node in the view), HR_ELIMIT (more distinct ids than
 * max_ids), HR_EINVAL.  Lock free and allocation free; thread safe.
 */
HR_EXPORT int hr_inflight_acquire(hr_inflight *inflight, const hr_ring *ring,
				  const void *key, size_t len, hr_view view,
				  const hr_node **out, hr_error *err);

/* Ends one request on node `id`.  HR_ENOTFOUND if no request is in flight
 * on it, HR_EINVAL for NULL.  Thread safe. */
HR_EXPORT int hr_inflight_release(hr_inflight *inflight, const char *id,
				  hr_error *err);

/* Requests in flight on node `id` (0 if unknown), and on all nodes. */
HR_EXPORT uint64_t hr_inflight_load(const hr_inflight *inflight,
				    const char *id);
HR_EXPORT uint64_t hr_inflight_total(const hr_inflight *inflight);

#ifdef __cplusplus
}
#endif

#endif /* HASHRING_RING_H */
