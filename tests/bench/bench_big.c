/* SPDX-License-Identifier: MIT */
/*
 * bench_big.c - hashring-bench --big N: the first sync, one-node changes,
 * the CLI and the watcher's memory on a ring of N nodes (100,000 is
 * HR_NODES_MAX), against a real etcd on loopback.
 *
 * The split between etcd and hashring comes from two sides: a bare libcurl
 * loop reads the same pages as the library (same page size, same pinned
 * revision) and only keeps the bytes, which is what etcd and the loopback
 * cost; and the watcher's own log lines say where its time went
 * (event=synced list_ms/records_ms/build_ms, event=ring build_ms: derive
 * plus publish).  The bench reads them from its log sink.
 */
#include "bench_big.h"
#include "bench_put.h"

#include "base64.h"
#include "etcd_fixture.h"
#include "hashring.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PREFIX "/bench/big/"
#define PREFIX_END "/bench/big0"	/* PREFIX with its last byte + 1 */
/* Records per transaction while loading (etcd runs with this many as its
 * --max-txn-ops). */
#define LOAD_TXN_OPS 1000
/* A change not published after this long counts as missed. */
#define VISIBLE_TIMEOUT_NS (10000 * 1000000LL)
/* The event=ring lines remembered (a few changes are in flight at most). */
#define RING_LINES 64

/* ---- what the watcher's log says ------------------------------------------ */

typedef struct ring_line {
	int64_t revision;
	double build_ms;
} ring_line;

typedef struct sink {
	pthread_mutex_t mu;
	ring_line lines[RING_LINES];
	unsigned next;
	int synced;            /* an event=synced line was parsed */
	double list_ms, records_ms, build_ms;
} sink;

/* The value of ` name=` in a logfmt line, as a number (NAN if absent). */
static double field(const char *line, const char *name)
{
	char key[48];
	const char *p;

	snprintf(key, sizeof key, " %s=", name);
	p = strstr(line, key);
	return p ? strtod(p + strlen(key), NULL) : NAN;
}

static void on_log(void *ud, hr_log_level level, const char *line)
{
	sink *s = ud;
	if (level <= HR_LOG_WARN)
		fprintf(stderr, "bench: library: %s\n", line);
	pthread_mutex_lock(&s->mu);
	if (strstr(line, " event=ring ")) {
		ring_line *l = &s->lines[s->next++ % RING_LINES];
		l->revision = (int64_t)field(line, "revision");
		l->build_ms = field(line, "build_ms");
	} else if (strstr(line, " event=synced ") && !s->synced) {
		s->synced = 1;
		s->list_ms = field(line, "list_ms");
		s->records_ms = field(line, "records_ms");
		s->build_ms = field(line, "build_ms");
	}
	pthread_mutex_unlock(&s->mu);
}

/* The event=ring line of `revision`, waited for (bounded); 0 or -1. */
static int ring_line_of(sink *s, int64_t revision, ring_line *out)
{
	int64_t until = hrb_now_ns() + VISIBLE_TIMEOUT_NS;

	do {
		pthread_mutex_lock(&s->mu);
		for (unsigned i = 0; i < RING_LINES; i++) {
			if (s->lines[i].revision == revision) {
				*out = s->lines[i];
				pthread_mutex_unlock(&s->mu);
				return 0;
			}
		}
		pthread_mutex_unlock(&s->mu);
		hrb_sleep_ns(200000);
	} while (hrb_now_ns() < until);
	return -1;
}

/* Milliseconds between two CPU times in nanoseconds (NAN if either is
 * unknown). */
static double cpu_ms(int64_t from, int64_t to)
{
	return from < 0 || to < 0 ? NAN : (double)(to - from) / 1e6;
}

/* ---- memory ---------------------------------------------------------------- */

static double rss_mb(void)
{
	long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return NAN;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? NAN : (double)resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

static double heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (double)(mi.uordblks + mi.hblkhd);
}

/* ---- the bare paged range -------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
	size_t n = size * nmemb;

	return hrb_buf_append(ud, p, n, SIZE_MAX) ? 0 : n;
}

/* The last `"key":"..."` of a reply (the page's last key, decoded); NULL if
 * none.  A scan from the end: nothing else of the reply is parsed. */
static char *last_key(const hrb_buf *b, size_t *len)
{
	static const char tag[] = "\"key\":\"";
	char *out = NULL;

	for (size_t i = b->len; i-- > sizeof tag - 1;) {
		const char *at = b->p + i - (sizeof tag - 1);
		if (memcmp(at, tag, sizeof tag - 1) == 0) {
			const char *v = at + sizeof tag - 1, *end = strchr(v, '"');
			if (end && hr__base64_decode(v, (size_t)(end - v), &out, len) == 0)
				return out;
			return NULL;
		}
	}
	return NULL;
}

/*
 * Reads every page of PREFIX the way the library's full sync does (same
 * limit, later pages pinned to the first page's revision, each starting
 * just after the last key) but keeps only the bytes.  Returns the time in
 * ms, *pages the pages read; NAN on failure.
 */
static double raw_range(const char *url, int page_size, int *pages)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	hrb_buf b = { 0 };
	char full[320], *body = malloc(4096), *key = NULL;
	size_t key_len = strlen(PREFIX);
	long long rev = 0;
	double ms = NAN;
	int64_t t0;
	int more = 1;

	*pages = 0;
	key = strdup(PREFIX);
	if (!h || !hdr || !body || !key)
		goto out;
	snprintf(full, sizeof full, "%s/v3/kv/range", url);
	curl_easy_setopt(h, CURLOPT_URL, full);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
	t0 = hrb_now_ns();
	while (more) {
		char k64[1024], e64[64], rv[48] = "";
		long status = 0;
		size_t next_len = 0;
		char *next;

		if (hr__base64_encoded_size(key_len) > sizeof k64)
			goto out;
		hr__base64_encode(key, key_len, k64);
		hr__base64_encode(PREFIX_END, strlen(PREFIX_END), e64);
		if (rev)
			snprintf(rv, sizeof rv, ",\"revision\":\"%lld\"", rev);
		snprintf(body, 4096, "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"%d\"%s}",
			 k64, e64, page_size, rv);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		b.len = 0;
		if (curl_easy_perform(h) != CURLE_OK)
			goto out;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		if (status != 200 || !b.p)
			goto out;
		(*pages)++;
		if (!rev) {
			const char *r = strstr(b.p, "\"revision\":\"");
			if (!r)
				goto out;
			rev = strtoll(r + 12, NULL, 10);
		}
		more = strstr(b.p, "\"more\":true") != NULL;
		if (!more)
			break;
		next = last_key(&b, &next_len);
		if (!next)
			goto out;
		/* The next page starts just after it: the key and a NUL. */
		free(key);
		key = realloc(next, next_len + 1);
		if (!key)
			goto out;
		key[next_len] = '\0';
		key_len = next_len + 1;
	}
	ms = (double)(hrb_now_ns() - t0) / 1e6;
out:
	free(key);
	free(body);
	free(b.p);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return ms;
}

/* ---- lookups on the big ring ------------------------------------------------ */

#define KEY_LEN 16
#define LOOKUP_KEYS (1u << 20)	/* 16 MiB of keys, far more than the caches */
#define LOOKUP_ROUNDS 7
#define LOOKUP_OPS 200000
#define BATCH_KEYS 128

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* hr_ring_lookup() and hr_ring_lookup_batch() (BATCH_KEYS keys a call) on
 * `ring`, random keys in turn from a pool far larger than the caches: ns
 * of thread CPU time per key, the median of LOOKUP_ROUNDS rounds with
 * the two in turn. */
static void measure_lookups(const hr_ring *ring, hrb_big_report *b)
{
	unsigned char *keys = malloc((size_t)LOOKUP_KEYS * KEY_LEN);
	double one[LOOKUP_ROUNDS], batch[LOOKUP_ROUNDS];
	const void *ptrs[BATCH_KEYS];
	size_t lens[BATCH_KEYS];
	hr_batch_owner out[BATCH_KEYS];
	uint64_t x = 0x9e3779b97f4a7c15u, answers = 0;
	size_t at = 0;

	if (!keys)
		return;
	for (size_t i = 0; i < (size_t)LOOKUP_KEYS * KEY_LEN / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(keys + i * 8, &x, 8);
	}
	for (size_t k = 0; k < BATCH_KEYS; k++)
		lens[k] = KEY_LEN;
	for (int r = 0; r < LOOKUP_ROUNDS; r++) {
		int64_t t0 = thread_cpu_ns();

		for (size_t i = 0; i < LOOKUP_OPS; i++, at = (at + 1) % LOOKUP_KEYS) {
			hr_lookup l;

			hr_ring_lookup(ring, keys + at * KEY_LEN, KEY_LEN, &l, NULL);
			answers += (uintptr_t)l.node;
		}
		one[r] = (double)(thread_cpu_ns() - t0) / LOOKUP_OPS;
		t0 = thread_cpu_ns();
		for (size_t i = 0; i < LOOKUP_OPS / BATCH_KEYS; i++) {
			for (size_t k = 0; k < BATCH_KEYS; k++, at = (at + 1) % LOOKUP_KEYS)
				ptrs[k] = keys + at * KEY_LEN;
			hr_ring_lookup_batch(ring, ptrs, lens, BATCH_KEYS, out, NULL);
			answers += out[0].node;
		}
		batch[r] = (double)(thread_cpu_ns() - t0) /
			   (double)(LOOKUP_OPS / BATCH_KEYS * BATCH_KEYS);
	}
	qsort(one, LOOKUP_ROUNDS, sizeof *one, cmp_double);
	qsort(batch, LOOKUP_ROUNDS, sizeof *batch, cmp_double);
	b->lookup_ns = one[LOOKUP_ROUNDS / 2];
	b->lookup_batch_ns = batch[LOOKUP_ROUNDS / 2];
	if (answers == 42)
		fprintf(stderr, " ");	/* keeps the answers alive */
	free(keys);
}

/* ---- the CLI --------------------------------------------------------------- */

/* Runs argv (the hashring binary) with stdout on /dev/null; the wall time
 * in ms, NAN if it failed. */
static double run_cli(char *const argv[])
{
	int64_t t0 = hrb_now_ns();
	int status = 0;
	pid_t pid = fork();

	if (pid < 0)
		return NAN;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench: %s %s failed (status %d)\n", argv[0], argv[1], status);
		return NAN;
	}
	return (double)(hrb_now_ns() - t0) / 1e6;
}

static void member(FILE *f, int id, int first)
{
	char key[64], value[256];

	hrb_node_key(key, sizeof key, "", id);
	hrb_node_value(value, sizeof value, id, 1);
	fprintf(f, "%s\"%s\":%s\n", first ? "" : ",", key, value);
}

/* A members file of nodes [0, n) plus node `extra` when >= 0. */
static int write_members(const char *path, int n, int extra)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputc('{', f);
	for (int i = 0; i < n; i++)
		member(f, i, i == 0);
	if (extra >= 0)
		member(f, extra, n == 0);
	fputs("}\n", f);
	return fclose(f) ? -1 : 0;
}

/* hashring diff of two members files of as many nodes (the second has the
 * last node replaced by another), and the same work in process: both files parsed and built,
 * then the diff of the write view.  Also the heap one such ring holds. */
static void measure_diff(hrb_report *r, hrb_big_report *b)
{
	char dir[] = "/tmp/hrb-big-XXXXXX", old[64], new[64];
	char *argv[] = { HRB_CLI, "diff", old, new, NULL };
	hr_ring *ra = NULL, *rb = NULL;
	hr_diff *d = NULL;
	hr_error err = { 0 };
	double heap0;
	int64_t t0;

	if (!mkdtemp(dir)) {
		hrb_note(r, "big: no temporary directory for the members files");
		return;
	}
	snprintf(old, sizeof old, "%s/old.json", dir);
	snprintf(new, sizeof new, "%s/new.json", dir);
	if (write_members(old, b->nodes, -1) || write_members(new, b->nodes - 1, b->nodes)) {
		hrb_note(r, "big: cannot write the members files");
		goto out;
	}
	b->cli_diff_ms = run_cli(argv);

	heap0 = heap_bytes();
	t0 = hrb_now_ns();
	if (hr_ring_load_file(old, NULL, &ra, &err)) {
		hrb_note(r, "big: %s", err.message);
		goto out;
	}
	b->ring_mb = (heap_bytes() - heap0) / 1048576.0;
	measure_lookups(ra, b);
	if (hr_ring_load_file(new, NULL, &rb, &err)) {
		hrb_note(r, "big: %s", err.message);
		goto out;
	}
	b->diff_load_ms = (double)(hrb_now_ns() - t0) / 1e6;
	t0 = hrb_now_ns();
	if (hr_diff_new(ra, rb, HR_VIEW_WRITE, &d, &err) == 0)
		b->diff_ms = (double)(hrb_now_ns() - t0) / 1e6;
	else
		hrb_note(r, "big: hr_diff_new: %s", err.message);
out:
	hr_diff_free(d);
	hr_ring_release(ra);
	hr_ring_release(rb);
	unlink(old);
	unlink(new);
	rmdir(dir);
}

/* ---- one-node changes ------------------------------------------------------ */

typedef struct change_samples {
	double *build, *visible;
	int n, missed;
} change_samples;

/* Waits until the client publishes `rev` (or later); the time, 0 if not
 * in time. */
static int64_t wait_published(hr_client *c, int64_t rev, int64_t t0)
{
	for (;;) {
		hr_ring *ring = hr_client_ring(c);
		uint64_t have = hr_ring_revision(ring);
		hr_ring_release(ring);
		int64_t now = hrb_now_ns();
		if (have >= (uint64_t)rev)
			return now;
		if (now - t0 > VISIBLE_TIMEOUT_NS)
			return 0;
		/* Two cores: leave one to the watcher and etcd. */
		sched_yield();
	}
}

static void sample(change_samples *s, sink *k, hr_client *c, int64_t rev, int64_t t0)
{
	int64_t seen;
	ring_line l;

	if (rev < 0 || !(seen = wait_published(c, rev, t0)) || ring_line_of(k, rev, &l)) {
		s->missed++;
		return;
	}
	s->build[s->n] = l.build_ms;
	s->visible[s->n] = (double)(seen - t0) / 1e6;
	s->n++;
}

static void summarise(change_samples *s, hrb_big_change *out)
{
	out->samples = s->n;
	out->missed = s->missed;
	if (!s->n)
		return;
	out->build_p50_ms = hrb_percentile(s->build, (size_t)s->n, 0.5);
	out->build_max_ms = hrb_percentile(s->build, (size_t)s->n, 1.0);
	out->visible_p50_ms = hrb_percentile(s->visible, (size_t)s->n, 0.5);
	out->visible_max_ms = hrb_percentile(s->visible, (size_t)s->n, 1.0);
}

/* Each round: a node's deletion, the same node put again (a new node: the
 * ring stays within HR_NODES_MAX), a weight change of another; each change
 * waits for its ring before the next. */
static void measure_changes(hrb_putter *pt, hr_client *c, sink *k, int rounds,
			    hrb_report *r, hrb_big_report *b)
{
	change_samples s[3];
	hrb_big_change *out[3] = { &b->add, &b->weight, &b->del };
	/* Each node's weight in etcd: a weight change must change it. */
	int *weight = malloc((size_t)b->nodes * sizeof *weight);

	for (int i = 0; i < 3; i++) {
		s[i].n = s[i].missed = 0;
		s[i].build = calloc((size_t)rounds, sizeof(double));
		s[i].visible = calloc((size_t)rounds, sizeof(double));
	}
	if (!weight || !s[0].build || !s[1].build || !s[2].build || !s[0].visible ||
	    !s[1].visible || !s[2].visible) {
		hrb_note(r, "big: out of memory");
		goto out;
	}
	for (int i = 0; i < b->nodes; i++)
		weight[i] = 1;
	for (int i = 0; i < rounds; i++) {
		char key[64], value[256];
		int gone = b->nodes - 1 - i % b->nodes, heavier = i % b->nodes;
		int64_t t0, rev;

		hrb_node_key(key, sizeof key, PREFIX, gone);
		rev = hrb_delete(pt, key, &t0);
		sample(&s[2], k, c, rev, t0);

		weight[gone] = 1;
		hrb_node_value(value, sizeof value, gone, 1);
		rev = hrb_put(pt, key, value, &t0);
		sample(&s[0], k, c, rev, t0);

		weight[heavier] = weight[heavier] == 1 ? 2 : 1;
		hrb_node_key(key, sizeof key, PREFIX, heavier);
		hrb_node_value(value, sizeof value, heavier, weight[heavier]);
		rev = hrb_put(pt, key, value, &t0);
		sample(&s[1], k, c, rev, t0);
	}
	for (int i = 0; i < 3; i++) {
		summarise(&s[i], out[i]);
		if (s[i].missed)
			hrb_note(r, "big: %d changes not published within 10 s", s[i].missed);
	}
out:
	for (int i = 0; i < 3; i++) {
		free(s[i].build);
		free(s[i].visible);
	}
	free(weight);
}

/* ---- the measurement ------------------------------------------------------- */

static void init_change(hrb_big_change *c)
{
	c->samples = c->missed = 0;
	c->build_p50_ms = c->build_max_ms = c->visible_p50_ms = NAN;
	c->visible_max_ms = NAN;
}

/* Every figure starts as "not measured". */
static void init_report(hrb_big_report *b, const hrb_args *a)
{
	memset(b, 0, sizeof *b);
	b->nodes = a->big;
	b->points = b->load_ms = NAN;
	b->open_ms = b->raw_range_ms = b->hashring_ms = NAN;
	b->list_ms = b->records_ms = b->build_ms = NAN;
	b->raw_etcd_cpu_ms = b->sync_etcd_cpu_ms = b->sync_cpu_ms = NAN;
	init_change(&b->add);
	init_change(&b->weight);
	init_change(&b->del);
	b->cli_nodes_ms = b->cli_diff_ms = b->diff_load_ms = b->diff_ms = NAN;
	b->lookup_ns = b->lookup_batch_ns = NAN;
	b->rss_before_mb = b->rss_synced_mb = b->rss_changes_mb = NAN;
	b->heap_synced_mb = b->bytes_per_node = b->ring_mb = NAN;
}

int hrb_measure_big(const hrb_args *args, hrb_report *r, hrb_big_report *b)
{
	static const char *const extra[] = {
		"--quota-backend-bytes=4294967296", "--max-request-bytes=16777216",
		"--max-txn-ops=1000", NULL
	};
	hrt_etcd_opts eo = { .start_timeout_ms = 30000, .extra_args = extra };
	hrt_etcd_cluster *etcd = NULL;
	hrb_putter pt;
	sink k = { .mu = PTHREAD_MUTEX_INITIALIZER };
	hr_etcd_config ec;
	hr_client_config cfg;
	hr_client *c = NULL;
	hr_error err = { 0 };
	int64_t t0, e0, s0;
	double raw1, raw2, heap0;
	int pages = 0, rc = -1;

	init_report(b, args);
	memset(&pt, 0, sizeof pt);
	etcd = hrt_etcd_start(1, &eo);
	if (!etcd || hrb_putter_init(&pt, hrt_etcd_client_url(etcd, 0)))
		goto out;
	t0 = hrb_now_ns();
	if (hrb_load_nodes_batch(&pt, PREFIX, b->nodes, LOAD_TXN_OPS) < 0)
		goto out;
	b->load_ms = (double)(hrb_now_ns() - t0) / 1e6;

	hr_etcd_config_init(&ec);
	hr_client_config_init(&cfg);
	ec.endpoints = hrt_etcd_endpoints(etcd);
	ec.prefix = PREFIX;
	ec.log = on_log;
	ec.log_userdata = &k;
	b->page_size = (int)cfg.page_size;
	/* The default (10 s) can be shorter than a big ring's first sync on
	 * a loaded machine. */
	cfg.open_timeout_ms = 120000;

	/* etcd's side before and after the library's sync: the mean of the
	 * two is set beside it (the first also warms etcd's caches). */
	e0 = hrb_proc_cpu_ns(hrt_etcd_pid(etcd, 0));
	raw1 = raw_range(hrt_etcd_client_url(etcd, 0), b->page_size, &pages);
	b->raw_etcd_cpu_ms = cpu_ms(e0, hrb_proc_cpu_ns(hrt_etcd_pid(etcd, 0)));
	b->rss_before_mb = rss_mb();
	heap0 = heap_bytes();
	e0 = hrb_proc_cpu_ns(hrt_etcd_pid(etcd, 0));
	s0 = hrb_process_cpu_ns();
	t0 = hrb_now_ns();
	if (hr_client_open(&ec, &cfg, &c, &err)) {
		fprintf(stderr, "bench: hr_client_open: %s\n", err.message);
		goto out;
	}
	b->open_ms = (double)(hrb_now_ns() - t0) / 1e6;
	b->sync_cpu_ms = cpu_ms(s0, hrb_process_cpu_ns());
	b->sync_etcd_cpu_ms = cpu_ms(e0, hrb_proc_cpu_ns(hrt_etcd_pid(etcd, 0)));
	b->rss_synced_mb = rss_mb();
	b->heap_synced_mb = (heap_bytes() - heap0) / 1048576.0;
	b->bytes_per_node = (heap_bytes() - heap0) / (double)b->nodes;
	raw2 = raw_range(hrt_etcd_client_url(etcd, 0), b->page_size, &pages);
	b->pages = pages;
	b->raw_range_ms = (raw1 + raw2) / 2;
	b->hashring_ms = b->open_ms - b->raw_range_ms;
	pthread_mutex_lock(&k.mu);
	if (k.synced) {
		b->list_ms = k.list_ms;
		b->records_ms = k.records_ms;
		b->build_ms = k.build_ms;
	}
	pthread_mutex_unlock(&k.mu);
	{
		hr_ring *ring = hr_client_ring(c);
		b->points = (double)hr_ring_point_count(ring);
		b->vnodes = (int)(b->points / (double)b->nodes + 0.5);
		hr_ring_release(ring);
	}

	measure_changes(&pt, c, &k, args->big_changes, r, b);
	/* A replaced ring is freed after its readers' grace period, on the
	 * library's own time: a second for that, so that the figure is what
	 * the watcher keeps rather than what it has yet to free. */
	hrb_sleep_ns(1000 * 1000000LL);
	b->rss_changes_mb = rss_mb();

	{
		/* The default --timeout (3 s) can be shorter than a big
		 * ring's first sync. */
		char *argv[] = { HRB_CLI, "nodes", "--endpoints",
				 (char *)hrt_etcd_client_url(etcd, 0), "--prefix", PREFIX,
				 "--timeout", "120", NULL };
		b->cli_nodes_ms = run_cli(argv);
	}
	/* The watcher's rings are gone before the offline ones are counted. */
	hr_client_close(c);
	c = NULL;
	measure_diff(r, b);
	rc = 0;
out:
	hr_client_close(c);
	hrb_putter_free(&pt);
	hrt_etcd_destroy(etcd);
	return rc;
}

/* ---- printing -------------------------------------------------------------- */

static void text_change(const char *what, const hrb_big_change *c)
{
	printf("  %-14s %5d %9.3f %9.3f %11.3f %11.3f\n", what, c->samples,
	       c->build_p50_ms, c->build_max_ms, c->visible_p50_ms, c->visible_max_ms);
}

void hrb_big_print_text(const hrb_big_report *b)
{
	printf("Big ring: %d nodes x %d vnodes (%.0f points)\n", b->nodes, b->vnodes,
	       b->points);
	printf("  load into etcd (setup)        %10.1f ms\n", b->load_ms);
	printf("First sync: %d pages of %d keys\n", b->pages, b->page_size);
	printf("  hr_client_open to first ring  %10.1f ms\n", b->open_ms);
	printf("  bare paged range (etcd)       %10.1f ms\n", b->raw_range_ms);
	printf("  hashring's part               %10.1f ms\n", b->hashring_ms);
	printf("  watcher: list %.1f ms (pages, parsing, records), of which records %.1f ms;"
	       " build after the last page %.1f ms\n", b->list_ms, b->records_ms, b->build_ms);
	printf("  CPU: etcd %.0f ms for the bare range; during the sync etcd %.0f ms,"
	       " this process %.0f ms\n", b->raw_etcd_cpu_ms, b->sync_etcd_cpu_ms,
	       b->sync_cpu_ms);
	printf("One-node changes (ms):\n");
	printf("  %-14s %5s %9s %9s %11s %11s\n", "", "n", "build p50", "max",
	       "visible p50", "max");
	text_change("new node", &b->add);
	text_change("weight change", &b->weight);
	text_change("delete", &b->del);
	printf("CLI (wall time, output to /dev/null):\n");
	printf("  hashring nodes                %10.1f ms\n", b->cli_nodes_ms);
	printf("  hashring diff OLD NEW         %10.1f ms  (in process: load and build"
	       " %.1f ms, diff %.1f ms)\n", b->cli_diff_ms, b->diff_load_ms, b->diff_ms);
	printf("Lookups on the ring built offline: hr_ring_lookup %.1f ns, hr_ring_lookup_batch"
	       " %.1f ns per key\n", b->lookup_ns, b->lookup_batch_ns);
	printf("Memory: RSS %.1f MiB before open, %.1f MiB after the sync, %.1f MiB after"
	       " the changes\n", b->rss_before_mb, b->rss_synced_mb, b->rss_changes_mb);
	printf("  heap held after the sync %.1f MiB (%.0f bytes per node); one ring %.1f MiB\n",
	       b->heap_synced_mb, b->bytes_per_node, b->ring_mb);
}

/* A number, or null when not measured. */
static void num(const char *name, double v, int first)
{
	printf(first ? "\"%s\":" : ",\"%s\":", name);
	if (isnan(v))
		printf("null");
	else
		printf("%.3f", v);
}

static void json_change(const char *name, const hrb_big_change *c)
{
	printf(",\"%s\":{\"samples\":%d,\"missed\":%d", name, c->samples, c->missed);
	num("build_p50_ms", c->build_p50_ms, 0);
	num("build_max_ms", c->build_max_ms, 0);
	num("visible_p50_ms", c->visible_p50_ms, 0);
	num("visible_max_ms", c->visible_max_ms, 0);
	printf("}");
}

void hrb_big_print_json(const hrb_big_report *b)
{
	printf("{\"nodes\":%d,\"vnodes\":%d", b->nodes, b->vnodes);
	num("points", b->points, 0);
	num("load_ms", b->load_ms, 0);
	printf(",\"first_sync\":{\"page_size\":%d,\"pages\":%d", b->page_size, b->pages);
	num("open_ms", b->open_ms, 0);
	num("raw_range_ms", b->raw_range_ms, 0);
	num("hashring_ms", b->hashring_ms, 0);
	num("list_ms", b->list_ms, 0);
	num("records_ms", b->records_ms, 0);
	num("build_ms", b->build_ms, 0);
	num("raw_etcd_cpu_ms", b->raw_etcd_cpu_ms, 0);
	num("sync_etcd_cpu_ms", b->sync_etcd_cpu_ms, 0);
	num("sync_cpu_ms", b->sync_cpu_ms, 0);
	printf("},\"changes\":{");
	printf("\"rounds\":%d", b->add.samples + b->add.missed);
	json_change("add", &b->add);
	json_change("weight", &b->weight);
	json_change("delete", &b->del);
	printf("},\"cli\":{");
	num("nodes_ms", b->cli_nodes_ms, 1);
	num("diff_ms", b->cli_diff_ms, 0);
	num("diff_load_in_process_ms", b->diff_load_ms, 0);
	num("diff_in_process_ms", b->diff_ms, 0);
	printf("},\"lookups\":{");
	num("ring_ns", b->lookup_ns, 1);
	num("batch_ring_ns", b->lookup_batch_ns, 0);
	printf("},\"memory\":{");
	num("rss_before_mb", b->rss_before_mb, 1);
	num("rss_synced_mb", b->rss_synced_mb, 0);
	num("rss_changes_mb", b->rss_changes_mb, 0);
	num("heap_synced_mb", b->heap_synced_mb, 0);
	num("bytes_per_node", b->bytes_per_node, 0);
	num("ring_mb", b->ring_mb, 0);
	printf("}}");
}
