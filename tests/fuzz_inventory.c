/* libFuzzer target: the inventory (cluster.xml) loader.  Loads or is
 * refused with a reason; every node it loads has a valid port, and every
 * group it accepted expands. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "knobctl.h"
#include "nodeset.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct inventory *inv;
	const char *path = fuzz_file("cluster.xml", data, size);
	char err[4096];

	if (path == NULL)
		return 0;
	err[0] = '\0';
	inv = inventory_load(path, err, sizeof(err));
	if (inv == NULL) {
		if (err[0] == '\0')
			abort();
		return 0;
	}
	for (size_t i = 0; i < inv->nnodes; i++) {
		const char *addr = NULL;
		int port = 0;

		inventory_target(inv, inv->nodes[i].name, &addr, &port);
		if (addr == NULL || port <= 0 || port > 65535)
			abort();
	}
	for (size_t i = 0; i < inv->ngroups; i++) {
		struct strvec names = { 0 };
		char expr[300];

		snprintf(expr, sizeof(expr), "@%s", inv->groups[i].name);
		if (nodeset_expand(expr, inventory_group_fn, inv, &names, err, sizeof(err)) < 0)
			abort();
		strvec_free(&names);
	}
	inventory_free(inv);
	return 0;
}
