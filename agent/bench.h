/* Benchmark engine (agent side): the phase parameters (bench_params.c), the
 * job lifecycle (bench_job.c), the I/O workers (bench_io.c), metadata
 * phases (bench_md.c), data content and random offsets (bench_data.c),
 * queued I/O through io_uring or libaio (bench_aio.c), external tools
 * fio/ior/mdtest (bench_ext.c) and the phase protocol (bench.c).
 *
 * A phase works only inside DIR/knob.<workdir-id>/ opened relative to a
 * directory descriptor with O_NOFOLLOW.  Layout inside it:
 *   f.<rank>                N-to-N data file of a global rank
 *   shared                  N-to-1 file, rank r owns [r*size, (r+1)*size),
 *                           or with S segments the r-th of every N segments
 *                           of size/S (IOR -s): [(s*N+r)*size/S, ...)
 *   d.<rank>/s.<k>/file.mdtest.<rank>.<i>   metadata files of a rank,
 *                           files_per_dir per s.<k> (dir.mdtest.<rank>.<i>
 *                           for directory phases), named as mdtest names them
 *   d.<rank>/s.<a>/s.<b>/...      with a tree shape (mdtest -z/-b): node
 *                           directories s.<child>, items in every node or
 *                           only in the leaves (-L)
 *   d.shared/...            the same with md_shared: every rank in one tree
 * A data block is incompressible bytes that are a function of (seed, rank,
 * offset) -- a slice of a random pool made from the seed from a pool page
 * hashed from the rest -- with the rank's 16-byte stamp (magic, rank, file
 * offset) at the start of every 4 KiB.  A read checks the first stamp, and
 * with verify every byte. */
#ifndef KNOB_BENCH_H
#define KNOB_BENCH_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "bench_sizes.h"
#include "hist.h"
#include "util.h"
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
	BK_RAND_RW,
	BK_MD_MKDIR,
	BK_MD_DIRSTAT,
	BK_MD_RMDIR,
	BK_FIO,
	BK_IOR,
	BK_MDTEST,
	BK__COUNT
};

#define BENCH_ID_MAX	64		/* phase / workdir id length */
#define BENCH_HUGE	(2u << 20)	/* a huge page: buffers from BENCH_HUGE_MIN */
#define BENCH_HUGE_MIN	(1u << 20)
#define BENCH_MAGIC	0x626f6e6bu	/* "knob" */

int bench_kind_parse(const char *s);		/* -1 when unknown */
const char *bench_kind_name(int kind);
int bench_kind_is_md(int kind);
int bench_kind_is_ext(int kind);
int bench_kind_is_read(int kind);		/* reads data that must exist */
int bench_kind_writes(int kind);		/* data phase that writes (rand-rw too) */
int bench_kind_is_rand(int kind);
int bench_kind_access(int kind);		/* 0 reads, 1 writes, 2 both (rand-rw) */

/* I/O engines of data phases. */
enum { IOE_AUTO, IOE_PSYNC, IOE_URING, IOE_AIO };
int bench_ioengine_parse(const char *s);	/* -1 when unknown */
const char *bench_ioengine_name(int e);

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
	uint64_t files_total, segments;
	uint32_t stripe_count;		/* Lustre: lfs setstripe -c; 0 = leave the layout */
	uint64_t stripe_size;		/* Lustre: lfs setstripe -S, bytes; 0 = leave it */
	int verify, md_relative, md_shared, md_leaf_only, fallocate;
	int small_pages;		/* I/O buffers on 4 KiB pages (bench_mem.c) */
	int cpu_bind;			/* thread i on the i-th CPU it may use, as mpirun
					 * --bind-to core (bench/engine-vs-mdtest) */
	uint32_t compress_pct, md_depth, md_branch, queue_depth, runtime_s, rwmix_read;
	int ioengine;			/* IOE_* */
	/* external tools */
	char **ext_args;		/* owned, NULL-terminated */
	size_t next_args;
	char **hosts;			/* owned */
	uint32_t *host_slots;
	size_t nhosts;
	uint32_t ext_timeout_s;
	char ext_tool[PATH_MAX];
	char mpirun[1024];		/* launcher template, "" = OpenMPI default */
	char mpirun_args[1024];		/* site flags for {args} */
	_Atomic uint64_t *removed;	/* a release's progress: entries its clean-up
					 * removed (not owned; NULL: not counted) */
};

/* Copy and validate a wire spec (string checks only, no file-system access).
 * 0, or -1 with the reason in err.  Free with bench_params_free. */
int bench_params_from_spec(struct bench_params *p, const Knob__PhaseSpec *s,
    const char *sysroot, char *err, size_t errlen);
void bench_params_free(struct bench_params *p);
/* Deep copy. */
void bench_params_copy(struct bench_params *dst, const struct bench_params *src);

/* ------------------------------------- offsets and content (bench_data.c) */

/* A keyed pseudo-random permutation of [0, n): a Feistel network over the
 * next even power of two, cycle-walking values >= n.  Full coverage in one
 * pass, no short periods in the low bits. */
#define BENCH_PERM_ROUNDS 6
struct bench_perm {
	uint64_t n, mask;
	unsigned half;
	uint64_t key[BENCH_PERM_ROUNDS];
};
void bench_perm_init(struct bench_perm *p, uint64_t n, uint64_t key);
/* The i-th element (i < n) of the permutation. */
uint64_t bench_perm_at(const struct bench_perm *p, uint64_t i);
/* 64-bit mixer (splitmix64 finaliser). */
uint64_t bench_mix(uint64_t x);

/* The random pool written data is cut from: made from the seed, so every
 * node computes the same bytes; compress_pct % of each 4 KiB are zeros. */
struct bench_pool {
	uint8_t *buf;
	size_t len;			/* span + the longest slice */
	size_t span;			/* slice start positions */
	size_t places;			/* starts per huge page of span, or 0 */
	uint64_t seed;
	int huge;			/* buf is bench_buf_alloc(len, huge) */
};
/* I/O memory (bench_mem.c): len rounded to 4 KiB, or with huge from
 * BENCH_HUGE_MIN to whole huge pages, which bench_buf_size gives. */
size_t bench_buf_size(size_t len, int huge);
void *bench_buf_alloc(size_t len, int huge);
void bench_buf_free(void *p, size_t len, int huge);
const char *bench_buf_pages(void);

/* The pool for data blocks of bs bytes (where their slices start:
 * bench_block_pos) and slices of up to maxlen: 0, or -1 when out of
 * memory. */
int bench_pool_init(struct bench_pool *p, uint64_t seed, uint32_t compress_pct, uint64_t bs,
    size_t maxlen, int huge);
void bench_pool_free(struct bench_pool *p);
/* Metadata files: file key of rank is made as the data block at offset key
 * would be (a stamp at every 4 KiB), from a hashed byte of the pool's
 * first BENCH_MD_SPAN bytes: small files are written and read many at a
 * time, and from the 8 MiB span each one's bytes came from beyond the
 * core's caches (tmpfs md-read 0.963 -> 0.987x mdtest, md-create
 * unchanged); the stamps keep every file unlike every other. */
#define BENCH_MD_SPAN	(64u << 10)
const uint8_t *bench_md_src(const struct bench_pool *p, uint32_t rank, uint64_t key);
/* Is b[0, ws) metadata file key of rank?  Cheap: its first and last 16
 * bytes; full: every byte.  1 or 0. */
int bench_md_content(const struct bench_pool *p, const uint8_t *b, size_t ws, uint32_t rank,
    uint64_t key, int full);
/* Where in the pool the data block rank writes at off starts: a hashed
 * pool page (a multiple of BENCH_ALIGN), for blocks of up to 1 MiB one
 * from which the block ends in the same huge page. */
size_t bench_block_pos(const struct bench_pool *p, uint32_t rank, uint64_t off);
/* The pool bytes of the data block rank writes at off. */
const uint8_t *bench_block_src(const struct bench_pool *p, uint32_t rank, uint64_t off);
/* bs bytes from src with (rank, off + k)'s stamp at every 4 KiB k, into b
 * (a data block from bench_block_src, a metadata file from bench_md_src). */
void bench_fill(const uint8_t *src, uint8_t *b, size_t bs, uint32_t rank, uint64_t off);
/* The 16-byte stamp of a block: magic, rank, file offset. */
void bench_stamp(uint8_t *b, uint32_t rank, uint64_t off);
/* The block rank writes at file offset off: pool bytes with a stamp at the
 * start of every 4 KiB (of the block; a tail under 16 bytes has none). */
#define BENCH_STAMP_EVERY 4096
void bench_block_fill(const struct bench_pool *p, uint8_t *b, size_t bs, uint32_t rank,
    uint64_t off);
/* The same block made in place in copy, a private copy of the pool's buf
 * (aligned, p->len bytes): its stamps are written there and the block is
 * returned (aligned for O_DIRECT), no pool bytes copied.  The copy's pool
 * bytes under stamps are never data, so it serves every later block; it
 * must not change while a block made in it is being written. */
uint8_t *bench_block_stamp_in(const struct bench_pool *p, uint8_t *copy, size_t bs,
    uint32_t rank, uint64_t off);
/* Read one byte of every 64-byte line of b[0, len): brings it into this
 * core's cache. */
void bench_warm(const uint8_t *b, size_t len);
/* The same for the pool bytes of the block rank writes at off: before a
 * write to a shared file, so that the copy the kernel makes under the
 * file's lock reads from cache. */
void bench_block_warm(const struct bench_pool *p, size_t bs, uint32_t rank, uint64_t off);
/* The same block as iovecs for pwritev, without copying the pool: from
 * byte from (a multiple of 4 KiB) of the block, stamps written into
 * stamps[], at most maxiov entries; returns the count, *len the bytes. */
struct iovec;
size_t bench_block_iov(const struct bench_pool *p, size_t bs, uint32_t rank, uint64_t off,
    size_t from, uint8_t (*stamps)[16], struct iovec *iov, size_t maxiov, size_t *len);
/* The same from any source (bench_fill's bytes as iovecs). */
size_t bench_iov(const uint8_t *src, size_t bs, uint32_t rank, uint64_t off, size_t from,
    uint8_t (*stamps)[16], struct iovec *iov, size_t maxiov, size_t *len);
/* Check a block read at off: 0 when it is rank's; -1 when its first stamp
 * is not rank's; with full, also every byte: 1 + index of the first wrong
 * byte. */
int64_t bench_block_check(const struct bench_pool *p, const uint8_t *b, size_t bs,
    uint32_t rank, uint64_t off, int full);

struct bench_job;
struct bench_aio;

/* Test hook: where a stalled thread waits until the agent stops. */
struct bench_stall {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int released;
};

/* Test hook: wait on st until the agent stops, or at most secs seconds
 * when secs is not 0. */
void bench_stall_wait(struct bench_stall *st, unsigned secs);

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
	_Atomic uint64_t read_ops, read_bytes;	/* rand-rw */
	uint64_t nitems;		/* md-*: items of this rank */
	uint64_t rng;			/* rand-rw coin */
	uint32_t owner;			/* rank whose data the thread reads/writes */
	char fname[64];			/* its data file */
	struct bench_perm perm;		/* random order of the current pass */
	uint64_t pass;
	struct bench_aio *aio;		/* queued I/O (bench_aio.c) */
	uint8_t *wpool;			/* O_DIRECT writer at depth 1: its copy of the pool */
	uint64_t stonewall_ns;		/* CLOCK_REALTIME at the wall, 0 = not hit */
	int bound_cpu, ran_cpu;		/* cpu_bind: its CPU (-1 unbound), the CPU it ended on */
	struct bench_ckpt *ckpt;	/* checkpoints of this thread (the runner's), or NULL */
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
	/* test hook ($KNOB_TEST_SUBMIT_EAGAIN, --test-hooks): one queued
	 * submit of the phase fails with -EAGAIN, once the queue is full */
	_Atomic int test_submit_eagain;
	/* test hook ($KNOB_TEST_STALL_IO, --test-hooks): the first thread
	 * blocks here after two writes, deaf to abort, as in a write to a
	 * hard NFS mount whose server is gone; NULL none */
	struct bench_stall *test_stall;
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
	struct bench_pool pool;		/* written content */
	char wpath[PATH_MAX];		/* DIR/knob.<workdir_id>, resolved (full-path md) */
	char fs_type[32];		/* of DIR (mount table), set before prepare */
	int ioengine;			/* IOE_* the data phase uses */
	int huge;			/* its buffers from 1 MiB on huge pages (prepare) */
	int copy_fits;			/* buffered writers' pool copies fit (buffers_fit) */
	char warning[512];
	char err[512];
	uint64_t first_end_ns;		/* earliest end of a finished thread (j->mu) */
	/* external tools */
	struct ext_summary *ext;
	char *ext_output;
	uint64_t ext_start_ns, ext_end_ns;
};

/* Lustre: lfs setstripe on the work directory when the spec asks for a
 * stripe count or size (agent/bench_stripe.c); 0, or -1 (j->err). */
int bench_stripe(struct bench_job *j);

/* Allocate a job for params (taken over: p is zeroed). */
struct bench_job *bench_job_new(struct bench_params *p, const char *node);
/* Blocking: check and open the directories, create/prefill files, start the
 * I/O threads and wait until all sit at the barrier (or one failed).  Drops
 * caches when asked.  0, or -1 with j->err set (threads already stopped). */
int bench_job_prepare(struct bench_job *j);
/* Release the barrier (non-blocking). */
void bench_job_go(struct bench_job *j);
/* Now on the phase's clock: the wall time at GO plus the monotonic time
 * since, so that a step of the node's wall clock mid-phase moves no time
 * the phase reports. */
uint64_t bench_job_now_ns(const struct bench_job *j);
/* The monotonic time mono (after GO) on the phase's clock, as above. */
uint64_t bench_job_at_ns(const struct bench_job *j, uint64_t mono);
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
/* After a failed clean-up: "NODE: clean-up of DIR/knob.ID incomplete,
 * left: PATH, PATH/ ..." (what is still under the workdir, relative to it)
 * into buf. */
void bench_cleanup_failure(const char *node, const struct bench_params *p, char *buf,
    size_t len);
void bench_job_free(struct bench_job *j);
/* Write bs bytes of src, stamped for (rank, key + k) at every 4 KiB k, at
 * file offset foff of fd: pwritev of the stamps and src's pieces, no copy
 * (a short write finishes from t->buf, filled).  bs, or -errno. */
ssize_t bench_write_from(struct bench_thread *t, int fd, const uint8_t *src, size_t bs,
    uint32_t rank, uint64_t key, uint64_t foff);
/* Does each thread of j write from its own copy of the pool, each block
 * stamped in place and written in one piece (t->wpool)?  At queue depth 1:
 * O_DIRECT writers always (aligned pieces); buffered writers of a file each
 * when the copies fit (a write of one piece went 0.96-0.97x IOR's to
 * 0.99x, against 512 pieces of stamp and pool per MiB).  Queued writes
 * fill each slot's buffer. */
int bench_job_wpool(const struct bench_job *j);
/* prepare + go + wait + join: the in-process driver. 0 or -1 (j->err). */
int bench_job_run(struct bench_job *j);

/* Name of rank's N-to-N file, and of its md sub-directory. */
void bench_file_name(char *buf, size_t len, uint32_t rank);
/* MemTotal from <sysroot>/proc/meminfo in KiB, 0 if unknown. */
uint64_t bench_mem_total_kb(const char *sysroot);

/* ------------------------------------------ engine internals, shared by
 * bench_job.c, bench_io.c, bench_md.c and bench_aio.c */

/* I/O thread (pthread body, arg is its bench_thread): prepare, wait at the
 * barrier, run timed, report done (bench_io.c). */
void *bench_io_thread(void *arg);

#define TERR(t, ...) do { \
	snprintf((t)->err, sizeof((t)->err), __VA_ARGS__); \
	(t)->failed = 1; \
} while (0)

/* pwrite/pread the whole range, retrying short transfers. n or -errno. */
ssize_t bench_full_io(int fd, void *buf, size_t len, uint64_t off, int wr);
/* mkdirat that accepts an existing directory (never a symlink). 0 or -1. */
int bench_mkdir_ok(int dfd, const char *name);
/* Per-op bookkeeping after one timed operation: latency, progress, rate
 * limit, stonewall.  Returns the (possibly lowered) op limit. */
uint64_t bench_after_op(struct bench_thread *t, uint64_t t0, uint64_t t1, uint64_t bytes,
    uint64_t nops, uint64_t limit, uint64_t start_mono, int *walled);
/* A thread that ends without reaching the stonewall arrives there. */
void bench_wall_leave(struct bench_thread *t, int walled);
/* Remove parent/name recursively without following symbolic links, adding
 * each entry removed to *removed (NULL: not counted).  0 or -errno. */
int bench_rm_tree(int parent, const char *name, int depth, _Atomic uint64_t *removed);
/* The same, asking pick for every entry: RM_ALL removes it (and all below),
 * RM_DESCEND walks into it, RM_KEEP leaves it; parent/name goes when empty. */
enum { RM_KEEP, RM_ALL, RM_DESCEND };
typedef int (*bench_rm_pick)(const char *name, const void *arg);
int bench_rm_walk(int parent, const char *name, int depth, bench_rm_pick pick, const void *arg,
    _Atomic uint64_t *removed);
/* unlinkat(dfd, name, flags), counted in *removed (NULL: not) when it
 * removed something.  0 or -1 (errno). */
int bench_unlink_count(int dfd, const char *name, int flags, _Atomic uint64_t *removed);

/* Metadata phases (bench_md.c). */
int bench_md_check(const struct bench_params *p, char *err, size_t errlen);
uint64_t bench_md_items(const struct bench_params *p, uint32_t rank);
int bench_md_prepare(struct bench_thread *t);
void bench_md_run(struct bench_thread *t, uint32_t owner, uint64_t start_mono);
/* Remove the ranks' metadata items under wfd (private trees or their part
 * of the shared tree).  0 or -1. */
int bench_md_cleanup(int wfd, const struct bench_params *p);

/* Queued data I/O (bench_aio.c). */
int bench_aio_setup(struct bench_thread *t);	/* 0 or -1 (t->err) */
void bench_aio_free(struct bench_thread *t);
/* One op of a data phase: is it a write, and at which file offset. */
struct bench_op {
	int wr;
	uint64_t off;
};
/* Data loop with queue_depth ops in flight; ops come from next(t, i, op)
 * (0 = no more), each completion goes to done(t, ...).  */
typedef int (*bench_next_fn)(struct bench_thread *t, uint64_t i, uint64_t start_mono,
    struct bench_op *op);
typedef int (*bench_done_fn)(struct bench_thread *t, const struct bench_op *op,
    const uint8_t *buf, ssize_t n, uint64_t t0, uint64_t t1, uint64_t nops,
    uint64_t *limit, uint64_t start_mono, int *walled);
void bench_aio_run(struct bench_thread *t, int fd, uint64_t start_mono, bench_next_fn next,
    bench_done_fn done, int *walled);
/* ------------------------------------------------------- checkpoints */
/* A thread's bytes and ops at op completions at least BENCH_CKPT_NS apart
 * (and the last op before a longer gap, so a pause is seen where it was),
 * so that its count at any moment (the first thread's end anywhere in the
 * phase) can be interpolated.  Bounded: past mem_max bytes every other
 * checkpoint is dropped and the interval doubles. */
#define BENCH_CKPT_NS	(20ull * 1000000)
#define BENCH_CKPT_MEM	(32u << 20)	/* per phase on a node, all threads */
struct bench_ckpt;
struct bench_ckpt *bench_ckpt_new(size_t mem_max);
void bench_ckpt_free(struct bench_ckpt *c);
/* After an op that ended at now (the thread's clock) with these totals. */
void bench_ckpt_op(struct bench_ckpt *c, uint64_t now, uint64_t bytes, uint64_t ops);
/* Interval now in use (grows when thinned). */
uint64_t bench_ckpt_interval(const struct bench_ckpt *c);
/* Thread t's count at moment at: 0 before its start, its total after its
 * end, linear between the checkpoints around at (c may be NULL). */
void bench_ckpt_at(const struct bench_ckpt *c, const struct bench_thread *t, uint64_t at,
    uint64_t *bytes, uint64_t *ops);

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
/* The operation of s an ior or mdtest phase's figure is (the first the
 * tool ran with any work: ior's write, or its read when it only read;
 * mdtest's first File row); -1 for fio, whose directions run at once in
 * its jobs and all count, or when no operation did any work. */
int ext_counted_op(const struct ext_summary *s, int kind);
/* Write an OpenMPI hostfile ("host slots=N" lines) into buf.  0 or -1. */
int ext_hostfile(char *buf, size_t len, char *const *hosts, const uint32_t *slots, size_t n);
/* ior/mdtest launcher: the template's words, with {np} {hostfile} {hosts}
 * (comma list) {ppn} (largest ranks per node) {nnodes} {bind} (the ranks'
 * binding: none, or core as --cpu-bind core asks) replaced, {args}
 * replaced by the words of args and {cmd} by the tool's argv. */
#define EXT_MPIRUN_DEFAULT \
	"mpirun --allow-run-as-root --map-by node --bind-to {bind} --hostfile {hostfile} " \
	"-np {np} {args} {cmd}"
/* OpenMPI's --bind-to for --cpu-bind core: a core per rank, round robin
 * when there are more ranks than cores (as the engine pins its threads) */
#define EXT_BIND_CORE	"core:overload-allowed"
struct ext_launch {
	const char *tmpl;		/* "" = EXT_MPIRUN_DEFAULT */
	const char *args;
	const char *np, *hostfile, *hosts, *ppn, *nnodes, *bind;
};
/* argv of the launcher into out (strings pushed). 0, or -1 with err. */
int ext_launcher_argv(const struct ext_launch *v, char *const *cmd, struct strvec *out,
    char *err, size_t errlen);
/* Check that the tool of an external phase can run (prepare). 0 or -1 (j->err). */
int ext_prepare(struct bench_job *j);
/* What the result says of the placement of an external phase's ranks:
 * "core" or "none" as --cpu-bind asked (the default template's {bind}),
 * "launcher" when a --mpirun template without {bind} placed them, "none"
 * for fio. */
const char *ext_cpu_bind(const struct bench_job *j);
/* Run the external phase (after go), filling j->ext, j->ext_output and
 * times.  0 or -1 (j->err).  Honours j->abort by killing the tool. */
int ext_run(struct bench_job *j);

#endif
