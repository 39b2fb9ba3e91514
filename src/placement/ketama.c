/* SPDX-License-Identifier: MIT */
/*
 * ketama.c - the ketama placement: the continuum of libmemcached's
 * weighted ketama, rebuilt from its documented behaviour so that a
 * hashring client and a libmemcached client send every key to the same
 * server, and a ring's views made of it (docs/placement.md section 11).
 *
 * MD5 comes from libcrypto's one-shot MD5(): the EVP interface allocates a
 * context and fetches the algorithm under a lock on every call, and key
 * hashing sits on the lookup path, which neither allocates nor locks.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "ketama.h"

#include "error.h"
#include "placement.h"

#include <math.h>
#include <openssl/md5.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libmemcached hashes "name-k" for k = 0 .. points/4 - 1 and takes four
 * points from each digest. */
#define POINTS_PER_SERVER 160
#define POINTS_PER_DIGEST 4

static uint32_t digest_word(const unsigned char *md, unsigned k)
{
	const unsigned char *b = md + 4 * k;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

uint32_t hr__ketama_key_hash(const void *key, size_t len)
{
	unsigned char md[MD5_DIGEST_LENGTH];

	MD5(len ? key : (const void *)"", len, md);
	return digest_word(md, 0);
}

/* A server as libmemcached names it: host and port of an addr. */
struct server_name {
	const char *host;
	size_t host_len;
	unsigned port;
};

static bool parse_port(const char *s, unsigned *port)
{
	unsigned v = 0;
	size_t n = 0;

	for (; s[n]; n++) {
		if (s[n] < '0' || s[n] > '9' || n == 5)
			return false;
		v = v * 10 + (unsigned)(s[n] - '0');
	}
	if (n == 0 || v > 65535)
		return false;
	/* libmemcached turns port 0 into its default port. */
	*port = v ? v : HR__KETAMA_DEFAULT_PORT;
	return true;
}

/*
 * "[v6]" or "[v6]:port" -> host v6; "host:port" (one colon) -> host, port;
 * anything else (no colon, or a bare IPv6 address) is a host alone on the
 * default port.  An empty host is "localhost", as libmemcached has it.
 */
static bool parse_addr(const char *addr, struct server_name *out)
{
	const char *colon = strchr(addr, ':');

	out->port = HR__KETAMA_DEFAULT_PORT;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (!close)
			return false;
		out->host = addr + 1;
		out->host_len = (size_t)(close - addr - 1);
		if (close[1] && (close[1] != ':' || !parse_port(close + 2, &out->port)))
			return false;
	} else if (colon && !strchr(colon + 1, ':')) {
		out->host = addr;
		out->host_len = (size_t)(colon - addr);
		if (!parse_port(colon + 1, &out->port))
			return false;
	} else {
		out->host = addr;
		out->host_len = strlen(addr);
	}
	if (out->host_len == 0) {
		out->host = "localhost";
		out->host_len = strlen(out->host);
	}
	return true;
}

static bool whole_weight(double w)
{
	return w >= 1 && w <= (double)UINT32_MAX && w == floor(w);
}

/* What ketama needs of a node: a whole weight within uint32 and an addr
 * with a valid port.  The continuum decides the count (*points stays 0). */
static int node_points(const hr_node *node, unsigned vnodes_per_weight,
		       unsigned *points, hr_error *err)
{
	struct server_name sn;

	*points = 0;
	if (!whole_weight(node->weight))
		return hr__error_set(err, HR_EINVAL,
				     "node \"%.*s\": ketama placement needs a whole weight from 1 to %u, not %g",
				     HR__ID_SHOWN, node->id, UINT32_MAX, node->weight);
	if (!parse_addr(node->addr, &sn))
		return hr__error_set(err, HR_EINVAL,
				     "node \"%.*s\": ketama placement needs an addr host[:port] with a port from 0 to 65535",
				     HR__ID_SHOWN, node->id);
	return HR_OK;
}

/*
 * libmemcached computes the share in float32 and the count as
 * floor(share * 160 / 4 * n + 1e-10) * 4, each step rounded to float;
 * repeating the same steps in the same precision is what makes the counts
 * (156 instead of 160 for some n) agree.  The tiny addend never changes
 * the floor and is kept for fidelity.
 */
static unsigned points_of(uint32_t weight, uint64_t total, size_t n)
{
	float share, x;

	share = (float)weight / (float)total;
	x = share * (float)POINTS_PER_SERVER;
	x = x / (float)POINTS_PER_DIGEST;
	x = x * (float)(uint32_t)n;
	x = (float)((double)x + 0.0000000001);
	return (unsigned)(floorf(x) * (float)POINTS_PER_DIGEST);
}

static uint64_t total_weight(const struct hr__ketama_server *servers, size_t n)
{
	uint64_t total = 0;

	for (size_t j = 0; j < n; j++)
		total += (uint32_t)servers[j].weight;
	return total;
}

unsigned hr__ketama_server_points(const struct hr__ketama_server *servers,
				  size_t n, size_t i)
{
	return points_of((uint32_t)servers[i].weight, total_weight(servers, n), n);
}

static int cmp_point(const void *a, const void *b)
{
	const struct hr__ketama_point *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->server < y->server ? -1 : x->server > y->server;
}

int hr__ketama_continuum(const struct hr__ketama_server *servers, size_t n,
			 struct hr__ketama_point **out, size_t *npoints,
			 hr_error *err)
{
	struct hr__ketama_point *pts;
	unsigned *count;
	size_t total = 0, p = 0;
	uint64_t weights = total_weight(servers, n);
	/* host, ':', port, '-', index and the NUL */
	char name[HR_ADDR_MAX + 32];

	*out = NULL;
	*npoints = 0;
	if (!n)
		return HR_OK;
	count = malloc(n * sizeof *count);
	if (!count)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		count[i] = points_of((uint32_t)servers[i].weight, weights, n);
		total += count[i];
	}
	if (total > HR_POINTS_MAX) {
		free(count);
		return hr__error_set(err, HR_ELIMIT,
				     "the ketama continuum would have more than %u points",
				     HR_POINTS_MAX);
	}
	pts = malloc((total ? total : 1) * sizeof *pts);
	if (!pts) {
		free(count);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		struct server_name sn;
		int len;

		if (!parse_addr(servers[i].addr, &sn)) {
			free(pts);
			free(count);
			return hr__error_set(err, HR_EINVAL,
					     "addr \"%.*s\": not host[:port]",
					     HR__ID_SHOWN, servers[i].addr);
		}
		for (unsigned k = 0; k < count[i] / POINTS_PER_DIGEST; k++) {
			unsigned char md[MD5_DIGEST_LENGTH];

			if (sn.port == HR__KETAMA_DEFAULT_PORT)
				len = snprintf(name, sizeof name, "%.*s-%u",
					       (int)sn.host_len, sn.host, k);
			else
				len = snprintf(name, sizeof name, "%.*s:%u-%u",
					       (int)sn.host_len, sn.host,
					       sn.port, k);
			MD5((const unsigned char *)name, (size_t)len, md);
			for (unsigned d = 0; d < POINTS_PER_DIGEST; d++) {
				pts[p].value = digest_word(md, d);
				pts[p].server = (uint32_t)i;
				p++;
			}
		}
	}
	free(count);
	qsort(pts, p, sizeof *pts, cmp_point);
	*out = pts;
	*npoints = p;
	return HR_OK;
}

/* ---- the placement ------------------------------------------------------- */

/* 0, never a vnodes_per_weight, opens the digest of a ketama ring. */
static size_t digest_opening(const hr__place_opts *o, unsigned char *out)
{
	hr__put_u32le(out, 0);
	return 4;
}

/* The MD5 key hash in the top half of a position: points are there too,
 * so "first point >= key" is unchanged. */
static uint64_t key_pos(const void *key, size_t len)
{
	return (uint64_t)hr__ketama_key_hash(key, len) << 32;
}

/* A view's points: the continuum libmemcached builds from the view's
 * nodes in id order (a server's index there orders equal points, as node
 * slots do), its values the top half of a position. */
static int view_points(const hr__place_opts *o, const hr_node *const *nodes,
		       size_t n, struct point **out, size_t *npoints, hr_error *err)
{
	struct hr__ketama_server *servers = malloc((n ? n : 1) * sizeof *servers);
	struct hr__ketama_point *pts = NULL;
	struct point *p = NULL;
	int rc;

	*out = NULL;
	*npoints = 0;
	if (!servers)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		servers[i] = (struct hr__ketama_server){ nodes[i]->addr, nodes[i]->weight };
	rc = hr__ketama_continuum(servers, n, &pts, npoints, err);
	free(servers);
	if (!rc && *npoints && !(p = malloc(*npoints * sizeof *p)))
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t j = 0; !rc && j < *npoints; j++)
		p[j] = (struct point){ (uint64_t)pts[j].value << 32, pts[j].server };
	free(pts);
	if (rc)
		*npoints = 0;
	*out = p;
	return rc;
}

const hr__placement hr__placement_ketama = {
	.name = "ketama",
	.kind = HR__PLACE_CONTINUUM,
	.digest_opening = digest_opening,
	.node_points = node_points,
	.view_points = view_points,
	.key_pos = key_pos,
};
