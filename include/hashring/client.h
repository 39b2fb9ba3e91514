/* SPDX-License-Identifier: MIT */
/*
 * hashring/client.h - a ring kept in sync with an etcd prefix: clients and
 * their settings, shared watchers (hr_share), lookups, counts, hot keys,
 * replicas, holding a client's ring, and its status.
 */
#ifndef HASHRING_CLIENT_H
#define HASHRING_CLIENT_H

#include "hashring/common.h"
#include "hashring/etcd.h"
#include "hashring/ring.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * (revision 0).  That first call comes while a blocking hr_client_open()
 * still waits (with a watcher of its own), before the open returns the
 * client; with open_nonblocking, or on joining a share whose watcher has a
 * ring, it may come after.  A ring is published when its digest differs from the
 * published ring's, and after a resync that found etcd's data replaced
 * (another cluster id, or its revision below the ring's) even with the same
 * digest: then the new ring's revision may be lower than the old one's.
 * Both rings are valid during the call only (retain to keep).  It may call
 * any client function except hr_client_close(), and, for a client that
 * shares its watcher, hr_client_open() or hr_client_close() of a client of
 * the same share. */
typedef void (*hr_ring_change_fn)(void *userdata, const hr_ring *old_ring,
				  const hr_ring *new_ring);

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
	 * hr_acks_new() and hr_acks_wait().  NULL (the default): no ack.
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
	 * sampled into its thread's sketch (a thread's lookups on a ring, at
	 * random gaps of 1 to twice this many, so that no periodic stream of
	 * keys aliases with them), a power of two up to 65536 (default 1024:
	 * a fraction of a nanosecond per lookup); 0: no sampling, no hot keys,
	 * no spreading.  A client with few lookups samples more often. */
	unsigned hot_key_sample;
	/* With hot_key_spread: a hot key's reads go to its first this many
	 * nodes of the read view's preference list (zone-distinct; see
	 * hr_ring_preflist), in turn per thread, 2..16 (default 3). */
	unsigned hot_key_replicas;
	/* Spreads the reads of hot keys, apart from placement
	 * (docs/embedding.md, "Spreading a hot key's reads"): a key whose
	 * estimated share of the client's lookups is at least this
	 * (0 < share <= 1; at most 16 keys, the most frequent) gets as read
	 * owner of hr_client_lookup() one of hot_key_replicas nodes in turn,
	 * its write owner staying.  Batch lookups and hr_ring_lookup() never
	 * spread.  The hot keys are re-chosen every 1024 samples of a thread
	 * and at each hr_client_hot_keys().  0 (the default): off. */
	double hot_key_spread;
	/* (1.1) NULL (the default): the client has a watcher of its own.  A
	 * share (hr_share_new): the client follows the watcher of the clients
	 * opened with the same share and equal settings, starting one if
	 * there is none (see "Sharing a watcher"). */
	hr_share *share;
	/* NULL (the default): the client follows etcd.  A directory:
	 * the client attaches to the host's agent there (`hashring agent`,
	 * hashring/host.h) instead: no watcher, no thread, no etcd
	 * connection; its ring is the snapshot the agent published last,
	 * mapped and looked up in place, and the lookup that first sees a
	 * newer one maps it (docs/agent.md).  hr_client_open() then takes a
	 * NULL etcd (or uses only its log settings) and waits up to
	 * open_timeout_ms for a first snapshot; HR_ENOTFOUND when no agent
	 * ever ran there.  Not with share, ack_client_id, on_change or
	 * on_diff (a reader has no thread to call or ack from: the agent
	 * does that): HR_EINVAL. */
	const char *agent_dir;
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
 * (hr_client_ring() of two such clients gives two pointers with the
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
 * any threads at once.  Accepts NULL.  A share made before fork() is of
 * no use in the child, where its watchers are not: hr_client_open() with
 * it returns HR_ECLOSED, and hr_share_free() returns leaving it (its
 * memory is left to the child, by design; see hr_client_open). */
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
 * fork(): a client's threads stay in the process that opened it.  In a
 * child of fork() the client's lookups (hr_client_lookup,
 * hr_client_lookup_batch, hr_client_replicas, hr_client_ring) answer
 * from the last ring published before the fork, which never changes
 * there, lock free as ever; rings held before the fork stay valid.  The
 * calls that need its threads or the locks they take -
 * hr_client_wait_synced(), hr_client_status_get(),
 * hr_client_lookup_counts(), hr_client_hot_keys() - return HR_ECLOSED,
 * the message naming fork(); hr_client_open() with a share made before
 * the fork too.  hr_client_close() in the child returns at once: it frees
 * the client's rings and leaves the parent's watcher, etcd connections
 * and ack lease alone (their memory stays, a leak by design: a lock held
 * at the fork is never released in the child).  The parent's client
 * carries on unchanged.  Open clients after fork(), in each process that
 * looks up (docs/embedding.md, "fork()").
 */

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
 * epochs").  HR_EINVAL for a NULL client or a negative timeout;
 * HR_ECLOSED in a child of fork() (see hr_client_open).  Thread safe.
 */
HR_EXPORT int hr_client_wait_synced(hr_client *client, int timeout_ms,
				    hr_error *err);

/*
 * Stops the watcher, waits for it, and frees every ring the client still
 * owns.  Rings acquired with hr_client_ring() stay valid until released;
 * the last ring another thread's lookups used is freed when that thread
 * exits or has since looked up four other clients.  A client that
 * acknowledges its rings revokes its ack lease first (see "Acknowledged
 * epochs").  Must not run concurrently with other calls on the same client
 * (callers stop their lookups first).  Accepts NULL.  In a child of
 * fork() it stops and joins nothing, revokes no lease and waits for no
 * lock: it frees what the child can and returns (see hr_client_open).
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
			       hr_owner *out, hr_error *err);

/*
 * hr_ring_lookup_batch() on the client's current ring, reached as
 * hr_client_lookup() reaches it, with the same guarantees and per-thread
 * references: all n answers come from that one ring, whose revision and
 * digest go to *epoch (may be NULL; filled unless the result is
 * HR_EINVAL).  The numbers in `out` name nodes of that ring.  To turn them
 * into ids and addresses, either hold the ring yourself
 * (hr_client_ring(), then hr_ring_lookup_batch() and hr_ring_node() on
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

/*
 * Lookup counts: every hr_client_lookup() and every key of an
 * hr_client_lookup_batch() that has owners adds one to its write owner's
 * `write` count and one to its read owner's `read` count (the same node when
 * no node warms or drains).  Preference lists and a thread that could not set
 * up its per-thread state (see hr_client_lookup) do not count.  The counts
 * are kept per thread, so a lookup writes no memory another thread writes,
 * and are summed when read.  A node's counts follow its id across rings: a
 * node that leaves keeps them, and one that comes back continues from them,
 * so each count only grows (a Prometheus counter).  They start at 0 when the
 * client opens.  Keeps its layout (an array of them is filled).
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
 * hr_client_close().  HR_ECLOSED in a child of fork(): a thread of the
 * parent's may have held the lock (see hr_client_open).  Memory: each thread that has looked up on the
 * client keeps its counts (24 bytes per node of its ring, and a reference
 * to that ring) and, unless hot_key_sample is 0, its hot-key sketch (26
 * KiB) until the client closes.  A spread read (hot_key_spread) is
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
 * The client's hot keys, most frequent first, into out[0..n): the keys that a
 * Space-Saving sketch over a sample of the client's lookups (one in
 * hot_key_sample of each thread's single lookups, batches not) finds most
 * frequent over the last 10 to 20 seconds, with their estimated rates and
 * shares, and their owners in the current ring.  Any key above 1/128 of a
 * thread's sampled lookups is found; with few samples (a window holds about
 * rate * 10 s / hot_key_sample of them) estimates of small shares are noisy.
 * `size` is sizeof *out (the macro passes it): fields beyond it are not
 * written.  Returns the number written (0 with hot_key_sample 0, or before
 * any sample), or HR_EINVAL (NULL client, out NULL with n > 0, size 0 or
 * below the first field's end), HR_ENOMEM.  The caller owns `out`.  Thread
 * safe, beside lookups, which never wait for it (a sample that finds its
 * thread's sketch being read is dropped); costs tens of microseconds per
 * thread that looked up, and allocates.  Not during or after
 * hr_client_close().  HR_ECLOSED in a child of fork(), as
 * hr_client_lookup_counts().
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
				 size_t r, uint64_t *revision, hr_error *err);

/*
 * The client's current ring: a counted reference, held as long as the
 * caller likes (across blocking calls, after hr_client_close()), dropped
 * with hr_ring_release().  Never NULL for an open client (an empty ring
 * at revision 0 before the first sync); NULL for a NULL client.  For
 * answers per request, hr_client_lookup() and hr_client_lookup_batch()
 * are faster (the thread's own reference); this is for holding one ring
 * through several calls (hr_ring_lookup_batch() then hr_ring_node(), a
 * preference list, a diff).  Thread safe; takes no lock, but costs an
 * atomic increment on the ring's count.
 */
HR_EXPORT hr_ring *hr_client_ring(hr_client *client);

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
 * sizeof *(out).  HR_EINVAL for a NULL argument or a size below the end
 * of the first field (revision), as for the structs a caller fills in;
 * HR_ECLOSED in a child of fork(), where the watcher is not (see
 * hr_client_open).  Thread safe.
 */
HR_EXPORT int hr_client_status_get_size(hr_client *client,
					hr_client_status *out, size_t size,
					hr_error *err);
#define hr_client_status_get(client, out, err) \
	hr_client_status_get_size((client), (out), sizeof *(out), (err))

#ifdef __cplusplus
}
#endif

#endif /* HASHRING_CLIENT_H */
