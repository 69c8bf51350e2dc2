/* Statistics over benchmark points (controller/stats.c): repeats folded
 * into mean, standard deviation, min and max; Welch's t-test for A versus
 * B; peak and sustained per workload.
 *
 * A point is one (kind, parameters, thread count, node count) of a run:
 * the phases of a run with that key are its repeats, and its samples the
 * figures of those that did not fail.  The parameters are the rundoc
 * table's and every other key of a phase's "params" (iodepth, ioengine,
 * runtime_s, an external tool's ext_args, ...); a key one phase did not
 * record is unknown, equal only to another that did not (so is ioengine
 * "auto": the engine asked for, in a phase stored before the one that ran
 * was recorded).  A workload is a
 * point without the thread and node counts. */
#ifndef KNOB_STATS_H
#define KNOB_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

struct sample_stats {
	size_t n;
	double mean, sd, min, max;	/* sd: sample standard deviation (n - 1) */
};
/* Summary of v[0..n); all zero when n is 0, sd 0 when n is 1. */
void stats_summary(const double *v, size_t n, struct sample_stats *out);
/* Median of v[0..n) (v is sorted in place); 0 when n is 0. */
double stats_median(double *v, size_t n);

/* Welch's unequal-variance t-test of the means of a and b. */
struct welch {
	int valid;		/* both sides have n >= 2, and some spread unless
				 * the means are equal (then p 1): with none on
				 * either side a difference cannot be judged;
				 * and finite means and spread (an inf or NaN
				 * sample cannot be judged either) */
	double t;		/* (mean_b - mean_a) / sqrt(sa^2/na + sb^2/nb) */
	double df;		/* Welch-Satterthwaite degrees of freedom */
	double p;		/* two-sided p-value */
};
void stats_welch(const struct sample_stats *a, const struct sample_stats *b, struct welch *out);
/* Two-sided tail probability P(|T| >= |t|) of Student's t with df degrees
 * of freedom (regularised incomplete beta); 1 when t is NaN or df not > 0. */
double stats_t_two_sided(double t, double df);
/* Regularised incomplete beta I_x(a, b). */
double stats_ibeta(double x, double a, double b);

enum verdict { VERDICT_NONE, VERDICT_BETTER, VERDICT_WORSE, VERDICT_NOISE };
/* better / worse when Welch's p < 0.05 (B higher is better), within noise
 * otherwise; none without repeats on both sides or with a NaN p.  Over several points,
 * give it the p that stats_holm adjusted. */
int stats_verdict(const struct welch *w);
/* Holm–Bonferroni adjusted p-values of p[0..n) into adj[0..n) (in p's
 * order): the family-wise error of calling any of n points different
 * stays at the level a single point's would be.  A NaN p counts as 1. */
void stats_holm(const double *p, size_t n, double *adj);
const char *stats_verdict_name(int v);
/* p to three decimals into buf, but a p below 0.05 (a verdict) never as
 * "0.050", the bound it is below: 0.0497 reads "0.0497", 0.04997 "0.0499". */
void stats_p_text(char *buf, size_t len, double p);

struct point {
	const char *kind;
	int64_t threads;
	json_object *first;	/* the point's first phase record (borrowed) */
	json_object **ph;	/* all its phase records, the repeats (borrowed) */
	double *v;		/* samples: figures of the repeats that did not fail */
	size_t n, nphases;
	struct sample_stats st;
	int metric;		/* enum metric */
};
struct pointset {
	struct point *p;
	size_t n;
};
/* The points of a run document, in the order they first appear; no two
 * share a key. */
void points_build(json_object *doc, struct pointset *ps);
void points_free(struct pointset *ps);
/* 1 when a and b have the same kind, node count and every parameter equal
 * (threads not compared); the first differing key ("params.iodepth",
 * "nodes") into diff (len bytes) when diff is not NULL. */
int points_same_params(const struct point *a, const struct point *b, char *diff, size_t len);
/* points_same_params, but what a point ran with (engine, queue depth, CPU
 * binding, buffer pages) not compared when either has no figure: a point
 * whose repeats all failed before any node said what it ran. */
int points_alike_unran(const struct point *a, const struct point *b);
/* 1 when a and b belong to one workload: the same request (kind and
 * parameters as asked, before a total size is split over the threads or
 * per-thread-count values apply); diff as points_same_params. */
int points_same_workload(const struct point *a, const struct point *b, char *diff, size_t len);
/* 1 when ps->p[i] is the point of its workload and thread count that
 * figures in peaks, charts and scores: the one on the most nodes (a
 * repeat that lost a node is a point of its own, on fewer), the first on
 * a tie; points without a figure do not count against it, and are the
 * one only when no point there has a figure. */
int points_workload_rep(const struct pointset *ps, size_t i);
/* 1 when ps->p[i] is the first point of its workload. */
int points_workload_first(const struct pointset *ps, size_t i);

/* Peak and sustained of one workload: peak = the largest mean over thread
 * counts, and where; sustained = the median of the means from the peak's
 * thread count on. */
struct peak {
	size_t first;		/* index in the pointset of the workload's first point */
	double peak, sustained;
	int64_t peak_threads, min_threads, max_threads;
	size_t npoints;
	int metric;
};
/* One entry per workload with at least one figure; *out malloc'd. */
size_t stats_peaks(const struct pointset *ps, struct peak **out);

/* The IO500-like score: bandwidth = geometric mean of bw (GiB/s), metadata
 * = geometric mean of md (kIOPS), score = sqrt(bandwidth * metadata).  0
 * when a list is empty or holds a value <= 0. */
struct io500 {
	double bw_gib, md_kiops, score;
};
void stats_io500(const double *bw_gib, size_t nbw, const double *md_kiops, size_t nmd,
    struct io500 *out);

#endif
