/* SPDX-License-Identifier: MIT */
/* nodeset.c - a sorted array of records: lookups by binary search, and the
 * ring builder gets the nodes already in id order. */
#include "nodeset.h"

#include "error.h"
#include "node.h"
#include "ring_build.h"

#include <stdlib.h>
#include <string.h>

/* Index of `id`, or of where it would go (with *found = 0). */
static size_t find(const hr__nodeset *s, const char *id, int *found)
{
	size_t lo = 0, hi = s->n;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->m[mid].rec.id, id);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int hr__nodeset_put(hr__nodeset *s, hr__record *rec, int64_t create_revision,
		    int64_t mod_revision)
{
	hr__tokens none = { 0 };

	return hr__nodeset_put_tokens(s, rec, &none, create_revision, mod_revision);
}

int hr__nodeset_put_tokens(hr__nodeset *s, hr__record *rec, hr__tokens *tokens,
			   int64_t create_revision, int64_t mod_revision)
{
	int found;
	size_t i = find(s, rec->id, &found);

	if (found) {
		hr__record_clear(&s->m[i].rec);
		hr__tokens_clear(&s->m[i].tokens);
		hr__ring_stream_spoil(s->stream);
	} else {
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 16;
			hr__member *m = realloc(s->m, cap * sizeof *m);
			if (!m)
				return HR_ENOMEM;
			s->m = m;
			s->cap = cap;
		}
		memmove(&s->m[i + 1], &s->m[i], (s->n - i) * sizeof *s->m);
		s->n++;
	}
	s->m[i] = (hr__member){ *rec, *tokens, create_revision, mod_revision, false };
	if (!found && i == s->n - 1)
		hr__ring_stream_add(s->stream, &s->m[i].rec);
	else if (!found)
		hr__ring_stream_spoil(s->stream);
	memset(rec, 0, sizeof *rec);
	memset(tokens, 0, sizeof *tokens);
	return 0;
}

int hr__nodeset_remove(hr__nodeset *s, const char *id)
{
	int found;
	size_t i = find(s, id, &found);

	if (!found)
		return 0;
	hr__record_clear(&s->m[i].rec);
	hr__tokens_clear(&s->m[i].tokens);
	memmove(&s->m[i], &s->m[i + 1], (s->n - i - 1) * sizeof *s->m);
	s->n--;
	hr__ring_stream_spoil(s->stream);
	return 1;
}

void hr__nodeset_clear(hr__nodeset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		hr__record_clear(&s->m[i].rec);
		hr__tokens_clear(&s->m[i].tokens);
	}
	free(s->m);
	s->m = NULL;
	s->n = s->cap = 0;
	hr__ring_stream_free(s->stream);
	s->stream = NULL;
}

/* ---- admission ------------------------------------------------------------ */

/* Why a member is not in the ring. */
enum verdict { TAKEN = 0, OWN_POINTS, RING_POINTS, RING_NODES };

/* Members in admission order: oldest key first, ties (one transaction
 * creates several keys at one revision) by id. */
static int cmp_age(const void *a, const void *b)
{
	const hr__member *x = *(const hr__member *const *)a;
	const hr__member *y = *(const hr__member *const *)b;

	if (x->create_revision != y->create_revision)
		return x->create_revision < y->create_revision ? -1 : 1;
	return strcmp(x->rec.id, y->rec.id);
}

/*
 * Fills verdict[] for the members: each one's own points first, then, only
 * when the others do not all fit, the order of age.  `points` is scratch
 * for n counts.
 */
static int admit(const hr__nodeset *s, const hr_ring_options *opts,
		 unsigned *points, unsigned char *verdict, hr_error *err)
{
	size_t max_nodes = s->max_nodes ? s->max_nodes : HR_NODES_MAX;
	size_t max_points = s->max_points ? s->max_points : HR_POINTS_MAX;
	size_t nodes = 0, total = 0;
	const hr__member **order;

	for (size_t i = 0; i < s->n; i++) {
		verdict[i] = hr__node_points(&s->m[i].rec, opts, &points[i], NULL) ?
			OWN_POINTS : TAKEN;
		/* With the tokens placement a node's tokens are its points. */
		if (s->m[i].tokens.n && opts && opts->placement == HR_PLACEMENT_TOKENS) {
			verdict[i] = TAKEN;
			points[i] = (unsigned)s->m[i].tokens.n;
		}
		if (verdict[i] == TAKEN) {
			nodes++;
			total += points[i];
		}
	}
	if (nodes <= max_nodes && total <= max_points)
		return HR_OK;

	order = malloc(s->n * sizeof *order);
	if (!order)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < s->n; i++)
		order[i] = &s->m[i];
	qsort(order, s->n, sizeof *order, cmp_age);
	nodes = total = 0;
	for (size_t k = 0; k < s->n; k++) {
		size_t i = (size_t)(order[k] - s->m);

		if (verdict[i] != TAKEN)
			continue;
		if (nodes == max_nodes) {
			verdict[i] = RING_NODES;
		} else if (points[i] > max_points - total) {
			verdict[i] = RING_POINTS;
		} else {
			nodes++;
			total += points[i];
		}
	}
	free(order);
	return HR_OK;
}

/* Tells `left_out` why member i is not in the ring. */
static void report(const hr__nodeset *s, size_t i, enum verdict v,
		   unsigned points, const hr_ring_options *opts,
		   hr__left_out_fn left_out, void *userdata)
{
	const hr__member *m = &s->m[i];
	const hr_node *nd = &m->rec;
	hr_error why = { 0 };

	if (v == OWN_POINTS)
		hr__node_points(nd, opts, &points, &why);
	else if (v == RING_POINTS)
		hr__error_set(&why, HR_ELIMIT,
			      "node \"%.*s\": left out: its %u points would take the ring over its limit of %zu points; records are taken oldest first (by create_revision)",
			      HR__ID_SHOWN, nd->id, points,
			      s->max_points ? s->max_points : (size_t)HR_POINTS_MAX);
	else
		hr__error_set(&why, HR_ELIMIT,
			      "node \"%.*s\": left out: the ring is at its limit of %zu nodes; records are taken oldest first (by create_revision)",
			      HR__ID_SHOWN, nd->id,
			      s->max_nodes ? s->max_nodes : (size_t)HR_NODES_MAX);
	left_out(userdata, m, &why);
}

int hr__nodeset_derive(hr__nodeset *s, const hr_ring *prev,
		       const hr_ring_options *opts, uint64_t revision,
		       hr__left_out_fn left_out, void *userdata, hr_ring **out,
		       hr_error *err)
{
	size_t n = s->n ? s->n : 1, k = 0;
	const hr_node **nodes = malloc(n * sizeof *nodes);
	const hr__tokens **tokens = malloc(n * sizeof *tokens);
	unsigned *points = malloc(n * sizeof *points);
	unsigned char *verdict = malloc(n);
	int rc;

	if (out)
		*out = NULL;
	rc = nodes && tokens && points && verdict ? admit(s, opts, points, verdict, err) :
		hr__error_set(err, HR_ENOMEM, "out of memory");
	if (rc)
		goto done;
	for (size_t i = 0; i < s->n; i++)
		if (verdict[i] == TAKEN) {
			tokens[k] = &s->m[i].tokens;
			nodes[k++] = &s->m[i].rec;
		}
	/* The records were checked as they entered the set, which keeps
	 * them in id order. */
	rc = hr__ring_build_valid(prev, nodes, tokens, k, true, opts, revision, s->stream,
				  out, err);
	if (rc)
		goto done;
	for (size_t i = 0; i < s->n; i++) {
		bool was = s->m[i].left_out;

		s->m[i].left_out = verdict[i] != TAKEN;
		if (s->m[i].left_out && !was && left_out)
			report(s, i, verdict[i], points[i], opts, left_out, userdata);
	}
done:
	/* Placed for this build only. */
	hr__ring_stream_free(s->stream);
	s->stream = NULL;
	free(verdict);
	free(points);
	free(tokens);
	free(nodes);
	return rc;
}

int hr__nodeset_build(hr__nodeset *s, const hr_ring_options *opts,
		      uint64_t revision, hr_ring **out, hr_error *err)
{
	return hr__nodeset_derive(s, NULL, opts, revision, NULL, NULL, out, err);
}
