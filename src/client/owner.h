/* SPDX-License-Identifier: MIT */
/* owner.h - the client's copy-out answers from one ring: a lookup's owners
 * (hr_owner) and a preference list (hr_replica) (internal). */
#ifndef HR_OWNER_H
#define HR_OWNER_H

#include "hashring.h"

struct hr__count_seg;

/* The most replicas hr_client_replicas() copies out (hashring.h). */
#define HR__REPLICAS_MAX 64

/* hr_client_lookup()'s copy-out on one ring: hashes `key`, finds both
 * owners and copies them into `out` (revision and digest always; the
 * strings unless the result is HR_EEMPTY), failures also in `err` (may be
 * NULL).  Never allocates. */
int hr__ring_lookup_owner(const hr_ring *ring, const void *key, size_t len,
			  hr_owner *out, hr_error *err);

/* hr__ring_lookup_owner() that also counts the answer's owners in `cnt`,
 * the calling thread's segment on `ring` (counters.h; NULL: not
 * counted), samples the key for the hot keys and, when the client spreads
 * reads and the key is hot, answers one of its replicas as read owner. */
int hr__ring_lookup_owner_counted(const hr_ring *ring, const void *key,
				  size_t len, hr_owner *out,
				  struct hr__count_seg *cnt, hr_error *err);

/* hr__ring_lookup_owner_counted() for arguments already checked: `ring`
 * and `out` not NULL, `key` not NULL unless `len` is 0 (hr_client_lookup's
 * hit in the thread cache). */
int hr__ring_lookup_owner_hit(const hr_ring *ring, const void *key,
			      size_t len, hr_owner *out,
			      struct hr__count_seg *cnt, hr_error *err);

/* The owners of ring position `pos` in the write and the read view (NULL:
 * empty view); HR_EEMPTY when both are. */
int hr__ring_owners_pos(const hr_ring *ring, uint64_t pos, const hr_node **wn,
			const hr_node **rn);

/* hr_client_replicas()'s copy-out on one ring: the preference list of
 * `key` in `view` (a valid view) copied into out[0..k), r at most
 * HR__REPLICAS_MAX; returns k, or HR_EINVAL.  `*revision` (may be NULL)
 * gets the ring's revision.  Never allocates. */
int hr__ring_replicas(const hr_ring *ring, const void *key, size_t len,
		      hr_view view, hr_replica *out, size_t r,
		      uint64_t *revision);

#endif
