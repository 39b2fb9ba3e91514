/*
 * ring_build.c - building a ring: its nodes in id order, their points and
 * zones, the digest (docs/placement.md sections 2, 3 and 7), then the
 * views, which the ring's placement fills (placement.h).  The public
 * hr_ring_build() checks its caller's nodes; the library's own callers
 * hand over nodes already checked where they entered.
 */
#include "ring_build.h"

#include "config.h"
#include "error.h"
#include "node.h"
#include "ring_impl.h"
#include "tokens.h"

#include <stdlib.h>
#include <string.h>

/* The contract's point hash. */
static uint64_t xxh3_hash(const void *buf, size_t len)
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

/* Copies the nodes, sorted by id and unique, into ring->nodes and one
 * block of strings (hr__ring_bytes() counts both as allocated here). */
static int copy_nodes(hr_ring *ring, const struct entry *sorted,
		      hr_error *err)
{
	size_t n = ring->nnodes, bytes = 0;
	char *s;

	ring->nodes = calloc(n ? n : 1, sizeof *ring->nodes);
	if (!ring->nodes)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		bytes += strlen(sorted[i].node->id) + strlen(sorted[i].node->addr) +
			 (sorted[i].node->zone ? strlen(sorted[i].node->zone) : 0) + 3;
	/* Zeroed padding lets the copy-out read COPY_CHUNK bytes from any
	 * string. */
	ring->strings = s = calloc(1, bytes + COPY_CHUNK);
	if (!s)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const hr_node *in = sorted[i].node;
		struct ring_node *rn = &ring->nodes[i];
		const char *fields[3] = { in->id, in->addr, in->zone ? in->zone : "" };
		const char **dst[3] = { &rn->pub.id, &rn->pub.addr, &rn->pub.zone };
		uint16_t *lens[3] = { &rn->id_len, &rn->addr_len, &rn->zone_len };

		for (int f = 0; f < 3; f++) {
			size_t len = strlen(fields[f]);

			memcpy(s, fields[f], len + 1);
			*dst[f] = s;
			*lens[f] = (uint16_t)len;
			s += len + 1;
		}
		rn->pub.weight = in->weight;
		rn->pub.state = in->state;
	}
	return HR_OK;
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
			rc = ring->pl->node_points(&rn->pub, ring->vnodes_per_weight,
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

/*
 * Numbers the zones so the preference list compares integers: equal
 * numbers for equal zones, the first node of a zone setting its number.
 * A hash table on the zone strings, so that a ring of 100,000 nodes
 * numbers them in one pass rather than a sort.
 */
static int number_zones(hr_ring *ring, hr_error *err)
{
	size_t size = 16, mask;
	uint32_t *slot, zones = 0;	/* node index + 1 of a zone; 0: free */

	while (size < 2 * ring->nnodes)
		size *= 2;
	mask = size - 1;
	slot = calloc(size, sizeof *slot);
	if (!slot)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < ring->nnodes; i++) {
		struct ring_node *rn = &ring->nodes[i];
		size_t h = (size_t)XXH3_64bits(rn->pub.zone, rn->zone_len) & mask;

		for (;; h = (h + 1) & mask) {
			const struct ring_node *o;

			if (!slot[h]) {
				slot[h] = (uint32_t)i + 1;
				rn->zone = zones++;
				break;
			}
			o = &ring->nodes[slot[h] - 1];
			if (o->zone_len == rn->zone_len &&
			    memcmp(o->pub.zone, rn->pub.zone, rn->zone_len) == 0) {
				rn->zone = o->zone;
				break;
			}
		}
	}
	free(slot);
	return HR_OK;
}

static void put_u32(unsigned char **p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		*(*p)++ = (unsigned char)(v >> (8 * i));
}

static void put_str(unsigned char **p, const char *s, size_t len)
{
	*(*p)++ = (unsigned char)len;
	memcpy(*p, s, len);
	*p += len;
}

/* The digest of docs/placement.md: XXH3_64bits over a canonical
 * serialization of the options and the nodes in id order. */
static int compute_digest(hr_ring *ring, hr_error *err)
{
	size_t size = HR__DIGEST_OPENING_MAX + 4;
	unsigned char *buf, *p;

	for (size_t i = 0; i < ring->nnodes; i++) {
		const struct ring_node *rn = &ring->nodes[i];

		size += 3 + rn->id_len + rn->addr_len + rn->zone_len + 8 + 1;
		if (ring->pl->tokens)
			size += 4 + 8 * (size_t)rn->ntokens;
	}
	p = buf = malloc(size);
	if (!buf)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	p += ring->pl->digest_opening(ring, p);
	put_u32(&p, (uint32_t)ring->nnodes);
	for (size_t i = 0; i < ring->nnodes; i++) {
		const struct ring_node *rn = &ring->nodes[i];
		uint64_t bits;

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
				put_u32(&p, (uint32_t)rn->tokens[k]);
				put_u32(&p, (uint32_t)(rn->tokens[k] >> 32));
			}
		}
	}
	ring->digest = XXH3_64bits(buf, (size_t)(p - buf));
	free(buf);
	return HR_OK;
}

/* Builds the ring of valid nodes (at most HR_NODES_MAX) with their tokens
 * (`tokens` parallel to `nodes`, may be NULL), following `prev` (may be
 * NULL). */
static int assemble(const hr_ring *prev, const hr_node *const *nodes,
		    const hr__tokens *const *tokens, size_t n,
		    const hr_ring_options *opts, uint64_t revision,
		    hr__point_hash_fn hash, hr_ring **out, hr_error *err)
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
	 * nodeset's): one pass checks it, where sorting 100,000 ids again is
	 * most of a one-node change's work on the nodes.  Sorted, the only
	 * ids out of order are duplicates. */
	bad = first_unordered(sorted, n);
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
	ring->vnodes_per_weight = hr__vnodes_per_weight(opts);
	ring->maglev_size = opts && opts->maglev_size ? opts->maglev_size :
		HR_MAGLEV_SIZE_DEFAULT;
	ring->pl = pl;
	ring->key_pos = pl->key_pos;
	ring->hash = hash;

	rc = copy_nodes(ring, sorted, err);
	if (!rc)
		rc = copy_tokens(ring, sorted, err);
	free(sorted);
	if (!rc)
		rc = count_points(ring, err);
	if (!rc)
		rc = number_zones(ring, err);
	if (!rc)
		rc = compute_digest(ring, err);
	if (!rc)
		rc = pl->fill_views(ring, prev, err);
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

/* A build from the caller's array of nodes, each checked first. */
static int build_checked(const hr_ring *prev, const hr_node *nodes, size_t n,
			 const hr_ring_options *opts, uint64_t revision,
			 hr__point_hash_fn hash, hr_ring **out, hr_error *err)
{
	const hr_node **order;
	int rc;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "ring output pointer is NULL");
	*out = NULL;
	if (!hash)
		return hr__error_set(err, HR_EINVAL, "point hash is NULL");
	rc = check_nodes(nodes, n, err);
	if (rc)
		return rc;
	order = malloc((n ? n : 1) * sizeof *order);
	if (!order)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		order[i] = &nodes[i];
	rc = assemble(prev, order, NULL, n, opts, revision, hash, out, err);
	free(order);
	return rc;
}

int hr__ring_build_valid(const hr_ring *prev, const hr_node *const *nodes,
			 const hr__tokens *const *tokens, size_t n,
			 const hr_ring_options *opts, uint64_t revision,
			 hr_ring **out, hr_error *err)
{
	if (!out)
		return hr__error_set(err, HR_EINVAL, "ring output pointer is NULL");
	*out = NULL;
	return assemble(prev, nodes, tokens, n, opts, revision,
			prev ? prev->hash : xxh3_hash, out, err);
}

int hr__ring_build_hashed(const hr_node *nodes, size_t n,
			  const hr_ring_options *opts, uint64_t revision,
			  hr__point_hash_fn hash, hr_ring **out, hr_error *err)
{
	return build_checked(NULL, nodes, n, opts, revision, hash, out, err);
}

int hr__ring_derive(const hr_ring *prev, const hr_node *nodes, size_t n,
		    const hr_ring_options *opts, uint64_t revision,
		    hr_ring **out, hr_error *err)
{
	return build_checked(prev, nodes, n, opts, revision,
			     prev ? prev->hash : xxh3_hash, out, err);
}

void hr__ring_options_of(const hr_ring *ring, hr_ring_options *out)
{
	const hr__placement *pl;

	hr_ring_options_init(out);
	out->vnodes_per_weight = ring->vnodes_per_weight;
	for (out->placement = 0; hr__placement_get(out, &pl, NULL) == 0; out->placement++)
		if (pl == ring->pl)
			return;
	out->placement = HR_PLACEMENT_XXH3; /* not reached: every ring has one */
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
	return build_checked(NULL, nodes, n, &o, revision, xxh3_hash, out,
			     err);
}

/* Node i's tokens, checked and sorted into t[i]. */
static int copy_caller_tokens(const hr_node *nodes, const uint64_t *const *tokens,
			      const size_t *ntokens, size_t n,
			      const hr_ring_options *o, hr__tokens *t,
			      hr_error *err)
{
	for (size_t i = 0; i < n; i++) {
		size_t k = ntokens ? ntokens[i] : 0;
		int rc;

		if (!k)
			continue;
		if (o->placement != HR_PLACEMENT_TOKENS)
			return hr__error_set(err, HR_EINVAL,
					     "node \"%.*s\": tokens need HR_PLACEMENT_TOKENS",
					     HR__ID_SHOWN, nodes[i].id);
		rc = hr__tokens_copy(nodes[i].id, tokens[i], k, &t[i], err);
		if (rc)
			return rc;
	}
	return HR_OK;
}

int hr_ring_build_tokens(const hr_node *nodes, const uint64_t *const *tokens,
			 const size_t *ntokens, size_t n,
			 const hr_ring_options *opts, uint64_t revision,
			 hr_ring **out, hr_error *err)
{
	const hr_node **order = NULL;
	const hr__tokens **tp = NULL;
	hr__tokens *t = NULL;
	hr_ring_options o;
	int rc;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "ring output pointer is NULL");
	*out = NULL;
	if (!tokens)
		ntokens = NULL;
	if (tokens && !ntokens)
		return hr__error_set(err, HR_EINVAL, "token counts are NULL");
	rc = hr__ring_options_read(opts, &o, err);
	if (rc)
		return rc;
	rc = check_nodes(nodes, n, err);
	if (rc)
		return rc;
	order = malloc((n ? n : 1) * sizeof *order);
	tp = malloc((n ? n : 1) * sizeof *tp);
	t = calloc(n ? n : 1, sizeof *t);
	if (!order || !tp || !t) {
		rc = hr__error_set(err, HR_ENOMEM, "out of memory");
		goto out;
	}
	rc = copy_caller_tokens(nodes, tokens, ntokens, n, &o, t, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < n; i++) {
		order[i] = &nodes[i];
		tp[i] = &t[i];
	}
	rc = assemble(NULL, order, tp, n, &o, revision, xxh3_hash, out, err);
out:
	for (size_t i = 0; t && i < n; i++)
		hr__tokens_clear(&t[i]);
	free(t);
	free(tp);
	free(order);
	return rc;
}
