/* SPDX-License-Identifier: MIT */
/* rebalance_memcached.c - the rebalancer's memcached backend
 * (hr_rebalance_memcached): a connection per node over memcache.c, made
 * on first use and made again after an error. */
#define _GNU_SOURCE
#include "rebalance_impl.h"

#include "memcache.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS 2000

typedef struct mc_conn {
	char *addr;
	hr__mc *mc;
} mc_conn;

typedef struct mc_backend {
	int timeout_ms;
	mc_conn *conns;
	size_t n, cap;
	hr__mc_value value;   /* the last value fetched */
} mc_backend;

/* The connection to `addr`, made if there is none. */
static int conn_of(mc_backend *b, const char *addr, hr__mc **out, hr_error *err)
{
	size_t i;
	int rc;

	for (i = 0; i < b->n && strcmp(b->conns[i].addr, addr); i++)
		;
	if (i < b->n && b->conns[i].mc) {
		*out = b->conns[i].mc;
		return 0;
	}
	if (i == b->n) {
		if (b->n == b->cap) {
			size_t cap = b->cap ? 2 * b->cap : 8;
			mc_conn *c = realloc(b->conns, cap * sizeof *c);

			if (!c)
				return hr__rb_error_set(err, HR_ENOMEM, "out of memory (connections)");
			b->conns = c;
			b->cap = cap;
		}
		b->conns[i] = (mc_conn){ strdup(addr), NULL };
		if (!b->conns[i].addr)
			return hr__rb_error_set(err, HR_ENOMEM, "out of memory (connections)");
		b->n++;
	}
	rc = hr__mc_connect(addr, b->timeout_ms, &b->conns[i].mc, err);
	*out = b->conns[i].mc;
	return rc;
}

/* After an error the connection is unusable: the next call makes a new one. */
static int drop_on_error(mc_backend *b, const char *addr, int rc)
{
	if (rc >= 0)
		return rc;
	for (size_t i = 0; i < b->n; i++) {
		if (!strcmp(b->conns[i].addr, addr)) {
			hr__mc_close(b->conns[i].mc);
			b->conns[i].mc = NULL;
		}
	}
	return rc;
}

typedef struct dump_ctx {
	hr_rebalance_key_fn fn;
	void *ctx;
} dump_ctx;

static int dump_item(void *userdata, const hr__mc_item *item)
{
	dump_ctx *d = userdata;

	return d->fn(d->ctx, item->key, item->key_len, item->cas);
}

/* A dump on a connection of its own: nothing else may be in flight on it,
 * and the rest of a dump stopped early is still coming.  The hash walk
 * misses no item; a server without it gets the LRU walk, which can, and
 * the rebalancer repeats that until it stops finding keys. */
static int mc_enumerate(void *userdata, const char *addr, unsigned pass,
			hr_rebalance_key_fn fn, void *ctx, hr_error *err)
{
	mc_backend *b = userdata;
	dump_ctx d = { fn, ctx };
	hr__mc *mc = NULL;
	int rc;

	(void)pass;
	rc = hr__mc_connect(addr, b->timeout_ms, &mc, err);
	if (rc == 0)
		rc = hr__mc_metadump(mc, HR__MC_WALK_HASH, dump_item, &d, err);
	if (rc == 0)
		rc = HR_REBALANCE_LISTED_ALL;
	else if (rc == HR__MC_NO_HASH_WALK)
		rc = hr__mc_metadump(mc, HR__MC_WALK_LRU, dump_item, &d, err);
	hr__mc_close(mc);
	return rc;
}

static int mc_fetch(void *userdata, const char *addr, const void *key, size_t len,
		    hr_rebalance_value *out, hr_error *err)
{
	mc_backend *b = userdata;
	hr__mc *mc;
	int rc = conn_of(b, addr, &mc, err);

	if (rc == 0)
		rc = out ? hr__mc_get(mc, key, len, &b->value, err) :
			   hr__mc_exists(mc, key, len, err);
	if (rc == 1 && out)
		*out = (hr_rebalance_value){ b->value.data, b->value.len, b->value.flags,
					     b->value.ttl };
	return drop_on_error(b, addr, rc);
}

static int mc_add(void *userdata, const char *addr, const void *key, size_t len,
		  const hr_rebalance_value *value, uint64_t *cas, hr_error *err)
{
	mc_backend *b = userdata;
	/* The store only reads the value. */
	hr__mc_value v = { .data = (char *)(uintptr_t)value->data, .len = value->len,
			   .flags = value->flags, .ttl = value->ttl_s };
	hr__mc *mc;
	int rc = conn_of(b, addr, &mc, err);

	if (rc == 0)
		rc = hr__mc_store(mc, key, len, &v, HR__MC_ADD, cas, err);
	return drop_on_error(b, addr, rc);
}

static int mc_remove(void *userdata, const char *addr, const void *key, size_t len,
		     uint64_t cas, hr_error *err)
{
	mc_backend *b = userdata;
	hr__mc *mc;
	int rc = conn_of(b, addr, &mc, err);

	if (rc == 0)
		rc = hr__mc_delete(mc, key, len, cas, err);
	return drop_on_error(b, addr, rc);
}

static void mc_close(void *userdata)
{
	mc_backend *b = userdata;

	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		hr__mc_close(b->conns[i].mc);
		free(b->conns[i].addr);
	}
	free(b->conns);
	hr__mc_value_free(&b->value);
	free(b);
}

int hr_rebalance_memcached(int timeout_ms, hr_rebalance_backend *out, hr_error *err)
{
	hr_rebalance_backend be;
	mc_backend *b;

	if (!out || out->size < offsetof(hr_rebalance_backend, userdata) + sizeof(void *) ||
	    out->size > 4096)
		return hr__rb_error_set(err, HR_EINVAL,
					"hr_rebalance_memcached: out must be set up with"
					" hr_rebalance_backend_init()");
	if (timeout_ms < 0)
		return hr__rb_error_set(err, HR_EINVAL, "hr_rebalance_memcached: timeout_ms %d < 0",
					timeout_ms);
	b = calloc(1, sizeof *b);
	if (!b)
		return hr__rb_error_set(err, HR_ENOMEM, "out of memory (memcached backend)");
	b->timeout_ms = timeout_ms ? timeout_ms : DEFAULT_TIMEOUT_MS;
	be = (hr_rebalance_backend){
		.size = sizeof be,
		.userdata = b,
		.enumerate = mc_enumerate,
		.fetch = mc_fetch,
		.add = mc_add,
		.remove = mc_remove,
		.close = mc_close,
		/* For a server without the hash walk: its LRU walk misses the
		 * items moving while it passes, several in a hundred under a
		 * heavy read load, and each further pass finds most of what
		 * the earlier ones missed (docs/handoff.md section 5). */
		.enumerate_passes = 8,
		.name = "memcached",
	};
	/* The caller's struct, no byte beyond its size. */
	memcpy((char *)out + sizeof out->size, (char *)&be + sizeof be.size,
	       (out->size < sizeof be ? out->size : sizeof be) - sizeof be.size);
	return 0;
}
