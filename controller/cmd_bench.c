/* knobctl bench KIND -w NODESET --dir D ...: one coordinated phase, a
 * composite (seq = seq-write then seq-read on the same files; rand;
 * md = create, stat, read, remove; all) or a thread sweep; prints the table
 * (or one JSON document) and stores the run in the results database.
 * knobctl results list | show RUN | compare A B. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_ctl.h"
#include "log.h"
#include "util.h"

static void
bench_usage(FILE *f)
{
	fprintf(f,
	    "usage: knobctl bench KIND -w NODESET [-x NODESET] --dir DIR [options] [-- TOOL-ARGS]\n"
	    "kinds: seq-write seq-read rand-write rand-read md-create md-stat md-read md-remove\n"
	    "       fio ior mdtest (external tools; TOOL-ARGS after --)\n"
	    "       seq (= seq-write,seq-read on the same files)  rand (= rand-write,rand-read)\n"
	    "       md (= md-create,md-stat,md-read,md-remove)  all  or a comma list\n"
	    "options:\n"
	    "  --threads LIST      1,2,4 or 1..1024 (powers of two); round-robin over the nodes\n"
	    "  --bs SIZE           block size (default 1m, 4k for rand-*)\n"
	    "  --size SIZE         bytes per thread (N-to-N) or per rank segment (--shared); default 256m\n"
	    "  --shared            N-to-1: disjoint segments of one shared file\n"
	    "  --direct            O_DIRECT with aligned buffers\n"
	    "  --fsync             fsync before close, inside the timing\n"
	    "  --stonewall S       stop after S seconds, then every thread on every node runs\n"
	    "                      on to the largest count of any (IOR wear-out)\n"
	    "  --files-per-dir N   md-*: files per directory (default 1024)\n"
	    "  --files N           md-*: files per thread (default = files per dir)\n"
	    "  --files-total N     md-*: fixed total of files split over the threads\n"
	    "  --write-size SIZE   md-create/md-read: bytes per file (mdtest -w/-e)\n"
	    "  --drop-caches       drop the page cache before read phases\n"
	    "  --reader-shift[=N]  read what rank r+N wrote (default 1 = the next node)\n"
	    "  --rate-iops N       throttle each thread\n"
	    "  --test-rate-iops N  (tests) throttle each thread on agents run with --test-hooks\n"
	    "  --lease S           agents abort when the controller is silent S s (default 10)\n"
	    "  --keep              leave the files in DIR/knob.<id>/ afterwards\n"
	    "  --tool PATH         external tool binary; --ext-timeout S (default 3600)\n"
	    "  --seed N            random offsets seed\n");
}

static int
parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (end == s || *end || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Options into req; 0, or -1 on a usage error (message printed). */
static int
parse_bench(int argc, char **argv, struct bench_req *rq, const char **w, const char **x)
{
	enum { O_DIR = 256, O_THREADS, O_BS, O_SIZE, O_SHARED, O_DIRECT, O_FSYNC, O_STONEWALL,
	    O_FPD, O_FILES, O_FTOTAL, O_WSIZE, O_DROP, O_SHIFT, O_KEEP, O_RATE, O_LEASE,
	    O_TOOL, O_EXTTO, O_SEED, O_TRATE, O_HELP };
	static const struct option opts[] = {
		{ "nodes", required_argument, NULL, 'w' },
		{ "exclude", required_argument, NULL, 'x' },
		{ "dir", required_argument, NULL, O_DIR },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "bs", required_argument, NULL, O_BS },
		{ "size", required_argument, NULL, O_SIZE },
		{ "shared", no_argument, NULL, O_SHARED },
		{ "direct", no_argument, NULL, O_DIRECT },
		{ "fsync", no_argument, NULL, O_FSYNC },
		{ "stonewall", required_argument, NULL, O_STONEWALL },
		{ "files-per-dir", required_argument, NULL, O_FPD },
		{ "files", required_argument, NULL, O_FILES },
		{ "files-total", required_argument, NULL, O_FTOTAL },
		{ "write-size", required_argument, NULL, O_WSIZE },
		{ "drop-caches", no_argument, NULL, O_DROP },
		{ "reader-shift", optional_argument, NULL, O_SHIFT },
		{ "keep", no_argument, NULL, O_KEEP },
		{ "rate-iops", required_argument, NULL, O_RATE },
		{ "test-rate-iops", required_argument, NULL, O_TRATE },
		{ "lease", required_argument, NULL, O_LEASE },
		{ "tool", required_argument, NULL, O_TOOL },
		{ "ext-timeout", required_argument, NULL, O_EXTTO },
		{ "seed", required_argument, NULL, O_SEED },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *threads = "1", *kind = NULL;
	char err[256];
	uint64_t v;
	int ch;

	rq->lease_s = 10;
	rq->seed = 1;
	while ((ch = getopt_long(argc, argv, "w:x:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'w': *w = optarg; break;
		case 'x': *x = optarg; break;
		case O_DIR: rq->dir = optarg; break;
		case O_THREADS: threads = optarg; break;
		case O_BS:
			if (bench_parse_size(optarg, &rq->bs) < 0 || rq->bs == 0)
				goto badval;
			break;
		case O_SIZE:
			if (bench_parse_size(optarg, &rq->size) < 0 || rq->size == 0)
				goto badval;
			break;
		case O_WSIZE:
			if (bench_parse_size(optarg, &rq->write_size) < 0)
				goto badval;
			break;
		case O_SHARED: rq->shared = 1; break;
		case O_DIRECT: rq->direct = 1; break;
		case O_FSYNC: rq->fsync = 1; break;
		case O_DROP: rq->drop_caches = 1; break;
		case O_KEEP: rq->keep = 1; break;
		case O_STONEWALL:
			if (parse_u32(optarg, &rq->stonewall_s) < 0)
				goto badval;
			break;
		case O_FPD:
			if (parse_u32(optarg, &rq->files_per_dir) < 0 || rq->files_per_dir == 0)
				goto badval;
			break;
		case O_FILES:
			if (bench_parse_size(optarg, &rq->md_files) < 0 || rq->md_files == 0)
				goto badval;
			break;
		case O_FTOTAL:
			if (bench_parse_size(optarg, &rq->files_total) < 0 || rq->files_total == 0)
				goto badval;
			break;
		case O_SHIFT:
			rq->reader_shift = 1;
			if (optarg && parse_u32(optarg, &rq->reader_shift) < 0)
				goto badval;
			break;
		case O_RATE:
			if (parse_u32(optarg, &rq->rate_iops) < 0)
				goto badval;
			break;
		case O_TRATE:
			if (parse_u32(optarg, &rq->test_rate_iops) < 0)
				goto badval;
			break;
		case O_LEASE:
			if (parse_u32(optarg, &rq->lease_s) < 0 || rq->lease_s == 0)
				goto badval;
			break;
		case O_EXTTO:
			if (parse_u32(optarg, &rq->ext_timeout_s) < 0)
				goto badval;
			break;
		case O_TOOL: rq->ext_tool = optarg; break;
		case O_SEED:
			if (bench_parse_size(optarg, &v) < 0)
				goto badval;
			rq->seed = v;
			break;
		case 'h':
		case O_HELP:
			bench_usage(stdout);
			exit(0);
		default:
			bench_usage(stderr);
			return -1;
		}
	}
	/* KIND is the first operand; anything else goes to the external tool */
	if (optind < argc)
		kind = argv[optind++];
	for (; optind < argc; optind++)
		strvec_push(&rq->ext_args, argv[optind]);
	if (kind == NULL) {
		fprintf(stderr, "knobctl bench: no KIND given\n");
		bench_usage(stderr);
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
	if (rq->files_per_dir == 0)
		rq->files_per_dir = 1024;
	if (rq->bs && rq->size % rq->bs) {
		fprintf(stderr, "knobctl bench: --size must be a multiple of --bs\n");
		return -1;
	}
	return 0;
badval:
	fprintf(stderr, "knobctl bench: bad value '%s'\n", optarg);
	return -1;
}

int
cmd_bench(struct ctl *ctl, int argc, char **argv)
{
	struct bench_req rq;
	struct strvec names = { 0 };
	const char *w = NULL, *x = NULL;
	json_object *doc = NULL;
	sqlite3 *db;
	size_t len = 0;
	int rc;

	memset(&rq, 0, sizeof(rq));
	if (parse_bench(argc, argv, &rq, &w, &x) < 0) {
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
	if (ctl_targets(ctl, w, x, &names) < 0) {
		bench_req_free(&rq);
		return 2;
	}
	rc = bench_run(ctl, &names, &rq, &doc);
	if ((db = results_open(ctl)) != NULL) {
		char path[4096];

		if (results_store(db, doc) == 0)
			json_object_object_add(doc, "db", json_object_new_string(
			    results_db_path(ctl, path, sizeof(path))));
		sqlite3_close(db);
	}
	if (ctl->json)
		fprintf(ctl->out, "%s\n", json_object_to_json_string_ext(doc,
		    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	else
		bench_print_table(ctl->out, doc);
	fflush(ctl->out);
	json_object_put(doc);
	strvec_free(&names);
	bench_req_free(&rq);
	return rc;
}
