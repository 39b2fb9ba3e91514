/* purge.c - deleting the keys a node no longer owns (see purge.h). */
#define _GNU_SOURCE
#include "purge.h"

#include "memcache.h"
#include "rb_error.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS 2000

typedef struct stale_key {
	char key[RB_MC_KEY_MAX];
	size_t len;
	uint64_t cas;
} stale_key;

typedef struct purge_scan {
	const hr_ring *ring;
	uint32_t node;
	const rb_copy_options *opts;
	rb_purge_stats *stats;
	hr_error *err;
	stale_key *keys;
	size_t n, cap;
} purge_scan;

static int stale_item(void *userdata, const rb_mc_item *item)
{
	purge_scan *s = userdata;
	const void *key = item->key;
	size_t len = item->key_len;
	hr_batch_owner own;

	if (s->opts->stop && *s->opts->stop)
		return rb_fail(s->err, HR_ECLOSED, "purge: stopped during the scan");
	s->stats->scanned++;
	if (hr_ring_lookup_batch(s->ring, &key, &len, 1, &own, NULL) != 0 ||
	    own.node == s->node || own.read_node == s->node)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		stale_key *k = realloc(s->keys, cap * sizeof *k);

		if (!k)
			return rb_fail(s->err, HR_ENOMEM, "purge: out of memory after %zu keys",
				       s->n);
		s->keys = k;
		s->cap = cap;
	}
	memcpy(s->keys[s->n].key, item->key, len);
	s->keys[s->n].len = len;
	s->keys[s->n].cas = item->cas;
	s->n++;
	s->stats->stale++;
	return 0;
}

int rb_purge_node(const hr_ring *ring, const hr_node *node,
		  const rb_copy_options *opts, rb_purge_stats *stats, hr_error *err)
{
	rb_copy_options o = { 0 };
	purge_scan s = { 0 };
	rb_mc *mc = NULL;
	size_t i, nodes;
	int rc;

	if (!ring || !node || !stats)
		return rb_fail(err, HR_EINVAL, "purge: no ring, node or stats");
	if (opts)
		o = *opts;
	if (o.timeout_ms <= 0)
		o.timeout_ms = DEFAULT_TIMEOUT_MS;
	nodes = hr_ring_node_count(ring);
	for (i = 0; i < nodes && hr_ring_node(ring, i) != node; i++)
		;
	if (i == nodes)
		return rb_fail(err, HR_EINVAL, "purge: node %.200s is not a node of the ring",
			       node->id);
	s = (purge_scan){ .ring = ring, .node = (uint32_t)i, .opts = &o, .stats = stats,
			  .err = err };
	rc = rb_mc_connect(node->addr, o.timeout_ms, &mc, err);
	if (rc == 0)
		rc = rb_mc_metadump(mc, stale_item, &s, err);
	/* A dump must be alone on its connection: the deletes take a new one. */
	rb_mc_close(mc);
	mc = NULL;
	if (rc == 0 && s.n > 0)
		rc = rb_mc_connect(node->addr, o.timeout_ms, &mc, err);
	for (size_t k = 0; rc == 0 && k < s.n; k++) {
		if (o.stop && *o.stop) {
			rc = rb_fail(err, HR_ECLOSED, "purge: stopped after %zu of %zu keys on %s",
				     k, s.n, node->id);
			break;
		}
		rb_rate_throttle(o.rate, 0, o.stop);
		if (o.stop && *o.stop)
			continue; /* said at the top of the loop */
		rc = rb_mc_delete(mc, s.keys[k].key, s.keys[k].len, s.keys[k].cas, err);
		if (rc >= 0) {
			*(rc ? &stats->deleted : &stats->changed) += 1;
			rc = 0;
		}
	}
	rb_mc_close(mc);
	free(s.keys);
	return rc;
}
