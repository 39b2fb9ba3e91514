/* SPDX-License-Identifier: MIT */
/*
 * aio.c - ring changes handed to an asyncio event loop (hashring.AsyncClient,
 * hashring/_aio.py) through one eventfd per client.
 *
 * The library's watcher calls on_change on its own thread, which holds no
 * GIL.  For an event loop it queues the change here, in a few slots under
 * a mutex, and adds one to an eventfd that the loop watches
 * (loop.add_reader); the loop's reader takes the slots with the GIL.  No
 * Python thread waits on the loop's behalf, and the watcher never waits
 * for the loop: when every slot is full (the loop is busy), the newest
 * change replaces the last slot's new ring and counts as missed there, so
 * the memory held is SINK_SLOTS pairs of rings at most, and each slot's
 * old ring is still the previous slot's new ring.
 */
#include "hrpy.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Enough for a loop that keeps up to take every change one by one; few
 * enough that a stalled loop holds little (each slot holds two rings). */
#define SINK_SLOTS 8

struct slot {
	hr_ring *old_ring, *new_ring;
	unsigned long missed;   /* changes folded into this one */
};

struct hrpy_sink {
	pthread_mutex_t mu;
	int fd;                 /* eventfd, non-blocking */
	/* Under mu: */
	int closed;
	struct slot slots[SINK_SLOTS];
	size_t head, n;
};

hrpy_sink *hrpy_sink_new(void)
{
	hrpy_sink *s = PyMem_Calloc(1, sizeof *s);

	if (!s) {
		PyErr_NoMemory();
		return NULL;
	}
	s->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->fd < 0) {
		PyErr_SetFromErrno(PyExc_OSError);
		PyMem_Free(s);
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	return s;
}

int hrpy_sink_fd(const hrpy_sink *s)
{
	return s->fd;
}

/* Any thread, no GIL: never waits but for the mutex, which the loop holds
 * only to copy the slots out. */
void hrpy_sink_push(hrpy_sink *s, const hr_ring *old_ring, const hr_ring *new_ring)
{
	hr_ring *drop = NULL;
	uint64_t one = 1;

	pthread_mutex_lock(&s->mu);
	if (s->closed) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	if (s->n == SINK_SLOTS) {
		struct slot *last = &s->slots[(s->head + s->n - 1) % SINK_SLOTS];

		drop = last->new_ring;
		last->new_ring = hr_ring_retain((hr_ring *)new_ring);
		last->missed++;
	} else {
		struct slot *sl = &s->slots[(s->head + s->n) % SINK_SLOTS];

		/* Both rings are valid during the call only: retained to keep. */
		sl->old_ring = hr_ring_retain((hr_ring *)old_ring);
		sl->new_ring = hr_ring_retain((hr_ring *)new_ring);
		sl->missed = 0;
		s->n++;
	}
	pthread_mutex_unlock(&s->mu);
	hr_ring_release(drop);
	/* EAGAIN only when the counter is full, and then the loop is woken
	 * anyway. */
	if (write(s->fd, &one, sizeof one) < 0 && errno != EAGAIN)
		return;
}

/* Takes the slots out, under mu; returns how many. */
static size_t take_slots(hrpy_sink *s, struct slot *out)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->n;
	for (size_t i = 0; i < n; i++)
		out[i] = s->slots[(s->head + i) % SINK_SLOTS];
	s->head = (s->head + n) % SINK_SLOTS;
	s->n = 0;
	pthread_mutex_unlock(&s->mu);
	return n;
}

PyObject *hrpy_sink_take(hrpy_state *st, hrpy_sink *s)
{
	struct slot got[SINK_SLOTS];
	PyObject *list, *prev = NULL;
	uint64_t count;
	size_t n, i;

	/* The count first: a change queued after it wakes the loop again, at
	 * worst for nothing. */
	if (read(s->fd, &count, sizeof count) < 0 && errno != EAGAIN)
		return PyErr_SetFromErrno(PyExc_OSError);
	n = take_slots(s, got);
	list = PyList_New(0);
	for (i = 0; i < n; i++) {
		PyObject *old_ring = NULL, *new_ring, *item = NULL;

		if (!list)
			break;
		/* One Ring object for a ring that ends a change and starts the
		 * next one. */
		if (prev && i > 0 && got[i].old_ring == got[i - 1].new_ring) {
			hr_ring_release(got[i].old_ring);
			old_ring = prev;
			Py_INCREF(old_ring);
		} else {
			old_ring = (PyObject *)hrpy_ring_wrap(st, got[i].old_ring);
		}
		got[i].old_ring = NULL;
		new_ring = (PyObject *)hrpy_ring_wrap(st, got[i].new_ring);
		got[i].new_ring = NULL;
		if (old_ring && new_ring)
			item = Py_BuildValue("(OOk)", old_ring, new_ring, got[i].missed);
		Py_XDECREF(old_ring);
		Py_XDECREF(prev);
		prev = new_ring;
		if (!item || PyList_Append(list, item) < 0)
			Py_CLEAR(list);
		Py_XDECREF(item);
	}
	Py_XDECREF(prev);
	for (; i < n; i++) {
		hr_ring_release(got[i].old_ring);
		hr_ring_release(got[i].new_ring);
	}
	return list;
}

/* Once nothing pushes any more (the library's client is closed). */
void hrpy_sink_free(hrpy_sink *s)
{
	struct slot got[SINK_SLOTS];
	size_t n;

	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->closed = 1;
	pthread_mutex_unlock(&s->mu);
	n = take_slots(s, got);
	for (size_t i = 0; i < n; i++) {
		hr_ring_release(got[i].old_ring);
		hr_ring_release(got[i].new_ring);
	}
	close(s->fd);
	pthread_mutex_destroy(&s->mu);
	PyMem_Free(s);
}

void hrpy_sink_forget(hrpy_sink *s)
{
	/* The lock may have been held by a thread that is not here; the
	 * rings queued are left to the parent's memory. */
	pthread_mutex_init(&s->mu, NULL);
	s->closed = 1;
	s->n = 0;
}

/* _timeout_ms(value, what, none_ms): the checks of every timeout argument,
 * for the Python side of the asyncio classes. */
static PyObject *module_timeout_ms(PyObject *module, PyObject *args)
{
	PyObject *o;
	const char *what;
	long long none_ms, ms;

	(void)module;
	if (!PyArg_ParseTuple(args, "OsL:_timeout_ms", &o, &what, &none_ms) ||
	    hrpy_timeout_arg(o, what, none_ms, &ms) < 0)
		return NULL;
	return PyLong_FromLongLong(ms);
}

PyMethodDef hrpy_aio_functions[] = {
	{ "_timeout_ms", module_timeout_ms, METH_VARARGS,
	  "_timeout_ms(value, what, none_ms) -> int\n\nA timeout argument in ms, checked as "
	  "every method's." },
	{ NULL, NULL, 0, NULL }
};
