/* Benchmark phases in the agent: PhasePrepare / PhaseReady / PhaseGo /
 * PhaseProgress / PhaseResult / PhaseAbort, the controller lease, and the
 * files a phase keeps for the next one.  The loop thread only flips flags;
 * preparing, running and cleaning up happen on worker threads (one runner
 * per phase, on the worker pool: agent_work), which answer through agent_post.
 *
 * Stonewall across nodes (IOR's wear-out): when every thread of the node
 * stopped at the stonewall (or finished), the runner sends a PhaseProgress
 * with at_stonewall and the node's largest count; the controller answers
 * every node with PhaseGo{wearout, wearout_ops = largest count of the whole
 * phase} and the threads run on to that count.  While they wait, the lease
 * still runs: a silent controller aborts the phase as at any other time.
 *
 * Release: a PhaseAbort with only workdir_id removes the files kept for
 * that workdir on a worker and is answered, once they are gone, with a
 * PhaseResult carrying released_workdir, so the controller can wait for the
 * clean-up before it exits.  Meanwhile the tick says every second that it
 * is still at it, with how many entries it removed so far (a delete stuck
 * in the kernel shows none and the controller stops waiting).  A clean-up
 * runs on a thread of its own, so that a stuck one holds no pool thread,
 * and no phase is prepared in a workdir whose clean-up is still running.
 * Every result and release answer says what became of the files
 * (PhaseResult.files: removed, kept, left), so that the controller never
 * guesses: a phase that ended before the controller's abort came keeps
 * them (--keep: for the user).
 *
 * The lease covers every state after Prepare: a phase that is preparing,
 * ready, running, and the files a finished phase keeps.  No word from the
 * controller for lease_s seconds aborts the phase or removes the kept
 * files.  The controller's socket also gets keepalive and TCP_USER_TIMEOUT
 * at twice the lease, so a cut link closes it (which removes the same).
 *
 * Orphans: before a phase creates DIR/knob.<workdir>, a record of what it
 * will write goes to STATE/bench/<workdir>+<phase>.json; it is removed once
 * the files are.  Records still present at start-up belong to an agent
 * that died (SIGKILL, power): their files are removed through the same
 * openat/O_NOFOLLOW walk (bench_cleanup_params), and the log says so. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "agent.h"
#include "bench.h"
#include "log.h"
#include "tune.h"
#include "util.h"

#define BENCH_MAX_PHASES	4	/* concurrent benchmark jobs per agent */
#define BENCH_DEFAULT_LEASE_S	AGENT_LEASE_DEFAULT_S
#define BENCH_MAX_LEASE_S	86400	/* a day: longer leases are clamped (lease_s * 1000
					 * and the keepalive times stay in range) */
#define TEST_RELEASE_MAX_S	3600	/* $KNOB_TEST_SLOW/STUCK_RELEASE: at most an hour */
#define TEST_BUSY_PREPARE_MAX	100	/* $KNOB_TEST_BUSY_PREPARE: larger is ignored */
#define BENCH_RECORDS		"bench"	/* under the state directory */
#define STR_(x)			#x
#define STR(x)			STR_(x)

enum { PH_PREPARING, PH_READY, PH_RUNNING, PH_FINISHING };

struct bphase {
	struct bphase *next;
	struct agent *a;
	uint64_t conn_id;
	uint64_t prep_id, go_id;
	char phase_id[BENCH_ID_MAX + 1];
	int state;
	int go, aborted;
	char reason[128];
	uint64_t last_act_ns;		/* monotonic */
	uint32_t lease_s;
	struct bench_job *job;
	struct bench_params *inherit;	/* kept workdir this phase took over */
	uint64_t pagepool;		/* GPFS pagepool, bytes (GPFS only) */
	char fs_type[32];		/* of DIR, from the mount table */
	/* first done: the controller gets this node's first thread end and
	 * answers with the moment the first thread of the whole phase ended */
	int fd_sync, fd_posted, fd_have;
	uint64_t fd_ns;
	uint64_t lock;			/* the node's tuning lock, held for the phase (tune.h) */
	char cleanup_err[1024];		/* its files could not all be removed at its end */
	int kept;			/* its files were kept at its end (finish_phase) */
};

/* Files a keep_files phase left for a later phase of the same controller. */
struct kept {
	struct kept *next;
	uint64_t conn_id;
	uint64_t last_act_ns;		/* the lease goes on while files are kept */
	uint32_t lease_s;
	struct bench_params p;
};

struct bench_state {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct bphase *phases;
	struct kept *kept;
	int test_die_on_release;	/* $KNOB_TEST_DIE_ON_RELEASE with --test-hooks */
	int test_no_files;		/* $KNOB_TEST_NO_FILES with --test-hooks: results do not
					 * say what became of the files (PhaseResult.files), as
					 * an agent before the field */
	int test_submit_eagain;		/* $KNOB_TEST_SUBMIT_EAGAIN with --test-hooks, until used */
	int test_stall_io;		/* $KNOB_TEST_STALL_IO with --test-hooks, until used */
	unsigned test_slow_release_s;	/* $KNOB_TEST_SLOW_RELEASE with --test-hooks: seconds
					 * the first release's clean-up is held back */
	unsigned test_slow_cleanup_s;	/* $KNOB_TEST_SLOW_CLEANUP with --test-hooks: seconds
					 * the first ended phase's clean-up is held back */
	int test_stuck_release;		/* $KNOB_TEST_STUCK_RELEASE with --test-hooks, until used */
	unsigned test_stuck_release_s;	/* its value: seconds stuck, 0 until the agent stops */
	int test_busy_prepare;		/* $KNOB_TEST_BUSY_PREPARE with --test-hooks: prepares
					 * still to be answered busy (no runner thread) */
	struct cleanup_arg *releasing;	/* releases being removed on a worker */
	struct bench_stall stall;	/* where that phase's thread waits until the agent stops */
};

/* STATE/bench/<workdir>+<phase>.json for p. */
static void
record_path(const struct agent *a, const struct bench_params *p, char *buf, size_t len)
{
	snprintf(buf, len, "%s/" BENCH_RECORDS "/%s+%s.json", a->state_dir, p->workdir_id,
	    p->phase_id);
}

/* Record what p will write, durably, before it is created.  0 or -1. */
static int
orphan_record(struct agent *a, const struct bench_params *p)
{
	json_object *o = json_object_new_object(), *r = json_object_new_array();
	char path[PATH_MAX + 2 * BENCH_ID_MAX + 32];
	const char *txt;
	int rc;

	json_object_object_add(o, "dir", json_object_new_string(p->dir));
	json_object_object_add(o, "workdir", json_object_new_string(p->workdir_id));
	json_object_object_add(o, "phase", json_object_new_string(p->phase_id));
	json_object_object_add(o, "kind", json_object_new_int(p->kind));
	json_object_object_add(o, "node_index", json_object_new_int64(p->node_index));
	for (size_t i = 0; i < p->nranks; i++)
		json_object_array_add(r, json_object_new_int64(p->ranks[i]));
	json_object_object_add(o, "ranks", r);
	txt = json_object_to_json_string(o);
	record_path(a, p, path, sizeof(path));
	rc = write_file_atomic(path, txt, strlen(txt), 0600);
	json_object_put(o);
	if (rc < 0)
		log_warnx("%s: %s", path, strerror(-rc));
	return rc < 0 ? -1 : 0;
}

/* The files of p are gone (or are the user's to keep): drop the record. */
static void
orphan_forget(struct agent *a, const struct bench_params *p)
{
	char path[PATH_MAX + 2 * BENCH_ID_MAX + 32];

	record_path(a, p, path, sizeof(path));
	if (unlink(path) < 0 && errno != ENOENT)
		log_warn("%s", path);
}

/* Rebuild from a record what bench_cleanup_params needs.  0 or -1. */
static int
record_params(json_object *o, struct bench_params *p)
{
	json_object *v, *ranks;
	const char *dir, *wid, *pid;

	memset(p, 0, sizeof(*p));
	if (!json_object_object_get_ex(o, "dir", &v) || (dir = json_object_get_string(v)) == NULL ||
	    !json_object_object_get_ex(o, "workdir", &v) ||
	    (wid = json_object_get_string(v)) == NULL || bench_check_id(wid) < 0 ||
	    !json_object_object_get_ex(o, "phase", &v) || (pid = json_object_get_string(v)) == NULL ||
	    !json_object_object_get_ex(o, "ranks", &ranks) ||
	    !json_object_is_type(ranks, json_type_array) || dir[0] != '/' ||
	    strlen(dir) >= sizeof(p->dir))
		return -1;
	snprintf(p->dir, sizeof(p->dir), "%s", dir);
	snprintf(p->workdir_id, sizeof(p->workdir_id), "%s", wid);
	snprintf(p->phase_id, sizeof(p->phase_id), "%s", pid);
	if (json_object_object_get_ex(o, "kind", &v))
		p->kind = json_object_get_int(v);
	if (json_object_object_get_ex(o, "node_index", &v))
		p->node_index = (uint32_t)json_object_get_int64(v);
	p->nranks = json_object_array_length(ranks);
	p->ranks = xcalloc(p->nranks ? p->nranks : 1, sizeof(*p->ranks));
	for (size_t i = 0; i < p->nranks; i++)
		p->ranks[i] = (uint32_t)json_object_get_int64(json_object_array_get_idx(ranks, i));
	return 0;
}

/* Start-up: remove the files of every phase an earlier run recorded and
 * did not finish cleaning up. */
static void
orphans_remove(struct agent *a)
{
	char dir[PATH_MAX + 16], path[PATH_MAX + 300];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/" BENCH_RECORDS, a->state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		log_warn("mkdir %s", dir);
		return;
	}
	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		struct bench_params p;
		json_object *o;

		if (de->d_name[0] == '.' || strstr(de->d_name, ".json") == NULL)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		o = json_object_from_file(path);
		if (o == NULL || record_params(o, &p) < 0) {
			log_warnx("%s: not a phase record; left alone", path);
			json_object_put(o);
			continue;
		}
		json_object_put(o);
		if (bench_cleanup_params(&p) < 0)
			log_warnx("orphaned benchmark files %s/knob.%s (phase %s): clean-up "
			    "incomplete; record kept", p.dir, p.workdir_id, p.phase_id);
		else {
			log_info("removed orphaned benchmark files %s/knob.%s of phase %s (%zu "
			    "rank(s)), left by an earlier run", p.dir, p.workdir_id, p.phase_id,
			    p.nranks);
			unlink(path);
		}
		bench_params_free(&p);
	}
	closedir(d);
}

static int
bench_init(struct agent *a)
{
	struct bench_state *bs = xcalloc(1, sizeof(*bs));

	pthread_mutex_init(&bs->mu, NULL);
	pthread_cond_init(&bs->cv, NULL);
	bs->test_die_on_release = a->cfg.test_hooks && getenv("KNOB_TEST_DIE_ON_RELEASE") != NULL;
	bs->test_submit_eagain = a->cfg.test_hooks && getenv("KNOB_TEST_SUBMIT_EAGAIN") != NULL;
	bs->test_stall_io = a->cfg.test_hooks && getenv("KNOB_TEST_STALL_IO") != NULL;
	bs->test_no_files = a->cfg.test_hooks && getenv("KNOB_TEST_NO_FILES") != NULL;
	if (a->cfg.test_hooks) {
		bs->test_slow_release_s = (unsigned)env_number("KNOB_TEST_SLOW_RELEASE", 0,
		    TEST_RELEASE_MAX_S, 0);
		bs->test_slow_cleanup_s = (unsigned)env_number("KNOB_TEST_SLOW_CLEANUP", 0,
		    TEST_RELEASE_MAX_S, 0);
	}
	if (a->cfg.test_hooks && getenv("KNOB_TEST_STUCK_RELEASE") != NULL) {
		bs->test_stuck_release = 1;	/* 0 or out of range: until the agent stops */
		bs->test_stuck_release_s = (unsigned)env_number("KNOB_TEST_STUCK_RELEASE", 0,
		    TEST_RELEASE_MAX_S, 0);
	}
	if (a->cfg.test_hooks)
		bs->test_busy_prepare = (int)env_number("KNOB_TEST_BUSY_PREPARE", 0,
		    TEST_BUSY_PREPARE_MAX, 0);
	pthread_mutex_init(&bs->stall.mu, NULL);
	pthread_cond_init(&bs->stall.cv, NULL);
	a->bench = bs;
	orphans_remove(a);
	return 0;
}

/* Abort a phase (bs->mu held). */
static void
phase_abort_locked(struct bench_state *bs, struct bphase *ph, const char *reason)
{
	if (ph->state == PH_FINISHING)
		return;
	if (!ph->aborted) {
		ph->aborted = 1;
		snprintf(ph->reason, sizeof(ph->reason), "%s", reason);
		log_warnx("phase %s: aborting: %s", ph->phase_id, reason);
	}
	bench_job_abort(ph->job, reason);
	pthread_cond_broadcast(&bs->cv);
}

static void
kept_free(struct kept *k)
{
	bench_params_free(&k->p);
	free(k);
}

/* Put the files of p (moved into the entry) first on the kept list, for
 * connection conn_id under a lease of lease_s.  bs->mu held. */
static void
kept_push(struct bench_state *bs, uint64_t conn_id, uint32_t lease_s,
    const struct bench_params *p)
{
	struct kept *k = xcalloc(1, sizeof(*k));

	k->conn_id = conn_id;
	k->last_act_ns = now_mono_ns();
	k->lease_s = lease_s;
	k->p = *p;
	k->next = bs->kept;
	bs->kept = k;
}

/* Who to tell when a release is done (ack_id 0: nobody). */
struct release_ack {
	uint64_t conn_id, ack_id;
	char workdir[BENCH_ID_MAX + 1];
	int kept;			/* persist_files: left for the user, not removed */
};

struct cleanup_arg {
	struct cleanup_arg *next;	/* on bs->releasing while it runs */
	struct agent *a;
	struct bench_state *bs;
	struct kept *list;
	struct release_ack ack;
	_Atomic uint64_t removed;	/* entries removed so far (the progress reported) */
	unsigned slow_s;		/* test hook: hold the clean-up back this long */
	int stuck;			/* test hook: the clean-up is stuck (removes nothing) */
	unsigned stuck_s;		/* that long, or until the agent stops when 0 */
};

/* What a result says became of the files (PhaseResult.files): left when
 * err says what could not be removed, else kept or removed; not said
 * under the test hook, as by an agent before the field. */
static Knob__PhaseFiles
files_said(const struct bench_state *bs, int kept, const char *err)
{
	if (bs->test_no_files)
		return KNOB__PHASE_FILES__PHASE_FILES_UNKNOWN;
	if (err[0])
		return KNOB__PHASE_FILES__PHASE_FILES_LEFT;
	return kept ? KNOB__PHASE_FILES__PHASE_FILES_KEPT : KNOB__PHASE_FILES__PHASE_FILES_REMOVED;
}

/* Answer a release PhaseAbort: PhaseResult{released_workdir}; ok when
 * err is empty, else err names what could not be removed; files says
 * whether they were removed or (persist_files) left for the user.  Any
 * thread. */
static void
post_released(struct agent *a, const struct release_ack *ra, const char *err)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseResult r = KNOB__PHASE_RESULT__INIT;

	if (ra->ack_id == 0)
		return;
	r.files = files_said(a->bench, ra->kept, err);
	r.ok = err[0] == '\0';
	r.error = (char *)(uintptr_t)err;
	r.node = a->node;
	r.released_workdir = (char *)(uintptr_t)ra->workdir;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_RESULT;
	env.phase_result = &r;
	agent_post(a, ra->conn_id, ra->ack_id, &env);
}

/* Tell the controller that the release of ca is still being removed, and
 * how far it got (its wait goes on while the count moves); from the loop's
 * tick, every second. */
static void
post_releasing(struct agent *a, struct cleanup_arg *ca)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseProgress p = KNOB__PHASE_PROGRESS__INIT;
	const struct release_ack *ra = &ca->ack;

	if (ra->ack_id == 0)
		return;
	p.phase_id = (char *)(uintptr_t)"";
	p.releasing_workdir = (char *)(uintptr_t)ra->workdir;
	p.release_removed = atomic_load(&ca->removed);
	p.agent_time_ns = now_real_ns();
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_PROGRESS;
	env.phase_progress = &p;
	agent_post(a, ra->conn_id, ra->ack_id, &env);
}

/* Take ca off the list of releases in progress. */
static void
releasing_drop(struct bench_state *bs, struct cleanup_arg *ca)
{
	struct cleanup_arg **cp;

	pthread_mutex_lock(&bs->mu);
	for (cp = &bs->releasing; *cp && *cp != ca; cp = &(*cp)->next)
		;
	if (*cp)
		*cp = ca->next;
	pthread_mutex_unlock(&bs->mu);
}

/* Test hooks: a clean-up held back secs seconds, each counted in removed
 * (NULL: none) as an entry removed. */
static void
test_hold(unsigned secs, _Atomic uint64_t *removed)
{
	for (unsigned s = 0; s < secs; s++) {
		struct timespec ts = { .tv_sec = 1, .tv_nsec = 0 };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		if (removed)
			atomic_fetch_add(removed, 1);
	}
}

/* Test hooks: $KNOB_TEST_SLOW_RELEASE, a clean-up that takes that long,
 * one large file a second, as removing them on Lustre or GPFS does (each
 * second counts as an entry removed); $KNOB_TEST_STUCK_RELEASE, one whose
 * first unlink does not return (a dead Lustre OST), for that long or until
 * the agent stops, removing nothing meanwhile. */
static void
test_slow_release(struct cleanup_arg *ca)
{
	test_hold(ca->slow_s, &ca->removed);
	if (ca->stuck)
		bench_stall_wait(&ca->bs->stall, ca->stuck_s);
}

/* Work item: remove a list of kept workdirs, then acknowledge; frees the
 * argument and the list (once off bs->releasing: the loop thread reads
 * the list's directories meanwhile, releasing_in). */
static void
cleanup_run(struct work *w)
{
	struct cleanup_arg *ca = w->arg;
	struct kept *k, *next;
	char err[1024] = "";

	test_slow_release(ca);
	for (k = ca->list; k; k = k->next) {
		k->p.removed = &ca->removed;
		if (bench_cleanup_params(&k->p) < 0) {
			if (err[0] == '\0')	/* one workdir per release */
				bench_cleanup_failure(ca->a->node, &k->p, err, sizeof(err));
			log_warnx("%s", err);
		} else {
			log_info("removed the files kept in %s/knob.%s", k->p.dir, k->p.workdir_id);
			orphan_forget(ca->a, &k->p);
		}
	}
	releasing_drop(ca->bs, ca);
	for (k = ca->list; k; k = next) {
		next = k->next;
		kept_free(k);
	}
	post_released(ca->a, &ca->ack, err);
	free(ca);
}

/* Remove an ended phase's files (and those of the workdir it took over);
 * what could not be removed goes into ph->cleanup_err for its result.
 * Test hook ($KNOB_TEST_SLOW_CLEANUP=S with --test-hooks): the first one
 * starts S seconds late, as a delete of many large files takes. */
static void
phase_cleanup(struct bphase *ph)
{
	struct bench_state *bs = ph->a->bench;
	struct bench_job *j = ph->job;
	unsigned slow;

	pthread_mutex_lock(&bs->mu);	/* test hook: the first one is slow */
	slow = bs->test_slow_cleanup_s;
	bs->test_slow_cleanup_s = 0;
	pthread_mutex_unlock(&bs->mu);
	test_hold(slow, NULL);
	if (bench_job_cleanup(j) < 0) {
		bench_cleanup_failure(ph->a->node, &j->p, ph->cleanup_err, sizeof(ph->cleanup_err));
		log_warnx("phase %s: %s", ph->phase_id, ph->cleanup_err);
	} else {
		log_info("phase %s: removed its files in %s/%s%s", ph->phase_id, j->p.dir,
		    j->wname, ph->aborted ? " (aborted)" : "");
		orphan_forget(ph->a, &j->p);
	}
	if (ph->inherit == NULL)
		return;
	if (bench_cleanup_params(ph->inherit) == 0)
		orphan_forget(ph->a, ph->inherit);
	else if (ph->cleanup_err[0] == '\0') {
		bench_cleanup_failure(ph->a->node, ph->inherit, ph->cleanup_err,
		    sizeof(ph->cleanup_err));
		log_warnx("phase %s: %s", ph->phase_id, ph->cleanup_err);
	}
}

/* Stop hook: abort every phase, so that their runners end. */
static void
bench_stop(struct agent *a)
{
	struct bench_state *bs = a->bench;
	struct bphase *ph;

	if (bs == NULL)
		return;
	pthread_mutex_lock(&bs->mu);
	for (ph = bs->phases; ph; ph = ph->next)
		phase_abort_locked(bs, ph, "agent shutting down");
	pthread_mutex_lock(&bs->stall.mu);	/* test hook: the stuck write returns */
	bs->stall.released = 1;
	pthread_cond_broadcast(&bs->stall.cv);
	pthread_mutex_unlock(&bs->stall.mu);
	pthread_mutex_unlock(&bs->mu);
}

/* Fini hook: the core calls it once every work item (runners, clean-ups)
 * has ended; what is still kept is removed here. */
static void
bench_fini(struct agent *a)
{
	struct bench_state *bs = a->bench;
	struct kept *k;

	if (bs == NULL)
		return;
	while ((k = bs->kept) != NULL) {
		bs->kept = k->next;
		if (k->p.persist_files || bench_cleanup_params(&k->p) == 0)
			orphan_forget(a, &k->p);
		kept_free(k);
	}
	pthread_cond_destroy(&bs->stall.cv);
	pthread_mutex_destroy(&bs->stall.mu);
	pthread_cond_destroy(&bs->cv);
	pthread_mutex_destroy(&bs->mu);
	free(bs);
	a->bench = NULL;
}

static void release_kept_locked(struct agent *a, struct bench_state *bs, uint64_t conn_id,
    const char *workdir_id, uint64_t ack_id);

static void
bench_conn_closed(struct agent *a, uint64_t conn_id)
{
	struct bench_state *bs = a->bench;
	struct bphase *ph;

	if (bs == NULL)
		return;
	pthread_mutex_lock(&bs->mu);
	for (ph = bs->phases; ph; ph = ph->next)
		if (ph->conn_id == conn_id)
			phase_abort_locked(bs, ph, "controller connection closed");
	release_kept_locked(a, bs, conn_id, NULL, 0);
	pthread_mutex_unlock(&bs->mu);
}

static void
bench_conn_activity(struct agent *a, uint64_t conn_id)
{
	struct bench_state *bs = a->bench;
	struct bphase *ph;
	uint64_t now = now_mono_ns();

	if (bs == NULL)
		return;
	pthread_mutex_lock(&bs->mu);
	for (ph = bs->phases; ph; ph = ph->next)
		if (ph->conn_id == conn_id)
			ph->last_act_ns = now;
	for (struct kept *k = bs->kept; k; k = k->next)
		if (k->conn_id == conn_id)
			k->last_act_ns = now;
	pthread_mutex_unlock(&bs->mu);
}

/* 1 while a phase is prepared or running on this agent (health probes skip). */
int
bench_active(struct agent *a)
{
	struct bench_state *bs = a->bench;
	int busy;

	if (bs == NULL)
		return 0;
	pthread_mutex_lock(&bs->mu);
	busy = bs->phases != NULL;
	pthread_mutex_unlock(&bs->mu);
	return busy;
}

/* Files kept for a controller that has been silent for their lease are
 * removed (bs->mu held). */
static void
kept_expire_locked(struct agent *a, struct bench_state *bs, uint64_t now)
{
	struct kept *k;

restart:
	for (k = bs->kept; k; k = k->next)
		if (now - k->last_act_ns > (uint64_t)k->lease_s * 1000000000ull) {
			log_warnx("lease expired: no word from the controller for %u s; removing "
			    "the files kept in %s/knob.%s", k->lease_s, k->p.dir, k->p.workdir_id);
			release_kept_locked(a, bs, k->conn_id, NULL, 0);
			goto restart;	/* that controller's entries are gone */
		}
}

static void
bench_tick(struct agent *a)
{
	struct bench_state *bs = a->bench;
	struct bphase *ph;
	uint64_t now = now_mono_ns();
	char why[128];

	if (bs == NULL)
		return;
	pthread_mutex_lock(&bs->mu);
	for (ph = bs->phases; ph; ph = ph->next) {
		if (ph->aborted || ph->state == PH_FINISHING)
			continue;
		if (now - ph->last_act_ns > (uint64_t)ph->lease_s * 1000000000ull) {
			snprintf(why, sizeof(why), "lease expired: no word from the controller "
			    "for %u s", ph->lease_s);
			phase_abort_locked(bs, ph, why);
		} else
			tune_lock_renew(a, ph->lock, ph->lease_s * 1000u + 2000u);
	}
	kept_expire_locked(a, bs, now);
	for (struct cleanup_arg *ca = bs->releasing; ca; ca = ca->next)
		post_releasing(a, ca);
	pthread_mutex_unlock(&bs->mu);
}

/* Post a PhaseReady for ph. */
static void
post_ready(struct bphase *ph, int ok, const char *err)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseReady r = KNOB__PHASE_READY__INIT;

	r.phase_id = ph->phase_id;
	r.ok = ok;
	r.error = (char *)(uintptr_t)(err ? err : "");
	r.warning = ph->job->warning;
	r.mem_total_kb = ph->job->mem_total_kb;
	r.node = ph->a->node;
	r.threads = (uint32_t)ph->job->p.nranks;
	r.stonewall_sync = ph->job->wall_sync;
	r.pagepool_bytes = ph->pagepool;
	r.read_bytes = ph->job->read_bytes;
	r.fs_type = ph->fs_type;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_READY;
	env.phase_ready = &r;
	agent_post(ph->a, ph->conn_id, ph->prep_id, &env);
}

/* Post the live totals; at_wall: every thread is at the stonewall (or
 * done), with the node's largest count for the controller; first_end: the
 * end of this node's first finished thread (first-done sync). */
static void
post_progress(struct bphase *ph, int at_wall, uint64_t first_end)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseProgress p = KNOB__PHASE_PROGRESS__INIT;

	p.phase_id = ph->phase_id;
	p.first_end_ns = first_end;
	bench_job_progress(ph->job, &p.bytes, &p.ops, &p.threads_done);
	p.agent_time_ns = now_real_ns();
	if (at_wall) {
		p.at_stonewall = 1;
		p.stonewall_max_ops = bench_job_wall_max(ph->job);
		log_info("phase %s: at the stonewall, largest count %llu", ph->phase_id,
		    (unsigned long long)p.stonewall_max_ops);
	}
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_PROGRESS;
	env.phase_progress = &p;
	agent_post(ph->a, ph->conn_id, ph->go_id, &env);
}

/* Post the failed Ready of ph, once its files are removed: its error, and
 * what could not be removed. */
static void
post_prepare_failed(struct bphase *ph)
{
	char *err = ph->cleanup_err[0] ? xasprintf("%s; %s", ph->job->err, ph->cleanup_err) :
	    xstrdup(ph->job->err);

	post_ready(ph, 0, err);
	free(err);
}

static void add_measured(struct bphase *ph, Knob__PhaseResult *r);

static void
post_result(struct bphase *ph)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseResult r;

	bench_job_result(ph->job, &r);
	add_measured(ph, &r);
	if (ph->cleanup_err[0])
		r.cleanup_error = xstrdup(ph->cleanup_err);
	r.files = files_said(ph->a->bench, ph->kept, ph->cleanup_err);
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_RESULT;
	env.phase_result = &r;
	if (!r.ok)
		log_warnx("phase %s: %s", ph->phase_id, r.error);
	agent_post(ph->a, ph->conn_id, ph->go_id ? ph->go_id : ph->prep_id, &env);
	bench_result_free(&r);
}

/* First-done sync: tell the controller once when this node's first thread
 * ended. */
static void
maybe_post_first_end(struct bphase *ph)
{
	struct bench_job *j = ph->job;
	uint64_t fe;

	if (!ph->fd_sync || ph->fd_posted)
		return;
	pthread_mutex_lock(&j->mu);
	fe = j->first_end_ns;
	pthread_mutex_unlock(&j->mu);
	if (fe == 0)
		return;
	ph->fd_posted = 1;
	log_info("phase %s: first thread finished", ph->phase_id);
	post_progress(ph, 0, fe);
}

/* Run the timed part: a progress report every second, the stonewall
 * report when every thread is at the wall and the first thread's end
 * (looked for every 100 ms) when it comes. */
static void
run_job(struct bphase *ph)
{
	struct bench_job *j = ph->job;
	uint64_t next = now_mono_ns() + 1000000000ull, now;
	int r, ms;

	for (;;) {
		maybe_post_first_end(ph);
		now = now_mono_ns();
		ms = next > now ? (int)((next - now) / 1000000) : 0;
		r = bench_job_wait(j, ms > 100 ? 100 : ms);
		if (r == BJ_DONE)
			break;
		if (r == BJ_WALL) {
			post_progress(ph, 1, 0);
			continue;
		}
		if (now_mono_ns() >= next) {
			post_progress(ph, 0, 0);
			next = now_mono_ns() + 1000000000ull;
		}
	}
	bench_job_join(j);
	maybe_post_first_end(ph);
}

/* First-done sync: wait for the moment the first thread of the phase ended
 * (PhaseGo.first_done_ns), or an abort (the lease runs meanwhile). */
static void
wait_first_done(struct bphase *ph)
{
	struct bench_state *bs = ph->a->bench;

	if (!ph->fd_posted)
		return;
	pthread_mutex_lock(&bs->mu);
	while (!ph->fd_have && !ph->aborted)
		pthread_cond_wait(&bs->cv, &bs->mu);
	pthread_mutex_unlock(&bs->mu);
}

/* Measured figures in the result: every thread's count at the first-done
 * moment from its checkpoints, and its time at the stonewall. */
static void
add_measured(struct bphase *ph, Knob__PhaseResult *r)
{
	struct bench_job *j = ph->job;

	for (size_t k = 0; k < r->n_threads && k < j->nth; k++) {
		r->threads[k]->stonewall_ns = j->th[k].stonewall_ns;
		if (ph->fd_have)
			bench_ckpt_at(j->th[k].ckpt, &j->th[k], ph->fd_ns,
			    &r->threads[k]->first_done_bytes, &r->threads[k]->first_done_ops);
	}
	if (ph->fd_have)
		r->first_done_ns = ph->fd_ns;
}

/* The file system of the phase's directory, and on GPFS its pagepool (the
 * cache warning compares against it). */
static void
dir_fs(struct bphase *ph)
{
	char real[PATH_MAX];

	if (realpath(ph->job->p.dir, real) == NULL ||
	    facts_fs_type(ph->a, real, ph->fs_type, sizeof(ph->fs_type)) < 0) {
		log_debug("phase %s: file system of %s unknown", ph->phase_id, ph->job->p.dir);
		return;
	}
	log_debug("phase %s: %s is on %s", ph->phase_id, real, ph->fs_type);
	snprintf(ph->job->fs_type, sizeof(ph->job->fs_type), "%s", ph->fs_type);
	if (strcmp(ph->fs_type, "gpfs") == 0)
		ph->pagepool = gpfs_pagepool(ph->a);
}

/* Runner thread of one phase: prepare, Ready, wait for Go, run with
 * progress every second, Result, clean up (or keep for the next phase). */
static void finish_phase(struct bphase *ph, int with_result);

static void
phase_run(struct work *w)
{
	struct bphase *ph = w->arg;
	struct agent *a = ph->a;
	struct bench_state *bs = a->bench;
	struct bench_job *j = ph->job;
	int ok, go;

	ok = orphan_record(a, &j->p) == 0;
	if (!ok)
		snprintf(j->err, sizeof(j->err), "%s: cannot record the phase in %s/" BENCH_RECORDS
		    " (needed to clean up after a crash)", a->node, a->state_dir);
	/* the file system first: striping (Lustre) happens in prepare */
	if (ok)
		dir_fs(ph);
	ok = ok && bench_job_prepare(j) == 0;
	/* checkpoints for first done; the threads wait at the barrier */
	for (size_t k = 0; ok && ph->fd_sync && k < j->nth; k++)
		j->th[k].ckpt = bench_ckpt_new(BENCH_CKPT_MEM / j->nth);
	pthread_mutex_lock(&bs->mu);
	if (ok && ph->aborted) {
		ok = 0;
		snprintf(j->err, sizeof(j->err), "%s: aborted: %s", a->node, ph->reason);
	}
	ph->state = ok ? PH_READY : PH_FINISHING;
	pthread_mutex_unlock(&bs->mu);
	if (!ok) {	/* the failed Ready follows the clean-up (finish_phase) */
		bench_job_abort(j, "prepare failed");
		bench_job_join(j);
		finish_phase(ph, 0);
		return;
	}
	post_ready(ph, 1, NULL);
	pthread_mutex_lock(&bs->mu);
	while (!ph->go && !ph->aborted)
		pthread_cond_wait(&bs->cv, &bs->mu);
	go = ph->go && !ph->aborted;
	if (go)
		ph->state = PH_RUNNING;
	pthread_mutex_unlock(&bs->mu);
	if (!go) {
		bench_job_abort(j, ph->reason);
		bench_job_join(j);
		finish_phase(ph, 1);
		return;
	}
	log_info("phase %s: running", ph->phase_id);
	bench_job_go(j);
	if (bench_kind_is_ext(j->p.kind))
		ext_run(j);
	else {
		run_job(ph);
		wait_first_done(ph);
	}
	post_progress(ph, 0, 0);
	finish_phase(ph, 1);
}

/* Last steps of a runner: decide keep or clean, clean up, post the result
 * (with_result; else the prepare failed: its failed Ready, so that the
 * controller, which may then release and exit, finds the files gone),
 * unlink and free ph. */
static void
finish_phase(struct bphase *ph, int with_result)
{
	struct agent *a = ph->a;
	struct bench_state *bs = a->bench;
	struct bench_job *j = ph->job;
	struct bphase **pp;
	int keep;

	/* From here on the phase is over: a closing connection no longer
	 * aborts it, it removes what is kept (the record exists already). */
	pthread_mutex_lock(&bs->mu);
	ph->state = PH_FINISHING;
	/* Keep a finished phase's files until the controller releases them
	 * (PhaseAbort with workdir_id) or its connection closes: another node
	 * may still read them (reader shift, a shared file). */
	keep = !ph->aborted && !j->abort && with_result;
	/* --keep: a phase cut short on the files a finished one kept (a
	 * composite's read) leaves them, as --keep promised that one */
	if (ph->inherit && ph->inherit->persist_files)
		keep = 1;
	ph->kept = keep;
	if (keep) {
		struct bench_params copy;

		bench_params_copy(&copy, &j->p);
		kept_push(bs, ph->conn_id, ph->lease_s, &copy);
		if (ph->inherit) {
			kept_push(bs, ph->conn_id, ph->lease_s, ph->inherit);
			free(ph->inherit);
			ph->inherit = NULL;
		}
	}
	pthread_mutex_unlock(&bs->mu);
	/* clean up before the result, so that the controller, which releases
	 * nothing before every result is in, finds the files gone */
	if (!keep)
		phase_cleanup(ph);
	if (with_result)
		post_result(ph);
	else
		post_prepare_failed(ph);
	pthread_mutex_lock(&bs->mu);
	for (pp = &bs->phases; *pp; pp = &(*pp)->next)
		if (*pp == ph) {
			*pp = ph->next;
			break;
		}
	pthread_cond_broadcast(&bs->cv);
	pthread_mutex_unlock(&bs->mu);
	tune_lock_drop(a, ph->lock);
	log_info("phase %s finished", ph->phase_id);
	if (ph->inherit) {
		bench_params_free(ph->inherit);
		free(ph->inherit);
	}
	for (size_t k = 0; k < j->nth; k++)
		bench_ckpt_free(j->th[k].ckpt);
	bench_job_free(j);
	free(ph);
}

/* 1 when the files of a release in dir/knob.<workdir> are still being
 * removed (bs->mu held). */
static int
releasing_in(const struct bench_state *bs, const char *dir, const char *workdir)
{
	for (const struct cleanup_arg *ca = bs->releasing; ca; ca = ca->next)
		for (const struct kept *k = ca->list; k; k = k->next)
			if (strcmp(k->p.workdir_id, workdir) == 0 && strcmp(k->p.dir, dir) == 0)
				return 1;
	return 0;
}

static struct bphase *
phase_find(struct bench_state *bs, const char *id, uint64_t conn_id)
{
	for (struct bphase *ph = bs->phases; ph; ph = ph->next)
		if (strcmp(ph->phase_id, id) == 0 && ph->conn_id == conn_id)
			return ph;
	return NULL;
}

/* Reply PhaseReady{ok=false} from the loop thread. */
static int
reply_not_ready(struct agent *a, struct aconn *c, uint64_t id, const char *pid,
    const char *err)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseReady r = KNOB__PHASE_READY__INIT;
	char msg[600];

	snprintf(msg, sizeof(msg), "%s: %s", a->node, err);
	r.phase_id = (char *)(uintptr_t)(pid ? pid : "");
	r.error = msg;
	r.node = a->node;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_READY;
	env.phase_ready = &r;
	return agent_reply(a, c, id, &env);
}

/* Start ph's runner on a thread of its own: 0, or -1 when none could
 * start (agent_work_long answered c "busy", EAGAIN: the caller undoes the
 * phase, so the controller may send the prepare again).  Test hook
 * ($KNOB_TEST_BUSY_PREPARE=N with --test-hooks): the first N prepares fail
 * so, as when the node is out of threads.  bs->mu held. */
static int
runner_start(struct agent *a, struct aconn *c, Knob__Envelope *req, struct bphase *ph)
{
	struct bench_state *bs = a->bench;

	if (bs->test_busy_prepare > 0) {
		bs->test_busy_prepare--;
		log_warnx("phase %s: test hook: no runner thread (%d more)", ph->phase_id,
		    bs->test_busy_prepare);
		agent_reply_error(a, c, req->id, EAGAIN, "%s: cannot start a worker thread",
		    a->node);
		return -1;
	}
	return agent_work_long(a, c, req, phase_run, NULL, ph);
}

/* Why a phase with parameters p cannot be prepared for connection c now
 * (too many phases, its id in use, its directory still being removed; the
 * last says it in err), or NULL.  bs->mu held. */
static const char *
prepare_refusal(struct bench_state *bs, const struct bench_params *p, uint64_t conn_id,
    char *err, size_t errlen)
{
	struct bphase *it;
	int n = 0;

	for (it = bs->phases; it; it = it->next)
		n++;
	if (n >= BENCH_MAX_PHASES)
		return "too many benchmark phases running on this node (at most "
		    STR(BENCH_MAX_PHASES) ")";
	if (phase_find(bs, p->phase_id, conn_id))
		return "phase id already in use";
	if (releasing_in(bs, p->dir, p->workdir_id)) {
		/* never write where a delete (perhaps stuck in the kernel) runs */
		snprintf(err, errlen, "the files of an earlier phase in %s/knob.%s are still "
		    "being removed (the delete may be stuck); not preparing a phase there",
		    p->dir, p->workdir_id);
		return err;
	}
	return NULL;
}

/* Move the files a previous phase of connection conn_id kept in p's
 * workdir, if any, from the kept list to ph->inherit.  bs->mu held. */
static void
prepare_inherit(struct bench_state *bs, struct bphase *ph, const struct bench_params *p,
    uint64_t conn_id)
{
	struct kept **kp, *k;

	for (kp = &bs->kept; (k = *kp) != NULL; kp = &k->next) {
		if (k->conn_id == conn_id && strcmp(k->p.workdir_id, p->workdir_id) == 0 &&
		    strcmp(k->p.dir, p->dir) == 0) {
			*kp = k->next;
			ph->inherit = xmalloc(sizeof(*ph->inherit));
			*ph->inherit = k->p;
			free(k);
			break;
		}
	}
}

/* ph's job from p and the spec's controller-side fields, with the test
 * hooks that apply to it (p is moved into the job).  bs->mu held. */
static void
prepare_job(struct agent *a, struct bphase *ph, const Knob__PhaseSpec *s,
    struct bench_params *p)
{
	struct bench_state *bs = a->bench;

	/* test hook: a slower node, for stonewall tests */
	if (a->cfg.test_hooks && s->test_rate_iops &&
	    (p->rate_iops == 0 || s->test_rate_iops < p->rate_iops))
		p->rate_iops = s->test_rate_iops;
	snprintf(p->mpirun, sizeof(p->mpirun), "%s", s->mpirun ? s->mpirun : "");
	snprintf(p->mpirun_args, sizeof(p->mpirun_args), "%s",
	    s->mpirun_args ? s->mpirun_args : "");
	ph->fd_sync = s->first_done_sync && !bench_kind_is_ext(p->kind);
	ph->job = bench_job_new(p, a->node);
	ph->job->wall_sync = s->stonewall_sync && s->stonewall_s &&
	    !bench_kind_is_ext(ph->job->p.kind);
	/* test hook: the first phase with queued I/O has a submit fail */
	if (bs->test_submit_eagain && ph->job->p.queue_depth > 1) {
		atomic_store(&ph->job->test_submit_eagain, 1);
		bs->test_submit_eagain = 0;
	}
	/* test hook: the first data phase has a write that never returns */
	if (bs->test_stall_io && !bench_kind_is_ext(ph->job->p.kind)) {
		ph->job->test_stall = &bs->stall;
		bs->test_stall_io = 0;
	}
}

/* A new phase for request req on c, holding tune lock `lock`, linked first
 * in bs->phases (freed by its runner, or by prepare_undo).  bs->mu held. */
static struct bphase *
prepare_phase(struct agent *a, struct aconn *c, Knob__Envelope *req,
    struct bench_params *p, uint64_t lock, uint32_t lease_s)
{
	struct bench_state *bs = a->bench;
	struct bphase *ph = xcalloc(1, sizeof(*ph));

	ph->a = a;
	ph->lock = lock;
	ph->conn_id = c->id;
	ph->prep_id = req->id;
	snprintf(ph->phase_id, sizeof(ph->phase_id), "%s", p->phase_id);
	ph->lease_s = lease_s;
	ph->last_act_ns = now_mono_ns();
	/* take over files a previous phase of this controller kept */
	prepare_inherit(bs, ph, p, c->id);
	prepare_job(a, ph, req->phase_prepare->spec, p);
	ph->next = bs->phases;
	bs->phases = ph;
	return ph;
}

/* Undo prepare_phase when its runner could not start: unlink and free ph,
 * its inherited files back to the kept list.  bs->mu held (and released
 * here); the tune lock dropped. */
static void
prepare_undo(struct agent *a, struct bphase *ph)
{
	struct bench_state *bs = a->bench;
	uint64_t lock = ph->lock;

	bs->phases = ph->next;
	if (ph->inherit) {	/* back to the kept list it came from */
		kept_push(bs, ph->conn_id, ph->lease_s, ph->inherit);
		free(ph->inherit);
	}
	pthread_mutex_unlock(&bs->mu);
	bench_job_free(ph->job);
	free(ph);
	tune_lock_drop(a, lock);
}

/* The lease a spec asks for, its default and cap applied. */
static uint32_t
prepare_lease_s(const Knob__PhaseSpec *s)
{
	return s->lease_s == 0 ? BENCH_DEFAULT_LEASE_S :
	    s->lease_s > BENCH_MAX_LEASE_S ? BENCH_MAX_LEASE_S : s->lease_s;
}

/* PhasePrepare: validate the spec, take the tune lock, register the phase
 * and start its runner (which answers PhaseReady); a refusal answers
 * PhaseReady{ok=false}. */
int
h_phase_prepare(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	struct bench_state *bs = a->bench;
	const Knob__PhaseSpec *s = req->phase_prepare->spec;
	struct bench_params p;
	struct bphase *ph;
	char err[512], owner[300];
	const char *why;
	uint64_t lock;
	uint32_t lease_s;

	if (bench_params_from_spec(&p, s, a->sysroot, err, sizeof(err)) < 0)
		return reply_not_ready(a, c, req->id, s ? s->phase_id : "", err);
	/* no tuning under a running phase, and no phase under a transaction */
	snprintf(owner, sizeof(owner), "%s (bench, connection %llu)", c->peer,
	    (unsigned long long)c->id);
	lease_s = prepare_lease_s(s);
	if (tune_lock_take(a, owner, lease_s * 1000u + 2000u, 0, NULL, &lock, err,
	    sizeof(err)) < 0) {
		bench_params_free(&p);
		return reply_not_ready(a, c, req->id, s->phase_id, err);
	}
	pthread_mutex_lock(&bs->mu);
	if ((why = prepare_refusal(bs, &p, c->id, err, sizeof(err))) != NULL) {
		pthread_mutex_unlock(&bs->mu);
		bench_params_free(&p);
		tune_lock_drop(a, lock);
		return reply_not_ready(a, c, req->id, s->phase_id, why);
	}
	ph = prepare_phase(a, c, req, &p, lock, lease_s);
	log_info("phase %s: preparing %s in %s (%zu threads)", s->phase_id, s->kind, s->dir,
	    s->n_ranks);
	/* a phase may wait for GO and run for long: a thread of its own */
	if (runner_start(a, c, req, ph) < 0) {
		prepare_undo(a, ph);
		return 0;
	}
	lease_s = ph->lease_s;	/* once unlocked, the runner may finish and free ph */
	pthread_mutex_unlock(&bs->mu);
	/* a cut link must end this connection within twice the lease */
	agent_conn_lease(a, c->id, lease_s);
	agent_timer_update(a);	/* the lease needs the tick */
	return 0;
}

int
h_phase_go(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	struct bench_state *bs = a->bench;
	const char *id = req->phase_go->phase_id;
	struct bphase *ph;

	pthread_mutex_lock(&bs->mu);
	ph = phase_find(bs, id ? id : "", c->id);
	if (req->phase_go->first_done) {
		if (ph) {
			ph->fd_ns = req->phase_go->first_done_ns;
			ph->fd_have = 1;
			pthread_cond_broadcast(&bs->cv);
		}
		pthread_mutex_unlock(&bs->mu);
		return 0;
	}
	if (req->phase_go->wearout) {
		/* the global stonewall target; a phase that ended meanwhile
		 * (all its threads finished) does not need it */
		if (ph && ph->state == PH_RUNNING && ph->job->wall_sync) {
			log_info("phase %s: wearing out to %llu ops", ph->phase_id,
			    (unsigned long long)req->phase_go->wearout_ops);
			bench_job_wearout(ph->job, req->phase_go->wearout_ops);
		} else
			log_debug("phase %s: wear-out target for no running phase",
			    id ? id : "");
		pthread_mutex_unlock(&bs->mu);
		return 0;
	}
	if (ph == NULL || ph->state != PH_READY || ph->go) {
		pthread_mutex_unlock(&bs->mu);
		return agent_reply_error(a, c, req->id, ENOENT, "%s: no prepared phase '%s'",
		    a->node, id ? id : "");
	}
	ph->go = 1;
	ph->go_id = req->id;
	pthread_cond_broadcast(&bs->cv);
	pthread_mutex_unlock(&bs->mu);
	return 0;
}

/* A release whose clean-up thread could not start: its files go back to
 * the kept list (a later release, the lease or the connection's end
 * removes them) and the controller hears that they are still there.
 * Frees ca.  bs->mu held. */
static void
release_failed_locked(struct agent *a, struct bench_state *bs, struct cleanup_arg *ca)
{
	struct kept *k, *next;
	char err[300];

	for (k = ca->list; k; k = next) {
		next = k->next;
		k->next = bs->kept;
		bs->kept = k;
	}
	snprintf(err, sizeof(err), "%s: cannot start a thread to remove the files of knob.%s; "
	    "kept until the lease ends", a->node, ca->ack.workdir);
	log_warnx("%s", err);
	post_released(a, &ca->ack, err);
	free(ca);
}

/* Remove (on a worker) the kept files of conn_id matching workdir_id, or
 * all of them when workdir_id is NULL; then, when ack_id is not 0, answer
 * request ack_id with PhaseResult{released_workdir}.  bs->mu held. */
static void
release_kept_locked(struct agent *a, struct bench_state *bs, uint64_t conn_id,
    const char *workdir_id, uint64_t ack_id)
{
	struct kept **kp, *k, *list = NULL;
	struct release_ack ra;

	memset(&ra, 0, sizeof(ra));
	ra.conn_id = conn_id;
	ra.ack_id = ack_id;
	snprintf(ra.workdir, sizeof(ra.workdir), "%s", workdir_id ? workdir_id : "");

	for (kp = &bs->kept; (k = *kp) != NULL;) {
		if (k->conn_id != conn_id || (workdir_id &&
		    strcmp(k->p.workdir_id, workdir_id) != 0)) {
			kp = &k->next;
			continue;
		}
		*kp = k->next;
		if (k->p.persist_files) {	/* the user's now: no orphan either */
			ra.kept = 1;
			orphan_forget(a, &k->p);
			kept_free(k);
			continue;
		}
		k->next = list;
		list = k;
	}
	if (list) {
		struct cleanup_arg *ca = xcalloc(1, sizeof(*ca));

		ca->a = a;
		ca->bs = bs;
		ca->list = list;
		ca->ack = ra;
		ca->slow_s = bs->test_slow_release_s;
		bs->test_slow_release_s = 0;
		ca->stuck = bs->test_stuck_release;
		ca->stuck_s = bs->test_stuck_release_s;
		bs->test_stuck_release = 0;
		ca->next = bs->releasing;
		bs->releasing = ca;
		/* a thread of its own: a delete stuck in the kernel must not
		 * hold one of the pool's for good */
		if (agent_work_long(a, NULL, NULL, cleanup_run, NULL, ca) < 0) {
			bs->releasing = ca->next;
			release_failed_locked(a, bs, ca);
		}
	} else
		post_released(a, &ra, "");	/* nothing kept: nothing to wait for */
}

int
h_phase_abort(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	struct bench_state *bs = a->bench;
	const char *id = req->phase_abort->phase_id;
	const char *why = req->phase_abort->reason;
	const char *wid = req->phase_abort->workdir_id;
	struct bphase *ph;

	if (wid && wid[0] && bs->test_die_on_release)
		_exit(1);	/* test hook: a node lost before it confirms a release */
	pthread_mutex_lock(&bs->mu);
	if (wid && wid[0]) {
		release_kept_locked(a, bs, c->id, wid, req->id);
		if (id == NULL || id[0] == '\0') {
			pthread_mutex_unlock(&bs->mu);
			return 0;
		}
	}
	for (ph = bs->phases; ph; ph = ph->next)
		if (ph->conn_id == c->id && (id == NULL || id[0] == '\0' ||
		    strcmp(ph->phase_id, id) == 0))
			phase_abort_locked(bs, ph, why && why[0] ? why : "aborted by the controller");
	pthread_mutex_unlock(&bs->mu);
	return 0;
}

/* Ticks while a phase runs or files are kept: both have leases. */
static int
bench_wants_tick(struct agent *a)
{
	struct bench_state *bs = a->bench;
	int busy;

	if (bs == NULL)
		return 0;
	pthread_mutex_lock(&bs->mu);
	busy = bs->phases != NULL || bs->kept != NULL || bs->releasing != NULL;
	pthread_mutex_unlock(&bs->mu);
	return busy;
}

const struct agent_subsys bench_subsys = {
	.name = "bench",
	.init = bench_init,
	.stop = bench_stop,
	.fini = bench_fini,
	.tick = bench_tick,
	.wants_tick = bench_wants_tick,
	.conn_closed = bench_conn_closed,
	.conn_activity = bench_conn_activity,
};
