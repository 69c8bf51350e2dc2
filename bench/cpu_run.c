/* cpu_run OUT CMD [ARG...]: run CMD and write "wall user sys maxrss" to OUT
 * (seconds with microseconds, then KiB), exiting with CMD's status.  For
 * bench/control-plane: GNU time prints CPU in hundredths of a second, which
 * hides a held ping's 0.01-0.05 s at 100 and 1000 nodes; wait4's rusage has
 * microseconds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

/* Seconds of a timeval. */
static double
tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Monotonic seconds. */
static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	struct rusage ru;
	double t0;
	pid_t pid;
	FILE *out;
	int st;

	if (argc < 3) {
		fprintf(stderr, "usage: cpu_run OUT CMD [ARG...]\n");
		return 2;
	}
	t0 = mono_s();
	if ((pid = fork()) < 0) {
		perror("cpu_run: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "cpu_run: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("cpu_run: wait4");
			return 2;
		}
	if ((out = fopen(argv[1], "w")) == NULL) {
		perror(argv[1]);
		return 2;
	}
	fprintf(out, "%.6f %.6f %.6f %ld\n", mono_s() - t0, tv_s(ru.ru_utime), tv_s(ru.ru_stime),
	    ru.ru_maxrss);
	fclose(out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
