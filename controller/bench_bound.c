/* What a node can possibly report of a phase, from the plan: the counts its
 * ranks can reach and the entries they can create.  A node that reports
 * more (in its progress, at the stonewall, in its result, or while it
 * removes a workdir's files) is not an agent measuring: bench_ctl.c ends
 * it as failed with the reason these functions give.
 *
 *   data phase (seq-*, rand-*) without --runtime: a rank does size / bs
 *     ops of bs bytes (size: the plan's, or the agent's default 64 x bs);
 *   metadata phase (md-*): a rank does its md_files items (files_total
 *     spread: at most the plan's rounded-up share), each of at most the
 *     write size in bytes;
 *   --runtime and the external tools (fio, ior, mdtest): the counts are
 *     bounded by time, not by size (bench_ctl.c's overrun bound);
 *   a release: a data phase's ranks make a file each (or share one), a
 *     metadata phase's their items and the directories of their trees;
 *     the workdir's bound is the sum over the node's phases there, with
 *     RELEASE_SLACK for the workdir itself and the shared names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_defaults.h"
#include "bench_run.h"
#include "util.h"

#define RELEASE_SLACK	16		/* entries beside the ranks' own */
#define MD_TREE_MAX	(1ull << 20)	/* directories of one md tree (the agent's cap) */

/* a * b, UINT64_MAX when it does not fit */
static uint64_t
mul_sat(uint64_t a, uint64_t b)
{
	return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* a + b, UINT64_MAX when it does not fit */
static uint64_t
add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* What one rank of a phase can do: bounded (by the plan's size), and then
 * its ops and bytes. */
struct bench_cap {
	int bounded;
	uint64_t ops, bytes;
};

/* Is phase p bounded by its size (its counts by the plan)? */
static int
size_bounded(const struct bench_req *rq, const struct plan *p)
{
	return !bench_kind_ext(p->kind) && !(rq->runtime_s && !bench_kind_md(p->kind));
}

/* What one rank of phase p can do, into c. */
static void
rank_cap(const struct bench_req *rq, const struct plan *p, struct bench_cap *c)
{
	uint64_t size = p->size ? p->size : mul_sat(64, p->bs);

	c->bounded = size_bounded(rq, p);
	c->ops = c->bytes = UINT64_MAX;
	if (!c->bounded)
		return;
	if (bench_kind_md(p->kind)) {
		c->ops = p->md_files;
		c->bytes = mul_sat(p->md_files, rq->write_size);
	} else {
		c->ops = p->bs ? size / p->bs : size;
		c->bytes = size;
	}
}

/* "1 rank x 64k" for n ranks of per bytes each (per: a count when ops). */
static void
cap_words(char *buf, size_t len, size_t n, uint64_t per, int ops)
{
	char v[32];

	if (ops)
		snprintf(v, sizeof(v), "%llu", (unsigned long long)per);
	else
		size_fmt(v, sizeof(v), per);
	snprintf(buf, len, "%zu rank%s x %s", n, n == 1 ? "" : "s", v);
}

/* Why count got (what: "bytes", "ops") of node pn (from: "reported", "its
 * result says") is beyond per x its ranks in phase p, malloc'd; NULL when
 * within. */
static char *
count_beyond(const struct plan *p, const struct pnode *pn, const char *from, const char *what,
    uint64_t got, uint64_t per)
{
	uint64_t cap = mul_sat(per, pn->nranks);
	int ops = strcmp(what, "ops") == 0;
	char c[32], how[64];

	if (got <= cap)
		return NULL;
	if (ops)
		snprintf(c, sizeof(c), "%llu", (unsigned long long)cap);
	else
		size_fmt(c, sizeof(c), cap);
	cap_words(how, sizeof(how), pn->nranks, per, ops);
	return xasprintf("%s %llu %s in a %s phase that allows it %s (%s): not an agent's count",
	    from, (unsigned long long)got, what, p->kind, c, how);
}

/* Why one thread's count (what) in node pn's result is beyond one rank's
 * per, malloc'd; NULL when within. */
static char *
thread_beyond(const struct plan *p, const Knob__ThreadResult *t, const char *what, uint64_t got,
    uint64_t per)
{
	if (got <= per)
		return NULL;
	return xasprintf("its result says rank %u did %llu %s in a %s phase that allows a rank "
	    "%llu: not an agent's count", t->rank, (unsigned long long)got, what, p->kind,
	    (unsigned long long)per);
}

char *
bench_progress_beyond(const struct brun *br, const struct pnode *pn,
    const Knob__PhaseProgress *pg)
{
	const struct plan *p = &br->plan[br->cur];
	struct bench_cap c;
	char *why;

	if (pg->threads_done > pn->nranks && !bench_kind_ext(p->kind))
		return xasprintf("reported %u threads done of its %zu: not an agent's count",
		    pg->threads_done, pn->nranks);
	rank_cap(br->req, p, &c);
	if (!c.bounded)
		return NULL;
	if ((why = count_beyond(p, pn, "reported", "bytes", pg->bytes, c.bytes)) ||
	    (why = count_beyond(p, pn, "reported", "ops", pg->ops, c.ops)))
		return why;
	if (pg->at_stonewall && pg->stonewall_max_ops > c.ops)
		return xasprintf("reported %llu ops at the stonewall in a %s phase that allows a "
		    "rank %llu: not an agent's count", (unsigned long long)pg->stonewall_max_ops,
		    p->kind, (unsigned long long)c.ops);
	return NULL;
}

char *
bench_result_beyond(const struct brun *br, const struct pnode *pn, const Knob__PhaseResult *r)
{
	const struct plan *p = &br->plan[br->cur];
	const char *from = "its result says";
	struct bench_cap c;
	char *why = NULL;

	if (bench_kind_ext(p->kind))
		return NULL;
	if (r->n_threads > pn->nranks)
		return xasprintf("its result has %zu threads of its %zu ranks: not an agent's",
		    r->n_threads, pn->nranks);
	rank_cap(br->req, p, &c);
	if (!c.bounded)
		return NULL;
	if ((why = count_beyond(p, pn, from, "bytes", r->bytes, c.bytes)) ||
	    (why = count_beyond(p, pn, from, "ops", r->ops, c.ops)))
		return why;
	for (size_t k = 0; k < r->n_threads && why == NULL; k++) {
		const Knob__ThreadResult *t = r->threads[k];

		if (!(why = thread_beyond(p, t, "bytes", t->bytes, c.bytes)) &&
		    !(why = thread_beyond(p, t, "ops", t->ops, c.ops)) &&
		    !(why = thread_beyond(p, t, "ops at the stonewall", t->stonewall_ops, c.ops)))
			why = thread_beyond(p, t, "ops by the first thread's end",
			    t->first_done_ops, c.ops);
	}
	return why;
}

/* Directories one rank's md tree can have (the agent's md_shape): a
 * depth or branching gives up to MD_TREE_MAX, else s.<k> directories of
 * files_per_dir items and the tree's root. */
static uint64_t
md_dirs(const struct bench_req *rq, uint64_t items)
{
	if (rq->md_depth || rq->md_branch)
		return MD_TREE_MAX;
	return items / bench_files_per_dir(rq->files_per_dir) + 2;
}

uint64_t
bench_entries_cap(const struct bench_req *rq, const struct plan *p, size_t nranks, uint64_t sum)
{
	uint64_t per, shared = 0;

	if (bench_kind_ext(p->kind))
		return UINT64_MAX;	/* an external tool's files: not known */
	if (!bench_kind_md(p->kind))
		return add_sat(sum, add_sat(mul_sat(2, nranks), RELEASE_SLACK));
	per = add_sat(p->md_files, md_dirs(rq, p->md_files));
	if (rq->md_shared)	/* the one tree of every rank's items */
		shared = md_dirs(rq, mul_sat(p->md_files, p->threads));
	return add_sat(sum, add_sat(add_sat(mul_sat(add_sat(per, 2), nranks), shared),
	    RELEASE_SLACK));
}

char *
bench_release_beyond(const struct pnode *pn, uint64_t removed)
{
	if (removed <= pn->rel_cap)
		return NULL;
	return xasprintf("reported %llu entries removed from knob.%s, where its ranks could have "
	    "created at most %llu: not an agent's count", (unsigned long long)removed, pn->rel_wd,
	    (unsigned long long)pn->rel_cap);
}
