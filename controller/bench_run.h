/* The benchmark run's internals, shared by its files (not for commands):
 *   bench_plan.c    kinds, sizes, sweeps, placement, the plan and the spec
 *   bench_agg.c     clock offsets, the aggregate, cache warning, stonewall
 *   bench_ctl.c     the state machine over the fan-out
 *   bench_bound.c   what a node can possibly report, from the plan
 *   bench_report.c  the phase record, the run document and the table */
#ifndef KNOB_BENCH_RUN_H
#define KNOB_BENCH_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "bench_ctl.h"

enum { ST_SYNC, ST_PREPARE, ST_GOSYNC, ST_RUN, ST_ABORTING, ST_STOPPING, ST_RELEASE, ST_DONE };
enum { PN_IDLE, PN_PREP, PN_READY, PN_GO, PN_DONE };

/* The run's view of one node. */
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
	uint32_t prog_done;		/* its threads done, from its progress */
	uint64_t prog_mono;		/* monotonic: when its counts last moved (ops or
					 * threads done above their highest) */
	uint64_t top_ops;		/* the highest ops it reported this phase */
	uint32_t top_done;		/* the most threads done it reported */
	char *death;			/* why it ended, if it did */
	int wall_sync;			/* PhaseReady: will report at the stonewall */
	int wall_rep;			/* reported */
	uint64_t wall_max;		/* its largest count at the wall */
	int rel_wait;			/* release sent, confirmation pending */
	const char *rel_wd;		/* the workdir of that release (a plan's) */
	uint64_t rel_deadline;		/* monotonic: RELEASE_WAIT_S after the release or
					 * the agent's last "still removing" */
	uint64_t rel_removed;		/* entries its release removed, the highest reported */
	uint64_t rel_moved;		/* monotonic: when that count last rose (or the
					 * release was sent) */
	uint64_t rel_cap;		/* entries its ranks could have made there
					 * (bench_entries_cap, summed; UINT64_MAX unknown) */
	uint64_t rel_sent;		/* monotonic: when that release was sent */
	int rel_long_said;		/* said it outlived the wait for word */
	const char *rel_late;		/* workdir given up on unconfirmed (a plan's): a
					 * late confirmation clears its cleanup_failed */
	const char *files_wd;		/* workdir it got ranks in, until released (a plan's) */
	int files_held;			/* it held files there before this phase (a kept
					 * one's, for a composite's later kind) */
	uint64_t files_cap;		/* entries its ranks could have made in files_wd */
	int stop_abort;			/* the stop's abort was sent to it */
	int fd_rep;			/* first done: its first thread's end is in */
	uint64_t fd_end;		/* that end, controller clock */
	int nsyncs;			/* clock syncs done (two for every phase) */
	int64_t off_prev;		/* offset the previous phase used (its GO sync) */
	int64_t off_change;		/* off - off_prev at the last GO sync */
	uint64_t prep_id;		/* request id of the phase's prepare, as last sent */
	uint64_t prep_until;		/* monotonic: a busy prepare is sent again until then */
};

/* One phase of the run: a kind at a thread count, its sizes after the
 * overrides, and the files it works on. */
struct plan {
	const char *kind;
	uint32_t threads, repeat;
	uint64_t bs, size, md_files;	/* after size-total and per-thread-count overrides;
					 * bs: the kind's default when not given */
	uint32_t rwmix;			/* rand-rw: percent of reads (default resolved), else 0 */
	uint64_t files_total;		/* exact total of md items (0: md_files each) */
	uint64_t stripe_count, stripe_size;
	char workdir[72];
	int keep;
};

/* One bench run: the request, the plan, the nodes and the run document. */
struct brun {
	struct ctl *ctl;
	const struct bench_req *req;
	struct fanout *fo;
	struct pnode *pn;
	struct plan *plan;
	size_t nplan, cur;
	int stage;
	int advancing;		/* in advance(), or sending: a send that fails at once
				 * ends its node, whose advance() must wait */
	int again;		/* advance() was asked for meanwhile */
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
	uint64_t wall_mono;		/* monotonic: when the wear-out target went */
	int fd_sent;			/* first-done moment sent this phase */
	uint64_t fd_mono;		/* monotonic: when it went */
	uint64_t fd_t;			/* that moment, controller clock */
	int64_t off_change_max;		/* largest |offset change| between syncs */
	const char *off_change_node;
	char off_change_phase[64];
	int nsyncs;
	uint32_t shift;			/* the phase's reader shift (0 none) */
	uint32_t shift_own;		/* its ranks that read their own node's data */
	size_t nused;			/* nodes of the phase (with ranks) */
	char **hosts;			/* their names by used_idx, the phase's (MPI launcher) */
	uint32_t *slots;		/* their rank counts */
	int stop_sig;			/* the signal that stopped the run (0: none) */
	uint64_t abort_mono;		/* monotonic: when a failed prepare's abort went to
					 * the others (ST_ABORTING) */
	uint64_t stop_deadline;		/* monotonic: nodes that did not answer the stop's
					 * abort by then are cut off */
};

/* bench_plan.c */
int bench_kind_md(const char *kind);		/* md-* and mdtest: ops are the unit */
int bench_kind_ext(const char *kind);		/* fio, ior, mdtest */
int bench_kind_cache(const char *kind);	/* CW_* */
int bench_kind_shifted(const char *kind);	/* the reader shift moves its data */
/* The ordered phases of rq for run_id: per thread count, each repeat runs
 * every kind on its own files; *n phases, malloc'd. */
struct plan *bench_make_plan(const struct bench_req *rq, const char *run_id, size_t *n);
/* The PhaseSpec of plan p for node pn (nused nodes; hosts and slots for
 * the MPI launcher, or NULL); free() the result only. */
Knob__PhaseSpec *bench_make_spec(const struct brun *br, const struct plan *p,
    const struct pnode *pn, size_t nused, char **hosts, uint32_t *slots);

/* bench_agg.c */
uint64_t bench_to_ctl(uint64_t t, int64_t off);	/* agent clock -> controller clock */
/* External tools report percentiles, not histograms: the worst node's into
 * ag (when it has no histogram). */
void bench_ext_percentiles(const Knob__PhaseResult *const *res, size_t n, struct bench_agg *ag);
/* The stonewall figures of a phase (across: the nodes synchronised the
 * wear-out to target). */
json_object *bench_stonewall_record(const Knob__PhaseResult *const *res, const int64_t *off,
    size_t n, int across, uint32_t stonewall_s, uint64_t target, int md,
    const struct bench_agg *ag);

/* bench_ctl.c */
/* --keep, and the phase in flight works on the files a finished phase kept
 * (a composite's later kind): its agent leaves them when it is stopped. */
int bench_stop_keeps(const struct brun *br);

/* bench_bound.c */
/* Why node pn's progress pg, or its result r, of the phase in flight is
 * beyond what its ranks can do (malloc'd); NULL when within. */
char *bench_progress_beyond(const struct brun *br, const struct pnode *pn,
    const Knob__PhaseProgress *pg);
char *bench_result_beyond(const struct brun *br, const struct pnode *pn,
    const Knob__PhaseResult *r);
/* sum and the entries nranks ranks of phase p can create in its workdir
 * (a release's bound: summed over a node's phases there); UINT64_MAX: not
 * known (an external tool's). */
uint64_t bench_entries_cap(const struct bench_req *rq, const struct plan *p, size_t nranks,
    uint64_t sum);
/* Why node pn's release count removed is beyond pn->rel_cap (malloc'd);
 * NULL when within. */
char *bench_release_beyond(const struct pnode *pn, uint64_t removed);

/* bench_report.c */
void bench_fmt_rate(char *buf, size_t len, double rate, int md, int decimal);
/* The record of the finished phase br->plan[br->cur]; *status "ok",
 * "degraded" or "failed". */
json_object *bench_phase_record(const struct brun *br, const char **status);
/* The run document before the first phase, and its end (clock, status). */
void bench_doc_begin(struct brun *br, const struct strvec *nodes);
void bench_doc_end(struct brun *br);
/* The run was interrupted by a signal: what was in flight, into the
 * document's "interrupted" (at the stop, before the abort). */
void bench_doc_interrupted(struct brun *br, const char *signame);
/* Node name into the document's interrupted[key] ("stopped_on": the phase
 * in flight was aborted there; "removed_on": its files' removal confirmed;
 * "kept_on": its agent said it kept them, --keep; "unknown_on": its agent
 * did not say). */
void bench_doc_stop_node(struct brun *br, const char *key, const char *name);

#endif
