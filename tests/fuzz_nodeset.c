/* libFuzzer target: the node-set parser.  Whatever expands must fold into
 * an expression that expands back to the same set of names. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "nodeset.h"
#include "util.h"

/* "@g" is a small group; "@loop" refers to itself (a cycle to refuse). */
static int
groups(void *arg, const char *group, struct strvec *out)
{
	(void)arg;
	if (strcmp(group, "g") == 0) {
		strvec_push(out, "g[1-3],x01");
		return 0;
	}
	if (strcmp(group, "loop") == 0) {
		strvec_push(out, "a,@loop");
		return 0;
	}
	return -1;
}

static int
cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Same names, in any order (expansion drops duplicates). */
static int
same_set(struct strvec *a, struct strvec *b)
{
	if (a->n != b->n)
		return 0;
	if (a->n == 0)
		return 1;
	qsort(a->v, a->n, sizeof(*a->v), cmp);
	qsort(b->v, b->n, sizeof(*b->v), cmp);
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return 0;
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strvec names = { 0 }, back = { 0 };
	char *expr = fuzz_string(data, size), *folded = NULL, err[512];

	if (nodeset_expand(expr, groups, NULL, &names, err, sizeof(err)) < 0 ||
	    names.n > 20000)	/* large sets: expansion only, fold is slow to check */
		goto out;
	folded = nodeset_fold(names.v, names.n);
	if (nodeset_expand(folded, NULL, NULL, &back, err, sizeof(err)) < 0)
		abort();	/* the fold of a valid set must parse */
	if (!same_set(&names, &back))
		abort();	/* ... and give the same names */
out:
	free(folded);
	free(expr);
	strvec_free(&names);
	strvec_free(&back);
	return 0;
}
