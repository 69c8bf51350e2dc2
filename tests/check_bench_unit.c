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

#include "bench.h"
#include "bench_ctl.h"
#include "hist.h"
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

/* The cache warning: the larger of RAM and the GPFS pagepool, named. */
START_TEST(t_cache_warning)
{
	const uint64_t G = 1ull << 30;
	char w[256];

	/* RAM 1 GiB, pagepool 4 GiB: 6 GiB read is under 2 x 4 GiB */
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), 6 * G, 1 << 20, 4 * G, 0), 1);
	ck_assert_str_eq(w, "reads 6.00 GiB per node, under twice the node's GPFS pagepool "
	    "(4.00 GiB; RAM 1.00 GiB): this measures the GPFS cache");
	/* 8 GiB is enough */
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), 8 * G, 1 << 20, 4 * G, 0), 0);
	ck_assert_str_eq(w, "");
	/* RAM 16 GiB is the larger: 8 GiB read warns about RAM, naming both */
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), 8 * G, 16 << 20, 4 * G, 0), 1);
	ck_assert_str_eq(w, "reads 8.00 GiB per node, under twice the node's RAM (16.00 GiB; "
	    "GPFS pagepool 4.00 GiB): this measures the page cache");
	/* no GPFS */
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), G, 16 << 20, 0, 0), 1);
	ck_assert_str_eq(w, "reads 1.00 GiB per node, under twice the node's RAM (16.00 GiB): "
	    "this measures the page cache");
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), 32 * G, 16 << 20, 0, 0), 0);
	/* small reads in MiB */
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), 4 << 20, 1 << 20, 0, 0), 1);
	ck_assert_str_eq(w, "reads 4.0 MiB per node, under twice the node's RAM (1.00 GiB): "
	    "this measures the page cache");
	/* RAM unknown, pagepool known */
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), G, 0, 4 * G, 0), 1);
	ck_assert_ptr_nonnull(strstr(w, "GPFS pagepool (4.00 GiB)"));
	/* O_DIRECT, a write phase, nothing known: no warning */
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), G, 16 << 20, 4 * G, 1), 0);
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), 0, 16 << 20, 4 * G, 0), 0);
	ck_assert_int_eq(bench_cache_warning(w, sizeof(w), G, 0, 0, 0), 0);
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

START_TEST(t_spec_refusals)
{
	Knob__PhaseSpec s = KNOB__PHASE_SPEC__INIT;
	struct bench_params p;
	uint32_t ranks[] = { 0, 1 };
	char err[256];

	s.phase_id = (char *)(uintptr_t)"run1-p1";
	s.kind = (char *)(uintptr_t)"seq-write";
	s.dir = (char *)(uintptr_t)"/scratch/x";
	s.threads_total = 2;
	s.ranks = ranks;
	s.n_ranks = 2;
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

int
main(void)
{
	Suite *s = suite_create("bench_unit");
	TCase *tc = tcase_create("unit");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, t_sweep);
	tcase_add_test(tc, t_sizes_kinds);
	tcase_add_test(tc, t_placement);
	tcase_add_test(tc, t_aggregate_skewed_clocks);
	tcase_add_test(tc, t_offset_sample);
	tcase_add_test(tc, t_cache_warning);
	tcase_add_test(tc, t_parse_ior);
	tcase_add_test(tc, t_parse_mdtest);
	tcase_add_test(tc, t_parse_fio);
	tcase_add_test(tc, t_hostfile);
	tcase_add_test(tc, t_spec_refusals);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
