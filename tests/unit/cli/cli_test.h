/* SPDX-License-Identifier: MIT */
/*
 * cli_test.h - what the suites of the `hashring` command share: a
 * temporary directory per test, running the command and collecting its
 * exit code and output, members files, and the checks of one-line errors
 * and usage messages.
 */
#ifndef HR_CLI_TEST_H
#define HR_CLI_TEST_H

#include "hrt_check.h"

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "hashring.h"

#ifndef HR_CLI_PATH
#error "HR_CLI_PATH must name the built hashring binary"
#endif

#define MAX_ARGS 32

/* Each test runs in its own forked process with its own directory. */
extern char tmpdir[PATH_MAX];

struct run {
	int status; /* exit code; -1 if the process did not exit normally */
	char *out;
	char *err;
};

/* The checked fixture of every test case: makes and removes tmpdir. */
void setup(void);
void teardown(void);

/* The path of `name` in tmpdir (a static buffer). */
char *path_in_tmp(const char *name);
/* The whole file, malloc'd and NUL-terminated. */
char *read_all(const char *path);

/* Writes `text` to file `name` in the test directory; returns its path. */
char *write_file(const char *name, const char *text);

/*
 * Starts program `prog` (the CLI unless a test tool) with argv[1..] from
 * the NULL-terminated list.  stdout goes to `out_fd` (closed in the
 * parent), or to a file when it is -1, and stderr to a file, so that
 * neither can fill a pipe and block.
 */
pid_t spawn_prog(const char *prog, const char *const *args, int out_fd);

/* spawn_prog() of the CLI. */
pid_t spawn_argv(const char *const *args, int out_fd);

/* Waits for `pid` (killing it after `timeout_ms`); returns its wait status. */
int wait_child(pid_t pid, int timeout_ms);

/* Runs `prog` to its end; stdout and stderr are read from their files. */
struct run run_prog(const char *prog, const char *const *args);

/* run_prog() of the CLI; RUN("a", "b") runs `hashring a b`. */
struct run run_argv(const char *const *args);
#define RUN(...) run_argv((const char *const[]){ __VA_ARGS__, NULL })

void run_free(struct run *r);

/* The lines of `s`: its newlines. */
size_t count_lines(const char *s);

#define LOOKUP_HEADER "KEY\tNODE\tREAD_NODE\tREPLICAS\n"

/* `lookup`'s text output after its header line, which it must start with. */
const char *lookup_lines(const char *out);

/* An error is exactly one line on stderr, "hashring: <cmd>: ...", and
 * nothing on stdout. */
void assert_one_error_line(const struct run *r, const char *cmd);

/* A usage error (exit 2) of `cmd` (NULL: none) naming `needle`. */
void assert_usage_error(const char *const *args, const char *cmd,
			const char *needle);

/* The number `name` of a JSON object (asserted to be one). */
double num(const cJSON *obj, const char *name);

/* Members documents: zones and weights; warming and draining nodes. */
extern const char members_zones[];
extern const char members_states[];

/* The library's ring of the members file `path`. */
hr_ring *load_ring(const char *path);

/* Whether python3's XML parser reads `path` as well-formed XML whose root
 * is an <svg> element. */
int svg_well_formed(const char *path);

#endif
