/* knobctl sweep: health checks on every target in parallel.
 *
 * Per node: a Ping (reachability, clock offset; an agent that answers with
 * the wrong certificate, or refuses ours, is the "auth" check failing),
 * then one HealthRequest built from the sweep file for that node (an agent
 * that answers it with an Error, or drops the connection before answering,
 * is the "agent" check failing: knob's side, never counted toward a drain).
 * The agent answers within the largest deadline of its checks; the
 * controller waits that long plus a margin.
 * Output is folded by (check, state, reason); the exit status is 0 when
 * every node is ok, 1 when any check is warn or worse or a node is
 * unreachable (or its agent answered with an Error or dropped the
 * connection), 2 on a usage or sweep-file error, 3 when the sweep itself
 * failed (the --prom file, the results database, scontrol, no node checked
 * because the agents refused our credentials, answered with an error or
 * dropped the connection). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_ctl.h"
#include "log.h"
#include "nodeset.h"
#include "opt.h"
#include "stats.h"
#include "sweep.h"
#include "visible.h"

#define DEFAULT_SWEEP_FILE "/etc/knob/sweep.xml"
#define MARGIN_S 5

static const char *const state_names[SS__COUNT] = {
	[SS_OK] = "ok", [SS_SKIPPED] = "skipped", [SS_WARN] = "warn", [SS_SLOW] = "slow",
	[SS_TIMEOUT] = "timeout", [SS_FAIL] = "fail", [SS_HUNG] = "hung",
	[SS_UNREACHABLE] = "unreachable",
};

/* Agent HealthState -> sweep state (ordered by severity). */
static const int from_wire[] = {
	[KNOB__HEALTH_STATE__HEALTH_UNSPECIFIED] = SS_FAIL,
	[KNOB__HEALTH_STATE__HEALTH_OK] = SS_OK,
	[KNOB__HEALTH_STATE__HEALTH_WARN] = SS_WARN,
	[KNOB__HEALTH_STATE__HEALTH_FAIL] = SS_FAIL,
	[KNOB__HEALTH_STATE__HEALTH_TIMEOUT] = SS_TIMEOUT,
	[KNOB__HEALTH_STATE__HEALTH_HUNG] = SS_HUNG,
	[KNOB__HEALTH_STATE__HEALTH_SLOW] = SS_SLOW,
	[KNOB__HEALTH_STATE__HEALTH_SKIPPED] = SS_SKIPPED,
};

const char *
sweep_state_name(int st)
{
	return st >= 0 && st < SS__COUNT ? state_names[st] : "fail";
}

int
sweep_state_bad(int st)
{
	return st >= SS_WARN;
}

int
sweep_state_failing(int st)
{
	return st >= SS_SLOW;
}

int
sweep_check_counts(const struct sweep_check *c)
{
	return c->cause == SC_NODE && sweep_state_failing(c->state);
}

int
sweep_node_failing(const struct sweep_node *sn, int knob_side)
{
	for (size_t k = 0; k < sn->n; k++)
		if ((sn->c[k].cause != SC_NODE) == (knob_side != 0) &&
		    sweep_state_failing(sn->c[k].state))
			return 1;
	return 0;
}

/* 1 when no node of the run could be checked (each one refused our
 * credentials, answered with an Error, dropped the connection mid-request
 * or could not be reached) and at least one agent was reached and did not
 * check its node (refused our credentials, answered with an Error or
 * dropped the connection): the sweep's own failure, not the nodes'.
 * Unreachable alone stays 1: the whole fleet may be down. */
static int
all_controller_side(const struct sweep_run *run)
{
	size_t declined = 0;

	for (size_t i = 0; i < run->n; i++) {
		const struct sweep_node *sn = &run->nodes[i];

		if (sn->n != 1 || sn->c[0].cause == SC_NODE)
			return 0;
		declined += sn->c[0].cause == SC_CONTROLLER || sn->c[0].cause == SC_AGENT;
	}
	return declined > 0;
}

/* Per-node state of the run. */
struct snode {
	Knob__HealthRequest req;
	struct sweep_limits lim;
	double budget_s;
	uint64_t t_ping;
	uint64_t t_ping_mono;	/* the ping's send, for its round trip */
	uint64_t rtt_ns;	/* the ping's round trip: the offset is known to rtt/2 */
	int64_t offset_ns;
	int have_offset;
	int agent_error;	/* the agent answered with an Error (n->detail) */
	Knob__Envelope__BodyCase want;	/* the answer due: pong, then health_result */
};

struct sopts {
	const char *file, *probe, *prom, *scontrol;
	int drain, verbose;
};

/* The margin over the agent's own deadlines: MARGIN_S, or for tests only
 * KNOB_TEST_SWEEP_MARGIN_S (whole seconds, 1 to MARGIN_S), to give up on a
 * node sooner. */
static double
margin_s(void)
{
	return env_number("KNOB_TEST_SWEEP_MARGIN_S", 1, MARGIN_S, MARGIN_S);
}

/* How long the agent may take: its largest check deadline, plus margin. */
static double
budget_of(const Knob__HealthRequest *r)
{
	double to = r->check_timeout_ms ? r->check_timeout_ms / 1000.0 : 10, b = to;

	for (size_t i = 0; i < r->n_mounts; i++) {
		double m = (r->mounts[i]->timeout_ms ? r->mounts[i]->timeout_ms / 1000.0 : 5) + 1;

		b = fmax(b, m);
	}
	if (r->probe)
		b = fmax(b, to + 2.0 * (r->probe->seq_s + r->probe->md_s));
	return b + margin_s();
}

static int
sw_open(struct fanout *fo, struct fo_node *n)
{
	struct snode *sn = n->user;
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping ping = KNOB__PING__INIT;

	sn->want = KNOB__ENVELOPE__BODY_PONG;
	sn->t_ping = now_real_ns();
	sn->t_ping_mono = now_mono_ns();
	ping.t_send_ns = sn->t_ping;
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	return fanout_send(fo, n, &env);
}

static int
sw_msg(struct fanout *fo, struct fo_node *n, Knob__Envelope *m)
{
	struct snode *sn = n->user;
	Knob__Envelope env = KNOB__ENVELOPE__INIT;

	if (m->body_case != sn->want && m->body_case != KNOB__ENVELOPE__BODY_ERROR) {
		/* ignored, a stream of them would hold the node past every
		 * deadline (each frame moves it): the sweep never ended */
		fanout_end(fo, n, NS_FAILED, "agent sent %s, not %s", envelope_body_name(m),
		    envelope_body_name(&(Knob__Envelope){ .body_case = sn->want }));
		knob__envelope__free_unpacked(m, NULL);
		return -1;
	}
	switch (m->body_case) {
	case KNOB__ENVELOPE__BODY_PONG:
		sn->want = KNOB__ENVELOPE__BODY_HEALTH_RESULT;
		sn->offset_ns = bench_offset_sample(sn->t_ping, now_real_ns(), m->pong->agent_time_ns);
		sn->rtt_ns = now_mono_ns() - sn->t_ping_mono;
		sn->have_offset = 1;
		knob__envelope__free_unpacked(m, NULL);
		env.body_case = KNOB__ENVELOPE__BODY_HEALTH;
		env.health = &sn->req;
		if (fanout_send(fo, n, &env) < 0)
			return -1;
		fanout_deadline(n, sn->budget_s);
		return 0;
	case KNOB__ENVELOPE__BODY_HEALTH_RESULT:
		n->reply = m;
		n->status = NS_OK;
		return 1;
	case KNOB__ENVELOPE__BODY_ERROR:	/* knob's side: SC_AGENT */
		sn->agent_error = 1;
		n->status = NS_FAILED;
		free(n->detail);
		n->detail = xstrdup(m->error->message);
		knob__envelope__free_unpacked(m, NULL);
		return -1;
	default:	/* not reached: want is one of the above */
		knob__envelope__free_unpacked(m, NULL);
		return -1;
	}
}

/* ------------------------------------------------------------ results */

static void
check_add(struct sweep_node *sn, const char *check, const char *target, int state,
    const char *reason, uint64_t since)
{
	struct sweep_check *c;

	sn->c = xrealloc(sn->c, (sn->n + 1) * sizeof(*sn->c));
	c = &sn->c[sn->n++];
	c->check = xstrdup(check);
	c->target = xstrdup(target ? target : "");
	c->reason = xstrdup(reason);
	c->state = state;
	c->cause = SC_NODE;
	c->since_ns = since;
	if (state > sn->worst)
		sn->worst = state;
}

/* The fleet's clock: the median offset of the nodes whose ping bounds
 * their offset within the max (a ping too slow to say whether a node is
 * within it says nothing about the fleet either: several slow links would
 * drag the median, and healthy nodes would be judged against it). */
struct clockref {
	double median_s;
	size_t answered;	/* nodes with an offset */
	size_t trusted;		/* ... whose ping bounds it: those in the median */
};

#define CLOCK_FLEET_MIN 3	/* nodes the fleet median needs */

/* 1 when half of s's ping round trip (what its offset is known to within)
 * is at most its max. */
static int
clock_trusted(const struct snode *s)
{
	return (double)s->rtt_ns / 2e9 <= s->lim.clock_max_s;
}

/* Median clock offset of the nodes that answered with a ping that bounds
 * their offset into *ref. */
static void
clock_ref(const struct fanout *fo, const struct snode *sn, struct clockref *ref)
{
	double *v = xcalloc(fo->n ? fo->n : 1, sizeof(*v));
	size_t k = 0;

	ref->answered = 0;
	for (size_t i = 0; i < fo->n; i++) {
		if (fo->nodes[i].status != NS_OK || !fo->nodes[i].reply || !sn[i].have_offset)
			continue;
		ref->answered++;
		if (clock_trusted(&sn[i]))
			v[k++] = (double)sn[i].offset_ns / 1e9;
	}
	ref->trusted = k;
	ref->median_s = stats_median(v, k);
	free(v);
}

/* The state of a clock dist s from its reference, measured to within unc s
 * (half the ping's round trip: the ping or the pong may have taken all of
 * it): fail only when it is more than max off however the round trip was
 * split; warn when the offset measured is over max but the round trip
 * could explain it; ok when the offset measured is within max (as before
 * the round trip was taken into account: a slow link makes no node fail
 * or warn whose measured offset is within the max).  The "; ..." to
 * append to the reason into note ("" when the round trip does not
 * matter). */
static int
clock_state(double dist, double max, double unc, char *note, size_t len)
{
	note[0] = '\0';
	if (fabs(dist) + unc <= max)
		return SS_OK;
	if (fabs(dist) - unc > max) {
		if (unc >= 0.0005)
			snprintf(note, len, "; more than the max even with the ping's %.3f s "
			    "round trip taken into account", 2 * unc);
		return SS_FAIL;
	}
	if (fabs(dist) <= max) {
		snprintf(note, len, "; the ping's round trip took %.3f s, so the offset is known to "
		    "within %.3f s only", 2 * unc, unc);
		return SS_OK;
	}
	snprintf(note, len, "; the ping's round trip took %.3f s, so the offset is known to "
	    "within %.3f s only: not judged, not counted toward a drain", 2 * unc, unc);
	return SS_WARN;
}

/* Into buf, the "; ..." saying why a node in state st was judged against
 * the controller's clock: too few nodes answered (said only when it
 * fails), or too few with a ping that bounds their offset (always said: no
 * fleet median, although a fleet answered). */
static void
clock_no_fleet(char *buf, size_t len, const struct clockref *ref, int st)
{
	buf[0] = '\0';
	if (ref->answered >= CLOCK_FLEET_MIN)
		snprintf(buf, len, "; against the controller's clock: only %zu of %zu nodes' "
		    "pings bound their offset within the max (the fleet median needs %d)",
		    ref->trusted, ref->answered, CLOCK_FLEET_MIN);
	else if (st == SS_FAIL)
		snprintf(buf, len, "; fewer than %d nodes answered", CLOCK_FLEET_MIN);
}

/* The clock check: with 3 or more nodes whose ping bounds their offset,
 * the offset from their median (a controller whose clock jumped fails
 * nobody); with fewer, the offset from the controller, not counted toward
 * a drain.  Either way only an offset beyond the max by more than the
 * ping's round trip can explain fails: a pong that came back late is not a
 * clock that is off. */
static void
clock_check(struct sweep_node *out, const struct snode *s, const struct clockref *ref)
{
	double off = (double)s->offset_ns / 1e9, max = s->lim.clock_max_s;
	double unc = (double)s->rtt_ns / 2e9;
	char why[768], o[32], m[32], note[256], nofleet[192];
	int st;

	signed_fmt(o, sizeof(o), off, 3);
	if (ref->trusted >= CLOCK_FLEET_MIN) {
		st = clock_state(off - ref->median_s, max, unc, note, sizeof(note));
		snprintf(why, sizeof(why), "offset %s s, %s s from the fleet median "
		    "(max %.3f s)%s%s", o, signed_fmt(m, sizeof(m), off - ref->median_s, 3), max,
		    note, clock_trusted(s) ? "" : "; not in the fleet median");
		check_add(out, "clock", NULL, st, why, 0);
		return;
	}
	st = clock_state(off, max, unc, note, sizeof(note));
	clock_no_fleet(nofleet, sizeof(nofleet), ref, st);
	snprintf(why, sizeof(why), "offset %s s (max %.3f s)%s%s%s", o, max, note, nofleet,
	    st == SS_FAIL ? ", so the controller's clock may be the one off: not counted "
	    "toward a drain" : "");
	check_add(out, "clock", NULL, st, why, 0);
	out->c[out->n - 1].cause = st == SS_FAIL ? SC_KNOB : SC_NODE;
}

/* 1 when the agent took our connection (its session was open: the ping
 * went out) and the connection then ended, failed rather than timed out,
 * without an answer: knobd killed or crashing mid-request. */
static int
lost_mid_request(const struct fo_node *n, const struct snode *s)
{
	return s->t_ping != 0 && !s->agent_error &&
	    (n->status == NS_FAILED || n->status == NS_UNREACHABLE);
}

/* Whose failure a node's failed connection is: the agent refusing our
 * credentials is the controller's; an agent that answered with an Error, or
 * dropped the connection mid-request, never checked the node; not reaching
 * the agent, or no answer to the ping, is not told apart from knob's side;
 * the rest is the node's. */
static int
reach_cause(const struct fo_node *n, const struct snode *s)
{
	const char *d = n->detail ? n->detail : "";

	if (s->agent_error || lost_mid_request(n, s))
		return SC_AGENT;
	if (n->status == NS_AUTH_FAILED)
		return strncmp(d, "agent refused", 13) == 0 || strncmp(d, "ssh", 3) == 0 ?
		    SC_CONTROLLER : SC_NODE;
	if (n->status == NS_UNREACHABLE || (n->status == NS_TIMEOUT && !s->have_offset))
		return SC_KNOB;
	return SC_NODE;
}

/* The one finding of a node without a health result: "auth" for an agent
 * that answered with the wrong certificate (or refused ours), "agent" for
 * one that answered with an Error or dropped the connection mid-request,
 * else "reach"; with its cause. */
static void
no_result_check(const struct fo_node *n, const struct snode *s, struct sweep_node *out,
    const struct ctl *ctl)
{
	int lost = lost_mid_request(n, s), agent = s->agent_error || lost;
	int st = agent ? SS_FAIL : n->status == NS_TIMEOUT ? SS_TIMEOUT :
	    n->status == NS_UNREACHABLE ? SS_UNREACHABLE : SS_FAIL;
	const char *d = n->detail ? n->detail : node_status_name(n->status);
	char why[512];

	snprintf(why, sizeof(why), "%s", d);
	if (s->agent_error)
		snprintf(why, sizeof(why), "answered with an error, not a health result: %s; "
		    "knob's side, not counted toward a drain", d);
	else if (lost)	/* the transport's "connection lost: " said once */
		snprintf(why, sizeof(why), "connection lost mid-request, no health result: %s; "
		    "knob's side, not counted toward a drain",
		    strncmp(d, "connection lost: ", 17) == 0 ? d + 17 : d);
	else if (n->status == NS_TIMEOUT)
		snprintf(why, sizeof(why), "no answer in %.0f s", s->have_offset ?
		    s->budget_s : ctl->timeout);
	check_add(out, agent ? "agent" : n->status == NS_AUTH_FAILED ? "auth" : "reach",
	    NULL, st, why, 0);
	out->c[out->n - 1].cause = reach_cause(n, s);
}

/* Reachability, clock and the agent's findings of one node. */
static void
node_checks(struct fo_node *n, struct snode *s, struct sweep_node *out, const struct ctl *ctl,
    const struct clockref *ref)
{
	const Knob__HealthResult *r;

	out->name = n->name;
	if (n->status != NS_OK || n->reply == NULL) {
		no_result_check(n, s, out, ctl);
		return;
	}
	r = n->reply->health_result;
	check_add(out, "reach", NULL, SS_OK, ctl->ssh.via ? "answered over SSH (host key "
	    "checked)" : "answered with its node certificate", 0);
	clock_check(out, s, ref);
	for (size_t i = 0; i < r->n_checks; i++) {
		const Knob__HealthCheck *c = r->checks[i];
		int st = (size_t)c->state < nitems(from_wire) ? from_wire[c->state] : SS_FAIL;

		check_add(out, c->check, c->target, st, c->reason, c->since_ns);
	}
}

/* The probe metric of node i, or -1 when it has none. */
static double
probe_metric(struct fanout *fo, size_t i, const char *name)
{
	const Knob__HealthResult *r;

	if (fo->nodes[i].status != NS_OK || fo->nodes[i].reply == NULL)
		return -1;
	r = fo->nodes[i].reply->health_result;
	for (size_t k = 0; k < r->n_checks; k++)
		if (strcmp(r->checks[k]->check, "probe") == 0 &&
		    r->checks[k]->state == KNOB__HEALTH_STATE__HEALTH_OK)
			for (size_t m = 0; m < r->checks[k]->n_metrics; m++)
				if (strcmp(r->checks[k]->metrics[m]->name, name) == 0)
					return r->checks[k]->metrics[m]->value;
	return -1;
}

/* Node i's probe as a key ("DIR|BLOCK_SIZE"): only nodes that probed the
 * same directory with the same block size are measured against each other
 * (a group on Lustre and one on local NVMe are not one fleet). */
static void
probe_key(const struct fanout *fo, size_t i, char *buf, size_t len)
{
	const struct snode *sn = fo->nodes[i].user;
	const Knob__ProbeSpec *p = sn ? sn->req.probe : NULL;

	snprintf(buf, len, "%s|%llu", p && p->dir ? p->dir : "",
	    p ? (unsigned long long)p->block_size : 0ull);
}

/* Mark node j's probe check slow on metric: value v against the median. */
static void
mark_one_slow(struct sweep_node *sn, const char *metric, int md, double v, double med)
{
	for (size_t c = 0; c < sn->n; c++) {
		char *r;

		if (strcmp(sn->c[c].check, "probe") != 0)
			continue;
		r = sn->c[c].state == SS_SLOW ? xasprintf("%s; ", sn->c[c].reason) : xstrdup("");
		free(sn->c[c].reason);
		sn->c[c].reason = md ?
		    xasprintf("%s%s %.0f/s, fleet median %.0f/s", r, metric, v, med) :
		    xasprintf("%s%s %.1f MiB/s, fleet median %.1f MiB/s", r, metric, v / 1048576,
		    med / 1048576);
		free(r);
		sn->c[c].state = SS_SLOW;
		if (sn->worst < SS_SLOW)
			sn->worst = SS_SLOW;
	}
}

/* The probe of node j (fo->nodes[j]) was judged by no fleet: only k nodes
 * (fewer than 3) probed its directory with its block size.  Its ok probe
 * says so, or it would read as measured and found fine. */
static void
note_uncompared(struct fanout *fo, struct sweep_node *sn, size_t j, size_t k)
{
	const struct snode *s = fo->nodes[j].user;

	for (size_t c = 0; c < sn->n; c++)
		if (strcmp(sn->c[c].check, "probe") == 0 && sn->c[c].state == SS_OK)
			str_appendf(&sn->c[c].reason, "; not compared: %zu node%s probed %s with "
			    "this block size, the fleet-relative rule needs 3", k, k == 1 ? "" : "s",
			    s->req.probe->dir);
}

/* One metric over the nodes whose probe key is keys[first]; done[i] marks
 * them.  With note, a group too small to judge says so (note_uncompared). */
static void
slow_group(struct fanout *fo, struct sweep_run *run, const struct sweep_policy *pol,
    const char *metric, int md, char **keys, size_t first, int *done, int note)
{
	double *v = xcalloc(fo->n, sizeof(*v)), med;
	size_t *idx = xcalloc(fo->n, sizeof(*idx)), k = 0;
	int *slow = xcalloc(fo->n, sizeof(*slow));

	for (size_t i = first; i < fo->n; i++) {
		if (done[i] || strcmp(keys[i], keys[first]) != 0)
			continue;
		done[i] = 1;
		if ((v[k] = probe_metric(fo, i, metric)) >= 0)
			idx[k++] = i;
	}
	for (size_t j = 0; note && k < 3 && j < k; j++)
		note_uncompared(fo, &run->nodes[idx[j]], idx[j], k);
	if (outlier_slow(v, k, pol->slow_mads, pol->slow_min_gap, slow, &med) > 0)
		for (size_t j = 0; j < k; j++)
			if (slow[j])
				mark_one_slow(&run->nodes[idx[j]], metric, md, v[j], med);
	free(v);
	free(idx);
	free(slow);
}

/* Mark slow probe checks: each metric against the nodes that measured it
 * the same way (probe_key); an ok probe with fewer than 3 such nodes says
 * it was not compared. */
static void
mark_slow(struct fanout *fo, struct sweep_run *run, const struct sweep_policy *pol)
{
	static const char *const metrics[] = { "seq-write", "seq-read", "md-create", "md-stat" };
	int *done = xcalloc(fo->n ? fo->n : 1, sizeof(*done));
	char **keys = xcalloc(fo->n ? fo->n : 1, sizeof(*keys)), key[PATH_MAX + 32];

	for (size_t i = 0; i < fo->n; i++) {
		probe_key(fo, i, key, sizeof(key));
		keys[i] = xstrdup(key);
	}
	for (size_t m = 0; m < nitems(metrics); m++) {
		memset(done, 0, (fo->n ? fo->n : 1) * sizeof(*done));
		for (size_t i = 0; i < fo->n; i++)
			if (!done[i])
				slow_group(fo, run, pol, metrics[m], m >= 2, keys, i, done, m == 0);
	}
	for (size_t i = 0; i < fo->n; i++)
		free(keys[i]);
	free(keys);
	free(done);
}

static void
run_free(struct sweep_run *run)
{
	for (size_t i = 0; i < run->n; i++) {
		for (size_t k = 0; k < run->nodes[i].n; k++) {
			free(run->nodes[i].c[k].check);
			free(run->nodes[i].c[k].target);
			free(run->nodes[i].c[k].reason);
		}
		free(run->nodes[i].c);
	}
	free(run->nodes);
}

/* ------------------------------------------------------------ output */

/* "mount /mnt/x hung (no answer to stat in 5.0 s)", its control
 * characters as \xNN: one finding, one line (a mount path may hold a
 * newline). */
static char *
check_line(const struct sweep_check *c)
{
	char *raw = xasprintf("%s%s%s %s (%s)", c->check, c->target[0] ? " " : "", c->target,
	    sweep_state_name(c->state), c->reason), *line = str_visible_dup(raw, 0);

	free(raw);
	return line;
}

struct fline {
	char *text;
	size_t first;		/* order of first appearance */
	struct strvec nodes;
};

/* Print the findings folded by their text: one line per distinct
 * (check, target, state, reason) with its node set. */
static void
print_folded(FILE *f, const struct sweep_run *run, int verbose)
{
	struct fline *l = NULL;
	size_t nl = 0, order = 0;

	for (size_t i = 0; i < run->n; i++)
		for (size_t k = 0; k < run->nodes[i].n; k++) {
			const struct sweep_check *c = &run->nodes[i].c[k];
			char *t;
			size_t j;

			if (!verbose && !sweep_state_bad(c->state))
				continue;
			t = check_line(c);
			for (j = 0; j < nl && strcmp(l[j].text, t) != 0; j++)
				;
			if (j == nl) {
				l = xrealloc(l, (nl + 1) * sizeof(*l));
				memset(&l[nl], 0, sizeof(*l));
				l[nl].text = t;
				l[nl++].first = order++;
			} else
				free(t);
			strvec_push(&l[j].nodes, run->nodes[i].name);
		}
	for (size_t j = 0; j < nl; j++) {
		char *set = nodeset_fold(l[j].nodes.v, l[j].nodes.n);

		fprintf(f, "%s: %s\n", set, l[j].text);
		free(set);
		free(l[j].text);
		strvec_free(&l[j].nodes);
	}
	free(l);
}

/* "sweep of 4 nodes in 6.1 s: 1 ok, 1 fail (node01), 1 hung (node03), ..." */
static void
print_summary(FILE *f, const struct sweep_run *run)
{
	fprintf(f, "sweep of %zu node%s in %.1f s:", run->n, run->n == 1 ? "" : "s",
	    run->duration_s);
	for (int st = 0, sep = 0; st < SS__COUNT; st++) {
		char **names = xcalloc(run->n + 1, sizeof(*names));
		size_t k = 0;

		for (size_t i = 0; i < run->n; i++)
			if (run->nodes[i].worst == st)
				names[k++] = (char *)(uintptr_t)run->nodes[i].name;
		if (k > 0) {
			char *set = nodeset_fold(names, k);

			fprintf(f, "%s %zu %s (%s)", sep++ ? "," : "", k, state_names[st], set);
			free(set);
		}
		free(names);
	}
	fputc('\n', f);
}

static void
print_json(FILE *f, const struct sweep_run *run, int rc)
{
	json_object *doc = json_object_new_object(), *nodes = json_object_new_array();

	for (size_t i = 0; i < run->n; i++) {
		json_object *nd = json_object_new_object(), *checks = json_object_new_array();

		for (size_t k = 0; k < run->nodes[i].n; k++) {
			const struct sweep_check *c = &run->nodes[i].c[k];
			json_object *cj = json_object_new_object();

			json_object_object_add(cj, "check", json_object_new_string(c->check));
			json_object_object_add(cj, "target", json_object_new_string(c->target));
			json_object_object_add(cj, "state",
			    json_object_new_string(sweep_state_name(c->state)));
			json_object_object_add(cj, "reason", json_object_new_string(c->reason));
			json_object_object_add(cj, "counts_toward_drain",
			    json_object_new_boolean(sweep_check_counts(c)));
			if (c->since_ns)
				json_object_object_add(cj, "since_s",
				    json_object_new_double((double)c->since_ns / 1e9));
			json_object_array_add(checks, cj);
		}
		json_object_object_add(nd, "node", json_object_new_string(run->nodes[i].name));
		json_object_object_add(nd, "state",
		    json_object_new_string(sweep_state_name(run->nodes[i].worst)));
		json_object_object_add(nd, "checks", checks);
		json_object_array_add(nodes, nd);
	}
	json_object_object_add(doc, "duration_s", json_object_new_double(run->duration_s));
	json_object_object_add(doc, "nodes", nodes);
	json_object_object_add(doc, "exit_status", json_object_new_int(rc));
	output_doc(f, doc);
}

/* ------------------------------------------------------------ command */

enum { S_PROBE = 256, S_PROM, S_DRAIN, S_SCONTROL };

static const struct opt sweep_opts[] = {
	{ 'f', "file", OPT_ARG, "FILE", "sweep file (default /etc/knob/sweep.xml when present)", 0 },
	{ S_PROBE, "probe", OPT_ARG, "DIR", "fleet-relative probe in DIR (seq write/read, "
	    "create/stat)", 0 },
	{ S_PROM, "prom", OPT_ARG, "FILE", "write node_exporter text-file metrics to FILE", 0 },
	{ S_DRAIN, "drain", OPT_NOARG, NULL, "drain failing nodes in Slurm, resume knob's own", 0 },
	{ S_SCONTROL, "scontrol", OPT_ARG, "CMD", "scontrol command (default scontrol)", 0 },
	{ 'v', "verbose", OPT_NOARG, NULL, "print every check, not only the failing ones", 0 },
	OPT_END
};

/* The command's own options into o; 0 or -1 (printed). */
static int
parse_opts(struct ctl *ctl, int argc, char **argv, struct sopts *o)
{
	int ch;

	memset(o, 0, sizeof(*o));
	o->scontrol = "scontrol";
	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		switch (ch) {
		case 'f': o->file = optarg; break;
		case S_PROBE: o->probe = optarg; break;
		case S_PROM: o->prom = optarg; break;
		case S_DRAIN: o->drain = 1; break;
		case S_SCONTROL: o->scontrol = optarg; break;
		case 'v': o->verbose = 1; break;
		default: return -1;
		}
	}
	if (o->probe && o->probe[0] != '/') {
		fprintf(stderr, "knobctl sweep: --probe needs an absolute directory\n");
		return -1;
	}
	return 0;
}

/* 0 when path can be opened for reading, else -errno. */
static int
readable(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* The sweep file: -f, else /etc/knob/sweep.xml when it exists (only
 * ENOENT is "no file": one that cannot be read is an error, or the
 * nodes would pass unchecked), else none. */
static int
load_file(struct ctl *ctl, const struct sopts *o, struct sweep_file **sf)
{
	const char *path = o->file ? o->file : DEFAULT_SWEEP_FILE;
	struct strvec errs = { 0 };
	int r = readable(path);

	*sf = NULL;
	if (r == -ENOENT && o->file == NULL)
		return 0;
	if (r < 0) {
		fprintf(stderr, "knobctl sweep: %s: %s\n", path, strerror(-r));
		return -1;
	}
	*sf = sweep_file_load(path, &errs);
	if (*sf && sweep_file_check_nodes(ctl, *sf, &errs) < 0) {
		sweep_file_free(*sf);
		*sf = NULL;
	}
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.v[i]);
	strvec_free(&errs);
	return *sf ? 0 : -1;
}

/* Build every node's request; 0 or -1 (errors printed). */
static int
build_requests(struct ctl *ctl, struct fanout *fo, struct snode *sn,
    const struct sweep_file *sf, const struct sopts *o)
{
	for (size_t i = 0; i < fo->n; i++) {
		struct strvec errs = { 0 };
		int r = sweep_request_for(ctl, sf, fo->nodes[i].name, o->probe, &sn[i].req,
		    &sn[i].lim, &errs);

		for (size_t k = 0; k < errs.n; k++)
			fprintf(stderr, "%s\n", errs.v[k]);
		strvec_free(&errs);
		if (r < 0)
			return -1;
		sn[i].budget_s = budget_of(&sn[i].req);
		fo->nodes[i].user = &sn[i];
	}
	return 0;
}

/* Run the sweep and everything after it; the exit status. */
static int
sweep_run_all(struct ctl *ctl, struct fanout *fo, struct snode *sn,
    const struct sweep_policy *pol, const struct sopts *o)
{
	static const struct fo_ops ops = { .on_open = sw_open, .on_msg = sw_msg, .per_node = 1,
	    .retry_busy = 1 };
	struct sweep_run run = { 0 };
	struct clockref cref;
	struct sweep_drain_opts dopts = { o->drain, o->scontrol };
	uint64_t t0 = now_mono_ns();
	char err[512];
	int rc = 0;

	if (fanout_run(fo, &ops, NULL) < 0)
		return 2;
	run.duration_s = (double)(now_mono_ns() - t0) / 1e9;
	run.end_real_ns = now_real_ns();
	run.n = fo->n;
	run.nodes = xcalloc(fo->n ? fo->n : 1, sizeof(*run.nodes));
	clock_ref(fo, sn, &cref);
	for (size_t i = 0; i < fo->n; i++)
		node_checks(&fo->nodes[i], &sn[i], &run.nodes[i], ctl, &cref);
	mark_slow(fo, &run, pol);
	for (size_t i = 0; i < run.n; i++)
		if (sweep_state_bad(run.nodes[i].worst))
			rc = 1;
	if (all_controller_side(&run)) {
		fprintf(stderr, "knobctl sweep: no node could be checked, and the agents refused "
		    "this controller's credentials, answered with an error or dropped the "
		    "connection: the sweep itself failed (nothing drained or resumed)\n");
		rc = SWEEP_EXIT_ERROR;
	}
	if (!ctl->json) {
		print_folded(ctl->out, &run, o->verbose);
		print_summary(ctl->out, &run);
	}
	/* the sweep's own failures are 3, not 1 (unhealthy nodes, a result,
	 * which knob-sweep.service counts as success) */
	if (o->prom && sweep_prom_write(o->prom, &run, err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl sweep: --prom: %s\n", err);
		rc = SWEEP_EXIT_ERROR;
	}
	if (sweep_record(ctl, &run, pol, &dopts, ctl->json ? stderr : ctl->out) < 0)
		rc = SWEEP_EXIT_ERROR;
	/* last: its exit_status is the real one, after --prom and the record */
	if (ctl->json)
		print_json(ctl->out, &run, rc);
	run_free(&run);
	return rc;
}

/* A sweep command line (argv[0] "sweep", as a play's <health> step builds
 * it) through the command's own checks: its options, their values, the
 * sweep file.  0, or -1 after printing why on stderr. */
int
sweep_check_argv(struct ctl *ctl, int argc, char **argv)
{
	struct sweep_file *sf = NULL;
	struct sopts o;

	if (opt_prescan(ctl, &cmd_sweep_entry, argc, argv) != 0 ||
	    parse_opts(ctl, argc, argv, &o) < 0 || load_file(ctl, &o, &sf) < 0)
		return -1;
	sweep_file_free(sf);
	return 0;
}

int
cmd_sweep(struct ctl *ctl, int argc, char **argv)
{
	struct sweep_file *sf = NULL;
	struct sweep_policy pol;
	struct strvec names = { 0 };
	struct snode *sn = NULL;
	struct fanout fo;
	struct sopts o;
	int rc;

	if (parse_opts(ctl, argc, argv, &o) < 0)
		return 2;
	argc -= optind;
	argv += optind;
	if (argc == 2 && strcmp(argv[0], "history") == 0)
		return sweep_history(ctl, argv[1], 50);
	if (argc != 0) {
		opt_help(stderr, ctl->cmd);
		return 2;
	}
	if (load_file(ctl, &o, &sf) < 0 || ctl_targets(ctl, &names) < 0) {
		sweep_file_free(sf);
		strvec_free(&names);
		return 2;
	}
	if (sf)
		pol = sf->pol;
	else
		sweep_policy_default(&pol);
	fanout_init(&fo, ctl, &names);
	sn = xcalloc(fo.n ? fo.n : 1, sizeof(*sn));
	for (size_t i = 0; i < fo.n; i++)	/* each freed below, built or not */
		knob__health_request__init(&sn[i].req);
	rc = build_requests(ctl, &fo, sn, sf, &o) < 0 ? 2 : sweep_run_all(ctl, &fo, sn, &pol, &o);
	for (size_t i = 0; i < fo.n; i++)
		sweep_request_free(&sn[i].req);
	free(sn);
	fanout_free(&fo);
	strvec_free(&names);
	sweep_file_free(sf);
	return rc;
}

const struct cmd_entry cmd_sweep_entry = {
	"sweep", "[history NODE]", "health checks on every target; Prometheus output, Slurm drain",
	CMD_NODES | CMD_FANOUT, sweep_opts, cmd_sweep,
	"Checks: reachability, authentication (auth), clock offset, profile drift, mounts (probed in a child process:\n"
	"a mount that does not answer is hung, and the agent never blocks on it), free space,\n"
	"NICs, block devices, memory and CPUs, MCE/EDAC counts, load, services, and with\n"
	"--probe a fleet-relative rate probe (slow: K MADs below the fleet median).\n"
	"Output is folded by (check, state, reason).  Exit status: 0 every node ok, 1 some\n"
	"check warn/fail/timeout/hung/slow or a node unreachable, 2 usage or sweep-file error,\n"
	"3 the sweep itself failed (the --prom file, the results database, scontrol, or no\n"
	"node checked: our credentials refused, the agents' errors or dropped connections).\n"
	"Knob's own failures (unreachable agent, our credentials refused, an agent answering\n"
	"with an error or dropping the connection mid-request, a clock judged without 3\n"
	"nodes) never drain or resume a node.\n"
	"sweep history NODE           the node's last sweeps and what --drain did",
};
