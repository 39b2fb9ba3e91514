/* SPDX-License-Identifier: MIT */
/* acks_read.c - the reading side of acknowledged epochs: the live clients' acks
 * under a prefix, their lag and conflicts, and the wait for a revision
 * (hashring.h, "Acknowledged epochs"; docs/handoff.md). */
#include "ack_record.h"
#include "client_config.h"
#include "clock.h"
#include "error.h"
#include "etcd.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often a wait reads the acks again. */
#define POLL_MS 100

struct hr_acks {
	hr_ack *items;
	size_t n;
	uint64_t ring_revision;
	char *strings;            /* client ids and versions, NUL-separated */
};

size_t hr_acks_count(const hr_acks *acks)
{
	return acks ? acks->n : 0;
}

const hr_ack *hr_acks_get(const hr_acks *acks, size_t i)
{
	return acks && i < acks->n ? &acks->items[i] : NULL;
}

uint64_t hr_acks_ring_revision(const hr_acks *acks)
{
	return acks ? acks->ring_revision : 0;
}

void hr_acks_free(hr_acks *acks)
{
	if (!acks)
		return;
	free(acks->items);
	free(acks->strings);
	free(acks);
}

/* Orders acks by revision, then digest. */
static int by_epoch(const void *x, const void *y)
{
	const hr_ack *a = *(const hr_ack *const *)x, *b = *(const hr_ack *const *)y;

	if (a->revision != b->revision)
		return a->revision < b->revision ? -1 : 1;
	return a->digest < b->digest ? -1 : a->digest > b->digest;
}

/* Marks every ack whose revision another ack reports with another digest. */
static int mark_conflicts(hr_acks *acks)
{
	const hr_ack **sorted;

	if (acks->n < 2)
		return 0;
	sorted = malloc(acks->n * sizeof *sorted);
	if (!sorted)
		return HR_ENOMEM;
	for (size_t i = 0; i < acks->n; i++)
		sorted[i] = &acks->items[i];
	qsort(sorted, acks->n, sizeof *sorted, by_epoch);
	for (size_t i = 0, j; i < acks->n; i = j) {
		for (j = i + 1; j < acks->n && sorted[j]->revision == sorted[i]->revision; j++)
			;
		/* Sorted by digest within a revision: the run has two digests
		 * exactly when its ends differ. */
		if (sorted[j - 1]->digest != sorted[i]->digest)
			for (size_t k = i; k < j; k++)
				((hr_ack *)sorted[k])->conflict = 1;
	}
	free(sorted);
	return 0;
}

/* Reads the acks under `ack_prefix` with `e`.  A value that is not an ack
 * is logged, unless `seen` (a wait's earlier readings) says it was read
 * before: a value put at or below *seen was; *seen becomes this
 * reading's revision. */
static int read_acks(hr__etcd *e, const hr__conn *conn, const char *ack_prefix,
		     int64_t *seen, hr_acks **out, hr_error *err)
{
	size_t plen = strlen(ack_prefix), n = 0, bytes = 0, used = 0;
	hr__kv *kvs = NULL;
	int64_t rev = 0, ring_rev = 0;
	hr_acks *acks;
	int rc;

	*out = NULL;
	rc = hr__etcd_list(e, ack_prefix, 1000, HR_NODES_MAX, &kvs, &n, &rev, err);
	if (!rc)
		rc = hr__etcd_newest_mod(e, conn->prefix, &ring_rev, err);
	if (rc) {
		hr__kvs_free(kvs, n);
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		bytes += kvs[i].key_len - plen + 1 + HR__ACK_VERSION_MAX + 1;
	acks = calloc(1, sizeof *acks);
	if (acks) {
		acks->items = calloc(n ? n : 1, sizeof *acks->items);
		acks->strings = malloc(bytes ? bytes : 1);
	}
	if (!acks || !acks->items || !acks->strings) {
		hr_acks_free(acks);
		hr__kvs_free(kvs, n);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	acks->ring_revision = (uint64_t)ring_rev;
	for (size_t i = 0; i < n; i++) {
		const char *id = kvs[i].key + plen;
		size_t id_len = kvs[i].key_len - plen;
		hr_error why = { 0 };
		hr_ack *a = &acks->items[acks->n];
		hr__ack_record rec;

		if (!kvs[i].lease) {
			rc = hr__error_set(&why, HR_EPARSE, "not attached to a lease");
		} else {
			rc = hr__ack_client_id_check(id, &why);
			if (!rc && memchr(id, '\0', id_len))
				rc = hr__error_set(&why, HR_EINVAL, "client id holds a NUL byte");
			if (!rc)
				rc = hr__ack_record_parse(id, id_len, kvs[i].value, kvs[i].value_len,
							  &rec, &why);
		}
		if (rc) {
			if (seen && kvs[i].mod_revision <= *seen)
				continue;
			hr__log_emit(&conn->log, HR_LOG_WARN, "bad_ack",
				     "key=%.*s mod_revision=%" PRId64 " msg=%s",
				     (int)(kvs[i].key_len < 300 ? kvs[i].key_len : 300), kvs[i].key,
				     kvs[i].mod_revision, why.message);
			continue;
		}
		a->client_id = acks->strings + used;
		memcpy(acks->strings + used, id, id_len + 1);
		used += id_len + 1;
		a->version = acks->strings + used;
		used += (size_t)sprintf(acks->strings + used, "%s", rec.version) + 1;
		a->revision = rec.revision;
		a->digest = rec.digest;
		a->lag = acks->ring_revision > a->revision ? acks->ring_revision - a->revision : 0;
		a->lease = kvs[i].lease;
		a->time_ms = rec.time_ms;
		acks->n++;
	}
	hr__kvs_free(kvs, n);
	if (seen)
		*seen = rev;
	if (mark_conflicts(acks)) {
		hr_acks_free(acks);
		return hr__error_set(err, HR_ENOMEM, "out of memory");
	}
	*out = acks;
	return 0;
}

/* Reads the settings and opens an etcd client for them. */
static int setup(const hr_etcd_config *etcd, const char *ack_prefix,
		 hr__conn *conn, hr__etcd **e, hr_error *err)
{
	int rc = hr__conn_read(etcd, conn, err);

	*e = NULL;
	if (!rc)
		rc = hr__ack_prefix_check(ack_prefix, conn->prefix, err);
	if (!rc)
		rc = hr__etcd_new(&conn->etcd, e, err);
	return rc;
}

int hr_acks_new(const hr_etcd_config *etcd, const char *ack_prefix,
		hr_acks **out, hr_error *err)
{
	hr__conn conn;
	hr__etcd *e;
	int rc;

	if (!out)
		return hr__error_set(err, HR_EINVAL, "out must not be NULL");
	*out = NULL;
	rc = setup(etcd, ack_prefix, &conn, &e, err);
	if (!rc)
		rc = read_acks(e, &conn, ack_prefix, NULL, out, err);
	hr__etcd_free(e);
	return rc;
}

/* Appends `"id" at REV` items to `buf` while they fit, then "and N more". */
static void list_behind(char *buf, size_t size, const hr_acks *acks,
			uint64_t revision, size_t behind)
{
	size_t len = strlen(buf), shown = 0;

	for (size_t i = 0; i < acks->n; i++) {
		const hr_ack *a = &acks->items[i];
		char item[HR_ID_MAX + 48];
		int w;

		if (a->revision >= revision)
			continue;
		w = snprintf(item, sizeof item, "%s\"%s\" at %" PRIu64, shown ? ", " : "",
			     a->client_id, a->revision);
		/* Room for the item and a tail of " and N more". */
		if (w < 0 || len + (size_t)w + 24 >= size)
			break;
		memcpy(buf + len, item, (size_t)w + 1);
		len += (size_t)w;
		shown++;
	}
	if (shown < behind)
		snprintf(buf + len, size - len, " and %zu more", behind - shown);
}

/* The verdict on one reading: 0, HR_ECONFLICT or HR_ETIMEDOUT (behind). */
static int judge(const hr_acks *acks, uint64_t revision, int timeout_ms,
		 hr_error *err)
{
	size_t behind = 0;

	for (size_t i = 0; i < acks->n; i++) {
		const hr_ack *a = &acks->items[i];

		/* The first ack in conflict has its partner after it. */
		for (size_t j = i + 1; a->conflict && j < acks->n; j++) {
			const hr_ack *b = &acks->items[j];

			if (b->revision == a->revision && b->digest != a->digest)
				return hr__error_set(err, HR_ECONFLICT,
						     "clients \"%.100s\" (digest %016" PRIx64
						     ") and \"%.100s\" (digest %016" PRIx64 ") report"
						     " different rings at revision %" PRIu64 ": they"
						     " watch different data or use different ring"
						     " options", a->client_id, a->digest, b->client_id,
						     b->digest, a->revision);
		}
		behind += a->revision < revision;
	}
	if (!behind)
		return 0;
	if (err) {
		err->code = HR_ETIMEDOUT;
		snprintf(err->message, sizeof err->message,
			 "%zu of %zu clients below revision %" PRIu64 " after %d ms: ", behind,
			 acks->n, revision, timeout_ms);
		list_behind(err->message, sizeof err->message, acks, revision, behind);
	}
	return HR_ETIMEDOUT;
}

int hr_acks_wait(const hr_etcd_config *etcd, const char *ack_prefix,
		 uint64_t revision, int timeout_ms, hr_acks **last, hr_error *err)
{
	int64_t deadline, seen = 0;
	hr__conn conn;
	hr__etcd *e;
	hr_acks *acks = NULL;
	int rc;

	if (last)
		*last = NULL;
	if (revision < 1 || revision > INT64_MAX)
		return hr__error_set(err, HR_EINVAL,
				     "revision %" PRIu64 " is not an etcd revision (1..%" PRId64 ")",
				     revision, INT64_MAX);
	if (timeout_ms < 0)
		return hr__error_set(err, HR_EINVAL, "timeout_ms must be >= 0 (is %d)", timeout_ms);
	rc = setup(etcd, ack_prefix, &conn, &e, err);
	if (rc) {
		hr__etcd_free(e);
		return rc;
	}
	deadline = hr__now_ms() + timeout_ms;
	for (;;) {
		hr_acks *now = NULL;
		hr_error rerr = { 0 };
		int64_t left;

		rc = read_acks(e, &conn, ack_prefix, &seen, &now, &rerr);
		if (!rc) {
			hr_acks_free(acks);
			acks = now;
			rc = judge(acks, revision, timeout_ms, err);
			if (rc != HR_ETIMEDOUT)
				break;
		} else if (rc != HR_ECONNECT && rc != HR_ETIMEDOUT) {
			hr__error_copy(err, &rerr);
			break;
		}
		left = deadline - hr__now_ms();
		if (left <= 0) {
			/* etcd unreachable even now: that is the news. */
			if (rerr.code)
				rc = hr__error_set(err, HR_ETIMEDOUT,
						   "acks not read after %d ms: %s", timeout_ms,
						   rerr.message);
			break;
		}
		struct timespec ts = { 0, (long)(left < POLL_MS ? left : POLL_MS) * 1000000L };
		nanosleep(&ts, NULL);
	}
	hr__etcd_free(e);
	if (last)
		*last = acks;
	else
		hr_acks_free(acks);
	return rc;
}
