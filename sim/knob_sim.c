/* knob-sim: a simulated fleet.  N agent instances in one process, spread
 * over a few event-loop threads that share one worker pool.  Each
 * instance is a real agent (the same dispatch, drivers and journal as
 * knobd) with its own listening address, its own --sysroot (a small fake
 * tree, sim_tree.c) and its own state directory; only the listening side
 * is multiplied.
 *
 * Certificates: one node certificate per block of names (--block, 256 by
 * default), its subjectAltName listing every name of the block, so that
 * the controller's name pinning (SSL_set1_host) accepts each node; made
 * once in DIR/ca and reused.  The real fleet keeps one certificate per
 * node.
 *
 *   knob-sim N --dir DIR [--base 127.77.0.1] [--port 7420] [--threads 2]
 *            [--block 256] [--inventory FILE] [--handshake-timeout 30]
 *            [--log-level warn]
 *
 * Instance i (from 1) is node simNNNNN at address BASE+i-1, sysroot
 * DIR/nodes/simNNNNN/root, state DIR/nodes/simNNNNN/state.  With --sni
 * every instance shares one listener on BASE:PORT instead, which hands each
 * connection to the instance its ClientHello's server name picks
 * (sim_sni.c): one socket in all, not one per agent.  When every instance
 * listens it prints "knob-sim: N agents ready" on stderr; SIGTERM or SIGINT
 * stops them all. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "agent.h"
#include "ca.h"
#include "knobctl.h"
#include "log.h"
#include "sim.h"
#include "tls.h"
#include "util.h"

#define SIM_MAX		100000
/* Descriptors: one controller connection per agent, and with an address
 * of its own a listener (the posts' eventfd is one per thread, ev_async). */
#define FDS_SPARE	(256 + SNI_PEND_MAX)
#define SIM_ALIAS_MAX	16
/* The handshake deadline of a simulated agent.  knobd's 5 s assume a CPU
 * of its own; here N agents share T threads, so a burst of N handshakes
 * queues behind one another (on a loaded host, for long). */
#define SIM_HANDSHAKE_S	30

struct sim_opts {
	unsigned n, threads, block, port, handshake_s;
	const char *dir, *base, *inventory;
	int log_level;
	int sni;			/* one listener, instance by server name */
	unsigned nalias;
	const char *alias[SIM_ALIAS_MAX];	/* "NAME=NODE" (--sni) */
};

/* One simulated node. */
struct sim_node {
	struct agent a;
	char name[16];
	char listen[40];
	char addr[INET_ADDRSTRLEN];
	char *root, *state;
	struct sim_thread *th;	/* the thread its agent lives on */
};

/* A connection the SNI listener passes to another thread's agent. */
struct sim_handoff {
	struct sim_handoff *next;
	struct agent *a;
	int fd;
	struct sockaddr_storage ss;
	socklen_t sl;
};

/* One event-loop thread and the base its agents are plugged into. */
struct sim_thread {
	struct ev_base *base;
	int stopfd;
	pthread_t th;
	int started;
	pthread_mutex_t mu;		/* inbox, from the SNI listener's thread */
	struct sim_handoff *inbox;
	struct ev_async wake;
};

/* --sni: the instance behind each server name, sorted by name. */
struct sim_name {
	const char *name;
	struct agent *a;
};
struct sim_names {
	struct sim_name *v;
	size_t n;
	char *alias[SIM_ALIAS_MAX];	/* the aliases' names (owned) */
	struct sim_thread *front;	/* the thread the SNI listener runs on */
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: knob-sim N --dir DIR [--base ADDR] [--port P] [--threads T] [--block B]\n"
	    "                [--sni [--alias NAME=NODE]...] [--inventory FILE]\n"
	    "                [--log-level err|warn|info|debug]\n"
	    "\n"
	    "  N                 simulated agents (1-%d)\n"
	    "  --dir DIR         CA, fake trees and state directories (use tmpfs)\n"
	    "  --base ADDR       IPv4 address of the first agent; the others follow (127.77.0.1)\n"
	    "  --port P          port every agent listens on (%d)\n"
	    "  --sni             one listener on ADDR:P for all; the TLS server name picks the agent\n"
	    "  --alias NAME=NODE (--sni, tests) answer server name NAME with NODE's agent: a\n"
	    "                    mis-pointed name\n"
	    "  --threads T       event-loop threads (2)\n"
	    "  --block B         node names per certificate (256)\n"
	    "  --handshake-timeout S  each agent's TLS handshake deadline (%d; knobd: 5)\n"
	    "  --inventory FILE  write the matching cluster.xml for knobctl\n",
	    SIM_MAX, KNOB_DEFAULT_PORT, SIM_HANDSHAKE_S);
}

/* Parse an unsigned option in [lo, hi]; -1 when it is not one. */
static long
parse_uint(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	return v;
}

static const struct option opts[] = {
	{ "dir", required_argument, NULL, 'd' },
	{ "base", required_argument, NULL, 'b' },
	{ "port", required_argument, NULL, 'p' },
	{ "threads", required_argument, NULL, 't' },
	{ "block", required_argument, NULL, 'B' },
	{ "inventory", required_argument, NULL, 'i' },
	{ "log-level", required_argument, NULL, 'L' },
	{ "handshake-timeout", required_argument, NULL, 'H' },
	{ "sni", no_argument, NULL, 'S' },
	{ "alias", required_argument, NULL, 'A' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Apply option ch (argument optarg) to o: 0, -1 for a bad value, or 2
 * after the usage for an unknown option (--help exits here). */
static int
opt_apply(int ch, struct sim_opts *o)
{
	long v = 0;

	switch (ch) {
	case 'd': o->dir = optarg; break;
	case 'b': o->base = optarg; break;
	case 'i': o->inventory = optarg; break;
	case 'p': v = parse_uint(optarg, 1, 65535); o->port = (unsigned)v; break;
	case 't': v = parse_uint(optarg, 1, 64); o->threads = (unsigned)v; break;
	case 'B': v = parse_uint(optarg, 1, 4096); o->block = (unsigned)v; break;
	case 'H': v = parse_uint(optarg, 1, 3600); o->handshake_s = (unsigned)v; break;
	case 'L': v = o->log_level = log_parse_level(optarg); break;
	case 'S': o->sni = 1; break;
	case 'A':
		if (o->nalias == SIM_ALIAS_MAX || strchr(optarg, '=') == NULL)
			v = -1;
		else
			o->alias[o->nalias++] = optarg;
		break;
	case 'h': usage(stdout); exit(0);
	default: usage(stderr); return 2;
	}
	return v < 0 ? -1 : 0;
}

/* Options into o. 0, or the exit status for main. */
static int
parse_opts(int argc, char **argv, struct sim_opts *o)
{
	long v;
	int ch, rc;

	memset(o, 0, sizeof(*o));
	o->threads = 2;
	o->block = 256;
	o->port = KNOB_DEFAULT_PORT;
	o->handshake_s = SIM_HANDSHAKE_S;
	o->base = "127.77.0.1";
	o->log_level = LOG_LVL_WARN;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if ((rc = opt_apply(ch, o)) == 2)
			return 2;
		if (rc < 0) {
			fprintf(stderr, "knob-sim: bad option value '%s'\n", optarg);
			return 2;
		}
	}
	if (optind + 1 != argc || o->dir == NULL ||
	    (v = parse_uint(argv[optind], 1, SIM_MAX)) < 0) {
		usage(stderr);
		return 2;
	}
	o->n = (unsigned)v;
	if (o->nalias && !o->sni) {
		fprintf(stderr, "knob-sim: --alias needs --sni\n");
		return 2;
	}
	return 0;
}

/* Raise the soft fd limit to the hard one; -1 (said why) when even the
 * hard limit is too low for n agents. */
static int
raise_fd_limit(unsigned n, int sni)
{
	rlim_t need = (rlim_t)n * (sni ? 1 : 2) + FDS_SPARE;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		log_warn("getrlimit");
		return -1;
	}
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
		fprintf(stderr, "knob-sim: %u agents need about %llu file descriptors, but the hard "
		    "limit is %llu; raise it (ulimit -Hn, LimitNOFILE=, limits.conf)%s or simulate "
		    "fewer agents\n", n, (unsigned long long)need, (unsigned long long)rl.rlim_max,
		    sni ? "" : ", use --sni (one listener for all)");
		return -1;
	}
	if (rl.rlim_cur < need || rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			log_warn("setrlimit");
			return -1;
		}
	}
	return 0;
}

/* Name, address and paths of node i (from 0). 0 or -1. */
static int
node_names(struct sim_node *s, const struct sim_opts *o, unsigned i)
{
	struct in_addr in;

	if (inet_pton(AF_INET, o->base, &in) != 1) {
		fprintf(stderr, "knob-sim: --base '%s' is not an IPv4 address\n", o->base);
		return -1;
	}
	in.s_addr = htonl(ntohl(in.s_addr) + (o->sni ? 0 : i));
	inet_ntop(AF_INET, &in, s->addr, sizeof(s->addr));
	snprintf(s->name, sizeof(s->name), "sim%05u", i + 1);
	snprintf(s->listen, sizeof(s->listen), "%s:%u", s->addr, o->port);
	s->root = xasprintf("%s/nodes/%s/root", o->dir, s->name);
	s->state = xasprintf("%s/nodes/%s/state", o->dir, s->name);
	return 0;
}

/* Make DIR/ca (CA and controller certificate) unless it exists. 0 or -1. */
static int
make_ca(const struct sim_opts *o, char *err, size_t errlen)
{
	char *ca = xasprintf("%s/ca", o->dir), *crt = xasprintf("%s/ca/ca.crt", o->dir);
	char *ctl = xasprintf("%s/ca/controller.crt", o->dir);
	int rc = -1;

	if (access(crt, F_OK) != 0 && ca_init(ca, err, errlen) < 0)
		goto out;
	if (access(ctl, F_OK) != 0 && ca_issue(ca, "controller", 1, err, errlen) < 0)
		goto out;
	rc = 0;
out:
	free(ca);
	free(crt);
	free(ctl);
	return rc;
}

/* The server context of block b (nodes b*block ...), issuing its
 * certificate first when it does not exist. NULL with err. */
static SSL_CTX *
block_ctx(const struct sim_opts *o, const struct sim_node *nodes, unsigned b, char *err,
    size_t errlen)
{
	unsigned first = b * o->block, n = o->n - first < o->block ? o->n - first : o->block;
	char cn[32], *ca = xasprintf("%s/ca", o->dir), *crt, *key, *cacrt;
	const char **names = xcalloc(n, sizeof(*names));
	SSL_CTX *ctx = NULL;

	snprintf(cn, sizeof(cn), "simblock-%s", nodes[first].name);
	crt = xasprintf("%s/%s.crt", ca, cn);
	key = xasprintf("%s/%s.key", ca, cn);
	cacrt = xasprintf("%s/ca.crt", ca);
	for (unsigned i = 0; i < n; i++)
		names[i] = nodes[first + i].name;
	if (access(crt, F_OK) == 0 || ca_issue_fleet(ca, cn, names, n, err, errlen) == 0) {
		if ((ctx = tls_ctx_new(1, cacrt, crt, key, err, errlen)) != NULL)
			SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	}
	free(names);
	free(ca);
	free(crt);
	free(key);
	free(cacrt);
	return ctx;
}

/* Write the cluster.xml that reaches every simulated node. 0 or -1. */
static int
write_inventory(const struct sim_opts *o, const struct sim_node *nodes)
{
	char *doc = NULL;
	int rc;

	str_appendf(&doc, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<!-- written by knob-sim: %u simulated agents -->\n<cluster port=\"%u\">\n"
	    "  <tls ca=\"%s/ca/ca.crt\" cert=\"%s/ca/controller.crt\" "
	    "key=\"%s/ca/controller.key\"/>\n  <results db=\"%s/results.db\"/>\n"
	    "  <group name=\"sim\" nodes=\"sim[00001-%05u]\"/>\n", o->n, o->port, o->dir, o->dir,
	    o->dir, o->dir, o->n);
	for (unsigned i = 0; i < o->n; i++)
		str_appendf(&doc, "  <node name=\"%s\" addr=\"%s\"/>\n", nodes[i].name,
		    nodes[i].addr);
	str_appendf(&doc, "</cluster>\n");
	rc = write_file_atomic(o->inventory, doc, strlen(doc), 0644);
	if (rc < 0)
		fprintf(stderr, "knob-sim: %s: %s\n", o->inventory, strerror(-rc));
	free(doc);
	return rc < 0 ? -1 : 0;
}

/* Fake tree and state directory of s, then the agent itself. 0 or -1. */
static int
node_start(struct sim_node *s, const struct sim_opts *o, struct ev_base *base,
    struct work_pool *pool, SSL_CTX *ctx)
{
	struct agent_cfg cfg;

	if ((access(s->root, F_OK) != 0 && sim_tree_make(s->root) < 0) ||
	    sim_mkdirs(s->state) < 0) {
		log_warn("%s: fake tree", s->name);
		return -1;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.listen = s->listen;
	cfg.sysroot = s->root;
	cfg.state_dir = s->state;
	cfg.node_name = s->name;
	cfg.stop_fd = -1;
	cfg.pool = pool;
	cfg.base = base;
	cfg.ssl_ctx = ctx;
	cfg.handshake_s = o->handshake_s;
	cfg.no_listen = o->sni;
	return agent_init(&s->a, &cfg);
}

static int
name_cmp(const void *x, const void *y)
{
	return strcmp(((const struct sim_name *)x)->name, ((const struct sim_name *)y)->name);
}

/* --sni: every node's name, then each --alias NAME=NODE, sorted.  0 or -1
 * (said why). */
static int
names_build(const struct sim_opts *o, struct sim_node *nodes, struct sim_names *nm)
{
	nm->n = 0;
	nm->v = xcalloc(o->n + o->nalias, sizeof(*nm->v));
	for (unsigned i = 0; i < o->n; i++)
		nm->v[nm->n++] = (struct sim_name){ nodes[i].name, &nodes[i].a };
	qsort(nm->v, nm->n, sizeof(*nm->v), name_cmp);
	for (unsigned i = 0; i < o->nalias; i++) {
		const char *eq = strchr(o->alias[i], '=');
		struct sim_name key = { eq + 1, NULL }, *to;

		to = bsearch(&key, nm->v, o->n, sizeof(*nm->v), name_cmp);
		if (to == NULL || eq == o->alias[i]) {
			fprintf(stderr, "knob-sim: --alias %s: no simulated node '%s'\n",
			    o->alias[i], eq + 1);
			return -1;
		}
		nm->alias[i] = xasprintf("%.*s", (int)(eq - o->alias[i]), o->alias[i]);
		nm->v[nm->n++] = (struct sim_name){ nm->alias[i], to->a };
	}
	qsort(nm->v, nm->n, sizeof(*nm->v), name_cmp);
	return 0;
}

/* The SNI listener's lookup: the instance answering name, or NULL. */
static struct agent *
sni_lookup(void *arg, const char *name)
{
	const struct sim_names *nm = arg;
	struct sim_name key = { name, NULL }, *hit;

	hit = bsearch(&key, nm->v, nm->n, sizeof(*nm->v), name_cmp);
	return hit ? hit->a : NULL;
}

/* The SNI listener (on thread front) passes fd to instance a: directly
 * when a lives on the same thread, else through that thread's inbox. */
static void
sni_handoff(void *arg, struct agent *a, int fd, const struct sockaddr *sa, unsigned salen)
{
	struct sim_thread *front = ((struct sim_names *)arg)->front;
	struct sim_node *s = (struct sim_node *)((char *)a - offsetof(struct sim_node, a));
	struct sim_thread *t = s->th;
	struct sim_handoff *h;

	if (t == front) {
		agent_adopt(a, fd, sa, (socklen_t)salen);
		return;
	}
	h = xcalloc(1, sizeof(*h));
	h->a = a;
	h->fd = fd;
	memcpy(&h->ss, sa, salen);
	h->sl = (socklen_t)salen;
	pthread_mutex_lock(&t->mu);
	h->next = t->inbox;
	t->inbox = h;
	pthread_mutex_unlock(&t->mu);
	ev_async_send(t->base, &t->wake);
}

/* A thread's inbox: serve the connections handed to its agents. */
static void
on_inbox(void *arg)
{
	struct sim_thread *t = arg;
	struct sim_handoff *h, *next;

	pthread_mutex_lock(&t->mu);
	h = t->inbox;
	t->inbox = NULL;
	pthread_mutex_unlock(&t->mu);
	for (; h; h = next) {
		next = h->next;
		agent_adopt(h->a, h->fd, (struct sockaddr *)&h->ss, h->sl);
		free(h);
	}
}

/* Close what a stopped thread's inbox still holds. */
static void
inbox_free(struct sim_thread *t)
{
	struct sim_handoff *h, *next;

	for (h = t->inbox; h; h = next) {
		next = h->next;
		close(h->fd);
		free(h);
	}
	t->inbox = NULL;
	pthread_mutex_destroy(&t->mu);
}

/* The stop eventfd of a thread: leave its loop. */
static void
on_thread_stop(int fd, uint32_t events, void *arg)
{
	(void)fd;
	(void)events;
	ev_stop(arg);
}

static void *
thread_main(void *arg)
{
	struct sim_thread *t = arg;

	ev_run(t->base);
	return NULL;
}

/* Memory of this process from /proc/self/status: VmRSS in KiB (0 unknown). */
static unsigned long
rss_kib(void)
{
	char buf[4096], *p;
	unsigned long kib = 0;

	if (read_small_file("/proc/self/status", buf, sizeof(buf)) > 0 &&
	    (p = strstr(buf, "VmRSS:")) != NULL)
		kib = strtoul(p + 6, NULL, 10);
	return kib;
}

/* Once the threads stopped: what the agents counted before authentication
 * since their last once-a-second summary (refusals, drops over the budget,
 * failed handshakes), in one line for them all; agent_fini would log a
 * line for each agent (it finds nothing left after this). */
static void
unauth_flush(struct sim_node *nodes, unsigned n)
{
	unsigned refused = 0, nofile = 0, evicted = 0, failed = 0, agents = 0;
	const struct sim_node *first = NULL, *last = NULL;

	for (unsigned i = 0; i < n; i++) {
		struct agent *a = &nodes[i].a;

		if (!(a->refused || a->nofile || a->evicted || a->hs_failed))
			continue;
		agents++;
		first = first ? first : &nodes[i];
		last = a->hs_failed ? &nodes[i] : last;
		refused += a->refused;
		nofile += a->nofile;
		evicted += a->evicted;
		failed += a->hs_failed;
		a->refused = a->nofile = a->evicted = a->hs_failed = 0;
	}
	if (agents)
		log_warnx("stopping: not yet summarised before authentication on %u agent(s) (%s "
		    "first): refused %u connection(s) over the per-address limit and %u out of file "
		    "descriptors, dropped %u over the budget, %u handshake(s) failed or abandoned%s%s%s%s",
		    agents, first->name, refused, nofile, evicted, failed, last ? "; the last: " : "",
		    last ? last->name : "", last ? ": " : "", last ? last->a.hs_last : "");
}

/* What one simulation holds while it runs (simulate's, freed by sim_stop). */
struct sim_run {
	struct work_pool *pool;
	struct sim_sni *front;
	struct sim_names names;
	SSL_CTX *ctx;			/* the certificates of the last block started */
	unsigned up;			/* nodes started */
};

/* Before any thread: the nodes' names, the directories, the CA and the
 * inventory. 0 or -1 (said on stderr). */
static int
sim_prepare(const struct sim_opts *o, struct sim_node *nodes)
{
	char err[512];

	for (unsigned i = 0; i < o->n; i++)
		if (node_names(&nodes[i], o, i) < 0)
			return -1;
	if (sim_mkdirs(o->dir) < 0 || make_ca(o, err, sizeof(err)) < 0) {
		fprintf(stderr, "knob-sim: %s: %s\n", o->dir, errno ? strerror(errno) : err);
		return -1;
	}
	if (o->inventory && write_inventory(o, nodes) < 0)
		return -1;
	return 0;
}

/* Each thread's event base, stop eventfd and inbox (not yet running).
 * 0 or -1; sim_stop frees what was made. */
static int
threads_init(const struct sim_opts *o, struct sim_thread *th)
{
	for (unsigned i = 0; i < o->threads; i++) {
		pthread_mutex_init(&th[i].mu, NULL);
		if ((th[i].base = ev_base_new()) == NULL ||
		    (th[i].stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
		    ev_io_add(th[i].base, th[i].stopfd, EPOLLIN, on_thread_stop, th[i].base) < 0 ||
		    ev_async_init(th[i].base, &th[i].wake, on_inbox, &th[i]) < 0)
			return -1;
	}
	return 0;
}

/* Start every node on its thread's base, a block's certificates at a time
 * (r->up counts those started). 0 or -1 (said on stderr). */
static int
nodes_start(const struct sim_opts *o, struct sim_node *nodes, struct sim_thread *th,
    struct sim_run *r)
{
	char err[512];

	for (unsigned i = 0; i < o->n; i++, r->up++) {
		if (i % o->block == 0) {
			SSL_CTX_free(r->ctx);
			if ((r->ctx = block_ctx(o, nodes, i / o->block, err, sizeof(err))) == NULL) {
				fprintf(stderr, "knob-sim: certificates: %s\n", err);
				return -1;
			}
		}
		nodes[i].th = &th[i % o->threads];
		if (node_start(&nodes[i], o, nodes[i].th->base, r->pool, r->ctx) < 0) {
			fprintf(stderr, "knob-sim: %s (%s) did not start\n", nodes[i].name,
			    nodes[i].listen);
			agent_fini(&nodes[i].a);
			return -1;
		}
	}
	return 0;
}

/* --sni: the one listener on the first node's address that hands each
 * connection to the agent it names. 0 or -1 (said on stderr). */
static int
sni_start(const struct sim_opts *o, struct sim_node *nodes, struct sim_thread *th,
    struct sim_run *r)
{
	char err[512];

	if (!o->sni)
		return 0;
	if (names_build(o, nodes, &r->names) < 0)
		return -1;
	if ((r->front = sim_sni_new(th[0].base, nodes[0].listen, o->handshake_s, sni_lookup,
	    sni_handoff, &r->names, err, sizeof(err))) == NULL) {
		fprintf(stderr, "knob-sim: %s\n", err);
		return -1;
	}
	return 0;
}

/* Run the threads, say the simulation is ready (with its memory per agent
 * over rss0) and wait for SIGTERM or SIGINT. 0 or -1. */
static int
serve(const struct sim_opts *o, struct sim_node *nodes, struct sim_thread *th,
    const struct sim_run *r, unsigned long rss0)
{
	unsigned long rss1;
	sigset_t ss;
	int sig;

	for (unsigned i = 0; i < o->threads; i++) {
		if (pthread_create(&th[i].th, NULL, thread_main, &th[i]) != 0)
			return -1;
		th[i].started = 1;
	}
	rss1 = rss_kib();
	fprintf(stderr, "knob-sim: %u agents ready on %u threads, pool of %u%s%s; VmRSS %lu KiB, "
	    "%.1f KiB per agent\n", o->n, o->threads, work_pool_threads(r->pool),
	    o->sni ? ", one SNI listener on " : "", o->sni ? nodes[0].listen : "", rss1,
	    (double)(rss1 > rss0 ? rss1 - rss0 : 0) / o->n);
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigwait(&ss, &sig);
	fprintf(stderr, "knob-sim: signal %d: stopping %u agents\n", sig, o->n);
	return 0;
}

/* Stop and join the threads that started, then free the SNI listener and
 * the inboxes. */
static void
threads_stop(const struct sim_opts *o, struct sim_thread *th, struct sim_run *r)
{
	unsigned i;

	for (i = 0; i < o->threads; i++) {
		uint64_t one = 1;

		if (th[i].started) {
			if (write(th[i].stopfd, &one, sizeof(one)) < 0)
				log_warn("eventfd");
			pthread_join(th[i].th, NULL);
		}
	}
	sim_sni_free(r->front);
	for (i = 0; i < o->threads; i++)
		inbox_free(&th[i]);
}

/* Tear down what simulate set up: rc, or 2 when work items outlived the
 * shutdown deadline (then the nodes, bases and pool are left in use). */
static int
sim_stop(const struct sim_opts *o, struct sim_node *nodes, struct sim_thread *th,
    struct sim_run *r, int rc)
{
	unsigned i;
	int busy = 0;

	threads_stop(o, th, r);
	unauth_flush(nodes, r->up);
	for (i = 0; i < r->up; i++)
		if (agent_fini(&nodes[i].a) < 0)
			busy = 1;	/* its items still run: leave the pool be */
	for (i = 0; i < o->threads && !busy; i++) {	/* busy: late posts still wake them */
		if (th[i].stopfd > 0)
			close(th[i].stopfd);
		ev_base_free(th[i].base);
	}
	for (i = 0; i < SIM_ALIAS_MAX; i++)
		free(r->names.alias[i]);
	free(r->names.v);
	SSL_CTX_free(r->ctx);
	if (busy) {	/* the nodes and the pool are still in use: exit as they are */
		fprintf(stderr, "knob-sim: work items still running after %d s; exiting\n",
		    AGENT_FINI_WAIT_S);
		return 2;
	}
	work_pool_free(r->pool);
	return rc;
}

/* Set up nodes, blocks' certificates and threads; serve until a signal.
 * 0, -1, or 2 when work items outlived the shutdown deadline. */
static int
simulate(const struct sim_opts *o, struct sim_node *nodes, struct sim_thread *th)
{
	struct sim_run r;
	unsigned long rss0 = rss_kib();
	int rc = -1;

	memset(&r, 0, sizeof(r));
	r.names.front = &th[0];
	if (sim_prepare(o, nodes) < 0)
		return -1;
	if ((r.pool = work_pool_new(WORK_THREADS)) == NULL)
		return -1;
	if (threads_init(o, th) == 0 && nodes_start(o, nodes, th, &r) == 0 &&
	    sni_start(o, nodes, th, &r) == 0 && serve(o, nodes, th, &r, rss0) == 0)
		rc = 0;
	return sim_stop(o, nodes, th, &r, rc);
}

int
main(int argc, char **argv)
{
	struct sim_opts o;
	struct sim_node *nodes;
	struct sim_thread *th;
	sigset_t ss;
	int rc;

	if ((rc = parse_opts(argc, argv, &o)) != 0)
		return rc;
	log_init("knob-sim", o.log_level);
	if (raise_fd_limit(o.n, o.sni) < 0)
		return 1;
	/* every thread inherits the mask: only sigwait sees these */
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);
	signal(SIGPIPE, SIG_IGN);
	nodes = xcalloc(o.n, sizeof(*nodes));
	th = xcalloc(o.threads, sizeof(*th));
	rc = simulate(&o, nodes, th);
	if (rc == 2)
		return 1;
	for (unsigned i = 0; i < o.n; i++) {
		free(nodes[i].root);
		free(nodes[i].state);
	}
	free(nodes);
	free(th);
	return rc < 0 ? 1 : 0;
}
