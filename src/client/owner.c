/* SPDX-License-Identifier: MIT */
/*
 * owner.c - the client's copy-out answers: a lookup's owners into an
 * hr_owner, a preference list into hr_replicas, straight from a ring's
 * nodes.  The lookup path of hr_client_lookup() and hr_client_replicas():
 * nothing here allocates or locks.
 */
#include "owner.h"

#include "counters.h"
#include "ring.h"
#include "ring_impl.h"

#include <string.h>

/* The copy-out writes COPY_CHUNK bytes into any field, and a ring string
 * of the longest length fits with its NUL. */
#define FITS(type, field, max)                                          \
	_Static_assert(sizeof ((type *)0)->field >= COPY_CHUNK &&        \
		       sizeof ((type *)0)->field >= (max) + 1,           \
		       #type "." #field " holds a ring string")
FITS(hr_owner, node, HR_ID_MAX);
FITS(hr_owner, addr, HR_ADDR_MAX);
FITS(hr_owner, read_node, HR_ID_MAX);
FITS(hr_owner, read_addr, HR_ADDR_MAX);
FITS(hr_replica, node, HR_ID_MAX);
FITS(hr_replica, addr, HR_ADDR_MAX);
FITS(hr_replica, zone, HR_ZONE_MAX);
#undef FITS

/* Copies a ring string out; `len` excludes the NUL.  Short strings move as
 * one fixed-size chunk (the bytes after the NUL are the ring's other
 * strings or zeros, all public), which compiles to two vector moves. */
static inline void copy_str(char *dst, const char *src, size_t len)
{
	if (__builtin_expect(len < COPY_CHUNK, 1))
		memcpy(dst, src, COPY_CHUNK);
	else
		memcpy(dst, src, len + 1);
}

static inline void fill_owner(char *id, char *addr, hr_state *state,
			      const struct ring_node *rn)
{
	if (rn) {
		copy_str(id, rn->pub.id, rn->id_len);
		copy_str(addr, rn->pub.addr, rn->addr_len);
		*state = rn->pub.state;
	} else {
		id[0] = addr[0] = '\0';
		*state = HR_STATE_ACTIVE;
	}
}

/* The counts' slot of a ring node; ring->nnodes for none (an empty
 * view). */
static inline size_t slot_of(const hr_ring *ring, const struct ring_node *rn)
{
	return rn ? (size_t)(rn - ring->nodes) : ring->nnodes;
}

/* view_owner() that also gives the owner's slot (ring->nnodes for an
 * empty view), which the search has at hand. */
static inline const struct ring_node *view_owner_slot(const hr_ring *ring,
						      const struct view *v,
						      uint64_t pos, size_t *slot)
{
	if (!v->npoints) {
		*slot = ring->nnodes;
		return NULL;
	}
	*slot = view_find_slot(v, pos);
	return &ring->nodes[*slot];
}

/* A hot key's read owner when reads are spread: the thread's turn among
 * the first s->replicas nodes of its read preference list; the read's
 * count moves from `rn`'s slot, where it was counted. */
static __attribute__((noinline)) const struct ring_node *
spread_read(const hr_ring *ring, uint64_t pos, hr__count_seg *s,
	    const struct ring_node *rn)
{
	const hr_node *pref[16];
	int k = hr__ring_preflist_pos(ring, pos, HR_VIEW_READ, pref,
				      s->replicas < 16 ? s->replicas : 16);
	const struct ring_node *to;
	size_t from, at;

	if (k <= 0)
		return rn;
	/* The ring's own nodes: the public record starts its slot. */
	to = (const struct ring_node *)pref[s->turn++ % (unsigned)k];
	from = slot_of(ring, rn);
	at = slot_of(ring, to);
	hr__count_fix(s, 2 * from + HR_VIEW_READ, hr__uncount(s, from, HR_VIEW_READ));
	hr__count_fix(s, 2 * at + HR_VIEW_READ, hr__count(s, at, HR_VIEW_READ));
	return to;
}

/*
 * The slow path of a counted lookup, taken when the new write count of
 * slot `ws` passes s->test: the count's carry, the hot-key sample, and
 * the counts beyond the write owner's (s->flags): its read owner's when
 * the views differ (rslot is the read view's), and the spreading of a
 * hot key's read.  Returns the read owner.  Out of line: inlined, it
 * costs the common path a spilled register and an address kept for it
 * (warming or draining nodes and spread reads pay a call instead).
 */
static __attribute__((noinline)) const struct ring_node *
count_slow(const hr_ring *ring, hr__count_seg *s, size_t ws,
	   const void *key, size_t len, uint64_t pos,
	   const struct ring_node *rn, size_t rslot)
{
	/* Read back, not passed: the common path keeps no copy of it. */
	uint32_t v = s->cnt[2 * ws + HR_VIEW_WRITE];

	hr__count_fix(s, 2 * ws + HR_VIEW_WRITE, v);
	if ((v & s->mask) == 0)
		hr__counters_sample(s, key, len, pos);
	if (s->flags & HR__SEG_READS)
		hr__count_fix(s, 2 * rslot + HR_VIEW_READ,
			      hr__count(s, rslot, HR_VIEW_READ));
	if ((s->flags & HR__SEG_SPREAD) && rn && hr__hot_has(s->hot, pos))
		rn = spread_read(ring, pos, s, rn);
	return rn;
}

static inline __attribute__((always_inline)) int
lookup_owner(const hr_ring *ring, const void *key, size_t len, hr_owner *out,
	     hr__count_seg *cnt, hr_error *err)
{
	const struct view *w = &ring->views[HR_VIEW_WRITE];
	const struct view *r = &ring->views[HR_VIEW_READ];
	const struct ring_node *wn, *rn;
	size_t ws, rs;
	uint64_t pos;

	if (!ring || !out || (!key && len))
		return hr__lookup_args(err, ring, "ring", out, key, len);
	out->revision = ring->revision;
	out->digest = ring->digest;
	pos = ring_key_pos(ring, key, len);
	wn = view_owner_slot(ring, w, pos, &ws);
	/* Without warming or draining nodes both views are one array. */
	rs = ws;
	if (!views_one(w, r))
		rn = view_owner_slot(ring, r, pos, &rs);
	else
		rn = wn;
	if (!wn && !rn)
		return hr__lookup_failed(err, HR_EEMPTY);
	if (cnt) {
		/* The common case, one view array and no spreading: one
		 * count and one test of it, which every other case fails. */
		if (__builtin_expect(hr__count_test(cnt, ws), 0))
			rn = count_slow(ring, cnt, ws, key, len, pos, rn, rs);
	}
	fill_owner(out->node, out->addr, &out->state, wn);
	fill_owner(out->read_node, out->read_addr, &out->read_state, rn);
	return HR_OK;
}

int hr__ring_lookup_owner(const hr_ring *ring, const void *key, size_t len,
			  hr_owner *out, hr_error *err)
{
	return lookup_owner(ring, key, len, out, NULL, err);
}

int hr__ring_lookup_owner_counted(const hr_ring *ring, const void *key,
				  size_t len, hr_owner *out, hr__count_seg *cnt,
				  hr_error *err)
{
	return lookup_owner(ring, key, len, out, cnt, err);
}

int hr__ring_owners_pos(const hr_ring *ring, uint64_t pos, const hr_node **wn,
			const hr_node **rn)
{
	const struct ring_node *w, *r;

	ring_owners(ring, pos, &w, &r);
	*wn = w ? &w->pub : NULL;
	*rn = r ? &r->pub : NULL;
	return w || r ? HR_OK : HR_EEMPTY;
}

int hr__ring_replicas(const hr_ring *ring, const void *key, size_t len,
		      hr_view view, hr_replica *out, size_t r,
		      uint64_t *revision)
{
	const hr_node *nodes[HR__REPLICAS_MAX];
	int k;

	if (r > HR__REPLICAS_MAX)
		return HR_EINVAL;
	k = hr_ring_preflist(ring, key, len, view, nodes, r, NULL);
	for (int i = 0; i < k; i++) {
		/* The ring's own nodes: the public record starts its slot. */
		const struct ring_node *rn = (const struct ring_node *)nodes[i];

		copy_str(out[i].node, rn->pub.id, rn->id_len);
		copy_str(out[i].addr, rn->pub.addr, rn->addr_len);
		copy_str(out[i].zone, rn->pub.zone, rn->zone_len);
		out[i].state = rn->pub.state;
	}
	if (revision)
		*revision = hr_ring_revision(ring);
	return k;
}
