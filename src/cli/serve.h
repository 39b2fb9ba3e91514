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
 * serve_on_change(), read by the HTTP thread: one mutex.
 */
struct serve_state;

struct serve_state *serve_state_new(size_t history_max);
void serve_state_free(struct serve_state *s);

/* An hr_ring_change_fn, with a serve_state as userdata. */
void serve_on_change(void *userdata, const hr_ring *old, const hr_ring *ring);

/*
 * Writes /ring.json for the ring `client` has now, its status and the
 * history to `out`.  The format is in docs/hashring.1 (serve).  Returns 0,
 * or HR_ENOMEM.
 */
int serve_ring_json(struct serve_state *s, hr_client *client, FILE *out);

/* ---- HTTP (serve_http.c) ----------------------------------------------------- */

struct serve_http_options {
	struct sockaddr_storage addr; /* where to listen               */
	socklen_t addr_len;
	int loopback;             /* check Host against loopback names  */
	unsigned max_connections; /* at once; more wait in the backlog  */
	unsigned timeout_s;       /* a connection idle this long closes */
	size_t memory_limit;      /* per connection: request line and
				     headers must fit (431 or 414 else)  */
};

struct serve_http;

/*
 * Starts serving GET and HEAD of "/", "/ring.json" and "/metrics" on one
 * thread of libmicrohttpd's (other methods: 405).  Returns NULL after an
 * error line naming the address.
 */
struct serve_http *serve_http_start(const struct serve_http_options *opts,
				    struct serve_state *state, hr_client *client,
				    const char *cmd);
/* The port it listens on (for --listen ...:0). */
unsigned serve_http_port(const struct serve_http *h);
/* Stops: closes every connection and the listening socket.  Accepts NULL. */
void serve_http_stop(struct serve_http *h);

/* The page at "/", generated from serve_page.html at build time. */
extern const char serve_page[];
extern const size_t serve_page_len;

#endif
