/* SPDX-License-Identifier: MIT */
/*
 * test_cli_nodes.c - the `hashring` command, run as a program: `hashring
 * nodes --members`: the table, its columns and its SVG plot.
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

/* Display columns of a UTF-8 line up to byte `len`. */
static int columns(const char *s, size_t len)
{
	wchar_t wide[512];
	char buf[1024];
	size_t n;

	ck_assert_uint_lt(len, sizeof buf);
	memcpy(buf, s, len);
	buf[len] = '\0';
	n = mbstowcs(wide, buf, 512);
	ck_assert_uint_ne(n, (size_t)-1);
	return wcswidth(wide, n);
}

/* Columns line up whatever the ids and zones, counted in display width:
 * text columns start, number columns end, at the same place on every
 * line. */
START_TEST(test_nodes_table_columns)
{
	char *path = write_file("members.json",
		"{\"a\":{\"addr\":\"127.0.0.1:1\",\"zone\":\"z\xc3\xbcrich\"},"
		" \"a-very-long-node-identifier-of-40-bytes\":{\"addr\":\"127.0.0.1:2\",\"zone\":\"\xe6\x97\xa5\xe6\x9c\xac\"},"
		" \"c\":{\"addr\":\"[::1]:11211\",\"zone\":\"x\xffy\",\"state\":\"draining\",\"weight\":2.5},"
		" \"d\":{\"addr\":\"127.0.0.1:4\"}}");
	struct run r = RUN("nodes", "--members", path);
	int edge[8] = { 0 }, lines = 0;
	char *line, *save = NULL;

	ck_assert(setlocale(LC_CTYPE, "C.UTF-8"));
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	/* A byte that is not UTF-8 is shown escaped, and counted so. */
	ck_assert_ptr_nonnull(strstr(r.out, "x\\xffy"));
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *p = line;

		if (line[0] == '#') {
			ck_assert_ptr_nonnull(strstr(line, "# 4 nodes, 1100 points, digest "));
			ck_assert_ptr_null(strstr(line, "revision"));
			continue;
		}
		/* Each share column names its view. */
		if (lines == 0)
			ck_assert_msg(strstr(line, "  VNODES  WRITE_SHARE  READ_SHARE") &&
				      !strstr(line, "READ_SHARE "), "header: %s", line);
		/* Cells are separated by two blanks at least; none holds one. */
		for (int c = 0; c < 8; c++) {
			const char *start, *end;
			int at;

			while (*p == ' ')
				p++;
			start = p;
			end = strstr(p, "  ");
			if (!end)
				end = p + strlen(p);
			ck_assert_msg(end > start, "line %d: no column %d: %s", lines, c, line);
			at = columns(line, (size_t)((c < 4 ? start : end) - line));
			if (lines == 0)
				edge[c] = at;
			ck_assert_msg(at == edge[c], "line %d, column %d at %d, not %d: %s", lines,
				      c, at, edge[c], line);
			p = end;
		}
		ck_assert_str_eq(p, "");
		lines++;
	}
	ck_assert_int_eq(lines, 5);
	run_free(&r);
	free(path);
}
END_TEST

/* The table's two share columns are each node's share of that view: a
 * warming node has none of the reads yet, a draining one none of the
 * writes any more. */
START_TEST(test_nodes_table_shares)
{
	char *path = write_file("members.json", members_states);
	hr_ring *ring = load_ring(path);
	struct run r = RUN("nodes", "--members", path);
	char *line, *save = NULL;
	size_t i = 0;

	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	line = strtok_r(r.out, "\n", &save); /* the header */
	for (line = strtok_r(NULL, "\n", &save); line && line[0] != '#';
	     line = strtok_r(NULL, "\n", &save), i++) {
		const hr_node *node = hr_ring_node(ring, i);
		char id[64], addr[64], zone[64], state[64], want[64];
		double weight, write_share, read_share;
		unsigned vnodes;

		ck_assert_int_eq(sscanf(line, "%63s %63s %63s %63s %lf %u %lf %lf", id, addr, zone,
					state, &weight, &vnodes, &write_share, &read_share), 8);
		ck_assert_str_eq(id, node->id);
		snprintf(want, sizeof want, "%.4f", hrt_node_share(ring, node, HR_VIEW_WRITE));
		ck_assert_double_eq_tol(write_share, strtod(want, NULL), 1e-9);
		snprintf(want, sizeof want, "%.4f", hrt_node_share(ring, node, HR_VIEW_READ));
		ck_assert_double_eq_tol(read_share, strtod(want, NULL), 1e-9);
		if (node->state == HR_STATE_WARMING) {
			ck_assert_double_gt(write_share, 0);
			ck_assert_double_eq(read_share, 0);
		}
		if (node->state == HR_STATE_DRAINING) {
			ck_assert_double_eq(write_share, 0);
			ck_assert_double_gt(read_share, 0);
		}
	}
	ck_assert_uint_eq(i, hr_ring_node_count(ring));
	run_free(&r);
	hr_ring_release(ring);
	free(path);
}
END_TEST

START_TEST(test_nodes_members)
{
	char *path = write_file("members.json", members_states);
	hr_ring *ring = load_ring(path);
	struct run r = RUN("nodes", "--json", "--members", path);
	char *line, *save = NULL;
	size_t i = 0;

	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.err, "");
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		const hr_node *node = hr_ring_node(ring, i);
		hr_view view = node->state == HR_STATE_DRAINING ? HR_VIEW_READ : HR_VIEW_WRITE;
		cJSON *obj = cJSON_Parse(line);

		ck_assert_ptr_nonnull(obj);
		ck_assert_str_eq(cJSON_GetObjectItem(obj, "id")->valuestring, node->id);
		ck_assert_str_eq(cJSON_GetObjectItem(obj, "state")->valuestring,
				 hr_state_name(node->state));
		ck_assert_double_eq_tol(num(obj, "share"), hrt_node_share(ring, node, view), 1e-6);
		ck_assert_double_eq_tol(num(obj, "write_share"),
					hrt_node_share(ring, node, HR_VIEW_WRITE), 1e-6);
		ck_assert_double_eq_tol(num(obj, "read_share"),
					hrt_node_share(ring, node, HR_VIEW_READ), 1e-6);
		ck_assert_double_eq(num(obj, "vnodes"), hr_ring_node_vnodes(ring, node));
		/* An offline ring has no revision. */
		ck_assert_ptr_null(cJSON_GetObjectItem(obj, "revision"));
		cJSON_Delete(obj);
	}
	ck_assert_uint_eq(i, hr_ring_node_count(ring));
	run_free(&r);

	assert_usage_error((const char *const[]){ "nodes", "--members", path, "--prefix", "/x/", NULL },
			   "nodes", "--members and --prefix");
	assert_usage_error((const char *const[]){ "nodes", "--members=", NULL }, "nodes", "--members");
	assert_usage_error((const char *const[]){ "nodes", "extra", NULL }, "nodes", "extra");
	hr_ring_release(ring);
	free(path);
}
END_TEST

/* `nodes --svg`: the table as before, and a plot with every node, its
 * state, and the arcs the warming node takes over. */
START_TEST(test_nodes_svg)
{
	char *path = write_file("members.json", members_states);
	char *svg_path = strdup(path_in_tmp("ring.svg")), *svg, *odd;
	struct run r = RUN("nodes", "--members", path, "--svg", svg_path);
	hr_ring *ring = load_ring(path);

	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "# 3 nodes"));
	ck_assert(svg_well_formed(svg_path));
	svg = read_all(svg_path);
	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		char want[64];

		snprintf(want, sizeof want, "data-node=\"%s\"", hr_ring_node(ring, i)->id);
		ck_assert_msg(strstr(svg, want), "no %s in the plot", want);
	}
	ck_assert_ptr_nonnull(strstr(svg, "w (warming)"));
	ck_assert_ptr_nonnull(strstr(svg, "d (draining)"));
	ck_assert_ptr_nonnull(strstr(svg, "stroke-dasharray")); /* the takeover */
	free(svg);
	run_free(&r);

	/* Rendezvous: no arcs in its diffs, each node's share drawn as one. */
	r = RUN("nodes", "--members", path, "--placement", "rendezvous", "--svg", svg_path);
	ck_assert_msg(r.status == 0, "rendezvous: exit %d: %s", r.status, r.err);
	ck_assert(svg_well_formed(svg_path));
	run_free(&r);

	/* An id with XML's special characters: escaped, still well-formed. */
	odd = write_file("odd.json", "{\"a&<b>\\\"x'\":{\"addr\":\"127.0.0.1:1\"},\"q\":\"127.0.0.1:2\"}");
	r = RUN("nodes", "--members", odd, "--svg", svg_path);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert(svg_well_formed(svg_path));
	svg = read_all(svg_path);
	ck_assert_ptr_nonnull(strstr(svg, "data-node=\"a&amp;&lt;b&gt;&quot;x&apos;\""));
	free(svg);
	free(odd);
	run_free(&r);

	r = RUN("nodes", "--members", path, "--svg", "/nonexistent/dir/ring.svg");
	ck_assert_int_eq(r.status, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "cannot write /nonexistent/dir/ring.svg"));
	run_free(&r);
	hr_ring_release(ring);
	free(svg_path);
	free(path);
}
END_TEST

static Suite *cli_nodes_suite(void)
{
	Suite *s = suite_create("cli_nodes");
	TCase *tc;

	tc = tcase_create("output");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_nodes_table_columns);
	tcase_add_test(tc, test_nodes_table_shares);
	tcase_add_test(tc, test_nodes_members);
	tcase_add_test(tc, test_nodes_svg);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(cli_nodes_suite());
}
