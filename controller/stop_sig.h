/* SIGINT, SIGTERM and SIGHUP (the terminal or the ssh session gone) stop a
 * long command in two steps: the first is noted for the command to stop
 * cleanly (stop_sig_first), the second for it to stop at once
 * (stop_sig_now: fan-out loops read it as ctl->interrupt; a third acts by
 * default), or, caught with STOP_SIG_SECOND_KILLS (a play, whose stop
 * runs a rollback that must not be cut short by a flag), the second acts
 * by default at once.  A signal ignored when the command started (nohup,
 * a background job) stays ignored. */
#ifndef KNOB_STOP_SIG_H
#define KNOB_STOP_SIG_H

#include <signal.h>
#include <stdatomic.h>

#define STOP_NSIGS	3
#define STOP_SIG_SECOND_KILLS	1	/* stop_sig_catch: the second acts at once */

/* The dispositions the command started with, put back by stop_sig_restore. */
struct stop_sig {
	struct sigaction old[STOP_NSIGS];
};

/* Catch the stop signals (old dispositions into s; flags: 0 or
 * STOP_SIG_SECOND_KILLS); the signal flags start at 0. */
void stop_sig_catch(struct stop_sig *s, int flags);
/* Put the dispositions of s back. */
void stop_sig_restore(const struct stop_sig *s);
/* The first stop signal's number (0: none yet), as a flag to poll. */
const atomic_int *stop_sig_first(void);
/* The second's (stop at once), likewise. */
const atomic_int *stop_sig_now(void);
/* "SIGINT", "SIGTERM", "SIGHUP" or "a signal". */
const char *stop_sig_name(int sig);

#endif
