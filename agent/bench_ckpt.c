/* Per-thread checkpoints of a running phase.  Each I/O thread records its
 * bytes and ops after an op when BENCH_CKPT_NS passed since its last
 * checkpoint, and then also the op before when that one ended more than
 * BENCH_CKPT_NS earlier (a pause, a wait at the stonewall): so the count of
 * every thread at the moment the first thread of the whole phase finished
 * can be read afterwards, interpolated between the checkpoints around it,
 * instead of assuming that every thread ran at an even pace.  A thread
 * writes only its own table, during the run; the runner reads it after the
 * join.  Past the memory bound every other checkpoint is dropped and the
 * interval doubles, so a run of hours keeps a bounded table. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "util.h"

struct ckpt_pt {
	uint64_t t, bytes, ops;
};

struct bench_ckpt {
	struct ckpt_pt *p;
	size_t n, cap, max;		/* held, room, most allowed */
	uint64_t every_ns;		/* interval */
	struct ckpt_pt prev;		/* the last op, recorded or not */
};

struct bench_ckpt *
bench_ckpt_new(size_t mem_max)
{
	struct bench_ckpt *c = xcalloc(1, sizeof(*c));

	c->every_ns = BENCH_CKPT_NS;
	c->max = mem_max / sizeof(struct ckpt_pt);
	if (c->max < 16)
		c->max = 16;
	return c;
}

void
bench_ckpt_free(struct bench_ckpt *c)
{
	if (c == NULL)
		return;
	free(c->p);
	free(c);
}

uint64_t
bench_ckpt_interval(const struct bench_ckpt *c)
{
	return c->every_ns;
}

/* Append one checkpoint, thinning (every other one, the newest kept) or
 * growing the table first when it is full. */
static void
put(struct bench_ckpt *c, const struct ckpt_pt *pt)
{
	if (c->n == c->cap) {
		if (c->cap >= c->max) {
			size_t w = 0;

			for (size_t r = (c->n - 1) % 2; r < c->n; r += 2)
				c->p[w++] = c->p[r];
			c->n = w;
			c->every_ns *= 2;
		} else {
			c->cap = c->cap ? c->cap * 2 : 64;
			if (c->cap > c->max)
				c->cap = c->max;
			c->p = xrealloc(c->p, c->cap * sizeof(*c->p));
		}
	}
	c->p[c->n++] = *pt;
}

void
bench_ckpt_op(struct bench_ckpt *c, uint64_t now, uint64_t bytes, uint64_t ops)
{
	struct ckpt_pt pt = { now, bytes, ops };
	uint64_t last = c->n ? c->p[c->n - 1].t : 0;

	if (c->n == 0 || now - last >= c->every_ns) {
		/* a gap before this op: the op before it marks where it began */
		if (c->prev.t > last && now - c->prev.t >= c->every_ns)
			put(c, &c->prev);
		put(c, &pt);
	}
	c->prev = pt;
}

/* Linear interpolation of v0..v1 over t0..t1 at at (t0 <= at <= t1). */
static uint64_t
lerp(uint64_t t0, uint64_t v0, uint64_t t1, uint64_t v1, uint64_t at)
{
	if (t1 <= t0 || v1 <= v0)
		return v0;
	return v0 + (uint64_t)((double)(v1 - v0) * (double)(at - t0) / (double)(t1 - t0));
}

void
bench_ckpt_at(const struct bench_ckpt *c, const struct bench_thread *t, uint64_t at,
    uint64_t *bytes, uint64_t *ops)
{
	struct ckpt_pt a = { t->start_ns, 0, 0 };
	struct ckpt_pt b = { t->end_ns, atomic_load(&t->bytes), atomic_load(&t->ops) };
	size_t lo = 0, hi = c ? c->n : 0, mid;

	*bytes = *ops = 0;
	if (t->start_ns == 0 || at <= t->start_ns)
		return;
	if (t->end_ns == 0 || at >= t->end_ns) {
		*bytes = b.bytes;
		*ops = b.ops;
		return;
	}
	/* the first checkpoint after at (binary search on time) */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (c->p[mid].t <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && c->p[lo - 1].t >= a.t)
		a = c->p[lo - 1];
	if (c && lo < c->n && c->p[lo].t <= b.t)
		b = c->p[lo];
	*bytes = lerp(a.t, a.bytes, b.t, b.bytes, at);
	*ops = lerp(a.t, a.ops, b.t, b.ops, at);
}
