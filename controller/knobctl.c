/* knobctl: the controller.  Global options, inventory, subcommand table. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knobctl.h"
#include "log.h"
#include "nodeset.h"
#include "tls.h"
#include "util.h"

struct subcmd {
	const char *name;
	int (*fn)(struct ctl *, int, char **);
	const char *usage;
};

static const struct subcmd subcmds[] = {
	{ "ca", cmd_ca, "ca init DIR | ca issue DIR NAME... [--controller]" },
	{ "ping", cmd_ping, "ping -w NODESET [-x NODESET]" },
	{ "facts", cmd_facts, "facts -w NODESET [-x NODESET]" },
	{ "profile", cmd_profile, "profile show NAME|FILE | profile check FILE... | profile list" },
	{ "apply", cmd_apply, "apply PROFILE -w NODESET [-x NODESET] [--check] [--diff] [--keep-going]" },
	{ "verify", cmd_verify, "verify PROFILE -w NODESET" },
	{ "rollback", cmd_rollback, "rollback -w NODESET" },
	{ "bench", cmd_bench, "bench KIND -w NODESET --dir D [--threads LIST] ..." },
	{ "results", cmd_results, "results list | results show RUN | results compare A B" },
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: knobctl [-c CLUSTER.xml] [--json] [--timeout S] [--connect-timeout S]\n"
	    "               [--ca F --cert F --key F] [--log-level L] COMMAND ...\n\ncommands:\n");
	for (size_t i = 0; i < nitems(subcmds); i++)
		fprintf(f, "  %s\n", subcmds[i].usage);
	fprintf(f, "\nThe inventory is found via -c, then $KNOB_CLUSTER, then /etc/knob/cluster.xml.\n"
	    "Exit status: 0 all nodes ok, 1 some node failed/drifted/unreachable, 2 usage or input error.\n");
}

/* An inventory with nothing but defaults (no cluster.xml anywhere). */
static struct inventory *
empty_inventory(void)
{
	struct inventory *inv = xcalloc(1, sizeof(*inv));

	inv->path = xstrdup("(none)");
	inv->port = KNOB_DEFAULT_PORT;
	return inv;
}

/* Load the inventory from -c, $KNOB_CLUSTER or /etc/knob/cluster.xml; with
 * none of them, an empty one (port 7420, TLS from --ca/--cert/--key). */
static int
load_inventory(struct ctl *ctl)
{
	const char *path = ctl->cluster_path;
	char err[8192];

	if (path == NULL)
		path = getenv("KNOB_CLUSTER");
	if (path == NULL && access("/etc/knob/cluster.xml", R_OK) == 0)
		path = "/etc/knob/cluster.xml";
	if (path == NULL) {
		ctl->inv = empty_inventory();
		return 0;
	}
	ctl->inv = inventory_load(path, err, sizeof(err));
	if (ctl->inv == NULL) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cluster", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "connect-timeout", required_argument, NULL, 'T' },
		{ "ca", required_argument, NULL, 'A' },
		{ "cert", required_argument, NULL, 'C' },
		{ "key", required_argument, NULL, 'K' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl ctl;
	const struct subcmd *sc = NULL;
	int ch, rc, lvl = LOG_LVL_WARN;

	memset(&ctl, 0, sizeof(ctl));
	ctl.timeout = 30;
	ctl.connect_timeout = 5;
	ctl.out = stdout;
	ctl.tty = isatty(2);
	/* '+': stop at the subcommand; its options are its own. */
	while ((ch = getopt_long(argc, argv, "+c:jh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': ctl.cluster_path = optarg; break;
		case 'j': ctl.json = 1; break;
		case 't':
			ctl.timeout = strtod(optarg, NULL);
			if (ctl.timeout <= 0) {
				fprintf(stderr, "knobctl: bad --timeout '%s'\n", optarg);
				return 2;
			}
			break;
		case 'T':
			ctl.connect_timeout = strtod(optarg, NULL);
			if (ctl.connect_timeout <= 0) {
				fprintf(stderr, "knobctl: bad --connect-timeout '%s'\n", optarg);
				return 2;
			}
			break;
		case 'A': ctl.ca = optarg; break;
		case 'C': ctl.cert = optarg; break;
		case 'K': ctl.key = optarg; break;
		case 'L':
			if ((lvl = log_parse_level(optarg)) < 0) {
				fprintf(stderr, "knobctl: unknown log level '%s'\n", optarg);
				return 2;
			}
			break;
		case 'V': printf("knobctl %s\n", KNOB_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	log_init("knobctl", lvl);
	signal(SIGPIPE, SIG_IGN);
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < nitems(subcmds); i++)
		if (strcmp(argv[optind], subcmds[i].name) == 0)
			sc = &subcmds[i];
	if (sc == NULL) {
		fprintf(stderr, "knobctl: unknown command '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (load_inventory(&ctl) < 0)
		return 2;
	argc -= optind;
	argv += optind;
	optind = 0;	/* reset getopt for the subcommand */
	rc = sc->fn(&ctl, argc, argv);
	fflush(stdout);
	SSL_CTX_free(ctl.ssl);
	inventory_free(ctl.inv);
	return rc;
}
