/* write_src_cost [--shared] [--direct] DIR [MIB] [ROUNDS]: what the
 * source of a write costs, the engine's against IOR's and fio's, on the
 * same file system.
 *
 * 2 threads each write MIB MiB (default 256) to a new file of their own in
 * DIR (a tmpfs for the figure the README cites), or with --shared each to
 * its own segment of one file (IOR's N-to-1 layout), 1 MiB per call, these
 * ways, in rotated order over ROUNDS rounds (default 9) after a warm-up
 * round:
 *   - engine: the engine's own pwritev of a block (bench_block_iov(): a
 *     16-byte stamp and 4080 pool bytes per 4 KiB, 512 pieces per MiB)
 *     from its random pool, slices starting on the pages of its 8 MiB span
 *     from which they end in the same 2 MiB (bench_block_pos())
 *     (how the engine writes the shared file, buffered, and a file each
 *     when its pool copies do not fit);
 *   - engine-1pc: the same bytes in one piece, stamped in place in the
 *     thread's copy of the pool (bench_block_stamp_in(), how the engine's
 *     writes go at queue depth 1: O_DIRECT, and buffered with a file each
 *     since stop 31), one pwrite;
 *   - engine-any-1pc: engine-1pc with the slices starting on any page of
 *     the span, as up to stop 32, when half of them straddled two huge
 *     pages of the copy (since stop 33 a 1 MiB block starts where it ends
 *     in the same huge page: bench_block_pos());
 *   - engine-64k, engine-64k-1pc: the same two with the slices starting in
 *     the first 64 KiB of the pool, so that what a block is read from
 *     (1 MiB + 64 KiB) stays in a core's cache, as IOR's buffer does;
 *   - engine-staged: the block with its stamps copied into one buffer
 *     (bench_block_fill()), then pwrite: the pool is read outside the
 *     write call, so outside a shared file's inode lock;
 *   - engine-touched: engine-1pc after reading a byte of every cache line
 *     of the block (--direct: does a source in cache help the host?);
 *   - engine-iov-touched: the same reads of the pool slice
 *     (bench_block_warm()), then the engine's pwritev: the source in cache
 *     before a shared file's lock (how the engine writes a shared file,
 *     buffered);
 *   - ior-random: IOR's "-l random": every byte of its one buffer computed
 *     anew before each write (update_write_memory_pattern() of the vendored
 *     IOR: a multiply and a shift per 8 bytes), then pwrite;
 *   - one-stamped: one buffer, with the engine's 16-byte stamp (rank,
 *     offset) written at every 4 KiB of it before each write: every 4 KiB
 *     written is distinct, the rest of the bytes repeat;
 *   - one-buffer: one 1 MiB buffer written again and again with pwrite, as
 *     IOR by default (and fio, which scrambles a few bytes of it per write)
 *     does.
 * Prints each one's median rate (bytes over the first start to the last
 * end) and the median and spread of its per-round ratio to one-buffer:
 * how much of the gap is where the bytes come from (an 8 MiB span does not
 * stay in cache) and how much the 512-piece pwritev.  With --direct the
 * files are opened O_DIRECT and the ways whose pieces are not aligned
 * (engine, engine-64k) are left out: under a hypervisor the host copies
 * an O_DIRECT write's bytes out of guest memory, so where they come from
 * costs there too.  Used for the "Buffered writes" explanations of
 * doc/measurements.md. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "bench.h"
#include "log.h"
#include "stats.h"
#include "util.h"

#define NTHR		2
#define BS		(1u << 20)
#define NVAR		11
#define ROUNDS_MAX	101

/* How a variant sends a block. */
enum way {
	W_IOV,		/* the engine's pwritev of stamps and pool pieces */
	W_COPY,		/* one piece, stamped in place in a pool copy */
	W_STAGE,	/* the block copied with its stamps into one buffer, pwrite */
	W_TOUCH,	/* W_COPY after reading a byte of each cache line of it */
	W_IOV_TOUCH,	/* W_IOV after the same of the pool slice */
	W_IOR_RANDOM,	/* IOR -l random: the buffer computed anew, pwrite */
	W_ONESTAMP,	/* one buffer, the engine's stamps written into it, pwrite */
	W_ONEBUF,	/* one unchanging buffer, pwrite */
};

/* Each variant: the pool span (0: no pool), the way, and whether its
 * blocks start anywhere in the span (else as the engine's: bench_block_pos). */
static const struct variant {
	const char *name;
	size_t span;
	enum way way;
	int anywhere;
} var[NVAR] = {
	{ "engine", 8u << 20, W_IOV, 0 }, { "engine-1pc", 8u << 20, W_COPY, 0 },
	{ "engine-any-1pc", 8u << 20, W_COPY, 1 },
	{ "engine-64k", 64u << 10, W_IOV, 0 }, { "engine-64k-1pc", 64u << 10, W_COPY, 0 },
	{ "engine-staged", 8u << 20, W_STAGE, 0 }, { "engine-touched", 8u << 20, W_TOUCH, 0 },
	{ "engine-iov-touched", 8u << 20, W_IOV_TOUCH, 0 },
	{ "ior-random", 0, W_IOR_RANDOM, 0 }, { "one-stamped", 0, W_ONESTAMP, 0 },
	{ "one-buffer", 0, W_ONEBUF, 0 },
};

static int shared;	/* --shared: one file, a segment per thread */
static size_t fit_places;	/* the engine's starts per huge page for BS */
static int direct;	/* --direct: O_DIRECT, aligned ways only */

struct wjob {
	const char *dir;
	const struct bench_pool *pool;	/* its span set, or NULL */
	enum way way;
	uint8_t *copy;			/* a pool copy, for one piece */
	uint8_t *onebuf;		/* no pool: the thread's one buffer */
	uint64_t size;
	uint32_t rank;
	uint64_t t0, t1;
	int err;
};

/* IOR's update_write_memory_pattern() for DATA_RANDOM: the whole buffer
 * from a seed of (rank, offset), a multiply and a shift per 8 bytes. */
static void
ior_random_fill(uint8_t *buf, uint32_t rank, uint64_t off)
{
	unsigned seed = (unsigned)(rank + off);
	uint64_t st = (uint64_t)rand_r(&seed), v;

	for (size_t i = 0; i < BS; i += 8) {
		st *= 0x9e37fffffffc0001ull;
		st >>= 3;
		v = st;
		memcpy(buf + i, &v, 8);
	}
}

/* Write one block at off the way the variant does. */
static ssize_t
put_block(const struct wjob *w, int fd, uint64_t off)
{
	uint8_t stamps[BS / BENCH_STAMP_EVERY][16];
	struct iovec iov[1024];
	size_t len, n;
	uint8_t *b;

	switch (w->way) {
	case W_IOR_RANDOM:
		ior_random_fill(w->onebuf, w->rank, off);
		return pwrite(fd, w->onebuf, BS, (off_t)off);
	case W_ONESTAMP:
		for (size_t k = 0; k < BS; k += BENCH_STAMP_EVERY)
			bench_stamp(w->onebuf + k, w->rank, off + k);
		/* FALLTHROUGH */
	case W_ONEBUF:
		return pwrite(fd, w->onebuf, BS, (off_t)off);
	case W_TOUCH:
	case W_COPY:
		b = bench_block_stamp_in(w->pool, w->copy, BS, w->rank, off);
		if (w->way == W_TOUCH)
			bench_warm(b, BS);
		return pwrite(fd, b, BS, (off_t)off);
	case W_STAGE:
		bench_block_fill(w->pool, w->onebuf, BS, w->rank, off);
		return pwrite(fd, w->onebuf, BS, (off_t)off);
	case W_IOV_TOUCH:
		bench_block_warm(w->pool, BS, w->rank, off);
		break;
	case W_IOV:
		break;
	}
	n = bench_block_iov(w->pool, BS, w->rank, off, 0, stamps, iov, nitems(iov), &len);
	return len == BS ? pwritev(fd, iov, (int)n, (off_t)off) : -1;
}

/* One thread: its file (or its segment of the shared one, which the
 * caller made empty) block by block, then gone. */
static void *
writer(void *arg)
{
	struct wjob *w = arg;
	uint64_t base = shared ? w->rank * w->size : 0;
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/wsc.%ld.%u", w->dir, (long)getpid(),
	    shared ? 0 : w->rank);
	if ((fd = open(path, O_WRONLY | O_CREAT | (shared ? 0 : O_TRUNC) | O_CLOEXEC |
	    (direct ? O_DIRECT : 0), 0644)) < 0) {
		w->err = errno;
		return NULL;
	}
	w->t0 = now_mono_ns();
	for (uint64_t off = base; off < base + w->size && !w->err; off += BS)
		if (put_block(w, fd, off) != (ssize_t)BS)
			w->err = errno ? errno : EIO;
	if (close(fd) < 0 && !w->err)
		w->err = errno;
	w->t1 = now_mono_ns();
	if (!shared)
		unlink(path);
	return NULL;
}

/* Is variant v left out of this run (O_DIRECT needs aligned pieces)? */
static int
skipped(int v)
{
	return direct && (var[v].way == W_IOV || var[v].way == W_IOV_TOUCH);
}

/* Cut the pool's slices as variant v does (a span under a huge page has
 * no huge pages to keep blocks within). */
static void
use_variant(struct bench_pool *pool, int v)
{
	pool->span = var[v].span ? var[v].span : pool->span;
	pool->places = var[v].anywhere || pool->span < BENCH_HUGE ? 0 : fit_places;
}

/* One run of variant v on NTHR threads; bytes/s, or -1.  copy[i] is
 * thread i's pool copy, one[i] its one buffer. */
static double
run(int v, const char *dir, uint64_t size, struct bench_pool *pool, uint8_t **copy,
    uint8_t **one)
{
	struct wjob w[NTHR];
	pthread_t th[NTHR];
	uint64_t t0 = UINT64_MAX, t1 = 0;
	char *path = xasprintf("%s/wsc.%ld.0", dir, (long)getpid());

	unlink(path);		/* the shared file starts empty */
	use_variant(pool, v);
	for (uint32_t i = 0; i < NTHR; i++) {
		w[i] = (struct wjob){ dir, pool, var[v].way, copy[i], one[i], size, i, 0, 0, 0 };
		if (pthread_create(&th[i], NULL, writer, &w[i]) != 0)
			fatal("pthread_create");
	}
	for (int i = 0; i < NTHR; i++) {
		pthread_join(th[i], NULL);
		if (w[i].err) {
			fprintf(stderr, "write_src_cost: %s: %s\n", var[v].name, strerror(w[i].err));
			return -1;
		}
		t0 = w[i].t0 < t0 ? w[i].t0 : t0;
		t1 = w[i].t1 > t1 ? w[i].t1 : t1;
	}
	unlink(path);
	free(path);
	return (double)(size * NTHR) / ((double)(t1 - t0) / 1e9);
}

/* With --direct: the mean scatter-gather segments (runs of contiguous
 * frames) of the 1 MiB sources variant v wrote from, over both threads'
 * blocks; -1 without frame numbers (not root). */
static double
source_runs(int v, uint64_t size, struct bench_pool *pool, uint8_t **copy, uint8_t **one)
{
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), r = 0;
	double sum = 0, n = 0;

	if (pm < 0)
		return -1;
	use_variant(pool, v);
	for (uint32_t i = 0; i < NTHR && r >= 0; i++) {
		uint64_t base = shared ? i * size : 0;	/* as writer() goes */

		for (uint64_t off = base; r >= 0 && off < base + size; off += BS, n++) {
			const uint8_t *b = var[v].way == W_COPY || var[v].way == W_TOUCH ?
			    copy[i] + bench_block_pos(pool, i, off) : one[i];

			sum += r = page_runs(pm, b, BS);
		}
	}
	close(pm);
	return r < 0 ? -1 : sum / n;
}

int
main(int argc, char **argv)
{
	uint64_t size;
	int rounds;
	double rate[NVAR][ROUNDS_MAX], ratio[NVAR][ROUNDS_MAX];
	struct bench_pool pool;
	struct sample_stats st;
	uint8_t *copy[NTHR], *one[NTHR];

	for (; argc > 1 && strncmp(argv[1], "--", 2) == 0; argv++, argc--) {
		if (strcmp(argv[1], "--shared") == 0)
			shared = 1;
		else if (strcmp(argv[1], "--direct") == 0)
			direct = 1;
		else
			break;
	}
	size = (argc > 2 ? strtoull(argv[2], NULL, 10) : 256) << 20;
	rounds = argc > 3 ? atoi(argv[3]) : 9;
	if (argc < 2 || size == 0 || rounds <= 0 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "usage: write_src_cost [--shared] [--direct] DIR [MIB] [ROUNDS <= %d]\n",
		    ROUNDS_MAX);
		return 2;
	}
	if (bench_pool_init(&pool, 1, 0, BS, BS, 1) < 0)
		fatal("no memory for the pool");
	fit_places = pool.places;
	for (int i = 0; i < NTHR; i++) {
		/* on huge pages, 2 MiB-aligned, as the engine's (bench_mem.c) */
		if ((copy[i] = bench_buf_alloc(pool.len, 1)) == NULL)
			fatal("no memory for a pool copy");
		memcpy(copy[i], pool.buf, pool.len);
		if ((one[i] = bench_buf_alloc(BS, 1)) == NULL)
			fatal("no memory for a buffer");
		memcpy(one[i], pool.buf + (size_t)i * BS, BS);
	}
	for (int r = -1; r < rounds; r++) {
		for (int k = 0; k < NVAR; k++) {
			int v = (k + (r < 0 ? 0 : r)) % NVAR;	/* rotated order */
			double x;

			if (skipped(v))
				continue;
			if ((x = run(v, argv[1], size, &pool, copy, one)) < 0)
				return 1;
			if (r >= 0)
				rate[v][r] = x;
		}
		for (int v = 0; r >= 0 && v < NVAR; v++)
			if (!skipped(v))
				ratio[v][r] = rate[v][r] / rate[NVAR - 1][r];
	}
	for (int v = 0; v < NVAR; v++) {
		if (skipped(v))
			continue;
		stats_summary(ratio[v], (size_t)rounds, &st);
		printf("%-18s %6.2f GB/s   /one-buffer %.3f (rounds %.2f-%.2f)", var[v].name,
		    stats_median(rate[v], (size_t)rounds) / 1e9,
		    stats_median(ratio[v], (size_t)rounds), st.min, st.max);
		if (direct)
			printf("  %.1f segments/MiB", source_runs(v, size, &pool, copy, one));
		putchar('\n');
	}
	printf("%d threads x %llu MiB, 1 MiB writes, %d rounds, %s%s\n", NTHR,
	    (unsigned long long)(size >> 20), rounds,
	    shared ? "one shared file (N-to-1)" : "a file each (N-to-N)", direct ? ", O_DIRECT" : "");
	for (int i = 0; i < NTHR; i++) {
		bench_buf_free(copy[i], pool.len, 1);
		bench_buf_free(one[i], BS, 1);
	}
	bench_pool_free(&pool);
	return 0;
}
