/* SPDX-License-Identifier: MIT */
/* test_fork.c - a client, a registrar and a share used in a child of
 * fork(), against a real etcd: the child's lookups answer from the last
 * ring, rings held before the fork still answer, the calls that need the
 * library's threads fail with HR_ECLOSED naming fork(), closing returns at
 * once, and a client opened in the child works; the parent goes on as if
 * nothing happened: its client follows etcd, its node stays registered on
 * its lease, its ack stays.
 *
 * The child reports through its exit status and stderr, never through
 * Check, whose fork mode speaks to the test's runner over a pipe. */
#include "etcd_fixture.h"
#include "hrt_ring.h"
#include "hrt_check.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Sanitizer builds (GCC's macros, Clang's feature tests).  Two of their
 * limits shape the tests: ThreadSanitizer ends a child of a threaded
 * process that starts a thread (its die_after_fork), and AddressSanitizer's
 * allocator (GCC 12's) takes no lock across fork(), so a child may wait
 * for ever in malloc() on a lock a parent thread held as it allocated. */
#if defined(__SANITIZE_THREAD__)
#define TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN_BUILD 1
#endif
#endif
#ifndef TSAN_BUILD
#define TSAN_BUILD 0
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif
#ifndef ASAN_BUILD
#define ASAN_BUILD 0
#endif

#define PREFIX "/ring/nodes/"
#define ACKS "/ring/acks/"
#define KEYS 200

static hrt_etcd_cluster *etcd;
static hrt_log logbuf;
static hr_etcd_config ecfg;

static void up(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hrt_log_init(&logbuf);
	hr_etcd_config_init(&ecfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &logbuf;
}

static void down(void)
{
	hrt_etcd_destroy(etcd);
	etcd = NULL;
	hrt_log_free(&logbuf);
}

/* A static record (no lease), each on a port of its own. */
static void put_node(const char *id)
{
	static int port = 7001;
	char key[128], value[256];

	snprintf(key, sizeof key, PREFIX "%s", id);
	snprintf(value, sizeof value,
		 "{\"addr\":\"127.0.0.1:%d\",\"weight\":1,\"zone\":\"z\",\"state\":\"active\"}",
		 port++);
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), key, value), 0);
}

/* The lease `key` is attached to (0: none), -1 if it is absent. */
static int64_t key_lease(const char *key)
{
	char out[4096];
	const char *p;

	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get %s -w json", key), 0);
	if (!strstr(out, "\"kvs\""))
		return -1;
	p = strstr(out, "\"lease\":");
	return p ? strtoll(p + 8, NULL, 10) : 0;
}

static void key_of(int i, char *buf, size_t len)
{
	snprintf(buf, len, "key-%d", i);
}

/* ---- a thread of the parent's that looks up through the fork ------------- */

/* Lookups, rings taken and dropped, counts read: whatever a parent thread
 * holds at the fork (a thread cache, a read section, the counters' lock)
 * must not stop the child. */
typedef struct busy {
	hr_client *c;
	atomic_int stop;
	atomic_long rounds;
	pthread_t thread;
} busy;

static void *busy_main(void *arg)
{
	busy *b = arg;

	while (!atomic_load(&b->stop)) {
		char key[32];
		hr_owner o;
		hr_node_lookups counts[8];

		for (int i = 0; i < KEYS; i++) {
			key_of(i, key, sizeof key);
			hr_client_lookup(b->c, key, strlen(key), &o, NULL);
		}
		hr_ring_release(hr_client_ring(b->c));
		/* It allocates: not under ASan (see the top). */
		if (!ASAN_BUILD)
			hr_client_lookup_counts(b->c, counts, 8, NULL, NULL);
		atomic_fetch_add(&b->rounds, 1);
	}
	return NULL;
}

/* ---- the child ----------------------------------------------------------- */

/* What the parent saw before the fork, in the child's copy of memory. */
typedef struct before {
	hr_client *c;          /* with acks */
	hr_client *shared;     /* a client of `share` */
	hr_share *share;
	hr_registrar *r;
	hr_ring *ring;         /* held by the parent across the fork */
	uint64_t revision;
	char owner[KEYS][HR_ID_MAX + 1];
} before;

static int failures;

#define CHILD_CHECK(cond)                                                    \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "test_fork: child: %s:%d: %s\n", __FILE__, \
				__LINE__, #cond);                            \
			failures++;                                          \
		}                                                            \
	} while (0)

/* A call that needs a thread the child does not have: HR_ECLOSED, and a
 * message that says fork() and what to do. */
static void child_check_forked(int rc, const hr_error *err, const char *call)
{
	CHILD_CHECK(rc == HR_ECLOSED);
	CHILD_CHECK(err->code == HR_ECLOSED);
	CHILD_CHECK(strstr(err->message, "fork()") != NULL);
	CHILD_CHECK(strstr(err->message, call) != NULL);
	if (rc != HR_ECLOSED || !strstr(err->message, "fork()"))
		fprintf(stderr, "test_fork: child: %s: %d %s\n", call, rc, err->message);
}

static void child_lookups(const before *b)
{
	const void *keys[KEYS];
	size_t lens[KEYS];
	char text[KEYS][32];
	hr_batch_owner batch[KEYS];
	hr_epoch epoch = { 0 };
	hr_replica reps[3];
	uint64_t rev = 0;
	hr_ring *ring;

	for (int i = 0; i < KEYS; i++) {
		hr_owner o;
		hr_lookup l;

		key_of(i, text[i], sizeof text[i]);
		keys[i] = text[i];
		lens[i] = strlen(text[i]);
		/* The client's last ring, and the ring held across the fork. */
		CHILD_CHECK(hr_client_lookup(b->c, keys[i], lens[i], &o, NULL) == 0);
		CHILD_CHECK(!strcmp(o.node, b->owner[i]));
		CHILD_CHECK(o.revision == b->revision);
		CHILD_CHECK(hr_ring_lookup(b->ring, keys[i], lens[i], &l, NULL) == 0);
		CHILD_CHECK(l.node && !strcmp(l.node->id, b->owner[i]));
		/* A client this thread never looked up: the slow path. */
		CHILD_CHECK(hr_client_lookup(b->shared, keys[i], lens[i], &o, NULL) == 0);
		CHILD_CHECK(!strcmp(o.node, b->owner[i]));
	}
	CHILD_CHECK(hr_client_lookup_batch(b->c, keys, lens, KEYS, batch, &epoch, NULL) == 0);
	CHILD_CHECK(epoch.revision == b->revision);
	for (int i = 0; i < KEYS; i++)
		CHILD_CHECK(!strcmp(hr_ring_node(b->ring, batch[i].node)->id, b->owner[i]));
	CHILD_CHECK(hr_client_replicas(b->c, "k", 1, HR_VIEW_WRITE, reps, 3, &rev, NULL) == 3);
	CHILD_CHECK(rev == b->revision);
	ring = hr_client_ring(b->c);
	CHILD_CHECK(ring != NULL && hr_ring_revision(ring) == b->revision);
	CHILD_CHECK(hr_ring_node_count(ring) == hr_ring_node_count(b->ring));
	hr_ring_release(ring);
}

/* Counts the bytes a metrics call wrote. */
static int count_bytes(void *userdata, const char *data, size_t len)
{
	(void)data;
	*(size_t *)userdata += len;
	return 0;
}

static void child_thread_calls(const before *b)
{
	hr_error err = { 0 };
	hr_client_status st;
	hr_node_lookups counts[8];
	hr_hot_key hot[4];
	hr_record_update upd;
	size_t written = 0;
	int rc;

	rc = hr_client_wait_synced(b->c, 0, &err);
	child_check_forked(rc, &err, "wait_synced");
	memset(&err, 0, sizeof err);
	rc = hr_client_status_get(b->c, &st, &err);
	child_check_forked(rc, &err, "status");
	memset(&err, 0, sizeof err);
	rc = hr_client_lookup_counts(b->c, counts, 8, NULL, &err);
	child_check_forked(rc, &err, "lookup_counts");
	memset(&err, 0, sizeof err);
	rc = hr_client_hot_keys(b->c, hot, 4, &err);
	child_check_forked(rc, &err, "hot_keys");
	memset(&err, 0, sizeof err);
	rc = hr_client_metrics_write(b->c, count_bytes, &written, NULL, &err);
	child_check_forked(rc, &err, "status");
	CHILD_CHECK(written == 0);
	/* A ring's metrics need no thread. */
	CHILD_CHECK(hr_ring_metrics_write(b->ring, count_bytes, &written, NULL, NULL) == 0);
	CHILD_CHECK(written > 0);

	memset(&err, 0, sizeof err);
	rc = hr_registrar_status(b->r, &err);
	child_check_forked(rc, &err, "hr_registrar_status");
	CHILD_CHECK(hr_registrar_lease(b->r) == 0);
	hr_record_update_init(&upd);
	upd.fields = HR_UPDATE_STATE;
	upd.state = HR_STATE_DRAINING;
	memset(&err, 0, sizeof err);
	rc = hr_registrar_update(b->r, &upd, &err);
	child_check_forked(rc, &err, "hr_registrar_update");
	/* Not the child's to remove: the parent's node stays. */
	memset(&err, 0, sizeof err);
	rc = hr_registrar_deregister(b->r, &err);
	child_check_forked(rc, &err, "hr_registrar_deregister");
}

/* The recommended pattern: a client of the child's own.  Its log goes to
 * stderr: the test's sink has a lock a parent thread may have held. */
static void child_opens_its_own(const before *b)
{
	hr_etcd_config e = ecfg;
	hr_client_config cfg;
	hr_client *mine = NULL;
	hr_error err = { 0 };
	hr_owner o;
	int rc;

	e.log = NULL;
	e.log_userdata = NULL;
	e.log_level = HR_LOG_ERROR;
	hr_client_config_init(&cfg);
	cfg.share = b->share;
	rc = hr_client_open(&e, &cfg, &mine, &err);
	child_check_forked(rc, &err, "hr_share_new()");
	CHILD_CHECK(mine == NULL);
#if TSAN_BUILD
	/* It would start a thread (see the top). */
	(void)o;
#else
	cfg.share = NULL;
	memset(&err, 0, sizeof err);
	rc = hr_client_open(&e, &cfg, &mine, &err);
	CHILD_CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "test_fork: child: open: %s\n", err.message);
		return;
	}
	CHILD_CHECK(hr_client_lookup(mine, "key-0", 5, &o, NULL) == 0);
	CHILD_CHECK(!strcmp(o.node, b->owner[0]));
	CHILD_CHECK(hr_client_wait_synced(mine, 0, NULL) == 0);
	hr_client_close(mine);
#endif
}

static int child_main(before *b)
{
	int64_t t0;

	child_lookups(b);
	child_thread_calls(b);
	t0 = hrt_now_ms();
	hr_client_close(b->c);
	hr_client_close(b->shared);
	hr_registrar_close(b->r);
	/* Nothing to wait for: generous bounds for a busy machine. */
	CHILD_CHECK(hrt_now_ms() - t0 < 2000);
	/* The ring held across the fork outlives the client. */
	CHILD_CHECK(hr_ring_node_count(b->ring) > 0);
	CHILD_CHECK(hr_ring_revision(b->ring) == b->revision);
	hr_ring_release(b->ring);
	child_opens_its_own(b);
	hr_share_free(b->share);
	return failures ? 1 : 0;
}

/* ---- the parent ------------------------------------------------------------- */

/* Waits up to `timeout_ms` for `pid`; its exit status, or -1 (killed). */
static int wait_child(pid_t pid, int timeout_ms)
{
	int64_t until = hrt_now_ms() + timeout_ms;
	int st;

	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		if (hrt_now_ms() > until) {
			fprintf(stderr, "test_fork: the child hangs: killed\n");
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		hrt_sleep_ms(10);
	}
}

START_TEST(child_uses_the_last_ring_and_leaves_the_parent_alone)
{
	hr_client_config cfg;
	hr_registration reg;
	hr_error err = { 0 };
	hr_client_status st;
	int64_t lease, ack_lease;
	before b = { 0 };
	busy bz = { 0 };
	pid_t pid;
	int rc;

	put_node("a");
	put_node("bb");
	put_node("ccc");
	hr_registration_init(&reg);
	reg.id = "self";
	reg.addr = "127.0.0.1:7000";
	reg.state = HR_STATE_ACTIVE;
	reg.ttl_s = 10;
	rc = hr_registrar_open(&ecfg, &reg, &b.r, &err);
	ck_assert_msg(rc == 0, "register: %s", err.message);
	lease = hr_registrar_lease(b.r);
	ck_assert_int_gt(lease, 0);

	hr_client_config_init(&cfg);
	cfg.ack_client_id = "parent";
	cfg.ack_prefix = ACKS;
	cfg.probe_interval_ms = 1000;
	rc = hr_client_open(&ecfg, &cfg, &b.c, &err);
	ck_assert_msg(rc == 0, "open: %s", err.message);
	ck_assert_int_eq(hrt_wait_nodes(b.c, 4, 10000), 0);
	ck_assert_int_eq(hr_share_new(&b.share, NULL), 0);
	hr_client_config_init(&cfg);
	cfg.share = b.share;
	rc = hr_client_open(&ecfg, &cfg, &b.shared, &err);
	ck_assert_msg(rc == 0, "open shared: %s", err.message);
	ck_assert_int_eq(hrt_wait_nodes(b.shared, 4, 10000), 0);

	b.ring = hr_client_ring(b.c);
	b.revision = hr_ring_revision(b.ring);
	ck_assert_uint_eq(hr_ring_node_count(b.ring), 4);
	for (int i = 0; i < KEYS; i++) {
		char key[32];
		hr_owner o;

		key_of(i, key, sizeof key);
		ck_assert_int_eq(hr_client_lookup(b.c, key, strlen(key), &o, NULL), 0);
		strcpy(b.owner[i], o.node);
	}
	ack_lease = key_lease(ACKS "parent");
	ck_assert_int_gt(ack_lease, 0);

	bz.c = b.c;
	ck_assert_int_eq(pthread_create(&bz.thread, NULL, busy_main, &bz), 0);
	while (atomic_load(&bz.rounds) < 3)
		hrt_sleep_ms(1);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child_main(&b));
	ck_assert_int_eq(wait_child(pid, 60000), 0);
	atomic_store(&bz.stop, 1);
	pthread_join(bz.thread, NULL);

	/* The parent's node and ack are where they were, on their leases. */
	ck_assert_int_eq(hr_registrar_status(b.r, &err), 0);
	ck_assert_int_eq(hr_registrar_lease(b.r), lease);
	ck_assert_int_eq(key_lease(PREFIX "self"), lease);
	ck_assert_int_eq(key_lease(ACKS "parent"), ack_lease);
	/* Its clients follow etcd as before. */
	put_node("dddd");
	ck_assert_int_eq(hrt_wait_nodes(b.c, 5, 10000), 0);
	ck_assert_int_eq(hrt_wait_nodes(b.shared, 5, 10000), 0);
	ck_assert_int_eq(hr_client_wait_synced(b.c, 0, &err), 0);
	ck_assert_int_eq(hr_client_status_get(b.c, &st, &err), 0);
	ck_assert_uint_gt(st.revision, b.revision);
	ck_assert_int_eq(hr_registrar_update(b.r, &(hr_record_update){
			.size = sizeof(hr_record_update), .fields = HR_UPDATE_STATE,
			.state = HR_STATE_DRAINING }, &err), 0);
	ck_assert_int_eq(hrt_wait_state(b.c, "self", HR_STATE_DRAINING, 10000), 0);

	hr_ring_release(b.ring);
	hr_client_close(b.shared);
	hr_share_free(b.share);
	hr_client_close(b.c);
	/* Closing in the parent still removes the node at once. */
	hr_registrar_close(b.r);
	ck_assert_int_eq(key_lease(PREFIX "self"), -1);
}
END_TEST

/* A thread that takes the client's ring without pause: at most forks it
 * is inside a read section, which a child must not wait for. */
static void *ring_taker_main(void *arg)
{
	busy *b = arg;

	while (!atomic_load(&b->stop)) {
		hr_ring_release(hr_client_ring(b->c));
		atomic_fetch_add(&b->rounds, 1);
	}
	return NULL;
}

/* One child of children_forked_during_publications_never_block(); its
 * exit status says what failed. */
static int forked_child(hr_client *c)
{
	hr_client_status st;
	hr_owner o;
	hr_ring *ring;

	if (hr_client_lookup(c, "k", 1, &o, NULL) != 0)
		return 2;
	if (hr_client_status_get(c, &st, NULL) != HR_ECLOSED)
		return 3;
	ring = hr_client_ring(c);
	if (hr_ring_node_count(ring) < 1)
		return 4;
	hr_ring_release(ring);
	hr_client_close(c);
#if !TSAN_BUILD
	{
		/* Its own client's first grace period must not wait for
		 * the parent's reader. */
		hr_etcd_config e = ecfg;
		hr_client *mine = NULL;

		e.log = NULL;
		e.log_level = HR_LOG_ERROR;
		if (hr_client_open(&e, NULL, &mine, NULL) != 0)
			return 5;
		if (hr_client_lookup(mine, "k", 1, &o, NULL) != 0)
			return 6;
		hr_client_close(mine);
	}
#endif
	return 0;
}

/* Children forked over and over while the watcher publishes and a parent
 * thread reads: whatever lock or read section a thread of the parent's
 * is in at the fork, the child's lookups, its close and a client of its
 * own never wait for it. */
START_TEST(children_forked_during_publications_never_block)
{
	hr_client *c = NULL;
	hr_error err = { 0 };
	busy bz = { 0 };
	int64_t t0 = hrt_now_ms();

	put_node("a");
	ck_assert_int_eq(hr_client_open(&ecfg, NULL, &c, &err), 0);
	bz.c = c;
	ck_assert_int_eq(pthread_create(&bz.thread, NULL, ring_taker_main, &bz), 0);
	for (int i = 0; i < 40; i++) {
		char id[16];
		pid_t pid;
		int code;

		/* Every other fork lands while a put is being applied;
		 * under ASan each once the watcher is done with it, as it
		 * allocates meanwhile (see the top). */
		snprintf(id, sizeof id, "n%d", i);
		put_node(id);
		if (ASAN_BUILD)
			ck_assert_int_eq(hrt_wait_nodes(c, (size_t)i + 2, 10000), 0);
		else if (i % 2)
			hrt_sleep_ms(5);
		fflush(NULL);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(forked_child(c));
		code = wait_child(pid, 30000);
		ck_assert_msg(code == 0, "child %d: exit status %d", i, code);
	}
	atomic_store(&bz.stop, 1);
	pthread_join(bz.thread, NULL);
	ck_assert_int_gt(atomic_load(&bz.rounds), 0);
	ck_assert_int_eq(hrt_wait_nodes(c, 41, 10000), 0);
	hr_client_close(c);
	/* A sanity bound only. */
	ck_assert_int_lt(hrt_now_ms() - t0, 120000);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fork");
	TCase *tc = tcase_create("etcd");

	tcase_add_checked_fixture(tc, up, down);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, child_uses_the_last_ring_and_leaves_the_parent_alone);
	tcase_add_test(tc, children_forked_during_publications_never_block);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
