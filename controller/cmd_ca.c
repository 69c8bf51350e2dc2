/* knobctl ca: create the cluster CA and issue node and controller
 * certificates (controller/ca.c does the work).
 *
 *   knobctl ca init DIR
 *   knobctl ca issue DIR NAME... [--controller]
 *   knobctl ca revoke NAME... [--ca-dir DIR] [--force]
 *   knobctl ca renew [--days N] [--ca-dir DIR]
 *   knobctl ca list [--ca-dir DIR]
 *
 * NAME may be a node-set expression (node[01-16]); @groups are not
 * resolved here.  Every name is checked before anything is written.  With
 * --json, one document on stdout says what was done: the files written,
 * the names issued, revoked or renewed and their serials (list: the CA's
 * state). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "knobctl.h"
#include "nodeset.h"
#include "tls.h"
#include "ca.h"

/* Parsed "ca" command line: the sub-command's operands and options. */
struct ca_args {
	int n;			/* operands after the sub-command name */
	char **v;
	int controller;		/* --controller */
	uint32_t days;		/* --days N (0: not given) */
	const char *dir;	/* --ca-dir DIR */
	int force;		/* --force: revoke a controller certificate too */
	uint32_t kill_at;	/* --test-kill-at STEP (tests): renew crashes there */
};

/* Where a sub-command reports: text on f, or with --json into doc. */
struct ca_out {
	FILE *f;
	json_object *doc;	/* NULL: text */
};

#define CA_DAYS_MAX 36500	/* --days: a hundred years */

enum { CA_CONTROLLER = 256, CA_DAYS_OPT, CA_DIR_OPT, CA_FORCE, CA_KILL_AT };

static const struct opt ca_opts[] = {
	{ CA_CONTROLLER, "controller", OPT_NOARG, NULL, "issue: controller certificates (OU=controller)", 0 },
	{ CA_DAYS_OPT, "days", OPT_ARG, "N", "renew (only): certificates expiring within N days (default 30)", 0 },
	{ CA_DIR_OPT, "ca-dir", OPT_ARG, "DIR", "revoke, renew, list: the CA directory (default: the inventory's CA's)", 0 },
	{ CA_FORCE, "force", OPT_NOARG, NULL, "revoke: also this knobctl's own controller certificate (refused without it)", 0 },
	{ CA_KILL_AT, "test-kill-at", OPT_ARG, "STEP", "(tests) renew: SIGKILL at that step of the first certificate, as a crash", OPT_HIDDEN },
	OPT_END
};

static void
ca_usage(FILE *fp)
{
	fprintf(fp, "usage: knobctl ca init DIR\n"
	    "       knobctl ca issue DIR NAME... [--controller]\n"
	    "       knobctl ca revoke NAME... [--ca-dir DIR] [--force]\n"
	    "       knobctl ca renew [--days N] [--ca-dir DIR]\n"
	    "       knobctl ca list [--ca-dir DIR]\n");
}

/* The CA directory of revoke, renew and list: --ca-dir, else where the
 * inventory's (or --ca's) CA certificate lives.  NULL (printed) if none. */
static const char *
ca_dir_of(struct ctl *ctl, const struct ca_args *a, char *buf, size_t len)
{
	if (a->dir)
		return a->dir;
	if (ctl_ca_dir(ctl, buf, len) < 0) {
		fprintf(stderr, "knobctl: ca: no CA directory: give --ca-dir DIR or an inventory "
		    "with <tls ca=...>\n");
		return NULL;
	}
	return buf;
}

/* The array under key in doc, added when missing (doc keeps it). */
static json_object *
doc_array(json_object *doc, const char *key)
{
	json_object *a;

	if (!json_object_object_get_ex(doc, key, &a)) {
		a = json_object_new_array();
		json_object_object_add(doc, key, a);
	}
	return a;
}

/* File dir/name+ext written: "wrote PATH[ (note)]", or into "written". */
static void
ca_wrote(const struct ca_out *o, const char *dir, const char *file, const char *note)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (o->doc)
		json_object_array_add(doc_array(o->doc, "written"), json_object_new_string(path));
	else
		fprintf(o->f, "wrote %s%s%s%s\n", path, note ? " (" : "", note ? note : "",
		    note ? ")" : "");
}

/* A name that failed: its error on stderr, and in "failed" with --json. */
static void
ca_failed(const struct ca_out *o, const char *sub, const char *name, const char *err)
{
	fprintf(stderr, "knobctl: ca %s: %s\n", sub, err);
	if (o->doc) {
		json_object *r = json_object_new_object();

		json_object_object_add(r, "name", json_object_new_string(name));
		json_object_object_add(r, "error", json_object_new_string(err));
		json_object_array_add(doc_array(o->doc, "failed"), r);
	}
}

/* Every certificate of a revoked name, so that the admin sees them all. */
static void
ca_revoked(const struct ca_out *o, const char *name, const struct strvec *done)
{
	json_object *r, *serials;

	if (o->doc == NULL) {
		fprintf(o->f, "revoked %s (%zu certificate%s, serial", name, done->n,
		    done->n == 1 ? "" : "s");
		for (size_t j = 0; j < done->n; j++)
			fprintf(o->f, "%s %s", j ? "," : "", done->v[j]);
		fprintf(o->f, "); ");
		return;
	}
	r = json_object_new_object();
	serials = json_object_new_array();
	for (size_t j = 0; j < done->n; j++)
		json_object_array_add(serials, json_object_new_string(done->v[j]));
	json_object_object_add(r, "name", json_object_new_string(name));
	json_object_object_add(r, "serials", serials);
	json_object_array_add(doc_array(o->doc, "revoked"), r);
}

/* Without --force, before anything is written: is any name's certificate
 * this knobctl's own controller certificate?  Its revocation, once
 * bootstrap pushed the CRL, locks this knobctl out of every agent (another
 * controller's is revoked as asked).  0 none, -1 one is (printed). */
static int
ca_revoke_guard(struct ctl *ctl, const char *dir, const struct ca_args *a)
{
	const char *own = ctl == NULL ? NULL : ctl->cert ? ctl->cert : ctl->inv ? ctl->inv->cert :
	    NULL;
	char err[1024];
	long i;

	if (a->force || (i = ca_revoke_check(dir, (const char *const *)a->v, (size_t)a->n, own,
	    err, sizeof(err))) < 0)
		return 0;
	fprintf(stderr, "knobctl: ca revoke: %s: not revoked: the controller certificate %s\n",
	    a->v[i], err);
	return -1;
}

/* What ca revoke's ca_revoke_fn prints to. */
struct ca_revoke_out {
	const struct ca_out *o;
	const char *dir;
	int written;
};

/* ca_revoke_fn: a name revoked, or why not. */
static void
ca_revoke_one(void *arg, const char *name, const struct strvec *done, const char *err)
{
	struct ca_revoke_out *r = arg;

	if (err != NULL) {
		ca_failed(r->o, "revoke", name, err);
		return;
	}
	ca_revoked(r->o, name, done);
	if (r->o->doc == NULL || !r->written++)
		ca_wrote(r->o, r->dir, TLS_CRL_FILE, "push it with knobctl bootstrap");
}

/* ca revoke NAME...: every certificate of each name into the CRL
 * (DIR/ca.crl), printed; bootstrap pushes it.  This knobctl's own
 * controller certificate only with --force (exit 2, nothing written). */
static int
ca_cmd_revoke(struct ctl *ctl, const struct ca_out *o, const struct ca_args *a)
{
	char buf[4096];
	struct ca_revoke_out r = { o, NULL, 0 };

	if (a->n < 1) {
		ca_usage(stderr);
		return 2;
	}
	if ((r.dir = ca_dir_of(ctl, a, buf, sizeof(buf))) == NULL ||
	    ca_revoke_guard(ctl, r.dir, a) < 0)
		return 2;
	return ca_revoke_names(r.dir, (const char *const *)a->v, (size_t)a->n, ca_revoke_one,
	    &r) ? 1 : 0;
}

/* Why ca_renew did not renew a certificate: the JSON reason, the text. */
static const struct {
	int why;
	const char *reason, *text;
} not_renewed[] = {
	{ CA_NOT_REVOKED, "revoked", "revoked (issue a new name)" },
	{ CA_NOT_LIMITED, "ca_expires", "it expires with the CA (a new one cannot outlive the CA)" },
};

/* ca_renew's report of one certificate (arg: the struct ca_out). */
static void
ca_renewed(void *arg, const char *path, int days_left, const char *serial, int why_not)
{
	const struct ca_out *o = arg;
	const char *reason = "?", *text = "?";
	json_object *r;

	for (size_t i = 0; i < nitems(not_renewed); i++)
		if (not_renewed[i].why == why_not) {
			reason = not_renewed[i].reason;
			text = not_renewed[i].text;
		}
	if (o->doc == NULL) {
		if (serial)
			fprintf(o->f, "renewed %s (expired in %d days)\n", path, days_left);
		else
			fprintf(o->f, "not renewed %s: %s\n", path, text);
		return;
	}
	r = json_object_new_object();
	json_object_object_add(r, "cert", json_object_new_string(path));
	json_object_object_add(r, "days_left", json_object_new_int(days_left));
	if (serial)
		json_object_object_add(r, "serial", json_object_new_string(serial));
	else
		json_object_object_add(r, "reason", json_object_new_string(reason));
	json_object_array_add(doc_array(o->doc, serial ? "renewed" : "not_renewed"), r);
}

/* ca renew [--days N]: reissue what expires soon, warn once when the CA
 * itself does.  1 when a certificate due cannot be renewed beyond the CA. */
static int
ca_cmd_renew(struct ctl *ctl, const struct ca_out *o, const struct ca_args *a)
{
	char buf[4096], err[1024], warn[PATH_MAX + 256];
	const char *dir;
	struct ca_out copy = *o;	/* ca_renew's callback argument */
	int days = a->days ? (int)a->days : 30, rc;

	if (a->n != 0) {
		ca_usage(stderr);
		return 2;
	}
	if ((dir = ca_dir_of(ctl, a, buf, sizeof(buf))) == NULL)
		return 2;
	if (ca_expiry_check(dir, days, warn, sizeof(warn)) == 1)
		fprintf(stderr, "knobctl ca renew: warning: %s\n", warn);
	if (o->doc) {
		json_object_object_add(o->doc, "days", json_object_new_int(days));
		doc_array(o->doc, "renewed");
	}
	if ((rc = ca_renew(dir, days, (int)a->kill_at, ca_renewed, &copy, err, sizeof(err))) < 0) {
		fprintf(stderr, "knobctl: ca renew: %s\n", err);
		return 1;
	}
	if (rc == 1) {
		fprintf(stderr, "knobctl: ca renew: certificates that expire with the CA cannot be "
		    "renewed beyond it: a new CA is needed\n");
		return 1;
	}
	return 0;
}

/* ca init DIR */
static int
ca_cmd_init(struct ctl *ctl, const struct ca_out *o, const struct ca_args *a)
{
	char err[1024];

	(void)ctl;
	if (a->n != 1 || a->controller) {
		ca_usage(stderr);
		return 2;
	}
	if (ca_init(a->v[0], err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl: ca init: %s\n", err);
		return 1;
	}
	ca_wrote(o, a->v[0], CA_CERT_FILE, NULL);
	ca_wrote(o, a->v[0], CA_KEY_FILE, "mode 0600");
	return 0;
}

/* One name issued into dir: its two files, and with --json its record in
 * "issued" (name, role, serial, cert, key). */
static void
ca_issued(const struct ca_out *o, const char *dir, const char *name, int controller)
{
	const char *role = controller ? KNOB_ROLE_CONTROLLER : KNOB_ROLE_NODE;
	char crt[4096], key[4096], note[64], err[1024], *serial;
	json_object *r;

	snprintf(crt, sizeof(crt), "%s.crt", name);
	snprintf(key, sizeof(key), "%s.key", name);
	snprintf(note, sizeof(note), "OU=%s", role);
	ca_wrote(o, dir, crt, note);
	ca_wrote(o, dir, key, "mode 0600");
	if (o->doc == NULL)
		return;
	r = json_object_new_object();
	json_object_object_add(r, "name", json_object_new_string(name));
	json_object_object_add(r, "role", json_object_new_string(role));
	snprintf(crt, sizeof(crt), "%s/%s.crt", dir, name);
	serial = ca_cert_serial(crt, err, sizeof(err));
	json_object_object_add(r, "serial", serial ? json_object_new_string(serial) : NULL);
	free(serial);
	json_object_object_add(r, "cert", json_object_new_string(crt));
	snprintf(key, sizeof(key), "%s/%s.key", dir, name);
	json_object_object_add(r, "key", json_object_new_string(key));
	json_object_array_add(doc_array(o->doc, "issued"), r);
}

/* ca issue DIR NAME... [--controller] */
static int
ca_cmd_issue(struct ctl *ctl, const struct ca_out *o, const struct ca_args *a)
{
	struct strvec names = { 0 };
	const char *dir;
	char err[1024];
	int failed = 0, rc = 2;

	(void)ctl;
	if (a->n < 2) {
		ca_usage(stderr);
		goto out;
	}
	dir = a->v[0];
	for (int i = 1; i < a->n; i++) {
		if (nodeset_expand(a->v[i], NULL, NULL, &names, err, sizeof(err)) < 0) {
			fprintf(stderr, "knobctl: ca issue: %s: %s\n", a->v[i], err);
			goto out;
		}
	}
	if (names.n == 0) {
		fprintf(stderr, "knobctl: ca issue: no names\n");
		goto out;
	}
	for (size_t i = 0; i < names.n; i++) {
		if (ca_name_check(names.v[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "knobctl: ca issue: %s\n", err);
			goto out;
		}
	}
	for (size_t i = 0; i < names.n; i++) {
		if (ca_issue(dir, names.v[i], a->controller, err, sizeof(err)) < 0) {
			ca_failed(o, "issue", names.v[i], err);
			failed++;
			continue;
		}
		ca_issued(o, dir, names.v[i], a->controller);
	}
	rc = failed ? 1 : 0;
out:
	strvec_free(&names);
	return rc;
}

/* What ca list says of each state: the JSON word, the text (NULL: the
 * days left are printed). */
static const struct {
	enum ca_state st;
	const char *word, *text;
} ca_states[] = {
	{ CA_ST_VALID, "valid", "valid" },
	{ CA_ST_EXPIRING, "expiring", NULL },
	{ CA_ST_EXPIRED, "expired", "expired" },
	{ CA_ST_REVOKED, "revoked", "revoked" },
	{ CA_ST_SUPERSEDED, "superseded", "superseded (renewed away)" },
	{ CA_ST_UNKNOWN, "unknown", "unknown" },
};

/* The JSON word (text 0) or the text (1) of state st. */
static const char *
ca_state_str(enum ca_state st, int text)
{
	for (size_t i = 0; i < nitems(ca_states); i++)
		if (ca_states[i].st == st)
			return text ? ca_states[i].text : ca_states[i].word;
	return "?";
}

enum { CA_DAY, CA_UTC, CA_ISO };	/* ca_time's forms */

/* t (UTC) into buf as a day (2031-12-06), CA_UTC (2031-12-06 10:00:00
 * UTC) or CA_ISO (2031-12-06T10:00:00Z); "-" when unknown (0).  buf. */
static const char *
ca_time(time_t t, int form, char *buf, size_t len)
{
	struct tm tm;
	size_t n = 0;

	if (t != 0 && gmtime_r(&t, &tm) != NULL)
		n = form == CA_DAY ? strftime(buf, len, "%Y-%m-%d", &tm) : form == CA_UTC ?
		    strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm) :
		    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (n == 0)
		snprintf(buf, len, "-");
	return buf;
}

/* t as JSON: "YYYY-MM-DDTHH:MM:SSZ", or null when unknown. */
static json_object *
ca_json_time(time_t t)
{
	char buf[32];

	return t ? json_object_new_string(ca_time(t, CA_ISO, buf, sizeof(buf))) : NULL;
}

/* One certificate of ca list as a JSON object. */
static json_object *
ca_entry_json(const struct ca_entry *e)
{
	json_object *r = json_object_new_object();

	json_object_object_add(r, "name", json_object_new_string(e->name));
	json_object_object_add(r, "role", e->role ? json_object_new_string(e->role) : NULL);
	json_object_object_add(r, "serial", json_object_new_string(e->serial));
	json_object_object_add(r, "not_after", ca_json_time(e->not_after));
	if (e->not_after)
		json_object_object_add(r, "days_left", json_object_new_int(e->days_left));
	json_object_object_add(r, "state", json_object_new_string(ca_state_str(e->state, 0)));
	json_object_object_add(r, "cert", e->path ? json_object_new_string(e->path) : NULL);
	return r;
}

/* ca list --json: {"ca": {...}, "certificates": [...], "crl": {...},
 * "errors": [...]} into o->doc. */
static void
ca_list_json(const struct ca_out *o, const struct ca_listing *l, const char *warn)
{
	json_object *ca = json_object_new_object(), *crl = json_object_new_object();
	json_object *certs = json_object_new_array(), *errs = json_object_new_array();

	json_object_object_add(ca, "cert", json_object_new_string(l->crt));
	json_object_object_add(ca, "not_after", ca_json_time(l->not_after));
	json_object_object_add(ca, "days_left", json_object_new_int(l->days_left));
	if (warn)
		json_object_object_add(ca, "warning", json_object_new_string(warn));
	for (size_t i = 0; i < l->n; i++)
		json_object_array_add(certs, ca_entry_json(&l->v[i]));
	json_object_object_add(crl, "file", json_object_new_string(l->crl));
	json_object_object_add(crl, "present", json_object_new_boolean(l->crl_read != 0));
	json_object_object_add(crl, "usable", json_object_new_boolean(l->crl_read >= 0));
	json_object_object_add(crl, "revoked", json_object_new_int((int)l->crl_revoked));
	json_object_object_add(crl, "last_update", ca_json_time(l->crl_last_update));
	for (size_t i = 0; i < l->errors.n; i++)
		json_object_array_add(errs, json_object_new_string(l->errors.v[i]));
	json_object_object_add(o->doc, "ca", ca);
	json_object_object_add(o->doc, "certificates", certs);
	json_object_object_add(o->doc, "crl", crl);
	json_object_object_add(o->doc, "errors", errs);
}

/* ca list's text: the CA line, one line per certificate, the CRL line. */
static void
ca_list_text(FILE *f, const struct ca_listing *l)
{
	char day[32], state[64];
	int w = 4;

	fprintf(f, "CA %s: not after %s (", l->crt, ca_time(l->not_after, CA_DAY, day,
	    sizeof(day)));
	if (l->days_left < 0 || (l->days_left == 0 && l->not_after <= time(NULL)))
		fprintf(f, "expired)\n");
	else if (l->days_left < CA_WARN_DAYS)
		fprintf(f, "expires in %d days)\n", l->days_left);
	else
		fprintf(f, "%d days left)\n", l->days_left);
	for (size_t i = 0; i < l->n; i++)
		if ((int)strlen(l->v[i].name) > w)
			w = (int)strlen(l->v[i].name);
	fprintf(f, "%-*s  %-10s  %-32s  %-10s  %s\n", w, "NAME", "ROLE", "SERIAL", "NOT AFTER",
	    "STATE");
	for (size_t i = 0; i < l->n; i++) {
		const struct ca_entry *e = &l->v[i];

		if (e->state == CA_ST_EXPIRING)
			snprintf(state, sizeof(state), "expires in %d days", e->days_left);
		else
			snprintf(state, sizeof(state), "%s", ca_state_str(e->state, 1));
		fprintf(f, "%-*s  %-10s  %-32s  %-10s  %s\n", w, e->name, e->role ? e->role : "-",
		    e->serial, ca_time(e->not_after, CA_DAY, day, sizeof(day)), state);
	}
	if (l->crl_read == 0)
		fprintf(f, "CRL %s: none (nothing revoked)\n", l->crl);
	else if (l->crl_read < 0)
		fprintf(f, "CRL %s: cannot be used (revocations from %s)\n", l->crl, CA_REVOKED_FILE);
	else
		fprintf(f, "CRL %s: %zu revoked serial%s, last update %s\n", l->crl, l->crl_revoked,
		    l->crl_revoked == 1 ? "" : "s", ca_time(l->crl_last_update,
		    CA_UTC, state, sizeof(state)));
}

/* ca list: every certificate the CA issued and its state, the CA's own
 * end, the CRL.  0, 1 when a file could not be read (the rest listed), 2
 * when the CA directory or its certificate cannot. */
static int
ca_cmd_list(struct ctl *ctl, const struct ca_out *o, const struct ca_args *a)
{
	char buf[4096], err[PATH_MAX + 256], warn[PATH_MAX + 256], rec[PATH_MAX + 256];
	struct ca_listing l;
	const char *dir;
	int rc, warned, recovered;

	if (a->n != 0 || a->controller) {
		ca_usage(stderr);
		return 2;
	}
	if ((dir = ca_dir_of(ctl, a, buf, sizeof(buf))) == NULL)
		return 2;
	/* a renew a crash stopped is finished first: its pair listed whole;
	 * its failure is a warning only when the listing works (a directory
	 * that is not there is said once, as the error) */
	recovered = ca_recover(dir, rec, sizeof(rec));
	if ((rc = ca_list(dir, &l, err, sizeof(err))) < 0) {
		fprintf(stderr, "knobctl: ca list: %s\n", err);
		ca_listing_free(&l);
		return 2;
	}
	if (recovered < 0)
		fprintf(stderr, "knobctl: ca list: warning: %s\n", rec);
	if ((warned = ca_expiry_check(dir, CA_WARN_DAYS, warn, sizeof(warn)) == 1))
		fprintf(stderr, "knobctl ca list: warning: %s\n", warn);
	for (size_t i = 0; i < l.errors.n; i++)
		fprintf(stderr, "knobctl: ca list: %s\n", l.errors.v[i]);
	if (o->doc)
		ca_list_json(o, &l, warned ? warn : NULL);
	else
		ca_list_text(o->f, &l);
	ca_listing_free(&l);
	return rc;
}

static const struct ca_cmd {
	const char *name;
	int (*fn)(struct ctl *, const struct ca_out *, const struct ca_args *);
	int days;		/* takes --days */
} ca_cmds[] = {
	{ "init", ca_cmd_init, 0 },
	{ "issue", ca_cmd_issue, 0 },
	{ "revoke", ca_cmd_revoke, 0 },
	{ "renew", ca_cmd_renew, 1 },
	{ "list", ca_cmd_list, 0 },
};

/* Run sub-command c on a; with --json its document goes to out after it
 * (not after a usage error).  The exit status. */
static int
ca_run(struct ctl *ctl, FILE *out, const struct ca_cmd *c, const struct ca_args *a)
{
	struct ca_out o = { out, NULL };
	char what[32];
	int rc;

	if (a->force && strcmp(c->name, "revoke") != 0) {
		fprintf(stderr, "knobctl: ca %s: --force is revoke's only\n", c->name);
		return 2;
	}
	if (a->kill_at && strcmp(c->name, "renew") != 0) {
		fprintf(stderr, "knobctl: ca %s: --test-kill-at is renew's only\n", c->name);
		return 2;
	}
	if (a->days && !c->days) {
		fprintf(stderr, "knobctl: ca %s: --days is renew's window; a certificate is "
		    "valid for 5 years\n", c->name);
		return 2;
	}
	if (ctl != NULL && ctl->json) {
		o.doc = json_object_new_object();
		snprintf(what, sizeof(what), "ca %s", c->name);
		json_object_object_add(o.doc, "command", json_object_new_string(what));
	}
	rc = c->fn(ctl, &o, a);
	if (o.doc && rc != 2) {
		json_object_object_add(o.doc, "exit_status", json_object_new_int(rc));
		output_doc(out, o.doc);
	} else {
		json_object_put(o.doc);
	}
	return rc;
}

/* Dispatch "ca SUB ..."; returns the exit status. */
int
cmd_ca(struct ctl *ctl, int argc, char **argv)
{
	FILE *out = (ctl != NULL && ctl->out != NULL) ? ctl->out : stdout;
	struct ca_args a = { 0 };
	int ch;

	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		switch (ch) {
		case CA_CONTROLLER: a.controller = 1; break;
		case CA_DIR_OPT: a.dir = optarg; break;
		case CA_FORCE: a.force = 1; break;
		case CA_DAYS_OPT:
			if (opt_parse_uint(optarg, 1, CA_DAYS_MAX, NULL, &a.days) < 0)
				return opt_bad_value(ctl, "--days (1 to 36500)"), 2;
			break;
		case CA_KILL_AT:
			if (opt_parse_uint(optarg, 1, CA_RENEW_STEPS, NULL, &a.kill_at) < 0)
				return opt_bad_value(ctl, "--test-kill-at"), 2;
			break;
		default: return 2;
		}
	}
	if (optind >= argc) {
		ca_usage(stderr);
		return 2;
	}
	a.n = argc - optind - 1;
	a.v = argv + optind + 1;
	for (size_t i = 0; i < nitems(ca_cmds); i++)
		if (strcmp(argv[optind], ca_cmds[i].name) == 0)
			return ca_run(ctl, out, &ca_cmds[i], &a);
	fprintf(stderr, "knobctl: ca: unknown subcommand %s\n", argv[optind]);
	ca_usage(stderr);
	return 2;
}

const struct cmd_entry cmd_ca_entry = {
	"ca", "init DIR | issue DIR NAME... | revoke NAME... | renew | list",
	"cluster CA, node/controller certificates, revocation",
	0, ca_opts, cmd_ca,
	"ca init DIR            create the cluster CA (Ed25519) in DIR\n"
	"ca issue DIR NAME...   one certificate per name (node sets allowed: node[01-16])\n"
	"ca revoke NAME...      list every certificate issued under NAME (DIR/NAME.crt, the\n"
	"                       serials of DIR/issued.txt and superseded.txt: bootstrap's too)\n"
	"                       in the CRL DIR/ca.crl (the CRL of any CA certificate in DIR,\n"
	"                       whatever its name); knobctl refuses a revoked node at once,\n"
	"                       agents refuse a revoked controller once bootstrap pushed it;\n"
	"                       this knobctl's own controller certificate only with --force\n"
	"                       (exit 2 without); another controller's as any other\n"
	"ca renew               reissue DIR's certificates that expire within --days (30), but\n"
	"                       not those that expire with the CA (none can outlive it): warns\n"
	"                       when the CA expires within --days; exit 1 when such a\n"
	"                       certificate is due (a new CA is needed)\n"
	"ca list                every certificate DIR's CA issued (DIR/NAME.crt, the serials\n"
	"                       of issued.txt and superseded.txt): name, role, serial,\n"
	"                       not-after, state (valid, expires in N days (within 30),\n"
	"                       expired, revoked: in DIR/ca.crl; superseded: renewed away;\n"
	"                       unknown: not kept in DIR, e.g. bootstrap's); the CA's own\n"
	"                       not-after and the CRL's revoked serials and last update; a\n"
	"                       file that cannot be read is named (FILE: message), the rest\n"
	"                       listed, exit 1",
};
