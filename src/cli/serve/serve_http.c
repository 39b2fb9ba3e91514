/* SPDX-License-Identifier: MIT */
/*
 * serve_http.c - the dashboard's HTTP side, on libmicrohttpd: GET and HEAD
 * of a few paths, read-only, with the limits that keep one bad client from
 * hurting the others.
 *
 * One internal polling thread (epoll) reads every request and sends every
 * answer, and is never held up by the making of one: what it makes itself
 * is cheap whatever the ring's size (the page, /lookup, errors, the 503
 * before the first ring).  The other answers are made on two lanes, the
 * threads of serve_work.c: /ring.json (every node and its lookups) and
 * /metrics (the client's part of it, per scrape; the ring's part is made
 * once per ring, serve_metrics.c) on the slow lane, and what the page
 * polls (/status.json, /overview.json, /nodes.json: small answers, from
 * what the drawer made on its own thread, serve_draw.c) on the quick one,
 * so that a /ring.json of 100,000 nodes does not hold up the page either.
 * The request's connection is suspended meanwhile
 * (MHD_ALLOW_SUSPEND_RESUME): the job is the request's own state, made on
 * the lane into memory, and the lane's last touch of it is
 * MHD_resume_connection(); libmicrohttpd then calls the handler again on
 * its thread, which sends what was made.  A suspended connection reads
 * nothing and does not time out, but it counts against the connection
 * limit, which so bounds the jobs waiting.  A /metrics answer is sent
 * from the client's part and the ring's (a counted reference) as they are,
 * without a copy of its tens of megabytes.
 *
 * Stopping: the metrics' writers stop at their next 8 KiB, the lanes end
 * their jobs under way and resume the connection of each job still
 * waiting (503), and only then is the daemon stopped, which libmicrohttpd
 * requires of suspended connections.  A request that comes meanwhile is
 * refused by the stopped lane, its connection resumed at once (503).
 *
 * A slow client (slowloris) only holds its own connection, which the
 * timeout closes.  The connection limit bounds what many of them can hold;
 * the per-connection memory limit bounds the request line and headers,
 * which libmicrohttpd answers with 414 or 431 when they do not fit.
 *
 * A client that trickles its request, a byte just inside the timeout at a
 * time, would keep its connection until the memory limit: libmicrohttpd
 * 0.9.75 has no deadline for a whole request.  So each connection is
 * listed with since when it waits for a request's line and headers (from
 * its start, or the end of the previous answer), and serve_http_tick()
 * shuts down the socket of one that waited longer than the request
 * timeout.  libmicrohttpd then reads the end of the stream and closes the
 * connection itself, on its own thread.  The list is the only state the
 * tick shares with the other threads (one mutex), and a connection leaves
 * it at libmicrohttpd's close notice, which comes before it closes the
 * socket, so the tick never shuts down a descriptor that has been reused.
 * An answer being made or sent is not waiting: only the idle timeout
 * bounds its sending.
 */
#include "serve.h"
#include "cli.h"
#include "clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
	struct serve_metrics *metrics;
	struct serve_lane *slow, *quick; /* see the top */
	int loopback;
	unsigned port;
	size_t memory_limit;
	int64_t request_timeout_ms;
	pthread_mutex_t mu;	/* conns and their `since` */
	struct conn *conns;
};

/* What a path answers, into `f`: an HTTP status (500: nothing sent). */
struct req;
typedef unsigned (*make_fn)(struct req *r, FILE *f);

/* A request, from its line (the URI log) to its end (on_completed). */
struct req {
	struct serve_http *h;
	uintptr_t target_end; /* where the target the URI log saw ends */
	int encoded_nul;      /* "%00" in the target's path */
	int seen;             /* the handler's first call came */
	/* An answer made on a lane: handed over (made 1), then made (2) by
	 * the lane, which touches nothing of it after that. */
	struct serve_job job;
	struct MHD_Connection *c;
	make_fn make;
	const char *type;
	struct serve_node_query q; /* /nodes.json's */
	int made;
	unsigned status;           /* 503 without data: the lane stopped */
	char *data;
	size_t len;
	struct serve_metrics_part *part; /* /metrics: sent after data */
};

/* The URI log comes first, with the target as libmicrohttpd has it before
 * it decodes it in place: the request's state starts there. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct req *r = calloc(1, sizeof *r);

	(void)c;
	if (r) {
		size_t path_len = strcspn(uri, "?");

		r->h = cls;
		r->target_end = (uintptr_t)(uri + strlen(uri));
		/* libmicrohttpd decodes it into a NUL, which would cut the
		 * path as a raw one does (in a query value it is a byte of
		 * the value: a key may hold any). */
		for (const char *p = uri; (p = strchr(p, '%')) && (size_t)(p - uri) + 2 < path_len;
		     p++)
			if (p[1] == '0' && p[2] == '0')
				r->encoded_nul = 1;
	}
	return r; /* NULL: the handler answers 500 */
}

/*
 * Whether the request target held a NUL byte.  libmicrohttpd 0.9.75 hands
 * the target over as a C string, so the URI log and the handler see it cut
 * at the first NUL, and nothing in its API gives the target's length.
 * What it does keep is the request line in one buffer: the target, the
 * NUL it writes over the space before the version, the version (which the
 * handler gets).  So the target seen by the URI log ends right before the
 * version unless a NUL of the client's ended it earlier: the version then
 * starts further on, within the line.  A layout other than that one (an
 * other libmicrohttpd) makes this say no, never yes, and the test of a
 * NUL in the target fail.
 */
static int target_has_nul(const struct serve_http *h, const struct req *r,
			  const char *version)
{
	uintptr_t v = (uintptr_t)version;

	if (!version || !version[0])
		return 0; /* no version: libmicrohttpd refuses it itself */
	return v > r->target_end + 1 && v - r->target_end <= h->memory_limit;
}

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

/* An answer sent (or a request given up): the request's state goes, and
 * the next one's wait starts. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req *r = *req_cls;

	(void)toe;
	if (r) {
		free(r->data);
		serve_metrics_part_release(r->part);
		free(r);
		*req_cls = NULL;
	}
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

/* Queues `r` with the headers every answer has. */
static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, const char *type,
			     struct MHD_Response *r, int page)
{
	enum MHD_Result ok;

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

static enum MHD_Result send_buffer(struct MHD_Connection *c, unsigned status,
				   const char *type, void *data, size_t len,
				   enum MHD_ResponseMemoryMode mode, int page)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, data, mode);

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(data);
		return MHD_NO;
	}
	return queue(c, status, type, r, page);
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status,
				 const char *text)
{
	return send_buffer(c, status, "text/plain; charset=utf-8", (void *)text,
			   strlen(text), MHD_RESPMEM_PERSISTENT, 0);
}

static unsigned make_ring_json(struct req *r, FILE *f)
{
	return (unsigned)serve_ring_json(r->h->state, r->h->client, f);
}

static unsigned make_status_json(struct req *r, FILE *f)
{
	return (unsigned)serve_status_json(r->h->state, r->h->client, f);
}

static unsigned make_overview_json(struct req *r, FILE *f)
{
	return (unsigned)serve_overview_json(r->h->state, r->h->client, f);
}

static unsigned make_nodes_json(struct req *r, FILE *f)
{
	return (unsigned)serve_nodes_json(r->h->state, r->h->client, &r->q, f);
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

/* /nodes.json's query, read on the HTTP thread (the lanes never touch a
 * connection): 0, or -1 with a 400 queued. */
static int nodes_query(struct MHD_Connection *c, struct req *r, enum MHD_Result *sent)
{
	struct nodes_args a = { .q = { .state = -1, .sort = SERVE_SORT_LOAD,
				       .limit = SERVE_NODES_LIMIT } };
	char msg[sizeof a.bad + 1];

	MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, take_nodes_arg, &a);
	if (a.bad[0]) {
		snprintf(msg, sizeof msg, "%s\n", a.bad);
		*sent = send_buffer(c, MHD_HTTP_BAD_REQUEST, "text/plain; charset=utf-8", msg,
				    strlen(msg), MHD_RESPMEM_MUST_COPY, 0);
		return -1;
	}
	r->q = a.q;
	return 0;
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
static unsigned make_metrics(struct req *r, FILE *f)
{
	char why[HR_ERROR_MSG_MAX + 64];

	/* An hr_error message is one line: so is the comment. */
	if (no_ring_yet(r->h, why, sizeof why))
		fprintf(f, "# %s\n", why);
	if (serve_metrics_scrape(r->h->metrics, r->h->client, f, &r->part))
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	return MHD_HTTP_OK;
}

/* ---- answers made on a lane ---------------------------------------------------- */

/* A /metrics body: the client's part, then the ring's. */
struct metrics_body {
	char *data;
	size_t len;
	struct serve_metrics_part *part;
};

static ssize_t metrics_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct metrics_body *b = cls;
	size_t plen, n, done = 0;
	const char *ptext = serve_metrics_part_text(b->part, &plen);

	if (pos < b->len) {
		n = b->len - (size_t)pos < max ? b->len - (size_t)pos : max;
		memcpy(buf, b->data + pos, n);
		done = n;
		pos += n;
	}
	if (done < max && pos >= b->len && pos - b->len < plen) {
		size_t at = (size_t)(pos - b->len);

		n = plen - at < max - done ? plen - at : max - done;
		memcpy(buf + done, ptext + at, n);
		done += n;
	}
	return done ? (ssize_t)done : MHD_CONTENT_READER_END_OF_STREAM;
}

static void metrics_free(void *cls)
{
	struct metrics_body *b = cls;

	free(b->data);
	serve_metrics_part_release(b->part);
	free(b);
}

/* Sends what the lane made, which the response takes over. */
static enum MHD_Result send_made(struct MHD_Connection *c, struct req *r)
{
	const char *type = r->type;
	struct metrics_body *b;
	struct MHD_Response *resp;
	size_t plen;
	char *data = r->data;

	if (r->status == MHD_HTTP_INTERNAL_SERVER_ERROR)
		return send_text(c, r->status, "cannot make the answer\n");
	if (!data)
		return send_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down\n");
	r->data = NULL;
	if (!r->part)
		return send_buffer(c, r->status, type, data, r->len, MHD_RESPMEM_MUST_FREE, 0);
	b = malloc(sizeof *b);
	if (!b) {
		free(data);
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	*b = (struct metrics_body){ data, r->len, r->part };
	r->part = NULL;
	serve_metrics_part_text(b->part, &plen);
	resp = MHD_create_response_from_callback(b->len + plen, 64 * 1024, metrics_read, b,
						 metrics_free);
	if (!resp) {
		metrics_free(b);
		return MHD_NO;
	}
	return queue(c, r->status, type, resp, 0);
}

static struct req *req_of(struct serve_job *j)
{
	return (struct req *)((char *)j - offsetof(struct req, job));
}

/* On the lane: makes the answer, then hands the request back. */
static void job_run(struct serve_job *j)
{
	struct req *r = req_of(j);
	FILE *f = open_memstream(&r->data, &r->len);
	unsigned status = MHD_HTTP_INTERNAL_SERVER_ERROR;

	if (f) {
		status = r->make(r, f);
		if (fclose(f))
			status = MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	if (status == MHD_HTTP_INTERNAL_SERVER_ERROR) {
		free(r->data);
		r->data = NULL;
		serve_metrics_part_release(r->part);
		r->part = NULL;
	}
	r->status = status;
	r->made = 2;
	/* The last touch: the HTTP thread may free r from here on. */
	MHD_resume_connection(r->c);
}

/* The lane stopped before the job's turn: 503. */
static void job_cancel(struct serve_job *j)
{
	struct req *r = req_of(j);

	r->status = MHD_HTTP_SERVICE_UNAVAILABLE;
	r->made = 2;
	MHD_resume_connection(r->c);
}

/* Hands the answer to `lane`, the connection suspended until it is made. */
static enum MHD_Result to_lane(struct MHD_Connection *c, struct req *r,
			       struct serve_lane *lane, make_fn make, const char *type)
{
	r->c = c;
	r->make = make;
	r->type = type;
	r->made = 1;
	r->job.run = job_run;
	r->job.cancel = job_cancel;
	MHD_suspend_connection(c);
	if (serve_lane_submit(lane, &r->job)) {
		/* Stopping: the handler's next call says so. */
		r->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		r->made = 2;
		MHD_resume_connection(c);
	}
	return MHD_YES;
}

static enum MHD_Result count_host(void *cls, enum MHD_ValueKind kind, const char *key,
				  const char *value)
{
	if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
		++*(int *)cls;
	return MHD_YES;
}

/* The paths that need a ring: 503 with why until there is one; each
 * made on a lane but /lookup, which costs a lookup. */
enum lane { QUICK, SLOW, HERE };

static const struct {
	const char *path;
	make_fn make; /* NULL: /lookup */
	enum lane lane;
} json_paths[] = {
	{ "/status.json", make_status_json, QUICK },
	{ "/overview.json", make_overview_json, QUICK },
	{ "/nodes.json", make_nodes_json, QUICK },
	{ "/ring.json", make_ring_json, SLOW },
	{ "/lookup", NULL, HERE },
};

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version,
			      const char *upload_data, size_t *upload_data_size,
			      void **req_cls)
{
	struct serve_http *h = cls;
	struct req *r = *req_cls;
	char authority[256];
	const char *path, *host;
	enum MHD_Result sent;
	int hosts = 0;

	(void)upload_data;
	(void)upload_data_size;
	if (!r)
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	/* Back from a lane. */
	if (r->made == 2)
		return send_made(c, r);
	if (!r->seen) {
		const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							      MHD_HTTP_HEADER_CONTENT_LENGTH);

		/* The first call comes with the request line and headers
		 * complete: no deadline while it is answered. */
		conn_waits(h, c, 0);
		/* libmicrohttpd would serve the target up to the NUL, which
		 * is not what the client asked for. */
		if (r->encoded_nul || target_has_nul(h, r, version))
			return send_text(c, MHD_HTTP_BAD_REQUEST,
					 "a NUL byte in the request target\n");
		/* Other methods are answered at the first call, before any
		 * body is read: libmicrohttpd then closes the connection. */
		if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
			return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "read-only: GET or HEAD\n");
		/* A body would only be read to be thrown away. */
		if ((len && strcmp(len, "0")) ||
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						MHD_HTTP_HEADER_TRANSFER_ENCODING))
			return send_text(c, MHD_HTTP_CONTENT_TOO_LARGE, "a GET takes no body\n");
		/* GET and HEAD at the second call, once the request is
		 * complete, which keeps the connection alive for the page's
		 * next poll. */
		r->seen = 1;
		return MHD_YES;
	}
	/* Two Hosts (RFC 9112: a 400) would let the check below read one
	 * and a proxy in front another. */
	MHD_get_connection_values(c, MHD_HEADER_KIND, count_host, &hosts);
	if (hosts > 1)
		return send_text(c, MHD_HTTP_BAD_REQUEST, "more than one Host\n");
	path = serve_target_path(url, authority, sizeof authority);
	if (!path)
		return send_text(c, MHD_HTTP_BAD_REQUEST, "the request target is /PATH or"
				 " http://HOST:PORT/PATH\n");
	host = authority[0] ? authority
			    : MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	if (h->loopback && !serve_host_ok(host, h->port))
		return send_text(c, MHD_HTTP_FORBIDDEN, "Host is not a loopback name"
				 " with the server's port\n");
	if (strcmp(path, "/") == 0)
		return send_buffer(c, MHD_HTTP_OK, "text/html; charset=utf-8",
				   (void *)serve_page, serve_page_len,
				   MHD_RESPMEM_PERSISTENT, 1);
	if (strcmp(path, "/metrics") == 0)
		return to_lane(c, r, h->slow, make_metrics, HR_METRICS_CONTENT_TYPE);
	for (size_t i = 0; i < sizeof json_paths / sizeof json_paths[0]; i++) {
		char why[HR_ERROR_MSG_MAX + 64];

		if (strcmp(path, json_paths[i].path))
			continue;
		if (no_ring_yet(h, why, sizeof why))
			return send_no_ring(c, h, why);
		if (json_paths[i].lane == HERE)
			return send_lookup(c, h);
		if (json_paths[i].make == make_nodes_json && nodes_query(c, r, &sent))
			return sent;
		return to_lane(c, r, json_paths[i].lane == SLOW ? h->slow : h->quick,
			       json_paths[i].make, "application/json");
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

/* What serve_http_start() made before a failure. */
static void http_free(struct serve_http *h)
{
	serve_lane_stop(h->slow);
	serve_lane_stop(h->quick);
	serve_lane_free(h->slow);
	serve_lane_free(h->quick);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

struct serve_http *serve_http_start(const struct serve_http_options *opts,
				    struct serve_state *state, hr_client *client,
				    const char *cmd)
{
	struct serve_http *h = calloc(1, sizeof *h);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_ALLOW_SUSPEND_RESUME;
	int fd;

	if (!h) {
		cli_error(cmd, "out of memory");
		return NULL;
	}
	h->state = state;
	h->client = client;
	h->metrics = serve_state_metrics(state);
	h->loopback = opts->loopback;
	h->memory_limit = opts->memory_limit;
	h->request_timeout_ms = (int64_t)opts->request_timeout_s * 1000;
	pthread_mutex_init(&h->mu, NULL);
	h->slow = serve_lane_start();
	h->quick = serve_lane_start();
	if (!h->slow || !h->quick) {
		cli_error(cmd, "cannot start the HTTP server's threads");
		http_free(h);
		return NULL;
	}
	fd = listen_on(opts, cmd, &h->port);
	if (fd < 0) {
		http_free(h);
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
		MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
		MHD_OPTION_END);
	if (!h->daemon) {
		cli_error(cmd, "cannot start the HTTP server (libmicrohttpd)");
		close(fd);
		http_free(h);
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
	/* A scrape under way ends at its next piece; the lanes then resume
	 * every connection they hold (libmicrohttpd must not be stopped
	 * with one suspended), and refuse what comes after. */
	serve_metrics_halt(h->metrics);
	serve_lane_stop(h->slow);
	serve_lane_stop(h->quick);
	/* Every connection's close notice comes before it returns. */
	MHD_stop_daemon(h->daemon);
	h->daemon = NULL;
	http_free(h);
}
