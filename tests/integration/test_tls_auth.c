/* SPDX-License-Identifier: MIT */
/* test_tls_auth.c - TLS and etcd auth against a real etcd on loopback.
 *
 * TLS: a member with server TLS and --client-cert-auth, using certificates
 * the test makes with openssl.  The library and the CLI must sync, watch
 * and register with the CA, certificate and key (flags or ETCDCTL_*
 * variables), and fail with HR_ETLS and one clear line on a wrong CA or a
 * missing client certificate.
 *
 * Auth: a member with auth enabled, a root user and a read-only role for
 * the watcher.  Wrong password and missing user give HR_EAUTH, writing with
 * the read-only user HR_EPERM; with a 2 s token TTL the watcher keeps
 * working across idle periods and a member restart (re-authentication).
 * No password ever shows in a log line, an error message or CLI output. */
#define _GNU_SOURCE
#include "etcd_fixture.h"
#include "hrt_cli.h"
#include "hrt_ring.h"
#include "hrt_check.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PREFIX "/ring/nodes/"

/* Distinctive passwords, so a leak is easy to find in any text. */
#define ROOT_PW "root-Pw-4d21"
#define WATCH_PW "watch-Pw-93ab"
#define WRITE_PW "write-Pw-5e07"
#define WRONG_PW "wrong-Pw-c6f8"

/* The settings of a test's client, whose etcd part its registrars use. */
struct conf {
	hr_etcd_config etcd;
	hr_client_config client;
};

/* The changes of a record the tests make. */
#define STATE(s) (&(hr_record_update){ .size = sizeof(hr_record_update), \
				       .fields = HR_UPDATE_STATE, .state = (s) })
#define WEIGHT(w) (&(hr_record_update){ .size = sizeof(hr_record_update), \
					.fields = HR_UPDATE_WEIGHT, .weight = (w) })

/* Certificates, made once per test case in the parent process. */
static char certdir[PATH_MAX];
static hrt_etcd_cluster *etcd;
static hrt_log logbuf;

/* ---- helpers ------------------------------------------------------------ */

static const char *cert_path(const char *name)
{
	/* A few rotating buffers: one call site holds at most six paths. */
	static char buf[8][PATH_MAX + 32];
	static unsigned next;
	char *p = buf[next++ % 8];

	snprintf(p, sizeof buf[0], "%s/%s", certdir, name);
	return p;
}

/* A CA, a server certificate usable as a client too (etcd's gateway dials
 * its own gRPC port with it), a client certificate, and an unrelated CA
 * for the "wrong CA" cases. */
static void make_certs(void)
{
	const char *tmp = getenv("TMPDIR");
	char cmd[4 * PATH_MAX];
	int rc;

	snprintf(certdir, sizeof certdir, "%s/hrt-tls-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(certdir));
	snprintf(cmd, sizeof cmd,
		 "cd '%s' && exec >openssl.log 2>&1 && set -e\n"
		 "S='openssl req -newkey rsa:2048 -nodes'\n"
		 "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout ca.key -out ca.crt -subj /CN=hrt-test-ca\n"
		 "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout other.key -out other-ca.crt -subj /CN=hrt-other-ca\n"
		 "$S -keyout server.key -out server.csr -subj /CN=etcd-server\n"
		 "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth,clientAuth\\n' >server.ext\n"
		 "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out server.crt -extfile server.ext\n"
		 "$S -keyout client.key -out client.csr -subj /CN=ring-watcher\n"
		 "printf 'extendedKeyUsage=clientAuth\\n' >client.ext\n"
		 "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out client.crt -extfile client.ext\n",
		 certdir);
	rc = system(cmd);
	if (rc != 0) {
		snprintf(cmd, sizeof cmd, "cat '%s/openssl.log' >&2", certdir);
		(void)system(cmd);
	}
	ck_assert_msg(rc == 0, "openssl failed (%d)", rc);
}

static void remove_certs(void)
{
	hrt_remove_tree(certdir);
}

static void start_tls(void)
{
	hrt_etcd_opts o = { 0 };

	o.cert_file = cert_path("server.crt");
	o.key_file = cert_path("server.key");
	o.ca_file = cert_path("ca.crt");
	o.client_cert_auth = true;
	o.client_cert_file = cert_path("client.crt");
	o.client_key_file = cert_path("client.key");
	etcd = hrt_etcd_start(1, &o);
	ck_assert_msg(etcd != NULL, "TLS etcd did not start");
	ck_assert_ptr_nonnull(strstr(hrt_etcd_endpoints(etcd), "https://127.0.0.1:"));
	hrt_log_init(&logbuf);
}

static void stop_etcd(void)
{
	hrt_etcd_destroy(etcd);
	etcd = NULL;
	hrt_log_free(&logbuf);
}

/* Short timers keep the failure cases quick. */
static void base_config(struct conf *cfg)
{
	hr_etcd_config_init(&cfg->etcd);
	hr_client_config_init(&cfg->client);
	cfg->etcd.endpoints = hrt_etcd_endpoints(etcd);
	cfg->etcd.prefix = PREFIX;
	cfg->etcd.log = hrt_log_fn;
	cfg->etcd.log_userdata = &logbuf;
	cfg->etcd.log_level = HR_LOG_DEBUG;
	cfg->client.open_timeout_ms = 5000;
	cfg->etcd.request_timeout_ms = 2000;
	cfg->client.probe_interval_ms = 1000;
	cfg->client.backoff_max_ms = 500;
}

static void tls_config(struct conf *cfg)
{
	base_config(cfg);
	cfg->etcd.ca_file = cert_path("ca.crt");
	cfg->etcd.cert_file = cert_path("client.crt");
	cfg->etcd.key_file = cert_path("client.key");
}

/* Opens a client expecting failure; returns the code, and how long it
 * took in *ms.  The error must hold a message and no password. */
static int open_fails(const struct conf *cfg, hr_error *err, int64_t *ms)
{
	hr_client *c = NULL;
	int64_t t0 = hrt_now_ms();
	int rc;

	memset(err, 0, sizeof *err);
	rc = hr_client_open(&cfg->etcd, &cfg->client, &c, err);
	*ms = hrt_now_ms() - t0;
	ck_assert_ptr_null(c);
	ck_assert_int_lt(rc, 0);
	ck_assert_int_eq(err->code, rc);
	ck_assert_msg(err->message[0] != '\0', "no message for %d", rc);
	ck_assert_ptr_null(strchr(err->message, '\n'));
	fprintf(stderr, "open failed in %lld ms: %s: %s\n", (long long)*ms,
		hr_strerror(rc), err->message);
	return rc;
}

/* ---- the CLI's output ---------------------------------------------------- */

/* The passwords, which no output may hold. */
static const char *const pws[] = { ROOT_PW, WATCH_PW, WRITE_PW, WRONG_PW };

static void assert_no_secret(const char *text)
{
	for (size_t i = 0; i < sizeof pws / sizeof pws[0]; i++)
		ck_assert_msg(!text || !strstr(text, pws[i]), "password leaked in: %s", text);
}

/* assert_no_secret() of the log, under its lock: a client's watcher may
 * be writing to it. */
static void assert_log_no_secret(hrt_log *log)
{
	for (size_t i = 0; i < sizeof pws / sizeof pws[0]; i++)
		ck_assert_msg(hrt_log_count(log, pws[i], NULL) == 0, "password leaked in the log");
}

/* A failed command: exit 1 and exactly one line on stderr naming the
 * command and holding `needle`. */
static void assert_cli_error(const hrt_cli_run *r, const char *cmd, const char *needle)
{
	char prefix[64];
	const char *nl = strchr(r->err, '\n');

	snprintf(prefix, sizeof prefix, "hashring: %s: ", cmd);
	ck_assert_msg(r->status == 1, "exit %d, stderr: %s", r->status, r->err);
	ck_assert_msg(!strncmp(r->err, prefix, strlen(prefix)), "stderr: %s", r->err);
	ck_assert_msg(nl && nl[1] == '\0', "not one line: %s", r->err);
	ck_assert_msg(strstr(r->err, needle), "no \"%s\" in: %s", needle, r->err);
	ck_assert_str_eq(r->out, "");
	assert_no_secret(r->err);
	fprintf(stderr, "cli: %s", r->err);
}

/* ---- TLS ------------------------------------------------------------------ */

START_TEST(tls_client_syncs_watches_registers)
{
	struct conf cfg;
	hr_client *c = NULL;
	hr_registrar *r = NULL;
	hr_registration reg;
	hr_error err = { 0 };
	char out[1024];
	int64_t t0;

	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out,
				     "put " PREFIX "a '{\"addr\":\"127.0.0.1:11211\",\"state\":\"active\"}'"), 0);
	tls_config(&cfg);
	t0 = hrt_now_ms();
	ck_assert_msg(hr_client_open(&cfg.etcd, &cfg.client, &c, &err) == 0, "open: %s", err.message);
	fprintf(stderr, "TLS open with client cert: %lld ms\n", (long long)(hrt_now_ms() - t0));
	ck_assert_int_eq(hrt_node_state(c, "a"), HR_STATE_ACTIVE);

	/* Watching: a change made afterwards arrives. */
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out,
				     "put " PREFIX "b '{\"addr\":\"127.0.0.2:11211\",\"state\":\"draining\"}'"), 0);
	ck_assert_int_eq(hrt_wait_state(c, "b", HR_STATE_DRAINING, 5000), 0);

	/* Registration over TLS: appears, changes state, leaves. */
	hr_registration_init(&reg);
	reg.id = "reg1";
	reg.addr = "127.0.0.3:11211";
	reg.ttl_s = 5;
	ck_assert_msg(hr_registrar_open(&cfg.etcd, &reg, &r, &err) == 0, "register: %s",
		      err.message);
	ck_assert_int_ne(hr_registrar_lease(r), 0);
	ck_assert_int_eq(hrt_wait_state(c, "reg1", HR_STATE_WARMING, 5000), 0);
	ck_assert_int_eq(hr_registrar_update(r, STATE(HR_STATE_ACTIVE), &err), 0);
	ck_assert_int_eq(hrt_wait_state(c, "reg1", HR_STATE_ACTIVE, 5000), 0);
	ck_assert_int_eq(hr_node_update(&cfg.etcd, "reg1", WEIGHT(2), &err), 0);
	ck_assert_int_eq(hr_registrar_deregister(r, &err), 0);
	ck_assert_int_eq(hrt_wait_state(c, "reg1", -1, 5000), 0);
	hr_registrar_close(r);
	hr_client_close(c);
	ck_assert_int_eq(hrt_log_count(&logbuf, "level=error", NULL), 0);
}
END_TEST

START_TEST(tls_cli_flags_and_environment)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	char ep_env[600], ca_env[PATH_MAX + 32], cert_env[PATH_MAX + 32], key_env[PATH_MAX + 32];
	hrt_cli_run run;
	hrt_child side;
	struct conf cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	char out[1024];

	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out,
				     "put " PREFIX "a '{\"addr\":\"127.0.0.1:11211\",\"state\":\"active\"}'"), 0);

	/* Flags. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps, "--prefix", PREFIX,
		"--cacert", cert_path("ca.crt"), "--cert", cert_path("client.crt"),
		"--key", cert_path("client.key"), NULL });
	ck_assert_msg(run.status == 0, "nodes: %d %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.out, "127.0.0.1:11211"));
	ck_assert_ptr_nonnull(strstr(run.out, "# 1 nodes"));

	/* The same through etcdctl's variables. */
	snprintf(ep_env, sizeof ep_env, "ETCDCTL_ENDPOINTS=%s", eps);
	snprintf(ca_env, sizeof ca_env, "ETCDCTL_CACERT=%s", cert_path("ca.crt"));
	snprintf(cert_env, sizeof cert_env, "ETCDCTL_CERT=%s", cert_path("client.crt"));
	snprintf(key_env, sizeof key_env, "ETCDCTL_KEY=%s", cert_path("client.key"));
	const char *const env[] = { ep_env, ca_env, cert_env, key_env, NULL };
	hrt_cli_run_cmd(&run, env, (const char *const[]){ "nodes", "--prefix", PREFIX, "--json", NULL });
	ck_assert_msg(run.status == 0, "nodes (env): %d %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.out, "\"id\":\"a\""));

	hrt_cli_run_cmd(&run, env, (const char *const[]){ "watch", "--prefix", PREFIX, "--count", "1", NULL });
	ck_assert_msg(run.status == 0, "watch (env): %d %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.out, "nodes=1"));

	/* The sidecar over TLS, changed in place by `state`, gone on SIGTERM. */
	tls_config(&cfg);
	ck_assert_msg(hr_client_open(&cfg.etcd, &cfg.client, &c, &err) == 0, "open: %s", err.message);
	side = hrt_cli_spawn((const char *const[]){ "register", "--prefix", PREFIX, "--id", "side",
		"--addr", "127.0.0.9:1", "--zone", "z9", "--weight", "2", "--ttl", "4",
		"--log-level", "warn", NULL }, env);
	ck_assert_int_eq(hrt_wait_state(c, "side", HR_STATE_WARMING, 8000), 0);
	hrt_cli_run_cmd(&run, env, (const char *const[]){ "state", "--prefix", PREFIX, "--id", "side",
		"active", NULL });
	ck_assert_msg(run.status == 0, "state: %d %s", run.status, run.err);
	ck_assert_int_eq(hrt_wait_state(c, "side", HR_STATE_ACTIVE, 5000), 0);
	hrt_cli_run_cmd(&run, env, (const char *const[]){ "weight", "--prefix", PREFIX, "--id", "side",
		"3", NULL });
	ck_assert_msg(run.status == 0, "weight: %d %s", run.status, run.err);
	kill(side.pid, SIGTERM);
	ck_assert_int_eq(hrt_wait_state(c, "side", -1, 3000), 0);
	hrt_cli_wait(&side, &run);
	ck_assert_msg(run.status == 0, "register exit %d: %s", run.status, run.err);
	hr_client_close(c);
}
END_TEST

START_TEST(tls_errors)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	struct conf cfg;
	hr_client *c = NULL;
	hr_registrar *r = NULL;
	hr_registration reg;
	hr_error err;
	hrt_cli_run run;
	int64_t ms;

	/* A CA that did not sign the server's certificate. */
	tls_config(&cfg);
	cfg.etcd.ca_file = cert_path("other-ca.crt");
	ck_assert_int_eq(open_fails(&cfg, &err, &ms), HR_ETLS);
	ck_assert_ptr_nonnull(strstr(err.message, "TLS"));
	ck_assert_ptr_nonnull(strstr(err.message, "https://127.0.0.1:"));
	ck_assert_int_lt(ms, 4000);
	hr_registration_init(&reg);
	reg.id = "x";
	reg.addr = "127.0.0.1:1";
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(hr_registrar_open(&cfg.etcd, &reg, &r, &err), HR_ETLS);
	ck_assert_ptr_null(r);
	ck_assert_ptr_nonnull(strstr(err.message, "TLS"));
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps, "--prefix", PREFIX,
		"--cacert", cert_path("other-ca.crt"), "--cert", cert_path("client.crt"),
		"--key", cert_path("client.key"), NULL });
	assert_cli_error(&run, "nodes", "TLS");

	/* No client certificate: etcd rejects the handshake. */
	tls_config(&cfg);
	cfg.etcd.cert_file = cfg.etcd.key_file = NULL;
	ck_assert_int_eq(open_fails(&cfg, &err, &ms), HR_ETLS);
	ck_assert_ptr_nonnull(strstr(err.message, "TLS"));
	ck_assert_int_lt(ms, 4000);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps, "--prefix", PREFIX,
		"--cacert", cert_path("ca.crt"), NULL });
	assert_cli_error(&run, "nodes", "TLS");
	/* A certificate without its key is a configuration error. */
	tls_config(&cfg);
	cfg.etcd.key_file = NULL;
	ck_assert_int_eq(open_fails(&cfg, &err, &ms), HR_EINVAL);

	/* No CA: the system store does not know the test CA... */
	tls_config(&cfg);
	cfg.etcd.ca_file = NULL;
	ck_assert_int_eq(open_fails(&cfg, &err, &ms), HR_ETLS);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps, "--prefix", PREFIX,
		"--cert", cert_path("client.crt"), "--key", cert_path("client.key"), NULL });
	assert_cli_error(&run, "nodes", "TLS");
	/* ...unless verification is explicitly turned off. */
	cfg.etcd.insecure_skip_verify = 1;
	ck_assert_msg(hr_client_open(&cfg.etcd, &cfg.client, &c, &err) == 0, "insecure open: %s", err.message);
	hr_client_close(c);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps, "--prefix", PREFIX,
		"--cert", cert_path("client.crt"), "--key", cert_path("client.key"),
		"--insecure-skip-tls-verify", NULL });
	ck_assert_msg(run.status == 0, "insecure nodes: %d %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.out, "# 0 nodes"));

	/* Plain http against the TLS port is not mistaken for success. */
	tls_config(&cfg);
	char plain[128];
	snprintf(plain, sizeof plain, "http://127.0.0.1:%d", hrt_etcd_client_port(etcd, 0));
	cfg.etcd.endpoints = plain;
	cfg.client.open_timeout_ms = 1500;
	ck_assert_int_lt(open_fails(&cfg, &err, &ms), 0);
}
END_TEST

/* ---- auth ----------------------------------------------------------------- */

/* Starts a plain member with `extra` etcd arguments, then sets up users:
 * root, watcher (read-only role ring-ro on PREFIX) and writer (ring-rw),
 * and enables auth. */
static void start_auth(const char *const *extra)
{
	hrt_etcd_opts o = { 0 };
	char out[1024];

	o.extra_args = extra;
	etcd = hrt_etcd_start(1, &o);
	ck_assert_msg(etcd != NULL, "etcd did not start");
	hrt_log_init(&logbuf);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "user add root:" ROOT_PW), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "role add ring-ro"), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out,
				     "role grant-permission ring-ro --prefix=true read " PREFIX), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "user add watcher:" WATCH_PW), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "user grant-role watcher ring-ro"), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "role add ring-rw"), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out,
				     "role grant-permission ring-rw --prefix=true readwrite " PREFIX), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "user add writer:" WRITE_PW), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "user grant-role writer ring-rw"), 0);
	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out, "auth enable"), 0);
	/* Auth is on: anonymous writes are refused now. */
	ck_assert_int_ne(hrt_etcdctl(etcd, out, sizeof out, "put " PREFIX "anon x"), 0);
}

static void root_put(const char *id, const char *value)
{
	char out[512];

	ck_assert_int_eq(hrt_etcdctl(etcd, out, sizeof out,
				     "--user root:" ROOT_PW " put " PREFIX "%s '%s'", id, value), 0);
}

static void auth_config(struct conf *cfg, const char *user, const char *pw)
{
	base_config(cfg);
	cfg->etcd.username = user;
	cfg->etcd.password = pw;
}

START_TEST(auth_roles_and_errors)
{
	const char *eps = hrt_etcd_endpoints(etcd);
	struct conf cfg;
	hr_client *c = NULL;
	hr_registrar *r = NULL;
	hr_registration reg;
	hr_error err = { 0 };
	hrt_cli_run run;
	int64_t ms;

	root_put("a", "{\"addr\":\"127.0.0.1:11211\",\"state\":\"active\"}");

	/* The read-only watcher syncs and watches. */
	auth_config(&cfg, "watcher", WATCH_PW);
	ck_assert_msg(hr_client_open(&cfg.etcd, &cfg.client, &c, &err) == 0, "open: %s", err.message);
	ck_assert_int_eq(hrt_node_state(c, "a"), HR_STATE_ACTIVE);
	root_put("b", "{\"addr\":\"127.0.0.2:11211\",\"state\":\"warming\"}");
	ck_assert_int_eq(hrt_wait_state(c, "b", HR_STATE_WARMING, 5000), 0);

	/* A read-write user registers; the watcher sees it. */
	struct conf wcfg;
	auth_config(&wcfg, "writer", WRITE_PW);
	hr_registration_init(&reg);
	reg.id = "w1";
	reg.addr = "127.0.0.5:11211";
	reg.state = HR_STATE_ACTIVE;
	ck_assert_msg(hr_registrar_open(&wcfg.etcd, &reg, &r, &err) == 0, "register: %s",
		      err.message);
	ck_assert_int_eq(hrt_wait_state(c, "w1", HR_STATE_ACTIVE, 5000), 0);
	hr_registrar_close(r);
	r = NULL;
	ck_assert_int_eq(hrt_wait_state(c, "w1", -1, 5000), 0);

	/* The read-only user may not register: permission denied. */
	reg.id = "ro1";
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(hr_registrar_open(&cfg.etcd, &reg, &r, &err), HR_EPERM);
	ck_assert_ptr_null(r);
	ck_assert_ptr_nonnull(strstr(err.message, "permission denied"));
	fprintf(stderr, "read-only register: %s\n", err.message);
	assert_no_secret(err.message);
	ck_assert_int_eq(hr_node_update(&cfg.etcd, "a", STATE(HR_STATE_DRAINING), &err), HR_EPERM);
	ck_assert_int_eq(hrt_node_state(c, "a"), HR_STATE_ACTIVE);
	hr_client_close(c);

	/* Wrong password. */
	auth_config(&cfg, "watcher", WRONG_PW);
	ck_assert_int_eq(open_fails(&cfg, &err, &ms), HR_EAUTH);
	ck_assert_ptr_nonnull(strstr(err.message, "authentication failed"));
	ck_assert_ptr_nonnull(strstr(err.message, "watcher"));
	ck_assert_int_lt(ms, 4000);
	assert_no_secret(err.message);
	ck_assert_int_eq(hr_registrar_open(&cfg.etcd, &reg, &r, &err), HR_EAUTH);
	assert_no_secret(err.message);

	/* No user at all on an auth-enabled etcd. */
	auth_config(&cfg, NULL, NULL);
	ck_assert_int_eq(open_fails(&cfg, &err, &ms), HR_EAUTH);
	ck_assert_int_lt(ms, 4000);
	ck_assert_int_eq(hr_registrar_open(&cfg.etcd, &reg, &r, &err), HR_EAUTH);
	/* A user unknown to etcd. */
	auth_config(&cfg, "nobody", WRONG_PW);
	ck_assert_int_eq(open_fails(&cfg, &err, &ms), HR_EAUTH);

	/* The CLI: --user, ETCDCTL_USER, and the failures as one line. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps, "--prefix", PREFIX,
		"--user", "watcher:" WATCH_PW, NULL });
	ck_assert_msg(run.status == 0, "nodes: %d %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.out, "# 2 nodes"));
	assert_no_secret(run.err);
	char ep_env[600];
	snprintf(ep_env, sizeof ep_env, "ETCDCTL_ENDPOINTS=%s", eps);
	hrt_cli_run_cmd(&run, (const char *const[]){ ep_env, "ETCDCTL_USER=watcher:" WATCH_PW, NULL },
		(const char *const[]){ "nodes", "--prefix", PREFIX, "--json", NULL });
	ck_assert_msg(run.status == 0, "nodes (env): %d %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.out, "\"id\":\"b\""));
	/* etcdctl's other form: the name alone, the password apart. */
	hrt_cli_run_cmd(&run, (const char *const[]){ ep_env, "ETCDCTL_USER=watcher",
		"ETCDCTL_PASSWORD=" WATCH_PW, NULL },
		(const char *const[]){ "nodes", "--prefix", PREFIX, "--json", NULL });
	ck_assert_msg(run.status == 0, "nodes (env, name alone): %d %s", run.status, run.err);
	assert_no_secret(run.err);
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps, "--prefix", PREFIX,
		"--user", "watcher:" WRONG_PW, NULL });
	assert_cli_error(&run, "nodes", "authentication failed");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps, "--prefix", PREFIX,
		NULL });
	assert_cli_error(&run, "nodes", "etcd requires authentication");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "register", "--endpoints", eps,
		"--prefix", PREFIX, "--user", "watcher:" WATCH_PW, "--id", "ro2",
		"--addr", "127.0.0.7:1", NULL });
	assert_cli_error(&run, "register", "permission denied");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "state", "--endpoints", eps,
		"--prefix", PREFIX, "--user", "watcher:" WATCH_PW, "--id", "a", "draining", NULL });
	assert_cli_error(&run, "state", "permission denied");
	/* --user without a password part is a usage error that does not echo
	 * the value. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", eps,
		"--user", WATCH_PW, NULL });
	ck_assert_int_eq(run.status, 2);
	assert_no_secret(run.err);

	/* Nothing the library logged holds a password. */
	ck_assert_int_gt(hrt_log_count(&logbuf, "", NULL), 0);
	assert_log_no_secret(&logbuf);
}
END_TEST

/* "http://user:password@host:port" endpoints: the user is etcd's, as with
 * --user, and the password never shows, in output, log lines or errors. */
START_TEST(auth_cli_url_credentials)
{
	int port = hrt_etcd_client_port(etcd, 0);
	char watch_url[256], write_url[256], wrong_url[256], user_only[256];
	struct conf cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	hrt_cli_run run;
	hrt_child side;

	root_put("a", "{\"addr\":\"127.0.0.1:11211\",\"state\":\"active\"}");
	snprintf(watch_url, sizeof watch_url, "http://watcher:%s@127.0.0.1:%d", WATCH_PW, port);
	snprintf(write_url, sizeof write_url, "writer:%s@127.0.0.1:%d", WRITE_PW, port);
	snprintf(wrong_url, sizeof wrong_url, "http://watcher:%s@127.0.0.1:%d", WRONG_PW, port);
	snprintf(user_only, sizeof user_only, "http://watcher@127.0.0.1:%d", port);

	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", watch_url,
		"--prefix", PREFIX, "--log-level", "debug", NULL });
	ck_assert_msg(run.status == 0, "nodes: %d %s", run.status, run.err);
	ck_assert_ptr_nonnull(strstr(run.out, "# 1 nodes"));
	ck_assert_ptr_nonnull(strstr(run.err, "endpoint=http://127.0.0.1:"));
	assert_no_secret(run.out);
	assert_no_secret(run.err);

	/* The user in the URL, its password apart, as etcdctl takes it. */
	hrt_cli_run_cmd(&run, (const char *const[]){ "ETCDCTL_PASSWORD=" WATCH_PW, NULL },
		(const char *const[]){ "nodes", "--endpoints", user_only, "--prefix", PREFIX,
				       "--user", "watcher", NULL });
	ck_assert_msg(run.status == 0, "nodes (user only): %d %s", run.status, run.err);

	/* A sidecar registering with the URL's user. */
	auth_config(&cfg, "watcher", WATCH_PW);
	ck_assert_msg(hr_client_open(&cfg.etcd, &cfg.client, &c, &err) == 0, "open: %s", err.message);
	side = hrt_cli_spawn((const char *const[]){ "register", "--endpoints", write_url,
		"--prefix", PREFIX, "--id", "u1", "--addr", "127.0.0.8:1", "--log-level", "debug",
		NULL }, NULL);
	ck_assert_int_eq(hrt_wait_state(c, "u1", HR_STATE_WARMING, 8000), 0);
	kill(side.pid, SIGTERM);
	ck_assert_int_eq(hrt_wait_state(c, "u1", -1, 3000), 0);
	hrt_cli_wait(&side, &run);
	ck_assert_msg(run.status == 0, "register: %d %s", run.status, run.err);
	assert_no_secret(run.out);
	assert_no_secret(run.err);
	hr_client_close(c);

	/* Failures say who, never with what. */
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", wrong_url,
		"--prefix", PREFIX, NULL });
	assert_cli_error(&run, "nodes", "authentication failed for user \"watcher\"");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "state", "--endpoints", watch_url,
		"--prefix", PREFIX, "--id", "a", "draining", NULL });
	assert_cli_error(&run, "state", "permission denied");
	hrt_cli_run_cmd(&run, NULL, (const char *const[]){ "nodes", "--endpoints", watch_url,
		"--prefix", PREFIX, "--user", "writer:" WRITE_PW, NULL });
	ck_assert_int_eq(run.status, 2);
	ck_assert_ptr_nonnull(strstr(run.err, "differs from the configured user"));
	assert_no_secret(run.err);
}
END_TEST

/* Sliding simple tokens of 2 s: the watcher idles past the TTL more than
 * once and reconnects after a member restart, so it must authenticate
 * again each time its token is gone. */
START_TEST(auth_token_expiry_reauth)
{
	struct conf cfg;
	hr_client *c = NULL;
	hr_client_status st0, st1, st2;
	hr_error err = { 0 };
	int64_t t0, arrive_ms;

	root_put("a", "{\"addr\":\"127.0.0.1:11211\",\"state\":\"active\"}");
	auth_config(&cfg, "watcher", WATCH_PW);
	/* Probes further apart than the token TTL (etcd drops an unused
	 * token 2 to 3 s after its last use), so the first one finds it
	 * expired. */
	cfg.client.probe_interval_ms = 3500;
	cfg.client.stale_warn_ms = 20000;
	ck_assert_msg(hr_client_open(&cfg.etcd, &cfg.client, &c, &err) == 0, "open: %s", err.message);
	ck_assert_int_eq(hr_client_status_get(c, &st0, NULL), 0);

	/* Idle for more than twice the TTL. */
	hrt_sleep_ms(5500);
	t0 = hrt_now_ms();
	root_put("b", "{\"addr\":\"127.0.0.2:11211\",\"state\":\"active\"}");
	ck_assert_int_eq(hrt_wait_state(c, "b", HR_STATE_ACTIVE, 5000), 0);
	arrive_ms = hrt_now_ms() - t0;
	ck_assert_int_eq(hr_client_status_get(c, &st1, NULL), 0);
	fprintf(stderr, "after 5.5 s idle (token TTL 2 s): event in %lld ms, reconnects %llu\n",
		(long long)arrive_ms, (unsigned long long)(st1.reconnects - st0.reconnects));
	/* The token did expire; a fresh one was obtained without any
	 * authentication failure and without dropping the stream. */
	ck_assert_int_ge(hrt_log_count(&logbuf, "event=reauthenticated", NULL), 1);
	ck_assert_uint_eq(st1.reconnects, st0.reconnects);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=auth_failed", NULL), 0);
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=stale", NULL), 0);

	/* The member restarts: every token it issued is gone with it. */
	ck_assert_int_eq(hrt_etcd_kill_member(etcd, 0), 0);
	hrt_sleep_ms(300);
	ck_assert_int_eq(hrt_etcd_restart_member(etcd, 0), 0);
	hrt_sleep_ms(2500);
	t0 = hrt_now_ms();
	root_put("c", "{\"addr\":\"127.0.0.3:11211\",\"state\":\"draining\"}");
	ck_assert_int_eq(hrt_wait_state(c, "c", HR_STATE_DRAINING, 8000), 0);
	arrive_ms = hrt_now_ms() - t0;
	ck_assert_int_eq(hr_client_status_get(c, &st2, NULL), 0);
	fprintf(stderr, "after a member restart: event in %lld ms, reconnects %llu\n",
		(long long)arrive_ms, (unsigned long long)(st2.reconnects - st1.reconnects));
	ck_assert_uint_gt(st2.reconnects, st1.reconnects);
	/* While the member was down authenticating could only fail to
	 * connect; etcd itself never refused the credentials. */
	ck_assert_int_eq(hrt_log_count(&logbuf, "event=auth_failed", "HTTP", NULL), 0);
	ck_assert_int_eq(hrt_node_state(c, "a"), HR_STATE_ACTIVE);
	assert_log_no_secret(&logbuf);
	hr_client_close(c);
}
END_TEST

static void start_auth_default(void)
{
	start_auth(NULL);
}

static void start_auth_short_token(void)
{
	static const char *const extra[] = { "--auth-token-ttl=2", NULL };

	start_auth(extra);
}

int main(void)
{
	Suite *s = suite_create("tls_auth");
	TCase *tls = tcase_create("tls");
	TCase *auth = tcase_create("auth");
	TCase *ttl = tcase_create("token_ttl");

	tcase_add_unchecked_fixture(tls, make_certs, remove_certs);
	tcase_add_checked_fixture(tls, start_tls, stop_etcd);
	tcase_set_timeout(tls, 120);
	tcase_add_test(tls, tls_client_syncs_watches_registers);
	tcase_add_test(tls, tls_cli_flags_and_environment);
	tcase_add_test(tls, tls_errors);
	suite_add_tcase(s, tls);

	tcase_add_checked_fixture(auth, start_auth_default, stop_etcd);
	tcase_set_timeout(auth, 120);
	tcase_add_test(auth, auth_roles_and_errors);
	tcase_add_test(auth, auth_cli_url_credentials);
	suite_add_tcase(s, auth);

	tcase_add_checked_fixture(ttl, start_auth_short_token, stop_etcd);
	tcase_set_timeout(ttl, 120);
	tcase_add_test(ttl, auth_token_expiry_reauth);
	suite_add_tcase(s, ttl);

	return hrt_run(s);
}
