/* PLACEHOLDER owned by the tuning work (issue 3); replaced wholesale. */
#include <stdio.h>
#include "knobctl.h"

int cmd_profile(struct ctl *c, int argc, char **argv) { (void)c; (void)argc; fprintf(stderr, "knobctl: %s: not built yet\n", argv[0]); return 2; }
int cmd_apply(struct ctl *c, int argc, char **argv) { return cmd_profile(c, argc, argv); }
int cmd_verify(struct ctl *c, int argc, char **argv) { return cmd_profile(c, argc, argv); }
int cmd_rollback(struct ctl *c, int argc, char **argv) { return cmd_profile(c, argc, argv); }
