/* What a bench run does, before it runs: the kinds (and composites), sizes
 * and thread sweeps of the command line, the placement of ranks on nodes,
 * the ordered plan of phases and each node's PhaseSpec. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_defaults.h"
#include "bench_sizes.h"
#include "bench_run.h"
#include "util.h"

/* The kinds: which count ops, which are external tools, what the cache
 * warning checks, which the reader shift moves (agent/bench_io.c src_rank). */
static const struct {
	const char *name;
	int md, ext;
	int cache;			/* CW_*: what the cache warning checks */
	int shifted;			/* works on rank r+shift's data */
} ckinds[] = {
	{ "seq-write", 0, 0, CW_WRITE, 0 }, { "seq-read", 0, 0, CW_READ, 1 },
	{ "rand-write", 0, 0, CW_WRITE, 0 }, { "rand-read", 0, 0, CW_READ, 1 },
	{ "md-create", 1, 0, CW_NONE, 0 }, { "md-stat", 1, 0, CW_NONE, 1 },
	{ "md-read", 1, 0, CW_MDREAD, 1 }, { "md-remove", 1, 0, CW_NONE, 0 },
	{ "rand-rw", 0, 0, CW_READ, 1 }, { "md-mkdir", 1, 0, CW_NONE, 0 },
	{ "md-dirstat", 1, 0, CW_NONE, 1 }, { "md-rmdir", 1, 0, CW_NONE, 0 },
	{ "fio", 0, 1, CW_NONE, 0 }, { "ior", 0, 1, CW_NONE, 0 }, { "mdtest", 1, 1, CW_NONE, 0 },
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

int bench_kind_md(const char *k) { int i = kind_index(k); return i >= 0 && ckinds[i].md; }
int bench_kind_ext(const char *k) { int i = kind_index(k); return i >= 0 && ckinds[i].ext; }
int bench_kind_cache(const char *k) { int i = kind_index(k); return i >= 0 ? ckinds[i].cache : CW_NONE; }
int bench_kind_shifted(const char *k) { int i = kind_index(k); return i >= 0 && ckinds[i].shifted; }

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

uint32_t
bench_shift_own(uint32_t threads, size_t nused, uint32_t shift)
{
	uint32_t own = 0;

	for (uint32_t r = 0; nused && r < threads; r++)
		own += (r + (uint64_t)shift) % threads % nused == r % nused;
	return own;
}

/* Rank r's owner (r+s) mod T sits on node (r+s) mod n before the wrap and
 * (r+s-T) mod n after it: another node for every r when s mod n is
 * neither 0 nor T mod n (1 <= s < T).  1 does unless T mod n is 1; then 2,
 * with three nodes or more. */
uint32_t
bench_shift_auto(uint32_t threads, size_t nused)
{
	return nused >= 3 && threads % nused == 1 ? 2 : 1;
}

/* The reader-shift warning; one node (or rank) in the singular. */
char *
bench_shift_warning(uint32_t shift, uint32_t own, uint32_t threads, size_t nused)
{
	return xasprintf("reader shift %u: %u of %u rank%s (round-robin on %zu node%s) read what "
	    "their own node wrote, which can come from its page cache", shift, own, threads,
	    threads == 1 ? "" : "s", nused, nused == 1 ? "" : "s");
}

/* What a phase runs with when the request leaves it to the kind:
 * the block size (4 KiB for rand-*, else 1 MiB), rand-rw's read mix and
 * a metadata phase's files per thread (as the agent resolves them). */
static void
plan_defaults(const struct bench_req *rq, struct plan *p)
{
	if (p->bs == 0 && !bench_kind_md(p->kind) && !bench_kind_ext(p->kind))
		p->bs = strncmp(p->kind, "rand-", 5) == 0 ? BENCH_BS_RAND : BENCH_BS_SEQ;
	if (strcmp(p->kind, "rand-rw") == 0)
		p->rwmix = rq->rwmix ? rq->rwmix : BENCH_RWMIX;
	if (bench_kind_md(p->kind) && !bench_kind_ext(p->kind))
		p->md_files = bench_md_files(p->md_files, rq->files_per_dir);
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
	plan_defaults(rq, p);
	if (total) {
		uint64_t unit = p->bs ? p->bs : 1;

		p->size = total / threads / unit * unit;
		p->size = p->size ? p->size : unit;
	}
	if (ftotal)
		p->md_files = (ftotal + threads - 1) / threads;
	p->files_total = ftotal;
}

struct plan *
bench_make_plan(const struct bench_req *rq, const char *run_id, size_t *n)
{
	uint32_t nrep = rq->repeat ? rq->repeat : 1;
	size_t t, k, r, i = 0;
	struct plan *plan;

	*n = rq->nthreads * rq->kinds.n * nrep;
	plan = xcalloc(*n ? *n : 1, sizeof(*plan));
	for (t = 0; t < rq->nthreads; t++)
		for (r = 0; r < nrep; r++)
			for (k = 0; k < rq->kinds.n; k++, i++) {
				struct plan *p = &plan[i];

				p->kind = rq->kinds.v[k];
				p->threads = rq->threads[t];
				p->repeat = (uint32_t)r + 1;
				plan_params(rq, p->threads, p);
				snprintf(p->workdir, sizeof(p->workdir), "%s-w%zu", run_id,
				    t * nrep + r + 1);
				/* the files stay for the next kind on the same thread count */
				p->keep = k + 1 < rq->kinds.n || rq->keep;
			}
	return plan;
}

/* Does an <at> (--at) override give the block size at threads? */
static int
at_gives_bs(const struct bench_req *rq, uint32_t threads)
{
	for (size_t i = 0; i < rq->nat; i++)
		if (rq->at[i].bs && threads >= rq->at[i].lo && threads <= rq->at[i].hi)
			return 1;
	return 0;
}

int
bench_plan_check(const struct bench_req *rq, char *err, size_t errlen)
{
	size_t n;
	struct plan *plan = bench_make_plan(rq, "check", &n);
	char why[160];
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct plan *p = &plan[i];
		struct bench_sizes s = {
			.bs = p->bs, .size = p->size, .segments = rq->segments,
			.threads = p->threads, .direct = rq->direct, .shared = rq->shared,
		};

		if (bench_kind_md(p->kind) || bench_kind_ext(p->kind) ||
		    bench_sizes_check(&s, why, sizeof(why)) == 0)
			continue;
		snprintf(err, errlen, "%s, %u thread(s): %s%s", p->kind, p->threads, why,
		    strstr(why, "block size") && rq->bs == 0 && !at_gives_bs(rq, p->threads) ?
		    " (the kind's default block size: set bs)" : "");
		rc = -1;
	}
	free(plan);
	return rc;
}

Knob__PhaseSpec *
bench_make_spec(const struct brun *br, const struct plan *p, const struct pnode *pn,
    size_t nused, char **hosts, uint32_t *slots)
{
	const struct bench_req *rq = br->req;
	Knob__PhaseSpec *s = xmalloc(sizeof(*s));

	knob__phase_spec__init(s);
	s->phase_id = (char *)(uintptr_t)br->phase_id;
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
	s->rwmix_read = p->rwmix ? p->rwmix : rq->rwmix;	/* other kinds refuse a mix */
	s->fallocate = rq->fallocate;
	s->small_pages = rq->small_pages;
	s->cpu_bind = rq->cpu_bind;
	s->segments = rq->segments;
	s->stripe_count = (uint32_t)p->stripe_count;
	s->stripe_size = p->stripe_size;
	s->drop_caches = rq->drop_caches;
	s->reader_shift = br->shift;
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
	s->first_done_sync = !bench_kind_ext(p->kind);
	s->seed = rq->seed;
	s->hosts = hosts;
	s->n_hosts = hosts ? nused : 0;
	s->host_slots = slots;
	s->n_host_slots = hosts ? nused : 0;
	return s;
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
