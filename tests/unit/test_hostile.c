/* test_hostile.c - hostile and broken input, offline: records of several
 * MB, 100,000 nodes, deep nesting, invalid UTF-8, control bytes, numbers
 * out of range, duplicates, bad base64, truncated messages, and NULL
 * arguments.  Each must give a clear error (never a crash) and leave
 * everything else as it was. */
#include "etcd.h"
#include "node.h"
#include "record.h"
#include "ring.h"
#include "ring_build.h"
#include "watch_stream.h"
#include "hrt_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H "\"header\":{\"revision\":\"15\"}"

/* A message must be one printable line: no raw control byte, no NUL. */
static void assert_clean_message(const hr_error *err)
{
	ck_assert_msg(err->message[0] != '\0', "empty error message");
	for (const char *p = err->message; *p; p++)
		ck_assert_msg((unsigned char)*p >= 0x20 && (unsigned char)*p != 0x7f,
			      "control byte 0x%02x in \"%s\"", (unsigned char)*p,
			      err->message);
}

static int record(const char *id, const char *value, size_t len, hr__record *rec,
		  hr_error *err)
{
	return hr__record_parse(id, strlen(id), value, len, rec, err);
}

/* ---- node records ------------------------------------------------------- */

START_TEST(record_of_several_megabytes)
{
	size_t n = 5u << 20;
	char *v = malloc(n);
	hr__record rec;
	hr_error err = { 0 };

	memset(v, ' ', n);
	memcpy(v, "{\"addr\":\"127.0.0.1:1\"}", 22);
	ck_assert_int_eq(record("big", v, n, &rec, &err), HR_ELIMIT);
	ck_assert_ptr_nonnull(strstr(err.message, "big"));
	ck_assert_ptr_nonnull(strstr(err.message, "65536"));
	ck_assert_ptr_null(rec.id);
	assert_clean_message(&err);
	free(v);
}
END_TEST

START_TEST(record_deeply_nested)
{
	size_t n = 200000;
	char *v = malloc(n + 1);
	hr__record rec;
	hr_error err = { 0 };
	hr_ring *ring = NULL;

	strcpy(v, "{\"addr\":\"a:1\",\"x\":");
	memset(v + strlen(v), '[', n - strlen(v));
	v[n] = '\0';
	/* Over the record limit first; under it, the depth limit, where the
	 * bracket opening level 1001 is (the record's object is level 1, its
	 * first '[' at byte 18 level 2). */
	ck_assert_int_eq(record("deep", v, n, &rec, &err), HR_ELIMIT);
	ck_assert_int_eq(record("deep", v, 60000, &rec, &err), HR_EPARSE);
	ck_assert_str_eq(err.message, "node \"deep\": nested deeper than 1000 levels"
			 " of arrays and objects (byte 1017)");
	assert_clean_message(&err);
	/* A members document has no record limit: depth still stops it. */
	v[0] = '{';
	ck_assert_int_eq(hr_ring_from_json(v, n, NULL, &ring, &err), HR_EPARSE);
	ck_assert_ptr_null(ring);
	ck_assert_str_eq(err.message, "members document: nested deeper than 1000 levels"
			 " of arrays and objects (byte 1017)");
	assert_clean_message(&err);
	free(v);
}
END_TEST

/* Exactly the limit is fine, inside an unknown field too (ignored whatever
 * its type); one level more is the depth error, not "malformed JSON". */
START_TEST(record_nesting_at_the_limit)
{
	static char v[4096];
	hr__record rec;
	hr_error err = { 0 };
	hr_ring *ring = NULL;
	size_t o;

	for (int extra = 0; extra <= 1; extra++) {
		/* A record: its object plus 999 arrays (plus one). */
		o = (size_t)sprintf(v, "{\"addr\":\"a:1\",\"x\":");
		memset(v + o, '[', 999 + extra);
		memset(v + o + 999 + extra, ']', 999 + extra);
		strcpy(v + o + 2 * (999 + extra), "}");
		ck_assert_int_eq(record("n", v, strlen(v), &rec, &err),
				 extra ? HR_EPARSE : HR_OK);
		if (extra)
			ck_assert_ptr_nonnull(strstr(err.message, "nested deeper than 1000"));
		hr__record_clear(&rec);
		/* A members document: its object, the record's, 998 arrays. */
		o = (size_t)sprintf(v, "{\"n\":{\"addr\":\"a:1\",\"x\":");
		memset(v + o, '[', 998 + extra);
		memset(v + o + 998 + extra, ']', 998 + extra);
		strcpy(v + o + 2 * (998 + extra), "}}");
		ck_assert_int_eq(hr_ring_from_json(v, strlen(v), NULL, &ring, &err),
				 extra ? HR_EPARSE : HR_OK);
		if (extra)
			ck_assert_ptr_nonnull(strstr(err.message, "nested deeper than 1000"));
		hr_ring_release(ring);
		ring = NULL;
	}
}
END_TEST

START_TEST(record_invalid_utf8_and_control_bytes)
{
	hr__record rec;
	hr_error err = { 0 };
	const char *addr_utf8 = "{\"addr\":\"h\xff\xfe:1\",\"zone\":\"\xc3\x28\"}";

	/* Ids are printable ASCII: anything else is refused and shown
	 * escaped. */
	ck_assert_int_eq(hr__record_parse("caf\xc3", 4, "a:1", 3, &rec, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "\\xc3"));
	assert_clean_message(&err);
	ck_assert_int_eq(hr__record_parse("a\x01" "b", 3, "a:1", 3, &rec, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "\\x01"));
	assert_clean_message(&err);
	ck_assert_int_eq(hr__record_parse("a\0b", 3, "a:1", 3, &rec, &err), HR_EINVAL);
	assert_clean_message(&err);
	/* Addresses and zones are opaque bytes without control characters
	 * (docs/placement.md): invalid UTF-8 there is taken as is. */
	ck_assert_int_eq(record("n", addr_utf8, strlen(addr_utf8), &rec, &err), 0);
	ck_assert_str_eq(rec.addr, "h\xff\xfe:1");
	hr__record_clear(&rec);
	ck_assert_int_eq(record("n", "{\"addr\":\"a\\u0007b\"}", 19, &rec, &err), HR_EINVAL);
	assert_clean_message(&err);
	ck_assert_int_eq(record("n", "{\"addr\":\"a\\u0000b\"}", 19, &rec, &err), HR_EPARSE);
	assert_clean_message(&err);
	ck_assert_int_eq(record("n", "127.0.0.1\r:1", 11, &rec, &err), HR_EINVAL);
	assert_clean_message(&err);
}
END_TEST

START_TEST(record_numbers_out_of_range)
{
	static const char *const bad[] = {
		"{\"addr\":\"a:1\",\"weight\":1e400}",
		"{\"addr\":\"a:1\",\"weight\":-1e400}",
		"{\"addr\":\"a:1\",\"weight\":0}",
		"{\"addr\":\"a:1\",\"weight\":-0.0}",
		"{\"addr\":\"a:1\",\"weight\":\"2\"}",
		"{\"addr\":\"a:1\",\"weight\":NaN}",
		"{\"addr\":\"a:1\",\"weight\":99999999999999999999999999999999999999e99999}",
	};
	hr__record rec;
	hr_error err = { 0 };
	hr_ring *ring = NULL;
	hr_node node = { "heavy", "a:1", "", 1e300, HR_STATE_ACTIVE };

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int rc = record("n", bad[i], strlen(bad[i]), &rec, &err);
		ck_assert_msg(rc == HR_EINVAL || rc == HR_EPARSE, "%s: %d", bad[i], rc);
		ck_assert_ptr_null(rec.addr);
		assert_clean_message(&err);
	}
	/* Finite but too heavy: the point limit, checked before any
	 * conversion to an integer. */
	ck_assert_int_eq(hr_ring_build(&node, 1, NULL, 0, &ring, &err), HR_ELIMIT);
	ck_assert_ptr_nonnull(strstr(err.message, "heavy"));
	ck_assert_ptr_null(ring);
	/* The smallest positive weight still gets its one point. */
	node.weight = 5e-324;
	ck_assert_int_eq(hr_ring_build(&node, 1, NULL, 0, &ring, &err), 0);
	ck_assert_uint_eq(hr_ring_point_count(ring), 1);
	hr_ring_release(ring);
}
END_TEST

START_TEST(record_duplicate_fields_and_ids)
{
	hr__record rec;
	hr_error err = { 0 };
	hr_ring *ring = NULL;
	const char *dup_field = "{\"addr\":\"a:1\",\"addr\":\"b:1\"}";
	const char *dup_id = "{\"a\":\"x:1\",\"b\":\"y:1\",\"a\":\"z:1\"}";

	ck_assert_int_eq(record("n", dup_field, strlen(dup_field), &rec, &err), HR_EPARSE);
	ck_assert_ptr_nonnull(strstr(err.message, "twice"));
	ck_assert_int_eq(hr_ring_from_json(dup_id, strlen(dup_id), NULL, &ring, &err),
			 HR_EDUPLICATE);
	ck_assert_ptr_null(ring);
	ck_assert_str_eq(err.message, "node \"a\": duplicate node id");
	assert_clean_message(&err);
}
END_TEST

/* ---- 100,000 nodes -------------------------------------------------------- */

START_TEST(ring_of_100000_nodes)
{
	size_t n = HR_NODES_MAX + 1;
	hr_node *nodes = calloc(n, sizeof *nodes);
	char (*ids)[16] = calloc(n, sizeof *ids);
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 2 };
	hr_ring *ring = NULL;
	hr_error err = { 0 };
	hr_lookup l;

	for (size_t i = 0; i < n; i++) {
		snprintf(ids[i], sizeof ids[i], "n%06zu", i);
		nodes[i] = (hr_node){ ids[i], "127.0.0.1:1", "", 1, HR_STATE_ACTIVE };
	}
	ck_assert_int_eq(hr_ring_build(nodes, HR_NODES_MAX, &opts, 7, &ring, &err), 0);
	ck_assert_uint_eq(hr_ring_node_count(ring), HR_NODES_MAX);
	ck_assert_uint_eq(hr_ring_point_count(ring), 2 * HR_NODES_MAX);
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, &l), 0);
	ck_assert_ptr_eq(hr_ring_find(ring, l.node->id), l.node);
	ck_assert_ptr_nonnull(hr_ring_find(ring, "n099999"));
	hr_ring_release(ring);
	/* One more node is a clear limit error, not an allocation storm. */
	ring = NULL;
	ck_assert_int_eq(hr_ring_build(nodes, n, &opts, 7, &ring, &err), HR_ELIMIT);
	ck_assert_ptr_null(ring);
	assert_clean_message(&err);
	/* Within the node limit, over the point limit. */
	opts.vnodes_per_weight = 400;
	ck_assert_int_eq(hr_ring_build(nodes, HR_NODES_MAX, &opts, 7, &ring, &err), HR_ELIMIT);
	ck_assert_ptr_null(ring);
	ck_assert_ptr_nonnull(strstr(err.message, "more than 33554432 points"));
	free(ids);
	free(nodes);
}
END_TEST

/* The largest ring the limits promise to hold: 100,000 nodes at the
 * default 200 points per weight, 20 M points (past 2^24, and four-byte
 * node numbers); every share at once in one pass; a one-node change
 * derived from it equal to a full build. */
START_TEST(ring_of_100000_nodes_default_vnodes)
{
	size_t n = HR_NODES_MAX + 1;
	hr_node *nodes = calloc(n, sizeof *nodes);
	char (*ids)[16] = calloc(n, sizeof *ids);
	double *shares = calloc(HR_NODES_MAX, sizeof *shares);
	hr_ring *ring = NULL, *full = NULL, *derived = NULL;
	hr_error err = { 0 };
	double sum = 0;

	for (size_t i = 0; i < n; i++) {
		snprintf(ids[i], sizeof ids[i], "n%06zu", i);
		nodes[i] = (hr_node){ ids[i], "127.0.0.1:1", "", 1, HR_STATE_ACTIVE };
	}
	ck_assert_int_eq(hr_ring_build(nodes, HR_NODES_MAX, NULL, 7, &ring, &err), 0);
	ck_assert_uint_eq(hr_ring_point_count(ring), 200u * HR_NODES_MAX);
	ck_assert_uint_gt(hr_ring_point_count(ring), 1u << 24);
	ck_assert_uint_eq(hr_ring_node_shares(ring, HR_VIEW_WRITE, shares, HR_NODES_MAX),
			  HR_NODES_MAX);
	for (size_t i = 0; i < HR_NODES_MAX; i++)
		sum += shares[i];
	ck_assert_double_eq_tol(sum, 1.0, 1e-9);
	for (size_t i = 0; i < HR_NODES_MAX; i += 33333)
		ck_assert(shares[i] == hr_ring_node_share(ring, hr_ring_node(ring, i),
							  HR_VIEW_WRITE));
	/* n000000 leaves, n100000 joins. */
	ck_assert_int_eq(hr__ring_derive(ring, nodes + 1, HR_NODES_MAX, NULL, 8,
					 &derived, &err), 0);
	ck_assert(hr__ring_derived(derived));
	ck_assert_int_eq(hr_ring_build(nodes + 1, HR_NODES_MAX, NULL, 8, &full, &err), 0);
	ck_assert_uint_eq(hr_ring_digest(derived), hr_ring_digest(full));
	ck_assert_double_eq(hr_ring_moved_share(derived, full, HR_VIEW_WRITE), 0);
	ck_assert_double_eq(hr_ring_moved_share(derived, full, HR_VIEW_READ), 0);
	hr_ring_release(full);
	hr_ring_release(derived);
	hr_ring_release(ring);
	free(shares);
	free(ids);
	free(nodes);
}
END_TEST

/* ---- the watch stream ------------------------------------------------------- */

START_TEST(message_bad_base64_and_numbers)
{
	static const char *const bad[] = {
		/* base64: unpadded, URL-safe, stray byte, not a string */
		"{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"YQ\",\"mod_revision\":\"3\"}}]}}",
		"{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"Pz8-\",\"mod_revision\":\"3\"}}]}}",
		"{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"YQ==\",\"value\":\"*===\",\"mod_revision\":\"3\"}}]}}",
		"{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":7,\"mod_revision\":\"3\"}}]}}",
		/* integers out of range or not integers */
		"{\"result\":{\"header\":{\"revision\":\"99999999999999999999\"}}}",
		"{\"result\":{\"header\":{\"revision\":\"-99999999999999999999\"}}}",
		"{\"result\":{\"header\":{\"revision\":\"12abc\"}}}",
		"{\"result\":{\"header\":{\"revision\":\"\"}}}",
		"{\"result\":{\"header\":{\"revision\":\"-5\"}}}",
		"{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"0\"}}]}}",
		"{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"-1\"}}]}}",
		"{\"result\":{" H ",\"compact_revision\":\"1e3\",\"canceled\":true}}",
	};
	hr__wmsg m;
	hr_error err = { 0 };

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		ck_assert_msg(hr__wmsg_parse(bad[i], strlen(bad[i]), &m, &err) == HR_EPARSE,
			      "accepted: %s", bad[i]);
		ck_assert_ptr_null(m.events);
		assert_clean_message(&err);
	}
}
END_TEST

START_TEST(message_duplicate_keys_in_one_batch)
{
	const char *msg = "{\"result\":{" H ",\"events\":["
		"{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"15\",\"value\":\"eDox\"}},"
		"{\"type\":\"DELETE\",\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"15\"}},"
		"{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"15\",\"value\":\"eDoy\"}}]}}";
	hr__wmsg m;
	hr_error err = { 0 };

	/* etcd refuses such a txn, but the parser keeps whatever arrives in
	 * stream order, so applying it leaves the last value. */
	ck_assert_int_eq(hr__wmsg_parse(msg, strlen(msg), &m, &err), 0);
	ck_assert_uint_eq(m.n_events, 3);
	ck_assert_str_eq(m.events[0].value, "x:1");
	ck_assert_int_eq(m.events[1].deleted, 1);
	ck_assert_str_eq(m.events[2].value, "x:2");
	hr__wmsg_clear(&m);
}
END_TEST

START_TEST(message_truncated_at_every_byte)
{
	const char *msg = "{\"result\":{" H ",\"events\":["
		"{\"kv\":{\"key\":\"L3Jpbmcvbm9kZXMvYQ==\",\"mod_revision\":\"15\",\"value\":\"MTI3LjAuMC4xOjE=\"}},"
		"{\"type\":\"DELETE\",\"kv\":{\"key\":\"L3Jpbmcvbm9kZXMvYg==\",\"mod_revision\":\"15\"}}]}}";
	size_t len = strlen(msg);
	hr__wmsg m;
	hr_error err = { 0 };

	/* A stream cut anywhere leaves a prefix that must never be taken
	 * for a (smaller) message. */
	for (size_t i = 0; i < len; i++) {
		ck_assert_msg(hr__wmsg_parse(msg, i, &m, &err) == HR_EPARSE,
			      "a %zu-byte prefix was accepted", i);
		ck_assert_ptr_null(m.events);
	}
	ck_assert_int_eq(hr__wmsg_parse(msg, len, &m, &err), 0);
	ck_assert_uint_eq(m.n_events, 2);
	hr__wmsg_clear(&m);
}
END_TEST

struct count {
	int ok, bad;
};

static int parse_line(void *ud, const char *line, size_t len)
{
	struct count *c = ud;
	hr__wmsg m;
	hr_error err = { 0 };

	if (hr__wmsg_parse(line, len, &m, &err) == 0)
		c->ok++;
	else
		c->bad++;
	hr__wmsg_clear(&m);
	return 0;
}

START_TEST(stream_huge_line_and_limit)
{
	size_t vlen = 3u << 20, enc = (vlen + 2) / 3 * 4;
	const char *head = "{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"15\",\"value\":\"";
	const char *tail = "\"}}]}}\n";
	size_t n = strlen(head) + enc + strlen(tail);
	char *s = malloc(n + 1);
	hr__linebuf lb = { .max = 64u << 20 };
	struct count c = { 0 };

	/* A 4 MB message in 1000-byte reads, as a replay of big values. */
	strcpy(s, head);
	memset(s + strlen(head), 'A', enc);
	strcpy(s + strlen(head) + enc, tail);
	for (size_t off = 0; off < n; off += 1000)
		ck_assert_int_eq(hr__linebuf_feed(&lb, s + off, n - off < 1000 ? n - off : 1000,
						  parse_line, &c), 0);
	ck_assert_int_eq(c.ok, 1);
	/* Over the limit: HR_ELIMIT, and after a reset the stream goes on. */
	lb.max = 1u << 20;
	hr__linebuf_reset(&lb);
	ck_assert_int_eq(hr__linebuf_feed(&lb, s, n, parse_line, &c), HR_ELIMIT);
	hr__linebuf_reset(&lb);
	ck_assert_int_eq(hr__linebuf_feed(&lb, "{\"result\":{" H "}}\n", strlen(H) + 14,
					  parse_line, &c), 0);
	ck_assert_int_eq(c.ok, 2);
	/* A truncated last message is handed over at the end, and refused. */
	ck_assert_int_eq(hr__linebuf_feed(&lb, s, 5000, parse_line, &c), 0);
	ck_assert_int_eq(hr__linebuf_finish(&lb, parse_line, &c), 0);
	ck_assert_int_eq(c.bad, 1);
	hr__linebuf_free(&lb);
	free(s);
}
END_TEST

/* ---- NULL arguments --------------------------------------------------------- */

START_TEST(null_arguments_offline)
{
	hr_node node = { "a", "h:1", NULL, 1, HR_STATE_ACTIVE };
	hr_ring *ring = NULL;
	hr_error err = { 0 };
	hr_lookup l;
	const hr_node *out[2];
	hr_state st;
	hr__record rec;

	ck_assert_int_eq(hr_ring_build(NULL, 1, NULL, 0, &ring, &err), HR_EINVAL);
	ck_assert_int_eq(hr_ring_build(&node, 1, NULL, 0, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr_ring_from_json(NULL, 3, NULL, &ring, &err), HR_EINVAL);
	ck_assert_int_eq(hr_ring_from_json("{}", 2, NULL, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr_ring_load_file(NULL, NULL, &ring, &err), HR_EINVAL);
	ck_assert_int_eq(hr_ring_load_file("x", NULL, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr__record_parse(NULL, 0, "a:1", 3, &rec, &err), HR_EINVAL);
	ck_assert_int_eq(hr__record_parse("a", 1, NULL, 3, &rec, &err), HR_EINVAL);
	ck_assert_int_eq(hr__record_parse("a", 1, "a:1", 3, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr__node_validate(NULL, &err), HR_EINVAL);

	ck_assert_int_eq(hr_ring_build(&node, 1, NULL, 0, &ring, NULL), 0);
	ck_assert_int_eq(hr_ring_lookup(NULL, "k", 1, &l), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup(ring, "k", 1, NULL), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup(ring, NULL, 1, &l), HR_EINVAL);
	ck_assert_int_eq(hr_ring_lookup(ring, NULL, 0, &l), 0);
	ck_assert_int_eq(hr_ring_preflist(NULL, "k", 1, HR_VIEW_READ, out, 2), HR_EINVAL);
	ck_assert_int_eq(hr_ring_preflist(ring, NULL, 1, HR_VIEW_READ, out, 2), HR_EINVAL);
	ck_assert_ptr_null(hr_ring_find(ring, NULL));
	ck_assert_ptr_null(hr_ring_find(NULL, "a"));
	ck_assert_ptr_null(hr_ring_node(NULL, 0));
	ck_assert_ptr_null(hr_ring_node(ring, 1));
	ck_assert_uint_eq(hr_ring_node_vnodes(ring, NULL), 0);
	ck_assert_uint_eq(hr_ring_node_vnodes(NULL, hr_ring_node(ring, 0)), 0);
	ck_assert_double_eq(hr_ring_node_share(ring, NULL, HR_VIEW_READ), 0);
	ck_assert_double_eq(hr_ring_moved_share(NULL, NULL, HR_VIEW_WRITE), 0);
	ck_assert_double_eq(hr_ring_moved_share(ring, NULL, HR_VIEW_WRITE), 1);
	ck_assert_uint_eq(hr_ring_node_count(NULL), 0);
	ck_assert_uint_eq(hr_ring_point_count(NULL), 0);
	ck_assert_uint_eq(hr_ring_revision(NULL), 0);
	ck_assert_uint_eq(hr_ring_digest(NULL), 0);
	ck_assert_ptr_null(hr_ring_retain(NULL));
	hr_ring_release(NULL);
	hr_ring_release(ring);

	ck_assert_int_eq(hr_state_parse(NULL, &st), HR_EINVAL);
	ck_assert_ptr_null(hr_state_name((hr_state)42));
	ck_assert_ptr_null(hr_log_level_name((hr_log_level)42));
	ck_assert_str_eq(hr_strerror(-12345), "unknown error");
	ck_assert_str_eq(hr_strerror(12345), "unknown error");
	hr__wmsg_clear(NULL);
	hr__linebuf_free(NULL);
	hr__record_clear(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc = tcase_create("hostile");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, record_of_several_megabytes);
	tcase_add_test(tc, record_deeply_nested);
	tcase_add_test(tc, record_nesting_at_the_limit);
	tcase_add_test(tc, record_invalid_utf8_and_control_bytes);
	tcase_add_test(tc, record_numbers_out_of_range);
	tcase_add_test(tc, record_duplicate_fields_and_ids);
	tcase_add_test(tc, ring_of_100000_nodes);
	tcase_add_test(tc, ring_of_100000_nodes_default_vnodes);
	tcase_add_test(tc, message_bad_base64_and_numbers);
	tcase_add_test(tc, message_duplicate_keys_in_one_batch);
	tcase_add_test(tc, message_truncated_at_every_byte);
	tcase_add_test(tc, stream_huge_line_and_limit);
	tcase_add_test(tc, null_arguments_offline);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
