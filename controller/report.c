/* knobctl report RUN... -o FILE.html: one self-contained HTML page (no
 * script, no external style, nothing fetched) with, per workload, an
 * inline SVG chart of throughput, IOPS or ops/s against threads on a log2
 * axis, one polyline per run with a point in it (a style of its own, the
 * same in every chart) with error bars (mean ± sd) where there are
 * repeats; the peak and sustained table; the compare tables with verdicts
 * (each run as B against the first run given before it on the command
 * line that it can be compared with, else that shares points with it
 * (which says why not), as A: the order given, not time order;
 * a row's node count; a side with fewer figures than repeats says so, a
 * run not ok is warned of and its status is in the heading, the points
 * only one run has are listed under the table; a run compared with none
 * says so);
 * and each run's profile and facts. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "results.h"
#include "rundoc.h"
#include "stats.h"
#include "util.h"

#define CW 720		/* chart size, px */
#define CH 380		/* the least height: taller when the legend needs it */
#define ML 80		/* margins */
#define MR 180
#define MT 30
#define MB 56
#define LH 20		/* a legend row */
#define LEG_X 30	/* a legend name's offset from its row's start */
#define LEG_MAX 48	/* a longer legend name is cut, whole in its tooltip */

/* A run's style: colour r % 8 with dash pattern r / 8, so 48 runs are
 * told apart before a style comes again. */
static const char *const palette[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
};
static const char *const dashes[] = {
	"none", "8 4", "2 3", "8 3 2 3", "8 3 2 3 2 3", "16 4",
};

/* One run of the report: its document and points. */
struct rrun {
	json_object *doc;
	struct pointset ps;
	char *name;		/* label, else run id; "label (run id)" when
				 * another run of the report has that label */
	int dup;		/* that: its label is another run's too */
};

/* The name run r of docs[0..n) goes by in the report into run: its label,
 * with its run id when another run has the same label (two runs labelled
 * "before" were two legend rows and a heading "A = before, B = before"
 * alike), else its run id. */
static void
run_name(json_object *const *docs, size_t n, size_t r, struct rrun *run)
{
	const char *label = js_str(docs[r], "label"), *id = js_str(docs[r], "run_id");

	for (size_t k = 0; k < n && label[0]; k++)
		run->dup |= k != r && strcmp(js_str(docs[k], "label"), label) == 0;
	run->name = !label[0] ? xstrdup(id) : run->dup ? xasprintf("%s (%s)", label, id) :
	    xstrdup(label);
}

/* HTML-escaped s on f. */
static void
esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* "seq-write, bs 1m, size 64m, direct" for a point of kind with params
 * pr. */
static void
params_title(char *buf, size_t len, const char *kind, json_object *pr)
{
	char bs[16], sz[16];

	size_fmt(bs, sizeof(bs), (uint64_t)js_num(pr, "block_size"));
	size_fmt(sz, sizeof(sz), (uint64_t)js_num(pr, "file_size"));
	if (rundoc_metric_of(kind) == M_OPS)
		snprintf(buf, len, "%s, %lld files per dir, write size %lld", kind,
		    (long long)js_num(pr, "files_per_dir"), (long long)js_num(pr, "write_size"));
	else
		snprintf(buf, len, "%s, bs %s, size %s%s%s%s", kind, bs, sz,
		    json_object_get_boolean(json_object_object_get(pr, "direct")) ? ", direct" : "",
		    json_object_get_boolean(json_object_object_get(pr, "fsync")) ? ", fsync" : "",
		    json_object_get_boolean(json_object_object_get(pr, "shared")) ? ", shared" : "");
}

/* params_title of a workload's first point. */
static void
params_title_of(char *buf, size_t len, const struct point *p)
{
	params_title(buf, len, p->kind, json_object_object_get(p->first, "params"));
}

/* The title of w's workload in a report of runs[0..nruns): params_title,
 * and for each other workload there whose params_title is the same, the
 * first key they differ in with w's value (", iodepth 32").  Before, runs
 * at iodepth 1 and 32 had two charts and two peak rows titled alike
 * ("rand-read, bs 4k, size 64m"), a 4x that read as the tuning's. */
static void
workload_title(char *buf, size_t len, const struct rrun *runs, size_t nruns,
    const struct point *w)
{
	char base[160], other[160], diff[96], add[256];

	params_title_of(base, sizeof(base), w);
	snprintf(buf, len, "%s", base);
	for (size_t r = 0; r < nruns; r++)
		for (size_t i = 0; i < runs[r].ps.n; i++) {
			const struct point *q = &runs[r].ps.p[i];

			params_title_of(other, sizeof(other), q);
			if (strcmp(other, base) != 0 || points_same_workload(w, q, diff, sizeof(diff)))
				continue;
			snprintf(add, sizeof(add), ", %s %s", strncmp(diff, "params.", 7) == 0 ?
			    diff + 7 : diff, results_field_text(w->first, diff));
			if (strstr(buf, add) == NULL && strlen(buf) + strlen(add) < len)
				strcat(buf, add);
		}
}

/* A "nice" step for an axis from 0 to max with about n ticks. */
static double
nice_step(double max, int n)
{
	double raw = max / n, mag = pow(10, floor(log10(raw))), f = raw / mag;

	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* The y axis's divisor and suffix for ticks up to ymax: 1000^k, the
 * largest not above ymax, from 10,000 on ("k", "M", "G", ...). */
static double
tick_div(double ymax, const char **suffix)
{
	static const char *const suf[] = { "", "k", "M", "G", "T", "P", "E" };
	size_t k = 0;
	double div = 1;

	if (ymax >= 1e4)
		while (k + 1 < nitems(suf) && ymax / div >= 1000) {
			div *= 1000;
			k++;
		}
	*suffix = suf[k];
	return div;
}

/* The label of tick y on an axis of step and ymax, a plain number: "0",
 * "750", "2500", "0.5M", "1.5M", "12k", "0.05" (%g wrote 1.5e+06). */
static void
tick_label(char *buf, size_t len, double y, double step, double ymax)
{
	const char *suffix;
	double div = tick_div(ymax, &suffix), s = step / div;
	int dec = s >= 1 ? 0 : (int)ceil(-log10(s) - 1e-9);

	if (y == 0)
		snprintf(buf, len, "0");
	else
		snprintf(buf, len, "%.*f%s", dec > 9 ? 9 : dec, y / div, suffix);
}

/* A chart's frame: the y range and tick step, the log2 thread range, the
 * scales, the plot size, the width (CW, or wider for its legend's names)
 * and the height (CH, or taller for its legend). */
struct frame {
	double ymax, step, lx0, lx1, sx, sy;
	int pw, ph, w, h;
};

/* name cut to max characters into buf (of max * 4 + 4 bytes or more):
 * whole, or its first max - 1 characters and an ellipsis; 1 when cut. */
static int
cut_name(const char *name, size_t max, char *buf, size_t len)
{
	size_t i, nc = 0, cut = 0;

	for (i = 0; name[i]; i++)
		if (((unsigned char)name[i] & 0xc0) != 0x80 && nc++ == max - 1)
			cut = i;	/* where the max-th character starts */
	if (nc <= max) {
		snprintf(buf, len, "%s", name);
		return 0;
	}
	snprintf(buf, len, "%.*s\u2026", (int)cut, name);
	return 1;
}

/* Run r's name as a legend shows it into buf (of LEG_MAX * 4 + 4 bytes),
 * at most LEG_MAX characters: a label another run has is cut before its
 * run id, which tells the two apart; 1 when cut. */
static int
legend_name(const struct rrun *run, char *buf, size_t len)
{
	const char *id = js_str(run->doc, "run_id");
	char label[LEG_MAX * 4 + 4];
	int cut;

	if (!run->dup || strlen(id) + 3 >= LEG_MAX)
		return cut_name(run->name, LEG_MAX, buf, len);
	cut = cut_name(js_str(run->doc, "label"), LEG_MAX - 3 - strlen(id), label, sizeof(label));
	snprintf(buf, len, "%s (%s)", label, id);
	return cut;
}

/* Characters wider than the 1.1 em text_width_max allows any other, in
 * tenths of a px at font-size 12: East Asian wide and fullwidth (CJK,
 * Hangul, kana: 1 em in their fonts) and emoji (up to 1.3 em) as 1.5 em;
 * glyphs wider still in the common fonts as measured in chromium
 * ("\u2031", per ten thousand: 1.74 em in DejaVu Sans) or as Unicode
 * defines them (the two- and three-em dashes).  Inclusive ranges,
 * ascending. */
static const struct { unsigned lo, hi; int w; } wide_glyphs[] = {
	{ 0x1100, 0x115f, 180 }, { 0x2031, 0x2031, 240 }, { 0x231a, 0x231b, 180 },
	{ 0x2329, 0x232a, 180 }, { 0x23e9, 0x23f3, 180 }, { 0x25fd, 0x25fe, 180 },
	{ 0x2600, 0x27bf, 180 }, { 0x2b00, 0x2bff, 180 }, { 0x2e3a, 0x2e3a, 264 },
	{ 0x2e3b, 0x2e3b, 396 }, { 0x2e80, 0x303e, 180 }, { 0x3041, 0xa4cf, 180 },
	{ 0xa960, 0xa97f, 180 }, { 0xac00, 0xd7a3, 180 }, { 0xf900, 0xfaff, 180 },
	{ 0xfe10, 0xfe19, 180 }, { 0xfe30, 0xfe6f, 180 }, { 0xff00, 0xff60, 180 },
	{ 0xffe0, 0xffe6, 180 }, { 0x16fe0, 0x18cff, 180 }, { 0x1b000, 0x1b2ff, 180 },
	{ 0x1f000, 0x1faff, 180 }, { 0x20000, 0x3fffd, 180 },
};

/* The UTF-8 sequence at s: its code point into *cp, its length (a byte
 * that does not start a sequence counts as one code point of its own). */
static size_t
utf8_next(const char *s, unsigned *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = u[0] >= 0xf0 ? 4 : u[0] >= 0xe0 ? 3 : u[0] >= 0xc0 ? 2 : 1;
	size_t i;

	*cp = n == 1 ? u[0] : u[0] & (0x7fu >> n);
	for (i = 1; i < n && (u[i] & 0xc0) == 0x80; i++)
		*cp = *cp << 6 | (u[i] & 0x3f);
	return i;
}

/* The width of code point cp at font-size 12 in tenths of a px, at most:
 * 0.65 em for a lower-case letter but m and w, a digit or narrow
 * punctuation, wide_glyphs' for theirs, 1.1 em for any other. */
static int
glyph_width_max(unsigned cp)
{
	if (cp < 0x80)
		return (cp >= 'a' && cp <= 'z' && cp != 'm' && cp != 'w') ||
		    (cp >= '0' && cp <= '9') || (cp && strchr(" .,:;_-/()[]|!'", (int)cp)) ?
		    78 : 132;
	for (size_t i = 0; i < nitems(wide_glyphs) && wide_glyphs[i].lo <= cp; i++)
		if (cp <= wide_glyphs[i].hi)
			return wide_glyphs[i].w;
	return 132;
}

/* A width in px that s, at font-size 12, does not pass in the common
 * sans-serif fonts (DejaVu, Liberation, Arial, Verdana) and CJK and emoji
 * fonts: the sum of glyph_width_max over its characters. */
static int
text_width_max(const char *s)
{
	int w = 0;
	unsigned cp;

	while (*s) {
		s += utf8_next(s, &cp);
		w += glyph_width_max(cp);
	}
	return (w + 9) / 10;
}

/* Does run r's point i figure in the chart of workload w: the same
 * workload, a figure, the one point of its thread count? */
static int
in_chart(const struct rrun *run, size_t i, const struct point *w)
{
	const struct point *p = &run->ps.p[i];

	return strcmp(p->kind, w->kind) == 0 && points_same_workload(p, w, NULL, 0) &&
	    p->st.n && points_workload_rep(&run->ps, i);
}

/* The frame of a chart of the points sel[r][0..ns[r]) of nruns runs, its
 * legend nleg rows whose names take at most legw px; -1 when no run has a
 * figure in it. */
static int
chart_frame(const struct point **const *sel, const size_t *ns, size_t nruns,
    size_t nleg, int legw, int decimal, struct frame *fr)
{
	memset(fr, 0, sizeof(*fr));
	fr->lx0 = INFINITY;
	fr->lx1 = -INFINITY;
	for (size_t r = 0; r < nruns; r++)
		for (size_t i = 0; i < ns[r]; i++) {
			const struct point *p = sel[r][i];

			fr->ymax = fmax(fr->ymax, rundoc_scale(p->st.mean + p->st.sd, p->metric,
			    decimal));
			fr->lx0 = fmin(fr->lx0, log2((double)p->threads));
			fr->lx1 = fmax(fr->lx1, log2((double)p->threads));
		}
	if (fr->ymax <= 0)
		return -1;
	fr->step = nice_step(fr->ymax, 5);
	fr->ymax = ceil(fr->ymax / fr->step) * fr->step;
	if (fr->lx1 - fr->lx0 < 1) {
		fr->lx0 -= 0.5;
		fr->lx1 += 0.5;
	}
	fr->pw = CW - ML - MR;
	fr->ph = CH - MT - MB;
	fr->sx = fr->pw / (fr->lx1 - fr->lx0);
	fr->sy = fr->ph / fr->ymax;
	fr->h = MT + (int)nleg * LH + 10 > CH ? MT + (int)nleg * LH + 10 : CH;
	fr->w = ML + fr->pw + 12 + LEG_X + legw + 10 > CW ? ML + fr->pw + 12 + LEG_X + legw + 10 :
	    CW;
	return 0;
}

/* The axes, grid, ticks and axis labels of a chart in unit. */
static void
chart_axes(FILE *f, const struct frame *fr, const char *unit)
{
	int pw = fr->pw, ph = fr->ph;

	fprintf(f, "<path class=\"axis\" d=\"M%d %d V%d H%d\" stroke=\"#000\" fill=\"none\"/>\n",
	    ML, MT, MT + ph, ML + pw);
	for (int k = 0; k * fr->step <= fr->ymax + fr->step / 2; k++) {
		double py = MT + ph - k * fr->step * fr->sy;
		char lab[32];

		tick_label(lab, sizeof(lab), k * fr->step, fr->step, fr->ymax);
		fprintf(f, "<path class=\"grid\" d=\"M%d %.1f H%d\" stroke=\"#ddd\"/>"
		    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%s</text>\n",
		    ML, py, ML + pw, ML - 6, py + 4, lab);
	}
	for (double lx = ceil(fr->lx0); lx <= fr->lx1; lx++) {
		double px = ML + (lx - fr->lx0) * fr->sx;

		fprintf(f, "<path class=\"tick\" d=\"M%.1f %d v5\" stroke=\"#000\"/>"
		    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"11\">%.0f</text>\n",
		    px, MT + ph, px, MT + ph + 18, pow(2, lx));
	}
	fprintf(f, "<text class=\"xlabel\" x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\">"
	    "threads (log2 scale)</text>\n", ML + pw / 2, MT + ph + MB - 12);
	fprintf(f, "<text class=\"ylabel\" transform=\"translate(18 %d) rotate(-90)\" "
	    "text-anchor=\"middle\" font-size=\"12\">%s</text>\n", MT + ph / 2, unit);
}

/* Run r's points in workload w's chart, by thread count, into sel (room
 * for all of the run's points); how many. */
static size_t
chart_points(const struct rrun *run, const struct point *w, const struct point **sel)
{
	size_t ns = 0, k;

	for (size_t i = 0; i < run->ps.n; i++) {
		if (!in_chart(run, i, w))
			continue;
		for (k = ns++; k > 0 && sel[k - 1]->threads > run->ps.p[i].threads; k--)
			sel[k] = sel[k - 1];
		sel[k] = &run->ps.p[i];
	}
	return ns;
}

/* Run r's series in the chart: a polyline in its style (colour and dash
 * of its place among the runs, the same in every chart), a dot per point
 * and an error bar where two repeats or more have a figure. */
static void
chart_series(FILE *f, const struct rrun *run, size_t r, const struct point *const *sel,
    size_t ns, const struct frame *fr, int decimal)
{
	const char *col = palette[r % nitems(palette)];
	char *pts = xstrdup(""), *bars = xstrdup("");

	for (size_t i = 0; i < ns; i++) {
		const struct point *p = sel[i];
		double px, py, sd;

		px = ML + (log2((double)p->threads) - fr->lx0) * fr->sx;
		py = MT + fr->ph - rundoc_scale(p->st.mean, p->metric, decimal) * fr->sy;
		sd = rundoc_scale(p->st.sd, p->metric, decimal) * fr->sy;
		str_appendf(&pts, "%s%.1f,%.1f", i ? " " : "", px, py);
		str_appendf(&bars, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", px, py,
		    col);
		if (p->st.n > 1)	/* an sd needs two figures; no bar below 0 */
			str_appendf(&bars, "<path class=\"errbar\" d=\"M%.1f %.1f V%.1f M%.1f %.1f "
			    "h8 M%.1f %.1f h8\" stroke=\"%s\"/>", px, py - sd,
			    fmin(py + sd, MT + fr->ph), px - 4, py - sd, px - 4,
			    fmin(py + sd, MT + fr->ph), col);
	}
	fprintf(f, "<g class=\"run\"><polyline class=\"series\" data-run=\"");
	esc(f, js_str(run->doc, "run_id"));
	fprintf(f, "\" points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
	    "stroke-dasharray=\"%s\"/>%s</g>\n", pts, col, dashes[r / nitems(palette) %
	    nitems(dashes)], bars);
	free(pts);
	free(bars);
}

/* Legend row row of the chart: run r's style and name (cut, then whole in
 * a tooltip, past LEG_MAX characters). */
static void
chart_legend(FILE *f, const struct rrun *run, size_t r, size_t row, const struct frame *fr)
{
	int x = ML + fr->pw + 12, y = MT + 10 + (int)row * LH;
	char shown[LEG_MAX * 4 + 4];

	fprintf(f, "<g class=\"legend\">");
	if (legend_name(run, shown, sizeof(shown))) {
		fprintf(f, "<title>");
		esc(f, run->name);
		fprintf(f, "</title>");
	}
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
	    "stroke-width=\"2\" stroke-dasharray=\"%s\"/><text x=\"%d\" y=\"%d\" "
	    "font-size=\"12\">", x, y, x + 24, y, palette[r % nitems(palette)],
	    dashes[r / nitems(palette) % nitems(dashes)], x + LEG_X, y + 4);
	esc(f, shown);
	fprintf(f, "</text></g>\n");
}

/* The chart of the workload of point w across every run: a series and a
 * legend row for each run with a point in it. */
static void
chart(FILE *f, const struct rrun *runs, size_t nruns, const struct point *w, int decimal)
{
	const struct point ***sel = xcalloc(nruns, sizeof(*sel));
	size_t *ns = xcalloc(nruns, sizeof(*ns)), r, nleg = 0;
	struct frame fr;
	char title[256], shown[LEG_MAX * 4 + 4];
	int legw = 0;

	for (r = 0; r < nruns; r++) {
		sel[r] = xcalloc(runs[r].ps.n + 1, sizeof(**sel));
		ns[r] = chart_points(&runs[r], w, sel[r]);
		nleg += ns[r] > 0;
		legend_name(&runs[r], shown, sizeof(shown));
		if (ns[r] && text_width_max(shown) > legw)
			legw = text_width_max(shown);
	}
	if (chart_frame(sel, ns, nruns, nleg, legw, decimal, &fr) == 0) {
		workload_title(title, sizeof(title), runs, nruns, w);
		fprintf(f, "<figure class=\"chart\"><figcaption>");
		esc(f, title);
		fprintf(f, "</figcaption>\n<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		    "role=\"img\">\n", fr.w, fr.h, fr.w, fr.h);
		chart_axes(f, &fr, rundoc_unit_name(w->metric, decimal));
		for (r = 0, nleg = 0; r < nruns; r++)
			if (ns[r]) {
				chart_series(f, &runs[r], r, sel[r], ns[r], &fr, decimal);
				chart_legend(f, &runs[r], r, nleg++, &fr);
			}
		fprintf(f, "</svg></figure>\n");
	}
	for (r = 0; r < nruns; r++)
		free(sel[r]);
	free(sel);
	free(ns);
}

/* Has an earlier run (or an earlier point of run r) already charted the
 * workload of run r's point i? */
static int
charted(const struct rrun *runs, size_t r, size_t i)
{
	const struct point *p = &runs[r].ps.p[i];

	for (size_t rr = 0; rr <= r; rr++)
		for (size_t k = 0; k < (rr == r ? i : runs[rr].ps.n); k++)
			if (strcmp(runs[rr].ps.p[k].kind, p->kind) == 0 &&
			    points_same_workload(&runs[rr].ps.p[k], p, NULL, 0))
				return 1;
	return 0;
}

/* Under the peak table: the thread counts run r of runs[0..nruns)
 * leaves out of its peaks (rundoc_left_out), as the text table says them. */
static void
peaks_left_out(FILE *f, const struct rrun *runs, size_t nruns, const struct rrun *r)
{
	for (size_t i = 0; i < r->ps.n; i++) {
		char *why = points_workload_first(&r->ps, i) ? rundoc_left_out(&r->ps, i) : NULL;
		char t[256];

		if (why == NULL)
			continue;
		workload_title(t, sizeof(t), runs, nruns, &r->ps.p[i]);
		fprintf(f, "<p class=\"warning\">");
		esc(f, r->name);
		fprintf(f, ", ");
		esc(f, t);
		fprintf(f, ": ");
		esc(f, why);
		fprintf(f, ".</p>\n");
		free(why);
	}
}

static void
peaks_table(FILE *f, const struct rrun *runs, size_t nruns, int decimal)
{
	fprintf(f, "<h2>Peak and sustained</h2>\n<p>Peak: the largest mean over the thread counts. "
	    "Sustained: the median of the means from the peak's thread count on.</p>\n"
	    "<table class=\"peaks\"><tr><th>run</th><th>workload</th><th>peak</th><th>at threads</th>"
	    "<th>sustained</th><th>threads</th></tr>\n");
	for (size_t r = 0; r < nruns; r++) {
		struct peak *pk;
		size_t n = stats_peaks(&runs[r].ps, &pk);

		for (size_t i = 0; i < n; i++) {
			char t[256], a[32], b[32];

			workload_title(t, sizeof(t), runs, nruns, &runs[r].ps.p[pk[i].first]);
			rundoc_fmt_rate(a, sizeof(a), pk[i].peak, pk[i].metric, decimal);
			rundoc_fmt_rate(b, sizeof(b), pk[i].sustained, pk[i].metric, decimal);
			fprintf(f, "<tr><td>");
			esc(f, runs[r].name);
			if (strcmp(js_str(runs[r].doc, "status"), "interrupted") == 0)
				fprintf(f, " (interrupted)");
			fprintf(f, "</td><td>");
			esc(f, t);
			fprintf(f, "</td><td>%s</td><td>%lld</td><td>%s</td><td>%lld..%lld</td></tr>\n", a,
			    (long long)pk[i].peak_threads, b, (long long)pk[i].min_threads,
			    (long long)pk[i].max_threads);
		}
		free(pk);
	}
	fprintf(f, "</table>\n");
	for (size_t r = 0; r < nruns; r++)
		peaks_left_out(f, runs, nruns, &runs[r]);
}

/* One compare row's side as a cell: "mean ± sd" in the unit
 * (results_compare_side), and "(2 of 3 repeats)" when fewer of the
 * point's repeats than it ran have a figure (the others failed or were
 * degraded), as the text compare notes under its table. */
static void
side_cell(FILE *f, json_object *row, const char *pre, int decimal)
{
	char k[16], v[48];
	int64_t n, reps;

	results_compare_side(v, sizeof(v), row, pre, decimal);
	snprintf(k, sizeof(k), "%s_n", pre);
	n = (int64_t)js_num(row, k);
	snprintf(k, sizeof(k), "%s_repeats", pre);
	reps = (int64_t)js_num(row, k);
	fprintf(f, "<td>%s", v);
	if (n < reps)
		fprintf(f, " <span class=\"repeats\" title=\"the others failed or were degraded: "
		    "the mean and the verdict are over these %lld\">(%lld of %lld repeats)</span>",
		    (long long)n, (long long)n, (long long)reps);
	fprintf(f, "</td>");
}

/* Do runs a and b have a point (kind and thread count) in common: with
 * force, whatever differs between them; without, one compare takes
 * (alike points, the same nodes and directories)? */
static int
shares_points(const struct rrun *a, const struct rrun *b, int force)
{
	char err[8];
	json_object *cmp = results_compare_doc(a->doc, b->doc, force, err, sizeof(err));
	int n = cmp ? (int)json_object_array_length(json_object_object_get(cmp, "points")) : 0;

	json_object_put(cmp);
	return n > 0;
}

/* One side of a compare's heading: "A = NAME", and "(status failed)"
 * after a run that did not end ok, as the text compare's head says. */
static void
compare_head_side(FILE *f, char side, const struct rrun *r)
{
	const char *st = js_str(r->doc, "status");

	fprintf(f, "%c = ", side);
	esc(f, r->name);
	if (st[0] && strcmp(st, "ok") != 0) {
		fprintf(f, " <span class=\"status\">(status ");
		esc(f, st);
		fprintf(f, ")</span>");
	}
}

/* A line under a compare table for each point only one of the runs has
 * (only_in_a, only_in_b), as the text compare lists them: a point B
 * lacks is not silently left out of the table. */
static void
only_in(FILE *f, json_object *cmp)
{
	for (int s = 0; s < 2; s++) {
		json_object *arr = json_object_object_get(cmp, s ? "only_in_b" : "only_in_a");

		for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
			json_object *p = json_object_array_get_idx(arr, i);
			char t[160];

			params_title(t, sizeof(t), js_str(p, "kind"), json_object_object_get(p,
			    "params"));
			fprintf(f, "<p class=\"only\">Only in %c: ", s ? 'B' : 'A');
			esc(f, t);
			fprintf(f, ", %lld threads on %lld node(s)</p>\n", (long long)js_num(p, "threads"),
			    (long long)js_num(p, "nodes"));
		}
	}
}

static void
compare_table(FILE *f, const struct rrun *a, const struct rrun *b, int decimal)
{
	char err[512];
	json_object *cmp = results_compare_doc(a->doc, b->doc, 0, err, sizeof(err)), *rows;

	fprintf(f, "<h3>");
	compare_head_side(f, 'A', a);
	fprintf(f, ", ");
	compare_head_side(f, 'B', b);
	fprintf(f, "</h3>\n");
	if (cmp == NULL) {
		fprintf(f, "<p class=\"refused\">Not compared: ");
		esc(f, err);
		fprintf(f, "</p>\n");
		return;
	}
	for (int s = 0; s < 2; s++)
		if (results_compare_status_text(err, sizeof(err), cmp, s) == 0) {
			fprintf(f, "<p class=\"warning\">Warning: ");
			esc(f, err);
			fprintf(f, "</p>\n");
		}
	rows = json_object_object_get(cmp, "points");
	fprintf(f, "<table class=\"compare\"><tr><th>kind</th><th>threads</th><th>nodes</th>"
	    "<th>unit</th><th>A</th><th>B</th><th>change</th><th>p</th><th>p (Holm)</th>"
	    "<th>verdict</th></tr>\n");
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *r = json_object_array_get_idx(rows, i), *v;
		char num[40];
		int metric = rundoc_metric_of(js_str(r, "kind"));

		fprintf(f, "<tr><td>");
		esc(f, js_str(r, "kind"));
		fprintf(f, "</td><td>%lld</td><td>%lld</td><td>%s</td>", (long long)js_num(r,
		    "threads"), (long long)js_num(r, "nodes"), rundoc_unit_name(metric, decimal));
		side_cell(f, r, "a", decimal);
		side_cell(f, r, "b", decimal);
		if (json_object_object_get_ex(r, "change_pct", &v))
			fprintf(f, "<td>%s%%</td>", signed_fmt(num, sizeof(num),
			    json_object_get_double(v), 1));
		else
			fprintf(f, "<td>-</td>");
		for (int k = 0; k < 2; k++)	/* Welch's p, then Holm's over the table */
			if (json_object_object_get_ex(r, k ? "p_adj" : "p", &v)) {
				stats_p_text(num, sizeof(num), json_object_get_double(v));
				fprintf(f, "<td>%s</td>", num);
			} else
				fprintf(f, "<td>-</td>");
		fprintf(f, "<td class=\"verdict\">%s</td></tr>\n", js_str(r, "verdict"));
	}
	fprintf(f, "</table>\n");
	only_in(f, cmp);
	json_object_put(cmp);
}

/* Run r's compare table against the first run before it that it can be
 * compared with; when none can, against the first that shares a point
 * with it, which says why it is not compared; else a line saying it is
 * compared with none (it was left out with nothing said).  Before, the
 * first that shares a point was taken even when it ran elsewhere: of
 * before-ext4, before-xfs, after-ext4, after-xfs the last was refused
 * against before-ext4 and never compared with before-xfs. */
static void
compare_with_earlier(FILE *f, const struct rrun *runs, size_t r, int decimal)
{
	for (int force = 0; force < 2; force++)
		for (size_t k = 0; k < r; k++)
			if (shares_points(&runs[k], &runs[r], force)) {
				compare_table(f, &runs[k], &runs[r], decimal);
				return;
			}
	fprintf(f, "<p class=\"refused\">Not compared: ");
	esc(f, runs[r].name);
	fprintf(f, " has no point (kind and thread count) in common with a run given before "
	    "it.</p>\n");
}

/* A warning naming the keys of the run's profile that were not in effect
 * when it started (runinfo_not_in_effect). */
static void
not_in_effect(FILE *f, json_object *doc)
{
	struct strvec v = { 0 };

	if (runinfo_not_in_effect(doc, &v) == 0)
		return;
	fprintf(f, "<p class=\"warning\"><strong>Warning: %zu setting(s) of this profile were not "
	    "in effect when the run started; the run did not measure the profile as written:"
	    "</strong></p>\n<ul class=\"not-in-effect\">\n", v.n);
	for (size_t i = 0; i < v.n; i++) {
		fprintf(f, "<li>");
		esc(f, v.v[i]);
		fprintf(f, "</li>\n");
	}
	fprintf(f, "</ul>\n");
	strvec_free(&v);
}

/* The run's profile (text, hash) and each node's facts. */
static void
run_info(FILE *f, const struct rrun *r)
{
	json_object *prof = json_object_object_get(r->doc, "profile"), *ni;

	fprintf(f, "<h3>");
	esc(f, r->name);
	fprintf(f, " (run ");
	esc(f, js_str(r->doc, "run_id"));
	fprintf(f, ", ");
	esc(f, js_str(r->doc, "status"));
	fprintf(f, ")</h3>\n<p>");
	esc(f, js_str(r->doc, "play")[0] ? js_str(r->doc, "play") : js_str(r->doc, "command"));
	fprintf(f, "</p>\n<p>Profile: ");
	esc(f, js_str(prof, "name")[0] ? js_str(prof, "name") : "(none: untuned)");
	if (js_str(prof, "sha256")[0]) {	/* escaped as the label is: the file is data */
		fprintf(f, " (sha256 <code>");
		esc(f, js_str(prof, "sha256"));
		fprintf(f, "</code>)");
	}
	fprintf(f, "</p>\n");
	not_in_effect(f, r->doc);
	if (js_str(prof, "text")[0]) {
		fprintf(f, "<pre>");
		esc(f, js_str(prof, "text"));
		fprintf(f, "</pre>\n");
	}
	if (!json_object_object_get_ex(r->doc, "node_info", &ni))
		return;
	fprintf(f, "<table class=\"facts\"><tr><th>node</th><th>active profile</th><th>kernel</th>"
	    "<th>CPU</th><th>memory</th><th>file systems</th></tr>\n");
	for (size_t i = 0; i < json_object_array_length(ni); i++) {
		json_object *n = json_object_array_get_idx(ni, i), *fa, *cpu, *mounts;
		struct strvec fs = { 0 };

		fa = json_object_object_get(n, "facts");
		cpu = json_object_object_get(fa, "cpu");
		fprintf(f, "<tr><td>");
		esc(f, js_str(n, "node"));
		fprintf(f, "</td><td>");
		esc(f, js_str(n, "active_profile")[0] ? js_str(n, "active_profile") : "(none)");
		fprintf(f, "</td><td>");
		esc(f, js_str(fa, "kernel"));
		fprintf(f, "</td><td>");
		esc(f, js_str(cpu, "model"));
		fprintf(f, "</td><td>%lld MiB</td><td>", (long long)js_num(fa, "mem_total_kb") / 1024);
		if (json_object_object_get_ex(fa, "mounts", &mounts))
			for (size_t k = 0; k < json_object_array_length(mounts); k++) {
				const char *t = js_str(json_object_array_get_idx(mounts, k), "fstype");

				if (!strvec_contains(&fs, t))
					strvec_push(&fs, t);
			}
		for (size_t k = 0; k < fs.n; k++) {
			fprintf(f, "%s", k ? " " : "");
			esc(f, fs.v[k]);
		}
		strvec_free(&fs);
		fprintf(f, "</td></tr>\n");
	}
	fprintf(f, "</table>\n");
}

/* A warning above the charts for each run a signal stopped: it is not a
 * complete run, and its charts, peaks and compares hold the phases it
 * finished alone (its status was at the foot of the page only). */
static void
interrupted_warnings(FILE *f, const struct rrun *runs, size_t n)
{
	for (size_t r = 0; r < n; r++) {
		json_object *in = json_object_object_get(runs[r].doc, "interrupted");
		json_object *ph = json_object_object_get(runs[r].doc, "phases");

		if (strcmp(js_str(runs[r].doc, "status"), "interrupted") != 0)
			continue;
		fprintf(f, "<p class=\"warning interrupted\"><strong>Warning: ");
		esc(f, runs[r].name);
		fprintf(f, " was interrupted (");
		esc(f, js_str(in, "signal")[0] ? js_str(in, "signal") : "a signal");
		fprintf(f, " ");
		esc(f, js_str(in, "during")[0] ? js_str(in, "during") : "during the run");
		fprintf(f, "): not a complete run; its charts, peaks and compares hold only the %zu "
		    "of %.0f phase(s) it finished.</strong></p>\n", ph ? json_object_array_length(ph) :
		    0, js_num(in, "phases_planned"));
	}
}

int
report_write(FILE *f, json_object *const *docs, size_t n, int decimal)
{
	struct rrun *runs = xcalloc(n ? n : 1, sizeof(*runs));
	time_t now = time(NULL);
	char ts[64];
	size_t r, i;

	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	for (r = 0; r < n; r++) {
		runs[r].doc = docs[r];
		points_build(docs[r], &runs[r].ps);
		run_name(docs, n, r, &runs[r]);
	}
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	    "<title>knob report</title>\n<style>\n"
	    "body{font-family:sans-serif;margin:2em;color:#222}"
	    "table{border-collapse:collapse;margin:1em 0}"
	    "td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}"
	    "td:first-child,th:first-child{text-align:left}"
	    "figure{display:inline-block;margin:1em}figcaption{font-weight:bold}"
	    ".verdict{font-weight:bold}.repeats{color:#a33}pre{background:#f4f4f4;padding:8px}\n"
	    "</style></head><body>\n<h1>knob benchmark report</h1>\n<p>%zu run(s), written %s. "
	    "Throughput in %s; rand-* in IOPS, md-* in ops/s; error bars are ± one standard "
	    "deviation over the repeats.</p>\n", n, ts, decimal ? "MB/s (decimal)" : "MiB/s (binary)");
	interrupted_warnings(f, runs, n);
	fprintf(f, "<h2>Charts</h2>\n");
	for (r = 0; r < n; r++)
		for (i = 0; i < runs[r].ps.n; i++)
			if (!charted(runs, r, i))
				chart(f, runs, n, &runs[r].ps.p[i], decimal);
	peaks_table(f, runs, n, decimal);
	if (n > 1) {
		fprintf(f, "<h2>Compare</h2>\n<p>Each run (B) against the first run given before it "
		    "on the command line that it can be compared with (A: alike points, the same "
		    "nodes and directories), else the first that has points in common with it. "
		    "Verdicts from Welch's t-test at 95 %% where both runs have repeats, its p "
		    "adjusted over each table (Holm).</p>\n");
		for (r = 1; r < n; r++)
			compare_with_earlier(f, runs, r, decimal);
	}
	fprintf(f, "<h2>Profiles and facts</h2>\n");
	for (r = 0; r < n; r++)
		run_info(f, &runs[r]);
	fprintf(f, "</body></html>\n");
	for (r = 0; r < n; r++) {
		points_free(&runs[r].ps);
		free(runs[r].name);
	}
	free(runs);
	return ferror(f) ? -1 : 0;
}

/* What report_save writes. */
struct report_args {
	json_object *const *docs;
	size_t n;
	int decimal;
};

/* write_file_atomic_with's fill for report_save. */
static int
report_fill(FILE *f, void *arg)
{
	const struct report_args *r = arg;

	return report_write(f, r->docs, r->n, r->decimal);
}

/* report_write into path, whole or not at all (a failure leaves the old
 * page).  0 or -errno. */
int
report_save(const char *path, json_object *const *docs, size_t n, int decimal)
{
	struct report_args r = { docs, n, decimal };

	return write_file_atomic_with(path, 0644, report_fill, &r);
}

/* What --json prints of a report written to path: {"report": path,
 * "runs": [the run ids, in the order given]} (it printed nothing, where
 * --json prints one document). */
static json_object *
report_doc(const char *path, json_object *const *docs, size_t n)
{
	json_object *o = json_object_new_object(), *ids = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(ids, json_object_new_string(js_str(docs[i], "run_id")));
	json_object_object_add(o, "report", json_object_new_string(path));
	json_object_object_add(o, "runs", ids);
	return o;
}

enum { RP_OUT = 'o' };

static const struct opt report_opts[] = {
	{ RP_OUT, "output", OPT_ARG, "FILE.html", "where to write the report (required)", 0 },
	OPT_END
};

int
cmd_report(struct ctl *ctl, int argc, char **argv)
{
	const char *out = NULL;
	json_object **docs = NULL;
	sqlite3 *db = NULL;
	size_t n = 0;
	int ch, rc = 2;

	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		if (ch != RP_OUT)
			return 2;
		out = optarg;
	}
	if (out == NULL || optind >= argc) {
		fprintf(stderr, "knobctl report: RUN... and -o FILE.html are required\n");
		return 2;
	}
	if ((db = results_open_existing(ctl)) == NULL)
		return 2;
	docs = xcalloc((size_t)(argc - optind), sizeof(*docs));
	for (int i = optind; i < argc; i++) {
		char err[PATH_MAX + 384], *id;

		if (results_resolve(db, argv[i], &id, err, sizeof(err)) < 0) {
			fprintf(stderr, "knobctl report: %s\n", err);
			goto out;
		}
		if ((docs[n++] = results_load(db, id)) == NULL)
			results_load_error(db, id, err, sizeof(err));
		free(id);
		if (docs[n - 1] == NULL) {
			fprintf(stderr, "knobctl report: %s\n", err);
			goto out;
		}
	}
	if ((rc = report_save(out, docs, n, ctl->units_decimal)) < 0)
		fprintf(stderr, "knobctl report: %s: %s\n", out, strerror(-rc));
	rc = rc < 0 ? 1 : 0;
	if (rc == 0 && ctl->json)
		output_doc(ctl->out, report_doc(out, docs, n));
	else if (rc == 0)
		fprintf(ctl->out, "report of %zu run(s) written to %s\n", n, out);
out:
	for (size_t i = 0; i < n; i++)
		json_object_put(docs[i]);
	free(docs);
	sqlite3_close(db);
	return rc;
}

const struct cmd_entry cmd_report_entry = {
	"report", "RUN... -o FILE.html", "one self-contained HTML page: charts, peak/sustained, compare, profiles",
	0, report_opts, cmd_report,
	"RUN as in results (id, prefix, latest, latest~N).  The page needs nothing from the\n"
	"network: charts are inline SVG, one line per run, with error bars over repeats.\n"
	"Compare tables go by the order given: each RUN is B against the first RUN before it\n"
	"that it can be compared with (A), else the first that shares points with it (saying\n"
	"why not); give the runs oldest first.",
};
