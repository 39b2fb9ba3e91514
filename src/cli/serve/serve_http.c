/* SPDX-License-Identifier: MIT */
/*
 * serve_http.c - the dashboard's HTTP side, on libmicrohttpd: GET and HEAD
 * of a few paths, read-only, with the limits that keep one bad client from
 * hurting the others.
 *
 * One internal polling thread (epoll) serves every connection: a request
 * is answered from memory in one pass once it is complete (keeping the
 * connection alive for the page's next poll), from what the drawer made
 * on its own thread (serve_draw.c), so nothing blocks, and a slow client
 * (slowloris) only holds its own connection, which the timeout closes.
 * The connection limit bounds what many of them can hold; the
 * per-connection memory limit bounds the request line and headers, which
 * libmicrohttpd answers with 414 or 431 when they do not fit.
 *
 * A client that trickles its request, a byte just inside the timeout at a
 * time, would keep its connection until the memory limit: libmicrohttpd
 * 0.9.75 has no deadline for a whole request.  So each connection is
 * listed with since when it waits for a request's line and headers (from
 * its start, or the end of the previous answer), and serve_http_tick()
 * shuts down the socket of one that waited longer than the request
 * timeout.  libmicrohttpd then reads the end of the stream and closes the
 * connection itself, on its own thread.  The list is the only state both
 * threads touch (one mutex), and a connection leaves it at libmicrohttpd's
 * close notice, which comes before it closes the socket, so the tick never
 * shuts down a descriptor that has been reused.  An answer being sent is
 * not waiting: only the idle timeout bounds it.
 */
#include "serve.h"
#include "cli.h"
#include "clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A connection libmicrohttpd has, for the request deadline. */
struct conn {
	struct conn *prev, *next;
	int fd;
	int64_t since;		/* ms (monotonic) it waits for a request
				   since; 0: answering one */
};

struct serve_http {
	struct MHD_Daemon *daemon;
	struct serve_state *state;
	hr_client *client;
	const hr_metrics_options *metrics;
	int loopback;
	unsigned port;
	int64_t request_timeout_ms;
	pthread_mutex_t mu;	/* conns and their `since` */
	struct conn *conns;
};

/* The connection's entry (NULL if there was no memory for it). */
static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* From now on `c` waits for a request (since = now) or answers one (0). */
static void conn_waits(struct serve_http *h, struct MHD_Connection *c, int waits)
{
	struct conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&h->mu);
	k->since = waits ? hr__now_ms() : 0;
	pthread_mutex_unlock(&h->mu);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct serve_http *h = cls;
	struct conn *k = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		/* Without memory or its socket, only the idle timeout bounds
		 * it, as before. */
		if (!ci || !(k = calloc(1, sizeof *k)))
			return;
		k->fd = ci->connect_fd;
		k->since = hr__now_ms();
		pthread_mutex_lock(&h->mu);
		k->next = h->conns;
		if (h->conns)
			h->conns->prev = k;
		h->conns = k;
		pthread_mutex_unlock(&h->mu);
		*socket_context = k;
		return;
	}
	if (!k)
		return;
	pthread_mutex_lock(&h->mu);
	if (k->prev)
		k->prev->next = k->next;
	else
		h->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	pthread_mutex_unlock(&h->mu);
	free(k);
	*socket_context = NULL;
}

/* An answer sent (or a request given up): the next one's wait starts. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)req_cls;
	(void)toe;
	conn_waits(cls, c, 1);
}

void serve_http_tick(struct serve_http *h)
{
	int64_t now = hr__now_ms();

	pthread_mutex_lock(&h->mu);
	for (struct conn *k = h->conns; k; k = k->next)
		if (k->since && now - k->since >= h->request_timeout_ms) {
			shutdown(k->fd, SHUT_RDWR);
			k->since = 0;
		}
	pthread_mutex_unlock(&h->mu);
}

/* The page may load nothing from anywhere but itself: no script, style,
 * font or image from the network, even if someone edited it. */
#define PAGE_CSP "default-src 'none'; script-src 'unsafe-inline'; " \
		 "style-src 'unsafe-inline'; img-src data:; connect-src 'self'; " \
		 "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static enum MHD_Result send_buffer(struct MHD_Connection *c, unsigned status,
				   const char *type, void *data, size_t len,
				   enum MHD_ResponseMemoryMode mode, int page)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, data, mode);
	enum MHD_Result ok;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(data);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	if (page)
		MHD_add_response_header(r, "Content-Security-Policy", PAGE_CSP);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status,
				 const char *text)
{
	return send_buffer(c, status, "text/plain; charset=utf-8", (void *)text,
			   strlen(text), MHD_RESPMEM_PERSISTENT, 0);
}

/* What a path answers, into `f`: an HTTP status (500: nothing sent). */
typedef unsigned (*make_fn)(struct serve_http *h, struct MHD_Connection *c, FILE *f);

/* A body made by `fn` into memory; 500 if it failed. */
static enum MHD_Result send_made(struct MHD_Connection *c, const char *type, make_fn fn,
				 struct serve_http *h)
{
	char *data = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&data, &len);
	unsigned status;

	if (!f)
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	status = fn(h, c, f);
	if (fclose(f) || status == MHD_HTTP_INTERNAL_SERVER_ERROR) {
		free(data);
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot make the answer\n");
	}
	/* A bad query's 400 is a line of text. */
	if (status == MHD_HTTP_BAD_REQUEST)
		type = "text/plain; charset=utf-8";
	return send_buffer(c, status, type, data, len, MHD_RESPMEM_MUST_FREE, 0);
}

static unsigned make_ring_json(struct serve_http *h, struct MHD_Connection *c, FILE *f)
{
	(void)c;
	return (unsigned)serve_ring_json(h->state, h->client, f);
}

static unsigned make_status_json(struct serve_http *h, struct MHD_Connection *c, FILE *f)
{
	(void)c;
	return (unsigned)serve_status_json(h->state, h->client, f);
}

static unsigned make_overview_json(struct serve_http *h, struct MHD_Connection *c, FILE *f)
{
	(void)c;
	return (unsigned)serve_overview_json(h->state, h->client, f);
}

/* ---- /nodes.json's query --------------------------------------------------- */

struct nodes_args {
	struct serve_node_query q;
	char bad[160]; /* why the query is bad; "" if it is not */
};

/* Up to 32 bytes of `s` for a message, each byte that is not printable
 * ASCII as '?'. */
static const char *shown(const char *s, char buf[33])
{
	size_t n = 0;

	for (; s[n] && n < 32; n++)
		buf[n] = s[n] > ' ' && s[n] < 0x7f ? s[n] : '?';
	buf[n] = '\0';
	return buf;
}

/* Digits only, at most `max`; 0 and sets *ok to 0 if bad. */
static size_t parse_count(const char *s, size_t max, int *ok)
{
	size_t v = 0;

	if (!s || !*s)
		*ok = 0;
	for (; s && *s && *ok; s++) {
		if (*s < '0' || *s > '9' || (v = v * 10 + (size_t)(*s - '0')) > max)
			*ok = 0;
	}
	return *ok ? v : 0;
}

static enum MHD_Result take_nodes_arg(void *cls, enum MHD_ValueKind kind, const char *name,
				      size_t name_len, const char *value, size_t value_len)
{
	struct nodes_args *a = cls;
	struct serve_node_query *q = &a->q;
	char b[33];
	int ok = 1;

	(void)kind;
	if (a->bad[0])
		return MHD_YES;
	if (!value)
		value = "";
	if (!strcmp(name, "q")) {
		if (value_len > SERVE_QUERY_MAX || memchr(value, '\0', value_len))
			snprintf(a->bad, sizeof a->bad, "q: at most %d bytes, no NUL",
				 SERVE_QUERY_MAX);
		else
			memcpy(q->q, value, value_len + 1);
	} else if (!strcmp(name, "state")) {
		q->state = -1;
		for (int st = HR_STATE_ACTIVE; st <= HR_STATE_DRAINING; st++)
			if (!strcmp(value, hr_state_name((hr_state)st)))
				q->state = st;
		if (q->state < 0 && *value)
			snprintf(a->bad, sizeof a->bad, "state=%s: active, warming or draining",
				 shown(value, b));
	} else if (!strcmp(name, "sort")) {
		int found = 0;

		for (int k = 0; k < SERVE_SORT_COUNT; k++)
			if (!strcmp(value, serve_sort_names[k])) {
				q->sort = (enum serve_sort)k;
				found = 1;
			}
		if (!found)
			snprintf(a->bad, sizeof a->bad, "sort=%s: load, share, id or lookups",
				 shown(value, b));
	} else if (!strcmp(name, "offset")) {
		q->offset = parse_count(value, HR_NODES_MAX, &ok);
		if (!ok)
			snprintf(a->bad, sizeof a->bad, "offset=%s: a number of 0 to %d",
				 shown(value, b), HR_NODES_MAX);
	} else if (!strcmp(name, "limit")) {
		q->limit = parse_count(value, SERVE_NODES_LIMIT_MAX, &ok);
		if (!ok || !q->limit)
			snprintf(a->bad, sizeof a->bad, "limit=%s: a number of 1 to %d",
				 shown(value, b), SERVE_NODES_LIMIT_MAX);
	} else {
		snprintf(a->bad, sizeof a->bad, "unknown parameter %s: /nodes.json takes q,"
			 " state, sort, offset and limit", name_len ? shown(name, b) : "?");
	}
	return MHD_YES;
}

static unsigned make_nodes_json(struct serve_http *h, struct MHD_Connection *c, FILE *f)
{
	struct nodes_args a = { .q = { .state = -1, .sort = SERVE_SORT_LOAD,
				       .limit = SERVE_NODES_LIMIT } };

	MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, take_nodes_arg, &a);
	if (a.bad[0]) {
		fprintf(f, "%s\n", a.bad);
		return MHD_HTTP_BAD_REQUEST;
	}
	return (unsigned)serve_nodes_json(h->state, h->client, &a.q, f);
}

static int metrics_write(void *userdata, const char *data, size_t len)
{
	return fwrite(data, 1, len, userdata) == len ? 0 : 1;
}

static enum MHD_Result send_lookup(struct MHD_Connection *c, struct serve_http *h)
{
	char *data = NULL, msg[256] = "";
	size_t len = 0;
	FILE *f = open_memstream(&data, &len);
	int status;

	if (!f)
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	status = serve_lookup(h->client, c, f, msg, sizeof msg);
	if (fclose(f) && status == MHD_HTTP_OK) {
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		snprintf(msg, sizeof msg, "cannot make the answer\n");
	}
	if (status == MHD_HTTP_OK)
		return send_buffer(c, status, "application/json", data, len,
				   MHD_RESPMEM_MUST_FREE, 0);
	free(data);
	return send_buffer(c, (unsigned)status, "text/plain; charset=utf-8", msg, strlen(msg),
			   MHD_RESPMEM_MUST_COPY, 0);
}

/*
 * Before the client's first ring: 1 with why in msg ("no ring yet, etcd
 * unreachable: <the watcher's last failure>"), else 0.
 */
static int no_ring_yet(struct serve_http *h, char *msg, size_t size)
{
	static const char after[] = "no ring after ";
	hr_error err = { 0 };
	int rc = hr_client_wait_synced(h->client, 0, &err);
	const char *cause = err.message;

	if (rc == 0)
		return 0;
	/* "no ring after N ms: CAUSE": the cause alone, so the message
	 * reads the same from one poll to the next. */
	if (strncmp(cause, after, sizeof after - 1) == 0)
		cause = strstr(cause, ": ") ? strstr(cause, ": ") + 2 : "";
	if (rc != HR_ETIMEDOUT)
		snprintf(msg, size, "no ring yet: %s", cause);
	else if (*cause)
		snprintf(msg, size, "no ring yet, etcd unreachable: %s", cause);
	else
		snprintf(msg, size, "no ring yet, waiting for etcd");
	return 1;
}

/* 503 with a JSON body saying why there is no ring yet. */
static enum MHD_Result send_no_ring(struct MHD_Connection *c, struct serve_http *h,
				    const char *why)
{
	char *data = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&data, &len);

	if (!f)
		return send_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
	serve_no_ring_json(h->client, why, f);
	if (fclose(f)) {
		free(data);
		return send_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no ring yet\n");
	}
	return send_buffer(c, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json", data, len,
			   MHD_RESPMEM_MUST_FREE, 0);
}

/* The metrics, after a comment line saying why there is no ring yet if
 * there is none (a scrape still gets the client's gauges). */
static unsigned make_metrics(struct serve_http *h, struct MHD_Connection *c, FILE *f)
{
	char why[HR_ERROR_MSG_MAX + 64];
	hr_error err = { 0 };

	(void)c;
	/* An hr_error message is one line: so is the comment. */
	if (no_ring_yet(h, why, sizeof why))
		fprintf(f, "# %s\n", why);
	if (hr_client_metrics_write(h->client, metrics_write, f, h->metrics, &err))
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	return MHD_HTTP_OK;
}

/*
 * In loopback mode the Host header must name a loopback address or
 * localhost, with our port: a web page elsewhere that rebinds its own
 * name to 127.0.0.1 (DNS rebinding) then cannot read the dashboard
 * through the operator's browser.
 */
static int host_ok(const char *host, unsigned port)
{
	char name[64], want[16];
	const char *colon;
	size_t len;
	struct in_addr a4;

	if (!host)
		return 1; /* HTTP/1.0; HTTP/1.1 without Host is a 400 already */
	colon = strrchr(host, ':');
	if (colon && strchr(colon, ']'))
		colon = NULL; /* "[::1]" without a port */
	len = colon ? (size_t)(colon - host) : strlen(host);
	snprintf(want, sizeof want, "%u", port);
	if (colon ? strcmp(colon + 1, want) != 0 : port != 80)
		return 0;
	if (len == 0 || len >= sizeof name)
		return 0;
	memcpy(name, host, len);
	name[len] = '\0';
	if (strcasecmp(name, "localhost") == 0 || strcmp(name, "[::1]") == 0)
		return 1;
	return inet_pton(AF_INET, name, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

static enum MHD_Result count_host(void *cls, enum MHD_ValueKind kind, const char *key,
				  const char *value)
{
	if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
		++*(int *)cls;
	return MHD_YES;
}

/* The paths that need a ring: 503 with why until there is one. */
static const struct {
	const char *path;
	make_fn make; /* NULL: /lookup */
} json_paths[] = {
	{ "/status.json", make_status_json },
	{ "/overview.json", make_overview_json },
	{ "/nodes.json", make_nodes_json },
	{ "/ring.json", make_ring_json },
	{ "/lookup", NULL },
};

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version,
			      const char *upload_data, size_t *upload_data_size,
			      void **req_cls)
{
	struct serve_http *h = cls;
	int hosts = 0;

	/* The first call comes with the request line and headers complete:
	 * no deadline while it is answered. */
	if (!*req_cls)
		conn_waits(h, c, 0);
	/* Other methods are answered at the first call, before any body is
	 * read: libmicrohttpd then closes the connection. */
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "read-only: GET or HEAD\n");
	/* GET and HEAD at the second, once the request is complete, which
	 * keeps the connection alive for the page's next poll. */
	if (!*req_cls) {
		const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							      MHD_HTTP_HEADER_CONTENT_LENGTH);

		/* A body would only be read to be thrown away. */
		if ((len && strcmp(len, "0")) ||
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						MHD_HTTP_HEADER_TRANSFER_ENCODING))
			return send_text(c, MHD_HTTP_CONTENT_TOO_LARGE, "a GET takes no body\n");
		*req_cls = h; /* any pointer: "seen" */
		return MHD_YES;
	}
	/* Two Hosts (RFC 9112: a 400) would let the check below read one
	 * and a proxy in front another. */
	MHD_get_connection_values(c, MHD_HEADER_KIND, count_host, &hosts);
	if (hosts > 1)
		return send_text(c, MHD_HTTP_BAD_REQUEST, "more than one Host\n");
	if (h->loopback &&
	    !host_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST),
		     h->port))
		return send_text(c, MHD_HTTP_FORBIDDEN, "Host is not a loopback name\n");
	if (strcmp(url, "/") == 0)
		return send_buffer(c, MHD_HTTP_OK, "text/html; charset=utf-8",
				   (void *)serve_page, serve_page_len,
				   MHD_RESPMEM_PERSISTENT, 1);
	if (strcmp(url, "/metrics") == 0)
		return send_made(c, HR_METRICS_CONTENT_TYPE, make_metrics, h);
	for (size_t i = 0; i < sizeof json_paths / sizeof json_paths[0]; i++) {
		char why[HR_ERROR_MSG_MAX + 64];

		if (strcmp(url, json_paths[i].path))
			continue;
		if (no_ring_yet(h, why, sizeof why))
			return send_no_ring(c, h, why);
		if (!json_paths[i].make)
			return send_lookup(c, h);
		return send_made(c, "application/json", json_paths[i].make, h);
	}
	return send_text(c, MHD_HTTP_NOT_FOUND, "not found: /, /status.json, /overview.json,"
			 " /nodes.json, /ring.json, /metrics, /lookup\n");
}

/* The listening socket, bound here rather than by libmicrohttpd: its port
 * is then known before the server's thread reads it, and a failure comes
 * with its reason.  Returns the socket, or -1 after an error line. */
static int listen_on(const struct serve_http_options *opts, const char *cmd,
		     unsigned *port)
{
	const struct sockaddr *sa = (const struct sockaddr *)&opts->addr;
	int v6 = opts->addr.ss_family == AF_INET6, one = 1;
	char addr[INET6_ADDRSTRLEN] = "?";
	struct sockaddr_storage bound;
	socklen_t len = sizeof bound;
	int fd;

	inet_ntop(opts->addr.ss_family,
		  v6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
		     : (const void *)&((const struct sockaddr_in *)sa)->sin_addr,
		  addr, sizeof addr);
	*port = ntohs(v6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
			 : ((const struct sockaddr_in *)sa)->sin_port);
	fd = socket(opts->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (v6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	}
	if (fd < 0 || bind(fd, sa, opts->addr_len) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&bound, &len)) {
		cli_error(cmd, "cannot listen on %s port %u: %s", addr, *port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(v6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
			 : ((struct sockaddr_in *)&bound)->sin_port);
	return fd;
}

struct serve_http *serve_http_start(const struct serve_http_options *opts,
				    struct serve_state *state, hr_client *client,
				    const char *cmd)
{
	struct serve_http *h = calloc(1, sizeof *h);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	int fd;

	if (!h) {
		cli_error(cmd, "out of memory");
		return NULL;
	}
	h->state = state;
	h->client = client;
	h->metrics = opts->metrics;
	h->loopback = opts->loopback;
	h->request_timeout_ms = (int64_t)opts->request_timeout_s * 1000;
	pthread_mutex_init(&h->mu, NULL);
	fd = listen_on(opts, cmd, &h->port);
	if (fd < 0) {
		pthread_mutex_destroy(&h->mu);
		free(h);
		return NULL;
	}
	if (opts->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* Everything the handler reads is set: the thread may start. */
	h->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, handle, h,
		MHD_OPTION_LISTEN_SOCKET, fd,
		MHD_OPTION_CONNECTION_LIMIT, opts->max_connections,
		MHD_OPTION_CONNECTION_TIMEOUT, opts->timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, opts->memory_limit,
		/* libmicrohttpd's stricter parsing (0.9.75 still takes bare LF
		 * and a space before a colon, harmless for a GET). */
		MHD_OPTION_STRICT_FOR_CLIENT, 1,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
		MHD_OPTION_END);
	if (!h->daemon) {
		cli_error(cmd, "cannot start the HTTP server (libmicrohttpd)");
		close(fd);
		pthread_mutex_destroy(&h->mu);
		free(h);
		return NULL;
	}
	return h;
}

unsigned serve_http_port(const struct serve_http *h)
{
	return h->port;
}

void serve_http_stop(struct serve_http *h)
{
	if (!h)
		return;
	/* Every connection's close notice comes before it returns. */
	MHD_stop_daemon(h->daemon);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
