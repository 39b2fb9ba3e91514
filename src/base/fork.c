/* SPDX-License-Identifier: MIT */
/* fork.c - telling a child of fork() from the process that opened an
 * object. */
#include "fork.h"
#include "error.h"

#include <unistd.h>

pid_t hr__process(void)
{
	return getpid();
}

bool hr__forked_since(pid_t opened)
{
	return getpid() != opened;
}

int hr__forked_error(hr_error *err, const char *call, const char *what,
		     const char *remedy, pid_t opened)
{
	return hr__error_set(err, HR_ECLOSED,
			     "%s: %s before fork(), by process %ld, whose threads this"
			     " process does not have: %s",
			     call, what, (long)opened, remedy);
}
