/* The arguments of an external benchmark tool (fio, ior, mdtest) may not
 * name paths: knob puts the tool's files in the phase's own directory under
 * --dir (DIR/knob.<phase>/) and removes exactly that, so an option that
 * points the tool elsewhere (fio --directory, --filename, ior -o, mdtest -d,
 * a result or log file) is refused, by the controller before anything runs
 * and again by the agent.  Shared by both binaries. */
#ifndef KNOB_EXTARGS_H
#define KNOB_EXTARGS_H

#include <stddef.h>

/* 0 when args[0..n) of tool ("fio", "ior", "mdtest"; other names: 0) name
 * no path; else -1 with "TOOL OPTION: ..." in err. */
int ext_args_check(const char *tool, char *const *args, size_t n, char *err, size_t errlen);

#endif
