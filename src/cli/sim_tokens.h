/* SPDX-License-Identifier: MIT */
/* sim_tokens.h - `hashring sim --placement tokens`: joins with allocated
 * tokens, one at a time, then leaves (sim_tokens.c). */
#ifndef HR_SIM_TOKENS_H
#define HR_SIM_TOKENS_H

#include "cli.h"

struct sim_tokens_args {
	unsigned long nodes;	/* that join, one at a time */
	unsigned long tokens;	/* each */
	int weighted;		/* weights 1, 2, 3, 4 in turn */
	int json;
};

/* Runs the simulation and prints it; an exit status. */
int sim_tokens_run(const char *cmd, const struct sim_tokens_args *a);

#endif
