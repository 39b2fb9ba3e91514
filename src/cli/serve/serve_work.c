/* SPDX-License-Identifier: MIT */
/*
 * serve_work.c - the lanes of `hashring serve`: threads that make answers
 * off the HTTP thread, one job after the other, so that an answer whose
 * cost grows with the ring never holds up the others (serve_http.c says
 * which answer goes to which lane, and how its connection waits).
 *
 * A lane is a thread and a queue.  Stopping it lets the job under way end
 * (a job that may take long watches serve_lane_stopping()), then cancels
 * each job still queued, on the stopping thread, so that every job handed
 * over is either run or cancelled, exactly once.  The lane's memory stays
 * until serve_lane_free(): a thread that still submits is refused.
 */
#include "serve.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

struct serve_lane {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	struct serve_job *head, *tail; /* waiting, oldest first */
	atomic_int stop;               /* set under mu; read anywhere */
};

static void *lane_thread(void *arg)
{
	struct serve_lane *l = arg;

	for (;;) {
		struct serve_job *j;

		pthread_mutex_lock(&l->mu);
		while (!l->head && !atomic_load(&l->stop))
			pthread_cond_wait(&l->cv, &l->mu);
		if (atomic_load(&l->stop)) {
			pthread_mutex_unlock(&l->mu);
			return NULL;
		}
		j = l->head;
		l->head = j->next;
		if (!l->head)
			l->tail = NULL;
		pthread_mutex_unlock(&l->mu);
		j->run(j);
	}
}

struct serve_lane *serve_lane_start(void)
{
	struct serve_lane *l = calloc(1, sizeof *l);
	sigset_t all, old;
	int rc;

	if (!l)
		return NULL;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	/* Signals are the main thread's to wait for. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&l->thread, NULL, lane_thread, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		free(l);
		return NULL;
	}
	return l;
}

int serve_lane_submit(struct serve_lane *l, struct serve_job *j)
{
	pthread_mutex_lock(&l->mu);
	if (atomic_load(&l->stop)) {
		pthread_mutex_unlock(&l->mu);
		return -1;
	}
	j->next = NULL;
	if (l->tail)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	return 0;
}

int serve_lane_stopping(const struct serve_lane *l)
{
	return atomic_load(&l->stop);
}

void serve_lane_stop(struct serve_lane *l)
{
	struct serve_job *j;

	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	atomic_store(&l->stop, 1);
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	/* No thread takes jobs now, and submit refuses them: those left
	 * are cancelled (outside the lock: a cancel may take others). */
	pthread_mutex_lock(&l->mu);
	j = l->head;
	l->head = l->tail = NULL;
	pthread_mutex_unlock(&l->mu);
	while (j) {
		struct serve_job *next = j->next;

		j->cancel(j);
		j = next;
	}
}

void serve_lane_free(struct serve_lane *l)
{
	if (!l)
		return;
	pthread_cond_destroy(&l->cv);
	pthread_mutex_destroy(&l->mu);
	free(l);
}
