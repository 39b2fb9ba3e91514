/* SPDX-License-Identifier: MIT */
/* fuzz_snapshot.c - libFuzzer target for the snapshot reader: a file in
 * an agent's directory, which a reader maps and looks up in.  The input
 * is the file, its checksum made right first, so that the fuzzer
 * reaches the checks of the contents rather than stopping at the
 * checksum's (test_snapshot checks that damage alone is refused).
 * Whatever the reader accepts is looked up in, walked and measured. */
#define _GNU_SOURCE
#include "hashring.h"
#include "snapshot.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Uses every part of an accepted ring a reader may read. */
static void use(const hr_ring *r)
{
	size_t n = hr_ring_node_count(r);
	double shares[64];
	const hr_node *pl[8];

	for (int k = 0; k < 64; k++) {
		char key[8];
		hr_lookup l;
		int len = snprintf(key, sizeof key, "k%d", k);

		(void)hr_ring_lookup(r, key, (size_t)len, &l, NULL);
		(void)hr_ring_preflist(r, key, (size_t)len, HR_VIEW_WRITE, pl, 8, NULL);
		(void)hr_ring_preflist(r, key, (size_t)len, HR_VIEW_READ, pl, 3, NULL);
	}
	for (size_t i = 0; i < n; i++) {
		const hr_node *nd = hr_ring_node(r, i);

		if (!nd || strlen(nd->id) + strlen(nd->addr) + strlen(nd->zone) > 3 * 255)
			__builtin_trap();
	}
	if (n <= 64) {
		(void)hr_ring_node_shares(r, HR_VIEW_WRITE, shares, n);
		(void)hr_ring_node_shares(r, HR_VIEW_READ, shares, n);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hr_error err = { 0 };
	hr_ring *r = NULL;
	int fd = memfd_create("snapshot", MFD_CLOEXEC);
	unsigned char *copy;

	if (fd < 0)
		return 0;
	copy = size ? (unsigned char *)malloc(size) : NULL;
	if (size && !copy) {
		close(fd);
		return 0;
	}
	if (size)
		memcpy(copy, data, size);
	if (size >= HR__SNAP_HEADER) {
		uint64_t c = hr__snapshot_checksum(copy, size);

		memcpy(copy + offsetof(struct hr__snap_header, checksum), &c, sizeof c);
	}
	if (size && write(fd, copy, size) != (ssize_t)size) {
		free(copy);
		close(fd);
		return 0;
	}
	free(copy);
	if (hr__snapshot_map_fd(fd, "fuzz", &r, &err) == HR_OK) {
		use(r);
		hr_ring_release(r);
	} else if (!err.message[0] || r) {
		__builtin_trap();
	}
	close(fd);
	return 0;
}
