/* SPDX-License-Identifier: MIT */
/*
 * ring.c - a built ring: references, accessors, lookups and preference
 * lists (docs/placement.md sections 4 and 5).  The hot path: nothing here
 * allocates or locks, and the search itself is inline in view.h.
 */
#include "error.h"
#include "ring.h"

#include "ring_impl.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- references ---------------------------------------------------------- */

hr_ring *hr_ring_retain(hr_ring *ring)
{
	if (ring)
		atomic_fetch_add_explicit(&ring->refs, 1, memory_order_relaxed);
	return ring;
}

void hr_ring_release(hr_ring *ring)
{
	if (!ring)
		return;
	if (atomic_fetch_sub_explicit(&ring->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (ring->origin) {
		hr_ring_release(ring->origin);
		free(ring);
		return;
	}
	if (ring->mem_free) {
		ring->mem_free(ring->mem_arg);
		free(ring);
		return;
	}
	for (int v = HR_VIEW_WRITE; v <= HR_VIEW_READ; v++)
		hr__view_release(&ring->views[v]);
	hr__view_release(&ring->all);
	hr__slab_drop(ring->slab);
	free(ring->handle_slot);
	free(ring->shared);
	free(ring->strings);
	free(ring->tokens);
	free(ring->nodes);
	free(ring->lines);
	free(ring);
}

hr_ring *hr__ring_alias(hr_ring *ring)
{
	/* Everything but the count, which other threads change meanwhile. */
	const size_t from = offsetof(struct hr_ring, revision);
	hr_ring *a = malloc(sizeof *a);

	_Static_assert(offsetof(struct hr_ring, refs) == 0, "the count comes first");
	if (!a)
		return NULL;
	memcpy((char *)a + from, (const char *)ring + from, sizeof *a - from);
	atomic_init(&a->refs, 1);
	a->origin = hr_ring_retain(ring->origin ? ring->origin : ring);
	return a;
}

bool hr__ring_release_if_last(hr_ring *ring)
{
	/* Acquire pairs with the other holders' releases, so their reads of
	 * the ring happen before it is freed. */
	if (atomic_load_explicit(&ring->refs, memory_order_acquire) != 1)
		return false;
	hr_ring_release(ring);
	return true;
}

/* ---- accessors ----------------------------------------------------------- */

size_t hr__ring_bytes(const hr_ring *ring)
{
	const struct view *w, *r;
	size_t bytes;

	if (!ring)
		return 0;
	w = &ring->views[HR_VIEW_WRITE];
	r = &ring->views[HR_VIEW_READ];
	/* The blocks of ring_build.c's copy_nodes(): the nodes, each
	 * string with its NUL in one block padded by COPY_CHUNK, and the
	 * lookup lines, one more than the nodes. */
	bytes = sizeof *ring + (ring->nnodes ? ring->nnodes : 1) * sizeof *ring->nodes +
		COPY_CHUNK + (ring->nnodes + 1) * sizeof *ring->lines;
	for (size_t i = 0; i < ring->nnodes; i++) {
		const struct ring_node *rn = &ring->nodes[i];

		bytes += (size_t)rn->id_len + rn->addr_len + rn->zone_len + 3;
		/* ring_build.c's copy_tokens(): all tokens in one block. */
		bytes += rn->ntokens * sizeof *rn->tokens;
	}
	if (view_paged(&ring->all)) {
		/* Paged: every page once in all, the views' own tables and
		 * filtered pages besides (shared pages count in every ring
		 * that has them). */
		bytes += ring->all.bytes + ring->nhandles * sizeof *ring->handle_slot;
		bytes += w->mem ? w->bytes : 0;
		bytes += r->mem && !hr__ring_views_shared(ring) ? r->bytes : 0;
		return bytes;
	}
	/* Views that are one array (no node warms or drains) count once. */
	bytes += hr__view_bytes(w);
	if (!hr__ring_views_shared(ring))
		bytes += hr__view_bytes(r);
	return bytes;
}

uint64_t hr_ring_revision(const hr_ring *ring)
{
	return ring ? ring->revision : 0;
}

uint64_t hr_ring_digest(const hr_ring *ring)
{
	return ring ? ring->digest : 0;
}

size_t hr_ring_node_count(const hr_ring *ring)
{
	return ring ? ring->nnodes : 0;
}

size_t hr_ring_point_count(const hr_ring *ring)
{
	return ring ? ring->npoints : 0;
}

bool hr__ring_derived(const hr_ring *ring)
{
	return ring && ring->derived;
}

bool hr__ring_paged(const hr_ring *ring)
{
	return ring && view_paged(&ring->all);
}

bool hr__ring_rendezvous(const hr_ring *ring)
{
	return ring && ring->pl->kind == HR__PLACE_SCORES;
}

bool hr__ring_views_shared(const hr_ring *ring)
{
	return views_one(&ring->views[HR_VIEW_WRITE], &ring->views[HR_VIEW_READ]);
}

unsigned hr__ring_vnodes_per_weight(const hr_ring *ring)
{
	return ring ? ring->place.vnodes_per_weight : 0;
}

size_t hr__ring_view_nodes(const hr_ring *ring, hr_view view)
{
	return ring && hr__valid_view(view) ? ring->views[view].nnodes : 0;
}

size_t hr__ring_view_points(const hr_ring *ring, hr_view view)
{
	return ring && hr__valid_view(view) ? ring->views[view].npoints : 0;
}

const hr_node *hr_ring_node(const hr_ring *ring, size_t i)
{
	if (!ring || i >= ring->nnodes)
		return NULL;
	return &ring->nodes[i].pub;
}

const hr_node *hr_ring_find(const hr_ring *ring, const char *id)
{
	size_t lo = 0, hi;

	if (!ring || !id)
		return NULL;
	hi = ring->nnodes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ring->nodes[mid].pub.id, id);

		if (c == 0)
			return &ring->nodes[mid].pub;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

unsigned hr_ring_node_vnodes(const hr_ring *ring, const hr_node *node)
{
	size_t i = ring_slot(ring, node);

	return i == SIZE_MAX ? 0 : ring->nodes[i].vnodes;
}

int hr_ring_node_index(const hr_ring *ring, const hr_node *node, hr_error *err)
{
	size_t i = ring_slot(ring, node);

	if (i == SIZE_MAX)
		return hr__error_set(err, !ring || !node ? HR_EINVAL : HR_ENOTFOUND,
				     "node index: %s",
				     !ring ? "ring is NULL" : !node ? "node is NULL" :
				     "the node is not one of this ring's");
	return (int)i;
}

uint64_t hr__ring_key_pos(const hr_ring *ring, const void *key, size_t len)
{
	return ring_key_pos(ring, key, len);
}

size_t hr__ring_view_find(const hr_ring *ring, hr_view view, uint64_t pos)
{
	return view_find(&ring->views[view], pos);
}

int hr__ring_view_point(const hr_ring *ring, hr_view view, size_t i,
			uint64_t *pos, size_t *node)
{
	const struct view *v;

	if (!ring || !hr__valid_view(view))
		return HR_EINVAL;
	v = &ring->views[view];
	if (!view_has_point(v, i))
		return HR_EINVAL;
	*pos = view_pos(v, i);
	*node = view_slot(v, i);
	return HR_OK;
}

/* ---- lookup -------------------------------------------------------------- */

uint64_t hr_hash_key(const void *key, size_t len)
{
	return hr__xxh3_key(key, len);
}

int hr__ring_lookup_pos(const hr_ring *ring, uint64_t pos, hr_lookup *out)
{
	const struct ring_node *wn, *rn;

	if (!ring || !out)
		return HR_EINVAL;
	out->revision = ring->revision;
	out->digest = ring->digest;
	ring_owners(ring, pos, &wn, &rn);
	out->node = wn ? &wn->pub : NULL;
	out->read_node = rn ? &rn->pub : NULL;
	return wn || rn ? HR_OK : HR_EEMPTY;
}

int hr__lookup_args(hr_error *err, const void *obj, const char *what,
		    const void *out, const void *key, size_t len)
{
	if (!obj)
		return hr__error_set(err, HR_EINVAL, "lookup: %s is NULL", what);
	if (!out)
		return hr__error_set(err, HR_EINVAL, "lookup: out is NULL");
	if (!key && len)
		return hr__error_set(err, HR_EINVAL,
				     "lookup: key is NULL with length %zu", len);
	return HR_OK;
}

int hr__lookup_failed(hr_error *err, int rc)
{
	return hr__error_set(err, rc, "%s", hr_strerror(rc));
}

int hr_ring_lookup(const hr_ring *ring, const void *key, size_t len,
		   hr_lookup *out, hr_error *err)
{
	int rc;

	if (!ring || !out || (!key && len))
		return hr__lookup_args(err, ring, "ring", out, key, len);
	rc = hr__ring_lookup_pos(ring, ring_key_pos(ring, key, len), out);
	if (__builtin_expect(rc != HR_OK, 0))
		return hr__lookup_failed(err, rc);
	return HR_OK;
}

/* ---- preference lists ---------------------------------------------------- */

size_t hr__ring_view_next(const hr_ring *ring, hr_view view, uint64_t pos,
			  size_t i)
{
	return view_next(&ring->views[view], pos, i);
}

static bool listed(const hr_node *const *list, size_t n, const hr_node *node)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == node)
			return true;
	return false;
}

static bool zone_used(const hr_node *const *list, size_t n, uint32_t zone)
{
	for (size_t i = 0; i < n; i++)
		if (((const struct ring_node *)list[i])->zone == zone)
			return true;
	return false;
}

/*
 * Taken nodes fill out[] from the front.  Nodes skipped for their zone are
 * kept from the back (first skipped in out[r - 1]); only the first r - taken
 * of them can ever be appended, so when a take needs the room the last one
 * kept is dropped.
 */
int hr__ring_preflist_pos(const hr_ring *ring, uint64_t pos, hr_view view,
			  const hr_node **out, size_t r)
{
	const struct view *v;
	size_t taken = 0, kept = 0, i;

	if (!ring || !hr__valid_view(view) || (!out && r))
		return HR_EINVAL;
	v = &ring->views[view];
	if (!r || !v->npoints)
		return 0;
	if (r > v->nnodes)
		r = v->nnodes;
	i = view_find(v, pos);
	for (size_t step = 0; step < v->npoints; step++) {
		const struct ring_node *rn = &ring->nodes[view_slot(v, i)];
		const hr_node *nd = &rn->pub;

		i = view_next(v, pos, i);
		if (listed(out, taken, nd) || listed(out + r - kept, kept, nd))
			continue;
		if (zone_used(out, taken, rn->zone)) {
			if (taken + kept < r)
				out[r - 1 - kept++] = nd;
		} else {
			if (taken + kept == r)
				kept--;
			out[taken++] = nd;
		}
		if (taken == r)
			break;
		/* Every zone used and no room to keep more: nothing changes. */
		if (taken == v->nzones && taken + kept == r)
			break;
		/* Every node seen (nothing was dropped yet, or this is r). */
		if (taken + kept == v->nnodes)
			break;
	}
	/* Append the kept nodes in walk order. */
	for (size_t a = r - kept, b = r - 1; a < b; a++, b--) {
		const hr_node *t = out[a];

		out[a] = out[b];
		out[b] = t;
	}
	memmove(out + taken, out + r - kept, kept * sizeof *out);
	return (int)(taken + kept);
}

int hr_ring_preflist(const hr_ring *ring, const void *key, size_t len,
		     hr_view view, const hr_node **out, size_t r, hr_error *err)
{
	if (!ring)
		return hr__error_set(err, HR_EINVAL, "preflist: ring is NULL");
	if (!key && len)
		return hr__error_set(err, HR_EINVAL,
				     "preflist: key is NULL with length %zu", len);
	if (!out && r)
		return hr__error_set(err, HR_EINVAL, "preflist: out is NULL, r %zu", r);
	if (!hr__valid_view(view))
		return hr__error_set(err, HR_EINVAL, "preflist: bad view %d", (int)view);
	return hr__ring_preflist_pos(ring, ring_key_pos(ring, key, len), view,
				     out, r);
}

hr_epoch_order hr_epoch_compare(uint64_t local_revision, uint64_t local_digest,
				uint64_t remote_revision, uint64_t remote_digest)
{
	if (local_revision < remote_revision)
		return HR_EPOCH_LOCAL_STALE;
	if (local_revision > remote_revision)
		return HR_EPOCH_REMOTE_STALE;
	return local_digest == remote_digest ? HR_EPOCH_SAME : HR_EPOCH_CONFLICT;
}
