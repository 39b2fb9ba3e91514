/* SPDX-License-Identifier: MIT */
/* redis.c - one Redis connection over hiredis (see redis.h). */
#define _GNU_SOURCE
#include "redis.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hr__redis {
	redisContext *c;
	char addr[HR_ADDR_MAX + 1];
	int timeout_ms;
	long long max_bulk;
};

static int fail(hr_error *err, int code, const char *fmt, ...) HR_PRINTF_LIKE(3, 4);

static int fail(hr_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;

		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* "host:port" or "[v6]:port" into its parts; 0, or -1. */
static int split_addr(const char *addr, char *host, size_t hsize, int *port)
{
	const char *p, *end;
	size_t hlen;
	char *stop;
	long v;

	if (addr[0] == '[') {
		end = strchr(addr, ']');
		if (!end || end[1] != ':')
			return -1;
		hlen = (size_t)(end - addr - 1);
		p = end + 2;
		addr++;
	} else {
		end = strrchr(addr, ':');
		if (!end)
			return -1;
		hlen = (size_t)(end - addr);
		p = end + 1;
	}
	if (!hlen || hlen >= hsize)
		return -1;
	memcpy(host, addr, hlen);
	host[hlen] = '\0';
	errno = 0;
	v = strtol(p, &stop, 10);
	if (errno || stop == p || *stop || v < 1 || v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

/*
 * hiredis writes with write(2): a server that closed the connection would
 * end the process by SIGPIPE, which a library must not do to its host.
 * The signal is blocked on this thread while it writes, and one raised
 * then is taken off the thread's pending set before it is unblocked.
 */
typedef struct pipe_guard {
	sigset_t old;
	int was_pending;
} pipe_guard;

static void guard_on(pipe_guard *g)
{
	sigset_t set, pending;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigpending(&pending);
	g->was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void guard_off(pipe_guard *g)
{
	sigset_t set, pending;

	sigpending(&pending);
	if (!g->was_pending && sigismember(&pending, SIGPIPE)) {
		struct timespec zero = { 0, 0 };

		sigemptyset(&set);
		sigaddset(&set, SIGPIPE);
		while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* The context's error as a code: a timeout, the server gone, or else. */
static int context_error(const hr__redis *r, const char *what, hr_error *err)
{
	const redisContext *c = r->c;

	if (c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == ETIMEDOUT))
		return fail(err, HR_ETIMEDOUT, "no answer from %s to %s within %d ms", r->addr, what,
			    r->timeout_ms);
	if (c->err == REDIS_ERR_EOF)
		return fail(err, HR_EIO, "%s closed the connection (%s)", r->addr, what);
	if (c->err == REDIS_ERR_OOM)
		return fail(err, HR_ENOMEM, "out of memory (reply of %s)", r->addr);
	return fail(err, HR_EIO, "%s: %s: %s", r->addr, what, c->errstr[0] ? c->errstr : "I/O error");
}

int hr__redis_is_error(const redisReply *reply, const char *code)
{
	size_t n = strlen(code);

	return reply && reply->type == REDIS_REPLY_ERROR && reply->len >= n &&
	       !memcmp(reply->str, code, n) && (reply->len == n || reply->str[n] == ' ');
}

int hr__redis_reply_error(const hr__redis *r, const char *what, const redisReply *reply,
			  hr_error *err)
{
	int len = reply && reply->type == REDIS_REPLY_ERROR ? (int)reply->len : 0;
	const char *s = len ? reply->str : "an unexpected reply";

	if (!len)
		len = (int)strlen(s);
	if (hr__redis_is_error(reply, "NOAUTH") || hr__redis_is_error(reply, "WRONGPASS"))
		return fail(err, HR_EAUTH, "%s refused %s: %.*s", r->addr, what, len > 160 ? 160 : len,
			    s);
	if (hr__redis_is_error(reply, "OOM"))
		return fail(err, HR_EIO, "%s is at its maxmemory, %s refused: %.*s", r->addr, what,
			    len > 120 ? 120 : len, s);
	return fail(err, HR_EIO, "%s refused %s: %.*s", r->addr, what, len > 160 ? 160 : len, s);
}

int hr__redis_pipeline(hr__redis *r, const hr__redis_cmd *cmds, size_t n, redisReply **replies,
		       hr_error *err)
{
	pipe_guard g;
	int rc = 0;
	size_t got = 0;

	for (size_t i = 0; i < n; i++)
		replies[i] = NULL;
	for (size_t i = 0; i < n; i++)
		if (redisAppendCommandArgv(r->c, cmds[i].argc, (const char **)cmds[i].argv,
					   cmds[i].argvlen) !=
		    REDIS_OK)
			return fail(err, HR_ENOMEM, "out of memory (a command to %s)", r->addr);
	guard_on(&g);
	for (; got < n; got++) {
		void *reply = NULL;

		if (redisGetReply(r->c, &reply) != REDIS_OK || !reply) {
			rc = context_error(r, cmds[got].argv[0], err);
			break;
		}
		replies[got] = reply;
	}
	guard_off(&g);
	if (rc) {
		for (size_t i = 0; i < got; i++) {
			freeReplyObject(replies[i]);
			replies[i] = NULL;
		}
	}
	return rc;
}

/* AUTH, SELECT and CONFIG GET proto-max-bulk-len, at once. */
static int handshake(hr__redis *r, const char *user, const char *password, int db,
		     hr_error *err)
{
	hr__redis_cmd cmds[3];
	redisReply *replies[3];
	char dbarg[16];
	size_t n = 0, auth = SIZE_MAX, sel = SIZE_MAX;
	int rc;

	if (password) {
		auth = n;
		cmds[n] = user ? (hr__redis_cmd){ 3, { "AUTH", user, password },
						  { 4, strlen(user), strlen(password) } } :
				 (hr__redis_cmd){ 2, { "AUTH", password }, { 4, strlen(password) } };
		n++;
	}
	if (db) {
		snprintf(dbarg, sizeof dbarg, "%d", db);
		sel = n;
		cmds[n++] = (hr__redis_cmd){ 2, { "SELECT", dbarg }, { 6, strlen(dbarg) } };
	}
	cmds[n++] = (hr__redis_cmd){ 3, { "CONFIG", "GET", "proto-max-bulk-len" },
				     { 6, 3, 18 } };
	rc = hr__redis_pipeline(r, cmds, n, replies, err);
	if (rc)
		return rc;
	if (auth != SIZE_MAX && replies[auth]->type == REDIS_REPLY_ERROR)
		rc = fail(err, HR_EAUTH, "%s refused AUTH%s%s: %.*s", r->addr, user ? " as " : "",
			  user ? user : "", (int)(replies[auth]->len > 120 ? 120 : replies[auth]->len),
			  replies[auth]->str);
	else if (sel != SIZE_MAX && replies[sel]->type == REDIS_REPLY_ERROR)
		rc = hr__redis_reply_error(r, "SELECT", replies[sel], err);
	else if (hr__redis_is_error(replies[n - 1], "NOAUTH"))
		rc = fail(err, HR_EAUTH, "%s requires a password (AUTH): %.*s", r->addr,
			  (int)(replies[n - 1]->len > 120 ? 120 : replies[n - 1]->len),
			  replies[n - 1]->str);
	/* CONFIG may be refused (ACLs, a renamed command): the default then. */
	if (rc == 0 && replies[n - 1]->type == REDIS_REPLY_ARRAY && replies[n - 1]->elements == 2 &&
	    replies[n - 1]->element[1]->type == REDIS_REPLY_STRING) {
		long long v = strtoll(replies[n - 1]->element[1]->str, NULL, 10);

		if (v > 0)
			r->max_bulk = v;
	}
	for (size_t i = 0; i < n; i++)
		freeReplyObject(replies[i]);
	return rc;
}

int hr__redis_connect(const char *addr, int timeout_ms, const char *user,
		      const char *password, int db, hr__redis **out, hr_error *err)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	char host[HR_ADDR_MAX + 1];
	hr__redis *r;
	int port, rc;

	*out = NULL;
	if (strlen(addr) > HR_ADDR_MAX || split_addr(addr, host, sizeof host, &port))
		return fail(err, HR_EINVAL, "bad Redis address '%.200s' (host:port)", addr);
	r = calloc(1, sizeof *r);
	if (!r)
		return fail(err, HR_ENOMEM, "out of memory (connection)");
	snprintf(r->addr, sizeof r->addr, "%s", addr);
	r->timeout_ms = timeout_ms;
	r->max_bulk = HR__REDIS_DEFAULT_MAX_BULK;
	r->c = redisConnectWithTimeout(host, port, tv);
	if (!r->c) {
		free(r);
		return fail(err, HR_ENOMEM, "out of memory (connection)");
	}
	if (r->c->err) {
		rc = fail(err, HR_ECONNECT, "cannot connect to %s: %s", addr, r->c->errstr);
		hr__redis_close(r);
		return rc;
	}
	if (redisSetTimeout(r->c, tv) != REDIS_OK) {
		rc = fail(err, HR_EIO, "%s: cannot set the timeout", addr);
		hr__redis_close(r);
		return rc;
	}
	rc = handshake(r, user, password, db, err);
	if (rc) {
		hr__redis_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

void hr__redis_close(hr__redis *r)
{
	if (!r)
		return;
	if (r->c)
		redisFree(r->c);
	free(r);
}

const char *hr__redis_addr(const hr__redis *r)
{
	return r->addr;
}

long long hr__redis_max_bulk(const hr__redis *r)
{
	return r->max_bulk;
}
