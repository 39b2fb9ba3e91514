/* SPDX-License-Identifier: MIT */
/*
 * serve_lookup.c - GET /lookup?key=K[&replicas=R] of `hashring serve`: a
 * key's owners in the ring the server follows, for an operator's curl.
 *
 * The lookup goes through the server's client (hr_client_lookup), so it
 * counts into the per-node lookups and hot keys that /ring.json and
 * /metrics show: those of this process, which looks up nothing else.
 */
#include "serve.h"
#include "cli.h"

#include <inttypes.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

struct query {
	const char *key;
	size_t key_len;
	const char *replicas; /* NULL: the default */
	unsigned keys, replicas_seen;
	char unknown[64]; /* the first unknown parameter's name, cut short */
};

static enum MHD_Result take_arg(void *cls, enum MHD_ValueKind kind, const char *name,
				size_t name_len, const char *value, size_t value_len)
{
	struct query *q = cls;

	(void)kind;
	if (name_len == 3 && memcmp(name, "key", 3) == 0) {
		q->keys++;
		q->key = value ? value : "";
		q->key_len = value ? value_len : 0;
	} else if (name_len == 8 && memcmp(name, "replicas", 8) == 0) {
		q->replicas_seen++;
		q->replicas = value ? value : "";
	} else if (!q->unknown[0]) {
		/* Cut short and made printable for the message. */
		size_t n = name_len < sizeof q->unknown - 1 ? name_len : sizeof q->unknown - 1;

		for (size_t i = 0; i < n; i++)
			q->unknown[i] = name[i] > ' ' && name[i] < 0x7f ? name[i] : '?';
		if (!n)
			q->unknown[n++] = '?';
		q->unknown[n] = '\0';
	}
	return MHD_YES;
}

/* R from its text: digits only, 1..SERVE_LOOKUP_REPLICAS_MAX.  0 if bad. */
static unsigned parse_replicas(const char *s)
{
	unsigned long v = 0;

	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > SERVE_LOOKUP_REPLICAS_MAX)
			return 0;
	}
	return (unsigned)v;
}

static void json_id(FILE *out, const char *id)
{
	if (id && *id)
		cli_json_string(out, id, strlen(id));
	else
		fputs("null", out);
}

int serve_lookup(hr_client *client, struct MHD_Connection *c, FILE *out, char *msg,
		 size_t msg_size)
{
	struct query q = { 0 };
	unsigned r = SERVE_LOOKUP_REPLICAS;
	const hr_node *replicas[SERVE_LOOKUP_REPLICAS_MAX];
	hr_ring *ring = NULL;
	hr_owner o;
	int k, rc;

	MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, take_arg, &q);
	if (q.unknown[0]) {
		snprintf(msg, msg_size, "unknown parameter %s: /lookup takes key and replicas\n",
			 q.unknown);
		return 400;
	}
	if (q.keys != 1 || q.replicas_seen > 1) {
		snprintf(msg, msg_size, "%s\n",
			 q.keys == 0 ? "no key: /lookup?key=K[&replicas=R]"
				     : "one key and at most one replicas per request");
		return 400;
	}
	if (q.key_len > SERVE_LOOKUP_KEY_MAX) {
		snprintf(msg, msg_size, "key of %zu bytes: at most %d\n", q.key_len,
			 SERVE_LOOKUP_KEY_MAX);
		return 400;
	}
	if (q.replicas && !(r = parse_replicas(q.replicas))) {
		snprintf(msg, msg_size, "replicas=%.32s: a number of 1 to %d\n", q.replicas,
			 SERVE_LOOKUP_REPLICAS_MAX);
		return 400;
	}
	/* The owners and the preference list from one ring: the lookup again
	 * in the rare case a new ring came between them (it counts twice). */
	for (int tries = 0;; tries++) {
		hr_ring_release(ring);
		rc = hr_client_lookup(client, q.key, q.key_len, &o, NULL);
		ring = hr_client_ring(client);
		if (rc || tries == 3 ||
		    (hr_ring_revision(ring) == o.revision && hr_ring_digest(ring) == o.digest))
			break;
	}
	if (rc) {
		hr_ring_release(ring);
		snprintf(msg, msg_size, "%s\n", rc == HR_EEMPTY ? "the ring has no node yet"
								: hr_strerror(rc));
		return rc == HR_EEMPTY ? 503 : 500;
	}
	k = hr_ring_preflist(ring, q.key, q.key_len, HR_VIEW_WRITE, replicas, r, NULL);
	fputs("{\"key\":", out);
	cli_json_string(out, q.key, q.key_len);
	fputs(",\"node\":", out);
	json_id(out, o.node);
	fputs(",\"addr\":", out);
	json_id(out, o.addr);
	fputs(",\"read_node\":", out);
	json_id(out, o.read_node);
	fputs(",\"read_addr\":", out);
	json_id(out, o.read_addr);
	fputs(",\"replicas\":[", out);
	for (int i = 0; i < k; i++) {
		if (i)
			fputc(',', out);
		cli_json_string(out, replicas[i]->id, strlen(replicas[i]->id));
	}
	fprintf(out, "],\"revision\":%" PRIu64 ",\"digest\":\"%016" PRIx64 "\"}\n",
		o.revision, o.digest);
	hr_ring_release(ring);
	return 200;
}
