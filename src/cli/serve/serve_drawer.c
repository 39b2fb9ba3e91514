/* SPDX-License-Identifier: MIT */
/*
 * serve_drawer.c - the drawer of `hashring serve`: a thread of its own that
 * draws each ring handed to it, once, and publishes each drawing to the
 * HTTP thread, which only copies what is made: /lookup and /metrics never
 * wait for a drawing, and every answer uses the newest drawing made (the
 * one before, while the next is drawn).
 *
 * A drawing is the walk over the ring's points (serve_walk.c), the orders
 * /nodes.json pages through (serve_nodes.c), and the JSON of
 * /overview.json's and /ring.json's "ring" (serve_drawing_json.c), written
 * once.  The overview is published first; /ring.json, every node, can wait.
 * A ring handed over while another is drawn waits, and is replaced by the
 * next: only the newest is worth drawing.
 */
#include "serve_drawing.h"
#include "cli.h"
#include "cli_svg.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

struct serve_drawer {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int stop;            /* set under mu, read without it by the walk */
	hr_ring *pending;    /* the ring to draw next, and its number */
	uint64_t pending_seq;
	int drawing;
	struct serve_drawing *drawn; /* the newest made */
	struct serve_drawing *full;  /* the newest with its /ring.json member */
};

/* ---- a drawing ------------------------------------------------------------------ */

static void drawing_free(struct serve_drawing *d)
{
	if (!d)
		return;
	hr_ring_release(d->ring);
	free(d->shares);
	free(d->by_load);
	free(d->by_share);
	free(d->overview);
	free(d->full);
	free(d);
}

/* `fn` into a new string; HR_ENOMEM if it or the stream failed. */
static int make_text(char **text, size_t *len, int (*fn)(FILE *, void *), void *arg)
{
	FILE *f = open_memstream(text, len);
	int rc;

	if (!f)
		return HR_ENOMEM;
	rc = fn(f, arg);
	if (fclose(f) && !rc)
		rc = HR_ENOMEM;
	if (rc) {
		free(*text);
		*text = NULL;
	}
	return rc;
}

struct make_args {
	struct serve_drawer *dr;
	struct serve_drawing *d;
	const struct serve_walk *w;
};

static int overview_text(FILE *f, void *arg)
{
	struct make_args *a = arg;

	return serve_drawing_overview_json(f, a->d, a->w);
}

static int full_text(FILE *f, void *arg)
{
	struct make_args *a = arg;

	serve_drawing_full_json(f, a->d, a->w, &a->dr->stop);
	return serve_stopping(&a->dr->stop) ? -1 : 0;
}

static struct serve_drawing *drawing_new(hr_ring *ring, uint64_t seq)
{
	struct serve_drawing *d = calloc(1, sizeof *d);
	size_t n = hr_ring_node_count(ring);

	if (!d) {
		hr_ring_release(ring);
		return NULL;
	}
	d->refs = 1;
	d->ring = ring;
	d->seq = seq;
	d->n = n;
	d->shares = calloc(4 * (n ? n : 1), sizeof *d->shares);
	if (!d->shares) {
		drawing_free(d);
		return NULL;
	}
	cli_fair_shares(ring, HR_VIEW_WRITE, d->shares + 2 * n, n);
	cli_fair_shares(ring, HR_VIEW_READ, d->shares + 3 * n, n);
	return d;
}

void serve_drawing_release(struct serve_drawing *d)
{
	if (d && __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0)
		drawing_free(d);
}

/* ---- the thread ------------------------------------------------------------------ */

/* Publishes `d` as the newest drawing, or as the newest with its full
 * member. */
static void publish(struct serve_drawer *dr, struct serve_drawing **slot, struct serve_drawing *d)
{
	struct serve_drawing *old;

	__atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&dr->mu);
	old = *slot;
	*slot = d;
	pthread_mutex_unlock(&dr->mu);
	serve_drawing_release(old);
}

static void draw(struct serve_drawer *dr, hr_ring *ring, uint64_t seq)
{
	uint64_t revision = hr_ring_revision(ring);
	struct serve_drawing *d = drawing_new(ring, seq);
	struct serve_walk *w = NULL;
	struct make_args args = { dr, d, NULL };
	int rc = d ? 0 : HR_ENOMEM;

	if (!rc)
		rc = serve_walk_ring(ring, d->shares, &dr->stop, &w);
	args.w = w;
	if (!rc)
		rc = serve_drawing_orders(d);
	if (!rc)
		rc = make_text(&d->overview, &d->overview_len, overview_text, &args);
	/* The page's first: /ring.json, every node, can wait. */
	if (!rc)
		publish(dr, &dr->drawn, d);
	if (!rc && make_text(&d->full, &d->full_len, full_text, &args) == 0)
		publish(dr, &dr->full, d);
	if (rc == HR_ENOMEM)
		cli_warn("serve", "out of memory drawing the ring of revision %" PRIu64
			 ": the page shows the one before", revision);
	serve_walk_free(w);
	serve_drawing_release(d);
}

static void *draw_thread(void *arg)
{
	struct serve_drawer *dr = arg;

	pthread_mutex_lock(&dr->mu);
	for (;;) {
		hr_ring *ring;
		uint64_t seq;

		while (!dr->stop && !dr->pending)
			pthread_cond_wait(&dr->cv, &dr->mu);
		if (dr->stop)
			break;
		ring = dr->pending;
		seq = dr->pending_seq;
		dr->pending = NULL;
		dr->drawing = 1;
		pthread_mutex_unlock(&dr->mu);
		draw(dr, ring, seq);
		pthread_mutex_lock(&dr->mu);
		dr->drawing = 0;
	}
	pthread_mutex_unlock(&dr->mu);
	return NULL;
}

/* ---- the drawer ------------------------------------------------------------------ */

struct serve_drawer *serve_drawer_start(void)
{
	struct serve_drawer *dr = calloc(1, sizeof *dr);
	sigset_t all, old;
	int rc;

	if (!dr)
		return NULL;
	pthread_mutex_init(&dr->mu, NULL);
	pthread_cond_init(&dr->cv, NULL);
	/* Signals are for the main thread's wait. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&dr->thread, NULL, draw_thread, dr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_mutex_destroy(&dr->mu);
		pthread_cond_destroy(&dr->cv);
		free(dr);
		return NULL;
	}
	return dr;
}

void serve_drawer_stop(struct serve_drawer *dr)
{
	if (!dr)
		return;
	pthread_mutex_lock(&dr->mu);
	__atomic_store_n(&dr->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&dr->cv);
	pthread_mutex_unlock(&dr->mu);
	pthread_join(dr->thread, NULL);
	hr_ring_release(dr->pending);
	serve_drawing_release(dr->drawn);
	serve_drawing_release(dr->full);
	pthread_mutex_destroy(&dr->mu);
	pthread_cond_destroy(&dr->cv);
	free(dr);
}

void serve_drawer_submit(struct serve_drawer *dr, const hr_ring *ring, uint64_t seq)
{
	/* A ring is immutable; only its reference count changes. */
	hr_ring *r = hr_ring_retain((hr_ring *)ring);

	pthread_mutex_lock(&dr->mu);
	hr_ring_release(dr->pending);
	dr->pending = r;
	dr->pending_seq = seq;
	pthread_cond_signal(&dr->cv);
	pthread_mutex_unlock(&dr->mu);
}

struct serve_drawing *serve_drawer_get(struct serve_drawer *dr, int full)
{
	struct serve_drawing *d;

	pthread_mutex_lock(&dr->mu);
	d = full ? dr->full : dr->drawn;
	if (d)
		__atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&dr->mu);
	return d;
}

int serve_drawer_busy(struct serve_drawer *dr)
{
	int busy;

	pthread_mutex_lock(&dr->mu);
	busy = dr->pending || dr->drawing;
	pthread_mutex_unlock(&dr->mu);
	return busy;
}

/* ---- what the HTTP thread reads -------------------------------------------------- */

const hr_ring *serve_drawing_ring(const struct serve_drawing *d)
{
	return d->ring;
}

uint64_t serve_drawing_seq(const struct serve_drawing *d)
{
	return d->seq;
}

void serve_drawing_write_overview(const struct serve_drawing *d, FILE *out)
{
	fwrite(d->overview, 1, d->overview_len, out);
}

void serve_drawing_write_full(const struct serve_drawing *d, FILE *out)
{
	fwrite(d->full, 1, d->full_len, out);
}
