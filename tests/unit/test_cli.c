/*
 * test_cli.c - the `hashring` command line, run as a program: exit codes,
 * one-line errors, `sim` figures and `lookup --members` answers.
 *
 * Expected lookups come from the library itself (the same members file
 * loaded in-process), so these tests check what the CLI prints, not the
 * placement, which test_ring covers.
 */
#include "hrt_check.h"

#include <cjson/cJSON.h>
#include <xxhash.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hashring.h"

#ifndef HR_CLI_PATH
#error "HR_CLI_PATH must name the built hashring binary"
#endif

#define MAX_ARGS 32

/* Each test runs in its own forked process with its own directory. */
static char tmpdir[PATH_MAX];

struct run {
	int status; /* exit code; -1 if the process did not exit normally */
	char *out;
	char *err;
};

static void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/hashring-cli-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	char path[PATH_MAX + 256];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(tmpdir);
}

static char *path_in_tmp(const char *name)
{
	static char path[PATH_MAX + 64];

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	return path;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	ck_assert_int_ge(len, 0);
	rewind(f);
	buf = malloc((size_t)len + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/* Writes `text` to file `name` in the test directory; returns its path. */
static char *write_file(const char *name, const char *text)
{
	char *path = strdup(path_in_tmp(name));
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

/* Runs the CLI with argv[1..] from the NULL-terminated list; stdout and
 * stderr go to files so that neither can fill a pipe and block. */
static struct run run_argv(const char *const *args)
{
	char out_path[PATH_MAX + 64], err_path[PATH_MAX + 64];
	char *argv[MAX_ARGS + 2];
	struct run r = { .status = -1 };
	int n = 0, wstatus;
	pid_t pid;

	argv[n++] = (char *)"hashring";
	while (args[n - 1]) {
		ck_assert_int_lt(n, MAX_ARGS);
		argv[n] = (char *)args[n - 1];
		n++;
	}
	argv[n] = NULL;
	snprintf(out_path, sizeof out_path, "%s/stdout", tmpdir);
	snprintf(err_path, sizeof err_path, "%s/stderr", tmpdir);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 ||
		    dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(126);
		execv(HR_CLI_PATH, argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
	if (WIFEXITED(wstatus))
		r.status = WEXITSTATUS(wstatus);
	r.out = read_all(out_path);
	r.err = read_all(err_path);
	return r;
}

#define RUN(...) run_argv((const char *const[]){ __VA_ARGS__, NULL })

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* An error is exactly one line on stderr, "hashring: <cmd>: ...", and
 * nothing on stdout. */
static void assert_one_error_line(const struct run *r, const char *cmd)
{
	char prefix[64];

	if (cmd)
		snprintf(prefix, sizeof prefix, "hashring: %s: ", cmd);
	else
		snprintf(prefix, sizeof prefix, "hashring: ");
	ck_assert_msg(strncmp(r->err, prefix, strlen(prefix)) == 0,
		      "stderr '%s' does not start with '%s'", r->err, prefix);
	ck_assert_uint_eq(count_lines(r->err), 1);
	ck_assert_int_eq(r->err[strlen(r->err) - 1], '\n');
	ck_assert_str_eq(r->out, "");
}

static void assert_usage_error(const char *const *args, const char *cmd,
			       const char *needle)
{
	struct run r = run_argv(args);

	ck_assert_msg(r.status == 2, "%s %s: exit %d, stderr '%s'", args[0],
		      args[1] ? args[1] : "", r.status, r.err);
	assert_one_error_line(&r, cmd);
	if (needle)
		ck_assert_msg(strstr(r.err, needle), "'%s' not in '%s'",
			      needle, r.err);
	run_free(&r);
}

/* ---- main: dispatch, help, version --------------------------------------- */

START_TEST(test_version)
{
	struct run r = RUN("--version");

	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, "hashring 0.1.0\n");
	ck_assert_str_eq(r.err, "");
	run_free(&r);
}
END_TEST

START_TEST(test_help)
{
	struct run r = RUN("--help");

	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "Usage: hashring"));
	ck_assert_ptr_nonnull(strstr(r.out, "lookup"));
	ck_assert_ptr_nonnull(strstr(r.out, "sim"));
	ck_assert_str_eq(r.err, "");
	run_free(&r);

	r = RUN("lookup", "--help");
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "--members"));
	ck_assert_ptr_nonnull(strstr(r.out, "--replicas"));
	run_free(&r);

	r = RUN("sim", "-h");
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "--vnodes"));
	run_free(&r);

	r = RUN("help", "sim");
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "--hash"));
	run_free(&r);
}
END_TEST

START_TEST(test_bad_command)
{
	assert_usage_error((const char *const[]){ "frobnicate", NULL }, NULL,
			   "unknown command 'frobnicate'");
	assert_usage_error((const char *const[]){ NULL }, NULL,
			   "missing command");
	assert_usage_error((const char *const[]){ "--frob", NULL }, NULL,
			   "--frob");
	assert_usage_error((const char *const[]){ "help", "frob", NULL }, NULL,
			   "frob");
}
END_TEST

/* ---- sim --------------------------------------------------------------------- */

static cJSON *run_sim_json(const char *const *args)
{
	struct run r = run_argv(args);
	cJSON *doc;

	ck_assert_msg(r.status == 0, "sim exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_uint_eq(count_lines(r.out), 1);
	doc = cJSON_Parse(r.out);
	ck_assert_msg(doc != NULL, "sim output is not JSON: %s", r.out);
	run_free(&r);
	return doc;
}

static double num(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	ck_assert_msg(cJSON_IsNumber(v), "no number '%s'", name);
	return v->valuedouble;
}

static const cJSON *rows_of(const cJSON *doc, int expect)
{
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, "rows");

	ck_assert(cJSON_IsArray(rows));
	ck_assert_int_eq(cJSON_GetArraySize(rows), expect);
	return rows;
}

static uint64_t fnv1a64(const char *s, size_t len)
{
	uint64_t x = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		x ^= (unsigned char)s[i];
		x *= 0x100000001b3ull;
	}
	return x;
}

/* The modulo share computed here, independently of the CLI. */
static double modulo_share(unsigned long nodes, unsigned long keys, int fnv)
{
	unsigned long moved = 0;
	char key[32];

	for (unsigned long i = 0; i < keys; i++) {
		int len = snprintf(key, sizeof key, "key-%lu", i);
		uint64_t h = fnv ? fnv1a64(key, (size_t)len) :
				   XXH3_64bits(key, (size_t)len);

		moved += h % nodes != h % (nodes + 1);
	}
	return (double)moved / (double)keys;
}

START_TEST(test_sim_xxh3_figures)
{
	cJSON *doc = run_sim_json((const char *const[]){
		"sim", "--json", "--vnodes", "200", NULL });
	const cJSON *row;
	const cJSON *hash = cJSON_GetObjectItemCaseSensitive(doc, "hash");

	ck_assert_double_eq(num(doc, "nodes"), 10);
	ck_assert_double_eq(num(doc, "keys"), 200000);
	ck_assert(cJSON_IsString(hash));
	ck_assert_str_eq(hash->valuestring, "xxh3");
	ck_assert_double_eq_tol(num(doc, "modulo_moved"),
				modulo_share(10, 200000, 0), 1e-5);
	ck_assert_double_ge(num(doc, "modulo_moved"), 0.88);
	ck_assert_double_le(num(doc, "modulo_moved"), 0.93);

	row = cJSON_GetArrayItem(rows_of(doc, 1), 0);
	ck_assert_double_eq(num(row, "vnodes"), 200);
	ck_assert_double_ge(num(row, "max_mean"), 1.05);
	ck_assert_double_le(num(row, "max_mean"), 1.25);
	ck_assert_double_ge(num(row, "min_mean"), 0.75);
	ck_assert_double_le(num(row, "min_mean"), 0.97);
	ck_assert_double_gt(num(row, "stddev"), 0.0);
	ck_assert_double_lt(num(row, "stddev"), 0.15);
	ck_assert_double_ge(num(row, "moved"), 0.07);
	ck_assert_double_le(num(row, "moved"), 0.11);
	ck_assert_double_eq_tol(num(row, "ideal_moved"), 1.0 / 11, 1e-6);
	cJSON_Delete(doc);
}
END_TEST

/* The default run: five rows in order, sane figures, and balance that gets
 * better with more vnodes; fast enough to be the demo. */
START_TEST(test_sim_default_rows)
{
	static const double vnodes[] = { 1, 10, 100, 200, 500 };
	struct timespec t0, t1;
	const cJSON *rows;
	cJSON *doc;
	double secs;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	doc = run_sim_json((const char *const[]){ "sim", "--json", NULL });
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* About a second on a laptop; the bound leaves room for sanitizers. */
	ck_assert_msg(secs < 30.0, "sim took %.1f s", secs);

	rows = rows_of(doc, 5);
	for (int i = 0; i < 5; i++) {
		const cJSON *row = cJSON_GetArrayItem(rows, i);

		ck_assert_double_eq(num(row, "vnodes"), vnodes[i]);
		ck_assert_double_ge(num(row, "max_mean"), 1.0);
		ck_assert_double_le(num(row, "min_mean"), 1.0);
		ck_assert_double_ge(num(row, "min_mean"), 0.0);
		ck_assert_double_ge(num(row, "stddev"), 0.0);
		ck_assert_double_gt(num(row, "moved"), 0.0);
		ck_assert_double_lt(num(row, "moved"), 0.5);
	}
	ck_assert_double_gt(num(cJSON_GetArrayItem(rows, 0), "max_mean"),
			    num(cJSON_GetArrayItem(rows, 4), "max_mean"));
	ck_assert_double_gt(num(cJSON_GetArrayItem(rows, 0), "stddev"),
			    num(cJSON_GetArrayItem(rows, 4), "stddev"));
	cJSON_Delete(doc);
}
END_TEST

/* The CLI's row is what the library's rings give for the same nodes and
 * keys, computed here by the definitions of the issue. */
START_TEST(test_sim_matches_library)
{
	const unsigned long n = 4, keys = 3000, vnodes = 7;
	hr_ring_options opts = { .vnodes_per_weight = vnodes };
	unsigned long count[4] = { 0 }, moved = 0, max = 0, min = ULONG_MAX;
	char ids[5][16], key[32];
	hr_node nodes[5];
	hr_ring *before, *after;
	double mean, sum = 0;
	const cJSON *row;
	cJSON *doc;

	for (unsigned long i = 0; i <= n; i++) {
		snprintf(ids[i], sizeof ids[i], "node-%lu", i);
		nodes[i] = (hr_node){ .id = ids[i], .addr = "127.0.0.1:1",
				      .weight = 1, .state = HR_STATE_ACTIVE };
	}
	ck_assert_int_eq(hr_ring_build(nodes, n, &opts, 0, &before, NULL), 0);
	ck_assert_int_eq(hr_ring_build(nodes, n + 1, &opts, 0, &after, NULL), 0);
	for (unsigned long i = 0; i < keys; i++) {
		int len = snprintf(key, sizeof key, "key-%lu", i);
		hr_lookup a, b;

		ck_assert_int_eq(hr_ring_lookup(before, key, (size_t)len, &a), 0);
		ck_assert_int_eq(hr_ring_lookup(after, key, (size_t)len, &b), 0);
		count[strtoul(a.node->id + 5, NULL, 10)]++;
		moved += strcmp(a.node->id, b.node->id) != 0;
	}
	mean = (double)keys / n;
	for (unsigned long i = 0; i < n; i++) {
		max = count[i] > max ? count[i] : max;
		min = count[i] < min ? count[i] : min;
		sum += pow(count[i] / mean - 1, 2);
	}
	hr_ring_release(before);
	hr_ring_release(after);

	doc = run_sim_json((const char *const[]){
		"sim", "--nodes=4", "--keys", "3000", "--vnodes=7", "--json",
		NULL });
	row = cJSON_GetArrayItem(rows_of(doc, 1), 0);
	ck_assert_double_eq_tol(num(row, "max_mean"), max / mean, 1e-5);
	ck_assert_double_eq_tol(num(row, "min_mean"), min / mean, 1e-5);
	ck_assert_double_eq_tol(num(row, "stddev"), sqrt(sum / n), 1e-5);
	ck_assert_double_eq_tol(num(row, "moved"), (double)moved / keys, 1e-5);
	ck_assert_double_eq_tol(num(row, "ideal_moved"), 0.2, 1e-9);
	ck_assert_double_eq_tol(num(doc, "modulo_moved"),
				modulo_share(4, 3000, 0), 1e-5);
	cJSON_Delete(doc);
}
END_TEST

START_TEST(test_sim_other_hashes)
{
	cJSON *doc = run_sim_json((const char *const[]){
		"sim", "--hash", "md5", "--vnodes", "200", "--json", NULL });
	const cJSON *row = cJSON_GetArrayItem(rows_of(doc, 1), 0);

	ck_assert_str_eq(cJSON_GetObjectItem(doc, "hash")->valuestring, "md5");
	/* MD5 mixes well: the seed's figures, within the noise. */
	ck_assert_double_ge(num(row, "max_mean"), 1.03);
	ck_assert_double_le(num(row, "max_mean"), 1.25);
	ck_assert_double_ge(num(row, "moved"), 0.07);
	ck_assert_double_le(num(row, "moved"), 0.11);
	ck_assert_double_ge(num(doc, "modulo_moved"), 0.88);
	ck_assert_double_le(num(doc, "modulo_moved"), 0.93);
	cJSON_Delete(doc);

	doc = run_sim_json((const char *const[]){
		"sim", "--hash=fnv1a", "--keys", "50000", "--vnodes", "10,200",
		"--json", NULL });
	ck_assert_str_eq(cJSON_GetObjectItem(doc, "hash")->valuestring,
			 "fnv1a");
	ck_assert_double_eq_tol(num(doc, "modulo_moved"),
				modulo_share(10, 50000, 1), 1e-5);
	for (int i = 0; i < 2; i++) {
		row = cJSON_GetArrayItem(rows_of(doc, 2), i);
		ck_assert_double_ge(num(row, "max_mean"), 1.0);
		ck_assert_double_le(num(row, "min_mean"), 1.0);
		ck_assert_double_ge(num(row, "moved"), 0.0);
		ck_assert_double_le(num(row, "moved"), 1.0);
	}
	cJSON_Delete(doc);
}
END_TEST

START_TEST(test_sim_text)
{
	struct run r = RUN("sim", "--keys", "20000", "--vnodes", "10,200");

	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.err, "");
	ck_assert_ptr_nonnull(strstr(r.out, "max/mean"));
	ck_assert_ptr_nonnull(strstr(r.out, "hash % N"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n      10 "));
	ck_assert_ptr_nonnull(strstr(r.out, "\n     200 "));
	run_free(&r);
}
END_TEST

START_TEST(test_sim_bad_options)
{
	static const char *const cases[][6] = {
		{ "sim", "--nodes", "0" },
		{ "sim", "--nodes", "-3" },
		{ "sim", "--nodes", "abc" },
		{ "sim", "--nodes", "1.5" },
		{ "sim", "--nodes", " 7" },
		{ "sim", "--nodes=" },
		{ "sim", "--nodes", "100000" },
		{ "sim", "--nodes" },
		{ "sim", "--nodes", "--json" },
		{ "sim", "--keys", "0" },
		{ "sim", "--keys", "+5" },
		{ "sim", "--keys", "99999999999999999999999999" },
		{ "sim", "--keys", "20000000" },
		{ "sim", "--vnodes", "" },
		{ "sim", "--vnodes", "1,,2" },
		{ "sim", "--vnodes", "10," },
		{ "sim", "--vnodes", "0" },
		{ "sim", "--vnodes", "10,-5" },
		{ "sim", "--vnodes", "x" },
		{ "sim", "--nodes", "99999", "--vnodes", "200" },
		{ "sim", "--hash", "sha1" },
		{ "sim", "--hash", "XXH3" },
		{ "sim", "--json=yes" },
		{ "sim", "--bogus" },
		{ "sim", "-n", "3" },
		{ "sim", "extra" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_usage_error(cases[i], "sim", NULL);
	assert_usage_error((const char *const[]){ "sim", "--nodes", "0", NULL },
			   "sim", "--nodes");
	assert_usage_error((const char *const[]){ "sim", "--hash", "sha1", NULL },
			   "sim", "sha1");
}
END_TEST

/* ---- lookup ---------------------------------------------------------------- */

static const char members_zones[] =
	"{\"a\":\"127.0.0.1:11211\","
	" \"b\":{\"addr\":\"127.0.0.2:11211\",\"zone\":\"z1\"},"
	" \"c\":{\"addr\":\"127.0.0.3:11211\",\"zone\":\"z2\",\"weight\":2},"
	" \"d\":{\"addr\":\"127.0.0.4:11211\",\"zone\":\"z1\",\"unknown\":1}}";

static const char members_states[] =
	"{\"a\":{\"addr\":\"127.0.0.1:11211\"},"
	" \"w\":{\"addr\":\"127.0.0.2:11211\",\"state\":\"warming\",\"weight\":3},"
	" \"d\":{\"addr\":\"127.0.0.3:11211\",\"state\":\"draining\",\"weight\":3}}";

#define NKEYS 40

static hr_ring *load_ring(const char *path)
{
	hr_ring *ring = NULL;
	hr_error err = { 0 };

	ck_assert_msg(hr_ring_load_file(path, NULL, &ring, &err) == 0,
		      "load: %s", err.message);
	return ring;
}

/* The text line the CLI must print for `key`, from the library. */
static void expected_text(const hr_ring *ring, const char *key, size_t r,
			  char *buf, size_t size)
{
	const hr_node *reps[16];
	hr_lookup res;
	int k;

	ck_assert_int_eq(hr_ring_lookup(ring, key, strlen(key), &res), 0);
	k = hr_ring_preflist(ring, key, strlen(key), HR_VIEW_WRITE, reps, r);
	ck_assert_int_ge(k, 0);
	snprintf(buf, size, "%s\t%s\t%s\t", key,
		 res.node ? res.node->id : "-",
		 res.read_node ? res.read_node->id : "-");
	if (k == 0)
		strncat(buf, "-", size - strlen(buf) - 1);
	for (int i = 0; i < k; i++) {
		if (i)
			strncat(buf, ",", size - strlen(buf) - 1);
		strncat(buf, reps[i]->id, size - strlen(buf) - 1);
	}
}

/* Runs `lookup` (text) on NKEYS keys, in two runs to stay under
 * MAX_ARGS, and compares every line with the library's answer. */
static void check_text_lines(const char *members, const char *replicas,
			     size_t r)
{
	char *path = write_file("members.json", members);
	char keys[NKEYS][16], expect[256];
	hr_ring *ring = load_ring(path);
	int i = 0;

	for (int k = 0; k < NKEYS; k++)
		snprintf(keys[k], sizeof keys[k], "user:%d", k * 7919);

	for (int half = 0; half < 2; half++) {
		const char *args[MAX_ARGS];
		int m = 0, first = half * NKEYS / 2;
		char *line, *save = NULL;
		struct run res;

		args[m++] = "lookup";
		args[m++] = "--members";
		args[m++] = path;
		if (replicas) {
			args[m++] = "--replicas";
			args[m++] = replicas;
		}
		for (int k = first; k < first + NKEYS / 2; k++)
			args[m++] = keys[k];
		args[m] = NULL;

		res = run_argv(args);
		ck_assert_msg(res.status == 0, "exit %d: %s", res.status,
			      res.err);
		ck_assert_str_eq(res.err, "");
		ck_assert_uint_eq(count_lines(res.out), NKEYS / 2);
		for (line = strtok_r(res.out, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save), i++) {
			expected_text(ring, keys[i], r, expect, sizeof expect);
			ck_assert_str_eq(line, expect);
		}
		run_free(&res);
	}
	ck_assert_int_eq(i, NKEYS);
	hr_ring_release(ring);
	free(path);
}

START_TEST(test_lookup_text)
{
	check_text_lines(members_zones, NULL, 3);
	check_text_lines(members_zones, "1", 1);
	check_text_lines(members_zones, "10", 10);
	check_text_lines(members_states, NULL, 3);
}
END_TEST

static const char *json_id(const cJSON *v)
{
	if (cJSON_IsNull(v))
		return NULL;
	ck_assert(cJSON_IsString(v));
	return v->valuestring;
}

static void assert_same_node(const cJSON *v, const hr_node *node)
{
	const char *id = json_id(v);

	if (!node)
		ck_assert_ptr_null(id);
	else
		ck_assert_str_eq(id, node->id);
}

START_TEST(test_lookup_json)
{
	char *path = write_file("members.json", members_states);
	hr_ring *ring = load_ring(path);
	struct run r = RUN("lookup", "--json", "--members", path,
			   "--replicas=2", "k0", "k1", "k2", "k3", "k4", "k5",
			   "k6", "k7", "k8", "k9", "k10", "k11", "k12", "k13",
			   "k14", "k15", "k16", "k17", "k18", "k19");
	char *line, *save = NULL;
	int i = 0, warming_owner = 0;

	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.err, "");
	ck_assert_uint_eq(count_lines(r.out), 20);
	for (line = strtok_r(r.out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), i++) {
		cJSON *obj = cJSON_Parse(line);
		const hr_node *reps[2];
		const cJSON *arr;
		char key[16];
		hr_lookup res;
		int k;

		ck_assert_msg(obj != NULL, "not JSON: %s", line);
		snprintf(key, sizeof key, "k%d", i);
		ck_assert_str_eq(cJSON_GetObjectItem(obj, "key")->valuestring,
				 key);
		ck_assert_int_eq(hr_ring_lookup(ring, key, strlen(key), &res), 0);
		assert_same_node(cJSON_GetObjectItem(obj, "node"), res.node);
		assert_same_node(cJSON_GetObjectItem(obj, "read_node"),
				 res.read_node);
		/* Writes never go to a draining node, reads never to a
		 * warming one. */
		ck_assert_str_ne(json_id(cJSON_GetObjectItem(obj, "node")), "d");
		ck_assert_str_ne(json_id(cJSON_GetObjectItem(obj, "read_node")),
				 "w");
		warming_owner += strcmp(res.node->id, "w") == 0;

		k = hr_ring_preflist(ring, key, strlen(key), HR_VIEW_WRITE,
				     reps, 2);
		arr = cJSON_GetObjectItem(obj, "replicas");
		ck_assert(cJSON_IsArray(arr));
		ck_assert_int_eq(cJSON_GetArraySize(arr), k);
		ck_assert_int_eq(k, 2);
		for (int j = 0; j < k; j++)
			assert_same_node(cJSON_GetArrayItem(arr, j), reps[j]);
		cJSON_Delete(obj);
	}
	/* Weight 3 of 4 in the write view: "w" owns most of these keys. */
	ck_assert_int_gt(warming_owner, 0);
	hr_ring_release(ring);
	run_free(&r);
	free(path);
}
END_TEST

/* A view with no node: its owner is '-' in text and null in JSON. */
START_TEST(test_lookup_absent_owner)
{
	char *warm = write_file("warm.json",
				"{\"w\":{\"addr\":\"127.0.0.1:1\",\"state\":\"warming\"}}");
	char *drain = write_file("drain.json",
				 "{\"d\":{\"addr\":\"127.0.0.1:1\",\"state\":\"draining\"}}");
	struct run r;
	cJSON *obj;

	r = RUN("lookup", "--members", warm, "k");
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, "k\tw\t-\tw\n");
	run_free(&r);

	r = RUN("lookup", "--members", drain, "k");
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, "k\t-\td\t-\n");
	run_free(&r);

	r = RUN("lookup", "--members", warm, "--json", "k");
	ck_assert_int_eq(r.status, 0);
	obj = cJSON_Parse(r.out);
	ck_assert_ptr_nonnull(obj);
	ck_assert_str_eq(json_id(cJSON_GetObjectItem(obj, "node")), "w");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(obj, "read_node")));
	cJSON_Delete(obj);
	run_free(&r);

	r = RUN("lookup", "--members", drain, "--json", "k");
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out,
			 "{\"key\":\"k\",\"node\":null,\"read_node\":\"d\",\"replicas\":[]}\n");
	run_free(&r);
	free(warm);
	free(drain);
}
END_TEST

/* Whatever the key bytes, a JSON line stays valid JSON and a text line
 * stays one line of four fields. */
START_TEST(test_lookup_escaping)
{
	char *path = write_file("members.json", members_zones);
	const char *odd = "a\"b\\c\x01\x1f\t\n\x7f end";
	const char *utf8 = "caf\xc3\xa9";
	struct run r;
	cJSON *obj;

	r = RUN("lookup", "--json", "--members", path, odd);
	ck_assert_int_eq(r.status, 0);
	ck_assert_uint_eq(count_lines(r.out), 1);
	obj = cJSON_Parse(r.out);
	ck_assert_msg(obj != NULL, "not JSON: %s", r.out);
	ck_assert_str_eq(cJSON_GetObjectItem(obj, "key")->valuestring, odd);
	cJSON_Delete(obj);
	run_free(&r);

	r = RUN("lookup", "--json", "--members", path, utf8);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "{\"key\":\"caf\\u00c3\\u00a9\","));
	obj = cJSON_Parse(r.out);
	ck_assert_ptr_nonnull(obj);
	cJSON_Delete(obj);
	run_free(&r);

	r = RUN("lookup", "--members", path, odd, "--", "--not-an-option");
	ck_assert_int_eq(r.status, 0);
	ck_assert_uint_eq(count_lines(r.out), 2);
	ck_assert_ptr_nonnull(strstr(r.out, "a\"b\\\\c\\x01\\x1f\\t\\n\\x7f end\t"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n--not-an-option\t"));
	run_free(&r);
	free(path);
}
END_TEST

START_TEST(test_lookup_runtime_errors)
{
	static const struct {
		const char *name;
		const char *text;
	} bad[] = {
		{ "syntax.json", "{\"a\": " },
		{ "array.json", "[\"127.0.0.1:1\"]" },
		{ "weight.json", "{\"a\":{\"addr\":\"127.0.0.1:1\",\"weight\":-1}}" },
		{ "state.json", "{\"a\":{\"addr\":\"127.0.0.1:1\",\"state\":\"gone\"}}" },
		{ "noaddr.json", "{\"a\":{\"weight\":1}}" },
		{ "empty.json", "{}" },
		{ "blank.json", "" },
	};
	char *missing = strdup(path_in_tmp("no-such-file.json"));
	struct run r;

	r = RUN("lookup", "--members", missing, "k");
	ck_assert_int_eq(r.status, 1);
	assert_one_error_line(&r, "lookup");
	ck_assert_ptr_nonnull(strstr(r.err, "no-such-file.json"));
	run_free(&r);

	r = RUN("lookup", "--members", tmpdir, "k");
	ck_assert_int_eq(r.status, 1);
	assert_one_error_line(&r, "lookup");
	ck_assert_ptr_nonnull(strstr(r.err, tmpdir));
	run_free(&r);

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *path = write_file(bad[i].name, bad[i].text);

		r = RUN("lookup", "--members", path, "--json", "k");
		ck_assert_msg(r.status == 1, "%s: exit %d", bad[i].name,
			      r.status);
		assert_one_error_line(&r, "lookup");
		ck_assert_ptr_nonnull(strstr(r.err, bad[i].name));
		run_free(&r);
		free(path);
	}
	free(missing);
}
END_TEST

START_TEST(test_lookup_usage_errors)
{
	char *path = write_file("members.json", members_zones);
	const char *const cases[][7] = {
		{ "lookup", "--members", path, NULL },
		{ "lookup", "--members", path, "--replicas", "0", "k" },
		{ "lookup", "--members", path, "--replicas", "-1", "k" },
		{ "lookup", "--members", path, "--replicas", "two", "k" },
		{ "lookup", "--members", path, "--replicas", "100001", "k" },
		{ "lookup", "--members", path, "--json=1", "k" },
		{ "lookup", "--members", path, "--frob", "k" },
		{ "lookup", "--members=", "k" },
		{ "lookup", "k", "--members" },
		{ "lookup", "--members", "--json", "k" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_usage_error(cases[i], "lookup", NULL);
	assert_usage_error((const char *const[]){ "lookup", "--members", path,
						  "--endpoints", "127.0.0.1:1", "k", NULL },
			   "lookup", "--members");
	assert_usage_error((const char *const[]){ "lookup", "--prefix", "", "k", NULL },
			   "lookup", "--prefix");
	assert_usage_error((const char *const[]){ "lookup", "--members", path,
						  "--replicas", "0", "k", NULL },
			   "lookup", "--replicas");
	free(path);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc;

	tc = tcase_create("main");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_bad_command);
	suite_add_tcase(s, tc);

	tc = tcase_create("sim");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sim_xxh3_figures);
	tcase_add_test(tc, test_sim_default_rows);
	tcase_add_test(tc, test_sim_matches_library);
	tcase_add_test(tc, test_sim_other_hashes);
	tcase_add_test(tc, test_sim_text);
	tcase_add_test(tc, test_sim_bad_options);
	suite_add_tcase(s, tc);

	tc = tcase_create("lookup");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_lookup_text);
	tcase_add_test(tc, test_lookup_json);
	tcase_add_test(tc, test_lookup_absent_owner);
	tcase_add_test(tc, test_lookup_escaping);
	tcase_add_test(tc, test_lookup_runtime_errors);
	tcase_add_test(tc, test_lookup_usage_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(cli_suite());
}
