/* The size rules of a data phase, the agent's and knobctl bench's. */
#include <stdio.h>

#include "bench_sizes.h"
#include "util.h"

int
bench_sizes_check(const struct bench_sizes *s, char *err, size_t errlen)
{
	char bs[32], size[32];

	size_fmt(bs, sizeof(bs), s->bs);
	size_fmt(size, sizeof(size), s->size);
	if (s->bs < 16 || s->bs > BENCH_BS_MAX)
		snprintf(err, errlen, "block size %s: it must be 16 .. 64m", bs);
	else if (s->size % s->bs)
		snprintf(err, errlen, "size %s is not a multiple of the block size %s", size,
		    bs);
	else if (s->direct && s->bs % BENCH_ALIGN)
		snprintf(err, errlen, "O_DIRECT needs a block size that is a multiple of %d, "
		    "not %s", BENCH_ALIGN, bs);
	else if (s->shared && s->threads && s->size > UINT64_MAX / s->threads)
		snprintf(err, errlen, "shared file too large");
	else if (s->segments > (1ull << 32))
		snprintf(err, errlen, "too many segments");
	else if (s->segments > 1 && s->size % (s->segments * s->bs))
		snprintf(err, errlen, "size per rank %s is not a multiple of segments (%llu) x "
		    "block size %s", size, (unsigned long long)s->segments, bs);
	else
		return 0;
	return -1;
}
