/* Coordinated benchmark phases: clock offsets from ping round trips,
 * PhasePrepare to all -> all PhaseReady -> PhaseGo to all at once,
 * progress, results, aggregation on the controller's clock, degraded
 * results naming missing nodes.  One fan-out (one connection per node) for
 * the whole sweep, so files kept between a write and a read phase stay tied
 * to this controller's connections.
 *
 * Stonewall (IOR semantics across nodes): each node reports its largest
 * count when all its threads stopped at the wall (PhaseProgress
 * at_stonewall); once every live node of the phase reported (or ended: a
 * dead node is marked missing as always and does not hold the others), the
 * largest count of all goes to every node (PhaseGo wearout) and each thread
 * runs on to it, so every thread finishes the same number of operations.
 *
 * After the last phase on a set of files the controller releases them
 * (PhaseAbort workdir_id) and waits, up to RELEASE_WAIT_S, for every node
 * to confirm the removal, so that knobctl exits with the files gone. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "bench_ctl.h"
#include "sweep.h"
#include "hist.h"
#include "log.h"
#include "nodeset.h"
#include "rundoc.h"
#include "util.h"

#define SYNC_PINGS	5
#define RELEASE_WAIT_S	10	/* wait this long for the agents' clean-up */

static const struct {
	const char *name;
	int md, ext;
	int cache;			/* CW_*: what the cache warning checks */
} ckinds[] = {
	{ "seq-write", 0, 0, CW_WRITE }, { "seq-read", 0, 0, CW_READ },
	{ "rand-write", 0, 0, CW_WRITE }, { "rand-read", 0, 0, CW_READ },
	{ "md-create", 1, 0, CW_NONE }, { "md-stat", 1, 0, CW_NONE },
	{ "md-read", 1, 0, CW_MDREAD }, { "md-remove", 1, 0, CW_NONE },
	{ "rand-rw", 0, 0, CW_READ }, { "md-mkdir", 1, 0, CW_NONE },
	{ "md-dirstat", 1, 0, CW_NONE }, { "md-rmdir", 1, 0, CW_NONE },
	{ "fio", 0, 1, CW_NONE }, { "ior", 0, 1, CW_NONE }, { "mdtest", 1, 1, CW_NONE },
};

static const struct {
	const char *name;
	const char *expands;
} composites[] = {
	{ "seq", "seq-write,seq-read" },
	{ "rand", "rand-write,rand-read" },
	{ "md", "md-create,md-stat,md-read,md-remove" },
	{ "mddir", "md-mkdir,md-dirstat,md-rmdir" },
	{ "all", "seq-write,seq-read,rand-write,rand-read,md-create,md-stat,md-read,md-remove" },
};

static int
kind_index(const char *k)
{
	for (size_t i = 0; i < nitems(ckinds); i++)
		if (strcmp(ckinds[i].name, k) == 0)
			return (int)i;
	return -1;
}

static int kind_is_md(const char *k) { int i = kind_index(k); return i >= 0 && ckinds[i].md; }
static int kind_is_ext(const char *k) { int i = kind_index(k); return i >= 0 && ckinds[i].ext; }
static int kind_cache(const char *k) { int i = kind_index(k); return i >= 0 ? ckinds[i].cache : CW_NONE; }

int
bench_expand_kinds(const char *s, struct strvec *out, char *err, size_t errlen)
{
	char *dup = xstrdup(s), *t, *save = NULL;
	int rc = 0;

	for (t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < nitems(composites); i++)
			if (strcmp(t, composites[i].name) == 0)
				break;
		if (i < nitems(composites)) {
			if (bench_expand_kinds(composites[i].expands, out, err, errlen) < 0)
				rc = -1;
			continue;
		}
		if (kind_index(t) < 0) {
			snprintf(err, errlen, "unknown benchmark kind '%s' (seq-write, seq-read, "
			    "rand-write, rand-read, rand-rw, md-create, md-stat, md-read, md-remove, "
			    "md-mkdir, md-dirstat, md-rmdir, fio, ior, mdtest, or seq, rand, md, "
			    "mddir, all)", t);
			rc = -1;
			break;
		}
		strvec_push(out, t);
	}
	free(dup);
	if (rc == 0 && out->n == 0) {
		snprintf(err, errlen, "no benchmark kind given");
		rc = -1;
	}
	return rc;
}

int
bench_parse_size(const char *s, uint64_t *out)
{
	static const struct { const char *suf; uint64_t mul; } units[] = {
		{ "", 1 }, { "b", 1 }, { "k", 1ull << 10 }, { "kb", 1ull << 10 }, { "kib", 1ull << 10 },
		{ "m", 1ull << 20 }, { "mb", 1ull << 20 }, { "mib", 1ull << 20 },
		{ "g", 1ull << 30 }, { "gb", 1ull << 30 }, { "gib", 1ull << 30 },
		{ "t", 1ull << 40 }, { "tb", 1ull << 40 }, { "tib", 1ull << 40 },
	};
	char *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	for (size_t i = 0; i < nitems(units); i++)
		if (strcasecmp(end, units[i].suf) == 0) {
			if (v > UINT64_MAX / units[i].mul)
				return -1;
			*out = v * units[i].mul;
			return 0;
		}
	return -1;
}

int
bench_parse_sweep(const char *s, uint32_t **out, size_t *n, char *err, size_t errlen)
{
	char *dup = xstrdup(s), *t, *save = NULL, *end;
	uint32_t *v = NULL;
	size_t cnt = 0, cap = 0;
	int rc = -1;

	for (t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned long a, b;
		char *dots = strstr(t, "..");

		errno = 0;
		a = strtoul(t, &end, 10);
		if (end == t || errno || a == 0 || a > (1ul << 20))
			goto bad;
		if (dots) {
			if (end != dots)
				goto bad;
			b = strtoul(dots + 2, &end, 10);
			if (end == dots + 2 || *end || errno || b < a || b > (1ul << 20))
				goto bad;
		} else {
			if (*end)
				goto bad;
			b = a;
		}
		for (unsigned long x = a; x <= b; x *= 2) {
			if (cnt == cap) {
				cap = cap ? cap * 2 : 16;
				v = xrealloc(v, cap * sizeof(*v));
			}
			v[cnt++] = (uint32_t)x;
			if (!dots)
				break;
		}
	}
	if (cnt == 0)
		goto bad;
	*out = v;
	*n = cnt;
	v = NULL;
	rc = 0;
	goto out;
bad:
	snprintf(err, errlen, "bad thread list '%s' (use 1,2,4 or 1..1024 for powers of two; "
	    "1 to 1048576)", s);
out:
	free(v);
	free(dup);
	return rc;
}

size_t
bench_place(uint32_t threads, size_t nnodes, size_t idx, uint32_t *ranks)
{
	size_t n = 0;

	for (uint32_t r = (uint32_t)idx; nnodes && r < threads; r += (uint32_t)nnodes)
		ranks[n++] = r;
	return n;
}

size_t
bench_nodes_used(uint32_t threads, size_t nnodes)
{
	return threads < nnodes ? threads : nnodes;
}

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

	buf[0] = '\0';
	if (r == NULL || (flags & r->quiet))
		return 0;
	if (r->limit != CL_NONE) {
		lim = r->limit == CL_RAM ? in->mem_kb * 1024 : in->pagepool;
		if (lim == 0 || in->bytes >= 2 * lim)
			return 0;
	}
	fmt_gib(amount, sizeof(amount), in->bytes);
	fmt_gib(l, sizeof(l), lim);
	if (r->limit == CL_NONE)
		snprintf(buf, len, "%s %s per node on %s: %s", cache_verbs[in->what], amount,
		    in->fs_type, r->says);
	else
		snprintf(buf, len, "%s %s per node, under twice the node's %s (%s): %s",
		    cache_verbs[in->what], amount, r->limit == CL_RAM ? "RAM" : "GPFS pagepool", l,
		    r->says);
	return 1;
}

/* agent clock -> controller clock */
static uint64_t
to_ctl(uint64_t t, int64_t off)
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
		uint64_t s = to_ctl(t->start_ns, off), e = to_ctl(t->end_ns, off);
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
		s = to_ctl(r->start_ns, off[i]);
		e = to_ctl(r->end_ns, off[i]);
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
			if (r->threads[k]->end_ns && to_ctl(r->threads[k]->end_ns, off[i]) < first_end)
				first_end = to_ctl(r->threads[k]->end_ns, off[i]);
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
		    to_ctl(res[i]->first_done_ns, off[i]) < first_end)
			first_end = to_ctl(res[i]->first_done_ns, off[i]);
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

/* ------------------------------------------------------------ the run */

enum { ST_SYNC, ST_PREPARE, ST_RUN, ST_ABORTING, ST_RELEASE, ST_DONE };
enum { PN_IDLE, PN_PREP, PN_READY, PN_GO, PN_DONE };

struct pnode {
	int alive;
	int synced, npings;
	uint64_t best_rtt;
	int64_t off;
	uint64_t last_ping_ns;		/* monotonic */
	int inphase;
	int st;
	uint32_t *ranks;
	size_t nranks;
	size_t used_idx;
	Knob__Envelope *ready, *result;
	char *err;
	uint64_t prog_bytes, prog_ops;
	char *death;			/* why it ended, if it did */
	int wall_sync;			/* PhaseReady: will report at the stonewall */
	int wall_rep;			/* reported */
	uint64_t wall_max;		/* its largest count at the wall */
	int rel_wait;			/* release sent, confirmation pending */
	int fd_rep;			/* first done: its first thread's end is in */
	uint64_t fd_end;		/* that end, controller clock */
	int nsyncs;			/* clock syncs done (one before every phase) */
	int64_t off_prev;		/* offset measured before the previous phase */
	int64_t off_change;		/* off - off_prev at the last sync */
};

struct plan {
	const char *kind;
	uint32_t threads, repeat;
	uint64_t bs, size, md_files;	/* after size-total and per-thread-count overrides */
	uint64_t files_total;		/* exact total of md items (0: md_files each) */
	uint64_t stripe_count, stripe_size;
	char workdir[72];
	int keep;
};

struct brun {
	struct ctl *ctl;
	const struct bench_req *req;
	struct fanout *fo;
	struct pnode *pn;
	struct plan *plan;
	size_t nplan, cur;
	int stage;
	char run_id[40];
	char phase_id[64];
	uint64_t go_mono;
	json_object *doc, *phases;
	int bad;
	int drawn;
	uint64_t last_draw;
	uint64_t sync_deadline;
	int wall_sent;			/* wear-out target sent this phase */
	uint64_t wall_target;
	uint64_t rel_deadline;		/* ST_RELEASE: monotonic */
	int fd_sent;			/* first-done moment sent this phase */
	uint64_t fd_t;			/* that moment, controller clock */
	int64_t off_change_max;		/* largest |offset change| between syncs */
	const char *off_change_node;
	char off_change_phase[64];
	int nsyncs;
};

static void start_phase(struct brun *br);
static void advance(struct brun *br);
static void finish(struct brun *br);

static void
send_ping(struct brun *br, struct fo_node *n)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping p = KNOB__PING__INIT;

	p.t_send_ns = now_real_ns();
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &p;
	br->pn[n->idx].last_ping_ns = now_mono_ns();
	fanout_send(br->fo, n, &env);
}

static int
on_open(struct fanout *fo, struct fo_node *n)
{
	struct brun *br = fo->user;

	send_ping(br, n);
	return 0;
}

static void
clear_line(struct brun *br)
{
	if (br->drawn) {
		fprintf(stderr, "\r\033[K");
		br->drawn = 0;
	}
}

/* A live or logged rate in the run's unit family. */
static void
fmt_rate(char *buf, size_t len, double rate, int md, int decimal)
{
	rundoc_fmt_rate(buf, len, rate, md ? M_OPS : M_BW, decimal);
}

/* Live line on a terminal: current aggregate rate and elapsed time. */
static void
draw_progress(struct brun *br)
{
	const struct plan *p = &br->plan[br->cur];
	uint64_t b = 0, o = 0, now = now_mono_ns();
	double el = (double)(now - br->go_mono) / 1e9;
	char rate[32];
	size_t i, used = 0;

	if (!br->ctl->tty || br->stage != ST_RUN || now - br->last_draw < 1000000000ull)
		return;
	br->last_draw = now;
	for (i = 0; i < br->fo->n; i++)
		if (br->pn[i].inphase) {
			b += br->pn[i].prog_bytes;
			o += br->pn[i].prog_ops;
			used++;
		}
	fmt_rate(rate, sizeof(rate), el > 0 ? (double)(kind_is_md(p->kind) ? o : b) / el : 0,
	    kind_is_md(p->kind), br->ctl->units_decimal);
	fprintf(stderr, "\r\033[K%s  %u threads  %zu nodes  %s  %.1f s", p->kind, p->threads,
	    used, rate, el);
	fflush(stderr);
	br->drawn = 1;
}

static Knob__PhaseSpec *
make_spec(struct brun *br, const struct plan *p, struct pnode *pn, size_t nused,
    char **hosts, uint32_t *slots)
{
	const struct bench_req *rq = br->req;
	Knob__PhaseSpec *s = xmalloc(sizeof(*s));

	knob__phase_spec__init(s);
	s->phase_id = br->phase_id;
	s->workdir_id = (char *)(uintptr_t)p->workdir;
	s->kind = (char *)(uintptr_t)p->kind;
	s->dir = (char *)(uintptr_t)rq->dir;
	s->block_size = p->bs;
	s->file_size = p->size;
	s->threads_total = p->threads;
	s->ranks = pn->ranks;
	s->n_ranks = pn->nranks;
	s->shared = rq->shared;
	s->odirect = rq->direct;
	s->fsync = rq->fsync;
	s->stonewall_s = rq->stonewall_s;
	s->files_per_dir = rq->files_per_dir;
	s->md_write_size = rq->write_size;
	s->md_files = p->md_files;
	/* with files_total the agents give rank r total/N, +1 for r < total%N */
	s->files_total = p->files_total;
	s->verify = rq->verify;
	s->compress_pct = rq->compress_pct;
	s->md_relative = rq->md_relative;
	s->md_shared = rq->md_shared;
	s->md_depth = rq->md_depth;
	s->md_branch = rq->md_branch;
	s->md_leaf_only = rq->md_leaf_only;
	s->queue_depth = rq->iodepth;
	s->ioengine = (char *)(uintptr_t)(rq->ioengine ? rq->ioengine : "");
	s->runtime_s = rq->runtime_s;
	s->rwmix_read = rq->rwmix;
	s->fallocate = rq->fallocate;
	s->segments = rq->segments;
	s->stripe_count = (uint32_t)p->stripe_count;
	s->stripe_size = p->stripe_size;
	s->drop_caches = rq->drop_caches;
	s->reader_shift = rq->reader_shift;
	s->lease_s = rq->lease_s;
	s->nodes_total = (uint32_t)nused;
	s->node_index = (uint32_t)pn->used_idx;
	s->ext_args = rq->ext_args.v;
	s->n_ext_args = rq->ext_args.n;
	s->keep_files = p->keep;
	s->persist_files = rq->keep;
	s->rate_iops = rq->rate_iops;
	s->test_rate_iops = rq->test_rate_iops;
	s->stonewall_sync = rq->stonewall_s != 0;
	s->ext_timeout_s = rq->ext_timeout_s;
	s->ext_tool = (char *)(uintptr_t)(rq->ext_tool ? rq->ext_tool : "");
	s->mpirun = (char *)(uintptr_t)(rq->mpirun ? rq->mpirun : "");
	s->mpirun_args = (char *)(uintptr_t)(rq->mpirun_args ? rq->mpirun_args : "");
	s->first_done_sync = !kind_is_ext(p->kind);
	s->seed = rq->seed;
	s->hosts = hosts;
	s->n_hosts = hosts ? nused : 0;
	s->host_slots = slots;
	s->n_host_slots = hosts ? nused : 0;
	return s;
}

/* Send PhasePrepare for plan[cur] to the nodes that get ranks. */
static void
start_phase(struct brun *br)
{
	const struct plan *p = &br->plan[br->cur];
	size_t i, nalive = 0, used_idx = 0, nused;
	char **hosts;
	uint32_t *slots;

	snprintf(br->phase_id, sizeof(br->phase_id), "%s-p%zu", br->run_id, br->cur + 1);
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		pn->inphase = 0;
		pn->st = PN_IDLE;
		pn->prog_bytes = pn->prog_ops = 0;
		pn->wall_sync = pn->wall_rep = 0;
		pn->wall_max = 0;
		pn->fd_rep = 0;
		pn->fd_end = 0;
		free(pn->err);
		pn->err = NULL;
		if (pn->ready)
			knob__envelope__free_unpacked(pn->ready, NULL);
		if (pn->result)
			knob__envelope__free_unpacked(pn->result, NULL);
		pn->ready = pn->result = NULL;
		if (pn->alive)
			nalive++;
	}
	nused = bench_nodes_used(p->threads, nalive);
	hosts = xcalloc(nused + 1, sizeof(*hosts));
	slots = xcalloc(nused + 1, sizeof(*slots));
	for (i = 0; i < br->fo->n && used_idx < nused; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->alive)
			continue;
		free(pn->ranks);
		pn->ranks = xcalloc(p->threads / nalive + 2, sizeof(*pn->ranks));
		pn->nranks = bench_place(p->threads, nalive, used_idx, pn->ranks);
		pn->used_idx = used_idx;
		hosts[used_idx] = br->fo->nodes[i].name;
		slots[used_idx] = (uint32_t)pn->nranks;
		pn->inphase = 1;
		used_idx++;
	}
	br->stage = ST_PREPARE;
	br->wall_sent = 0;
	br->wall_target = 0;
	br->fd_sent = 0;
	br->fd_t = 0;
	log_info("phase %s: %s, %u threads on %zu nodes", br->phase_id, p->kind, p->threads, nused);
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];
		Knob__Envelope env = KNOB__ENVELOPE__INIT;
		Knob__PhasePrepare pp = KNOB__PHASE_PREPARE__INIT;
		int ext = kind_is_ext(p->kind) && strcmp(p->kind, "fio") != 0;

		if (!pn->inphase)
			continue;
		pp.spec = make_spec(br, p, pn, nused, ext ? hosts : NULL, ext ? slots : NULL);
		env.body_case = KNOB__ENVELOPE__BODY_PHASE_PREPARE;
		env.phase_prepare = &pp;
		pn->st = PN_PREP;
		fanout_send(br->fo, &br->fo->nodes[i], &env);
		free(pp.spec);
	}
	free(hosts);
	free(slots);
	advance(br);
}

/* Send a body to every node of the phase in state st (then mark it next). */
static void
send_all(struct brun *br, int st, int next, Knob__Envelope *env)
{
	for (size_t i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase || !pn->alive || pn->st != st)
			continue;
		env->id = 0;
		pn->st = next;
		fanout_send(br->fo, &br->fo->nodes[i], env);
	}
}

static json_object *
jstr(const char *s)
{
	return json_object_new_string(s ? s : "");
}

/* A JSON string from a format. */
static json_object *
jfmt(const char *fmt, ...)
{
	json_object *o;
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	o = json_object_new_string(s ? s : "");
	free(s);
	return o;
}

static double
rel_s(uint64_t t, uint64_t t0)
{
	return t >= t0 ? (double)(t - t0) / 1e9 : -(double)(t0 - t) / 1e9;
}

/* Record that node reported warning w (texts in *text, nodes per text in
 * (*nodes)[i]); each node once per text. */
static void
add_warning(struct strvec *text, struct strvec **nodes, const char *w, const char *node)
{
	size_t i;

	for (i = 0; i < text->n; i++)
		if (strcmp(text->v[i], w) == 0)
			break;
	if (i == text->n) {
		strvec_push(text, w);
		*nodes = xrealloc(*nodes, text->n * sizeof(**nodes));
		memset(&(*nodes)[i], 0, sizeof(**nodes));
	}
	if (!strvec_contains(&(*nodes)[i], node))
		strvec_push(&(*nodes)[i], node);
}

/* The stonewall figures of a phase: per thread counts at the wall and at
 * the end, the target every thread wore out to, the aggregate rate up to
 * the wall (IOR's stonewall rate) and how long the wear-out took. */
static json_object *
stonewall_record(const struct brun *br, const Knob__PhaseResult *const *res,
    const int64_t *off, int md, const struct bench_agg *ag)
{
	uint64_t wall_end = 0;
	json_object *sw = json_object_new_object();
	uint64_t wmin = UINT64_MAX, wmax = 0, omin = UINT64_MAX, omax = 0, nthr = 0, nhit = 0;
	double units = 0;
	int synced = 0;
	size_t i, k;

	for (i = 0; i < br->fo->n; i++) {
		if (br->pn[i].inphase && br->pn[i].wall_sync)
			synced = 1;
		for (k = 0; res[i] && k < res[i]->n_threads; k++) {
			const Knob__ThreadResult *t = res[i]->threads[k];

			nthr++;
			omin = t->ops < omin ? t->ops : omin;
			omax = t->ops > omax ? t->ops : omax;
			if (t->stonewall_ops == 0)
				continue;
			nhit++;
			if (t->stonewall_ns && to_ctl(t->stonewall_ns, off[i]) > wall_end)
				wall_end = to_ctl(t->stonewall_ns, off[i]);
			wmin = t->stonewall_ops < wmin ? t->stonewall_ops : wmin;
			wmax = t->stonewall_ops > wmax ? t->stonewall_ops : wmax;
			units += md || t->ops == 0 ? (double)t->stonewall_ops :
			    (double)t->stonewall_ops * ((double)t->bytes / (double)t->ops);
		}
	}
	json_object_object_add(sw, "seconds", json_object_new_int64(br->req->stonewall_s));
	json_object_object_add(sw, "across_nodes", json_object_new_boolean(synced && br->wall_sent));
	json_object_object_add(sw, "target_ops", json_object_new_int64((int64_t)br->wall_target));
	json_object_object_add(sw, "threads", json_object_new_int64((int64_t)nthr));
	json_object_object_add(sw, "threads_at_wall", json_object_new_int64((int64_t)nhit));
	json_object_object_add(sw, "min_ops_at_wall", json_object_new_int64(nhit ? (int64_t)wmin : 0));
	json_object_object_add(sw, "max_ops_at_wall", json_object_new_int64((int64_t)wmax));
	json_object_object_add(sw, "min_ops", json_object_new_int64(nthr ? (int64_t)omin : 0));
	json_object_object_add(sw, "max_ops", json_object_new_int64((int64_t)omax));
	/* over the measured time to the wall: the last thread's stop there */
	{
		double wall_s = wall_end > ag->t_start ? (double)(wall_end - ag->t_start) / 1e9 :
		    (double)br->req->stonewall_s;

		json_object_object_add(sw, "wall_elapsed_s", json_object_new_double(wall_s));
		json_object_object_add(sw, "rate_at_wall", json_object_new_double(nhit && wall_s > 0 ?
		    units / wall_s : 0));
	}
	json_object_object_add(sw, "wearout_s", json_object_new_double(nhit &&
	    ag->elapsed_s > br->req->stonewall_s ? ag->elapsed_s - br->req->stonewall_s : 0));
	return sw;
}

/* The measurement options of a request into a phase's "params". */
static void
measure_params(json_object *o, const struct bench_req *rq)
{
	json_object_object_add(o, "verify", json_object_new_boolean(rq->verify));
	json_object_object_add(o, "compress_pct", json_object_new_int64(rq->compress_pct));
	json_object_object_add(o, "md_relative", json_object_new_boolean(rq->md_relative));
	json_object_object_add(o, "md_shared", json_object_new_boolean(rq->md_shared));
	json_object_object_add(o, "md_depth", json_object_new_int64(rq->md_depth));
	json_object_object_add(o, "md_branch", json_object_new_int64(rq->md_branch));
	json_object_object_add(o, "md_leaf_only", json_object_new_boolean(rq->md_leaf_only));
	json_object_object_add(o, "files_total", json_object_new_int64((int64_t)rq->files_total));
	json_object_object_add(o, "iodepth", json_object_new_int64(rq->iodepth ? rq->iodepth : 1));
	json_object_object_add(o, "ioengine", jstr(rq->ioengine ? rq->ioengine : "auto"));
	json_object_object_add(o, "runtime_s", json_object_new_int64(rq->runtime_s));
	json_object_object_add(o, "rwmix_read", json_object_new_int64(rq->rwmix));
	json_object_object_add(o, "fallocate", jstr(rq->fallocate ? "native" : "none"));
	json_object_object_add(o, "segments", json_object_new_int64((int64_t)rq->segments));
}

/* rand-rw: the reads and writes among the phase's ops and bytes. */
static void
rw_split(json_object *ph, const Knob__PhaseResult *const *res, size_t n)
{
	uint64_t ro = 0, rb = 0, o = 0, b = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; res[i] && k < res[i]->n_threads; k++) {
			ro += res[i]->threads[k]->read_ops;
			rb += res[i]->threads[k]->read_bytes;
			o += res[i]->threads[k]->ops;
			b += res[i]->threads[k]->bytes;
		}
	json_object_object_add(ph, "read_ops", json_object_new_int64((int64_t)ro));
	json_object_object_add(ph, "read_bytes", json_object_new_int64((int64_t)rb));
	json_object_object_add(ph, "write_ops", json_object_new_int64((int64_t)(o - ro)));
	json_object_object_add(ph, "write_bytes", json_object_new_int64((int64_t)(b - rb)));
}

/* The cache warning for node pn in phase p (from its PhaseReady). */
static int
node_cache_warning(const struct brun *br, const struct plan *p, const struct pnode *pn,
    char *w, size_t len)
{
	const Knob__PhaseReady *rd = pn->ready->phase_ready;
	const struct bench_req *rq = br->req;
	struct bench_cache_in in;

	memset(&in, 0, sizeof(in));
	in.what = kind_cache(p->kind);
	in.fs_type = rd->fs_type;
	in.mem_kb = rd->mem_total_kb;
	in.pagepool = rd->pagepool_bytes;
	in.direct = rq->direct;
	in.fsync = rq->fsync;
	in.drop_caches = rq->drop_caches;
	if (in.what == CW_READ)
		in.bytes = rd->read_bytes;
	else if (in.what == CW_WRITE)
		in.bytes = (uint64_t)pn->nranks * p->size;
	else if (in.what == CW_MDREAD)
		in.bytes = (uint64_t)pn->nranks * p->md_files * rq->write_size;
	return bench_cache_warning(w, len, &in);
}

/* Build the JSON record of the finished phase and append it to the run. */
static void
finalize_phase(struct brun *br)
{
	const struct plan *p = &br->plan[br->cur];
	const struct bench_req *rq = br->req;
	const Knob__PhaseResult **res = xcalloc(br->fo->n, sizeof(*res));
	int64_t *off = xcalloc(br->fo->n, sizeof(*off));
	json_object *ph, *missing = json_object_new_array();
	json_object *errors = json_object_new_array(), *warns = json_object_new_array();
	json_object *per_node = json_object_new_array(), *per_thr = json_object_new_array();
	json_object *names = json_object_new_array(), *lat, *params, *extops = NULL;
	int md = kind_is_md(p->kind), failed = 0;
	struct phase_rec rec = { 0 };
	char *workload;
	json_object *mranks = json_object_new_array();
	int64_t reported = 0, offmax = 0;
	struct bench_agg ag;
	size_t i, k, nused = 0;
	const char *status;
	struct strvec wtext = { 0 }, *wnodes = NULL;

	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];
		const char *name = br->fo->nodes[i].name;

		if (!pn->inphase) {
			if (!pn->alive) {
				json_object_array_add(missing, jstr(name));
				json_object_array_add(errors, jfmt("%s: %s", name,
				    pn->death ? pn->death : "unreachable"));
			}
			continue;
		}
		nused++;
		json_object_array_add(names, jstr(name));
		off[i] = pn->off;
		if (pn->result)
			res[i] = pn->result->phase_result;
		if (pn->ready && pn->ready->phase_ready->warning[0])
			add_warning(&wtext, &wnodes, pn->ready->phase_ready->warning, name);
		if (pn->ready && pn->ready->phase_ready->ok) {
			char w[256];

			if (node_cache_warning(br, p, pn, w, sizeof(w)))
				add_warning(&wtext, &wnodes, w, name);
		}
		if (pn->result && pn->result->phase_result->warning[0])
			add_warning(&wtext, &wnodes, pn->result->phase_result->warning, name);
		if (res[i])
			reported += (int64_t)res[i]->n_threads;
		if (llabs(pn->off_change) > llabs(offmax))
			offmax = pn->off_change;
		if (!pn->alive && pn->st != PN_DONE) {
			for (k = 0; k < pn->nranks; k++)
				json_object_array_add(mranks, json_object_new_int64(pn->ranks[k]));
			json_object_array_add(missing, jstr(name));
			json_object_array_add(errors, jfmt("%s: %s", name,
			    pn->death ? pn->death : "lost"));
		} else if (pn->err) {
			failed = 1;
			json_object_array_add(errors, jstr(pn->err));
		} else if (res[i] && !res[i]->ok) {
			failed = 1;
			json_object_array_add(errors, jstr(res[i]->error));
		}
	}
	/* one line per distinct warning, naming its nodes folded */
	for (i = 0; i < wtext.n; i++) {
		char *f = nodeset_fold(wnodes[i].v, wnodes[i].n);

		json_object_array_add(warns, jfmt("%s: %s", f, wtext.v[i]));
		free(f);
		strvec_free(&wnodes[i]);
	}
	free(wnodes);
	strvec_free(&wtext);
	if (bench_aggregate(res, off, br->fo->n, md, &ag) < 0)
		memset(&ag, 0, sizeof(ag));
	/* external tools report percentiles, not histograms: show the worst node's */
	for (i = 0; ag.nlat == 0 && i < br->fo->n; i++)
		for (k = 0; res[i] && k < res[i]->n_ext_ops; k++) {
			const Knob__PhaseExtOp *x = res[i]->ext_ops[k];

			if (x->lat_p50_ns > (double)ag.p50)
				ag.p50 = (uint64_t)x->lat_p50_ns;
			if (x->lat_p99_ns > (double)ag.p99)
				ag.p99 = (uint64_t)x->lat_p99_ns;
			if (x->lat_p999_ns > (double)ag.p999)
				ag.p999 = (uint64_t)x->lat_p999_ns;
		}
	if (failed || nused == 0 || (ag.bytes == 0 && ag.ops == 0 && !kind_is_ext(p->kind)))
		status = "failed";
	else if (json_object_array_length(missing) > 0)
		status = "degraded";
	else
		status = "ok";
	if (strcmp(status, "ok") != 0)
		br->bad = 1;
	rec.phase_id = br->phase_id;
	rec.kind = p->kind;
	rec.repeat = p->repeat;
	rec.threads = p->threads;
	rec.nodes = (int64_t)nused;
	rec.status = status;
	rec.unit = md ? "op/s" : "B/s";
	rec.bytes = (int64_t)ag.bytes;
	rec.ops = (int64_t)ag.ops;
	rec.elapsed_s = ag.elapsed_s;
	rec.rate = ag.rate;
	rec.ops_rate = ag.elapsed_s > 0 ? (double)ag.ops / ag.elapsed_s : 0;
	rec.first_done_rate = ag.first_done_rate;
	rec.last_done_rate = ag.last_done_rate;
	rec.start_spread_s = ag.spread_s;
	rec.cpu_s = ag.cpu_s;
	rec.lat_count = (int64_t)ag.nlat;
	rec.p50_ns = (int64_t)ag.p50;
	rec.p99_ns = (int64_t)ag.p99;
	rec.p999_ns = (int64_t)ag.p999;
	rec.dir = rq->dir;
	rec.block_size = (int64_t)p->bs;
	rec.file_size = (int64_t)p->size;
	rec.shared = rq->shared;
	rec.direct = rq->direct;
	rec.fsync = rq->fsync;
	rec.stonewall_s = rq->stonewall_s;
	rec.files_per_dir = rq->files_per_dir;
	rec.md_files = (int64_t)p->md_files;
	rec.write_size = (int64_t)rq->write_size;
	rec.drop_caches = rq->drop_caches;
	rec.reader_shift = rq->reader_shift;
	rec.stripe_count = (int64_t)p->stripe_count;
	rec.stripe_size = (int64_t)p->stripe_size;
	rec.workload = workload = xasprintf("bs=%llu size=%llu size-total=%llu files=%llu "
	    "files-total=%llu stripe-count=%llu stripe-size=%llu at=%zu",
	    (unsigned long long)rq->bs, (unsigned long long)rq->size,
	    (unsigned long long)rq->size_total, (unsigned long long)rq->md_files,
	    (unsigned long long)rq->files_total, (unsigned long long)rq->stripe_count,
	    (unsigned long long)rq->stripe_size, rq->nat);
	ph = rundoc_phase_json(&rec);
	free(workload);
	json_object_object_add(ph, "node_names", names);
	if (!md && ag.bytes)
		json_object_object_add(ph, "cpu_s_per_gib",
		    json_object_new_double(ag.cpu_s / ((double)ag.bytes / (1 << 30))));
	json_object_object_get_ex(ph, "latency", &lat);
	json_object_object_add(lat, "histogram", rundoc_hist_json(res, br->fo->n));
	json_object_object_add(ph, "first_done_s", json_object_new_double(ag.first_done_s));
	json_object_object_add(ph, "first_done_measured", json_object_new_boolean(
	    ag.first_done_measured && !kind_is_ext(p->kind)));
	/* a degraded result is a partial sum: say over how many threads */
	json_object_object_add(ph, "threads_reported", json_object_new_int64(kind_is_ext(p->kind) ?
	    (int64_t)p->threads : reported));
	json_object_object_add(ph, "partial", json_object_new_boolean(strcmp(status, "degraded") == 0));
	json_object_object_add(ph, "missing_ranks", mranks);
	json_object_object_add(ph, "clock_offset_change_max_s", json_object_new_double(
	    (double)offmax / 1e9));
	json_object_object_add(ph, "missing", missing);
	json_object_object_add(ph, "errors", errors);
	json_object_object_add(ph, "warnings", warns);
	/* the measurement options go with the record's params (stored as JSON) */
	if (json_object_object_get_ex(ph, "params", &params))
		measure_params(params, rq);
	if (strcmp(p->kind, "rand-rw") == 0)
		rw_split(ph, res, br->fo->n);
	if (rq->stonewall_s && !kind_is_ext(p->kind))
		json_object_object_add(ph, "stonewall", stonewall_record(br, res, off, md, &ag));
	for (i = 0; i < br->fo->n; i++) {
		const Knob__PhaseResult *r = res[i];
		struct pnode *pn = &br->pn[i];
		json_object *nd;
		double el;

		if (!pn->inphase)
			continue;
		nd = json_object_new_object();
		json_object_object_add(nd, "node", jstr(br->fo->nodes[i].name));
		json_object_object_add(nd, "status", jstr(!pn->alive && pn->st != PN_DONE ?
		    "missing" : (pn->err || (r && !r->ok) || !r) ? "failed" : "ok"));
		json_object_object_add(nd, "threads", json_object_new_int64((int64_t)pn->nranks));
		if (!pn->alive && pn->st != PN_DONE) {
			json_object *rk = json_object_new_array();

			for (k = 0; k < pn->nranks; k++)
				json_object_array_add(rk, json_object_new_int64(pn->ranks[k]));
			json_object_object_add(nd, "missing_ranks", rk);
		}
		json_object_object_add(nd, "clock_offset_s", json_object_new_double((double)pn->off / 1e9));
		json_object_object_add(nd, "clock_offset_change_s", json_object_new_double(
		    (double)pn->off_change / 1e9));
		if (pn->err || (r && r->error[0]))
			json_object_object_add(nd, "error", jstr(pn->err ? pn->err : r->error));
		if (r) {
			uint64_t s = to_ctl(r->start_ns, off[i]), e = to_ctl(r->end_ns, off[i]);

			el = r->end_ns > r->start_ns ? (double)(r->end_ns - r->start_ns) / 1e9 : 0;
			json_object_object_add(nd, "bytes", json_object_new_int64((int64_t)r->bytes));
			json_object_object_add(nd, "ops", json_object_new_int64((int64_t)r->ops));
			if (r->ioengine[0])
				json_object_object_add(nd, "ioengine", jstr(r->ioengine));
			json_object_object_add(nd, "start_s", json_object_new_double(rel_s(s, ag.t_start)));
			json_object_object_add(nd, "end_s", json_object_new_double(rel_s(e, ag.t_start)));
			json_object_object_add(nd, "rate", json_object_new_double(el > 0 ?
			    (double)(md ? r->ops : r->bytes) / el : 0));
			json_object_object_add(nd, "mem_total_kb", json_object_new_int64((int64_t)r->mem_total_kb));
			if (pn->ready && pn->ready->phase_ready->pagepool_bytes)
				json_object_object_add(nd, "gpfs_pagepool_bytes", json_object_new_int64(
				    (int64_t)pn->ready->phase_ready->pagepool_bytes));
			json_object_object_add(nd, "cpu_s", json_object_new_double((double)r->cpu_ns / 1e9));
			for (k = 0; k < r->n_threads; k++) {
				const Knob__ThreadResult *t = r->threads[k];
				json_object *tj = json_object_new_object();
				double tel = t->end_ns > t->start_ns ? (double)(t->end_ns - t->start_ns) / 1e9 : 0;

				json_object_object_add(tj, "rank", json_object_new_int64(t->rank));
				json_object_object_add(tj, "node", jstr(br->fo->nodes[i].name));
				json_object_object_add(tj, "bytes", json_object_new_int64((int64_t)t->bytes));
				json_object_object_add(tj, "ops", json_object_new_int64((int64_t)t->ops));
				json_object_object_add(tj, "start_s", json_object_new_double(
				    t->start_ns ? rel_s(to_ctl(t->start_ns, off[i]), ag.t_start) : 0));
				json_object_object_add(tj, "end_s", json_object_new_double(
				    t->end_ns ? rel_s(to_ctl(t->end_ns, off[i]), ag.t_start) : 0));
				json_object_object_add(tj, "rate", json_object_new_double(tel > 0 ?
				    (double)(md ? t->ops : t->bytes) / tel : 0));
				if (t->stonewall_ops)
					json_object_object_add(tj, "stonewall_ops",
					    json_object_new_int64((int64_t)t->stonewall_ops));
				if (r->first_done_ns) {
					json_object_object_add(tj, "first_done_bytes",
					    json_object_new_int64((int64_t)t->first_done_bytes));
					json_object_object_add(tj, "first_done_ops",
					    json_object_new_int64((int64_t)t->first_done_ops));
				}
				if (t->error[0])
					json_object_object_add(tj, "error", jstr(t->error));
				json_object_array_add(per_thr, tj);
			}
			if (r->n_ext_ops) {
				json_object *eo = json_object_new_array();

				for (k = 0; k < r->n_ext_ops; k++) {
					const Knob__PhaseExtOp *x = r->ext_ops[k];
					json_object *xj = json_object_new_object();

					json_object_object_add(xj, "op", jstr(x->op));
					json_object_object_add(xj, "bw_bytes", json_object_new_double(x->bw_bytes));
					json_object_object_add(xj, "iops", json_object_new_double(x->iops));
					json_object_object_add(xj, "bytes", json_object_new_int64((int64_t)x->bytes));
					json_object_object_add(xj, "ops", json_object_new_int64((int64_t)x->ops));
					json_object_object_add(xj, "runtime_s", json_object_new_double(x->runtime_s));
					json_object_object_add(xj, "lat_p50_ns", json_object_new_double(x->lat_p50_ns));
					json_object_object_add(xj, "lat_p99_ns", json_object_new_double(x->lat_p99_ns));
					json_object_object_add(xj, "lat_p999_ns", json_object_new_double(x->lat_p999_ns));
					json_object_array_add(eo, xj);
				}
				json_object_object_add(nd, "ext_ops", eo);
				if (extops == NULL && strcmp(p->kind, "fio") != 0)
					extops = json_object_get(eo);
			}
			/* an external tool's own output, its last 64 KiB */
			if (r->ext_output && r->ext_output[0])
				json_object_object_add(nd, "output", jstr(strlen(r->ext_output) > 65536 ?
				    r->ext_output + strlen(r->ext_output) - 65536 : r->ext_output));
		}
		json_object_array_add(per_node, nd);
	}
	if (extops)
		json_object_object_add(ph, "ext_ops", extops);
	json_object_object_add(ph, "per_node", per_node);
	json_object_object_add(ph, "per_thread", per_thr);
	json_object_array_add(br->phases, ph);
	if (rq->on_phase)
		rq->on_phase(rq->hook_arg, br->doc, ph);
	clear_line(br);
	{
		char rate[32];

		fmt_rate(rate, sizeof(rate), ag.rate, md, br->ctl->units_decimal);
		log_info("phase %s: %s %u threads: %s (%s)", br->phase_id, p->kind, p->threads,
		    rate, status);
	}
	free(res);
	free(off);
}

/* Every node is past the last phase on workdir: let them remove its files
 * (agents keep them until then, since another node may still read them). */
static void
release_files(struct brun *br, const char *workdir)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseAbort ab = KNOB__PHASE_ABORT__INIT;

	ab.workdir_id = (char *)(uintptr_t)workdir;
	ab.reason = (char *)(uintptr_t)"release";
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_ABORT;
	env.phase_abort = &ab;
	for (size_t i = 0; i < br->fo->n; i++) {
		if (!br->pn[i].alive || br->fo->nodes[i].phase != FO_OPEN)
			continue;
		env.id = 0;
		if (fanout_send(br->fo, &br->fo->nodes[i], &env) == 0)
			br->pn[i].rel_wait = 1;
	}
}

/* Largest thread count in a node's result (a node that ended without a
 * stonewall report). */
static uint64_t
result_max_ops(const struct pnode *pn)
{
	const Knob__PhaseResult *r = pn->result ? pn->result->phase_result : NULL;
	uint64_t m = 0;

	for (size_t k = 0; r && k < r->n_threads; k++)
		if (r->threads[k]->ops > m)
			m = r->threads[k]->ops;
	return m;
}

/* Stonewall: once every live node of the phase reported its largest count
 * at the wall (or ended), send every node still running the largest count
 * of all, to wear out to.  Dead nodes do not hold it up. */
static void
wall_check(struct brun *br)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseGo go = KNOB__PHASE_GO__INIT;
	uint64_t target = 0, m;
	size_t i, nsync = 0;

	if (br->wall_sent || br->stage != ST_RUN)
		return;
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase || !pn->wall_sync)
			continue;
		nsync++;
		if (pn->wall_rep)
			m = pn->wall_max;
		else if (pn->st == PN_DONE)
			m = result_max_ops(pn);
		else if (pn->alive)
			return;		/* still on its way to the wall */
		else
			continue;	/* died before the wall: missing */
		if (m > target)
			target = m;
	}
	br->wall_sent = 1;
	if (nsync == 0)
		return;
	br->wall_target = target;
	go.phase_id = br->phase_id;
	go.wearout = 1;
	go.wearout_ops = target;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_GO;
	env.phase_go = &go;
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase || !pn->alive || !pn->wall_sync || pn->st != PN_GO ||
		    br->fo->nodes[i].phase != FO_OPEN)
			continue;
		env.id = 0;
		fanout_send(br->fo, &br->fo->nodes[i], &env);
	}
	log_info("phase %s: every node is at the stonewall; wearing out to %llu ops",
	    br->phase_id, (unsigned long long)target);
}

/* First done: once every live node of the phase reported when its first
 * thread ended (or ended itself), send every node still in the phase the
 * earliest of those moments, in its own clock; each answers with every
 * thread's count at that moment, measured from its checkpoints. */
static void
first_done_check(struct brun *br)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseGo go = KNOB__PHASE_GO__INIT;
	uint64_t t = UINT64_MAX;
	size_t i;

	if (br->fd_sent || br->stage != ST_RUN || kind_is_ext(br->plan[br->cur].kind))
		return;
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase)
			continue;
		if (pn->fd_rep) {
			if (pn->fd_end < t)
				t = pn->fd_end;
		} else if (pn->alive && pn->st != PN_DONE)
			return;		/* its first thread is still running */
	}
	br->fd_sent = 1;
	if (t == UINT64_MAX)
		return;
	br->fd_t = t;
	go.phase_id = br->phase_id;
	go.first_done = 1;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_GO;
	env.phase_go = &go;
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase || !pn->alive || pn->st != PN_GO ||
		    br->fo->nodes[i].phase != FO_OPEN)
			continue;
		go.first_done_ns = (uint64_t)((int64_t)t + pn->off);
		env.id = 0;
		fanout_send(br->fo, &br->fo->nodes[i], &env);
	}
	log_debug("phase %s: first thread ended; counts asked for that moment", br->phase_id);
}

/* Measure every live node's clock offset again (SYNC_PINGS pings, the
 * minimum round trip wins) before the phase plan[cur]: a sweep runs for
 * hours, and clocks drift or get stepped meanwhile. */
static void
begin_sync(struct brun *br)
{
	br->stage = ST_SYNC;
	for (size_t i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->alive || br->fo->nodes[i].phase != FO_OPEN)
			continue;
		pn->synced = 0;
		pn->npings = 0;
		pn->best_rtt = UINT64_MAX;
		send_ping(br, &br->fo->nodes[i]);
	}
	advance(br);
}

/* A node's clock sync is complete: keep how far its offset moved since
 * the sync before the previous phase, and the largest move of the run. */
static void
sync_done(struct brun *br, struct fo_node *n)
{
	struct pnode *pn = &br->pn[n->idx];

	pn->synced = 1;
	pn->off_change = pn->nsyncs ? pn->off - pn->off_prev : 0;
	if (llabs(pn->off_change) > llabs(br->off_change_max) || br->off_change_node == NULL) {
		br->off_change_max = pn->off_change;
		br->off_change_node = n->name;
		snprintf(br->off_change_phase, sizeof(br->off_change_phase), "%s-p%zu", br->run_id,
		    br->cur + 1);
	}
	pn->off_prev = pn->off;
	pn->nsyncs++;
	log_debug("%s: clock offset %+.6f s (rtt %.3f ms, %+.6f s since the last sync)", n->name,
	    (double)pn->off / 1e9, (double)pn->best_rtt / 1e6, (double)pn->off_change / 1e9);
}

/* On to the next phase (after a clock sync), or the end of the run. */
static void
next_phase(struct brun *br)
{
	if (++br->cur >= br->nplan) {
		finish(br);
		return;
	}
	begin_sync(br);
}

/* All nodes are done with the run: end their connections. */
static void
finish(struct brun *br)
{
	br->stage = ST_DONE;
	clear_line(br);
	for (size_t i = 0; i < br->fo->n; i++)
		if (br->pn[i].alive)
			fanout_end(br->fo, &br->fo->nodes[i], NS_OK, NULL);
	br->fo->stop = 1;
}

/* Move the state machine forward when every live node of the stage is there. */
static void
advance(struct brun *br)
{
	size_t i, waiting = 0, failed = 0, alive = 0;

	for (;;) {
		switch (br->stage) {
		case ST_SYNC:
			for (i = 0; i < br->fo->n; i++) {
				if (br->pn[i].alive)
					alive++;
				if (br->pn[i].alive && !br->pn[i].synced)
					waiting++;
			}
			if (waiting)
				return;
			if (alive == 0) {
				/* nothing reachable: record every phase left as failed */
				for (; br->cur < br->nplan; br->cur++)
					finalize_phase(br);
				finish(br);
				return;
			}
			br->nsyncs++;
			start_phase(br);
			return;
		case ST_PREPARE:
			for (i = 0; i < br->fo->n; i++) {
				struct pnode *pn = &br->pn[i];
				if (!pn->inphase || !pn->alive)
					continue;
				if (pn->st == PN_PREP)
					waiting++;
				if (pn->st == PN_DONE)
					failed++;
			}
			if (waiting)
				return;
			if (failed) {
				Knob__Envelope env = KNOB__ENVELOPE__INIT;
				Knob__PhaseAbort ab = KNOB__PHASE_ABORT__INIT;

				ab.phase_id = br->phase_id;
				ab.reason = (char *)(uintptr_t)"another node failed to prepare";
				env.body_case = KNOB__ENVELOPE__BODY_PHASE_ABORT;
				env.phase_abort = &ab;
				send_all(br, PN_READY, PN_GO, &env);
				br->stage = ST_ABORTING;
			} else {
				Knob__Envelope env = KNOB__ENVELOPE__INIT;
				Knob__PhaseGo go = KNOB__PHASE_GO__INIT;

				go.phase_id = br->phase_id;
				env.body_case = KNOB__ENVELOPE__BODY_PHASE_GO;
				env.phase_go = &go;
				br->go_mono = now_mono_ns();
				br->last_draw = br->go_mono;
				send_all(br, PN_READY, PN_GO, &env);
				br->stage = ST_RUN;
			}
			continue;
		case ST_RUN:
		case ST_ABORTING:
			wall_check(br);
			first_done_check(br);
			for (i = 0; i < br->fo->n; i++) {
				struct pnode *pn = &br->pn[i];
				if (pn->inphase && pn->alive && pn->st != PN_DONE)
					return;
			}
			finalize_phase(br);
			if (!br->plan[br->cur].keep) {
				release_files(br, br->plan[br->cur].workdir);
				br->stage = ST_RELEASE;
				br->rel_deadline = now_mono_ns() + RELEASE_WAIT_S * 1000000000ull;
				continue;
			}
			next_phase(br);
			return;
		case ST_RELEASE:
			/* the files are gone on every node (or it died) */
			for (i = 0; i < br->fo->n; i++)
				if (br->pn[i].rel_wait && br->pn[i].alive)
					return;
			next_phase(br);
			return;
		default:
			return;
		}
	}
}

static int
on_msg(struct fanout *fo, struct fo_node *n, Knob__Envelope *m)
{
	struct brun *br = fo->user;
	struct pnode *pn = &br->pn[n->idx];
	const char *pid = NULL;
	int keep = 0;

	switch (m->body_case) {
	case KNOB__ENVELOPE__BODY_PONG: {
		uint64_t now = now_real_ns(), t0 = m->pong->t_echo_ns;

		/* only the pings of a sync measure (lease pings go in mid-phase) */
		if (pn->synced)
			break;
		if (t0 && now >= t0 && now - t0 < pn->best_rtt) {
			pn->best_rtt = now - t0;
			pn->off = bench_offset_sample(t0, now, m->pong->agent_time_ns);
		}
		if (++pn->npings >= SYNC_PINGS) {
			sync_done(br, n);
			advance(br);
		} else
			send_ping(br, n);
		break;
	}
	case KNOB__ENVELOPE__BODY_PHASE_READY:
		pid = m->phase_ready->phase_id;
		if (strcmp(pid, br->phase_id) != 0 || pn->st != PN_PREP)
			break;
		if (pn->ready)
			knob__envelope__free_unpacked(pn->ready, NULL);
		pn->ready = m;
		keep = 1;
		if (m->phase_ready->warning[0])
			log_debug("%s", m->phase_ready->warning);
		pn->wall_sync = m->phase_ready->stonewall_sync;
		if (m->phase_ready->ok)
			pn->st = PN_READY;
		else {
			pn->st = PN_DONE;
			pn->err = xstrdup(m->phase_ready->error[0] ? m->phase_ready->error :
			    "prepare failed");
			log_warnx("%s", pn->err);
		}
		advance(br);
		break;
	case KNOB__ENVELOPE__BODY_PHASE_PROGRESS:
		if (strcmp(m->phase_progress->phase_id, br->phase_id) == 0) {
			pn->prog_bytes = m->phase_progress->bytes;
			pn->prog_ops = m->phase_progress->ops;
			if (m->phase_progress->first_end_ns && pn->inphase && !pn->fd_rep) {
				pn->fd_rep = 1;
				pn->fd_end = to_ctl(m->phase_progress->first_end_ns, pn->off);
				advance(br);
			}
			if (m->phase_progress->at_stonewall && pn->inphase && !pn->wall_rep) {
				pn->wall_rep = 1;
				pn->wall_max = m->phase_progress->stonewall_max_ops;
				log_debug("%s: at the stonewall with %llu ops", n->name,
				    (unsigned long long)pn->wall_max);
				advance(br);
			}
		}
		break;
	case KNOB__ENVELOPE__BODY_PHASE_RESULT:
		if (m->phase_result->released_workdir[0]) {
			/* a release confirmed: that node's files are gone */
			if (!m->phase_result->ok)
				log_warnx("%s", m->phase_result->error);
			if (br->stage == ST_RELEASE && pn->rel_wait && strcmp(br->plan[br->cur].workdir,
			    m->phase_result->released_workdir) == 0) {
				pn->rel_wait = 0;
				advance(br);
			}
			break;
		}
		pid = m->phase_result->phase_id;
		if (strcmp(pid, br->phase_id) != 0 || pn->st == PN_DONE || !pn->inphase)
			break;
		pn->result = m;
		keep = 1;
		pn->st = PN_DONE;
		advance(br);
		break;
	case KNOB__ENVELOPE__BODY_ERROR:
		if (pn->inphase && pn->st != PN_DONE && br->stage != ST_SYNC) {
			pn->err = xasprintf("%s: %s", n->name, m->error->message);
			pn->st = PN_DONE;
			advance(br);
		} else
			log_warnx("%s: %s", n->name, m->error->message);
		break;
	default:
		log_warnx("%s: unexpected %s message", n->name, envelope_body_name(m));
		break;
	}
	if (!keep)
		knob__envelope__free_unpacked(m, NULL);
	return 0;
}

static void
on_end(struct fanout *fo, struct fo_node *n)
{
	struct brun *br = fo->user;
	struct pnode *pn = &br->pn[n->idx];

	if (!pn->alive)
		return;
	pn->alive = 0;
	if (br->stage == ST_DONE)
		return;
	pn->death = xasprintf("%s%s%s", node_status_name(n->status), n->detail ? ": " : "",
	    n->detail ? n->detail : "");
	clear_line(br);
	log_warnx("%s: %s", n->name, pn->death);
	advance(br);
}

static void
on_tick(struct fanout *fo)
{
	struct brun *br = fo->user;
	uint64_t now = now_mono_ns();

	/* lease: every agent hears from us at least once a second */
	for (size_t i = 0; i < fo->n; i++) {
		struct pnode *pn = &br->pn[i];
		struct fo_node *n = &fo->nodes[i];

		if (pn->alive && pn->synced && n->phase == FO_OPEN &&
		    now - pn->last_ping_ns >= 900000000ull)
			send_ping(br, n);
	}
	if (br->stage == ST_RELEASE && now >= br->rel_deadline) {
		for (size_t i = 0; i < fo->n; i++)
			if (br->pn[i].rel_wait && br->pn[i].alive) {
				log_warnx("%s: still removing the files of %s after %d s; not waiting",
				    fo->nodes[i].name, br->plan[br->cur].workdir, RELEASE_WAIT_S);
				br->pn[i].rel_wait = 0;
			}
		advance(br);
	}
	draw_progress(br);
}

/* Block size, size and files of a thread count: the request's, then a
 * matching per-thread-count override; a total size is split over the
 * threads (rounded down to whole blocks). */
static void
plan_params(const struct bench_req *rq, uint32_t threads, struct plan *p)
{
	uint64_t total = rq->size_total, ftotal = rq->files_total;

	p->bs = rq->bs;
	p->size = rq->size;
	p->md_files = rq->md_files;
	p->stripe_count = rq->stripe_count;
	p->stripe_size = rq->stripe_size;
	for (size_t i = 0; i < rq->nat; i++) {
		const struct bench_at *a = &rq->at[i];

		if (threads < a->lo || threads > a->hi)
			continue;
		p->bs = a->bs ? a->bs : p->bs;
		p->size = a->size ? a->size : p->size;
		total = a->size_total ? a->size_total : a->size ? 0 : total;
		ftotal = a->files_total ? a->files_total : ftotal;
		p->md_files = a->md_files ? a->md_files : p->md_files;
		p->stripe_count = a->stripe_count ? a->stripe_count : p->stripe_count;
		p->stripe_size = a->stripe_size ? a->stripe_size : p->stripe_size;
	}
	if (total) {
		uint64_t unit = p->bs ? p->bs : 1;

		p->size = total / threads / unit * unit;
		p->size = p->size ? p->size : unit;
	}
	if (ftotal)
		p->md_files = (ftotal + threads - 1) / threads;
	p->files_total = ftotal;
}

/* Expand the sweep into the ordered list of phases: per thread count, each
 * repeat runs every kind on its own files. */
static void
make_plan(struct brun *br)
{
	const struct bench_req *rq = br->req;
	uint32_t nrep = rq->repeat ? rq->repeat : 1;
	size_t t, k, r, i = 0;

	br->nplan = rq->nthreads * rq->kinds.n * nrep;
	br->plan = xcalloc(br->nplan, sizeof(*br->plan));
	for (t = 0; t < rq->nthreads; t++)
		for (r = 0; r < nrep; r++)
			for (k = 0; k < rq->kinds.n; k++, i++) {
				struct plan *p = &br->plan[i];

				p->kind = rq->kinds.v[k];
				p->threads = rq->threads[t];
				p->repeat = (uint32_t)r + 1;
				plan_params(rq, p->threads, p);
				snprintf(p->workdir, sizeof(p->workdir), "%s-w%zu", br->run_id,
				    t * nrep + r + 1);
				/* the files stay for the next kind on the same thread count */
				p->keep = k + 1 < rq->kinds.n || rq->keep;
			}
}

static void
make_run_id(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;
	uint16_t rnd = 0;
	char ts[32];

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint16_t)(getpid() ^ now);
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "%s-%04x", ts, rnd);
}

int
bench_run(struct ctl *ctl, const struct strvec *nodes, const struct bench_req *req,
    json_object **doc)
{
	static const struct fo_ops ops = {
		.on_open = on_open, .on_msg = on_msg, .on_tick = on_tick, .on_end = on_end,
	};
	struct brun br;
	struct fanout fo;
	json_object *jn;
	size_t i;
	char *folded;

	memset(&br, 0, sizeof(br));
	br.ctl = ctl;
	br.req = req;
	br.fo = &fo;
	make_run_id(br.run_id, sizeof(br.run_id));
	make_plan(&br);
	fanout_init(&fo, ctl, nodes);
	fo.all_at_once = 1;	/* phases need every node connected */
	br.pn = xcalloc(fo.n ? fo.n : 1, sizeof(*br.pn));
	for (i = 0; i < fo.n; i++) {
		br.pn[i].alive = 1;
		br.pn[i].best_rtt = UINT64_MAX;
	}
	br.doc = json_object_new_object();
	br.phases = json_object_new_array();
	json_object_object_add(br.doc, "run_id", jstr(br.run_id));
	json_object_object_add(br.doc, "started_at", json_object_new_int64((int64_t)time(NULL)));
	json_object_object_add(br.doc, "started_ns", json_object_new_int64((int64_t)now_real_ns()));
	json_object_object_add(br.doc, "command", jstr(req->command));
	json_object_object_add(br.doc, "label", jstr(req->label));
	json_object_object_add(br.doc, "repeat", json_object_new_int64(req->repeat ? req->repeat : 1));
	folded = nodeset_fold(nodes->v, nodes->n);
	json_object_object_add(br.doc, "nodeset", jstr(folded));
	free(folded);
	jn = json_object_new_array();
	for (i = 0; i < nodes->n; i++)
		json_object_array_add(jn, jstr(nodes->v[i]));
	json_object_object_add(br.doc, "nodes", jn);
	if (req->info) {
		json_object_object_foreach(req->info, ik, iv)
			json_object_object_add(br.doc, ik, json_object_get(iv));
	}
	json_object_object_add(br.doc, "phases", br.phases);
	json_object_object_add(br.doc, "status", jstr("running"));
	if (req->on_start)
		req->on_start(req->hook_arg, br.doc);
	if (fanout_run(&fo, &ops, &br) < 0)
		br.bad = 2;
	clear_line(&br);
	/* phases that never ran (the run was cut short) */
	if (br.stage != ST_DONE) {
		if (br.stage != ST_SYNC && br.stage != ST_RELEASE && br.cur < br.nplan)
			finalize_phase(&br);
		br.bad = br.bad ? br.bad : 1;
	}
	{
		json_object *ck = json_object_new_object();

		json_object_object_add(ck, "syncs", json_object_new_int64(br.nsyncs));
		json_object_object_add(ck, "offset_change_max_s", json_object_new_double(
		    (double)br.off_change_max / 1e9));
		json_object_object_add(ck, "node", jstr(br.off_change_node));
		json_object_object_add(ck, "before_phase", jstr(br.off_change_phase));
		json_object_object_add(br.doc, "clock", ck);
	}
	json_object_object_add(br.doc, "status", jstr(br.bad ? "degraded-or-failed" : "ok"));
	for (i = 0; i < fo.n; i++) {
		struct pnode *pn = &br.pn[i];

		free(pn->ranks);
		free(pn->err);
		free(pn->death);
		if (pn->ready)
			knob__envelope__free_unpacked(pn->ready, NULL);
		if (pn->result)
			knob__envelope__free_unpacked(pn->result, NULL);
	}
	free(br.pn);
	free(br.plan);
	fanout_free(&fo);
	*doc = br.doc;
	return br.bad == 2 ? 2 : br.bad ? 1 : 0;
}

/* ------------------------------------------------------------ output */

static void print_clock(FILE *f, json_object *doc);

void
bench_print_table(FILE *f, json_object *doc, int decimal)
{
	json_object *phases, *ph, *arr;
	size_t i, k;

	rundoc_print(f, doc, decimal);
	if (!json_object_object_get_ex(doc, "phases", &phases))
		return;
	for (i = 0; i < json_object_array_length(phases); i++) {
		ph = json_object_array_get_idx(phases, i);
		if (!json_object_object_get_ex(ph, "ext_ops", &arr))
			continue;
		fprintf(f, "%s %s threads=%.0f: tool summary\n", js_str(ph, "phase_id"),
		    js_str(ph, "kind"), js_num(ph, "threads"));
		for (k = 0; k < json_object_array_length(arr); k++) {
			json_object *x = json_object_array_get_idx(arr, k);
			char r2[32];

			if (js_num(x, "bw_bytes") > 0)
				rundoc_fmt_rate(r2, sizeof(r2), js_num(x, "bw_bytes"), M_BW, decimal);
			else
				rundoc_fmt_rate(r2, sizeof(r2), js_num(x, "iops"), M_OPS, decimal);
			fprintf(f, "  %-20s %27s\n", js_str(x, "op"), r2);
		}
	}
	for (i = 0; i < json_object_array_length(phases); i++) {
		ph = json_object_array_get_idx(phases, i);
		if (json_object_object_get_ex(ph, "missing", &arr) && json_object_array_length(arr)) {
			json_object *mr = json_object_object_get(ph, "missing_ranks");

			fprintf(f, "%s %s threads=%.0f: degraded, %.0f of %.0f threads reported, missing:",
			    js_str(ph, "phase_id"), js_str(ph, "kind"), js_num(ph, "threads"),
			    js_num(ph, "threads_reported"), js_num(ph, "threads"));
			for (k = 0; k < json_object_array_length(arr); k++)
				fprintf(f, " %s", json_object_get_string(json_object_array_get_idx(arr, k)));
			if (mr && json_object_array_length(mr)) {
				fprintf(f, " (ranks");
				for (k = 0; k < json_object_array_length(mr); k++)
					fprintf(f, "%s%s", k ? "," : " ",
					    json_object_get_string(json_object_array_get_idx(mr, k)));
				fprintf(f, ")");
			}
			fprintf(f, "\n");
		}
		if (json_object_object_get_ex(ph, "errors", &arr))
			for (k = 0; k < json_object_array_length(arr); k++)
				fprintf(f, "%s %s: error: %s\n", js_str(ph, "phase_id"), js_str(ph, "kind"),
				    json_object_get_string(json_object_array_get_idx(arr, k)));
		if (json_object_object_get_ex(ph, "stonewall", &arr)) {
			int md = strcmp(js_str(ph, "unit"), "op/s") == 0;
			char rate[32], ended[96];

			fmt_rate(rate, sizeof(rate), js_num(arr, "rate_at_wall"), md, decimal);
			if (js_num(arr, "min_ops") == js_num(arr, "max_ops"))
				snprintf(ended, sizeof(ended), "every thread ended with %.0f ops",
				    js_num(arr, "max_ops"));
			else
				snprintf(ended, sizeof(ended), "threads ended with %.0f..%.0f ops",
				    js_num(arr, "min_ops"), js_num(arr, "max_ops"));
			if (js_num(arr, "threads_at_wall") == 0)
				fprintf(f, "%s %s: stonewall %.0f s not reached: every thread finished "
				    "first\n", js_str(ph, "phase_id"), js_str(ph, "kind"),
				    js_num(arr, "seconds"));
			else
				fprintf(f, "%s %s: stonewall %.0f s%s: %.0f..%.0f ops per thread at the "
				    "wall (%s); %s after a %.2f s wear-out\n",
				    js_str(ph, "phase_id"), js_str(ph, "kind"), js_num(arr, "seconds"),
				    json_object_get_boolean(json_object_object_get(arr, "across_nodes")) ?
				    " across nodes" : "", js_num(arr, "min_ops_at_wall"),
				    js_num(arr, "max_ops_at_wall"), rate, ended, js_num(arr, "wearout_s"));
		}
		if (json_object_object_get_ex(ph, "warnings", &arr))
			for (k = 0; k < json_object_array_length(arr); k++)
				fprintf(f, "%s %s: warning: %s\n", js_str(ph, "phase_id"), js_str(ph, "kind"),
				    json_object_get_string(json_object_array_get_idx(arr, k)));
		sweep_print_stragglers(f, ph);
	}
	print_clock(f, doc);
}

/* The clock line under the table: offsets are measured before every phase. */
static void
print_clock(FILE *f, json_object *doc)
{
	json_object *ck;
	double ch;

	if (!json_object_object_get_ex(doc, "clock", &ck) || js_num(ck, "syncs") < 2)
		return;
	ch = js_num(ck, "offset_change_max_s");

	fprintf(f, "clock offsets measured before each of %.0f phases; largest change %+.3f %s "
	    "(%s, before %s)\n", js_num(ck, "syncs"), fabs(ch) >= 1 ? ch : ch * 1e3,
	    fabs(ch) >= 1 ? "s" : "ms", js_str(ck, "node"), js_str(ck, "before_phase"));
}

void
bench_req_free(struct bench_req *r)
{
	strvec_free(&r->kinds);
	strvec_free(&r->ext_args);
	free(r->threads);
	free(r->command);
	free(r->at);
	memset(r, 0, sizeof(*r));
}
