/* Log-bucketed latency histograms (nanoseconds).  Values below 64 are kept
 * exactly; above, every power of two is split into 64 linear sub-buckets,
 * so a bucket's midpoint is within 1/128 (< 1 %) of any value in it.
 * Histograms merge exactly (bucket-wise sums) across threads and nodes. */
#ifndef KNOB_HIST_H
#define KNOB_HIST_H

#include <stdint.h>

#include "knob.pb-c.h"

#define HIST_SUB_BITS	6
#define HIST_SUB	(1u << HIST_SUB_BITS)			/* 64 */
#define HIST_NBUCKETS	(HIST_SUB + (64 - HIST_SUB_BITS) * HIST_SUB)	/* 3776 */

struct hist {
	uint64_t count[HIST_NBUCKETS];
	uint64_t total;
	uint64_t min, max;	/* exact extremes; min is UINT64_MAX when empty */
};

void hist_init(struct hist *h);
/* Bucket of a value, and the value a bucket reports (its midpoint). */
unsigned hist_index(uint64_t v);
uint64_t hist_bucket_low(unsigned idx);
uint64_t hist_bucket_value(unsigned idx);
static inline void
hist_add(struct hist *h, uint64_t v)
{
	h->count[hist_index(v)]++;
	h->total++;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}
/* dst += src, exactly. */
void hist_merge(struct hist *dst, const struct hist *src);
/* Value at quantile q in [0,1] (nearest rank), clamped to [min,max]; 0 when empty. */
uint64_t hist_quantile(const struct hist *h, double q);
/* Sparse wire form: fills *m (knob__histogram__init is done here); the
 * idx/count arrays are malloc'd, release with hist_proto_free. */
void hist_to_proto(const struct hist *h, Knob__Histogram *m);
void hist_proto_free(Knob__Histogram *m);
/* Merge a wire histogram into h.  -1 if it is malformed (bad index,
 * mismatched arrays, totals that do not add up); h is unchanged then. */
int hist_merge_proto(struct hist *h, const Knob__Histogram *m);

#endif
