/* md_item_cost DIR [FILES] [PAIRS]: the user-space cost per item of an
 * mdtest-style stat loop against the engine's, on the same stat(2) calls.
 *
 * Creates FILES (default 50000) empty files in DIR/md-item-cost.<pid>, then
 * stats all of them PAIRS times (default 15) with each loop, interleaved
 * (alternating which goes first), and prints the ratio of thread CPU time
 * per pass, mdtest-style over engine-style, median and spread.  Both loops
 * make one full-path stat per file; they differ only in what they do in
 * user space around it:
 *   - mdtest's (mdtest_stat() in the vendored source): clears two
 *     PATH_MAX buffers, builds the name and then the full path with
 *     sprintf, copies it with strcpy, reads gettimeofday;
 *   - the engine's (bench_md_run()): writes the name behind a prefix built
 *     once, reads the monotonic clock before and after.
 * Used to explain a knob/mdtest md-stat ratio above 1 (README, "Peer
 * benches measure the same thing").  Thread CPU time, not wall time, so
 * that a busy machine does not decide the figure. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "log.h"
#include "util.h"

#define PAIRS_MAX 101

/* User plus system CPU seconds of this thread. */
static double
cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* One pass the way mdtest's stat phase goes; CPU seconds. */
static double
pass_mdtest(const char *dir, long n)
{
	char item[PATH_MAX], temp[PATH_MAX];
	struct timeval tv;
	struct stat st;
	double t0 = cpu_s();

	for (long i = 0; i < n; i++) {
		memset(item, 0, sizeof(item));
		memset(temp, 0, sizeof(temp));
		snprintf(item, sizeof(item), "file.%s%ld", "mdtest.0.", i);
		snprintf(temp, sizeof(temp), "%s/%s", dir, item);
		strcpy(item, temp);
		gettimeofday(&tv, NULL);
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

/* Make or remove the n files of dir. */
static void
files(const char *dir, long n, int make)
{
	char path[PATH_MAX];
	int fd;

	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/file.mdtest.0.%ld", dir, i);
		if (!make)
			unlink(path);
		else if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0 || close(fd) < 0)
			fatal("create %s", path);
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 50000;
	int pairs = argc > 3 ? atoi(argv[3]) : 15;
	double r[PAIRS_MAX];
	char dir[PATH_MAX];

	if (argc < 2 || n <= 0 || pairs <= 0 || pairs > PAIRS_MAX) {
		fprintf(stderr, "usage: md_item_cost DIR [FILES] [PAIRS <= %d]\n", PAIRS_MAX);
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/md-item-cost.%ld", argv[1], (long)getpid());
	if (mkdir(dir, 0755) < 0)
		fatal("mkdir %s", dir);
	files(dir, n, 1);
	pass_engine(dir, n);		/* warm both paths once */
	pass_mdtest(dir, n);
	for (int k = 0; k < pairs; k++) {
		double e, m;

		if (k % 2) {
			e = pass_engine(dir, n);
			m = pass_mdtest(dir, n);
		} else {
			m = pass_mdtest(dir, n);
			e = pass_engine(dir, n);
		}
		r[k] = m / e;
	}
	files(dir, n, 0);
	rmdir(dir);
	qsort(r, (size_t)pairs, sizeof(*r), cmp_double);
	printf("CPU per stat pass, mdtest-style / engine-style: %.3f (pairs %.3f-%.3f), "
	    "%ld files, %d pairs\n", r[pairs / 2], r[0], r[pairs - 1], n, pairs);
	return 0;
}
