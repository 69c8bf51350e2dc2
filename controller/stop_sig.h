/* SIGINT, SIGTERM and SIGHUP (the terminal or the ssh session gone) stop a
 * long command in steps: the first is noted for the command to stop
 * cleanly (stop_sig_first), the second for it to stop at once
 * (stop_sig_now: fan-out loops read it as ctl->interrupt; a third acts by
 * default), or, caught with STOP_SIG_THIRD_KILLS (a play, whose stop runs
 * a rollback that protects the nodes), the second is noted the same way
 * and said on stderr (stop_sig_words), and only the third acts at once:
 * its words said, then its default action.  A signal ignored when the
 * command started (nohup, a background job) stays ignored. */
#ifndef KNOB_STOP_SIG_H
#define KNOB_STOP_SIG_H

#include <signal.h>
#include <stdatomic.h>

#define STOP_NSIGS	3
#define STOP_SIG_THIRD_KILLS	1	/* stop_sig_catch: the second noted, the third acts */
#define STOP_WORDS_MAX	4096	/* longest words of stop_sig_words */

/* The dispositions the command started with, put back by stop_sig_restore. */
struct stop_sig {
	struct sigaction old[STOP_NSIGS];
};

/* Catch the stop signals (old dispositions into s; flags: 0 or
 * STOP_SIG_THIRD_KILLS); the signal flags start at 0, the words empty. */
void stop_sig_catch(struct stop_sig *s, int flags);
/* Put the dispositions of s back. */
void stop_sig_restore(const struct stop_sig *s);
/* The first stop signal's number (0: none yet), as a flag to poll. */
const atomic_int *stop_sig_first(void);
/* The second's (stop at once), likewise. */
const atomic_int *stop_sig_now(void);
/* "SIGINT", "SIGTERM", "SIGHUP" or "a signal". */
const char *stop_sig_name(int sig);
/* With STOP_SIG_THIRD_KILLS: what the nth signal (2 or 3) writes to
 * stderr from the handler: head, the signal's name, then tail (cut to
 * STOP_WORDS_MAX).  Safe to call again while signals arrive: the handler
 * writes the last words set in full. */
void stop_sig_words(int nth, const char *head, const char *tail);

#endif
