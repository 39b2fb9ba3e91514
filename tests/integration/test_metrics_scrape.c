/* SPDX-License-Identifier: MIT */
/* test_metrics_scrape.c - a real Prometheus scrapes a client's metrics.
 *
 * A client follows a real etcd; the test serves hr_client_metrics_write()
 * at /metrics with libmicrohttpd on a free loopback port; a Prometheus
 * (Debian's /usr/bin/prometheus) started in a temporary directory on
 * another one scrapes it every second.  Its HTTP API must then give back
 * the ring's revision, the target up, and label values exactly as the
 * library meant them: quotes, backslashes and newlines unescaped, invalid
 * UTF-8 as U+FFFD.  Prometheus is stopped by PID, and dies with the test
 * (PR_SET_PDEATHSIG) if the test dies first.  `hashring serve`'s /metrics,
 * with each of its options, passes `promtool check metrics`. */
#define _GNU_SOURCE
#include "etcd_fixture.h"
#include "hrt_ring.h"
#include "hrt_check.h"
#include "serve_http.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef HR_PROMETHEUS
#define HR_PROMETHEUS "prometheus"
#endif
#ifndef HR_PROMTOOL
#define HR_PROMTOOL "promtool"
#endif

#define PREFIX "/scrape/nodes/"
/* Under ASan on a busy machine Prometheus takes a while to come up. */
#define READY_TIMEOUT_MS 90000
#define SCRAPE_TIMEOUT_MS 60000

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the endpoint: libmicrohttpd over hr_client_metrics_write ------------ */

typedef struct endpoint {
	struct MHD_Daemon *daemon;
	hr_client *client;
	const hr_metrics_options *opts;
	atomic_int scrapes;
	int port;
} endpoint;

typedef struct text {
	char *data;
	size_t len, cap;
} text;

static int text_write(void *userdata, const char *data, size_t len)
{
	text *t = userdata;

	hrt_text_append(&t->data, &t->len, &t->cap, data, len);
	return 0;
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
			     const char *method, const char *version,
			     const char *upload_data, size_t *upload_data_size,
			     void **req_cls)
{
	endpoint *ep = cls;
	struct MHD_Response *resp;
	text t = { 0 };
	unsigned status = MHD_HTTP_OK;
	enum MHD_Result r;
	hr_error err = { 0 };

	if (strcmp(method, "GET") || strcmp(url, "/metrics")) {
		status = MHD_HTTP_NOT_FOUND;
		hrt_text_append(&t.data, &t.len, &t.cap, "not found\n", 10);
	} else if (hr_client_metrics_write(ep->client, text_write, &t, ep->opts, &err)) {
		/* Half an exposition is never sent. */
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		t.len = 0;
		hrt_text_append(&t.data, &t.len, &t.cap, err.message, strlen(err.message));
	} else {
		atomic_fetch_add(&ep->scrapes, 1);
	}
	resp = MHD_create_response_from_buffer(t.len, t.data, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				status == MHD_HTTP_OK ? HR_METRICS_CONTENT_TYPE : "text/plain");
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static void endpoint_start(endpoint *ep)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = 0;
	ep->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0,
				      NULL, NULL, serve, ep,
				      MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				      MHD_OPTION_END);
	ck_assert_msg(ep->daemon, "libmicrohttpd did not start on 127.0.0.1");
	ep->port = MHD_get_daemon_info(ep->daemon, MHD_DAEMON_INFO_BIND_PORT)->port;
	ck_assert_int_gt(ep->port, 0);
}

/* ---- HTTP GET, for Prometheus's API ---------------------------------------- */

static size_t curl_collect(char *p, size_t size, size_t n, void *userdata)
{
	text *t = userdata;

	hrt_text_append(&t->data, &t->len, &t->cap, p, size * n);
	return size * n;
}

/* GET `url`; the HTTP status (0: no answer), the body in *body (to free). */
static long http_get(const char *url, char **body)
{
	CURL *h = curl_easy_init();
	text t = { 0 };
	long status = 0;

	ck_assert_ptr_nonnull(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	hrt_text_append(&t.data, &t.len, &t.cap, "", 0);
	*body = t.data;
	return status;
}

/* ---- Prometheus --------------------------------------------------------------- */

typedef struct prom {
	char dir[64];
	char base[64];    /* http://127.0.0.1:PORT */
	pid_t pid;
} prom;

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	ck_assert_int_ge(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static void prom_log_tail(const prom *p)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "tail -n 30 %s/prometheus.log >&2", p->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "(no Prometheus log)\n");
}

/* Starts Prometheus scraping 127.0.0.1:target_port/metrics every second,
 * and waits until it is ready. */
static void prom_start(prom *p, int target_port)
{
	char path[128], listen_arg[64], config_arg[160], data_arg[160], *body = NULL;
	int64_t deadline;
	FILE *f;

	ck_assert_msg(access(HR_PROMETHEUS, X_OK) == 0,
		      "prometheus not found at %s: install Debian's prometheus package"
		      " (deploy/install-deps.sh --tests)", HR_PROMETHEUS);
	snprintf(p->dir, sizeof p->dir, "%s/hrt-prom-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(p->dir));
	snprintf(path, sizeof path, "%s/prometheus.yml", p->dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "global:\n"
		   "  scrape_interval: 1s\n"
		   "  scrape_timeout: 1s\n"
		   "scrape_configs:\n"
		   "  - job_name: hashring\n"
		   "    static_configs:\n"
		   "      - targets: ['127.0.0.1:%d']\n", target_port);
	ck_assert_int_eq(fclose(f), 0);

	snprintf(listen_arg, sizeof listen_arg, "--web.listen-address=127.0.0.1:%d", free_port());
	snprintf(p->base, sizeof p->base, "http://%s", strchr(listen_arg, '=') + 1);
	snprintf(config_arg, sizeof config_arg, "--config.file=%s", path);
	snprintf(data_arg, sizeof data_arg, "--storage.tsdb.path=%s/data", p->dir);
	p->pid = fork();
	ck_assert_int_ge(p->pid, 0);
	if (p->pid == 0) {
		char log[128];
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(log, sizeof log, "%s/prometheus.log", p->dir);
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(HR_PROMETHEUS, "prometheus", config_arg, data_arg, listen_arg,
		      "--log.level=warn", (char *)NULL);
		_exit(127);
	}
	deadline = now_ms() + READY_TIMEOUT_MS;
	snprintf(path, sizeof path, "%s/-/ready", p->base);
	for (;;) {
		long status = http_get(path, &body);
		int wstatus;

		free(body);
		if (status == 200)
			return;
		if (waitpid(p->pid, &wstatus, WNOHANG) == p->pid) {
			p->pid = 0;
			prom_log_tail(p);
			ck_abort_msg("prometheus exited before it was ready (status %d)", wstatus);
		}
		if (now_ms() > deadline) {
			prom_log_tail(p);
			ck_abort_msg("prometheus not ready after %d ms", READY_TIMEOUT_MS);
		}
		usleep(200 * 1000);
	}
}

/* Stops Prometheus by PID (SIGTERM, then SIGKILL after 10 s) and removes
 * its directory. */
static void prom_stop(prom *p)
{
	char cmd[128];
	int64_t deadline = now_ms() + 10000;

	if (p->pid > 0) {
		kill(p->pid, SIGTERM);
		while (waitpid(p->pid, NULL, WNOHANG) == 0) {
			if (now_ms() > deadline) {
				kill(p->pid, SIGKILL);
				waitpid(p->pid, NULL, 0);
				break;
			}
			usleep(50 * 1000);
		}
		p->pid = 0;
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", p->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", p->dir);
}

/* The result vector of an instant query `q`, once it has at least one
 * sample (polled until then); NULL after SCRAPE_TIMEOUT_MS.  The caller
 * frees *doc, which holds the result. */
static cJSON *prom_query(const prom *p, const char *q, cJSON **doc)
{
	int64_t deadline = now_ms() + SCRAPE_TIMEOUT_MS;
	CURL *h = curl_easy_init();
	char *esc = curl_easy_escape(h, q, 0), url[1024], *body = NULL;

	snprintf(url, sizeof url, "%s/api/v1/query?query=%s", p->base, esc);
	curl_free(esc);
	curl_easy_cleanup(h);
	for (;;) {
		long status = http_get(url, &body);
		cJSON *result;

		*doc = cJSON_Parse(body);
		result = cJSON_GetObjectItem(cJSON_GetObjectItem(*doc, "data"), "result");
		if (status == 200 && cJSON_GetArraySize(result) > 0) {
			free(body);
			return result;
		}
		cJSON_Delete(*doc);
		*doc = NULL;
		if (now_ms() > deadline) {
			fprintf(stderr, "query %s: HTTP %ld: %s\n", q, status, body);
			free(body);
			prom_log_tail(p);
			return NULL;
		}
		free(body);
		usleep(250 * 1000);
	}
}

/* The value of sample `i` of a query result, as Prometheus gives it. */
static const char *sample_value(cJSON *result, int i)
{
	cJSON *v = cJSON_GetObjectItem(cJSON_GetArrayItem(result, i), "value");

	return cJSON_GetStringValue(cJSON_GetArrayItem(v, 1));
}

static const char *sample_label(cJSON *result, int i, const char *name)
{
	cJSON *m = cJSON_GetObjectItem(cJSON_GetArrayItem(result, i), "metric");

	return cJSON_GetStringValue(cJSON_GetObjectItem(m, name));
}

START_TEST(prometheus_scrapes_a_client)
{
	static const hr_metrics_label labels[] = { { "client", "c\"1\\\nx\xfe" } };
	const hr_metrics_options opts = { .size = sizeof opts, .labels = labels,
					  .label_count = 1 };
	hrt_etcd_cluster *etcd = hrt_etcd_start(1, NULL);
	hr_etcd_config cfg;
	endpoint ep = { .opts = &opts };
	prom p = { .pid = 0 };
	cJSON *doc, *result;
	char want[32];
	int64_t rev;
	hr_error err = { 0 };

	ck_assert_ptr_nonnull(etcd);
	ck_assert_int_gt(hrt_put(hrt_etcd_client_url(etcd, 0), PREFIX "a",
				 "{\"addr\":\"127.0.0.1:7001\",\"zone\":\"z\\\\1\"}"), 0);
	/* A bare address: its bytes as they are, a quote, a backslash and one
	 * that is not UTF-8 among them. */
	rev = hrt_put(hrt_etcd_client_url(etcd, 0), PREFIX "b\"q", "h\"q\\z\xfe:1");
	ck_assert_int_gt(rev, 0);
	hr_etcd_config_init(&cfg);
	cfg.endpoints = hrt_etcd_endpoints(etcd);
	cfg.prefix = PREFIX;
	ck_assert_msg(hr_client_open(&cfg, NULL, &ep.client, &err) == 0, "%s", err.message);
	ck_assert_int_eq(hrt_wait_converged(ep.client, cfg.endpoints, PREFIX, 30000), 0);

	endpoint_start(&ep);
	prom_start(&p, ep.port);

	result = prom_query(&p, "up{job=\"hashring\"} == 1", &doc);
	ck_assert_msg(result, "the target never came up");
	cJSON_Delete(doc);

	result = prom_query(&p, "hashring_ring_revision", &doc);
	ck_assert_msg(result, "no hashring_ring_revision in Prometheus");
	snprintf(want, sizeof want, "%lld", (long long)rev);
	ck_assert_str_eq(sample_value(result, 0), want);
	ck_assert_str_eq(sample_label(result, 0, "client"), "c\"1\\\nx\xef\xbf\xbd");
	ck_assert_str_eq(sample_label(result, 0, "job"), "hashring");
	cJSON_Delete(doc);

	result = prom_query(&p, "hashring_node_info{node=\"b\\\"q\"}", &doc);
	ck_assert_msg(result, "no hashring_node_info of node b\"q");
	ck_assert_str_eq(sample_label(result, 0, "addr"), "h\"q\\z\xef\xbf\xbd:1");
	/* An empty label value is no label, to Prometheus. */
	ck_assert_ptr_null(sample_label(result, 0, "zone"));
	cJSON_Delete(doc);

	result = prom_query(&p, "hashring_node_info{node=\"a\"}", &doc);
	ck_assert_msg(result, "no hashring_node_info of node a");
	ck_assert_str_eq(sample_label(result, 0, "zone"), "z\\1");
	cJSON_Delete(doc);

	result = prom_query(&p, "sum(hashring_node_share_ratio{view=\"write\"})", &doc);
	ck_assert_msg(result, "no shares");
	ck_assert_double_eq_tol(strtod(sample_value(result, 0), NULL), 1.0, 1e-9);
	cJSON_Delete(doc);
	ck_assert_int_gt(atomic_load(&ep.scrapes), 0);

	prom_stop(&p);
	MHD_stop_daemon(ep.daemon);
	hr_client_close(ep.client);
	hrt_etcd_destroy(etcd);
}
END_TEST

/* ---- hashring serve's /metrics, by promtool ----------------------------- */

#define SERVE_PREFIX "/scrape/serve/"
#define SERVE_NODES 200
#define EXPOSITION_MAX (4 << 20)

/* `promtool check metrics` of `expo`: its exit status, its complaints in
 * `out`. */
static int promtool_check(const char *expo, char *out, size_t outlen)
{
	char path[64], cmd[256];
	FILE *f, *p;
	size_t got;
	int fd, status;

	snprintf(path, sizeof path, "%s/hrt-expo-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(expo, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(cmd, sizeof cmd, "%s check metrics < %s 2>&1", HR_PROMTOOL, path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	got = fread(out, 1, outlen - 1, p);
	out[got] = '\0';
	status = pclose(p);
	unlink(path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Sample lines of `expo` (not comments) that start with `name`. */
static int samples_of(const char *expo, const char *name)
{
	int n = 0;

	for (const char *p = expo; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
		n += !strncmp(p, name, strlen(name));
	return n;
}

/* serve's /metrics after a few lookups, with `extra` options, checked by
 * promtool; the body in buf. */
static void serve_scrape(hrt_etcd_cluster *etcd, const char *const *extra, char *buf)
{
	char out[4096];
	const char *body;
	hrt_serve s;
	int64_t deadline = now_ms() + 60000;
	int rc;

	hrt_serve_start(&s, hrt_etcd_endpoints(etcd), SERVE_PREFIX, extra);
	while (hrt_http_request(s.port, "GET", "/lookup?key=k", buf, EXPOSITION_MAX) != 200) {
		ck_assert_msg(now_ms() < deadline, "serve has no ring after 60 s");
		usleep(50 * 1000);
	}
	for (int i = 0; i < 20; i++) {
		char path[64];

		snprintf(path, sizeof path, "/lookup?key=%s-%d", i % 2 ? "hot" : "cold", i % 2 ? 0 : i);
		ck_assert_int_eq(hrt_http_request(s.port, "GET", path, buf, EXPOSITION_MAX), 200);
	}
	ck_assert_int_eq(hrt_http_request(s.port, "GET", "/metrics", buf, EXPOSITION_MAX), 200);
	hrt_serve_stop(&s);
	body = hrt_http_body(buf);
	ck_assert_ptr_nonnull(body);
	memmove(buf, body, strlen(body) + 1);
	rc = promtool_check(buf, out, sizeof out);
	ck_assert_msg(rc == 0, "promtool check metrics: exit %d: %s", rc, out);
}

START_TEST(promtool_checks_serve_metrics)
{
	static const char *const omit_nodes[] = { "--omit-nodes", NULL };
	static const char *const omit_lookups[] = { "--omit-lookups", NULL };
	static const char *const omit_both[] = { "--omit-nodes", "--omit-lookups", NULL };
	static const char *const named[] = { "--name-prefix", "app_", "--label", "instance=d\"1",
					     "--label", "env=", NULL };
	hrt_etcd_cluster *etcd = hrt_etcd_start(1, NULL);
	char *buf = malloc(EXPOSITION_MAX);

	ck_assert_msg(access(HR_PROMTOOL, X_OK) == 0,
		      "promtool not found at %s: install Debian's prometheus package"
		      " (deploy/install-deps.sh --tests)", HR_PROMTOOL);
	ck_assert_ptr_nonnull(etcd);
	ck_assert_ptr_nonnull(buf);
	hrt_serve_put_nodes(hrt_etcd_client_url(etcd, 0), SERVE_PREFIX, SERVE_NODES, 5);

	serve_scrape(etcd, NULL, buf);
	ck_assert_int_eq(samples_of(buf, "hashring_node_state{"), 3 * SERVE_NODES);
	ck_assert_int_eq(samples_of(buf, "hashring_node_lookups_total{"), 2 * SERVE_NODES);
	ck_assert_int_gt(samples_of(buf, "hashring_hot_key_share_ratio{"), 0);

	serve_scrape(etcd, omit_lookups, buf);
	ck_assert_int_eq(samples_of(buf, "hashring_node_info{"), SERVE_NODES);
	ck_assert_int_eq(samples_of(buf, "hashring_node_lookups_total"), 0);

	serve_scrape(etcd, omit_nodes, buf);
	ck_assert_int_eq(samples_of(buf, "hashring_node_"), 2 * SERVE_NODES); /* lookups */
	ck_assert_int_eq(samples_of(buf, "hashring_node_info"), 0);

	serve_scrape(etcd, omit_both, buf);
	ck_assert_int_eq(samples_of(buf, "hashring_node_"), 0);
	ck_assert_int_gt(samples_of(buf, "hashring_ring_revision "), 0);

	serve_scrape(etcd, named, buf);
	ck_assert_int_eq(samples_of(buf, "hashring_"), 0);
	ck_assert_int_eq(samples_of(buf, "app_hashring_ring_revision{instance=\"d\\\"1\",env=\"\"} "), 1);
	ck_assert_int_eq(samples_of(buf, "app_hashring_node_state{instance=\"d\\\"1\",env=\"\",node="),
			 3 * SERVE_NODES);

	free(buf);
	hrt_etcd_destroy(etcd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics_scrape");
	TCase *tc = tcase_create("prometheus");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, prometheus_scrapes_a_client);
	tcase_add_test(tc, promtool_checks_serve_metrics);
	suite_add_tcase(s, tc);
	return hrt_run(s);
}
