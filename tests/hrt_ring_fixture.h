/* SPDX-License-Identifier: MIT */
/* hrt_ring_fixture.h - node sets, rings and offline clients for the unit
 * suites (tests only; linked into every one of them). */
#ifndef HRT_RING_FIXTURE_H
#define HRT_RING_FIXTURE_H

#include "hashring.h"

#include <cjson/cJSON.h>

#include <stddef.h>
#include <stdint.h>

/* A node set that owns its strings. */
typedef struct hrt_nodes {
	size_t n;
	hr_node *nodes;        /* weight 1, active, no zone */
	char (*ids)[32];
	char (*addrs)[32];
	char (*zones)[16];     /* for hrt_nodes_zones() */
} hrt_nodes;

/* `n` nodes: node i has the id printf(id_fmt, i) and the addr
 * printf(addr_fmt, addr_base + i), or "127.0.0.1:1" when addr_fmt is NULL
 * (both formats take one size_t).  Never NULL. */
hrt_nodes *hrt_nodes_new(size_t n, const char *id_fmt, const char *addr_fmt,
			 size_t addr_base);
/* Puts node i in zone "zone-<i % (zones + 1)>", and every (zones + 1)-th
 * node in the empty zone, which is a zone too. */
void hrt_nodes_zones(hrt_nodes *s, unsigned zones);
void hrt_nodes_free(hrt_nodes *s);

/* A point hash for hr__ring_build_hashed() that puts point i of every node
 * at (i + 1) << 40: every position is shared by all the nodes, so only the
 * tie rule (docs/placement.md section 3) orders them. */
uint64_t hrt_tie_hash(const void *name, size_t len);

/* hr_ring_build() that must succeed (the failure says why not). */
hr_ring *hrt_ring_build(const hr_node *nodes, size_t n, const hr_ring_options *opts,
			uint64_t revision);

/* The share of `view` that `node` owns in `ring`, as hr_ring_node_shares()
 * gives it (0 for a node not from the ring, a NULL ring, a bad view). */
double hrt_node_share(const hr_ring *ring, const hr_node *node, hr_view view);

/* Ring `gen`, at revision gen: nodes "<tag><gen>-a" (active), "-b"
 * (draining) and "-c" (warming) at 127.0.0.1, .2, .3, port gen, with
 * `vnodes` points each.  Any answer tells which ring it came from; b never
 * owns a write and c never a read. */
hr_ring *hrt_ring_generation(const char *tag, unsigned gen, unsigned vnodes);

/* A client with nothing to watch (nobody listens on 127.0.0.1:1) and no
 * log: the test publishes its rings (hr__publish_swap()). */
hr_client *hrt_offline_client(const char *prefix);
/* The same with the settings `cfg` (NULL: the defaults), whose
 * open_nonblocking and backoff_initial_ms it overrides. */
hr_client *hrt_offline_client_with(const char *prefix, const hr_client_config *cfg);

/* The JSON document in the file at `path` (the placement vectors), parsed;
 * the test fails if it cannot be read or parsed.  cJSON_Delete() it. */
cJSON *hrt_load_json(const char *path);

#endif
