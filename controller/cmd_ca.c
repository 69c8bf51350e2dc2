/* knobctl ca: create the cluster CA and issue node and controller
 * certificates (controller/ca.c does the work).
 *
 *   knobctl ca init DIR
 *   knobctl ca issue DIR NAME... [--controller]
 *
 * NAME may be a node-set expression (node[01-16]); @groups are not
 * resolved here.  Every name is checked before anything is written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knobctl.h"
#include "nodeset.h"
#include "tls.h"
#include "ca.h"

/* Parsed "ca" command line: the sub-command's operands and options. */
struct ca_args {
	int n;			/* operands after the sub-command name */
	char **v;
	int controller;		/* --controller */
	int days;		/* --days N */
	const char *dir;	/* --ca-dir DIR */
};

enum { CA_CONTROLLER = 256, CA_DAYS_OPT, CA_DIR_OPT };

static const struct opt ca_opts[] = {
	{ CA_CONTROLLER, "controller", OPT_NOARG, NULL, "issue: controller certificates (OU=controller)", 0 },
	{ CA_DAYS_OPT, "days", OPT_ARG, "N", "renew: certificates expiring within N days (default 30)", 0 },
	{ CA_DIR_OPT, "ca-dir", OPT_ARG, "DIR", "revoke, renew: the CA directory (default: the inventory's CA's)", 0 },
	OPT_END
};

static void
ca_usage(FILE *fp)
{
	fprintf(fp, "usage: knobctl ca init DIR\n"
	    "       knobctl ca issue DIR NAME... [--controller]\n"
	    "       knobctl ca revoke NAME... [--ca-dir DIR]\n"
	    "       knobctl ca renew [--days N] [--ca-dir DIR]\n");
}

/* The CA directory of revoke and renew: --ca-dir, else where the
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

/* ca revoke NAME...: every certificate of each name into the CRL
 * (DIR/ca.crl), printed; bootstrap pushes it. */
static int
ca_cmd_revoke(struct ctl *ctl, FILE *out, const struct ca_args *a)
{
	char buf[4096], err[1024];
	const char *dir;
	int failed = 0;

	if (a->n < 1) {
		ca_usage(stderr);
		return 2;
	}
	if ((dir = ca_dir_of(ctl, a, buf, sizeof(buf))) == NULL)
		return 2;
	for (int i = 0; i < a->n; i++) {
		struct strvec done = { 0 };

		if (ca_revoke(dir, a->v[i], &done, err, sizeof(err)) < 0) {
			fprintf(stderr, "knobctl: ca revoke: %s\n", err);
			failed++;
		} else {
			/* every certificate of the name, so that the admin sees them all */
			fprintf(out, "revoked %s (%zu certificate%s, serial", a->v[i], done.n,
			    done.n == 1 ? "" : "s");
			for (size_t j = 0; j < done.n; j++)
				fprintf(out, "%s %s", j ? "," : "", done.v[j]);
			fprintf(out, "); wrote %s/%s (push it with knobctl bootstrap)\n", dir,
			    CA_CRL_FILE);
		}
		strvec_free(&done);
	}
	return failed ? 1 : 0;
}

/* ca renew [--days N]: reissue what expires soon. */
static int
ca_cmd_renew(struct ctl *ctl, FILE *out, const struct ca_args *a)
{
	char buf[4096], err[1024];
	const char *dir;

	if (a->n != 0) {
		ca_usage(stderr);
		return 2;
	}
	if ((dir = ca_dir_of(ctl, a, buf, sizeof(buf))) == NULL)
		return 2;
	if (ca_renew(dir, a->days ? a->days : 30, out, err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl: ca renew: %s\n", err);
		return 1;
	}
	return 0;
}

/* ca init DIR */
static int
ca_cmd_init(struct ctl *ctl, FILE *out, const struct ca_args *a)
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
	fprintf(out, "wrote %s/%s\nwrote %s/%s (mode 0600)\n",
	    a->v[0], CA_CERT_FILE, a->v[0], CA_KEY_FILE);
	return 0;
}

/* ca issue DIR NAME... [--controller] */
static int
ca_cmd_issue(struct ctl *ctl, FILE *out, const struct ca_args *a)
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
			fprintf(stderr, "knobctl: ca issue: %s\n", err);
			failed++;
			continue;
		}
		fprintf(out, "wrote %s/%s.crt (OU=%s)\nwrote %s/%s.key (mode 0600)\n",
		    dir, names.v[i], a->controller ? KNOB_ROLE_CONTROLLER : KNOB_ROLE_NODE,
		    dir, names.v[i]);
	}
	rc = failed ? 1 : 0;
out:
	strvec_free(&names);
	return rc;
}

static const struct {
	const char *name;
	int (*fn)(struct ctl *, FILE *, const struct ca_args *);
} ca_cmds[] = {
	{ "init", ca_cmd_init },
	{ "issue", ca_cmd_issue },
	{ "revoke", ca_cmd_revoke },
	{ "renew", ca_cmd_renew },
};

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
		case CA_DAYS_OPT:
			if ((a.days = atoi(optarg)) <= 0)
				return opt_bad_value(ctl, "--days"), 2;
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
			return ca_cmds[i].fn(ctl, out, &a);
	fprintf(stderr, "knobctl: ca: unknown subcommand %s\n", argv[optind]);
	ca_usage(stderr);
	return 2;
}

const struct cmd_entry cmd_ca_entry = {
	"ca", "init DIR | issue DIR NAME... | revoke NAME... | renew",
	"cluster CA, node/controller certificates, revocation",
	0, ca_opts, cmd_ca,
	"ca init DIR            create the cluster CA (Ed25519) in DIR\n"
	"ca issue DIR NAME...   one certificate per name (node sets allowed: node[01-16])\n"
	"ca revoke NAME...      list every certificate issued under NAME (DIR/NAME.crt, the\n"
	"                       serials of DIR/issued.txt and superseded.txt: bootstrap's too)\n"
	"                       in the CRL DIR/ca.crl; knobctl refuses a revoked node at once,\n"
	"                       agents refuse a revoked controller once bootstrap pushed it\n"
	"ca renew               reissue DIR's certificates that expire within --days (30)",
};
