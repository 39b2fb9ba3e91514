/*
 * purge.h - the handoff's optional last step (docs/handoff.md section 4):
 * deleting from a node the keys it no longer owns in either view of the
 * ring, each only if its CAS is still the one the enumeration gave.
 * Run it only once every client acknowledges the ring.  Blocking; one
 * thread.
 */
#ifndef HR_REBALANCE_PURGE_H
#define HR_REBALANCE_PURGE_H

#include <stdint.h>

#include "copy.h"
#include "hashring.h"

typedef struct rb_purge_stats {
	uint64_t scanned;  /* items the node's metadump listed              */
	uint64_t stale;    /* of those, keys another node owns in both views */
	uint64_t deleted;  /* stale keys deleted                             */
	uint64_t changed;  /* stale keys left: gone or rewritten since       */
} rb_purge_stats;

/*
 * Deletes from `node` (a node of `ring`) every key whose write and read
 * owners are both other nodes.  The options are those of a copy (the
 * timeout, the key cap, the stop flag; no progress calls).  Adds to
 * *stats.  Errors as rb_copy_node().
 */
int rb_purge_node(const hr_ring *ring, const hr_node *node,
		  const rb_copy_options *opts, rb_purge_stats *stats, hr_error *err);

#endif
