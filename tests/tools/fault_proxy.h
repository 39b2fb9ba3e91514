/* SPDX-License-Identifier: MIT */
/*
 * fault_proxy.h - a loopback TCP proxy for fault tests, run by a thread
 * inside the test process.
 *
 * The client under test talks to hrt_proxy_url() instead of etcd; the proxy
 * forwards every connection to 127.0.0.1:<upstream port> and misbehaves on
 * demand, switched at run time from the test's thread:
 *
 *   pass      forward bytes both ways (the default)
 *   cut       close connections after N more bytes of the server's reply,
 *             wherever that falls (mid-header, mid-chunk, mid-message)
 *   stall     stop forwarding in both directions, connections kept open:
 *             a hung peer or a black-holed network
 *   trickle   forward one byte at a time, a pause between bytes, so every
 *             message reaches the client in many reads
 *   refuse    close every connection and each new one at once: a host that
 *             is down (returning to pass lets new connections through)
 *   inject    write a chunk of the test's choosing into every open watch
 *             stream, between two of the server's chunks (the framing of the
 *             chunked reply stays valid): a gateway error body, or any
 *             hostile message
 *
 * Every switch takes effect before the call returns.  Only 127.0.0.1 is
 * used.  Functions return 0 or -1 (with the reason on stderr), like the
 * etcd fixture.  One proxy per upstream; start as many as needed.
 */
#ifndef HRT_FAULT_PROXY_H
#define HRT_FAULT_PROXY_H

#include <stddef.h>
#include <stdint.h>

typedef struct hrt_proxy hrt_proxy;

typedef struct hrt_proxy_stats {
	uint64_t accepted;      /* client connections accepted             */
	uint64_t refused;       /* ... closed at once (refuse, no upstream) */
	uint64_t cut;           /* connections closed by a cut             */
	uint64_t injected;      /* chunks written into watch streams       */
	uint64_t bytes_down;    /* server-to-client bytes forwarded        */
	uint64_t bytes_up;      /* client-to-server bytes forwarded        */
	uint64_t watch_streams; /* connections that carried a watch        */
} hrt_proxy_stats;

/* Listens on a free 127.0.0.1 port and forwards to 127.0.0.1:`port`. */
hrt_proxy *hrt_proxy_start(int upstream_port);
/* Stops the thread, closes every socket, frees.  Accepts NULL. */
void hrt_proxy_stop(hrt_proxy *p);

/* "http://127.0.0.1:PORT" of the proxy, and the port alone. */
const char *hrt_proxy_url(const hrt_proxy *p);
int hrt_proxy_port(const hrt_proxy *p);

/* Points new connections at another upstream port. */
int hrt_proxy_set_upstream(hrt_proxy *p, int port);

int hrt_proxy_pass(hrt_proxy *p);
/* Every connection, open or new, is closed after `n` more reply bytes
 * (n = 0 closes the open ones at once) until another mode is set. */
int hrt_proxy_cut(hrt_proxy *p, size_t n);
/* Only the connections open now are closed after `n` more reply bytes;
 * the mode is unchanged, new connections pass. */
int hrt_proxy_cut_once(hrt_proxy *p, size_t n);
int hrt_proxy_stall(hrt_proxy *p);
/* One byte per `delay_us` microseconds per direction and connection. */
int hrt_proxy_trickle(hrt_proxy *p, unsigned delay_us);
int hrt_proxy_refuse(hrt_proxy *p);

/*
 * Queues `body` (a '\n' is appended) as one chunk into every watch stream
 * open now, at its next chunk boundary; returns how many streams will get
 * it (0 if none is open), or -1.  hrt_proxy_stats().injected counts the
 * chunks actually written.
 */
int hrt_proxy_inject(hrt_proxy *p, const char *body);

/* A copy of the counters. */
hrt_proxy_stats hrt_proxy_get_stats(hrt_proxy *p);

#endif
