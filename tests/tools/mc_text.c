/* SPDX-License-Identifier: MIT */
/* mc_text.c - see mc_text.h.  Replies are read through a buffer of the
 * connection's own; a reply that is not what the protocol allows fails
 * the call rather than being guessed at. */
#define _GNU_SOURCE
#include "mc_text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define MCT_KEY_MAX 250

struct mct {
	int fd;
	int timeout_ms;
	char rbuf[16384];
	size_t rpos, rlen;
	char err[256];
};

static int fail(mct *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	return -1;
}

static int wait_fd(mct *c, short events)
{
	struct pollfd p = { .fd = c->fd, .events = events };
	int rc;

	do
		rc = poll(&p, 1, c->timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc == 0)
		return fail(c, "timed out after %d ms", c->timeout_ms);
	return rc < 0 ? fail(c, "poll: %s", strerror(errno)) : 0;
}

static int send_all(mct *c, const struct iovec *iov, int n)
{
	struct iovec v[4];
	struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)n };

	memcpy(v, iov, sizeof *v * (size_t)n);
	while (m.msg_iovlen) {
		ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL);

		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (errno == EAGAIN && wait_fd(c, POLLOUT))
				return -1;
			continue;
		}
		if (w < 0)
			return fail(c, "send: %s", strerror(errno));
		while (m.msg_iovlen && (size_t)w >= m.msg_iov->iov_len) {
			w -= (ssize_t)m.msg_iov->iov_len;
			m.msg_iov++;
			m.msg_iovlen--;
		}
		if (m.msg_iovlen) {
			m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + w;
			m.msg_iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int fill_buf(mct *c)
{
	ssize_t r;

	if (c->rpos == c->rlen)
		c->rpos = c->rlen = 0;
	if (c->rlen == sizeof c->rbuf) {
		if (!c->rpos)
			return fail(c, "reply line longer than %zu bytes", sizeof c->rbuf);
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	for (;;) {
		if (wait_fd(c, POLLIN))
			return -1;
		r = recv(c->fd, c->rbuf + c->rlen, sizeof c->rbuf - c->rlen, 0);
		if (r > 0) {
			c->rlen += (size_t)r;
			return 0;
		}
		if (r == 0)
			return fail(c, "connection closed by the server");
		if (errno != EAGAIN && errno != EINTR)
			return fail(c, "recv: %s", strerror(errno));
	}
}

/* The next reply line, without its "\r\n", NUL-terminated in the buffer. */
static char *read_line(mct *c)
{
	for (;;) {
		char *start = c->rbuf + c->rpos;
		char *nl = memchr(start, '\n', c->rlen - c->rpos);

		if (nl) {
			c->rpos = (size_t)(nl - c->rbuf) + 1;
			if (nl > start && nl[-1] == '\r')
				nl--;
			*nl = '\0';
			return start;
		}
		if (fill_buf(c))
			return NULL;
	}
}

/* Exactly n bytes into out (NULL: dropped). */
static int read_bytes(mct *c, char *out, size_t n)
{
	while (n) {
		size_t have = c->rlen - c->rpos, take = have < n ? have : n;

		if (!have) {
			if (fill_buf(c))
				return -1;
			continue;
		}
		if (out) {
			memcpy(out, c->rbuf + c->rpos, take);
			out += take;
		}
		c->rpos += take;
		n -= take;
	}
	return 0;
}

static int check_key(mct *c, const char *key)
{
	size_t n = strlen(key);

	if (!n || n > MCT_KEY_MAX)
		return fail(c, "key of %zu bytes (1..%d)", n, MCT_KEY_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)key[i] <= ' ' || (unsigned char)key[i] == 0x7f)
			return fail(c, "key '%s' holds a blank or a control byte", key);
	return 0;
}

mct *mct_connect(const char *addr, int timeout_ms, char *errbuf, size_t errlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(addr, ':');
	char *end;
	long port;
	mct *c;
	int one = 1;

	if (!colon || (size_t)(colon - addr) >= sizeof host) {
		snprintf(errbuf, errlen, "address '%s' is not host:port", addr);
		return NULL;
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		snprintf(errbuf, errlen, "address '%s' is not IPv4:port", addr);
		return NULL;
	}
	sa.sin_port = htons((uint16_t)port);
	c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	c->timeout_ms = timeout_ms;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0 ||
	    (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS)) {
		snprintf(errbuf, errlen, "connect %s: %s", addr, strerror(errno));
		mct_close(c);
		return NULL;
	}
	if (wait_fd(c, POLLOUT) == 0) {
		int soerr = 0;
		socklen_t sl = sizeof soerr;

		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr)
			fail(c, "%s", strerror(soerr));
		else
			c->err[0] = '\0';
	}
	if (c->err[0]) {
		snprintf(errbuf, errlen, "connect %s: %s", addr, c->err);
		mct_close(c);
		return NULL;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return c;
}

void mct_close(mct *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

const char *mct_error(const mct *c)
{
	return c->err;
}

int mct_get(mct *c, const char *key, char *buf, size_t cap, size_t *len, uint32_t *flags)
{
	char cmd[MCT_KEY_MAX + 8];
	struct iovec v;
	char *line;
	unsigned long fl;
	size_t n;

	if (check_key(c, key))
		return -1;
	v.iov_base = cmd;
	v.iov_len = (size_t)snprintf(cmd, sizeof cmd, "get %s\r\n", key);
	if (send_all(c, &v, 1) || !(line = read_line(c)))
		return -1;
	if (!strcmp(line, "END"))
		return 0;
	if (strncmp(line, "VALUE ", 6) || strncmp(line + 6, key, strlen(key)) ||
	    line[6 + strlen(key)] != ' ' ||
	    sscanf(line + 6 + strlen(key), " %lu %zu", &fl, &n) != 2)
		return fail(c, "get %s: unexpected reply '%.80s'", key, line);
	if (n > cap)
		return fail(c, "get %s: value of %zu bytes, more than %zu", key, n, cap);
	if (read_bytes(c, buf, n) || read_bytes(c, NULL, 2) || !(line = read_line(c)))
		return -1;
	if (strcmp(line, "END"))
		return fail(c, "get %s: '%.80s' after the value, not END", key, line);
	*len = n;
	if (flags)
		*flags = (uint32_t)fl;
	return 1;
}

int mct_set(mct *c, const char *key, const void *val, size_t len, uint32_t flags, int ttl_s)
{
	char cmd[MCT_KEY_MAX + 64];
	struct iovec v[3];
	char *line;

	if (check_key(c, key))
		return -1;
	v[0].iov_base = cmd;
	v[0].iov_len = (size_t)snprintf(cmd, sizeof cmd, "set %s %u %d %zu\r\n", key, flags,
					ttl_s, len);
	v[1].iov_base = (void *)val;
	v[1].iov_len = len;
	v[2].iov_base = "\r\n";
	v[2].iov_len = 2;
	if (send_all(c, v, 3) || !(line = read_line(c)))
		return -1;
	return strcmp(line, "STORED") ? fail(c, "set %s: %.80s", key, line) : 0;
}

int mct_delete(mct *c, const char *key)
{
	char cmd[MCT_KEY_MAX + 16];
	struct iovec v;
	char *line;

	if (check_key(c, key))
		return -1;
	v.iov_base = cmd;
	v.iov_len = (size_t)snprintf(cmd, sizeof cmd, "delete %s\r\n", key);
	if (send_all(c, &v, 1) || !(line = read_line(c)))
		return -1;
	if (!strcmp(line, "DELETED"))
		return 1;
	return strcmp(line, "NOT_FOUND") ? fail(c, "delete %s: %.80s", key, line) : 0;
}

int mct_flush_all(mct *c)
{
	struct iovec v = { .iov_base = "flush_all\r\n", .iov_len = 11 };
	char *line;

	if (send_all(c, &v, 1) || !(line = read_line(c)))
		return -1;
	return strcmp(line, "OK") ? fail(c, "flush_all: %.80s", line) : 0;
}
