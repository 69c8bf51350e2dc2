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

/* --sni: one listener for every instance (sim_sni.c). */
struct agent;
struct ev_base;
struct sim_sni;
struct sockaddr;
#define SNI_PEND_MAX	4096	/* connections waiting for their ClientHello */
/* The instance that answers server name name, or NULL (refused). */
typedef struct agent *(*sim_sni_lookup_fn)(void *arg, const char *name);
/* Hand connection fd (its ClientHello unread) to instance a. */
typedef void (*sim_sni_handoff_fn)(void *arg, struct agent *a, int fd,
    const struct sockaddr *sa, unsigned salen);
/* Listen on listen ("ADDR:PORT") from base's thread; a connection that
 * sends no ClientHello within deadline_s is closed.  NULL with err. */
struct sim_sni *sim_sni_new(struct ev_base *base, const char *listen, unsigned deadline_s,
    sim_sni_lookup_fn lookup, sim_sni_handoff_fn handoff, void *arg, char *err, size_t errlen);
void sim_sni_free(struct sim_sni *f);	/* on base's thread, or once it stopped */

#endif
