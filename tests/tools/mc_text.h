/* SPDX-License-Identifier: MIT */
/*
 * mc_text.h - a minimal blocking client of memcached's text protocol
 * (get, set, delete), for the load generator and the end-to-end suite.
 * One connection per object, used by one thread.  Keys are sent as they
 * are: printable ASCII without blanks, at most 250 bytes.  Every call
 * that fails writes why into the connection's error string and returns
 * -1; the connection is then unusable (close it and connect again).
 */
#ifndef MC_TEXT_H
#define MC_TEXT_H

#include <stddef.h>
#include <stdint.h>

typedef struct mct mct;

/* Connects to "host:port" (a numeric IPv4 address), with `timeout_ms`
 * for the connect and every later send or receive.  NULL on failure,
 * with the reason in errbuf. */
mct *mct_connect(const char *addr, int timeout_ms, char *errbuf, size_t errlen);
void mct_close(mct *c);                 /* accepts NULL */
const char *mct_error(const mct *c);

/* 1 and the value in buf (at most cap bytes; a longer one fails), its
 * length in *len and its flags in *flags (may be NULL); 0 on a miss. */
int mct_get(mct *c, const char *key, char *buf, size_t cap, size_t *len, uint32_t *flags);
/* 0 once stored (set: whatever was there is replaced). */
int mct_set(mct *c, const char *key, const void *val, size_t len, uint32_t flags,
	    int ttl_s);
/* 1 deleted, 0 not found. */
int mct_delete(mct *c, const char *key);
/* 0 once every item is gone (flush_all). */
int mct_flush_all(mct *c);

#endif
