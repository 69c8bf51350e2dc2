/* md_item_cost DIR [FILES] [PAIRS]: the cost per item of mdtest-style stat
 * and read loops against the engine's, on the same files.
 *
 * Creates FILES (default 50000) files of 4 KiB in DIR/md-item-cost.<pid>,
 * then passes over all of them PAIRS times (default 15) with each loop,
 * interleaved (alternating which goes first), and prints the ratio of
 * thread CPU time per pass, mdtest-style over engine-style, median and
 * spread.
 *   - stat: both loops make one full-path stat per file and differ only in
 *     user space: mdtest's (mdtest_stat() in the vendored source) clears
 *     two PATH_MAX buffers, builds the name and then the full path with
 *     sprintf, copies it with strcpy, reads gettimeofday; the engine's
 *     (bench_md_run()) writes the name behind a prefix built once and
 *     reads the monotonic clock before and after.
 *   - read: mdtest's (mdtest_read() and aiori-POSIX) adds the same user
 *     work, opens for reading and writing (its O_RDONLY is 0, which the
 *     POSIX backend's open takes as "neither IOR_RDONLY nor IOR_WRONLY",
 *     so O_RDWR), flips a byte of its buffer, seeks, reads 4 KiB; the
 *     engine's opens O_RDONLY, reads 4 KiB, compares its first and last 16
 *     bytes.  A third loop, the engine's with O_RDWR, splits the open's
 *     share from the user work.
 * Used to explain knob/mdtest md-stat and md-read ratios above 1 (README,
 * "Peer benches measure the same thing").  Thread CPU time, not wall time,
 * so that a busy machine does not decide the figure. */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "log.h"
#include "util.h"

#define PAIRS_MAX 101
#define ITEM_BYTES 4096

typedef double (*pass_fn)(const char *, long);

/* CPU seconds of this thread (the scheduler's count, in ns, not ticks). */
static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* mdtest's user work before an item's call: clear two PATH_MAX buffers,
 * build the name, then the full path, copy it back, read the time. */
static void
mdtest_item(char *item, char *temp, const char *dir, long i)
{
	struct timeval tv;

	memset(item, 0, PATH_MAX);
	memset(temp, 0, PATH_MAX);
	snprintf(item, PATH_MAX, "file.%s%ld", "mdtest.0.", i);
	snprintf(temp, PATH_MAX, "%s/%s", dir, item);
	strcpy(item, temp);
	gettimeofday(&tv, NULL);
}

/* One pass the way mdtest's stat phase goes; CPU seconds. */
static double
pass_mdtest(const char *dir, long n)
{
	char item[PATH_MAX], temp[PATH_MAX];
	struct stat st;
	double t0 = cpu_s();

	for (long i = 0; i < n; i++) {
		mdtest_item(item, temp, dir, i);
		if (stat(item, &st) < 0)
			fatal("stat %s", item);
	}
	return cpu_s() - t0;
}

/* One pass the way the engine's md-stat goes; CPU seconds. */
static double
pass_engine(const char *dir, long n)
{
	char path[PATH_MAX];
	size_t plen = (size_t)snprintf(path, sizeof(path), "%s/", dir);
	struct stat st;
	double t0 = cpu_s();

	for (long i = 0; i < n; i++) {
		snprintf(path + plen, sizeof(path) - plen, "file.mdtest.0.%ld", i);
		(void)now_mono_ns();
		if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			fatal("stat %s", path);
		(void)now_mono_ns();
	}
	return cpu_s() - t0;
}

/* One pass the way mdtest's read phase goes; CPU seconds. */
static double
pass_mdtest_read(const char *dir, long n)
{
	char item[PATH_MAX], temp[PATH_MAX], buf[ITEM_BYTES];
	struct timeval tv;
	double t0 = cpu_s();
	int fd;

	buf[0] = 0;
	for (long i = 0; i < n; i++) {
		mdtest_item(item, temp, dir, i);
		if ((fd = open(item, O_RDWR)) < 0)
			fatal("open %s", item);
		buf[0] = (char)~buf[0];
		if (lseek(fd, 0, SEEK_SET) < 0 || read(fd, buf, sizeof(buf)) != ITEM_BYTES)
			fatal("read %s", item);
		gettimeofday(&tv, NULL);
		close(fd);
	}
	return cpu_s() - t0;
}

/* One pass the way the engine's md-read goes, opening with flags; CPU
 * seconds. */
static double
pass_engine_read_as(const char *dir, long n, int flags)
{
	char path[PATH_MAX];
	size_t plen = (size_t)snprintf(path, sizeof(path), "%s/", dir);
	static const char zero[16];
	uint8_t buf[ITEM_BYTES];
	double t0 = cpu_s();
	int fd;

	for (long i = 0; i < n; i++) {
		snprintf(path + plen, sizeof(path) - plen, "file.mdtest.0.%ld", i);
		(void)now_mono_ns();
		if ((fd = openat(AT_FDCWD, path, flags | O_NOFOLLOW | O_CLOEXEC)) < 0)
			fatal("open %s", path);
		if (read(fd, buf, sizeof(buf)) != ITEM_BYTES)
			fatal("read %s", path);
		if (memcmp(buf, zero, 16) == 0 && memcmp(buf + ITEM_BYTES - 16, zero, 16) == 0)
			fatal("%s: no content", path);
		close(fd);
		(void)now_mono_ns();
	}
	return cpu_s() - t0;
}

static double
pass_engine_read(const char *dir, long n)
{
	return pass_engine_read_as(dir, n, O_RDONLY);
}

static double
pass_engine_read_rdwr(const char *dir, long n)
{
	return pass_engine_read_as(dir, n, O_RDWR);
}

/* Make or remove the n files of dir (of ITEM_BYTES each, not zero). */
static void
files(const char *dir, long n, int make)
{
	char path[PATH_MAX], data[ITEM_BYTES];
	int fd;

	memset(data, 0x5a, sizeof(data));
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/file.mdtest.0.%ld", dir, i);
		if (!make)
			unlink(path);
		else if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0 ||
		    write(fd, data, sizeof(data)) != ITEM_BYTES || close(fd) < 0)
			fatal("create %s", path);
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median ratio a/b of CPU per pass over pairs interleaved pairs
 * (alternating which goes first), after one warm-up pass of each; the
 * spread in lo, hi. */
static double
ratio(pass_fn a, pass_fn b, const char *dir, long n, int pairs, double *lo, double *hi)
{
	double r[PAIRS_MAX];

	b(dir, n);
	a(dir, n);
	for (int k = 0; k < pairs; k++) {
		double x, y;

		if (k % 2) {
			y = b(dir, n);
			x = a(dir, n);
		} else {
			x = a(dir, n);
			y = b(dir, n);
		}
		r[k] = x / y;
	}
	qsort(r, (size_t)pairs, sizeof(*r), cmp_double);
	*lo = r[0];
	*hi = r[pairs - 1];
	return r[pairs / 2];
}

int
main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 50000;
	int pairs = argc > 3 ? atoi(argv[3]) : 15;
	double st, rd, rw, lo[3], hi[3];
	char dir[PATH_MAX];

	if (argc < 2 || n <= 0 || pairs <= 0 || pairs > PAIRS_MAX) {
		fprintf(stderr, "usage: md_item_cost DIR [FILES] [PAIRS <= %d]\n", PAIRS_MAX);
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/md-item-cost.%ld", argv[1], (long)getpid());
	if (mkdir(dir, 0755) < 0)
		fatal("mkdir %s", dir);
	files(dir, n, 1);
	st = ratio(pass_mdtest, pass_engine, dir, n, pairs, &lo[0], &hi[0]);
	rd = ratio(pass_mdtest_read, pass_engine_read, dir, n, pairs, &lo[1], &hi[1]);
	rw = ratio(pass_engine_read_rdwr, pass_engine_read, dir, n, pairs, &lo[2], &hi[2]);
	files(dir, n, 0);
	rmdir(dir);
	printf("CPU per stat pass, mdtest-style / engine-style: %.3f (pairs %.3f-%.3f), "
	    "%ld files, %d pairs\n", st, lo[0], hi[0], n, pairs);
	printf("CPU per read pass, mdtest-style / engine-style: %.3f (pairs %.3f-%.3f); "
	    "of it, the engine's with O_RDWR / O_RDONLY: %.3f (pairs %.3f-%.3f)\n",
	    rd, lo[1], hi[1], rw, lo[2], hi[2]);
	return 0;
}
