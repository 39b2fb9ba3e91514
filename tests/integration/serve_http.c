/* SPDX-License-Identifier: MIT */
/* serve_http.c - `hashring serve` and raw HTTP for the dashboard suites. */
#define _GNU_SOURCE
#include "serve_http.h"
#include "hrt_ring.h"
#include "base64.h"
#include "etcd_fixture.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 60000

void hrt_serve_start(hrt_serve *s, const char *endpoints, const char *prefix,
		     const char *const *extra)
{
	const char *argv[48] = { "serve", "--listen", "127.0.0.1:0", "--endpoints", endpoints,
				 "--prefix", prefix, "--timeout", "30" };
	size_t n = 9;
	int64_t deadline = hrt_now_ms() + START_TIMEOUT_MS;
	char out[256];

	for (size_t i = 0; extra && extra[i] && n < 47; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	s->child = hrt_cli_spawn(argv, NULL);
	s->port = 0;
	while (hrt_now_ms() < deadline) {
		ssize_t got = pread(fileno(s->child.out), out, sizeof out - 1, 0);
		const char *p;

		out[got > 0 ? got : 0] = '\0';
		p = strstr(out, "serving http://127.0.0.1:");
		if (p && strchr(p, '\n')) {
			s->port = atoi(p + strlen("serving http://127.0.0.1:"));
			break;
		}
		hrt_sleep_ms(50);
	}
	if (!s->port) {
		char err[4096];

		hrt_cli_peek_err(&s->child, err, sizeof err);
		ck_abort_msg("hashring serve did not start listening; stderr: %s", err);
	}
}

void hrt_serve_stop(hrt_serve *s)
{
	hrt_cli_run run;

	kill(s->child.pid, SIGTERM);
	hrt_cli_wait(&s->child, &run);
	ck_assert_msg(run.status == 0, "serve exited %d (signal %d); stderr: %s", run.status,
		      run.signal, run.err);
	ck_assert_msg(!strstr(run.err, "Sanitizer") && !strstr(run.err, "runtime error"),
		      "serve's stderr: %s", run.err);
}

/* `text` as base64, at `out` (room for hr__base64_encoded_size()). */
static void b64(const char *text, char *out)
{
	hr__base64_encode(text, strlen(text), out);
}

#define PUTS_PER_TXN 128

void hrt_serve_put_nodes(const char *url, const char *prefix, int n, int warming)
{
	char txn_url[256];
	size_t cap = PUTS_PER_TXN * 512 + 64;
	char *body = malloc(cap);

	ck_assert_ptr_nonnull(body);
	snprintf(txn_url, sizeof txn_url, "%s/v3/kv/txn", url);
	for (int lo = 0; lo < n; lo += PUTS_PER_TXN) {
		size_t len = (size_t)snprintf(body, cap, "{\"success\":[");
		long status = 0;

		for (int i = lo; i < n && i < lo + PUTS_PER_TXN; i++) {
			char key[160], value[160], k64[256], v64[256];

			snprintf(key, sizeof key, "%snode-%06d", prefix, i);
			snprintf(value, sizeof value,
				 "{\"addr\":\"10.%d.%d.%d:11211\",\"zone\":\"z%d\"%s}",
				 (i >> 16) & 255, (i >> 8) & 255, i & 255, i % 4,
				 i == warming ? ",\"state\":\"warming\"" : "");
			b64(key, k64);
			b64(value, v64);
			len += (size_t)snprintf(body + len, cap - len,
						"%s{\"requestPut\":{\"key\":\"%s\",\"value\":\"%s\"}}",
						i > lo ? "," : "", k64, v64);
		}
		snprintf(body + len, cap - len, "]}");
		ck_assert_msg(hrt_http_post(txn_url, body, NULL, 0, &status) == 0 && status == 200,
			      "txn of nodes %d.. under %s: HTTP %ld", lo, prefix, status);
	}
	free(body);
}

int hrt_http_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct timeval tv = { 10, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0,
		      "cannot connect to 127.0.0.1:%d", port);
	return fd;
}

size_t hrt_http_read_all(int fd, char *buf, size_t max)
{
	size_t got = 0;
	ssize_t n;

	while (got + 1 < max && (n = recv(fd, buf + got, max - 1 - got, 0)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	return got;
}

static int status_of(const char *buf)
{
	int status = 0;

	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return 0;
	return status;
}

int hrt_http_raw(int port, const char *req, size_t len, char *buf, size_t max)
{
	int fd = hrt_http_connect(port);
	size_t sent = 0;

	/* The server may answer (and close) before it has read everything:
	 * a failed send is then part of the answer, not an error. */
	while (sent < len) {
		ssize_t n = send(fd, req + sent, len - sent, MSG_NOSIGNAL);

		if (n <= 0)
			break;
		sent += (size_t)n;
	}
	hrt_http_read_all(fd, buf, max);
	close(fd);
	return status_of(buf);
}

int hrt_http_request(int port, const char *method, const char *path, char *buf,
		     size_t max)
{
	char req[1024];
	int len = snprintf(req, sizeof req,
			   "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
			   method, path, port);

	return hrt_http_raw(port, req, (size_t)len, buf, max);
}

const char *hrt_http_body(const char *buf)
{
	const char *p = strstr(buf, "\r\n\r\n");

	return p ? p + 4 : NULL;
}
