/* libFuzzer target: profile XML load and resolve (schema, values,
 * inheritance from the shipped profiles).  A profile either resolves or
 * is refused with "file:line: message" errors; never a crash or a leak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "profile.h"
#include "util.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int once;
	struct strvec errs = { 0 };
	struct profile *p;
	const char *path;

	if (!once++)	/* the schema beside the fuzzed file, where profile_load looks */
		fuzz_copy_in("profiles/profile.rng");
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
