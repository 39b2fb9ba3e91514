/* SPDX-License-Identifier: MIT */
/* sim_rows.c - see sim_rows.h. */
#include "sim_rows.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <xxhash.h>

uint64_t hrt_sim_xxh3(const void *s, size_t len)
{
	return XXH3_64bits(s, len);
}

uint64_t hrt_sim_md5(const void *s, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	uint64_t x = 0;

	if (!EVP_Digest(s, len, md, &mdlen, EVP_md5(), NULL) || mdlen < 8)
		abort(); /* MD5 is always there in Debian's libcrypto */
	for (int i = 0; i < 8; i++)
		x = x << 8 | md[i];
	return x;
}

uint64_t hrt_sim_fnv1a(const void *s, size_t len)
{
	const unsigned char *p = s;
	uint64_t x = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		x ^= p[i];
		x *= 0x100000001b3ull;
	}
	return x;
}

static size_t key_name(char *buf, size_t size, unsigned long i)
{
	return (size_t)snprintf(buf, size, "key-%lu", i);
}

double hrt_sim_modulo_moved(hr__point_hash_fn hash, unsigned long nodes,
			    unsigned long keys)
{
	unsigned long moved = 0;
	char key[32];

	for (unsigned long i = 0; i < keys; i++) {
		uint64_t h = hash(key, key_name(key, sizeof key, i));

		moved += h % nodes != h % (nodes + 1);
	}
	return (double)moved / (double)keys;
}

/* The ring of nodes "node-0".."node-<n-1>". */
static int build(hr__point_hash_fn hash, unsigned long n, unsigned long vnodes,
		 hr_ring **out, hr_error *err)
{
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = (unsigned)vnodes };
	hr_node *nodes = calloc(n, sizeof *nodes);
	char (*ids)[32] = calloc(n, sizeof *ids);
	int rc = HR_ENOMEM;

	if (nodes && ids) {
		for (unsigned long i = 0; i < n; i++) {
			snprintf(ids[i], sizeof ids[i], "node-%lu", i);
			nodes[i] = (hr_node){ .id = ids[i], .addr = ids[i], .weight = 1,
					      .state = HR_STATE_ACTIVE };
		}
		rc = hr__ring_build_hashed(nodes, n, &opts, 0, hash, out, err);
	}
	free(ids);
	free(nodes);
	return rc;
}

int hrt_sim_row_of(hr__point_hash_fn hash, unsigned long nodes, unsigned long keys,
		   unsigned long vnodes, hrt_sim_row *row, hr_error *err)
{
	unsigned long *count = calloc(nodes, sizeof *count), moved = 0, max, min;
	hr_ring *before = NULL, *after = NULL;
	double mean, sum = 0;
	char key[32];
	int rc = count ? build(hash, nodes, vnodes, &before, err) : HR_ENOMEM;

	if (rc == 0)
		rc = build(hash, nodes + 1, vnodes, &after, err);
	for (unsigned long i = 0; rc == 0 && i < keys; i++) {
		uint64_t pos = hash(key, key_name(key, sizeof key, i));
		hr_lookup a, b;

		if (hr__ring_lookup_pos(before, pos, &a) || hr__ring_lookup_pos(after, pos, &b))
			rc = HR_EEMPTY;
		else {
			count[strtoul(a.node->id + 5, NULL, 10)]++;
			moved += strcmp(a.node->id, b.node->id) != 0;
		}
	}
	hr_ring_release(before);
	hr_ring_release(after);
	if (rc) {
		free(count);
		return rc;
	}
	mean = (double)keys / (double)nodes;
	max = min = count[0];
	for (unsigned long i = 0; i < nodes; i++) {
		double d = (double)count[i] / mean - 1.0;

		max = count[i] > max ? count[i] : max;
		min = count[i] < min ? count[i] : min;
		sum += d * d;
	}
	free(count);
	*row = (hrt_sim_row){
		.vnodes = vnodes,
		.max_mean = (double)max / mean,
		.min_mean = (double)min / mean,
		.stddev = sqrt(sum / (double)nodes),
		.moved = (double)moved / (double)keys,
		.ideal_moved = 1.0 / (double)(nodes + 1),
	};
	return 0;
}
