/* SPDX-License-Identifier: MIT */
/*
 * test_ketama.c - ketama placement against Debian's libmemcached itself:
 * for every server count from 1 to 100, with equal and unequal weights,
 * default, other and absent ports, libmemcached (weighted ketama) and a
 * ketama ring must send every key to the same node.  libmemcached is
 * loaded at run time so that only this suite depends on it.
 */
#include "hashring.h"
#include "ketama.h"
#include "ring.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"
#include "hrt_rand.h"

#include <dlfcn.h>
#include <libmemcached/memcached.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Keys per server count: the full figure in the plain build, fewer under
 * the sanitizers, which slow MD5 and the walk ten times or more. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KEYS 2000
#else
#define KEYS 100000
#endif

#define MAX_SERVERS 100 /* libmemcached asserts beyond 100 servers */

/* ---- libmemcached, loaded at run time ------------------------------------ */

static struct {
	__typeof__(memcached_create) *create;
	__typeof__(memcached_free) *free;
	__typeof__(memcached_behavior_set) *behavior_set;
	__typeof__(memcached_server_list_append_with_weight) *list_append;
	__typeof__(memcached_server_push) *push;
	__typeof__(memcached_server_list_free) *list_free;
	__typeof__(memcached_generate_hash) *generate_hash;
	__typeof__(memcached_generate_hash_value) *hash_value;
} mc;

static void load_libmemcached(void)
{
	void *h = dlopen("libmemcached.so.11", RTLD_NOW);

	if (!h)
		h = dlopen("libmemcached.so", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "test_ketama: cannot load libmemcached: %s\n",
			dlerror());
		exit(EXIT_FAILURE);
	}
	*(void **)&mc.create = dlsym(h, "memcached_create");
	*(void **)&mc.free = dlsym(h, "memcached_free");
	*(void **)&mc.behavior_set = dlsym(h, "memcached_behavior_set");
	*(void **)&mc.list_append = dlsym(h, "memcached_server_list_append_with_weight");
	*(void **)&mc.push = dlsym(h, "memcached_server_push");
	*(void **)&mc.list_free = dlsym(h, "memcached_server_list_free");
	*(void **)&mc.generate_hash = dlsym(h, "memcached_generate_hash");
	*(void **)&mc.hash_value = dlsym(h, "memcached_generate_hash_value");
	if (!mc.create || !mc.free || !mc.behavior_set || !mc.list_append ||
	    !mc.push || !mc.list_free || !mc.generate_hash || !mc.hash_value) {
		fprintf(stderr, "test_ketama: libmemcached lacks a symbol\n");
		exit(EXIT_FAILURE);
	}
}

/* ---- fixtures ------------------------------------------------------------ */

/* One server as both sides see it. */
struct server {
	char id[32];
	char addr[64];        /* what the ring gets   */
	char host[48];        /* what libmemcached gets */
	unsigned port;        /* 0: none given          */
	unsigned weight;
	hr_state state;
};

enum layout {
	EQUAL_DEFAULT_PORT,   /* weight 1, host:11211           */
	UNEQUAL_OTHER_PORTS,  /* weights 1..10, ports != 11211  */
	MIXED,                /* weights 1..1000, every port form, ids not in
				 addr order */
	LAYOUTS
};

static void make_servers(struct server *s, size_t n, enum layout layout,
			 uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		struct server *sv = &s[i];
		uint64_t r = splitmix64(&seed);

		memset(sv, 0, sizeof *sv);
		sv->state = HR_STATE_ACTIVE;
		switch (layout) {
		case EQUAL_DEFAULT_PORT:
			snprintf(sv->id, sizeof sv->id, "cache-%03zu", i);
			snprintf(sv->host, sizeof sv->host, "127.0.%zu.%zu",
				 i / 250, i % 250 + 1);
			sv->port = 11211;
			sv->weight = 1;
			break;
		case UNEQUAL_OTHER_PORTS:
			snprintf(sv->id, sizeof sv->id, "mc%zu", i);
			snprintf(sv->host, sizeof sv->host, "cache%zu.example.org", i);
			sv->port = 11212 + (unsigned)(r % 5000);
			sv->weight = 1 + (unsigned)(r >> 32) % 10;
			break;
		default:
			/* Ids sort differently from the addrs and the
			 * creation order. */
			snprintf(sv->id, sizeof sv->id, "%08x-%zu",
				 (unsigned)(r >> 32), i);
			snprintf(sv->host, sizeof sv->host, "127.168.%zu.%u",
				 i, (unsigned)(r % 200));
			sv->port = (unsigned[]){ 0, 11211, 11311, 22122 }[r % 4];
			sv->weight = 1 + (unsigned)((r >> 20) % 1000);
			break;
		}
		if (sv->port)
			snprintf(sv->addr, sizeof sv->addr, "%s:%u", sv->host,
				 sv->port);
		else
			snprintf(sv->addr, sizeof sv->addr, "%s", sv->host);
	}
}

static int cmp_server_id(const void *a, const void *b)
{
	return strcmp(((const struct server *)a)->id,
		      ((const struct server *)b)->id);
}

static hr_ring *ring_of(const struct server *s, size_t n)
{
	hr_node nodes[MAX_SERVERS + 8];
	hr_ring_options opts = { .size = sizeof opts, .placement = HR_PLACEMENT_KETAMA };
	hr_error err = { 0 };
	hr_ring *ring = NULL;
	int rc;

	for (size_t i = 0; i < n; i++) {
		nodes[i] = (hr_node){ .id = s[i].id, .addr = s[i].addr,
				      .weight = s[i].weight, .state = s[i].state };
	}
	rc = hr_ring_build(nodes, n, &opts, 0, &ring, &err);
	ck_assert_msg(rc == HR_OK, "build: %s", err.message);
	return ring;
}

/* libmemcached with the servers of `view`, in id order (s is sorted);
 * map[i] is the index in s of libmemcached's server i. */
static memcached_st *memcached_of(const struct server *s, size_t n,
				  hr_view view, size_t *map, size_t *count)
{
	memcached_st *m = mc.create(NULL);
	memcached_server_list_st list = NULL;
	memcached_return_t rc = MEMCACHED_SUCCESS;

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(mc.behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1),
			 MEMCACHED_SUCCESS);
	*count = 0;
	for (size_t i = 0; i < n; i++) {
		if (view == HR_VIEW_WRITE ? s[i].state == HR_STATE_DRAINING :
					    s[i].state == HR_STATE_WARMING)
			continue;
		list = mc.list_append(list, s[i].host, (in_port_t)s[i].port,
				      s[i].weight, &rc);
		ck_assert_int_eq(rc, MEMCACHED_SUCCESS);
		map[(*count)++] = i;
	}
	/* All at once: adding servers one by one rebuilds the continuum
	 * each time, the same result for n times the work. */
	if (list) {
		ck_assert_int_eq(mc.push(m, list), MEMCACHED_SUCCESS);
		mc.list_free(list);
	}
	return m;
}

/* A key of 0 to 40 bytes, text or binary. */
static size_t make_key(char *buf, uint64_t *seed, size_t k)
{
	uint64_t r = splitmix64(seed);

	if (k % 3)
		return (size_t)snprintf(buf, 64, "user:%zu:%llx", k,
					(unsigned long long)(r & 0xffffff));
	size_t len = (size_t)(r % 41);
	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			r = splitmix64(seed);
		buf[i] = (char)(r >> (8 * (i % 8)));
	}
	return len;
}

/* Compares the owner of `keys` keys in one view; returns disagreements. */
static size_t compare_view(const struct server *s, size_t n, const hr_ring *ring,
			   hr_view view, size_t keys, uint64_t seed)
{
	size_t map[MAX_SERVERS + 8], count, bad = 0;
	memcached_st *m = memcached_of(s, n, view, map, &count);
	char key[64];

	for (size_t k = 0; k < keys; k++) {
		size_t len = make_key(key, &seed, k);
		uint32_t idx = mc.generate_hash(m, key, len);
		hr_lookup res;

		EXPECT(hr_ring_lookup(ring, key, len, &res, NULL) == HR_OK);
		const hr_node *got = view == HR_VIEW_WRITE ? res.node : res.read_node;
		EXPECT(idx < count);
		if (!got || strcmp(got->id, s[map[idx]].id) != 0)
			bad++;
	}
	mc.free(m);
	return bad;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- agreement ----------------------------------------------------------- */

/* One server count. */
static void agree_n(enum layout layout, size_t n)
{
	struct server s[MAX_SERVERS];
	hr_ring *ring;
	size_t bad;
	double t0 = now_sec();

	make_servers(s, n, layout, 0x5eed0000u + n * 7 + layout);
	qsort(s, n, sizeof *s, cmp_server_id);
	ring = ring_of(s, n);
	bad = compare_view(s, n, ring, HR_VIEW_WRITE, KEYS, n * 1000003u + layout);
	ck_assert_msg(bad == 0, "layout %d, %zu servers: %zu of %d keys disagree",
		      layout, n, bad, KEYS);
	if (n == 25 || n == 100)
		fprintf(stderr, "ketama layout %d n=%zu: %d keys, 0 disagreements, %.2f s\n",
			layout, n, KEYS, now_sec() - t0);
	hr_ring_release(ring);
}

/* Every server count, 1..100, in one test: a forked test each costs more
 * than the comparison under the sanitizers. */
static void agree(enum layout layout)
{
	for (size_t n = 1; n <= MAX_SERVERS; n++)
		agree_n(layout, n);
}

START_TEST(test_agree_equal)
{
	agree(EQUAL_DEFAULT_PORT);
}
END_TEST

START_TEST(test_agree_unequal)
{
	agree(UNEQUAL_OTHER_PORTS);
}
END_TEST

START_TEST(test_agree_mixed)
{
	agree(MIXED);
}
END_TEST

/* Warming and draining nodes: each view is libmemcached's continuum of the
 * view's own servers (so point counts differ between the views). */
START_TEST(test_agree_views)
{
	struct server s[MAX_SERVERS];
	size_t n = 3 + (size_t)_i * 13;
	uint64_t seed = 42 + (uint64_t)_i;
	hr_ring *ring;

	make_servers(s, n, MIXED, seed);
	for (size_t i = 0; i < n; i++) {
		uint64_t r = splitmix64(&seed) % 5;

		s[i].state = r == 0 ? HR_STATE_WARMING :
			     r == 1 ? HR_STATE_DRAINING : HR_STATE_ACTIVE;
	}
	qsort(s, n, sizeof *s, cmp_server_id);
	ring = ring_of(s, n);
	ck_assert_uint_eq(compare_view(s, n, ring, HR_VIEW_WRITE, KEYS / 4, seed), 0);
	ck_assert_uint_eq(compare_view(s, n, ring, HR_VIEW_READ, KEYS / 4, seed + 1), 0);
	hr_ring_release(ring);
}
END_TEST

/* IPv6 in brackets: libmemcached is given the bare address. */
START_TEST(test_agree_ipv6)
{
	struct server s[3];
	hr_ring *ring;

	memset(s, 0, sizeof s);
	for (int i = 0; i < 3; i++) {
		snprintf(s[i].id, sizeof s[i].id, "v6-%d", i);
		snprintf(s[i].host, sizeof s[i].host, "fd00::%d", i + 1);
		s[i].port = i ? 11211 + (unsigned)i : 11211;
		char addr[sizeof s[i].addr];
		/* Through a local buffer: host and addr share one object. */
		snprintf(addr, sizeof addr, "[%s]:%u", s[i].host, s[i].port);
		memcpy(s[i].addr, addr, sizeof addr);
		s[i].weight = (unsigned)i + 1;
	}
	ring = ring_of(s, 3);
	ck_assert_uint_eq(compare_view(s, 3, ring, HR_VIEW_WRITE, KEYS / 4, 9), 0);
	hr_ring_release(ring);
}
END_TEST

/* ---- pieces -------------------------------------------------------------- */

START_TEST(test_key_hash)
{
	uint64_t seed = 7;
	char key[64];

	for (size_t k = 0; k < KEYS; k++) {
		size_t len = make_key(key, &seed, k);

		EXPECT(hr__ketama_key_hash(key, len) ==
		       mc.hash_value(key, len, MEMCACHED_HASH_MD5));
	}
	ck_assert_uint_eq(hr__ketama_key_hash(NULL, 0),
			  mc.hash_value("", 0, MEMCACHED_HASH_MD5));
}
END_TEST

/* 160 points a server, except where float32 rounding takes four off; a
 * node's vnodes are its points and the ring's point count their sum. */
START_TEST(test_point_counts)
{
	static struct hr__ketama_server servers[1000];
	size_t short_counts = 0;

	for (size_t n = 1; n <= 1000; n++) {
		servers[n - 1] = (struct hr__ketama_server){ "h", 1 };
		for (size_t i = 0; i < n; i++) {
			unsigned p = hr__ketama_server_points(servers, n, i);

			ck_assert(p == 160 || p == 156);
			if (i == 0 && p == 156)
				short_counts++;
		}
	}
	/* The rounding is real but rare. */
	ck_assert_uint_gt(short_counts, 0);
	ck_assert_uint_lt(short_counts, 200);

	struct server s[40];
	hr_ring *ring;
	size_t sum = 0;

	make_servers(s, 40, MIXED, 3);
	ring = ring_of(s, 40);
	for (size_t i = 0; i < 40; i++) {
		unsigned v = hr_ring_node_vnodes(ring, hr_ring_node(ring, i));

		ck_assert_uint_eq(v % 4, 0);
		sum += v;
	}
	ck_assert_uint_eq(sum, hr_ring_point_count(ring));
	hr_ring_release(ring);
}
END_TEST

/* Placement is part of the digest; vnodes_per_weight is not, in ketama. */
START_TEST(test_digest)
{
	hr_node nodes[2] = {
		{ .id = "a", .addr = "127.0.0.1:11211", .weight = 1 },
		{ .id = "b", .addr = "127.0.0.2:11211", .weight = 2 },
	};
	hr_ring_options x = { .size = sizeof x };
	hr_ring_options k = { .size = sizeof k, .placement = HR_PLACEMENT_KETAMA };
	hr_ring_options k2 = { .size = sizeof k2, .vnodes_per_weight = 7,
			       .placement = HR_PLACEMENT_KETAMA };
	hr_ring *rx, *rk, *rk2;

	ck_assert_int_eq(hr_ring_build(nodes, 2, &x, 0, &rx, NULL), HR_OK);
	ck_assert_int_eq(hr_ring_build(nodes, 2, &k, 0, &rk, NULL), HR_OK);
	ck_assert_int_eq(hr_ring_build(nodes, 2, &k2, 0, &rk2, NULL), HR_OK);
	ck_assert_uint_ne(hr_ring_digest(rx), hr_ring_digest(rk));
	ck_assert_uint_eq(hr_ring_digest(rk), hr_ring_digest(rk2));
	/* Shares are the arcs of the 32-bit continuum. */
	double total = hrt_node_share(rk, hr_ring_node(rk, 0), HR_VIEW_WRITE) +
		       hrt_node_share(rk, hr_ring_node(rk, 1), HR_VIEW_WRITE);
	ck_assert_double_eq_tol(total, 1.0, 1e-12);
	hr_ring_release(rx);
	hr_ring_release(rk);
	hr_ring_release(rk2);
}
END_TEST

START_TEST(test_bad_input)
{
	static const struct {
		const char *addr;
		double weight;
	} bad[] = {
		{ "h:11211", 1.5 }, { "h:11211", 0.5 }, { "h:11211", 5e9 },
		{ "h:", 1 }, { "h:65536", 1 }, { "h:12a", 1 }, { "h:-1", 1 },
		{ "[::1", 1 }, { "[::1]x", 1 }, { "[::1]:", 1 }, { "h:1234567", 1 },
	};
	hr_ring_options k = { .size = sizeof k, .placement = HR_PLACEMENT_KETAMA };
	hr_ring *ring = (hr_ring *)1;
	hr_error err;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		hr_node node = { .id = "n1", .addr = bad[i].addr,
				 .weight = bad[i].weight };

		memset(&err, 0, sizeof err);
		ck_assert_int_eq(hr_ring_build(&node, 1, &k, 0, &ring, &err), HR_EINVAL);
		ck_assert_ptr_null(ring);
		ck_assert_msg(strstr(err.message, "n1"), "message: %s", err.message);
	}
	/* The same nodes are fine for the native placement. */
	hr_node frac = { .id = "n1", .addr = "h:", .weight = 1.5 };
	ck_assert_int_eq(hr_ring_build(&frac, 1, NULL, 0, &ring, NULL), HR_OK);
	hr_ring_release(ring);

	hr_ring_options unknown = { .size = sizeof unknown, .placement = (hr_placement)7 };
	ck_assert_int_eq(hr_ring_build(&frac, 1, &unknown, 0, &ring, &err), HR_EINVAL);

	/* Accepted forms: no port, port 0 (the default), bare IPv6. */
	const char *good[] = { "host", "host:0", "::1", "[::1]", "[::1]:11212", ":11211" };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		hr_node node = { .id = "n1", .addr = good[i], .weight = 3 };

		ck_assert_int_eq(hr_ring_build(&node, 1, &k, 0, &ring, &err), HR_OK);
		ck_assert_uint_eq(hr_ring_point_count(ring), 160);
		hr_ring_release(ring);
	}
}
END_TEST

/* An empty ring, and a node whose share rounds to zero points. */
START_TEST(test_edges)
{
	hr_ring_options k = { .size = sizeof k, .placement = HR_PLACEMENT_KETAMA };
	hr_node nodes[2] = {
		{ .id = "big", .addr = "127.0.0.1", .weight = 100000 },
		{ .id = "tiny", .addr = "127.0.0.2", .weight = 1 },
	};
	hr_ring *ring;
	hr_lookup res;

	ck_assert_int_eq(hr_ring_build(NULL, 0, &k, 0, &ring, NULL), HR_OK);
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, &res, NULL), HR_EEMPTY);
	hr_ring_release(ring);

	ck_assert_int_eq(hr_ring_build(nodes, 2, &k, 0, &ring, NULL), HR_OK);
	ck_assert_uint_eq(hr_ring_node_vnodes(ring, hr_ring_find(ring, "tiny")), 0);
	for (int i = 0; i < 1000; i++) {
		char key[16];

		snprintf(key, sizeof key, "k%d", i);
		ck_assert_int_eq(hr_ring_lookup(ring, key, strlen(key), &res, NULL), HR_OK);
		ck_assert_str_eq(res.node->id, "big");
	}
	hr_ring_release(ring);
}
END_TEST

static Suite *ketama_suite(void)
{
	Suite *s = suite_create("ketama");
	TCase *tc = tcase_create("pieces");

	tcase_add_test(tc, test_key_hash);
	tcase_add_test(tc, test_point_counts);
	tcase_add_test(tc, test_digest);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_edges);
	suite_add_tcase(s, tc);

	tc = tcase_create("libmemcached");
	tcase_add_test(tc, test_agree_equal);
	tcase_add_test(tc, test_agree_unequal);
	tcase_add_test(tc, test_agree_mixed);
	tcase_add_loop_test(tc, test_agree_views, 0, 7);
	tcase_add_test(tc, test_agree_ipv6);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	load_libmemcached();
	return hrt_run(ketama_suite());
}
