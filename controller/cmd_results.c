/* knobctl results list | show RUN | compare A B [--force], each with
 * --json and --csv.  RUN is an id, an unambiguous id prefix, latest or
 * latest~N.
 *
 * compare pairs points by their whole key: kind, every parameter (the
 * measurement options and an external tool's arguments too: stats.h),
 * thread count and node count (a run has one point per key: its phases
 * with that key are the repeats).  Of the points left, a kind and thread
 * count with one point on each side pairs them as "unlike" (what differs
 * first, with both values), refused unless --force; with more than one on
 * a side it is ambiguous and pairs none (refused without --force, listed
 * with it); points only one run has are listed.  The pairing does not
 * depend on the points' order.
 * A point whose repeats all failed before a node said what it ran with
 * (engine, queue depth, CPU binding, buffer pages) pairs with the one
 * point alike but for that.
 * With repeats on both sides each line gets Welch's verdict at 95 %
 * (stats.h), its p-value adjusted by Holm-Bonferroni over the compare's
 * points: better, worse or within noise.  Runs on other node sets or in
 * other directories are refused without --force, and compared with a
 * warning with it.  A side whose figure stands on fewer repeats than it
 * ran gets a note under the table (a_repeats, b_repeats in JSON and CSV).
 * A side without figures (every repeat failed) is null in JSON, empty in
 * CSV, '-' in the table; exit 1 when no pair has figures on both sides.
 * A run whose status is not ok (failed, running, incomplete, interrupted)
 * is compared with its status in the head and a warning line (stderr with
 * --csv; a_status, b_status in JSON); the exit status stays as above. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_ctl.h"
#include "csv.h"
#include "results.h"
#include "rundoc.h"
#include "stats.h"
#include "util.h"
#include "visible.h"

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

/* "knobctl results[ SUB]: MSG" on stderr, msg made visible (visible.h): it
 * may carry a stored string (a node set, a directory, a parameter). */
static void
say_err(const char *sub, const char *msg)
{
	char *v = str_visible_dup(msg, 0);

	fprintf(stderr, "knobctl results%s%s: %s\n", sub ? " " : "", sub ? sub : "", v);
	free(v);
}

/* o as pretty JSON on f, its bidi and C1 controls as \uNNNN
 * (output_text): a stored label is someone else's text. */
static void
put_json(FILE *f, json_object *o)
{
	output_text(f, o, 0);
}

static json_object *
jstr(const char *s)
{
	return json_object_new_string(s ? s : "");
}

/* The runs' table for people, from rows made visible (visible.h): a label
 * or a command cannot write to the terminal. */
static void
print_runs(FILE *f, json_object *rows)
{
	json_object *vis = json_visible(rows);

	fprintf(f, "%-22s %-23s %-14s %-20s %-16s %-12s %6s  %s\n", "RUN", "STARTED", "LABEL",
	    "PROFILE", "NODES", "STATUS", "PHASES", "KINDS");
	for (size_t i = 0; i < json_object_array_length(vis); i++) {
		json_object *o = json_object_array_get_idx(vis, i);

		fprintf(f, "%-22s %-23s %-14s %-20s %-16s %-12s %6lld  %s\n", js_str(o, "run_id"),
		    js_str(o, "started"), js_str(o, "label")[0] ? js_str(o, "label") : "-",
		    js_str(o, "profile")[0] ? js_str(o, "profile") : "(none)", js_str(o, "nodeset"),
		    js_str(o, "status"), (long long)js_int(o, "phases"), js_str(o, "kinds"));
	}
	json_object_put(vis);
}

static int
results_list(struct ctl *ctl, sqlite3 *db, int mode)
{
	static const struct csv_col cols[] = {
		{ "run_id", 1 }, { "started", 1 }, { "started_ns", 0 }, { "label", 1 },
		{ "profile", 1 }, { "nodeset", 1 }, { "status", 1 }, { "phases", 0 },
		{ "kinds", 1 }, { "command", 1 }, { "play", 1 },
	};
	struct run_row *r;
	json_object *rows;
	size_t n;

	if (results_runs(db, &r, &n) < 0) {	/* not all readable: no part for the whole */
		char err[PATH_MAX + 256];

		results_db_error(db, err, sizeof(err));
		say_err(NULL, err);
		return 2;
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
		csv_rows(ctl->out, cols, nitems(cols), rows);
	else
		print_runs(ctl->out, rows);
	json_object_put(rows);
	results_runs_free(r, n);
	return 0;
}

/* Per phase: every rundoc field as a CSV column. */
static void
show_csv(FILE *f, json_object *doc)
{
	struct csv_col *cols = xcalloc(rundoc_nphase_fields + 2, sizeof(*cols));
	json_object *rows = json_object_new_array(), *phases;
	size_t k, nk = 0;

	cols[nk++] = (struct csv_col){ "run_id", 1 };
	for (k = 0; k < rundoc_nphase_fields; k++)
		cols[nk++] = (struct csv_col){ rundoc_phase_fields[k].column,
		    rundoc_phase_fields[k].type == RF_TEXT };
	cols[nk++] = (struct csv_col){ "figure", 0 };
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
	csv_rows(f, cols, nk, rows);
	json_object_put(rows);
	free(cols);
}

/* Load the run spec names; NULL after printing why. */
static json_object *
load_spec(sqlite3 *db, const char *spec)
{
	char err[PATH_MAX + 256], *id;
	json_object *doc;

	if (results_resolve(db, spec, &id, err, sizeof(err)) < 0) {
		say_err(NULL, err);
		return NULL;
	}
	doc = results_load(db, id);
	if (doc == NULL) {
		char why[PATH_MAX + 384];

		results_load_error(db, id, why, sizeof(why));
		say_err(NULL, why);
	}
	free(id);
	return doc;
}

/* The keys of the run's profile that were not in effect when it started
 * (runinfo_not_in_effect), at most 10 named. */
static void
print_not_in_effect(FILE *f, json_object *doc)
{
	struct strvec v = { 0 };
	size_t n = runinfo_not_in_effect(doc, &v);

	if (n > 0)
		fprintf(f, "WARNING: %zu setting(s) of this profile were not in effect when the run "
		    "started; the run did not measure the profile as written:\n", n);
	for (size_t i = 0; i < v.n && i < 10; i++)
		fprintf(f, "  %s\n", v.v[i]);
	if (v.n > 10)
		fprintf(f, "  ... and %zu more (--json: node_info[].live)\n", v.n - 10);
	strvec_free(&v);
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
	print_not_in_effect(f, doc);
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

/* One run for people, from its document made visible (visible.h). */
static void
print_show(FILE *f, json_object *doc, int decimal)
{
	json_object *vis = json_visible(doc);
	char ts[48];

	fmt_time(ts, sizeof(ts), (int64_t)js_num(vis, "started_ns"));
	fprintf(f, "status %s  started %s  %s%s\n", js_str(vis, "status"), ts,
	    js_str(vis, "play")[0] ? "play " : "", js_str(vis, "play")[0] ? js_str(vis, "play") :
	    js_str(vis, "command"));
	print_writer(f, vis);
	print_profile(f, vis);
	bench_print_table(f, vis, decimal);
	json_object_put(vis);
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
	else
		print_show(ctl->out, doc, ctl->units_decimal);
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
	json_object_object_add(o, "nodes", json_object_new_int64((int64_t)js_num(p->first,
	    "nodes")));
	if (json_object_object_get_ex(p->first, "params", &pr))
		json_object_object_add(o, "params", json_object_get(pr));
	return o;
}

/* One side of a compare row: pre_n (the repeats with a figure),
 * pre_repeats (all the point's repeats: fewer figures than repeats means
 * some failed), and pre_mean, pre_sd, pre_min and pre_max, JSON null when
 * the point has no figure (every repeat failed); pre_sd null with one
 * figure too: one sample has no spread to state, as the table says. */
static void
add_side(json_object *row, const char *pre, const struct point *p)
{
	const double v[] = { p->st.mean, p->st.sd, p->st.min, p->st.max };
	static const char *const name[] = { "mean", "sd", "min", "max" };
	size_t need;
	char k[32];

	snprintf(k, sizeof(k), "%s_n", pre);
	json_object_object_add(row, k, json_object_new_int64((int64_t)p->st.n));
	snprintf(k, sizeof(k), "%s_repeats", pre);
	json_object_object_add(row, k, json_object_new_int64((int64_t)p->nphases));
	for (size_t i = 0; i < nitems(name); i++) {
		snprintf(k, sizeof(k), "%s_%s", pre, name[i]);
		need = strcmp(name[i], "sd") == 0 ? 2 : 1;
		json_object_object_add(row, k, p->st.n >= need ? json_object_new_double(v[i]) : NULL);
	}
}

/* The text of key in phase record ph (results.h). */
const char *
results_field_text(json_object *ph, const char *key)
{
	json_object *v = rundoc_value_at(ph, key);

	if (v == NULL)
		return "not recorded";
	if (json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

/* Unlike points a and b: the key that differs first as o's pre, and its
 * values as pre_a and pre_b. */
static void
add_differs(json_object *o, const char *pre, const struct point *a, const struct point *b)
{
	char diff[96] = "", k[32];

	points_same_params(a, b, diff, sizeof(diff));
	json_object_object_add(o, pre, jstr(diff));
	snprintf(k, sizeof(k), "%s_a", pre);
	json_object_object_add(o, k, jstr(results_field_text(a->first, diff)));
	snprintf(k, sizeof(k), "%s_b", pre);
	json_object_object_add(o, k, jstr(results_field_text(b->first, diff)));
}

/* One compare line for points a and b (unlike: they differ, say how). */
static json_object *
compare_row(const struct point *a, const struct point *b, int unlike)
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
		add_differs(row, "unlike", a, b);
	return row;
}

/* What became of a point (PAIR_NONE: only in its run). */
enum { PAIR_NONE, PAIR_LIKE, PAIR_UNLIKE, PAIR_AMBIGUOUS };

/* A's points paired with B's (pairing_make says how). */
struct pairing {
	size_t *to;		/* per A point: its B point, SIZE_MAX none */
	int *how;		/* per A point: PAIR_* */
	int *bhow;		/* per B point: PAIR_* */
};

/* Same kind and thread count: the slot where unlike points meet. */
static int
same_slot(const struct point *a, const struct point *b)
{
	return strcmp(a->kind, b->kind) == 0 && a->threads == b->threads;
}

/* How many points of ps in p's slot are how[k] == h; the last one's index
 * in *at (when not NULL). */
static size_t
count_slot(const struct pointset *ps, const int *how, int h, const struct point *p, size_t *at)
{
	size_t n = 0;

	for (size_t k = 0; k < ps->n; k++)
		if (how[k] == h && same_slot(&ps->p[k], p)) {
			n++;
			if (at)
				*at = k;
		}
	return n;
}

/* The one point of ps (how[k] PAIR_NONE) in p's slot that is alike p but
 * for what a point without figures could not say it ran with
 * (points_alike_unran), SIZE_MAX when none or several. */
static size_t
unran_mate(const struct pointset *ps, const int *how, const struct point *p)
{
	size_t n = 0, at = SIZE_MAX;

	for (size_t k = 0; k < ps->n; k++)
		if (how[k] == PAIR_NONE && same_slot(&ps->p[k], p) &&
		    points_alike_unran(p, &ps->p[k])) {
			n++;
			at = k;
		}
	return n == 1 ? at : SIZE_MAX;
}

/* Pair pa's points with pb's: first by the whole key (kind, threads,
 * nodes, every parameter; at most one B point has A's key, since
 * points_build folds a key's phases into one point); then a point
 * without figures (its repeats failed before a node said which engine it
 * ran, ...) with the one point alike but for that, when each is the
 * other's only such match; then, in a slot with
 * no like pair and exactly one point left on each side, those two
 * (unlike); a slot with more left on a side, and some on the other, pairs
 * none (ambiguous: which with which would be a guess); what is left in a
 * slot that has its like pair is only in its run.  No step depends on the points' order.
 * Free with pairing_free. */
static void
pairing_make(const struct pointset *pa, const struct pointset *pb, struct pairing *pr)
{
	size_t i, k, na, nb;

	pr->to = xcalloc(pa->n + 1, sizeof(*pr->to));
	pr->how = xcalloc(pa->n + 1, sizeof(*pr->how));
	pr->bhow = xcalloc(pb->n + 1, sizeof(*pr->bhow));
	for (i = 0; i < pa->n; i++) {
		pr->to[i] = SIZE_MAX;
		for (k = 0; k < pb->n && pr->to[i] == SIZE_MAX; k++)
			if (same_slot(&pa->p[i], &pb->p[k]) &&
			    points_same_params(&pa->p[i], &pb->p[k], NULL, 0)) {
				pr->to[i] = k;
				pr->how[i] = pr->bhow[k] = PAIR_LIKE;
			}
	}
	for (i = 0; i < pa->n; i++)
		if (pr->how[i] == PAIR_NONE && (k = unran_mate(pb, pr->bhow, &pa->p[i])) != SIZE_MAX &&
		    unran_mate(pa, pr->how, &pb->p[k]) == i) {
			pr->to[i] = k;
			pr->how[i] = pr->bhow[k] = PAIR_LIKE;
		}
	for (i = 0; i < pa->n; i++) {
		/* a slot that has its like pair: the others there are only in
		 * their run (a repeat that lost a node is not another workload) */
		if (pr->how[i] != PAIR_NONE || count_slot(pa, pr->how, PAIR_LIKE, &pa->p[i], NULL) > 0)
			continue;
		na = count_slot(pa, pr->how, PAIR_NONE, &pa->p[i], NULL);
		nb = count_slot(pb, pr->bhow, PAIR_NONE, &pa->p[i], &k);
		if (na == 1 && nb == 1) {
			pr->to[i] = k;
			pr->how[i] = pr->bhow[k] = PAIR_UNLIKE;
		} else if (nb > 0)
			for (k = 0; k < pa->n || k < pb->n; k++) {
				if (k < pa->n && pr->how[k] == PAIR_NONE && same_slot(&pa->p[k], &pa->p[i]))
					pr->how[k] = PAIR_AMBIGUOUS;
				if (k < pb->n && pr->bhow[k] == PAIR_NONE && same_slot(&pb->p[k], &pa->p[i]))
					pr->bhow[k] = PAIR_AMBIGUOUS;
			}
	}
}

static void
pairing_free(struct pairing *pr)
{
	free(pr->to);
	free(pr->how);
	free(pr->bhow);
}

/* The unlike entry of A's point i: what differs from its pair, or for an
 * ambiguous slot (once, at its first point) how many points each side has
 * there; NULL for the slot's other points. */
static json_object *
unlike_entry(const struct pointset *pa, const struct pointset *pb, const struct pairing *pr,
    size_t i)
{
	const struct point *a = &pa->p[i];
	json_object *u;

	if (pr->how[i] == PAIR_UNLIKE) {
		u = point_json(a);
		add_differs(u, "differs", a, &pb->p[pr->to[i]]);
		return u;
	}
	for (size_t j = 0; j < i; j++)
		if (pr->how[j] == PAIR_AMBIGUOUS && same_slot(&pa->p[j], a))
			return NULL;
	u = point_json(a);
	json_object_object_add(u, "differs", jstr("ambiguous"));
	json_object_object_add(u, "a_points", json_object_new_int64((int64_t)count_slot(pa,
	    pr->how, PAIR_AMBIGUOUS, a, NULL)));
	json_object_object_add(u, "b_points", json_object_new_int64((int64_t)count_slot(pb,
	    pr->bhow, PAIR_AMBIGUOUS, a, NULL)));
	return u;
}

/* "seq-write 8 threads, nodes 4 vs 8" or "seq-write 4 threads, 2 points in
 * A and 2 in B, none alike" for an unlike entry. */
static void
unlike_text(char *buf, size_t len, json_object *u)
{
	if (strcmp(js_str(u, "differs"), "ambiguous") == 0)
		snprintf(buf, len, "%s %lld threads, %lld points in A and %lld in B, none alike",
		    js_str(u, "kind"), (long long)js_num(u, "threads"),
		    (long long)js_num(u, "a_points"), (long long)js_num(u, "b_points"));
	else
		snprintf(buf, len, "%s %lld threads, %s %s vs %s", js_str(u, "kind"),
		    (long long)js_num(u, "threads"), js_str(u, "differs"), js_str(u, "differs_a"),
		    js_str(u, "differs_b"));
}

/* The directories run doc's phases ran in (params.dir), distinct, in
 * order, joined by ", "; caller frees. */
static char *
run_dirs(json_object *doc)
{
	json_object *phases = json_object_object_get(doc, "phases");
	struct strvec dirs = { 0 };
	char *out = xstrdup("");

	for (size_t i = 0; phases && i < json_object_array_length(phases); i++) {
		const char *d = js_str(js_get(json_object_array_get_idx(phases, i), "params"), "dir");

		if (!strvec_contains(&dirs, d))
			strvec_push(&dirs, d);
	}
	for (size_t i = 0; i < dirs.n; i++)
		str_appendf(&out, "%s%s", i ? ", " : "", dirs.v[i]);
	strvec_free(&dirs);
	return out;
}

/* Where runs da and db ran into out: each one's node set (a_nodeset,
 * b_nodeset) and directories (a_dir, b_dir), and in "placement_differs"
 * which of them differ ("nodes", "dir"; a side that did not record one
 * is not taken for different).  The number that differ. */
static size_t
add_placement(json_object *out, json_object *da, json_object *db)
{
	static const char *const what[] = { "nodes", "dir" };
	char *v[2][2] = {
		{ xstrdup(js_str(da, "nodeset")), xstrdup(js_str(db, "nodeset")) },
		{ run_dirs(da), run_dirs(db) },
	};
	json_object *diff = json_object_new_array();

	for (size_t i = 0; i < nitems(what); i++) {
		json_object_object_add(out, i ? "a_dir" : "a_nodeset", jstr(v[i][0]));
		json_object_object_add(out, i ? "b_dir" : "b_nodeset", jstr(v[i][1]));
		if (v[i][0][0] && v[i][1][0] && strcmp(v[i][0], v[i][1]) != 0)
			json_object_array_add(diff, jstr(what[i]));
		free(v[i][0]);
		free(v[i][1]);
	}
	json_object_object_add(out, "placement_differs", diff);
	return json_object_array_length(diff);
}

/* "different nodes (A node01, B node02)" for what a compare's placement_differs[i] names. */
static void
placement_text(char *buf, size_t len, json_object *cmp, size_t i)
{
	int dir = strcmp(json_object_get_string(json_object_array_get_idx(
	    json_object_object_get(cmp, "placement_differs"), i)), "dir") == 0;

	snprintf(buf, len, "different %s (A %s, B %s)", dir ? "directories" : "nodes",
	    js_str(cmp, dir ? "a_dir" : "a_nodeset"), js_str(cmp, dir ? "b_dir" : "b_nodeset"));
}

/* Holm's correction over the points of n compares, one family (results.h). */
void
results_compare_holm(json_object *const *cmps, size_t n)
{
	json_object **rows = NULL;
	double *p = NULL, *adj;
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		json_object *pts = cmps[i] ? json_object_object_get(cmps[i], "points") : NULL;

		for (size_t k = 0; pts && k < json_object_array_length(pts); k++) {
			json_object *r = json_object_array_get_idx(pts, k), *v;

			if (!json_object_object_get_ex(r, "p", &v))
				continue;	/* no verdict to adjust */
			rows = xrealloc(rows, (m + 1) * sizeof(*rows));
			p = xrealloc(p, (m + 1) * sizeof(*p));
			rows[m] = r;
			p[m++] = json_object_get_double(v);
		}
	}
	adj = xcalloc(m + 1, sizeof(*adj));
	stats_holm(p, m, adj);
	for (size_t k = 0; k < m; k++) {
		struct welch w = { 1, js_num(rows[k], "t"), js_num(rows[k], "df"), adj[k] };

		json_object_object_add(rows[k], "p_adj", json_object_new_double(adj[k]));
		json_object_object_add(rows[k], "verdict", jstr(stats_verdict_name(stats_verdict(&w))));
	}
	free(rows);
	free(p);
	free(adj);
}

json_object *
results_compare_doc(json_object *da, json_object *db, int force, char *err, size_t errlen)
{
	struct pointset pa, pb;
	struct pairing pr;
	json_object *out = json_object_new_object(), *rows = json_object_new_array();
	json_object *oa = json_object_new_array(), *ob = json_object_new_array();
	json_object *unl = json_object_new_array(), *u;
	size_t i, k;

	points_build(da, &pa);
	points_build(db, &pb);
	pairing_make(&pa, &pb, &pr);
	for (i = 0; i < pa.n; i++) {
		const struct point *a = &pa.p[i], *b = pr.to[i] != SIZE_MAX ? &pb.p[pr.to[i]] : NULL;

		if (pr.how[i] == PAIR_NONE)
			json_object_array_add(oa, point_json(a));
		else if (pr.how[i] == PAIR_LIKE)
			json_object_array_add(rows, compare_row(a, b, 0));
		else if ((u = unlike_entry(&pa, &pb, &pr, i)) != NULL)
			json_object_array_add(unl, u);
		if (pr.how[i] == PAIR_UNLIKE && force)
			json_object_array_add(rows, compare_row(a, b, 1));
	}
	for (k = 0; k < pb.n; k++)
		if (pr.bhow[k] == PAIR_NONE)
			json_object_array_add(ob, point_json(&pb.p[k]));
	json_object_object_add(out, "a", jstr(js_str(da, "run_id")));
	json_object_object_add(out, "b", jstr(js_str(db, "run_id")));
	json_object_object_add(out, "a_label", jstr(js_str(da, "label")));
	json_object_object_add(out, "b_label", jstr(js_str(db, "label")));
	json_object_object_add(out, "a_status", jstr(js_str(da, "status")));
	json_object_object_add(out, "b_status", jstr(js_str(db, "status")));
	json_object_object_add(out, "points", rows);
	json_object_object_add(out, "only_in_a", oa);
	json_object_object_add(out, "only_in_b", ob);
	json_object_object_add(out, "unlike", unl);
	results_compare_holm(&out, 1);
	if (add_placement(out, da, db) && !force) {
		char what[2][300] = { "", "" };
		size_t nd = json_object_array_length(json_object_object_get(out, "placement_differs"));

		for (i = 0; i < nd && i < 2; i++)
			placement_text(what[i], sizeof(what[i]), out, i);
		snprintf(err, errlen, "the runs ran on %s%s%s: the verdicts would compare those too; "
		    "--force compares them", what[0], nd > 1 ? " and on " : "", what[1]);
		json_object_put(out);
		out = NULL;
	} else if (json_object_array_length(unl) && !force) {
		char what[160];

		unlike_text(what, sizeof(what), json_object_array_get_idx(unl, 0));
		snprintf(err, errlen, "%zu point(s) differ in their parameters or node count "
		    "(first: %s); --force compares those that pair one to one",
		    json_object_array_length(unl), what);
		json_object_put(out);
		out = NULL;
	}
	pairing_free(&pr);
	points_free(&pa);
	points_free(&pb);
	return out;
}

/* "seq-write 4 threads 2 nodes bs=1m size=64m direct fsync shared" */
static void
point_label(char *buf, size_t len, json_object *p)
{
	json_object *pr = json_object_object_get(p, "params");
	char bs[16], sz[16];

	size_fmt(bs, sizeof(bs), (uint64_t)js_num(pr, "block_size"));
	size_fmt(sz, sizeof(sz), (uint64_t)js_num(pr, "file_size"));
	if (rundoc_metric_of(js_str(p, "kind")) == M_OPS)
		snprintf(bs, sizeof(bs), "-"), snprintf(sz, sizeof(sz), "-");
	snprintf(buf, len, "%-10s %4lld %4lld %5s %6s %-3s %-3s %-3s", js_str(p, "kind"),
	    (long long)js_num(p, "threads"), (long long)js_num(p, "nodes"), bs, sz,
	    json_object_get_boolean(json_object_object_get(pr, "direct")) ? "yes" : "no",
	    json_object_get_boolean(json_object_object_get(pr, "fsync")) ? "yes" : "no",
	    json_object_get_boolean(json_object_object_get(pr, "shared")) ? "yes" : "no");
}

/* "1.2 ± 0.1" of one side of a compare row (results.h). */
void
results_compare_side(char *buf, size_t len, json_object *row, const char *pre, int decimal)
{
	int metric = rundoc_metric_of(js_str(row, "kind"));
	json_object *mean, *sd;
	char k[16];

	snprintf(k, sizeof(k), "%s_mean", pre);
	mean = js_get(row, k);
	snprintf(k, sizeof(k), "%s_sd", pre);
	sd = js_get(row, k);
	if (mean == NULL)	/* no figure (null, or a row without it) */
		snprintf(buf, len, "-");
	else if (sd == NULL)	/* one figure: no spread to state */
		snprintf(buf, len, "%.1f", rundoc_scale(json_object_get_double(mean), metric,
		    decimal));
	else
		snprintf(buf, len, "%.1f ± %.1f", rundoc_scale(json_object_get_double(mean), metric,
		    decimal), rundoc_scale(json_object_get_double(sd), metric, decimal));
}

/* The warning for a side of a compare whose run is not ok (results.h). */
int
results_compare_status_text(char *buf, size_t len, json_object *cmp, int s)
{
	const char *st = js_str(cmp, s ? "b_status" : "a_status"), *id = js_str(cmp, s ? "b" : "a");

	if (st[0] == '\0' || strcmp(st, "ok") == 0)
		return -1;
	if (strcmp(st, "running") == 0)
		snprintf(buf, len, "%c (%s) is still running: only the phases it has stored so far "
		    "are compared", s ? 'B' : 'A', id);
	else if (strcmp(st, "incomplete") == 0)
		snprintf(buf, len, "%c (%s) is incomplete (its knobctl is gone): only the phases it "
		    "stored are compared", s ? 'B' : 'A', id);
	else if (strcmp(st, "interrupted") == 0)
		snprintf(buf, len, "%c (%s) was interrupted (a signal stopped it): only the phases it "
		    "finished are compared", s ? 'B' : 'A', id);
	else
		snprintf(buf, len, "%c (%s) ended %s, not ok: the compare is of the figures it has "
		    "(knobctl results show %s says what failed)", s ? 'B' : 'A', id, st, id);
	return 0;
}

/* The compare's head: each run, its label, nodes and directories, its
 * status when not ok, and a warning for each of those that differ
 * (--force) and for each run that is not ok. */
static void
print_compare_head(FILE *f, json_object *cmp)
{
	json_object *diff = json_object_object_get(cmp, "placement_differs");
	char what[300];

	for (int s = 0; s < 2; s++) {
		const char *st = js_str(cmp, s ? "b_status" : "a_status");
		char k[16];

		fprintf(f, "%c = %s", s ? 'B' : 'A', js_str(cmp, s ? "b" : "a"));
		snprintf(k, sizeof(k), "%c_label", s ? 'b' : 'a');
		if (js_str(cmp, k)[0])
			fprintf(f, "  %s", js_str(cmp, k));
		snprintf(k, sizeof(k), "%c_nodeset", s ? 'b' : 'a');
		fprintf(f, "  nodes %s", js_str(cmp, k)[0] ? js_str(cmp, k) : "?");
		snprintf(k, sizeof(k), "%c_dir", s ? 'b' : 'a');
		fprintf(f, "  dir %s", js_str(cmp, k)[0] ? js_str(cmp, k) : "?");
		if (st[0] && strcmp(st, "ok") != 0)
			fprintf(f, "  status %s", st);
		fputc('\n', f);
	}
	for (size_t i = 0; diff && i < json_object_array_length(diff); i++) {
		placement_text(what, sizeof(what), cmp, i);
		fprintf(f, "warning: the runs ran on %s: the verdicts compare those too\n", what);
	}
	for (int s = 0; s < 2; s++)
		if (results_compare_status_text(what, sizeof(what), cmp, s) == 0)
			fprintf(f, "warning: %s\n", what);
}

/* A note under the table for each side of row whose figure stands on
 * fewer repeats than it ran (the others failed or were degraded): the
 * mean and the verdict leave those out, which the table does not show. */
static void
print_failed_repeats(FILE *f, json_object *row)
{
	for (int s = 0; s < 2; s++) {
		char k[16];
		int64_t n, reps;

		snprintf(k, sizeof(k), "%c_n", s ? 'b' : 'a');
		n = (int64_t)js_num(row, k);
		snprintf(k, sizeof(k), "%c_repeats", s ? 'b' : 'a');
		reps = (int64_t)js_num(row, k);
		if (n > 0 && n < reps)
			fprintf(f, "note: %s %lld threads %lld nodes: %c has a figure from %lld of its "
			    "%lld repeats (the others failed or were degraded); its mean and the "
			    "verdict are over those %lld\n", js_str(row, "kind"),
			    (long long)js_num(row, "threads"), (long long)js_num(row, "nodes"),
			    s ? 'B' : 'A', (long long)n, (long long)reps, (long long)n);
	}
}

/* The compare table of cmp, made visible already. */
static void
print_compare_table(FILE *f, json_object *cmp, int decimal)
{
	json_object *rows = json_object_object_get(cmp, "points"), *arr;
	static const char *const one[] = { "only_in_a", "only_in_b" };

	print_compare_head(f, cmp);
	fprintf(f, "%-10s %4s %4s %5s %6s %-3s %-3s %-3s %-6s %20s %20s %8s %7s %7s  %s\n", "KIND",
	    "THR", "NOD", "BS", "SIZE", "DIR", "FSY", "SHR", "UNIT", "A (mean ± sd)",
	    "B (mean ± sd)", "CHANGE", "P", "P(HOLM)", "VERDICT");
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *r = json_object_array_get_idx(rows, i), *v;
		char lab[96], a[48], b[48], ch[48] = "-", p[16] = "-", pa[16] = "-", num[40];
		int metric = strcmp(js_str(r, "unit"), "IOPS") == 0 ? M_IOPS :
		    strcmp(js_str(r, "unit"), "ops/s") == 0 ? M_OPS : M_BW;

		point_label(lab, sizeof(lab), r);
		results_compare_side(a, sizeof(a), r, "a", decimal);
		results_compare_side(b, sizeof(b), r, "b", decimal);
		if (json_object_object_get_ex(r, "change_pct", &v))
			snprintf(ch, sizeof(ch), "%s%%", signed_fmt(num, sizeof(num),
			    json_object_get_double(v), 1));
		if (json_object_object_get_ex(r, "p", &v))
			stats_p_text(p, sizeof(p), json_object_get_double(v));
		if (json_object_object_get_ex(r, "p_adj", &v))
			stats_p_text(pa, sizeof(pa), json_object_get_double(v));
		fprintf(f, "%s %-6s ", lab, rundoc_unit_name(metric, decimal));
		rundoc_pad(f, a, 20, 0);
		fputc(' ', f);
		rundoc_pad(f, b, 20, 0);
		fprintf(f, " %8s %7s %7s  %s", ch, p, pa, js_str(r, "verdict"));
		if (js_str(r, "unlike")[0])
			fprintf(f, "  (unlike: %s %s vs %s)", js_str(r, "unlike"), js_str(r, "unlike_a"),
			    js_str(r, "unlike_b"));
		fputc('\n', f);
	}
	for (size_t i = 0; i < json_object_array_length(rows); i++)
		print_failed_repeats(f, json_object_array_get_idx(rows, i));
	arr = json_object_object_get(cmp, "unlike");
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		json_object *u = json_object_array_get_idx(arr, i);
		char what[160];

		if (strcmp(js_str(u, "differs"), "ambiguous") != 0)
			continue;
		unlike_text(what, sizeof(what), u);
		fprintf(f, "not paired: %s\n", what);
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

/* From cmp made visible (visible.h): a label, a node set, a directory or
 * an external tool's argument cannot write to the terminal. */
void
results_print_compare(FILE *f, json_object *cmp, int decimal)
{
	json_object *vis = json_visible(cmp);

	print_compare_table(f, vis, decimal);
	json_object_put(vis);
}

/* The exit status of a compare with rows: 0 when some row has figures in
 * both runs, else 1 after saying why. */
static int
compare_status(json_object *rows)
{
	size_t n = json_object_array_length(rows);

	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(rows, i);

		if (js_num(r, "a_n") > 0 && js_num(r, "b_n") > 0)
			return 0;
	}
	fprintf(stderr, "knobctl results compare: %s\n", n ? "no point has a figure in both runs "
	    "(every repeat failed on one side)" : "the runs have no point in common");
	return 1;
}

/* What the table says in its head and JSON in placement_differs and
 * a_status, b_status: on stderr for --csv. */
static void
csv_warnings(json_object *cmp)
{
	char what[512], line[600];

	for (size_t i = 0; i < json_object_array_length(js_get(cmp, "placement_differs")); i++) {
		placement_text(what, sizeof(what), cmp, i);
		snprintf(line, sizeof(line), "warning: the runs ran on %s", what);
		say_err("compare", line);
	}
	for (int s = 0; s < 2; s++)
		if (results_compare_status_text(what, sizeof(what), cmp, s) == 0) {
			snprintf(line, sizeof(line), "warning: %s", what);
			say_err("compare", line);
		}
}

static int
results_compare(struct ctl *ctl, sqlite3 *db, const char *a, const char *b, int mode, int force)
{
	static const struct csv_col cols[] = {
		{ "kind", 1 }, { "threads", 0 }, { "unit", 1 }, { "a_n", 0 }, { "a_mean", 0 },
		{ "a_sd", 0 }, { "a_min", 0 }, { "a_max", 0 }, { "b_n", 0 }, { "b_mean", 0 },
		{ "b_sd", 0 }, { "b_min", 0 }, { "b_max", 0 }, { "change_pct", 0 }, { "t", 0 },
		{ "df", 0 }, { "p", 0 }, { "verdict", 1 }, { "unlike", 1 }, { "nodes", 0 },
		{ "unlike_a", 1 }, { "unlike_b", 1 }, { "p_adj", 0 }, { "a_repeats", 0 },
		{ "b_repeats", 0 },
	};
	json_object *da = load_spec(db, a), *dbb = da ? load_spec(db, b) : NULL, *cmp = NULL;
	char err[512];
	int rc = 2;

	if (da == NULL || dbb == NULL)
		goto out;
	if ((cmp = results_compare_doc(da, dbb, force, err, sizeof(err))) == NULL) {
		say_err("compare", err);
		goto out;
	}
	rc = compare_status(json_object_object_get(cmp, "points"));
	if (mode == OUT_CSV)
		csv_warnings(cmp);
	if (mode == OUT_JSON)
		put_json(ctl->out, cmp);
	else if (mode == OUT_CSV)
		csv_rows(ctl->out, cols, nitems(cols), json_object_object_get(cmp, "points"));
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
	{ R_FORCE, "force", OPT_NOARG, NULL,
	    "compare: also points whose parameters or node count differ", 0 },
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
	if ((db = results_open_existing(ctl)) == NULL)
		return 2;
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
