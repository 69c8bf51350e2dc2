/* libFuzzer target: the parser of fio's --output-format=json. */
#include <stdlib.h>

#include "bench.h"
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ext_summary s = { 0 };
	char *text = fuzz_string(data, size), err[512];

	if (ext_parse_fio_json(text, &s, err, sizeof(err)) == 0 && s.n > EXT_MAX_OPS)
		abort();
	free(text);
	return 0;
}
