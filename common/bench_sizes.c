/* The size rules of a data phase, the agent's and knobctl bench's. */
#include <stdio.h>

#include "bench_sizes.h"

/* v as the options write it: "64k", "1m", "4500" (the largest binary
 * unit that divides it). */
static const char *
size_str(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "kmgt";
	int u = -1;

	while (v && v % 1024 == 0 && u + 1 < (int)sizeof(units) - 1) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu%.*s", (unsigned long long)v, u >= 0, u >= 0 ? &units[u] : "");
	return buf;
}

int
bench_sizes_check(const struct bench_sizes *s, char *err, size_t errlen)
{
	char a[32], b[32];

	if (s->bs < 16 || s->bs > BENCH_BS_MAX)
		snprintf(err, errlen, "block size %s: it must be 16 .. 64m",
		    size_str(s->bs, a, sizeof(a)));
	else if (s->size % s->bs)
		snprintf(err, errlen, "size %s is not a multiple of the block size %s",
		    size_str(s->size, a, sizeof(a)), size_str(s->bs, b, sizeof(b)));
	else if (s->direct && s->bs % BENCH_ALIGN)
		snprintf(err, errlen, "O_DIRECT needs a block size that is a multiple of %d, "
		    "not %s", BENCH_ALIGN, size_str(s->bs, a, sizeof(a)));
	else if (s->shared && s->threads && s->size > UINT64_MAX / s->threads)
		snprintf(err, errlen, "shared file too large");
	else if (s->segments > (1ull << 32))
		snprintf(err, errlen, "too many segments");
	else if (s->segments > 1 && s->size % (s->segments * s->bs))
		snprintf(err, errlen, "size per rank %s is not a multiple of segments (%llu) x "
		    "block size %s", size_str(s->size, a, sizeof(a)),
		    (unsigned long long)s->segments, size_str(s->bs, b, sizeof(b)));
	else
		return 0;
	return -1;
}
