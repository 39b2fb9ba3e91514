/* SPDX-License-Identifier: MIT */
/* hrt_cli.h - integration-test helpers that run the `hashring` command as a
 * child process and collect its exit status and output. */
#ifndef HRT_CLI_H
#define HRT_CLI_H

#include <stdio.h>
#include <sys/types.h>

/* How long a command may run before it is killed (status -1). */
#define HRT_CLI_TIMEOUT_MS 20000

typedef struct hrt_cli_run {
	int status;            /* exit status, or -1 (signal, timeout) */
	int signal;            /* the signal that ended it, or 0 */
	char out[8192];
	char err[16384];      /* room for a few dozen library log lines */
} hrt_cli_run;

/* A running command; its stdout and stderr go to anonymous files. */
typedef struct hrt_child {
	pid_t pid;
	FILE *out, *err;       /* out is NULL with hrt_cli_spawn_to() */
} hrt_child;

/* Starts `hashring` with argv (NULL-terminated, without argv[0]) and the
 * "NAME=VALUE" entries of `env` on top of the test's environment minus
 * every ETCDCTL_* variable, with SIGPIPE's default action, as a shell
 * would. */
hrt_child hrt_cli_spawn(const char *const *argv, const char *const *env);

/* The same with stdout on `out_fd` (a pipe, /dev/full...), which the
 * parent's copy of is closed here. */
hrt_child hrt_cli_spawn_to(const char *const *argv, const char *const *env, int out_fd);

/* Copies what the child has written to its stderr so far into buf. */
void hrt_cli_peek_err(const hrt_child *ch, char *buf, size_t len);

/* Waits (bounded: killed after HRT_CLI_TIMEOUT_MS) for the child and
 * collects its output. */
void hrt_cli_wait(hrt_child *ch, hrt_cli_run *r);

/* Spawns and waits. */
void hrt_cli_run_cmd(hrt_cli_run *r, const char *const *env,
		     const char *const *argv);

#endif
