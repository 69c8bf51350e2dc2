/* Defaults of a data phase that a request may leave out, shared by the
 * controller (which puts what will run into the spec and the phase record)
 * and the agent (for a spec without them). */
#ifndef KNOB_BENCH_DEFAULTS_H
#define KNOB_BENCH_DEFAULTS_H

#define BENCH_BS_SEQ	(1u << 20)	/* seq-write, seq-read */
#define BENCH_BS_RAND	4096u		/* rand-write, rand-read, rand-rw */
#define BENCH_RWMIX	50u		/* rand-rw: percent of reads */
#define BENCH_FILES_PER_DIR 1024u	/* md-*: files per thread directory */

#include <stdint.h>

/* Files per directory of a metadata phase: the given count, else the default. */
static inline uint32_t
bench_files_per_dir(uint32_t files_per_dir)
{
	return files_per_dir ? files_per_dir : BENCH_FILES_PER_DIR;
}

/* Files per thread of a built-in metadata phase: the given count, else
 * one directory's worth (files_per_dir, itself defaulted). */
static inline uint64_t
bench_md_files(uint64_t md_files, uint32_t files_per_dir)
{
	return md_files ? md_files : bench_files_per_dir(files_per_dir);
}

#endif
