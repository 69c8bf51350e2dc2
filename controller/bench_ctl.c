/* Coordinated benchmark phases: clock offsets from ping round trips,
 * PhasePrepare to all -> all PhaseReady -> the offsets measured again ->
 * PhaseGo to all at once,
 * progress, results, aggregation on the controller's clock, degraded
 * results naming missing nodes.  One fan-out (one connection per node) for
 * the whole sweep, so files kept between a write and a read phase stay tied
 * to this controller's connections.
 *
 * Stonewall (IOR semantics across nodes): each node reports its largest
 * count when all its threads stopped at the wall (PhaseProgress
 * at_stonewall); once every live node of the phase reported (or ended: a
 * dead node is marked missing as always and does not hold the others), the
 * largest count of all goes to every node (PhaseGo wearout) and each thread
 * runs on to it, so every thread finishes the same number of operations.
 * As IOR's MAX over every rank's count, a thread that finished before the
 * wall counts with all its ops: in its node's report (the agent's
 * wall_arrive) and, for a node that ended before the wall, in its result
 * (result_max_ops).  The rate at the wall counts the same way
 * (bench_stonewall_record).
 *
 * After the last phase on a set of files the controller releases them
 * (PhaseAbort workdir_id) and waits for every node to confirm the removal
 * (or be lost) before the next phase, so that phases do not overlap the
 * deletes and knobctl exits with the files gone.  While it removes them an
 * agent says so every second (PhaseProgress releasing_workdir); a node
 * silent about it for RELEASE_WAIT_S is given up on (cleanup_failed), and
 * its confirmation, should it come later, clears that.  So is a node whose
 * reports show no entry removed for the stall deadline (stall_limit): a
 * delete stuck in the kernel, which its agent's reports, sent from another
 * thread, would otherwise cover for ever.
 *
 * Bounds: every frame a node sends moves its connection's deadline, and
 * progress frames are legitimate all through a phase, so a node (a broken
 * or hostile agent, a counter bug) could hold the run for ever by talking.
 * What it may do is bounded by what the phase can possibly do; past a
 * bound it is ended as failed (fanout_end) with what it did in its error:
 * it counts as missing, the phase is recorded with the others, its files
 * are named as maybe left (lost_files), and knobctl exits 1.
 *   - Stall (stage_check): a node of a running built-in phase whose ops or
 *     threads done have not risen above their highest for the stall limit
 *     (--stall-timeout, else 3 x --runtime or --stonewall, at least 60 s):
 *     an agent's counts only grow, so counts that merely change are no
 *     progress.  A node waits for us, and is not stalled, at the stonewall
 *     until the wear-out target went, and with every thread done and its
 *     first thread's end reported until the first-done moment went (its
 *     agent answers only then).
 *   - Length (overran): a --runtime data phase ends on every node by GO +
 *     runtime; an external tool is ended by its agent after --ext-timeout
 *     (default 3600 s); a node with --stonewall reports at the wall by GO
 *     + stonewall.  A node still running past that and the stall limit
 *     (counted from the wear-out target or the first-done moment instead,
 *     when we sent it later) is ended, moving or not: "still running 95 s
 *     into a 30 s phase (--runtime), past that and the 60 s stall limit".
 *   - Size (bench_bound.c): without --runtime a built-in phase's counts
 *     are bounded by the plan: size / bs ops of bs bytes a rank (md:
 *     md_files items of up to the write size).  Progress, a stonewall
 *     report or a result (total or any thread's) beyond that times the
 *     node's ranks ends it, and none of its figures is counted; so does
 *     more threads done, or in its result, than its ranks.
 *   - Release: its removed count rises or it is stalled (as above, a count
 *     that only changes is no move), and beyond the entries the node's
 *     ranks could have created in the workdir (bench_entries_cap, summed
 *     over its phases there) it is ended: so a release ends within that
 *     count times the stall limit.  An external tool's files are not
 *     counted: its release is bounded by the stall limit between rises
 *     only.
 *   - A failed prepare's abort is answered within the stall limit, and a
 *     clock-sync ping within --timeout (other frames do not sync a clock).
 * Not bounded: a prepare (no count to watch while it creates or prefills
 * files: as long as the node answers pings), and counts that creep up
 * within the plan, one op per stall limit (knobctl cannot tell that from
 * a slow disk).  Results of another phase id, a second one, and answers
 * to releases never asked for are ignored, what they say failed to be
 * removed too (each was an entry in cleanup_failed: a flood grew the run
 * document without bound): the phase waits only for its own first. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "bench_run.h"
#include "json.h"
#include "log.h"
#include "stop_sig.h"
#include "util.h"

#define SYNC_PINGS	5
#define RELEASE_WAIT_S	10	/* wait this long for word of the agents' clean-up */

static void start_phase(struct brun *br);
static void advance(struct brun *br);
static void finish(struct brun *br);
static uint32_t stall_limit(const struct bench_req *rq);

/* Seconds to wait for word of an agent's clean-up: RELEASE_WAIT_S, or for
 * tests only KNOB_TEST_RELEASE_WAIT_S (1 to RELEASE_WAIT_S), to be done
 * sooner. */
static unsigned
release_wait_s(void)
{
	return (unsigned)env_number("KNOB_TEST_RELEASE_WAIT_S", 1, RELEASE_WAIT_S, RELEASE_WAIT_S);
}

static void
send_ping(struct brun *br, struct fo_node *n)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping p = KNOB__PING__INIT;

	p.t_send_ns = now_real_ns();
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &p;
	br->pn[n->idx].last_ping_ns = now_mono_ns();
	fanout_send(br->fo, n, &env);
}

static int
on_open(struct fanout *fo, struct fo_node *n)
{
	struct brun *br = fo->user;

	send_ping(br, n);
	return 0;
}

static void
clear_line(struct brun *br)
{
	if (br->drawn) {
		fprintf(stderr, "\r\033[K");
		br->drawn = 0;
	}
}

/* Live line on a terminal: current aggregate rate and elapsed time. */
static void
draw_progress(struct brun *br)
{
	const struct plan *p = &br->plan[br->cur];
	uint64_t b = 0, o = 0, now = now_mono_ns();
	double el = (double)(now - br->go_mono) / 1e9;
	char rate[32];
	size_t i, used = 0;

	if (!br->ctl->tty || br->stage != ST_RUN || now - br->last_draw < 1000000000ull)
		return;
	br->last_draw = now;
	for (i = 0; i < br->fo->n; i++)
		if (br->pn[i].inphase) {
			b += br->pn[i].prog_bytes;
			o += br->pn[i].prog_ops;
			used++;
		}
	bench_fmt_rate(rate, sizeof(rate), el > 0 ? (double)(bench_kind_md(p->kind) ? o : b) / el : 0,
	    bench_kind_md(p->kind), br->ctl->units_decimal);
	fprintf(stderr, "\r\033[K%s  %u threads  %zu nodes  %s  %.1f s", p->kind, p->threads,
	    used, rate, el);
	fflush(stderr);
	br->drawn = 1;
}

/* The reader shift of phase p on nused nodes, and how many of its ranks
 * it leaves reading what their own node wrote (round-robin placement). */
static void
phase_shift(struct brun *br, const struct plan *p, size_t nused)
{
	const struct bench_req *rq = br->req;

	br->shift = rq->reader_shift_auto ? bench_shift_auto(p->threads, nused) : rq->reader_shift;
	br->shift_own = br->shift && bench_kind_shifted(p->kind) ?
	    bench_shift_own(p->threads, nused, br->shift) : 0;
}

/* Send node i the PhasePrepare of plan[cur] (again, after a busy answer:
 * the same spec, a new request id, kept to match the answer). */
static int
send_prepare(struct brun *br, size_t i)
{
	const struct plan *p = &br->plan[br->cur];
	struct pnode *pn = &br->pn[i];
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhasePrepare pp = KNOB__PHASE_PREPARE__INIT;
	int r, ext = bench_kind_ext(p->kind) && strcmp(p->kind, "fio") != 0;

	pp.spec = bench_make_spec(br, p, pn, br->nused, ext ? br->hosts : NULL,
	    ext ? br->slots : NULL);
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_PREPARE;
	env.phase_prepare = &pp;
	r = fanout_send(br->fo, &br->fo->nodes[i], &env);
	pn->prep_id = env.id;
	free(pp.spec);
	return r;
}

/* Send PhasePrepare for plan[cur] to the nodes that get ranks.  Each may
 * be answered busy (EAGAIN: the agent could not start the phase's thread
 * and undid the prepare) and is sent again (fanout.c busy_retry) within
 * --timeout of this first send: the nodes Ready meanwhile wait for it at
 * the barrier (on_tick's pings keep their lease), so GO, after the clock
 * sync that follows the last Ready, still starts every node together. */
static void
start_phase(struct brun *br)
{
	const struct plan *p = &br->plan[br->cur];
	size_t i, nalive = 0, used_idx = 0;
	uint64_t until = now_mono_ns() + (uint64_t)(br->ctl->timeout * 1e9);
	int outer;

	snprintf(br->phase_id, sizeof(br->phase_id), "%s-p%zu", br->run_id, br->cur + 1);
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		pn->inphase = 0;
		pn->st = PN_IDLE;
		pn->prog_bytes = pn->prog_ops = 0;
		pn->prog_done = 0;
		pn->top_ops = 0;
		pn->top_done = 0;
		pn->wall_sync = pn->wall_rep = 0;
		pn->wall_max = 0;
		pn->fd_rep = 0;
		pn->fd_end = 0;
		free(pn->err);
		pn->err = NULL;
		if (pn->ready)
			knob__envelope__free_unpacked(pn->ready, NULL);
		if (pn->result)
			knob__envelope__free_unpacked(pn->result, NULL);
		pn->ready = pn->result = NULL;
		if (pn->alive)
			nalive++;
	}
	br->nused = bench_nodes_used(p->threads, nalive);
	phase_shift(br, p, br->nused);
	free(br->hosts);
	free(br->slots);
	br->hosts = xcalloc(br->nused + 1, sizeof(*br->hosts));
	br->slots = xcalloc(br->nused + 1, sizeof(*br->slots));
	for (i = 0; i < br->fo->n && used_idx < br->nused; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->alive)
			continue;
		free(pn->ranks);
		pn->ranks = xcalloc(p->threads / nalive + 2, sizeof(*pn->ranks));
		pn->nranks = bench_place(p->threads, nalive, used_idx, pn->ranks);
		pn->used_idx = used_idx;
		br->hosts[used_idx] = br->fo->nodes[i].name;
		br->slots[used_idx] = (uint32_t)pn->nranks;
		pn->inphase = 1;
		pn->files_held = pn->files_wd && strcmp(pn->files_wd, p->workdir) == 0;
		pn->files_wd = p->workdir;
		pn->files_cap = bench_entries_cap(br->req, p, pn->nranks,
		    pn->files_held ? pn->files_cap : 0);
		used_idx++;
	}
	br->stage = ST_PREPARE;
	br->wall_sent = 0;
	br->wall_target = 0;
	br->fd_sent = 0;
	br->fd_t = 0;
	log_info("phase %s: %s, %u threads on %zu nodes", br->phase_id, p->kind, p->threads,
	    br->nused);
	outer = br->advancing;
	br->advancing = 1;	/* a node ended by a failed send waits for the rest */
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase)
			continue;
		pn->st = PN_PREP;
		pn->prep_until = until;
		br->fo->nodes[i].busy_tries = 0;	/* a new request */
		send_prepare(br, i);
	}
	br->advancing = outer;
	advance(br);	/* called from advance(): it goes round again instead */
}

/* fo_ops.busy_until: only the phase's prepare that n still owes is sent
 * again after a busy answer, within --timeout of its first send; the
 * other requests (ping, GO, abort) are not answered busy. */
static uint64_t
busy_until(struct fanout *fo, struct fo_node *n, const Knob__Envelope *env)
{
	struct brun *br = fo->user;
	const struct pnode *pn = &br->pn[n->idx];

	if (br->stage != ST_PREPARE || pn->st != PN_PREP || env->id != pn->prep_id)
		return 0;
	return pn->prep_until;
}

/* fo_ops.busy_resend: the prepare again, while the phase still waits for it. */
static int
busy_resend(struct fanout *fo, struct fo_node *n)
{
	struct brun *br = fo->user;

	if (br->stage != ST_PREPARE || br->pn[n->idx].st != PN_PREP)
		return 0;
	return send_prepare(br, n->idx);
}

/* Send a body to every node of the phase in state st (then mark it next). */
static void
send_all(struct brun *br, int st, int next, Knob__Envelope *env)
{
	for (size_t i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase || !pn->alive || pn->st != st)
			continue;
		env->id = 0;
		pn->st = next;
		fanout_send(br->fo, &br->fo->nodes[i], env);
	}
}

/* The phase is over on every node: its record into the run document, the
 * results store's hook, and the log line. */
static void
finalize_phase(struct brun *br)
{
	const struct plan *p = &br->plan[br->cur];
	const char *status;
	json_object *ph = bench_phase_record(br, &status);
	char rate[32];

	if (strcmp(status, "ok") != 0)
		br->bad = 1;
	json_object_array_add(br->phases, ph);
	if (br->req->on_phase)
		br->req->on_phase(br->req->hook_arg, br->doc, ph);
	clear_line(br);
	bench_fmt_rate(rate, sizeof(rate), js_num(ph, "rate"), bench_kind_md(p->kind),
	    br->ctl->units_decimal);
	log_info("phase %s: %s %u threads: %s (%s)", br->phase_id, p->kind, p->threads, rate,
	    status);
}

/* A node could not remove (state "failed": its agent said so) or did not
 * confirm removing (state "unknown") the files of workdir: into the run
 * document's cleanup_failed (the run fails while it is there: bench_run);
 * the entry is returned, the document's. */
static json_object *
cleanup_failed(struct brun *br, const char *node, const char *workdir, const char *msg,
    int unknown)
{
	json_object *arr = NULL, *o = json_object_new_object();

	log_warnx("%s", msg);
	if (!json_object_object_get_ex(br->doc, "cleanup_failed", &arr)) {
		arr = json_object_new_array();
		json_object_object_add(br->doc, "cleanup_failed", arr);
	}
	json_object_object_add(o, "node", json_object_new_string(node));
	json_object_object_add(o, "workdir", json_object_new_string(workdir));
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "state", json_object_new_string(unknown ? "unknown" : "failed"));
	json_object_array_add(arr, o);
	return o;
}

/* A late confirmation from node of the release of workdir, given up on
 * unconfirmed: its cleanup_failed entry goes. */
static void
cleanup_confirmed(struct brun *br, const char *node, const char *workdir)
{
	json_object *arr, *o;

	if (!json_object_object_get_ex(br->doc, "cleanup_failed", &arr))
		return;
	for (size_t k = 0; k < json_object_array_length(arr); k++) {
		o = json_object_array_get_idx(arr, k);
		if (json_object_object_get_ex(o, "unconfirmed", NULL) &&
		    strcmp(js_str(o, "node"), node) == 0 && strcmp(js_str(o, "workdir"), workdir) == 0) {
			json_object_array_del_idx(arr, k, 1);
			break;
		}
	}
	if (json_object_array_length(arr) == 0)
		json_object_object_del(br->doc, "cleanup_failed");
	/* the user saw the warning: the withdrawal goes where it went */
	log_warnx("%s: removed the files of knob.%s after all (not a clean-up failure)", node,
	    workdir);
}

/* Node i's ranks in its last phase, "0,2,4" (malloc'd). */
static char *
ranks_list(const struct pnode *pn)
{
	char *ranks = xstrdup("");

	for (size_t k = 0; k < pn->nranks; k++)
		str_appendf(&ranks, "%s%u", k ? "," : "", pn->ranks[k]);
	return ranks;
}

/* The signal that cut the run off at once (ctl->interrupt: a second stop
 * signal, or a play's), or 0. */
static int
cut_off(const struct brun *br)
{
	const atomic_int *in = br->ctl->interrupt;

	return in ? atomic_load_explicit(in, memory_order_relaxed) : 0;
}

/* Node i was lost holding files of workdir, or cut off by a signal before
 * it confirmed their removal: into cleanup_failed as unknown, where they
 * may be left (its ranks in its last phase). */
static void
lost_files(struct brun *br, size_t i, const char *workdir)
{
	const struct pnode *pn = &br->pn[i];
	char *ranks = ranks_list(pn), *msg;
	int sig = cut_off(br);

	if (sig)
		msg = xasprintf("%s: clean-up unknown: the run was cut off (%s) before the node "
		    "confirmed it: the files of its ranks %s may be left in %s/knob.%s (its agent "
		    "removes them when it sees the connection closed)", br->fo->nodes[i].name,
		    stop_sig_name(sig), ranks, br->req->dir, workdir);
	else
		msg = xasprintf("%s: lost (%s): the files of its ranks %s may be left in "
		    "%s/knob.%s", br->fo->nodes[i].name, pn->death ? pn->death : "gone", ranks,
		    br->req->dir, workdir);
	cleanup_failed(br, br->fo->nodes[i].name, workdir, msg, 1);
	free(msg);
	free(ranks);
}

/* Let node i remove the files it holds (files_wd; PhaseAbort workdir_id)
 * and wait for its confirmation; lost, it is named in cleanup_failed. */
static void
release_node(struct brun *br, size_t i)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseAbort ab = KNOB__PHASE_ABORT__INIT;
	struct pnode *pn = &br->pn[i];
	const char *workdir = pn->files_wd;

	if (!pn->alive) {
		lost_files(br, i, workdir);
		pn->files_wd = NULL;
	}
	if (!pn->alive || br->fo->nodes[i].phase != FO_OPEN)
		return;
	ab.workdir_id = (char *)(uintptr_t)workdir;
	ab.reason = (char *)(uintptr_t)"release";
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_ABORT;
	env.phase_abort = &ab;
	pn->files_wd = NULL;
	if (fanout_send(br->fo, &br->fo->nodes[i], &env) == 0) {
		pn->rel_wait = 1;
		pn->rel_wd = workdir;
		pn->rel_deadline = now_mono_ns() + release_wait_s() * 1000000000ull;
		pn->rel_removed = 0;
		pn->rel_cap = pn->files_cap;
		pn->rel_moved = pn->rel_sent = now_mono_ns();
		pn->rel_long_said = 0;
	}
}

/* Every node is past the last phase on workdir: let those that got ranks
 * there remove its files (agents keep them until then, since another node
 * may still read them); a node lost since it got ranks there cannot: it is
 * named in cleanup_failed.  A node without ranks there holds none of its
 * files: it is not asked, so it is not waited for, nor named should it be
 * lost (an interrupted play named every such node, with no ranks). */
static void
release_files(struct brun *br, const char *workdir)
{
	for (size_t i = 0; i < br->fo->n; i++)
		if (br->pn[i].files_wd && strcmp(br->pn[i].files_wd, workdir) == 0)
			release_node(br, i);
}

/* Largest thread count in a node's result (a node that ended without a
 * stonewall report). */
static uint64_t
result_max_ops(const struct pnode *pn)
{
	const Knob__PhaseResult *r = pn->result ? pn->result->phase_result : NULL;
	uint64_t m = 0;

	for (size_t k = 0; r && k < r->n_threads; k++)
		if (r->threads[k]->ops > m)
			m = r->threads[k]->ops;
	return m;
}

/* Stonewall: once every live node of the phase reported its largest count
 * at the wall (or ended), send every node still running the largest count
 * of all, to wear out to.  Dead nodes do not hold it up. */
static void
wall_check(struct brun *br)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseGo go = KNOB__PHASE_GO__INIT;
	uint64_t target = 0, m;
	size_t i, nsync = 0;

	if (br->wall_sent || br->stage != ST_RUN)
		return;
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase || !pn->wall_sync)
			continue;
		nsync++;
		if (pn->wall_rep)
			m = pn->wall_max;
		else if (pn->st == PN_DONE)
			m = result_max_ops(pn);
		else if (pn->alive)
			return;		/* still on its way to the wall */
		else
			continue;	/* died before the wall: missing */
		if (m > target)
			target = m;
	}
	br->wall_sent = 1;
	br->wall_mono = now_mono_ns();
	if (nsync == 0)
		return;
	br->wall_target = target;
	go.phase_id = br->phase_id;
	go.wearout = 1;
	go.wearout_ops = target;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_GO;
	env.phase_go = &go;
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase || !pn->alive || !pn->wall_sync || pn->st != PN_GO ||
		    br->fo->nodes[i].phase != FO_OPEN)
			continue;
		env.id = 0;
		fanout_send(br->fo, &br->fo->nodes[i], &env);
	}
	log_info("phase %s: every node is at the stonewall; wearing out to %llu ops",
	    br->phase_id, (unsigned long long)target);
}

/* First done: once every live node of the phase reported when its first
 * thread ended (or ended itself), send every node still in the phase the
 * earliest of those moments, in its own clock; each answers with every
 * thread's count at that moment, measured from its checkpoints. */
static void
first_done_check(struct brun *br)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseGo go = KNOB__PHASE_GO__INIT;
	uint64_t t = UINT64_MAX;
	size_t i;

	if (br->fd_sent || br->stage != ST_RUN || bench_kind_ext(br->plan[br->cur].kind))
		return;
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase)
			continue;
		if (pn->fd_rep) {
			if (pn->fd_end < t)
				t = pn->fd_end;
		} else if (pn->alive && pn->st != PN_DONE)
			return;		/* its first thread is still running */
	}
	br->fd_sent = 1;
	br->fd_mono = now_mono_ns();
	if (t == UINT64_MAX)
		return;
	br->fd_t = t;
	go.phase_id = br->phase_id;
	go.first_done = 1;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_GO;
	env.phase_go = &go;
	for (i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase || !pn->alive || pn->st != PN_GO ||
		    br->fo->nodes[i].phase != FO_OPEN)
			continue;
		go.first_done_ns = (uint64_t)((int64_t)t + pn->off);
		env.id = 0;
		fanout_send(br->fo, &br->fo->nodes[i], &env);
	}
	log_debug("phase %s: first thread ended; counts asked for that moment", br->phase_id);
}

/* Ping every live node (of the phase only: those Ready for it) SYNC_PINGS
 * times, the minimum round trip wins, and enter stage st to wait for them. */
static void
sync_round(struct brun *br, int st)
{
	br->stage = st;
	for (size_t i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->alive || br->fo->nodes[i].phase != FO_OPEN ||
		    (st == ST_GOSYNC && (!pn->inphase || pn->st != PN_READY)))
			continue;
		pn->synced = 0;
		pn->npings = 0;
		pn->best_rtt = UINT64_MAX;
		send_ping(br, &br->fo->nodes[i]);
	}
}

/* Measure every live node's clock offset again before the phase plan[cur]:
 * a sweep runs for hours, and clocks drift or get stepped meanwhile.  The
 * phase's corrections come from a second round once all are Ready. */
static void
begin_sync(struct brun *br)
{
	sync_round(br, ST_SYNC);
	advance(br);
}

/* A node's clock sync is complete.  The round before GO gives the offset
 * the phase uses: keep how far it moved since the one the previous phase
 * used (the first phase: since the round before its prepare), and the
 * largest move of the run.  The round before prepare only sets that base. */
static void
sync_done(struct brun *br, struct fo_node *n)
{
	struct pnode *pn = &br->pn[n->idx];

	int64_t moved = pn->nsyncs ? pn->off - pn->off_prev : 0;

	pn->synced = 1;
	if (br->stage == ST_GOSYNC) {
		pn->off_change = moved;
		if (llabs(moved) > llabs(br->off_change_max) || br->off_change_node == NULL) {
			br->off_change_max = moved;
			br->off_change_node = n->name;
			snprintf(br->off_change_phase, sizeof(br->off_change_phase), "%s-p%zu",
			    br->run_id, br->cur + 1);
		}
		pn->off_prev = pn->off;
	} else if (pn->nsyncs == 0)
		pn->off_prev = pn->off;
	pn->nsyncs++;
	log_debug("%s: clock offset %+.6f s (rtt %.3f ms, before %s: %+.6f s since the offset the "
	    "last phase used)", n->name, (double)pn->off / 1e9, (double)pn->best_rtt / 1e6,
	    br->stage == ST_GOSYNC ? "go" : "prepare", (double)moved / 1e9);
}

/* On to the next phase (after a clock sync), or the end of the run (the
 * last phase done, or the run stopped by a signal). */
static void
next_phase(struct brun *br)
{
	if (br->stop_sig || ++br->cur >= br->nplan) {
		finish(br);
		return;
	}
	begin_sync(br);
}

/* All nodes are done with the run: end their connections. */
static void
finish(struct brun *br)
{
	br->stage = ST_DONE;
	clear_line(br);
	for (size_t i = 0; i < br->fo->n; i++)
		if (br->pn[i].alive)
			fanout_end(br->fo, &br->fo->nodes[i], NS_OK, NULL);
	__atomic_store_n(&br->fo->stop, 1, __ATOMIC_RELAXED);	/* read by every loop */
}

/* A node failed to prepare: the others, Ready, abort the phase. */
static void
abort_prepared(struct brun *br)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseAbort ab = KNOB__PHASE_ABORT__INIT;

	ab.phase_id = br->phase_id;
	ab.reason = (char *)(uintptr_t)"another node failed to prepare";
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_ABORT;
	env.phase_abort = &ab;
	send_all(br, PN_READY, PN_GO, &env);
	br->stage = ST_ABORTING;
	br->abort_mono = now_mono_ns();
}

/* Every node of the phase is Ready and its clock synced again: GO. */
static void
send_go(struct brun *br)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseGo go = KNOB__PHASE_GO__INIT;

	go.phase_id = br->phase_id;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_GO;
	env.phase_go = &go;
	br->go_mono = now_mono_ns();
	br->last_draw = br->go_mono;
	for (size_t i = 0; i < br->fo->n; i++)
		br->pn[i].prog_mono = br->go_mono;
	send_all(br, PN_READY, PN_GO, &env);
	br->stage = ST_RUN;
}

/* Nodes of the phase not there yet (preparing; in ST_GOSYNC, Ready and not
 * synced again), and in *failed those that failed to prepare. */
static size_t
phase_waiting(const struct brun *br, size_t *failed)
{
	size_t waiting = 0;

	*failed = 0;
	for (size_t i = 0; i < br->fo->n; i++) {
		const struct pnode *pn = &br->pn[i];

		if (!pn->inphase || !pn->alive)
			continue;
		if (pn->st == PN_PREP || (br->stage == ST_GOSYNC && pn->st == PN_READY &&
		    !pn->synced))
			waiting++;
		if (pn->st == PN_DONE)
			(*failed)++;
	}
	return waiting;
}

/* The run stops: release the files every node still holds (those of the
 * last phase, or kept for the next); 1 when some release is awaited. */
static int
release_held(struct brun *br)
{
	int wait = 0;

	for (size_t i = 0; i < br->fo->n && !br->req->keep; i++)
		if (br->pn[i].files_wd)
			release_files(br, br->pn[i].files_wd);
	for (size_t i = 0; i < br->fo->n; i++)
		wait |= br->pn[i].rel_wait && br->pn[i].alive;
	return wait;
}

/* At a stop, node i's prepare was answered busy and waits to be sent
 * again: its agent holds nothing of the phase, so it is done with it (not
 * sent again, not aborted, not waited for, not named as stopped), and
 * released only if it held files there before; 1 then. */
static int
stop_unsent(struct brun *br, size_t i)
{
	struct fo_node *n = &br->fo->nodes[i];
	struct pnode *pn = &br->pn[i];

	if (pn->st != PN_PREP || n->retry_ns == 0)
		return 0;
	n->retry_ns = 0;
	pn->st = PN_DONE;
	if (!pn->files_held)
		pn->files_wd = NULL;
	return 1;
}

/* Seconds the stop waits for the nodes' answers to its abort: a play's
 * bound, else the stall limit. */
static uint32_t
stop_wait(const struct bench_req *rq)
{
	return rq->stop_wait_s ? rq->stop_wait_s : stall_limit(rq);
}

/* What a second signal does to the run of rq, for the stop's message. */
static const char *
second_does(const struct bench_req *rq)
{
	return rq->stop_wait_s ? "stops waiting for the nodes (the play rolls back next)" :
	    "exits at once";
}

/* The stop signal sig: the phase in flight is aborted on the nodes that
 * have not finished it (those that have, or said it failed, hold their
 * files only); each that answered is released at once (stop_answered: its
 * result does not say the files are gone); once all answered or the stop
 * deadline passed, what every node holds is released, and the run ends
 * there once every release is confirmed (advance_once, next_phase).  A
 * node whose prepare waits to be sent again is done (stop_unsent); one
 * preparing is named as stopped once it answers.  Between phases the
 * release alone; a release under way is waited for. */
static void
begin_stop(struct brun *br, int sig)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseAbort ab = KNOB__PHASE_ABORT__INIT;
	char why[64];
	size_t n = 0;

	br->stop_sig = sig;
	bench_doc_interrupted(br, stop_sig_name(sig));
	clear_line(br);
	if (br->stage == ST_PREPARE || br->stage == ST_GOSYNC || br->stage == ST_RUN ||
	    br->stage == ST_ABORTING) {
		snprintf(why, sizeof(why), "interrupted by %s", stop_sig_name(sig));
		ab.phase_id = br->phase_id;
		ab.reason = why;
		env.body_case = KNOB__ENVELOPE__BODY_PHASE_ABORT;
		env.phase_abort = &ab;
		for (size_t i = 0; i < br->fo->n; i++) {
			struct pnode *pn = &br->pn[i];

			if (!pn->inphase || !pn->alive || pn->st == PN_DONE ||
			    br->fo->nodes[i].phase != FO_OPEN || stop_unsent(br, i))
				continue;
			env.id = 0;
			pn->stop_abort = 1;
			fanout_send(br->fo, &br->fo->nodes[i], &env);
			if (pn->st != PN_PREP)	/* preparing: named once it answers */
				bench_doc_stop_node(br, "stopped_on", br->fo->nodes[i].name);
			n++;
		}
	}
	if (br->stage != ST_RELEASE)
		br->stage = ST_STOPPING;
	br->stop_deadline = now_mono_ns() + (uint64_t)stop_wait(br->req) * 1000000000ull;
	if (n)
		fprintf(stderr, "knobctl bench: %s: stopping phase %s (%s) on %zu node(s) and "
		    "%s the files; a second signal %s\n", stop_sig_name(sig),
		    br->phase_id, br->plan[br->cur].kind, n, bench_stop_keeps(br) ?
		    "keeping (--keep)" : "removing", second_does(br->req));
	else
		fprintf(stderr, "knobctl bench: %s: stopping the run and removing its files; a "
		    "second signal %s\n", stop_sig_name(sig), second_does(br->req));
	advance(br);
}

/* The stop's deadline passed: a node of the phase that has not answered
 * the abort is cut off (its files unknown: bench_run names it). */
static void
stop_check(struct brun *br, uint64_t now)
{
	int outer = br->advancing, ended = 0;

	if (br->stage != ST_STOPPING || now < br->stop_deadline)
		return;
	br->advancing = 1;	/* the ends below advance once, after the loop */
	for (size_t i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];

		if (!pn->inphase || !pn->alive || pn->st == PN_DONE)
			continue;
		fanout_end(br->fo, &br->fo->nodes[i], NS_FAILED, "no answer to the stop for %u s",
		    stop_wait(br->req));
		ended = 1;
	}
	br->advancing = outer;
	if (ended)
		advance(br);
}

static void advance_once(struct brun *br);
static void stop_finished_said(struct brun *br);

/* Move the state machine forward; a call from inside it (a node that ends
 * while we send) is run again after the current pass, never nested. */
static void
advance(struct brun *br)
{
	if (br->advancing) {
		br->again = 1;
		return;
	}
	br->advancing = 1;
	do {
		br->again = 0;
		advance_once(br);
	} while (br->again);
	br->advancing = 0;
}

/* One pass: forward when every live node of the stage is there. */
static void
advance_once(struct brun *br)
{
	size_t i, waiting = 0, failed = 0, alive = 0;

	for (;;) {
		switch (br->stage) {
		case ST_SYNC:
			for (i = 0; i < br->fo->n; i++) {
				if (br->pn[i].alive)
					alive++;
				if (br->pn[i].alive && !br->pn[i].synced)
					waiting++;
			}
			if (waiting)
				return;
			if (alive == 0) {
				/* nothing reachable: record every phase left as failed
				 * (no node was in them: each is missing, not the last
				 * phase's result again) */
				for (i = 0; i < br->fo->n; i++)
					br->pn[i].inphase = 0;
				for (; br->cur < br->nplan; br->cur++)
					finalize_phase(br);
				finish(br);
				return;
			}
			br->nsyncs++;
			start_phase(br);
			return;
		case ST_PREPARE:
		case ST_GOSYNC:
			if (phase_waiting(br, &failed))
				return;
			if (failed)
				abort_prepared(br);
			else if (br->stage == ST_PREPARE)
				sync_round(br, ST_GOSYNC);
			else
				send_go(br);
			continue;
		case ST_RUN:
		case ST_ABORTING:
			wall_check(br);
			first_done_check(br);
			for (i = 0; i < br->fo->n; i++) {
				struct pnode *pn = &br->pn[i];
				if (pn->inphase && pn->alive && pn->st != PN_DONE)
					return;
			}
			finalize_phase(br);
			if (!br->plan[br->cur].keep) {
				release_files(br, br->plan[br->cur].workdir);
				br->stage = ST_RELEASE;
				continue;
			}
			next_phase(br);
			return;
		case ST_STOPPING:
			/* the phase in flight is over on every node: not
			 * recorded (cut short), its files go */
			for (i = 0; i < br->fo->n; i++) {
				struct pnode *pn = &br->pn[i];
				if (pn->inphase && pn->alive && pn->st != PN_DONE)
					return;
			}
			stop_finished_said(br);
			if (release_held(br)) {
				br->stage = ST_RELEASE;
				continue;
			}
			finish(br);
			return;
		case ST_RELEASE:
			/* the files are gone on every node (or it died) */
			for (i = 0; i < br->fo->n; i++)
				if (br->pn[i].rel_wait && br->pn[i].alive)
					return;
			next_phase(br);
			return;
		default:
			return;
		}
	}
}

/* Releases are awaited: between phases, or while a stop's aborts are
 * answered (each node's files released once it answered). */
static int
releasing(const struct brun *br)
{
	return br->stage == ST_RELEASE || br->stage == ST_STOPPING;
}

/* Message handlers of the run, one per body type; each returns 1 when it
 * kept m (the node's ready or result), else 0 and on_msg frees it. */
typedef int (*bench_handler)(struct brun *br, struct fo_node *n, Knob__Envelope *m);

/* A clock-sync ping came back: keep the sample of the shortest round trip. */
static int
on_pong(struct brun *br, struct fo_node *n, Knob__Envelope *m)
{
	struct pnode *pn = &br->pn[n->idx];
	uint64_t now = now_real_ns(), t0 = m->pong->t_echo_ns;

	/* only the pings of a sync measure (lease pings go in mid-phase) */
	if (pn->synced)
		return 0;
	if (t0 && now >= t0 && now - t0 < pn->best_rtt) {
		pn->best_rtt = now - t0;
		pn->off = bench_offset_sample(t0, now, m->pong->agent_time_ns);
	}
	if (++pn->npings >= SYNC_PINGS) {
		sync_done(br, n);
		advance(br);
	} else
		send_ping(br, n);
	return 0;
}

/* A node prepared the phase (or could not). */
static int
on_ready(struct brun *br, struct fo_node *n, Knob__Envelope *m)
{
	struct pnode *pn = &br->pn[n->idx];
	const Knob__PhaseReady *rd = m->phase_ready;

	if (strcmp(rd->phase_id, br->phase_id) != 0 || pn->st != PN_PREP)
		return 0;
	if (pn->ready)
		knob__envelope__free_unpacked(pn->ready, NULL);
	pn->ready = m;
	if (rd->warning[0])
		log_debug("%s", rd->warning);
	pn->wall_sync = rd->stonewall_sync;
	log_debug("%s: %s for phase %s", n->name, rd->ok ? "ready" : "not ready", rd->phase_id);
	if (pn->stop_abort)	/* it had the phase when the stop came */
		bench_doc_stop_node(br, "stopped_on", n->name);
	if (rd->ok)
		pn->st = PN_READY;
	else {
		pn->st = PN_DONE;
		pn->err = xstrdup(rd->error[0] ? rd->error : "prepare failed");
		log_warnx("%s", pn->err);
	}
	advance(br);
	return 1;
}

/* Once, when node name's release (pn) has outlived the wait for word of
 * it: say that knobctl waits on while it reports progress (a delete of
 * large files on Lustre or GPFS), so a user sees why it has not ended. */
static void
release_long_said(const char *name, struct pnode *pn)
{
	unsigned wait = release_wait_s();

	if (pn->rel_long_said || now_mono_ns() - pn->rel_sent < wait * 1000000000ull)
		return;
	pn->rel_long_said = 1;
	fprintf(stderr, "knobctl bench: %s: still removing the files of knob.%s after %u s "
	    "(%llu removed so far): waiting while it reports progress\n", name, pn->rel_wd,
	    wait, (unsigned long long)pn->rel_removed);
}

/* Node n reported what no agent can (why, malloc'd, freed here): it is
 * ended as failed; the others go on. */
static void
end_beyond(struct brun *br, struct fo_node *n, char *why)
{
	fanout_end(br->fo, n, NS_FAILED, "%s", why);
	free(why);
}

/* A release's report that it is still removing: the wait for word goes
 * on; a count above the highest so far is a move (a count that only
 * changes is none: it could change for ever), one above what the node's
 * ranks could have created ends it. */
static void
on_releasing(struct brun *br, struct fo_node *n, const Knob__PhaseProgress *pg)
{
	struct pnode *pn = &br->pn[n->idx];
	char *why;

	if (!releasing(br) || !pn->rel_wait || strcmp(pg->releasing_workdir, pn->rel_wd) != 0)
		return;
	if ((why = bench_release_beyond(pn, pg->release_removed)) != NULL) {
		end_beyond(br, n, why);
		return;
	}
	pn->rel_deadline = now_mono_ns() + release_wait_s() * 1000000000ull;
	if (pg->release_removed > pn->rel_removed) {
		pn->rel_moved = now_mono_ns();
		pn->rel_removed = pg->release_removed;
	}
	release_long_said(n->name, pn);
}

/* Progress of a running phase: the live line, the first thread's end and
 * the stonewall report.  Counts beyond what the node's ranks can do end
 * it; only ops or threads done above their highest so far are a move for
 * the stall deadline (an agent's counts only grow, its bytes with its
 * ops: counts that merely change could do so for ever). */
static int
on_progress(struct brun *br, struct fo_node *n, Knob__Envelope *m)
{
	struct pnode *pn = &br->pn[n->idx];
	const Knob__PhaseProgress *pg = m->phase_progress;
	char *why;

	if (pg->releasing_workdir[0]) {	/* still removing: the wait goes on */
		on_releasing(br, n, pg);
		return 0;
	}
	if (strcmp(pg->phase_id, br->phase_id) != 0)
		return 0;
	if (pn->inphase && pn->st != PN_DONE &&
	    (why = bench_progress_beyond(br, pn, pg)) != NULL) {
		end_beyond(br, n, why);
		return 0;
	}
	if (pg->ops > pn->top_ops || pg->threads_done > pn->top_done) {
		pn->prog_mono = now_mono_ns();
		pn->top_ops = pg->ops > pn->top_ops ? pg->ops : pn->top_ops;
		pn->top_done = pg->threads_done > pn->top_done ? pg->threads_done : pn->top_done;
	}
	pn->prog_bytes = pg->bytes;
	pn->prog_ops = pg->ops;
	pn->prog_done = pg->threads_done;
	if (pg->first_end_ns && pn->inphase && !pn->fd_rep) {
		pn->fd_rep = 1;
		pn->fd_end = bench_to_ctl(pg->first_end_ns, pn->off);
		advance(br);
	}
	if (pg->at_stonewall && pn->inphase && !pn->wall_rep) {
		pn->wall_rep = 1;
		pn->wall_max = pg->stonewall_max_ops;
		log_debug("%s: at the stonewall with %llu ops", n->name,
		    (unsigned long long)pn->wall_max);
		advance(br);
	}
	return 0;
}

int
bench_stop_keeps(const struct brun *br)
{
	return br->req->keep && br->cur > 0 && br->cur < br->nplan &&
	    strcmp(br->plan[br->cur - 1].workdir, br->plan[br->cur].workdir) == 0;
}

/* After a stop signal, node n's agent said what became of its files in
 * DIR/knob.<workdir> (files: PhaseResult.files of its result or of a
 * release's answer): into the run document's interrupted removed_on,
 * kept_on or unknown_on, and said at once (the user waits for it), after
 * how the node ended ("stopped").  Not said (an agent before the field)
 * is unknown, never removed. */
static void
stop_files(struct brun *br, struct fo_node *n, Knob__PhaseFiles files, const char *workdir,
    const char *how)
{
	if (files == KNOB__PHASE_FILES__PHASE_FILES_REMOVED) {
		bench_doc_stop_node(br, "removed_on", n->name);
		fprintf(stderr, "knobctl bench: %s: %s, its files removed\n", n->name, how);
	} else if (files == KNOB__PHASE_FILES__PHASE_FILES_KEPT) {
		bench_doc_stop_node(br, "kept_on", n->name);
		fprintf(stderr, "knobctl bench: %s: %s, the files kept (--keep) in %s/knob.%s\n",
		    n->name, how, br->req->dir, workdir);
	} else {
		bench_doc_stop_node(br, "unknown_on", n->name);
		fprintf(stderr, "knobctl bench: %s: %s; its agent does not say whether it kept or "
		    "removed its files in %s/knob.%s (a knobd before it says so): look there\n",
		    n->name, how, br->req->dir, workdir);
	}
}

/* A --keep run stopped in a phase, every node done with it: each node
 * whose result came before the stop (not aborted: its phase ended there)
 * said in it what became of its files, kept for the user as a rule; said
 * as stop_files says it (not released, so nothing else says it). */
static void
stop_finished_said(struct brun *br)
{
	const char *pid = js_str(json_object_object_get(br->doc, "interrupted"), "phase_id");
	const Knob__PhaseResult *r;

	for (size_t i = 0; i < br->fo->n && br->req->keep && pid[0]; i++) {
		struct pnode *pn = &br->pn[i];

		r = pn->result ? pn->result->phase_result : NULL;
		if (!pn->inphase || pn->stop_abort || r == NULL || r->cleanup_error[0] ||
		    strcmp(r->phase_id, pid) != 0)
			continue;
		stop_files(br, &br->fo->nodes[i], r->files, br->plan[br->cur].workdir,
		    "its phase ended before the stop");
	}
}

/* After a stop, node n's result r of the phase it was asked to abort.  An
 * agent that got the abort removed the phase's files before it answered,
 * but one whose phase ended first sent its result before the abort came and
 * keeps the files (for a release, or until the connection closes; --keep:
 * for the user); r->files says which.  Without --keep the files stay n's
 * (files_wd) and the stop's release asks its agent, whose confirmation
 * says they are gone; with --keep they are not released and r->files is
 * what is said (stop_files).  What its agent could not remove is in
 * cleanup_failed already. */
static void
stop_answered(struct brun *br, struct fo_node *n, const Knob__PhaseResult *r)
{
	if (r->cleanup_error[0]) {
		br->pn[n->idx].files_wd = NULL;
		return;
	}
	if (br->req->keep) {
		br->pn[n->idx].files_wd = NULL;
		stop_files(br, n, r->files, br->plan[br->cur].workdir, "stopped");
	} else if (br->pn[n->idx].files_wd)
		release_node(br, n->idx);	/* the others' reads are being aborted too */
}

/* What a release's answer r (ok) says became of the files: its files, or
 * from an agent before the field removed (a release removed them) unless
 * --keep made them the user's (then unknown). */
static Knob__PhaseFiles
released_files(const struct brun *br, const Knob__PhaseResult *r)
{
	if (r->files != KNOB__PHASE_FILES__PHASE_FILES_UNKNOWN)
		return r->files;
	return br->req->keep ? KNOB__PHASE_FILES__PHASE_FILES_UNKNOWN :
	    KNOB__PHASE_FILES__PHASE_FILES_REMOVED;
}

/* Was node pn asked to release workdir wd, and has not answered: the
 * release it is waiting for, or one given up on unconfirmed? */
static int
release_asked(const struct pnode *pn, const char *wd)
{
	return (pn->rel_wait && strcmp(pn->rel_wd, wd) == 0) ||
	    (pn->rel_late && strcmp(pn->rel_late, wd) == 0);
}

/* A node's result of the phase, or the confirmation that it released a
 * workdir's files (after a stop signal, the confirmation of the stop's
 * release, not the result of the phase it aborted: stop_answered).  Only
 * the phase's own first result, or the answer to a release asked for, is
 * taken (what either says failed to be removed goes into cleanup_failed):
 * others, which a node could send for ever, each adding an entry, are
 * ignored. */
static int
on_result(struct brun *br, struct fo_node *n, Knob__Envelope *m)
{
	struct pnode *pn = &br->pn[n->idx];
	const Knob__PhaseResult *r = m->phase_result;
	char *why;

	if (r->released_workdir[0]) {
		/* a release confirmed: that node's files are gone, or what is left */
		if (!release_asked(pn, r->released_workdir))
			return 0;	/* none of ours: it says nothing of our files */
		if (!r->ok)
			cleanup_failed(br, n->name, r->released_workdir, r->error[0] ? r->error :
			    "clean-up incomplete", 0);
		else if (pn->rel_late && strcmp(pn->rel_late, r->released_workdir) == 0)
			cleanup_confirmed(br, n->name, r->released_workdir);
		pn->rel_late = NULL;
		if (releasing(br) && pn->rel_wait && strcmp(pn->rel_wd, r->released_workdir) == 0) {
			pn->rel_wait = 0;
			if (r->ok && br->stop_sig)
				stop_files(br, n, released_files(br, r), r->released_workdir,
				    "stopped");
			advance(br);
		}
		return 0;
	}
	if (strcmp(r->phase_id, br->phase_id) != 0 || pn->st == PN_DONE || !pn->inphase)
		return 0;
	if ((why = bench_result_beyond(br, pn, r)) != NULL) {
		end_beyond(br, n, why);	/* none of its figures is counted */
		return 0;
	}
	if (r->cleanup_error[0])
		cleanup_failed(br, n->name, br->plan[br->cur].workdir, r->cleanup_error, 0);
	pn->result = m;
	pn->st = PN_DONE;
	if (pn->stop_abort)
		stop_answered(br, n, r);
	advance(br);
	return 1;
}

/* The agent refused a request: the node is done with the phase. */
static int
on_error(struct brun *br, struct fo_node *n, Knob__Envelope *m)
{
	struct pnode *pn = &br->pn[n->idx];

	if (pn->inphase && pn->st != PN_DONE && br->stage != ST_SYNC) {
		pn->err = xasprintf("%s: %s", n->name, m->error->message);
		pn->st = PN_DONE;
		advance(br);
	} else
		log_warnx("%s: %s", n->name, m->error->message);
	return 0;
}

static const struct {
	Knob__Envelope__BodyCase body;
	bench_handler fn;
} handlers[] = {
	{ KNOB__ENVELOPE__BODY_PONG, on_pong },
	{ KNOB__ENVELOPE__BODY_PHASE_READY, on_ready },
	{ KNOB__ENVELOPE__BODY_PHASE_PROGRESS, on_progress },
	{ KNOB__ENVELOPE__BODY_PHASE_RESULT, on_result },
	{ KNOB__ENVELOPE__BODY_ERROR, on_error },
};

/* Dispatch a message from node n by its body type. */
static int
on_msg(struct fanout *fo, struct fo_node *n, Knob__Envelope *m)
{
	struct brun *br = fo->user;

	for (size_t i = 0; i < nitems(handlers); i++)
		if (handlers[i].body == m->body_case) {
			if (!handlers[i].fn(br, n, m))
				knob__envelope__free_unpacked(m, NULL);
			return 0;
		}
	log_warnx("%s: unexpected %s message", n->name, envelope_body_name(m));
	knob__envelope__free_unpacked(m, NULL);
	return 0;
}

/* The first signal's number, else the one that cut the run off, else 0. */
static int
stop_signal(const struct brun *br)
{
	int sig = br->req->stop ? atomic_load(br->req->stop) : 0;

	return sig ? sig : cut_off(br);
}

/* The run is cut off by a signal before its stop began (a play's, or a
 * second before a tick saw the first): recorded as interrupted where it
 * was, and the phase in flight is not finished as one (its nodes, ended
 * by the cut, are not lost ones: ST_STOPPING names them as unknown). */
static void
stop_cut(struct brun *br, int sig)
{
	br->stop_sig = sig;
	bench_doc_interrupted(br, stop_sig_name(sig));
	if (br->stage != ST_RELEASE)
		br->stage = ST_STOPPING;
}

/* Node n's connection ended: it is out of the run. */
static void
on_end(struct fanout *fo, struct fo_node *n)
{
	struct brun *br = fo->user;
	struct pnode *pn = &br->pn[n->idx];

	if (!pn->alive)
		return;
	pn->alive = 0;
	if (br->stage == ST_DONE)
		return;
	if (!br->stop_sig && cut_off(br))
		stop_cut(br, stop_signal(br));
	pn->death = xasprintf("%s%s%s", node_status_name(n->status), n->detail ? ": " : "",
	    n->detail ? n->detail : "");
	clear_line(br);
	log_warnx("%s: %s", n->name, pn->death);
	if (pn->rel_wait) {	/* lost before it confirmed the release */
		lost_files(br, n->idx, pn->rel_wd);
		pn->rel_wait = 0;
	}
	advance(br);
}

/* The stall deadline of the run: --stall-timeout, else three times the
 * phase's expected length (--stonewall or --runtime), at least 60 s; it
 * bounds a release that removes nothing too. */
static uint32_t
stall_limit(const struct bench_req *rq)
{
	uint32_t t = rq->stonewall_s > rq->runtime_s ? rq->stonewall_s : rq->runtime_s;

	if (rq->stall_s)
		return rq->stall_s;
	return t > UINT32_MAX / 3 ? UINT32_MAX : t * 3 > 60 ? t * 3 : 60;
}

/* Why node i's release is given up on at now, malloc'd; NULL: it is not
 * (it confirmed, or its word or its progress is recent enough). */
static char *
release_given_up(struct brun *br, size_t i, uint64_t now)
{
	const struct pnode *pn = &br->pn[i];
	const char *wd = pn->rel_wd, *name = br->fo->nodes[i].name;
	uint32_t lim = stall_limit(br->req);
	char *ranks, *msg;

	if (!pn->rel_wait || !pn->alive)
		return NULL;
	if (now >= pn->rel_deadline) {
		ranks = ranks_list(pn);
		msg = xasprintf("%s: no word of removing the files of knob.%s for %u s; not "
		    "waiting (the files of its ranks %s may be left in %s/knob.%s)", name, wd,
		    release_wait_s(), ranks, br->req->dir, wd);
		free(ranks);
		return msg;
	}
	if (now - pn->rel_moved >= (uint64_t)lim * 1000000000ull)
		return xasprintf("%s: release stalled (nothing removed for %u s): files may be "
		    "left in %s/knob.%s on %s", name, lim, br->req->dir, wd, name);
	return NULL;
}

/* Release: a node that has not confirmed, nor said it is still removing
 * the files, for RELEASE_WAIT_S, or whose removal has not moved for the
 * stall deadline (a delete stuck in the kernel), is given up on
 * (cleanup_failed, cleared if its confirmation comes later) and the run
 * goes on. */
static void
release_check(struct brun *br, uint64_t now)
{
	int gave_up = 0;

	for (size_t i = 0; i < br->fo->n; i++) {
		struct pnode *pn = &br->pn[i];
		char *msg = release_given_up(br, i, now);

		if (msg == NULL)
			continue;
		gave_up = 1;
		json_object_object_add(cleanup_failed(br, br->fo->nodes[i].name, pn->rel_wd, msg,
		    1), "unconfirmed", json_object_new_boolean(1));
		free(msg);
		pn->rel_wait = 0;
		pn->rel_late = pn->rel_wd;
	}
	if (gave_up)
		advance(br);
}

/* Does node pn of the running phase wait for us, not for its I/O: at the
 * stonewall before the wear-out target went, or with every thread done
 * and its first thread's end reported before the first-done moment went
 * (its agent answers only then; one that did not report it owes its
 * report, or its result). */
static int
waits_for_us(const struct brun *br, const struct pnode *pn)
{
	return (pn->wall_rep && !br->wall_sent) ||
	    (pn->prog_done >= pn->nranks && pn->fd_rep && !br->fd_sent);
}

/* The length the running phase can last on node pn, in *len (seconds),
 * and what sets it (its words); NULL when its size bounds it instead: a
 * --runtime data phase; an external tool (its agent ends it after
 * --ext-timeout, default 3600 s); up to the stonewall, its report (a
 * node with --stonewall that has not reported it yet). */
static const char *
phase_length(const struct brun *br, const struct pnode *pn, uint32_t *len)
{
	const struct bench_req *rq = br->req;
	const char *kind = br->plan[br->cur].kind;

	if (bench_kind_ext(kind)) {
		*len = rq->ext_timeout_s ? rq->ext_timeout_s : 3600;
		return "its agent ends the tool then: --ext-timeout";
	}
	if (rq->runtime_s && !bench_kind_md(kind)) {
		*len = rq->runtime_s;
		return "--runtime";
	}
	if (rq->stonewall_s && pn->wall_sync && !pn->wall_rep) {
		*len = rq->stonewall_s;
		return "--stonewall: no report at the wall";
	}
	return NULL;
}

/* Why node pn of the running phase is still running at now past what the
 * phase can last (malloc'd), NULL when it is not: the phase's length and
 * the stall limit lim, counted from GO, or from the moment we sent the
 * wear-out target or the first-done moment, when later. */
static char *
overran(const struct brun *br, const struct pnode *pn, uint64_t now, uint32_t lim)
{
	uint64_t from = br->go_mono, end;
	const char *what;
	uint32_t len = 0;

	if ((what = phase_length(br, pn, &len)) == NULL)
		return NULL;
	end = from + (uint64_t)len * 1000000000ull;
	if (br->wall_sent && br->wall_mono > end)
		end = br->wall_mono;
	if (br->fd_sent && br->fd_mono > end)
		end = br->fd_mono;
	if (now < end + (uint64_t)lim * 1000000000ull)
		return NULL;
	return xasprintf("still running %llu s into a %u s phase (%s), past that and the %u s "
	    "stall limit", (unsigned long long)((now - from) / 1000000000ull), len, what, lim);
}

/* Why node pn of the running phase is ended at now (malloc'd), NULL: it is
 * not.  Stalled: its counts have not moved for the limit (an I/O stuck in
 * the kernel, which its agent's progress reports, sent from another
 * thread, do not show; external tools report none).  Overran: moving or
 * not, it runs past what the phase can last (overran).  A node waiting
 * for us is neither. */
static char *
run_overdue(const struct brun *br, struct pnode *pn, uint64_t now)
{
	uint32_t lim = stall_limit(br->req);

	if (waits_for_us(br, pn)) {
		pn->prog_mono = now;
		return NULL;
	}
	if (!bench_kind_ext(br->plan[br->cur].kind) &&
	    now - pn->prog_mono >= (uint64_t)lim * 1000000000ull)
		return xasprintf("stalled: no progress for %u s: I/O stuck?", lim);
	return overran(br, pn, now, lim);
}

/* Why node i, not yet done with the stage, is ended at now (malloc'd),
 * NULL: it is not.  Running: run_overdue.  After a failed prepare: no
 * answer to the abort for the stall limit.  A clock sync: no pong for
 * --timeout after the ping (other frames, which move the connection's
 * deadline, do not sync a clock). */
static char *
overdue(struct brun *br, size_t i, uint64_t now)
{
	struct pnode *pn = &br->pn[i];
	uint32_t lim = stall_limit(br->req);

	if (br->stage == ST_SYNC || br->stage == ST_GOSYNC)
		return !pn->synced && pn->npings < SYNC_PINGS &&
		    now - pn->last_ping_ns >= (uint64_t)(br->ctl->timeout * 1e9) ?
		    xasprintf("no answer to the clock-sync ping within %.1f s", br->ctl->timeout) :
		    NULL;
	if (!pn->inphase || pn->st != PN_GO)
		return NULL;
	if (br->stage == ST_RUN)
		return run_overdue(br, pn, now);
	if (br->stage == ST_ABORTING && now - br->abort_mono >= (uint64_t)lim * 1000000000ull)
		return xasprintf("no answer to the abort for %u s", lim);
	return NULL;
}

/* Deadlines of the stage (overdue): a node past one is ended as failed,
 * counts as missing, and the phase is recorded with the others. */
static void
stage_check(struct brun *br, uint64_t now)
{
	int outer = br->advancing, ended = 0;
	char *why;

	if (br->stage != ST_RUN && br->stage != ST_ABORTING && br->stage != ST_SYNC &&
	    br->stage != ST_GOSYNC)
		return;
	br->advancing = 1;	/* the ends below advance once, after the loop */
	for (size_t i = 0; i < br->fo->n; i++) {
		if (!br->pn[i].alive || br->fo->nodes[i].phase != FO_OPEN ||
		    (why = overdue(br, i, now)) == NULL)
			continue;
		fanout_end(br->fo, &br->fo->nodes[i], NS_FAILED, "%s", why);
		free(why);
		ended = 1;
	}
	br->advancing = outer;
	if (ended)
		advance(br);
}

static void
on_tick(struct fanout *fo)
{
	struct brun *br = fo->user;
	uint64_t now;

	/* a stop first: the releases it sends are dated before this tick's now */
	if (br->req->stop && !br->stop_sig && br->stage != ST_DONE &&
	    atomic_load_explicit(br->req->stop, memory_order_relaxed))
		begin_stop(br, atomic_load(br->req->stop));
	now = now_mono_ns();
	/* lease: every agent hears from us at least once a second */
	for (size_t i = 0; i < fo->n; i++) {
		struct pnode *pn = &br->pn[i];
		struct fo_node *n = &fo->nodes[i];

		if (pn->alive && pn->synced && n->phase == FO_OPEN &&
		    now - pn->last_ping_ns >= 900000000ull)
			send_ping(br, n);
	}
	if (br->stage == ST_RELEASE)
		release_check(br, now);
	stage_check(br, now);
	stop_check(br, now);
	draw_progress(br);
}

/* "20261206-063629-1f2e3d4c": local start time and 32 random bits (16
 * bits made two benches started in the same second collide one time in
 * 65536; the results database refuses a collision rather than merge). */
static void
make_run_id(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;
	uint32_t rnd = 0;
	char ts[32];

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)(getpid() ^ now ^ (now_mono_ns() << 16));
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "%s-%08x", ts, rnd);
}

int
bench_run(struct ctl *ctl, const struct strvec *nodes, const struct bench_req *req,
    json_object **doc)
{
	static const struct fo_ops ops = {
		.on_open = on_open, .on_msg = on_msg, .on_tick = on_tick, .on_end = on_end,
		.retry_busy = 1, .busy_until = busy_until, .busy_resend = busy_resend,
	};
	struct brun br;
	struct fanout fo;
	size_t i;
	int sig;

	memset(&br, 0, sizeof(br));
	br.ctl = ctl;
	br.req = req;
	br.fo = &fo;
	make_run_id(br.run_id, sizeof(br.run_id));
	br.plan = bench_make_plan(req, br.run_id, &br.nplan);
	fanout_init(&fo, ctl, nodes);
	fo.all_at_once = 1;	/* phases need every node connected */
	br.pn = xcalloc(fo.n ? fo.n : 1, sizeof(*br.pn));
	for (i = 0; i < fo.n; i++) {
		br.pn[i].alive = 1;
		br.pn[i].best_rtt = UINT64_MAX;
	}
	bench_doc_begin(&br, nodes);
	if (req->on_start)
		req->on_start(req->hook_arg, br.doc);
	if (fanout_run(&fo, &ops, &br) < 0)
		br.bad = 2;
	clear_line(&br);
	/* a signal no tick nor end saw (every node gone before it); one after
	 * the run's end stops nothing */
	if (!br.stop_sig && br.stage != ST_DONE && (sig = stop_signal(&br)) != 0)
		stop_cut(&br, sig);
	/* phases that never ran (the run was cut short; not one a signal
	 * stopped: its figures are no phase's) */
	if (br.stage != ST_DONE) {
		if (br.stage != ST_SYNC && br.stage != ST_RELEASE && br.cur < br.nplan &&
		    !br.stop_sig)
			finalize_phase(&br);
		br.bad = br.bad ? br.bad : 1;
	}
	/* nodes lost before their workdir was released (every node lost) */
	for (i = 0; i < fo.n && !req->keep; i++)
		if (!br.pn[i].alive && br.pn[i].files_wd)
			lost_files(&br, i, br.pn[i].files_wd);
	if ((br.stop_sig || json_object_object_get_ex(br.doc, "cleanup_failed", NULL)) && !br.bad)
		br.bad = 1;
	bench_doc_end(&br);
	for (i = 0; i < fo.n; i++) {
		struct pnode *pn = &br.pn[i];

		free(pn->ranks);
		free(pn->err);
		free(pn->death);
		if (pn->ready)
			knob__envelope__free_unpacked(pn->ready, NULL);
		if (pn->result)
			knob__envelope__free_unpacked(pn->result, NULL);
	}
	free(br.pn);
	free(br.hosts);
	free(br.slots);
	free(br.plan);
	fanout_free(&fo);
	*doc = br.doc;
	return br.bad == 2 ? 2 : br.bad ? 1 : 0;
}
