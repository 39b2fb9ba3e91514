/* SPDX-License-Identifier: MIT */
/*
 * hashring/rebalance.h - the handoff's copy between stores: the API of
 * libhashring-rebalance, a library of its own (pkg-config
 * hashring-rebalance, CMake hashring::rebalance) built on the public API
 * of libhashring.  hashring.h does not include it: a program that only
 * looks keys up links no memcached client.
 */
#ifndef HASHRING_REBALANCE_H
#define HASHRING_REBALANCE_H

#include "hashring/client.h"
#include "hashring/common.h"
#include "hashring/metrics.h"
#include "hashring/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * `fetch_batch` and `add_batch` (appended in 2.0; both or neither, NULL:
 * one key at a time) are fetch and add of `n` keys at once (keys[i],
 * lens[i]; n at most 64), for a store that takes pipelined commands: the
 * copy then costs a round trip a batch, not a key.  Each fills rcs[i]
 * with what the call of one key would return (out[i] or cas[i] filled
 * where it returns 1; a NULL `out` asks only whether the keys are there)
 * and returns 0; a negative return fails the whole batch (`err` filled,
 * rcs unset).  A key whose rcs[i] is negative is done again alone, by
 * fetch or add, whose `err` then says why.  The values of a fetch_batch
 * stay valid until the backend's next fetch or fetch_batch with a non-NULL
 * `out`.  The rate cap is kept per key as without them: a batch never
 * passes more than 1/20 s of either cap.
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
	/* Appended in 2.0 (a struct of the earlier size has neither). */
	int (*fetch_batch)(void *userdata, const char *addr, size_t n, const void *const *keys,
			   const size_t *lens, hr_rebalance_value *out, int *rcs, hr_error *err);
	int (*add_batch)(void *userdata, const char *addr, size_t n, const void *const *keys,
			 const size_t *lens, const hr_rebalance_value *values, uint64_t *cas,
			 int *rcs, hr_error *err);
} hr_rebalance_backend;

/* The most keys a fetch_batch or add_batch is given. */
#define HR_REBALANCE_BATCH_MAX 64

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

/*
 * The Redis backend's settings (hr_rebalance_redis).  Grows (see "Structs
 * that grow"); set it up with hr_rebalance_redis_config_init(), which
 * sets the defaults given.  Strings are copied by hr_rebalance_redis().
 */
typedef struct hr_rebalance_redis_config {
	size_t size;          /* sizeof, set by hr_rebalance_redis_config_init() */
	int timeout_ms;       /* each connect, read and write; 0: 2000 (2000) */
	int db;               /* the database of every node (SELECT); keys of
				 the others are never touched (0)             */
	const char *user;     /* AUTH user (Redis >= 6 ACLs); NULL: none, or
				 "default" with a password (NULL)             */
	const char *password; /* AUTH password; NULL: no AUTH (NULL)          */
	size_t scan_count;    /* SCAN's COUNT hint, keys a batch (1000)       */
} hr_rebalance_redis_config;

HR_EXPORT void hr_rebalance_redis_config_init_size(hr_rebalance_redis_config *cfg,
						   size_t size);
#define hr_rebalance_redis_config_init(cfg) \
	hr_rebalance_redis_config_init_size((cfg), sizeof *(cfg))

/*
 * Fills `*out` (set up with hr_rebalance_backend_init()) with the Redis
 * backend (Redis >= 5, or Valkey; through hiredis, without TLS: the
 * hiredis of Debian 12 has none), settings `cfg` (NULL: the defaults):
 *
 *   enumerate  SCAN with COUNT in database `db`: a full iteration lists
 *              every key present for the whole of it at least once (a key
 *              written during the pass may be missed: docs/handoff.md
 *              section 8), so one pass suffices (HR_REBALANCE_LISTED_ALL).
 *              No CAS (0).
 *   fetch      DUMP and PTTL, pipelined: the value in Redis's own
 *              serialisation (any type: strings, hashes, lists, sets,
 *              sorted sets, streams) with its remaining TTL.  A key gone
 *              or expired meanwhile (DUMP nil, PTTL -2) is absent (0).
 *              The value's flags are 0; ttl_s is the remaining time in
 *              whole seconds (0 within the last second: not copied), and
 *              the add that follows uses the milliseconds left then.
 *   add        RESTORE without REPLACE: a key the node already holds
 *              (BUSYKEY) is present (0), never overwritten.  Its *cas is
 *              the CRC-64 that ends a DUMP of the copy: the payload's for
 *              a string, the node's own for a collection (read in the
 *              same round trip: a hash table may serialise in another
 *              order once restored), which remove compares.
 *   remove     deletes the key only if it still has that payload (a
 *              script comparing DUMP's checksum; `cas` 0: whatever it is).
 *
 * It keeps one connection per node, made on first use (AUTH, SELECT) and
 * made again after an error: commands that fail on a broken connection
 * are sent again on a new one (each is idempotent) while the node comes
 * back (refuses connections, answers LOADING), for up to timeout_ms, so
 * that a node restarted meanwhile does not stop a copy; a node never
 * reached fails at once, and so does a SCAN whose connection broke (its
 * cursor means nothing to a restarted server).  Errors that stop the
 * step, with the server's message: HR_ECONNECT (unreachable), HR_EAUTH
 * (NOAUTH, WRONGPASS), HR_ETIMEDOUT, HR_EIO (the connection lost for
 * longer than the timeout, OOM at maxmemory, any other error reply).
 * HR_ELIMIT, a key skipped: a payload longer than the destination's
 * proto-max-bulk-len (read with CONFIG GET at connect; 512 MB when CONFIG
 * is refused), or one RESTORE refuses ("DUMP payload version or checksum
 * are wrong": a foreign RDB version; "Bad data format").  fetch_batch and
 * add_batch pipeline up to HR_REBALANCE_BATCH_MAX keys a round trip.  out->close
 * closes the connections and frees out->userdata (hr_rebalancer_free
 * calls it; call it yourself if no rebalancer took the backend).  Errors:
 * HR_EINVAL (NULL or uninitialised out, bad cfg size, timeout_ms < 0,
 * db < 0, a user without a password), HR_ENOMEM.  The password is never
 * logged nor put in an error message.
 */
HR_EXPORT int hr_rebalance_redis(const hr_rebalance_redis_config *cfg,
				 hr_rebalance_backend *out, hr_error *err);

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
					  size_t size, hr_error *err);
#define hr_rebalancer_progress(rb, out, err) \
	hr_rebalancer_progress_size((rb), (out), sizeof *(out), (err))

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

#endif /* HASHRING_REBALANCE_H */
