/* SPDX-License-Identifier: MIT */
/* serve_http.h - the dashboard suites' helpers: `hashring serve` started
 * against the fixture's etcd, and raw HTTP over loopback sockets, so that
 * a test can send what no HTTP client library would (garbage, half a
 * request, a megabyte of headers). */
#ifndef HRT_SERVE_HTTP_H
#define HRT_SERVE_HTTP_H

#include "hrt_cli.h"

#include <stddef.h>

typedef struct hrt_serve {
	hrt_child child;
	int port;
} hrt_serve;

/* Starts `hashring serve --listen 127.0.0.1:0 --endpoints EPS --prefix
 * PREFIX` plus `extra` (NULL-terminated, may be NULL) and waits (bounded)
 * for its "serving http://127.0.0.1:PORT/" line. */
void hrt_serve_start(hrt_serve *s, const char *endpoints, const char *prefix,
		     const char *const *extra);
/* SIGTERM, then waits: the exit status must be 0 with nothing on stderr
 * but log lines (a sanitizer's report fails it). */
void hrt_serve_stop(hrt_serve *s);

/*
 * Puts `n` node records under `prefix` through member `url`'s gateway, in
 * transactions of 128 puts (etcd's default limit), some ten thousand a
 * second: PREFIX node-000000, node-000001... with addresses
 * 10.x.y.z:11211, zones z0 to z3, and node number `warming` (-1: none)
 * warming.
 */
void hrt_serve_put_nodes(const char *url, const char *prefix, int n, int warming);

/* A connected loopback socket to `port`, with 10 s send and receive
 * timeouts. */
int hrt_http_connect(int port);
/* Reads until the peer closes, `max` - 1 bytes or the receive timeout;
 * returns the bytes read, NUL-terminated in buf. */
size_t hrt_http_read_all(int fd, char *buf, size_t max);
/* Sends `len` bytes of `req` on a new connection and reads the answer to
 * the end into buf (see hrt_http_read_all); returns its HTTP status, 0
 * without one. */
int hrt_http_raw(int port, const char *req, size_t len, char *buf, size_t max);
/* GET (or `method`) of `path` with Connection: close and a good Host. */
int hrt_http_request(int port, const char *method, const char *path, char *buf,
		     size_t max);
/* The body of an answer in buf (after the blank line), or NULL. */
const char *hrt_http_body(const char *buf);

#endif
