/* libFuzzer target: the parsers of IOR's text summary and JSON output. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ext_summary s = { 0 };
	char *text = fuzz_string(data, size), err[512];

	if (ext_parse_ior_text(text, &s, err, sizeof(err)) == 0 && s.n > EXT_MAX_OPS)
		abort();
	memset(&s, 0, sizeof(s));
	if (ext_parse_ior_json(text, &s, err, sizeof(err)) == 0 && s.n > EXT_MAX_OPS)
		abort();
	free(text);
	return 0;
}
