/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c - the library's callbacks (ring changes, log lines, a lost
 * registration) delivered to Python callables on a Python thread.
 *
 * The library calls back on its own threads (a client's watcher, a
 * registrar's renewal thread), which hold no GIL and may run while the
 * interpreter shuts down.  So they never call into Python: they queue
 * here under a mutex and signal, and a daemon threading.Thread waits with
 * the GIL released, takes the queue and calls the callables with the GIL.
 * Nothing the library's threads do here waits for Python, so close(),
 * which joins them with the GIL released, cannot deadlock on a callback;
 * and it stops this thread only after them (hrpy_dispatcher_stop).
 *
 * Ring changes are coalesced: while one waits to be delivered, a newer
 * one replaces its new ring, so each call's old ring is the previous
 * call's new ring and a slow callback sees the latest ring, not a backlog.
 */
#include "hrpy.h"

#include <stdio.h>

#include <stdlib.h>
#include <string.h>

#define LINES_MAX 1024   /* log lines queued at most; more are counted */

struct line {
	struct line *next;
	hr_log_level level;
	char text[];
};

struct hrpy_dispatcher {
	PyObject_HEAD
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Under mu: */
	int stopped;
	int want_changes;       /* an on_change callable is registered */
	hr_ring *old_ring;      /* a change not yet delivered */
	hr_ring *new_ring;
	struct line *lines, **tail;
	size_t nlines;
	unsigned long dropped;  /* lines not queued since the last delivery */
	int lost;
	hr_error lost_err;
	/* Under the GIL: */
	PyObject *callbacks;    /* list of on_change callables */
	PyObject *log;
	PyObject *on_lost;
	PyObject *thread;       /* threading.Thread, once started */
	unsigned long ident;    /* its id, once it runs */
};

/* What one turn of the thread delivers. */
struct work {
	int stopped;
	hr_ring *old_ring, *new_ring;
	struct line *lines;
	unsigned long dropped;
	int lost;
	hr_error lost_err;
};

/* ---- the library's side (any thread, no GIL) ------------------------------- */

void hrpy_on_change(void *userdata, const hr_ring *old_ring, const hr_ring *new_ring)
{
	hrpy_dispatcher *d = userdata;
	hr_ring *drop = NULL;

	pthread_mutex_lock(&d->mu);
	if (d->want_changes && !d->stopped) {
		/* Both rings are valid during the call only: retained to keep. */
		if (d->new_ring) {
			drop = d->new_ring;
		} else {
			d->old_ring = hr_ring_retain((hr_ring *)old_ring);
		}
		d->new_ring = hr_ring_retain((hr_ring *)new_ring);
		pthread_cond_signal(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	hr_ring_release(drop);
}

void hrpy_on_log(void *userdata, hr_log_level level, const char *text)
{
	hrpy_dispatcher *d = userdata;
	size_t len = strlen(text);
	struct line *line = malloc(sizeof *line + len + 1);

	pthread_mutex_lock(&d->mu);
	if (line && !d->stopped && d->nlines < LINES_MAX) {
		line->next = NULL;
		line->level = level;
		memcpy(line->text, text, len + 1);
		*d->tail = line;
		d->tail = &line->next;
		d->nlines++;
		line = NULL;
		pthread_cond_signal(&d->cv);
	} else if (!d->stopped) {
		d->dropped++;
	}
	pthread_mutex_unlock(&d->mu);
	free(line);
}

void hrpy_on_lost(void *userdata, hr_registrar *r, const hr_error *why)
{
	hrpy_dispatcher *d = userdata;

	(void)r;
	pthread_mutex_lock(&d->mu);
	if (!d->stopped) {
		d->lost = 1;
		d->lost_err = *why;
		pthread_cond_signal(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
}

/* ---- the Python side -------------------------------------------------------- */

static void lines_free(struct line *line)
{
	while (line) {
		struct line *next = line->next;

		free(line);
		line = next;
	}
}

/* Takes what is queued into `w`, under mu. */
static void take(hrpy_dispatcher *d, struct work *w)
{
	memset(w, 0, sizeof *w);
	w->stopped = d->stopped;
	if (d->stopped)
		return;
	w->old_ring = d->old_ring;
	w->new_ring = d->new_ring;
	d->old_ring = d->new_ring = NULL;
	w->lines = d->lines;
	d->lines = NULL;
	d->tail = &d->lines;
	d->nlines = 0;
	w->dropped = d->dropped;
	d->dropped = 0;
	w->lost = d->lost;
	w->lost_err = d->lost_err;
	d->lost = 0;
}

static int has_work(const hrpy_dispatcher *d)
{
	return d->new_ring || d->lines || d->dropped || d->lost;
}

/* Calls fn(*args); an exception has nowhere to go on this thread: it is
 * reported (sys.unraisablehook) and the thread goes on. */
static void call(PyObject *fn, PyObject *args)
{
	PyObject *r = args ? PyObject_CallObject(fn, args) : NULL;

	if (!r)
		PyErr_WriteUnraisable(fn);
	Py_XDECREF(r);
}

static void deliver_line(hrpy_dispatcher *d, hr_log_level level, const char *text)
{
	PyObject *args = Py_BuildValue("(sN)", hr_log_level_name(level),
				       PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text),
							    "backslashreplace"));

	call(d->log, args);
	Py_XDECREF(args);
}

static void deliver(hrpy_dispatcher *d, struct work *w)
{
	hrpy_state *st = HRPY_STATE(d);

	for (struct line *line = w->lines; line && d->log; line = line->next)
		deliver_line(d, line->level, line->text);
	lines_free(w->lines);
	if (w->dropped && d->log) {
		char text[96];

		snprintf(text, sizeof text, "level=warn event=log_lines_dropped count=%lu",
			 w->dropped);
		deliver_line(d, HR_LOG_WARN, text);
	}
	if (w->new_ring) {
		PyObject *old_ring = (PyObject *)hrpy_ring_wrap(st, w->old_ring);
		PyObject *new_ring = (PyObject *)hrpy_ring_wrap(st, w->new_ring);
		PyObject *fns = PySequence_Tuple(d->callbacks);
		PyObject *args = old_ring && new_ring ? PyTuple_Pack(2, old_ring, new_ring) : NULL;

		for (Py_ssize_t i = 0; fns && i < PyTuple_Size(fns); i++)
			call(PyTuple_GetItem(fns, i), args);
		if (!fns || !args)
			PyErr_WriteUnraisable((PyObject *)d);
		Py_XDECREF(args);
		Py_XDECREF(fns);
		Py_XDECREF(old_ring);
		Py_XDECREF(new_ring);
	}
	if (w->lost && d->on_lost) {
		PyObject *exc = hrpy_error_new(st, HR_EEXIST, &w->lost_err);
		PyObject *args = exc ? PyTuple_Pack(1, exc) : NULL;

		call(d->on_lost, args);
		Py_XDECREF(args);
		Py_XDECREF(exc);
	}
}

static PyObject *dispatcher_run(hrpy_dispatcher *d, PyObject *unused)
{
	d->ident = PyThread_get_thread_ident();
	for (;;) {
		struct work w;

		Py_BEGIN_ALLOW_THREADS
		pthread_mutex_lock(&d->mu);
		while (!d->stopped && !has_work(d))
			pthread_cond_wait(&d->cv, &d->mu);
		take(d, &w);
		pthread_mutex_unlock(&d->mu);
		Py_END_ALLOW_THREADS
		if (w.stopped)
			break;
		deliver(d, &w);
	}
	Py_RETURN_NONE;
}

/* Drops what is queued, under mu. */
static void drop_queue(hrpy_dispatcher *d, hr_ring **old_ring, hr_ring **new_ring,
		       struct line **lines)
{
	*old_ring = d->old_ring;
	*new_ring = d->new_ring;
	*lines = d->lines;
	d->old_ring = d->new_ring = NULL;
	d->lines = NULL;
	d->tail = &d->lines;
	d->nlines = 0;
	d->dropped = 0;
	d->lost = 0;
}

int hrpy_dispatcher_stop(hrpy_dispatcher *d, int join)
{
	hr_ring *old_ring, *new_ring;
	struct line *lines;
	PyObject *r;

	pthread_mutex_lock(&d->mu);
	d->stopped = 1;
	drop_queue(d, &old_ring, &new_ring, &lines);
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	hr_ring_release(old_ring);
	hr_ring_release(new_ring);
	lines_free(lines);
	/* Not from a callback: the thread would wait for itself. */
	if (!join || !d->thread || d->ident == PyThread_get_thread_ident())
		return 0;
	r = PyObject_CallMethod(d->thread, "join", NULL);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

void hrpy_dispatcher_forget(hrpy_dispatcher *d)
{
	/* The lock may have been held by a thread that is not here. */
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	d->stopped = 1;
	d->old_ring = d->new_ring = NULL; /* left to the parent's memory */
	d->lines = NULL;
	d->tail = &d->lines;
	d->nlines = 0;
	d->dropped = 0;
	d->lost = 0;
	d->ident = 0;
	Py_CLEAR(d->thread);
}

hrpy_dispatcher *hrpy_dispatcher_new(hrpy_state *st, PyObject *log, PyObject *on_lost)
{
	hrpy_dispatcher *d = PyObject_GC_New(hrpy_dispatcher, st->dispatcher_type);

	if (!d)
		return NULL;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	d->stopped = d->want_changes = d->lost = 0;
	d->old_ring = d->new_ring = NULL;
	d->lines = NULL;
	d->tail = &d->lines;
	d->nlines = 0;
	d->dropped = 0;
	d->log = log;
	Py_XINCREF(log);
	d->on_lost = on_lost;
	Py_XINCREF(on_lost);
	d->thread = NULL;
	d->ident = 0;
	d->callbacks = PyList_New(0);
	PyObject_GC_Track(d);
	if (!d->callbacks) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

int hrpy_dispatcher_add(hrpy_dispatcher *d, PyObject *fn)
{
	if (PyList_Append(d->callbacks, fn) < 0)
		return -1;
	pthread_mutex_lock(&d->mu);
	d->want_changes = 1;
	pthread_mutex_unlock(&d->mu);
	return 0;
}

int hrpy_dispatcher_start(hrpy_dispatcher *d, const char *name)
{
	hrpy_state *st = HRPY_STATE(d);
	PyObject *run, *args, *kwargs, *thread = NULL, *r = NULL;

	if (d->thread)
		return 0;
	run = PyObject_GetAttrString((PyObject *)d, "_run");
	args = PyTuple_New(0);
	kwargs = run ? Py_BuildValue("{sOsssO}", "target", run, "name", name, "daemon",
				     Py_True) : NULL;
	if (args && kwargs)
		thread = PyObject_Call(st->thread_class, args, kwargs);
	if (thread)
		r = PyObject_CallMethod(thread, "start", NULL);
	Py_XDECREF(run);
	Py_XDECREF(args);
	Py_XDECREF(kwargs);
	if (!r) {
		Py_XDECREF(thread);
		return -1;
	}
	Py_DECREF(r);
	d->thread = thread;
	return 0;
}

static int dispatcher_traverse(hrpy_dispatcher *d, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE((PyObject *)d));
	Py_VISIT(d->callbacks);
	Py_VISIT(d->log);
	Py_VISIT(d->on_lost);
	Py_VISIT(d->thread);
	return 0;
}

static int dispatcher_clear(hrpy_dispatcher *d)
{
	Py_CLEAR(d->callbacks);
	Py_CLEAR(d->log);
	Py_CLEAR(d->on_lost);
	Py_CLEAR(d->thread);
	return 0;
}

/* Only once nothing queues to it any more: its owner closed the library
 * object whose threads did, and its thread, which holds a reference to
 * it while it runs, has ended. */
static void dispatcher_dealloc(hrpy_dispatcher *d)
{
	PyTypeObject *tp = Py_TYPE((PyObject *)d);
	hr_ring *old_ring, *new_ring;
	struct line *lines;

	PyObject_GC_UnTrack(d);
	dispatcher_clear(d);
	drop_queue(d, &old_ring, &new_ring, &lines);
	hr_ring_release(old_ring);
	hr_ring_release(new_ring);
	lines_free(lines);
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	((freefunc)PyType_GetSlot(tp, Py_tp_free))(d);
	Py_DECREF(tp);
}

static PyMethodDef dispatcher_methods[] = {
	{ "_run", (PyCFunction)dispatcher_run, METH_NOARGS,
	  "The thread's loop: delivers callbacks until stopped." },
	{ NULL, NULL, 0, NULL }
};

static PyType_Slot dispatcher_slots[] = {
	{ Py_tp_doc, "Delivers a client's or registrar's callbacks on a Python thread." },
	{ Py_tp_dealloc, dispatcher_dealloc },
	{ Py_tp_traverse, dispatcher_traverse },
	{ Py_tp_clear, dispatcher_clear },
	{ Py_tp_methods, dispatcher_methods },
	{ 0, NULL }
};

static PyType_Spec dispatcher_spec = {
	"hashring._Dispatcher", sizeof(hrpy_dispatcher), 0,
	Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, dispatcher_slots
};

int hrpy_dispatcher_type_init(PyObject *module, hrpy_state *st)
{
	st->dispatcher_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &dispatcher_spec,
								       NULL);
	return st->dispatcher_type ? 0 : -1;
}
