/* SPDX-License-Identifier: MIT */
/* metrics.c - the metric families of a ring and of a client, in the order
 * and with the names hashring.h lists; written by metrics_text.c.  A new
 * family is one more function called below, with its HR_METRICS_OMIT_*
 * flag. */
#include "error.h"
#include "hashring.h"
#include "metrics_options.h"
#include "metrics_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* The hot keys written: the top 10. */
#define HR__METRICS_HOT_KEYS 10

/* What one exposition writes: read once, before the first byte. */
typedef struct snapshot {
	const hr_ring *ring;
	double *shares[2];              /* per node, by hr_view */
	size_t nodes;
	hr_node_lookups *lookups;       /* a client's, unless omitted */
	size_t nlookups;
	hr_hot_key hot[HR__METRICS_HOT_KEYS];	/* a client's, unless omitted */
	size_t nhot;
} snapshot;

static const char *const view_names[2] = { "write", "read" };

/* A hot key as a label value: its bytes, a control byte or DEL as the
 * four characters \xHH (the writer escapes the backslash again and
 * replaces invalid UTF-8), and "..." after a key cut at HR_HOT_KEY_MAX
 * bytes. */
static void hot_key_label(const hr_hot_key *h, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = h->len < HR_HOT_KEY_MAX ? h->len : HR_HOT_KEY_MAX, k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char b = h->key[i];

		if (b < 0x20 || b == 0x7f) {
			buf[k++] = '\\';
			buf[k++] = 'x';
			buf[k++] = hex[b >> 4];
			buf[k++] = hex[b & 15];
		} else {
			buf[k++] = (char)b;
		}
	}
	if (h->len > HR_HOT_KEY_MAX)
		for (int i = 0; i < 3; i++)
			buf[k++] = '.';
	buf[k] = '\0';
}

/* Room for hot_key_label(). */
#define HOT_LABEL_MAX (4 * HR_HOT_KEY_MAX + 4)

static void hot_key_families(hr__expo *e, const snapshot *s)
{
	static const char *const names[2] = {
		"hashring_hot_key_lookups_per_second", "hashring_hot_key_share_ratio"
	};
	static const char *const help[2] = {
		"The client's most frequent keys (rank 1 first), estimated lookups per second.",
		"The client's most frequent keys (rank 1 first), estimated share of its lookups, 0 to 1."
	};

	for (int f = 0; f < 2; f++) {
		hr__expo_family(e, names[f], "gauge", help[f]);
		for (size_t i = 0; i < s->nhot; i++) {
			char rank[24], key[HOT_LABEL_MAX];
			hr_metrics_label l[3];

			l[0] = (hr_metrics_label){ "rank", rank };
			l[1] = (hr_metrics_label){ "key", key };
			l[2] = (hr_metrics_label){ "node", s->hot[i].node };
			snprintf(rank, sizeof rank, "%zu", i + 1);
			hot_key_label(&s->hot[i], key);
			hr__expo_double(e, l, 3, f ? s->hot[i].share : s->hot[i].rate);
		}
	}
}

static int snapshot_take(snapshot *s, const hr_ring *ring, uint64_t omit, hr_error *err)
{
	s->ring = ring;
	s->nodes = hr_ring_node_count(ring);
	s->shares[0] = s->shares[1] = NULL;
	if ((omit & HR_METRICS_OMIT_NODES) || !s->nodes)
		return 0;
	s->shares[0] = malloc(2 * s->nodes * sizeof(double));
	if (!s->shares[0])
		return hr__error_set(err, HR_ENOMEM, "out of memory (shares of %zu nodes)",
				     s->nodes);
	s->shares[1] = s->shares[0] + s->nodes;
	hr_ring_node_shares(ring, HR_VIEW_WRITE, s->shares[0], s->nodes);
	hr_ring_node_shares(ring, HR_VIEW_READ, s->shares[1], s->nodes);
	return 0;
}

/* The client's lookup counts, read until the array holds them all (nodes
 * may join between the two reads). */
static int lookups_take(snapshot *s, hr_client *client, hr_error *err)
{
	size_t total = 0, cap = 0;
	int n;

	for (;;) {
		n = hr_client_lookup_counts(client, s->lookups, cap, &total, err);
		if (n < 0)
			return n;
		if (total <= cap)
			break;
		free(s->lookups);
		cap = total + total / 8 + 1;
		s->lookups = malloc(cap * sizeof *s->lookups);
		if (!s->lookups)
			return hr__error_set(err, HR_ENOMEM,
					     "out of memory (lookup counts of %zu nodes)", total);
	}
	s->nlookups = (size_t)n;
	return 0;
}

static void build_family(hr__expo *e)
{
	hr_metrics_label l = { "version", hr_version() };

	hr__expo_family(e, "hashring_build_info", "gauge",
			"The hashring library writing these metrics, by version.");
	hr__expo_u64(e, &l, 1, 1);
}

static void ring_families(hr__expo *e, const snapshot *s)
{
	char digest[17];
	hr_metrics_label l = { "digest", digest };

	hr__expo_family(e, "hashring_ring_revision", "gauge",
			"The etcd revision of the published ring (0 before the first sync).");
	hr__expo_u64(e, NULL, 0, hr_ring_revision(s->ring));
	snprintf(digest, sizeof digest, "%016" PRIx64, hr_ring_digest(s->ring));
	hr__expo_family(e, "hashring_ring_info", "gauge",
			"The published ring's digest: equal digests give equal placement.");
	hr__expo_u64(e, &l, 1, 1);
}

static void client_families(hr__expo *e, const hr_client_status *st)
{
	hr_metrics_label l = { "endpoint", st->endpoint };

	hr__expo_family(e, "hashring_confirmed_revision", "gauge",
			"The newest etcd revision the client knows it has applied.");
	hr__expo_u64(e, NULL, 0, st->confirmed_revision);
	hr__expo_family(e, "hashring_unconfirmed_seconds", "gauge",
			"0 while the ring is known current, else the time since it last was.");
	hr__expo_double(e, NULL, 0, (double)st->unconfirmed_ms / 1000.0);
	hr__expo_family(e, "hashring_rings_published_total", "counter",
			"Rings the client has published.");
	hr__expo_u64(e, NULL, 0, st->rings_published);
	hr__expo_family(e, "hashring_resyncs_total", "counter",
			"Full syncs of the membership after the first.");
	hr__expo_u64(e, NULL, 0, st->resyncs);
	hr__expo_family(e, "hashring_reconnects_total", "counter",
			"Reconnections of the client's etcd watch.");
	hr__expo_u64(e, NULL, 0, st->reconnects);
	hr__expo_family(e, "hashring_watcher_clients", "gauge",
			"Clients in this process following the client's watcher (1: not shared).");
	hr__expo_u64(e, NULL, 0, st->watcher_clients);
	hr__expo_family(e, "hashring_etcd_endpoint_info", "gauge",
			"The etcd endpoint the client uses now (none while it has none).");
	if (st->endpoint[0])
		hr__expo_u64(e, &l, 1, 1);
}

static void count_families(hr__expo *e, const snapshot *s)
{
	uint64_t per_state[3] = { 0, 0, 0 };
	hr_metrics_label l = { "state", NULL };

	for (size_t i = 0; i < s->nodes; i++)
		per_state[hr_ring_node(s->ring, i)->state]++;
	hr__expo_family(e, "hashring_ring_nodes", "gauge", "Nodes of the ring, by state.");
	for (int st = HR_STATE_ACTIVE; st <= HR_STATE_DRAINING; st++) {
		l.value = hr_state_name((hr_state)st);
		hr__expo_u64(e, &l, 1, per_state[st]);
	}
	hr__expo_family(e, "hashring_ring_points", "gauge", "Points (virtual nodes) of the ring.");
	hr__expo_u64(e, NULL, 0, hr_ring_point_count(s->ring));
}

static void node_families(hr__expo *e, const snapshot *s)
{
	hr_metrics_label l[3];

	hr__expo_family(e, "hashring_node_info", "gauge", "Each node of the ring, with its address and zone.");
	for (size_t i = 0; i < s->nodes; i++) {
		const hr_node *n = hr_ring_node(s->ring, i);

		l[0] = (hr_metrics_label){ "node", n->id };
		l[1] = (hr_metrics_label){ "addr", n->addr };
		l[2] = (hr_metrics_label){ "zone", n->zone ? n->zone : "" };
		hr__expo_u64(e, l, 3, 1);
	}
	hr__expo_family(e, "hashring_node_state", "gauge",
			"Each node's state: 1 for the one it is in, 0 for the others.");
	for (size_t i = 0; i < s->nodes; i++) {
		const hr_node *n = hr_ring_node(s->ring, i);

		l[0] = (hr_metrics_label){ "node", n->id };
		for (int st = HR_STATE_ACTIVE; st <= HR_STATE_DRAINING; st++) {
			l[1] = (hr_metrics_label){ "state", hr_state_name((hr_state)st) };
			hr__expo_u64(e, l, 2, n->state == (hr_state)st);
		}
	}
	hr__expo_family(e, "hashring_node_weight", "gauge", "Each node's weight.");
	for (size_t i = 0; i < s->nodes; i++) {
		const hr_node *n = hr_ring_node(s->ring, i);

		l[0] = (hr_metrics_label){ "node", n->id };
		hr__expo_double(e, l, 1, n->weight);
	}
	hr__expo_family(e, "hashring_node_points", "gauge", "Each node's points (virtual nodes).");
	for (size_t i = 0; i < s->nodes; i++) {
		const hr_node *n = hr_ring_node(s->ring, i);

		l[0] = (hr_metrics_label){ "node", n->id };
		hr__expo_u64(e, l, 1, hr_ring_node_vnodes(s->ring, n));
	}
	hr__expo_family(e, "hashring_node_share_ratio", "gauge",
			"Each node's share of the key space in the write and the read view, 0 to 1.");
	for (size_t i = 0; i < s->nodes; i++) {
		l[0] = (hr_metrics_label){ "node", hr_ring_node(s->ring, i)->id };
		for (int v = 0; v < 2; v++) {
			l[1] = (hr_metrics_label){ "view", view_names[v] };
			hr__expo_double(e, l, 2, s->shares[v][i]);
		}
	}
}

static void lookup_family(hr__expo *e, const snapshot *s)
{
	hr_metrics_label l[2];

	hr__expo_family(e, "hashring_node_lookups_total", "counter",
			"Lookups answered with the node as owner, in the write and the read view.");
	for (size_t i = 0; i < s->nlookups; i++) {
		l[0] = (hr_metrics_label){ "node", s->lookups[i].node };
		l[1] = (hr_metrics_label){ "view", view_names[HR_VIEW_WRITE] };
		hr__expo_u64(e, l, 2, s->lookups[i].write);
		l[1] = (hr_metrics_label){ "view", view_names[HR_VIEW_READ] };
		hr__expo_u64(e, l, 2, s->lookups[i].read);
	}
}

/* Reads and checks the options, takes the snapshot of `ring`, writes
 * every family: the ring's and, with a status, the client's. */
static int metrics_write(const hr_ring *ring, const hr_client_status *status,
			 hr_client *client, hr_metrics_write_fn write_fn, void *userdata,
			 const hr_metrics_options *opts_in, hr_error *err)
{
	hr_metrics_options opts;
	snapshot s = { 0 };
	hr__expo e;
	int rc;

	rc = hr__metrics_options_read(opts_in, &opts, err);
	if (!rc)
		rc = hr__expo_begin(&e, &opts, write_fn, userdata, err);
	if (rc)
		return rc;
	/* The node families are part of the ring's. */
	if (opts.omit & HR_METRICS_OMIT_RING)
		opts.omit |= HR_METRICS_OMIT_NODES;
	/* A failure here ends the exposition before its first byte. */
	e.rc = snapshot_take(&s, ring, opts.omit, err);
	if (!e.rc && client && !(opts.omit & HR_METRICS_OMIT_LOOKUPS))
		e.rc = lookups_take(&s, client, err);
	if (!e.rc && client && !(opts.omit & HR_METRICS_OMIT_HOT_KEYS)) {
		int k = hr_client_hot_keys(client, s.hot, HR__METRICS_HOT_KEYS, err);

		if (k < 0)
			e.rc = k;
		else
			s.nhot = (size_t)k;
	}
	if (!e.rc) {
		int ring_part = !(opts.omit & HR_METRICS_OMIT_RING);

		if (ring_part) {
			build_family(&e);
			ring_families(&e, &s);
		}
		if (status)
			client_families(&e, status);
		if (ring_part)
			count_families(&e, &s);
		if (!(opts.omit & HR_METRICS_OMIT_NODES))
			node_families(&e, &s);
		if (client && !(opts.omit & HR_METRICS_OMIT_LOOKUPS))
			lookup_family(&e, &s);
		if (client && !(opts.omit & HR_METRICS_OMIT_HOT_KEYS))
			hot_key_families(&e, &s);
	}
	free(s.shares[0]);
	free(s.lookups);
	return hr__expo_end(&e);
}

int hr_ring_metrics_write(const hr_ring *ring, hr_metrics_write_fn write_fn,
			  void *userdata, const hr_metrics_options *opts,
			  hr_error *err)
{
	if (!ring || !write_fn)
		return hr__error_set(err, HR_EINVAL, "hr_ring_metrics_write: %s is NULL",
				     ring ? "write_fn" : "ring");
	return metrics_write(ring, NULL, NULL, write_fn, userdata, opts, err);
}

int hr_client_metrics_write(hr_client *client, hr_metrics_write_fn write_fn,
			    void *userdata, const hr_metrics_options *opts,
			    hr_error *err)
{
	hr_client_status st;
	hr_ring *ring;
	int rc;

	if (!client || !write_fn)
		return hr__error_set(err, HR_EINVAL, "hr_client_metrics_write: %s is NULL",
				     client ? "write_fn" : "client");
	/* Fails only in a child of fork(), where the watcher is not. */
	rc = hr_client_status_get(client, &st, err);
	if (rc)
		return rc;
	/* The ring families describe this one ring, not the status's. */
	ring = hr_client_ring(client);
	rc = metrics_write(ring, &st, client, write_fn, userdata, opts, err);
	hr_ring_release(ring);
	return rc;
}
