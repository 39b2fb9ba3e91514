/* SPDX-License-Identifier: MIT */
/*
 * client.c - hashring.Client: an hr_client, its lookups answered with the
 * objects of the ring that answered (ring.c), its callbacks delivered on
 * a Python thread (dispatch.c).
 *
 * Lookups go through hr_client_lookup_batch(), even for one key: its
 * answer is two node numbers and the epoch of the ring that gave them,
 * which index the prebuilt Owners of that ring (the client keeps the
 * Ring object of the newest ring it answered from; a lookup that comes
 * from a newer ring moves it on).  A single lookup holds the GIL: it
 * never blocks, and releasing the GIL would cost more than the lookup.
 *
 * hr_client_close() must not run beside any other call on the client.
 * Python code cannot be trusted with that, so every method checks that
 * the client is open while it holds the GIL, and the methods that release
 * the GIL count themselves in `busy`, which close() waits to drain.
 */
#include "hrpy.h"

#include <stdio.h>

#include <stddef.h>
#include <string.h>

typedef struct hrpy_client {
	PyObject_HEAD
	hr_client *c;           /* NULL once closed */
	hrpy_ring *current;     /* the newest ring answers came from */
	hrpy_dispatcher *dispatcher;
	hrpy_sink *sink;        /* an event loop's changes (aio.c), or NULL */
	hrpy_etcd etcd;         /* kept for acks() and wait_acks() */
	const char *ack_prefix;
	int busy;               /* calls running without the GIL */
	int closing;
	int forked;             /* opened in the parent of a fork() */
	int agent;              /* attached to an agent (agent_dir): no
				   thread of its own, so fork() leaves it open */
	struct hrpy_open open;
} hrpy_client;

/* Settings that are the Python object's, not a library struct's. */
struct client_extra {
	PyObject *on_change;
};

static PyObject *closed_error(hrpy_client *self)
{
	return hrpy_closed(HRPY_STATE(self), "client", self->forked);
}

/* The client's current ring as a Ring object (a new reference): the one
 * it keeps if it is still current, else a new one, kept from then on. */
static hrpy_ring *current_ring(hrpy_client *self)
{
	hrpy_ring *r = self->current, *old;
	hr_ring *ring;

	if (!self->c)
		return (hrpy_ring *)closed_error(self);
	ring = hr_client_ring(self->c);
	if (r && hr_ring_revision(ring) == r->epoch.revision &&
	    hr_ring_digest(ring) == r->epoch.digest) {
		hr_ring_release(ring);
		Py_INCREF((PyObject *)r);
		return r;
	}
	r = hrpy_ring_wrap(HRPY_STATE(self), ring);
	if (!r)
		return NULL;
	old = self->current;
	Py_INCREF((PyObject *)r);
	self->current = r;
	Py_XDECREF((PyObject *)old);
	return r;
}

/* The answers of a batch whose ring is not the one kept: the ring the
 * client has now (it moved on), and the batch again on it if that is
 * newer still than the one that answered. */
static PyObject *answers_slow(hrpy_client *self, const hrpy_keys *k, const hr_epoch *epoch)
{
	hr_error err = { .code = 0 };
	hrpy_ring *r = current_ring(self);
	PyObject *result;
	int rc = 0;

	if (!r)
		return NULL;
	if (r->epoch.revision != epoch->revision || r->epoch.digest != epoch->digest) {
		if (k->n >= HRPY_NOGIL_KEYS) {
			Py_BEGIN_ALLOW_THREADS
			rc = hr_ring_lookup_batch(r->ring, k->ptrs, k->lens, k->n, k->out, &err);
			Py_END_ALLOW_THREADS
		} else {
			rc = hr_ring_lookup_batch(r->ring, k->ptrs, k->lens, k->n, k->out, &err);
		}
	}
	if (rc < 0)
		result = hrpy_raise(HRPY_STATE(self), rc, &err);
	else
		result = hrpy_ring_owners(r, k->out, k->n);
	Py_DECREF(r);
	return result;
}

/* A batch of one, hr_client_lookup_batch()'s code; the key is got into
 * *k, which the caller releases, unless this returns LOOKUP_RAISED (an
 * exception set, nothing held). */
#define LOOKUP_RAISED 1
static int lookup_one(hrpy_client *self, PyObject *key, hrpy_key *k, hr_batch_owner *o,
		      hr_epoch *epoch)
{
	if (hrpy_key_get(key, k) < 0)
		return LOOKUP_RAISED;
	if (!self->c) {
		hrpy_key_release(k);
		closed_error(self);
		return LOOKUP_RAISED;
	}
	return hr_client_lookup_batch(self->c, (const void *const *)&k->data, &k->len, 1, o,
				      epoch, NULL);
}

static PyObject *client_lookup(hrpy_client *self, PyObject *key)
{
	hrpy_ring *r;
	hr_batch_owner o;
	hr_epoch epoch;
	PyObject *result;
	hrpy_key k;
	int rc;

	rc = lookup_one(self, key, &k, &o, &epoch);
	if (rc == LOOKUP_RAISED)
		return NULL;
	/* Read after the key: getting a key may run code (a collection) that
	 * looks up on this client too. */
	r = self->current;
	if (rc == 0 && r && epoch.digest == r->epoch.digest &&
	    epoch.revision == r->epoch.revision) {
		hrpy_key_release(&k);
		return hrpy_ring_owner(r, &o);
	}
	if (rc < 0) {
		result = hrpy_raise(HRPY_STATE(self), rc, NULL);
	} else {
		hrpy_keys one = { .n = 1, .ptrs = (const void **)&k.data, .lens = &k.len,
				  .out = &o };
		PyObject *list = answers_slow(self, &one, &epoch);

		result = list ? PyList_GetItem(list, 0) : NULL;
		Py_XINCREF(result);
		Py_XDECREF(list);
	}
	hrpy_key_release(&k);
	return result;
}

/* The batch of one again, its write node's number alone: no new object
 * once the kept Ring has made that int, and no epoch to compare. */
static PyObject *client_lookup_index(hrpy_client *self, PyObject *key)
{
	hr_batch_owner o;
	hrpy_key k;
	int rc;

	rc = lookup_one(self, key, &k, &o, NULL);
	if (rc == LOOKUP_RAISED)
		return NULL;
	hrpy_key_release(&k);
	if (rc < 0)
		return hrpy_raise(HRPY_STATE(self), rc, NULL);
	/* Any Ring's ints will do, whichever ring answered: the kept one,
	 * taken once if no lookup() took it yet. */
	if (!self->current) {
		hrpy_ring *r = current_ring(self);

		if (!r)
			return NULL;
		Py_DECREF(r);
	}
	return hrpy_ring_index(self->current, o.node);
}

static PyObject *client_lookup_many(hrpy_client *self, PyObject *keys)
{
	hr_error err = { .code = 0 };
	PyObject *result;
	hr_epoch epoch;
	hrpy_keys k;
	hrpy_ring *r;
	int rc;

	if (hrpy_keys_get(keys, &k) < 0)
		return NULL;
	if (!self->c) {
		hrpy_keys_release(&k);
		return closed_error(self);
	}
	if (k.n >= HRPY_NOGIL_KEYS) {
		hr_client *c = self->c; /* close() waits for us, not for self->c */

		self->busy++;
		Py_BEGIN_ALLOW_THREADS
		rc = hr_client_lookup_batch(c, k.ptrs, k.lens, k.n, k.out, &epoch, &err);
		Py_END_ALLOW_THREADS
		self->busy--;
		if (!self->c) {
			hrpy_keys_release(&k);
			return closed_error(self);
		}
	} else {
		rc = hr_client_lookup_batch(self->c, k.ptrs, k.lens, k.n, k.out, &epoch, &err);
	}
	r = self->current;
	if (rc == HR_EEMPTY && k.n == 0)
		result = PyList_New(0);
	else if (rc < 0)
		result = hrpy_raise(HRPY_STATE(self), rc, &err);
	else if (r && epoch.digest == r->epoch.digest && epoch.revision == r->epoch.revision)
		result = hrpy_ring_owners(r, k.out, k.n);
	else
		result = answers_slow(self, &k, &epoch);
	hrpy_keys_release(&k);
	return result;
}

static PyObject *client_replicas(hrpy_client *self, PyObject *args, PyObject *kwargs)
{
	hrpy_ring *r = current_ring(self);
	PyObject *result = r ? hrpy_ring_replicas(r, args, kwargs) : NULL;

	Py_XDECREF((PyObject *)r);
	return result;
}

static PyObject *client_ring(hrpy_client *self, PyObject *unused)
{
	if (!self->c)
		return closed_error(self);
	return (PyObject *)current_ring(self);
}

static PyObject *client_nodes(hrpy_client *self, PyObject *unused)
{
	hrpy_ring *r;
	PyObject *list;

	if (!self->c)
		return closed_error(self);
	r = current_ring(self);
	list = r ? hrpy_ring_node_list(r) : NULL;
	Py_XDECREF((PyObject *)r);
	return list;
}

static PyObject *client_get_revision(hrpy_client *self, void *unused)
{
	hrpy_ring *r;
	PyObject *rev;

	if (!self->c)
		return closed_error(self);
	r = current_ring(self);
	rev = r ? PyLong_FromUnsignedLongLong(r->epoch.revision) : NULL;
	Py_XDECREF((PyObject *)r);
	return rev;
}

static PyObject *client_get_closed(hrpy_client *self, void *unused)
{
	return PyBool_FromLong(self->c == NULL);
}

static PyStructSequence_Field status_fields[] = {
	{ "revision", "etcd revision of the published ring" },
	{ "digest", "digest of the published ring" },
	{ "confirmed_revision", "newest revision known to be applied" },
	{ "unconfirmed_ms", "0 when current, else ms since the ring was last confirmed current" },
	{ "rings_published", "rings published since the client opened" },
	{ "resyncs", "full syncs after the first" },
	{ "reconnects", "reconnections to etcd" },
	{ "endpoint", "endpoint in use ('' if none)" },
	{ "watcher_clients", "clients following this client's watcher (1)" },
	{ NULL, NULL }
};

static PyStructSequence_Desc status_desc = {
	"hashring.Status", "What a client's watcher knows (Client.status()).", status_fields, 9
};

static PyObject *client_status(hrpy_client *self, PyObject *unused)
{
	hrpy_state *st = HRPY_STATE(self);
	hr_error err = { .code = 0 };
	hr_client_status s;
	PyObject *v[9];
	int rc;

	if (!self->c)
		return closed_error(self);
	rc = hr_client_status_get(self->c, &s, &err);
	if (rc < 0)
		return hrpy_raise(st, rc, &err);
	v[0] = PyLong_FromUnsignedLongLong(s.revision);
	v[1] = PyLong_FromUnsignedLongLong(s.digest);
	v[2] = PyLong_FromUnsignedLongLong(s.confirmed_revision);
	v[3] = PyLong_FromLongLong(s.unconfirmed_ms);
	v[4] = PyLong_FromUnsignedLongLong(s.rings_published);
	v[5] = PyLong_FromUnsignedLongLong(s.resyncs);
	v[6] = PyLong_FromUnsignedLongLong(s.reconnects);
	v[7] = PyUnicode_DecodeUTF8(s.endpoint, (Py_ssize_t)strnlen(s.endpoint, sizeof s.endpoint),
				    "backslashreplace");
	v[8] = PyLong_FromUnsignedLongLong(s.watcher_clients);
	return hrpy_record(st->status_type, v, 9);
}

static PyObject *client_wait_synced(hrpy_client *self, PyObject *args, PyObject *kwargs)
{
	static char *names[] = { "timeout", NULL };
	PyObject *timeout_obj = Py_None;
	long long timeout_ms, end;
	hr_error err = { 0 };
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:wait_synced", names, &timeout_obj) ||
	    hrpy_timeout_arg(timeout_obj, "timeout", -1, &timeout_ms) < 0)
		return NULL;
	end = hrpy_now_ms() + timeout_ms;
	/* In slices: a signal handler (KeyboardInterrupt) and close() get
	 * their turn within 100 ms. */
	for (;;) {
		long long left = timeout_ms < 0 ? 100 : end - hrpy_now_ms();

		hr_client *c = self->c;

		if (!c || self->closing)
			return closed_error(self);
		self->busy++;
		Py_BEGIN_ALLOW_THREADS
		rc = hr_client_wait_synced(c, (int)(left < 0 ? 0 : left > 100 ? 100 : left), &err);
		Py_END_ALLOW_THREADS
		self->busy--;
		if (rc == 0)
			Py_RETURN_NONE;
		if (rc != HR_ETIMEDOUT || (timeout_ms >= 0 && hrpy_now_ms() >= end))
			return hrpy_raise(HRPY_STATE(self), rc, &err);
		if (PyErr_CheckSignals() < 0)
			return NULL;
	}
}

static PyObject *client_on_change(hrpy_client *self, PyObject *fn)
{
	if (!PyCallable_Check(fn)) {
		hrpy_type_error(fn, "on_change() takes a callable");
		return NULL;
	}
	if (!self->c || self->closing)
		return closed_error(self);
	if (hrpy_dispatcher_add(self->dispatcher, fn) < 0 ||
	    hrpy_dispatcher_start(self->dispatcher, "hashring-client-callbacks") < 0)
		return NULL;
	Py_INCREF(fn);
	return fn;
}

/* The eventfd of the changes for an event loop, the sink made and
 * attached on the first call. */
static PyObject *client_sink_fd(hrpy_client *self, PyObject *unused)
{
	if (!self->c || self->closing)
		return closed_error(self);
	if (!self->sink) {
		self->sink = hrpy_sink_new();
		if (!self->sink)
			return NULL;
		hrpy_dispatcher_set_sink(self->dispatcher, self->sink);
	}
	return PyLong_FromLong(hrpy_sink_fd(self->sink));
}

static PyObject *client_take_changes(hrpy_client *self, PyObject *unused)
{
	if (!self->sink)
		return PyList_New(0);
	return hrpy_sink_take(HRPY_STATE(self), self->sink);
}

/* After the library's client: its watcher pushes to the sink until then. */
static void sink_free(hrpy_client *self)
{
	hrpy_sink *s = self->sink;

	if (!s)
		return;
	self->sink = NULL;
	hrpy_dispatcher_set_sink(self->dispatcher, NULL);
	hrpy_sink_free(s);
}

static PyObject *client_acks(hrpy_client *self, PyObject *unused)
{
	if (!self->c)
		return closed_error(self);
	return hrpy_acks_read(HRPY_STATE(self), &self->etcd.cfg,
			      self->ack_prefix);
}

static PyObject *client_wait_acks(hrpy_client *self, PyObject *args, PyObject *kwargs)
{
	static char *names[] = { "revision", "timeout", NULL };
	PyObject *rev_obj = Py_None, *timeout_obj = Py_None;
	unsigned long long revision;
	long long timeout_ms;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:wait_acks", names, &rev_obj,
					 &timeout_obj) ||
	    hrpy_timeout_arg(timeout_obj, "timeout", 30000, &timeout_ms) < 0)
		return NULL;
	if (!self->c)
		return closed_error(self);
	if (rev_obj == Py_None) {
		hrpy_ring *r = current_ring(self);

		if (!r)
			return NULL;
		revision = r->epoch.revision;
		Py_DECREF(r);
		if (revision == 0) {
			PyErr_SetString(PyExc_ValueError, "wait_acks(): the client has no ring from "
					"etcd yet: give a revision");
			return NULL;
		}
	} else {
		if (hrpy_uint_arg(rev_obj, "revision", UINT64_MAX, &revision) < 0)
			return NULL;
	}
	return hrpy_acks_wait(HRPY_STATE(self), &self->etcd.cfg,
			      self->ack_prefix, revision, timeout_ms);
}

/* Collects the exposition's pieces. */
static int metrics_piece(void *userdata, const char *data, size_t len)
{
	PyObject *piece = PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
	int rc = piece ? PyList_Append(userdata, piece) : -1;

	Py_XDECREF(piece);
	return rc < 0 ? 1 : 0;
}

static PyObject *client_metrics(hrpy_client *self, PyObject *args, PyObject *kwargs)
{
	if (!self->c)
		return closed_error(self);
	return hrpy_metrics_text(HRPY_STATE(self), self->c, NULL, args, kwargs);
}

PyObject *hrpy_metrics_text(hrpy_state *st, hr_client *client, const hr_ring *ring,
			    PyObject *args, PyObject *kwargs)
{
	static char *names[] = { "name_prefix", "labels", NULL };
	PyObject *prefix_obj = Py_None, *labels_obj = Py_None, *pieces = NULL, *empty, *text = NULL;
	hr_metrics_label *labels = NULL;
	hr_metrics_options opts;
	hr_error err = { 0 };
	Py_ssize_t pos = 0, i = 0;
	PyObject *name, *value;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OO:metrics", names, &prefix_obj,
					 &labels_obj))
		return NULL;
	hr_metrics_options_init(&opts);
	if (prefix_obj != Py_None && !(opts.name_prefix = hrpy_cstr(prefix_obj, "name_prefix")))
		return NULL;
	if (labels_obj != Py_None) {
		if (!PyDict_Check(labels_obj)) {
			hrpy_type_error(labels_obj, "labels must be a dict of str to str");
			return NULL;
		}
		labels = PyMem_Calloc((size_t)PyDict_Size(labels_obj) + 1, sizeof *labels);
		if (!labels)
			return PyErr_NoMemory();
		while (PyDict_Next(labels_obj, &pos, &name, &value)) {
			labels[i].name = hrpy_cstr(name, "a label name");
			labels[i].value = labels[i].name ? hrpy_cstr(value, "a label value") : NULL;
			if (!labels[i++].value)
				goto out;
		}
		opts.labels = labels;
		opts.label_count = (size_t)i;
	}
	pieces = PyList_New(0);
	if (!pieces)
		goto out;
	/* The pieces are Python objects: written with the GIL held. */
	if (client)
		rc = hr_client_metrics_write(client, metrics_piece, pieces, &opts, &err);
	else
		rc = hr_ring_metrics_write(ring, metrics_piece, pieces, &opts, &err);
	if (PyErr_Occurred())
		goto out;
	if (rc < 0) {
		hrpy_raise(st, rc, &err);
		goto out;
	}
	empty = PyBytes_FromStringAndSize(NULL, 0);
	if (empty) {
		PyObject *joined = PyObject_CallMethod(empty, "join", "O", pieces);

		Py_DECREF(empty);
		if (joined) {
			text = PyUnicode_FromEncodedObject(joined, "utf-8", "strict");
			Py_DECREF(joined);
		}
	}
out:
	Py_XDECREF(pieces);
	PyMem_Free(labels);
	return text;
}

static PyObject *client_close(hrpy_client *self, PyObject *unused);

/* As files do: a closed one cannot be entered again. */
static PyObject *client_enter(hrpy_client *self, PyObject *unused)
{
	if (!self->c || self->closing)
		return closed_error(self);
	Py_INCREF((PyObject *)self);
	return (PyObject *)self;
}

static PyObject *client_exit(hrpy_client *self, PyObject *args)
{
	PyObject *r = client_close(self, NULL);

	Py_XDECREF(r);
	if (!r)
		return NULL;
	Py_RETURN_FALSE;
}

/* Closes the library's client: no call starts from now on; the calls
 * running without the GIL (on their own copy of the pointer) are waited
 * for; then it closes with the GIL released (the watcher thread it joins
 * never waits for Python). */
static void close_library(hrpy_client *self)
{
	hr_client *c = self->c;

	if (!c)
		return;
	self->c = NULL;
	hrpy_wait_idle(&self->busy);
	Py_BEGIN_ALLOW_THREADS
	hr_client_close(c);
	Py_END_ALLOW_THREADS
	hrpy_open_remove(HRPY_STATE(self), &self->open);
}

static PyObject *client_close(hrpy_client *self, PyObject *unused)
{
	PyObject *exc_type, *exc_value, *exc_tb;
	int rc;

	if (self->closing)
		Py_RETURN_NONE;
	self->closing = 1;
	/* Callbacks first, while the client still answers them; then no
	 * callback starts.  A running one is waited for, unless close() is
	 * called from it. */
	rc = hrpy_dispatcher_stop(self->dispatcher, 1);
	/* Close whatever happened (a KeyboardInterrupt in the join), and
	 * report it after. */
	PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
	close_library(self);
	sink_free(self);
	Py_CLEAR(self->current);
	PyErr_Restore(exc_type, exc_value, exc_tb);
	if (rc < 0)
		return NULL;
	Py_RETURN_NONE;
}

static void client_forget(PyObject *obj)
{
	hrpy_client *self = (hrpy_client *)obj;

	hrpy_dispatcher_forget(self->dispatcher);
	self->busy = 0;
	/* An agent's reader goes on in the child (docs/agent.md); its log
	 * lines, which no thread here could deliver, are dropped. */
	if (self->agent)
		return;
	self->c = NULL;
	self->closing = 1;
	self->forked = 1;
	if (self->sink)
		hrpy_sink_forget(self->sink);
}

static void etcd_clear(hrpy_etcd *e)
{
	Py_CLEAR(e->keep);
}

static int client_traverse(hrpy_client *self, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE((PyObject *)self));
	Py_VISIT(self->dispatcher);
	Py_VISIT(self->etcd.keep);
	return 0;
}

/* Breaking a reference cycle (client -> callbacks -> client) closes the
 * client: its watcher must be gone before the dispatcher it queues to. */
static int client_clear(hrpy_client *self)
{
	self->closing = 1;
	if (self->dispatcher)
		hrpy_dispatcher_stop(self->dispatcher, 0);
	close_library(self);
	if (self->dispatcher)
		sink_free(self);
	Py_CLEAR(self->current);
	Py_CLEAR(self->dispatcher);
	etcd_clear(&self->etcd);
	return 0;
}

static void client_dealloc(hrpy_client *self)
{
	PyTypeObject *tp = Py_TYPE((PyObject *)self);

	PyObject_GC_UnTrack(self);
	client_clear(self);
	((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
	Py_DECREF(tp);
}

/* ---- opening ---------------------------------------------------------------- */

#define CLIENT(f, kind) { #f, kind, 3, offsetof(hr_client_config, f) }

static const hrpy_opt client_options[] = {
	CLIENT(open_timeout_ms, HRPY_OPT_INT),
	CLIENT(open_nonblocking, HRPY_OPT_BOOL),
	CLIENT(backoff_initial_ms, HRPY_OPT_INT),
	CLIENT(backoff_max_ms, HRPY_OPT_INT),
	CLIENT(probe_interval_ms, HRPY_OPT_INT),
	CLIENT(stale_warn_ms, HRPY_OPT_INT),
	CLIENT(page_size, HRPY_OPT_UINT),
	CLIENT(ack_client_id, HRPY_OPT_STR),
	CLIENT(ack_prefix, HRPY_OPT_STR),
	CLIENT(ack_ttl_s, HRPY_OPT_INT),
	CLIENT(ack_interval_ms, HRPY_OPT_INT),
	CLIENT(probe_jitter_pct, HRPY_OPT_INT),
	CLIENT(endpoint_order, HRPY_OPT_ORDER),
	CLIENT(agent_dir, HRPY_OPT_PATH),
	{ "on_change", HRPY_OPT_OBJECT, 4, offsetof(struct client_extra, on_change) },
};

/* Positional endpoints and prefix, merged into a copy of the keywords. */
PyObject *hrpy_merge_positional(const char *fname, PyObject *args, PyObject *kwargs)
{
	static const char *const names[] = { "endpoints", "prefix" };
	PyObject *all = kwargs ? PyDict_Copy(kwargs) : PyDict_New();
	Py_ssize_t n = PyTuple_Size(args);

	if (!all)
		return NULL;
	if (n > 2) {
		PyErr_Format(PyExc_TypeError, "%s() takes at most 2 positional arguments "
			     "(endpoints, prefix), %zd given", fname, n);
		goto fail;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		if (PyDict_GetItemString(all, names[i])) {
			PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
				     fname, names[i]);
			goto fail;
		}
		if (PyDict_SetItemString(all, names[i], PyTuple_GetItem(args, i)) < 0)
			goto fail;
	}
	return all;
fail:
	Py_DECREF(all);
	return NULL;
}

int hrpy_etcd_init(hrpy_etcd *e)
{
	memset(e, 0, sizeof *e);
	hr_etcd_config_init(&e->cfg);
	hr_ring_options_init(&e->ring);
	e->cfg.ring = &e->ring;
	e->cfg.prefix = HRPY_DEFAULT_PREFIX;
	e->cfg.log_level = HR_LOG_WARN;
	e->keep = PyList_New(0);
	return e->keep ? 0 : -1;
}

static PyObject *client_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
	hrpy_state *st = hrpy_state_of_type(type);
	hrpy_opt opts[HRPY_ETCD_OPTIONS_MAX + 16];
	struct client_extra extra = { NULL };
	hrpy_client *self;
	hr_client_config cfg;
	hr_error err = { 0 };
	PyObject *all, *with_sink;
	size_t n;
	int rc;

	self = PyObject_GC_New(hrpy_client, type);
	if (!self)
		return NULL;
	self->c = NULL;
	self->current = NULL;
	self->dispatcher = NULL;
	self->sink = NULL;
	self->ack_prefix = NULL;
	self->busy = 0;
	self->closing = 1; /* until open */
	self->forked = 0;
	self->agent = 0;
	self->open.self = NULL;
	memset(&self->etcd, 0, sizeof self->etcd);
	PyObject_GC_Track(self);
	if (hrpy_etcd_init(&self->etcd) < 0)
		goto fail;
	hr_client_config_init(&cfg);
	n = hrpy_etcd_options(opts, 1);
	memcpy(opts + n, client_options, sizeof client_options);
	n += sizeof client_options / sizeof client_options[0];
	all = hrpy_merge_positional("Client", args, kwargs);
	if (!all)
		goto fail;
	/* hashring.AsyncClient's: the sink made before the open, so that the
	 * first sync's change is queued for the loop too. */
	with_sink = PyDict_GetItemString(all, "_sink");
	if (with_sink) {
		with_sink = PyObject_IsTrue(with_sink) ? Py_True : NULL;
		if (PyDict_DelItemString(all, "_sink") < 0) {
			Py_DECREF(all);
			goto fail;
		}
	}
	/* Messages name the class the caller made. */
	rc = hrpy_options_parse(with_sink ? "AsyncClient" : "Client", all, opts, n,
				(void *const[]){ &self->etcd.cfg, &self->etcd.ring, &self->etcd,
						 &cfg, &extra },
				self->etcd.keep);
	if (rc == 0)
		rc = hrpy_default_log(all, &self->etcd);
	/* The callables stay referenced by the dispatcher. */
	self->dispatcher = rc < 0 ? NULL : hrpy_dispatcher_new(st, self->etcd.log, NULL);
	Py_DECREF(all);
	if (!self->dispatcher)
		goto fail;
	self->ack_prefix = cfg.ack_prefix ? cfg.ack_prefix : "/hashring/acks/";
	if (self->etcd.log) {
		self->etcd.cfg.log = hrpy_on_log;
		self->etcd.cfg.log_userdata = hrpy_dispatcher_userdata(self->dispatcher);
	}
	if (cfg.agent_dir && (extra.on_change || with_sink)) {
		/* A reader of an agent has no thread to call back from. */
		PyErr_SetString(PyExc_ValueError, extra.on_change ?
				"Client(): agent_dir does not go with on_change" :
				"AsyncClient(): agent_dir is not supported (use Client: its "
				"lookups never block)");
		goto fail;
	}
	if (!cfg.agent_dir) {
		cfg.on_change = hrpy_on_change;
		cfg.on_change_userdata = hrpy_dispatcher_userdata(self->dispatcher);
	}
	if (with_sink) {
		self->sink = hrpy_sink_new();
		if (!self->sink)
			goto fail;
		hrpy_dispatcher_set_sink(self->dispatcher, self->sink);
	}
	/* Lookups take the batch path, which hot keys do not sample. */
	cfg.hot_key_sample = 0;
	if (extra.on_change && hrpy_dispatcher_add(self->dispatcher, extra.on_change) < 0)
		goto fail;
	if ((extra.on_change || self->etcd.log) &&
	    hrpy_dispatcher_start(self->dispatcher, "hashring-client-callbacks") < 0)
		goto fail;
	Py_BEGIN_ALLOW_THREADS
	rc = hr_client_open(&self->etcd.cfg, &cfg, &self->c, &err);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		self->c = NULL;
		hrpy_raise(st, rc, &err);
		goto fail;
	}
	self->closing = 0;
	self->agent = cfg.agent_dir != NULL;
	hrpy_open_add(st, &self->open, (PyObject *)self, client_forget);
	return (PyObject *)self;
fail:
	if (self->dispatcher) {
		PyObject *exc_type, *exc_value, *exc_tb;

		PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
		hrpy_dispatcher_stop(self->dispatcher, 1);
		PyErr_Clear();
		PyErr_Restore(exc_type, exc_value, exc_tb);
	}
	Py_DECREF(self);
	return NULL;
}

static PyMethodDef client_methods[] = {
	{ "lookup", (PyCFunction)client_lookup, METH_O,
	  "lookup(key) -> Owner\n\nThe owners of `key` (str as UTF-8, bytes or any bytes-like "
	  "object) in the\ncurrent ring.  Never blocks.  Raises EmptyRingError "
	  "while\nthe ring has no node." },
	{ "lookup_index", (PyCFunction)client_lookup_index, METH_O,
	  "lookup_index(key) -> int | None\n\nThe index of `key`'s write-view owner in the "
	  "current ring (None if that\nview is empty): lookup(key) without making an answer. "
	  "The ring may\nchange before the index is used: to map indexes to nodes, take "
	  "the ring\n(ring()) and use its lookup_index() and node(i).  Raises "
	  "EmptyRingError\nwhile the ring has no node." },
	{ "lookup_many", (PyCFunction)client_lookup_many, METH_O,
	  "lookup_many(keys) -> list[Owner]\n\nThe owners of every key of an iterable, all from "
	  "one ring, in one batch\n(the GIL released from 64 keys on)." },
	{ "replicas", (PyCFunction)(void (*)(void))client_replicas, METH_VARARGS | METH_KEYWORDS,
	  "replicas(key, n=3, *, view='write') -> list[Node]\n\nThe preference list of `key` in "
	  "the current ring (Ring.replicas)." },
	{ "nodes", (PyCFunction)client_nodes, METH_NOARGS,
	  "nodes() -> list[Node]\n\nThe nodes of the current ring, in id order." },
	{ "ring", (PyCFunction)client_ring, METH_NOARGS,
	  "ring() -> Ring\n\nThe current ring, held: it stays as it is, whatever the client "
	  "follows\nafterwards." },
	{ "status", (PyCFunction)client_status, METH_NOARGS,
	  "status() -> Status\n\nWhat the watcher knows: revisions, staleness, reconnections." },
	{ "wait_synced", (PyCFunction)(void (*)(void))client_wait_synced,
	  METH_VARARGS | METH_KEYWORDS,
	  "wait_synced(timeout=None) -> None\n\nWaits up to `timeout` seconds (None: for ever) "
	  "for the first ring of a\nclient opened with open_nonblocking=True.  Raises "
	  "hashring.TimeoutError, or\nthe error that makes waiting pointless (AuthError, ...)." },
	{ "on_change", (PyCFunction)client_on_change, METH_O,
	  "on_change(fn) -> fn\n\nCalls fn(old_ring, new_ring) after each ring the client "
	  "publishes from\nnow on, on a Python thread of the client's (one for all its "
	  "callbacks).\nChanges that come while a callback runs are coalesced: the next call's "
	  "\nold ring is the previous call's new ring.  An exception is reported\n"
	  "(sys.unraisablehook).  Usable as a decorator." },
	{ "_sink_fd", (PyCFunction)client_sink_fd, METH_NOARGS,
	  "_sink_fd() -> int\n\nThe eventfd an event loop reads for the ring changes "
	  "(hashring.AsyncClient):\nfrom the first call on they are queued for _take_changes()." },
	{ "_take_changes", (PyCFunction)client_take_changes, METH_NOARGS,
	  "_take_changes() -> list[tuple[Ring, Ring, int]]\n\nThe changes queued since the last "
	  "call: (old ring, new ring, changes\nfolded into it)." },
	{ "acks", (PyCFunction)client_acks, METH_NOARGS,
	  "acks() -> Acks\n\nhashring.acks() with the client's etcd settings and ack_prefix." },
	{ "wait_acks", (PyCFunction)(void (*)(void))client_wait_acks, METH_VARARGS | METH_KEYWORDS,
	  "wait_acks(revision=None, timeout=30.0) -> Acks\n\nhashring.wait_acks() with the "
	  "client's etcd settings and ack_prefix;\n`revision` defaults to the current ring's." },
	{ "metrics", (PyCFunction)(void (*)(void))client_metrics, METH_VARARGS | METH_KEYWORDS,
	  "metrics(*, name_prefix=None, labels=None) -> str\n\nThe client's state and ring in the "
	  "Prometheus text format (docs/metrics.md),\nfor a /metrics endpoint of the service's "
	  "(Content-Type METRICS_CONTENT_TYPE)." },
	{ "close", (PyCFunction)client_close, METH_NOARGS,
	  "close() -> None\n\nStops the callbacks (waiting for one that runs, unless called from "
	  "it),\nthen the watcher, and revokes the ack lease.  Methods raise ClosedError\n"
	  "afterwards; rings and answers taken stay valid.  A second call does nothing." },
	{ "__enter__", (PyCFunction)client_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)client_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef client_getset[] = {
	{ "revision", (getter)client_get_revision, NULL, "etcd revision of the current ring", NULL },
	{ "closed", (getter)client_get_closed, NULL, "whether close() was called", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot client_slots[] = {
	{ Py_tp_doc, "Client(endpoints=None, prefix='/hashring/nodes/', **options)\n\n"
		     "A ring kept in sync with the node records under `prefix` in etcd: a\n"
		     "background thread follows them, and lookups from any thread answer from\n"
		     "the newest ring without blocking.  Opening waits for the first sync\n"
		     "(open_timeout_ms).  Options are the fields of hr_etcd_config and\n"
		     "hr_client_config, by name (docs/python.md lists them).  A context manager:\n"
		     "close() on exit." },
	{ Py_tp_new, client_new },
	{ Py_tp_dealloc, client_dealloc },
	{ Py_tp_traverse, client_traverse },
	{ Py_tp_clear, client_clear },
	{ Py_tp_methods, client_methods },
	{ Py_tp_getset, client_getset },
	{ 0, NULL }
};

static PyType_Spec client_spec = {
	"hashring.Client", sizeof(hrpy_client), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	client_slots
};

int hrpy_client_type_init(PyObject *module, hrpy_state *st)
{
	st->status_type = PyStructSequence_NewType(&status_desc);
	if (!st->status_type ||
	    PyModule_AddObjectRef(module, "Status", (PyObject *)st->status_type) < 0)
		return -1;
	st->client_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &client_spec, NULL);
	if (!st->client_type)
		return -1;
	return PyModule_AddType(module, st->client_type);
}
