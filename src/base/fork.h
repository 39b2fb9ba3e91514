/* SPDX-License-Identifier: MIT */
/* fork.h - objects used in a child of fork() (internal).
 *
 * fork() copies the calling thread only: in a child, a client's watcher
 * and ack threads and a registrar's renewal thread are not there, and a
 * lock one of them held at the fork stays locked for good.  Each such
 * object records the process that opened it; a call that needs its
 * threads compares that with the caller's process and fails in a child
 * (docs/embedding.md, "fork()").  The comparison is a system call, so it
 * sits where a thread is needed (waits, status, close), never on the
 * lookup path, which works unchanged in a child. */
#ifndef HR_FORK_H
#define HR_FORK_H

#include "hashring.h"

#include <stdbool.h>
#include <sys/types.h>

/* The calling process, as objects record it when they are opened. */
pid_t hr__process(void);

/* Whether the caller runs in a child of fork() made after `opened` was
 * recorded (or in a child of one). */
bool hr__forked_since(pid_t opened);

/* HR_ECLOSED for `call` in a child, with a message saying why and what
 * to do instead, e.g. `what` "the client was opened", `remedy` "open one
 * in this process". */
int hr__forked_error(hr_error *err, const char *call, const char *what,
		     const char *remedy, pid_t opened);

#endif
