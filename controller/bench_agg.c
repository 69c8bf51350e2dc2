/* The pure maths of a bench run (check_bench_unit tests them): clock offset
 * samples, the aggregate of a phase on the controller's clock (first done,
 * merged latency histograms), the cache warning and the stonewall record. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "hist.h"
#include "log.h"
#include "util.h"

int64_t
bench_offset_sample(uint64_t t_send, uint64_t t_recv, uint64_t agent)
{
	uint64_t mid = t_send + (t_recv - t_send) / 2;

	return (int64_t)(agent - mid);
}

/* "1.50 GiB" or "4.0 MiB". */
static void
fmt_gib(char *buf, size_t len, uint64_t b)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", (double)b / (double)(1ull << 30));
	else
		snprintf(buf, len, "%.1f MiB", (double)b / (double)(1ull << 20));
}

enum { CL_NONE, CL_RAM, CL_POOL };	/* what bounds the cache */
enum { CF_DIRECT = 1, CF_FSYNC = 2, CF_DROP = 4 };

/* Cache rules, first match of file system and phase wins; the flags in
 * quiet make the rule say nothing (the run does not measure the cache). */
static const struct cache_rule {
	const char *fs;			/* file system type, NULL = any other */
	int what;			/* CW_* */
	int quiet;			/* CF_* */
	int limit;			/* CL_* */
	const char *says;
} cache_rules[] = {
	{ "tmpfs", CW_READ, 0, CL_NONE, "the data lives in memory: this measures memory, not storage" },
	{ "tmpfs", CW_WRITE, 0, CL_NONE, "the data lives in memory: this measures memory, not storage" },
	{ "tmpfs", CW_MDREAD, 0, CL_NONE, "the data lives in memory: this measures memory, not storage" },
	{ "gpfs", CW_READ, CF_DIRECT, CL_POOL,
	  "this measures the GPFS cache (--drop-caches does not empty the pagepool)" },
	{ "gpfs", CW_MDREAD, CF_DIRECT, CL_POOL,
	  "this measures the GPFS cache (--drop-caches does not empty the pagepool)" },
	{ "gpfs", CW_WRITE, CF_DIRECT | CF_FSYNC, CL_POOL,
	  "buffered without --fsync, this measures the pagepool" },
	{ NULL, CW_READ, CF_DIRECT | CF_DROP, CL_RAM,
	  "this measures the page cache (use --drop-caches or --direct)" },
	{ NULL, CW_MDREAD, CF_DIRECT | CF_DROP, CL_RAM,
	  "md-read right after md-create reads the page cache (use --drop-caches)" },
	{ NULL, CW_WRITE, CF_DIRECT | CF_FSYNC, CL_RAM,
	  "buffered without --fsync, this measures the page cache (use --fsync or --direct)" },
};

/* What a run that wrapped over its data measured despite --drop-caches. */
static const char wrap_says[] = "the time-based run wrapped over data it had read after the "
    "one --drop-caches (in prepare): every pass after the first reads the page cache "
    "(use --direct)";

static const char *const cache_verbs[] = {
	[CW_NONE] = "", [CW_READ] = "reads", [CW_WRITE] = "writes", [CW_MDREAD] = "md-read reads",
};

/* The rule for a file system and phase: its own, else the general one. */
static const struct cache_rule *
cache_rule_for(const char *fs, int what)
{
	const struct cache_rule *other = NULL;

	for (size_t i = 0; i < nitems(cache_rules); i++) {
		const struct cache_rule *r = &cache_rules[i];

		if (r->what != what)
			continue;
		if (r->fs == NULL) {
			if (other == NULL)
				other = r;
		} else if (fs && strcmp(r->fs, fs) == 0)
			return r;
	}
	return other;
}

int
bench_cache_warning(char *buf, size_t len, const struct bench_cache_in *in)
{
	const struct cache_rule *r = cache_rule_for(in->fs_type, in->what);
	int flags = (in->direct ? CF_DIRECT : 0) | (in->fsync ? CF_FSYNC : 0) |
	    (in->drop_caches ? CF_DROP : 0);
	uint64_t lim = 0;
	char amount[32], l[32];
	const char *says;

	buf[0] = '\0';
	if (in->wrapped)
		flags &= ~CF_DROP;	/* dropped once, before the first pass */
	if (r == NULL || (flags & r->quiet))
		return 0;
	says = in->wrapped && in->drop_caches && (r->quiet & CF_DROP) ? wrap_says : r->says;
	if (r->limit != CL_NONE) {
		lim = r->limit == CL_RAM ? in->mem_kb * 1024 : in->pagepool;
		if (lim == 0 || in->bytes >= 2 * lim)
			return 0;
	}
	fmt_gib(amount, sizeof(amount), in->bytes);
	fmt_gib(l, sizeof(l), lim);
	if (r->limit == CL_NONE)
		snprintf(buf, len, "%s %s per node on %s: %s", cache_verbs[in->what], amount,
		    in->fs_type, says);
	else
		snprintf(buf, len, "%s %s per node, under twice the node's %s (%s): %s",
		    cache_verbs[in->what], amount, r->limit == CL_RAM ? "RAM" : "GPFS pagepool", l,
		    says);
	return 1;
}

uint64_t
bench_to_ctl(uint64_t t, int64_t off)
{
	return (uint64_t)((int64_t)t - off);
}

/* A node's count at first_end (controller clock): measured, or estimated
 * at an even pace (then *measured is cleared). */
static double
node_first_done(const Knob__PhaseResult *r, int64_t off, uint64_t first_end, int md,
    int *measured)
{
	double done = 0;

	if (r == NULL || r->n_threads == 0)
		return 0;
	if (r->first_done_ns) {
		for (size_t k = 0; k < r->n_threads; k++)
			done += (double)(md ? r->threads[k]->first_done_ops :
			    r->threads[k]->first_done_bytes);
		return done;
	}
	*measured = 0;
	for (size_t k = 0; k < r->n_threads; k++) {
		const Knob__ThreadResult *t = r->threads[k];
		uint64_t s = bench_to_ctl(t->start_ns, off), e = bench_to_ctl(t->end_ns, off);
		double amount = (double)(md ? t->ops : t->bytes);

		if (t->start_ns == 0 || e <= s)
			continue;
		done += first_end <= s ? 0 : first_end >= e ? amount :
		    amount * (double)(first_end - s) / (double)(e - s);
	}
	return done;
}

int
bench_aggregate(const Knob__PhaseResult *const *res, const int64_t *off, size_t n,
    int md, struct bench_agg *o)
{
	struct hist *h = xmalloc(sizeof(*h));
	uint64_t first_end = UINT64_MAX, nstart_min = UINT64_MAX, nstart_max = 0;
	double done = 0;
	size_t i, k;
	int have = 0;

	memset(o, 0, sizeof(*o));
	hist_init(h);
	o->t_start = UINT64_MAX;
	for (i = 0; i < n; i++) {
		const Knob__PhaseResult *r = res[i];
		uint64_t s, e;

		if (r == NULL)
			continue;
		o->bytes += r->bytes;
		o->ops += r->ops;
		o->cpu_s += (double)r->cpu_ns / 1e9;
		if (r->latency && hist_merge_proto(h, r->latency) < 0)
			log_warnx("%s: malformed latency histogram ignored", r->node);
		/* nodes that did no work (an idle MPI peer) carry no timing */
		if (r->start_ns == 0 || r->end_ns < r->start_ns ||
		    (r->bytes == 0 && r->ops == 0 && r->n_threads == 0))
			continue;
		s = bench_to_ctl(r->start_ns, off[i]);
		e = bench_to_ctl(r->end_ns, off[i]);
		have = 1;
		if (s < o->t_start)
			o->t_start = s;
		if (e > o->t_end)
			o->t_end = e;
		if (s < nstart_min)
			nstart_min = s;
		if (s > nstart_max)
			nstart_max = s;
		for (k = 0; k < r->n_threads; k++)
			if (r->threads[k]->end_ns && bench_to_ctl(r->threads[k]->end_ns, off[i]) < first_end)
				first_end = bench_to_ctl(r->threads[k]->end_ns, off[i]);
	}
	if (!have) {
		free(h);
		o->t_start = 0;
		return -1;
	}
	o->elapsed_s = (double)(o->t_end - o->t_start) / 1e9;
	o->rate = o->elapsed_s > 0 ? (double)(md ? o->ops : o->bytes) / o->elapsed_s : 0;
	o->last_done_rate = o->rate;
	o->spread_s = (double)(nstart_max - nstart_min) / 1e9;
	/* first done: every thread's count at the moment the first thread of
	 * the phase ended, as the agents measured it from their checkpoints
	 * (the moment they were given); a node without the figures is
	 * estimated at an even pace over each thread's run, and said so */
	o->first_done_measured = 1;
	for (i = 0; i < n; i++)
		if (res[i] && res[i]->first_done_ns &&
		    bench_to_ctl(res[i]->first_done_ns, off[i]) < first_end)
			first_end = bench_to_ctl(res[i]->first_done_ns, off[i]);
	if (first_end != UINT64_MAX && first_end > o->t_start) {
		for (i = 0; i < n; i++)
			done += node_first_done(res[i], off[i], first_end, md, &o->first_done_measured);
		o->first_done_s = (double)(first_end - o->t_start) / 1e9;
		o->first_done_rate = done / o->first_done_s;
	}
	o->nlat = h->total;
	o->p50 = hist_quantile(h, 0.50);
	o->p99 = hist_quantile(h, 0.99);
	o->p999 = hist_quantile(h, 0.999);
	free(h);
	return 0;
}

/* fio, ior and mdtest report percentiles per node (and op), not
 * histograms, and percentiles do not merge: each of p50, p99 and p99.9 is
 * the largest any node reported, a bound on the phase's, not the exact
 * merge the built-in engine's histograms give. */
void
bench_ext_percentiles(const Knob__PhaseResult *const *res, size_t n, struct bench_agg *ag)
{
	for (size_t i = 0; ag->nlat == 0 && i < n; i++)
		for (size_t k = 0; res[i] && k < res[i]->n_ext_ops; k++) {
			const Knob__PhaseExtOp *x = res[i]->ext_ops[k];

			if (x->lat_p50_ns > (double)ag->p50)
				ag->p50 = (uint64_t)x->lat_p50_ns;
			if (x->lat_p99_ns > (double)ag->p99)
				ag->p99 = (uint64_t)x->lat_p99_ns;
			if (x->lat_p999_ns > (double)ag->p999)
				ag->p999 = (uint64_t)x->lat_p999_ns;
		}
}

/* The counts of a phase at the stonewall, over its threads. */
struct wall_sum {
	uint64_t wmin, wmax, omin, omax, nthr, nhit, ndone;
	uint64_t wall_end;		/* controller clock, 0 = not known */
	int unknown;			/* a thread stopped at the wall at no known time */
	double units;			/* bytes (ops for md) done by the wall */
};

/* Add thread t (agent clock offset off) to the wall sums: a thread that
 * stopped at the wall counts its ops there; one that finished before the
 * wall without an error, as IOR counts a rank that already finished, all
 * of its work, and its end is a stop at the wall.  Failed threads do not
 * count. */
static void
wall_add(struct wall_sum *w, const Knob__ThreadResult *t, int64_t off, int md)
{
	uint64_t at, stop;

	w->nthr++;
	w->omin = t->ops < w->omin ? t->ops : w->omin;
	w->omax = t->ops > w->omax ? t->ops : w->omax;
	if (t->stonewall_ops) {
		w->nhit++;
		at = t->stonewall_ops;
		stop = t->stonewall_ns;
		w->unknown |= stop == 0;
		w->units += md || t->ops == 0 ? (double)at :
		    (double)at * ((double)t->bytes / (double)t->ops);
	} else if (t->error[0] == '\0' && t->ops > 0) {
		w->ndone++;
		at = t->ops;
		stop = t->end_ns;
		w->units += (double)(md ? t->ops : t->bytes);
	} else
		return;
	if (stop && bench_to_ctl(stop, off) > w->wall_end)
		w->wall_end = bench_to_ctl(stop, off);
	w->wmin = at < w->wmin ? at : w->wmin;
	w->wmax = at > w->wmax ? at : w->wmax;
}

/* The stonewall figures of a phase: per thread counts at the wall (a
 * thread that finished before it: all its ops) and at the end, the target
 * every thread wore out to, the aggregate rate up to the wall (IOR's
 * stonewall rate: every thread's work by the wall over the time from the
 * earliest start to the last stop at the wall or end before it) and how
 * long the wear-out took.  With no thread at the wall that time is the
 * phase's elapsed time and the rate the phase's rate. */
json_object *
bench_stonewall_record(const Knob__PhaseResult *const *res, const int64_t *off, size_t n,
    int across, uint32_t stonewall_s, uint64_t target, int md, const struct bench_agg *ag)
{
	struct wall_sum w = { .wmin = UINT64_MAX, .omin = UINT64_MAX };
	json_object *sw = json_object_new_object();
	double wall_s;

	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; res[i] && k < res[i]->n_threads; k++)
			wall_add(&w, res[i]->threads[k], off[i], md);
	/* agents that do not say when a thread stopped: the nominal wall */
	if (w.nhit && w.unknown)
		wall_s = (double)stonewall_s;
	else if (w.nhit == 0)
		wall_s = ag->elapsed_s;
	else
		wall_s = w.wall_end > ag->t_start ? (double)(w.wall_end - ag->t_start) / 1e9 : 0;
	json_object_object_add(sw, "seconds", json_object_new_int64(stonewall_s));
	json_object_object_add(sw, "across_nodes", json_object_new_boolean(across));
	json_object_object_add(sw, "target_ops", json_object_new_int64((int64_t)target));
	json_object_object_add(sw, "threads", json_object_new_int64((int64_t)w.nthr));
	json_object_object_add(sw, "threads_at_wall", json_object_new_int64((int64_t)w.nhit));
	json_object_object_add(sw, "threads_done_before_wall",
	    json_object_new_int64((int64_t)w.ndone));
	json_object_object_add(sw, "min_ops_at_wall", json_object_new_int64(w.wmax ?
	    (int64_t)w.wmin : 0));
	json_object_object_add(sw, "max_ops_at_wall", json_object_new_int64((int64_t)w.wmax));
	json_object_object_add(sw, "min_ops", json_object_new_int64(w.nthr ? (int64_t)w.omin : 0));
	json_object_object_add(sw, "max_ops", json_object_new_int64((int64_t)w.omax));
	json_object_object_add(sw, "wall_elapsed_s", json_object_new_double(wall_s));
	json_object_object_add(sw, "rate_at_wall", json_object_new_double(wall_s > 0 ?
	    w.units / wall_s : 0));
	json_object_object_add(sw, "wearout_s", json_object_new_double(w.nhit &&
	    ag->elapsed_s > stonewall_s ? ag->elapsed_s - stonewall_s : 0));
	return sw;
}
