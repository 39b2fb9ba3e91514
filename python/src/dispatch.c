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

#include <structmember.h>

#include <stdio.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define LINES_MAX 1024   /* log lines queued at most; more are counted */

struct line {
	struct line *next;
	hr_log_level level;
	char text[];
};

/*
 * What the library's threads queue to and the Python thread takes from.
 * It is apart from the dispatcher (which holds the callables) so that the
 * running thread can hold it without holding the callables: a callable
 * that refers to its client (client -> dispatcher -> callable -> client)
 * is then a cycle the collector frees, not one rooted in a live thread.
 * Owned by a capsule, held by the dispatcher and by its thread.
 */
struct queue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* Under mu: */
	int stopped;
	int want_changes;       /* an on_change callable is registered */
	hrpy_sink *sink;        /* an event loop's, or NULL */
	hr_ring *old_ring;      /* a change not yet delivered */
	hr_ring *new_ring;
	struct line *lines, **tail;
	size_t nlines;
	unsigned long dropped;  /* lines not queued since the last delivery */
	int lost;
	hr_error lost_err;
	/* Under the GIL: */
	unsigned long ident;    /* the thread's id, once it runs */
};

#define QUEUE_CAPSULE "hashring._dispatch_queue"

struct hrpy_dispatcher {
	PyObject_HEAD
	struct queue *q;        /* owned by `capsule`; valid until dealloc */
	PyObject *capsule;
	/* Under the GIL: */
	PyObject *callbacks;    /* list of on_change callables */
	PyObject *log;
	PyObject *on_lost;
	PyObject *thread;       /* threading.Thread, once started */
	PyObject *weakrefs;     /* the thread refers to us by these only */
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
	struct queue *q = userdata;
	hr_ring *drop = NULL;

	pthread_mutex_lock(&q->mu);
	/* Under mu: the sink is not freed while a change is pushed to it. */
	if (q->sink && !q->stopped)
		hrpy_sink_push(q->sink, old_ring, new_ring);
	if (q->want_changes && !q->stopped) {
		/* Both rings are valid during the call only: retained to keep. */
		if (q->new_ring) {
			drop = q->new_ring;
		} else {
			q->old_ring = hr_ring_retain((hr_ring *)old_ring);
		}
		q->new_ring = hr_ring_retain((hr_ring *)new_ring);
		pthread_cond_signal(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	hr_ring_release(drop);
}

void hrpy_on_log(void *userdata, hr_log_level level, const char *text)
{
	struct queue *q = userdata;
	size_t len = strlen(text);
	struct line *line = malloc(sizeof *line + len + 1);

	pthread_mutex_lock(&q->mu);
	if (line && !q->stopped && q->nlines < LINES_MAX) {
		line->next = NULL;
		line->level = level;
		memcpy(line->text, text, len + 1);
		*q->tail = line;
		q->tail = &line->next;
		q->nlines++;
		line = NULL;
		pthread_cond_signal(&q->cv);
	} else if (!q->stopped) {
		q->dropped++;
	}
	pthread_mutex_unlock(&q->mu);
	free(line);
}

void hrpy_on_lost(void *userdata, hr_registrar *r, const hr_error *why)
{
	struct queue *q = userdata;

	(void)r;
	pthread_mutex_lock(&q->mu);
	if (!q->stopped) {
		q->lost = 1;
		q->lost_err = *why;
		pthread_cond_signal(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
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
static void take(struct queue *q, struct work *w)
{
	memset(w, 0, sizeof *w);
	w->stopped = q->stopped;
	if (q->stopped)
		return;
	w->old_ring = q->old_ring;
	w->new_ring = q->new_ring;
	q->old_ring = q->new_ring = NULL;
	w->lines = q->lines;
	q->lines = NULL;
	q->tail = &q->lines;
	q->nlines = 0;
	w->dropped = q->dropped;
	q->dropped = 0;
	w->lost = q->lost;
	w->lost_err = q->lost_err;
	q->lost = 0;
}

static int has_work(const struct queue *q)
{
	return q->new_ring || q->lines || q->dropped || q->lost;
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

/* Delivers `w` to d's callables (d NULL: their dispatcher is gone) and
 * releases what it holds. */
static void deliver(hrpy_dispatcher *d, struct work *w)
{
	hrpy_state *st = d ? HRPY_STATE(d) : NULL;
	PyObject *log = d ? d->log : NULL;

	for (struct line *line = w->lines; line && log; line = line->next)
		deliver_line(d, line->level, line->text);
	lines_free(w->lines);
	if (w->dropped && log) {
		char text[96];

		snprintf(text, sizeof text, "level=warn event=log_lines_dropped count=%lu",
			 w->dropped);
		deliver_line(d, HR_LOG_WARN, text);
	}
	if (w->new_ring && !(d && d->callbacks)) {
		hr_ring_release(w->old_ring);
		hr_ring_release(w->new_ring);
	} else if (w->new_ring) {
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
	if (w->lost && d && d->on_lost) {
		PyObject *exc = hrpy_error_new(st, HR_EEXIST, &w->lost_err);
		PyObject *args = exc ? PyTuple_Pack(1, exc) : NULL;

		call(d->on_lost, args);
		Py_XDECREF(args);
		Py_XDECREF(exc);
	}
}

/*
 * The thread's loop.  `self` is (capsule of the queue, weak reference to
 * the dispatcher): the dispatcher is held only while a turn delivers, so
 * that a client dropped with callables that refer to it is collected (and
 * closed, which stops this loop).
 */
static PyObject *dispatcher_run(PyObject *self, PyObject *unused)
{
	struct queue *q = PyCapsule_GetPointer(PyTuple_GetItem(self, 0), QUEUE_CAPSULE);
	PyObject *ref = PyTuple_GetItem(self, 1);

	if (!q)
		return NULL;
	q->ident = PyThread_get_thread_ident();
	for (;;) {
		struct work w;
		PyObject *d;

		Py_BEGIN_ALLOW_THREADS
		pthread_mutex_lock(&q->mu);
		while (!q->stopped && !has_work(q))
			pthread_cond_wait(&q->cv, &q->mu);
		take(q, &w);
		pthread_mutex_unlock(&q->mu);
		Py_END_ALLOW_THREADS
		if (w.stopped)
			break;
		d = PyObject_CallNoArgs(ref);   /* the dispatcher, or None */
		if (!d)
			return NULL;
		deliver(d == Py_None ? NULL : (hrpy_dispatcher *)d, &w);
		Py_DECREF(d);
	}
	Py_RETURN_NONE;
}

/* Drops what is queued, under mu. */
static void drop_queue(struct queue *q, hr_ring **old_ring, hr_ring **new_ring,
		       struct line **lines)
{
	*old_ring = q->old_ring;
	*new_ring = q->new_ring;
	*lines = q->lines;
	q->old_ring = q->new_ring = NULL;
	q->lines = NULL;
	q->tail = &q->lines;
	q->nlines = 0;
	q->dropped = 0;
	q->lost = 0;
}

/* Stops the queue and drops what it holds. */
static void queue_stop(struct queue *q)
{
	hr_ring *old_ring, *new_ring;
	struct line *lines;

	pthread_mutex_lock(&q->mu);
	q->stopped = 1;
	drop_queue(q, &old_ring, &new_ring, &lines);
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	hr_ring_release(old_ring);
	hr_ring_release(new_ring);
	lines_free(lines);
}

/* The capsule's destructor: once neither the dispatcher nor its thread
 * holds the queue, and so once nothing queues to it any more. */
static void queue_free(PyObject *capsule)
{
	struct queue *q = PyCapsule_GetPointer(capsule, QUEUE_CAPSULE);

	if (!q)
		return;
	queue_stop(q);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	PyMem_Free(q);
}

static void queue_init(struct queue *q)
{
	*q = (struct queue){ .tail = &q->lines };
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
}

void *hrpy_dispatcher_userdata(hrpy_dispatcher *d)
{
	return d->q;
}

int hrpy_dispatcher_stop(hrpy_dispatcher *d, int join)
{
	PyObject *r;

	queue_stop(d->q);
	/* Not from a callback: the thread would wait for itself. */
	if (!join || !d->thread || d->q->ident == PyThread_get_thread_ident())
		return 0;
	r = PyObject_CallMethod(d->thread, "join", NULL);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

void hrpy_dispatcher_forget(hrpy_dispatcher *d)
{
	/* The lock may have been held by a thread that is not here; what
	 * was queued is left to the parent's memory. */
	queue_init(d->q);
	d->q->stopped = 1;
	Py_CLEAR(d->thread);
}

hrpy_dispatcher *hrpy_dispatcher_new(hrpy_state *st, PyObject *log, PyObject *on_lost)
{
	hrpy_dispatcher *d = PyObject_GC_New(hrpy_dispatcher, st->dispatcher_type);
	struct queue *q;

	if (!d)
		return NULL;
	d->q = NULL;
	d->capsule = NULL;
	d->log = log;
	Py_XINCREF(log);
	d->on_lost = on_lost;
	Py_XINCREF(on_lost);
	d->thread = NULL;
	d->weakrefs = NULL;
	d->callbacks = PyList_New(0);
	PyObject_GC_Track(d);
	q = PyMem_Malloc(sizeof *q);
	if (q) {
		queue_init(q);
		d->capsule = PyCapsule_New(q, QUEUE_CAPSULE, queue_free);
		if (!d->capsule) {
			pthread_cond_destroy(&q->cv);
			pthread_mutex_destroy(&q->mu);
			PyMem_Free(q);
			q = NULL;
		}
	} else {
		PyErr_NoMemory();
	}
	d->q = q;
	if (!d->callbacks || !d->q) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

int hrpy_dispatcher_add(hrpy_dispatcher *d, PyObject *fn)
{
	if (!d->callbacks) {
		PyErr_SetString(PyExc_RuntimeError, "the callbacks are being freed");
		return -1;
	}
	if (PyList_Append(d->callbacks, fn) < 0)
		return -1;
	pthread_mutex_lock(&d->q->mu);
	d->q->want_changes = 1;
	pthread_mutex_unlock(&d->q->mu);
	return 0;
}

void hrpy_dispatcher_set_sink(hrpy_dispatcher *d, hrpy_sink *s)
{
	pthread_mutex_lock(&d->q->mu);
	d->q->sink = s;
	pthread_mutex_unlock(&d->q->mu);
}

static PyMethodDef run_def = {
	"_run", dispatcher_run, METH_NOARGS,
	"The thread's loop: delivers callbacks until stopped."
};

int hrpy_dispatcher_start(hrpy_dispatcher *d, const char *name)
{
	hrpy_state *st = HRPY_STATE(d);
	PyObject *ref, *self = NULL, *run = NULL, *args, *kwargs = NULL, *thread = NULL,
		 *r = NULL;

	if (d->thread)
		return 0;
	ref = PyWeakref_NewRef((PyObject *)d, NULL);
	if (ref)
		self = PyTuple_Pack(2, d->capsule, ref);
	if (self)
		run = PyCFunction_New(&run_def, self);
	args = PyTuple_New(0);
	if (run)
		kwargs = Py_BuildValue("{sOsssO}", "target", run, "name", name, "daemon", Py_True);
	if (args && kwargs)
		thread = PyObject_Call(st->thread_class, args, kwargs);
	if (thread)
		r = PyObject_CallMethod(thread, "start", NULL);
	Py_XDECREF(ref);
	Py_XDECREF(self);
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

/* The queue stays until dealloc: the owner stops it after this, when the
 * collector clears the dispatcher first. */
static int dispatcher_clear(hrpy_dispatcher *d)
{
	Py_CLEAR(d->callbacks);
	Py_CLEAR(d->log);
	Py_CLEAR(d->on_lost);
	Py_CLEAR(d->thread);
	return 0;
}

/* Only once its owner closed the library object whose threads queue to
 * it; its thread, which may still run its last turn, holds the queue. */
static void dispatcher_dealloc(hrpy_dispatcher *d)
{
	PyTypeObject *tp = Py_TYPE((PyObject *)d);

	PyObject_GC_UnTrack(d);
	if (d->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)d);
	dispatcher_clear(d);
	if (d->q)
		queue_stop(d->q);
	Py_CLEAR(d->capsule);
	((freefunc)PyType_GetSlot(tp, Py_tp_free))(d);
	Py_DECREF(tp);
}

static PyMemberDef dispatcher_members[] = {
	{ "__weaklistoffset__", T_PYSSIZET, offsetof(hrpy_dispatcher, weakrefs), READONLY, NULL },
	{ NULL, 0, 0, 0, NULL }
};

static PyType_Slot dispatcher_slots[] = {
	{ Py_tp_doc, "Delivers a client's or registrar's callbacks on a Python thread." },
	{ Py_tp_dealloc, dispatcher_dealloc },
	{ Py_tp_traverse, dispatcher_traverse },
	{ Py_tp_clear, dispatcher_clear },
	{ Py_tp_members, dispatcher_members },
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
