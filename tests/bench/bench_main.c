/* SPDX-License-Identifier: MIT */
/*
 * bench_main.c - hashring-bench: runs every measurement once and prints the
 * report, readable or as one JSON object (--json).
 *
 *   hashring-bench [--json] [--lookups-only] [--placement NAME] [--runs N]
 *                  [--puts N] [--nodes N] [--idle-ms N]
 *   hashring-bench --clients N,N,... [--duration S] [--fanout-puts N]
 *                  [--fanout-from N] [--levers L,L] [--share [on|off|both]]
 *                  [--json]
 *   hashring-bench --big N [--changes N] [--json]
 *
 * Not a test: figures depend on the machine.  Only ratios and paired
 * differences taken within one run compare across machines.
 */
#include "bench.h"
#include "bench_big.h"
#include "bench_clients.h"
#include "bench_lookup.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hashring-bench [--json] [--lookups-only] [--placement NAME] [--runs N]\n"
		"                      [--puts N] [--nodes N] [--idle-ms N]\n"
		"  --lookups-only  the lookup figures only: no etcd, no propagation or idle\n"
		"               figures (null in --json)\n"
		"  --placement NAME  the lookups' rings: xxh3 (default), ketama, maglev,\n"
		"               rendezvous or tokens (vnodes random tokens per node); the\n"
		"               binary search and libmemcached are measured with xxh3 only\n"
		"  --runs N     runs of the API against the raw ring (xxh3, tokens and maglev\n"
		"               at 100, 1000 and 10000 nodes x 200), each figure given as the\n"
		"               median and range of the runs (1..99, default 5)\n"
		"  --puts N     measured puts for the propagation latency (1..100000, default 300)\n"
		"  --nodes N    node records under the prefix (1..10000, default 100)\n"
		"  --idle-ms N  quiet window for the watcher's idle CPU (0..60000, default 10000;\n"
		"               0 skips it)\n"
		"  --json       print one JSON object instead of the readable report\n"
		"usage: hashring-bench --clients N,N,... [--duration S] [--fanout-puts N]\n"
		"                      [--fanout-from N] [--levers L,L]\n"
		"                      [--share [on|off|both]] [--json]\n"
		"  --clients    only the many-clients figures: idle clients opened up to each\n"
		"               count (ascending, 1..20000) on one etcd, for each lever\n"
		"  --duration S quiet window per count (1..600, default 30)\n"
		"  --fanout-puts N  puts timed to the last client at --fanout-from clients\n"
		"               and more (0..1000, default 40)\n"
		"  --fanout-from N  the smallest count whose fan-out is timed (default 1000)\n"
		"  --levers L,L unjittered, baseline, progress, progress20, silent (default:\n"
		"               all five, in that order)\n"
		"  --share [on|off|both]  the clients share one watcher (on; --share alone),\n"
		"               each has its own (off, the default), or each lever runs\n"
		"               both ways, independent then shared, each on its own etcd\n"
		"usage: hashring-bench --big N [--changes N] [--json]\n"
		"  --big N      only the big-ring figures, N nodes (1..100000, HR_NODES_MAX):\n"
		"               first sync beside a bare paged range, one-node changes,\n"
		"               hashring nodes and diff, the watcher's memory\n"
		"  --changes N  rounds of changes (a new node, a weight change, a delete;\n"
		"               1..1000, default 20)\n");
}

/* Parses a whole decimal integer in [lo, hi]; -1 with a message otherwise. */
static int parse_int(const char *opt, const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	if (!s) {
		fprintf(stderr, "hashring-bench: %s needs a value\n", opt);
		return -1;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "hashring-bench: %s: '%s' is not an integer in %ld..%ld\n",
			opt, s, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* The hr_placement `s` names; -1 with a message if none. */
static int parse_placement(const char *s)
{
	for (int i = 0; s && i < HRB_PLACEMENTS; i++)
		if (hrb_placement_names[i] && !strcmp(s, hrb_placement_names[i]))
			return i;
	fprintf(stderr, "hashring-bench: --placement: '%s' is not xxh3, ketama, maglev,"
		" rendezvous or tokens\n", s ? s : "");
	return -1;
}

/* Splits a comma list of counts (ascending) into a->clients. */
static int parse_counts(const char *s, hrb_args *a)
{
	char buf[256], *save = NULL, *tok;

	if (!s || strlen(s) >= sizeof buf) {
		fprintf(stderr, "hashring-bench: --clients needs a list such as 1,100,1000\n");
		return -1;
	}
	strcpy(buf, s);
	a->n_clients = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int v;
		if (a->n_clients == HRB_CLIENT_COUNTS_MAX) {
			fprintf(stderr, "hashring-bench: --clients: at most %d counts\n",
				HRB_CLIENT_COUNTS_MAX);
			return -1;
		}
		if (parse_int("--clients", tok, 1, 20000, &v))
			return -1;
		if (a->n_clients && v <= a->clients[a->n_clients - 1]) {
			fprintf(stderr, "hashring-bench: --clients: '%s' must be ascending\n", s);
			return -1;
		}
		a->clients[a->n_clients++] = v;
	}
	return a->n_clients ? 0 : -1;
}

/* Splits a comma list of lever names into a->levers (pointing into argv). */
static int parse_levers(char *s, hrb_args *a)
{
	char *save = NULL, *tok;

	a->n_levers = 0;
	for (tok = s ? strtok_r(s, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
		if (!hrb_clients_lever_known(tok) || a->n_levers == HRB_LEVERS_MAX) {
			fprintf(stderr, "hashring-bench: --levers: unknown or too many: '%s'\n",
				tok);
			return -1;
		}
		a->levers[a->n_levers++] = tok;
	}
	if (!a->n_levers)
		fprintf(stderr, "hashring-bench: --levers needs a list such as baseline,progress\n");
	return a->n_levers ? 0 : -1;
}

/* --share's optional value (the next argument unless it is an option):
 * HRB_SHARE_* bits, or -1 with a message. */
static int parse_share(const char *s)
{
	if (!s || !strcmp(s, "on"))
		return HRB_SHARE_ON;
	if (!strcmp(s, "off"))
		return HRB_SHARE_OFF;
	if (!strcmp(s, "both"))
		return HRB_SHARE_OFF | HRB_SHARE_ON;
	fprintf(stderr, "hashring-bench: --share: '%s' is not on, off or both\n", s);
	return -1;
}

/* 0 to run, 1 to exit successfully (--help), -1 on bad arguments. */
static int parse_args(int argc, char **argv, hrb_args *a)
{
	a->json = 0;
	a->lookups_only = 0;
	a->placement = HR_PLACEMENT_XXH3;
	a->runs = 5;
	a->puts = 300;
	a->nodes = 100;
	a->idle_ms = 10000;
	a->n_clients = 0;
	a->clients_duration_s = 30;
	a->fanout_puts = 40;
	a->fanout_from = 1000;
	a->n_levers = 5;
	a->levers[0] = "unjittered";
	a->levers[1] = "baseline";
	a->levers[2] = "progress";
	a->levers[3] = "progress20";
	a->levers[4] = "silent";
	a->share_modes = HRB_SHARE_OFF;
	a->big = 0;
	a->big_changes = 20;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		int rc = 0;

		if (!strcmp(o, "--json")) {
			a->json = 1;
		} else if (!strcmp(o, "--lookups-only")) {
			a->lookups_only = 1;
		} else if (!strcmp(o, "--placement")) {
			a->placement = parse_placement(i + 1 < argc ? argv[++i] : NULL);
			rc = a->placement < 0;
		} else if (!strcmp(o, "--runs")) {
			rc = parse_int(o, i + 1 < argc ? argv[++i] : NULL, 1, HRB_RUNS_MAX,
				       &a->runs);
		} else if (!strcmp(o, "--puts")) {
			rc = parse_int(o, i + 1 < argc ? argv[++i] : NULL, 1, 100000, &a->puts);
		} else if (!strcmp(o, "--nodes")) {
			rc = parse_int(o, i + 1 < argc ? argv[++i] : NULL, 1, 10000, &a->nodes);
		} else if (!strcmp(o, "--idle-ms")) {
			rc = parse_int(o, i + 1 < argc ? argv[++i] : NULL, 0, 60000, &a->idle_ms);
		} else if (!strcmp(o, "--clients")) {
			rc = parse_counts(i + 1 < argc ? argv[++i] : NULL, a);
		} else if (!strcmp(o, "--duration")) {
			rc = parse_int(o, i + 1 < argc ? argv[++i] : NULL, 1, 600,
				       &a->clients_duration_s);
		} else if (!strcmp(o, "--fanout-puts")) {
			rc = parse_int(o, i + 1 < argc ? argv[++i] : NULL, 0, 1000, &a->fanout_puts);
		} else if (!strcmp(o, "--fanout-from")) {
			rc = parse_int(o, i + 1 < argc ? argv[++i] : NULL, 1, 20000, &a->fanout_from);
		} else if (!strcmp(o, "--levers")) {
			rc = parse_levers(i + 1 < argc ? argv[++i] : NULL, a);
		} else if (!strcmp(o, "--share")) {
			const char *v = i + 1 < argc && argv[i + 1][0] != '-' ? argv[++i] : NULL;
			a->share_modes = parse_share(v);
			rc = a->share_modes < 0;
		} else if (!strcmp(o, "--big")) {
			rc = parse_int(o, i + 1 < argc ? argv[++i] : NULL, 1, 100000, &a->big);
		} else if (!strcmp(o, "--changes")) {
			rc = parse_int(o, i + 1 < argc ? argv[++i] : NULL, 1, 1000,
				       &a->big_changes);
		} else if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			usage(stdout);
			return 1;
		} else {
			fprintf(stderr, "hashring-bench: unknown argument '%s'\n", o);
			usage(stderr);
			return -1;
		}
		if (rc)
			return -1;
	}
	return 0;
}

/* ---- readable report ------------------------------------------------------ */

static void print_text(const hrb_report *r, const hrb_lookup_report *lr)
{
	hrb_lookup_print_text(lr);
	if (r->has_propagation) {
		const hrb_propagation *p = &r->propagation;
		printf("Propagation: put -> ring visible to a reader thread\n");
		printf("  %d nodes, %d puts measured (%d asked, %d missed)\n", p->nodes,
		       p->samples, p->puts, p->missed);
		printf("  %-28s %9s %9s\n", "", "p50 ms", "p99 ms");
		printf("  %-28s %9.3f %9.3f\n", "raw gateway watch", p->raw_p50_ms,
		       p->raw_p99_ms);
		printf("  %-28s %9.3f %9.3f\n", "visible to a reader", p->p50_ms, p->p99_ms);
		printf("  %-28s %9.3f %9.3f   (max %.3f)\n", "overhead (paired)",
		       p->overhead_p50_ms, p->overhead_p99_ms, p->overhead_max_ms);
		printf("  put reply p50 %.3f ms\n", p->put_p50_ms);
	}
	if (r->has_idle) {
		const hrb_idle *id = &r->idle;
		printf("Idle watcher over %.1f s with no change:\n", id->seconds);
		printf("  library threads (%d): %.3f ms CPU per second", id->threads,
		       id->watcher_cpu_ms_per_s);
		if (id->watcher_wakeups_per_s >= 0)
			printf(", %.1f wakeups per second", id->watcher_wakeups_per_s);
		printf("\n  whole process: %.3f ms CPU per second\n", id->process_cpu_ms_per_s);
	}
	for (int i = 0; i < r->n_notes; i++)
		printf("note: %s\n", r->notes[i]);
}

/* ---- JSON ----------------------------------------------------------------- */

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_notes_json(const hrb_report *r)
{
	printf(",\"notes\":[");
	for (int i = 0; i < r->n_notes; i++) {
		printf("%s", i ? "," : "");
		json_string(r->notes[i]);
	}
	printf("]}\n");
}

static void print_json(const hrb_report *r, const hrb_lookup_report *lr)
{
	const hrb_propagation *p = &r->propagation;
	const hrb_idle *id = &r->idle;

	printf("{");
	hrb_lookup_print_json(lr);
	printf(",");
	if (r->has_propagation) {
		printf("\"propagation\":{\"nodes\":%d,\"puts\":%d,\"samples\":%d,\"missed\":%d,"
		       "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"raw_p50_ms\":%.3f,\"raw_p99_ms\":%.3f,"
		       "\"overhead_p50_ms\":%.3f,\"overhead_p99_ms\":%.3f,"
		       "\"overhead_max_ms\":%.3f,\"put_p50_ms\":%.3f}",
		       p->nodes, p->puts, p->samples, p->missed, p->p50_ms, p->p99_ms,
		       p->raw_p50_ms, p->raw_p99_ms, p->overhead_p50_ms, p->overhead_p99_ms,
		       p->overhead_max_ms, p->put_p50_ms);
	} else {
		printf("\"propagation\":null");
	}
	if (r->has_idle) {
		printf(",\"idle_cpu_ms_per_s\":%.4f,\"idle\":{\"seconds\":%.2f,"
		       "\"watcher_threads\":%d,\"watcher_cpu_ms_per_s\":%.4f,"
		       "\"process_cpu_ms_per_s\":%.4f,\"watcher_wakeups_per_s\":%.2f}",
		       id->watcher_cpu_ms_per_s, id->seconds, id->threads,
		       id->watcher_cpu_ms_per_s, id->process_cpu_ms_per_s,
		       id->watcher_wakeups_per_s);
	} else {
		printf(",\"idle_cpu_ms_per_s\":null");
	}
	printf(",\"big\":null");
	print_notes_json(r);
}

/* --clients: only that measurement. */
static int clients_mode(const hrb_args *args, hrb_report *report)
{
	static hrb_clients_report c;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	if (hrb_measure_clients(args, report, &c)) {
		fprintf(stderr, "hashring-bench: the many-clients measurement failed\n");
		curl_global_cleanup();
		return 1;
	}
	curl_global_cleanup();
	if (args->json) {
		printf("{\"clients\":");
		hrb_clients_print_json(&c);
		print_notes_json(report);
	} else {
		hrb_clients_print_text(&c);
		for (int i = 0; i < report->n_notes; i++)
			printf("note: %s\n", report->notes[i]);
	}
	fflush(stdout);
	return 0;
}

/* --big: only that measurement. */
static int big_mode(const hrb_args *args, hrb_report *report)
{
	static hrb_big_report b;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	if (hrb_measure_big(args, report, &b)) {
		fprintf(stderr, "hashring-bench: the big-ring measurement failed\n");
		curl_global_cleanup();
		return 1;
	}
	curl_global_cleanup();
	if (args->json) {
		printf("{\"big\":");
		hrb_big_print_json(&b);
		print_notes_json(report);
	} else {
		hrb_big_print_text(&b);
		for (int i = 0; i < report->n_notes; i++)
			printf("note: %s\n", report->notes[i]);
	}
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	hrb_args args;
	static hrb_report report;
	static hrb_lookup_report lookup;
	int rc = parse_args(argc, argv, &args);

	if (rc)
		return rc > 0 ? 0 : 2;
	if (args.n_clients)
		return clients_mode(&args, &report);
	if (args.big)
		return big_mode(&args, &report);
	if (hrb_measure_lookup(&lookup, (hr_placement)args.placement, args.runs,
			       &report)) {
		fprintf(stderr, "hashring-bench: the lookup measurement failed\n");
		return 1;
	}
	if (!args.lookups_only && hrb_measure_membership(&args, &report)) {
		fprintf(stderr, "hashring-bench: the membership measurement failed\n");
		return 1;
	}
	if (args.json)
		print_json(&report, &lookup);
	else
		print_text(&report, &lookup);
	fflush(stdout);
	return 0;
}
