/* test_reader.c - reader handles (hr_reader): every answer comes from one
 * whole ring while a writer swaps rings as fast as it can (run it under
 * ASan and TSan too), handles come and go meanwhile, and bad input is
 * refused. */
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
	hr_reader *r = NULL;

	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		char key[32];
		hr_owner o;

		/* Handles are opened and closed while swaps go on. */
		if (reads % 5000 == 0) {
			hr_reader_close(r);
			if (hr_reader_open(s->client, &r))
				bad++;
		}
		snprintf(key, sizeof key, "k%lu", reads);
		if (hr_reader_lookup(r, key, strlen(key), &o) != 0 || !consistent(&o) ||
		    o.revision < last || o.node[strlen(o.node) - 1] == 'b')
			bad++;
		last = o.revision;
		reads++;
	}
	hr_reader_close(r);
	__atomic_fetch_add(&s->reads, reads, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->bad, bad, __ATOMIC_RELAXED);
	return NULL;
}

START_TEST(swaps_under_handles)
{
	struct shared s = { hrt_offline_client("/reader/"), 0, 0, 0 };
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

START_TEST(same_answers_as_client_lookup)
{
	hr_client *c = hrt_offline_client("/reader/");
	hr_reader *r = NULL;
	hr_owner a, b;

	ck_assert_int_eq(hr_reader_open(c, &r), 0);
	/* Before any ring: empty, like hr_client_lookup. */
	ck_assert_int_eq(hr_reader_lookup(r, "x", 1, &a), HR_EEMPTY);
	ck_assert_int_eq(hr_client_lookup(c, "x", 1, &b), HR_EEMPTY);
	hr__publish_swap(hr__client_publisher(c), make_ring(9));
	for (int i = 0; i < 2000; i++) {
		char key[16];

		snprintf(key, sizeof key, "key%d", i);
		ck_assert_int_eq(hr_reader_lookup(r, key, strlen(key), &a), 0);
		ck_assert_int_eq(hr_client_lookup(c, key, strlen(key), &b), 0);
		ck_assert_str_eq(a.node, b.node);
		ck_assert_str_eq(a.addr, b.addr);
		ck_assert_str_eq(a.read_node, b.read_node);
		ck_assert_str_eq(a.read_addr, b.read_addr);
		ck_assert_int_eq(a.state, b.state);
		ck_assert_int_eq(a.read_state, b.read_state);
		ck_assert_uint_eq(a.revision, 9);
		ck_assert_uint_eq(a.digest, b.digest);
	}
	/* The empty key is a key. */
	ck_assert_int_eq(hr_reader_lookup(r, NULL, 0, &a), 0);
	hr_reader_close(r);
	hr_client_close(c);
}
END_TEST

START_TEST(bad_input)
{
	hr_client *c = hrt_offline_client("/reader/");
	hr_reader *r = (hr_reader *)&r;
	hr_owner o;

	ck_assert_int_eq(hr_reader_open(NULL, &r), HR_EINVAL);
	ck_assert_ptr_null(r);
	ck_assert_int_eq(hr_reader_open(c, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_reader_open(c, &r), 0);
	ck_assert_int_eq(hr_reader_lookup(NULL, "k", 1, &o), HR_EINVAL);
	ck_assert_int_eq(hr_reader_lookup(r, "k", 1, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_reader_lookup(r, NULL, 3, &o), HR_EINVAL);
	hr_reader_close(r);
	hr_reader_close(NULL);
	hr_client_close(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reader");
	TCase *tc = tcase_create("handles");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, swaps_under_handles);
	tcase_add_test(tc, same_answers_as_client_lookup);
	tcase_add_test(tc, bad_input);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
