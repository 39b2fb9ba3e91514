/* SPDX-License-Identifier: MIT */
/* test_lookup_swaps.c - a client's lookups while a writer swaps rings as
 * fast as it can (run it under ASan and TSan too): every answer of
 * hr_client_lookup() comes from one whole ring, never older than the one
 * before, whether the thread looks up through its own reference or holds
 * the ring (hr_client_ring) meanwhile; bad input is refused. */
#include "client.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READERS 2
#define SWAPS 2000

/* Ring `gen`: any answer tells which ring it came from. */
static hr_ring *make_ring(unsigned gen)
{
	return hrt_ring_generation("r", gen, 8);
}

struct shared {
	hr_client *client;
	int done;
	unsigned long reads, bad;
};

/* True when `s` ends with `tail`. */
static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/* Owners and addresses of the ring the revision names (the draining
 * node "b" never owns a write; addresses end with the revision's port). */
static int consistent(const hr_owner *o)
{
	char want[32];
	int n = snprintf(want, sizeof want, "r%llu-", (unsigned long long)o->revision);

	if (strncmp(o->node, want, (size_t)n) || strncmp(o->read_node, want, (size_t)n))
		return 0;
	snprintf(want, sizeof want, ":%llu", (unsigned long long)o->revision);
	return ends_with(o->addr, want) && ends_with(o->read_addr, want);
}

static void *reader_main(void *p)
{
	struct shared *s = p;
	unsigned long reads = 0, bad = 0;
	uint64_t last = 0;
	hr_ring *held = NULL;

	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		char key[32];
		hr_owner o;

		/* Rings are held and dropped while swaps go on. */
		if (reads % 5000 == 0) {
			hr_ring_release(held);
			held = hr_client_ring(s->client);
			if (!held || hr_ring_revision(held) < last)
				bad++;
		}
		snprintf(key, sizeof key, "k%lu", reads);
		if (hr_client_lookup(s->client, key, strlen(key), &o, NULL) != 0 ||
		    !consistent(&o) || o.revision < last ||
		    o.node[strlen(o.node) - 1] == 'b')
			bad++;
		last = o.revision;
		reads++;
	}
	hr_ring_release(held);
	__atomic_fetch_add(&s->reads, reads, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->bad, bad, __ATOMIC_RELAXED);
	return NULL;
}

START_TEST(swaps_under_lookups)
{
	struct shared s = { hrt_offline_client("/swaps/"), 0, 0, 0 };
	hr__publisher *pub = hr__client_publisher(s.client);
	pthread_t th[READERS];

	hr__publish_swap(pub, make_ring(1));
	for (int i = 0; i < READERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader_main, &s), 0);
	for (unsigned gen = 2; gen < SWAPS + 2; gen++)
		hr__publish_swap(pub, make_ring(gen));
	__atomic_store_n(&s.done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_gt(s.reads, 0);
	ck_assert_uint_eq(s.bad, 0);
	hr_client_close(s.client);
}
END_TEST

START_TEST(bad_input)
{
	hr_client *c = hrt_offline_client("/swaps/");
	hr_error err = { 0 };
	hr_client_status st;
	hr_replica rep[2];
	hr_owner o;

	/* Before any ring: empty, and the empty key is a key. */
	ck_assert_int_eq(hr_client_lookup(c, "x", 1, &o, &err), HR_EEMPTY);
	ck_assert_int_eq(err.code, HR_EEMPTY);
	ck_assert_str_eq(err.message, "no node in the ring");
	ck_assert_int_eq(hr_client_lookup(c, NULL, 0, &o, NULL), HR_EEMPTY);
	ck_assert_int_eq(hr_client_lookup(NULL, "k", 1, &o, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "lookup: client is NULL");
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, NULL, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "lookup: out is NULL");
	ck_assert_int_eq(hr_client_lookup(c, NULL, 3, &o, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "lookup: key is NULL with length 3");
	ck_assert_int_eq(hr_client_replicas(c, "k", 1, HR_VIEW_READ, rep, 65, NULL, &err),
			 HR_EINVAL);
	ck_assert_str_eq(err.message, "replicas: r 65 with out set (at most 64)");
	ck_assert_int_eq(hr_client_replicas(c, "k", 1, (hr_view)7, rep, 2, NULL, &err),
			 HR_EINVAL);
	ck_assert_str_eq(err.message, "replicas: bad view 7");
	ck_assert_int_eq(hr_client_status_get_size(c, &st, 0, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "status: size is 0");
	ck_assert_ptr_null(hr_client_ring(NULL));
	hr_client_close(c);
}
END_TEST

/* hr_client_lookup() of `c` copies out what hr_ring_lookup() on `ring`
 * answers, for many keys; returns how many it checked (0: HR_EEMPTY,
 * which both must say). */
static unsigned check_copy_out(hr_client *c, const hr_ring *ring)
{
	unsigned n = 0;

	for (unsigned i = 0; i < 3000; i++) {
		char key[32];
		int len = snprintf(key, sizeof key, "key-%u", i);
		hr_owner o;
		hr_lookup l;
		int rc = hr_client_lookup(c, key, (size_t)len, &o, NULL);

		ck_assert_int_eq(rc, hr_ring_lookup(ring, key, (size_t)len, &l, NULL));
		if (rc == HR_EEMPTY)
			continue;
		ck_assert_int_eq(rc, HR_OK);
		ck_assert_str_eq(o.node, l.node ? l.node->id : "");
		ck_assert_str_eq(o.addr, l.node ? l.node->addr : "");
		ck_assert_str_eq(o.read_node, l.read_node ? l.read_node->id : "");
		ck_assert_str_eq(o.read_addr, l.read_node ? l.read_node->addr : "");
		ck_assert_int_eq(o.state, l.node ? l.node->state : HR_STATE_ACTIVE);
		ck_assert_int_eq(o.read_state, l.read_node ? l.read_node->state :
				 HR_STATE_ACTIVE);
		ck_assert_uint_eq(o.revision, l.revision);
		ck_assert_uint_eq(o.digest, l.digest);
		n++;
	}
	return n;
}

/* The copy-out of every kind of node and ring: ids and addresses short
 * (inline in the node's lookup line), at the line's limit, past it
 * (spilled) and at the limit of a node id; every node active, warming,
 * draining, or a mix; one node; none. */
START_TEST(copy_out_of_every_node)
{
	static const size_t lens[] = { 1, 12, 28, 29, 30, 31, 64, HR_ID_MAX };
	static const hr_state mixes[][3] = {
		{ HR_STATE_ACTIVE, HR_STATE_ACTIVE, HR_STATE_ACTIVE },
		{ HR_STATE_ACTIVE, HR_STATE_WARMING, HR_STATE_DRAINING },
		{ HR_STATE_WARMING, HR_STATE_WARMING, HR_STATE_WARMING },
		{ HR_STATE_DRAINING, HR_STATE_DRAINING, HR_STATE_DRAINING },
	};
	enum { N = sizeof lens / sizeof lens[0] };
	static char ids[N][HR_ID_MAX + 1], addrs[N][HR_ADDR_MAX + 1];
	hr_client *c = hrt_offline_client("/copy/");
	hr_node nodes[N];
	hr_ring *held;
	uint64_t rev = 1;

	for (size_t i = 0; i < N; i++) {
		/* Distinct ids of each length; addresses of the lengths in
		 * another order, so short ids meet long addresses. */
		size_t al = lens[(i + 3) % N];

		memset(ids[i], 'a' + (int)i, lens[i]);
		ids[i][lens[i]] = '\0';
		memset(addrs[i], '0' + (int)i, al);
		addrs[i][al] = '\0';
	}
	for (size_t m = 0; m < sizeof mixes / sizeof mixes[0]; m++) {
		for (size_t from = 0; from < N; from++) {
			/* Nodes from..N-1, then one node alone. */
			for (int alone = 0; alone < 2; alone++) {
				size_t n = alone ? 1 : N - from;
				hr_ring *ring;

				for (size_t i = 0; i < n; i++)
					nodes[i] = (hr_node){ .id = ids[from + i],
							      .addr = addrs[from + i],
							      .weight = 1,
							      .state = mixes[m][(from + i) % 3] };
				ring = hrt_ring_build(nodes, n, NULL, rev++);
				hr__publish_swap(hr__client_publisher(c), ring);
				check_copy_out(c, ring);
			}
		}
	}
	/* None: both views empty. */
	hr__publish_swap(hr__client_publisher(c), hrt_ring_build(NULL, 0, NULL, rev));
	held = hr_client_ring(c);
	ck_assert_uint_eq(hr_ring_revision(held), rev);
	ck_assert_uint_eq(check_copy_out(c, held), 0);
	hr_ring_release(held);
	hr_client_close(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lookup_swaps");
	TCase *tc = tcase_create("swaps");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, swaps_under_lookups);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, copy_out_of_every_node);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
