/* knobctl bench KIND -w NODESET --dir D ...: one coordinated phase, a
 * composite (seq = seq-write then seq-read on the same files; rand;
 * md = create, stat, read, remove; all) or a thread sweep; prints the table
 * (or one JSON document) and stores the run in the results database.
 * knobctl results list | show RUN | compare A B. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_ctl.h"
#include "bench_defaults.h"
#include "extargs.h"
#include "log.h"
#include "results.h"
#include "rundoc.h"
#include "stop_sig.h"
#include "util.h"

enum { O_DIR = 256, O_THREADS, O_BS, O_SIZE, O_SHARED, O_DIRECT, O_FSYNC, O_STONEWALL,
    O_FPD, O_FILES, O_FTOTAL, O_WSIZE, O_DROP, O_SHIFT, O_KEEP, O_RATE, O_LEASE,
    O_TOOL, O_EXTTO, O_SEED, O_TRATE, O_REPEAT, O_STOTAL, O_LABEL, O_VERIFY, O_COMPR,
    O_MDREL, O_MDSHARED, O_MDDEPTH, O_MDBRANCH, O_MDLEAF, O_IODEPTH, O_IOENGINE, O_RUNTIME,
    O_RWMIX, O_FALLOC, O_SEGS, O_AT, O_MPIRUN, O_MPIARGS, O_SCOUNT, O_SSIZE,
    O_PAGES, O_CPUBIND, O_STALL };

static const struct opt bench_opts[] = {
	{ O_DIR, "dir", OPT_ARG, "DIR", "directory on the file system under test (absolute)", 0 },
	{ O_THREADS, "threads", OPT_ARG, "LIST", "1,2,4 or 1..1024 (powers of two); round-robin over the nodes", 0 },
	{ O_BS, "bs", OPT_ARG, "SIZE", "block size (default 1m, 4k for rand-*)", 0 },
	{ O_SIZE, "size", OPT_ARG, "SIZE", "bytes per thread (N-to-N) or per rank segment (--shared); default 256m", 0 },
	{ O_SHARED, "shared", OPT_NOARG, NULL, "N-to-1: disjoint segments of one shared file", 0 },
	{ O_SEGS, "segments", OPT_ARG, "N", "with --shared: each rank's data in N strided segments (IOR -s: segment s of rank r at (s*threads+r)*size/N)", 0 },
	{ O_SCOUNT, "stripe-count", OPT_ARG, "N", "Lustre: lfs setstripe -c N on each phase's directory before its files are created", 0 },
	{ O_SSIZE, "stripe-size", OPT_ARG, "SIZE", "Lustre: lfs setstripe -S SIZE (a multiple of 64k) likewise", 0 },
	{ O_IODEPTH, "iodepth", OPT_ARG, "N", "I/Os in flight per thread (io_uring, else libaio)", 0 },
	{ O_IOENGINE, "ioengine", OPT_ARG, "E", "psync (queue depth 1), io_uring or libaio", 0 },
	{ O_RUNTIME, "runtime", OPT_ARG, "S", "data phases: run S seconds, wrapping around the file (fio time_based)", 0 },
	{ O_RWMIX, "rwmix", OPT_ARG, "PCT", "rand-rw: percentage of reads, 1-100 (default 50)", 0 },
	{ O_FALLOC, "fallocate", OPT_ARG, "MODE", "none (default: files grow as written, like IOR) or native (fio's default)", 0 },
	{ O_VERIFY, "verify", OPT_NOARG, NULL, "reads check every byte of every block", 0 },
	{ O_COMPR, "compressible", OPT_ARG, "PCT", "written data compresses by about PCT % (default 0: incompressible)", 0 },
	{ O_DIRECT, "direct", OPT_NOARG, NULL, "O_DIRECT with aligned buffers", 0 },
	{ O_CPUBIND, "cpu-bind", OPT_ARG, "B", "none (default: the threads float) or core (thread i on the i-th CPU the agent may use; ior/mdtest: mpirun --bind-to core, through the template's {bind})", 0 },
	{ O_PAGES, "buffer-pages", OPT_ARG, "P", "huge (default: I/O buffers of 1 MiB and more on huge pages) or 4k (the allocator's pages, as IOR and fio get)", 0 },
	{ O_FSYNC, "fsync", OPT_NOARG, NULL, "fsync before close, inside the timing", 0 },
	{ O_STONEWALL, "stonewall", OPT_ARG, "S", "stop after S seconds, then every thread runs on to the largest count (IOR wear-out)", 0 },
	{ O_FPD, "files-per-dir", OPT_ARG, "N", "md-*: files per directory (default 1024)", 0 },
	{ O_FILES, "files", OPT_ARG, "N", "md-*: files per thread (default = files per dir)", 0 },
	{ O_FTOTAL, "files-total", OPT_ARG, "N", "md-*: fixed total of files split over the threads", 0 },
	{ O_WSIZE, "write-size", OPT_ARG, "SIZE", "md-create/md-read: bytes per file (mdtest -w/-e); md-read checks every byte", 0 },
	{ O_MDSHARED, "md-shared", OPT_NOARG, NULL, "md-*: all threads in one directory tree (mdtest without -u)", 0 },
	{ O_MDDEPTH, "md-depth", OPT_ARG, "Z", "md-*: directory tree depth (mdtest -z)", 0 },
	{ O_MDBRANCH, "md-branch", OPT_ARG, "B", "md-*: directories per tree directory (mdtest -b)", 0 },
	{ O_MDLEAF, "md-leaf-only", OPT_NOARG, NULL, "md-*: items only in the leaf directories (mdtest -L)", 0 },
	{ O_MDREL, "md-relative", OPT_NOARG, NULL, "md-create, md-read, md-stat: work in the item's open directory instead of on the full path (mdtest's way, the default); md-remove, md-mkdir, md-rmdir always do", 0 },
	{ O_DROP, "drop-caches", OPT_NOARG, NULL, "drop the page cache before read phases", 0 },
	{ O_SHIFT, "reader-shift", OPT_OPTARG, "N", "read what rank r+N wrote (without N: a shift that puts every rank on another node's data)", 0 },
	{ O_KEEP, "keep", OPT_NOARG, NULL, "leave the files in DIR/knob.<id>/ afterwards", 0 },
	{ O_RATE, "rate-iops", OPT_ARG, "N", "throttle each thread", 0 },
	{ O_TRATE, "test-rate-iops", OPT_ARG, "N", "(tests) throttle each thread on agents run with --test-hooks", OPT_HIDDEN },
	{ O_LEASE, "lease", OPT_ARG, "S", "agents abort when the controller is silent S s (default 10)", 0 },
	{ O_STALL, "stall-timeout", OPT_ARG, "S", "a node whose op counts do not rise for S s of a running phase is failed as stalled (I/O stuck) and the run goes on without it; a node whose release (the delete of a phase's files) removes nothing for S s is no longer waited for (default: 3 x --stonewall or --runtime, at least 60)", 0 },
	{ O_TOOL, "tool", OPT_ARG, "PATH", "external tool binary", 0 },
	{ O_EXTTO, "ext-timeout", OPT_ARG, "S", "external tool timeout (default 3600)", 0 },
	{ O_SEED, "seed", OPT_ARG, "N", "random offsets seed", 0 },
	{ O_REPEAT, "repeat", OPT_ARG, "N", "run each point N times: mean, sd, min, max (default 1)", 0 },
	{ O_STOTAL, "size-total", OPT_ARG, "SIZE", "a fixed aggregate size split over the threads", 0 },
	{ O_LABEL, "label", OPT_ARG, "TEXT", "a label for the run in the results store", 0 },
	{ O_AT, "at", OPT_ARG, "T..T:K=V,..", "per-thread-count values: bs, size, size-total, files, files-total, stripe-count, stripe-size (repeatable)", 0 },
	{ O_MPIRUN, "mpirun", OPT_ARG, "TEMPLATE", "ior/mdtest launcher: words with {np} {hosts} {hostfile} {ppn} {nnodes} {bind} {args} {cmd} (default: mpirun --allow-run-as-root --map-by node --bind-to {bind} --hostfile {hostfile} -np {np} {args} {cmd})", 0 },
	{ O_MPIARGS, "mpirun-args", OPT_ARG, "ARGS", "site flags for the launcher's {args}, e.g. \"--mca btl ^openib\"", 0 },
	OPT_END
};

/* "32..1024:size=1g,bs=4m" (or "8:...") into a new override of rq. 0 or -1. */
static int
parse_at(const char *spec, struct bench_req *rq)
{
	static const struct { const char *key; size_t off; } keys[] = {
		{ "bs", offsetof(struct bench_at, bs) },
		{ "size", offsetof(struct bench_at, size) },
		{ "size-total", offsetof(struct bench_at, size_total) },
		{ "files", offsetof(struct bench_at, md_files) },
		{ "files-total", offsetof(struct bench_at, files_total) },
		{ "stripe-count", offsetof(struct bench_at, stripe_count) },
		{ "stripe-size", offsetof(struct bench_at, stripe_size) },
	};
	char *dup = xstrdup(spec), *colon = strchr(dup, ':'), *t, *save = NULL, *end;
	struct bench_at a = { 0 };
	int rc = -1;

	if (colon == NULL)
		goto out;
	*colon = '\0';
	a.lo = (uint32_t)strtoul(dup, &end, 10);
	a.hi = strncmp(end, "..", 2) == 0 ? (uint32_t)strtoul(end + 2, &end, 10) : a.lo;
	if (*end || a.lo == 0 || a.hi < a.lo)
		goto out;
	for (t = strtok_r(colon + 1, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		size_t k;

		if (eq == NULL)
			goto out;
		*eq = '\0';
		for (k = 0; k < nitems(keys) && strcmp(keys[k].key, t); k++)
			;
		if (k == nitems(keys) || bench_parse_size(eq + 1,
		    (uint64_t *)(void *)((char *)&a + keys[k].off)) < 0)
			goto out;
	}
	rq->at = xrealloc(rq->at, (rq->nat + 1) * sizeof(*rq->at));
	rq->at[rq->nat++] = a;
	rc = 0;
out:
	free(dup);
	return rc;
}

#define RQ(m) offsetof(struct bench_req, m)
/* Where each option's value goes in the request and what it may be. */
static const struct opt_val bench_vals[] = {
	{ O_DIR, OV_STR, RQ(dir), 0, 0 },
	{ O_BS, OV_SIZE, RQ(bs), 1, 0 },
	{ O_SIZE, OV_SIZE, RQ(size), 1, 0 },
	{ O_WSIZE, OV_SIZE, RQ(write_size), 0, 0 },
	{ O_SHARED, OV_FLAG, RQ(shared), 0, 0 },
	{ O_DIRECT, OV_FLAG, RQ(direct), 0, 0 },
	{ O_FSYNC, OV_FLAG, RQ(fsync), 0, 0 },
	{ O_DROP, OV_FLAG, RQ(drop_caches), 0, 0 },
	{ O_KEEP, OV_FLAG, RQ(keep), 0, 0 },
	{ O_STONEWALL, OV_U32, RQ(stonewall_s), 0, 0 },
	{ O_FPD, OV_U32, RQ(files_per_dir), 1, 0 },
	{ O_FILES, OV_SIZE, RQ(md_files), 1, 0 },
	{ O_FTOTAL, OV_SIZE, RQ(files_total), 1, 0 },
	{ O_RATE, OV_U32, RQ(rate_iops), 0, 0 },
	{ O_TRATE, OV_U32, RQ(test_rate_iops), 0, 0 },
	{ O_LEASE, OV_U32, RQ(lease_s), 1, 0 },
	{ O_STALL, OV_U32, RQ(stall_s), 1, 0 },
	{ O_EXTTO, OV_U32, RQ(ext_timeout_s), 0, 0 },
	{ O_TOOL, OV_STR, RQ(ext_tool), 0, 0 },
	{ O_REPEAT, OV_U32, RQ(repeat), 1, 1000 },
	{ O_STOTAL, OV_SIZE, RQ(size_total), 1, 0 },
	{ O_LABEL, OV_STR, RQ(label), 0, 0 },
	{ O_MPIRUN, OV_STR, RQ(mpirun), 0, 0 },
	{ O_MPIARGS, OV_STR, RQ(mpirun_args), 0, 0 },
	{ O_SEED, OV_U64, RQ(seed), 0, 0 },
	/* the measurement options (issue 9) */
	{ O_VERIFY, OV_FLAG, RQ(verify), 0, 0 },
	{ O_MDREL, OV_FLAG, RQ(md_relative), 0, 0 },
	{ O_MDSHARED, OV_FLAG, RQ(md_shared), 0, 0 },
	{ O_MDLEAF, OV_FLAG, RQ(md_leaf_only), 0, 0 },
	{ O_COMPR, OV_U32, RQ(compress_pct), 0, 100 },
	{ O_MDDEPTH, OV_U32, RQ(md_depth), 0, 0 },
	{ O_MDBRANCH, OV_U32, RQ(md_branch), 1, 0 },
	{ O_IODEPTH, OV_U32, RQ(iodepth), 1, 0 },
	{ O_RUNTIME, OV_U32, RQ(runtime_s), 1, 0 },
	{ O_RWMIX, OV_U32, RQ(rwmix), 0, 100 },
	{ O_SEGS, OV_SIZE, RQ(segments), 1, 0 },
	{ O_SCOUNT, OV_SIZE, RQ(stripe_count), 1, 2000 },
};
#undef RQ

/* The options that are not a plain value: 0, or -1 on a bad value. */
static int
parse_special(int ch, struct bench_req *rq, const char **threads)
{
	switch (ch) {
	case O_THREADS:
		*threads = optarg;
		return 0;
	case O_SHIFT:	/* the value is optional: another node, picked per phase */
		rq->reader_shift = 1;
		rq->reader_shift_auto = optarg == NULL;
		return optarg ? opt_parse_uint(optarg, 0, UINT32_MAX, NULL, &rq->reader_shift) : 0;
	case O_AT:
		return parse_at(optarg, rq);
	case O_IOENGINE:
		if (strcmp(optarg, "psync") && strcmp(optarg, "io_uring") && strcmp(optarg, "libaio"))
			return -1;
		rq->ioengine = optarg;
		return 0;
	case O_FALLOC:
		if (strcmp(optarg, "none") && strcmp(optarg, "native"))
			return -1;
		rq->fallocate = strcmp(optarg, "native") == 0;
		return 0;
	case O_PAGES:
		if (strcmp(optarg, "huge") && strcmp(optarg, "4k"))
			return -1;
		rq->small_pages = strcmp(optarg, "4k") == 0;
		return 0;
	case O_CPUBIND:
		if (strcmp(optarg, "none") && strcmp(optarg, "core"))
			return -1;
		rq->cpu_bind = strcmp(optarg, "core") == 0;
		return 0;
	case O_SSIZE:	/* Lustre takes multiples of 64 KiB */
		return bench_parse_size(optarg, &rq->stripe_size) < 0 || rq->stripe_size == 0 ||
		    rq->stripe_size % 65536 ? -1 : 0;
	}
	return -1;
}

/* Options into req; 0, or -1 on a usage error (message printed). */
static int
parse_bench(struct ctl *ctl, int argc, char **argv, struct bench_req *rq)
{
	const char *threads = "1", *kind = NULL;
	char err[256];
	int ch, r;

	rq->lease_s = 10;
	rq->seed = 1;
	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		if (ch == '?')		/* reported by opt_next */
			return -1;
		r = opt_store(bench_vals, nitems(bench_vals), ch, optarg, rq);
		if (r < 0 || (r == 0 && parse_special(ch, rq, &threads) < 0))
			goto badval;
		if (ch == O_RWMIX && rq->rwmix == 0) {
			/* 0 is "not given" in the plan and on the wire (50 %) */
			fprintf(stderr, "knobctl bench: --rwmix 0 is all writes: "
			    "use rand-write\n");
			return -1;
		}
	}
	/* KIND is the first operand; anything else goes to the external tool */
	if (optind < argc)
		kind = argv[optind++];
	for (; optind < argc; optind++)
		strvec_push(&rq->ext_args, argv[optind]);
	if (kind == NULL) {
		fprintf(stderr, "knobctl bench: no KIND given (see knobctl bench --help)\n");
		return -1;
	}
	if (bench_expand_kinds(kind, &rq->kinds, err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl bench: %s\n", err);
		return -1;
	}
	if (rq->ext_args.n && !strvec_contains(&rq->kinds, "fio") &&
	    !strvec_contains(&rq->kinds, "ior") && !strvec_contains(&rq->kinds, "mdtest")) {
		fprintf(stderr, "knobctl bench: unexpected argument '%s'\n", rq->ext_args.v[0]);
		return -1;
	}
	for (size_t i = 0; i < rq->kinds.n; i++)
		if (ext_args_check(rq->kinds.v[i], rq->ext_args.v, rq->ext_args.n, err,
		    sizeof(err)) < 0) {
			fprintf(stderr, "knobctl bench: %s\n", err);
			return -1;
		}
	if (bench_parse_sweep(threads, &rq->threads, &rq->nthreads, err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl bench: %s\n", err);
		return -1;
	}
	if (rq->dir == NULL || rq->dir[0] != '/') {
		fprintf(stderr, "knobctl bench: --dir must be an absolute directory\n");
		return -1;
	}
	if (rq->size == 0)
		rq->size = 256ull << 20;
	rq->files_per_dir = bench_files_per_dir(rq->files_per_dir);
	if (rq->segments > 1 && !rq->shared) {
		fprintf(stderr, "knobctl bench: --segments needs --shared\n");
		return -1;
	}
	if (rq->rwmix && !strvec_contains(&rq->kinds, "rand-rw")) {
		fprintf(stderr, "knobctl bench: --rwmix applies to rand-rw\n");
		return -1;
	}
	if (bench_plan_check(rq, err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl bench: %s\n", err);
		return -1;
	}
	return 0;
badval:
	fprintf(stderr, "knobctl bench: bad value '%s'\n", optarg);
	return -1;
}

/* The results store of a bench run: its database and heartbeat. */
struct store {
	sqlite3 *db;
	char path[4096];
	struct results_hb *hb;
	int failed;		/* a write failed: the run is not all stored */
};

/* Results store hooks: the run's row before the first phase (and the
 * heartbeat from then on), each phase in its own transaction as it
 * finishes. */
static void
store_start(void *arg, json_object *doc)
{
	struct store *s = arg;

	if (results_run_begin(s->db, doc) == 0)
		s->hb = results_heartbeat_start(s->path, js_str(doc, "run_id"),
		    RESULTS_HEARTBEAT_S);
	else
		s->failed = 1;
}

static void
store_phase(void *arg, json_object *doc, json_object *ph)
{
	struct store *s = arg;
	json_object *phases;

	if (json_object_object_get_ex(doc, "phases", &phases) &&
	    results_phase_add(s->db, js_str(doc, "run_id"),
	    (int64_t)json_object_array_length(phases), ph) != 0)
		s->failed = 1;
}

/* A run that is not all in the database fails (3): nothing says so later
 * but a run missing from `results list`. */
static int
store_end(struct store *s, json_object *doc, int rc)
{
	if (doc && !s->failed && results_run_end(s->db, doc) == 0) {
		json_object_object_add(doc, "db", json_object_new_string(s->path));
		return rc;
	}
	fprintf(stderr, "knobctl bench: run %s is not all stored in the results database %s "
	    "(see above)\n", doc ? js_str(doc, "run_id") : "?", s->path);
	return 3;
}

/* Run the bench and store it as it goes.  A results database that cannot
 * be opened runs nothing (3): hours of figures would be lost. */
int
bench_run_stored(struct ctl *ctl, const struct strvec *names, struct bench_req *rq,
    json_object **doc)
{
	struct store s = { 0 };
	json_object *info;
	int rc;

	*doc = NULL;
	results_db_path(ctl, s.path, sizeof(s.path));
	if ((s.db = results_open(ctl)) == NULL) {
		fprintf(stderr, "knobctl bench: nothing run: it could not be stored\n");
		return 3;
	}
	info = runinfo_gather(ctl, names);
	if (ctl->play_info) {
		json_object_object_foreach(ctl->play_info, k, v)
			json_object_object_add(info, k, json_object_get(v));
	}
	rq->info = info;
	rq->on_start = store_start;
	rq->on_phase = store_phase;
	rq->hook_arg = &s;
	rc = bench_run(ctl, names, rq, doc);
	results_heartbeat_stop(s.hb);
	rc = store_end(&s, *doc, rc);
	sqlite3_close(s.db);
	json_object_put(info);
	rq->info = NULL;
	return rc;
}

/* bench_run_stored with SIGINT, SIGTERM and SIGHUP caught (stop_sig.h):
 * the first stops the run cleanly (rq->stop), the second at once
 * (ctl->interrupt); exit 128 + the first's number when it stopped the run
 * (it is marked "interrupted").  Under a play, which catches them itself
 * (ctl->interrupt set: its signal), its signal stops the run cleanly too,
 * waiting ctl->stop_wait_s for the nodes' answers, and its second cuts
 * the run off (the play's rollback runs next). */
static int
bench_run_caught(struct ctl *ctl, const struct strvec *names, struct bench_req *rq,
    json_object **doc)
{
	const atomic_int *play_sig = ctl->interrupt;
	struct stop_sig ss;
	int rc, sig;

	if (play_sig) {
		rq->stop = play_sig;
		rq->stop_wait_s = ctl->stop_wait_s;
		ctl->interrupt = stop_sig_now();	/* the play's second signal */
		rc = bench_run_stored(ctl, names, rq, doc);
		ctl->interrupt = play_sig;
		rq->stop = NULL;
		return rc;
	}
	stop_sig_catch(&ss, 0);
	rq->stop = stop_sig_first();
	ctl->interrupt = stop_sig_now();
	rc = bench_run_stored(ctl, names, rq, doc);
	sig = atomic_load(stop_sig_first());
	stop_sig_restore(&ss);
	ctl->interrupt = NULL;
	rq->stop = NULL;
	/* a signal after the run's end stopped nothing: the run is whole */
	return sig && *doc && json_object_object_get_ex(*doc, "interrupted", NULL) ? 128 + sig :
	    rc;
}

int
bench_parse_argv(struct ctl *ctl, int argc, char **argv, struct bench_req *rq)
{
	memset(rq, 0, sizeof(*rq));
	if (opt_prescan(ctl, &cmd_bench_entry, argc, argv) != 0)
		return -1;
	return parse_bench(ctl, argc, argv, rq);
}

int
cmd_bench(struct ctl *ctl, int argc, char **argv)
{
	struct bench_req rq;
	struct strvec names = { 0 };
	json_object *doc = NULL;
	size_t len = 0;
	int rc;

	memset(&rq, 0, sizeof(rq));
	if (parse_bench(ctl, argc, argv, &rq) < 0) {
		bench_req_free(&rq);
		return 2;
	}
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	rq.command = xcalloc(len + 16, 1);
	strcpy(rq.command, "knobctl");
	for (int i = 0; i < argc; i++) {
		strcat(rq.command, " ");
		strcat(rq.command, argv[i]);
	}
	if (ctl_targets(ctl, &names) < 0) {
		bench_req_free(&rq);
		return 2;
	}
	rc = bench_run_caught(ctl, &names, &rq, &doc);
	if (doc && ctl->json)
		output_text(ctl->out, doc, 0);
	else if (doc)
		bench_print_table(ctl->out, doc, ctl->units_decimal);
	output_flush(ctl->out);
	json_object_put(doc);
	strvec_free(&names);
	bench_req_free(&rq);
	return rc;
}

const struct cmd_entry cmd_bench_entry = {
	"bench", "KIND --dir DIR [-- TOOL-ARGS]", "one coordinated benchmark phase, a composite or a thread sweep",
	CMD_NODES | CMD_FANOUT, bench_opts, cmd_bench,
	"kinds: seq-write seq-read rand-write rand-read rand-rw md-create md-stat md-read\n"
	"       md-remove md-mkdir md-dirstat md-rmdir\n"
	"       fio ior mdtest (external tools; TOOL-ARGS after --; knob puts their files in\n"
	"       DIR/knob.<phase>/ and refuses path options: fio --directory --filename\n"
	"       --filename_format --opendir --output --write_*_log, ior -o -f -O testFile=,\n"
	"       mdtest -d -x)\n"
	"       seq (= seq-write,seq-read on the same files)  rand (= rand-write,rand-read)\n"
	"       md (= md-create,md-stat,md-read,md-remove)  mddir (= md-mkdir,md-dirstat,\n"
	"       md-rmdir)  all  or a comma list\n"
	"Every node stays connected for the whole run: --fanout N bounds the TLS handshakes in flight.\n"
	"Sizes are binary: 4k = 4 KiB, 16m = 16 MiB, 2g = 2 GiB.",
};
