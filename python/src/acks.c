/* SPDX-License-Identifier: MIT */
/*
 * acks.c - the module's functions over etcd that keep no object:
 * acknowledged epochs (acks, wait_acks), an operator's change of any
 * node's record (update_node), and the key hash (hash_key).
 */
#include "hrpy.h"

#include <stddef.h>
#include <string.h>

#define DEFAULT_ACK_PREFIX "/hashring/acks/"

static PyStructSequence_Field ack_fields[] = {
	{ "client_id", "the client's ack_client_id" },
	{ "revision", "its ring matches etcd at this revision" },
	{ "digest", "digest of its ring" },
	{ "lag", "ring_revision - revision; 0 at or past it" },
	{ "lease", "the lease the ack is attached to" },
	{ "time_ms", "when it was written: ms since the epoch, the client's clock" },
	{ "version", "the client's library version" },
	{ "conflict", "another live client reports this revision with another digest" },
	{ NULL, NULL }
};

static PyStructSequence_Desc ack_desc = {
	"hashring.Ack", "One live client's last acknowledged ring.", ack_fields, 8
};

static PyStructSequence_Field acks_fields[] = {
	{ "ring_revision", "newest mod revision of the records (0: no record), the lags' base" },
	{ "acks", "list of Ack, in client id order" },
	{ NULL, NULL }
};

static PyStructSequence_Desc acks_desc = {
	"hashring.Acks", "The acks of the live clients under an ack prefix, as read at once.",
	acks_fields, 2
};

static PyObject *ack_object(hrpy_state *st, const hr_ack *a)
{
	PyObject *v[8];

	v[0] = PyUnicode_FromString(a->client_id);
	v[1] = PyLong_FromUnsignedLongLong(a->revision);
	v[2] = PyLong_FromUnsignedLongLong(a->digest);
	v[3] = PyLong_FromUnsignedLongLong(a->lag);
	v[4] = PyLong_FromLongLong(a->lease);
	v[5] = PyLong_FromLongLong(a->time_ms);
	v[6] = PyUnicode_FromString(a->version ? a->version : "");
	v[7] = PyBool_FromLong(a->conflict);
	return hrpy_record(st->ack_type, v, 8);
}

static PyObject *acks_object(hrpy_state *st, const hr_acks *acks)
{
	size_t n = hr_acks_count(acks);
	PyObject *list = PyList_New((Py_ssize_t)n), *rev;

	for (size_t i = 0; list && i < n; i++) {
		PyObject *a = ack_object(st, hr_acks_get(acks, i));

		if (!a)
			Py_CLEAR(list);
		else
			PyList_SetItem(list, (Py_ssize_t)i, a);
	}
	rev = PyLong_FromUnsignedLongLong(hr_acks_ring_revision(acks));
	return hrpy_record(st->acks_type, (PyObject *[]){ rev, list }, 2);
}

PyObject *hrpy_acks_read(hrpy_state *st, const hr_etcd_config *etcd, const char *ack_prefix)
{
	hr_error err = { 0 };
	hr_acks *acks = NULL;
	PyObject *result;
	int rc;

	Py_BEGIN_ALLOW_THREADS
	rc = hr_acks_new(etcd, ack_prefix, &acks, &err);
	Py_END_ALLOW_THREADS
	if (rc < 0)
		return hrpy_raise(st, rc, &err);
	result = acks_object(st, acks);
	hr_acks_free(acks);
	return result;
}

/* Each slice of a wait: short enough for a signal handler to run soon. */
#define WAIT_SLICE_MS 500

PyObject *hrpy_acks_wait(hrpy_state *st, const hr_etcd_config *etcd, const char *ack_prefix,
			 uint64_t revision, long long timeout_ms)
{
	long long end = hrpy_now_ms() + timeout_ms;
	PyObject *result = NULL, *exc, *last_obj;
	hr_error err = { 0 };
	hr_acks *last;
	int rc;

	for (;;) {
		long long left = end - hrpy_now_ms();

		last = NULL;
		Py_BEGIN_ALLOW_THREADS
		rc = hr_acks_wait(etcd, ack_prefix, revision,
				  (int)(left < 0 ? 0 : left > WAIT_SLICE_MS ? WAIT_SLICE_MS : left),
				  &last, &err);
		Py_END_ALLOW_THREADS
		if (rc != HR_ETIMEDOUT || hrpy_now_ms() >= end)
			break;
		hr_acks_free(last);
		if (PyErr_CheckSignals() < 0)
			return NULL;
	}
	if (rc == 0) {
		result = acks_object(st, last);
	} else if ((exc = hrpy_error_new(st, rc, &err)) != NULL) {
		/* The last list read, for the clients behind or in conflict. */
		last_obj = last ? acks_object(st, last) : Py_None;
		if (!last)
			Py_INCREF(last_obj);
		if (last_obj && PyObject_SetAttrString(exc, "acks", last_obj) == 0)
			PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_XDECREF(last_obj);
		Py_DECREF(exc);
	}
	hr_acks_free(last);
	return result;
}

/*
 * The etcd settings of a module function, from its keywords (no `log`:
 * a one-shot call has no callback thread; its lines go to stderr), with the
 * extra options given.  `e` is set up here; the caller clears e->keep.
 */
static int function_settings(const char *fname, PyObject *args, PyObject *kwargs,
			     hrpy_etcd *e, const hrpy_opt *extra, size_t nextra,
			     void *const *extra_targets)
{
	hrpy_opt opts[HRPY_ETCD_OPTIONS_MAX + 8];
	void *targets[8] = { &e->cfg, &e->ring, e };
	PyObject *all;
	size_t n;
	int rc;

	if (hrpy_etcd_init(e) < 0)
		return -1;
	n = hrpy_etcd_options(opts, 0);
	memcpy(opts + n, extra, nextra * sizeof *extra);
	n += nextra;
	for (size_t i = 0; i < 4 && extra_targets && extra_targets[i]; i++)
		targets[3 + i] = extra_targets[i];
	all = hrpy_merge_positional(fname, args, kwargs);
	if (!all)
		return -1;
	rc = hrpy_options_parse(fname, all, opts, n, targets, e->keep);
	Py_DECREF(all);
	return rc;
}

static PyObject *module_acks(PyObject *module, PyObject *args, PyObject *kwargs)
{
	hrpy_state *st = PyModule_GetState(module);
	const char *ack_prefix = DEFAULT_ACK_PREFIX;
	const hrpy_opt extra[] = { { "ack_prefix", HRPY_OPT_STR, 3, 0 } };
	PyObject *result = NULL;
	hrpy_etcd e;

	if (function_settings("acks", args, kwargs, &e, extra, 1, (void *const[]){ &ack_prefix, NULL }) == 0)
		result = hrpy_acks_read(st, &e.cfg, ack_prefix ? ack_prefix : DEFAULT_ACK_PREFIX);
	Py_XDECREF(e.keep);
	return result;
}

static PyObject *module_wait_acks(PyObject *module, PyObject *args, PyObject *kwargs)
{
	hrpy_state *st = PyModule_GetState(module);
	const char *ack_prefix = DEFAULT_ACK_PREFIX;
	const hrpy_opt extra[] = { { "ack_prefix", HRPY_OPT_STR, 3, 0 } };
	unsigned long long revision;
	PyObject *result = NULL, *rest = NULL, *rev_obj, *timeout_obj = Py_None;
	long long timeout_ms;
	hrpy_etcd e = { 0 };

	/* wait_acks(revision, timeout=30.0, **options): options by keyword. */
	if (PyTuple_Size(args) < 1 || PyTuple_Size(args) > 2) {
		PyErr_SetString(PyExc_TypeError, "wait_acks() takes revision and an optional "
				"timeout; the other options by keyword");
		return NULL;
	}
	rev_obj = PyTuple_GetItem(args, 0);
	if (PyTuple_Size(args) == 2)
		timeout_obj = PyTuple_GetItem(args, 1);
	rest = kwargs ? PyDict_Copy(kwargs) : PyDict_New();
	if (!rest)
		return NULL;
	if (PyTuple_Size(args) < 2 && PyDict_GetItemString(rest, "timeout")) {
		timeout_obj = PyDict_GetItemString(rest, "timeout");
		Py_INCREF(timeout_obj);
		PyDict_DelItemString(rest, "timeout");
	} else {
		Py_INCREF(timeout_obj);
	}
	if (hrpy_uint_arg(rev_obj, "revision", UINT64_MAX, &revision) == 0 &&
	    hrpy_timeout_arg(timeout_obj, "timeout", 30000, &timeout_ms) == 0) {
		PyObject *none = PyTuple_New(0);

		if (none && function_settings("wait_acks", none, rest, &e, extra, 1,
					      (void *const[]){ &ack_prefix, NULL }) == 0)
			result = hrpy_acks_wait(st, &e.cfg,
						ack_prefix ? ack_prefix : DEFAULT_ACK_PREFIX,
						revision, timeout_ms);
		Py_XDECREF(none);
	}
	Py_DECREF(timeout_obj);
	Py_DECREF(rest);
	Py_XDECREF(e.keep);
	return result;
}

/* The fields of an update from state= and weight= (None: unchanged) and
 * heirs=. */
int hrpy_update_fields(PyObject *state, PyObject *weight, int heirs, hr_record_update *upd)
{
	hr_record_update_init(upd);
	if (state && state != Py_None) {
		if (hrpy_state_arg(state, &upd->state) < 0)
			return -1;
		upd->fields |= HR_UPDATE_STATE;
	}
	if (weight && weight != Py_None) {
		if (PyBool_Check(weight) || !(PyLong_Check(weight) || PyFloat_Check(weight))) {
			hrpy_type_error(weight, "weight must be a number");
			return -1;
		}
		upd->weight = PyFloat_AsDouble(weight);
		if (upd->weight == -1.0 && PyErr_Occurred())
			return -1;
		upd->fields |= HR_UPDATE_WEIGHT;
	}
	if (heirs)
		upd->fields |= HR_UPDATE_HEIRS;
	return 0;
}

static PyObject *module_update_node(PyObject *module, PyObject *args, PyObject *kwargs)
{
	hrpy_state *st = PyModule_GetState(module);
	struct upd_args {
		PyObject *state, *weight;
		int heirs;
	} u = { NULL, NULL, 0 };
	const hrpy_opt extra[] = {
		{ "state", HRPY_OPT_OBJECT_ANY, 3, offsetof(struct upd_args, state) },
		{ "weight", HRPY_OPT_OBJECT_ANY, 3, offsetof(struct upd_args, weight) },
		{ "heirs", HRPY_OPT_BOOL, 3, offsetof(struct upd_args, heirs) },
	};
	hr_record_update upd;
	hr_error err = { 0 };
	PyObject *id_obj, *none = NULL, *result = NULL;
	const char *id;
	hrpy_etcd e = { 0 };
	int rc;

	if (PyTuple_Size(args) != 1) {
		PyErr_SetString(PyExc_TypeError, "update_node() takes the node id, then keywords");
		return NULL;
	}
	id_obj = PyTuple_GetItem(args, 0);
	if (!(id = hrpy_cstr(id_obj, "id")) || !(none = PyTuple_New(0)) ||
	    function_settings("update_node", none, kwargs, &e, extra, 3,
			      (void *const[]){ &u, NULL }) < 0 ||
	    hrpy_update_fields(u.state, u.weight, u.heirs, &upd) < 0)
		goto out;
	Py_BEGIN_ALLOW_THREADS
	rc = hr_node_update(&e.cfg, id, &upd, &err);
	Py_END_ALLOW_THREADS
	if (rc < 0)
		hrpy_raise(st, rc, &err);
	else
		result = Py_NewRef(Py_None);
out:
	Py_XDECREF(none);
	Py_XDECREF(e.keep);
	return result;
}

static PyObject *module_hash_key(PyObject *module, PyObject *key)
{
	hrpy_key k;
	uint64_t h;

	if (hrpy_key_get(key, &k) < 0)
		return NULL;
	h = hr_hash_key(k.data, k.len);
	hrpy_key_release(&k);
	return PyLong_FromUnsignedLongLong(h);
}

PyMethodDef hrpy_acks_functions[] = {
	{ "acks", (PyCFunction)(void (*)(void))module_acks, METH_VARARGS | METH_KEYWORDS,
	  "acks(endpoints=None, prefix='/hashring/nodes/', *, ack_prefix='/hashring/acks/',\n"
	  "     **options) -> Acks\n\n"
	  "Reads every live client's ack under `ack_prefix`, with the newest revision\n"
	  "of the records under `prefix` for their lag.  Options: those of Client's\n"
	  "etcd settings (no `log`: lines from log_level, 'warn' by default, go to\n"
	  "stderr)." },
	{ "wait_acks", (PyCFunction)(void (*)(void))module_wait_acks, METH_VARARGS | METH_KEYWORDS,
	  "wait_acks(revision, timeout=30.0, *, endpoints=None, prefix='/hashring/nodes/',\n"
	  "          ack_prefix='/hashring/acks/', **options) -> Acks\n\n"
	  "Waits until every live client acknowledges `revision` or later.  Raises\n"
	  "hashring.TimeoutError naming the clients behind, or ConflictError when two\n"
	  "clients at one revision have different rings; the exception's `acks` is\n"
	  "the last list read (None if none could be)." },
	{ "update_node", (PyCFunction)(void (*)(void))module_update_node,
	  METH_VARARGS | METH_KEYWORDS,
	  "update_node(id, *, state=None, weight=None, heirs=False, endpoints=None,\n"
	  "            prefix='/hashring/nodes/', **options) -> None\n\n"
	  "Changes the record of node `id`, registered by any process, in place: its\n"
	  "lease and other fields are kept.  heirs=True with state='draining' and the\n"
	  "tokens placement hands its tokens to heirs in the same transaction." },
	{ "hash_key", (PyCFunction)module_hash_key, METH_O,
	  "hash_key(key) -> int\n\nThe key's position on the circle: XXH3-64 of its bytes "
	  "(str as UTF-8)." },
	{ NULL, NULL, 0, NULL }
};

int hrpy_acks_types_init(PyObject *module, hrpy_state *st)
{
	st->ack_type = PyStructSequence_NewType(&ack_desc);
	st->acks_type = PyStructSequence_NewType(&acks_desc);
	if (!st->ack_type || !st->acks_type ||
	    PyModule_AddObjectRef(module, "Ack", (PyObject *)st->ack_type) < 0 ||
	    PyModule_AddObjectRef(module, "Acks", (PyObject *)st->acks_type) < 0)
		return -1;
	return 0;
}
