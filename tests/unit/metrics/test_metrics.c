/* SPDX-License-Identifier: MIT */
/* test_metrics.c - the Prometheus exposition of rings and clients: the
 * exact text for a small ring, escaping of any bytes, numbers in the C
 * locale whatever the program's, bad options refused before any output,
 * older options structs, a refusing callback, writers on threads beside
 * publications, a client's lookup counts, and promtool's verdict on what is written (random bytes
 * included). */
#define _GNU_SOURCE
#include "client.h"
#include "hashring/rebalance.h"
#include "hrt_check.h"
#include "hrt_rand.h"
#include "hrt_ring_fixture.h"
#include "publish.h"

#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#ifndef HR_PROMTOOL
#define HR_PROMTOOL "promtool"
#endif

/* ---- collecting the output ------------------------------------------------ */

typedef struct sink {
	char *text;
	size_t len, cap;
	size_t calls, biggest;
	size_t refuse_at;      /* the call (1-based) that returns `refusal`; 0: none */
	int refusal;
} sink;

static int sink_write(void *userdata, const char *data, size_t len)
{
	sink *s = userdata;

	s->calls++;
	if (len > s->biggest)
		s->biggest = len;
	if (s->refuse_at && s->calls == s->refuse_at)
		return s->refusal;
	if (s->len + len + 1 > s->cap) {
		s->cap = (s->len + len + 1) * 2;
		s->text = realloc(s->text, s->cap);
		ck_assert_ptr_nonnull(s->text);
	}
	memcpy(s->text + s->len, data, len);
	s->len += len;
	s->text[s->len] = '\0';
	return 0;
}

static void sink_free(sink *s)
{
	free(s->text);
	memset(s, 0, sizeof *s);
}

/* The ring's exposition with `opts`, which must succeed. */
static char *ring_text(const hr_ring *ring, const hr_metrics_options *opts)
{
	sink s = { 0 };
	hr_error err = { 0 };

	ck_assert_msg(hr_ring_metrics_write(ring, sink_write, &s, opts, &err) == 0,
		      "%s", err.message);
	ck_assert_ptr_nonnull(s.text);
	return s.text;
}

/* ---- the small ring --------------------------------------------------------- */

/* A warming node alone in the write view and a draining node alone in the
 * read view: every share is exactly 0 or 1.  The ids hold '"' and '\';
 * the first zone is valid UTF-8, the second address holds a byte that is
 * not. */
static hr_ring *small_ring(void)
{
	static const hr_ring_options opts = { .size = sizeof opts, .vnodes_per_weight = 4 };
	const hr_node nodes[] = {
		{ "a\"b\\c", "127.0.0.1:7001", "z\xc3\xa9\\", 2, HR_STATE_WARMING, NULL, 0 },
		{ "d", "h\"st\xff:1", NULL, 0.5, HR_STATE_DRAINING, NULL, 0 },
	};

	return hrt_ring_build(nodes, 2, &opts, 42);
}

START_TEST(exact_text_of_a_small_ring)
{
	static const hr_metrics_label labels[] = {
		{ "client", "c\"1\\\n\xfe" },
		{ "Region_2", "" },
	};
	hr_metrics_options opts = { .size = sizeof opts, .name_prefix = "app_",
				    .labels = labels, .label_count = 2 };
	hr_ring *ring = small_ring();
	char *got, *want;
	const char *L = "client=\"c\\\"1\\\\\\n\xef\xbf\xbd\",Region_2=\"\"";
	const char *A = "node=\"a\\\"b\\\\c\"";

	ck_assert_int_eq(asprintf(&want,
		"# HELP app_hashring_build_info The hashring library writing these metrics, by version.\n"
		"# TYPE app_hashring_build_info gauge\n"
		"app_hashring_build_info{%s,version=\"%s\"} 1\n"
		"# HELP app_hashring_ring_revision The etcd revision of the published ring (0 before the first sync).\n"
		"# TYPE app_hashring_ring_revision gauge\n"
		"app_hashring_ring_revision{%s} 42\n"
		"# HELP app_hashring_ring_info The published ring's digest: equal digests give equal placement.\n"
		"# TYPE app_hashring_ring_info gauge\n"
		"app_hashring_ring_info{%s,digest=\"%016" PRIx64 "\"} 1\n"
		"# HELP app_hashring_ring_nodes Nodes of the ring, by state.\n"
		"# TYPE app_hashring_ring_nodes gauge\n"
		"app_hashring_ring_nodes{%s,state=\"active\"} 0\n"
		"app_hashring_ring_nodes{%s,state=\"warming\"} 1\n"
		"app_hashring_ring_nodes{%s,state=\"draining\"} 1\n"
		"# HELP app_hashring_ring_points Points (virtual nodes) of the ring.\n"
		"# TYPE app_hashring_ring_points gauge\n"
		"app_hashring_ring_points{%s} 10\n"
		"# HELP app_hashring_node_info Each node of the ring, with its address and zone.\n"
		"# TYPE app_hashring_node_info gauge\n"
		"app_hashring_node_info{%s,%s,addr=\"127.0.0.1:7001\",zone=\"z\xc3\xa9\\\\\"} 1\n"
		"app_hashring_node_info{%s,node=\"d\",addr=\"h\\\"st\xef\xbf\xbd:1\",zone=\"\"} 1\n"
		"# HELP app_hashring_node_state Each node's state: 1 for the one it is in, 0 for the others.\n"
		"# TYPE app_hashring_node_state gauge\n"
		"app_hashring_node_state{%s,%s,state=\"active\"} 0\n"
		"app_hashring_node_state{%s,%s,state=\"warming\"} 1\n"
		"app_hashring_node_state{%s,%s,state=\"draining\"} 0\n"
		"app_hashring_node_state{%s,node=\"d\",state=\"active\"} 0\n"
		"app_hashring_node_state{%s,node=\"d\",state=\"warming\"} 0\n"
		"app_hashring_node_state{%s,node=\"d\",state=\"draining\"} 1\n"
		"# HELP app_hashring_node_weight Each node's weight.\n"
		"# TYPE app_hashring_node_weight gauge\n"
		"app_hashring_node_weight{%s,%s} 2\n"
		"app_hashring_node_weight{%s,node=\"d\"} 0.5\n"
		"# HELP app_hashring_node_points Each node's points (virtual nodes).\n"
		"# TYPE app_hashring_node_points gauge\n"
		"app_hashring_node_points{%s,%s} 8\n"
		"app_hashring_node_points{%s,node=\"d\"} 2\n"
		"# HELP app_hashring_node_share_ratio Each node's share of the key space in the write and the read view, 0 to 1.\n"
		"# TYPE app_hashring_node_share_ratio gauge\n"
		"app_hashring_node_share_ratio{%s,%s,view=\"write\"} 1\n"
		"app_hashring_node_share_ratio{%s,%s,view=\"read\"} 0\n"
		"app_hashring_node_share_ratio{%s,node=\"d\",view=\"write\"} 0\n"
		"app_hashring_node_share_ratio{%s,node=\"d\",view=\"read\"} 1\n",
		L, HR_VERSION_STRING, L, L, hr_ring_digest(ring), L, L, L, L,
		L, A, L,
		L, A, L, A, L, A, L, L, L,
		L, A, L,
		L, A, L,
		L, A, L, A, L, L) > 0, 1);
	got = ring_text(ring, &opts);
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	hr_ring_release(ring);
}
END_TEST

/* No options: no prefix, no braces where a sample has no label. */
START_TEST(defaults_and_the_empty_ring)
{
	hr_ring *ring = hrt_ring_build(NULL, 0, NULL, 0);
	char *got = ring_text(ring, NULL);

	ck_assert_ptr_nonnull(strstr(got, "\nhashring_ring_revision 0\n"));
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_ring_points 0\n"));
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_ring_nodes{state=\"active\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(got, "\n# TYPE hashring_node_share_ratio gauge\n"));
	/* Families without samples end the text. */
	ck_assert_ptr_null(strstr(got, "\nhashring_node_"));
	free(got);
	hr_ring_release(ring);
}
END_TEST

START_TEST(omit_nodes)
{
	hr_metrics_options opts = { .size = sizeof opts, .omit = HR_METRICS_OMIT_NODES };
	hr_ring *ring = small_ring();
	char *got = ring_text(ring, &opts);

	ck_assert_ptr_null(strstr(got, "hashring_node_"));
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_ring_points 10\n"));
	free(got);
	hr_ring_release(ring);
}
END_TEST

/* The value of the sample line that starts with `head`, parsed back. */
static double sample_value(const char *text, const char *head)
{
	char *line;
	const char *p;

	ck_assert_int_gt(asprintf(&line, "\n%s ", head), 0);
	p = strstr(text, line);
	ck_assert_msg(p, "no sample %s", head);
	p += strlen(line);
	free(line);
	return strtod(p, NULL);
}

/* Every double reads back as exactly the library's value, written in as
 * few digits as that allows. */
START_TEST(doubles_read_back_exactly)
{
	hrt_nodes *s = hrt_nodes_new(7, "n%zu", NULL, 0);
	const double weights[] = { 1, 0.1, 1.0 / 3, 2.5, 7, 1e-3, 3.14159 };
	hr_ring *ring;
	char *got, head[128];

	for (size_t i = 0; i < s->n; i++)
		s->nodes[i].weight = weights[i];
	ring = hrt_ring_build(s->nodes, s->n, NULL, 7);
	got = ring_text(ring, NULL);
	for (size_t i = 0; i < s->n; i++) {
		const hr_node *n = hr_ring_find(ring, s->ids[i]);

		snprintf(head, sizeof head, "hashring_node_weight{node=\"%s\"}", s->ids[i]);
		ck_assert(sample_value(got, head) == n->weight);
		for (int v = 0; v < 2; v++) {
			snprintf(head, sizeof head,
				 "hashring_node_share_ratio{node=\"%s\",view=\"%s\"}", s->ids[i],
				 v ? "read" : "write");
			ck_assert(sample_value(got, head) == hrt_node_share(ring, n, (hr_view)v));
		}
	}
	ck_assert_ptr_nonnull(strstr(got, "hashring_node_weight{node=\"n1\"} 0.1\n"));
	ck_assert_ptr_nonnull(strstr(got, "hashring_node_weight{node=\"n2\"} 0.33333333333333331\n"));
	free(got);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* A program whose locale writes "0,5" still gets "0.5": a German
 * locale compiled into a temporary directory with localedef. */
START_TEST(numbers_ignore_the_programs_locale)
{
	char dir[] = "/tmp/hrt-locale-XXXXXX", cmd[512], probe[16];
	hr_ring *ring = small_ring();
	locale_t de;
	locale_t old;
	char *got;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cmd, sizeof cmd,
		 "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >%s/localedef.log 2>&1", dir, dir);
	ck_assert_msg(system(cmd) == 0,
		      "localedef could not build de_DE.UTF-8 (Debian's locales package,"
		      " deploy/install-deps.sh --tests): see %s/localedef.log", dir);
	setenv("LOCPATH", dir, 1);
#ifdef __SANITIZE_ADDRESS__
	/* glibc keeps the LOCPATH it splits (and the locales it loads) for
	 * good: not a leak of ours. */
	__lsan_disable();
#endif
	de = newlocale(LC_ALL_MASK, "de_DE.UTF-8", (locale_t)0);
#ifdef __SANITIZE_ADDRESS__
	__lsan_enable();
#endif
	ck_assert_msg(de != (locale_t)0, "newlocale(de_DE.UTF-8): %s", strerror(errno));
	old = uselocale(de);
	snprintf(probe, sizeof probe, "%g", 0.5);
	ck_assert_str_eq(probe, "0,5"); /* the locale does bite */
	got = ring_text(ring, NULL);
	uselocale(old);
	freelocale(de);
	unsetenv("LOCPATH");
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);

	ck_assert_ptr_nonnull(strstr(got, "hashring_node_weight{node=\"d\"} 0.5\n"));
	ck_assert_ptr_null(strstr(got, "0,5"));
	free(got);
	hr_ring_release(ring);
}
END_TEST

/* ---- bad input -------------------------------------------------------------- */

/* HR_EINVAL with a clean message holding `needle`, and not one byte out. */
static void expect_refused(const hr_ring *ring, const hr_metrics_options *opts,
			   const char *needle)
{
	hr_error err = { 0 };
	sink s = { 0 };

	ck_assert_int_eq(hr_ring_metrics_write(ring, sink_write, &s, opts, &err), HR_EINVAL);
	ck_assert_int_eq(err.code, HR_EINVAL);
	hrt_assert_clean_message(err.message);
	ck_assert_msg(strstr(err.message, needle), "\"%s\" not in \"%s\"", needle, err.message);
	ck_assert_uint_eq(s.calls, 0);
}

START_TEST(bad_options_are_refused_before_any_output)
{
	char long_name[130], long_value[4098];
	struct { hr_metrics_options o; unsigned char more[8]; } newer;
	hr_metrics_label one[2] = { { "client", "x" }, { "client", "y" } };
	hr_metrics_label many[65];
	hr_ring *ring = small_ring();
	hr_metrics_options o;
	static const struct { const char *name, *needle; } bad_names[] = {
		{ "", "name \"\" is not" },
		{ "1a", "name \"1a\" is not" },
		{ "a-b", "name \"a-b\" is not" },
		{ "a:b", "name \"a:b\" is not" },
		{ "a\nb", "name \"a\\x0ab\" is not" },
		{ "__x", "starts with \"__\"" },
		{ "node", "name \"node\" is one the library's metrics use" },
		{ "le", "name \"le\" is one" },
		{ "view", "name \"view\" is one" },
	};
	static const char *const bad_prefixes[] = { "1app_", "app-", "app:", "app ", "\xc3\xa9" };

	/* Sizes: the protocol of every struct that grows. */
	hr_metrics_options_init(&o);
	o.size = 0;
	expect_refused(ring, &o, "hr_metrics_options: size is 0");
	o.size = 4097;
	expect_refused(ring, &o, "hr_metrics_options: size 4097");
	memset(&newer, 0, sizeof newer);
	hr_metrics_options_init_size(&newer.o, sizeof newer);
	ck_assert_uint_eq(newer.o.size, sizeof newer);
	free(ring_text(ring, &newer.o)); /* zeros past our fields: fine */
	newer.more[3] = 1;
	expect_refused(ring, &newer.o, "the program sets a field of a later release");

	for (size_t i = 0; i < sizeof bad_prefixes / sizeof bad_prefixes[0]; i++) {
		hr_metrics_options_init(&o);
		o.name_prefix = bad_prefixes[i];
		expect_refused(ring, &o, "hr_metrics_options: name_prefix");
	}
	memset(long_name, 'a', 129);
	long_name[129] = '\0';
	o.name_prefix = long_name;
	expect_refused(ring, &o, "at most 128 bytes");
	long_name[128] = '\0';
	o.name_prefix = long_name;
	free(ring_text(ring, &o)); /* 128 is fine */

	hr_metrics_options_init(&o);
	o.label_count = 1;
	expect_refused(ring, &o, "labels is NULL with label_count 1");
	for (size_t i = 0; i < 65; i++)
		many[i] = (hr_metrics_label){ "x", "y" };
	o.labels = many;
	o.label_count = 65;
	expect_refused(ring, &o, "label_count 65 is over 64");

	o.labels = one;
	o.label_count = 2;
	expect_refused(ring, &o, "labels[1]: name \"client\" is given twice (also labels[0])");
	one[1].name = NULL;
	expect_refused(ring, &o, "labels[1]: name is NULL");
	one[1] = (hr_metrics_label){ "other", NULL };
	expect_refused(ring, &o, "labels[1]: value is NULL");
	memset(long_value, 'v', 4097);
	long_value[4097] = '\0';
	one[1].value = long_value;
	expect_refused(ring, &o, "labels[1]: value of \"other\" is longer than 4096 bytes");
	long_value[4096] = '\0';
	free(ring_text(ring, &o)); /* 4096 is fine */
	long_name[128] = '\0';
	one[1] = (hr_metrics_label){ long_name, "v" };
	free(ring_text(ring, &o));
	long_name[128] = 'a';
	expect_refused(ring, &o, "at most 128 bytes");
	for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
		one[1] = (hr_metrics_label){ bad_names[i].name, "v" };
		expect_refused(ring, &o, bad_names[i].needle);
	}

	hr_metrics_options_init(&o);
	o.omit = 0x1e;
	expect_refused(ring, &o, "unknown flags 0x10 in omit");
	o.omit = HR_METRICS_OMIT_NODES | (1ull << 63);
	expect_refused(ring, &o, "unknown flags 0x8000000000000000 in omit");

	{
		hr_error err = { 0 };
		sink s = { 0 };

		ck_assert_int_eq(hr_ring_metrics_write(NULL, sink_write, &s, NULL, &err), HR_EINVAL);
		ck_assert_str_eq(err.message, "hr_ring_metrics_write: ring is NULL");
		ck_assert_int_eq(hr_ring_metrics_write(ring, NULL, &s, NULL, &err), HR_EINVAL);
		ck_assert_str_eq(err.message, "hr_ring_metrics_write: write_fn is NULL");
		ck_assert_int_eq(hr_client_metrics_write(NULL, sink_write, &s, NULL, &err), HR_EINVAL);
		ck_assert_str_eq(err.message, "hr_client_metrics_write: client is NULL");
		ck_assert_int_eq(hr_ring_metrics_write(NULL, NULL, NULL, NULL, NULL), HR_EINVAL);
		ck_assert_uint_eq(s.calls, 0);
	}
	hr_metrics_options_init_size(NULL, sizeof o); /* does nothing */
	hr_ring_release(ring);
}
END_TEST

/* A program built against older headers passes a smaller struct: the
 * fields past its size are not read, whatever the bytes there. */
START_TEST(older_options_are_read_to_their_size)
{
	static const hr_metrics_label labels[] = { { "client", "x" } };
	hr_metrics_options opts = { .size = offsetof(hr_metrics_options, labels),
				    .name_prefix = "old_", .labels = labels,
				    .label_count = 1, .omit = 0xff };
	hr_ring *ring = small_ring();
	char *got = ring_text(ring, &opts);

	ck_assert_ptr_nonnull(strstr(got, "\nold_hashring_ring_points 10\n"));
	ck_assert_ptr_null(strstr(got, "client="));
	ck_assert_ptr_nonnull(strstr(got, "\nold_hashring_node_points{node=\"d\"} 2\n"));
	free(got);
	hr_ring_release(ring);
}
END_TEST

/* ---- the callback ------------------------------------------------------------ */

/* A big ring comes in pieces of at most 8192 bytes; a refusal stops the
 * writer at once with HR_EIO, whatever the callback returned. */
START_TEST(pieces_and_refusals)
{
	hrt_nodes *s = hrt_nodes_new(300, "node-%03zu", "127.0.0.1:%zu", 10000);
	hr_ring *ring = hrt_ring_build(s->nodes, s->n, NULL, 9);
	const int refusals[] = { 1, -1, HR_ENOMEM, 12345 };
	sink whole = { 0 };
	hr_error err = { 0 };

	ck_assert_int_eq(hr_ring_metrics_write(ring, sink_write, &whole, NULL, &err), 0);
	ck_assert_uint_gt(whole.calls, 3);
	ck_assert_uint_eq(whole.biggest, 8192);
	ck_assert_ptr_nonnull(strstr(whole.text, "hashring_node_points{node=\"node-299\"} 200\n"));
	ck_assert(whole.text[whole.len - 1] == '\n');

	for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		sink cut = { .refuse_at = 2, .refusal = refusals[i] };
		char want[64];

		ck_assert_int_eq(hr_ring_metrics_write(ring, sink_write, &cut, NULL, &err), HR_EIO);
		ck_assert_int_eq(err.code, HR_EIO);
		snprintf(want, sizeof want, "the write callback returned %d", refusals[i]);
		ck_assert_msg(strstr(err.message, want), "%s", err.message);
		ck_assert_uint_eq(cut.calls, 2);
		ck_assert_int_eq(memcmp(cut.text, whole.text, cut.len), 0);
		sink_free(&cut);
	}
	sink_free(&whole);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

/* ---- a client ------------------------------------------------------------------ */

static char *client_text(hr_client *c, const hr_metrics_options *opts)
{
	sink s = { 0 };
	hr_error err = { 0 };

	ck_assert_msg(hr_client_metrics_write(c, sink_write, &s, opts, &err) == 0,
		      "%s", err.message);
	return s.text;
}

/* The client's families, between the ring's, from a client that never
 * reached etcd; the ring ones describe the ring published now. */
START_TEST(client_families)
{
	hr_client *c = hrt_offline_client("/metrics/");
	hr_ring *ring = small_ring();
	char *got, *p;

	got = client_text(c, NULL);
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_ring_revision 0\n"));
	free(got);

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	got = client_text(c, NULL);
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_ring_revision 42\n"));
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_confirmed_revision 0\n"));
	ck_assert_ptr_nonnull(strstr(got, "\n# TYPE hashring_unconfirmed_seconds gauge\n"
				     "hashring_unconfirmed_seconds "));
	ck_assert_ptr_nonnull(strstr(got, "\n# TYPE hashring_rings_published_total counter\n"
				     "hashring_rings_published_total 0\n"));
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_resyncs_total 0\n"));
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_reconnects_total "));
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_watcher_clients 1\n"));
	/* Never connected: the family, no sample. */
	ck_assert_ptr_nonnull(strstr(got, "\n# TYPE hashring_etcd_endpoint_info gauge\n"
				     "# HELP hashring_ring_nodes "));
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_node_points{node=\"d\"} 2\n"));
	/* The order of hashring.h: ring_info, the client's, ring_nodes. */
	p = strstr(got, "# TYPE hashring_ring_info");
	ck_assert_ptr_nonnull(p);
	p = strstr(p, "# TYPE hashring_confirmed_revision");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(strstr(p, "# TYPE hashring_ring_nodes"));
	free(got);

	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

/* The lookups of small_ring(): "a\"b\\c" warms, so it owns every write
 * and no read; "d" drains, so it owns every read.  Single and batch
 * lookups count alike; the family comes last, and only for a client. */
START_TEST(client_lookup_counts)
{
	hr_metrics_options omit = { .size = sizeof omit, .omit = HR_METRICS_OMIT_LOOKUPS };
	hr_metrics_options no_nodes = { .size = sizeof no_nodes, .omit = HR_METRICS_OMIT_NODES };
	const char *A = "hashring_node_lookups_total{node=\"a\\\"b\\\\c\"";
	const void *keys[3] = { "x", "y", "z" };
	const size_t lens[3] = { 1, 1, 1 };
	hr_client *c = hrt_offline_client("/metrics/");
	hr_ring *ring = small_ring();
	hr_batch_owner bo[3];
	hr_owner o;
	char *got, *p, want[256];

	/* Before the first ring: the family, no sample. */
	got = client_text(c, NULL);
	ck_assert_ptr_nonnull(strstr(got, "\n# TYPE hashring_node_lookups_total counter\n"));
	ck_assert_ptr_null(strstr(got, "\nhashring_node_lookups_total{"));
	free(got);

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	for (int i = 0; i < 7; i++)
		ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
	ck_assert_int_eq(hr_client_lookup_batch(c, keys, lens, 3, bo, NULL, NULL), 0);
	got = client_text(c, NULL);
	snprintf(want, sizeof want, "\n%s,view=\"write\"} 10\n%s,view=\"read\"} 0\n"
		 "hashring_node_lookups_total{node=\"d\",view=\"write\"} 0\n"
		 "hashring_node_lookups_total{node=\"d\",view=\"read\"} 10\n", A, A);
	p = strstr(got, want);
	ck_assert_msg(p != NULL, "no %s in %s", want, got);
	/* Last but the hot keys (none sampled yet: 1 in 1024). */
	ck_assert_str_eq(p + strlen(want),
			 "# HELP hashring_hot_key_lookups_per_second The client's most frequent"
			 " keys (rank 1 first), estimated lookups per second.\n"
			 "# TYPE hashring_hot_key_lookups_per_second gauge\n"
			 "# HELP hashring_hot_key_share_ratio The client's most frequent keys"
			 " (rank 1 first), estimated share of its lookups, 0 to 1.\n"
			 "# TYPE hashring_hot_key_share_ratio gauge\n");
	ck_assert_ptr_nonnull(strstr(got, "# HELP hashring_node_lookups_total Lookups answered"));
	free(got);

	/* Its own flag; OMIT_NODES keeps it. */
	got = client_text(c, &omit);
	ck_assert_ptr_null(strstr(got, "hashring_node_lookups_total"));
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_node_points{node=\"d\"} 2\n"));
	free(got);
	got = client_text(c, &no_nodes);
	ck_assert_ptr_nonnull(strstr(got, want));
	ck_assert_ptr_null(strstr(got, "hashring_node_points"));
	free(got);
	/* A ring alone has no lookups. */
	got = ring_text(ring, NULL);
	ck_assert_ptr_null(strstr(got, "lookups"));
	free(got);

	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

static int promtool_check(const char *text, char **said);

/* The "# TYPE" lines of `text`, in order, one per line. */
static char *type_lines(const char *text)
{
	size_t cap = strlen(text) + 1, len = 0;
	char *out = malloc(cap);
	const char *p = text;

	ck_assert_ptr_nonnull(out);
	out[0] = '\0';
	while ((p = strstr(p, "# TYPE ")) != NULL) {
		const char *end = strchr(p, '\n');
		size_t n = end ? (size_t)(end - p) + 1 : strlen(p);

		memcpy(out + len, p, n);
		len += n;
		out[len] = '\0';
		p += n;
	}
	return out;
}

/* HR_METRICS_OMIT_RING: the client's families alone, and with the ring's
 * part of hr_ring_metrics_write() every family of the whole exposition,
 * each once, which promtool accepts; a ring with it writes nothing. */
START_TEST(omit_ring_splits_the_exposition)
{
	hr_metrics_options ring_only = { .size = sizeof ring_only, .omit = HR_METRICS_OMIT_RING };
	hr_client *c = hrt_offline_client("/metrics/");
	hr_ring *ring = small_ring();
	char *whole, *client_part, *ring_part, *joined, *said;
	char *types_whole, *types_joined;
	size_t n = 0;
	sink s = { 0 };
	hr_error err = { 0 };
	hr_owner o;
	const char *p;

	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	ck_assert_int_eq(hr_client_lookup(c, "k", 1, &o, NULL), 0);
	whole = client_text(c, NULL);
	client_part = client_text(c, &ring_only);
	ring_part = ring_text(ring, NULL);
	ck_assert_ptr_null(strstr(client_part, "hashring_build_info"));
	ck_assert_ptr_null(strstr(client_part, "hashring_ring_"));
	ck_assert_ptr_null(strstr(client_part, "hashring_node_info"));
	ck_assert_ptr_null(strstr(client_part, "hashring_node_share_ratio"));
	ck_assert_ptr_nonnull(strstr(client_part, "\nhashring_confirmed_revision "));
	ck_assert_ptr_nonnull(strstr(client_part, "\nhashring_node_lookups_total{"));
	ck_assert_ptr_nonnull(strstr(client_part, "# TYPE hashring_hot_key_share_ratio gauge\n"));

	/* The same families as the whole, each once, only in another order. */
	joined = malloc(strlen(client_part) + strlen(ring_part) + 1);
	ck_assert_ptr_nonnull(joined);
	strcpy(joined, client_part);
	strcat(joined, ring_part);
	types_whole = type_lines(whole);
	types_joined = type_lines(joined);
	ck_assert_uint_eq(strlen(types_whole), strlen(types_joined));
	for (p = types_whole; *p; p = strchr(p, '\n') + 1) {
		size_t len = (size_t)(strchr(p, '\n') - p) + 1;
		char line[256];
		const char *at;

		ck_assert_uint_lt(len, sizeof line);
		memcpy(line, p, len);
		line[len] = '\0';
		at = strstr(types_joined, line);
		ck_assert_msg(at != NULL, "%s missing from the two parts", line);
		ck_assert_msg(strstr(at + 1, line) == NULL, "%s twice in the two parts", line);
		n++;
	}
	ck_assert_uint_ge(n, 15);
	ck_assert_msg(promtool_check(joined, &said) == 0, "promtool: %s", said);
	free(said);

	/* A ring alone with it: nothing at all. */
	ck_assert_int_eq(hr_ring_metrics_write(ring, sink_write, &s, &ring_only, &err), 0);
	ck_assert_uint_eq(s.len, 0);
	sink_free(&s);

	free(types_whole);
	free(types_joined);
	free(joined);
	free(whole);
	free(client_part);
	free(ring_part);
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

/* What a writer thread saw: expositions, and the first inconsistent one. */
typedef struct writer {
	pthread_t thread;
	hr_client *client;
	atomic_int *stop;
	atomic_uint outputs;
	char bad[256];            /* read once the thread is joined */
} writer;

/* Each exposition's ring families are those of one ring: generation N
 * (hrt_ring_generation) has revision N and exactly the nodes gN-a, gN-b
 * and gN-c. */
static void *write_metrics_loop(void *p)
{
	writer *w = p;

	while (!atomic_load(w->stop) && !w->bad[0]) {
		sink s = { 0 };
		const char *r;
		unsigned long gen;
		char id[64];
		size_t infos = 0;

		if (hr_client_metrics_write(w->client, sink_write, &s, NULL, NULL)) {
			snprintf(w->bad, sizeof w->bad, "the writer failed");
			break;
		}
		r = strstr(s.text, "\nhashring_ring_revision ");
		gen = r ? strtoul(r + 24, NULL, 10) : 0;
		for (const char *q = s.text; (q = strstr(q, "\nhashring_node_info{")); q++)
			infos++;
		for (int k = 0; k < 3 && !w->bad[0]; k++) {
			snprintf(id, sizeof id, "hashring_node_points{node=\"g%lu-%c\"} 4\n", gen,
				 'a' + k);
			if (!gen || infos != 3 || !strstr(s.text, id))
				snprintf(w->bad, sizeof w->bad, "revision %lu with %zu nodes, no %.40s",
					 gen, infos, id);
		}
		atomic_fetch_add(&w->outputs, 1);
		sink_free(&s);
	}
	return NULL;
}

/* Writers on two threads while rings are published as fast as they can
 * be: every exposition describes one whole ring (and TSan sees no race). */
START_TEST(writers_beside_publications)
{
	hr_client *c = hrt_offline_client("/metrics/");
	atomic_int stop = 0;
	writer w[2];

	hr__publish_swap(hr__client_publisher(c), hrt_ring_generation("g", 1, 4));
	for (int i = 0; i < 2; i++) {
		w[i] = (writer){ .client = c, .stop = &stop };
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL, write_metrics_loop, &w[i]), 0);
	}
	/* At least 400 rings, and until each writer has written 50 times. */
	for (unsigned gen = 2; gen <= 400 || ((atomic_load(&w[0].outputs) < 50 ||
					       atomic_load(&w[1].outputs) < 50) && gen < 1000000);
	     gen++)
		hr__publish_swap(hr__client_publisher(c), hrt_ring_generation("g", gen, 4));
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_join(w[i].thread, NULL), 0);
		ck_assert_msg(!w[i].bad[0], "writer %d: %s", i, w[i].bad);
		ck_assert_uint_ge(atomic_load(&w[i].outputs), 50);
	}
	hr_client_close(c);
}
END_TEST

/* The hot keys: rank 1 first with its owner, a key's control bytes as
 * \xHH and its quote, backslash and newline escaped, a long key cut with
 * "...", ten at most; their own flag. */
START_TEST(client_hot_key_families)
{
	hr_metrics_options omit = { .size = sizeof omit, .omit = HR_METRICS_OMIT_HOT_KEYS };
	hr_client_config cfg;
	hr_client *c;
	hr_ring *ring = small_ring();
	char longkey[100], *got, want[512];
	hr_owner o;

	hr_client_config_init(&cfg);
	cfg.hot_key_sample = 1;
	c = hrt_offline_client_with("/metrics/", &cfg);
	hr__publish_swap(hr__client_publisher(c), hr_ring_retain(ring));
	memset(longkey, 'L', sizeof longkey);
	for (int i = 0; i < 400; i++)
		ck_assert_int_eq(hr_client_lookup(c, "q\"b\\\n\x01", 6, &o, NULL), 0);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(hr_client_lookup(c, longkey, sizeof longkey, &o, NULL), 0);
	for (int i = 0; i < 20; i++) {
		char key[8];

		snprintf(key, sizeof key, "c%d", i);
		for (int k = 0; k < 5; k++)
			ck_assert_int_eq(hr_client_lookup(c, key, strlen(key), &o, NULL), 0);
	}
	got = client_text(c, NULL);
	/* The newline, a control byte, is \x0a as well. */
	snprintf(want, sizeof want, "\nhashring_hot_key_share_ratio{rank=\"1\","
		 "key=\"q\\\"b\\\\\\\\x0a\\\\x01\",node=\"a\\\"b\\\\c\"} 0.666666666666666");
	ck_assert_ptr_nonnull(strstr(got, want));
	snprintf(want, sizeof want, "\nhashring_hot_key_share_ratio{rank=\"2\",key=\"%.64s...\","
		 "node=\"a\\\"b\\\\c\"} 0.1666666666666666", longkey);
	if (!strstr(got, want))
		fprintf(stderr, "want:\n%s\ngot:\n%s\n", want, strstr(got, "# HELP hashring_hot"));
	ck_assert(strstr(got, want));
	ck_assert_ptr_nonnull(strstr(got, "\nhashring_hot_key_lookups_per_second{rank=\"10\","));
	ck_assert_ptr_null(strstr(got, "{rank=\"11\""));
	free(got);
	got = client_text(c, &omit);
	ck_assert_ptr_null(strstr(got, "hot_key"));
	ck_assert_ptr_nonnull(strstr(got, "hashring_node_lookups_total"));
	free(got);
	hr_client_close(c);
	hr_ring_release(ring);
}
END_TEST

/* ---- promtool ---------------------------------------------------------------------- */

/* Runs `promtool check metrics` on `text`; returns its exit status and
 * puts what it printed in *said (to free). */
static int promtool_check(const char *text, char **said)
{
	char dir[] = "/tmp/hrt-promtool-XXXXXX", path[64], cmd[256];
	size_t cap = 4096, len = 0, n;
	FILE *f, *p;
	int status;

	ck_assert_msg(access(HR_PROMTOOL, X_OK) == 0,
		      "promtool not found at %s: install Debian's prometheus package"
		      " (deploy/install-deps.sh --tests)", HR_PROMTOOL);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/metrics.txt", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	ck_assert_int_eq(fclose(f), 0);
	snprintf(cmd, sizeof cmd, "%s check metrics < %s 2>&1", HR_PROMTOOL, path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	*said = malloc(cap);
	while ((n = fread(*said + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap)
			*said = realloc(*said, cap *= 2);
	}
	(*said)[len] = '\0';
	status = pclose(p);
	unlink(path);
	rmdir(dir);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Zones and addresses made of pieces of valid UTF-8, lone, overlong,
 * surrogate and out-of-range sequences, quotes and backslashes, and a
 * constant label of any bytes but NUL: promtool (Go's strict UTF-8
 * check) accepts every exposition. */
static void random_bytes_pass_promtool(void)
{
	static const char *const pieces[] = {
		"a", "\\", "\"", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x99\x82",
		"\x80", "\xff", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"\xe2\x82", "\xc3", " ", "{", "}", "=", ",",
	};
	const size_t npieces = sizeof pieces / sizeof pieces[0];
	uint64_t seed = 16;
	char label[64];
	hr_metrics_label l = { "client", label };
	hr_metrics_options opts = { .size = sizeof opts, .labels = &l, .label_count = 1 };

	for (int round = 0; round < 4; round++) {
		hrt_nodes *s = hrt_nodes_new(40, "node-%zu", NULL, 0);
		char (*zones)[64] = calloc(s->n, sizeof *zones);
		char (*addrs)[64] = calloc(s->n, sizeof *addrs);
		char *got, *said;
		hr_ring *ring;
		int rc;

		ck_assert(zones && addrs);
		for (size_t i = 0; i < s->n; i++) {
			for (int k = 0; k < 8; k++) {
				strcat(zones[i], pieces[splitmix64(&seed) % npieces]);
				strcat(addrs[i], pieces[splitmix64(&seed) % npieces]);
			}
			s->nodes[i].zone = zones[i];
			s->nodes[i].addr = addrs[i];
		}
		for (size_t k = 0; k + 1 < sizeof label; k++)
			label[k] = (char)(1 + splitmix64(&seed) % 255);
		label[sizeof label - 1] = '\0';
		ring = hrt_ring_build(s->nodes, s->n, NULL, 1);
		got = ring_text(ring, &opts);
		rc = promtool_check(got, &said);
		ck_assert_msg(rc == 0 && !said[0], "round %d: promtool: exit %d: %s", round, rc, said);
		free(said);
		free(got);
		hr_ring_release(ring);
		free(zones);
		free(addrs);
		hrt_nodes_free(s);
	}
}

/* Everything a client writes passes promtool's parser and its lints
 * (names, units, _total counters, HELP), hostile bytes included; a text
 * that breaks a lint fails, so the check has teeth. */
START_TEST(promtool_accepts_the_output)
{
	static const hr_metrics_label labels[] = {
		{ "client", "q\"b\\s\nnl\xfe\xc3" },
		{ "instance_id", "\xe2\x82\xac ok" },
	};
	hr_metrics_options opts = { .size = sizeof opts, .name_prefix = "app_",
				    .labels = labels, .label_count = 2 };
	hrt_nodes *s = hrt_nodes_new(20, "n\"%zu\\", "h\\\"%zu\xff\xfe", 1);
	hr_client_config cfg;
	hr_client *c;
	char *got, *said;
	int rc;

	/* Every lookup sampled: hostile hot keys. */
	hr_client_config_init(&cfg);
	cfg.hot_key_sample = 1;
	c = hrt_offline_client_with("/metrics/", &cfg);

	hrt_nodes_zones(s, 3);
	s->nodes[3].state = HR_STATE_WARMING;
	s->nodes[4].state = HR_STATE_DRAINING;
	s->nodes[5].weight = 0.3;
	hr__publish_swap(hr__client_publisher(c), hrt_ring_build(s->nodes, s->n, NULL, 5));
	for (int i = 0; i < 1000; i++) {
		hr_owner o;
		char key[16];

		snprintf(key, sizeof key, "k\"\\\n\x01\xff%d", i % 30);
		ck_assert_int_eq(hr_client_lookup(c, key, strlen(key), &o, NULL), 0);
	}

	got = client_text(c, &opts);
	ck_assert_ptr_nonnull(strstr(got, "\napp_hashring_hot_key_share_ratio{client="));
	rc = promtool_check(got, &said);
	ck_assert_msg(rc == 0 && !said[0], "promtool: exit %d: %s", rc, said);
	free(said);
	free(got);
	got = client_text(c, NULL);
	rc = promtool_check(got, &said);
	ck_assert_msg(rc == 0 && !said[0], "promtool: exit %d: %s", rc, said);
	free(said);
	free(got);
	hr_client_close(c);
	hrt_nodes_free(s);

	random_bytes_pass_promtool();

	rc = promtool_check("# HELP x_requests Requests.\n# TYPE x_requests counter\n"
			    "x_requests 1\n", &said);
	ck_assert_msg(rc != 0 && strstr(said, "_total"), "promtool: exit %d: %s", rc, said);
	free(said);
}
END_TEST

/* ---- a rebalancer's families ------------------------------------------------------ */

/* A store of 50 keys on every node, every add stored. */
static int tiny_enumerate(void *ud, const char *addr, unsigned pass, hr_rebalance_key_fn fn,
			  void *ctx, hr_error *err)
{
	(void)ud, (void)addr, (void)pass, (void)err;
	for (int i = 0; i < 50; i++) {
		char key[16];
		int rc = fn(ctx, key, (size_t)sprintf(key, "k%d", i), (uint64_t)i + 1);

		if (rc)
			return rc;
	}
	return 0;
}

static int tiny_fetch(void *ud, const char *addr, const void *key, size_t len,
		      hr_rebalance_value *out, hr_error *err)
{
	(void)ud, (void)addr, (void)key, (void)len, (void)err;
	if (out)
		*out = (hr_rebalance_value){ "value", 5, 0, -1 };
	return 1;
}

static int tiny_add(void *ud, const char *addr, const void *key, size_t len,
		    const hr_rebalance_value *v, uint64_t *cas, hr_error *err)
{
	(void)ud, (void)addr, (void)key, (void)len, (void)v, (void)err;
	*cas = 1;
	return 1;
}

/* The rebalancer's families pass promtool, with a prefix and hostile
 * constant labels, before any step and after a copy. */
START_TEST(rebalancer_families_pass_promtool)
{
	static const hr_metrics_label labels[] = { { "instance_id", "q\"b\\s\nnl\xfe" } };
	hr_metrics_options opts = { .size = sizeof opts, .name_prefix = "app_",
				    .labels = labels, .label_count = 1 };
	hrt_nodes *s = hrt_nodes_new(4, "node-%zu", NULL, 0);
	hr_rebalance_backend b;
	hr_rebalance_config cfg;
	hr_rebalancer *rb;
	hr_ring *ring;
	hr_error err = { 0 };
	sink out = { 0 };
	char *said;
	int rc;

	s->nodes[3].state = HR_STATE_WARMING;
	ring = hrt_ring_build(s->nodes, s->n, NULL, 3);
	hr_rebalance_backend_init(&b);
	b.enumerate = tiny_enumerate;
	b.fetch = tiny_fetch;
	b.add = tiny_add;
	hr_rebalance_config_init(&cfg);
	cfg.log_level = HR_LOG_WARN;
	ck_assert_int_eq(hr_rebalancer_new(&b, &cfg, &rb, &err), 0);
	for (int round = 0; round < 2; round++) {
		out.len = 0;
		ck_assert_int_eq(hr_rebalancer_metrics_write(rb, sink_write, &out, &opts, &err), 0);
		ck_assert_ptr_nonnull(strstr(out.text, round ? "app_hashring_rebalance_step{instance_id="
							       : "# TYPE app_hashring_rebalance_step gauge"));
		rc = promtool_check(out.text, &said);
		ck_assert_msg(rc == 0 && !said[0], "promtool: exit %d: %s\n%s", rc, said, out.text);
		free(said);
		if (!round)
			ck_assert_msg(hr_rebalancer_copy(rb, ring, NULL, &err) == 0, "%s", err.message);
	}
	ck_assert_ptr_nonnull(strstr(out.text, "result=\"copied\"} "));
	free(out.text);
	hr_rebalancer_free(rb);
	hr_ring_release(ring);
	hrt_nodes_free(s);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, exact_text_of_a_small_ring);
	tcase_add_test(tc, defaults_and_the_empty_ring);
	tcase_add_test(tc, omit_nodes);
	tcase_add_test(tc, doubles_read_back_exactly);
	tcase_add_test(tc, numbers_ignore_the_programs_locale);
	tcase_add_test(tc, bad_options_are_refused_before_any_output);
	tcase_add_test(tc, older_options_are_read_to_their_size);
	tcase_add_test(tc, pieces_and_refusals);
	tcase_add_test(tc, client_families);
	tcase_add_test(tc, client_lookup_counts);
	tcase_add_test(tc, client_hot_key_families);
	tcase_add_test(tc, omit_ring_splits_the_exposition);
	tcase_add_test(tc, writers_beside_publications);
	tcase_add_test(tc, promtool_accepts_the_output);
	tcase_add_test(tc, rebalancer_families_pass_promtool);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return hrt_run(metrics_suite());
}
