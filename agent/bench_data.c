/* Benchmark engine: what the I/O threads write and where.  Random offsets
 * come from a keyed Feistel permutation of the block indices (full
 * coverage, no short periods); written data is a slice of a random pool
 * made from the seed, at a position hashed from (seed, rank, offset), with
 * a stamp (magic, rank, offset) at the start of every 4 KiB, so a reader on
 * any node can recompute every byte, no two 4 KiB of any file are equal
 * (no dedup, however large the file), and the data does not compress
 * unless asked to (compress_pct).  A block of up to 1 MiB starts where it
 * ends within the same 2 MiB of the pool (bench_block_pos). */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bench.h"

#define POOL_SPAN	(8u << 20)	/* slice start positions: 8 Mi */
#define PAGE_FIT_MAX	(1u << 20)	/* blocks kept within a huge page */
#define COMP_CHUNK	4096		/* compress_pct applies per 4 KiB */

uint64_t
bench_mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* ------------------------------------------------------------ permutation */

void
bench_perm_init(struct bench_perm *p, uint64_t n, uint64_t key)
{
	unsigned bits = 2;

	memset(p, 0, sizeof(*p));
	p->n = n;
	while (bits < 64 && (1ull << bits) < n)
		bits++;
	bits += bits & 1;		/* two halves of equal width */
	p->half = bits / 2;
	p->mask = (1ull << p->half) - 1;
	for (int r = 0; r < BENCH_PERM_ROUNDS; r++)
		p->key[r] = key = bench_mix(key + (uint64_t)r);
}

/* One pass of the Feistel network over [0, 2^(2*half)): a bijection. */
static uint64_t
feistel(const struct bench_perm *p, uint64_t x)
{
	uint64_t l = (x >> p->half) & p->mask, r = x & p->mask, t;

	for (int i = 0; i < BENCH_PERM_ROUNDS; i++) {
		t = r;
		r = l ^ (bench_mix(r ^ p->key[i]) & p->mask);
		l = t;
	}
	return (l << p->half) | r;
}

uint64_t
bench_perm_at(const struct bench_perm *p, uint64_t i)
{
	uint64_t x = i;

	if (p->n <= 1)
		return 0;
	/* cycle-walking: the bijection restricted to [0, n) by following the
	 * cycle out of the range; at most 4 steps expected (2^bits < 4n) */
	do
		x = feistel(p, x);
	while (x >= p->n);
	return x;
}

/* ------------------------------------------------------------ content */

/* Where a block of bs bytes may start in each 2 MiB of the span so that it
 * ends in the same 2 MiB: 257 places or more for blocks of up to 1 MiB;
 * 0 (any page of the span) for longer blocks. */
static size_t
page_places(uint64_t bs)
{
	uint64_t b = (bs + BENCH_ALIGN - 1) / BENCH_ALIGN * BENCH_ALIGN;

	if (b == 0 || b > PAGE_FIT_MAX)
		return 0;
	return (size_t)((BENCH_HUGE - b) / BENCH_ALIGN + 1);
}

int
bench_pool_init(struct bench_pool *p, uint64_t seed, uint32_t compress_pct, uint64_t bs,
    size_t maxlen, int huge)
{
	uint64_t s = seed;
	size_t i, zero;

	memset(p, 0, sizeof(*p));
	p->span = POOL_SPAN;
	p->places = page_places(bs);
	p->len = POOL_SPAN + ((maxlen + 4095) & ~(size_t)4095) + 8;
	p->seed = seed;
	p->huge = huge;
	if ((p->buf = bench_buf_alloc(p->len, huge)) == NULL)
		return -1;
	for (i = 0; i + 8 <= p->len; i += 8) {
		uint64_t v = bench_mix(s++);
		memcpy(p->buf + i, &v, 8);
	}
	zero = compress_pct >= 100 ? COMP_CHUNK : (size_t)COMP_CHUNK * compress_pct / 100;
	for (i = 0; zero && i < p->len; i += COMP_CHUNK) {
		size_t len = p->len - i < COMP_CHUNK ? p->len - i : COMP_CHUNK;
		size_t z = zero < len ? zero : len;
		memset(p->buf + i + len - z, 0, z);
	}
	return 0;
}

void
bench_pool_free(struct bench_pool *p)
{
	bench_buf_free(p->buf, p->len, p->huge);
	memset(p, 0, sizeof(*p));
}

static uint64_t
pool_hash(const struct bench_pool *p, uint32_t rank, uint64_t key)
{
	return bench_mix(p->seed ^ bench_mix(((uint64_t)rank << 32) ^ bench_mix(key)));
}

const uint8_t *
bench_md_src(const struct bench_pool *p, uint32_t rank, uint64_t key)
{
	return p->buf + pool_hash(p, rank, key) % BENCH_MD_SPAN;
}

/* A block that straddles two huge pages of the writer's pool copy is two
 * physically separate pieces: O_DIRECT writes of 1 MiB blocks from
 * anywhere in the span went 7-10 % slower here than from within one page
 * (doc/measurements.md, "Where a block starts in the pool").  The span,
 * and so the variety of the data, stays 8 MiB. */
size_t
bench_block_pos(const struct bench_pool *p, uint32_t rank, uint64_t off)
{
	uint64_t h = pool_hash(p, rank, off), idx;

	if (p->places == 0)
		return (size_t)(h % (p->span / BENCH_ALIGN)) * BENCH_ALIGN;
	idx = h % ((p->span / BENCH_HUGE) * p->places);
	return (size_t)(idx / p->places) * BENCH_HUGE + (size_t)(idx % p->places) * BENCH_ALIGN;
}

void
bench_stamp(uint8_t *b, uint32_t rank, uint64_t off)
{
	uint32_t magic = BENCH_MAGIC;

	memcpy(b, &magic, 4);
	memcpy(b + 4, &rank, 4);
	memcpy(b + 8, &off, 8);
}

void
bench_warm(const uint8_t *b, size_t len)
{
	const volatile uint8_t *v = b;

	for (size_t k = 0; k < len; k += 64)
		(void)v[k];
}

const uint8_t *
bench_block_src(const struct bench_pool *p, uint32_t rank, uint64_t off)
{
	return p->buf + bench_block_pos(p, rank, off);
}

/* (rank, off + k)'s stamp at every 4 KiB k of b[0, bs) that holds one;
 * returns where the stamps end (a tail under 16 bytes gets none). */
static size_t
stamp_all(uint8_t *b, size_t bs, uint32_t rank, uint64_t off)
{
	size_t k;

	for (k = 0; k + 16 <= bs; k += BENCH_STAMP_EVERY)
		bench_stamp(b + k, rank, off + k);
	return k;
}

void
bench_fill(const uint8_t *src, uint8_t *b, size_t bs, uint32_t rank, uint64_t off)
{
	memcpy(b, src, bs);
	(void)stamp_all(b, bs, rank, off);
}

void
bench_block_fill(const struct bench_pool *p, uint8_t *b, size_t bs, uint32_t rank, uint64_t off)
{
	bench_fill(bench_block_src(p, rank, off), b, bs, rank, off);
}

uint8_t *
bench_block_stamp_in(const struct bench_pool *p, uint8_t *copy, size_t bs, uint32_t rank,
    uint64_t off)
{
	size_t pos = bench_block_pos(p, rank, off);
	uint8_t *b = copy + pos;
	size_t k = stamp_all(b, bs, rank, off);

	/* a tail under 16 bytes is data at a page start: another block's stamp
	 * may be there in the copy */
	if (k < bs)
		memcpy(b + k, p->buf + pos + k, bs - k);
	return b;
}

void
bench_block_warm(const struct bench_pool *p, size_t bs, uint32_t rank, uint64_t off)
{
	bench_warm(bench_block_src(p, rank, off), bs);
}

size_t
bench_block_iov(const struct bench_pool *p, size_t bs, uint32_t rank, uint64_t off, size_t from,
    uint8_t (*stamps)[16], struct iovec *iov, size_t maxiov, size_t *len)
{
	return bench_iov(bench_block_src(p, rank, off), bs, rank, off, from, stamps, iov, maxiov,
	    len);
}

size_t
bench_iov(const uint8_t *src, size_t bs, uint32_t rank, uint64_t off, size_t from,
    uint8_t (*stamps)[16], struct iovec *iov, size_t maxiov, size_t *len)
{
	size_t n = 0, k;

	for (k = from; k < bs && n + 2 <= maxiov; k += BENCH_STAMP_EVERY) {
		size_t piece = bs - k < BENCH_STAMP_EVERY ? bs - k : BENCH_STAMP_EVERY;

		if (piece < 16) {	/* a tail too short for a stamp: pool bytes */
			iov[n].iov_base = (void *)(uintptr_t)(src + k);
			iov[n++].iov_len = piece;
			continue;
		}
		bench_stamp(stamps[n / 2], rank, off + k);
		iov[n].iov_base = stamps[n / 2];
		iov[n++].iov_len = 16;
		iov[n].iov_base = (void *)(uintptr_t)(src + k + 16);
		iov[n++].iov_len = piece - 16;
	}
	*len = (k < bs ? k : bs) - from;
	return n;
}

/* The first wrong byte of b[k, bs) against what src stamped for (rank,
 * off) holds, from k (a multiple of 4 KiB) on: 1 + its index, or 0. */
static int64_t
check_from(const uint8_t *src, const uint8_t *b, size_t bs, uint32_t rank, uint64_t off,
    size_t k)
{
	uint8_t want[BENCH_STAMP_EVERY];
	size_t i;

	for (; k < bs; k += BENCH_STAMP_EVERY) {
		size_t piece = bs - k < BENCH_STAMP_EVERY ? bs - k : BENCH_STAMP_EVERY;

		memcpy(want, src + k, piece);
		if (piece >= 16)
			bench_stamp(want, rank, off + k);
		if (memcmp(b + k, want, piece) == 0)
			continue;
		for (i = 0; i < piece && b[k + i] == want[i]; i++)
			;
		return (int64_t)(k + i) + 1;
	}
	return 0;
}

int64_t
bench_block_check(const struct bench_pool *p, const uint8_t *b, size_t bs, uint32_t rank,
    uint64_t off, int full)
{
	uint8_t want[16];

	if (bs >= 16) {
		bench_stamp(want, rank, off);
		if (memcmp(b, want, 16) != 0)
			return -1;
	}
	return full ? check_from(bench_block_src(p, rank, off), b, bs, rank, off, 0) : 0;
}

int
bench_md_content(const struct bench_pool *p, const uint8_t *b, size_t ws, uint32_t rank,
    uint64_t key, int full)
{
	const uint8_t *src = bench_md_src(p, rank, key);
	size_t last = ws == 0 ? 0 : (ws - 1) / BENCH_STAMP_EVERY * BENCH_STAMP_EVERY;
	size_t edge = ws < 16 ? ws : 16;
	uint8_t stamp[16];

	if (full)
		return check_from(src, b, ws, rank, key, 0) == 0;
	/* cheap, as a data block's stamp check: the first 16 bytes and the
	 * last 16 (pool bytes, or the last 4 KiB's stamp under them) */
	if (ws >= 16) {
		bench_stamp(stamp, rank, key);
		if (memcmp(b, stamp, 16) != 0)
			return 0;
	}
	bench_stamp(stamp, rank, key + last);
	for (size_t x = ws - edge; x < ws; x++) {
		int stamped = x >= last && ws - last >= 16 && x - last < 16;

		if (b[x] != (stamped ? stamp[x - last] : src[x]))
			return 0;
	}
	return 1;
}
