/* SPDX-License-Identifier: MIT */
/* test_ack_record.c - the ack record (docs/handoff.md): what a client
 * writes reads back the same; what is not an ack is refused with its
 * reason; client ids and ack prefixes follow their rules. */
#include "ack_record.h"
#include "hrt_check.h"

#include <stdlib.h>
#include <string.h>

START_TEST(written_records_read_back)
{
	hr__ack_record rec;
	hr_error err = { 0 };
	/* 2026-12-01T12:34:56.789Z */
	const int64_t when = INT64_C(1796128496789);
	char *s = hr__ack_record_write("web-1", 42, UINT64_C(0x9f3a0c1d2e4b5a69), when);

	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "{\"client\":\"web-1\",\"revision\":42,\"digest\":\"9f3a0c1d2e4b5a69\","
			 "\"version\":\"" HR_VERSION_STRING "\",\"time\":\"2026-12-01T12:34:56.789Z\"}");
	ck_assert_int_eq(hr__ack_record_parse("web-1", 5, s, strlen(s), &rec, &err), 0);
	ck_assert_uint_eq(rec.revision, 42);
	ck_assert_uint_eq(rec.digest, UINT64_C(0x9f3a0c1d2e4b5a69));
	ck_assert_int_eq(rec.time_ms, when);
	ck_assert_str_eq(rec.version, HR_VERSION_STRING);
	free(s);

	/* The largest revision is exact; unknown fields are ignored. */
	s = hr__ack_record_write("a", HR__ACK_REVISION_MAX, 0, 0);
	ck_assert_int_eq(hr__ack_record_parse("a", 1, s, strlen(s), &rec, &err), 0);
	ck_assert_uint_eq(rec.revision, HR__ACK_REVISION_MAX);
	ck_assert_uint_eq(rec.digest, 0);
	free(s);
	s = "{\"client\":\"a\",\"revision\":7,\"digest\":\"0000000000000001\",\"version\":\"9.0.0\","
	    "\"time\":\"1970-01-01T00:00:01.000Z\",\"later\":[1,2]}";
	ck_assert_int_eq(hr__ack_record_parse("a", 1, s, strlen(s), &rec, &err), 0);
	ck_assert_int_eq(rec.time_ms, 1000);

	/* The revision is read from its digits: 2^53 - 1 exactly, wherever
	 * the member is, whatever comes before it (strings holding brackets,
	 * nested values, blanks). */
	s = " {\"later\" : {\"revision\":5,\"x\":[1,\"}\\\",\"]} , \"client\":\"a\",\"digest\":"
	    "\"0000000000000001\",\"version\":\"9.0.0\",\"time\":\"1970-01-01T00:00:01.000Z\","
	    " \"revision\" :\t9007199254740991 } ";
	ck_assert_msg(hr__ack_record_parse("a", 1, s, strlen(s), &rec, &err) == 0, "%s",
		      err.message);
	ck_assert_uint_eq(rec.revision, HR__ACK_REVISION_MAX - 1);
}
END_TEST

START_TEST(what_is_not_an_ack_is_refused)
{
	static const struct {
		const char *value, *msg;
	} bad[] = {
		{ "not json", "not a JSON object" },
		{ "[1]", "not a JSON object" },
		{ "{\"client\":\"b\",\"revision\":1,\"digest\":\"0000000000000001\",\"version\":\"1\","
		  "\"time\":\"1970-01-01T00:00:01.000Z\"}", "\"client\" is not the client id of its key" },
		{ "{\"client\":\"a\",\"revision\":0,\"digest\":\"0000000000000001\",\"version\":\"1\","
		  "\"time\":\"1970-01-01T00:00:01.000Z\"}", "\"revision\" 0 is not a whole number in 1..2^53" },
		{ "{\"client\":\"a\",\"revision\":1.5,\"digest\":\"0000000000000001\",\"version\":\"1\","
		  "\"time\":\"1970-01-01T00:00:01.000Z\"}", "\"revision\" 1.5 is not a whole number in 1..2^53" },
		/* Whole in value, not written as a whole number. */
		{ "{\"client\":\"a\",\"revision\":4.2e1,\"digest\":\"0000000000000001\",\"version\":\"1\","
		  "\"time\":\"1970-01-01T00:00:01.000Z\"}", "\"revision\" 4.2e1 is not a whole number in 1..2^53" },
		{ "{\"client\":\"a\",\"revision\":-1,\"digest\":\"0000000000000001\",\"version\":\"1\","
		  "\"time\":\"1970-01-01T00:00:01.000Z\"}", "\"revision\" -1 is not a whole number in 1..2^53" },
		/* 2^53 + 1: a double rounds it to 2^53, which is in range. */
		{ "{\"client\":\"a\",\"revision\":9007199254740993,\"digest\":\"0000000000000001\","
		  "\"version\":\"1\",\"time\":\"1970-01-01T00:00:01.000Z\"}",
		  "\"revision\" 9007199254740993 is above 2^53 (9007199254740992), the largest a JSON"
		  " number holds exactly" },
		{ "{\"client\":\"a\",\"revision\":123456789012345678901234567890,\"digest\":"
		  "\"0000000000000001\",\"version\":\"1\",\"time\":\"1970-01-01T00:00:01.000Z\"}",
		  "\"revision\" 123456789012345678901234567890 is above 2^53 (9007199254740992), the"
		  " largest a JSON number holds exactly" },
		{ "{\"client\":\"a\",\"revision\":\"1\",\"digest\":\"0000000000000001\",\"version\":\"1\","
		  "\"time\":\"1970-01-01T00:00:01.000Z\"}", "\"revision\" is not a whole number in 1..2^53" },
		{ "{\"client\":\"a\",\"revision\":18014398509481984,\"digest\":\"0000000000000001\","
		  "\"version\":\"1\",\"time\":\"1970-01-01T00:00:01.000Z\"}",
		  "\"revision\" 18014398509481984 is above 2^53 (9007199254740992), the largest a JSON"
		  " number holds exactly" },
		{ "{\"client\":\"a\",\"revision\":1,\"digest\":\"000000000000000G\",\"version\":\"1\","
		  "\"time\":\"1970-01-01T00:00:01.000Z\"}", "\"digest\" is not 16 lowercase hex digits" },
		{ "{\"client\":\"a\",\"revision\":1,\"digest\":\"00000000000000AB\",\"version\":\"1\","
		  "\"time\":\"1970-01-01T00:00:01.000Z\"}", "\"digest\" is not 16 lowercase hex digits" },
		{ "{\"client\":\"a\",\"revision\":1,\"digest\":\"01\",\"version\":\"1\","
		  "\"time\":\"1970-01-01T00:00:01.000Z\"}", "\"digest\" is not 16 lowercase hex digits" },
		{ "{\"client\":\"a\",\"revision\":1,\"digest\":\"0000000000000001\","
		  "\"time\":\"1970-01-01T00:00:01.000Z\"}", "\"version\" is not a version string" },
		{ "{\"client\":\"a\",\"revision\":1,\"digest\":\"0000000000000001\",\"version\":\"1\","
		  "\"time\":\"yesterday\"}", "\"time\" is not a UTC time like 2026-12-01T12:34:56.789Z" },
		{ "{\"client\":\"a\",\"revision\":1,\"digest\":\"0000000000000001\",\"version\":\"1\","
		  "\"time\":\"1970-01-01T00:00:01.000Z+\"}",
		  "\"time\" is not a UTC time like 2026-12-01T12:34:56.789Z" },
	};
	hr__ack_record rec;
	hr_error err = { 0 };

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(hr__ack_record_parse("a", 1, bad[i].value, strlen(bad[i].value),
						      &rec, &err), HR_EPARSE);
		ck_assert_msg(!strcmp(err.message, bad[i].msg), "%zu: %s", i, err.message);
	}
}
END_TEST

START_TEST(ids_and_prefixes_follow_their_rules)
{
	hr_error err = { 0 };
	char long_id[HR_ID_MAX + 2];

	ck_assert_int_eq(hr__ack_client_id_check("web-1.example", &err), 0);
	ck_assert_int_eq(hr__ack_client_id_check("", &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "ack client id is empty");
	ck_assert_int_eq(hr__ack_client_id_check(NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr__ack_client_id_check("a b", &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "ack client id \"a\": must be printable ASCII without blanks"
			 " or '/' (byte 0x20 at offset 1)");
	memset(long_id, 'x', sizeof long_id - 1);
	long_id[sizeof long_id - 1] = '\0';
	ck_assert_int_eq(hr__ack_client_id_check(long_id, &err), HR_ELIMIT);
	ck_assert_str_eq(err.message, "ack client id is longer than 255 bytes");

	ck_assert_int_eq(hr__ack_prefix_check("/hashring/acks/", "/hashring/nodes/", &err), 0);
	/* The message says which contains which, and what goes wrong then. */
	ck_assert_int_eq(hr__ack_prefix_check("/hashring/nodes/acks/", "/hashring/nodes/", &err),
			 HR_EINVAL);
	ck_assert_str_eq(err.message, "the ring prefix \"/hashring/nodes/\" contains the ack"
			 " prefix \"/hashring/nodes/acks/\": acks would be read as node records;"
			 " use a prefix of its own");
	ck_assert_int_eq(hr__ack_prefix_check("/hashring/", "/hashring/nodes/", &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "the ack prefix \"/hashring/\" contains the ring prefix"
			 " \"/hashring/nodes/\": node records would be read as acks; use a"
			 " prefix of its own");
	ck_assert_int_eq(hr__ack_prefix_check("/hashring/nodes/", "/hashring/nodes/", &err),
			 HR_EINVAL);
	ck_assert_str_eq(err.message, "the ack prefix is the ring prefix \"/hashring/nodes/\":"
			 " acks and node records would be read as each other; use a prefix of"
			 " its own");
	ck_assert_int_eq(hr__prefixes_overlap("/a/", "/b/"), HR__APART);
	ck_assert_int_eq(hr__prefixes_overlap("/a/", "/a/n/"), HR__ACKS_HOLD_RING);
	ck_assert_int_eq(hr__prefixes_overlap("/a/n/", "/a/"), HR__RING_HOLDS_ACKS);
	ck_assert_int_eq(hr__prefixes_overlap("/a/", "/a/"), HR__SAME);
	/* "/hashring/nodes" (no slash) and "/hashring/nodes2/" overlap too. */
	ck_assert_int_eq(hr__ack_prefix_check("/hashring/nodes2/", "/hashring/nodes", &err),
			 HR_EINVAL);
	ck_assert_int_eq(hr__ack_prefix_check("", "/n/", &err), HR_EINVAL);
	ck_assert_str_eq(err.message, "ack prefix must be set and not empty");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ack_record");
	TCase *tc = tcase_create("record");

	tcase_add_test(tc, written_records_read_back);
	tcase_add_test(tc, what_is_not_an_ack_is_refused);
	tcase_add_test(tc, ids_and_prefixes_follow_their_rules);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
