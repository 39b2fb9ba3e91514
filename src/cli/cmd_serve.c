/* SPDX-License-Identifier: MIT */
/* cmd_serve.c - `hashring serve`: follows the ring and serves a live page
 * of it, /ring.json and /metrics, until SIGINT or SIGTERM. */
#include "cli.h"
#include "serve.h"
#include "clock.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "serve"
#define LISTEN_DEFAULT "127.0.0.1:9800"
/* The request line and headers of one request must fit in this (with
 * libmicrohttpd's own bookkeeping): browsers send 1-2 KiB. */
#define MEMORY_LIMIT (16 * 1024)

static const char description[] =
	"Follows the records under PREFIX and serves, over HTTP, until SIGINT or\n"
	"SIGTERM (exit 0):\n"
	"  /           a live page: the ring as a circle (arcs coloured by node,\n"
	"              the arcs warming nodes take over marked), the nodes per\n"
	"              state and zone, the most and least loaded, a page of nodes\n"
	"              (searched, sorted) with each one's share against its fair\n"
	"              share by weight, the revision, digest and staleness, the\n"
	"              last rings with what moved, and the lookup rates and hot\n"
	"              keys of /lookup; it polls /status.json every second and\n"
	"              loads nothing from elsewhere\n"
	"  /status.json, /overview.json, /nodes.json\n"
	"              what the page shows, as JSON\n"
	"  /ring.json  all of it, every node, as JSON\n"
	"  /metrics    the Prometheus metrics of the client (hashring metrics)\n"
	"  /lookup?key=K[&replicas=R]\n"
	"              K's owners and preference list of R (default 3), as JSON\n"
	"GET and HEAD only (others: 405).  Each ring is drawn once, on a thread\n"
	"of its own: until then the answers show the ring before.  It listens\n"
	"at once, before etcd answers: until the first ring the page and the\n"
	"JSON paths say why there is none (503).  It listens on loopback unless\n"
	"--allow-remote is given; port 0 takes a free one.  Once listening it\n"
	"prints `serving http://ADDRESS:PORT/` on stdout.  With --client-id, each\n"
	"ring is also acknowledged for `hashring acks`, as by `hashring watch`.";

struct listen_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	int loopback;
};

/* "HOST:PORT": an IPv4 address, [IPv6] or localhost, and a port. */
static int parse_listen(const char *text, struct listen_addr *out)
{
	const char *colon = strrchr(text, ':');
	char host[INET6_ADDRSTRLEN + 2];
	size_t hlen;
	unsigned long port;
	char *end;

	memset(out, 0, sizeof *out);
	if (!colon || colon == text || !colon[1])
		return cli_usage(CMD, "--listen wants HOST:PORT (got \"%s\")", text);
	port = strtoul(colon + 1, &end, 10);
	if (*end || port > 65535 || colon[1] < '0' || colon[1] > '9')
		return cli_usage(CMD, "--listen: bad port \"%s\" (0 to 65535)", colon + 1);
	hlen = (size_t)(colon - text);
	if (hlen >= sizeof host)
		return cli_usage(CMD, "--listen: bad address \"%.*s\"", (int)hlen, text);
	memcpy(host, text, hlen);
	host[hlen] = '\0';
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	if (host[0] == '[' && host[hlen - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->ss;

		host[hlen - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
			return cli_usage(CMD, "--listen: bad IPv6 address \"%s\"", host + 1);
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		out->len = sizeof *a;
		out->loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&out->ss;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return cli_usage(CMD, "--listen: bad address \"%s\" (an IPv4 address, [IPv6] or localhost)",
					 host);
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		out->len = sizeof *a;
		out->loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	return 0;
}

static void print_serving(const struct listen_addr *l, unsigned port)
{
	char addr[INET6_ADDRSTRLEN] = "?";

	if (l->ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&l->ss)->sin6_addr, addr,
			  sizeof addr);
		fprintf(cli_out(), "serving http://[%s]:%u/\n", addr, port);
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)&l->ss)->sin_addr, addr,
			  sizeof addr);
		fprintf(cli_out(), "serving http://%s:%u/\n", addr, port);
	}
	cli_out_flush();
}

/* The main thread's wait between two ticks: the request deadline's
 * granularity. */
#define TICK_MS 250

/*
 * Until the first ring: 0 while the watcher keeps trying (once the
 * --timeout is over, one warning line says why there is none yet), else
 * the exit code after the error line of a failure that no retry mends
 * (credentials, TLS, permissions).
 */
static int first_ring(struct cli_etcd *conn, hr_client *client, int64_t started,
		      int *synced, int *warned)
{
	hr_error err = { 0 };
	int rc = hr_client_wait_synced(client, 0, &err);

	if (rc == 0) {
		*synced = 1;
		return 0;
	}
	if (rc != HR_ETIMEDOUT && rc != HR_ENOMEM)
		return cli_fail(CMD, rc, &err);
	if (!*warned && conn->timeout_s &&
	    hr__now_ms() - started >= (int64_t)conn->timeout_s * 1000) {
		cli_warn(CMD, "%s; serving meanwhile, the page says so", err.message);
		*warned = 1;
	}
	return 0;
}

static int serve(struct cli_etcd *conn, const struct listen_addr *l,
		 unsigned long max_conn, unsigned long timeout_s,
		 unsigned long request_timeout_s, unsigned long history,
		 const hr_metrics_options *metrics)
{
	struct serve_state *state = serve_state_new(history, metrics);
	struct serve_http_options hopts = { 0 };
	struct serve_http *http = NULL;
	hr_client_config cfg;
	hr_client *client = NULL;
	int64_t started = hr__now_ms();
	int synced = 0, warned = 0;
	sigset_t set;
	int rc;

	if (!state)
		return cli_fail(CMD, HR_ENOMEM, NULL);
	/* Before any thread starts (the watcher's, the server's): only the
	 * wait below takes the signals. */
	cli_signals_block(&set);
	hr_client_config_init(&cfg);
	cfg.on_change = serve_on_change;
	cfg.on_change_userdata = state;
	/* Its lookups are the operator's /lookup requests, each costing far
	 * more than a sample: sample them all, so its hot keys are exact. */
	cfg.hot_key_sample = 1;
	cli_ack_config(conn, &cfg);
	/* Listening at once, etcd or not: until the first ring the page and
	 * /ring.json say why there is none (serve_http.c). */
	rc = cli_etcd_start(conn, CMD, &cfg, &client);
	if (rc)
		goto out;
	hopts.addr = l->ss;
	hopts.addr_len = l->len;
	hopts.loopback = l->loopback;
	hopts.max_connections = (unsigned)max_conn;
	hopts.timeout_s = (unsigned)timeout_s;
	hopts.request_timeout_s = (unsigned)request_timeout_s;
	hopts.memory_limit = MEMORY_LIMIT;
	http = serve_http_start(&hopts, state, client, CMD);
	if (!http) {
		rc = CLI_EXIT_ERROR;
		goto out;
	}
	print_serving(l, serve_http_port(http));
	for (;;) {
		struct timespec ts = { 0, TICK_MS * 1000000L };
		int sig = sigtimedwait(&set, NULL, &ts);

		if (sig == SIGINT || sig == SIGTERM)
			break;
		serve_http_tick(http);
		if (!synced && (rc = first_ring(conn, client, started, &synced, &warned)))
			goto out;
	}
	rc = CLI_EXIT_OK;
out:
	/* The server first: its requests read the client. */
	serve_http_stop(http);
	hr_client_close(client);
	serve_state_free(state);
	return rc;
}

int cmd_serve(int argc, char **argv)
{
	const char *listen = LISTEN_DEFAULT;
	unsigned long max_conn = 64, timeout_s = 10, request_timeout_s = 10, history = 16;
	int allow_remote = 0, rc;
	struct listen_addr l;
	struct cli_etcd conn;
	struct cli_metrics m;

	cli_metrics_init(&m);
	cli_etcd_init(&conn, HR_LOG_INFO);
	const struct cli_option options[] = {
		{ .name = "listen", .arg = "HOST:PORT", .type = CLI_STRING, .dest = &listen,
		  .flags = CLI_NONEMPTY,
		  .help = "address to serve on: an IPv4 address, [IPv6] or localhost, and a"
			  " port (0: any free one)" },
		{ .name = "allow-remote", .type = CLI_FLAG, .dest = &allow_remote,
		  .help = "allow a --listen address that is not loopback (the page and"
			  " metrics have no authentication)" },
		{ .name = "max-connections", .arg = "N", .type = CLI_UINT, .dest = &max_conn,
		  .min = 1, .max = 1024,
		  .help = "connections served at once; more wait in the kernel's backlog"
			  " until one closes" },
		{ .name = "http-timeout", .arg = "SECONDS", .type = CLI_UINT, .dest = &timeout_s,
		  .min = 1, .max = 3600,
		  .help = "a connection idle (or too slow) this long is closed" },
		{ .name = "request-timeout", .arg = "SECONDS", .type = CLI_UINT,
		  .dest = &request_timeout_s, .min = 1, .max = 3600,
		  .help = "a request's line and headers must arrive within this, from"
			  " the connection's start or its previous answer" },
		{ .name = "history", .arg = "N", .type = CLI_UINT, .dest = &history,
		  .min = 1, .max = 1024, .help = "rings kept for the page's history" },
		CLI_METRICS_OPTIONS(&m),
		CLI_ACK_OPTIONS(&conn),
		CLI_RING_OPTIONS(&conn),
		CLI_ETCD_OPTIONS(&conn, CLI_TIMEOUT_SERVE),
		{ .name = NULL }
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " [--listen HOST:PORT [--allow-remote]] [--endpoints URLS] [--prefix P]"
			 " [--client-id ID [--ack-prefix ACK_PREFIX] [--ack-ttl S]]",
		.description = description,
		.options = options,
	};

	rc = cli_parse(&spec, argc, argv);
	if (rc != CLI_RUN)
		goto out;
	rc = cli_ack_options_check(&conn, CMD);
	if (!rc)
		rc = parse_listen(listen, &l);
	if (!rc)
		rc = cli_metrics_check(&m, CMD);
	if (rc)
		goto out;
	if (!l.loopback && !allow_remote) {
		rc = cli_usage(CMD, "--listen %s is not a loopback address: add --allow-remote"
			       " to serve the cluster's layout to the network", listen);
		goto out;
	}
	if (!l.loopback)
		cli_warn(CMD, "serving on %s, beyond this host, without authentication:"
			 " anyone who reaches it sees the ring and the metrics", listen);
	rc = serve(&conn, &l, max_conn, timeout_s, request_timeout_s, history, &m.opts);
out:
	cli_metrics_free(&m);
	cli_etcd_free(&conn);
	return rc;
}
