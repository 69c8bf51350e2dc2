/* knobd tuning: plan (resolve + read), the journaled apply transaction that
 * writes in each driver's order and re-reads until every key holds, check,
 * verify, rollback, crash recovery, the boot re-apply, and the request
 * handlers that run them on worker threads.  The journal format and the
 * recovery rule are described in tune.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "agent.h"
#include "log.h"
#include "normalize.h"
#include "tune.h"
#include "util.h"

#define RAW_MAX NORM_VALUE_MAX
#define TUNE_LEASE_MS (10u * 60 * 1000)	/* apply/rollback hold the lock this long at most */

enum item_kind {
	IK_SET,		/* a setting of the request */
	IK_COUPLED,	/* an attribute the kernel may move when a key is written */
	IK_SWITCH,	/* the previous profile's key, going back to its original */
};

/* One concrete target of one setting within a transaction. */
struct item {
	const Knob__Setting *s;	/* borrowed (request or plan->own) */
	const struct tune_driver *d;
	char *target;		/* NULL: unsupported / invalid */
	char *before, *wanted;	/* canonical; wanted NULL for IK_COUPLED */
	char *after;		/* live value as last read */
	char *clobber;		/* the key whose write moved this one */
	char *set_to;		/* after a revert: the value the transaction wanted */
	int ident_read;		/* identity() was asked (ident NULL: unknown) */
	char *ident;		/* the target's identity when first read (driver
				 * identity()), NULL unknown */
	int state;		/* KNOB__KEY_STATE__*; UNSPECIFIED while in play */
	int err;
	char *msg;
	int written;		/* this transaction wrote it */
	int werr;		/* its write failed: not retried */
	int pending;		/* the write takes effect after a restart */
	int reconfig;		/* put back: write even if it reads back (item_done) */
	int keep_orig;		/* switch item a write of this transaction moves: stays journaled */
	int moved;		/* a pass ended with it not holding: watched after writes */
	int unread;		/* written, not read back yet (after is stale) */
	int na;			/* the driver said TUNE_NOT_SETTABLE when last read or
				 * written (a CPU that SMT off took offline): not
				 * applicable now, nothing to write */
	int refused;		/* its target is not the device journaled (target_refused):
				 * not written, its original stays journaled */
	int kind, rank;
	long jidx;		/* rollback: index in the journal's originals */
	int kept;		/* a --stack's journaled key (plan_build_stacked): in
				 * play only on a target a key of the request names */
	unsigned layer;		/* the --stack profile its key came with (jentry layer) */
	int partner_left;	/* changed-since with a partner's message (hold_exclusive_partners) */
};

struct plan {
	struct item *v;
	size_t n;
	int journals;		/* apply, rollback, recovery: the targets' identities
				 * are read (a verify journals nothing) */
	int boot;		/* the boot re-apply: an exact key's device must be the
				 * one journaled (boot_refused) */
	int check;		/* --check: nothing is written, messages say "would" */
	Knob__Setting **own;	/* settings made here (coupled, switch, rollback) */
	size_t nown;
};

/* Test hook: where a transaction pauses (knobd --test-hooks only). */
struct pause {
	struct agent *a;
	uint32_t ms;
	const char *at;		/* only this point; NULL or "" every point */
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

/* The words of the key states beyond the first block (names as pbjson's
 * rule spells them, as knobctl prints them). */
static const struct {
	int st;
	const char *name;
} key_state_more[] = {
	{ KNOB__KEY_STATE__KEY_CHANGED_SINCE, "changed-since" },
	{ KNOB__KEY_STATE__KEY_WOULD_FAIL, "would-fail" },
	{ KNOB__KEY_STATE__KEY_PROTECTED, "protected" },
	{ KNOB__KEY_STATE__KEY_WOULD_RESTORE, "would-restore" },
};

const char *
tune_key_state_name(int st)
{
	for (size_t i = 0; i < nitems(key_state_more); i++)
		if (key_state_more[i].st == st)
			return key_state_more[i].name;
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

static void
set_state(struct item *it, int state, int err, const char *msg)
{
	it->state = state;
	set_msg(it, err, msg);
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

	p->v = xgrow(p->v, p->n, sizeof(*p->v));
	it = &p->v[p->n++];
	memset(it, 0, sizeof(*it));
	it->s = s;
	it->d = d;
	it->jidx = -1;
	if (d && d->rank)
		it->rank = d->rank(s);
	return it;
}

/* A setting owned by the plan (all strings copied). */
static Knob__Setting *
plan_own(struct plan *p, const Knob__Setting *from, const char *key, const char *attr,
    const char *value, const char *origin)
{
	Knob__Setting *s = xcalloc(1, sizeof(*s));

	knob__setting__init(s);
	s->driver = xstrdup(from->driver);
	s->key = xstrdup(key ? key : from->key);
	s->attr = xstrdup(attr ? attr : from->attr);
	s->match = xstrdup(key ? "" : from->match);
	s->value = xstrdup(value ? value : from->value);
	s->persistent = from->persistent;
	s->origin = xstrdup(origin ? origin : from->origin);
	p->own = xgrow(p->own, p->nown, sizeof(*p->own));
	p->own[p->nown++] = s;
	return s;
}

static void
plan_free(struct plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].target);
		free(p->v[i].before);
		free(p->v[i].wanted);
		free(p->v[i].after);
		free(p->v[i].clobber);
		free(p->v[i].set_to);
		free(p->v[i].ident);
		free(p->v[i].msg);
	}
	for (size_t i = 0; i < p->nown; i++) {
		free(p->own[i]->driver);
		free(p->own[i]->key);
		free(p->own[i]->attr);
		free(p->own[i]->match);
		free(p->own[i]->value);
		free(p->own[i]->origin);
		free(p->own[i]);
	}
	free(p->v);
	free(p->own);
	memset(p, 0, sizeof(*p));
}

static int
item_pending(const struct item *it)
{
	return it->state == KNOB__KEY_STATE__KEY_UNSPECIFIED;
}

/* The item's live value is what it should be (coupled items always hold). */
static int
item_holds(const struct item *it)
{
	if (it->wanted == NULL || it->pending || it->na)
		return 1;
	return it->after != NULL && strcmp(it->after, it->wanted) == 0;
}

/* Nothing left to write: it holds, and no configured value may differ
 * from the live one (reconfig). */
static int
item_done(const struct item *it)
{
	return item_holds(it) && !it->reconfig;
}

static int
same_target(const struct item *x, const struct item *y)
{
	return x->target && y->target && strcmp(x->s->driver, y->s->driver) == 0 &&
	    strcmp(x->target, y->target) == 0;
}

static int
same_key(const struct item *x, const char *driver, const char *target, const char *attr)
{
	return x->target && strcmp(x->s->driver, driver) == 0 &&
	    strcmp(x->target, target) == 0 && strcmp(x->s->attr, attr ? attr : "") == 0;
}

static long
plan_find(const struct plan *p, const char *driver, const char *target, const char *attr)
{
	for (size_t i = 0; i < p->n; i++)
		if (same_key(&p->v[i], driver, target, attr))
			return (long)i;
	return -1;
}

/* Does a write of w move the key (driver d, target, attr): an attribute of
 * w's target that w's driver couples to it (nr_requests, for the
 * scheduler), or the same attribute of the target the kernel moves with
 * w's (one half of a sysctl pair, for the other)?  A driver couples its
 * own keys only. */
static int
moves(const struct item *w, const struct tune_driver *d, const char *target,
    const char *attr)
{
	const char *const *c;
	const char *t;

	if (w->d == NULL || w->d != d || w->target == NULL || target == NULL)
		return 0;
	if (strcmp(w->target, target) != 0)
		return d->coupled_target && (t = d->coupled_target(w->target)) != NULL &&
		    strcmp(t, target) == 0 && strcmp(w->s->attr, attr) == 0;
	if (d->coupled == NULL || (c = d->coupled(w->s)) == NULL)
		return 0;
	for (; *c; c++)
		if (strcmp(*c, attr) == 0)
			return 1;
	return 0;
}

/* Did this transaction write a key that the kernel lets move it (the
 * scheduler, for nr_requests)?  Then writing that key back moves it
 * again.  A write that failed and left its key as it was is none: that
 * key is not journaled, nothing writes it back. */
static int
moved_by_coupled(const struct plan *p, const struct item *it)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct item *w = &p->v[i];

		if (w != it && w->written && moves(w, it->d, it->target, it->s->attr) &&
		    !(w->werr && w->after && w->before && strcmp(w->after, w->before) == 0))
			return 1;
	}
	return 0;
}

/* Read the item's target into it->after (NULL when unreadable).  0 or the
 * driver's result (TUNE_NOT_SETTABLE, -errno) with msg. */
static int
reread(struct agent *a, struct item *it, char *msg, size_t msglen)
{
	char raw[RAW_MAX], m[TUNE_MSG_MAX];
	int rc;

	rc = it->d->read(a, it->s, it->target, raw, sizeof(raw), msg ? msg : m,
	    msg ? msglen : sizeof(m));
	free(it->after);
	it->after = rc < 0 ? NULL : canon(it->d, it->s, raw);
	if (rc == TUNE_NOT_SETTABLE)
		set_msg(it, 0, msg ? msg : m);
	else if (it->na)
		set_msg(it, 0, "applicable again after an earlier key's write (its CPU online)");
	it->na = rc == TUNE_NOT_SETTABLE;
	return rc;
}

/* it's target's identity (driver identity()), when p journals: asked
 * once per target (another item of the same target gives its answer, also
 * "unknown"), not for every key of a device. */
static void
item_ident(struct agent *a, const struct plan *p, struct item *it)
{
	char id[256];

	if (!p->journals || it->d->identity == NULL || it->target == NULL || it->ident_read)
		return;
	it->ident_read = 1;
	for (size_t k = 0; k < p->n; k++) {
		const struct item *o = &p->v[k];

		if (o != it && o->ident_read && o->d == it->d && o->target &&
		    strcmp(o->target, it->target) == 0) {
			it->ident = o->ident ? xstrdup(o->ident) : NULL;
			return;
		}
	}
	if (it->d->identity(a, it->target, id, sizeof(id)) == 0)
		it->ident = xstrdup(id);
}

/* Read the item's value before anything is written: before and after;
 * and what its target is (ident), which goes into the journal with it. */
static int
read_before(struct agent *a, struct plan *p, struct item *it)
{
	char msg[TUNE_MSG_MAX] = "";
	int rc = reread(a, it, msg, sizeof(msg));

	item_ident(a, p, it);

	if (rc < 0)
		set_state(it, KNOB__KEY_STATE__KEY_FAILED, rc, msg);
	else if (rc == TUNE_NOT_SETTABLE)
		set_state(it, KNOB__KEY_STATE__KEY_UNSUPPORTED, 0, msg);
	if (it->after)
		it->before = xstrdup(it->after);
	return rc;
}

/* Follow attr of target (p->v[src]'s own, or the one the kernel moves
 * with it), which writing p->v[src] may move: its value is read now and
 * journaled as an original.  Another target's key is named as the driver
 * describes it (sysctl: vm.dirty_ratio).  The first read is asked with an
 * empty value (TUNE_NOT_SETTABLE then: nothing to journal); later reads
 * with the value it read. */
static void
add_coupled(struct agent *a, struct plan *p, size_t src, const char *target,
    const char *attr)
{
	const struct item *w = &p->v[src];
	char key[PATH_MAX], what[PATH_MAX], *origin, *t = xstrdup(target);
	Knob__Setting *s;
	struct item *it;

	if (*w->s->attr)
		snprintf(what, sizeof(what), "%s", w->s->attr);
	else
		w->d->describe(w->s, w->target, what, sizeof(what));
	if (strcmp(target, w->target) == 0)
		snprintf(key, sizeof(key), "%s", target);
	else
		w->d->describe(w->s, target, key, sizeof(key));
	origin = xasprintf("moved by the kernel when %s is written", what);
	s = plan_own(p, w->s, key, attr, "", origin);
	free(origin);
	it = plan_add(p, s, p->v[src].d);	/* may move p->v (and w) */
	it->kind = IK_COUPLED;
	it->target = t;
	if (read_before(a, p, it) != 0) {
		free(it->target);	/* cannot read it: not ours to restore */
		it->target = NULL;
		it->state = KNOB__KEY_STATE__KEY_SKIPPED;
	} else if (it->before != NULL) {
		free(s->value);	/* followed: later reads are not the first */
		s->value = xstrdup(it->before);
	}
}

/* Add the attributes the kernel moves when the plan's keys are written, so
 * that their originals are journaled and come back on rollback. */
static void
plan_add_coupled(struct agent *a, struct plan *p)
{
	size_t n = p->n;

	for (size_t i = 0; i < n; i++) {
		const struct tune_driver *d = p->v[i].d;
		const char *const *c = NULL, *t = NULL;

		if (!item_pending(&p->v[i]) || p->v[i].target == NULL)
			continue;
		if (d->coupled && (c = d->coupled(p->v[i].s)) != NULL)
			for (; *c; c++)
				if (plan_find(p, p->v[i].s->driver, p->v[i].target, *c) < 0)
					add_coupled(a, p, i, p->v[i].target, *c);
		if (d->coupled_target && (t = d->coupled_target(p->v[i].target)) != NULL &&
		    plan_find(p, p->v[i].s->driver, t, p->v[i].s->attr) < 0)
			add_coupled(a, p, i, t, p->v[i].s->attr);
	}
}

/* --keep-going: a key refused before any write is not written, but a
 * write to another attribute of its target may still move it (the kernel
 * resets read_ahead_kb when max_sectors_kb is written): it is followed as
 * a coupled item too, so that its original is journaled. */
static void
plan_couple_refused(struct agent *a, struct plan *p)
{
	size_t n = p->n;

	for (size_t i = 0; i < n; i++) {
		const struct item *f = &p->v[i];

		if (f->kind != IK_SET || f->state != KNOB__KEY_STATE__KEY_FAILED ||
		    f->target == NULL || f->before == NULL)
			continue;
		for (size_t k = 0; k < n; k++) {
			if (!item_pending(&p->v[k]) ||
			    !moves(&p->v[k], f->d, f->target, f->s->attr))
				continue;
			add_coupled(a, p, k, p->v[i].target, p->v[i].s->attr);	/* moves f */
			break;
		}
	}
}

/* Nothing goes through journal entry e to a target that is not the one e
 * was journaled from (rollback, a switch's previous keys, crash recovery,
 * the boot re-apply): a device a glob must never reach (the disk behind /
 * once the names moved at boot) when a glob journaled it, or one whose
 * identity reads another now (it->ident; an entry without one, from
 * before, is not judged by it).  what: the value withheld, NULL for e's
 * original.  1 with it refused (PROTECTED or FAILED, it->refused; e stays
 * journaled), else 0. */
static int
target_refused(struct agent *a, const struct jentry *e, struct item *it, const char *what)
{
	char m[TUNE_MSG_MAX] = "", msg[TUNE_MSG_MAX * 2], orig[RAW_MAX + 32];

	if (what == NULL) {
		snprintf(orig, sizeof(orig), "its original %s", e->value);
		what = orig;
	}
	if (it->d->protect && tune_is_glob(e->key) &&
	    it->d->protect(a, it->s, it->target, m, sizeof(m))) {
		snprintf(msg, sizeof(msg), "%s; %s is not written: knob tuned it through a glob, "
		    "before it was protected (kept in the journal)", m, what);
		set_state(it, KNOB__KEY_STATE__KEY_PROTECTED, 0, msg);
	} else if (e->ident != NULL && (it->ident == NULL || strcmp(e->ident, it->ident) != 0)) {
		snprintf(msg, sizeof(msg), "%s is another device now (journaled as %s, now %s): "
		    "%s is not written to it (kept in the journal)", it->target, e->ident,
		    it->ident ? it->ident : "unknown", what);
		set_state(it, KNOB__KEY_STATE__KEY_FAILED, ENODEV, msg);
	} else
		return 0;
	it->refused = 1;
	return 1;
}

/* The journal's original of it's key, else another original of its
 * target that records an identity (a key that was already at its value
 * is not journaled); NULL when the journal has neither. */
static const struct jentry *
journaled_target(const struct journal *j, const struct item *it)
{
	long k = journal_find(j->orig, j->norig, it->s->driver, it->target, it->s->attr);

	if (k >= 0)
		return &j->orig[k];
	for (size_t i = 0; i < j->norig; i++)
		if (j->orig[i].ident && strcmp(j->orig[i].driver, it->s->driver) == 0 &&
		    strcmp(j->orig[i].target, it->target) == 0)
			return &j->orig[i];
	return NULL;
}

/* The boot re-apply writes no profile value to a device named exactly
 * whose journaled identity reads another now (the names moved at boot:
 * it is another disk, whose values knob never journaled): the key is
 * refused (target_refused) and logged with the journal and the key, its
 * original stays journaled.  A glob's targets are judged by protect(),
 * as at any apply. */
static void
boot_refused(struct agent *a, struct item *it)
{
	const struct tune_state *t = a->tune;
	const struct jentry *e;
	char what[RAW_MAX + 32];

	if (!item_pending(it) || it->wanted == NULL || tune_is_glob(it->s->key) ||
	    (e = journaled_target(&t->j, it)) == NULL)
		return;
	snprintf(what, sizeof(what), "the profile's value %s", it->wanted);
	if (target_refused(a, e, it, what))
		log_warnx("journal %s: re-apply at start: %s %s%s%s refused: %s", t->journal_path,
		    it->s->driver, it->target, *it->s->attr ? " " : "", it->s->attr, it->msg);
}

/* One setting of the request into p: FAILED or UNSUPPORTED when it cannot
 * go on, else one item per target it resolves to (a glob's device that
 * protect() refuses: PROTECTED).  Nothing is read yet. */
static void
plan_setting(struct agent *a, const Knob__Setting *s, struct plan *p)
{
	const struct tune_driver *d = tune_driver_find(s->driver);
	char msg[TUNE_MSG_MAX] = "", wanted[RAW_MAX];
	struct strvec targets = { 0 };
	struct item *it;
	int rc;

	if (d == NULL) {
		it = plan_add(p, s, NULL);
		snprintf(msg, sizeof(msg), "unknown driver '%s'", s->driver);
		set_state(it, KNOB__KEY_STATE__KEY_FAILED, EINVAL, msg);
		return;
	}
	if (setting_validate(s->driver, s->key, s->attr, s->match, s->value, msg,
	    sizeof(msg)) < 0 ||
	    d->normalise(s, s->value, wanted, sizeof(wanted), msg, sizeof(msg)) < 0) {
		it = plan_add(p, s, d);
		set_state(it, KNOB__KEY_STATE__KEY_FAILED, EINVAL, msg);
		return;
	}
	rc = d->resolve(a, s, &targets, msg, sizeof(msg));
	if (rc < 0 || targets.n == 0) {
		it = plan_add(p, s, d);
		it->wanted = xstrdup(wanted);
		set_state(it, rc < 0 ? KNOB__KEY_STATE__KEY_FAILED :
		    KNOB__KEY_STATE__KEY_UNSUPPORTED, rc,
		    rc < 0 ? msg : "nothing on this node matches");
	}
	for (size_t k = 0; rc >= 0 && k < targets.n; k++) {
		it = plan_add(p, s, d);
		it->target = xstrdup(targets.v[k]);
		it->wanted = xstrdup(wanted);
		msg[0] = '\0';
		if (d->protect && tune_is_glob(s->key) &&
		    d->protect(a, s, it->target, msg, sizeof(msg)))
			set_state(it, KNOB__KEY_STATE__KEY_PROTECTED, 0, msg);
	}
	strvec_free(&targets);
}

/* strcmp-like order of two items' (driver, target, attr). */
static int
slot_cmp(const struct item *a, const struct item *b)
{
	int c;

	if ((c = strcmp(a->s->driver, b->s->driver)) != 0 ||
	    (c = target_cmp(a->s->driver, a->target, b->target)) != 0)
		return c;
	return strcmp(a->s->attr, b->s->attr);
}

/* qsort: items by (driver, target, attr), then by their place in the plan. */
static int
item_target_cmp(const void *x, const void *y)
{
	const struct item *a = *(const struct item *const *)x, *b = *(const struct item *const *)y;
	int c = slot_cmp(a, b);

	return c != 0 ? c : a < b ? -1 : a > b;
}

/* Of two items of one target, does w's key win over l's: an exact key
 * over a glob, else the later in the request (a child's over what it
 * inherits; a --stack's keys come after the journaled ones it keeps, as
 * in the journal that verify and the boot re-apply read, and their layer
 * is higher)? */
static int
key_wins(const struct item *w, const struct item *l)
{
	int gw = tune_is_glob(w->s->key), gl = tune_is_glob(l->s->key);

	return gw != gl ? !gw : w > l;
}

/* Say in w's message that l's key, which also names w's target, is not
 * applied there: why, by the keys' layers (a stacked profile's key) as
 * apply, verify and the boot re-apply all know them.  Before, verify
 * knew no layers and said "the later key in the profile wins" where apply
 * said "the stacked profile's key wins". */
static void
note_overridden(struct item *w, const struct item *l)
{
	char m[TUNE_MSG_MAX];
	int had = w->msg != NULL && *w->msg;
	const char *why = tune_is_glob(l->s->key) && !tune_is_glob(w->s->key) ?
	    "an exact key wins over a glob" : l->layer < w->layer ?
	    "the stacked profile's key wins" : "the later key in the profile wins";

	snprintf(m, sizeof(m), "%s%sinstead of %s=%s: %s", had ? w->msg : "", had ? "; " : "",
	    l->s->key, l->s->value, why);
	set_msg(w, w->err, m);
}

/* Mark in drop the items v[g..e) of one target but the winner v[best],
 * each named in its message; where every one is a --stack's kept key
 * (no key of the request names the target) the winner goes too. */
static void
drop_losers(struct item *const *v, size_t g, size_t e, size_t best, const struct item *base,
    char *drop)
{
	int contested = 0;

	for (size_t k = g; k < e; k++)
		contested |= !v[k]->kept;
	for (size_t k = g; k < e; k++) {
		if (k != best && contested)
			note_overridden(v[best], v[k]);
		if (k != best || !contested)
			drop[v[k] - base] = 1;
	}
}

/* One item per (driver, target, attr).  Keys of a request that name the
 * same target (a glob and an exact key, overlapping globs, vm.dirty_ratio
 * and vm/dirty_ratio) would fight over it in the write passes and fail
 * the apply: the winner (key_wins) keeps the target, the others are
 * dropped for it, named in the winner's message (note_overridden).  A
 * --stack's kept keys take part where a key of the request names their
 * target, so that the apply writes what verify and the boot re-apply
 * want; elsewhere (or resolving to nothing) they leave the plan. */
static void
plan_one_per_target(struct plan *p)
{
	struct item **v = xcalloc(p->n ? p->n : 1, sizeof(*v));
	char *drop = xcalloc(p->n ? p->n : 1, 1);
	size_t nv = 0, w = 0;

	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].target != NULL)
			v[nv++] = &p->v[i];
		else
			drop[i] = p->v[i].kept;
	qsort(v, nv, sizeof(*v), item_target_cmp);
	for (size_t g = 0, e, best; g < nv; g = e) {
		for (best = g, e = g + 1; e < nv && slot_cmp(v[g], v[e]) == 0; e++)
			best = key_wins(v[e], v[best]) ? e : best;
		drop_losers(v, g, e, best, p->v, drop);
	}
	for (size_t i = 0; i < p->n; i++)
		if (!drop[i])
			p->v[w++] = p->v[i];
		else {	/* not read yet: only these are set */
			free(p->v[i].target);
			free(p->v[i].wanted);
			free(p->v[i].msg);
		}
	p->n = w;
	free(drop);
	free(v);
}

/* Step 1: validate each setting, resolve its targets, keep one key per
 * target and read their current values.  Items that cannot go on get
 * FAILED, UNSUPPORTED or PROTECTED.  The first nkept settings are a
 * --stack's kept journaled ones (plan_one_per_target); layer[i] is
 * settings[i]'s --stack layer (NULL: all 0). */
static void
plan_build(struct agent *a, Knob__Setting **settings, size_t n, const unsigned *layer,
    size_t nkept, struct plan *p)
{
	for (size_t i = 0; i < n; i++) {
		size_t from = p->n;

		plan_setting(a, settings[i], p);
		for (size_t k = from; k < p->n; k++) {
			p->v[k].kept = i < nkept;
			p->v[k].layer = layer ? layer[i] : 0;
		}
	}
	plan_one_per_target(p);
	for (size_t i = 0; i < p->n; i++) {
		struct item *it = &p->v[i];

		if (it->target == NULL || !item_pending(it))
			continue;
		read_before(a, p, it);
		if (p->boot)
			boot_refused(a, it);
	}
	plan_add_coupled(a, p);
}

/* Indices of the items in play (pending, with a target), grouped by
 * (driver, target) in order of first appearance (a target with a key of
 * negative rank before all others), each group in the driver's write order
 * (stable).  Caller frees. */
static size_t *
write_order(const struct plan *p, size_t *nout)
{
	size_t *idx = xcalloc(p->n ? p->n : 1, sizeof(*idx)), n = 0;
	char *placed = xcalloc(p->n ? p->n : 1, 1);

	/* two sweeps: first the targets with a key of negative rank (sysfs:
	 * cpu/smt/control, before every other target), then the rest */
	for (size_t sw = 0; sw < 2 * p->n; sw++) {
		size_t g0 = n, i = sw % p->n;

		if (placed[i] || !item_pending(&p->v[i]) || p->v[i].target == NULL ||
		    (sw < p->n && p->v[i].rank >= 0))
			continue;
		for (size_t j = i; j < p->n; j++) {
			if (placed[j] || !item_pending(&p->v[j]) || !same_target(&p->v[i], &p->v[j]))
				continue;
			placed[j] = 1;
			/* insertion by rank, after equal ranks */
			size_t k = n++;
			while (k > g0 && p->v[idx[k - 1]].rank > p->v[j].rank) {
				idx[k] = idx[k - 1];
				k--;
			}
			idx[k] = j;
		}
	}
	free(placed);
	*nout = n;
	return idx;
}

/* Test hook (--test-hooks, --test-pause-ms): pause ms at where, with the
 * marker STATE/test-pause a test can wait for (then SIGKILL us); a signal
 * (held back between the waits, so that none is missed), or the test
 * creating STATE/test-pause-end, ends it early. */
static void
pause_at(const struct pause *pz, const char *where)
{
	const struct timespec tick = { 0, 10000000 };
	char path[PATH_MAX], end[PATH_MAX + 8];
	sigset_t all, old;
	uint64_t until;

	if (pz == NULL || pz->a == NULL || !pz->a->cfg.test_hooks || pz->ms == 0 ||
	    (pz->at && *pz->at && strcmp(pz->at, where) != 0))
		return;
	snprintf(path, sizeof(path), "%s/test-pause", pz->a->state_dir);
	snprintf(end, sizeof(end), "%s-end", path);
	unlink(end);
	log_info("test hook: pausing %u ms %s", pz->ms, where);
	write_file_atomic(path, where, strlen(where), 0600);
	until = now_mono_ns() + (uint64_t)pz->ms * 1000000ull;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	while (now_mono_ns() < until && access(end, F_OK) < 0)
		if (ppoll(NULL, 0, &tick, &old) < 0 && errno == EINTR)
			break;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	unlink(end);
	unlink(path);
}

static void
describe_item(const struct item *it, char *buf, size_t len)
{
	char d[PATH_MAX];

	it->d->describe(it->s, it->target, d, sizeof(d));
	snprintf(buf, len, "%s %s", it->s->driver, d);
}

/* Write the item's wanted value (restore(): the driver's restore op) and
 * read it back into after, unless later says the pass's closing re-read
 * is the next to look at it.  The driver's result. */
static int
write_item(struct agent *a, struct item *it, int restore, int later)
{
	char msg[TUNE_MSG_MAX] = "";
	int rc;

	if ((restore || it->kind == IK_SWITCH) && it->d->restore)
		rc = it->d->restore(a, it->s, it->target, it->wanted, msg, sizeof(msg));
	else
		rc = it->d->write(a, it->s, it->target, it->wanted, msg, sizeof(msg));
	it->written = rc != TUNE_LEFT_TO_COUPLED && rc != TUNE_NOT_SETTABLE;
	it->na = rc == TUNE_NOT_SETTABLE;
	/* read back even after a failed write: it may have changed something */
	it->unread = !(rc < 0 || !later || it->d->costly_read);
	if (!it->unread)
		reread(a, it, NULL, 0);
	if (rc >= 0)
		it->reconfig = 0;
	if (rc < 0) {
		it->werr = 1;
		set_msg(it, rc, msg);
	} else if (rc == TUNE_PENDING_RESTART) {
		it->pending = 1;
		set_msg(it, 0, msg);
	} else if (rc == TUNE_LEFT_TO_COUPLED || rc == TUNE_NOT_SETTABLE)
		set_msg(it, 0, msg);
	return rc;
}

/* After writing w (idx[k]), re-read the keys before it in this pass that
 * held and that an earlier pass found moved (a first pass moves nothing
 * that its closing re-read would not find, and re-reading every earlier
 * key after every write made apply quadratic in its keys); one that no
 * longer holds was clobbered by w. */
static void
note_clobbers(struct agent *a, struct plan *p, const size_t *idx, size_t k,
    const struct item *w)
{
	char desc[PATH_MAX + 64];

	for (size_t j = 0; j < k; j++) {
		struct item *y = &p->v[idx[j]];

		if (!y->moved || y->wanted == NULL || y->werr || y->pending ||
		    y->d->costly_read || !item_holds(y))
			continue;
		reread(a, y, NULL, 0);
		if (!item_holds(y)) {
			describe_item(w, desc, sizeof(desc));
			free(y->clobber);
			y->clobber = xstrdup(desc);
		}
	}
}

/* Whether a pass's closing re-read reads it: not when its driver's read
 * runs a command (write_item read it back after its write), unless it is
 * a coupled key the transaction only follows (nothing writes it, so only
 * this read sees what the key's write left there: the value knob left,
 * which rollback judges it by). */
static int
closing_read(const struct item *it)
{
	return !it->werr && (!it->d->costly_read || (it->kind == IK_COUPLED && it->wanted == NULL));
}

/* Read back every item of idx whose value a write may have moved, for the
 * revert after a refused write: the ones whose read-back a write put off,
 * and every other one the closing re-read would have read (keys the
 * transaction journals but does not write, which an earlier write moved:
 * a device's nr_requests and iosched/ after its scheduler changed). */
static void
read_back(struct agent *a, struct plan *p, const size_t *idx, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		struct item *it = &p->v[idx[j]];

		if (it->unread || closing_read(it))
			reread(a, it, NULL, 0);
		it->unread = 0;
	}
}

/* Write, in idx order, every item whose live value is not its wanted
 * value, then re-read them all; repeat until all hold, TUNE_PASSES passes
 * at most.  restore: rollback semantics (driver restore op, go on past a
 * failed write); else stop at the first failed write unless keep_going.  Returns the number
 * of items that do not hold. */
static size_t
converge(struct agent *a, struct plan *p, const size_t *idx, size_t n, int restore,
    int keep_going, const struct pause *pz)
{
	size_t bad = 0;
	int first = 1;

	for (int pass = 0; pass < TUNE_PASSES; pass++) {
		const struct item *lastw = NULL;	/* this pass's latest write */

		for (size_t k = 0; k < n; k++) {
			struct item *it = &p->v[idx[k]];

			if (it->wanted == NULL || it->werr || it->pending)
				continue;
			/* an earlier write of this pass may have moved it: in the
			 * first pass only a write to its own target (the kernel
			 * moves a device's attributes together, and idx keeps a
			 * target's keys together) or one that the driver says
			 * moves it (a sysctl pair) is looked for here; another
			 * move across targets is found by the closing re-read
			 * and written by the next pass */
			if (lastw && !it->d->costly_read && (pass > 0 || same_target(lastw, it) ||
			    moves(lastw, it->d, it->target, it->s->attr)))
				reread(a, it, NULL, 0);
			if (item_done(it))
				continue;
			lastw = it;
			/* in the first pass nothing looks at a written value
			 * before the closing re-read (note_clobbers looks only
			 * at keys an earlier pass found moved) */
			if (write_item(a, it, restore, pass == 0) < 0 && !restore && !keep_going) {
				read_back(a, p, idx, n);	/* for the revert */
				return 1;
			}
			if (first) {
				first = 0;
				pause_at(pz, "after the first write");
			}
			note_clobbers(a, p, idx, k, it);
		}
		if (pass == 0)
			pause_at(pz, "after the write pass");
		bad = 0;
		for (size_t k = 0; k < n; k++) {
			struct item *it = &p->v[idx[k]];

			it->unread = 0;
			if (closing_read(it))
				reread(a, it, NULL, 0);
			if (!item_done(it)) {
				it->moved = 1;
				bad++;
			}
		}
		if (bad == 0 || lastw == NULL)
			break;
	}
	return bad;
}

/* "does not hold: wrote W, reads R (clobbered by K)" for an item; one
 * left to a coupled key's write says so. */
static void
fail_not_held(struct item *it, const char *verb)
{
	char m[TUNE_MSG_MAX + PATH_MAX];
	const char *left = !it->written && it->msg ? it->msg : NULL;

	if (it->werr) {
		it->state = KNOB__KEY_STATE__KEY_FAILED;
		return;
	}
	snprintf(m, sizeof(m), "%s %s, reads %s after %d passes%s%s%s%s", verb, it->wanted,
	    it->after ? it->after : "nothing", TUNE_PASSES, it->clobber ? ": clobbered by " : "",
	    it->clobber ? it->clobber : "", left ? "; " : "", left ? left : "");
	set_state(it, KNOB__KEY_STATE__KEY_FAILED, EIO, m);
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
	kr->wanted = xstrdup(it->set_to ? it->set_to : it->wanted ? it->wanted :
	    it->kind == IK_COUPLED ? it->after : it->s->value);
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

/* Results of every item except the coupled ones the kernel left alone. */
static void
plan_results(const struct plan *p, Knob__KeyResult ***out, size_t *nout)
{
	size_t n = 0;

	*out = xcalloc(p->n ? p->n : 1, sizeof(**out));
	for (size_t i = 0; i < p->n; i++) {
		if (p->v[i].kind == IK_COUPLED && p->v[i].state == KNOB__KEY_STATE__KEY_UNSPECIFIED)
			continue;
		/* coupled keys the kernel left alone, the previous profile's keys
		 * already at their original or unreadable (they stay journaled) */
		if (p->v[i].kind != IK_SET && (p->v[i].state == KNOB__KEY_STATE__KEY_SKIPPED ||
		    p->v[i].state == KNOB__KEY_STATE__KEY_UNCHANGED))
			continue;
		(*out)[n++] = key_result(&p->v[i]);
	}
	*nout = n;
}

/* Publish the active profile and its note (note NULL keeps the note) for
 * the readers on other worker threads: Facts, and verify. */
static void
set_active(struct tune_state *t, const char *name, const char *note)
{
	pthread_mutex_lock(&t->amu);
	snprintf(t->active, sizeof(t->active), "%s", name);
	if (note != NULL)
		snprintf(t->note, sizeof(t->note), "%s", note);
	pthread_mutex_unlock(&t->amu);
}

static void
jentry_from_item(struct jentry *e, const struct item *it, int added)
{
	memset(e, 0, sizeof(*e));
	e->driver = it->s->driver;
	e->key = it->s->key;
	e->attr = it->s->attr;
	e->match = it->s->match;
	e->target = it->target;
	e->value = it->before;
	e->persistent = it->s->persistent;
	e->added = added;
	e->ident = it->ident;
	e->coupled = it->kind == IK_COUPLED;
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

/* Whether live is the value a pending-restart mark of e's target saw when
 * knob set it (the set value is not live yet: not a change by someone). */
static int
pending_was(const struct journal *j, const struct jentry *e, const char *live)
{
	long k = journal_find(j->pend, j->npend, e->driver, e->target, e->attr);

	return k >= 0 && strcmp(j->pend[k].was, live) == 0;
}

/* Was journal entry e's target changed by someone since knob set it (its
 * live value, in it, is neither knob's value nor the original)?  Then it
 * is CHANGED_SINCE, left alone (check: a switch's --check, which says it
 * would be): 1.  Rollback (unless --force) and a switch judge the same
 * way. */
static int
changed_since(const struct journal *j, const struct jentry *e, struct item *it, int check)
{
	char m[TUNE_MSG_MAX];

	if (e->restoring || e->set == NULL || item_holds(it) || it->before == NULL ||
	    strcmp(it->before, e->set) == 0 || pending_was(j, e, it->before))
		return 0;
	snprintf(m, sizeof(m), "is %s, knob set %s, original %s: changed since knob set it; "
	    "%sleft alone (--force writes the original)", it->before, e->set, e->value,
	    check ? "would be " : "");
	set_state(it, KNOB__KEY_STATE__KEY_CHANGED_SINCE, 0, m);
	return 1;
}

/* it puts a value back (rollback, switch, crash recovery): with a driver
 * that defers (gpfs), the configured value may differ from the live one
 * even when it reads back already: when the target's pending-restart mark
 * is for another value, or, recovering a transaction (which may have
 * written before its marks were saved), always.  Then it is written. */
static void
mark_reconfig(const struct journal *j, struct item *it, int recovering)
{
	long k;

	if (it->d == NULL || !it->d->defers || it->wanted == NULL)
		return;
	k = pend_find(j, it);
	it->reconfig = recovering || (k >= 0 && strcmp(j->pend[k].value, it->wanted) != 0);
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
		    it->wanted == NULL || strcmp(it->before, it->wanted) == 0 ||
		    (k = pend_find(j, it)) < 0)
			continue;
		if (strcmp(j->pend[k].value, it->wanted) != 0 ||
		    strcmp(j->pend[k].was, it->before) != 0)
			continue;
		set_state(it, KNOB__KEY_STATE__KEY_PENDING_RESTART, 0, restart_note(it->d));
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
		case KNOB__KEY_STATE__KEY_RESTORED:
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

/* ------------------------------------------------------------ apply */
/* The plan plan_check asks the drivers about, on its thread (tune_planned). */
static __thread const struct plan *checking;

const char *
tune_planned(const char *driver, const char *target, const char *attr)
{
	long k = checking ? plan_find(checking, driver, target, attr) : -1;

	return k >= 0 && item_pending(&checking->v[k]) ? checking->v[k].wanted : NULL;
}

/* --check and the pre-write refusal: every key that would be written is
 * asked whether the write is known to fail.  Returns the number refused. */
static size_t
plan_check(struct agent *a, struct plan *p, int check)
{
	char msg[TUNE_MSG_MAX];
	size_t n = 0;

	checking = p;
	for (size_t i = 0; i < p->n; i++) {
		struct item *it = &p->v[i];

		if (!item_pending(it) || it->target == NULL || item_holds(it) ||
		    it->d->check == NULL)
			continue;
		msg[0] = '\0';
		int rc = it->d->check(a, it->s, it->target, it->wanted, msg, sizeof(msg));
		if (rc == 0)
			continue;
		if (check)
			set_state(it, KNOB__KEY_STATE__KEY_WOULD_FAIL, rc, msg);
		else {
			char m[TUNE_MSG_MAX + 32];

			snprintf(m, sizeof(m), "refused before any write: %s", msg);
			set_state(it, KNOB__KEY_STATE__KEY_FAILED, rc, m);
		}
		n++;
	}
	checking = NULL;
	return n;
}

/* The file of key (d, s, target) below the sysroot, stat'ed into st
 * (through the transaction's read fd when it has one): 0, or -1 (not one
 * file, or not there). */
static int
key_file(struct agent *a, const struct tune_driver *d, const Knob__Setting *s,
    const char *target, struct stat *st)
{
	char rel[PATH_MAX], full[PATH_MAX];
	int fd;

	if (d == NULL || d->file == NULL || target == NULL ||
	    d->file(s, target, rel, sizeof(rel)) < 0 || agent_path(a, full, sizeof(full), rel) < 0)
		return -1;
	return (fd = tune_fd_read(full)) >= 0 ? fstat(fd, st) : stat(full, st);
}

/* One file, one key: a key of the request whose file knob journaled
 * through another key that this apply does not set (an earlier
 * profile's, kept by --stack or going back in a switch: sysfs
 * /sys/block/sda/queue/nr_requests after blockdev sda nr_requests) fails
 * before any write.  Its original would be the other key's tuned value,
 * and a rollback would write both, in either order. */
static void
plan_refuse_shared_file(struct agent *a, const struct journal *j, struct plan *p)
{
	struct stat *fs = xcalloc(j->norig ? j->norig : 1, sizeof(*fs)), st;
	char *has = xcalloc(j->norig ? j->norig : 1, 1), m[TUNE_MSG_MAX];
	size_t nhas = 0;

	for (size_t k = 0; k < j->norig; k++) {
		const struct jentry *e = &j->orig[k];
		long w = plan_find(p, e->driver, e->target, e->attr);
		Knob__Setting tmp;

		jentry_setting(e, &tmp);
		has[k] = (w < 0 || p->v[w].kind != IK_SET) &&
		    key_file(a, tune_driver_find(e->driver), &tmp, e->target, &fs[k]) == 0;
		nhas += has[k];
	}
	for (size_t i = 0; nhas > 0 && i < p->n; i++) {
		struct item *it = &p->v[i];

		if (it->kind != IK_SET || !item_pending(it) ||
		    key_file(a, it->d, it->s, it->target, &st) < 0)
			continue;
		for (size_t k = 0; k < j->norig; k++) {
			const struct jentry *e = &j->orig[k];

			if (!has[k] || fs[k].st_dev != st.st_dev || fs[k].st_ino != st.st_ino ||
			    same_key(it, e->driver, e->target, e->attr))
				continue;
			snprintf(m, sizeof(m), "its file is also %s %s%s%s, which knob journaled "
			    "(original %s): one file is tuned through one key; set it through that "
			    "key, or roll back first", e->driver, e->target,
			    e->attr && *e->attr ? " " : "", e->attr ? e->attr : "", e->value);
			set_state(it, KNOB__KEY_STATE__KEY_FAILED, EEXIST, m);
			break;
		}
	}
	free(fs);
	free(has);
}

/* --check: the state of a key still in play.  A switch's key of the
 * previous profile that the apply would write back is would-restore (the
 * apply says restored), to a controller that knows the word (restore);
 * an older one is told would-change, which it counts as a change.  A
 * configured value that differs from the live one (reconfig) is written
 * too. */
static void
check_pending(struct item *it, int restore)
{
	if (it->kind != IK_SWITCH) {
		it->state = item_holds(it) ? KNOB__KEY_STATE__KEY_UNCHANGED :
		    KNOB__KEY_STATE__KEY_WOULD_CHANGE;
		return;
	}
	if (item_done(it)) {
		it->state = KNOB__KEY_STATE__KEY_UNCHANGED;
		return;
	}
	set_state(it, restore ? KNOB__KEY_STATE__KEY_WOULD_RESTORE :
	    KNOB__KEY_STATE__KEY_WOULD_CHANGE, 0,
	    "not in the new profile: would go back to its original");
}

/* --check, step 5: classify only.  What the write would refuse, a value
 * the normaliser rejects and an exact path that is not there are
 * would-fail; restore: the controller knows would-restore. */
static void
check_classify(struct plan *p, int restore, char *rmsg, size_t len)
{
	size_t nwrite = 0, nfail = 0, nback = 0, nleft = 0;

	for (size_t i = 0; i < p->n; i++) {
		struct item *it = &p->v[i];

		if (it->kind == IK_COUPLED)
			continue;
		if (it->state == KNOB__KEY_STATE__KEY_FAILED)
			it->state = KNOB__KEY_STATE__KEY_WOULD_FAIL;
		else if (it->state == KNOB__KEY_STATE__KEY_UNSUPPORTED && it->target == NULL &&
		    it->d && it->d->path_keys && !tune_is_glob(it->s->key)) {
			char m[TUNE_MSG_MAX];

			snprintf(m, sizeof(m), "no such path on this node: %s", it->s->key);
			set_state(it, KNOB__KEY_STATE__KEY_WOULD_FAIL, ENOENT, m);
		} else if (item_pending(it))
			check_pending(it, restore);
		nwrite += it->state == KNOB__KEY_STATE__KEY_WOULD_CHANGE && it->kind != IK_SWITCH;
		nback += it->kind == IK_SWITCH && (it->state == KNOB__KEY_STATE__KEY_WOULD_CHANGE ||
		    it->state == KNOB__KEY_STATE__KEY_WOULD_RESTORE);
		nleft += it->state == KNOB__KEY_STATE__KEY_CHANGED_SINCE;
		nfail += it->state == KNOB__KEY_STATE__KEY_WOULD_FAIL;
	}
	snprintf(rmsg, len, "check: %zu would change, %zu would be restored, %zu would be left "
	    "(changed since knob set them), %zu would fail, nothing written", nwrite, nback, nleft,
	    nfail);
}

/* The previous profile's key e is also an attribute the kernel moves when
 * this transaction writes another key (coupled item c): it goes back to
 * its original, written after that key (the drivers' order), and its
 * original stays journaled, because undoing this transaction moves it
 * again.  Not to a device that is not the one journaled (target_refused,
 * as rollback), nor over someone's change (changed_since: the apply then
 * writes that value back after the key that moved it, keep_changed_since). */
static void
switch_coupled(struct agent *a, struct plan *p, struct item *c, const struct journal *j,
    const struct jentry *e)
{
	Knob__Setting tmp;

	jentry_setting(e, &tmp);
	c->s = plan_own(p, &tmp, NULL, NULL, NULL, "previous profile (switch)");
	c->kind = IK_SWITCH;
	c->keep_orig = 1;
	c->wanted = xstrdup(e->value);
	if (!target_refused(a, e, c, NULL) && !changed_since(j, e, c, p->check))
		mark_reconfig(j, c, 0);
}

/* The message of h, left alone because c, whose write moves it, is
 * changed since knob set it: the driver's reason (coupled_left), else the
 * sysctl pair's (writing h would zero c). */
static void
partner_left_msg(const struct plan *p, const struct item *c, const struct item *h, char *m,
    size_t len)
{
	char name[PATH_MAX], hname[PATH_MAX];
	const char *would = p->check ? "would be " : "";

	c->d->describe(c->s, c->target, name, sizeof(name));
	if (c->d->coupled_left == NULL) {
		snprintf(m, len, "is %s, original %s: %sleft alone, its restore would set %s "
		    "(changed since knob set it) to 0: the kernel keeps the two exclusive "
		    "(--force writes the originals)", h->before ? h->before : "unreadable",
		    h->wanted, would, name);
		return;
	}
	c->d->describe(h->s, h->target, hname, sizeof(hname));
	snprintf(m, len, "%s %sleft: %s was changed since knob set it; is %s, original %s: %s "
	    "(--force writes the originals)", hname, would, name,
	    h->before ? h->before : "unreadable", h->wanted, c->d->coupled_left);
}

/* The message of h, left with c (changed since knob set it), whose write
 * moves it (partner_left_msg), when h already is changed since knob set
 * it: h's own change said too ("is 2048, knob set 1024", the start of
 * changed_since's message), or, after an earlier partner's message, c
 * named too.  Before, c's message replaced h's, and a Lustre -P record
 * changed since as well as a mount's value was reported as left for the
 * mount only. */
static void
partner_also_msg(const struct plan *p, const struct item *c, const struct item *h, char *m,
    size_t len)
{
	const char *own = h->msg ? h->msg : "";
	char name[PATH_MAX];
	size_t n;

	if (h->partner_left) {
		c->d->describe(c->s, c->target, name, sizeof(name));
		snprintf(m, len, "%s; %s was changed since knob set it too", own, name);
		return;
	}
	partner_left_msg(p, c, h, m, len);
	c->d->describe(h->s, h->target, name, sizeof(name));
	n = strlen(m);
	snprintf(m + n, len - n, "; %s itself was changed since knob set it too (%.*s)", name,
	    (int)(strstr(own, ", original ") ? (size_t)(strstr(own, ", original ") - own) :
	    strlen(own)), own);
}

/* Whether h, the partner of c (changed since knob set it), is left with
 * it: still to be written and not holding, or (a driver with a reason of
 * its own, coupled_left) itself changed-since, moved by c's change (nfsd:
 * the admin's threads write moved pool_threads), its message then the
 * partner's. */
static int
partner_held(const struct item *c, const struct item *h)
{
	if (item_pending(h))
		return !item_holds(h);
	return h->state == KNOB__KEY_STATE__KEY_CHANGED_SINCE && c->d->coupled_left != NULL;
}

/* Keys the kernel moves together (a sysctl pair: writing either half
 * zeroes the other; nfsd threads and pool_threads; a Lustre mount's value
 * and its -P record): while one is left alone as changed since knob set
 * it, putting its partner's original back (a rollback, a switch) would
 * undo that change, so the partner is left alone too (not written, kept
 * in the journal; a rollback with --force writes both), its message
 * saying why (partner_left_msg).  Before, a sysctl half's restore zeroed
 * the admin's value, the write-back of that value zeroed the restored
 * half again, and the result still said restored, its original dropped
 * from the journal. */
static void
hold_exclusive_partners(struct plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct item *c = &p->v[i], *h;
		char m[TUNE_MSG_MAX];
		const char *t;
		long k;

		if (c->state != KNOB__KEY_STATE__KEY_CHANGED_SINCE || c->target == NULL ||
		    c->d == NULL || c->d->coupled_target == NULL ||
		    (t = c->d->coupled_target(c->target)) == NULL ||
		    (k = plan_find(p, c->s->driver, t, c->s->attr)) < 0)
			continue;
		h = &p->v[k];
		if ((h->kind != IK_SWITCH && h->jidx < 0) || !partner_held(c, h))
			continue;
		if (h->state == KNOB__KEY_STATE__KEY_CHANGED_SINCE)
			partner_also_msg(p, c, h, m, sizeof(m));
		else
			partner_left_msg(p, c, h, m, sizeof(m));
		set_state(h, KNOB__KEY_STATE__KEY_CHANGED_SINCE, 0, m);
		h->partner_left = 1;
	}
}

/* Switching profiles: every journaled original that the new profile does
 * not set goes back, in the same transaction, judged as rollback judges
 * it: not to a device that is not the one journaled (target_refused: kept
 * in the journal, counted in the reply's kept), nor over someone's change
 * (changed_since). */
static void
plan_add_switch(struct agent *a, const struct journal *j, struct plan *p)
{
	size_t n = p->n;

	for (size_t i = 0; i < j->norig; i++) {
		const struct jentry *e = &j->orig[i];
		Knob__Setting tmp, *s;
		struct item *it;
		size_t k;
		int hit = 0;

		for (k = 0; k < n && !hit; k++)
			hit = same_key(&p->v[k], e->driver, e->target, e->attr) ||
			    (p->v[k].state == KNOB__KEY_STATE__KEY_PROTECTED &&
			    p->v[k].target && strcmp(p->v[k].target, e->target) == 0);
		/* one journaled only as moved by a key this profile sets too
		 * stays what it is here: moved by that key */
		if (hit && p->v[k - 1].kind == IK_COUPLED && item_pending(&p->v[k - 1]) &&
		    !e->coupled)
			switch_coupled(a, p, &p->v[k - 1], j, e);
		if (hit || tune_driver_find(e->driver) == NULL)
			continue;
		jentry_setting(e, &tmp);
		s = plan_own(p, &tmp, NULL, NULL, NULL, "previous profile (switch)");
		it = plan_add(p, s, tune_driver_find(e->driver));
		it->kind = IK_SWITCH;
		it->target = xstrdup(e->target);
		it->wanted = xstrdup(e->value);
		if (read_before(a, p, it) != 0) {
			free(it->target);
			it->target = NULL;
			it->state = KNOB__KEY_STATE__KEY_SKIPPED;	/* stays journaled */
		} else if (!target_refused(a, e, it, NULL) && !changed_since(j, e, it, p->check))
			mark_reconfig(j, it, 0);
	}
	hold_exclusive_partners(p);
}

/* Final state of each item in play after the write passes. */
static size_t
classify_apply(struct plan *p, const size_t *idx, size_t n)
{
	size_t nfail = 0;

	for (size_t k = 0; k < n; k++) {
		struct item *it = &p->v[idx[k]];
		char m[TUNE_MSG_MAX];

		if (it->kind == IK_COUPLED) {
			if (it->after && strcmp(it->after, it->before) != 0) {
				snprintf(m, sizeof(m), "%s; original %s journaled", it->s->origin,
				    it->before);
				set_state(it, KNOB__KEY_STATE__KEY_CHANGED, 0, m);
				it->written = 1;
			}
			continue;
		}
		if (it->werr)
			it->state = KNOB__KEY_STATE__KEY_FAILED;
		else if (it->pending)
			it->state = KNOB__KEY_STATE__KEY_PENDING_RESTART;
		else if (it->na) {	/* not written, nothing journaled for it */
			snprintf(m, sizeof(m), "not written: %s", it->msg ? it->msg :
			    "not applicable now");
			set_state(it, KNOB__KEY_STATE__KEY_UNCHANGED, 0, m);
		} else if (item_holds(it) && strcmp(it->before, it->wanted) == 0 &&
		    !(it->kind == IK_SWITCH && it->written))	/* reconfig: restored */
			it->state = KNOB__KEY_STATE__KEY_UNCHANGED;
		else if (item_holds(it))	/* written, or moved into place by a coupled write */
			it->state = it->kind == IK_SWITCH ? KNOB__KEY_STATE__KEY_RESTORED :
			    KNOB__KEY_STATE__KEY_CHANGED;
		else if (!it->written)
			it->state = KNOB__KEY_STATE__KEY_SKIPPED;
		else
			fail_not_held(it, "wrote");
		if (it->state == KNOB__KEY_STATE__KEY_FAILED)
			nfail++;
		if (it->state == KNOB__KEY_STATE__KEY_RESTORED)
			set_msg(it, 0, "not in the new profile: back to its original");
		if (it->state == KNOB__KEY_STATE__KEY_SKIPPED)
			set_msg(it, 0, "not written: an earlier key failed");
	}
	return nfail;
}

/* After a failure: put back every key this transaction moved, in order,
 * re-read until they hold; why is the message of the keys that came back.
 * Returns the number that did not come back. */
static size_t
revert(struct agent *a, struct plan *p, const size_t *idx, size_t n, const char *why)
{
	size_t *rv = xcalloc(n ? n : 1, sizeof(*rv)), nr = 0, bad;

	for (size_t k = 0; k < n; k++) {
		struct item *it = &p->v[idx[k]];

		if (it->before == NULL || it->na ||
		    (it->after && strcmp(it->after, it->before) == 0 && !it->pending))
			continue;	/* not moved by this transaction */
		it->set_to = it->wanted;
		it->wanted = xstrdup(it->before);
		it->reconfig = it->pending;	/* configured, not live: write it back */
		it->werr = it->pending = 0;
		free(it->clobber);
		it->clobber = NULL;
		rv[nr++] = idx[k];
	}
	bad = converge(a, p, rv, nr, 1, 1, NULL);
	for (size_t k = 0; k < nr; k++) {
		struct item *it = &p->v[rv[k]];

		if (item_done(it)) {
			if (it->state != KNOB__KEY_STATE__KEY_FAILED) {
				it->state = KNOB__KEY_STATE__KEY_REVERTED;
				set_msg(it, 0, why);
			}
			it->written = 0;
		} else {
			char m[TUNE_MSG_MAX + 64];

			snprintf(m, sizeof(m), "revert failed: wrote %s, reads %s%s%s", it->before,
			    it->after ? it->after : "nothing", it->msg && *it->msg ? ": " : "",
			    it->msg ? it->msg : "");
			set_state(it, KNOB__KEY_STATE__KEY_FAILED, EIO, m);
		}
	}
	free(rv);
	return bad;
}

/* The active name after applying profile (stack: "A+B"). */
static void
next_active(const struct journal *j, const char *profile, int stack, char *out, size_t len)
{
	char tmp[sizeof(j->active)], *save = NULL;
	int have = strcmp(j->active, profile) == 0;

	snprintf(tmp, sizeof(tmp), "%s", j->active);
	for (char *c = strtok_r(tmp, "+", &save); c && !have; c = strtok_r(NULL, "+", &save))
		have = strcmp(c, profile) == 0;
	if (stack && j->active[0] && !have)
		snprintf(out, len, "%s+%s", j->active, profile);
	else if (stack && j->active[0])
		snprintf(out, len, "%s", j->active);
	else
		snprintf(out, len, "%s", profile);
}

/* Does a --stack apply of req keep the journaled setting e (req sets no
 * key of its driver, key, attr and match)? */
static int
stack_keeps(const Knob__ApplyRequest *req, const struct jentry *e)
{
	for (size_t k = 0; k < req->n_settings; k++)
		if (strcmp(req->settings[k]->driver, e->driver) == 0 &&
		    strcmp(req->settings[k]->key, e->key) == 0 &&
		    strcmp(req->settings[k]->attr, e->attr) == 0 &&
		    strcmp(req->settings[k]->match, e->match) == 0)
			return 0;
	return req->stack;
}

/* The --stack layer of req's setting s, with set (n) the journaled
 * settings before req: the boot re-apply's (boot), whose request is the
 * journal's settings, keeps the journaled one's; a --stack's goes on top
 * of the journaled ones; otherwise 0 (the first profile). */
static unsigned
req_layer(const struct jentry *set, size_t n, const Knob__ApplyRequest *req,
    const Knob__Setting *s, int boot)
{
	unsigned top = 0;

	for (size_t i = 0; i < n; i++) {
		if (boot && strcmp(set[i].driver, s->driver) == 0 &&
		    strcmp(set[i].key, s->key) == 0 && strcmp(set[i].attr, s->attr) == 0 &&
		    strcmp(set[i].match, s->match) == 0)
			return set[i].layer;
		top = set[i].layer + 1 > top ? set[i].layer + 1 : top;
	}
	return req->stack ? top : 0;
}

/* The journaled resolved settings after applying req (stack keeps the
 * previous ones that req does not override, before req's, each with its
 * layer, req_layer; boot: the boot re-apply). */
static void
commit_settings(struct journal *j, const Knob__ApplyRequest *req, int boot)
{
	struct jentry *old = j->set;
	size_t nold = j->nset;

	j->set = NULL;
	j->nset = 0;
	for (size_t i = 0; i < nold; i++)
		if (stack_keeps(req, &old[i]))
			journal_push(&j->set, &j->nset, &old[i]);
	for (size_t i = 0; i < req->n_settings; i++) {
		const Knob__Setting *s = req->settings[i];
		struct jentry e = { 0 };

		e.layer = req_layer(old, nold, req, s, boot);
		e.driver = s->driver;
		e.key = s->key;
		e.attr = s->attr;
		e.match = s->match;
		e.target = (char *)(uintptr_t)"";
		e.value = s->value;
		e.persistent = s->persistent;
		e.origin = s->origin;
		journal_push(&j->set, &j->nset, &e);
	}
	for (size_t i = 0; i < nold; i++)
		jentry_clear(&old[i]);
	free(old);
}

/* Commit: new originals (with the value knob left) of whatever is still
 * changed; switch items back at their original leave the journal. */
static void
commit_originals(struct journal *j, const struct plan *p, const size_t *idx, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		const struct item *it = &p->v[idx[k]];
		long o = journal_find(j->orig, j->norig, it->s->driver, it->target, it->s->attr);
		const char *set = it->pending ? it->wanted : it->after;
		struct jentry e;

		if (it->kind == IK_SWITCH) {
			if (o < 0 || (it->state != KNOB__KEY_STATE__KEY_RESTORED &&
			    it->state != KNOB__KEY_STATE__KEY_UNCHANGED))
				continue;	/* not back at its original: stays */
			if (it->keep_orig) {
				free(j->orig[o].set);
				j->orig[o].set = xstrdup(it->after ? it->after : it->wanted);
			} else {
				drop_mark(j, &j->orig[o]);
				journal_remove(j->orig, &j->norig, (size_t)o);
			}
			continue;
		}
		/* one that ends where it started was not changed, unless a
		 * coupled write moved it: a rollback's write of that key moves
		 * it again, and then only its original brings it back */
		if (it->state == KNOB__KEY_STATE__KEY_REVERTED || set == NULL || it->before == NULL ||
		    it->na ||
		    (!it->pending && strcmp(set, it->before) == 0 && !moved_by_coupled(p, it)))
			continue;
		if (o < 0) {
			jentry_from_item(&e, it, 0);
			e.set = (char *)(uintptr_t)set;
			journal_push(&j->orig, &j->norig, &e);
		} else {
			free(j->orig[o].set);
			j->orig[o].set = xstrdup(set);
			j->orig[o].restoring = 0;	/* knob set it again: judged afresh */
			j->orig[o].coupled &= it->kind == IK_COUPLED;	/* a key of its own now */
		}
	}
}

/* Journal the before values of the items idx[0..n) as the transaction
 * (saved when writing: nothing may be written before).  0, or -1 after
 * failing every key with the reason (rmsg says it too). */
static int
txn_begin(struct tune_state *t, struct plan *p, const size_t *idx, size_t n,
    const char *profile, int writing, char *rmsg, size_t rlen)
{
	char m[TUNE_MSG_MAX + PATH_MAX];
	int rc;

	txn_clear(&t->j);
	t->j.in_txn = writing;
	snprintf(t->j.txn_id, sizeof(t->j.txn_id), "%llx-%ld",
	    (unsigned long long)now_real_ns(), (long)getpid());
	snprintf(t->j.txn_profile, sizeof(t->j.txn_profile), "%s", profile);
	for (size_t k = 0; k < n; k++) {
		struct item *it = &p->v[idx[k]];
		struct jentry e;

		if (journal_find(t->j.txn, t->j.ntxn, it->s->driver, it->target, it->s->attr) >= 0)
			continue;
		jentry_from_item(&e, it, journal_find(t->j.orig, t->j.norig, it->s->driver,
		    it->target, it->s->attr) < 0);
		journal_push(&t->j.txn, &t->j.ntxn, &e);
	}
	if (!writing || (rc = journal_save(t->journal_path, &t->j)) == 0)
		return 0;
	txn_clear(&t->j);
	snprintf(m, sizeof(m), "not written: the journal %s could not be saved (%s), so the "
	    "original could not be kept", t->journal_path, strerror(-rc));
	for (size_t i = 0; i < p->n; i++)
		if (item_pending(&p->v[i]) && p->v[i].kind != IK_COUPLED)
			set_state(&p->v[i], KNOB__KEY_STATE__KEY_FAILED, rc, m);
	snprintf(rmsg, rlen, "cannot write journal %s: %s; nothing written", t->journal_path,
	    strerror(-rc));
	return -1;
}

/* plan_build for req: a --stack's kept journaled settings (stack_keeps,
 * copies owned by p) come first, as commit_settings journals them, so
 * that a target one of them shares with a key of req goes to the key
 * verify and the boot re-apply pick (plan_one_per_target): a base
 * profile's exact key keeps its device from a stacked glob. */
static void
plan_build_stacked(struct agent *a, const struct journal *j, const Knob__ApplyRequest *req,
    struct plan *p)
{
	Knob__Setting **v = xcalloc(j->nset + req->n_settings + 1, sizeof(*v)), tmp;
	unsigned *layer = xcalloc(j->nset + req->n_settings + 1, sizeof(*layer));
	size_t n = 0, nkept;

	for (size_t i = 0; i < j->nset; i++)
		if (stack_keeps(req, &j->set[i])) {
			jentry_setting(&j->set[i], &tmp);
			layer[n] = j->set[i].layer;
			v[n++] = plan_own(p, &tmp, NULL, NULL, NULL, NULL);
		}
	nkept = n;
	for (size_t i = 0; i < req->n_settings; i++) {
		layer[n] = req_layer(j->set, j->nset, req, req->settings[i], p->boot);
		v[n++] = req->settings[i];
	}
	plan_build(a, v, n, layer, nkept, p);
	free(layer);
	free(v);
}

/* Step 1 of apply: resolve globs and read every current value (the
 * pending marks and, unless stacked, the switch from the active profile),
 * then ask each driver whether the write is known to fail.  1 when the
 * transaction goes on to write, 0 when it ends here (a check run, or a
 * key failed before any write: rmsg says why). */
static int
apply_plan(struct agent *a, const Knob__ApplyRequest *req, struct plan *p, char *rmsg,
    size_t rlen)
{
	struct journal *j = &a->tune->j;
	size_t nfail = 0;

	p->journals = 1;	/* p->boot: set by the caller */
	p->check = req->check;
	plan_build_stacked(a, j, req, p);
	plan_mark_pending(j, p);
	if (!req->stack)
		plan_add_switch(a, j, p);
	plan_refuse_shared_file(a, j, p);
	plan_check(a, p, req->check);
	if (req->check) {
		check_classify(p, req->would_restore, rmsg, rlen);
		return 0;
	}
	/* a key refused as not the device journaled stops nothing: the rest
	 * goes ahead, as in a rollback */
	for (size_t i = 0; i < p->n; i++)
		nfail += p->v[i].state == KNOB__KEY_STATE__KEY_FAILED && !p->v[i].refused;
	if (nfail > 0 && req->keep_going)
		plan_couple_refused(a, p);
	if (nfail == 0 || req->keep_going)
		return 1;
	for (size_t i = 0; i < p->n; i++)
		if (item_pending(&p->v[i]))
			set_state(&p->v[i], KNOB__KEY_STATE__KEY_SKIPPED, 0,
			    "not written: another key failed before any write");
	snprintf(rmsg, rlen, "%zu key(s) failed before any write; nothing written", nfail);
	return 0;
}

/* Step 4 of apply: restore what this transaction moved, in order, until
 * it holds; rmsg says whether all of it came back. */
static void
apply_revert(struct agent *a, struct plan *p, const size_t *idx, size_t n,
    Knob__ApplyResult *res, char *rmsg, size_t rlen)
{
	res->reverted = 1;
	if (revert(a, p, idx, n, "restored because another key failed") > 0)
		snprintf(rmsg, rlen, "a key failed; some changes could NOT be reverted (kept "
		    "in the journal for rollback)");
	else
		snprintf(rmsg, rlen, "a key failed; every change of this transaction was "
		    "reverted");
}

static void recover(struct agent *a, struct tune_state *t, const char *why);
static void keep_changed_since(struct agent *a, struct plan *p);

/* The commit's save failed (rc): the journal on disk still holds the
 * transaction, which the agent's next start would undo.  Undo it now, as
 * that start would, so that the node, the journal and the answer agree:
 * the keys go back, the journal in memory becomes the one on disk (the
 * state before this apply, with its transaction undone by recover), and
 * the apply fails. */
static void
commit_undo(struct agent *a, struct tune_state *t, struct plan *p, const size_t *idx,
    size_t n, Knob__ApplyResult *res, int rc, char *rmsg, size_t rlen)
{
	struct journal disk = { 0 };
	char why[TUNE_MSG_MAX];
	size_t bad;

	res->reverted = 1;
	snprintf(why, sizeof(why), "restored: the journal could not be saved (%s)", strerror(-rc));
	bad = revert(a, p, idx, n, why);
	if (journal_load(t->journal_path, &disk) < 0) {
		log_warnx("journal %s: cannot be read back: check the node's settings",
		    t->journal_path);
		journal_free(&disk);
	} else {
		journal_free(&t->j);
		t->j = disk;
		if (t->j.sysroot == NULL)	/* no file: nothing was saved yet */
			t->j.sysroot = xstrdup(a->sysroot);
		snprintf(why, sizeof(why), "could not be committed (%s)", strerror(-rc));
		if (t->j.in_txn) {
			recover(a, t, why);
			if (journal_save(t->journal_path, &t->j) < 0)
				log_warnx("journal %s: still holds transaction %s: the next "
				    "start undoes it again", t->journal_path, res->txn_id);
		}
	}
	snprintf(rmsg, rlen, "the journal %s could not be saved (%s): %s", t->journal_path,
	    strerror(-rc), bad > 0 ? "some changes could NOT be reverted (the agent tries "
	    "again at its next start)" : "every change of this transaction was reverted");
}

/* The active profile's values are written in this boot: the journal
 * says so (a start in the same boot does not re-apply, tune_init). */
static void
record_boot(struct tune_state *t)
{
	if (t->boot_id[0] == '\0')
		return;
	free(t->j.boot_id);
	t->j.boot_id = xstrdup(t->boot_id);
}

/* The commit after the steps: originals and pending marks into the
 * journal, the new active profile and its settings unless reverted, the
 * transaction closed and the journal saved. */
static void
apply_commit(struct agent *a, struct plan *p, const size_t *idx, size_t n,
    const Knob__ApplyRequest *req, Knob__ApplyResult *res, int failed, char *rmsg,
    size_t rlen)
{
	struct tune_state *t = a->tune;
	char name[sizeof(t->j.active)];
	int rc;

	commit_originals(&t->j, p, idx, n);
	apply_marks(&t->j, p);
	if (!res->reverted) {
		next_active(&t->j, req->profile, req->stack, name, sizeof(name));
		snprintf(t->j.active, sizeof(t->j.active), "%s", name);
		commit_settings(&t->j, req, p->boot);
		record_boot(t);
	}
	res->txn_id = xstrdup(t->j.txn_id);
	txn_clear(&t->j);
	if ((rc = journal_save(t->journal_path, &t->j)) < 0) {
		log_warnx("journal %s: %s: undoing transaction %s", t->journal_path,
		    strerror(-rc), res->txn_id);
		commit_undo(a, t, p, idx, n, res, rc, rmsg, rlen);
	}
	if (rmsg[0] == '\0')
		snprintf(rmsg, rlen, "%s", failed ? "applied with failures (--keep-going)" :
		    "applied");
}

/* The keys of p refused as not the device journaled (res->kept), said
 * at the end of the reply's message. */
static void
apply_kept(const struct plan *p, Knob__ApplyResult *res, char *rmsg, size_t rlen)
{
	size_t len = strlen(rmsg);

	for (size_t i = 0; i < p->n; i++)
		res->kept += p->v[i].refused;
	if (res->kept > 0 && len < rlen)
		snprintf(rmsg + len, rlen - len, "; %u key(s) refused: not the device journaled, "
		    "kept in the journal", res->kept);
}

/* The transaction (t->mu held), in the steps of the README ("Transactions,
 * rollback and the journal"), then the commit; boot: the boot re-apply
 * (boot_refused).  Results into res. */
static void
apply_locked(struct agent *a, const Knob__ApplyRequest *req, int boot,
    Knob__ApplyResult *res)
{
	struct tune_state *t = a->tune;
	struct pause pz = { a, req->test_pause_ms, req->test_pause_at };
	struct plan p = { .boot = boot };
	char rmsg[1024] = "";
	size_t *idx = NULL, n = 0, nwrite = 0;
	int failed;

	/* step 1: read every current value; a known failure stops before any write */
	if (!apply_plan(a, req, &p, rmsg, sizeof(rmsg)))
		goto done;
	idx = write_order(&p, &n);
	for (size_t k = 0; k < n; k++)
		nwrite += !item_holds(&p.v[idx[k]]);
	/* step 2: the transaction's before values, durable before the first write */
	if (txn_begin(t, &p, idx, n, req->profile, nwrite > 0, rmsg, sizeof(rmsg)) < 0)
		goto done;
	if (nwrite > 0)
		pause_at(&pz, "after journaling");
	/* step 3: write in order, re-read, repeat until every key holds; classify */
	converge(a, &p, idx, n, 0, req->keep_going, &pz);
	failed = classify_apply(&p, idx, n) > 0;
	if (nwrite > 0)
		pause_at(&pz, "before commit");
	/* step 4: on failure restore what this transaction changed */
	if (failed && !req->keep_going)
		apply_revert(a, &p, idx, n, res, rmsg, sizeof(rmsg));
	/* a switch leaves the previous profile's changed-since keys alone:
	 * one this transaction's writes moved gets its value back */
	keep_changed_since(a, &p);
	apply_commit(a, &p, idx, n, req, res, failed, rmsg, sizeof(rmsg));
done:
	free(idx);
	apply_kept(&p, res, rmsg, sizeof(rmsg));
	res->message = xstrdup(rmsg);
	if (res->txn_id == NULL)
		res->txn_id = xstrdup("");
	plan_results(&p, &res->keys, &res->n_keys);
	plan_free(&p);
}

int
tune_apply(struct agent *a, const Knob__ApplyRequest *req, Knob__ApplyResult *res)
{
	struct tune_state *t = a->tune;
	struct tune_fds fds;

	knob__apply_result__init(res);
	res->message = res->txn_id = NULL;	/* not the shared empty string */
	if (t == NULL)
		return -1;
	pthread_mutex_lock(&t->mu);
	tune_fd_begin(&fds, a->sysroot);
	apply_locked(a, req, 0, res);
	tune_fd_end(&fds);
	/* a committed apply ends the note (re-applied at boot, ...); a check,
	 * or an apply that wrote nothing or was reverted, keeps it */
	set_active(t, t->j.active, res->reverted || *res->txn_id == '\0' ? NULL : "");
	pthread_mutex_unlock(&t->mu);
	return 0;
}

/* ------------------------------------------------------------ verify */
/* The journal's active settings as a request-style array (borrowed
 * strings; free the array only). */
static Knob__Setting **
journal_settings(const struct journal *j)
{
	Knob__Setting **v = xcalloc(j->nset ? j->nset : 1, sizeof(*v));

	for (size_t i = 0; i < j->nset; i++) {
		v[i] = xcalloc(1, sizeof(**v));
		jentry_setting(&j->set[i], v[i]);
	}
	return v;
}

/* The --stack layers of the journal's active settings, in their order.
 * Caller frees. */
static unsigned *
journal_layers(const struct journal *j)
{
	unsigned *v = xcalloc(j->nset ? j->nset : 1, sizeof(*v));

	for (size_t i = 0; i < j->nset; i++)
		v[i] = j->set[i].layer;
	return v;
}

static void
journal_settings_free(Knob__Setting **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Judge each key of verify plan p still pending: ok, or drift. */
static void
verify_judge(struct plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct item *it = &p->v[i];

		if (!item_pending(it))
			continue;
		if (it->kind == IK_COUPLED) {
			it->state = KNOB__KEY_STATE__KEY_UNCHANGED;	/* not reported */
			continue;
		}
		if (item_holds(it))
			it->state = KNOB__KEY_STATE__KEY_OK;
		else {
			char m[TUNE_MSG_MAX];

			snprintf(m, sizeof(m), "is %s, profile wants %s", it->before, it->wanted);
			set_state(it, KNOB__KEY_STATE__KEY_DRIFT, 0, m);
		}
	}
}

int
tune_verify(struct agent *a, const Knob__VerifyRequest *req, Knob__VerifyResult *res)
{
	struct tune_state *t = a->tune;
	struct plan p = { 0 };
	Knob__Setting **js = NULL, **set = req->settings;
	size_t nset = req->n_settings;
	unsigned *layer = NULL;
	struct tune_fds fds;
	int rc;

	knob__verify_result__init(res);
	if (t == NULL)
		return -1;
	pthread_mutex_lock(&t->mu);
	tune_fd_begin(&fds, a->sysroot);
	if (nset == 0 && (req->profile == NULL || *req->profile == '\0')) {
		js = set = journal_settings(&t->j);
		layer = journal_layers(&t->j);
		nset = req->active_only ? 0 : t->j.nset;
	}
	plan_build(a, set, nset, layer, 0, &p);
	plan_mark_pending(&t->j, &p);
	if (plan_drop_stale(&t->j, &p) > 0 &&
	    (rc = journal_save(t->journal_path, &t->j)) < 0)
		log_warnx("journal %s: %s", t->journal_path, strerror(-rc));
	verify_judge(&p);
	res->active_profile = xstrdup(t->j.active);
	res->active_note = xstrdup(t->note);	/* published under t->mu, held here */
	plan_results(&p, &res->keys, &res->n_keys);
	plan_free(&p);
	journal_settings_free(js, js ? t->j.nset : 0);
	free(layer);
	tune_fd_end(&fds);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

/* ------------------------------------------------------------ rollback */
/* A plan that writes journal entries v[0..n) back to their values.
 * rollback: judge changed-since from the live values read first (force:
 * restore those too). */
static void
plan_restore(struct agent *a, const struct journal *j, struct plan *p, const struct jentry *v,
    size_t n, int rollback, int force)
{
	p->journals = 1;
	for (size_t i = 0; i < n; i++) {
		const struct jentry *e = &v[i];
		const struct tune_driver *d = tune_driver_find(e->driver);
		Knob__Setting tmp, *s;
		struct item *it;

		jentry_setting(e, &tmp);
		s = plan_own(p, &tmp, NULL, NULL, NULL, "journal");
		it = plan_add(p, s, d);
		it->jidx = (long)i;
		it->target = xstrdup(e->target);
		it->wanted = xstrdup(e->value);
		if (d == NULL) {
			char m[128];

			snprintf(m, sizeof(m), "unknown driver '%s'", e->driver);
			set_state(it, KNOB__KEY_STATE__KEY_FAILED, EINVAL, m);
			continue;
		}
		if (read_before(a, p, it) < 0)
			continue;	/* FAILED: cannot read it */
		it->state = KNOB__KEY_STATE__KEY_UNSPECIFIED;
		if (target_refused(a, e, it, NULL))
			continue;
		mark_reconfig(j, it, !rollback);
		if (rollback && !force)
			(void)changed_since(j, e, it, 0);
	}
	if (rollback && !force)
		hold_exclusive_partners(p);
}

/* A key left alone as changed since knob set it keeps the value someone
 * gave it even when the write of a coupled key moved it (the kernel
 * resets nr_requests when the scheduler is written back, or, in a switch,
 * when the new profile sets it): it is written back to that value, and
 * its result says what it reads. */
static void
keep_changed_since(struct agent *a, struct plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct item *it = &p->v[i];
		char msg[TUNE_MSG_MAX] = "", m[TUNE_MSG_MAX * 2];
		int rc;

		if (it->state != KNOB__KEY_STATE__KEY_CHANGED_SINCE || it->target == NULL ||
		    it->before == NULL || !moved_by_coupled(p, it) || reread(a, it, NULL, 0) < 0 ||
		    (it->after && strcmp(it->after, it->before) == 0))
			continue;
		rc = it->d->write(a, it->s, it->target, it->before, msg, sizeof(msg));
		reread(a, it, NULL, 0);
		if (rc >= 0 && it->after && strcmp(it->after, it->before) == 0)
			snprintf(m, sizeof(m), "%s; written back to %s after a coupled key's "
			    "write moved it", it->msg, it->before);
		else
			snprintf(m, sizeof(m), "%s; then a coupled key's write moved it to %s, and "
			    "%s could not be written back%s%s", it->msg,
			    it->after ? it->after : "an unreadable value", it->before,
			    *msg ? ": " : "", msg);
		set_msg(it, rc < 0 ? rc : 0, m);
	}
}

/* Restore the plan's items in order until they hold; classify them
 * RESTORED or FAILED.  Returns the number not restored. */
static size_t
restore_plan(struct agent *a, struct plan *p, const struct pause *pz)
{
	size_t n, *idx = write_order(p, &n), bad = 0;

	converge(a, p, idx, n, 1, 1, pz);
	keep_changed_since(a, p);
	for (size_t k = 0; k < n; k++) {
		struct item *it = &p->v[idx[k]];

		if (item_done(it) && !it->na) {
			it->state = it->pending ? KNOB__KEY_STATE__KEY_PENDING_RESTART :
			    KNOB__KEY_STATE__KEY_RESTORED;
			if (!it->written && it->before && strcmp(it->before, it->wanted) == 0)
				set_msg(it, 0, "already at its original");
			else if (!it->written)
				set_msg(it, 0, "came back when a coupled key was restored");
		} else {
			fail_not_held(it, it->written ? "did not come back: wrote" :
			    "did not come back: wants");
		}
	}
	for (size_t i = 0; i < p->n; i++)
		bad += p->v[i].state != KNOB__KEY_STATE__KEY_RESTORED &&
		    p->v[i].state != KNOB__KEY_STATE__KEY_PENDING_RESTART;
	free(idx);
	return bad;
}

static void
journal_set_clear(struct journal *j)
{
	for (size_t i = 0; i < j->nset; i++)
		jentry_clear(&j->set[i]);
	free(j->set);
	j->set = NULL;
	j->nset = 0;
}

/* Keep the journal entries whose items did not come back; drop the rest. */
static void
keep_unrestored(struct journal *j, const struct plan *p)
{
	struct jentry *keep = NULL;
	size_t nkeep = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct item *it = &p->v[i];
		const struct jentry *e = &j->orig[it->jidx];

		if (it->state == KNOB__KEY_STATE__KEY_RESTORED ||
		    it->state == KNOB__KEY_STATE__KEY_PENDING_RESTART)
			drop_mark(j, e);
		else {
			journal_push(&keep, &nkeep, e);
			/* this rollback ended: its judgement does not bind the next
			 * one, which must see an admin's change as changed-since */
			keep[nkeep - 1].restoring = 0;
		}
	}
	for (size_t i = 0; i < j->norig; i++)
		jentry_clear(&j->orig[i]);
	free(j->orig);
	j->orig = keep;
	j->norig = nkeep;
}

/* A rollback's save failed (rc): the file still names the profile, and
 * knobd's next start would re-apply what the admin rolled back.  Its name
 * is blanked in place, which needs no room (journal_clear_active: only
 * that value changes; the originals stay, since losing them is worse than
 * a re-apply).  Returns journal_clear_active's result. */
static int
rollback_unsaved(struct tune_state *t, int rc)
{
	int crc = journal_clear_active(t->journal_path);

	log_warnx("journal %s: %s: %s", t->journal_path, strerror(-rc), crc < 0 ?
	    "its profile could not be cleared in place either: the next start re-applies it" :
	    crc == 1 ? "it is removed, but that may not be on disk yet" :
	    "its profile was cleared in place; it still lists the originals");
	return crc;
}

/* The rollback's summary: nk originals, bad of them not back; rc the
 * final save, crc the in-place clear after it failed. */
static char *
rollback_message(const struct tune_state *t, const char *profile, size_t nk, size_t bad,
    int rc, int crc)
{
	char saved[PATH_MAX + 512], left[320];

	if (crc < 0)
		snprintf(left, sizeof(left), "it still names profile %s, which knobd re-applies "
		    "at its next start: free space there and roll back again", profile);
	else
		snprintf(left, sizeof(left), "%s", crc == 1 ? "it is removed, but that may not be "
		    "on disk yet" : "no profile is active in it (cleared in place); it still lists "
		    "the originals, the restored ones too, which the next rollback finds at their "
		    "value");
	if (rc >= 0)
		snprintf(saved, sizeof(saved), "%s", bad == 0 ? "; journal cleared" :
		    "; they stay in the journal");
	else
		snprintf(saved, sizeof(saved), "; the journal %s could not be saved (%s): %s",
		    t->journal_path, strerror(-rc), left);
	if (nk == 0)
		return xasprintf("nothing to roll back%s", rc < 0 ? saved : "");
	if (bad == 0)
		return xasprintf("%zu original value(s) restored%s", nk, saved);
	return xasprintf("%zu of %zu original value(s) did not come back%s", bad, nk, saved);
}

int
tune_rollback(struct agent *a, const Knob__RollbackRequest *req, Knob__RollbackResult *res)
{
	struct tune_state *t = a->tune;
	struct pause pz = { a, req ? req->test_pause_ms : 0, NULL };
	struct plan p = { 0 };
	struct tune_fds fds;
	size_t nk, bad;
	int rc, crc = 0;

	knob__rollback_result__init(res);
	if (t == NULL)
		return -1;
	pthread_mutex_lock(&t->mu);
	tune_fd_begin(&fds, a->sysroot);
	res->profile = xstrdup(t->j.active);
	plan_restore(a, &t->j, &p, t->j.orig, t->j.norig, 1, req && req->force);
	/* before the first write: no profile is active from here on (knobd
	 * must not re-apply at start what the admin rolls back), and the
	 * verdicts stand if we are killed midway (coupled writes of this
	 * rollback move values that a later one must not call changed-since) */
	t->j.active[0] = '\0';
	journal_set_clear(&t->j);
	for (size_t i = 0; i < p.n; i++)
		t->j.orig[p.v[i].jidx].restoring = item_pending(&p.v[i]);
	/* a journal that cannot be saved (a full disk) loses nothing here (the
	 * file keeps the originals), but must not keep the profile either:
	 * its name is blanked in place (rollback_unsaved), and the restores go
	 * ahead; an emptied journal is then removed, which needs no room
	 * (check_tune test_state_dir_full_at_rollback, _partial) */
	if (p.n > 0 && (rc = journal_save(t->journal_path, &t->j)) < 0)
		(void)rollback_unsaved(t, rc);
	nk = p.n;
	bad = restore_plan(a, &p, &pz);
	keep_unrestored(&t->j, &p);
	res->complete = t->j.norig == 0;
	if ((rc = journal_save(t->journal_path, &t->j)) < 0) {
		crc = rollback_unsaved(t, rc);
		res->complete = 0;
	}
	res->message = rollback_message(t, res->profile, nk, bad, rc, crc);
	plan_results(&p, &res->keys, &res->n_keys);
	plan_free(&p);
	tune_fd_end(&fds);
	set_active(t, "", "");
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
	free(res->active_note);
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

/* ------------------------------------------------------------ start-up */
/* Undo an interrupted transaction found in the journal (see tune.h): its
 * targets go back to their pre-transaction values in write order, re-read
 * until they hold.  Those that do not stay as originals for rollback. */
static void
recover(struct agent *a, struct tune_state *t, const char *why)
{
	struct plan p = { 0 };

	log_warnx("journal %s: transaction %s (profile '%s') %s; undoing %zu key(s)",
	    t->journal_path, t->j.txn_id, t->j.txn_profile, why, t->j.ntxn);
	plan_restore(a, &t->j, &p, t->j.txn, t->j.ntxn, 0, 0);
	if (restore_plan(a, &p, NULL) > 0)
		log_warnx("recovery: some key(s) could not be restored");
	for (size_t i = 0; i < p.n; i++) {
		const struct item *it = &p.v[i];
		const struct jentry *e = &t->j.txn[it->jidx];

		if (it->state == KNOB__KEY_STATE__KEY_RESTORED) {
			if (it->written)
				log_info("recovery: %s %s%s%s restored to %s (was %s)", e->driver,
				    e->target, *e->attr ? " " : "", e->attr, e->value,
				    it->before ? it->before : "?");
			drop_mark(&t->j, e);
			continue;
		}
		log_warnx("recovery: %s %s%s%s: could not restore %s: %s", e->driver, e->target,
		    *e->attr ? " " : "", e->attr, e->value, it->msg ? it->msg : "?");
		/* keep it so that a rollback can try again */
		if (e->added && journal_find(t->j.orig, t->j.norig, e->driver, e->target,
		    e->attr) < 0)
			journal_push(&t->j.orig, &t->j.norig, e);
	}
	plan_free(&p);
	txn_clear(&t->j);
}

/* tuned-style boot persistence: sysfs does not survive a reboot, so the
 * journaled active profile is applied again when live values differ
 * (stacked on itself: the first originals stay).  A key naming a device
 * exactly that is another disk now (boot_refused) is not written and is
 * logged; the rest is re-applied.  knobd still starts: the profile stays
 * active, its note counts the refused keys ("re-applied at boot T (N
 * key(s)), K refused: not the device journaled"), verify reports them
 * as drift where they differ, and rollback refuses their originals the
 * same way, until the names are back or the admin has moved the journal
 * away. */
static void
reapply(struct agent *a, struct tune_state *t)
{
	Knob__ApplyRequest req = KNOB__APPLY_REQUEST__INIT;
	Knob__ApplyResult res;
	struct journal copy = { 0 };
	char name[sizeof(t->j.active)], note[128], ts[32];
	size_t nchanged = 0;
	time_t now = time(NULL);
	struct tm tm;

	snprintf(name, sizeof(name), "%s", t->j.active);
	/* a copy: the apply replaces the journal's settings while it runs */
	for (size_t i = 0; i < t->j.nset; i++)
		journal_push(&copy.set, &copy.nset, &t->j.set[i]);
	req.profile = name;
	req.settings = journal_settings(&copy);
	req.n_settings = copy.nset;
	req.stack = 1;
	knob__apply_result__init(&res);
	res.message = res.txn_id = NULL;
	apply_locked(a, &req, 1, &res);
	for (size_t i = 0; i < res.n_keys; i++)
		nchanged += res.keys[i]->state == KNOB__KEY_STATE__KEY_CHANGED;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (res.kept > 0) {
		snprintf(note, sizeof(note), "re-applied at boot %s (%zu key(s)), %u refused: not "
		    "the device journaled", ts, nchanged, res.kept);
		log_warnx("active profile %s: %s: %s", name, note, res.message);
		set_active(t, t->j.active, note);
	} else if (nchanged > 0) {
		snprintf(note, sizeof(note), "re-applied at boot %s (%zu key(s))", ts, nchanged);
		log_info("active profile %s: %s: %s", name, note, res.message);
		set_active(t, t->j.active, note);
	} else
		log_info("active profile %s: live values match, nothing to re-apply", name);
	journal_settings_free(req.settings, req.n_settings);
	journal_free(&copy);
	tune_apply_result_free(&res);
}

/* This boot's id into t->boot_id ("" when unreadable): $KNOB_TEST_BOOT_ID
 * with --test-hooks (a test's "reboot" of real devices), else
 * SYSROOT/proc/sys/kernel/random/boot_id, as health_node.c reads it. */
static void
read_boot_id(struct agent *a, struct tune_state *t)
{
	const char *env = a->cfg.test_hooks ? getenv("KNOB_TEST_BOOT_ID") : NULL;
	char path[PATH_MAX];

	t->boot_id[0] = '\0';
	if (env != NULL && *env != '\0')
		snprintf(t->boot_id, sizeof(t->boot_id), "%s", env);
	else if (agent_path(a, path, sizeof(path), "/proc/sys/kernel/random/boot_id") < 0 ||
	    read_small_file(path, t->boot_id, sizeof(t->boot_id)) < 0)
		t->boot_id[0] = '\0';
	strtrim(t->boot_id);
}

/* Was the active profile written in this very boot (knobd restarted, not
 * the node)?  Unknown (no id now, or a journal from before the field): no. */
static int
same_boot(const struct tune_state *t)
{
	return t->boot_id[0] != '\0' && t->j.boot_id != NULL &&
	    strcmp(t->j.boot_id, t->boot_id) == 0;
}

/* knobd restarted in the boot its active profile was written in: sysfs
 * kept the values, so a key that differs was changed by someone (an
 * admin) and is not overwritten, as rollback and a switch leave such a
 * key alone.  Nothing is written: the keys that differ are counted as
 * verify judges them, those knob set and someone changed since as
 * rollback does (changed_since), and logged and noted. */
static void
restarted(struct agent *a, struct tune_state *t)
{
	Knob__Setting **js = journal_settings(&t->j);
	unsigned *layer = journal_layers(&t->j);
	struct plan p = { 0 };
	size_t ndiff = 0, nsince = 0;
	char note[128], ts[32];
	time_t now = time(NULL);
	struct tm tm;

	plan_build(a, js, t->j.nset, layer, 0, &p);
	plan_mark_pending(&t->j, &p);
	verify_judge(&p);
	for (size_t i = 0; i < p.n; i++) {
		struct item *it = &p.v[i];
		long k;

		if (it->state != KNOB__KEY_STATE__KEY_DRIFT)
			continue;
		ndiff++;
		k = journal_find(t->j.orig, t->j.norig, it->s->driver, it->target, it->s->attr);
		nsince += k >= 0 && changed_since(&t->j, &t->j.orig[k], it, 0);
	}
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(note, sizeof(note), "restarted in the same boot %s: not re-applied, %zu key(s) "
	    "differ (%zu changed since knob set them)", ts, ndiff, nsince);
	log_msg(ndiff > 0 ? LOG_LVL_WARN : LOG_LVL_INFO, 0, __FILE__, __LINE__, "active profile "
	    "%s: knobd restarted in the same boot (boot id %s): not re-applied; %zu key(s) differ "
	    "from the profile (%zu changed since knob set them): knobctl verify shows them, "
	    "knobctl apply %s re-applies", t->j.active, t->boot_id, ndiff, nsince, t->j.active);
	set_active(t, t->j.active, note);
	plan_free(&p);
	journal_settings_free(js, t->j.nset);
	free(layer);
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
	tune_lock_init(t);
	t->cmd_timeout_ms = env && atoi(env) > 0 ? atoi(env) : TUNE_CMD_TIMEOUT_MS;
	t->wait_max_s = !a->cfg.test_hooks ? WAIT_MAX_S :
	    (unsigned)env_number("KNOB_TEST_WAIT_MAX_S", 1, WAIT_MAX_S, WAIT_MAX_S);
	snprintf(t->journal_path, sizeof(t->journal_path), "%s/" TUNE_JOURNAL_NAME, a->state_dir);
	read_boot_id(a, t);
	rc = journal_load(t->journal_path, &t->j);
	if (rc < 0) {
		log_err("journal %s: %s; check the node's settings and move the file away",
		    t->journal_path, strerror(-rc));
		goto fail;
	}
	if (t->j.sysroot != NULL && strcmp(t->j.sysroot, a->sysroot) != 0) {
		log_err("journal %s holds the originals of --sysroot '%s', not of this agent's "
		    "'%s': start knobd with that --sysroot, or check the node's settings and move "
		    "the file away", t->journal_path, t->j.sysroot, a->sysroot);
		goto fail;
	}
	if (t->j.sysroot == NULL)
		t->j.sysroot = xstrdup(a->sysroot);	/* new, or from before the field */
	a->tune = t;
	if (t->j.in_txn) {
		recover(a, t, "was interrupted");
		if ((rc = journal_save(t->journal_path, &t->j)) < 0) {
			log_err("journal %s: %s", t->journal_path, strerror(-rc));
			a->tune = NULL;
			goto fail;
		}
	}
	set_active(t, t->j.active, "");
	if (t->j.active[0])
		log_info("active profile: %s (%zu original value(s) journaled)", t->j.active,
		    t->j.norig);
	/* --stdio serves one command of one controller (an SSH exec channel):
	 * its start is no boot, and a verify must see drift, not heal it */
	if (t->j.active[0] && (a->cfg.no_reapply || a->cfg.stdio))
		log_info("active profile %s: not re-applied (%s)", t->j.active,
		    a->cfg.stdio ? "--stdio session" : "--no-reapply");
	else if (t->j.active[0] && t->j.nset > 0) {
		pthread_mutex_lock(&t->mu);
		if (same_boot(t))
			restarted(a, t);
		else
			reapply(a, t);	/* records this boot's id (apply_commit) */
		pthread_mutex_unlock(&t->mu);
	}
	return 0;
fail:
	journal_free(&t->j);
	tune_lock_fini(t);
	pthread_mutex_destroy(&t->mu);
	pthread_mutex_destroy(&t->amu);
	free(t);
	return -1;
}

void
tune_fini(struct agent *a)
{
	struct tune_state *t = a->tune;

	if (t == NULL)
		return;
	a->tune = NULL;	/* agent_fini waited for the work items */
	journal_free(&t->j);
	tune_lock_fini(t);
	pthread_mutex_destroy(&t->mu);
	pthread_mutex_destroy(&t->amu);
	free(t);
}

void
tune_active(struct agent *a, char **profile, char **note)
{
	struct tune_state *t = a ? a->tune : NULL;

	/* a worker (Facts) reads while another (an apply) may publish */
	if (t == NULL) {
		*profile = xstrdup("");
		*note = xstrdup("");
		return;
	}
	pthread_mutex_lock(&t->amu);
	*profile = xstrdup(t->active);
	*note = xstrdup(t->note);
	pthread_mutex_unlock(&t->amu);
}

/* ------------------------------------------------------------ handlers */
/* A tuning request on the worker pool (its w->arg): who holds the tuning
 * lock, and the reply's content until the pool has posted it. */
struct job {
	struct job *next;	/* in tune_state.jobs, under lmu */
	uint64_t conn_id;
	int cancelled;		/* its controller went away (under lmu) */
	int locks;		/* takes the tuning lock, waiting until deadline_ns */
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC: the end of its wait_s */
	unsigned parked;	/* times job_lock parked it */
	char owner[300];	/* "CN pid N" for the tuning lock */
	char why[512];		/* why the lock could not be had */
	Knob__Error err;
	union {
		Knob__ApplyResult apply;
		Knob__VerifyResult verify;
		Knob__RollbackResult rollback;
	} res;
};

#define JOB_PARKED 1	/* job_lock: the job waits for the lock without a thread */
static void job_park(struct work *w);

/* ms left until ns (0 once it passed). */
static unsigned
ms_until(uint64_t ns)
{
	uint64_t now = now_mono_ns();

	return ns > now ? (unsigned)((ns - now + 999999) / 1000000) : 0;
}

/* Take the tuning lock for w, or make its reply "busy".  0 with *token;
 * JOB_PARKED (w->park set) when it must wait and no other pool thread is
 * idle: it waits without a thread until the lock is dropped, a waiting
 * thread is done, its controller goes or its deadline passes, so that
 * facts, verify and the other agents of the process keep a thread; or
 * tune_lock_take's error. */
static int
job_lock(struct work *w, uint64_t *token)
{
	struct job *j = w->arg;
	unsigned left = ms_until(j->deadline_ns);
	int rc;

	rc = tune_lock_take(w->a, j->owner, TUNE_LEASE_MS, 0, &j->cancelled, token, j->why,
	    sizeof(j->why));
	if (rc == -EBUSY && left > 0) {
		if (!work_may_block(w->a)) {
			if (!j->parked++)
				log_info("%s from %s waits for the tuning lock without a worker "
				    "thread (no other one is idle)", envelope_body_name(w->req),
				    j->owner);
			w->park = job_park;
			return JOB_PARKED;
		}
		rc = tune_lock_take(w->a, j->owner, TUNE_LEASE_MS, left, &j->cancelled, token,
		    j->why, sizeof(j->why));
		pthread_mutex_lock(&w->a->tune->lmu);
		tune_unpark(w->a->tune, 0);	/* its place is free */
		pthread_mutex_unlock(&w->a->tune->lmu);
	}
	if (rc == 0)
		return 0;
	knob__error__init(&j->err);
	j->err.code = EBUSY;
	j->err.kind = KNOB__ERROR_KIND__ERROR_KIND_LOCKED;
	j->err.message = j->why;
	w->reply.body_case = KNOB__ENVELOPE__BODY_ERROR;
	w->reply.error = &j->err;
	return rc;
}

/* The worker of every tuning request: apply and rollback take the tuning
 * lock (verify only reads), run the transaction and set the reply. */
static void
job_run(struct work *w)
{
	struct job *j = w->arg;
	const Knob__Envelope *r = w->req;
	uint64_t token = 0;
	int rc;

	if (j->locks && (rc = job_lock(w, &token)) != 0) {
		if (rc == -ECANCELED)
			log_info("%s from %s dropped: %s", envelope_body_name(r), j->owner, j->why);
		return;	/* busy, or parked */
	}
	switch (r->body_case) {
	case KNOB__ENVELOPE__BODY_APPLY:
		tune_apply(w->a, r->apply, &j->res.apply);
		w->reply.body_case = KNOB__ENVELOPE__BODY_APPLY_RESULT;
		w->reply.apply_result = &j->res.apply;
		break;
	case KNOB__ENVELOPE__BODY_VERIFY:
		tune_verify(w->a, r->verify, &j->res.verify);
		w->reply.body_case = KNOB__ENVELOPE__BODY_VERIFY_RESULT;
		w->reply.verify_result = &j->res.verify;
		break;
	default:
		tune_rollback(w->a, r->rollback, &j->res.rollback);
		w->reply.body_case = KNOB__ENVELOPE__BODY_ROLLBACK_RESULT;
		w->reply.rollback_result = &j->res.rollback;
		break;
	}
	if (j->locks)
		tune_lock_drop(w->a, token);
}

/* Put j on (or, with add 0, take it off) the agent's list of tuning jobs. */
static void
job_list(struct tune_state *t, struct job *j, int add)
{
	pthread_mutex_lock(&t->lmu);
	if (add) {
		j->next = t->jobs;
		t->jobs = j;
	} else
		for (struct job **pp = &t->jobs; *pp; pp = &(*pp)->next)
			if (*pp == j) {
				*pp = j->next;
				break;
			}
	pthread_mutex_unlock(&t->lmu);
}

/* Can parked job w go back to the pool now (the lock is free, the agent
 * stops, its controller went or its deadline passed)?  Not merely because
 * a thread is idle: it would park again at once, back and forth.  lmu
 * held. */
static int
job_may_run(struct work *w)
{
	const struct job *j = w->arg;
	const struct tune_state *t = w->a->tune;

	return !tune_lock_busy(t) || t->stopping || j->cancelled ||
	    ms_until(j->deadline_ns) == 0;
}

/* work_finish's last step for a job job_lock parked: onto the parked
 * list, or straight back to the pool when what it waits for came in the
 * meantime.  The loop then ticks while jobs are parked (deadlines).  A
 * waiting thread that ended between job_lock and here unparked nobody:
 * this one then waits for the next event (a drop, a tick). */
static void
job_park(struct work *w)
{
	struct agent *a = w->a;
	struct tune_state *t = a->tune;

	pthread_mutex_lock(&t->lmu);
	if (job_may_run(w))
		work_requeue(w);
	else {
		w->next = NULL;
		if (t->parked_tail)
			t->parked_tail->next = w;
		else
			t->parked = w;
		t->parked_tail = w;
	}
	pthread_mutex_unlock(&t->lmu);
	agent_wake(a);	/* w may be gone already: a is the agent's */
}

/* Parked jobs for which only (NULL: all, else those job_may_run lets go;
 * all: every one) goes back to the pool.  lmu held. */
static void
unpark_if(struct tune_state *t, int (*only)(struct work *))
{
	struct work **pp = &t->parked, *w;

	t->parked_tail = NULL;
	while ((w = *pp) != NULL) {
		if (only == NULL || only(w)) {
			*pp = w->next;
			work_requeue(w);
		} else {
			t->parked_tail = w;
			pp = &w->next;
		}
	}
}

void
tune_unpark(struct tune_state *t, int all)
{
	struct work *w = t->parked;

	if (all) {
		unpark_if(t, NULL);
		return;
	}
	if (w == NULL)
		return;
	if ((t->parked = w->next) == NULL)
		t->parked_tail = NULL;
	work_requeue(w);
}

/* Once a second while jobs are parked: those whose deadline passed (they
 * answer busy), whose controller went, or that may run now go back to
 * the pool (a lease that ran out frees the lock without a drop). */
static void
tune_tick(struct agent *a)
{
	struct tune_state *t = a->tune;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lmu);
	unpark_if(t, job_may_run);
	pthread_mutex_unlock(&t->lmu);
}

/* Ticks while a job is parked. */
static int
tune_wants_tick(struct agent *a)
{
	struct tune_state *t = a->tune;
	int parked;

	if (t == NULL)
		return 0;
	pthread_mutex_lock(&t->lmu);
	parked = t->parked != NULL;
	pthread_mutex_unlock(&t->lmu);
	return parked;
}

/* Shutdown: nothing waits for the lock any more; waiting and parked jobs
 * answer "the agent is stopping" and end, so agent_fini's wait is short. */
static void
tune_stop(struct agent *a)
{
	struct tune_state *t = a->tune;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lmu);
	t->stopping = 1;
	pthread_cond_broadcast(&t->lcv);
	tune_unpark(t, 1);
	pthread_mutex_unlock(&t->lmu);
}

/* A controller went away (or ended its input): its tuning requests that
 * wait for the lock (or will have to) give up, so that an abandoned
 * apply --wait does not run minutes later, nor hold a pool thread until
 * then; one that finds the lock free still runs (tune_lock_take). */
static void
tune_conn_closed(struct agent *a, uint64_t conn_id)
{
	struct tune_state *t = a->tune;
	int hit = 0;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lmu);
	for (struct job *j = t->jobs; j; j = j->next)
		if (j->conn_id == conn_id)
			j->cancelled = hit = 1;
	if (hit) {
		pthread_cond_broadcast(&t->lcv);
		unpark_if(t, job_may_run);	/* they are dropped at once */
	}
	pthread_mutex_unlock(&t->lmu);
}

/* After the reply went out: free the result and the job. */
static void
job_done(struct work *w)
{
	struct job *j = w->arg;

	job_list(w->a->tune, j, 0);
	if (w->reply.body_case == KNOB__ENVELOPE__BODY_APPLY_RESULT)
		tune_apply_result_free(&j->res.apply);
	else if (w->reply.body_case == KNOB__ENVELOPE__BODY_VERIFY_RESULT)
		tune_verify_result_free(&j->res.verify);
	else if (w->reply.body_case == KNOB__ENVELOPE__BODY_ROLLBACK_RESULT)
		tune_rollback_result_free(&j->res.rollback);
	free(j);
}

/* Hand req to the worker pool (or answer why not); 0 or -1.  has_body:
 * the request carries its body; locks, wait_s and pid: for the tuning
 * lock. */
static int
spawn_job(struct agent *a, struct aconn *c, Knob__Envelope *req, int has_body, int locks,
    uint32_t wait_s, uint32_t pid)
{
	struct job *j;

	if (a->tune == NULL)
		return agent_reply_error(a, c, req->id, ENOSYS, "tuning is not initialised") < 0 ? -1 : 0;
	if (!has_body)
		return agent_reply_error(a, c, req->id, EINVAL, "empty request") < 0 ? -1 : 0;
	j = xcalloc(1, sizeof(*j));
	j->conn_id = c->id;
	j->locks = locks;
	/* capped: the wait is in 32-bit milliseconds further on (job_lock) */
	j->deadline_ns = now_mono_ns() +
	    (uint64_t)(wait_s < a->tune->wait_max_s ? wait_s : a->tune->wait_max_s) * 1000000000ull;
	if (pid)
		snprintf(j->owner, sizeof(j->owner), "%s pid %u", *c->peer ? c->peer : c->addr, pid);
	else
		snprintf(j->owner, sizeof(j->owner), "%s", *c->peer ? c->peer : c->addr);
	job_list(a->tune, j, 1);	/* before a pool thread can run (and free) it */
	if (agent_work(a, c, req, job_run, job_done, j) < 0) {
		job_list(a->tune, j, 0);
		free(j);	/* refused: the busy reply is out */
	}
	return 0;
}

int
h_apply(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	const Knob__ApplyRequest *r = req->apply;

	return spawn_job(a, c, req, r != NULL, 1, r ? r->wait_s : 0, r ? r->controller_pid : 0);
}

int
h_verify(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	return spawn_job(a, c, req, req->verify != NULL, 0, 0, 0);
}

int
h_rollback(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	const Knob__RollbackRequest *r = req->rollback;

	return spawn_job(a, c, req, r != NULL, 1, r ? r->wait_s : 0, r ? r->controller_pid : 0);
}

const struct agent_subsys tune_subsys = {
	.name = "tune",
	.init = tune_init,
	.stop = tune_stop,
	.fini = tune_fini,
	.tick = tune_tick,
	.wants_tick = tune_wants_tick,
	.conn_closed = tune_conn_closed,
};
