/* What a bench run reports: the record of each finished phase (collected
 * from the nodes, aggregated, documented), the run document around them,
 * and the table knobctl prints from a run document. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_run.h"
#include "json.h"
#include "log.h"
#include "nodeset.h"
#include "rundoc.h"
#include "sweep.h"
#include "util.h"
#include "visible.h"

/* A live or logged rate in the run's unit family. */
void
bench_fmt_rate(char *buf, size_t len, double rate, int md, int decimal)
{
	rundoc_fmt_rate(buf, len, rate, md ? M_OPS : M_BW, decimal);
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

/* The measurement options of a request into the "params" of its phase p
 * (ext: the phase runs an external tool, whose arguments go there too;
 * engine, depth: the I/O engine that ran and its queue depth).  Every key
 * here is part of a point's key in compare (stats.h). */
static void
measure_params(json_object *o, const struct bench_req *rq, const struct plan *p, int ext,
    const char *engine, int64_t depth)
{
	if (ext) {
		json_object *args = json_object_new_array();

		for (size_t i = 0; i < rq->ext_args.n; i++)
			json_object_array_add(args, jstr(rq->ext_args.v[i]));
		json_object_object_add(o, "ext_args", args);
	}
	json_object_object_add(o, "verify", json_object_new_boolean(rq->verify));
	json_object_object_add(o, "compress_pct", json_object_new_int64(rq->compress_pct));
	json_object_object_add(o, "md_relative", json_object_new_boolean(rq->md_relative));
	json_object_object_add(o, "md_shared", json_object_new_boolean(rq->md_shared));
	json_object_object_add(o, "md_depth", json_object_new_int64(rq->md_depth));
	json_object_object_add(o, "md_branch", json_object_new_int64(rq->md_branch));
	json_object_object_add(o, "md_leaf_only", json_object_new_boolean(rq->md_leaf_only));
	json_object_object_add(o, "files_total", json_object_new_int64((int64_t)rq->files_total));
	json_object_object_add(o, "iodepth", json_object_new_int64(depth));
	json_object_object_add(o, "ioengine", jstr(engine));
	json_object_object_add(o, "runtime_s", json_object_new_int64(rq->runtime_s));
	json_object_object_add(o, "rwmix_read", json_object_new_int64(p->rwmix));
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

/* The cache warning for node pn in phase p (from its PhaseReady, and its
 * result r: a time-based read that moved more than the node's data wrapped). */
static int
node_cache_warning(const struct brun *br, const struct plan *p, const struct pnode *pn,
    const Knob__PhaseResult *r, char *w, size_t len)
{
	const Knob__PhaseReady *rd = pn->ready->phase_ready;
	const struct bench_req *rq = br->req;
	struct bench_cache_in in;

	memset(&in, 0, sizeof(in));
	in.what = bench_kind_cache(p->kind);
	in.fs_type = rd->fs_type;
	in.mem_kb = rd->mem_total_kb;
	in.pagepool = rd->pagepool_bytes;
	in.direct = rq->direct;
	in.fsync = rq->fsync;
	in.drop_caches = rq->drop_caches;
	if (in.what == CW_READ) {
		in.bytes = rd->read_bytes;
		in.wrapped = rq->runtime_s && r && rd->read_bytes && r->bytes > rd->read_bytes;
	}
	else if (in.what == CW_WRITE)
		in.bytes = (uint64_t)pn->nranks * p->size;
	else if (in.what == CW_MDREAD)
		in.bytes = (uint64_t)pn->nranks * p->md_files * rq->write_size;
	return bench_cache_warning(w, len, &in);
}

/* What the nodes of the finished phase returned, gathered for its record. */
struct phase_in {
	const Knob__PhaseResult **res;	/* per node; NULL: no result */
	const Knob__PhaseResult **counted;	/* res of the nodes that finished without error */
	int64_t *off;			/* per node clock offset */
	json_object *missing, *errors, *warns, *names, *mranks;
	int64_t reported, offmax;
	size_t nused;
	int failed;
};

/* The outcome of node i of the phase: its results, offset, errors and
 * warnings into in (warnings by text in wtext, their nodes in wnodes). */
static void
collect_node(const struct brun *br, size_t i, struct phase_in *in, struct strvec *wtext,
    struct strvec **wnodes)
{
	const struct pnode *pn = &br->pn[i];
	const char *name = br->fo->nodes[i].name;
	const Knob__PhaseResult *r = pn->result ? pn->result->phase_result : NULL;
	char w[256];

	in->nused++;
	json_object_array_add(in->names, jstr(name));
	in->off[i] = pn->off;
	in->res[i] = r;
	if (pn->ready && pn->ready->phase_ready->warning[0])
		add_warning(wtext, wnodes, pn->ready->phase_ready->warning, name);
	if (pn->ready && pn->ready->phase_ready->ok &&
	    node_cache_warning(br, &br->plan[br->cur], pn, r, w, sizeof(w)))
		add_warning(wtext, wnodes, w, name);
	if (r && r->warning[0])
		add_warning(wtext, wnodes, r->warning, name);
	if (r && r->ok && !pn->err && (pn->alive || pn->st == PN_DONE)) {
		in->counted[i] = r;	/* a node that failed its phase adds no figure */
		in->reported += (int64_t)r->n_threads;
	}
	if (llabs(pn->off_change) > llabs(in->offmax))
		in->offmax = pn->off_change;
	if (!pn->alive && pn->st != PN_DONE) {
		for (size_t k = 0; k < pn->nranks; k++)
			json_object_array_add(in->mranks, json_object_new_int64(pn->ranks[k]));
		json_object_array_add(in->missing, jstr(name));
		json_object_array_add(in->errors, jfmt("%s: %s", name, pn->death ? pn->death : "lost"));
	} else if (pn->err) {
		in->failed = 1;
		json_object_array_add(in->errors, jstr(pn->err));
	} else if (r && !r->ok) {
		in->failed = 1;
		json_object_array_add(in->errors, jstr(r->error));
	}
}

/* The file system node i said DIR is on (its PhaseReady), "" unknown. */
static const char *
node_fs_type(const struct brun *br, size_t i)
{
	const struct pnode *pn = &br->pn[i];

	return pn->ready && pn->ready->phase_ready->fs_type ? pn->ready->phase_ready->fs_type : "";
}

/* The warning when the nodes' DIR lies on different file systems (one
 * node without the mount has it on its root file system): "node03: DIR is
 * on ext4, node[01-02,04] on lustre", smaller groups first; NULL when they
 * agree.  The caller frees it. */
static char *
fs_mismatch_warning(const struct brun *br)
{
	struct strvec types = { 0 }, *nodes = NULL;
	char *w = NULL, *f, *t;
	size_t i, k, *order;

	for (i = 0; i < br->fo->n; i++)
		if (br->pn[i].inphase && node_fs_type(br, i)[0])
			add_warning(&types, &nodes, node_fs_type(br, i), br->fo->nodes[i].name);
	order = xcalloc(types.n ? types.n : 1, sizeof(*order));
	for (i = 0; i < types.n; i++) {
		for (k = i; k > 0 && nodes[order[k - 1]].n > nodes[i].n; k--)
			order[k] = order[k - 1];
		order[k] = i;
	}
	for (i = 0; types.n > 1 && i < types.n; i++) {
		f = nodeset_fold(nodes[order[i]].v, nodes[order[i]].n);
		t = w;
		w = i == 0 ? xasprintf("%s: %s is on %s", f, br->req->dir, types.v[order[i]]) :
		    xasprintf("%s, %s on %s", t, f, types.v[order[i]]);
		free(t);
		free(f);
	}
	for (i = 0; i < types.n; i++)
		strvec_free(&nodes[i]);
	free(nodes);
	free(order);
	strvec_free(&types);
	return w;
}

/* Collect: every node's part of the phase; nodes that died before it are
 * missing.  Warnings print once per text, naming their nodes folded. */
static void
phase_collect(const struct brun *br, struct phase_in *in)
{
	struct strvec wtext = { 0 }, *wnodes = NULL;
	char *f;
	size_t i;

	memset(in, 0, sizeof(*in));
	in->res = xcalloc(br->fo->n ? br->fo->n : 1, sizeof(*in->res));
	in->counted = xcalloc(br->fo->n ? br->fo->n : 1, sizeof(*in->counted));
	in->off = xcalloc(br->fo->n ? br->fo->n : 1, sizeof(*in->off));
	in->missing = json_object_new_array();
	in->errors = json_object_new_array();
	in->warns = json_object_new_array();
	in->names = json_object_new_array();
	in->mranks = json_object_new_array();
	for (i = 0; i < br->fo->n; i++) {
		const struct pnode *pn = &br->pn[i];

		if (pn->inphase)
			collect_node(br, i, in, &wtext, &wnodes);
		else if (!pn->alive) {
			json_object_array_add(in->missing, jstr(br->fo->nodes[i].name));
			json_object_array_add(in->errors, jfmt("%s: %s", br->fo->nodes[i].name,
			    pn->death ? pn->death : "unreachable"));
		}
	}
	for (i = 0; i < wtext.n; i++) {
		f = nodeset_fold(wnodes[i].v, wnodes[i].n);
		json_object_array_add(in->warns, jfmt("%s: %s", f, wtext.v[i]));
		free(f);
		strvec_free(&wnodes[i]);
	}
	if ((f = fs_mismatch_warning(br)) != NULL) {
		json_object_array_add(in->warns, json_object_new_string(f));
		free(f);
	}
	if (br->shift_own) {
		char *w = bench_shift_warning(br->shift, br->shift_own, br->plan[br->cur].threads,
		    in->nused);

		json_object_array_add(in->warns, json_object_new_string(w));
		free(w);
	}
	free(wnodes);
	strvec_free(&wtext);
}

/* Aggregate: the phase over its nodes on the controller's clock, and its
 * status: failed, degraded (nodes missing) or ok. */
static const char *
phase_aggregate(const struct brun *br, const struct phase_in *in, struct bench_agg *ag)
{
	const struct plan *p = &br->plan[br->cur];
	int ext = bench_kind_ext(p->kind);

	if (bench_aggregate(in->counted, in->off, br->fo->n, bench_kind_md(p->kind), ag) < 0)
		memset(ag, 0, sizeof(*ag));
	bench_ext_percentiles(in->counted, br->fo->n, ag);
	if (in->failed || in->nused == 0 || (ag->bytes == 0 && ag->ops == 0 && !ext))
		return "failed";
	if (json_object_array_length(in->missing) > 0)
		return "degraded";
	return "ok";
}

/* What the nodes that answered said in the string at off of their
 * results: the value when they all said the same (an agent before the
 * field says "", taken as dflt), else "mixed". */
static const char *
nodes_said(const struct brun *br, const struct phase_in *in, size_t off, const char *dflt)
{
	const char *said = NULL;

	for (size_t i = 0; i < br->fo->n; i++) {
		const char *v;

		if (in->res[i] == NULL)
			continue;
		v = *(char *const *)(const void *)((const char *)in->res[i] + off);
		if (v == NULL || v[0] == '\0')
			v = dflt;
		if (said != NULL && strcmp(said, v) != 0)
			return "mixed";
		said = v;
	}
	return said ? said : dflt;
}

/* The queue depth the nodes' threads kept: the lowest a node reports
 * (libaio on buffered I/O keeps 1, whatever was asked), else the
 * request's (md, external tools, agents before the field). */
static int64_t
nodes_depth(const struct brun *br, const struct phase_in *in)
{
	uint32_t d = 0;

	for (size_t i = 0; i < br->fo->n; i++)
		if (in->res[i] && in->res[i]->iodepth && (d == 0 || in->res[i]->iodepth < d))
			d = in->res[i]->iodepth;
	if (d == 0)
		d = br->req->iodepth ? br->req->iodepth : 1;
	return d;
}

/* The scalar fields of the phase record (rundoc's table). */
static json_object *
phase_scalars(const struct brun *br, const struct phase_in *in, const struct bench_agg *ag,
    const char *status)
{
	const struct plan *p = &br->plan[br->cur];
	const struct bench_req *rq = br->req;
	struct phase_rec rec = { 0 };
	json_object *ph;
	char *workload;

	rec.phase_id = br->phase_id;
	rec.kind = p->kind;
	rec.repeat = p->repeat;
	rec.threads = p->threads;
	rec.nodes = (int64_t)in->nused;
	rec.status = status;
	rec.unit = bench_kind_md(p->kind) ? "op/s" : "B/s";
	rec.bytes = (int64_t)ag->bytes;
	rec.ops = (int64_t)ag->ops;
	rec.elapsed_s = ag->elapsed_s;
	rec.rate = ag->rate;
	rec.ops_rate = ag->elapsed_s > 0 ? (double)ag->ops / ag->elapsed_s : 0;
	rec.first_done_rate = ag->first_done_rate;
	rec.last_done_rate = ag->last_done_rate;
	rec.start_spread_s = ag->spread_s;
	rec.cpu_s = ag->cpu_s;
	rec.lat_count = (int64_t)ag->nlat;
	rec.p50_ns = (int64_t)ag->p50;
	rec.p99_ns = (int64_t)ag->p99;
	rec.p999_ns = (int64_t)ag->p999;
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
	rec.reader_shift = br->shift;
	rec.stripe_count = (int64_t)p->stripe_count;
	rec.stripe_size = (int64_t)p->stripe_size;
	/* the I/O buffers' pages (agent/bench_mem.c), the threads' CPUs */
	rec.buffer_pages = nodes_said(br, in, offsetof(Knob__PhaseResult, buffer_pages), "4k");
	rec.cpu_bind = nodes_said(br, in, offsetof(Knob__PhaseResult, cpu_bind), "none");
	rec.workload = workload = xasprintf("bs=%llu size=%llu size-total=%llu files=%llu "
	    "files-total=%llu stripe-count=%llu stripe-size=%llu at=%zu",
	    (unsigned long long)rq->bs, (unsigned long long)rq->size,
	    (unsigned long long)rq->size_total, (unsigned long long)rq->md_files,
	    (unsigned long long)rq->files_total, (unsigned long long)rq->stripe_count,
	    (unsigned long long)rq->stripe_size, rq->nat);
	ph = rundoc_phase_json(&rec);
	free(workload);
	return ph;
}

/* One thread's record (times relative to the phase's start t0). */
static json_object *
thread_json(const Knob__ThreadResult *t, const char *node, int64_t off, uint64_t t0, int md,
    int first_done)
{
	json_object *tj = json_object_new_object();
	double tel = t->end_ns > t->start_ns ? (double)(t->end_ns - t->start_ns) / 1e9 : 0;

	json_object_object_add(tj, "rank", json_object_new_int64(t->rank));
	json_object_object_add(tj, "node", jstr(node));
	json_object_object_add(tj, "bytes", json_object_new_int64((int64_t)t->bytes));
	json_object_object_add(tj, "ops", json_object_new_int64((int64_t)t->ops));
	json_object_object_add(tj, "start_s", json_object_new_double(
	    t->start_ns ? rel_s(bench_to_ctl(t->start_ns, off), t0) : 0));
	json_object_object_add(tj, "end_s", json_object_new_double(
	    t->end_ns ? rel_s(bench_to_ctl(t->end_ns, off), t0) : 0));
	json_object_object_add(tj, "rate", json_object_new_double(tel > 0 ?
	    (double)(md ? t->ops : t->bytes) / tel : 0));
	if (t->stonewall_ops)
		json_object_object_add(tj, "stonewall_ops",
		    json_object_new_int64((int64_t)t->stonewall_ops));
	if (first_done) {
		json_object_object_add(tj, "first_done_bytes",
		    json_object_new_int64((int64_t)t->first_done_bytes));
		json_object_object_add(tj, "first_done_ops",
		    json_object_new_int64((int64_t)t->first_done_ops));
	}
	if (t->error[0])
		json_object_object_add(tj, "error", jstr(t->error));
	return tj;
}

/* An external tool's per-operation summary. */
static json_object *
ext_ops_json(const Knob__PhaseResult *r)
{
	json_object *eo = json_object_new_array();

	for (size_t k = 0; k < r->n_ext_ops; k++) {
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
		json_object_object_add(xj, "counted", json_object_new_boolean(x->counted));
		json_object_array_add(eo, xj);
	}
	return eo;
}

/* The figures of node i's result r into its record nd, its threads onto
 * per_thr. */
static void
node_result_json(const struct brun *br, size_t i, const Knob__PhaseResult *r, int64_t off,
    const struct bench_agg *ag, json_object *nd, json_object *per_thr)
{
	const struct pnode *pn = &br->pn[i];
	int md = bench_kind_md(br->plan[br->cur].kind);
	uint64_t s = bench_to_ctl(r->start_ns, off), e = bench_to_ctl(r->end_ns, off);
	double el = r->end_ns > r->start_ns ? (double)(r->end_ns - r->start_ns) / 1e9 : 0;

	json_object_object_add(nd, "bytes", json_object_new_int64((int64_t)r->bytes));
	json_object_object_add(nd, "ops", json_object_new_int64((int64_t)r->ops));
	if (r->ioengine[0])
		json_object_object_add(nd, "ioengine", jstr(r->ioengine));
	if (r->iodepth)
		json_object_object_add(nd, "iodepth", json_object_new_int64(r->iodepth));
	json_object_object_add(nd, "buffer_pages", jstr(r->buffer_pages[0] ? r->buffer_pages : "4k"));
	json_object_object_add(nd, "cpu_bind", jstr(r->cpu_bind[0] ? r->cpu_bind : "none"));
	json_object_object_add(nd, "start_s", json_object_new_double(rel_s(s, ag->t_start)));
	json_object_object_add(nd, "end_s", json_object_new_double(rel_s(e, ag->t_start)));
	json_object_object_add(nd, "rate", json_object_new_double(el > 0 ?
	    (double)(md ? r->ops : r->bytes) / el : 0));
	json_object_object_add(nd, "mem_total_kb", json_object_new_int64((int64_t)r->mem_total_kb));
	if (pn->ready && pn->ready->phase_ready->pagepool_bytes)
		json_object_object_add(nd, "gpfs_pagepool_bytes", json_object_new_int64(
		    (int64_t)pn->ready->phase_ready->pagepool_bytes));
	json_object_object_add(nd, "cpu_s", json_object_new_double((double)r->cpu_ns / 1e9));
	for (size_t k = 0; k < r->n_threads; k++)
		json_object_array_add(per_thr, thread_json(r->threads[k], br->fo->nodes[i].name, off,
		    ag->t_start, md, r->first_done_ns != 0));
	if (r->n_ext_ops)
		json_object_object_add(nd, "ext_ops", ext_ops_json(r));
	/* an external tool's own output, its last 64 KiB */
	if (r->ext_output && r->ext_output[0])
		json_object_object_add(nd, "output", jstr(strlen(r->ext_output) > 65536 ?
		    r->ext_output + strlen(r->ext_output) - 65536 : r->ext_output));
}

/* Node i's record in the phase. */
static json_object *
node_json(const struct brun *br, size_t i, const struct phase_in *in, const struct bench_agg *ag,
    json_object *per_thr)
{
	const struct pnode *pn = &br->pn[i];
	const Knob__PhaseResult *r = in->res[i];
	int lost = !pn->alive && pn->st != PN_DONE;
	json_object *nd = json_object_new_object();

	json_object_object_add(nd, "node", jstr(br->fo->nodes[i].name));
	json_object_object_add(nd, "status", jstr(lost ? "missing" :
	    (pn->err || (r && !r->ok) || !r) ? "failed" : "ok"));
	json_object_object_add(nd, "threads", json_object_new_int64((int64_t)pn->nranks));
	if (node_fs_type(br, i)[0])
		json_object_object_add(nd, "fs_type", jstr(node_fs_type(br, i)));
	if (lost) {
		json_object *rk = json_object_new_array();

		for (size_t k = 0; k < pn->nranks; k++)
			json_object_array_add(rk, json_object_new_int64(pn->ranks[k]));
		json_object_object_add(nd, "missing_ranks", rk);
	}
	json_object_object_add(nd, "clock_offset_s", json_object_new_double((double)pn->off / 1e9));
	json_object_object_add(nd, "clock_offset_change_s", json_object_new_double(
	    (double)pn->off_change / 1e9));
	if (pn->err || (r && r->error[0]))
		json_object_object_add(nd, "error", jstr(pn->err ? pn->err : r->error));
	if (r)
		node_result_json(br, i, r, in->off[i], ag, nd, per_thr);
	return nd;
}

/* Do the phase's figures leave out threads it planned: a node lost in it
 * (its ranks missing), or one whose phase failed while others counted?
 * A node lost before the phase is not in its plan: its threads ran on the
 * nodes left, and a phase they all report is whole (still degraded: the
 * run ran without that node). */
static int
phase_partial(const struct plan *p, const struct phase_in *in, const char *status, int ext)
{
	if (ext)	/* the tool reports for all: partial when it lost a node */
		return strcmp(status, "degraded") == 0 && json_object_array_length(in->mranks) > 0;
	return in->reported > 0 && in->reported < (int64_t)p->threads;
}

/* Document: the phase record from what was collected and aggregated; takes
 * in's JSON arrays. */
static json_object *
phase_document(const struct brun *br, struct phase_in *in, const struct bench_agg *ag,
    const char *status)
{
	const struct plan *p = &br->plan[br->cur];
	const struct bench_req *rq = br->req;
	int md = bench_kind_md(p->kind), ext = bench_kind_ext(p->kind), across = 0;
	json_object *ph = phase_scalars(br, in, ag, status), *per_node = json_object_new_array();
	json_object *per_thr = json_object_new_array(), *extops = NULL, *x;

	json_object_object_add(ph, "node_names", in->names);
	if (!md && ag->bytes)
		json_object_object_add(ph, "cpu_s_per_gib",
		    json_object_new_double(ag->cpu_s / ((double)ag->bytes / (1 << 30))));
	json_object_object_add(js_get(ph, "latency"), "histogram",
	    rundoc_hist_json(in->counted, br->fo->n));
	json_object_object_add(ph, "first_done_s", json_object_new_double(ag->first_done_s));
	json_object_object_add(ph, "first_done_measured", json_object_new_boolean(
	    ag->first_done_measured && !ext));
	json_object_object_add(ph, "threads_reported", json_object_new_int64(ext ?
	    (int64_t)p->threads : in->reported));
	json_object_object_add(ph, "partial", json_object_new_boolean(
	    phase_partial(p, in, status, ext)));
	json_object_object_add(ph, "missing_ranks", in->mranks);
	json_object_object_add(ph, "clock_offset_change_max_s", json_object_new_double(
	    (double)in->offmax / 1e9));
	json_object_object_add(ph, "missing", in->missing);
	json_object_object_add(ph, "errors", in->errors);
	json_object_object_add(ph, "warnings", in->warns);
	/* the measurement options go with the record's params (stored as JSON);
	 * the engine is the one the nodes ran (auto picks io_uring, falls back
	 * to libaio, takes psync at depth 1), "mixed" when they differ, "auto"
	 * where none applies (md, external tools) or an agent before the field
	 * said nothing.  Rows stored before this say "auto", the engine asked
	 * for: compare takes it for unknown, alike only to another "auto" (no
	 * migration; --force pairs such a run with a newer one) */
	if ((x = js_get(ph, "params")) != NULL)
		measure_params(x, rq, p, ext, nodes_said(br, in,
		    offsetof(Knob__PhaseResult, ioengine), "auto"), nodes_depth(br, in));
	if (strcmp(p->kind, "rand-rw") == 0)
		rw_split(ph, in->counted, br->fo->n);
	for (size_t i = 0; i < br->fo->n; i++)
		across |= br->pn[i].inphase && br->pn[i].wall_sync;
	if (rq->stonewall_s && !ext)
		json_object_object_add(ph, "stonewall", bench_stonewall_record(in->res, in->off,
		    br->fo->n, across && br->wall_sent, rq->stonewall_s, br->wall_target, md, ag));
	for (size_t i = 0; i < br->fo->n; i++) {
		if (!br->pn[i].inphase)
			continue;
		json_object_array_add(per_node, x = node_json(br, i, in, ag, per_thr));
		/* the first external tool's summary stands for the phase (fio: per node) */
		if (extops == NULL && strcmp(p->kind, "fio") != 0 && (x = js_get(x, "ext_ops")))
			extops = json_object_get(x);
	}
	if (extops)
		json_object_object_add(ph, "ext_ops", extops);
	json_object_object_add(ph, "per_node", per_node);
	json_object_object_add(ph, "per_thread", per_thr);
	return ph;
}

json_object *
bench_phase_record(const struct brun *br, const char **status)
{
	struct phase_in in;
	struct bench_agg ag;
	json_object *ph;

	phase_collect(br, &in);
	*status = phase_aggregate(br, &in, &ag);
	ph = phase_document(br, &in, &ag, *status);
	rundoc_finite(ph);	/* mdtest's "Tree creation ... inf" */
	free(in.res);
	free(in.counted);
	free(in.off);
	return ph;
}

void
bench_doc_begin(struct brun *br, const struct strvec *nodes)
{
	const struct bench_req *req = br->req;
	json_object *jn = json_object_new_array();
	char *folded = nodeset_fold(nodes->v, nodes->n);

	br->doc = json_object_new_object();
	br->phases = json_object_new_array();
	json_object_object_add(br->doc, "run_id", jstr(br->run_id));
	json_object_object_add(br->doc, "started_at", json_object_new_int64((int64_t)time(NULL)));
	json_object_object_add(br->doc, "started_ns", json_object_new_int64((int64_t)now_real_ns()));
	json_object_object_add(br->doc, "command", jstr(req->command));
	json_object_object_add(br->doc, "label", jstr(req->label));
	json_object_object_add(br->doc, "repeat", json_object_new_int64(req->repeat ? req->repeat : 1));
	json_object_object_add(br->doc, "nodeset", jstr(folded));
	free(folded);
	for (size_t i = 0; i < nodes->n; i++)
		json_object_array_add(jn, jstr(nodes->v[i]));
	json_object_object_add(br->doc, "nodes", jn);
	if (req->info) {
		json_object_object_foreach(req->info, ik, iv)
			json_object_object_add(br->doc, ik, json_object_get(iv));
	}
	json_object_object_add(br->doc, "phases", br->phases);
	json_object_object_add(br->doc, "status", jstr("running"));
}

/* A --keep run stopped by a signal: the directories of the phases it
 * finished, whose files stay, into the document's interrupted "kept"
 * (the phases run in plan order; a workdir's phases are neighbours). */
static void
doc_kept(struct brun *br)
{
	json_object *kept = json_object_new_array();
	size_t done = json_object_array_length(br->phases);

	char *path;

	for (size_t k = 0; k < done && k < br->nplan; k++) {
		if (k > 0 && strcmp(br->plan[k - 1].workdir, br->plan[k].workdir) == 0)
			continue;
		path = xasprintf("%s/knob.%s", br->req->dir, br->plan[k].workdir);
		json_object_array_add(kept, jstr(path));
		free(path);
	}
	json_object_object_add(json_object_object_get(br->doc, "interrupted"), "kept", kept);
}

void
bench_doc_end(struct brun *br)
{
	json_object *ck = json_object_new_object();

	json_object_object_add(ck, "syncs", json_object_new_int64(br->nsyncs));
	json_object_object_add(ck, "offset_change_max_s", json_object_new_double(
	    (double)br->off_change_max / 1e9));
	json_object_object_add(ck, "node", jstr(br->off_change_node));
	json_object_object_add(ck, "before_phase", jstr(br->off_change_phase));
	json_object_object_add(br->doc, "clock", ck);
	json_object_object_add(br->doc, "status", jstr(br->stop_sig ? "interrupted" : br->bad ?
	    "degraded-or-failed" : "ok"));
	if (br->stop_sig && br->ctl->interrupt && atomic_load(br->ctl->interrupt))
		json_object_object_add(json_object_object_get(br->doc, "interrupted"), "cut_off",
		    json_object_new_boolean(1));
	if (br->stop_sig && br->req->keep)
		doc_kept(br);
}

/* What the run was doing at its stop, in words for the summary. */
static const char *
stage_words(int stage)
{
	switch (stage) {
	case ST_SYNC:
		return "between phases";
	case ST_RELEASE:
		return "removing the files of a phase";
	case ST_DONE:
		return "at its end";
	}
	return "in a phase";
}

void
bench_doc_interrupted(struct brun *br, const char *signame)
{
	json_object *o = json_object_new_object();
	int inphase = br->stage >= ST_PREPARE && br->stage <= ST_STOPPING;
	char *wd;

	json_object_object_add(o, "signal", jstr(signame));
	json_object_object_add(o, "during", jstr(stage_words(br->stage)));
	if (inphase && br->cur < br->nplan) {
		json_object_object_add(o, "phase_id", jstr(br->phase_id));
		json_object_object_add(o, "kind", jstr(br->plan[br->cur].kind));
		json_object_object_add(o, "threads", json_object_new_int64(br->plan[br->cur].threads));
		wd = xasprintf("%s/knob.%s", br->req->dir, br->plan[br->cur].workdir);
		json_object_object_add(o, "workdir", jstr(wd));
		free(wd);
	}
	json_object_object_add(o, "phases_planned", json_object_new_int64((int64_t)br->nplan));
	json_object_object_add(o, "stopped_on", json_object_new_array());
	json_object_object_add(o, "removed_on", json_object_new_array());
	json_object_object_add(o, "kept_on", json_object_new_array());
	json_object_object_add(o, "unknown_on", json_object_new_array());
	json_object_object_add(br->doc, "interrupted", o);
}

void
bench_doc_stop_node(struct brun *br, const char *key, const char *name)
{
	json_object *o = json_object_object_get(br->doc, "interrupted");

	json_object_array_add(json_object_object_get(o, key), jstr(name));
}

static void print_clock(FILE *f, json_object *doc);

/* The run's failed clean-ups, one line each (node, what is left): "failed"
 * when its agent said so, "unknown" when it did not confirm. */
static void
print_cleanup_failed(FILE *f, json_object *doc)
{
	json_object *arr, *o;

	if (!json_object_object_get_ex(doc, "cleanup_failed", &arr))
		return;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		o = json_object_array_get_idx(arr, i);
		fprintf(f, "clean-up %s: %s\n", strcmp(js_str(o, "state"), "unknown") == 0 ?
		    "unknown" : "failed", js_str(o, "error"));
	}
}

/* The names in the array key of o, folded ("node[01-02]"), or "none";
 * malloc'd. */
static char *
fold_names(json_object *o, const char *key)
{
	json_object *arr = json_object_object_get(o, key);
	size_t n = arr ? json_object_array_length(arr) : 0;
	char **v = xcalloc(n + 1, sizeof(*v)), *s;

	for (size_t i = 0; i < n; i++)
		v[i] = (char *)(uintptr_t)json_object_get_string(json_object_array_get_idx(arr, i));
	s = n ? nodeset_fold(v, n) : xstrdup("none");
	free(v);
	return s;
}

/* A --keep run's line on the files its finished phases left, where. */
static void
print_kept(FILE *f, json_object *in)
{
	json_object *kept = json_object_object_get(in, "kept");
	size_t n = kept ? json_object_array_length(kept) : 0;

	if (kept == NULL)
		return;
	fprintf(f, "files of the finished phase(s) kept (--keep) in: ");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? ", " : "", json_object_get_string(json_object_array_get_idx(
		    kept, i)));
	fprintf(f, "%s\n", n ? " (on the nodes that ran them)" : "none (no phase finished)");
}

/* The nodes of the array key of in with their files in the phase in
 * flight's directory, after what (a line; none: no line). */
static void
print_files_on(FILE *f, json_object *in, const char *key, const char *what)
{
	json_object *arr = json_object_object_get(in, key);
	char *nodes;

	if (arr == NULL || json_object_array_length(arr) == 0)
		return;
	nodes = fold_names(in, key);
	fprintf(f, "%s on: %s", what, nodes);
	if (js_str(in, "workdir")[0])
		fprintf(f, ", in %s", js_str(in, "workdir"));
	fprintf(f, "\n");
	free(nodes);
}

/* The summary of a run a signal stopped: what was in flight and where it
 * was stopped, the phases kept, where the files were removed (confirmed),
 * kept (--keep: a node whose phase ended before the stop, or a read of a
 * finished phase's files) or not said; the clean-up lines follow
 * (print_cleanup_failed). */
static void
print_interrupted(FILE *f, json_object *doc)
{
	json_object *in = json_object_object_get(doc, "interrupted"), *ph;
	size_t done;
	char *stopped, *removed;

	if (in == NULL)
		return;
	ph = json_object_object_get(doc, "phases");
	done = ph ? json_object_array_length(ph) : 0;
	stopped = fold_names(in, "stopped_on");
	removed = fold_names(in, "removed_on");
	fprintf(f, "interrupted by %s %s", js_str(in, "signal"), js_str(in, "during"));
	if (js_str(in, "phase_id")[0])
		fprintf(f, ": %s %s threads=%.0f stopped on %s, not recorded", js_str(in, "phase_id"),
		    js_str(in, "kind"), js_num(in, "threads"), stopped);
	fprintf(f, "\n%zu of %.0f phase(s) finished and kept; %.0f not run\n", done,
	    js_num(in, "phases_planned"), js_num(in, "phases_planned") - (double)done -
	    (js_str(in, "phase_id")[0] ? 1 : 0));
	if (js_bool(in, "cut_off"))
		fprintf(f, "cut off at once: the removal of the files was not waited for\n");
	fprintf(f, "files removed (confirmed by their agents) on: %s\n", removed);
	print_files_on(f, in, "kept_on", "files kept (--keep; said by their agents)");
	print_files_on(f, in, "unknown_on", "files kept or removed, not said by their agents "
	    "(a knobd before it says so: look there)");
	print_kept(f, in);
	if (js_str(doc, "db")[0])
		fprintf(f, "run %s stored as interrupted in %s: compare and report do not take it "
		    "for a complete run\n", js_str(doc, "run_id"), js_str(doc, "db"));
	free(stopped);
	free(removed);
}

/* Phase ph's line on its missing nodes, if any: how many of its threads
 * it counts (a node lost in it: "3 of 4 threads reported", its ranks; lost
 * before it: all of them ran on the nodes left). */
static void
print_missing(FILE *f, json_object *ph)
{
	json_object *arr, *mr = json_object_object_get(ph, "missing_ranks");
	size_t k;

	if (!json_object_object_get_ex(ph, "missing", &arr) || json_object_array_length(arr) == 0)
		return;
	if (js_bool(ph, "partial") || strcmp(js_str(ph, "status"), "degraded") != 0)
		fprintf(f, "%s %s threads=%.0f: degraded, %.0f of %.0f threads reported, missing:",
		    js_str(ph, "phase_id"), js_str(ph, "kind"), js_num(ph, "threads"),
		    js_num(ph, "threads_reported"), js_num(ph, "threads"));
	else
		fprintf(f, "%s %s threads=%.0f: degraded, all %.0f threads ran on the nodes left, "
		    "missing:", js_str(ph, "phase_id"), js_str(ph, "kind"), js_num(ph, "threads"),
		    js_num(ph, "threads"));
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

/* The bench table of doc, made visible already. */
static void
print_table(FILE *f, json_object *doc, int decimal)
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
			else if (js_get(x, "iops") != NULL)
				rundoc_fmt_rate(r2, sizeof(r2), js_num(x, "iops"), M_OPS, decimal);
			else	/* not a number the tool gave (inf) */
				snprintf(r2, sizeof(r2), "-");
			fprintf(f, "  %-20s %27s%s\n", js_str(x, "op"), r2,
			    js_bool(x, "counted") ? "   (counted in RESULT)" : "");
		}
	}
	for (i = 0; i < json_object_array_length(phases); i++) {
		ph = json_object_array_get_idx(phases, i);
		print_missing(f, ph);
		if (json_object_object_get_ex(ph, "errors", &arr))
			for (k = 0; k < json_object_array_length(arr); k++)
				fprintf(f, "%s %s: error: %s\n", js_str(ph, "phase_id"), js_str(ph, "kind"),
				    json_object_get_string(json_object_array_get_idx(arr, k)));
		if (json_object_object_get_ex(ph, "stonewall", &arr)) {
			int md = strcmp(js_str(ph, "unit"), "op/s") == 0;
			char rate[32], ended[96], done[64] = "";

			bench_fmt_rate(rate, sizeof(rate), js_num(arr, "rate_at_wall"), md, decimal);
			if (js_num(arr, "min_ops") == js_num(arr, "max_ops"))
				snprintf(ended, sizeof(ended), "every thread ended with %.0f ops",
				    js_num(arr, "max_ops"));
			else
				snprintf(ended, sizeof(ended), "threads ended with %.0f..%.0f ops",
				    js_num(arr, "min_ops"), js_num(arr, "max_ops"));
			if (js_num(arr, "threads_done_before_wall") > 0)
				snprintf(done, sizeof(done), ", %.0f of them finished before it",
				    js_num(arr, "threads_done_before_wall"));
			if (js_num(arr, "threads_at_wall") == 0)
				fprintf(f, "%s %s: stonewall %.0f s not reached: every thread finished "
				    "first\n", js_str(ph, "phase_id"), js_str(ph, "kind"),
				    js_num(arr, "seconds"));
			else
				fprintf(f, "%s %s: stonewall %.0f s%s: %.0f..%.0f ops per thread at the "
				    "wall%s (%s); %s after a %.2f s wear-out\n",
				    js_str(ph, "phase_id"), js_str(ph, "kind"), js_num(arr, "seconds"),
				    json_object_get_boolean(json_object_object_get(arr, "across_nodes")) ?
				    " across nodes" : "", js_num(arr, "min_ops_at_wall"),
				    js_num(arr, "max_ops_at_wall"), done, rate, ended,
				    js_num(arr, "wearout_s"));
		}
		if (json_object_object_get_ex(ph, "warnings", &arr))
			for (k = 0; k < json_object_array_length(arr); k++)
				fprintf(f, "%s %s: warning: %s\n", js_str(ph, "phase_id"), js_str(ph, "kind"),
				    json_object_get_string(json_object_array_get_idx(arr, k)));
		sweep_print_stragglers(f, ph);
	}
	print_clock(f, doc);
	print_interrupted(f, doc);
	print_cleanup_failed(f, doc);
}

/* From doc made visible (visible.h): a label, a node's name or an agent's
 * error cannot write to the terminal. */
void
bench_print_table(FILE *f, json_object *doc, int decimal)
{
	json_object *vis = json_visible(doc);

	print_table(f, vis, decimal);
	json_object_put(vis);
}

/* The clock line under the table: offsets are measured before every phase. */
static void
print_clock(FILE *f, json_object *doc)
{
	json_object *ck;
	double ch;
	char v[32];

	if (!json_object_object_get_ex(doc, "clock", &ck) || js_num(ck, "syncs") < 2)
		return;
	ch = js_num(ck, "offset_change_max_s");
	/* a change that rounds to zero prints without a sign */
	signed_fmt(v, sizeof(v), fabs(ch) >= 1 ? ch : ch * 1e3, 3);
	fprintf(f, "clock offsets measured before each of %.0f phases; largest change %s %s "
	    "(%s, before %s)\n", js_num(ck, "syncs"), v, fabs(ch) >= 1 ? "s" : "ms",
	    js_str(ck, "node"), js_str(ck, "before_phase"));
}
