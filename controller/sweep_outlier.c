/* The fleet-relative rule shared by knobctl sweep --probe and knobctl bench:
 * a node whose rate is more than K median absolute deviations below the
 * median of its peers (the fleet without it), and at least a minimum
 * fraction below it, is slow.  The MAD is scaled by 1.4826 (a standard
 * deviation for normal data); the minimum gap keeps a tight fleet (MAD near
 * 0) from flagging noise.  The median reported is the whole fleet's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

#define MAD_SCALE 1.4826
#define LEAVE_ONE_OUT_MAX 256	/* above, one node moves the median and MAD too little to matter */
#define BENCH_MADS 3.0
#define BENCH_MIN_GAP 0.5	/* bench: a straggler is at most half the median */

static int
cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* Median of v (sorted in place). */
static double
median_of(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median and scaled MAD of v without element skip (skip = n: all). */
static void
robust(const double *v, size_t n, size_t skip, double *w, double *med, double *mad)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (i != skip)
			w[k++] = v[i];
	*med = median_of(w, k);
	for (size_t i = 0; i < k; i++)
		w[i] = fabs(w[i] - *med);
	*mad = median_of(w, k) * MAD_SCALE;
}

size_t
outlier_slow(const double *v, size_t n, double k, double min_gap, int *slow, double *median)
{
	double *w, med, mad;
	size_t nslow = 0;

	memset(slow, 0, n * sizeof(*slow));
	*median = 0;
	if (n < 3 || (w = malloc(n * sizeof(*w))) == NULL)
		return 0;
	robust(v, n, n, w, median, &mad);
	for (size_t i = 0; i < n; i++) {
		/* judged against its peers: in a small fleet the slow node itself
		 * would widen the MAD enough to hide it */
		if (n <= LEAVE_ONE_OUT_MAX)
			robust(v, n, i, w, &med, &mad);
		else
			med = *median;
		if (v[i] < med - k * mad && v[i] < med * (1 - min_gap)) {
			slow[i] = 1;
			nslow++;
		}
	}
	free(w);
	return nslow;
}

/* "12.3 MiB/s" or "4500 op/s" of a rate in the phase's unit. */
static void
fmt_unit(char *buf, size_t len, double v, int md)
{
	snprintf(buf, len, md ? "%.0f op/s" : "%.1f MiB/s", md ? v : v / 1048576);
}

void
sweep_print_stragglers(FILE *f, json_object *phase)
{
	json_object *per, *x;
	size_t n;
	double *v, med;
	int *slow, md;

	if (!json_object_object_get_ex(phase, "per_node", &per) ||
	    (n = json_object_array_length(per)) < 3)
		return;
	v = calloc(n, sizeof(*v));
	slow = calloc(n, sizeof(*slow));
	if (v == NULL || slow == NULL)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (json_object_object_get_ex(json_object_array_get_idx(per, i), "rate", &x))
			v[i] = json_object_get_double(x);
	md = json_object_object_get_ex(phase, "unit", &x) &&
	    strcmp(json_object_get_string(x), "op/s") == 0;
	if (outlier_slow(v, n, BENCH_MADS, BENCH_MIN_GAP, slow, &med) == 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char r[32], m[32];

		if (!slow[i])
			continue;
		json_object_object_get_ex(json_object_array_get_idx(per, i), "node", &x);
		fmt_unit(r, sizeof(r), v[i], md);
		fmt_unit(m, sizeof(m), med, md);
		fprintf(f, "%s %s: straggler: %s at %s, fleet median %s "
		    "(> %.0f MADs and %.0f%% below)\n",
		    json_object_get_string(json_object_object_get(phase, "phase_id")),
		    json_object_get_string(json_object_object_get(phase, "kind")),
		    json_object_get_string(x), r, m, BENCH_MADS, BENCH_MIN_GAP * 100);
	}
out:
	free(v);
	free(slow);
}
