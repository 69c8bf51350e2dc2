/* write_src_cost [--shared] DIR [MIB] [ROUNDS]: what the source of a
 * buffered write costs, the engine's against IOR's and fio's, on the same
 * file system.
 *
 * 2 threads each write MIB MiB (default 256) to a new file of their own in
 * DIR (a tmpfs for the figure the README cites), or with --shared each to
 * its own segment of one file (IOR's N-to-1 layout), 1 MiB per call, these
 * ways, in rotated order over ROUNDS rounds (default 9) after a warm-up
 * round:
 *   - engine: the engine's own pwritev of a block (bench_block_iov(): a
 *     16-byte stamp and 4080 pool bytes per 4 KiB, 512 pieces per MiB)
 *     from its random pool, slices starting on any page of its 8 MiB span;
 *   - engine-1pc: the same bytes in one piece, stamped in place in the
 *     thread's copy of the pool (bench_block_stamp_in(), as the engine's
 *     O_DIRECT writes go), one pwrite;
 *   - engine-64k, engine-64k-1pc: the same two with the slices starting in
 *     the first 64 KiB of the pool, so that what a block is read from
 *     (1 MiB + 64 KiB) stays in a core's cache, as IOR's buffer does;
 *   - engine-staged: the block with its stamps copied into one buffer
 *     (bench_block_fill()), then pwrite: the pool is read outside the
 *     write call, so outside a shared file's inode lock;
 *   - ior-random: IOR's "-l random": every byte of its one buffer computed
 *     anew before each write (update_write_memory_pattern() of the vendored
 *     IOR: a multiply and a shift per 8 bytes), then pwrite;
 *   - one-buffer: one 1 MiB buffer written again and again with pwrite, as
 *     IOR by default (and fio, which scrambles a few bytes of it per write)
 *     does.
 * Prints each one's median rate (bytes over the first start to the last
 * end) and the median and spread of its per-round ratio to one-buffer:
 * how much of the gap is where the bytes come from (an 8 MiB span does not
 * stay in cache) and how much the 512-piece pwritev.  Used for the
 * README's "Writes" explanation. */
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
#define NVAR		7
#define ROUNDS_MAX	101

/* How a variant sends a block. */
enum way {
	W_IOV,		/* the engine's pwritev of stamps and pool pieces */
	W_COPY,		/* one piece, stamped in place in a pool copy */
	W_STAGE,	/* the block copied with its stamps into one buffer, pwrite */
	W_IOR_RANDOM,	/* IOR -l random: the buffer computed anew, pwrite */
	W_ONEBUF,	/* one unchanging buffer, pwrite */
};

/* Each variant: the pool span (0: no pool) and the way. */
static const struct variant {
	const char *name;
	size_t span;
	enum way way;
} var[NVAR] = {
	{ "engine", 8u << 20, W_IOV }, { "engine-1pc", 8u << 20, W_COPY },
	{ "engine-64k", 64u << 10, W_IOV }, { "engine-64k-1pc", 64u << 10, W_COPY },
	{ "engine-staged", 8u << 20, W_STAGE },
	{ "ior-random", 0, W_IOR_RANDOM }, { "one-buffer", 0, W_ONEBUF },
};

static int shared;	/* --shared: one file, a segment per thread */

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

	switch (w->way) {
	case W_IOR_RANDOM:
		ior_random_fill(w->onebuf, w->rank, off);
		/* FALLTHROUGH */
	case W_ONEBUF:
		return pwrite(fd, w->onebuf, BS, (off_t)off);
	case W_COPY:
		return pwrite(fd, bench_block_stamp_in(w->pool, w->copy, BS, w->rank, off), BS,
		    (off_t)off);
	case W_STAGE:
		bench_block_fill(w->pool, w->onebuf, BS, w->rank, off);
		return pwrite(fd, w->onebuf, BS, (off_t)off);
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
	if ((fd = open(path, O_WRONLY | O_CREAT | (shared ? 0 : O_TRUNC) | O_CLOEXEC,
	    0644)) < 0) {
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
	pool->span = var[v].span ? var[v].span : pool->span;
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

int
main(int argc, char **argv)
{
	uint64_t size;
	int rounds;
	double rate[NVAR][ROUNDS_MAX], ratio[NVAR][ROUNDS_MAX];
	struct bench_pool pool;
	struct sample_stats st;
	uint8_t *copy[NTHR], *one[NTHR];

	if (argc > 1 && strcmp(argv[1], "--shared") == 0) {
		shared = 1;
		argv++;
		argc--;
	}
	size = (argc > 2 ? strtoull(argv[2], NULL, 10) : 256) << 20;
	rounds = argc > 3 ? atoi(argv[3]) : 9;
	if (argc < 2 || size == 0 || rounds <= 0 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "usage: write_src_cost [--shared] DIR [MIB] [ROUNDS <= %d]\n",
		    ROUNDS_MAX);
		return 2;
	}
	if (bench_pool_init(&pool, 1, 0, BS) < 0)
		fatal("no memory for the pool");
	for (int i = 0; i < NTHR; i++) {
		if (posix_memalign((void **)&copy[i], BENCH_ALIGN, pool.len) != 0)
			fatal("no memory for a pool copy");
		memcpy(copy[i], pool.buf, pool.len);
		if (posix_memalign((void **)&one[i], BENCH_ALIGN, BS) != 0)
			fatal("no memory for a buffer");
		memcpy(one[i], pool.buf + (size_t)i * BS, BS);
	}
	for (int r = -1; r < rounds; r++) {
		for (int k = 0; k < NVAR; k++) {
			int v = (k + (r < 0 ? 0 : r)) % NVAR;	/* rotated order */
			double x = run(v, argv[1], size, &pool, copy, one);

			if (x < 0)
				return 1;
			if (r >= 0)
				rate[v][r] = x;
		}
		for (int v = 0; r >= 0 && v < NVAR; v++)
			ratio[v][r] = rate[v][r] / rate[NVAR - 1][r];
	}
	for (int v = 0; v < NVAR; v++) {
		stats_summary(ratio[v], (size_t)rounds, &st);
		printf("%-15s %6.2f GB/s   /one-buffer %.3f (rounds %.2f-%.2f)\n", var[v].name,
		    stats_median(rate[v], (size_t)rounds) / 1e9,
		    stats_median(ratio[v], (size_t)rounds), st.min, st.max);
	}
	printf("%d threads x %llu MiB, 1 MiB writes, %d rounds, %s\n", NTHR,
	    (unsigned long long)(size >> 20), rounds,
	    shared ? "one shared file (N-to-1)" : "a file each (N-to-N)");
	bench_pool_free(&pool);
	for (int i = 0; i < NTHR; i++) {
		free(copy[i]);
		free(one[i]);
	}
	return 0;
}
