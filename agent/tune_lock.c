/* The per-node tuning lock: one owner at a time ("CN pid N" of the
 * controller, or a bench phase), with a lease, so that a second controller
 * is told busy instead of silently overwriting the first one's apply.
 * Apply and rollback hold it for their transaction; bench phases hold it
 * from prepare to the end of the phase and renew it on controller activity. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tune.h"
#include "util.h"

void
tune_lock_init(struct tune_state *t)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&t->lmu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->lcv, &ca);
	pthread_condattr_destroy(&ca);
}

void
tune_lock_fini(struct tune_state *t)
{
	pthread_mutex_destroy(&t->lmu);
	pthread_cond_destroy(&t->lcv);
}

int
tune_lock_busy(const struct tune_state *t)
{
	return t->held && (int64_t)(now_mono_ns() - t->expires_ns) < 0;
}

/* "busy (held by OWNER since 2026-12-01T08:40:19Z)"; lmu held. */
static void
busy_msg(const struct tune_state *t, char *why, size_t len)
{
	time_t since = (time_t)(t->since_ns / 1000000000ull);
	struct tm tm;
	char ts[32];

	gmtime_r(&since, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(why, len, "busy (held by %s since %s)", t->owner, ts);
}

int
tune_lock_take(struct agent *a, const char *owner, unsigned lease_ms, unsigned wait_ms,
    const int *cancel, uint64_t *token, char *why, size_t whylen)
{
	struct tune_state *t = a->tune;
	uint64_t deadline = now_mono_ns() + (uint64_t)wait_ms * 1000000ull;
	int rc = 0;

	*token = 0;
	if (t == NULL)
		return 0;	/* no tuning here (bench-only agents): nothing to guard */
	pthread_mutex_lock(&t->lmu);
	for (;;) {
		uint64_t now = now_mono_ns(), until;
		struct timespec ts;

		if (!tune_lock_busy(t))
			break;	/* free, or the holder's lease ran out */
		if (strcmp(t->owner, owner) == 0) {
			/* the same owner again (a controller's concurrent phases) */
			t->held++;
			*token = t->token;
			goto out;
		}
		/* only a wait is given up: a request whose controller ended its
		 * input after sending it still runs when the lock is free */
		if (cancel && *cancel) {
			snprintf(why, whylen, "the controller went away while this waited for the "
			    "tuning lock");
			rc = -ECANCELED;
			goto out;
		}
		if (t->stopping) {
			snprintf(why, whylen, "the agent is stopping");
			rc = -ESHUTDOWN;
			goto out;
		}
		if ((int64_t)(now - deadline) >= 0) {
			busy_msg(t, why, whylen);
			rc = -EBUSY;
			goto out;
		}
		until = (int64_t)(t->expires_ns - deadline) < 0 ? t->expires_ns : deadline;
		ts.tv_sec = (time_t)(until / 1000000000ull);
		ts.tv_nsec = (long)(until % 1000000000ull);
		pthread_cond_timedwait(&t->lcv, &t->lmu, &ts);
	}
	t->held = 1;	/* number of holds by this owner */
	snprintf(t->owner, sizeof(t->owner), "%s", owner);
	t->since_ns = now_real_ns();
	t->expires_ns = now_mono_ns() + (uint64_t)lease_ms * 1000000ull;
	t->token = *token = ++t->next_token;
out:
	pthread_mutex_unlock(&t->lmu);
	return rc;
}

void
tune_lock_renew(struct agent *a, uint64_t token, unsigned lease_ms)
{
	struct tune_state *t = a->tune;

	if (t == NULL || token == 0)
		return;
	pthread_mutex_lock(&t->lmu);
	if (t->held && t->token == token)
		t->expires_ns = now_mono_ns() + (uint64_t)lease_ms * 1000000ull;
	pthread_mutex_unlock(&t->lmu);
}

void
tune_lock_drop(struct agent *a, uint64_t token)
{
	struct tune_state *t = a->tune;

	if (t == NULL || token == 0)
		return;
	pthread_mutex_lock(&t->lmu);
	if (t->held && t->token == token && --t->held == 0) {
		t->owner[0] = '\0';
		pthread_cond_broadcast(&t->lcv);
		tune_unpark(t, 1);
	}
	pthread_mutex_unlock(&t->lmu);
}
