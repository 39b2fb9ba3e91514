/* copy.c - the handoff's copy from read owners to write owners, with add
 * semantics (see copy.h and docs/handoff.md section 5). */
#define _GNU_SOURCE
#include "copy.h"

#include "memcache.h"
#include "rb_error.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS 2000
#define PROGRESS_EVERY 1000

/* A key the scan kept: its bytes in the arena, and where it goes. */
typedef struct moving_key {
	size_t off;
	size_t len;
	uint32_t dest; /* the write owner's number in the ring */
} moving_key;

typedef struct scan {
	const hr_ring *ring;
	uint32_t source;
	const rb_copy_options *opts;
	rb_copy_stats *stats;
	hr_error *err;
	char *arena;
	size_t arena_len, arena_cap;
	moving_key *keys;
	size_t n, cap;
	/* The second pass: keys[0..sorted) are the first pass's, sorted;
	 * only moving keys not among them are added. */
	int recheck;
	size_t sorted;
} scan;

static int stopped(const rb_copy_options *opts)
{
	return opts->stop && *opts->stop;
}

static void progress(const rb_copy_options *opts, const rb_copy_stats *stats)
{
	if (opts->progress)
		opts->progress(opts->progress_userdata, stats);
}

/* `p` with room for `need` elements of `elem` bytes (doubling), or NULL
 * with `p` untouched. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 64;
	void *np;

	if (need <= *cap)
		return p;
	while (c < need)
		c *= 2;
	np = realloc(p, c * elem);
	if (np)
		*cap = c;
	return np;
}

static int key_cmp(const void *a, const void *b, void *arena)
{
	const moving_key *x = a, *y = b;
	int c = memcmp((char *)arena + x->off, (char *)arena + y->off,
		       x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Whether a first-pass key equals `key` (a binary search). */
static int find_key(const scan *s, const void *key, size_t len)
{
	size_t lo = 0, hi = s->sorted;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const moving_key *k = &s->keys[mid];
		int c = memcmp(s->arena + k->off, key, k->len < len ? k->len : len);

		if (!c)
			c = (k->len > len) - (k->len < len);
		if (!c)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Sorts the keys and drops those listed twice. */
static void sort_unique(scan *s)
{
	size_t out = 0;

	qsort_r(s->keys, s->n, sizeof *s->keys, key_cmp, s->arena);
	for (size_t i = 0; i < s->n; i++)
		if (!out || key_cmp(&s->keys[out - 1], &s->keys[i], s->arena))
			s->keys[out++] = s->keys[i];
	s->n = out;
}

/* The metadump callback: keeps a key whose owners differ and whose read
 * owner is the source. */
static int scan_item(void *userdata, const rb_mc_item *item)
{
	scan *s = userdata;
	const void *key = item->key;
	size_t len = item->key_len;
	hr_batch_owner own;
	char *arena;
	moving_key *keys;

	if (stopped(s->opts))
		return rb_fail(s->err, HR_ECLOSED, "copy: stopped during the scan");
	if (!s->recheck && ++s->stats->scanned % PROGRESS_EVERY == 0)
		progress(s->opts, s->stats);
	if (hr_ring_lookup_batch(s->ring, &key, &len, 1, &own, NULL) != 0 ||
	    own.read_node != s->source || own.node == HR_NO_NODE || own.node == s->source)
		return 0;
	if (s->recheck && find_key(s, key, len))
		return 0;
	arena = grow(s->arena, &s->arena_cap, s->arena_len + len, 1);
	if (arena)
		s->arena = arena;
	keys = arena ? grow(s->keys, &s->cap, s->n + 1, sizeof *s->keys) : NULL;
	if (!keys)
		return rb_fail(s->err, HR_ENOMEM, "copy: out of memory after %zu keys", s->n);
	s->keys = keys;
	memcpy(s->arena + s->arena_len, key, len);
	s->keys[s->n++] = (moving_key){ s->arena_len, len, own.node };
	s->arena_len += len;
	return 0;
}

/* Copies one key from `src` to `dst`: fetch, add, look again.  0 when
 * done, 1 when stopped before the store, or an error. */
static int copy_key(rb_mc *src, rb_mc *dst, const void *key, size_t len,
		    rb_mc_value *v, const rb_copy_options *opts, rb_copy_stats *stats,
		    hr_error *err)
{
	uint64_t cas = 0;
	int rc;

	rc = rb_mc_get(src, key, len, v, err);
	if (rc < 0)
		return rc;
	/* Gone since the scan, or expiring within the second (a TTL of 0
	 * would be sent as no expiry). */
	if (rc == 0 || v->ttl == 0) {
		stats->gone++;
		return 0;
	}
	rb_rate_throttle(opts->rate, v->len, opts->stop);
	if (stopped(opts))
		return 1; /* stopped while waiting for the cap: not copied */
	rc = rb_mc_store(dst, key, len, v, RB_MC_ADD, &cas, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		stats->present++;
		return 0;
	}
	stats->copied++;
	stats->bytes += v->len;
	/* A client that deletes deletes at the source first
	 * (docs/handoff.md section 2): if the key went while it was being
	 * copied, the copy is taken back, unless a client rewrote it since. */
	rc = rb_mc_exists(src, key, len, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		rc = rb_mc_delete(dst, key, len, cas, err);
		if (rc < 0)
			return rc;
		stats->taken_back += (uint64_t)rc;
	}
	return 0;
}

static int copy_keys(const hr_ring *ring, const hr_node *source, scan *s,
		     const rb_copy_options *opts, rb_copy_stats *stats, hr_error *err)
{
	size_t nodes = hr_ring_node_count(ring);
	rb_mc **dst = calloc(nodes, sizeof *dst);
	rb_mc *src = NULL;
	rb_mc_value v = { 0 };
	int rc = 0;

	if (!dst)
		return rb_fail(err, HR_ENOMEM, "copy: out of memory");
	if (s->n > 0)
		rc = rb_mc_connect(source->addr, opts->timeout_ms, &src, err);
	for (size_t i = 0; rc == 0 && i < s->n; i++) {
		const moving_key *k = &s->keys[i];

		if (stopped(opts))
			rc = 1;
		else if (!dst[k->dest])
			rc = rb_mc_connect(hr_ring_node(ring, k->dest)->addr, opts->timeout_ms,
					   &dst[k->dest], err);
		if (rc == 0)
			rc = copy_key(src, dst[k->dest], s->arena + k->off, k->len, &v, opts,
				      stats, err);
		if (rc == 1) {
			rc = rb_fail(err, HR_ECLOSED, "copy: stopped after %zu of %zu keys from %s",
				     i, s->n, source->id);
			break;
		}
		if ((i + 1) % PROGRESS_EVERY == 0)
			progress(opts, stats);
	}
	rb_mc_value_free(&v);
	rb_mc_close(src);
	for (size_t i = 0; i < nodes; i++)
		rb_mc_close(dst[i]);
	free(dst);
	return rc;
}

int rb_copy_node(const hr_ring *ring, const hr_node *source,
		 const rb_copy_options *opts, rb_copy_stats *stats, hr_error *err)
{
	rb_copy_options o = { 0 };
	scan s = { 0 };
	rb_mc *dump = NULL;
	size_t i, nodes;
	int rc = 0;

	if (!ring || !source || !stats)
		return rb_fail(err, HR_EINVAL, "copy: no ring, source or stats");
	if (opts)
		o = *opts;
	if (o.timeout_ms <= 0)
		o.timeout_ms = DEFAULT_TIMEOUT_MS;
	nodes = hr_ring_node_count(ring);
	for (i = 0; i < nodes && hr_ring_node(ring, i) != source; i++)
		;
	if (i == nodes)
		return rb_fail(err, HR_EINVAL, "copy: source %.200s is not a node of the ring",
			       source->id);
	s = (scan){ .ring = ring, .source = (uint32_t)i, .opts = &o, .stats = stats,
		    .err = err };
	/* The dump first, whole: the crawler must not wait on a copy that the
	 * cap may slow to a few keys a second.  A dump is no snapshot: an item
	 * that memcached moves between its LRU queues while the crawler
	 * passes may be listed twice or not at all.  So the keys are made
	 * unique, and a second dump adds the moving keys the first missed. */
	for (int pass = 0; rc == 0 && pass < 2; pass++) {
		s.recheck = pass;
		rc = rb_mc_connect(source->addr, o.timeout_ms, &dump, err);
		if (rc == 0)
			rc = rb_mc_metadump(dump, scan_item, &s, err);
		rb_mc_close(dump);
		dump = NULL;
		if (rc == 0)
			sort_unique(&s);
		s.sorted = s.n;
	}
	if (rc == 0) {
		stats->moving += s.n;
		rc = copy_keys(ring, source, &s, &o, stats, err);
	}
	progress(&o, stats);
	free(s.arena);
	free(s.keys);
	return rc;
}

/* The ring with its handoffs done: warming nodes active, draining ones
 * gone.  Its read view is the write view of `ring`. */
static int promoted_ring(const hr_ring *ring, const hr_ring_options *ring_opts,
			 hr_ring **out, hr_error *err)
{
	size_t n = hr_ring_node_count(ring), k = 0;
	hr_node *nodes = calloc(n ? n : 1, sizeof *nodes);
	int rc;

	if (!nodes)
		return rb_fail(err, HR_ENOMEM, "copy: out of memory");
	for (size_t i = 0; i < n; i++) {
		hr_node node = *hr_ring_node(ring, i);

		if (node.state == HR_STATE_DRAINING)
			continue;
		node.state = HR_STATE_ACTIVE;
		nodes[k++] = node;
	}
	rc = hr_ring_build(nodes, k, ring_opts, hr_ring_revision(ring), out, err);
	free(nodes);
	return rc;
}

int rb_copy_ring(const hr_ring *ring, const hr_ring_options *ring_opts,
		 const rb_copy_options *opts, rb_copy_stats *stats, hr_error *err)
{
	hr_ring *promoted = NULL;
	hr_diff *diff = NULL;
	const hr_arc_total *totals;
	size_t count;
	int rc;

	if (!ring || !stats)
		return rb_fail(err, HR_EINVAL, "copy: no ring or stats");
	rc = promoted_ring(ring, ring_opts, &promoted, err);
	if (rc == 0)
		rc = hr_ring_diff(ring, promoted, HR_VIEW_READ, &diff, err);
	totals = diff ? hr_diff_totals(diff) : NULL;
	count = diff ? hr_diff_total_count(diff) : 0;
	/* Totals come sorted by old owner: one run per source. */
	for (size_t i = 0; rc == 0 && i < count;) {
		const hr_node *source = totals[i].old_node;
		double moving_share = 0, source_share;
		uint64_t scanned_before = stats->scanned;

		for (; i < count && totals[i].old_node == source; i++)
			moving_share += totals[i].share;
		if (!source)
			continue;
		rc = rb_copy_node(ring, source, opts, stats, err);
		source_share = hr_ring_node_share(ring, source, HR_VIEW_READ);
		if (source_share > 0)
			stats->expected_moving += (double)(stats->scanned - scanned_before) *
						  moving_share / source_share;
	}
	hr_diff_free(diff);
	hr_ring_release(promoted);
	return rc;
}
