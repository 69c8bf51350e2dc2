/* knobctl: the controller.  Command line (controller/opt.c), inventory, dispatch. */
#include <errno.h>
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

/* Parse, load the inventory, run the subcommand; returns the exit status. */
static int
run(struct ctl *ctl, int argc, char **argv)
{
	const struct cmd_entry *ce;
	int r;

	if ((r = opt_leading(ctl, argc, argv)) != 0)
		return r > 0 ? 0 : 2;
	if (optind >= argc) {
		opt_help(stderr, NULL);
		return 2;
	}
	if ((ce = cmd_find(argv[optind])) == NULL) {
		fprintf(stderr, "knobctl: unknown command '%s' (try 'knobctl help')\n", argv[optind]);
		return 2;
	}
	return ctl_run(ctl, ce, argc - optind, argv + optind);
}

int
main(int argc, char **argv)
{
	struct ctl ctl;
	int rc;

	memset(&ctl, 0, sizeof(ctl));
	ctl.timeout = 30;
	ctl.connect_timeout = 5;
	ctl.out = stdout;
	ctl.tty = isatty(2);
	ctl.log_level = LOG_LVL_WARN;
	log_init("knobctl", ctl.log_level);
	signal(SIGPIPE, SIG_IGN);
	rc = run(&ctl, argc, argv);
	fflush(stdout);
	SSL_CTX_free(ctl.ssl);
	tcache_free(ctl.tickets);
	inventory_free(ctl.inv);
	strvec_free(&ctl.w);
	strvec_free(&ctl.x);
	opt_free(&ctl);
	return rc;
}
