/* SPDX-License-Identifier: MIT */
/*
 * test_acks.c - acknowledged epochs against a real etcd: a client announces
 * its ring after a change, coalesces a burst, leaves by its lease when
 * killed, conflicting digests fail a wait, waits succeed and time out, and
 * bad input is refused with exact messages (library and CLI).
 */
#define _GNU_SOURCE
#include "etcd_fixture.h"
#include "hrt_check.h"
#include "hrt_cli.h"
#include "hrt_ring.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PREFIX "/t/nodes/"
#define ACKS "/t/acks/"

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
	ecfg.log_level = HR_LOG_DEBUG;
}

static void down(void)
{
	hrt_etcd_destroy(etcd);
	etcd = NULL;
	hrt_log_free(&logbuf);
}

static int64_t put_node(const char *id, const char *addr)
{
	char key[256];
	int64_t rev;

	snprintf(key, sizeof key, PREFIX "%s", id);
	rev = hrt_put(hrt_etcd_client_url(etcd, 0), key, addr);
	ck_assert_int_gt(rev, 0);
	return rev;
}

/* A client acknowledging as `id` every `interval_ms` at most, with
 * `vnodes` points per weight (0: the default). */
static hr_client *acking_client(const char *id, int interval_ms, unsigned vnodes)
{
	hr_etcd_config e = ecfg;
	hr_ring_options opts;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };

	hr_ring_options_init(&opts);
	opts.vnodes_per_weight = vnodes;
	e.ring = &opts;
	hr_client_config_init(&cfg);
	cfg.ack_client_id = id;
	cfg.ack_prefix = ACKS;
	if (interval_ms)
		cfg.ack_interval_ms = interval_ms;
	ck_assert_msg(hr_client_open(&e, &cfg, &c, &err) == 0, "open: %s", err.message);
	return c;
}

/* The ack of `id` in `acks`, or NULL. */
static const hr_ack *find_ack(const hr_acks *acks, const char *id)
{
	for (size_t i = 0; i < hr_acks_count(acks); i++)
		if (!strcmp(hr_acks_get(acks, i)->client_id, id))
			return hr_acks_get(acks, i);
	return NULL;
}

/* Polls until `id` acknowledges at least `revision` (0: anything); returns
 * its revision, or 0 after `timeout_ms`. */
static uint64_t wait_ack(const char *id, uint64_t revision, int timeout_ms)
{
	int64_t end = hrt_now_ms() + timeout_ms;

	do {
		hr_acks *acks = NULL;
		hr_error err = { 0 };
		const hr_ack *a;
		uint64_t got = 0;

		ck_assert_msg(hr_acks_new(&ecfg, ACKS, &acks, &err) == 0, "%s", err.message);
		a = find_ack(acks, id);
		if (a && a->revision >= revision)
			got = a->revision;
		hr_acks_free(acks);
		if (got)
			return got;
		hrt_sleep_ms(2);
	} while (hrt_now_ms() < end);
	return 0;
}

/* How many times the key of `id`'s ack was put since it was created
 * (etcd's per-key version); 0 when it does not exist. */
static long ack_puts(const char *id)
{
	char out[4096];
	const char *v;

	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " ACKS "%s -w json", id), 0);
	v = strstr(out, "\"version\":");
	return v ? strtol(v + 10, NULL, 10) : 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* A change is acknowledged with the ring's revision and digest; the ack
 * goes at close.  Measures the time from a put to its ack being readable. */
START_TEST(announces_after_a_put)
{
	enum { N = 100 };
	int64_t lat[N];
	hr_client *c;
	hr_acks *acks = NULL;
	hr_error err = { 0 };
	const hr_ack *a;
	int64_t rev;

	put_node("a", "127.0.0.1:1");
	c = acking_client("web-1", 50, 0);
	rev = put_node("b", "127.0.0.1:2");
	ck_assert_int_eq(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev, 5000, &acks, &err), 0);
	ck_assert_uint_eq(hr_acks_count(acks), 1);
	a = hr_acks_get(acks, 0);
	ck_assert_str_eq(a->client_id, "web-1");
	ck_assert_uint_eq(a->revision, (uint64_t)rev);
	{
		hr_client_status st;

		hr_client_status_get(c, &st, NULL);
		ck_assert_uint_eq(a->digest, st.digest);
	}
	ck_assert_uint_eq(a->lag, 0);
	ck_assert_uint_eq(hr_acks_ring_revision(acks), (uint64_t)rev);
	ck_assert_str_eq(a->version, hr_version());
	ck_assert_int_ne(a->lease, 0);
	ck_assert_int_eq(a->conflict, 0);
	ck_assert_ptr_null(hr_acks_get(acks, 1));
	hr_acks_free(acks);

	/* A put that changes nothing in the ring moves the ack too: a wait
	 * for its revision must end. */
	rev = put_node("b", "127.0.0.1:2");
	ck_assert_int_eq(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev, 5000, NULL, &err), 0);

	/* Put to readable ack, one change at a time. */
	for (int i = 0; i < N; i++) {
		char addr[32];
		int64_t t0;

		hrt_sleep_ms(60); /* past ack_interval_ms: each ack on its own */
		snprintf(addr, sizeof addr, "127.0.0.1:%d", 100 + i);
		t0 = hrt_now_ms();
		rev = put_node("c", addr);
		ck_assert_uint_eq(wait_ack("web-1", (uint64_t)rev, 5000), (uint64_t)rev);
		lat[i] = hrt_now_ms() - t0;
	}
	qsort(lat, N, sizeof lat[0], cmp_i64);
	fprintf(stderr, "ack latency over %d puts: p50=%" PRId64 " ms p99=%" PRId64
		" ms max=%" PRId64 " ms\n", N, lat[N / 2], lat[N * 99 / 100], lat[N - 1]);
	ck_assert_int_lt(lat[N * 99 / 100], 2000);

	/* Closing revokes the lease: the ack is gone at once. */
	hr_client_close(c);
	ck_assert_int_eq(hr_acks_new(&ecfg, ACKS, &acks, &err), 0);
	ck_assert_uint_eq(hr_acks_count(acks), 0);
	hr_acks_free(acks);
}
END_TEST

/* 200 puts in a burst: one ack put, or a few, at most one per interval,
 * the last one with the burst's last revision. */
START_TEST(coalesces_a_burst)
{
	hr_client *c;
	hr_error err = { 0 };
	int64_t t0, t1, t2, rev = 0;
	long before, nputs, bound;

	c = acking_client("web-1", 0, 0);
	ck_assert_uint_ne(wait_ack("web-1", 0, 5000), 0);
	hrt_sleep_ms(300);
	before = ack_puts("web-1");
	t0 = hrt_now_ms();
	for (int i = 0; i < 200; i++) {
		char id[16];

		snprintf(id, sizeof id, "n%03d", i);
		rev = put_node(id, "127.0.0.1:1");
	}
	t1 = hrt_now_ms();
	ck_assert_int_eq(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev, 5000, NULL, &err), 0);
	t2 = hrt_now_ms();
	hrt_sleep_ms(600); /* any put still to come */
	nputs = ack_puts("web-1") - before;
	/* One per 250 ms while rings come (until the client has the last
	 * one, at t2 at the latest: a slow client may lag the puts), and the
	 * last one after them. */
	bound = 2 + (t2 - t0) / 250;
	fprintf(stderr, "burst of 200 puts over %" PRId64 " ms, acknowledged after %" PRId64
		" ms: %ld ack puts (bound %ld)\n", t1 - t0, t2 - t0, nputs, bound);
	ck_assert_int_ge(nputs, 1);
	ck_assert_int_le(nputs, bound);
	ck_assert_uint_eq(wait_ack("web-1", 0, 1000), (uint64_t)rev);

	/* A stream of changes 10 ms apart for 2 s, each its own ring: one
	 * ack per 250 ms while it lasts, and no more. */
	before = ack_puts("web-1");
	t0 = hrt_now_ms();
	for (int i = 0; i < 200; i++) {
		char addr[32];

		snprintf(addr, sizeof addr, "127.0.0.1:%d", 1000 + i);
		rev = put_node("n000", addr);
		hrt_sleep_ms(10);
	}
	t1 = hrt_now_ms();
	ck_assert_int_eq(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev, 5000, NULL, &err), 0);
	t2 = hrt_now_ms();
	hrt_sleep_ms(600);
	nputs = ack_puts("web-1") - before;
	bound = 2 + (t2 - t0) / 250;
	fprintf(stderr, "stream of 200 puts over %" PRId64 " ms, acknowledged after %" PRId64
		" ms: %ld ack puts (bound %ld)\n", t1 - t0, t2 - t0, nputs, bound);
	ck_assert_int_ge(nputs, (t1 - t0) / 250 / 2);
	ck_assert_int_le(nputs, bound);
	ck_assert_uint_eq(wait_ack("web-1", 0, 1000), (uint64_t)rev);
	hr_client_close(c);
}
END_TEST

/* A `hashring watch --client-id` killed with SIGKILL blocks a wait until
 * its lease expires, then stops counting. */
START_TEST(killed_client_leaves_by_its_lease)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hrt_child ch;
	hrt_cli_run run;
	hr_client *c;
	hr_acks *acks = NULL;
	hr_error err = { 0 };
	char want[HR_ERROR_MSG_MAX];
	uint64_t dead_rev;
	int64_t rev, killed, waited;

	put_node("a", "127.0.0.1:1");
	ch = hrt_cli_spawn((const char *const[]){ "watch", "--endpoints", eps, "--prefix", PREFIX,
				"--client-id", "doomed", "--ack-prefix", ACKS, "--ack-ttl", "4",
				"--log-level", "warn", NULL }, NULL);
	c = acking_client("alive", 0, 0);
	dead_rev = wait_ack("doomed", 0, 10000);
	ck_assert_uint_ne(dead_rev, 0);
	ck_assert_int_eq(kill(ch.pid, SIGKILL), 0);
	killed = hrt_now_ms();
	hrt_cli_wait(&ch, &run);
	ck_assert_int_eq(run.signal, SIGKILL);

	rev = put_node("b", "127.0.0.1:2");
	ck_assert_uint_eq(wait_ack("alive", (uint64_t)rev, 5000), (uint64_t)rev);
	ck_assert_int_eq(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev, 300, &acks, &err), HR_ETIMEDOUT);
	snprintf(want, sizeof want, "1 of 2 clients below revision %" PRId64 " after 300 ms:"
		 " \"doomed\" at %" PRIu64, rev, dead_rev);
	ck_assert_str_eq(err.message, want);
	ck_assert_uint_eq(hr_acks_count(acks), 2);
	hr_acks_free(acks);

	ck_assert_int_eq(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev, 10000, &acks, &err), 0);
	waited = hrt_now_ms() - killed;
	fprintf(stderr, "killed client left %" PRId64 " ms after SIGKILL (TTL 4 s)\n", waited);
	ck_assert_int_le(waited, 4000 + 2000);
	ck_assert_uint_eq(hr_acks_count(acks), 1);
	ck_assert_str_eq(hr_acks_get(acks, 0)->client_id, "alive");
	hr_acks_free(acks);
	hr_client_close(c);
}
END_TEST

/* Two clients with other ring options at one revision: a conflict, named,
 * that fails the wait at once. */
START_TEST(conflicting_digests_fail_the_wait)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hr_client *a, *b;
	hr_acks *acks = NULL;
	hr_error err = { 0 };
	hrt_cli_run run;
	char want[HR_ERROR_MSG_MAX], r[32];
	uint64_t da, db;
	int64_t rev, t0;

	put_node("a", "127.0.0.1:1");
	a = acking_client("a-100", 0, 100);
	b = acking_client("b-200", 0, 200);
	rev = put_node("b", "127.0.0.1:2");
	ck_assert_uint_eq(wait_ack("a-100", (uint64_t)rev, 5000), (uint64_t)rev);
	ck_assert_uint_eq(wait_ack("b-200", (uint64_t)rev, 5000), (uint64_t)rev);
	t0 = hrt_now_ms();
	ck_assert_int_eq(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev, 5000, &acks, &err), HR_ECONFLICT);
	ck_assert_int_lt(hrt_now_ms() - t0, 1000);
	da = find_ack(acks, "a-100")->digest;
	db = find_ack(acks, "b-200")->digest;
	ck_assert_uint_ne(da, db);
	ck_assert_int_eq(find_ack(acks, "a-100")->conflict, 1);
	ck_assert_int_eq(find_ack(acks, "b-200")->conflict, 1);
	snprintf(want, sizeof want, "clients \"a-100\" (digest %016" PRIx64 ") and \"b-200\""
		 " (digest %016" PRIx64 ") report different rings at revision %" PRId64 ": they"
		 " watch different data or use different ring options", da, db, rev);
	ck_assert_str_eq(err.message, want);
	ck_assert_int_eq(err.code, HR_ECONFLICT);
	ck_assert_str_eq(hr_strerror(HR_ECONFLICT), "clients disagree on the ring at one revision");
	hr_acks_free(acks);

	snprintf(r, sizeof r, "%" PRId64, rev);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps, "--prefix",
			PREFIX, "--ack-prefix", ACKS, "--wait-revision", r, NULL });
	ck_assert_msg(run.status == 1, "exit %d: %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.err, "hashring: acks: clients \"a-100\""));
	ck_assert_ptr_nonnull(strstr(run.out, "conflict"));
	hr_client_close(a);
	hr_client_close(b);
}
END_TEST

/* The CLI's list and wait: success, a timeout naming who is behind. */
START_TEST(cli_lists_and_waits)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hr_client *c;
	hr_error err = { 0 };
	hrt_cli_run run;
	char r[32], future[32], want[HR_ERROR_MSG_MAX];
	int64_t rev;

	put_node("a", "127.0.0.1:1");
	c = acking_client("web-1", 0, 0);
	rev = put_node("b", "127.0.0.1:2");
	ck_assert_uint_eq(wait_ack("web-1", (uint64_t)rev, 5000), (uint64_t)rev);
	snprintf(r, sizeof r, "%" PRId64, rev);
	snprintf(future, sizeof future, "%" PRId64, rev + 1000);

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps, "--prefix",
			PREFIX, "--ack-prefix", ACKS, "--wait-revision", r, "--timeout", "5", NULL });
	ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.out, "CLIENT"));
	ck_assert_ptr_nonnull(strstr(run.out, "web-1"));
	ck_assert_ptr_nonnull(strstr(run.out, "current"));
	snprintf(want, sizeof want, "# 1 clients, newest record revision %" PRId64 "\n", rev);
	ck_assert_msg(strstr(run.out, want), "%s", run.out);

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps, "--prefix",
			PREFIX, "--ack-prefix", ACKS, "--json", NULL });
	ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
	snprintf(want, sizeof want, "{\"client\":\"web-1\",\"revision\":%" PRId64 ",", rev);
	ck_assert_msg(!strncmp(run.out, want, strlen(want)), "%s", run.out);
	ck_assert_ptr_nonnull(strstr(run.out, "\"lag\":0,\"status\":\"current\",\"version\":\""
				     HR_VERSION_STRING "\""));

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps, "--prefix",
			PREFIX, "--ack-prefix", ACKS, "--wait-revision", future, "--timeout", "1",
			NULL });
	ck_assert_int_eq(run.status, 1);
	snprintf(want, sizeof want, "hashring: acks: 1 of 1 clients below revision %" PRId64
		 " after 1000 ms: \"web-1\" at %" PRId64 "\n", rev + 1000, rev);
	ck_assert_str_eq(run.err, want);
	ck_assert_ptr_nonnull(strstr(run.out, "behind"));

	/* The same wait through the library. */
	ck_assert_int_eq(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev + 1000, 0, NULL, &err),
			 HR_ETIMEDOUT);
	snprintf(want, sizeof want, "1 of 1 clients below revision %" PRId64 " after 0 ms:"
		 " \"web-1\" at %" PRId64, rev + 1000, rev);
	ck_assert_str_eq(err.message, want);
	hr_client_close(c);

	/* Nobody left: the wait succeeds, with a warning. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps, "--prefix",
			PREFIX, "--ack-prefix", ACKS, "--wait-revision", r, NULL });
	ck_assert_int_eq(run.status, 0);
	ck_assert_str_eq(run.err, "hashring: acks: warning: no live client acknowledges under"
			 " '" ACKS "': nothing to wait for\n");
}
END_TEST

/* Bad input, with exact messages; a foreign value under the ack prefix is
 * left out and logged. */
START_TEST(bad_input_is_refused)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hr_etcd_config e = ecfg;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_acks *acks = NULL;
	hr_error err = { 0 };
	hrt_cli_run run;

	hr_client_config_init(&cfg);
	cfg.ack_client_id = "";
	cfg.ack_prefix = ACKS;
	ck_assert_int_eq(hr_client_open(&e, &cfg, &c, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: ack client id is empty");
	ck_assert_ptr_null(c);

	/* Acks inside the ring's prefix would be node records (bad ones). */
	cfg.ack_client_id = "web-1";
	cfg.ack_prefix = PREFIX "acks/";
	ck_assert_int_eq(hr_client_open(&e, &cfg, &c, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: the ring prefix \"" PREFIX "\" contains"
			 " the ack prefix \"" PREFIX "acks/\": acks would be read as node records;"
			 " use a prefix of its own");
	cfg.ack_prefix = "/t/";
	ck_assert_int_eq(hr_client_open(&e, &cfg, &c, &err), HR_EINVAL);
	ck_assert_int_eq(hr_acks_new(&e, "/t/", &acks, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "the ack prefix \"/t/\" contains the ring prefix \"" PREFIX
			 "\": node records would be read as acks; use a prefix of its own");
	ck_assert_ptr_null(acks);
	ck_assert_int_eq(hr_acks_new(&e, "", &acks, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "ack prefix must be set and not empty");
	ck_assert_int_eq(hr_acks_new(&e, ACKS, NULL, &err), HR_EINVAL);

	ck_assert_int_eq(hr_acks_wait(&e, ACKS, 0, 100, &acks, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "revision 0 is not an etcd revision (1..9223372036854775807)");
	ck_assert_int_eq(hr_acks_wait(&e, ACKS, UINT64_MAX, 100, &acks, &err), HR_EINVAL);
	ck_assert_int_eq(hr_acks_wait(&e, ACKS, 1, -1, &acks, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "timeout_ms must be >= 0 (is -1)");
	ck_assert_ptr_null(acks);

	/* One id, two clients: the second does not open, the first's ack
	 * stays. */
	c = acking_client("twin", 0, 0);
	{
		hr_client *c2 = NULL;

		cfg.ack_client_id = "twin";
		cfg.ack_prefix = ACKS;
		ck_assert_int_eq(hr_client_open(&e, &cfg, &c2, &err), HR_EEXIST);
		ck_assert_ptr_null(c2);
		ck_assert_msg(strstr(err.message, ACKS "twin is held by lease ") &&
			      strstr(err.message, "another client uses the id \"twin\"; not"
				     " overwriting it"), "%s", err.message);
		ck_assert_int_eq(hrt_log_count(&logbuf, "level=error", "event=ack_id_taken",
					       "client=twin", NULL), 1);
	}
	ck_assert_int_eq(hr_acks_new(&e, ACKS, &acks, &err), 0);
	ck_assert_uint_eq(hr_acks_count(acks), 1);
	hr_acks_free(acks);
	hr_client_close(c);
	c = NULL;

	/* Not an ack: no lease, bad JSON, another client's name. */
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), ACKS "static",
				 "{\"client\":\"static\"}"), 0);
	ck_assert_int_eq(hr_acks_new(&e, ACKS, &acks, &err), 0);
	ck_assert_uint_eq(hr_acks_count(acks), 0);
	hr_acks_free(acks);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=bad_ack", "key=" ACKS "static",
				       "msg=\"not attached to a lease\"", NULL), 1);

	/* The CLI. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "watch", "--endpoints", eps, "--prefix",
			PREFIX, "--client-id", "", NULL });
	ck_assert_int_eq(run.status, 2);
	ck_assert_ptr_nonnull(strstr(run.err, "hashring: watch: --client-id: empty value, expected ID"));
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "watch", "--endpoints", eps, "--prefix",
			PREFIX, "--ack-prefix", ACKS, NULL });
	ck_assert_int_eq(run.status, 2);
	ck_assert_ptr_nonnull(strstr(run.err, "hashring: watch: --ack-prefix needs --client-id:"
				     " the id the acks are written under"));
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "watch", "--endpoints", eps, "--prefix",
			PREFIX, "--client-id", "web-1", "--ack-prefix", PREFIX "acks/", NULL });
	ck_assert_int_eq(run.status, 2);
	ck_assert_ptr_nonnull(strstr(run.err, "hashring: watch: --prefix " PREFIX " contains"
				     " --ack-prefix " PREFIX "acks/: acks would be read as node"
				     " records"));
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps, "--prefix",
			PREFIX, "--ack-prefix", PREFIX, NULL });
	ck_assert_int_eq(run.status, 2);
	ck_assert_ptr_nonnull(strstr(run.err, "hashring: acks: --ack-prefix " PREFIX " is also"
				     " --prefix " PREFIX ": "));
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps,
			"--wait-revision", "0", NULL });
	ck_assert_int_eq(run.status, 2);
	ck_assert_ptr_nonnull(strstr(run.err, "hashring: acks: --wait-revision: 0 is too small (at least 1)"));
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps,
			"--wait-revision", "12x", NULL });
	ck_assert_int_eq(run.status, 2);
	ck_assert_ptr_nonnull(strstr(run.err, "hashring: acks: --wait-revision: '12x' is not a whole number"));
}
END_TEST

/* Occurrences of `needle` in `s`. */
static int occurrences(const char *s, const char *needle)
{
	int n = 0;

	for (; (s = strstr(s, needle)); s++)
		n++;
	return n;
}

/* A value under the ack prefix that is not an ack is logged once per
 * listing or wait, however often a wait reads it (library and CLI); one
 * put again is news, logged again.  A revision above 2^53 is not an ack. */
START_TEST(bad_ack_logged_once_per_wait)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hr_client *c;
	hr_error err = { 0 };
	hrt_cli_run run;
	char future[32];
	int64_t rev;

	put_node("a", "127.0.0.1:1");
	c = acking_client("behind", 0, 0);
	rev = put_node("b", "127.0.0.1:2");
	ck_assert_uint_eq(wait_ack("behind", (uint64_t)rev, 5000), (uint64_t)rev);
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), ACKS "static",
				 "{\"client\":\"static\"}"), 0);
	snprintf(future, sizeof future, "%" PRId64, rev + 1000);
	hrt_log_clear(&logbuf);
	/* Every 100 ms: ten readings. */
	ck_assert_int_eq(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev + 1000, 1000, NULL, &err),
			 HR_ETIMEDOUT);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=bad_ack", "key=" ACKS "static", NULL), 1);

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps, "--prefix",
			PREFIX, "--ack-prefix", ACKS, "--wait-revision", future, "--timeout", "1",
			NULL });
	ck_assert_int_eq(run.status, 1);
	ck_assert_msg(occurrences(run.err, "event=bad_ack") == 1, "%s", run.err);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "acks", "--endpoints", eps, "--prefix",
			PREFIX, "--ack-prefix", ACKS, NULL });
	ck_assert_int_eq(run.status, 0);
	ck_assert_msg(occurrences(run.err, "event=bad_ack") == 1, "%s", run.err);

	/* A value put during the wait is logged when it comes. */
	hrt_log_clear(&logbuf);
	{
		hr_acks *acks = NULL;
		char lease_put[512];
		int64_t lease;

		ck_assert_int_eq(hrt_etcdctl(etcd, lease_put, sizeof lease_put, "lease grant 30"), 0);
		lease = (int64_t)strtoull(lease_put + strlen("lease "), NULL, 16);
		ck_assert_int_gt(lease, 0);
		ck_assert_int_eq(hrt_etcdctl(etcd, lease_put, sizeof lease_put,
					     "put --lease=%" PRIx64 " " ACKS "huge '{\"client\":\"huge\","
					     "\"revision\":9007199254740993,\"digest\":\"0000000000000001\","
					     "\"version\":\"1\",\"time\":\"1970-01-01T00:00:01.000Z\"}'",
					     (uint64_t)lease), 0);
		ck_assert_int_eq(hr_acks_wait(&ecfg, ACKS, (uint64_t)rev + 1000, 300, &acks, &err),
				 HR_ETIMEDOUT);
		ck_assert_uint_eq(hr_acks_count(acks), 1);
		hr_acks_free(acks);
		ck_assert_int_eq(hrt_log_count(&logbuf, "event=bad_ack", "key=" ACKS "huge",
					       "is above 2^53", NULL), 1);
		ck_assert_int_eq(hrt_log_count(&logbuf, "event=bad_ack", NULL), 2);
	}
	hr_client_close(c);
}
END_TEST

/* The lease of `id`'s ack, in hex as messages write it. */
static void ack_lease_hex(const char *id, char *hex, size_t len)
{
	hr_acks *acks = NULL;
	hr_error err = { 0 };
	const hr_ack *a;

	ck_assert_msg(hr_acks_new(&ecfg, ACKS, &acks, &err) == 0, "%s", err.message);
	a = find_ack(acks, id);
	ck_assert_ptr_nonnull(a);
	snprintf(hex, len, "%016" PRIx64, (uint64_t)a->lease);
	hr_acks_free(acks);
}

/* The `failures=N` of the last line holding every needle. */
static int last_failures(const char *needle)
{
	const char *p, *last = NULL;
	int n = -1;

	pthread_mutex_lock(&logbuf.mu);
	for (p = logbuf.text; p && (p = strstr(p, needle)); p++)
		last = p;
	if (last) {
		const char *eol = strchr(last, '\n'), *f = strstr(last, " failures=");

		if (f && (!eol || f < eol))
			n = atoi(f + 10);
	}
	pthread_mutex_unlock(&logbuf.mu);
	return n;
}

/* An id another live client holds, opened without blocking: the wait for
 * the first sync fails as a blocking open does, naming the holder's lease;
 * the client keeps trying, each line counting the attempts so far (its
 * lease renewals in between do not start the count again), and acks once
 * the holder is gone. */
START_TEST(taken_id_fails_the_wait_and_counts)
{
	hr_etcd_config e = ecfg;
	hr_client_config cfg;
	hr_client *holder, *c = NULL;
	hr_error err = { 0 };
	char lease[32];
	int lines;

	put_node("a", "127.0.0.1:1");
	holder = acking_client("twin", 0, 0);
	ack_lease_hex("twin", lease, sizeof lease);
	hr_client_config_init(&cfg);
	cfg.ack_client_id = "twin";
	cfg.ack_prefix = ACKS;
	cfg.ack_ttl_s = 3;
	cfg.open_nonblocking = 1;
	ck_assert_int_eq(hr_client_open(&e, &cfg, &c, &err), 0);
	ck_assert_int_eq(hr_client_wait_synced(c, 10000, &err), HR_EEXIST);
	ck_assert_msg(strstr(err.message, ACKS "twin is held by lease ") &&
		      strstr(err.message, lease), "%s (lease %s)", err.message, lease);
	/* It routes meanwhile. */
	ck_assert_int_eq(hrt_wait_nodes(c, 1, 5000), 0);

	/* Attempts after 0.5, 1, 2 and 4 s: the second line, 5 s after the
	 * first, counts all of them (renewals every second in between). */
	lines = hrt_log_wait(&logbuf, 2, 15000, 50, "event=ack_id_taken", "client=twin", NULL);
	ck_assert_int_ge(lines, 2);
	ck_assert_msg(last_failures("event=ack_id_taken") >= 4, "failures=%d",
		      last_failures("event=ack_id_taken"));

	/* The holder leaves: the id is free, the client acks. */
	hr_client_close(holder);
	ck_assert_uint_ne(wait_ack("twin", 0, 10000), 0);
	ck_assert_int_eq(hr_client_wait_synced(c, 0, &err), 0);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=ack_recovered", "client=twin", NULL), 1);
	hr_client_close(c);
}
END_TEST

/* `watch` and `serve` with an id another live client holds: exit 1 naming
 * the holder's lease, before printing any ring. */
START_TEST(cli_refuses_a_taken_id)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hr_client *holder;
	hrt_cli_run run;
	char lease[32];

	put_node("a", "127.0.0.1:1");
	holder = acking_client("twin", 0, 0);
	ack_lease_hex("twin", lease, sizeof lease);

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "watch", "--endpoints", eps, "--prefix",
			PREFIX, "--client-id", "twin", "--ack-prefix", ACKS, "--log-level", "warn",
			NULL });
	ck_assert_msg(run.status == 1, "exit %d: %s", run.status, run.err);
	ck_assert_str_eq(run.out, "");
	ck_assert_msg(strstr(run.err, "hashring: watch: " ACKS "twin is held by lease ") &&
		      strstr(run.err, lease), "%s", run.err);

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "serve", "--listen", "127.0.0.1:0",
			"--endpoints", eps, "--prefix", PREFIX, "--client-id", "twin",
			"--ack-prefix", ACKS, "--log-level", "warn", NULL });
	ck_assert_msg(run.status == 1, "exit %d: %s", run.status, run.err);
	ck_assert_msg(strstr(run.err, "hashring: serve: " ACKS "twin is held by lease ") &&
		      strstr(run.err, lease), "%s", run.err);
	hr_client_close(holder);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("acks");
	TCase *tc = tcase_create("acks");

	tcase_add_checked_fixture(tc, up, down);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, announces_after_a_put);
	tcase_add_test(tc, coalesces_a_burst);
	tcase_add_test(tc, killed_client_leaves_by_its_lease);
	tcase_add_test(tc, conflicting_digests_fail_the_wait);
	tcase_add_test(tc, cli_lists_and_waits);
	tcase_add_test(tc, bad_input_is_refused);
	tcase_add_test(tc, bad_ack_logged_once_per_wait);
	tcase_add_test(tc, taken_id_fails_the_wait_and_counts);
	tcase_add_test(tc, cli_refuses_a_taken_id);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
