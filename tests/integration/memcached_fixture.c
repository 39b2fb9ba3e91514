/* SPDX-License-Identifier: MIT */
/* memcached_fixture.c - memcached processes for the tests (see the .h). */
#define _GNU_SOURCE
#include "memcached_fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct hrt_memcached {
	pid_t pid;
	int port;
	char addr[32];
};

/* A port the kernel says is free now (it may be taken before memcached
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

/* Whether memcached answers "version" on the port. */
static int answers(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 1 };
	char buf[64];
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok = 0;
	ssize_t n;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    write(fd, "version\r\n", 9) == 9 && (n = read(fd, buf, sizeof buf - 1)) > 0) {
		buf[n] = '\0';
		ok = strncmp(buf, "VERSION ", 8) == 0;
	}
	close(fd);
	return ok;
}

static pid_t spawn(const char *bin, int port, unsigned mb)
{
	char portarg[16], mbarg[16];
	pid_t parent = getpid(), pid;

	snprintf(portarg, sizeof portarg, "%d", port);
	snprintf(mbarg, sizeof mbarg, "%u", mb);
	pid = fork();
	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	/* memcached refuses to run as root without -u. */
	if (geteuid() == 0)
		execl(bin, bin, "-u", "root", "-l", "127.0.0.1", "-p", portarg, "-U", "0",
		      "-m", mbarg, "-t", "1", (char *)NULL);
	else
		execl(bin, bin, "-l", "127.0.0.1", "-p", portarg, "-U", "0", "-m", mbarg,
		      "-t", "1", (char *)NULL);
	fprintf(stderr, "memcached fixture: exec %s: %s\n", bin, strerror(errno));
	_exit(127);
}

hrt_memcached *hrt_memcached_start(unsigned megabytes)
{
	const char *bin = getenv("HRT_MEMCACHED") ? getenv("HRT_MEMCACHED") : HRT_MEMCACHED_BIN;
	hrt_memcached *m;

	if (access(bin, X_OK) != 0) {
		fprintf(stderr, "memcached fixture: %s not found (apt-get install memcached)\n", bin);
		return NULL;
	}
	m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	for (int attempt = 0; attempt < 5; attempt++) {
		int status;

		m->port = free_port();
		if (m->port < 0)
			continue;
		m->pid = spawn(bin, m->port, megabytes ? megabytes : 64);
		if (m->pid < 0)
			break;
		for (int i = 0; i < 1000; i++) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			if (answers(m->port)) {
				snprintf(m->addr, sizeof m->addr, "127.0.0.1:%d", m->port);
				return m;
			}
			if (waitpid(m->pid, &status, WNOHANG) == m->pid) {
				m->pid = 0; /* exited: the port was taken; try another */
				break;
			}
			nanosleep(&ts, NULL);
		}
		if (m->pid > 0) {
			kill(m->pid, SIGKILL);
			waitpid(m->pid, NULL, 0);
		}
	}
	fprintf(stderr, "memcached fixture: memcached did not start\n");
	free(m);
	return NULL;
}

void hrt_memcached_stop(hrt_memcached *m)
{
	if (!m)
		return;
	kill(m->pid, SIGKILL);
	waitpid(m->pid, NULL, 0);
	free(m);
}

const char *hrt_memcached_addr(const hrt_memcached *m)
{
	return m->addr;
}

pid_t hrt_memcached_pid(const hrt_memcached *m)
{
	return m->pid;
}

/* Reads exactly n bytes; 0, or -1. */
static int read_all(int fd, void *buf, size_t n)
{
	for (size_t at = 0; at < n;) {
		ssize_t r = read(fd, (char *)buf + at, n - at);

		if (r <= 0)
			return -1;
		at += (size_t)r;
	}
	return 0;
}

int hrt_memcached_binary_set(const hrt_memcached *m, const void *key, size_t len,
			     const void *value, size_t vlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)m->port) };
	struct timeval tv = { .tv_sec = 5 };
	/* The request header (memcached's binary protocol, big-endian): magic,
	 * opcode SET, key length, extras length (flags and expiry), data
	 * type, vbucket, body length, opaque, CAS; then the extras (all 0),
	 * the key, the value. */
	unsigned char head[24 + 8] = { 0x80, 0x01, (unsigned char)(len >> 8), (unsigned char)len,
				       8 };
	uint32_t body = htonl((uint32_t)(8 + len + vlen));
	unsigned char answer[24];
	int fd = socket(AF_INET, SOCK_STREAM, 0), rc = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(head + 8, &body, 4);
	if (fd < 0 || len > 250)
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    write(fd, head, sizeof head) != (ssize_t)sizeof head ||
	    write(fd, key, len) != (ssize_t)len || write(fd, value, vlen) != (ssize_t)vlen ||
	    read_all(fd, answer, sizeof answer) != 0)
		goto out;
	/* The answer's status (bytes 6-7) is 0 on success. */
	if (answer[0] == 0x81 && answer[6] == 0 && answer[7] == 0)
		rc = 0;
out:
	if (rc)
		fprintf(stderr, "memcached fixture: a binary set on %s failed\n", m->addr);
	if (fd >= 0)
		close(fd);
	return rc;
}
