/* SPDX-License-Identifier: MIT */
/*
 * etcd_fixture.h - a real etcd on loopback for the integration tests.
 *
 * hrt_etcd_start() runs one or more /usr/bin/etcd processes on free
 * 127.0.0.1 ports, each with its own data directory and log file under one
 * temporary directory, and returns once every member answers GET /health.
 * The helpers then stop, kill, freeze, restart or wipe members so tests can
 * play the failures the library must survive, and run etcdctl against the
 * cluster to set up or inspect what etcd holds.
 *
 * Rules the fixture keeps:
 *   - Only 127.0.0.1 is ever used, for client and peer URLs alike.
 *   - Every wait is bounded; nothing blocks forever on a hung etcd.
 *   - etcd never outlives the test: each member is killed by PID in
 *     hrt_etcd_destroy(), and each is started with PR_SET_PDEATHSIG so a
 *     crashed test takes its etcd down with it.  The death signal fires when
 *     the *thread* that forked etcd exits, so start and restart members from
 *     a thread that lives as long as the cluster (normally the test's own).
 *   - Functions that can fail return 0 or -1 and print the reason (with the
 *     tail of the member's log when etcd itself failed) on stderr, so a
 *     failing test explains itself in the ctest output.
 *
 * Set HRT_KEEP_ETCD_DIR=1 in the environment to keep the temporary
 * directory (data and logs) after hrt_etcd_destroy(), for post-mortems.
 * A test that fails between start and destroy (Check ends a failing test
 * by exiting its process) keeps its directory too, named hrt-etcd-*
 * under $TMPDIR or /tmp, though its etcd dies with it.
 *
 * A cluster object is not thread-safe: drive it from one thread.  The
 * library under test may of course talk to the members from any thread.
 */
#ifndef HRT_ETCD_FIXTURE_H
#define HRT_ETCD_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Most members a cluster may have. */
#define HRT_ETCD_MAX_MEMBERS 5

/* Most extra arguments hrt_etcd_opts.extra_args may carry. */
#define HRT_ETCD_MAX_EXTRA_ARGS 16

/*
 * Start options.  Zero-initialise and set what you need; every zero or
 * NULL field means "the fixture's default", written next to the field.
 * The fixture copies what it keeps, so the strings need not outlive the
 * call to hrt_etcd_start().
 */
typedef struct hrt_etcd_opts {
	/* Server TLS.  When both are set the client URLs are https://.
	 * Peer traffic stays plain http on loopback. */
	const char *cert_file;
	const char *key_file;
	/* CA: etcd's --trusted-ca-file, and the CA the fixture's own health
	 * probe and etcdctl trust. */
	const char *ca_file;
	/* etcd's --client-cert-auth: clients must present a certificate. */
	bool client_cert_auth;
	/* The certificate the fixture's health probe and etcdctl present. */
	const char *client_cert_file;
	const char *client_key_file;

	/* --experimental-watch-progress-notify-interval in ms; 0: etcd's
	 * default (10 minutes).  etcd's minimum is 100 ms. */
	unsigned progress_notify_ms;
	/* --snapshot-count; 0: etcd's default (100000). */
	unsigned snapshot_count;
	/* --auto-compaction-retention, e.g. "5s" or "10" with mode
	 * "revision"; NULL: auto-compaction off (revisions are only ever
	 * compacted by the test). */
	const char *auto_compaction_retention;
	const char *auto_compaction_mode;	/* NULL: "periodic" */

	/* Raft timing in ms; 0: 50 ms heartbeat and 500 ms election timeout,
	 * which start a member in about half a second and still tolerate a
	 * busy two-core machine. */
	unsigned heartbeat_ms;
	unsigned election_ms;

	/* How long hrt_etcd_start() and the restarts wait for health;
	 * 0: 30000 ms. */
	unsigned start_timeout_ms;

	/* NULL-terminated extra etcd arguments, appended verbatim to every
	 * member's command line (at most HRT_ETCD_MAX_EXTRA_ARGS). */
	const char *const *extra_args;

	/* etcd and etcdctl binaries; NULL: /usr/bin/etcd, /usr/bin/etcdctl. */
	const char *etcd_bin;
	const char *etcdctl_bin;
} hrt_etcd_opts;

typedef struct hrt_etcd_cluster hrt_etcd_cluster;

/*
 * Starts a new cluster of `members` (1..HRT_ETCD_MAX_MEMBERS; use 1 or 3)
 * and waits until every member is healthy.  `opts` may be NULL.  Ports are
 * chosen free by the kernel; if etcd still loses a port to a race the whole
 * start is retried on new ports.  Returns NULL on failure.
 */
hrt_etcd_cluster *hrt_etcd_start(int members, const hrt_etcd_opts *opts);

/* Stops every member (SIGKILL, by PID), reaps them and removes the
 * temporary directory.  Accepts NULL. */
void hrt_etcd_destroy(hrt_etcd_cluster *c);

/* ---- accessors (i is the member index, 0-based) -------------------- */

int hrt_etcd_size(const hrt_etcd_cluster *c);
/* "http://127.0.0.1:PORT" (https with TLS) of member i. */
const char *hrt_etcd_client_url(const hrt_etcd_cluster *c, int i);
/* The client port of member i. */
int hrt_etcd_client_port(const hrt_etcd_cluster *c, int i);
/* Every member's client URL, comma-joined, as --endpoints wants them. */
const char *hrt_etcd_endpoints(const hrt_etcd_cluster *c);
/* The cluster's temporary directory (one sub-directory per member). */
const char *hrt_etcd_dir(const hrt_etcd_cluster *c);
/* Member i's --data-dir and its log file (etcd's stdout and stderr). */
const char *hrt_etcd_data_dir(const hrt_etcd_cluster *c, int i);
const char *hrt_etcd_log_path(const hrt_etcd_cluster *c, int i);
/* PID of member i, or 0 when it is not running. */
pid_t hrt_etcd_pid(const hrt_etcd_cluster *c, int i);

/* ---- failures and recovery ----------------------------------------- */

/* SIGTERM, then SIGKILL if it is still running 5 s later; reaps it.
 * A frozen member is thawed so it can act on the SIGTERM. */
int hrt_etcd_stop_member(hrt_etcd_cluster *c, int i);
/* SIGKILL and reap: a crash, with no goodbye to clients or peers. */
int hrt_etcd_kill_member(hrt_etcd_cluster *c, int i);
/* Starts a stopped member again on the same ports and data directory
 * (stopping it first if it still runs) and waits until it is healthy.
 * A member that can only be healthy with others (no quorum) needs
 * hrt_etcd_spawn_member() plus hrt_etcd_wait_healthy() instead. */
int hrt_etcd_restart_member(hrt_etcd_cluster *c, int i);
/* Starts a stopped member without waiting for it. */
int hrt_etcd_spawn_member(hrt_etcd_cluster *c, int i);
/* SIGSTOP: the member keeps its sockets but answers nothing, like a
 * hung host.  SIGCONT undoes it. */
int hrt_etcd_freeze_member(hrt_etcd_cluster *c, int i);
int hrt_etcd_thaw_member(hrt_etcd_cluster *c, int i);
/* Kills every member, empties the data directories and starts a brand
 * new cluster (new cluster id, revision 1, no leases) on the same ports,
 * as after a restore from nothing.  Waits until it is healthy. */
int hrt_etcd_wipe_and_restart(hrt_etcd_cluster *c);
/* The same, keeping the cluster's configuration and so its cluster id, as
 * when an operator empties a data dir and starts etcd again as before:
 * only the revisions, starting again at 1, show that the data is new. */
int hrt_etcd_wipe_and_restart_same_id(hrt_etcd_cluster *c);

/* True when member i answers GET /health with {"health":"true"}
 * within one second. */
bool hrt_etcd_member_healthy(const hrt_etcd_cluster *c, int i);
/* Polls member i's health until it is healthy or `timeout_ms` passed. */
int hrt_etcd_wait_healthy(const hrt_etcd_cluster *c, int i,
			  unsigned timeout_ms);
/*
 * Waits until every running member is healthy.  After killing a leader,
 * call this before writing: until the survivors have elected a new
 * leader, etcd drops the proposals they forward and a put times out
 * after 5 s ("context deadline exceeded"), which is etcd's behaviour and
 * not something most tests want to see.  Health needs a leader and a
 * quorum round, so it turns true only once the cluster serves again.
 */
int hrt_etcd_wait_cluster_healthy(const hrt_etcd_cluster *c,
				  unsigned timeout_ms);

/* ---- etcdctl --------------------------------------------------------- */

/*
 * Runs etcdctl (API v3) against the whole cluster with the arguments in
 * `fmt`, split on blanks like a shell would: '...' is taken literally,
 * "..." honours \" and \\, and a backslash outside quotes escapes the next
 * character.  So
 *     hrt_etcdctl(c, out, sizeof(out), "put /ring/nodes/a '%s'", json)
 * works for any JSON without single quotes.  No shell is involved.
 *
 * The TLS files of the options are passed as --cacert/--cert/--key, and
 * no ETCDCTL_* variable of the test's environment leaks in.  stdout goes
 * to `out` (NUL-terminated, truncated to outlen - 1; `out` may be NULL),
 * stderr to the test's stderr.  etcdctl is killed after 20 s.
 *
 * Returns etcdctl's exit status (0 on success; 127 when the binary cannot
 * be executed), or -1 if it could not be started, was killed by a signal
 * or timed out.
 */
int hrt_etcdctl(const hrt_etcd_cluster *c, char *out, size_t outlen,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The same, with --endpoints naming member i only. */
int hrt_etcdctl_member(const hrt_etcd_cluster *c, int i, char *out,
		       size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* The same as hrt_etcdctl(), with `input` written to etcdctl's stdin,
 * for `etcdctl txn` which reads its compares and operations there.  Each
 * of txn's three sections (compares, success, failure) must end with an
 * empty line, the last one included, or etcdctl 3.4 fails with "EOF":
 *     "\nput a 1\nput b 2\n\n\n" is an unconditional two-put txn. */
int hrt_etcdctl_stdin(const hrt_etcd_cluster *c, const char *input,
		      char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* ---- small helpers for tests --------------------------------------- */

/* Removes `path` and everything under it (no symlink is followed).
 * Returns 0, or -1 if something could not be removed. */
int hrt_remove_tree(const char *path);

/* The state letter of process `pid` in /proc/PID/stat ('R', 'S', 'T' when
 * stopped, 'Z' a zombie...), or '?' when there is no such process. */
char hrt_proc_state(pid_t pid);

/* ---- raw HTTP ------------------------------------------------------ */

/*
 * POSTs `json_body` to `url` with Content-Type: application/json and a
 * 5 s timeout.  The body of the answer goes to `out` (NUL-terminated and
 * truncated; may be NULL) and its HTTP status to `*status` (may be NULL).
 * Returns 0 when an HTTP answer came back, whatever its status, and -1
 * when the transfer failed (connection refused, timeout...).
 */
int hrt_http_post(const char *url, const char *json_body, char *out,
		  size_t outlen, long *status);

#endif
