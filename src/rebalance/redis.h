/* SPDX-License-Identifier: MIT */
/*
 * redis.h - one connection to a Redis server over hiredis (the client
 * library Debian ships), for the Redis backend: connect with AUTH and
 * SELECT, pipelined commands, errors as HR_E* codes with the server's
 * words.  Calls block, each read and write bounded by the connection's
 * timeout.  A call that returns a negative code leaves the connection
 * unusable (close it); an error reply is a reply, for the caller to read.
 * A connection is used by one thread at a time.  The password is never
 * put in a message.
 */
#ifndef HR_REBALANCE_REDIS_H
#define HR_REBALANCE_REDIS_H

#include "hashring/common.h"
#include "hashring/ring.h"

#include <hiredis/hiredis.h>
#include <stddef.h>

typedef struct hr__redis hr__redis;

/* What proto-max-bulk-len is when CONFIG GET is refused: Redis's default. */
#define HR__REDIS_DEFAULT_MAX_BULK (512ll * 1024 * 1024)

/* Connects to `addr` ("host:port", "[v6]:port") within `timeout_ms`, then
 * AUTH (`password` non-NULL; with `user` if non-NULL) and SELECT `db` (if
 * not 0), and reads the server's proto-max-bulk-len.  HR_ECONNECT (no
 * connection), HR_EAUTH (NOAUTH, WRONGPASS), HR_ETIMEDOUT, HR_EIO (another
 * error reply, or the connection lost), HR_EINVAL (a bad address),
 * HR_ENOMEM. */
int hr__redis_connect(const char *addr, int timeout_ms, const char *user,
		      const char *password, int db, hr__redis **out, hr_error *err);
/* Closes the connection.  Accepts NULL. */
void hr__redis_close(hr__redis *r);
/* The address given to hr__redis_connect(). */
const char *hr__redis_addr(const hr__redis *r);
/* The server's proto-max-bulk-len: the longest argument it takes. */
long long hr__redis_max_bulk(const hr__redis *r);

/* One command of a pipeline: its arguments, binary safe. */
typedef struct hr__redis_cmd {
	int argc;
	const char *argv[6];
	size_t argvlen[6];
} hr__redis_cmd;

/* Sends the `n` commands at once and reads their `n` replies into
 * replies[] (free each with freeReplyObject(); all NULL on failure).
 * HR_ETIMEDOUT, HR_EIO (the connection lost or broken), HR_ENOMEM.
 * SIGPIPE is kept off the process while it writes. */
int hr__redis_pipeline(hr__redis *r, const hr__redis_cmd *cmds, size_t n,
		       redisReply **replies, hr_error *err);

/* Whether `reply` is an error reply starting with `code` ("BUSYKEY"). */
int hr__redis_is_error(const redisReply *reply, const char *code);

/* An error reply of the server as an HR_E* code with its words:
 * HR_EAUTH for NOAUTH and WRONGPASS, HR_EIO otherwise ("OOM ..." says the
 * server is at its maxmemory). */
int hr__redis_reply_error(const hr__redis *r, const char *what, const redisReply *reply,
			  hr_error *err);

#endif
