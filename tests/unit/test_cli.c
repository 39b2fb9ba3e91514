/*
 * test_cli.c - the `hashring` command line, run as a program: exit codes,
 * one-line errors, `sim` figures, `lookup --members` answers, output of any
 * bytes, closed pipes, signals and time limits against an etcd that is not
 * there (a closed loopback port), and --help against the man page and
 * docs/cli.md.
 *
 * Expected lookups come from the library itself (the same members file
 * loaded in-process), so these tests check what the CLI prints, not the
 * placement, which test_ring covers.
 */
#define _GNU_SOURCE
#include "hrt_check.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
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
#include <wchar.h>

#include "hashring.h"
#include "diff.h"
#include "sim_rows.h"

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

/*
 * Starts program `prog` (the CLI unless a test tool) with argv[1..] from
 * the NULL-terminated list.  stdout goes to `out_fd` (closed in the
 * parent), or to a file when it is -1, and stderr to a file, so that
 * neither can fill a pipe and block.
 */
static pid_t spawn_prog(const char *prog, const char *const *args, int out_fd)
{
	char out_path[PATH_MAX + 64], err_path[PATH_MAX + 64];
	char *argv[MAX_ARGS + 2];
	int n = 0;
	pid_t pid;

	argv[n++] = (char *)(strcmp(prog, HR_CLI_PATH) ? prog : "hashring");
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
		int out = out_fd >= 0 ? out_fd :
			  open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 ||
		    dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(126);
		/* Each test's child starts from the defaults a shell gives. */
		signal(SIGPIPE, SIG_DFL);
		unsetenv("ETCDCTL_ENDPOINTS");
		unsetenv("ETCDCTL_USER");
		unsetenv("ETCDCTL_PASSWORD");
		execv(prog, argv);
		_exit(127);
	}
	if (out_fd >= 0)
		close(out_fd);
	return pid;
}

static pid_t spawn_argv(const char *const *args, int out_fd)
{
	return spawn_prog(HR_CLI_PATH, args, out_fd);
}

/* Waits for `pid` (killing it after `timeout_ms`); returns its wait status. */
static int wait_child(pid_t pid, int timeout_ms)
{
	int wstatus;

	for (int waited = 0;; waited += 5) {
		pid_t w = waitpid(pid, &wstatus, WNOHANG);

		ck_assert_int_ge(w, 0);
		if (w == pid)
			return wstatus;
		if (waited >= timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &wstatus, 0);
			ck_abort_msg("the command ran longer than %d ms", timeout_ms);
		}
		usleep(5000);
	}
}

/* Runs `prog` to its end; stdout and stderr are read from their files. */
static struct run run_prog(const char *prog, const char *const *args)
{
	struct run r = { .status = -1 };
	int wstatus = wait_child(spawn_prog(prog, args, -1), 60000);

	if (WIFEXITED(wstatus))
		r.status = WEXITSTATUS(wstatus);
	r.out = read_all(path_in_tmp("stdout"));
	r.err = read_all(path_in_tmp("stderr"));
	return r;
}

static struct run run_argv(const char *const *args)
{
	return run_prog(HR_CLI_PATH, args);
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

#define LOOKUP_HEADER "KEY\tNODE\tREAD_NODE\tREPLICAS\n"

/* `lookup`'s text output after its header line, which it must start with. */
static const char *lookup_lines(const char *out)
{
	ck_assert_msg(!strncmp(out, LOOKUP_HEADER, strlen(LOOKUP_HEADER)), "no header: %s", out);
	return out + strlen(LOOKUP_HEADER);
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
	ck_assert_str_eq(r.out, "hashring " HR_VERSION_STRING "\n");
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
	ck_assert_ptr_nonnull(strstr(r.out, "--keys"));
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

/* Runs `hashring sim` (or the sim_hashes tool) with --json; its object. */
static cJSON *run_sim_json_of(const char *prog, const char *const *args)
{
	struct run r = run_prog(prog, args);
	cJSON *doc;

	ck_assert_msg(r.status == 0, "sim exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_uint_eq(count_lines(r.out), 1);
	doc = cJSON_Parse(r.out);
	ck_assert_msg(doc != NULL, "sim output is not JSON: %s", r.out);
	run_free(&r);
	return doc;
}

static cJSON *run_sim_json(const char *const *args)
{
	return run_sim_json_of(HR_CLI_PATH, args);
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
				hrt_sim_modulo_moved(hrt_sim_xxh3, 10, 200000), 1e-5);
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

/* Allocated tokens: joins keep the ring near its fair shares and move
 * exactly the joiner's share; a tenth leaving to heirs stays balanced where
 * arcs falling to the next points do not, and moves exactly each leaver's
 * share. */
START_TEST(test_sim_tokens_leaves)
{
	cJSON *doc = run_sim_json((const char *const[]){
		"sim", "--placement", "tokens", "--nodes", "60", "--json", NULL });
	const cJSON *joined = cJSON_GetObjectItemCaseSensitive(doc, "joined");
	const cJSON *left = cJSON_GetObjectItemCaseSensitive(doc, "left");
	const cJSON *heirs = cJSON_GetObjectItemCaseSensitive(doc, "left_with_heirs");

	ck_assert_double_eq(num(doc, "tokens"), 16);
	ck_assert_double_le(num(joined, "max_fair"), 1.07);
	ck_assert_double_ge(num(joined, "min_fair"), 0.93);
	ck_assert_double_eq(num(doc, "moved_minus_own_max"), 0);
	ck_assert_double_eq(num(left, "nodes"), 54);
	ck_assert_double_eq(num(heirs, "nodes"), 54);
	ck_assert_double_le(num(heirs, "max_fair"), 1.10);
	ck_assert_double_lt(num(heirs, "max_fair"), num(left, "max_fair"));
	ck_assert_double_gt(num(heirs, "min_fair"), num(left, "min_fair"));
	ck_assert_double_eq(num(heirs, "moved_minus_own_max"), 0);
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
 * keys, computed by the definitions of the issue (tests/tools/sim_rows.c). */
START_TEST(test_sim_matches_library)
{
	hrt_sim_row want;
	const cJSON *row;
	cJSON *doc;

	ck_assert_int_eq(hrt_sim_row_of(hrt_sim_xxh3, 4, 3000, 7, &want, NULL), 0);
	doc = run_sim_json((const char *const[]){
		"sim", "--nodes=4", "--keys", "3000", "--vnodes=7", "--json",
		NULL });
	row = cJSON_GetArrayItem(rows_of(doc, 1), 0);
	ck_assert_double_eq_tol(num(row, "max_mean"), want.max_mean, 1e-5);
	ck_assert_double_eq_tol(num(row, "min_mean"), want.min_mean, 1e-5);
	ck_assert_double_eq_tol(num(row, "stddev"), want.stddev, 1e-5);
	ck_assert_double_eq_tol(num(row, "moved"), want.moved, 1e-5);
	ck_assert_double_eq_tol(num(row, "ideal_moved"), 0.2, 1e-9);
	ck_assert_double_eq_tol(num(doc, "modulo_moved"),
				hrt_sim_modulo_moved(hrt_sim_xxh3, 4, 3000), 1e-5);
	cJSON_Delete(doc);
}
END_TEST

/* The seed articles' hashes are a test tool's (tests/tools/sim_hashes.c),
 * on the library's ring: the same experiment, other figures. */
START_TEST(test_sim_other_hashes)
{
	cJSON *doc = run_sim_json_of(HR_SIM_HASHES_PATH, (const char *const[]){
		"--hash", "md5", "--vnodes", "200", "--json", NULL });
	const cJSON *row = cJSON_GetArrayItem(rows_of(doc, 1), 0);

	/* The hashes themselves, by published values. */
	ck_assert_uint_eq(hrt_sim_md5("", 0), 0xd41d8cd98f00b204ull);
	ck_assert_uint_eq(hrt_sim_md5("node-0#0", 8), 0x305a959a087ed12dull);
	ck_assert_uint_eq(hrt_sim_fnv1a("a", 1), 0xaf63dc4c8601ec8cull);

	ck_assert_str_eq(cJSON_GetObjectItem(doc, "hash")->valuestring, "md5");
	/* MD5 mixes well: the seed's figures, within the noise. */
	ck_assert_double_ge(num(row, "max_mean"), 1.03);
	ck_assert_double_le(num(row, "max_mean"), 1.25);
	ck_assert_double_ge(num(row, "moved"), 0.07);
	ck_assert_double_le(num(row, "moved"), 0.11);
	ck_assert_double_ge(num(doc, "modulo_moved"), 0.88);
	ck_assert_double_le(num(doc, "modulo_moved"), 0.93);
	cJSON_Delete(doc);

	doc = run_sim_json_of(HR_SIM_HASHES_PATH, (const char *const[]){
		"--hash", "fnv1a", "--keys", "50000", "--vnodes", "10,200",
		"--json", NULL });
	ck_assert_str_eq(cJSON_GetObjectItem(doc, "hash")->valuestring,
			 "fnv1a");
	ck_assert_double_eq_tol(num(doc, "modulo_moved"), hrt_sim_modulo_moved(hrt_sim_fnv1a, 10, 50000), 1e-5);
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

/* Given xxh3, the tool prints exactly the CLI's tables: the other hashes
 * are the same experiment on the same ring. */
START_TEST(test_sim_tool_xxh3_is_the_cli)
{
	static const char *const args[] = { "--nodes", "7", "--keys", "30000", "--vnodes",
					    "1,3,50", "--json" };
	const char *cli[16] = { "sim" }, *tool[16] = { "--hash", "xxh3" };
	struct run a, b;

	for (size_t i = 0; i < sizeof args / sizeof *args; i++) {
		cli[1 + i] = args[i];
		tool[2 + i] = args[i];
	}
	a = run_argv(cli);
	b = run_prog(HR_SIM_HASHES_PATH, tool);
	ck_assert_int_eq(a.status, 0);
	ck_assert_int_eq(b.status, 0);
	ck_assert_str_eq(a.out, b.out);
	run_free(&a);
	run_free(&b);
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
		{ "sim", "--nodes", "99999", "--vnodes", "400" },
		/* The seed articles' hashes are a test tool's, not the CLI's. */
		{ "sim", "--hash", "md5" },
		{ "sim", "--hash", "xxh3" },
		{ "sim", "--json=yes" },
		{ "sim", "--bogus" },
		{ "sim", "-n", "3" },
		{ "sim", "extra" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_usage_error(cases[i], "sim", NULL);
	assert_usage_error((const char *const[]){ "sim", "--nodes", "0", NULL },
			   "sim", "--nodes");
	assert_usage_error((const char *const[]){ "sim", "--hash", "md5", NULL },
			   "sim", "--hash");
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
		ck_assert_uint_eq(count_lines(lookup_lines(res.out)), NKEYS / 2);
		for (line = strtok_r(res.out + strlen(LOOKUP_HEADER), "\n", &save); line;
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
		/* The owners' addresses, as serve's /lookup gives them. */
		ck_assert_str_eq(json_id(cJSON_GetObjectItem(obj, "addr")), res.node->addr);
		ck_assert_str_eq(json_id(cJSON_GetObjectItem(obj, "read_addr")),
				 res.read_node->addr);
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
	ck_assert_str_eq(lookup_lines(r.out), "k\tw\t-\tw\n");
	run_free(&r);

	r = RUN("lookup", "--members", drain, "k");
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(lookup_lines(r.out), "k\t-\td\t-\n");
	run_free(&r);

	r = RUN("lookup", "--members", warm, "--json", "k");
	ck_assert_int_eq(r.status, 0);
	obj = cJSON_Parse(r.out);
	ck_assert_ptr_nonnull(obj);
	ck_assert_str_eq(json_id(cJSON_GetObjectItem(obj, "node")), "w");
	ck_assert_str_eq(json_id(cJSON_GetObjectItem(obj, "addr")), "127.0.0.1:1");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(obj, "read_node")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(obj, "read_addr")));
	cJSON_Delete(obj);
	run_free(&r);

	r = RUN("lookup", "--members", drain, "--json", "k");
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out,
			 "{\"key\":\"k\",\"node\":null,\"addr\":null,\"read_node\":\"d\","
			 "\"read_addr\":\"127.0.0.1:1\",\"replicas\":[]}\n");
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

	/* Valid UTF-8 stays as it is. */
	r = RUN("lookup", "--json", "--members", path, utf8);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "{\"key\":\"caf\xc3\xa9\","));
	obj = cJSON_Parse(r.out);
	ck_assert_ptr_nonnull(obj);
	cJSON_Delete(obj);
	run_free(&r);

	r = RUN("lookup", "--members", path, odd, "--", "--not-an-option");
	ck_assert_int_eq(r.status, 0);
	ck_assert_uint_eq(count_lines(lookup_lines(r.out)), 2);
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

/* ---- JSON and text output of any bytes ------------------------------------ */

/*
 * Reads JSON lines back with Python's json module (the reader the man page
 * promises losslessness to) and prints, one per line, the hex of the bytes
 * of field `field` of each object, strings encoded back with
 * surrogateescape.
 */
static char *python_fields(const char *json_path, const char *field)
{
	char script[PATH_MAX + 64];
	struct run r;
	FILE *f;

	snprintf(script, sizeof script, "%s/read.py", tmpdir);
	f = fopen(script, "w");
	ck_assert_ptr_nonnull(f);
	fputs("import json, sys\n"
	      "for line in open(sys.argv[1], 'rb'):\n"
	      "    obj = json.loads(line.decode('utf-8'))\n"
	      "    print(obj[sys.argv[2]].encode('utf-8', 'surrogateescape').hex())\n", f);
	ck_assert_int_eq(fclose(f), 0);
	r = run_prog("/usr/bin/python3", (const char *const[]){ script, json_path, field, NULL });
	ck_assert_msg(r.status == 0, "python3 exited %d: %s", r.status, r.err);
	free(r.err);
	return r.out;
}

static void hex_of(const char *s, char *out)
{
	for (; *s; s++, out += 2)
		sprintf(out, "%02x", (unsigned char)*s);
	*out = '\0';
}

/* Every byte string, valid UTF-8 or not, comes back exactly. */
START_TEST(test_json_utf8_roundtrip)
{
	static const char *const zones[] = {
		"z\xc3\xbcrich", "\xe6\x97\xa5\xe6\x9c\xac", "bad\xff\xfe", "\xf0\x9f\x98\x80",
		"blank \"q\" \\", "\xed\xa0\x80surrogate", "\xc0\xafoverlong",
	};
	const size_t n = sizeof zones / sizeof zones[0];
	char members[4096] = "{", expect[4096] = "", hex[256], *got, *path;
	char out_path[PATH_MAX + 64];
	struct run r;

	for (size_t i = 0; i < n; i++) {
		char zone[128], *z = zone;

		/* JSON needs the quote and the backslash escaped. */
		for (const char *c = zones[i]; *c; c++) {
			if (*c == '"' || *c == '\\')
				z += sprintf(z, "\\%c", *c);
			else
				*z++ = *c;
		}
		*z = '\0';
		snprintf(members + strlen(members), sizeof members - strlen(members),
			 "%s\"n%zu\":{\"addr\":\"127.0.0.1:%zu\",\"zone\":\"%s\"}",
			 i ? "," : "", i, i + 1, zone);
		hex_of(zones[i], hex);
		strcat(expect, hex);
		strcat(expect, "\n");
	}
	strcat(members, "}");
	path = write_file("members.json", members);

	r = RUN("nodes", "--members", path, "--json");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_null(strstr(r.out, "\\u00c3")); /* the old, broken form */
	ck_assert_ptr_nonnull(strstr(r.out, "\"zone\":\"z\xc3\xbcrich\""));
	ck_assert_ptr_nonnull(strstr(r.out, "\"zone\":\"bad\\udcff\\udcfe\""));
	snprintf(out_path, sizeof out_path, "%s", path_in_tmp("nodes.json"));
	free(write_file("nodes.json", r.out));
	got = python_fields(out_path, "zone");
	ck_assert_str_eq(got, expect);
	free(got);
	run_free(&r);

	/* Keys too. */
	r = RUN("lookup", "--members", path, "--json", "caf\xc3\xa9", "k\xff", "\xe2\x82",
		"\x01\x7f");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	free(write_file("lookup.json", r.out));
	snprintf(out_path, sizeof out_path, "%s", path_in_tmp("lookup.json"));
	got = python_fields(out_path, "key");
	ck_assert_str_eq(got, "636166c3a9\n6bff\ne282\n017f\n");
	free(got);
	run_free(&r);
	free(path);
}
END_TEST

/* Display columns of a UTF-8 line up to byte `len`. */
static int columns(const char *s, size_t len)
{
	wchar_t wide[512];
	char buf[1024];
	size_t n;

	ck_assert_uint_lt(len, sizeof buf);
	memcpy(buf, s, len);
	buf[len] = '\0';
	n = mbstowcs(wide, buf, 512);
	ck_assert_uint_ne(n, (size_t)-1);
	return wcswidth(wide, n);
}

/* Columns line up whatever the ids and zones, counted in display width:
 * text columns start, number columns end, at the same place on every
 * line. */
START_TEST(test_nodes_table_columns)
{
	char *path = write_file("members.json",
		"{\"a\":{\"addr\":\"127.0.0.1:1\",\"zone\":\"z\xc3\xbcrich\"},"
		" \"a-very-long-node-identifier-of-40-bytes\":{\"addr\":\"127.0.0.1:2\",\"zone\":\"\xe6\x97\xa5\xe6\x9c\xac\"},"
		" \"c\":{\"addr\":\"[::1]:11211\",\"zone\":\"x\xffy\",\"state\":\"draining\",\"weight\":2.5},"
		" \"d\":{\"addr\":\"127.0.0.1:4\"}}");
	struct run r = RUN("nodes", "--members", path);
	int edge[7] = { 0 }, lines = 0;
	char *line, *save = NULL;

	ck_assert(setlocale(LC_CTYPE, "C.UTF-8"));
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	/* A byte that is not UTF-8 is shown escaped, and counted so. */
	ck_assert_ptr_nonnull(strstr(r.out, "x\\xffy"));
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *p = line;

		if (line[0] == '#') {
			ck_assert_ptr_nonnull(strstr(line, "# 4 nodes, 1100 points, digest "));
			ck_assert_ptr_null(strstr(line, "revision"));
			continue;
		}
		/* Cells are separated by two blanks at least; none holds one. */
		for (int c = 0; c < 7; c++) {
			const char *start, *end;
			int at;

			while (*p == ' ')
				p++;
			start = p;
			end = strstr(p, "  ");
			if (!end)
				end = p + strlen(p);
			ck_assert_msg(end > start, "line %d: no column %d: %s", lines, c, line);
			at = columns(line, (size_t)((c < 4 ? start : end) - line));
			if (lines == 0)
				edge[c] = at;
			ck_assert_msg(at == edge[c], "line %d, column %d at %d, not %d: %s", lines,
				      c, at, edge[c], line);
			p = end;
		}
		ck_assert_str_eq(p, "");
		lines++;
	}
	ck_assert_int_eq(lines, 5);
	run_free(&r);
	free(path);
}
END_TEST

/* ---- nodes --members -------------------------------------------------------- */

START_TEST(test_nodes_members)
{
	char *path = write_file("members.json", members_states);
	hr_ring *ring = load_ring(path);
	struct run r = RUN("nodes", "--json", "--members", path);
	char *line, *save = NULL;
	size_t i = 0;

	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.err, "");
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		const hr_node *node = hr_ring_node(ring, i);
		hr_view view = node->state == HR_STATE_DRAINING ? HR_VIEW_READ : HR_VIEW_WRITE;
		cJSON *obj = cJSON_Parse(line);

		ck_assert_ptr_nonnull(obj);
		ck_assert_str_eq(cJSON_GetObjectItem(obj, "id")->valuestring, node->id);
		ck_assert_str_eq(cJSON_GetObjectItem(obj, "state")->valuestring,
				 hr_state_name(node->state));
		ck_assert_double_eq_tol(num(obj, "share"), hr_ring_node_share(ring, node, view), 1e-6);
		ck_assert_double_eq(num(obj, "vnodes"), hr_ring_node_vnodes(ring, node));
		/* An offline ring has no revision. */
		ck_assert_ptr_null(cJSON_GetObjectItem(obj, "revision"));
		cJSON_Delete(obj);
	}
	ck_assert_uint_eq(i, hr_ring_node_count(ring));
	run_free(&r);

	assert_usage_error((const char *const[]){ "nodes", "--members", path, "--prefix", "/x/", NULL },
			   "nodes", "--members and --prefix");
	assert_usage_error((const char *const[]){ "nodes", "--members=", NULL }, "nodes", "--members");
	assert_usage_error((const char *const[]){ "nodes", "extra", NULL }, "nodes", "extra");
	hr_ring_release(ring);
	free(path);
}
END_TEST

/* ---- plots ---------------------------------------------------------------------- */

/* Whether python3's XML parser reads `path` as well-formed XML whose root
 * is an <svg> element. */
static int svg_well_formed(const char *path)
{
	char cmd[PATH_MAX + 256];

	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import sys, xml.etree.ElementTree as E; "
		 "r = E.parse(sys.argv[1]).getroot(); "
		 "sys.exit(r.tag != \"{http://www.w3.org/2000/svg}svg\")' '%s'", path);
	return system(cmd) == 0;
}

/* `nodes --svg`: the table as before, and a plot with every node, its
 * state, and the arcs the warming node takes over. */
START_TEST(test_nodes_svg)
{
	char *path = write_file("members.json", members_states);
	char *svg_path = strdup(path_in_tmp("ring.svg")), *svg, *odd;
	struct run r = RUN("nodes", "--members", path, "--svg", svg_path);
	hr_ring *ring = load_ring(path);

	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "# 3 nodes"));
	ck_assert(svg_well_formed(svg_path));
	svg = read_all(svg_path);
	for (size_t i = 0; i < hr_ring_node_count(ring); i++) {
		char want[64];

		snprintf(want, sizeof want, "data-node=\"%s\"", hr_ring_node(ring, i)->id);
		ck_assert_msg(strstr(svg, want), "no %s in the plot", want);
	}
	ck_assert_ptr_nonnull(strstr(svg, "w (warming)"));
	ck_assert_ptr_nonnull(strstr(svg, "d (draining)"));
	ck_assert_ptr_nonnull(strstr(svg, "stroke-dasharray")); /* the takeover */
	free(svg);
	run_free(&r);

	/* Rendezvous: no arcs in its diffs, each node's share drawn as one. */
	r = RUN("nodes", "--members", path, "--placement", "rendezvous", "--svg", svg_path);
	ck_assert_msg(r.status == 0, "rendezvous: exit %d: %s", r.status, r.err);
	ck_assert(svg_well_formed(svg_path));
	run_free(&r);

	/* An id with XML's special characters: escaped, still well-formed. */
	odd = write_file("odd.json", "{\"a&<b>\\\"x'\":{\"addr\":\"127.0.0.1:1\"},\"q\":\"127.0.0.1:2\"}");
	r = RUN("nodes", "--members", odd, "--svg", svg_path);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert(svg_well_formed(svg_path));
	svg = read_all(svg_path);
	ck_assert_ptr_nonnull(strstr(svg, "data-node=\"a&amp;&lt;b&gt;&quot;x&apos;\""));
	free(svg);
	free(odd);
	run_free(&r);

	r = RUN("nodes", "--members", path, "--svg", "/nonexistent/dir/ring.svg");
	ck_assert_int_eq(r.status, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "cannot write /nonexistent/dir/ring.svg"));
	run_free(&r);
	hr_ring_release(ring);
	free(svg_path);
	free(path);
}
END_TEST

/* `sim --svg`: both panels, one point per vnode count. */
START_TEST(test_sim_svg)
{
	char *svg_path = strdup(path_in_tmp("sim.svg")), *svg;
	struct run r = RUN("sim", "--keys", "20000", "--nodes", "5", "--vnodes", "1,10,100",
			   "--svg", svg_path);
	size_t lines = 0;

	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "max/mean")); /* the table too */
	ck_assert(svg_well_formed(svg_path));
	svg = read_all(svg_path);
	for (const char *p = svg; (p = strstr(p, "<polyline")); p++)
		lines++;
	ck_assert_uint_eq(lines, 4); /* max, min, moved, ideal */
	ck_assert_ptr_nonnull(strstr(svg, ">100</text>"));
	ck_assert_ptr_nonnull(strstr(svg, "20000 keys on 5 nodes"));
	free(svg);
	run_free(&r);
	assert_usage_error((const char *const[]){ "sim", "--svg=", NULL }, "sim", "--svg");
	free(svg_path);
}
END_TEST

/* ---- sim --compare ----------------------------------------------------------------- */

static const char *const compare_rows[] = { "modulo", "ring-1", "ring-100", "ring-200",
					    "ring-500", "tokens-16", "ketama", "maglev", "rendezvous", "jump" };
#define COMPARE_ROWS (sizeof compare_rows / sizeof compare_rows[0])

static const char *str(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	ck_assert_msg(cJSON_IsString(v), "no string '%s'", name);
	return v->valuestring;
}

/* The row named `name` of a --compare object. */
static const cJSON *compare_row(const cJSON *doc, const char *name)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(doc, "rows"))
		if (!strcmp(str(row, "name"), name))
			return row;
	ck_abort_msg("no row %s", name);
	return NULL;
}

/* Every row, in order, with every column, within what the definitions
 * allow (docs/hashring.1); `nodes` and `keys` as given. */
static void check_compare_doc(const cJSON *doc, double nodes, double keys)
{
	static const char *const columns[] = { "max_mean", "min_mean", "moved_add",
					       "moved_add_ratio", "moved_remove",
					       "moved_remove_ratio", "lookup_ns", "build_ms",
					       "bytes" };
	const cJSON *rows = rows_of(doc, (int)COMPARE_ROWS);
	char last[32];

	ck_assert_double_eq(num(doc, "nodes"), nodes);
	ck_assert_double_eq(num(doc, "keys"), keys);
	ck_assert_str_eq(str(doc, "hash"), "xxh3");
	snprintf(last, sizeof last, "node-%.0f", nodes);
	ck_assert_str_eq(str(doc, "joins"), last);
	ck_assert_double_eq_tol(num(doc, "ideal_moved_add"), 1 / (nodes + 1), 1e-6);
	ck_assert_double_eq_tol(num(doc, "ideal_moved_remove"), 1 / nodes, 1e-6);
	snprintf(last, sizeof last, "node-%.0f", nodes - 1);
	for (size_t i = 0; i < COMPARE_ROWS; i++) {
		const cJSON *row = cJSON_GetArrayItem(rows, (int)i);
		const cJSON *numbered = cJSON_GetObjectItemCaseSensitive(row, "numbered");

		ck_assert_str_eq(str(row, "name"), compare_rows[i]);
		for (size_t c = 0; c < sizeof columns / sizeof columns[0]; c++)
			ck_assert_double_ge(num(row, columns[c]), 0);
		ck_assert(cJSON_IsBool(numbered));
		/* Numbered buckets lose the last; the rings one chosen node,
		 * the same for all. */
		if (cJSON_IsTrue(numbered))
			ck_assert_str_eq(str(row, "leaves"), last);
		else
			ck_assert_str_eq(str(row, "leaves"),
					 str(compare_row(doc, "ring-1"), "leaves"));
		ck_assert_double_ge(num(row, "max_mean"), 1.0);
		ck_assert_double_le(num(row, "min_mean"), 1.0);
		ck_assert_double_gt(num(row, "moved_add"), 0);
		ck_assert_double_le(num(row, "moved_add"), 1);
		ck_assert_double_le(num(row, "moved_remove"), 1);
		/* Six significant digits each. */
		ck_assert_double_eq_tol(num(row, "moved_add_ratio"),
					num(row, "moved_add") * (nodes + 1),
					1e-5 * (nodes + 1));
		ck_assert_double_eq_tol(num(row, "moved_remove_ratio"),
					num(row, "moved_remove") * nodes, 1e-5 * nodes);
		ck_assert_double_gt(num(row, "lookup_ns"), 0);
		ck_assert_double_gt(num(row, "bytes"), 0);
	}
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(compare_row(doc, "modulo"),
								 "numbered")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(compare_row(doc, "jump"),
								 "numbered")));
}

START_TEST(test_sim_compare_json)
{
	cJSON *doc = run_sim_json((const char *const[]){
		"sim", "--compare", "--json", "--keys", "200000", NULL });
	cJSON *sim = run_sim_json((const char *const[]){
		"sim", "--json", "--keys", "200000", "--vnodes", "200", NULL });
	const cJSON *jump, *modulo, *maglev, *rdv, *ring, *vnodes200;

	check_compare_doc(doc, 10, 200000);
	jump = compare_row(doc, "jump");
	modulo = compare_row(doc, "modulo");
	maglev = compare_row(doc, "maglev");
	/* Jump moves about the ideal both ways; hash % N nearly everything,
	 * exactly what sim (and the test tool) measure. */
	ck_assert_double_eq_tol(num(jump, "moved_add_ratio"), 1.0, 0.04);
	ck_assert_double_eq_tol(num(jump, "moved_remove_ratio"), 1.0, 0.04);
	ck_assert_double_le(num(jump, "max_mean"), 1.03);
	ck_assert_double_eq_tol(num(modulo, "moved_add"), 10.0 / 11, 0.01);
	ck_assert_double_eq_tol(num(modulo, "moved_add"), num(sim, "modulo_moved"), 1e-5);
	ck_assert_double_eq_tol(num(modulo, "moved_add"),
				hrt_sim_modulo_moved(hrt_sim_xxh3, 10, 200000), 1e-5);
	ck_assert_double_eq_tol(num(modulo, "moved_remove"), 9.0 / 10, 0.01);
	/* Maglev's table is within a slot of even; the keys' own spread
	 * adds the rest. */
	ck_assert_double_le(num(maglev, "max_mean"), 1.02);
	ck_assert_double_ge(num(maglev, "min_mean"), 0.98);
	ck_assert_double_le(num(maglev, "moved_add_ratio"), 1.2);
	/* Rendezvous: shares are w/W exactly, and a join or a leave moves
	 * only the joiner's or the leaver's keys; the rest is the keys' own
	 * spread. */
	/* Tokens: a join takes keys only from the nodes it splits, about its
	 * share; 16 tokens a node balance within the bound of placement.md
	 * section 16 at 10 nodes. */
	ck_assert_double_eq_tol(num(compare_row(doc, "tokens-16"), "moved_add_ratio"), 1.0, 0.1);
	ck_assert_double_le(num(compare_row(doc, "tokens-16"), "max_mean"), 1.05);
	rdv = compare_row(doc, "rendezvous");
	ck_assert_double_le(num(rdv, "max_mean"), 1.02);
	ck_assert_double_ge(num(rdv, "min_mean"), 0.98);
	ck_assert_double_eq_tol(num(rdv, "moved_add_ratio"), 1.0, 0.04);
	ck_assert_double_eq_tol(num(rdv, "moved_remove_ratio"), 1.0, 0.04);
	/* The same keys and nodes as sim: ring-200 is sim's 200-vnode row. */
	ring = compare_row(doc, "ring-200");
	vnodes200 = cJSON_GetArrayItem(rows_of(sim, 1), 0);
	ck_assert_double_eq_tol(num(ring, "max_mean"), num(vnodes200, "max_mean"), 1e-5);
	ck_assert_double_eq_tol(num(ring, "min_mean"), num(vnodes200, "min_mean"), 1e-5);
	ck_assert_double_eq_tol(num(ring, "moved_add"), num(vnodes200, "moved"), 1e-5);
	/* A ring moves only what the leaving node owned: near 1/N at 200
	 * vnodes; one point per node is all luck. */
	ck_assert_double_eq_tol(num(ring, "moved_remove_ratio"), 1.0, 0.2);
	ck_assert_double_gt(num(compare_row(doc, "ring-1"), "max_mean"),
			    num(compare_row(doc, "ring-500"), "max_mean"));
	/* Memory grows with the points. */
	ck_assert_double_lt(num(compare_row(doc, "ring-100"), "bytes"),
			    num(compare_row(doc, "ring-500"), "bytes"));
	ck_assert_double_eq(num(jump, "bytes"), num(modulo, "bytes"));
	cJSON_Delete(sim);
	cJSON_Delete(doc);
}
END_TEST

/* 100 nodes, and the seed: one seed gives one run's figures twice, another
 * seed other keys.  50,000 keys keep the three runs short (rendezvous
 * scores every node); 500 keys move on a join, enough for jump's ratio. */
START_TEST(test_sim_compare_100_nodes_and_seed)
{
	cJSON *a = run_sim_json((const char *const[]){
		"sim", "--compare", "--json", "--nodes", "100", "--keys", "50000", "--seed", "7",
		NULL });
	cJSON *b = run_sim_json((const char *const[]){
		"sim", "--compare", "--json", "--nodes", "100", "--keys", "50000", "--seed", "7",
		NULL });
	cJSON *c = run_sim_json((const char *const[]){
		"sim", "--compare", "--json", "--nodes", "100", "--keys", "50000", "--seed", "8",
		NULL });

	check_compare_doc(a, 100, 50000);
	check_compare_doc(c, 100, 50000);
	ck_assert_double_eq(num(a, "seed"), 7);
	ck_assert_double_eq_tol(num(compare_row(a, "jump"), "moved_add_ratio"), 1.0, 0.08);
	ck_assert_double_eq_tol(num(compare_row(a, "jump"), "moved_remove_ratio"), 1.0, 0.08);
	ck_assert_double_eq_tol(num(compare_row(a, "modulo"), "moved_add"), 100.0 / 101, 0.01);
	for (size_t i = 0; i < COMPARE_ROWS; i++) {
		const cJSON *ra = compare_row(a, compare_rows[i]);
		const cJSON *rb = compare_row(b, compare_rows[i]);

		ck_assert_double_eq(num(ra, "max_mean"), num(rb, "max_mean"));
		ck_assert_double_eq(num(ra, "moved_add"), num(rb, "moved_add"));
		ck_assert_double_eq(num(ra, "moved_remove"), num(rb, "moved_remove"));
		ck_assert_double_eq(num(ra, "bytes"), num(rb, "bytes"));
		ck_assert_str_eq(str(ra, "leaves"), str(rb, "leaves"));
	}
	ck_assert_double_ne(num(compare_row(a, "ring-1"), "max_mean"),
			    num(compare_row(c, "ring-1"), "max_mean"));
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
}
END_TEST

START_TEST(test_sim_compare_text_and_svg)
{
	char *svg_path = strdup(path_in_tmp("compare.svg")), *svg;
	struct run r = RUN("sim", "--compare", "--keys", "20000", "--nodes", "5", "--svg",
			   svg_path);

	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_ptr_nonnull(strstr(r.out, "20000 keys on 5 nodes"));
	ck_assert_ptr_nonnull(strstr(r.out, "node-4, the last, leaves"));
	ck_assert_ptr_nonnull(strstr(r.out, "join moved"));
	ck_assert_ptr_nonnull(strstr(r.out, "\nmodulo* "));
	ck_assert_ptr_nonnull(strstr(r.out, "\njump* "));
	ck_assert_ptr_nonnull(strstr(r.out, "\nmaglev "));
	ck_assert_uint_eq(count_lines(r.out), 4 + COMPARE_ROWS);
	ck_assert(svg_well_formed(svg_path));
	svg = read_all(svg_path);
	for (size_t i = 0; i < COMPARE_ROWS; i++) {
		char name[40];

		snprintf(name, sizeof name, ">%s</text>", compare_rows[i]);
		ck_assert_msg(strstr(svg, name), "no %s in the plot", compare_rows[i]);
	}
	ck_assert_ptr_nonnull(strstr(svg, "20000 keys on 5 nodes"));
	free(svg);
	run_free(&r);

	/* A plot that cannot be written fails the run. */
	r = RUN("sim", "--compare", "--keys", "1000", "--svg", "/nonexistent/dir/x.svg");
	ck_assert_int_eq(r.status, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent/dir/x.svg"));
	run_free(&r);
	free(svg_path);
}
END_TEST

START_TEST(test_sim_compare_bad_options)
{
	static const struct {
		const char *args[8];
		const char *needle;
	} cases[] = {
		{ { "sim", "--compare", "--nodes", "1" }, "--nodes 2 or more" },
		{ { "sim", "--compare", "--nodes", "0" }, "--nodes" },
		{ { "sim", "--compare", "--nodes", "10001" }, "up to 10000" },
		{ { "sim", "--compare", "--vnodes", "10" }, "--vnodes" },
		{ { "sim", "--vnodes", "1,2", "--compare" }, "--vnodes" },
		{ { "sim", "--seed", "3" }, "--seed goes with --compare" },
		{ { "sim", "--compare", "--seed", "-1" }, "--seed" },
		{ { "sim", "--compare", "--seed", "4294967296" }, "--seed" },
		{ { "sim", "--compare", "--keys", "0" }, "--keys" },
		{ { "sim", "--compare", "--svg=" }, "--svg" },
		{ { "sim", "--compare=yes" }, "--compare" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_usage_error(cases[i].args, "sim", cases[i].needle);
}
END_TEST

/* ---- metrics ------------------------------------------------------------------- */

struct text_buf {
	char *data;
	size_t len;
};

static int text_buf_write(void *userdata, const char *data, size_t len)
{
	struct text_buf *t = userdata;

	t->data = realloc(t->data, t->len + len + 1);
	ck_assert_ptr_nonnull(t->data);
	memcpy(t->data + t->len, data, len);
	t->len += len;
	t->data[t->len] = '\0';
	return 0;
}

/* `hashring metrics --members` prints what hr_ring_metrics_write() writes,
 * byte for byte, with the options its flags name; bad ones are usage
 * errors, found before anything is read. */
START_TEST(test_metrics_members)
{
	static const hr_metrics_label labels[] = { { "client", "x\"y" }, { "env", "a=b" } };
	hr_metrics_options opts = { .size = sizeof opts };
	char *path = write_file("members.json", members_states);
	hr_ring *ring = load_ring(path);
	struct text_buf want = { 0 }, want2 = { 0 };
	struct run r = RUN("metrics", "--members", path);

	ck_assert_int_eq(hr_ring_metrics_write(ring, text_buf_write, &want, NULL, NULL), 0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_str_eq(r.out, want.data);
	ck_assert_ptr_nonnull(strstr(r.out, "\nhashring_node_weight{node=\"w\"} 3\n"));
	run_free(&r);

	opts.name_prefix = "app_";
	opts.labels = labels;
	opts.label_count = 2;
	opts.omit = HR_METRICS_OMIT_NODES;
	ck_assert_int_eq(hr_ring_metrics_write(ring, text_buf_write, &want2, &opts, NULL), 0);
	r = RUN("metrics", "--members", path, "--name-prefix", "app_", "--label", "client=x\"y",
		"--label=env=a=b", "--omit-nodes");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_str_eq(r.out, want2.data);
	ck_assert_ptr_null(strstr(r.out, "hashring_node_"));
	run_free(&r);

	assert_usage_error((const char *const[]){ "metrics", "--members", path, "--label", "novalue",
						  NULL }, "metrics", "--label wants NAME=VALUE (got \"novalue\")");
	assert_usage_error((const char *const[]){ "metrics", "--members", path, "--label", "=v",
						  NULL }, "metrics", "NAME=VALUE");
	assert_usage_error((const char *const[]){ "metrics", "--members", path, "--label", "node=a",
						  NULL }, "metrics", "name \"node\" is one the library's");
	assert_usage_error((const char *const[]){ "metrics", "--members", path, "--name-prefix",
						  "my-app_", NULL }, "metrics", "--name-prefix: \"my-app_\" is not");
	/* Checked before etcd is asked: no wait for a closed port. */
	assert_usage_error((const char *const[]){ "metrics", "--endpoints", "127.0.0.1:1",
						  "--label", "__x=1", NULL }, "metrics", "\"__\"");
	assert_usage_error((const char *const[]){ "metrics", "--members", path, "--prefix", "/x/",
						  NULL }, "metrics", "--members and --prefix");
	assert_usage_error((const char *const[]){ "metrics", "extra", NULL }, "metrics", "extra");
	free(want.data);
	free(want2.data);
	hr_ring_release(ring);
	free(path);
}
END_TEST

/* A load error names the file once, whatever the library's message. */
START_TEST(test_members_errors_name_the_file_once)
{
	static const char *const bad[] = {
		"{\"a\": ", "{\"a\":{\"addr\":\"127.0.0.1:1\",\"weight\":-1}}", "[1]",
	};
	struct run r;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char name[32], *path, *first;

		snprintf(name, sizeof name, "bad-%zu.json", i);
		path = write_file(name, bad[i]);
		r = RUN("nodes", "--members", path);
		ck_assert_int_eq(r.status, 1);
		assert_one_error_line(&r, "nodes");
		first = strstr(r.err, name);
		ck_assert_msg(first && !strstr(first + 1, name), "%s", r.err);
		run_free(&r);
		free(path);
	}
#ifndef HR_SANITIZED
	/* Larger than the library reads (256 MiB): the library's message
	 * names the file already. */
	r = RUN("lookup", "--members", "/dev/zero", "k");
	ck_assert_int_eq(r.status, 1);
	assert_one_error_line(&r, "lookup");
	ck_assert_ptr_nonnull(strstr(r.err, "larger than"));
	ck_assert_msg(!strstr(strstr(r.err, "/dev/zero") + 1, "/dev/zero"), "%s", r.err);
	run_free(&r);
#endif
}
END_TEST

/* ---- writing the output ------------------------------------------------------ */

/* A reader that went away: no message, and the end SIGPIPE would give. */
static void assert_pipe_end(const char *const *args, int read_one_line)
{
	int p[2], wstatus;
	pid_t pid;
	char *err;

	/* Close-on-exec: the command must not hold the reader's end. */
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = spawn_argv(args, p[1]);
	if (read_one_line) {
		char c;

		while (read(p[0], &c, 1) == 1 && c != '\n')
			;
	}
	close(p[0]);
	wstatus = wait_child(pid, 60000);
	err = read_all(path_in_tmp("stderr"));
	ck_assert_msg(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGPIPE,
		      "%s: wait status %#x, stderr: %s", args[0], wstatus, err);
	ck_assert_str_eq(err, "");
	free(err);
}

START_TEST(test_broken_pipe_offline)
{
	char members[65536] = "{", *path;
	const char *args[MAX_ARGS];
	int m = 0;

	/* 2000 nodes and every one a replica: lines far larger than a pipe
	 * holds, so the writer is still at work when the reader leaves. */
	for (int i = 0; i < 2000; i++)
		snprintf(members + strlen(members), sizeof members - strlen(members),
			 "%s\"n%04d\":\"127.0.0.1:%d\"", i ? "," : "", i, i + 1);
	strcat(members, "}");
	path = write_file("members.json", members);
	args[m++] = "lookup";
	args[m++] = "--members";
	args[m++] = path;
	args[m++] = "--replicas";
	args[m++] = "2000";
	while (m < MAX_ARGS - 2)
		args[m++] = "some-key";
	args[m] = NULL;
	assert_pipe_end(args, 1);
	assert_pipe_end(args, 0);
	free(path);
	path = write_file("small.json", members_zones);
	assert_pipe_end((const char *const[]){ "nodes", "--members", path, NULL }, 0);
	assert_pipe_end((const char *const[]){ "sim", "--keys", "1000", NULL }, 0);
	assert_pipe_end((const char *const[]){ "--help", NULL }, 0);
	assert_pipe_end((const char *const[]){ "lookup", "--help", NULL }, 0);
	free(path);
}
END_TEST

/* Any other write error is one line with its errno's text, and exit 1. */
START_TEST(test_output_error)
{
	char *path = write_file("members.json", members_zones);
	int fd = open("/dev/full", O_WRONLY);
	int wstatus;
	char *err;

	ck_assert_int_ge(fd, 0);
	wstatus = wait_child(spawn_argv((const char *const[]){ "lookup", "--members", path,
							       "k1", "k2", NULL }, fd), 60000);
	err = read_all(path_in_tmp("stderr"));
	ck_assert_msg(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 1, "status %#x", wstatus);
	ck_assert_str_eq(err, "hashring: lookup: cannot write the output: No space left on device\n");
	free(err);
	free(path);
}
END_TEST

/* ---- signals and time limits, etcd unreachable (a closed port) ------------- */

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Starts `args`, sends `sig` after `after_ms`, and returns the wait status;
 * *took gets the time from the signal to the end. */
/* Whether `pid` handles `sig` rather than meeting the default action: its
 * main thread blocks or catches it (/proc/PID/status: SigBlk, SigCgt), or
 * waits for it in sigtimedwait(), which takes the waited signals out of
 * SigBlk for the time of the call (/proc/PID/wchan). */
static int handles_signal(pid_t pid, int sig)
{
	char path[64], line[256];
	unsigned long long mask, masks = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "SigBlk: %llx", &mask) == 1 ||
		    sscanf(line, "SigCgt: %llx", &mask) == 1)
			masks |= mask;
	fclose(f);
	if ((masks >> (sig - 1)) & 1)
		return 1;
	snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	line[0] = '\0';
	if (!fgets(line, sizeof line, f))
		line[0] = '\0';
	fclose(f);
	return strstr(line, "sigtimedwait") != NULL;
}

/* Starts `args`, sends `sig` after `after_ms` (and, with `when_handled`,
 * once the command blocks or catches it, so that a slow start on a loaded machine
 * does not meet the default action), and returns the wait status; *took
 * gets the time from the signal to the end. */
static int signal_after_ex(const char *const *args, int sig, int after_ms, int when_handled,
			   int64_t *took)
{
	pid_t pid = spawn_argv(args, -1);
	int64_t t0;
	int wstatus;

	usleep((useconds_t)after_ms * 1000);
	for (t0 = mono_ms(); when_handled && !handles_signal(pid, sig) &&
			     mono_ms() - t0 < 20000;)
		usleep(10 * 1000);
	ck_assert_msg(waitpid(pid, &wstatus, WNOHANG) == 0, "%s ended before the signal (status %#x)",
		      args[0], wstatus);
	t0 = mono_ms();
	kill(pid, sig);
	wstatus = wait_child(pid, 20000);
	*took = mono_ms() - t0;
	return wstatus;
}

static int signal_after(const char *const *args, int sig, int after_ms, int64_t *took)
{
	return signal_after_ex(args, sig, after_ms, 0, took);
}

START_TEST(test_signal_ends_the_wait)
{
	char *err;
	int64_t took;
	int st;

	/* One-shot commands end by the signal, at once, without a word. */
	st = signal_after((const char *const[]){ "nodes", "--endpoints", "127.0.0.1:1",
						 "--timeout", "10", NULL }, SIGINT, 1000, &took);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "status %#x", st);
	ck_assert_int_lt(took, 500);
	err = read_all(path_in_tmp("stderr"));
	ck_assert_str_eq(err, "");
	free(err);
	st = signal_after((const char *const[]){ "lookup", "--endpoints", "127.0.0.1:1",
						 "--timeout", "10", "k", NULL }, SIGTERM, 300, &took);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
	ck_assert_int_lt(took, 500);
	st = signal_after((const char *const[]){ "state", "--endpoints", "127.0.0.1:1",
						 "--timeout", "10", "--id", "x", "active", NULL },
			  SIGINT, 300, &took);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "status %#x", st);
	ck_assert_int_lt(took, 500);

	/* Commands that run until stopped exit 0, even before they start. */
	st = signal_after_ex((const char *const[]){ "watch", "--endpoints", "127.0.0.1:1",
						    "--timeout", "10", NULL }, SIGINT, 300, 1, &took);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	ck_assert_int_lt(took, 500);
	st = signal_after_ex((const char *const[]){ "register", "--endpoints", "127.0.0.1:1",
						    "--timeout", "10", "--id", "x", "--addr", "a:1",
						    "--log-level", "error", NULL }, SIGTERM, 300, 1, &took);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	ck_assert_int_lt(took, 500);
	st = signal_after_ex((const char *const[]){ "diff", "--endpoints", "127.0.0.1:1",
						    "--timeout", "0", NULL }, SIGTERM, 300, 1, &took);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}
END_TEST

/* --timeout bounds the wait of every etcd command, retries included. */
START_TEST(test_timeout)
{
	static const char *const cases[][12] = {
		{ "nodes", "no ring after 1", NULL },
		{ "lookup", "no ring after 1", "k", NULL },
		{ "watch", "no ring after 1", NULL },
		{ "diff", "no ring after 1", NULL },
		{ "state", "etcd unreachable for 1 s: http://127.0.0.1:1: ", "--id", "x", "active", NULL },
		{ "weight", "etcd unreachable for 1 s: http://127.0.0.1:1: ", "--id", "x", "2", NULL },
		{ "register", "etcd unreachable for 1 s: http://127.0.0.1:1: ", "--id", "x",
		  "--addr", "a:1", NULL },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *args[MAX_ARGS] = { cases[i][0], "--endpoints", "127.0.0.1:1",
					       "--timeout", "1" };
		int m = 5;
		int64_t t0 = mono_ms(), ms;
		struct run r;

		for (int k = 2; cases[i][k]; k++)
			args[m++] = cases[i][k];
		if (!strcmp(cases[i][0], "register")) {
			args[m++] = "--log-level";
			args[m++] = "error";
		}
		args[m] = NULL;
		r = run_argv(args);
		ms = mono_ms() - t0;
		ck_assert_msg(r.status == 1, "%s: exit %d, %s", cases[i][0], r.status, r.err);
		/* watch logs at info: its error is the last line. */
		if (strcmp(cases[i][0], "watch"))
			assert_one_error_line(&r, cases[i][0]);
		ck_assert_msg(strstr(r.err, cases[i][1]), "%s: %s", cases[i][0], r.err);
		ck_assert_msg(ms >= 950 && ms < 2900, "%s took %lld ms", cases[i][0], (long long)ms);
		run_free(&r);
	}
	assert_usage_error((const char *const[]){ "nodes", "--timeout", "86401", NULL },
			   "nodes", "at most 86400");
	assert_usage_error((const char *const[]){ "state", "--timeout", "-1", "--id", "x", "active", NULL },
			   "state", "--timeout");
}
END_TEST

/* ---- credentials in an endpoint URL -------------------------------------------- */

#define URL_PW "url-Pw-7f3e"

START_TEST(test_endpoint_password_never_shown)
{
	static const char *const cmds[][8] = {
		{ "nodes", NULL },
		{ "lookup", "k", NULL },
		{ "watch", NULL },
		{ "state", "--id", "x", "draining", NULL },
		{ "register", "--id", "x", "--addr", "a:1", NULL },
	};
	struct run r;

	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		const char *args[MAX_ARGS] = { cmds[i][0], "--endpoints",
					       "http://ring-user:" URL_PW "@127.0.0.1:1",
					       "--timeout", "1", "--log-level", "debug" };
		int m = 7;

		for (int k = 1; cmds[i][k]; k++)
			args[m++] = cmds[i][k];
		args[m] = NULL;
		r = run_argv(args);
		ck_assert_int_eq(r.status, 1);
		ck_assert_msg(!strstr(r.err, URL_PW) && !strstr(r.out, URL_PW), "%s leaks: %s",
			      cmds[i][0], r.err);
		ck_assert_msg(strstr(r.err, "http://127.0.0.1:1"), "%s: %s", cmds[i][0], r.err);
		run_free(&r);
	}
	/* Two different users: a usage error that shows neither password. */
	r = RUN("nodes", "--endpoints", "http://ring-user:" URL_PW "@127.0.0.1:1", "--user",
		"other:pw-2");
	ck_assert_int_eq(r.status, 2);
	assert_one_error_line(&r, "nodes");
	ck_assert_ptr_nonnull(strstr(r.err, "differs from the configured user"));
	ck_assert_ptr_null(strstr(r.err, URL_PW));
	ck_assert_ptr_null(strstr(r.err, "pw-2"));
	run_free(&r);
	r = RUN("state", "--endpoints", "ftp://ring-user:" URL_PW "@127.0.0.1:1", "--id", "x",
		"active");
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "ftp://ring-user:***@127.0.0.1:1"));
	ck_assert_ptr_null(strstr(r.err, URL_PW));
	run_free(&r);
}
END_TEST

/* ---- the command line ------------------------------------------------------------ */

START_TEST(test_prefix_without_slash)
{
	struct run r = RUN("nodes", "--endpoints", "127.0.0.1:1", "--timeout", "1", "--prefix",
			   "/hashring/nodes");
	const char *nl = strchr(r.err, '\n');

	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(!strncmp(r.err, "hashring: nodes: warning: --prefix '/hashring/nodes' does not end in '/'",
			       71), "%s", r.err);
	/* The warning, then the error: two lines. */
	ck_assert_ptr_nonnull(nl);
	ck_assert_uint_eq(count_lines(r.err), 2);
	run_free(&r);
}
END_TEST

START_TEST(test_weights_and_ids)
{
	static const struct {
		const char *args[10];
		const char *needle;
	} cases[] = {
		{ { "weight", "--id", "x", "0x10" }, "'0x10' is not a plain decimal number" },
		{ { "weight", "--id", "x", "-1" }, "-1 is not > 0" },
		{ { "weight", "--id", "x", "-0.5" }, "-0.5 is not > 0" },
		{ { "weight", "--id", "x", "0" }, "0 is not > 0" },
		{ { "weight", "--id", "x", "0.000" }, "0.000 is not > 0" },
		{ { "weight", "--id", "x", "1e308" }, "'1e308' is not a plain decimal number" },
		{ { "weight", "--id", "x", "inf" }, "'inf' is not a plain decimal number" },
		{ { "weight", "--id", "x", " 2" }, "' 2' is not a plain decimal number" },
		{ { "weight", "--id", "x", "2." }, "'2.' is not a plain decimal number" },
		{ { "weight", "--id", "x", "" }, "empty value" },
		{ { "weight", "--id", "x", "33554433" }, "more than 33554432 points" },
		{ { "weight", "--id", "x", "99999999999999999999999999" }, "more than 33554432 points" },
		{ { "weight", "--id", "x", "1", "2" }, "unexpected argument '2'" },
		{ { "weight", "--id", "", "1" }, "node id is empty" },
		{ { "weight", "--id", "a/b", "1" }, "must not contain '/'" },
		{ { "weight", "--id", "a b", "1" }, "printable ASCII" },
		{ { "weight", "1" }, "--id and the new weight are required" },
		{ { "state", "--id", "x", "-1" }, "'-1' is not warming, active or draining" },
		{ { "state", "--id", "x", "gone" }, "'gone' is not warming, active or draining" },
		{ { "state", "--id", "", "active" }, "node id is empty" },
		{ { "register", "--id", "a/b", "--addr", "a:1" }, "must not contain '/'" },
		{ { "register", "--id", "x", "--addr", "" }, "addr is empty" },
		{ { "register", "--id", "x", "--addr", "a:1", "--weight", "1e308" },
		  "'1e308' is not a plain decimal number" },
		{ { "register", "--id", "x", "--addr", "a:1", "--weight", "40000000" },
		  "more than 33554432 points" },
		{ { "register", "--id", "x", "--addr", "a:1", "--state", "draining" },
		  "'draining' is not warming or active" },
		{ { "register", "--id", "x", "--addr", "a:1", "--ttl", "1" }, "at least 2" },
		{ { "register", "--id", "x", "--addr", "a:1", "--ttl", "3601" }, "at most 3600" },
		{ { "register", "--id", "x", "--addr", "a:1", "--vnodes-per-weight", "1" },
		  "unknown option '--vnodes-per-weight'" },
		{ { "state", "--id", "x", "--placement", "ketama", "active" },
		  "unknown option '--placement'" },
		{ { "lookup", "--members", "m.json", "--rep", "2", "k" }, "unknown option '--rep'" },
		{ { "lookup", "--members", "m.json", "--vnodes-per-weight", "4294967296", "k" },
		  "at most 4294967295" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_usage_error(cases[i].args, cases[i].args[0], cases[i].needle);

	/* A weight that fits passes the checks (and then meets no etcd). */
	struct run r = RUN("weight", "--endpoints", "127.0.0.1:1", "--timeout", "1", "--id",
			   "x", "33554432");
	ck_assert_int_eq(r.status, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "etcd unreachable"));
	run_free(&r);
}
END_TEST

/* ---- help, man page and docs/cli.md agree ---------------------------------------- */

static const char *const all_commands[] = {
	"lookup", "nodes", "watch", "register", "state", "weight", "diff", "metrics", "sim", "acks",
	"rebalance", "serve", NULL
};

static char *read_source(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/../%s", HR_TEST_DATA_DIR, rel);
	return read_all(path);
}

/* The man page with roff's escapes for '-' undone. */
static char *man_text(void)
{
	char *man = read_source("docs/hashring.1"), *w = man;

	for (const char *r = man; *r; r++) {
		if (r[0] == '\\' && r[1] == '-')
			r++;
		*w++ = *r;
	}
	*w = '\0';
	return man;
}

/*
 * The man page's text for option `opt` (".B --opt" or ".BI --opt ..." after
 * a .TP) in section `from` up to the next .SS/.SH, or NULL.
 */
static char *man_entry(const char *man, const char *section, const char *opt)
{
	const char *sec = strstr(man, section), *end, *p;
	char needle[96];

	if (!sec)
		return NULL;
	end = strstr(sec + 1, "\n.SS");
	if (!end || (strstr(sec + 1, "\n.SH") && strstr(sec + 1, "\n.SH") < end))
		end = strstr(sec + 1, "\n.SH");
	for (p = sec; (p = strstr(p, ".TP\n")) && (!end || p < end); p += 4) {
		const char *term = p + 4, *stop;

		snprintf(needle, sizeof needle, "%s", opt);
		if (strncmp(term, ".B ", 3) && strncmp(term, ".BI ", 4) && strncmp(term, ".BR ", 4))
			continue;
		term = strchr(term, ' ') + 1;
		if (strncmp(term, needle, strlen(needle)) ||
		    (term[strlen(needle)] != ' ' && term[strlen(needle)] != '\n' &&
		     term[strlen(needle)] != '"'))
			continue;
		stop = strstr(term, "\n.TP");
		if (!stop || (end && stop > end))
			stop = end ? end : term + strlen(term);
		return strndup(p, (size_t)(stop - p));
	}
	return NULL;
}

/* Every option of every command's --help is in the man page, in the
 * command's subsection or a section it takes, and every number its help
 * names (limits, defaults) is in that entry too. */
START_TEST(test_help_matches_man_page)
{
	char *man = man_text();

	for (int c = 0; all_commands[c]; c++) {
		struct run r = RUN(all_commands[c], "--help");
		char section[64], *line, *save = NULL, current[64] = "", text[2048] = "";
		int options = 0, in_options = 0;

		ck_assert_int_eq(r.status, 0);
		snprintf(section, sizeof section, ".SS \"hashring %s ", all_commands[c]);
		ck_assert_msg(strstr(man, section), "no subsection for %s", all_commands[c]);
		/* An option's help, joined over its lines, ends at the next
		 * option: hence one step past the last line. */
		for (line = strtok_r(r.out, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
			int starts = line && !strncmp(line, "  --", 4);

			if ((starts || !line || !strncmp(line, "  -h", 4)) && current[0]) {
				char *entry = man_entry(man, section, current);
				const char *sections[] = { ".SH \"ETCD CONNECTION OPTIONS\"",
							   ".SH \"RING OPTIONS\"" };

				for (int s = 0; !entry && s < 2; s++)
					entry = man_entry(man, sections[s], current);
				ck_assert_msg(entry, "%s %s: not in the man page", all_commands[c],
					      current);
				for (const char *d = text; *d; d++) {
					char number[32];
					size_t n = strspn(d, "0123456789");

					if (!n || (d > text && (isalnum((unsigned char)d[-1]) || d[-1] == '$')))
						continue;
					snprintf(number, sizeof number, "%.*s", (int)n, d);
					ck_assert_msg(strstr(entry, number),
						      "%s %s: --help says %s, the man page does not: %s",
						      all_commands[c], current, number, entry);
					d += n - 1;
				}
				free(entry);
				current[0] = '\0';
				options++;
			}
			if (!line)
				break;
			if (!strcmp(line, "Options:"))
				in_options = 1;
			else if (!in_options)
				continue;
			if (starts) {
				size_t n = strcspn(line + 2, " ");
				const char *rest = line + 2 + n;

				snprintf(current, sizeof current, "%.*s", (int)n, line + 2);
				snprintf(text, sizeof text, "%s", rest);
			} else if (current[0]) {
				strncat(text, line, sizeof text - strlen(text) - 1);
			}
		}
		ck_assert_int_gt(options, 0);
		run_free(&r);
	}
	free(man);
}
END_TEST

/* The command table of docs/cli.md has every command's usage line. */
START_TEST(test_help_matches_cli_doc)
{
	char *doc = read_source("docs/cli.md"), *w = doc;

	/* The command table escapes '|' inside code. */
	for (const char *p = doc; *p; p++) {
		if (p[0] == '\\' && p[1] == '|')
			continue;
		*w++ = *p;
	}
	*w = '\0';
	for (int c = 0; all_commands[c]; c++) {
		struct run r = RUN(all_commands[c], "--help");
		char usage[512];

		ck_assert_int_eq(strncmp(r.out, "Usage: ", 7), 0);
		snprintf(usage, sizeof usage, "`%.*s`", (int)strcspn(r.out + 7, "\n"), r.out + 7);
		ck_assert_msg(strstr(doc, usage), "docs/cli.md lacks %s", usage);
		run_free(&r);
	}
	free(doc);
}
END_TEST

/* Ring options only where rings are built; register takes the placement
 * alone, for --tokens. */
START_TEST(test_ring_options_where_rings_are_built)
{
	static const struct {
		const char *cmd;
		int rings, placement;
	} cmds[] = {
		{ "lookup", 1, 1 }, { "nodes", 1, 1 }, { "watch", 1, 1 }, { "diff", 1, 1 },
		{ "metrics", 1, 1 }, { "register", 0, 1 }, { "state", 0, 0 }, { "weight", 0, 0 },
		{ "acks", 0, 0 }, { "rebalance", 1, 1 }, { "tokens", 1, 1 },
	};

	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		struct run r = RUN(cmds[i].cmd, "--help");

		ck_assert_int_eq(r.status, 0);
		ck_assert_int_eq(!!strstr(r.out, "  --vnodes-per-weight N"), cmds[i].rings);
		ck_assert_int_eq(!!strstr(r.out, "  --placement NAME"), cmds[i].placement);
		ck_assert_ptr_nonnull(strstr(r.out, "  --timeout SECONDS"));
		ck_assert_ptr_nonnull(strstr(r.out, "  --endpoints URLS"));
		run_free(&r);
	}
	/* The defaults shown are the defaults, whatever came before --help. */
	struct run r = RUN("register", "--ttl", "5", "--help");
	ck_assert_ptr_nonnull(strstr(r.out, "(2-3600; default 10)"));
	run_free(&r);
}
END_TEST

/* A value the library refuses is a usage error named by its option, never
 * by a library struct or field: a Maglev size that is not a prime (from a
 * file or from etcd alike), ack prefixes that overlap the ring's (saying
 * which contains which), a bad client id, a prefix too long, metrics
 * labels.  All found before etcd is asked anything. */
START_TEST(test_options_named_not_structs)
{
	static const char *const closed = "127.0.0.1:1";
	char long_prefix[4100];
	const struct {
		const char *args[12];
		const char *msg;
	} cases[] = {
		{ { "nodes", "--endpoints", closed, "--placement", "maglev", "--maglev-size", "1000" },
		  "--maglev-size: 1000 is not a prime (65537 is, the default)" },
		{ { "watch", "--endpoints", closed, "--client-id", "w", "--prefix", "/x/nodes/",
		    "--ack-prefix", "/x/" },
		  "--ack-prefix /x/ contains --prefix /x/nodes/: node records would be read as acks" },
		{ { "watch", "--endpoints", closed, "--client-id", "w", "--prefix", "/x/",
		    "--ack-prefix", "/x/acks/" },
		  "--prefix /x/ contains --ack-prefix /x/acks/: acks would be read as node records" },
		{ { "watch", "--endpoints", closed, "--client-id", "w", "--prefix", "/hashring/" },
		  "--prefix /hashring/ contains --ack-prefix /hashring/acks/ (the default)" },
		{ { "serve", "--endpoints", closed, "--client-id", "w", "--ack-prefix",
		    "/hashring/nodes/" },
		  "--ack-prefix /hashring/nodes/ is also --prefix /hashring/nodes/ (the default)" },
		{ { "acks", "--endpoints", closed, "--ack-prefix", "/hashring/" },
		  "--ack-prefix /hashring/ contains --prefix /hashring/nodes/ (the default)" },
		{ { "watch", "--endpoints", closed, "--client-id", "a b" },
		  "--client-id: ack client id \"a\": must be printable ASCII" },
		{ { "lookup", "--endpoints", closed, "--prefix", long_prefix, "k" },
		  "--prefix: longer than 4096 bytes" },
		{ { "metrics", "--endpoints", closed, "--label", "bad-name=x" },
		  "--label bad-name=x: name \"bad-name\" is not [a-zA-Z_][a-zA-Z0-9_]*" },
		{ { "metrics", "--endpoints", closed, "--label", "a=1", "--label", "a=2" },
		  "--label a=2: the name \"a\" is given twice" },
		{ { "metrics", "--endpoints", closed, "--name-prefix", "9x" },
		  "--name-prefix: \"9x\" is not [a-zA-Z_][a-zA-Z0-9_]*" },
	};

	memset(long_prefix, 'p', sizeof long_prefix - 1);
	long_prefix[0] = '/';
	long_prefix[sizeof long_prefix - 2] = '/';
	long_prefix[sizeof long_prefix - 1] = '\0';
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct run r = run_argv(cases[i].args);

		ck_assert_msg(r.status == 2, "%s: exit %d, %s", cases[i].msg, r.status, r.err);
		assert_one_error_line(&r, cases[i].args[0]);
		ck_assert_msg(strstr(r.err, cases[i].msg), "'%s' not in '%s'", cases[i].msg, r.err);
		ck_assert_msg(!strstr(r.err, "hr_"), "a library name in '%s'", r.err);
		run_free(&r);
	}
}
END_TEST

/* ---- diff ------------------------------------------------------------------- */

/* `hashring diff` of two members files prints the arcs and the moved share
 * the library's diff finds, under either placement; `lookup --placement
 * ketama` answers as the ketama ring does. */
START_TEST(test_diff_matches_library)
{
	static const char *old_json =
		"{\"a\":\"127.0.0.1:11211\",\"b\":{\"addr\":\"127.0.0.2:11211\",\"weight\":2},"
		"\"c\":\"127.0.0.3:11212\"}";
	static const char *new_json =
		"{\"a\":\"127.0.0.1:11211\",\"b\":{\"addr\":\"127.0.0.2:11211\",\"weight\":2},"
		"\"d\":\"127.0.0.4\"}";
	char *f1 = write_file("old.json", old_json), *f2 = write_file("new.json", new_json);
	char want[64];
	const char *last;
	struct run r;

	for (int k = 0; k < 2; k++) {
		hr_ring_options o = { .size = sizeof o, .placement = k ? HR_PLACEMENT_KETAMA : HR_PLACEMENT_XXH3 };
		hr_ring *a, *b;
		hr_diff *d;
		size_t arcs = 0;

		ck_assert_int_eq(hr_ring_load_file(f1, &o, &a, NULL), HR_OK);
		ck_assert_int_eq(hr_ring_load_file(f2, &o, &b, NULL), HR_OK);
		ck_assert_int_eq(hr_ring_diff(a, b, HR_VIEW_WRITE, &d, NULL), HR_OK);
		r = RUN("diff", "--placement", k ? "ketama" : "xxh3", f1, "--members", f2);
		ck_assert_int_eq(r.status, 0);
		for (const char *l = r.out; (l = strstr(l, "arc\t")); l++)
			arcs += l == r.out || l[-1] == '\n';
		ck_assert_uint_eq(arcs, hr_diff_arc_count(d));
		snprintf(want, sizeof want, "moved\t%.6f\t%zu\n",
			 hr__diff_moved_share(d), hr_diff_arc_count(d));
		last = strstr(r.out, "moved\t");
		ck_assert_ptr_nonnull(last);
		ck_assert_str_eq(last, want);
		run_free(&r);
		hr_diff_free(d);
		hr_ring_release(a);
		hr_ring_release(b);
	}
	r = RUN("diff", "--json", "--view", "read", f1, f2);
	ck_assert_int_eq(r.status, 0);
	ck_assert(strncmp(r.out, "{\"old_revision\":0,\"new_revision\":0,\"view\":\"read\"", 48) == 0);
	run_free(&r);
	/* Usage errors. */
	assert_usage_error((const char *const[]){ "diff", f1, NULL }, "diff", NULL);
	assert_usage_error((const char *const[]){ "diff", f1, f2, f1, NULL }, "diff", NULL);
	assert_usage_error((const char *const[]){ "diff", "--view", "both", f1, f2, NULL },
			   "diff", NULL);
	assert_usage_error((const char *const[]){ "diff", "--placement", "md5", f1, f2, NULL },
			   "diff", NULL);
	assert_usage_error((const char *const[]){ "diff", "--count", "2", f1, f2, NULL },
			   "diff", NULL);
	r = RUN("diff", f1, "/nonexistent/members.json");
	ck_assert_int_eq(r.status, 1);
	run_free(&r);
	{
		hr_ring_options o = { .size = sizeof o, .placement = HR_PLACEMENT_KETAMA };
		hr_ring *ring;
		hr_lookup res;

		ck_assert_int_eq(hr_ring_load_file(f1, &o, &ring, NULL), HR_OK);
		r = RUN("lookup", "--placement", "ketama", "--members", f1, "user:42");
		ck_assert_int_eq(r.status, 0);
		hr_ring_lookup(ring, "user:42", 7, &res);
		snprintf(want, sizeof want, "user:42\t%s\t", res.node->id);
		ck_assert(strncmp(lookup_lines(r.out), want, strlen(want)) == 0);
		run_free(&r);
		hr_ring_release(ring);
	}
	free(f1);
	free(f2);
}
END_TEST

/* --placement maglev and --maglev-size on the ring-building commands: the
 * answers, vnodes and shares of the library's Maglev ring; a size that is
 * not a prime is an error naming it, one out of range a usage error. */
START_TEST(test_maglev_commands)
{
	char *f1 = write_file("members.json", members_states);
	hr_ring_options o = { .size = sizeof o, .placement = HR_PLACEMENT_MAGLEV,
			      .maglev_size = 1009 };
	char want[128], *line, *save = NULL;
	hr_ring *ring;
	hr_lookup res;
	struct run r;
	size_t i = 0;

	ck_assert_int_eq(hr_ring_load_file(f1, &o, &ring, NULL), HR_OK);
	r = RUN("lookup", "--placement", "maglev", "--maglev-size", "1009", "--members", f1,
		"user:42");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	hr_ring_lookup(ring, "user:42", 7, &res);
	snprintf(want, sizeof want, "user:42\t%s\t", res.node->id);
	ck_assert(strncmp(lookup_lines(r.out), want, strlen(want)) == 0);
	run_free(&r);

	r = RUN("nodes", "--json", "--placement", "maglev", "--maglev-size", "1009",
		"--members", f1);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		const hr_node *node = hr_ring_node(ring, i);
		hr_view view = node->state == HR_STATE_DRAINING ? HR_VIEW_READ : HR_VIEW_WRITE;
		cJSON *obj = cJSON_Parse(line);

		ck_assert_ptr_nonnull(obj);
		ck_assert_double_eq(num(obj, "vnodes"), hr_ring_node_vnodes(ring, node));
		ck_assert_double_eq_tol(num(obj, "share"), hr_ring_node_share(ring, node, view), 1e-6);
		cJSON_Delete(obj);
	}
	ck_assert_uint_eq(i, hr_ring_node_count(ring));
	run_free(&r);

	r = RUN("diff", "--placement", "maglev", f1, f1);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "moved\t0.000000\t0\n"));
	run_free(&r);

	assert_usage_error((const char *const[]){ "lookup", "--placement", "maglev",
						  "--maglev-size", "1000", "--members", f1, "k", NULL },
			   "lookup", "--maglev-size: 1000 is not a prime (65537 is, the default)");
	assert_usage_error((const char *const[]){ "nodes", "--placement", "maglev",
						  "--maglev-size", "100", "--members", f1, NULL },
			   "nodes", NULL);
	hr_ring_release(ring);
	free(f1);
}
END_TEST

/* --placement rendezvous: the library's owners and exact shares; a diff
 * of a join has the joiner's share in totals and no arc; a weight outside
 * the placement's range is an error naming the node. */
START_TEST(test_rendezvous_commands)
{
	char *f1 = write_file("members.json", members_states);
	char *f2 = write_file("more.json",
			      "{\"a\":\"127.0.0.1:1\",\"b\":{\"addr\":\"127.0.0.1:2\",\"weight\":3}}");
	char *f3 = write_file("most.json",
			      "{\"a\":\"127.0.0.1:1\",\"b\":{\"addr\":\"127.0.0.1:2\",\"weight\":3},"
			      "\"c\":\"127.0.0.1:3\"}");
	char *f4 = write_file("huge.json", "{\"a\":{\"addr\":\"127.0.0.1:1\",\"weight\":1e300}}");
	hr_ring_options o = { .size = sizeof o, .placement = HR_PLACEMENT_RENDEZVOUS };
	char want[128], *line, *save = NULL;
	hr_ring *ring;
	hr_lookup res;
	struct run r;
	size_t i = 0;

	ck_assert_int_eq(hr_ring_load_file(f1, &o, &ring, NULL), HR_OK);
	r = RUN("lookup", "--placement", "rendezvous", "--members", f1, "user:42");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	hr_ring_lookup(ring, "user:42", 7, &res);
	snprintf(want, sizeof want, "user:42\t%s\t", res.node->id);
	ck_assert(strncmp(lookup_lines(r.out), want, strlen(want)) == 0);
	run_free(&r);

	r = RUN("nodes", "--json", "--placement", "rendezvous", "--members", f1);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		const hr_node *node = hr_ring_node(ring, i);
		hr_view view = node->state == HR_STATE_DRAINING ? HR_VIEW_READ : HR_VIEW_WRITE;
		cJSON *obj = cJSON_Parse(line);

		ck_assert_ptr_nonnull(obj);
		ck_assert_double_eq(num(obj, "vnodes"), 1);
		ck_assert_double_eq_tol(num(obj, "share"), hr_ring_node_share(ring, node, view), 1e-6);
		cJSON_Delete(obj);
	}
	ck_assert_uint_eq(i, hr_ring_node_count(ring));
	run_free(&r);

	/* c joins a (weight 1) and b (weight 3): it takes 1/5, 1/20 from a. */
	r = RUN("diff", "--placement", "rendezvous", f2, f3);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strcmp(r.out, "total\ta\tc\t0\t0.050000\n"
				    "total\tb\tc\t0\t0.150000\n"
				    "moved\t0.200000\t0\n") == 0, "%s", r.out);
	run_free(&r);

	r = RUN("lookup", "--placement", "rendezvous", "--members", f4, "k");
	ck_assert_int_eq(r.status, 1);
	ck_assert_msg(strstr(r.err, "node \"a\"") && strstr(r.err, "rendezvous"), "%s", r.err);
	run_free(&r);
	hr_ring_release(ring);
	free(f1);
	free(f2);
	free(f3);
	free(f4);
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
	tcase_add_test(tc, test_sim_tool_xxh3_is_the_cli);
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
	tcase_add_test(tc, test_diff_matches_library);
	tcase_add_test(tc, test_maglev_commands);
	tcase_add_test(tc, test_rendezvous_commands);
	suite_add_tcase(s, tc);

	tc = tcase_create("output");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_json_utf8_roundtrip);
	tcase_add_test(tc, test_nodes_table_columns);
	tcase_add_test(tc, test_nodes_members);
	tcase_add_test(tc, test_nodes_svg);
	tcase_add_test(tc, test_sim_svg);
	tcase_add_test(tc, test_metrics_members);
	tcase_add_test(tc, test_members_errors_name_the_file_once);
	tcase_add_test(tc, test_broken_pipe_offline);
	tcase_add_test(tc, test_output_error);
	suite_add_tcase(s, tc);

	/* Each run places the keys on eight placements three times. */
	tc = tcase_create("sim_compare");
	tcase_set_timeout(tc, 240);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sim_compare_json);
	tcase_add_test(tc, test_sim_tokens_leaves);
	tcase_add_test(tc, test_sim_compare_100_nodes_and_seed);
	tcase_add_test(tc, test_sim_compare_text_and_svg);
	tcase_add_test(tc, test_sim_compare_bad_options);
	suite_add_tcase(s, tc);

	tc = tcase_create("etcd_unreachable");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_signal_ends_the_wait);
	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_endpoint_password_never_shown);
	tcase_add_test(tc, test_prefix_without_slash);
	suite_add_tcase(s, tc);

	tc = tcase_create("command_line");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_weights_and_ids);
	tcase_add_test(tc, test_help_matches_man_page);
	tcase_add_test(tc, test_help_matches_cli_doc);
	tcase_add_test(tc, test_ring_options_where_rings_are_built);
	tcase_add_test(tc, test_options_named_not_structs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(cli_suite());
}
