/* SPDX-License-Identifier: MIT */
/* rebalance_copy.c - the rebalancer's work on the store, through its
 * backend: the scan of a source node, the copy of its moving keys, the
 * purge (docs/handoff.md sections 2, 4 and 5; see rebalance_impl.h). */
#define _GNU_SOURCE
#include "rebalance_impl.h"


#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A moving key: its bytes in the scan's arena, and its write owner. */
typedef struct moving_key {
	size_t off, len;
	uint32_t dest;
} moving_key;

typedef struct scan {
	hr_rebalancer *rb;
	const hr_ring *ring;
	uint32_t source;
	int only;                  /* the write owner kept, or -1: any     */
	unsigned pass;
	hr_error *err;
	char *arena;
	size_t arena_len, arena_cap;
	moving_key *keys;
	size_t n, cap;
	size_t sorted;             /* keys[0, sorted) are sorted, unique  */
	size_t passes;             /* listings made                       */
	int stopped;               /* scan_key stopped the listing        */
} scan;

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 256;
	void *q;

	if (need <= *cap)
		return p;
	while (c < need)
		c *= 2;
	q = realloc(p, c * elem);
	if (q)
		*cap = c;
	return q;
}

/* Appends key[0..len) to the arena, where it then ends at *arena_len; 0,
 * or -1 out of memory. */
static int arena_add(char **arena, size_t *arena_len, size_t *arena_cap, const void *key,
		     size_t len)
{
	char *a = grow(*arena, arena_cap, *arena_len + len, 1);

	if (!a)
		return -1;
	*arena = a;
	memcpy(a + *arena_len, key, len);
	*arena_len += len;
	return 0;
}

static int key_cmp(const char *arena, const moving_key *a, const void *key, size_t len)
{
	int c = memcmp(arena + a->off, key, a->len < len ? a->len : len);

	return c ? c : (a->len > len) - (a->len < len);
}

static int moving_cmp(const void *a, const void *b, void *arena)
{
	const moving_key *y = b;

	return key_cmp(arena, a, (const char *)arena + y->off, y->len);
}

/* Sorts the keys and drops repeats (a listing may give a key twice). */
static void sort_unique(scan *s)
{
	size_t k = 0;

	qsort_r(s->keys, s->n, sizeof *s->keys, moving_cmp, s->arena);
	for (size_t i = 0; i < s->n; i++)
		if (!k || key_cmp(s->arena, &s->keys[k - 1], s->arena + s->keys[i].off,
				  s->keys[i].len))
			s->keys[k++] = s->keys[i];
	s->n = k;
	s->sorted = k;
}

/* Whether a later pass's key is among those the first passes kept. */
static int known_key(const scan *s, const void *key, size_t len)
{
	size_t lo = 0, hi = s->sorted;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(s->arena, &s->keys[mid], key, len);

		if (!c)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* The enumeration's callback: keeps a key whose read owner is the source
 * and whose write owner is another node (that one, with `only`). */
static int scan_key(void *ctx, const void *key, size_t len, uint64_t cas)
{
	scan *s = ctx;
	hr_batch_owner own;
	moving_key *keys;
	int rc;

	(void)cas;
	rc = hr__rb_check_cancel(s->rb, "during the scan", s->err);
	if (rc) {
		s->stopped = 1;
		return rc;
	}
	if (s->pass == 0) {
		hr__rb_add(s->rb, HR__RB_SCANNED, 1);
		hr__rb_tick(s->rb);
	}
	if (len == 0 || hr_ring_lookup_batch(s->ring, &key, &len, 1, &own, NULL) != 0 ||
	    own.read_node != s->source || own.node == HR_NO_NODE || own.node == s->source ||
	    (s->only >= 0 && own.node != (uint32_t)s->only))
		return 0;
	if (s->pass > 0 && known_key(s, key, len))
		return 0;
	keys = grow(s->keys, &s->cap, s->n + 1, sizeof *s->keys);
	if (keys)
		s->keys = keys;
	if (!keys || arena_add(&s->arena, &s->arena_len, &s->arena_cap, key, len)) {
		s->stopped = 1;
		return hr__rb_error_set(s->err, HR_ENOMEM, "out of memory after %zu moving keys",
					s->n);
	}
	s->keys[s->n++] = (moving_key){ s->arena_len - len, len, own.node };
	return 0;
}

/*
 * Lists the source's moving keys.  A listing that may miss keys (the
 * backend does not say HR_REBALANCE_LISTED_ALL) is repeated until a pass
 * adds no moving key the earlier ones missed: a key left out of a pass is
 * one the store moved while the pass went by, and a pass that finds
 * nothing new says the set stopped growing.  The bound is the backend's;
 * reaching it is logged, as keys may still be missing.
 */
static int scan_source(scan *s, const hr_node *source)
{
	hr_rebalancer *rb = s->rb;
	size_t max = rb->be.enumerate_passes, added = 0;
	int rc = 0, settled = max < 2;

	hr__rb_enter(rb, source, HR_REBALANCE_STEP_SCAN);
	for (size_t pass = 0; rc == 0 && pass < max; pass++) {
		size_t before = s->n;

		s->pass = (unsigned)pass;
		rc = rb->be.enumerate(rb->be.userdata, source->addr, s->pass, scan_key, s, s->err);
		if (rc > HR_REBALANCE_LISTED_ALL) /* a backend that returns fn's value wrongly */
			rc = hr__rb_error_set(s->err, HR_EIO,
					      "the backend's enumerate of %.200s returned %d", source->id,
					      rc);
		if (rc < 0 && !s->stopped)
			rc = hr__rb_backend_failed(rb, source, "source", rc, s->err);
		if (rc < 0)
			break;
		sort_unique(s);
		s->passes = pass + 1;
		added = s->n - before;
		if (rc == HR_REBALANCE_LISTED_ALL || (pass > 0 && added == 0)) {
			settled = 1;
			break;
		}
		rc = 0;
	}
	if (rc < 0)
		return rc;
	if (!settled)
		hr__rb_log_emit(&rb->log, HR_LOG_WARN, "rebalance_scan_unsettled",
				"node=%s passes=%zu last_added=%zu moving=%zu msg=%s", source->id,
				s->passes, added, s->n,
				"the last pass still found moving keys: some may be left behind");
	hr__rb_add(rb, HR__RB_MOVING, s->n);
	return 0;
}

/* A fetch or add of `key` at `at` (in `role`) failed with `rc`: a key
 * the backend cannot move (HR_ELIMIT) is skipped (0); anything else fails
 * the step. */
static int key_failed(hr_rebalancer *rb, const hr_node *at, const char *role,
		      const hr_node *src, const hr_node *dst, const void *key, size_t len, int rc,
		      hr_error *err)
{
	if (rc != HR_ELIMIT)
		return hr__rb_backend_failed(rb, at, role, rc, err);
	hr__rb_skip(rb, src, dst, key, len, err);
	return 0;
}

/* Copies one key from `src` to `dst`: fetch, add, look again. */
static int copy_key(hr_rebalancer *rb, const hr_node *src, const hr_node *dst, const void *key,
		    size_t len, hr_error *err)
{
	hr_rebalance_value v = { 0 };
	uint64_t cas = 0;
	int rc;

	rc = rb->be.fetch(rb->be.userdata, src->addr, key, len, &v, err);
	if (rc < 0)
		return key_failed(rb, src, "source", src, dst, key, len, rc, err);
	/* Gone since the scan, or expiring within the second (a TTL of 0
	 * would be stored as no expiry). */
	if (rc == 0 || v.ttl_s == 0) {
		hr__rb_add(rb, HR__RB_GONE, 1);
		return 0;
	}
	hr__rate_throttle(&rb->rate, v.len, &rb->cancelled);
	rc = hr__rb_check_cancel(rb, "during the copy", err);
	if (rc)
		return rc; /* stopped while waiting for the cap: not copied */
	rc = rb->be.add(rb->be.userdata, dst->addr, key, len, &v, &cas, err);
	if (rc < 0)
		return key_failed(rb, dst, "destination", src, dst, key, len, rc, err);
	if (rc == 0) {
		hr__rb_add(rb, HR__RB_PRESENT, 1);
		return 0;
	}
	hr__rb_add(rb, HR__RB_COPIED, 1);
	hr__rb_add(rb, HR__RB_BYTES, v.len);
	if (!rb->be.remove)
		return 0;
	/* A client that deletes deletes at the source first
	 * (docs/handoff.md section 2): if the key went while it was being
	 * copied, the copy is taken back, unless a client rewrote it since.
	 * (The key is stored: a failure here fails the step, HR_ELIMIT too.) */
	rc = rb->be.fetch(rb->be.userdata, src->addr, key, len, NULL, err);
	if (rc < 0)
		return hr__rb_backend_failed(rb, src, "source", rc, err);
	if (rc > 0)
		return 0;
	rc = rb->be.remove(rb->be.userdata, dst->addr, key, len, cas, err);
	if (rc < 0)
		return hr__rb_backend_failed(rb, dst, "destination", rc, err);
	if (rc > 0)
		hr__rb_add(rb, HR__RB_TAKEN_BACK, 1);
	return 0;
}

/* ---- the copy in batches (a backend with fetch_batch and add_batch) ------ */

#define BATCH HR_REBALANCE_BATCH_MAX

/* Keys the add of a batch waits for: those admitted under the caps. */
typedef struct admitted {
	const void *keys[BATCH];
	size_t lens[BATCH];
	hr_rebalance_value values[BATCH];
	uint64_t cas[BATCH];
	int rcs[BATCH];
	size_t n;
	uint64_t bytes;
} admitted;

/* Keys a batch holds: never more than 1/20 s of the keys cap, so that the
 * adds sent together stay within the cap's burst. */
static size_t batch_size(const hr_rebalancer *rb)
{
	double cap = rb->cfg.keys_per_s / 20;

	if (rb->cfg.keys_per_s <= 0 || cap >= BATCH)
		return BATCH;
	return cap < 1 ? 1 : (size_t)cap;
}

/* Sorts the moving keys by write owner: a batch goes to one node. */
static int dest_cmp(const void *a, const void *b, void *arena)
{
	const moving_key *x = a, *y = b;

	if (x->dest != y->dest)
		return x->dest < y->dest ? -1 : 1;
	return moving_cmp(a, b, arena);
}

/* Adds the admitted keys at `dst` at once and counts them; then looks at
 * the source again for those copied, and takes back the ones it lost.  A
 * key the batch failed is added again alone, which says why. */
static int add_admitted(hr_rebalancer *rb, const hr_node *src, const hr_node *dst, admitted *a,
			hr_error *err)
{
	const void *copied[BATCH];
	size_t copied_lens[BATCH], nc = 0;
	uint64_t copied_cas[BATCH];
	int rc, there[BATCH];

	if (!a->n)
		return 0;
	rc = rb->be.add_batch(rb->be.userdata, dst->addr, a->n, a->keys, a->lens, a->values, a->cas,
			      a->rcs, err);
	if (rc < 0)
		return hr__rb_backend_failed(rb, dst, "destination", rc, err);
	for (size_t i = 0; i < a->n; i++) {
		rc = a->rcs[i];
		if (rc < 0)
			rc = rb->be.add(rb->be.userdata, dst->addr, a->keys[i], a->lens[i], &a->values[i],
					&a->cas[i], err);
		if (rc < 0) {
			rc = key_failed(rb, dst, "destination", src, dst, a->keys[i], a->lens[i], rc, err);
			if (rc)
				return rc;
		} else if (rc == 0) {
			hr__rb_add(rb, HR__RB_PRESENT, 1);
		} else {
			hr__rb_add(rb, HR__RB_COPIED, 1);
			hr__rb_add(rb, HR__RB_BYTES, a->values[i].len);
			copied[nc] = a->keys[i];
			copied_lens[nc] = a->lens[i];
			copied_cas[nc++] = a->cas[i];
		}
		hr__rb_tick(rb);
	}
	a->n = 0;
	a->bytes = 0;
	if (!rb->be.remove || !nc)
		return 0;
	/* As copy_key(): a key the source lost while it was copied. */
	rc = rb->be.fetch_batch(rb->be.userdata, src->addr, nc, copied, copied_lens, NULL, there,
				err);
	if (rc < 0)
		return hr__rb_backend_failed(rb, src, "source", rc, err);
	for (size_t i = 0; i < nc; i++) {
		rc = there[i];
		if (rc < 0)
			rc = rb->be.fetch(rb->be.userdata, src->addr, copied[i], copied_lens[i], NULL, err);
		if (rc < 0)
			return hr__rb_backend_failed(rb, src, "source", rc, err);
		if (rc > 0)
			continue;
		rc = rb->be.remove(rb->be.userdata, dst->addr, copied[i], copied_lens[i], copied_cas[i],
				   err);
		if (rc < 0)
			return hr__rb_backend_failed(rb, dst, "destination", rc, err);
		if (rc > 0)
			hr__rb_add(rb, HR__RB_TAKEN_BACK, 1);
	}
	return 0;
}

/* Copies keys [first, first + n) of the scan, which go to one node: one
 * fetch, each key admitted by the caps in turn, adds sent whenever 1/20 s
 * of the bytes cap is admitted and at the end.  Keys the fetch failed are
 * then copied alone (the batch's values are no longer needed). */
static int copy_batch(scan *s, const hr_node *source, size_t first, size_t n)
{
	hr_rebalancer *rb = s->rb;
	const hr_node *dst = hr_ring_node(s->ring, s->keys[first].dest);
	const void *keys[BATCH];
	size_t lens[BATCH], redo[BATCH], nredo = 0;
	hr_rebalance_value values[BATCH];
	int rcs[BATCH], rc;
	admitted a = { .n = 0 };

	for (size_t i = 0; i < n; i++) {
		keys[i] = s->arena + s->keys[first + i].off;
		lens[i] = s->keys[first + i].len;
	}
	rc = rb->be.fetch_batch(rb->be.userdata, source->addr, n, keys, lens, values, rcs, s->err);
	if (rc < 0)
		return hr__rb_backend_failed(rb, source, "source", rc, s->err);
	for (size_t i = 0; i < n; i++) {
		if (rcs[i] < 0) {
			redo[nredo++] = i;
			continue;
		}
		if (rcs[i] == 0 || values[i].ttl_s == 0) {
			hr__rb_add(rb, HR__RB_GONE, 1);
			hr__rb_tick(rb);
			continue;
		}
		hr__rate_throttle(&rb->rate, values[i].len, &rb->cancelled);
		rc = hr__rb_check_cancel(rb, "during the copy", s->err);
		if (rc)
			return rc; /* the admitted keys are not sent: not copied */
		a.keys[a.n] = keys[i];
		a.lens[a.n] = lens[i];
		a.values[a.n++] = values[i];
		a.bytes += values[i].len;
		if (rb->cfg.bytes_per_s > 0 && (double)a.bytes >= rb->cfg.bytes_per_s / 20) {
			rc = add_admitted(rb, source, dst, &a, s->err);
			if (rc)
				return rc;
		}
	}
	rc = add_admitted(rb, source, dst, &a, s->err);
	for (size_t i = 0; rc == 0 && i < nredo; i++) {
		rc = copy_key(rb, source, dst, keys[redo[i]], lens[redo[i]], s->err);
		hr__rb_tick(rb);
	}
	return rc;
}

static int copy_source_batched(scan *s, const hr_node *source)
{
	hr_rebalancer *rb = s->rb;
	size_t size = batch_size(rb);
	int rc = 0;

	qsort_r(s->keys, s->n, sizeof *s->keys, dest_cmp, s->arena);
	for (size_t i = 0; rc == 0 && i < s->n;) {
		size_t n = 1;

		while (n < size && i + n < s->n && s->keys[i + n].dest == s->keys[i].dest)
			n++;
		rc = hr__rb_check_cancel(rb, "during the copy", s->err);
		if (!rc)
			rc = copy_batch(s, source, i, n);
		if (rc == HR_ECLOSED)
			hr__rb_error_set(s->err, HR_ECLOSED,
					 "rebalance cancelled after %zu of %zu keys from %.200s", i, s->n,
					 source->id);
		i += n;
	}
	return rc;
}

static int copy_source(scan *s, const hr_node *source)
{
	hr_rebalancer *rb = s->rb;
	int rc = 0;

	hr__rb_enter(rb, source, HR_REBALANCE_STEP_COPY);
	hr__rb_node_keys(rb, s->n);
	if (rb->be.fetch_batch)
		return copy_source_batched(s, source);
	for (size_t i = 0; rc == 0 && i < s->n; i++) {
		const moving_key *k = &s->keys[i];

		rc = hr__rb_check_cancel(rb, "during the copy", s->err);
		if (!rc)
			rc = copy_key(rb, source, hr_ring_node(s->ring, k->dest),
				      s->arena + k->off, k->len, s->err);
		if (rc == HR_ECLOSED)
			hr__rb_error_set(s->err, HR_ECLOSED,
					 "rebalance cancelled after %zu of %zu keys from %.200s", i, s->n,
					 source->id);
		hr__rb_tick(rb);
	}
	return rc;
}

/* The ring with its handoffs done: warming nodes active, draining ones
 * gone.  Its read view is the write view of `ring`. */
static int promoted_ring(const hr_ring *ring, hr_ring **out, hr_error *err)
{
	size_t n = hr_ring_node_count(ring), k = 0;
	hr_node *nodes = calloc(n ? n : 1, sizeof *nodes);
	hr_ring_options opts;
	int rc;

	if (!nodes)
		return hr__rb_error_set(err, HR_ENOMEM, "out of memory (promoted ring)");
	for (size_t i = 0; i < n; i++) {
		const hr_node *node = hr_ring_node(ring, i);

		if (node->state == HR_STATE_DRAINING)
			continue;
		nodes[k] = *node;
		nodes[k].state = HR_STATE_ACTIVE;
		k++;
	}
	/* Built as `ring` was: the same placement, options and tokens (the
	 * nodes carry theirs). */
	hr_ring_options_init(&opts);
	rc = hr_ring_options_get(ring, &opts, err);
	if (rc == 0)
		rc = hr_ring_build(nodes, k, &opts, hr_ring_revision(ring), out, err);
	free(nodes);
	return rc;
}

/* The number of `node`, a pointer from `ring`. */
static size_t node_index(const hr_ring *ring, const hr_node *node)
{
	return (size_t)hr_ring_node_index(ring, node, NULL);
}

/* Whether a moved arc's total is part of the handoff of `only`. */
static int total_wanted(const hr_arc_total *t, const hr_node *only)
{
	if (!t->old_node || !t->new_node)
		return 0;
	if (!only)
		return 1;
	if (only->state == HR_STATE_WARMING)
		return !strcmp(t->new_node->id, only->id);
	return !strcmp(t->old_node->id, only->id);
}

int hr__rb_copy_ring(hr_rebalancer *rb, const hr_ring *ring, const hr_node *only,
		     hr_error *err)
{
	hr_ring *promoted = NULL;
	hr_diff *diff = NULL;
	const hr_arc_total *totals = NULL;
	size_t count = 0, sources = 0, n = hr_ring_node_count(ring);
	double *shares = malloc((n ? n : 1) * sizeof *shares);
	int rc = shares ? 0 : hr__rb_error_set(err, HR_ENOMEM, "out of memory (shares)");

	if (rc == 0)
		rc = promoted_ring(ring, &promoted, err);
	if (rc == 0)
		rc = hr_diff_new(ring, promoted, HR_VIEW_READ, &diff, err);
	if (rc == 0)
		hr_ring_node_shares(ring, HR_VIEW_READ, shares, n);
	if (rc == 0) {
		totals = hr_diff_totals(diff);
		count = hr_diff_total_count(diff);
	}
	/* Totals come sorted by old owner: one run per source. */
	for (size_t i = 0; i < count;) {
		const hr_node *source = totals[i].old_node;
		int wanted = 0;

		for (; i < count && totals[i].old_node == source; i++)
			wanted |= total_wanted(&totals[i], only);
		sources += wanted;
	}
	hr__rb_nodes(rb, sources);
	for (size_t i = 0; rc == 0 && i < count;) {
		const hr_node *source = totals[i].old_node;
		double moving_share = 0, source_share;
		uint64_t before[HR__RB_COUNTS], t0 = hr__rate_now_ns();
		hr_rebalance_progress p;
		scan s;

		for (; i < count && totals[i].old_node == source; i++)
			if (total_wanted(&totals[i], only))
				moving_share += totals[i].share;
		if (!source || moving_share == 0)
			continue;
		hr__rb_counts(rb, before);
		s = (scan){ .rb = rb, .ring = ring, .source = (uint32_t)node_index(ring, source),
			    .only = only && only->state == HR_STATE_WARMING ?
				    (int)node_index(ring, only) : -1,
			    .err = err };
		rc = scan_source(&s, source);
		source_share = shares[node_index(ring, source)];
		if (rc == 0 && source_share > 0) {
			hr_rebalancer_progress(rb, &p, NULL);
			hr__rb_expect(rb, (double)(p.scanned - before[HR__RB_SCANNED]) *
					  moving_share / source_share);
		}
		if (rc == 0)
			rc = copy_source(&s, source);
		if (rc == 0) {
			hr__rb_node_done(rb);
			hr__rb_log_node(rb, "rebalance_copied", source, before, s.passes,
					(double)(hr__rate_now_ns() - t0) / 1e9);
		}
		free(s.arena);
		free(s.keys);
	}
	hr_diff_free(diff);
	hr_ring_release(promoted);
	free(shares);
	return rc;
}

/* ---- the purge ----------------------------------------------------------- */

typedef struct stale_key {
	size_t off, len;
	uint64_t cas;
} stale_key;

typedef struct purge_scan {
	hr_rebalancer *rb;
	const hr_ring *ring;
	uint32_t node;
	hr_error *err;
	char *arena;
	size_t arena_len, arena_cap;
	stale_key *keys;
	size_t n, cap;
	int stopped;               /* stale_key_fn stopped the listing */
} purge_scan;

/* Keeps a key that another node owns in both views. */
static int stale_key_fn(void *ctx, const void *key, size_t len, uint64_t cas)
{
	purge_scan *s = ctx;
	hr_batch_owner own;
	stale_key *keys;
	int rc = hr__rb_check_cancel(s->rb, "during the purge's scan", s->err);

	if (rc) {
		s->stopped = 1;
		return rc;
	}
	hr__rb_add(s->rb, HR__RB_PURGE_SCANNED, 1);
	hr__rb_tick(s->rb);
	if (len == 0 || hr_ring_lookup_batch(s->ring, &key, &len, 1, &own, NULL) != 0 ||
	    own.node == s->node || own.read_node == s->node)
		return 0;
	keys = grow(s->keys, &s->cap, s->n + 1, sizeof *s->keys);
	if (keys)
		s->keys = keys;
	if (!keys || arena_add(&s->arena, &s->arena_len, &s->arena_cap, key, len)) {
		s->stopped = 1;
		return hr__rb_error_set(s->err, HR_ENOMEM, "out of memory after %zu keys to purge",
					s->n);
	}
	s->keys[s->n++] = (stale_key){ s->arena_len - len, len, cas };
	hr__rb_add(s->rb, HR__RB_PURGE_STALE, 1);
	return 0;
}

static int purge_node(hr_rebalancer *rb, const hr_ring *ring, size_t i, hr_error *err)
{
	const hr_node *node = hr_ring_node(ring, i);
	purge_scan s = { .rb = rb, .ring = ring, .node = (uint32_t)i, .err = err };
	uint64_t before[HR__RB_COUNTS], t0 = hr__rate_now_ns();
	int rc;

	hr__rb_counts(rb, before);
	hr__rb_enter(rb, node, HR_REBALANCE_STEP_PURGE);
	/* One pass: a key it misses is only left in place, as without a purge. */
	rc = rb->be.enumerate(rb->be.userdata, node->addr, 0, stale_key_fn, &s, err);
	if (rc == HR_REBALANCE_LISTED_ALL)
		rc = 0;
	else if (rc > 0)
		rc = hr__rb_error_set(err, HR_EIO, "the backend's enumerate of %.200s returned %d",
				      node->id, rc);
	if (rc == 0)
		hr__rb_node_keys(rb, s.n);
	for (size_t k = 0; rc == 0 && k < s.n; k++) {
		const char *key = s.arena + s.keys[k].off;

		hr__rate_throttle(&rb->rate, 0, &rb->cancelled);
		rc = hr__rb_check_cancel(rb, "during the purge", err);
		if (rc)
			break;
		rc = rb->be.remove(rb->be.userdata, node->addr, key, s.keys[k].len, s.keys[k].cas,
				   err);
		if (rc == HR_ELIMIT)
			hr__rb_skip(rb, node, NULL, key, s.keys[k].len, err);
		else if (rc < 0)
			break;
		else
			hr__rb_add(rb, rc ? HR__RB_PURGED : HR__RB_PURGE_CHANGED, 1);
		rc = 0;
		hr__rb_tick(rb);
	}
	/* Not a cancel, nor the listing stopped by stale_key_fn: the backend's. */
	if (rc < 0 && rc != HR_ECLOSED && !s.stopped)
		rc = hr__rb_backend_failed(rb, node, "purge", rc, err);
	if (rc == 0) {
		hr__rb_node_done(rb);
		hr__rb_log_node(rb, "rebalance_purged", node, before, 1,
				(double)(hr__rate_now_ns() - t0) / 1e9);
	}
	free(s.arena);
	free(s.keys);
	return rc;
}

int hr__rb_purge_ring(hr_rebalancer *rb, const hr_ring *ring, hr_error *err)
{
	size_t n = hr_ring_node_count(ring);
	int rc = 0;

	hr__rb_nodes(rb, n);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = purge_node(rb, ring, i, err);
	return rc;
}
