/* SPDX-License-Identifier: MIT */
/* test_register_tokens.c - registering with allocated tokens against a real
 * etcd (docs/placement.md section 16): records get their tokens, a client
 * follows their ring, a record put between the read and the transaction
 * makes the registration read and allocate again, and a node that leaves
 * hands its tokens to heirs. */
#include "etcd_fixture.h"
#include "hrt_cli.h"
#include "hrt_ring.h"
#include "hrt_check.h"
#include "etcd.h"
#include "register_tokens.h"
#include "update.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PREFIX "/tok/nodes/"

static hrt_etcd_cluster *etcd;
static hr_ring_options ropts;
static hr_etcd_config ecfg;

static void up(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hr_ring_options_init(&ropts);
	ropts.placement = HR_PLACEMENT_TOKENS;
	hr_etcd_config_init(&ecfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	ecfg.ring = &ropts;
	ecfg.log_level = HR_LOG_ERROR;
}

static void down(void)
{
	hrt_etcd_destroy(etcd);
	etcd = NULL;
}

static hr_registrar *reg_tokens(const char *id, double weight, size_t tokens)
{
	hr_registration reg;
	hr_registrar *r = NULL;
	hr_error err = { 0 };

	hr_registration_init(&reg);
	reg.id = id;
	reg.addr = "127.0.0.1:11211";
	reg.weight = weight;
	reg.state = HR_STATE_ACTIVE;
	reg.tokens = tokens;
	ck_assert_msg(hr_registrar_open(&ecfg, &reg, &r, &err) == 0, "register %s: %s", id,
		      err.message);
	return r;
}

/* Three registrations with tokens: each record holds round(W x T) of them,
 * and a client of the tokens placement builds the ring of them all. */
START_TEST(registrations_write_tokens)
{
	hr_registrar *r[3];
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_ring *ring;
	hr_error err = { 0 };
	char out[4096];

	r[0] = reg_tokens("a", 1, 8);
	r[1] = reg_tokens("b", 2, 8);
	r[2] = reg_tokens("c", 1, 8);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "b --print-value-only"), 0);
	ck_assert_msg(strstr(out, "\"tokens\":[\""), "%s", out);
	hr_client_config_init(&cfg);
	ck_assert_msg(hr_client_open(&ecfg, &cfg, &c, &err) == 0, "%s", err.message);
	ring = hr_client_ring(c);
	ck_assert_uint_eq(hr_ring_node_count(ring), 3);
	ck_assert_uint_eq(hr_ring_point_count(ring), 32);
	ck_assert_uint_eq(hr_ring_find(ring, "b")->ntokens, 16);
	hr_ring_release(ring);
	hr_client_close(c);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(hr_registrar_deregister(r[i], NULL), 0);
		hr_registrar_close(r[i]);
	}

	/* Tokens need the tokens placement. */
	{
		hr_registration reg;
		hr_registrar *x = NULL;

		ropts.placement = HR_PLACEMENT_XXH3;
		hr_registration_init(&reg);
		reg.id = "d";
		reg.addr = "127.0.0.1:1";
		reg.tokens = 8;
		ck_assert_int_eq(hr_registrar_open(&ecfg, &reg, &x, &err), HR_EINVAL);
		ck_assert_ptr_null(x);
	}
}
END_TEST

struct race {
	const char *url;
	int puts;
};

/* Another node's record lands between the first read and its put. */
static void put_between(void *userdata, int attempt)
{
	struct race *r = userdata;

	if (attempt == 1) {
		ck_assert_int_gt(hrt_put(r->url, PREFIX "late",
					 "{\"addr\":\"127.0.0.1:2\",\"tokens\":[\"1\",\"2\"]}"), 0);
		r->puts++;
	}
}

START_TEST(a_concurrent_put_forces_reallocation)
{
	hr__etcd_opts o = { .endpoints = hrt_etcd_endpoints(etcd) };
	hr__etcd *e = NULL;
	hr_node nd = { .id = "joiner", .addr = "127.0.0.1:3", .zone = "", .weight = 1 };
	struct race race = { hrt_etcd_client_url(etcd, 0), 0 };
	hr_registrar *first = reg_tokens("first", 1, 8);
	char *value = NULL, *again = NULL;
	int done = 0, attempts = 0;
	hr_error err = { 0 };
	hr__tokens_join join = { .prefix = PREFIX, .key = PREFIX "joiner", .node = &nd,
				 .ntokens = 8, .opts = &ropts, .race = put_between,
				 .userdata = &race };
	hr_ring *ring;

	ck_assert_int_eq(hr__etcd_new(&o, &e, &err), 0);
	join.etcd = e;
	ck_assert_msg(hr__register_tokens(&join, &value, &done, &attempts, &err) == 0, "%s",
		      err.message);
	ck_assert_int_eq(done, 1);
	ck_assert_int_eq(attempts, 2);
	ck_assert_int_eq(race.puts, 1);
	/* The tokens written are the ones allocated against the ring with
	 * "late" in it. */
	ring = hrt_ring_from_etcd(hrt_etcd_endpoints(etcd), PREFIX, NULL);
	ck_assert_uint_eq(hr_ring_node_count(ring), 3);
	hr_ring_release(ring);
	{
		char out[4096];
		size_t len;

		ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out,
					     "get " PREFIX "joiner --print-value-only"), 0);
		len = strlen(out);
		while (len && out[len - 1] == '\n')
			out[--len] = '\0';
		ck_assert_str_eq(out, value);
	}

	/* The key exists now: no put, the caller decides. */
	join.race = NULL;
	ck_assert_int_eq(hr__register_tokens(&join, &again, &done, &attempts, &err), 0);
	ck_assert_int_eq(done, 0);
	ck_assert_int_eq(attempts, 1);
	free(again);

	/* Under our own lease it is ours: written by an attempt whose answer
	 * was lost (a retry after a timeout). */
	{
		int64_t granted = 0;
		char put[4200];

		ck_assert_int_eq(hr__etcd_lease_grant(e, 30, &join.lease, &granted, &err), 0);
		join.lease_ttl_s = granted;
		join.renewed_ms = hrt_now_ms();
		ck_assert_int_eq(hrt_etcdctl(etcd, put, sizeof put, "put --lease=%" PRIx64 " "
					     PREFIX "joiner '%s'", (uint64_t)join.lease, value), 0);
		ck_assert_int_eq(hr__register_tokens(&join, &again, &done, &attempts, &err), 0);
		ck_assert_int_eq(done, 1);
		ck_assert_int_eq(attempts, 1);
		ck_assert_str_eq(again, value);
		free(again);
		hr__etcd_lease_revoke(e, join.lease, NULL);
	}
	free(value);
	hr__etcd_free(e);
	ck_assert_int_eq(hr_registrar_deregister(first, NULL), 0);
	hr_registrar_close(first);
}
END_TEST

/* Another node's record lands at every attempt. */
static void put_always(void *userdata, int attempt)
{
	struct race *r = userdata;
	char key[64];

	snprintf(key, sizeof key, PREFIX "busy-%d", attempt);
	ck_assert_int_gt(hrt_put(r->url, key, "{\"addr\":\"127.0.0.1:2\",\"tokens\":[\"7\"]}"), 0);
	r->puts++;
}

/* Conflicts at every attempt: retried after random waits for the budget,
 * then HR_ECONFLICT, nothing written; the lease, of a TTL shorter than
 * the budget, is renewed meanwhile. */
START_TEST(conflicts_are_retried_for_the_budget)
{
	hr__etcd_opts o = { .endpoints = hrt_etcd_endpoints(etcd) };
	hr_node nd = { .id = "joiner", .addr = "127.0.0.1:3", .zone = "", .weight = 1 };
	struct race race = { hrt_etcd_client_url(etcd, 0), 0 };
	hr__tokens_join join = { .prefix = PREFIX, .key = PREFIX "joiner", .node = &nd,
				 .ntokens = 8, .opts = &ropts, .lease_ttl_s = 2,
				 .budget_ms = 3000, .race = put_always, .userdata = &race };
	hr__etcd *e = NULL;
	hr_error err = { 0 };
	char *value = NULL, out[256];
	int done = 1, attempts = 0;
	int64_t granted = 0, ttl = 0, t0;

	ck_assert_int_eq(hr__etcd_new(&o, &e, &err), 0);
	t0 = hrt_now_ms();
	ck_assert_int_eq(hr__etcd_lease_grant(e, 2, &join.lease, &granted, &err), 0);
	join.etcd = e;
	join.renewed_ms = hrt_now_ms();
	ck_assert_int_eq(hr__register_tokens(&join, &value, &done, &attempts, &err), HR_ECONFLICT);
	ck_assert_int_ge(hrt_now_ms() - t0, 3000);
	ck_assert_int_eq(done, 0);
	ck_assert_ptr_null(value);
	ck_assert_int_gt(attempts, 2);
	ck_assert_int_eq(race.puts, attempts);
	ck_assert_msg(strstr(err.message, "the records under " PREFIX " changed at each of") &&
		      strstr(err.message, " attempts to allocate tokens, over "), "%s",
		      err.message);
	ck_assert_int_gt(join.renewed_ms, t0 + 2000);
	ck_assert_int_eq(hr__etcd_lease_ttl(e, join.lease, &ttl, &err), 0);
	ck_assert_int_gt(ttl, 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "joiner --print-value-only"),
			 0);
	ck_assert_str_eq(out, "");
	hr__etcd_lease_revoke(e, join.lease, NULL);
	hr__etcd_free(e);
}
END_TEST

/* `hashring register --placement tokens --tokens T` writes the tokens. */
START_TEST(sidecar_writes_tokens)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hrt_child ch = hrt_cli_spawn((const char *const[]){ "register", "--id", "s1",
		"--addr", "127.0.0.1:4", "--placement", "tokens", "--tokens", "4",
		"--endpoints", eps, "--prefix", PREFIX, NULL }, NULL);
	hrt_cli_run run;
	char out[4096] = "";

	for (int i = 0; i < 200; i++) {
		if (hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "s1 --print-value-only") == 0 &&
		    strstr(out, "\"tokens\""))
			break;
		usleep(50 * 1000);
	}
	ck_assert_msg(strstr(out, "\"tokens\":[\""), "%s", out);
	kill(ch.pid, SIGTERM);
	hrt_cli_wait(&ch, &run);
	ck_assert_msg(run.status == 0, "%d %s", run.status, run.err);

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "register", "--id", "s2",
		"--addr", "127.0.0.1:4", "--tokens", "4", "--endpoints", eps, NULL });
	ck_assert_int_eq(run.status, 2);
	ck_assert_ptr_nonnull(strstr(run.err, "--tokens needs --placement tokens"));
}
END_TEST

/* ---- a join burst ------------------------------------------------------------- */

#define BURST 100
#define BURST_TOKENS 16

struct joiner {
	const hr_etcd_config *etcd;
	pthread_barrier_t *start;
	char id[16];
	hr_registrar *r;
	int rc;
	hr_error err;
	int64_t done_ms;
};

static void *join(void *arg)
{
	struct joiner *j = arg;
	hr_registration reg;

	hr_registration_init(&reg);
	reg.id = j->id;
	reg.addr = "127.0.0.1:11211";
	reg.tokens = BURST_TOKENS;
	pthread_barrier_wait(j->start);
	j->rc = hr_registrar_open(j->etcd, &reg, &j->r, &j->err);
	j->done_ms = hrt_now_ms();
	return NULL;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The attempts each of n joins or hand-overs took: those logged with
 * `event` (event=tokens_reallocated, event=heirs_rechosen), 1 for the
 * others; sorted. */
static void attempts_of(hrt_log *log, const char *event, int *attempts, size_t n)
{
	size_t k = 0;

	pthread_mutex_lock(&log->mu);
	for (const char *p = log->text; p && (p = strstr(p, event)); p++) {
		const char *a = strstr(p, " attempts=");

		ck_assert_ptr_nonnull(a);
		ck_assert_uint_lt(k, n);
		attempts[k++] = atoi(a + 10);
	}
	pthread_mutex_unlock(&log->mu);
	while (k < n)
		attempts[k++] = 1;
	qsort(attempts, n, sizeof *attempts, cmp_int);
}

/* 100 nodes register with allocated tokens at once (one process, a thread
 * each, each with its own etcd connection): every one joins, and the ring
 * holds their 1,600 tokens, all distinct.  Measures the attempts each
 * join took and the time the burst took. */
START_TEST(a_burst_of_joins_succeeds)
{
	static struct joiner j[BURST];
	static pthread_t th[BURST];
	static uint64_t all[BURST * BURST_TOKENS];
	static int attempts[BURST];
	hr_etcd_config e = ecfg;
	pthread_barrier_t start;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	hrt_log log;
	int64_t t0, last = 0;
	int joined = 0;
	size_t n = 0;
	hr_ring *ring;

	hrt_log_init(&log);
	e.log = hrt_log_fn;
	e.log_userdata = &log;
	e.log_level = HR_LOG_INFO;
	ck_assert_int_eq(pthread_barrier_init(&start, NULL, BURST + 1), 0);
	for (int i = 0; i < BURST; i++) {
		j[i] = (struct joiner){ .etcd = &e, .start = &start };
		snprintf(j[i].id, sizeof j[i].id, "burst-%03d", i);
		ck_assert_int_eq(pthread_create(&th[i], NULL, join, &j[i]), 0);
	}
	pthread_barrier_wait(&start);
	t0 = hrt_now_ms();
	for (int i = 0; i < BURST; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		if (j[i].done_ms > last)
			last = j[i].done_ms;
	}
	pthread_barrier_destroy(&start);
	attempts_of(&log, "event=tokens_reallocated", attempts, BURST);
	for (int i = 0; i < BURST; i++)
		joined += j[i].rc == 0;
	fprintf(stderr, "%d joins with %d tokens at once: %d joined in %" PRId64 " ms; attempts"
		" median %d, 90th percentile %d, max %d\n", BURST, BURST_TOKENS, joined,
		last - t0, attempts[BURST / 2], attempts[BURST * 9 / 10], attempts[BURST - 1]);
	for (int i = 0; i < BURST; i++)
		ck_assert_msg(j[i].rc == 0, "%s: %s", j[i].id, j[i].err.message);

	hr_client_config_init(&cfg);
	ck_assert_msg(hr_client_open(&ecfg, &cfg, &c, &err) == 0, "%s", err.message);
	ring = hr_client_ring(c);
	ck_assert_uint_eq(hr_ring_node_count(ring), BURST);
	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		const hr_node *nd = hr_ring_node(ring, i);

		ck_assert_uint_eq(nd->ntokens, BURST_TOKENS);
		memcpy(all + n, nd->tokens, nd->ntokens * sizeof *nd->tokens);
		n += nd->ntokens;
	}
	qsort(all, n, sizeof *all, cmp_u64);
	for (size_t i = 1; i < n; i++)
		ck_assert_msg(all[i] != all[i - 1], "token %" PRIu64 " twice", all[i]);
	hr_ring_release(ring);
	hr_client_close(c);
	for (int i = 0; i < BURST; i++)
		hr_registrar_close(j[i].r);
	hrt_log_free(&log);
}
END_TEST

/* ---- leaving: heirs ------------------------------------------------------------ */

/* The hand-over's transaction holds only while every record is as read:
 * a key changed, a key deleted, or any other put under the prefix since
 * the revision makes it fail and write nothing. */
START_TEST(put_all_if_holds_only_unchanged_records)
{
	hr__etcd_opts o = { .endpoints = hrt_etcd_endpoints(etcd) };
	const char *url = hrt_etcd_client_url(etcd, 0);
	hr__etcd *e = NULL;
	int64_t ra = hrt_put(url, PREFIX "a", "1"), rb = hrt_put(url, PREFIX "b", "1"), rc2;
	hr__txn_put puts[2] = { { PREFIX "a", "2", ra, 0 }, { PREFIX "b", "2", rb, 0 } };
	hr__kv kv;
	int done = -1, found;

	ck_assert_int_eq(hr__etcd_new(&o, &e, NULL), 0);
	ck_assert_int_eq(hr__etcd_put_all_if(e, puts, 2, PREFIX, rb, &done, NULL), 0);
	ck_assert_int_eq(done, 1);
	ck_assert_int_eq(hr__etcd_get(e, PREFIX "b", &kv, &found, NULL), 0);
	ck_assert_str_eq(kv.value, "2");
	rb = kv.mod_revision;
	hr__kv_clear(&kv);

	/* a changed since it was read. */
	puts[1].expect_mod = rb;
	puts[1].value = "3";
	ck_assert_int_eq(hr__etcd_put_all_if(e, puts, 2, PREFIX, rb, &done, NULL), 0);
	ck_assert_int_eq(done, 0);
	/* Each record as read, but another was put under the prefix since. */
	ck_assert_int_eq(hr__etcd_get(e, PREFIX "a", &kv, &found, NULL), 0);
	puts[0].expect_mod = kv.mod_revision;
	hr__kv_clear(&kv);
	rc2 = hrt_put(url, PREFIX "c", "1");
	ck_assert_int_eq(hr__etcd_put_all_if(e, puts, 2, PREFIX, rb, &done, NULL), 0);
	ck_assert_int_eq(done, 0);
	/* A record deleted since. */
	ck_assert_int_gt(hrt_del(url, PREFIX "b"), 0);
	ck_assert_int_eq(hr__etcd_put_all_if(e, puts, 2, PREFIX, rc2, &done, NULL), 0);
	ck_assert_int_eq(done, 0);
	ck_assert_int_eq(hr__etcd_get(e, PREFIX "b", &kv, &found, NULL), 0);
	ck_assert_int_eq(found, 0);
	hr__kv_clear(&kv);
	ck_assert_int_eq(hr__etcd_get(e, PREFIX "a", &kv, &found, NULL), 0);
	ck_assert_str_eq(kv.value, "2");
	hr__kv_clear(&kv);
	hr__etcd_free(e);
}
END_TEST

/* The ring of the records under PREFIX now, as a tokens client builds it. */
static hr_ring *ring_now(hr__etcd *e)
{
	hr_ring *ring = NULL;
	int64_t revision;
	hr_error err = { 0 };

	ck_assert_msg(hr__records_ring(e, PREFIX, &ropts, &ring, &revision, NULL, NULL,
				       &err) == 0, "%s", err.message);
	return ring;
}

/* The write share of node `id` in `ring`. */
static double share_of(const hr_ring *ring, const char *id)
{
	double shares[16] = { 0 };
	size_t n = hr_ring_node_shares(ring, HR_VIEW_WRITE, shares, 16);

	for (size_t i = 0; i < n && i < 16; i++)
		if (!strcmp(hr_ring_node(ring, i)->id, id))
			return shares[i];
	return -1;
}

/* How many nodes of `ring` other than `self` list token `t`. */
static int listed_by_others(const hr_ring *ring, const hr_node *self, uint64_t t)
{
	int n = 0;

	for (size_t j = 0; j < hr_ring_node_count(ring); j++) {
		const hr_node *nd = hr_ring_node(ring, j);

		for (size_t i = 0; nd != self && i < nd->ntokens; i++)
			n += nd->tokens[i] == t;
	}
	return n;
}

/* Each token of `id` is listed by exactly one other node. */
static void assert_handed(const hr_ring *ring, const char *id)
{
	const hr_node *self = hr_ring_find(ring, id);

	ck_assert_uint_gt(self->ntokens, 0);
	for (size_t i = 0; i < self->ntokens; i++)
		ck_assert_int_eq(listed_by_others(ring, self, self->tokens[i]), 1);
}

static hr_record_update draining_with_heirs(void)
{
	hr_record_update upd;

	hr_record_update_init(&upd);
	upd.fields = HR_UPDATE_STATE | HR_UPDATE_HEIRS;
	upd.state = HR_STATE_DRAINING;
	return upd;
}

/* A registrar that drains with HR_UPDATE_HEIRS: its tokens are listed by
 * its heirs, whose keys keep their leases; reads stay with it, writes go
 * where they will be once it has left, and only its keys move.  An heir
 * keeps what it took through its own updates; a second hand-over (an
 * operator's, or a retry) hands nothing twice. */
START_TEST(a_leaver_hands_its_tokens_to_heirs)
{
	hr__etcd_opts o = { .endpoints = hrt_etcd_endpoints(etcd) };
	hr__etcd *e = NULL;
	hr_registrar *r[6];
	hr_ring *before, *draining, *after, *again;
	hr_record_update upd = draining_with_heirs(), weight;
	hr_error err = { 0 };
	hr_diff *diff = NULL;
	const hr_node *heir = NULL;
	char ids[6][8];
	int sum = 0;

	ck_assert_int_eq(hr__etcd_new(&o, &e, &err), 0);
	for (int i = 0; i < 6; i++) {
		snprintf(ids[i], sizeof ids[i], "n%d", i);
		r[i] = reg_tokens(ids[i], 1 + i % 2, 8);
	}
	before = ring_now(e);
	ck_assert_msg(hr_registrar_update(r[2], &upd, &err) == 0, "%s", err.message);
	draining = ring_now(e);
	ck_assert_int_eq(hr_ring_find(draining, "n2")->state, HR_STATE_DRAINING);
	assert_handed(draining, "n2");
	for (int i = 0; i < 6; i++) {
		char key[64];
		hr__kv kv;
		int found = 0;

		snprintf(key, sizeof key, PREFIX "%s", ids[i]);
		ck_assert_int_eq(hr__etcd_get(e, key, &kv, &found, NULL), 0);
		ck_assert_int_eq(found, 1);
		ck_assert_int_eq(kv.lease, hr_registrar_lease(r[i]));
		hr__kv_clear(&kv);
	}
	ck_assert(hr_ring_moved_share(before, draining, HR_VIEW_READ) == 0);

	/* An heir's own update keeps the tokens it took. */
	for (int i = 0; i < 6 && !heir; i++) {
		if (i != 2 && hr_ring_find(draining, ids[i])->ntokens >
			      hr_ring_find(before, ids[i])->ntokens) {
			heir = hr_ring_find(draining, ids[i]);
			hr_record_update_init(&weight);
			weight.fields = HR_UPDATE_WEIGHT;
			weight.weight = heir->weight;
			ck_assert_int_eq(hr_registrar_update(r[i], &weight, NULL), 0);
		}
	}
	ck_assert_ptr_nonnull(heir);
	again = ring_now(e);
	ck_assert_uint_eq(hr_ring_find(again, heir->id)->ntokens, heir->ntokens);
	hr_ring_release(again);

	/* Handed over once only: the operator's second call writes the state
	 * again and hands nothing. */
	ck_assert_msg(hr_node_update(&ecfg, "n2", &upd, &err) == 0, "%s", err.message);
	again = ring_now(e);
	assert_handed(again, "n2");
	ck_assert_uint_eq(hr_ring_point_count(again), hr_ring_point_count(draining));
	hr_ring_release(again);

	ck_assert_int_eq(hr_registrar_deregister(r[2], NULL), 0);
	after = ring_now(e);
	ck_assert_uint_eq(hr_ring_node_count(after), 5);
	ck_assert(hr_ring_moved_share(draining, after, HR_VIEW_WRITE) == 0);
	ck_assert(hr_ring_moved_share(before, after, HR_VIEW_WRITE) ==
		  share_of(before, "n2"));
	ck_assert_int_eq(hr_diff_new(before, after, HR_VIEW_WRITE, &diff, NULL), 0);
	for (size_t a = 0; a < hr_diff_arc_count(diff); a++, sum++)
		ck_assert_str_eq(hr_diff_arcs(diff)[a].old_node->id, "n2");
	ck_assert_int_gt(sum, 0);
	hr_diff_free(diff);
	hr_ring_release(before);
	hr_ring_release(draining);
	hr_ring_release(after);
	for (int i = 0; i < 6; i++)
		hr_registrar_close(r[i]);
	hr__etcd_free(e);
}
END_TEST

/* An heir that leaves in turn hands on what it took as well: the tokens
 * it took are still listed by the first leaver, draining, and must not
 * read as handed over already.  Every token ends up listed by exactly one
 * node of the write view. */
START_TEST(an_heir_that_leaves_hands_on_what_it_took)
{
	hr__etcd_opts o = { .endpoints = hrt_etcd_endpoints(etcd) };
	hr_registrar *r[4] = { reg_tokens("a", 1, 8), reg_tokens("b", 1, 8),
			       reg_tokens("c", 1, 8), reg_tokens("d", 1, 8) };
	hr_record_update upd = draining_with_heirs();
	hr__etcd *e = NULL;
	hr_error err = { 0 };
	const hr_node *heir = NULL;
	hr_ring *ring;
	int heir_at = -1, listed = 0;

	ck_assert_int_eq(hr__etcd_new(&o, &e, &err), 0);
	ck_assert_msg(hr_registrar_update(r[0], &upd, &err) == 0, "%s", err.message);
	ring = ring_now(e);
	for (int i = 1; i < 4 && !heir; i++)
		if (hr_ring_node(ring, (size_t)i)->ntokens > 8)
			heir = hr_ring_node(ring, (size_t)(heir_at = i));
	ck_assert_ptr_nonnull(heir);
	hr_ring_release(ring);
	ck_assert_msg(hr_registrar_update(r[heir_at], &upd, &err) == 0, "%s", err.message);

	ring = ring_now(e);
	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		const hr_node *nd = hr_ring_node(ring, i);

		if (nd->state == HR_STATE_DRAINING)
			continue;
		listed += (int)nd->ntokens;
	}
	ck_assert_int_eq(listed, 4 * 8);
	for (int i = 0; i < 4; i++) {
		const hr_node *nd = hr_ring_node(ring, (size_t)i);
		const uint64_t *t = nd->tokens;
		size_t k = nd->ntokens;

		for (size_t j = 0; nd->state == HR_STATE_DRAINING && j < k; j++) {
			int in_write = 0;

			for (size_t m = 0; m < hr_ring_node_count(ring); m++) {
				const hr_node *other = hr_ring_node(ring, m);
				const uint64_t *v = other->tokens;
				size_t kv = other->ntokens;

				for (size_t x = 0; other->state != HR_STATE_DRAINING && x < kv; x++)
					in_write += v[x] == t[j];
			}
			ck_assert_msg(in_write == 1, "%s's token %" PRIu64 ": %d nodes of the write"
				      " view list it", nd->id, t[j], in_write);
		}
	}
	hr_ring_release(ring);
	for (int i = 0; i < 4; i++)
		hr_registrar_close(r[i]);
	hr__etcd_free(e);
}
END_TEST

struct hand_race {
	const char *url;
	int calls;
	int puts_until;	/* put a record at attempts up to this one */
};

/* A record under the prefix changes between the read and the transaction. */
static void put_during_hand_over(void *userdata, int attempt)
{
	struct hand_race *r = userdata;
	char value[96];

	r->calls++;
	if (attempt > r->puts_until)
		return;
	snprintf(value, sizeof value, "{\"addr\":\"127.0.0.1:9\",\"tokens\":[\"%d\"]}", 1000 + attempt);
	ck_assert_int_gt(hrt_put(r->url, PREFIX "late", value), 0);
}

/* A record put meanwhile makes the hand-over read and choose again; one
 * put at every attempt ends it with HR_ECONFLICT and nothing written once
 * the budget (here 1 s) is spent. */
START_TEST(a_concurrent_put_forces_new_heirs)
{
	hr__etcd_opts o = { .endpoints = hrt_etcd_endpoints(etcd) };
	static const hr__record_writer by_operator = { .budget_ms = 1000 };
	struct hand_race race = { hrt_etcd_client_url(etcd, 0), 0, 1 };
	hr_record_update upd = draining_with_heirs();
	hr_registrar *r[3] = { reg_tokens("a", 1, 8), reg_tokens("b", 1, 8), reg_tokens("c", 1, 8) };
	hr__etcd *e = NULL;
	hr_error err = { 0 };
	char *written = NULL, want[128];
	hr_ring *ring;

	ck_assert_int_eq(hr__etcd_new(&o, &e, &err), 0);
	ck_assert_msg(hr__record_hand_over(e, PREFIX "a", "a", &ropts, &upd, &by_operator,
					   put_during_hand_over, &race, &written, &err) == 0,
		      "%s", err.message);
	ck_assert_int_eq(race.calls, 2);
	ck_assert_ptr_nonnull(strstr(written, "\"state\":\"draining\""));
	free(written);
	written = NULL;
	ring = ring_now(e);
	assert_handed(ring, "a");
	hr_ring_release(ring);

	race = (struct hand_race){ hrt_etcd_client_url(etcd, 0), 0, 100 };
	ck_assert_int_eq(hr__record_hand_over(e, PREFIX "b", "b", &ropts, &upd, &by_operator,
					      put_during_hand_over, &race, &written, &err),
			 HR_ECONFLICT);
	ck_assert_int_gt(race.calls, 2);
	ck_assert_ptr_null(written);
	snprintf(want, sizeof want, "node \"b\": the records changed at each of %d attempts to"
		 " hand its tokens over, over ", race.calls);
	ck_assert_msg(!strncmp(err.message, want, strlen(want)), "%s", err.message);
	ring = ring_now(e);
	ck_assert_int_eq(hr_ring_find(ring, "b")->state, HR_STATE_ACTIVE);
	hr_ring_release(ring);
	for (int i = 0; i < 3; i++)
		hr_registrar_close(r[i]);
	hr__etcd_free(e);
}
END_TEST

START_TEST(heirs_refuse_bad_input)
{
	hr_record_update upd = draining_with_heirs();
	hr_registrar *a = reg_tokens("a", 1, 4);
	hr_error err = { 0 };

	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), PREFIX "bare",
				 "{\"addr\":\"127.0.0.1:2\"}"), 0);
	upd.state = HR_STATE_ACTIVE;
	ck_assert_int_eq(hr_node_update(&ecfg, "a", &upd, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_record_update: HR_UPDATE_HEIRS needs the state draining");
	upd = draining_with_heirs();
	ck_assert_int_eq(hr_node_update(&ecfg, "bare", &upd, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "node \"bare\" has no tokens to hand over");
	/* a's only possible heir, bare, has no tokens to list them in. */
	ck_assert_int_eq(hr_node_update(&ecfg, "a", &upd, &err), HR_EINVAL);
	ck_assert_str_eq(err.message,
			 "node \"a\": no other node of the write view has tokens and room for more");
	ck_assert_int_eq(hr_node_update(&ecfg, "absent", &upd, &err), HR_ENOTFOUND);
	ropts.placement = HR_PLACEMENT_XXH3;
	ck_assert_int_eq(hr_node_update(&ecfg, "a", &upd, &err), HR_EINVAL);
	ck_assert_str_eq(err.message,
			 "node \"a\": heirs take tokens, which need the tokens placement");
	ropts.placement = HR_PLACEMENT_TOKENS;
	/* Nothing was written: a is still active. */
	{
		hr_ring *ring = hrt_ring_from_etcd(hrt_etcd_endpoints(etcd), PREFIX, NULL);

		ck_assert_int_eq(hr_ring_find(ring, "a")->state, HR_STATE_ACTIVE);
		hr_ring_release(ring);
	}
	hr_registrar_close(a);
}
END_TEST

/* The sidecar hands its tokens over on SIGTERM; `hashring state --heirs`
 * goes with draining only. */
START_TEST(sidecar_hands_tokens_over)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	hr_registrar *keep = reg_tokens("keep", 1, 4);
	hrt_child ch = hrt_cli_spawn((const char *const[]){ "register", "--id", "s1",
		"--addr", "127.0.0.1:4", "--placement", "tokens", "--tokens", "4",
		"--endpoints", eps, "--prefix", PREFIX, NULL }, NULL);
	hrt_cli_run run;
	char out[4096] = "";
	hr_ring *ring;

	for (int i = 0; i < 200; i++) {
		if (hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "s1 --print-value-only") == 0 &&
		    strstr(out, "\"tokens\""))
			break;
		usleep(50 * 1000);
	}
	kill(ch.pid, SIGTERM);
	hrt_cli_wait(&ch, &run);
	ck_assert_msg(run.status == 0, "%d %s", run.status, run.err);
	ck_assert_msg(strstr(run.out, "tokens handed to heirs\n"), "%s", run.out);
	ring = hrt_ring_from_etcd(eps, PREFIX, NULL);
	ck_assert_uint_eq(hr_ring_node_count(ring), 1);
	hr_ring_release(ring);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "keep --print-value-only"), 0);
	{
		int quotes = 0;

		for (const char *p = strstr(out, "\"tokens\""); p && *p && *p != ']'; p++)
			quotes += *p == '"';
		ck_assert_msg(quotes == 2 + 2 * 8, "%s", out);	/* its 4 and s1's 4 */
	}

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "state", "--id", "keep", "active",
		"--heirs", "--endpoints", eps, "--prefix", PREFIX, NULL });
	ck_assert_int_eq(run.status, 2);
	ck_assert_ptr_nonnull(strstr(run.err, "--heirs goes with draining"));
	hr_registrar_close(keep);
}
END_TEST

/* ---- a leave burst ------------------------------------------------------------ */

#define LEAVE_RING 80
#define LEAVE_BURST 40
#define LEAVE_TOKENS 8

struct leaver {
	hr_registrar *r;
	pthread_barrier_t *start;
	int rc;
	hr_error err;
	int64_t done_ms;
};

static void *leave(void *arg)
{
	struct leaver *l = arg;
	hr_record_update upd = draining_with_heirs();

	pthread_barrier_wait(l->start);
	l->rc = hr_registrar_update(l->r, &upd, &l->err);
	l->done_ms = hrt_now_ms();
	return NULL;
}

/* 80 nodes with tokens; 40 of them drain with heirs at once (a thread
 * each, each registrar with its own etcd connection): every hand-over
 * succeeds, and the 40 nodes still active list the ring's 640 tokens,
 * each exactly once.  Measures the attempts each hand-over took and the
 * time the burst took. */
START_TEST(a_burst_of_leaves_hands_every_token_over_once)
{
	static struct leaver l[LEAVE_BURST];
	static pthread_t th[LEAVE_BURST];
	static hr_registrar *r[LEAVE_RING];
	static uint64_t before[LEAVE_RING * LEAVE_TOKENS], after[LEAVE_RING * LEAVE_TOKENS];
	static int attempts[LEAVE_BURST];
	hr__etcd_opts o = { .endpoints = hrt_etcd_endpoints(etcd) };
	hr__etcd *e = NULL;
	pthread_barrier_t start;
	hr_error err = { 0 };
	hrt_log log;
	int64_t t0, last = 0;
	int handed = 0;
	size_t nb = 0, na = 0;
	hr_ring *ring;

	hrt_log_init(&log);
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &log;
	ecfg.log_level = HR_LOG_INFO;
	for (int i = 0; i < LEAVE_RING; i++) {
		char id[16];

		snprintf(id, sizeof id, "ring-%03d", i);
		r[i] = reg_tokens(id, 1, LEAVE_TOKENS);
	}
	ck_assert_int_eq(hr__etcd_new(&o, &e, &err), 0);
	ring = ring_now(e);
	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		const uint64_t *t = hr_ring_node(ring, i)->tokens;
		size_t k = hr_ring_node(ring, i)->ntokens;

		memcpy(before + nb, t, k * sizeof *t);
		nb += k;
	}
	hr_ring_release(ring);
	ck_assert_uint_eq(nb, LEAVE_RING * LEAVE_TOKENS);
	qsort(before, nb, sizeof *before, cmp_u64);

	ck_assert_int_eq(pthread_barrier_init(&start, NULL, LEAVE_BURST + 1), 0);
	for (int i = 0; i < LEAVE_BURST; i++) {
		/* Every other node leaves: heirs are spread around the ring. */
		l[i] = (struct leaver){ .r = r[2 * i], .start = &start };
		ck_assert_int_eq(pthread_create(&th[i], NULL, leave, &l[i]), 0);
	}
	pthread_barrier_wait(&start);
	t0 = hrt_now_ms();
	for (int i = 0; i < LEAVE_BURST; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		if (l[i].done_ms > last)
			last = l[i].done_ms;
	}
	pthread_barrier_destroy(&start);
	attempts_of(&log, "event=heirs_rechosen", attempts, LEAVE_BURST);
	for (int i = 0; i < LEAVE_BURST; i++)
		handed += l[i].rc == 0;
	fprintf(stderr, "%d of %d nodes with %d tokens hand over at once: %d handed over in %"
		PRId64 " ms; attempts median %d, 90th percentile %d, max %d\n", LEAVE_BURST,
		LEAVE_RING, LEAVE_TOKENS, handed, last - t0, attempts[LEAVE_BURST / 2],
		attempts[LEAVE_BURST * 9 / 10], attempts[LEAVE_BURST - 1]);
	for (int i = 0; i < LEAVE_BURST; i++)
		ck_assert_msg(l[i].rc == 0, "ring-%03d: %s", 2 * i, l[i].err.message);

	/* The active nodes list every token once: none lost, none twice. */
	ring = ring_now(e);
	ck_assert_uint_eq(hr_ring_node_count(ring), LEAVE_RING);
	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		const hr_node *nd = hr_ring_node(ring, i);
		const uint64_t *t = nd->tokens;
		size_t k = nd->ntokens;

		ck_assert_int_eq(nd->state, i % 2 ? HR_STATE_ACTIVE : HR_STATE_DRAINING);
		if (nd->state != HR_STATE_ACTIVE)
			continue;
		ck_assert_uint_le(na + k, LEAVE_RING * LEAVE_TOKENS);
		memcpy(after + na, t, k * sizeof *t);
		na += k;
	}
	hr_ring_release(ring);
	qsort(after, na, sizeof *after, cmp_u64);
	ck_assert_uint_eq(na, nb);
	for (size_t i = 0; i < na; i++)
		ck_assert_msg(after[i] == before[i], "token %" PRIu64 " lost or listed twice",
			      before[i]);
	for (int i = 0; i < LEAVE_RING; i++)
		hr_registrar_close(r[i]);
	hr__etcd_free(e);
	hrt_log_free(&log);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("register_tokens");
	TCase *tc = tcase_create("tokens");

	tcase_add_checked_fixture(tc, up, down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, registrations_write_tokens);
	tcase_add_test(tc, a_concurrent_put_forces_reallocation);
	tcase_add_test(tc, sidecar_writes_tokens);
	tcase_add_test(tc, put_all_if_holds_only_unchanged_records);
	tcase_add_test(tc, a_leaver_hands_its_tokens_to_heirs);
	tcase_add_test(tc, a_concurrent_put_forces_new_heirs);
	tcase_add_test(tc, an_heir_that_leaves_hands_on_what_it_took);
	tcase_add_test(tc, heirs_refuse_bad_input);
	tcase_add_test(tc, sidecar_hands_tokens_over);
	tcase_add_test(tc, conflicts_are_retried_for_the_budget);
	tcase_add_test(tc, a_burst_of_joins_succeeds);
	tcase_add_test(tc, a_burst_of_leaves_hands_every_token_over_once);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
