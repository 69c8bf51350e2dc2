/* knobctl ca: create the cluster CA and issue node and controller
 * certificates (controller/ca.c does the work).
 *
 *   knobctl ca init DIR
 *   knobctl ca issue DIR NAME... [--controller]
 *
 * NAME may be a node-set expression (node[01-16]); @groups are not
 * resolved here.  Every name is checked before anything is written. */
#include <stdio.h>
#include <string.h>

#include "knobctl.h"
#include "nodeset.h"
#include "tls.h"
#include "ca.h"

static void
ca_usage(FILE *fp)
{
	fprintf(fp, "usage: knobctl ca init DIR\n"
	    "       knobctl ca issue DIR NAME... [--controller]\n");
}

/* ca init DIR */
static int
ca_cmd_init(struct ctl *ctl, FILE *out, int argc, char **argv)
{
	char err[1024];

	(void)ctl;
	if (argc != 3 || argv[2][0] == '-') {
		ca_usage(stderr);
		return 2;
	}
	if (ca_init(argv[2], err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl: ca init: %s\n", err);
		return 1;
	}
	fprintf(out, "wrote %s/%s\nwrote %s/%s (mode 0600)\n",
	    argv[2], CA_CERT_FILE, argv[2], CA_KEY_FILE);
	return 0;
}

/* ca issue DIR NAME... [--controller] */
static int
ca_cmd_issue(struct ctl *ctl, FILE *out, int argc, char **argv)
{
	struct strvec names = { 0 };
	const char *dir = NULL;
	char err[1024];
	int controller = 0, nexpr = 0, failed = 0, rc = 2;

	(void)ctl;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--controller") == 0) {
			controller = 1;
			continue;
		}
		if (argv[i][0] == '-') {
			fprintf(stderr, "knobctl: ca issue: unknown option %s\n", argv[i]);
			ca_usage(stderr);
			goto out;
		}
		if (dir == NULL) {
			dir = argv[i];
			continue;
		}
		if (nodeset_expand(argv[i], NULL, NULL, &names, err, sizeof(err)) < 0) {
			fprintf(stderr, "knobctl: ca issue: %s: %s\n", argv[i], err);
			goto out;
		}
		nexpr++;
	}
	if (dir == NULL || nexpr == 0) {
		ca_usage(stderr);
		goto out;
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
		if (ca_issue(dir, names.v[i], controller, err, sizeof(err)) < 0) {
			fprintf(stderr, "knobctl: ca issue: %s\n", err);
			failed++;
			continue;
		}
		fprintf(out, "wrote %s/%s.crt (OU=%s)\nwrote %s/%s.key (mode 0600)\n",
		    dir, names.v[i], controller ? KNOB_ROLE_CONTROLLER : KNOB_ROLE_NODE,
		    dir, names.v[i]);
	}
	rc = failed ? 1 : 0;
out:
	strvec_free(&names);
	return rc;
}

static const struct {
	const char *name;
	int (*fn)(struct ctl *, FILE *, int, char **);
} ca_cmds[] = {
	{ "init", ca_cmd_init },
	{ "issue", ca_cmd_issue },
};

/* Dispatch "ca SUB ..."; returns the exit status. */
int
cmd_ca(struct ctl *ctl, int argc, char **argv)
{
	FILE *out = (ctl != NULL && ctl->out != NULL) ? ctl->out : stdout;

	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0)) {
		ca_usage(out);
		return 0;
	}
	if (argc < 2) {
		ca_usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < nitems(ca_cmds); i++)
		if (strcmp(argv[1], ca_cmds[i].name) == 0)
			return ca_cmds[i].fn(ctl, out, argc, argv);
	fprintf(stderr, "knobctl: ca: unknown subcommand %s\n", argv[1]);
	ca_usage(stderr);
	return 2;
}
