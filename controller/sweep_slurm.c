/* Sweep state between runs and the Slurm drain.
 *
 * Tables (results database, the "health" component of its migrations):
 *   sweep_runs     one row per sweep
 *   sweep_history  one row per node and sweep: worst state, findings, action
 *   sweep_nodes    per node: consecutive failing and passing sweeps, and
 *                  whether knob drained it
 *
 * Hysteresis: a node is drained after drain_after consecutive failing sweeps
 * (fail, timeout, hung, slow of its own checks) and resumed after
 * resume_after consecutive passing ones.  A sweep in which only knob's side
 * failed for a node (unreachable agent, our credentials refused, an agent
 * that answered with an Error or dropped the connection mid-request, a
 * clock judged without a fleet: enum sweep_cause) leaves its counts as they
 * were and never drains or resumes it.  Each drained node's reason names its
 * own failing checks ("knob: mount hung, drift fail"); the nodes with the
 * same reason are drained in one batched "scontrol update NodeName=LIST
 * State=DRAIN Reason=...", and resumes go in one "scontrol update
 * NodeName=LIST State=RESUME" (one call per SWEEP_SLURM_LIST_MAX bytes of
 * names: exec takes no longer argument).  A node scontrol does not know
 * ("Node x not found") is not a Slurm node, not a failure of the sweep.  A node is resumed only
 * when Slurm's current reason still starts with "knob:": a node that a
 * person drained (or re-drained with their own reason) stays drained.  A node
 * knob drained that still fails is looked up too: drained again when a person
 * resumed it, forgotten when a person's reason holds it now.  A drain call
 * that failed or timed out may have taken all the same: the node is recorded
 * "drain unconfirmed" and looked up in the next --drain sweep's scontrol
 * show, where a "knob:" reason makes the drain knob's own.
 *
 * One sweep's record, from reading the nodes' counters and drained flags
 * through the scontrol calls to writing them back, holds the sweep lock
 * (flock of SWEEP_LOCK_FILE beside the results database): two sweeps at
 * once (the timer's and a manual one) take turns, the second waiting for
 * the first (SWEEP_DB_WAIT_MS at most, saying so on stderr) and counting on
 * from what it wrote.  The database's own write lock is taken only to write
 * (one BEGIN IMMEDIATE transaction in store), never across a scontrol call,
 * so that a bench storing its results meanwhile does not wait for Slurm. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <sqlite3.h>

#include "cmd.h"
#include "log.h"
#include "results.h"
#include "sweep.h"
#include "visible.h"

#define KNOB_REASON_PREFIX "knob:"
#define REASON_MAX 160		/* a drain reason stops growing past this */
#define SHOW_MAX (4u << 20)
#define SCONTROL_TIMEOUT_MS 60000	/* one scontrol call (scontrol_timeout_ms) */
#define SWEEP_DB_WAIT_MS 60000	/* for another sweep's record at most */
#define SWEEP_DB_STEP_MS 20
#define SWEEP_LOCK_FILE "sweep.lock"	/* beside the results database */
/* sweep_nodes.drained: 0 not knob's, 1 knob drained it, DRAIN_UNCONFIRMED
 * its drain call failed or timed out (it may have taken in Slurm anyway):
 * the next --drain sweep looks it up. */
#define DRAIN_UNCONFIRMED 2
/* An scontrol call killed after its timeout: the sweep makes no more calls
 * (each would hold the sweep lock as long again). */
#define CALL_TIMED_OUT (-2)


/* The health component's schema steps (results_migrate; append only). */
static const char *const sweep_steps[] = {
	"CREATE TABLE sweep_runs ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT, t REAL NOT NULL, duration_s REAL,"
	" nodes INTEGER, bad INTEGER);"
	"CREATE TABLE sweep_history ("
	" run INTEGER NOT NULL, node TEXT NOT NULL, t REAL NOT NULL, state TEXT NOT NULL,"
	" findings TEXT, action TEXT, PRIMARY KEY (run, node));"
	"CREATE TABLE sweep_nodes ("
	" node TEXT PRIMARY KEY, fails INTEGER NOT NULL DEFAULT 0,"
	" passes INTEGER NOT NULL DEFAULT 0, drained INTEGER NOT NULL DEFAULT 0,"
	" drained_at REAL);",
};
static const struct results_schema sweep_schema = { "health", sweep_steps, nitems(sweep_steps) };

/* SQLite's busy handler of a sweep's connection: another knobctl holds
 * the write lock (another sweep recording).  Says so once, then retries
 * every SWEEP_DB_STEP_MS until SWEEP_DB_WAIT_MS have passed. */
static int
db_busy_wait(void *arg, int count)
{
	(void)arg;
	if (count == 0)
		fprintf(stderr, "knobctl sweep: results database busy (another knobctl is "
		    "writing?); waiting up to %d s\n", SWEEP_DB_WAIT_MS / 1000);
	if (count >= SWEEP_DB_WAIT_MS / SWEEP_DB_STEP_MS)
		return 0;
	usleep(SWEEP_DB_STEP_MS * 1000);
	return 1;
}

/* Take the sweep lock (flock of SWEEP_LOCK_FILE beside the results
 * database), waiting for another sweep's record SWEEP_DB_WAIT_MS at most
 * (said once on stderr).  Its fd, or -1 (printed). */
static int
sweep_lock(struct ctl *ctl)
{
	uint64_t end = now_mono_ns() + SWEEP_DB_WAIT_MS * 1000000ull;
	char path[PATH_MAX];
	int fd, said = 0;

	results_side_path(ctl, SWEEP_LOCK_FILE, path, sizeof(path));
	results_mkparent(path);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		goto fail;
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			goto fail;
		if (now_mono_ns() >= end) {
			errno = ETIMEDOUT;
			goto fail;
		}
		if (!said++)
			fprintf(stderr, "knobctl sweep: another sweep is recording (%s); waiting up "
			    "to %d s\n", path, SWEEP_DB_WAIT_MS / 1000);
		usleep(SWEEP_DB_STEP_MS * 1000);
	}
	return fd;
fail:
	fprintf(stderr, "knobctl sweep: sweep lock %s: %s; nothing recorded, drained or "
	    "resumed\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The results database with the sweep tables, waiting for another sweep's
 * write (db_busy_wait); NULL (printed). */
static sqlite3 *
sweep_db(struct ctl *ctl)
{
	sqlite3 *db = results_open(ctl);
	char err[512];

	if (db != NULL)
		sqlite3_busy_handler(db, db_busy_wait, NULL);
	if (db != NULL && results_migrate(db, &sweep_schema, err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl sweep: %s\n", err);
		sqlite3_close(db);
		db = NULL;
	}
	return db;
}

/* Per node of this sweep. */
struct rnode {
	const struct sweep_node *sn;
	int failing;
	long fails, passes;
	int drained;		/* knob drained it (before this sweep) */
	int unconfirmed;	/* its drain call failed or timed out: it may have taken */
	int want_drain, want_resume;
	int recheck;		/* knob drained it and it still fails: is it still knob's drain? */
	char *reason;		/* its drain reason (want_drain) */
	int due;		/* due for a drain or a resume: scontrol show asks */
	int batch;		/* in the drain batch being made (one reason) */
	int in_call;		/* in the scontrol call being made */
	int called;		/* its drain call was made */
	char slurm_state[64];
	char slurm_reason[256];
	int in_slurm;
	char action[300];
};

/* ------------------------------------------------------------ scontrol */

/* How long one scontrol call may take: 60 s, or KNOB_SCONTROL_TIMEOUT_MS.
 * A sweep holds the sweep lock meanwhile, so a hung scontrol must not hold
 * it (nor the timer's next sweeps) for ever. */
static int
scontrol_timeout_ms(void)
{
	const char *e = getenv("KNOB_SCONTROL_TIMEOUT_MS");
	long v = e ? strtol(e, NULL, 10) : 0;

	return v > 0 && v <= 3600000 ? (int)v : SCONTROL_TIMEOUT_MS;
}

/* Run argv (no shell) within scontrol_timeout_ms: stdout, then stderr,
 * into *out when out is not NULL; else stderr goes on to ours.  Returns
 * the exit status, -1 when it cannot run, or CALL_TIMED_OUT (said). */
static int
run_cmd(char *const argv[], char **out)
{
	char *o = xmalloc(SHOW_MAX + 1), err[4096];
	int ms = scontrol_timeout_ms(), rc = cmd_run(argv, ms, o, SHOW_MAX + 1, err, sizeof(err));

	if (rc == -ETIMEDOUT)
		fprintf(stderr, "knobctl sweep: %s %s timed out after %.1f s (killed)\n", argv[0],
		    argv[1], ms / 1000.0);
	else if (rc < 0)
		fprintf(stderr, "knobctl sweep: cannot run %s: %s\n", argv[0], strerror(-rc));
	else if (rc == 127 && *o == '\0' && *err == '\0')	/* execvp's, said by nobody */
		fprintf(stderr, "knobctl sweep: cannot run %s: not found in PATH (exit 127)\n",
		    argv[0]);
	if (out)
		*out = xasprintf("%s%s%s", o, *o && *err ? "\n" : "", err);
	else if (*err)
		fprintf(stderr, "%s\n", err);
	free(o);
	return rc == -ETIMEDOUT ? CALL_TIMED_OUT : rc < 0 ? -1 : rc;
}

/* Value of "KEY=" in a one-line node record into buf; Reason runs to the
 * " [user@time]" stamp or the end of the line. */
static void
field(const char *line, const char *key, char *buf, size_t len)
{
	char pat[32];
	const char *p, *e;

	buf[0] = '\0';
	snprintf(pat, sizeof(pat), " %s=", key);
	if (strncmp(line, pat + 1, strlen(pat) - 1) == 0)
		p = line + strlen(pat) - 1;
	else if ((p = strstr(line, pat)) != NULL)
		p += strlen(pat);
	else
		return;
	if (strcmp(key, "Reason") == 0) {
		e = strstr(p, " [");
		if (e == NULL)
			e = p + strcspn(p, "\n");
	} else
		e = p + strcspn(p, " \n");
	snprintf(buf, len, "%.*s", (int)(e - p), p);
}

/* 1 when line is scontrol's "Node NAME not found" (a node outside Slurm). */
static int
not_found_line(const char *line)
{
	static const char tail[] = " not found";
	size_t len = strlen(line);

	return strncmp(line, "Node ", 5) == 0 && len > 5 + sizeof(tail) - 1 &&
	    strcmp(line + len - (sizeof(tail) - 1), tail) == 0 &&
	    strcspn(line + 5, " ") == len - 5 - (sizeof(tail) - 1);
}

/* "scontrol -o show node LIST" (stdout and stderr) into the nodes'
 * slurm_state/reason.  scontrol exits 1 when a node of the list is not
 * Slurm's ("Node x not found", an NFS server in the sweep), after showing
 * the others: those nodes stay in_slurm 0, and that is no failure, even
 * when no node of the list is Slurm's.  0, or -1 on any other error line or
 * exit status (slurmctld down, a bad list). */
static int
slurm_show(const char *scontrol, struct rnode *rn, size_t n, const char *list)
{
	char *argv[] = { (char *)(uintptr_t)scontrol, (char *)(uintptr_t)"-o",
	    (char *)(uintptr_t)"show", (char *)(uintptr_t)"node", (char *)(uintptr_t)list, NULL };
	char *out = NULL, *line, *save = NULL;
	int rc = run_cmd(argv, &out), missing = 0, other = 0;

	if (rc < 0 || out == NULL) {	/* not run, or killed */
		free(out);
		return -1;
	}
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[256];

		field(line, "NodeName", name, sizeof(name));
		if (name[0] == '\0') {
			if (not_found_line(line))
				missing++;
			else {
				fprintf(stderr, "knobctl sweep: scontrol: %s\n", line);
				other++;
			}
		}
		for (size_t i = 0; name[0] && i < n; i++)
			if (strcmp(rn[i].sn->name, name) == 0) {
				rn[i].in_slurm = 1;
				field(line, "State", rn[i].slurm_state, sizeof(rn[i].slurm_state));
				field(line, "Reason", rn[i].slurm_reason, sizeof(rn[i].slurm_reason));
			}
	}
	free(out);
	return other == 0 && (rc == 0 || (rc == 1 && missing > 0)) ? 0 : -1;
}

/* One "scontrol update NodeName=LIST State=... [Reason=...]". 0, -1, or
 * CALL_TIMED_OUT. */
static int
slurm_update(const char *scontrol, const char *list, const char *state, const char *reason)
{
	char *nodes = xasprintf("NodeName=%s", list), *st = xasprintf("State=%s", state);
	char *rs = reason ? xasprintf("Reason=%s", reason) : NULL;
	char *argv[] = { (char *)(uintptr_t)scontrol, (char *)(uintptr_t)"update", nodes, st, rs,
	    NULL };
	int r = run_cmd(argv, NULL);

	free(nodes);
	free(st);
	free(rs);
	return r == 0 || r == CALL_TIMED_OUT ? r : -1;
}

/* ------------------------------------------------------------ database */

/* Load each node's counters. */
static void
load_nodes(sqlite3 *db, struct rnode *rn, size_t n)
{
	sqlite3_stmt *q = NULL;

	sqlite3_prepare_v2(db, "SELECT fails, passes, drained FROM sweep_nodes WHERE node = ?",
	    -1, &q, NULL);
	for (size_t i = 0; q && i < n; i++) {
		sqlite3_reset(q);
		sqlite3_bind_text(q, 1, rn[i].sn->name, -1, SQLITE_STATIC);
		if (sqlite3_step(q) == SQLITE_ROW) {
			rn[i].fails = sqlite3_column_int64(q, 0);
			rn[i].passes = sqlite3_column_int64(q, 1);
			rn[i].drained = sqlite3_column_int(q, 2) != 0;
			rn[i].unconfirmed = sqlite3_column_int(q, 2) == DRAIN_UNCONFIRMED;
		}
	}
	sqlite3_finalize(q);
}

/* The node's non-ok findings, "; " separated; malloc'd. */
static char *
findings(const struct sweep_node *sn)
{
	char *s = NULL;

	for (size_t k = 0; k < sn->n; k++)
		if (sweep_state_bad(sn->c[k].state))
			str_appendf(&s, "%s%s%s%s %s (%s)", s ? "; " : "", sn->c[k].check,
			    sn->c[k].target[0] ? " " : "", sn->c[k].target,
			    sweep_state_name(sn->c[k].state), sn->c[k].reason);
	return s ? s : xstrdup("all checks ok");
}

/* Report the database error and roll the transaction back. */
static void
db_abort(sqlite3 *db)
{
	fprintf(stderr, "knobctl sweep: results database: %s\n", sqlite3_errmsg(db));
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

/* Write the run, the history rows and the new counters in one write
 * transaction (rolled back on an error).  0 or -1. */
static int
store(sqlite3 *db, const struct sweep_run *run, struct rnode *rn, size_t n)
{
	sqlite3_stmt *h = NULL, *u = NULL;
	sqlite3_int64 id;
	double t = (double)run->end_real_ns / 1e9;
	size_t bad = 0;
	int rc = -1;
	char *sql = NULL;

	for (size_t i = 0; i < n; i++)
		bad += rn[i].failing;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	sql = sqlite3_mprintf("INSERT INTO sweep_runs (t, duration_s, nodes, bad) VALUES "
	    "(%.3f, %.3f, %lld, %lld)", t, run->duration_s, (long long)n, (long long)bad);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	id = sqlite3_last_insert_rowid(db);
	if (sqlite3_prepare_v2(db, "INSERT INTO sweep_history VALUES (?, ?, ?, ?, ?, ?)", -1, &h,
	    NULL) != SQLITE_OK || sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO sweep_nodes "
	    "(node, fails, passes, drained) VALUES (?, ?, ?, ?)", -1, &u, NULL) != SQLITE_OK)
		goto out;
	for (size_t i = 0; i < n; i++) {
		char *f = findings(rn[i].sn);
		int ok;

		sqlite3_reset(h);
		sqlite3_bind_int64(h, 1, id);
		sqlite3_bind_text(h, 2, rn[i].sn->name, -1, SQLITE_STATIC);
		sqlite3_bind_double(h, 3, t);
		sqlite3_bind_text(h, 4, sweep_state_name(rn[i].sn->worst), -1, SQLITE_STATIC);
		sqlite3_bind_text(h, 5, f, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(h, 6, rn[i].action, -1, SQLITE_STATIC);
		ok = sqlite3_step(h) == SQLITE_DONE;
		free(f);
		sqlite3_reset(u);
		sqlite3_bind_text(u, 1, rn[i].sn->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(u, 2, rn[i].fails);
		sqlite3_bind_int64(u, 3, rn[i].passes);
		sqlite3_bind_int(u, 4, rn[i].unconfirmed ? DRAIN_UNCONFIRMED : rn[i].drained);
		if (!ok || sqlite3_step(u) != SQLITE_DONE)
			goto out;
	}
	rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
out:
	if (rc < 0)
		db_abort(db);
	sqlite3_finalize(h);
	sqlite3_finalize(u);
	sqlite3_free(sql);
	return rc;
}

/* ------------------------------------------------------------ decisions */

size_t
sweep_slurm_list(const char *const *names, size_t n, size_t max, char **list)
{
	size_t k = 0, len = 0;
	char *p;

	for (; k < n && (k == 0 || len + 1 + strlen(names[k]) <= max); k++)
		len += (k ? 1 : 0) + strlen(names[k]);
	p = *list = xmalloc(len + 1);
	for (size_t i = 0; i < k; i++) {
		size_t l = strlen(names[i]);

		if (i)
			*p++ = ',';
		memcpy(p, names[i], l);
		p += l;
	}
	*p = '\0';
	return k;
}

/* The next scontrol list of the nodes with flag set (offset of an int in
 * rnode) from rn[*pos] on, at most SWEEP_SLURM_LIST_MAX bytes: its nodes get
 * in_call (every other node loses it) and *pos moves past them.  malloc'd;
 * NULL when no such node is left. */
static char *
next_list(struct rnode *rn, size_t n, size_t off, size_t *pos)
{
	const char **names = xcalloc(n ? n : 1, sizeof(*names));
	size_t *idx = xcalloc(n ? n : 1, sizeof(*idx)), m = 0, taken;
	char *list = NULL;

	for (size_t i = 0; i < n; i++) {
		rn[i].in_call = 0;
		if (i >= *pos && *(int *)(void *)((char *)&rn[i] + off)) {
			idx[m] = i;
			names[m++] = rn[i].sn->name;
		}
	}
	if (m > 0) {
		taken = sweep_slurm_list(names, m, SWEEP_SLURM_LIST_MAX, &list);
		for (size_t k = 0; k < taken; k++)
			rn[idx[k]].in_call = 1;
		*pos = idx[taken - 1] + 1;
	}
	free(names);
	free(idx);
	return list;
}

/* "knob: mount hung, drift fail": the node's own failing checks, each
 * (check, state) once, targets left out and at most REASON_MAX bytes, so that
 * the reason stays short in sinfo -R and nodes failing the same way share
 * one scontrol call.  malloc'd. */
static char *
drain_reason(const struct sweep_node *sn)
{
	struct strvec seen = { 0 };
	char *s = xstrdup(KNOB_REASON_PREFIX);

	for (size_t k = 0; k < sn->n; k++) {
		const struct sweep_check *c = &sn->c[k];
		char *item;

		if (!sweep_check_counts(c))
			continue;
		item = xasprintf("%s %s", c->check, sweep_state_name(c->state));
		if (!strvec_contains(&seen, item) && strlen(s) < REASON_MAX)
			str_appendf(&s, "%s %s", seen.n ? "," : "", item);
		strvec_push_owned(&seen, item);
	}
	strvec_free(&seen);
	return s;
}

/* Counters and what each node is due for. */
static void
decide(struct rnode *rn, size_t n, const struct sweep_policy *pol)
{
	for (size_t i = 0; i < n; i++) {
		struct rnode *r = &rn[i];

		r->failing = sweep_node_failing(r->sn, 0);
		if (!r->failing && sweep_node_failing(r->sn, 1)) {
			snprintf(r->action, sizeof(r->action), "not counted: knob's side, not the "
			    "node's health (failing %ld, passing %ld kept)", r->fails, r->passes);
			continue;
		}
		r->fails = r->failing ? r->fails + 1 : 0;
		r->passes = r->failing ? 0 : r->passes + 1;
		r->want_drain = r->failing && !r->drained && r->fails >= (long)pol->drain_after;
		r->want_resume = !r->failing && r->drained && r->passes >= (long)pol->resume_after;
		r->recheck = (r->failing && r->drained) || r->unconfirmed;
		if (r->failing && r->drained)
			snprintf(r->action, sizeof(r->action), "still drained by knob (failing %ld)",
			    r->fails);
		else if (r->failing && !r->want_drain)
			snprintf(r->action, sizeof(r->action), "failing %ld of %u before a drain",
			    r->fails, pol->drain_after);
		else if (!r->failing && r->drained && !r->want_resume)
			snprintf(r->action, sizeof(r->action), "passing %ld of %u before a resume",
			    r->passes, pol->resume_after);
	}
}

/* 1 when Slurm holds r out of service: drained, or down with a reason (a
 * person's "PSU swap"; Slurm's own "Not responding" too). */
static int
slurm_held(const struct rnode *r)
{
	return strstr(r->slurm_state, "DRAIN") != NULL ||
	    ((strstr(r->slurm_state, "DOWN") || strstr(r->slurm_state, "FAIL")) &&
	    r->slurm_reason[0]);
}

/* 1 when Slurm's reason for r is knob's ("knob: ..."). */
static int
knob_reason(const struct rnode *r)
{
	return strncmp(r->slurm_reason, KNOB_REASON_PREFIX, strlen(KNOB_REASON_PREFIX)) == 0;
}

/* A node whose drain call failed or timed out (unconfirmed), against
 * Slurm's view: drained with knob's reason, the drain took and is knob's
 * (resumed as any other); else it did not take, and recheck_drains goes
 * on as for a drain that is gone (a person's reason: theirs; not drained:
 * drained again while it fails).  1 when the drain is confirmed. */
static int
confirm_drain(struct rnode *r)
{
	char was[sizeof(r->action)];

	r->unconfirmed = 0;
	if (!r->in_slurm) {
		r->drained = r->want_resume = 0;
		snprintf(r->action, sizeof(r->action), "not a Slurm node");
		return 1;
	}
	if (!slurm_held(r) || !knob_reason(r)) {
		if (!r->failing) {
			r->want_resume = 0;
			snprintf(r->action, sizeof(r->action), "the drain of an earlier sweep "
			    "did not take (%s%s%s): nothing to resume", r->slurm_state,
			    r->slurm_reason[0] ? ", reason: " : "", r->slurm_reason);
		}
		return 0;
	}
	snprintf(was, sizeof(was), "%s", r->action);
	snprintf(r->action, sizeof(r->action), "unconfirmed drain confirmed (%s, reason: %s)%s%s",
	    r->slurm_state, r->slurm_reason, was[0] ? "; " : "", was);
	return 1;
}

/* The nodes knob drained that still fail (recheck), against Slurm's view:
 * still drained with knob's reason, nothing to do; drained or down with
 * another reason, the drain is a person's now and knob forgets its own (as
 * at a resume); not drained at all (a person resumed it while it still
 * fails), knob's drain is gone and the node is drained again.  Before, such
 * a node was "still drained by knob" for as long as it failed: in service
 * and never drained again.  An unconfirmed drain is settled first
 * (confirm_drain). */
static void
recheck_drains(struct rnode *rn, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct rnode *r = &rn[i];
		int held = slurm_held(r);

		if (r->recheck && r->unconfirmed && confirm_drain(r))
			continue;
		if (!r->recheck || !r->in_slurm || (held && knob_reason(r)))
			continue;
		r->drained = 0;
		if (held)
			snprintf(r->action, sizeof(r->action), "drained by someone else now (%s, "
			    "reason: %s): knob forgets its drain", r->slurm_state, r->slurm_reason);
		else if (r->failing)
			r->want_drain = 1;	/* drained at once again, as it still fails */
	}
}

/* Slurm's view decides: only knob's own drains are resumed, and a node a
 * person already drained is left alone. */
static void
filter_by_slurm(struct rnode *rn, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct rnode *r = &rn[i];
		int knob = knob_reason(r);
		int held = slurm_held(r);	/* not ours to take over either */

		if ((r->want_drain || r->want_resume) && !r->in_slurm) {
			snprintf(r->action, sizeof(r->action), "not a Slurm node");
			r->want_drain = r->want_resume = 0;
		} else if (r->want_drain && held && !knob) {
			snprintf(r->action, sizeof(r->action), "already drained or down by someone "
			    "else (%s, reason: %s)", r->slurm_state, r->slurm_reason);
			r->want_drain = 0;
		} else if (r->want_resume && !knob) {
			snprintf(r->action, sizeof(r->action), "not resumed: Slurm reason is not "
			    "knob's (%s)", r->slurm_reason[0] ? r->slurm_reason : "none");
			r->want_resume = 0;
			r->drained = 0;		/* a person owns this drain now */
		}
	}
}

/* Record r's drain call's outcome: drained, or unconfirmed (the call
 * failed or timed out, and may have taken all the same: Slurm is asked
 * at the next --drain sweep, and a "knob:" reason found there is knob's
 * own drain).  Before, a failed call left the node not drained: a drain
 * that took was never resumed by knob. */
static void
drain_called(struct rnode *r, const char *reason, int ok)
{
	r->called = 1;
	r->drained = 1;
	r->unconfirmed = !ok;
	snprintf(r->action, sizeof(r->action), ok ? "drained: %s" : "drain unconfirmed: %s "
	    "(scontrol failed or timed out; looked up in Slurm next sweep)", reason);
}

/* "scontrol update ... State=DRAIN" for rn[first] and every later node due
 * with the same reason: one call, or one per SWEEP_SLURM_LIST_MAX bytes of
 * names; each node is marked by its call's outcome.  0, -1, or
 * CALL_TIMED_OUT (its later lists not called). */
static int
drain_batch(struct rnode *rn, size_t n, size_t first, const struct sweep_drain_opts *o,
    FILE *out)
{
	const char *reason = rn[first].reason;
	size_t pos = 0;
	char *dl;
	int rc = 0;

	for (size_t j = 0; j < n; j++)
		rn[j].batch = j >= first && rn[j].reason && !rn[j].called &&
		    strcmp(rn[j].reason, reason) == 0;
	while ((dl = next_list(rn, n, offsetof(struct rnode, batch), &pos)) != NULL) {
		int r = slurm_update(o->scontrol, dl, "DRAIN", reason), ok = r == 0;

		if (ok)
			fprintf(out, "drained %s: %s\n", dl, reason);
		else {
			fprintf(stderr, "knobctl sweep: scontrol update NodeName=%s State=DRAIN "
			    "failed\n", dl);
			fprintf(out, "drain unconfirmed %s: %s (looked up in Slurm next sweep)\n", dl,
			    reason);
		}
		for (size_t j = first; j < n; j++)
			if (rn[j].in_call)
				drain_called(&rn[j], reason, ok);
		rc = ok ? rc : r;
		free(dl);
		if (r == CALL_TIMED_OUT)
			break;
	}
	return rc;
}

/* Drain the nodes due for it, each with its own reason (drain_reason):
 * one call per distinct reason, the nodes failing the same way batched.
 * 0, -1 when a call failed, or CALL_TIMED_OUT (no call after it). */
static int
drain_nodes(struct rnode *rn, size_t n, const struct sweep_drain_opts *o, FILE *out)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		rn[i].reason = rn[i].want_drain ? drain_reason(rn[i].sn) : NULL;
	for (size_t i = 0; i < n && rc != CALL_TIMED_OUT; i++) {
		int r;

		if (rn[i].reason && !rn[i].called && (r = drain_batch(rn, n, i, o, out)) < 0)
			rc = r;
	}
	return rc;
}

/* The batched resume (one call per SWEEP_SLURM_LIST_MAX bytes of names),
 * each node marked by its call's outcome.  0, -1, or CALL_TIMED_OUT (its
 * later lists not called). */
static int
resume_nodes(struct rnode *rn, size_t n, const struct sweep_drain_opts *o, FILE *out)
{
	size_t pos = 0;
	char *rl;
	int rc = 0;

	while ((rl = next_list(rn, n, offsetof(struct rnode, want_resume), &pos)) != NULL) {
		int r = slurm_update(o->scontrol, rl, "RESUME", NULL), ok = r == 0;

		if (ok)
			fprintf(out, "resumed %s\n", rl);
		else
			fprintf(stderr, "knobctl sweep: scontrol update NodeName=%s State=RESUME "
			    "failed\n", rl);
		for (size_t i = 0; i < n; i++)
			if (rn[i].in_call && ok) {
				size_t l = strlen(rn[i].action);	/* after "... confirmed (...)" */

				rn[i].drained = 0;
				snprintf(rn[i].action + l, sizeof(rn[i].action) - l, "%sresumed",
				    l ? "; " : "");
			}
		rc = ok ? rc : r;
		free(rl);
		if (r == CALL_TIMED_OUT)
			break;
	}
	return rc;
}

/* After a call timed out: the nodes whose drain or resume was not called
 * (in_call: the resume call that timed out) say so; each is due again
 * next sweep. */
static void
note_not_called(struct rnode *rn, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((rn[i].reason && !rn[i].called) ||
		    (rn[i].want_resume && rn[i].drained && !rn[i].in_call))
			snprintf(rn[i].action, sizeof(rn[i].action), "not %s: an earlier scontrol "
			    "call of this sweep timed out", rn[i].reason ? "drained" : "resumed");
}

/* Do the drains and the batched resume; 0 or -1.  Each call's nodes are
 * recorded by its own outcome: a drain that took is remembered (and
 * resumed later) even when the resume call failed.  After a call that
 * timed out none is made (note_not_called): each would hold the sweep
 * lock as long again, a hung slurmctld once per distinct drain reason. */
static int
act(struct rnode *rn, size_t n, const struct sweep_drain_opts *o, FILE *out)
{
	int drain_rc = drain_nodes(rn, n, o, out), resume_rc = CALL_TIMED_OUT;

	if (drain_rc != CALL_TIMED_OUT)
		resume_rc = resume_nodes(rn, n, o, out);
	if (drain_rc == CALL_TIMED_OUT || resume_rc == CALL_TIMED_OUT) {
		fprintf(stderr, "knobctl sweep: %s timed out: no further scontrol call this "
		    "sweep\n", o->scontrol);
		note_not_called(rn, n);
	}
	for (size_t i = 0; i < n; i++) {
		free(rn[i].reason);
		rn[i].reason = NULL;
	}
	return drain_rc == 0 && resume_rc == 0 ? 0 : -1;
}

/* Ask Slurm about the nodes due for a drain or resume (one scontrol show
 * per SWEEP_SLURM_LIST_MAX bytes of names), then act.  0 or -1. */
static int
drain_and_resume(struct rnode *rn, size_t n, const struct sweep_drain_opts *o, FILE *out)
{
	size_t pos = 0, lists = 0;
	char *list;

	for (size_t i = 0; i < n; i++)
		rn[i].due = rn[i].want_drain || rn[i].want_resume || rn[i].recheck;
	while ((list = next_list(rn, n, offsetof(struct rnode, due), &pos)) != NULL) {
		int bad = slurm_show(o->scontrol, rn, n, list) < 0;

		if (bad)
			fprintf(stderr, "knobctl sweep: %s -o show node %s failed; nothing drained "
			    "or resumed\n", o->scontrol, list);
		free(list);
		lists++;
		if (bad)
			return -1;
	}
	if (lists == 0)
		return 0;
	recheck_drains(rn, n);
	filter_by_slurm(rn, n);
	return act(rn, n, o, out);
}

int
sweep_record(struct ctl *ctl, const struct sweep_run *run, const struct sweep_policy *pol,
    const struct sweep_drain_opts *opts, FILE *out)
{
	struct rnode *rn = xcalloc(run->n ? run->n : 1, sizeof(*rn));
	int lock = sweep_lock(ctl), rc = -1;	/* from the read to the write */
	sqlite3 *db = lock >= 0 ? sweep_db(ctl) : NULL;

	if (db == NULL)
		goto out;
	for (size_t i = 0; i < run->n; i++)
		rn[i].sn = &run->nodes[i];
	load_nodes(db, rn, run->n);
	decide(rn, run->n, pol);
	rc = 0;
	if (opts->drain)
		rc = drain_and_resume(rn, run->n, opts, out);
	else
		for (size_t i = 0; i < run->n; i++)
			if (rn[i].want_drain || rn[i].want_resume)
				snprintf(rn[i].action, sizeof(rn[i].action), "would %s (no --drain)",
				    rn[i].want_drain ? "drain" : "resume");
	if (store(db, run, rn, run->n) < 0)
		rc = -1;
out:
	sqlite3_close(db);
	if (lock >= 0)
		close(lock);
	free(rn);
	return rc;
}

/* One sweep_history row (time, state, findings, action) as JSON. */
static json_object *
history_json(sqlite3_stmt *q)
{
	static const char *const keys[] = { "time", "state", "findings", "action" };
	json_object *o = json_object_new_object();

	for (int i = 0; i < (int)nitems(keys); i++) {
		const char *v = (const char *)sqlite3_column_text(q, i);

		json_object_object_add(o, keys[i], json_object_new_string(v ? v : ""));
	}
	return o;
}

/* One sweep_history row as one line of text (control characters in the
 * findings, a mount path's newline, as \xNN). */
static void
history_line(FILE *f, sqlite3_stmt *q)
{
	const char *action = (const char *)sqlite3_column_text(q, 3);
	const char *raw = (const char *)sqlite3_column_text(q, 2);
	char *found = str_visible_dup(raw ? raw : "", 0);

	fprintf(f, "%s  %-11s %s%s%s\n", sqlite3_column_text(q, 0), sqlite3_column_text(q, 1),
	    found, action && action[0] ? "  => " : "", action ? action : "");
	free(found);
}

/* The history query of a database opened for reading (NULL statement: no
 * sweep stored there yet, its tables not made).  0, or -1 with the reason
 * on stderr naming the file. */
static int
history_query(struct ctl *ctl, sqlite3 *db, sqlite3_stmt **q)
{
	char path[PATH_MAX];

	*q = NULL;
	if (sqlite3_prepare_v2(db, "SELECT strftime('%Y-%m-%dT%H:%M:%SZ', t, 'unixepoch'), "
	    "state, findings, action FROM sweep_history WHERE node = ? ORDER BY run DESC "
	    "LIMIT ?", -1, q, NULL) == SQLITE_OK ||
	    strstr(sqlite3_errmsg(db), "no such table") != NULL)
		return 0;
	fprintf(stderr, "knobctl sweep history: results database %s: %s\n",
	    results_db_path(ctl, path, sizeof(path)), sqlite3_errmsg(db));
	return -1;
}

int
sweep_history(struct ctl *ctl, const char *node, int limit)
{
	sqlite3 *db = results_open_existing(ctl);	/* read: nothing made or migrated */
	sqlite3_stmt *q = NULL;
	json_object *rows = ctl->json ? json_object_new_array() : NULL;
	int n = 0;

	if (db == NULL || history_query(ctl, db, &q) < 0) {	/* could not run, as a sweep */
		fprintf(stderr, "knobctl sweep history: cannot read the results database\n");
		sqlite3_close(db);
		json_object_put(rows);
		return SWEEP_EXIT_ERROR;
	}
	sqlite3_bind_text(q, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 2, limit);
	for (; q && sqlite3_step(q) == SQLITE_ROW; n++)
		if (rows)
			json_object_array_add(rows, history_json(q));
		else
			history_line(ctl->out, q);
	sqlite3_finalize(q);
	sqlite3_close(db);
	if (rows) {	/* {"node": ..., "sweeps": [newest first]} */
		json_object *doc = json_object_new_object();

		json_object_object_add(doc, "node", json_object_new_string(node));
		json_object_object_add(doc, "sweeps", rows);
		output_doc(ctl->out, doc);
	}
	if (n == 0) {
		fprintf(stderr, "knobctl sweep history: no sweeps recorded for %s\n", node);
		return 1;
	}
	return 0;
}
