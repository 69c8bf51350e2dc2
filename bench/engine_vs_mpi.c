/* Driver for bench/engine-vs-ior and bench/engine-vs-mdtest: one workload
 * with knob's built-in engine (in process, the same code knobd runs) and
 * with IOR or mdtest under mpirun on the same directory, engine and peer
 * interleaved over --reps pairs after one discarded warm-up pair, in
 * alternating order (engine first in even pairs, the peer first in odd
 * ones, so that what one run leaves behind, the journal commit of its
 * deletes say, weighs on both alike).  Prints one line per operation:
 *   OP engine_rate peer_rate ratio ratio_min ratio_max
 * ratio = median of the per-pair ratios, min and max their spread; rates
 * are medians (bytes/s for IOR, ops/s for mdtest).  Built by make bench
 * (or by the scripts).
 *
 * IOR: seq-write then seq-read with the engine (N-to-N, or N-to-1 with
 * --shared, the layouts of ior -F and of ior's segmented shared file)
 * against one "ior -w -r" run; both read back what the same rank wrote.
 * mdtest: md-create, md-stat, md-read, md-remove against "mdtest -C -T -E
 * -r -u" (a directory per rank, every file in it, -w/-e bytes each).
 * --before CMD runs CMD (untimed) before every engine run and every peer
 * run, e.g. bench/engine-vs-mdtest's new file system for each.
 * --peer-args ARGS adds ARGS to the peer's command line, e.g. IOR's
 * "-l random" (data as incompressible as the engine's); --compressible PCT
 * makes the engine's data PCT % zeros instead (knob's --compressible), as
 * compressible as IOR's default pattern at about 80 (a check by hand:
 * doc/measurements.md, "O_DIRECT writes and the data written"). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "log.h"
#include "stats.h"
#include "util.h"

#define MAX_OPS 4

/* Device requests of the runs of one tool (engine 0, peer 1) and their
 * milliseconds in the device, summed over the timed reps, when --dir is on
 * a block device. */
static struct { long rd, wr, rd_ms, wr_ms; int ok; } reqs[2] = { { .ok = 1 }, { .ok = 1 } };

struct opts {
	const char *peer, *tool, *dir, *mpirun, *before, *peer_args;
	unsigned threads, reps;
	uint64_t bs, size, files, wsize;
	int shared, direct;
	int small_pages;	/* the engine's --buffer-pages 4k */
	int bind;		/* --bind core: engine threads and mpirun's ranks on a core each */
	unsigned compress_pct;	/* the engine's --compressible */
};

/* The engine kinds of a peer's operations, in its order, with the name
 * the peer's summary gives each. */
static const struct peer_op {
	const char *peer, *kind, *op;
} peer_ops[] = {
	{ "ior", "seq-write", "write" }, { "ior", "seq-read", "read" },
	{ "mdtest", "md-create", "File creation" }, { "mdtest", "md-stat", "File stat" },
	{ "mdtest", "md-read", "File read" }, { "mdtest", "md-remove", "File removal" },
};

/* The engine's parameters for one kind of the workload (one workdir for
 * every kind of a rep, so each reads what the one before wrote). */
static void
engine_params(const struct opts *o, const char *kind, int rep, struct bench_params *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->phase_id, sizeof(p->phase_id), "evm-%ld-%d-%s", (long)getpid(), rep, kind);
	snprintf(p->workdir_id, sizeof(p->workdir_id), "evm-%ld-%d", (long)getpid(), rep);
	p->kind = bench_kind_parse(kind);
	snprintf(p->dir, sizeof(p->dir), "%s", o->dir);
	p->bs = o->bs;
	p->file_size = o->size;
	p->shared = o->shared;
	p->odirect = o->direct;
	p->small_pages = o->small_pages;
	p->compress_pct = o->compress_pct;
	p->cpu_bind = o->bind;
	p->files_per_dir = (uint32_t)o->files;
	p->md_files = o->files;
	p->md_write_size = o->wsize;
	p->threads_total = o->threads;
	p->nranks = o->threads;
	p->ranks = xcalloc(o->threads, sizeof(*p->ranks));
	for (unsigned i = 0; i < o->threads; i++)
		p->ranks[i] = i;
	p->keep_files = 1;
	p->seed = 1 + (uint64_t)rep;
	p->ext_args = xcalloc(1, sizeof(char *));
	p->hosts = xcalloc(1, sizeof(char *));
	p->host_slots = xcalloc(1, sizeof(uint32_t));
}

/* The --before command, run (untimed) before every engine and peer run,
 * so that each starts from the same state.  0 or -1. */
static int
run_before(const struct opts *o)
{
	if (o->before == NULL || system(o->before) == 0)
		return 0;
	fprintf(stderr, "--before %s failed\n", o->before);
	return -1;
}

/* Add the device requests and their milliseconds since *snap (taken by a
 * first call with tool -1) to tool's count; in a warm-up rep (rep 0) only
 * snapshot. */
static void
count_requests(const struct opts *o, int tool, int rep, long snap[4])
{
	struct blockdev_io io;

	if (blockdev_io(o->dir, &io) < 0) {
		reqs[0].ok = reqs[1].ok = 0;
		return;
	}
	if (tool >= 0 && rep > 0) {
		reqs[tool].rd += io.rd - snap[0];
		reqs[tool].wr += io.wr - snap[1];
		reqs[tool].rd_ms += io.rd_ms - snap[2];
		reqs[tool].wr_ms += io.wr_ms - snap[3];
	}
	snap[0] = io.rd;
	snap[1] = io.wr;
	snap[2] = io.rd_ms;
	snap[3] = io.wr_ms;
}

/* Every kind of the peer with the engine, in order; rate[k] of each
 * (bytes/s or ops/s over the phase).  The files go at the end.  0 or -1. */
static int
run_engine(const struct opts *o, int rep, double *rate)
{
	struct bench_job *last = NULL;
	size_t k, n = 0;
	int rc = run_before(o);
	long snap[4];

	count_requests(o, -1, rep, snap);
	for (k = 0; k < nitems(peer_ops) && rc == 0; k++) {
		struct bench_params p;
		struct bench_job *j;
		Knob__PhaseResult r;

		if (strcmp(peer_ops[k].peer, o->peer) != 0)
			continue;
		engine_params(o, peer_ops[k].kind, rep, &p);
		j = bench_job_new(&p, "local");
		if (bench_job_run(j) < 0)
			rc = -1;
		bench_job_result(j, &r);
		if (rc == 0 && !r.ok)
			rc = -1;
		if (rc < 0)
			fprintf(stderr, "engine %s: %s\n", peer_ops[k].kind, r.error[0] ? r.error : j->err);
		else
			rate[n++] = (double)(bench_kind_is_md(j->p.kind) ? r.ops : r.bytes) /
			    ((double)(r.end_ns - r.start_ns) / 1e9);
		bench_result_free(&r);
		if (last)
			bench_job_free(last);
		last = j;
	}
	if (last) {
		bench_job_cleanup(last);
		bench_job_free(last);
	}
	count_requests(o, 0, rep, snap);
	return rc;
}

/* The peer's command line under mpirun (malloc'd). */
static char *
peer_command(const struct opts *o, int rep)
{
	if (strcmp(o->peer, "ior") == 0)
		return xasprintf("%s -np %u %s -a POSIX -w -r -i 1 -t %llu -b %llu%s%s %s "
		    "-o %s/evm-ior-%ld-%d 2>&1", o->mpirun, o->threads, o->tool,
		    (unsigned long long)o->bs, (unsigned long long)o->size, o->shared ? "" : " -F",
		    o->direct ? " --posix.odirect" : "", o->peer_args, o->dir, (long)getpid(), rep);
	return xasprintf("%s -np %u %s -a POSIX -F -C -T -E -r -u -i 1 -n %llu -w %llu -e %llu %s "
	    "-d %s/evm-md-%ld-%d 2>&1", o->mpirun, o->threads, o->tool,
	    (unsigned long long)o->files, (unsigned long long)o->wsize,
	    (unsigned long long)o->wsize, o->peer_args, o->dir, (long)getpid(), rep);
}

/* One peer run; rate[k] per operation as for the engine. 0 or -1. */
static int
run_peer(const struct opts *o, int rep, double *rate)
{
	char *cmd = peer_command(o, rep), *out = xcalloc(1, 1 << 20), err[256];
	struct ext_summary s;
	size_t len = 0, got, k, n = 0;
	long snap[4];
	FILE *f;
	int rc = -1;

	if (run_before(o) < 0)
		goto out;
	count_requests(o, -1, rep, snap);
	if ((f = popen(cmd, "r")) == NULL)
		goto out;
	while (len + 1 < (1u << 20) && (got = fread(out + len, 1, (1u << 20) - 1 - len, f)) > 0)
		len += got;
	if (pclose(f) != 0) {
		fprintf(stderr, "%s failed:\n%s\n", cmd, out);
		goto out;
	}
	count_requests(o, 1, rep, snap);
	if ((strcmp(o->peer, "ior") == 0 ? ext_parse_ior_text(out, &s, err, sizeof(err)) :
	    ext_parse_mdtest_text(out, &s, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s\n%s\n", err, out);
		goto out;
	}
	for (k = 0; k < nitems(peer_ops); k++) {
		size_t i;

		if (strcmp(peer_ops[k].peer, o->peer) != 0)
			continue;
		for (i = 0; i < s.n && strcmp(s.op[i].op, peer_ops[k].op) != 0; i++)
			;
		if (i == s.n) {
			fprintf(stderr, "%s: no \"%s\" in its summary\n", o->peer, peer_ops[k].op);
			goto out;
		}
		rate[n++] = strcmp(o->peer, "ior") == 0 ? s.op[i].bw_bytes : s.op[i].iops;
	}
	rc = 0;
out:
	free(cmd);
	free(out);
	return rc;
}

/* Parse the command line into o; 0, or -1 (usage printed). */
static int
parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "peer", required_argument, NULL, 'p' }, { "tool", required_argument, NULL, 'T' },
		{ "dir", required_argument, NULL, 'd' }, { "threads", required_argument, NULL, 't' },
		{ "bs", required_argument, NULL, 'b' }, { "size", required_argument, NULL, 's' },
		{ "files", required_argument, NULL, 'n' }, { "write-size", required_argument, NULL, 'w' },
		{ "shared", no_argument, NULL, 'S' }, { "direct", no_argument, NULL, 'D' },
		{ "reps", required_argument, NULL, 'r' }, { "mpirun", required_argument, NULL, 'm' },
		{ "before", required_argument, NULL, 'B' },
		{ "peer-args", required_argument, NULL, 'A' },
		{ "compressible", required_argument, NULL, 'C' },
		{ "buffer-pages", required_argument, NULL, 'P' },
		{ "bind", required_argument, NULL, 'K' }, { NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'p': o->peer = optarg; break;
		case 'T': o->tool = optarg; break;
		case 'd': o->dir = optarg; break;
		case 't': o->threads = (unsigned)atoi(optarg); break;
		case 'b': o->bs = strtoull(optarg, NULL, 10); break;
		case 's': o->size = strtoull(optarg, NULL, 10); break;
		case 'n': o->files = strtoull(optarg, NULL, 10); break;
		case 'w': o->wsize = strtoull(optarg, NULL, 10); break;
		case 'S': o->shared = 1; break;
		case 'D': o->direct = 1; break;
		case 'r': o->reps = (unsigned)atoi(optarg); break;
		case 'm': o->mpirun = optarg; break;
		case 'B': o->before = optarg; break;
		case 'A': o->peer_args = optarg; break;
		case 'C': o->compress_pct = (unsigned)atoi(optarg); break;
		case 'P': o->small_pages = strcmp(optarg, "4k") == 0; break;
		case 'K': o->bind = strcmp(optarg, "core") == 0; break;
		default: goto usage;
		}
	}
	if (o->dir && o->tool && o->threads && o->reps &&
	    (strcmp(o->peer, "ior") == 0 || strcmp(o->peer, "mdtest") == 0))
		return 0;
usage:
	fprintf(stderr, "usage: engine_vs_mpi --peer ior|mdtest --tool PATH --dir D [--threads N] "
	    "[--bs B --size S --shared --direct] [--files N --write-size W] [--reps R] "
	    "[--mpirun 'mpirun ...'] [--before CMD] [--peer-args ARGS] [--compressible PCT] "
	    "[--buffer-pages huge|4k] [--bind none|core]\n");
	return -1;
}

int
main(int argc, char **argv)
{
	/* mpirun binds 2 ranks to one core each by default; by default here
	 * the engine's threads float, and so do the ranks (on a shared machine
	 * a rank pinned to a busy core measures the neighbour); --bind core
	 * pins both, each thread and rank to a core of its own (mpirun's
	 * default: engine-vs-mdtest, where floating mdtest ranks lose more
	 * to the scheduler's placement than floating engine threads) */
	struct opts o = { "ior", NULL, NULL, NULL, NULL, "",
	    2, 5, 1 << 20, 256 << 20, 10000, 4096, 0, 0, 0, 0, 0 };
	static char mpirun_default[128];
	double e[MAX_OPS], p[MAX_OPS], *ev[MAX_OPS], *pv[MAX_OPS], *rv[MAX_OPS];
	struct sample_stats sp;
	size_t k, nops = 0;

	log_init("engine-vs-mpi", LOG_LVL_WARN);
	if (parse(argc, argv, &o) < 0)
		return 2;
	snprintf(mpirun_default, sizeof(mpirun_default), "mpirun --allow-run-as-root "
	    "--oversubscribe --map-by node --bind-to %s", o.bind ? "core" : "none");
	if (o.mpirun == NULL)
		o.mpirun = mpirun_default;
	for (k = 0; k < nitems(peer_ops); k++)
		nops += strcmp(peer_ops[k].peer, o.peer) == 0;
	for (k = 0; k < nops; k++) {
		ev[k] = xcalloc(o.reps, sizeof(double));
		pv[k] = xcalloc(o.reps, sizeof(double));
		rv[k] = xcalloc(o.reps, sizeof(double));
	}
	/* a discarded warm-up pair, then engine and peer interleaved */
	for (int rep = -1; rep < (int)o.reps; rep++) {
		int peer_first = rep >= 0 && rep % 2 == 1;

		if ((peer_first && run_peer(&o, rep + 1, p) < 0) || run_engine(&o, rep + 1, e) < 0 ||
		    (!peer_first && run_peer(&o, rep + 1, p) < 0))
			return 1;
		for (k = 0; rep >= 0 && k < nops; k++) {
			ev[k][rep] = e[k];
			pv[k][rep] = p[k];
			rv[k][rep] = p[k] > 0 ? e[k] / p[k] : 0;
		}
	}
	for (k = 0, nops = 0; k < nitems(peer_ops); k++) {
		if (strcmp(peer_ops[k].peer, o.peer) != 0)
			continue;
		stats_summary(rv[nops], o.reps, &sp);
		printf("%s %.0f %.0f %.3f %.3f %.3f\n", peer_ops[k].kind,
		    stats_median(ev[nops], o.reps), stats_median(pv[nops], o.reps),
		    stats_median(rv[nops], o.reps), sp.min, sp.max);
		nops++;
	}
	if (strcmp(o.peer, "ior") == 0 && reqs[0].ok) {
		double mib = (double)o.size * o.threads * o.reps / (1 << 20);

		printf("# device requests per MiB: knob read %.2f write %.2f, ior read %.2f "
		    "write %.2f\n", reqs[0].rd / mib, reqs[0].wr / mib, reqs[1].rd / mib,
		    reqs[1].wr / mib);
		printf("# device ms per MiB: knob read %.3f write %.3f, ior read %.3f "
		    "write %.3f\n", reqs[0].rd_ms / mib, reqs[0].wr_ms / mib,
		    reqs[1].rd_ms / mib, reqs[1].wr_ms / mib);
	}
	return 0;
}
