/* knob-sim: many agent instances in one process (the fleet simulator). */
#ifndef KNOB_SIM_H
#define KNOB_SIM_H

#include <stddef.h>

/* One file of the fake tree, relative to an instance's sysroot. */
struct sim_file {
	const char *path;
	const char *content;
};
extern const struct sim_file sim_tree[];	/* terminated by { NULL, NULL } */

/* Write the fake tree under root (directories made as needed). 0 or -1. */
int sim_tree_make(const char *root);
/* mkdir -p path (mode 0755). 0 or -1 (errno). */
int sim_mkdirs(const char *path);

#endif
