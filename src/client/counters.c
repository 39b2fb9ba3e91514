/* SPDX-License-Identifier: MIT */
/* counters.c - a client's per-node lookup counters: per-thread segments,
 * folded by node id (see counters.h); the hot keys are hot_keys.c's. */
#include "counters.h"
#include "clock.h"
#include "ring.h"
#include "sketch.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef hr__count_seg seg;

/* The carries follow the counts' pairs. */
_Static_assert(offsetof(seg, cnt) % sizeof(uint64_t) == 0,
	       "a segment's counts start 8-byte aligned");
/* A flush adds at most HR__COUNT_LOG to a count: far from its wrap. */
_Static_assert(HR__COUNT_LOG <= HR__COUNT_CARRY / 2 &&
	       (HR__COUNT_LOG & (HR__COUNT_LOG - 1)) == 0,
	       "the log is a power of two, short of the carry");


void hr__counters_init(hr__counters *c, unsigned sample, double spread,
		       unsigned replicas)
{
	memset(c, 0, sizeof *c);
	pthread_mutex_init(&c->mu, NULL);
	c->on = true;
	c->sample = sample;
	c->spread = sample ? spread : 0;
	c->replicas = replicas;
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

/* Segments this large are mapped: fresh zero pages, of which only those a
 * thread's lookups touch take memory (a 100,000-node ring's segment is
 * 2.4 MB, mostly carries that never move), where calloc() may zero a
 * block of the heap whole. */
#define SEG_MAPPED ((size_t)64 << 10)

static seg *seg_alloc(size_t nodes)
{
	size_t bytes = offsetof(seg, cnt) + 2 * (nodes + 1) *
		       (sizeof(uint32_t) + sizeof(uint64_t));
	seg *s;

	if (bytes < SEG_MAPPED)
		s = calloc(1, bytes);
	else if ((s = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0)) == MAP_FAILED)
		s = NULL;
	if (s)
		s->bytes = bytes;
	return s;
}

static void seg_free(seg *s)
{
	hr_ring_release(s->ring);
	if (s->bytes < SEG_MAPPED)
		free(s);
	else
		munmap(s, s->bytes);
}

/* Every block with its segments; with `locks`, their mutexes destroyed. */
static void free_blocks(hr__counters *c, bool locks)
{
	struct hr__count_block *b = c->blocks, *nb;

	for (; b; b = nb) {
		seg *s = b->head, *ns;

		for (; s; s = ns) {
			ns = s->next;
			seg_free(s);
		}
		nb = b->next;
		if (locks)
			pthread_mutex_destroy(&b->mu);
		free(b);
	}
	c->blocks = NULL;
}

void hr__counters_destroy(hr__counters *c)
{
	free_blocks(c, true);
	free(c->buf);
	tally_free(&c->totals);
	pthread_mutex_destroy(&c->mu);
}

bool hr__counters_destroy_in_child(hr__counters *c)
{
	/* Held at the fork: a fold or a read was changing the lists or the
	 * totals, which stay as the fork left them. */
	if (pthread_mutex_trylock(&c->mu))
		return false;
	pthread_mutex_unlock(&c->mu);
	/* Each list is whole without the lock (pushed with one store), and
	 * a block's lock guards only the windows inside it: a sample under
	 * way at the fork left it held, so it is freed, not destroyed. */
	free_blocks(c, false);
	free(c->buf);
	tally_free(&c->totals);
	pthread_mutex_destroy(&c->mu);
	return true;
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

/*
 * The slots of a segment's log not yet in its counts, as a reader takes
 * them: sorted, with the `seq` they go with (the counts read while `seq`
 * is still q do not hold them; once it moved, the log is taken again).
 */
struct pending {
	uint32_t q;
	size_t n, at;		/* at: the first slot not below the one read */
	uint32_t slot[HR__COUNT_LOG];
};

/*
 * Takes the log of `s`, the owner maybe logging and flushing.  The
 * sequence lock without fences (which ThreadSanitizer does not model): a
 * slot read here that the owner wrote after a flush (release, after the
 * flush's end of `seq`) makes the second read of `seq` see the flush, and
 * the log is read again.  Plain moves on x86.
 */
static void pending_take(const seg *s, struct pending *p, uint32_t from_slot)
{
	uint32_t q, f, k;

	do {
		q = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		f = __atomic_load_n(&s->flushed, __ATOMIC_ACQUIRE);
		k = __atomic_load_n(&s->logged, __ATOMIC_ACQUIRE);
		p->n = 0;
		/* A torn pair (a flush between the loads) is read again. */
		for (uint32_t j = f; j != k && p->n < HR__COUNT_LOG; j++)
			p->slot[p->n++] = __atomic_load_n(&s->log[j % HR__COUNT_LOG],
							  __ATOMIC_ACQUIRE);
	} while ((q & 1) || k - f > HR__COUNT_LOG ||
		 q != __atomic_load_n(&s->seq, __ATOMIC_RELAXED));
	p->q = q;
	/* Insertion sort: at most HR__COUNT_LOG slots. */
	for (size_t i = 1; i < p->n; i++) {
		uint32_t v = p->slot[i];
		size_t j = i;

		for (; j > 0 && p->slot[j - 1] > v; j--)
			p->slot[j] = p->slot[j - 1];
		p->slot[j] = v;
	}
	for (p->at = 0; p->at < p->n && p->slot[p->at] < from_slot; p->at++)
		;
}

/* How many of the pending slots are `slot` (slots asked in ascending
 * order). */
static uint64_t pending_of(struct pending *p, uint32_t slot)
{
	uint64_t n = 0;

	while (p->at < p->n && p->slot[p->at] < slot)
		p->at++;
	for (size_t i = p->at; i < p->n && p->slot[i] == slot; i++)
		n++;
	return n;
}

/*
 * Count `i` of `s` (2 * slot + view) with its carry, and for a write
 * count the log's lookups of its slot: a 64-bit value (modular; see
 * counters.h).  Any thread; the owner may be counting.  Read while `seq`
 * is p->q, the log's: a count or carry read here that a carry or a flush
 * wrote (release), or that the owner wrote after one (the same thread's
 * later stores continue its release sequence), makes the second read of
 * `seq` see it begun, and the log is taken again.
 */
static uint64_t seg_value(const seg *s, size_t i, struct pending *p)
{
	uint32_t lo;
	uint64_t hi;

	for (;;) {
		lo = __atomic_load_n(&s->cnt[i], __ATOMIC_ACQUIRE);
		hi = __atomic_load_n(&s->carry[i], __ATOMIC_ACQUIRE);
		if (p->q == __atomic_load_n(&s->seq, __ATOMIC_RELAXED))
			break;
		pending_take(s, p, (uint32_t)(i / 2));
	}
	hi += (uint64_t)(int64_t)(int32_t)lo;
	return i % 2 == HR_VIEW_WRITE ? hi + pending_of(p, (uint32_t)(i / 2)) : hi;
}

/* Moves `d` (+-HR__COUNT_CARRY) of count `i`, `v` now, into its carry;
 * `seq` is odd. */
static void carry_move(seg *s, size_t i, uint32_t v, uint32_t d)
{
	uint64_t hi = __atomic_load_n(&s->carry[i], __ATOMIC_RELAXED);

	__atomic_store_n(&s->cnt[i], v - d, __ATOMIC_RELEASE);
	__atomic_store_n(&s->carry[i], hi + (uint64_t)(int64_t)(int32_t)d,
			 __ATOMIC_RELEASE);
}

void hr__count_carry(seg *s, size_t i, uint32_t v)
{
	uint32_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
	/* v is at least HR__COUNT_CARRY away from 0 one way or the other. */
	uint32_t d = (int32_t)v > 0 ? HR__COUNT_CARRY : -HR__COUNT_CARRY;

	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELAXED);
	carry_move(s, i, v, d);
	__atomic_store_n(&s->seq, q + 2, __ATOMIC_RELEASE);
}

/* Adds the log's slots into the write counts (carrying those that need
 * it) and empties it. */
static void count_flush(seg *s)
{
	uint32_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
	uint32_t k = __atomic_load_n(&s->flushed, __ATOMIC_RELAXED);
	uint32_t end = __atomic_load_n(&s->logged, __ATOMIC_RELAXED);

	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELAXED);
	for (; k != end; k++) {
		size_t i = 2 * (size_t)s->log[k % HR__COUNT_LOG] + HR_VIEW_WRITE;
		uint32_t v = __atomic_load_n(&s->cnt[i], __ATOMIC_RELAXED) + 1;

		if (__builtin_expect(v + HR__COUNT_CARRY >= 2 * HR__COUNT_CARRY, 0))
			carry_move(s, i, v, (int32_t)v > 0 ? HR__COUNT_CARRY :
				   -HR__COUNT_CARRY);
		else
			__atomic_store_n(&s->cnt[i], v, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&s->flushed, end, __ATOMIC_RELEASE);
	__atomic_store_n(&s->seq, q + 2, __ATOMIC_RELEASE);
}

/* Lookups from one sample to the next: 1 to 2 * sample - 1, uniform (a
 * mean of `sample`). */
static uint32_t sample_gap(seg *s)
{
	uint32_t x = s->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	s->rng = x;
	return 1 + x % (2 * s->sample - 1);
}

/* The next `due` after `k`: the log's end or the next sample, whichever
 * comes first; every lookup with flags. */
static void set_due(seg *s, uint32_t k)
{
	uint32_t d = __atomic_load_n(&s->flushed, __ATOMIC_RELAXED) + HR__COUNT_LOG - k;

	if (s->sample && s->sample_at - k < d)
		d = s->sample_at - k;
	s->due = k + (s->flags ? 1 : d);
}

bool hr__count_due(seg *s)
{
	uint32_t k = __atomic_load_n(&s->logged, __ATOMIC_RELAXED);
	bool sampled = false;

	if (k - __atomic_load_n(&s->flushed, __ATOMIC_RELAXED) >= HR__COUNT_LOG)
		count_flush(s);
	if (s->sample && k == s->sample_at) {
		sampled = true;
		s->sample_at = k + sample_gap(s);
	}
	set_due(s, k);
	return sampled;
}

/* Adds `ring`'s ids and, unless `s` is NULL, its counts (those of `s`,
 * whose ring `ring` is; with shared views, the read counts are
 * corrections to the write counts). */
static int tally_add(hr__tally *t, const hr_ring *ring, const seg *s)
{
	size_t m = hr_ring_node_count(ring), i = 0;
	int rc = tally_grow(t, ring);
	bool shared = s && !(s->flags & HR__SEG_READS);
	struct pending p;

	if (rc || !s)
		return rc;
	pending_take(s, &p, 0);
	for (size_t j = 0; j < m; j++) {
		const char *id = hr_ring_node(ring, j)->id;

		while (strcmp(t->e[i].id, id) < 0)
			i++;
		uint64_t w = seg_value(s, 2 * j + HR_VIEW_WRITE, &p);

		t->e[i].n[0] += w;
		t->e[i].n[1] += seg_value(s, 2 * j + HR_VIEW_READ, &p) + (shared ? w : 0);
	}
	return 0;
}

/* Folds the sealed segments after `head` into the totals; under the lock.
 * A segment that cannot be folded (no memory) stays for the next fold. */
static void fold_sealed(hr__counters *c, seg *head)
{
	while (head->next) {
		seg *s = head->next;

		if (tally_add(&c->totals, s->ring, s))
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
	b = calloc(1, sizeof *b + (c->sample ? 2 * sizeof b->win[0] : 0));
	if (!b)
		return NULL;
	b->thread = thread;
	b->c = c;
	pthread_mutex_init(&b->mu, NULL);
	if (c->sample) {
		hr__sketch_clear(&b->win[0]);
		hr__sketch_clear(&b->win[1]);
	}
	b->next = __atomic_load_n(&c->blocks, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&c->blocks, &b->next, b, true,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	return b;
}

void hr__counters_grow_buf(hr__counters *c)
{
	size_t need = 0;
	void *p;

	if (c->spread <= 0)
		return;
	for (struct hr__count_block *b = __atomic_load_n(&c->blocks, __ATOMIC_ACQUIRE);
	     b; b = b->next)
		need += 2 * HR__SKETCH_CAP;
	if (need <= c->buf_cap || !(p = realloc(c->buf, need * sizeof *c->buf)))
		return;
	c->buf = p;
	c->buf_cap = need;
}

hr__count_seg *hr__counters_switch(hr__counters *c, const hr_ring *ring,
				   const void *thread)
{
	struct hr__count_block *b;
	seg *head, *s;
	size_t nodes;

	if (!ring || !__atomic_load_n(&c->on, __ATOMIC_RELAXED))
		return NULL;
	b = block_of(c, thread);
	if (!b)
		return NULL;
	/* Only this thread stores the head. */
	head = __atomic_load_n(&b->head, __ATOMIC_RELAXED);
	if (head && head->ring == ring)
		return head;
	nodes = hr_ring_node_count(ring);
	/* The counts, then their carries (8-byte aligned: see the top). */
	s = seg_alloc(nodes);
	if (!s)
		return NULL;
	s->carry = (uint64_t *)(s->cnt + 2 * (nodes + 1));
	s->flags = (hr__ring_views_shared(ring) ? 0 : HR__SEG_READS) |
		   (c->spread > 0 ? HR__SEG_SPREAD : 0);
	s->sample = c->sample;
	/* Any odd seed of the segment's own. */
	s->rng = (uint32_t)((uintptr_t)s >> 4) * 0x9e3779b9u | 1;
	s->sample_at = s->sample ? sample_gap(s) : 0;
	set_due(s, 0);
	s->hot = &c->hot;
	s->replicas = c->replicas;
	s->block = b;
	s->ring = hr_ring_retain((hr_ring *)ring);
	s->nodes = nodes;
	s->next = head;
	/* Seals `head`: readers see its last counts through the release. */
	__atomic_store_n(&b->head, s, __ATOMIC_RELEASE);
	if (pthread_mutex_trylock(&c->mu) == 0) {
		fold_sealed(c, s);
		hr__counters_grow_buf(c);
		pthread_mutex_unlock(&c->mu);
	}
	return s;
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
			rc = tally_add(out, b->seen->ring, b->seen);
	if (!rc && ring)
		rc = tally_add(out, ring, NULL);
	if (rc)
		hr__counters_read_end(c, out);
	return rc;
}

void hr__counters_read_end(hr__counters *c, hr__tally *out)
{
	tally_free(out);
	pthread_mutex_unlock(&c->mu);
}
