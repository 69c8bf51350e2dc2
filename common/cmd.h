/* Running a command with a deadline (cmd.c). */
#ifndef KNOB_CMD_H
#define KNOB_CMD_H

#include <stddef.h>

/* Run argv (argv[0] a path, or a name looked up in PATH) with stdin
 * /dev/null, in a process group of its own; stdout into out and stderr
 * into err (bounded, NUL-terminated; lengths may be 0).  Past timeout_ms
 * the group is killed.  The exit status (>= 0; 128 + the signal when one
 * ended it), -ETIMEDOUT, or -errno when it cannot run. */
int cmd_run(char *const argv[], int timeout_ms, char *out, size_t outlen, char *err,
    size_t errlen);

#endif
