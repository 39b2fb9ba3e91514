/* SPDX-License-Identifier: MIT */
/*
 * serve.h - `hashring serve`: what the dashboard shows (serve_state.c), the
 * drawings of each ring made on a thread of their own (serve_drawer.c, and
 * the files of serve_drawing.h), and how it is served over HTTP
 * (serve_http.c, and serve_target.c for what a request names), apart from
 * the command itself (cmd_serve.c).
 */
#ifndef HR_CLI_SERVE_H
#define HR_CLI_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "hashring.h"

/* ---- numbers (serve_json.c) ----------------------------------------------- */

/* The significant digits serve writes a number with: */
#define SERVE_DIGITS_EXACT 17 /* the fewest that read back as it: weights */
#define SERVE_DIGITS_SHARE 6  /* shares of the circle, loads: the page shows 3 */
#define SERVE_DIGITS_PLACE 7  /* places on the circle: the arcs, the takeover */
#define SERVE_DIGITS_RATE 9   /* lookups per second, their intervals */

/*
 * Writes `x` as a JSON number with at most `digits` significant digits
 * (trailing zeros dropped, an exponent where %g puts one: 1e-06, 1e+290;
 * more digits only near DBL_MAX, which fewer would round past); with
 * SERVE_DIGITS_EXACT, the fewest of 15, 16 or 17 that read back as x.
 * NaN and infinities, which JSON cannot hold, are written as null (and a
 * caller passes NAN for a rate not measured yet, null too).
 */
void serve_json_number(FILE *out, double x, int digits);

/* ---- request targets (serve_target.c) ------------------------------------ */

/*
 * The path of the request target `url` (decoded, without its query): the
 * origin form "/PATH" as it is, or the absolute form "http://AUTHORITY/PATH"
 * (RFC 9112 3.2.2: a server must accept it), whose authority, which then
 * stands for the Host header, is copied to `authority` ("" for the origin
 * form).  NULL for anything else, or an authority with userinfo (RFC 9110
 * 4.2.4 forbids it in http URIs) or too long.
 */
const char *serve_target_path(const char *url, char *authority, size_t size);

/*
 * Nonzero when `host`, the request's authority (its Host header, or the
 * target's authority in the absolute form; NULL for none), may reach a
 * server on loopback port `port`: it names a loopback address (127/8,
 * [::1]) or localhost, with that port: a web page elsewhere that rebinds its own
 * name to 127.0.0.1 (DNS rebinding) then cannot read the dashboard
 * through the operator's browser.  A name without a port means the
 * scheme's default, 80 (RFC 9110 4.2.1): accepted only when that is the
 * port we listen on, as it names some other server otherwise.
 */
int serve_host_ok(const char *host, unsigned port);

/* ---- drawings (serve_drawer.c, serve_nodes.c) ---------------------------- */

/*
 * What is made once per ring, off the HTTP thread: the ring's arcs, the
 * stretches where its views differ, each node's shares and the orders the
 * page lists nodes in, and the JSON of /overview.json's and /ring.json's
 * "ring" members.  Immutable once made; counted references.
 */
struct serve_drawing;
struct serve_drawer;

/* Starts the drawing thread; NULL without memory or a thread. */
struct serve_drawer *serve_drawer_start(void);
/* Stops it (at once: a drawing under way is dropped) and frees
 * everything.  Accepts NULL. */
void serve_drawer_stop(struct serve_drawer *dr);
/* Hands over the ring to draw next (retained), the `seq`th ring seen: a
 * ring waiting to be drawn is replaced. */
void serve_drawer_submit(struct serve_drawer *dr, const hr_ring *ring, uint64_t seq);
/* The newest drawing made (a reference), or NULL before the first.  With
 * `full`, the newest whose /ring.json member is made too, which may be an
 * older one while the newest is still being written. */
struct serve_drawing *serve_drawer_get(struct serve_drawer *dr, int full);
/* Whether the thread has a ring still to draw. */
int serve_drawer_busy(struct serve_drawer *dr);
void serve_drawing_release(struct serve_drawing *d);

const hr_ring *serve_drawing_ring(const struct serve_drawing *d);
uint64_t serve_drawing_seq(const struct serve_drawing *d);
/* /overview.json's "ring" member, and /ring.json's (only from a drawing
 * serve_drawer_get() gave with `full`). */
void serve_drawing_write_overview(const struct serve_drawing *d, FILE *out);
void serve_drawing_write_full(const struct serve_drawing *d, FILE *out);

/* How /nodes.json orders the nodes. */
enum serve_sort {
	SERVE_SORT_LOAD,    /* write share over fair share, most first */
	SERVE_SORT_SHARE,   /* write share, largest first             */
	SERVE_SORT_ID,      /* id                                    */
	SERVE_SORT_LOOKUPS, /* lookups per second, most first        */
	SERVE_SORT_COUNT
};
extern const char *const serve_sort_names[SERVE_SORT_COUNT];

#define SERVE_QUERY_MAX 256     /* bytes of q                  */
#define SERVE_NODES_LIMIT 50    /* rows of a page, by default  */
#define SERVE_NODES_LIMIT_MAX 1000

/* A /nodes.json query: the nodes whose id, addr or zone holds `q` (any
 * case; "" all), in `state` (-1: any), in `sort` order, rows offset to
 * offset + limit. */
struct serve_node_query {
	char q[SERVE_QUERY_MAX + 1];
	int state;
	enum serve_sort sort;
	size_t offset, limit;
};

/* The lookups a row shows: counts and rates per second (negative: no
 * rate yet).  Returns 0 for a node never looked up. */
typedef int (*serve_lookups_fn)(void *userdata, const char *id, uint64_t *write,
				uint64_t *read, double *write_per_s, double *read_per_s);

/*
 * Writes the members of /nodes.json after "{": the drawing's ring, the
 * nodes that match and the page of rows asked for, each with its lookups
 * (from `fn`, which SERVE_SORT_LOOKUPS sorts by).  Returns 0 or HR_ENOMEM.
 */
int serve_drawing_write_nodes(const struct serve_drawing *d, const struct serve_node_query *q,
			      serve_lookups_fn fn, void *userdata, FILE *out);

/* ---- the state (serve_state.c) ------------------------------------------- */

/*
 * The rings seen so far, newest last, at most `history_max` of them: each
 * with its revision, digest, time, moved shares and the node pairs that
 * moved the most (write view).  Filled on the watcher thread by
 * serve_on_change(), which hands each ring to the drawer, read by the HTTP
 * thread: one mutex.  Also the last sample of the client's lookup counts,
 * from which the rates come.
 */
struct serve_state;

/* NULL without memory or a thread for the drawer or the metrics;
 * `metrics` (kept; NULL: the defaults) are /metrics' options. */
struct serve_state *serve_state_new(size_t history_max, const hr_metrics_options *metrics);
void serve_state_free(struct serve_state *s);
/* The maker of /metrics that the state hands each ring to. */
struct serve_metrics *serve_state_metrics(struct serve_state *s);

/* An hr_ring_change_fn, with a serve_state as userdata. */
void serve_on_change(void *userdata, const hr_ring *old, const hr_ring *ring);

/*
 * The JSON answers (the formats are in docs/hashring.1, serve), from the
 * newest drawing and `client`'s status, lookups and hot keys.  Each
 * returns 200; 503 with the "no ring yet" object of serve_no_ring_json()
 * before the first ring is drawn; or 500 (HR_ENOMEM).
 *   /ring.json      everything, every node
 *   /status.json    what changes each second: status, lookups, hot keys,
 *                   and which ring is drawn
 *   /overview.json  the drawn ring as the page shows it, and the history
 *   /nodes.json     a page of nodes
 */
int serve_ring_json(struct serve_state *s, hr_client *client, FILE *out);
int serve_status_json(struct serve_state *s, hr_client *client, FILE *out);
int serve_overview_json(struct serve_state *s, hr_client *client, FILE *out);
int serve_nodes_json(struct serve_state *s, hr_client *client,
		     const struct serve_node_query *q, FILE *out);
/* What the answers above give (503) before the client's first ring, or
 * before it is drawn: version, time_ms and status, "ring": null and
 * "error". */
void serve_no_ring_json(hr_client *client, const char *error, FILE *out);

/* ---- /metrics (serve_metrics.c) -------------------------------------------- */

/*
 * The ring's part of /metrics (hr_ring_metrics_write()) made once per ring
 * on a thread of its own, and the client's part made per scrape: see
 * serve_metrics.c.  A part is immutable once made; counted references.
 */
struct serve_metrics;
struct serve_metrics_part;

/* Starts the thread; `opts` kept (NULL: the defaults).  NULL without
 * memory or a thread. */
struct serve_metrics *serve_metrics_start(const hr_metrics_options *opts);
/* Makes the writers stop at their next piece of output, from now on
 * (any thread); a scrape then fails.  Accepts NULL. */
void serve_metrics_halt(struct serve_metrics *m);
/* Halts, waits for the thread and frees everything.  Accepts NULL. */
void serve_metrics_stop(struct serve_metrics *m);
/* Hands over the ring to make the part of next (retained): a ring still
 * waiting is replaced. */
void serve_metrics_submit(struct serve_metrics *m, const hr_ring *ring);
/*
 * A scrape: writes the client's part to `out` and gives the newest ring
 * part made in *part (a reference; NULL before the first, the client's
 * part then holding the ring's families but the node_* ones), to be sent
 * after it.  Returns 0, or an HR_E* error (*part NULL; halted: HR_EIO).
 */
int serve_metrics_scrape(struct serve_metrics *m, hr_client *client, FILE *out,
			 struct serve_metrics_part **part);
const char *serve_metrics_part_text(const struct serve_metrics_part *p, size_t *len);
void serve_metrics_part_release(struct serve_metrics_part *p);

/* ---- lanes (serve_work.c) ------------------------------------------------ */

/*
 * A thread that runs jobs one after the other, off the HTTP thread.  A
 * job handed over is run, or cancelled if the lane stops first: exactly
 * one of the two, on the lane's thread or the stopping one.
 */
struct serve_job {
	struct serve_job *next; /* the lane's */
	void (*run)(struct serve_job *j);
	void (*cancel)(struct serve_job *j);
};
struct serve_lane;

/* NULL without memory or a thread. */
struct serve_lane *serve_lane_start(void);
/* Queues `j`: 0, or -1 once the lane stops (not taken). */
int serve_lane_submit(struct serve_lane *l, struct serve_job *j);
/* Whether the lane is stopping: a long job may end early. */
int serve_lane_stopping(const struct serve_lane *l);
/* Waits for the job under way and cancels those waiting; from then on
 * submit refuses jobs.  Accepts NULL. */
void serve_lane_stop(struct serve_lane *l);
/* Frees a stopped lane, once nothing submits to it.  Accepts NULL. */
void serve_lane_free(struct serve_lane *l);

/* ---- /lookup (serve_lookup.c) -------------------------------------------- */

#define SERVE_LOOKUP_KEY_MAX 4096     /* bytes of a key, decoded      */
#define SERVE_LOOKUP_REPLICAS 3       /* the preference list's length */
#define SERVE_LOOKUP_REPLICAS_MAX 64  /* ... at most                  */

struct MHD_Connection;

/*
 * Answers GET /lookup?key=K[&replicas=R] of connection `c`: looks K up
 * through `client` (counted as its lookups are) and writes its owners as
 * JSON to `out` (the format is in docs/hashring.1, serve).  Returns the
 * HTTP status: 200; else (400 for a bad query, 503 for a ring with no
 * node) a one-line message is in msg.
 */
int serve_lookup(hr_client *client, struct MHD_Connection *c, FILE *out, char *msg,
		 size_t msg_size);

/* ---- HTTP (serve_http.c) ----------------------------------------------------- */

struct serve_http_options {
	struct sockaddr_storage addr; /* where to listen               */
	socklen_t addr_len;
	int loopback;             /* check Host against loopback names  */
	unsigned max_connections; /* at once; more wait in the backlog  */
	unsigned timeout_s;       /* a connection idle this long closes */
	unsigned request_timeout_s; /* a request's line and headers must
				     arrive within this (serve_http_tick) */
	size_t memory_limit;      /* per connection: request line and
				     headers must fit (431 or 414 else)  */
};

struct serve_http;

/*
 * Starts serving GET and HEAD of "/", "/status.json", "/overview.json",
 * "/nodes.json", "/ring.json", "/metrics" and "/lookup" on one thread of
 * libmicrohttpd's, with two lanes that make the answers that cost more
 * (other methods: 405).  Returns NULL after an error line naming the
 * address.
 */
struct serve_http *serve_http_start(const struct serve_http_options *opts,
				    struct serve_state *state, hr_client *client,
				    const char *cmd);
/* Shuts down every connection that has waited longer than the request
 * timeout for a request's line and headers, since it opened or since its
 * last answer; call it a few times a second (any thread). */
void serve_http_tick(struct serve_http *h);
/* The port it listens on (for --listen ...:0). */
unsigned serve_http_port(const struct serve_http *h);
/* Stops: closes every connection and the listening socket.  Accepts NULL. */
void serve_http_stop(struct serve_http *h);

/* The page at "/", generated from serve_page.html at build time. */
extern const char serve_page[];
extern const size_t serve_page_len;

#endif
