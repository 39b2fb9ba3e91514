/* SPDX-License-Identifier: MIT */
/*
 * test_member.c - node records (etcd values) and members documents:
 * both record forms, defaults, every kind of malformed or invalid record,
 * and hostile ones: several MB, deep nesting, invalid UTF-8, control
 * bytes, numbers out of range, duplicates.  Each gives a clear error
 * (never a crash) in one printable line.
 */
#include "hashring.h"
#include "node.h"
#include "record.h"
#include "hrt_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMBERS_FILE "test_member.members.json"

static int parse(const char *id, const char *value, hr__record *rec,
		 hr_error *err)
{
	memset(err, 0, sizeof *err);
	return hr__record_parse(id, strlen(id), value, strlen(value), rec, err);
}

/* Expects `value` to be refused with `code` and a message holding `msg`;
 * the record must come back cleared. */
static void expect_bad(const char *id, const char *value, int code,
		       const char *msg)
{
	hr__record rec;
	hr_error err;
	int rc = parse(id, value, &rec, &err);

	ck_assert_msg(rc == code, "value '%s': expected %d, got %d (%s)", value,
		      code, rc, err.message);
	ck_assert_int_eq(err.code, code);
	ck_assert_msg(strstr(err.message, msg) != NULL,
		      "value '%s': message \"%s\" lacks \"%s\"", value,
		      err.message, msg);
	ck_assert_ptr_null(rec.id);
	ck_assert_ptr_null(rec.addr);
	ck_assert_ptr_null(rec.zone);
}

START_TEST(record_bare)
{
	hr__record rec;
	hr_error err;

	ck_assert_int_eq(parse("n1", "127.0.0.3:11211", &rec, &err), HR_OK);
	ck_assert_str_eq(rec.id, "n1");
	ck_assert_str_eq(rec.addr, "127.0.0.3:11211");
	ck_assert_str_eq(rec.zone, "");
	ck_assert_double_eq(rec.weight, 1);
	ck_assert_int_eq(rec.state, HR_STATE_ACTIVE);
	hr__record_clear(&rec);
	ck_assert_ptr_null(rec.addr);

	/* surrounding blanks trimmed, inner bytes kept */
	ck_assert_int_eq(parse("n1", " \t127.0.0.1:11211\r\n", &rec, &err), HR_OK);
	ck_assert_str_eq(rec.addr, "127.0.0.1:11211");
	hr__record_clear(&rec);
	ck_assert_int_eq(parse("n1", "[::1]:11211", &rec, &err), HR_OK);
	ck_assert_str_eq(rec.addr, "[::1]:11211");
	hr__record_clear(&rec);
	/* a JSON string is an address with its quotes, as it always was */
	ck_assert_int_eq(parse("n1", "\"127.0.0.1:11211\"", &rec, &err), HR_OK);
	ck_assert_str_eq(rec.addr, "\"127.0.0.1:11211\"");
	hr__record_clear(&rec);
	ck_assert_int_eq(parse("n1", "[::1]", &rec, &err), HR_OK);
	hr__record_clear(&rec);

	/* the id is `id_len` bytes, not up to a NUL */
	ck_assert_int_eq(hr__record_parse("abc/def", 3, "127.0.0.1:1", 11, &rec, &err),
			 HR_OK);
	ck_assert_str_eq(rec.id, "abc");
	hr__record_clear(&rec);
	hr__record_clear(NULL);
}
END_TEST

START_TEST(record_json)
{
	hr__record rec;
	hr_error err;

	ck_assert_int_eq(parse("n2", "{\"addr\":\"127.0.0.7:11211\",\"weight\":2,"
			       "\"zone\":\"eu-west-1a\",\"state\":\"warming\"}",
			       &rec, &err), HR_OK);
	ck_assert_str_eq(rec.addr, "127.0.0.7:11211");
	ck_assert_double_eq(rec.weight, 2);
	ck_assert_str_eq(rec.zone, "eu-west-1a");
	ck_assert_int_eq(rec.state, HR_STATE_WARMING);
	hr__record_clear(&rec);

	/* defaults; unknown fields of any type ignored; blanks around */
	ck_assert_int_eq(parse("n2", "  \n{\"addr\":\"127.0.0.1:1\",\"x\":[1,{}],"
			       "\"ttl\":null}\n ", &rec, &err), HR_OK);
	ck_assert_str_eq(rec.addr, "127.0.0.1:1");
	ck_assert_double_eq(rec.weight, 1);
	ck_assert_str_eq(rec.zone, "");
	ck_assert_int_eq(rec.state, HR_STATE_ACTIVE);
	hr__record_clear(&rec);

	ck_assert_int_eq(parse("n2", "{\"addr\":\"127.0.0.1:1\",\"state\":\"draining\","
			       "\"weight\":0.25,\"zone\":\"\"}", &rec, &err), HR_OK);
	ck_assert_int_eq(rec.state, HR_STATE_DRAINING);
	ck_assert_double_eq(rec.weight, 0.25);
	hr__record_clear(&rec);

	/* a valid record at exactly the size limit */
	{
		char *big = malloc(HR_RECORD_MAX + 2);
		const char *rec_text = "{\"addr\":\"127.0.0.1:1\"}";

		memset(big, ' ', HR_RECORD_MAX + 1);
		memcpy(big, rec_text, strlen(rec_text));
		ck_assert_int_eq(hr__record_parse("n", 1, big, HR_RECORD_MAX, &rec, &err),
				 HR_OK);
		hr__record_clear(&rec);
		ck_assert_int_eq(hr__record_parse("n", 1, big, HR_RECORD_MAX + 1, &rec, &err),
				 HR_ELIMIT);
		ck_assert_ptr_nonnull(strstr(err.message, "exceeds the limit of 65536"));
		free(big);
	}
}
END_TEST

START_TEST(record_malformed)
{
	/* A value cut short says so, at its end. */
	expect_bad("n", "{", HR_EPARSE, "node \"n\": unexpected end of the document at byte 1");
	expect_bad("n", " {  ", HR_EPARSE, "unexpected end of the document at byte 4");
	expect_bad("n", "{\"addr\":\"a\"", HR_EPARSE, "unexpected end of the document at byte 11");
	expect_bad("n", "{\"addr\":\"a", HR_EPARSE,
		   "unexpected end of the document at byte 10 (inside a string)");
	expect_bad("n", "{\"addr\":[1,", HR_EPARSE, "unexpected end of the document at byte 11");
	/* A wrong byte is shown where it is, even at the end. */
	expect_bad("n", "{\"addr\" x", HR_EPARSE, "malformed JSON near byte 8");
	expect_bad("n", "{\"addr\":\"a\",}", HR_EPARSE, "malformed JSON near byte 12");
	expect_bad("n", "{\"addr\":tru", HR_EPARSE, "malformed JSON near byte 8");
	expect_bad("n", "{\"addr\":\"a\"} x", HR_EPARSE, "unexpected data after the JSON value");
	expect_bad("n", "{\"addr\":\"a\"}{}", HR_EPARSE, "unexpected data");
	expect_bad("n", "{\"weight\":1}", HR_EPARSE, "node \"n\": field \"addr\" is missing");
	expect_bad("n", "{}", HR_EPARSE, "field \"addr\" is missing");
	expect_bad("n", "{\"addr\":7}", HR_EPARSE, "field \"addr\" must be a string");
	expect_bad("n", "{\"addr\":null}", HR_EPARSE, "field \"addr\" must be a string");
	expect_bad("n", "{\"addr\":\"a\",\"weight\":\"2\"}", HR_EPARSE,
		   "field \"weight\" must be a number");
	expect_bad("n", "{\"addr\":\"a\",\"weight\":true}", HR_EPARSE, "weight");
	expect_bad("n", "{\"addr\":\"a\",\"zone\":1}", HR_EPARSE,
		   "field \"zone\" must be a string");
	expect_bad("n", "{\"addr\":\"a\",\"state\":0}", HR_EPARSE,
		   "field \"state\" must be a string");
	expect_bad("n", "{\"addr\":\"a\",\"addr\":\"b\"}", HR_EPARSE,
		   "field \"addr\" given twice");
	expect_bad("n", "{\"addr\":\"a\\u0000b\"}", HR_EPARSE, "\\u0000 is not allowed");
}
END_TEST

START_TEST(record_invalid)
{
	char *big;

	expect_bad("n", "{\"addr\":\"a\",\"state\":\"leaving\"}", HR_EINVAL,
		   "node \"n\": state \"leaving\" is not active, warming or draining");
	expect_bad("n", "{\"addr\":\"a\",\"state\":\"Active\"}", HR_EINVAL, "state");
	expect_bad("n", "{\"addr\":\"a\",\"weight\":0}", HR_EINVAL,
		   "node \"n\": weight must be a finite number > 0");
	expect_bad("n", "{\"addr\":\"a\",\"weight\":-2}", HR_EINVAL, "weight");
	expect_bad("n", "{\"addr\":\"a\",\"weight\":1e999}", HR_EINVAL, "weight");
	expect_bad("n", "{\"addr\":\"\"}", HR_EINVAL, "node \"n\": addr is empty");
	expect_bad("n", "{\"addr\":\"a\\nb\"}", HR_EINVAL, "addr contains a control character");
	expect_bad("n", "{\"addr\":\"a\",\"zone\":\"z\\u0001\"}", HR_EINVAL,
		   "zone contains a control character");
	expect_bad("n", "", HR_EINVAL, "addr is empty");
	expect_bad("n", " \t\r\n", HR_EINVAL, "addr is empty");
	expect_bad("n", "127.0.0.1\x01:1", HR_EINVAL, "addr contains a control character");
	/* JSON that is neither an object nor a string is no address */
	expect_bad("n", "[1,2]", HR_EPARSE,
		   "node \"n\": record must be a JSON object or a bare address");
	expect_bad("n", " true\n", HR_EPARSE, "must be a JSON object or a bare address");
	expect_bad("n", "false", HR_EPARSE, "must be a JSON object or a bare address");
	expect_bad("n", "3", HR_EPARSE, "must be a JSON object or a bare address");
	expect_bad("n", "null", HR_EPARSE, "must be a JSON object or a bare address");
	expect_bad("n", "[]", HR_EPARSE, "must be a JSON object or a bare address");
	/* a record's weight range, bounds included, in etcd values */
	expect_bad("n", "{\"addr\":\"a\",\"weight\":1e-320}", HR_EINVAL,
		   "node \"n\": weight 9.99989e-321 is outside a record's range, 1e-06 to 1e+290");
	expect_bad("n", "{\"addr\":\"a\",\"weight\":1e-310}", HR_EINVAL, "outside");
	expect_bad("n", "{\"addr\":\"a\",\"weight\":9.9e-7}", HR_EINVAL, "outside");
	expect_bad("n", "{\"addr\":\"a\",\"weight\":1.0001e290}", HR_EINVAL, "outside");
	{
		hr__record rec;
		hr_error err = { 0 };
		hr_node node = { .id = "n", .addr = "a:1", .weight = 1e-7 };

		ck_assert_int_eq(parse("n", "{\"addr\":\"a\",\"weight\":1e-6}", &rec, &err),
				 HR_OK);
		hr__record_clear(&rec);
		ck_assert_int_eq(parse("n", "{\"addr\":\"a\",\"weight\":1e290}", &rec, &err),
				 HR_OK);
		hr__record_clear(&rec);
		/* writers check the same range */
		ck_assert_int_eq(hr_node_check(&node, NULL, &err), HR_EINVAL);
		ck_assert_ptr_nonnull(strstr(err.message, "outside a record's range"));
		node.weight = 1e-6;
		ck_assert_int_eq(hr_node_check(&node, NULL, &err), HR_OK);
		/* members documents keep the ring's rules */
		{
			const char *doc = "{\"a\":{\"addr\":\"x:1\",\"weight\":1e-9}}";
			hr_ring *ring = NULL;

			ck_assert_int_eq(hr_ring_from_json(doc, strlen(doc), NULL, &ring, &err),
					 HR_OK);
			hr_ring_release(ring);
		}
	}
	{
		/* a NUL inside a bare value is refused, not cut */
		hr__record rec;
		hr_error err = { 0 };

		ck_assert_int_eq(hr__record_parse("n", 1, "127.0.0.1\0:1", 12, &rec, &err),
				 HR_EINVAL);
		ck_assert_ptr_nonnull(strstr(err.message, "byte 0x00"));
		ck_assert_int_eq(hr__record_parse("n", 1, NULL, 3, &rec, &err), HR_EINVAL);
		ck_assert_int_eq(hr__record_parse("n", 1, "a", 1, NULL, &err), HR_EINVAL);
		ck_assert_int_eq(hr__record_parse(NULL, 1, "a", 1, &rec, &err), HR_EINVAL);
		/* an empty value for an id of zero bytes: the id is the error */
		ck_assert_int_eq(hr__record_parse("x", 0, "a", 1, &rec, &err), HR_EINVAL);
		ck_assert_ptr_nonnull(strstr(err.message, "node id is empty"));
	}
	/* over-long fields */
	big = malloc(600);
	memset(big, 'a', 256);
	big[256] = '\0';
	expect_bad("n", big, HR_ELIMIT, "addr is longer than 255 bytes");
	snprintf(big, 600, "{\"addr\":\"a\",\"zone\":\"%0256d\"}", 0);
	expect_bad("n", big, HR_ELIMIT, "zone is longer than 255 bytes");
	free(big);
	/* bad ids */
	expect_bad("a/b", "127.0.0.1:1", HR_EINVAL, "node \"a/b\": id must not contain '/'");
	expect_bad("a b", "127.0.0.1:1", HR_EINVAL, "printable ASCII");
	expect_bad("a\x1b", "127.0.0.1:1", HR_EINVAL, "node \"a\\x1b\"");
	big = malloc(HR_ID_MAX + 2);
	memset(big, 'x', HR_ID_MAX + 1);
	big[HR_ID_MAX + 1] = '\0';
	expect_bad(big, "127.0.0.1:1", HR_ELIMIT, "id is longer than 255 bytes");
	free(big);
}
END_TEST

START_TEST(node_validate)
{
	hr_node nd = { .id = "n", .addr = "127.0.0.1:1", .weight = 1 };
	hr_error err = { 0 };

	ck_assert_int_eq(hr__node_validate(&nd, &err), HR_OK);
	ck_assert_int_eq(hr__node_validate(NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr__node_validate(&nd, NULL), HR_OK);
	nd.weight = 0;
	ck_assert_int_eq(hr__node_validate(&nd, NULL), HR_EINVAL);
	ck_assert_int_eq(hr__id_validate(NULL, 0, &err), HR_EINVAL);
	ck_assert_int_eq(hr__id_validate("~!@#$%^&*()_+{}|:<>?`-=[];',.", 29, &err), HR_OK);
	ck_assert_int_eq(hr__id_validate("a/", 2, &err), HR_EINVAL);
	ck_assert_int_eq(hr__id_validate("a/", 1, &err), HR_OK);
}
END_TEST

/* ---- members documents ---------------------------------------------------- */

static int from_json(const char *doc, hr_ring **ring, hr_error *err)
{
	memset(err, 0, sizeof *err);
	*ring = (hr_ring *)1;
	return hr_ring_from_json(doc, strlen(doc), NULL, ring, err);
}

static void expect_bad_doc(const char *doc, int code, const char *msg)
{
	hr_ring *ring;
	hr_error err;
	int rc = from_json(doc, &ring, &err);

	ck_assert_msg(rc == code, "doc '%s': expected %d, got %d (%s)", doc, code,
		      rc, err.message);
	ck_assert_int_eq(err.code, code);
	ck_assert_ptr_null(ring);
	ck_assert_msg(strstr(err.message, msg) != NULL,
		      "doc '%s': message \"%s\" lacks \"%s\"", doc, err.message, msg);
}

START_TEST(members_document)
{
	const char *doc =
		"{\"a\": \"127.0.0.1:1\",\n"
		" \"b\": {\"addr\":\"127.0.0.1:2\",\"weight\":2,\"zone\":\"z1\"},\n"
		" \"c\": {\"addr\":\"127.0.0.1:3\",\"state\":\"draining\",\"extra\":1},\n"
		" \"d\": \"  127.0.0.1:4 \"}";
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 10 };
	hr_ring *ring;
	hr_error err;
	const hr_node *nd;

	ck_assert_int_eq(from_json(doc, &ring, &err), HR_OK);
	ck_assert_uint_eq(hr_ring_node_count(ring), 4);
	ck_assert_uint_eq(hr_ring_revision(ring), 0);
	nd = hr_ring_find(ring, "b");
	ck_assert_str_eq(nd->addr, "127.0.0.1:2");
	ck_assert_str_eq(nd->zone, "z1");
	ck_assert_uint_eq(hr_ring_node_vnodes(ring, nd), 400);
	ck_assert_int_eq(hr_ring_find(ring, "c")->state, HR_STATE_DRAINING);
	ck_assert_str_eq(hr_ring_find(ring, "d")->addr, "127.0.0.1:4");
	hr_ring_release(ring);

	ck_assert_int_eq(hr_ring_from_json(doc, strlen(doc), &opts, &ring, &err), HR_OK);
	ck_assert_uint_eq(hr_ring_point_count(ring), 50);
	hr_ring_release(ring);

	/* empty: a ring without nodes */
	ck_assert_int_eq(from_json(" {} ", &ring, &err), HR_OK);
	ck_assert_uint_eq(hr_ring_node_count(ring), 0);
	hr_ring_release(ring);

	/* the length is honoured: no NUL needed */
	ck_assert_int_eq(hr_ring_from_json("{\"a\":\"x:1\"}garbage", 11, NULL, &ring, &err),
			 HR_OK);
	hr_ring_release(ring);
}
END_TEST

START_TEST(members_bad)
{
	hr_ring *ring;
	hr_error err;

	/* An id given twice, as hr_ring_build() says it. */
	expect_bad_doc("{\"a\":\"127.0.0.1:1\",\"a\":\"127.0.0.1:2\"}", HR_EDUPLICATE,
		       "node \"a\": duplicate node id");
	expect_bad_doc("{\"a\":\"127.0.0.1:1\",\"\\u0061\":\"127.0.0.1:2\"}", HR_EDUPLICATE,
		       "node \"a\": duplicate node id");
	expect_bad_doc("[]", HR_EPARSE, "must be a JSON object");
	expect_bad_doc("\"127.0.0.1:1\"", HR_EPARSE, "must be a JSON object");
	expect_bad_doc("", HR_EPARSE, "members document: no JSON value");
	expect_bad_doc(" \n", HR_EPARSE, "members document: no JSON value (2 bytes of blanks)");
	expect_bad_doc("{", HR_EPARSE, "members document: unexpected end of the document at byte 1");
	expect_bad_doc("{\"a\":\"x:1\"", HR_EPARSE, "unexpected end of the document at byte 10");
	expect_bad_doc("{\"a\" \"x:1\"}", HR_EPARSE, "members document: malformed JSON near byte 5");
	expect_bad_doc("{\"a\":\"x:1\"} {}", HR_EPARSE, "unexpected data");
	expect_bad_doc("{\"a\":1}", HR_EPARSE, "node \"a\": record must be an object or a string");
	expect_bad_doc("{\"a\":null}", HR_EPARSE, "record must be an object or a string");
	expect_bad_doc("{\"a\":[\"x:1\"]}", HR_EPARSE, "record must be");
	expect_bad_doc("{\"a\":{\"weight\":1}}", HR_EPARSE, "node \"a\": field \"addr\" is missing");
	expect_bad_doc("{\"a\":{\"addr\":\"x:1\",\"weight\":\"1\"}}", HR_EPARSE,
		       "field \"weight\" must be a number");
	expect_bad_doc("{\"a/b\":\"x:1\"}", HR_EINVAL, "node \"a/b\": id must not contain '/'");
	expect_bad_doc("{\"\":\"x:1\"}", HR_EINVAL, "node id is empty");
	expect_bad_doc("{\"a\\u0000b\":\"x:1\"}", HR_EPARSE, "\\u0000");
	expect_bad_doc("{\"a\":{\"addr\":\"x:1\",\"weight\":-1}}", HR_EINVAL, "weight");
	expect_bad_doc("{\"a\":{\"addr\":\"x:1\",\"weight\":1e300}}", HR_ELIMIT,
		       "node \"a\": weight 1e+300 gives 2e+302 points at 200 per unit");
	expect_bad_doc("{\"a\":{\"addr\":\"x:1\",\"state\":\"gone\"}}", HR_EINVAL, "state \"gone\"");
	expect_bad_doc("{\"a\":\"\"}", HR_EINVAL, "addr is empty");
	/* Ids are the decoded strings: an escape is the character it names. */
	expect_bad_doc("{\"a\\u002fb\":\"x:1\"}", HR_EINVAL, "id must not contain '/'");
	expect_bad_doc("{\"caf\\u00e9\":\"x:1\"}", HR_EINVAL, "byte 0xc3 at offset 3");
	expect_bad_doc("{\"\\ud800\":\"x:1\"}", HR_EPARSE, "malformed JSON near byte 2");
	{
		hr_ring *r;
		hr_error e;

		ck_assert_int_eq(from_json("{\"\\u0041\\\"\\\\\":\"x:1\"}", &r, &e), HR_OK);
		ck_assert_ptr_nonnull(hr_ring_find(r, "A\"\\"));
		hr_ring_release(r);
	}

	ck_assert_int_eq(hr_ring_from_json("{}", 2, NULL, NULL, &err), HR_EINVAL);
	ck_assert_int_eq(hr_ring_from_json(NULL, 2, NULL, &ring, &err), HR_EINVAL);
	ck_assert_ptr_null(ring);
}
END_TEST

START_TEST(members_file)
{
	const char *doc = "{\"a\":\"127.0.0.1:1\",\"b\":{\"addr\":\"127.0.0.1:2\"}}\n";
	hr_ring *ring = NULL;
	hr_error err = { 0 };
	FILE *f = fopen(MEMBERS_FILE, "wb");

	ck_assert_ptr_nonnull(f);
	fputs(doc, f);
	fclose(f);
	ck_assert_int_eq(hr_ring_load_file(MEMBERS_FILE, NULL, &ring, &err), HR_OK);
	ck_assert_uint_eq(hr_ring_node_count(ring), 2);
	hr_ring_release(ring);

	/* Every message starts with the path, which it names once, so that
	 * a caller prints it as it is. */
	f = fopen(MEMBERS_FILE, "wb");
	fputs("{\"a\":", f);
	fclose(f);
	ck_assert_int_eq(hr_ring_load_file(MEMBERS_FILE, NULL, &ring, &err), HR_EPARSE);
	ck_assert_ptr_null(ring);
	ck_assert_str_eq(err.message, MEMBERS_FILE ": unexpected end of the document at byte 5");
	f = fopen(MEMBERS_FILE, "wb");
	fputs("{\"a/b\":\"x:1\"}", f);
	fclose(f);
	ck_assert_int_eq(hr_ring_load_file(MEMBERS_FILE, NULL, &ring, &err), HR_EINVAL);
	ck_assert_str_eq(err.message, MEMBERS_FILE ": node \"a/b\": id must not contain '/'");
	f = fopen(MEMBERS_FILE, "wb");
	fputs("[]", f);
	fclose(f);
	ck_assert_int_eq(hr_ring_load_file(MEMBERS_FILE, NULL, &ring, &err), HR_EPARSE);
	ck_assert_str_eq(err.message, MEMBERS_FILE ": must be a JSON object mapping node id to record");
	f = fopen(MEMBERS_FILE, "wb");
	fputs("{\"a\":\"x:1\",\"a\":\"y:1\"}", f);
	fclose(f);
	ck_assert_int_eq(hr_ring_load_file(MEMBERS_FILE, NULL, &ring, &err), HR_EDUPLICATE);
	ck_assert_str_eq(err.message, MEMBERS_FILE ": node \"a\": duplicate node id");
	remove(MEMBERS_FILE);

	ck_assert_int_eq(hr_ring_load_file("no-such-dir/members.json", NULL, &ring, &err),
			 HR_EIO);
	ck_assert_str_eq(err.message, "no-such-dir/members.json: cannot open: No such file or directory");
	ck_assert_int_eq(hr_ring_load_file(".", NULL, &ring, &err), HR_EIO);
	ck_assert_str_eq(err.message, ".: cannot read: Is a directory");
	ck_assert_ptr_null(ring);
	/* A control byte is shown escaped; a long path by its end. */
	ck_assert_int_eq(hr_ring_load_file("no\nsuch", NULL, &ring, &err), HR_EIO);
	ck_assert_str_eq(err.message, "no\\x0asuch: cannot open: No such file or directory");
	{
		char path[400];

		memset(path, 'd', sizeof path - 1);
		path[sizeof path - 1] = '\0';
		memcpy(path + sizeof path - 11, "/last.json", 10);
		ck_assert_int_eq(hr_ring_load_file(path, NULL, &ring, &err), HR_EIO);
		ck_assert_msg(strncmp(err.message, "...ddd", 6) == 0 &&
			      strstr(err.message, "dd/last.json: cannot open: "), "%s",
			      err.message);
	}
	ck_assert_int_eq(hr_ring_load_file(NULL, NULL, &ring, &err), HR_EINVAL);
	ck_assert_int_eq(hr_ring_load_file(MEMBERS_FILE, NULL, NULL, &err), HR_EINVAL);
}
END_TEST

/* ---- hostile records and documents ------------------------------------------ */

/* hr__record_parse() of `len` bytes (no NUL needed). */
static int parse_n(const char *id, const char *value, size_t len, hr__record *rec,
		   hr_error *err)
{
	return hr__record_parse(id, strlen(id), value, len, rec, err);
}

START_TEST(record_of_several_megabytes)
{
	size_t n = 5u << 20;
	char *v = malloc(n);
	hr__record rec;
	hr_error err = { 0 };

	memset(v, ' ', n);
	memcpy(v, "{\"addr\":\"127.0.0.1:1\"}", 22);
	ck_assert_int_eq(parse_n("big", v, n, &rec, &err), HR_ELIMIT);
	ck_assert_ptr_nonnull(strstr(err.message, "big"));
	ck_assert_ptr_nonnull(strstr(err.message, "65536"));
	ck_assert_ptr_null(rec.id);
	hrt_assert_clean_message(err.message);
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
	ck_assert_int_eq(parse_n("deep", v, n, &rec, &err), HR_ELIMIT);
	ck_assert_int_eq(parse_n("deep", v, 60000, &rec, &err), HR_EPARSE);
	ck_assert_str_eq(err.message, "node \"deep\": nested deeper than 1000 levels"
			 " of arrays and objects (byte 1017)");
	hrt_assert_clean_message(err.message);
	/* A members document has no record limit: depth still stops it. */
	v[0] = '{';
	ck_assert_int_eq(hr_ring_from_json(v, n, NULL, &ring, &err), HR_EPARSE);
	ck_assert_ptr_null(ring);
	ck_assert_str_eq(err.message, "members document: nested deeper than 1000 levels"
			 " of arrays and objects (byte 1017)");
	hrt_assert_clean_message(err.message);
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
		ck_assert_int_eq(parse_n("n", v, strlen(v), &rec, &err),
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
	hrt_assert_clean_message(err.message);
	ck_assert_int_eq(hr__record_parse("a\x01" "b", 3, "a:1", 3, &rec, &err), HR_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "\\x01"));
	hrt_assert_clean_message(err.message);
	ck_assert_int_eq(hr__record_parse("a\0b", 3, "a:1", 3, &rec, &err), HR_EINVAL);
	hrt_assert_clean_message(err.message);
	/* Addresses and zones are opaque bytes without control characters
	 * (docs/placement.md): invalid UTF-8 there is taken as is. */
	ck_assert_int_eq(parse_n("n", addr_utf8, strlen(addr_utf8), &rec, &err), 0);
	ck_assert_str_eq(rec.addr, "h\xff\xfe:1");
	hr__record_clear(&rec);
	ck_assert_int_eq(parse_n("n", "{\"addr\":\"a\\u0007b\"}", 19, &rec, &err), HR_EINVAL);
	hrt_assert_clean_message(err.message);
	ck_assert_int_eq(parse_n("n", "127.0.0.1\r:1", 11, &rec, &err), HR_EINVAL);
	hrt_assert_clean_message(err.message);
}
END_TEST

START_TEST(record_numbers_out_of_range)
{
	static const char *const bad[] = {
		"{\"addr\":\"a:1\",\"weight\":1e400}",
		"{\"addr\":\"a:1\",\"weight\":-1e400}",
		"{\"addr\":\"a:1\",\"weight\":-0.0}",
		"{\"addr\":\"a:1\",\"weight\":NaN}",
		"{\"addr\":\"a:1\",\"weight\":99999999999999999999999999999999999999e99999}",
	};
	hr__record rec;
	hr_error err = { 0 };

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int rc = parse_n("n", bad[i], strlen(bad[i]), &rec, &err);
		ck_assert_msg(rc == HR_EINVAL || rc == HR_EPARSE, "%s: %d", bad[i], rc);
		ck_assert_ptr_null(rec.addr);
		hrt_assert_clean_message(err.message);
	}
}
END_TEST

/* A duplicate id anywhere in the document, not only next to its twin. */
START_TEST(members_duplicate_id_apart)
{
	hr_ring *ring = NULL;
	hr_error err = { 0 };
	const char *dup_id = "{\"a\":\"x:1\",\"b\":\"y:1\",\"a\":\"z:1\"}";

	ck_assert_int_eq(hr_ring_from_json(dup_id, strlen(dup_id), NULL, &ring, &err),
			 HR_EDUPLICATE);
	ck_assert_ptr_null(ring);
	ck_assert_str_eq(err.message, "node \"a\": duplicate node id");
	hrt_assert_clean_message(err.message);
}
END_TEST

static Suite *member_suite(void)
{
	Suite *s = suite_create("member");
	TCase *tc = tcase_create("records");

	tcase_add_test(tc, record_bare);
	tcase_add_test(tc, record_json);
	tcase_add_test(tc, record_malformed);
	tcase_add_test(tc, record_invalid);
	tcase_add_test(tc, node_validate);
	suite_add_tcase(s, tc);

	tc = tcase_create("documents");
	tcase_add_test(tc, members_document);
	tcase_add_test(tc, members_bad);
	tcase_add_test(tc, members_file);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, record_of_several_megabytes);
	tcase_add_test(tc, record_deeply_nested);
	tcase_add_test(tc, record_nesting_at_the_limit);
	tcase_add_test(tc, record_invalid_utf8_and_control_bytes);
	tcase_add_test(tc, record_numbers_out_of_range);
	tcase_add_test(tc, members_duplicate_id_apart);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(member_suite());
}
