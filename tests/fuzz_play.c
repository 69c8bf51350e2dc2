/* libFuzzer target: the play loader (XML, schema, ${NAME} variables, step
 * options checked as the bench command line would be).  A play loads or
 * is refused with "file:line: message" errors; never a crash or a leak.
 * The play's schema is copied beside the fuzzed file, and a small
 * inventory stands in for cluster.xml. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "knobctl.h"
#include "play.h"
#include "util.h"

static struct ctl ctl;

/* Schema beside the input, and an inventory of four nodes. */
static void
init(void)
{
	fuzz_copy_in("ansible-like-plays/play.rng");
	ctl.inv = fuzz_inventory("<cluster><group name=\"io\" nodes=\"n[1-4]\"/>"
	    "<node name=\"n[1-4]\"/></cluster>\n");
	ctl.timeout = 30;
	ctl.connect_timeout = 5;
	ctl.out = stdout;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strvec vars = { 0 }, errs = { 0 };
	struct play *pl;
	const char *path;

	if (ctl.inv == NULL)
		init();
	if ((path = fuzz_file("fuzzed.xml", data, size)) == NULL)
		return 0;
	strvec_push(&vars, "ram_x2=1g");
	strvec_push(&vars, "cache_x2=1g");
	pl = play_load(&ctl, path, &vars, &errs);
	if (pl == NULL && errs.n == 0)
		abort();	/* a refusal always says why */
	play_free(pl);
	strvec_free(&vars);
	strvec_free(&errs);
	return 0;
}
