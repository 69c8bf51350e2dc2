/* md_phase_rate DIR [FILES] [REPS]: the built-in engine's metadata phases
 * in-process on DIR (a tmpfs, say), full-path mode, one thread, FILES
 * items (default 100000) in directories of 1000, REPS rounds (default 7)
 * of md-create, md-stat, md-remove, md-mkdir, md-dirstat, md-rmdir.
 * Prints per phase the median ops/s (ops over the thread's timed span)
 * and the median thread CPU time per op, with the spread of the rounds.
 * Written to measure what resolving each operation beneath the phase's
 * directory (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) costs against
 * the plain full-path call; not a pass/fail test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "log.h"
#include "util.h"

#define REPS_MAX 51

static const char *const kinds[] = { "md-create", "md-stat", "md-remove", "md-mkdir",
    "md-dirstat", "md-rmdir" };

/* Params of kind on dir: rank 0 of 1, files items, kept but for removals. */
static void
mkparams(struct bench_params *p, const char *kind, const char *dir, uint64_t files)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->phase_id, sizeof(p->phase_id), "mdrate-%s", kind);
	snprintf(p->workdir_id, sizeof(p->workdir_id), "mdrate.%ld", (long)getpid());
	p->kind = bench_kind_parse(kind);
	snprintf(p->dir, sizeof(p->dir), "%s", dir);
	p->ranks = xcalloc(1, sizeof(*p->ranks));
	p->nranks = 1;
	p->threads_total = 1;
	p->files_per_dir = 1000;
	p->md_files = files;
	p->seed = 42;
	p->keep_files = strcmp(kind, "md-remove") != 0 && strcmp(kind, "md-rmdir") != 0;
	p->ext_args = xcalloc(1, sizeof(char *));
	p->hosts = xcalloc(1, sizeof(char *));
	p->host_slots = xcalloc(1, sizeof(uint32_t));
}

/* Run one phase; its ops/s and CPU ns per op into rate and cpu. */
static void
run_phase(const char *kind, const char *dir, uint64_t files, double *rate, double *cpu)
{
	struct bench_params p;
	struct bench_job *j;
	struct bench_thread *t;

	mkparams(&p, kind, dir, files);
	j = bench_job_new(&p, "local");
	if (bench_job_run(j) < 0)
		fatalx("%s: %s", kind, j->err);
	if (j->th[0].failed)
		fatalx("%s: %s", kind, j->th[0].err);
	t = &j->th[0];
	*rate = (double)atomic_load(&t->ops) * 1e9 / (double)(t->end_ns - t->start_ns);
	*cpu = (double)t->cpu_ns / (double)atomic_load(&t->ops);
	if (!strcmp(kind, "md-rmdir") && bench_job_cleanup(j) < 0)
		fatalx("clean-up of %s failed", dir);
	bench_job_free(j);
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static double rate[nitems(kinds)][REPS_MAX], cpu[nitems(kinds)][REPS_MAX];
	uint64_t files = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
	int reps = argc > 3 ? atoi(argv[3]) : 7;

	if (argc < 2 || reps < 1 || reps > REPS_MAX || files == 0) {
		fprintf(stderr, "usage: md_phase_rate DIR [FILES] [REPS<=%d]\n", REPS_MAX);
		return 2;
	}
	log_init("md_phase_rate", LOG_LVL_WARN);
	for (int r = 0; r < reps; r++)
		for (size_t k = 0; k < nitems(kinds); k++)
			run_phase(kinds[k], argv[1], files, &rate[k][r], &cpu[k][r]);
	printf("%-11s %12s %14s %10s\n", "phase", "ops/s", "min-max", "cpu ns/op");
	for (size_t k = 0; k < nitems(kinds); k++) {
		qsort(rate[k], (size_t)reps, sizeof(double), cmp_d);
		qsort(cpu[k], (size_t)reps, sizeof(double), cmp_d);
		printf("%-11s %12.0f %6.0f-%-7.0f %10.0f\n", kinds[k], rate[k][reps / 2],
		    rate[k][0], rate[k][reps - 1], cpu[k][reps / 2]);
	}
	return 0;
}
