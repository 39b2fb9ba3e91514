/* counters.c - a client's per-node lookup counters: per-thread segments,
 * folded by node id (see counters.h). */
#include "counters.h"
#include "ring.h"

#include <stdlib.h>
#include <string.h>

/* One thread's counts on one ring. */
struct seg {
	struct seg *next;	/* older; under the lock once published */
	hr_ring *ring;		/* a counted reference */
	size_t nodes;
	bool shared;		/* one view array: read counts are the write
				   counts (only those are kept) */
	uint64_t cnt[];		/* 2 * nodes: write, read per slot */
};

struct hr__count_block {
	struct hr__count_block *next;	/* set before the push */
	const void *thread;		/* its thread cache; compared only */
	struct seg *head;		/* atomic; the thread's only writer */
	struct seg *seen;		/* the head a read folded up to; under
					   the lock */
};

void hr__counters_init(hr__counters *c)
{
	memset(c, 0, sizeof *c);
	pthread_mutex_init(&c->mu, NULL);
	c->on = true;
	c->totals.own = true;
}

static void tally_free(hr__tally *t)
{
	if (t->own)
		for (size_t i = 0; i < t->n; i++)
			free((char *)t->e[i].id);
	free(t->e);
	t->e = NULL;
	t->n = t->cap = 0;
}

static void seg_free(struct seg *s)
{
	hr_ring_release(s->ring);
	free(s);
}

void hr__counters_destroy(hr__counters *c)
{
	struct hr__count_block *b = c->blocks, *nb;

	for (; b; b = nb) {
		struct seg *s = b->head, *ns;

		for (; s; s = ns) {
			ns = s->next;
			seg_free(s);
		}
		nb = b->next;
		free(b);
	}
	c->blocks = NULL;
	tally_free(&c->totals);
	pthread_mutex_destroy(&c->mu);
}

void hr__counters_enable(hr__counters *c, bool on)
{
	__atomic_store_n(&c->on, on, __ATOMIC_RELAXED);
}

/* The ids of `ring` that `t` lacks, in id order, into miss[] (NULL:
 * only counted); returns how many. */
static size_t tally_missing(const hr__tally *t, const hr_ring *ring,
			    const char **miss)
{
	size_t m = hr_ring_node_count(ring), fresh = 0, i = 0;

	for (size_t j = 0; j < m; j++) {
		const char *id = hr_ring_node(ring, j)->id;
		int cmp = 1;

		while (i < t->n && (cmp = strcmp(t->e[i].id, id)) < 0)
			i++;
		if (i == t->n || cmp != 0) {
			if (miss)
				miss[fresh] = id;
			fresh++;
		}
	}
	return fresh;
}

/*
 * Adds the ids of `ring` that `t` lacks (copies if the tally owns its
 * ids): one merge of two id-ordered lists into a new array.  HR_ENOMEM
 * leaves `t` as it was.
 */
static int tally_grow(hr__tally *t, const hr_ring *ring)
{
	size_t fresh = tally_missing(t, ring, NULL), n, i = 0, j = 0, k;
	struct hr__tally_entry *e;
	const char **miss;

	if (!fresh)
		return 0;
	n = t->n + fresh;
	e = malloc(n * sizeof *e);
	miss = malloc(fresh * sizeof *miss);
	if (!e || !miss)
		goto fail;
	tally_missing(t, ring, miss);
	for (; t->own && j < fresh; j++)
		if (!(miss[j] = strdup(miss[j])))
			goto fail;
	for (k = 0, j = 0; k < n; k++) {
		if (j == fresh || (i < t->n && strcmp(t->e[i].id, miss[j]) < 0))
			e[k] = t->e[i++];
		else
			e[k] = (struct hr__tally_entry){ miss[j++], { 0, 0 } };
	}
	free(miss);
	free(t->e);
	t->e = e;
	t->n = t->cap = n;
	return 0;
fail:
	while (t->own && miss && j-- > 0)
		free((char *)miss[j]);
	free(miss);
	free(e);
	return HR_ENOMEM;
}

/* Adds `ring`'s ids and, unless `cnt` is NULL, its counts (2 per slot;
 * with `shared` views, the write counts in both). */
static int tally_add(hr__tally *t, const hr_ring *ring, const uint64_t *cnt,
		     bool shared)
{
	size_t m = hr_ring_node_count(ring), i = 0;
	int rc = tally_grow(t, ring);

	if (rc || !cnt)
		return rc;
	for (size_t j = 0; j < m; j++) {
		const char *id = hr_ring_node(ring, j)->id;

		while (strcmp(t->e[i].id, id) < 0)
			i++;
		uint64_t w = __atomic_load_n(&cnt[2 * j], __ATOMIC_RELAXED);

		t->e[i].n[0] += w;
		t->e[i].n[1] += shared ? w : __atomic_load_n(&cnt[2 * j + 1], __ATOMIC_RELAXED);
	}
	return 0;
}

/* Folds the sealed segments after `head` into the totals; under the lock.
 * A segment that cannot be folded (no memory) stays for the next fold. */
static void fold_sealed(hr__counters *c, struct seg *head)
{
	while (head->next) {
		struct seg *s = head->next;

		if (tally_add(&c->totals, s->ring, s->cnt, s->shared))
			return;
		head->next = s->next;
		seg_free(s);
	}
}

static struct hr__count_block *block_of(hr__counters *c, const void *thread)
{
	struct hr__count_block *b = __atomic_load_n(&c->blocks, __ATOMIC_ACQUIRE);

	for (; b; b = b->next)
		if (b->thread == thread)
			return b;
	b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->thread = thread;
	b->next = __atomic_load_n(&c->blocks, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&c->blocks, &b->next, b, true,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	return b;
}

uint64_t *hr__counters_switch(hr__counters *c, const hr_ring *ring,
			      const void *thread)
{
	struct hr__count_block *b;
	struct seg *head, *s;
	size_t nodes;

	if (!ring || !__atomic_load_n(&c->on, __ATOMIC_RELAXED))
		return NULL;
	b = block_of(c, thread);
	if (!b)
		return NULL;
	/* Only this thread stores the head. */
	head = __atomic_load_n(&b->head, __ATOMIC_RELAXED);
	if (head && head->ring == ring)
		return head->cnt;
	nodes = hr_ring_node_count(ring);
	s = calloc(1, sizeof *s + 2 * nodes * sizeof s->cnt[0]);
	if (!s)
		return NULL;
	s->ring = hr_ring_retain((hr_ring *)ring);
	s->nodes = nodes;
	s->shared = hr__ring_views_shared(ring);
	s->next = head;
	/* Seals `head`: readers see its last counts through the release. */
	__atomic_store_n(&b->head, s, __ATOMIC_RELEASE);
	if (pthread_mutex_trylock(&c->mu) == 0) {
		fold_sealed(c, s);
		pthread_mutex_unlock(&c->mu);
	}
	return s->cnt;
}

int hr__counters_read(hr__counters *c, const hr_ring *ring, hr__tally *out)
{
	struct hr__count_block *blocks;
	int rc = 0;

	memset(out, 0, sizeof *out);
	pthread_mutex_lock(&c->mu);
	blocks = __atomic_load_n(&c->blocks, __ATOMIC_ACQUIRE);
	/* Each block's head is read once: the one folded up to is the one
	 * counted as live, though its thread may seal it meanwhile (the next
	 * fold takes it). */
	for (struct hr__count_block *b = blocks; b; b = b->next) {
		b->seen = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
		if (b->seen)
			fold_sealed(c, b->seen);
	}
	/* The totals, then each thread's live segment, with ids borrowed
	 * from the totals and the segments' rings: a segment is freed only
	 * by a fold, under the lock held until hr__counters_read_end(). */
	if (c->totals.n) {
		out->e = malloc(c->totals.n * sizeof *out->e);
		if (!out->e)
			rc = HR_ENOMEM;
		else
			memcpy(out->e, c->totals.e, c->totals.n * sizeof *out->e);
		out->n = out->cap = c->totals.n;
	}
	for (struct hr__count_block *b = blocks; b && !rc; b = b->next)
		if (b->seen)
			rc = tally_add(out, b->seen->ring, b->seen->cnt, b->seen->shared);
	if (!rc && ring)
		rc = tally_add(out, ring, NULL, false);
	if (rc)
		hr__counters_read_end(c, out);
	return rc;
}

void hr__counters_read_end(hr__counters *c, hr__tally *out)
{
	tally_free(out);
	pthread_mutex_unlock(&c->mu);
}
