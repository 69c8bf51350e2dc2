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
 * after TS_RETRY_MS or when more is handed over. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knobctl.h"
#include "log.h"
#include "util.h"

#define TS_RETRY_MS 1000

struct tcache_saver {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* something handed over, quit, or the thread ended */
	struct tcache *handed;	/* changes not yet taken by the thread */
	int quit;		/* save what is pending, then end */
	int ended;
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

/* The thread: take, save (unlocked), again; after a save the lock kept
 * out, wait TS_RETRY_MS (or more changes); at quit, end once what is
 * pending was tried. */
static void *
ts_thread(void *arg)
{
	struct tcache_saver *sv = arg;
	struct tcache *mine = NULL;

	pthread_mutex_lock(&sv->mu);
	for (;;) {
		struct timespec until;
		int r;

		ts_take(sv, &mine);
		if (mine == NULL) {
			if (sv->quit)
				break;
			pthread_cond_wait(&sv->cv, &sv->mu);
			continue;
		}
		pthread_mutex_unlock(&sv->mu);
		r = tcache_save_later(mine);
		pthread_mutex_lock(&sv->mu);
		if (r != 1) {
			tcache_free(mine);
			mine = NULL;
			continue;
		}
		log_debug("%s: the ticket cache is locked by another command: saved later",
		    sv->who);
		if (sv->quit)
			break;	/* tried at exit: given up */
		until = ts_after_ms(TS_RETRY_MS);
		while (!sv->quit && sv->handed == NULL &&
		    pthread_cond_timedwait(&sv->cv, &sv->mu, &until) != ETIMEDOUT)
			;
	}
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

int
tcache_saver_stop(struct tcache_saver *sv, struct tcache *tc, int wait_s)
{
	struct timespec until = ts_after_ms(wait_s * 1000L);

	tcache_saver_hand(sv, tc);
	if (sv == NULL)
		return 0;
	pthread_mutex_lock(&sv->mu);
	sv->quit = 1;
	pthread_cond_broadcast(&sv->cv);
	while (!sv->ended && pthread_cond_timedwait(&sv->cv, &sv->mu, &until) != ETIMEDOUT)
		;
	if (!sv->ended) {	/* a hung file system: sv stays the thread's */
		pthread_mutex_unlock(&sv->mu);
		log_warnx("%s: the ticket cache's save did not end within %d s (a hung file "
		    "system?): exiting without it", sv->who, wait_s);
		return -1;
	}
	pthread_mutex_unlock(&sv->mu);
	pthread_join(sv->th, NULL);
	pthread_cond_destroy(&sv->cv);
	pthread_mutex_destroy(&sv->mu);
	free(sv);
	return 0;
}
