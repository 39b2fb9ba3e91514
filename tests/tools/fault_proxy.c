/* SPDX-License-Identifier: MIT */
/* fault_proxy.c - see fault_proxy.h.  One thread polls the listening socket
 * and every connection pair; the test's thread only posts commands, which
 * the proxy thread applies between two polls. */
#define _GNU_SOURCE
#include "fault_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 256
/* Stop reading a side while this much waits to be written to the other. */
#define BUF_HIGH (1u << 20)
#define READ_SIZE 16384
/* Reply headers kept to see whether the reply is chunked. */
#define HDR_KEEP 4096

typedef enum mode { M_PASS, M_CUT, M_STALL, M_TRICKLE, M_REFUSE } mode;

/* Where a watch reply's byte stream is, so that injected chunks land
 * between two of the server's chunks. */
typedef enum frame {
	F_HEADERS, F_SIZE, F_DATA, F_CRLF, F_RAW /* not chunked, or ended */
} frame;

typedef struct buf {
	char *d;
	size_t off, len, cap;   /* pending bytes are d[off..len) */
} buf;

typedef struct conn {
	int cfd, ufd;
	buf up, down;           /* client->server and server->client */
	int upstream_eof;
	int classified, is_watch;
	frame fr;
	char hdr[HDR_KEEP];
	size_t hdr_len;
	char size_line[40];
	size_t size_len;
	size_t chunk_left;
	char *inject;           /* chunk waiting for the next boundary */
	long long cut_budget;   /* reply bytes left before the cut; -1: none */
	int64_t due_up, due_down; /* trickle: next byte not before (ns) */
} conn;

struct hrt_proxy {
	int lfd, port, upstream;
	char url[64];
	int wake[2];
	pthread_t thread;
	conn *c[MAX_CONNS];
	size_t n;

	/* Commands: the test thread fills them under mu and bumps seq; the
	 * proxy thread applies them and sets done = seq. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned seq, done;
	int quit;
	mode want_mode;
	int want_upstream;
	size_t want_n;
	unsigned want_delay_us;
	long long once_n;       /* cut_once, -1 when none */
	char *want_inject;
	int inject_count;

	/* The thread's view of the mode. */
	mode m;
	size_t cut_n;
	unsigned delay_us;

	hrt_proxy_stats st;     /* updated with atomics */
};

#define STAT_ADD(p, field, v) __atomic_fetch_add(&(p)->st.field, (v), __ATOMIC_RELAXED)

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int buf_add(buf *b, const void *p, size_t n)
{
	if (b->off && b->off == b->len)
		b->off = b->len = 0;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *d;

		if (b->off) {
			memmove(b->d, b->d + b->off, b->len - b->off);
			b->len -= b->off;
			b->off = 0;
		}
		while (cap < b->len + n)
			cap *= 2;
		if (cap != b->cap) {
			d = realloc(b->d, cap);
			if (!d)
				return -1;
			b->d = d;
			b->cap = cap;
		}
	}
	memcpy(b->d + b->len, p, n);
	b->len += n;
	return 0;
}

static size_t buf_pending(const buf *b)
{
	return b->len - b->off;
}

static void conn_free(hrt_proxy *p, size_t i)
{
	conn *c = p->c[i];

	if (c->cfd >= 0)
		close(c->cfd);
	if (c->ufd >= 0)
		close(c->ufd);
	free(c->up.d);
	free(c->down.d);
	free(c->inject);
	free(c);
	p->c[i] = p->c[--p->n];
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* ---- watch reply framing ------------------------------------------------- */

static int at_boundary(const conn *c)
{
	return c->fr == F_SIZE && c->size_len == 0;
}

static void flush_inject(hrt_proxy *p, conn *c)
{
	char head[32];

	if (!c->inject || !at_boundary(c))
		return;
	snprintf(head, sizeof head, "%zx\r\n", strlen(c->inject));
	buf_add(&c->down, head, strlen(head));
	buf_add(&c->down, c->inject, strlen(c->inject));
	buf_add(&c->down, "\r\n", 2);
	free(c->inject);
	c->inject = NULL;
	STAT_ADD(p, injected, 1);
}

/* Queues server bytes for the client, following the chunked framing of a
 * watch reply so that injections go between chunks. */
static void down_add(hrt_proxy *p, conn *c, const char *s, size_t n)
{
	if (!c->is_watch || c->fr == F_RAW) {
		buf_add(&c->down, s, n);
		return;
	}
	while (n) {
		size_t take = 1;

		switch (c->fr) {
		case F_HEADERS:
			if (c->hdr_len < HDR_KEEP - 1)
				c->hdr[c->hdr_len++] = *s;
			c->hdr[c->hdr_len] = '\0';
			if (c->hdr_len >= 4 &&
			    !memcmp(c->hdr + c->hdr_len - 4, "\r\n\r\n", 4))
				c->fr = strcasestr(c->hdr, "transfer-encoding: chunked") ?
					F_SIZE : F_RAW;
			break;
		case F_SIZE:
			if (c->size_len < sizeof c->size_line - 1)
				c->size_line[c->size_len++] = *s;
			if (*s == '\n') {
				c->size_line[c->size_len] = '\0';
				c->chunk_left = strtoul(c->size_line, NULL, 16);
				c->size_len = 0;
				c->fr = c->chunk_left ? F_DATA : F_RAW;
			}
			break;
		case F_DATA:
			take = n < c->chunk_left ? n : c->chunk_left;
			c->chunk_left -= take;
			if (!c->chunk_left)
				c->fr = F_CRLF, c->chunk_left = 2;
			break;
		case F_CRLF:
			if (!--c->chunk_left)
				c->fr = F_SIZE;
			break;
		case F_RAW:
			take = n;
			break;
		}
		buf_add(&c->down, s, take);
		s += take;
		n -= take;
		flush_inject(p, c);
	}
}

static void classify(hrt_proxy *p, conn *c)
{
	size_t n = buf_pending(&c->up);
	const char *s = c->up.d + c->up.off;
	const char *nl = memchr(s, '\n', n);

	if (!nl && n < 1024)
		return;
	c->classified = 1;
	if (nl && n > 5 && !memcmp(s, "POST ", 5)) {
		const char *sp = memchr(s + 5, ' ', (size_t)(nl - s) - 5);
		if (sp && sp - s >= 11 && !memcmp(sp - 6, "/watch", 6))
			c->is_watch = 1;
	}
	if (c->is_watch)
		STAT_ADD(p, watch_streams, 1);
}

/* ---- the thread ---------------------------------------------------------- */

static void close_all(hrt_proxy *p)
{
	while (p->n)
		conn_free(p, p->n - 1);
}

static void apply_commands(hrt_proxy *p)
{
	pthread_mutex_lock(&p->mu);
	if (p->seq == p->done) {
		pthread_mutex_unlock(&p->mu);
		return;
	}
	/* Budgets change only with the mode: an injection or a move of
	 * the upstream leaves pending cuts alone. */
	if (p->want_mode == M_CUT && (p->m != M_CUT || p->cut_n != p->want_n))
		for (size_t i = 0; i < p->n; i++)
			p->c[i]->cut_budget = (long long)p->want_n;
	else if (p->want_mode != M_CUT && p->m == M_CUT)
		for (size_t i = 0; i < p->n; i++)
			p->c[i]->cut_budget = -1;
	p->m = p->want_mode;
	p->cut_n = p->want_n;
	p->delay_us = p->want_delay_us;
	p->upstream = p->want_upstream;
	if (p->m == M_REFUSE)
		close_all(p);
	if (p->once_n >= 0)
		for (size_t i = 0; i < p->n; i++)
			p->c[i]->cut_budget = p->once_n;
	p->once_n = -1;
	p->inject_count = 0;
	if (p->want_inject) {
		for (size_t i = 0; i < p->n; i++) {
			conn *c = p->c[i];
			char *t;
			if (!c->is_watch || c->fr == F_RAW || c->fr == F_HEADERS)
				continue;
			t = malloc((c->inject ? strlen(c->inject) : 0) +
				   strlen(p->want_inject) + 1);
			if (!t)
				continue;
			sprintf(t, "%s%s", c->inject ? c->inject : "", p->want_inject);
			free(c->inject);
			c->inject = t;
			flush_inject(p, c);
			p->inject_count++;
		}
		free(p->want_inject);
		p->want_inject = NULL;
	}
	p->done = p->seq;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static void accept_one(hrt_proxy *p)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int one = 1;
	int cfd = accept(p->lfd, NULL, NULL), ufd;
	conn *c;

	if (cfd < 0)
		return;
	STAT_ADD(p, accepted, 1);
	if (p->m == M_REFUSE || p->n == MAX_CONNS) {
		close(cfd);
		STAT_ADD(p, refused, 1);
		return;
	}
	a.sin_port = htons((uint16_t)p->upstream);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* A loopback connect completes or fails at once (a frozen etcd's
	 * kernel still accepts into its backlog). */
	if (ufd < 0 || connect(ufd, (struct sockaddr *)&a, sizeof a) < 0) {
		if (ufd >= 0)
			close(ufd);
		close(cfd);
		STAT_ADD(p, refused, 1);
		return;
	}
	c = calloc(1, sizeof *c);
	if (!c) {
		close(ufd);
		close(cfd);
		return;
	}
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	set_nonblock(cfd);
	set_nonblock(ufd);
	c->cfd = cfd;
	c->ufd = ufd;
	c->cut_budget = p->m == M_CUT ? (long long)p->cut_n : -1;
	p->c[p->n++] = c;
}

/* Reads what `fd` has into the right buffer; -1 when the peer closed. */
static int pull(hrt_proxy *p, conn *c, int from_client)
{
	char tmp[READ_SIZE];
	ssize_t r = read(from_client ? c->cfd : c->ufd, tmp, sizeof tmp);

	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	if (r < 0)
		return 0;
	if (from_client) {
		buf_add(&c->up, tmp, (size_t)r);
		if (!c->classified)
			classify(p, c);
	} else {
		down_add(p, c, tmp, (size_t)r);
	}
	return 0;
}

/* Writes up to `max` pending bytes; -1 on a dead socket, else 0. */
static int push(hrt_proxy *p, conn *c, int to_client, size_t max)
{
	buf *b = to_client ? &c->down : &c->up;
	size_t n = buf_pending(b);
	ssize_t w;

	if (n > max)
		n = max;
	if (to_client && c->cut_budget >= 0 && n > (size_t)c->cut_budget)
		n = (size_t)c->cut_budget;
	if (!n)
		return 0;
	w = send(to_client ? c->cfd : c->ufd, b->d + b->off, n, MSG_NOSIGNAL);
	if (w < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	b->off += (size_t)w;
	if (to_client) {
		STAT_ADD(p, bytes_down, (uint64_t)w);
		if (c->cut_budget >= 0)
			c->cut_budget -= w;
	} else {
		STAT_ADD(p, bytes_up, (uint64_t)w);
	}
	return 0;
}

/* One connection after a poll; returns -1 when it must be closed. */
static int service(hrt_proxy *p, conn *c, short crev, short urev, int64_t now)
{
	int trickle = p->m == M_TRICKLE;
	int64_t gap = (int64_t)p->delay_us * 1000;

	if (p->m == M_STALL)
		return (crev & (POLLRDHUP | POLLHUP | POLLERR)) ? -1 : 0;
	if ((crev & (POLLIN | POLLHUP | POLLERR | POLLRDHUP)) && pull(p, c, 1))
		return -1;
	if ((urev & (POLLIN | POLLHUP | POLLERR)) && !c->upstream_eof && pull(p, c, 0))
		c->upstream_eof = 1;
	if (!trickle || now >= c->due_up) {
		if (push(p, c, 0, trickle ? 1 : SIZE_MAX))
			return -1;
		c->due_up = now + gap;
	}
	if (!trickle || now >= c->due_down) {
		if (push(p, c, 1, trickle ? 1 : SIZE_MAX))
			return -1;
		c->due_down = now + gap;
	}
	if (c->cut_budget == 0) {
		STAT_ADD(p, cut, 1);
		return -1;
	}
	if (c->upstream_eof && !buf_pending(&c->down))
		return -1;
	return 0;
}

static void *proxy_main(void *arg)
{
	hrt_proxy *p = arg;
	struct pollfd fds[2 + 2 * MAX_CONNS];

	for (;;) {
		size_t n = p->n, nf = 2;
		struct timespec ts = { 0, 50 * 1000000L };
		int64_t now;

		pthread_mutex_lock(&p->mu);
		if (p->quit) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		pthread_mutex_unlock(&p->mu);
		apply_commands(p);
		n = p->n;
		fds[0] = (struct pollfd){ .fd = p->wake[0], .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = p->lfd, .events = POLLIN };
		for (size_t i = 0; i < n; i++) {
			conn *c = p->c[i];
			short ce = POLLRDHUP, ue = 0;

			if (p->m != M_STALL) {
				if (buf_pending(&c->up) < BUF_HIGH)
					ce |= POLLIN;
				if (buf_pending(&c->down) < BUF_HIGH && !c->upstream_eof)
					ue |= POLLIN;
				if (p->m != M_TRICKLE) {
					if (buf_pending(&c->down))
						ce |= POLLOUT;
					if (buf_pending(&c->up))
						ue |= POLLOUT;
				}
			}
			fds[nf++] = (struct pollfd){ .fd = c->cfd, .events = ce };
			/* A closed or ignored upstream would report POLLHUP
			 * forever: leave it out of the poll. */
			fds[nf++] = (struct pollfd){
				.fd = c->upstream_eof || p->m == M_STALL ? -1 : c->ufd,
				.events = ue };
		}
		if (p->m == M_TRICKLE)
			ts = (struct timespec){ 0, (long)p->delay_us * 1000L };
		if (ppoll(fds, nf, &ts, NULL) < 0 && errno != EINTR)
			break;
		if (fds[0].revents & POLLIN) {
			char drain[64];
			while (read(p->wake[0], drain, sizeof drain) > 0)
				;
		}
		now = now_ns();
		/* Walk backwards: conn_free() moves the last entry into i. */
		for (size_t i = n; i-- > 0;) {
			if (service(p, p->c[i], fds[2 + 2 * i].revents,
				    fds[3 + 2 * i].revents, now))
				conn_free(p, i);
		}
		if (fds[1].revents & POLLIN)
			accept_one(p);
	}
	close_all(p);
	return NULL;
}

/* ---- the test thread's side ------------------------------------------------ */

hrt_proxy *hrt_proxy_start(int upstream_port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof a;
	hrt_proxy *p = calloc(1, sizeof *p);
	sigset_t all, old;

	if (!p)
		return NULL;
	p->upstream = p->want_upstream = upstream_port;
	p->once_n = -1;
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) ||
	    listen(p->lfd, 64) || getsockname(p->lfd, (struct sockaddr *)&a, &alen) ||
	    pipe2(p->wake, O_CLOEXEC | O_NONBLOCK)) {
		fprintf(stderr, "hrt-proxy: cannot listen: %s\n", strerror(errno));
		if (p->lfd >= 0)
			close(p->lfd);
		free(p);
		return NULL;
	}
	set_nonblock(p->lfd);
	p->port = ntohs(a.sin_port);
	snprintf(p->url, sizeof p->url, "http://127.0.0.1:%d", p->port);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&p->thread, NULL, proxy_main, p)) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "hrt-proxy: cannot start its thread\n");
		close(p->lfd);
		close(p->wake[0]);
		close(p->wake[1]);
		free(p);
		return NULL;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return p;
}

static void wake(hrt_proxy *p)
{
	ssize_t r = write(p->wake[1], "x", 1);

	(void)r;
}

void hrt_proxy_stop(hrt_proxy *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_mutex_unlock(&p->mu);
	wake(p);
	pthread_join(p->thread, NULL);
	close(p->lfd);
	close(p->wake[0]);
	close(p->wake[1]);
	free(p->want_inject);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

const char *hrt_proxy_url(const hrt_proxy *p)
{
	return p->url;
}

int hrt_proxy_port(const hrt_proxy *p)
{
	return p->port;
}

/* Posts the command prepared under mu and waits until it is applied. */
static int post_locked(hrt_proxy *p)
{
	struct timespec ts;
	unsigned my;
	int rc = 0;

	my = ++p->seq;
	wake(p);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	while (p->done != my && rc == 0)
		rc = pthread_cond_timedwait(&p->cv, &p->mu, &ts);
	if (p->done != my) {
		fprintf(stderr, "hrt-proxy: command not applied in 5 s\n");
		return -1;
	}
	return 0;
}

static int set_mode(hrt_proxy *p, mode m, size_t n, unsigned delay_us)
{
	int rc;

	pthread_mutex_lock(&p->mu);
	p->want_mode = m;
	p->want_n = n;
	p->want_delay_us = delay_us ? delay_us : 1;
	rc = post_locked(p);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int hrt_proxy_set_upstream(hrt_proxy *p, int port)
{
	pthread_mutex_lock(&p->mu);
	p->want_upstream = port;
	p->want_mode = p->m;
	p->want_n = p->cut_n;
	p->want_delay_us = p->delay_us;
	int rc = post_locked(p);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int hrt_proxy_pass(hrt_proxy *p)
{
	return set_mode(p, M_PASS, 0, 0);
}

int hrt_proxy_cut(hrt_proxy *p, size_t n)
{
	return set_mode(p, M_CUT, n, 0);
}

int hrt_proxy_cut_once(hrt_proxy *p, size_t n)
{
	int rc;

	pthread_mutex_lock(&p->mu);
	p->want_mode = p->m;
	p->want_n = p->cut_n;
	p->want_delay_us = p->delay_us;
	p->once_n = (long long)n;
	rc = post_locked(p);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int hrt_proxy_stall(hrt_proxy *p)
{
	return set_mode(p, M_STALL, 0, 0);
}

int hrt_proxy_trickle(hrt_proxy *p, unsigned delay_us)
{
	return set_mode(p, M_TRICKLE, 0, delay_us);
}

int hrt_proxy_refuse(hrt_proxy *p)
{
	return set_mode(p, M_REFUSE, 0, 0);
}

int hrt_proxy_inject(hrt_proxy *p, const char *body)
{
	int rc;

	pthread_mutex_lock(&p->mu);
	p->want_mode = p->m;
	p->want_n = p->cut_n;
	p->want_delay_us = p->delay_us;
	p->want_inject = malloc(strlen(body) + 2);
	if (!p->want_inject) {
		pthread_mutex_unlock(&p->mu);
		return -1;
	}
	sprintf(p->want_inject, "%s\n", body);
	rc = post_locked(p);
	if (rc == 0)
		rc = p->inject_count;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

hrt_proxy_stats hrt_proxy_get_stats(hrt_proxy *p)
{
	hrt_proxy_stats s;

	s.accepted = __atomic_load_n(&p->st.accepted, __ATOMIC_RELAXED);
	s.refused = __atomic_load_n(&p->st.refused, __ATOMIC_RELAXED);
	s.cut = __atomic_load_n(&p->st.cut, __ATOMIC_RELAXED);
	s.injected = __atomic_load_n(&p->st.injected, __ATOMIC_RELAXED);
	s.bytes_down = __atomic_load_n(&p->st.bytes_down, __ATOMIC_RELAXED);
	s.bytes_up = __atomic_load_n(&p->st.bytes_up, __ATOMIC_RELAXED);
	s.watch_streams = __atomic_load_n(&p->st.watch_streams, __ATOMIC_RELAXED);
	return s;
}
