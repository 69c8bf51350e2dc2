/*
 * The engine's I/O memory: the block buffers, the queued slots, the data
 * pool and an O_DIRECT writer's copy of it.
 *
 * Each is an anonymous mapping.  One of BENCH_HUGE_MIN or more is laid on
 * whole 2 MiB pages, aligned and advised MADV_HUGEPAGE, so that with
 * transparent huge pages (enabled "always" or "madvise") every 1 MiB
 * transfer is one physically contiguous piece.  With 4 KiB pages an
 * O_DIRECT transfer is a scatter list of whatever runs of adjacent pages
 * the allocator handed out: on a segment-limited device (virtio-blk,
 * many HBAs) that cost up to 2.5x here, and it changed from run to run
 * (README, "The engine's buffers").  Smaller buffers stay on 4 KiB pages:
 * rounding them up would cost more memory than the few segments save.
 * --buffer-pages 4k (bench_params.small_pages) keeps every buffer on 4 KiB
 * pages, the allocator's layout that IOR and fio get.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"

/* The bytes a buffer of len takes: whole pages, huge ones from
 * BENCH_HUGE_MIN when huge. */
size_t
bench_buf_size(size_t len, int huge)
{
	size_t unit = huge && len >= BENCH_HUGE_MIN ? BENCH_HUGE : BENCH_ALIGN;

	if (len == 0)
		len = 1;
	return (len + unit - 1) / unit * unit;
}

/* A zeroed buffer of bench_buf_size(len, huge) bytes, NULL when out of
 * memory. */
void *
bench_buf_alloc(size_t len, int huge)
{
	size_t size = bench_buf_size(len, huge);
	size_t extra = huge && len >= BENCH_HUGE_MIN ? BENCH_HUGE : 0;	/* to align */
	uint8_t *p, *a;

	/* 4 KiB pages are faulted in here, in one pass of the kernel's, which
	 * hands out longer runs of adjacent frames than faulting them one by
	 * one as the buffer is first written: an O_DIRECT writer's pool copy
	 * went from 1.35-1.68 to 1.18-1.30 device requests per MiB
	 * (doc/measurements.md, "Where a block starts in the pool").  Huge ones
	 * only after the advice below. */
	p = mmap(NULL, size + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
	    (huge ? 0 : MAP_POPULATE), -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* 4k: not even THP "always" may merge these pages */
	if (!huge)
		(void)madvise(p, size, MADV_NOHUGEPAGE);
	if (extra == 0)
		return p;
	/* keep the 2 MiB-aligned part of the over-sized mapping */
	a = (uint8_t *)(((uintptr_t)p + BENCH_HUGE - 1) & ~(uintptr_t)(BENCH_HUGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + extra > a)
		munmap(a + size, (size_t)(p + extra - a));
	/* advice only: with THP "never" the pages stay 4 KiB (bench_buf_pages) */
	(void)madvise(a, size, MADV_HUGEPAGE);
	return a;
}

/* Unmap a bench_buf_alloc(len, huge) buffer (NULL: nothing). */
void
bench_buf_free(void *p, size_t len, int huge)
{
	if (p != NULL)
		munmap(p, bench_buf_size(len, huge));
}

/* Whether this process's buffers of a megabyte or more get huge pages:
 * NULL when they can, else why not (for the phase's warning).  The
 * kernel's own setting: a --sysroot tree does not place this memory. */
const char *
bench_buf_pages(void)
{
	char mode[128] = "";
	FILE *f;

	if ((f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re")) == NULL)
		return "transparent huge pages are not available";
	if (fgets(mode, sizeof(mode), f) == NULL)
		mode[0] = '\0';
	fclose(f);
	if (strstr(mode, "[never]") != NULL)
		return "transparent huge pages are off";
	return NULL;
}
