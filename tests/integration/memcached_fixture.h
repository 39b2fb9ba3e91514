/* SPDX-License-Identifier: MIT */
/*
 * memcached_fixture.h - Debian's memcached on loopback for the
 * integration tests: started on a free 127.0.0.1 port, TCP only, with
 * PR_SET_PDEATHSIG so that it dies with the test, and stopped by PID.
 * Functions that fail print why on stderr and return NULL or -1.
 */
#ifndef HRT_MEMCACHED_FIXTURE_H
#define HRT_MEMCACHED_FIXTURE_H

#include <sys/types.h>

/* The binary; override with HRT_MEMCACHED in the environment. */
#define HRT_MEMCACHED_BIN "/usr/bin/memcached"

typedef struct hrt_memcached hrt_memcached;

/* Starts one memcached with `megabytes` of memory (0: 64) and waits until
 * it answers `version` (at most 10 s; retried on a new port if the port
 * was taken meanwhile). */
hrt_memcached *hrt_memcached_start(unsigned megabytes);
/* SIGKILL by PID, then reaped.  Accepts NULL. */
void hrt_memcached_stop(hrt_memcached *m);
/* "127.0.0.1:PORT", as a node record's address. */
const char *hrt_memcached_addr(const hrt_memcached *m);
pid_t hrt_memcached_pid(const hrt_memcached *m);

/* Sets `key` (1..250 bytes, any bytes) to `value`, no flags, no expiry,
 * over memcached's binary protocol, which alone takes a key that is too
 * long for the text protocol once base64-encoded: 0, or -1 after a line
 * on stderr. */
int hrt_memcached_binary_set(const hrt_memcached *m, const void *key, size_t len,
			     const void *value, size_t vlen);

#endif
