/*
 * memcache.h - one connection to a memcached server, speaking what the
 * rebalancer needs of its text protocol: the item list of
 * `lru_crawler metadump all`, and the meta commands mg, ms, md
 * (memcached >= 1.6; docs/handoff.md section 5 shows each exchange).
 *
 * Calls block, each read and write bounded by the connection's timeout.
 * Keys are any bytes (1..250): those the text protocol cannot carry as a
 * token (a space, a control byte) go base64-encoded with the `b` flag.  A
 * failure names the server and what failed; after an I/O or protocol error
 * the connection is unusable (close it).  A connection is used by one
 * thread at a time.
 */
#ifndef HR_REBALANCE_MEMCACHE_H
#define HR_REBALANCE_MEMCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "hashring.h"

/* memcached's longest key. */
#define RB_MC_KEY_MAX 250

typedef struct rb_mc rb_mc;

/* One line of a metadump: the decoded key and the fields the copy uses. */
typedef struct rb_mc_item {
	char key[RB_MC_KEY_MAX];
	size_t key_len;
	int64_t exp;    /* -1: no expiry; else a Unix time                    */
	uint64_t cas;
	uint64_t size;  /* the item's size in memcached's memory              */
} rb_mc_item;

/* A value with what the copy preserves.  `data` belongs to the struct
 * (grown as needed); free it with rb_mc_value_free(). */
typedef struct rb_mc_value {
	char *data;
	size_t len;
	size_t cap;
	uint32_t flags;  /* the client flags                                  */
	int64_t ttl;     /* remaining seconds; -1: no expiry                  */
} rb_mc_value;

void rb_mc_value_free(rb_mc_value *v);

/* Connects to `addr` ("host:port", "[v6]:port") within `timeout_ms`,
 * which also bounds every later read and write.  HR_EINVAL for an address
 * without a port, HR_ECONNECT when no address of it answers. */
int rb_mc_connect(const char *addr, int timeout_ms, rb_mc **out, hr_error *err);
/* Closes the connection.  Accepts NULL. */
void rb_mc_close(rb_mc *mc);
/* The address given to rb_mc_connect(). */
const char *rb_mc_addr(const rb_mc *mc);

/*
 * Parses one metadump line (without its line end) into `out`: 0, or
 * HR_EPARSE naming what is wrong (no key=, a bad %XX, a key over
 * RB_MC_KEY_MAX bytes, a field that is not a number).  Fields it does not
 * know are ignored; exp, cas and size default to -1, 0 and 0 when absent.
 */
int rb_mc_parse_dump_line(const char *line, size_t len, rb_mc_item *out,
			  hr_error *err);

/*
 * Sends `lru_crawler metadump all` and calls fn(userdata, item) for every
 * item until END; fn returns 0 to go on, anything else stops the dump (the
 * connection must then be closed: the rest of the dump is still coming)
 * and is returned.  Only this command may be in flight on the connection:
 * use one of its own.  HR_EIO when memcached refuses (a crawler already
 * running elsewhere answers BUSY) or the dump breaks off, HR_EPARSE for a
 * line rb_mc_parse_dump_line() refuses, HR_ETIMEDOUT.
 */
int rb_mc_metadump(rb_mc *mc, int (*fn)(void *userdata, const rb_mc_item *item),
		   void *userdata, hr_error *err);

/* Fetches `key` with its flags and remaining TTL (mg .. s f t v): 1 and
 * *out filled, or 0 when the server has no such key; HR_EIO, HR_ETIMEDOUT. */
int rb_mc_get(rb_mc *mc, const void *key, size_t len, rb_mc_value *out,
	      hr_error *err);

/* Whether the server has `key` (mg without flags): 1 or 0; errors as
 * rb_mc_get(). */
int rb_mc_exists(rb_mc *mc, const void *key, size_t len, hr_error *err);

/* How rb_mc_store() stores. */
typedef enum rb_mc_mode {
	RB_MC_ADD, /* only if absent (ms .. ME): never overwrites */
	RB_MC_SET  /* always (ms .. MS)                            */
} rb_mc_mode;

/*
 * Stores `v` (its data, flags and ttl: -1 or 0 for no expiry, up to 30
 * days relative, beyond sent as the Unix time now + ttl) under `key`: 1
 * when stored, with the item's CAS in *cas (may be NULL); 0 when
 * RB_MC_ADD found the key present.  HR_EIO (also for a server error such
 * as out of memory, with its text), HR_ETIMEDOUT.
 */
int rb_mc_store(rb_mc *mc, const void *key, size_t len, const rb_mc_value *v,
		rb_mc_mode mode, uint64_t *cas, hr_error *err);

/* Deletes `key` if its CAS is still `cas` (0: whatever it is): 1 when
 * deleted, 0 when absent or changed since.  HR_EIO, HR_ETIMEDOUT. */
int rb_mc_delete(rb_mc *mc, const void *key, size_t len, uint64_t cas,
		 hr_error *err);

#endif
