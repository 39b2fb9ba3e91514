/* SPDX-License-Identifier: MIT */
/*
 * args.c - Python arguments to the library's types: keys, names, timeouts
 * and the keyword settings of hr_etcd_config and the structs beside it.
 *
 * Types are checked here, before the library sees anything (TypeError);
 * values within a type's range are left to the library, whose checks and
 * messages are the contract (its HR_EINVAL is a ValueError).  A value no C
 * field can hold (a negative count, an int past the field's range, a
 * string with a NUL byte) is a ValueError from here.
 */
#include "hrpy.h"

#include <stdio.h>

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

int hrpy_type_error(PyObject *o, const char *fmt, ...)
{
	PyObject *name = PyType_GetName(Py_TYPE(o));
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (name)
		PyErr_Format(PyExc_TypeError, "%s, not %U", what, name);
	Py_XDECREF(name);
	return -1;
}

int hrpy_key_get_any(PyObject *o, hrpy_key *k)
{
	Py_ssize_t len;

	k->held = 0;
	if (PyBytes_Check(o)) {
		char *data;

		if (PyBytes_AsStringAndSize(o, &data, &len) < 0)
			return -1;
		k->data = data;
	} else if (PyUnicode_Check(o)) {
		k->data = PyUnicode_AsUTF8AndSize(o, &len);
		if (!k->data)
			return -1;
	} else if (PyObject_CheckBuffer(o)) {
		if (PyObject_GetBuffer(o, &k->view, PyBUF_SIMPLE) < 0)
			return -1;
		k->held = 1;
		k->data = k->view.buf;
		len = k->view.len;
	} else {
		hrpy_type_error(o, "a key must be str, bytes or a bytes-like object");
		return -1;
	}
	k->len = (size_t)len;
	return 0;
}

const char *hrpy_cstr(PyObject *o, const char *what)
{
	const char *s;
	Py_ssize_t len;

	if (!PyUnicode_Check(o)) {
		hrpy_type_error(o, "%s must be str", what);
		return NULL;
	}
	s = PyUnicode_AsUTF8AndSize(o, &len);
	if (s && strlen(s) != (size_t)len) {
		PyErr_Format(PyExc_ValueError, "%s must not contain a NUL character", what);
		return NULL;
	}
	return s;
}

/* Which of `names` (NULL-terminated) `o` is; -1 with an exception. */
static int choice(PyObject *o, const char *what, const char *const *names)
{
	const char *s = hrpy_cstr(o, what);
	char list[128] = "";

	if (!s)
		return -1;
	for (int i = 0; names[i]; i++) {
		if (strcmp(s, names[i]) == 0)
			return i;
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s'%s'",
			 i ? ", " : "", names[i]);
	}
	PyErr_Format(PyExc_ValueError, "%s must be one of %s, not %R", what, list, o);
	return -1;
}

static const char *const view_names[] = { "write", "read", NULL };
static const char *const placement_names[] = { "xxh3", "ketama", "maglev",
					       "rendezvous", "tokens", NULL };
const char *hrpy_placement_name(hr_placement p)
{
	return (unsigned)p < sizeof placement_names / sizeof placement_names[0] - 1 ?
	       placement_names[p] : NULL;
}

static const char *const log_level_names[] = { "error", "warn", "info", "debug", NULL };
static const char *const order_names[] = { "spread", "in_order", NULL };

int hrpy_view_arg(PyObject *o, hr_view *out)
{
	int i = choice(o, "view", view_names);

	if (i < 0)
		return -1;
	*out = i ? HR_VIEW_READ : HR_VIEW_WRITE;
	return 0;
}

int hrpy_state_arg(PyObject *o, hr_state *out)
{
	static const char *const names[] = { "active", "warming", "draining", NULL };
	/* A State is a str whose value is its name. */
	int i = choice(o, "state", names);

	if (i < 0)
		return -1;
	*out = (hr_state)i;
	return 0;
}

/* An int that is not a bool, in [lo, hi]. */
static int int_arg(PyObject *o, const char *what, long long lo,
		   unsigned long long hi, unsigned long long *out)
{
	int overflow = 0;
	long long v;

	if (!PyLong_Check(o) || PyBool_Check(o)) {
		hrpy_type_error(o, "%s must be int", what);
		return -1;
	}
	v = PyLong_AsLongLongAndOverflow(o, &overflow);
	if (v == -1 && PyErr_Occurred())
		return -1;
	if (overflow > 0 && hi > (unsigned long long)LLONG_MAX) {
		unsigned long long u = PyLong_AsUnsignedLongLong(o);

		if (!(u == (unsigned long long)-1 && PyErr_Occurred()) && u <= hi) {
			*out = u;
			return 0;
		}
		PyErr_Clear();
	} else if (!overflow && v >= lo && (v < 0 || (unsigned long long)v <= hi)) {
		*out = (unsigned long long)v;
		return 0;
	}
	PyErr_Format(PyExc_ValueError, "%s must be in %lld..%llu, not %R", what, lo, hi, o);
	return -1;
}

int hrpy_uint_arg(PyObject *o, const char *what, unsigned long long max,
		  unsigned long long *out)
{
	return int_arg(o, what, 0, max, out);
}

/* A number (int or float, not bool) as a double. */
static int double_arg(PyObject *o, const char *what, double *out)
{
	if (PyBool_Check(o) || !(PyLong_Check(o) || PyFloat_Check(o))) {
		hrpy_type_error(o, "%s must be a number", what);
		return -1;
	}
	*out = PyFloat_AsDouble(o);
	return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

int hrpy_timeout_arg(PyObject *o, const char *what, long long none_ms,
		     long long *ms)
{
	double s;

	if (o == NULL || o == Py_None) {
		*ms = none_ms;
		return 0;
	}
	if (double_arg(o, what, &s) < 0)
		return -1;
	/* Written so that NaN fails too; a year is as good as forever. */
	if (!(s >= 0 && s <= 366.0 * 86400)) {
		PyErr_Format(PyExc_ValueError, "%s must be from 0 to 31622400 seconds, not %R",
			     what, o);
		return -1;
	}
	*ms = (long long)(s * 1000.0 + 0.5);
	return 0;
}

/* A path as the file system's bytes, kept in `keep`. */
static const char *path_arg(PyObject *o, const char *what, PyObject *keep)
{
	PyObject *fs = PyOS_FSPath(o), *bytes;
	const char *s = NULL;
	char *data;
	Py_ssize_t len;

	if (!fs) {
		if (!PyErr_ExceptionMatches(PyExc_TypeError))
			return NULL; /* raised by the object's __fspath__ */
		PyErr_Clear();
		hrpy_type_error(o, "%s must be a path (str, bytes or os.PathLike)", what);
		return NULL;
	}
	if (PyUnicode_Check(fs)) {
		bytes = PyUnicode_EncodeFSDefault(fs);
		Py_DECREF(fs);
	} else {
		bytes = fs;
	}
	if (!bytes)
		return NULL;
	if (PyBytes_AsStringAndSize(bytes, &data, &len) == 0) {
		if (strlen(data) != (size_t)len)
			PyErr_Format(PyExc_ValueError, "%s must not contain a NUL character", what);
		else if (PyList_Append(keep, bytes) == 0)
			s = data;
	}
	Py_DECREF(bytes);
	return s;
}

/* Endpoints: one str, or an iterable of str joined with commas. */
static const char *endpoints_arg(PyObject *o, PyObject *keep)
{
	PyObject *list, *comma, *joined;
	const char *s = NULL;

	if (PyUnicode_Check(o)) {
		s = hrpy_cstr(o, "endpoints");
		return s && PyList_Append(keep, o) == 0 ? s : NULL;
	}
	if (PyBytes_Check(o) || !(list = PySequence_List(o))) {
		if (!PyBytes_Check(o) && !PyErr_ExceptionMatches(PyExc_TypeError))
			return NULL;
		PyErr_Clear();
		hrpy_type_error(o, "endpoints must be str or a list of str");
		return NULL;
	}
	for (Py_ssize_t i = 0; i < PyList_Size(list); i++) {
		if (!hrpy_cstr(PyList_GetItem(list, i), "each endpoint")) {
			Py_DECREF(list);
			return NULL;
		}
	}
	comma = PyUnicode_FromString(",");
	joined = comma ? PyUnicode_Join(comma, list) : NULL;
	Py_XDECREF(comma);
	Py_DECREF(list);
	if (joined) {
		s = PyUnicode_AsUTF8AndSize(joined, NULL);
		if (PyList_Append(keep, joined) < 0)
			s = NULL;
		Py_DECREF(joined);
	}
	return s;
}

static int option_set(const hrpy_opt *opt, PyObject *v,
		      char *field, PyObject *keep)
{
	unsigned long long u;
	const char *s = NULL;
	int i;

	if (v == Py_None && (opt->kind == HRPY_OPT_STR || opt->kind == HRPY_OPT_PATH ||
			     opt->kind == HRPY_OPT_ENDPOINTS || opt->kind == HRPY_OPT_OBJECT ||
			     opt->kind == HRPY_OPT_OBJECT_ANY)) {
		if (opt->kind == HRPY_OPT_OBJECT || opt->kind == HRPY_OPT_OBJECT_ANY)
			*(PyObject **)field = NULL;
		else
			*(const char **)field = NULL;
		return 0;
	}
	switch (opt->kind) {
	case HRPY_OPT_STR:
		s = hrpy_cstr(v, opt->name);
		if (!s || PyList_Append(keep, v) < 0)
			return -1;
		*(const char **)field = s;
		return 0;
	case HRPY_OPT_PATH:
		s = path_arg(v, opt->name, keep);
		if (!s)
			return -1;
		*(const char **)field = s;
		return 0;
	case HRPY_OPT_ENDPOINTS:
		s = endpoints_arg(v, keep);
		if (!s)
			return -1;
		*(const char **)field = s;
		return 0;
	case HRPY_OPT_INT:
		if (int_arg(v, opt->name, INT_MIN, INT_MAX, &u) < 0)
			return -1;
		*(int *)field = (int)(long long)u;
		return 0;
	case HRPY_OPT_UINT:
		if (int_arg(v, opt->name, 0, UINT_MAX, &u) < 0)
			return -1;
		*(unsigned *)field = (unsigned)u;
		return 0;
	case HRPY_OPT_U64:
		if (int_arg(v, opt->name, 0, UINT64_MAX, &u) < 0)
			return -1;
		*(uint64_t *)field = u;
		return 0;
	case HRPY_OPT_SIZE:
		if (int_arg(v, opt->name, 0, SIZE_MAX, &u) < 0)
			return -1;
		*(size_t *)field = (size_t)u;
		return 0;
	case HRPY_OPT_BOOL:
		if (!PyBool_Check(v)) {
			hrpy_type_error(v, "%s must be bool", opt->name);
			return -1;
		}
		*(int *)field = v == Py_True;
		return 0;
	case HRPY_OPT_DOUBLE:
		return double_arg(v, opt->name, (double *)field);
	case HRPY_OPT_LOG_LEVEL:
		i = choice(v, opt->name, log_level_names);
		if (i < 0)
			return -1;
		*(hr_log_level *)field = (hr_log_level)i;
		return 0;
	case HRPY_OPT_PLACEMENT:
		i = choice(v, opt->name, placement_names);
		if (i < 0)
			return -1;
		*(hr_placement *)field = (hr_placement)i;
		return 0;
	case HRPY_OPT_ORDER:
		i = choice(v, opt->name, order_names);
		if (i < 0)
			return -1;
		*(int *)field = i ? HR_ENDPOINTS_IN_ORDER : HR_ENDPOINTS_SPREAD;
		return 0;
	case HRPY_OPT_STATE:
		return hrpy_state_arg(v, (hr_state *)field);
	case HRPY_OPT_OBJECT:
		if (!PyCallable_Check(v)) {
			hrpy_type_error(v, "%s must be callable", opt->name);
			return -1;
		}
		*(PyObject **)field = v;
		return 0;
	case HRPY_OPT_OBJECT_ANY:
		*(PyObject **)field = v;
		return 0;
	}
	return 0;
}

int hrpy_options_parse(const char *fname, PyObject *kwargs,
		       const hrpy_opt *opts, size_t nopts, void *const *targets,
		       PyObject *keep)
{
	Py_ssize_t pos = 0;
	PyObject *key, *value;

	if (!kwargs)
		return 0;
	while (PyDict_Next(kwargs, &pos, &key, &value)) {
		const char *name = PyUnicode_AsUTF8AndSize(key, NULL);
		size_t i;

		if (!name)
			return -1;
		for (i = 0; i < nopts && strcmp(opts[i].name, name) != 0; i++)
			;
		if (i == nopts) {
			PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'",
				     fname, name);
			return -1;
		}
		if (option_set(&opts[i], value, (char *)targets[opts[i].target] + opts[i].offset,
			       keep) < 0)
			return -1;
	}
	return 0;
}

#define ETCD(f, kind) { #f, kind, 0, offsetof(hr_etcd_config, f) }
#define RING(f, kind) { #f, kind, 1, offsetof(hr_ring_options, f) }

size_t hrpy_etcd_options(hrpy_opt *out, int with_log)
{
	static const hrpy_opt etcd[] = {
		ETCD(endpoints, HRPY_OPT_ENDPOINTS),
		ETCD(prefix, HRPY_OPT_STR),
		ETCD(api_base, HRPY_OPT_STR),
		ETCD(request_timeout_ms, HRPY_OPT_INT),
		ETCD(connect_timeout_ms, HRPY_OPT_INT),
		ETCD(ca_file, HRPY_OPT_PATH),
		ETCD(cert_file, HRPY_OPT_PATH),
		ETCD(key_file, HRPY_OPT_PATH),
		ETCD(username, HRPY_OPT_STR),
		ETCD(password, HRPY_OPT_STR),
		ETCD(insecure_skip_verify, HRPY_OPT_BOOL),
		ETCD(log_level, HRPY_OPT_LOG_LEVEL),
		RING(placement, HRPY_OPT_PLACEMENT),
		RING(vnodes_per_weight, HRPY_OPT_UINT),
		RING(maglev_size, HRPY_OPT_U64),
	};
	size_t n = sizeof etcd / sizeof etcd[0];

	memcpy(out, etcd, sizeof etcd);
	if (with_log)
		out[n++] = (hrpy_opt){ "log", HRPY_OPT_OBJECT, 2, offsetof(hrpy_etcd, log) };
	return n;
}

int hrpy_default_log(PyObject *kwargs, hrpy_etcd *e)
{
	PyObject *package, *log;
	int rc;

	if (PyDict_GetItemString(kwargs, "log"))
		return 0;
	package = PyImport_ImportModule("hashring");
	log = package ? PyObject_GetAttrString(package, "_default_log") : NULL;
	Py_XDECREF(package);
	if (!log)
		return -1;
	rc = PyList_Append(e->keep, log);
	if (rc == 0)
		e->log = log; /* held by e->keep */
	Py_DECREF(log);
	return rc;
}

long long hrpy_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int hrpy_sleep_ms(long long ms)
{
	long long end = hrpy_now_ms() + ms;

	for (;;) {
		long long left = end - hrpy_now_ms();
		struct timespec ts;

		if (left <= 0)
			return 0;
		if (left > 100)
			left = 100;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left * 1000000L;
		Py_BEGIN_ALLOW_THREADS
		nanosleep(&ts, NULL);
		Py_END_ALLOW_THREADS
		if (PyErr_CheckSignals() < 0)
			return -1;
	}
}

/* ---- many keys ---------------------------------------------------------------- */

#ifdef Py_LIMITED_API
#define TUPLE_ITEM(t, i) PyTuple_GetItem((t), (i))
#else
#define TUPLE_ITEM(t, i) PyTuple_GET_ITEM((t), (i))
#endif

int hrpy_keys_get(PyObject *seq, hrpy_keys *k)
{
	size_t per_key = sizeof(void *) + sizeof(size_t) + sizeof(hr_batch_owner);

	memset(k, 0, sizeof *k);
	/* A str or bytes is one key, not an iterable of keys. */
	if (PyUnicode_Check(seq) || PyBytes_Check(seq) || PyByteArray_Check(seq)) {
		hrpy_type_error(seq, "keys must be an iterable of keys (lookup() takes one key)");
		return -1;
	}
	/* A tuple of the keys: another thread cannot change it while the
	 * batch runs without the GIL, and it holds every key alive. */
	k->tuple = PySequence_Tuple(seq);
	if (!k->tuple) {
		if (PyErr_ExceptionMatches(PyExc_TypeError)) {
			PyErr_Clear();
			hrpy_type_error(seq, "keys must be an iterable of keys");
		}
		return -1;
	}
	k->n = (size_t)PyTuple_Size(k->tuple);
	k->mem = PyMem_Malloc((k->n ? k->n : 1) * per_key);
	if (!k->mem) {
		Py_CLEAR(k->tuple);
		PyErr_NoMemory();
		return -1;
	}
	k->out = k->mem;
	k->ptrs = (const void **)(k->out + k->n);
	k->lens = (size_t *)(k->ptrs + k->n);
	for (size_t i = 0; i < k->n; i++) {
		PyObject *o = TUPLE_ITEM(k->tuple, (Py_ssize_t)i);
		Py_ssize_t len;
		hrpy_key key;

		if (Py_IS_TYPE(o, &PyBytes_Type)) {
#ifdef Py_LIMITED_API
			char *data;

			PyBytes_AsStringAndSize(o, &data, &len);
			k->ptrs[i] = data;
#else
			k->ptrs[i] = PyBytes_AS_STRING(o);
			len = PyBytes_GET_SIZE(o);
#endif
			k->lens[i] = (size_t)len;
			continue;
		}
		if (Py_IS_TYPE(o, &PyUnicode_Type)) {
			k->ptrs[i] = PyUnicode_AsUTF8AndSize(o, &len);
			if (!k->ptrs[i])
				goto fail;
			k->lens[i] = (size_t)len;
			continue;
		}
		if (hrpy_key_get(o, &key) < 0)
			goto fail;
		if (key.held) {
			if (!k->held) {
				k->held = PyMem_Malloc(k->n * sizeof *k->held);
				if (!k->held) {
					hrpy_key_release(&key);
					PyErr_NoMemory();
					goto fail;
				}
			}
			k->held[k->nheld++] = key;
		}
		k->ptrs[i] = key.data;
		k->lens[i] = key.len;
	}
	return 0;
fail:
	hrpy_keys_release(k);
	return -1;
}

void hrpy_keys_release(hrpy_keys *k)
{
	for (size_t i = 0; i < k->nheld; i++)
		hrpy_key_release(&k->held[i]);
	PyMem_Free(k->held);
	PyMem_Free(k->mem);
	Py_CLEAR(k->tuple);
	memset(k, 0, sizeof *k);
}

void hrpy_wait_idle(const int *busy)
{
	struct timespec ms = { 0, 1000000L };

	while (*busy > 0) {
		Py_BEGIN_ALLOW_THREADS
		nanosleep(&ms, NULL);
		Py_END_ALLOW_THREADS
	}
}
