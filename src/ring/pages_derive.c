/* SPDX-License-Identifier: MIT */
/*
 * pages_derive.c - a big ring's pages from the previous ring's (see
 * pages.h): the pages where a point comes or goes are merged again, the
 * others shared; nodes kept keep their handles, new nodes take free ones.
 */
#include "pages.h"

#include "error.h"
#include "ring_match.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK HR__PAGES_CHUNK

/* Pages ahead whose counts are fetched while sharing a table's pages. */
#define PREFETCH_AHEAD 64

void hr__pages_mark(const hr_ring *r, uint32_t slot, unsigned from, unsigned to,
		    const struct view *v, unsigned char *dirty)
{
	struct point p[CHUNK];

	for (; from < to; from += CHUNK) {
		unsigned end = to - from > CHUNK ? from + CHUNK : to;

		ring_points_of(r, slot, from, end, p);
		for (unsigned k = 0; k < end - from; k++)
			dirty[paged_page(v, p[k].pos)] = HR__PAGE_DROPS;
	}
}

/* Whether the old page's point i, of a node kept, goes before the fresh
 * point `f`: by position, then by slot (in `ring`) as a full build orders
 * them. */
static inline bool old_first(const hr_ring *ring, const struct vpage *old,
			     size_t i, const struct point *f)
{
	return old->pos[i] < f->pos ||
	       (old->pos[i] == f->pos && ring->handle_slot[old->node[i]] < f->node);
}

/*
 * The new page from the old one: its points but those of dropped handles
 * (`drops` of them), and fresh[0 .. nf) merged in (sorted, slots of
 * `ring`), equal positions in slot order as in a full build.  The old
 * points between two events (a point dropped, a fresh one's place, found
 * from the old page's index) are copied as a block.  NULL when out of
 * memory.
 */
static struct vpage *page_merge(const hr_ring *ring, const struct view *v,
				const struct vpage *old, const unsigned char *drop,
				size_t drops, const struct point *fresh, size_t nf)
{
	struct vpage *pg = hr__page_new(old->n - drops + nf, hr__pages_buckets(v), ring->slab);
	size_t k = 0, i = 0, f = 0, d = 0;

	if (!pg)
		return NULL;
	for (;;) {
		size_t to = old->n, at = old->n;

		/* The next dropped point, and the next fresh point's place
		 * (a dropped point never decides it: it goes anyway). */
		if (drops)
			for (d = i; d < old->n && !drop[old->node[d]]; d++)
				;
		if (f < nf) {
			at = scan_pos(old->pos, old->index[paged_bucket(v, fresh[f].pos)],
				      fresh[f].pos);
			if (at < i)
				at = i;
			while (at < old->n && (old_first(ring, old, at, &fresh[f]) ||
					       (drops && drop[old->node[at]])))
				at++;
		}
		to = drops && d < at ? d : at;
		memcpy(pg->pos + k, old->pos + i, (to - i) * sizeof *pg->pos);
		memcpy(pg->node + k, old->node + i, (to - i) * sizeof *pg->node);
		k += to - i;
		i = to;
		if (f < nf && at == to) {
			pg->pos[k] = fresh[f].pos;
			pg->node[k++] = ring->nodes[fresh[f++].node].handle;
		} else if (i < old->n) {
			i++;	/* dropped */
		} else {
			break;
		}
	}
	if (drops) {
		hr__index_build(pg->pos, pg->n, pg->index, v->bucket_shift, v->bucket_mask);
	} else {
		/* The old index, each bucket after a fresh point's one
		 * point further on. */
		size_t buckets = (size_t)v->bucket_mask + 1;

		f = 0;
		for (size_t b = 0; b < buckets; b++) {
			while (f < nf && paged_bucket(v, fresh[f].pos) < b)
				f++;
			pg->index[b] = old->index[b] + (uint32_t)f;
		}
	}
	return pg;
}

int hr__pages_rebuild(const hr_ring *ring, struct view *v, const struct view *from,
		      const unsigned char *dirty, const unsigned char *drop,
		      const struct point *fresh, size_t nfresh, bool count_shared)
{
	size_t f = 0;

	for (size_t p = 0; p < v->npages; p++) {
		struct vpage *old = from->pages[p];
		size_t nf = 0;

		v->count[p] = from->count[p];
		while (f + nf < nfresh && paged_page(v, fresh[f + nf].pos) == p)
			nf++;
		/* Bring the page counts to come into the cache now: a locked
		 * increment waits for its line. */
		if (p + PREFETCH_AHEAD < v->npages)
			__builtin_prefetch(&from->pages[p + PREFETCH_AHEAD]->refs, 1);
		/* A page with fresh points is dirty. */
		if (dirty[p] == HR__PAGE_SHARED) {
			atomic_fetch_add_explicit(&old->refs, 1, memory_order_relaxed);
			v->pages[p] = old;
			v->bytes += count_shared ? old->bytes : 0;
		} else {
			size_t drops = 0;

			for (size_t i = 0; dirty[p] == HR__PAGE_DROPS && i < old->n; i++)
				drops += drop[old->node[i]];
			v->pages[p] = page_merge(ring, v, old, drop, drops, nf ? fresh + f : NULL, nf);
			if (!v->pages[p]) {
				hr__view_release(v);
				return HR_ENOMEM;
			}
			v->bytes += v->pages[p]->bytes;
			v->count[p] = v->pages[p]->n;
		}
		f += nf;
	}
	memcpy(v->after, from->after, v->npages * sizeof *v->after);
	for (size_t p = 0; p < v->npages; p++)
		if (dirty[p])
			hr__pages_after_fix(v, p);
	return HR_OK;
}

/* A node of the new ring whose points from vnode `from` on are placed. */
struct placing {
	uint32_t slot, from;
};

static int cmp_placing(const void *a, const void *b)
{
	const struct placing *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

int hr__pages_derive(hr_ring *ring, const hr_ring *prev, bool *done,
		     hr_error *err)
{
	const struct view *pa = &prev->all;
	size_t cap = (size_t)prev->nhandles + ring->nnodes + 1;
	uint32_t *map = NULL, *hs = NULL, next = 0, top = prev->nhandles;
	unsigned char *matched = NULL, *drop = NULL, *dirty = NULL;
	struct placing *placing = NULL;
	struct point *fresh = NULL;
	size_t nkept = 0, nfresh, nplacing = 0, f = 0;
	int rc = HR_ENOMEM;

	*done = false;
	/* Pages of another size fit the new ring better after it grew or
	 * shrank by half: placed again. */
	if (pa->kind != VIEW_PAGED || !hr__pages_wanted(ring) ||
	    hr__pages_bits(ring->npoints) + 1 < 64 - pa->page_shift ||
	    hr__pages_bits(ring->npoints) > 64 - pa->page_shift + 1)
		return HR_OK;
	/* New pages go into the regions the previous rings' pages leave. */
	if (prev->slab) {
		ring->slab = prev->slab;
		hr__slab_hold(ring->slab);
	}
	map = hr__ring_slot_map(prev, ring);
	matched = calloc(ring->nnodes ? ring->nnodes : 1, 1);
	drop = calloc(prev->nhandles ? prev->nhandles : 1, 1);
	dirty = calloc(pa->npages, 1);
	placing = malloc((ring->nnodes ? ring->nnodes : 1) * sizeof *placing);
	ring->handle_slot = hs = malloc(cap * sizeof *hs);
	if (!map || !matched || !drop || !dirty || !placing || !hs)
		goto out;
	for (uint32_t h = 0; h < prev->nhandles; h++)
		hs[h] = NO_NODE;
	/* One pass over the previous nodes: a node keeps its handle, and its
	 * points unless it lost vnodes (then all are placed again); the
	 * pages of the points that go are marked. */
	for (uint32_t i = 0; i < prev->nnodes; i++) {
		const struct ring_node *pn = &prev->nodes[i];
		uint32_t j = map[i];
		struct ring_node *rn;

		if (j == NO_NODE) {
			drop[pn->handle] = 1;
			hr__pages_mark(prev, i, 0, pn->vnodes, pa, dirty);
			continue;
		}
		rn = &ring->nodes[j];
		matched[j] = 1;
		rn->handle = pn->handle;
		hs[pn->handle] = j;
		if (pn->vnodes > rn->vnodes) {
			drop[pn->handle] = 1;
			hr__pages_mark(prev, i, 0, pn->vnodes, pa, dirty);
			placing[nplacing++] = (struct placing){ j, 0 };
		} else {
			nkept += pn->vnodes;
			if (pn->vnodes < rn->vnodes)
				placing[nplacing++] = (struct placing){ j, pn->vnodes };
		}
	}
	nfresh = ring->npoints - nkept;
	if (nfresh > ring->npoints / 4) {
		rc = HR_OK;
		goto out;
	}
	/* New nodes take the lowest free handles. */
	for (uint32_t j = 0; j < ring->nnodes; j++) {
		if (matched[j])
			continue;
		while (next < top && hs[next] != NO_NODE)
			next++;
		if (next == top)
			hs[top++] = NO_NODE;
		hs[next] = j;
		ring->nodes[j].handle = next;
		placing[nplacing++] = (struct placing){ j, 0 };
	}
	ring->nhandles = top;
	/* Room was kept for every node to be new. */
	hs = realloc(hs, (top ? top : 1) * sizeof *hs);
	if (hs)
		ring->handle_slot = hs;
	/* In slot order, so that equal positions stay in slot order through
	 * the sort, as a full build orders them.  Twice the room: the second
	 * half is the sort's scratch. */
	qsort(placing, nplacing, sizeof *placing, cmp_placing);
	fresh = malloc((nfresh ? 2 * nfresh : 1) * sizeof *fresh);
	if (!fresh)
		goto out;
	for (size_t k = 0; k < nplacing; k++) {
		uint32_t j = placing[k].slot;
		unsigned vnodes = ring->nodes[j].vnodes;

		ring_points_of(ring, j, placing[k].from, vnodes, fresh + f);
		f += vnodes - placing[k].from;
	}
	hr__sort_records(fresh, fresh + nfresh, nfresh);
	for (size_t k = 0; k < nfresh; k++)
		if (!dirty[paged_page(pa, fresh[k].pos)])
			dirty[paged_page(pa, fresh[k].pos)] = HR__PAGE_FRESH;

	if (hr__pages_table_like(&ring->all, pa))
		goto out;
	if (hr__pages_rebuild(ring, &ring->all, pa, dirty, drop, fresh, nfresh, true))
		goto out;
	ring->all.npoints = ring->npoints;
	ring->all.nnodes = ring->nnodes;
	ring->all.handle_slot = ring->handle_slot;
	ring->all.nhandles = ring->nhandles;
	*done = true;
	rc = HR_OK;
out:
	if (!*done) {
		hr__view_release(&ring->all);
		hr__slab_drop(ring->slab);
		ring->slab = NULL;
		free(ring->handle_slot);
		ring->handle_slot = NULL;
		ring->nhandles = 0;
	}
	free(fresh);
	free(placing);
	free(dirty);
	free(drop);
	free(matched);
	free(map);
	return rc ? hr__error_set(err, rc, "out of memory") : HR_OK;
}
