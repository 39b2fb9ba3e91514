/* SPDX-License-Identifier: MIT */
/*
 * registrar.c - hashring.Registrar: a node announced under a lease
 * (hr_registrar_open), its record's updates, and its leave: draining for a
 * while, then deregistering (close(drain=...)), as `hashring register
 * --drain-seconds` does.
 *
 * A lost registration (another process took the id over) is what the
 * library makes of it: status(), update() and deregister() raise
 * ExistsError from then on, and `on_lost` is called with that exception
 * on a Python thread (dispatch.c).  As for clients, hr_registrar_close()
 * must not run beside another call: calls without the GIL count in
 * `busy`, which close() waits to drain.
 */
#include "hrpy.h"

#include <stdio.h>

#include <stddef.h>
#include <string.h>

typedef struct hrpy_registrar {
	PyObject_HEAD
	hr_registrar *r;        /* NULL once closed */
	hrpy_dispatcher *dispatcher;
	PyObject *id;
	size_t tokens;          /* a leave hands them to heirs */
	int busy;
	int drained;            /* turned draining by _start_drain() */
	int closing;
	int forked;             /* registered in the parent of a fork() */
	struct hrpy_open open;
} hrpy_registrar;

/* Settings of the Python object's (not in hr_registration). */
struct registrar_extra {
	PyObject *on_lost;
};

static PyObject *closed_error(hrpy_registrar *self)
{
	return hrpy_closed(HRPY_STATE(self), "registrar", self->forked);
}

static int apply_update(hrpy_registrar *self, const hr_record_update *upd)
{
	hr_registrar *r = self->r; /* close() waits for us, not for self->r */
	hr_error err = { 0 };
	int rc;

	self->busy++;
	Py_BEGIN_ALLOW_THREADS
	rc = hr_registrar_update(r, upd, &err);
	Py_END_ALLOW_THREADS
	self->busy--;
	if (rc < 0) {
		hrpy_raise(HRPY_STATE(self), rc, &err);
		return -1;
	}
	return 0;
}

static PyObject *registrar_update(hrpy_registrar *self, PyObject *args, PyObject *kwargs)
{
	static char *names[] = { "state", "weight", "heirs", NULL };
	PyObject *state = Py_None, *weight = Py_None;
	hr_record_update upd;
	int heirs = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOp:update", names, &state, &weight,
					 &heirs) ||
	    hrpy_update_fields(state, weight, heirs, &upd) < 0)
		return NULL;
	if (!self->r || self->closing)
		return closed_error(self);
	if (apply_update(self, &upd) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *registrar_status(hrpy_registrar *self, PyObject *unused)
{
	hr_error err = { 0 };
	int rc;

	if (!self->r)
		return closed_error(self);
	rc = hr_registrar_status(self->r, &err);
	if (rc < 0)
		return hrpy_raise(HRPY_STATE(self), rc, &err);
	Py_RETURN_NONE;
}

static PyObject *registrar_deregister(hrpy_registrar *self, PyObject *unused)
{
	hr_registrar *r = self->r;
	hr_error err = { 0 };
	int rc;

	if (!r || self->closing)
		return closed_error(self);
	self->busy++;
	Py_BEGIN_ALLOW_THREADS
	rc = hr_registrar_deregister(r, &err);
	Py_END_ALLOW_THREADS
	self->busy--;
	/* After a loss only our own lease went, and the record, now its
	 * holder's, stays: the library says so through its status. */
	if (rc == 0)
		rc = hr_registrar_status(r, &err);
	if (rc < 0 && rc != HR_ECLOSED)
		return hrpy_raise(HRPY_STATE(self), rc, &err);
	Py_RETURN_NONE;
}

static PyObject *registrar_get_lease(hrpy_registrar *self, void *unused)
{
	return PyLong_FromLongLong(self->r ? hr_registrar_lease(self->r) : 0);
}

static PyObject *registrar_get_id(hrpy_registrar *self, void *unused)
{
	Py_INCREF(self->id);
	return self->id;
}

static PyObject *registrar_get_closed(hrpy_registrar *self, void *unused)
{
	return PyBool_FromLong(self->r == NULL);
}

/* Frees the library's registrar (deregistering if not done yet), with
 * the GIL released, once the calls without the GIL are done. */
static void close_library(hrpy_registrar *self)
{
	hr_registrar *r = self->r;

	if (!r)
		return;
	self->r = NULL; /* no call starts from now on */
	hrpy_wait_idle(&self->busy);
	Py_BEGIN_ALLOW_THREADS
	hr_registrar_close(r);
	Py_END_ALLOW_THREADS
	hrpy_open_remove(HRPY_STATE(self), &self->open);
}

/*
 * Turns the record draining (its tokens to heirs in the same transaction
 * when it has some) for a leave.  0 when it drains; 1 when it cannot and
 * the leave goes on without (a registration taken over or deregistered
 * has nothing to drain; the last node with tokens has no heir: warned,
 * then drained without heirs); -1 with an exception set (a warning made
 * an error).
 */
static int start_drain(hrpy_registrar *self, int drain)
{
	hrpy_state *st = HRPY_STATE(self);
	hr_record_update upd;
	PyObject *exc_type, *exc_value, *exc_tb, *text;
	int heirs = self->tokens > 0, rc;

	for (;;) {
		hr_record_update_init(&upd);
		upd.fields = HR_UPDATE_STATE | (heirs ? HR_UPDATE_HEIRS : 0);
		upd.state = HR_STATE_DRAINING;
		if (apply_update(self, &upd) == 0)
			return 0;
		if (PyErr_ExceptionMatches(st->errors[-HR_EEXIST]) ||
		    PyErr_ExceptionMatches(st->errors[-HR_ECLOSED])) {
			PyErr_Clear();
			return 1;
		}
		PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
		text = exc_value ? PyObject_Str(exc_value) : NULL;
		rc = PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "%s: %S: leaving without%s",
				      heirs ? "cannot hand the tokens to heirs" : "cannot drain",
				      text ? text : Py_None,
				      heirs && drain ? " heirs" : " draining");
		Py_XDECREF(text);
		Py_XDECREF(exc_type);
		Py_XDECREF(exc_value);
		Py_XDECREF(exc_tb);
		if (rc < 0)
			return -1;
		if (!heirs || !drain)
			return 1;
		heirs = 0;
	}
}

/*
 * The leave: with `drain` seconds (or tokens to hand over), the record
 * turns draining first and stays so that long; then the lease is revoked
 * and the thread stopped.  The error of the deregistration (or a signal
 * handler's exception, which cuts the drain short) is raised once the
 * registrar is closed, whatever it was.
 */
static PyObject *registrar_close(hrpy_registrar *self, PyObject *args, PyObject *kwargs)
{
	static char *names[] = { "drain", NULL };
	PyObject *drain_obj = Py_None, *exc_type = NULL, *exc_value = NULL, *exc_tb = NULL;
	hr_registrar *r = self->r;
	hr_error err = { 0 };
	long long drain_ms;
	int rc = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:close", names, &drain_obj) ||
	    hrpy_timeout_arg(drain_obj, "drain", 0, &drain_ms) < 0)
		return NULL;
	if (self->closing || !self->r)
		Py_RETURN_NONE;
	self->closing = 1; /* one close at a time; updates from others stop */
	if ((drain_ms > 0 || self->tokens) && !self->drained)
		rc = start_drain(self, drain_ms > 0);
	if (rc == 0 && drain_ms > 0)
		rc = hrpy_sleep_ms(drain_ms);
	if (rc < 0)
		PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
	if (hrpy_dispatcher_stop(self->dispatcher, 1) < 0 && !exc_type)
		PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
	PyErr_Clear();
	Py_BEGIN_ALLOW_THREADS
	rc = hr_registrar_deregister(r, &err);
	Py_END_ALLOW_THREADS
	/* A registration taken over has only our own lease to revoke. */
	if (rc < 0 && rc != HR_EEXIST && !exc_type) {
		hrpy_raise(HRPY_STATE(self), rc, &err);
		PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
	}
	close_library(self);
	if (exc_type) {
		PyErr_Restore(exc_type, exc_value, exc_tb);
		return NULL;
	}
	Py_RETURN_NONE;
}

/* The first half of close(drain=...), for hashring.AsyncRegistrar, whose
 * wait is the event loop's: the close after it does not drain again. */
static PyObject *registrar_start_drain(hrpy_registrar *self, PyObject *unused)
{
	int rc;

	if (!self->r || self->closing)
		return closed_error(self);
	rc = start_drain(self, 1);
	if (rc < 0)
		return NULL;
	self->drained = 1;
	return PyBool_FromLong(rc == 0);
}

/* As files do: a closed one cannot be entered again. */
static PyObject *registrar_enter(hrpy_registrar *self, PyObject *unused)
{
	if (!self->r || self->closing)
		return closed_error(self);
	Py_INCREF((PyObject *)self);
	return (PyObject *)self;
}

static PyObject *registrar_exit(hrpy_registrar *self, PyObject *args)
{
	PyObject *none = PyTuple_New(0);
	PyObject *r = none ? registrar_close(self, none, NULL) : NULL;

	Py_XDECREF(none);
	Py_XDECREF(r);
	if (!r)
		return NULL;
	Py_RETURN_FALSE;
}

static PyObject *registrar_repr(hrpy_registrar *self)
{
	return PyUnicode_FromFormat("<hashring.Registrar id=%R lease=%lld%s>", self->id,
				    (long long)(self->r ? hr_registrar_lease(self->r) : 0),
				    self->r ? "" : " closed");
}

static void registrar_forget(PyObject *obj)
{
	hrpy_registrar *self = (hrpy_registrar *)obj;

	self->r = NULL;
	self->closing = 1;
	self->forked = 1;
	self->busy = 0;
	hrpy_dispatcher_forget(self->dispatcher);
}

static int registrar_traverse(hrpy_registrar *self, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE((PyObject *)self));
	Py_VISIT(self->dispatcher);
	return 0;
}

/* As for clients: the renewal thread goes before the dispatcher it
 * queues to.  Dropped unclosed, a registrar deregisters. */
static int registrar_clear(hrpy_registrar *self)
{
	self->closing = 1;
	if (self->dispatcher)
		hrpy_dispatcher_stop(self->dispatcher, 0);
	close_library(self);
	Py_CLEAR(self->dispatcher);
	return 0;
}

static void registrar_dealloc(hrpy_registrar *self)
{
	PyTypeObject *tp = Py_TYPE((PyObject *)self);

	PyObject_GC_UnTrack(self);
	registrar_clear(self);
	Py_CLEAR(self->id);
	((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
	Py_DECREF(tp);
}

#define REG(f, kind) { #f, kind, 3, offsetof(hr_registration, f) }

static const hrpy_opt registration_options[] = {
	REG(id, HRPY_OPT_STR),
	REG(addr, HRPY_OPT_STR),
	REG(zone, HRPY_OPT_STR),
	REG(weight, HRPY_OPT_DOUBLE),
	REG(state, HRPY_OPT_STATE),
	REG(ttl_s, HRPY_OPT_INT),
	REG(replace, HRPY_OPT_BOOL),
	REG(tokens, HRPY_OPT_SIZE),
	REG(open_timeout_ms, HRPY_OPT_INT),
	REG(backoff_initial_ms, HRPY_OPT_INT),
	{ "on_lost", HRPY_OPT_OBJECT, 4, offsetof(struct registrar_extra, on_lost) },
};

static PyObject *registrar_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
	hrpy_state *st = hrpy_state_of_type(type);
	hrpy_opt opts[HRPY_ETCD_OPTIONS_MAX + 16];
	struct registrar_extra extra = { NULL };
	hrpy_registrar *self;
	hr_registration reg;
	hr_error err = { 0 };
	PyObject *all = NULL;
	hrpy_etcd e;
	size_t n;
	int rc;

	memset(&e, 0, sizeof e);
	self = PyObject_GC_New(hrpy_registrar, type);
	if (!self)
		return NULL;
	self->r = NULL;
	self->dispatcher = NULL;
	self->id = NULL;
	self->tokens = 0;
	self->busy = 0;
	self->drained = 0;
	self->closing = 1; /* until registered */
	self->forked = 0;
	self->open.self = NULL;
	PyObject_GC_Track(self);
	if (hrpy_etcd_init(&e) < 0)
		goto fail;
	hr_registration_init(&reg);
	n = hrpy_etcd_options(opts, 1);
	memcpy(opts + n, registration_options, sizeof registration_options);
	n += sizeof registration_options / sizeof registration_options[0];
	all = hrpy_merge_positional("Registrar", args, kwargs);
	if (!all || hrpy_options_parse("Registrar", all, opts, n,
				       (void *const[]){ &e.cfg, &e.ring, &e, &reg, &extra },
				       e.keep) < 0 ||
	    hrpy_default_log(all, &e) < 0)
		goto fail;
	if (!reg.id || !reg.addr) {
		PyErr_SetString(PyExc_TypeError, "Registrar() needs id= and addr=");
		goto fail;
	}
	self->id = PyUnicode_FromString(reg.id);
	self->dispatcher = hrpy_dispatcher_new(st, e.log, extra.on_lost);
	if (!self->id || !self->dispatcher)
		goto fail;
	self->tokens = reg.tokens;
	if (e.log) {
		e.cfg.log = hrpy_on_log;
		e.cfg.log_userdata = hrpy_dispatcher_userdata(self->dispatcher);
	}
	if (extra.on_lost) {
		reg.on_lost = hrpy_on_lost;
		reg.on_lost_userdata = hrpy_dispatcher_userdata(self->dispatcher);
	}
	if ((e.log || extra.on_lost) &&
	    hrpy_dispatcher_start(self->dispatcher, "hashring-registrar-callbacks") < 0)
		goto fail;
	Py_BEGIN_ALLOW_THREADS
	rc = hr_registrar_open(&e.cfg, &reg, &self->r, &err);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		self->r = NULL;
		hrpy_raise(st, rc, &err);
		goto fail;
	}
	self->closing = 0;
	hrpy_open_add(st, &self->open, (PyObject *)self, registrar_forget);
	Py_DECREF(all);
	Py_DECREF(e.keep);
	return (PyObject *)self;
fail:
	if (self->dispatcher) {
		PyObject *exc_type, *exc_value, *exc_tb;

		PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
		hrpy_dispatcher_stop(self->dispatcher, 1);
		PyErr_Clear();
		PyErr_Restore(exc_type, exc_value, exc_tb);
	}
	Py_XDECREF(all);
	Py_XDECREF(e.keep);
	Py_DECREF(self);
	return NULL;
}

static PyMethodDef registrar_methods[] = {
	{ "update", (PyCFunction)(void (*)(void))registrar_update, METH_VARARGS | METH_KEYWORDS,
	  "update(*, state=None, weight=None, heirs=False) -> None\n\nChanges the record in "
	  "place (None: unchanged), keeping its lease.  With\nheirs=True and state='draining' "
	  "(tokens placement), the node's tokens go\nto heirs in the same transaction.  "
	  "Raises ExistsError once the id was\ntaken over, NotFoundError if the key was "
	  "deleted (the renewal puts it back)." },
	{ "status", (PyCFunction)registrar_status, METH_NOARGS,
	  "status() -> None\n\nReturns while the registration holds (also through an etcd "
	  "outage);\nraises ExistsError once another process took the id over, ClosedError\n"
	  "after deregister().  Never blocks." },
	{ "deregister", (PyCFunction)registrar_deregister, METH_NOARGS,
	  "deregister() -> None\n\nRevokes the lease: the record goes at once.  A second call "
	  "does nothing.\nRaises ExistsError once the id was taken over: our lease is revoked,\n"
	  "the record, now the new holder's, stays." },
	{ "close", (PyCFunction)(void (*)(void))registrar_close, METH_VARARGS | METH_KEYWORDS,
	  "close(drain=None) -> None\n\nLeaves: with `drain` seconds the node turns draining "
	  "first and stays so\nthat long (reads stay with it, writes go to the next owner), "
	  "handing its\ntokens to heirs if it has some; then the lease is revoked and the\n"
	  "renewal stops.  A signal (KeyboardInterrupt) cuts the drain short.  A\nsecond call "
	  "does nothing." },
	{ "_start_drain", (PyCFunction)registrar_start_drain, METH_NOARGS,
	  "_start_drain() -> bool\n\nTurns the record draining as close(drain=...) does (its "
	  "tokens to heirs\nwhen it has some); False when it could not (warned).  A close() "
	  "after\nit does not drain again." },
	{ "__enter__", (PyCFunction)registrar_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)registrar_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef registrar_getset[] = {
	{ "lease", (getter)registrar_get_lease, NULL,
	  "the lease the record is attached to now (0 once closed or taken over)", NULL },
	{ "id", (getter)registrar_get_id, NULL, "the node id", NULL },
	{ "closed", (getter)registrar_get_closed, NULL, "whether close() was called", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot registrar_slots[] = {
	{ Py_tp_doc, "Registrar(endpoints=None, prefix='/hashring/nodes/', *, id, addr, zone=None,\n"
		     "          weight=1.0, state='warming', ttl_s=10, replace=False, tokens=0,\n"
		     "          open_timeout_ms=10000, backoff_initial_ms=100, on_lost=None,\n"
		     "          **options)\n\n"
		     "Registers node `id` under `prefix`, attached to a lease a background thread\n"
		     "renews every ttl_s/3: if the process dies, the node leaves every ring\n"
		     "within ttl_s.  Options: the etcd settings of Client.  on_lost(exc) is\n"
		     "called on a Python thread if another process takes the id over.  A\n"
		     "context manager: close() on exit." },
	{ Py_tp_new, registrar_new },
	{ Py_tp_dealloc, registrar_dealloc },
	{ Py_tp_traverse, registrar_traverse },
	{ Py_tp_clear, registrar_clear },
	{ Py_tp_methods, registrar_methods },
	{ Py_tp_getset, registrar_getset },
	{ Py_tp_repr, registrar_repr },
	{ 0, NULL }
};

static PyType_Spec registrar_spec = {
	"hashring.Registrar", sizeof(hrpy_registrar), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	registrar_slots
};

int hrpy_registrar_type_init(PyObject *module, hrpy_state *st)
{
	st->registrar_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &registrar_spec,
								      NULL);
	if (!st->registrar_type)
		return -1;
	return PyModule_AddType(module, st->registrar_type);
}
