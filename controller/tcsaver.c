/* The ticket cache's saver: one thread that writes the changes an event
 * loop hands it (the connection holder's, cmd_mux.c), so that the loop
 * never waits on the cache's lock or its disk (read, merge, rewrite,
 * fsync, rename: ~8 MB at 10,000 nodes, or as long as a hung file system
 * holds it).  The loop copies what changed (tcache_changes: memory only)
 * and hands it over under a mutex that the thread holds only to take it;
 * the thread owns what it took, so nothing of the loop's cache is shared.
 * One save at a time: changes handed over while one runs wait for it and
 * are merged, newest last.  A save that finds the lock held by another
 * command (longer than a direct command's save waits) is tried again
 * after TS_RETRY_MS or when more is handed over.  A save whose write
 * fails (ENOSPC, EIO, a read-only directory) keeps its changes, merged
 * with what is handed over meanwhile (the newest ticket of a node wins),
 * and is tried again after TS_FAIL_MIN_MS, doubled after each failure up
 * to TS_FAIL_MAX_MS: warned once, and once more when a save succeeds. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knobctl.h"
#include "log.h"
#include "util.h"

#define TS_RETRY_MS 1000	/* after the lock was held too long */
#define TS_FAIL_MIN_MS 500	/* after a failed write, doubled ... */
#define TS_FAIL_MAX_MS 30000	/* ... up to this */

struct tcache_saver {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* something handed over, quit, or the thread ended */
	struct tcache *handed;	/* changes not yet taken by the thread */
	int quit;		/* save what is pending, then end */
	int ended;
	int lost;		/* a save given up at quit: its tickets not saved */
	int fails;		/* failed writes in a row */
	size_t nsaving;		/* nodes of the save running (0: none) ... */
	char saving[512];	/* ... and their names, for the log at stop */
	char who[32];		/* for the log */
};

/* A deadline ms from now on CLOCK_REALTIME (pthread_cond_timedwait's). */
static struct timespec
ts_after_ms(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* Under sv->mu: what was handed over, merged over *mine (or become it). */
static void
ts_take(struct tcache_saver *sv, struct tcache **mine)
{
	if (sv->handed == NULL)
		return;
	if (*mine == NULL)
		*mine = sv->handed;
	else
		tcache_absorb(*mine, sv->handed);
	sv->handed = NULL;
}

/* Under sv->mu: say how save r of mine (tcache_save_later's) went: a
 * failure once (then at debug level), a success after failures once. */
static void
ts_said(struct tcache_saver *sv, int r, const struct tcache *mine)
{
	if (r == 0 && sv->fails > 0)
		log_warnx("%s: %s: the ticket cache is saved again (after %d failed tries)",
		    sv->who, tcache_path(mine), sv->fails);
	if (r == 0)
		sv->fails = 0;
	else if (r == 1)
		log_debug("%s: the ticket cache is locked by another command: saved later",
		    sv->who);
	else if (++sv->fails == 1)
		log_warnx("%s: %s: cannot write the ticket cache: %s: the tickets of %zu nodes "
		    "are kept and tried again", sv->who, tcache_path(mine), strerror(-r),
		    tcache_pending(mine, NULL, 0));
	else
		log_debug("%s: %s: the ticket cache still cannot be written: %s (try %d)",
		    sv->who, tcache_path(mine), strerror(-r), sv->fails);
}

/* Under sv->mu: wait before the next try of a save that did not happen:
 * after a failed write its backoff (quit ends it), after a held lock
 * TS_RETRY_MS or until more is handed over. */
static void
ts_wait_retry(struct tcache_saver *sv, int r)
{
	long ms = TS_FAIL_MIN_MS;
	struct timespec until;

	for (int i = 1; i < sv->fails && ms < TS_FAIL_MAX_MS; i++)
		ms *= 2;
	until = ts_after_ms(r == 1 ? TS_RETRY_MS : ms < TS_FAIL_MAX_MS ? ms : TS_FAIL_MAX_MS);
	while (!sv->quit && (r < 0 || sv->handed == NULL) &&
	    pthread_cond_timedwait(&sv->cv, &sv->mu, &until) != ETIMEDOUT)
		;
}

/* The thread: take, save (unlocked), again; after a save that did not
 * happen, wait (ts_wait_retry) and try again with what came meanwhile;
 * at quit, end once what is pending was tried, naming what was not saved. */
static void *
ts_thread(void *arg)
{
	struct tcache_saver *sv = arg;
	struct tcache *mine = NULL;

	pthread_mutex_lock(&sv->mu);
	for (;;) {
		int r;

		ts_take(sv, &mine);
		if (mine == NULL) {
			if (sv->quit)
				break;
			pthread_cond_wait(&sv->cv, &sv->mu);
			continue;
		}
		sv->nsaving = tcache_pending(mine, sv->saving, sizeof(sv->saving));
		pthread_mutex_unlock(&sv->mu);
		r = tcache_save_later(mine);
		pthread_mutex_lock(&sv->mu);
		ts_said(sv, r, mine);
		if (r == 0) {
			tcache_free(mine);
			mine = NULL;
			continue;
		}
		if (sv->quit) {	/* tried at exit: given up */
			log_warnx("%s: exiting without saving the tickets of %zu nodes: %s",
			    sv->who, sv->nsaving, sv->saving);
			sv->lost = 1;
			break;
		}
		ts_wait_retry(sv, r);
	}
	sv->nsaving = 0;
	sv->ended = 1;
	pthread_cond_broadcast(&sv->cv);
	pthread_mutex_unlock(&sv->mu);
	tcache_free(mine);
	return NULL;
}

struct tcache_saver *
tcache_saver_start(const char *who)
{
	struct tcache_saver *sv = xcalloc(1, sizeof(*sv));

	snprintf(sv->who, sizeof(sv->who), "%s", who);
	pthread_mutex_init(&sv->mu, NULL);
	pthread_cond_init(&sv->cv, NULL);
	if (pthread_create(&sv->th, NULL, ts_thread, sv) != 0) {
		pthread_cond_destroy(&sv->cv);
		pthread_mutex_destroy(&sv->mu);
		free(sv);
		return NULL;
	}
	return sv;
}

void
tcache_saver_hand(struct tcache_saver *sv, struct tcache *tc)
{
	struct tcache *c;

	if (sv == NULL) {	/* no thread: saved here, as a command does */
		tcache_save(tc);
		return;
	}
	if ((c = tcache_changes(tc)) == NULL)
		return;
	pthread_mutex_lock(&sv->mu);
	if (sv->handed == NULL)
		sv->handed = c;
	else
		tcache_absorb(sv->handed, c);
	pthread_cond_signal(&sv->cv);
	pthread_mutex_unlock(&sv->mu);
}

/* Under sv->mu: say that the save running did not end within wait_s, and
 * the nodes whose tickets go unsaved (its own, and those handed over
 * after it began). */
static void
ts_stuck(struct tcache_saver *sv, int wait_s)
{
	char after[512];
	size_t n = tcache_pending(sv->handed, after, sizeof(after));

	log_warnx("%s: the ticket cache's save did not end within %d s (a hung file "
	    "system?): exiting without it: the tickets of %zu nodes not saved: %s%s%s",
	    sv->who, wait_s, sv->nsaving + n, sv->saving, sv->nsaving && n ? ", " : "", after);
}

int
tcache_saver_stop(struct tcache_saver *sv, struct tcache *tc, int wait_s)
{
	struct timespec until = ts_after_ms(wait_s * 1000L);
	int lost;

	if (sv == NULL)	/* no thread: saved here, as a command does */
		return tcache_save(tc) < 0 ? -1 : 0;
	tcache_saver_hand(sv, tc);
	pthread_mutex_lock(&sv->mu);
	sv->quit = 1;
	pthread_cond_broadcast(&sv->cv);
	while (!sv->ended && pthread_cond_timedwait(&sv->cv, &sv->mu, &until) != ETIMEDOUT)
		;
	if (!sv->ended) {	/* a hung file system: sv stays the thread's */
		ts_stuck(sv, wait_s);
		pthread_mutex_unlock(&sv->mu);
		return -1;
	}
	lost = sv->lost;
	pthread_mutex_unlock(&sv->mu);
	pthread_join(sv->th, NULL);
	pthread_cond_destroy(&sv->cv);
	pthread_mutex_destroy(&sv->mu);
	free(sv);
	return lost ? -1 : 0;
}
