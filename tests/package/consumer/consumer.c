/* SPDX-License-Identifier: MIT */
/*
 * consumer.c - a program built against an installed hashring, as a user
 * would write it: it only sees <hashring.h> and what the install put
 * beside it.  Prints the library version and one lookup, fails loudly if
 * the headers and the library it runs with disagree.  Its ring options
 * are set up by the init macro: the installed header's sizeof, read by
 * the installed library.
 */
#include <hashring.h>

#include <stdio.h>
#include <string.h>

#if !HR_VERSION_AT_LEAST(2, 0, 0)
#error "the installed headers carry no usable version"
#endif

int main(void)
{
	static const hr_node nodes[] = {
		{ "a", "127.0.0.1:11211", NULL, 1.0, HR_STATE_ACTIVE, NULL, 0 },
		{ "b", "127.0.0.2:11211", NULL, 1.0, HR_STATE_ACTIVE, NULL, 0 },
		{ "c", "127.0.0.3:11211", NULL, 1.0, HR_STATE_ACTIVE, NULL, 0 },
	};
	hr_ring_options opts;
	hr_error err = { 0 };
	hr_lookup where;
	hr_ring *ring;
	int rc;

	if (strcmp(hr_version(), HR_VERSION_STRING) != 0 ||
	    hr_version_number() != HR_VERSION_NUMBER) {
		fprintf(stderr, "consumer: headers %s, library %s\n",
			HR_VERSION_STRING, hr_version());
		return 1;
	}
	hr_ring_options_init(&opts);
	if (opts.size != sizeof opts ||
	    opts.vnodes_per_weight != HR_VNODES_PER_WEIGHT_DEFAULT) {
		fprintf(stderr, "consumer: hr_ring_options_init() gave size %zu\n", opts.size);
		return 1;
	}
	rc = hr_ring_build(nodes, 3, &opts, 0, &ring, &err);
	if (rc != HR_OK) {
		fprintf(stderr, "consumer: %s\n", err.message);
		return 1;
	}
	rc = hr_ring_lookup(ring, "user:42", strlen("user:42"), &where, NULL);
	if (rc != HR_OK || !where.node) {
		fprintf(stderr, "consumer: lookup: %s\n", hr_strerror(rc));
		hr_ring_release(ring);
		return 1;
	}
	printf("hashring %s: user:42 -> %s\n", hr_version(), where.node->id);
	hr_ring_release(ring);
	return 0;
}
