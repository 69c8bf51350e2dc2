/* knobctl results list | show RUN | compare A B [--force], each with
 * --json and --csv.  RUN is an id, an unambiguous id prefix, latest or
 * latest~N.
 *
 * compare matches points by kind, every parameter and thread count;
 * points of the same kind and thread count whose parameters differ are
 * "unlike" and refused unless --force; points only one run has are listed.
 * With repeats on both sides each line gets Welch's verdict at 95 %
 * (stats.h): better, worse or within noise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_ctl.h"
#include "results.h"
#include "rundoc.h"
#include "stats.h"
#include "util.h"

enum { OUT_TEXT, OUT_JSON, OUT_CSV };

/* "2026-12-01 08:37:21.123" in local time. */
static void
fmt_time(char *buf, size_t len, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	char s[32];

	localtime_r(&t, &tm);
	strftime(s, sizeof(s), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03lld", s, (long long)(ns / 1000000 % 1000));
}

/* One CSV field, quoted when it needs to be. */
static void
csv_field(FILE *f, const char *s, int last)
{
	if (strpbrk(s, ",\"\n")) {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else
		fputs(s, f);
	fputc(last ? '\n' : ',', f);
}

/* Rows (JSON objects) as CSV: a header of keys, then one line per row;
 * numbers as JSON prints them. */
static void
csv_rows(FILE *f, const char *const *keys, size_t nkeys, json_object *rows)
{
	for (size_t k = 0; k < nkeys; k++)
		csv_field(f, keys[k], k + 1 == nkeys);
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *r = json_object_array_get_idx(rows, i), *v;

		for (size_t k = 0; k < nkeys; k++)
			csv_field(f, json_object_object_get_ex(r, keys[k], &v) && v ?
			    json_object_get_string(v) : "", k + 1 == nkeys);
	}
}

static void
put_json(FILE *f, json_object *o)
{
	fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
}

static json_object *
jstr(const char *s)
{
	return json_object_new_string(s ? s : "");
}

static int
results_list(struct ctl *ctl, sqlite3 *db, int mode)
{
	static const char *const keys[] = {
		"run_id", "started", "started_ns", "label", "profile", "nodeset", "status",
		"phases", "kinds", "command", "play",
	};
	struct run_row *r;
	json_object *rows;
	size_t n;

	if (results_runs(db, &r, &n) < 0) {
		fprintf(stderr, "knobctl results: %s\n", sqlite3_errmsg(db));
		return 1;
	}
	rows = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();
		char ts[48];

		fmt_time(ts, sizeof(ts), r[i].started_ns);
		json_object_object_add(o, "run_id", jstr(r[i].id));
		json_object_object_add(o, "started", jstr(ts));
		json_object_object_add(o, "started_ns", json_object_new_int64(r[i].started_ns));
		json_object_object_add(o, "label", jstr(r[i].label));
		json_object_object_add(o, "profile", jstr(r[i].profile));
		json_object_object_add(o, "profile_sha256", jstr(r[i].profile_hash));
		json_object_object_add(o, "nodeset", jstr(r[i].nodeset));
		json_object_object_add(o, "status", jstr(r[i].status));
		json_object_object_add(o, "phases", json_object_new_int64(r[i].phases));
		json_object_object_add(o, "kinds", jstr(r[i].kinds));
		json_object_object_add(o, "command", jstr(r[i].command));
		json_object_object_add(o, "play", jstr(r[i].play));
		json_object_array_add(rows, o);
	}
	if (mode == OUT_JSON)
		put_json(ctl->out, rows);
	else if (mode == OUT_CSV)
		csv_rows(ctl->out, keys, nitems(keys), rows);
	else {
		fprintf(ctl->out, "%-22s %-23s %-14s %-20s %-16s %-12s %6s  %s\n", "RUN", "STARTED",
		    "LABEL", "PROFILE", "NODES", "STATUS", "PHASES", "KINDS");
		for (size_t i = 0; i < n; i++) {
			json_object *o = json_object_array_get_idx(rows, i);

			fprintf(ctl->out, "%-22s %-23s %-14s %-20s %-16s %-12s %6lld  %s\n",
			    r[i].id, js_str(o, "started"), r[i].label[0] ? r[i].label : "-",
			    r[i].profile[0] ? r[i].profile : "(none)", r[i].nodeset, r[i].status,
			    (long long)r[i].phases, r[i].kinds);
		}
	}
	json_object_put(rows);
	results_runs_free(r, n);
	return 0;
}

/* Per phase: every rundoc field as a CSV column. */
static void
show_csv(FILE *f, json_object *doc)
{
	const char **keys = xcalloc(rundoc_nphase_fields + 2, sizeof(*keys));
	json_object *rows = json_object_new_array(), *phases;
	size_t k, nk = 0;

	keys[nk++] = "run_id";
	for (k = 0; k < rundoc_nphase_fields; k++)
		keys[nk++] = rundoc_phase_fields[k].column;
	keys[nk++] = "figure";
	if (json_object_object_get_ex(doc, "phases", &phases))
		for (size_t i = 0; i < json_object_array_length(phases); i++) {
			json_object *ph = json_object_array_get_idx(phases, i);
			json_object *o = json_object_new_object(), *v;
			double fig;

			json_object_object_add(o, "run_id", jstr(js_str(doc, "run_id")));
			for (k = 0; k < rundoc_nphase_fields; k++)
				if ((v = rundoc_value(ph, &rundoc_phase_fields[k])) != NULL)
					json_object_object_add(o, rundoc_phase_fields[k].column,
					    json_object_get(v));
			if (rundoc_metric(ph, &fig) == 0)
				json_object_object_add(o, "figure", json_object_new_double(fig));
			json_object_array_add(rows, o);
		}
	csv_rows(f, keys, nk, rows);
	json_object_put(rows);
	free(keys);
}

/* Load the run spec names; NULL after printing why. */
static json_object *
load_spec(sqlite3 *db, const char *spec)
{
	char err[256], *id;
	json_object *doc;

	if (results_resolve(db, spec, &id, err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl results: %s\n", err);
		return NULL;
	}
	doc = results_load(db, id);
	if (doc == NULL)
		fprintf(stderr, "knobctl results: run %s cannot be read\n", id);
	free(id);
	return doc;
}

/* The run's profile and what each node reported as active. */
static void
print_profile(FILE *f, json_object *doc)
{
	json_object *prof = json_object_object_get(doc, "profile"), *ni;

	if (js_str(doc, "play")[0])
		fprintf(f, "play %s (%s, sha256 %.16s)\n", js_str(doc, "play"), js_str(doc, "play_file"),
		    js_str(doc, "play_sha256")[0] ? js_str(doc, "play_sha256") : "not recorded");
	if (prof && js_str(prof, "name")[0])
		fprintf(f, "profile %s (sha256 %.16s)\n", js_str(prof, "name"), js_str(prof, "sha256"));
	else
		fprintf(f, "profile (none: untuned)\n");
	if (!json_object_object_get_ex(doc, "node_info", &ni))
		return;
	for (size_t i = 0; i < json_object_array_length(ni); i++) {
		json_object *n = json_object_array_get_idx(ni, i), *fa = json_object_object_get(n, "facts");

		fprintf(f, "  %s: active %s, kernel %s, %lld MiB\n", js_str(n, "node"),
		    js_str(n, "active_profile")[0] ? js_str(n, "active_profile") : "(none)",
		    js_str(fa, "kernel"), (long long)js_num(fa, "mem_total_kb") / 1024);
	}
}

/* Who wrote a run that did not finish, and when it was last heard of. */
static void
print_writer(FILE *f, json_object *doc)
{
	json_object *w = json_object_object_get(doc, "writer");
	const char *st = js_str(doc, "status");
	double ago;

	if (w == NULL || (strcmp(st, "running") != 0 && strcmp(st, "incomplete") != 0))
		return;
	ago = ((double)now_real_ns() - js_num(w, "heartbeat_ns")) / 1e9;
	fprintf(f, "written by knobctl pid %lld on %s (boot %.8s), last heartbeat %.0f s ago%s\n",
	    (long long)js_num(w, "pid"), js_str(w, "host"), js_str(w, "boot_id")[0] ?
	    js_str(w, "boot_id") : "unknown", ago, strcmp(st, "incomplete") == 0 ?
	    ": that knobctl is gone, the phases stored are all there is" : "");
}

static int
results_show(struct ctl *ctl, sqlite3 *db, const char *spec, int mode)
{
	json_object *doc = load_spec(db, spec);

	if (doc == NULL)
		return 2;
	if (mode == OUT_JSON)
		put_json(ctl->out, doc);
	else if (mode == OUT_CSV)
		show_csv(ctl->out, doc);
	else {
		char ts[48];

		fmt_time(ts, sizeof(ts), (int64_t)js_num(doc, "started_ns"));
		fprintf(ctl->out, "status %s  started %s  %s%s\n", js_str(doc, "status"), ts,
		    js_str(doc, "play")[0] ? "play " : "", js_str(doc, "play")[0] ?
		    js_str(doc, "play") : js_str(doc, "command"));
		print_writer(ctl->out, doc);
		print_profile(ctl->out, doc);
		bench_print_table(ctl->out, doc, ctl->units_decimal);
	}
	json_object_put(doc);
	return 0;
}

/* The point's description: "seq-write 4 threads bs=1m size=64m". */
static json_object *
point_json(const struct point *p)
{
	json_object *o = json_object_new_object(), *pr;

	json_object_object_add(o, "kind", jstr(p->kind));
	json_object_object_add(o, "threads", json_object_new_int64(p->threads));
	if (json_object_object_get_ex(p->first, "params", &pr))
		json_object_object_add(o, "params", json_object_get(pr));
	return o;
}

static void
add_side(json_object *row, const char *pre, const struct point *p)
{
	char k[32];

	snprintf(k, sizeof(k), "%s_n", pre);
	json_object_object_add(row, k, json_object_new_int64((int64_t)p->st.n));
	snprintf(k, sizeof(k), "%s_mean", pre);
	json_object_object_add(row, k, json_object_new_double(p->st.mean));
	snprintf(k, sizeof(k), "%s_sd", pre);
	json_object_object_add(row, k, json_object_new_double(p->st.sd));
	snprintf(k, sizeof(k), "%s_min", pre);
	json_object_object_add(row, k, json_object_new_double(p->st.min));
	snprintf(k, sizeof(k), "%s_max", pre);
	json_object_object_add(row, k, json_object_new_double(p->st.max));
}

/* One compare line for points a and b. */
static json_object *
compare_row(const struct point *a, const struct point *b, const char *unlike)
{
	static const char *const unit[] = { [M_BW] = "B/s", [M_IOPS] = "IOPS", [M_OPS] = "ops/s" };
	json_object *row = point_json(a);
	struct welch w;

	stats_welch(&a->st, &b->st, &w);
	json_object_object_add(row, "unit", jstr(unit[a->metric]));
	add_side(row, "a", a);
	add_side(row, "b", b);
	if (a->st.n && b->st.n && a->st.mean > 0)
		json_object_object_add(row, "change_pct", json_object_new_double(
		    (b->st.mean - a->st.mean) / a->st.mean * 100));
	if (w.valid) {
		json_object_object_add(row, "t", json_object_new_double(isfinite(w.t) ? w.t :
		    (w.t > 0 ? 1e300 : -1e300)));
		json_object_object_add(row, "df", json_object_new_double(w.df));
		json_object_object_add(row, "p", json_object_new_double(w.p));
	}
	json_object_object_add(row, "verdict", jstr(stats_verdict_name(stats_verdict(&w))));
	if (unlike)
		json_object_object_add(row, "unlike", jstr(unlike));
	return row;
}

json_object *
results_compare_doc(json_object *da, json_object *db, int force, char *err, size_t errlen)
{
	struct pointset pa, pb;
	json_object *out = json_object_new_object(), *rows = json_object_new_array();
	json_object *oa = json_object_new_array(), *ob = json_object_new_array();
	json_object *unl = json_object_new_array();
	char *used;
	size_t i, k;

	points_build(da, &pa);
	points_build(db, &pb);
	used = xcalloc(pb.n ? pb.n : 1, 1);
	for (i = 0; i < pa.n; i++) {
		const struct point *a = &pa.p[i];
		const char *diff = NULL;
		size_t like = SIZE_MAX, other = SIZE_MAX;

		for (k = 0; k < pb.n; k++) {
			if (used[k] || strcmp(pb.p[k].kind, a->kind) || pb.p[k].threads != a->threads)
				continue;
			if (points_same_params(a, &pb.p[k], NULL)) {
				like = k;
				break;
			}
			if (other == SIZE_MAX) {
				other = k;
				points_same_params(a, &pb.p[k], &diff);
			}
		}
		if (like != SIZE_MAX) {
			used[like] = 1;
			json_object_array_add(rows, compare_row(a, &pb.p[like], NULL));
		} else if (other != SIZE_MAX) {
			json_object *u = point_json(a);

			used[other] = 1;
			json_object_object_add(u, "differs", jstr(diff));
			json_object_array_add(unl, u);
			if (force)
				json_object_array_add(rows, compare_row(a, &pb.p[other], diff));
		} else
			json_object_array_add(oa, point_json(a));
	}
	for (k = 0; k < pb.n; k++)
		if (!used[k])
			json_object_array_add(ob, point_json(&pb.p[k]));
	json_object_object_add(out, "a", jstr(js_str(da, "run_id")));
	json_object_object_add(out, "b", jstr(js_str(db, "run_id")));
	json_object_object_add(out, "a_label", jstr(js_str(da, "label")));
	json_object_object_add(out, "b_label", jstr(js_str(db, "label")));
	json_object_object_add(out, "points", rows);
	json_object_object_add(out, "only_in_a", oa);
	json_object_object_add(out, "only_in_b", ob);
	json_object_object_add(out, "unlike", unl);
	if (json_object_array_length(unl) && !force) {
		json_object *u = json_object_array_get_idx(unl, 0);

		snprintf(err, errlen, "%zu point(s) differ in their parameters (first: %s %lld "
		    "threads, %s); --force compares them anyway", json_object_array_length(unl),
		    js_str(u, "kind"), (long long)js_num(u, "threads"), js_str(u, "differs"));
		json_object_put(out);
		out = NULL;
	}
	free(used);
	points_free(&pa);
	points_free(&pb);
	return out;
}

/* "seq-write 4 threads bs=1m size=64m direct fsync shared" */
static void
point_label(char *buf, size_t len, json_object *p)
{
	json_object *pr = json_object_object_get(p, "params");
	char bs[16], sz[16];

	rundoc_fmt_size(bs, sizeof(bs), (int64_t)js_num(pr, "block_size"));
	rundoc_fmt_size(sz, sizeof(sz), (int64_t)js_num(pr, "file_size"));
	if (rundoc_metric_of(js_str(p, "kind")) == M_OPS)
		snprintf(bs, sizeof(bs), "-"), snprintf(sz, sizeof(sz), "-");
	snprintf(buf, len, "%-10s %4lld %5s %6s %-3s %-3s %-3s", js_str(p, "kind"),
	    (long long)js_num(p, "threads"), bs, sz,
	    json_object_get_boolean(json_object_object_get(pr, "direct")) ? "yes" : "no",
	    json_object_get_boolean(json_object_object_get(pr, "fsync")) ? "yes" : "no",
	    json_object_get_boolean(json_object_object_get(pr, "shared")) ? "yes" : "no");
}

/* "1.23 ± 0.02 GiB/s" of one side of a compare row. */
static void
side_text(char *buf, size_t len, json_object *row, const char *pre, int decimal)
{
	char k[16], m[32], s[32];
	int metric = strcmp(js_str(row, "unit"), "IOPS") == 0 ? M_IOPS :
	    strcmp(js_str(row, "unit"), "ops/s") == 0 ? M_OPS : M_BW;
	double mean, sd;

	snprintf(k, sizeof(k), "%s_n", pre);
	if (js_num(row, k) == 0) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(k, sizeof(k), "%s_mean", pre);
	mean = js_num(row, k);
	snprintf(k, sizeof(k), "%s_sd", pre);
	sd = js_num(row, k);
	snprintf(m, sizeof(m), "%.1f", rundoc_scale(mean, metric, decimal));
	snprintf(s, sizeof(s), "%.1f", rundoc_scale(sd, metric, decimal));
	snprintf(k, sizeof(k), "%s_n", pre);
	if (js_num(row, k) > 1)
		snprintf(buf, len, "%s ± %s", m, s);
	else
		snprintf(buf, len, "%s", m);
}

void
results_print_compare(FILE *f, json_object *cmp, int decimal)
{
	json_object *rows = json_object_object_get(cmp, "points"), *arr;
	static const char *const one[] = { "only_in_a", "only_in_b" };

	fprintf(f, "A = %s%s%s\nB = %s%s%s\n", js_str(cmp, "a"), js_str(cmp, "a_label")[0] ?
	    "  " : "", js_str(cmp, "a_label"), js_str(cmp, "b"), js_str(cmp, "b_label")[0] ?
	    "  " : "", js_str(cmp, "b_label"));
	fprintf(f, "%-10s %4s %5s %6s %-3s %-3s %-3s %-6s %20s %20s %8s %7s  %s\n", "KIND", "THR",
	    "BS", "SIZE", "DIR", "FSY", "SHR", "UNIT", "A (mean ± sd)", "B (mean ± sd)", "CHANGE",
	    "P", "VERDICT");
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *r = json_object_array_get_idx(rows, i), *v;
		char lab[96], a[48], b[48], ch[16] = "-", p[16] = "-";
		int metric = strcmp(js_str(r, "unit"), "IOPS") == 0 ? M_IOPS :
		    strcmp(js_str(r, "unit"), "ops/s") == 0 ? M_OPS : M_BW;

		point_label(lab, sizeof(lab), r);
		side_text(a, sizeof(a), r, "a", decimal);
		side_text(b, sizeof(b), r, "b", decimal);
		if (json_object_object_get_ex(r, "change_pct", &v))
			snprintf(ch, sizeof(ch), "%+.1f%%", json_object_get_double(v));
		if (json_object_object_get_ex(r, "p", &v))
			snprintf(p, sizeof(p), "%.3f", json_object_get_double(v));
		fprintf(f, "%s %-6s ", lab, rundoc_unit_name(metric, decimal));
		rundoc_pad(f, a, 20, 0);
		fputc(' ', f);
		rundoc_pad(f, b, 20, 0);
		fprintf(f, " %8s %7s  %s", ch, p, js_str(r, "verdict"));
		if (js_str(r, "unlike")[0])
			fprintf(f, "  (unlike: %s differs)", js_str(r, "unlike"));
		fputc('\n', f);
	}
	for (size_t s = 0; s < nitems(one); s++) {
		arr = json_object_object_get(cmp, one[s]);
		for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
			char lab[96];

			point_label(lab, sizeof(lab), json_object_array_get_idx(arr, i));
			fprintf(f, "only in %c: %s\n", s ? 'B' : 'A', lab);
		}
	}
}

static int
results_compare(struct ctl *ctl, sqlite3 *db, const char *a, const char *b, int mode, int force)
{
	static const char *const keys[] = {
		"kind", "threads", "unit", "a_n", "a_mean", "a_sd", "a_min", "a_max", "b_n",
		"b_mean", "b_sd", "b_min", "b_max", "change_pct", "t", "df", "p", "verdict", "unlike",
	};
	json_object *da = load_spec(db, a), *dbb = da ? load_spec(db, b) : NULL, *cmp = NULL;
	char err[512];
	int rc = 2;

	if (da == NULL || dbb == NULL)
		goto out;
	if ((cmp = results_compare_doc(da, dbb, force, err, sizeof(err))) == NULL) {
		fprintf(stderr, "knobctl results compare: %s\n", err);
		goto out;
	}
	rc = json_object_array_length(json_object_object_get(cmp, "points")) ? 0 : 1;
	if (rc)
		fprintf(stderr, "knobctl results compare: the runs have no point in common\n");
	if (mode == OUT_JSON)
		put_json(ctl->out, cmp);
	else if (mode == OUT_CSV)
		csv_rows(ctl->out, keys, nitems(keys), json_object_object_get(cmp, "points"));
	else
		results_print_compare(ctl->out, cmp, ctl->units_decimal);
out:
	json_object_put(cmp);
	json_object_put(da);
	json_object_put(dbb);
	return rc;
}

enum { R_CSV = 256, R_FORCE };

static const struct opt results_opts[] = {
	{ R_CSV, "csv", OPT_NOARG, NULL, "comma-separated values (numbers in bytes/s, ops/s)", 0 },
	{ R_FORCE, "force", OPT_NOARG, NULL, "compare: also points whose parameters differ", 0 },
	OPT_END
};

int
cmd_results(struct ctl *ctl, int argc, char **argv)
{
	int mode, csv = 0, force = 0, ch, rc = 2;
	const char *sub;
	sqlite3 *db;

	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		switch (ch) {
		case R_CSV: csv = 1; break;
		case R_FORCE: force = 1; break;
		default: return 2;
		}
	}
	mode = csv ? OUT_CSV : ctl->json ? OUT_JSON : OUT_TEXT;
	argc -= optind;
	argv += optind;
	sub = argc ? argv[0] : "";
	if ((strcmp(sub, "list") == 0 && argc != 1) || (strcmp(sub, "show") == 0 && argc != 2) ||
	    (strcmp(sub, "compare") == 0 && argc != 3) || (strcmp(sub, "list") &&
	    strcmp(sub, "show") && strcmp(sub, "compare"))) {
		opt_help(stderr, ctl->cmd);
		return 2;
	}
	if ((db = results_open(ctl)) == NULL)
		return 1;
	if (strcmp(sub, "list") == 0)
		rc = results_list(ctl, db, mode);
	else if (strcmp(sub, "show") == 0)
		rc = results_show(ctl, db, argv[1], mode);
	else
		rc = results_compare(ctl, db, argv[1], argv[2], mode, force);
	sqlite3_close(db);
	return rc;
}

const struct cmd_entry cmd_results_entry = {
	"results", "list | show RUN | compare RUN_A RUN_B", "benchmark runs in the results database",
	0, results_opts, cmd_results,
	"results list                 every stored run, in time order\n"
	"results show RUN             one run: mean ± sd per point, peak and sustained\n"
	"results compare RUN_A RUN_B  A, B, change and Welch's verdict per point\n"
	"RUN is a run id, an unambiguous prefix of one, latest, or latest~N (N runs before).\n"
	"--json and --csv work with every results command.",
};
