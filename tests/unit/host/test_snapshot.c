/* SPDX-License-Identifier: MIT */
/*
 * test_snapshot.c - a ring written as a snapshot and mapped back is the
 * same ring (every answer compared, as derived rings are): each placement,
 * flat and paged layouts, warming and draining nodes, long strings, the
 * empty and one-node rings; mapped at its base and moved.  And the files
 * a reader must refuse: missing, a symlink, truncated, corrupt, another
 * version, and hostile ones whose checksum is right but whose offsets,
 * counts or arrays are not, every one refused with a message, never a
 * crash; random damage with a right checksum, likewise.
 */
#define _GNU_SOURCE
#include "hashring.h"
#include "hrt_check.h"
#include "hrt_rand.h"
#include "hrt_ring_fixture.h"
#include "ring_build.h"
#include "ring_impl.h"
#include "same_ring.h"
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where a snapshot maps when its range is free: at its base, but for
 * ThreadSanitizer, which keeps programs out of the range (snapshot.h). */
#ifdef __SANITIZE_THREAD__
#define AT_BASE HR__SNAP_MOVED
#else
#define AT_BASE HR__SNAP_AT_BASE
#endif

/* A fresh directory for the test's files (removed by the harness's
 * child exiting: each test runs in a process of its own). */
static int tmp_dir(char *path, size_t size)
{
	int fd;

	snprintf(path, size, "/tmp/hrt-snap-XXXXXX");
	ck_assert(mkdtemp(path) != NULL);
	fd = open(path, O_RDONLY | O_DIRECTORY);
	ck_assert(fd >= 0);
	return fd;
}

static void rm_dir(int dfd, const char *path)
{
	const char *names[] = { "snap", "copy", "link", ".snap.tmp" };

	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		unlinkat(dfd, names[i], 0);
	close(dfd);
	rmdir(path);
}

/* Writes `ring` as "snap" in `dfd`, maps it back, and checks the two
 * answer alike; the mapping is `want`. */
static void round_trip(const hr_ring *ring, uint64_t gen, enum hr__snap_mapping want)
{
	char dir[64];
	int dfd = tmp_dir(dir, sizeof dir);
	hr_error err = { 0 };
	hr_ring *m = NULL;
	uint64_t rng = 42;
	struct stat st;

	ck_assert_msg(hr__snapshot_write(ring, dfd, "snap", gen, &err) == HR_OK, "%s",
		      err.message);
	ck_assert(fstatat(dfd, "snap", &st, 0) == 0);
	ck_assert_int_eq(st.st_mode & 0777, 0640);
	ck_assert(faccessat(dfd, ".snap.tmp", F_OK, 0) != 0);
	ck_assert_msg(hr__snapshot_map(dfd, "snap", &m, &err) == HR_OK, "%s", err.message);
	ck_assert_int_eq(hr__snapshot_mapping(m), want);
	ck_assert_int_eq(hr__snapshot_mapping(ring), HR__SNAP_NOT);
	ck_assert(hr_ring_revision(m) == hr_ring_revision(ring));
	expect_same(m, ring, xxh3, &rng);
	/* The file may go: the mapping keeps it. */
	ck_assert(unlinkat(dfd, "snap", 0) == 0);
	expect_same(m, ring, xxh3, &rng);
	hr_ring_release(m);
	rm_dir(dfd, dir);
}

/* Nodes 0..n-1 with zones, some warming or draining when `states`. */
static hr_ring *ring_of(size_t n, hr_placement placement, bool states,
			hr__layout layout)
{
	hrt_nodes *s = hrt_nodes_new(n, "node-%04zu", "127.0.0.1:%zu", 20000);
	hr_ring_options o;
	hr_error err = { 0 };
	hr_ring *r = NULL;

	hrt_nodes_zones(s, 3);
	for (size_t i = 0; states && i < n; i++)
		s->nodes[i].state = i % 7 == 1 ? HR_STATE_WARMING :
				    i % 7 == 2 ? HR_STATE_DRAINING : HR_STATE_ACTIVE;
	hr_ring_options_init(&o);
	o.placement = placement;
	o.vnodes_per_weight = 40;
	o.maglev_size = 1009;
	ck_assert_msg(hr__ring_build_layout(s->nodes, n, &o, 77, hr__point_hash_contract, layout, &r, &err) ==
		      HR_OK, "%s", err.message);
	hrt_nodes_free(s);
	return r;
}

static const hr_placement placements[] = {
	HR_PLACEMENT_XXH3, HR_PLACEMENT_KETAMA, HR_PLACEMENT_MAGLEV,
	HR_PLACEMENT_RENDEZVOUS, HR_PLACEMENT_TOKENS,
};

START_TEST(test_each_placement)
{
	hr_placement p = placements[_i / 2];
	hr_ring *r = ring_of(60, p, _i % 2, HR__LAYOUT_AUTO);

	round_trip(r, 3, AT_BASE);
	hr_ring_release(r);
}
END_TEST

START_TEST(test_paged)
{
	/* A paged ring is written flat; the answers stay. */
	hr_ring *r = ring_of(300, HR_PLACEMENT_XXH3, _i, HR__LAYOUT_PAGED);

	round_trip(r, 5, AT_BASE);
	hr_ring_release(r);
}
END_TEST

START_TEST(test_small_rings)
{
	hrt_nodes *s = hrt_nodes_new(3, "n%zu", NULL, 0);
	hr_ring *r;

	r = hrt_ring_build(NULL, 0, NULL, 1);
	round_trip(r, 1, AT_BASE);
	hr_ring_release(r);
	r = hrt_ring_build(s->nodes, 1, NULL, 2);
	round_trip(r, 2, AT_BASE);
	hr_ring_release(r);
	for (size_t i = 0; i < 3; i++)
		s->nodes[i].state = HR_STATE_DRAINING;
	r = hrt_ring_build(s->nodes, 3, NULL, 3);
	round_trip(r, 3, AT_BASE);
	hr_ring_release(r);
	hrt_nodes_free(s);
}
END_TEST

START_TEST(test_long_strings)
{
	/* Ids and addresses past a lookup line's room: spilled lines. */
	char ids[4][200], addrs[4][120];
	hr_node nodes[4];
	hr_ring *r;

	for (int i = 0; i < 4; i++) {
		snprintf(ids[i], sizeof ids[i], "%0*d", i % 2 ? 150 : 10, i);
		snprintf(addrs[i], sizeof addrs[i], "127.0.0.1:%0*d", i < 2 ? 100 : 4, i + 1);
		nodes[i] = (hr_node){ .id = ids[i], .addr = addrs[i], .weight = 1 + i };
	}
	r = hrt_ring_build(nodes, 4, NULL, 9);
	round_trip(r, 9, AT_BASE);
	hr_ring_release(r);
}
END_TEST

#ifndef __SANITIZE_THREAD__
START_TEST(test_moved)
{
	/* Another mapping where the file wants to be: mapped elsewhere,
	 * its records moved, the same answers. */
	hr_ring *r = ring_of(80, HR_PLACEMENT_TOKENS, true, HR__LAYOUT_AUTO);
	void *want = (void *)(uintptr_t)hr__snap_base(11);
	void *p = mmap(want, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		       MAP_FIXED_NOREPLACE, -1, 0);

	ck_assert(p == want);
	round_trip(r, 11, HR__SNAP_MOVED);
	munmap(p, 1 << 20);
	hr_ring_release(r);
}
END_TEST
#endif

/* ---- files a reader refuses -------------------------------------------------- */

/* A snapshot of a small ring with warming nodes, read into memory. */
static unsigned char *snapshot_bytes(int dfd, size_t *len)
{
	hr_ring *r = ring_of(40, HR_PLACEMENT_XXH3, true, HR__LAYOUT_AUTO);
	hr_error err = { 0 };
	unsigned char *buf;
	struct stat st;
	int fd;

	ck_assert_msg(hr__snapshot_write(r, dfd, "snap", 4, &err) == HR_OK, "%s",
		      err.message);
	hr_ring_release(r);
	fd = openat(dfd, "snap", O_RDONLY);
	ck_assert(fd >= 0 && fstat(fd, &st) == 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len);
	ck_assert(buf && pread(fd, buf, *len, 0) == (ssize_t)*len);
	close(fd);
	return buf;
}

/* Writes buf as "copy" (its checksum made right first when `fix`), maps
 * it, and returns the result; the message in `err`. */
static int map_copy(int dfd, unsigned char *buf, size_t len, bool fix, hr_error *err)
{
	hr_ring *m = NULL;
	int fd, rc;

	if (fix) {
		uint64_t c = hr__snapshot_checksum(buf, len);

		memcpy(buf + offsetof(struct hr__snap_header, checksum), &c, 8);
	}
	unlinkat(dfd, "copy", 0);
	fd = openat(dfd, "copy", O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert(fd >= 0 && write(fd, buf, len) == (ssize_t)len);
	close(fd);
	rc = hr__snapshot_map(dfd, "copy", &m, err);
	if (rc == HR_OK) {
		/* Whatever was accepted is safe to look up in. */
		for (int k = 0; k < 100; k++) {
			hr_lookup l;
			char key[16];

			snprintf(key, sizeof key, "k%d", k);
			(void)hr_ring_lookup(m, key, strlen(key), &l, NULL);
		}
		hr_ring_release(m);
	} else {
		ck_assert(m == NULL);
		hrt_assert_clean_message(err->message);
	}
	return rc;
}

static void expect_refused(int dfd, unsigned char *buf, size_t len, bool fix,
			   const char *says)
{
	hr_error err = { 0 };

	ck_assert_int_eq(map_copy(dfd, buf, len, fix, &err), HR_EPARSE);
	ck_assert_msg(strstr(err.message, says) != NULL, "\"%s\" does not say \"%s\"",
		      err.message, says);
}

static struct hr__snap_header *header_of(unsigned char *buf)
{
	return (struct hr__snap_header *)buf;
}

START_TEST(test_refused)
{
	char dir[64];
	int dfd = tmp_dir(dir, sizeof dir);
	hr_error err = { 0 };
	hr_ring *m = NULL;
	size_t len;
	unsigned char *good = snapshot_bytes(dfd, &len), *b = malloc(len);
	struct hr__snap_header *h;

	ck_assert(b);
	/* As written: accepted. */
	memcpy(b, good, len);
	ck_assert_int_eq(map_copy(dfd, b, len, false, &err), HR_OK);

	ck_assert_int_eq(hr__snapshot_map(dfd, "absent", &m, &err), HR_ENOTFOUND);
	ck_assert(symlinkat("snap", dfd, "link") == 0);
	ck_assert_int_eq(hr__snapshot_map(dfd, "link", &m, &err), HR_EIO);
	ck_assert(strstr(err.message, "symlink") != NULL);

	memcpy(b, good, len);
	expect_refused(dfd, b, len - 64, false, "truncated");
	expect_refused(dfd, b, 100, false, "too short");
	memcpy(b, good, len);
	b[len / 2] ^= 0x10;
	expect_refused(dfd, b, len, false, "checksum");
	memcpy(b, good, len);
	b[0] = 'H';
	expect_refused(dfd, b, len, true, "magic");
	memcpy(b, good, len);
	header_of(b)->version = 2;
	expect_refused(dfd, b, len, true, "version 2");
	memcpy(b, good, len);
	header_of(b)->record_bytes += 8;
	expect_refused(dfd, b, len, true, "another machine");

	/* Hostile: a right checksum over wrong contents. */
	memcpy(b, good, len);
	header_of(b)->section[HR__SNAP_LINES].off = len + 4096;
	expect_refused(dfd, b, len, true, "outside the file");
	memcpy(b, good, len);
	header_of(b)->nnodes = 41;
	expect_refused(dfd, b, len, true, "sizes");
	memcpy(b, good, len);
	header_of(b)->npoints++;
	expect_refused(dfd, b, len, true, "add up");
	memcpy(b, good, len);
	h = header_of(b);
	{
		struct ring_node *rn = (struct ring_node *)(b + h->section[HR__SNAP_NODES].off);

		rn[3].pub.id = (const char *)(uintptr_t)(h->base + len + 100);
		expect_refused(dfd, b, len, true, "node 3: a string");
		memcpy(b, good, len);
		rn[5].id_len++;
		expect_refused(dfd, b, len, true, "node 5");
		memcpy(b, good, len);
		rn[2].pub.state = 7;
		expect_refused(dfd, b, len, true, "node 2");
		memcpy(b, good, len);
		{
			/* Two ids swapped, lines and all. */
			struct ring_line *l = (struct ring_line *)(b + h->section[HR__SNAP_LINES].off);
			const char *id = rn[4].pub.id;
			char line_id[LINE_STR];

			rn[4].pub.id = rn[5].pub.id;
			rn[5].pub.id = id;
			memcpy(line_id, l[4].id, LINE_STR);
			memcpy(l[4].id, l[5].id, LINE_STR);
			memcpy(l[5].id, line_id, LINE_STR);
			expect_refused(dfd, b, len, true, "node 5: ids not in order");
		}
	}
	memcpy(b, good, len);
	{
		struct ring_line *l = (struct ring_line *)(b + h->section[HR__SNAP_LINES].off);

		l[6].id[0] ^= 1;
		expect_refused(dfd, b, len, true, "lookup line");
	}
	memcpy(b, good, len);
	{
		uint64_t *pos = (uint64_t *)(b + h->view[0].pos.off);

		pos[10] = pos[11] + 1;
		expect_refused(dfd, b, len, true, "not in order");
		memcpy(b, good, len);
		pos[h->view[0].npoints] = 5;
		expect_refused(dfd, b, len, true, "padded");
	}
	memcpy(b, good, len);
	{
		uint32_t *index = (uint32_t *)(b + h->view[0].index.off);

		index[3] += 2;
		expect_refused(dfd, b, len, true, "index");
		memcpy(b, good, len);
		index[1] = (uint32_t)h->view[0].npoints + 9;
		expect_refused(dfd, b, len, true, "index");
	}
	memcpy(b, good, len);
	{
		uint16_t *nd = (uint16_t *)(b + h->view[1].node.off);

		nd[7] = 40;
		expect_refused(dfd, b, len, true, "node numbers");
	}
	memcpy(b, good, len);
	h->view[1].kind = 9;
	expect_refused(dfd, b, len, true, "unknown kind");
	memcpy(b, good, len);
	h->base += 4096;
	expect_refused(dfd, b, len, true, "base");
	memcpy(b, good, len);
	h->generation++;
	expect_refused(dfd, b, len, true, "base");
	free(b);
	free(good);
	rm_dir(dfd, dir);
}
END_TEST

START_TEST(test_random_damage)
{
	/* Bytes damaged at random, the checksum made right: each file is
	 * refused with HR_EPARSE or, where the damage is harmless (padding,
	 * a weight), mapped and looked up in; never a crash. */
	char dir[64];
	int dfd = tmp_dir(dir, sizeof dir);
	size_t len;
	unsigned char *good = snapshot_bytes(dfd, &len), *b = malloc(len);
	uint64_t rng = 7;
	int refused = 0;

	ck_assert(b);
	for (int t = 0; t < 400; t++) {
		hr_error err = { 0 };
		int rc;

		memcpy(b, good, len);
		for (int k = 0; k < 1 + (int)below(&rng, 4); k++) {
			size_t at = below(&rng, len);

			b[at] ^= (unsigned char)(1u << below(&rng, 8));
		}
		rc = map_copy(dfd, b, len, true, &err);
		ck_assert_msg(rc == HR_OK || rc == HR_EPARSE, "%d: %s", rc, err.message);
		refused += rc == HR_EPARSE;
	}
	ck_assert(refused > 0);
	free(b);
	free(good);
	rm_dir(dfd, dir);
}
END_TEST

START_TEST(test_bad_arguments)
{
	hr_ring *r = ring_of(5, HR_PLACEMENT_XXH3, false, HR__LAYOUT_AUTO), *m = NULL;
	hrt_nodes *s = hrt_nodes_new(5, "n%zu", NULL, 0);
	hr_ring *tie = NULL;
	hr_error err = { 0 };

	ck_assert_int_eq(hr__snapshot_write(NULL, AT_FDCWD, "x", 1, &err), HR_EINVAL);
	ck_assert_int_eq(hr__snapshot_write(r, AT_FDCWD, "a/b", 1, &err), HR_EINVAL);
	ck_assert_int_eq(hr__snapshot_write(r, AT_FDCWD, "", 1, &err), HR_EINVAL);
	ck_assert_int_eq(hr__snapshot_write(r, -1, "x", 1, &err), HR_EIO);
	ck_assert(hr__ring_build_hashed(s->nodes, 5, NULL, 1, hrt_tie_hash, &tie, &err) ==
		  HR_OK);
	ck_assert_int_eq(hr__snapshot_write(tie, AT_FDCWD, "x", 1, &err), HR_EINVAL);
	ck_assert(strstr(err.message, "point hash") != NULL);
	ck_assert_int_eq(hr__snapshot_map_fd(-1, "x", &m, &err), HR_EINVAL);
	ck_assert_int_eq(hr__snapshot_map(AT_FDCWD, NULL, &m, &err), HR_EINVAL);
	ck_assert_int_eq(hr__snapshot_map(AT_FDCWD, "/tmp", &m, &err), HR_EPARSE);
	ck_assert(m == NULL);
	hr_ring_release(tie);
	hr_ring_release(r);
	hrt_nodes_free(s);
}
END_TEST

static Suite *snapshot_suite(void)
{
	Suite *s = suite_create("snapshot");
	TCase *tc = tcase_create("snapshot");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_each_placement, 0, 10);
	tcase_add_loop_test(tc, test_paged, 0, 2);
	tcase_add_test(tc, test_small_rings);
	tcase_add_test(tc, test_long_strings);
#ifndef __SANITIZE_THREAD__
	/* (A fixed mapping there is what ThreadSanitizer aborts on; its
	 * builds map every snapshot moved.) */
	tcase_add_test(tc, test_moved);
#endif
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_random_damage);
	tcase_add_test(tc, test_bad_arguments);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(snapshot_suite());
}
