/* SPDX-License-Identifier: MIT */
/*
 * bounded.c - consistent hashing with bounded loads: a key walks clockwise
 * from its owner past every node at capacity.  Loads come from the caller
 * (hr_ring_lookup_bounded) or from an in-flight counter of per-id atomic
 * counts (hr_inflight_*).
 */
#include "ring.h"

#include "error.h"
#include "node.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define MAX_IDS_DEFAULT 1024

static bool valid_factor(double c)
{
	return isfinite(c) && c >= 1;
}

/* Total weight of the view's nodes. */
static double view_weight(const hr_ring *ring, hr_view view)
{
	double w = 0;

	for (size_t i = 0, n = hr_ring_node_count(ring); i < n; i++) {
		const hr_node *nd = hr_ring_node(ring, i);

		if (hr__in_view(nd->state, view))
			w += nd->weight;
	}
	return w;
}

/* ceil(c * (total + 1) * w / W): the load a node may reach with this key. */
static uint64_t capacity(double c, uint64_t total, double w, double sum_w)
{
	double cap = ceil(c * ((double)total + 1) * w / sum_w);

	return cap >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)cap;
}

/* The walk shared by both forms: `try_take` says whether node `slot` can
 * take the key (and, for the counter, takes it). */
typedef bool (*take_fn)(void *ctx, size_t slot, const hr_node *node);

static int walk(const hr_ring *ring, uint64_t pos, hr_view view,
		take_fn try_take, void *ctx, const hr_node **out,
		const hr_node **owner)
{
	size_t n = hr__ring_view_points(ring, view), i, prev = SIZE_MAX;

	if (!n)
		return HR_EEMPTY;
	i = hr__ring_view_find(ring, view, pos);
	for (size_t step = 0; step < n;
	     step++, i = hr__ring_view_next(ring, view, pos, i)) {
		uint64_t p;
		size_t slot;

		hr__ring_view_point(ring, view, i, &p, &slot);
		if (step == 0)
			*owner = hr_ring_node(ring, slot);
		/* A node's consecutive points give the same answer. */
		if (slot == prev)
			continue;
		prev = slot;
		if (try_take(ctx, slot, hr_ring_node(ring, slot))) {
			*out = hr_ring_node(ring, slot);
			return HR_OK;
		}
	}
	return HR_ELIMIT;
}

/* ---- caller's loads ------------------------------------------------------ */

struct given {
	const uint64_t *loads;
	double c, sum_w;
	uint64_t total;
};

static bool given_take(void *ctx, size_t slot, const hr_node *node)
{
	const struct given *g = ctx;

	return g->loads[slot] < capacity(g->c, g->total, node->weight, g->sum_w);
}

int hr_ring_lookup_bounded(const hr_ring *ring, const void *key, size_t len,
			   hr_view view, const uint64_t *loads, double c,
			   const hr_node **out, hr_error *err)
{
	struct given g = { loads, c, 0, 0 };
	const hr_node *owner = NULL;
	uint64_t pos;
	int rc;

	if (!ring || !out || (!key && len))
		return hr__lookup_args(err, ring, "ring", out, key, len);
	if (!loads)
		return hr__error_set(err, HR_EINVAL, "bounded lookup: loads is NULL");
	if (!valid_factor(c))
		return hr__error_set(err, HR_EINVAL,
				     "balance factor %g: must be a finite number >= 1", c);
	if (!hr__valid_view(view))
		return hr__error_set(err, HR_EINVAL, "bounded lookup: bad view %d",
				     (int)view);
	*out = NULL;
	for (size_t i = 0, n = hr_ring_node_count(ring); i < n; i++) {
		const hr_node *nd = hr_ring_node(ring, i);

		if (hr__in_view(nd->state, view))
			g.total += loads[i];
	}
	g.sum_w = view_weight(ring, view);
	pos = hr__ring_key_pos(ring, key, len);
	rc = walk(ring, pos, view, given_take, &g, out, &owner);
	/* The capacities add up to more than the load, so some node is below
	 * its own; only rounding at the edge could end here: take the owner. */
	if (rc == HR_ELIMIT) {
		*out = owner;
		rc = HR_OK;
	}
	return rc ? hr__lookup_failed(err, rc) : HR_OK;
}

/* ---- in-flight counter --------------------------------------------------- */

/* A counter per node id in an insert-only open-addressing table.  A slot's
 * tag is 0 while free, BUSY while its id is written, then the id's hash
 * (never 0 or BUSY); readers wait out BUSY, which lasts one copy. */
#define BUSY 1u

struct slot {
	_Atomic uint64_t tag;
	atomic_uint_fast64_t count;
	char id[HR_ID_MAX + 1];
};

struct hr_inflight {
	double c;
	size_t mask;
	size_t max_ids;
	atomic_size_t nids;	/* slots claimed */
	atomic_uint_fast64_t total;
	struct slot *slots;
};

static uint64_t id_tag(const char *id, size_t len)
{
	uint64_t h = XXH3_64bits(id, len);

	return h > BUSY ? h : h + 2;
}

/* The slot of `id`, inserted when `insert` is set; NULL if absent (or the
 * table is full). */
static struct slot *find_slot(hr_inflight *f, const char *id,
			      bool insert)
{
	size_t len = strlen(id);
	uint64_t tag = id_tag(id, len);

	/* The table is twice max_ids: a probe ends at a free slot. */
	for (size_t k = 0, i = tag & f->mask; k <= f->mask; k++, i = (i + 1) & f->mask) {
		struct slot *s = &f->slots[i];
		uint64_t t = atomic_load_explicit(&s->tag, memory_order_acquire);

		if (t == 0) {
			uint64_t zero = 0;

			if (!insert)
				return NULL;
			/* Reserve room for one more id before claiming. */
			if (atomic_fetch_add_explicit(&f->nids, 1, memory_order_relaxed) >=
			    f->max_ids) {
				atomic_fetch_sub_explicit(&f->nids, 1, memory_order_relaxed);
				return NULL;
			}
			if (atomic_compare_exchange_strong_explicit(
				    &s->tag, &zero, BUSY, memory_order_acq_rel,
				    memory_order_acquire)) {
				memcpy(s->id, id, len + 1);
				atomic_store_explicit(&s->tag, tag, memory_order_release);
				return s;
			}
			atomic_fetch_sub_explicit(&f->nids, 1, memory_order_relaxed);
			t = zero;
		}
		while (t == BUSY)
			t = atomic_load_explicit(&s->tag, memory_order_acquire);
		if (t == tag && strcmp(s->id, id) == 0)
			return s;
	}
	return NULL;
}

/* HR_ELIMIT of a counter whose ids are all taken. */
static int full(const hr_inflight *f, hr_error *err)
{
	return hr__error_set(err, HR_ELIMIT,
			     "inflight acquire: more than max_ids (%zu) node ids",
			     f->max_ids);
}

int hr_inflight_new(double c, size_t max_ids, hr_inflight **out,
		    hr_error *err)
{
	hr_inflight *f;
	size_t size = 2;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "output pointer is NULL");
	*out = NULL;
	if (!valid_factor(c))
		return hr__error_set(err, HR_EINVAL,
				     "balance factor %g: must be a finite number >= 1", c);
	if (max_ids > HR_NODES_MAX)
		return hr__error_set(err, HR_ELIMIT, "max_ids %zu exceeds %d",
				     max_ids, HR_NODES_MAX);
	if (!max_ids)
		max_ids = MAX_IDS_DEFAULT;
	while (size < 2 * max_ids)
		size *= 2;
	f = calloc(1, sizeof *f);
	if (f)
		f->slots = calloc(size, sizeof *f->slots);
	if (!f || !f->slots) {
		free(f);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	f->c = c;
	f->mask = size - 1;
	f->max_ids = max_ids;
	atomic_init(&f->nids, 0);
	for (size_t i = 0; i < size; i++) {
		atomic_init(&f->slots[i].tag, 0);
		atomic_init(&f->slots[i].count, 0);
	}
	atomic_init(&f->total, 0);
	*out = f;
	return HR_OK;
}

void hr_inflight_free(hr_inflight *f)
{
	if (!f)
		return;
	free(f->slots);
	free(f);
}

struct counted {
	hr_inflight *f;
	double sum_w;
	uint64_t total;
	bool full;	/* an id found no slot */
};

/* Takes one unit of `node`'s counter if it stays within capacity. */
static bool counted_take(void *ctx, size_t slot, const hr_node *node)
{
	struct counted *k = ctx;
	struct slot *s = find_slot(k->f, node->id, true);
	uint64_t cap = capacity(k->f->c, k->total, node->weight, k->sum_w);
	uint_fast64_t cur;

	/* No room for the id: stop the walk, the call fails. */
	if (!s) {
		k->full = true;
		return true;
	}
	cur = atomic_load_explicit(&s->count, memory_order_relaxed);
	while (cur < cap) {
		if (atomic_compare_exchange_weak_explicit(&s->count, &cur, cur + 1,
							  memory_order_relaxed,
							  memory_order_relaxed))
			return true;
	}
	return false;
}

int hr_inflight_acquire(hr_inflight *f, const hr_ring *ring, const void *key,
			size_t len, hr_view view, const hr_node **out,
			hr_error *err)
{
	struct counted k = { f, 0, 0, false };
	const hr_node *owner = NULL;
	uint64_t pos;
	int rc;

	if (!f)
		return hr__error_set(err, HR_EINVAL, "inflight acquire: counter is NULL");
	if (!ring || !out || (!key && len))
		return hr__lookup_args(err, ring, "ring", out, key, len);
	if (!hr__valid_view(view))
		return hr__error_set(err, HR_EINVAL, "inflight acquire: bad view %d",
				     (int)view);
	*out = NULL;
	k.total = atomic_load_explicit(&f->total, memory_order_relaxed);
	k.sum_w = view_weight(ring, view);
	pos = hr__ring_key_pos(ring, key, len);
	rc = walk(ring, pos, view, counted_take, &k, out, &owner);
	if (k.full) {
		*out = NULL;
		return full(f, err);
	}
	if (rc == HR_ELIMIT) {
		/* Every node looked full: racing acquires, or ids that found
		 * no slot.  The owner takes the request over its bound. */
		struct slot *s = find_slot(f, owner->id, true);

		if (!s)
			return full(f, err);
		atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
		*out = owner;
		rc = HR_OK;
	}
	if (rc != HR_OK)
		return hr__lookup_failed(err, rc);
	atomic_fetch_add_explicit(&f->total, 1, memory_order_relaxed);
	return HR_OK;
}

static int not_in_flight(const char *id, hr_error *err)
{
	return hr__error_set(err, HR_ENOTFOUND,
			     "inflight release: no request in flight on \"%.*s\"",
			     HR__ID_SHOWN, id);
}

int hr_inflight_release(hr_inflight *f, const char *id, hr_error *err)
{
	struct slot *s;
	uint_fast64_t cur;

	if (!f || !id)
		return hr__error_set(err, HR_EINVAL, "inflight release: %s is NULL",
				     f ? "id" : "counter");
	s = find_slot(f, id, false);
	if (!s)
		return not_in_flight(id, err);
	cur = atomic_load_explicit(&s->count, memory_order_relaxed);
	do {
		if (cur == 0)
			return not_in_flight(id, err);
	} while (!atomic_compare_exchange_weak_explicit(&s->count, &cur, cur - 1,
							memory_order_relaxed,
							memory_order_relaxed));
	atomic_fetch_sub_explicit(&f->total, 1, memory_order_relaxed);
	return HR_OK;
}

uint64_t hr_inflight_load(const hr_inflight *f, const char *id)
{
	struct slot *s;

	if (!f || !id)
		return 0;
	s = find_slot((hr_inflight *)f, id, false);
	return s ? atomic_load_explicit(&s->count, memory_order_relaxed) : 0;
}

uint64_t hr_inflight_total(const hr_inflight *f)
{
	return f ? atomic_load_explicit(&((hr_inflight *)f)->total,
					memory_order_relaxed) : 0;
}
