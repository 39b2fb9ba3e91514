/* SPDX-License-Identifier: MIT */
/* memcache.c - one memcached connection: metadump and meta commands
 * (see memcache.h). */
#define _GNU_SOURCE
#include "memcache.h"


#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* The value of hex digit `c`, or -1. */
static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Fills `err` (may be NULL) with `code` and the message, cut to one line
 * whatever a server answered; returns `code`. */
__attribute__((format(printf, 3, 4)))
static int mc_fail(hr_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	/* One line, whatever a server answered. */
	for (char *p = err->message; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
			*p = '?';
	return code;
}

/* The longest line read (a metadump line is under 400 bytes) and the
 * largest value (memcached's item size limit is at most 1 GiB). */
#define LINE_MAX_BYTES 65536
#define VALUE_MAX_BYTES (1024u * 1024u * 1024u)
/* memcached reads a TTL above 30 days as a Unix time. */
#define RELATIVE_TTL_MAX 2592000

struct hr__mc {
	int fd;
	int timeout_ms;
	char addr[HR_ADDR_MAX + 1];
	char *buf;
	size_t start, end, cap;
};

void hr__mc_value_free(hr__mc_value *v)
{
	if (!v)
		return;
	free(v->data);
	v->data = NULL;
	v->len = v->cap = 0;
}

const char *hr__mc_addr(const hr__mc *mc)
{
	return mc->addr;
}

void hr__mc_close(hr__mc *mc)
{
	if (!mc)
		return;
	if (mc->fd >= 0)
		close(mc->fd);
	free(mc->buf);
	free(mc);
}

/* ---- connecting ------------------------------------------------------------ */

/* Splits "host:port" or "[v6]:port" into its two parts. */
static int split_addr(const char *addr, char *host, size_t hsize, const char **port)
{
	const char *colon;
	size_t hlen;

	if (addr[0] == '[') {
		const char *close_br = strchr(addr, ']');

		if (!close_br || close_br[1] != ':')
			return -1;
		hlen = (size_t)(close_br - addr - 1);
		if (hlen >= hsize)
			return -1;
		memcpy(host, addr + 1, hlen);
		*port = close_br + 2;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -1;
		hlen = (size_t)(colon - addr);
		if (hlen >= hsize)
			return -1;
		memcpy(host, addr, hlen);
		*port = colon + 1;
	}
	host[hlen] = '\0';
	return host[0] && (*port)[0] ? 0 : -1;
}

static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	return n;
}

static int connect_one(const struct addrinfo *ai, int timeout_ms)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			ai->ai_protocol);
	int one = 1, soerr = 0;
	socklen_t slen = sizeof soerr;

	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS || wait_fd(fd, POLLOUT, timeout_ms) <= 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) < 0 || soerr) {
			close(fd);
			return -1;
		}
	}
	/* One command, one answer: no waiting for a fuller packet. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

int hr__mc_connect(const char *addr, int timeout_ms, hr__mc **out, hr_error *err)
{
	char host[HR_ADDR_MAX + 1];
	const char *port;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	hr__mc *mc;
	int rc, fd = -1;

	if (!out || !addr || timeout_ms <= 0)
		return mc_fail(err, HR_EINVAL, "memcached: no address, output or timeout");
	*out = NULL;
	if (strlen(addr) > HR_ADDR_MAX || split_addr(addr, host, sizeof host, &port) < 0)
		return mc_fail(err, HR_EINVAL,
			       "memcached %.200s: not host:port or [address]:port", addr);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return mc_fail(err, HR_ECONNECT, "memcached %s: %s", addr, gai_strerror(rc));
	for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
		fd = connect_one(ai, timeout_ms);
	freeaddrinfo(res);
	if (fd < 0)
		return mc_fail(err, HR_ECONNECT, "memcached %s: cannot connect", addr);
	mc = calloc(1, sizeof *mc);
	if (!mc || !(mc->buf = malloc(4096))) {
		free(mc);
		close(fd);
		return mc_fail(err, HR_ENOMEM, "memcached %s: out of memory", addr);
	}
	mc->fd = fd;
	mc->cap = 4096;
	mc->timeout_ms = timeout_ms;
	snprintf(mc->addr, sizeof mc->addr, "%s", addr);
	*out = mc;
	return 0;
}

/* ---- bytes in and out -------------------------------------------------------- */

static int io_fail(hr__mc *mc, hr_error *err, const char *what)
{
	if (errno == ETIMEDOUT)
		return mc_fail(err, HR_ETIMEDOUT, "memcached %s: no answer to %s within %d ms",
			       mc->addr, what, mc->timeout_ms);
	if (errno == 0)
		return mc_fail(err, HR_EIO, "memcached %s: connection closed during %s",
			       mc->addr, what);
	return mc_fail(err, HR_EIO, "memcached %s: %s: %s", mc->addr, what, strerror(errno));
}

/* After a send or recv that failed with errno: 0 to try again (an
 * interrupted call, or the socket ready within the timeout), else the
 * error. */
static int await(hr__mc *mc, short events, const char *what, hr_error *err)
{
	int p;

	if (errno == EINTR)
		return 0;
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		return io_fail(mc, err, what);
	p = wait_fd(mc->fd, events, mc->timeout_ms);
	if (p <= 0) {
		errno = p == 0 ? ETIMEDOUT : errno;
		return io_fail(mc, err, what);
	}
	return 0;
}

/* Sends every byte of iov[0..n), which it consumes. */
static int send_iov(hr__mc *mc, struct iovec *iov, int n, const char *what, hr_error *err)
{
	while (n > 0) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(mc->fd, &m, MSG_NOSIGNAL);

		if (w < 0) {
			int rc = await(mc, POLLOUT, what, err);

			if (rc)
				return rc;
			continue;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Reads more bytes into the buffer, making room for at least `want`. */
static int fill(hr__mc *mc, size_t want, const char *what, hr_error *err)
{
	ssize_t r;

	if (mc->start > 0) {
		memmove(mc->buf, mc->buf + mc->start, mc->end - mc->start);
		mc->end -= mc->start;
		mc->start = 0;
	}
	if (mc->cap - mc->end < want) {
		size_t cap = mc->cap;
		char *nb;

		while (cap - mc->end < want)
			cap *= 2;
		nb = realloc(mc->buf, cap);
		if (!nb)
			return mc_fail(err, HR_ENOMEM, "memcached %s: out of memory", mc->addr);
		mc->buf = nb;
		mc->cap = cap;
	}
	for (;;) {
		int rc;

		r = recv(mc->fd, mc->buf + mc->end, mc->cap - mc->end, 0);
		if (r > 0) {
			mc->end += (size_t)r;
			return 0;
		}
		if (r == 0) {
			errno = 0;
			return io_fail(mc, err, what);
		}
		rc = await(mc, POLLIN, what, err);
		if (rc)
			return rc;
	}
}

/* The next line, without its "\r\n" or "\n", NUL-terminated in the
 * buffer; valid until the next read.  Both outputs are set on every path:
 * GCC's -Wmaybe-uninitialized cannot see that callers read them only
 * after a success. */
static int read_line(hr__mc *mc, char **line, size_t *len, const char *what, hr_error *err)
{
	size_t scanned = 0;

	*line = NULL;
	*len = 0;
	for (;;) {
		char *nl = memchr(mc->buf + mc->start + scanned, '\n',
				  mc->end - mc->start - scanned);
		int rc;

		if (nl) {
			size_t l = (size_t)(nl - (mc->buf + mc->start));

			*line = mc->buf + mc->start;
			mc->start += l + 1;
			if (l > 0 && (*line)[l - 1] == '\r')
				l--;
			(*line)[l] = '\0';
			*len = l;
			return 0;
		}
		scanned = mc->end - mc->start;
		if (scanned > LINE_MAX_BYTES)
			return mc_fail(err, HR_EIO, "memcached %s: a line over %d bytes during %s",
				       mc->addr, LINE_MAX_BYTES, what);
		rc = fill(mc, 4096, what, err);
		if (rc)
			return rc;
	}
}

/* Reads a value of `n` bytes and its "\r\n" into v->data. */
static int read_value(hr__mc *mc, size_t n, hr__mc_value *v, const char *what, hr_error *err)
{
	int rc;

	if (n > VALUE_MAX_BYTES)
		return mc_fail(err, HR_EIO, "memcached %s: a value of %zu bytes during %s",
			       mc->addr, n, what);
	if (v->cap < n + 1) {
		char *d = realloc(v->data, n + 1);

		if (!d)
			return mc_fail(err, HR_ENOMEM, "memcached %s: out of memory", mc->addr);
		v->data = d;
		v->cap = n + 1;
	}
	while (mc->end - mc->start < n + 2)
		if ((rc = fill(mc, n + 2 - (mc->end - mc->start), what, err)))
			return rc;
	if (memcmp(mc->buf + mc->start + n, "\r\n", 2))
		return mc_fail(err, HR_EIO, "memcached %s: a value not ended by CRLF during %s",
			       mc->addr, what);
	memcpy(v->data, mc->buf + mc->start, n);
	v->data[n] = '\0';
	v->len = n;
	mc->start += n + 2;
	return 0;
}

/* ---- keys ---------------------------------------------------------------------- */

/* The length of n bytes in base64. */
#define B64_LEN(n) (((n) + 2) / 3 * 4)

/* The key as a command token: itself, or base64 (then *b64 = 1). */
typedef struct key_token {
	char text[HR__MC_KEY_MAX + 1];
	size_t len;
	int b64;
} key_token;

static int key_token_make(hr__mc *mc, const void *key, size_t len, key_token *t,
			  hr_error *err)
{
	const unsigned char *k = key;

	if (!key || len == 0 || len > HR__MC_KEY_MAX)
		return mc_fail(err, HR_EINVAL, "memcached %s: a key of %zu bytes (1..%d)",
			       mc->addr, len, HR__MC_KEY_MAX);
	t->b64 = 0;
	for (size_t i = 0; i < len; i++)
		if (k[i] <= 0x20 || k[i] == 0x7f)
			t->b64 = 1;
	if (t->b64) {
		/* memcached limits the token, not the key it decodes to: such
		 * a key of over 186 bytes has no way through this protocol. */
		if (B64_LEN(len) > HR__MC_KEY_MAX)
			return mc_fail(err, HR_ELIMIT,
				       "memcached %s: a key of %zu bytes with a blank or control"
				       " byte: its base64 form (%zu characters) is over the"
				       " protocol's %d", mc->addr, len, B64_LEN(len),
				       HR__MC_KEY_MAX);
		t->len = (size_t)EVP_EncodeBlock((unsigned char *)t->text, k, (int)len);
	} else {
		memcpy(t->text, k, len);
		t->len = len;
	}
	t->text[t->len] = '\0';
	return 0;
}

/* An answer the command does not expect: the server's own words. */
static int unexpected(hr__mc *mc, const char *what, const char *line, hr_error *err)
{
	return mc_fail(err, HR_EIO, "memcached %s: %s answered \"%.120s\"", mc->addr, what, line);
}

/* The number after a one-letter flag token of a meta answer ("f12"). */
static int meta_flag(const char *line, char flag, int64_t *out)
{
	for (const char *p = strchr(line, ' '); p; p = strchr(p + 1, ' ')) {
		if (p[1] == flag) {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(p + 2, &end, 10);
			if (errno || end == p + 2 || (*end != ' ' && *end != '\0'))
				return -1;
			*out = v;
			return 1;
		}
	}
	return 0;
}

/* ---- metadump ------------------------------------------------------------------- */

static int parse_number(const char *s, size_t len, int64_t *out)
{
	char tmp[32], *end;
	long long v;

	if (len == 0 || len >= sizeof tmp)
		return -1;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	errno = 0;
	v = strtoll(tmp, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int hr__mc_parse_dump_line(const char *line, size_t len, hr__mc_item *out, hr_error *err)
{
	const char *p = line, *end = line + len;
	int have_key = 0;

	out->key_len = 0;
	out->exp = -1;
	out->cas = 0;
	out->size = 0;
	while (p < end) {
		const char *tok = p, *tend = memchr(p, ' ', (size_t)(end - p)), *eq;
		int64_t v;

		if (!tend)
			tend = end;
		p = tend + 1;
		eq = memchr(tok, '=', (size_t)(tend - tok));
		if (!eq)
			continue;
		if (eq - tok == 3 && !memcmp(tok, "key", 3)) {
			for (const char *c = eq + 1; c < tend; c++) {
				int hi, lo;

				if (out->key_len == HR__MC_KEY_MAX)
					return mc_fail(err, HR_EPARSE,
						       "metadump: a key over %d bytes", HR__MC_KEY_MAX);
				if (*c != '%') {
					out->key[out->key_len++] = *c;
					continue;
				}
				if (tend - c < 3 || (hi = hex_digit(c[1])) < 0 ||
				    (lo = hex_digit(c[2])) < 0)
					return mc_fail(err, HR_EPARSE,
						       "metadump: a bad %%XX escape in \"%.*s\"",
						       (int)(tend - tok > 80 ? 80 : tend - tok), tok);
				out->key[out->key_len++] = (char)(hi << 4 | lo);
				c += 2;
			}
			have_key = out->key_len > 0;
			continue;
		}
		if ((eq - tok == 3 && !memcmp(tok, "exp", 3)) ||
		    (eq - tok == 3 && !memcmp(tok, "cas", 3)) ||
		    (eq - tok == 4 && !memcmp(tok, "size", 4))) {
			if (parse_number(eq + 1, (size_t)(tend - eq - 1), &v) < 0 ||
			    (tok[0] != 'e' && v < 0))
				return mc_fail(err, HR_EPARSE, "metadump: \"%.*s\" is not a number",
					       (int)(tend - tok > 80 ? 80 : tend - tok), tok);
			if (tok[0] == 'e')
				out->exp = v;
			else if (tok[0] == 'c')
				out->cas = (uint64_t)v;
			else
				out->size = (uint64_t)v;
		}
	}
	if (!have_key)
		return mc_fail(err, HR_EPARSE, "metadump: a line without a key: \"%.80s\"", line);
	return 0;
}

int hr__mc_metadump(hr__mc *mc, hr__mc_walk walk,
		   int (*fn)(void *userdata, const hr__mc_item *item), void *userdata,
		   hr_error *err)
{
	const char *cmd = walk == HR__MC_WALK_HASH ? "lru_crawler metadump hash\r\n" :
						     "lru_crawler metadump all\r\n";
	struct iovec iov = { (void *)(uintptr_t)cmd, strlen(cmd) };
	hr__mc_item item;
	int rc;

	if ((rc = send_iov(mc, &iov, 1, "lru_crawler metadump", err)))
		return rc;
	for (int first = 1;; first = 0) {
		char *line;
		size_t len;

		if ((rc = read_line(mc, &line, &len, "lru_crawler metadump", err)))
			return rc;
		if (!strcmp(line, "END"))
			return 0;
		/* Before 1.6.9 "hash" is taken for a class id; the connection
		 * is still good for another command. */
		if (first && walk == HR__MC_WALK_HASH && !strncmp(line, "BADCLASS", 8))
			return HR__MC_NO_HASH_WALK;
		if (strncmp(line, "key=", 4))
			return unexpected(mc, "lru_crawler metadump", line, err);
		if ((rc = hr__mc_parse_dump_line(line, len, &item, err))) {
			char msg[HR_ERROR_MSG_MAX];

			snprintf(msg, sizeof msg, "%s", err ? err->message : "");
			return mc_fail(err, rc, "memcached %s: %s", mc->addr, msg);
		}
		if ((rc = fn(userdata, &item)))
			return rc;
	}
}

/* ---- meta commands ------------------------------------------------------------- */

/* Sends "mg <key>[ b]<flags>\r\n" (flags: the rest of the line, CRLF
 * included) and reads the first line of the answer into *line. */
static int mg_request(hr__mc *mc, const void *key, size_t len, const char *flags, char **line,
		      hr_error *err)
{
	key_token t;
	size_t llen;
	struct iovec iov[4];
	int rc;

	if ((rc = key_token_make(mc, key, len, &t, err)))
		return rc;
	iov[0] = (struct iovec){ "mg ", 3 };
	iov[1] = (struct iovec){ t.text, t.len };
	iov[2] = t.b64 ? (struct iovec){ " b", 2 } : (struct iovec){ "", 0 };
	iov[3] = (struct iovec){ (char *)flags, strlen(flags) };
	if ((rc = send_iov(mc, iov, 4, "mg", err)))
		return rc;
	return read_line(mc, line, &llen, "mg", err);
}

int hr__mc_get(hr__mc *mc, const void *key, size_t len, hr__mc_value *out, hr_error *err)
{
	char *line;
	size_t vlen;
	int64_t flags = 0, ttl = -1, size = 0;
	int rc;

	if ((rc = mg_request(mc, key, len, " s f t v\r\n", &line, err)))
		return rc;
	if (!strcmp(line, "EN"))
		return 0;
	if (strncmp(line, "VA ", 3) || meta_flag(line, 's', &size) != 1 || size < 0 ||
	    meta_flag(line, 'f', &flags) != 1 || meta_flag(line, 't', &ttl) != 1 ||
	    flags < 0 || flags > UINT32_MAX)
		return unexpected(mc, "mg", line, err);
	vlen = (size_t)size;
	if ((rc = read_value(mc, vlen, out, "mg", err)))
		return rc;
	out->flags = (uint32_t)flags;
	out->ttl = ttl;
	return 1;
}

int hr__mc_exists(hr__mc *mc, const void *key, size_t len, hr_error *err)
{
	char *line;
	int rc;

	if ((rc = mg_request(mc, key, len, "\r\n", &line, err)))
		return rc;
	if (!strncmp(line, "HD", 2) && (line[2] == '\0' || line[2] == ' '))
		return 1;
	if (!strcmp(line, "EN"))
		return 0;
	return unexpected(mc, "mg", line, err);
}

int hr__mc_store(hr__mc *mc, const void *key, size_t len, const hr__mc_value *v,
		hr__mc_mode mode, uint64_t *cas, hr_error *err)
{
	key_token t;
	char head[128], *line;
	size_t llen;
	int64_t ttl = v->ttl, got_cas = 0;
	struct iovec iov[5];
	int rc, n;

	if ((rc = key_token_make(mc, key, len, &t, err)))
		return rc;
	if (ttl > RELATIVE_TTL_MAX)
		ttl += (int64_t)time(NULL);
	n = snprintf(head, sizeof head, " %zu F%" PRIu32, v->len, v->flags);
	if (ttl > 0)
		n += snprintf(head + n, sizeof head - (size_t)n, " T%" PRId64, ttl);
	n += snprintf(head + n, sizeof head - (size_t)n, " M%c c%s\r\n",
		      mode == HR__MC_ADD ? 'E' : 'S', t.b64 ? " b" : "");
	iov[0] = (struct iovec){ "ms ", 3 };
	iov[1] = (struct iovec){ t.text, t.len };
	iov[2] = (struct iovec){ head, (size_t)n };
	iov[3] = (struct iovec){ v->len ? v->data : (char *)"", v->len };
	iov[4] = (struct iovec){ "\r\n", 2 };
	if ((rc = send_iov(mc, iov, 5, "ms", err)) ||
	    (rc = read_line(mc, &line, &llen, "ms", err)))
		return rc;
	if (!strncmp(line, "NS", 2) && (line[2] == '\0' || line[2] == ' '))
		return 0;
	if (strncmp(line, "HD", 2) || (line[2] != '\0' && line[2] != ' ') ||
	    meta_flag(line, 'c', &got_cas) != 1)
		return unexpected(mc, "ms", line, err);
	if (cas)
		*cas = (uint64_t)got_cas;
	return 1;
}

int hr__mc_delete(hr__mc *mc, const void *key, size_t len, uint64_t cas, hr_error *err)
{
	key_token t;
	char tail[48], *line;
	size_t llen;
	struct iovec iov[3];
	int rc, n;

	if ((rc = key_token_make(mc, key, len, &t, err)))
		return rc;
	n = cas ? snprintf(tail, sizeof tail, " C%" PRIu64 "%s\r\n", cas, t.b64 ? " b" : "")
		: snprintf(tail, sizeof tail, "%s\r\n", t.b64 ? " b" : "");
	iov[0] = (struct iovec){ "md ", 3 };
	iov[1] = (struct iovec){ t.text, t.len };
	iov[2] = (struct iovec){ tail, (size_t)n };
	if ((rc = send_iov(mc, iov, 3, "md", err)) ||
	    (rc = read_line(mc, &line, &llen, "md", err)))
		return rc;
	if (!strncmp(line, "HD", 2))
		return 1;
	if (!strncmp(line, "NF", 2) || !strncmp(line, "EX", 2))
		return 0;
	return unexpected(mc, "md", line, err);
}
