/* SPDX-License-Identifier: MIT */
/* test_watch_stream.c - the watch stream's framing and message parser, the
 * gateway's base64, and prefix range ends, on bytes as etcd 3.4 sends them;
 * and on hostile bytes: bad base64 and numbers, duplicate keys, messages
 * cut anywhere, lines of megabytes. */
#include "base64.h"
#include "etcd.h"
#include "watch_stream.h"
#include "hrt_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H "\"header\":{\"cluster_id\":\"324952591200643719\",\"member_id\":\"3319814642761637952\",\"revision\":\"15\",\"raft_term\":\"2\"}"

/* ---- framing --------------------------------------------------------------- */

struct lines {
	char got[8][256];
	int n;
};

static int keep(void *ud, const char *line, size_t len)
{
	struct lines *l = ud;

	ck_assert_int_lt(l->n, 8);
	ck_assert_uint_lt(len, 256);
	memcpy(l->got[l->n], line, len);
	l->got[l->n][len] = '\0';
	l->n++;
	return 0;
}

START_TEST(lines_split_across_reads)
{
	const char *stream = "{\"a\":1}\n{\"b\":2}\n\n{\"c\":3}";
	hr__linebuf b = { 0 };
	struct lines l = { 0 };

	/* One byte at a time: every message spans reads. */
	for (size_t i = 0; i < strlen(stream); i++)
		ck_assert_int_eq(hr__linebuf_feed(&b, stream + i, 1, keep, &l), 0);
	ck_assert_int_eq(l.n, 2);
	/* The last message has no newline (etcd 3.4's error chunk). */
	ck_assert_int_eq(hr__linebuf_finish(&b, keep, &l), 0);
	ck_assert_int_eq(l.n, 3);
	ck_assert_str_eq(l.got[0], "{\"a\":1}");
	ck_assert_str_eq(l.got[1], "{\"b\":2}");
	ck_assert_str_eq(l.got[2], "{\"c\":3}");
	hr__linebuf_free(&b);
}
END_TEST

START_TEST(lines_many_in_one_read)
{
	const char *stream = "x\ny\nz\n";
	hr__linebuf b = { 0 };
	struct lines l = { 0 };

	ck_assert_int_eq(hr__linebuf_feed(&b, stream, strlen(stream), keep, &l), 0);
	ck_assert_int_eq(hr__linebuf_finish(&b, keep, &l), 0);
	ck_assert_int_eq(l.n, 3);
	ck_assert_str_eq(l.got[2], "z");
	hr__linebuf_free(&b);
}
END_TEST

static int stop_at_second(void *ud, const char *line, size_t len)
{
	int *n = ud;

	(void)line;
	(void)len;
	return ++*n == 2 ? 42 : 0;
}

START_TEST(lines_limit_and_stop)
{
	hr__linebuf b = { .max = 8 };
	struct lines l = { 0 };
	int n = 0;

	ck_assert_int_eq(hr__linebuf_feed(&b, "1234", 4, keep, &l), 0);
	ck_assert_int_eq(hr__linebuf_feed(&b, "56789", 5, keep, &l), HR_ELIMIT);
	hr__linebuf_reset(&b);
	ck_assert_int_eq(hr__linebuf_feed(&b, "a\nb\nc\n", 6, stop_at_second, &n), 42);
	ck_assert_int_eq(n, 2);
	hr__linebuf_free(&b);
	hr__linebuf_free(NULL);
}
END_TEST

/* ---- messages ------------------------------------------------------------- */

static void parse_ok(const char *line, hr__wmsg *m)
{
	hr_error err = { 0 };
	int rc = hr__wmsg_parse(line, strlen(line), m, &err);

	ck_assert_msg(rc == 0, "%s: %s", line, err.message);
}

START_TEST(msg_created)
{
	hr__wmsg m;

	parse_ok("{\"result\":{" H ",\"created\":true}}", &m);
	ck_assert_int_eq(m.kind, HR__WMSG_CREATED);
	ck_assert_int_eq(m.header_revision, 15);
	hr__wmsg_clear(&m);
}
END_TEST

START_TEST(msg_events_put_delete)
{
	hr__wmsg m;

	/* A txn: two puts (no "type": PUT is the default) and a delete. */
	parse_ok("{\"result\":{" H ",\"events\":["
		 "{\"kv\":{\"key\":\"L3Jpbmcvbm9kZXMvbm9kZTY=\",\"create_revision\":\"11\","
		 "\"mod_revision\":\"15\",\"version\":\"1\",\"value\":\"MTI3LjAuMC42OjE=\"}},"
		 "{\"kv\":{\"key\":\"L3Jpbmcvbm9kZXMvYQ==\",\"mod_revision\":\"15\"}},"
		 "{\"type\":\"DELETE\",\"kv\":{\"key\":\"L3Jpbmcvbm9kZXMvYg==\",\"mod_revision\":\"15\"}}]}}",
		 &m);
	ck_assert_int_eq(m.kind, HR__WMSG_EVENTS);
	ck_assert_uint_eq(m.n_events, 3);
	ck_assert_str_eq(m.events[0].key, "/ring/nodes/node6");
	ck_assert_str_eq(m.events[0].value, "127.0.0.6:1");
	ck_assert_int_eq(m.events[0].mod_revision, 15);
	ck_assert_int_eq(m.events[0].deleted, 0);
	/* An empty value is left out by the gateway: it means "". */
	ck_assert_str_eq(m.events[1].value, "");
	ck_assert_uint_eq(m.events[1].value_len, 0);
	ck_assert_int_eq(m.events[2].deleted, 1);
	ck_assert_str_eq(m.events[2].key, "/ring/nodes/b");
	ck_assert_int_eq(m.fragment, 0);
	hr__wmsg_clear(&m);
}
END_TEST

START_TEST(msg_fragment_progress_compacted_canceled)
{
	hr__wmsg m;

	parse_ok("{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"3\"}}],"
		 "\"fragment\":true}}", &m);
	ck_assert_int_eq(m.kind, HR__WMSG_EVENTS);
	ck_assert_int_eq(m.fragment, 1);
	hr__wmsg_clear(&m);

	parse_ok("{\"result\":{" H "}}", &m);
	ck_assert_int_eq(m.kind, HR__WMSG_PROGRESS);
	ck_assert_int_eq(m.header_revision, 15);
	hr__wmsg_clear(&m);

	/* Compaction: the header has no revision. */
	parse_ok("{\"result\":{\"header\":{\"cluster_id\":\"1\",\"raft_term\":\"2\"},"
		 "\"canceled\":true,\"compact_revision\":\"12\"}}", &m);
	ck_assert_int_eq(m.kind, HR__WMSG_COMPACTED);
	ck_assert_int_eq(m.compact_revision, 12);
	hr__wmsg_clear(&m);

	parse_ok("{\"result\":{" H ",\"watch_id\":\"-1\",\"created\":true,\"canceled\":true,"
		 "\"cancel_reason\":\"rpc error: code = PermissionDenied desc = etcdserver: permission denied\"}}",
		 &m);
	ck_assert_int_eq(m.kind, HR__WMSG_CANCELED);
	ck_assert_int_eq(m.watch_id, -1);
	ck_assert_ptr_nonnull(strstr(m.reason, "permission denied"));
	hr__wmsg_clear(&m);
}
END_TEST

/* A canceled message's class: the four refusals etcd 3.4 sends (v3rpc's
 * isWatchPermitted), a compaction, a cancel with no reason, and others. */
START_TEST(msg_cancel_reasons)
{
	static const struct {
		const char *reason;
		hr__wcancel want;
	} cases[] = {
		{ "rpc error: code = PermissionDenied desc = etcdserver: permission denied",
		  HR__WCANCEL_DENIED },
		{ "rpc error: code = Unauthenticated desc = etcdserver: invalid auth token",
		  HR__WCANCEL_UNAUTHENTICATED },
		{ "rpc error: code = InvalidArgument desc = etcdserver: user name is empty",
		  HR__WCANCEL_UNAUTHENTICATED },
		/* The token predates a change of users or roles: a retry
		 * authenticates afresh. */
		{ "rpc error: code = InvalidArgument desc = etcdserver: revision of auth store is old",
		  HR__WCANCEL_OTHER },
		/* The same errors without the gRPC status around them. */
		{ "etcdserver: permission denied", HR__WCANCEL_DENIED },
		{ "etcdserver: invalid auth token", HR__WCANCEL_UNAUTHENTICATED },
		{ "etcdserver: user name is empty", HR__WCANCEL_UNAUTHENTICATED },
		/* A code says it all, whatever the description. */
		{ "rpc error: code = PermissionDenied desc = auth: permission denied",
		  HR__WCANCEL_DENIED },
		{ "rpc error: code = Unavailable desc = etcdserver: no leader", HR__WCANCEL_OTHER },
		{ "rpc error: code = PermissionDenie desc = x", HR__WCANCEL_OTHER },
		{ "rpc error: code = PermissionDenied", HR__WCANCEL_OTHER },
		{ "permission denied? no: a mere mention", HR__WCANCEL_OTHER },
		{ "", HR__WCANCEL_OTHER },
	};
	char line[512];
	hr__wmsg m;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(line, sizeof line,
			 "{\"result\":{" H ",\"watch_id\":\"-1\",\"created\":true,\"canceled\":true,"
			 "\"cancel_reason\":\"%s\"}}", cases[i].reason);
		parse_ok(line, &m);
		ck_assert_int_eq(m.kind, HR__WMSG_CANCELED);
		ck_assert_msg(m.cancel == cases[i].want, "%s: class %d, not %d", cases[i].reason,
			      (int)m.cancel, (int)cases[i].want);
		ck_assert_str_eq(m.reason, cases[i].reason);
		ck_assert_int_eq(hr__wcancel_of(cases[i].reason), cases[i].want);
		hr__wmsg_clear(&m);
	}

	/* A cancel with nothing else: a cancel nobody asked for. */
	parse_ok("{\"result\":{" H ",\"canceled\":true}}", &m);
	ck_assert_int_eq(m.kind, HR__WMSG_CANCELED);
	ck_assert_int_eq(m.cancel, HR__WCANCEL_OTHER);
	hr__wmsg_clear(&m);
	/* Compaction, whatever a reason might say. */
	parse_ok("{\"result\":{\"header\":{\"cluster_id\":\"1\"},\"canceled\":true,"
		 "\"compact_revision\":\"12\",\"cancel_reason\":\"etcdserver: permission denied\"}}", &m);
	ck_assert_int_eq(m.kind, HR__WMSG_COMPACTED);
	ck_assert_int_eq(m.cancel, HR__WCANCEL_COMPACTED);
	hr__wmsg_clear(&m);
	/* Anything else is no cancel. */
	parse_ok("{\"result\":{" H ",\"created\":true}}", &m);
	ck_assert_int_eq(m.cancel, HR__WCANCEL_NONE);
	hr__wmsg_clear(&m);
}
END_TEST

START_TEST(msg_errors_both_versions)
{
	hr__wmsg m;

	/* etcd 3.4/3.5 (grpc-gateway v1) */
	parse_ok("{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"etcdserver: no leader\","
		 "\"http_status\":\"Service Unavailable\"}}", &m);
	ck_assert_int_eq(m.kind, HR__WMSG_ERROR);
	ck_assert_int_eq(m.code, 14);
	ck_assert_str_eq(m.reason, "etcdserver: no leader");
	hr__wmsg_clear(&m);
	/* etcd 3.6 (grpc-gateway v2) */
	parse_ok("{\"error\":{\"code\":14,\"message\":\"unavailable\"}}", &m);
	ck_assert_int_eq(m.kind, HR__WMSG_ERROR);
	ck_assert_int_eq(m.code, 14);
	hr__wmsg_clear(&m);
}
END_TEST

START_TEST(msg_malformed)
{
	static const char *const bad[] = {
		"",
		"not json",
		"[1,2]",
		"{\"result\":5}",
		"{\"nothing\":{}}",
		"{\"result\":{}}",
		"{\"result\":{\"header\":{\"revision\":\"x\"}}}",
		"{\"result\":{\"header\":{\"revision\":\"1.5\"}}}",
		"{\"result\":{" H ",\"events\":{}}}",
		"{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"YQ\",\"mod_revision\":\"3\"}}]}}",
		"{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"Pz8-\",\"mod_revision\":\"3\"}}]}}",
		"{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"YQ==\"}}]}}",
		"{\"result\":{" H ",\"events\":[{\"type\":\"EXPLODE\",\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"3\"}}]}}",
		"{\"result\":{" H ",\"events\":[{\"kv\":5}]}}",
		"{\"result\":{" H ",\"events\":[{\"kv\":{\"key\":\"YQ==\",\"mod_revision\":\"3\"}}",
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		hr__wmsg m;
		hr_error err = { 0 };
		int rc = hr__wmsg_parse(bad[i], strlen(bad[i]), &m, &err);
		ck_assert_msg(rc == HR_EPARSE, "accepted: %s", bad[i]);
		ck_assert_msg(err.message[0], "no message for: %s", bad[i]);
		ck_assert_uint_eq(m.n_events, 0);
		ck_assert_ptr_null(m.events);
	}
	hr__wmsg_clear(NULL);
}
END_TEST

/* ---- base64 and ranges ------------------------------------------------- */

START_TEST(base64_round_trip)
{
	static const char *const plain[] = { "", "a", "ab", "abc", "abcd", "/ring/nodes/" };
	static const char *const enc[] = { "", "YQ==", "YWI=", "YWJj", "YWJjZA==", "L3Jpbmcvbm9kZXMv" };

	for (size_t i = 0; i < 6; i++) {
		char out[64], *dec;
		size_t n;
		hr__base64_encode(plain[i], strlen(plain[i]), out);
		ck_assert_str_eq(out, enc[i]);
		ck_assert_uint_eq(hr__base64_encoded_size(strlen(plain[i])), strlen(enc[i]) + 1);
		ck_assert_int_eq(hr__base64_decode(enc[i], strlen(enc[i]), &dec, &n), 0);
		ck_assert_uint_eq(n, strlen(plain[i]));
		ck_assert_str_eq(dec, plain[i]);
		free(dec);
	}
	/* All 256 byte values survive. */
	unsigned char all[256];
	char e[400], *d;
	size_t n;
	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	hr__base64_encode(all, 256, e);
	ck_assert_int_eq(hr__base64_decode(e, strlen(e), &d, &n), 0);
	ck_assert_uint_eq(n, 256);
	ck_assert_int_eq(memcmp(d, all, 256), 0);
	free(d);
}
END_TEST

START_TEST(base64_rejects)
{
	static const char *const bad[] = { "YQ", "Pz8-", "Y===", "=YQ=", "YQ==YQ==", "Y Q=", "YW\nI=" };

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *d = NULL;
		size_t n;
		ck_assert_msg(hr__base64_decode(bad[i], strlen(bad[i]), &d, &n) == -1,
			      "accepted %s", bad[i]);
	}
}
END_TEST

START_TEST(prefix_range_end)
{
	char end[16];
	size_t n;

	n = hr__etcd_prefix_end("/ring/nodes/", 12, end);
	ck_assert_uint_eq(n, 12);
	ck_assert_int_eq(memcmp(end, "/ring/nodes0", 12), 0);
	n = hr__etcd_prefix_end("a\xff\xff", 3, end);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(end[0], 'b');
	n = hr__etcd_prefix_end("\xff", 1, end);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(end[0], '\0');
}
END_TEST

START_TEST(int64_fields)
{
	cJSON *o = cJSON_Parse("{\"a\":\"2324035715972645641\",\"b\":7,\"c\":\"\",\"d\":\"12x\",\"e\":true}");
	int64_t v;

	/* Lease ids exceed a double's precision: read from the string. */
	ck_assert_int_eq(hr__json_int64(o, "a", 0, &v), 0);
	ck_assert_int_eq(v, 2324035715972645641LL);
	ck_assert_int_eq(hr__json_int64(o, "b", 0, &v), 0);
	ck_assert_int_eq(v, 7);
	ck_assert_int_eq(hr__json_int64(o, "missing", -3, &v), 0);
	ck_assert_int_eq(v, -3);
	ck_assert_int_eq(hr__json_int64(o, "c", 0, &v), HR_EPARSE);
	ck_assert_int_eq(hr__json_int64(o, "d", 0, &v), HR_EPARSE);
	ck_assert_int_eq(hr__json_int64(o, "e", 0, &v), HR_EPARSE);
	cJSON_Delete(o);
}
END_TEST

/* ---- hostile messages ---------------------------------------------------- */

START_TEST(msg_bad_base64_and_numbers)
{
	static const char *const bad[] = {
		/* base64: a bad value, not a string */
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
		hrt_assert_clean_message(err.message);
	}
}
END_TEST

START_TEST(msg_duplicate_keys_in_one_batch)
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

START_TEST(msg_truncated_at_every_byte)
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

START_TEST(lines_huge_and_limit)
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

int main(void)
{
	Suite *s = suite_create("watch_stream");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, lines_split_across_reads);
	tcase_add_test(tc, lines_many_in_one_read);
	tcase_add_test(tc, lines_limit_and_stop);
	tcase_add_test(tc, msg_created);
	tcase_add_test(tc, msg_events_put_delete);
	tcase_add_test(tc, msg_fragment_progress_compacted_canceled);
	tcase_add_test(tc, msg_cancel_reasons);
	tcase_add_test(tc, msg_errors_both_versions);
	tcase_add_test(tc, msg_malformed);
	tcase_add_test(tc, base64_round_trip);
	tcase_add_test(tc, base64_rejects);
	tcase_add_test(tc, prefix_range_end);
	tcase_add_test(tc, int64_fields);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, msg_bad_base64_and_numbers);
	tcase_add_test(tc, msg_duplicate_keys_in_one_batch);
	tcase_add_test(tc, msg_truncated_at_every_byte);
	tcase_add_test(tc, lines_huge_and_limit);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
