/* knobctl: the controller.  Command line (controller/opt.c), inventory, dispatch. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

/* The errno of a write error an earlier flush of standard output met and
 * the stream only marked, when output_flush did not keep it: EBADF when
 * fd 1 is closed, EPIPE when it is a pipe or socket whose reader went away
 * (poll says POLLERR), else 0 (unknown). */
static int
stdout_lost_errno(void)
{
	struct pollfd p = { .fd = STDOUT_FILENO, .events = POLLOUT };

	if (fcntl(STDOUT_FILENO, F_GETFD) < 0)
		return EBADF;
	if (poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
		return EPIPE;
	return 0;
}

/* rc, unless standard output could not be written (a full disk, a closed
 * pipe: what was asked for did not reach its reader): a message and 2 when
 * rc said success, or 128 + SIGPIPE, silently, for a reader that went
 * away (the status a shell gives a program SIGPIPE killed; knobctl
 * ignores SIGPIPE for its sockets). */
static int
stdout_status(int rc)
{
	int e;

	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	if ((e = errno) == 0)
		e = output_stdout_errno();
	if (e == 0)
		e = stdout_lost_errno();
	if (e == EPIPE)
		return 128 + SIGPIPE;
	fprintf(stderr, "knobctl: standard output: %s\n", e ? strerror(e) : "write error");
	return rc != 0 ? rc : 2;
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
	rc = stdout_status(run(&ctl, argc, argv));
	SSL_CTX_free(ctl.ssl);
	tcache_free(ctl.tickets);
	inventory_free(ctl.inv);
	strvec_free(&ctl.w);
	strvec_free(&ctl.x);
	opt_free(&ctl);
	return rc;
}
