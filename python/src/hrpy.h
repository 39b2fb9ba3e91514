/* SPDX-License-Identifier: MIT */
/*
 * hrpy.h - what the files of the Python extension (hashring._hashring)
 * share: the module state, the object layouts passed between files, and
 * the argument helpers.
 *
 * The extension is a user of the public API alone (hashring.h): every
 * libhashring call of the Python package is in these files, so that an
 * API change is one place to follow.  It is built for the stable ABI of
 * CPython 3.11 (abi3) unless HRPY_FULL_API is defined (docs/python.md,
 * "Performance", says what that costs; the code compiles both ways).
 */
#ifndef HRPY_H
#define HRPY_H

#ifndef HRPY_FULL_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <hashring.h>

#include <pthread.h>
#include <stdint.h>

/* ---- the module state ------------------------------------------------------ */

/* HR_EINVAL (-1) to HR_ECONFLICT (-18), by -code; [0] is hashring.Error. */
#define HRPY_NERRORS 19

struct hrpy_open;

typedef struct hrpy_state {
	PyObject *errors[HRPY_NERRORS];
	PyObject *state_enum;           /* hashring.State */
	PyObject *states[3];            /* its members, by hr_state */
	PyTypeObject *owner_type;       /* struct sequences */
	PyTypeObject *node_type;
	PyTypeObject *status_type;
	PyTypeObject *ack_type;
	PyTypeObject *acks_type;
	PyTypeObject *arc_type;
	PyTypeObject *arc_total_type;
	PyTypeObject *diff_type;
	PyTypeObject *ring_type;        /* classes */
	PyTypeObject *client_type;
	PyTypeObject *registrar_type;
	PyTypeObject *dispatcher_type;
	PyObject *thread_class;         /* threading.Thread */
	/* Clients and registrars not yet closed, for close_all() at exit. */
	struct hrpy_open *open;
} hrpy_state;

hrpy_state *hrpy_state_of_type(PyTypeObject *type);
/* The module state of one of the module's objects. */
#define HRPY_STATE(obj) hrpy_state_of_type(Py_TYPE((PyObject *)(obj)))

/* ---- errors (errors.c) ----------------------------------------------------- */

int hrpy_errors_init(PyObject *module, hrpy_state *st);
/* Raises the exception of `code` with err's message (hr_strerror() when
 * err is NULL or has none).  Returns NULL, for `return hrpy_raise(...)`. */
PyObject *hrpy_raise(hrpy_state *st, int code, const hr_error *err);
/* Raises ClosedError for a client or registrar (`what`), closed, or
 * opened before a fork() in the parent (`forked`).  Returns NULL. */
PyObject *hrpy_closed(hrpy_state *st, const char *what, int forked);
/* The exception object itself, not raised (for callbacks); NULL on error. */
PyObject *hrpy_error_new(hrpy_state *st, int code, const hr_error *err);

/* ---- arguments (args.c) ---------------------------------------------------- */

/* A key: bytes and str (as UTF-8) without a copy, any other buffer held. */
typedef struct hrpy_key {
	const char *data;
	size_t len;
	int held;               /* `view` must be released */
	Py_buffer view;
} hrpy_key;

/* Raises TypeError: the message formatted, then ", not <o's type>".
 * Returns -1. */
int hrpy_type_error(PyObject *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Fills `k` from `o`, or raises TypeError (-1). */
int hrpy_key_get_any(PyObject *o, hrpy_key *k);

/* The same, with the usual case (a str) inline: it is on every lookup. */
static inline int hrpy_key_get(PyObject *o, hrpy_key *k)
{
	Py_ssize_t len;

	if (!Py_IS_TYPE(o, &PyUnicode_Type))
		return hrpy_key_get_any(o, k);
	k->held = 0;
	k->data = PyUnicode_AsUTF8AndSize(o, &len);
	k->len = (size_t)len;
	return k->data ? 0 : -1;
}

static inline void hrpy_key_release(hrpy_key *k)
{
	if (k->held)
		PyBuffer_Release(&k->view);
	k->held = 0;
}

/*
 * A str argument as UTF-8 with no NUL byte inside (ValueError), valid as
 * long as `o` lives.  `what` names it in messages.
 */
const char *hrpy_cstr(PyObject *o, const char *what);
int hrpy_view_arg(PyObject *o, hr_view *out);
/* The name Ring(placement=...) takes for `p`; NULL for none. */
const char *hrpy_placement_name(hr_placement p);
int hrpy_state_arg(PyObject *o, hr_state *out);
/* An int (not a bool) from 0 to `max`: TypeError, ValueError. */
int hrpy_uint_arg(PyObject *o, const char *what, unsigned long long max,
		  unsigned long long *out);
/* A timeout in seconds (int or float, >= 0; None: `none_ms`) in ms. */
int hrpy_timeout_arg(PyObject *o, const char *what, long long none_ms,
		     long long *ms);

/*
 * Keyword settings, table driven: each option names a field of one of the
 * structs being filled (`target` indexes the array given to
 * hrpy_options_parse).  Strings are kept alive by `keep` (a list).
 */
enum hrpy_opt_kind {
	HRPY_OPT_STR,        /* const char *: str, or None */
	HRPY_OPT_PATH,       /* const char *: str, bytes or os.PathLike, or None */
	HRPY_OPT_ENDPOINTS,  /* const char *: str or an iterable of str */
	HRPY_OPT_INT,        /* int */
	HRPY_OPT_UINT,       /* unsigned */
	HRPY_OPT_U64,        /* uint64_t */
	HRPY_OPT_SIZE,       /* size_t */
	HRPY_OPT_BOOL,       /* int: bool */
	HRPY_OPT_DOUBLE,     /* double: int or float */
	HRPY_OPT_LOG_LEVEL,  /* hr_log_level: "error", "warn", "info", "debug" */
	HRPY_OPT_PLACEMENT,  /* hr_placement: "xxh3", "ketama", ... */
	HRPY_OPT_ORDER,      /* int: "spread" or "in_order" */
	HRPY_OPT_STATE,      /* hr_state: State or its name */
	HRPY_OPT_OBJECT,     /* PyObject *, borrowed: a callable, or None */
	HRPY_OPT_OBJECT_ANY  /* PyObject *, borrowed: checked by the caller */
};

typedef struct hrpy_opt {
	const char *name;
	enum hrpy_opt_kind kind;
	int target;
	size_t offset;
} hrpy_opt;

/* The options of every object that talks to etcd (targets 0: an
 * hr_etcd_config, 1: its hr_ring_options), with `log` (a callable, the
 * field of target 2, an hrpy_etcd) if `with_log`.  Returns their count. */
#define HRPY_ETCD_OPTIONS_MAX 24
size_t hrpy_etcd_options(hrpy_opt *out, int with_log);

int hrpy_options_parse(const char *fname, PyObject *kwargs,
		       const hrpy_opt *opts, size_t nopts, void *const *targets,
		       PyObject *keep);

/*
 * An etcd connection's settings with the strings they point at, for the
 * objects that keep them (clients for acks(), registrars, the module's
 * functions for one call).
 */
typedef struct hrpy_etcd {
	hr_etcd_config cfg;
	hr_ring_options ring;
	PyObject *keep;         /* list: the objects the strings belong to */
	PyObject *log;          /* the "log" callable, borrowed from kwargs */
} hrpy_etcd;

/* The records' prefix when none is given, the command's default too. */
#define HRPY_DEFAULT_PREFIX "/hashring/nodes/"

/* Sets up `e` with the defaults (prefix HRPY_DEFAULT_PREFIX, log_level
 * "warn"); -1 with an exception set. */
int hrpy_etcd_init(hrpy_etcd *e);
/* With no `log` in `kwargs`, e->log is hashring._default_log (the
 * logging module's logger "hashring"); `log=None` leaves the library's
 * own (stderr).  -1 with an exception set. */
int hrpy_default_log(PyObject *kwargs, hrpy_etcd *e);
/* A copy of `kwargs` with the positional arguments (endpoints, prefix). */
PyObject *hrpy_merge_positional(const char *fname, PyObject *args, PyObject *kwargs);

/* ---- rings (ring.c) -------------------------------------------------------- */

/* Owners of a pair (write node, read node) with write != read. */
struct hrpy_pair {
	uint64_t key;           /* write << 32 | read; 0 with owner NULL: free */
	PyObject *owner;
};

/*
 * hashring.Ring: one hr_ring reference and the Python objects of its
 * answers, made on first use and kept for the ring's life, so that a
 * lookup returns an object that exists already (docs/python.md).
 */
typedef struct hrpy_ring {
	PyObject_HEAD
	hr_ring *ring;
	hr_epoch epoch;
	size_t n;               /* nodes */
	PyObject **strs;        /* [2i]: node i's id, [2i + 1]: its addr */
	PyObject **nodes;       /* hashring.Node of node i */
	PyObject **same;        /* hashring.Owner of (i, i) */
	PyObject **ints;        /* the int i, made on first use */
	struct hrpy_pair *pairs;
	size_t npairs, pairs_cap;  /* cap: 0 or a power of two */
} hrpy_ring;

/* A Ring object over `ring`, whose reference it takes (released on
 * failure).  NULL with an exception set on failure. */
hrpy_ring *hrpy_ring_wrap(hrpy_state *st, hr_ring *ring);

PyObject *hrpy_ring_owner_slow(hrpy_ring *r, const hr_batch_owner *o);

PyObject *hrpy_ring_index_slow(hrpy_ring *r, uint32_t i);

/*
 * Node number `i` of an answer as lookup_index() gives it: an int (a new
 * reference), None for HR_NO_NODE.  The ring keeps the ints it made, so
 * that numbers past CPython's small ints are not made again; an int made
 * by any ring serves an answer of any other (the value is all it is).
 */
static inline PyObject *hrpy_ring_index(hrpy_ring *r, uint32_t i)
{
	PyObject *v;

	if (i < r->n && (v = r->ints[i]) != NULL) {
		Py_INCREF(v);
		return v;
	}
	return hrpy_ring_index_slow(r, i);
}

/* The Owner of an answer of ring `r`: a new reference. */
static inline PyObject *hrpy_ring_owner(hrpy_ring *r, const hr_batch_owner *o)
{
	PyObject *owner;

	if (o->node == o->read_node && o->node < r->n &&
	    (owner = r->same[o->node]) != NULL) {
		Py_INCREF(owner);
		return owner;
	}
	return hrpy_ring_owner_slow(r, o);
}

/* A list of the Owners of out[0..n) (answers of ring `r`). */
PyObject *hrpy_ring_owners(hrpy_ring *r, const hr_batch_owner *out, size_t n);
/* The Node of node i of `r`: a new reference. */
PyObject *hrpy_ring_node(hrpy_ring *r, size_t i);
/* Ring.replicas(key, n=3, *, view='write'): its arguments and answer. */
PyObject *hrpy_ring_replicas(hrpy_ring *r, PyObject *args, PyObject *kwargs);
/* A record (struct sequence) of `type` from n values, whose references
 * it takes; NULL (and every reference dropped) if any is NULL. */
PyObject *hrpy_record(PyTypeObject *type, PyObject **values, int n);
/* The Nodes of `r`, as a list. */
PyObject *hrpy_ring_node_list(hrpy_ring *r);

/*
 * Keys of a lookup_many: the pointers and lengths of every key of a
 * sequence, taken under the GIL and valid while `keys` (a tuple) lives.
 */
typedef struct hrpy_keys {
	PyObject *tuple;
	size_t n;
	const void **ptrs;
	size_t *lens;
	hr_batch_owner *out;
	hrpy_key *held;         /* keys that hold a buffer */
	size_t nheld;
	void *mem;
} hrpy_keys;

int hrpy_keys_get(PyObject *seq, hrpy_keys *k);
void hrpy_keys_release(hrpy_keys *k);

/* Batches of at least this many keys run with the GIL released. */
#define HRPY_NOGIL_KEYS 64

/* ---- acks and metrics (acks.c, client.c) --------------------------------- */

PyObject *hrpy_acks_read(hrpy_state *st, const hr_etcd_config *etcd,
			 const char *ack_prefix);
/* hr_acks_wait() in slices that let signal handlers run. */
PyObject *hrpy_acks_wait(hrpy_state *st, const hr_etcd_config *etcd,
			 const char *ack_prefix, uint64_t revision, long long timeout_ms);
/* The Prometheus exposition of `client`, or else of `ring`, as str. */
PyObject *hrpy_metrics_text(hrpy_state *st, hr_client *client, const hr_ring *ring,
			    PyObject *args, PyObject *kwargs);

/* The fields of an update: state= and weight= (None: unchanged), heirs=. */
int hrpy_update_fields(PyObject *state, PyObject *weight, int heirs, hr_record_update *upd);

/* ---- callbacks on a Python thread (dispatch.c) ----------------------------- */

/*
 * What the library's threads hand to Python: they never call into Python
 * (they hold no GIL, and may run while the interpreter shuts down); they
 * queue here, and a Python thread (threading.Thread, daemon) takes the
 * queue and calls the callables with the GIL.
 */
typedef struct hrpy_dispatcher hrpy_dispatcher;

/* The library's callbacks, their userdata the dispatcher's queue
 * (hrpy_dispatcher_userdata), which lives as long as the dispatcher or
 * its thread: the owner frees the library object first. */
void hrpy_on_change(void *userdata, const hr_ring *old_ring,
		    const hr_ring *new_ring);
void hrpy_on_log(void *userdata, hr_log_level level, const char *line);
void hrpy_on_lost(void *userdata, hr_registrar *r, const hr_error *why);

/* A new dispatcher; `log` (NULL: none) gets (level, line) for each log
 * line, `on_lost` (NULL: none) the exception of a lost registration. */
hrpy_dispatcher *hrpy_dispatcher_new(hrpy_state *st, PyObject *log,
				     PyObject *on_lost);
void *hrpy_dispatcher_userdata(hrpy_dispatcher *d);
/* Adds an on_change callable; ring changes are queued from then on. */
int hrpy_dispatcher_add(hrpy_dispatcher *d, PyObject *fn);
/* Starts its thread, if not running yet.  -1 with an exception set. */
int hrpy_dispatcher_start(hrpy_dispatcher *d, const char *name);
/*
 * Stops it: no callback starts after this.  With `join`, waits for the
 * thread (a callback running) to end, unless called on that thread.
 * Call only once the library's threads that queue to it are gone.
 */
int hrpy_dispatcher_stop(hrpy_dispatcher *d, int join);
/* In the child of a fork(): stopped, its lock new, its thread gone. */
void hrpy_dispatcher_forget(hrpy_dispatcher *d);

/* ---- ring changes for an event loop (aio.c) -------------------------------- */

/*
 * A client's changes queued for an asyncio loop: a few slots and an
 * eventfd the loop reads when they fill (hashring/_aio.py).  Pushed to by
 * the library's thread through the dispatcher's queue
 * (hrpy_dispatcher_set_sink); freed by the client once its library
 * client is closed.
 */
typedef struct hrpy_sink hrpy_sink;

hrpy_sink *hrpy_sink_new(void);
int hrpy_sink_fd(const hrpy_sink *s);
/* Any thread, no GIL; never waits for the loop. */
void hrpy_sink_push(hrpy_sink *s, const hr_ring *old_ring, const hr_ring *new_ring);
/* The changes queued, as a list of (old Ring, new Ring, missed). */
PyObject *hrpy_sink_take(hrpy_state *st, hrpy_sink *s);
void hrpy_sink_free(hrpy_sink *s);
/* In the child of a fork(): closed, its lock new. */
void hrpy_sink_forget(hrpy_sink *s);
/* Changes go to `s` (NULL: none) from now on, besides the callables. */
void hrpy_dispatcher_set_sink(hrpy_dispatcher *d, hrpy_sink *s);
extern PyMethodDef hrpy_aio_functions[];

/* ---- the objects closed at exit (module.c) --------------------------------- */

struct hrpy_open {
	struct hrpy_open *next, *prev;
	PyObject *self;         /* borrowed */
	/* In the child of a fork(), where the library's threads are not:
	 * makes the object closed without a call into the library. */
	void (*forget)(PyObject *self);
};

void hrpy_open_add(hrpy_state *st, struct hrpy_open *o, PyObject *self,
		   void (*forget)(PyObject *self));
void hrpy_open_remove(hrpy_state *st, struct hrpy_open *o);

/* ---- waits in slices -------------------------------------------------------- */

/* Sleeps `ms` with the GIL released, in slices that let signal handlers
 * run (KeyboardInterrupt): -1 with the handler's exception set. */
int hrpy_sleep_ms(long long ms);
long long hrpy_now_ms(void);
/* Waits, the GIL released, until the calls counted in *busy (running
 * without the GIL) are done. */
void hrpy_wait_idle(const int *busy);

/* ---- types (each file's) ------------------------------------------------- */

int hrpy_ring_types_init(PyObject *module, hrpy_state *st);
int hrpy_client_type_init(PyObject *module, hrpy_state *st);
int hrpy_registrar_type_init(PyObject *module, hrpy_state *st);
int hrpy_dispatcher_type_init(PyObject *module, hrpy_state *st);
int hrpy_acks_types_init(PyObject *module, hrpy_state *st);
extern PyMethodDef hrpy_acks_functions[];

#endif /* HRPY_H */
