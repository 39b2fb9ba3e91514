/* SPDX-License-Identifier: MIT */
/* test_batch.c - batch lookups (hr_ring_lookup_batch, hr_client_lookup_batch):
 * every key's answer is the single lookup's, on
 * random rings of both placements with warming and draining nodes, on
 * rings of tied positions, at every pipeline distance and batch size; all
 * of a batch comes from one ring while rings are swapped (run it under
 * ASan and TSan too); bad input is refused with a message. */
#include "client.h"
#include "hrt_check.h"
#include "hrt_rand.h"
#include "hrt_ring_fixture.h"
#include "publish.h"
#include "ring_batch.h"
#include "ring_build.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEYS_MAX 1500
#define KEY_BYTES 40

/* Keys of random lengths 0..KEY_BYTES - 1 (the empty key among them). */
struct keys {
	unsigned char bytes[KEYS_MAX][KEY_BYTES];
	const void *ptr[KEYS_MAX];
	size_t len[KEYS_MAX];
};

static void keys_fill(struct keys *k, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t b = 0; b < KEY_BYTES; b++)
			k->bytes[i][b] = (unsigned char)splitmix64(seed);
		k->len[i] = i % 97 == 5 ? 0 : (size_t)(splitmix64(seed) % KEY_BYTES);
		/* A NULL key of length 0 is the empty key, as for single lookups. */
		k->ptr[i] = k->len[i] == 0 && i % 2 ? NULL : k->bytes[i];
	}
}

/* The number hr_ring_node() gives `node` under, or HR_NO_NODE for NULL. */
static uint32_t number_of(const hr_ring *ring, const hr_node *node)
{
	if (!node)
		return HR_NO_NODE;
	for (size_t i = 0; i < hr_ring_node_count(ring); i++)
		if (hr_ring_node(ring, i) == node)
			return (uint32_t)i;
	ck_abort_msg("node %s is not in the ring", node->id);
	return HR_NO_NODE;
}

/* Batch answers of keys[0..n) equal hr_ring_lookup()'s; returns how many
 * differ. */
static size_t differences(const hr_ring *ring, const struct keys *k, size_t n,
			  const hr_batch_owner *out)
{
	size_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		hr_lookup l;

		if (hr_ring_lookup(ring, k->ptr[i], k->len[i], &l, NULL) != HR_OK)
			return n;
		bad += out[i].node != number_of(ring, l.node) ||
		       out[i].read_node != number_of(ring, l.read_node);
	}
	return bad;
}

/* Every batch size from 0 to 40, a few larger ones, and every distance,
 * on one ring. */
static void check_ring(const hr_ring *ring, uint64_t seed)
{
	static const size_t sizes[] = { 64, 65, 100, 257, 1000, KEYS_MAX };
	static struct keys k;
	static hr_batch_owner out[KEYS_MAX];
	hr_error err;

	keys_fill(&k, KEYS_MAX, &seed);
	for (size_t n = 0; n <= 40; n++) {
		ck_assert_int_eq(hr_ring_lookup_batch(ring, k.ptr, k.len, n, out, &err), 0);
		ck_assert_uint_eq(differences(ring, &k, n, out), 0);
	}
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		ck_assert_int_eq(hr_ring_lookup_batch(ring, k.ptr, k.len, sizes[s], out,
						      &err), 0);
		ck_assert_uint_eq(differences(ring, &k, sizes[s], out), 0);
	}
	for (size_t d = 0; d <= HR__BATCH_DIST_MAX; d++) {
		memset(out, 0xa5, sizeof out);
		ck_assert_int_eq(hr__ring_lookup_batch_dist(ring, k.ptr, k.len, 300, out,
							    d, &err), 0);
		ck_assert_msg(differences(ring, &k, 300, out) == 0, "distance %zu", d);
	}
}

/* A random ring: 1..600 nodes, whole weights 1..3, a fifth warming and a
 * fifth draining (or none), either placement. */
static hr_ring *random_ring(uint64_t *seed, hr_placement placement)
{
	size_t most = splitmix64(seed) % 2 ? 600 : 12;
	size_t n = 1 + (size_t)(splitmix64(seed) % most);
	/* distinct addresses: ketama names its points from them */
	hrt_nodes *s = hrt_nodes_new(n, "n-%zu", "127.0.0.1:%zu", 10000);
	hr_ring_options opts = { .size = sizeof opts, .placement = placement,
				 .vnodes_per_weight = 1 + (unsigned)(splitmix64(seed) % 60) };
	int states = (int)(splitmix64(seed) % 2);
	hr_ring *ring;

	for (size_t i = 0; i < n; i++) {
		uint64_t r = splitmix64(seed);

		s->nodes[i].weight = (double)(1 + r % 3);
		if (states)
			s->nodes[i].state = r % 5 == 3 ? HR_STATE_WARMING :
					    r % 5 == 4 ? HR_STATE_DRAINING : HR_STATE_ACTIVE;
	}
	ring = hrt_ring_build(s->nodes, n, &opts, 1);
	hrt_nodes_free(s);
	return ring;
}

START_TEST(random_rings_answer_as_single_lookups)
{
	uint64_t seed = 0x5eedba7c4ull + (uint64_t)_i;

	for (int r = 0; r < 6; r++) {
		hr_ring *ring = random_ring(&seed, r % 3 == 2 ? HR_PLACEMENT_KETAMA :
								 HR_PLACEMENT_XXH3);

		check_ring(ring, seed);
		hr_ring_release(ring);
	}
}
END_TEST

/* hrt_tie_hash shares every position between all the nodes; const_hash
 * puts every point at one position, one crowded index bucket. */
static uint64_t const_hash(const void *name, size_t len)
{
	(void)name;
	(void)len;
	return 12345;
}

/* Positions the keys land on are XXH3's: spread, far more above the tied
 * points than at them, so keys wrap too. */
START_TEST(tied_positions_answer_as_single_lookups)
{
	hr__point_hash_fn hashes[] = { hrt_tie_hash, const_hash };
	hrt_nodes *s = hrt_nodes_new(50, "t%zu", NULL, 0);
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 40 };

	for (size_t i = 0; i < 50; i++)
		s->nodes[i].state = i % 4 == 1 ? HR_STATE_DRAINING :
				    i % 4 == 2 ? HR_STATE_WARMING : HR_STATE_ACTIVE;
	for (int h = 0; h < 2; h++) {
		for (int states = 0; states < 2; states++) {
			hr_node plain[50];
			hr_ring *ring;

			/* all active (one view), then warming and draining too */
			memcpy(plain, s->nodes, sizeof plain);
			for (size_t i = 0; i < 50 && !states; i++)
				plain[i].state = HR_STATE_ACTIVE;
			ck_assert_int_eq(hr__ring_build_hashed(plain, 50, &opts, 0,
							       hashes[h], &ring, NULL),
					 HR_OK);
			check_ring(ring, 77 + (uint64_t)h);
			hr_ring_release(ring);
		}
	}
	hrt_nodes_free(s);
}
END_TEST

/* Every node warming (no read view), every node draining (no write view). */
START_TEST(one_view_empty)
{
	hrt_nodes *s = hrt_nodes_new(30, "v%zu", NULL, 0);
	hr_state only[2] = { HR_STATE_WARMING, HR_STATE_DRAINING };

	for (int o = 0; o < 2; o++) {
		static hr_batch_owner out[KEYS_MAX];
		static struct keys k;
		uint64_t seed = 9;
		hr_ring *ring;

		for (size_t i = 0; i < 30; i++)
			s->nodes[i].state = only[o];
		ring = hrt_ring_build(s->nodes, 30, NULL, 3);
		keys_fill(&k, 500, &seed);
		ck_assert_int_eq(hr_ring_lookup_batch(ring, k.ptr, k.len, 500, out, NULL), 0);
		ck_assert_uint_eq(differences(ring, &k, 500, out), 0);
		for (size_t i = 0; i < 500; i++)
			EXPECT(o == 0 ? out[i].read_node == HR_NO_NODE && out[i].node < 30 :
					out[i].node == HR_NO_NODE && out[i].read_node < 30);
		check_ring(ring, 5);
		hr_ring_release(ring);
	}
	hrt_nodes_free(s);
}
END_TEST

START_TEST(empty_ring_and_no_keys)
{
	hr_ring *empty = hrt_ring_build(NULL, 0, NULL, 4);
	hrt_nodes *s = hrt_nodes_new(3, "e%zu", NULL, 0);
	hr_ring *ring = hrt_ring_build(s->nodes, 3, NULL, 4);
	const void *ptrs[3] = { "a", "b", "c" };
	size_t lens[3] = { 1, 1, 1 };
	hr_batch_owner out[3];
	hr_error err = { 0 };

	memset(out, 0, sizeof out);
	ck_assert_int_eq(hr_ring_lookup_batch(empty, ptrs, lens, 3, out, &err), HR_EEMPTY);
	ck_assert_int_eq(err.code, HR_EEMPTY);
	ck_assert_ptr_nonnull(strstr(err.message, "no node"));
	hrt_assert_clean_message(err.message);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(out[i].node, HR_NO_NODE);
		ck_assert_uint_eq(out[i].read_node, HR_NO_NODE);
	}
	ck_assert_int_eq(hr_ring_lookup_batch(empty, NULL, NULL, 0, NULL, NULL), HR_EEMPTY);
	/* n = 0: nothing to read or write, the arrays may be NULL */
	ck_assert_int_eq(hr_ring_lookup_batch(ring, NULL, NULL, 0, NULL, &err), 0);
	ck_assert_int_eq(hr_ring_lookup_batch(ring, ptrs, lens, 0, out, NULL), 0);
	hr_ring_release(empty);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* HR_EINVAL with a message naming the argument; out untouched. */
static void expect_einval(int rc, const hr_error *err, const char *names,
			  const hr_batch_owner *out, size_t n)
{
	ck_assert_int_eq(rc, HR_EINVAL);
	ck_assert_int_eq(err->code, HR_EINVAL);
	hrt_assert_clean_message(err->message);
	ck_assert_msg(strstr(err->message, names), "\"%s\" does not name %s",
		      err->message, names);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(out[i].node == 7 && out[i].read_node == 7,
			      "out[%zu] was written", i);
}

START_TEST(bad_input)
{
	hrt_nodes *s = hrt_nodes_new(3, "b%zu", NULL, 0);
	hr_ring *ring = hrt_ring_build(s->nodes, 3, NULL, 4);
	hr_client *c = hrt_offline_client("/batch/bad/");
	const void *ptrs[5] = { "a", "b", "c", NULL, "e" };
	size_t lens[5] = { 1, 1, 1, 3, 1 };
	hr_batch_owner out[5];
	hr_epoch ep = { 11, 12 };
	hr_error err;

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	for (int i = 0; i < 5; i++)
		out[i] = (hr_batch_owner){ 7, 7 };

	expect_einval(hr_ring_lookup_batch(NULL, ptrs, lens, 5, out, &err), &err,
		      "NULL ring", out, 5);
	expect_einval(hr_ring_lookup_batch(ring, NULL, lens, 5, out, &err), &err,
		      "keys is NULL with n = 5", out, 5);
	expect_einval(hr_ring_lookup_batch(ring, ptrs, NULL, 5, out, &err), &err,
		      "lens is NULL", out, 5);
	expect_einval(hr_ring_lookup_batch(ring, ptrs, lens, 2, NULL, &err), &err,
		      "out is NULL with n = 2", out, 0);
	/* the NULL key of length 3 is keys[3]: nothing before it is written */
	expect_einval(hr_ring_lookup_batch(ring, ptrs, lens, 5, out, &err), &err,
		      "keys[3] is NULL with lens[3] = 3", out, 5);
	expect_einval(hr__ring_lookup_batch_dist(ring, ptrs, lens, 3, out,
						 HR__BATCH_DIST_MAX + 1, &err),
		      &err, "distance", out, 5);
	/* and without an hr_error */
	ck_assert_int_eq(hr_ring_lookup_batch(ring, ptrs, lens, 5, out, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup_batch(NULL, NULL, NULL, 1, NULL, NULL), HR_EINVAL);

	expect_einval(hr_client_lookup_batch(NULL, ptrs, lens, 3, out, &ep, &err), &err,
		      "NULL client", out, 5);
	expect_einval(hr_client_lookup_batch(c, ptrs, lens, 5, out, &ep, &err), &err,
		      "keys[3]", out, 5);
	expect_einval(hr_client_lookup_batch(c, ptrs, NULL, 3, out, &ep, &err), &err,
		      "lens is NULL", out, 5);
	/* the epoch is not touched by HR_EINVAL */
	ck_assert_uint_eq(ep.revision, 11);
	ck_assert_uint_eq(ep.digest, 12);
	ck_assert_int_eq(hr_client_lookup_batch(NULL, NULL, NULL, 0, NULL, NULL, NULL),
			 HR_EINVAL);

	hr_client_close(c);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* Through the client: the single lookups' owners, the published ring's
 * epoch; before the first ring, HR_EEMPTY at revision 0. */
START_TEST(client_answers_as_single_lookups)
{
	static struct keys k;
	static hr_batch_owner api[KEYS_MAX], held[KEYS_MAX];
	hr_client *c = hrt_offline_client("/batch/client/");
	hr_ring *now;
	uint64_t seed = 31;
	hr_epoch ep = { 99, 99 };
	hr_error err;
	hr_ring *ring;

	keys_fill(&k, KEYS_MAX, &seed);
	ck_assert_int_eq(hr_client_lookup_batch(c, k.ptr, k.len, 10, api, &ep, &err),
			 HR_EEMPTY);
	ck_assert_uint_eq(ep.revision, 0);
	ck_assert_uint_eq(api[3].node, HR_NO_NODE);

	ring = random_ring(&seed, HR_PLACEMENT_XXH3);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	ck_assert_int_eq(hr_client_lookup_batch(c, k.ptr, k.len, KEYS_MAX, api, &ep, &err),
			 0);
	ck_assert_uint_eq(ep.revision, hr_ring_revision(ring));
	ck_assert_uint_eq(ep.digest, hr_ring_digest(ring));
	/* The ring held is the one that answered. */
	now = hr_client_ring(c);
	ck_assert_uint_eq(hr_ring_digest(now), ep.digest);
	ck_assert_int_eq(hr_ring_lookup_batch(now, k.ptr, k.len, KEYS_MAX, held, &err), 0);
	hr_ring_release(now);
	ck_assert_uint_eq(differences(ring, &k, KEYS_MAX, api), 0);
	ck_assert_int_eq(memcmp(api, held, sizeof api), 0);
	for (size_t i = 0; i < KEYS_MAX; i++) {
		hr_owner o;

		ck_assert_int_eq(hr_client_lookup(c, k.ptr[i], k.len[i], &o, NULL), 0);
		EXPECT(api[i].node == HR_NO_NODE ? o.node[0] == '\0' :
			!strcmp(o.node, hr_ring_node(ring, api[i].node)->id));
		EXPECT(api[i].read_node == HR_NO_NODE ? o.read_node[0] == '\0' :
			!strcmp(o.read_node, hr_ring_node(ring, api[i].read_node)->id));
	}
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

/* ---- one ring per batch while rings are swapped -------------------------- */

#define GENERATIONS 300
#define SWAP_READERS 2
#define BATCH 64

struct swapping {
	hr_client *client;
	hr_ring *rings[GENERATIONS + 1];	/* rings[g] has revision g */
	int done;
	int started;				/* readers past their first batch */
	unsigned long batches, bad;
};

static void *swap_reader(void *p)
{
	struct swapping *sw = p;
	struct keys k;
	hr_batch_owner out[BATCH];
	uint64_t seed = (uint64_t)(uintptr_t)&k;
	unsigned long batches = 0, bad = 0;

	while (!__atomic_load_n(&sw->done, __ATOMIC_ACQUIRE)) {
		hr_epoch ep;
		int rc;

		keys_fill(&k, BATCH, &seed);
		if (batches % 2) {
			/* On a ring held, which the epoch names. */
			hr_ring *held = hr_client_ring(sw->client);

			rc = hr_ring_lookup_batch(held, k.ptr, k.len, BATCH, out, NULL);
			ep = (hr_epoch){ hr_ring_revision(held), hr_ring_digest(held) };
			hr_ring_release(held);
		} else {
			rc = hr_client_lookup_batch(sw->client, k.ptr, k.len, BATCH, out, &ep,
						    NULL);
		}
		if (batches++ == 0)
			__atomic_add_fetch(&sw->started, 1, __ATOMIC_RELEASE);
		if (rc || ep.revision < 1 || ep.revision > GENERATIONS) {
			bad++;
			continue;
		}
		/* Every answer is that of the ring the epoch names. */
		bad += differences(sw->rings[ep.revision], &k, BATCH, out) != 0;
		bad += ep.digest != hr_ring_digest(sw->rings[ep.revision]);
	}
	__atomic_fetch_add(&sw->batches, batches, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sw->bad, bad, __ATOMIC_RELAXED);
	return NULL;
}

START_TEST(one_ring_per_batch_under_swaps)
{
	static struct swapping sw;
	pthread_t th[SWAP_READERS];
	hr__publisher *pub;

	memset(&sw, 0, sizeof sw);
	sw.client = hrt_offline_client("/batch/swap/");
	pub = hr__client_publisher(sw.client);
	for (unsigned g = 1; g <= GENERATIONS; g++)
		sw.rings[g] = hrt_ring_generation("s", g, 8);
	hr__publish_swap(pub, hr_ring_retain(sw.rings[1]));
	for (int i = 0; i < SWAP_READERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, swap_reader, &sw), 0);
	/* On a busy machine the readers may not run before the swaps end:
	 * they read while rings change only once they have started. */
	for (int waited = 0; __atomic_load_n(&sw.started, __ATOMIC_ACQUIRE) < SWAP_READERS &&
			     waited < 10000; waited++) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	for (unsigned g = 2; g <= GENERATIONS; g++) {
		hr__publish_swap(pub, hr_ring_retain(sw.rings[g]));
		for (volatile int spin = 0; spin < 20000; spin++)
			;
	}
	__atomic_store_n(&sw.done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < SWAP_READERS; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_gt(sw.batches, 0);
	ck_assert_uint_eq(sw.bad, 0);
	hr_client_close(sw.client);
	for (unsigned g = 1; g <= GENERATIONS; g++)
		hr_ring_release(sw.rings[g]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("batch");
	TCase *tc = tcase_create("answers");

	tcase_add_loop_test(tc, random_rings_answer_as_single_lookups, 0, 4);
	tcase_add_test(tc, tied_positions_answer_as_single_lookups);
	tcase_add_test(tc, one_view_empty);
	tcase_add_test(tc, empty_ring_and_no_keys);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, client_answers_as_single_lookups);
	suite_add_tcase(s, tc);
	tc = tcase_create("threads");
	tcase_add_test(tc, one_ring_per_batch_under_swaps);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
