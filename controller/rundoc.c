/* The run document's phase fields, in one table, and everything that walks
 * it: the JSON writer, value lookup for the SQLite binds, and the table
 * printer.  Units: sizes are binary; throughput is shown in one family,
 * binary (MiB/s, GiB/s, as IOR does; the default) or decimal (MB/s, GB/s,
 * as the vendor reports do) with --units; JSON stays in bytes/s and ops/s. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "rundoc.h"
#include "stats.h"
#include "util.h"

#define F(key, col, type, member, hdr, fmt, param) \
	{ key, col, type, offsetof(struct phase_rec, member), hdr, fmt, param }

const struct rundoc_field rundoc_phase_fields[] = {
	F("phase_id", "phase_id", RF_TEXT, phase_id, NULL, RFF_NONE, 0),
	F("kind", "kind", RF_TEXT, kind, "KIND", RFF_STR, 1),
	F("threads", "threads", RF_INT, threads, "THREADS", RFF_INT, 1),
	F("repeat", "repeat_idx", RF_INT, repeat, NULL, RFF_NONE, 0),
	/* 8 threads on 4 nodes are not 8 threads on 8 nodes; a sweep puts
	 * fewer threads than nodes on fewer nodes, so not the workload's */
	F("nodes", "nodes", RF_INT, nodes, "NODES", RFF_INT, RP_PLACE),
	F("params.block_size", "block_size", RF_INT, block_size, "BS", RFF_SIZE, 1),
	F("params.file_size", "file_size", RF_INT, file_size, "SIZE", RFF_SIZE, 1),
	F("params.direct", "direct", RF_BOOL, direct, "DIRECT", RFF_BOOL, 1),
	F("params.fsync", "fsync", RF_BOOL, fsync, "FSYNC", RFF_BOOL, 1),
	F("params.shared", "shared", RF_BOOL, shared, "SHARED", RFF_BOOL, 1),
	F("params.files_per_dir", "files_per_dir", RF_INT, files_per_dir, NULL, RFF_NONE, 1),
	F("params.md_files", "md_files", RF_INT, md_files, NULL, RFF_NONE, 1),
	F("params.write_size", "write_size", RF_INT, write_size, NULL, RFF_NONE, 1),
	F("params.stonewall_s", "stonewall_s", RF_INT, stonewall_s, NULL, RFF_NONE, 1),
	F("params.drop_caches", "drop_caches", RF_BOOL, drop_caches, NULL, RFF_NONE, 1),
	F("params.reader_shift", "reader_shift", RF_INT, reader_shift, NULL, RFF_NONE, 1),
	F("params.stripe_count", "stripe_count", RF_INT, stripe_count, NULL, RFF_NONE, 1),
	F("params.stripe_size", "stripe_size", RF_INT, stripe_size, NULL, RFF_NONE, 1),
	/* the buffers' pages change what a device is handed only with O_DIRECT:
	 * a buffered copy measured the same from either (README) */
	F("params.buffer_pages", "buffer_pages", RF_TEXT, buffer_pages, NULL, RFF_NONE, RP_DIRECT),
	/* pinned threads against floating ones: ext4 md-create moved 1.5x (README) */
	F("params.cpu_bind", "cpu_bind", RF_TEXT, cpu_bind, NULL, RFF_NONE, 1),
	F("params.dir", "dir", RF_TEXT, dir, NULL, RFF_NONE, 0),
	F("params.workload", "workload", RF_TEXT, workload, NULL, RFF_NONE, 0),
	F("rate", "rate", RF_REAL, rate, "RESULT", RFF_RATE, 0),
	F("ops_rate", "ops_rate", RF_REAL, ops_rate, NULL, RFF_NONE, 0),
	F("first_done_rate", "first_done_rate", RF_REAL, first_done_rate, NULL, RFF_NONE, 0),
	F("last_done_rate", "last_done_rate", RF_REAL, last_done_rate, NULL, RFF_NONE, 0),
	F("unit", "unit", RF_TEXT, unit, NULL, RFF_NONE, 0),
	F("bytes", "bytes", RF_INT, bytes, NULL, RFF_NONE, 0),
	F("ops", "ops", RF_INT, ops, NULL, RFF_NONE, 0),
	F("elapsed_s", "elapsed_s", RF_REAL, elapsed_s, NULL, RFF_NONE, 0),
	F("cpu_s", "cpu_s", RF_REAL, cpu_s, NULL, RFF_NONE, 0),
	F("latency.count", "lat_count", RF_INT, lat_count, NULL, RFF_NONE, 0),
	F("latency.p50_ns", "p50_ns", RF_INT, p50_ns, "P50", RFF_NS, 0),
	F("latency.p99_ns", "p99_ns", RF_INT, p99_ns, "P99", RFF_NS, 0),
	F("latency.p999_ns", "p999_ns", RF_INT, p999_ns, "P99.9", RFF_NS, 0),
	F("start_spread_s", "start_spread_s", RF_REAL, start_spread_s, "SPREAD", RFF_SECS, 0),
	F("status", "status", RF_TEXT, status, "STATUS", RFF_STR, 0),
};
const size_t rundoc_nphase_fields = nitems(rundoc_phase_fields);

/* The object that holds the leaf of key ("obj.leaf" or "leaf"; created in
 * ph when create), and the leaf name in *leaf. */
static json_object *
field_parent(json_object *ph, const char *key, int create, const char **leaf)
{
	const char *dot = strchr(key, '.');
	json_object *sub;
	char obj[32];

	*leaf = dot ? dot + 1 : key;
	if (dot == NULL)
		return ph;
	snprintf(obj, sizeof(obj), "%.*s", (int)(dot - key), key);
	if (json_object_object_get_ex(ph, obj, &sub))
		return sub;
	if (!create)
		return NULL;
	sub = json_object_new_object();
	json_object_object_add(ph, obj, sub);
	return sub;
}

json_object *
rundoc_phase_json(const struct phase_rec *r)
{
	json_object *ph = json_object_new_object();

	for (size_t i = 0; i < rundoc_nphase_fields; i++) {
		const struct rundoc_field *f = &rundoc_phase_fields[i];
		const char *p = (const char *)r + f->off, *leaf, *s;
		json_object *parent = field_parent(ph, f->key, 1, &leaf), *v = NULL;

		switch (f->type) {
		case RF_INT: v = json_object_new_int64(*(const int64_t *)(const void *)p); break;
		case RF_REAL: v = json_object_new_double(*(const double *)(const void *)p); break;
		case RF_BOOL: v = json_object_new_boolean(*(const int *)(const void *)p); break;
		case RF_TEXT:
			s = *(const char *const *)(const void *)p;
			v = json_object_new_string(s ? s : "");
			break;
		}
		json_object_object_add(parent, leaf, v);
	}
	return ph;
}

json_object *
rundoc_value_at(json_object *ph, const char *key)
{
	const char *leaf;
	json_object *parent = field_parent(ph, key, 0, &leaf), *v;

	if (parent && json_object_object_get_ex(parent, leaf, &v))
		return v;
	return NULL;
}

void
rundoc_finite(json_object *o)
{
	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, k, v) {
			if (json_object_is_type(v, json_type_double) &&
			    !isfinite(json_object_get_double(v)))
				json_object_object_add(o, k, NULL);	/* same key: in place */
			else
				rundoc_finite(v);
		}
	} else if (json_object_is_type(o, json_type_array))
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			json_object *v = json_object_array_get_idx(o, i);

			if (json_object_is_type(v, json_type_double) &&
			    !isfinite(json_object_get_double(v)))
				json_object_array_put_idx(o, i, NULL);
			else
				rundoc_finite(v);
		}
}

json_object *
rundoc_value(json_object *ph, const struct rundoc_field *f)
{
	return rundoc_value_at(ph, f->key);
}

const struct rundoc_field *
rundoc_field(const char *key)
{
	for (size_t i = 0; i < rundoc_nphase_fields; i++)
		if (strcmp(rundoc_phase_fields[i].key, key) == 0)
			return &rundoc_phase_fields[i];
	return NULL;
}

json_object *
rundoc_hist_json(const Knob__PhaseResult *const *res, size_t n)
{
	struct hist *h = xmalloc(sizeof(*h));
	json_object *o = json_object_new_object(), *idx, *cnt;

	hist_init(h);
	for (size_t i = 0; i < n; i++)
		if (res[i] && res[i]->latency)
			(void)hist_merge_proto(h, res[i]->latency);
	idx = json_object_new_array();
	cnt = json_object_new_array();
	for (unsigned b = 0; b < HIST_NBUCKETS; b++)
		if (h->count[b]) {
			json_object_array_add(idx, json_object_new_int64(b));
			json_object_array_add(cnt, json_object_new_int64((int64_t)h->count[b]));
		}
	json_object_object_add(o, "total", json_object_new_int64((int64_t)h->total));
	json_object_object_add(o, "min_ns", json_object_new_int64(h->total ? (int64_t)h->min : 0));
	json_object_object_add(o, "max_ns", json_object_new_int64((int64_t)h->max));
	json_object_object_add(o, "idx", idx);
	json_object_object_add(o, "count", cnt);
	free(h);
	return o;
}

int
rundoc_metric_of(const char *kind)
{
	if (strncmp(kind, "md-", 3) == 0 || strcmp(kind, "mdtest") == 0)
		return M_OPS;
	if (strncmp(kind, "rand-", 5) == 0)
		return M_IOPS;
	return M_BW;
}

int
rundoc_metric(json_object *ph, double *out)
{
	json_object *v;
	double el = js_num(ph, "elapsed_s");

	if (strcmp(js_str(ph, "status"), "ok") != 0)
		return -1;
	if (rundoc_metric_of(js_str(ph, "kind")) == M_IOPS) {
		if (json_object_object_get_ex(ph, "ops_rate", &v))
			*out = json_object_get_double(v);
		else
			*out = el > 0 ? js_num(ph, "ops") / el : 0;
	} else
		*out = js_num(ph, "rate");
	/* inf (a phase timed at 0 s) or NaN measured nothing: no figure */
	return isfinite(*out) && *out > 0 ? 0 : -1;
}

const char *
rundoc_unit_name(int metric, int decimal)
{
	if (metric == M_IOPS)
		return "IOPS";
	if (metric == M_OPS)
		return "ops/s";
	return decimal ? "MB/s" : "MiB/s";
}

double
rundoc_scale(double v, int metric, int decimal)
{
	if (metric != M_BW)
		return v;
	return decimal ? v / 1e6 : v / 1048576.0;
}

void
rundoc_fmt_rate(char *buf, size_t len, double v, int metric, int decimal)
{
	double g = decimal ? 1e9 : 1073741824.0;

	if (metric == M_IOPS)
		snprintf(buf, len, "%.0f IOPS", v);
	else if (metric == M_OPS)
		snprintf(buf, len, "%.0f ops/s", v);
	else if (v >= g)
		snprintf(buf, len, "%.2f %s", v / g, decimal ? "GB/s" : "GiB/s");
	else
		snprintf(buf, len, "%.1f %s", rundoc_scale(v, M_BW, decimal), decimal ? "MB/s" : "MiB/s");
}

static void
fmt_ns(char *buf, size_t len, double ns)
{
	if (ns <= 0)
		snprintf(buf, len, "-");
	else if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}

/* A point's figure: "mean ± sd" with two repeats or more that have one,
 * the mean alone with one, "-" when every repeat failed. */
static void
fmt_point_rate(char *buf, size_t len, const struct point *pt, int decimal)
{
	char m[32], s[32];

	if (pt->st.n == 0) {
		snprintf(buf, len, "-");
		return;
	}
	rundoc_fmt_rate(m, sizeof(m), pt->st.mean, pt->metric, decimal);
	if (pt->st.n < 2) {
		snprintf(buf, len, "%s", m);
		return;
	}
	/* the sd in the mean's unit: format it alone and drop the unit */
	if (pt->metric == M_BW) {
		double g = decimal ? 1e9 : 1073741824.0;
		double sc = pt->st.mean >= g ? pt->st.sd / g : rundoc_scale(pt->st.sd, M_BW, decimal);

		snprintf(s, sizeof(s), pt->st.mean >= g ? "%.2f" : "%.1f", sc);
	} else
		snprintf(s, sizeof(s), "%.0f", pt->st.sd);
	/* "1.23 ± 0.05 GiB/s" */
	{
		char *sp = strchr(m, ' ');

		if (sp)
			snprintf(buf, len, "%.*s ± %s%s", (int)(sp - m), m, s, sp);
		else
			snprintf(buf, len, "%s ± %s", m, s);
	}
}

/* A degraded phase shows its own figure, though no mean or compare takes
 * it: a partial sum (a node lost mid-phase) as "1.2 GiB/s partial", its
 * threads as "3/4" (reported/planned); one whose threads all ran on the
 * nodes left (a node lost before it) as its figure. */
static int
fmt_partial(char *buf, size_t len, const struct rundoc_field *f, const struct point *pt,
    int decimal)
{
	json_object *v;
	char r[32];
	int partial;

	if (pt->nphases != 1)
		return 0;
	partial = json_object_object_get_ex(pt->first, "partial", &v) && json_object_get_boolean(v);
	if (!partial && strcmp(js_str(pt->first, "status"), "degraded") != 0)
		return 0;
	if (f->fmt == RFF_RATE) {
		rundoc_fmt_rate(r, sizeof(r), js_num(pt->first, pt->metric == M_IOPS ? "ops_rate" :
		    "rate"), pt->metric, decimal);
		snprintf(buf, len, "%s%s", r, partial ? " partial" : "");
		return 1;
	}
	if (partial && f->fmt == RFF_INT && strcmp(f->key, "threads") == 0) {
		snprintf(buf, len, "%lld/%lld", (long long)js_num(pt->first, "threads_reported"),
		    (long long)js_num(pt->first, "threads"));
		return 1;
	}
	return 0;
}

/* Field f (a latency or the start spread) of a point with repeats: the
 * median over the repeats that did not fail (those the mean beside it
 * counts), not the first one's figure.  0 when none has it. */
static double
repeats_median(const struct rundoc_field *f, const struct point *pt)
{
	double *v = xcalloc(pt->nphases, sizeof(*v)), m;
	size_t n = 0;

	for (size_t i = 0; i < pt->nphases; i++) {
		json_object *x = rundoc_value(pt->ph[i], f);
		double ok;

		if (x != NULL && json_object_get_double(x) > 0 && rundoc_metric(pt->ph[i], &ok) == 0)
			v[n++] = json_object_get_double(x);
	}
	m = n ? stats_median(v, n) : 0;
	free(v);
	return m;
}

/* The status of a point: its first repeat that is not ok, else "ok". */
static const char *
repeats_status(const struct point *pt)
{
	for (size_t i = 0; i < pt->nphases; i++)
		if (strcmp(js_str(pt->ph[i], "status"), "ok") != 0)
			return js_str(pt->ph[i], "status");
	return "ok";
}

/* One cell of the table for field f of point pt: with repeats, latencies
 * and the spread are their median, the status the worst one's. */
static void
fmt_cell(char *buf, size_t len, const struct rundoc_field *f, const struct point *pt, int decimal)
{
	json_object *v = rundoc_value(pt->first, f);

	if (pt->nphases > 1 && (f->fmt == RFF_NS || f->fmt == RFF_SECS)) {
		double m = repeats_median(f, pt);

		fmt_ns(buf, len, f->fmt == RFF_SECS ? m * 1e9 : m);
		if (f->fmt == RFF_SECS && m == 0)
			snprintf(buf, len, "0");
		return;
	}
	if (pt->nphases > 1 && strcmp(f->key, "status") == 0) {
		snprintf(buf, len, "%s", repeats_status(pt));
		return;
	}

	if (fmt_partial(buf, len, f, pt, decimal))
		return;
	switch (f->fmt) {
	case RFF_RATE: fmt_point_rate(buf, len, pt, decimal); return;
	case RFF_STR: snprintf(buf, len, "%s", v ? json_object_get_string(v) : ""); return;
	case RFF_INT: snprintf(buf, len, "%lld", v ? (long long)json_object_get_int64(v) : 0LL); return;
	case RFF_NS: fmt_ns(buf, len, v ? json_object_get_double(v) : 0); return;
	case RFF_SECS:
		if (v == NULL || json_object_get_double(v) == 0)
			snprintf(buf, len, "0");
		else
			fmt_ns(buf, len, json_object_get_double(v) * 1e9);
		return;
	case RFF_SIZE:
		if (pt->metric == M_OPS)
			snprintf(buf, len, "-");	/* metadata: files, not blocks */
		else
			size_fmt(buf, len, v ? (uint64_t)json_object_get_int64(v) : 0);
		return;
	case RFF_BOOL: snprintf(buf, len, "%s", v && json_object_get_boolean(v) ? "yes" : "no"); return;
	default: snprintf(buf, len, "-"); return;
	}
}

/* Printed width of s (UTF-8 aware: "±" is one column). */
static int
cols(const char *s)
{
	int n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

void
rundoc_pad(FILE *f, const char *s, int width, int left)
{
	int n = cols(s);

	if (!left)
		for (; n < width; n++)
			fputc(' ', f);
	fputs(s, f);
	if (left)
		for (; n < width; n++)
			fputc(' ', f);
}

void
rundoc_print(FILE *f, json_object *doc, int decimal)
{
	struct pointset ps;
	int w[rundoc_nphase_fields];
	size_t i, k;
	char cell[96];

	points_build(doc, &ps);
	fprintf(f, "run %s on %s%s%s\n", js_str(doc, "run_id"), js_str(doc, "nodeset"),
	    js_str(doc, "label")[0] ? "  label " : "", js_str(doc, "label"));
	/* column widths: the header or the widest cell */
	for (k = 0; k < rundoc_nphase_fields; k++) {
		const struct rundoc_field *fd = &rundoc_phase_fields[k];

		w[k] = fd->header ? cols(fd->header) : 0;
		for (i = 0; fd->header && i < ps.n; i++) {
			fmt_cell(cell, sizeof(cell), fd, &ps.p[i], decimal);
			w[k] = cols(cell) > w[k] ? cols(cell) : w[k];
		}
	}
	for (k = 0; k < rundoc_nphase_fields; k++)
		if (rundoc_phase_fields[k].header) {
			rundoc_pad(f, rundoc_phase_fields[k].header, w[k],
			    rundoc_phase_fields[k].fmt == RFF_STR);
			fputs("  ", f);
		}
	fputc('\n', f);
	for (i = 0; i < ps.n; i++) {
		for (k = 0; k < rundoc_nphase_fields; k++) {
			const struct rundoc_field *fd = &rundoc_phase_fields[k];

			if (!fd->header)
				continue;
			fmt_cell(cell, sizeof(cell), fd, &ps.p[i], decimal);
			rundoc_pad(f, cell, w[k], fd->fmt == RFF_STR);
			fputs("  ", f);
		}
		if (ps.p[i].nphases > 1 && ps.p[i].st.n == 0)	/* no figure, not a 0 one */
			fprintf(f, "0 of %zu repeats ok", ps.p[i].nphases);
		else if (ps.p[i].nphases > 1) {
			char lo[32], hi[32];

			rundoc_fmt_rate(lo, sizeof(lo), ps.p[i].st.min, ps.p[i].metric, decimal);
			rundoc_fmt_rate(hi, sizeof(hi), ps.p[i].st.max, ps.p[i].metric, decimal);
			fprintf(f, "%zu of %zu repeats ok, min %s, max %s", ps.p[i].st.n,
			    ps.p[i].nphases, lo, hi);
		}
		fputc('\n', f);
	}
	points_free(&ps);
	rundoc_print_peaks(f, doc, decimal);
}

static void print_left_out(FILE *f, const struct pointset *ps);

void
rundoc_print_peaks(FILE *f, json_object *doc, int decimal)
{
	struct pointset ps;
	struct peak *pk;
	size_t n, i;

	points_build(doc, &ps);
	n = stats_peaks(&ps, &pk);
	if (n) {
		fprintf(f, "\npeak and sustained (sustained = median from the peak's thread count on)\n");
		fprintf(f, "%-11s %5s %6s %-6s %-6s %-6s %18s %8s %18s %s\n", "WORKLOAD", "BS", "SIZE",
		    "DIRECT", "FSYNC", "SHARED", "PEAK", "AT", "SUSTAINED", "THREADS");
	}
	for (i = 0; i < n; i++) {
		json_object *ph = ps.p[pk[i].first].first, *pr;
		char bs[16], sz[16], a[32], b[32];

		json_object_object_get_ex(ph, "params", &pr);
		size_fmt(bs, sizeof(bs), (uint64_t)js_num(pr, "block_size"));
		size_fmt(sz, sizeof(sz), (uint64_t)js_num(pr, "file_size"));
		if (pk[i].metric == M_OPS) {
			snprintf(bs, sizeof(bs), "-");
			snprintf(sz, sizeof(sz), "-");
		}
		rundoc_fmt_rate(a, sizeof(a), pk[i].peak, pk[i].metric, decimal);
		rundoc_fmt_rate(b, sizeof(b), pk[i].sustained, pk[i].metric, decimal);
		fprintf(f, "%-11s %5s %6s %-6s %-6s %-6s %18s %8lld %18s %lld..%lld\n",
		    ps.p[pk[i].first].kind, bs, sz,
		    json_object_get_boolean(json_object_object_get(pr, "direct")) ? "yes" : "no",
		    json_object_get_boolean(json_object_object_get(pr, "fsync")) ? "yes" : "no",
		    json_object_get_boolean(json_object_object_get(pr, "shared")) ? "yes" : "no",
		    a, (long long)pk[i].peak_threads, b, (long long)pk[i].min_threads,
		    (long long)pk[i].max_threads);
	}
	print_left_out(f, &ps);
	free(pk);
	points_free(&ps);
}

char *
rundoc_left_out(const struct pointset *ps, size_t first)
{
	char *out = NULL;

	for (size_t i = first; i < ps->n; i++) {
		const struct point *pt = &ps->p[i];
		size_t k;

		if (pt->st.n || !points_same_workload(&ps->p[first], pt, NULL, 0) ||
		    !points_workload_rep(ps, i))
			continue;
		for (k = first; k < i; k++)	/* said already (on other nodes) */
			if (ps->p[k].threads == pt->threads && !ps->p[k].st.n &&
			    points_same_workload(&ps->p[first], &ps->p[k], NULL, 0))
				break;
		if (k < i)
			continue;
		if (out == NULL)
			out = xstrdup("");
		str_appendf(&out, "%s%lld thread%s (%s)", out[0] ? ", " : "",
		    (long long)pt->threads, pt->threads == 1 ? "" : "s", repeats_status(pt));
	}
	if (out)
		str_appendf(&out, " not in the peak and sustained: a degraded or failed phase has no "
		    "figure a mean takes");
	return out;
}

/* Under the peak table: each workload's thread counts it leaves out, so
 * that a peak of the points left is not read as the run's. */
static void
print_left_out(FILE *f, const struct pointset *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		char *why = points_workload_first(ps, i) ? rundoc_left_out(ps, i) : NULL;
		json_object *pr = json_object_object_get(ps->p[i].first, "params");
		char bs[16];

		if (why == NULL)
			continue;
		size_fmt(bs, sizeof(bs), (uint64_t)js_num(pr, "block_size"));
		if (ps->p[i].metric == M_OPS)
			fprintf(f, "note: %s: %s\n", ps->p[i].kind, why);
		else
			fprintf(f, "note: %s bs %s: %s\n", ps->p[i].kind, bs, why);
		free(why);
	}
}
