/*
 * owner.c - the client's copy-out answers: a lookup's owners into an
 * hr_owner, a preference list into hr_replicas, straight from a ring's
 * nodes.  The lookup path of hr_client_lookup() and hr_reader_lookup():
 * nothing here allocates or locks.
 */
#include "owner.h"

#include "counters.h"
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

static inline __attribute__((always_inline)) int
lookup_owner(const hr_ring *ring, const void *key, size_t len, hr_owner *out,
	     uint64_t *cnt)
{
	const struct ring_node *wn, *rn;

	if (!ring || !out || (!key && len))
		return HR_EINVAL;
	out->revision = ring->revision;
	out->digest = ring->digest;
	ring_owners(ring, ring_key_pos(ring, key, len), &wn, &rn);
	if (!wn && !rn)
		return HR_EEMPTY;
	if (cnt) {
		/* One view array: the read count is the write count
		 * (hr__ring_views_shared), one store saved. */
		if (wn)
			hr__count(cnt, (size_t)(wn - ring->nodes), HR_VIEW_WRITE);
		if (rn && ring->views[HR_VIEW_READ].pos != ring->views[HR_VIEW_WRITE].pos)
			hr__count(cnt, (size_t)(rn - ring->nodes), HR_VIEW_READ);
	}
	fill_owner(out->node, out->addr, &out->state, wn);
	fill_owner(out->read_node, out->read_addr, &out->read_state, rn);
	return HR_OK;
}

int hr__ring_lookup_owner(const hr_ring *ring, const void *key, size_t len,
			  hr_owner *out)
{
	return lookup_owner(ring, key, len, out, NULL);
}

int hr__ring_lookup_owner_counted(const hr_ring *ring, const void *key,
				  size_t len, hr_owner *out, uint64_t *cnt)
{
	return lookup_owner(ring, key, len, out, cnt);
}

int hr__ring_replicas(const hr_ring *ring, const void *key, size_t len,
		      hr_view view, hr_replica *out, size_t r,
		      uint64_t *revision)
{
	const hr_node *nodes[HR__REPLICAS_MAX];
	int k;

	if (r > HR__REPLICAS_MAX)
		return HR_EINVAL;
	k = hr_ring_preflist(ring, key, len, view, nodes, r);
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
