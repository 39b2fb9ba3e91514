/*
 * copy.h - the handoff's copy (docs/handoff.md sections 2 and 5): the keys
 * of the arcs whose write owner differs from their read owner, copied from
 * the read owner's memcached to the write owner's without overwriting.
 *
 * It uses the public API only: a key moves exactly when hr_ring_lookup()
 * gives it a write owner other than its read owner, which follows the
 * ring's own placement; the ring diff between the ring and its promoted
 * self (warming nodes active, draining ones gone) says which nodes are
 * sources and what share of their keys should move.  Node addresses are
 * memcached "host:port".  Blocking; one thread.
 */
#ifndef HR_REBALANCE_COPY_H
#define HR_REBALANCE_COPY_H

#include <signal.h>
#include <stdint.h>

#include "hashring.h"
#include "rate.h"

/* What a copy did.  `copied` + `present` + `gone` == `moving` once a copy
 * ran to its end. */
typedef struct rb_copy_stats {
	uint64_t scanned;      /* items the sources' metadumps listed          */
	uint64_t moving;       /* of those, keys whose owners differ           */
	uint64_t copied;       /* stored at their write owner                  */
	uint64_t present;      /* skipped: the write owner had the key already */
	uint64_t gone;         /* no longer at the source, or expiring at once */
	uint64_t taken_back;   /* copied, then deleted again: the key had gone
				  from the source meanwhile (a client's delete) */
	uint64_t bytes;        /* value bytes stored                           */
	double expected_moving; /* the diff's share of the sources' keys times
				   what they listed: `moving` should be close */
} rb_copy_stats;

/* How a copy runs.  Zero it, then set what you need. */
typedef struct rb_copy_options {
	int timeout_ms;   /* each memcached read and write; 0: 2000          */
	/* The cap, shared by every source of one run; NULL: none.  Time is
	 * CLOCK_MONOTONIC in nanoseconds. */
	rb_rate *rate;
	/* Called after every 1000 keys scanned or copied and at the end, with
	 * the counts so far (may be NULL). */
	void (*progress)(void *userdata, const rb_copy_stats *stats);
	void *progress_userdata;
	/* A signal handler's flag: once set, the copy stops at the next key
	 * and returns HR_ECLOSED (NULL: never). */
	const volatile sig_atomic_t *stop;
} rb_copy_options;

/*
 * Copies, from `source` (a node of `ring`, in its read view), every key
 * whose read owner is `source` and whose write owner is another node, to
 * that owner: the source's metadump is read first, twice (a dump is no
 * snapshot, and may miss an item memcached moves between its LRU queues
 * meanwhile; only the moving keys are kept, once each), then each key is fetched, stored with add semantics and the
 * source's flags and remaining TTL, and checked again at the source (a key
 * gone meanwhile is deleted from the destination if the copy is still
 * there, by CAS).  Adds to *stats (zero it first).  `opts` may be NULL.
 * Errors: HR_EINVAL (a node not of the ring), the errors of memcache.h
 * naming the server, HR_ECLOSED when stopped.
 */
int rb_copy_node(const hr_ring *ring, const hr_node *source,
		 const rb_copy_options *opts, rb_copy_stats *stats, hr_error *err);

/*
 * rb_copy_node() for every source of the ring's handoff: the nodes that
 * own, in the read view, an arc the write view gives to another node.
 * `ring_opts` are the options the ring was built with (NULL: defaults),
 * for the promoted ring; `stats->expected_moving` is filled from the
 * diff.  0 at once when the views agree (nothing moves).
 */
int rb_copy_ring(const hr_ring *ring, const hr_ring_options *ring_opts,
		 const rb_copy_options *opts, rb_copy_stats *stats, hr_error *err);

#endif
