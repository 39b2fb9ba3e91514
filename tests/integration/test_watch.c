/* SPDX-License-Identifier: MIT */
/* test_watch.c - membership from a real etcd: first sync, propagation,
 * transactions, compaction, restarts, hung members, clusters, bad records.
 * After every scenario the client's ring must equal a ring built from a
 * fresh range of what etcd holds (same digest). */
#include "diff.h"
#include "error.h"
#include "etcd.h"
#include "ring.h"
#include "ring_impl.h"
#include "etcd_fixture.h"
#include "hrt_cli.h"
#include "hrt_ring.h"
#include "hrt_check.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "/ring/nodes/"

static hrt_etcd_cluster *etcd;
static hrt_log logbuf;
/* Reconnect backoff for open_client(); 0 keeps the test default. */
static int fixed_backoff_ms;
/* Probe jitter for open_client(); -1 keeps the library default. */
static int probe_jitter_pct = -1;

static void up1(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hrt_log_init(&logbuf);
}

static void down(void)
{
	hrt_etcd_destroy(etcd);
	etcd = NULL;
	hrt_log_free(&logbuf);
}

static hr_client *open_client(const char *endpoints, unsigned page_size)
{
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	int rc;

	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = endpoints;
	ecfg.prefix = PREFIX;
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &logbuf;
	ecfg.log_level = HR_LOG_DEBUG;
	if (page_size)
		cfg.page_size = page_size;
	/* Short timers keep the failure scenarios quick. */
	cfg.probe_interval_ms = 1000;
	cfg.stale_warn_ms = 3000;
	ecfg.request_timeout_ms = 2000;
	cfg.backoff_max_ms = 1000;
	if (fixed_backoff_ms)
		cfg.backoff_initial_ms = cfg.backoff_max_ms = fixed_backoff_ms;
	if (probe_jitter_pct >= 0)
		cfg.probe_jitter_pct = probe_jitter_pct;
	rc = hr_client_open(&ecfg, &cfg, &c, &err);
	ck_assert_msg(rc == 0, "open: %d %s", rc, err.message);
	return c;
}

static const char *url(void)
{
	return hrt_etcd_client_url(etcd, 0);
}

static void put_node(const char *id, const char *value)
{
	char key[300];

	snprintf(key, sizeof key, PREFIX "%s", id);
	ck_assert_int_gt(hrt_put(url(), key, value), 0);
}

static void assert_converged(hr_client *c)
{
	ck_assert_msg(hrt_wait_converged(c, hrt_etcd_endpoints(etcd), PREFIX, 15000) == 0,
		      "client ring differs from etcd");
}

START_TEST(first_sync_empty)
{
	hr_client *c = open_client(hrt_etcd_endpoints(etcd), 0);
	hr_owner o;
	hr_client_status st;

	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), HR_EEMPTY);
	ck_assert_int_eq(hr_client_status_get(c, &st, NULL), 0);
	ck_assert_uint_gt(st.confirmed_revision, 0);
	assert_converged(c);
	hr_client_close(c);
}
END_TEST

START_TEST(first_sync_one)
{
	hr_client *c;
	hr_owner o;

	put_node("a", "{\"addr\":\"127.0.0.1:11211\"}");
	c = open_client(hrt_etcd_endpoints(etcd), 0);
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
	ck_assert_str_eq(o.node, "a");
	ck_assert_str_eq(o.read_node, "a");
	ck_assert_str_eq(o.addr, "127.0.0.1:11211");
	ck_assert_uint_gt(o.revision, 0);
	assert_converged(c);
	hr_client_close(c);
}
END_TEST

START_TEST(first_sync_paged_2000)
{
	hr_client *c;
	hr_ring *r;
	char id[32], val[64];

	for (int i = 0; i < 2000; i++) {
		snprintf(id, sizeof id, "n%04d", i);
		snprintf(val, sizeof val, "{\"addr\":\"127.1.%d.%d:80\",\"zone\":\"z%d\"}",
			 i / 250, i % 250, i % 3);
		put_node(id, val);
	}
	/* 37 keys a page: many pages, all pinned to one revision, read
	 * ahead; 400,000 points: paged, placed while the pages came. */
	c = open_client(hrt_etcd_endpoints(etcd), 37);
	r = hr_client_ring(c);
	ck_assert_uint_eq(hr_ring_node_count(r), 2000);
	ck_assert_uint_eq(hr_ring_point_count(r), 2000 * 200);
	ck_assert(hr__ring_paged(r) && r->placed_ahead);
	hr_ring_release(r);
	assert_converged(c);
	hr_client_close(c);
}
END_TEST

/* What the pages of a range gave, and the page whose callback fails. */
struct pages_seen {
	size_t pages, keys, total, fail_at;
	char last[32];
	int out_of_order;
};

static int see_page(void *ud, hr__kv *kvs, size_t n, size_t total, hr_error *err)
{
	struct pages_seen *ps = ud;

	ps->pages++;
	ps->total = total;
	for (size_t i = 0; i < n; i++) {
		ps->out_of_order += strcmp(kvs[i].key, ps->last) <= 0;
		snprintf(ps->last, sizeof ps->last, "%s", kvs[i].key);
	}
	ps->keys += n;
	hr__kvs_free(kvs, n);
	if (ps->pages == ps->fail_at)
		return hr__error_set(err, HR_ECLOSED, "stopped by the test");
	return 0;
}

/* A range read ahead (hr__etcd_list_pages): every page once, in key
 * order, with the range's count; a callback's error ends it with that
 * error, and the key limit ends it when a later page crosses it. */
START_TEST(range_read_ahead)
{
	hr__etcd_opts o = { .endpoints = hrt_etcd_endpoints(etcd) };
	hr__etcd *e = NULL;
	hr_error err = { 0 };
	int64_t rev = 0;
	char id[16];

	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof id, "r%03d", i);
		put_node(id, "127.0.0.1:1");
	}
	ck_assert_int_eq(hr__etcd_new(&o, &e, &err), HR_OK);
	{
		struct pages_seen ps = { 0 };

		ck_assert_int_eq(hr__etcd_list_pages(e, PREFIX, 7, HR_NODES_MAX, see_page, &ps,
						     &rev, &err), HR_OK);
		ck_assert_uint_eq(ps.keys, 100);
		ck_assert_uint_eq(ps.pages, 15);
		ck_assert_uint_eq(ps.total, 100);
		ck_assert_int_eq(ps.out_of_order, 0);
		ck_assert_int_gt(rev, 0);
	}
	for (size_t at = 1; at <= 4; at++) {
		struct pages_seen ps = { .fail_at = at };

		rev = 0;
		ck_assert_int_eq(hr__etcd_list_pages(e, PREFIX, 7, HR_NODES_MAX, see_page, &ps,
						     &rev, &err), HR_ECLOSED);
		ck_assert_str_eq(err.message, "stopped by the test");
		ck_assert_uint_eq(ps.pages, at);
		ck_assert_int_eq(rev, 0);
	}
	{
		struct pages_seen ps = { 0 };

		ck_assert_int_eq(hr__etcd_list_pages(e, PREFIX, 7, 50, see_page, &ps, &rev, &err),
				 HR_ELIMIT);
		ck_assert_msg(strstr(err.message, "more than 50 keys"), "%s", err.message);
		ck_assert_uint_eq(ps.keys, 49);	/* the pages within the limit */
	}
	hr__etcd_free(e);
}
END_TEST

START_TEST(changes_propagate)
{
	hr_client *c = open_client(hrt_etcd_endpoints(etcd), 0);
	hr_ring *r;
	const hr_node *n;
	uint64_t published;
	hr_client_status st;

	put_node("a", "127.0.0.1:1");
	put_node("b", "{\"addr\":\"127.0.0.2:1\",\"zone\":\"z1\"}");
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 5000), 0);
	assert_converged(c);

	put_node("b", "{\"addr\":\"127.0.0.2:1\",\"state\":\"warming\"}");
	assert_converged(c);
	r = hr_client_ring(c);
	n = hr_ring_find(r, "b");
	ck_assert_ptr_nonnull(n);
	ck_assert_int_eq(n->state, HR_STATE_WARMING);
	hr_ring_release(r);

	put_node("b", "{\"addr\":\"127.0.0.2:1\",\"weight\":3}");
	assert_converged(c);
	r = hr_client_ring(c);
	n = hr_ring_find(r, "b");
	ck_assert_double_eq(n->weight, 3);
	ck_assert_uint_eq(hr_ring_node_vnodes(r, n), 600);
	hr_ring_release(r);

	ck_assert_int_gt(hrt_del(url(), PREFIX "a"), 0);
	ck_assert_int_eq(hrt_wait_nodes(c, 1, 5000), 0);
	assert_converged(c);

	/* A put that changes nothing does not publish a new ring, but its
	 * revision is confirmed. */
	hr_client_status_get(c, &st, NULL);
	published = st.rings_published;
	int64_t rev = hrt_put(url(), PREFIX "b", "{\"addr\":\"127.0.0.2:1\",\"weight\":3}");
	for (int i = 0; i < 100; i++) {
		hr_client_status_get(c, &st, NULL);
		if (st.confirmed_revision >= (uint64_t)rev)
			break;
		hrt_sleep_ms(20);
	}
	ck_assert_uint_ge(st.confirmed_revision, (uint64_t)rev);
	ck_assert_uint_eq(st.rings_published, published);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=ring", "removed=1:a", NULL), 1);
	/* Where the watcher's time went: each ring's build, and the split
	 * of the full sync. */
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=ring", " build_ms=", NULL), 4);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=synced", " list_ms=",
				       " records_ms=", " build_ms=", NULL), 1);
	hr_client_close(c);
}
END_TEST

static int changes_seen;
static uint64_t last_change_revision;
static void count_changes(void *ud, const hr_ring *old, const hr_ring *ring)
{
	(void)ud;
	(void)old;
	__atomic_fetch_add(&changes_seen, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&last_change_revision, hr_ring_revision(ring), __ATOMIC_RELEASE);
}

START_TEST(txn_is_one_change)
{
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	char out[512];

	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	cfg.on_change = count_changes;
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &logbuf;
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), 0);
	put_node("x", "127.0.0.9:1");
	ck_assert_int_eq(hrt_wait_nodes(c, 1, 5000), 0);
	/* A ring is published before on_change hears of it: wait for the
	 * callback of the ring just seen before counting from here. */
	{
		hr_ring *seen = hr_client_ring(c);
		uint64_t rev = hr_ring_revision(seen);

		hr_ring_release(seen);
		for (int i = 0; i < 500 &&
		     __atomic_load_n(&last_change_revision, __ATOMIC_ACQUIRE) < rev; i++)
			hrt_sleep_ms(10);
	}
	int before = __atomic_load_n(&changes_seen, __ATOMIC_RELAXED);
	ck_assert_int_eq(hrt_etcdctl_stdin(etcd,
		"\n"
		"put " PREFIX "t1 127.0.0.11:1\n"
		"put " PREFIX "t2 127.0.0.12:1\n"
		"del " PREFIX "x\n"
		"\n"
		"\n", out, sizeof out, "txn"), 0);
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 5000), 0);
	hrt_sleep_ms(300);
	ck_assert_int_eq(__atomic_load_n(&changes_seen, __ATOMIC_RELAXED) - before, 1);
	assert_converged(c);
	hr_client_close(c);
}
END_TEST

/* on_change's moved shares and on_diff's, in publication order. */
struct moves {
	double change_write[16], change_read[16], diff_write[16], diff_read[16];
	int changes, diffs;
	int arcs_ok;
};

static void record_change(void *ud, const hr_ring *old, const hr_ring *ring)
{
	struct moves *m = ud;

	if (m->changes < 16) {
		m->change_write[m->changes] = hr_ring_moved_share(old, ring, HR_VIEW_WRITE);
		m->change_read[m->changes] = hr_ring_moved_share(old, ring, HR_VIEW_READ);
	}
	m->changes++;
}

static void record_diff(void *ud, const hr_diff *dw, const hr_diff *dr)
{
	struct moves *m = ud;
	const hr_arc *arcs = hr_diff_arcs(dw);

	if (m->diffs < 16) {
		m->diff_write[m->diffs] = hr__diff_moved_share(dw);
		m->diff_read[m->diffs] = hr__diff_moved_share(dr);
	}
	/* Arcs come in ring order, each with two different owners. */
	for (size_t i = 0; i < hr_diff_arc_count(dw); i++)
		if ((i && arcs[i].start < arcs[i - 1].end) || arcs[i].old_node == arcs[i].new_node)
			m->arcs_ok = 0;
	m->diffs++;
}

START_TEST(diffs_reach_the_callback)
{
	struct moves m = { .arcs_ok = 1 };
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	cfg.on_change = record_change;
	cfg.on_change_userdata = &m;
	cfg.on_diff = record_diff;
	cfg.on_diff_userdata = &m;
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &logbuf;
	put_node("a", "127.0.0.1:1");
	put_node("b", "127.0.0.2:1");
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), 0);
	put_node("c", "{\"addr\":\"127.0.0.3:1\",\"state\":\"warming\"}");
	ck_assert_int_eq(hrt_wait_nodes(c, 3, 5000), 0);
	put_node("c", "127.0.0.3:1");
	ck_assert_int_gt(hrt_del(url(), PREFIX "a"), 0);
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 5000), 0);
	hr_client_close(c);
	/* First ring, c warming, c active, a gone: one diff per ring. */
	ck_assert_int_eq(m.changes, 4);
	ck_assert_int_eq(m.diffs, m.changes);
	ck_assert(m.arcs_ok);
	for (int i = 0; i < m.diffs; i++) {
		ck_assert_double_eq_tol(m.diff_write[i], m.change_write[i], 1e-12);
		ck_assert_double_eq_tol(m.diff_read[i], m.change_read[i], 1e-12);
	}
	/* The warming node took writes but no reads; its activation moved
	 * reads only. */
	ck_assert_double_gt(m.diff_write[1], 0);
	ck_assert_double_eq(m.diff_read[1], 0);
	ck_assert_double_eq(m.diff_write[2], 0);
	ck_assert_double_gt(m.diff_read[2], 0);
}
END_TEST

/* What the first on_change saw, for first_change_inside_open. */
struct first_change {
	pthread_t caller;     /* the thread that called hr_client_open() */
	int opened;           /* set once hr_client_open() returned      */
	int calls;
	int on_caller;        /* the first call ran on the caller's thread */
	int after_open;       /* ... after hr_client_open() returned       */
	uint64_t old_revision, new_revision;
	size_t old_nodes, new_nodes;
};

static void note_first_change(void *ud, const hr_ring *old, const hr_ring *ring)
{
	struct first_change *f = ud;

	if (__atomic_fetch_add(&f->calls, 1, __ATOMIC_ACQ_REL))
		return;
	f->on_caller = pthread_equal(pthread_self(), f->caller);
	f->after_open = __atomic_load_n(&f->opened, __ATOMIC_ACQUIRE);
	f->old_revision = hr_ring_revision(old);
	f->old_nodes = hr_ring_node_count(old);
	f->new_revision = hr_ring_revision(ring);
	f->new_nodes = hr_ring_node_count(ring);
}

/* docs/embedding.md: with a watcher of its own and a blocking open, the
 * first on_change (from the empty ring at revision 0 to the first synced
 * ring) runs on the watcher thread while hr_client_open() still waits. */
START_TEST(first_change_inside_open)
{
	struct first_change f = { .caller = pthread_self() };
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	hr_ring *ring;

	put_node("a", "127.0.0.1:1");
	put_node("b", "127.0.0.2:1");
	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &logbuf;
	cfg.on_change = note_first_change;
	cfg.on_change_userdata = &f;
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), 0);
	__atomic_store_n(&f.opened, 1, __ATOMIC_RELEASE);
	ck_assert_int_ge(__atomic_load_n(&f.calls, __ATOMIC_ACQUIRE), 1);
	ck_assert_int_eq(f.after_open, 0);
	ck_assert_int_eq(f.on_caller, 0);
	ck_assert_uint_eq(f.old_revision, 0);
	ck_assert_uint_eq(f.old_nodes, 0);
	ck_assert_uint_eq(f.new_nodes, 2);
	/* The ring open returned with is the one the callback heard of. */
	ring = hr_client_ring(c);
	ck_assert_uint_eq(f.new_revision, hr_ring_revision(ring));
	hr_ring_release(ring);
	hr_client_close(c);
}
END_TEST

START_TEST(compaction_forces_resync)
{
	hr_client *c;
	hr_client_status st;
	char out[256];
	int64_t rev;

	/* A long backoff (2-4 s) leaves room to restart etcd, change and
	 * compact before the client comes back.  On a loaded host the
	 * restart can outlast it: the client then watches on from before the
	 * compaction and needs no resync, and the round is played again. */
	fixed_backoff_ms = 4000;
	c = open_client(hrt_etcd_endpoints(etcd), 0);
	put_node("a", "127.0.0.1:1");
	ck_assert_int_eq(hrt_wait_nodes(c, 1, 5000), 0);
	for (int round = 0; round < 3; round++) {
		ck_assert_int_eq(hrt_etcd_kill_member(etcd, 0), 0);
		ck_assert_int_eq(hrt_etcd_restart_member(etcd, 0), 0);
		for (int i = 0; i < 5; i++)
			put_node("b", i % 2 ? "127.0.0.2:1" : "127.0.0.2:2");
		hrt_del(url(), PREFIX "a");
		rev = hrt_put(url(), PREFIX "c", round % 2 ? "127.0.0.3:2" : "127.0.0.3:1");
		ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "compact %lld",
					     (long long)rev), 0);
		assert_converged(c);
		hr_client_status_get(c, &st, NULL);
		if (st.resyncs >= 1)
			break;
		fprintf(stderr, "compaction_forces_resync: the client came back before the"
			" compaction (round %d); again\n", round + 1);
	}
	ck_assert_uint_ge(st.confirmed_revision, (uint64_t)rev);
	ck_assert_uint_ge(st.reconnects, 1);
	ck_assert_uint_ge(st.resyncs, 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=compacted", NULL), 1);
	hr_client_close(c);
}
END_TEST

START_TEST(kill_and_restart)
{
	hr_client *c = open_client(hrt_etcd_endpoints(etcd), 0);
	hr_owner o;

	put_node("a", "127.0.0.1:1");
	ck_assert_int_eq(hrt_wait_nodes(c, 1, 5000), 0);
	for (int round = 0; round < 3; round++) {
		ck_assert_int_eq(hrt_etcd_kill_member(etcd, 0), 0);
		/* Lookups keep answering from the last ring meanwhile. */
		ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
		hrt_sleep_ms(700);
		ck_assert_int_eq(hrt_etcd_restart_member(etcd, 0), 0);
		char id[8];
		snprintf(id, sizeof id, "r%d", round);
		put_node(id, "127.0.0.5:1");
		int64_t t0 = hrt_now_ms();
		assert_converged(c);
		/* Backoff is capped at 1 s in this test: converged well
		 * within a few seconds of etcd coming back. */
		ck_assert_int_lt(hrt_now_ms() - t0, 5000);
	}
	ck_assert_int_eq(hrt_wait_nodes(c, 4, 5000), 0);
	hr_client_close(c);
}
END_TEST

START_TEST(frozen_member_goes_stale_then_recovers)
{
	hr_client *c = open_client(hrt_etcd_endpoints(etcd), 0);
	hr_client_status st;
	hr_owner o;

	put_node("a", "127.0.0.1:1");
	ck_assert_int_eq(hrt_wait_nodes(c, 1, 5000), 0);
	hrt_log_clear(&logbuf);
	ck_assert_int_eq(hrt_etcd_freeze_member(etcd, 0), 0);
	/* The bound is the point: the warning comes while etcd hangs.
	 * stale_warn_ms is 3 s here: the first warning within it plus the
	 * probe interval and timeout, about 5 s.  One cap, generous for a
	 * loaded machine: a client that did not probe a quiet stream would
	 * never warn at all. */
	int64_t until = hrt_now_ms() + 10000;
	while (hrt_log_count(&logbuf, "level=warn", "event=stale", NULL) == 0 &&
	       hrt_now_ms() < until) {
		/* Lookups never block or fail while etcd hangs. */
		ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
		hrt_sleep_ms(50);
	}
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=stale", "unconfirmed_ms=", NULL), 1);
	hr_client_status_get(c, &st, NULL);
	ck_assert_int_gt(st.unconfirmed_ms, 0);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=probe_failed", NULL), 1);
	ck_assert_int_eq(hrt_etcd_thaw_member(etcd, 0), 0);
	put_node("b", "127.0.0.2:1");
	assert_converged(c);
	hrt_log_wait(&logbuf, 1, 10000, 50, "event=stale_recovered", NULL);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=stale_recovered", NULL), 1);
	hr_client_close(c);
}
END_TEST

START_TEST(bad_records_beside_good)
{
	hr_client *c;
	hr_ring *r;
	char big[HR_RECORD_MAX + 64];

	put_node("good1", "127.0.0.1:1");
	put_node("badjson", "{\"addr\":");
	put_node("badweight", "{\"addr\":\"127.0.0.3:1\",\"weight\":-1}");
	put_node("badtype", "{\"addr\":7}");
	put_node("sub/dir", "127.0.0.4:1");
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	put_node("huge", big);
	c = open_client(hrt_etcd_endpoints(etcd), 0);
	r = hr_client_ring(c);
	ck_assert_uint_eq(hr_ring_node_count(r), 1);
	hr_ring_release(r);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "badjson", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "badweight", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "badtype", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "sub/dir", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=bad_record", "huge", NULL), 1);

	/* A later good value is taken; a value turning bad leaves the ring. */
	put_node("badjson", "{\"addr\":\"127.0.0.2:1\"}");
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 5000), 0);
	put_node("good1", "{\"addr\":\"127.0.0.1:1\",\"state\":\"sleeping\"}");
	ck_assert_int_eq(hrt_wait_nodes(c, 1, 5000), 0);
	r = hr_client_ring(c);
	ck_assert_ptr_nonnull(hr_ring_find(r, "badjson"));
	hr_ring_release(r);
	assert_converged(c);
	hr_client_close(c);
}
END_TEST

START_TEST(three_members_lose_the_one_in_use)
{
	hr_client *c;
	hr_client_status st;

	hrt_etcd_destroy(etcd);
	etcd = hrt_etcd_start(3, NULL);
	ck_assert_ptr_nonnull(etcd);
	put_node("a", "127.0.0.1:1");
	c = open_client(hrt_etcd_endpoints(etcd), 0);
	ck_assert_int_eq(hrt_wait_nodes(c, 1, 5000), 0);
	hr_client_status_get(c, &st, NULL);
	/* Kill the member the client streams from. */
	int used = -1;
	for (int i = 0; i < 3; i++)
		if (!strcmp(st.endpoint, hrt_etcd_client_url(etcd, i)))
			used = i;
	ck_assert_int_ge(used, 0);
	ck_assert_int_eq(hrt_etcd_kill_member(etcd, used), 0);
	int other = (used + 1) % 3;
	/* If it was the leader, the others elect a new one first. */
	hrt_etcd_wait_cluster_healthy(etcd, 10000);
	char key[64];
	snprintf(key, sizeof key, PREFIX "b");
	int64_t rev = -1;
	for (int i = 0; i < 50 && rev < 0; i++) {
		rev = hrt_put(hrt_etcd_client_url(etcd, other), key, "127.0.0.2:1");
		if (rev < 0)
			hrt_sleep_ms(200);
	}
	ck_assert_int_gt(rev, 0);
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 15000), 0);
	hr_client_status_get(c, &st, NULL);
	ck_assert_str_ne(st.endpoint, hrt_etcd_client_url(etcd, used));
	hr_client_close(c);
}
END_TEST

START_TEST(lookup_forms_agree)
{
	hr_client *c;
	hr_replica reps[4];
	uint64_t rev = 0;
	char key[32];

	put_node("a", "{\"addr\":\"127.0.0.1:1\",\"zone\":\"z1\"}");
	put_node("b", "{\"addr\":\"127.0.0.2:1\",\"zone\":\"z2\",\"state\":\"warming\"}");
	put_node("c", "{\"addr\":\"127.0.0.3:1\",\"zone\":\"z1\",\"state\":\"draining\"}");
	c = open_client(hrt_etcd_endpoints(etcd), 0);
	for (int i = 0; i < 500; i++) {
		hr_owner o;
		hr_lookup l;
		hr_ring *ring;
		int k;

		snprintf(key, sizeof key, "key-%d", i);
		ck_assert_int_eq(hr_client_lookup(c, key, strlen(key), &o, NULL), 0);
		/* The ring held is the same ring, with the same answer. */
		ring = hr_client_ring(c);
		ck_assert_int_eq(hr_ring_lookup(ring, key, strlen(key), &l, NULL), 0);
		ck_assert_str_eq(o.node, l.node->id);
		ck_assert_str_eq(o.addr, l.node->addr);
		ck_assert_str_eq(o.read_node, l.read_node->id);
		ck_assert_str_eq(o.read_addr, l.read_node->addr);
		ck_assert_int_eq(o.state, l.node->state);
		ck_assert_uint_eq(o.revision, hr_ring_revision(ring));
		ck_assert_uint_eq(o.digest, hr_ring_digest(ring));
		hr_ring_release(ring);
		/* Write view: active + warming, never the draining node. */
		ck_assert_str_ne(o.node, "c");
		ck_assert_str_ne(o.read_node, "b");
		k = hr_client_replicas(c, key, strlen(key), HR_VIEW_WRITE, reps, 3, &rev, NULL);
		ck_assert_int_eq(k, 2);
		ck_assert_str_eq(reps[0].node, o.node);
		ck_assert_str_ne(reps[0].zone, reps[1].zone);
		ck_assert_uint_eq(rev, o.revision);
		k = hr_client_replicas(c, key, strlen(key), HR_VIEW_READ, reps, 3, NULL, NULL);
		ck_assert_int_eq(k, 2);
		ck_assert_str_eq(reps[0].node, o.read_node);
	}
	ck_assert_int_eq(hr_client_replicas(c, "k", 1, HR_VIEW_WRITE, reps, 65, NULL, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_replicas(c, "k", 1, (hr_view)7, reps, 1, NULL, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_lookup(c, NULL, 3, NULL, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_client_lookup(NULL, "k", 1, NULL, NULL), HR_EINVAL);
	ck_assert_ptr_null(hr_client_ring(NULL));

	/* Epochs: a held snapshot is stale once a change lands. */
	hr_ring *before = hr_client_ring(c);
	put_node("d", "127.0.0.4:1");
	ck_assert_int_eq(hrt_wait_nodes(c, 4, 5000), 0);
	hr_ring *after = hr_client_ring(c);
	ck_assert_int_eq(hr_epoch_compare(hr_ring_revision(before), hr_ring_digest(before),
					  hr_ring_revision(after), hr_ring_digest(after)),
			 HR_EPOCH_LOCAL_STALE);
	ck_assert_int_eq(hr_epoch_compare(hr_ring_revision(after), hr_ring_digest(after),
					  hr_ring_revision(before), hr_ring_digest(before)),
			 HR_EPOCH_REMOTE_STALE);
	ck_assert_int_eq(hr_epoch_compare(hr_ring_revision(after), hr_ring_digest(after),
					  hr_ring_revision(after), hr_ring_digest(after)),
			 HR_EPOCH_SAME);
	ck_assert_int_eq(hr_epoch_compare(hr_ring_revision(after), hr_ring_digest(after),
					  hr_ring_revision(after), hr_ring_digest(before)),
			 HR_EPOCH_CONFLICT);
	/* Held snapshots outlive the client. */
	hr_client_close(c);
	ck_assert_uint_eq(hr_ring_node_count(before), 3);
	ck_assert_uint_eq(hr_ring_node_count(after), 4);
	hr_ring_release(before);
	hr_ring_release(after);
}
END_TEST

/* The client's ring once it has `want`'s digest: the change arrives
 * within seconds, 15 s is generous.  Release it. */
static hr_ring *await_ring(hr_client *c, const hr_ring *want, int step)
{
	hr_ring *got = NULL;

	for (int t = 0; t < 1500; t++) {
		got = hr_client_ring(c);
		if (hr_ring_digest(got) == hr_ring_digest(want))
			break;
		hr_ring_release(got);
		got = NULL;
		hrt_sleep_ms(10);
	}
	ck_assert_msg(got != NULL, "step %d: the client's ring differs", step);
	return got;
}

/* The client answers `key` with `want`'s write and read owners. */
static void check_owners(hr_client *c, const hr_ring *want, const char *key, int len)
{
	hr_lookup lw;
	hr_owner o;

	ck_assert_int_eq(hr_ring_lookup(want, key, (size_t)len, &lw, NULL), 0);
	ck_assert_int_eq(hr_client_lookup(c, key, (size_t)len, &o, NULL), 0);
	ck_assert_str_eq(o.node, lw.node->id);
	ck_assert_str_eq(o.read_node, lw.read_node->id);
}

/* A client with Maglev ring options serves the ring an offline build of
 * the same records gives, through a change; a table size that is not a
 * prime is refused at open. */
START_TEST(maglev_client_follows_etcd)
{
	static const char *const members[2] = {
		"{\"a\":\"127.0.0.1:1\",\"b\":{\"addr\":\"127.0.0.2:1\",\"weight\":2},"
		"\"c\":{\"addr\":\"127.0.0.3:1\",\"state\":\"warming\"}}",
		"{\"a\":\"127.0.0.1:1\",\"b\":{\"addr\":\"127.0.0.2:1\",\"weight\":2},"
		"\"c\":{\"addr\":\"127.0.0.3:1\",\"state\":\"warming\"},\"d\":\"127.0.0.4:1\"}",
	};
	hr_ring_options ring;
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_ring_options_init(&ring);
	ring.placement = HR_PLACEMENT_MAGLEV;
	ring.maglev_size = 1009;
	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	ecfg.ring = &ring;
	put_node("a", "127.0.0.1:1");
	put_node("b", "{\"addr\":\"127.0.0.2:1\",\"weight\":2}");
	put_node("c", "{\"addr\":\"127.0.0.3:1\",\"state\":\"warming\"}");
	ck_assert_msg(hr_client_open(&ecfg, &cfg, &c, &err) == 0, "%s", err.message);
	for (int step = 0; step < 2; step++) {
		hr_ring *want = NULL, *got = NULL;

		ck_assert_int_eq(hr_ring_from_json(members[step], strlen(members[step]), &ring,
						   &want, &err), HR_OK);
		if (step)
			put_node("d", "127.0.0.4:1");
		got = await_ring(c, want, step);
		ck_assert_uint_eq(hr_ring_point_count(got), hr_ring_point_count(want));
		for (int k = 0; k < 200; k++) {
			char key[16];
			int len = snprintf(key, sizeof key, "k%d", k);

			check_owners(c, want, key, len);
		}
		hr_ring_release(got);
		hr_ring_release(want);
	}
	hr_client_close(c);

	ring.maglev_size = 1000;
	c = (hr_client *)1;
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), HR_EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(err.message, "maglev_size 1000 is not a prime"), "%s", err.message);
}
END_TEST

/* A client with rendezvous ring options serves the ring an offline build
 * of the same records gives, owners and replicas, through a join; a record
 * whose weight rendezvous cannot place is left out, as every client with
 * those options leaves it out. */
START_TEST(rendezvous_client_follows_etcd)
{
	static const char *const members[2] = {
		"{\"a\":{\"addr\":\"127.0.0.1:1\",\"zone\":\"z1\"},"
		"\"b\":{\"addr\":\"127.0.0.2:1\",\"weight\":2,\"zone\":\"z2\"},"
		"\"c\":{\"addr\":\"127.0.0.3:1\",\"state\":\"draining\"}}",
		"{\"a\":{\"addr\":\"127.0.0.1:1\",\"zone\":\"z1\"},"
		"\"b\":{\"addr\":\"127.0.0.2:1\",\"weight\":2,\"zone\":\"z2\"},"
		"\"c\":{\"addr\":\"127.0.0.3:1\",\"state\":\"draining\"},"
		"\"d\":{\"addr\":\"127.0.0.4:1\",\"state\":\"warming\"}}",
	};
	hr_ring_options ring;
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_ring_options_init(&ring);
	ring.placement = HR_PLACEMENT_RENDEZVOUS;
	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	ecfg.ring = &ring;
	put_node("a", "{\"addr\":\"127.0.0.1:1\",\"zone\":\"z1\"}");
	put_node("b", "{\"addr\":\"127.0.0.2:1\",\"weight\":2,\"zone\":\"z2\"}");
	put_node("c", "{\"addr\":\"127.0.0.3:1\",\"state\":\"draining\"}");
	put_node("e", "{\"addr\":\"127.0.0.5:1\",\"weight\":1e300}");
	ck_assert_msg(hr_client_open(&ecfg, &cfg, &c, &err) == 0, "%s", err.message);
	for (int step = 0; step < 2; step++) {
		hr_ring *want = NULL, *got = NULL;

		ck_assert_int_eq(hr_ring_from_json(members[step], strlen(members[step]), &ring,
						   &want, &err), HR_OK);
		if (step)
			put_node("d", "{\"addr\":\"127.0.0.4:1\",\"state\":\"warming\"}");
		got = await_ring(c, want, step);
		ck_assert_ptr_null(hr_ring_find(got, "e"));
		for (int k = 0; k < 200; k++) {
			char key[16];
			int len = snprintf(key, sizeof key, "k%d", k);
			hr_replica rep[3];
			const hr_node *pref[3];
			int n;

			check_owners(c, want, key, len);
			n = hr_ring_preflist(want, key, (size_t)len, HR_VIEW_WRITE, pref, 3, NULL);
			ck_assert_int_eq(hr_client_replicas(c, key, (size_t)len, HR_VIEW_WRITE,
							    rep, 3, NULL, NULL), n);
			for (int i = 0; i < n; i++)
				ck_assert_str_eq(rep[i].node, pref[i]->id);
		}
		hr_ring_release(got);
		hr_ring_release(want);
	}
	hr_client_close(c);
}
END_TEST

START_TEST(open_errors)
{
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_client *c = (hr_client *)1;
	hr_error err = { 0 };

	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), HR_EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err.message, "prefix"));
	ecfg.prefix = PREFIX;
	ecfg.endpoints = "ftp://127.0.0.1:1";
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), HR_EINVAL);
	/* Nothing listens on port 1 of loopback. */
	ecfg.endpoints = "127.0.0.1:1";
	cfg.open_timeout_ms = 800;
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &logbuf;
	int rc = hr_client_open(&ecfg, &cfg, &c, &err);
	ck_assert_msg(rc == HR_ECONNECT || rc == HR_ETIMEDOUT, "rc %d", rc);
	ck_assert_ptr_nonnull(strstr(err.message, "127.0.0.1:1"));
	/* Non-blocking open: an empty ring at once. */
	cfg.open_nonblocking = 1;
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), 0);
	hr_owner o;
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), HR_EEMPTY);
	ck_assert_uint_eq(o.revision, 0);
	hr_client_close(c);
	hr_client_close(NULL);
	ck_assert_int_eq(hr_client_open(NULL, &cfg, &c, &err), HR_EINVAL);
}
END_TEST

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
/* Allocations of at least this many bytes fail while it is not 0: a ring
 * too big for the memory left, and nothing else (replies and records are
 * far smaller).  The sanitizers bring their own allocator. */
static size_t fail_from;

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t alignment, size_t size);

static int too_big(size_t size)
{
	size_t limit = __atomic_load_n(&fail_from, __ATOMIC_RELAXED);

	return limit && size >= limit;
}

void *malloc(size_t size)
{
	return too_big(size) ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	return n && size && too_big(n * size) ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	return too_big(size) ? NULL : __libc_realloc(p, size);
}

/* A ring's big arrays are aligned for huge pages (hr__big_alloc). */
int posix_memalign(void **p, size_t alignment, size_t size)
{
	*p = too_big(size) ? NULL : __libc_memalign(alignment, size);
	return *p ? 0 : ENOMEM;
}

/* The first sync's ring cannot be built: open fails with the error instead
 * of returning an empty ring; a non-blocking client keeps trying and has
 * its ring once memory is back. */
START_TEST(first_ring_out_of_memory)
{
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_client *c = (hr_client *)1;
	hr_error err = { 0 };
	hr_client_status st;

	put_node("a", "127.0.0.1:1");
	/* 10 M points: blocks of over 64 MiB. */
	put_node("big", "{\"addr\":\"127.0.0.2:1\",\"weight\":50000}");
	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &logbuf;
	cfg.backoff_max_ms = 200;
	__atomic_store_n(&fail_from, (size_t)64 << 20, __ATOMIC_RELAXED);
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), HR_ENOMEM);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(err.code, HR_ENOMEM);
	ck_assert_ptr_nonnull(strstr(err.message, "out of memory"));
	ck_assert_int_ge(hrt_log_count(&logbuf, "level=error", "event=build_failed", NULL), 1);

	cfg.open_nonblocking = 1;
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), 0);
	hrt_sleep_ms(500);
	ck_assert_int_eq(hr_client_status_get(c, &st, NULL), 0);
	ck_assert_uint_eq(st.rings_published, 0);
	/* The error of the last try, at once; the watcher tries again. */
	ck_assert_int_eq(hr_client_wait_synced(c, 100, &err), HR_ENOMEM);
	__atomic_store_n(&fail_from, 0, __ATOMIC_RELAXED);
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 10000), 0);
	ck_assert_int_eq(hr_client_wait_synced(c, 0, &err), 0);
	assert_converged(c);
	hr_client_close(c);
}
END_TEST
#endif

/* `hashring diff` following etcd: the first sync is its baseline, and the
 * next ring is printed against it, with the moved share the library
 * computes for the same two rings. */
START_TEST(cli_diff_follows_etcd)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hr_ring *before, *after;
	uint64_t rev_before, rev_after, old_rev = 0, new_rev = 0;
	unsigned long arcs = 0, moved_arcs = 0;
	double share = -1;
	char err[4096], *line, *save = NULL;
	hrt_cli_run run;
	hrt_child ch;
	int64_t until;

	put_node("a", "127.0.0.1:1");
	put_node("b", "127.0.0.2:1");
	before = hrt_ring_from_etcd(eps, PREFIX, &rev_before);
	ck_assert_ptr_nonnull(before);
	ch = hrt_cli_spawn((const char *const[]){ "diff", "--endpoints", eps, "--prefix",
		PREFIX, "--count", "1", "--log-level", "info", NULL }, NULL);
	/* Change nothing before its first sync: that ring is the baseline. */
	until = hrt_now_ms() + 10000;
	do {
		hrt_sleep_ms(20);
		hrt_cli_peek_err(&ch, err, sizeof err);
	} while (!strstr(err, "event=synced") && hrt_now_ms() < until);
	ck_assert_msg(strstr(err, "event=synced"), "no sync: %s", err);
	put_node("c", "127.0.0.3:1");
	hrt_cli_wait(&ch, &run);
	ck_assert_msg(run.status == 0, "exit %d, stderr: %s", run.status, run.err);
	after = hrt_ring_from_etcd(eps, PREFIX, &rev_after);
	ck_assert_ptr_nonnull(after);

	for (line = strtok_r(run.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char old[64], new[64];

		if (!strncmp(line, "ring\t", 5)) {
			ck_assert_int_eq(sscanf(line, "ring\t%" SCNu64 "\t%" SCNu64, &old_rev,
						&new_rev), 2);
		} else if (!strncmp(line, "arc\t", 4)) {
			/* Only keys that move to the new node move. */
			ck_assert_int_eq(sscanf(line, "arc\t%*s\t%*s\t%63s\t%63s", old, new), 2);
			ck_assert_msg(strcmp(old, "a") == 0 || strcmp(old, "b") == 0, "%s", line);
			ck_assert_str_eq(new, "c");
			arcs++;
		} else if (!strncmp(line, "moved\t", 6)) {
			ck_assert_int_eq(sscanf(line, "moved\t%lf\t%lu", &share, &moved_arcs), 2);
		} else {
			ck_assert_msg(!strncmp(line, "total\t", 6), "unexpected: %s", line);
		}
	}
	ck_assert_uint_eq(old_rev, rev_before);
	ck_assert_uint_eq(new_rev, rev_after);
	ck_assert_uint_gt(arcs, 0);
	ck_assert_uint_eq(moved_arcs, arcs);
	ck_assert_double_eq_tol(share, hr_ring_moved_share(before, after, HR_VIEW_WRITE), 1e-6);
	ck_assert(share > 0.15 && share < 0.55);
	hr_ring_release(before);
	hr_ring_release(after);
}
END_TEST


/* ---- liveness at scale: jitter, progress notifications --------------------- */

/* When each of several clients sent its probes (debug "event=probe" lines,
 * stamped as they are logged). */
#define PROBERS 12
#define PROBES_KEPT 64
typedef struct prober {
	pthread_mutex_t *mu;
	int64_t at[PROBES_KEPT];
	int n;
} prober;

static void probe_log(void *ud, hr_log_level level, const char *line)
{
	prober *p = ud;

	(void)level;
	if (!strstr(line, "event=probe "))
		return;
	pthread_mutex_lock(p->mu);
	if (p->n < PROBES_KEPT)
		p->at[p->n++] = hrt_now_ms();
	pthread_mutex_unlock(p->mu);
}

/* The first probe of `p` at or after `since`, or -1. */
static int64_t first_probe_after(prober *p, int64_t since)
{
	int64_t t = -1;

	pthread_mutex_lock(p->mu);
	for (int i = 0; i < p->n && t < 0; i++)
		if (p->at[i] >= since)
			t = p->at[i];
	pthread_mutex_unlock(p->mu);
	return t;
}

static hr_client *open_prober(const char *endpoints, prober *p, int jitter_pct)
{
	hr_etcd_config ecfg;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = endpoints;
	ecfg.prefix = PREFIX;
	ecfg.log = probe_log;
	ecfg.log_userdata = p;
	ecfg.log_level = HR_LOG_DEBUG;
	cfg.probe_interval_ms = 1000;
	cfg.stale_warn_ms = 3000;
	cfg.probe_jitter_pct = jitter_pct;
	ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), 0);
	return c;
}

/*
 * A put restarts every client's silence timer at the same moment.  Without
 * jitter all of them probed etcd together one interval later: at 2,000
 * clients a burst etcd could not answer within the probe timeout, so
 * healthy streams were dropped and reconnected (and a put could take
 * longer than 10 s to reach a client whose reconnects backed off).  With
 * jitter the probes spread over a fifth of the interval (half, here).
 */
START_TEST(probes_are_jittered)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static prober p[PROBERS];
	hr_client *c[PROBERS];
	int64_t t_put, lo = INT64_MAX, hi = 0;

	put_node("a", "127.0.0.1:1");
	for (int i = 0; i < PROBERS; i++) {
		memset(&p[i], 0, sizeof p[i]);
		p[i].mu = &mu;
		c[i] = open_prober(url(), &p[i], 50);
	}
	for (int i = 0; i < PROBERS; i++)
		ck_assert_int_eq(hrt_wait_nodes(c[i], 1, 5000), 0);
	hrt_sleep_ms(300);
	t_put = hrt_now_ms();
	put_node("b", "127.0.0.2:1");
	for (int i = 0; i < PROBERS; i++)
		ck_assert_int_eq(hrt_wait_nodes(c[i], 2, 5000), 0);
	/* Each probes between 500 and 1,000 ms after the put (1,000 plus
	 * scheduling delays on a loaded machine). */
	hrt_sleep_ms(2500);
	for (int i = 0; i < PROBERS; i++) {
		int64_t t = first_probe_after(&p[i], t_put);
		ck_assert_msg(t >= 0, "client %d sent no probe after the put", i);
		lo = t < lo ? t : lo;
		hi = t > hi ? t : hi;
	}
	/* Twelve draws over 500 ms all within 50 ms of each other: odds
	 * below 1e-10.  Without jitter they are a few ms apart. */
	ck_assert_msg(hi - lo >= 50, "probes %" PRId64 " ms apart", hi - lo);
	for (int i = 0; i < PROBERS; i++)
		hr_client_close(c[i]);
}
END_TEST

/* Clients given the same list of three members spread over them; with
 * HR_ENDPOINTS_IN_ORDER they all start at the first. */
START_TEST(clients_spread_over_members)
{
	enum { N = 12 };
	hr_client *c[N];
	int on[3] = { 0, 0, 0 };

	hrt_etcd_destroy(etcd);
	etcd = hrt_etcd_start(3, NULL);
	ck_assert_ptr_nonnull(etcd);
	for (int order = HR_ENDPOINTS_SPREAD; order <= HR_ENDPOINTS_IN_ORDER; order++) {
		memset(on, 0, sizeof on);
		for (int i = 0; i < N; i++) {
			hr_etcd_config ecfg;
			hr_client_config cfg;
			hr_client_status st;
			hr_error err = { 0 };

			hr_etcd_config_init(&ecfg);
			hr_client_config_init(&cfg);
			ecfg.endpoints = hrt_etcd_endpoints(etcd);
			ecfg.prefix = PREFIX;
			ecfg.log = hrt_log_fn;
			ecfg.log_userdata = &logbuf;
			cfg.endpoint_order = order;
			ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c[i], &err), 0);
			hr_client_status_get(c[i], &st, NULL);
			for (int m = 0; m < 3; m++)
				on[m] += !strcmp(st.endpoint, hrt_etcd_client_url(etcd, m));
		}
		if (order == HR_ENDPOINTS_SPREAD)
			/* All twelve on one member by chance: odds 6e-6. */
			ck_assert_msg((on[0] > 0) + (on[1] > 0) + (on[2] > 0) >= 2,
				      "all on one member: %d %d %d", on[0], on[1], on[2]);
		else
			ck_assert_int_eq(on[0], N);
		for (int i = 0; i < N; i++)
			hr_client_close(c[i]);
	}
}
END_TEST

static void up_progress(void)
{
	hrt_etcd_opts eo = { .progress_notify_ms = 500 };

	etcd = hrt_etcd_start(1, &eo);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hrt_log_init(&logbuf);
}

/*
 * With etcd sending progress notifications every 500 ms, a quiet stream is
 * confirmed by them and not probed (before, a probe went out whenever a
 * notification came a little later than the probe interval); a hung
 * member still goes stale, since its notifications stop.
 */
START_TEST(progress_notifications_replace_probes)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static prober p;
	hr_client *c;
	hr_client_status st;
	int before;

	memset(&p, 0, sizeof p);
	p.mu = &mu;
	put_node("a", "127.0.0.1:1");
	/* A 400 ms probe interval, shorter than etcd's 500 ms (plus up to
	 * 10%): every notification used to come after a probe was due. */
	{
		hr_etcd_config ecfg;
		hr_client_config cfg;
		hr_error err = { 0 };

		hr_etcd_config_init(&ecfg);
		hr_client_config_init(&cfg);
		ecfg.endpoints = url();
		ecfg.prefix = PREFIX;
		ecfg.log = probe_log;
		ecfg.log_userdata = &p;
		ecfg.log_level = HR_LOG_DEBUG;
		cfg.probe_interval_ms = 400;
		cfg.stale_warn_ms = 3000;
		ck_assert_int_eq(hr_client_open(&ecfg, &cfg, &c, &err), 0);
	}
	/* Two notifications teach the client etcd's interval. */
	hrt_sleep_ms(2000);
	pthread_mutex_lock(&mu);
	before = p.n;
	pthread_mutex_unlock(&mu);
	hrt_sleep_ms(4000);
	pthread_mutex_lock(&mu);
	/* About ten probes in 4 s without the notifications; allow one for
	 * a notification delayed by a loaded machine. */
	ck_assert_msg(p.n - before <= 1, "%d probes in 4 s", p.n - before);
	pthread_mutex_unlock(&mu);
	hr_client_status_get(c, &st, NULL);
	ck_assert_int_eq(st.unconfirmed_ms, 0);
	ck_assert_int_gt(st.confirmed_revision, 0);

	/* Hung: no notification, then a late probe that times out. */
	ck_assert_int_eq(hrt_etcd_freeze_member(etcd, 0), 0);
	int64_t until = hrt_now_ms() + 10000;
	do {
		hrt_sleep_ms(100);
		hr_client_status_get(c, &st, NULL);
	} while (st.unconfirmed_ms == 0 && hrt_now_ms() < until);
	ck_assert_int_gt(st.unconfirmed_ms, 0);
	ck_assert_int_eq(hrt_etcd_thaw_member(etcd, 0), 0);
	put_node("b", "127.0.0.2:1");
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 10000), 0);
	hr_client_close(c);
}
END_TEST

/*
 * Progress notifications come from the member's own store, so a member cut
 * off from the others keeps sending them.  The stream asks for a leader
 * (Grpc-Metadata-hasleader), so etcd cancels it once the member has had no
 * leader for a few election timeouts; the client must then go stale rather
 * than stay "confirmed" by a minority member.
 */
START_TEST(minority_member_with_progress_goes_stale)
{
	hrt_etcd_opts eo = { .progress_notify_ms = 500 };
	hr_client *c;
	hr_client_status st;

	hrt_etcd_destroy(etcd);
	etcd = hrt_etcd_start(3, &eo);
	ck_assert_ptr_nonnull(etcd);
	put_node("a", "127.0.0.1:1");
	/* Only member 0: the client cannot escape to a healthy member. */
	c = open_client(url(), 0);
	ck_assert_int_eq(hrt_wait_nodes(c, 1, 5000), 0);
	hrt_sleep_ms(1500);
	hr_client_status_get(c, &st, NULL);
	ck_assert_int_eq(st.unconfirmed_ms, 0);
	hrt_log_clear(&logbuf);
	/* Members 1 and 2 freeze: member 0 loses its leader. */
	ck_assert_int_eq(hrt_etcd_freeze_member(etcd, 1), 0);
	ck_assert_int_eq(hrt_etcd_freeze_member(etcd, 2), 0);
	int64_t until = hrt_now_ms() + 15000;
	while (hrt_log_count(&logbuf, "level=warn", "event=stale", NULL) == 0 &&
	       hrt_now_ms() < until)
		hrt_sleep_ms(100);
	ck_assert_int_ge(hrt_log_count(&logbuf, "level=warn", "event=stale", NULL), 1);
	hr_client_status_get(c, &st, NULL);
	ck_assert_int_gt(st.unconfirmed_ms, 0);
	/* Ended by etcd, not by a probe: the notifications alone would
	 * have kept it "confirmed". */
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=stream_error", "no leader", NULL), 1);
	ck_assert_int_eq(hrt_etcd_thaw_member(etcd, 1), 0);
	ck_assert_int_eq(hrt_etcd_thaw_member(etcd, 2), 0);
	hrt_etcd_wait_cluster_healthy(etcd, 15000);
	put_node("b", "127.0.0.2:1");
	ck_assert_int_eq(hrt_wait_nodes(c, 2, 15000), 0);
	hr_client_close(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("watch");
	TCase *tc = tcase_create("etcd");

	tcase_add_checked_fixture(tc, up1, down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, open_errors);
	tcase_add_test(tc, first_sync_empty);
	tcase_add_test(tc, lookup_forms_agree);
	tcase_add_test(tc, first_sync_one);
	tcase_add_test(tc, maglev_client_follows_etcd);
	tcase_add_test(tc, rendezvous_client_follows_etcd);
	tcase_add_test(tc, first_sync_paged_2000);
	tcase_add_test(tc, range_read_ahead);
	tcase_add_test(tc, changes_propagate);
	tcase_add_test(tc, txn_is_one_change);
	tcase_add_test(tc, diffs_reach_the_callback);
	tcase_add_test(tc, compaction_forces_resync);
	tcase_add_test(tc, kill_and_restart);
	tcase_add_test(tc, frozen_member_goes_stale_then_recovers);
	tcase_add_test(tc, bad_records_beside_good);
	tcase_add_test(tc, three_members_lose_the_one_in_use);
	tcase_add_test(tc, cli_diff_follows_etcd);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	tcase_add_test(tc, first_ring_out_of_memory);
#endif
	tcase_add_test(tc, probes_are_jittered);
	tcase_add_test(tc, minority_member_with_progress_goes_stale);
	tcase_add_test(tc, clients_spread_over_members);
	suite_add_tcase(s, tc);
	tc = tcase_create("progress");
	tcase_add_checked_fixture(tc, up_progress, down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, progress_notifications_replace_probes);
	suite_add_tcase(s, tc);
	tc = tcase_create("callbacks");
	tcase_add_checked_fixture(tc, up1, down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, first_change_inside_open);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
