/* knobctl apply / verify / rollback / active (profile: cmd_profile.c).
 *
 *   apply PROFILE -w NODES [-x NODES] [--check] [--diff] [--keep-going]
 *   verify PROFILE -w NODES [-x NODES]
 *   rollback -w NODES [-x NODES]
 *
 * Profiles are resolved here (inheritance, validation); agents get a flat
 * list of settings.  Results fold across nodes with identical text. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knobctl.h"
#include "normalize.h"
#include "pbjson.h"
#include "profile.h"
#include "util.h"
#include "visible.h"

/* ------------------------------------------------------------ results */
struct tune_opts {
	int check, diff, keep_going, stack, force;
	unsigned pause_ms, wait_s;
	const char *pause_at;
};

/* A key state as text and --json both name it ("pending-restart"). */
static const char *
state_name(int st)
{
	static char buf[64];	/* the loop thread's; printed before the next call */
	const char *l = pb_enum_label(&knob__key_state__descriptor, st, buf, sizeof(buf));

	return l ? l : "?";
}

/* "blockdev loop3 scheduler" or "sysctl net.core.somaxconn" */
static void
key_label(const Knob__KeyResult *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s", k->driver, *k->target ? k->target : k->key);
}

/* One line per key; with_values adds "from -> to". */
static void
render_key(char **s, const Knob__KeyResult *k, int with_values)
{
	char label[1024];

	key_label(k, label, sizeof(label));
	str_appendf(s, "  %-15s %s", state_name(k->state), label);
	switch (k->state) {
	case KNOB__KEY_STATE__KEY_CHANGED:
	case KNOB__KEY_STATE__KEY_PENDING_RESTART:
	case KNOB__KEY_STATE__KEY_WOULD_CHANGE:
	case KNOB__KEY_STATE__KEY_WOULD_RESTORE:
	case KNOB__KEY_STATE__KEY_RESTORED:
		if (with_values)
			str_appendf(s, ": %s -> %s", k->before, k->state == KNOB__KEY_STATE__KEY_RESTORED ?
			    k->after : k->wanted);
		break;
	case KNOB__KEY_STATE__KEY_UNCHANGED:
	case KNOB__KEY_STATE__KEY_OK:
		if (with_values)
			str_appendf(s, ": %s", k->before);
		break;
	case KNOB__KEY_STATE__KEY_REVERTED:
		str_appendf(s, ": %s -> %s, reverted to %s", k->before, k->wanted, k->after);
		break;
	case KNOB__KEY_STATE__KEY_DRIFT:
		str_appendf(s, ": is %s, profile wants %s", k->before, k->wanted);
		break;
	case KNOB__KEY_STATE__KEY_FAILED:
	case KNOB__KEY_STATE__KEY_WOULD_FAIL:
		str_appendf(s, ": %s", k->message);
		if (k->err)
			str_appendf(s, " (errno %d)", k->err);
		break;
	case KNOB__KEY_STATE__KEY_UNSUPPORTED:
		str_appendf(s, ": %s", *k->message ? k->message : "nothing matches");
		break;
	case KNOB__KEY_STATE__KEY_SKIPPED:
	case KNOB__KEY_STATE__KEY_CHANGED_SINCE:
	case KNOB__KEY_STATE__KEY_PROTECTED:
		if (*k->message)
			str_appendf(s, ": %s", k->message);
		break;
	default:
		break;
	}
	if ((k->state == KNOB__KEY_STATE__KEY_PENDING_RESTART ||
	    k->state == KNOB__KEY_STATE__KEY_CHANGED || k->state == KNOB__KEY_STATE__KEY_RESTORED ||
	    k->state == KNOB__KEY_STATE__KEY_WOULD_RESTORE) && *k->message)
		str_appendf(s, " (%s)", k->message);
	str_appendf(s, "\n");
}

static char *
render_error(struct fo_node *n)
{
	if (n->reply && n->reply->body_case == KNOB__ENVELOPE__BODY_ERROR)
		return xasprintf("  error: %s", n->reply->error->message);
	return NULL;
}

static char *
render_apply(struct fanout *fo, struct fo_node *n, void *arg)
{
	const struct tune_opts *o = arg;
	const Knob__ApplyResult *r;
	char *s = NULL;

	(void)fo;
	if (n->reply == NULL || n->reply->body_case != KNOB__ENVELOPE__BODY_APPLY_RESULT)
		return render_error(n);
	r = n->reply->apply_result;
	for (size_t i = 0; i < r->n_keys; i++) {
		/* with --check and no --diff: only what would change, no values */
		if (o->check && !o->diff && r->keys[i]->state == KNOB__KEY_STATE__KEY_UNCHANGED)
			continue;
		render_key(&s, r->keys[i], !o->check || o->diff);
	}
	str_appendf(&s, "  => %s", r->message);
	return s;
}

/* Node status of an apply: ok/changed only when every key is changed or
 * unchanged (pending-restart counts as changed: the value is set, the
 * daemon applies it at its restart; protected devices are not keys of the
 * transaction); else the worst of failed > skipped > unsupported.  Keys
 * the agent kept journaled because their device is not the one journaled
 * (a switch's previous keys) fail the node, as they fail a rollback. */
static int
apply_status(const Knob__ApplyResult *r, int check)
{
	int changed = 0, would = 0, failed = r->reverted || r->kept > 0, skipped = 0, unsup = 0;

	for (size_t i = 0; i < r->n_keys; i++) {
		switch (r->keys[i]->state) {
		case KNOB__KEY_STATE__KEY_FAILED:
		case KNOB__KEY_STATE__KEY_WOULD_FAIL:
		case KNOB__KEY_STATE__KEY_REVERTED:
			failed = 1;
			break;
		case KNOB__KEY_STATE__KEY_SKIPPED:
			skipped = 1;
			break;
		case KNOB__KEY_STATE__KEY_UNSUPPORTED:
			unsup = 1;
			break;
		case KNOB__KEY_STATE__KEY_CHANGED:
		case KNOB__KEY_STATE__KEY_PENDING_RESTART:
		case KNOB__KEY_STATE__KEY_RESTORED:
			changed = 1;
			break;
		case KNOB__KEY_STATE__KEY_WOULD_CHANGE:
		case KNOB__KEY_STATE__KEY_WOULD_RESTORE:
			would = 1;
			break;
		default:
			break;
		}
	}
	if (failed)
		return NS_FAILED;
	if (skipped)
		return NS_SKIPPED;
	if (unsup)
		return NS_UNSUPPORTED;
	if (check)
		return would ? NS_WOULD_CHANGE : NS_OK;
	return changed ? NS_CHANGED : NS_OK;
}

/* A node's --json record beyond node, status and detail: request_sent
 * (false: its connection failed before the request could be written,
 * refused, unreachable or a failed handshake, so nothing was done there;
 * true once it opened, the request may have arrived), and its answer's
 * apply / verify / rollback record. */
static json_object *
json_reply(struct fanout *fo, struct fo_node *n, void *arg)
{
	json_object *o = json_object_new_object();

	(void)fo;
	(void)arg;
	json_object_object_add(o, "request_sent", json_object_new_boolean(n->t_open_ns != 0));
	switch (n->reply ? n->reply->body_case : KNOB__ENVELOPE__BODY__NOT_SET) {
	case KNOB__ENVELOPE__BODY_APPLY_RESULT:
		json_object_object_add(o, "apply", pb_to_json(&n->reply->apply_result->base));
		break;
	case KNOB__ENVELOPE__BODY_VERIFY_RESULT:
		json_object_object_add(o, "verify", pb_to_json(&n->reply->verify_result->base));
		break;
	case KNOB__ENVELOPE__BODY_ROLLBACK_RESULT:
		json_object_object_add(o, "rollback", pb_to_json(&n->reply->rollback_result->base));
		break;
	default:
		break;
	}
	return o;
}

enum { O_CHECK = 256, O_DIFF, O_KEEP_GOING, O_PAUSE, O_STACK, O_WAIT, O_FORCE, O_PAUSE_AT };

static const struct opt apply_opts[] = {
	{ O_CHECK, "check", OPT_NOARG, NULL, "dry run: report what would change or fail, change nothing", 0 },
	{ O_DIFF, "diff", OPT_NOARG, NULL, "show old and new value of every key", 0 },
	{ O_KEEP_GOING, "keep-going", OPT_NOARG, NULL,
	    "apply the other keys after one fails (default: revert the node)", 0 },
	{ O_STACK, "stack", OPT_NOARG, NULL,
	    "keep the active profile's other keys (active becomes A+B; default: switch)", 0 },
	{ O_WAIT, "wait", OPT_ARG, "S", "queue up to S seconds (at most 86400) for a node's tuning lock (default: busy)", 0 },
	{ O_PAUSE, "test-pause-ms", OPT_ARG, "MS", "(tests) pause at the journal pause points", OPT_HIDDEN },
	{ O_PAUSE_AT, "test-pause-at", OPT_ARG, "POINT", "(tests) pause only at this point", OPT_HIDDEN },
	OPT_END
};

static const struct opt rollback_opts[] = {
	{ O_FORCE, "force", OPT_NOARG, NULL,
	    "also restore keys changed since knob set them (changed-since)", 0 },
	{ O_WAIT, "wait", OPT_ARG, "S", "queue up to S seconds (at most 86400) for a node's tuning lock (default: busy)", 0 },
	{ O_PAUSE, "test-pause-ms", OPT_ARG, "MS", "(tests) pause after the first restore", OPT_HIDDEN },
	OPT_END
};

/* Parse "[PROFILE] [options]" (the node set is parsed by opt.c);
 * want_profile: 1 required, 2 optional (verify: the active one). */
static int
parse_tune_args(struct ctl *ctl, int argc, char **argv, int want_profile, const char **profile,
    struct tune_opts *o)
{
	int ch;

	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		switch (ch) {
		case O_CHECK: o->check = 1; break;
		case O_DIFF: o->diff = 1; break;
		case O_KEEP_GOING: o->keep_going = 1; break;
		case O_STACK: o->stack = 1; break;
		case O_FORCE: o->force = 1; break;
		case O_PAUSE_AT: o->pause_at = optarg; break;
		case O_PAUSE: o->pause_ms = (unsigned)strtoul(optarg, NULL, 10); break;
		case O_WAIT:
			if (opt_parse_uint(optarg, 0, WAIT_MAX_S, NULL, &o->wait_s) < 0)
				return opt_bad_value(ctl, "--wait (seconds, 0 to 86400)"), -1;
			break;
		default: return -1;
		}
	}
	if (want_profile == 1 && optind >= argc) {
		fprintf(stderr, "knobctl %s: missing PROFILE\n", argv[0]);
		return -1;
	}
	if (want_profile && optind < argc)
		*profile = argv[optind++];
	if (optind != argc) {
		fprintf(stderr, "knobctl %s: unexpected argument '%s'\n", argv[0], argv[optind]);
		return -1;
	}
	return 0;
}

/* What apply, verify and rollback share: arguments, profile, targets, the
 * wire settings and the fan-out.  Filled by tune_ctx_init, released by
 * tune_ctx_free. */
struct tune_ctx {
	struct ctl *ctl;
	struct tune_opts o;
	struct strvec names;
	struct profile *p;	/* NULL for rollback */
	Knob__Setting **settings;
	size_t n_settings;
	struct fanout fo;
	int fo_up;
};

/* Parse "[PROFILE] -w .. [opts]", load the profile (want_profile), resolve
 * the targets and build the settings.  0, or -1 after printing why (the
 * caller exits 2).  tune_ctx_free releases c either way. */
static int
tune_ctx_init(struct tune_ctx *c, struct ctl *ctl, int argc, char **argv, int want_profile)
{
	const char *pname = NULL;

	memset(c, 0, sizeof(*c));
	c->ctl = ctl;
	if (parse_tune_args(ctl, argc, argv, want_profile, &pname, &c->o) < 0)
		return -1;
	if (pname && (c->p = ctl_profile_load(pname)) == NULL)
		return -1;
	/* a node may queue for its tuning lock that long before it answers */
	ctl->timeout += c->o.wait_s;
	if (ctl_targets(ctl, &c->names) < 0)
		return -1;
	if (c->p) {
		c->settings = settings_build(c->p);
		c->n_settings = c->p->n;
	}
	return 0;
}

static void
tune_ctx_free(struct tune_ctx *c)
{
	if (c->fo_up)
		fanout_free(&c->fo);
	if (c->settings)
		settings_free(c->settings, c->n_settings);
	profile_free(c->p);
	strvec_free(&c->names);
	memset(c, 0, sizeof(*c));
}

/* Node status from a reply of the expected body. */
typedef int (*tune_status_fn)(const Knob__Envelope *reply, const struct tune_opts *o);

/* Send env to every target; each node whose reply has body `want` gets
 * status(reply); then print "VERB [PROFILE (FILE)] on N node(s)" and the
 * folded (or JSON) output.  Returns the exit status (2 when the fan-out
 * could not run). */
static int
tune_ctx_run(struct tune_ctx *c, const Knob__Envelope *env, Knob__Envelope__BodyCase want,
    tune_status_fn status, const char *verb, render_fn render, void *arg)
{
	struct ctl *ctl = c->ctl;

	fanout_init(&c->fo, ctl, &c->names);
	c->fo_up = 1;
	if (fanout_request(&c->fo, env) < 0)
		return 2;
	for (size_t i = 0; i < c->fo.n; i++) {
		struct fo_node *n = &c->fo.nodes[i];

		if (n->reply && n->reply->body_case == want)
			n->status = status(n->reply, &c->o);
		else if (n->reply && n->reply->body_case == KNOB__ENVELOPE__BODY_ERROR &&
		    (n->reply->error->kind == KNOB__ERROR_KIND__ERROR_KIND_LOCKED ||
		    n->reply->error->kind == KNOB__ERROR_KIND__ERROR_KIND_BUSY))
			n->status = NS_BUSY;
	}
	if (!ctl->json && c->p) {	/* the profile's name and file: someone's text */
		char *name = str_visible_dup(c->p->name, 0);
		char *file = str_visible_dup(path_base(c->p->path), 0);

		fprintf(ctl->out, "%s %s (%s) on %zu node(s)\n", verb, name, file, c->fo.n);
		free(name);
		free(file);
	} else if (!ctl->json)
		fprintf(ctl->out, "%s on %zu node(s)\n", verb, c->fo.n);
	if (ctl->json)
		output_json(ctl, &c->fo, json_reply, arg);
	else {
		output_folded(ctl, &c->fo, render, arg);
		output_summary(ctl, &c->fo);
	}
	return output_exit_status(&c->fo);
}

static int
status_apply(const Knob__Envelope *reply, const struct tune_opts *o)
{
	return apply_status(reply->apply_result, o->check);
}

int
cmd_apply(struct ctl *ctl, int argc, char **argv)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__ApplyRequest req = KNOB__APPLY_REQUEST__INIT;
	struct tune_ctx c;
	int rc = 2;

	if (tune_ctx_init(&c, ctl, argc, argv, 1) < 0)
		goto out;
	req.profile = c.p->name;
	req.settings = c.settings;
	req.n_settings = c.n_settings;
	req.check = c.o.check;
	req.would_restore = 1;	/* this controller knows KEY_WOULD_RESTORE (knob.proto) */
	req.keep_going = c.o.keep_going;
	req.test_pause_ms = c.o.pause_ms;
	req.test_pause_at = (char *)(uintptr_t)(c.o.pause_at ? c.o.pause_at : "");
	req.stack = c.o.stack;
	req.wait_s = c.o.wait_s;
	req.controller_pid = (uint32_t)getpid();
	env.body_case = KNOB__ENVELOPE__BODY_APPLY;
	env.apply = &req;
	rc = tune_ctx_run(&c, &env, KNOB__ENVELOPE__BODY_APPLY_RESULT, status_apply,
	    c.o.check ? "check" : "apply", render_apply, &c.o);
out:
	tune_ctx_free(&c);
	return rc;
}

/* A value for people: sizes in bytes as "16G" when exact (gpfs pagepool);
 * anything else as it is. */
static void
human_value(const Knob__KeyResult *k, const char *v, char *buf, size_t len)
{
	static const char units[] = "KMGTP";
	unsigned long long n;
	char *end;
	int u = -1;

	snprintf(buf, len, "%s", v);
	if (norm_kind_for(k->driver, k->key, "") != NORM_BYTES || *v < '0' || *v > '9')
		return;
	n = strtoull(v, &end, 10);
	if (*end != '\0' || n == 0)
		return;
	while (u + 1 < (int)sizeof(units) - 1 && n % 1024 == 0) {
		n /= 1024;
		u++;
	}
	if (u >= 0)
		snprintf(buf, len, "%llu%c", n, units[u]);
}

/* verify's line for a key set but waiting for a restart. */
static void
render_pending(char **s, const Knob__KeyResult *k)
{
	char label[1024], is[64], want[64];

	key_label(k, label, sizeof(label));
	human_value(k, k->before, is, sizeof(is));
	human_value(k, k->wanted, want, sizeof(want));
	str_appendf(s, "  %-15s %s: is %s, set to %s, %s\n", state_name(k->state), label, is, want,
	    *k->message ? k->message : "takes effect after a restart");
}

static char *
render_verify(struct fanout *fo, struct fo_node *n, void *arg)
{
	const Knob__VerifyResult *r;
	char *s = NULL;
	size_t ok = 0, pending = 0;

	(void)fo;
	(void)arg;
	if (n->reply == NULL || n->reply->body_case != KNOB__ENVELOPE__BODY_VERIFY_RESULT)
		return render_error(n);
	r = n->reply->verify_result;
	for (size_t i = 0; i < r->n_keys; i++) {
		if (r->keys[i]->state == KNOB__KEY_STATE__KEY_OK)
			ok++;
		else if (r->keys[i]->state == KNOB__KEY_STATE__KEY_PENDING_RESTART) {
			pending++;
			render_pending(&s, r->keys[i]);
		} else
			render_key(&s, r->keys[i], 1);
	}
	str_appendf(&s, "  => %zu of %zu key(s) match", ok, r->n_keys);
	if (pending)
		str_appendf(&s, ", %zu set and pending a restart (not drift)", pending);
	str_appendf(&s, "; active profile: %s",
	    *r->active_profile ? r->active_profile : "(none)");
	if (*r->active_note)
		str_appendf(&s, " (%s)", r->active_note);
	return s;
}

/* Key states that make a verified node not ok, worst first: a key that
 * could not be checked (unsupported, skipped) is no match.  Pending-restart
 * and protected keys leave a node ok, as apply counts them (its text says
 * so). */
static const struct {
	Knob__KeyState key;
	int status;
} verify_worst[] = {
	{ KNOB__KEY_STATE__KEY_FAILED, NS_FAILED },
	{ KNOB__KEY_STATE__KEY_DRIFT, NS_DRIFT },
	{ KNOB__KEY_STATE__KEY_SKIPPED, NS_SKIPPED },
	{ KNOB__KEY_STATE__KEY_UNSUPPORTED, NS_UNSUPPORTED },
};

/* The node's verify status: the worst of its keys' (verify_worst). */
static int
status_verify(const Knob__Envelope *reply, const struct tune_opts *o)
{
	const Knob__VerifyResult *r = reply->verify_result;

	(void)o;
	for (size_t i = 0; i < nitems(verify_worst); i++)
		for (size_t k = 0; k < r->n_keys; k++)
			if (r->keys[k]->state == verify_worst[i].key)
				return verify_worst[i].status;
	return NS_OK;
}

/* verify [PROFILE] (want_profile 2) or active (0, active_only): one
 * VerifyRequest to every node.  Without a PROFILE each node verifies its
 * active profile's journaled settings. */
static int
run_verify(struct ctl *ctl, int argc, char **argv, int want_profile, int active_only,
    tune_status_fn status, const char *verb, render_fn render)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__VerifyRequest req = KNOB__VERIFY_REQUEST__INIT;
	struct tune_ctx c;
	int rc = 2;

	if (tune_ctx_init(&c, ctl, argc, argv, want_profile) < 0)
		goto out;
	req.profile = c.p ? c.p->name : (char *)(uintptr_t)"";
	req.settings = c.settings;
	req.n_settings = c.n_settings;
	req.active_only = active_only;
	env.body_case = KNOB__ENVELOPE__BODY_VERIFY;
	env.verify = &req;
	rc = tune_ctx_run(&c, &env, KNOB__ENVELOPE__BODY_VERIFY_RESULT, status, verb, render,
	    NULL);
out:
	tune_ctx_free(&c);
	return rc;
}

int
cmd_verify(struct ctl *ctl, int argc, char **argv)
{
	return run_verify(ctl, argc, argv, 2, 0, status_verify, "verify", render_verify);
}

static char *
render_rollback(struct fanout *fo, struct fo_node *n, void *arg)
{
	const Knob__RollbackResult *r;
	char *s = NULL;

	(void)fo;
	(void)arg;
	if (n->reply == NULL || n->reply->body_case != KNOB__ENVELOPE__BODY_ROLLBACK_RESULT)
		return render_error(n);
	r = n->reply->rollback_result;
	for (size_t i = 0; i < r->n_keys; i++)
		render_key(&s, r->keys[i], 1);
	str_appendf(&s, "  => %s%s%s", r->message, *r->profile ? "; was " : "", r->profile);
	return s;
}

/* Changed when every original reads back (the journal is cleared); else
 * failed, the keys that did not come back named in the text. */
static int
status_rollback(const Knob__Envelope *reply, const struct tune_opts *o)
{
	const Knob__RollbackResult *r = reply->rollback_result;

	(void)o;
	if (!r->complete)
		return NS_FAILED;
	return r->n_keys ? NS_CHANGED : NS_OK;
}

int
cmd_rollback(struct ctl *ctl, int argc, char **argv)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__RollbackRequest req = KNOB__ROLLBACK_REQUEST__INIT;
	struct tune_ctx c;
	int rc = 2;

	if (tune_ctx_init(&c, ctl, argc, argv, 0) < 0)
		goto out;
	req.force = c.o.force;
	req.wait_s = c.o.wait_s;
	req.controller_pid = (uint32_t)getpid();
	req.test_pause_ms = c.o.pause_ms;
	env.body_case = KNOB__ENVELOPE__BODY_ROLLBACK;
	env.rollback = &req;
	rc = tune_ctx_run(&c, &env, KNOB__ENVELOPE__BODY_ROLLBACK_RESULT, status_rollback,
	    "rollback", render_rollback, NULL);
out:
	tune_ctx_free(&c);
	return rc;
}

static char *
render_active(struct fanout *fo, struct fo_node *n, void *arg)
{
	const Knob__VerifyResult *r;

	(void)fo;
	(void)arg;
	if (n->reply == NULL || n->reply->body_case != KNOB__ENVELOPE__BODY_VERIFY_RESULT)
		return render_error(n);
	r = n->reply->verify_result;
	return xasprintf("  %s%s%s%s", *r->active_profile ? r->active_profile : "(none)",
	    *r->active_note ? " (" : "", r->active_note, *r->active_note ? ")" : "");
}

static int
status_active(const Knob__Envelope *reply, const struct tune_opts *o)
{
	(void)reply;
	(void)o;
	return NS_OK;
}

/* knobctl active -w NODES: each node's active profile, folded. */
static int
cmd_active(struct ctl *ctl, int argc, char **argv)
{
	return run_verify(ctl, argc, argv, 0, 1, status_active, "active", render_active);
}

const struct cmd_entry cmd_apply_entry = {
	"apply", "PROFILE", "tune the targets to a profile (or --check what would change)",
	CMD_NODES | CMD_FANOUT, apply_opts, cmd_apply, NULL,
};

const struct cmd_entry cmd_verify_entry = {
	"verify", "[PROFILE]", "report drift from a profile (default: each node's active one)",
	CMD_NODES | CMD_FANOUT, NULL, cmd_verify, NULL,
};

const struct cmd_entry cmd_rollback_entry = {
	"rollback", "", "restore the original values from each node's journal",
	CMD_NODES | CMD_FANOUT, rollback_opts, cmd_rollback,
	"Restores in each driver's write order and re-reads until every original holds; the\n"
	"journal is cleared only then.  A key someone changed after knob set it is\n"
	"changed-since: reported, left alone and kept in the journal unless --force.",
};

const struct cmd_entry cmd_off_entry = {
	"off", "", "tuned-adm's name for rollback", CMD_NODES | CMD_FANOUT, rollback_opts,
	cmd_rollback, NULL,
};

const struct cmd_entry cmd_active_entry = {
	"active", "", "the active profile of each node, folded", CMD_NODES | CMD_FANOUT, NULL,
	cmd_active, NULL,
};
