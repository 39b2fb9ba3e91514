/* SPDX-License-Identifier: MIT */
/*
 * sim_hashes.c - `hashring sim`'s tables with the point and key hash of the
 * seed articles: the same experiment on the library's ring, its points
 * hashed with MD5 or FNV-1a instead of the placement contract's XXH3, to
 * show how much the hash matters.  A test tool, not part of the product:
 * `hashring sim` is the placement contract's, and this one, given xxh3,
 * prints exactly what it prints (test_cli checks that).
 *
 *   sim_hashes --hash md5|fnv1a|xxh3 [--nodes N] [--keys K] [--vnodes LIST] [--json]
 */
#include "sim_rows.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VNODES_MAX 32

static const struct {
	const char *name;
	hr__point_hash_fn fn;
} hashes[] = {
	{ "xxh3", hrt_sim_xxh3 },
	{ "md5", hrt_sim_md5 },
	{ "fnv1a", hrt_sim_fnv1a },
};

struct args {
	unsigned long nodes, keys, vnodes[VNODES_MAX];
	size_t nvnodes;
	size_t hash;
	int json;
};

/* Prints the usage, after `why` (then to stderr) if given; returns the exit
 * status: 2 for a usage error, -1 (nothing more to do) for --help. */
static int usage(const char *why, const char *what)
{
	FILE *f = why ? stderr : stdout;

	if (why)
		fprintf(f, "sim_hashes: %s%s\n", why, what ? what : "");
	fprintf(f, "usage: sim_hashes --hash md5|fnv1a|xxh3 [--nodes N] [--keys K]"
		" [--vnodes LIST] [--json]\n"
		"  as `hashring sim` (same defaults and limits), with the points and keys\n"
		"  hashed by the given function on the library's ring\n");
	return why ? 2 : -1;
}

/* A decimal integer in [lo, hi]; 0, or -1 with a message. */
static int parse_ul(const char *opt, const char *s, unsigned long lo, unsigned long hi,
		    unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = s && *s >= '0' && *s <= '9' ? strtoul(s, &end, 10) : 0;
	if (!s || *s < '0' || *s > '9' || errno || *end || v < lo || v > hi) {
		fprintf(stderr, "sim_hashes: %s: '%s' is not an integer in %lu..%lu\n", opt,
			s ? s : "", lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const unsigned long defaults[] = { 1, 10, 100, 200, 500 };
	int have_hash = 0;

	*a = (struct args){ .nodes = 10, .keys = 200000, .nvnodes = 5 };
	memcpy(a->vnodes, defaults, sizeof defaults);
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--json")) {
			a->json = 1;
			continue;
		}
		if (!strcmp(o, "--help") || !strcmp(o, "-h"))
			return usage(NULL, NULL);
		i++;
		if (!strcmp(o, "--nodes")) {
			if (parse_ul(o, v, 1, HR_NODES_MAX - 1, &a->nodes))
				return 2;
		} else if (!strcmp(o, "--keys")) {
			if (parse_ul(o, v, 1, 10000000, &a->keys))
				return 2;
		} else if (!strcmp(o, "--vnodes")) {
			char *copy = strdup(v ? v : ""), *save = NULL;

			a->nvnodes = 0;
			for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
				if (a->nvnodes == VNODES_MAX ||
				    parse_ul(o, w, 1, HR_POINTS_MAX, &a->vnodes[a->nvnodes++])) {
					free(copy);
					return 2;
				}
			}
			free(copy);
			if (!a->nvnodes)
				return usage("--vnodes needs a list", NULL);
		} else if (!strcmp(o, "--hash")) {
			a->hash = sizeof hashes / sizeof hashes[0];
			for (size_t k = 0; v && k < sizeof hashes / sizeof hashes[0]; k++)
				if (!strcmp(v, hashes[k].name))
					a->hash = k;
			if (a->hash == sizeof hashes / sizeof hashes[0])
				return usage("--hash takes md5, fnv1a or xxh3", NULL);
			have_hash = 1;
		} else {
			return usage("unknown option ", o);
		}
	}
	if (!have_hash)
		return usage("--hash is needed", NULL);
	for (size_t k = 0; k < a->nvnodes; k++)
		if ((unsigned long long)(a->nodes + 1) * a->vnodes[k] > HR_POINTS_MAX)
			return usage("(N + 1) x each --vnodes count must fit the ring's points",
				     NULL);
	return 0;
}

/* The output of `hashring sim`, the hash named. */
static void print(const struct args *a, double modulo, const hrt_sim_row *rows)
{
	const char *name = hashes[a->hash].name;

	if (a->json) {
		printf("{\"nodes\":%lu,\"keys\":%lu,\"hash\":\"%s\",\"modulo_moved\":%.6g,\"rows\":[",
		       a->nodes, a->keys, name, modulo);
		for (size_t i = 0; i < a->nvnodes; i++)
			printf("%s{\"vnodes\":%lu,\"max_mean\":%.6g,\"min_mean\":%.6g,"
			       "\"stddev\":%.6g,\"moved\":%.6g,\"ideal_moved\":%.6g}",
			       i ? "," : "", rows[i].vnodes, rows[i].max_mean, rows[i].min_mean,
			       rows[i].stddev, rows[i].moved, rows[i].ideal_moved);
		puts("]}");
		return;
	}
	printf("%lu keys on %lu nodes, hash %s (the library's ring, %s points)\n\n", a->keys,
	       a->nodes, name, name);
	printf("hash %% N, %lu -> %lu nodes: %.1f%% of keys move (ideal %.1f%%)\n\n", a->nodes,
	       a->nodes + 1, modulo * 100.0, 100.0 / (double)(a->nodes + 1));
	printf("Ring, node-%lu joins:\n", a->nodes);
	printf("%8s  %9s  %9s  %8s  %8s  %8s\n", "vnodes", "max/mean", "min/mean", "stddev",
	       "moved", "ideal");
	for (size_t i = 0; i < a->nvnodes; i++)
		printf("%8lu  %8.2fx  %8.2fx  %7.1f%%  %7.1f%%  %7.1f%%\n", rows[i].vnodes,
		       rows[i].max_mean, rows[i].min_mean, rows[i].stddev * 100.0,
		       rows[i].moved * 100.0, rows[i].ideal_moved * 100.0);
}

int main(int argc, char **argv)
{
	struct args a;
	hrt_sim_row rows[VNODES_MAX];
	hr_error err = { 0 };
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return rc < 0 ? 0 : rc;
	for (size_t i = 0; i < a.nvnodes; i++) {
		rc = hrt_sim_row_of(hashes[a.hash].fn, a.nodes, a.keys, a.vnodes[i], &rows[i],
				    &err);
		if (rc) {
			fprintf(stderr, "sim_hashes: %s\n", err.message[0] ? err.message :
				hr_strerror(rc));
			return 1;
		}
	}
	print(&a, hrt_sim_modulo_moved(hashes[a.hash].fn, a.nodes, a.keys), rows);
	return 0;
}
