/* nodeset.c - a sorted array of records: lookups by binary search, and the
 * ring builder gets the nodes already in id order. */
#include "nodeset.h"

#include "error.h"
#include "ring.h"

#include <stdlib.h>
#include <string.h>

/* Index of `id`, or of where it would go (with *found = 0). */
static size_t find(const hr__nodeset *s, const char *id, int *found)
{
	size_t lo = 0, hi = s->n;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->recs[mid].id, id);
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

int hr__nodeset_put(hr__nodeset *s, hr__record *rec)
{
	int found;
	size_t i = find(s, rec->id, &found);

	if (found) {
		hr__record_clear(&s->recs[i]);
	} else {
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 16;
			hr__record *r = realloc(s->recs, cap * sizeof *r);
			if (!r)
				return HR_ENOMEM;
			s->recs = r;
			s->cap = cap;
		}
		memmove(&s->recs[i + 1], &s->recs[i], (s->n - i) * sizeof *s->recs);
		s->n++;
	}
	s->recs[i] = *rec;
	memset(rec, 0, sizeof *rec);
	return 0;
}

int hr__nodeset_remove(hr__nodeset *s, const char *id)
{
	int found;
	size_t i = find(s, id, &found);

	if (!found)
		return 0;
	hr__record_clear(&s->recs[i]);
	memmove(&s->recs[i], &s->recs[i + 1], (s->n - i - 1) * sizeof *s->recs);
	s->n--;
	return 1;
}

void hr__nodeset_clear(hr__nodeset *s)
{
	for (size_t i = 0; i < s->n; i++)
		hr__record_clear(&s->recs[i]);
	free(s->recs);
	memset(s, 0, sizeof *s);
}

int hr__nodeset_build(const hr__nodeset *s, const hr_ring_options *opts,
		      uint64_t revision, hr_ring **out, hr_error *err)
{
	return hr__nodeset_derive(s, NULL, opts, revision, out, err);
}

int hr__nodeset_derive(const hr__nodeset *s, const hr_ring *prev,
		       const hr_ring_options *opts, uint64_t revision,
		       hr_ring **out, hr_error *err)
{
	hr_node *nodes = malloc((s->n ? s->n : 1) * sizeof *nodes);
	int rc;

	if (!nodes)
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	for (size_t i = 0; i < s->n; i++) {
		nodes[i].id = s->recs[i].id;
		nodes[i].addr = s->recs[i].addr;
		nodes[i].zone = s->recs[i].zone;
		nodes[i].weight = s->recs[i].weight;
		nodes[i].state = s->recs[i].state;
	}
	rc = hr__ring_derive(prev, nodes, s->n, opts, revision, out, err);
	free(nodes);
	return rc;
}
