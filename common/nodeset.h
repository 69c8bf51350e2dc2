/* ClusterShell-style node sets: "node[001-016,020]", "r[1-2]n[01-08]",
 * "a,b,c", "@group", with exclusion.  Expansion preserves order of first
 * appearance and drops duplicates; folding groups names that differ in one
 * numeric field, keeping zero padding. */
#ifndef KNOB_NODESET_H
#define KNOB_NODESET_H

#include <stddef.h>
#include "util.h"

/* Resolves "@name" to a list of node-set expressions; returns 0 or -1. */
typedef int (*nodeset_group_fn)(void *arg, const char *group, struct strvec *out);

/* Expand expr and append the names to out.  groups may be NULL (then
 * "@x" is an error).  On error returns -1 with a message in err. */
int nodeset_expand(const char *expr, nodeset_group_fn groups, void *garg,
    struct strvec *out, char *err, size_t errlen);
/* Remove from set every name in exclude (both already expanded). */
void nodeset_exclude(struct strvec *set, const struct strvec *exclude);
/* Fold names into the shortest bracket form; malloc'd string. */
char *nodeset_fold(char *const *names, size_t n);

#endif
