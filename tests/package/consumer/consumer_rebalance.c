/* SPDX-License-Identifier: MIT */
/*
 * consumer_rebalance.c - a program built against an installed
 * libhashring-rebalance, as a user would write it: <hashring.h> and
 * <hashring/rebalance.h>, linked through hashring::rebalance or
 * `pkg-config hashring-rebalance`.  Makes a rebalancer over a store of
 * its own (which it never runs) and prints the library version and the
 * name of the copy step.
 */
#include <hashring.h>
#include <hashring/rebalance.h>

#include <stdio.h>

static int no_keys(void *ud, const char *addr, unsigned pass, hr_rebalance_key_fn fn,
		   void *ctx, hr_error *err)
{
	(void)ud, (void)addr, (void)pass, (void)fn, (void)ctx, (void)err;
	return 0;
}

static int no_value(void *ud, const char *addr, const void *key, size_t len,
		    hr_rebalance_value *out, hr_error *err)
{
	(void)ud, (void)addr, (void)key, (void)len, (void)out, (void)err;
	return HR_ENOTFOUND;
}

static int no_add(void *ud, const char *addr, const void *key, size_t len,
		  const hr_rebalance_value *value, uint64_t *cas, hr_error *err)
{
	(void)ud, (void)addr, (void)key, (void)len, (void)value, (void)cas, (void)err;
	return 0;
}

int main(void)
{
	hr_rebalance_backend backend;
	hr_rebalance_config cfg;
	hr_rebalancer *rb = NULL;
	hr_error err = { 0 };

	hr_rebalance_backend_init(&backend);
	backend.enumerate = no_keys;
	backend.fetch = no_value;
	backend.add = no_add;
	hr_rebalance_config_init(&cfg);
	if (hr_rebalancer_new(&backend, &cfg, &rb, &err) != HR_OK) {
		fprintf(stderr, "consumer_rebalance: %s\n", err.message);
		return 1;
	}
	printf("hashring %s: rebalance step %s\n", hr_version(),
	       hr_rebalance_step_name(HR_REBALANCE_STEP_COPY));
	hr_rebalancer_free(rb);
	return 0;
}
