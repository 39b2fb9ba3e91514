/* SPDX-License-Identifier: MIT */
/*
 * test_cli_sim.c - the `hashring` command, run as a program: `hashring
 * sim`: its figures against the library and the seed articles, text, SVG
 * plots, and --compare.
 *
 * Expected answers come from the library itself (the same members file
 * loaded in-process), so these tests check what the CLI prints, not the
 * placement, which the ring suites cover.
 */
#define _GNU_SOURCE
#include "hrt_check.h"

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
#include "sim_rows.h"

/* Runs `hashring sim` (or the sim_hashes tool) with --json; its object. */
static cJSON *run_sim_json_of(const char *prog, const char *const *args)
{
	struct run r = run_prog(prog, args);
	cJSON *doc;

	ck_assert_msg(r.status == 0, "sim exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_uint_eq(count_lines(r.out), 1);
	doc = cJSON_Parse(r.out);
	ck_assert_msg(doc != NULL, "sim output is not JSON: %s", r.out);
	run_free(&r);
	return doc;
}

static cJSON *run_sim_json(const char *const *args)
{
	return run_sim_json_of(HR_CLI_PATH, args);
}

static const cJSON *rows_of(const cJSON *doc, int expect)
{
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, "rows");

	ck_assert(cJSON_IsArray(rows));
	ck_assert_int_eq(cJSON_GetArraySize(rows), expect);
	return rows;
}

START_TEST(test_sim_xxh3_figures)
{
	cJSON *doc = run_sim_json((const char *const[]){
		"sim", "--json", "--vnodes", "200", NULL });
	const cJSON *row;
	const cJSON *hash = cJSON_GetObjectItemCaseSensitive(doc, "hash");

	ck_assert_double_eq(num(doc, "nodes"), 10);
	ck_assert_double_eq(num(doc, "keys"), 200000);
	ck_assert(cJSON_IsString(hash));
	ck_assert_str_eq(hash->valuestring, "xxh3");
	ck_assert_double_eq_tol(num(doc, "modulo_moved"),
				hrt_sim_modulo_moved(hrt_sim_xxh3, 10, 200000), 1e-5);
	ck_assert_double_ge(num(doc, "modulo_moved"), 0.88);
	ck_assert_double_le(num(doc, "modulo_moved"), 0.93);

	row = cJSON_GetArrayItem(rows_of(doc, 1), 0);
	ck_assert_double_eq(num(row, "vnodes"), 200);
	ck_assert_double_ge(num(row, "max_mean"), 1.05);
	ck_assert_double_le(num(row, "max_mean"), 1.25);
	ck_assert_double_ge(num(row, "min_mean"), 0.75);
	ck_assert_double_le(num(row, "min_mean"), 0.97);
	ck_assert_double_gt(num(row, "stddev"), 0.0);
	ck_assert_double_lt(num(row, "stddev"), 0.15);
	ck_assert_double_ge(num(row, "moved"), 0.07);
	ck_assert_double_le(num(row, "moved"), 0.11);
	ck_assert_double_eq_tol(num(row, "ideal_moved"), 1.0 / 11, 1e-6);
	cJSON_Delete(doc);
}
END_TEST

/* Allocated tokens: joins keep the ring near its fair shares and move
 * exactly the joiner's share; a tenth leaving to heirs stays balanced where
 * arcs falling to the next points do not, and moves exactly each leaver's
 * share. */
START_TEST(test_sim_tokens_leaves)
{
	cJSON *doc = run_sim_json((const char *const[]){
		"sim", "--placement", "tokens", "--nodes", "60", "--json", NULL });
	const cJSON *joined = cJSON_GetObjectItemCaseSensitive(doc, "joined");
	const cJSON *left = cJSON_GetObjectItemCaseSensitive(doc, "left");
	const cJSON *heirs = cJSON_GetObjectItemCaseSensitive(doc, "left_with_heirs");

	ck_assert_double_eq(num(doc, "tokens"), 16);
	ck_assert_double_le(num(joined, "max_fair"), 1.07);
	ck_assert_double_ge(num(joined, "min_fair"), 0.93);
	ck_assert_double_eq(num(doc, "moved_minus_own_max"), 0);
	ck_assert_double_eq(num(left, "nodes"), 54);
	ck_assert_double_eq(num(heirs, "nodes"), 54);
	ck_assert_double_le(num(heirs, "max_fair"), 1.10);
	ck_assert_double_lt(num(heirs, "max_fair"), num(left, "max_fair"));
	ck_assert_double_gt(num(heirs, "min_fair"), num(left, "min_fair"));
	ck_assert_double_eq(num(heirs, "moved_minus_own_max"), 0);
	cJSON_Delete(doc);
}
END_TEST

/* The default run: five rows in order, sane figures, and balance that gets
 * better with more vnodes; fast enough to be the demo. */
START_TEST(test_sim_default_rows)
{
	static const double vnodes[] = { 1, 10, 100, 200, 500 };
	struct timespec t0, t1;
	const cJSON *rows;
	cJSON *doc;
	double secs;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	doc = run_sim_json((const char *const[]){ "sim", "--json", NULL });
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* About a second on a laptop; the bound leaves room for sanitizers. */
	ck_assert_msg(secs < 30.0, "sim took %.1f s", secs);

	rows = rows_of(doc, 5);
	for (int i = 0; i < 5; i++) {
		const cJSON *row = cJSON_GetArrayItem(rows, i);

		ck_assert_double_eq(num(row, "vnodes"), vnodes[i]);
		ck_assert_double_ge(num(row, "max_mean"), 1.0);
		ck_assert_double_le(num(row, "min_mean"), 1.0);
		ck_assert_double_ge(num(row, "min_mean"), 0.0);
		ck_assert_double_ge(num(row, "stddev"), 0.0);
		ck_assert_double_gt(num(row, "moved"), 0.0);
		ck_assert_double_lt(num(row, "moved"), 0.5);
	}
	ck_assert_double_gt(num(cJSON_GetArrayItem(rows, 0), "max_mean"),
			    num(cJSON_GetArrayItem(rows, 4), "max_mean"));
	ck_assert_double_gt(num(cJSON_GetArrayItem(rows, 0), "stddev"),
			    num(cJSON_GetArrayItem(rows, 4), "stddev"));
	cJSON_Delete(doc);
}
END_TEST

/* The CLI's row is what the library's rings give for the same nodes and
 * keys, computed by the definitions of the issue (tests/tools/sim_rows.c). */
START_TEST(test_sim_matches_library)
{
	hrt_sim_row want;
	const cJSON *row;
	cJSON *doc;

	ck_assert_int_eq(hrt_sim_row_of(hrt_sim_xxh3, 4, 3000, 7, &want, NULL), 0);
	doc = run_sim_json((const char *const[]){
		"sim", "--nodes=4", "--keys", "3000", "--vnodes=7", "--json",
		NULL });
	row = cJSON_GetArrayItem(rows_of(doc, 1), 0);
	ck_assert_double_eq_tol(num(row, "max_mean"), want.max_mean, 1e-5);
	ck_assert_double_eq_tol(num(row, "min_mean"), want.min_mean, 1e-5);
	ck_assert_double_eq_tol(num(row, "stddev"), want.stddev, 1e-5);
	ck_assert_double_eq_tol(num(row, "moved"), want.moved, 1e-5);
	ck_assert_double_eq_tol(num(row, "ideal_moved"), 0.2, 1e-9);
	ck_assert_double_eq_tol(num(doc, "modulo_moved"),
				hrt_sim_modulo_moved(hrt_sim_xxh3, 4, 3000), 1e-5);
	cJSON_Delete(doc);
}
END_TEST

/* The seed articles' hashes are a test tool's (tests/tools/sim_hashes.c),
 * on the library's ring: the same experiment, other figures. */
START_TEST(test_sim_other_hashes)
{
	cJSON *doc = run_sim_json_of(HR_SIM_HASHES_PATH, (const char *const[]){
		"--hash", "md5", "--vnodes", "200", "--json", NULL });
	const cJSON *row = cJSON_GetArrayItem(rows_of(doc, 1), 0);

	/* The hashes themselves, by published values. */
	ck_assert_uint_eq(hrt_sim_md5("", 0), 0xd41d8cd98f00b204ull);
	ck_assert_uint_eq(hrt_sim_md5("node-0#0", 8), 0x305a959a087ed12dull);
	ck_assert_uint_eq(hrt_sim_fnv1a("a", 1), 0xaf63dc4c8601ec8cull);

	ck_assert_str_eq(cJSON_GetObjectItem(doc, "hash")->valuestring, "md5");
	/* MD5 mixes well: the seed's figures, within the noise. */
	ck_assert_double_ge(num(row, "max_mean"), 1.03);
	ck_assert_double_le(num(row, "max_mean"), 1.25);
	ck_assert_double_ge(num(row, "moved"), 0.07);
	ck_assert_double_le(num(row, "moved"), 0.11);
	ck_assert_double_ge(num(doc, "modulo_moved"), 0.88);
	ck_assert_double_le(num(doc, "modulo_moved"), 0.93);
	cJSON_Delete(doc);

	doc = run_sim_json_of(HR_SIM_HASHES_PATH, (const char *const[]){
		"--hash", "fnv1a", "--keys", "50000", "--vnodes", "10,200",
		"--json", NULL });
	ck_assert_str_eq(cJSON_GetObjectItem(doc, "hash")->valuestring,
			 "fnv1a");
	ck_assert_double_eq_tol(num(doc, "modulo_moved"), hrt_sim_modulo_moved(hrt_sim_fnv1a, 10, 50000), 1e-5);
	for (int i = 0; i < 2; i++) {
		row = cJSON_GetArrayItem(rows_of(doc, 2), i);
		ck_assert_double_ge(num(row, "max_mean"), 1.0);
		ck_assert_double_le(num(row, "min_mean"), 1.0);
		ck_assert_double_ge(num(row, "moved"), 0.0);
		ck_assert_double_le(num(row, "moved"), 1.0);
	}
	cJSON_Delete(doc);
}
END_TEST

/* Given xxh3, the tool prints exactly the CLI's tables: the other hashes
 * are the same experiment on the same ring. */
START_TEST(test_sim_tool_xxh3_is_the_cli)
{
	static const char *const args[] = { "--nodes", "7", "--keys", "30000", "--vnodes",
					    "1,3,50", "--json" };
	const char *cli[16] = { "sim" }, *tool[16] = { "--hash", "xxh3" };
	struct run a, b;

	for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
		cli[1 + i] = args[i];
		tool[2 + i] = args[i];
	}
	a = run_argv(cli);
	b = run_prog(HR_SIM_HASHES_PATH, tool);
	ck_assert_int_eq(a.status, 0);
	ck_assert_int_eq(b.status, 0);
	ck_assert_str_eq(a.out, b.out);
	run_free(&a);
	run_free(&b);
}
END_TEST

START_TEST(test_sim_text)
{
	struct run r = RUN("sim", "--keys", "20000", "--vnodes", "10,200");

	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.err, "");
	ck_assert_ptr_nonnull(strstr(r.out, "max/mean"));
	ck_assert_ptr_nonnull(strstr(r.out, "hash % N"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n      10 "));
	ck_assert_ptr_nonnull(strstr(r.out, "\n     200 "));
	run_free(&r);
}
END_TEST

START_TEST(test_sim_bad_options)
{
	static const char *const cases[][6] = {
		{ "sim", "--nodes", "0" },
		{ "sim", "--nodes", "-3" },
		{ "sim", "--nodes", "abc" },
		{ "sim", "--nodes", "1.5" },
		{ "sim", "--nodes", " 7" },
		{ "sim", "--nodes=" },
		{ "sim", "--nodes", "100000" },
		{ "sim", "--nodes" },
		{ "sim", "--nodes", "--json" },
		{ "sim", "--keys", "0" },
		{ "sim", "--keys", "+5" },
		{ "sim", "--keys", "99999999999999999999999999" },
		{ "sim", "--keys", "20000000" },
		{ "sim", "--vnodes", "" },
		{ "sim", "--vnodes", "1,,2" },
		{ "sim", "--vnodes", "10," },
		{ "sim", "--vnodes", "0" },
		{ "sim", "--vnodes", "10,-5" },
		{ "sim", "--vnodes", "x" },
		{ "sim", "--nodes", "99999", "--vnodes", "400" },
		/* The seed articles' hashes are a test tool's, not the CLI's. */
		{ "sim", "--hash", "md5" },
		{ "sim", "--hash", "xxh3" },
		{ "sim", "--json=yes" },
		{ "sim", "--bogus" },
		{ "sim", "-n", "3" },
		{ "sim", "extra" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_usage_error(cases[i], "sim", NULL);
	assert_usage_error((const char *const[]){ "sim", "--nodes", "0", NULL },
			   "sim", "--nodes");
	assert_usage_error((const char *const[]){ "sim", "--hash", "md5", NULL },
			   "sim", "--hash");
}
END_TEST

/* `sim --svg`: both panels, one point per vnode count. */
START_TEST(test_sim_svg)
{
	char *svg_path = strdup(path_in_tmp("sim.svg")), *svg;
	struct run r = RUN("sim", "--keys", "20000", "--nodes", "5", "--vnodes", "1,10,100",
			   "--svg", svg_path);
	size_t lines = 0;

	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "max/mean")); /* the table too */
	ck_assert(svg_well_formed(svg_path));
	svg = read_all(svg_path);
	for (const char *p = svg; (p = strstr(p, "<polyline")); p++)
		lines++;
	ck_assert_uint_eq(lines, 4); /* max, min, moved, ideal */
	ck_assert_ptr_nonnull(strstr(svg, ">100</text>"));
	ck_assert_ptr_nonnull(strstr(svg, "20000 keys on 5 nodes"));
	free(svg);
	run_free(&r);
	assert_usage_error((const char *const[]){ "sim", "--svg=", NULL }, "sim", "--svg");
	free(svg_path);
}
END_TEST

static const char *const compare_rows[] = { "modulo", "ring-1", "ring-100", "ring-200",
					    "ring-500", "tokens-16", "ketama", "maglev", "rendezvous", "jump" };
#define COMPARE_ROWS (sizeof compare_rows / sizeof compare_rows[0])

static const char *str(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	ck_assert_msg(cJSON_IsString(v), "no string '%s'", name);
	return v->valuestring;
}

/* The row named `name` of a --compare object. */
static const cJSON *compare_row(const cJSON *doc, const char *name)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc, "rows"))
		if (!strcmp(str(row, "name"), name))
			return row;
	ck_abort_msg("no row %s", name);
	return NULL;
}

/* Every row, in order, with every column, within what the definitions
 * allow (docs/hashring.1); `nodes` and `keys` as given. */
static void check_compare_doc(const cJSON *doc, double nodes, double keys)
{
	static const char *const columns[] = { "max_mean", "min_mean", "moved_add",
					       "moved_add_ratio", "moved_remove",
					       "moved_remove_ratio", "lookup_ns", "build_ms",
					       "bytes" };
	const cJSON *rows = rows_of(doc, (int)COMPARE_ROWS);
	char last[32];

	ck_assert_double_eq(num(doc, "nodes"), nodes);
	ck_assert_double_eq(num(doc, "keys"), keys);
	ck_assert_str_eq(str(doc, "hash"), "xxh3");
	snprintf(last, sizeof last, "node-%.0f", nodes);
	ck_assert_str_eq(str(doc, "joins"), last);
	ck_assert_double_eq_tol(num(doc, "ideal_moved_add"), 1 / (nodes + 1), 1e-6);
	ck_assert_double_eq_tol(num(doc, "ideal_moved_remove"), 1 / nodes, 1e-6);
	snprintf(last, sizeof last, "node-%.0f", nodes - 1);
	for (size_t i = 0; i < COMPARE_ROWS; i++) {
		const cJSON *row = cJSON_GetArrayItem(rows, (int)i);
		const cJSON *numbered = cJSON_GetObjectItemCaseSensitive(row, "numbered");

		ck_assert_str_eq(str(row, "name"), compare_rows[i]);
		for (size_t c = 0; c < sizeof columns / sizeof columns[0]; c++)
			ck_assert_double_ge(num(row, columns[c]), 0);
		ck_assert(cJSON_IsBool(numbered));
		/* Numbered buckets lose the last; the rings one chosen node,
		 * the same for all. */
		if (cJSON_IsTrue(numbered))
			ck_assert_str_eq(str(row, "leaves"), last);
		else
			ck_assert_str_eq(str(row, "leaves"),
					 str(compare_row(doc, "ring-1"), "leaves"));
		ck_assert_double_ge(num(row, "max_mean"), 1.0);
		ck_assert_double_le(num(row, "min_mean"), 1.0);
		ck_assert_double_gt(num(row, "moved_add"), 0);
		ck_assert_double_le(num(row, "moved_add"), 1);
		ck_assert_double_le(num(row, "moved_remove"), 1);
		/* Six significant digits each. */
		ck_assert_double_eq_tol(num(row, "moved_add_ratio"),
					num(row, "moved_add") * (nodes + 1),
					1e-5 * (nodes + 1));
		ck_assert_double_eq_tol(num(row, "moved_remove_ratio"),
					num(row, "moved_remove") * nodes, 1e-5 * nodes);
		ck_assert_double_gt(num(row, "lookup_ns"), 0);
		ck_assert_double_gt(num(row, "bytes"), 0);
	}
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(compare_row(doc, "modulo"),
								 "numbered")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(compare_row(doc, "jump"),
								 "numbered")));
}

START_TEST(test_sim_compare_json)
{
	cJSON *doc = run_sim_json((const char *const[]){
		"sim", "--compare", "--json", "--keys", "200000", NULL });
	cJSON *sim = run_sim_json((const char *const[]){
		"sim", "--json", "--keys", "200000", "--vnodes", "200", NULL });
	const cJSON *jump, *modulo, *maglev, *rdv, *ring, *vnodes200;

	check_compare_doc(doc, 10, 200000);
	jump = compare_row(doc, "jump");
	modulo = compare_row(doc, "modulo");
	maglev = compare_row(doc, "maglev");
	/* Jump moves about the ideal both ways; hash % N nearly everything,
	 * exactly what sim (and the test tool) measure. */
	ck_assert_double_eq_tol(num(jump, "moved_add_ratio"), 1.0, 0.04);
	ck_assert_double_eq_tol(num(jump, "moved_remove_ratio"), 1.0, 0.04);
	ck_assert_double_le(num(jump, "max_mean"), 1.03);
	ck_assert_double_eq_tol(num(modulo, "moved_add"), 10.0 / 11, 0.01);
	ck_assert_double_eq_tol(num(modulo, "moved_add"), num(sim, "modulo_moved"), 1e-5);
	ck_assert_double_eq_tol(num(modulo, "moved_add"),
				hrt_sim_modulo_moved(hrt_sim_xxh3, 10, 200000), 1e-5);
	ck_assert_double_eq_tol(num(modulo, "moved_remove"), 9.0 / 10, 0.01);
	/* Maglev's table is within a slot of even; the keys' own spread
	 * adds the rest. */
	ck_assert_double_le(num(maglev, "max_mean"), 1.02);
	ck_assert_double_ge(num(maglev, "min_mean"), 0.98);
	ck_assert_double_le(num(maglev, "moved_add_ratio"), 1.2);
	/* Rendezvous: shares are w/W exactly, and a join or a leave moves
	 * only the joiner's or the leaver's keys; the rest is the keys' own
	 * spread. */
	/* Tokens: a join takes keys only from the nodes it splits, about its
	 * share; 16 tokens a node balance within the bound of placement.md
	 * section 16 at 10 nodes. */
	ck_assert_double_eq_tol(num(compare_row(doc, "tokens-16"), "moved_add_ratio"), 1.0, 0.1);
	ck_assert_double_le(num(compare_row(doc, "tokens-16"), "max_mean"), 1.05);
	rdv = compare_row(doc, "rendezvous");
	ck_assert_double_le(num(rdv, "max_mean"), 1.02);
	ck_assert_double_ge(num(rdv, "min_mean"), 0.98);
	ck_assert_double_eq_tol(num(rdv, "moved_add_ratio"), 1.0, 0.04);
	ck_assert_double_eq_tol(num(rdv, "moved_remove_ratio"), 1.0, 0.04);
	/* The same keys and nodes as sim: ring-200 is sim's 200-vnode row. */
	ring = compare_row(doc, "ring-200");
	vnodes200 = cJSON_GetArrayItem(rows_of(sim, 1), 0);
	ck_assert_double_eq_tol(num(ring, "max_mean"), num(vnodes200, "max_mean"), 1e-5);
	ck_assert_double_eq_tol(num(ring, "min_mean"), num(vnodes200, "min_mean"), 1e-5);
	ck_assert_double_eq_tol(num(ring, "moved_add"), num(vnodes200, "moved"), 1e-5);
	/* A ring moves only what the leaving node owned: near 1/N at 200
	 * vnodes; one point per node is all luck. */
	ck_assert_double_eq_tol(num(ring, "moved_remove_ratio"), 1.0, 0.2);
	ck_assert_double_gt(num(compare_row(doc, "ring-1"), "max_mean"),
			    num(compare_row(doc, "ring-500"), "max_mean"));
	/* Memory grows with the points. */
	ck_assert_double_lt(num(compare_row(doc, "ring-100"), "bytes"),
			    num(compare_row(doc, "ring-500"), "bytes"));
	ck_assert_double_eq(num(jump, "bytes"), num(modulo, "bytes"));
	cJSON_Delete(sim);
	cJSON_Delete(doc);
}
END_TEST

/* 100 nodes, and the seed: one seed gives one run's figures twice, another
 * seed other keys.  50,000 keys keep the three runs short (rendezvous
 * scores every node); 500 keys move on a join, enough for jump's ratio. */
START_TEST(test_sim_compare_100_nodes_and_seed)
{
	cJSON *a = run_sim_json((const char *const[]){
		"sim", "--compare", "--json", "--nodes", "100", "--keys", "50000", "--seed", "7",
		NULL });
	cJSON *b = run_sim_json((const char *const[]){
		"sim", "--compare", "--json", "--nodes", "100", "--keys", "50000", "--seed", "7",
		NULL });
	cJSON *c = run_sim_json((const char *const[]){
		"sim", "--compare", "--json", "--nodes", "100", "--keys", "50000", "--seed", "8",
		NULL });

	check_compare_doc(a, 100, 50000);
	check_compare_doc(c, 100, 50000);
	ck_assert_double_eq(num(a, "seed"), 7);
	ck_assert_double_eq_tol(num(compare_row(a, "jump"), "moved_add_ratio"), 1.0, 0.08);
	ck_assert_double_eq_tol(num(compare_row(a, "jump"), "moved_remove_ratio"), 1.0, 0.08);
	ck_assert_double_eq_tol(num(compare_row(a, "modulo"), "moved_add"), 100.0 / 101, 0.01);
	for (size_t i = 0; i < COMPARE_ROWS; i++) {
		const cJSON *ra = compare_row(a, compare_rows[i]);
		const cJSON *rb = compare_row(b, compare_rows[i]);

		ck_assert_double_eq(num(ra, "max_mean"), num(rb, "max_mean"));
		ck_assert_double_eq(num(ra, "moved_add"), num(rb, "moved_add"));
		ck_assert_double_eq(num(ra, "moved_remove"), num(rb, "moved_remove"));
		ck_assert_double_eq(num(ra, "bytes"), num(rb, "bytes"));
		ck_assert_str_eq(str(ra, "leaves"), str(rb, "leaves"));
	}
	ck_assert_double_ne(num(compare_row(a, "ring-1"), "max_mean"),
			    num(compare_row(c, "ring-1"), "max_mean"));
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
}
END_TEST

START_TEST(test_sim_compare_text_and_svg)
{
	char *svg_path = strdup(path_in_tmp("compare.svg")), *svg;
	struct run r = RUN("sim", "--compare", "--keys", "20000", "--nodes", "5", "--svg",
			   svg_path);

	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_ptr_nonnull(strstr(r.out, "20000 keys on 5 nodes"));
	ck_assert_ptr_nonnull(strstr(r.out, "node-4, the last, leaves"));
	ck_assert_ptr_nonnull(strstr(r.out, "join moved"));
	ck_assert_ptr_nonnull(strstr(r.out, "\nmodulo* "));
	ck_assert_ptr_nonnull(strstr(r.out, "\njump* "));
	ck_assert_ptr_nonnull(strstr(r.out, "\nmaglev "));
	ck_assert_uint_eq(count_lines(r.out), 4 + COMPARE_ROWS);
	ck_assert(svg_well_formed(svg_path));
	svg = read_all(svg_path);
	for (size_t i = 0; i < COMPARE_ROWS; i++) {
		char name[40];

		snprintf(name, sizeof name, ">%s</text>", compare_rows[i]);
		ck_assert_msg(strstr(svg, name), "no %s in the plot", compare_rows[i]);
	}
	ck_assert_ptr_nonnull(strstr(svg, "20000 keys on 5 nodes"));
	free(svg);
	run_free(&r);

	/* A plot that cannot be written fails the run. */
	r = RUN("sim", "--compare", "--keys", "1000", "--svg", "/nonexistent/dir/x.svg");
	ck_assert_int_eq(r.status, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent/dir/x.svg"));
	run_free(&r);
	free(svg_path);
}
END_TEST

START_TEST(test_sim_compare_bad_options)
{
	static const struct {
		const char *args[8];
		const char *needle;
	} cases[] = {
		{ { "sim", "--compare", "--nodes", "1" }, "--nodes 2 or more" },
		{ { "sim", "--compare", "--nodes", "0" }, "--nodes" },
		{ { "sim", "--compare", "--nodes", "10001" }, "up to 10000" },
		{ { "sim", "--compare", "--vnodes", "10" }, "--vnodes" },
		{ { "sim", "--vnodes", "1,2", "--compare" }, "--vnodes" },
		{ { "sim", "--seed", "3" }, "--seed goes with --compare" },
		{ { "sim", "--compare", "--seed", "-1" }, "--seed" },
		{ { "sim", "--compare", "--seed", "4294967296" }, "--seed" },
		{ { "sim", "--compare", "--keys", "0" }, "--keys" },
		{ { "sim", "--compare", "--svg=" }, "--svg" },
		{ { "sim", "--compare=yes" }, "--compare" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_usage_error(cases[i].args, "sim", cases[i].needle);
}
END_TEST

static Suite *cli_sim_suite(void)
{
	Suite *s = suite_create("cli_sim");
	TCase *tc;

	tc = tcase_create("sim");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sim_xxh3_figures);
	tcase_add_test(tc, test_sim_default_rows);
	tcase_add_test(tc, test_sim_matches_library);
	tcase_add_test(tc, test_sim_other_hashes);
	tcase_add_test(tc, test_sim_tool_xxh3_is_the_cli);
	tcase_add_test(tc, test_sim_text);
	tcase_add_test(tc, test_sim_bad_options);
	suite_add_tcase(s, tc);

	tc = tcase_create("output");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sim_svg);
	suite_add_tcase(s, tc);

	/* Each run places the keys on eight placements three times. */
	tc = tcase_create("sim_compare");
	tcase_set_timeout(tc, 240);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sim_compare_json);
	tcase_add_test(tc, test_sim_tokens_leaves);
	tcase_add_test(tc, test_sim_compare_100_nodes_and_seed);
	tcase_add_test(tc, test_sim_compare_text_and_svg);
	tcase_add_test(tc, test_sim_compare_bad_options);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(cli_sim_suite());
}
