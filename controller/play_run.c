/* Running a play.  Every step goes through the knobctl command it names
 * (apply, verify, rollback, bench) on a child struct ctl with --json, so a
 * step does exactly what the command line does and its per-node statuses
 * come back as data.
 *
 * Nodes: a node that fails a step (unreachable counts) is dropped from the
 * later steps.  apply / verify / rollback run in batches of serial= nodes;
 * after each batch, when the failed nodes EXCEED max-fail (reaching it does
 * not trip; "P%" exactly: more than P% of the play's nodes, not rounded),
 * no new batch starts and the step fails.  Without max-fail any
 * failure trips.  A bench step that loses nodes mid-phase drops them the
 * same way; within max-fail it goes on (its run stored degraded) when
 * they are all that went wrong (bench_drop_lost).  A failed step stops
 * the play unless on-failure="continue";
 * when the play stops, what it applied is rolled back unless keep="yes":
 * every node an apply may have reached (a timeout may still have applied),
 * failed ones too; one not rolled back is said and fails the play.  A node
 * whose apply request was never sent (its connection failed first:
 * refused, unreachable, a TLS handshake that did not finish) is not one:
 * it is said never reached, nothing to roll back.  A rollback step takes
 * those dropped nodes too, and says the same.
 * Exit status 0 only when every step succeeded on every node.
 *
 * SIGINT / SIGTERM / SIGHUP (the terminal or the ssh session gone) while
 * a play runs: the first stops it where it can
 * (after the current request or batch; a bench stops its phase in flight
 * on every node, which removes its files, as a plain bench does; a sweep
 * at once), then the stop's rollback runs and the summary is printed;
 * exit 128 + the signal's number.  What an admin stopping a play on
 * production nodes needs first is the rollback, so nothing before it
 * waits long: a bench's stop waits at most --stop-wait (default
 * PLAY_STOP_WAIT_S) for the nodes' answers to its abort, not the bench's
 * stall limit (60 s and more), and a node that has not answered by then
 * (its link cut, its agent stopped) is cut off and named, its clean-up
 * unknown (the run's cleanup_failed); the rollback then says it NOT
 * rolled back.  A second signal stops what is left of that waiting (the
 * bench is cut off: ctl->interrupt is the second's flag) and the
 * rollback runs at once; it is said on stderr.  Tune commands in flight
 * run to their end (they are short).  Only a third signal exits at once
 * (its default action, stop_sig.h STOP_SIG_THIRD_KILLS), its handler
 * writing the words last_words keeps up to date with the applied marks:
 * which nodes may keep the play's tuning and that `knobctl rollback -w
 * NODES` undoes it (the agents' journals hold the originals).
 *
 * --json: one document at the end; every failed node with its step and
 * reason ("failed"), a failed step's "reason", "rolled_back" and
 * "not_rolled_back"; after a signal "stop_wait_s" and "wait_cut_short"
 * (a second signal came).
 *
 * health runs `knobctl sweep` and drops the nodes it finds failing (slow,
 * timeout, fail, hung, unreachable).
 *
 * --check: apply runs as --check, verify, rollback and health are announced,
 * bench does not run; each bench prints its phases, the data it would move
 * and the runtime earlier runs of the same points took (results store). */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "bench_ctl.h"
#include "bench_defaults.h"
#include "bench_run.h"
#include "log.h"
#include "nodeset.h"
#include "play.h"
#include "results.h"
#include "rundoc.h"
#include "stats.h"
#include "stop_sig.h"
#include "util.h"
#include "visible.h"

#define SIG_LOCK_WAIT_S	"10"	/* rollback and restore --wait after a signal (s) */

struct prun {
	struct ctl *ctl;
	struct play *pl;
	int check;
	const struct strvec *nodes;
	char *failed;		/* per node */
	char *applied;		/* per node: an apply may have landed there */
	char **unsent;		/* per node: why the last apply's request was never sent
				 * (its connection failed first), or NULL */
	size_t nfailed;
	const char *maxfail;	/* max-fail="N" or "P%" ("" 0) */
	long serial;
	int tripped, bad;
	json_object *docs;	/* the play's bench runs, in order */
	json_object *steps;	/* per step: name, line, status */
	json_object *score;	/* the score step's figures, or NULL */
	json_object *info;	/* the play as its runs record it */
	json_object *detail;	/* the canary step's verdict and table, or NULL */
	const struct pstep *cur;	/* the step running (NULL: the stop's rollback) */
	char *why;		/* the first reason the current step gives for failing */
	json_object *failures;	/* {"node", "step", "line", "reason"} per failed node */
	char *nrb;		/* per node: said NOT rolled back */
	const struct strvec *before;	/* per node: its active profile when the play started */
	char *touched;		/* per node: an apply of the play may have reached it */
	char *untuned;		/* per node: a rollback of the play took its profile off */
	char *nrs;		/* per node: said NOT restored to its profile before */
	FILE *out;
	double est_s, est_bytes;	/* --check totals */
	size_t est_unknown, est_known;	/* phases without and with an earlier run */
};

/* The signal that interrupted the play (0: none).  Global: a signal
 * handler sets it; lock-free, so async-signal-safe (C11 7.14.1.1). */
/* The signal that interrupted the play, or 0. */
static int
interrupted(void)
{
	return atomic_load_explicit(stop_sig_first(), memory_order_relaxed);
}

static void say(struct prun *pr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(struct prun *pr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Progress for people (nothing with --json: one document at the end),
 * made visible (visible.h), its lines kept: a node's error, a run's label
 * or a play's variable cannot write to the terminal. */
static void
say(struct prun *pr, const char *fmt, ...)
{
	va_list ap;
	char *raw, *vis;

	if (pr->ctl->json)
		return;
	va_start(ap, fmt);
	if (vasprintf(&raw, fmt, ap) < 0)
		fatal("vasprintf");
	va_end(ap);
	vis = str_visible_dup(raw, VIS_KEEP_NL);
	fputs(vis, pr->out);
	output_flush(pr->out);
	free(raw);
	free(vis);
}

/* A reason the current step fails: said, and kept as the step's reason
 * (its first) for --json. */
static void
reason(struct prun *pr, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	say(pr, "  %s\n", buf);
	if (pr->why == NULL)
		pr->why = xstrdup(buf);
}

static long
node_index(struct prun *pr, const char *name)
{
	for (size_t i = 0; i < pr->nodes->n; i++)
		if (strcmp(pr->nodes->v[i], name) == 0)
			return (long)i;
	return -1;
}

/* The nodes still in the play (not failed), of sel (NULL: all). */
static void
live_nodes(struct prun *pr, const char *sel, struct strvec *out)
{
	for (size_t i = 0; i < pr->nodes->n; i++)
		if (!pr->failed[i] && (sel == NULL || sel[i]))
			strvec_push(out, pr->nodes->v[i]);
}

/* Is any node of sel (NULL: all) still in the play? */
static int
any_live(struct prun *pr, const char *sel)
{
	for (size_t i = 0; i < pr->nodes->n; i++)
		if (!pr->failed[i] && (sel == NULL || sel[i]))
			return 1;
	return 0;
}

/* Record node name's failure (reason why) in the current step. */
static void
failure_add(struct prun *pr, const char *name, const char *why)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "node", json_object_new_string(name));
	json_object_object_add(o, "step", json_object_new_string(pr->cur ? pr->cur->name :
	    "stop-rollback"));
	if (pr->cur)
		json_object_object_add(o, "line", json_object_new_int(pr->cur->line));
	json_object_object_add(o, "reason", json_object_new_string(why));
	json_object_array_add(pr->failures, o);
}

/* Drop node name from the play (reason why); counted against max-fail. */
static void
fail_node(struct prun *pr, const char *name, const char *why)
{
	long i = node_index(pr, name);

	if (i < 0 || pr->failed[i])
		return;
	pr->failed[i] = 1;
	pr->nfailed++;
	pr->bad = 1;
	say(pr, "  %s failed: %s (dropped from the play)\n", name, why);
	failure_add(pr, name, why);
}

/* Trip the threshold when the failures exceed max-fail; 1 when tripped. */
static int
check_trip(struct prun *pr)
{
	if (!pr->tripped && play_exceeds(pr->maxfail, pr->nfailed, pr->nodes->n)) {
		pr->tripped = 1;
		reason(pr, "max-fail tripped: %zu failed node(s) of %zu exceed %s; no new batch "
		    "starts", pr->nfailed, pr->nodes->n, pr->maxfail[0] ? pr->maxfail : "0");
	}
	return pr->tripped;
}

/* Is s one of the NULL-terminated set? */
static int
in_set(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(s, *set) == 0)
			return 1;
	return 0;
}

/* Run `knobctl ARGV... -w NODES` as a child command with --json; the
 * parsed stdout in *doc (NULL when not JSON).  A bench or a sweep ends
 * early on a signal (the tune commands, short, run to their end).
 * Returns the exit status. */
static int
sub_run(struct prun *pr, const struct strvec *argv, const struct strvec *nodes, json_object **doc)
{
	static const char *const long_cmds[] = { "bench", "sweep", NULL };
	struct ctl sub = *pr->ctl;
	const struct cmd_entry *ce = cmd_find(argv->v[0]);
	char *buf = NULL, *folded = nodeset_fold(nodes->v, nodes->n);
	size_t len = 0;
	int rc;

	memset(&sub.w, 0, sizeof(sub.w));
	memset(&sub.x, 0, sizeof(sub.x));
	sub.all = 0;
	sub.lopts = NULL;
	sub.sopts = NULL;
	sub.json = 1;
	sub.tty = 0;
	sub.play_info = pr->info;
	sub.interrupt = in_set(argv->v[0], long_cmds) ? stop_sig_first() : NULL;
	strvec_push(&sub.w, folded);
	sub.out = open_memstream(&buf, &len);
	rc = ce && sub.out ? ctl_run(&sub, ce, (int)argv->n, argv->v) : 2;
	if (sub.out)
		fclose(sub.out);
	pr->ctl->ssl = sub.ssl;		/* one TLS context for the whole play */
	pr->ctl->tickets = sub.tickets;
	*doc = buf ? json_tokener_parse(buf) : NULL;
	opt_free(&sub);
	strvec_free(&sub.w);
	free(buf);
	free(folded);
	return rc;
}

/* Tune command statuses that fail a node: those that make the command
 * itself exit 1 (unsupported, skipped, pending too), and a name this
 * knobctl does not know. */
static int
is_error_status(const char *s)
{
	return node_status_is_error(node_status_by_name(s));
}

/* Did the request never leave for the node of rec (its JSON record says
 * request_sent false: the connection failed first, refused, unreachable,
 * a failed handshake)?  A record without the key may have been sent. */
static int
never_sent(json_object *rec)
{
	json_object *v;

	return json_object_object_get_ex(rec, "request_sent", &v) && !json_object_get_boolean(v);
}

/* After a real apply answered status s (rec: the node's JSON record): may
 * the profile have landed?  Yes unless it definitely did not: busy or
 * auth-failed (refused, or nothing sent), a request never sent (its
 * connection failed before it), or an answer whose transaction never
 * began (no txn_id: refused before writing) or was reverted in full (the
 * agent's message says when some changes could NOT be).  A timeout, or a
 * connection lost once it was open, may have applied: the agent commits
 * after the controller gave up. */
static int
may_have_applied(const char *s, json_object *rec)
{
	static const char *const no[] = { "busy", "auth-failed", NULL };
	static const char *const yes[] = { "ok", "changed", NULL };
	json_object *ap = json_object_object_get(rec, "apply");

	if (in_set(s, no) || never_sent(rec))
		return 0;
	if (in_set(s, yes) || ap == NULL)
		return 1;
	if (js_str(ap, "txn_id")[0] == '\0')
		return 0;
	return !json_object_get_boolean(json_object_object_get(ap, "reverted")) ||
	    strstr(js_str(ap, "message"), "could NOT") != NULL;
}

/* What a command's statuses say of the play's applied marks. */
enum marks {
	MARKS_KEEP,		/* nothing (verify, sweep) */
	MARKS_APPLY,		/* mark the nodes a real apply may have reached */
	MARKS_ROLLBACK,		/* unmark the nodes whose own rollback is done */
};

/* A node's status s (rec: its JSON record) moves its applied mark; an
 * apply whose request was never sent keeps why (the record's detail). */
static void
move_mark(struct prun *pr, long idx, enum marks how, const char *s, json_object *rec)
{
	static const char *const done[] = { "ok", "changed", NULL };

	if (idx < 0)
		return;
	if (how == MARKS_APPLY) {
		free(pr->unsent[idx]);
		pr->unsent[idx] = never_sent(rec) ? xstrdup(js_str(rec, "detail")[0] ?
		    js_str(rec, "detail") : s) : NULL;
	}
	if (how == MARKS_APPLY && may_have_applied(s, rec)) {
		pr->applied[idx] = 1;
		pr->touched[idx] = 1;
		pr->untuned[idx] = 0;
	} else if (how == MARKS_ROLLBACK && in_set(s, done)) {
		pr->applied[idx] = 0;
		/* a <rollback/> on a node the play never tuned: untuning meant */
		if (pr->touched[idx] || pr->cur == NULL || pr->cur->kind != PS_ROLLBACK)
			pr->untuned[idx] = 1;
	}
}

/* Append to *tail, for each profile the nodes in untuned had before the
 * play (a rollback of the play took it off, not yet put back): which
 * nodes, and the apply that puts it back. */
static void
untuned_words(struct prun *pr, const struct strvec *untuned, char **tail)
{
	char *done = xcalloc(untuned->n + 1, 1);

	for (size_t i = 0; i < untuned->n; i++) {
		const char *p = pr->before->v[node_index(pr, untuned->v[i])];
		struct strvec who = { 0 };
		char *f;

		if (done[i])
			continue;
		for (size_t k = i; k < untuned->n; k++)
			if (!done[k] && strcmp(pr->before->v[node_index(pr, untuned->v[k])], p) == 0) {
				strvec_push(&who, untuned->v[k]);
				done[k] = 1;
			}
		f = nodeset_fold(who.v, who.n);
		str_appendf(tail, "; %s went back to its original values, not to profile %s it had "
		    "before the play (knobctl apply %s -w %s puts that back)", f, p, p, f);
		free(f);
		strvec_free(&who);
	}
	free(done);
}

/* The words a third stop signal writes as knobctl exits at once
 * (stop_sig_words): the nodes that may keep the play's tuning (marked
 * applied, and the nodes of an apply in flight, NULL: none) and how to
 * undo it, and the nodes a rollback took off their profile before the
 * play, not yet restored.  Set again whenever the marks move. */
static void
last_words(struct prun *pr, const struct strvec *in_flight)
{
	struct strvec keep = { 0 }, untuned = { 0 };
	char *tail, *f;

	for (size_t i = 0; i < pr->nodes->n; i++) {
		if (pr->applied[i] || (in_flight && strvec_contains(in_flight, pr->nodes->v[i])))
			strvec_push(&keep, pr->nodes->v[i]);
		else if (pr->untuned[i] && pr->before->v[i][0])
			strvec_push(&untuned, pr->nodes->v[i]);
	}
	if (keep.n == 0) {
		tail = xstrdup(" a third time: exiting at once; no node holds the play's tuning");
	} else {
		f = nodeset_fold(keep.v, keep.n);
		tail = xasprintf(" a third time: exiting at once, NOT rolled back: %s may keep the "
		    "play's tuning (each agent's journal holds the originals): knobctl rollback -w "
		    "%s undoes it", f, f);
		free(f);
	}
	untuned_words(pr, &untuned, &tail);
	str_appendf(&tail, "\n");
	stop_sig_words(3, "knobctl play: ", tail);
	free(tail);
	strvec_free(&keep);
	strvec_free(&untuned);
}

/* Per-node statuses of a command's JSON (under key, "status" for the tune
 * commands, "state" for sweep): failures (bad(status)) dropped, applied
 * marks moved (move_mark); a folded line per status.  A node the command
 * never reported on keeps its mark: nothing is known of it. */
static void
take_statuses(struct prun *pr, json_object *doc, const struct strvec *asked, enum marks how,
    const char *key, int (*bad)(const char *))
{
	json_object *nodes = json_object_object_get(doc, "nodes");
	struct strvec st = { 0 }, *who = NULL;
	char *seen = xcalloc(asked->n + 1, 1);

	for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++) {
		json_object *n = json_object_array_get_idx(nodes, i);
		const char *name = js_str(n, "node"), *s = js_str(n, key);
		long idx = node_index(pr, name);
		size_t k;

		for (k = 0; k < asked->n; k++)
			if (strcmp(asked->v[k], name) == 0)
				seen[k] = 1;
		for (k = 0; k < st.n && strcmp(st.v[k], s); k++)
			;
		if (k == st.n) {
			strvec_push(&st, s);
			who = xrealloc(who, st.n * sizeof(*who));
			memset(&who[k], 0, sizeof(*who));
		}
		strvec_push(&who[k], name);
		if (bad(s))
			fail_node(pr, name, js_str(n, "detail")[0] ? js_str(n, "detail") : s);
		move_mark(pr, idx, how, s, n);
	}
	for (size_t k = 0; k < st.n; k++) {
		char *f = nodeset_fold(who[k].v, who[k].n);

		say(pr, "  %s: %s\n", f, st.v[k]);
		free(f);
		strvec_free(&who[k]);
	}
	/* a node the command never reported on did not do it */
	for (size_t k = 0; k < asked->n; k++)
		if (!seen[k])
			fail_node(pr, asked->v[k], "no result");
	last_words(pr, NULL);
	free(who);
	free(seen);
	strvec_free(&st);
}

/* The nodes of sel (NULL: all) a tune command moving marks how runs on:
 * the live ones, and for a rollback also the dropped ones an apply may
 * have reached (their profile may still be there). */
static void
tune_nodes(struct prun *pr, enum marks how, const char *sel, struct strvec *out)
{
	for (size_t i = 0; i < pr->nodes->n; i++)
		if ((!pr->failed[i] || (how == MARKS_ROLLBACK && pr->applied[i])) &&
		    (sel == NULL || sel[i]))
			strvec_push(out, pr->nodes->v[i]);
}

/* apply / verify / rollback on the live nodes of sel, in batches (a
 * rollback takes the dropped nodes still marked applied too).  0 or -1. */
static int
step_tune(struct prun *pr, const char *verb, const char *profile, int check, const char *sel)
{
	struct strvec live = { 0 }, argv = { 0 };
	size_t i = 0, nb = 0, per;
	int rc = 0;
	enum marks how = check ? MARKS_KEEP : strcmp(verb, "apply") == 0 ? MARKS_APPLY :
	    strcmp(verb, "rollback") == 0 ? MARKS_ROLLBACK : MARKS_KEEP;

	tune_nodes(pr, how, sel, &live);
	if (live.n == 0) {
		reason(pr, "no node left to %s", verb);
		return -1;
	}
	per = pr->serial > 0 ? (size_t)pr->serial : live.n;
	strvec_push(&argv, verb);
	if (profile && profile[0])
		strvec_push(&argv, profile);
	if (check)
		strvec_push(&argv, "--check");
	while (i < live.n && !pr->tripped && !interrupted()) {
		struct strvec batch = { 0 };
		json_object *doc = NULL;
		char *f;

		for (size_t k = 0; k < per && i < live.n; k++)
			strvec_push(&batch, live.v[i++]);
		f = nodeset_fold(batch.v, batch.n);
		say(pr, "  batch %zu (%s): knobctl %s%s%s%s -w %s\n", ++nb, f, verb, profile &&
		    profile[0] ? " " : "", profile ? profile : "", check ? " --check" : "", f);
		free(f);
		if (how == MARKS_APPLY)	/* a third signal now leaves them tuned */
			last_words(pr, &batch);
		if (sub_run(pr, &argv, &batch, &doc) == 2 && doc == NULL) {
			reason(pr, "knobctl %s could not run", verb);
			rc = -1;
		}
		take_statuses(pr, doc, &batch, how, "status", is_error_status);
		if (check_trip(pr))
			rc = -1;
		json_object_put(doc);
		strvec_free(&batch);
	}
	strvec_free(&live);
	strvec_free(&argv);
	return interrupted() ? -1 : rc;
}

/* The nodes of sel (NULL: all) an apply of the play may have reached. */
static void
applied_nodes(struct prun *pr, const char *sel, struct strvec *out)
{
	for (size_t i = 0; i < pr->nodes->n; i++)
		if (pr->applied[i] && (sel == NULL || sel[i]))
			strvec_push(out, pr->nodes->v[i]);
}

/* Say each node of sel whose last apply was never sent (its connection
 * failed first) and that no earlier apply may have reached: nothing of
 * the play can be there to roll back. */
static void
say_never_reached(struct prun *pr, const char *sel)
{
	for (size_t i = 0; i < pr->nodes->n; i++)
		if (pr->unsent[i] && !pr->applied[i] && (sel == NULL || sel[i]))
			say(pr, "  %s: never reached (%s): nothing to roll back\n", pr->nodes->v[i],
			    pr->unsent[i]);
}

/* Say each node of sel still marked applied after a rollback NOT rolled
 * back (it fails the play), and each one an apply never reached.  0, or
 * -1 when one is NOT rolled back. */
static int
say_not_rolled_back(struct prun *pr, const char *sel)
{
	struct strvec left = { 0 };

	say_never_reached(pr, sel);
	applied_nodes(pr, sel, &left);
	for (size_t i = 0; i < left.n; i++) {
		say(pr, "  %s: NOT rolled back: the profile may still be there\n", left.v[i]);
		pr->nrb[node_index(pr, left.v[i])] = 1;
	}
	if (left.n)
		pr->bad = 1;
	strvec_free(&left);
	return left.n ? -1 : 0;
}

/* After a signal, queue up to SIG_LOCK_WAIT_S for the tuning lock (the
 * --wait of argv, a tune command): the agents of a bench cut short hold
 * it until they have aborted its phase and removed its files, which may
 * take longer than --stop-wait. */
static void
lock_wait_args(struct strvec *argv)
{
	if (!interrupted())
		return;
	strvec_push(argv, "--wait");
	strvec_push(argv, SIG_LOCK_WAIT_S);
}

/* Roll back, in one batch, every node of sel (NULL: all) an apply of the
 * play may have reached, failed ones too (they may have applied before
 * they failed); those rolled back are no longer marked applied.  One that
 * is not (still unreachable, busy, failed) is said and fails the play:
 * its profile may still be there.  After a signal it queues up to
 * SIG_LOCK_WAIT_S for the tuning lock: the agents of an interrupted bench
 * hold it until they have aborted its phase.  0, or -1 when one was not. */
static int
rollback_applied(struct prun *pr, const char *sel)
{
	struct strvec who = { 0 }, argv = { 0 };
	json_object *doc = NULL;

	applied_nodes(pr, sel, &who);
	if (who.n == 0)
		return 0;
	strvec_push(&argv, "rollback");
	lock_wait_args(&argv);
	say(pr, "  knobctl rollback on every node an apply may have reached (%zu)\n", who.n);
	(void)sub_run(pr, &argv, &who, &doc);
	take_statuses(pr, doc, &who, MARKS_ROLLBACK, "status", is_error_status);
	json_object_put(doc);
	strvec_free(&who);
	strvec_free(&argv);
	return say_not_rolled_back(pr, sel);
}

/* rollback: the live nodes of sel and the dropped ones an apply may have
 * reached, in batches (step_tune).  Each one still marked applied after
 * it is said NOT rolled back and fails the play; not when max-fail
 * tripped, batches never ran: the stop's rollback takes them and says. */
static int
step_rollback(struct prun *pr, const char *sel)
{
	int rc = step_tune(pr, "rollback", NULL, 0, sel);

	if (!pr->tripped)
		(void)say_not_rolled_back(pr, sel);
	return rc;
}

/* Health states that take a node out (those the sweep would drain). */
static int
is_failing_health(const char *s)
{
	static const char *const bad[] = { "slow", "timeout", "fail", "hung", "unreachable", NULL };

	return in_set(s, bad);
}

/* health: `knobctl sweep` on the live nodes of sel; failing nodes are
 * dropped (warn is shown, not failed).  0, or -1 when the threshold
 * tripped or the sweep itself failed (exit 2 or 3: its --prom file, the
 * results database, scontrol, no node checked; its message on stderr). */
static int
step_health(struct prun *pr, const struct pstep *st, const char *sel)
{
	struct strvec live = { 0 };
	json_object *doc = NULL;
	int rc = 0, src;

	if (pr->check) {
		say(pr, "  would run knobctl sweep (not in --check: probes, --prom and --drain write)\n");
		return 0;
	}
	live_nodes(pr, sel, &live);
	if (live.n == 0) {
		reason(pr, "no node left to sweep");
		return -1;
	}
	if ((src = sub_run(pr, &st->args, &live, &doc)) == 2 && doc == NULL) {
		reason(pr, "knobctl sweep could not run");
		rc = -1;
	} else if (src != 0 && src != 1) {
		reason(pr, "knobctl sweep itself failed (exit %d: its reason is above): the step "
		    "fails", src);
		rc = -1;
	}
	if (interrupted())	/* cut short by us: no node's health is known */
		rc = -1;
	else
		take_statuses(pr, doc, &live, MARKS_KEEP, "state", is_failing_health);
	if (check_trip(pr))
		rc = -1;
	json_object_put(doc);
	strvec_free(&live);
	return rc;
}

/* Seconds an earlier run took for this point (latest such phase in the
 * results store), or -1. */
static double
history_s(sqlite3 *db, const char *kind, uint32_t threads, uint64_t bs, uint64_t size)
{
	sqlite3_stmt *st = NULL;
	double s = -1;

	if (db == NULL || sqlite3_prepare_v2(db, "SELECT elapsed_s FROM phases WHERE kind = ? AND"
	    " threads = ? AND block_size = ? AND file_size = ? AND status = 'ok'"
	    " ORDER BY rowid DESC LIMIT 1", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, kind, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, threads);
	sqlite3_bind_int64(st, 3, (int64_t)bs);
	sqlite3_bind_int64(st, 4, (int64_t)size);
	if (sqlite3_step(st) == SQLITE_ROW)
		s = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return s;
}

/* The bytes phase p moves (md: the bytes of the files it writes or reads). */
static double
plan_bytes(const struct bench_req *rq, const struct plan *p)
{
	double files;

	if (!bench_kind_md(p->kind) || bench_kind_ext(p->kind))
		return (double)p->threads * (double)p->size;
	if (strcmp(p->kind, "md-create") != 0 && strcmp(p->kind, "md-read") != 0)
		return 0;
	files = p->files_total ? (double)p->files_total : (double)p->threads * (double)p->md_files;
	return files * (double)rq->write_size;
}

/* --check: the bench's phases, data volume and expected runtime, from the
 * plan the bench itself runs (<at> values, size-total, the kind's default
 * block size). */
static int
plan_bench(struct prun *pr, const struct pstep *st, size_t nnodes)
{
	struct ctl sub = { 0 };
	struct bench_req rq;
	struct plan *plan;
	char path[4096], when[160];
	sqlite3 *db = NULL;
	double bytes = 0, secs = 0;
	size_t nph = 0, unknown = 0;

	sub.inv = pr->ctl->inv;
	if (bench_parse_argv(&sub, (int)st->args.n, st->args.v, &rq) < 0) {
		reason(pr, "the bench's options do not parse (above)");
		opt_free(&sub);
		return -1;
	}
	results_db_path(pr->ctl, path, sizeof(path));
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		db = NULL;
	}
	plan = bench_make_plan(&rq, "check", &nph);
	for (size_t i = 0; i < nph; i++) {
		const struct plan *p = &plan[i];
		double h = history_s(db, p->kind, p->threads, p->bs, p->size);

		bytes += plan_bytes(&rq, p);
		if (h < 0)
			unknown++;
		else
			secs += h;
	}
	free(plan);
	if (unknown == nph)
		snprintf(when, sizeof(when), "expected runtime unknown: no earlier run of these "
		    "points in the results store");
	else if (unknown)
		snprintf(when, sizeof(when), "expected runtime at least %.0f s (%zu of %zu phase(s) "
		    "have no earlier run)", secs, unknown, nph);
	else
		snprintf(when, sizeof(when), "expected runtime %.0f s (from earlier runs)", secs);
	say(pr, "  plan: %zu phase(s) on %zu node(s), %.2f GiB of data; %s\n", nph, nnodes,
	    bytes / 1073741824.0, when);
	pr->est_s += secs;
	pr->est_bytes += bytes;
	pr->est_unknown += unknown;
	pr->est_known += nph - unknown;
	sqlite3_close(db);
	bench_req_free(&rq);
	opt_free(&sub);
	return 0;
}

/* --check: the plan's total, its runtime from the earlier runs of its
 * phases (unknown when none has one, not "at least 0 s"). */
static void
plan_total(struct prun *pr)
{
	char when[128];

	if (pr->est_unknown && pr->est_known == 0)
		snprintf(when, sizeof(when), "unknown (no earlier run of these phases)");
	else if (pr->est_unknown)
		snprintf(when, sizeof(when), "at least %.0f s (some phases have no earlier run)",
		    pr->est_s);
	else
		snprintf(when, sizeof(when), "%.0f s", pr->est_s);
	say(pr, "\nplan total: %.2f GiB of data; expected runtime %s; nothing was written\n",
	    pr->est_bytes / 1073741824.0, when);
}

/* The nodes the bench run doc lost mid-phase (its phases' "missing"),
 * each once, into lost.  0 when they are all that went wrong: every phase
 * ok or degraded (a partial sum without them), every clean-up failure on
 * a lost node (its files may be left); else -1. */
static int
bench_lost(json_object *doc, struct strvec *lost)
{
	json_object *phases = js_array(doc, "phases"), *cf = js_array(doc, "cleanup_failed");
	int rc = 0;

	for (size_t i = 0; phases && i < json_object_array_length(phases); i++) {
		json_object *ph = json_object_array_get_idx(phases, i);
		json_object *m = js_array(ph, "missing");

		if (strcmp(js_str(ph, "status"), "ok") != 0 &&
		    strcmp(js_str(ph, "status"), "degraded") != 0)
			rc = -1;
		for (size_t k = 0; m && k < json_object_array_length(m); k++) {
			const char *name = json_object_get_string(json_object_array_get_idx(m, k));

			if (!strvec_contains(lost, name))
				strvec_push(lost, name);
		}
	}
	for (size_t i = 0; cf && i < json_object_array_length(cf); i++)
		if (!strvec_contains(lost, js_str(json_object_array_get_idx(cf, i), "node")))
			rc = -1;
	return rc;
}

/* The bench of doc exited rc (not 0, not cut short by a signal): the
 * nodes it lost mid-phase are dropped from the play.  A bench step of its
 * own goes on when rc is 1 and they are all that went wrong (bench_lost)
 * and max-fail allows them, as an apply goes on without its failed nodes:
 * its run is stored degraded, their figures missing.  A bench in a
 * compare or a canary (label) fails: runs on different node sets do not
 * compare.  0 when the step goes on, else -1. */
static int
bench_drop_lost(struct prun *pr, json_object *doc, const char *label, int rc)
{
	struct strvec lost = { 0 };
	int ok = bench_lost(doc, &lost) == 0 && lost.n > 0;
	char *f;

	for (size_t i = 0; i < lost.n; i++)
		fail_node(pr, lost.v[i], "lost during the benchmark");
	check_trip(pr);
	ok = ok && rc == 1 && label == NULL && !pr->tripped;
	if (ok) {
		f = nodeset_fold(lost.v, lost.n);
		say(pr, "  run %s is degraded: %s lost, its figures are the other nodes' (within "
		    "max-fail: the play goes on)\n", js_str(doc, "run_id"), f);
		free(f);
	}
	strvec_free(&lost);
	return ok ? 0 : -1;
}

/* One bench step on the live nodes of sel, with an extra label; the run
 * document is kept in pr->docs and returned (borrowed).  NULL on failure. */
static json_object *
step_bench(struct prun *pr, const struct pstep *st, const char *label, const char *sel, int *rcp)
{
	struct strvec live = { 0 }, argv = { 0 };
	json_object *doc = NULL;
	int rc;

	*rcp = -1;
	live_nodes(pr, sel, &live);
	if (live.n == 0) {
		reason(pr, "no node left to run the benchmark");
		goto out;
	}
	if (pr->check) {
		*rcp = plan_bench(pr, st, live.n);
		goto out;
	}
	for (size_t i = 0; i + 1 < st->args.n; i++)
		strvec_push(&argv, st->args.v[i]);
	if (label)
		strvec_push_owned(&argv, xasprintf("--label=%s", label));
	strvec_push(&argv, st->args.v[st->args.n - 1]);	/* KIND last */
	rc = sub_run(pr, &argv, &live, &doc);
	if (doc == NULL) {
		reason(pr, "knobctl bench could not run (exit %d)", rc);
		goto out;
	}
	if (!pr->ctl->json)
		bench_print_table(pr->out, doc, pr->ctl->units_decimal);
	json_object_array_add(pr->docs, doc);
	/* interrupted: its nodes were cut off by us, not lost */
	*rcp = rc == 0 ? 0 : interrupted() ? -1 : bench_drop_lost(pr, doc, label, rc);
	if (*rcp != 0 && !interrupted())
		reason(pr, "knobctl bench exited %d: a phase failed or is degraded, or files were "
		    "left", rc);
	if (json_object_object_get_ex(doc, "db", NULL))
		say(pr, "  run %s stored%s%s\n", js_str(doc, "run_id"), label ? " as " : "",
		    label ? label : "");
	else
		say(pr, "  run %s is not all stored in the results database\n", js_str(doc, "run_id"));
out:
	strvec_free(&live);
	strvec_free(&argv);
	return *rcp == 0 && !pr->check ? doc : NULL;
}

/* The nested benches of st with label; their documents into out (borrowed).
 * 0 or -1. */
static int
run_benches(struct prun *pr, const struct pstep *st, const char *label, const char *sel,
    json_object **out)
{
	int rc = 0, r;

	for (size_t i = 0; i < st->nsub && !interrupted(); i++) {
		say(pr, " bench (line %d), %s\n", st->sub[i].line, label);
		out[i] = step_bench(pr, &st->sub[i], label, sel, &r);
		rc = r < 0 ? -1 : rc;
	}
	return interrupted() ? -1 : rc;
}

/* Compare table of each pair (printed; into tables when not NULL); the
 * number of "worse" points in *worse, and in *unjudged those no verdict
 * could be reached on (fewer than 2 good runs a side) plus the pairs that
 * could not be compared at all.  The points of all pairs are one family
 * for Holm's correction (README). */
static void
compare_pairs(struct prun *pr, json_object **a, json_object **b, size_t n, size_t *worse,
    size_t *unjudged, json_object *tables)
{
	json_object **cmp = xcalloc(n + 1, sizeof(*cmp));

	*worse = *unjudged = 0;
	for (size_t i = 0; i < n; i++) {
		char err[512];

		if (a[i] == NULL || b[i] == NULL)
			continue;
		if ((cmp[i] = results_compare_doc(a[i], b[i], 0, err, sizeof(err))) == NULL) {
			say(pr, "  not compared: %s\n", err);
			(*unjudged)++;
		}
	}
	results_compare_holm(cmp, n);
	for (size_t i = 0; i < n; i++) {
		json_object *rows = cmp[i] ? json_object_object_get(cmp[i], "points") : NULL;

		if (rows == NULL)
			continue;
		for (size_t k = 0; k < json_object_array_length(rows); k++) {
			const char *v = js_str(json_object_array_get_idx(rows, k), "verdict");

			*worse += strcmp(v, "worse") == 0;
			*unjudged += strcmp(v, "-") == 0;
		}
		if (!pr->ctl->json)
			results_print_compare(pr->out, cmp[i], pr->ctl->units_decimal);
		if (tables)
			json_object_array_add(tables, cmp[i]);
		else
			json_object_put(cmp[i]);
	}
	free(cmp);
}

/* compare: benches under A (untuned when A is ""), rollback, under B,
 * rollback; both runs recorded with their labels. */
static int
step_compare(struct prun *pr, const struct pstep *st, const char *sel, const char *tsel)
{
	json_object **a = xcalloc(st->nsub, sizeof(*a)), **b = xcalloc(st->nsub, sizeof(*b));
	size_t worse, unjudged;
	int rc = 0;

	say(pr, " A = %s\n", st->label_a);
	if (st->profile_a[0])
		rc |= step_tune(pr, "apply", st->profile_a, pr->check, tsel);
	else if (!pr->check)
		rc |= step_tune(pr, "rollback", NULL, 0, tsel);
	if (rc == 0)
		rc |= run_benches(pr, st, st->label_a, sel, a);
	if (rc == 0 && !pr->check)
		rc |= step_tune(pr, "rollback", NULL, 0, tsel);
	say(pr, " B = %s\n", st->label_b);
	if (rc == 0)
		rc |= step_tune(pr, "apply", st->profile, pr->check, tsel);
	if (rc == 0)
		rc |= run_benches(pr, st, st->label_b, sel, b);
	if (!pr->check)		/* nodes that failed on the way too */
		rc |= rollback_applied(pr, tsel);
	if (!pr->check)
		compare_pairs(pr, a, b, st->nsub, &worse, &unjudged, NULL);
	free(a);
	free(b);
	return rc ? -1 : 0;
}

/* canary: bench a canary subset, apply, bench again; roll out to the rest
 * (in batches) only if no point is worse, else roll the canaries back. */
static int
step_canary(struct prun *pr, const struct pstep *st, const char *sel)
{
	struct strvec live = { 0 };
	char *canary = xcalloc(pr->nodes->n + 1, 1), *rest = xcalloc(pr->nodes->n + 1, 1);
	json_object **a = xcalloc(st->nsub, sizeof(*a)), **b = xcalloc(st->nsub, sizeof(*b));
	long k;
	size_t worse = 0, unjudged = 0, i, taken = 0;
	int rc = -1;

	live_nodes(pr, sel, &live);
	k = play_count(st->canary, live.n);
	k = k < 1 ? 1 : k;
	for (i = 0; i < pr->nodes->n; i++)
		if (!pr->failed[i] && (sel == NULL || sel[i]))
			(taken++ < (size_t)k ? canary : rest)[i] = 1;
	say(pr, " canary: %ld of %zu node(s)\n", k, live.n);
	if (run_benches(pr, st, "baseline", canary, a) < 0 ||
	    step_tune(pr, "apply", st->profile, pr->check, canary) < 0 ||
	    run_benches(pr, st, st->profile, canary, b) < 0)
		goto out;
	if (pr->check) {	/* no bench ran: no verdict to claim */
		say(pr, " canary verdict: decided when the benches have run; if no point is worse, "
		    "%s is rolled out to the rest\n", st->profile);
		rc = any_live(pr, rest) ? step_tune(pr, "apply", st->profile, 1, rest) : 0;
		goto out;
	}
	{
		json_object *tables = json_object_new_array();

		compare_pairs(pr, a, b, st->nsub, &worse, &unjudged, tables);
		/* the verdict and its table: the reason the play goes on or stops */
		pr->detail = json_object_new_object();
		json_object_object_add(pr->detail, "verdict", json_object_new_string(worse ?
		    "worse" : unjudged ? "not judged" : "no point worse"));
		json_object_object_add(pr->detail, "worse", json_object_new_int64((int64_t)worse));
		json_object_object_add(pr->detail, "unjudged",
		    json_object_new_int64((int64_t)unjudged));
		json_object_object_add(pr->detail, "compare", tables);
	}
	if (worse || unjudged) {
		if (worse)
			reason(pr, "canary verdict: %zu point(s) worse with %s (the table above): "
			    "rolling the canaries back, no roll-out", worse, st->profile);
		else
			reason(pr, "canary verdict: %zu point(s) could not be judged (fewer than 2 good "
			    "runs a side, or runs that are not comparable: above): no evidence that "
			    "%s is not worse; rolling the canaries back, no roll-out", unjudged,
			    st->profile);
		rollback_applied(pr, canary);	/* failed canaries too */
		goto out;
	}
	if (!any_live(pr, rest)) {
		say(pr, " canary verdict: no point worse: no node left to roll out to: the "
		    "canaries have it\n");
		rc = 0;
		goto out;
	}
	say(pr, " canary verdict: no point worse: rolling %s out to the rest\n", st->profile);
	rc = step_tune(pr, "apply", st->profile, pr->check, rest);
out:
	strvec_free(&live);
	free(canary);
	free(rest);
	free(a);
	free(b);
	return rc;
}

/* Add v to the growing array *a of *n. */
static void
push_figure(double **a, size_t *n, double v)
{
	*a = xrealloc(*a, (*n + 1) * sizeof(**a));
	(*a)[(*n)++] = v;
}

/* Say one point of the score: its figure, or why it is left out. */
static void
say_point(struct prun *pr, json_object *doc, const struct point *p)
{
	double v = p->metric == M_BW ? p->st.mean / 1073741824.0 : p->st.mean / 1000.0;

	say(pr, "  %-24s %-10s %5lld threads  ", js_str(doc, "label"), p->kind,
	    (long long)p->threads);
	if (p->st.n == 0)
		say(pr, "no figure (every repeat failed): not in the score\n");
	else
		say(pr, "%s %.4f%s\n", p->metric == M_BW ? "GiB/s" : "kIOPS", v,
		    p->metric == M_IOPS ? " (not in the score)" : "");
}

/* IO500-like score of the play's runs: bandwidth phases (seq-*) in GiB/s,
 * metadata phases (md-*) in kIOPS, each geometric mean, score = the square
 * root of their product.  Not an official IO500 result.  A point whose
 * repeats all failed is left out (said); without a bandwidth or a metadata
 * figure there is no score and the step fails, saying which is missing. */
static int
step_score(struct prun *pr)
{
	double *bw = NULL, *md = NULL;
	size_t nbw = 0, nmd = 0;
	struct io500 s;

	if (pr->check) {
		say(pr, "  the IO500-like score is computed from the benches above\n");
		return 0;
	}
	for (size_t r = 0; r < json_object_array_length(pr->docs); r++) {
		json_object *doc = json_object_array_get_idx(pr->docs, r);
		struct pointset ps;

		points_build(doc, &ps);
		for (size_t i = 0; i < ps.n; i++) {
			const struct point *p = &ps.p[i];

			if (!points_workload_rep(&ps, i))	/* a repeat on fewer nodes */
				continue;
			say_point(pr, doc, p);
			if (p->st.n && p->metric == M_BW)
				push_figure(&bw, &nbw, p->st.mean / 1073741824.0);
			else if (p->st.n && p->metric == M_OPS)
				push_figure(&md, &nmd, p->st.mean / 1000.0);
		}
		points_free(&ps);
	}
	stats_io500(bw, nbw, md, nmd, &s);
	free(bw);
	free(md);
	if (nbw == 0 || nmd == 0) {
		reason(pr, "no IO500-like score: no %s phase has a figure (it needs both bandwidth "
		    "and metadata phases)", nbw == 0 && nmd == 0 ? "bandwidth or metadata" :
		    nbw == 0 ? "bandwidth" : "metadata");
		return -1;
	}
	say(pr, "  IO500-like score (NOT an official IO500 run): bandwidth %.4f GiB/s (geometric "
	    "mean of %zu), metadata %.4f kIOPS (geometric mean of %zu), score %.4f\n", s.bw_gib, nbw,
	    s.md_kiops, nmd, s.score);
	json_object_put(pr->score);
	pr->score = json_object_new_object();
	json_object_object_add(pr->score, "bandwidth_gib", json_object_new_double(s.bw_gib));
	json_object_object_add(pr->score, "metadata_kiops", json_object_new_double(s.md_kiops));
	json_object_object_add(pr->score, "score", json_object_new_double(s.score));
	json_object_object_add(pr->score, "official", json_object_new_boolean(0));
	return s.score > 0 ? 0 : -1;
}

/* report: the HTML page of the play's runs so far. */
static int
step_report(struct prun *pr, const struct pstep *st)
{
	size_t n = json_object_array_length(pr->docs);
	json_object **docs = xcalloc(n + 1, sizeof(*docs));
	int rc, err = 0;

	if (pr->check) {
		say(pr, "  would write %s\n", st->file);
		free(docs);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		docs[i] = json_object_array_get_idx(pr->docs, i);
	if (n)
		err = report_save(st->file, docs, n, pr->ctl->units_decimal);
	rc = n && err == 0 ? 0 : -1;
	if (rc == 0)
		say(pr, "  report of %zu run(s) written to %s\n", n, st->file);
	else
		reason(pr, "no report of %zu run(s) in %s%s%s", n, st->file, err ? ": " : "",
		    err ? strerror(-err) : "");
	free(docs);
	return rc;
}

/* The nodes of expr (a node set) as a mask over the play's nodes; NULL
 * (all) for "".  When expr does not expand or names a node outside the
 * play, the first such problem is in err and *bad is -1. */
static char *
node_mask(struct prun *pr, const char *expr, int *bad, char *err, size_t len)
{
	struct strvec names = { 0 };
	char *m;

	if (expr == NULL || expr[0] == '\0')
		return NULL;
	m = xcalloc(pr->nodes->n + 1, 1);
	if (nodeset_expand(expr, inventory_group_fn, pr->ctl->inv, &names, err, len) < 0)
		*bad = -1;
	for (size_t i = 0; *bad == 0 && i < names.n; i++) {
		long k = node_index(pr, names.v[i]);

		if (k < 0) {
			snprintf(err, len, "%s is not one of the play's nodes", names.v[i]);
			*bad = -1;
		} else
			m[k] = 1;
	}
	strvec_free(&names);
	return m;
}

/* Every nodes= and tune-nodes= of the n steps (nested ones too) names
 * nodes of the play, whose targets -w may have narrowed: checked before
 * anything runs, each bad one a file:line error on stderr.  0 or -1. */
static int
steps_nodes_check(struct prun *pr, const struct pstep *steps, size_t n, const char *targets)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		const struct pstep *st = &steps[i];
		const char *an[] = { "nodes", "tune-nodes" }, *expr[] = { st->nodes, st->tune_nodes };

		for (size_t k = 0; k < nitems(an); k++) {
			char err[512];
			int bad = 0;

			free(node_mask(pr, expr[k], &bad, err, sizeof(err)));
			if (bad) {
				fprintf(stderr, "%s:%d: %s=\"%s\": %s (the play runs on %s)\n",
				    pr->pl->path, st->line, an[k], expr[k], err, targets);
				rc = -1;
			}
		}
		if (steps_nodes_check(pr, st->sub, st->nsub, targets) < 0)
			rc = -1;
	}
	return rc;
}

static int
run_step(struct prun *pr, const struct pstep *st)
{
	int rc = 0, bad = 0;
	char err[512];
	char *sel = node_mask(pr, st->nodes, &bad, err, sizeof(err));
	char *tsel = bad ? NULL : node_mask(pr, st->tune_nodes, &bad, err, sizeof(err));

	if (bad) {
		reason(pr, "%s", err);
		goto out;
	}
	switch (st->kind) {
	case PS_APPLY: rc = step_tune(pr, "apply", st->profile, st->check || pr->check, sel); break;
	case PS_VERIFY:
		if (pr->check)
			say(pr, "  would verify (after the applies above run for real)\n");
		else
			rc = step_tune(pr, "verify", st->profile, 0, sel);
		break;
	case PS_ROLLBACK:
		if (pr->check) {
			say(pr, "  would roll back (not in --check)\n");
			break;
		}
		rc = step_rollback(pr, sel);
		break;
	case PS_BENCH: step_bench(pr, st, NULL, sel, &rc); break;
	case PS_COMPARE: rc = step_compare(pr, st, sel, tsel ? tsel : sel); break;
	case PS_CANARY: rc = step_canary(pr, st, sel); break;
	case PS_SCORE: rc = step_score(pr); break;
	case PS_REPORT: rc = step_report(pr, st); break;
	case PS_HEALTH: rc = step_health(pr, st, sel); break;
	default: rc = -1; break;
	}
out:
	free(sel);
	free(tsel);
	return bad ? -1 : rc;
}

/* The play stopped: roll back what it applied, unless keep="yes". */
static void
stop_rollback(struct prun *pr)
{
	int any = 0;

	for (size_t i = 0; i < pr->nodes->n; i++)
		any |= pr->applied[i];
	if (!any || pr->check)
		return;
	if (pr->pl->keep) {
		say(pr, "play stopped: keep=\"yes\": the applied profiles stay\n");
		return;
	}
	say(pr, "play stopped: rolling back what it applied\n");
	rollback_applied(pr, NULL);
}

/* The restore of profile p on who answered doc: each node not ok said
 * NOT restored (it fails the play), the others in one line. */
static void
restore_statuses(struct prun *pr, json_object *doc, const struct strvec *who, const char *p)
{
	json_object *nodes = json_object_object_get(doc, "nodes");
	struct strvec ok = { 0 };
	char *f;

	for (size_t k = 0; k < who->n; k++) {
		const char *s = "no result", *d = "";

		for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++) {
			json_object *n = json_object_array_get_idx(nodes, i);

			if (strcmp(js_str(n, "node"), who->v[k]) == 0) {
				s = js_str(n, "status");
				d = js_str(n, "detail");
			}
		}
		if (strcmp(s, "ok") == 0 || strcmp(s, "changed") == 0) {
			strvec_push(&ok, who->v[k]);
			continue;
		}
		say(pr, "  %s: NOT restored to %s (%s%s%s)\n", who->v[k], p, s, d[0] ? ": " : "", d);
		pr->nrs[node_index(pr, who->v[k])] = 1;
		pr->bad = 1;
	}
	if (ok.n) {
		f = nodeset_fold(ok.v, ok.n);
		say(pr, "  %s: %s restored\n", f, p);
		free(f);
	}
	strvec_free(&ok);
}

/* Put back, on each node a rollback of the play took to its original
 * values, the profile it had when the play started: an agent keeps one
 * journal, so the rollback of the play's profile (the stop's, compare's,
 * the canaries', or a <rollback/> after an apply) undid the node's own
 * too.  One knobctl apply per such profile (after a signal it queues for
 * the tuning lock, as the stop's rollback: lock_wait_args); a node not
 * restored fails the play. */
static void
restore_before(struct prun *pr)
{
	for (size_t i = 0; i < pr->nodes->n; i++) {
		const char *p = pr->before->v[i];
		struct strvec who = { 0 }, argv = { 0 };
		json_object *doc = NULL;
		char *f;

		if (!pr->untuned[i] || p[0] == '\0')
			continue;
		for (size_t k = i; k < pr->nodes->n; k++)
			if (pr->untuned[k] && strcmp(pr->before->v[k], p) == 0)
				strvec_push(&who, pr->nodes->v[k]);
		f = nodeset_fold(who.v, who.n);
		say(pr, "play rolled back %s, which had profile %s before it: knobctl apply %s -w %s\n",
		    f, p, p, f);
		free(f);
		strvec_push(&argv, "apply");
		strvec_push(&argv, p);
		lock_wait_args(&argv);	/* after a signal, as the stop's rollback */
		(void)sub_run(pr, &argv, &who, &doc);
		for (size_t k = 0; k < who.n; k++)	/* said restored or NOT restored */
			pr->untuned[node_index(pr, who.v[k])] = 0;
		restore_statuses(pr, doc, &who, p);
		last_words(pr, NULL);
		json_object_put(doc);
		strvec_free(&who);
		strvec_free(&argv);
	}
}

/* The nodes of mark (per node) as a JSON array of names. */
static json_object *
marked_nodes(struct prun *pr, const char *mark)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < pr->nodes->n; i++)
		if (mark[i])
			json_object_array_add(a, json_object_new_string(pr->nodes->v[i]));
	return a;
}

/* The play as every run it makes records it: name, file, content, its
 * SHA-256 and the -e variables. */
static json_object *
play_info(const struct play *pl)
{
	json_object *o = json_object_new_object(), *vars = json_object_new_object();

	json_object_object_add(o, "play", json_object_new_string(pl->name));
	json_object_object_add(o, "play_file", json_object_new_string(pl->path));
	json_object_object_add(o, "play_sha256", json_object_new_string(pl->sha256));
	json_object_object_add(o, "play_text", json_object_new_string_len(pl->text, (int)pl->len));
	for (size_t i = 0; i < pl->vars.n; i++) {
		const char *eq = strchr(pl->vars.v[i], '=');
		char *name;

		if (eq == NULL)
			continue;
		name = xasprintf("%.*s", (int)(eq - pl->vars.v[i]), pl->vars.v[i]);
		json_object_object_add(vars, name, json_object_new_string(eq + 1));
		free(name);
	}
	json_object_object_add(o, "play_vars", vars);
	return o;
}

/* The reason of a failed step's record js: the signal, else the first
 * the step gave (why). */
static void
step_reason(json_object *js, int sig, const char *why)
{
	char *s = sig ? xasprintf("interrupted by %s", stop_sig_name(sig)) :
	    xstrdup(why ? why : "failed");

	json_object_object_add(js, "reason", json_object_new_string(s));
	free(s);
}

/* Run step i; its record into pr->steps.  0 when the play goes on, 1 when
 * it stops (a failed step without on-failure="continue", a trip, a signal). */
static int
play_step(struct prun *pr, size_t i, size_t *failed_steps)
{
	const struct pstep *st = &pr->pl->steps[i];
	json_object *js = json_object_new_object();
	int rc, sig;

	say(pr, "\n== step %zu/%zu (line %d): %s%s%s\n", i + 1, pr->pl->nsteps, st->line, st->name,
	    st->profile[0] ? " " : "", st->profile);
	pr->cur = st;
	if (pr->tripped)
		reason(pr, "max-fail tripped in an earlier step");
	rc = pr->tripped ? -1 : run_step(pr, st);
	pr->cur = NULL;
	sig = interrupted();
	json_object_object_add(js, "step", json_object_new_string(st->name));
	json_object_object_add(js, "line", json_object_new_int(st->line));
	json_object_object_add(js, "status", json_object_new_string(rc == 0 ? "ok" : sig ?
	    "interrupted" : "failed"));
	if (rc != 0)
		step_reason(js, sig, pr->why);
	free(pr->why);
	pr->why = NULL;
	if (pr->detail)
		json_object_object_add(js, "canary", pr->detail);
	pr->detail = NULL;
	json_object_array_add(pr->steps, js);
	if (rc != 0) {
		(*failed_steps)++;
		pr->bad = 1;
	}
	if (sig) {
		say(pr, "  %s: the play stops\n", stop_sig_name(sig));
		return 1;
	}
	if (rc == 0)
		return 0;
	if (st->cont && !pr->tripped) {
		say(pr, "  step failed; on-failure=\"continue\"\n");
		return 0;
	}
	say(pr, "  step failed: the play stops\n");
	return 1;
}

/* The nodes said NOT rolled back whose profile may still be there (no
 * later rollback restored them), as a JSON array. */
static json_object *
not_rolled_back(struct prun *pr)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < pr->nodes->n; i++)
		if (pr->nrb[i] && pr->applied[i])
			json_object_array_add(a, json_object_new_string(pr->nodes->v[i]));
	return a;
}

/* The nodes an apply of the play reached whose tuning a rollback of the
 * play took off again, as a JSON array. */
static json_object *
rolled_back(struct prun *pr)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < pr->nodes->n; i++)
		if (pr->touched[i] && !pr->applied[i])
			json_object_array_add(a, json_object_new_string(pr->nodes->v[i]));
	return a;
}

/* The --json document of the play (caller puts it). */
static json_object *
play_result(struct prun *pr, int stopped)
{
	json_object *res = json_object_new_object(), *failed = json_object_new_array();
	json_object *ids = json_object_new_array();
	int sig = interrupted();

	json_object_object_add(res, "play", json_object_new_string(pr->pl->name));
	json_object_object_add(res, "status", json_object_new_string(sig ? "interrupted" :
	    stopped ? "stopped" : pr->bad ? "finished-with-failures" : "ok"));
	if (sig) {
		json_object_object_add(res, "signal", json_object_new_string(stop_sig_name(sig)));
		json_object_object_add(res, "stop_wait_s",
		    json_object_new_int64(pr->ctl->stop_wait_s));
		json_object_object_add(res, "wait_cut_short", json_object_new_boolean(
		    atomic_load(stop_sig_now()) != 0));
	}
	json_object_object_add(res, "steps", pr->steps);
	for (size_t i = 0; i < pr->nodes->n; i++)
		if (pr->failed[i])
			json_object_array_add(failed, json_object_new_string(pr->nodes->v[i]));
	json_object_object_add(res, "failed_nodes", failed);
	json_object_object_add(res, "failed", json_object_get(pr->failures));
	json_object_object_add(res, "rolled_back", rolled_back(pr));
	json_object_object_add(res, "not_rolled_back", not_rolled_back(pr));
	json_object_object_add(res, "not_restored", marked_nodes(pr, pr->nrs));
	for (size_t i = 0; i < json_object_array_length(pr->docs); i++)
		json_object_array_add(ids, json_object_new_string(js_str(
		    json_object_array_get_idx(pr->docs, i), "run_id")));
	json_object_object_add(res, "runs", ids);
	if (pr->score)
		json_object_object_add(res, "io500_like", pr->score);
	return res;
}

/* Run the play's steps on nodes; the stop's rollback when it stops (a
 * signal too: the signals are caught while the play runs).  The exit
 * status: 0, 1, or 128 + the signal's number when one interrupted it. */
int
play_run(struct ctl *ctl, struct play *pl, const struct strvec *nodes,
    const struct strvec *before, int check)
{
	struct prun pr = { .ctl = ctl, .pl = pl, .check = check, .nodes = nodes, .out = ctl->out,
		.before = before };
	struct stop_sig ss;
	json_object *res;
	char *folded = nodeset_fold(nodes->v, nodes->n);
	size_t failed_steps = 0;
	int stopped = 0, sig;

	if (steps_nodes_check(&pr, pl->steps, pl->nsteps, folded) < 0) {
		free(folded);
		return 2;	/* before anything runs */
	}
	stop_sig_catch(&ss, STOP_SIG_THIRD_KILLS);	/* the stop's rollback is not cut short */
	stop_sig_words(2, "knobctl play: ", pl->keep ? " again: not waiting any longer for the "
	    "nodes' answers to the stop (keep=\"yes\": nothing is rolled back); a third signal "
	    "exits at once\n" : " again: not waiting any longer for the nodes' answers to the "
	    "stop: the play's rollback runs next; a third signal exits at once, leaving the "
	    "play's tuning in place\n");
	pr.failed = xcalloc(nodes->n + 1, 1);
	pr.applied = xcalloc(nodes->n + 1, 1);
	pr.nrb = xcalloc(nodes->n + 1, 1);
	pr.touched = xcalloc(nodes->n + 1, 1);
	pr.untuned = xcalloc(nodes->n + 1, 1);
	pr.nrs = xcalloc(nodes->n + 1, 1);
	pr.unsent = xcalloc(nodes->n + 1, sizeof(*pr.unsent));
	pr.failures = json_object_new_array();
	pr.maxfail = pl->max_fail;
	pr.serial = pl->serial[0] ? play_count(pl->serial, nodes->n) : 0;
	pr.docs = json_object_new_array();
	pr.steps = json_object_new_array();
	pr.info = play_info(pl);
	last_words(&pr, NULL);
	say(&pr, "play %s (%s)%s on %zu node(s) %s; serial %s, max-fail %s (trips when more "
	    "nodes fail)\n", pl->name, pl->path, check ? " --check" : "", nodes->n, folded,
	    pr.serial ? pl->serial : "all", pl->max_fail[0] ? pl->max_fail : "0");
	for (size_t i = 0; i < pl->nsteps && !stopped; i++)
		stopped = play_step(&pr, i, &failed_steps);
	sig = interrupted();
	if (stopped)
		stop_rollback(&pr);
	if (!check)
		restore_before(&pr);
	if (check)
		plan_total(&pr);
	say(&pr, "\nplay %s: %s%s; %zu of %zu step(s) failed; %zu node(s) failed\n", pl->name,
	    sig ? "interrupted by " : stopped ? "stopped" : "finished", sig ? stop_sig_name(sig) : "",
	    failed_steps, pl->nsteps, pr.nfailed);
	res = play_result(&pr, stopped);
	if (ctl->json)
		output_text(ctl->out, res, 0);
	output_flush(ctl->out);
	json_object_put(res);
	json_object_put(pr.info);
	json_object_put(pr.docs);
	free(pr.failed);
	free(pr.applied);
	free(pr.nrb);
	free(pr.touched);
	free(pr.untuned);
	free(pr.nrs);
	for (size_t i = 0; i < nodes->n; i++)
		free(pr.unsent[i]);
	free(pr.unsent);
	free(pr.why);
	json_object_put(pr.failures);
	free(folded);
	stop_sig_restore(&ss);
	return sig ? 128 + sig : pr.bad ? 1 : 0;
}
