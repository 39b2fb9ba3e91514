/* SPDX-License-Identifier: MIT */
/*
 * test_tokens.c - the tokens placement (docs/placement.md section 16): the
 * vectors of the independent Python implementation, rings from given
 * tokens (the conflict rule, the fallback of records without tokens, the
 * digest), records' tokens and their errors, and hr_tokens_allocate(): a
 * join moves keys only to the joiner, exactly its share, deterministically.
 */
#include "hashring.h"
#include "nodeset.h"
#include "ring.h"
#include "record.h"
#include "tokens.h"
#include "hrt_check.h"
#include "hrt_ring_fixture.h"
#include "hrt_vectors.h"

#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VECTORS HR_TEST_DATA_DIR "/vectors/tokens.json"

static hr_ring_options tokens_opts(unsigned vpw)
{
	hr_ring_options o;

	hr_ring_options_init(&o);
	o.placement = HR_PLACEMENT_TOKENS;
	o.vnodes_per_weight = vpw;
	return o;
}

/* ---- vectors ------------------------------------------------------------------ */

START_TEST(vectors_sets)
{
	cJSON *doc = hrt_load_json(VECTORS), *set;
	int r = cJSON_GetObjectItem(doc, "replicas")->valueint;
	int sets = 0;

	cJSON_ArrayForEach(set, cJSON_GetObjectItem(doc, "sets")) {
		hr_ring_options o = tokens_opts(
			(unsigned)cJSON_GetObjectItem(set, "vnodes_per_weight")->valuedouble);
		hr_ring *ring = hrt_vectors_ring(set, &o);

		hrt_vectors_check_set(set, ring, r, true);
		hr_ring_release(ring);
		sets++;
	}
	ck_assert_int_ge(sets, 5);
	cJSON_Delete(doc);
}
END_TEST

/* ---- rings from given tokens ----------------------------------------------------- */

static hr_ring *build_tokens(const hr_node *nodes, size_t count, unsigned vpw)
{
	hr_ring_options o = tokens_opts(vpw);
	hr_error err = { 0 };
	hr_ring *ring = NULL;

	ck_assert_msg(hr_ring_build(nodes, count, &o, 0, &ring, &err) == HR_OK,
		      "%s", err.message);
	return ring;
}

/* Two nodes claim one token: the lower id owns its arc, whatever the order
 * the nodes come in; the other keeps its other tokens. */
START_TEST(token_claimed_twice_goes_to_the_lower_id)
{
	const uint64_t ta[] = { 1000, 5000 }, tb[] = { 3000, 1000 };
	hr_node nodes[2] = {
		{ .id = "b", .addr = "127.0.0.1:2", .weight = 1, .tokens = tb, .ntokens = 2 },
		{ .id = "a", .addr = "127.0.0.1:1", .weight = 1, .tokens = ta, .ntokens = 2 },
	};
	hr_ring *ring = build_tokens(nodes, 2, 0);
	hr_lookup lk;

	ck_assert_int_eq(hr__ring_lookup_pos(ring, 1000, &lk), HR_OK);
	ck_assert_str_eq(lk.node->id, "a");
	ck_assert_int_eq(hr__ring_lookup_pos(ring, 2000, &lk), HR_OK);
	ck_assert_str_eq(lk.node->id, "b");
	ck_assert_int_eq(hr__ring_lookup_pos(ring, 5001, &lk), HR_OK);
	ck_assert_str_eq(lk.node->id, "a");	/* wraps to the first point */
	ck_assert_uint_eq(hr_ring_point_count(ring), 4);
	/* b's point at 1000 owns nothing: its share is (1000, 3000]. */
	ck_assert(hrt_node_share(ring, hr_ring_find(ring, "b"), HR_VIEW_WRITE) ==
		  2000.0 / 18446744073709551616.0);
	hr_ring_release(ring);
}
END_TEST

/* A node without tokens has the native points: a tokens ring of such
 * nodes answers as the XXH3 ring does, and only its digest differs. */
START_TEST(nodes_without_tokens_are_native)
{
	hrt_nodes *s = hrt_nodes_new(20, "n%zu", NULL, 0);
	hr_ring_options o = tokens_opts(50);
	hr_ring_options x;
	hr_ring *tok = NULL, *nat;
	hr_error err = { 0 };

	hr_ring_options_init(&x);
	x.vnodes_per_weight = 50;
	nat = hrt_ring_build(s->nodes, s->n, &x, 0);
	ck_assert_int_eq(hr_ring_build(s->nodes, s->n, &o, 0, &tok, &err), HR_OK);
	ck_assert(hr_ring_moved_share(nat, tok, HR_VIEW_WRITE) == 0);
	ck_assert_uint_eq(hr_ring_point_count(tok), 1000);
	ck_assert_uint_ne(hr_ring_digest(tok), hr_ring_digest(nat));
	hr_ring_release(tok);
	hr_ring_release(nat);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(digest_follows_tokens)
{
	uint64_t t1[] = { 10, 20 }, t2[] = { 10, 21 }, t3[] = { 20, 10 };
	hr_node n1 = { .id = "a", .addr = "127.0.0.1:1", .weight = 1, .tokens = t1, .ntokens = 2 };
	hr_node n2 = n1, n3 = n1;
	hr_ring *r1, *r2, *r3, *again;
	hr_ring_options o;
	const hr_node *got;

	n2.tokens = t2;
	n3.tokens = t3;
	r1 = build_tokens(&n1, 1, 0);
	r2 = build_tokens(&n2, 1, 0);
	r3 = build_tokens(&n3, 1, 0);
	ck_assert_uint_ne(hr_ring_digest(r1), hr_ring_digest(r2));
	/* Order does not matter: tokens are a set. */
	ck_assert_uint_eq(hr_ring_digest(r1), hr_ring_digest(r3));
	/* A ring's node shows its tokens, ascending, in the ring's memory. */
	got = hr_ring_node(r3, 0);
	ck_assert_uint_eq(got->ntokens, 2);
	ck_assert_ptr_ne(got->tokens, t3);
	ck_assert_uint_eq(got->tokens[0], 10);
	ck_assert_uint_eq(got->tokens[1], 20);
	/* Its nodes, with its options, build the same ring. */
	hr_ring_options_init(&o);
	ck_assert_int_eq(hr_ring_options_get(r3, &o, NULL), HR_OK);
	ck_assert_int_eq(hr_ring_build(got, 1, &o, 0, &again, NULL), HR_OK);
	ck_assert_uint_eq(hr_ring_digest(again), hr_ring_digest(r3));
	hr_ring_release(again);
	hr_ring_release(r1);
	hr_ring_release(r2);
	hr_ring_release(r3);
}
END_TEST

/* Bad tokens fail the build and hr_node_check() alike, naming the node. */
static void expect_refused(hr_node *nd, const hr_ring_options *o, int code,
			   const char *msg)
{
	hr_error err = { 0 };
	hr_ring *ring = (hr_ring *)&err;

	ck_assert_int_eq(hr_ring_build(nd, 1, o, 0, &ring, &err), code);
	ck_assert_ptr_null(ring);
	if (msg)
		ck_assert_str_eq(err.message, msg);
	ck_assert_int_eq(hr_node_check(nd, o, &err), code);
	if (msg)
		ck_assert_str_eq(err.message, msg);
}

START_TEST(build_tokens_refuses_bad_input)
{
	static uint64_t many[HR_TOKENS_MAX + 1];
	uint64_t twice[] = { 7, 8, 7 };
	hr_node nd = { .id = "a", .addr = "127.0.0.1:1", .weight = 1 };
	hr_ring_options o = tokens_opts(0), x;
	hr_error err = { 0 };

	for (size_t i = 0; i < HR_TOKENS_MAX + 1; i++)
		many[i] = i;
	nd.tokens = twice;
	nd.ntokens = 3;
	expect_refused(&nd, &o, HR_EINVAL, "node \"a\": token 7 given twice");
	nd.tokens = many;
	nd.ntokens = HR_TOKENS_MAX + 1;
	expect_refused(&nd, &o, HR_ELIMIT, "node \"a\": 1025 tokens exceed the limit of 1024");
	nd.tokens = NULL;
	nd.ntokens = 1;
	expect_refused(&nd, &o, HR_EINVAL, "node \"a\": tokens are NULL");
	hr_ring_options_init(&x);
	nd.tokens = many;
	expect_refused(&nd, &x, HR_EINVAL, "node \"a\": tokens need HR_PLACEMENT_TOKENS");
	ck_assert_int_eq(hr_ring_build(&nd, 1, &o, 0, NULL, &err), HR_EINVAL);
	nd.weight = 0;
	expect_refused(&nd, &o, HR_EINVAL, NULL);
	/* Good tokens pass the check. */
	nd.weight = 1;
	ck_assert_int_eq(hr_node_check(&nd, &o, &err), HR_OK);
}
END_TEST

/* ---- records ------------------------------------------------------------------------ */

static int parse(const char *value, hr__record *rec, hr__tokens *t, hr_error *err)
{
	return hr__record_parse_tokens("n", 1, value, strlen(value), rec, t, err);
}

START_TEST(record_tokens)
{
	hr__record rec;
	hr__tokens t;
	hr_error err = { 0 };

	ck_assert_int_eq(parse("{\"addr\":\"127.0.0.1:1\",\"tokens\":[\"18446744073709551615\",\"0\",\"42\"]}",
			       &rec, &t, &err), HR_OK);
	ck_assert_uint_eq(t.n, 3);
	ck_assert_uint_eq(t.v[0], 0);
	ck_assert_uint_eq(t.v[1], 42);
	ck_assert_uint_eq(t.v[2], UINT64_MAX);
	hr__record_clear(&rec);
	hr__tokens_clear(&t);

	/* Without the field, or for another placement, no tokens. */
	ck_assert_int_eq(parse("{\"addr\":\"127.0.0.1:1\"}", &rec, &t, &err), HR_OK);
	ck_assert_uint_eq(t.n, 0);
	hr__record_clear(&rec);
	ck_assert_int_eq(parse("127.0.0.1:1", &rec, &t, &err), HR_OK);
	ck_assert_uint_eq(t.n, 0);
	hr__record_clear(&rec);
	ck_assert_int_eq(hr__record_parse("n", 1, "{\"addr\":\"a:1\",\"tokens\":7}", 25,
					  &rec, &err), HR_OK);
	hr__record_clear(&rec);
}
END_TEST

START_TEST(record_tokens_bad)
{
	static const struct {
		const char *value;
		int rc;
		const char *msg;
	} cases[] = {
		{ "{\"addr\":\"a:1\",\"tokens\":[\"01\"]}", HR_EPARSE,
		  "node \"n\": token 0 is \"01\", not a decimal string from 0 to 18446744073709551615" },
		{ "{\"addr\":\"a:1\",\"tokens\":[\"1\",\"-1\"]}", HR_EPARSE,
		  "node \"n\": token 1 is \"-1\", not a decimal string from 0 to 18446744073709551615" },
		{ "{\"addr\":\"a:1\",\"tokens\":[\"18446744073709551616\"]}", HR_EPARSE, NULL },
		{ "{\"addr\":\"a:1\",\"tokens\":[\"\"]}", HR_EPARSE, NULL },
		{ "{\"addr\":\"a:1\",\"tokens\":[\" 1\"]}", HR_EPARSE, NULL },
		{ "{\"addr\":\"a:1\",\"tokens\":[\"0x10\"]}", HR_EPARSE, NULL },
		{ "{\"addr\":\"a:1\",\"tokens\":[12]}", HR_EPARSE,
		  "node \"n\": token 0 is \"(not a string)\", not a decimal string from 0 to 18446744073709551615" },
		{ "{\"addr\":\"a:1\",\"tokens\":\"12\"}", HR_EPARSE,
		  "node \"n\": field \"tokens\" must be an array of decimal strings" },
		{ "{\"addr\":\"a:1\",\"tokens\":[]}", HR_EINVAL,
		  "node \"n\": field \"tokens\" is empty" },
		{ "{\"addr\":\"a:1\",\"tokens\":[\"5\",\"6\",\"5\"]}", HR_EINVAL,
		  "node \"n\": token 5 given twice" },
		{ "{\"addr\":\"a:1\",\"tokens\":[\"5\"],\"tokens\":[\"6\"]}", HR_EPARSE,
		  "node \"n\": field \"tokens\" given twice" },
		{ "{\"tokens\":[\"5\"]}", HR_EPARSE, NULL },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		hr__record rec;
		hr__tokens t = { (uint64_t *)&t, 9 };
		hr_error err = { 0 };

		ck_assert_msg(parse(cases[i].value, &rec, &t, &err) == cases[i].rc,
			      "case %zu: %s", i, err.message);
		ck_assert_ptr_null(t.v);
		ck_assert_uint_eq(t.n, 0);
		ck_assert_ptr_null(rec.id);
		hrt_assert_clean_message(err.message);
		if (cases[i].msg)
			ck_assert_str_eq(err.message, cases[i].msg);
	}
}
END_TEST

START_TEST(record_too_many_tokens)
{
	size_t cap = 32 + (HR_TOKENS_MAX + 1) * 8;
	char *v = malloc(cap);
	size_t len = (size_t)sprintf(v, "{\"addr\":\"a:1\",\"tokens\":[");
	hr__record rec;
	hr__tokens t;
	hr_error err = { 0 };

	for (int i = 0; i <= HR_TOKENS_MAX; i++)
		len += (size_t)sprintf(v + len, "%s\"%d\"", i ? "," : "", i);
	strcpy(v + len, "]}");
	ck_assert_int_eq(parse(v, &rec, &t, &err), HR_ELIMIT);
	ck_assert_str_eq(err.message, "node \"n\": 1025 tokens exceed the limit of 1024");
	free(v);
}
END_TEST

/* A members file's tokens count with the tokens placement only; a bad
 * tokens field is then a bad record, as any bad field. */
START_TEST(members_tokens)
{
	static const char doc[] =
		"{\"a\":{\"addr\":\"127.0.0.1:1\",\"tokens\":[\"100\",\"200\"]},"
		" \"b\":\"127.0.0.1:2\"}";
	static const char bad[] = "{\"a\":{\"addr\":\"127.0.0.1:1\",\"tokens\":[\"x\"]}}";
	hr_ring_options o = tokens_opts(3);
	hr_ring *ring = NULL;
	hr_error err = { 0 };

	ck_assert_int_eq(hr_ring_from_json(doc, strlen(doc), &o, &ring, &err), HR_OK);
	ck_assert_uint_eq(hr_ring_node_vnodes(ring, hr_ring_find(ring, "a")), 2);
	ck_assert_uint_eq(hr_ring_node_vnodes(ring, hr_ring_find(ring, "b")), 3);
	ck_assert_uint_eq(hr_ring_find(ring, "a")->ntokens, 2);
	hr_ring_release(ring);
	ck_assert_int_eq(hr_ring_from_json(bad, strlen(bad), &o, &ring, &err), HR_EPARSE);
	ck_assert_ptr_null(ring);
	ck_assert_int_eq(hr_ring_from_json(bad, strlen(bad), NULL, &ring, &err), HR_OK);
	ck_assert_uint_eq(hr_ring_find(ring, "a")->ntokens, 0);
	ck_assert_ptr_null(hr_ring_find(ring, "a")->tokens);
	hr_ring_release(ring);
}
END_TEST

/* The set that follows etcd keeps each member's tokens, replaced with the
 * record, and builds the ring of them. */
START_TEST(nodeset_keeps_tokens)
{
	hr__nodeset s = { 0 };
	hr_ring_options o = tokens_opts(0);
	static const char *values[] = {
		"{\"addr\":\"127.0.0.1:1\",\"tokens\":[\"100\"]}",
		"{\"addr\":\"127.0.0.1:1\",\"tokens\":[\"300\",\"400\"]}",
	};
	hr_ring *ring = NULL;
	const hr_node *got;

	for (int i = 0; i < 2; i++) {
		hr__record rec;
		hr__tokens t;
		hr_error err = { 0 };

		ck_assert_int_eq(parse(values[i], &rec, &t, &err), HR_OK);
		ck_assert_int_eq(hr__nodeset_put_tokens(&s, &rec, &t, 2 + i, 2 + i), HR_OK);
		ck_assert_ptr_null(t.v);
	}
	ck_assert_int_eq(hr__nodeset_build(&s, &o, 3, &ring, NULL), HR_OK);
	got = hr_ring_node(ring, 0);
	ck_assert_uint_eq(got->ntokens, 2);
	ck_assert_uint_eq(got->tokens[0], 300);
	hr_ring_release(ring);
	ck_assert_int_eq(hr__nodeset_remove(&s, "n"), 1);
	hr__nodeset_clear(&s);
}
END_TEST

/* ---- allocation ------------------------------------------------------------------------- */

struct grown {
	hr_node nodes[64];
	char ids[64][16];
	uint64_t tokens[64][4 * 16];
	size_t tn[64];
	size_t n;
};

/* Node i joins g's ring with `per` tokens per unit of weight. */
static hr_ring *join(struct grown *g, hr_ring *ring, double weight, size_t per)
{
	size_t i = g->n;
	hr_error err = { 0 };

	snprintf(g->ids[i], sizeof g->ids[i], "n%zu", i);
	g->nodes[i] = (hr_node){ .id = g->ids[i], .addr = "127.0.0.1:1",
				 .weight = weight };
	g->tn[i] = per * (size_t)weight;
	ck_assert_msg(hr_tokens_allocate(ring, &g->nodes[i], g->tn[i], g->tokens[i],
					 &err) == HR_OK, "%s", err.message);
	g->nodes[i].tokens = g->tokens[i];
	g->nodes[i].ntokens = g->tn[i];
	g->n++;
	return build_tokens(g->nodes, g->n, 0);
}

/* Every key the joiner does not own keeps its owner, and the joiner's share
 * is exactly what moved. */
START_TEST(join_moves_only_to_the_joiner)
{
	static struct grown g;
	hr_ring *ring = NULL;

	memset(&g, 0, sizeof g);
	for (int k = 0; k < 40; k++) {
		hr_ring *next = join(&g, ring, 1 + k % 3, 16);
		const hr_node *joiner = hr_ring_find(next, g.ids[g.n - 1]);
		hr_diff *diff = NULL;
		const hr_arc *arcs;

		ck_assert(hr_ring_moved_share(ring, next, HR_VIEW_WRITE) ==
			  hrt_node_share(next, joiner, HR_VIEW_WRITE));
		if (ring) {
			ck_assert_int_eq(hr_diff_new(ring, next, HR_VIEW_WRITE, &diff, NULL),
					 HR_OK);
			arcs = hr_diff_arcs(diff);
			for (size_t a = 0; a < hr_diff_arc_count(diff); a++)
				EXPECT(arcs[a].new_node == joiner);
			hr_diff_free(diff);
		}
		/* Its tokens are ascending and sit on no other node's point. */
		for (size_t t = 1; t < g.tn[g.n - 1]; t++)
			EXPECT(g.tokens[g.n - 1][t - 1] < g.tokens[g.n - 1][t]);
		hr_ring_release(ring);
		ring = next;
	}
	hr_ring_release(ring);
}
END_TEST

/* Same ring, same node: same tokens; a node already in the ring is
 * allocated as if it were not there. */
START_TEST(allocation_is_deterministic)
{
	static struct grown g;
	hr_ring *ring = NULL, *with;
	uint64_t a[16], b[16], c[16];
	hr_node nd = { .id = "late", .addr = "127.0.0.1:9", .weight = 1 };
	hr_node nodes[65];

	memset(&g, 0, sizeof g);
	for (int k = 0; k < 12; k++) {
		hr_ring *next = join(&g, ring, 1, 16);

		hr_ring_release(ring);
		ring = next;
	}
	ck_assert_int_eq(hr_tokens_allocate(ring, &nd, 16, a, NULL), HR_OK);
	ck_assert_int_eq(hr_tokens_allocate(ring, &nd, 16, b, NULL), HR_OK);
	ck_assert_mem_eq(a, b, sizeof a);
	memcpy(nodes, g.nodes, g.n * sizeof *nodes);
	nodes[g.n] = nd;
	nodes[g.n].tokens = b;
	nodes[g.n].ntokens = 16;
	with = build_tokens(nodes, g.n + 1, 0);
	ck_assert_int_eq(hr_tokens_allocate(with, &nd, 16, c, NULL), HR_OK);
	ck_assert_mem_eq(a, c, sizeof a);
	hr_ring_release(with);
	hr_ring_release(ring);
}
END_TEST

/* The first node's tokens are evenly spaced: it owns the circle, and the
 * second node of equal weight gets exactly half. */
START_TEST(first_and_second_node)
{
	static struct grown g;
	hr_ring *one, *two;
	double share;

	memset(&g, 0, sizeof g);
	size_t even = 0;

	one = join(&g, NULL, 1, 16);
	/* 16 gaps around the circle: 15 of UINT64_MAX / 16, one a little
	 * longer. */
	for (size_t t = 0; t < 16; t++)
		even += g.tokens[0][(t + 1) % 16] - g.tokens[0][t] == UINT64_MAX / 16;
	ck_assert_uint_eq(even, 15);
	two = join(&g, one, 1, 16);
	share = hrt_node_share(two, hr_ring_find(two, "n1"), HR_VIEW_WRITE);
	ck_assert_msg(share > 0.5 - 1e-12 && share < 0.5 + 1e-12, "share %.17g", share);
	hr_ring_release(one);
	hr_ring_release(two);
}
END_TEST

START_TEST(allocate_refuses_bad_input)
{
	hr_node nd = { .id = "a", .addr = "127.0.0.1:1", .weight = 1 };
	uint64_t out[HR_TOKENS_MAX + 1];
	hr_error err = { 0 };

	ck_assert_int_eq(hr_tokens_allocate(NULL, &nd, 0, out, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "node \"a\": 0 tokens: a node needs at least one");
	ck_assert_int_eq(hr_tokens_allocate(NULL, &nd, HR_TOKENS_MAX + 1, out, &err),
			 HR_ELIMIT);
	ck_assert_int_eq(hr_tokens_allocate(NULL, &nd, HR_TOKENS_MAX, out, &err), HR_OK);
	ck_assert_int_eq(hr_tokens_allocate(NULL, NULL, 1, out, &err), HR_EINVAL);
	ck_assert_int_eq(hr_tokens_allocate(NULL, &nd, 1, NULL, &err), HR_EINVAL);
	nd.id = "a/b";
	ck_assert_int_eq(hr_tokens_allocate(NULL, &nd, 1, out, &err), HR_EINVAL);
	hrt_assert_clean_message(err.message);
}
END_TEST

/* ---- leaving: heirs ------------------------------------------------------------------ */

/* g's ring with node `leaver` in `state` (or left out: HR_STATE_DRAINING + 1)
 * and its tokens listed by their heirs as well (none: NULL). */
static hr_ring *handed(const struct grown *g, size_t leaver, int state,
		       const hr_ring *ring, const hr_node *const *heirs)
{
	static uint64_t tokens[64][4 * 16 + 16];
	hr_node nodes[64];
	size_t n = 0;
	const hr_node *left = hr_ring_find(ring, g->ids[leaver]);

	for (size_t i = 0; i < g->n; i++) {
		if (i == leaver && state > HR_STATE_DRAINING)
			continue;
		nodes[n] = g->nodes[i];
		if (i == leaver)
			nodes[n].state = (hr_state)state;
		memcpy(tokens[n], g->tokens[i], g->tn[i] * sizeof **tokens);
		nodes[n].tokens = tokens[n];
		for (size_t t = 0; heirs && t < left->ntokens; t++)
			if (!strcmp(heirs[t]->id, g->ids[i]))
				tokens[n][nodes[n].ntokens++] = left->tokens[t];
		n++;
	}
	return build_tokens(nodes, n, 0);
}

static double max_over_fair(const hr_ring *ring)
{
	double shares[64], total = 0, max = 0;
	size_t n = hr_ring_node_shares(ring, HR_VIEW_WRITE, shares, 64);

	for (size_t i = 0; i < n; i++)
		total += hr_ring_node(ring, i)->weight;
	for (size_t i = 0; i < n; i++) {
		double r = shares[i] / (hr_ring_node(ring, i)->weight / total);

		max = r > max ? r : max;
	}
	return max;
}

/* While the leaver drains, reads stay where they were and writes are where
 * they will be once it has left; the leave moves keys only from it, to
 * its heirs, and leaves the ring better balanced than arcs falling to the
 * next point do. */
START_TEST(heirs_take_only_the_leavers_keys)
{
	static struct grown g;
	hr_ring *ring = NULL, *draining, *after, *plain;
	const hr_node *heirs[48], *again[48], *leaver;
	hr_diff *diff = NULL;
	const hr_arc *arcs;
	size_t l = 7, n;

	memset(&g, 0, sizeof g);
	for (int k = 0; k < 30; k++) {
		hr_ring *next = join(&g, ring, 1 + k % 3, 16);

		hr_ring_release(ring);
		ring = next;
	}
	leaver = hr_ring_find(ring, g.ids[l]);
	n = leaver->ntokens;
	ck_assert_uint_eq(n, 32);
	ck_assert_int_eq(hr_tokens_heirs(ring, leaver, heirs, NULL), HR_OK);
	ck_assert_int_eq(hr_tokens_heirs(ring, leaver, again, NULL), HR_OK);
	ck_assert_mem_eq(heirs, again, n * sizeof *heirs);
	for (size_t t = 0; t < n; t++)
		EXPECT(heirs[t] != leaver && heirs[t]);

	draining = handed(&g, l, HR_STATE_DRAINING, ring, heirs);
	after = handed(&g, l, HR_STATE_DRAINING + 1, ring, heirs);
	ck_assert(hr_ring_moved_share(ring, draining, HR_VIEW_READ) == 0);
	ck_assert(hr_ring_moved_share(draining, after, HR_VIEW_WRITE) == 0);
	ck_assert(hr_ring_moved_share(draining, after, HR_VIEW_READ) ==
		  hrt_node_share(ring, leaver, HR_VIEW_WRITE));
	ck_assert_int_eq(hr_diff_new(ring, after, HR_VIEW_WRITE, &diff, NULL), HR_OK);
	arcs = hr_diff_arcs(diff);
	ck_assert_uint_gt(hr_diff_arc_count(diff), 0);
	for (size_t a = 0; a < hr_diff_arc_count(diff); a++)
		EXPECT(!strcmp(arcs[a].old_node->id, g.ids[l]));
	hr_diff_free(diff);

	/* A draining leaver's heirs are chosen as an active one's. */
	ck_assert_int_eq(hr_tokens_heirs(draining, hr_ring_find(draining, g.ids[l]),
					 again, NULL), HR_OK);
	for (size_t t = 0; t < n; t++)
		EXPECT(!strcmp(again[t]->id, heirs[t]->id));

	plain = handed(&g, l, HR_STATE_DRAINING + 1, ring, NULL);
	ck_assert_msg(max_over_fair(after) < max_over_fair(plain), "%g vs %g",
		      max_over_fair(after), max_over_fair(plain));
	hr_ring_release(plain);
	hr_ring_release(after);
	hr_ring_release(draining);
	hr_ring_release(ring);
}
END_TEST

START_TEST(heirs_refuse_bad_input)
{
	const uint64_t ta[] = { 1000, 5000 }, tb[] = { 3000 };
	hr_node nodes[3] = {
		{ .id = "a", .addr = "127.0.0.1:1", .weight = 1, .tokens = ta, .ntokens = 2 },
		{ .id = "b", .addr = "127.0.0.1:2", .weight = 1, .tokens = tb, .ntokens = 1 },
		{ .id = "c", .addr = "127.0.0.1:3", .weight = 1 },
	};
	hr_node plain[3] = { nodes[0], nodes[1], nodes[2] };
	hr_ring *ring = build_tokens(nodes, 3, 16), *native = NULL, *two;
	const hr_node *heirs[2];
	hr_error err = { 0 };

	ck_assert_int_eq(hr_tokens_heirs(NULL, &nodes[0], heirs, &err), HR_EINVAL);
	ck_assert_int_eq(hr_tokens_heirs(ring, NULL, heirs, &err), HR_EINVAL);
	ck_assert_int_eq(hr_tokens_heirs(ring, hr_ring_node(ring, 0), NULL, &err), HR_EINVAL);
	/* A node of another ring, or a copy, is not one of this ring's. */
	ck_assert_int_eq(hr_tokens_heirs(ring, &nodes[0], heirs, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "the node is not one of this ring's");
	ck_assert_int_eq(hr_tokens_heirs(ring, hr_ring_find(ring, "c"), heirs, &err),
			 HR_EINVAL);
	ck_assert_str_eq(err.message, "node \"c\" has no tokens to hand over");
	/* b is the only other node with tokens: it takes both of a's. */
	ck_assert_int_eq(hr_tokens_heirs(ring, hr_ring_find(ring, "a"), heirs, &err), HR_OK);
	ck_assert_str_eq(heirs[0]->id, "b");
	ck_assert_str_eq(heirs[1]->id, "b");
	/* Without b, nobody can list a's tokens: c has none. */
	two = build_tokens((hr_node[]){ nodes[0], nodes[2] }, 2, 16);
	ck_assert_int_eq(hr_tokens_heirs(two, hr_ring_find(two, "a"), heirs, &err),
			 HR_EINVAL);
	ck_assert_str_eq(err.message,
			 "node \"a\": no other node of the write view has tokens and room for more");
	for (int i = 0; i < 3; i++)
		plain[i].ntokens = 0;
	ck_assert_int_eq(hr_ring_build(plain, 3, NULL, 0, &native, NULL), HR_OK);
	ck_assert_int_eq(hr_tokens_heirs(native, hr_ring_node(native, 0), heirs, &err),
			 HR_EINVAL);
	ck_assert_str_eq(err.message, "heirs need a ring of the tokens placement, not xxh3");
	hr_ring_release(native);
	hr_ring_release(two);
	hr_ring_release(ring);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tokens");
	TCase *tc = tcase_create("tokens");

	tcase_add_test(tc, vectors_sets);
	tcase_add_test(tc, token_claimed_twice_goes_to_the_lower_id);
	tcase_add_test(tc, nodes_without_tokens_are_native);
	tcase_add_test(tc, digest_follows_tokens);
	tcase_add_test(tc, build_tokens_refuses_bad_input);
	tcase_add_test(tc, record_tokens);
	tcase_add_test(tc, record_tokens_bad);
	tcase_add_test(tc, record_too_many_tokens);
	tcase_add_test(tc, members_tokens);
	tcase_add_test(tc, nodeset_keeps_tokens);
	tcase_add_test(tc, join_moves_only_to_the_joiner);
	tcase_add_test(tc, allocation_is_deterministic);
	tcase_add_test(tc, first_and_second_node);
	tcase_add_test(tc, allocate_refuses_bad_input);
	tcase_add_test(tc, heirs_take_only_the_leavers_keys);
	tcase_add_test(tc, heirs_refuse_bad_input);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
