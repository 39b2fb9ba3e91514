/* SPDX-License-Identifier: MIT */
/*
 * memcache.h - one connection to a memcached server, speaking what the
 * rebalancer needs of its text protocol: the item list of
 * `lru_crawler metadump all`, and the meta commands mg, ms, md
 * (memcached >= 1.6; docs/handoff.md section 5 shows each exchange).
 *
 * Calls block, each read and write bounded by the connection's timeout.
 * Keys are any bytes (1..250): those the text protocol cannot carry as a
 * token (a space, a control byte) go base64-encoded with the `b` flag, up
 * to 186 bytes (memcached takes a token of at most 250 characters): a
 * longer one, which only the binary protocol can write, is HR_ELIMIT and
 * nothing is sent (the connection stays usable).  A
 * failure names the server and what failed; after an I/O or protocol error
 * the connection is unusable (close it).  A connection is used by one
 * thread at a time.
 */
#ifndef HR_MEMCACHE_H
#define HR_MEMCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "hashring.h"

/* memcached's longest key. */
#define HR__MC_KEY_MAX 250

typedef struct hr__mc hr__mc;

/* One line of a metadump: the decoded key and the fields the copy uses. */
typedef struct hr__mc_item {
	char key[HR__MC_KEY_MAX];
	size_t key_len;
	int64_t exp;    /* -1: no expiry; else a Unix time                    */
	uint64_t cas;
	uint64_t size;  /* the item's size in memcached's memory              */
} hr__mc_item;

/* A value with what the copy preserves.  `data` belongs to the struct
 * (grown as needed); free it with hr__mc_value_free(). */
typedef struct hr__mc_value {
	char *data;
	size_t len;
	size_t cap;
	uint32_t flags;  /* the client flags                                  */
	int64_t ttl;     /* remaining seconds; -1: no expiry                  */
} hr__mc_value;

void hr__mc_value_free(hr__mc_value *v);

/* Connects to `addr` ("host:port", "[v6]:port") within `timeout_ms`,
 * which also bounds every later read and write.  HR_EINVAL for an address
 * without a port, HR_ECONNECT when no address of it answers. */
int hr__mc_connect(const char *addr, int timeout_ms, hr__mc **out, hr_error *err);
/* Closes the connection.  Accepts NULL. */
void hr__mc_close(hr__mc *mc);
/* The address given to hr__mc_connect(). */
const char *hr__mc_addr(const hr__mc *mc);

/*
 * Parses one metadump line (without its line end) into `out`: 0, or
 * HR_EPARSE naming what is wrong (no key=, a bad %XX, a key over
 * HR__MC_KEY_MAX bytes, a field that is not a number).  Fields it does not
 * know are ignored; exp, cas and size default to -1, 0 and 0 when absent.
 */
int hr__mc_parse_dump_line(const char *line, size_t len, hr__mc_item *out,
			  hr_error *err);

/* How hr__mc_metadump() walks the items.  The LRU walk (`metadump all`)
 * is no snapshot: an item memcached moves between its LRU queues while
 * the crawler passes (as its LRU maintainer does after reads) is listed
 * twice or not at all.  The hash walk (`metadump hash`, memcached >=
 * 1.6.9) goes bucket by bucket through the hash table, each under its
 * lock, with the table's expansion held off: every item present from the
 * walk's start to its end is listed exactly once. */
typedef enum hr__mc_walk { HR__MC_WALK_LRU, HR__MC_WALK_HASH } hr__mc_walk;

/* hr__mc_metadump()'s answer when the server has no hash walk. */
#define HR__MC_NO_HASH_WALK 1

/*
 * Sends `lru_crawler metadump all` (or `hash`) and calls fn(userdata,
 * item) for every item until END; fn returns 0 to go on, anything else
 * stops the dump (the connection must then be closed: the rest of the
 * dump is still coming) and is returned.  Only this command may be in
 * flight on the connection: use one of its own.  HR__MC_NO_HASH_WALK when
 * the server answers a hash walk with BADCLASS (before 1.6.9: the
 * connection stays usable), HR_EIO when memcached refuses (a crawler
 * already running elsewhere answers BUSY) or the dump breaks off,
 * HR_EPARSE for a line hr__mc_parse_dump_line() refuses, HR_ETIMEDOUT.
 */
int hr__mc_metadump(hr__mc *mc, hr__mc_walk walk,
		   int (*fn)(void *userdata, const hr__mc_item *item), void *userdata,
		   hr_error *err);

/* Fetches `key` with its flags and remaining TTL (mg .. s f t v): 1 and
 * *out filled, or 0 when the server has no such key; HR_EIO, HR_ETIMEDOUT,
 * HR_EINVAL and HR_ELIMIT for a key it cannot send (above). */
int hr__mc_get(hr__mc *mc, const void *key, size_t len, hr__mc_value *out,
	      hr_error *err);

/* Whether the server has `key` (mg without flags): 1 or 0; errors as
 * hr__mc_get(). */
int hr__mc_exists(hr__mc *mc, const void *key, size_t len, hr_error *err);

/* How hr__mc_store() stores. */
typedef enum hr__mc_mode {
	HR__MC_ADD, /* only if absent (ms .. ME): never overwrites */
	HR__MC_SET  /* always (ms .. MS)                            */
} hr__mc_mode;

/*
 * Stores `v` (its data, flags and ttl: -1 or 0 for no expiry, up to 30
 * days relative, beyond sent as the Unix time now + ttl) under `key`: 1
 * when stored, with the item's CAS in *cas (may be NULL); 0 when
 * HR__MC_ADD found the key present.  HR_EIO (also for a server error such
 * as out of memory, with its text), HR_ETIMEDOUT; keys as hr__mc_get().
 */
int hr__mc_store(hr__mc *mc, const void *key, size_t len, const hr__mc_value *v,
		hr__mc_mode mode, uint64_t *cas, hr_error *err);

/* Deletes `key` if its CAS is still `cas` (0: whatever it is): 1 when
 * deleted, 0 when absent or changed since.  Errors as hr__mc_get(). */
int hr__mc_delete(hr__mc *mc, const void *key, size_t len, uint64_t cas,
		 hr_error *err);

#endif
