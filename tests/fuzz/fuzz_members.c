/* SPDX-License-Identifier: MIT */
/* fuzz_members.c - libFuzzer target for members documents (the JSON object
 * mapping node id to record that `hashring --members FILE` and
 * hr_ring_from_json() read).  One point per unit of weight keeps each run
 * fast; weights that would need too many points must fail with HR_ELIMIT,
 * not exhaust memory. */
#include "hashring.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 1 };
	hr_ring *ring = NULL;
	hr_error err = { 0 };
	int rc = hr_ring_from_json((const char *)data, size, &opts, &ring, &err);

	if (rc == 0) {
		hr_lookup l;
		const hr_node *pref[4];

		if (!ring)
			__builtin_trap();
		/* A ring that was accepted answers lookups consistently. */
		rc = hr_ring_lookup(ring, data, size, &l, NULL);
		if (rc != 0 && rc != HR_EEMPTY)
			__builtin_trap();
		if ((rc == HR_EEMPTY) != (hr_ring_node_count(ring) == 0))
			__builtin_trap();
		if (hr_ring_preflist(ring, data, size, HR_VIEW_READ, pref, 4, NULL) < 0)
			__builtin_trap();
		for (size_t i = 0; i < hr_ring_node_count(ring); i++)
			if (hr_ring_find(ring, hr_ring_node(ring, i)->id) !=
			    hr_ring_node(ring, i))
				__builtin_trap();
	} else if (ring || err.code != rc || !err.message[0]) {
		__builtin_trap();
	}
	hr_ring_release(ring);
	return 0;
}
