/* write_src_cost DIR [MIB] [ROUNDS]: what the source of a buffered write
 * costs, the engine's against IOR's and fio's, on the same file system.
 *
 * 2 threads each write MIB MiB (default 256) to a new file of their own in
 * DIR (a tmpfs for the figure the README cites), 1 MiB per call, three ways,
 * in rotated order over ROUNDS rounds (default 9) after a warm-up round:
 *   - engine: the engine's own pwritev of a block (bench_block_iov(): a
 *     16-byte stamp and 4080 pool bytes per 4 KiB, 512 pieces per MiB)
 *     from its random pool, slices starting on any page of its 8 MiB span;
 *   - engine-1pc: the same bytes in one piece, stamped in place in the
 *     thread's copy of the pool (bench_block_stamp_in(), as the engine's
 *     O_DIRECT writes go), one pwrite;
 *   - engine-64k, engine-64k-1pc: the same two with the slices starting in
 *     the first 64 KiB of the pool, so that what a block is read from
 *     (1 MiB + 64 KiB) stays in a core's cache, as IOR's buffer does;
 *   - one-buffer: one 1 MiB buffer written again and again with pwrite, as
 *     IOR (and fio, which scrambles a few bytes of it per write) does.
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
#define NVAR		5
#define ROUNDS_MAX	101

/* Each variant: the pool span (0: one buffer) and whether a block goes
 * in one piece from a stamped pool copy. */
static const struct variant {
	const char *name;
	size_t span;
	int onepiece;
} var[NVAR] = {
	{ "engine", 8u << 20, 0 }, { "engine-1pc", 8u << 20, 1 },
	{ "engine-64k", 64u << 10, 0 }, { "engine-64k-1pc", 64u << 10, 1 },
	{ "one-buffer", 0, 1 },
};

struct wjob {
	const char *dir;
	const struct bench_pool *pool;	/* its span set, or NULL */
	uint8_t *copy;			/* a pool copy, for one piece */
	const uint8_t *onebuf;		/* no pool */
	uint64_t size;
	uint32_t rank;
	uint64_t t0, t1;
	int err;
};

/* Write one block at off the way the variant does. */
static ssize_t
put_block(const struct wjob *w, int fd, uint64_t off)
{
	uint8_t stamps[BS / BENCH_STAMP_EVERY][16];
	struct iovec iov[1024];
	size_t len, n;

	if (w->onebuf)
		return pwrite(fd, w->onebuf, BS, (off_t)off);
	if (w->copy)
		return pwrite(fd, bench_block_stamp_in(w->pool, w->copy, BS, w->rank, off), BS,
		    (off_t)off);
	n = bench_block_iov(w->pool, BS, w->rank, off, 0, stamps, iov, nitems(iov), &len);
	return len == BS ? pwritev(fd, iov, (int)n, (off_t)off) : -1;
}

/* One thread: its file from empty, block by block, then gone. */
static void *
writer(void *arg)
{
	struct wjob *w = arg;
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/wsc.%ld.%u", w->dir, (long)getpid(), w->rank);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		w->err = errno;
		return NULL;
	}
	w->t0 = now_mono_ns();
	for (uint64_t off = 0; off < w->size && !w->err; off += BS)
		if (put_block(w, fd, off) != (ssize_t)BS)
			w->err = errno ? errno : EIO;
	if (close(fd) < 0 && !w->err)
		w->err = errno;
	w->t1 = now_mono_ns();
	unlink(path);
	return NULL;
}

/* One run of variant v on NTHR threads; bytes/s, or -1. */
static double
run(int v, const char *dir, uint64_t size, struct bench_pool *pool, uint8_t **copy)
{
	struct wjob w[NTHR];
	pthread_t th[NTHR];
	uint64_t t0 = UINT64_MAX, t1 = 0;

	pool->span = var[v].span ? var[v].span : pool->span;
	for (uint32_t i = 0; i < NTHR; i++) {
		w[i] = (struct wjob){ dir, pool, var[v].span && var[v].onepiece ? copy[i] : NULL,
		    var[v].span ? NULL : pool->buf, size, i, 0, 0, 0 };
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
	return (double)(size * NTHR) / ((double)(t1 - t0) / 1e9);
}

int
main(int argc, char **argv)
{
	uint64_t size = (argc > 2 ? strtoull(argv[2], NULL, 10) : 256) << 20;
	int rounds = argc > 3 ? atoi(argv[3]) : 9;
	double rate[NVAR][ROUNDS_MAX], ratio[NVAR][ROUNDS_MAX];
	struct bench_pool pool;
	struct sample_stats st;
	uint8_t *copy[NTHR];

	if (argc < 2 || size == 0 || rounds <= 0 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "usage: write_src_cost DIR [MIB] [ROUNDS <= %d]\n", ROUNDS_MAX);
		return 2;
	}
	if (bench_pool_init(&pool, 1, 0, BS) < 0)
		fatal("no memory for the pool");
	for (int i = 0; i < NTHR; i++) {
		if (posix_memalign((void **)&copy[i], BENCH_ALIGN, pool.len) != 0)
			fatal("no memory for a pool copy");
		memcpy(copy[i], pool.buf, pool.len);
	}
	for (int r = -1; r < rounds; r++) {
		for (int k = 0; k < NVAR; k++) {
			int v = (k + (r < 0 ? 0 : r)) % NVAR;	/* rotated order */
			double x = run(v, argv[1], size, &pool, copy);

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
	printf("%d threads x %llu MiB, 1 MiB writes, %d rounds\n", NTHR,
	    (unsigned long long)(size >> 20), rounds);
	bench_pool_free(&pool);
	for (int i = 0; i < NTHR; i++)
		free(copy[i]);
	return 0;
}
