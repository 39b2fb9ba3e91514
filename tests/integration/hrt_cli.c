/* SPDX-License-Identifier: MIT */
/* hrt_cli.c - running the `hashring` command from integration tests. */
#define _GNU_SOURCE
#include "hrt_cli.h"
#include "hrt_ring.h"

#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef HR_CLI_PATH
#error "HR_CLI_PATH comes from the build"
#endif

/* Reads what a child wrote to `fd` (a file) from its start. */
static void slurp(int fd, char *buf, size_t len)
{
	ssize_t n;
	size_t got = 0;

	while (got + 1 < len &&
	       (n = pread(fd, buf + got, len - 1 - got, (off_t)got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
}

hrt_child hrt_cli_spawn_to(const char *const *argv, const char *const *env, int out_fd)
{
	hrt_child ch;
	const char *args[64];
	size_t n = 0;

	ch.out = out_fd < 0 ? tmpfile() : NULL;
	ch.err = tmpfile();
	ck_assert((ch.out || out_fd >= 0) && ch.err);
	args[n++] = "hashring";
	for (size_t i = 0; argv[i] && n < 63; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	ch.pid = fork();
	ck_assert_int_ge(ch.pid, 0);
	if (ch.pid == 0) {
		static const char *const vars[] = { "ETCDCTL_ENDPOINTS", "ETCDCTL_CACERT",
			"ETCDCTL_CERT", "ETCDCTL_KEY", "ETCDCTL_USER", "ETCDCTL_PASSWORD",
			"ETCDCTL_INSECURE_SKIP_TLS_VERIFY", NULL };
		for (int i = 0; vars[i]; i++)
			unsetenv(vars[i]);
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		signal(SIGPIPE, SIG_DFL);
		dup2(ch.out ? fileno(ch.out) : out_fd, 1);
		dup2(fileno(ch.err), 2);
		execv(HR_CLI_PATH, (char *const *)args);
		_exit(127);
	}
	if (out_fd >= 0)
		close(out_fd);
	return ch;
}

hrt_child hrt_cli_spawn(const char *const *argv, const char *const *env)
{
	return hrt_cli_spawn_to(argv, env, -1);
}

void hrt_cli_peek_err(const hrt_child *ch, char *buf, size_t len)
{
	slurp(fileno(ch->err), buf, len);
}

void hrt_cli_wait(hrt_child *ch, hrt_cli_run *r)
{
	int64_t until = hrt_now_ms() + HRT_CLI_TIMEOUT_MS;
	int st;

	r->status = -1;
	r->signal = 0;
	for (;;) {
		pid_t w = waitpid(ch->pid, &st, WNOHANG);
		if (w == ch->pid)
			break;
		if (hrt_now_ms() > until) {
			fprintf(stderr, "hrt: the command ran longer than %d ms: killed\n",
				HRT_CLI_TIMEOUT_MS);
			kill(ch->pid, SIGKILL);
			waitpid(ch->pid, &st, 0);
			break;
		}
		hrt_sleep_ms(10);
	}
	if (WIFEXITED(st))
		r->status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		r->signal = WTERMSIG(st);
	r->out[0] = '\0';
	if (ch->out) {
		slurp(fileno(ch->out), r->out, sizeof r->out);
		fclose(ch->out);
	}
	slurp(fileno(ch->err), r->err, sizeof r->err);
	fclose(ch->err);
}

void hrt_cli_run_cmd(hrt_cli_run *r, const char *const *env,
		     const char *const *argv)
{
	hrt_child ch = hrt_cli_spawn(argv, env);

	hrt_cli_wait(&ch, r);
}
