/* odirect_layout DIR [MIB [ROUNDS]]: what the physical layout of the user
 * buffer does to an O_DIRECT read, on the same file, with the same
 * syscalls.
 *
 * Writes a file of MIB MiB (default 256) in DIR with O_DIRECT, then reads
 * it back with O_DIRECT pread, 1 MiB per call, into four 1 MiB buffers
 * that differ only in how their 256 pages lie in physical memory: in runs
 * of 256, 64, 8 and 1 physically contiguous pages (so 1, 4, 32 and 256
 * scatter-gather segments per transfer).  Each buffer is built from pages
 * of a populated anonymous region whose frame numbers it reads from
 * /proc/self/pagemap (root only), sorted by frame and moved into place
 * with mremap(2); the
 * segment count is checked the same way afterwards.  ROUNDS rounds
 * (default 5) in rotated order; prints each buffer's median rate and the
 * device requests per transfer (from the file's /sys/dev/block stat).
 *
 * Why: a 1 MiB O_DIRECT read here (virtio-blk, max_segments 254) costs
 * per segment.  Where a tool's buffer lands is up to the page allocator,
 * so the O_DIRECT read rows of engine-vs-ior and engine-vs-fio swing with
 * it: doc/measurements.md, "O_DIRECT reads".  Not a pass/fail test. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "stats.h"
#include "util.h"

#define PG		4096u
#define BS		(1u << 20)
#define NPG		(BS / PG)
#define POOL		(512u << 20)	/* where contiguous runs are looked for */
#define ROUNDS_MAX	51

static const unsigned runs[] = { 64, 16, 4, 1 };
#define NLAY	(sizeof(runs) / sizeof(runs[0]))

/* Move the page at src to dst (both page-aligned).  0 or -1. */
static int
move_page(uint8_t *src, uint8_t *dst)
{
	return mremap(src, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, dst) == MAP_FAILED ? -1 : 0;
}

/* Pool pages, by frame number. */
struct frame {
	int64_t pfn;
	size_t idx;
};

static int
frame_cmp(const void *a, const void *b)
{
	const struct frame *x = a, *y = b;

	return x->pfn < y->pfn ? -1 : x->pfn > y->pfn;
}

/* A 1 MiB buffer of 256/run runs of run contiguous frames, no two runs
 * adjacent, taken from the pool's pages (f[], sorted by frame; a page
 * taken gets pfn 0).  NULL when the pool has too few such runs. */
static uint8_t *
build(uint8_t *pool, struct frame *f, size_t npool, unsigned run)
{
	uint8_t *b = mmap(NULL, BS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned done = 0;

	if (b == MAP_FAILED)
		return NULL;
	for (size_t i = 0; i + run <= npool && done < NPG; i++) {
		size_t k = 1;

		while (k < run && f[i].pfn > 0 && f[i + k].pfn == f[i].pfn + (int64_t)k)
			k++;
		if (k < run || f[i].pfn == 0)
			continue;
		for (k = 0; k < run; k++) {
			if (move_page(pool + f[i + k].idx * PG, b + (size_t)(done + k) * PG) < 0)
				return NULL;
			f[i + k].pfn = 0;
		}
		done += run;
		i += run;	/* skip a frame: the next run is not adjacent */
	}
	return done == NPG ? b : NULL;
}

/* Write the test file with O_DIRECT; its fd opened for O_DIRECT reads, or -1. */
static int
make_file(const char *path, unsigned mib, uint8_t *buf)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_DIRECT, 0600);

	if (fd < 0)
		return -1;
	for (unsigned i = 0; i < mib; i++) {
		memset(buf, (int)i, BS);
		if (pwrite(fd, buf, BS, (off_t)i * BS) != (ssize_t)BS) {
			close(fd);
			return -1;
		}
	}
	close(fd);
	return open(path, O_RDONLY | O_DIRECT);
}

/* Read the whole file into b; bytes/s, or -1. */
static double
read_all(int fd, uint8_t *b, unsigned mib)
{
	uint64_t t0 = now_mono_ns();

	for (unsigned i = 0; i < mib; i++)
		if (pread(fd, b, BS, (off_t)i * BS) != (ssize_t)BS)
			return -1;
	return (double)mib * BS / ((double)(now_mono_ns() - t0) / 1e9);
}

/* The pool, its frames, and one buffer per layout in bufs[].  0 or -1. */
static int
make_buffers(uint8_t *bufs[NLAY], int *pm)
{
	size_t npool = POOL / PG;
	uint8_t *pool = mmap(NULL, POOL, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	struct frame *f = xcalloc(npool, sizeof(*f));

	if (pool == MAP_FAILED || (*pm = open("/proc/self/pagemap", O_RDONLY)) < 0)
		return -1;
	for (size_t i = 0; i < npool; i++)
		if ((f[i].pfn = page_frame(*pm, pool + i * PG)) <= 0) {
			fprintf(stderr, "odirect_layout: no frame numbers in /proc/self/pagemap "
			    "(needs root)\n");
			return -1;
		} else
			f[i].idx = i;
	qsort(f, npool, sizeof(*f), frame_cmp);
	for (size_t l = 0; l < NLAY; l++)
		if ((bufs[l] = build(pool, f, npool, runs[l])) == NULL) {
			fprintf(stderr, "odirect_layout: no %u contiguous pages in %u MiB\n",
			    runs[l], POOL >> 20);
			return -1;
		}
	free(f);
	return 0;
}

int
main(int argc, char **argv)
{
	unsigned mib = argc > 2 ? (unsigned)atoi(argv[2]) : 256;
	unsigned rounds = argc > 3 ? (unsigned)atoi(argv[3]) : 5;
	double rate[NLAY][ROUNDS_MAX], reqs[NLAY][ROUNDS_MAX];
	uint8_t *bufs[NLAY];
	char *path;
	int fd, pm;

	if (argc < 2 || mib == 0 || rounds == 0 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "usage: odirect_layout DIR [MIB [ROUNDS<=%d]]\n", ROUNDS_MAX);
		return 2;
	}
	if (make_buffers(bufs, &pm) < 0)
		return 1;
	path = xasprintf("%s/odirect-layout.%ld", argv[1], (long)getpid());
	if ((fd = make_file(path, mib, bufs[0])) < 0) {
		fprintf(stderr, "odirect_layout: %s: %s\n", path, strerror(errno));
		unlink(path);
		return 1;
	}
	for (unsigned r = 0; r < rounds; r++)
		for (size_t i = 0; i < NLAY; i++) {
			size_t l = (i + r) % NLAY;
			long r0, r1, w;

			if (blockdev_requests(argv[1], &r0, &w) < 0)
				r0 = -1;

			if ((rate[l][r] = read_all(fd, bufs[l], mib)) < 0) {
				fprintf(stderr, "odirect_layout: read: %s\n", strerror(errno));
				unlink(path);
				return 1;
			}
			reqs[l][r] = r0 < 0 || blockdev_requests(argv[1], &r1, &w) < 0 ? 0 :
			    (double)(r1 - r0) / mib;
		}
	close(fd);
	unlink(path);
	printf("O_DIRECT 1 MiB reads of one %u MiB file, %u rounds: the buffer's layout\n", mib,
	    rounds);
	for (size_t l = 0; l < NLAY; l++)
		printf("  runs of %3u pages (%3d segments/transfer): %5.2f GB/s, %.2f requests/transfer\n",
		    runs[l], page_runs(pm, bufs[l], BS), stats_median(rate[l], rounds) / 1e9,
		    stats_median(reqs[l], rounds));
	free(path);
	return 0;
}
