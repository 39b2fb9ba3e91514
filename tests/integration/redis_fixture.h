/* SPDX-License-Identifier: MIT */
/*
 * redis_fixture.h - Debian's redis-server on loopback for the integration
 * tests: started on a free 127.0.0.1 port in a temporary directory of its
 * own, with nothing saved unless asked (--save '' --appendonly no), with
 * PR_SET_PDEATHSIG so that it dies with the test (with the thread that
 * started it: start and restart servers from the main thread), and
 * stopped by PID.
 * Functions that fail print why on stderr and return NULL or -1.
 */
#ifndef HRT_REDIS_FIXTURE_H
#define HRT_REDIS_FIXTURE_H

#include <hiredis/hiredis.h>
#include <sys/types.h>

/* The binary; override with HRT_REDIS in the environment. */
#define HRT_REDIS_BIN "/usr/bin/redis-server"

typedef struct hrt_redis hrt_redis;

/* Starts one redis-server with the NULL-terminated `extra` arguments
 * ("--maxmemory", "2mb", ...; NULL: none) and waits until it answers PING
 * (at most 10 s; retried on a new port if the port was taken meanwhile).
 * `password` is what the fixture's own connections AUTH with (NULL:
 * none); it does not set one (pass --requirepass in `extra`). */
hrt_redis *hrt_redis_start(const char *password, const char *const *extra);
/* SIGKILL by PID, reaped, its directory removed.  Accepts NULL. */
void hrt_redis_stop(hrt_redis *r);
/* SIGKILL, then the same server again on its port and directory (which
 * holds what SAVE wrote: it loads it).  0, or -1. */
int hrt_redis_restart(hrt_redis *r);
/* "127.0.0.1:PORT", as a node record's address. */
const char *hrt_redis_addr(const hrt_redis *r);
int hrt_redis_port(const hrt_redis *r);
pid_t hrt_redis_pid(const hrt_redis *r);

/* A new connection (AUTH as started, SELECT `db`), or NULL. */
redisContext *hrt_redis_connect(const hrt_redis *r, int db);

/* A command on `c` that must succeed (not an error reply): its reply, to
 * free with freeReplyObject(); NULL after a line on stderr. */
redisReply *hrt_redis_cmd(redisContext *c, const char *fmt, ...);

/* The keys of database `db` (DBSIZE), or -1. */
long long hrt_redis_dbsize(const hrt_redis *r, int db);

#endif
