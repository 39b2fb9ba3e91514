/*
 * hashring.h - consistent-hash ring of cluster nodes, kept in sync with etcd.
 *
 * This header is the specification of the public API.  Every function
 * documents its ownership rules, its thread safety and the errors it returns.
 *
 * Conventions
 *   - Functions that can fail return 0 (HR_OK) or a negative HR_E* code;
 *     hr_strerror() turns a code into a fixed English sentence.
 *   - Functions that take an `hr_error *err` fill it, when it is not NULL,
 *     with the code and a one-line message naming the offending input.
 *   - Destructors and release functions accept NULL.
 *   - Placement (which node owns which key) is the contract written down in
 *     docs/placement.md; it never changes within a major version.
 */
#ifndef HASHRING_H
#define HASHRING_H

#include <stddef.h>
#include <stdint.h>

#include "hashring/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(HR_BUILDING_LIBRARY) && defined(__GNUC__)
#define HR_EXPORT __attribute__((visibility("default")))
#else
#define HR_EXPORT
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * The version of the library in use, as "major.minor.patch": compare it
 * with HR_VERSION_STRING to tell the library a program runs with from the
 * headers it was built with.  A static string, never NULL; thread safe.
 */
HR_EXPORT const char *hr_version(void);

/* The same as one number, major * 10000 + minor * 100 + patch, comparable
 * with HR_VERSION_NUMBER.  Thread safe. */
HR_EXPORT int hr_version_number(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

enum {
	HR_OK = 0,
	HR_EINVAL = -1,      /* invalid argument (NULL, out of range, bad flag)  */
	HR_ENOMEM = -2,      /* out of memory                                     */
	HR_EEMPTY = -3,      /* the ring (or the view asked for) has no node      */
	HR_EDUPLICATE = -4,  /* the same node id given twice                      */
	HR_ELIMIT = -5,      /* a documented size or count limit was exceeded     */
	HR_EPARSE = -6,      /* malformed record, JSON or file                    */
	HR_EIO = -7,         /* a file could not be read                          */
	HR_ECONNECT = -8,    /* no endpoint could be reached (etcd, a store)      */
	HR_ETIMEDOUT = -9,   /* an operation did not finish in its time limit     */
	HR_EETCD = -10,      /* etcd answered with an error                       */
	HR_EAUTH = -11,      /* authentication failed or token rejected           */
	HR_EPERM = -12,      /* etcd denied permission                            */
	HR_ETLS = -13,       /* TLS set-up or certificate verification failed     */
	HR_ENOTFOUND = -14,  /* no such node, key or lease                        */
	HR_EEXIST = -15,     /* the id is already registered by someone else      */
	HR_ECLOSED = -16,    /* the object is closing or closed                   */
	HR_ECOMPACTED = -17, /* the revision asked for was compacted              */
	HR_ECONFLICT = -18   /* clients report different rings at one revision   */
};

/* Longest message stored in an hr_error, terminating NUL included. */
#define HR_ERROR_MSG_MAX 256

/* Optional detail for a failed call.  Zero-initialise or pass NULL. */
typedef struct hr_error {
	int code;                       /* the same negative code returned  */
	char message[HR_ERROR_MSG_MAX]; /* one line, never a password/token */
} hr_error;

/* A static sentence for `code` ("invalid argument", ...).  Unknown codes
 * give "unknown error".  Thread safe; never NULL. */
HR_EXPORT const char *hr_strerror(int code);

/* ------------------------------------------------------------------------ */
/* Structs that grow                                                        */
/* ------------------------------------------------------------------------ */

/*
 * The settings a caller fills in - hr_ring_options, hr_etcd_config,
 * hr_client_config, hr_registration, hr_record_update,
 * hr_metrics_options, hr_rebalance_backend and hr_rebalance_config - may
 * gain fields
 * in a minor release.  Each starts with `size_t size`, the caller's sizeof
 * of the struct, which its init macro sets along with every default:
 *
 *     hr_etcd_config etcd;
 *
 *     hr_etcd_config_init(&etcd);     // etcd.size = sizeof etcd, defaults
 *     etcd.prefix = "/hashring/nodes/";
 *
 * The library reads the fields that lie within `size` and takes the
 * defaults for the others, so a program built against older headers keeps
 * working and gets the defaults of the fields it does not know.  HR_EINVAL,
 * with a message naming the struct, for a size of 0 (a struct zeroed or
 * never initialised), one too small to hold the first field, one above
 * 4096, and a size larger than this library's struct whose extra bytes are
 * not all zero: a program built against newer headers set a field this
 * library does not have, which it would otherwise ignore.  (Such a program
 * checks hr_version_number() before it sets a field of a later release.)
 * No field is ever moved, resized or removed within a major version; new
 * ones are appended.
 *
 * Every field of hr_ring_options, hr_record_update and hr_metrics_options
 * defaults to 0, so a designated initializer that names the size does what
 * the init macro does:
 *
 *     hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 100 };
 *
 * A struct the library fills (hr_client_status, hr_rebalance_progress)
 * takes the caller's sizeof as an argument instead, which a macro passes:
 * the library writes no byte beyond it.
 *
 * Structs in arrays (hr_node, hr_replica, hr_batch_owner, hr_metrics_label,
 * and the library's hr_arc and hr_arc_total), those lookups fill (hr_lookup,
 * hr_owner, hr_epoch) and hr_error keep their layout for the whole major
 * version.
 */

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

typedef enum hr_state {
	HR_STATE_ACTIVE = 0,   /* serves reads and writes                        */
	HR_STATE_WARMING = 1,  /* joining: takes writes, reads go to old owner   */
	HR_STATE_DRAINING = 2  /* leaving: serves reads, writes go to next owner */
} hr_state;

/* "active", "warming", "draining"; NULL for an invalid value. */
HR_EXPORT const char *hr_state_name(hr_state state);
/* Parses a state name (exact, lowercase).  HR_EINVAL if unknown. */
HR_EXPORT int hr_state_parse(const char *name, hr_state *out);

/*
 * A node.  As input (hr_ring_build) the strings belong to the caller and are
 * copied.  As output (lookups, hr_ring_node) they belong to the ring and stay
 * valid while the ring is held (see "Rings" below).
 *
 *   id      1..HR_ID_MAX bytes of printable ASCII (0x21-0x7e), no '/'
 *   addr    1..HR_ADDR_MAX bytes, no control characters
 *   zone    0..HR_ZONE_MAX bytes, no control characters; NULL means ""
 *   weight  finite and > 0 (1 is the usual value)
 */
typedef struct hr_node {
	const char *id;
	const char *addr;
	const char *zone;
	double weight;
	hr_state state;
} hr_node;

/* ------------------------------------------------------------------------ */
/* Rings                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * An immutable placement snapshot with two views:
 *   write view  active + warming nodes  (where writes go)
 *   read view   active + draining nodes (where the data is)
 * A ring is reference counted: hr_ring_build() and hr_client_acquire()
 * return a reference owned by the caller, hr_ring_retain() adds one and
 * hr_ring_release() drops one.  Every const function on a ring is safe to
 * call from any number of threads at once; none allocates or locks.
 */
typedef struct hr_ring hr_ring;

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
 * Checks one node with exactly the rules a ring built with `opts` (NULL:
 * the defaults) applies to it, and that every watching client with those
 * options applies to a record: the rules of hr_node above, a weight whose
 * points alone stay within HR_POINTS_MAX, in ketama mode a whole weight
 * and an address ketama can name, and in rendezvous mode a weight from
 * 1e-300 to 1e290.  For writers of records (registrars,
 * tools) that must not write what clients would skip.  Cheap: builds
 * nothing.  Errors: HR_EINVAL, HR_ELIMIT, with a message naming the node.
 * Thread safe.
 */
HR_EXPORT int hr_node_check(const hr_node *node, const hr_ring_options *opts,
			    hr_error *err);

/*
 * Builds a ring from `n` nodes (order does not matter) at `revision` (the
 * etcd revision it reflects; 0 when offline).  `opts` may be NULL.
 * On success *out holds one reference.  Errors: HR_EINVAL (NULL out, bad id,
 * addr, zone, weight or state; names the node), HR_EDUPLICATE, HR_ELIMIT
 * (too many nodes or points: the caller gives the whole set, so nothing is
 * left out), HR_ENOMEM.  Thread safe.  A ring kept in pages (262,144
 * points or more, placed by XXH3) sorts half of them on a second thread,
 * started and joined within the call (on this one alone when no thread
 * can be had).
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
 * (1.1) hr_ring_build() with each node's tokens (HR_PLACEMENT_TOKENS,
 * docs/placement.md section 16): node i's points are tokens[i][0 ..
 * ntokens[i]), in any order, distinct; a node with ntokens[i] == 0 (or
 * every node when `tokens` is NULL) has the points of HR_PLACEMENT_XXH3.
 * A token two nodes claim belongs to the lower id (bytewise), as equal
 * positions always do.  The arrays are read, not kept.  Errors as for
 * hr_ring_build(), plus HR_EINVAL (tokens with another placement, NULL
 * tokens[i] with ntokens[i] > 0, a token given twice by one node: names
 * the node), HR_ELIMIT (more than HR_TOKENS_MAX tokens).  Thread safe.
 */
HR_EXPORT int hr_ring_build_tokens(const hr_node *nodes,
				   const uint64_t *const *tokens,
				   const size_t *ntokens, size_t n,
				   const hr_ring_options *opts,
				   uint64_t revision, hr_ring **out,
				   hr_error *err);

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
 * "Leaving": heirs[i] takes the token hr_ring_node_tokens() gives at i.
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

/*
 * (1.1) The tokens of `node` (a pointer from this ring) in a
 * HR_PLACEMENT_TOKENS ring: *tokens (may be NULL) points at them,
 * ascending, valid while the ring is held.  Returns their count: 0 for a
 * node without tokens, another placement, or a node not from this ring.
 */
HR_EXPORT size_t hr_ring_node_tokens(const hr_ring *ring, const hr_node *node,
				     const uint64_t **tokens);

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
/* Points owned by `node` (a pointer from this ring). */
HR_EXPORT unsigned hr_ring_node_vnodes(const hr_ring *ring, const hr_node *node);
/* Share of the 64-bit key space `node` owns in `view`, in [0, 1]; 0 if the
 * node is not in that view.  O(points of the view): for every node at
 * once, hr_ring_node_shares() costs the same as one call of this. */
HR_EXPORT double hr_ring_node_share(const hr_ring *ring, const hr_node *node,
				    hr_view view);

/*
 * Every node's share of `view` in one pass over the view's points: out[i]
 * gets hr_ring_node_share() of hr_ring_node(ring, i), exactly the same
 * value.  Returns the number of nodes, and writes out[0..that) only when
 * `n` is at least that number (so hr_ring_node_shares(ring, view, NULL, 0)
 * asks for it).  An invalid view gives zeros; a NULL ring has no node.
 * Never allocates or locks.
 */
HR_EXPORT size_t hr_ring_node_shares(const hr_ring *ring, hr_view view,
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
 * (rendezvous: O(nodes of the views)); never allocates or locks.
 */
HR_EXPORT int hr_ring_lookup(const hr_ring *ring, const void *key, size_t len,
			     hr_lookup *out);

/*
 * Batch lookups: the owners of many keys at once, all from one ring.  A
 * batch hashes keys ahead of the one it answers and prefetches the memory
 * their searches will read, so that the cache misses of several keys
 * overlap instead of following one another: on a ring larger than the
 * caches a key costs less than half of what a single lookup does (README,
 * "Performance"); on a small ring about the same.  The answers are exactly
 * hr_ring_lookup()'s.
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
			       hr_view view, const hr_node **out, size_t r);

/*
 * Share of the key space whose owner in `view` differs between two rings,
 * in [0, 1] (1 if exactly one of them has an empty view, 0 if both do):
 * the exact length of the arcs hr_ring_diff() would list, rounded once.
 * For rendezvous rings, the method's exact formula in double
 * (docs/placement.md section 15).  Either ring may be NULL, meaning an
 * empty ring.  Cheaper than a diff,
 * whose share it is: it lists no arc.
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
/* Logging                                                                  */
/* ------------------------------------------------------------------------ */

typedef enum hr_log_level {
	HR_LOG_ERROR = 0,
	HR_LOG_WARN = 1,
	HR_LOG_INFO = 2,
	HR_LOG_DEBUG = 3
} hr_log_level;

/*
 * Receives one log line (no trailing newline) in key=value form, e.g.
 *   level=warn event=stale unconfirmed_ms=10012 revision=42 endpoint=...
 * Called from the library's threads, one call at a time per client; a
 * registrar calls it from its renewal thread and from the threads that
 * call its functions.
 */
typedef void (*hr_log_fn)(void *userdata, hr_log_level level,
			  const char *line);

/* "error", "warn", "info", "debug"; NULL for an invalid value. */
HR_EXPORT const char *hr_log_level_name(hr_log_level level);

/* ------------------------------------------------------------------------ */
/* etcd: where the node records are, and how to reach them                  */
/* ------------------------------------------------------------------------ */

/*
 * What a client (hr_client_open), a registrar (hr_register) and an
 * operator's change (hr_node_update) share: the node records under one
 * prefix, the connection to etcd, and the ring options every client of
 * that prefix uses.  Read when called, never kept: strings are copied.
 * Grows (see "Structs that grow").
 */
typedef struct hr_etcd_config {
	size_t size;             /* sizeof, set by hr_etcd_config_init()     */
	/* Comma-separated endpoints; "host:port" means http://host:port.
	 * NULL: "http://127.0.0.1:2379".  "http://user:password@host:port"
	 * (percent-encoded, as curl takes it) gives the etcd user and
	 * password when `username` is NULL; when it is set, the two must
	 * agree (HR_EINVAL).  Endpoints appear in log lines, error messages
	 * and hr_client_status without their "user:password@". */
	const char *endpoints;
	/* Key prefix of the records, used verbatim (normally ends in '/');
	 * 1..4096 bytes.  Required. */
	const char *prefix;
	/* Gateway base path; NULL means "/v3". */
	const char *api_base;
	/* The ring options of the clients (NULL: the defaults).  A client
	 * builds its rings with them; a registrar and hr_node_update() check
	 * every record they write with them (hr_node_check), so that no
	 * record the clients would refuse is written: give every process of
	 * one prefix the same. */
	const hr_ring_options *ring;
	int request_timeout_ms;  /* every unary request (default 5000)       */
	int connect_timeout_ms;  /* TCP/TLS connect (default 2000)           */
	/* TLS (https endpoints) and etcd auth. */
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
	const char *username;
	const char *password;
	int insecure_skip_verify; /* never set this outside tests            */
	hr_log_level log_level;   /* most verbose level passed (INFO)        */
	hr_log_fn log;            /* NULL: lines go to stderr                */
	void *log_userdata;
} hr_etcd_config;

/* Sets `size` bytes of `etcd` (NULL: nothing) to the defaults above (all
 * strings NULL), with etcd->size = size.  Call it through the macro. */
HR_EXPORT void hr_etcd_config_init_size(hr_etcd_config *etcd, size_t size);
#define hr_etcd_config_init(etcd) \
	hr_etcd_config_init_size((etcd), sizeof *(etcd))

/* ------------------------------------------------------------------------ */
/* Client: a ring kept in sync with an etcd prefix                          */
/* ------------------------------------------------------------------------ */

/*
 * A client owns a background thread that lists, then watches, an etcd key
 * prefix over the v3 JSON gateway, builds a new ring for every change and
 * publishes it with an RCU pointer swap.  Lookups from any thread never
 * block, never lock and need no registration.
 */
typedef struct hr_client hr_client;

/* Called on the watcher thread after each publication, with the ring it
 * replaced: after the first sync, the client's initial empty ring
 * (revision 0).  A ring is published when its digest differs from the
 * published ring's, and after a resync that found etcd's data replaced
 * (another cluster id, or its revision below the ring's) even with the same
 * digest: then the new ring's revision may be lower than the old one's.
 * Both rings are valid during the call only (retain to keep).  It may call
 * any client function except hr_client_close(), and, for a client that
 * shares its watcher, hr_client_open() or hr_client_close() of a client of
 * the same share. */
typedef void (*hr_ring_change_fn)(void *userdata, const hr_ring *old_ring,
				  const hr_ring *new_ring);

/* A ring diff (see "Ring diffs" below). */
typedef struct hr_diff hr_diff;

/* Called on the watcher thread after each publication, right after
 * on_change, with the arcs whose owner changed in the write view and in
 * the read view (what a rebalancer copies where).  Both diffs are valid
 * during the call only.  Same rules as hr_ring_change_fn. */
typedef void (*hr_ring_diff_fn)(void *userdata, const hr_diff *write_diff,
				const hr_diff *read_diff);

/* Clients of one process that follow one watcher (see "Sharing a
 * watcher" below). */
typedef struct hr_share hr_share;

/* A client's own settings; those of etcd are in hr_etcd_config.  Grows
 * (see "Structs that grow"). */
typedef struct hr_client_config {
	size_t size;             /* sizeof, set by hr_client_config_init()   */
	/* hr_client_open() waits this long for the first full sync
	 * (default 10000).  With `open_nonblocking` set it returns at once with
	 * an empty ring at revision 0 (hr_client_wait_synced() waits then). */
	int open_timeout_ms;
	int open_nonblocking;
	int backoff_initial_ms;  /* first reconnect delay (default 100)      */
	int backoff_max_ms;      /* reconnect delay cap (default 5000)       */
	int probe_interval_ms;   /* an idle stream is probed this often
				    (default 3000)                          */
	int stale_warn_ms;       /* warn "stale" after and every this long
				    (default 10000)                         */
	unsigned page_size;      /* keys per range page, 1..100000 (1000)    */
	hr_ring_change_fn on_change; /* NULL: none                           */
	void *on_change_userdata;
	hr_ring_diff_fn on_diff;    /* NULL: no diff is computed            */
	void *on_diff_userdata;
	/* Acknowledged epochs (docs/handoff.md): with both set, the client
	 * announces the revision and digest of its ring at
	 * <ack_prefix><ack_client_id>, under a lease of its own, for
	 * hr_acks_list() and hr_acks_wait().  NULL (the default): no ack.
	 * The id follows the rules of a node id; the prefix (1..4096 bytes)
	 * must not overlap hr_etcd_config.prefix, in either direction. */
	const char *ack_client_id;
	const char *ack_prefix;
	int ack_ttl_s;           /* the ack lease's TTL, 2..3600 (default 10):
				    a client that dies leaves this long after */
	int ack_interval_ms;     /* least time between two acks, 10..60000
				    (default 250: at most 4 puts a second) */
	/* Each wait before a probe is drawn at random between
	 * (100 - probe_jitter_pct)% of probe_interval_ms and all of it, so
	 * that clients started together do not probe etcd together; 0..50
	 * (default 20).  When etcd sends progress notifications often enough
	 * (--experimental-watch-progress-notify-interval, docs/operators.md),
	 * they confirm the stream and a probe is sent only if one is late. */
	int probe_jitter_pct;
	/* Which endpoint a client tries first: HR_ENDPOINTS_SPREAD (the
	 * default) picks one at random so that many clients with the same
	 * list spread over the members; HR_ENDPOINTS_IN_ORDER starts at the
	 * first.  Either way a failure moves on to the next in the list. */
	int endpoint_order;
	/* Hot keys (hr_client_hot_keys): one in this many single lookups is
	 * sampled into its thread's sketch (each node's every this-many-th
	 * write lookup on the thread), a power of two up to 65536 (default
	 * 1024: a fraction of a nanosecond per lookup); 0: no sampling, no hot
	 * keys, no spreading.  A client with few lookups samples more often. */
	unsigned hot_key_sample;
	/* With hot_key_spread: a hot key's reads go to its first this many
	 * nodes of the read view's preference list (zone-distinct; see
	 * hr_ring_preflist), in turn per thread, 2..16 (default 3). */
	unsigned hot_key_replicas;
	/* Spreads the reads of hot keys, apart from placement (README.md,
	 * "Hot keys"): a key whose estimated share of the client's lookups is
	 * at least this (0 < share <= 1; at most 16 keys, the most frequent)
	 * gets as read owner of hr_client_lookup() and hr_reader_lookup() one
	 * of hot_key_replicas nodes in turn, its write owner staying.  Batch
	 * lookups and hr_ring_lookup() never spread.  The hot keys are
	 * re-chosen every 1024 samples of a thread and at each
	 * hr_client_hot_keys().  0 (the default): off. */
	double hot_key_spread;
	/* (1.1) NULL (the default): the client has a watcher of its own.  A
	 * share (hr_share_new): the client follows the watcher of the clients
	 * opened with the same share and equal settings, starting one if
	 * there is none (see "Sharing a watcher"). */
	hr_share *share;
} hr_client_config;

/*
 * Sharing a watcher.  By default every client is independent: a watcher
 * thread, a watch stream and connections to etcd of its own, as when each
 * service instance runs in a process of its own.  A process that opens
 * several clients of one prefix (the libraries of one service, each with
 * its client; a proxy with a client per listener) can let them share:
 * the clients opened with one hr_share and equal settings follow one
 * watcher, that is one thread, one watch stream, one set of connections
 * and one ring built per revision, so etcd serves them as one client.
 * Each client gets a ring object of its own over that ring's memory
 * (hr_client_acquire() of two such clients gives two pointers with the
 * same answers).
 *
 * Equal settings: every field of hr_etcd_config (strings by content, the
 * ring options and the log callback and userdata by value: clients that
 * log each through userdata of its own do not share) and the fields of
 * hr_client_config that drive a watcher: page_size, backoff_initial_ms,
 * backoff_max_ms, probe_interval_ms, stale_warn_ms, probe_jitter_pct and
 * endpoint_order.  Clients whose settings differ get a watcher each,
 * within the same share.
 *
 * What stays each client's own: its lookups' counts and hot keys, its
 * on_change and on_diff callbacks, called for every ring it is given (a
 * client that joins a watcher with a ring gets that ring at once, and its
 * callbacks are called with it on the watcher thread soon after, with the
 * empty ring as the old one), its acks (a lease and a connection of their
 * own), its open timeout.  What is the watcher's: the log lines it writes
 * (once, through the shared log settings), and the fields of
 * hr_client_status but the ring's (watcher_clients says how many clients
 * follow it).  The watcher stops when the last of its clients closes.
 *
 * The callbacks of all the clients of one watcher run on its thread, one
 * after the other, so a slow one delays the others; they must not open or
 * close a client of the same share.
 */

/* Creates an empty share.  Errors: HR_EINVAL (NULL out), HR_ENOMEM.
 * Thread safe. */
HR_EXPORT int hr_share_new(hr_share **out, hr_error *err);

/* Drops the caller's reference: the share is freed once the clients
 * opened with it have closed as well.  No client may be opened with it
 * after this call.  Clients of one share may be opened and closed from
 * any threads at once.  Accepts NULL. */
HR_EXPORT void hr_share_free(hr_share *share);

/* Values of hr_client_config.endpoint_order. */
#define HR_ENDPOINTS_SPREAD 0
#define HR_ENDPOINTS_IN_ORDER 1

/* Sets `size` bytes of `cfg` (NULL: nothing) to the defaults above, with
 * cfg->size = size.  Call it through the macro. */
HR_EXPORT void hr_client_config_init_size(hr_client_config *cfg, size_t size);
#define hr_client_config_init(cfg) \
	hr_client_config_init_size((cfg), sizeof *(cfg))

/*
 * Opens a client of the node records `etcd` names, with the settings `cfg`
 * (NULL: the defaults), and starts its watcher thread (a full sync of
 * several pages reads them on a second thread, and of a ring kept in pages
 * places its points on a third, both for the sync's length only).
 * Returns once the first full sync has produced a ring (or at once with
 * `open_nonblocking`, with an empty ring at revision 0 until then).  The
 * ring holds every valid record under the prefix; records that would take
 * it over HR_NODES_MAX or HR_POINTS_MAX are left out, newest first by
 * their key's create_revision, and logged (event=bad_record), the same way
 * at every later revision, so every client derives the same ring
 * (docs/placement.md section 9).  If the first sync's ring cannot be built
 * (HR_ENOMEM), open fails with that error rather than return an empty
 * ring; a non-blocking client keeps trying.  Errors: HR_EINVAL (bad
 * setting: the message names the struct and the field; an ack prefix
 * overlapping etcd->prefix), HR_ECONNECT, HR_ETIMEDOUT, HR_EAUTH, HR_EPERM,
 * HR_ETLS, HR_EETCD, HR_ELIMIT (more than HR_NODES_MAX keys under the
 * prefix), HR_EEXIST (with acks: the client id is another live client's,
 * see "Acknowledged epochs"), HR_ENOMEM.  Neither struct is kept.
 */
HR_EXPORT int hr_client_open(const hr_etcd_config *etcd,
			     const hr_client_config *cfg, hr_client **out,
			     hr_error *err);

/*
 * Waits up to `timeout_ms` (0: only checks) for the client's first full
 * sync to publish a ring, and for a client that acknowledges its rings
 * (ack_client_id) for its first ack to be in etcd, as hr_client_open()
 * does without `open_nonblocking`: a program can open with
 * `open_nonblocking` and wait in short slices, doing something else
 * (watching for signals) between them.  Returns 0 once the first ring is
 * published and acknowledged (at once if it already is); HR_ETIMEDOUT
 * while not yet, the message saying how long since hr_client_open() and
 * the last failure (the watcher and the ack thread keep trying); or the
 * error that makes waiting pointless, as hr_client_open() would return it:
 * HR_EAUTH, HR_EPERM, HR_ETLS, HR_ELIMIT, HR_ENOMEM (the first ring could
 * not be built; the watcher retries), HR_EEXIST (the ack client id is
 * another live client's, the message naming its lease; see "Acknowledged
 * epochs").  HR_EINVAL for a NULL client or a negative timeout.  Thread
 * safe.
 */
HR_EXPORT int hr_client_wait_synced(hr_client *client, int timeout_ms,
				    hr_error *err);

/*
 * Stops the watcher, waits for it, and frees every ring the client still
 * owns.  Rings acquired with hr_client_acquire() stay valid until released;
 * the last ring another thread's lookups used is freed when that thread
 * exits or has since looked up four other clients.  A client that
 * acknowledges its rings revokes its ack lease first (see "Acknowledged
 * epochs").  Must not run concurrently with other calls on the same client
 * (callers stop their lookups first).  Accepts NULL.
 */
HR_EXPORT void hr_client_close(hr_client *client);

/* Copy-out answer of hr_client_lookup(); "" means "no owner in that view". */
typedef struct hr_owner {
	char node[HR_ID_MAX + 1];
	char addr[HR_ADDR_MAX + 1];
	char read_node[HR_ID_MAX + 1];
	char read_addr[HR_ADDR_MAX + 1];
	hr_state state;           /* of `node`      */
	hr_state read_state;      /* of `read_node` */
	uint64_t revision;
	uint64_t digest;
} hr_owner;

/*
 * Looks `key` up in the current ring and copies the owners out.  Thread
 * safe.  Lock free, allocation free and never blocking, except that a
 * thread's first lookup sets up its per-thread state once, and its first
 * lookup on each new ring starts its counts there (one allocation; see
 * hr_client_lookup_counts).  Errors: HR_EEMPTY (no node yet), HR_EINVAL.
 *
 * Each calling thread keeps a counted reference to the ring it used last,
 * for each of the last four clients it looked up, so that while the ring
 * does not change a lookup only compares one pointer.  The thread moves to
 * a new ring on its next lookup after it is published; a thread that stops
 * looking up keeps its last ring alive until it looks up again, exits, or
 * calls hr_client_close() (its counts on that ring hold it until the
 * thread looks up again or the client closes).  Not async-signal-safe.
 *
 * With hot_key_spread set (hr_client_config), the read owner of a hot key
 * is one of its first hot_key_replicas read-view replicas in turn; its
 * write owner, and both owners of every other key, are the ring's.
 */
HR_EXPORT int hr_client_lookup(hr_client *client, const void *key, size_t len,
			       hr_owner *out);

/*
 * Reader handles: hr_client_lookup() with the per-thread reference carried
 * in an explicit handle instead of thread-local storage, for callers that
 * want no hidden per-thread state or want to drop the ring they hold at a
 * time of their choosing (hr_reader_close).  Same speed and answers.
 *
 * One handle serves one thread at a time (open one per thread; passing it
 * between threads with proper synchronisation is fine).  An idle handle
 * keeps the last ring it used alive.  Close every handle before
 * hr_client_close().
 */
typedef struct hr_reader hr_reader;

/* Opens a handle on `client`.  Errors: HR_EINVAL (NULL argument),
 * HR_ENOMEM.  Thread safe. */
HR_EXPORT int hr_reader_open(hr_client *client, hr_reader **out);

/* Closes a handle (not while it is in use) and drops the ring it holds.
 * Accepts NULL.  Thread safe. */
HR_EXPORT void hr_reader_close(hr_reader *reader);

/*
 * hr_client_lookup() through a handle, with the same guarantees.  Errors:
 * HR_EEMPTY (no node yet), HR_EINVAL.
 */
HR_EXPORT int hr_reader_lookup(hr_reader *reader, const void *key, size_t len,
			       hr_owner *out);

/*
 * hr_ring_lookup_batch() on the client's current ring, reached as
 * hr_client_lookup() reaches it, with the same guarantees and per-thread
 * references: all n answers come from that one ring, whose revision and
 * digest go to *epoch (may be NULL; filled unless the result is
 * HR_EINVAL).  The numbers in `out` name nodes of that ring.  To turn them
 * into ids and addresses, either hold the ring yourself
 * (hr_client_acquire(), then hr_ring_lookup_batch() and hr_ring_node() on
 * it), or keep a table per ring (made in on_change, indexed by node
 * number) and use it when *epoch is that ring's.  Errors as for
 * hr_ring_lookup_batch(): HR_EEMPTY (no node yet), HR_EINVAL (also for a
 * NULL client).
 */
HR_EXPORT int hr_client_lookup_batch(hr_client *client,
				     const void *const *keys,
				     const size_t *lens, size_t n,
				     hr_batch_owner *out, hr_epoch *epoch,
				     hr_error *err);

/* hr_client_lookup_batch() through a handle (see hr_reader_lookup()). */
HR_EXPORT int hr_reader_lookup_batch(hr_reader *reader,
				     const void *const *keys,
				     const size_t *lens, size_t n,
				     hr_batch_owner *out, hr_epoch *epoch,
				     hr_error *err);

/*
 * Lookup counts: every hr_client_lookup() and every key of an
 * hr_client_lookup_batch() that has owners (and the same through a reader
 * handle) adds one to its write owner's `write` count and one to its read
 * owner's `read` count (the same node when no node warms or drains).
 * Preference lists and a thread that could not set up its per-thread
 * state (see hr_client_lookup) do not count.  The counts are kept per
 * thread (per handle for readers), so a lookup writes no memory another
 * thread writes, and are summed when read.  A node's counts follow its id across rings: a node that leaves
 * keeps them, and one that comes back continues from them, so each count
 * only grows (a Prometheus counter).  They start at 0 when the client
 * opens.  Keeps its layout (an array of them is filled).
 */
typedef struct hr_node_lookups {
	char node[HR_ID_MAX + 1];	/* the node's id                      */
	uint64_t write;			/* lookups it was the write owner of  */
	uint64_t read;			/* lookups it was the read owner of   */
} hr_node_lookups;

/*
 * The lookup counts of every node of the current ring and of every node
 * counted since the client opened, in id order (bytewise), into
 * out[0..n); *total (may be NULL) gets how many there are, so a caller
 * whose n was too small can call again with a larger array.  Returns the
 * number written, min(n, *total), or HR_EINVAL (NULL client, out NULL
 * with n > 0), HR_ENOMEM.  Thread safe, beside lookups, which it never
 * makes wait (they only try the lock it takes); costs O(nodes) per
 * thread that has looked up, and allocates.  Not during or after
 * hr_client_close().  Memory: each thread and reader handle that has
 * looked up on the client keeps its counts (24 bytes per node of its
 * ring, and a reference to that ring) and, unless hot_key_sample is 0,
 * its hot-key sketch (26 KiB) until the client closes; a handle opened
 * later may take over a closed one's.  A spread read (hot_key_spread) is
 * counted at the replica that served it.
 */
HR_EXPORT int hr_client_lookup_counts(hr_client *client, hr_node_lookups *out,
				      size_t n, size_t *total, hr_error *err);

/* Bytes of a hot key that hr_client_hot_keys() reports. */
#define HR_HOT_KEY_MAX 64

/*
 * One hot key of a client, as hr_client_hot_keys() fills it.  The
 * library fills it: it does not start with a size, which
 * hr_client_hot_keys() passes instead; later releases append fields.
 */
typedef struct hr_hot_key {
	unsigned char key[HR_HOT_KEY_MAX]; /* the key's first min(len,
					      HR_HOT_KEY_MAX) bytes; any
					      bytes, not NUL-terminated      */
	size_t len;             /* the key's length (above HR_HOT_KEY_MAX:
				   truncated above)                          */
	double rate;            /* estimated lookups per second              */
	double share;           /* estimated share of the client's lookups,
				   0 to 1                                    */
	double error;           /* the share may be overestimated by at most
				   this much (Space-Saving's bound, before
				   sampling noise)                           */
	int spread;             /* 1: its reads are spread (hot_key_spread)  */
	char node[HR_ID_MAX + 1];      /* its write owner in the current
					  ring ("" if none)                 */
	char read_node[HR_ID_MAX + 1]; /* its read owner, as a lookup
					  without spreading gives it        */
} hr_hot_key;

/*
 * The client's hot keys, most frequent first, into out[0..n): the keys
 * that a Space-Saving sketch over a sample of the client's lookups (one
 * in hot_key_sample of each node's single lookups, reader handles'
 * included, batches not) finds most frequent over the last 10 to 20
 * seconds, with their estimated rates and shares, and their owners in
 * the current ring.  Any key above 1/128 of a thread's sampled lookups is
 * found; with few samples (a window holds about rate * 10 s /
 * hot_key_sample of them) estimates of small shares are noisy.  `size` is sizeof *out (the macro
 * passes it): fields beyond it are not written.  Returns the number
 * written (0 with hot_key_sample 0, or before any sample), or HR_EINVAL
 * (NULL client, out NULL with n > 0, size 0 or below the first field's
 * end), HR_ENOMEM.  The caller owns `out`.  Thread safe, beside lookups,
 * which never wait for it (a sample that finds its thread's sketch being
 * read is dropped); costs tens of microseconds per thread that looked
 * up, and allocates.  Not during or after hr_client_close().
 */
HR_EXPORT int hr_client_hot_keys_size(hr_client *client, hr_hot_key *out,
				      size_t n, size_t size, hr_error *err);
#define hr_client_hot_keys(client, out, n, err) \
	hr_client_hot_keys_size((client), (out), (n), sizeof *(out), (err))

/* Copy-out preference list entry. */
typedef struct hr_replica {
	char node[HR_ID_MAX + 1];
	char addr[HR_ADDR_MAX + 1];
	char zone[HR_ZONE_MAX + 1];
	hr_state state;
} hr_replica;

/*
 * Copies the preference list of `key` in `view` into out[0..k) and returns
 * k (see hr_ring_preflist); `*revision` (may be NULL) gets the ring's
 * revision.  `r` is at most 64 (HR_EINVAL beyond).  Thread safe, with the
 * guarantees and per-thread references of hr_client_lookup().
 */
HR_EXPORT int hr_client_replicas(hr_client *client, const void *key,
				 size_t len, hr_view view, hr_replica *out,
				 size_t r, uint64_t *revision);

/*
 * Zero-copy read section: returns the current ring, valid until the matching
 * hr_client_read_end() on the same thread.  Sections are short (no blocking
 * inside) and may nest.  Never NULL after a successful open.
 */
HR_EXPORT const hr_ring *hr_client_read_begin(hr_client *client);
HR_EXPORT void hr_client_read_end(hr_client *client);

/*
 * Long hold: a counted reference to the current ring, kept as long as the
 * caller likes (across blocking calls, after close); hr_ring_release() it.
 */
HR_EXPORT hr_ring *hr_client_acquire(hr_client *client);

/* What the watcher knows.  The library fills it: it does not start with a
 * size, which hr_client_status_get() passes instead. */
typedef struct hr_client_status {
	uint64_t revision;        /* of the published ring                     */
	uint64_t digest;          /* of the published ring                     */
	uint64_t confirmed_revision; /* newest revision known to be applied   */
	int64_t unconfirmed_ms;   /* 0 when current, else time since the ring
				     was last confirmed current              */
	uint64_t rings_published;
	uint64_t resyncs;         /* full syncs after the first              */
	uint64_t reconnects;
	char endpoint[256];       /* endpoint in use ("" if none)            */
	/* (1.1) Clients following this client's watcher, this one included:
	 * 1 unless it shares its watcher (hr_client_config.share). */
	uint64_t watcher_clients;
} hr_client_status;

/*
 * Fills the first `size` bytes of `out`, and no byte beyond: the fields
 * that fit (a program built against older headers passes a smaller
 * struct), then zeros (the fields of a later release, for a program built
 * against newer headers).  Call it through the macro, which passes
 * sizeof *(out).  HR_EINVAL for a NULL argument or a size of 0.  Thread
 * safe.
 */
HR_EXPORT int hr_client_status_get_size(hr_client *client,
					hr_client_status *out, size_t size);
#define hr_client_status_get(client, out) \
	hr_client_status_get_size((client), (out), sizeof *(out))

/* ------------------------------------------------------------------------ */
/* Metrics: the Prometheus text exposition                                  */
/* ------------------------------------------------------------------------ */

/*
 * A client's state and its ring as Prometheus metrics, in the text
 * exposition format 0.0.4, for a service to serve on an endpoint of its
 * own with the Content-Type HR_METRICS_CONTENT_TYPE.  The metrics, with
 * the default (empty) name prefix; docs/metrics.md gives their meaning and
 * example queries:
 *
 *   hashring_build_info{version}        gauge 1: the library's version
 *   hashring_ring_revision              gauge: the published ring's etcd
 *                                       revision (0 before the first sync)
 *   hashring_ring_info{digest}          gauge 1: its digest, 16 hex digits
 *                                       (equal digests, equal placement)
 *   hashring_ring_nodes{state}          gauge: nodes per state
 *   hashring_ring_points                gauge: points of the ring
 *   hashring_node_info{node,addr,zone}  gauge 1 per node
 *   hashring_node_state{node,state}     gauge: 1 for the node's state, 0
 *                                       for the two others
 *   hashring_node_weight{node}          gauge
 *   hashring_node_points{node}          gauge
 *   hashring_node_share_ratio{node,view} gauge: share of the key space the
 *                                       node owns in view "write" and
 *                                       "read", 0 to 1 (hr_ring_node_share)
 * and for a client (hr_client_status), between ring_info and ring_nodes:
 *   hashring_confirmed_revision         gauge: newest revision known applied
 *   hashring_unconfirmed_seconds        gauge: 0 while current, else the
 *                                       time since it was last confirmed
 *   hashring_rings_published_total      counter
 *   hashring_resyncs_total              counter: full syncs after the first
 *   hashring_reconnects_total           counter
 *   hashring_watcher_clients            gauge: clients following the
 *                                       client's watcher (1: not shared)
 *   hashring_etcd_endpoint_info{endpoint} gauge 1: the endpoint in use (no
 *                                       sample while there is none)
 * and for a client, last:
 *   hashring_node_lookups_total{node,view} counter: lookups answered with
 *                                       the node as owner in view "write"
 *                                       and "read" (hr_client_lookup_counts),
 *                                       for the nodes of the ring and those
 *                                       counted before
 *   hashring_hot_key_lookups_per_second{rank,key,node} gauge,
 *   hashring_hot_key_share_ratio{rank,key,node} gauge: the client's top 10
 *                                       keys (hr_client_hot_keys), rank "1"
 *                                       first, `node` their write owner; key
 *                                       bytes below 0x20 and 0x7f written as
 *                                       \xHH, a cut key ending in "..."
 *
 * Every family has HELP and TYPE lines; every sample carries the
 * options' constant labels first.  Later releases add families, with
 * label names from those reserved below, and
 * an `omit` flag for each; a family is never renamed or retyped within a
 * major version.  Label values may hold any bytes: '\', '"' and newline
 * are escaped as the format says, other bytes of valid UTF-8 pass
 * through, and each byte that is not part of valid UTF-8 (which the
 * format does not allow) is written as U+FFFD.  Node ids never need that
 * (printable ASCII); addresses, zones and constant labels may.  Numbers
 * are written in the C locale, whatever the program's: counts as exact
 * integers, others in the fewest digits that read back as the same
 * double.
 */
#define HR_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * Receives the next `len` bytes of the exposition (at most 8192 at a
 * time; pieces do not follow lines), on the thread that called the
 * writer.  Returns 0 to go on; any other value stops the writer, which
 * returns HR_EIO.
 */
typedef int (*hr_metrics_write_fn)(void *userdata, const char *data,
				   size_t len);

/* A label that every sample carries (an instance or client id).  Keeps
 * its layout (an array of them is passed). */
typedef struct hr_metrics_label {
	const char *name;    /* [a-zA-Z_][a-zA-Z0-9_]*, at most 128 bytes   */
	const char *value;   /* any bytes, NUL-terminated, at most 4096     */
} hr_metrics_label;

/* Leaves the per-node families (hashring_node_*) out: about 510 bytes
 * per node, 51 MB for a ring of 100,000 nodes. */
#define HR_METRICS_OMIT_NODES 0x1u
/* Leaves hashring_node_lookups_total out (hr_client_metrics_write): the
 * counts' read takes the lookup counters' lock and O(nodes) per thread
 * that looked up (hr_client_lookup_counts). */
#define HR_METRICS_OMIT_LOOKUPS 0x2u
/* Leaves the hot-key families out (hr_client_metrics_write): their read
 * merges the threads' sketches (hr_client_hot_keys). */
#define HR_METRICS_OMIT_HOT_KEYS 0x4u

/*
 * How the metrics are written.  A NULL `const hr_metrics_options *` means
 * the defaults.  Grows (see "Structs that grow"); every field defaults
 * to 0, so `{ .size = sizeof opts, ... }` equals the init macro.
 *
 * HR_EINVAL, naming the field, for a bad size; a name prefix that is not
 * [a-zA-Z_][a-zA-Z0-9_]* or is over 128 bytes; labels NULL with a count,
 * more than 64 labels, a NULL name or value, a name that is not valid, is
 * given twice, starts with "__" (reserved by Prometheus) or is one the
 * library writes or will write (node, view, state, addr, zone, digest,
 * version, endpoint, key, rank, le, quantile, result, step); a value
 * over 4096 bytes; an unknown flag in `omit`.
 */
typedef struct hr_metrics_options {
	size_t size;               /* sizeof, set by hr_metrics_options_init() */
	/* Prepended verbatim to every metric name (NULL or "": none), so
	 * "myapp_" gives myapp_hashring_ring_revision. */
	const char *name_prefix;
	const hr_metrics_label *labels; /* constant labels; NULL: none       */
	size_t label_count;
	uint64_t omit;             /* HR_METRICS_OMIT_* flags; 0: everything */
} hr_metrics_options;

/* Sets `size` bytes of `opts` (NULL: nothing) to zeros, with opts->size =
 * size.  Call it through the macro. */
HR_EXPORT void hr_metrics_options_init_size(hr_metrics_options *opts,
					    size_t size);
#define hr_metrics_options_init(opts) \
	hr_metrics_options_init_size((opts), sizeof *(opts))

/*
 * Writes the metrics of `client` (its status and the ring published now:
 * the ring families are those of one ring, read once) to `write_fn`, with
 * `userdata`, as `opts` says (NULL: the defaults).  Neither `opts` nor
 * its strings are kept.
 *
 * Returns 0 once everything was written.  Errors: HR_EINVAL (NULL client
 * or write_fn, bad options: nothing written), HR_ENOMEM, HR_EIO (`write_fn`
 * returned nonzero: the message gives its value).  On an error after
 * some output the exposition is cut short: a server collects it and
 * sends it once the call returned 0 (and answers 500 otherwise).
 *
 * Thread safe: any thread, any number at once, beside lookups, which it
 * never slows down (it holds a ring reference, no lock); also from the
 * client's callbacks; not during or after hr_client_close().  Costs
 * O(points) for the shares, and allocates two doubles per node.
 */
HR_EXPORT int hr_client_metrics_write(hr_client *client,
				      hr_metrics_write_fn write_fn,
				      void *userdata,
				      const hr_metrics_options *opts,
				      hr_error *err);

/*
 * The ring families alone (build_info, ring_*, node_*; no client
 * families) for `ring`, e.g. an offline ring from hr_ring_load_file().
 * Same options, errors and output rules as hr_client_metrics_write (NULL
 * ring: HR_EINVAL).  Thread safe.
 */
HR_EXPORT int hr_ring_metrics_write(const hr_ring *ring,
				    hr_metrics_write_fn write_fn, void *userdata,
				    const hr_metrics_options *opts,
				    hr_error *err);
/* Acknowledged epochs: which ring every client has                         */
/* ------------------------------------------------------------------------ */

/*
 * A client opened with hr_client_config.ack_client_id and ack_prefix
 * announces, on a thread of its own, the ring it serves: after each batch
 * of changes it applied (and after each full sync), whether or not the
 * ring's digest changed, it puts a small JSON record (docs/handoff.md) at
 * <ack_prefix><client id>, attached to its own lease.  Acks are coalesced:
 * one put once no new ring came for 25 ms, or ack_interval_ms after the
 * first ring not yet acknowledged, and never two puts closer than
 * ack_interval_ms.  The lease is granted at the first ack, renewed every
 * TTL/3 and revoked by hr_client_close(), which waits for etcd up to
 * request_timeout_ms for it (not at all while etcd fails: the lease then
 * expires by itself); a client that dies leaves when its lease expires.
 * If another live lease holds the key (two clients given one id), the
 * client does not overwrite it: it logs `event=ack_id_taken` (level error)
 * at once, then at most every 5 s while it lasts, `failures` counting the
 * attempts so far, and tries again after 0.5 s doubling up to 5 s; the
 * same holds for other failed puts (`event=ack_failed`, level warn).
 *
 * A blocking hr_client_open() returns only once the first ack is in etcd
 * (within what is left of open_timeout_ms, 1 s at least): a client that
 * routes is counted by every wait from then on.  It fails otherwise, with
 * HR_EEXIST (the id is another live client's: the message names its
 * lease), HR_EPERM, HR_EAUTH, HR_ETLS at once, or HR_ETIMEDOUT.  With
 * open_nonblocking, open returns at once and the first ack follows the
 * first ring by a few milliseconds; hr_client_wait_synced() waits for it
 * and fails as a blocking open would.  A non-blocking client that does not
 * wait routes without being counted while its id is taken, and acks as
 * soon as the id is free (the other client closed, or its lease expired).
 *
 * An ack's revision is the newest etcd revision at which the client knows
 * its ring to match the records: that of the last batch of changes it
 * applied, or of its last full sync (etcd's revision then, which may be
 * past the last change).  Two clients at one revision whose digests differ
 * watch different data or use different ring options: a conflict.
 */

/* One live client's last ack.  Filled by the library, valid while its
 * hr_acks is held; new fields may be appended (never allocate or index an
 * array of it: use hr_acks_get()). */
typedef struct hr_ack {
	const char *client_id;
	uint64_t revision;       /* its ring matches etcd at this revision   */
	uint64_t digest;         /* hr_ring_digest() of its ring             */
	uint64_t lag;            /* hr_acks_ring_revision() - revision; 0 at
				    or past                                  */
	int64_t lease;           /* the lease the ack is attached to         */
	int64_t time_ms;         /* when it was written, wall clock, ms since
				    the epoch (the client's clock)           */
	const char *version;     /* hr_version() of the client's library     */
	int conflict;            /* another live client reports this revision
				    with another digest                      */
} hr_ack;

/* The acks under one prefix, as read by one call. */
typedef struct hr_acks hr_acks;

/*
 * Reads every live client's ack under `ack_prefix` (the same rules as
 * hr_client_config.ack_prefix: not overlapping etcd->prefix), in client id
 * order, with the newest revision of the records under etcd->prefix for
 * the lag (a deletion is not seen there: only hr_acks_wait() is exact).
 * A value under the prefix that is not an ack (docs/handoff.md; a revision
 * above 2^53 is not) is left out and logged (event=bad_ack; a wait logs
 * each such value once, not at each reading).  Errors: HR_EINVAL (NULL
 * out, bad settings or prefix, naming it), the connection errors of
 * hr_client_open, HR_ELIMIT (more than HR_NODES_MAX acks), HR_ENOMEM.
 * *out is freed with hr_acks_free().
 * Thread safe.
 */
HR_EXPORT int hr_acks_list(const hr_etcd_config *etcd, const char *ack_prefix,
			   hr_acks **out, hr_error *err);

/* The number of acks, and ack `i` in client id order (NULL out of range). */
HR_EXPORT size_t hr_acks_count(const hr_acks *acks);
HR_EXPORT const hr_ack *hr_acks_get(const hr_acks *acks, size_t i);
/* The newest mod revision of the records under the ring prefix (0: no
 * record), against which each ack's lag is counted: the newest record's
 * revision, not a ring's (an ack's revision, or hr_ring_revision(), may
 * be past it: a full sync matches etcd's revision at the time). */
HR_EXPORT uint64_t hr_acks_ring_revision(const hr_acks *acks);
/* Frees the list.  Accepts NULL. */
HR_EXPORT void hr_acks_free(hr_acks *acks);

/*
 * Waits until every live client under `ack_prefix` reports a revision of
 * at least `revision` (1..INT64_MAX), reading the acks every 100 ms, for up
 * to `timeout_ms` (0: reads once).  No live client at all is success: the
 * caller that needs some checks hr_acks_count() of `*last`.  Returns 0;
 * HR_ECONFLICT at once when two live clients report one revision with
 * different digests (the message names both, hr_ack.conflict marks them);
 * HR_ETIMEDOUT naming the clients still behind and their revisions, or,
 * when etcd could not be read (which is retried until then), the cause;
 * the other errors of hr_acks_list() at once.
 * `last` (may be NULL) gets the last list read, even on failure (NULL if
 * none could be read); free it with hr_acks_free().  Thread safe.
 */
HR_EXPORT int hr_acks_wait(const hr_etcd_config *etcd, const char *ack_prefix,
			   uint64_t revision, int timeout_ms, hr_acks **last,
			   hr_error *err);

/* ------------------------------------------------------------------------ */
/* Registration: joining the cluster under a lease                          */
/* ------------------------------------------------------------------------ */

/*
 * A registrar announces one node under <prefix><id>, attached to an etcd
 * lease that a background thread renews about every TTL/3.  If the process
 * dies the lease expires and every client drops the node.  If the lease is
 * lost (expired while etcd was unreachable, revoked, etcd restored) a new
 * one is granted and the record put again.  A record changed by someone
 * else (an operator's `etcdctl put`) is adopted, not overwritten; if that
 * put detached the key from the lease (lease 0), the lease is attached
 * again.  Every such put is conditional on the key being as the registrar
 * last read it, so it never overwrites another registrar's record.
 *
 * Losing the id: when the key turns out to be attached to another live
 * lease (another process registered with `replace`, or an operator put it
 * with some other lease), the id has been taken over.  The registrar logs
 * `event=registration_lost` (level error: id, our lease, the holder's),
 * stops renewing and never writes the key again; hr_registrar_status()
 * returns HR_EEXIST from then on, and the registration's `on_lost` is
 * called.  It notices at its next renewal, within about TTL/3, or at once
 * when an update finds the key taken.
 *
 * While etcd is unreachable the registrar retries after 500 ms, doubling
 * up to TTL/3, but always once more shortly before the lease would run
 * out.  It logs the first `keepalive_failed` at once, then at most one line
 * every 5 s (with `failures`, the count since the last line), and
 * `keepalive_recovered` when a renewal works again.
 *
 * Lease ids in log lines and messages are written as etcdctl writes them:
 * 16 lowercase hex digits.
 */
typedef struct hr_registrar hr_registrar;

/*
 * Called once, on the registrar's renewal thread, when the registrar lost
 * its id to another process (see above): `why` holds HR_EEXIST and the
 * message hr_registrar_status() gives from then on.  It may call any
 * function on `r` except hr_registrar_close(), which waits for this
 * thread (deregister from here, close elsewhere).
 */
typedef void (*hr_registrar_lost_fn)(void *userdata, hr_registrar *r,
				     const hr_error *why);

/* The node a registrar announces.  Grows (see "Structs that grow"). */
typedef struct hr_registration {
	size_t size;             /* sizeof, set by hr_registration_init()    */
	const char *id;          /* required; rules of hr_node               */
	const char *addr;        /* required                                  */
	const char *zone;        /* NULL or "" for none                       */
	double weight;           /* default 1                                 */
	hr_state state;          /* default HR_STATE_WARMING (joining)        */
	int ttl_s;               /* lease TTL in seconds, 2..3600 (default 10):
				    the node leaves every ring at most this
				    long after its process dies; renewed every
				    ttl_s/3.  etcd may raise a small TTL (to
				    about 1.5 election timeouts); the granted
				    one is used                              */
	int replace;             /* take the id over if someone else holds it */
	hr_registrar_lost_fn on_lost; /* NULL: none (poll hr_registrar_status) */
	void *on_lost_userdata;
	/* (1.1) Tokens per unit of weight, 0 (the default) for none: with
	 * etcd->ring's placement HR_PLACEMENT_TOKENS, the record gets
	 * max(1, round(weight * tokens)) tokens from hr_tokens_allocate()
	 * against the ring of the records under the prefix, written by a
	 * transaction that fails if any record was put since they were read;
	 * then they are read and the tokens allocated again after a random
	 * wait (up to 20 ms, the bound doubling with each conflict up to 1 s),
	 * for up to 30 s (then HR_ECONFLICT), the lease renewed meanwhile: a
	 * burst of joiners spreads out and each gets through.
	 * docs/placement.md section 16. */
	size_t tokens;
} hr_registration;

/* Sets `size` bytes of `reg` (NULL: nothing) to the defaults above, with
 * reg->size = size.  Call it through the macro. */
HR_EXPORT void hr_registration_init_size(hr_registration *reg, size_t size);
#define hr_registration_init(reg) \
	hr_registration_init_size((reg), sizeof *(reg))

/*
 * Registers `reg` under etcd->prefix.  The node is checked with the ring
 * options of `etcd` (etcd->ring), which must be those of the clients:
 * exactly their rules, so that a record every client would refuse is
 * never written.  Returns once the record is in etcd.  Errors: HR_EINVAL
 * (a bad setting, id, addr, zone, weight or state, for example a weight
 * that is not whole with ketama placement; TTL out of range), HR_ELIMIT (a
 * weight that gives more than HR_POINTS_MAX points with the ring options'
 * vnodes_per_weight: the message names the limit), HR_EEXIST (the key
 * exists and `replace` is not set: the message names its lease),
 * HR_ECONNECT, HR_ETIMEDOUT, HR_EAUTH, HR_EPERM, HR_ETLS, HR_EETCD,
 * HR_ENOMEM.  Neither struct is kept: strings are copied.  With `replace`
 * the record is taken over whoever holds it; that registrar loses the id
 * (see above).
 */
HR_EXPORT int hr_register(const hr_etcd_config *etcd,
			  const hr_registration *reg, hr_registrar **out,
			  hr_error *err);

/* Which fields of a node record an hr_record_update changes. */
#define HR_UPDATE_STATE  0x1u
#define HR_UPDATE_WEIGHT 0x2u
/*
 * (1.1) With HR_UPDATE_STATE to HR_STATE_DRAINING and the tokens placement
 * (the ring options of the etcd config): the node hands its tokens to
 * heirs in the same transaction (docs/placement.md section 16,
 * "Leaving"): the records under the prefix are read, hr_tokens_heirs()
 * chooses in their ring, and each heir's record lists the tokens it takes
 * as well, its lease kept; if any record changed meanwhile, the records
 * are read and the heirs chosen again, up to 8 times (then HR_ECONFLICT).
 * While the node drains, reads of its arcs stay with it and writes go to
 * the heirs; once its record is gone the heirs own them.  Keys move only
 * from the node.  Errors besides the update's: HR_EINVAL (another
 * placement, a node without tokens, no node with tokens to take them),
 * HR_ELIMIT (more than 126 heirs: one etcd transaction), HR_ECONFLICT.
 */
#define HR_UPDATE_HEIRS  0x4u

/*
 * A change of a registered node's record: the fields named in `fields`
 * take the values below, every other field of the record is kept (unknown
 * ones included).  Grows (see "Structs that grow"); every field defaults
 * to 0.  HR_EINVAL, naming the field, for no field or an unknown flag, an
 * invalid state, or a weight that is not a finite number > 0.
 */
typedef struct hr_record_update {
	size_t size;             /* sizeof, set by hr_record_update_init()   */
	unsigned fields;         /* HR_UPDATE_STATE | HR_UPDATE_WEIGHT | ..._HEIRS */
	hr_state state;
	double weight;
} hr_record_update;

/* Sets `size` bytes of `upd` (NULL: nothing) to zeros, with upd->size =
 * size.  Call it through the macro. */
HR_EXPORT void hr_record_update_init_size(hr_record_update *upd, size_t size);
#define hr_record_update_init(upd) \
	hr_record_update_init_size((upd), sizeof *(upd))

/*
 * Changes the registrar's own record as `upd` says: one put that keeps the
 * lease (and attaches it again if the key was detached), state and weight
 * at once when both are named; with HR_UPDATE_HEIRS, one transaction with
 * the heirs' records as well.  Thread safe.  Errors as for hr_register
 * (HR_EINVAL, HR_ELIMIT: the new record would be refused by the clients;
 * nothing is written), HR_ENOTFOUND (the key was deleted; the renewal puts
 * it back), HR_EEXIST once the id was taken over (the message of
 * hr_registrar_status), HR_ECLOSED after deregistration.
 */
HR_EXPORT int hr_registrar_update(hr_registrar *r, const hr_record_update *upd,
				  hr_error *err);

/* The lease the record is attached to now (it changes if the lease is
 * lost and granted again); 0 after deregistration and once the id was
 * taken over.  Thread safe. */
HR_EXPORT int64_t hr_registrar_lease(hr_registrar *r);

/*
 * Whether the registrar still holds its registration: 0 while it does,
 * also while it retries through an etcd outage (a lease that expired
 * meanwhile is granted again); HR_EEXIST once another process took the id
 * over (for good: the message names the id and the holder's lease);
 * HR_ECLOSED after hr_registrar_deregister() (a registrar that lost its id
 * keeps answering HR_EEXIST).  HR_EINVAL for NULL.  Never blocks; thread
 * safe.  A sidecar polls it to exit when it is replaced.
 */
HR_EXPORT int hr_registrar_status(hr_registrar *r, hr_error *err);

/* Revokes our lease and stops renewing.  While we hold the id the record
 * disappears from etcd at once and every client drops the node; after a
 * loss only our own lease is revoked, and the record, now attached to its
 * holder's lease, stays.  Thread safe; a second call returns 0. */
HR_EXPORT int hr_registrar_deregister(hr_registrar *r, hr_error *err);

/* Deregisters (if not done yet: the same rules), stops the thread and
 * frees.  Accepts NULL. */
HR_EXPORT void hr_registrar_close(hr_registrar *r);

/*
 * Changes the record of node `id`, registered under etcd->prefix by
 * whatever process, as `upd` says, in place: the record's other fields
 * and its lease are kept.  The new record is checked as hr_register()
 * checks a node, with etcd->ring: one the clients would refuse is not
 * written.  With HR_UPDATE_HEIRS (an operator's hand-over for a node
 * that leaves) the heirs' records are written in the same transaction.
 * Errors: HR_ENOTFOUND (no such node), HR_EPARSE (its record is not
 * valid), HR_EINVAL and HR_ELIMIT (as for hr_register, and those of
 * HR_UPDATE_HEIRS), HR_ECONFLICT (HR_UPDATE_HEIRS), and the connection
 * errors of hr_register.  Thread safe.
 */
HR_EXPORT int hr_node_update(const hr_etcd_config *etcd, const char *id,
			     const hr_record_update *upd, hr_error *err);

/* ------------------------------------------------------------------------ */
/* Rebalancing: ring diffs                                                  */
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

/* hr_diff, declared above, is the difference between two rings in one
 * view.  Immutable once made. */

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
HR_EXPORT int hr_ring_diff(const hr_ring *old_ring, const hr_ring *new_ring,
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
				     const hr_node **out);

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
HR_EXPORT int hr_inflight_create(double c, size_t max_ids, hr_inflight **out,
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
				  const hr_node **out);

/* Ends one request on node `id`.  HR_ENOTFOUND if no request is in flight
 * on it, HR_EINVAL for NULL.  Thread safe. */
HR_EXPORT int hr_inflight_release(hr_inflight *inflight, const char *id);

/* Requests in flight on node `id` (0 if unknown), and on all nodes. */
HR_EXPORT uint64_t hr_inflight_load(const hr_inflight *inflight,
				    const char *id);
HR_EXPORT uint64_t hr_inflight_total(const hr_inflight *inflight);

/* ------------------------------------------------------------------------ */
/* Rebalancing: the handoff's copy between stores (1.1)                     */
/* ------------------------------------------------------------------------ */

/*
 * A rebalancer moves the data of the arcs a ring change moves
 * (docs/handoff.md): for every warming and draining node, each key whose
 * write owner differs from its read owner is copied from the read owner
 * to the write owner, never overwriting what is there.  The library knows
 * no store: a backend (below) reads and writes one, by the nodes'
 * addresses; memcached is the backend shipped (hr_rebalance_memcached()).
 *
 * hr_rebalancer_run() is the whole handoff of docs/handoff.md section 2
 * for a client's ring: wait until every live client acknowledges the
 * ring, copy, and as the config says promote the warming nodes, wait
 * again and purge.  hr_rebalancer_copy() and hr_rebalancer_purge() are
 * those steps alone, for a program that orchestrates the others itself
 * (it then waits for the acks, with hr_acks_wait(), before each).
 *
 * Every step is idempotent (a copy only adds, a purge deletes by CAS): a
 * run interrupted at any point, by a crash or hr_rebalancer_cancel(), and
 * run again converges.  Steps log `event=rebalance_*` lines (docs/handoff.md
 * section 5) through the config's logger.
 */

/* What a backend's fetch gives: a value with what the copy carries over. */
typedef struct hr_rebalance_value {
	const void *data;   /* the value's bytes: the backend's, valid until
			       its next call                               */
	size_t len;
	uint32_t flags;     /* the store's client flags                     */
	int64_t ttl_s;      /* remaining seconds; -1: no expiry; 0: expires
			       within the second (not copied)              */
} hr_rebalance_value;

/* Receives each key a backend's enumerate lists, with its CAS (0 when the
 * store has none; the purge deletes only if it is still that).  Returns 0
 * to go on; any other value stops the enumeration, which returns it. */
typedef int (*hr_rebalance_key_fn)(void *ctx, const void *key, size_t len,
				   uint64_t cas);

/*
 * A store, seen by the rebalancer.  Nodes are named by their hr_node.addr.
 * Every callback returns a negative HR_E* code on failure, with `err`
 * (never NULL) filled, saying what failed; that ends the step, whose
 * caller gets the code and the message, led by the node's role and id
 * ("destination mc2: ..."), and whose event=rebalance_failed line names
 * the node, its address, its role and the backend.  But HR_ELIMIT from
 * fetch, add or remove says that the store cannot take this one key
 * through the backend (memcached's text protocol cannot carry a key of
 * over 186 bytes holding a blank or a control byte): the key is skipped,
 * left where it is, counted (`skipped`) and logged (event=rebalance_skipped,
 * with its bytes escaped), and the step goes on.
 * Callbacks are called from the thread that runs a step, one at a time;
 * the backend may keep connections in `userdata`.
 *
 *   enumerate  lists every key of node `addr` to fn(ctx, ...); `pass`
 *              counts the passes from 0.  Returns 0, or
 *              HR_REBALANCE_LISTED_ALL when the listing is complete (every
 *              key present throughout it was listed) so that no further
 *              pass is needed.  Required.
 *   fetch      reads `key` from `addr`: 1 and *out filled, or 0 when the
 *              node has no such key.  A NULL `out` asks only whether the
 *              key is there.  Required.
 *   add        stores `value` under `key` at `addr` only if absent, with
 *              its flags and TTL: 1 when stored (its CAS in *cas, 0 if
 *              none), 0 when the key is present.  Required.
 *   remove     deletes `key` at `addr` if its CAS is still `cas` (0:
 *              whatever it is): 1 when deleted, 0 when absent or changed.
 *              Optional (NULL): without it a copy does not take back a
 *              key deleted while it was copied (docs/handoff.md section
 *              2), and hr_rebalancer_purge() fails with HR_EINVAL.
 *   close      releases `userdata`; called by hr_rebalancer_free().
 *              Optional.
 *
 * `name` names the store in log lines ("memcached"; 1..64 bytes, copied;
 * NULL: "store").
 *
 * `enumerate_passes` (0 means 1) is for a store whose listing may miss a
 * key (memcached's LRU walk misses items that move while it passes): the
 * most passes over a source.  Unless a pass returns
 * HR_REBALANCE_LISTED_ALL, the scan lists the source again until a pass
 * (the second or a later one) adds no moving key the earlier ones missed,
 * or until this bound, which it logs (event=rebalance_scan_unsettled, a
 * warning: keys may be left behind).  `scanned` counts the first pass,
 * the others only add keys it missed.  Grows (see "Structs that grow"):
 * set it up with hr_rebalance_backend_init(), which zeroes every field.
 */
typedef struct hr_rebalance_backend {
	size_t size;          /* sizeof, set by hr_rebalance_backend_init() */
	void *userdata;
	int (*enumerate)(void *userdata, const char *addr, unsigned pass,
			 hr_rebalance_key_fn fn, void *ctx, hr_error *err);
	int (*fetch)(void *userdata, const char *addr, const void *key,
		     size_t len, hr_rebalance_value *out, hr_error *err);
	int (*add)(void *userdata, const char *addr, const void *key, size_t len,
		   const hr_rebalance_value *value, uint64_t *cas, hr_error *err);
	int (*remove)(void *userdata, const char *addr, const void *key,
		      size_t len, uint64_t cas, hr_error *err);
	void (*close)(void *userdata);
	size_t enumerate_passes;
	const char *name;
} hr_rebalance_backend;

/* What an enumerate returns when its listing missed no key. */
#define HR_REBALANCE_LISTED_ALL 1

HR_EXPORT void hr_rebalance_backend_init_size(hr_rebalance_backend *b,
					      size_t size);
#define hr_rebalance_backend_init(b) \
	hr_rebalance_backend_init_size((b), sizeof *(b))

/*
 * Fills `*out` (set up with hr_rebalance_backend_init()) with the
 * memcached backend: keys listed with `lru_crawler metadump hash`, a walk
 * of the hash table that misses no item (memcached >= 1.6.9; an older
 * server's `metadump all`, which can, is repeated as enumerate_passes
 * says: 8), values moved with the meta commands mg, ms (add
 * mode, flags and remaining TTL) and md (by CAS), memcached >= 1.6.  Each
 * connect, read and write waits at most `timeout_ms` (0: 2000).  It keeps
 * one connection per node, made on first use and made again after an
 * error; out->close closes them and frees out->userdata (hr_rebalancer_free
 * calls it; call it yourself if no rebalancer took the backend).  Errors:
 * HR_EINVAL (NULL or uninitialised out, timeout_ms < 0), HR_ENOMEM.
 */
HR_EXPORT int hr_rebalance_memcached(int timeout_ms, hr_rebalance_backend *out,
				     hr_error *err);

/* Where a rebalancer is. */
typedef enum hr_rebalance_step {
	HR_REBALANCE_STEP_IDLE = 0,    /* no step run yet                      */
	HR_REBALANCE_STEP_WAIT = 1,    /* waiting for the clients' acks        */
	HR_REBALANCE_STEP_SCAN = 2,    /* listing a source node's keys         */
	HR_REBALANCE_STEP_COPY = 3,    /* copying them                         */
	HR_REBALANCE_STEP_PROMOTE = 4, /* promoting, waiting for the new ring  */
	HR_REBALANCE_STEP_PURGE = 5,   /* deleting keys no node reads there    */
	HR_REBALANCE_STEP_DONE = 6,    /* the last call succeeded              */
	HR_REBALANCE_STEP_FAILED = 7   /* the last call failed, or was cancelled */
} hr_rebalance_step;

/* "idle", "wait", "scan", "copy", "promote", "purge", "done", "failed";
 * NULL for another value. */
HR_EXPORT const char *hr_rebalance_step_name(hr_rebalance_step step);

/*
 * A rebalancer's figures, of the step running or last run (each public
 * call starts them again from 0).  Filled by hr_rebalancer_progress(); new
 * fields are appended.
 */
typedef struct hr_rebalance_progress {
	hr_rebalance_step step;
	int error;                 /* the HR_E* code of a failed step, or 0  */
	uint64_t revision;         /* of the ring the step works on          */
	char node[HR_ID_MAX + 1];  /* the node scanned, copied from or purged */
	size_t nodes_done;         /* source nodes finished                  */
	size_t nodes_total;        /* source nodes of the copy or purge      */
	uint64_t scanned;          /* keys listed (first pass)               */
	uint64_t moving;           /* of those, distinct keys that move      */
	double expected;           /* keys expected to move: the diff's share
				      of each source times its keys scanned   */
	uint64_t copied;           /* added at their write owner             */
	uint64_t present;          /* already there: left as they were       */
	uint64_t gone;             /* deleted or expired at the source since */
	uint64_t taken_back;       /* copies removed: deleted at the source
				      while being copied                     */
	uint64_t bytes;            /* value bytes copied                     */
	uint64_t purge_scanned;    /* keys listed by the purge               */
	uint64_t purge_stale;      /* of those, owned by other nodes         */
	uint64_t purged;           /* deleted                                */
	uint64_t purge_changed;    /* left: rewritten or gone since listed   */
	double keys_per_s;         /* keys done (copied, present, gone or
				      purged) a second, over the last second  */
	double bytes_per_s;        /* value bytes copied a second, likewise  */
	double eta_s;              /* seconds left in the copy at that rate;
				      -1: unknown                            */
	double elapsed_s;          /* since the step began                   */
	uint64_t acked_revision;   /* what the run's last wait waited for    */
	size_t clients;            /* live clients acknowledging it (while
				      a wait goes on: those seen so far)    */
	size_t promoted;           /* nodes the run promoted                 */
	/* Appended after the first 1.1 struct (a caller built against it
	 * passes the size that ends at `promoted`). */
	uint64_t skipped;          /* keys the backend cannot move (HR_ELIMIT):
				      left where they are, each logged      */
	uint64_t node_keys;        /* the keys of `node` the step works on:
				      a source's moving keys, once listed;
				      the stale keys of a purged node       */
	uint64_t node_keys_done;   /* of those, done (copied, present, gone,
				      skipped; purged, changed)             */
} hr_rebalance_progress;

/* A run promotes the warming nodes once their copy is done, then waits. */
#define HR_REBALANCE_PROMOTE 0x1u
/* A run then purges: deletes from every node the keys it owns in neither
 * view (docs/handoff.md section 4).  Needs the backend's remove. */
#define HR_REBALANCE_PURGE 0x2u

/*
 * A rebalancer's settings.  Grows (see "Structs that grow"); set it up
 * with hr_rebalance_config_init(), which sets the defaults given.  Strings
 * are copied by hr_rebalancer_new().  HR_EINVAL, naming the field, for a
 * bad size, a rate that is negative or not finite, a timeout or interval
 * < 0, an unknown flag, an invalid log level, an ack prefix that is empty
 * or over 4096 bytes.
 */
typedef struct hr_rebalance_config {
	size_t size;              /* sizeof, set by hr_rebalance_config_init() */
	double keys_per_s;        /* most keys copied (or deleted) a second;
				     0: no cap (0)                            */
	double bytes_per_s;       /* most value bytes copied a second; 0: no
				     cap (0).  Over any 1 s window the copy
				     passes at most the cap plus 1/20 s of it
				     (docs/handoff.md section 5).             */
	const char *ack_prefix;   /* the clients' acks, for hr_rebalancer_run
				     ("/hashring/acks/")                      */
	size_t min_clients;       /* a run waits (wait_timeout_ms) until at
				     least this many live clients acknowledge,
				     and fails otherwise (1: a run that no
				     client acknowledges, whose wait proves
				     nothing, is refused).  0 runs without any
				     acknowledging client, explicitly.        */
	int wait_timeout_ms;      /* each wait of a run: for the acks, for the
				     promoted ring (30000)                    */
	unsigned flags;           /* HR_REBALANCE_PROMOTE, HR_REBALANCE_PURGE (0) */
	int progress_interval_ms; /* event=rebalance_progress every; 0: never
				     (1000)                                   */
	hr_log_level log_level;   /* most verbose level passed (INFO)         */
	hr_log_fn log;            /* NULL: lines go to stderr                 */
	void *log_userdata;
	/* Called on the thread of hr_rebalancer_run as each of its steps ends
	 * well: HR_REBALANCE_STEP_WAIT (each wait), _COPY, _PROMOTE, _PURGE,
	 * with the figures then (NULL: not called). */
	void (*on_step)(void *userdata, hr_rebalance_step step,
			const hr_rebalance_progress *progress);
	void *on_step_userdata;
} hr_rebalance_config;

HR_EXPORT void hr_rebalance_config_init_size(hr_rebalance_config *cfg,
					     size_t size);
#define hr_rebalance_config_init(cfg) \
	hr_rebalance_config_init_size((cfg), sizeof *(cfg))

typedef struct hr_rebalancer hr_rebalancer;

/*
 * Creates a rebalancer over `backend` (a copy of the struct is kept; on
 * success the rebalancer owns backend->userdata and calls backend->close
 * when freed; on failure the caller still owns it) with `cfg` (NULL: the
 * defaults).  Errors: HR_EINVAL (NULL backend or out; a backend whose size
 * is bad or that lacks enumerate, fetch or add, naming it; a bad config),
 * HR_ENOMEM.  Free it with hr_rebalancer_free().
 */
HR_EXPORT int hr_rebalancer_new(const hr_rebalance_backend *backend,
				const hr_rebalance_config *cfg,
				hr_rebalancer **out, hr_error *err);

/* Frees the rebalancer and closes its backend.  No step may be running.
 * Accepts NULL. */
HR_EXPORT void hr_rebalancer_free(hr_rebalancer *rb);

/*
 * The whole handoff for the ring `client` serves, on the calling thread:
 *   1. wait until every live client under cfg.ack_prefix reports the
 *      newest change of the records (hr_acks_wait), and at least
 *      cfg.min_clients of them (by default 1) are live;
 *   2. copy (hr_rebalancer_copy) for every warming and draining node, or
 *      for node `node_id` alone (NULL: all);
 *   3. with HR_REBALANCE_PROMOTE, only if the client's ring is still the
 *      one copied: switch the warming nodes (or `node_id`) to active
 *      (hr_node_update), wait until the client's ring has them active and
 *      every client acknowledges it (a draining node is left to whoever
 *      registered it: its record goes when it stops);
 *   4. with HR_REBALANCE_PURGE, purge (hr_rebalancer_purge) that ring.
 * `etcd` is the connection of the waits and the promotion (its prefix
 * that of the client's records).  Nothing to hand off (no warming or
 * draining node) is success, with nothing copied.  So is a copy that
 * skipped keys the backend cannot move (progress.skipped says how many;
 * the run still promotes and purges): those keys stay on their read
 * owners and are misses at their new owners, as after an eviction.
 *
 * Errors: HR_EINVAL (NULL client or etcd; bad settings; another call of
 * this rebalancer running); HR_EEMPTY (the client has no ring yet);
 * HR_ENOTFOUND (`node_id` not in the ring) and HR_EINVAL (the node is
 * active), naming it; HR_ETIMEDOUT (a wait: the message names the clients
 * behind, or how many live clients acknowledge against min_clients),
 * HR_ECONFLICT (clients at one revision with different rings, or the ring
 * changed during the copy: run again to copy its new arcs), HR_ECLOSED
 * (cancelled), the backend's errors, and those of hr_acks_wait() and
 * hr_node_update().
 *
 * One step at a time per rebalancer; hr_rebalancer_progress() and
 * hr_rebalancer_cancel() from any thread meanwhile.
 */
HR_EXPORT int hr_rebalancer_run(hr_rebalancer *rb, hr_client *client,
				const hr_etcd_config *etcd,
				const char *node_id, hr_error *err);

/*
 * The copy alone (docs/handoff.md section 2, step 3) on `ring`, which
 * every client must already acknowledge: for each source node (the read
 * owner of a moving arc), lists its keys, keeps those whose read owner is
 * the source and whose write owner another node (with `node_id`: the
 * write owner is that warming node, or the source is that draining node),
 * then fetches each and adds it at its write owner at the config's caps.
 * A key present there is left (counted `present`), a key gone since the
 * listing is counted `gone`; after each add the source is looked at again,
 * and a key deleted there meanwhile is taken back by CAS (`taken_back`).
 * A key the backend cannot move is skipped (`skipped`, see
 * hr_rebalance_backend).  Errors as hr_rebalancer_run(), without the waits.
 */
HR_EXPORT int hr_rebalancer_copy(hr_rebalancer *rb, const hr_ring *ring,
				 const char *node_id, hr_error *err);

/*
 * The purge alone (docs/handoff.md section 4): deletes from every node of
 * `ring` each key whose write and read owners are both other nodes, only
 * if its CAS is still the one listed.  Run it once every client
 * acknowledges `ring`.  HR_EINVAL if the backend has no remove; errors
 * otherwise as hr_rebalancer_copy().
 */
HR_EXPORT int hr_rebalancer_purge(hr_rebalancer *rb, const hr_ring *ring,
				  hr_error *err);

/* Asks the running step (or the next one) to stop: it returns HR_ECLOSED
 * soon (within one backend call, or 100 ms of a wait).  Thread safe and
 * async-signal safe; a rebalancer cancelled stays so (every later step
 * fails at once). */
HR_EXPORT void hr_rebalancer_cancel(hr_rebalancer *rb);

/* Copies the figures into `*out` (at most `size` bytes of it: pass
 * sizeof, which the macro does; zeros beyond the fields this library
 * has).  HR_EINVAL for NULL or a size below that of the first 1.1 struct
 * (up to `promoted`).  Thread safe: any thread, at any time, while a step
 * runs; takes a lock the step holds for a few counters at a time. */
HR_EXPORT int hr_rebalancer_progress_size(hr_rebalancer *rb,
					  hr_rebalance_progress *out,
					  size_t size);
#define hr_rebalancer_progress(rb, out) \
	hr_rebalancer_progress_size((rb), (out), sizeof *(out))

/*
 * The rebalancer's families (docs/metrics.md), for a process that runs
 * one beside its client (add them to the client's exposition: the same
 * options, without build_info):
 *
 *   hashring_rebalance_keys_total{node,result}  counter  keys, by source
 *       node and result: scanned, moving, copied, present, gone,
 *       taken_back, skipped, purged, purge_changed; over the
 *       rebalancer's life
 *   hashring_rebalance_bytes_total{node}        counter  value bytes copied
 *   hashring_rebalance_step{step}               gauge    1 for the step
 *       (hr_rebalance_step_name) the rebalancer is in, 0 for the others
 *   hashring_rebalance_keys_per_second          gauge    the current rate
 *   hashring_rebalance_eta_seconds              gauge    -1: unknown
 *   hashring_rebalance_runs_total{result}       counter  steps ended: ok,
 *       failed
 *
 * Same options, errors and output rules as hr_client_metrics_write (NULL
 * rb or write_fn: HR_EINVAL).  Thread safe, while a step runs.
 */
HR_EXPORT int hr_rebalancer_metrics_write(hr_rebalancer *rb,
					  hr_metrics_write_fn write_fn,
					  void *userdata,
					  const hr_metrics_options *opts,
					  hr_error *err);

#ifdef __cplusplus
}
#endif

#endif /* HASHRING_H */
