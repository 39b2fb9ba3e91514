/* SPDX-License-Identifier: MIT */
/*
 * serve_metrics.c - /metrics of `hashring serve`, made in two parts, both
 * off the HTTP thread.
 *
 * The ring's part, what hr_ring_metrics_write() writes (build_info, the
 * ring_* families and the node_* ones: O(points) for the shares and some
 * 50 MB at 100,000 nodes), changes only with the ring: it is made once per
 * ring, on a thread of its own, as the drawings are (serve_draw.c).  The
 * client's part (its status, lookup counts and hot keys: the flag
 * HR_METRICS_OMIT_RING) changes from one scrape to the next and is made
 * per scrape, on a lane (serve_work.c).  A scrape's answer is the client's
 * part, then the newest ring part made: one exposition, each family once
 * (a family may come in any order).  While the next ring's part is being
 * made, scrapes give the one before, as the page shows the drawing before.
 * A scrape before the first part waits for it on its lane (a scraper
 * would otherwise see the node_* families appear late, and a rate() over
 * them start late), up to FIRST_PART_WAIT_MS; past that, the client's part
 * is written with the ring's families but not the node_* ones, and a
 * comment line says they are coming.
 *
 * Both writers stop within a piece of output (8 KiB) once asked to: the
 * server's exit never waits for a ring's part.
 */
#include "serve.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a scrape waits for the first ring part: well under Prometheus'
 * default scrape timeout (10 s), well over the 1-2 s a part takes at
 * 100,000 nodes. */
#define FIRST_PART_WAIT_MS 5000

struct serve_metrics_part {
	atomic_uint refs;
	char *text;
	size_t len;
};

struct serve_metrics {
	pthread_mutex_t mu;
	pthread_cond_t cv;                /* the thread: a ring is pending, or stop */
	pthread_cond_t made_cv;           /* scrapes: a part is made, or stop */
	pthread_t thread;
	atomic_int stop;                  /* set under mu, read anywhere */
	hr_ring *pending;                 /* the ring to make the part of next */
	int making;                       /* the thread is making a part */
	struct serve_metrics_part *made;  /* the newest made, or NULL */
	const hr_metrics_options *opts;   /* kept; NULL: the defaults */
};

void serve_metrics_part_release(struct serve_metrics_part *p)
{
	if (p && atomic_fetch_sub(&p->refs, 1) == 1) {
		free(p->text);
		free(p);
	}
}

const char *serve_metrics_part_text(const struct serve_metrics_part *p, size_t *len)
{
	*len = p->len;
	return p->text;
}

/* What the writers write to: a FILE, until the server stops. */
struct sink {
	FILE *f;
	const atomic_int *stop;
};

static int sink_write(void *userdata, const char *data, size_t len)
{
	struct sink *s = userdata;

	if (atomic_load(s->stop))
		return 1;
	return fwrite(data, 1, len, s->f) == len ? 0 : 1;
}

/* The part of `ring`, or NULL (without memory, or stopping). */
static struct serve_metrics_part *part_make(struct serve_metrics *m, const hr_ring *ring)
{
	struct serve_metrics_part *p = calloc(1, sizeof *p);
	struct sink s = { NULL, &m->stop };
	int rc;

	if (!p)
		return NULL;
	s.f = open_memstream(&p->text, &p->len);
	if (!s.f) {
		free(p);
		return NULL;
	}
	rc = hr_ring_metrics_write(ring, sink_write, &s, m->opts, NULL);
	if (fclose(s.f) || rc) {
		free(p->text);
		free(p);
		return NULL;
	}
	atomic_init(&p->refs, 1);
	return p;
}

static void *metrics_thread(void *arg)
{
	struct serve_metrics *m = arg;

	pthread_mutex_lock(&m->mu);
	for (;;) {
		struct serve_metrics_part *p, *old;
		hr_ring *ring;

		while (!m->pending && !atomic_load(&m->stop))
			pthread_cond_wait(&m->cv, &m->mu);
		if (atomic_load(&m->stop))
			break;
		ring = m->pending;
		m->pending = NULL;
		m->making = 1;
		pthread_mutex_unlock(&m->mu);
		p = part_make(m, ring);
		hr_ring_release(ring);
		pthread_mutex_lock(&m->mu);
		m->making = 0;
		pthread_cond_broadcast(&m->made_cv);
		/* Without memory the part before stays: better than none. */
		if (p) {
			old = m->made;
			m->made = p;
			pthread_mutex_unlock(&m->mu);
			serve_metrics_part_release(old);
			pthread_mutex_lock(&m->mu);
		}
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

struct serve_metrics *serve_metrics_start(const hr_metrics_options *opts)
{
	struct serve_metrics *m = calloc(1, sizeof *m);
	sigset_t all, old;
	int rc;

	if (!m)
		return NULL;
	m->opts = opts;
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	pthread_cond_init(&m->made_cv, NULL);
	/* Signals are the main thread's to wait for. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&m->thread, NULL, metrics_thread, m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&m->made_cv);
		pthread_cond_destroy(&m->cv);
		pthread_mutex_destroy(&m->mu);
		free(m);
		return NULL;
	}
	return m;
}

void serve_metrics_halt(struct serve_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	atomic_store(&m->stop, 1);
	pthread_cond_signal(&m->cv);
	pthread_cond_broadcast(&m->made_cv);
	pthread_mutex_unlock(&m->mu);
}

void serve_metrics_stop(struct serve_metrics *m)
{
	if (!m)
		return;
	serve_metrics_halt(m);
	pthread_join(m->thread, NULL);
	hr_ring_release(m->pending);
	serve_metrics_part_release(m->made);
	pthread_cond_destroy(&m->made_cv);
	pthread_cond_destroy(&m->cv);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

void serve_metrics_submit(struct serve_metrics *m, const hr_ring *ring)
{
	hr_ring *old;

	pthread_mutex_lock(&m->mu);
	old = m->pending;
	/* A ring is immutable: its reference is taken, never written. */
	m->pending = hr_ring_retain((hr_ring *)ring);
	pthread_cond_signal(&m->cv);
	pthread_mutex_unlock(&m->mu);
	hr_ring_release(old);
}

int serve_metrics_scrape(struct serve_metrics *m, hr_client *client, FILE *out,
			 struct serve_metrics_part **part)
{
	hr_metrics_options o;
	struct sink s = { out, &m->stop };
	int rc;

	if (m->opts)
		o = *m->opts;
	else
		hr_metrics_options_init(&o);
	pthread_mutex_lock(&m->mu);
	if (!m->made) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += FIRST_PART_WAIT_MS / 1000;
		while (!m->made && (m->pending || m->making) && !atomic_load(&m->stop) &&
		       pthread_cond_timedwait(&m->made_cv, &m->mu, &until) == 0)
			;
	}
	*part = m->made;
	if (*part)
		atomic_fetch_add(&(*part)->refs, 1);
	pthread_mutex_unlock(&m->mu);
	if (*part) {
		o.omit |= HR_METRICS_OMIT_RING;
	} else {
		hr_ring *ring = hr_client_ring(client);

		if (hr_ring_node_count(ring) && !(o.omit & HR_METRICS_OMIT_NODES))
			fprintf(out, "# the hashring_node_* families come once made for the ring"
				" of revision %" PRIu64 "\n", hr_ring_revision(ring));
		hr_ring_release(ring);
		o.omit |= HR_METRICS_OMIT_NODES;
	}
	rc = hr_client_metrics_write(client, sink_write, &s, &o, NULL);
	if (rc) {
		serve_metrics_part_release(*part);
		*part = NULL;
	}
	return rc;
}
