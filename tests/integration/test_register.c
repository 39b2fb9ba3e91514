/* SPDX-License-Identifier: MIT */
/* test_register.c - joining the cluster under a lease, against a real etcd:
 * the API and the `hashring register` sidecar, crashes, clean exits, lost
 * leases, operators' edits, duplicate ids. */
#include "etcd_fixture.h"
#include "hrt_cli.h"
#include "hrt_ring.h"
#include "hrt_check.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PREFIX "/ring/nodes/"

static hrt_etcd_cluster *etcd;
static hrt_log logbuf;
static hr_etcd_config ecfg;
static hr_client_config cfg;

/* The changes of a record the tests make. */
#define STATE(s) (&(hr_record_update){ .size = sizeof(hr_record_update), \
				       .fields = HR_UPDATE_STATE, .state = (s) })
#define WEIGHT(w) (&(hr_record_update){ .size = sizeof(hr_record_update), \
					.fields = HR_UPDATE_WEIGHT, .weight = (w) })

static void up(void)
{
	etcd = hrt_etcd_start(1, NULL);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hrt_log_init(&logbuf);
	hr_etcd_config_init(&ecfg);
	hr_client_config_init(&cfg);
	ecfg.endpoints = hrt_etcd_endpoints(etcd);
	ecfg.prefix = PREFIX;
	ecfg.log = hrt_log_fn;
	ecfg.log_userdata = &logbuf;
	ecfg.log_level = HR_LOG_DEBUG;
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

	ck_assert_msg(hr_client_open(&ecfg, &cfg, &c, &err) == 0, "open: %s", err.message);
	return c;
}

static hr_registrar *reg_node(const char *id, int ttl, hr_state state)
{
	hr_registration reg;
	hr_registrar *r = NULL;
	hr_error err = { 0 };

	hr_registration_init(&reg);
	reg.id = id;
	reg.addr = "127.0.0.1:11211";
	reg.zone = "z1";
	reg.ttl_s = ttl;
	reg.state = state;
	ck_assert_msg(hr_registrar_open(&ecfg, &reg, &r, &err) == 0, "register: %s", err.message);
	return r;
}

static void get_key(const char *id, char *out, size_t len)
{
	ck_assert_int_eq(hrt_etcdctl(etcd, out, len, "get " PREFIX "%s -w json", id), 0);
}

/* The lease node `id`'s key is attached to (0: none), -1 if it is absent;
 * its value into `value` (may be NULL). */
static int64_t key_lease(const char *id, char *value, size_t len)
{
	char out[2048];
	const char *p;

	get_key(id, out, sizeof out);
	if (!strstr(out, "\"kvs\""))
		return -1;
	if (value)
		ck_assert_int_eq(hrt_etcdctl(etcd, value, len, "get " PREFIX "%s --print-value-only",
					     id), 0);
	/* etcdctl prints it as a bare JSON number: read it as an integer. */
	p = strstr(out, "\"lease\":");
	return p ? strtoll(p + 8, NULL, 10) : 0;
}

/* A lease id as etcdctl prints it, in `buf` (17 bytes). */
static const char *hex(int64_t lease, char *buf)
{
	snprintf(buf, 17, "%016llx", (unsigned long long)lease);
	return buf;
}

/* The sum of the `failures=N` fields of the log lines holding `needle`. */
static int sum_failures(hrt_log *l, const char *needle)
{
	int sum = 0;

	pthread_mutex_lock(&l->mu);
	for (const char *line = l->text; line && *line;) {
		const char *end = strchr(line, '\n'), *f;
		size_t n = end ? (size_t)(end - line) : strlen(line);
		char copy[1100];

		snprintf(copy, sizeof copy, "%.*s", (int)n, line);
		if (strstr(copy, needle) && (f = strstr(copy, " failures=")))
			sum += atoi(f + 10);
		line += n + (end != NULL);
	}
	pthread_mutex_unlock(&l->mu);
	return sum;
}

START_TEST(register_state_weight_deregister)
{
	hr_client *c = watcher();
	hr_registrar *r = reg_node("n1", 10, HR_STATE_WARMING);
	hr_error err = { 0 };
	char out[2048];
	hr_ring *ring;

	/* In etcd as soon as hr_registrar_open returns: one round trip. */
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "n1 --print-value-only"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"state\":\"warming\""));
	ck_assert_ptr_nonnull(strstr(out, "\"addr\":\"127.0.0.1:11211\""));
	ck_assert_int_eq(hrt_wait_state(c, "n1", HR_STATE_WARMING, 5000), 0);

	ck_assert_int_eq(hr_registrar_update(r, STATE(HR_STATE_ACTIVE), &err), 0);
	ck_assert_int_eq(hrt_wait_state(c, "n1", HR_STATE_ACTIVE, 5000), 0);
	ck_assert_int_eq(hr_registrar_update(r, WEIGHT(2.5), &err), 0);
	hrt_sleep_ms(300);
	ring = hr_client_ring(c);
	ck_assert_double_eq(hr_ring_find(ring, "n1")->weight, 2.5);
	ck_assert_str_eq(hr_ring_find(ring, "n1")->zone, "z1");
	hr_ring_release(ring);
	/* Still attached to the same lease, logged in etcdctl's hex. */
	ck_assert_int_eq(key_lease("n1", NULL, 0), hr_registrar_lease(r));
	char want[64], h[17];
	snprintf(want, sizeof want, "lease=%s", hex(hr_registrar_lease(r), h));
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=registered", "id=n1", want, NULL), 1);
	ck_assert_int_eq(hr_registrar_status(r, &err), 0);

	ck_assert_int_eq(hr_registrar_update(r, WEIGHT(-1), &err), HR_EINVAL);
	ck_assert_int_eq(hr_registrar_update(r, STATE((hr_state)9), &err), HR_EINVAL);

	int64_t t0 = hrt_now_ms();
	ck_assert_int_eq(hr_registrar_deregister(r, &err), 0);
	ck_assert_int_eq(hrt_wait_state(c, "n1", -1, 5000), 0);
	ck_assert_int_lt(hrt_now_ms() - t0, 1000);
	ck_assert_int_eq(hr_registrar_deregister(r, &err), 0);
	ck_assert_int_eq(hr_registrar_update(r, STATE(HR_STATE_ACTIVE), &err), HR_ECLOSED);
	ck_assert_int_eq(hr_registrar_status(r, &err), HR_ECLOSED);
	ck_assert_int_eq(hr_registrar_lease(r), 0);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=deregistered", "id=n1", want, NULL), 1);
	hr_registrar_close(r);
	hr_registrar_close(NULL);
	ck_assert_int_eq(hr_registrar_status(NULL, &err), HR_EINVAL);
	hr_client_close(c);
}
END_TEST

START_TEST(duplicate_id_and_replace)
{
	hr_registration reg;
	hr_registrar *r1 = reg_node("dup", 10, HR_STATE_ACTIVE), *r2 = NULL;
	hr_error err = { 0 };
	hr_etcd_config bad = ecfg;

	hr_registration_init(&reg);
	reg.id = "dup";
	reg.addr = "127.0.0.2:1";
	ck_assert_int_eq(hr_registrar_open(&ecfg, &reg, &r2, &err), HR_EEXIST);
	ck_assert_ptr_null(r2);
	ck_assert_ptr_nonnull(strstr(err.message, "already registered"));
	ck_assert_ptr_nonnull(strstr(err.message, "dup"));
	/* The holder's lease as etcdctl prints it; the way out for both
	 * audiences. */
	char h[17];
	ck_assert_ptr_nonnull(strstr(err.message, hex(hr_registrar_lease(r1), h)));
	ck_assert_ptr_nonnull(strstr(err.message, "replace (hashring register --replace)"));
	/* A static record put by hand is protected as well. */
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), PREFIX "static", "127.0.0.3:1"), 0);
	reg.id = "static";
	ck_assert_int_eq(hr_registrar_open(&ecfg, &reg, &r2, &err), HR_EEXIST);
	ck_assert_ptr_nonnull(strstr(err.message, "no lease: a static record"));
	/* replace takes it over explicitly. */
	reg.id = "dup";
	reg.replace = 1;
	ck_assert_int_eq(hr_registrar_open(&ecfg, &reg, &r2, &err), 0);
	char out[1024];
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "dup --print-value-only"), 0);
	ck_assert_ptr_nonnull(strstr(out, "127.0.0.2:1"));
	hr_registrar_close(r2);
	hr_registrar_close(r1);

	/* Bad registrations. */
	hr_registration_init(&reg);
	ck_assert_int_eq(hr_registrar_open(&ecfg, &reg, &r2, &err), HR_EINVAL);
	reg.id = "a/b";
	reg.addr = "x:1";
	ck_assert_int_eq(hr_registrar_open(&ecfg, &reg, &r2, &err), HR_EINVAL);
	reg.id = "ok";
	reg.ttl_s = 1;
	ck_assert_int_eq(hr_registrar_open(&ecfg, &reg, &r2, &err), HR_EINVAL);
	reg.ttl_s = 10;
	reg.weight = 0;
	ck_assert_int_eq(hr_registrar_open(&ecfg, &reg, &r2, &err), HR_EINVAL);
	ck_assert_int_eq(hr_registrar_open(NULL, &reg, &r2, &err), HR_EINVAL);

	/* Settings a client refuses are refused here too, with its message. */
	reg.weight = 1;
	bad.request_timeout_ms = 0;
	ck_assert_int_eq(hr_registrar_open(&bad, &reg, &r2, &err), HR_EINVAL);
	ck_assert_ptr_null(r2);
	ck_assert_str_eq(err.message, "hr_etcd_config: request_timeout_ms must be > 0 (is 0)");
	bad = ecfg;
	bad.log_level = (hr_log_level)9;
	ck_assert_int_eq(hr_registrar_open(&bad, &reg, &r2, &err), HR_EINVAL);
	ck_assert_int_eq(hr_node_update(&bad, "dup", STATE(HR_STATE_DRAINING), &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "log_level"));
	ck_assert_int_eq(key_lease("ok", NULL, 0), -1);
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
				     "put " PREFIX "op '{\"addr\":\"127.0.0.1:11211\",\"state\":\"active\",\"note\":\"by hand\"}'"), 0);
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
	ck_assert_int_eq(hr_registrar_update(r, STATE(HR_STATE_DRAINING), &err), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "get " PREFIX "op --print-value-only"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"note\":\"by hand\""));
	ck_assert_ptr_nonnull(strstr(out, "\"state\":\"draining\""));

	/* In-place changes by id, from another process's point of view. */
	int adopted = hrt_log_count(&logbuf, "event=record_adopted", "id=op", NULL);
	ck_assert_int_eq(hr_node_update(&ecfg, "op", STATE(HR_STATE_ACTIVE), &err), 0);
	ck_assert_int_eq(hr_node_update(&ecfg, "op", WEIGHT(3), &err), 0);
	get_key("op", out, sizeof out);
	ck_assert_ptr_nonnull(strstr(out, want));
	ck_assert_int_eq(hrt_wait_state(c, "op", HR_STATE_ACTIVE, 5000), 0);
	ck_assert_int_eq(hr_node_update(&ecfg, "nosuch", STATE(HR_STATE_ACTIVE), &err), HR_ENOTFOUND);
	ck_assert_int_eq(hr_node_update(&ecfg, "op", WEIGHT(0), &err), HR_EINVAL);

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
	ck_assert_ptr_nonnull(strstr(out, "127.0.0.1:11211"));
	hr_registrar_close(r);
}
END_TEST

/* The two fighting registrars: O registered, N takes the id over
 * with replace.  O must notice, stop, say so, and leave N's key alone. */
START_TEST(replaced_registrar_stops_and_leaves_the_key)
{
	hr_registration reg;
	hr_registrar *o = reg_node("svc", 3, HR_STATE_ACTIVE), *n = NULL;
	hr_error err = { 0 };
	char value[1024], ho[17], hn[17], want[128];
	int64_t lo = hr_registrar_lease(o), ln, t0, noticed;

	ck_assert_int_eq(hr_registrar_status(o, &err), 0);
	hr_registration_init(&reg);
	reg.id = "svc";
	reg.addr = "127.0.0.2:2";
	reg.state = HR_STATE_ACTIVE;
	reg.ttl_s = 3;
	reg.replace = 1;
	ck_assert_msg(hr_registrar_open(&ecfg, &reg, &n, &err) == 0, "replace: %s", err.message);
	ln = hr_registrar_lease(n);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=replaced", "id=svc", NULL), 1);

	/* O notices at its next renewal, TTL/3 = 1 s. */
	t0 = hrt_now_ms();
	while (hr_registrar_status(o, &err) == 0 && hrt_now_ms() - t0 < 6000)
		hrt_sleep_ms(20);
	noticed = hrt_now_ms() - t0;
	fprintf(stderr, "replaced registrar noticed the loss after %lld ms (TTL 3 s)\n",
		(long long)noticed);
	ck_assert_int_eq(hr_registrar_status(o, &err), HR_EEXIST);
	ck_assert_int_le(noticed, 3000);
	ck_assert_int_eq(err.code, HR_EEXIST);
	ck_assert_ptr_nonnull(strstr(err.message, "another process took node \"svc\" over"));
	ck_assert_ptr_nonnull(strstr(err.message, hex(ln, hn)));
	ck_assert_int_eq(hr_registrar_lease(o), 0);
	snprintf(want, sizeof want, "holder_lease=%s", hn);
	ck_assert_int_eq(hrt_log_count(&logbuf, "level=error", "event=registration_lost", "id=svc",
				       hex(lo, ho), want, NULL), 1);

	/* It never writes the key again. */
	ck_assert_int_eq(hr_registrar_update(o, STATE(HR_STATE_DRAINING), &err), HR_EEXIST);
	ck_assert_ptr_nonnull(strstr(err.message, hn));
	ck_assert_int_eq(hr_registrar_update(o, WEIGHT(2), &err), HR_EEXIST);

	/* For more than two renewal intervals neither fights the other. */
	hrt_sleep_ms(2500);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=registration_lost", NULL), 1);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=lease_reattached", NULL), 0);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=record_adopted", NULL), 0);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=record_restored", NULL), 0);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=lease_lost", NULL), 0);
	ck_assert_int_eq(key_lease("svc", value, sizeof value), ln);
	ck_assert_ptr_nonnull(strstr(value, "127.0.0.2:2"));
	ck_assert_int_eq(hr_registrar_status(n, &err), 0);

	/* Closing O revokes its own lease only: N's key stays. */
	hr_registrar_close(o);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=deregistered", ho, NULL), 1);
	ck_assert_int_eq(key_lease("svc", value, sizeof value), ln);
	ck_assert_ptr_nonnull(strstr(value, "127.0.0.2:2"));

	/* N keeps renewing: past its TTL the key is still there, untouched. */
	hrt_sleep_ms(3500);
	ck_assert_int_eq(key_lease("svc", value, sizeof value), ln);
	ck_assert_ptr_nonnull(strstr(value, "127.0.0.2:2"));
	ck_assert_int_eq(hr_registrar_status(n, &err), 0);
	ck_assert_int_eq(hr_registrar_lease(n), ln);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=lease_reattached", NULL), 0);
	hr_registrar_close(n);
	ck_assert_int_eq(key_lease("svc", NULL, 0), -1);
}
END_TEST

/* What on_lost saw, written on the registrar's thread. */
struct lost {
	hr_registrar *r;           /* atomic: set once registered */
	int calls;                 /* atomic */
	int same, code, status, deregistered;
	char msg[HR_ERROR_MSG_MAX];
};

/* Deregisters from the callback, as the header allows. */
static void on_lost(void *ud, hr_registrar *r, const hr_error *why)
{
	struct lost *l = ud;
	hr_error err = { 0 };

	l->same = r == __atomic_load_n(&l->r, __ATOMIC_ACQUIRE);
	l->code = why->code;
	snprintf(l->msg, sizeof l->msg, "%s", why->message);
	l->status = hr_registrar_status(r, &err);
	l->deregistered = hr_registrar_deregister(r, &err);
	__atomic_add_fetch(&l->calls, 1, __ATOMIC_RELEASE);
}

/* A registrar whose id is taken over calls its on_lost once, with the
 * error hr_registrar_status() gives; one closed without a loss never. */
START_TEST(lost_registration_calls_on_lost_once)
{
	struct lost l = { 0 }, kept = { 0 };
	hr_registration reg;
	hr_registrar *o = NULL, *n = NULL;
	hr_error err = { 0 };
	char hn[17];
	int64_t ln, t0;

	hr_registration_init(&reg);
	reg.id = "lost";
	reg.addr = "127.0.0.1:11211";
	reg.ttl_s = 3;
	reg.on_lost = on_lost;
	reg.on_lost_userdata = &l;
	ck_assert_msg(hr_registrar_open(&ecfg, &reg, &o, &err) == 0, "register: %s", err.message);
	__atomic_store_n(&l.r, o, __ATOMIC_RELEASE);

	hr_registration_init(&reg);
	reg.id = "lost";
	reg.addr = "127.0.0.2:2";
	reg.ttl_s = 3;
	reg.replace = 1;
	ck_assert_msg(hr_registrar_open(&ecfg, &reg, &n, &err) == 0, "replace: %s", err.message);
	ln = hr_registrar_lease(n);
	/* Noticed at the next renewal, TTL/3 = 1 s. */
	t0 = hrt_now_ms();
	while (!__atomic_load_n(&l.calls, __ATOMIC_ACQUIRE) && hrt_now_ms() - t0 < 6000)
		hrt_sleep_ms(20);
	ck_assert_int_eq(__atomic_load_n(&l.calls, __ATOMIC_ACQUIRE), 1);
	ck_assert(l.same);
	ck_assert_int_eq(l.code, HR_EEXIST);
	ck_assert_int_eq(l.status, HR_EEXIST);
	ck_assert_int_eq(l.deregistered, 0);
	ck_assert_ptr_nonnull(strstr(l.msg, "another process took node \"lost\" over"));
	ck_assert_ptr_nonnull(strstr(l.msg, hex(ln, hn)));
	ck_assert_int_eq(hr_registrar_status(o, &err), HR_EEXIST);
	ck_assert_str_eq(err.message, l.msg);
	hrt_sleep_ms(1500);
	hr_registrar_close(o);
	ck_assert_int_eq(__atomic_load_n(&l.calls, __ATOMIC_ACQUIRE), 1);
	/* Its deregistration revoked only its own lease. */
	ck_assert_int_eq(key_lease("lost", NULL, 0), ln);
	hr_registrar_close(n);

	hr_registration_init(&reg);
	reg.id = "kept";
	reg.addr = "127.0.0.3:3";
	reg.ttl_s = 3;
	reg.on_lost = on_lost;
	reg.on_lost_userdata = &kept;
	ck_assert_msg(hr_registrar_open(&ecfg, &reg, &o, &err) == 0, "register: %s", err.message);
	hrt_sleep_ms(1200);
	hr_registrar_close(o);
	ck_assert_int_eq(__atomic_load_n(&kept.calls, __ATOMIC_ACQUIRE), 0);
}
END_TEST

/* An operator's put under some other live lease takes the id over too
 * (a plain put, which detaches the key, does not: see above). */
START_TEST(put_under_another_lease_is_a_takeover)
{
	hr_registrar *r = reg_node("op2", 3, HR_STATE_ACTIVE);
	hr_error err = { 0 };
	char out[256], value[1024];
	unsigned long long other;

	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "lease grant 60"), 0);
	ck_assert_int_eq(sscanf(out, "lease %llx", &other), 1);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out,
				     "put --lease=%llx " PREFIX "op2 127.0.0.5:5", other), 0);
	for (int i = 0; i < 60 && hr_registrar_status(r, &err) == 0; i++)
		hrt_sleep_ms(50);
	ck_assert_int_eq(hr_registrar_status(r, &err), HR_EEXIST);
	hrt_sleep_ms(1500);
	ck_assert_int_eq(key_lease("op2", value, sizeof value), (int64_t)other);
	ck_assert_ptr_nonnull(strstr(value, "127.0.0.5:5"));
	hr_registrar_close(r);
	ck_assert_int_eq(key_lease("op2", NULL, 0), (int64_t)other);
}
END_TEST

/* Weights every client refuses: nothing is written, the error names the
 * limit; the rules are the ring options' of cfg. */
START_TEST(weights_clients_refuse_are_refused)
{
	hr_registration reg;
	hr_registrar *r = NULL;
	hr_error err = { 0 };
	hr_etcd_config kcfg = ecfg;
	hr_ring_options ring;
	char value[1024];
	hrt_cli_run run;
	const char *eps = hrt_etcd_endpoints(etcd);

	hr_registration_init(&reg);
	reg.id = "heavy";
	reg.addr = "127.0.0.1:11211";
	reg.weight = 170000;      /* 170000 x 200 points > 2^25 */
	ck_assert_int_eq(hr_registrar_open(&ecfg, &reg, &r, &err), HR_ELIMIT);
	ck_assert_ptr_null(r);
	ck_assert_msg(strstr(err.message, "33554432") != NULL, "%s", err.message);
	ck_assert_int_eq(key_lease("heavy", NULL, 0), -1);
	reg.weight = 1e6;
	ck_assert_int_eq(hr_registrar_open(&ecfg, &reg, &r, &err), HR_ELIMIT);
	/* One point per unit of weight: 170000 points are fine. */
	hr_ring_options_init(&ring);
	ring.vnodes_per_weight = 1;
	kcfg.ring = &ring;
	reg.weight = 170000;
	ck_assert_msg(hr_registrar_open(&kcfg, &reg, &r, &err) == 0, "%s", err.message);
	hr_registrar_close(r);
	/* Ketama placement wants whole weights. */
	ring = (hr_ring_options){ .size = sizeof ring, .placement = HR_PLACEMENT_KETAMA };
	reg.weight = 1.5;
	ck_assert_int_eq(hr_registrar_open(&kcfg, &reg, &r, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "whole weight"));
	ck_assert_int_eq(key_lease("heavy", NULL, 0), -1);

	/* Changes in place are refused the same way, and write nothing. */
	r = reg_node("w", 10, HR_STATE_ACTIVE);
	ck_assert_int_eq(hr_registrar_update(r, WEIGHT(170000), &err), HR_ELIMIT);
	ck_assert_ptr_nonnull(strstr(err.message, "33554432"));
	ck_assert_int_eq(hr_node_update(&ecfg, "w", WEIGHT(170000), &err), HR_ELIMIT);
	ck_assert_int_eq(key_lease("w", value, sizeof value), hr_registrar_lease(r));
	ck_assert_ptr_nonnull(strstr(value, "\"weight\":1,"));
	ck_assert_int_eq(hr_registrar_update(r, WEIGHT(3), &err), 0);
	/* A record the clients already refuse is not written again. */
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), PREFIX "bad",
				 "{\"addr\":\"127.0.0.6:6\",\"weight\":170000}"), 0);
	ck_assert_int_eq(hr_node_update(&ecfg, "bad", STATE(HR_STATE_DRAINING), &err), HR_ELIMIT);
	ck_assert_int_eq(key_lease("bad", value, sizeof value), 0);
	ck_assert_ptr_null(strstr(value, "draining"));
	hr_registrar_close(r);

	/* The CLI: exit 1, one line naming the limit, nothing in etcd. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "register", "--endpoints", eps,
		"--prefix", PREFIX, "--id", "heavy", "--addr", "127.0.0.1:1", "--weight", "170000",
		NULL });
	ck_assert_msg(run.status == 1, "register --weight 170000: %d %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.err, "hashring: register: "));
	ck_assert_ptr_nonnull(strstr(run.err, "33554432"));
	ck_assert_ptr_null(strstr(run.out, "registered"));
	ck_assert_int_eq(key_lease("heavy", NULL, 0), -1);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "register", "--endpoints", eps,
		"--prefix", PREFIX, "--id", "heavy", "--addr", "127.0.0.1:1", "--weight", "1e6",
		NULL });
	/* Not a plain decimal number: a usage error before etcd is asked. */
	ck_assert_int_eq(run.status, 2);
	ck_assert_int_eq(key_lease("heavy", NULL, 0), -1);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "weight", "--endpoints", eps,
		"--prefix", PREFIX, "--id", "bad", "170000", NULL });
	ck_assert_msg(run.status == 1, "weight: %d %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.err, "33554432"));

	/* Below a record's weight range: refused, as the clients would skip it. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "register", "--endpoints", eps,
		"--prefix", PREFIX, "--id", "light", "--addr", "127.0.0.1:1",
		"--weight", "0.0000001", NULL });
	ck_assert_msg(run.status != 0, "register --weight 0.0000001: %d", run.status);
	ck_assert_msg(strstr(run.err, "weight 1e-07 is outside a record's range, 1e-06 to 1e+290"),
		      "%s", run.err);
	ck_assert_int_eq(key_lease("light", NULL, 0), -1);
}
END_TEST

/* etcd gone for seconds: the registrar backs off and logs a few lines, not
 * one every 500 ms, and says when it works again. */
START_TEST(outage_backs_off_and_logs_sparsely)
{
	hr_registrar *r = reg_node("out", 3, HR_STATE_ACTIVE);
	hr_error err = { 0 };
	int64_t t0, down_s;
	int lines, total;

	ck_assert_int_eq(hrt_etcd_kill_member(etcd, 0), 0);
	t0 = hrt_now_ms();
	hrt_sleep_ms(7000);
	ck_assert_int_eq(hr_registrar_status(r, &err), 0); /* still ours: it retries */
	ck_assert_int_eq(hrt_etcd_restart_member(etcd, 0), 0);
	ck_assert_int_eq(hrt_log_wait(&logbuf, 1, 8000, 50, "event=keepalive_recovered", "id=out",
				      NULL), 1);
	down_s = (hrt_now_ms() - t0 + 999) / 1000;
	lines = hrt_log_count(&logbuf, "event=keepalive_failed", NULL) +
		hrt_log_count(&logbuf, "event=reregister_failed", NULL);
	total = sum_failures(&logbuf, "event=keepalive_recovered");
	fprintf(stderr, "etcd down %lld s: %d failure lines for %d failed renewals\n",
		(long long)down_s, lines, total);
	/* The first at once, then at most one every 5 s. */
	ck_assert_int_ge(lines, 1);
	ck_assert_int_le(lines, 1 + down_s / 5);
	/* Backing off: 500 ms, then 1 s (TTL/3), so about one try a second
	 * where every 500 ms would be twice as many. */
	ck_assert_int_ge(total, 3);
	ck_assert_int_le(total, down_s + 1);
	ck_assert_int_eq(hrt_log_count(&logbuf, "level=warn", "event=keepalive_failed", "id=out",
				       "failures=1 ", NULL), 1);
	ck_assert_int_eq(hr_registrar_status(r, &err), 0);
	ck_assert_int_eq(key_lease("out", NULL, 0), hr_registrar_lease(r));
	hr_registrar_close(r);
}
END_TEST

static int open_with_timeout(const char *id, int timeout_ms, hr_registrar **r, hr_error *err)
{
	hr_registration reg;

	hr_registration_init(&reg);
	reg.id = id;
	reg.addr = "127.0.0.1:11211";
	reg.ttl_s = 5;
	reg.open_timeout_ms = timeout_ms;
	reg.backoff_initial_ms = 100;
	return hr_registrar_open(&ecfg, &reg, r, err);
}

struct opening {
	hr_registrar *r;
	hr_error err;
	int rc;
};

/* Opens "w2" on a thread of its own: etcd, restarted by the test's thread,
 * dies with the thread that started it. */
static void *open_w2(void *arg)
{
	struct opening *o = arg;

	o->rc = open_with_timeout("w2", 30000, &o->r, &o->err);
	return NULL;
}

/* A service that starts while its etcd is away: the first lease is tried
 * again within open_timeout_ms, then the registration holds; without the
 * time, or past it, the error says how long etcd was tried. */
START_TEST(first_lease_waits_for_etcd)
{
	hr_registrar *r = NULL;
	hr_error err = { 0 };
	pthread_t t;
	int64_t t0, took;

	ck_assert_int_eq(hrt_etcd_kill_member(etcd, 0), 0);

	/* One attempt: at once. */
	t0 = hrt_now_ms();
	ck_assert_int_eq(open_with_timeout("w0", 0, &r, &err), HR_ECONNECT);
	ck_assert_ptr_null(r);
	ck_assert_int_lt(hrt_now_ms() - t0, 1000);
	ck_assert_msg(!strstr(err.message, "unreachable for"), "%s", err.message);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=etcd_retry", NULL), 0);

	/* Past the time: the attempts' count and how long. */
	t0 = hrt_now_ms();
	ck_assert_int_eq(open_with_timeout("w1", 700, &r, &err), HR_ECONNECT);
	took = hrt_now_ms() - t0;
	ck_assert_int_ge(took, 700);
	ck_assert_int_lt(took, 3000);
	ck_assert_msg(strstr(err.message, "etcd unreachable for ") &&
		      strstr(err.message, " attempts): "), "%s", err.message);
	/* 100, 200, 400 ms waits, the last cut to what is left. */
	ck_assert_int_ge(hrt_log_count(&logbuf, "level=warn", "event=etcd_retry", "id=w1", NULL), 3);
	ck_assert_int_le(hrt_log_count(&logbuf, "event=etcd_retry", "id=w1", NULL), 4);

	/* Back within the time: registered, the key on the lease. */
	struct opening o = { 0 };

	t0 = hrt_now_ms();
	ck_assert_int_eq(pthread_create(&t, NULL, open_w2, &o), 0);
	hrt_sleep_ms(1500);
	ck_assert_int_eq(hrt_etcd_restart_member(etcd, 0), 0);
	pthread_join(t, NULL);
	ck_assert_msg(o.rc == 0, "%s", o.err.message);
	ck_assert_int_ge(hrt_now_ms() - t0, 1500);
	r = o.r;
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=etcd_retry", "id=w2", NULL), 1);
	ck_assert_int_eq(hr_registrar_status(r, &err), 0);
	ck_assert_int_eq(key_lease("w2", NULL, 0), hr_registrar_lease(r));
	hr_registrar_close(r);
	ck_assert_int_eq(key_lease("w2", NULL, 0), -1);
}
END_TEST

/* Starts `hashring register` for node `id` (active) as a child. */
static hrt_child start_sidecar(const char *id, const char *ttl, const char *drain)
{
	return hrt_cli_spawn((const char *const[]){ "register", "--endpoints",
		hrt_etcd_endpoints(etcd), "--prefix", PREFIX, "--id", id, "--addr", "127.0.0.9:1",
		"--state", "active", "--ttl", ttl, "--drain-seconds", drain, "--log-level", "warn",
		NULL }, NULL);
}

START_TEST(sidecar_kill9_sigterm_drain)
{
	hr_client *c = watcher();
	hrt_cli_run run;
	hrt_child ch;

	/* kill -9: the node is gone within TTL + 1 s. */
	ch = start_sidecar("s1", "2", "0");
	ck_assert_int_eq(hrt_wait_state(c, "s1", HR_STATE_ACTIVE, 5000), 0);
	kill(ch.pid, SIGKILL);
	hrt_cli_wait(&ch, &run);
	int64_t t0 = hrt_now_ms();
	ck_assert_int_eq(hrt_wait_state(c, "s1", -1, 6000), 0);
	int64_t gone_ms = hrt_now_ms() - t0;
	fprintf(stderr, "kill -9: node gone after %lld ms (TTL 2 s)\n", (long long)gone_ms);
	ck_assert_int_le(gone_ms, 3000);

	/* SIGTERM: gone at once, exit 0. */
	ch = start_sidecar("s2", "10", "0");
	ck_assert_int_eq(hrt_wait_state(c, "s2", HR_STATE_ACTIVE, 5000), 0);
	kill(ch.pid, SIGTERM);
	t0 = hrt_now_ms();
	ck_assert_int_eq(hrt_wait_state(c, "s2", -1, 3000), 0);
	ck_assert_int_lt(hrt_now_ms() - t0, 1000);
	hrt_cli_wait(&ch, &run);
	ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);

	/* --drain-seconds: draining first, then gone. */
	ch = start_sidecar("s3", "10", "1");
	ck_assert_int_eq(hrt_wait_state(c, "s3", HR_STATE_ACTIVE, 5000), 0);
	kill(ch.pid, SIGINT);
	ck_assert_int_eq(hrt_wait_state(c, "s3", HR_STATE_DRAINING, 3000), 0);
	ck_assert_int_eq(hrt_wait_state(c, "s3", -1, 4000), 0);
	hrt_cli_wait(&ch, &run);
	ck_assert_msg(run.status == 0, "exit %d: %s", run.status, run.err);
	hr_client_close(c);
}
END_TEST

/* Rings published without node "svc" while `armed`. */
static int svc_armed, svc_missing;

static void count_missing_svc(void *ud, const hr_ring *old_ring, const hr_ring *new_ring)
{
	(void)ud, (void)old_ring;
	if (__atomic_load_n(&svc_armed, __ATOMIC_ACQUIRE) && !hr_ring_find(new_ring, "svc"))
		__atomic_add_fetch(&svc_missing, 1, __ATOMIC_RELAXED);
}

static hrt_child sidecar(const char *addr, const char *ttl, int replace)
{
	return hrt_cli_spawn((const char *const[]){ "register", "--endpoints",
		hrt_etcd_endpoints(etcd), "--prefix", PREFIX, "--id", "svc", "--addr", addr,
		"--state", "active", "--ttl", ttl, "--log-level", "info",
		replace ? "--replace" : NULL, NULL }, NULL);
}

/* The lease a sidecar printed on its `registered ID lease=HEX` line. */
static int64_t printed_lease(const hrt_cli_run *run)
{
	const char *p = strstr(run->out, "registered svc lease=");

	ck_assert_msg(p != NULL, "no registered line in: %s", run->out);
	return (int64_t)strtoull(p + strlen("registered svc lease="), NULL, 16);
}

/* Waits until the key is attached to a lease other than `not` (and not 0). */
static int64_t wait_key_lease_change(int64_t not)
{
	int64_t l = not;

	for (int i = 0; i < 100 && (l == not || l <= 0); i++) {
		hrt_sleep_ms(50);
		l = key_lease("svc", NULL, 0);
	}
	ck_assert_int_ne(l, not);
	return l;
}

/* The sidecars of the issue as two processes: the replaced one exits 1 with
 * one line saying why, and its SIGTERM never takes the node away. */
START_TEST(sidecar_replaced_exits_and_key_survives)
{
	hr_client_config wcfg = cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	hrt_cli_run run_o, run_n;
	hrt_child o, n;
	int64_t lo, ln, t0, took;
	int lines = 0;

	wcfg.on_change = count_missing_svc;
	ck_assert_msg(hr_client_open(&ecfg, &wcfg, &c, &err) == 0, "open: %s", err.message);

	/* O notices within about TTL/3 and exits 1. */
	o = sidecar("127.0.0.1:1", "3", 0);
	ck_assert_int_eq(hrt_wait_state(c, "svc", HR_STATE_ACTIVE, 8000), 0);
	lo = key_lease("svc", NULL, 0);
	__atomic_store_n(&svc_armed, 1, __ATOMIC_RELEASE);
	n = sidecar("127.0.0.2:2", "3", 1);
	ln = wait_key_lease_change(lo);
	t0 = hrt_now_ms();
	hrt_cli_wait(&o, &run_o);
	took = hrt_now_ms() - t0;
	fprintf(stderr, "replaced sidecar exited %lld ms after the takeover (TTL 3 s)\n",
		(long long)took);
	ck_assert_msg(run_o.status == 1, "replaced sidecar: exit %d, %s", run_o.status, run_o.err);
	ck_assert_int_le(took, 3000);
	ck_assert_int_eq(printed_lease(&run_o), lo);
	for (const char *p = run_o.err; (p = strstr(p, "hashring: register: ")); p++)
		lines++;
	ck_assert_msg(lines == 1, "%s", run_o.err);
	ck_assert_ptr_nonnull(strstr(run_o.err, "hashring: register: another process took node"
				     " \"svc\" over"));
	ck_assert_ptr_nonnull(strstr(run_o.err, "event=registration_lost"));
	ck_assert_ptr_null(strstr(run_o.err, "event=lease_reattached"));
	/* N's key and node stay; N fights no one. */
	hrt_sleep_ms(2500);
	ck_assert_int_eq(key_lease("svc", NULL, 0), ln);
	ck_assert_int_eq(hrt_node_state(c, "svc"), HR_STATE_ACTIVE);
	ck_assert_int_eq(__atomic_load_n(&svc_missing, __ATOMIC_RELAXED), 0);
	__atomic_store_n(&svc_armed, 0, __ATOMIC_RELEASE);
	kill(n.pid, SIGTERM);
	hrt_cli_wait(&n, &run_n);
	ck_assert_msg(run_n.status == 0, "replacing sidecar: exit %d, %s", run_n.status, run_n.err);
	ck_assert_int_eq(printed_lease(&run_n), ln);
	ck_assert_ptr_nonnull(strstr(run_n.err, "event=replaced"));
	ck_assert_ptr_null(strstr(run_n.err, "event=lease_reattached"));
	ck_assert_ptr_null(strstr(run_n.err, "event=record_adopted"));
	ck_assert_int_eq(hrt_wait_state(c, "svc", -1, 3000), 0);

	/* SIGTERM to O before it noticed (TTL 30: its next renewal is 10 s
	 * away): its revoke leaves N's key. */
	o = sidecar("127.0.0.1:1", "30", 0);
	ck_assert_int_eq(hrt_wait_state(c, "svc", HR_STATE_ACTIVE, 8000), 0);
	lo = key_lease("svc", NULL, 0);
	n = sidecar("127.0.0.2:2", "30", 1);
	ln = wait_key_lease_change(lo);
	ck_assert_int_eq(hrt_wait_nodes(c, 1, 3000), 0);
	__atomic_store_n(&svc_armed, 1, __ATOMIC_RELEASE);
	kill(o.pid, SIGTERM);
	hrt_cli_wait(&o, &run_o);
	ck_assert_msg(run_o.status == 0, "exit %d, %s", run_o.status, run_o.err);
	hrt_sleep_ms(500);
	ck_assert_int_eq(key_lease("svc", NULL, 0), ln);
	ck_assert_int_eq(hrt_node_state(c, "svc"), HR_STATE_ACTIVE);
	ck_assert_int_eq(__atomic_load_n(&svc_missing, __ATOMIC_RELAXED), 0);
	__atomic_store_n(&svc_armed, 0, __ATOMIC_RELEASE);
	kill(n.pid, SIGTERM);
	hrt_cli_wait(&n, &run_n);
	ck_assert_int_eq(run_n.status, 0);
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
	tcase_add_test(tc, replaced_registrar_stops_and_leaves_the_key);
	tcase_add_test(tc, lost_registration_calls_on_lost_once);
	tcase_add_test(tc, put_under_another_lease_is_a_takeover);
	tcase_add_test(tc, sidecar_replaced_exits_and_key_survives);
	tcase_add_test(tc, weights_clients_refuse_are_refused);
	tcase_add_test(tc, outage_backs_off_and_logs_sparsely);
	tcase_add_test(tc, first_lease_waits_for_etcd);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
