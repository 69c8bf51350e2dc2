/* Benchmark engine (agent side): the I/O workers (bench_io.c), external
 * tools fio/ior/mdtest (bench_ext.c) and the phase protocol (bench.c).
 *
 * A phase works only inside DIR/knob.<workdir-id>/ opened relative to a
 * directory descriptor with O_NOFOLLOW.  Layout inside it:
 *   f.<rank>                N-to-N data file of a global rank
 *   shared                  N-to-1 file, rank r owns [r*size, (r+1)*size)
 *   d.<rank>/s.<k>/f.<i>    metadata files of a rank, files_per_dir per s.<k>
 * Every data block starts with a 16-byte stamp (magic, rank, offset) so a
 * read can tell it reads what the right rank wrote. */
#ifndef KNOB_BENCH_H
#define KNOB_BENCH_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "knob.pb-c.h"

enum bench_kind {
	BK_SEQ_WRITE,
	BK_SEQ_READ,
	BK_RAND_WRITE,
	BK_RAND_READ,
	BK_MD_CREATE,
	BK_MD_STAT,
	BK_MD_READ,
	BK_MD_REMOVE,
	BK_FIO,
	BK_IOR,
	BK_MDTEST,
	BK__COUNT
};

#define BENCH_ID_MAX	64		/* phase / workdir id length */
#define BENCH_BS_MAX	(64u << 20)	/* largest block or md write size */
#define BENCH_ALIGN	4096		/* O_DIRECT buffer and offset alignment */
#define BENCH_MAGIC	0x626f6e6bu	/* "knob" */

int bench_kind_parse(const char *s);		/* -1 when unknown */
const char *bench_kind_name(int kind);
int bench_kind_is_md(int kind);
int bench_kind_is_ext(int kind);
int bench_kind_is_read(int kind);		/* reads data that must exist */

/* Phase or workdir id: 1..64 of [A-Za-z0-9._-], not starting with '.'. */
int bench_check_id(const char *id);
/* Refuse a benchmark directory that is not absolute or is (or lies under) a
 * system path; path is the already resolved (realpath) directory.
 * 0, or -1 with the reason in err. */
int bench_check_dir(const char *path, char *err, size_t errlen);

/* The engine's own copy of a PhaseSpec. */
struct bench_params {
	char phase_id[BENCH_ID_MAX + 1];
	char workdir_id[BENCH_ID_MAX + 1];
	int kind;
	char dir[PATH_MAX];
	char sysroot[PATH_MAX];		/* "" = real root; for /proc paths */
	uint64_t bs, file_size, md_write_size, md_files, seed;
	uint32_t threads_total, nodes_total, node_index;
	uint32_t *ranks;		/* owned */
	size_t nranks;
	int shared, odirect, fsync, drop_caches, keep_files, persist_files;
	uint32_t stonewall_s, files_per_dir, reader_shift, rate_iops;
	/* external tools */
	char **ext_args;		/* owned, NULL-terminated */
	size_t next_args;
	char **hosts;			/* owned */
	uint32_t *host_slots;
	size_t nhosts;
	uint32_t ext_timeout_s;
	char ext_tool[PATH_MAX];
};

/* Copy and validate a wire spec (string checks only, no file-system access).
 * 0, or -1 with the reason in err.  Free with bench_params_free. */
int bench_params_from_spec(struct bench_params *p, const Knob__PhaseSpec *s,
    const char *sysroot, char *err, size_t errlen);
void bench_params_free(struct bench_params *p);
/* Deep copy. */
void bench_params_copy(struct bench_params *dst, const struct bench_params *src);

struct bench_job;

struct bench_thread {
	struct bench_job *job;
	uint32_t rank;
	pthread_t tid;
	int created;
	int fd;				/* data file (seq/rand), -1 */
	void *buf;			/* aligned I/O buffer */
	size_t buflen;
	_Atomic uint64_t bytes, ops;	/* live progress */
	uint64_t start_ns, end_ns;	/* CLOCK_REALTIME */
	uint64_t cpu_ns;
	uint64_t stonewall_ops;
	struct hist *lat;
	char err[256];
	int failed;
};

struct ext_summary;

struct bench_job {
	struct bench_params p;
	char node[256];
	int dirfd;			/* DIR, resolved */
	int wfd;			/* DIR/knob.<workdir_id> */
	char wname[BENCH_ID_MAX + 8];	/* "knob.<workdir_id>" */
	struct bench_thread *th;
	size_t nth;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t nprepped;		/* threads at the barrier */
	size_t ndone;			/* threads finished */
	int go;				/* barrier released */
	_Atomic int abort;
	char abort_reason[128];
	uint64_t go_mono_ns, go_real_ns;
	/* stonewall wear-out: threads that stopped or finished, and the
	 * largest count among them (the node's target without wall_sync) */
	size_t nwall;
	uint64_t wall_target;
	int wall_fired;
	/* wall_sync (set before prepare): the target is global, from
	 * bench_job_wearout(); bench_job_wait() says when to report */
	int wall_sync;
	int wall_reported;		/* BJ_WALL returned */
	int wall_released;		/* bench_job_wearout() called */
	uint64_t wall_global;
	uint64_t mem_total_kb;
	uint64_t read_bytes;		/* data the phase reads on this node */
	char warning[512];
	char err[512];
	/* external tools */
	struct ext_summary *ext;
	char *ext_output;
	uint64_t ext_start_ns, ext_end_ns;
};

/* Allocate a job for params (taken over: p is zeroed). */
struct bench_job *bench_job_new(struct bench_params *p, const char *node);
/* Blocking: check and open the directories, create/prefill files, start the
 * I/O threads and wait until all sit at the barrier (or one failed).  Drops
 * caches when asked.  0, or -1 with j->err set (threads already stopped). */
int bench_job_prepare(struct bench_job *j);
/* Release the barrier (non-blocking). */
void bench_job_go(struct bench_job *j);
/* Ask every thread to stop soon, and release the barrier. */
void bench_job_abort(struct bench_job *j, const char *reason);
/* Wait up to timeout_ms for all threads to finish: BJ_DONE when all are
 * done, BJ_TIMEOUT, or (wall_sync only, once) BJ_WALL when every thread
 * stopped at the stonewall or finished: report bench_job_wall_max() to
 * the coordinator, which answers with bench_job_wearout(). */
enum { BJ_TIMEOUT = 0, BJ_DONE = 1, BJ_WALL = 2 };
int bench_job_wait(struct bench_job *j, int timeout_ms);
/* Largest op count of this node's threads at the stonewall. */
uint64_t bench_job_wall_max(struct bench_job *j);
/* Release the threads waiting at the stonewall: each runs to target ops
 * (the largest count across all nodes), or to the end of its file. */
void bench_job_wearout(struct bench_job *j, uint64_t target);
/* Join the threads (after wait returned 1 or after abort). */
void bench_job_join(struct bench_job *j);
/* Live totals. */
void bench_job_progress(struct bench_job *j, uint64_t *bytes, uint64_t *ops, uint32_t *done);
/* Fill r (initialised here) from the finished job; free with bench_result_free. */
void bench_job_result(struct bench_job *j, Knob__PhaseResult *r);
void bench_result_free(Knob__PhaseResult *r);
/* Remove what this job's ranks wrote (and the workdir when it is empty). 0 or -1. */
int bench_job_cleanup(struct bench_job *j);
/* Remove a kept workdir described by p (same rules as bench_job_cleanup). */
int bench_cleanup_params(const struct bench_params *p);
void bench_job_free(struct bench_job *j);
/* prepare + go + wait + join: the in-process driver. 0 or -1 (j->err). */
int bench_job_run(struct bench_job *j);

/* Name of rank's N-to-N file, and of its md sub-directory. */
void bench_file_name(char *buf, size_t len, uint32_t rank);
/* MemTotal from <sysroot>/proc/meminfo in KiB, 0 if unknown. */
uint64_t bench_mem_total_kb(const char *sysroot);

/* ------------------------------------------------------- external tools */
#define EXT_MAX_OPS 16
struct ext_op {
	char op[32];
	double bw_bytes, iops;
	uint64_t bytes, ops;
	double runtime_s;
	double p50_ns, p99_ns, p999_ns;
};
struct ext_summary {
	struct ext_op op[EXT_MAX_OPS];
	size_t n;
};

/* Parsers of real tool output.  0, or -1 with the reason in err. */
int ext_parse_fio_json(const char *json, struct ext_summary *out, char *err, size_t errlen);
int ext_parse_ior_text(const char *text, struct ext_summary *out, char *err, size_t errlen);
int ext_parse_ior_json(const char *json, struct ext_summary *out, char *err, size_t errlen);
int ext_parse_mdtest_text(const char *text, struct ext_summary *out, char *err, size_t errlen);
/* Write an OpenMPI hostfile ("host slots=N" lines) into buf.  0 or -1. */
int ext_hostfile(char *buf, size_t len, char *const *hosts, const uint32_t *slots, size_t n);
/* Check that the tool of an external phase can run (prepare). 0 or -1 (j->err). */
int ext_prepare(struct bench_job *j);
/* Run the external phase (after go), filling j->ext, j->ext_output and
 * times.  0 or -1 (j->err).  Honours j->abort by killing the tool. */
int ext_run(struct bench_job *j);

#endif
