/* SPDX-License-Identifier: MIT */
/* redis_fixture.c - redis-server processes for the tests (see the .h). */
#define _GNU_SOURCE
#include "redis_fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_EXTRA 24

struct hrt_redis {
	pid_t pid;
	int port;
	char addr[32];
	char dir[64];
	char *password;
	const char *extra[MAX_EXTRA + 1];
};

/* A port the kernel says is free now (it may be taken before the server
 * binds it: the start is then retried). */
static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

redisContext *hrt_redis_connect(const hrt_redis *r, int db)
{
	struct timeval tv = { 5, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
	redisReply *reply;

	if (!c || c->err) {
		if (c)
			redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	if (r->password) {
		reply = redisCommand(c, "AUTH %s", r->password);
		if (!reply || reply->type == REDIS_REPLY_ERROR) {
			freeReplyObject(reply);
			redisFree(c);
			return NULL;
		}
		freeReplyObject(reply);
	}
	if (db) {
		reply = redisCommand(c, "SELECT %d", db);
		if (!reply || reply->type == REDIS_REPLY_ERROR) {
			freeReplyObject(reply);
			redisFree(c);
			return NULL;
		}
		freeReplyObject(reply);
	}
	return c;
}

/* Whether the server answers PING (and is done loading its data). */
static int answers(const hrt_redis *r)
{
	redisContext *c = hrt_redis_connect(r, 0);
	redisReply *reply;
	int ok;

	if (!c)
		return 0;
	reply = redisCommand(c, "PING");
	ok = reply && reply->type == REDIS_REPLY_STATUS && !strcmp(reply->str, "PONG");
	freeReplyObject(reply);
	redisFree(c);
	return ok;
}

static pid_t spawn(const char *bin, const hrt_redis *r)
{
	const char *argv[MAX_EXTRA + 16];
	char portarg[16];
	pid_t parent = getpid(), pid;
	int n = 0;

	snprintf(portarg, sizeof portarg, "%d", r->port);
	pid = fork();
	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	argv[n++] = bin;
	argv[n++] = "--port";
	argv[n++] = portarg;
	argv[n++] = "--bind";
	argv[n++] = "127.0.0.1";
	argv[n++] = "--dir";
	argv[n++] = r->dir;
	argv[n++] = "--save";
	argv[n++] = "";
	argv[n++] = "--appendonly";
	argv[n++] = "no";
	argv[n++] = "--daemonize";
	argv[n++] = "no";
	argv[n++] = "--logfile";
	argv[n++] = "redis.log";
	for (int i = 0; r->extra[i]; i++)
		argv[n++] = r->extra[i];
	argv[n] = NULL;
	if (chdir(r->dir) != 0)
		_exit(127);
	execv(bin, (char *const *)argv);
	fprintf(stderr, "redis fixture: exec %s: %s\n", bin, strerror(errno));
	_exit(127);
}

/* Starts the server on r->port; 0, or -1 (exited: the port was taken). */
static int start_on_port(const char *bin, hrt_redis *r)
{
	int status;

	r->pid = spawn(bin, r);
	if (r->pid < 0)
		return -1;
	for (int i = 0; i < 1000; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (answers(r))
			return 0;
		if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
			r->pid = 0;
			return -1;
		}
		nanosleep(&ts, NULL);
	}
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	r->pid = 0;
	return -1;
}

static const char *bin_path(void)
{
	return getenv("HRT_REDIS") ? getenv("HRT_REDIS") : HRT_REDIS_BIN;
}

hrt_redis *hrt_redis_start(const char *password, const char *const *extra)
{
	const char *bin = bin_path();
	hrt_redis *r;
	int n = 0;

	if (access(bin, X_OK) != 0) {
		fprintf(stderr, "redis fixture: %s not found (apt-get install redis-server)\n", bin);
		return NULL;
	}
	r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	for (; extra && extra[n] && n < MAX_EXTRA; n++)
		r->extra[n] = extra[n];
	r->extra[n] = NULL;
	r->password = password ? strdup(password) : NULL;
	snprintf(r->dir, sizeof r->dir, "/tmp/hrt-redis-XXXXXX");
	if (!mkdtemp(r->dir)) {
		fprintf(stderr, "redis fixture: mkdtemp: %s\n", strerror(errno));
		free(r->password);
		free(r);
		return NULL;
	}
	for (int attempt = 0; attempt < 5; attempt++) {
		r->port = free_port();
		if (r->port < 0)
			continue;
		if (start_on_port(bin, r) == 0) {
			snprintf(r->addr, sizeof r->addr, "127.0.0.1:%d", r->port);
			return r;
		}
	}
	fprintf(stderr, "redis fixture: redis-server did not start (see %s/redis.log)\n", r->dir);
	free(r->password);
	free(r);
	return NULL;
}

int hrt_redis_restart(hrt_redis *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
	}
	r->pid = 0;
	if (start_on_port(bin_path(), r) == 0)
		return 0;
	fprintf(stderr, "redis fixture: redis-server did not restart on %s\n", r->addr);
	return -1;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void hrt_redis_stop(hrt_redis *r)
{
	if (!r)
		return;
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
	}
	nftw(r->dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
	free(r->password);
	free(r);
}

const char *hrt_redis_addr(const hrt_redis *r)
{
	return r->addr;
}

int hrt_redis_port(const hrt_redis *r)
{
	return r->port;
}

pid_t hrt_redis_pid(const hrt_redis *r)
{
	return r->pid;
}

redisReply *hrt_redis_cmd(redisContext *c, const char *fmt, ...)
{
	redisReply *reply;
	va_list ap;

	va_start(ap, fmt);
	reply = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (!reply || reply->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "redis fixture: '%s' failed: %s\n", fmt,
			reply ? reply->str : c->errstr);
		freeReplyObject(reply);
		return NULL;
	}
	return reply;
}

long long hrt_redis_dbsize(const hrt_redis *r, int db)
{
	redisContext *c = hrt_redis_connect(r, db);
	redisReply *reply = c ? hrt_redis_cmd(c, "DBSIZE") : NULL;
	long long n = reply && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;

	freeReplyObject(reply);
	if (c)
		redisFree(c);
	return n;
}
