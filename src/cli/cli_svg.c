/* SPDX-License-Identifier: MIT */
/*
 * cli_svg.c - the plots of `nodes --svg`, `sim --svg` and `sim --compare
 * --svg`, written as plain SVG text, and the ring's arcs they (and the
 * dashboard) draw.
 */
#include "cli_svg.h"
#include "cli.h"
#include "escape.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define CIRCLE 18446744073709551616.0 /* 2^64 */
#define PI 3.14159265358979323846

/* ---- arcs ------------------------------------------------------------------- */

static int id_cmp(const void *key, const void *elem)
{
	const void *const *k = key;

	return strcmp(k[0], hr_ring_node(k[1], *(const size_t *)elem)->id);
}

/* A ring whose keys are not on arcs (rendezvous): each node's share as
 * one arc, in id order, end to end, the last ending at 2^64. */
static size_t arcs_of_shares(const hr_ring *ring, const hr_diff *diff,
			     const size_t *order, struct cli_arc **out)
{
	size_t n = hr_diff_total_count(diff);
	double at = 0;

	*out = malloc(n * sizeof **out);
	if (!*out)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const hr_arc_total *t = &hr_diff_totals(diff)[i];
		const void *key[2] = { t->new_node->id, ring };
		const size_t *slot = bsearch(key, order, hr_ring_node_count(ring),
					     sizeof *order, id_cmp);
		uint64_t start = (uint64_t)(at * CIRCLE);

		at += t->share;
		(*out)[i] = (struct cli_arc){
			i ? start : 0,
			i + 1 == n || at >= 1 ? 0 : (uint64_t)(at * CIRCLE),
			slot ? (uint32_t)*slot : CLI_NO_NODE
		};
	}
	return n;
}

size_t cli_ring_arcs(const hr_ring *ring, hr_view view, struct cli_arc **out)
{
	size_t nodes = hr_ring_node_count(ring), n;
	size_t *order = malloc((nodes ? nodes : 1) * sizeof *order);
	hr_diff *diff = NULL;
	hr_error err = { 0 };

	*out = NULL;
	if (!order || hr_diff_new(NULL, ring, view, &diff, &err)) {
		free(order);
		return 0;
	}
	/* Nodes are in id order: a node's number is a binary search away. */
	for (size_t i = 0; i < nodes; i++)
		order[i] = i;
	n = hr_diff_arc_count(diff);
	if (n == 0 && hr_diff_total_count(diff)) {
		n = arcs_of_shares(ring, diff, order, out);
	} else if (!(*out = malloc((n ? n : 1) * sizeof **out))) {
		n = 0;
	} else if (n == 0) {
		(*out)[n++] = (struct cli_arc){ 0, 0, CLI_NO_NODE };
	} else {
		for (size_t i = 0; i < n; i++) {
			const hr_arc *a = &hr_diff_arcs(diff)[i];
			const void *key[2] = { a->new_node ? a->new_node->id : NULL, ring };
			const size_t *at = a->new_node
				? bsearch(key, order, nodes, sizeof *order, id_cmp) : NULL;

			(*out)[i] = (struct cli_arc){ a->start, a->end,
						      at ? (uint32_t)*at : CLI_NO_NODE };
		}
	}
	hr_diff_free(diff);
	free(order);
	return n;
}

double cli_arc_share(uint64_t pos)
{
	return (double)pos / CIRCLE;
}

/* The last position of an arc, inclusive: end 0 (2^64) needs no care. */
static uint64_t last_of(const struct cli_arc *a)
{
	return a->end - 1;
}

double cli_takeover(const struct cli_arc *w, size_t nw, const struct cli_arc *r,
		    size_t nr, cli_takeover_fn fn, void *userdata)
{
	size_t i = 0, j = 0;
	uint64_t pos = 0;
	double total = 0;

	while (i < nw && j < nr) {
		uint64_t lw = last_of(&w[i]), lr = last_of(&r[j]);
		uint64_t last = lw < lr ? lw : lr;

		if (w[i].node != r[j].node) {
			double a = cli_arc_share(pos);
			double b = last == UINT64_MAX ? 1.0 : cli_arc_share(last + 1);

			fn(userdata, a, b, r[j].node, w[i].node);
			total += b - a;
		}
		if (last == UINT64_MAX)
			break;
		pos = last + 1;
		i += last == lw;
		j += last == lr;
	}
	return total;
}

void cli_fair_shares(const hr_ring *ring, hr_view view, double *shares, size_t n)
{
	hr_state left_out = view == HR_VIEW_WRITE ? HR_STATE_DRAINING : HR_STATE_WARMING;
	double sum = 0;

	for (size_t i = 0; i < n; i++) {
		const hr_node *node = hr_ring_node(ring, i);

		shares[i] = node->state != left_out ? node->weight : 0;
		sum += shares[i];
	}
	for (size_t i = 0; i < n; i++)
		shares[i] = sum > 0 ? shares[i] / sum : 0;
}

unsigned cli_node_hue(const char *id)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		h = (h ^ *p) * 16777619u;
	/* Spread: ids that differ by one character land 37 degrees apart. */
	return (unsigned)((h % 360u) * 37u % 360u);
}

/* ---- text ------------------------------------------------------------------- */

/* The length of the UTF-8 sequence at s[0..n) that XML can hold (1-4), or 0:
 * valid UTF-8 as the JSON escaper sees it, less U+FFFE and U+FFFF, which
 * XML 1.0 excludes. */
static size_t xml_utf8_len(const unsigned char *s, size_t n)
{
	size_t len = hr__utf8_len((const char *)s, n);

	if (len == 3 && s[0] == 0xef && s[1] == 0xbf && (s[2] == 0xbe || s[2] == 0xbf))
		return 0;
	return len;
}

void cli_svg_text(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	const unsigned char *end = p + strlen(s);

	while (p < end) {
		size_t n = xml_utf8_len(p, (size_t)(end - p));

		if (n == 1 && (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r'))
			n = 0; /* XML 1.0 cannot hold it, even escaped */
		if (n == 0) {
			fputs("\xef\xbf\xbd", out);
			p++;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default: fwrite(p, 1, n, out);
		}
		p += n;
	}
}

static void svg_begin(FILE *out, int w, int h, const char *title)
{
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"13\">\n<title>",
		w, h, w, h);
	cli_svg_text(out, title);
	fprintf(out, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
}

static void text_at(FILE *out, double x, double y, const char *anchor, const char *extra,
		    const char *s)
{
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y, anchor,
		extra ? " " : "", extra ? extra : "");
	cli_svg_text(out, s);
	fputs("</text>\n", out);
}

/* ---- nodes --svg ------------------------------------------------------------ */

#define RING_CX 250.0
#define RING_CY 260.0
#define R_WRITE 185.0
#define R_READ 150.0
#define R_TAKE 212.0

static void point(double share, double r, double *x, double *y)
{
	double a = 2 * PI * share - PI / 2; /* 0 at the top, clockwise */

	*x = RING_CX + r * cos(a);
	*y = RING_CY + r * sin(a);
}

static void arc_path(FILE *out, double a, double b, double r, const char *attrs)
{
	double x0, y0, x1, y1;

	if (b - a >= 0.999999) { /* a whole circle */
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"none\" %s/>\n",
			RING_CX, RING_CY, r, attrs);
		return;
	}
	point(a, r, &x0, &y0);
	point(b, r, &x1, &y1);
	fprintf(out, "<path d=\"M%.2f %.2fA%.1f %.1f 0 %d 1 %.2f %.2f\" fill=\"none\" %s/>\n",
		x0, y0, r, r, b - a > 0.5, x1, y1, attrs);
}

static void draw_view(FILE *out, const hr_ring *ring, const struct cli_arc *arcs, size_t n,
		      double r, double width)
{
	int coarse = n > CLI_ARCS_DRAWN_MAX;
	char attrs[96];

	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		double a = cli_arc_share(arcs[i].start), b;

		/* Short arcs after this one join it when the view is crowded. */
		while (coarse && j < n && arcs[j].end - arcs[j].start < CLI_ARC_MIN_LEN)
			j++;
		b = j < n ? cli_arc_share(arcs[j].start) : 1.0;
		if (arcs[i].node == CLI_NO_NODE)
			snprintf(attrs, sizeof attrs, "stroke=\"#cccccc\" stroke-width=\"%.0f\"", width);
		else
			snprintf(attrs, sizeof attrs, "stroke=\"hsl(%u,62%%,52%%)\" stroke-width=\"%.0f\"",
				 cli_node_hue(hr_ring_node(ring, arcs[i].node)->id), width);
		arc_path(out, a, b, r, attrs);
		i = j;
	}
}

struct take_ctx {
	FILE *out;
	const hr_ring *ring;
};

static void draw_take(void *ud, double a, double b, uint32_t read_node, uint32_t write_node)
{
	struct take_ctx *t = ud;
	char attrs[128];

	snprintf(attrs, sizeof attrs,
		 "stroke=\"hsl(%u,62%%,52%%)\" stroke-width=\"9\" stroke-dasharray=\"4 2\"",
		 write_node == CLI_NO_NODE ? 0u
		 : cli_node_hue(hr_ring_node(t->ring, write_node)->id));
	arc_path(t->out, a, b > a + 0.002 ? b : a + 0.002, R_TAKE, attrs);
}

int cli_svg_ring(FILE *out, const hr_ring *ring)
{
	size_t n = hr_ring_node_count(ring), nw, nr;
	int h = 60 + 26 * (int)n > 560 ? 60 + 26 * (int)n : 560;
	double *shares = calloc(2 * (n ? n : 1), sizeof *shares), take;
	struct cli_arc *w = NULL, *r = NULL;
	struct take_ctx tc = { out, ring };
	char line[320];

	nw = cli_ring_arcs(ring, HR_VIEW_WRITE, &w);
	nr = cli_ring_arcs(ring, HR_VIEW_READ, &r);
	if (!shares || !nw || !nr) {
		free(shares);
		free(w);
		free(r);
		return HR_ENOMEM;
	}
	hr_ring_node_shares(ring, HR_VIEW_WRITE, shares, n);
	cli_fair_shares(ring, HR_VIEW_WRITE, shares + n, n);

	svg_begin(out, 1000, h, "hashring: the ring and each node's share");
	fputs("<g id=\"ring\">\n", out);
	draw_view(out, ring, w, nw, R_WRITE, 30);
	draw_view(out, ring, r, nr, R_READ, 20);
	take = cli_takeover(w, nw, r, nr, draw_take, &tc);
	fputs("</g>\n", out);
	snprintf(line, sizeof line, "revision %" PRIu64, hr_ring_revision(ring));
	text_at(out, RING_CX, RING_CY - 8, "middle", "font-size=\"20\" font-weight=\"bold\"", line);
	snprintf(line, sizeof line, "digest %016" PRIx64, hr_ring_digest(ring));
	text_at(out, RING_CX, RING_CY + 14, "middle", "fill=\"#677088\"", line);
	snprintf(line, sizeof line, "%zu nodes, %zu points", n, hr_ring_point_count(ring));
	text_at(out, RING_CX, RING_CY + 32, "middle", "fill=\"#677088\"", line);
	snprintf(line, sizeof line, "outer: write view; inner: read view; dashed: taken over"
		 " (%.2f%% of the key space)", 100 * take);
	text_at(out, 20, (double)h - 14, "start", "fill=\"#677088\" font-size=\"11\"", line);

	text_at(out, 500, 34, "start", "font-weight=\"bold\"", "node");
	text_at(out, 690, 34, "start", "font-weight=\"bold\"",
		"share of the write view; | fair share by weight");
	for (size_t i = 0; i < n; i++) {
		const hr_node *node = hr_ring_node(ring, i);
		double y = 60 + 26.0 * (double)i, fair = shares[n + i];
		unsigned hue = cli_node_hue(node->id);

		fprintf(out, "<g class=\"node\" data-node=\"");
		cli_svg_text(out, node->id);
		fputs("\">\n", out);
		snprintf(line, sizeof line, "%s%s%s", node->id,
			 node->state == HR_STATE_ACTIVE ? "" : " ",
			 node->state == HR_STATE_WARMING ? "(warming)"
			 : node->state == HR_STATE_DRAINING ? "(draining)" : "");
		fprintf(out, "<rect x=\"500\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"hsl(%u,62%%,52%%)\"/>\n",
			y - 11, hue);
		text_at(out, 518, y, "start", NULL, line);
		fprintf(out, "<rect x=\"690\" y=\"%.1f\" width=\"220\" height=\"14\" fill=\"#eef0f5\"/>\n"
			"<rect x=\"690\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"hsl(%u,62%%,52%%)\"/>\n"
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"2\" height=\"20\" fill=\"#1d2330\"/>\n",
			y - 12, y - 12, 220 * (shares[i] < 1 ? shares[i] : 1), hue,
			689 + 220 * (fair < 1 ? fair : 1), y - 15);
		snprintf(line, sizeof line, "%.2f%%", 100 * shares[i]);
		text_at(out, 990, y, "end", NULL, line);
		fputs("</g>\n", out);
	}
	fputs("</svg>\n", out);
	free(shares);
	free(w);
	free(r);
	return 0;
}

/* ---- sim --svg ---------------------------------------------------------------- */

struct panel {
	double x, y, w, h;   /* the plot area */
	double lx0, lx1;     /* log10 of the vnodes range */
	double y1;           /* the top of the y axis */
};

static double px(const struct panel *p, unsigned long v)
{
	double l = log10((double)v);

	return p->lx1 > p->lx0 ? p->x + p->w * (l - p->lx0) / (p->lx1 - p->lx0)
			       : p->x + p->w / 2;
}

static double py(const struct panel *p, double v)
{
	return p->y + p->h - p->h * v / p->y1;
}

static void axes(FILE *out, const struct panel *p, const struct cli_sim_point *rows, size_t n,
		 const char *title, int percent)
{
	char t[64];

	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#d8dce6\"/>\n",
		p->x, p->y, p->w, p->h);
	text_at(out, p->x + p->w / 2, p->y - 14, "middle", "font-weight=\"bold\"", title);
	for (int k = 0; k <= 4; k++) {
		double v = p->y1 * k / 4;

		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eef0f5\"/>\n",
			p->x, py(p, v), p->x + p->w, py(p, v));
		if (percent)
			snprintf(t, sizeof t, "%.1f%%", 100 * v);
		else
			snprintf(t, sizeof t, "%.2fx", v);
		text_at(out, p->x - 6, py(p, v) + 4, "end", "fill=\"#677088\" font-size=\"11\"", t);
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(t, sizeof t, "%lu", rows[i].vnodes);
		text_at(out, px(p, rows[i].vnodes), p->y + p->h + 16, "middle",
			"fill=\"#677088\" font-size=\"11\"", t);
	}
	text_at(out, p->x + p->w / 2, p->y + p->h + 34, "middle", "fill=\"#677088\"",
		"vnodes per node (log scale)");
}

/* A polyline through the rows' values at `off` in each row, with dots. */
static void series(FILE *out, const struct panel *p, const struct cli_sim_point *rows, size_t n,
		   size_t off, const char *colour, const char *dash)
{
	fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s points=\"",
		colour, dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
	for (size_t i = 0; i < n; i++) {
		double v = *(const double *)((const char *)&rows[i] + off);

		fprintf(out, "%s%.1f,%.1f", i ? " " : "", px(p, rows[i].vnodes), py(p, v));
	}
	fputs("\"/>\n", out);
	for (size_t i = 0; i < n; i++) {
		double v = *(const double *)((const char *)&rows[i] + off);

		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
			px(p, rows[i].vnodes), py(p, v), colour);
	}
}

static void legend(FILE *out, double x, double y, const char *colour, const char *dash,
		   const char *label)
{
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s%s%s/>\n",
		x, y - 4, x + 22, y - 4, colour, dash ? " stroke-dasharray=\"" : "",
		dash ? dash : "", dash ? "\"" : "");
	text_at(out, x + 28, y, "start", NULL, label);
}

void cli_svg_sim(FILE *out, unsigned long nodes, unsigned long keys,
		 double modulo_moved, const struct cli_sim_point *rows, size_t n)
{
	struct panel bal = { 70, 70, 380, 280, 0, 0, 0 }, mov = { 570, 70, 380, 280, 0, 0, 0 };
	unsigned long vmin = ULONG_MAX, vmax = 0;
	double top_bal = 1, top_mov = modulo_moved;
	char t[160];

	for (size_t i = 0; i < n; i++) {
		vmin = rows[i].vnodes < vmin ? rows[i].vnodes : vmin;
		vmax = rows[i].vnodes > vmax ? rows[i].vnodes : vmax;
		top_bal = rows[i].max_mean > top_bal ? rows[i].max_mean : top_bal;
		top_mov = rows[i].moved > top_mov ? rows[i].moved : top_mov;
		top_mov = rows[i].ideal_moved > top_mov ? rows[i].ideal_moved : top_mov;
	}
	bal.lx0 = mov.lx0 = log10((double)(n ? vmin : 1));
	bal.lx1 = mov.lx1 = log10((double)(n ? vmax : 1));
	bal.y1 = top_bal * 1.1;
	mov.y1 = top_mov * 1.1 > 0 ? top_mov * 1.1 : 1;

	snprintf(t, sizeof t, "hashring sim: %lu keys on %lu nodes, node-%lu joins", keys, nodes,
		 nodes);
	svg_begin(out, 1000, 470, t);
	text_at(out, 500, 26, "middle", "font-size=\"16\" font-weight=\"bold\"", t);
	axes(out, &bal, rows, n, "balance: keys per node over the mean", 0);
	series(out, &bal, rows, n, offsetof(struct cli_sim_point, max_mean), "#c62828", NULL);
	series(out, &bal, rows, n, offsetof(struct cli_sim_point, min_mean), "#1565c0", NULL);
	legend(out, bal.x, 420, "#c62828", NULL, "heaviest node (max/mean)");
	legend(out, bal.x + 230, 420, "#1565c0", NULL, "lightest (min/mean)");

	axes(out, &mov, rows, n, "keys moved when one node joins", 1);
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#b26a00\" stroke-width=\"2\" stroke-dasharray=\"2 3\"/>\n",
		mov.x, py(&mov, modulo_moved), mov.x + mov.w, py(&mov, modulo_moved));
	series(out, &mov, rows, n, offsetof(struct cli_sim_point, ideal_moved), "#677088", "6 4");
	series(out, &mov, rows, n, offsetof(struct cli_sim_point, moved), "#1a7f37", NULL);
	legend(out, mov.x, 420, "#1a7f37", NULL, "ring");
	legend(out, mov.x + 80, 420, "#677088", "6 4", "ideal 1/(N+1)");
	snprintf(t, sizeof t, "hash %% N (%.1f%%)", 100 * modulo_moved);
	legend(out, mov.x + 220, 420, "#b26a00", "2 3", t);
	fputs("</svg>\n", out);
}

/* ---- sim --compare --svg ------------------------------------------------------- */

#define CMP_TOP 92.0     /* the first row's top */
#define CMP_ROW 34.0     /* height of a row */
#define CMP_BAL_X 130.0  /* balance panel: x and width */
#define CMP_BAL_W 330.0
#define CMP_MOV_X 600.0  /* moved panel */
#define CMP_MOV_W 360.0

/* x of ratio `v` on the moved panel's log scale [lo, hi]. */
static double cmp_log_x(double v, double lo, double hi)
{
	v = v < lo ? lo : v > hi ? hi : v;
	return CMP_MOV_X + CMP_MOV_W * (log10(v) - log10(lo)) / (log10(hi) - log10(lo));
}

static void cmp_bar(FILE *out, double x0, double x1, double y, double h, const char *colour)
{
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
		x0, y, x1 > x0 ? x1 - x0 : 0, h, colour);
}

static void cmp_vline(FILE *out, double x, double y0, double y1, const char *colour,
		      const char *dash)
{
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"%s%s%s/>\n",
		x, y0, x, y1, colour, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
		dash ? "\"" : "");
}

static void cmp_tick(FILE *out, double x, double bottom, const char *label)
{
	cmp_vline(out, x, CMP_TOP - 8, bottom, "#eef0f5", NULL);
	text_at(out, x, bottom + 16, "middle", "fill=\"#677088\" font-size=\"11\"", label);
}

/* A bar's value after its end, or inside it when the panel ends first. */
static void cmp_label(FILE *out, double x, double right, double y, const char *label)
{
	if (x + 6 + 7 * (double)strlen(label) > right + 30)
		text_at(out, x - 6, y, "end", "font-size=\"11\" fill=\"#ffffff\"", label);
	else
		text_at(out, x + 6, y, "start", "font-size=\"11\"", label);
}

void cli_svg_compare(FILE *out, unsigned long nodes, unsigned long keys,
		     const struct cli_compare_bar *rows, size_t n)
{
	double top_bal = 1.0, lo = 1.0, hi = 2.0, bottom = CMP_TOP + CMP_ROW * (double)n, step;
	char t[160];

	for (size_t i = 0; i < n; i++) {
		double r[2] = { rows[i].add_ratio, rows[i].remove_ratio };

		top_bal = rows[i].max_mean > top_bal ? rows[i].max_mean : top_bal;
		for (int k = 0; k < 2; k++) {
			lo = r[k] > 0 && r[k] < lo ? r[k] : lo;
			hi = r[k] > hi ? r[k] : hi;
		}
	}
	/* Whole decades, and nothing below a tenth of the ideal. */
	lo = pow(10, floor(log10(lo)));
	lo = lo < 0.1 ? 0.1 : lo;
	hi = pow(10, ceil(log10(hi)));
	top_bal *= 1.1;

	snprintf(t, sizeof t, "hashring sim --compare: %lu keys on %lu nodes, node-%lu joins, one leaves",
		 keys, nodes, nodes);
	svg_begin(out, 1000, (int)bottom + 80, t);
	text_at(out, 500, 26, "middle", "font-size=\"16\" font-weight=\"bold\"", t);
	text_at(out, CMP_BAL_X + CMP_BAL_W / 2, 60, "middle", "font-weight=\"bold\"",
		"balance: keys per node over the mean");
	text_at(out, CMP_MOV_X + CMP_MOV_W / 2, 60, "middle", "font-weight=\"bold\"",
		"keys moved over the ideal (log scale)");

	/* Grid: 0.25x, 0.5x or 1x apart for balance; 1, 2 and 5 of each
	 * decade of moves. */
	step = top_bal <= 1.6 ? 0.25 : top_bal <= 3.5 ? 0.5 : 1;
	for (double v = 0; v <= top_bal; v += step) {
		snprintf(t, sizeof t, "%.2fx", v);
		cmp_tick(out, CMP_BAL_X + CMP_BAL_W * v / top_bal, bottom, t);
	}
	for (double d = lo; d <= hi * 1.001; d *= 10) {
		static const int steps[] = { 1, 2, 5 };

		for (int m = 0; m < 3 && d * steps[m] <= hi * 1.001; m++) {
			snprintf(t, sizeof t, "%gx", d * steps[m]);
			cmp_tick(out, cmp_log_x(d * steps[m], lo, hi), bottom, t);
		}
	}
	/* The ideals: 1x in both panels. */
	cmp_vline(out, CMP_BAL_X + CMP_BAL_W / top_bal, CMP_TOP - 8, bottom, "#677088", "6 4");
	cmp_vline(out, cmp_log_x(1.0, lo, hi), CMP_TOP - 8, bottom, "#677088", "6 4");

	for (size_t i = 0; i < n; i++) {
		const struct cli_compare_bar *r = &rows[i];
		double y = CMP_TOP + CMP_ROW * (double)i;
		double xmax = CMP_BAL_X + CMP_BAL_W * r->max_mean / top_bal;
		double xmin = CMP_BAL_X + CMP_BAL_W * r->min_mean / top_bal;
		double xmov = cmp_log_x(r->add_ratio > r->remove_ratio ? r->add_ratio :
					r->remove_ratio, lo, hi);

		text_at(out, CMP_BAL_X - 10, y + 20, "end", NULL, r->name);
		cmp_bar(out, CMP_BAL_X, xmax, y + 6, 18, "#c62828");
		cmp_bar(out, xmin - 1.5, xmin + 1.5, y + 3, 24, "#1565c0");
		snprintf(t, sizeof t, "%.3fx", r->max_mean);
		cmp_label(out, xmax, CMP_BAL_X + CMP_BAL_W, y + 20, t);

		text_at(out, CMP_MOV_X - 10, y + 20, "end", NULL, r->name);
		cmp_bar(out, CMP_MOV_X, cmp_log_x(r->add_ratio, lo, hi), y + 4, 12, "#1a7f37");
		cmp_bar(out, CMP_MOV_X, cmp_log_x(r->remove_ratio, lo, hi), y + 17, 12, "#b26a00");
		snprintf(t, sizeof t, "%.2fx / %.2fx", r->add_ratio, r->remove_ratio);
		cmp_label(out, xmov, CMP_MOV_X + CMP_MOV_W, y + 20, t);
	}
	cmp_bar(out, CMP_BAL_X, CMP_BAL_X + 22, bottom + 34, 10, "#c62828");
	text_at(out, CMP_BAL_X + 28, bottom + 44, "start", NULL, "heaviest (max/mean)");
	cmp_bar(out, CMP_BAL_X + 170, CMP_BAL_X + 173, bottom + 30, 18, "#1565c0");
	text_at(out, CMP_BAL_X + 180, bottom + 44, "start", NULL, "lightest (min/mean)");
	cmp_bar(out, CMP_MOV_X, CMP_MOV_X + 22, bottom + 34, 10, "#1a7f37");
	text_at(out, CMP_MOV_X + 28, bottom + 44, "start", NULL, "node N joins (ideal 1/(N+1))");
	cmp_bar(out, CMP_MOV_X + 220, CMP_MOV_X + 242, bottom + 34, 10, "#b26a00");
	text_at(out, CMP_MOV_X + 248, bottom + 44, "start", NULL, "one leaves (1/N)");
	fputs("</svg>\n", out);
}

/* ---- files ------------------------------------------------------------------ */

FILE *cli_svg_open(const char *cmd, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		cli_error(cmd, "cannot write %s: %s", path, strerror(errno));
	return f;
}

int cli_svg_close(const char *cmd, const char *path, FILE *f)
{
	int failed = ferror(f);

	if (fclose(f) || failed) {
		cli_error(cmd, "cannot write %s: %s", path, strerror(errno ? errno : EIO));
		return CLI_EXIT_ERROR;
	}
	return CLI_EXIT_OK;
}
