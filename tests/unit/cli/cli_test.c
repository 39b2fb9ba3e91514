/* SPDX-License-Identifier: MIT */
/* cli_test.c - the helpers the suites of the `hashring` command share
 * (cli_test.h). */
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

#include "cli_test.h"

char tmpdir[PATH_MAX];

void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/hashring-cli-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

void teardown(void)
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

char *path_in_tmp(const char *name)
{
	static char path[PATH_MAX + 64];

	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	return path;
}

char *read_all(const char *path)
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

char *write_file(const char *name, const char *text)
{
	char *path = strdup(path_in_tmp(name));
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

pid_t spawn_prog(const char *prog, const char *const *args, int out_fd)
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

pid_t spawn_argv(const char *const *args, int out_fd)
{
	return spawn_prog(HR_CLI_PATH, args, out_fd);
}

int wait_child(pid_t pid, int timeout_ms)
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

struct run run_prog(const char *prog, const char *const *args)
{
	struct run r = { .status = -1 };
	int wstatus = wait_child(spawn_prog(prog, args, -1), 60000);

	if (WIFEXITED(wstatus))
		r.status = WEXITSTATUS(wstatus);
	r.out = read_all(path_in_tmp("stdout"));
	r.err = read_all(path_in_tmp("stderr"));
	return r;
}

struct run run_argv(const char *const *args)
{
	return run_prog(HR_CLI_PATH, args);
}

void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* `lookup`'s text output after its header line, which it must start with. */
const char *lookup_lines(const char *out)
{
	ck_assert_msg(!strncmp(out, LOOKUP_HEADER, strlen(LOOKUP_HEADER)), "no header: %s", out);
	return out + strlen(LOOKUP_HEADER);
}

void assert_one_error_line(const struct run *r, const char *cmd)
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

void assert_usage_error(const char *const *args, const char *cmd,
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

double num(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	ck_assert_msg(cJSON_IsNumber(v), "no number '%s'", name);
	return v->valuedouble;
}

const char members_zones[] =
	"{\"a\":\"127.0.0.1:11211\","
	" \"b\":{\"addr\":\"127.0.0.2:11211\",\"zone\":\"z1\"},"
	" \"c\":{\"addr\":\"127.0.0.3:11211\",\"zone\":\"z2\",\"weight\":2},"
	" \"d\":{\"addr\":\"127.0.0.4:11211\",\"zone\":\"z1\",\"unknown\":1}}";

const char members_states[] =
	"{\"a\":{\"addr\":\"127.0.0.1:11211\"},"
	" \"w\":{\"addr\":\"127.0.0.2:11211\",\"state\":\"warming\",\"weight\":3},"
	" \"d\":{\"addr\":\"127.0.0.3:11211\",\"state\":\"draining\",\"weight\":3}}";

hr_ring *load_ring(const char *path)
{
	hr_ring *ring = NULL;
	hr_error err = { 0 };

	ck_assert_msg(hr_ring_load_file(path, NULL, &ring, &err) == 0,
		      "load: %s", err.message);
	return ring;
}

int svg_well_formed(const char *path)
{
	char cmd[PATH_MAX + 256];

	snprintf(cmd, sizeof cmd,
		 "python3 -c 'import sys, xml.etree.ElementTree as E; "
		 "r = E.parse(sys.argv[1]).getroot(); "
		 "sys.exit(r.tag != \"{http://www.w3.org/2000/svg}svg\")' '%s'", path);
	return system(cmd) == 0;
}
