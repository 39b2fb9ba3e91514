/* SPDX-License-Identifier: MIT */
/*
 * module.c - the module hashring._hashring: its state (the exception
 * classes, the types, the State enum), its constants, and the objects
 * still open, which hashring/__init__.py closes at exit.
 */
#include "hrpy.h"

hrpy_state *hrpy_state_of_type(PyTypeObject *type)
{
	return PyType_GetModuleState(type);
}

void hrpy_open_add(hrpy_state *st, struct hrpy_open *o, PyObject *self,
		   void (*forget)(PyObject *self))
{
	o->self = self;
	o->forget = forget;
	o->prev = NULL;
	o->next = st->open;
	if (st->open)
		st->open->prev = o;
	st->open = o;
}

void hrpy_open_remove(hrpy_state *st, struct hrpy_open *o)
{
	if (!o->self)
		return;
	if (o->prev)
		o->prev->next = o->next;
	else
		st->open = o->next;
	if (o->next)
		o->next->prev = o->prev;
	o->self = NULL;
}

/* Closes every client and registrar still open: at exit, while the
 * interpreter can still run their callbacks' thread to its end. */
static PyObject *close_all(PyObject *module, PyObject *unused)
{
	hrpy_state *st = PyModule_GetState(module);
	PyObject *list = PyList_New(0);

	for (struct hrpy_open *o = st->open; list && o; o = o->next)
		if (PyList_Append(list, o->self) < 0)
			Py_CLEAR(list);
	for (Py_ssize_t i = 0; list && i < PyList_Size(list); i++) {
		PyObject *r = PyObject_CallMethod(PyList_GetItem(list, i), "close", NULL);

		if (!r)
			PyErr_WriteUnraisable(PyList_GetItem(list, i));
		Py_XDECREF(r);
	}
	Py_XDECREF(list);
	Py_RETURN_NONE;
}

/* After fork(), in the child: the clients and registrars of the parent
 * have no threads here; they become closed (their memory left as it is),
 * so that using one raises ClosedError rather than waiting for a thread
 * that is not there. */
static PyObject *forget_all(PyObject *module, PyObject *unused)
{
	hrpy_state *st = PyModule_GetState(module);

	while (st->open) {
		struct hrpy_open *o = st->open;
		PyObject *self = o->self;

		hrpy_open_remove(st, o);
		o->forget(self);
	}
	Py_RETURN_NONE;
}

static PyObject *make_state_enum(PyObject *module, hrpy_state *st)
{
	static const char *const names[] = { "ACTIVE", "WARMING", "DRAINING" };
	PyObject *enum_mod = PyImport_ImportModule("enum"), *cls = NULL, *members, *doc,
		 *module_name;

	if (!enum_mod)
		return NULL;
	members = Py_BuildValue("[(ss)(ss)(ss)]", names[0], hr_state_name(HR_STATE_ACTIVE),
				names[1], hr_state_name(HR_STATE_WARMING), names[2],
				hr_state_name(HR_STATE_DRAINING));
	if (members)
		cls = PyObject_CallMethod(enum_mod, "StrEnum", "sO", "State", members);
	Py_XDECREF(members);
	Py_DECREF(enum_mod);
	if (!cls)
		return NULL;
	doc = PyUnicode_FromString("A node's state (a str): active serves reads and writes, "
				   "warming\n(joining) takes writes while reads go to the old "
				   "owner, draining\n(leaving) serves reads while writes go to "
				   "the next owner.");
	module_name = PyUnicode_FromString("hashring");
	if (!doc || !module_name || PyObject_SetAttrString(cls, "__module__", module_name) < 0 ||
	    PyObject_SetAttrString(cls, "__doc__", doc) < 0)
		Py_CLEAR(cls);
	Py_XDECREF(doc);
	Py_XDECREF(module_name);
	if (!cls)
		return NULL;
	for (int i = 0; i < 3; i++) {
		st->states[i] = PyObject_GetAttrString(cls, names[i]);
		if (!st->states[i]) {
			Py_DECREF(cls);
			return NULL;
		}
	}
	return cls;
}

static int module_exec(PyObject *module)
{
	hrpy_state *st = PyModule_GetState(module);
	PyObject *threading;

	if (hrpy_errors_init(module, st) < 0)
		return -1;
	st->state_enum = make_state_enum(module, st);
	if (!st->state_enum || PyModule_AddObjectRef(module, "State", st->state_enum) < 0)
		return -1;
	threading = PyImport_ImportModule("threading");
	if (!threading)
		return -1;
	st->thread_class = PyObject_GetAttrString(threading, "Thread");
	Py_DECREF(threading);
	if (!st->thread_class)
		return -1;
	if (PyModule_AddFunctions(module, hrpy_acks_functions) < 0 ||
	    PyModule_AddFunctions(module, hrpy_aio_functions) < 0 ||
	    hrpy_ring_types_init(module, st) < 0 || hrpy_dispatcher_type_init(module, st) < 0 ||
	    hrpy_client_type_init(module, st) < 0 || hrpy_registrar_type_init(module, st) < 0 ||
	    hrpy_acks_types_init(module, st) < 0)
		return -1;
	if (PyModule_AddStringConstant(module, "__version__", HR_VERSION_STRING) < 0 ||
	    PyModule_AddStringConstant(module, "libhashring_version", hr_version()) < 0 ||
	    PyModule_AddStringConstant(module, "METRICS_CONTENT_TYPE", HR_METRICS_CONTENT_TYPE) < 0)
		return -1;
	return 0;
}

static int module_traverse(PyObject *module, visitproc visit, void *arg)
{
	hrpy_state *st = PyModule_GetState(module);

	for (int i = 0; i < HRPY_NERRORS; i++)
		Py_VISIT(st->errors[i]);
	Py_VISIT(st->state_enum);
	for (int i = 0; i < 3; i++)
		Py_VISIT(st->states[i]);
	Py_VISIT(st->owner_type);
	Py_VISIT(st->node_type);
	Py_VISIT(st->status_type);
	Py_VISIT(st->ack_type);
	Py_VISIT(st->acks_type);
	Py_VISIT(st->arc_type);
	Py_VISIT(st->arc_total_type);
	Py_VISIT(st->diff_type);
	Py_VISIT(st->ring_type);
	Py_VISIT(st->client_type);
	Py_VISIT(st->registrar_type);
	Py_VISIT(st->dispatcher_type);
	Py_VISIT(st->thread_class);
	return 0;
}

static int module_clear(PyObject *module)
{
	hrpy_state *st = PyModule_GetState(module);

	for (int i = 0; i < HRPY_NERRORS; i++)
		Py_CLEAR(st->errors[i]);
	Py_CLEAR(st->state_enum);
	for (int i = 0; i < 3; i++)
		Py_CLEAR(st->states[i]);
	Py_CLEAR(st->owner_type);
	Py_CLEAR(st->node_type);
	Py_CLEAR(st->status_type);
	Py_CLEAR(st->ack_type);
	Py_CLEAR(st->acks_type);
	Py_CLEAR(st->arc_type);
	Py_CLEAR(st->arc_total_type);
	Py_CLEAR(st->diff_type);
	Py_CLEAR(st->ring_type);
	Py_CLEAR(st->client_type);
	Py_CLEAR(st->registrar_type);
	Py_CLEAR(st->dispatcher_type);
	Py_CLEAR(st->thread_class);
	return 0;
}

static void module_free(void *module)
{
	module_clear(module);
}

static PyMethodDef module_functions[] = {
	{ "_close_all", close_all, METH_NOARGS,
	  "Closes every client and registrar still open (registered with atexit)." },
	{ "_forget_all", forget_all, METH_NOARGS,
	  "In a child after fork(): the parent's clients and registrars become closed." },
	{ NULL, NULL, 0, NULL }
};

static PyModuleDef_Slot module_slots[] = {
	{ Py_mod_exec, module_exec },
	{ 0, NULL }
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	"hashring._hashring",
	"The hashring library (libhashring) for Python: see the hashring package.",
	sizeof(hrpy_state),
	module_functions,
	module_slots,
	module_traverse,
	module_clear,
	module_free,
};

PyMODINIT_FUNC PyInit__hashring(void);

PyMODINIT_FUNC PyInit__hashring(void)
{
	return PyModuleDef_Init(&module_def);
}
