/* SPDX-License-Identifier: MIT */
/*
 * pages_views.c - the write and read views of a paged ring from the pages
 * of all its points (see pages.h): all itself where every node is in the
 * view, else its pages without the other nodes' points.
 */
#include "pages.h"

#include "error.h"
#include "ring_views.h"
#include "state.h"

#include <stdlib.h>
#include <string.h>

/* View `which`: all's pages without the points of nodes outside it. */
static int view_filtered(hr_ring *ring, hr_view which, struct view *v,
			 size_t npoints)
{
	const struct view *all = &ring->all;
	unsigned char *out = calloc(ring->nhandles ? ring->nhandles : 1, 1);
	unsigned char *dirty = calloc(all->npages, 1);
	size_t outside = all->npoints - npoints;
	int rc = HR_ENOMEM;

	if (!out || !dirty || hr__pages_table_like(v, all))
		goto done;
	v->handle_slot = ring->handle_slot;
	v->nhandles = ring->nhandles;
	for (uint32_t j = 0; j < ring->nnodes; j++) {
		const struct ring_node *rn = &ring->nodes[j];

		if (hr__in_view(rn->pub.state, which))
			continue;
		out[rn->handle] = 1;
		/* Past a quarter of the points every page is copied. */
		if (outside <= all->npoints / 4)
			hr__pages_mark(ring, j, 0, rn->vnodes, all, dirty);
	}
	if (outside > all->npoints / 4)
		memset(dirty, HR__PAGE_DROPS, all->npages);
	/* Nothing fresh: a page is kept or filtered; all counts the kept. */
	rc = hr__pages_rebuild(ring, v, all, dirty, out, NULL, 0, false);
done:
	if (rc && v->mem)
		hr__view_release(v);
	free(dirty);
	free(out);
	return rc;
}

int hr__pages_views(hr_ring *ring, hr_error *err)
{
	for (hr_view which = HR_VIEW_WRITE; which <= HR_VIEW_READ; which++) {
		struct view *v = &ring->views[which];
		struct view counted;
		size_t npoints = 0;

		if (hr__ring_view_count(ring, which, &counted))
			return hr__error_set(err, HR_ENOMEM, "out of memory");
		if (counted.nnodes == ring->nnodes) {
			*v = ring->all;
			v->mem = NULL;
			npoints = ring->npoints;
		} else {
			for (size_t j = 0; j < ring->nnodes; j++)
				if (hr__in_view(ring->nodes[j].pub.state, which))
					npoints += ring->nodes[j].vnodes;
			if (npoints && view_filtered(ring, which, v, npoints))
				return hr__error_set(err, HR_ENOMEM, "out of memory");
		}
		/* A view without points stays empty (and flat). */
		v->npoints = npoints;
		v->nnodes = counted.nnodes;
		v->nzones = counted.nzones;
	}
	return HR_OK;
}
