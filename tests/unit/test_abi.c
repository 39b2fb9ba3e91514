/* SPDX-License-Identifier: MIT */
/* test_abi.c - the size protocol of the structs that grow (hashring.h,
 * "Structs that grow"): init macros write the caller's size and no more, a
 * struct of an older program (a smaller size) gets the defaults of the
 * fields it does not have, a zeroed or garbled size is HR_EINVAL naming
 * the struct, and hr_client_status is written only up to the caller's
 * size.  Nothing here reaches etcd: endpoints are closed loopback ports. */
#include "client.h"
#include "client_config.h"
#include "cluster_config.h"
#include "hashring/rebalance.h"
#include "hrt_check.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CLOSED "127.0.0.1:1"
#define FILL 0xa5

static void quiet(void *ud, hr_log_level level, const char *line)
{
	(void)ud, (void)level, (void)line;
}

/* The struct of a program built against newer headers: ours and more. */
#define NEWER(T) struct { T s; unsigned char more[16]; }

static int all_bytes(const void *p, size_t from, size_t to, unsigned char b)
{
	const unsigned char *c = p;

	for (size_t i = from; i < to; i++)
		if (c[i] != b)
			return 0;
	return 1;
}

static void etcd_closed(hr_etcd_config *etcd)
{
	hr_etcd_config_init(etcd);
	etcd->endpoints = CLOSED;
	etcd->prefix = "/abi/";
	etcd->log = quiet;
}

static hr_client_config nonblocking(void)
{
	hr_client_config cfg;

	hr_client_config_init(&cfg);
	cfg.open_nonblocking = 1;
	cfg.backoff_initial_ms = 5000;
	return cfg;
}

START_TEST(init_sets_size_and_defaults)
{
	hr_etcd_config etcd;
	hr_client_config cfg;
	hr_registration reg;
	hr_ring_options opts;
	hr_record_update upd;
	hr_metrics_options mo;

	memset(&etcd, FILL, sizeof etcd);
	hr_etcd_config_init(&etcd);
	ck_assert_uint_eq(etcd.size, sizeof etcd);
	ck_assert_ptr_null(etcd.endpoints);
	ck_assert_ptr_null(etcd.prefix);
	ck_assert_ptr_null(etcd.ring);
	ck_assert_int_eq(etcd.request_timeout_ms, 5000);
	ck_assert_int_eq(etcd.connect_timeout_ms, 2000);
	ck_assert_int_eq(etcd.log_level, HR_LOG_INFO);
	ck_assert_ptr_null(etcd.log_userdata);

	memset(&cfg, FILL, sizeof cfg);
	hr_client_config_init(&cfg);
	ck_assert_uint_eq(cfg.size, sizeof cfg);
	ck_assert_int_eq(cfg.open_timeout_ms, 10000);
	ck_assert_int_eq(cfg.open_nonblocking, 0);
	ck_assert_int_eq(cfg.backoff_initial_ms, 100);
	ck_assert_int_eq(cfg.backoff_max_ms, 5000);
	ck_assert_int_eq(cfg.probe_interval_ms, 3000);
	ck_assert_int_eq(cfg.stale_warn_ms, 10000);
	ck_assert_uint_eq(cfg.page_size, 1000);
	ck_assert_ptr_null(cfg.on_change);
	ck_assert_ptr_null(cfg.on_diff_userdata);
	ck_assert_ptr_null(cfg.ack_client_id);
	ck_assert_ptr_null(cfg.ack_prefix);
	ck_assert_int_eq(cfg.ack_ttl_s, 10);
	ck_assert_int_eq(cfg.ack_interval_ms, 250);
	ck_assert_int_eq(cfg.probe_jitter_pct, 20);
	ck_assert_int_eq(cfg.endpoint_order, HR_ENDPOINTS_SPREAD);

	memset(&reg, FILL, sizeof reg);
	hr_registration_init(&reg);
	ck_assert_uint_eq(reg.size, sizeof reg);
	ck_assert_ptr_null(reg.id);
	ck_assert_double_eq(reg.weight, 1);
	ck_assert_int_eq(reg.state, HR_STATE_WARMING);
	ck_assert_int_eq(reg.ttl_s, 10);
	ck_assert_int_eq(reg.replace, 0);
	ck_assert_ptr_null(reg.on_lost);

	memset(&opts, FILL, sizeof opts);
	hr_ring_options_init(&opts);
	ck_assert_uint_eq(opts.size, sizeof opts);
	ck_assert_uint_eq(opts.vnodes_per_weight, HR_VNODES_PER_WEIGHT_DEFAULT);
	ck_assert_int_eq(opts.placement, HR_PLACEMENT_XXH3);
	ck_assert_uint_eq(opts.maglev_size, 0);

	memset(&upd, FILL, sizeof upd);
	hr_record_update_init(&upd);
	ck_assert_uint_eq(upd.size, sizeof upd);
	ck_assert_uint_eq(upd.fields, 0);

	memset(&mo, FILL, sizeof mo);
	hr_metrics_options_init(&mo);
	ck_assert_uint_eq(mo.size, sizeof mo);
	ck_assert_ptr_null(mo.name_prefix);
	ck_assert_ptr_null(mo.labels);
	ck_assert_uint_eq(mo.label_count, 0);
	ck_assert_uint_eq(mo.omit, 0);

	/* NULL and sizes that cannot hold the size are left alone. */
	hr_etcd_config_init_size(NULL, sizeof etcd);
	memset(&opts, FILL, sizeof opts);
	hr_ring_options_init_size(&opts, 3);
	ck_assert(all_bytes(&opts, 0, sizeof opts, FILL));
}
END_TEST

/* An older program's init writes its own, smaller struct and not a byte
 * past it; a newer program's gets zeros for the fields we do not know. */
START_TEST(init_writes_the_callers_size_only)
{
	NEWER(hr_client_config) big;
	const size_t old = offsetof(hr_client_config, page_size);

	memset(&big, FILL, sizeof big);
	hr_client_config_init_size(&big.s, old);
	ck_assert_uint_eq(big.s.size, old);
	ck_assert_int_eq(big.s.stale_warn_ms, 10000);
	ck_assert(all_bytes(&big, old, sizeof big, FILL));

	memset(&big, FILL, sizeof big);
	hr_client_config_init_size(&big.s, sizeof big - 4);
	ck_assert_uint_eq(big.s.size, sizeof big - 4);
	ck_assert_uint_eq(big.s.page_size, 1000);
	ck_assert(all_bytes(&big, sizeof big.s, sizeof big - 4, 0));
	ck_assert(all_bytes(&big, sizeof big - 4, sizeof big, FILL));
}
END_TEST

/* A size of 0, one too small for the first field, one over the limit:
 * HR_EINVAL everywhere, naming the struct, nothing opened or written. */
START_TEST(bad_sizes_are_refused_by_name)
{
	const size_t bad[] = { 0, 4, sizeof(size_t), 4097, (size_t)-1 };
	hr_client_config cfg = nonblocking();
	hr_registration reg;
	hr_record_update upd = { .size = sizeof upd, .fields = HR_UPDATE_STATE };
	hr_node node = { "a", "127.0.0.1:1", NULL, 1, HR_STATE_ACTIVE, NULL, 0 };
	hr_etcd_config etcd;
	hr_ring_options opts;
	hr_client *c;
	hr_registrar *r;
	hr_ring *ring;

	hr_registration_init(&reg);
	reg.id = "a";
	reg.addr = "127.0.0.1:1";
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		hr_error err = { 0 };
		size_t keep;

		etcd_closed(&etcd);
		etcd.size = bad[i];
		c = (hr_client *)1;
		ck_assert_int_eq(hr_client_open(&etcd, &cfg, &c, &err), HR_EINVAL);
		ck_assert_ptr_null(c);
		ck_assert_msg(strstr(err.message, "hr_etcd_config: size") &&
			      strstr(err.message, "hr_etcd_config_init()"), "%s", err.message);
		ck_assert_int_eq(hr_registrar_open(&etcd, &reg, &r, &err), HR_EINVAL);
		ck_assert_ptr_nonnull(strstr(err.message, "hr_etcd_config"));
		ck_assert_int_eq(hr_node_update(&etcd, "a", &upd, &err), HR_EINVAL);
		ck_assert_ptr_nonnull(strstr(err.message, "hr_etcd_config"));

		etcd_closed(&etcd);
		keep = cfg.size;
		cfg.size = bad[i];
		ck_assert_int_eq(hr_client_open(&etcd, &cfg, &c, &err), HR_EINVAL);
		ck_assert_msg(strstr(err.message, "hr_client_config: size"), "%s", err.message);
		cfg.size = keep;

		reg.size = bad[i];
		ck_assert_int_eq(hr_registrar_open(&etcd, &reg, &r, &err), HR_EINVAL);
		ck_assert_ptr_null(r);
		ck_assert_msg(strstr(err.message, "hr_registration: size"), "%s", err.message);
		reg.size = sizeof reg;

		upd.size = bad[i];
		ck_assert_int_eq(hr_node_update(&etcd, "a", &upd, &err), HR_EINVAL);
		ck_assert_msg(strstr(err.message, "hr_record_update: size"), "%s", err.message);
		upd.size = sizeof upd;

		hr_ring_options_init(&opts);
		opts.size = bad[i];
		etcd.ring = &opts;
		ck_assert_int_eq(hr_client_open(&etcd, &cfg, &c, &err), HR_EINVAL);
		ck_assert_msg(strstr(err.message, "hr_ring_options: size"), "%s", err.message);
		ring = (hr_ring *)1;
		ck_assert_int_eq(hr_ring_build(&node, 1, &opts, 0, &ring, &err), HR_EINVAL);
		ck_assert_ptr_null(ring);
		ck_assert_ptr_nonnull(strstr(err.message, "hr_ring_options"));
		ck_assert_int_eq(hr_node_check(&node, &opts, &err), HR_EINVAL);
		ck_assert_ptr_nonnull(strstr(err.message, "hr_ring_options"));
		ck_assert_int_eq(hr_ring_from_json("{}", 2, &opts, &ring, &err), HR_EINVAL);
	}
}
END_TEST

/* Zero-initialised (the usual mistake: `= { 0 }`) is caught with a hint. */
START_TEST(zeroed_struct_says_how_to_set_it_up)
{
	hr_etcd_config etcd = { 0 };
	hr_error err = { 0 };
	hr_client *c;

	etcd.prefix = "/abi/";
	ck_assert_int_eq(hr_client_open(&etcd, NULL, &c, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_etcd_config: size is 0: set it up with hr_etcd_config_init()");
}
END_TEST

/* A newer program's struct is taken as long as the fields we do not know
 * are zero; a field set there is refused rather than ignored. */
START_TEST(newer_struct_with_unknown_fields_set_is_refused)
{
	NEWER(hr_etcd_config) etcd;
	NEWER(hr_ring_options) opts;
	hr_client_config cfg = nonblocking();
	hr_error err = { 0 };
	hr_client *c = NULL;
	hr_ring *ring = NULL;
	char want[128];

	memset(&etcd, 0, sizeof etcd);
	etcd_closed(&etcd.s);
	etcd.s.size = sizeof etcd;
	ck_assert_msg(hr_client_open(&etcd.s, &cfg, &c, &err) == 0, "%s", err.message);
	hr_client_close(c);
	etcd.more[5] = 1;
	ck_assert_int_eq(hr_client_open(&etcd.s, &cfg, &c, &err), HR_EINVAL);
	snprintf(want, sizeof want, "hr_etcd_config: byte %zu is set, past the %zu bytes",
		 offsetof(__typeof__(etcd), more) + 5, sizeof etcd.s);
	ck_assert_msg(strstr(err.message, want), "%s", err.message);
	ck_assert_ptr_nonnull(strstr(err.message, HR_VERSION_STRING));

	memset(&opts, 0, sizeof opts);
	opts.s.size = sizeof opts;
	opts.s.vnodes_per_weight = 3;
	ck_assert_int_eq(hr_ring_build(NULL, 0, &opts.s, 0, &ring, &err), 0);
	hr_ring_release(ring);
	opts.more[15] = 0x80;
	ck_assert_int_eq(hr_ring_build(NULL, 0, &opts.s, 0, &ring, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "hr_ring_options: byte"));
}
END_TEST

/* Ring options of an older program: the placement it does not have is the
 * default, whatever its memory holds there. */
START_TEST(older_ring_options_take_defaults)
{
	hr_node nodes[] = { { "a", "127.0.0.1:1", NULL, 1, HR_STATE_ACTIVE, NULL, 0 },
			    { "b", "127.0.0.2:1", NULL, 1.5, HR_STATE_ACTIVE, NULL, 0 } };
	hr_ring_options old = { .size = offsetof(hr_ring_options, placement),
				.vnodes_per_weight = 10,
				.placement = HR_PLACEMENT_KETAMA };
	hr_ring_options same = { .size = sizeof same, .vnodes_per_weight = 10 };
	hr_ring *a = NULL, *b = NULL;
	hr_error err = { 0 };

	/* Ketama would refuse the weight 1.5: it is not read. */
	ck_assert_msg(hr_ring_build(nodes, 2, &old, 0, &a, &err) == 0, "%s", err.message);
	ck_assert_int_eq(hr_ring_build(nodes, 2, &same, 0, &b, &err), 0);
	ck_assert_uint_eq(hr_ring_point_count(a), 25);
	ck_assert_uint_eq(hr_ring_digest(a), hr_ring_digest(b));
	ck_assert_int_eq(hr_node_check(&nodes[1], &old, &err), 0);
	hr_ring_release(a);
	hr_ring_release(b);
}
END_TEST

/* Ring options of a 1.0 program choosing Maglev (its struct ends before
 * maglev_size): the default table, whatever lies past its size. */
START_TEST(older_ring_options_default_maglev_size)
{
	hr_node nodes[] = { { "a", "127.0.0.1:1", NULL, 1, HR_STATE_ACTIVE, NULL, 0 },
			    { "b", "127.0.0.2:1", NULL, 1.5, HR_STATE_ACTIVE, NULL, 0 } };
	hr_ring_options old = { .size = offsetof(hr_ring_options, maglev_size),
				.placement = HR_PLACEMENT_MAGLEV,
				.maglev_size = 4 };
	hr_ring *a = NULL;
	hr_error err = { 0 };

#if UINTPTR_MAX == UINT64_MAX
	/* 1.0's struct was 16 bytes; the field is appended after it. */
	ck_assert_uint_eq(offsetof(hr_ring_options, maglev_size), 16);
	ck_assert_uint_eq(sizeof(hr_ring_options), 24);
#endif
	ck_assert_msg(hr_ring_build(nodes, 2, &old, 0, &a, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(hr_ring_point_count(a), HR_MAGLEV_SIZE_DEFAULT);
	hr_ring_release(a);
}
END_TEST

/* Settings of an older program, through the public entry points: what
 * lies past its size is never read (here, values that would be refused). */
START_TEST(older_settings_are_not_read_past_their_size)
{
	hr_etcd_config etcd;
	hr_client_config cfg = nonblocking();
	hr_registration reg;
	hr_error err = { 0 };
	hr_client *c = NULL;
	hr_registrar *r = NULL;

	etcd_closed(&etcd);
	etcd.size = offsetof(hr_etcd_config, request_timeout_ms);
	etcd.request_timeout_ms = -1;
	etcd.connect_timeout_ms = -1;
	etcd.log_level = (hr_log_level)99;
	/* Its log callback is past the size too: the watcher's lines go to
	 * stderr. */
	cfg.size = offsetof(hr_client_config, page_size);
	cfg.page_size = 0;
	ck_assert_msg(hr_client_open(&etcd, &cfg, &c, &err) == 0, "%s", err.message);
	hr_client_close(c);

	/* A prefix past the size is no prefix. */
	etcd.size = offsetof(hr_etcd_config, prefix);
	ck_assert_int_eq(hr_client_open(&etcd, &cfg, &c, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_etcd_config: prefix must be set and not empty");

	/* The TTL 1 past the size is not read: the registration goes as far
	 * as etcd, which is not there, and tries it again for the default
	 * open_timeout_ms (10 s), also past that size. */
	etcd_closed(&etcd);
	etcd.connect_timeout_ms = 200;
	hr_registration_init(&reg);
	reg.id = "a";
	reg.addr = "127.0.0.1:1";
	reg.ttl_s = 1;
	ck_assert_int_eq(hr_registrar_open(&etcd, &reg, &r, &err), HR_EINVAL);
	reg.size = offsetof(hr_registration, ttl_s);
	ck_assert_int_eq(hr_registrar_open(&etcd, &reg, &r, &err), HR_ECONNECT);
	ck_assert_msg(strstr(err.message, "etcd unreachable for "), "%s", err.message);
	ck_assert_ptr_null(r);
}
END_TEST

/* The readers every entry point shares, struct by struct: the fields past
 * an older program's size get their defaults. */
START_TEST(readers_take_defaults_past_the_size)
{
	hr_etcd_config etcd;
	hr_client_config cfg, got_cfg;
	hr_registration reg, got_reg;
	hr_record_update upd, got_upd;
	hr_ring_options opts;
	hr__conn conn;
	hr_error err = { 0 };
	int tag;

	etcd_closed(&etcd);
	hr_ring_options_init(&opts);
	opts.vnodes_per_weight = 7;
	etcd.ring = &opts;
	etcd.log_userdata = &tag;
	ck_assert_int_eq(hr__conn_read(&etcd, &conn, &err), 0);
	ck_assert_uint_eq(conn.ring.vnodes_per_weight, 7);
	ck_assert_ptr_eq(conn.log.userdata, &tag);
	etcd.size = offsetof(hr_etcd_config, log_userdata);
	ck_assert_int_eq(hr__conn_read(&etcd, &conn, &err), 0);
	ck_assert_ptr_eq(conn.log.fn, quiet);
	ck_assert_ptr_null(conn.log.userdata);
	etcd.size = offsetof(hr_etcd_config, ring);
	ck_assert_int_eq(hr__conn_read(&etcd, &conn, &err), 0);
	ck_assert_uint_eq(conn.ring.vnodes_per_weight, HR_VNODES_PER_WEIGHT_DEFAULT);
	ck_assert_int_eq(conn.etcd.request_timeout_ms, 5000);
	ck_assert_ptr_null(conn.log.fn);

	cfg = nonblocking();
	cfg.on_diff = (hr_ring_diff_fn)(uintptr_t)1;
	cfg.size = offsetof(hr_client_config, on_diff);
	ck_assert_int_eq(hr__client_config_read(&cfg, &got_cfg, &err), 0);
	ck_assert_int_eq(got_cfg.open_nonblocking, 1);
	ck_assert_ptr_null(got_cfg.on_diff);
	ck_assert_int_eq(hr__client_config_read(NULL, &got_cfg, &err), 0);
	ck_assert_int_eq(got_cfg.open_timeout_ms, 10000);
	/* A program of 1.0 knows no acks: none, whatever lies past its size. */
	cfg = nonblocking();
	cfg.ack_client_id = "web-1";
	cfg.ack_prefix = "/acks/";
	cfg.ack_ttl_s = 0;
	cfg.size = offsetof(hr_client_config, ack_client_id);
	ck_assert_int_eq(hr__client_config_read(&cfg, &got_cfg, &err), 0);
	ck_assert_ptr_null(got_cfg.ack_client_id);
	ck_assert_ptr_null(got_cfg.ack_prefix);
	ck_assert_int_eq(got_cfg.ack_ttl_s, 10);
	ck_assert_int_eq(got_cfg.ack_interval_ms, 250);
	/* Nor the probe jitter and endpoint order of 1.1: their defaults. */
	cfg = nonblocking();
	cfg.probe_jitter_pct = 99;
	cfg.endpoint_order = 7;
	cfg.size = offsetof(hr_client_config, probe_jitter_pct);
	ck_assert_int_eq(hr__client_config_read(&cfg, &got_cfg, &err), 0);
	ck_assert_int_eq(got_cfg.probe_jitter_pct, 20);
	ck_assert_int_eq(got_cfg.endpoint_order, HR_ENDPOINTS_SPREAD);
	/* Nor a share: a client of such a program has a watcher of its own. */
	cfg = nonblocking();
	cfg.share = (hr_share *)(uintptr_t)1;
	cfg.size = offsetof(hr_client_config, share);
	ck_assert_int_eq(hr__client_config_read(&cfg, &got_cfg, &err), 0);
	ck_assert_ptr_null(got_cfg.share);

	hr_registration_init(&reg);
	reg.id = "a";
	reg.addr = "b";
	reg.replace = 1;
	reg.on_lost = (hr_registrar_lost_fn)(uintptr_t)1;
	reg.size = offsetof(hr_registration, on_lost);
	ck_assert_int_eq(hr__registration_read(&reg, &got_reg, &err), 0);
	ck_assert_int_eq(got_reg.replace, 1);
	ck_assert_ptr_null(got_reg.on_lost);
	reg.size = offsetof(hr_registration, weight);
	reg.weight = -1;
	reg.state = (hr_state)9;
	ck_assert_int_eq(hr__registration_read(&reg, &got_reg, &err), 0);
	ck_assert_double_eq(got_reg.weight, 1);
	ck_assert_int_eq(got_reg.state, HR_STATE_WARMING);
	ck_assert_int_eq(got_reg.replace, 0);
	/* The first lease's retries: the defaults past an older size, and
	 * values refused by name. */
	hr_registration_init(&reg);
	reg.id = "a";
	reg.addr = "b";
	reg.open_timeout_ms = -1;
	reg.backoff_initial_ms = 0;
	reg.size = offsetof(hr_registration, open_timeout_ms);
	ck_assert_int_eq(hr__registration_read(&reg, &got_reg, &err), 0);
	ck_assert_int_eq(got_reg.open_timeout_ms, 10000);
	ck_assert_int_eq(got_reg.backoff_initial_ms, 100);
	reg.size = sizeof reg;
	ck_assert_int_eq(hr__registration_read(&reg, &got_reg, &err), HR_EINVAL);
	ck_assert_str_eq(err.message,
			 "hr_registration: open_timeout_ms must be 0 or more (is -1)");
	reg.open_timeout_ms = 0;
	ck_assert_int_eq(hr__registration_read(&reg, &got_reg, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_registration: backoff_initial_ms must be > 0 (is 0)");

	upd = (hr_record_update){ .size = offsetof(hr_record_update, weight),
				  .fields = HR_UPDATE_STATE, .state = HR_STATE_DRAINING,
				  .weight = 5 };
	ck_assert_int_eq(hr__record_update_read(&upd, &got_upd, &err), 0);
	ck_assert_int_eq(got_upd.state, HR_STATE_DRAINING);
	ck_assert_double_eq(got_upd.weight, 0);
	/* Naming a field the struct does not hold: its default is refused. */
	upd.fields |= HR_UPDATE_WEIGHT;
	ck_assert_int_eq(hr__record_update_read(&upd, &got_upd, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "weight"));
}
END_TEST

/* The values the shared readers refuse, with the struct and field named. */
START_TEST(readers_refuse_bad_values)
{
	static const struct {
		unsigned fields;
		hr_state state;
		double weight;
		const char *msg;
	} updates[] = {
		{ 0, HR_STATE_ACTIVE, 1, "fields names nothing" },
		{ 0x8, HR_STATE_ACTIVE, 1, "unknown flags 0x8" },
		{ HR_UPDATE_HEIRS, HR_STATE_DRAINING, 1, "HR_UPDATE_HEIRS needs the state draining" },
		{ HR_UPDATE_STATE | HR_UPDATE_HEIRS, HR_STATE_ACTIVE, 1,
		  "HR_UPDATE_HEIRS needs the state draining" },
		{ HR_UPDATE_STATE, (hr_state)3, 1, "invalid state 3" },
		{ HR_UPDATE_WEIGHT, HR_STATE_ACTIVE, 0, "finite number > 0" },
		{ HR_UPDATE_WEIGHT, HR_STATE_ACTIVE, INFINITY, "finite number > 0" },
	};
	hr_etcd_config etcd;
	hr_client_config cfg, got;
	hr_ring_options opts;
	hr_record_update upd, got_upd;
	hr__conn conn;
	hr_error err = { 0 };
	char longp[4098];

	etcd_closed(&etcd);
	etcd.prefix = "";
	ck_assert_int_eq(hr__conn_read(&etcd, &conn, &err), HR_EINVAL);
	memset(longp, 'p', sizeof longp - 1);
	longp[sizeof longp - 1] = '\0';
	etcd.prefix = longp;
	ck_assert_int_eq(hr__conn_read(&etcd, &conn, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_etcd_config: prefix longer than 4096 bytes");
	longp[4096] = '\0';
	ck_assert_int_eq(hr__conn_read(&etcd, &conn, &err), 0);
	etcd.connect_timeout_ms = 0;
	ck_assert_int_eq(hr__conn_read(&etcd, &conn, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_etcd_config: connect_timeout_ms must be > 0 (is 0)");
	etcd_closed(&etcd);
	etcd.log_level = (hr_log_level)4;
	ck_assert_int_eq(hr__conn_read(&etcd, &conn, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_etcd_config: invalid log_level 4");
	etcd_closed(&etcd);
	opts = (hr_ring_options){ .size = sizeof opts, .placement = (hr_placement)99 };
	etcd.ring = &opts;
	ck_assert_int_eq(hr__conn_read(&etcd, &conn, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_ring_options: unknown placement 99");
	ck_assert_int_eq(hr__conn_read(NULL, &conn, &err), HR_EINVAL);

	hr_client_config_init(&cfg);
	cfg.backoff_max_ms = 50;
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: backoff_max_ms below backoff_initial_ms");
	hr_client_config_init(&cfg);
	cfg.page_size = 100001;
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	hr_client_config_init(&cfg);
	cfg.stale_warn_ms = -3;
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: stale_warn_ms must be > 0 (is -3)");
	hr_client_config_init(&cfg);
	cfg.ack_client_id = "web-1";
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: ack_client_id and ack_prefix go together:"
			 " set both, or neither");
	cfg.ack_client_id = NULL;
	cfg.ack_prefix = "/acks/";
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	cfg.ack_client_id = "";
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: ack client id is empty");
	cfg.ack_client_id = "web/1";
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: ack client id \"web\": must be printable"
			 " ASCII without blanks or '/' (byte 0x2f at offset 3)");
	cfg.ack_client_id = "web-1";
	cfg.ack_ttl_s = 1;
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: ack_ttl_s must be 2..3600 (is 1)");
	cfg.ack_ttl_s = 10;
	cfg.ack_interval_ms = 5;
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: ack_interval_ms must be 10..60000 (is 5)");
	cfg.ack_interval_ms = 250;
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), 0);
	ck_assert_str_eq(got.ack_client_id, "web-1");
	cfg.probe_jitter_pct = 51;
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: probe_jitter_pct must be 0..50 (is 51)");
	cfg.probe_jitter_pct = -1;
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	cfg.probe_jitter_pct = 0;
	cfg.endpoint_order = 2;
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "hr_client_config: endpoint_order must be"
			 " HR_ENDPOINTS_SPREAD or HR_ENDPOINTS_IN_ORDER (is 2)");
	cfg.endpoint_order = HR_ENDPOINTS_IN_ORDER;
	ck_assert_int_eq(hr__client_config_read(&cfg, &got, &err), 0);
	ck_assert_int_eq(got.probe_jitter_pct, 0);
	ck_assert_int_eq(got.endpoint_order, HR_ENDPOINTS_IN_ORDER);

	for (size_t i = 0; i < sizeof updates / sizeof updates[0]; i++) {
		hr_record_update_init(&upd);
		upd.fields = updates[i].fields;
		upd.state = updates[i].state;
		upd.weight = updates[i].weight;
		ck_assert_int_eq(hr__record_update_read(&upd, &got_upd, &err), HR_EINVAL);
		ck_assert_msg(strstr(err.message, "hr_record_update: ") &&
			      strstr(err.message, updates[i].msg), "%zu: %s", i, err.message);
	}
	ck_assert_int_eq(hr__record_update_read(NULL, &got_upd, &err), HR_EINVAL);
	ck_assert_int_eq(hr__registration_read(NULL, &(hr_registration){ 0 }, &err), HR_EINVAL);
}
END_TEST

/* hr_client_status is written up to the caller's size, and not a byte
 * more: an older program's smaller struct, a newer program's bigger one. */
START_TEST(status_written_up_to_the_callers_size)
{
	hr_node node = { "a", "127.0.0.1:1", NULL, 1, HR_STATE_ACTIVE, NULL, 0 };
	hr_client_config cfg = nonblocking();
	NEWER(hr_client_status) big;
	const size_t old = offsetof(hr_client_status, endpoint);
	hr_etcd_config etcd;
	hr_client_status st;
	hr_client *c = NULL;
	hr_ring *ring = NULL;

	etcd_closed(&etcd);
	ck_assert_int_eq(hr_client_open(&etcd, &cfg, &c, NULL), 0);
	ck_assert_int_eq(hr_ring_build(&node, 1, NULL, 42, &ring, NULL), 0);
	hr__publish_swap(hr__client_publisher(c), ring);

	memset(&st, FILL, sizeof st);
	ck_assert_int_eq(hr_client_status_get(c, &st, NULL), 0);
	ck_assert_uint_eq(st.revision, 42);
	ck_assert_str_eq(st.endpoint, ""); /* never connected */
	ck_assert_uint_eq(st.watcher_clients, 1);

	memset(&big, FILL, sizeof big);
	ck_assert_int_eq(hr_client_status_get_size(c, &big.s, old, NULL), 0);
	ck_assert_uint_eq(big.s.revision, 42);
	ck_assert_uint_eq(big.s.digest, hr_ring_digest(ring));
	ck_assert(all_bytes(&big, old, sizeof big, FILL));

	memset(&big, FILL, sizeof big);
	ck_assert_int_eq(hr_client_status_get_size(c, &big.s, sizeof big - 1, NULL), 0);
	ck_assert_uint_eq(big.s.revision, 42);
	ck_assert_str_eq(big.s.endpoint, "");
	ck_assert(all_bytes(&big, sizeof big.s, sizeof big - 1, 0));
	ck_assert(all_bytes(&big, sizeof big - 1, sizeof big, FILL));

	ck_assert_int_eq(hr_client_status_get_size(c, &st, 0, NULL), HR_EINVAL);
	/* Too small for the first field: refused, and not a byte written. */
	hr_error err = { 0 };

	memset(&st, FILL, sizeof st);
	ck_assert_int_eq(hr_client_status_get_size(c, &st, sizeof st.revision - 1, &err),
			 HR_EINVAL);
	ck_assert_str_eq(err.message, "status: size 7 is below the first field"
			 " (pass sizeof *out)");
	ck_assert(all_bytes(&st, 0, sizeof st, FILL));
	ck_assert_int_eq(hr_client_status_get_size(c, &st, sizeof st.revision, NULL), 0);
	ck_assert_uint_eq(st.revision, 42);
	ck_assert_int_eq(hr_client_status_get_size(NULL, &st, sizeof st, NULL), HR_EINVAL);
	hr_client_close(c);
}
END_TEST

static int no_keys(void *ud, const char *addr, unsigned pass, hr_rebalance_key_fn fn, void *ctx,
		   hr_error *err)
{
	(void)ud, (void)addr, (void)pass, (void)fn, (void)ctx, (void)err;
	return 0;
}

static int no_fetch(void *ud, const char *addr, const void *key, size_t len,
		    hr_rebalance_value *out, hr_error *err)
{
	(void)ud, (void)addr, (void)key, (void)len, (void)out, (void)err;
	return 0;
}

static int no_add(void *ud, const char *addr, const void *key, size_t len,
		  const hr_rebalance_value *v, uint64_t *cas, hr_error *err)
{
	(void)ud, (void)addr, (void)key, (void)len, (void)v, (void)cas, (void)err;
	return 0;
}

/* The rebalancer's structs: defaults, bad sizes refused by name, the
 * figures written up to the caller's size and no further. */
START_TEST(rebalancer_structs)
{
	const size_t bad[] = { 0, 4, sizeof(size_t), 4097 };
	NEWER(hr_rebalance_progress) big;
	hr_rebalance_backend b;
	hr_rebalance_config cfg;
	hr_rebalancer *rb = NULL;
	hr_error err = { 0 };

	memset(&cfg, FILL, sizeof cfg);
	hr_rebalance_config_init(&cfg);
	ck_assert_uint_eq(cfg.size, sizeof cfg);
	ck_assert(cfg.keys_per_s == 0 && cfg.bytes_per_s == 0);
	ck_assert_str_eq(cfg.ack_prefix, "/hashring/acks/");
	/* A run that no client acknowledges is refused unless asked for. */
	ck_assert_uint_eq(cfg.min_clients, 1);
	ck_assert_int_eq(cfg.wait_timeout_ms, 30000);
	ck_assert_uint_eq(cfg.flags, 0);
	ck_assert_int_eq(cfg.progress_interval_ms, 1000);
	ck_assert_int_eq(cfg.log_level, HR_LOG_INFO);
	ck_assert_ptr_null(cfg.log);
	ck_assert_ptr_null(cfg.on_step);
	memset(&b, FILL, sizeof b);
	hr_rebalance_backend_init(&b);
	ck_assert_uint_eq(b.size, sizeof b);
	ck_assert(all_bytes(&b, sizeof b.size, sizeof b, 0));
	b.enumerate = no_keys;
	b.fetch = no_fetch;
	b.add = no_add;
	cfg.log = quiet;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		b.size = bad[i];
		ck_assert_int_eq(hr_rebalancer_new(&b, &cfg, &rb, &err), HR_EINVAL);
		ck_assert_msg(strstr(err.message, "hr_rebalance_backend: size") &&
			      strstr(err.message, "hr_rebalance_backend_init()"), "%s", err.message);
		b.size = sizeof b;
		cfg.size = bad[i];
		ck_assert_int_eq(hr_rebalancer_new(&b, &cfg, &rb, &err), HR_EINVAL);
		ck_assert_msg(strstr(err.message, "hr_rebalance_config: size") &&
			      strstr(err.message, "hr_rebalance_config_init()"), "%s", err.message);
		cfg.size = sizeof cfg;
	}
	ck_assert_ptr_null(rb);
	ck_assert_int_eq(hr_rebalancer_new(&b, &cfg, &rb, &err), 0);
	memset(&big, FILL, sizeof big);
	ck_assert_int_eq(hr_rebalancer_progress_size(rb, &big.s, sizeof big - 4, NULL), 0);
	ck_assert_int_eq(big.s.step, HR_REBALANCE_STEP_IDLE);
	ck_assert(big.s.eta_s == -1);
	ck_assert(all_bytes(&big, sizeof big.s, sizeof big - 4, 0));
	ck_assert(all_bytes(&big, sizeof big - 4, sizeof big, FILL));
	/* A program built against the first 1.1 struct, which ended at
	 * `promoted`, gets that much; a smaller size is refused. */
	memset(&big, FILL, sizeof big);
	ck_assert_int_eq(hr_rebalancer_progress_size(rb, &big.s, offsetof(hr_rebalance_progress,
									    skipped), NULL), 0);
	ck_assert(big.s.eta_s == -1);
	ck_assert(all_bytes(&big, offsetof(hr_rebalance_progress, skipped), sizeof big, FILL));
	ck_assert_int_eq(hr_rebalancer_progress_size(rb, &big.s,
						     offsetof(hr_rebalance_progress, skipped) - 1, NULL),
			 HR_EINVAL);
	hr_rebalancer_free(rb);
}
END_TEST

static Suite *abi_suite(void)
{
	Suite *s = suite_create("abi");
	TCase *tc = tcase_create("sizes");

	tcase_add_test(tc, init_sets_size_and_defaults);
	tcase_add_test(tc, init_writes_the_callers_size_only);
	tcase_add_test(tc, bad_sizes_are_refused_by_name);
	tcase_add_test(tc, zeroed_struct_says_how_to_set_it_up);
	tcase_add_test(tc, newer_struct_with_unknown_fields_set_is_refused);
	tcase_add_test(tc, older_ring_options_take_defaults);
	tcase_add_test(tc, older_ring_options_default_maglev_size);
	tcase_add_test(tc, older_settings_are_not_read_past_their_size);
	tcase_add_test(tc, readers_take_defaults_past_the_size);
	tcase_add_test(tc, readers_refuse_bad_values);
	tcase_add_test(tc, status_written_up_to_the_callers_size);
	tcase_add_test(tc, rebalancer_structs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(abi_suite());
}
