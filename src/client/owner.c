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

#include <stdbool.h>
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

/* One owner's strings from its ring_node: a node whose id or address is
 * too long for its lookup line.  Out of line: ids and addresses that long
 * are rare, and the common path keeps no register for them. */
static __attribute__((noinline)) void fill_spilled(char *id, char *addr,
						   const struct ring_node *rn)
{
	copy_str(id, rn->pub.id, rn->id_len);
	copy_str(addr, rn->pub.addr, rn->addr_len);
}

/* The owner at `slot` (ring->nnodes: none, whose line is empty) into the
 * fields of one view. */
static inline void fill_owner(char *id, char *addr, hr_state *state,
			      const hr_ring *ring, size_t slot)
{
	const struct ring_line *l = &ring->lines[slot];

	if (__builtin_expect(l->flags & LINE_SPILLED, 0))
		fill_spilled(id, addr, &ring->nodes[slot]);
	else {
		memcpy(id, l->id, COPY_CHUNK);
		memcpy(addr, l->addr, COPY_CHUNK);
	}
	*state = (hr_state)l->state;
}

/* Half a chunk: a vector register.  Loads and stores of it through
 * memcpy() stay in registers (a struct of the chunk's size would be kept
 * on the stack as well). */
typedef unsigned char half __attribute__((vector_size(COPY_CHUNK / 2)));

static inline half load_half(const char *p)
{
	half h;

	memcpy(&h, p, sizeof h);
	return h;
}

static inline void store_half(char *p, half h)
{
	memcpy(p, &h, sizeof h);
}

/* Both owners into `out` from line `l`, when they are one node (no node
 * warms or drains, no spread read): the line is read once and stored
 * twice. */
static inline void fill_one(hr_owner *out, const struct ring_line *l)
{
	half i0 = load_half(l->id), i1 = load_half(l->id + sizeof i0);
	half a0 = load_half(l->addr), a1 = load_half(l->addr + sizeof a0);

	store_half(out->node, i0);
	store_half(out->node + sizeof i0, i1);
	store_half(out->addr, a0);
	store_half(out->addr + sizeof a0, a1);
	store_half(out->read_node, i0);
	store_half(out->read_node + sizeof i0, i1);
	store_half(out->read_addr, a0);
	store_half(out->read_addr + sizeof a0, a1);
	out->state = out->read_state = (hr_state)l->state;
}

/* Both owners into `out`, any slots (ring->nnodes: none). */
static void fill_two(hr_owner *out, const hr_ring *ring, size_t ws, size_t rs)
{
	fill_owner(out->node, out->addr, &out->state, ring, ws);
	fill_owner(out->read_node, out->read_addr, &out->read_state, ring, rs);
}

/* The slot of the owner of `pos` in view `v`; ring->nnodes for none (an
 * empty view), whose lookup line is the empty one. */
static inline size_t view_slot_of(const hr_ring *ring, const struct view *v,
				  uint64_t pos)
{
	if (!v->npoints)
		return ring->nnodes;
	return view_find_slot(v, pos);
}

/* A hot key's read owner when reads are spread: the thread's turn among
 * the first s->replicas nodes of its read preference list; the read's
 * count moves from slot `from`, where it was counted.  Returns the slot of
 * the read owner. */
static __attribute__((noinline)) size_t
spread_read(const hr_ring *ring, uint64_t pos, hr__count_seg *s, size_t from)
{
	const hr_node *pref[16];
	int k = hr__ring_preflist_pos(ring, pos, HR_VIEW_READ, pref,
				      s->replicas < 16 ? s->replicas : 16);
	size_t at;

	if (k <= 0)
		return from;
	/* The ring's own nodes: the public record starts its slot. */
	at = (size_t)((const struct ring_node *)pref[s->turn++ % (unsigned)k] -
		      ring->nodes);
	hr__count_fix(s, 2 * from + HR_VIEW_READ, hr__uncount(s, from, HR_VIEW_READ));
	hr__count_fix(s, 2 * at + HR_VIEW_READ, hr__count(s, at, HR_VIEW_READ));
	return at;
}

/*
 * The slow path of a counted lookup, taken when the new length of the
 * log is s->due: the log's flush when it is full, the hot-key sample, and
 * the counts beyond the write owner's (s->flags): its read owner's when
 * the views differ (rs is the read view's), and the spreading of a hot
 * key's read.  Returns the read owner's slot.  Out of line: inlined, it
 * costs the common path a spilled register and an address kept for it
 * (warming or draining nodes and spread reads pay a call instead).
 */
static __attribute__((noinline)) size_t
count_slow(const hr_ring *ring, hr__count_seg *s, const void *key,
	   size_t len, uint64_t pos, size_t rs)
{
	if (hr__count_due(s))
		hr__counters_sample(s, key, len, pos);
	if (s->flags & HR__SEG_READS)
		hr__count_fix(s, 2 * rs + HR_VIEW_READ,
			      hr__count(s, rs, HR_VIEW_READ));
	if ((s->flags & HR__SEG_SPREAD) && rs != ring->nnodes &&
	    hr__hot_has(s->hot, pos))
		rs = spread_read(ring, pos, s, rs);
	return rs;
}

/*
 * The rest of a lookup whose owners are not one node with an inline line:
 * the views differ (a node warms or drains), a string is spilled, or a
 * view is empty.  Out of line, as count_slow().
 */
static __attribute__((noinline)) int
lookup_rare(const hr_ring *ring, const void *key, size_t len, hr_owner *out,
	    hr__count_seg *cnt, uint64_t pos, size_t ws, size_t rs,
	    hr_error *err)
{
	if (ws == ring->nnodes && rs == ring->nnodes)
		return hr__lookup_failed(err, HR_EEMPTY);
	if (cnt && hr__count_log(cnt, ws))
		rs = count_slow(ring, cnt, key, len, pos, rs);
	fill_two(out, ring, ws, rs);
	return HR_OK;
}

/*
 * A lookup touches, past the search: the ring's header (revision, digest,
 * views: read by the search too), the owner's lookup line, and with
 * counting the first line of the thread's segment and the line of its log
 * being written (counters.h): no count of a node's.  The common case (one
 * view array, an inline line, no sample due) takes one test of the line
 * and one of the log.
 */
static inline __attribute__((always_inline)) int
lookup_owner(const hr_ring *ring, const void *key, size_t len, hr_owner *out,
	     hr__count_seg *cnt, bool checked, hr_error *err)
{
	const struct view *w = &ring->views[HR_VIEW_WRITE];
	const struct view *r = &ring->views[HR_VIEW_READ];
	const struct ring_line *l;
	size_t ws, rs;
	uint64_t pos;

	if (!checked && (!ring || !out || (!key && len)))
		return hr__lookup_args(err, ring, "ring", out, key, len);
	out->revision = ring->revision;
	out->digest = ring->digest;
	pos = ring_key_pos(ring, key, len);
	ws = view_slot_of(ring, w, pos);
	/* Without warming or draining nodes both views are one array. */
	rs = views_one(w, r) ? ws : view_slot_of(ring, r, pos);
	l = &ring->lines[ws];
	/* The empty line is flagged: an empty view takes the rare path. */
	if (__builtin_expect((ws != rs) | l->flags, 0))
		return lookup_rare(ring, key, len, out, cnt, pos, ws, rs, err);
	if (cnt && __builtin_expect(hr__count_log(cnt, ws), 0)) {
		rs = count_slow(ring, cnt, key, len, pos, rs);
		/* A hot key's read went to a replica. */
		if (rs != ws) {
			fill_two(out, ring, ws, rs);
			return HR_OK;
		}
	}
	fill_one(out, l);
	return HR_OK;
}

int hr__ring_lookup_owner(const hr_ring *ring, const void *key, size_t len,
			  hr_owner *out, hr_error *err)
{
	return lookup_owner(ring, key, len, out, NULL, false, err);
}

int hr__ring_lookup_owner_counted(const hr_ring *ring, const void *key,
				  size_t len, hr_owner *out, hr__count_seg *cnt,
				  hr_error *err)
{
	return lookup_owner(ring, key, len, out, cnt, false, err);
}

int hr__ring_lookup_owner_hit(const hr_ring *ring, const void *key,
			      size_t len, hr_owner *out, hr__count_seg *cnt,
			      hr_error *err)
{
	return lookup_owner(ring, key, len, out, cnt, true, err);
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
