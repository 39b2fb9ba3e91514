/*
 * serve_http.c - the dashboard's HTTP side, on libmicrohttpd: GET and HEAD
 * of four paths, read-only, with the limits that keep one bad client from
 * hurting the others.
 *
 * One internal polling thread (epoll) serves every connection: a request
 * is answered from memory in one pass once it is complete (keeping the
 * connection alive for the page's next poll), so nothing blocks, and a slow
 * client (slowloris) only holds its own connection, which the timeout
 * closes.  The connection limit bounds what many of them can hold; the
 * per-connection memory limit bounds the request line and headers, which
 * libmicrohttpd answers with 414 or 431 when they do not fit.
 */
#include "serve.h"
#include "cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct serve_http {
	struct MHD_Daemon *daemon;
	struct serve_state *state;
	hr_client *client;
	int loopback;
	unsigned port;
};

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

/* A body made by `fn` into memory; 500 if it failed. */
static enum MHD_Result send_made(struct MHD_Connection *c, const char *type,
				 int (*fn)(struct serve_http *, FILE *),
				 struct serve_http *h)
{
	char *data = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&data, &len);
	int rc;

	if (!f)
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	rc = fn(h, f);
	if (fclose(f) || rc) {
		free(data);
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot make the answer\n");
	}
	return send_buffer(c, MHD_HTTP_OK, type, data, len, MHD_RESPMEM_MUST_FREE, 0);
}

static int make_ring_json(struct serve_http *h, FILE *f)
{
	return serve_ring_json(h->state, h->client, f);
}

static int metrics_write(void *userdata, const char *data, size_t len)
{
	return fwrite(data, 1, len, userdata) == len ? 0 : 1;
}

static int make_metrics(struct serve_http *h, FILE *f)
{
	hr_error err = { 0 };

	return hr_client_metrics_write(h->client, metrics_write, f, NULL, &err);
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

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version,
			      const char *upload_data, size_t *upload_data_size,
			      void **req_cls)
{
	struct serve_http *h = cls;
	int hosts = 0;

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
	if (strcmp(url, "/ring.json") == 0)
		return send_made(c, "application/json", make_ring_json, h);
	if (strcmp(url, "/metrics") == 0)
		return send_made(c, HR_METRICS_CONTENT_TYPE, make_metrics, h);
	if (strcmp(url, "/lookup") == 0)
		return send_lookup(c, h);
	return send_text(c, MHD_HTTP_NOT_FOUND, "not found: /, /ring.json, /metrics, /lookup\n");
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
	h->loopback = opts->loopback;
	fd = listen_on(opts, cmd, &h->port);
	if (fd < 0) {
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
		MHD_OPTION_END);
	if (!h->daemon) {
		cli_error(cmd, "cannot start the HTTP server (libmicrohttpd)");
		close(fd);
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
	MHD_stop_daemon(h->daemon);
	free(h);
}
