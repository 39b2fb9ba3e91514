/*
 * serve.h - `hashring serve`: what the dashboard shows (serve_state.c) and
 * how it is served over HTTP (serve_http.c), apart from the command itself
 * (cmd_serve.c).
 */
#ifndef HR_CLI_SERVE_H
#define HR_CLI_SERVE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

#include "hashring.h"

/* ---- the state (serve_state.c) ------------------------------------------- */

/*
 * The rings seen so far, newest last, at most `history_max` of them: each
 * with its revision, digest, time, moved shares and the node pairs that
 * moved the most (write view).  Filled on the watcher thread by
 * serve_on_change(), read by the HTTP thread: one mutex.  Also the last
 * sample of the client's lookup counts, from which the rates come.
 */
struct serve_state;

struct serve_state *serve_state_new(size_t history_max);
void serve_state_free(struct serve_state *s);

/* An hr_ring_change_fn, with a serve_state as userdata. */
void serve_on_change(void *userdata, const hr_ring *old, const hr_ring *ring);

/*
 * Writes /ring.json for the ring `client` has now, its status, the
 * history, and the client's lookup counts, rates and hot keys to `out`.  The format is in docs/hashring.1 (serve).  Returns 0,
 * or HR_ENOMEM.
 */
int serve_ring_json(struct serve_state *s, hr_client *client, FILE *out);
/* What /ring.json and /lookup answer (503) before the client's first ring:
 * version, time_ms and status as above, "ring": null and "error". */
void serve_no_ring_json(hr_client *client, const char *error, FILE *out);

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
 * Starts serving GET and HEAD of "/", "/ring.json", "/metrics" and
 * "/lookup" on one
 * thread of libmicrohttpd's (other methods: 405).  Returns NULL after an
 * error line naming the address.
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
