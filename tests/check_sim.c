/* The agent core under load, with real processes:
 * - the worker pool: 50 concurrent applies (50 knobctl processes, each
 *   queueing for the tuning lock) to one real knobd in a network namespace
 *   all complete, while the agent never runs more threads than its main
 *   thread plus the pool's WORK_THREADS (read from /proc/PID/task);
 * - shutdown with a work item that never ends is bounded (10 s, then exit);
 * - knob-sim: 200 simulated agents in one process on host loopback
 *   (127.77.1.x, this helper's range), driven by the real knobctl through
 *   the cluster.xml knob-sim writes: ping, apply, verify and rollback all
 *   ok on every node; every fake tree holds the profile after apply (the
 *   files are read), and the non-default values the test wrote before
 *   come back after rollback.  The fake trees stand in for sysfs, /proc/sys
 *   and a Lustre client (no Lustre here); they are files on tmpfs that the
 *   same drivers read and write;
 * - the same fleet through the connection holder (knobctl mux): facts
 *   and the four commands ok on every node over links the first ping
 *   opened (each node's "reused link" in knobctl's debug log), each
 *   command's 200 nodes on one channel; the holder then has 200 idle
 *   links and no channel, node or request outstanding;
 * - knob-sim --sni: the same fleet behind ONE listening socket (127.91.0.1,
 *   this helper's range), each connection handed to the agent its TLS
 *   server name picks: the same four commands ok, the process holds one
 *   socket once they are done, a name the simulator does not know is
 *   refused in the handshake (unrecognized_name), connections that speak
 *   no TLS are closed while idle ones wait and the fleet is served, and a
 *   name answered by another node's agent (--alias, a mis-pointed name) is
 *   auth-failed, also when that agent resumes a ticket it issued. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "agent.h"
#include "harness.h"
#include "testutil.h"
#include "tktutil.h"
#include "tls.h"
#include "util.h"
#include "wire.h"

#define NCONC		50	/* concurrent applies */
#define NSIM		200	/* simulated agents */
#define SIM_BASE	"127.77.1.1"
#define SNI_BASE	"127.91.0.1"
#define NJUNK		10	/* idle and non-TLS connections on the SNI listener */

static struct harness h;

/* Threads of process pid now; -1 when it is gone. */
static int
task_count(pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Start sh -c cmd in the background. */
static pid_t
sh_bg(const char *cmd)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Has agent 0's log said at least *(int *)arg times that a controller
 * connected? */
static int
connected(void *arg)
{
	char *txt = cu_slurp(h.node[0].log), *p;
	int n = 0;

	for (p = txt; (p = strstr(p, "connected from")) != NULL; p++)
		n++;
	free(txt);
	return n >= *(int *)arg;
}

/* One knobd (--test-hooks) whose sysroot root (into buf) has
 * vm.dirty_ratio at 17, not the kernel default. */
static void
start_node(char *root, size_t len)
{
	ck_assert_int_eq(harness_start(&h, 1, 0), 0);
	snprintf(root, len, "%s/root", h.tmp);
	cu_write_at(root, "/proc/sys/vm/dirty_ratio", 0644, "%s", "17\n");
	snprintf(h.node[0].sysroot, sizeof(h.node[0].sysroot), "%s", root);
	snprintf(h.node[0].extra_args, sizeof(h.node[0].extra_args), "--test-hooks");
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
}

START_TEST(test_pool_bounds_threads)
{
	char root[PATH_MAX], prof[PATH_MAX], path[PATH_MAX + 64];
	pid_t kids[NCONC];
	int running, max_running = 0, max_tasks = 0, st, t;

	start_node(root, sizeof(root));
	cu_write_at(root, "/proc/sys/net/core/somaxconn", 0644, "%s", "1000\n");
	snprintf(path, sizeof(path), "%s/proc/sys/vm/dirty_ratio", root);
	snprintf(prof, sizeof(prof), "%s/pool.xml", h.tmp);
	cu_write(prof, 0644, "%s", "<?xml version=\"1.0\"?>\n<profile name=\"pool\" summary=\"pool test\">\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"33\"/>\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"8192\"/>\n</profile>\n");
	/* one source address: at most 8 unauthenticated connections from it
	 * (the agent's flood budget), so each knobctl starts once all but a
	 * few of the earlier ones have authenticated (the agent's log says) */
	for (int i = 0; i < NCONC; i++) {
		char *cmd = xasprintf("ip netns exec %s %s/knobctl -c %s apply --wait 300 "
		    "--test-pause-ms 40 %s -w node01 >%s/apply.%d.out 2>&1 </dev/null", h.ctl_ns,
		    h.bin, h.cluster, prof, h.tmp, i);

		int before = i - 4;

		ck_assert_msg(cu_wait(connected, &before, 60) >= 0, "controller %d never connected",
		    before);
		kids[i] = sh_bg(cmd);
		free(cmd);
	}
	/* sample the agent's threads until every apply has ended */
	do {
		running = 0;
		for (int i = 0; i < NCONC; i++) {
			if (kids[i] > 0 && waitpid(kids[i], &st, WNOHANG) == kids[i]) {
				char out[PATH_MAX + 32];

				snprintf(out, sizeof(out), "%s/apply.%d.out", h.tmp, i);
				ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				    "apply %d failed (status %d): %s", i, st, cu_slurp(out));
				kids[i] = 0;
			}
			running += kids[i] > 0;
		}
		if (running > max_running)
			max_running = running;
		if ((t = task_count(h.node[0].pid)) > max_tasks)
			max_tasks = t;
		ck_assert_msg(t > 0, "knobd died");
	} while (running > 0);
	/* more applies waited on the agent than it has threads: they queued */
	ck_assert_int_gt(max_running, WORK_THREADS + 1);
	fprintf(stderr, "check_sim: %d applies (up to %d at once), knobd had at most %d threads\n",
	    NCONC, max_running, max_tasks);
	ck_assert_msg(max_tasks <= 1 + WORK_THREADS, "knobd ran %d threads (main + %d pool)",
	    max_tasks, WORK_THREADS);
	ck_assert(!harness_log_has(&h, 0, "agent busy"));
	snprintf(path, sizeof(path), "%s/proc/sys/vm/dirty_ratio", root);
	ck_assert_str_eq(cu_readf("%s", path), "33");
}
END_TEST

/* Per-node values the test writes before apply: none is the profile's. */
struct simkey {
	const char *file;	/* under the node's root */
	const char *want;	/* the profile's value */
	int base, mod;		/* original = base + i % mod */
};
static const struct simkey simkeys[] = {
	{ "/sys/block/sda/queue/read_ahead_kb", "4096", 200, 1000 },
	{ "/sys/block/nvme0n1/queue/nr_requests", "256", 500, 400 },
	{ "/proc/sys/vm/dirty_ratio", "40", 21, 15 },
	{ "/proc/sys/net/core/rmem_max", "16777216", 300000, 5000 },
	{ "/sys/fs/lustre/osc/sim-OST0001-osc-ffff8800/max_rpcs_in_flight", "32", 9, 7 },
	{ "/sys/fs/lustre/llite/sim-ffff8800/max_read_ahead_mb", "1024", 70, 50 },
};

/* Path of key k in simulated node i's tree (static buffer). */
static const char *
sim_path(const char *dir, int i, const struct simkey *k)
{
	static char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/nodes/sim%05d/root%s", dir, i + 1, k->file);
	return p;
}

/* Every key of every node holds want (1) or its original (0). */
static void
check_trees(const char *dir, int want)
{
	char orig[32];

	for (int i = 0; i < NSIM; i++)
		for (size_t k = 0; k < nitems(simkeys); k++) {
			const struct simkey *s = &simkeys[k];

			snprintf(orig, sizeof(orig), "%d", s->base + i % s->mod);
			const char *v = cu_readf("%s", sim_path(dir, i, s));

			ck_assert_msg(strcmp(v, want ? s->want : orig) == 0,
			    "sim%05d %s: '%s', expected '%s'", i + 1, s->file, v,
			    want ? s->want : orig);
		}
}

/* knobctl -c INV ARGS in this (host) namespace: its exit status, its
 * output (stdout and stderr) into *txt. */
static int
sim_ctl_out(char **txt, const char *inv, const char *args)
{
	int rc;

	/* generous deadlines: 200 handshakes share knob-sim's two threads, and
	 * this VM is loaded (the agents' own deadline is --handshake-timeout) */
	rc = cu_sh_out(txt, "%s/knobctl -c %s --connect-timeout 60 --timeout 120 %s </dev/null",
	    getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build", inv, args);
	fprintf(stderr, "check_sim: knobctl %s: exit %d\n", args, rc);
	return rc;
}

/* knobctl ARGS on the fleet of dir; 0 when it exited 0 and its output
 * holds expect. */
static int
sim_ctl(const char *dir, const char *args, const char *expect)
{
	char *txt = NULL, inv[PATH_MAX];
	int rc;

	snprintf(inv, sizeof(inv), "%s/cluster.xml", dir);
	rc = sim_ctl_out(&txt, inv, args);
	if (rc != 0 || strstr(txt, expect) == NULL) {
		fprintf(stderr, "check_sim: knobctl %s: exit %d, no '%s' in:\n%s\n", args, rc,
		    expect, txt);
		rc = -1;
	}
	free(txt);
	return rc;
}

/* Does knob-sim's log (arg) say every agent is ready? */
static int
sim_ready(void *arg)
{
	return cu_file_has(arg, "agents ready");
}

/* Has the child *(pid_t *)arg exited?  Its status goes to sim_status. */
static int sim_status = -1;
static int
exited(void *arg)
{
	return waitpid(*(pid_t *)arg, &sim_status, WNOHANG) == *(pid_t *)arg;
}

/* Start knob-sim with NSIM agents and args, its state in a fresh dir
 * (into dir); wait until every agent is ready.  Its pid. */
static pid_t
sim_start(char *dir, size_t len, const char *args)
{
	char cmd[1024], log[PATH_MAX];
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	pid_t sim;

	snprintf(dir, len, "/dev/shm/knob-check-sim.%d", (int)getpid());
	cu_rm_rf(dir);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(cmd, sizeof(cmd), "exec %s/knob-sim %d --dir %s %s --inventory %s/cluster.xml "
	    "2>%s/sim.log", bin, NSIM, dir, args, dir, dir);
	snprintf(log, sizeof(log), "%s/sim.log", dir);
	cu_write(log, 0644, "%s", "");	/* there before the shell opens it */
	sim = sh_bg(cmd);
	ck_assert_msg(cu_wait(sim_ready, log, 120) >= 0, "knob-sim not ready: %s", cu_slurp(log));
	return sim;
}

/* SIGTERM: knob-sim stops every agent and exits 0; its log into *log
 * (malloc'd) unless log is NULL; its dir goes. */
static void
sim_stop(pid_t sim, const char *dir, char **log)
{
	char path[PATH_MAX];

	kill(sim, SIGTERM);
	ck_assert_msg(cu_wait(exited, &sim, 60) >= 0, "knob-sim did not stop");
	ck_assert_msg(WIFEXITED(sim_status) && WEXITSTATUS(sim_status) == 0,
	    "knob-sim exit status %d", sim_status);
	snprintf(path, sizeof(path), "%s/sim.log", dir);
	if (log)
		*log = cu_slurp(path);
	cu_rm_rf(dir);
}

/* Non-default values in every tree, then ping, apply, verify, rollback
 * through knobctl: each ok on every node, the trees read back after
 * apply and after rollback. */
static void
fleet_cycle(const char *dir)
{
	char cmd[1024], prof[PATH_MAX], orig[32], expect[64];

	for (int i = 0; i < NSIM; i++)	/* non-default starting values */
		for (size_t k = 0; k < nitems(simkeys); k++) {
			snprintf(orig, sizeof(orig), "%d\n", simkeys[k].base + i % simkeys[k].mod);
			cu_write(sim_path(dir, i, &simkeys[k]), 0644, "%s", orig);
		}
	snprintf(prof, sizeof(prof), "%s/sim.xml", dir);
	cu_write(prof, 0644, "%s", "<?xml version=\"1.0\"?>\n<profile name=\"simtest\" summary=\"knob-sim test\">\n"
	    "  <blockdev device=\"sd*\" attr=\"read_ahead_kb\" value=\"4096\"/>\n"
	    "  <blockdev device=\"nvme*\" attr=\"nr_requests\" value=\"256\"/>\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"40\"/>\n"
	    "  <sysctl key=\"net.core.rmem_max\" value=\"16777216\"/>\n"
	    "  <lustre key=\"osc.*.max_rpcs_in_flight\" value=\"32\"/>\n"
	    "  <lustre key=\"llite.*.max_read_ahead_mb\" value=\"1024\"/>\n</profile>\n");
	snprintf(expect, sizeof(expect), "%d ok", NSIM);
	ck_assert_int_eq(sim_ctl(dir, "ping -w @sim", expect), 0);
	snprintf(cmd, sizeof(cmd), "apply %s -w @sim", prof);
	snprintf(expect, sizeof(expect), "%d changed", NSIM);
	ck_assert_int_eq(sim_ctl(dir, cmd, expect), 0);
	check_trees(dir, 1);
	snprintf(expect, sizeof(expect), "%d ok", NSIM);
	ck_assert_int_eq(sim_ctl(dir, "verify -w @sim", expect), 0);
	snprintf(expect, sizeof(expect), "%d changed", NSIM);
	ck_assert_int_eq(sim_ctl(dir, "rollback -w @sim", expect), 0);
	check_trees(dir, 0);
	/* a health sweep of the simulated fleet: every node ok (before, the
	 * fake tree had no /proc/loadavg: "load fail" on every node) */
	snprintf(expect, sizeof(expect), "%d ok", NSIM);
	ck_assert_int_eq(sim_ctl(dir, "sweep -w @sim", expect), 0);
}

static int dial(const char *addr, unsigned port);

/* A connection to addr:port that speaks no TLS: the agent's handshake
 * fails (counted for its summary) and it closes; read to that end. */
static void
junk_handshake(const char *addr, unsigned port)
{
	char buf[256];
	int fd = dial(addr, port);

	ck_assert_int_eq(write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

/* The log of a knob-sim (path arg->log) from offset arg->off on. */
struct log_from {
	const char *log;
	size_t off;
};

/* Has sim00001 summarised a failed handshake since arg's offset? */
static int
summarised(void *arg)
{
	const struct log_from *lf = arg;
	char *txt = cu_slurp(lf->log);
	int hit = strlen(txt) > lf->off && strstr(txt + lf->off, "sim00001: ") &&
	    strstr(txt + lf->off, "handshake(s) failed");

	free(txt);
	return hit;
}

/* The failed handshakes of sim00001 the log's lines in txt count. */
static int
failed_logged(const char *txt)
{
	int n = 0;

	for (const char *l = txt; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *end = strchr(l, '\n'), *p = strstr(l, " handshake(s) failed"), *q;

		if (p == NULL || (end && p > end) || !strstr(l, "sim00001"))
			continue;
		for (q = p; q > l && q[-1] >= '0' && q[-1] <= '9'; q--)
			;
		n += atoi(q);
	}
	return n;
}

START_TEST(test_sim_fleet)
{
	char dir[128], args[128], logp[PATH_MAX], *txt = NULL;
	unsigned port = 18400 + (unsigned)getpid() % 100;
	struct log_from lf = { logp, 0 };
	pid_t sim;

	snprintf(args, sizeof(args), "--base " SIM_BASE " --port %u", port);
	sim = sim_start(dir, sizeof(dir), args);
	fleet_cycle(dir);

	/* a failed handshake, summarised at once; a second right after that
	 * summary waits a second for the next one, and SIGTERM comes first:
	 * the line at shutdown ("stopping: not yet summarised ...") counts it
	 * (it went unlogged) */
	snprintf(logp, sizeof(logp), "%s/sim.log", dir);
	txt = cu_slurp(logp);
	lf.off = strlen(txt);
	free(txt);
	junk_handshake(SIM_BASE, port);
	ck_assert_msg(cu_wait(summarised, &lf, 30) >= 0, "no summary: %s", cu_slurp(logp));
	junk_handshake(SIM_BASE, port);
	sim_stop(sim, dir, &txt);
	fprintf(stderr, "check_sim: after the fleet: %s", txt + lf.off);
	ck_assert_msg(failed_logged(txt + lf.off) == 2, "2 failed handshakes, not all logged: %s",
	    txt + lf.off);
	free(txt);
}
END_TEST

static pid_t held_sim, held_mux;
static char held_dir[128];

/* Has the holder (its log, arg) said it listens? */
static int
mux_listening(void *arg)
{
	return cu_file_has(arg, "holding connections on");
}

/* Times needle occurs in hay. */
static int
count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* The fleet through one holder: every command's nodes on one channel. */
START_TEST(test_sim_held)
{
	char args[128], inv[PATH_MAX], log[PATH_MAX], cmd[1024], expect[64], *txt = NULL;
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";

	snprintf(args, sizeof(args), "--base " SIM_BASE " --port %u",
	    18500 + (unsigned)getpid() % 100);
	held_sim = sim_start(held_dir, sizeof(held_dir), args);
	snprintf(inv, sizeof(inv), "%s/cluster.xml", held_dir);
	snprintf(log, sizeof(log), "%s/mux.log", held_dir);
	cu_write(log, 0644, "%s", "");
	snprintf(cmd, sizeof(cmd), "exec %s/knobctl -c %s --connect-timeout 60 mux --persist 300 "
	    "2>%s", bin, inv, log);
	held_mux = sh_bg(cmd);
	ck_assert_msg(cu_wait(mux_listening, log, 30) >= 0, "no holder: %s", cu_slurp(log));
	snprintf(expect, sizeof(expect), "%d ok", NSIM);
	ck_assert_int_eq(sim_ctl(held_dir, "ping -w @sim", expect), 0);	/* opens the links */
	ck_assert_int_eq(sim_ctl_out(&txt, inv, "--log-level debug facts -w @sim"), 0);
	ck_assert_msg(strstr(txt, expect) != NULL, "%s", txt);
	ck_assert_int_eq(count_of(txt, "via the connection holder (reused link)"), NSIM);
	free(txt);
	fleet_cycle(held_dir);
	ck_assert_int_eq(sim_ctl_out(&txt, inv, "mux --status"), 0);
	snprintf(expect, sizeof(expect), "links %d channels 0 nodes 0 pending 0 opened %d ", NSIM,
	    NSIM);
	ck_assert_msg(strstr(txt, expect) != NULL, "%s", txt);
	free(txt);
	ck_assert_int_eq(sim_ctl_out(&txt, inv, "mux --stop"), 0);
	free(txt);
	ck_assert_int_eq(cu_reap(held_mux), 0);
	held_mux = 0;
	sim_stop(held_sim, held_dir, NULL);
	held_sim = 0;
}
END_TEST

/* What test_sim_held left running when it failed. */
static void
held_teardown(void)
{
	if (held_mux > 0) {
		kill(held_mux, SIGTERM);
		cu_reap(held_mux);
		held_mux = 0;
	}
	if (held_sim > 0) {
		kill(held_sim, SIGTERM);
		cu_reap(held_sim);
		held_sim = 0;
		cu_rm_rf(held_dir);
	}
}

/* A blocking TCP connection to addr:port from this process, with a 30 s
 * receive timeout. */
static int
dial(const char *addr, unsigned port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 30 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(inet_pton(AF_INET, addr, &sa.sin_addr), 1);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	return fd;
}

/* Does the process hold exactly one socket (the listener)? */
static int
one_socket(void *arg)
{
	return cu_count_sockets(*(pid_t *)arg) == 1;
}

START_TEST(test_sim_sni)
{
	char dir[128], args[256], inv[PATH_MAX], odd[PATH_MAX], *txt = NULL, *doc, buf[256];
	unsigned port = 18900 + (unsigned)getpid() % 100;
	int idle[NJUNK], junk[NJUNK];
	ssize_t n;
	pid_t sim;

	/* blocks of 100 names: simbogus is answered by sim00150, whose
	 * certificate names sim00101-sim00200 only */
	snprintf(args, sizeof(args), "--sni --block 100 --alias simbogus=sim00150 "
	    "--base " SNI_BASE " --port %u", port);
	sim = sim_start(dir, sizeof(dir), args);
	snprintf(inv, sizeof(inv), "%s/cluster.xml", dir);
	txt = cu_slurp(inv);
	ck_assert_msg(strstr(txt, "<node name=\"sim00200\" addr=\"" SNI_BASE "\"/>") != NULL,
	    "every node at the one listener: %s", txt);
	fleet_cycle(dir);

	/* the listener keeps serving while connections that say nothing and
	 * connections that speak no TLS wait on it; the latter are closed */
	for (int i = 0; i < NJUNK; i++) {
		idle[i] = dial(SNI_BASE, port);
		junk[i] = dial(SNI_BASE, port);
		ck_assert_int_eq(write(junk[i], "GET / HTTP/1.0\r\n\r\n", 18), 18);
	}
	snprintf(buf, sizeof(buf), "%d ok", NSIM);
	ck_assert_int_eq(sim_ctl(dir, "ping -w @sim", buf), 0);
	for (int i = 0; i < NJUNK; i++) {
		while ((n = read(junk[i], buf, sizeof(buf))) > 0)
			;	/* an alert, perhaps, then the end */
		ck_assert_msg(n == 0 || errno == ECONNRESET, "junk connection %d not closed: %s", i,
		    strerror(errno));
		close(junk[i]);
		close(idle[i]);
	}
	ck_assert_msg(cu_wait(one_socket, &sim, 60) >= 0, "knob-sim holds %d sockets, not 1",
	    cu_count_sockets(sim));

	/* the fleet plus a name nobody answers and a mis-pointed one */
	doc = cu_slurp(inv);
	*strstr(doc, "</cluster>") = '\0';
	snprintf(odd, sizeof(odd), "%s/odd.xml", dir);
	cu_write(odd, 0644, "%s  <node name=\"nosuch\" addr=\"" SNI_BASE "\"/>\n"
	    "  <node name=\"simbogus\" addr=\"" SNI_BASE "\"/>\n</cluster>\n", doc);
	free(doc);
	free(txt);
	ck_assert_int_eq(sim_ctl_out(&txt, odd, "ping -w nosuch,simbogus,sim00150"), 1);
	ck_assert_msg(strstr(txt, "nosuch: unreachable: TLS handshake:") &&
	    strstr(txt, "unrecognized name"), "%s", txt);
	ck_assert_msg(strstr(txt, "simbogus: auth-failed:") && strstr(txt, "hostname mismatch"),
	    "%s", txt);
	ck_assert_msg(strstr(txt, "sim00150: pong"), "%s", txt);

	/* with a ticket sim00150's agent accepts, it resumes: the saved
	 * certificate still does not name simbogus */
	snprintf(inv, sizeof(inv), "%s/ca", dir);
	tku_swap_ticket(odd, inv, "sim00150", "simbogus");
	free(txt);
	ck_assert_int_eq(sim_ctl_out(&txt, odd, "--log-level debug ping -w simbogus"), 1);
	ck_assert_msg(strstr(txt, "simbogus: TLS session resumed") &&
	    strstr(txt, "simbogus: auth-failed:") && strstr(txt, "hostname mismatch"), "%s", txt);
	free(txt);
	sim_stop(sim, dir, NULL);
}
END_TEST

#define FINI_WAIT_S "2"	/* knobd's shutdown wait here (AGENT_FINI_WAIT_S: 10) */

/* Shutdown with a work item that does not end: knobd (SIGTERM during an
 * apply paused for a minute by the test hook) waits its deadline for it
 * (AGENT_FINI_WAIT_S; FINI_WAIT_S here, $KNOB_TEST_FINI_WAIT_S), says so,
 * and exits; nothing after that deadline waits without a limit.  The
 * journal already held the originals, so the restarted agent recovers the
 * transaction and the value is the one from before. */
START_TEST(test_fini_deadline)
{
	char root[PATH_MAX], prof[PATH_MAX], path[PATH_MAX + 64], *cmd;
	pid_t ctl, agent;
	uint64_t t0;
	double took;

	setenv("KNOB_TEST_FINI_WAIT_S", FINI_WAIT_S, 1);
	start_node(root, sizeof(root));
	unsetenv("KNOB_TEST_FINI_WAIT_S");
	snprintf(path, sizeof(path), "%s/proc/sys/vm/dirty_ratio", root);
	snprintf(prof, sizeof(prof), "%s/fini.xml", h.tmp);
	cu_write(prof, 0644, "%s", "<?xml version=\"1.0\"?>\n<profile name=\"fini\" summary=\"t\">\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"33\"/>\n</profile>\n");
	cmd = xasprintf("ip netns exec %s %s/knobctl -c %s apply --test-pause-ms 60000 "
	    "--test-pause-at 'after journaling' %s -w node01 >/dev/null 2>&1 </dev/null",
	    h.ctl_ns, h.bin, h.cluster, prof);
	ctl = sh_bg(cmd);
	free(cmd);
	ck_assert_int_eq(harness_wait_log(&h, 0, "test hook: pausing", 60), 0);
	agent = h.node[0].pid;
	t0 = now_mono_ns();
	kill(agent, SIGTERM);
	ck_assert_msg(cu_wait(exited, &agent, 40) >= 0, "knobd did not exit within 40 s");
	h.node[0].pid = 0;
	took = (double)(now_mono_ns() - t0) / 1e9;
	fprintf(stderr, "check_sim: knobd exited %.1f s after SIGTERM with a stuck work item\n",
	    took);
	ck_assert_msg(took >= atoi(FINI_WAIT_S) - 0.5, "exited after %.1f s: did not wait", took);
	ck_assert(harness_log_has(&h, 0, "work item(s) still running after " FINI_WAIT_S " s"));
	kill(ctl, SIGKILL);
	cu_reap(ctl);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);	/* recovers the transaction */
	ck_assert_str_eq(cu_readf("%s", path), "17");
}
END_TEST

/* A server name that carries a newline and a journald priority prefix
 * ("evil\n<0>knob-sim: FORGED LINE") used to reach knob-sim's log as a
 * line of its own at priority 0.  It is refused, and logged escaped on
 * the refusal's own line. */
START_TEST(test_sni_name_escaped)
{
	char dir[128], args[128], log[PATH_MAX], *txt;
	unsigned port = 18900 + (unsigned)getpid() % 100;
	pid_t sim;

	snprintf(args, sizeof(args), "--sni --base " SNI_BASE " --port %u", port);
	sim = sim_start(dir, sizeof(dir), args);
	ck_assert_int_ne(cu_sh_out(&txt, "openssl s_client -connect " SNI_BASE ":%u -servername "
	    "\"$(printf 'evil\\n<0>knob-sim: FORGED LINE')\" </dev/null", port), 0);
	free(txt);
	snprintf(log, sizeof(log), "%s/sim.log", dir);
	txt = cu_slurp(log);
	ck_assert_msg(strstr(txt, "SNI: no simulated node named 'evil\\x0a<0>knob-sim: FORGED "
	    "LINE'; refused\n") != NULL, "%s", txt);
	ck_assert_msg(strstr(txt, "\n<0>") == NULL, "a forged line: %s", txt);
	free(txt);
	sim_stop(sim, dir, NULL);
}
END_TEST

/* The ClientHello of a TLS client (the controller's certificate in
 * dir/ca, server name sim00001), made over memory BIOs; its bytes
 * (malloc'd) into *hello, their number returned; the client in *out, its
 * context in *ctxp. */
static size_t
client_hello(const char *dir, SSL_CTX **ctxp, SSL **out, unsigned char **hello)
{
	char ca[PATH_MAX], cert[PATH_MAX], key[PATH_MAX], err[512], alpn[14 * 70 + 1];
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	char *data;
	long n;

	snprintf(ca, sizeof(ca), "%s/ca/ca.crt", dir);
	snprintf(cert, sizeof(cert), "%s/ca/controller.crt", dir);
	snprintf(key, sizeof(key), "%s/ca/controller.key", dir);
	ck_assert_msg((*ctxp = tls_ctx_new(0, ca, cert, key, err, sizeof(err))) != NULL, "%s",
	    err);
	ck_assert_ptr_nonnull(*out = SSL_new(*ctxp));
	/* 70 ALPN names (the agent ignores them): a ClientHello of 1.2 KB, as
	 * big as browsers' */
	for (int i = 0; i < 70; i++)
		snprintf(alpn + 14 * i, sizeof(alpn) - 14 * (size_t)i, "%cknob-pad-%04d", 13, i);
	ck_assert_int_eq(SSL_set_alpn_protos(*out, (unsigned char *)alpn, 14 * 70), 0);
	SSL_set_bio(*out, rb, wb);
	ck_assert_int_eq(SSL_set_tlsext_host_name(*out, "sim00001"), 1);
	ck_assert_int_eq(SSL_connect(*out), -1);	/* waits for the ServerHello */
	ck_assert_int_gt(n = BIO_get_mem_data(wb, &data), 0);
	*hello = xmalloc((size_t)n);
	memcpy(*hello, data, (size_t)n);
	return (size_t)n;
}

/* A ClientHello sent to the SNI listener a byte at a time (a slow or
 * hostile client) is still served: the handshake completes on the agent
 * it names and a ping is answered.  knob-sim parses it once, when its
 * record is whole (its debug log says how many times); it used to peek
 * and parse everything received so far for each byte. */
START_TEST(test_sni_dribbled_hello)
{
	char dir[128], args[160], log[PATH_MAX], *txt, *line;
	unsigned port = 18900 + (unsigned)getpid() % 100;
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Ping ping = KNOB__PING__INIT;
	const struct timespec gap = { .tv_nsec = 500000 };	/* the dribble's pace */
	unsigned char *hello;
	SSL_CTX *ctx;
	struct conn c;
	size_t n;
	SSL *ssl;
	int fd, one = 1, times = -1;
	pid_t sim;

	snprintf(args, sizeof(args), "--sni --base " SNI_BASE " --port %u --log-level debug",
	    port);
	sim = sim_start(dir, sizeof(dir), args);
	n = client_hello(dir, &ctx, &ssl, &hello);
	fd = dial(SNI_BASE, port);
	ck_assert_int_eq(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(write(fd, hello + i, 1), 1);
		nanosleep(&gap, NULL);
	}
	free(hello);
	ck_assert_int_eq(SSL_set_fd(ssl, fd), 1);	/* the rest over the socket */
	ck_assert_msg(SSL_connect(ssl) == 1, "handshake after a dribbled ClientHello failed");
	conn_init(&c, fd, fd, ssl);
	env.id = 1;
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	ck_assert_int_eq(conn_send_sync(&c, &env, 10000), 0);
	ck_assert_int_eq(conn_recv_sync(&c, &got, 10000), 1);
	ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_PONG);
	ck_assert_str_eq(got->pong->node, "sim00001");
	knob__envelope__free_unpacked(got, NULL);
	conn_reset(&c);	/* frees ssl */
	close(fd);
	SSL_CTX_free(ctx);
	snprintf(log, sizeof(log), "%s/sim.log", dir);
	txt = cu_slurp(log);
	if ((line = strstr(txt, "SNI: connection for sim00001: ClientHello of ")) != NULL)
		sscanf(strstr(line, " parsed ") ? strstr(line, " parsed ") : "", " parsed %d",
		    &times);
	printf("a ClientHello of %zu bytes sent a byte at a time: parsed %d time(s)\n", n, times);
	ck_assert_msg(times == 1, "ClientHello of %zu bytes parsed %d times", n, times);
	free(txt);
	sim_stop(sim, dir, NULL);
}
END_TEST

/* The pool test's namespaces and knobd go even when it fails. */
static void
pool_teardown(void)
{
	harness_stop(&h);
}

static Suite *
sim_suite(void)
{
	Suite *s = suite_create("sim");
	TCase *pool = cu_tcase("pool", NULL, pool_teardown, 180);
	TCase *fleet = cu_tcase("fleet", NULL, NULL, 240);
	TCase *held = cu_tcase("held", NULL, held_teardown, 240);
	TCase *sni = cu_tcase("sni", NULL, NULL, 240);
	TCase *fini = cu_tcase("fini", NULL, pool_teardown, 120);

	tcase_add_test(pool, test_pool_bounds_threads);
	tcase_add_test(fleet, test_sim_fleet);
	suite_add_tcase(s, pool);
	suite_add_tcase(s, fleet);
	tcase_add_test(held, test_sim_held);
	suite_add_tcase(s, held);
	tcase_add_test(sni, test_sim_sni);
	suite_add_tcase(s, sni);
	tcase_add_test(fini, test_fini_deadline);
	suite_add_tcase(s, fini);
	sni = cu_tcase("sni_log", NULL, NULL, 240);
	tcase_add_test(sni, test_sni_name_escaped);
	suite_add_tcase(s, sni);
	sni = cu_tcase("sni_dribble", NULL, NULL, 240);
	tcase_add_test(sni, test_sni_dribbled_hello);
	suite_add_tcase(s, sni);
	return s;
}

int
main(void)
{
	return cu_run(sim_suite());
}
