/* PLACEHOLDER owned by the benchmark work (issue 4); replaced wholesale. */
#include <stdio.h>
#include "knobctl.h"

int cmd_bench(struct ctl *c, int argc, char **argv) { (void)c; (void)argc; fprintf(stderr, "knobctl: %s: not built yet\n", argv[0]); return 2; }
int cmd_results(struct ctl *c, int argc, char **argv) { return cmd_bench(c, argc, argv); }
