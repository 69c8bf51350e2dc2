/* Benchmark unit tests: thread sweeps, sizes, kinds, round-robin placement,
 * the aggregate formula with skewed agent clocks, clock offset samples,
 * the fio / ior / mdtest parsers on real output (tests/fixtures/), the MPI
 * hostfile, and refusal of unsafe specs. */
#include <check.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "bench.h"
#include "bench_ctl.h"
#include "bench_defaults.h"
#include "bench_run.h"
#include "extargs.h"
#include "hist.h"
#include "opt.h"
#include "util.h"

/* Read tests/fixtures/<rel> (found next to this source file). */
static char *
fixture(const char *rel)
{
	char src[] = __FILE__, path[4096], *buf = NULL;
	const char *env = getenv("KNOB_SRC");

	if (env)
		snprintf(path, sizeof(path), "%s/tests/fixtures/%s", env, rel);
	else
		snprintf(path, sizeof(path), "%s/fixtures/%s", dirname(src), rel);
	ck_assert_msg(read_file_bounded(path, 1 << 20, &buf, NULL) == 0, "fixture %s", path);
	return buf;
}

START_TEST(t_sweep)
{
	uint32_t *v;
	size_t n;
	char err[256];
	static const char *const bad[] = { "0", "4..2", "a", "", "1..", "..4", "2x", "1..2000000" };

	ck_assert_int_eq(bench_parse_sweep("1,2,4", &v, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(v[2], 4);
	free(v);
	ck_assert_int_eq(bench_parse_sweep("1..1024", &v, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 11);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(v[i], 1u << i);
	free(v);
	ck_assert_int_eq(bench_parse_sweep("3..24,100", &v, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(v[0], 3);
	ck_assert_uint_eq(v[3], 24);
	ck_assert_uint_eq(v[4], 100);
	free(v);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(bench_parse_sweep(bad[i], &v, &n, err, sizeof(err)) < 0,
		    "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(t_sizes_kinds)
{
	uint64_t v;
	struct strvec k = { 0 };
	char err[256];

	ck_assert_int_eq(bench_parse_size("4k", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(bench_parse_size("8M", &v), 0);
	ck_assert_uint_eq(v, 8u << 20);
	ck_assert_int_eq(bench_parse_size("128G", &v), 0);
	ck_assert_uint_eq(v, 128ull << 30);
	ck_assert_int_eq(bench_parse_size("4KiB", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(bench_parse_size("512", &v), 0);
	ck_assert_uint_eq(v, 512);
	ck_assert_int_eq(bench_parse_size("4q", &v), -1);
	ck_assert_int_eq(bench_parse_size("-1", &v), -1);
	ck_assert_int_eq(bench_parse_size("99999999999T", &v), -1);

	ck_assert_int_eq(bench_expand_kinds("seq", &k, err, sizeof(err)), 0);
	ck_assert_uint_eq(k.n, 2);
	ck_assert_str_eq(k.v[0], "seq-write");
	ck_assert_str_eq(k.v[1], "seq-read");
	strvec_free(&k);
	ck_assert_int_eq(bench_expand_kinds("md,rand-read", &k, err, sizeof(err)), 0);
	ck_assert_uint_eq(k.n, 5);
	ck_assert_str_eq(k.v[0], "md-create");
	ck_assert_str_eq(k.v[3], "md-remove");
	ck_assert_str_eq(k.v[4], "rand-read");
	strvec_free(&k);
	ck_assert_int_eq(bench_expand_kinds("seq-wirte", &k, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "seq-wirte"));
	strvec_free(&k);
}
END_TEST

START_TEST(t_placement)
{
	uint32_t r[16];
	size_t total = 0;

	/* 8 threads on 4 nodes: 2 each, round-robin */
	for (size_t i = 0; i < 4; i++) {
		size_t n = bench_place(8, 4, i, r);
		ck_assert_uint_eq(n, 2);
		ck_assert_uint_eq(r[0], i);
		ck_assert_uint_eq(r[1], i + 4);
		total += n;
	}
	ck_assert_uint_eq(total, 8);
	/* 2 threads on 4 nodes: nodes 0 and 1 only */
	ck_assert_uint_eq(bench_nodes_used(2, 4), 2);
	ck_assert_uint_eq(bench_place(2, 4, 0, r), 1);
	ck_assert_uint_eq(bench_place(2, 4, 1, r), 1);
	ck_assert_uint_eq(r[0], 1);
	ck_assert_uint_eq(bench_place(2, 4, 2, r), 0);
	ck_assert_uint_eq(bench_place(2, 4, 3, r), 0);
	/* 5 on 2: 3 + 2 */
	ck_assert_uint_eq(bench_place(5, 2, 0, r), 3);
	ck_assert_uint_eq(r[2], 4);
	ck_assert_uint_eq(bench_place(5, 2, 1, r), 2);
	ck_assert_uint_eq(bench_nodes_used(1024, 4), 4);
}
END_TEST

/* Reader shift against round-robin placement: the ranks left reading
 * their own node's data, and the shift picked when none is given: one
 * that leaves none whenever some shift does (brute force over 1..T-1);
 * the warning's text, with "1 node" (not "1 nodes"). */
START_TEST(t_reader_shift)
{
	char *w;

	ck_assert_uint_eq(bench_shift_own(4, 2, 1), 0);
	ck_assert_uint_eq(bench_shift_own(3, 2, 1), 1);	/* rank 2 reads rank 0: node01 */
	ck_assert_uint_eq(bench_shift_own(4, 2, 2), 4);	/* a multiple of the nodes */
	ck_assert_uint_eq(bench_shift_own(4, 1, 1), 4);	/* one node */
	ck_assert_uint_eq(bench_shift_own(4, 3, 1), 1);	/* rank 3 reads rank 0: node01 */
	ck_assert_uint_eq(bench_shift_auto(4, 3), 2);
	ck_assert_uint_eq(bench_shift_own(4, 3, 2), 0);
	ck_assert_uint_eq(bench_shift_auto(3, 2), 1);	/* none would do */
	w = bench_shift_warning(1, 4, 4, 1);
	ck_assert_str_eq(w, "reader shift 1: 4 of 4 ranks (round-robin on 1 node) read what their "
	    "own node wrote, which can come from its page cache");
	free(w);
	w = bench_shift_warning(1, 1, 3, 2);
	ck_assert_str_eq(w, "reader shift 1: 1 of 3 ranks (round-robin on 2 nodes) read what their "
	    "own node wrote, which can come from its page cache");
	free(w);
	for (uint32_t t = 1; t <= 24; t++)
		for (size_t n = 1; n <= t && n <= 8; n++) {
			uint32_t a = bench_shift_auto(t, n);
			int some = 0;

			for (uint32_t s = 1; s < t; s++)
				some |= bench_shift_own(t, n, s) == 0;
			ck_assert_msg(a >= 1 && (a < t || t == 1), "%u threads, %zu nodes: %u", t, n, a);
			ck_assert_msg(!some || bench_shift_own(t, n, a) == 0,
			    "%u threads on %zu nodes: shift %u leaves %u on their node", t, n, a,
			    bench_shift_own(t, n, a));
		}
}
END_TEST

/* One node's result in its own (skewed) clock: threads[] given in
 * controller seconds, shifted by off_s. */
static Knob__PhaseResult *
mkres(const char *node, double off_s, size_t nt, const double *start, const double *end,
    uint64_t bytes_each, uint64_t lat_ns, uint64_t nlat)
{
	Knob__PhaseResult *r = calloc(1, sizeof(*r));
	struct hist *h = malloc(sizeof(*h));

	knob__phase_result__init(r);
	r->node = (char *)(uintptr_t)node;
	r->ok = 1;
	r->n_threads = nt;
	r->threads = calloc(nt, sizeof(*r->threads));
	hist_init(h);
	for (uint64_t i = 0; i < nlat; i++)
		hist_add(h, lat_ns);
	for (size_t i = 0; i < nt; i++) {
		Knob__ThreadResult *t = calloc(1, sizeof(*t));

		knob__thread_result__init(t);
		t->rank = (uint32_t)i;
		t->bytes = bytes_each;
		t->ops = bytes_each >> 20;
		t->start_ns = (uint64_t)llround((start[i] + off_s) * 1e9);
		t->end_ns = (uint64_t)llround((end[i] + off_s) * 1e9);
		r->threads[i] = t;
		r->bytes += t->bytes;
		r->ops += t->ops;
		if (r->start_ns == 0 || t->start_ns < r->start_ns)
			r->start_ns = t->start_ns;
		if (t->end_ns > r->end_ns)
			r->end_ns = t->end_ns;
	}
	r->latency = malloc(sizeof(*r->latency));
	hist_to_proto(h, r->latency);
	free(h);
	return r;
}

static void
freeres(Knob__PhaseResult *r)
{
	for (size_t i = 0; i < r->n_threads; i++)
		free(r->threads[i]);
	free(r->threads);
	hist_proto_free(r->latency);
	free(r->latency);
	free(r);
}

START_TEST(t_aggregate_skewed_clocks)
{
	/* controller timeline: A runs [1000, 1002], B [1000.5, 1004]; A's clock
	 * is 5 s ahead, B's 3 s behind.  1 GB per thread, 2 threads each. */
	const double sa[] = { 1000.0, 1000.0 }, ea[] = { 1002.0, 1002.0 };
	const double sb[] = { 1000.5, 1000.5 }, eb[] = { 1004.0, 1004.0 };
	Knob__PhaseResult *a = mkres("A", 5.0, 2, sa, ea, 1000000000, 1000, 100);
	Knob__PhaseResult *b = mkres("B", -3.0, 2, sb, eb, 1000000000, 3000, 100);
	Knob__PhaseResult idle = KNOB__PHASE_RESULT__INIT;
	const Knob__PhaseResult *res[3] = { a, b, &idle };
	int64_t off[3] = { 5000000000ll, -3000000000ll, 0 };
	struct bench_agg ag;
	double fd;

	idle.ok = 1;
	idle.start_ns = idle.end_ns = 1;	/* an MPI peer that did nothing */
	ck_assert_int_eq(bench_aggregate(res, off, 3, 0, &ag), 0);
	ck_assert_uint_eq(ag.bytes, 4000000000ull);
	ck_assert_double_eq_tol(ag.elapsed_s, 4.0, 1e-6);
	ck_assert_double_eq_tol(ag.rate, 1e9, 1);
	ck_assert_double_eq_tol(ag.last_done_rate, ag.rate, 1e-6);
	ck_assert_double_eq_tol(ag.spread_s, 0.5, 1e-6);
	/* first done at 1002: A all 2 GB, B 1.5/3.5 of its 2 GB */
	fd = (2e9 + 2e9 * 1.5 / 3.5) / 2.0;
	ck_assert_double_eq_tol(ag.first_done_rate, fd, 1);
	/* merged histograms: half 1 us, half 3 us */
	ck_assert_uint_eq(ag.nlat, 200);
	ck_assert_double_le(fabs((double)ag.p50 - 1000) / 1000, 0.01);
	ck_assert_double_le(fabs((double)ag.p99 - 3000) / 3000, 0.01);

	/* ignoring the skew would be wrong: with zero offsets it is not 1 GB/s */
	{
		int64_t zero[3] = { 0, 0, 0 };
		struct bench_agg bad;

		ck_assert_int_eq(bench_aggregate(res, zero, 3, 0, &bad), 0);
		ck_assert_double_gt(fabs(bad.rate - 1e9), 1e8);
	}
	/* metadata unit: ops */
	ck_assert_int_eq(bench_aggregate(res, off, 3, 1, &ag), 0);
	ck_assert_double_eq_tol(ag.rate, (double)ag.ops / 4.0, 1e-6);
	/* nobody has timing */
	{
		const Knob__PhaseResult *none[1] = { NULL };
		ck_assert_int_eq(bench_aggregate(none, off, 1, 0, &ag), -1);
	}
	freeres(a);
	freeres(b);
}
END_TEST

/* One cache warning case: what, fs, bytes, RAM KiB, pagepool, flags. */
static int
cw(char *w, size_t len, int what, const char *fs, uint64_t bytes, uint64_t mem_kb,
    uint64_t pool, int direct, int fsync, int drop)
{
	struct bench_cache_in in = {
		.what = what, .fs_type = fs, .bytes = bytes, .mem_kb = mem_kb, .pagepool = pool,
		.direct = direct, .fsync = fsync, .drop_caches = drop,
	};

	return bench_cache_warning(w, len, &in);
}

/* The cache warning, case by case: GPFS compares against the pagepool
 * only; tmpfs says the data is in memory whatever the flags; md-read and
 * buffered writes warn too; --drop-caches and O_DIRECT count. */
START_TEST(t_cache_warning)
{
	const uint64_t G = 1ull << 30;
	char w[256];

	/* GPFS, RAM 16 GiB, pagepool 4 GiB: 6 GiB read is under 2 x pagepool,
	 * although it is under RAM too: only the pagepool is named */
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "gpfs", 6 * G, 16 << 20, 4 * G, 0, 0, 0), 1);
	ck_assert_str_eq(w, "reads 6.00 GiB per node, under twice the node's GPFS pagepool "
	    "(4.00 GiB): this measures the GPFS cache (--drop-caches does not empty the pagepool)");
	/* 8 GiB on GPFS is enough even with 16 GiB of RAM (the page cache does not hold GPFS data) */
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "gpfs", 8 * G, 16 << 20, 4 * G, 0, 0, 0), 0);
	ck_assert_str_eq(w, "");
	/* GPFS: --drop-caches does not help, O_DIRECT does */
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "gpfs", G, 16 << 20, 4 * G, 0, 0, 1), 1);
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "gpfs", G, 16 << 20, 4 * G, 1, 0, 0), 0);
	/* GPFS buffered write into the pagepool; --fsync or O_DIRECT quiet it */
	ck_assert_int_eq(cw(w, sizeof(w), CW_WRITE, "gpfs", G, 16 << 20, 4 * G, 0, 0, 0), 1);
	ck_assert_str_eq(w, "writes 1.00 GiB per node, under twice the node's GPFS pagepool "
	    "(4.00 GiB): buffered without --fsync, this measures the pagepool");
	ck_assert_int_eq(cw(w, sizeof(w), CW_WRITE, "gpfs", G, 16 << 20, 4 * G, 0, 1, 0), 0);
	ck_assert_int_eq(cw(w, sizeof(w), CW_WRITE, "gpfs", G, 16 << 20, 4 * G, 1, 0, 0), 0);
	/* GPFS with the pagepool unknown: nothing to compare against */
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "gpfs", G, 16 << 20, 0, 0, 0, 0), 0);
	/* tmpfs: in memory, whatever the size and the flags */
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "tmpfs", 64 * G, 1 << 20, 0, 1, 1, 1), 1);
	ck_assert_str_eq(w, "reads 64.00 GiB per node on tmpfs: the data lives in memory: this "
	    "measures memory, not storage");
	ck_assert_int_eq(cw(w, sizeof(w), CW_WRITE, "tmpfs", 4 << 20, 1 << 20, 0, 0, 1, 0), 1);
	ck_assert_str_eq(w, "writes 4.0 MiB per node on tmpfs: the data lives in memory: this "
	    "measures memory, not storage");
	ck_assert_int_eq(cw(w, sizeof(w), CW_MDREAD, "tmpfs", 0, 1 << 20, 0, 0, 0, 1), 1);
	/* another file system: RAM; --drop-caches or O_DIRECT quiet reads */
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "xfs", 4 << 20, 1 << 20, 4 * G, 0, 0, 0), 1);
	ck_assert_str_eq(w, "reads 4.0 MiB per node, under twice the node's RAM (1.00 GiB): "
	    "this measures the page cache (use --drop-caches or --direct)");
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "xfs", 4 << 20, 1 << 20, 0, 0, 0, 1), 0);
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "xfs", 4 << 20, 1 << 20, 0, 1, 0, 0), 0);
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "xfs", 32 * G, 16 << 20, 0, 0, 0, 0), 0);
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "", G, 16 << 20, 0, 0, 0, 0), 1);
	/* buffered writes under twice RAM; --fsync or O_DIRECT quiet them */
	ck_assert_int_eq(cw(w, sizeof(w), CW_WRITE, "ext4", G, 16 << 20, 0, 0, 0, 0), 1);
	ck_assert_str_eq(w, "writes 1.00 GiB per node, under twice the node's RAM (16.00 GiB): "
	    "buffered without --fsync, this measures the page cache (use --fsync or --direct)");
	ck_assert_int_eq(cw(w, sizeof(w), CW_WRITE, "ext4", G, 16 << 20, 0, 0, 1, 0), 0);
	ck_assert_int_eq(cw(w, sizeof(w), CW_WRITE, "ext4", G, 16 << 20, 0, 1, 0, 0), 0);
	/* --drop-caches does not make a buffered write honest */
	ck_assert_int_eq(cw(w, sizeof(w), CW_WRITE, "ext4", G, 16 << 20, 0, 0, 0, 1), 1);
	/* md-read right after md-create */
	ck_assert_int_eq(cw(w, sizeof(w), CW_MDREAD, "ext4", 3 << 20, 16 << 20, 0, 0, 0, 0), 1);
	ck_assert_str_eq(w, "md-read reads 3.0 MiB per node, under twice the node's RAM "
	    "(16.00 GiB): md-read right after md-create reads the page cache (use --drop-caches)");
	ck_assert_int_eq(cw(w, sizeof(w), CW_MDREAD, "ext4", 3 << 20, 16 << 20, 0, 0, 0, 1), 0);
	/* phases that neither read nor write data, and RAM unknown: nothing */
	ck_assert_int_eq(cw(w, sizeof(w), CW_NONE, "tmpfs", G, 16 << 20, 0, 0, 0, 0), 0);
	ck_assert_int_eq(cw(w, sizeof(w), CW_READ, "xfs", G, 0, 0, 0, 0, 0), 0);
}
END_TEST

/* A time-based read that wrapped over its 64 MiB: the caches were dropped
 * once, before the first pass, so --drop-caches does not quiet it and the
 * warning says why; O_DIRECT does; without the wrap the drop counts. */
START_TEST(t_cache_warning_wrapped)
{
	struct bench_cache_in in = {
		.what = CW_READ, .fs_type = "xfs", .bytes = 64 << 20, .mem_kb = 16 << 20,
		.drop_caches = 1, .wrapped = 1,
	};
	char w[256];

	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), &in), 1);
	ck_assert_str_eq(w, "reads 64.0 MiB per node, under twice the node's RAM (16.00 GiB): "
	    "the time-based run wrapped over data it had read after the one --drop-caches (in "
	    "prepare): every pass after the first reads the page cache (use --direct)");
	in.drop_caches = 0;
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), &in), 1);
	ck_assert_str_eq(w, "reads 64.0 MiB per node, under twice the node's RAM (16.00 GiB): "
	    "this measures the page cache (use --drop-caches or --direct)");
	in.direct = 1;
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), &in), 0);
	in.direct = 0;
	in.drop_caches = 1;
	in.wrapped = 0;
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), &in), 0);
	/* data of twice RAM does not stay cached, wrapped or not */
	in.wrapped = 1;
	in.bytes = 32ull << 30;
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), &in), 0);
}
END_TEST

/* First done measured: A's two threads run [0, 2] s and end first; B's
 * thread runs [0, 4] s but was paused from 0.5 s to 2.5 s, so at 2 s it
 * had done only what it did by 0.5 s (its checkpoints say 0.25 GB), not
 * the 0.5 GB an even pace would give. */
START_TEST(t_first_done_measured)
{
	const double sa[] = { 1000.0, 1000.0 }, ea[] = { 1002.0, 1002.0 };
	const double sb[] = { 1000.0 }, eb[] = { 1004.0 };
	Knob__PhaseResult *a = mkres("A", 0, 2, sa, ea, 1000000000, 1000, 1);
	Knob__PhaseResult *b = mkres("B", 2.0, 1, sb, eb, 1000000000, 1000, 1);
	const Knob__PhaseResult *res[2] = { a, b };
	int64_t off[2] = { 0, 2000000000ll };
	struct bench_agg ag;

	/* even pace (no measured figures): B counted at 2/4 of 1 GB */
	ck_assert_int_eq(bench_aggregate(res, off, 2, 0, &ag), 0);
	ck_assert(!ag.first_done_measured);
	ck_assert_double_eq_tol(ag.first_done_rate, (2e9 + 0.5e9) / 2.0, 1);
	/* measured: the moment is 1002 s on each node's own clock */
	a->first_done_ns = 1002000000000ull;
	b->first_done_ns = 1004000000000ull;
	for (size_t i = 0; i < 2; i++) {
		a->threads[i]->first_done_bytes = 1000000000;
		a->threads[i]->first_done_ops = 953;
	}
	b->threads[0]->first_done_bytes = 250000000;
	b->threads[0]->first_done_ops = 238;
	ck_assert_int_eq(bench_aggregate(res, off, 2, 0, &ag), 0);
	ck_assert(ag.first_done_measured);
	ck_assert_double_eq_tol(ag.first_done_s, 2.0, 1e-9);
	ck_assert_double_eq_tol(ag.first_done_rate, (2e9 + 0.25e9) / 2.0, 1);
	ck_assert_int_eq(bench_aggregate(res, off, 2, 1, &ag), 0);
	ck_assert_double_eq_tol(ag.first_done_rate, (953.0 * 2 + 238) / 2.0, 1e-6);
	freeres(a);
	freeres(b);
}
END_TEST

/* Checkpoint interpolation: 0 before the start, the total after the end,
 * linear between checkpoints, and flat across a pause: the op before the
 * gap is kept, so a thread stopped from 3.0 ms to 7.0 ms shows its count at
 * the stop all through the pause. */
START_TEST(t_checkpoints)
{
	const uint64_t I = BENCH_CKPT_NS;
	struct bench_ckpt *c = bench_ckpt_new(BENCH_CKPT_MEM);
	struct bench_thread t;
	uint64_t b, o, i;

	memset(&t, 0, sizeof(t));
	t.start_ns = 1000 * I;
	t.end_ns = 1200 * I;
	atomic_store(&t.bytes, 4096 * 160);
	atomic_store(&t.ops, 160);
	/* an op every I/2 up to 1050 I (100 ops), nothing until 1150 I,
	 * then an op every I/2 again (60 more) */
	for (i = 1; i <= 100; i++)			/* 1000.5 I .. 1050 I */
		bench_ckpt_op(c, 1000 * I + i * I / 2, i * 4096, i);
	for (i = 101; i <= 160; i++)			/* 1150.5 I .. 1180 I */
		bench_ckpt_op(c, 1150 * I + (i - 100) * I / 2, i * 4096, i);
	bench_ckpt_at(c, &t, 999 * I, &b, &o);
	ck_assert_uint_eq(o, 0);
	bench_ckpt_at(c, &t, 1020 * I + I / 4, &b, &o);	/* between two ops */
	ck_assert_uint_le(o > 40 ? o - 40 : 40 - o, 1);
	/* inside the pause: the count at the stop (100), not 100..101 spread
	 * over 100 I, and certainly not an even pace over the whole run */
	bench_ckpt_at(c, &t, 1100 * I, &b, &o);
	ck_assert_uint_eq(o, 100);
	ck_assert_uint_ge(b, 100 * 4096);	/* within the op under way */
	ck_assert_uint_lt(b, 101 * 4096);
	bench_ckpt_at(c, &t, 1150 * I + 5 * I, &b, &o);	/* after the pause */
	ck_assert_uint_le(o > 110 ? o - 110 : 110 - o, 1);
	bench_ckpt_at(c, &t, 1195 * I, &b, &o);	/* last checkpoint .. end */
	ck_assert_uint_ge(o, 159);
	bench_ckpt_at(c, &t, 1200 * I, &b, &o);
	ck_assert_uint_eq(o, 160);
	/* no checkpoints at all: linear over the run */
	bench_ckpt_at(NULL, &t, 1100 * I, &b, &o);
	ck_assert_uint_eq(o, 80);
	bench_ckpt_free(c);

	/* thinning keeps the table bounded and the interval grows */
	c = bench_ckpt_new(64 * 24);
	for (i = 0; i < 2000; i++)
		bench_ckpt_op(c, (i + 1) * I, i, i);
	ck_assert_uint_gt(bench_ckpt_interval(c), I);
	bench_ckpt_at(c, &t, 0, &b, &o);
	bench_ckpt_free(c);
}
END_TEST

/* The ior/mdtest launcher template. */
START_TEST(t_launcher)
{
	char a0[] = "/p/ior", a1[] = "-w", a2[] = "-o", a3[] = "/d/x";
	char *const cmd[] = { a0, a1, a2, a3, NULL };
	struct ext_launch v = { .tmpl = "", .args = "--mca btl '^openib' --display-map",
	    .np = "6", .hostfile = "/d/hf", .hosts = "n1,n2", .ppn = "3", .nnodes = "2" };
	struct strvec av = { 0 };
	char err[256], *j;
	size_t len = 0;

	ck_assert_int_eq(ext_launcher_argv(&v, cmd, &av, err, sizeof(err)), 0);
	for (size_t i = 0; i < av.n; i++)
		len += strlen(av.v[i]) + 1;
	j = calloc(len + 1, 1);
	for (size_t i = 0; i < av.n; i++)
		strcat(strcat(j, i ? " " : ""), av.v[i]);
	ck_assert_str_eq(j, "mpirun --allow-run-as-root --map-by node --bind-to none "
	    "--hostfile /d/hf -np 6 --mca btl ^openib --display-map /p/ior -w -o /d/x");
	free(j);
	strvec_free(&av);
	/* --cpu-bind core: a core per rank, round robin past the last core */
	v.bind = EXT_BIND_CORE;
	ck_assert_int_eq(ext_launcher_argv(&v, cmd, &av, err, sizeof(err)), 0);
	ck_assert_str_eq(av.v[4], "--bind-to");
	ck_assert_str_eq(av.v[5], "core:overload-allowed");
	strvec_free(&av);
	/* Slurm: srun with the node list */
	v.tmpl = "srun -N {nnodes} -n {np} --ntasks-per-node={ppn} --nodelist={hosts} {args} {cmd}";
	v.args = "";
	ck_assert_int_eq(ext_launcher_argv(&v, cmd, &av, err, sizeof(err)), 0);
	ck_assert_uint_eq(av.n, 11);
	ck_assert_str_eq(av.v[0], "srun");
	ck_assert_str_eq(av.v[2], "2");
	ck_assert_str_eq(av.v[6], "--nodelist=n1,n2");
	ck_assert_str_eq(av.v[7], "/p/ior");
	strvec_free(&av);
	/* no {cmd}; args without {args}; command substitution */
	v.tmpl = "mpiexec -n {np}";
	ck_assert_int_eq(ext_launcher_argv(&v, cmd, &av, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no {cmd}"));
	strvec_free(&av);
	v.tmpl = "mpiexec -n {np} {cmd}";
	v.args = "-genv X 1";
	ck_assert_int_eq(ext_launcher_argv(&v, cmd, &av, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no {args}"));
	strvec_free(&av);
	v.args = "$(reboot)";
	ck_assert_int_eq(ext_launcher_argv(&v, cmd, &av, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "command substitution"));
	strvec_free(&av);
}
END_TEST

START_TEST(t_offset_sample)
{
	/* sent at 100, back at 120, agent said 5000110: 5000000 ahead */
	ck_assert_int_eq(bench_offset_sample(100, 120, 5000110), 5000000);
	ck_assert_int_eq(bench_offset_sample(1000, 1010, 5), -1000);
}
END_TEST

START_TEST(t_parse_ior)
{
	struct ext_summary s;
	char err[256], *t;

	t = fixture("ior/ior-nn-write-read.txt");
	ck_assert_int_eq(ext_parse_ior_text(t, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(s.op[0].op, "write");
	ck_assert_double_eq_tol(s.op[0].bw_bytes, 1038.96 * 1048576, 1);
	ck_assert_double_eq_tol(s.op[0].iops, 1038.96, 1e-6);
	ck_assert_double_eq_tol(s.op[0].runtime_s, 0.13975, 1e-9);
	ck_assert_uint_eq(s.op[0].bytes, 128u << 20);
	ck_assert_uint_eq(s.op[0].ops, 128);
	ck_assert_str_eq(s.op[1].op, "read");
	ck_assert_double_eq_tol(s.op[1].bw_bytes, 30832.23 * 1048576, 1);
	free(t);

	t = fixture("ior/ior-random-4k.txt");
	ck_assert_int_eq(ext_parse_ior_text(t, &s, err, sizeof(err)), 0);
	ck_assert_double_eq_tol(s.op[0].iops, 95490.14, 1e-6);
	ck_assert_uint_eq(s.op[0].ops, 8192);
	ck_assert_double_eq_tol(s.op[1].iops, 434823.32, 1e-6);
	free(t);

	/* with summaryFormat=JSON the text output has no table: an error */
	t = fixture("ior/ior-n1-write-read.txt");
	ck_assert_int_eq(ext_parse_ior_text(t, &s, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "Summary"));
	free(t);
	t = fixture("ior/ior-n1-summary.json");
	ck_assert_int_eq(ext_parse_ior_json(t, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(s.op[0].op, "write");
	ck_assert_double_eq_tol(s.op[0].bw_bytes, 383.8749 * 1048576, 1);
	ck_assert_double_eq_tol(s.op[0].runtime_s, 0.3334, 1e-9);
	ck_assert_uint_eq(s.op[0].bytes, 128u << 20);
	ck_assert_uint_eq(s.op[0].ops, 128);
	ck_assert_double_eq_tol(s.op[1].bw_bytes, 39493.2258 * 1048576, 1);
	free(t);
	ck_assert_int_eq(ext_parse_ior_json("{\"tests\": []}", &s, err, sizeof(err)), -1);
}
END_TEST

START_TEST(t_parse_mdtest)
{
	struct ext_summary s;
	char err[256], *t;

	t = fixture("ior/mdtest-empty.txt");
	ck_assert_int_eq(ext_parse_mdtest_text(t, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n, 6);
	ck_assert_str_eq(s.op[0].op, "File creation");
	ck_assert_double_eq_tol(s.op[0].iops, 8517.069, 1e-6);
	ck_assert_uint_eq(s.op[0].ops, 4000);
	ck_assert_str_eq(s.op[1].op, "File stat");
	ck_assert_double_eq_tol(s.op[1].iops, 452961.414, 1e-6);
	ck_assert_str_eq(s.op[5].op, "Tree removal");
	ck_assert_double_eq_tol(s.op[5].iops, 108.808, 1e-6);
	free(t);
	t = fixture("ior/mdtest-4k.txt");
	ck_assert_int_eq(ext_parse_mdtest_text(t, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.op[2].op, "File read");
	ck_assert_double_eq_tol(s.op[2].iops, 162601.434, 1e-6);
	ck_assert_uint_eq(s.op[2].ops, 2000);
	free(t);
	ck_assert_int_eq(ext_parse_mdtest_text("mdtest: error\n", &s, err, sizeof(err)), -1);
}
END_TEST

#define IOR_HDR "Summary of all tests:\n" \
	"Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  " \
	"Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN reps " \
	"fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum\n"
#define IOR_ROW(op, mib, ops) op "  373.01  373.01  " mib "  0.00  95490.14  95490.14  " \
	ops "  0.00  0.08579  NA  NA  0  2  2  1  1  0  1  0  0  1 16777216  4096  32.0 " \
	"POSIX  0\n"
#define MDT_HDR "SUMMARY rate (in ops/sec): (of 1 iterations)\n" \
	"   Operation                     Max            Min           Mean        Std Dev\n" \
	"   ---------                     ---            ---           ----        -------\n"

/* Parse text with ior's (0), ior's JSON (1) or mdtest's (2) parser:
 * -1, and the message names the row and the bad token. */
static void
parse_fails(int which, const char *text, const char *row, const char *bad)
{
	struct ext_summary s;
	char err[256] = "";
	int rc = which == 0 ? ext_parse_ior_text(text, &s, err, sizeof(err)) :
	    which == 1 ? ext_parse_ior_json(text, &s, err, sizeof(err)) :
	    ext_parse_mdtest_text(text, &s, err, sizeof(err));

	ck_assert_msg(rc == -1, "parsed: %s", text);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_msg(strstr(err, row) && strstr(err, bad) &&
	    strstr(err, "is not a finite number"), "%s", err);
}

/* A summary figure that is not a finite number ("inf" or "nan", as a tool
 * prints for a phase of no measurable time) makes the tool's output
 * unparsable, naming the row and the figure: any of ior's rows, mdtest's
 * File rows (mdtest's Tree rows are left out).  Before, "inf" was taken as
 * the phase's bandwidth or rate and "nan" passed on. */
START_TEST(t_parse_nonfinite)
{
	struct ext_summary s;
	char err[256];

	parse_fails(0, IOR_HDR IOR_ROW("write", "inf", "95490.14") IOR_ROW("read", "1.0", "2.0"),
	    "write row: Mean(MiB)", "\"inf\"");
	parse_fails(0, IOR_HDR IOR_ROW("write", "373.01", "95490.14") IOR_ROW("read", "1.0", "nan"),
	    "read row: Mean(OPs)", "\"nan\"");
	parse_fails(0, IOR_HDR IOR_ROW("write", "-inf", "1e999"), "write row: Mean(MiB)", "-inf");
	parse_fails(1, "{\"summary\": [{\"operation\": \"write\", \"bwMeanMIB\": NaN, "
	    "\"OPsMean\": 1}]}", "ior: write: bwMeanMIB", "");
	parse_fails(1, "{\"summary\": [{\"operation\": \"read\", \"OPsMean\": \"inf\"}]}",
	    "ior: read: OPsMean", "");
	parse_fails(2, MDT_HDR "   File creation  1.0  1.0  inf  0.0\n", "File creation row: Mean",
	    "\"inf\"");
	parse_fails(2, MDT_HDR "   File stat  1.0  1.0  2.0  0.0\n   File read  nan  nan  nan  nan\n",
	    "File read row: Mean", "\"nan\"");
	/* the same rows with finite figures parse */
	ck_assert_int_eq(ext_parse_ior_text(IOR_HDR IOR_ROW("write", "373.01", "95490.14"), &s, err,
	    sizeof(err)), 0);
	ck_assert_double_eq_tol(s.op[0].bw_bytes, 373.01 * 1048576, 1);
	ck_assert_uint_eq(s.op[0].ops, 8192);
	ck_assert_int_eq(ext_parse_mdtest_text(MDT_HDR "   File creation  1.0  1.0  2.5  0.0\n",
	    &s, err, sizeof(err)), 0);
	ck_assert_double_eq_tol(s.op[0].iops, 2.5, 1e-9);
	/* mdtest's tree rows time a few directories, often at 0 s ("inf"):
	 * such a row is left out, the File rows stand */
	ck_assert_int_eq(ext_parse_mdtest_text("4 tasks, 40 files\n" MDT_HDR
	    "   File creation  1.0  1.0  2.5  0.0\n   Tree creation  inf  inf  inf  nan\n"
	    "   Tree removal  3.0  3.0  3.0  0.0\n", &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(s.op[0].op, "File creation");
	ck_assert_uint_eq(s.op[0].ops, 40);
	ck_assert_str_eq(s.op[1].op, "Tree removal");
}
END_TEST

START_TEST(t_parse_fio)
{
	struct ext_summary s;
	char err[256], *t;

	t = fixture("fio/randrw-2jobs.json");
	ck_assert_int_eq(ext_parse_fio_json(t, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(s.op[0].op, "read");
	ck_assert_uint_eq(s.op[0].bytes, 8118272);
	ck_assert_uint_eq(s.op[0].ops, 1982);
	ck_assert_double_eq_tol(s.op[0].p99_ns, 115200, 1e-6);
	ck_assert_double_eq_tol(s.op[0].runtime_s, 0.076, 1e-9);
	ck_assert_str_eq(s.op[1].op, "write");
	ck_assert_uint_eq(s.op[1].bytes, 8658944);
	free(t);
	/* two jobs without group_reporting: summed, worst percentile kept */
	t = fixture("fio/write-2jobs-nogroup.json");
	ck_assert_int_eq(ext_parse_fio_json(t, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_str_eq(s.op[0].op, "write");
	ck_assert_uint_eq(s.op[0].bytes, 64u << 20);
	ck_assert_uint_eq(s.op[0].ops, 64);
	ck_assert_double_eq_tol(s.op[0].bw_bytes, 8388608000.0 + 6710886400.0, 1);
	ck_assert_double_eq_tol(s.op[0].p99_ns, 191488, 1e-6);
	free(t);
	ck_assert_int_eq(ext_parse_fio_json("fio: engine libaio not loadable", &s, err,
	    sizeof(err)), -1);
	ck_assert_int_eq(ext_parse_fio_json("{\"jobs\": 3}", &s, err, sizeof(err)), -1);
}
END_TEST

START_TEST(t_hostfile)
{
	char *hosts[] = { (char *)(uintptr_t)"node01", (char *)(uintptr_t)"node02" };
	char *evil[] = { (char *)(uintptr_t)"node01 slots=99\nroot" };
	uint32_t slots[] = { 2, 1 };
	char buf[256];

	ck_assert_int_eq(ext_hostfile(buf, sizeof(buf), hosts, slots, 2), 0);
	ck_assert_str_eq(buf, "node01 slots=2\nnode02 slots=1\n");
	ck_assert_int_eq(ext_hostfile(buf, sizeof(buf), evil, slots, 1), -1);
	ck_assert_int_eq(ext_hostfile(buf, 10, hosts, slots, 2), -1);
}
END_TEST

/* A spec of phase run1-p1 in /scratch/x: kind, ranks[0..n) of n threads. */
static void
spec_init(Knob__PhaseSpec *s, const char *kind, uint32_t *ranks, size_t n)
{
	s->phase_id = (char *)(uintptr_t)"run1-p1";
	s->kind = (char *)(uintptr_t)kind;
	s->dir = (char *)(uintptr_t)"/scratch/x";
	s->threads_total = (uint32_t)n;
	s->ranks = ranks;
	s->n_ranks = n;
}

START_TEST(t_spec_refusals)
{
	Knob__PhaseSpec s = KNOB__PHASE_SPEC__INIT;
	struct bench_params p;
	uint32_t ranks[] = { 0, 1 };
	char err[256];

	spec_init(&s, "seq-write", ranks, 2);
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), 0);
	ck_assert_uint_eq(p.bs, 1u << 20);	/* defaults */
	ck_assert_str_eq(p.workdir_id, "run1-p1");
	bench_params_free(&p);

	s.workdir_id = (char *)(uintptr_t)"../../etc";
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), -1);
	s.workdir_id = NULL;
	s.dir = (char *)(uintptr_t)"relative";
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), -1);
	s.dir = (char *)(uintptr_t)"/scratch/x";
	s.kind = (char *)(uintptr_t)"rm-rf";
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), -1);
	s.kind = (char *)(uintptr_t)"seq-write";
	ranks[1] = 7;	/* rank outside threads_total */
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), -1);
	ranks[1] = 1;
	s.odirect = 1;
	s.block_size = 1000;	/* not aligned for O_DIRECT */
	s.file_size = 4000;
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "O_DIRECT"));
	s.odirect = 0;
	s.file_size = 4500;	/* not a multiple of the block */
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), -1);
	/* system directories are refused once resolved */
	ck_assert_int_eq(bench_check_dir("/usr/lib", err, sizeof(err)), -1);
	ck_assert_int_eq(bench_check_dir("/var/lib/docker", err, sizeof(err)), -1);
	ck_assert_int_eq(bench_check_dir("/", err, sizeof(err)), -1);
	ck_assert_int_eq(bench_check_dir("/scratch/bench", err, sizeof(err)), 0);
}
END_TEST

/* parse_bench with a fresh controller; 0 or -1 (the message to stderr). */
static int
parse(struct bench_req *rq, const char *args)
{
	char *dup = xstrdup(args), *save = NULL;
	char *argv[32];
	struct ctl c;
	int argc = 0, rc;

	memset(&c, 0, sizeof(c));
	for (char *t = strtok_r(dup, " ", &save); t && argc < 31; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	rc = bench_parse_argv(&c, argc, argv, rq);
	/* the request points into argv: keep only what the test reads */
	rq->dir = rq->label = NULL;
	opt_free(&c);
	strvec_free(&c.w);
	strvec_free(&c.x);
	free(dup);
	return rc;
}

/* parse "bench --dir /d ARGS" for each of the n args: each must return want. */
static void
parse_each(const char *const *args, size_t n, int want)
{
	struct bench_req rq;

	for (size_t i = 0; i < n; i++) {
		char *a = xasprintf("bench --dir /d %s", args[i]);

		ck_assert_msg(parse(&rq, a) == want, "%s %s", want ? "accepted" : "refused", args[i]);
		bench_req_free(&rq);
		free(a);
	}
}

/* The bench option table: sizes take units, counts are plain decimals,
 * ranges hold.  --seed is a number, not a size (it parsed "4k" as 4096). */
START_TEST(t_bench_options)
{
	struct bench_req rq;

	ck_assert_int_eq(parse(&rq, "bench --dir /d --seed 12345678901234 --bs 4k --size 1m "
	    "--repeat 3 --direct --compressible 40 --reader-shift --threads 1,4 seq"), 0);
	ck_assert_uint_eq(rq.seed, 12345678901234ull);
	ck_assert_uint_eq(rq.bs, 4096);
	ck_assert_uint_eq(rq.size, 1 << 20);
	ck_assert_uint_eq(rq.repeat, 3);
	ck_assert_int_eq(rq.direct, 1);
	ck_assert_uint_eq(rq.compress_pct, 40);
	ck_assert_uint_eq(rq.reader_shift, 1);
	ck_assert_uint_eq(rq.nthreads, 2);
	ck_assert_uint_eq(rq.lease_s, 10);		/* defaults stay */
	ck_assert_uint_eq(rq.files_per_dir, 1024);
	bench_req_free(&rq);
	ck_assert_int_eq(parse(&rq, "bench --dir /d --reader-shift=3 seq-read"), 0);
	ck_assert_uint_eq(rq.reader_shift, 3);
	ck_assert_uint_eq(rq.seed, 1);			/* the default seed */
	bench_req_free(&rq);
	ck_assert_int_eq(parse(&rq, "bench --dir /d --seed 18446744073709551615 seq-write"), 0);
	ck_assert_uint_eq(rq.seed, UINT64_MAX);
	bench_req_free(&rq);
	static const char *const bad[] = {
		"--seed 4k", "--seed -1", "--seed 18446744073709551616", "--seed x",
		"--repeat 0", "--repeat 1001", "--compressible 101", "--bs 0", "--lease 0",
		"--rwmix 101", "--iodepth 4k", "--files 0", "--ioengine posix",
	};
	for (size_t i = 0; i < nitems(bad); i++) {
		char *args = xasprintf("bench --dir /d %s rand-rw", bad[i]);

		ck_assert_msg(parse(&rq, args) < 0, "accepted %s", bad[i]);
		bench_req_free(&rq);
		free(args);
	}
}
END_TEST

/* The size rules are one function (bench_sizes_check), the agent's and
 * knobctl bench's: a size under the kind's default block size, or an
 * --at size that is not a multiple of --bs, is refused by knobctl
 * before anything runs (before, only --size against an explicit --bs was
 * checked: the agents refused the phase mid-run) and by the agent from a
 * spec, with the same reason. */
START_TEST(t_sizes_both_sides)
{
	static const char *const bad[] = {
		"--size 64k seq-write", "--bs 64k --size 1m --threads 1..2 --at 2:size=100k seq",
		"--bs 8 --size 64 seq-write", "--bs 1000 --size 4000 --direct rand-write",
		"--size 1m --threads 1..2 --at 2:bs=3m seq-read",
	};
	static const char *const good[] = {
		"--size 64k rand-write", "--size 1m seq", "--bs 64k --size 100k --size-total 1m seq",
		"--size 1m --threads 1..2 --at 2:bs=512k,size=512k seq-write", "--size 1 md-create",
	};
	Knob__PhaseSpec s = KNOB__PHASE_SPEC__INIT;
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_req rq;
	char err[256];

	parse_each(bad, nitems(bad), -1);
	parse_each(good, nitems(good), 0);
	/* the plan's reason, and the agent's from the same spec */
	ck_assert_int_eq(parse(&rq, "bench --dir /d --threads 2 seq-write"), 0);
	rq.size = 64 << 10;
	ck_assert_int_eq(bench_plan_check(&rq, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "seq-write, 2 thread(s): size 64k is not a multiple of the block "
	    "size 1m (the kind's default block size: set bs)");
	bench_req_free(&rq);
	spec_init(&s, "seq-write", ranks, 1);
	s.file_size = 64 << 10;
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), -1);
	ck_assert_str_eq(err, "size 64k is not a multiple of the block size 1m");
}
END_TEST

/* Path options of the external tools are refused: by knobctl before
 * anything runs (exit 2), and by the agent from a spec (a play, another
 * controller); every form a tool reads (fio's -opt and prefixes through
 * getopt_long_only, IOR's and mdtest's letters in a group, IOR -O
 * directives), and nothing else (fio --direct, --output-format,
 * --filesize; IOR -O summaryFormat; the usual flags). */
START_TEST(t_ext_path_args)
{
	static const char *const bad[] = {
		"fio -- --directory=/elsewhere", "fio -- --directory /elsewhere",
		"fio -- -directory=/x", "fio -- --directo=/x", "fio -- --filename=/dev/sdz",
		"fio -- --name=a --filename_format=/x/$jobnum", "fio -- --opendir=/x",
		"fio -- --output=/x", "fio -- --write_lat_log=/x/lat",
		"ior -- -o /elsewhere/f", "ior -- -o/elsewhere/f", "ior -- -w -r -wo /x",
		"ior -- -O testFile=/x", "ior -- -O summaryFormat=JSON,summaryFile=/x",
		"ior -- -f /tmp/script", "ior -- -lrandom",
		"mdtest -- -d /elsewhere", "mdtest -- -d/elsewhere", "mdtest -- -n 10 -x /x/st",
		"seq-write,mdtest -- -u -d /x",
	};
	static const char *const good[] = {
		"fio -- --name=x --rw=randrw --bs=4k --size=1m --direct=1 --filesize=1m",
		"fio -- --rw=write --output-format=json --numjobs=2 --fsync=1",
		"ior -- -a POSIX -w -r -e -F -t 64k -b 1m -O summaryFormat=JSON",
		"mdtest -- -a POSIX -F -C -T -r -n 40 -u -z 2 -b 3",
	};
	Knob__PhaseSpec s = KNOB__PHASE_SPEC__INIT;
	char *args[] = { (char *)(uintptr_t)"-o", (char *)(uintptr_t)"/elsewhere" }, err[512];
	uint32_t ranks[] = { 0 };
	struct bench_params p;

	parse_each(bad, nitems(bad), -1);
	parse_each(good, nitems(good), 0);
	ck_assert_int_eq(ext_args_check("ior", args, 2, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "ior -o (in '-o'): path options of the tool are refused"), "%s",
	    err);
	/* the agent refuses it from a spec too */
	spec_init(&s, "ior", ranks, 1);
	s.ext_args = args;
	s.n_ext_args = 2;
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), -1);
	s.n_ext_args = 0;
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), 0);
	bench_params_free(&p);
}
END_TEST

/* One refusal case: "TOOL ARG ARG ..." (words split at spaces) and a
 * piece of the message, or NULL for arguments that must pass. */
struct ext_case {
	const char *args;
	const char *msg;
};

/* Check a case on both sides: the controller's parse_bench (before
 * anything runs) and the agent's spec check, through ext_args_check. */
static void
ext_case_check(const struct ext_case *c)
{
	Knob__PhaseSpec s = KNOB__PHASE_SPEC__INIT;
	char *dup = xstrdup(c->args), *words[32], *save = NULL, *cli, err[1024];
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_req rq;
	size_t n = 0;
	int want = c->msg ? -1 : 0;

	for (char *t = strtok_r(dup, " ", &save); t && n < 32; t = strtok_r(NULL, " ", &save))
		words[n++] = t;
	cli = xasprintf("bench --dir /d %s -- %s", words[0], c->args + strlen(words[0]) + 1);
	ck_assert_msg(parse(&rq, cli) == want, "controller: %s", c->args);
	bench_req_free(&rq);
	free(cli);
	ck_assert_msg(ext_args_check(words[0], words + 1, n - 1, err, sizeof(err)) == want,
	    "%s", c->args);
	ck_assert_msg(c->msg == NULL || strstr(err, c->msg), "%s: %s", c->args, err);
	spec_init(&s, words[0], ranks, 1);
	s.ext_args = words + 1;
	s.n_ext_args = n - 1;
	ck_assert_msg(bench_params_from_spec(&p, &s, "", err, sizeof(err)) == want, "agent: %s",
	    c->args);
	if (want == 0)
		bench_params_free(&p);
	free(dup);
}

/* fio options that run a command, load code, retune the node, serve the
 * network or name a file, as --long, -long, an abbreviation, a -xyz group
 * of short options, and values that do the same (engine, job name, mem,
 * patterns); the options that stay in --dir pass. */
START_TEST(t_ext_fio_refusals)
{
	static const struct ext_case cases[] = {
		{ "fio --exec_prerun=touch /x", "fio --exec_prerun (in '--exec_prerun=touch')" },
		{ "fio --rw=write --exec_postrun=/bin/sh", "options that run a command" },
		{ "fio -exec_postrun=x", "fio --exec_postrun (in '-exec_postrun=x')" },
		{ "fio --exec=touch", "fio --exec_prerun" },	/* fio takes the first */
		{ "fio --ioengine=exec --program=/bin/sh", "fio --ioengine= (in '--ioengine=exec')" },
		{ "fio --ioengine=external:/tmp/e.so", "external:LIB and unknown names load" },
		{ "fio --ioeng=exec", "fio --ioengine=" },
		{ "fio --io=exec", "fio --ioengine=" },		/* --io is --ioengine to fio */
		{ "fio --ioengine=/tmp/e.so", "fio --ioengine=" },
		{ "fio --ioengine=net --hostname=h", "fio --ioengine=" },
		{ "fio --ioengine=sg", "fio --ioengine=" },
		{ "fio --enghelp=external:/tmp/e.so", "options that load code" },
		{ "fio --ioscheduler=none", "change the node's settings" },
		{ "fio --cgroup=knob", "fio --cgroup" },
		{ "fio --profile=act", "fio --profile" },
		{ "fio --device-names=/dev/sdz", "fio --device-names" },
		{ "fio --trigger=reboot", "fio --trigger (in" },
		{ "fio --trigger-remote=x", "fio --trigger-remote" },
		{ "fio --trigger-file=/x", "fio --trigger-file" },
		{ "fio --trigger-timeout=10", "fio --trigger-timeout" },
		{ "fio --server", "serve or reach other hosts" },
		{ "fio --client=h1", "fio --client" },
		{ "fio --daemonize=/run/x.pid", "fio --daemonize" },
		{ "fio --remote-config=/x.fio", "fio --remote-config" },
		{ "fio --inflate-log=/etc/shadow", "fio --inflate-log" },
		{ "fio --bandwidth-log", "fio --bandwidth-log" },
		{ "fio --write_iolog=/x", "fio --write_iolog" },
		{ "fio --read_iolog=/x", "fio --read_iolog" },
		{ "fio --replay_redirect=/dev/sdz", "fio --replay_redirect" },
		{ "fio --merge_blktrace_file=/x", "fio --merge_blktrace_file" },
		{ "fio --write_iops_log=/x/i", "fio --write_iops_log" },
		{ "fio --name=../../etc/x", "fio --name= (in '--name=../../etc/x')" },
		{ "fio --mem=mmap:/etc/x", "fio --mem=" },
		{ "fio --iomem=mmaphuge:/x", "fio --iomem=" },
		{ "fio --buffer_pattern='/etc/shadow'", "fio --buffer_pattern=" },
		{ "fio --verify=md5 --verify_pattern=0x1'/x'", "fio --verify_pattern=" },
		/* fio's short options, alone, glued and grouped */
		{ "fio -o /x", "fio -o (in '-o'" },
		{ "fio -o/x", "fio -o (in '-o/x'" },
		{ "fio -ro", "fio -o (in '-ro'" },
		{ "fio -rb", "fio -b (in '-rb'" },
		{ "fio -H", "fio -H" },
		{ "fio -S", "fio -S" },
		{ "fio -bs=4k", "write long options with '--'" },
		/* job files: any word that is not an option */
		{ "fio job.fio", "fio job file 'job.fio'" },
		{ "fio --rw=write /tmp/job.fio", "fio job files are refused" },
		{ "fio --bs 4k", "each with its value after '='" },
		{ "fio -- --rw=write", "fio job file '--'" },
		{ "fio -", "fio job file '-'" },
		/* what stays in --dir passes */
		{ "fio --ioengine=libaio --iodepth=16 --direct=1 --ba=4k --verify=md5", NULL },
		{ "fio --ioengine=io_uring --name=a --mem=malloc --buffer_pattern=0xdeadbeef", NULL },
		{ "fio --ioengine=filecreate --rw=write --cpus_allowed=0-1 --output-format=json",
		    NULL },
		{ "fio --name=a --rw=read --name=b --rw=write --group_reporting -v", NULL },
	};

	for (size_t i = 0; i < nitems(cases); i++)
		ext_case_check(&cases[i]);
}
END_TEST

/* IOR's and mdtest's options that run a command or name a file: mdtest's
 * --run-cmd-*-phase, the CSV files, the backends' hints and config
 * files, IOR's -O directives (also an option given as a directive and
 * -O inside a group of letters); the backends' other options pass. */
START_TEST(t_ext_mpi_refusals)
{
	static const struct ext_case cases[] = {
		{ "mdtest --run-cmd-before-phase=rm", "mdtest --run-cmd-before-phase (in" },
		{ "mdtest -n 10 --run-cmd-after-phase /bin/sh", "options that run a command" },
		{ "mdtest --saveRankPerformanceDetails=/x.csv", "mdtest --saveRankPerformanceDe" },
		{ "mdtest --savePerOpDataCSV=/x", "mdtest --savePerOpDataCSV" },
		{ "mdtest -a MPIIO --mpiio.hintsFileName=/etc/shadow", "--mpiio.hintsFileName" },
		{ "mdtest -nx 10", "mdtest -x (in '-nx')" },
		{ "ior --hdf5.hintsFileName=/x", "ior --hdf5.hintsFileName" },
		{ "ior --cephfs.conf=/x", "ior --cephfs.conf" },
		{ "ior -O stoneWallingStatusFile=/x", "ior -O stoneWallingStatusFile=" },
		{ "ior -O summaryFormat=JSON,SUMMARYFILE=/x", "ior -O summaryFile=" },
		{ "ior -O summaryFormat=JSON,-o=/x", "ior -o (in '-o=/x')" },
		{ "ior -O --mpiio.hintsFileName=/x", "ior --mpiio.hintsFileName" },
		{ "ior -wO testFile=/x", "ior -O testFile=" },
		{ "ior -w -O=testFile=/x", "ior -O testFile=" },
		/* backends that leave --dir: object stores, other hosts, devices */
		{ "ior -a S3-libs3 -w", "ior -a (in 'S3-libs3'): IOR/mdtest backends other" },
		{ "ior -aRADOS -w", "ior -a (in 'RADOS')" },
		{ "mdtest -a=LIBNFS -n 10", "mdtest -a (in 'LIBNFS')" },
		{ "mdtest -Fa CEPHFS", "mdtest -a (in 'CEPHFS')" },
		{ "ior -a", "ior -a (in '-a')" },
		{ "ior -a mpiio -w", NULL },
		{ "mdtest -a DUMMY -n 10", NULL },
		{ "ior -a POSIX --posix.odirect -w -r -O summaryFormat=JSON -t 1m", NULL },
		{ "mdtest -a POSIX --posix.odirect -F -C -n 10 --random-seed=3", NULL },
	};
	char *spaced[] = { (char *)(uintptr_t)"-O", (char *)(uintptr_t)" summaryFile = /x" };
	char err[512];

	for (size_t i = 0; i < nitems(cases); i++)
		ext_case_check(&cases[i]);
	/* IOR reads "key = value" with blanks too */
	ck_assert_int_eq(ext_args_check("ior", spaced, 2, err, sizeof(err)), -1);
}
END_TEST

/* What a request plans and what the agent runs from the spec of each of
 * its phases (which must agree), for the first phase. */
struct ran {
	uint32_t rwmix;
	uint64_t md_files;
};

/* Plans the request, makes each phase's spec and the agent's parameters
 * from it; fills *out from the first phase; -1 when the command line is
 * refused. */
static int
plan_ran(const char *args, struct ran *out)
{
	struct bench_req rq;
	struct bench_params bp;
	struct brun br;
	struct pnode pn;
	struct plan *pl;
	Knob__PhaseSpec *s;
	uint32_t rank = 0;
	char err[256];
	size_t n;

	if (parse(&rq, args) < 0) {
		bench_req_free(&rq);
		return -1;
	}
	rq.dir = "/scratch/x";
	memset(&br, 0, sizeof(br));
	memset(&pn, 0, sizeof(pn));
	br.req = &rq;
	snprintf(br.phase_id, sizeof(br.phase_id), "run1-p1");
	pn.ranks = &rank;
	pn.nranks = 1;
	pl = bench_make_plan(&rq, "run1", &n);
	ck_assert_uint_ge(n, 1);
	for (size_t i = 0; i < n; i++) {
		s = bench_make_spec(&br, &pl[i], &pn, 1, NULL, NULL);
		ck_assert_uint_eq(s->rwmix_read, pl[i].rwmix);
		ck_assert_int_eq(bench_params_from_spec(&bp, s, "", err, sizeof(err)), 0);
		ck_assert_uint_eq(bp.rwmix_read, pl[i].rwmix);
		ck_assert_uint_eq(bp.md_files, pl[i].md_files);
		bench_params_free(&bp);
		free(s);
	}
	out->rwmix = (uint32_t)pl[0].rwmix;
	out->md_files = pl[0].md_files;
	free(pl);
	bench_req_free(&rq);
	return 0;
}

/* The read mix a rand-rw request plans, puts in the spec and the agent
 * runs; -1 when the command line is refused. */
static int
rwmix_ran(const char *args)
{
	struct ran r;

	return plan_ran(args, &r) < 0 ? -1 : (int)r.rwmix;
}

/* --rwmix 0 (all writes) is refused: 0 is "not given" in the plan and on
 * the wire, so it ran 50 % reads and exited 0.  1 and 100 run as given,
 * no --rwmix runs 50 %. */
START_TEST(t_rwmix_zero)
{
	ck_assert_int_eq(rwmix_ran("bench --dir /d --rwmix 0 rand-rw"), -1);
	ck_assert_int_eq(rwmix_ran("bench --dir /d --rwmix=0 rand-rw"), -1);
	ck_assert_int_eq(rwmix_ran("bench --dir /d --rwmix 1 rand-rw"), 1);
	ck_assert_int_eq(rwmix_ran("bench --dir /d --rwmix 100 rand-rw"), 100);
	ck_assert_int_eq(rwmix_ran("bench --dir /d rand-rw"), 50);
}
END_TEST

/* A metadata phase plans the files per thread the agent runs: without
 * --files, one directory's worth (it planned and recorded 0, so the run was
 * another workload than the same run with --files 1024). */
START_TEST(t_md_files_default)
{
	struct ran r;

	ck_assert_int_eq(plan_ran("bench --dir /x md", &r), 0);
	ck_assert_uint_eq(r.md_files, BENCH_FILES_PER_DIR);
	ck_assert_int_eq(plan_ran("bench --dir /x --files 1024 md", &r), 0);
	ck_assert_uint_eq(r.md_files, BENCH_FILES_PER_DIR);
	ck_assert_int_eq(plan_ran("bench --dir /x --files-per-dir 16 md-create", &r), 0);
	ck_assert_uint_eq(r.md_files, 16);
	ck_assert_int_eq(plan_ran("bench --dir /x --files-per-dir 16 --files 40 md-stat", &r), 0);
	ck_assert_uint_eq(r.md_files, 40);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bench_unit");
	TCase *tc = tcase_create("unit");

	tcase_add_test(tc, t_sweep);
	tcase_add_test(tc, t_sizes_kinds);
	tcase_add_test(tc, t_placement);
	tcase_add_test(tc, t_reader_shift);
	tcase_add_test(tc, t_aggregate_skewed_clocks);
	tcase_add_test(tc, t_offset_sample);
	tcase_add_test(tc, t_cache_warning);
	tcase_add_test(tc, t_cache_warning_wrapped);
	tcase_add_test(tc, t_first_done_measured);
	tcase_add_test(tc, t_checkpoints);
	tcase_add_test(tc, t_launcher);
	tcase_add_test(tc, t_parse_ior);
	tcase_add_test(tc, t_parse_mdtest);
	tcase_add_test(tc, t_parse_nonfinite);
	tcase_add_test(tc, t_parse_fio);
	tcase_add_test(tc, t_hostfile);
	tcase_add_test(tc, t_spec_refusals);
	tcase_add_test(tc, t_bench_options);
	tcase_add_test(tc, t_sizes_both_sides);
	tcase_add_test(tc, t_ext_path_args);
	tcase_add_test(tc, t_ext_fio_refusals);
	tcase_add_test(tc, t_ext_mpi_refusals);
	tcase_add_test(tc, t_rwmix_zero);
	tcase_add_test(tc, t_md_files_default);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
