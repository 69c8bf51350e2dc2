/* libFuzzer target: sweep files (XML, sweep.rng, item values) and the
 * per-node requests built from them.  A sweep file loads or is refused
 * with "file:line: message" errors; a loaded one resolves into a
 * HealthRequest for every node of a small inventory (groups, node sets,
 * overrides), which must pack; never a crash or a leak.  The schema is
 * copied beside the fuzzed file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "knobctl.h"
#include "sweep.h"
#include "util.h"

static struct ctl ctl;

static const char *const nodes[] = { "n1", "n2", "n3", "n4", "io01", "other" };

/* Schema beside the input, and an inventory with two groups. */
static void
init(void)
{
	fuzz_copy_in("sweep/sweep.rng");
	ctl.inv = fuzz_inventory("<cluster><group name=\"clients\" nodes=\"n[1-4]\"/>"
	    "<group name=\"nsd\" nodes=\"io01\"/><node name=\"n[1-4]\"/><node name=\"io01\"/>"
	    "</cluster>\n");
	ctl.out = stdout;
}

/* Build, pack and free every node's request. */
static void
resolve_all(const struct sweep_file *sf)
{
	for (size_t i = 0; i < nitems(nodes); i++) {
		Knob__HealthRequest req;
		struct sweep_limits lim;
		struct strvec errs = { 0 };
		uint8_t *buf;
		size_t n;

		if (sweep_request_for(&ctl, sf, nodes[i], i % 2 ? "/tmp/knob-probe" : NULL, &req,
		    &lim, &errs) < 0 && errs.n == 0)
			abort();	/* a refusal always says why */
		n = knob__health_request__get_packed_size(&req);
		buf = xmalloc(n + 1);
		if (knob__health_request__pack(&req, buf) != n)
			abort();
		free(buf);
		sweep_request_free(&req);
		strvec_free(&errs);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strvec errs = { 0 };
	struct sweep_file *sf;
	const char *path;

	if (ctl.inv == NULL)
		init();
	if ((path = fuzz_file("fuzzed.xml", data, size)) == NULL)
		return 0;
	sf = sweep_file_load(path, &errs);
	if (sf == NULL && errs.n == 0)
		abort();	/* a refusal always says why */
	if (sf != NULL)
		resolve_all(sf);
	sweep_file_free(sf);
	strvec_free(&errs);
	return 0;
}
