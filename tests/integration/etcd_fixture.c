/* SPDX-License-Identifier: MIT */
/*
 * etcd_fixture.c - a real etcd on loopback for the integration tests.
 *
 * See etcd_fixture.h for the contract.  The parts, in file order: small
 * utilities (clock, argument vectors, environment, files), the libcurl
 * helpers (health probe, POST), spawning and reaping members, the cluster
 * life cycle, the failure helpers, and etcdctl.
 */
#define _GNU_SOURCE

#include "etcd_fixture.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

extern char **environ;

#define DEFAULT_ETCD_BIN	"/usr/bin/etcd"
#define DEFAULT_ETCDCTL_BIN	"/usr/bin/etcdctl"
#define DEFAULT_HEARTBEAT_MS	50
#define DEFAULT_ELECTION_MS	500
#define DEFAULT_START_TIMEOUT_MS 30000
#define STOP_GRACE_MS		5000	/* SIGTERM -> SIGKILL */
#define REAP_TIMEOUT_MS		5000	/* after SIGKILL */
#define HEALTH_PROBE_MS		1000
#define HEALTH_POLL_MS		20
#define ETCDCTL_TIMEOUT_MS	20000
#define HTTP_TIMEOUT_MS		5000
#define START_ATTEMPTS		5	/* new ports after a lost bind race */
#define PEER_WAIT_MS		3000	/* see wait_peer_serving() */
#define URL_MAX			64

struct member {
	char name[16];
	int client_port;
	int peer_port;
	char client_url[URL_MAX];
	char peer_url[URL_MAX];
	char dir[PATH_MAX];		/* holds data/ and etcd.log */
	char data_dir[PATH_MAX];
	char log_path[PATH_MAX];
	off_t log_mark;			/* log size when last spawned */
	pid_t pid;			/* 0: not running */
	bool frozen;
};

/* The options, deep-copied so the caller's strings may go away. */
struct opts_copy {
	char cert_file[PATH_MAX];
	char key_file[PATH_MAX];
	char ca_file[PATH_MAX];
	bool client_cert_auth;
	char client_cert_file[PATH_MAX];
	char client_key_file[PATH_MAX];
	unsigned progress_notify_ms;
	unsigned snapshot_count;
	char compaction_retention[32];
	char compaction_mode[32];
	unsigned heartbeat_ms;
	unsigned election_ms;
	unsigned start_timeout_ms;
	char *extra_args[HRT_ETCD_MAX_EXTRA_ARGS + 1];
	char etcd_bin[PATH_MAX];
	char etcdctl_bin[PATH_MAX];
};

struct hrt_etcd_cluster {
	int n;
	unsigned generation;		/* bumped by each wipe: new token */
	struct opts_copy o;
	char dir[PATH_MAX];
	char endpoints[HRT_ETCD_MAX_MEMBERS * (URL_MAX + 1)];
	char initial_cluster[HRT_ETCD_MAX_MEMBERS * (URL_MAX + 20)];
	struct member m[HRT_ETCD_MAX_MEMBERS];
};

/* ------------------------------------------------------------------ */
/* Utilities                                                          */
/* ------------------------------------------------------------------ */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Copies into a fixed buffer; false (and a message) when it does not fit. */
static bool copy_str(char *dst, size_t size, const char *src, const char *what)
{
	if (!src) {
		dst[0] = '\0';
		return true;
	}
	if (strlen(src) >= size) {
		fprintf(stderr, "hrt-etcd: %s is too long\n", what);
		return false;
	}
	strcpy(dst, src);
	return true;
}

/* A NULL-terminated vector of owned strings, for argv and envp. */
struct strvec {
	char **v;
	size_t n;
	size_t cap;
};

static void sv_free(struct strvec *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	memset(sv, 0, sizeof(*sv));
}

/* Takes ownership of `s` (freeing it on failure). */
static int sv_take(struct strvec *sv, char *s)
{
	if (!s)
		return -1;
	if (sv->n + 2 > sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 16;
		char **v = realloc(sv->v, cap * sizeof(*v));

		if (!v) {
			free(s);
			return -1;
		}
		sv->v = v;
		sv->cap = cap;
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
	return 0;
}

static int sv_add(struct strvec *sv, const char *s)
{
	return sv_take(sv, strdup(s));
}

static int sv_addf(struct strvec *sv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int sv_addf(struct strvec *sv, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return sv_take(sv, r < 0 ? NULL : s);
}

/*
 * Splits `s` into words the way a shell would, without any expansion:
 * blanks separate words, '...' is literal, "..." honours \" and \\, and a
 * backslash outside quotes escapes the next character.
 */
static int split_words(const char *s, struct strvec *out)
{
	char *word = malloc(strlen(s) + 1);
	const char *p = s;

	if (!word)
		return -1;
	for (;;) {
		size_t len = 0;

		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		while (*p && !isspace((unsigned char)*p)) {
			if (*p == '\'') {
				for (p++; *p && *p != '\''; p++)
					word[len++] = *p;
				if (!*p++)
					goto unterminated;
			} else if (*p == '"') {
				for (p++; *p && *p != '"'; p++) {
					if (*p == '\\' &&
					    (p[1] == '"' || p[1] == '\\'))
						p++;
					word[len++] = *p;
				}
				if (!*p++)
					goto unterminated;
			} else {
				if (*p == '\\' && p[1])
					p++;
				word[len++] = *p++;
			}
		}
		word[len] = '\0';
		if (sv_add(out, word) < 0) {
			free(word);
			return -1;
		}
	}
	free(word);
	return 0;

unterminated:
	fprintf(stderr, "hrt-etcd: unterminated quote in \"%s\"\n", s);
	free(word);
	return -1;
}

/* The test's environment minus etcd's and etcdctl's own variables, which
 * would otherwise clash with the flags the fixture passes. */
static int child_env(struct strvec *env, const char *extra)
{
	for (char **e = environ; e && *e; e++) {
		if (!strncmp(*e, "ETCD_", 5) || !strncmp(*e, "ETCDCTL_", 8))
			continue;
		if (sv_add(env, *e) < 0)
			return -1;
	}
	return extra ? sv_add(env, extra) : 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag,
			struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (remove(path) != 0 && errno != ENOENT)
		fprintf(stderr, "hrt-etcd: cannot remove %s: %s\n", path,
			strerror(errno));
	return 0;
}

int hrt_remove_tree(const char *path)
{
	struct stat st;

	if (!path || !*path)
		return -1;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return lstat(path, &st) == 0 ? -1 : 0;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : 0;
}

/* True when the log, from byte `from` on, contains `needle`. */
static bool log_contains(const char *path, off_t from, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	bool found = false;

	if (!f)
		return false;
	if (fseeko(f, from, SEEK_SET) == 0) {
		while (!found && fgets(line, sizeof(line), f))
			found = strstr(line, needle) != NULL;
	}
	fclose(f);
	return found;
}

/* Prints the last few lines of a member's log, to explain a failure. */
static void print_log_tail(const struct member *m)
{
	char buf[3072];
	FILE *f = fopen(m->log_path, "r");
	off_t size = file_size(m->log_path);
	size_t len;
	char *start;

	if (!f)
		return;
	if (size > (off_t)sizeof(buf) - 1)
		fseeko(f, size - (off_t)sizeof(buf) + 1, SEEK_SET);
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	start = size > (off_t)sizeof(buf) - 1 ? strchr(buf, '\n') : NULL;
	fprintf(stderr, "hrt-etcd: --- end of %s ---\n%s\n--- ---\n",
		m->log_path, start ? start + 1 : buf);
}

/* Appends a marker line so each run of a member is easy to find in its
 * log, and notes where that run's output begins. */
static void mark_log(struct member *m, const char *what)
{
	int fd = open(m->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		      0600);

	if (fd >= 0) {
		dprintf(fd, "==== hrt-etcd: %s %s ====\n", what, m->name);
		close(fd);
	}
	m->log_mark = file_size(m->log_path);
}

/* ------------------------------------------------------------------ */
/* libcurl                                                            */
/* ------------------------------------------------------------------ */

/* A caller's fixed buffer: keeps what fits, NUL-terminated, and drops
 * the rest without failing the transfer. */
struct outbuf {
	char *buf;
	size_t cap;
	size_t len;
};

static void outbuf_init(struct outbuf *o, char *buf, size_t cap)
{
	o->buf = cap ? buf : NULL;
	o->cap = cap;
	o->len = 0;
	if (o->buf)
		o->buf[0] = '\0';
}

static void outbuf_put(struct outbuf *o, const char *data, size_t n)
{
	size_t room;

	if (!o->buf)
		return;
	room = o->cap - 1 - o->len;
	if (n > room)
		n = room;
	memcpy(o->buf + o->len, data, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static size_t curl_sink(char *data, size_t size, size_t nmemb, void *ud)
{
	outbuf_put(ud, data, size * nmemb);
	return size * nmemb;
}

/* Options every fixture transfer shares: bounded, no signals (tests are
 * threaded), and never through a proxy from the environment. */
static void curl_common(CURL *h, const char *url, long timeout_ms,
			struct outbuf *o)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, o);
}

int hrt_http_post(const char *url, const char *json_body, char *out,
		  size_t outlen, long *status)
{
	struct curl_slist *hdr;
	struct outbuf o;
	CURLcode rc;
	CURL *h;

	outbuf_init(&o, out, outlen);
	if (status)
		*status = 0;
	if (!url || !json_body)
		return -1;
	h = curl_easy_init();
	if (!h)
		return -1;
	hdr = curl_slist_append(NULL, "Content-Type: application/json");
	curl_common(h, url, HTTP_TIMEOUT_MS, &o);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, json_body);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK && status)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return rc == CURLE_OK ? 0 : -1;
}

static bool valid_member(const hrt_etcd_cluster *c, int i)
{
	return c && i >= 0 && i < c->n;
}

/* GETs `url`; the TLS files of `tls` are used when given.  Returns the
 * HTTP status, or -1 when no answer came back in time. */
static long http_get(const char *url, const struct opts_copy *tls,
		     long timeout_ms, char *body, size_t len)
{
	struct outbuf o;
	long status = -1;
	CURL *h = curl_easy_init();

	outbuf_init(&o, body, len);
	if (!h)
		return -1;
	curl_common(h, url, timeout_ms, &o);
	if (tls && tls->ca_file[0])
		curl_easy_setopt(h, CURLOPT_CAINFO, tls->ca_file);
	if (tls && tls->client_cert_file[0])
		curl_easy_setopt(h, CURLOPT_SSLCERT, tls->client_cert_file);
	if (tls && tls->client_key_file[0])
		curl_easy_setopt(h, CURLOPT_SSLKEY, tls->client_key_file);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	return status;
}

bool hrt_etcd_member_healthy(const hrt_etcd_cluster *c, int i)
{
	char url[URL_MAX + 16];
	char body[256];

	if (!valid_member(c, i) || !c->m[i].pid)
		return false;
	snprintf(url, sizeof(url), "%s/health", c->m[i].client_url);
	return http_get(url, &c->o, HEALTH_PROBE_MS, body, sizeof(body)) == 200 &&
	       strstr(body, "\"health\":\"true\"") != NULL;
}

/* ------------------------------------------------------------------ */
/* Processes                                                          */
/* ------------------------------------------------------------------ */

/*
 * Runs in the forked child: only async-signal-safe calls until execve.
 * The death signal makes etcd (or etcdctl) die with the thread that
 * forked it; the getppid() check closes the race where that thread died
 * before prctl() ran.
 */
static void exec_child(pid_t parent, int in_fd, int out_fd, int err_fd,
		       const char *bin, char **argv, char **envp)
{
	static const int reset[] = { SIGPIPE, SIGTERM, SIGINT, SIGCHLD };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
		_exit(127);
	close_range(3, ~0U, 0);
	/* Undo what the test may have changed in its own process. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (size_t k = 0; k < sizeof(reset) / sizeof(reset[0]); k++)
		sigaction(reset[k], &dfl, NULL);
	execve(bin, argv, envp);
	_exit(127);
}

/* Forks and execs `bin`; fds are the child's stdin, stdout and stderr. */
static pid_t spawn(const char *bin, char **argv, char **envp, int in_fd,
		   int out_fd, int err_fd)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid == 0)
		exec_child(parent, in_fd, out_fd, err_fd, bin, argv, envp);
	if (pid < 0)
		fprintf(stderr, "hrt-etcd: fork: %s\n", strerror(errno));
	return pid;
}

/*
 * Waits up to `timeout_ms` for `pid` to exit and reaps it.  Returns 0 once
 * it is gone (also when someone else reaped it), -1 on timeout.  The exit
 * status goes to *status when given (-1 when unknown).
 */
static int reap(pid_t pid, unsigned timeout_ms, int *status)
{
	int64_t deadline = now_ms() + timeout_ms;
	int st;

	if (status)
		*status = -1;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid) {
			if (status)
				*status = st;
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return 0;	/* ECHILD: already reaped */
		if (now_ms() >= deadline)
			return -1;
		sleep_ms(5);
	}
}

static void describe_exit(const struct member *m, int status)
{
	if (status >= 0 && WIFEXITED(status))
		fprintf(stderr, "hrt-etcd: %s exited with status %d\n",
			m->name, WEXITSTATUS(status));
	else if (status >= 0 && WIFSIGNALED(status))
		fprintf(stderr, "hrt-etcd: %s died of signal %d\n", m->name,
			WTERMSIG(status));
	else
		fprintf(stderr, "hrt-etcd: %s is gone\n", m->name);
}

/* True when the member's process has exited; reaps it if so. */
static bool member_exited(struct member *m, int *status)
{
	pid_t r;
	int st;

	*status = -1;
	if (!m->pid)
		return true;
	r = waitpid(m->pid, &st, WNOHANG);
	if (r == 0 || (r < 0 && errno == EINTR))
		return false;
	if (r == m->pid)
		*status = st;
	m->pid = 0;
	m->frozen = false;
	return true;
}

char hrt_proc_state(pid_t pid)
{
	char path[64], buf[512];
	char *paren;
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	/* The command name may hold anything, so look after its last ')'. */
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' ? paren[2] : '?';
}

/* ------------------------------------------------------------------ */
/* Members                                                            */
/* ------------------------------------------------------------------ */

/* etcd's command line for member i, from the cluster's current state. */
static int member_argv(const hrt_etcd_cluster *c, int i, struct strvec *a)
{
	const struct opts_copy *o = &c->o;
	const struct member *m = &c->m[i];
	int r = 0;

	r |= sv_add(a, o->etcd_bin);
	r |= sv_addf(a, "--name=%s", m->name);
	r |= sv_addf(a, "--data-dir=%s", m->data_dir);
	r |= sv_add(a, "--logger=zap");
	r |= sv_add(a, "--log-outputs=stderr");
	r |= sv_addf(a, "--listen-client-urls=%s", m->client_url);
	r |= sv_addf(a, "--advertise-client-urls=%s", m->client_url);
	r |= sv_addf(a, "--listen-peer-urls=%s", m->peer_url);
	r |= sv_addf(a, "--initial-advertise-peer-urls=%s", m->peer_url);
	r |= sv_addf(a, "--initial-cluster=%s", c->initial_cluster);
	/* A token per cluster and generation: a wiped cluster gets a new
	 * cluster id, and two tests' clusters can never merge. */
	r |= sv_addf(a, "--initial-cluster-token=hrt-%d-%s-%u", (int)getpid(),
		     strrchr(c->dir, '/') + 1, c->generation);
	r |= sv_add(a, "--initial-cluster-state=new");
	r |= sv_addf(a, "--heartbeat-interval=%u",
		     o->heartbeat_ms ? o->heartbeat_ms : DEFAULT_HEARTBEAT_MS);
	r |= sv_addf(a, "--election-timeout=%u",
		     o->election_ms ? o->election_ms : DEFAULT_ELECTION_MS);
	r |= sv_addf(a, "--auto-compaction-retention=%s",
		     o->compaction_retention[0] ? o->compaction_retention : "0");
	if (o->compaction_mode[0])
		r |= sv_addf(a, "--auto-compaction-mode=%s", o->compaction_mode);
	if (o->snapshot_count)
		r |= sv_addf(a, "--snapshot-count=%u", o->snapshot_count);
	if (o->progress_notify_ms)
		r |= sv_addf(a, "--experimental-watch-progress-notify-interval=%ums",
			     o->progress_notify_ms);
	if (o->cert_file[0] && o->key_file[0]) {
		r |= sv_addf(a, "--cert-file=%s", o->cert_file);
		r |= sv_addf(a, "--key-file=%s", o->key_file);
	}
	if (o->ca_file[0])
		r |= sv_addf(a, "--trusted-ca-file=%s", o->ca_file);
	if (o->client_cert_auth)
		r |= sv_add(a, "--client-cert-auth");
	for (int k = 0; o->extra_args[k]; k++)
		r |= sv_add(a, o->extra_args[k]);
	return r ? -1 : 0;
}

int hrt_etcd_spawn_member(hrt_etcd_cluster *c, int i)
{
	struct strvec argv = { 0 }, env = { 0 };
	struct member *m;
	int log_fd, null_fd;
	pid_t pid = -1;

	if (!valid_member(c, i))
		return -1;
	m = &c->m[i];
	if (m->pid) {
		fprintf(stderr, "hrt-etcd: %s is already running\n", m->name);
		return -1;
	}
	mark_log(m, "starting");
	log_fd = open(m->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
		      0600);
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (log_fd >= 0 && null_fd >= 0 && member_argv(c, i, &argv) == 0 &&
	    child_env(&env, NULL) == 0)
		pid = spawn(c->o.etcd_bin, argv.v, env.v, null_fd, log_fd,
			    log_fd);
	else
		fprintf(stderr, "hrt-etcd: cannot prepare %s\n", m->name);
	if (log_fd >= 0)
		close(log_fd);
	if (null_fd >= 0)
		close(null_fd);
	sv_free(&argv);
	sv_free(&env);
	if (pid <= 0)
		return -1;
	m->pid = pid;
	m->frozen = false;
	return 0;
}

int hrt_etcd_wait_healthy(const hrt_etcd_cluster *c, int i,
			  unsigned timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	if (!valid_member(c, i))
		return -1;
	while (!hrt_etcd_member_healthy(c, i)) {
		if (now_ms() >= deadline)
			return -1;
		sleep_ms(HEALTH_POLL_MS);
	}
	return 0;
}

int hrt_etcd_wait_cluster_healthy(const hrt_etcd_cluster *c,
				  unsigned timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;

	if (!c)
		return -1;
	for (int i = 0; i < c->n; i++) {
		int64_t left = deadline - now_ms();

		if (c->m[i].pid &&
		    hrt_etcd_wait_healthy(c, i, left > 0 ? (unsigned)left : 0) < 0)
			return -1;
	}
	return 0;
}

enum wait_result { WAIT_OK, WAIT_TIMEOUT, WAIT_DIED, WAIT_PORT_TAKEN };

/* Waits until each member in [0, n) whose bit is set in `which` is
 * healthy, watching for members that die on the way. */
static enum wait_result wait_members(hrt_etcd_cluster *c, unsigned which)
{
	unsigned timeout = c->o.start_timeout_ms ? c->o.start_timeout_ms :
				DEFAULT_START_TIMEOUT_MS;
	int64_t deadline = now_ms() + timeout;
	unsigned pending = which;

	while (pending) {
		for (int i = 0; i < c->n; i++) {
			struct member *m = &c->m[i];
			int status;

			if (!(pending & (1u << i)))
				continue;
			if (member_exited(m, &status)) {
				if (log_contains(m->log_path, m->log_mark,
						 "address already in use"))
					return WAIT_PORT_TAKEN;
				describe_exit(m, status);
				print_log_tail(m);
				return WAIT_DIED;
			}
			if (hrt_etcd_member_healthy(c, i))
				pending &= ~(1u << i);
		}
		if (!pending)
			break;
		if (now_ms() >= deadline) {
			for (int i = 0; i < c->n; i++) {
				if (!(pending & (1u << i)))
					continue;
				fprintf(stderr,
					"hrt-etcd: %s not healthy after %u ms\n",
					c->m[i].name, timeout);
				print_log_tail(&c->m[i]);
			}
			return WAIT_TIMEOUT;
		}
		sleep_ms(HEALTH_POLL_MS);
	}
	return WAIT_OK;
}

/* SIGKILL and reap; quiet, for clean-ups. */
static int kill_and_reap(struct member *m)
{
	if (!m->pid)
		return 0;
	kill(m->pid, SIGKILL);
	if (reap(m->pid, REAP_TIMEOUT_MS, NULL) < 0) {
		fprintf(stderr, "hrt-etcd: %s (pid %d) survived SIGKILL\n",
			m->name, (int)m->pid);
		return -1;
	}
	m->pid = 0;
	m->frozen = false;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Cluster life cycle                                                 */
/* ------------------------------------------------------------------ */

static bool copy_opts(struct opts_copy *d, const hrt_etcd_opts *s)
{
	static const hrt_etcd_opts none;
	int k;

	if (!s)
		s = &none;
	if (!copy_str(d->cert_file, sizeof(d->cert_file), s->cert_file,
		      "cert_file") ||
	    !copy_str(d->key_file, sizeof(d->key_file), s->key_file,
		      "key_file") ||
	    !copy_str(d->ca_file, sizeof(d->ca_file), s->ca_file, "ca_file") ||
	    !copy_str(d->client_cert_file, sizeof(d->client_cert_file),
		      s->client_cert_file, "client_cert_file") ||
	    !copy_str(d->client_key_file, sizeof(d->client_key_file),
		      s->client_key_file, "client_key_file") ||
	    !copy_str(d->compaction_retention, sizeof(d->compaction_retention),
		      s->auto_compaction_retention, "auto_compaction_retention") ||
	    !copy_str(d->compaction_mode, sizeof(d->compaction_mode),
		      s->auto_compaction_mode, "auto_compaction_mode") ||
	    !copy_str(d->etcd_bin, sizeof(d->etcd_bin),
		      s->etcd_bin ? s->etcd_bin : DEFAULT_ETCD_BIN, "etcd_bin") ||
	    !copy_str(d->etcdctl_bin, sizeof(d->etcdctl_bin),
		      s->etcdctl_bin ? s->etcdctl_bin : DEFAULT_ETCDCTL_BIN,
		      "etcdctl_bin"))
		return false;
	if ((d->cert_file[0] != '\0') != (d->key_file[0] != '\0')) {
		fprintf(stderr, "hrt-etcd: cert_file and key_file go together\n");
		return false;
	}
	d->client_cert_auth = s->client_cert_auth;
	d->progress_notify_ms = s->progress_notify_ms;
	d->snapshot_count = s->snapshot_count;
	d->heartbeat_ms = s->heartbeat_ms;
	d->election_ms = s->election_ms;
	d->start_timeout_ms = s->start_timeout_ms;
	for (k = 0; s->extra_args && s->extra_args[k]; k++) {
		if (k == HRT_ETCD_MAX_EXTRA_ARGS) {
			fprintf(stderr, "hrt-etcd: more than %d extra_args\n",
				HRT_ETCD_MAX_EXTRA_ARGS);
			return false;
		}
		d->extra_args[k] = strdup(s->extra_args[k]);
		if (!d->extra_args[k])
			return false;
	}
	d->extra_args[k] = NULL;
	return true;
}

/*
 * Asks the kernel for `count` free loopback ports.  All sockets stay open
 * until every port is known, so the ports are distinct; they are released
 * before etcd binds them, which leaves a small race that the caller covers
 * by retrying the start.
 */
static int pick_ports(int *ports, int count)
{
	int fds[2 * HRT_ETCD_MAX_MEMBERS];
	int ok = 0, k;

	for (k = 0; k < count; k++) {
		struct sockaddr_in sa = { .sin_family = AF_INET };
		socklen_t len = sizeof(sa);

		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fds[k] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[k] < 0)
			break;
		if (bind(fds[k], (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
		    getsockname(fds[k], (struct sockaddr *)&sa, &len) != 0) {
			close(fds[k]);
			break;
		}
		ports[k] = ntohs(sa.sin_port);
		ok++;
	}
	for (k = 0; k < ok; k++)
		close(fds[k]);
	if (ok < count) {
		fprintf(stderr, "hrt-etcd: cannot find free ports: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

/* Gives every member new ports and rebuilds the URL lists. */
static int assign_ports(hrt_etcd_cluster *c)
{
	const char *scheme = c->o.cert_file[0] ? "https" : "http";
	int ports[2 * HRT_ETCD_MAX_MEMBERS];
	size_t ep = 0, ic = 0;

	if (pick_ports(ports, 2 * c->n) < 0)
		return -1;
	for (int i = 0; i < c->n; i++) {
		struct member *m = &c->m[i];

		m->client_port = ports[2 * i];
		m->peer_port = ports[2 * i + 1];
		snprintf(m->client_url, sizeof(m->client_url),
			 "%s://127.0.0.1:%d", scheme, m->client_port);
		snprintf(m->peer_url, sizeof(m->peer_url),
			 "http://127.0.0.1:%d", m->peer_port);
		ep += snprintf(c->endpoints + ep, sizeof(c->endpoints) - ep,
			       "%s%s", i ? "," : "", m->client_url);
		ic += snprintf(c->initial_cluster + ic,
			       sizeof(c->initial_cluster) - ic, "%s%s=%s",
			       i ? "," : "", m->name, m->peer_url);
	}
	return 0;
}

static int format_path(char *dst, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* snprintf() for paths: -1 (and a message) instead of truncating. */
static int format_path(char *dst, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(dst, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "hrt-etcd: path too long\n");
		return -1;
	}
	return 0;
}

/* Creates the temporary directory and each member's sub-directory. */
static int make_dirs(hrt_etcd_cluster *c)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (format_path(c->dir, sizeof(c->dir), "%s/hrt-etcd-XXXXXX", tmp) < 0 ||
	    !mkdtemp(c->dir)) {
		fprintf(stderr, "hrt-etcd: cannot create a directory in %s\n",
			tmp);
		c->dir[0] = '\0';
		return -1;
	}
	for (int i = 0; i < c->n; i++) {
		struct member *m = &c->m[i];

		snprintf(m->name, sizeof(m->name), "m%d", i);
		if (format_path(m->dir, sizeof(m->dir), "%s/%s", c->dir,
				m->name) < 0 ||
		    format_path(m->data_dir, sizeof(m->data_dir), "%s/data",
				m->dir) < 0 ||
		    format_path(m->log_path, sizeof(m->log_path),
				"%s/etcd.log", m->dir) < 0)
			return -1;
		if (mkdir(m->dir, 0700) != 0) {
			fprintf(stderr, "hrt-etcd: mkdir %s: %s\n", m->dir,
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * Waits (bounded, quietly) until member i answers on its peer port.
 * A new member first asks its peers whether it was bootstrapped already,
 * giving each one second to answer.  A peer that is not listening yet
 * refuses at once, but one that listens without serving yet costs the
 * whole second; starting members one after the other once the previous
 * one serves peers turns a 1-3 s start of three members into a fraction.
 */
static void wait_peer_serving(struct member *m)
{
	int64_t deadline = now_ms() + PEER_WAIT_MS;
	char url[URL_MAX + 16];
	int status;

	snprintf(url, sizeof(url), "%s/version", m->peer_url);
	while (now_ms() < deadline && !member_exited(m, &status)) {
		if (http_get(url, NULL, 200, NULL, 0) == 200)
			return;
		sleep_ms(10);
	}
}

/* Starts every member on the current ports with empty data dirs. */
static enum wait_result start_all(hrt_etcd_cluster *c)
{
	enum wait_result r;

	for (int i = 0; i < c->n; i++) {
		hrt_remove_tree(c->m[i].data_dir);
		if (hrt_etcd_spawn_member(c, i) < 0)
			return WAIT_DIED;
		if (i + 1 < c->n)
			wait_peer_serving(&c->m[i]);
	}
	r = wait_members(c, (1u << c->n) - 1);
	if (r != WAIT_OK) {
		for (int i = 0; i < c->n; i++)
			kill_and_reap(&c->m[i]);
	}
	return r;
}

hrt_etcd_cluster *hrt_etcd_start(int members, const hrt_etcd_opts *opts)
{
	hrt_etcd_cluster *c;

	if (members < 1 || members > HRT_ETCD_MAX_MEMBERS) {
		fprintf(stderr, "hrt-etcd: %d members asked, 1 to %d allowed\n",
			members, HRT_ETCD_MAX_MEMBERS);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->n = members;
	if (!copy_opts(&c->o, opts) || make_dirs(c) < 0)
		goto fail;
	for (int attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
		enum wait_result r;

		if (assign_ports(c) < 0)
			goto fail;
		r = start_all(c);
		if (r == WAIT_OK)
			return c;
		if (r != WAIT_PORT_TAKEN)
			goto fail;
		fprintf(stderr, "hrt-etcd: a port was taken, retrying\n");
	}
	fprintf(stderr, "hrt-etcd: no free ports after %d attempts\n",
		START_ATTEMPTS);
fail:
	hrt_etcd_destroy(c);
	return NULL;
}

void hrt_etcd_destroy(hrt_etcd_cluster *c)
{
	const char *keep = getenv("HRT_KEEP_ETCD_DIR");

	if (!c)
		return;
	for (int i = 0; i < c->n; i++)
		kill_and_reap(&c->m[i]);
	if (c->dir[0]) {
		if (keep && *keep && strcmp(keep, "0") != 0)
			fprintf(stderr, "hrt-etcd: kept %s\n", c->dir);
		else
			hrt_remove_tree(c->dir);
	}
	for (int k = 0; c->o.extra_args[k]; k++)
		free(c->o.extra_args[k]);
	free(c);
}

/* ------------------------------------------------------------------ */
/* Accessors                                                          */
/* ------------------------------------------------------------------ */

int hrt_etcd_size(const hrt_etcd_cluster *c)
{
	return c ? c->n : 0;
}

const char *hrt_etcd_client_url(const hrt_etcd_cluster *c, int i)
{
	return valid_member(c, i) ? c->m[i].client_url : NULL;
}

int hrt_etcd_client_port(const hrt_etcd_cluster *c, int i)
{
	return valid_member(c, i) ? c->m[i].client_port : 0;
}

const char *hrt_etcd_endpoints(const hrt_etcd_cluster *c)
{
	return c ? c->endpoints : NULL;
}

const char *hrt_etcd_dir(const hrt_etcd_cluster *c)
{
	return c ? c->dir : NULL;
}

const char *hrt_etcd_data_dir(const hrt_etcd_cluster *c, int i)
{
	return valid_member(c, i) ? c->m[i].data_dir : NULL;
}

const char *hrt_etcd_log_path(const hrt_etcd_cluster *c, int i)
{
	return valid_member(c, i) ? c->m[i].log_path : NULL;
}

pid_t hrt_etcd_pid(const hrt_etcd_cluster *c, int i)
{
	return valid_member(c, i) ? c->m[i].pid : 0;
}

/* ------------------------------------------------------------------ */
/* Failures and recovery                                              */
/* ------------------------------------------------------------------ */

/* The member i of a valid cluster that is running, or NULL (with a
 * message naming `what` was asked). */
static struct member *running_member(hrt_etcd_cluster *c, int i,
				     const char *what)
{
	if (!valid_member(c, i)) {
		fprintf(stderr, "hrt-etcd: %s: no member %d\n", what, i);
		return NULL;
	}
	if (!c->m[i].pid) {
		fprintf(stderr, "hrt-etcd: %s: %s is not running\n", what,
			c->m[i].name);
		return NULL;
	}
	return &c->m[i];
}

int hrt_etcd_stop_member(hrt_etcd_cluster *c, int i)
{
	struct member *m = running_member(c, i, "stop");

	if (!m)
		return -1;
	kill(m->pid, SIGTERM);
	/* A stopped process keeps SIGTERM pending until it runs again. */
	kill(m->pid, SIGCONT);
	if (reap(m->pid, STOP_GRACE_MS, NULL) == 0) {
		m->pid = 0;
		m->frozen = false;
		return 0;
	}
	fprintf(stderr, "hrt-etcd: %s ignored SIGTERM for %d ms, killing it\n",
		m->name, STOP_GRACE_MS);
	return kill_and_reap(m);
}

int hrt_etcd_kill_member(hrt_etcd_cluster *c, int i)
{
	struct member *m = running_member(c, i, "kill");

	return m ? kill_and_reap(m) : -1;
}

int hrt_etcd_restart_member(hrt_etcd_cluster *c, int i)
{
	enum wait_result r;

	if (!valid_member(c, i))
		return -1;
	if (c->m[i].pid && hrt_etcd_stop_member(c, i) < 0)
		return -1;
	if (hrt_etcd_spawn_member(c, i) < 0)
		return -1;
	r = wait_members(c, 1u << i);
	if (r == WAIT_PORT_TAKEN) {
		fprintf(stderr, "hrt-etcd: %s: its port was taken meanwhile\n",
			c->m[i].name);
		print_log_tail(&c->m[i]);
	}
	return r == WAIT_OK ? 0 : -1;
}

/* Sends `sig` and waits (bounded) until /proc shows the wanted state. */
static int signal_and_check(struct member *m, int sig, bool stopped)
{
	int64_t deadline = now_ms() + 2000;

	if (kill(m->pid, sig) != 0) {
		fprintf(stderr, "hrt-etcd: kill %s: %s\n", m->name,
			strerror(errno));
		return -1;
	}
	while ((hrt_proc_state(m->pid) == 'T') != stopped) {
		if (now_ms() >= deadline) {
			fprintf(stderr, "hrt-etcd: %s did not %s\n", m->name,
				stopped ? "stop" : "resume");
			return -1;
		}
		sleep_ms(2);
	}
	m->frozen = stopped;
	return 0;
}

int hrt_etcd_freeze_member(hrt_etcd_cluster *c, int i)
{
	struct member *m = running_member(c, i, "freeze");

	return m ? signal_and_check(m, SIGSTOP, true) : -1;
}

int hrt_etcd_thaw_member(hrt_etcd_cluster *c, int i)
{
	struct member *m = running_member(c, i, "thaw");

	return m ? signal_and_check(m, SIGCONT, false) : -1;
}

static int wipe_and_restart(hrt_etcd_cluster *c, bool new_id)
{
	enum wait_result r;

	if (!c)
		return -1;
	for (int i = 0; i < c->n; i++) {
		if (kill_and_reap(&c->m[i]) < 0)
			return -1;
	}
	if (new_id)
		c->generation++;
	r = start_all(c);
	if (r == WAIT_PORT_TAKEN)
		fprintf(stderr, "hrt-etcd: wipe: a port was taken meanwhile\n");
	return r == WAIT_OK ? 0 : -1;
}

int hrt_etcd_wipe_and_restart(hrt_etcd_cluster *c)
{
	return wipe_and_restart(c, true);
}

int hrt_etcd_wipe_and_restart_same_id(hrt_etcd_cluster *c)
{
	return wipe_and_restart(c, false);
}

/* ------------------------------------------------------------------ */
/* etcdctl                                                            */
/* ------------------------------------------------------------------ */

/* etcdctl's argv: binary, connection flags, then the caller's words. */
static int etcdctl_argv(const hrt_etcd_cluster *c, int member,
			const char *words, struct strvec *a)
{
	const struct opts_copy *o = &c->o;
	int r = 0;

	r |= sv_add(a, o->etcdctl_bin);
	r |= sv_addf(a, "--endpoints=%s", member < 0 ? c->endpoints :
					  c->m[member].client_url);
	if (o->ca_file[0])
		r |= sv_addf(a, "--cacert=%s", o->ca_file);
	if (o->client_cert_file[0])
		r |= sv_addf(a, "--cert=%s", o->client_cert_file);
	if (o->client_key_file[0])
		r |= sv_addf(a, "--key=%s", o->client_key_file);
	if (r)
		return -1;
	return split_words(words, a);
}

/*
 * Moves bytes until etcdctl closes its stdout or the deadline passes:
 * `input` into `in_fd` (closed once written), stdout from `out_fd` into
 * `o`.  Returns 0 at end of output, -1 on timeout or error.
 */
static int pump(int in_fd, const char *input, int out_fd, struct outbuf *o,
		int64_t deadline)
{
	size_t in_left = input ? strlen(input) : 0;
	char buf[4096];

	if (in_fd >= 0 && !in_left) {
		close(in_fd);
		in_fd = -1;
	}
	for (;;) {
		struct pollfd p[2] = { { out_fd, POLLIN, 0 },
				       { in_fd, POLLOUT, 0 } };
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			break;
		r = poll(p, in_fd >= 0 ? 2 : 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		if (in_fd >= 0 && p[1].revents) {
			/* A socket, not a pipe: MSG_NOSIGNAL spares the test
			 * a SIGPIPE if etcdctl quits without reading. */
			ssize_t w = send(in_fd, input, in_left,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (w > 0) {
				input += w;
				in_left -= (size_t)w;
			}
			if (!in_left || (w < 0 && errno != EAGAIN &&
					 errno != EINTR)) {
				close(in_fd);
				in_fd = -1;
			}
		}
		if (p[0].revents) {
			ssize_t n = read(out_fd, buf, sizeof(buf));

			if (n == 0) {
				if (in_fd >= 0)
					close(in_fd);
				return 0;
			}
			if (n > 0)
				outbuf_put(o, buf, (size_t)n);
			else if (errno != EINTR && errno != EAGAIN)
				break;
		}
	}
	if (in_fd >= 0)
		close(in_fd);
	return -1;
}

static int run_etcdctl(const hrt_etcd_cluster *c, int member,
		       const char *input, char *out, size_t outlen,
		       const char *fmt, va_list ap)
{
	struct strvec argv = { 0 }, env = { 0 };
	int out_pipe[2] = { -1, -1 }, in_pair[2] = { -1, -1 };
	int null_fd = -1, status = -1, result = -1;
	int64_t deadline = now_ms() + ETCDCTL_TIMEOUT_MS;
	struct outbuf o;
	char *words = NULL;
	pid_t pid = -1;

	outbuf_init(&o, out, outlen);
	if (!c || !fmt || (member >= 0 && !valid_member(c, member)))
		return -1;
	if (vasprintf(&words, fmt, ap) < 0) {
		words = NULL;
		goto out;
	}
	if (etcdctl_argv(c, member, words, &argv) < 0 ||
	    child_env(&env, "ETCDCTL_API=3") < 0)
		goto out;
	if (pipe2(out_pipe, O_CLOEXEC) < 0)
		goto out;
	if (input) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
			       in_pair) < 0)
			goto out;
	} else {
		null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null_fd < 0)
			goto out;
	}
	pid = spawn(c->o.etcdctl_bin, argv.v, env.v,
		    input ? in_pair[1] : null_fd, out_pipe[1], 2);
	close(out_pipe[1]);
	out_pipe[1] = -1;
	if (in_pair[1] >= 0) {
		close(in_pair[1]);
		in_pair[1] = -1;
	}
	if (pid <= 0)
		goto out;
	/* pump() closes the parent's end of stdin. */
	if (pump(input ? in_pair[0] : -1, input, out_pipe[0], &o,
		 deadline) < 0) {
		in_pair[0] = -1;
		fprintf(stderr, "hrt-etcd: etcdctl %s: timed out\n", words);
		kill(pid, SIGKILL);
		reap(pid, REAP_TIMEOUT_MS, NULL);
		goto out;
	}
	in_pair[0] = -1;
	if (reap(pid, (unsigned)(deadline > now_ms() ? deadline - now_ms() : 0),
		 &status) < 0) {
		fprintf(stderr, "hrt-etcd: etcdctl %s: did not exit\n", words);
		kill(pid, SIGKILL);
		reap(pid, REAP_TIMEOUT_MS, NULL);
		goto out;
	}
	if (status >= 0 && WIFEXITED(status))
		result = WEXITSTATUS(status);
out:
	if (result < 0 && pid < 0)
		fprintf(stderr, "hrt-etcd: cannot run etcdctl %s\n",
			words ? words : fmt);
	for (int k = 0; k < 2; k++) {
		if (out_pipe[k] >= 0)
			close(out_pipe[k]);
		if (in_pair[k] >= 0)
			close(in_pair[k]);
	}
	if (null_fd >= 0)
		close(null_fd);
	free(words);
	sv_free(&argv);
	sv_free(&env);
	return result;
}

int hrt_etcdctl(const hrt_etcd_cluster *c, char *out, size_t outlen,
		const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = run_etcdctl(c, -1, NULL, out, outlen, fmt, ap);
	va_end(ap);
	return r;
}

int hrt_etcdctl_member(const hrt_etcd_cluster *c, int i, char *out,
		       size_t outlen, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (!valid_member(c, i)) {
		if (out && outlen)
			out[0] = '\0';
		return -1;
	}
	va_start(ap, fmt);
	r = run_etcdctl(c, i, NULL, out, outlen, fmt, ap);
	va_end(ap);
	return r;
}

int hrt_etcdctl_stdin(const hrt_etcd_cluster *c, const char *input,
		      char *out, size_t outlen, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = run_etcdctl(c, -1, input ? input : "", out, outlen, fmt, ap);
	va_end(ap);
	return r;
}
