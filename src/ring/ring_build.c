/* SPDX-License-Identifier: MIT */
/*
 * ring_build.c - building a ring: its nodes in id order, their points and
 * zones, the digest (docs/placement.md sections 2, 3 and 7), then the
 * views, which the ring's placement fills (placement.h).  The public
 * hr_ring_build() checks its caller's nodes; the library's own callers
 * hand over nodes already checked where they entered.
 */
#include "ring_build.h"

#include "error.h"
#include "node.h"
#include "pages.h"
#include "placements.h"
#include "ring_options.h"
#include "ring_points.h"
#include "ring_stream.h"
#include "ring_views.h"
#include "settings.h"
#include "tokens.h"

#include <stdlib.h>
#include <string.h>

uint64_t hr__point_hash_contract(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

/* A node while the ring is built, with its tokens (NULL: none). */
struct entry {
	const hr_node *node;
	const hr__tokens *tokens;
};

static int cmp_entry_id(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->node->id,
		      ((const struct entry *)b)->node->id);
}

/* The first i > 0 whose id is not above the one before it, or n. */
static size_t first_unordered(const struct entry *e, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (strcmp(e[i - 1].node->id, e[i].node->id) >= 0)
			return i;
	return n;
}

/* The nodes' lookup lines (ring_impl.h), and the empty one after them.
 * Zeroed whole: the copy-out reads the bytes after a string's NUL. */
static int fill_lines(hr_ring *ring, hr_error *err)
{
	size_t n = ring->nnodes;
	struct ring_line *l = aligned_alloc(sizeof *l, (n + 1) * sizeof *l);

	if (!l)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	memset(l, 0, (n + 1) * sizeof *l);
	ring->lines = l;
	for (size_t i = 0; i < n; i++) {
		const struct ring_node *rn = &ring->nodes[i];

		l[i].state = (uint8_t)rn->pub.state;
		if (rn->id_len >= LINE_STR || rn->addr_len >= LINE_STR) {
			l[i].flags = LINE_SPILLED;
			continue;
		}
		memcpy(l[i].id, rn->pub.id, rn->id_len);
		memcpy(l[i].addr, rn->pub.addr, rn->addr_len);
	}
	l[n].state = HR_STATE_ACTIVE;
	l[n].flags = LINE_NONE;
	return HR_OK;
}

/* Copies the nodes, sorted by id and unique, into ring->nodes, one
 * block of strings and the lookup lines (hr__ring_bytes() counts the three
 * as allocated here).
 * Neither block is zeroed but the strings' tail: every field is set, and
 * rings of 100,000 nodes are built again at every change. */
static int copy_nodes(hr_ring *ring, const struct entry *sorted,
		      hr_error *err)
{
	size_t n = ring->nnodes, bytes = 0;
	char *s;

	ring->nodes = malloc((n ? n : 1) * sizeof *ring->nodes);
	if (!ring->nodes)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const hr_node *in = sorted[i].node;
		struct ring_node *rn = &ring->nodes[i];

		*rn = (struct ring_node){
			.pub = { .weight = in->weight, .state = in->state },
			.id_len = (uint16_t)strlen(in->id),
			.addr_len = (uint16_t)strlen(in->addr),
			.zone_len = (uint16_t)(in->zone ? strlen(in->zone) : 0),
			.handle = (uint32_t)i,
		};
		bytes += (size_t)rn->id_len + rn->addr_len + rn->zone_len + 3;
	}
	/* Zeroed padding lets the copy-out read COPY_CHUNK bytes from any
	 * string. */
	ring->strings = s = malloc(bytes + COPY_CHUNK);
	if (!s)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	memset(s + bytes, 0, COPY_CHUNK);
	for (size_t i = 0; i < n; i++) {
		const hr_node *in = sorted[i].node;
		struct ring_node *rn = &ring->nodes[i];

		memcpy(s, in->id, rn->id_len + 1u);
		rn->pub.id = s;
		s += rn->id_len + 1u;
		memcpy(s, in->addr, rn->addr_len + 1u);
		rn->pub.addr = s;
		s += rn->addr_len + 1u;
		memcpy(s, in->zone ? in->zone : "", rn->zone_len + 1u);
		rn->pub.zone = s;
		s += rn->zone_len + 1u;
	}
	return fill_lines(ring, err);
}

/* The nodes' tokens into one block, for a placement placed by them. */
static int copy_tokens(hr_ring *ring, const struct entry *sorted,
		       hr_error *err)
{
	size_t total = 0;
	uint64_t *t;

	if (!ring->pl->tokens)
		return HR_OK;
	for (size_t i = 0; i < ring->nnodes; i++)
		total += sorted[i].tokens ? sorted[i].tokens->n : 0;
	if (!total)
		return HR_OK;
	ring->tokens = t = malloc(total * sizeof *t);
	if (!t)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < ring->nnodes; i++) {
		const hr__tokens *in = sorted[i].tokens;

		if (!in || !in->n)
			continue;
		memcpy(t, in->v, in->n * sizeof *t);
		ring->nodes[i].tokens = t;
		ring->nodes[i].ntokens = (uint32_t)in->n;
		/* What hr_node.tokens shows of the ring's nodes. */
		ring->nodes[i].pub.tokens = t;
		ring->nodes[i].pub.ntokens = in->n;
		t += in->n;
	}
	return HR_OK;
}

/* Points per node, as the placement counts them, and their total against
 * the ring's limit. */
static int count_points(hr_ring *ring, hr_error *err)
{
	size_t total = 0;

	for (size_t i = 0; i < ring->nnodes; i++) {
		struct ring_node *rn = &ring->nodes[i];
		int rc = HR_OK;

		/* A node's tokens are its points; without, the placement
		 * counts them. */
		if (rn->ntokens)
			rn->vnodes = rn->ntokens;
		else
			rc = ring->pl->node_points(&rn->pub, ring->place.vnodes_per_weight,
						   &rn->vnodes, err);
		if (rc)
			return rc;
		total += rn->vnodes;
		if (total > HR_POINTS_MAX)
			return hr__error_set(err, HR_ELIMIT,
					     "the ring would have more than %u points (node \"%.*s\")",
					     HR_POINTS_MAX, HR__ID_SHOWN, rn->pub.id);
	}
	ring->npoints = total;
	return HR_OK;
}

/* A zone met first at node `first` (index + 1; 0: a free slot). */
struct zone_slot {
	uint32_t first;
};

/* Puts the zones of `t` (size 2^bits) into a table twice its size, and
 * frees `t`; NULL (`t` kept) when out of memory. */
static struct zone_slot *zones_grow(const hr_ring *ring, struct zone_slot *t,
				    unsigned *bits)
{
	size_t size = (size_t)1 << (*bits + 1), mask = size - 1;
	struct zone_slot *g = calloc(size, sizeof *g);

	if (!g)
		return NULL;
	for (size_t i = 0; i < (size_t)1 << *bits; i++) {
		const struct ring_node *rn;
		size_t h;

		if (!t[i].first)
			continue;
		rn = &ring->nodes[t[i].first - 1];
		h = (size_t)XXH3_64bits(rn->pub.zone, rn->zone_len) & mask;
		while (g[h].first)
			h = (h + 1) & mask;
		g[h] = t[i];
	}
	free(t);
	(*bits)++;
	return g;
}

/*
 * Numbers the zones so the preference list compares integers: equal
 * numbers for equal zones, the first node of a zone setting its number,
 * and counts them.  A hash table of the zones, grown with their number
 * (a ring of 100,000 nodes has a handful), behind the zone of the node
 * before, which ids in order often share.
 */
static int number_zones(hr_ring *ring, hr_error *err)
{
	unsigned bits = 4;
	struct zone_slot *t = calloc((size_t)1 << bits, sizeof *t);
	uint32_t zones = 0;

	if (!t)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < ring->nnodes; i++) {
		struct ring_node *rn = &ring->nodes[i];
		const struct ring_node *o = i ? rn - 1 : NULL;
		size_t mask = ((size_t)1 << bits) - 1, h;

		if (o && o->zone_len == rn->zone_len &&
		    memcmp(o->pub.zone, rn->pub.zone, rn->zone_len) == 0) {
			rn->zone = o->zone;
			continue;
		}
		h = (size_t)XXH3_64bits(rn->pub.zone, rn->zone_len) & mask;
		for (;; h = (h + 1) & mask) {
			if (!t[h].first) {
				t[h].first = (uint32_t)i + 1;
				rn->zone = zones++;
				break;
			}
			o = &ring->nodes[t[h].first - 1];
			if (o->zone_len == rn->zone_len &&
			    memcmp(o->pub.zone, rn->pub.zone, rn->zone_len) == 0) {
				rn->zone = o->zone;
				break;
			}
		}
		/* At most half full. */
		if (2 * zones > mask) {
			struct zone_slot *g = zones_grow(ring, t, &bits);

			if (!g) {
				free(t);
				return hr__error_set(err, HR_ENOMEM, "out of memory");
			}
			t = g;
		}
	}
	free(t);
	ring->nzones = zones;
	return HR_OK;
}

static void put_u32(unsigned char **p, uint32_t v)
{
	hr__put_u32le(*p, v);
	*p += 4;
}

static void put_str(unsigned char **p, const char *s, size_t len)
{
	*(*p)++ = (unsigned char)len;
	memcpy(*p, s, len);
	*p += len;
}

/* Bytes serialized at a time for the digest: one node's fields always
 * fit (a token at a time beyond them). */
#define DIGEST_CHUNK 4096
#define DIGEST_NODE_MAX (3 + HR_ID_MAX + HR_ADDR_MAX + HR_ZONE_MAX + 8 + 1 + 4)

_Static_assert(DIGEST_NODE_MAX + HR__DIGEST_OPENING_MAX + 4 <= DIGEST_CHUNK,
	       "a node's fields fit a chunk");

/* Hands the serialized bytes to the hash once fewer than `room` are left
 * in the chunk. */
static void digest_flush(XXH3_state_t *st, unsigned char *buf,
			 unsigned char **p, size_t room)
{
	if ((size_t)(buf + DIGEST_CHUNK - *p) >= room)
		return;
	XXH3_64bits_update(st, buf, (size_t)(*p - buf));
	*p = buf;
}

/* The digest of docs/placement.md: XXH3_64bits over a canonical
 * serialization of the options and the nodes in id order, hashed as it is
 * written, a chunk at a time (the whole of it is megabytes at 100,000
 * nodes). */
static void compute_digest(hr_ring *ring)
{
	XXH3_state_t st;
	unsigned char buf[DIGEST_CHUNK], *p = buf;

	XXH3_64bits_reset(&st);
	p += ring->pl->digest_opening(&ring->place, p);
	put_u32(&p, (uint32_t)ring->nnodes);
	for (size_t i = 0; i < ring->nnodes; i++) {
		const struct ring_node *rn = &ring->nodes[i];
		uint64_t bits;

		digest_flush(&st, buf, &p, DIGEST_NODE_MAX);
		put_str(&p, rn->pub.id, rn->id_len);
		put_str(&p, rn->pub.addr, rn->addr_len);
		put_str(&p, rn->pub.zone, rn->zone_len);
		memcpy(&bits, &rn->pub.weight, sizeof bits);
		put_u32(&p, (uint32_t)bits);
		put_u32(&p, (uint32_t)(bits >> 32));
		*p++ = (unsigned char)rn->pub.state;
		/* Tokens place the points: a ring's answers follow them. */
		if (ring->pl->tokens) {
			put_u32(&p, rn->ntokens);
			for (uint32_t k = 0; k < rn->ntokens; k++) {
				digest_flush(&st, buf, &p, 8);
				put_u32(&p, (uint32_t)rn->tokens[k]);
				put_u32(&p, (uint32_t)(rn->tokens[k] >> 32));
			}
		}
	}
	XXH3_64bits_update(&st, buf, (size_t)(p - buf));
	ring->digest = XXH3_64bits_digest(&st);
}

/* Builds the ring of valid nodes (at most HR_NODES_MAX) with their tokens
 * (`tokens` parallel to `nodes`, may be NULL), following `prev` (may be
 * NULL). */
static int assemble(const hr_ring *prev, const hr_node *const *nodes,
		    const hr__tokens *const *tokens, size_t n, bool in_order,
		    const hr_ring_options *opts, uint64_t revision,
		    hr__point_hash_fn hash, hr__layout layout,
		    hr__ring_stream *stream, hr_ring **out, hr_error *err)
{
	const hr__placement *pl;
	struct entry *sorted;
	hr_ring *ring;
	size_t bad;
	int rc = hr__placement_get(opts, &pl, err);

	if (rc)
		return rc;
	sorted = malloc((n ? n : 1) * sizeof *sorted);
	if (!sorted)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		sorted[i] = (struct entry){ nodes[i], tokens ? tokens[i] : NULL };
	/* A ring that follows etcd gets its nodes in id order already (the
	 * nodeset's, not checked again); others are checked in one pass,
	 * sorted only when out of order.  Sorted, the only ids out of order
	 * are duplicates. */
	bad = in_order ? n : first_unordered(sorted, n);
	if (bad < n) {
		qsort(sorted, n, sizeof *sorted, cmp_entry_id);
		bad = first_unordered(sorted, n);
	}
	if (bad < n) {
		rc = hr__error_set(err, HR_EDUPLICATE,
				   "node \"%.*s\": duplicate node id",
				   HR__ID_SHOWN, sorted[bad].node->id);
		free(sorted);
		return rc;
	}

	ring = calloc(1, sizeof *ring);
	if (!ring) {
		free(sorted);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	atomic_init(&ring->refs, 1);
	ring->revision = revision;
	ring->nnodes = n;
	ring->place.vnodes_per_weight = hr__vnodes_per_weight(opts);
	ring->place.maglev_size = opts && opts->maglev_size ? opts->maglev_size :
		HR_MAGLEV_SIZE_DEFAULT;
	ring->place.hash = hash;
	ring->pl = pl;
	ring->key_pos = pl->key_pos;
	/* A derived ring is laid out as the one it follows. */
	ring->layout = layout == HR__LAYOUT_AUTO && prev ? prev->layout : layout;

	rc = copy_nodes(ring, sorted, err);
	if (!rc)
		rc = copy_tokens(ring, sorted, err);
	free(sorted);
	if (!rc)
		rc = count_points(ring, err);
	if (!rc)
		rc = number_zones(ring, err);
	if (!rc)
		compute_digest(ring);
	if (!rc)
		rc = pl->check ? pl->check(&ring->place, err) : HR_OK;
	if (!rc) {
		ring->pre = hr__ring_stream_take(stream, ring);
		rc = pl->kind == HR__PLACE_POINTS ? hr__points_fill(ring, prev, err) :
			hr__ring_views_each(ring, err);
		/* Not taken: the ring was derived, or it failed. */
		hr__pages_pre_free(ring->pre);
		ring->pre = NULL;
	}
	if (rc) {
		hr_ring_release(ring);
		return rc;
	}
	*out = ring;
	return HR_OK;
}

/* The caller's array of nodes, as both public builds take it: present
 * unless empty, within the limit, every node valid. */
static int check_nodes(const hr_node *nodes, size_t n, hr_error *err)
{
	if (!nodes && n)
		return hr__error_set(err, HR_EINVAL, "node array is NULL");
	if (n > HR_NODES_MAX)
		return hr__error_set(err, HR_ELIMIT,
				     "%zu nodes exceed the limit of %d", n,
				     HR_NODES_MAX);
	for (size_t i = 0; i < n; i++) {
		int rc = hr__node_validate(&nodes[i], err);

		if (rc)
			return rc;
	}
	return HR_OK;
}

/* The tokens `node` (valid) carries (hr_node.tokens), checked for a ring
 * of the options `o` (read): only with HR_PLACEMENT_TOKENS, at most
 * HR_TOKENS_MAX, distinct; copied and sorted into *out (cleared with
 * hr__tokens_clear()).  HR_EINVAL, HR_ELIMIT, HR_ENOMEM, naming the node.
 * Here, not in node.c: tokens.c reads node.c's helpers. */
static int node_tokens(const hr_node *node, const hr_ring_options *o,
		       hr__tokens *out, hr_error *err)
{
	memset(out, 0, sizeof *out);
	if (o->placement != HR_PLACEMENT_TOKENS)
		return hr__error_set(err, HR_EINVAL,
				     "node \"%.*s\": tokens need HR_PLACEMENT_TOKENS",
				     HR__ID_SHOWN, node->id);
	return hr__tokens_copy(node->id, node->tokens, node->ntokens, out, err);
}

int hr_node_check(const hr_node *node, const hr_ring_options *opts,
		  hr_error *err)
{
	hr_ring_options o;
	hr__tokens t;
	unsigned points;
	int rc = hr__ring_options_read(opts, &o, err);

	if (!rc)
		rc = hr__node_validate(node, err);
	if (!rc)
		rc = hr__record_weight_validate(node, err);
	if (!rc)
		rc = hr__node_points(node, &o, &points, err);
	if (!rc && node->ntokens) {
		rc = node_tokens(node, &o, &t, err);
		hr__tokens_clear(&t);
	}
	return rc;
}

/* The tokens the caller's nodes carry (hr_node.tokens), checked and
 * sorted: (*tp)[i] for nodes[i].  *t and *tp stay NULL when no node has
 * any; else the caller frees them with free_tokens(). */
static int caller_tokens(const hr_node *nodes, size_t n, const hr_ring_options *opts,
			 hr__tokens **t, const hr__tokens ***tp, hr_error *err)
{
	hr_ring_options o;
	size_t i;
	int rc;

	*t = NULL;
	*tp = NULL;
	for (i = 0; i < n && !nodes[i].ntokens; i++)
		;
	if (i == n)
		return HR_OK;
	rc = hr__ring_options_read(opts, &o, err);
	if (rc)
		return rc;
	*t = calloc(n, sizeof **t);
	*tp = malloc(n * sizeof **tp);
	if (!*t || !*tp)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		(*tp)[i] = &(*t)[i];
		rc = nodes[i].ntokens ? node_tokens(&nodes[i], &o, &(*t)[i], err) : 0;
		if (rc)
			return rc;
	}
	return HR_OK;
}

static void free_tokens(hr__tokens *t, const hr__tokens **tp, size_t n)
{
	for (size_t i = 0; t && i < n; i++)
		hr__tokens_clear(&t[i]);
	free(t);
	free(tp);
}

/* A build from the caller's array of nodes, each checked first, with
 * the tokens they carry. */
static int build_checked(const hr_ring *prev, const hr_node *nodes, size_t n,
			 const hr_ring_options *opts, uint64_t revision,
			 hr__point_hash_fn hash, hr__layout layout, hr_ring **out,
			 hr_error *err)
{
	const hr_node **order = NULL;
	const hr__tokens **tp = NULL;
	hr__tokens *t = NULL;
	int rc;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "ring output pointer is NULL");
	*out = NULL;
	if (!hash)
		return hr__error_set(err, HR_EINVAL, "point hash is NULL");
	rc = check_nodes(nodes, n, err);
	if (!rc)
		rc = caller_tokens(nodes, n, opts, &t, &tp, err);
	if (!rc && !(order = malloc((n ? n : 1) * sizeof *order)))
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
	if (!rc) {
		for (size_t i = 0; i < n; i++)
			order[i] = &nodes[i];
		rc = assemble(prev, order, tp, n, false, opts, revision, hash, layout,
			      NULL, out, err);
	}
	free(order);
	free_tokens(t, tp, n);
	return rc;
}

int hr__ring_build_valid(const hr_ring *prev, const hr_node *const *nodes,
			 const hr__tokens *const *tokens, size_t n, bool in_order,
			 const hr_ring_options *opts, uint64_t revision,
			 hr__ring_stream *stream, hr_ring **out, hr_error *err)
{
	if (!out)
		return hr__error_set(err, HR_EINVAL, "ring output pointer is NULL");
	*out = NULL;
	return assemble(prev, nodes, tokens, n, in_order, opts, revision,
			prev ? prev->place.hash : hr__point_hash_contract, HR__LAYOUT_AUTO,
			stream, out, err);
}

int hr__ring_build_hashed(const hr_node *nodes, size_t n,
			  const hr_ring_options *opts, uint64_t revision,
			  hr__point_hash_fn hash, hr_ring **out, hr_error *err)
{
	return build_checked(NULL, nodes, n, opts, revision, hash, HR__LAYOUT_AUTO,
			     out, err);
}

int hr__ring_build_layout(const hr_node *nodes, size_t n,
			  const hr_ring_options *opts, uint64_t revision,
			  hr__point_hash_fn hash, hr__layout layout,
			  hr_ring **out, hr_error *err)
{
	return build_checked(NULL, nodes, n, opts, revision, hash, layout, out, err);
}

int hr__ring_derive(const hr_ring *prev, const hr_node *nodes, size_t n,
		    const hr_ring_options *opts, uint64_t revision,
		    hr_ring **out, hr_error *err)
{
	return build_checked(prev, nodes, n, opts, revision,
			     prev ? prev->place.hash : hr__point_hash_contract,
			     HR__LAYOUT_AUTO, out, err);
}

void hr__ring_options_of(const hr_ring *ring, hr_ring_options *out)
{
	const hr__placement *pl;

	hr_ring_options_init(out);
	out->vnodes_per_weight = ring->place.vnodes_per_weight;
	out->maglev_size = ring->place.maglev_size;
	for (out->placement = 0; hr__placement_get(out, &pl, NULL) == 0; out->placement++)
		if (pl == ring->pl)
			return;
	out->placement = HR_PLACEMENT_XXH3; /* not reached: every ring has one */
}

int hr_ring_options_get(const hr_ring *ring, hr_ring_options *out, hr_error *err)
{
	hr_ring_options o;
	int rc;

	if (!ring || !out)
		return hr__error_set(err, HR_EINVAL, "hr_ring_options_get: %s is NULL",
				     ring ? "out" : "ring");
	rc = HR__CHECK_SIZE(hr_ring_options, out, vnodes_per_weight, err);
	if (rc)
		return rc;
	hr__ring_options_of(ring, &o);
	/* The fields the caller's struct holds, and no byte beyond. */
	if (HR__HAS(hr_ring_options, out, vnodes_per_weight))
		out->vnodes_per_weight = o.vnodes_per_weight;
	if (HR__HAS(hr_ring_options, out, placement))
		out->placement = o.placement;
	if (HR__HAS(hr_ring_options, out, maglev_size))
		out->maglev_size = o.maglev_size;
	return 0;
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
	return build_checked(NULL, nodes, n, &o, revision, hr__point_hash_contract,
			     HR__LAYOUT_AUTO, out, err);
}
