/* SPDX-License-Identifier: MIT */
/*
 * hashring/registrar.h - writing the membership: registering a node under
 * a lease (the registrar), and changing a node's record in place.
 */
#ifndef HASHRING_REGISTRAR_H
#define HASHRING_REGISTRAR_H

#include "hashring/common.h"
#include "hashring/etcd.h"
#include "hashring/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 *
 * fork(): the node stays the parent's, renewed by the parent's thread,
 * which is not in the child.  In a child of fork(), hr_registrar_status(),
 * hr_registrar_update() and hr_registrar_deregister() return HR_ECLOSED,
 * the message naming fork(), and hr_registrar_lease() returns 0;
 * hr_registrar_close() returns at once and neither revokes the lease nor
 * removes the record, so a child that exits never takes its parent's node
 * with it.  What the renewal thread holds (the etcd connection) stays
 * allocated in the child, by design.  A child that is a node of its own
 * opens a registrar of its own (docs/embedding.md, "fork()").
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
	/* (2.0) While etcd cannot be reached (HR_ECONNECT, HR_ETIMEDOUT: it
	 * starts with this process, or restarts), hr_registrar_open() tries
	 * again for up to open_timeout_ms (default 10000, as a client's
	 * open; 0: one attempt), waiting backoff_initial_ms (default 100),
	 * then twice as long each time up to 5 s, with a warn line
	 * (event=etcd_retry) per attempt.  Once etcd answers, the lease is
	 * renewed and retried by the registrar's own thread. */
	int open_timeout_ms;
	int backoff_initial_ms;
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
 * HR_ENOMEM; the last two once open_timeout_ms has passed without an
 * answer from etcd (the message says for how long and how often it was
 * tried).  Neither struct is kept: strings are copied.  With `replace`
 * the record is taken over whoever holds it; that registrar loses the id
 * (see above).
 */
HR_EXPORT int hr_registrar_open(const hr_etcd_config *etcd,
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
 * the heirs' records as well.  Thread safe.  Errors as for hr_registrar_open
 * (HR_EINVAL, HR_ELIMIT: the new record would be refused by the clients;
 * nothing is written), HR_ENOTFOUND (the key was deleted; the renewal puts
 * it back), HR_EEXIST once the id was taken over (the message of
 * hr_registrar_status), HR_ECLOSED after deregistration and in a child
 * of fork(); with
 * HR_UPDATE_HEIRS, HR_ECONFLICT when the records under the prefix kept
 * changing for 30 s (each change is retried after a random wait, the
 * lease renewed meanwhile).
 */
HR_EXPORT int hr_registrar_update(hr_registrar *r, const hr_record_update *upd,
				  hr_error *err);

/* The lease the record is attached to now (it changes if the lease is
 * lost and granted again); 0 after deregistration, once the id was taken
 * over, and in a child of fork().  Thread safe. */
HR_EXPORT int64_t hr_registrar_lease(hr_registrar *r);

/*
 * Whether the registrar still holds its registration: 0 while it does,
 * also while it retries through an etcd outage (a lease that expired
 * meanwhile is granted again); HR_EEXIST once another process took the id
 * over (for good: the message names the id and the holder's lease);
 * HR_ECLOSED after hr_registrar_deregister() (a registrar that lost its id
 * keeps answering HR_EEXIST); HR_ECLOSED in a child of fork(), whatever
 * the parent's state.  HR_EINVAL for NULL.  Never blocks; thread
 * safe.  A sidecar polls it to exit when it is replaced.
 */
HR_EXPORT int hr_registrar_status(hr_registrar *r, hr_error *err);

/* Revokes our lease and stops renewing.  While we hold the id the record
 * disappears from etcd at once and every client drops the node; after a
 * loss only our own lease is revoked, and the record, now attached to its
 * holder's lease, stays.  Thread safe; a second call returns 0.  In a
 * child of fork(): HR_ECLOSED, nothing revoked (the lease is the
 * parent's). */
HR_EXPORT int hr_registrar_deregister(hr_registrar *r, hr_error *err);

/* Deregisters (if not done yet: the same rules), stops the thread and
 * frees.  Accepts NULL.  In a child of fork() it only frees what the
 * child can, at once: the parent's node stays registered. */
HR_EXPORT void hr_registrar_close(hr_registrar *r);

/*
 * Changes the record of node `id`, registered under etcd->prefix by
 * whatever process, as `upd` says, in place: the record's other fields
 * and its lease are kept.  The new record is checked as hr_registrar_open()
 * checks a node, with etcd->ring: one the clients would refuse is not
 * written.  With HR_UPDATE_HEIRS (an operator's hand-over for a node
 * that leaves) the heirs' records are written in the same transaction.
 * Errors: HR_ENOTFOUND (no such node), HR_EPARSE (its record is not
 * valid), HR_EINVAL and HR_ELIMIT (as for hr_registrar_open, and those of
 * HR_UPDATE_HEIRS), HR_ECONFLICT (HR_UPDATE_HEIRS: the records kept
 * changing for 30 s), and the connection errors of hr_registrar_open.
 * Thread safe.
 */
HR_EXPORT int hr_node_update(const hr_etcd_config *etcd, const char *id,
			     const hr_record_update *upd, hr_error *err);

#ifdef __cplusplus
}
#endif

#endif /* HASHRING_REGISTRAR_H */
