/*
 * ring.c - the placement contract: points, the write and read views,
 * lookup, preference lists, digest.  Pure: no threads, no I/O.
 * docs/placement.md is the specification this file implements.
 */
#include "ring.h"

#include "config.h"
#include "error.h"
#include "ketama.h"
#include "member.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Inlined: a 16-byte key hashes in a few nanoseconds, less than the call
 * into the shared library would cost. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* A node as the ring keeps it.  The public record comes first so that a
 * `const hr_node *` handed out maps back to its slot. */
struct ring_node {
	hr_node pub;
	unsigned vnodes;
	uint32_t zone;		/* equal numbers mean equal zones */
	uint16_t id_len, addr_len;	/* for the copy-out */
};

/*
 * The sorted points of one view, with a direct index on the top bits of a
 * position: the points whose top bits equal k start at index[k].  Buckets
 * hold one or two points on average, so a lookup is one index read and a
 * few comparisons on one cache line (see view_find).  Node numbers take two
 * bytes per point when they fit, which with the index keeps a point at
 * about 13 bytes.
 */
struct view {
	uint64_t *pos;		/* npoints, then POS_PAD times UINT64_MAX */
	void *node;		/* per point: uint16_t, or uint32_t if wide */
	uint32_t *index;
	size_t npoints;
	size_t nnodes;
	size_t nzones;
	unsigned shift;		/* 64 - index bits */
	bool wide;
	void *mem;		/* owned block; NULL if it is ring->shared */
};

/* Positions compared at once in view_find, hence the padding after the
 * last point. */
#define POS_PAD 4

/* Bytes copied at once by the copy-out: the string block is padded so
 * that reading this much from any string start stays inside it. */
#define COPY_CHUNK 32

struct hr_ring {
	atomic_size_t refs;
	uint64_t revision;
	uint64_t digest;
	unsigned vnodes_per_weight;
	hr_placement placement;
	hr__point_hash_fn hash;		/* what placed the points (native) */
	bool derived;			/* points taken from a previous ring */
	size_t nnodes;
	size_t npoints;
	struct ring_node *nodes;	/* sorted by id, bytewise */
	char *strings;			/* every id, addr and zone */
	void *shared;			/* all points, when a view is all */
	struct view views[2];
};

/* A point while the ring is built. */
struct point {
	uint64_t pos;
	uint32_t node;
};

#define ID_SHOWN 80	/* bytes of an id shown in a message */

/* ---- names --------------------------------------------------------------- */

static const char *const state_names[] = { "active", "warming", "draining" };

const char *hr_state_name(hr_state state)
{
	if ((unsigned)state >= sizeof state_names / sizeof state_names[0])
		return NULL;
	return state_names[state];
}

int hr_state_parse(const char *name, hr_state *out)
{
	if (!name || !out)
		return HR_EINVAL;
	for (unsigned i = 0; i < sizeof state_names / sizeof state_names[0]; i++) {
		if (strcmp(name, state_names[i]) == 0) {
			*out = (hr_state)i;
			return HR_OK;
		}
	}
	return HR_EINVAL;
}

/* ---- views --------------------------------------------------------------- */

/*
 * Index bits for n points: the largest b >= 1 with 2^b <= n, so one to two
 * points per bucket (four bytes of index per one or two points).  With
 * four-byte node numbers, half as many buckets keep the memory in budget.
 */
static unsigned index_bits(size_t n, bool wide)
{
	unsigned b = 1;

	while (b < 30 && ((size_t)1 << (b + 1)) <= n)
		b++;
	if (wide && b > 1)
		b--;
	return b;
}

/*
 * Rings are rebuilt one after the other with nearly the same number of
 * points.  Asking for a size rounded up to 1/16th (at most 6% more) lets
 * the allocator hand back the block of a ring freed a moment ago instead
 * of fresh pages, whose first touch costs a page fault each.
 */
static size_t block_size(size_t bytes)
{
	size_t grain = 4096;

	while (grain * 16 < bytes)
		grain *= 2;
	return (bytes + grain - 1) / grain * grain;
}

/* A view of `ring` with room for `npoints`; node numbers take 4 bytes
 * only when the ring has more nodes than 2 bytes can number. */
static int view_alloc(const hr_ring *ring, struct view *v, size_t npoints)
{
	bool wide = ring->nnodes > UINT16_MAX + 1u;
	unsigned b = index_bits(npoints, wide);
	size_t buckets = (size_t)1 << b;
	size_t pos_bytes = (npoints + POS_PAD) * sizeof(uint64_t);
	size_t index_bytes = buckets * sizeof(uint32_t);
	char *mem;

	mem = malloc(block_size(pos_bytes + index_bytes + npoints *
				(wide ? sizeof(uint32_t) : sizeof(uint16_t))));
	if (!mem)
		return HR_ENOMEM;
	v->mem = mem;
	v->pos = (uint64_t *)mem;
	v->index = (uint32_t *)(mem + pos_bytes);
	v->node = mem + pos_bytes + index_bytes;
	v->npoints = npoints;
	v->shift = 64 - b;
	v->wide = wide;
	for (size_t i = 0; i < POS_PAD; i++)
		v->pos[npoints + i] = UINT64_MAX;
	return HR_OK;
}

static inline uint32_t view_node(const struct view *v, size_t i)
{
	return v->wide ? ((const uint32_t *)v->node)[i] :
			 ((const uint16_t *)v->node)[i];
}

static void view_set_node(struct view *v, size_t i, uint32_t node)
{
	if (v->wide)
		((uint32_t *)v->node)[i] = node;
	else
		((uint16_t *)v->node)[i] = (uint16_t)node;
}

/* index[k] = points in buckets below k: counted, then summed, two passes
 * without a branch to mispredict. */
static void view_index(struct view *v)
{
	size_t buckets = (size_t)1 << (64 - v->shift);
	uint32_t sum = 0;

	memset(v->index, 0, buckets * sizeof *v->index);
	for (size_t i = 0; i < v->npoints; i++)
		v->index[v->pos[i] >> v->shift]++;
	for (size_t k = 0; k < buckets; k++) {
		uint32_t c = v->index[k];

		v->index[k] = sum;
		sum += c;
	}
}

/*
 * The first point at or after `pos`, or v->npoints: no wrap.  Every point
 * after bucket k is above any position in it, and the padding ends the
 * array with UINT64_MAX, so the points below `pos` from the bucket's start
 * are a prefix: counting them among the next POS_PAD is exact unless all
 * are below, which needs a crowded bucket.  The count has no branch to
 * mispredict.
 */
static inline size_t view_lower_bound(const struct view *v, uint64_t pos)
{
	size_t i = v->index[pos >> v->shift];
	const uint64_t *p = v->pos + i;
	size_t below = (size_t)(p[0] < pos) + (size_t)(p[1] < pos) +
		       (size_t)(p[2] < pos) + (size_t)(p[3] < pos);

	i += below;
	if (__builtin_expect(below == POS_PAD, 0)) {
		while (v->pos[i] < pos)
			i++;
	}
	return i;
}

/* The first point at or after `pos`, wrapping; the view is not empty. */
static inline size_t view_find(const struct view *v, uint64_t pos)
{
	size_t i = view_lower_bound(v, pos);

	return i == v->npoints ? 0 : i;
}

/* ---- build --------------------------------------------------------------- */

static int cmp_node_id(const void *a, const void *b)
{
	const hr_node *x = *(const hr_node *const *)a;
	const hr_node *y = *(const hr_node *const *)b;

	return strcmp(x->id, y->id);
}

struct zone_ref {
	const char *zone;
	uint32_t node;
};

static int cmp_zone(const void *a, const void *b)
{
	return strcmp(((const struct zone_ref *)a)->zone,
		      ((const struct zone_ref *)b)->zone);
}

/* Node indices follow id order, so ordering equal positions by index is
 * ordering them by id, bytewise (ids hold no NUL: a proper prefix sorts
 * first). */
static inline bool point_less(const struct point *a, const struct point *b)
{
	return a->pos < b->pos || (a->pos == b->pos && a->node < b->node);
}

static int cmp_point(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	return point_less(x, y) ? -1 : point_less(y, x) ? 1 : 0;
}

static void sort_bucket(struct point *p, size_t n)
{
	if (n > 16) {
		qsort(p, n, sizeof *p, cmp_point);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		struct point t = p[i];
		size_t j = i;

		while (j > 0 && point_less(&t, &p[j - 1])) {
			p[j] = p[j - 1];
			j--;
		}
		p[j] = t;
	}
}

static size_t format_uint(char *buf, unsigned v)
{
	char tmp[12];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

static uint64_t xxh3_hash(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

/* Copies, sorts and checks the nodes: ring->nodes in id order. */
static int build_nodes(hr_ring *ring, const hr_node *nodes, size_t n,
		       hr_error *err)
{
	const hr_node **sorted;
	size_t bytes = 0;
	char *s;
	int rc = HR_OK;

	sorted = malloc((n ? n : 1) * sizeof *sorted);
	ring->nodes = calloc(n ? n : 1, sizeof *ring->nodes);
	if (!sorted || !ring->nodes) {
		free(sorted);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		const hr_node *nd = &nodes[i];

		sorted[i] = nd;
		bytes += strlen(nd->id) + strlen(nd->addr) +
			 (nd->zone ? strlen(nd->zone) : 0) + 3;
	}
	qsort(sorted, n, sizeof *sorted, cmp_node_id);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(sorted[i - 1]->id, sorted[i]->id) == 0) {
			rc = hr__error_set(err, HR_EDUPLICATE,
					   "node \"%.*s\": duplicate node id",
					   ID_SHOWN, sorted[i]->id);
			goto out;
		}
	}
	/* Zeroed padding lets the copy-out read COPY_CHUNK bytes from any
	 * string. */
	ring->strings = s = calloc(1, bytes + COPY_CHUNK);
	if (!s) {
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const hr_node *in = sorted[i];
		hr_node *nd = &ring->nodes[i].pub;
		const char *fields[3] = { in->id, in->addr, in->zone ? in->zone : "" };
		const char **dst[3] = { &nd->id, &nd->addr, &nd->zone };

		for (int f = 0; f < 3; f++) {
			size_t len = strlen(fields[f]) + 1;

			memcpy(s, fields[f], len);
			*dst[f] = s;
			s += len;
		}
		ring->nodes[i].id_len = (uint16_t)strlen(nd->id);
		ring->nodes[i].addr_len = (uint16_t)strlen(nd->addr);
		nd->weight = in->weight;
		nd->state = in->state;
	}
out:
	free(sorted);
	return rc;
}

int hr__ring_node_points(const hr_node *node, const hr_ring_options *opts,
			 unsigned *points, hr_error *err)
{
	unsigned vpw = opts && opts->vnodes_per_weight ? opts->vnodes_per_weight :
		HR_VNODES_PER_WEIGHT_DEFAULT;
	double x, v;

	*points = 0;
	if (opts && opts->placement == HR_PLACEMENT_KETAMA)
		return hr__ketama_node_check(node, err);
	/* Compared in double arithmetic before any conversion, so that no
	 * weight, however large, overflows one. */
	x = node->weight * (double)vpw;
	if (!(x <= (double)HR_POINTS_MAX))
		return hr__error_set(err, HR_ELIMIT,
				     "node \"%.*s\": weight %.15g gives %.15g points at %u per unit of weight,"
				     " more than %u points, a ring's limit",
				     ID_SHOWN, node->id, node->weight, x, vpw, HR_POINTS_MAX);
	v = round(x);
	*points = v < 1 ? 1 : (unsigned)v;
	return HR_OK;
}

/* Points per node, and their total against the ring's limit. */
static int count_points(hr_ring *ring, hr_error *err)
{
	hr_ring_options opts = { .size = sizeof opts,
				 .vnodes_per_weight = ring->vnodes_per_weight,
				 .placement = ring->placement };
	size_t total = 0;

	for (size_t i = 0; i < ring->nnodes; i++) {
		struct ring_node *rn = &ring->nodes[i];
		int rc = hr__ring_node_points(&rn->pub, &opts, &rn->vnodes, err);

		if (rc)
			return rc;
		total += rn->vnodes;
		if (total > HR_POINTS_MAX)
			return hr__error_set(err, HR_ELIMIT,
					     "the ring would have more than %u points (node \"%.*s\")",
					     HR_POINTS_MAX, ID_SHOWN, rn->pub.id);
	}
	ring->npoints = total;
	return HR_OK;
}

/* Numbers the zones so the preference list compares integers. */
static int number_zones(hr_ring *ring, hr_error *err)
{
	struct zone_ref *refs;
	uint32_t zone = 0;

	if (!ring->nnodes)
		return HR_OK;
	refs = malloc(ring->nnodes * sizeof *refs);
	if (!refs)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < ring->nnodes; i++) {
		refs[i].zone = ring->nodes[i].pub.zone;
		refs[i].node = (uint32_t)i;
	}
	qsort(refs, ring->nnodes, sizeof *refs, cmp_zone);
	for (size_t i = 0; i < ring->nnodes; i++) {
		if (i > 0 && strcmp(refs[i - 1].zone, refs[i].zone) != 0)
			zone++;
		ring->nodes[refs[i].node].zone = zone;
	}
	free(refs);
	return HR_OK;
}

static void put_u32(unsigned char **p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		*(*p)++ = (unsigned char)(v >> (8 * i));
}

static void put_str(unsigned char **p, const char *s)
{
	size_t len = strlen(s);

	*(*p)++ = (unsigned char)len;
	memcpy(*p, s, len);
	*p += len;
}

/* The digest of docs/placement.md: XXH3_64bits over a canonical
 * serialization of the options and the nodes in id order. */
static int compute_digest(hr_ring *ring, hr_error *err)
{
	size_t size = 8;
	unsigned char *buf, *p;

	for (size_t i = 0; i < ring->nnodes; i++) {
		const hr_node *nd = &ring->nodes[i].pub;

		size += 3 + strlen(nd->id) + strlen(nd->addr) +
			strlen(nd->zone) + 8 + 1;
	}
	p = buf = malloc(size);
	if (!buf)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	/* 0, never a stored vnodes_per_weight, marks ketama placement. */
	put_u32(&p, ring->placement == HR_PLACEMENT_KETAMA ? 0 :
		    ring->vnodes_per_weight);
	put_u32(&p, (uint32_t)ring->nnodes);
	for (size_t i = 0; i < ring->nnodes; i++) {
		const hr_node *nd = &ring->nodes[i].pub;
		uint64_t bits;

		put_str(&p, nd->id);
		put_str(&p, nd->addr);
		put_str(&p, nd->zone);
		memcpy(&bits, &nd->weight, sizeof bits);
		put_u32(&p, (uint32_t)bits);
		put_u32(&p, (uint32_t)(bits >> 32));
		*p++ = (unsigned char)nd->state;
	}
	ring->digest = XXH3_64bits(buf, (size_t)(p - buf));
	free(buf);
	return HR_OK;
}

/* Hashes vnodes [from, to) of node `j` into `p`; returns how many. */
static size_t hash_vnodes(const struct ring_node *rn, uint32_t j,
			  unsigned from, unsigned to, hr__point_hash_fn hash,
			  struct point *p)
{
	char name[HR_ID_MAX + 16];
	size_t len = rn->id_len;

	memcpy(name, rn->pub.id, len);
	name[len] = '#';
	for (unsigned i = from; i < to; i++, p++) {
		size_t dl = format_uint(name + len + 1, i);

		p->pos = hash(name, len + 1 + dl);
		p->node = j;
	}
	return to - from;
}

/* Hashes every point into `all` and sorts it: a counting sort on the top
 * bits (positions are uniform) straight into the view, then each small
 * bucket on its own.  Fresh memory is most of the cost (page faults), so
 * the only scratch array is the hashed points, reused to sort buckets. */
static int build_points(hr_ring *ring, struct view *all,
			hr__point_hash_fn hash, hr_error *err)
{
	size_t n = ring->npoints, buckets, p = 0;
	struct point *raw;
	uint32_t *start;	/* point counts fit: HR_POINTS_MAX < 2^32 */

	if (view_alloc(ring, all, n) != HR_OK)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	all->nnodes = ring->nnodes;
	buckets = (size_t)1 << (64 - all->shift);
	raw = malloc((n ? n : 1) * sizeof *raw);
	start = calloc(buckets + 1, sizeof *start);
	if (!raw || !start) {
		free(raw);
		free(start);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	for (uint32_t j = 0; j < ring->nnodes; j++) {
		const struct ring_node *rn = &ring->nodes[j];

		p += hash_vnodes(rn, j, 0, rn->vnodes, hash, raw + p);
	}

	for (size_t i = 0; i < n; i++)
		start[(raw[i].pos >> all->shift) + 1]++;
	for (size_t k = 0; k < buckets; k++)
		start[k + 1] += start[k];
	for (size_t i = 0; i < n; i++) {
		size_t at = start[raw[i].pos >> all->shift]++;

		all->pos[at] = raw[i].pos;
		view_set_node(all, at, raw[i].node);
	}
	/* start[k] is now the end of bucket k, the start of bucket k + 1;
	 * buckets of two or more are sorted through the scratch array. */
	for (size_t k = 0, b = 0; k < buckets; k++) {
		size_t m = start[k] - b;

		if (m > 1) {
			for (size_t i = 0; i < m; i++) {
				raw[i].pos = all->pos[b + i];
				raw[i].node = view_node(all, b + i);
			}
			sort_bucket(raw, m);
			for (size_t i = 0; i < m; i++) {
				all->pos[b + i] = raw[i].pos;
				view_set_node(all, b + i, raw[i].node);
			}
		}
		b = start[k];
	}
	/* Bucket k starts where bucket k - 1 ends: that is the index. */
	all->index[0] = 0;
	memcpy(all->index + 1, start, (buckets - 1) * sizeof *start);
	free(raw);
	free(start);
	return HR_OK;
}

/* Sets up one view: the shared all-points view when every node is in it,
 * else an own copy of the points of its nodes, in the same order. */
static int build_view(hr_ring *ring, const struct view *all, hr_view which,
		      hr_error *err)
{
	struct view *v = &ring->views[which];
	size_t nnodes = 0, npoints = 0, nzones = 0;
	bool *zone_seen;

	zone_seen = calloc(ring->nnodes ? ring->nnodes : 1, sizeof *zone_seen);
	if (!zone_seen)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < ring->nnodes; i++) {
		const struct ring_node *rn = &ring->nodes[i];

		if (!hr__in_view(rn->pub.state, which))
			continue;
		nnodes++;
		npoints += rn->vnodes;
		if (!zone_seen[rn->zone]) {
			zone_seen[rn->zone] = true;
			nzones++;
		}
	}
	free(zone_seen);

	if (nnodes == ring->nnodes) {
		*v = *all;
		v->mem = NULL;
	} else {
		size_t j = 0;

		if (view_alloc(ring, v, npoints) != HR_OK)
			return hr__error_set(err, HR_ENOMEM, "out of memory");
		for (size_t i = 0; i < all->npoints; i++) {
			uint32_t nd = view_node(all, i);

			if (!hr__in_view(ring->nodes[nd].pub.state, which))
				continue;
			v->pos[j] = all->pos[i];
			view_set_node(v, j, nd);
			j++;
		}
		view_index(v);
	}
	v->nnodes = nnodes;
	v->nzones = nzones;
	return HR_OK;
}

/* ---- deriving a ring from the previous one ------------------------------- */

/*
 * A node's points depend only on its id and its vnode count, and vnode i of
 * a node sits where it sits whatever the count: a ring after a small change
 * is the previous ring's points minus those of removed or shrunk nodes plus
 * the hashed points of new vnodes, merged.  The result is the ring a full
 * build would make, point for point.
 */

#define NO_NODE UINT32_MAX

/*
 * Sorts `n` 16-byte records by the uint64_t they start with, stably: a
 * byte-wise radix sort through `tmp` (n records).  Hashed positions are
 * uniform, so eight counting passes beat a comparison sort from a few
 * hundred records on.
 */
#define RECORD 16

static void sort_records(void *base, void *tmp, size_t n)
{
	unsigned char *from = base, *to = tmp;

	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[257] = { 0 };
		unsigned char *t;

		for (size_t i = 0; i < n; i++) {
			uint64_t key;

			memcpy(&key, from + i * RECORD, sizeof key);
			count[((key >> shift) & 0xff) + 1]++;
		}
		for (int b = 0; b < 256; b++)
			count[b + 1] += count[b];
		for (size_t i = 0; i < n; i++) {
			uint64_t key;

			memcpy(&key, from + i * RECORD, sizeof key);
			memcpy(to + count[(key >> shift) & 0xff]++ * RECORD,
			       from + i * RECORD, RECORD);
		}
		t = from;
		from = to;
		to = t;
	}
	/* Eight passes: the records are back in `base`. */
}

_Static_assert(sizeof(struct point) == RECORD, "points sort as records");

/*
 * The points of a ring that kept no all-points view (it has warming and
 * draining nodes): the union of both views, in order.  Points of active
 * nodes are in both and taken once.
 */
static int union_points(const hr_ring *ring, struct view *u)
{
	const struct view *a = &ring->views[HR_VIEW_WRITE];
	const struct view *b = &ring->views[HR_VIEW_READ];
	size_t i = 0, j = 0, k = 0;

	if (view_alloc(ring, u, ring->npoints) != HR_OK)
		return HR_ENOMEM;
	while (i < a->npoints || j < b->npoints) {
		struct point pa = { UINT64_MAX, UINT32_MAX }, pb = pa;

		if (i < a->npoints)
			pa = (struct point){ a->pos[i], view_node(a, i) };
		if (j < b->npoints)
			pb = (struct point){ b->pos[j], view_node(b, j) };
		if (j == b->npoints || (i < a->npoints && point_less(&pa, &pb))) {
			u->pos[k] = pa.pos;
			view_set_node(u, k++, pa.node);
			i++;
		} else {
			if (i < a->npoints && !point_less(&pb, &pa))
				i++;	/* the same point, in both views */
			u->pos[k] = pb.pos;
			view_set_node(u, k++, pb.node);
			j++;
		}
	}
	return HR_OK;
}

/*
 * Writes into `all` the points of `src` whose node the new ring keeps,
 * renumbered (the renumbering keeps their order), with the sorted `fresh`
 * points merged in.
 */
static void merge_points(struct view *all, const struct view *src,
			 const uint32_t *map, const struct point *fresh,
			 size_t nfresh)
{
	size_t k = 0, f = 0;

	for (size_t i = 0; i < src->npoints; i++) {
		struct point p = { src->pos[i], map[view_node(src, i)] };

		if (p.node == NO_NODE)
			continue;
		while (f < nfresh && point_less(&fresh[f], &p)) {
			all->pos[k] = fresh[f].pos;
			view_set_node(all, k++, fresh[f++].node);
		}
		all->pos[k] = p.pos;
		view_set_node(all, k++, p.node);
	}
	for (; f < nfresh; f++) {
		all->pos[k] = fresh[f].pos;
		view_set_node(all, k++, fresh[f].node);
	}
}

/* a's node slot -> b's slot of the same id, or NO_NODE: one merge walk of
 * the id-ordered nodes, so owners compare as integers. */
static uint32_t *slot_map(const hr_ring *a, const hr_ring *b)
{
	uint32_t *map = malloc((a->nnodes ? a->nnodes : 1) * sizeof *map);
	size_t i = 0, j = 0;

	if (!map)
		return NULL;
	while (i < a->nnodes) {
		int c = j < b->nnodes ?
			strcmp(a->nodes[i].pub.id, b->nodes[j].pub.id) : -1;

		if (c > 0) {
			j++;
			continue;
		}
		map[i++] = c == 0 ? (uint32_t)j++ : NO_NODE;
	}
	return map;
}

/*
 * Fills `all` from prev's points and the hashed new ones.  Sets *done to
 * false, leaving `all` alone, when a full build is the cheaper way: over a
 * quarter of the points to hash, as after a resync.
 */
static int derive_points(hr_ring *ring, const hr_ring *prev,
			 struct view *all, bool *done, hr_error *err)
{
	uint32_t *map, *kept;	/* prev slot -> new slot; vnodes kept */
	struct point *fresh = NULL;
	struct view u = { 0 };
	const struct view *src;
	size_t nkept = 0, nfresh, f = 0;
	int rc = HR_OK;

	*done = false;
	/* The big block first, while the block of the ring freed last is
	 * still whole (see block_size). */
	if (view_alloc(ring, all, ring->npoints))
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	map = slot_map(prev, ring);
	kept = calloc(ring->nnodes ? ring->nnodes : 1, sizeof *kept);
	if (!map || !kept) {
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		goto out;
	}
	/* A node keeps its old points unless it lost vnodes (then all are
	 * hashed again). */
	for (size_t i = 0; i < prev->nnodes; i++) {
		uint32_t j = map[i];

		if (j == NO_NODE || prev->nodes[i].vnodes > ring->nodes[j].vnodes) {
			map[i] = NO_NODE;
			continue;
		}
		kept[j] = prev->nodes[i].vnodes;
		nkept += kept[j];
	}
	nfresh = ring->npoints - nkept;
	if (nfresh > ring->npoints / 4)
		goto out;

	/* Twice the room: the second half is the sort's scratch. */
	fresh = malloc((nfresh ? 2 * nfresh : 1) * sizeof *fresh);
	if (!fresh) {
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		goto out;
	}
	all->nnodes = ring->nnodes;
	for (uint32_t n = 0; n < ring->nnodes; n++)
		f += hash_vnodes(&ring->nodes[n], n, kept[n],
				 ring->nodes[n].vnodes, prev->hash, fresh + f);
	/* Stable: equal positions stay in node order, as hashed. */
	sort_records(fresh, fresh + nfresh, nfresh);

	/* A view that holds every node holds every point. */
	if (prev->views[HR_VIEW_WRITE].nnodes == prev->nnodes) {
		src = &prev->views[HR_VIEW_WRITE];
	} else if (prev->views[HR_VIEW_READ].nnodes == prev->nnodes) {
		src = &prev->views[HR_VIEW_READ];
	} else {
		if (union_points(prev, &u) != HR_OK) {
			rc = hr__error_set(err, HR_ENOMEM, "out of memory");
			goto out;
		}
		src = &u;
	}
	merge_points(all, src, map, fresh, nfresh);
	view_index(all);
	*done = true;
out:
	if (!*done) {
		free(all->mem);
		all->mem = NULL;
	}
	free(u.mem);
	free(fresh);
	free(kept);
	free(map);
	return rc;
}

/* The points of a native ring: derived from `prev` when it has the same
 * placement and that is cheaper, else built from scratch. */
static int place_points(hr_ring *ring, const hr_ring *prev, struct view *all,
			hr__point_hash_fn hash, hr_error *err)
{
	bool done = false;
	int rc;

	if (prev && prev->nnodes && prev->placement == ring->placement &&
	    prev->vnodes_per_weight == ring->vnodes_per_weight &&
	    prev->hash == hash) {
		rc = derive_points(ring, prev, all, &done, err);
		ring->derived = done;
		if (rc || done)
			return rc;
	}
	return build_points(ring, all, hash, err);
}

/* ---- ketama placement ---------------------------------------------------- */

static int check_placement(const hr_ring_options *opts, hr_error *err)
{
	hr_placement pl = opts ? opts->placement : HR_PLACEMENT_XXH3;

	if (pl != HR_PLACEMENT_XXH3 && pl != HR_PLACEMENT_KETAMA)
		return hr__error_set(err, HR_EINVAL, "unknown placement %d",
				     (int)pl);
	return HR_OK;
}

static hr_view home_view(hr_state state)
{
	return state == HR_STATE_DRAINING ? HR_VIEW_READ : HR_VIEW_WRITE;
}

/* One view as the continuum libmemcached builds from the view's nodes in id
 * order: a server's index there orders equal points, as node slots do. */
static int build_ketama_view(hr_ring *ring, hr_view which, hr_error *err)
{
	struct view *v = &ring->views[which];
	struct hr__ketama_server *servers;
	struct hr__ketama_point *pts = NULL;
	uint32_t *slot;
	bool *zone_seen;
	size_t n = 0, npoints = 0, nzones = 0;
	int rc;

	servers = malloc((ring->nnodes ? ring->nnodes : 1) * sizeof *servers);
	slot = malloc((ring->nnodes ? ring->nnodes : 1) * sizeof *slot);
	zone_seen = calloc(ring->nnodes ? ring->nnodes : 1, sizeof *zone_seen);
	rc = servers && slot && zone_seen ? HR_OK :
		hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < ring->nnodes; i++) {
		const struct ring_node *rn = &ring->nodes[i];

		if (!hr__in_view(rn->pub.state, which))
			continue;
		servers[n].addr = rn->pub.addr;
		servers[n].weight = rn->pub.weight;
		slot[n++] = (uint32_t)i;
		if (!zone_seen[rn->zone]) {
			zone_seen[rn->zone] = true;
			nzones++;
		}
	}
	if (!rc)
		rc = hr__ketama_continuum(servers, n, &pts, &npoints, err);
	if (!rc && view_alloc(ring, v, npoints))
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
	if (!rc) {
		/* Continuum values become the top half of a position, keys
		 * too: "first point >= key" is unchanged. */
		for (size_t j = 0; j < npoints; j++) {
			v->pos[j] = (uint64_t)pts[j].value << 32;
			view_set_node(v, j, slot[pts[j].server]);
		}
		view_index(v);
		v->nnodes = n;
		v->nzones = nzones;
		/* A node's vnodes are its points in its home view. */
		for (size_t k = 0; k < n; k++)
			if (home_view(ring->nodes[slot[k]].pub.state) == which)
				ring->nodes[slot[k]].vnodes = 0;
		for (size_t j = 0; j < npoints; j++) {
			struct ring_node *rn = &ring->nodes[slot[pts[j].server]];

			if (home_view(rn->pub.state) == which)
				rn->vnodes++;
		}
	}
	free(pts);
	free(zone_seen);
	free(slot);
	free(servers);
	return rc;
}

/* Completes a ketama ring after build_nodes(): zones, digest, both views
 * (one shared array when every node is active). */
static int finish_ketama(hr_ring *ring, hr_ring **out, hr_error *err)
{
	bool all_active = true;
	int rc;

	for (size_t i = 0; i < ring->nnodes; i++)
		all_active = all_active && ring->nodes[i].pub.state == HR_STATE_ACTIVE;
	rc = number_zones(ring, err);
	if (!rc)
		rc = compute_digest(ring, err);
	if (!rc)
		rc = build_ketama_view(ring, HR_VIEW_WRITE, err);
	if (!rc && all_active) {
		ring->shared = ring->views[HR_VIEW_WRITE].mem;
		ring->views[HR_VIEW_WRITE].mem = NULL;
		ring->views[HR_VIEW_READ] = ring->views[HR_VIEW_WRITE];
	} else if (!rc) {
		rc = build_ketama_view(ring, HR_VIEW_READ, err);
	}
	if (rc) {
		hr_ring_release(ring);
		return rc;
	}
	for (size_t i = 0; i < ring->nnodes; i++)
		ring->npoints += ring->nodes[i].vnodes;
	*out = ring;
	return HR_OK;
}

/* A full build when `prev` is NULL, else a ring derived from it. */
static int build_ring(const hr_ring *prev, const hr_node *nodes, size_t n,
		      const hr_ring_options *opts, uint64_t revision,
		      hr__point_hash_fn hash, hr_ring **out, hr_error *err)
{
	struct view all = { 0 };
	hr_ring *ring;
	int rc;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "ring output pointer is NULL");
	*out = NULL;
	if (!nodes && n)
		return hr__error_set(err, HR_EINVAL, "node array is NULL");
	if (!hash)
		return hr__error_set(err, HR_EINVAL, "point hash is NULL");
	if (n > HR_NODES_MAX)
		return hr__error_set(err, HR_ELIMIT,
				     "%zu nodes exceed the limit of %d", n,
				     HR_NODES_MAX);
	for (size_t i = 0; i < n; i++) {
		rc = hr__node_validate(&nodes[i], err);
		if (rc)
			return rc;
	}
	rc = check_placement(opts, err);
	if (rc)
		return rc;

	ring = calloc(1, sizeof *ring);
	if (!ring)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	atomic_init(&ring->refs, 1);
	ring->revision = revision;
	ring->nnodes = n;
	ring->vnodes_per_weight = opts && opts->vnodes_per_weight ?
		opts->vnodes_per_weight : HR_VNODES_PER_WEIGHT_DEFAULT;
	ring->placement = opts ? opts->placement : HR_PLACEMENT_XXH3;
	ring->hash = hash;

	rc = build_nodes(ring, nodes, n, err);
	if (!rc)
		rc = count_points(ring, err);
	if (!rc && ring->placement == HR_PLACEMENT_KETAMA)
		return finish_ketama(ring, out, err);
	if (!rc)
		rc = number_zones(ring, err);
	if (!rc)
		rc = compute_digest(ring, err);
	if (!rc)
		rc = place_points(ring, prev, &all, hash, err);
	if (!rc)
		rc = build_view(ring, &all, HR_VIEW_WRITE, err);
	if (!rc)
		rc = build_view(ring, &all, HR_VIEW_READ, err);
	if (rc) {
		free(all.mem);
		hr_ring_release(ring);
		return rc;
	}
	if (ring->views[HR_VIEW_WRITE].mem && ring->views[HR_VIEW_READ].mem)
		free(all.mem);
	else
		ring->shared = all.mem;
	*out = ring;
	return HR_OK;
}

int hr__ring_build_hashed(const hr_node *nodes, size_t n,
			  const hr_ring_options *opts, uint64_t revision,
			  hr__point_hash_fn hash, hr_ring **out, hr_error *err)
{
	return build_ring(NULL, nodes, n, opts, revision, hash, out, err);
}

int hr__ring_derive(const hr_ring *prev, const hr_node *nodes, size_t n,
		    const hr_ring_options *opts, uint64_t revision,
		    hr_ring **out, hr_error *err)
{
	return build_ring(prev, nodes, n, opts, revision,
			  prev ? prev->hash : xxh3_hash, out, err);
}

int hr_ring_build(const hr_node *nodes, size_t n, const hr_ring_options *opts,
		  uint64_t revision, hr_ring **out, hr_error *err)
{
	hr_ring_options o;
	int rc = hr__ring_options_read(opts, &o, err);

	if (rc) {
		if (out)
			*out = NULL;
		return rc;
	}
	return hr__ring_build_hashed(nodes, n, &o, revision, xxh3_hash, out,
				     err);
}

int hr_node_check(const hr_node *node, const hr_ring_options *opts,
		  hr_error *err)
{
	hr_ring_options o;
	unsigned points;
	int rc = hr__ring_options_read(opts, &o, err);

	if (!rc)
		rc = hr__node_validate(node, err);
	if (!rc)
		rc = hr__ring_node_points(node, &o, &points, err);
	return rc;
}

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
	free(ring->views[HR_VIEW_WRITE].mem);
	free(ring->views[HR_VIEW_READ].mem);
	free(ring->shared);
	free(ring->strings);
	free(ring->nodes);
	free(ring);
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

unsigned hr__ring_vnodes_per_weight(const hr_ring *ring)
{
	return ring ? ring->vnodes_per_weight : 0;
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

/* The slot of a node pointer from this ring, or SIZE_MAX. */
static size_t node_slot(const hr_ring *ring, const hr_node *node)
{
	uintptr_t base, p;

	if (!ring || !node)
		return SIZE_MAX;
	base = (uintptr_t)ring->nodes;
	p = (uintptr_t)node;
	if (p < base || p >= base + ring->nnodes * sizeof *ring->nodes ||
	    (p - base) % sizeof *ring->nodes)
		return SIZE_MAX;
	return (p - base) / sizeof *ring->nodes;
}

unsigned hr_ring_node_vnodes(const hr_ring *ring, const hr_node *node)
{
	size_t i = node_slot(ring, node);

	return i == SIZE_MAX ? 0 : ring->nodes[i].vnodes;
}

/* A 128-bit sum of arc lengths, as a share of 2^64. */
double hr_ring_node_share(const hr_ring *ring, const hr_node *node,
			  hr_view view)
{
	size_t slot = node_slot(ring, node);
	const struct view *v;
	hr__arc_sum sum = { 0, 0 };

	if (slot == SIZE_MAX || !hr__valid_view(view))
		return 0;
	v = &ring->views[view];
	if (!v->npoints)
		return 0;
	/* All points at one position: the first owns the whole circle. */
	if (v->pos[0] == v->pos[v->npoints - 1])
		return view_node(v, 0) == slot ? 1.0 : 0.0;
	/* Point i owns the arc (pos[i - 1], pos[i]]; point 0 wraps. */
	for (size_t i = 0; i < v->npoints; i++) {
		uint64_t prev = v->pos[i ? i - 1 : v->npoints - 1];

		if (view_node(v, i) == slot)
			hr__arc_add(&sum, v->pos[i] - prev);
	}
	return hr__arc_share(&sum);
}

/*
 * The arcs of every node summed in one pass, in `out` itself (a sum is as
 * wide as a double) modulo 2^64: no node's sum reaches 2^64 unless it owns
 * the whole circle, which leaves every sum 0, so the sums are exact.
 */
static inline void add_arc_at(double *out, uint32_t node, uint64_t len)
{
	uint64_t s;

	memcpy(&s, &out[node], sizeof s);
	s += len;
	memcpy(&out[node], &s, sizeof s);
}

#define SUM_ARCS(type) do {						\
		const type *nd = v->node;					\
									\
		for (size_t i = 0; i < v->npoints; i++) {			\
			add_arc_at(out, nd[i], v->pos[i] - prev);		\
			prev = v->pos[i];					\
		}							\
	} while (0)

size_t hr_ring_node_shares(const hr_ring *ring, hr_view view, double *out,
			   size_t n)
{
	size_t count = hr_ring_node_count(ring);
	const struct view *v;
	bool any = false;
	uint64_t prev;

	if (!count || !out || n < count)
		return count;
	memset(out, 0, count * sizeof *out);	/* 0.0 and sums of 0 alike */
	if (!hr__valid_view(view) || !ring->views[view].npoints)
		return count;
	v = &ring->views[view];
	prev = v->pos[v->npoints - 1];
	if (v->wide)
		SUM_ARCS(uint32_t);
	else
		SUM_ARCS(uint16_t);
	for (size_t j = 0; j < count; j++) {
		uint64_t s;

		memcpy(&s, &out[j], sizeof s);
		any = any || s;
		out[j] = ldexp((double)s, -64);	/* rounded once */
	}
	/* One node owns everything (all points at one position, or every
	 * other arc empty): the node of point 0, whose arc is the circle. */
	if (!any)
		out[view_node(v, 0)] = 1.0;
	return count;
}

#undef SUM_ARCS

/* ---- lookup -------------------------------------------------------------- */

uint64_t hr_hash_key(const void *key, size_t len)
{
	return XXH3_64bits(len ? key : "", len);
}

/* A key's position: XXH3, or in ketama mode the MD5 hash in the top half
 * (points are there too).  The branch on the ring is predictable. */
static inline uint64_t key_pos(const hr_ring *ring, const void *key,
			       size_t len)
{
	if (__builtin_expect(ring->placement == HR_PLACEMENT_KETAMA, 0))
		return (uint64_t)hr__ketama_key_hash(key, len) << 32;
	return hr_hash_key(key, len);
}

uint64_t hr__ring_key_pos(const hr_ring *ring, const void *key, size_t len)
{
	return key_pos(ring, key, len);
}

size_t hr__ring_view_find(const hr_ring *ring, hr_view view, uint64_t pos)
{
	return view_find(&ring->views[view], pos);
}

int hr__ring_view_point(const hr_ring *ring, hr_view view, size_t i,
			uint64_t *pos, size_t *node)
{
	const struct view *v;

	if (!ring || !hr__valid_view(view) || i >= ring->views[view].npoints)
		return HR_EINVAL;
	v = &ring->views[view];
	*pos = v->pos[i];
	*node = view_node(v, i);
	return HR_OK;
}

static inline const struct ring_node *view_owner(const hr_ring *ring,
						 const struct view *v,
						 uint64_t pos)
{
	if (!v->npoints)
		return NULL;
	return &ring->nodes[view_node(v, view_find(v, pos))];
}

/* The owners of `pos` in the write and the read view (NULL: empty view). */
static inline void owners(const hr_ring *ring, uint64_t pos,
			  const struct ring_node **wn, const struct ring_node **rn)
{
	const struct view *w = &ring->views[HR_VIEW_WRITE];
	const struct view *r = &ring->views[HR_VIEW_READ];

	*wn = view_owner(ring, w, pos);
	/* Without warming or draining nodes both views are one array. */
	*rn = r->pos == w->pos ? *wn : view_owner(ring, r, pos);
}

int hr__ring_lookup_pos(const hr_ring *ring, uint64_t pos, hr_lookup *out)
{
	const struct ring_node *wn, *rn;

	if (!ring || !out)
		return HR_EINVAL;
	out->revision = ring->revision;
	out->digest = ring->digest;
	owners(ring, pos, &wn, &rn);
	out->node = wn ? &wn->pub : NULL;
	out->read_node = rn ? &rn->pub : NULL;
	return wn || rn ? HR_OK : HR_EEMPTY;
}

int hr_ring_lookup(const hr_ring *ring, const void *key, size_t len,
		   hr_lookup *out)
{
	if (!ring || !out || (!key && len))
		return HR_EINVAL;
	return hr__ring_lookup_pos(ring, key_pos(ring, key, len), out);
}

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

int hr__ring_lookup_owner(const hr_ring *ring, const void *key, size_t len,
			  hr_owner *out)
{
	const struct ring_node *wn, *rn;

	if (!ring || !out || (!key && len))
		return HR_EINVAL;
	out->revision = ring->revision;
	out->digest = ring->digest;
	owners(ring, key_pos(ring, key, len), &wn, &rn);
	if (!wn && !rn)
		return HR_EEMPTY;
	fill_owner(out->node, out->addr, &out->state, wn);
	fill_owner(out->read_node, out->read_addr, &out->read_state, rn);
	return HR_OK;
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
		const struct ring_node *rn = &ring->nodes[view_node(v, i)];
		const hr_node *nd = &rn->pub;

		if (++i == v->npoints)
			i = 0;
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
		     hr_view view, const hr_node **out, size_t r)
{
	if (!ring || (!key && len))
		return HR_EINVAL;
	return hr__ring_preflist_pos(ring, key_pos(ring, key, len), view, out, r);
}

/* ---- comparing rings ----------------------------------------------------- */

/* An interval [lo, hi] of positions. */
struct span {
	uint64_t lo, hi;
};

_Static_assert(sizeof(struct span) == RECORD, "spans sort as records");

/*
 * Adds to `sum` the measure of the positions in [lo, hi] whose owners in
 * va and vb (neither empty) differ; `map` takes a's node slots to b's.
 * Inside one interval [x, e] between consecutive positions of both views
 * each has one owner, the node of its first point at or after x.
 */
static void moved_in(const struct view *va, const struct view *vb,
		     const uint32_t *map, uint64_t lo, uint64_t hi,
		     hr__arc_sum *sum)
{
	size_t ia = view_lower_bound(va, lo), ib = view_lower_bound(vb, lo);
	uint64_t x = lo;

	for (;;) {
		uint32_t na = view_node(va, ia < va->npoints ? ia : 0);
		uint32_t nb = view_node(vb, ib < vb->npoints ? ib : 0);
		uint64_t e = hi;

		/* Long runs of equal points in rings a few changes apart: the
		 * interval up to a shared point has not moved. */
		while (ia < va->npoints && ib < vb->npoints &&
		       va->pos[ia] == vb->pos[ib] && va->pos[ia] < hi &&
		       map[na] == nb) {
			x = va->pos[ia] + 1;
			do
				ia++;
			while (ia < va->npoints && va->pos[ia] < x);
			while (ib < vb->npoints && vb->pos[ib] < x)
				ib++;
			na = view_node(va, ia < va->npoints ? ia : 0);
			nb = view_node(vb, ib < vb->npoints ? ib : 0);
		}
		if (ia < va->npoints && va->pos[ia] < e)
			e = va->pos[ia];
		if (ib < vb->npoints && vb->pos[ib] < e)
			e = vb->pos[ib];
		if (map[na] != nb) {
			hr__arc_add(sum, e - x);
			hr__arc_add(sum, 1);
		}
		if (e == hi)
			return;
		x = e + 1;
		while (ia < va->npoints && va->pos[ia] < x)
			ia++;
		while (ib < vb->npoints && vb->pos[ib] < x)
			ib++;
	}
}

/*
 * Where owners can differ at all.  A position whose next point in both
 * views belongs to a node with the same points in both (same id and
 * vnodes, in the view in both) has the same owner in both; so owners can
 * only differ on the arcs leading to points of the other nodes.  Returns
 * those arcs, sorted and merged, in *out (count in *n); false when there
 * are too many for this to pay or memory is short.
 */
static bool moved_spans(const hr_ring *a, const hr_ring *b, hr_view view,
			const uint32_t *map, struct span **out, size_t *n)
{
	const struct view *vs[2] = { &a->views[view], &b->views[view] };
	const hr_ring *rs[2] = { a, b };
	size_t changed = 0, cap, k = 0, m = 0;
	struct span *sp;
	bool *same;

	same = calloc(b->nnodes ? b->nnodes : 1, sizeof *same);
	if (!same)
		return false;
	for (size_t i = 0; i < a->nnodes; i++) {
		const struct ring_node *ra = &a->nodes[i];

		if (map[i] != NO_NODE && hr__in_view(ra->pub.state, view) &&
		    hr__in_view(b->nodes[map[i]].pub.state, view) &&
		    ra->vnodes == b->nodes[map[i]].vnodes)
			same[map[i]] = true;
		else if (hr__in_view(ra->pub.state, view))
			changed += ra->vnodes;
	}
	for (size_t j = 0; j < b->nnodes; j++)
		if (!same[j] && hr__in_view(b->nodes[j].pub.state, view))
			changed += b->nodes[j].vnodes;
	if (changed > (vs[0]->npoints + vs[1]->npoints) / 16) {
		free(same);
		return false;
	}
	cap = 2 * changed + 1;
	sp = malloc(2 * cap * sizeof *sp);	/* the sort's scratch too */
	for (int r = 0; sp && r < 2; r++) {
		const struct view *v = vs[r];

		for (size_t i = 0; i < rs[r]->nnodes; i++) {
			const struct ring_node *rn = &rs[r]->nodes[i];
			bool kept = r == 0 ? map[i] != NO_NODE && same[map[i]] :
				same[i];
			struct point p[64];

			if (kept || !hr__in_view(rn->pub.state, view))
				continue;
			for (unsigned from = 0; from < rn->vnodes; from += 64) {
				unsigned to = from + 64 < rn->vnodes ? from + 64 :
					rn->vnodes;
				size_t got = hash_vnodes(rn, 0, from, to,
							 rs[r]->hash, p);
				for (size_t q = 0; q < got; q++) {
					size_t at = view_lower_bound(v, p[q].pos);

					if (at > 0) {
						sp[k++] = (struct span){ v->pos[at - 1] + 1,
									 p[q].pos };
						continue;
					}
					/* The first point also owns the wrap. */
					sp[k++] = (struct span){ 0, p[q].pos };
					if (v->pos[v->npoints - 1] < UINT64_MAX)
						sp[k++] = (struct span){
							v->pos[v->npoints - 1] + 1,
							UINT64_MAX };
				}
			}
		}
	}
	free(same);
	if (!sp)
		return false;
	sort_records(sp, sp + cap, k);
	for (size_t i = 0; i < k; i++) {
		if (m && (sp[m - 1].hi == UINT64_MAX || sp[i].lo <= sp[m - 1].hi + 1)) {
			if (sp[i].hi > sp[m - 1].hi)
				sp[m - 1].hi = sp[i].hi;
		} else {
			sp[m++] = sp[i];
		}
	}
	*out = sp;
	*n = m;
	return true;
}

/* The slow way, without memory to spare: ids compared on every interval. */
static double moved_by_id(const hr_ring *a, const hr_ring *b,
			  const struct view *va, const struct view *vb)
{
	hr__arc_sum sum = { 0, 0 };
	size_t ia = 0, ib = 0;
	uint64_t x = 0;

	for (;;) {
		const hr_node *oa = &a->nodes[view_node(va, ia < va->npoints ? ia : 0)].pub;
		const hr_node *ob = &b->nodes[view_node(vb, ib < vb->npoints ? ib : 0)].pub;
		uint64_t e = UINT64_MAX;

		if (ia < va->npoints && va->pos[ia] < e)
			e = va->pos[ia];
		if (ib < vb->npoints && vb->pos[ib] < e)
			e = vb->pos[ib];
		if (strcmp(oa->id, ob->id) != 0) {
			hr__arc_add(&sum, e - x);
			hr__arc_add(&sum, 1);
		}
		if (e == UINT64_MAX)
			break;
		x = e + 1;
		while (ia < va->npoints && va->pos[ia] < x)
			ia++;
		while (ib < vb->npoints && vb->pos[ib] < x)
			ib++;
	}
	return hr__arc_share(&sum);
}

double hr_ring_moved_share(const hr_ring *a, const hr_ring *b, hr_view view)
{
	const struct view *va, *vb;
	hr__arc_sum sum = { 0, 0 };
	struct span *sp = NULL;
	uint32_t *map;
	size_t n = 0;

	if (!hr__valid_view(view))
		return 0;
	va = a ? &a->views[view] : NULL;
	vb = b ? &b->views[view] : NULL;
	if (!va || !va->npoints || !vb || !vb->npoints)
		return (va && va->npoints) != (vb && vb->npoints) ? 1.0 : 0.0;
	map = slot_map(a, b);
	if (!map)
		return moved_by_id(a, b, va, vb);
	/* Native rings with one point hash: look only where points differ. */
	if (a->placement == HR_PLACEMENT_XXH3 &&
	    b->placement == HR_PLACEMENT_XXH3 && a->hash == b->hash &&
	    moved_spans(a, b, view, map, &sp, &n)) {
		for (size_t i = 0; i < n; i++)
			moved_in(va, vb, map, sp[i].lo, sp[i].hi, &sum);
	} else {
		moved_in(va, vb, map, 0, UINT64_MAX, &sum);
	}
	free(sp);
	free(map);
	return hr__arc_share(&sum);
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
