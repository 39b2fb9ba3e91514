/* SPDX-License-Identifier: MIT */
/*
 * ring_stream.c - a big ring's points placed while its nodes arrive.  A
 * client's first sync of a 100,000-node ring waits for etcd about as long
 * as it then spends placing 20,000,000 points into fresh memory.  Placed on
 * a second thread, page by page of the nodes as etcd hands them over, the
 * points are ready soon after the last page; the build checks that its
 * nodes are the ones placed and only sorts their points into pages
 * (pages_build.c, hr__pages_pre).
 */
#include "ring_stream.h"

#include "node.h"
#include "pages.h"
#include "placements.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Nodes whose points decide the layout (or all, when fewer are expected):
 * the ring is expected to have expect_nodes times their mean points. */
#define SAMPLE 1024

/* Nodes taken from the queue at a time. */
#define BATCH 256

/* Points computed at a time. */
#define CHUNK 64

/* Bytes of a block of copied ids (an id is at most HR_ID_MAX). */
#define ID_BLOCK 65536

struct entry {
	const char *id;		/* in an id block */
	unsigned len, vnodes;
};

struct id_block {
	struct id_block *next;
	size_t used;
	char bytes[ID_BLOCK];
};

struct hr__ring_stream {
	const hr__placement *pl;
	hr__point_hash_fn hash;
	unsigned vnodes_per_weight;
	size_t expect_nodes;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Under mu: the nodes added, and what the thread is told. */
	struct entry *e;
	size_t n, cap;
	bool closing;		/* no more nodes */
	bool spoiled;		/* stop: nothing will be taken */
	/* The adding thread's own. */
	struct id_block *ids;
	bool started;		/* the layout is chosen */
	bool running;		/* the thread is placing */
	/* The points placed: set by start(), written by the thread until it
	 * is joined. */
	hr__pages_pre *pre;
};

static void spoil(hr__ring_stream *s)
{
	pthread_mutex_lock(&s->mu);
	s->spoiled = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Places the points of nodes[0 .. n), which take slots from `slot` on, as
 * a placement of points by index places a node's points from its id
 * alone. */
static bool place(hr__ring_stream *s, const struct entry *nodes, size_t n, uint32_t slot)
{
	const hr__place_opts opts = { s->vnodes_per_weight, 0, s->hash };
	struct point chunk[CHUNK];

	for (size_t i = 0; i < n; i++, slot++) {
		const hr__place_node node = { nodes[i].id, nodes[i].len, NULL, 0 };

		for (unsigned from = 0; from < nodes[i].vnodes; from += CHUNK) {
			unsigned to = nodes[i].vnodes - from > CHUNK ? from + CHUNK :
								     nodes[i].vnodes;

			s->pl->point_positions(&opts, &node, slot, from, to, chunk);
			if (!hr__pages_pre_place(s->pre, chunk, to - from))
				return false;
		}
	}
	return true;
}

static void *run(void *arg)
{
	hr__ring_stream *s = arg;
	size_t done = 0;
	struct entry batch[BATCH];

	for (;;) {
		size_t k;

		pthread_mutex_lock(&s->mu);
		while (!s->closing && !s->spoiled && done == s->n)
			pthread_cond_wait(&s->cv, &s->mu);
		k = s->spoiled ? 0 : s->n - done < BATCH ? s->n - done : BATCH;
		memcpy(batch, s->e + done, k * sizeof *batch);
		pthread_mutex_unlock(&s->mu);
		if (!k)
			break;	/* spoiled, or closing with every node placed */
		if (!place(s, batch, k, (uint32_t)done)) {
			spoil(s);
			break;
		}
		done += k;
	}
	return NULL;
}

/* Once the first nodes are in (all of them, or SAMPLE): the layout for
 * expect_nodes times their mean points, and the thread that places them,
 * or nothing when that ring is not paged. */
static void start(hr__ring_stream *s)
{
	size_t points = 0;

	s->started = true;
	for (size_t i = 0; i < s->n; i++)
		points += s->e[i].vnodes;
	s->pre = hr__pages_pre_new((size_t)((double)points / (double)s->n *
					    (double)(s->expect_nodes > s->n ?
						     s->expect_nodes : s->n)));
	s->running = s->pre && pthread_create(&s->thread, NULL, run, s) == 0;
	if (!s->running)
		s->spoiled = true;
}

hr__ring_stream *hr__ring_stream_open(const hr_ring *prev, const hr_ring_options *opts,
				      size_t expect_nodes)
{
	const hr__placement *pl;
	hr__ring_stream *s;

	if (!prev || !expect_nodes || hr__placement_get(opts, &pl, NULL) ||
	    pl->kind != HR__PLACE_POINTS || !pl->by_index)
		return NULL;
	s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->pl = pl;
	s->hash = prev->place.hash;
	s->vnodes_per_weight = hr__vnodes_per_weight(opts);
	s->expect_nodes = expect_nodes;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	return s;
}

/* A copy of id[0 .. len) in the stream's blocks, or NULL. */
static const char *copy_id(hr__ring_stream *s, const char *id, size_t len)
{
	struct id_block *b = s->ids;

	if (!b || ID_BLOCK - b->used < len) {
		b = malloc(sizeof *b);
		if (!b)
			return NULL;
		b->next = s->ids;
		b->used = 0;
		s->ids = b;
	}
	memcpy(b->bytes + b->used, id, len);
	b->used += len;
	return b->bytes + b->used - len;
}

/* Appends `node` to the nodes added (under mu); false when out of memory
 * or when its placement refuses it. */
static bool append(hr__ring_stream *s, const hr_node *node)
{
	struct entry e = { .len = (unsigned)strlen(node->id) };

	if (s->pl->node_points(node, s->vnodes_per_weight, &e.vnodes, NULL) != HR_OK ||
	    !(e.id = copy_id(s, node->id, e.len)))
		return false;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct entry *t = realloc(s->e, cap * sizeof *t);

		if (!t)
			return false;
		s->e = t;
		s->cap = cap;
	}
	s->e[s->n++] = e;
	return true;
}

void hr__ring_stream_add(hr__ring_stream *s, const hr_node *node)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	/* Once spoiled (a ring too small for pages among them), nothing
	 * more is copied. */
	if (!s->spoiled) {
		if (!append(s, node))
			s->spoiled = true;
		else if (!s->started && (s->n == SAMPLE || s->n == s->expect_nodes))
			start(s);
		pthread_cond_signal(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

void hr__ring_stream_spoil(hr__ring_stream *s)
{
	if (s)
		spoil(s);
}

/* Tells the thread that no node follows and waits for it. */
static void finish(hr__ring_stream *s)
{
	if (!s->running)
		return;
	pthread_mutex_lock(&s->mu);
	s->closing = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	s->running = false;
}

hr__pages_pre *hr__ring_stream_take(hr__ring_stream *s, const hr_ring *ring)
{
	hr__pages_pre *pre;
	bool same;

	if (!s)
		return NULL;
	finish(s);
	pre = s->pre;
	s->pre = NULL;
	same = pre && !s->spoiled && ring->pl == s->pl && ring->place.hash == s->hash &&
	       ring->nnodes == s->n;
	for (size_t j = 0; same && j < ring->nnodes; j++) {
		const struct ring_node *rn = &ring->nodes[j];

		same = rn->vnodes == s->e[j].vnodes && rn->id_len == s->e[j].len &&
		       memcmp(rn->pub.id, s->e[j].id, rn->id_len) == 0;
	}
	if (same)
		return pre;
	hr__pages_pre_free(pre);
	return NULL;
}

void hr__ring_stream_free(hr__ring_stream *s)
{
	if (!s)
		return;
	spoil(s);
	finish(s);
	hr__pages_pre_free(s->pre);
	while (s->ids) {
		struct id_block *b = s->ids;

		s->ids = b->next;
		free(b);
	}
	free(s->e);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
