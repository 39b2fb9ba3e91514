/* SPDX-License-Identifier: MIT */
/* cmd_diff.c - `hashring diff`: the arcs of the key space that change owner
 * between two rings, from two members files or from each ring etcd gives. */
#include "cli.h"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

#define CMD "diff"

static const char description[] =
	"Lists every arc [start, end) of the 64-bit key space whose owner in VIEW\n"
	"differs between two rings, in ring order, then the totals per pair of\n"
	"owners and the share of the key space that moved:\n"
	"  arc\t0123456789abcdef\t0123456789abcdf0\tOLD\tNEW\n"
	"  total\tOLD\tNEW\tARCS\tSHARE\n"
	"  moved\tSHARE\tARCS\n"
	"Positions are hexadecimal; an end of 10000000000000000 is 2^64; '-'\n"
	"stands for no owner (an empty view).  With --json each diff is one\n"
	"object {\"old_revision\",\"new_revision\",\"view\",\"arcs\",\"totals\",\n"
	"\"moved_share\"}, positions as hex strings.\n"
	"\n"
	"The two rings come from OLD and NEW (members files, as for lookup), or,\n"
	"without files, from etcd: the command follows PREFIX, takes its first\n"
	"ring as the baseline and prints the diff of the next ring against it\n"
	"(of the next N rings, each against the one before, with --count N),\n"
	"preceded in text by\n"
	"  ring\tOLD_REVISION\tNEW_REVISION\n"
	"Once it has the baseline it says so on stderr, and that it waits for\n"
	"the next change.";

struct diff_state {
	hr_view view;
	int json;
	unsigned long count;
	/* Touched by the watcher thread only. */
	int have_baseline;
	unsigned long printed;
	int failed;
};

static void print_owner(FILE *out, const hr_node *n, int json)
{
	if (!n)
		fputs(json ? "null" : "-", out);
	else if (json)
		cli_json_string(out, n->id, strlen(n->id));
	else
		fputs(n->id, out); /* ids are printable ASCII */
}

static void print_end(FILE *out, uint64_t end, const char *quote)
{
	if (end == 0)
		fprintf(out, "%s10000000000000000%s", quote, quote);
	else
		fprintf(out, "%s%016" PRIx64 "%s", quote, end, quote);
}

static void print_text(FILE *out, const hr_diff *d, const hr_ring *a,
		       const hr_ring *b, hr_view view)
{
	const hr_arc *arcs = hr_diff_arcs(d);
	const hr_arc_total *t = hr_diff_totals(d);

	for (size_t i = 0; i < hr_diff_arc_count(d); i++) {
		fprintf(out, "arc\t%016" PRIx64 "\t", arcs[i].start);
		print_end(out, arcs[i].end, "");
		fputc('\t', out);
		print_owner(out, arcs[i].old_node, 0);
		fputc('\t', out);
		print_owner(out, arcs[i].new_node, 0);
		fputc('\n', out);
	}
	for (size_t i = 0; i < hr_diff_total_count(d); i++) {
		fputs("total\t", out);
		print_owner(out, t[i].old_node, 0);
		fputc('\t', out);
		print_owner(out, t[i].new_node, 0);
		fprintf(out, "\t%zu\t%.6f\n", t[i].arcs, t[i].share);
	}
	fprintf(out, "moved\t%.6f\t%zu\n", hr_ring_moved_share(a, b, view),
		hr_diff_arc_count(d));
}

static void print_json(FILE *out, const hr_diff *d, const hr_ring *a,
		       const hr_ring *b, hr_view view)
{
	const hr_arc *arcs = hr_diff_arcs(d);
	const hr_arc_total *t = hr_diff_totals(d);

	fprintf(out, "{\"old_revision\":%" PRIu64 ",\"new_revision\":%" PRIu64
		",\"view\":\"%s\",\"arcs\":[", hr_ring_revision(a),
		hr_ring_revision(b), view == HR_VIEW_WRITE ? "write" : "read");
	for (size_t i = 0; i < hr_diff_arc_count(d); i++) {
		fprintf(out, "%s{\"start\":\"%016" PRIx64 "\",\"end\":", i ? "," : "",
			arcs[i].start);
		print_end(out, arcs[i].end, "\"");
		fputs(",\"old\":", out);
		print_owner(out, arcs[i].old_node, 1);
		fputs(",\"new\":", out);
		print_owner(out, arcs[i].new_node, 1);
		fputc('}', out);
	}
	fputs("],\"totals\":[", out);
	for (size_t i = 0; i < hr_diff_total_count(d); i++) {
		fputs(i ? ",{\"old\":" : "{\"old\":", out);
		print_owner(out, t[i].old_node, 1);
		fputs(",\"new\":", out);
		print_owner(out, t[i].new_node, 1);
		fprintf(out, ",\"arcs\":%zu,\"share\":%.9g}", t[i].arcs, t[i].share);
	}
	fprintf(out, "],\"moved_share\":%.9g}\n", hr_ring_moved_share(a, b, view));
}

static int print_diff(const hr_ring *a, const hr_ring *b,
		      const struct diff_state *s)
{
	FILE *out = cli_out();
	hr_error err = { 0 };
	hr_diff *d;
	int rc = hr_diff_new(a, b, s->view, &d, &err);

	if (rc)
		return cli_fail(CMD, rc, &err);
	if (s->json) {
		print_json(out, d, a, b, s->view);
	} else {
		if (hr_ring_revision(a) || hr_ring_revision(b))
			fprintf(out, "ring\t%" PRIu64 "\t%" PRIu64 "\n",
				hr_ring_revision(a), hr_ring_revision(b));
		print_text(out, d, a, b, s->view);
	}
	hr_diff_free(d);
	/* Failed output is main()'s to report. */
	cli_out_flush();
	return CLI_EXIT_OK;
}

static int diff_files(const char **files, const struct cli_etcd *conn,
		      const struct diff_state *s)
{
	hr_ring *rings[2] = { NULL, NULL };
	int rc = CLI_EXIT_OK;

	for (int i = 0; i < 2 && rc == CLI_EXIT_OK; i++)
		rc = cli_load_members(CMD, files[i], conn, &rings[i]);
	if (rc == CLI_EXIT_OK)
		rc = print_diff(rings[0], rings[1], s);
	hr_ring_release(rings[0]);
	hr_ring_release(rings[1]);
	return rc;
}

/* On the watcher thread.  The first ring (the first sync, which replaces
 * the client's initial empty ring) is the baseline, not a change. */
static void on_ring(void *ud, const hr_ring *old, const hr_ring *ring)
{
	struct diff_state *s = ud;

	if (!s->have_baseline) {
		char next[48] = "the next change";

		s->have_baseline = 1;
		/* Nothing is printed until then: say why the wait. */
		if (s->count > 1)
			snprintf(next, sizeof next, "the next %lu changes", s->count);
		cli_note(CMD, "baseline: the ring at revision %" PRIu64 " (%zu nodes); waiting for %s",
			 hr_ring_revision(ring), hr_ring_node_count(ring), next);
		return;
	}
	if (s->failed || s->printed >= s->count)
		return;
	if (print_diff(old, ring, s) != CLI_EXIT_OK)
		s->failed = 1;
	s->printed++;
	if (s->failed || cli_out_error() || s->printed >= s->count)
		cli_etcd_follow_stop();
}

static int run(const struct cli_spec *spec, const struct cli_list *files,
	       struct cli_etcd *conn, struct diff_state *st)
{
	int rc;

	if (files->n == 1)
		return cli_usage(CMD, "two members files are needed, old and new");
	if (files->n == 2 && spec->etcd_option)
		return cli_usage(CMD, "members files and --%s exclude each other",
				 spec->etcd_option);
	if (files->n == 2)
		return diff_files(files->items, conn, st);
	rc = cli_etcd_follow(conn, CMD, on_ring, st);
	return rc == CLI_EXIT_OK && st->failed ? CLI_EXIT_ERROR : rc;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_state st = { .view = HR_VIEW_WRITE, .count = 1 };
	struct cli_etcd conn;
	const char *files[2];
	struct cli_list list = { .items = files, .max = 2, .what = "members file" };
	int view = 0, rc;

	cli_etcd_init(&conn, HR_LOG_WARN);
	conn.one_shot = 1; /* one diff unless --count says otherwise */
	const struct cli_option options[] = {
		{ .name = "members", .arg = "FILE", .type = CLI_LIST, .dest = &list,
		  .flags = CLI_NONEMPTY,
		  .help = "a members file: give it twice, old then new (offline)" },
		{ .name = "view", .arg = "VIEW", .type = CLI_CHOICE, .dest = &view,
		  .choices = (const char *const[]){ "write", "read", NULL },
		  .help = "the view compared" },
		/* Offline there is one diff: --count is an etcd option. */
		{ .name = "count", .arg = "N", .type = CLI_UINT, .dest = &st.count,
		  .min = 1, .max = ULONG_MAX, .flags = CLI_ETCD,
		  .help = "with etcd: exit after N changes" },
		{ .name = "json", .type = CLI_FLAG, .dest = &st.json,
		  .help = "print one JSON object per diff" },
		CLI_RING_OPTIONS(&conn),
		CLI_ETCD_OPTIONS(&conn, CLI_TIMEOUT_SYNC),
		{ .name = NULL }
	};
	const struct cli_option positional = {
		.name = "members file", .arg = "OLD NEW", .type = CLI_LIST, .dest = &list,
		.flags = CLI_NONEMPTY, .help = "the members files, old then new (offline)"
	};
	struct cli_spec spec = {
		.cmd = CMD,
		.usage = CMD " (OLD NEW | --members OLD --members NEW |"
			 " [--endpoints URLS] [--prefix P] [--count N])"
			 " [--view write|read] [--json]",
		.description = description,
		.options = options,
		.positional = &positional,
	};

	rc = cli_parse(&spec, argc, argv);
	st.view = view ? HR_VIEW_READ : HR_VIEW_WRITE;
	if (rc == CLI_RUN)
		rc = run(&spec, &list, &conn, &st);
	cli_etcd_free(&conn);
	return rc;
}
