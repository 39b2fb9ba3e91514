/* SPDX-License-Identifier: MIT */
/*
 * ring.c - hashring.Ring: a ring held by Python (built offline from
 * members, or a client's), and the objects of its answers.
 *
 * The answers are made once per ring: the str of each node's id and
 * address, its Node, and the Owner of each (write node, read node) pair
 * that a lookup gave, kept until the ring goes.  A lookup then returns an
 * object that exists already, which is what makes it cheaper than a
 * textbook Python ring (docs/python.md, "Performance"): building even one
 * new str per call would cost more than the library's lookup itself.
 *
 * Also the record types of rings: Owner, Node, Arc, ArcTotal and Diff.
 */
#include "hrpy.h"

#include <stdio.h>

#include <string.h>

/* ---- record types ---------------------------------------------------------- */

static PyStructSequence_Field owner_fields[] = {
	{ "node", "id of the write-view owner (where writes go); None if that view is empty" },
	{ "addr", "its address" },
	{ "read_node", "id of the read-view owner (where the data is); None if that view is empty" },
	{ "read_addr", "its address" },
	{ "state", "State of the write owner" },
	{ "read_state", "State of the read owner" },
	{ "revision", "etcd revision of the ring that answered (0: offline)" },
	{ "digest", "digest of the ring that answered: equal digests, equal answers" },
	{ NULL, NULL }
};

static PyStructSequence_Desc owner_desc = {
	"hashring.Owner",
	"The owners of a key in one ring.  Answers are shared: a ring returns one "
	"Owner object per pair of owners, so compare them with ==, not is.",
	owner_fields, 8
};

static PyStructSequence_Field node_fields[] = {
	{ "id", "node id: 1-255 printable ASCII characters, no '/'" },
	{ "addr", "address clients use" },
	{ "zone", "zone ('' for none)" },
	{ "weight", "weight (> 0)" },
	{ "state", "State: active, warming or draining" },
	{ "vnodes", "points the node has in the ring (its slots with maglev)" },
	{ NULL, NULL }
};

static PyStructSequence_Desc node_desc = {
	"hashring.Node", "A node of a ring.", node_fields, 6
};

static PyStructSequence_Field arc_fields[] = {
	{ "start", "first key position of the arc" },
	{ "end", "the position after its last (2**64 for the top of the circle)" },
	{ "old", "owner in the old ring (None: its view was empty)" },
	{ "new", "owner in the new ring (None: its view is empty)" },
	{ NULL, NULL }
};

static PyStructSequence_Desc arc_desc = {
	"hashring.Arc", "Key positions [start, end) whose owner changed.", arc_fields, 4
};

static PyStructSequence_Field arc_total_fields[] = {
	{ "old", "owner in the old ring (None: none)" },
	{ "new", "owner in the new ring (None: none)" },
	{ "arcs", "arcs moved from old to new" },
	{ "share", "their part of the key space, in (0, 1]" },
	{ NULL, NULL }
};

static PyStructSequence_Desc arc_total_desc = {
	"hashring.ArcTotal", "The arcs moved from one node to another, summed.",
	arc_total_fields, 4
};

static PyStructSequence_Field diff_fields[] = {
	{ "view", "'write' or 'read'" },
	{ "moved", "share of the key space whose owner changed, in [0, 1]" },
	{ "arcs", "list of Arc, in ring order (empty with rendezvous placement)" },
	{ "totals", "list of ArcTotal, by old id then new id" },
	{ NULL, NULL }
};

static PyStructSequence_Desc diff_desc = {
	"hashring.Diff", "What changed owner between two rings in one view.",
	diff_fields, 4
};

/* ---- the objects of a ring's answers --------------------------------------- */

/* Bytes the library took as they are (addresses, zones): str again with
 * any byte that is not UTF-8 kept as a surrogate, as os.fsdecode() does. */
static PyObject *text(const char *s)
{
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

/* Node i's id (which = 0) or address (1), borrowed; NULL on error. */
static PyObject *node_str(hrpy_ring *r, size_t i, int which)
{
	PyObject **slot = &r->strs[2 * i + which];

	if (!*slot) {
		const hr_node *node = hr_ring_node(r->ring, i);
		PyObject *s = text(which ? node->addr : node->id);

		if (!s)
			return NULL;
		if (*slot) /* made meanwhile, by code the allocation ran */
			Py_DECREF(s);
		else
			*slot = s;
	}
	return *slot;
}

PyObject *hrpy_record(PyTypeObject *type, PyObject **values, int n)
{
	PyObject *obj = PyStructSequence_New(type);

	for (int i = 0; i < n; i++) {
		if (!values[i] || !obj) {
			Py_CLEAR(obj);
			Py_XDECREF(values[i]);
		} else {
			PyStructSequence_SetItem(obj, i, values[i]);
		}
	}
	return obj;
}

static PyObject *new_ref(PyObject *o)
{
	Py_INCREF(o);
	return o;
}

/* Node i's id or address as a new reference, or None for no node. */
static PyObject *node_str_or_none(hrpy_ring *r, uint32_t i, int which)
{
	PyObject *s = i < r->n ? node_str(r, i, which) : Py_None;

	return s ? new_ref(s) : NULL;
}

static PyObject *state_or_none(hrpy_state *st, hrpy_ring *r, uint32_t i)
{
	return new_ref(i < r->n ? st->states[hr_ring_node(r->ring, i)->state] : Py_None);
}

static PyObject *owner_new(hrpy_ring *r, uint32_t w, uint32_t rd)
{
	hrpy_state *st = HRPY_STATE(r);
	PyObject *v[8];

	v[0] = node_str_or_none(r, w, 0);
	v[1] = node_str_or_none(r, w, 1);
	v[2] = node_str_or_none(r, rd, 0);
	v[3] = node_str_or_none(r, rd, 1);
	v[4] = state_or_none(st, r, w);
	v[5] = state_or_none(st, r, rd);
	v[6] = PyLong_FromUnsignedLongLong(r->epoch.revision);
	v[7] = PyLong_FromUnsignedLongLong(r->epoch.digest);
	return hrpy_record(st->owner_type, v, 8);
}

static struct hrpy_pair *pair_slot(hrpy_ring *r, uint64_t key)
{
	size_t mask = r->pairs_cap - 1;
	size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;

	while (r->pairs[i].owner && r->pairs[i].key != key)
		i = (i + 1) & mask;
	return &r->pairs[i];
}

static int pairs_grow(hrpy_ring *r)
{
	struct hrpy_pair *old = r->pairs;
	size_t old_cap = r->pairs_cap, cap = old_cap ? old_cap * 2 : 16;

	r->pairs = PyMem_Calloc(cap, sizeof *r->pairs);
	if (!r->pairs) {
		r->pairs = old;
		PyErr_NoMemory();
		return -1;
	}
	r->pairs_cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].owner)
			*pair_slot(r, old[i].key) = old[i];
	PyMem_Free(old);
	return 0;
}

static PyObject *owner_make(hrpy_ring *r, const hr_batch_owner *o)
{
	uint64_t key = (uint64_t)o->node << 32 | o->read_node;
	struct hrpy_pair *slot;
	PyObject *owner;

	if (o->node == o->read_node && o->node < r->n) {
		owner = owner_new(r, o->node, o->read_node);
		if (owner && !r->same[o->node])
			r->same[o->node] = new_ref(owner);
		return owner;
	}
	if (r->pairs_cap && (slot = pair_slot(r, key))->owner)
		return new_ref(slot->owner);
	owner = owner_new(r, o->node, o->read_node);
	if (!owner)
		return NULL;
	/* The table is looked at again: making the owner may have run code
	 * that added to it. */
	if ((r->npairs + 1) * 2 > r->pairs_cap && pairs_grow(r) < 0) {
		Py_DECREF(owner);
		return NULL;
	}
	slot = pair_slot(r, key);
	if (!slot->owner) {
		slot->key = key;
		slot->owner = new_ref(owner);
		r->npairs++;
	}
	return owner;
}

PyObject *hrpy_ring_owner_slow(hrpy_ring *r, const hr_batch_owner *o)
{
	PyObject *owner;

	/* Allocations may run code (a collection) that drops the caller's
	 * borrowed reference to the ring (a client's current ring). */
	Py_INCREF((PyObject *)r);
	owner = owner_make(r, o);
	Py_DECREF((PyObject *)r);
	return owner;
}

PyObject *hrpy_ring_index_slow(hrpy_ring *r, uint32_t i)
{
	PyObject *v;

	if (i == HR_NO_NODE)
		Py_RETURN_NONE;
	v = PyLong_FromUnsignedLong(i);
	if (v && i < r->n && !r->ints[i])
		r->ints[i] = new_ref(v);
	return v;
}

PyObject *hrpy_ring_owners(hrpy_ring *r, const hr_batch_owner *out, size_t n)
{
	PyObject *list;

	Py_INCREF((PyObject *)r); /* as in hrpy_ring_owner_slow() */
	list = PyList_New((Py_ssize_t)n);

	for (size_t i = 0; list && i < n; i++) {
		PyObject *owner = hrpy_ring_owner(r, &out[i]);

		if (!owner) {
			Py_CLEAR(list);
			break;
		}
#ifdef Py_LIMITED_API
		PyList_SetItem(list, (Py_ssize_t)i, owner);
#else
		PyList_SET_ITEM(list, (Py_ssize_t)i, owner);
#endif
	}
	Py_DECREF((PyObject *)r);
	return list;
}

PyObject *hrpy_ring_node(hrpy_ring *r, size_t i)
{
	hrpy_state *st = HRPY_STATE(r);
	const hr_node *node;
	PyObject *obj, *v[6];

	if (r->nodes[i])
		return new_ref(r->nodes[i]);
	node = hr_ring_node(r->ring, i);
	v[0] = node_str_or_none(r, (uint32_t)i, 0);
	v[1] = node_str_or_none(r, (uint32_t)i, 1);
	v[2] = text(node->zone ? node->zone : "");
	v[3] = PyFloat_FromDouble(node->weight);
	v[4] = new_ref(st->states[node->state]);
	v[5] = PyLong_FromUnsignedLong(hr_ring_node_vnodes(r->ring, node));
	obj = hrpy_record(st->node_type, v, 6);
	if (obj && !r->nodes[i])
		r->nodes[i] = new_ref(obj);
	return obj;
}

PyObject *hrpy_ring_node_list(hrpy_ring *r)
{
	PyObject *list = PyList_New((Py_ssize_t)r->n);

	for (size_t i = 0; list && i < r->n; i++) {
		PyObject *node = hrpy_ring_node(r, i);

		if (!node)
			Py_CLEAR(list);
		else
			PyList_SetItem(list, (Py_ssize_t)i, node);
	}
	return list;
}

/* The number of `node`, a pointer from this ring (lookups give no
 * other). */
static size_t node_index(hrpy_ring *r, const hr_node *node)
{
	return (size_t)hr_ring_node_index(r->ring, node, NULL);
}

/* The Nodes of the preference list of a key. */
static PyObject *preflist(hrpy_ring *r, const hrpy_key *k, hr_view view, size_t count)
{
	size_t want = count < r->n ? count : r->n;
	hr_error err = { .code = 0 };
	const hr_node **out;
	PyObject *list;
	int got;

	if (want == 0)
		return PyList_New(0);
	out = PyMem_Malloc(want * sizeof *out);
	if (!out)
		return PyErr_NoMemory();
	got = hr_ring_preflist(r->ring, k->data, k->len, view, out, want, &err);
	if (got < 0) {
		PyMem_Free(out);
		return hrpy_raise(HRPY_STATE(r), got, &err);
	}
	list = PyList_New(got);
	for (int i = 0; list && i < got; i++) {
		PyObject *node = hrpy_ring_node(r, node_index(r, out[i]));

		if (!node)
			Py_CLEAR(list);
		else
			PyList_SetItem(list, i, node);
	}
	PyMem_Free(out);
	return list;
}

hrpy_ring *hrpy_ring_wrap(hrpy_state *st, hr_ring *ring)
{
	hrpy_ring *r = PyObject_New(hrpy_ring, st->ring_type);

	if (!r) {
		hr_ring_release(ring);
		return NULL;
	}
	r->ring = ring;
	r->epoch.revision = hr_ring_revision(ring);
	r->epoch.digest = hr_ring_digest(ring);
	r->n = hr_ring_node_count(ring);
	r->pairs = NULL;
	r->npairs = r->pairs_cap = 0;
	/* One block: strs (2n), nodes (n), same (n), ints (n). */
	r->strs = PyMem_Calloc(5 * r->n + 1, sizeof(PyObject *));
	if (!r->strs) {
		Py_DECREF(r);
		return (hrpy_ring *)PyErr_NoMemory();
	}
	r->nodes = r->strs + 2 * r->n;
	r->same = r->nodes + r->n;
	r->ints = r->same + r->n;
	return r;
}

/* Rings of this many nodes and more are freed with the GIL released. */
#define BIG_RING_NODES 4096

static void ring_dealloc(hrpy_ring *r)
{
	PyTypeObject *tp = Py_TYPE((PyObject *)r);

	if (r->strs) {
		for (size_t i = 0; i < 5 * r->n; i++)
			Py_XDECREF(r->strs[i]);
		PyMem_Free(r->strs);
	}
	for (size_t i = 0; i < r->pairs_cap; i++)
		Py_XDECREF(r->pairs[i].owner);
	PyMem_Free(r->pairs);
	/* Freeing a big ring takes milliseconds: meanwhile other threads (an
	 * event loop's) need not wait for the GIL.  Nothing else can reach
	 * an object being freed. */
	if (r->n >= BIG_RING_NODES) {
		hr_ring *ring = r->ring;

		Py_BEGIN_ALLOW_THREADS
		hr_ring_release(ring);
		Py_END_ALLOW_THREADS
	} else {
		hr_ring_release(r->ring);
	}
	((freefunc)PyType_GetSlot(tp, Py_tp_free))(r);
	Py_DECREF(tp);
}

/* ---- building rings -------------------------------------------------------- */

/* A members list entry as an hr_node (strings kept by `keep`), with its
 * tokens (owned by the caller, PyMem) if it lists some. */
struct member {
	hr_node node;
	uint64_t *tokens;
	size_t ntokens;
};

static int member_str(PyObject *v, const char *field, size_t i, PyObject *keep,
		      const char **out)
{
	char what[64];

	snprintf(what, sizeof what, "members[%zu]['%s']", i, field);
	*out = hrpy_cstr(v, what);
	return *out && PyList_Append(keep, v) == 0 ? 0 : -1;
}

static int member_tokens(PyObject *v, size_t i, struct member *m)
{
	PyObject *list = PySequence_List(v);
	Py_ssize_t n;

	if (!list || PyUnicode_Check(v) || PyBytes_Check(v)) {
		Py_XDECREF(list);
		if (!list && !PyErr_ExceptionMatches(PyExc_TypeError))
			return -1;
		PyErr_Clear();
		hrpy_type_error(v, "members[%zu]['tokens'] must be a list of int", i);
		return -1;
	}
	n = PyList_Size(list);
	m->tokens = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(uint64_t));
	if (!m->tokens) {
		Py_DECREF(list);
		PyErr_NoMemory();
		return -1;
	}
	for (Py_ssize_t t = 0; t < n; t++) {
		PyObject *tok = PyList_GetItem(list, t);
		unsigned long long u;

		if (!PyLong_Check(tok) || PyBool_Check(tok)) {
			hrpy_type_error(tok, "members[%zu]['tokens'][%zd] must be int", i, t);
			Py_DECREF(list);
			return -1;
		}
		u = PyLong_AsUnsignedLongLong(tok);
		if (u == (unsigned long long)-1 && PyErr_Occurred()) {
			PyErr_Clear();
			PyErr_Format(PyExc_ValueError,
				     "members[%zu]['tokens'][%zd] must be in 0..2**64-1, not %R", i, t, tok);
			Py_DECREF(list);
			return -1;
		}
		m->tokens[t] = u;
	}
	m->ntokens = (size_t)n;
	Py_DECREF(list);
	return 0;
}

static int is_field(PyObject *key, const char *name)
{
	return PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, name) == 0;
}

static int member_from_dict(PyObject *dict, size_t i, PyObject *keep, struct member *m)
{
	/* A copy, kept: converting a value may run code (a tokens iterable)
	 * that changes the caller's dict. */
	PyObject *d = PyDict_Copy(dict), *key, *v;
	Py_ssize_t pos = 0;

	if (!d || PyList_Append(keep, d) < 0) {
		Py_XDECREF(d);
		return -1;
	}
	Py_DECREF(d);
	while (PyDict_Next(d, &pos, &key, &v)) {
		int rc;

		if (is_field(key, "id"))
			rc = member_str(v, "id", i, keep, &m->node.id);
		else if (is_field(key, "addr"))
			rc = member_str(v, "addr", i, keep, &m->node.addr);
		else if (is_field(key, "zone"))
			rc = v == Py_None ? 0 : member_str(v, "zone", i, keep, &m->node.zone);
		else if (is_field(key, "weight")) {
			if (PyBool_Check(v) || !(PyLong_Check(v) || PyFloat_Check(v))) {
				hrpy_type_error(v, "members[%zu]['weight'] must be a number", i);
				return -1;
			}
			m->node.weight = PyFloat_AsDouble(v);
			rc = m->node.weight == -1.0 && PyErr_Occurred() ? -1 : 0;
		} else if (is_field(key, "state"))
			rc = hrpy_state_arg(v, &m->node.state);
		else if (is_field(key, "tokens"))
			rc = member_tokens(v, i, m);
		else {
			PyErr_Format(PyExc_TypeError, "members[%zu]: unknown field %R (known: id, "
				     "addr, zone, weight, state, tokens)", i, key);
			return -1;
		}
		if (rc < 0)
			return -1;
	}
	if (!m->node.id || !m->node.addr) {
		PyErr_Format(PyExc_ValueError, "members[%zu]: '%s' is required", i,
			     m->node.id ? "addr" : "id");
		return -1;
	}
	return 0;
}

/* A Node (as ring.nodes() gives): id, addr, zone, weight, state. */
static int member_from_node(PyObject *o, size_t i, PyObject *keep, struct member *m)
{
	PyObject *v;

	if (member_str(PyStructSequence_GetItem(o, 0), "id", i, keep, &m->node.id) < 0 ||
	    member_str(PyStructSequence_GetItem(o, 1), "addr", i, keep, &m->node.addr) < 0 ||
	    member_str(PyStructSequence_GetItem(o, 2), "zone", i, keep, &m->node.zone) < 0)
		return -1;
	v = PyStructSequence_GetItem(o, 3);
	m->node.weight = PyFloat_AsDouble(v);
	if (m->node.weight == -1.0 && PyErr_Occurred())
		return -1;
	return hrpy_state_arg(PyStructSequence_GetItem(o, 4), &m->node.state);
}

struct build {
	struct member *members;
	size_t n;
	hr_node *nodes;
};

static void build_free(struct build *b)
{
	for (size_t i = 0; b->members && i < b->n; i++)
		PyMem_Free(b->members[i].tokens);
	PyMem_Free(b->members);
	PyMem_Free(b->nodes);
}

static int build_from_list(hrpy_state *st, PyObject *members, PyObject *keep,
			   struct build *b)
{
	PyObject *list = PySequence_List(members);

	if (!list) {
		/* Not iterable; what an iteration raised goes through. */
		if (PyErr_ExceptionMatches(PyExc_TypeError)) {
			PyErr_Clear();
			hrpy_type_error(members, "members must be a list of nodes (dicts) or a "
					"members file's path");
		}
		return -1;
	}
	if (PyList_Append(keep, list) < 0) {
		Py_DECREF(list);
		return -1;
	}
	Py_DECREF(list);
	b->n = (size_t)PyList_Size(list);
	b->members = PyMem_Calloc(b->n + 1, sizeof *b->members);
	b->nodes = PyMem_Calloc(b->n + 1, sizeof *b->nodes);
	if (!b->members || !b->nodes) {
		PyErr_NoMemory();
		return -1;
	}
	for (size_t i = 0; i < b->n; i++) {
		PyObject *item = PyList_GetItem(list, (Py_ssize_t)i);
		struct member *m = &b->members[i];
		int rc;

		m->node.weight = 1;
		m->node.state = HR_STATE_ACTIVE;
		if (PyDict_Check(item))
			rc = member_from_dict(item, i, keep, m);
		else if (Py_IS_TYPE(item, st->node_type))
			rc = member_from_node(item, i, keep, m);
		else {
			hrpy_type_error(item, "members[%zu] must be a dict or a hashring.Node", i);
			rc = -1;
		}
		if (rc < 0)
			return -1;
		b->nodes[i] = m->node;
		b->nodes[i].tokens = m->tokens;
		b->nodes[i].ntokens = m->ntokens;
	}
	return 0;
}

/* The ring options of a Ring(): placement, vnodes_per_weight, maglev_size. */
static int ring_options(PyObject *kwargs, const char *fname, hr_ring_options *opts,
			uint64_t *revision, PyObject *keep)
{
	const hrpy_opt table[] = {
		{ "placement", HRPY_OPT_PLACEMENT, 0, offsetof(hr_ring_options, placement) },
		{ "vnodes_per_weight", HRPY_OPT_UINT, 0, offsetof(hr_ring_options, vnodes_per_weight) },
		{ "maglev_size", HRPY_OPT_U64, 0, offsetof(hr_ring_options, maglev_size) },
		{ "revision", HRPY_OPT_U64, 1, 0 },
	};
	void *targets[] = { opts, revision };

	hr_ring_options_init(opts);
	*revision = 0;
	return hrpy_options_parse(fname, kwargs, table, sizeof table / sizeof table[0],
				  targets, keep);
}

static PyObject *ring_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
	hrpy_state *st = hrpy_state_of_type(type);
	PyObject *members, *keep = NULL, *result = NULL;
	hr_ring_options opts;
	struct build b = { 0 };
	hr_error err = { 0 };
	hr_ring *ring = NULL;
	uint64_t revision;
	const char *path;
	int rc;

	if (!PyArg_ParseTuple(args, "O:Ring", &members))
		return NULL;
	keep = PyList_New(0);
	if (!keep || ring_options(kwargs, "Ring", &opts, &revision, keep) < 0)
		goto out;
	if (PyUnicode_Check(members) || PyBytes_Check(members) ||
	    PyObject_HasAttrString(members, "__fspath__")) {
		hrpy_opt path_opt = { "members", HRPY_OPT_PATH, 0, 0 };
		PyObject *kw = Py_BuildValue("{sO}", "members", members);
		void *targets[] = { &path };

		rc = kw ? hrpy_options_parse("Ring", kw, &path_opt, 1, targets, keep) : -1;
		Py_XDECREF(kw);
		if (rc < 0)
			goto out;
		if (revision) {
			PyErr_SetString(PyExc_TypeError, "Ring(): revision goes with a list of nodes, "
					"not a members file");
			goto out;
		}
		Py_BEGIN_ALLOW_THREADS
		rc = hr_ring_load_file(path, &opts, &ring, &err);
		Py_END_ALLOW_THREADS
	} else {
		if (build_from_list(st, members, keep, &b) < 0)
			goto out;
		Py_BEGIN_ALLOW_THREADS
		rc = hr_ring_build(b.nodes, b.n, &opts, revision, &ring, &err);
		Py_END_ALLOW_THREADS
	}
	if (rc < 0)
		hrpy_raise(st, rc, &err);
	else
		result = (PyObject *)hrpy_ring_wrap(st, ring);
out:
	build_free(&b);
	Py_XDECREF(keep);
	return result;
}

static PyObject *ring_from_json(PyObject *cls, PyObject *args, PyObject *kwargs)
{
	hrpy_state *st = hrpy_state_of_type((PyTypeObject *)cls);
	PyObject *keep = PyList_New(0), *doc;
	hr_ring_options opts;
	hr_error err = { 0 };
	hr_ring *ring = NULL;
	uint64_t revision;
	hrpy_key text;
	int rc;

	if (!keep)
		return NULL;
	if (!PyArg_ParseTuple(args, "O:from_json", &doc) ||
	    ring_options(kwargs, "from_json", &opts, &revision, keep) < 0) {
		Py_DECREF(keep);
		return NULL;
	}
	Py_DECREF(keep);
	if (revision) {
		PyErr_SetString(PyExc_TypeError, "from_json() got an unexpected keyword argument "
				"'revision'");
		return NULL;
	}
	if (!PyUnicode_Check(doc) && !PyBytes_Check(doc)) {
		hrpy_type_error(doc, "a members document must be str or bytes");
		return NULL;
	}
	if (hrpy_key_get(doc, &text) < 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = hr_ring_from_json(text.data, text.len, &opts, &ring, &err);
	Py_END_ALLOW_THREADS
	if (rc < 0)
		return hrpy_raise(st, rc, &err);
	return (PyObject *)hrpy_ring_wrap(st, ring);
}

/* ---- Ring methods ---------------------------------------------------------- */

/* hr_ring_lookup() of a Python key into *res; -1 with an exception set. */
static int ring_lookup_one(hrpy_ring *self, PyObject *key, hr_lookup *res)
{
	hr_error err;
	hrpy_key k;
	int rc;

	/* Not `= { 0 }`: zeroing the message buffer on every lookup costs
	 * more than the hash. */
	err.code = 0;
	err.message[0] = '\0';
	if (hrpy_key_get(key, &k) < 0)
		return -1;
	rc = hr_ring_lookup(self->ring, k.data, k.len, res, &err);
	hrpy_key_release(&k);
	if (rc < 0) {
		hrpy_raise(HRPY_STATE(self), rc, &err);
		return -1;
	}
	return 0;
}

static PyObject *ring_lookup(hrpy_ring *self, PyObject *key)
{
	hr_batch_owner o;
	hr_lookup res;

	/* A single lookup, cheaper than a batch of one; its node pointers
	 * are turned into node numbers. */
	if (ring_lookup_one(self, key, &res) < 0)
		return NULL;
	o.node = res.node ? (uint32_t)node_index(self, res.node) : HR_NO_NODE;
	o.read_node = res.read_node == res.node ? o.node
		      : res.read_node ? (uint32_t)node_index(self, res.read_node) : HR_NO_NODE;
	return hrpy_ring_owner(self, &o);
}

/* The write-view owner's number alone: an int the ring's node(i) maps
 * back to a Node, no object made (small ints are CPython's own). */
static PyObject *ring_lookup_index(hrpy_ring *self, PyObject *key)
{
	hr_lookup res;

	if (ring_lookup_one(self, key, &res) < 0)
		return NULL;
	return hrpy_ring_index(self, res.node ? (uint32_t)node_index(self, res.node)
					      : HR_NO_NODE);
}

static PyObject *ring_lookup_many(hrpy_ring *self, PyObject *keys)
{
	hr_error err = { .code = 0 };
	PyObject *result;
	hrpy_keys k;
	int rc;

	if (hrpy_keys_get(keys, &k) < 0)
		return NULL;
	if (k.n >= HRPY_NOGIL_KEYS) {
		Py_BEGIN_ALLOW_THREADS
		rc = hr_ring_lookup_batch(self->ring, k.ptrs, k.lens, k.n, k.out, &err);
		Py_END_ALLOW_THREADS
	} else {
		rc = hr_ring_lookup_batch(self->ring, k.ptrs, k.lens, k.n, k.out, &err);
	}
	if (rc < 0 && !(rc == HR_EEMPTY && k.n == 0))
		result = hrpy_raise(HRPY_STATE(self), rc, &err);
	else
		result = hrpy_ring_owners(self, k.out, k.n);
	hrpy_keys_release(&k);
	return result;
}

PyObject *hrpy_ring_replicas(hrpy_ring *r, PyObject *args, PyObject *kwargs)
{
	static char *names[] = { "key", "n", "view", NULL };
	PyObject *key, *count_obj = NULL, *view_obj = NULL, *result;
	unsigned long long count = 3;
	hr_view view = HR_VIEW_WRITE;
	hrpy_key k;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$O:replicas", names, &key, &count_obj,
					 &view_obj))
		return NULL;
	if ((count_obj && hrpy_uint_arg(count_obj, "n", SIZE_MAX, &count) < 0) ||
	    (view_obj && hrpy_view_arg(view_obj, &view) < 0))
		return NULL;
	if (hrpy_key_get(key, &k) < 0)
		return NULL;
	result = preflist(r, &k, view, (size_t)count);
	hrpy_key_release(&k);
	return result;
}

static PyObject *ring_nodes(hrpy_ring *self, PyObject *unused)
{
	return hrpy_ring_node_list(self);
}

static PyObject *ring_node(hrpy_ring *self, PyObject *index)
{
	Py_ssize_t i;

	/* An index, as a list takes: int or __index__, not a bool. */
	if (PyBool_Check(index) || !PyIndex_Check(index)) {
		hrpy_type_error(index, "node(): the index must be an int");
		return NULL;
	}
	i = PyNumber_AsSsize_t(index, NULL);
	if (i == -1 && PyErr_Occurred())
		return NULL;
	if (i < 0 || (size_t)i >= self->n) {
		PyErr_Format(PyExc_IndexError, "node index %zd out of range (the ring has %zu "
			     "node%s)", i, self->n, self->n == 1 ? "" : "s");
		return NULL;
	}
	return hrpy_ring_node(self, (size_t)i);
}

static PyObject *ring_find(hrpy_ring *self, PyObject *id_obj)
{
	const char *id = hrpy_cstr(id_obj, "id");
	const hr_node *node;

	if (!id)
		return NULL;
	node = hr_ring_find(self->ring, id);
	if (!node)
		Py_RETURN_NONE;
	return hrpy_ring_node(self, node_index(self, node));
}

static int ring_contains(hrpy_ring *self, PyObject *id_obj)
{
	const char *id;

	if (!PyUnicode_Check(id_obj))
		return 0;
	id = PyUnicode_AsUTF8AndSize(id_obj, NULL);
	if (!id)
		return -1;
	return hr_ring_find(self->ring, id) != NULL;
}

static Py_ssize_t ring_len(hrpy_ring *self)
{
	return (Py_ssize_t)self->n;
}

static PyObject *ring_iter(hrpy_ring *self)
{
	PyObject *list = hrpy_ring_node_list(self), *it;

	if (!list)
		return NULL;
	it = PyObject_GetIter(list);
	Py_DECREF(list);
	return it;
}

static PyObject *ring_shares(hrpy_ring *self, PyObject *args, PyObject *kwargs)
{
	static char *names[] = { "view", NULL };
	PyObject *view_obj = NULL, *dict;
	hr_view view = HR_VIEW_WRITE;
	double *shares;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:shares", names, &view_obj))
		return NULL;
	if (view_obj && hrpy_view_arg(view_obj, &view) < 0)
		return NULL;
	shares = PyMem_Malloc((self->n + 1) * sizeof *shares);
	if (!shares)
		return PyErr_NoMemory();
	Py_BEGIN_ALLOW_THREADS
	hr_ring_node_shares(self->ring, view, shares, self->n);
	Py_END_ALLOW_THREADS
	dict = PyDict_New();
	for (size_t i = 0; dict && i < self->n; i++) {
		PyObject *id = node_str(self, i, 0), *share;
		const hr_node *node = hr_ring_node(self->ring, i);

		/* A node outside the view (warming in the read view, draining in
		 * the write view) has no share there: it is not listed. */
		if (view == HR_VIEW_WRITE ? node->state == HR_STATE_DRAINING
					  : node->state == HR_STATE_WARMING)
			continue;
		share = PyFloat_FromDouble(shares[i]);
		if (!id || !share || PyDict_SetItem(dict, id, share) < 0)
			Py_CLEAR(dict);
		Py_XDECREF(share);
	}
	PyMem_Free(shares);
	return dict;
}

static int ring_arg(hrpy_ring *self, PyObject *other, const char *fname,
		    const hr_ring **out)
{
	if (other == Py_None) {
		*out = NULL;
		return 0;
	}
	if (!Py_IS_TYPE(other, Py_TYPE((PyObject *)self))) {
		hrpy_type_error(other, "%s(): other must be a hashring.Ring or None", fname);
		return -1;
	}
	*out = ((hrpy_ring *)other)->ring;
	return 0;
}

static PyObject *node_id_or_none(const hr_node *node)
{
	return node ? PyUnicode_FromString(node->id) : new_ref(Py_None);
}

static PyObject *diff_object(hrpy_state *st, const hr_diff *d, hr_view view, double moved)
{
	size_t narcs = hr_diff_arc_count(d), ntotals = hr_diff_total_count(d);
	const hr_arc *arcs = hr_diff_arcs(d);
	const hr_arc_total *totals = hr_diff_totals(d);
	PyObject *alist = PyList_New((Py_ssize_t)narcs);
	PyObject *tlist = PyList_New((Py_ssize_t)ntotals);
	PyObject *v[4];

	for (size_t i = 0; alist && i < narcs; i++) {
		v[0] = PyLong_FromUnsignedLongLong(arcs[i].start);
		/* An end of 0 stands for 2**64, the top of the circle. */
		v[1] = arcs[i].end ? PyLong_FromUnsignedLongLong(arcs[i].end)
				   : PyLong_FromString("18446744073709551616", NULL, 10);
		v[2] = node_id_or_none(arcs[i].old_node);
		v[3] = node_id_or_none(arcs[i].new_node);
		v[0] = hrpy_record(st->arc_type, v, 4);
		if (!v[0])
			Py_CLEAR(alist);
		else
			PyList_SetItem(alist, (Py_ssize_t)i, v[0]);
	}
	for (size_t i = 0; tlist && i < ntotals; i++) {
		v[0] = node_id_or_none(totals[i].old_node);
		v[1] = node_id_or_none(totals[i].new_node);
		v[2] = PyLong_FromSize_t(totals[i].arcs);
		v[3] = PyFloat_FromDouble(totals[i].share);
		v[0] = hrpy_record(st->arc_total_type, v, 4);
		if (!v[0])
			Py_CLEAR(tlist);
		else
			PyList_SetItem(tlist, (Py_ssize_t)i, v[0]);
	}
	v[0] = PyUnicode_FromString(view == HR_VIEW_READ ? "read" : "write");
	v[1] = PyFloat_FromDouble(moved);
	v[2] = alist;
	v[3] = tlist;
	return hrpy_record(st->diff_type, v, 4);
}

static PyObject *ring_diff(hrpy_ring *self, PyObject *args, PyObject *kwargs)
{
	static char *names[] = { "other", "view", NULL };
	hrpy_state *st = HRPY_STATE(self);
	PyObject *other, *view_obj = NULL, *result;
	hr_view view = HR_VIEW_WRITE;
	hr_error err = { 0 };
	const hr_ring *new_ring;
	hr_diff *d = NULL;
	double moved = 0;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:diff", names, &other, &view_obj))
		return NULL;
	if (ring_arg(self, other, "diff", &new_ring) < 0 ||
	    (view_obj && hrpy_view_arg(view_obj, &view) < 0))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = hr_diff_new(self->ring, new_ring, view, &d, &err);
	if (rc == 0)
		moved = hr_ring_moved_share(self->ring, new_ring, view);
	Py_END_ALLOW_THREADS
	if (rc < 0)
		return hrpy_raise(st, rc, &err);
	result = diff_object(st, d, view, moved);
	hr_diff_free(d);
	return result;
}

static PyObject *ring_moved_share(hrpy_ring *self, PyObject *args, PyObject *kwargs)
{
	static char *names[] = { "other", "view", NULL };
	PyObject *other, *view_obj = NULL;
	hr_view view = HR_VIEW_WRITE;
	const hr_ring *new_ring;
	double moved;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:moved_share", names, &other,
					 &view_obj))
		return NULL;
	if (ring_arg(self, other, "moved_share", &new_ring) < 0 ||
	    (view_obj && hrpy_view_arg(view_obj, &view) < 0))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	moved = hr_ring_moved_share(self->ring, new_ring, view);
	Py_END_ALLOW_THREADS
	return PyFloat_FromDouble(moved);
}

static PyObject *ring_get_revision(hrpy_ring *self, void *unused)
{
	return PyLong_FromUnsignedLongLong(self->epoch.revision);
}

static PyObject *ring_get_digest(hrpy_ring *self, void *unused)
{
	return PyLong_FromUnsignedLongLong(self->epoch.digest);
}

static PyObject *ring_get_points(hrpy_ring *self, void *unused)
{
	return PyLong_FromSize_t(hr_ring_point_count(self->ring));
}

/* The options the ring was built with (hr_ring_options_get()). */
static int ring_built_options(hrpy_ring *self, hr_ring_options *opts)
{
	hr_error err = { .code = 0 };
	int rc;

	hr_ring_options_init(opts);
	rc = hr_ring_options_get(self->ring, opts, &err);
	if (rc < 0)
		hrpy_raise(HRPY_STATE(self), rc, &err);
	return rc;
}

static PyObject *ring_get_placement(hrpy_ring *self, void *unused)
{
	hr_ring_options opts;
	const char *name;

	if (ring_built_options(self, &opts) < 0)
		return NULL;
	name = hrpy_placement_name(opts.placement);
	if (!name)
		return PyErr_Format(PyExc_SystemError, "unknown placement %d",
				    (int)opts.placement);
	return PyUnicode_FromString(name);
}

static PyObject *ring_get_vnodes_per_weight(hrpy_ring *self, void *unused)
{
	hr_ring_options opts;

	return ring_built_options(self, &opts) < 0 ? NULL
	       : PyLong_FromUnsignedLong(opts.vnodes_per_weight);
}

static PyObject *ring_get_maglev_size(hrpy_ring *self, void *unused)
{
	hr_ring_options opts;

	return ring_built_options(self, &opts) < 0 ? NULL
	       : PyLong_FromUnsignedLongLong((unsigned long long)opts.maglev_size);
}

static PyObject *ring_repr(hrpy_ring *self)
{
	char digest[20];

	snprintf(digest, sizeof digest, "%016llx", (unsigned long long)self->epoch.digest);
	return PyUnicode_FromFormat("<hashring.Ring revision=%llu digest=%s nodes=%zu points=%zu>",
				    (unsigned long long)self->epoch.revision, digest, self->n,
				    hr_ring_point_count(self->ring));
}

static PyMethodDef ring_methods[] = {
	{ "lookup", (PyCFunction)ring_lookup, METH_O,
	  "lookup(key) -> Owner\n\nThe owners of `key` (str as UTF-8, bytes or any "
	  "bytes-like object).\nRaises EmptyRingError if the ring has no node." },
	{ "lookup_index", (PyCFunction)ring_lookup_index, METH_O,
	  "lookup_index(key) -> int | None\n\nThe index in this ring of `key`'s write-view "
	  "owner, as node(i) takes\n(None if that view is empty): lookup(key) without "
	  "making an answer.\nRaises EmptyRingError if the ring has no node." },
	{ "lookup_many", (PyCFunction)ring_lookup_many, METH_O,
	  "lookup_many(keys) -> list[Owner]\n\nThe owners of every key of an iterable, in "
	  "one batch (the GIL released\nfrom 64 keys on); an empty iterable gives []." },
	{ "replicas", (PyCFunction)(void (*)(void))hrpy_ring_replicas, METH_VARARGS | METH_KEYWORDS,
	  "replicas(key, n=3, *, view='write') -> list[Node]\n\nThe preference list of `key`: "
	  "the first `n` distinct nodes of the view\nclockwise, zones first distinct "
	  "(docs/placement.md section 5)." },
	{ "nodes", (PyCFunction)ring_nodes, METH_NOARGS,
	  "nodes() -> list[Node]\n\nEvery node, in id order." },
	{ "node", (PyCFunction)ring_node, METH_O,
	  "node(index) -> Node\n\nThe node of that index, 0 <= index < len(ring), in id "
	  "order as nodes()\nlists them (lookup_index() answers with these); IndexError "
	  "otherwise." },
	{ "find", (PyCFunction)ring_find, METH_O,
	  "find(id) -> Node | None\n\nThe node of that id, or None." },
	{ "shares", (PyCFunction)(void (*)(void))ring_shares, METH_VARARGS | METH_KEYWORDS,
	  "shares(view='write') -> dict[str, float]\n\nEach node of the view's share of the "
	  "key space, by id (summing to 1)." },
	{ "diff", (PyCFunction)(void (*)(void))ring_diff, METH_VARARGS | METH_KEYWORDS,
	  "diff(other, *, view='write') -> Diff\n\nThe arcs whose owner differs from this "
	  "ring (the old one) to `other`\n(the new one; None: an empty ring)." },
	{ "moved_share", (PyCFunction)(void (*)(void))ring_moved_share,
	  METH_VARARGS | METH_KEYWORDS,
	  "moved_share(other, *, view='write') -> float\n\nThe share of the key space whose "
	  "owner differs from this ring to\n`other`: diff(other).moved without listing arcs." },
	{ "from_json", (PyCFunction)(void (*)(void))ring_from_json,
	  METH_VARARGS | METH_KEYWORDS | METH_CLASS,
	  "from_json(document, *, placement='xxh3', vnodes_per_weight=200, maglev_size=65537) "
	  "-> Ring\n\nA ring from a members document (a JSON object mapping id to record, "
	  "docs/placement.md section 8), str or bytes." },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef ring_getset[] = {
	{ "revision", (getter)ring_get_revision, NULL, "etcd revision the ring reflects (0: offline)", NULL },
	{ "digest", (getter)ring_get_digest, NULL, "64-bit digest of the membership and placement", NULL },
	{ "points", (getter)ring_get_points, NULL, "points of the ring (all vnodes)", NULL },
	{ "placement", (getter)ring_get_placement, NULL,
	  "the placement the ring was built with: 'xxh3', 'ketama', 'maglev', 'rendezvous' "
	  "or 'tokens'", NULL },
	{ "vnodes_per_weight", (getter)ring_get_vnodes_per_weight, NULL,
	  "points per unit of weight the ring was built with", NULL },
	{ "maglev_size", (getter)ring_get_maglev_size, NULL,
	  "the Maglev table size the ring was built with (read with maglev only)", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PyType_Slot ring_slots[] = {
	{ Py_tp_doc, "Ring(members, *, placement='xxh3', vnodes_per_weight=200, maglev_size=65537, "
		     "revision=0)\n\n"
		     "An immutable ring.  `members` is a members file's path (str, bytes or\n"
		     "os.PathLike) or a list of nodes: dicts with 'id' and 'addr' (required),\n"
		     "'zone', 'weight' (1), 'state' ('active') and 'tokens' (with the tokens\n"
		     "placement), or Node objects.  Placements: xxh3, ketama, maglev,\n"
		     "rendezvous, tokens (docs/placement.md).  Clients hand out rings too\n"
		     "(Client.ring(), on_change).  len() is the node count; `id in ring`\n"
		     "and iteration over its Nodes work.  Thread safe." },
	{ Py_tp_new, ring_new },
	{ Py_tp_dealloc, ring_dealloc },
	{ Py_tp_methods, ring_methods },
	{ Py_tp_getset, ring_getset },
	{ Py_tp_repr, ring_repr },
	{ Py_tp_iter, ring_iter },
	{ Py_sq_length, ring_len },
	{ Py_sq_contains, ring_contains },
	{ 0, NULL }
};

static PyType_Spec ring_spec = {
	"hashring.Ring", sizeof(hrpy_ring), 0, Py_TPFLAGS_DEFAULT, ring_slots
};

static PyTypeObject *struct_type(PyObject *module, PyStructSequence_Desc *desc,
				 const char *name)
{
	PyTypeObject *type = PyStructSequence_NewType(desc);

	if (type && PyModule_AddObjectRef(module, name, (PyObject *)type) < 0)
		Py_CLEAR(type);
	return type;
}

int hrpy_ring_types_init(PyObject *module, hrpy_state *st)
{
	st->owner_type = struct_type(module, &owner_desc, "Owner");
	st->node_type = struct_type(module, &node_desc, "Node");
	st->arc_type = struct_type(module, &arc_desc, "Arc");
	st->arc_total_type = struct_type(module, &arc_total_desc, "ArcTotal");
	st->diff_type = struct_type(module, &diff_desc, "Diff");
	if (!st->owner_type || !st->node_type || !st->arc_type || !st->arc_total_type ||
	    !st->diff_type)
		return -1;
	st->ring_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &ring_spec, NULL);
	if (!st->ring_type)
		return -1;
	return PyModule_AddType(module, st->ring_type);
}
