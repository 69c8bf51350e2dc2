/* The size rules of a data phase (seq-*, rand-*), one function for both
 * sides: the agent applies them to each spec it is sent
 * (agent/bench_params.c), knobctl bench to each phase it plans before
 * anything runs (controller/bench_plan.c), and so a play's loader, which
 * checks its benches with knobctl bench's parser. */
#ifndef KNOB_BENCH_SIZES_H
#define KNOB_BENCH_SIZES_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_BS_MAX	(64u << 20)	/* largest block or md write size */
#define BENCH_ALIGN	4096		/* O_DIRECT buffer and offset alignment */

/* A data phase as it runs: the kind's default block size applied. */
struct bench_sizes {
	uint64_t bs;		/* block size */
	uint64_t size;		/* per thread (N-to-N) or per rank (shared file) */
	uint64_t segments;	/* shared file: strided segments per rank (0, 1: one) */
	uint32_t threads;
	int direct, shared;
};

/* 0 when the agent takes these sizes, else -1 with the reason in err. */
int bench_sizes_check(const struct bench_sizes *s, char *err, size_t errlen);

#endif
