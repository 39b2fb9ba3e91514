/* cmd_diff.c - `hashring diff`: the arcs of the key space that change owner
 * between two rings, from two members files or from each ring etcd gives. */
#include "cli.h"

#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define CMD "diff"

static const struct cli_option options[] = {
	CLI_ETCD_OPTIONS,
	{ "members", "FILE", "a members file: give it twice, old then new (offline)" },
	{ "view", "VIEW", "write (default) or read" },
	{ "count", "N", "with etcd: exit after N changes (default 1)" },
	{ "json", NULL, "print one JSON object per diff" },
	{ NULL, NULL, NULL }
};

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
	"without files, from etcd: the command follows PREFIX and prints the diff\n"
	"of each new ring against the one before, preceded in text by\n"
	"  ring\tOLD_REVISION\tNEW_REVISION";

struct diff_state {
	hr_view view;
	int json;
	unsigned long count;
	/* Touched by the watcher thread only. */
	int have_baseline;
	unsigned long printed;
	int failed;
};

static void print_owner(const hr_node *n, int json)
{
	if (json) {
		if (n)
			cli_json_string(stdout, n->id, strlen(n->id));
		else
			fputs("null", stdout);
	} else {
		if (n)
			cli_text_string(stdout, n->id, strlen(n->id));
		else
			fputc('-', stdout);
	}
}

static void print_end(uint64_t end, const char *quote)
{
	if (end == 0)
		printf("%s10000000000000000%s", quote, quote);
	else
		printf("%s%016" PRIx64 "%s", quote, end, quote);
}

static void print_text(const hr_diff *d)
{
	const hr_arc *arcs = hr_diff_arcs(d);
	const hr_arc_total *t = hr_diff_totals(d);

	for (size_t i = 0; i < hr_diff_arc_count(d); i++) {
		printf("arc\t%016" PRIx64 "\t", arcs[i].start);
		print_end(arcs[i].end, "");
		fputc('\t', stdout);
		print_owner(arcs[i].old_node, 0);
		fputc('\t', stdout);
		print_owner(arcs[i].new_node, 0);
		fputc('\n', stdout);
	}
	for (size_t i = 0; i < hr_diff_total_count(d); i++) {
		fputs("total\t", stdout);
		print_owner(t[i].old_node, 0);
		fputc('\t', stdout);
		print_owner(t[i].new_node, 0);
		printf("\t%zu\t%.6f\n", t[i].arcs, t[i].share);
	}
	printf("moved\t%.6f\t%zu\n", hr_diff_moved_share(d), hr_diff_arc_count(d));
}

static void print_json(const hr_diff *d, const hr_ring *a, const hr_ring *b,
		       hr_view view)
{
	const hr_arc *arcs = hr_diff_arcs(d);
	const hr_arc_total *t = hr_diff_totals(d);

	printf("{\"old_revision\":%" PRIu64 ",\"new_revision\":%" PRIu64
	       ",\"view\":\"%s\",\"arcs\":[", hr_ring_revision(a),
	       hr_ring_revision(b), view == HR_VIEW_WRITE ? "write" : "read");
	for (size_t i = 0; i < hr_diff_arc_count(d); i++) {
		printf("%s{\"start\":\"%016" PRIx64 "\",\"end\":", i ? "," : "",
		       arcs[i].start);
		print_end(arcs[i].end, "\"");
		fputs(",\"old\":", stdout);
		print_owner(arcs[i].old_node, 1);
		fputs(",\"new\":", stdout);
		print_owner(arcs[i].new_node, 1);
		fputc('}', stdout);
	}
	fputs("],\"totals\":[", stdout);
	for (size_t i = 0; i < hr_diff_total_count(d); i++) {
		fputs(i ? ",{\"old\":" : "{\"old\":", stdout);
		print_owner(t[i].old_node, 1);
		fputs(",\"new\":", stdout);
		print_owner(t[i].new_node, 1);
		printf(",\"arcs\":%zu,\"share\":%.9g}", t[i].arcs, t[i].share);
	}
	printf("],\"moved_share\":%.9g}\n", hr_diff_moved_share(d));
}

static int print_diff(const hr_ring *a, const hr_ring *b,
		      const struct diff_state *s)
{
	hr_error err = { 0 };
	hr_diff *d;
	int rc = hr_ring_diff(a, b, s->view, &d, &err);

	if (rc)
		return cli_fail(CMD, rc, &err);
	if (s->json) {
		print_json(d, a, b, s->view);
	} else {
		if (hr_ring_revision(a) || hr_ring_revision(b))
			printf("ring\t%" PRIu64 "\t%" PRIu64 "\n",
			       hr_ring_revision(a), hr_ring_revision(b));
		print_text(d);
	}
	hr_diff_free(d);
	return fflush(stdout) ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

static int diff_files(const char *files[2], const struct cli_etcd *conn,
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
		s->have_baseline = 1;
		return;
	}
	if (s->failed || s->printed >= s->count)
		return;
	if (print_diff(old, ring, s) != CLI_EXIT_OK)
		s->failed = 1;
	s->printed++;
	/* Wake the main thread, which waits for a signal. */
	if (s->failed || s->printed >= s->count)
		kill(getpid(), SIGTERM);
}

static int diff_etcd(struct cli_etcd *conn, struct diff_state *s)
{
	int rc = cli_etcd_follow(conn, CMD, on_ring, s);

	return rc == CLI_EXIT_OK && s->failed ? CLI_EXIT_ERROR : rc;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_state st = { .view = HR_VIEW_WRITE, .count = 1 };
	struct cli_etcd conn;
	struct cli_parser p;
	const char *files[2];
	size_t nfiles = 0;
	int opt, etcd = 0, count_given = 0, rc = CLI_EXIT_USAGE;

	cli_etcd_init(&conn, HR_LOG_ERROR);
	cli_parser_init(&p, CMD, argc, argv);
	while ((opt = cli_parser_next(&p, options)) != CLI_ARG_END) {
		const char *name;

		if (opt == CLI_ARG_ERROR)
			goto out;
		if (opt == CLI_ARG_HELP) {
			cli_print_help(stdout,
				       CMD " (OLD NEW | --members OLD --members NEW |"
				       " [--endpoints URLS] [--prefix P] [--count N])"
				       " [--view write|read] [--json]",
				       description, options);
			rc = CLI_EXIT_OK;
			goto out;
		}
		name = opt == CLI_ARG_POSITIONAL ? "members" : options[opt].name;
		if (!strcmp(name, "members")) {
			if (nfiles == 2) {
				cli_usage(CMD, "more than two members files");
				goto out;
			}
			if (!*p.value) {
				cli_usage(CMD, "empty file name");
				goto out;
			}
			files[nfiles++] = p.value;
		} else if (!strcmp(name, "view")) {
			if (!strcmp(p.value, "write"))
				st.view = HR_VIEW_WRITE;
			else if (!strcmp(p.value, "read"))
				st.view = HR_VIEW_READ;
			else {
				cli_usage(CMD, "--view: '%s' is not write or read", p.value);
				goto out;
			}
		} else if (!strcmp(name, "json")) {
			st.json = 1;
		} else if (!strcmp(name, "count")) {
			if (cli_parse_ulong(CMD, "count", p.value, 1,
					    (unsigned long)-1 / 2, &st.count))
				goto out;
			count_given = 1;
		} else {
			if (cli_etcd_option(&conn, CMD, name, p.value) < 0)
				goto out;
			if (cli_etcd_connects(name))
				etcd = 1;
		}
	}
	if (nfiles == 1) {
		cli_usage(CMD, "two members files are needed, old and new");
	} else if (nfiles == 2 && (etcd || count_given)) {
		cli_usage(CMD, "members files and the etcd options exclude each other");
	} else if (nfiles == 2) {
		rc = diff_files(files, &conn, &st);
	} else {
		rc = diff_etcd(&conn, &st);
	}
out:
	cli_etcd_free(&conn);
	return rc;
}
