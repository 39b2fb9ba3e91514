/* SPDX-License-Identifier: MIT */
/*
 * hashring/acks.h - acknowledged epochs: the ring every client reports
 * having, read from etcd, and the wait for a revision everywhere.
 */
#ifndef HASHRING_ACKS_H
#define HASHRING_ACKS_H

#include "hashring/common.h"
#include "hashring/etcd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
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
HR_EXPORT int hr_acks_new(const hr_etcd_config *etcd, const char *ack_prefix,
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
 * the other errors of hr_acks_new() at once.
 * `last` (may be NULL) gets the last list read, even on failure (NULL if
 * none could be read); free it with hr_acks_free().  Thread safe.
 */
HR_EXPORT int hr_acks_wait(const hr_etcd_config *etcd, const char *ack_prefix,
			   uint64_t revision, int timeout_ms, hr_acks **last,
			   hr_error *err);

#ifdef __cplusplus
}
#endif

#endif /* HASHRING_ACKS_H */
