/* knobd: the knob agent.  Parses options, sets up one agent instance and
 * runs its event loop until SIGTERM/SIGINT.  SIGHUP goes to the same
 * signalfd, where the loop logs that there is nothing to reload and goes
 * on (agent/loop.c, on_stop).  --stdio exits 1 when its session ended on
 * a protocol error. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>

#include "agent.h"
#include "log.h"
#include "util.h"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: knobd [--listen ADDR:PORT] [--ca F --cert F --key F] [--sysroot DIR]\n"
	    "             [--state-dir DIR] [--stdio] [--node-name NAME]\n"
	    "             [--controller-from ADDR[/BITS][,...]]\n"
	    "             [--log-level err|warn|info|debug] [--no-reapply] [--test-hooks]\n"
	    "             [--version]\n"
	    "\n"
	    "  --listen ADDR:PORT  address to serve on (default 0.0.0.0:%d)\n"
	    "  --ca/--cert/--key   cluster CA, this node's certificate and key (mutual TLS)\n"
	    "  --sysroot DIR       resolve every /sys, /proc and /dev path under DIR (tests)\n"
	    "  --state-dir DIR     journal and state (default /var/lib/knob)\n"
	    "  --stdio             serve one plaintext session on stdin/stdout (SSH exec)\n"
	    "  --node-name NAME    node name (default: the certificate's CN, else hostname)\n"
	    "  --controller-from ADDR[/BITS][,...]  the controllers' source addresses: their\n"
	    "                      handshakes go first when a flood fills the budget\n"
	    "  --no-reapply        do not re-apply the journaled active profile at start-up\n"
	    "  --test-hooks        honour test-only request fields (never in production)\n"
	    "  --test-ticket-times L,R  (with --test-hooks) TLS session lifetime L and ticket\n"
	    "                      key rotation R in seconds, instead of 3600,1800\n",
	    KNOB_DEFAULT_PORT);
}

static const struct option opts[] = {
	{ "listen", required_argument, NULL, 'l' },
	{ "ca", required_argument, NULL, 'A' },
	{ "cert", required_argument, NULL, 'C' },
	{ "key", required_argument, NULL, 'K' },
	{ "sysroot", required_argument, NULL, 'r' },
	{ "state-dir", required_argument, NULL, 's' },
	{ "stdio", no_argument, NULL, 'i' },
	{ "node-name", required_argument, NULL, 'n' },
	{ "log-level", required_argument, NULL, 'L' },
	{ "test-hooks", no_argument, NULL, 'T' },
	{ "no-reapply", no_argument, NULL, 'R' },
	{ "controller-from", required_argument, NULL, 'F' },
	{ "test-ticket-times", required_argument, NULL, 'S' },
	{ "version", no_argument, NULL, 'V' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Apply option ch (argument optarg) to cfg and *lvl: -1 to go on, else
 * the status to exit with now (--version, --help: 0; a bad option: 2). */
static int
opt_apply(int ch, struct agent_cfg *cfg, int *lvl)
{
	switch (ch) {
	case 'l': cfg->listen = optarg; break;
	case 'A': cfg->ca = optarg; break;
	case 'C': cfg->cert = optarg; break;
	case 'K': cfg->key = optarg; break;
	case 'r': cfg->sysroot = optarg; break;
	case 's': cfg->state_dir = optarg; break;
	case 'i': cfg->stdio = 1; break;
	case 'n': cfg->node_name = optarg; break;
	case 'T': cfg->test_hooks = 1; break;
	case 'R': cfg->no_reapply = 1; break;
	case 'F': cfg->controller_from = optarg; break;
	case 'S':
		if (sscanf(optarg, "%u,%u", &cfg->ticket_lifetime_s, &cfg->ticket_rotate_s) != 2 ||
		    cfg->ticket_lifetime_s == 0 || cfg->ticket_rotate_s == 0) {
			fprintf(stderr, "knobd: --test-ticket-times wants LIFETIME,ROTATE "
			    "seconds, not '%s'\n", optarg);
			return 2;
		}
		break;
	case 'L':
		if ((*lvl = log_parse_level(optarg)) < 0) {
			fprintf(stderr, "knobd: unknown log level '%s'\n", optarg);
			return 2;
		}
		break;
	case 'V': printf("knobd %s\n", KNOB_VERSION); return 0;
	case 'h': usage(stdout); return 0;
	default: usage(stderr); return 2;
	}
	return -1;
}

/* The command line into cfg and *lvl: -1 to go on, else the status to exit
 * with now. */
static int
parse_args(int argc, char **argv, struct agent_cfg *cfg, int *lvl)
{
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		if ((rc = opt_apply(ch, cfg, lvl)) >= 0)
			return rc;
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (cfg->ticket_lifetime_s && !cfg->test_hooks) {
		fprintf(stderr, "knobd: --test-ticket-times needs --test-hooks\n");
		return 2;
	}
	return -1;
}

/* Block SIGTERM, SIGINT and SIGHUP in every thread (worker threads inherit
 * the mask) and return a signalfd for them, the agent's stop_fd. */
static int
signals_fd(void)
{
	sigset_t ss;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);	/* worker threads inherit the mask */
	fd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		fatal("signalfd");
	return fd;
}

int
main(int argc, char **argv)
{
	struct agent_cfg cfg;
	struct agent *a;
	int lvl = LOG_LVL_INFO, rc;

	memset(&cfg, 0, sizeof(cfg));
	cfg.stop_fd = -1;
	if ((rc = parse_args(argc, argv, &cfg, &lvl)) >= 0)
		return rc;
	log_init("knobd", lvl);
	cfg.stop_fd = signals_fd();

	a = xcalloc(1, sizeof(*a));
	if (agent_init(a, &cfg) < 0) {
		agent_fini(a);
		free(a);
		return 1;
	}
	log_set_default_instance(a->node);	/* threads of the subsystems too */
	rc = cfg.stdio ? agent_run_stdio(a) : agent_run(a);
	if (agent_fini(a) == 0) {	/* else threads still use it: exit without freeing */
		log_set_default_instance(NULL);
		free(a);
	}
	close(cfg.stop_fd);
	return rc < 0 ? 1 : 0;
}
