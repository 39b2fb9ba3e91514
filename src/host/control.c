/* SPDX-License-Identifier: MIT */
/* control.c - the names of an agent directory's snapshot files
 * (control.h). */
#include "control.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void hr__snap_name(char *name, uint64_t gen)
{
	snprintf(name, HR__SNAP_NAME_MAX, "ring-%020" PRIu64 ".snap", gen);
}

int hr__snap_name_parse(const char *name, uint64_t *gen)
{
	uint64_t g = 0;

	if (strncmp(name, "ring-", 5) || strlen(name) != 30 || strcmp(name + 25, ".snap"))
		return 0;
	for (int i = 5; i < 25; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		g = g * 10 + (uint64_t)(name[i] - '0');
	}
	*gen = g;
	return 1;
}
