/* test_register_tokens.c - registering with allocated tokens against a real
 * etcd (docs/placement.md section 16): records get their tokens, a client
 * follows their ring, and a record put between the read and the
 * transaction makes the registration read and allocate again. */
#include "etcd_fixture.h"
#include "hrt_cli.h"
#include "hrt_ring.h"
#include "hrt_check.h"
#include "etcd.h"
#include "register_tokens.h"

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
	ck_assert_msg(hr_register(&ecfg, &reg, &r, &err) == 0, "register %s: %s", id,
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
	ring = hr_client_acquire(c);
	ck_assert_uint_eq(hr_ring_node_count(ring), 3);
	ck_assert_uint_eq(hr_ring_point_count(ring), 32);
	ck_assert_uint_eq(hr_ring_node_tokens(ring, hr_ring_find(ring, "b"), NULL), 16);
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
		ck_assert_int_eq(hr_register(&ecfg, &reg, &x, &err), HR_EINVAL);
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
	hr_ring *ring;

	ck_assert_int_eq(hr__etcd_new(&o, &e, &err), 0);
	ck_assert_msg(hr__register_tokens(e, PREFIX, PREFIX "joiner", &nd, 8, &ropts, 0,
					  put_between, &race, &value, &done, &attempts,
					  &err) == 0, "%s", err.message);
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
	ck_assert_int_eq(hr__register_tokens(e, PREFIX, PREFIX "joiner", &nd, 8, &ropts, 0,
					     NULL, NULL, &again, &done, &attempts, &err), 0);
	ck_assert_int_eq(done, 0);
	ck_assert_int_eq(attempts, 1);
	free(again);
	free(value);
	hr__etcd_free(e);
	ck_assert_int_eq(hr_registrar_deregister(first, NULL), 0);
	hr_registrar_close(first);
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

int main(void)
{
	Suite *s = suite_create("register_tokens");
	TCase *tc = tcase_create("tokens");

	tcase_add_checked_fixture(tc, up, down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, registrations_write_tokens);
	tcase_add_test(tc, a_concurrent_put_forces_reallocation);
	tcase_add_test(tc, sidecar_writes_tokens);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
