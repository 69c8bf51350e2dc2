/* The stop signals of a long command (stop_sig.h).  The flags are global:
 * a signal handler sets them; lock-free, so async-signal-safe (C11
 * 7.14.1.1).  Only one command catches them at a time. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stop_sig.h"

static const int stop_sigs[STOP_NSIGS] = { SIGINT, SIGTERM, SIGHUP };
static atomic_int first_sig, now_sig;
static volatile sig_atomic_t caught[STOP_NSIGS];	/* which of stop_sigs we catch */
static volatile sig_atomic_t third_kills;	/* STOP_SIG_THIRD_KILLS */

/* Words of the second and the third signal, each double-buffered: the
 * handler writes the buffer cur names, stop_sig_words fills the other
 * one and then flips cur. */
struct words {
	char head[2][128], tail[2][STOP_WORDS_MAX];
	atomic_int cur;
};
static struct words words[2];

/* Write s to stderr (async-signal-safe). */
static void
say_raw(const char *s)
{
	size_t len = strlen(s);

	while (len > 0) {
		ssize_t w = write(STDERR_FILENO, s, len);

		if (w <= 0)
			return;
		s += w;
		len -= (size_t)w;
	}
}

/* The words of w for signal sig, written to stderr (async-signal-safe). */
static void
say_words(struct words *w, int sig)
{
	int c = atomic_load(&w->cur);

	if (w->head[c][0] == '\0' && w->tail[c][0] == '\0')
		return;
	say_raw(w->head[c]);
	say_raw(stop_sig_name(sig));
	say_raw(w->tail[c]);
}

/* Every stop signal we catch back to its default action. */
static void
all_default(void)
{
	for (size_t i = 0; i < STOP_NSIGS; i++)
		if (caught[i])
			(void)signal(stop_sigs[i], SIG_DFL);	/* async-signal-safe */
}

/* The first stop signal is noted; the second too, and from then on each
 * caught one has its default action (a third ends knobctl there); with
 * third_kills the second is noted and said, and the third, said, takes
 * its default action at once. */
static void
on_stop_signal(int sig)
{
	int none = 0;

	if (atomic_compare_exchange_strong(&first_sig, &none, sig))
		return;
	none = 0;
	if (atomic_compare_exchange_strong(&now_sig, &none, sig)) {
		if (!third_kills) {
			all_default();
			return;
		}
		say_words(&words[0], sig);
		return;
	}
	say_words(&words[1], sig);
	all_default();
	(void)raise(sig);	/* delivered when this handler returns */
}

void
stop_sig_words(int nth, const char *head, const char *tail)
{
	struct words *w = &words[nth == 3];
	int next = !atomic_load(&w->cur);

	snprintf(w->head[next], sizeof(w->head[next]), "%s", head);
	snprintf(w->tail[next], sizeof(w->tail[next]), "%s", tail);
	atomic_store(&w->cur, next);
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
	for (size_t k = 0; k < 2; k++) {
		atomic_store(&words[k].cur, 0);
		words[k].head[0][0] = words[k].tail[0][0] = '\0';
	}
	third_kills = (flags & STOP_SIG_THIRD_KILLS) != 0;
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
