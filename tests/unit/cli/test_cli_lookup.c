/* SPDX-License-Identifier: MIT */
/*
 * test_cli_lookup.c - the `hashring` command, run as a program: `hashring
 * lookup --members`: text and JSON answers, absent owners, escaping,
 * errors; the Maglev and rendezvous options of the ring-building commands.
 *
 * Expected answers come from the library itself (the same members file
 * loaded in-process), so these tests check what the CLI prints, not the
 * placement, which the ring suites cover.
 */
#define _GNU_SOURCE
#include "hrt_check.h"
#include "hrt_ring_fixture.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "hashring.h"

#include "cli_test.h"

#define NKEYS 40

/* The text line the CLI must print for `key`, from the library. */
static void expected_text(const hr_ring *ring, const char *key, size_t r,
			  char *buf, size_t size)
{
	const hr_node *reps[16];
	hr_lookup res;
	int k;

	ck_assert_int_eq(hr_ring_lookup(ring, key, strlen(key), &res, NULL), 0);
	k = hr_ring_preflist(ring, key, strlen(key), HR_VIEW_WRITE, reps, r, NULL);
	ck_assert_int_ge(k, 0);
	snprintf(buf, size, "%s\t%s\t%s\t", key,
		 res.node ? res.node->id : "-",
		 res.read_node ? res.read_node->id : "-");
	if (k == 0)
		strncat(buf, "-", size - strlen(buf) - 1);
	for (int i = 0; i < k; i++) {
		if (i)
			strncat(buf, ",", size - strlen(buf) - 1);
		strncat(buf, reps[i]->id, size - strlen(buf) - 1);
	}
}

/* Runs `lookup` (text) on NKEYS keys, in two runs to stay under
 * MAX_ARGS, and compares every line with the library's answer. */
static void check_text_lines(const char *members, const char *replicas,
			     size_t r)
{
	char *path = write_file("members.json", members);
	char keys[NKEYS][16], expect[256];
	hr_ring *ring = load_ring(path);
	int i = 0;

	for (int k = 0; k < NKEYS; k++)
		snprintf(keys[k], sizeof keys[k], "user:%d", k * 7919);

	for (int half = 0; half < 2; half++) {
		const char *args[MAX_ARGS];
		int m = 0, first = half * NKEYS / 2;
		char *line, *save = NULL;
		struct run res;

		args[m++] = "lookup";
		args[m++] = "--members";
		args[m++] = path;
		if (replicas) {
			args[m++] = "--replicas";
			args[m++] = replicas;
		}
		for (int k = first; k < first + NKEYS / 2; k++)
			args[m++] = keys[k];
		args[m] = NULL;

		res = run_argv(args);
		ck_assert_msg(res.status == 0, "exit %d: %s", res.status,
			      res.err);
		ck_assert_str_eq(res.err, "");
		ck_assert_uint_eq(count_lines(lookup_lines(res.out)), NKEYS / 2);
		for (line = strtok_r(res.out + strlen(LOOKUP_HEADER), "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save), i++) {
			expected_text(ring, keys[i], r, expect, sizeof expect);
			ck_assert_str_eq(line, expect);
		}
		run_free(&res);
	}
	ck_assert_int_eq(i, NKEYS);
	hr_ring_release(ring);
	free(path);
}

START_TEST(test_lookup_text)
{
	check_text_lines(members_zones, NULL, 3);
	check_text_lines(members_zones, "1", 1);
	check_text_lines(members_zones, "10", 10);
	check_text_lines(members_states, NULL, 3);
}
END_TEST

static const char *json_id(const cJSON *v)
{
	if (cJSON_IsNull(v))
		return NULL;
	ck_assert(cJSON_IsString(v));
	return v->valuestring;
}

static void assert_same_node(const cJSON *v, const hr_node *node)
{
	const char *id = json_id(v);

	if (!node)
		ck_assert_ptr_null(id);
	else
		ck_assert_str_eq(id, node->id);
}

START_TEST(test_lookup_json)
{
	char *path = write_file("members.json", members_states);
	hr_ring *ring = load_ring(path);
	struct run r = RUN("lookup", "--json", "--members", path,
			   "--replicas=2", "k0", "k1", "k2", "k3", "k4", "k5",
			   "k6", "k7", "k8", "k9", "k10", "k11", "k12", "k13",
			   "k14", "k15", "k16", "k17", "k18", "k19");
	char *line, *save = NULL;
	int i = 0, warming_owner = 0;

	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.err, "");
	ck_assert_uint_eq(count_lines(r.out), 20);
	for (line = strtok_r(r.out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), i++) {
		cJSON *obj = cJSON_Parse(line);
		const hr_node *reps[2];
		const cJSON *arr;
		char key[16];
		hr_lookup res;
		int k;

		ck_assert_msg(obj != NULL, "not JSON: %s", line);
		snprintf(key, sizeof key, "k%d", i);
		ck_assert_str_eq(cJSON_GetObjectItem(obj, "key")->valuestring,
				 key);
		ck_assert_int_eq(hr_ring_lookup(ring, key, strlen(key), &res, NULL), 0);
		assert_same_node(cJSON_GetObjectItem(obj, "node"), res.node);
		assert_same_node(cJSON_GetObjectItem(obj, "read_node"),
				 res.read_node);
		/* The owners' addresses, as serve's /lookup gives them. */
		ck_assert_str_eq(json_id(cJSON_GetObjectItem(obj, "addr")), res.node->addr);
		ck_assert_str_eq(json_id(cJSON_GetObjectItem(obj, "read_addr")),
				 res.read_node->addr);
		/* Writes never go to a draining node, reads never to a
		 * warming one. */
		ck_assert_str_ne(json_id(cJSON_GetObjectItem(obj, "node")), "d");
		ck_assert_str_ne(json_id(cJSON_GetObjectItem(obj, "read_node")),
				 "w");
		warming_owner += strcmp(res.node->id, "w") == 0;

		k = hr_ring_preflist(ring, key, strlen(key), HR_VIEW_WRITE,
				     reps, 2, NULL);
		arr = cJSON_GetObjectItem(obj, "replicas");
		ck_assert(cJSON_IsArray(arr));
		ck_assert_int_eq(cJSON_GetArraySize(arr), k);
		ck_assert_int_eq(k, 2);
		for (int j = 0; j < k; j++)
			assert_same_node(cJSON_GetArrayItem(arr, j), reps[j]);
		cJSON_Delete(obj);
	}
	/* Weight 3 of 4 in the write view: "w" owns most of these keys. */
	ck_assert_int_gt(warming_owner, 0);
	hr_ring_release(ring);
	run_free(&r);
	free(path);
}
END_TEST

/* A view with no node: its owner is '-' in text and null in JSON. */
START_TEST(test_lookup_absent_owner)
{
	char *warm = write_file("warm.json",
				"{\"w\":{\"addr\":\"127.0.0.1:1\",\"state\":\"warming\"}}");
	char *drain = write_file("drain.json",
				 "{\"d\":{\"addr\":\"127.0.0.1:1\",\"state\":\"draining\"}}");
	struct run r;
	cJSON *obj;

	r = RUN("lookup", "--members", warm, "k");
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(lookup_lines(r.out), "k\tw\t-\tw\n");
	run_free(&r);

	r = RUN("lookup", "--members", drain, "k");
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(lookup_lines(r.out), "k\t-\td\t-\n");
	run_free(&r);

	r = RUN("lookup", "--members", warm, "--json", "k");
	ck_assert_int_eq(r.status, 0);
	obj = cJSON_Parse(r.out);
	ck_assert_ptr_nonnull(obj);
	ck_assert_str_eq(json_id(cJSON_GetObjectItem(obj, "node")), "w");
	ck_assert_str_eq(json_id(cJSON_GetObjectItem(obj, "addr")), "127.0.0.1:1");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(obj, "read_node")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(obj, "read_addr")));
	cJSON_Delete(obj);
	run_free(&r);

	r = RUN("lookup", "--members", drain, "--json", "k");
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out,
			 "{\"key\":\"k\",\"node\":null,\"addr\":null,\"read_node\":\"d\","
			 "\"read_addr\":\"127.0.0.1:1\",\"replicas\":[]}\n");
	run_free(&r);
	free(warm);
	free(drain);
}
END_TEST

/* Whatever the key bytes, a JSON line stays valid JSON and a text line
 * stays one line of four fields. */
START_TEST(test_lookup_escaping)
{
	char *path = write_file("members.json", members_zones);
	const char *odd = "a\"b\\c\x01\x1f\t\n\x7f end";
	const char *utf8 = "caf\xc3\xa9";
	struct run r;
	cJSON *obj;

	r = RUN("lookup", "--json", "--members", path, odd);
	ck_assert_int_eq(r.status, 0);
	ck_assert_uint_eq(count_lines(r.out), 1);
	obj = cJSON_Parse(r.out);
	ck_assert_msg(obj != NULL, "not JSON: %s", r.out);
	ck_assert_str_eq(cJSON_GetObjectItem(obj, "key")->valuestring, odd);
	cJSON_Delete(obj);
	run_free(&r);

	/* Valid UTF-8 stays as it is. */
	r = RUN("lookup", "--json", "--members", path, utf8);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "{\"key\":\"caf\xc3\xa9\","));
	obj = cJSON_Parse(r.out);
	ck_assert_ptr_nonnull(obj);
	cJSON_Delete(obj);
	run_free(&r);

	r = RUN("lookup", "--members", path, odd, "--", "--not-an-option");
	ck_assert_int_eq(r.status, 0);
	ck_assert_uint_eq(count_lines(lookup_lines(r.out)), 2);
	ck_assert_ptr_nonnull(strstr(r.out, "a\"b\\\\c\\x01\\x1f\\t\\n\\x7f end\t"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n--not-an-option\t"));
	run_free(&r);
	free(path);
}
END_TEST

START_TEST(test_lookup_runtime_errors)
{
	static const struct {
		const char *name;
		const char *text;
	} bad[] = {
		{ "syntax.json", "{\"a\": " },
		{ "array.json", "[\"127.0.0.1:1\"]" },
		{ "weight.json", "{\"a\":{\"addr\":\"127.0.0.1:1\",\"weight\":-1}}" },
		{ "state.json", "{\"a\":{\"addr\":\"127.0.0.1:1\",\"state\":\"gone\"}}" },
		{ "noaddr.json", "{\"a\":{\"weight\":1}}" },
		{ "empty.json", "{}" },
		{ "blank.json", "" },
	};
	char *missing = strdup(path_in_tmp("no-such-file.json"));
	struct run r;

	r = RUN("lookup", "--members", missing, "k");
	ck_assert_int_eq(r.status, 1);
	assert_one_error_line(&r, "lookup");
	ck_assert_ptr_nonnull(strstr(r.err, "no-such-file.json"));
	run_free(&r);

	r = RUN("lookup", "--members", tmpdir, "k");
	ck_assert_int_eq(r.status, 1);
	assert_one_error_line(&r, "lookup");
	ck_assert_ptr_nonnull(strstr(r.err, tmpdir));
	run_free(&r);

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *path = write_file(bad[i].name, bad[i].text);

		r = RUN("lookup", "--members", path, "--json", "k");
		ck_assert_msg(r.status == 1, "%s: exit %d", bad[i].name,
			      r.status);
		assert_one_error_line(&r, "lookup");
		ck_assert_ptr_nonnull(strstr(r.err, bad[i].name));
		run_free(&r);
		free(path);
	}
	free(missing);
}
END_TEST

START_TEST(test_lookup_usage_errors)
{
	char *path = write_file("members.json", members_zones);
	const char *const cases[][7] = {
		{ "lookup", "--members", path, NULL },
		{ "lookup", "--members", path, "--replicas", "0", "k" },
		{ "lookup", "--members", path, "--replicas", "-1", "k" },
		{ "lookup", "--members", path, "--replicas", "two", "k" },
		{ "lookup", "--members", path, "--replicas", "100001", "k" },
		{ "lookup", "--members", path, "--json=1", "k" },
		{ "lookup", "--members", path, "--frob", "k" },
		{ "lookup", "--members=", "k" },
		{ "lookup", "k", "--members" },
		{ "lookup", "--members", "--json", "k" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_usage_error(cases[i], "lookup", NULL);
	assert_usage_error((const char *const[]){ "lookup", "--members", path,
						  "--endpoints", "127.0.0.1:1", "k", NULL },
			   "lookup", "--members");
	assert_usage_error((const char *const[]){ "lookup", "--prefix", "", "k", NULL },
			   "lookup", "--prefix");
	assert_usage_error((const char *const[]){ "lookup", "--members", path,
						  "--replicas", "0", "k", NULL },
			   "lookup", "--replicas");
	free(path);
}
END_TEST

/* --placement maglev and --maglev-size on the ring-building commands: the
 * answers, vnodes and shares of the library's Maglev ring; a size that is
 * not a prime is an error naming it, one out of range a usage error. */
START_TEST(test_maglev_commands)
{
	char *f1 = write_file("members.json", members_states);
	hr_ring_options o = { .size = sizeof o, .placement = HR_PLACEMENT_MAGLEV,
			      .maglev_size = 1009 };
	char want[128], *line, *save = NULL;
	hr_ring *ring;
	hr_lookup res;
	struct run r;
	size_t i = 0;

	ck_assert_int_eq(hr_ring_load_file(f1, &o, &ring, NULL), HR_OK);
	r = RUN("lookup", "--placement", "maglev", "--maglev-size", "1009", "--members", f1,
		"user:42");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	hr_ring_lookup(ring, "user:42", 7, &res, NULL);
	snprintf(want, sizeof want, "user:42\t%s\t", res.node->id);
	ck_assert(strncmp(lookup_lines(r.out), want, strlen(want)) == 0);
	run_free(&r);

	r = RUN("nodes", "--json", "--placement", "maglev", "--maglev-size", "1009",
		"--members", f1);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		const hr_node *node = hr_ring_node(ring, i);
		hr_view view = node->state == HR_STATE_DRAINING ? HR_VIEW_READ : HR_VIEW_WRITE;
		cJSON *obj = cJSON_Parse(line);

		ck_assert_ptr_nonnull(obj);
		ck_assert_double_eq(num(obj, "vnodes"), hr_ring_node_vnodes(ring, node));
		ck_assert_double_eq_tol(num(obj, "share"), hrt_node_share(ring, node, view), 1e-6);
		cJSON_Delete(obj);
	}
	ck_assert_uint_eq(i, hr_ring_node_count(ring));
	run_free(&r);

	r = RUN("diff", "--placement", "maglev", f1, f1);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "moved\t0.000000\t0\n"));
	run_free(&r);

	assert_usage_error((const char *const[]){ "lookup", "--placement", "maglev",
						  "--maglev-size", "1000", "--members", f1, "k", NULL },
			   "lookup", "--maglev-size: 1000 is not a prime (65537 is, the default)");
	assert_usage_error((const char *const[]){ "nodes", "--placement", "maglev",
						  "--maglev-size", "100", "--members", f1, NULL },
			   "nodes", NULL);
	hr_ring_release(ring);
	free(f1);
}
END_TEST

/* --placement rendezvous: the library's owners and exact shares; a diff
 * of a join has the joiner's share in totals and no arc; a weight outside
 * the placement's range is an error naming the node. */
START_TEST(test_rendezvous_commands)
{
	char *f1 = write_file("members.json", members_states);
	char *f2 = write_file("more.json",
			      "{\"a\":\"127.0.0.1:1\",\"b\":{\"addr\":\"127.0.0.1:2\",\"weight\":3}}");
	char *f3 = write_file("most.json",
			      "{\"a\":\"127.0.0.1:1\",\"b\":{\"addr\":\"127.0.0.1:2\",\"weight\":3},"
			      "\"c\":\"127.0.0.1:3\"}");
	char *f4 = write_file("huge.json", "{\"a\":{\"addr\":\"127.0.0.1:1\",\"weight\":1e300}}");
	hr_ring_options o = { .size = sizeof o, .placement = HR_PLACEMENT_RENDEZVOUS };
	char want[128], *line, *save = NULL;
	hr_ring *ring;
	hr_lookup res;
	struct run r;
	size_t i = 0;

	ck_assert_int_eq(hr_ring_load_file(f1, &o, &ring, NULL), HR_OK);
	r = RUN("lookup", "--placement", "rendezvous", "--members", f1, "user:42");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	hr_ring_lookup(ring, "user:42", 7, &res, NULL);
	snprintf(want, sizeof want, "user:42\t%s\t", res.node->id);
	ck_assert(strncmp(lookup_lines(r.out), want, strlen(want)) == 0);
	run_free(&r);

	r = RUN("nodes", "--json", "--placement", "rendezvous", "--members", f1);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		const hr_node *node = hr_ring_node(ring, i);
		hr_view view = node->state == HR_STATE_DRAINING ? HR_VIEW_READ : HR_VIEW_WRITE;
		cJSON *obj = cJSON_Parse(line);

		ck_assert_ptr_nonnull(obj);
		ck_assert_double_eq(num(obj, "vnodes"), 1);
		ck_assert_double_eq_tol(num(obj, "share"), hrt_node_share(ring, node, view), 1e-6);
		cJSON_Delete(obj);
	}
	ck_assert_uint_eq(i, hr_ring_node_count(ring));
	run_free(&r);

	/* c joins a (weight 1) and b (weight 3): it takes 1/5, 1/20 from a. */
	r = RUN("diff", "--placement", "rendezvous", f2, f3);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strcmp(r.out, "total\ta\tc\t0\t0.050000\n"
				    "total\tb\tc\t0\t0.150000\n"
				    "moved\t0.200000\t0\n") == 0, "%s", r.out);
	run_free(&r);

	r = RUN("lookup", "--placement", "rendezvous", "--members", f4, "k");
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "node \"a\"") && strstr(r.err, "rendezvous"), "%s", r.err);
	run_free(&r);
	hr_ring_release(ring);
	free(f1);
	free(f2);
	free(f3);
	free(f4);
}
END_TEST

static Suite *cli_lookup_suite(void)
{
	Suite *s = suite_create("cli_lookup");
	TCase *tc;

	tc = tcase_create("lookup");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_lookup_text);
	tcase_add_test(tc, test_lookup_json);
	tcase_add_test(tc, test_lookup_absent_owner);
	tcase_add_test(tc, test_lookup_escaping);
	tcase_add_test(tc, test_lookup_runtime_errors);
	tcase_add_test(tc, test_lookup_usage_errors);
	tcase_add_test(tc, test_maglev_commands);
	tcase_add_test(tc, test_rendezvous_commands);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(cli_lookup_suite());
}
