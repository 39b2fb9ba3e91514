/* SPDX-License-Identifier: MIT */
/* hot_keys.c - a client's hot keys: each thread's sampled lookups in two
 * Space-Saving windows, merged into rates per key when read, and the table
 * of keys whose reads are spread (see counters.h). */
#include "counters.h"
#include "clock.h"
#include "sketch.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef hr__count_seg seg;

/* ---- hot keys ------------------------------------------------------------ */

/* Starts a new window when the current one is HR__HOT_WINDOW_MS old; a
 * thread that sampled nothing for two windows starts afresh.  Under b->mu. */
static void rotate(struct hr__count_block *b, int64_t now)
{
	if (!b->start) {
		b->start = now;
		return;
	}
	if (now - b->start < HR__HOT_WINDOW_MS)
		return;
	if (now - b->start >= 2 * HR__HOT_WINDOW_MS) {
		hr__sketch_clear(&b->win[1 - b->cur]);
		b->prev_start = 0;
	} else {
		b->prev_start = b->start;
	}
	b->cur = 1 - b->cur;
	hr__sketch_clear(&b->win[b->cur]);
	b->start = now;
}


struct merge {
	struct hot *h;
	size_t n, cap;
	bool fixed;		/* h is the client's buffer: never grown */
	double total;		/* every thread's lookups per second */
};

static int merge_add(struct merge *m, const hr__sketch_entry *e, double per)
{
	if (m->n == m->cap && m->fixed)
		return 0;	/* a block newer than the buffer: next time */
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct hot *h = realloc(m->h, cap * sizeof *h);

		if (!h)
			return HR_ENOMEM;
		m->h = h;
		m->cap = cap;
	}
	struct hot *h = &m->h[m->n++];

	h->id = e->id;
	h->rate = (double)e->count * per;
	h->err = (double)e->err * per;
	h->len = e->len;
	memcpy(h->key, e->key, e->len < HR_HOT_KEY_MAX ? e->len : HR_HOT_KEY_MAX);
	return 0;
}

/*
 * A block's windows into the merge, as rates: the samples of the windows
 * still in reach (the current one, and the previous one while the current
 * is younger than a window) over the time they cover, each sample standing
 * for `sample` lookups.  Under b->mu.
 */
static int merge_block(struct merge *m, const struct hr__count_block *b,
		       unsigned sample, int64_t now)
{
	const hr__sketch *w[2] = { &b->win[b->cur], NULL };
	int64_t from = b->start;
	uint64_t samples;
	double per;
	int rc = 0;

	if (!b->start || now - b->start >= 2 * HR__HOT_WINDOW_MS)
		return 0;
	if (now - b->start < HR__HOT_WINDOW_MS && b->prev_start) {
		w[1] = &b->win[1 - b->cur];
		from = b->prev_start;
	}
	samples = w[0]->total + (w[1] ? w[1]->total : 0);
	/* A window younger than a second is taken as a second long: its
	 * rate would be noise. */
	per = (double)sample * 1000.0 / (double)(now - from > 1000 ? now - from : 1000);
	m->total += (double)samples * per;
	for (int k = 0; k < 2 && !rc; k++)
		for (size_t i = 0; w[k] && i < w[k]->n && !rc; i++)
			rc = merge_add(m, &w[k]->e[i], per);
	return rc;
}

static int by_id(const void *a, const void *b)
{
	uint64_t x = ((const struct hot *)a)->id, y = ((const struct hot *)b)->id;

	return (x > y) - (x < y);
}

static int by_rate(const void *a, const void *b)
{
	const struct hot *x = a, *y = b;

	if (x->rate != y->rate)
		return x->rate < y->rate ? 1 : -1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Heapsort: in place, for glibc's qsort() may allocate, and a lookup's
 * refresh must not. */
static void hot_swap(struct hot *a, struct hot *b)
{
	struct hot t = *a;

	*a = *b;
	*b = t;
}

static void sift(struct hot *h, size_t i, size_t n,
		 int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < n && cmp(&h[l], &h[m]) > 0)
			m = l;
		if (l + 1 < n && cmp(&h[l + 1], &h[m]) > 0)
			m = l + 1;
		if (m == i)
			return;
		hot_swap(&h[i], &h[m]);
		i = m;
	}
}

static void sort_hot(struct hot *h, size_t n,
		     int (*cmp)(const void *, const void *))
{
	for (size_t i = n / 2; i-- > 0;)
		sift(h, i, n, cmp);
	for (size_t end = n; end > 1; end--) {
		hot_swap(&h[0], &h[end - 1]);
		sift(h, 0, end - 1, cmp);
	}
}

/* Every block's windows merged by key, most frequent first.  `wait`:
 * locks each block and allocates (a reader); else tries them, into the
 * client's buffer (a lookup: busy blocks are left out this time).  Under
 * c->mu. */
static int merge_all(hr__counters *c, struct merge *m, bool wait)
{
	int64_t now = hr__now_ms();
	size_t k = 0;
	int rc = 0;

	memset(m, 0, sizeof *m);
	if (!wait)
		*m = (struct merge){ .h = c->buf, .cap = c->buf_cap, .fixed = true };
	for (struct hr__count_block *b = __atomic_load_n(&c->blocks, __ATOMIC_ACQUIRE);
	     b && !rc; b = b->next) {
		if (wait)
			pthread_mutex_lock(&b->mu);
		else if (pthread_mutex_trylock(&b->mu))
			continue;
		rc = merge_block(m, b, c->sample, now);
		pthread_mutex_unlock(&b->mu);
	}
	if (rc) {
		if (!m->fixed)
			free(m->h);
		return rc;
	}
	sort_hot(m->h, m->n, by_id);
	for (size_t i = 0; i < m->n; i++) {
		if (k && m->h[k - 1].id == m->h[i].id) {
			m->h[k - 1].rate += m->h[i].rate;
			m->h[k - 1].err += m->h[i].err;
		} else {
			m->h[k++] = m->h[i];
		}
	}
	m->n = k;
	sort_hot(m->h, m->n, by_rate);
	return 0;
}

/* The keys above the spread threshold into the table lookups do not
 * probe, then that table is flipped in.  Under c->mu. */
static void hot_publish(hr__counters *c, const struct merge *m)
{
	int next = 1 - __atomic_load_n(&c->hot.cur, __ATOMIC_RELAXED);
	uint64_t *t = c->hot.slot[next];
	size_t taken = 0;

	for (size_t i = 0; i < HR__HOT_TABLE; i++)
		__atomic_store_n(&t[i], 0, __ATOMIC_RELAXED);
	for (size_t i = 0; i < m->n && taken < HR__HOT_SPREAD_MAX; i++) {
		if (m->h[i].rate < c->spread * m->total)
			break;
		if (!m->h[i].id)
			continue;
		size_t j = m->h[i].id & (HR__HOT_TABLE - 1);

		while (__atomic_load_n(&t[j], __ATOMIC_RELAXED))
			j = (j + 1) & (HR__HOT_TABLE - 1);
		__atomic_store_n(&t[j], m->h[i].id, __ATOMIC_RELAXED);
		taken++;
	}
	__atomic_store_n(&c->hot.cur, next, __ATOMIC_RELAXED);
}

void hr__counters_sample(hr__count_seg *s, const void *key, size_t len,
			 uint64_t pos)
{
	struct hr__count_block *b = s->block;
	hr__counters *c = b->c;
	bool refresh;

	if (!c->sample || pthread_mutex_trylock(&b->mu))
		return;
	/* The clock is read every 16th sample: a window ends a little
	 * late, and a sample costs less. */
	if (b->win[b->cur].total % 16 == 0)
		rotate(b, hr__now_ms());
	hr__sketch_add(&b->win[b->cur], pos, key, len);
	refresh = c->spread > 0 && ++b->since_refresh >= REFRESH_SAMPLES;
	if (refresh)
		b->since_refresh = 0;
	pthread_mutex_unlock(&b->mu);
	if (refresh && pthread_mutex_trylock(&c->mu) == 0) {
		struct merge m;

		if (merge_all(c, &m, false) == 0)
			hot_publish(c, &m);
		pthread_mutex_unlock(&c->mu);
	}
}

int hr__counters_hot_keys(hr__counters *c, hr_hot_key *out, uint64_t *ids,
			  size_t n)
{
	struct merge m;
	size_t k;
	int rc;

	if (!c->sample)
		return 0;
	pthread_mutex_lock(&c->mu);
	rc = merge_all(c, &m, true);
	if (rc) {
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
	if (c->spread > 0)
		hot_publish(c, &m);
	hr__counters_grow_buf(c);
	pthread_mutex_unlock(&c->mu);
	k = m.n < n ? m.n : n;
	for (size_t i = 0; i < k; i++) {
		const struct hot *h = &m.h[i];

		memcpy(out[i].key, h->key, h->len < HR_HOT_KEY_MAX ? h->len : HR_HOT_KEY_MAX);
		out[i].len = h->len;
		out[i].rate = h->rate;
		out[i].share = m.total > 0 ? h->rate / m.total : 0;
		out[i].error = m.total > 0 ? h->err / m.total : 0;
		out[i].spread = c->spread > 0 && h->id &&
				h->rate >= c->spread * m.total && i < HR__HOT_SPREAD_MAX;
		ids[i] = h->id;
	}
	free(m.h);
	return (int)k;
}
