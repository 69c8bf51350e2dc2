/* Log-bucketed, exactly mergeable latency histograms. */
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "util.h"

void
hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned
hist_index(uint64_t v)
{
	unsigned e;

	if (v < HIST_SUB)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);		/* >= HIST_SUB_BITS */
	return HIST_SUB + (e - HIST_SUB_BITS) * HIST_SUB +
	    (unsigned)((v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

uint64_t
hist_bucket_low(unsigned idx)
{
	unsigned e, sub;

	if (idx < HIST_SUB)
		return idx;
	e = (idx - HIST_SUB) / HIST_SUB + HIST_SUB_BITS;
	sub = (idx - HIST_SUB) % HIST_SUB;
	return (uint64_t)(HIST_SUB + sub) << (e - HIST_SUB_BITS);
}

uint64_t
hist_bucket_value(unsigned idx)
{
	unsigned e;

	if (idx < HIST_SUB)
		return idx;
	e = (idx - HIST_SUB) / HIST_SUB + HIST_SUB_BITS;
	/* midpoint of [low, low + width) */
	return hist_bucket_low(idx) + (((uint64_t)1 << (e - HIST_SUB_BITS)) >> 1);
}

void
hist_merge(struct hist *dst, const struct hist *src)
{
	size_t i;

	if (src->total == 0)
		return;
	for (i = 0; i < HIST_NBUCKETS; i++)
		dst->count[i] += src->count[i];
	dst->total += src->total;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t
hist_quantile(const struct hist *h, double q)
{
	uint64_t rank, seen = 0, v;
	size_t i;

	if (h->total == 0)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	/* nearest rank: the smallest value with at least ceil(q*N) values <= it */
	rank = (uint64_t)(q * (double)h->total);
	if ((double)rank < q * (double)h->total)
		rank++;
	if (rank == 0)
		rank = 1;
	for (i = 0; i < HIST_NBUCKETS; i++) {
		seen += h->count[i];
		if (seen >= rank)
			break;
	}
	if (i == HIST_NBUCKETS)
		return h->max;
	v = hist_bucket_value((unsigned)i);
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

void
hist_to_proto(const struct hist *h, Knob__Histogram *m)
{
	size_t i, n = 0;

	knob__histogram__init(m);
	for (i = 0; i < HIST_NBUCKETS; i++)
		if (h->count[i])
			n++;
	m->idx = xcalloc(n, sizeof(*m->idx));
	m->count = xcalloc(n, sizeof(*m->count));
	for (i = 0; i < HIST_NBUCKETS; i++) {
		if (h->count[i] == 0)
			continue;
		m->idx[m->n_idx++] = (uint32_t)i;
		m->count[m->n_count++] = h->count[i];
	}
	m->total = h->total;
	m->min_ns = h->total ? h->min : 0;
	m->max_ns = h->max;
}

void
hist_proto_free(Knob__Histogram *m)
{
	if (m == NULL)
		return;
	free(m->idx);
	free(m->count);
	m->idx = NULL;
	m->count = NULL;
	m->n_idx = m->n_count = 0;
}

int
hist_merge_proto(struct hist *h, const Knob__Histogram *m)
{
	uint64_t sum = 0;
	size_t i;

	if (m == NULL)
		return 0;
	if (m->n_idx != m->n_count)
		return -1;
	for (i = 0; i < m->n_idx; i++) {
		if (m->idx[i] >= HIST_NBUCKETS)
			return -1;
		if (sum + m->count[i] < sum)
			return -1;
		sum += m->count[i];
	}
	if (sum != m->total)
		return -1;
	if (m->total == 0)
		return 0;
	if (m->min_ns > m->max_ns)
		return -1;
	for (i = 0; i < m->n_idx; i++)
		h->count[m->idx[i]] += m->count[i];
	h->total += m->total;
	if (m->min_ns < h->min)
		h->min = m->min_ns;
	if (m->max_ns > h->max)
		h->max = m->max_ns;
	return 0;
}
