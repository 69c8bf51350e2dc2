/* Driver for bench/engine-vs-fio: runs one workload with knob's built-in
 * engine (in process, the same code knobd runs) and with fio on the same
 * directory, the median of --reps runs each, and prints one line:
 *   engine_rate fio_rate ratio engine_cpu_s_per_gib unit ratio_min ratio_max
 *   fio_cpu_s_per_gib engine_requests_per_mib fio_requests_per_mib
 * (the last two: device requests per MiB moved in the kind's direction,
 * for sequential O_DIRECT kinds only, -1 otherwise)
 * (fio's CPU time is its jobs' usr_cpu + sys_cpu over their runtime, as
 * its JSON gives them: the timed I/O only, like the engine's figure)
 * where rate is bytes/s for sequential and IOPS for random workloads.
 * With --iodepth N both run io_uring at queue depth N per thread (the
 * engine's queued loop, fio's io_uring engine with its defaults). 
 * Built by the script against the build directory's libraries.
 *
 * The driver waits for the engine the way fio's parent process waits for
 * its job: it wakes every FIO_POLL_MS (fio's main loop reaps its jobs every
 * 10 ms).  This is not cosmetic on a VM: a periodic wake-up on the CPU the
 * I/O thread runs on shortens every queue-depth-1 O_DIRECT read there (see
 * bench/engine-vs-fio), so fio's own poller helps fio's job and a driver
 * sleeping 1 s would not help the engine.  Only the waiting differs from
 * bench_job_run(); what is timed (the I/O thread's loop) is unchanged. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <json-c/json.h>

#include "bench.h"
#include "log.h"
#include "util.h"

#define FIO_POLL_MS	10	/* fio's main loop: usleep(10000) between reaps */

struct opts {
	const char *kind, *dir, *fio;
	unsigned threads, reps;
	uint64_t bs, size;
	int direct;
	int small_pages;		/* the engine's --buffer-pages 4k */
	unsigned iodepth;		/* 0: psync at depth 1 in both */
};

/* bench_job_run() with fio's waiting: prepare, go, poll every FIO_POLL_MS
 * until done (a stonewall is worn out to this node's largest count, as
 * bench_job_run() does), join.  0 or -1 (j->err). */
static int
run_job_polling(struct bench_job *j)
{
	int r;

	if (bench_job_prepare(j) < 0)
		return -1;
	bench_job_go(j);
	while ((r = bench_job_wait(j, FIO_POLL_MS)) != BJ_DONE)
		if (r == BJ_WALL)
			bench_job_wearout(j, bench_job_wall_max(j));
	bench_job_join(j);
	for (size_t i = 0; i < j->nth; i++)
		if (j->th[i].failed) {
			snprintf(j->err, sizeof(j->err), "%s", j->th[i].err);
			return -1;
		}
	return 0;
}

/* One engine run; *rate in bytes/s or IOPS, *cpu in s/GiB. 0 or -1. */
static int
run_engine(const struct opts *o, int rep, double *rate, double *cpu)
{
	struct bench_params p;
	struct bench_job *j;
	Knob__PhaseResult r;
	double el;
	int rc;

	memset(&p, 0, sizeof(p));
	snprintf(p.phase_id, sizeof(p.phase_id), "evf-%ld-%d", (long)getpid(), rep);
	snprintf(p.workdir_id, sizeof(p.workdir_id), "%s", p.phase_id);
	p.kind = bench_kind_parse(o->kind);
	snprintf(p.dir, sizeof(p.dir), "%s", o->dir);
	p.bs = o->bs;
	p.file_size = o->size;
	p.threads_total = o->threads;
	p.nranks = o->threads;
	p.ranks = xcalloc(o->threads, sizeof(*p.ranks));
	for (unsigned i = 0; i < o->threads; i++)
		p.ranks[i] = i;
	p.odirect = o->direct;
	p.small_pages = o->small_pages;
	if (o->iodepth) {
		p.ioengine = IOE_URING;
		p.queue_depth = o->iodepth;
	}
	p.seed = 1 + (uint64_t)rep;
	p.ext_args = xcalloc(1, sizeof(char *));
	p.hosts = xcalloc(1, sizeof(char *));
	p.host_slots = xcalloc(1, sizeof(uint32_t));
	j = bench_job_new(&p, "local");
	rc = run_job_polling(j);
	bench_job_result(j, &r);
	bench_job_cleanup(j);
	if (rc < 0 || !r.ok) {
		fprintf(stderr, "engine: %s\n", r.error[0] ? r.error : j->err);
		bench_result_free(&r);
		bench_job_free(j);
		return -1;
	}
	el = (double)(r.end_ns - r.start_ns) / 1e9;

	*rate = (double)(strncmp(o->kind, "rand", 4) == 0 ? r.ops : r.bytes) / el;
	*cpu = (double)r.cpu_ns / 1e9 / ((double)r.bytes / (1 << 30));
	bench_result_free(&r);
	bench_job_free(j);
	return 0;
}

/* CPU seconds per GiB of fio's jobs in its JSON output (the timed part:
 * usr_cpu and sys_cpu are percentages of job_runtime); 0 when absent. */
static double
fio_cpu(const char *out)
{
	json_object *root = json_tokener_parse(out), *jobs, *job, *v;
	double cpu = 0, bytes = 0;

	if (root == NULL || !json_object_object_get_ex(root, "jobs", &jobs))
		goto out;
	for (size_t i = 0; i < json_object_array_length(jobs); i++) {
		double pct = 0;

		job = json_object_array_get_idx(jobs, i);
		if (json_object_object_get_ex(job, "usr_cpu", &v))
			pct += json_object_get_double(v);
		if (json_object_object_get_ex(job, "sys_cpu", &v))
			pct += json_object_get_double(v);
		if (json_object_object_get_ex(job, "job_runtime", &v))
			cpu += pct / 100 * json_object_get_double(v) / 1000;
		for (const char *const *d = (const char *const[]){ "read", "write", NULL }; *d; d++)
			if (json_object_object_get_ex(job, *d, &v) &&
			    json_object_object_get_ex(v, "io_bytes", &v))
				bytes += json_object_get_double(v);
	}
out:
	json_object_put(root);
	return bytes > 0 ? cpu / (bytes / (1 << 30)) : 0;
}

/* One fio run of the same workload; *rate as for the engine, *cpu its CPU
 * seconds per GiB. 0 or -1. */
static int
run_fio(const struct opts *o, double *rate, double *cpu)
{
	static const struct { const char *kind, *rw, *op; } map[] = {
		{ "seq-write", "write", "write" }, { "seq-read", "read", "read" },
		{ "rand-write", "randwrite", "write" }, { "rand-read", "randread", "read" },
	};
	char a_dir[4200], a_rw[32], a_bs[48], a_size[48], a_jobs[32], a_qd[32], err[256];
	char *argv[24], *out = NULL, tmpl[] = "/tmp/knob-evf-fio.XXXXXX";
	struct ext_summary s;
	int ac = 0, fd, st, rc = -1;
	size_t i, k;
	pid_t pid;

	for (k = 0; k < nitems(map); k++)
		if (strcmp(map[k].kind, o->kind) == 0)
			break;
	if (k == nitems(map))
		return -1;
	snprintf(a_dir, sizeof(a_dir), "--directory=%s", o->dir);
	snprintf(a_rw, sizeof(a_rw), "--rw=%s", map[k].rw);
	snprintf(a_bs, sizeof(a_bs), "--bs=%llu", (unsigned long long)o->bs);
	snprintf(a_size, sizeof(a_size), "--size=%llu", (unsigned long long)o->size);
	snprintf(a_jobs, sizeof(a_jobs), "--numjobs=%u", o->threads);
	argv[ac++] = (char *)(uintptr_t)o->fio;
	argv[ac++] = (char *)(uintptr_t)"--name=evf";
	argv[ac++] = a_dir;
	argv[ac++] = a_rw;
	argv[ac++] = a_bs;
	argv[ac++] = a_size;
	argv[ac++] = a_jobs;
	snprintf(a_qd, sizeof(a_qd), "--iodepth=%u", o->iodepth ? o->iodepth : 1);
	argv[ac++] = (char *)(uintptr_t)(o->iodepth ? "--ioengine=io_uring" : "--ioengine=psync");
	argv[ac++] = a_qd;
	/* no untimed preallocation: the engine, like IOR and IOzone, writes
	 * into files that grow (fio's default fallocate would move the tmpfs
	 * page allocation out of the timing) */
	argv[ac++] = (char *)(uintptr_t)"--fallocate=none";
	argv[ac++] = (char *)(uintptr_t)"--group_reporting";
	/* fio's jobs as threads of one process in our session, as the
	 * engine's threads are: a forked job calls setsid(), and with
	 * autogroup scheduling every session gets an equal CPU share, so on
	 * a busy machine N fio processes out-ran N engine threads (README) */
	argv[ac++] = (char *)(uintptr_t)"--thread";
	argv[ac++] = (char *)(uintptr_t)"--unlink=1";
	argv[ac++] = (char *)(uintptr_t)"--output-format=json";
	if (o->direct)
		argv[ac++] = (char *)(uintptr_t)"--direct=1";
	/* the engine's rand-write overwrites files prefilled in prepare
	 * (IOzone -i2 after -i0): lay fio's out first as well */
	if (strcmp(o->kind, "rand-write") == 0)
		argv[ac++] = (char *)(uintptr_t)"--overwrite=1";
	argv[ac] = NULL;
	if ((fd = mkstemp(tmpl)) < 0)
		return -1;
	unlink(tmpl);
	if ((pid = fork()) == 0) {
		dup2(fd, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "fio failed (status %d)\n", st);
		goto out;
	}
	{
		off_t len = lseek(fd, 0, SEEK_END);
		out = xmalloc((size_t)len + 1);
		if (pread(fd, out, (size_t)len, 0) != len)
			goto out;
		out[len] = '\0';
	}
	if (ext_parse_fio_json(out, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	*cpu = fio_cpu(out);
	for (i = 0; i < s.n; i++)
		if (strcmp(s.op[i].op, map[k].op) == 0) {
			*rate = strncmp(o->kind, "rand", 4) == 0 ? s.op[i].iops : s.op[i].bw_bytes;
			rc = 0;
		}
out:
	free(out);
	close(fd);
	return rc;
}

/* Device requests so far in the direction of a sequential O_DIRECT kind
 * (reads for seq-read, writes for seq-write) on --dir's device; -1 when
 * not counted (buffered, random, or no block device). */
static long
dev_requests(const struct opts *o)
{
	long rd, wr;

	if (!o->direct || strncmp(o->kind, "seq-", 4) != 0 ||
	    blockdev_requests(o->dir, &rd, &wr) < 0)
		return -1;
	return strcmp(o->kind, "seq-read") == 0 ? rd : wr;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of v (sorted in place). */
static double
median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "kind", required_argument, NULL, 'k' }, { "dir", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' }, { "bs", required_argument, NULL, 'b' },
		{ "size", required_argument, NULL, 's' }, { "direct", no_argument, NULL, 'D' },
		{ "reps", required_argument, NULL, 'r' }, { "fio", required_argument, NULL, 'f' },
		{ "iodepth", required_argument, NULL, 'q' },
		{ "buffer-pages", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { "seq-write", NULL, "fio", 1, 3, 1 << 20, 256 << 20, 0, 0, 0 };
	double er = 0, fr = 0, ecpu = 0, rmed, *ev, *fv, *cv, *rv, *fcv, mib;
	long ereq = 0, freq = 0;
	int ch;

	log_init("engine-vs-fio", LOG_LVL_WARN);
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'k': o.kind = optarg; break;
		case 'd': o.dir = optarg; break;
		case 't': o.threads = (unsigned)atoi(optarg); break;
		case 'b': o.bs = strtoull(optarg, NULL, 10); break;
		case 's': o.size = strtoull(optarg, NULL, 10); break;
		case 'D': o.direct = 1; break;
		case 'r': o.reps = (unsigned)atoi(optarg); break;
		case 'f': o.fio = optarg; break;
		case 'q': o.iodepth = (unsigned)atoi(optarg); break;
		case 'P': o.small_pages = strcmp(optarg, "4k") == 0; break;
		default: return 2;
		}
	}
	if (o.dir == NULL || bench_kind_parse(o.kind) < 0 || o.threads == 0 || o.reps == 0) {
		fprintf(stderr, "usage: engine_vs_fio --kind K --dir D [--threads N] [--bs B] "
		    "[--size S] [--direct] [--reps R] [--fio PATH] [--iodepth N] "
		    "[--buffer-pages huge|4k]\n");
		return 2;
	}
	/* One discarded warm-up round (a VM's first touch of memory and a
	 * device's caches), then interleave the two, in alternating order, so
	 * that drifting device state and what one run leaves behind hit both
	 * alike; report medians (a shared VM is noisy, and
	 * a best-of picks outliers). */
	ev = xcalloc(o.reps, sizeof(*ev));
	fv = xcalloc(o.reps, sizeof(*fv));
	cv = xcalloc(o.reps, sizeof(*cv));
	rv = xcalloc(o.reps, sizeof(*rv));
	fcv = xcalloc(o.reps, sizeof(*fcv));
	for (int rep = -1; rep < (int)o.reps; rep++) {
		double r, c, f = 0, fc = 0;
		int fio_first = rep >= 0 && rep % 2 == 1;	/* alternate the order */
		long d[3];

		d[0] = dev_requests(&o);
		if (fio_first && run_fio(&o, &f, &fc) < 0)
			return 1;
		d[1] = dev_requests(&o);
		if (run_engine(&o, rep + 1, &r, &c) < 0)
			return 1;
		d[2] = dev_requests(&o);
		if (!fio_first && run_fio(&o, &f, &fc) < 0)
			return 1;
		if (rep < 0)
			continue;
		/* device requests of the run in the middle: the engine's; the
		 * fio run before or after it: fio's */
		ereq = d[0] < 0 || ereq < 0 ? -1 : ereq + d[2] - d[1];
		freq = d[0] < 0 || freq < 0 ? -1 :
		    freq + (fio_first ? d[1] - d[0] : dev_requests(&o) - d[2]);
		ev[rep] = r;
		cv[rep] = c;
		fcv[rep] = fc;
		fv[rep] = f;
		rv[rep] = f > 0 ? r / f : 0;
	}
	/* The ratio is the median of the per-pair ratios: each engine run is
	 * compared with the fio run right after it, so slow drift of the VM's
	 * state (host load, which vCPU takes the interrupts) cancels out. */
	er = median(ev, o.reps);
	fr = median(fv, o.reps);
	ecpu = median(cv, o.reps);
	rmed = median(rv, o.reps);	/* sorts rv: min and max at the ends */
	mib = (double)o.size * o.threads * o.reps / (1 << 20);
	printf("%.0f %.0f %.3f %.3f %s %.3f %.3f %.3f %.2f %.2f\n", er, fr, rmed, ecpu,
	    strncmp(o.kind, "rand", 4) == 0 ? "IOPS" : "B/s", rv[0], rv[o.reps - 1],
	    median(fcv, o.reps), ereq < 0 ? -1 : ereq / mib, freq < 0 ? -1 : freq / mib);
	return 0;
}
