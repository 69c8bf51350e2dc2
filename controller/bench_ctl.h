/* knobctl bench: coordinated benchmark phases across nodes (bench_plan.c,
 * bench_agg.c, bench_ctl.c, bench_report.c; their shared internals are in
 * bench_run.h), the command line (cmd_bench.c) and the results store
 * (results.c). */
#ifndef KNOB_BENCH_CTL_H
#define KNOB_BENCH_CTL_H

#include <stdint.h>
#include <json-c/json.h>

#include "knobctl.h"

/* A per-thread-count override of a sweep (plays' <at threads="32..1024">);
 * 0 keeps the request's value. */
struct bench_at {
	uint32_t lo, hi;
	uint64_t bs, size, size_total, files_total, md_files, stripe_count, stripe_size;
};

/* What to run: every kind for every thread count of the sweep, repeat
 * times each. */
struct bench_req {
	struct strvec kinds;		/* expanded, e.g. seq -> seq-write, seq-read */
	uint32_t *threads;		/* sweep */
	size_t nthreads;
	const char *dir;
	uint64_t bs, size, write_size, md_files, files_total;
	uint32_t files_per_dir, stonewall_s, reader_shift, rate_iops, lease_s, ext_timeout_s;
	int reader_shift_auto;		/* --reader-shift without N: pick it per phase */
	uint32_t test_rate_iops;	/* test hook (agents with --test-hooks only) */
	uint32_t stall_s;		/* --stall-timeout: no progress for this long
					 * ends a node (0: bench_stall_s's default) */
	int shared, direct, fsync, drop_caches, keep;
	uint64_t seed;
	/* measurement options (issue 9) */
	int verify, md_relative, md_shared, md_leaf_only, fallocate;
	int small_pages;		/* --buffer-pages 4k */
	int cpu_bind;			/* --cpu-bind core */
	uint32_t compress_pct, md_depth, md_branch, iodepth, runtime_s, rwmix;
	uint64_t segments;
	uint64_t stripe_count, stripe_size;	/* Lustre layout of each phase's directory */
	const char *ioengine;
	const char *ext_tool;
	const char *mpirun;		/* ior/mdtest launcher template */
	const char *mpirun_args;	/* site flags for the launcher */
	struct strvec ext_args;
	char *command;			/* command line, for the results store */
	uint32_t repeat;		/* runs of each point (0 = 1) */
	uint64_t size_total;		/* aggregate size split over the threads */
	struct bench_at *at;		/* per-thread-count overrides (--at) */
	size_t nat;
	const char *label;		/* --label */
	json_object *info;		/* merged into the run document (not owned) */
	/* results store hooks: the run document before the first phase, and
	 * each finished phase (already appended to the document) */
	void (*on_start)(void *arg, json_object *doc);
	void (*on_phase)(void *arg, json_object *doc, json_object *phase);
	void *hook_arg;
	/* non-zero (a signal's number): stop the run cleanly (the phase in
	 * flight aborted on its nodes, every node's files released, the run
	 * recorded "interrupted"); NULL never.  ctl->interrupt stops it at
	 * once. */
	const atomic_int *stop;
	/* a play's run (non-zero): the stop waits this long for the nodes'
	 * answers to its abort, and a second signal stops that wait (the
	 * play's ctl->interrupt); 0: the stall limit, a second exits */
	uint32_t stop_wait_s;
};

/* Parse "1,2,4", "1..1024" (powers of two from the first), or a mix;
 * *out malloc'd, sorted as given.  0 or -1 (message in err). */
int bench_parse_sweep(const char *s, uint32_t **out, size_t *n, char *err, size_t errlen);
/* "4k", "1m", "8M", "128G", "4KiB", "512" -> bytes (binary units). 0 or -1. */
int bench_parse_size(const char *s, uint64_t *out);
/* Expand a kind or composite ("seq", "rand", "md", "all", "a,b") into
 * kinds; 0 or -1 on an unknown name. */
int bench_expand_kinds(const char *s, struct strvec *out, char *err, size_t errlen);
/* Round-robin placement: the global ranks of node idx among nnodes for
 * threads in total, written to ranks (room for threads/nnodes+1); count. */
size_t bench_place(uint32_t threads, size_t nnodes, size_t idx, uint32_t *ranks);
/* Nodes that get at least one rank. */
size_t bench_nodes_used(uint32_t threads, size_t nnodes);
/* Ranks of threads placed round-robin on nused nodes that, shifted by
 * shift, read data a rank of their own node wrote. */
uint32_t bench_shift_own(uint32_t threads, size_t nused, uint32_t shift);
/* The smallest shift that has every rank read another node's data (1
 * when none does: one node, or an odd thread count on two). */
uint32_t bench_shift_auto(uint32_t threads, size_t nused);
/* The phase's warning that own of its threads ranks, on nused nodes, read
 * their own node's data under reader shift shift (malloc'd). */
char *bench_shift_warning(uint32_t shift, uint32_t own, uint32_t threads, size_t nused);

/* Aggregate of one phase over the nodes that returned a result. */
struct bench_agg {
	uint64_t bytes, ops;
	uint64_t t_start, t_end;	/* controller clock, ns */
	double elapsed_s;		/* latest end - earliest start */
	double rate;			/* bytes/s, or ops/s for metadata */
	double first_done_rate;		/* counts when the first thread ended / time to it */
	double first_done_s;		/* first thread's end - earliest start */
	int first_done_measured;	/* every node counted it from checkpoints */
	double last_done_rate;		/* = rate */
	double spread_s;		/* latest node start - earliest node start */
	double cpu_s;
	uint64_t p50, p99, p999;	/* ns, merged histograms */
	uint64_t nlat;
};
/* res[i] with agent clock offsets off[i] (agent - controller, ns).  md
 * selects ops as the unit.  0, or -1 when no node has timing. */
int bench_aggregate(const Knob__PhaseResult *const *res, const int64_t *off, size_t n,
    int md, struct bench_agg *out);
/* What a node's phase does, for the cache warning. */
enum { CW_NONE, CW_READ, CW_WRITE, CW_MDREAD };
struct bench_cache_in {
	int what;			/* CW_* */
	const char *fs_type;		/* of DIR on that node: "tmpfs", "gpfs", ... */
	uint64_t bytes;			/* data the node reads or writes */
	uint64_t mem_kb, pagepool;	/* RAM (KiB), GPFS pagepool (bytes, 0 none) */
	int direct, fsync, drop_caches;
	int wrapped;			/* time-based and read more than bytes: every
					 * pass after the first re-read what it had read */
};
/* The cache warning for one node, written to buf ("" for none): on tmpfs
 * the data lives in memory; on GPFS only the pagepool caches (O_DIRECT
 * bypasses it, --drop-caches does not empty it); elsewhere the page cache
 * (RAM) caches reads unless --drop-caches or O_DIRECT, and buffered writes
 * unless --fsync or O_DIRECT; a run that wrapped over its data read it
 * back after the one drop, so only O_DIRECT counts.  Returns 1 when it warns. */
int bench_cache_warning(char *buf, size_t len, const struct bench_cache_in *in);
/* Clock offset sample from one ping: controller send/receive times and the
 * agent's time; the offset is agent - midpoint. */
int64_t bench_offset_sample(uint64_t t_send, uint64_t t_recv, uint64_t agent);

/* Run the request on the nodes; *doc receives the run's JSON document
 * (caller puts it).  Returns the exit status (0 ok, 1 degraded/failed). */
int bench_run(struct ctl *ctl, const struct strvec *nodes, const struct bench_req *req,
    json_object **doc);
/* bench_run with the run's node records gathered first and the run
 * written to the results store as it goes (cmd_bench.c). */
int bench_run_stored(struct ctl *ctl, const struct strvec *nodes, struct bench_req *req,
    json_object **doc);
/* Parse "bench [options] KIND" (argv[0] = "bench") into rq with ctl's
 * option tables, printing usage errors; 0 or -1.  bench_req_free releases rq. */
int bench_parse_argv(struct ctl *ctl, int argc, char **argv, struct bench_req *rq);
/* Every data phase the request plans (its <at> values, size-total and
 * the kind's default block size applied) under the size rules the agent
 * applies (common/bench_sizes.h): 0, or -1 with the first refusal in err. */
int bench_plan_check(const struct bench_req *rq, char *err, size_t errlen);
/* Print a run document as the bench table, its strings made visible
 * (common/visible.h). */
void bench_print_table(FILE *f, json_object *doc, int decimal);
void bench_req_free(struct bench_req *r);

#endif
