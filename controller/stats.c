/* Statistics over benchmark points: repeats, Welch's t-test, peak and
 * sustained, the IO500-like score.
 *
 * Welch's test: for samples A (n_a, mean m_a, variance s_a^2) and B,
 *   t  = (m_b - m_a) / sqrt(s_a^2/n_a + s_b^2/n_b)
 *   df = (s_a^2/n_a + s_b^2/n_b)^2 /
 *        ((s_a^2/n_a)^2/(n_a - 1) + (s_b^2/n_b)^2/(n_b - 1))
 *   p  = P(|T_df| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2)
 * with I the regularised incomplete beta function (continued fraction,
 * modified Lentz).  p < 0.05 is a difference at 95 %.
 *
 * A compare tests many points at once: at 0.05 each, 12 points of no
 * change call one of them better or worse 46 % of the time.  Holm's
 * step-down (Holm 1979) keeps that family-wise error at 0.05: with the m
 * p-values sorted, p_(k) adjusted = max over j <= k of min(1, (m - j + 1)
 * p_(j)); a point is better or worse when its adjusted p is below 0.05. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rundoc.h"
#include "stats.h"
#include "util.h"

void
stats_summary(const double *v, size_t n, struct sample_stats *o)
{
	double sum = 0, ss = 0;

	memset(o, 0, sizeof(*o));
	if (n == 0)
		return;
	o->n = n;
	o->min = o->max = v[0];
	/* the mean as v[0] plus the mean offset from it: equal figures (a
	 * tool's rounded ones) have their own value as mean and sd 0 exactly;
	 * sum / n made 3 x 123.4 a mean of 123.40000000000001, an sd of 2e-14
	 * and Welch a verdict at p 0 against 3 x 123.405 */
	for (size_t i = 0; i < n; i++) {
		sum += v[i] - v[0];
		o->min = v[i] < o->min ? v[i] : o->min;
		o->max = v[i] > o->max ? v[i] : o->max;
	}
	o->mean = v[0] + sum / (double)n;
	for (size_t i = 0; i < n && n > 1; i++)
		ss += (v[i] - o->mean) * (v[i] - o->mean);
	o->sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
stats_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Continued fraction of the incomplete beta (modified Lentz). */
static double
betacf(double x, double a, double b)
{
	const double tiny = 1e-300, eps = 1e-15;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	d = fabs(d) < tiny ? tiny : d;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, num, del;

		num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
		d = 1 + num * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		h *= d * c;
		num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		d = 1 + num * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < eps)
			break;
	}
	return h;
}

double
stats_ibeta(double x, double a, double b)
{
	double front;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * betacf(x, a, b) / a;
	return 1 - front * betacf(1 - x, b, a) / b;
}

double
stats_t_two_sided(double t, double df)
{
	if (!(df > 0) || isnan(t))
		return 1;
	if (isinf(t))
		return 0;
	return stats_ibeta(df / (df + t * t), df / 2, 0.5);
}

void
stats_welch(const struct sample_stats *a, const struct sample_stats *b, struct welch *o)
{
	double va, vb, se2;

	memset(o, 0, sizeof(*o));
	o->p = 1;
	if (a->n < 2 || b->n < 2)
		return;
	va = a->sd * a->sd / (double)a->n;
	vb = b->sd * b->sd / (double)b->n;
	se2 = va + vb;
	if (!isfinite(se2) || !isfinite(a->mean) || !isfinite(b->mean))
		return;		/* not numbers (an overflow): nothing to judge */
	if (se2 == 0) {
		/* no spread on either side (rounded or capped figures): equal
		 * means are noise; different ones cannot be judged, since the
		 * test has no variance to weigh the difference against */
		o->valid = a->mean == b->mean;
		o->df = (double)(a->n + b->n - 2);
		return;
	}
	o->valid = 1;
	o->t = (b->mean - a->mean) / sqrt(se2);
	o->df = se2 * se2 / ((va * va) / (double)(a->n - 1) + (vb * vb) / (double)(b->n - 1));
	o->p = stats_t_two_sided(o->t, o->df);
}

int
stats_verdict(const struct welch *w)
{
	if (!w->valid || isnan(w->p))
		return VERDICT_NONE;
	if (w->p >= 0.05)
		return VERDICT_NOISE;
	return w->t > 0 ? VERDICT_BETTER : VERDICT_WORSE;
}

/* p for Holm's order: a p that is not a number is 1 (no evidence). */
static double
holm_p(double p)
{
	return isnan(p) ? 1 : p;
}

void
stats_holm(const double *p, size_t n, double *adj)
{
	size_t *ord = xcalloc(n + 1, sizeof(*ord)), i, k;
	double run = 0;

	for (i = 0; i < n; i++)
		ord[i] = i;
	/* by p, ties in their order; a NaN compared false with every p and
	 * stopped the smaller ones behind it from moving ahead */
	for (i = 1; i < n; i++)
		for (k = i; k > 0 && holm_p(p[ord[k - 1]]) > holm_p(p[ord[k]]); k--) {
			size_t t = ord[k];
			ord[k] = ord[k - 1];
			ord[k - 1] = t;
		}
	/* the k-th smallest times the n - k hypotheses left, never below the
	 * one before it (step-down), at most 1 */
	for (k = 0; k < n; k++) {
		double a = fmin(1, (double)(n - k) * holm_p(p[ord[k]]));

		run = fmax(run, a);
		adj[ord[k]] = run;
	}
	free(ord);
}

const char *
stats_verdict_name(int v)
{
	static const char *const names[] = {
		[VERDICT_NONE] = "-", [VERDICT_BETTER] = "better",
		[VERDICT_WORSE] = "worse", [VERDICT_NOISE] = "within noise",
	};

	return v >= 0 && v < (int)nitems(names) ? names[v] : "-";
}

void
stats_p_text(char *buf, size_t len, double p)
{
	snprintf(buf, len, "%.3f", p);
	if (p < 0.05 && strcmp(buf, "0.050") == 0)	/* 0.0495 <= p < 0.05 */
		snprintf(buf, len, "%.4f", p);
	if (p < 0.05 && strcmp(buf, "0.0500") == 0)	/* 0.04995 and up: cut, not rounded */
		snprintf(buf, len, "%.4f", floor(p * 1e4) / 1e4);
}

/* Is key one of keys[0..n)? */
static int
key_in(const char *key, const char *const *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(key, keys[i]) == 0)
			return 1;
	return 0;
}

/* Parameters a sweep may change per thread count (a total size split over
 * the threads, <at threads=...> values). */
static int
per_thread_param(const char *key)
{
	static const char *const keys[] = {
		"params.block_size", "params.file_size", "params.md_files", "params.stripe_count",
		"params.stripe_size",
	};

	return key_in(key, keys, nitems(keys));
}

/* Is params.direct set in phase record ph? */
static int
is_direct(json_object *ph)
{
	return json_object_get_boolean(json_object_object_get(json_object_object_get(ph,
	    "params"), "direct"));
}

enum {
	SP_THREADS = 1,		/* the thread count too */
	SP_PLACE = 2,		/* the node count too (RP_PLACE) */
	SP_LOOSE = 4,		/* not the per-thread-count parameters */
	SP_POINT = SP_THREADS | SP_PLACE,	/* the whole key of a point */
	SP_UNRAN = 8,		/* not what it ran with, when a side has no figure */
};

/* Is key one of what a phase ran with, as its nodes' results say
 * (bench_report.c)?  A phase no node sent a result for (its prepare
 * failed) records the engine asked for, the request's depth and the
 * defaults there instead: not what its repeats that ran say. */
static int
ran_key(const char *key)
{
	static const char *const keys[] = {
		"params.ioengine", "params.iodepth", "params.cpu_bind", "params.buffer_pages",
	};

	return key_in(key, keys, nitems(keys));
}

/* Has phase record ph no figure (failed, degraded, not finite)? */
static int
no_figure(json_object *ph)
{
	double v;

	return rundoc_metric(ph, &v) < 0;
}

/* The text a JSON value compares by ("null" for a JSON null). */
static const char *
value_text(json_object *v)
{
	return v ? json_object_get_string(v) : "null";
}

/* Are the options of params pa (its keys outside the rundoc table: the
 * measurement options, an external tool's arguments) the same in pb?  A
 * key pb lacks is unknown there, equal to no value; with unran, what a
 * phase ran with is not compared.  The first that differs as
 * "params.KEY" in diff (len bytes, when not NULL). */
static int
options_in(json_object *pa, json_object *pb, int unran, char *diff, size_t len)
{
	char key[96];

	if (pa == NULL)
		return 1;
	json_object_object_foreach(pa, k, v) {
		json_object *w;

		if (json_object_object_get_ex(pb, k, &w) && strcmp(value_text(v), value_text(w)) == 0)
			continue;
		snprintf(key, sizeof(key), "params.%s", k);
		if (rundoc_field(key) || (unran && ran_key(key)))	/* the table's rules decided it */
			continue;
		if (diff)
			snprintf(diff, len, "%s", key);
		return 0;
	}
	return 1;
}

/* Same parameters (every rundoc field marked param, the RP_DIRECT ones
 * when a point is O_DIRECT, every option in params), and what flags (SP_*)
 * add or leave out; the first key that differs in diff (len bytes). */
static int
same_params(json_object *a, json_object *b, int flags, char *diff, size_t len)
{
	int direct = is_direct(a) || is_direct(b);
	int unran = (flags & SP_UNRAN) && (no_figure(a) || no_figure(b));
	json_object *pa = json_object_object_get(a, "params");
	json_object *pb = json_object_object_get(b, "params");

	for (size_t i = 0; i < rundoc_nphase_fields; i++) {
		const struct rundoc_field *f = &rundoc_phase_fields[i];
		json_object *x, *y;

		if (!f->param || (!(flags & SP_THREADS) && strcmp(f->key, "threads") == 0) ||
		    (f->param == RP_PLACE && !(flags & SP_PLACE)) ||
		    ((flags & SP_LOOSE) && per_thread_param(f->key)) ||
		    (f->param == RP_DIRECT && !direct) || (unran && ran_key(f->key)))
			continue;
		x = rundoc_value(a, f);
		y = rundoc_value(b, f);
		if (strcmp(x ? json_object_get_string(x) : "", y ? json_object_get_string(y) : "")) {
			if (diff)
				snprintf(diff, len, "%s", f->key);
			return 0;
		}
	}
	return options_in(pa, pb, unran, diff, len) && options_in(pb, pa, unran, diff, len);
}

int
points_same_params(const struct point *a, const struct point *b, char *diff, size_t len)
{
	return same_params(a->first, b->first, SP_PLACE, diff, len);
}

int
points_alike_unran(const struct point *a, const struct point *b)
{
	return same_params(a->first, b->first, SP_PLACE | SP_UNRAN, NULL, 0);
}

int
points_same_workload(const struct point *a, const struct point *b, char *diff, size_t len)
{
	json_object *pa = json_object_object_get(a->first, "params");
	json_object *pb = json_object_object_get(b->first, "params");
	const char *wa = js_str(pa, "workload"), *wb = js_str(pb, "workload");

	/* with the request's parameters recorded, a sweep whose size is a total
	 * split over the threads (or has per-thread-count values) stays one
	 * workload */
	if (wa[0] && wb[0]) {
		if (strcmp(wa, wb) != 0) {
			if (diff)
				snprintf(diff, len, "params.workload");
			return 0;
		}
		return same_params(a->first, b->first, SP_LOOSE, diff, len);
	}
	return same_params(a->first, b->first, 0, diff, len);
}

void
points_build(json_object *doc, struct pointset *ps)
{
	json_object *phases;
	size_t i, k, n;

	memset(ps, 0, sizeof(*ps));
	if (!json_object_object_get_ex(doc, "phases", &phases))
		return;
	n = json_object_array_length(phases);
	ps->p = xcalloc(n ? n : 1, sizeof(*ps->p));
	for (i = 0; i < n; i++) {
		json_object *ph = json_object_array_get_idx(phases, i);
		struct point *pt = NULL;
		double v;

		/* a repeat without a figure may not say what it ran with: it
		 * joins the first point it matches but for that */
		for (k = 0; k < ps->n && !pt; k++)
			if (same_params(ps->p[k].first, ph, SP_POINT, NULL, 0))
				pt = &ps->p[k];
		for (k = 0; k < ps->n && !pt; k++)
			if (same_params(ps->p[k].first, ph, SP_POINT | SP_UNRAN, NULL, 0))
				pt = &ps->p[k];
		if (pt != NULL && no_figure(pt->first) && !no_figure(ph))
			pt->first = ph;	/* the key its repeats that ran say */
		if (pt == NULL) {
			pt = &ps->p[ps->n++];
			pt->kind = js_str(ph, "kind");
			pt->threads = (int64_t)js_num(ph, "threads");
			pt->first = ph;
			pt->metric = rundoc_metric_of(pt->kind);
			pt->v = xcalloc(n, sizeof(*pt->v));
			pt->ph = xcalloc(n, sizeof(*pt->ph));
		}
		pt->ph[pt->nphases++] = ph;
		if (rundoc_metric(ph, &v) == 0)
			pt->v[pt->n++] = v;
	}
	for (k = 0; k < ps->n; k++)
		stats_summary(ps->p[k].v, ps->p[k].n, &ps->p[k].st);
}

void
points_free(struct pointset *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		free(ps->p[i].v);
		free(ps->p[i].ph);
	}
	free(ps->p);
	memset(ps, 0, sizeof(*ps));
}

int
points_workload_rep(const struct pointset *ps, size_t i)
{
	const struct point *p = &ps->p[i];
	int64_t nodes = (int64_t)js_num(p->first, "nodes");

	for (size_t k = 0; k < ps->n; k++) {
		const struct point *q = &ps->p[k];
		int64_t qn;

		if (k == i || q->threads != p->threads || !q->st.n ||
		    !points_same_workload(p, q, NULL, 0))
			continue;
		if (!p->st.n)	/* one with a figure stands for the thread count */
			return 0;
		qn = (int64_t)js_num(q->first, "nodes");
		if (qn > nodes || (qn == nodes && k < i))
			return 0;
	}
	return 1;
}

/* Peak and sustained of the workload of ps->p[first]. */
static void
workload_peak(const struct pointset *ps, size_t first, struct peak *pk)
{
	size_t *idx = xcalloc(ps->n, sizeof(*idx)), m = 0, i, k, at = 0;
	double *tail = xcalloc(ps->n, sizeof(*tail));

	for (i = first; i < ps->n; i++)
		if (points_same_workload(&ps->p[first], &ps->p[i], NULL, 0) && ps->p[i].st.n &&
		    points_workload_rep(ps, i))
			idx[m++] = i;
	/* by thread count */
	for (i = 1; i < m; i++)
		for (k = i; k > 0 && ps->p[idx[k - 1]].threads > ps->p[idx[k]].threads; k--) {
			size_t t = idx[k];
			idx[k] = idx[k - 1];
			idx[k - 1] = t;
		}
	memset(pk, 0, sizeof(*pk));
	pk->first = first;
	pk->npoints = m;
	pk->metric = ps->p[first].metric;
	for (i = 0; i < m; i++)
		if (ps->p[idx[i]].st.mean > pk->peak) {
			pk->peak = ps->p[idx[i]].st.mean;
			at = i;
		}
	if (m == 0)
		goto out;
	pk->peak_threads = ps->p[idx[at]].threads;
	pk->min_threads = ps->p[idx[0]].threads;
	pk->max_threads = ps->p[idx[m - 1]].threads;
	for (i = at, k = 0; i < m; i++)
		tail[k++] = ps->p[idx[i]].st.mean;
	pk->sustained = stats_median(tail, k);
out:
	free(idx);
	free(tail);
}

int
points_workload_first(const struct pointset *ps, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (points_same_workload(&ps->p[k], &ps->p[i], NULL, 0))
			return 0;
	return 1;
}

size_t
stats_peaks(const struct pointset *ps, struct peak **out)
{
	size_t n = 0;

	*out = xcalloc(ps->n ? ps->n : 1, sizeof(**out));
	for (size_t i = 0; i < ps->n; i++) {
		if (!points_workload_first(ps, i))
			continue;
		workload_peak(ps, i, &(*out)[n]);
		if ((*out)[n].npoints)
			n++;
	}
	return n;
}

/* Geometric mean of v[0..n); 0 when empty or some value <= 0. */
static double
geomean(const double *v, size_t n)
{
	double s = 0;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!(v[i] > 0))
			return 0;
		s += log(v[i]);
	}
	return exp(s / (double)n);
}

void
stats_io500(const double *bw, size_t nbw, const double *md, size_t nmd, struct io500 *o)
{
	o->bw_gib = geomean(bw, nbw);
	o->md_kiops = geomean(md, nmd);
	o->score = sqrt(o->bw_gib * o->md_kiops);
}
