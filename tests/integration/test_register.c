/* test_register.c - joining the cluster under a lease, against a real etcd:
 * the API and the `hashring register` sidecar, crashes, clean exits, lost
 * leases, operators' edits, duplicate ids. */
#include "etcd_fixture.h"
#include "hrt_ring.h"
#include "hrt_check.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PREFIX "/ring/nodes/"

static hrt_etcd_cluster *etcd;
static hrt_log logbuf;
static hr_config cfg;

static void up(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hrt_log_init(&logbuf);
	hr_config_init(&cfg);
	cfg.endpoints = hrt_etcd_endpoints(etcd);
	cfg.prefix = PREFIX;
	cfg.log = hrt_log_fn;
	cfg.log_userdata = &logbuf;
	cfg.log_level = HR_LOG_DEBUG;
	cfg.probe_interval_ms = 1000;
	cfg.backoff_max_ms = 500;
}

static void down(void)
{
	hrt_etcd_destroy(etcd);
	etcd = NULL;
	hrt_log_free(&logbuf);
}

static hr_client *watcher(void)
{
	hr_client *c = NULL;
	hr_error err = { 0 };

	ck_assert_msg(hr_client_open(&cfg, &c, &err) == 0, "open: %s", err.message);
	return c;
}

static hr_registrar *reg_node(const char *id, int ttl, hr_state state)
{
	hr_registration reg;
	hr_registrar *r = NULL;
	hr_error err = { 0 };

	hr_registration_init(&reg);
	reg.id = id;
	reg.addr = "10.0.0.1:11211";
	reg.zone = "z1";
	reg.ttl_s = ttl;
	reg.state = state;
	ck_assert_msg(hr_register(&cfg, &reg, &r, &err) == 0, "register: %s", err.message);
	return r;
}

static void get_key(const char *id, char *out, size_t len)
{
	ck_assert_int_eq(hrt_etcdctl(etcd, out, len, "get " PREFIX "%s -w json", id), 0);
}

START_TEST(register_state_weight_deregister)
{
	hr_client *c = watcher();
	hr_registrar *r = reg_node("n1", 10, HR_STATE_WARMING);
	hr_error err = { 0 };
	char out[2048];
	hr_ring *ring;

	/* In etcd as soon as hr_register returns: one round trip. */
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "n1 --print-value-only"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"state\":\"warming\""));
	ck_assert_ptr_nonnull(strstr(out, "\"addr\":\"10.0.0.1:11211\""));
	ck_assert_int_eq(hrt_wait_state(c, "n1", HR_STATE_WARMING, 5000), 0);

	ck_assert_int_eq(hr_registrar_set_state(r, HR_STATE_ACTIVE, &err), 0);
	ck_assert_int_eq(hrt_wait_state(c, "n1", HR_STATE_ACTIVE, 5000), 0);
	ck_assert_int_eq(hr_registrar_set_weight(r, 2.5, &err), 0);
	hrt_sleep_ms(300);
	ring = hr_client_acquire(c);
	ck_assert_double_eq(hr_ring_find(ring, "n1")->weight, 2.5);
	ck_assert_str_eq(hr_ring_find(ring, "n1")->zone, "z1");
	hr_ring_release(ring);
	/* Still attached to the same lease. */
	get_key("n1", out, sizeof out);
	char want[64];
	snprintf(want, sizeof want, "\"lease\":%lld", (long long)hr_registrar_lease(r));
	ck_assert_ptr_nonnull(strstr(out, want));

	ck_assert_int_eq(hr_registrar_set_weight(r, -1, &err), HR_EINVAL);
	ck_assert_int_eq(hr_registrar_set_state(r, (hr_state)9, &err), HR_EINVAL);

	int64_t t0 = hrt_now_ms();
	ck_assert_int_eq(hr_registrar_deregister(r, &err), 0);
	ck_assert_int_eq(hrt_wait_state(c, "n1", -1, 5000), 0);
	ck_assert_int_lt(hrt_now_ms() - t0, 1000);
	ck_assert_int_eq(hr_registrar_deregister(r, &err), 0);
	ck_assert_int_eq(hr_registrar_set_state(r, HR_STATE_ACTIVE, &err), HR_ECLOSED);
	hr_registrar_close(r);
	hr_registrar_close(NULL);
	hr_client_close(c);
}
END_TEST

START_TEST(duplicate_id_and_replace)
{
	hr_registration reg;
	hr_registrar *r1 = reg_node("dup", 10, HR_STATE_ACTIVE), *r2 = NULL;
	hr_error err = { 0 };

	hr_registration_init(&reg);
	reg.id = "dup";
	reg.addr = "10.0.0.2:1";
	ck_assert_int_eq(hr_register(&cfg, &reg, &r2, &err), HR_EEXIST);
	ck_assert_ptr_null(r2);
	ck_assert_ptr_nonnull(strstr(err.message, "already registered"));
	ck_assert_ptr_nonnull(strstr(err.message, "dup"));
	/* A static record put by hand is protected as well. */
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), PREFIX "static", "10.0.0.3:1"), 0);
	reg.id = "static";
	ck_assert_int_eq(hr_register(&cfg, &reg, &r2, &err), HR_EEXIST);
	/* replace takes it over explicitly. */
	reg.id = "dup";
	reg.replace = 1;
	ck_assert_int_eq(hr_register(&cfg, &reg, &r2, &err), 0);
	char out[1024];
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "dup --print-value-only"), 0);
	ck_assert_ptr_nonnull(strstr(out, "10.0.0.2:1"));
	hr_registrar_close(r2);
	hr_registrar_close(r1);

	/* Bad registrations. */
	hr_registration_init(&reg);
	ck_assert_int_eq(hr_register(&cfg, &reg, &r2, &err), HR_EINVAL);
	reg.id = "a/b";
	reg.addr = "x:1";
	ck_assert_int_eq(hr_register(&cfg, &reg, &r2, &err), HR_EINVAL);
	reg.id = "ok";
	reg.ttl_s = 1;
	ck_assert_int_eq(hr_register(&cfg, &reg, &r2, &err), HR_EINVAL);
	reg.ttl_s = 10;
	reg.weight = 0;
	ck_assert_int_eq(hr_register(&cfg, &reg, &r2, &err), HR_EINVAL);
	ck_assert_int_eq(hr_register(NULL, &reg, &r2, &err), HR_EINVAL);
}
END_TEST

START_TEST(operator_edits_are_kept_and_lease_reattached)
{
	hr_registrar *r = reg_node("op", 3, HR_STATE_WARMING);
	hr_client *c = watcher();
	hr_error err = { 0 };
	char out[2048], want[64];

	/* A plain etcdctl put: new value, and the key loses its lease. */
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out,
				     "put " PREFIX "op '{\"addr\":\"10.0.0.1:11211\",\"state\":\"active\",\"note\":\"by hand\"}'"), 0);
	ck_assert_int_eq(hrt_wait_state(c, "op", HR_STATE_ACTIVE, 5000), 0);
	/* Within a renewal period the lease is attached again, value kept. */
	snprintf(want, sizeof want, "\"lease\":%lld", (long long)hr_registrar_lease(r));
	for (int i = 0; i < 40; i++) {
		get_key("op", out, sizeof out);
		if (strstr(out, want))
			break;
		hrt_sleep_ms(100);
	}
	ck_assert_ptr_nonnull(strstr(out, want));
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=lease_reattached", "id=op", NULL), 1);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=record_adopted", "id=op", NULL), 1);
	ck_assert_int_eq(hrt_node_state(c, "op"), HR_STATE_ACTIVE);

	/* The registrar's own change starts from the operator's value. */
	ck_assert_int_eq(hr_registrar_set_state(r, HR_STATE_DRAINING, &err), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "op --print-value-only"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"note\":\"by hand\""));
	ck_assert_ptr_nonnull(strstr(out, "\"state\":\"draining\""));

	/* In-place changes by id, from another process's point of view. */
	int adopted = hrt_log_count(&logbuf, "event=record_adopted", "id=op", NULL);
	ck_assert_int_eq(hr_node_set_state(&cfg, "op", HR_STATE_ACTIVE, &err), 0);
	ck_assert_int_eq(hr_node_set_weight(&cfg, "op", 3, &err), 0);
	get_key("op", out, sizeof out);
	ck_assert_ptr_nonnull(strstr(out, want));
	ck_assert_int_eq(hrt_wait_state(c, "op", HR_STATE_ACTIVE, 5000), 0);
	ck_assert_int_eq(hr_node_set_state(&cfg, "nosuch", HR_STATE_ACTIVE, &err), HR_ENOTFOUND);
	ck_assert_int_eq(hr_node_set_weight(&cfg, "op", 0, &err), HR_EINVAL);

	/* The registrar adopts them at its next renewal (TTL/3 = 1 s). */
	for (int i = 0; i < 40 && hrt_log_count(&logbuf, "event=record_adopted", "id=op", NULL) == adopted; i++)
		hrt_sleep_ms(100);
	ck_assert_int_gt(hrt_log_count(&logbuf, "event=record_adopted", "id=op", NULL), adopted);

	/* Revoked by someone: registered again under a new lease. */
	int64_t old = hr_registrar_lease(r);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "lease revoke %llx", (unsigned long long)old), 0);
	for (int i = 0; i < 50 && hr_registrar_lease(r) == old; i++)
		hrt_sleep_ms(100);
	ck_assert_int_ne(hr_registrar_lease(r), old);
	ck_assert_int_eq(hrt_wait_state(c, "op", HR_STATE_ACTIVE, 5000), 0);
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=lease_lost", "id=op", NULL), 1);
	hr_registrar_close(r);
	ck_assert_int_eq(hrt_wait_state(c, "op", -1, 5000), 0);
	hr_client_close(c);
}
END_TEST

START_TEST(etcd_restored_empty_reregisters)
{
	hr_registrar *r = reg_node("rr", 3, HR_STATE_ACTIVE);
	int64_t old = hr_registrar_lease(r);
	char out[1024];

	/* A brand-new cluster: the lease and the key are gone. */
	ck_assert_int_eq(hrt_etcd_wipe_and_restart(etcd), 0);
	for (int i = 0; i < 100 && hr_registrar_lease(r) == old; i++)
		hrt_sleep_ms(100);
	ck_assert_int_ne(hr_registrar_lease(r), old);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "rr --print-value-only"), 0);
	ck_assert_ptr_nonnull(strstr(out, "10.0.0.1:11211"));
	hr_registrar_close(r);
}
END_TEST

/* Starts `hashring register` as a child; returns its PID once registered. */
static pid_t start_sidecar(const char *id, const char *ttl, const char *drain)
{
	char endpoints[512];
	pid_t pid;

	snprintf(endpoints, sizeof endpoints, "%s", hrt_etcd_endpoints(etcd));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl(HR_CLI_PATH, "hashring", "register", "--endpoints", endpoints,
		      "--prefix", PREFIX, "--id", id, "--addr", "10.0.0.9:1", "--state", "active",
		      "--ttl", ttl, "--drain-seconds", drain, "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
	return pid;
}

START_TEST(sidecar_kill9_sigterm_drain)
{
	hr_client *c = watcher();
	int status;
	pid_t pid;

	/* kill -9: the node is gone within TTL + 1 s. */
	pid = start_sidecar("s1", "2", "0");
	ck_assert_int_eq(hrt_wait_state(c, "s1", HR_STATE_ACTIVE, 5000), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	int64_t t0 = hrt_now_ms();
	ck_assert_int_eq(hrt_wait_state(c, "s1", -1, 6000), 0);
	int64_t gone_ms = hrt_now_ms() - t0;
	fprintf(stderr, "kill -9: node gone after %lld ms (TTL 2 s)\n", (long long)gone_ms);
	ck_assert_int_le(gone_ms, 3000);

	/* SIGTERM: gone at once, exit 0. */
	pid = start_sidecar("s2", "10", "0");
	ck_assert_int_eq(hrt_wait_state(c, "s2", HR_STATE_ACTIVE, 5000), 0);
	kill(pid, SIGTERM);
	t0 = hrt_now_ms();
	ck_assert_int_eq(hrt_wait_state(c, "s2", -1, 3000), 0);
	ck_assert_int_lt(hrt_now_ms() - t0, 1000);
	waitpid(pid, &status, 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* --drain-seconds: draining first, then gone. */
	pid = start_sidecar("s3", "10", "1");
	ck_assert_int_eq(hrt_wait_state(c, "s3", HR_STATE_ACTIVE, 5000), 0);
	kill(pid, SIGINT);
	ck_assert_int_eq(hrt_wait_state(c, "s3", HR_STATE_DRAINING, 3000), 0);
	ck_assert_int_eq(hrt_wait_state(c, "s3", -1, 4000), 0);
	waitpid(pid, &status, 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	hr_client_close(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("register");
	TCase *tc = tcase_create("etcd");

	tcase_add_checked_fixture(tc, up, down);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, register_state_weight_deregister);
	tcase_add_test(tc, duplicate_id_and_replace);
	tcase_add_test(tc, operator_edits_are_kept_and_lease_reattached);
	tcase_add_test(tc, etcd_restored_empty_reregisters);
	tcase_add_test(tc, sidecar_kill9_sigterm_drain);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
