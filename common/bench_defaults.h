/* Defaults of a data phase that a request may leave out, shared by the
 * controller (which puts what will run into the spec and the phase record)
 * and the agent (for a spec without them). */
#ifndef KNOB_BENCH_DEFAULTS_H
#define KNOB_BENCH_DEFAULTS_H

#define BENCH_BS_SEQ	(1u << 20)	/* seq-write, seq-read */
#define BENCH_BS_RAND	4096u		/* rand-write, rand-read, rand-rw */
#define BENCH_RWMIX	50u		/* rand-rw: percent of reads */

#endif
