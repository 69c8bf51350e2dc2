/* Health sweeps in knobd: the HealthRequest handler, one worker per check
 * with its own deadline, and the counters kept between sweeps.  See
 * health.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "health.h"
#include "log.h"
#include "util.h"

#define TEST_RATE_IOPS_MAX	1000000	/* $KNOB_TEST_PROBE_RATE_IOPS, larger is ignored */

/* One check of a sweep running on its own thread. */
struct htask {
	struct hsweep *sw;
	const struct hcheck_def *def;
	size_t arg;
	char target[PATH_MAX];	/* for the timeout message */
	uint64_t deadline_ns;	/* monotonic */
	uint32_t timeout_ms;
	int done, abandoned;
	struct hout out;
};

/* A sweep: the request, its tasks, and a reference per live thread. */
struct hsweep {
	struct agent *a;
	uint64_t conn_id;
	Knob__Envelope *req;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;
	struct htask *t;
	size_t nt;
	unsigned nthreads;	/* counted in health_state.threads, 0 not admitted */
	uint64_t start_ns;
};

static const struct hcheck_def defs[] = {
	{ "drift", health_drift },
	{ "mount", health_mount },
	{ "nic", health_nic },
	{ "blockdev", health_blockdevs },
	{ "hw", health_hw },
	{ "errors", health_errors },
	{ "load", health_load },
	{ "service", health_services },
	{ "probe", health_probe },
};

enum { D_DRIFT, D_MOUNT, D_NIC, D_BLOCKDEV, D_HW, D_ERRORS, D_LOAD, D_SERVICE, D_PROBE };

Knob__HealthCheck *
hout_add(struct hout *o, const char *check, const char *target, int state, const char *fmt, ...)
{
	Knob__HealthCheck *c = xcalloc(1, sizeof(*c));
	char reason[HEALTH_REASON_MAX];
	va_list ap;

	knob__health_check__init(c);
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	c->check = xstrdup(check);
	c->target = xstrdup(target ? target : "");
	c->state = state;
	c->reason = xstrdup(reason);
	o->v = xrealloc(o->v, (o->n + 1) * sizeof(*o->v));
	o->v[o->n++] = c;
	return c;
}

void
health_check_free(Knob__HealthCheck *c)
{
	if (c == NULL)
		return;
	free(c->check);
	free(c->target);
	free(c->reason);
	for (size_t i = 0; i < c->n_metrics; i++) {
		free(c->metrics[i]->name);
		free(c->metrics[i]);
	}
	free(c->metrics);
	free(c);
}

void
hout_free(struct hout *o)
{
	for (size_t i = 0; i < o->n; i++)
		health_check_free(o->v[i]);
	free(o->v);
	o->v = NULL;
	o->n = 0;
}

/* ------------------------------------------------------------ counters */

/* Line (1-based) of byte offset off of buf. */
static int
line_of_offset(const char *buf, size_t off)
{
	int line = 1;

	for (size_t i = 0; i < off; i++)
		line += buf[i] == '\n';
	return line;
}

/* The counters file's text (len bytes) as one JSON object and nothing
 * after it; NULL with "LINE: why" in err otherwise. */
static json_object *
counters_parse(const char *buf, size_t len, char *err, size_t errlen)
{
	json_tokener *tok = json_tokener_new();
	json_object *o = NULL;
	size_t end = 0;

	if (tok == NULL) {
		snprintf(err, errlen, "1: out of memory");
		return NULL;
	}
	o = json_tokener_parse_ex(tok, buf, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (o == NULL) {
		enum json_tokener_error je = json_tokener_get_error(tok);

		snprintf(err, errlen, "%d: not JSON: %s", line_of_offset(buf, end),
		    je == json_tokener_continue ? "unexpected end of file" :
		    json_tokener_error_desc(je));
	} else if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "1: not a JSON object");
	} else {
		end += strspn(buf + end, " \t\r\n");
		if (end < len)
			snprintf(err, errlen, "%d: garbage after the counters object",
			    line_of_offset(buf, end));
	}
	json_tokener_free(tok);
	if (o != NULL && err[0] != '\0') {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

/* A counters file that cannot be used (err "LINE: why", or a read error):
 * moved aside to PATH.corrupt so that the next save starts afresh and an
 * admin can look at it, logged, and remembered in hs->reset_note, which
 * the checks without a previous value then report (warn). */
static void
counters_reset(struct health_state *hs, const char *err)
{
	char aside[PATH_MAX + 16];
	const char *kept = aside;

	snprintf(aside, sizeof(aside), "%s.corrupt", hs->counters_path);
	if (rename(hs->counters_path, aside) < 0)
		kept = strerror(errno);
	log_warnx("%s:%s; the health counters baseline is reset (%s%s)", hs->counters_path, err,
	    kept == aside ? "file kept as " : "file not kept aside: ", kept);
	free(hs->reset_note);
	hs->reset_note = xasprintf("counters baseline reset: %s:%s (%s%s); "
	    "growth since the last sweep not known", hs->counters_path, err,
	    kept == aside ? "kept as " : "not kept aside: ", kept);
}

/* The counters file, or an empty object: silently when there is none (the
 * first sweep ever), through counters_reset when it cannot be used. */
static json_object *
counters_read(struct health_state *hs)
{
	char *buf = NULL, err[256] = "";
	json_object *o = NULL;
	size_t len = 0;
	int rc = read_file_bounded(hs->counters_path, HEALTH_COUNTERS_MAX, &buf, &len);

	if (rc == 0 && (o = counters_parse(buf, len, err, sizeof(err))) == NULL)
		counters_reset(hs, err);
	else if (rc < 0 && rc != -ENOENT) {
		snprintf(err, sizeof(err), "1: %s", strerror(-rc));
		counters_reset(hs, err);
	}
	free(buf);
	return o != NULL ? o : json_object_new_object();
}

/* The counters in memory, read from the file at the first use (see
 * counters_read); hs->mu held.  Owned by hs. */
json_object *
health_counters(struct health_state *hs)
{
	if (hs->counters == NULL)
		hs->counters = counters_read(hs);
	return hs->counters;
}

/* hs->reset_note after note (with "; "), when there is one, and
 * remembered as given (the sweep's end drops it); hs->mu held. */
void
health_counters_reset_note(struct health_state *hs, char *note, size_t len)
{
	size_t n = strlen(note);

	if (hs->reset_note == NULL)
		return;
	if (n < len)
		snprintf(note + n, len - n, "%s%s", n ? "; " : "", hs->reset_note);
	hs->reset_said = 1;
}

/* Drop the reset note once a sweep gave it: the sweeps after that one
 * compare with the new baseline.  A sweep running alongside the one that
 * gave it may miss it in its later checks. */
void
health_counters_reset_over(struct health_state *hs)
{
	pthread_mutex_lock(&hs->mu);
	if (hs->reset_said) {
		free(hs->reset_note);
		hs->reset_note = NULL;
		hs->reset_said = 0;
	}
	pthread_mutex_unlock(&hs->mu);
}

/* Write the counters atomically; hs->mu held.  0 (note ""), or -1 with
 * why in note: the checks then compare with the memory copy only. */
int
health_counters_save(struct health_state *hs, char *note, size_t len)
{
	const char *s = json_object_to_json_string_ext(health_counters(hs),
	    JSON_C_TO_STRING_PLAIN);
	int rc = write_file_atomic(hs->counters_path, s, strlen(s), 0600);

	note[0] = '\0';
	if (rc == 0)
		return 0;
	log_warnx("%s: %s: the health counters are kept in memory only", hs->counters_path,
	    strerror(-rc));
	snprintf(note, len, "counters not saved: %s: %s; compared with this agent's memory only",
	    hs->counters_path, strerror(-rc));
	return -1;
}

/* c at least warn, with note after its reason (nothing when note is ""). */
void
health_counters_note(Knob__HealthCheck *c, const char *note)
{
	char *reason;

	if (note[0] == '\0')
		return;
	if (c->state == ST_OK)
		c->state = ST_WARN;
	reason = xasprintf("%s; %s", c->reason, note);
	free(c->reason);
	c->reason = reason;
}

int
health_counter_swap(json_object *o, const char *key, uint64_t now, uint64_t *prev)
{
	json_object *v;
	int had = json_object_object_get_ex(o, key, &v);

	if (had)
		*prev = (uint64_t)json_object_get_int64(v);
	json_object_object_add(o, key, json_object_new_int64((int64_t)now));
	return had;
}

/* ------------------------------------------------------------ lifecycle */

static int
health_init(struct agent *a)
{
	struct health_state *hs = xcalloc(1, sizeof(*hs));

	pthread_mutex_init(&hs->mu, NULL);
	pthread_mutex_init(&hs->run_mu, NULL);
	snprintf(hs->counters_path, sizeof(hs->counters_path), "%s/%s", a->state_dir,
	    HEALTH_COUNTERS_NAME);
	if (a->cfg.test_hooks)	/* 0: the probe runs at full speed */
		hs->test_probe_rate_iops = (uint32_t)env_number("KNOB_TEST_PROBE_RATE_IOPS", 0,
		    TEST_RATE_IOPS_MAX, 0);
	a->health = hs;
	return 0;
}

static void
health_fini(struct agent *a)
{
	struct health_state *hs = a->health;

	if (hs == NULL)
		return;
	health_mount_fini(hs);
	json_object_put(hs->counters);
	pthread_mutex_destroy(&hs->mu);
	pthread_mutex_destroy(&hs->run_mu);
	free(hs->reset_note);
	free(hs);
	a->health = NULL;
}

const struct agent_subsys health_subsys = {
	.name = "health",
	.init = health_init,
	.fini = health_fini,
};

/* ------------------------------------------------------------ a sweep */

/* Count sw (its worker and a thread per task) in the agent's running
 * sweeps: 0, or -1 when that would pass HEALTH_MAX_SWEEPS or
 * HEALTH_MAX_THREADS.  *running gets the sweeps running before. */
static int
sweep_admit(struct health_state *hs, struct hsweep *sw, unsigned *running)
{
	unsigned need = 1 + (unsigned)sw->nt;
	int ok;

	pthread_mutex_lock(&hs->run_mu);
	*running = hs->sweeps;
	ok = hs->sweeps < HEALTH_MAX_SWEEPS && hs->threads + need <= HEALTH_MAX_THREADS;
	if (ok) {
		hs->sweeps++;
		hs->threads += need;
		sw->nthreads = need;
	}
	pthread_mutex_unlock(&hs->run_mu);
	return ok ? 0 : -1;
}

/* Free sw and its request; an admitted sweep leaves the running count. */
static void
sweep_free(struct hsweep *sw)
{
	struct health_state *hs = sw->a->health;

	if (sw->nthreads) {
		pthread_mutex_lock(&hs->run_mu);
		hs->sweeps--;
		hs->threads -= sw->nthreads;
		pthread_mutex_unlock(&hs->run_mu);
	}
	for (size_t i = 0; i < sw->nt; i++)
		hout_free(&sw->t[i].out);
	free(sw->t);
	if (sw->req != NULL)
		knob__envelope__free_unpacked(sw->req, NULL);
	pthread_cond_destroy(&sw->cv);
	pthread_mutex_destroy(&sw->mu);
	free(sw);
}

/* Drop one reference; the last one frees the sweep and its request. */
static void
sweep_unref(struct hsweep *sw)
{
	int last;

	pthread_mutex_lock(&sw->mu);
	last = --sw->refs == 0;
	pthread_mutex_unlock(&sw->mu);
	if (last)
		sweep_free(sw);
}

/* Worker: run one check; an abandoned task's findings are dropped. */
static void *
task_worker(void *arg)
{
	struct htask *t = arg;
	struct hsweep *sw = t->sw;
	struct hout out = { 0 };

	t->def->run(sw->a, sw->req->health, t->arg, &out);
	pthread_mutex_lock(&sw->mu);
	if (t->abandoned)
		hout_free(&out);
	else
		t->out = out;
	t->done = 1;
	pthread_cond_broadcast(&sw->cv);
	pthread_mutex_unlock(&sw->mu);
	sweep_unref(sw);
	return NULL;
}

/* Add a task for check def (arg, target for messages, deadline). */
static void
task_add(struct hsweep *sw, int def, size_t arg, const char *target, uint32_t timeout_ms)
{
	struct htask *t;

	sw->t = xrealloc(sw->t, (sw->nt + 1) * sizeof(*sw->t));
	t = &sw->t[sw->nt++];
	memset(t, 0, sizeof(*t));
	t->sw = sw;
	t->def = &defs[def];
	t->arg = arg;
	snprintf(t->target, sizeof(t->target), "%s", target ? target : "");
	t->timeout_ms = timeout_ms;
}

/* The tasks a request asks for.  A mount gets its probe timeout plus a
 * second: its own deadline is what makes it hung, not timed out. */
static void
plan_tasks(struct hsweep *sw, const Knob__HealthRequest *r)
{
	uint32_t to = r->check_timeout_ms ? r->check_timeout_ms : HEALTH_CHECK_TIMEOUT_MS;

	if (r->verify)
		task_add(sw, D_DRIFT, 0, r->verify->profile, to);
	for (size_t i = 0; i < r->n_mounts; i++) {
		uint32_t mt = r->mounts[i]->timeout_ms ? r->mounts[i]->timeout_ms :
		    HEALTH_MOUNT_TIMEOUT_MS;

		task_add(sw, D_MOUNT, i, r->mounts[i]->path, mt + 1000);
	}
	for (size_t i = 0; i < r->n_nics; i++)
		task_add(sw, D_NIC, i, r->nics[i]->name, to);
	if (r->n_blockdevs)
		task_add(sw, D_BLOCKDEV, 0, NULL, to);
	task_add(sw, D_HW, 0, NULL, to);
	if (r->hw == NULL || r->hw->errors)
		task_add(sw, D_ERRORS, 0, NULL, to);
	task_add(sw, D_LOAD, 0, NULL, to);
	if (r->n_processes || r->n_modules || r->nfsd_threads)
		task_add(sw, D_SERVICE, 0, NULL, to);
	if (r->probe && r->probe->dir[0]) {
		uint32_t secs = 2 * (r->probe->seq_s + r->probe->md_s);

		task_add(sw, D_PROBE, 0, r->probe->dir, to + secs * 1000);
	}
}

/* Wait until every task is done or past its deadline (sw->mu held);
 * late tasks are marked abandoned. */
static void
wait_tasks(struct hsweep *sw)
{
	for (;;) {
		uint64_t now = now_mono_ns(), next = UINT64_MAX;
		struct timespec ts;

		for (size_t i = 0; i < sw->nt; i++) {
			struct htask *t = &sw->t[i];

			if (t->done || t->abandoned)
				continue;
			if (now >= t->deadline_ns) {
				t->abandoned = 1;
				if (t->def == &defs[D_PROBE])
					health_probe_late(sw->a);
			} else if (t->deadline_ns < next)
				next = t->deadline_ns;
		}
		if (next == UINT64_MAX)
			return;
		/* sw->cv waits on CLOCK_MONOTONIC (sweep_cond_init), as the
		 * deadlines are: a step of the wall clock moves neither */
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		pthread_cond_timedwait(&sw->cv, &sw->mu, &ts);
	}
}

/* Collect the findings (sw->mu held) into res; timed-out tasks get one
 * HEALTH_TIMEOUT entry each. */
static void
collect(struct hsweep *sw, struct hout *res)
{
	for (size_t i = 0; i < sw->nt; i++) {
		struct htask *t = &sw->t[i];

		if (!t->done) {
			hout_add(res, t->def->name, t->target, KNOB__HEALTH_STATE__HEALTH_TIMEOUT,
			    "no result in %.1f s", t->timeout_ms / 1000.0);
			continue;
		}
		for (size_t k = 0; k < t->out.n; k++) {
			res->v = xrealloc(res->v, (res->n + 1) * sizeof(*res->v));
			res->v[res->n++] = t->out.v[k];
		}
		free(t->out.v);
		t->out.v = NULL;
		t->out.n = 0;
	}
}

/* Start every task's thread (sw->mu held).  0, or -1 when one cannot be
 * started: the ones already running are abandoned (their findings
 * dropped), the rest never run, and the check's name goes into what. */
static int
start_tasks(struct hsweep *sw, const char **what)
{
	for (size_t i = 0; i < sw->nt; i++) {
		sw->t[i].deadline_ns = sw->start_ns + sw->t[i].timeout_ms * 1000000ull;
		sw->refs++;
		if (agent_spawn(sw->a, task_worker, &sw->t[i]) == 0)
			continue;
		sw->refs--;
		for (size_t k = 0; k < i; k++)
			sw->t[k].abandoned = 1;
		*what = sw->t[i].def->name;
		return -1;
	}
	return 0;
}

/* Answer the request with an Error: a check could not be started, so the
 * agent checked nothing and the node's health is unknown (knob's side, never
 * the node's own failure). */
static void
post_no_worker(struct hsweep *sw, const char *check)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Error e = KNOB__ERROR__INIT;
	char msg[128];

	snprintf(msg, sizeof(msg), "cannot start a worker for the %s check", check);
	e.code = EAGAIN;
	e.kind = KNOB__ERROR_KIND__ERROR_KIND_BUSY;
	e.message = msg;
	env.body_case = KNOB__ENVELOPE__BODY_ERROR;
	env.error = &e;
	agent_post(sw->a, sw->conn_id, sw->req->id, &env);
}

/* Sweep worker: start the tasks, wait, answer, drop our reference. */
static void *
sweep_worker(void *arg)
{
	struct hsweep *sw = arg;
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__HealthResult hr = KNOB__HEALTH_RESULT__INIT;
	struct hout res = { 0 };
	const char *what = NULL;

	sw->start_ns = now_mono_ns();
	pthread_mutex_lock(&sw->mu);
	if (start_tasks(sw, &what) < 0) {
		pthread_mutex_unlock(&sw->mu);
		log_warnx("health request %llu: cannot start a worker for the %s check",
		    (unsigned long long)sw->req->id, what);
		post_no_worker(sw, what);
		agent_conn_release(sw->a, sw->conn_id);
		sweep_unref(sw);
		return NULL;
	}
	wait_tasks(sw);
	collect(sw, &res);
	pthread_mutex_unlock(&sw->mu);
	health_counters_reset_over(sw->a->health);
	hr.checks = res.v;
	hr.n_checks = res.n;
	hr.node = sw->a->node;
	hr.agent_time_ns = now_real_ns();
	hr.duration_ns = now_mono_ns() - sw->start_ns;
	env.body_case = KNOB__ENVELOPE__BODY_HEALTH_RESULT;
	env.health_result = &hr;
	agent_post(sw->a, sw->conn_id, sw->req->id, &env);
	agent_conn_release(sw->a, sw->conn_id);
	hout_free(&res);
	sweep_unref(sw);
	return NULL;
}

/* sw->cv, timed against CLOCK_MONOTONIC (the tasks' deadlines). */
static void
sweep_cond_init(struct hsweep *sw)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sw->cv, &ca);
	pthread_condattr_destroy(&ca);
}

/* Answer req "busy" at once: HEALTH_MAX_SWEEPS sweeps (or their
 * threads) run already.  The handler's return. */
static int
reply_busy(struct agent *a, struct aconn *c, Knob__Envelope *req, unsigned running)
{
	log_warnx("%s: health request %llu refused: %u health sweeps running", c->peer,
	    (unsigned long long)req->id, running);
	return agent_reply_error(a, c, req->id, EAGAIN, "%s: agent busy: %u health sweeps "
	    "running; try again", a->node, running) < 0 ? -1 : 0;
}

int
h_health(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	struct hsweep *sw;
	unsigned running;

	if (req->health == NULL || a->health == NULL)
		return agent_reply_error(a, c, req->id, EINVAL, "empty health request") < 0 ? -1 : 0;
	/* a thread (and for a mount, a child) per check: bounded per request */
	if (req->health->n_mounts > HEALTH_MAX_ITEMS || req->health->n_nics > HEALTH_MAX_ITEMS)
		return agent_reply_error(a, c, req->id, E2BIG, "health request: more than %d "
		    "mounts or NICs", HEALTH_MAX_ITEMS) < 0 ? -1 : 0;
	sw = xcalloc(1, sizeof(*sw));
	sw->a = a;
	sw->conn_id = c->id;
	sw->req = req;
	sw->refs = 1;
	pthread_mutex_init(&sw->mu, NULL);
	sweep_cond_init(sw);
	plan_tasks(sw, req->health);
	if (sweep_admit(a->health, sw, &running) < 0) {
		sw->req = NULL;	/* the loop's */
		sweep_free(sw);
		return reply_busy(a, c, req, running);
	}
	if (agent_spawn(a, sweep_worker, sw) < 0) {
		sw->req = NULL;
		sweep_free(sw);
		return agent_reply_error(a, c, req->id, EAGAIN, "cannot start a worker") < 0 ? -1 : 0;
	}
	agent_conn_hold(c);	/* released by the sweep after its answer (loop first) */
	agent_req_take(c, req);	/* abandoned checks may outlive the sweep: sweep_unref frees it */
	return 0;
}
