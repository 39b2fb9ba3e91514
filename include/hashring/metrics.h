/* SPDX-License-Identifier: MIT */
/*
 * hashring/metrics.h - the Prometheus text exposition of rings and clients.
 */
#ifndef HASHRING_METRICS_H
#define HASHRING_METRICS_H

#include "hashring/client.h"
#include "hashring/common.h"
#include "hashring/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 *                                       "read", 0 to 1 (hr_ring_node_shares)
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
/* (2.0) Leaves out what hr_ring_metrics_write() writes of a ring
 * (hashring_build_info, the hashring_ring_* families and, unless
 * HR_METRICS_OMIT_NODES, the hashring_node_* families):
 * hr_client_metrics_write() then writes the client's families alone.  A
 * server can so write a ring's part, O(points), once per ring with
 * hr_ring_metrics_write() and the client's per scrape with this flag:
 * the two, one after the other, are one valid exposition with each
 * family once.  hr_ring_metrics_write() with it writes nothing. */
#define HR_METRICS_OMIT_RING 0x8u

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
 * returned nonzero: the message gives its value), HR_ECLOSED (in a child
 * of fork(), as hr_client_status_get(): nothing written).  On an error after
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

/*
 * (1.2) Families of one's own, written the way the library writes its
 * own, for programs and libraries built on hashring
 * (libhashring-rebalance writes its families with it).
 *
 * hr_metrics_writer_new() checks `opts` (NULL: the defaults) as
 * hr_client_metrics_write() does (HR_EINVAL, naming the field; HR_ENOMEM)
 * and makes a writer that hands the exposition to `write_fn` with
 * `userdata`, in pieces of at most 8192 bytes.  `opts`' strings and
 * labels, and `err` (may be NULL), must outlive the writer: the first
 * failure of the calls below fills `err`, and makes the rest write
 * nothing.
 *
 * hr_metrics_writer_family() starts a family: `name` (after the options'
 * name prefix) of [a-zA-Z_][a-zA-Z0-9_]* and at most 128 bytes, `type`
 * "counter", "gauge", "summary", "histogram" or "untyped", `help` its
 * HELP text.  hr_metrics_writer_u64() and hr_metrics_writer_double()
 * write a sample of the family started last: the constant labels of
 * `opts`, then `n` labels of its own (named as constant labels are; any
 * value), then the value as the library writes counts and other numbers
 * (see above).  HR_EINVAL for a NULL or bad argument.
 *
 * hr_metrics_writer_free() writes what is buffered, frees the writer and
 * returns 0, or the first failure: HR_EINVAL, or HR_EIO when `write_fn`
 * returned nonzero (the exposition is then cut short).  Accepts NULL
 * (returns 0).  A writer is used by one thread at a time.
 */
typedef struct hr_metrics_writer hr_metrics_writer;

HR_EXPORT int hr_metrics_writer_new(hr_metrics_write_fn write_fn,
				    void *userdata,
				    const hr_metrics_options *opts,
				    hr_metrics_writer **out, hr_error *err);
HR_EXPORT void hr_metrics_writer_family(hr_metrics_writer *w, const char *name,
					const char *type, const char *help);
HR_EXPORT void hr_metrics_writer_u64(hr_metrics_writer *w,
				     const hr_metrics_label *labels, size_t n,
				     uint64_t value);
HR_EXPORT void hr_metrics_writer_double(hr_metrics_writer *w,
					const hr_metrics_label *labels,
					size_t n, double value);
HR_EXPORT int hr_metrics_writer_free(hr_metrics_writer *w);

#ifdef __cplusplus
}
#endif

#endif /* HASHRING_METRICS_H */
