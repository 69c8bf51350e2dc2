/* The arguments of an external benchmark tool (fio, ior, mdtest), which
 * the agent runs as root on every node, may not leave the phase's own
 * directory under --dir (DIR/knob.<phase>/, which knob removes): options
 * that name a path (fio --directory, ior -o, mdtest -d, a log or result
 * file), run a command (fio --exec_prerun, mdtest --run-cmd-before-phase),
 * load code (fio --ioengine=exec|external:LIB), change the node's settings
 * (fio --ioscheduler) or serve other hosts are refused, and so are fio job
 * files.  Checked by the controller before anything runs and again by the
 * agent; shared by both binaries. */
#ifndef KNOB_EXTARGS_H
#define KNOB_EXTARGS_H

#include <stddef.h>

/* 0 when args[0..n) of tool ("fio", "ior", "mdtest"; other names: 0) hold
 * none of those; else -1 with "TOOL OPTION (in 'ARG'): why" in err. */
int ext_args_check(const char *tool, char *const *args, size_t n, char *err, size_t errlen);

#endif
