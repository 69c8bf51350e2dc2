/* Latency histogram: accuracy against exact percentiles, exact merging,
 * wire round trip and rejection of malformed wire histograms. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "hist.h"

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Exact nearest-rank percentile of sorted v. */
static uint64_t
exact(const uint64_t *v, size_t n, double q)
{
	size_t r = (size_t)ceil(q * (double)n);

	if (r == 0)
		r = 1;
	return v[r - 1];
}

/* Log-normal-ish latencies from 200 ns to ~1 s, deterministic. */
static uint64_t
sample(unsigned *seed)
{
	double u = (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);
	double w = (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);
	double z = sqrt(-2 * log(u)) * cos(2 * M_PI * w);

	return (uint64_t)(200 + exp(11.0 + 2.2 * z));
}

/* Relative error of the value v's bucket reports. */
static double
rel_err(uint64_t v)
{
	double m = (double)hist_bucket_value(hist_index(v));

	return fabs(m - (double)v) / (double)v;
}

/* hist.h promises: exact below 64, and a bucket's midpoint within 1/128 of
 * any value in it (the README's "<= 1 %").  Checked on every value below
 * 2^20 (all of the first 14 octaves, every sub-bucket edge), on both edges
 * of every sub-bucket of every octave up to 2^64, and on the fixed values
 * at the ends; the largest error is printed. */
START_TEST(t_index_bounds)
{
	uint64_t vals[] = { 0, 1, 63, 64, 65, 127, 128, 1000, 123456789, UINT64_MAX };
	double worst = 0;

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		unsigned idx = hist_index(vals[i]);

		ck_assert_uint_lt(idx, HIST_NBUCKETS);
		ck_assert_uint_le(hist_bucket_low(idx), vals[i]);
		if (vals[i] < 64)
			ck_assert_uint_eq(hist_bucket_value(idx), vals[i]);
		if (idx + 1 < HIST_NBUCKETS)
			ck_assert_uint_gt(hist_bucket_low(idx + 1), vals[i]);
	}
	for (uint64_t v = 64; v < (1u << 20); v++)
		if (rel_err(v) > worst)
			worst = rel_err(v);
	for (unsigned idx = HIST_SUB; idx + 1 < HIST_NBUCKETS; idx++) {
		uint64_t lo = hist_bucket_low(idx), hi = hist_bucket_low(idx + 1) - 1;

		ck_assert_uint_eq(hist_index(lo), idx);
		ck_assert_uint_eq(hist_index(hi), idx);
		worst = fmax(worst, fmax(rel_err(lo), rel_err(hi)));
	}
	worst = fmax(worst, rel_err(UINT64_MAX));
	printf("largest bucket error: %.4f %% (bound 1/128 = %.4f %%)\n", worst * 100,
	    100.0 / 128);
	ck_assert_msg(worst <= 1.0 / 128, "bucket error %.5f > 1/128", worst);
}
END_TEST

START_TEST(t_merge_accuracy)
{
	enum { PARTS = 4, PER = 50000 };
	static uint64_t all[PARTS * PER];
	struct hist *part = calloc(PARTS, sizeof(*part)), *merged = malloc(sizeof(*merged));
	struct hist *whole = malloc(sizeof(*whole));
	const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
	unsigned seed = 12345;
	size_t i, k;

	hist_init(merged);
	hist_init(whole);
	for (k = 0; k < PARTS; k++) {
		hist_init(&part[k]);
		for (i = 0; i < PER; i++) {
			/* each part has a different scale, so the merge matters */
			uint64_t v = sample(&seed) * (k + 1);
			all[k * PER + i] = v;
			hist_add(&part[k], v);
			hist_add(whole, v);
		}
	}
	for (k = 0; k < PARTS; k++)
		hist_merge(merged, &part[k]);
	/* exactly mergeable: bucket-wise identical to one histogram of everything */
	ck_assert_int_eq(memcmp(merged->count, whole->count, sizeof(whole->count)), 0);
	ck_assert_uint_eq(merged->total, (uint64_t)PARTS * PER);
	qsort(all, PARTS * PER, sizeof(all[0]), cmp_u64);
	ck_assert_uint_eq(merged->min, all[0]);
	ck_assert_uint_eq(merged->max, all[PARTS * PER - 1]);
	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		double e = (double)exact(all, PARTS * PER, qs[i]);
		double h = (double)hist_quantile(merged, qs[i]);

		/* the same bucket as the exact value: within 1/128 of it */
		ck_assert_msg(fabs(h - e) / e <= 1.0 / 128, "q%.3f: hist %.0f exact %.0f", qs[i],
		    h, e);
	}
	free(part);
	free(merged);
	free(whole);
}
END_TEST

START_TEST(t_proto_roundtrip)
{
	struct hist *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	Knob__Histogram m;
	unsigned seed = 7;

	hist_init(a);
	hist_init(b);
	for (int i = 0; i < 10000; i++)
		hist_add(a, sample(&seed));
	hist_to_proto(a, &m);
	ck_assert_uint_lt(m.n_idx, 2000);	/* sparse */
	ck_assert_int_eq(hist_merge_proto(b, &m), 0);
	ck_assert_int_eq(memcmp(a->count, b->count, sizeof(a->count)), 0);
	ck_assert_uint_eq(a->min, b->min);
	ck_assert_uint_eq(a->max, b->max);
	ck_assert_uint_eq(hist_quantile(a, 0.99), hist_quantile(b, 0.99));
	/* malformed: index out of range, totals that do not add up */
	m.idx[0] = HIST_NBUCKETS;
	ck_assert_int_eq(hist_merge_proto(b, &m), -1);
	m.idx[0] = 0;
	m.total += 1;
	ck_assert_int_eq(hist_merge_proto(b, &m), -1);
	m.total -= 1;
	m.n_count--;
	ck_assert_int_eq(hist_merge_proto(b, &m), -1);
	m.n_count++;
	ck_assert_uint_eq(b->total, 10000);	/* unchanged by the rejected ones */
	hist_proto_free(&m);
	free(a);
	free(b);
}
END_TEST

START_TEST(t_empty)
{
	struct hist *h = malloc(sizeof(*h));

	hist_init(h);
	ck_assert_uint_eq(hist_quantile(h, 0.5), 0);
	hist_add(h, 5000);
	ck_assert_uint_eq(hist_quantile(h, 0.5), 5000);	/* clamped to min/max */
	ck_assert_uint_eq(hist_quantile(h, 0.999), 5000);
	free(h);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("hist");
	TCase *tc = tcase_create("hist");

	tcase_add_test(tc, t_index_bounds);
	tcase_add_test(tc, t_merge_accuracy);
	tcase_add_test(tc, t_proto_roundtrip);
	tcase_add_test(tc, t_empty);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
