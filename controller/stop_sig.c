/* The stop signals of a long command (stop_sig.h).  The flags are global:
 * a signal handler sets them; lock-free, so async-signal-safe (C11
 * 7.14.1.1).  Only one command catches them at a time. */
#include <string.h>

#include "stop_sig.h"

static const int stop_sigs[STOP_NSIGS] = { SIGINT, SIGTERM, SIGHUP };
static atomic_int first_sig, now_sig;
static volatile sig_atomic_t caught[STOP_NSIGS];	/* which of stop_sigs we catch */
static volatile sig_atomic_t second_kills;	/* STOP_SIG_SECOND_KILLS */

/* The first stop signal is noted; the second too, and from then on each
 * caught one has its default action (a third ends knobctl there); with
 * second_kills the second takes its default action at once. */
static void
on_stop_signal(int sig)
{
	int none = 0;

	if (atomic_compare_exchange_strong(&first_sig, &none, sig))
		return;
	none = 0;
	atomic_compare_exchange_strong(&now_sig, &none, sig);
	for (size_t i = 0; i < STOP_NSIGS; i++)
		if (caught[i])
			(void)signal(stop_sigs[i], SIG_DFL);	/* async-signal-safe */
	if (second_kills)
		(void)raise(sig);	/* delivered when this handler returns */
}

void
stop_sig_catch(struct stop_sig *s, int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < STOP_NSIGS; i++)
		sigaddset(&sa.sa_mask, stop_sigs[i]);
	atomic_store(&first_sig, 0);
	atomic_store(&now_sig, 0);
	second_kills = (flags & STOP_SIG_SECOND_KILLS) != 0;
	for (size_t i = 0; i < STOP_NSIGS; i++) {
		caught[i] = sigaction(stop_sigs[i], NULL, &s->old[i]) == 0 &&
		    s->old[i].sa_handler != SIG_IGN;
		if (caught[i])
			(void)sigaction(stop_sigs[i], &sa, NULL);
	}
}

void
stop_sig_restore(const struct stop_sig *s)
{
	for (size_t i = 0; i < STOP_NSIGS; i++)
		if (caught[i]) {
			caught[i] = 0;
			(void)sigaction(stop_sigs[i], &s->old[i], NULL);
		}
}

const atomic_int *
stop_sig_first(void)
{
	return &first_sig;
}

const atomic_int *
stop_sig_now(void)
{
	return &now_sig;
}

const char *
stop_sig_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" :
	    "a signal";
}
