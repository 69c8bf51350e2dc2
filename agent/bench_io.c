/* Benchmark engine: the I/O worker threads.  Sequential N-to-N and N-to-1
 * (optionally in strided segments, IOR -s), random and mixed random over
 * prefilled files, at queue depth 1 (psync) or deeper (bench_aio.c);
 * time-based runs; O_DIRECT, preallocation, fsync+close inside the timing,
 * the threads' side of the stonewall, reader shift, verification; and the
 * file helpers the engine shares (whole transfers, mkdir, removal).  The
 * job that starts the threads is in bench_job.c, metadata phases are in
 * bench_md.c.  Everything happens inside DIR/knob.<workdir-id>/ through
 * openat(2) with O_NOFOLLOW; see bench.h for the layout. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "bench.h"
#include "log.h"
#include "util.h"

void
bench_file_name(char *buf, size_t len, uint32_t rank)
{
	snprintf(buf, len, "f.%08u", rank);
}

#define WB_IOV		1024		/* IOV_MAX on Linux */

/* ------------------------------------------------------------ helpers */

static uint64_t
xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

ssize_t
bench_full_io(int fd, void *buf, size_t len, uint64_t off, int wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? pwrite(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done))
		    : pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Rank whose data thread t works on (reader shift applies to reads only). */
static uint32_t
src_rank(const struct bench_job *j, const struct bench_thread *t)
{
	static const int own[] = { BK_SEQ_WRITE, BK_RAND_WRITE, BK_MD_CREATE, BK_MD_REMOVE,
	    BK_MD_MKDIR, BK_MD_RMDIR };

	for (size_t i = 0; i < nitems(own); i++)
		if (j->p.kind == own[i])
			return t->rank;
	if (j->p.reader_shift == 0)
		return t->rank;
	return (uint32_t)((t->rank + (uint64_t)j->p.reader_shift) % j->p.threads_total);
}

/* Bytes of one segment of a rank in the shared file (all of its data
 * without segments). */
static uint64_t
seg_size(const struct bench_job *j)
{
	return j->p.segments > 1 ? j->p.file_size / j->p.segments : j->p.file_size;
}

/* File offset of block b (0 .. file_size/bs - 1) of rank: N-to-N from 0;
 * N-to-1 in the rank's segments, segment s of rank r at (s*N + r)*seg. */
static uint64_t
blk_off(const struct bench_job *j, uint32_t rank, uint64_t b)
{
	uint64_t seg = seg_size(j), bps = seg / j->p.bs;

	if (!j->p.shared)
		return b * j->p.bs;
	return ((b / bps) * j->p.threads_total + rank) * seg + (b % bps) * j->p.bs;
}

static void
data_name(const struct bench_job *j, uint32_t rank, char *name, size_t len)
{
	if (j->p.shared)
		snprintf(name, len, "shared");
	else
		bench_file_name(name, len, rank);
}

static int
open_flags(const struct bench_job *j, int wr)
{
	static const int acc[] = { O_RDONLY, O_WRONLY | O_CREAT, O_RDWR };

	return acc[wr] | O_NOFOLLOW | O_CLOEXEC | (j->p.odirect ? O_DIRECT : 0);
}

static const char *
open_errstr(const struct bench_job *j, int e)
{
	if (e == EINVAL && j->p.odirect)
		return "O_DIRECT not supported by this file system";
	if (e == ELOOP)
		return "is a symbolic link (refused)";
	return strerror(e);
}

/* fallocate(2) what the rank will write (prepare, untimed; fio's
 * fallocate=native): its file, or the whole shared file (harmless where
 * another rank allocated already).  0 or -1 (t->err). */
static int
prealloc(struct bench_thread *t, int fd, const char *name)
{
	struct bench_job *j = t->job;
	uint64_t len = j->p.shared ? j->p.file_size * j->p.threads_total : j->p.file_size;

	if (!j->p.fallocate || fallocate(fd, 0, 0, (off_t)len) == 0)
		return 0;
	TERR(t, "%s: fallocate %s: %s", j->node, name,
	    errno == EOPNOTSUPP ? "not supported by this file system (use --fallocate none)" :
	    strerror(errno));
	return -1;
}

/* Does the rank's data look written already (first and last block stamped)? */
static int
data_present(struct bench_thread *t, int fd)
{
	struct bench_job *j = t->job;
	uint64_t nblk = j->p.file_size / j->p.bs, b[2] = { 0, nblk - 1 };
	uint8_t st[16];

	if (j->p.bs < 16)
		return 0;
	for (int i = 0; i < 2; i++) {
		uint64_t off = blk_off(j, t->rank, b[i]);

		if (pread(fd, st, 16, (off_t)off) != 16 ||
		    bench_block_check(&j->pool, st, 16, t->rank, off, 0) != 0)
			return 0;
	}
	return 1;
}

/* Write the rank's data in prepare (untimed) in chunks of whole blocks; a
 * chunk ends at the end of its segment and of the rank's range, so it
 * never runs into another rank's region or past --size. */
static int
prefill_write(struct bench_thread *t, int fd, const char *name)
{
	struct bench_job *j = t->job;
	uint64_t bs = j->p.bs, nblk = j->p.file_size / bs, bps = seg_size(j) / bs, per, b, k, n;
	size_t len;
	uint8_t *buf = NULL;
	int rc = -1;

	per = bs >= (1u << 20) ? 1 : (1u << 20) / bs;
	if (per > bps)
		per = bps;
	if (posix_memalign((void **)&buf, BENCH_ALIGN, (size_t)(per * bs)) != 0) {
		TERR(t, "%s: no memory for a %llu-byte prefill buffer", j->node,
		    (unsigned long long)(per * bs));
		return -1;
	}
	for (b = 0; b < nblk && !j->abort; b += n) {
		uint64_t off = blk_off(j, t->rank, b);
		ssize_t w;

		n = per < bps - b % bps ? per : bps - b % bps;
		if (n > nblk - b)
			n = nblk - b;
		len = (size_t)(n * bs);
		for (k = 0; k < n; k++)
			bench_block_fill(&j->pool, buf + k * bs, (size_t)bs, t->rank, off + k * bs);
		if ((w = bench_full_io(fd, buf, len, off, 1)) < 0 || (size_t)w != len) {
			TERR(t, "%s: prefill %s at %llu: %s", j->node, name,
			    (unsigned long long)off, w < 0 ? strerror((int)-w) : "short write");
			goto out;
		}
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

/* Make sure rank's data exists (prepare, untimed): write the rank's range
 * when its first or last block does not carry the rank's stamp. */
static int
prefill(struct bench_thread *t)
{
	struct bench_job *j = t->job;
	struct stat st;
	char name[64];
	int fd, rc = -1;

	data_name(j, t->rank, name, sizeof(name));	/* its own data, not the owner's */
	fd = openat(j->wfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		TERR(t, "%s: open %s: %s", j->node, name, open_errstr(j, errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		TERR(t, "%s: %s is not a regular file", j->node, name);
		goto out;
	}
	if (data_present(t, fd)) {
		rc = 0;
		goto out;
	}
	if (prealloc(t, fd, name) < 0 || prefill_write(t, fd, name) < 0)
		goto out;
	if (fdatasync(fd) < 0) {
		TERR(t, "%s: fdatasync %s: %s", j->node, name, strerror(errno));
		goto out;
	}
	/* Data written by prepare is not part of any measurement: drop it from
	 * the page cache (like fio's invalidate=1), so reads do not hit cache
	 * and O_DIRECT reads do not pay for cached pages of the range. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	rc = 0;
out:
	close(fd);
	return rc;
}

/* Preallocated seq-write: create (N-to-N: empty) and allocate the file. */
static int
prepare_write(struct bench_thread *t)
{
	struct bench_job *j = t->job;
	int fd, rc;

	if (!j->p.fallocate)
		return 0;
	fd = openat(j->wfd, t->fname, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
	    (j->p.shared ? 0 : O_TRUNC), 0644);
	if (fd < 0) {
		TERR(t, "%s: open %s: %s", j->node, t->fname, open_errstr(j, errno));
		return -1;
	}
	rc = prealloc(t, fd, t->fname);
	close(fd);
	return rc;
}

int
bench_mkdir_ok(int dfd, const char *name)
{
	struct stat st;

	if (mkdirat(dfd, name, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return -1;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/* Per-thread preparation before the barrier. */
static int
thread_prepare(struct bench_thread *t)
{
	struct bench_job *j = t->job;
	size_t len;

	len = bench_kind_is_md(j->p.kind) ? (size_t)j->p.md_write_size : (size_t)j->p.bs;
	if (len < BENCH_ALIGN)
		len = BENCH_ALIGN;
	len = (len + BENCH_ALIGN - 1) / BENCH_ALIGN * BENCH_ALIGN;
	if ((t->buf = bench_buf_alloc(len, !j->p.small_pages)) == NULL) {
		TERR(t, "%s: no memory for a %zu-byte I/O buffer", j->node, len);
		return -1;
	}
	t->buflen = len;
	memset(t->buf, 0, len);		/* fault it in now, not in the timed loop */
	t->owner = src_rank(j, t);
	t->rng = bench_mix(j->p.seed ^ (0x9E3779B97F4A7C15ull * (t->rank + 1))) | 1;
	if (bench_kind_is_md(j->p.kind))
		return bench_md_prepare(t);
	data_name(j, t->owner, t->fname, sizeof(t->fname));
	if (j->ioengine != IOE_PSYNC && bench_aio_setup(t) < 0)
		return -1;
	/* queued writes fill each slot's buffer: blocks in flight may share
	 * pool pages, and so the stamps in a copy */
	if (bench_job_wpool(j)) {
		if ((t->wpool = bench_buf_alloc(j->pool.len, j->pool.huge)) == NULL) {
			TERR(t, "%s: no memory for a %zu-byte copy of the data pool", j->node,
			    j->pool.len);
			return -1;
		}
		memcpy(t->wpool, j->pool.buf, j->pool.len);
	}
	if (j->p.kind == BK_SEQ_WRITE)
		return prepare_write(t);
	return prefill(t);
}

/* ------------------------------------------------------------ stonewall */

/* A thread stopped at the stonewall (or finished): publish its count and,
 * when wait, block until the wear-out target is known: the largest count on
 * this node once every thread of the node arrived, or with wall_sync the
 * largest count across all nodes (bench_job_wearout, after the runner
 * reported this node's).  Returns the target. */
static uint64_t
wall_arrive(struct bench_job *j, uint64_t ops, int wait)
{
	uint64_t target;

	pthread_mutex_lock(&j->mu);
	j->nwall++;
	if (ops > j->wall_target)
		j->wall_target = ops;
	pthread_cond_broadcast(&j->cv);
	while (wait && !j->abort && (j->wall_sync ? !j->wall_released : j->nwall < j->nth))
		pthread_cond_wait(&j->cv, &j->mu);
	target = j->wall_target;
	if (j->wall_sync && j->wall_released && j->wall_global > target)
		target = j->wall_global;
	pthread_mutex_unlock(&j->mu);
	return target;
}

void
bench_wall_leave(struct bench_thread *t, int walled)
{
	if (t->job->p.stonewall_s && !walled)
		wall_arrive(t->job, atomic_load(&t->ops), 0);
}

uint64_t
bench_after_op(struct bench_thread *t, uint64_t t0, uint64_t t1, uint64_t bytes,
    uint64_t nops, uint64_t limit, uint64_t start_mono, int *walled)
{
	struct bench_job *j = t->job;
	uint64_t total;

	hist_add(t->lat, t1 - t0);
	total = atomic_fetch_add_explicit(&t->bytes, bytes, memory_order_relaxed) + bytes;
	atomic_store_explicit(&t->ops, nops, memory_order_relaxed);
	if (t->ckpt)	/* checkpoint hook (first done) */
		bench_ckpt_op(t->ckpt, t->start_ns + (t1 - start_mono), total, nops);
	if (j->p.rate_iops) {
		uint64_t due = start_mono + nops * 1000000000ull / j->p.rate_iops;
		if (due > t1)
			sleep_ns(due - t1);
	}
	if (j->p.stonewall_s && !*walled &&
	    t1 - start_mono >= (uint64_t)j->p.stonewall_s * 1000000000ull) {
		uint64_t target;

		*walled = 1;
		t->stonewall_ops = nops;
		t->stonewall_ns = t->start_ns + (t1 - start_mono);	/* checkpoint hook */
		target = wall_arrive(j, nops, 1);
		if (target < limit)
			limit = target;
	}
	return limit;
}

/* ------------------------------------------------------------ timed loops */

/* Op i of the data phase of t: sequential or in the random order of the
 * pass (a new order every pass of a time-based run), read or write (the
 * coin of rand-rw).  0 when the phase has no more ops. */
static int
data_next(struct bench_thread *t, uint64_t i, uint64_t start_mono, struct bench_op *op)
{
	struct bench_job *j = t->job;
	uint64_t nblk = j->p.file_size / j->p.bs, pass = i / nblk, b = i % nblk;

	if (j->p.runtime_s) {
		if (now_mono_ns() - start_mono >= (uint64_t)j->p.runtime_s * 1000000000ull)
			return 0;
	} else if (i >= nblk)
		return 0;
	if (bench_kind_is_rand(j->p.kind)) {
		if (i == 0 || pass != t->pass) {
			t->pass = pass;
			bench_perm_init(&t->perm, nblk, bench_mix(j->p.seed) ^
			    bench_mix(((uint64_t)t->owner << 32) + pass));
		}
		b = bench_perm_at(&t->perm, b);
	}
	op->wr = bench_kind_access(j->p.kind);
	if (op->wr == 2)
		op->wr = xorshift(&t->rng) % 100 >= j->p.rwmix_read;
	op->off = blk_off(j, t->owner, b);
	return 1;
}

/* Book one finished data op: check the transfer and, for reads, the data
 * (stamp, or every byte with verify).  0, or -1 (t->err) to stop. */
static int
data_done(struct bench_thread *t, const struct bench_op *op, const uint8_t *buf, ssize_t n,
    uint64_t t0, uint64_t t1, uint64_t nops, uint64_t *limit, uint64_t start_mono, int *walled)
{
	struct bench_job *j = t->job;
	int64_t bad;

	if (n < 0 || (uint64_t)n != j->p.bs) {
		TERR(t, "%s: %s %s at offset %llu: %s", j->node, op->wr ? "write" : "read",
		    t->fname, (unsigned long long)op->off,
		    n < 0 ? strerror((int)-n) : "short transfer (file too small?)");
		return -1;
	}
	if (!op->wr) {
		if ((bad = bench_block_check(&j->pool, buf, (size_t)j->p.bs, t->owner, op->off,
		    j->p.verify)) < 0) {
			TERR(t, "%s: data mismatch in %s at offset %llu (not what rank %u wrote)",
			    j->node, t->fname, (unsigned long long)op->off, t->owner);
			return -1;
		}
		if (bad > 0) {
			TERR(t, "%s: data mismatch in %s at offset %llu: byte %lld differs from "
			    "what rank %u wrote (corrupted, or written with another --seed or "
			    "--compressible)", j->node, t->fname, (unsigned long long)op->off,
			    (long long)bad - 1, t->owner);
			return -1;
		}
		atomic_fetch_add_explicit(&t->read_ops, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&t->read_bytes, (uint64_t)n, memory_order_relaxed);
	}
	*limit = bench_after_op(t, t0, t1, (uint64_t)n, nops, *limit, start_mono, walled);
	return 0;
}

/* Pieces of src stamped for (rank, key) at file offset foff (bench.h). */
ssize_t
bench_write_from(struct bench_thread *t, int fd, const uint8_t *src, size_t bs, uint32_t rank,
    uint64_t key, uint64_t foff)
{
	size_t from = 0, len, niov;
	uint8_t stamps[WB_IOV / 2][16];
	struct iovec iov[WB_IOV];
	ssize_t n = 0;

	while (from < bs) {
		niov = bench_iov(src, bs, rank, key, from, stamps, iov, WB_IOV, &len);
		do
			n = pwritev(fd, iov, (int)niov, (off_t)(foff + from));
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		from += (size_t)n;
		if ((size_t)n != len)
			break;
	}
	if (from == bs)
		return (ssize_t)bs;
	bench_fill(src, t->buf, bs, rank, key);
	n = bench_full_io(fd, (uint8_t *)t->buf + from, bs - from, foff + from, 1);
	return n < 0 ? n : (ssize_t)(from + (size_t)n);
}

/* Write the block at off straight from the pool, without copying it:
 * stamped in place in the thread's copy of the pool (t->wpool), one piece
 * (bench_job_wpool: O_DIRECT, which needs aligned pieces, and a buffered
 * file each when the copies fit); else with pwritev from the stamps and
 * pool pieces in batches of IOV_MAX.  A short buffered write finishes from
 * a filled buffer.  Before a buffered write to the shared file the block's
 * pool bytes are read once (bench_block_warm): the pool does not fit in a
 * core's cache, and the kernel's copy from it happens under the file's
 * inode lock, which serialises the threads' writes; so the locked copy
 * reads from cache and the other threads wait less (doc/measurements.md,
 * "Fixed (session 7): N-to-1 buffered writes"). */
static ssize_t
write_block(struct bench_thread *t, int fd, uint64_t off)
{
	struct bench_job *j = t->job;
	size_t bs = (size_t)j->p.bs;

	if (t->wpool)
		return bench_full_io(fd, bench_block_stamp_in(&j->pool, t->wpool, bs, t->owner, off),
		    bs, off, 1);
	if (j->p.shared)
		bench_block_warm(&j->pool, bs, t->owner, off);
	return bench_write_from(t, fd, bench_block_src(&j->pool, t->owner, off), bs, t->owner, off,
	    off);
}

/* Test hook ($KNOB_TEST_STALL_IO): the first thread blocks where j->abort
 * cannot reach it, as in a write to a dead hard NFS mount, until the
 * agent stops (bench.c releases it). */
static void
test_stall(struct bench_thread *t)
{
	if (t->job->test_stall == NULL || t != &t->job->th[0])
		return;
	bench_stall_wait(t->job->test_stall, 0);
}

void
bench_stall_wait(struct bench_stall *st, unsigned secs)
{
	struct timespec until;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &until);	/* the condition variable's clock */
	until.tv_sec += secs;
	pthread_mutex_lock(&st->mu);
	while (!st->released && r != ETIMEDOUT)
		r = secs ? pthread_cond_timedwait(&st->cv, &st->mu, &until) :
		    pthread_cond_wait(&st->cv, &st->mu);
	pthread_mutex_unlock(&st->mu);
}

/* Queue depth 1: one pread/pwrite at a time. */
static void
data_sync_loop(struct bench_thread *t, int fd, uint64_t start_mono, int *walled)
{
	struct bench_job *j = t->job;
	uint64_t i, limit = UINT64_MAX;
	struct bench_op op;

	for (i = 0; i < limit && !j->abort && data_next(t, i, start_mono, &op); i++) {
		uint64_t t0, t1;
		ssize_t n;

		if (i == 2)
			test_stall(t);
		t0 = now_mono_ns();
		n = op.wr ? write_block(t, fd, op.off) :
		    bench_full_io(fd, t->buf, (size_t)j->p.bs, op.off, 0);
		t1 = now_mono_ns();
		if (data_done(t, &op, t->buf, n, t0, t1, i + 1, &limit, start_mono, walled) < 0)
			break;
	}
}

static void
run_data(struct bench_thread *t, uint64_t start_mono)
{
	struct bench_job *j = t->job;
	int wr = bench_kind_access(j->p.kind), fd, walled = 0;

	fd = openat(j->wfd, t->fname, open_flags(j, wr) | (j->p.kind == BK_SEQ_WRITE &&
	    !j->p.shared && !j->p.fallocate ? O_TRUNC : 0), 0644);
	if (fd < 0) {
		TERR(t, "%s: open %s: %s", j->node, t->fname, open_errstr(j, errno));
		goto out;
	}
	if (t->aio)
		bench_aio_run(t, fd, start_mono, data_next, data_done, &walled);
	else
		data_sync_loop(t, fd, start_mono, &walled);
	if (!t->failed && wr && j->p.fsync && fsync(fd) < 0)
		TERR(t, "%s: fsync %s: %s", j->node, t->fname, strerror(errno));
	if (close(fd) < 0 && !t->failed)
		TERR(t, "%s: close %s: %s", j->node, t->fname, strerror(errno));
out:
	bench_wall_leave(t, walled);
}

/* With cpu_bind, pin thread t to the i-th CPU of those the process may
 * run on (i = its index, round robin), as mpirun --bind-to core places
 * ranks: on ext4, floating md-create ranks ran at 0.6x their bound rate
 * (README, engine-vs-mdtest).  A failure leaves it floating, with a warning. */
static void
bind_thread(struct bench_thread *t)
{
	const struct bench_job *j = t->job;
	size_t idx = (size_t)(t - j->th), n = 0;
	cpu_set_t all, one;

	t->bound_cpu = -1;
	if (!j->p.cpu_bind || sched_getaffinity(0, sizeof(all), &all) < 0 || CPU_COUNT(&all) == 0)
		return;
	idx %= (size_t)CPU_COUNT(&all);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &all) || n++ != idx)
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0)
			t->bound_cpu = c;
		else
			log_warn("%s: rank %u not bound to CPU %d", j->node, t->rank, c);
		return;
	}
}

/* Give worker t a descriptor table of its own, as a rank has (an MPI
 * process, a fio job): with the one table of the process, every open and
 * close of the job's threads takes the same lock and cache lines, and
 * md-create on tmpfs measured 0.92x mdtest against 0.99x with a table each
 * (doc/measurements.md, "One descriptor table per worker").  The new table
 * keeps stdio and the work directory only, so what another thread closes
 * during the phase (a controller's socket) is closed for real.  Where
 * close_range(2) cannot unshare, the threads keep sharing the table. */
static void
own_fds(const struct bench_thread *t)
{
	unsigned int wfd = (unsigned int)t->job->wfd;

	if (t->job->wfd < 3) {
		(void)close_range(3, ~0U, CLOSE_RANGE_UNSHARE);
		return;
	}
	if (close_range(wfd + 1, ~0U, CLOSE_RANGE_UNSHARE) == 0 && wfd > 3)
		(void)close_range(3, wfd - 1, 0);
}

void *
bench_io_thread(void *arg)
{
	struct bench_thread *t = arg;
	struct bench_job *j = t->job;
	uint64_t m0, m1, c0;
	int ok;

	log_set_instance(j->node);	/* its lines name the agent (knob-sim holds many) */
	own_fds(t);
	bind_thread(t);
	ok = thread_prepare(t) == 0;
	pthread_mutex_lock(&j->mu);
	j->nprepped++;
	pthread_cond_broadcast(&j->cv);
	while (!j->go && !j->abort)
		pthread_cond_wait(&j->cv, &j->mu);
	pthread_mutex_unlock(&j->mu);
	if (ok && !j->abort) {
		c0 = thread_cpu_ns();
		m0 = now_mono_ns();
		t->start_ns = bench_job_at_ns(j, m0);
		if (bench_kind_is_md(j->p.kind))
			bench_md_run(t, t->owner, m0);
		else
			run_data(t, m0);
		m1 = now_mono_ns();
		t->end_ns = t->start_ns + (m1 - m0);
		t->cpu_ns = thread_cpu_ns() - c0;
		t->ran_cpu = sched_getcpu();
	}
	/* the ring's descriptor is in this thread's own table (own_fds):
	 * closed from another thread, it closed the process's of that number */
	bench_aio_free(t);
	pthread_mutex_lock(&j->mu);
	j->ndone++;
	/* checkpoint hook: the node's first finished thread, for first-done */
	if (t->end_ns && (j->first_end_ns == 0 || t->end_ns < j->first_end_ns))
		j->first_end_ns = t->end_ns;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* ------------------------------------------------------------ clean-up */

/* Stays inside the tree it was given; with pick, only what pick chooses
 * goes, and directories that keep something stay. */
int
bench_unlink_count(int dfd, const char *name, int flags, _Atomic uint64_t *removed)
{
	if (unlinkat(dfd, name, flags) < 0)
		return -1;
	if (removed)
		atomic_fetch_add(removed, 1);
	return 0;
}

int
bench_rm_walk(int parent, const char *name, int depth, bench_rm_pick pick, const void *arg,
    _Atomic uint64_t *removed)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0, r, what;

	if (depth > 16)
		return -ELOOP;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ENOTDIR || errno == ELOOP)
			return bench_unlink_count(parent, name, 0, removed) < 0 &&
			    errno != ENOENT ? -errno : 0;
		return -errno;
	}
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		what = pick ? pick(de->d_name, arg) : RM_ALL;
		if (what == RM_DESCEND)
			r = bench_rm_walk(dirfd(d), de->d_name, depth + 1, pick, arg, removed);
		else if (what == RM_ALL)
			r = bench_rm_walk(dirfd(d), de->d_name, depth + 1, NULL, NULL, removed);
		else
			r = 0;
		if (r < 0 && rc == 0)
			rc = r;
	}
	closedir(d);
	if (bench_unlink_count(parent, name, AT_REMOVEDIR, removed) < 0 && errno != ENOENT &&
	    rc == 0 && !(pick && (errno == ENOTEMPTY || errno == EEXIST)))
		rc = -errno;
	return rc;
}

int
bench_rm_tree(int parent, const char *name, int depth, _Atomic uint64_t *removed)
{
	return bench_rm_walk(parent, name, depth, NULL, NULL, removed);
}
