/* libFuzzer target: profile XML load and resolve (schema, values,
 * inheritance from the shipped profiles).  A profile either resolves or
 * is refused with "file:line: message" errors; never a crash or a leak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "profile.h"
#include "util.h"

/* The schema beside the fuzzed file, as profile_load looks for it there. */
static void
copy_schema(void)
{
	char *rng = NULL, dst[4096];
	size_t len;

	if (read_file_bounded("profiles/profile.rng", 1 << 20, &rng, &len) < 0) {
		fprintf(stderr, "run from the source tree: profiles/profile.rng not found\n");
		abort();
	}
	snprintf(dst, sizeof(dst), "%s/profile.rng", fuzz_dir());
	if (write_file_atomic(dst, rng, len, 0600) < 0)
		abort();
	free(rng);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int once;
	struct strvec errs = { 0 };
	struct profile *p;
	const char *path;

	if (!once++)
		copy_schema();
	if ((path = fuzz_file("fuzzed.xml", data, size)) == NULL)
		return 0;
	p = profile_load(path, &errs);
	if (p == NULL && errs.n == 0)
		abort();	/* a refusal always says why */
	for (size_t i = 0; p == NULL && i < errs.n; i++)
		if (strchr(errs.v[i], ':') == NULL)
			abort();	/* ... as file:line: message */
	profile_free(p);
	strvec_free(&errs);
	return 0;
}
