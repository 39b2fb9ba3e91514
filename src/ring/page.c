/* SPDX-License-Identifier: MIT */
/*
 * page.c - the memory of a paged view's pages: a page's block, its count
 * of rings, and the slabs of equal regions that full builds cut pages from
 * (see page.h).
 */
#include "page.h"

#include <stdbool.h>
#include <stdlib.h>

size_t hr__page_bytes(size_t n, size_t buckets)
{
	return sizeof(struct vpage) + buckets * sizeof(uint32_t) +
	       (n + POS_PAD) * sizeof(uint64_t) + (n + POS_PAD) * sizeof(uint32_t);
}

struct vpage *hr__page_init(struct vpage *pg, size_t bytes, size_t n,
			    size_t buckets, struct vslab *slab)
{
	atomic_init(&pg->refs, 1);
	pg->n = (uint32_t)n;
	pg->bytes = bytes;
	pg->slab = slab;
	pg->index = (uint32_t *)(pg + 1);
	pg->pos = (uint64_t *)(pg->index + buckets);
	pg->node = (uint32_t *)(pg->pos + n + POS_PAD);
	for (size_t i = 0; i < POS_PAD; i++) {
		pg->pos[n + i] = UINT64_MAX;
		pg->node[n + i] = 0;	/* read, not used, by paged_handle() */
	}
	return pg;
}

void hr__slab_init(struct vslab *slab, size_t users, size_t region)
{
	pthread_mutex_init(&slab->mu, NULL);
	slab->users = users;
	slab->region = region;
	slab->free = NULL;
}

void hr__slab_hold(struct vslab *slab)
{
	pthread_mutex_lock(&slab->mu);
	slab->users++;
	pthread_mutex_unlock(&slab->mu);
}

/* Drops a user; with `region` (may be NULL), a page's region goes back. */
static void slab_drop(struct vslab *slab, void *region)
{
	bool last;

	pthread_mutex_lock(&slab->mu);
	if (region) {
		*(void **)region = slab->free;
		slab->free = region;
	}
	last = --slab->users == 0;
	pthread_mutex_unlock(&slab->mu);
	if (last) {
		pthread_mutex_destroy(&slab->mu);
		free(slab);
	}
}

void hr__slab_drop(struct vslab *slab)
{
	if (slab)
		slab_drop(slab, NULL);
}

/* A dead region of `slab` (may be NULL) for `bytes`, or NULL. */
static void *slab_take(struct vslab *slab, size_t bytes)
{
	void *r = NULL;

	if (!slab || bytes > slab->region)
		return NULL;
	pthread_mutex_lock(&slab->mu);
	if (slab->free) {
		r = slab->free;
		slab->free = *(void **)r;
		slab->users++;
	}
	pthread_mutex_unlock(&slab->mu);
	return r;
}

struct vpage *hr__page_new(size_t n, size_t buckets, struct vslab *slab)
{
	size_t bytes = hr__page_bytes(n, buckets);
	struct vpage *pg = slab_take(slab, bytes);

	if (pg)
		return hr__page_init(pg, slab->region, n, buckets, slab);
	pg = malloc(bytes);
	return pg ? hr__page_init(pg, bytes, n, buckets, NULL) : NULL;
}

void hr__page_release(struct vpage *pg)
{
	if (atomic_fetch_sub_explicit(&pg->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (pg->slab)
		slab_drop(pg->slab, pg);
	else
		free(pg);
}
