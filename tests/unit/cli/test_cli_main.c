/* SPDX-License-Identifier: MIT */
/*
 * test_cli_main.c - the `hashring` command, run as a program: dispatch,
 * help and version; the options every command shares; --help against the
 * man page and docs/cli.md.
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

START_TEST(test_version)
{
	struct run r = RUN("--version");

	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, "hashring " HR_VERSION_STRING "\n");
	ck_assert_str_eq(r.err, "");
	run_free(&r);
}
END_TEST

START_TEST(test_help)
{
	struct run r = RUN("--help");

	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "Usage: hashring"));
	ck_assert_ptr_nonnull(strstr(r.out, "lookup"));
	ck_assert_ptr_nonnull(strstr(r.out, "sim"));
	ck_assert_str_eq(r.err, "");
	run_free(&r);

	r = RUN("lookup", "--help");
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "--members"));
	ck_assert_ptr_nonnull(strstr(r.out, "--replicas"));
	run_free(&r);

	r = RUN("sim", "-h");
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "--vnodes"));
	run_free(&r);

	r = RUN("help", "sim");
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "--keys"));
	run_free(&r);
}
END_TEST

START_TEST(test_bad_command)
{
	assert_usage_error((const char *const[]){ "frobnicate", NULL }, NULL,
			   "unknown command 'frobnicate'");
	assert_usage_error((const char *const[]){ NULL }, NULL,
			   "missing command");
	assert_usage_error((const char *const[]){ "--frob", NULL }, NULL,
			   "--frob");
	assert_usage_error((const char *const[]){ "help", "frob", NULL }, NULL,
			   "frob");
}
END_TEST

START_TEST(test_weights_and_ids)
{
	static const struct {
		const char *args[10];
		const char *needle;
	} cases[] = {
		{ { "weight", "--id", "x", "0x10" }, "'0x10' is not a plain decimal number" },
		{ { "weight", "--id", "x", "-1" }, "-1 is not > 0" },
		{ { "weight", "--id", "x", "-0.5" }, "-0.5 is not > 0" },
		{ { "weight", "--id", "x", "0" }, "0 is not > 0" },
		{ { "weight", "--id", "x", "0.000" }, "0.000 is not > 0" },
		{ { "weight", "--id", "x", "1e308" }, "'1e308' is not a plain decimal number" },
		{ { "weight", "--id", "x", "inf" }, "'inf' is not a plain decimal number" },
		{ { "weight", "--id", "x", " 2" }, "' 2' is not a plain decimal number" },
		{ { "weight", "--id", "x", "2." }, "'2.' is not a plain decimal number" },
		{ { "weight", "--id", "x", "" }, "empty value" },
		{ { "weight", "--id", "x", "33554433" }, "more than 33554432 points" },
		{ { "weight", "--id", "x", "99999999999999999999999999" }, "more than 33554432 points" },
		{ { "weight", "--id", "x", "1", "2" }, "unexpected argument '2'" },
		{ { "weight", "--id", "", "1" }, "node id is empty" },
		{ { "weight", "--id", "a/b", "1" }, "must not contain '/'" },
		{ { "weight", "--id", "a b", "1" }, "printable ASCII" },
		{ { "weight", "1" }, "--id and the new weight are required" },
		{ { "state", "--id", "x", "-1" }, "'-1' is not warming, active or draining" },
		{ { "state", "--id", "x", "gone" }, "'gone' is not warming, active or draining" },
		{ { "state", "--id", "", "active" }, "node id is empty" },
		{ { "register", "--id", "a/b", "--addr", "a:1" }, "must not contain '/'" },
		{ { "register", "--id", "x", "--addr", "" }, "addr is empty" },
		{ { "register", "--id", "x", "--addr", "a:1", "--weight", "1e308" },
		  "'1e308' is not a plain decimal number" },
		{ { "register", "--id", "x", "--addr", "a:1", "--weight", "40000000" },
		  "more than 33554432 points" },
		{ { "register", "--id", "x", "--addr", "a:1", "--state", "draining" },
		  "'draining' is not warming or active" },
		{ { "register", "--id", "x", "--addr", "a:1", "--ttl", "1" }, "at least 2" },
		{ { "register", "--id", "x", "--addr", "a:1", "--ttl", "3601" }, "at most 3600" },
		{ { "register", "--id", "x", "--addr", "a:1", "--vnodes-per-weight", "1" },
		  "unknown option '--vnodes-per-weight'" },
		{ { "state", "--id", "x", "--placement", "ketama", "active" },
		  "unknown option '--placement'" },
		{ { "lookup", "--members", "m.json", "--rep", "2", "k" }, "unknown option '--rep'" },
		{ { "lookup", "--members", "m.json", "--vnodes-per-weight", "4294967296", "k" },
		  "at most 4294967295" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_usage_error(cases[i].args, cases[i].args[0], cases[i].needle);

	/* A weight that fits passes the checks (and then meets no etcd). */
	struct run r = RUN("weight", "--endpoints", "127.0.0.1:1", "--timeout", "1", "--id",
			   "x", "33554432");
	ck_assert_int_eq(r.status, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "etcd unreachable"));
	run_free(&r);
}
END_TEST

static const char *const all_commands[] = {
	"lookup", "nodes", "watch", "agent", "register", "state", "weight", "diff", "metrics", "sim", "acks",
	"rebalance", "serve", NULL
};

static char *read_source(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/../%s", HR_TEST_DATA_DIR, rel);
	return read_all(path);
}

/* The man page with roff's escapes for '-' undone. */
static char *man_text(void)
{
	char *man = read_source("docs/hashring.1"), *w = man;

	for (const char *r = man; *r; r++) {
		if (r[0] == '\\' && r[1] == '-')
			r++;
		*w++ = *r;
	}
	*w = '\0';
	return man;
}

/*
 * The man page's text for option `opt` (".B --opt" or ".BI --opt ..." after
 * a .TP) in section `from` up to the next .SS/.SH, or NULL.
 */
static char *man_entry(const char *man, const char *section, const char *opt)
{
	const char *sec = strstr(man, section), *end, *p;
	char needle[96];

	if (!sec)
		return NULL;
	end = strstr(sec + 1, "\n.SS");
	if (!end || (strstr(sec + 1, "\n.SH") && strstr(sec + 1, "\n.SH") < end))
		end = strstr(sec + 1, "\n.SH");
	for (p = sec; (p = strstr(p, ".TP\n")) && (!end || p < end); p += 4) {
		const char *term = p + 4, *stop;

		snprintf(needle, sizeof needle, "%s", opt);
		if (strncmp(term, ".B ", 3) && strncmp(term, ".BI ", 4) && strncmp(term, ".BR ", 4))
			continue;
		term = strchr(term, ' ') + 1;
		if (strncmp(term, needle, strlen(needle)) ||
		    (term[strlen(needle)] != ' ' && term[strlen(needle)] != '\n' &&
		     term[strlen(needle)] != '"'))
			continue;
		stop = strstr(term, "\n.TP");
		if (!stop || (end && stop > end))
			stop = end ? end : term + strlen(term);
		return strndup(p, (size_t)(stop - p));
	}
	return NULL;
}

/* Every option of every command's --help is in the man page, in the
 * command's subsection or a section it takes, and every number its help
 * names (limits, defaults) is in that entry too. */
START_TEST(test_help_matches_man_page)
{
	char *man = man_text();

	for (int c = 0; all_commands[c]; c++) {
		struct run r = RUN(all_commands[c], "--help");
		char section[64], *line, *save = NULL, current[64] = "", text[2048] = "";
		int options = 0, in_options = 0;

		ck_assert_int_eq(r.status, 0);
		snprintf(section, sizeof section, ".SS \"hashring %s ", all_commands[c]);
		ck_assert_msg(strstr(man, section), "no subsection for %s", all_commands[c]);
		/* An option's help, joined over its lines, ends at the next
		 * option: hence one step past the last line. */
		for (line = strtok_r(r.out, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
			int starts = line && !strncmp(line, "  --", 4);

			if ((starts || !line || !strncmp(line, "  -h", 4)) && current[0]) {
				char *entry = man_entry(man, section, current);
				const char *sections[] = { ".SH \"ETCD CONNECTION OPTIONS\"",
							   ".SH \"RING OPTIONS\"" };

				for (int s = 0; !entry && s < 2; s++)
					entry = man_entry(man, sections[s], current);
				ck_assert_msg(entry, "%s %s: not in the man page", all_commands[c],
					      current);
				for (const char *d = text; *d; d++) {
					char number[32];
					size_t n = strspn(d, "0123456789");

					if (!n || (d > text && (isalnum((unsigned char)d[-1]) || d[-1] == '$')))
						continue;
					snprintf(number, sizeof number, "%.*s", (int)n, d);
					ck_assert_msg(strstr(entry, number),
						      "%s %s: --help says %s, the man page does not: %s",
						      all_commands[c], current, number, entry);
					d += n - 1;
				}
				free(entry);
				current[0] = '\0';
				options++;
			}
			if (!line)
				break;
			if (!strcmp(line, "Options:"))
				in_options = 1;
			else if (!in_options)
				continue;
			if (starts) {
				size_t n = strcspn(line + 2, " ");
				const char *rest = line + 2 + n;

				snprintf(current, sizeof current, "%.*s", (int)n, line + 2);
				snprintf(text, sizeof text, "%s", rest);
			} else if (current[0]) {
				strncat(text, line, sizeof text - strlen(text) - 1);
			}
		}
		ck_assert_int_gt(options, 0);
		run_free(&r);
	}
	free(man);
}
END_TEST

/* The command table of docs/cli.md has every command's usage line. */
START_TEST(test_help_matches_cli_doc)
{
	char *doc = read_source("docs/cli.md"), *w = doc;

	/* The command table escapes '|' inside code. */
	for (const char *p = doc; *p; p++) {
		if (p[0] == '\\' && p[1] == '|')
			continue;
		*w++ = *p;
	}
	*w = '\0';
	for (int c = 0; all_commands[c]; c++) {
		struct run r = RUN(all_commands[c], "--help");
		char usage[512];

		ck_assert_int_eq(strncmp(r.out, "Usage: ", 7), 0);
		snprintf(usage, sizeof usage, "`%.*s`", (int)strcspn(r.out + 7, "\n"), r.out + 7);
		ck_assert_msg(strstr(doc, usage), "docs/cli.md lacks %s", usage);
		run_free(&r);
	}
	free(doc);
}
END_TEST

/* Ring options only where rings are built; register takes the placement
 * alone, for --tokens. */
START_TEST(test_ring_options_where_rings_are_built)
{
	static const struct {
		const char *cmd;
		int rings, placement;
	} cmds[] = {
		{ "lookup", 1, 1 }, { "nodes", 1, 1 }, { "watch", 1, 1 }, { "diff", 1, 1 },
		{ "metrics", 1, 1 }, { "register", 0, 1 }, { "state", 0, 0 }, { "weight", 0, 0 },
		{ "acks", 0, 0 }, { "rebalance", 1, 1 }, { "tokens", 1, 1 },
	};

	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		struct run r = RUN(cmds[i].cmd, "--help");

		ck_assert_int_eq(r.status, 0);
		ck_assert_int_eq(!!strstr(r.out, "  --vnodes-per-weight N"), cmds[i].rings);
		ck_assert_int_eq(!!strstr(r.out, "  --placement NAME"), cmds[i].placement);
		ck_assert_ptr_nonnull(strstr(r.out, "  --timeout SECONDS"));
		ck_assert_ptr_nonnull(strstr(r.out, "  --endpoints URLS"));
		run_free(&r);
	}
	/* The defaults shown are the defaults, whatever came before --help. */
	struct run r = RUN("register", "--ttl", "5", "--help");
	ck_assert_ptr_nonnull(strstr(r.out, "(2-3600; default 10)"));
	run_free(&r);
}
END_TEST

/* A value the library refuses is a usage error named by its option, never
 * by a library struct or field: a Maglev size that is not a prime (from a
 * file or from etcd alike), ack prefixes that overlap the ring's (saying
 * which contains which), a bad client id, a prefix too long, metrics
 * labels.  All found before etcd is asked anything. */
START_TEST(test_options_named_not_structs)
{
	static const char *const closed = "127.0.0.1:1";
	char long_prefix[4100];
	const struct {
		const char *args[12];
		const char *msg;
	} cases[] = {
		{ { "nodes", "--endpoints", closed, "--placement", "maglev", "--maglev-size", "1000" },
		  "--maglev-size: 1000 is not a prime (65537 is, the default)" },
		{ { "watch", "--endpoints", closed, "--client-id", "w", "--prefix", "/x/nodes/",
		    "--ack-prefix", "/x/" },
		  "--ack-prefix /x/ contains --prefix /x/nodes/: node records would be read as acks" },
		{ { "watch", "--endpoints", closed, "--client-id", "w", "--prefix", "/x/",
		    "--ack-prefix", "/x/acks/" },
		  "--prefix /x/ contains --ack-prefix /x/acks/: acks would be read as node records" },
		{ { "watch", "--endpoints", closed, "--client-id", "w", "--prefix", "/hashring/" },
		  "--prefix /hashring/ contains --ack-prefix /hashring/acks/ (the default)" },
		{ { "serve", "--endpoints", closed, "--client-id", "w", "--ack-prefix",
		    "/hashring/nodes/" },
		  "--ack-prefix /hashring/nodes/ is also --prefix /hashring/nodes/ (the default)" },
		{ { "rebalance", "--endpoints", closed, "--prefix", "/x/", "--ack-prefix",
		    "/x/acks/" },
		  "--prefix /x/ contains --ack-prefix /x/acks/: acks would be read as node records" },
		{ { "rebalance", "--endpoints", closed, "--ack-prefix", "/hashring/nodes/" },
		  "--ack-prefix /hashring/nodes/ is also --prefix /hashring/nodes/ (the default)" },
		{ { "acks", "--endpoints", closed, "--ack-prefix", "/hashring/" },
		  "--ack-prefix /hashring/ contains --prefix /hashring/nodes/ (the default)" },
		{ { "watch", "--endpoints", closed, "--client-id", "a b" },
		  "--client-id: ack client id \"a\": must be printable ASCII" },
		{ { "lookup", "--endpoints", closed, "--prefix", long_prefix, "k" },
		  "--prefix: longer than 4096 bytes" },
		{ { "metrics", "--endpoints", closed, "--label", "bad-name=x" },
		  "--label bad-name=x: name \"bad-name\" is not [a-zA-Z_][a-zA-Z0-9_]*" },
		{ { "metrics", "--endpoints", closed, "--label", "a=1", "--label", "a=2" },
		  "--label a=2: the name \"a\" is given twice" },
		{ { "metrics", "--endpoints", closed, "--name-prefix", "9x" },
		  "--name-prefix: \"9x\" is not [a-zA-Z_][a-zA-Z0-9_]*" },
	};

	memset(long_prefix, 'p', sizeof long_prefix - 1);
	long_prefix[0] = '/';
	long_prefix[sizeof long_prefix - 2] = '/';
	long_prefix[sizeof long_prefix - 1] = '\0';
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct run r = run_argv(cases[i].args);

		ck_assert_msg(r.status == 2, "%s: exit %d, %s", cases[i].msg, r.status, r.err);
		assert_one_error_line(&r, cases[i].args[0]);
		ck_assert_msg(strstr(r.err, cases[i].msg), "'%s' not in '%s'", cases[i].msg, r.err);
		ck_assert_msg(!strstr(r.err, "hr_"), "a library name in '%s'", r.err);
		run_free(&r);
	}
}
END_TEST

static Suite *cli_main_suite(void)
{
	Suite *s = suite_create("cli_main");
	TCase *tc;

	tc = tcase_create("main");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_bad_command);
	suite_add_tcase(s, tc);

	tc = tcase_create("command_line");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_weights_and_ids);
	tcase_add_test(tc, test_help_matches_man_page);
	tcase_add_test(tc, test_help_matches_cli_doc);
	tcase_add_test(tc, test_ring_options_where_rings_are_built);
	tcase_add_test(tc, test_options_named_not_structs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(cli_main_suite());
}
