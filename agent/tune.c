/* knobd tuning: plan (resolve + read), journaled apply transaction, check,
 * verify, rollback, crash recovery, and the request handlers that run them
 * on worker threads.  The journal format and the recovery rule are described
 * in tune.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "agent.h"
#include "log.h"
#include "normalize.h"
#include "tune.h"
#include "util.h"

#define RAW_MAX NORM_VALUE_MAX

/* One concrete target of one setting within a transaction. */
struct item {
	const Knob__Setting *s;	/* borrowed */
	const struct tune_driver *d;
	char *target;		/* NULL: unsupported / invalid */
	char *before, *wanted, *after;	/* canonical values */
	int state;		/* KNOB__KEY_STATE__* */
	int err;
	char *msg;
	int written;
};

struct plan {
	struct item *v;
	size_t n;
};

static const char *const key_state_names[] = {
	[KNOB__KEY_STATE__KEY_UNSPECIFIED] = "unspecified",
	[KNOB__KEY_STATE__KEY_CHANGED] = "changed",
	[KNOB__KEY_STATE__KEY_UNCHANGED] = "unchanged",
	[KNOB__KEY_STATE__KEY_FAILED] = "failed",
	[KNOB__KEY_STATE__KEY_UNSUPPORTED] = "unsupported",
	[KNOB__KEY_STATE__KEY_PENDING_RESTART] = "pending-restart",
	[KNOB__KEY_STATE__KEY_WOULD_CHANGE] = "would-change",
	[KNOB__KEY_STATE__KEY_REVERTED] = "reverted",
	[KNOB__KEY_STATE__KEY_OK] = "ok",
	[KNOB__KEY_STATE__KEY_DRIFT] = "drift",
	[KNOB__KEY_STATE__KEY_RESTORED] = "restored",
	[KNOB__KEY_STATE__KEY_SKIPPED] = "skipped",
};

const char *
tune_key_state_name(int st)
{
	if (st < 0 || (size_t)st >= nitems(key_state_names) || key_state_names[st] == NULL)
		return "unknown";
	return key_state_names[st];
}

int
tune_cmd_timeout(const struct agent *a)
{
	if (a->tune == NULL || a->tune->cmd_timeout_ms <= 0)
		return TUNE_CMD_TIMEOUT_MS;
	return a->tune->cmd_timeout_ms;
}

static void
set_msg(struct item *it, int err, const char *msg)
{
	free(it->msg);
	it->msg = xstrdup(msg);
	it->err = err < 0 ? -err : err;
}

/* Canonical form of raw through the item's driver; the trimmed raw value
 * when it does not normalise (so it still shows in reports).  Caller frees. */
static char *
canon(const struct tune_driver *d, const Knob__Setting *s, const char *raw)
{
	char out[RAW_MAX], msg[TUNE_MSG_MAX], tmp[RAW_MAX];

	if (d->normalise(s, raw, out, sizeof(out), msg, sizeof(msg)) == 0)
		return xstrdup(out);
	snprintf(tmp, sizeof(tmp), "%s", raw);
	return xstrdup(strtrim(tmp));
}

static struct item *
plan_add(struct plan *p, const Knob__Setting *s, const struct tune_driver *d)
{
	struct item *it;

	p->v = xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
	it = &p->v[p->n++];
	memset(it, 0, sizeof(*it));
	it->s = s;
	it->d = d;
	return it;
}

static void
plan_free(struct plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].target);
		free(p->v[i].before);
		free(p->v[i].wanted);
		free(p->v[i].after);
		free(p->v[i].msg);
	}
	free(p->v);
	memset(p, 0, sizeof(*p));
}

/* Step 1: validate each setting, resolve its targets and read their
 * current values.  Items that cannot go on get FAILED or UNSUPPORTED. */
static void
plan_build(struct agent *a, Knob__Setting **settings, size_t n, struct plan *p)
{
	char msg[TUNE_MSG_MAX], raw[RAW_MAX], wanted[RAW_MAX];

	for (size_t i = 0; i < n; i++) {
		const Knob__Setting *s = settings[i];
		const struct tune_driver *d = tune_driver_find(s->driver);
		struct strvec targets = { 0 };
		struct item *it;
		int rc;

		msg[0] = '\0';
		if (d == NULL) {
			it = plan_add(p, s, NULL);
			it->state = KNOB__KEY_STATE__KEY_FAILED;
			snprintf(msg, sizeof(msg), "unknown driver '%s'", s->driver);
			set_msg(it, EINVAL, msg);
			continue;
		}
		if (setting_validate(s->driver, s->key, s->attr, s->match, s->value, msg,
		    sizeof(msg)) < 0 ||
		    d->normalise(s, s->value, wanted, sizeof(wanted), msg, sizeof(msg)) < 0) {
			it = plan_add(p, s, d);
			it->state = KNOB__KEY_STATE__KEY_FAILED;
			set_msg(it, EINVAL, msg);
			continue;
		}
		rc = d->resolve(a, s, &targets, msg, sizeof(msg));
		if (rc < 0 || targets.n == 0) {
			it = plan_add(p, s, d);
			it->wanted = xstrdup(wanted);
			it->state = rc < 0 ? KNOB__KEY_STATE__KEY_FAILED :
			    KNOB__KEY_STATE__KEY_UNSUPPORTED;
			set_msg(it, rc, rc < 0 ? msg : "nothing on this node matches");
			strvec_free(&targets);
			continue;
		}
		for (size_t k = 0; k < targets.n; k++) {
			it = plan_add(p, s, d);
			it->target = xstrdup(targets.v[k]);
			it->wanted = xstrdup(wanted);
			msg[0] = '\0';
			rc = d->read(a, s, it->target, raw, sizeof(raw), msg, sizeof(msg));
			if (rc < 0) {
				it->state = KNOB__KEY_STATE__KEY_FAILED;
				set_msg(it, rc, msg);
				continue;
			}
			it->before = canon(d, s, raw);
		}
		strvec_free(&targets);
	}
}

static int
item_pending(const struct item *it)
{
	return it->state == KNOB__KEY_STATE__KEY_UNSPECIFIED;
}

static int
item_needs_write(const struct item *it)
{
	return item_pending(it) && it->target && strcmp(it->before, it->wanted) != 0;
}

/* KeyResult from an item; strings owned by the result. */
static Knob__KeyResult *
key_result(const struct item *it)
{
	Knob__KeyResult *kr = xcalloc(1, sizeof(*kr));
	char desc[PATH_MAX];

	knob__key_result__init(kr);
	kr->driver = xstrdup(it->s->driver);
	kr->key = xstrdup(it->s->key);
	if (it->target && it->d)
		it->d->describe(it->s, it->target, desc, sizeof(desc));
	else if (it->s->attr && *it->s->attr)
		snprintf(desc, sizeof(desc), "%s %s", it->s->key, it->s->attr);
	else
		desc[0] = '\0';
	kr->target = xstrdup(desc);
	kr->state = (Knob__KeyState)it->state;
	kr->before = xstrdup(it->before);
	kr->wanted = xstrdup(it->wanted ? it->wanted : it->s->value);
	kr->after = xstrdup(it->after);
	kr->err = it->err;
	kr->message = xstrdup(it->msg);
	kr->origin = xstrdup(it->s->origin);
	return kr;
}

static void
key_results_free(Knob__KeyResult **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i]->driver);
		free(v[i]->key);
		free(v[i]->target);
		free(v[i]->before);
		free(v[i]->wanted);
		free(v[i]->after);
		free(v[i]->message);
		free(v[i]->origin);
		free(v[i]);
	}
	free(v);
}

static void
plan_results(const struct plan *p, Knob__KeyResult ***out, size_t *nout)
{
	*out = xcalloc(p->n ? p->n : 1, sizeof(**out));
	for (size_t i = 0; i < p->n; i++)
		(*out)[i] = key_result(&p->v[i]);
	*nout = p->n;
}

static void
set_active(struct tune_state *t, const char *name)
{
	int next;

	pthread_mutex_lock(&t->amu);
	next = !__atomic_load_n(&t->cur, __ATOMIC_ACQUIRE);
	snprintf(t->active[next], sizeof(t->active[next]), "%s", name);
	__atomic_store_n(&t->cur, next, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&t->amu);
}

/* Write value through the driver (restore() when asked and present), read
 * back; returns the driver's result, *after malloc'd canonical or NULL. */
static int
put_value(struct agent *a, const struct tune_driver *d, const Knob__Setting *s,
    const char *target, const char *value, int restore, char **after, char *msg,
    size_t msglen)
{
	char raw[RAW_MAX], m2[TUNE_MSG_MAX];
	int rc;

	*after = NULL;
	if (restore && d->restore)
		rc = d->restore(a, s, target, value, msg, msglen);
	else
		rc = d->write(a, s, target, value, msg, msglen);
	/* read back even after a failed write: it may have changed something */
	if (d->read(a, s, target, raw, sizeof(raw), m2, sizeof(m2)) == 0)
		*after = canon(d, s, raw);
	return rc;
}

static void
test_pause(struct agent *a, uint32_t ms, const char *where)
{
	if (!a->cfg.test_hooks || ms == 0)
		return;
	log_info("test hook: pausing %u ms %s", ms, where);
	usleep((useconds_t)ms * 1000);
}

/* Restore what the transaction wrote (reverse order) after a failure. */
static int
revert_items(struct agent *a, struct plan *p)
{
	char msg[TUNE_MSG_MAX];
	int bad = 0;

	for (size_t i = p->n; i-- > 0;) {
		struct item *it = &p->v[i];
		char *after = NULL;
		int rc;

		if (!it->written || it->state == KNOB__KEY_STATE__KEY_FAILED)
			continue;
		msg[0] = '\0';
		rc = put_value(a, it->d, it->s, it->target, it->before, 1, &after, msg, sizeof(msg));
		if (rc >= 0 && after && strcmp(after, it->before) == 0) {
			it->state = KNOB__KEY_STATE__KEY_REVERTED;
			free(it->after);
			it->after = after;
			set_msg(it, 0, "restored because another key failed");
		} else {
			char m[TUNE_MSG_MAX + 64];

			snprintf(m, sizeof(m), "revert failed: %s", rc < 0 ? msg : "value did not stick");
			it->state = KNOB__KEY_STATE__KEY_FAILED;
			set_msg(it, rc < 0 ? rc : EIO, m);
			free(after);
			bad++;
		}
	}
	return bad;
}

static void
jentry_from_item(struct jentry *e, const struct item *it, int added)
{
	e->driver = it->s->driver;
	e->key = it->s->key;
	e->attr = it->s->attr;
	e->match = it->s->match;
	e->target = it->target;
	e->value = it->before;
	e->was = NULL;
	e->persistent = it->s->persistent;
	e->added = added;
}

/* ------------------------------------------------------------ pending restart */
static const char *
restart_note(const struct tune_driver *d)
{
	return d && d->restart_note ? d->restart_note : "takes effect after a restart";
}

/* Index of the pending-restart mark of it's target in j, or -1. */
static long
pend_find(const struct journal *j, const struct item *it)
{
	if (it->target == NULL)
		return -1;
	return journal_find(j->pend, j->npend, it->s->driver, it->target, it->s->attr);
}

/* Items not classified yet whose target carries a pending-restart mark for
 * the value they want, and whose live value is still the one the mark saw
 * when it was set, become PENDING_RESTART (after = the live value). */
static void
plan_mark_pending(const struct journal *j, struct plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct item *it = &p->v[i];
		long k;

		if (!item_pending(it) || it->target == NULL || it->before == NULL ||
		    strcmp(it->before, it->wanted) == 0 || (k = pend_find(j, it)) < 0)
			continue;
		if (strcmp(j->pend[k].value, it->wanted) != 0 ||
		    strcmp(j->pend[k].was, it->before) != 0)
			continue;
		it->state = KNOB__KEY_STATE__KEY_PENDING_RESTART;
		free(it->after);
		it->after = xstrdup(it->before);
		set_msg(it, 0, restart_note(it->d));
	}
}

/* Drop the marks of targets whose live value has moved off the value seen
 * when the mark was set (the restart happened, or someone changed it).
 * Returns the number dropped. */
static size_t
plan_drop_stale(struct journal *j, const struct plan *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct item *it = &p->v[i];
		long k;

		if (it->before == NULL || (k = pend_find(j, it)) < 0 ||
		    strcmp(j->pend[k].was, it->before) == 0)
			continue;
		log_info("%s %s: live value %s, no longer pending a restart", it->s->driver,
		    it->target, it->before);
		journal_remove(j->pend, &j->npend, (size_t)k);
		n++;
	}
	return n;
}

/* Marks after a committed apply: set (or replace) for targets this
 * transaction left pending a restart, dropped for targets it wrote with
 * immediate effect or reverted, and for stale ones. */
static void
apply_marks(struct journal *j, const struct plan *p)
{
	plan_drop_stale(j, p);
	for (size_t i = 0; i < p->n; i++) {
		const struct item *it = &p->v[i];
		struct jentry e;
		long k = pend_find(j, it);

		switch (it->state) {
		case KNOB__KEY_STATE__KEY_PENDING_RESTART:
			if (!it->written || it->before == NULL)
				break;
			if (k >= 0)
				journal_remove(j->pend, &j->npend, (size_t)k);
			jentry_from_item(&e, it, 0);
			e.value = it->wanted;
			e.was = it->before;
			journal_push(&j->pend, &j->npend, &e);
			break;
		case KNOB__KEY_STATE__KEY_CHANGED:
		case KNOB__KEY_STATE__KEY_REVERTED:
			if (k >= 0)
				journal_remove(j->pend, &j->npend, (size_t)k);
			break;
		default:
			break;
		}
	}
}

/* Drop the mark of the journal entry e's target, if any. */
static void
drop_mark(struct journal *j, const struct jentry *e)
{
	long k = journal_find(j->pend, j->npend, e->driver, e->target, e->attr);

	if (k >= 0)
		journal_remove(j->pend, &j->npend, (size_t)k);
}

static void
txn_clear(struct journal *j)
{
	for (size_t i = 0; i < j->ntxn; i++)
		jentry_clear(&j->txn[i]);
	free(j->txn);
	j->txn = NULL;
	j->ntxn = 0;
	j->in_txn = 0;
	j->txn_id[0] = j->txn_profile[0] = '\0';
}

int
tune_apply(struct agent *a, const Knob__ApplyRequest *req, Knob__ApplyResult *res)
{
	struct tune_state *t = a->tune;
	struct plan p = { 0 };
	char msg[TUNE_MSG_MAX], rmsg[1024] = "";
	size_t nwrite = 0, nfail = 0;
	int rc, first = 1, failed_write = 0;

	knob__apply_result__init(res);
	res->message = res->txn_id = NULL;	/* not the shared empty string */
	if (t == NULL)
		return -1;
	pthread_mutex_lock(&t->mu);
	plan_build(a, req->settings, req->n_settings, &p);
	/* --check: a target already set and waiting for a restart is not a
	 * change to make (a real apply writes it again, which is harmless) */
	if (req->check)
		plan_mark_pending(&t->j, &p);
	for (size_t i = 0; i < p.n; i++) {
		if (p.v[i].state == KNOB__KEY_STATE__KEY_FAILED)
			nfail++;
		if (item_needs_write(&p.v[i]))
			nwrite++;
	}
	if (req->check) {
		/* step 5: classify only */
		for (size_t i = 0; i < p.n; i++)
			if (item_pending(&p.v[i]))
				p.v[i].state = item_needs_write(&p.v[i]) ?
				    KNOB__KEY_STATE__KEY_WOULD_CHANGE : KNOB__KEY_STATE__KEY_UNCHANGED;
		snprintf(rmsg, sizeof(rmsg), "check: %zu would change, nothing written", nwrite);
		goto done;
	}
	if (nfail > 0 && !req->keep_going) {
		for (size_t i = 0; i < p.n; i++)
			if (item_pending(&p.v[i]))
				p.v[i].state = KNOB__KEY_STATE__KEY_SKIPPED;
		snprintf(rmsg, sizeof(rmsg), "%zu key(s) failed before any write; nothing written",
		    nfail);
		goto done;
	}
	/* step 2: the transaction's before values, durable before the first write */
	txn_clear(&t->j);
	t->j.in_txn = nwrite > 0;
	snprintf(t->j.txn_id, sizeof(t->j.txn_id), "%llx-%ld",
	    (unsigned long long)now_real_ns(), (long)getpid());
	snprintf(t->j.txn_profile, sizeof(t->j.txn_profile), "%s", req->profile);
	for (size_t i = 0; i < p.n; i++) {
		struct item *it = &p.v[i];
		struct jentry e;

		if (!item_needs_write(it) ||
		    journal_find(t->j.txn, t->j.ntxn, it->s->driver, it->target, it->s->attr) >= 0)
			continue;
		jentry_from_item(&e, it, journal_find(t->j.orig, t->j.norig, it->s->driver,
		    it->target, it->s->attr) < 0);
		journal_push(&t->j.txn, &t->j.ntxn, &e);
	}
	if (nwrite > 0 && (rc = journal_save(t->journal_path, &t->j)) < 0) {
		txn_clear(&t->j);
		for (size_t i = 0; i < p.n; i++)
			if (item_pending(&p.v[i]))
				p.v[i].state = KNOB__KEY_STATE__KEY_SKIPPED;
		snprintf(rmsg, sizeof(rmsg), "cannot write journal %s: %s; nothing written",
		    t->journal_path, strerror(-rc));
		goto done;
	}
	if (nwrite > 0)
		test_pause(a, req->test_pause_ms, "after journaling");
	/* step 3: write, read back, classify */
	for (size_t i = 0; i < p.n; i++) {
		struct item *it = &p.v[i];

		if (!item_pending(it))
			continue;
		if (failed_write && !req->keep_going) {
			it->state = KNOB__KEY_STATE__KEY_SKIPPED;
			continue;
		}
		if (!item_needs_write(it)) {
			it->state = KNOB__KEY_STATE__KEY_UNCHANGED;
			it->after = xstrdup(it->before);
			continue;
		}
		msg[0] = '\0';
		rc = put_value(a, it->d, it->s, it->target, it->wanted, 0, &it->after, msg,
		    sizeof(msg));
		if (rc < 0) {
			it->state = KNOB__KEY_STATE__KEY_FAILED;
			set_msg(it, rc, msg);
			failed_write = 1;
			/* a failed write may still have changed something */
			it->written = it->after == NULL || strcmp(it->after, it->before) != 0;
		} else {
			it->written = 1;
			if (rc == TUNE_PENDING_RESTART) {
				it->state = KNOB__KEY_STATE__KEY_PENDING_RESTART;
				set_msg(it, 0, msg);
			} else if (it->after && strcmp(it->after, it->wanted) == 0) {
				it->state = KNOB__KEY_STATE__KEY_CHANGED;
			} else {
				char m[TUNE_MSG_MAX];

				snprintf(m, sizeof(m), "wrote %s, read back %s", it->wanted,
				    it->after ? it->after : "nothing");
				it->state = KNOB__KEY_STATE__KEY_FAILED;
				set_msg(it, EIO, m);
				failed_write = 1;
			}
		}
		if (first) {
			first = 0;
			test_pause(a, req->test_pause_ms, "after the first write");
		}
	}
	/* step 4: on failure restore what this transaction changed */
	if (failed_write && !req->keep_going) {
		/* the failed item itself may have half-applied: put it back too */
		for (size_t i = 0; i < p.n; i++) {
			struct item *it = &p.v[i];
			char *after = NULL;

			if (it->state == KNOB__KEY_STATE__KEY_FAILED && it->written &&
			    it->after && strcmp(it->after, it->before) != 0) {
				put_value(a, it->d, it->s, it->target, it->before, 1, &after, msg,
				    sizeof(msg));
				free(after);
			}
		}
		res->reverted = 1;
		if (revert_items(a, &p) > 0)
			snprintf(rmsg, sizeof(rmsg), "a key failed; some changes could NOT be "
			    "reverted (kept in the journal for rollback)");
		else
			snprintf(rmsg, sizeof(rmsg), "a key failed; every change of this "
			    "transaction was reverted");
	}
	/* commit: new originals of whatever is still changed */
	for (size_t i = 0; i < p.n; i++) {
		struct item *it = &p.v[i];
		long k;

		if (!it->written || it->state == KNOB__KEY_STATE__KEY_REVERTED)
			continue;
		k = journal_find(t->j.txn, t->j.ntxn, it->s->driver, it->target, it->s->attr);
		if (k >= 0 && t->j.txn[k].added &&
		    journal_find(t->j.orig, t->j.norig, it->s->driver, it->target, it->s->attr) < 0)
			journal_push(&t->j.orig, &t->j.norig, &t->j.txn[k]);
	}
	apply_marks(&t->j, &p);
	if (!res->reverted)
		snprintf(t->j.active, sizeof(t->j.active), "%s", req->profile);
	res->txn_id = xstrdup(t->j.txn_id);
	txn_clear(&t->j);
	if ((rc = journal_save(t->journal_path, &t->j)) < 0) {
		log_warnx("journal %s: %s", t->journal_path, strerror(-rc));
		snprintf(rmsg, sizeof(rmsg), "applied, but the journal could not be updated: %s",
		    strerror(-rc));
	}
	set_active(t, t->j.active);
	if (rmsg[0] == '\0')
		snprintf(rmsg, sizeof(rmsg), "%s", nfail ? "applied with failures (--keep-going)" :
		    "applied");
done:
	res->message = xstrdup(rmsg);
	if (res->txn_id == NULL)
		res->txn_id = xstrdup("");
	plan_results(&p, &res->keys, &res->n_keys);
	plan_free(&p);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

int
tune_verify(struct agent *a, const Knob__VerifyRequest *req, Knob__VerifyResult *res)
{
	struct tune_state *t = a->tune;
	struct plan p = { 0 };
	int rc;

	knob__verify_result__init(res);
	if (t == NULL)
		return -1;
	pthread_mutex_lock(&t->mu);
	plan_build(a, req->settings, req->n_settings, &p);
	plan_mark_pending(&t->j, &p);
	if (plan_drop_stale(&t->j, &p) > 0 &&
	    (rc = journal_save(t->journal_path, &t->j)) < 0)
		log_warnx("journal %s: %s", t->journal_path, strerror(-rc));
	for (size_t i = 0; i < p.n; i++) {
		struct item *it = &p.v[i];

		if (!item_pending(it))
			continue;
		it->after = xstrdup(it->before);
		if (strcmp(it->before, it->wanted) == 0)
			it->state = KNOB__KEY_STATE__KEY_OK;
		else {
			char m[TUNE_MSG_MAX];

			it->state = KNOB__KEY_STATE__KEY_DRIFT;
			snprintf(m, sizeof(m), "is %s, profile wants %s", it->before, it->wanted);
			set_msg(it, 0, m);
		}
	}
	res->active_profile = xstrdup(t->j.active);
	plan_results(&p, &res->keys, &res->n_keys);
	plan_free(&p);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

/* Write one journal entry's value back; fills a KeyResult.  0 restored, -1 not. */
static int
restore_entry(struct agent *a, const struct jentry *e, Knob__KeyResult **krp)
{
	const struct tune_driver *d = tune_driver_find(e->driver);
	Knob__Setting s;
	struct item it = { 0 };
	char raw[RAW_MAX], msg[TUNE_MSG_MAX] = "";
	int rc, ok = 0;

	jentry_setting(e, &s);
	it.s = &s;
	it.d = d;
	it.target = e->target;
	it.wanted = e->value;
	if (d == NULL) {
		it.state = KNOB__KEY_STATE__KEY_FAILED;
		it.msg = xasprintf("unknown driver '%s'", e->driver);
		it.err = EINVAL;
		goto out;
	}
	if (d->read(a, &s, e->target, raw, sizeof(raw), msg, sizeof(msg)) == 0)
		it.before = canon(d, &s, raw);
	rc = put_value(a, d, &s, e->target, e->value, 1, &it.after, msg, sizeof(msg));
	if (rc < 0) {
		it.state = KNOB__KEY_STATE__KEY_FAILED;
		it.msg = xstrdup(msg);
		it.err = -rc;
	} else if (rc == TUNE_PENDING_RESTART) {
		it.state = KNOB__KEY_STATE__KEY_PENDING_RESTART;
		it.msg = xstrdup(msg);
		ok = 1;
	} else if (it.after && strcmp(it.after, e->value) == 0) {
		it.state = KNOB__KEY_STATE__KEY_RESTORED;
		ok = 1;
	} else {
		it.state = KNOB__KEY_STATE__KEY_FAILED;
		it.msg = xasprintf("wrote %s, read back %s", e->value, it.after ? it.after : "nothing");
		it.err = EIO;
	}
out:
	it.target = (char *)(uintptr_t)e->target;
	*krp = key_result(&it);
	free(it.before);
	free(it.after);
	free(it.msg);
	return ok ? 0 : -1;
}

int
tune_rollback(struct agent *a, Knob__RollbackResult *res)
{
	struct tune_state *t = a->tune;
	struct jentry *keep = NULL;
	size_t nkeep = 0, nk = 0;
	int rc;

	knob__rollback_result__init(res);
	if (t == NULL)
		return -1;
	pthread_mutex_lock(&t->mu);
	res->profile = xstrdup(t->j.active);
	res->keys = xcalloc(t->j.norig ? t->j.norig : 1, sizeof(*res->keys));
	/* newest first, so overlapping targets end at the oldest value */
	for (size_t i = t->j.norig; i-- > 0;) {
		if (restore_entry(a, &t->j.orig[i], &res->keys[nk++]) < 0)
			journal_push(&keep, &nkeep, &t->j.orig[i]);
		else
			drop_mark(&t->j, &t->j.orig[i]);
	}
	res->n_keys = nk;
	for (size_t i = 0; i < t->j.norig; i++)
		jentry_clear(&t->j.orig[i]);
	free(t->j.orig);
	t->j.orig = keep;
	t->j.norig = nkeep;
	if (nkeep == 0)
		t->j.active[0] = '\0';
	if ((rc = journal_save(t->journal_path, &t->j)) < 0)
		log_warnx("journal %s: %s", t->journal_path, strerror(-rc));
	if (nk == 0)
		res->message = xstrdup("nothing to roll back");
	else if (nkeep == 0)
		res->message = xasprintf("%zu original value(s) restored; journal cleared", nk);
	else
		res->message = xasprintf("%zu of %zu original value(s) could not be restored; "
		    "they stay in the journal", nkeep, nk);
	set_active(t, t->j.active);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

void
tune_apply_result_free(Knob__ApplyResult *res)
{
	key_results_free(res->keys, res->n_keys);
	free(res->message);
	free(res->txn_id);
	knob__apply_result__init(res);
}

void
tune_verify_result_free(Knob__VerifyResult *res)
{
	key_results_free(res->keys, res->n_keys);
	free(res->active_profile);
	knob__verify_result__init(res);
}

void
tune_rollback_result_free(Knob__RollbackResult *res)
{
	key_results_free(res->keys, res->n_keys);
	free(res->message);
	free(res->profile);
	knob__rollback_result__init(res);
}

/* Undo an interrupted transaction found in the journal (see tune.h). */
static void
recover(struct agent *a, struct tune_state *t)
{
	char raw[RAW_MAX], msg[TUNE_MSG_MAX];
	size_t bad = 0;

	log_warnx("journal %s: transaction %s (profile '%s') was interrupted; undoing %zu "
	    "key(s)", t->journal_path, t->j.txn_id, t->j.txn_profile, t->j.ntxn);
	for (size_t i = t->j.ntxn; i-- > 0;) {
		const struct jentry *e = &t->j.txn[i];
		const struct tune_driver *d = tune_driver_find(e->driver);
		Knob__Setting s;
		char *now = NULL, *after = NULL;
		int rc;

		if (d == NULL)
			continue;
		jentry_setting(e, &s);
		if (d->read(a, &s, e->target, raw, sizeof(raw), msg, sizeof(msg)) == 0)
			now = canon(d, &s, raw);
		if (now && strcmp(now, e->value) == 0) {
			free(now);
			continue;	/* never written */
		}
		rc = put_value(a, d, &s, e->target, e->value, 1, &after, msg, sizeof(msg));
		if (rc < 0 || after == NULL || strcmp(after, e->value) != 0) {
			log_warnx("recovery: %s %s: could not restore %s: %s", e->driver, e->target,
			    e->value, rc < 0 ? msg : "value did not stick");
			/* keep it so that a rollback can try again */
			if (e->added && journal_find(t->j.orig, t->j.norig, e->driver, e->target,
			    e->attr) < 0)
				journal_push(&t->j.orig, &t->j.norig, e);
			bad++;
		} else {
			log_info("recovery: %s %s restored to %s (was %s)", e->driver, e->target,
			    e->value, now ? now : "?");
			drop_mark(&t->j, e);
		}
		free(now);
		free(after);
	}
	txn_clear(&t->j);
	if (bad)
		log_warnx("recovery: %zu key(s) could not be restored", bad);
}

int
tune_init(struct agent *a)
{
	struct tune_state *t;
	const char *env = getenv("KNOB_CMD_TIMEOUT_MS");
	int rc;

	if (mkdir(a->state_dir, 0700) < 0 && errno != EEXIST) {
		log_warn("mkdir %s", a->state_dir);
		return -1;
	}
	t = xcalloc(1, sizeof(*t));
	pthread_mutex_init(&t->mu, NULL);
	pthread_mutex_init(&t->amu, NULL);
	pthread_cond_init(&t->wcv, NULL);
	t->cmd_timeout_ms = env && atoi(env) > 0 ? atoi(env) : TUNE_CMD_TIMEOUT_MS;
	snprintf(t->journal_path, sizeof(t->journal_path), "%s/" TUNE_JOURNAL_NAME, a->state_dir);
	rc = journal_load(t->journal_path, &t->j);
	if (rc < 0) {
		log_err("journal %s: %s; check the node's settings and move the file away",
		    t->journal_path, strerror(-rc));
		goto fail;
	}
	a->tune = t;
	if (t->j.in_txn) {
		recover(a, t);
		if ((rc = journal_save(t->journal_path, &t->j)) < 0) {
			log_err("journal %s: %s", t->journal_path, strerror(-rc));
			a->tune = NULL;
			goto fail;
		}
	}
	set_active(t, t->j.active);
	if (t->j.active[0])
		log_info("active profile: %s (%zu original value(s) journaled)", t->j.active,
		    t->j.norig);
	return 0;
fail:
	journal_free(&t->j);
	pthread_mutex_destroy(&t->mu);
	pthread_mutex_destroy(&t->amu);
	pthread_cond_destroy(&t->wcv);
	free(t);
	return -1;
}

void
tune_fini(struct agent *a)
{
	struct tune_state *t = a->tune;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->amu);
	while (t->workers > 0)
		pthread_cond_wait(&t->wcv, &t->amu);
	pthread_mutex_unlock(&t->amu);
	a->tune = NULL;
	journal_free(&t->j);
	pthread_mutex_destroy(&t->mu);
	pthread_mutex_destroy(&t->amu);
	pthread_cond_destroy(&t->wcv);
	free(t);
}

const char *
tune_active_profile(struct agent *a)
{
	/* The loop thread reads this for Facts while a worker may set a new
	 * name: writers fill the other buffer, then flip cur. */
	if (a == NULL || a->tune == NULL)
		return "";
	return a->tune->active[__atomic_load_n(&a->tune->cur, __ATOMIC_ACQUIRE)];
}

/* ------------------------------------------------------------ handlers */
struct job {
	struct agent *a;
	uint64_t conn_id;
	Knob__Envelope *req;
};

static void
job_done(struct job *j)
{
	struct tune_state *t = j->a->tune;

	knob__envelope__free_unpacked(j->req, NULL);
	pthread_mutex_lock(&t->amu);
	if (--t->workers == 0)
		pthread_cond_broadcast(&t->wcv);
	pthread_mutex_unlock(&t->amu);
	free(j);
}

static void *
apply_worker(void *arg)
{
	struct job *j = arg;
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__ApplyResult res;

	tune_apply(j->a, j->req->apply, &res);
	env.body_case = KNOB__ENVELOPE__BODY_APPLY_RESULT;
	env.apply_result = &res;
	agent_post(j->a, j->conn_id, j->req->id, &env);
	tune_apply_result_free(&res);
	job_done(j);
	return NULL;
}

static void *
verify_worker(void *arg)
{
	struct job *j = arg;
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__VerifyResult res;

	tune_verify(j->a, j->req->verify, &res);
	env.body_case = KNOB__ENVELOPE__BODY_VERIFY_RESULT;
	env.verify_result = &res;
	agent_post(j->a, j->conn_id, j->req->id, &env);
	tune_verify_result_free(&res);
	job_done(j);
	return NULL;
}

static void *
rollback_worker(void *arg)
{
	struct job *j = arg;
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__RollbackResult res;

	tune_rollback(j->a, &res);
	env.body_case = KNOB__ENVELOPE__BODY_ROLLBACK_RESULT;
	env.rollback_result = &res;
	agent_post(j->a, j->conn_id, j->req->id, &env);
	tune_rollback_result_free(&res);
	job_done(j);
	return NULL;
}

/* Hand req to a worker thread; 1 (kept req) or 0 after an error reply. */
static int
spawn_job(struct agent *a, struct aconn *c, Knob__Envelope *req, void *(*fn)(void *),
    int has_body)
{
	struct tune_state *t = a->tune;
	struct job *j;

	if (t == NULL)
		return agent_reply_error(a, c, req->id, ENOSYS, "tuning is not initialised") < 0 ? -1 : 0;
	if (!has_body)
		return agent_reply_error(a, c, req->id, EINVAL, "empty request") < 0 ? -1 : 0;
	j = xcalloc(1, sizeof(*j));
	j->a = a;
	j->conn_id = c->id;
	j->req = req;
	pthread_mutex_lock(&t->amu);
	t->workers++;
	pthread_mutex_unlock(&t->amu);
	if (agent_spawn(a, fn, j) < 0) {
		pthread_mutex_lock(&t->amu);
		if (--t->workers == 0)
			pthread_cond_broadcast(&t->wcv);
		pthread_mutex_unlock(&t->amu);
		free(j);
		return agent_reply_error(a, c, req->id, EAGAIN, "cannot start a worker") < 0 ? -1 : 0;
	}
	return 1;
}

int
h_apply(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	return spawn_job(a, c, req, apply_worker, req->apply != NULL);
}

int
h_verify(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	return spawn_job(a, c, req, verify_worker, req->verify != NULL);
}

int
h_rollback(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	return spawn_job(a, c, req, rollback_worker, req->rollback != NULL);
}
