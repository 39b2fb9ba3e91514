/* SPDX-License-Identifier: MIT */
/*
 * errors.c - the exception hierarchy: hashring.Error and one subclass per
 * HR_E* code, each also a subclass of the built-in exception a Python
 * program would catch for that kind of failure (ValueError for bad input,
 * TimeoutError, ConnectionError, ...), carrying the library's message.
 */
#include "hrpy.h"

#include <stdio.h>

#include <ctype.h>
#include <string.h>

static const struct {
	int code;
	const char *name;       /* hashring.<name> */
	const char *builtin;    /* its second base; NULL: Error alone */
	const char *doc;
} table[] = {
	{ HR_EINVAL, "InvalidArgumentError", "ValueError",
	  "The library refused a value (HR_EINVAL); the message names it." },
	{ HR_ENOMEM, "NoMemoryError", "MemoryError", "Out of memory (HR_ENOMEM)." },
	{ HR_EEMPTY, "EmptyRingError", "LookupError",
	  "The ring, or the view asked for, has no node (HR_EEMPTY)." },
	{ HR_EDUPLICATE, "DuplicateError", "ValueError",
	  "The same node id given twice (HR_EDUPLICATE)." },
	{ HR_ELIMIT, "LimitError", "ValueError",
	  "A documented size or count limit was exceeded (HR_ELIMIT)." },
	{ HR_EPARSE, "ParseError", "ValueError",
	  "A malformed record, JSON document or file (HR_EPARSE)." },
	{ HR_EIO, "FileError", "OSError", "A file could not be read (HR_EIO)." },
	{ HR_ECONNECT, "ConnectError", "ConnectionError",
	  "No etcd endpoint could be reached (HR_ECONNECT)." },
	{ HR_ETIMEDOUT, "TimeoutError", "TimeoutError",
	  "An operation did not finish in its time limit (HR_ETIMEDOUT)." },
	{ HR_EETCD, "EtcdError", NULL, "etcd answered with an error (HR_EETCD)." },
	{ HR_EAUTH, "AuthError", NULL,
	  "etcd authentication failed or its token was rejected (HR_EAUTH)." },
	{ HR_EPERM, "PermissionDeniedError", "PermissionError",
	  "etcd denied permission (HR_EPERM)." },
	{ HR_ETLS, "TLSError", NULL,
	  "TLS set-up or certificate verification failed (HR_ETLS)." },
	{ HR_ENOTFOUND, "NotFoundError", "LookupError",
	  "No such node, key or lease (HR_ENOTFOUND)." },
	{ HR_EEXIST, "ExistsError", NULL,
	  "The id is held by another live process (HR_EEXIST): a registration "
	  "taken over, or an ack client id in use." },
	{ HR_ECLOSED, "ClosedError", NULL,
	  "The object is closing or closed (HR_ECLOSED)." },
	{ HR_ECOMPACTED, "CompactedError", NULL,
	  "The revision asked for was compacted (HR_ECOMPACTED)." },
	{ HR_ECONFLICT, "ConflictError", NULL,
	  "Clients report different rings at one revision, or a record changed "
	  "under a transaction (HR_ECONFLICT)." },
};

static PyObject *new_class(PyObject *module, const char *name,
			   PyObject *bases, const char *doc)
{
	char qualname[64];
	PyObject *cls;

	snprintf(qualname, sizeof qualname, "hashring.%s", name);
	cls = PyErr_NewExceptionWithDoc(qualname, doc, bases, NULL);
	if (cls && PyModule_AddObjectRef(module, name, cls) < 0)
		Py_CLEAR(cls);
	return cls;
}

int hrpy_errors_init(PyObject *module, hrpy_state *st)
{
	PyObject *builtins = PyImport_ImportModule("builtins");
	int rc = -1;

	if (!builtins)
		return -1;
	st->errors[0] = new_class(module, "Error", PyExc_Exception,
				  "The base of every error of the hashring library: "
				  "`code` is its HR_E* value (negative), `message` the "
				  "library's one-line message.");
	if (!st->errors[0])
		goto out;
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		PyObject *builtin = NULL, *bases;

		if (table[i].builtin) {
			builtin = PyObject_GetAttrString(builtins, table[i].builtin);
			if (!builtin)
				goto out;
			bases = PyTuple_Pack(2, st->errors[0], builtin);
			Py_DECREF(builtin);
		} else {
			bases = PyTuple_Pack(1, st->errors[0]);
		}
		if (!bases)
			goto out;
		st->errors[-table[i].code] = new_class(module, table[i].name, bases,
						       table[i].doc);
		Py_DECREF(bases);
		if (!st->errors[-table[i].code])
			goto out;
	}
	rc = 0;
out:
	Py_DECREF(builtins);
	return rc;
}

/*
 * The library names the struct of a setting it refuses ("hr_etcd_config:
 * request_timeout_ms must be > 0"); a Python caller passed a keyword, the
 * field's name, which the rest of the message names: the struct goes.
 */
static const char *without_struct(const char *msg)
{
	for (;;) {
		size_t n = 3;

		if (strncmp(msg, "hr_", 3) != 0)
			return msg;
		while (islower((unsigned char)msg[n]) || msg[n] == '_')
			n++;
		if (msg[n] != ':' || msg[n + 1] != ' ')
			return msg;
		msg += n + 2;
	}
}

PyObject *hrpy_error_new(hrpy_state *st, int code, const hr_error *err)
{
	const char *msg = without_struct(err && err->message[0] ? err->message
							      : hr_strerror(code));
	PyObject *cls = code < 0 && code > -HRPY_NERRORS ? st->errors[-code] : st->errors[0];
	PyObject *text, *exc, *value;

	/* Messages are the library's: bytes of ids and addresses may not be
	 * UTF-8, so undecodable bytes are escaped rather than refused. */
	text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "backslashreplace");
	if (!text)
		return NULL;
	exc = PyObject_CallFunctionObjArgs(cls, text, NULL);
	if (!exc) {
		Py_DECREF(text);
		return NULL;
	}
	value = PyLong_FromLong(code);
	if (!value || PyObject_SetAttrString(exc, "code", value) < 0 ||
	    PyObject_SetAttrString(exc, "message", text) < 0)
		Py_CLEAR(exc);
	Py_XDECREF(value);
	Py_DECREF(text);
	return exc;
}

PyObject *hrpy_raise(hrpy_state *st, int code, const hr_error *err)
{
	PyObject *exc = hrpy_error_new(st, code, err);

	if (exc) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

PyObject *hrpy_closed(hrpy_state *st, const char *what, int forked)
{
	hr_error err = { .code = HR_ECLOSED };

	if (forked)
		snprintf(err.message, sizeof err.message,
			 "the %s was opened before fork(): open one in this process", what);
	else
		snprintf(err.message, sizeof err.message, "the %s is closed", what);
	return hrpy_raise(st, HR_ECLOSED, &err);
}
