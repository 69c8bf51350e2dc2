/* The connection holder (knobctl mux) with real knobd agents in network
 * namespaces and the real knobctl: whether a node went through a kept
 * link is read from knobctl's debug line ("NODE: via the connection
 * holder (reused link)" / "(new link)"), and whether the agent saw a new
 * TLS connection from its log ("connected from").
 * - a second ping reuses every link: no agent sees a new connection;
 * - apply, verify and rollback through the holder, from non-default
 *   originals: the files hold the profile, then the originals again;
 * - a stopped agent is unreachable (the same text as a direct dial)
 *   while the others answer; a killed and restarted agent gets a new
 *   link (the dead one is noticed), not an error;
 * - a command that times out on a frozen agent leaves no link behind:
 *   the next command dials that node anew and gets its own answer;
 * - the holder at its descriptor limit: a node it cannot dial fails with
 *   that reason; a command it cannot check the CA for dials itself, and
 *   the holder serves on once it has descriptors again;
 * - a DONE while the node's request is still at the agent closes the link:
 *   the next channel gets a new link and its own reply, not that one;
 * - a malformed request or frame closes that channel only: the holder
 *   keeps serving; a command's nodes share one channel, the holder's
 *   answers to many nodes come in one read; --no-mux dials directly; a socket that is not private
 *   is not used; mux --stop closes the links and removes the socket;
 * - the holder SIGKILLed while a command waits on a frozen agent: that
 *   node is lost (exit 1), the others answered; the next command dials
 *   itself past the dead holder's socket, and a new holder takes it over;
 * - a second holder started beside a running one (stopped, silent) exits 1
 *   at once naming its pid; the first serves on, and leaves no socket;
 * - 200 channels that never send a request: commands are served, and the
 *   holder closes the silent ones after its time for a first line (4 s,
 *   a test knob; 10 s in use);
 * - knobctl against the test standing in for the holder: its three OPENs
 *   come in one write, the requests for the two nodes answered OK in
 *   another; a FAIL is the node's status and text, a LOST is "failed:
 *   connection lost" with the holder's reason;
 * - a holder that answers the trust question and then nothing: the nodes
 *   are failed with the holder as the reason, not as unreachable;
 * - a holder that goes right after answering it: the command dials itself;
 * - a new CRL: the next command is told the holder is stale and dials
 *   itself (full handshakes), and the holder closes its links and exits;
 * - an agent's certificate, or the controller's, expires while the holder
 *   holds its links: the next ping through it is refused as a direct one
 *   is (auth-failed, the same words), and so is a direct one that has a
 *   TLS ticket of the node;
 * - the holder saves its own links' tickets (a fleet driven through it
 *   alone): while another command holds the cache's lock it serves on and
 *   saves later, keeping that command's tickets; a holder restarted after
 *   a SIGKILL resumes every link; a save that fails (the cache's file
 *   system full: a tmpfs the test fills) is kept, warned once and tried
 *   again, and its tickets land once space is freed, with no new ticket;
 *   a save that never ends (a FIFO) holds the holder's exit for its wait
 *   (1 s here, 10 s in use) at most, which names the nodes not saved;
 * - a restarted holder resumes its new links from the ticket cache, and a
 *   resumed link still stops at its agent's certificate's expiry (the
 *   cache keeps the notAfter); a direct dial offers no ticket past it;
 * - a long dial (a frozen agent) does not hold the other commands' links,
 *   and a node waiting for a link takes one as soon as it goes idle;
 * - nor a node alive dialled beside it: that node's answer comes at once,
 *   the frozen one is unreachable after its connect timeout; SIGTERM
 *   during that dial ends the holder at once, not after the dial;
 * - every one of the holder's 32 dials out: a node that needs a new link
 *   is unreachable with that reason, the command's kept links answer;
 * - SIGTERM while a dial looks a name up (a silent name server) ends the
 *   holder at once, not after the lookup. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/sockios.h>

#include "ca.h"
#include "harness.h"
#include "knobctl.h"
#include "testutil.h"
#include "tktutil.h"
#include "util.h"

#define NNODES 3

static struct harness h;
static pid_t mux_pid;
static char mux_err[PATH_MAX], sock[PATH_MAX];
static char small_fs[PATH_MAX];	/* a tmpfs a test mounted, "" none */

/* Has the holder said it listens? */
static int
mux_ready(void *arg)
{
	(void)arg;
	return cu_file_has(mux_err, "holding connections on");
}

/* Start the holder in the controller's namespace (its log mux_err, new,
 * at log level) and wait until it listens. */
static void
mux_start_at(const char *level)
{
	mux_pid = harness_mux_start(&h, mux_err, "--log-level %s mux --persist 300", level);
	ck_assert_msg(mux_pid > 0, "knobctl mux did not start: %s", cu_slurp(mux_err));
}

/* The holder at log level info. */
static void
mux_start(void)
{
	mux_start_at("info");
}

/* In the runner: the namespaces every test's harness uses (made once, the
 * most of a harness's start; its agents and holder are each test's own). */
static void
net_setup(void)
{
	ck_assert_int_eq(harness_net_share(NNODES), 0);
}

/* Agents with a fake /proc/sys whose vm.dirty_ratio is 17 (not the
 * kernel's default), and a holder in the controller's namespace. */
static void
setup(void)
{
	ck_assert_int_eq(harness_start(&h, NNODES, 0), 0);
	for (int i = 0; i < NNODES; i++) {
		snprintf(h.node[i].sysroot, sizeof(h.node[i].sysroot), "%s/root%d", h.tmp, i);
		cu_write_at(h.node[i].sysroot, "/proc/sys/vm/dirty_ratio", 0644, "%d\n", 17 + i);
		ck_assert_int_eq(harness_agent_start(&h, i), 0);
	}
	snprintf(mux_err, sizeof(mux_err), "%s/mux.err", h.tmp);
	snprintf(sock, sizeof(sock), "%s/knob-mux.sock", h.tmp);
	mux_start();
}

static void
teardown(void)
{
	harness_mux_stop(&mux_pid);
	if (small_fs[0] != '\0') {
		umount2(small_fs, MNT_DETACH);
		small_fs[0] = '\0';
	}
	harness_stop(&h);
}

/* knobctl --log-level debug ARGS; stdout, stderr kept; exit status. */
#define ctl(out, err, ...) harness_knobctl_debug(&h, out, err, __VA_ARGS__)

/* How node went: 1 reused link, 0 new link, -1 not through the holder. */
static int
via(const char *err, const char *node)
{
	char r[128], n[128];

	snprintf(r, sizeof(r), "%s: via the connection holder (reused link)", node);
	snprintf(n, sizeof(n), "%s: via the connection holder (new link)", node);
	return err && strstr(err, r) ? 1 : err && strstr(err, n) ? 0 : -1;
}

/* TLS connections agent i has accepted so far (its log). */
static int
accepted(int i)
{
	char *t = cu_slurp(h.node[i].log), *p;
	int n = 0;

	for (p = t; p && (p = strstr(p, "connected from")) != NULL; p++)
		n++;
	free(t);
	return n;
}

START_TEST(reuse_links)
{
	char *out = NULL, *err = NULL;
	int before[NNODES];

	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_ptr_nonnull(strstr(out, "3 ok"));
	for (int i = 0; i < NNODES; i++) {
		ck_assert_int_eq(via(err, h.node[i].name), 0);
		before[i] = accepted(i);
		ck_assert_int_ge(before[i], 1);
	}
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_ptr_nonnull(strstr(out, "3 ok"));
	ck_assert_int_eq(ctl(&out, &err, "--json facts -a"), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"node01\""));
	for (int i = 0; i < NNODES; i++) {
		ck_assert_int_eq(via(err, h.node[i].name), 1);
		ck_assert_int_eq(accepted(i), before[i]);	/* no new connection */
	}
	ck_assert_int_eq(ctl(&out, &err, "mux --status"), 0);
	ck_assert_ptr_nonnull(strstr(out, "links 3 "));
	ck_assert_ptr_nonnull(strstr(out, "opened 3 reused 6 "));
	free(out);
	free(err);
}
END_TEST

/* An agent that answers "busy" (node02's knobd --test-hooks with
 * $KNOB_TEST_BUSY_WORK=2: its first two requests are refused, EAGAIN) to
 * a command through the holder: the request is sent again after 100, then
 * 200 ms over the same held link (the agent sees one connection), and the
 * third is answered: exit 0.  Without the retry the busy answer is the
 * node's (exit 1). */
START_TEST(busy_retried_via_holder)
{
	char *out = NULL, *err = NULL;
	int before;

	harness_agent_stop(&h, 1, SIGTERM);
	snprintf(h.node[1].extra_args, sizeof(h.node[1].extra_args), "--test-hooks");
	setenv("KNOB_TEST_BUSY_WORK", "2", 1);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	unsetenv("KNOB_TEST_BUSY_WORK");
	before = accepted(1);
	ck_assert_int_eq(ctl(&out, &err, "facts -w node02"), 0);
	ck_assert_int_eq(via(err, "node02"), 0);
	ck_assert_msg(strstr(err, "node02: node02: agent busy (test hook); try again; sending "
	    "again in 100 ms (1 of 5)") && strstr(err, "sending again in 200 ms (2 of 5)") &&
	    !strstr(err, "(3 of 5)"), "%s", err);
	ck_assert_int_eq(accepted(1), before + 1);
	ck_assert_int_eq(harness_sh("grep -c 'refused: test hook' %s | grep -qx 2", h.node[1].log), 0);
	free(out);
	free(err);
}
END_TEST

START_TEST(tune_roundtrip)
{
	char *out = NULL, *err = NULL, prof[PATH_MAX + 16];

	snprintf(prof, sizeof(prof), "%s/mux.xml", h.tmp);
	cu_write(prof, 0644, "%s", "<?xml version=\"1.0\"?>\n<profile name=\"mux\" summary=\"mux test\">\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"33\"/>\n</profile>\n");
	ck_assert_int_eq(ctl(&out, &err, "apply %s -a", prof), 0);
	for (int i = 0; i < NNODES; i++) {
		ck_assert_int_eq(via(err, h.node[i].name), 0);
		ck_assert_str_eq(cu_readf("%s/proc/sys/vm/dirty_ratio", h.node[i].sysroot), "33");
	}
	ck_assert_int_eq(ctl(&out, &err, "verify -a"), 0);
	ck_assert_int_eq(via(err, "node02"), 1);
	/* drift on one node: verify says so, with exit 1, through the holder */
	cu_write_at(h.node[1].sysroot, "/proc/sys/vm/dirty_ratio", 0644, "%s", "25\n");
	ck_assert_int_eq(ctl(&out, &err, "verify -a"), 1);
	ck_assert_ptr_nonnull(strstr(out, "drift"));
	/* a value changed since apply is left alone by rollback: put it back */
	cu_write_at(h.node[1].sysroot, "/proc/sys/vm/dirty_ratio", 0644, "%s", "33\n");
	ck_assert_int_eq(ctl(&out, &err, "rollback -a"), 0);
	for (int i = 0; i < NNODES; i++) {
		char want[8];

		ck_assert_int_eq(via(err, h.node[i].name), 1);
		snprintf(want, sizeof(want), "%d", 17 + i);
		ck_assert_str_eq(cu_readf("%s/proc/sys/vm/dirty_ratio", h.node[i].sysroot), want);
	}
	free(out);
	free(err);
}
END_TEST

START_TEST(unreachable_and_restart)
{
	char *out = NULL, *err = NULL;

	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	harness_agent_stop(&h, 1, SIGTERM);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 1);
	ck_assert_ptr_nonnull(strstr(out, "node02: unreachable: connection refused"));
	ck_assert_ptr_nonnull(strstr(out, "2 ok, 1 unreachable"));
	ck_assert_int_eq(via(err, "node01"), 1);
	/* killed and restarted: its old link is dead, a new one is made */
	harness_agent_stop(&h, 0, SIGKILL);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_ptr_nonnull(strstr(out, "3 ok"));
	ck_assert_int_eq(via(err, "node01"), 0);
	ck_assert_int_eq(via(err, "node02"), 0);
	ck_assert_int_eq(via(err, "node03"), 1);
	free(out);
	free(err);
}
END_TEST

START_TEST(timeout_drops_link)
{
	char *out = NULL, *err = NULL;

	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	kill(h.node[2].pid, SIGSTOP);
	ck_assert_int_eq(ctl(&out, &err, "--timeout 1 ping -a"), 1);
	kill(h.node[2].pid, SIGCONT);
	ck_assert_ptr_nonnull(strstr(out, "node03: timeout: no reply within 1.0s"));
	/* node03's link saw a request without its reply: it is gone, and the
	 * late pong can not reach this command */
	ck_assert_int_eq(ctl(&out, &err, "--json ping -a"), 0);
	ck_assert_int_eq(via(err, "node03"), 0);
	ck_assert_int_eq(via(err, "node01"), 1);
	ck_assert_ptr_nonnull(strstr(out, "\"ok\": 3"));
	free(out);
	free(err);
}
END_TEST

/* A unix connection to the holder (this process: a file, no namespace). */
static int
mux_dial(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Bytes until the holder closes fd (at most len - 1), NUL-terminated. */
static ssize_t
read_all(int fd, char *buf, size_t len)
{
	struct timeval tv = { .tv_sec = 10 };
	size_t got = 0;
	ssize_t r = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got + 1 < len && (r = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = '\0';
	return r < 0 ? -1 : (ssize_t)got;
}

/* Messages queued for one write (hub_flush): the holder's channel
 * protocol (controller/fo_mux.c). */
static uint8_t hub_out[4096];
static size_t hub_len;

/* Queue message type for node id with payload p. */
static void
hub_msg(int fd, char type, uint32_t id, const void *p, size_t len)
{
	uint8_t *b = hub_out + hub_len;
	size_t n = 5 + len;

	(void)fd;
	ck_assert_uint_le(hub_len + 4 + n, sizeof(hub_out));
	b[0] = (uint8_t)(n >> 24); b[1] = (uint8_t)(n >> 16); b[2] = (uint8_t)(n >> 8);
	b[3] = (uint8_t)n;
	b[4] = (uint8_t)type;
	b[5] = (uint8_t)(id >> 24); b[6] = (uint8_t)(id >> 16); b[7] = (uint8_t)(id >> 8);
	b[8] = (uint8_t)id;
	memcpy(b + 9, p, len);
	hub_len += 4 + n;
}

/* Write the queued messages in one write(2). 0 or -1. */
static int
hub_flush(int fd)
{
	ssize_t r = write(fd, hub_out, hub_len);
	int ok = r == (ssize_t)hub_len;

	hub_len = 0;
	return ok ? 0 : -1;
}

/* Exactly n bytes from fd (10 s at most). 0 or -1. */
static int
read_n(int fd, void *buf, size_t n)
{
	struct timeval tv = { .tv_sec = 10 };
	size_t got = 0;
	ssize_t r;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < n && (r = read(fd, (char *)buf + got, n - got)) > 0)
		got += (size_t)r;
	return got == n ? 0 : -1;
}

/* One message from the holder: its type, id and payload (NUL-terminated)
 * into buf; the payload's length, or -1. */
static ssize_t
hub_read(int fd, char *type, uint32_t *id, char *buf, size_t len)
{
	uint8_t t[9];
	size_t n;

	if (read_n(fd, t, 9) < 0)
		return -1;
	n = ((size_t)t[0] << 24 | (size_t)t[1] << 16 | (size_t)t[2] << 8 | t[3]) - 5;
	if (n >= len || read_n(fd, buf, n) < 0)
		return -1;
	buf[n] = '\0';
	*type = (char)t[4];
	*id = (uint32_t)t[5] << 24 | (uint32_t)t[6] << 16 | (uint32_t)t[7] << 8 | t[8];
	return (ssize_t)n;
}

/* One line (without its newline) from fd, read byte by byte. 0 or -1. */
static int
read_all_line(int fd, char *buf, size_t len)
{
	size_t k = 0;

	while (k + 1 < len && read_n(fd, buf + k, 1) == 0 && buf[k] != '\n')
		k++;
	if (k + 1 >= len || buf[k] != '\n')
		return -1;
	buf[k] = '\0';
	return 0;
}

START_TEST(bad_input_and_private_socket)
{
	char *out = NULL, *err = NULL, buf[512], line[256];
	struct stat st;
	int fd, avail;

	ck_assert_int_eq(stat(sock, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(st.st_uid, geteuid());
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	/* a request that is not one: closed, nothing answered */
	fd = mux_dial();
	ck_assert_int_eq(write(fd, "hello there\n", 12), 12);
	ck_assert_int_eq(read_all(fd, buf, sizeof(buf)), 0);
	close(fd);
	/* one channel asks for all three nodes in one write: the three
	 * answers come back together; then a malformed frame for node01
	 * closes the channel, and the links it had busy go */
	fd = mux_dial();
	ck_assert_int_eq(write(fd, "chan\n", 5), 5);
	for (int i = 0; i < NNODES; i++) {
		snprintf(line, sizeof(line), "%s %s 7420 5", h.node[i].name, h.node[i].addr);
		hub_msg(fd, 'O', (uint32_t)i, line, strlen(line));
	}
	ck_assert_int_eq(hub_flush(fd), 0);
	/* one write from the holder: the three OKs (9 + 6 bytes each) are
	 * there together as soon as the channel is readable */
	ck_assert_int_eq(poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 10000), 1);
	ck_assert_int_eq(ioctl(fd, FIONREAD, &avail), 0);
	ck_assert_int_eq(avail, NNODES * 15);
	for (int i = 0; i < NNODES; i++) {
		uint32_t id;
		char type;

		ck_assert_int_eq(hub_read(fd, &type, &id, buf, sizeof(buf)), 6);
		ck_assert_int_eq(type, 'K');
		ck_assert_str_eq(buf, "reused");
		ck_assert_uint_lt(id, NNODES);
	}
	hub_msg(fd, 'F', 0, "xyz", 3);
	ck_assert_int_eq(hub_flush(fd), 0);
	ck_assert_int_eq(read_all(fd, buf, sizeof(buf)), 0);
	close(fd);
	/* an unknown message type: closed too */
	fd = mux_dial();
	ck_assert_int_eq(write(fd, "chan\n", 5), 5);
	hub_msg(fd, 'Z', 7, "", 0);
	ck_assert_int_eq(hub_flush(fd), 0);
	ck_assert_int_eq(read_all(fd, buf, sizeof(buf)), 0);
	close(fd);
	/* the holder still serves everyone; node01 on a new link */
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	for (int i = 0; i < NNODES; i++)
		ck_assert_int_eq(via(err, h.node[i].name), 0);
	/* --no-mux dials */
	ck_assert_int_eq(ctl(&out, &err, "--no-mux ping -a"), 0);
	ck_assert_int_eq(via(err, "node01"), -1);
	ck_assert_ptr_nonnull(strstr(err, "node01: TLS "));
	/* a socket others may use is not ours to trust */
	ck_assert_int_eq(chmod(sock, 0666), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_ptr_nonnull(strstr(err, "not a private socket"));
	ck_assert_int_eq(via(err, "node01"), -1);
	ck_assert_int_eq(chmod(sock, 0600), 0);
	/* --stop: the holder closes its links and goes, the socket with it */
	ck_assert_int_eq(ctl(&out, &err, "mux --stop"), 0);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	mux_pid = 0;
	ck_assert_int_eq(access(sock, F_OK), -1);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_int_eq(via(err, "node01"), -1);
	free(out);
	free(err);
}
END_TEST

/* Accept one connection on lfd (10 s at most). */
static int
accept_one(int lfd)
{
	ck_assert_int_eq(poll(&(struct pollfd){ .fd = lfd, .events = POLLIN }, 1, 10000), 1);
	return accept(lfd, NULL, NULL);
}

/* Wait for fd to be readable, then take the messages of one read: their
 * types into types (NUL-terminated), ids into ids; -1 if the read ends
 * inside a message. */
static int
one_read(int fd, char *types, uint32_t *ids, size_t max)
{
	uint8_t b[8192];
	size_t k = 0, off = 0;
	ssize_t r;

	ck_assert_int_eq(poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 10000), 1);
	r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	ck_assert_int_gt(r, 0);
	while (off + 9 <= (size_t)r && k + 1 < max) {
		size_t n = (size_t)b[off] << 24 | (size_t)b[off + 1] << 16 |
		    (size_t)b[off + 2] << 8 | b[off + 3];

		if (off + 4 + n > (size_t)r)
			return -1;
		types[k] = (char)b[off + 4];
		ids[k++] = (uint32_t)b[off + 5] << 24 | (uint32_t)b[off + 6] << 16 |
		    (uint32_t)b[off + 7] << 8 | b[off + 8];
		off += 4 + n;
	}
	types[k] = '\0';
	return off == (size_t)r ? 0 : -1;
}

/* Write system calls pid has made so far (/proc/PID/io syscw; writev
 * counts one). */
static long
syscw(pid_t pid)
{
	char path[64], *t, *p;
	long n;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	t = cu_slurp(path);
	ck_assert_ptr_nonnull(t);
	p = strstr(t, "syscw: ");
	ck_assert_ptr_nonnull(p);
	n = strtol(p + 7, NULL, 10);
	free(t);
	return n;
}

/* knobctl's side of the channel, with the test as the holder: every
 * node's OPEN in one write, the two requests after the two OKs in one
 * more; a FAIL and a LOST become the nodes' status and text. */
START_TEST(knobctl_side)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char outf[PATH_MAX + 16], line[128], types[16], *txt;
	uint32_t ids[16];
	int lfd, fd;
	long w0, w1;
	pid_t pid;

	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "mux --stop"), 0);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	mux_pid = 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(chmod(sock, 0600), 0);
	ck_assert_int_eq(listen(lfd, 8), 0);
	snprintf(outf, sizeof(outf), "%s/ping.out", h.tmp);
	pid = harness_knobctl_bg(&h, outf, "/dev/null", "ping -a");
	/* the trust question first, on its own connection */
	fd = accept_one(lfd);
	ck_assert_int_eq(read_all_line(fd, line, sizeof(line)), 0);
	ck_assert_msg(strncmp(line, "trust ", 6) == 0, "%s", line);
	w0 = syscw(pid);	/* knobctl waits for our answer */
	ck_assert_int_eq(write(fd, "ok chan\n", 8), 8);
	close(fd);
	fd = accept_one(lfd);
	ck_assert_int_eq(read_n(fd, line, 5), 0);
	ck_assert_int_eq(memcmp(line, "chan\n", 5), 0);
	ck_assert_int_eq(one_read(fd, types, ids, nitems(types)), 0);
	ck_assert_str_eq(types, "OOO");
	/* "chan\n", then one writev for the three nodes */
	w1 = syscw(pid);
	ck_assert_int_eq(w1 - w0, 2);
	snprintf(line, sizeof(line), "%d refused by the test", NS_UNREACHABLE);
	hub_msg(fd, 'X', 0, line, strlen(line));
	hub_msg(fd, 'K', 1, "new", 3);
	hub_msg(fd, 'K', 2, "reused", 6);
	ck_assert_int_eq(hub_flush(fd), 0);
	ck_assert_int_eq(one_read(fd, types, ids, nitems(types)), 0);
	ck_assert_str_eq(types, "FF");
	ck_assert_uint_eq(ids[0] + ids[1], 3);
	ck_assert_int_eq(syscw(pid) - w1, 1);	/* both requests in one writev */
	hub_msg(fd, 'L', 1, "cut by the test", 15);
	hub_msg(fd, 'L', 2, "cut by the test", 15);
	ck_assert_int_eq(hub_flush(fd), 0);
	ck_assert_int_eq(cu_reap(pid), 1);
	/* nothing more: the nodes the holder ended are not aborted */
	ck_assert_int_eq(read_all(fd, line, sizeof(line)), 0);
	close(fd);
	txt = cu_slurp(outf);
	ck_assert_msg(strstr(txt, "node01: unreachable: refused by the test") != NULL, "%s", txt);
	ck_assert_msg(strstr(txt, "node[02-03] (2): failed: connection lost: cut by the test") != NULL,
	    "%s", txt);
	free(txt);
	/* a holder that answers the trust question and then nothing (wedged
	 * meanwhile): once its verdict is overdue (twice --connect-timeout and
	 * a second) the nodes are failed with the holder as the reason; before,
	 * "unreachable: TLS handshake timed out", of a handshake never reported */
	pid = harness_knobctl_bg(&h, outf, "&1", "--connect-timeout 1 ping -a");
	fd = accept_one(lfd);
	ck_assert_int_eq(read_all_line(fd, line, sizeof(line)), 0);
	ck_assert_int_eq(write(fd, "ok chan\n", 8), 8);
	close(fd);
	fd = accept_one(lfd);
	ck_assert_int_eq(cu_reap(pid), 1);
	close(fd);
	txt = cu_slurp(outf);
	ck_assert_msg(strstr(txt, "node[01-03] (3): failed: the connection holder did not answer "
	    "within 3.0s") != NULL, "%s", txt);
	free(txt);
	/* a holder that goes right after its answer (systemctl stop or
	 * restart, a trust change another command found): the command dials
	 * the nodes itself; before, each was "failed: connection holder PATH:
	 * No such file or directory" */
	pid = harness_knobctl_bg(&h, outf, "&1", "ping -a");
	fd = accept_one(lfd);
	ck_assert_int_eq(read_all_line(fd, line, sizeof(line)), 0);
	close(lfd);
	unlink(sock);
	ck_assert_int_eq(write(fd, "ok chan\n", 8), 8);
	close(fd);
	ck_assert_int_eq(cu_reap(pid), 0);
	txt = cu_slurp(outf);
	ck_assert_msg(strstr(txt, "3 ok") != NULL && strstr(txt, "the connection holder went (No "
	    "such file or directory): dialling the nodes directly") != NULL, "%s", txt);
	free(txt);
}
END_TEST

/* A frozen holder (SIGSTOP: the kernel still queues connections on its
 * socket) costs a command its --connect-timeout, not a fixed 10 s, and
 * the command then dials the nodes itself (review G, finding 5). */
START_TEST(hung_holder_bounded)
{
	char *out = NULL, *err = NULL;
	uint64_t t0;
	double took;
	int rc;

	ck_assert_int_eq(kill(mux_pid, SIGSTOP), 0);
	t0 = now_mono_ns();
	rc = ctl(&out, &err, "--connect-timeout 1 ping -a");
	took = (double)(now_mono_ns() - t0) / 1e9;
	kill(mux_pid, SIGCONT);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "3 ok") != NULL, "%s", out);
	ck_assert_msg(strstr(err, "the connection holder did not answer within 1.0s "
	    "(--connect-timeout): dialling the nodes directly") != NULL, "%s", err);
	ck_assert_int_eq(via(err, "node01"), -1);
	ck_assert_msg(took < 5, "a hung holder held the command %.1fs", took);
	free(out);
	free(err);
}
END_TEST

/* A stand-in holder listening on sock (root's, mode 0600) as uid 65534,
 * answering every trust question "ok chan"; it counts the lines it is
 * sent into *lines until stop is readable. */
static void
foreign_holder(int ready, int stop, int *lines)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0), fd;
	char line[256], c = 1;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(sock, 0600) < 0 ||
	    setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0 ||
	    listen(lfd, 8) < 0 || write(ready, &c, 1) != 1)
		_exit(1);
	*lines = 0;
	for (;;) {
		struct pollfd pf[2] = { { .fd = lfd, .events = POLLIN }, { .fd = stop, .events = POLLIN } };

		if (poll(pf, 2, -1) < 0 || pf[1].revents)
			return;
		if ((fd = accept(lfd, NULL, NULL)) < 0)
			continue;
		if (read_all_line(fd, line, sizeof(line)) == 0) {
			(*lines)++;
			if (write(fd, "ok chan\n", 8) != 8)
				_exit(1);
		}
		close(fd);
	}
}

/* A holder socket that passes the file checks (ours, 0600) but whose
 * listening process runs as another uid is not used: knobctl checks the
 * peer (SO_PEERCRED), sends it nothing and dials the nodes itself
 * (review G, finding 7). */
START_TEST(holder_of_another_uid)
{
	int ready[2], stop[2], res[2], lines = -1, st;
	char *out = NULL, *err = NULL;
	pid_t pid;

	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "mux --stop"), 0);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	mux_pid = 0;
	ck_assert(pipe(ready) == 0 && pipe(stop) == 0 && pipe(res) == 0);
	if ((pid = fork()) == 0) {
		close(stop[1]);
		foreign_holder(ready[1], stop[0], &lines);
		_exit(write(res[1], &lines, sizeof(lines)) == sizeof(lines) ? 0 : 1);
	}
	ck_assert_int_gt(pid, 0);
	close(ready[1]);
	close(res[1]);
	ck_assert_msg(read(ready[0], &st, 1) == 1, "the stand-in holder did not start");
	st = ctl(&out, &err, "ping -a");
	close(stop[1]);
	ck_assert(read(res[0], &lines, sizeof(lines)) == sizeof(lines));
	cu_reap(pid);
	close(ready[0]);
	close(stop[0]);
	close(res[0]);
	unlink(sock);
	ck_assert_int_eq(st, 0);
	ck_assert_msg(strstr(out, "3 ok") != NULL, "%s", out);
	ck_assert_msg(strstr(err, "runs as uid 65534, not as ours (0): not using it") != NULL,
	    "%s", err);
	ck_assert_int_eq(lines, 0);
	free(out);
	free(err);
}
END_TEST

/* Does the holder's status line hold the text arg? */
static int
status_has(void *arg)
{
	char *out = NULL;
	int ok;

	ok = harness_knobctl(&h, &out, NULL, "mux --status") == 0 && out &&
	    strstr(out, arg) != NULL;
	free(out);
	return ok;
}

/* One command's channel with one node whose request is at the agent. */
#define ONE_CHANNEL ((void *)(uintptr_t)"channels 1 nodes 1 pending 1 ")
/* A batch of one node being dialled. */
#define DIALLING_ONE ((void *)(uintptr_t)" dialling 1\n")

/* The holder killed while a command waits on a frozen agent: that node
 * is reported as lost (exit 1), the others answered; the next command
 * finds the dead holder's socket and dials itself; a new holder takes
 * the stale socket over. */
START_TEST(holder_killed_mid_command)
{
	char *out = NULL, *err = NULL, outf[PATH_MAX + 16], *txt;
	pid_t pid;

	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	snprintf(outf, sizeof(outf), "%s/ping.out", h.tmp);
	kill(h.node[2].pid, SIGSTOP);
	pid = harness_knobctl_bg(&h, outf, "&2", "--timeout 30 ping -a");
	ck_assert_msg(cu_wait(status_has, ONE_CHANNEL, 20) >= 0, "node03's request never reached the holder");
	kill(mux_pid, SIGKILL);
	ck_assert_int_eq(cu_reap(mux_pid), -1);	/* killed by the signal */
	mux_pid = 0;
	kill(h.node[2].pid, SIGCONT);
	ck_assert_int_eq(cu_reap(pid), 1);
	txt = cu_slurp(outf);
	ck_assert_msg(strstr(txt, "node[01-02] (2): pong") != NULL, "%s", txt);
	ck_assert_msg(strstr(txt, "node03: failed: connection lost") != NULL, "%s", txt);
	free(txt);
	ck_assert_int_eq(access(sock, F_OK), 0);	/* the dead holder's */
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_ptr_nonnull(strstr(out, "3 ok"));
	ck_assert_int_eq(via(err, "node03"), -1);
	mux_pid = harness_mux_start(&h, mux_err, "--log-level info mux --persist 300");
	ck_assert_msg(mux_pid > 0, "no new holder: %s", cu_slurp(mux_err));
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_int_eq(via(err, "node03"), 0);
	free(out);
	free(err);
}
END_TEST

/* Has the process *(pid_t *)arg exited?  (it is reaped, *arg set to its
 * exit status) */
static int
child_exited(void *arg)
{
	pid_t *pid = arg;
	int st;

	if (waitpid(*pid, &st, WNOHANG) != *pid)
		return 0;
	*pid = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 1;
}

/* A second holder started while one runs, even one stopped that does not
 * answer, is refused at once (exit 1, with the running one's pid) and
 * leaves the socket alone: the first serves on over its kept links, and
 * its exit leaves no holder behind.  Before, the second waited its
 * --connect-timeout, removed the socket and bound its own; the first
 * one's exit then removed the second's socket, which ran on unreachable. */
START_TEST(second_holder_refused)
{
	char *out = NULL, *err = NULL, err2[PATH_MAX + 16], want[64], *txt;
	pid_t pid;

	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	snprintf(err2, sizeof(err2), "%s/mux2.err", h.tmp);
	ck_assert_int_eq(kill(mux_pid, SIGSTOP), 0);
	pid = harness_knobctl_bg(&h, "/dev/null", err2, "--connect-timeout 1 mux --persist 300");
	ck_assert_int_gt(pid, 0);
	if (cu_wait(child_exited, &pid, 10) < 0) {
		kill(pid, SIGTERM);
		cu_reap(pid);
		kill(mux_pid, SIGCONT);
		txt = cu_slurp(err2);
		ck_abort_msg("a second holder runs beside the first: %s", txt);
	}
	kill(mux_pid, SIGCONT);
	txt = cu_slurp(err2);
	ck_assert_msg(pid == 1, "exit %d: %s", (int)pid, txt);
	snprintf(want, sizeof(want), "(pid %d, holding ", (int)mux_pid);
	ck_assert_msg(strstr(txt, "a holder already runs on") && strstr(txt, want), "%s", txt);
	free(txt);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_int_eq(via(err, "node01"), 1);
	kill(mux_pid, SIGTERM);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	mux_pid = 0;
	ck_assert_int_eq(access(sock, F_OK), -1);
	free(out);
	free(err);
}
END_TEST

/* A dial that takes long (node03's agent frozen, so the TLS handshake
 * waits up to --connect-timeout 20) does not hold the other commands: the
 * holder answers --status meanwhile, and a ping of node01 over its kept
 * link answers within its --timeout 2; node03's command gets its pong once
 * the agent runs again.  Before, the holder's loop waited in the dial. */
START_TEST(long_dial_serves_others)
{
	char *out = NULL, *err = NULL, outf[PATH_MAX + 16], *txt;
	pid_t pid;

	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	kill(h.node[2].pid, SIGSTOP);
	snprintf(outf, sizeof(outf), "%s/dial.out", h.tmp);
	pid = harness_knobctl_bg(&h, outf, "&2", "--connect-timeout 20 --timeout 30 ping -w node03");
	ck_assert_msg(cu_wait(status_has, DIALLING_ONE, 10) >= 0, "no status while node03 was dialled");
	ck_assert_int_eq(ctl(&out, &err, "--timeout 2 ping -w node01"), 0);
	ck_assert_int_eq(via(err, "node01"), 1);
	kill(h.node[2].pid, SIGCONT);
	ck_assert_int_eq(cu_reap(pid), 0);
	txt = cu_slurp(outf);
	ck_assert_msg(strstr(txt, "node03: pong") != NULL, "%s", txt);
	free(txt);
	free(out);
	free(err);
}
END_TEST

/* During a long dial (node03 frozen, --connect-timeout 20), a command that
 * wants node01 while node01's only link is busy with another command takes
 * that link as soon as the other command is done with it, instead of
 * waiting for the dial (before, it waited, and its knobctl, with a 3 s
 * connect timeout, reported a timeout). */
START_TEST(waiting_takes_freed_link)
{
	char *out = NULL, *err = NULL, fa[PATH_MAX + 16], fb[PATH_MAX + 16], fc[PATH_MAX + 16];
	pid_t a, b, c;

	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	kill(h.node[2].pid, SIGSTOP);
	ck_assert_int_eq(ctl(&out, &err, "--timeout 1 ping -w node03"), 1);	/* its link goes */
	snprintf(fa, sizeof(fa), "%s/a.out", h.tmp);
	snprintf(fb, sizeof(fb), "%s/b.out", h.tmp);
	snprintf(fc, sizeof(fc), "%s/c.out", h.tmp);
	a = harness_knobctl_bg(&h, fa, "&2", "--connect-timeout 20 --timeout 30 ping -w node03");
	ck_assert_msg(cu_wait(status_has, DIALLING_ONE, 10) >= 0, "node03 was not being dialled");
	kill(h.node[0].pid, SIGSTOP);
	b = harness_knobctl_bg(&h, fb, "&2", "--timeout 30 ping -w node01");
	ck_assert_msg(cu_wait(status_has, (void *)(uintptr_t)"channels 2 nodes 2 pending 1 ", 10) >= 0,
	    "node01's request never reached the holder");
	c = harness_knobctl_bg(&h, fc, "&2", "--connect-timeout 3 ping -w node01");
	ck_assert_msg(cu_wait(status_has, (void *)(uintptr_t)"channels 3 nodes 3 pending 1 ", 10) >= 0,
	    "the second node01 command never waited in the holder");
	kill(h.node[0].pid, SIGCONT);
	ck_assert_int_eq(cu_reap(b), 0);
	ck_assert_int_eq(cu_reap(c), 0);	/* node01's link, not a timeout behind node03 */
	kill(h.node[2].pid, SIGCONT);
	ck_assert_int_eq(cu_reap(a), 0);
	free(out);
	free(err);
}
END_TEST

/* Has the holder exited?  Its status in *(int *)arg. */
static int
holder_exited(void *arg)
{
	int st;

	if (waitpid(mux_pid, &st, WNOHANG) != mux_pid)
		return 0;
	*(int *)arg = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	mux_pid = 0;
	return 1;
}

/* The figure after key (" dialling ", " queued ") in the holder's status
 * line, asked over its socket by this process (no knobctl per look); -1
 * without one. */
static long
holder_figure(const char *key)
{
	char buf[MUX_LINE], *p;
	int fd = mux_dial();
	ssize_t n;

	n = write(fd, "status\n", 7) == 7 ? read_all(fd, buf, sizeof(buf)) : -1;
	close(fd);
	p = n > 0 ? strstr(buf, key) : NULL;
	return p != NULL ? atol(p + strlen(key)) : -1;
}

/* Is the holder dialling at least *(int *)arg nodes? */
static int
holder_dialling(void *arg)
{
	return holder_figure(" dialling ") >= *(int *)arg;
}

#define HOLDER_DIALS 32		/* MUX_DIALS in controller/cmd_mux.c */

/* A holder (mux_pid) whose names are looked up as resolv.conf conf says
 * (bound over /etc/resolv.conf in a mount namespace of its own). */
static void
holder_resolving_by(const char *conf)
{
	char *cmd = xasprintf("exec unshare -m --propagation private sh -c 'mount --bind %s "
	    "/etc/resolv.conf && exec ip netns exec %s %s/knobctl -c %s --log-level info mux "
	    "--persist 300' >/dev/null 2>%s </dev/null", conf, h.ctl_ns, h.bin, h.cluster, mux_err);

	cu_write(mux_err, 0644, "%s", "");
	mux_pid = fork();
	if (mux_pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	ck_assert_int_gt(mux_pid, 0);
	ck_assert_msg(cu_wait(mux_ready, NULL, 20) >= 0, "%s", cu_slurp(mux_err));
}

/* The holder with node01's link idle and node03 still being dialled: a
 * command's node01 has had its answer, node03 has not had its link. */
#define ALIVE_DONE_DEAD_DIALLING \
	((void *)(uintptr_t)"links 1 channels 1 nodes 1 pending 0 opened 1 reused 0 closed 0 " \
	    "queued 0 held 0 dialling 1\n")

/* Every one of the holder's dials out (32 channels each dialling node03,
 * its agent frozen, --connect-timeout 20), node01's link kept: a command
 * whose node02 needs a new link is told, after twice its connect timeout,
 * that node02 is unreachable because the holder has no dial free, while
 * its node01 answers over the kept link (exit 1).  Before, node02 waited
 * in the holder and knobctl reported "TLS handshake timed out" of a
 * handshake that never began. */
static void
every_dial_out(void)
{
	char *out = NULL, *err = NULL, line[256];
	int fds[HOLDER_DIALS], n;

	kill(h.node[2].pid, SIGSTOP);
	snprintf(line, sizeof(line), "%s %s 7420 20", h.node[2].name, h.node[2].addr);
	for (int k = 0; k < HOLDER_DIALS; k++) {
		fds[k] = mux_dial();
		ck_assert_int_eq(write(fds[k], "chan\n", 5), 5);
		hub_msg(fds[k], 'O', 0, line, strlen(line));
		ck_assert_int_eq(hub_flush(fds[k]), 0);
		n = k + 1;	/* a batch of its own: the one before is out */
		ck_assert_msg(cu_wait(holder_dialling, &n, 10) >= 0, "dial %d never began", n);
	}
	ck_assert_int_eq(ctl(&out, &err, "--connect-timeout 0.3 ping -w node01,node02"), 1);
	ck_assert_int_eq(via(err, "node01"), 1);
	ck_assert_msg(strstr(out, "node01: pong") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "node02: unreachable: connection holder: no dial free within "
	    "0.6s (its 32 dials are out: dead nodes or slow names)") != NULL, "%s", out);
	for (int k = 0; k < HOLDER_DIALS; k++)
		close(fds[k]);
	kill(h.node[2].pid, SIGCONT);
	free(out);
	free(err);
}

/* One command needs new links to node01 (alive) and node03 (its agent
 * frozen: the TLS handshake waits for its --connect-timeout 5): node01
 * has its link and the command its answer within 3 s (the holder's status:
 * node01's exchange done, its link idle, node03 still dialled), node03 is
 * unreachable after its 5 s, exit 1.  Before, the two were one batch and
 * node01's link came when the batch ended: after node03's 5 s. */
START_TEST(alive_node_not_behind_dead_dial)
{
	char outf[PATH_MAX + 16], *txt;
	double t;
	pid_t pid;

	kill(h.node[2].pid, SIGSTOP);
	snprintf(outf, sizeof(outf), "%s/ping.out", h.tmp);
	pid = harness_knobctl_bg(&h, outf, "&2", "--connect-timeout 5 ping -w node01,node03");
	ck_assert_int_gt(pid, 0);
	t = cu_wait(status_has, ALIVE_DONE_DEAD_DIALLING, 5);
	ck_assert_msg(t >= 0 && t < 3, "node01 waited behind node03's dial (%.1f s; -1: never "
	    "while node03 was dialled)", t);
	ck_assert_int_eq(cu_reap(pid), 1);
	kill(h.node[2].pid, SIGCONT);
	txt = cu_slurp(outf);
	ck_assert_msg(strstr(txt, "node01: pong") != NULL, "%s", txt);
	ck_assert_msg(strstr(txt, "node03: unreachable: TLS handshake timed out after 5.0s") != NULL,
	    "%s", txt);
	free(txt);
	every_dial_out();
}
END_TEST

/* A new holder whose names go to a name server that never answers (30 s
 * a lookup).  One channel asks, in one write, for zz1 (a name, connect
 * timeout 20) and node01 (an address, 0.5): node01's link comes within 2 s,
 * not after zz1's lookup (before, the two were one batch with the longer
 * timeout, and node01 waited the 20 s that knobctl does not: it gives up
 * after twice its own).  SIGTERM while zz1 is looked up: the holder exits 0
 * within 2 s.  Before, it waited for the lookup up to the connect timeout. */
static void
sigterm_during_name_lookup(void)
{
	char conf[PATH_MAX + 16], buf[MUX_LINE], line[256], type;
	struct harness_child dns;
	int fd, st = -1, one = 1;
	uint32_t id;

	snprintf(conf, sizeof(conf), "%s/resolv-hole.conf", h.tmp);
	cu_write(conf, 0644, "nameserver 127.87.0.1\noptions timeout:30 attempts:1\n");
	harness_child_start(&dns, h.ctl_ns, harness_dns_black_hole);
	holder_resolving_by(conf);
	fd = mux_dial();
	ck_assert_int_eq(write(fd, "chan\n", 5), 5);
	hub_msg(fd, 'O', 0, "zz1 zz1 7420 20", 15);
	snprintf(line, sizeof(line), "%s %s 7420 0.5", h.node[0].name, h.node[0].addr);
	hub_msg(fd, 'O', 1, line, strlen(line));
	ck_assert_int_eq(hub_flush(fd), 0);
	ck_assert_msg(poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 2000) == 1,
	    "node01 waited for zz1's name lookup");
	ck_assert_int_eq(hub_read(fd, &type, &id, buf, sizeof(buf)), 3);
	ck_assert_int_eq(type, 'K');
	ck_assert_uint_eq(id, 1);
	ck_assert_msg(cu_wait(holder_dialling, &one, 10) >= 0, "zz1 was not being dialled");
	kill(mux_pid, SIGTERM);
	ck_assert_msg(cu_wait(holder_exited, &st, 2) >= 0, "the holder did not exit within 2 s of "
	    "SIGTERM during a name lookup");
	ck_assert_int_eq(st, 0);
	ck_assert_int_ge(read_all(fd, buf, sizeof(buf)), 0);	/* the channel closed */
	close(fd);
	ck_assert_int_ge(harness_child_end(&dns), 1);	/* the lookup went to the silent server */
}

/* SIGTERM while the holder dials node03 (agent frozen, --connect-timeout
 * 30): the holder exits 0 within 5 s with its socket gone, and the
 * command's node03 is lost with it (exit 1).  Before, the holder removed
 * the socket at once but exited only when the dial ended, 30 s later. */
START_TEST(sigterm_during_dial)
{
	char outf[PATH_MAX + 16], *txt;
	double t;
	int st = -1;
	pid_t pid;

	kill(h.node[2].pid, SIGSTOP);
	snprintf(outf, sizeof(outf), "%s/ping.out", h.tmp);
	pid = harness_knobctl_bg(&h, outf, "&2", "--connect-timeout 30 ping -w node03");
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(cu_wait(status_has, DIALLING_ONE, 10) >= 0, "node03 was not being dialled");
	kill(mux_pid, SIGTERM);
	t = cu_wait(holder_exited, &st, 5);
	ck_assert_msg(t >= 0, "the holder did not exit within 5 s of SIGTERM during a dial");
	ck_assert_int_eq(st, 0);
	ck_assert_int_eq(access(sock, F_OK), -1);
	ck_assert_int_eq(cu_reap(pid), 1);
	kill(h.node[2].pid, SIGCONT);
	txt = cu_slurp(outf);
	ck_assert_msg(strstr(txt, "node03: failed: connection lost") != NULL, "%s", txt);
	free(txt);
	sigterm_during_name_lookup();
}
END_TEST

#define NSILENT 200

/* Is fd at its end (the holder closed it)? */
static int
at_eof(void *arg)
{
	char b;

	return recv(*(int *)arg, &b, 1, MSG_DONTWAIT) == 0;
}

/* The holder's time for a channel's first line in silent_flood: 4 s
 * ($KNOB_TEST_MUX_HEADER_MS) instead of its 10. */
#define HEADER_MS 4000

/* A flood of channels that never say a word: commands are served
 * meanwhile, and the silent ones are closed after the holder's time for
 * a first line (not before it). */
START_TEST(silent_flood)
{
	char *out = NULL, *err = NULL;
	int fds[NSILENT];
	char ms[16];
	uint64_t t0;
	double took;

	kill(mux_pid, SIGTERM);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	snprintf(ms, sizeof(ms), "%d", HEADER_MS);
	setenv("KNOB_TEST_MUX_HEADER_MS", ms, 1);
	mux_start();
	unsetenv("KNOB_TEST_MUX_HEADER_MS");
	t0 = now_mono_ns();
	for (int i = 0; i < NSILENT; i++)
		fds[i] = mux_dial();
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_int_eq(via(err, "node01"), 0);
	ck_assert_int_eq(ctl(&out, &err, "mux --status"), 0);
	ck_assert_msg(strstr(out, "channels 200 ") != NULL, "%s", out);
	for (int i = 0; i < NSILENT; i++) {
		ck_assert_msg(cu_wait(at_eof, &fds[i], 20) >= 0, "silent channel %d still open", i);
		took = (now_mono_ns() - t0) / 1e9;
		ck_assert_msg(took >= HEADER_MS / 1000.0, "silent channel %d closed after %.2f s", i,
		    took);
		close(fds[i]);
	}
	ck_assert_int_eq(ctl(&out, &err, "mux --status"), 0);
	ck_assert_ptr_nonnull(strstr(out, "channels 0 "));
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_int_eq(via(err, "node01"), 1);
	free(out);
	free(err);
}
END_TEST

/* A new CRL (or CA, or controller certificate): the holder's links were
 * verified under the old one.  The next command is told so, dials the
 * nodes itself, and the holder closes its links and goes. */
/* Is the clock past the time_t at arg (a certificate's notAfter)? */
static int
clock_past(void *arg)
{
	return time(NULL) > *(const time_t *)arg;
}

/* ping -a through the holder, then --no-mux: both exit 1 and say line
 * (the folded auth-failed of the expired certificate); the nodes in
 * ok_line, if any, answered. */
static void
ping_refused_both_ways(const char *line, const char *ok_line)
{
	const char *how[] = { "", "--no-mux " };
	char *out = NULL, *err = NULL;

	for (int i = 0; i < 2; i++) {
		int rc = ctl(&out, &err, "%sping -a", how[i]);

		ck_assert_msg(rc == 1 && strstr(out, line) != NULL && (ok_line == NULL ||
		    strstr(out, ok_line) != NULL), "%sping -a: exit %d: %s", how[i], rc, out);
	}
	free(out);
	free(err);
}

/* Re-sign node01's certificate to expire in secs (when: *end) and
 * restart its agent with it. */
static void
node01_expiring(int secs, time_t *end)
{
	ck_assert_int_eq(harness_cert_expiring(&h, "node01", secs, end), 0);
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
}

/* What a test does while a certificate is still valid: make it expire in
 * secs (its notAfter into *end) and run the commands, their results kept
 * in arg for the test to check. */
typedef void (*valid_step)(int secs, time_t *end, void *arg);

/* Run step with a certificate of secs; when step did not end before its
 * notAfter (a loaded machine, ASan), again with 3 s more than step took:
 * the test takes longer then, its verdict stays the same.  The
 * certificates live a few seconds, not the 5 to 8 s they had for the
 * slowest case, which each test waited out. */
static void
while_valid(int secs, valid_step step, void *arg, time_t *end)
{
	for (int i = 0; i < 3; i++) {
		time_t t0 = time(NULL);

		step(secs, end, arg);
		if (time(NULL) < *end)
			return;
		printf("a certificate of %d s expired before the commands ended: again\n", secs);
		secs = (int)(time(NULL) - t0) + 3;
	}
	ck_abort_msg("the commands never ended within their certificate's life");
}

/* A ping through the holder and a direct one, while it is valid. */
struct two_pings {
	int rc_held, via01, rc_direct;
};

/* ping -a through the holder, then --no-mux: into p. */
static void
ping_both_ways(struct two_pings *p)
{
	char *out = NULL, *err = NULL;

	p->rc_held = ctl(&out, &err, "ping -a");
	p->via01 = via(err, "node01");
	p->rc_direct = ctl(&out, &err, "--no-mux ping -a");
	free(out);
	free(err);
}

/* Both answered, node01 through a link the holder dialled then. */
static void
both_ways_ok(const struct two_pings *p)
{
	ck_assert_int_eq(p->rc_held, 0);
	ck_assert_int_eq(p->via01, 0);
	ck_assert_int_eq(p->rc_direct, 0);
}

/* expired_agent_cert's valid_step: node01's certificate of secs, then
 * both pings. */
static void
agent_cert_step(int secs, time_t *end, void *arg)
{
	node01_expiring(secs, end);
	ping_both_ways(arg);
}

/* node01's certificate expires while the holder holds its link (and
 * knobctl keeps a TLS ticket of it): the next ping through the holder is
 * refused as a direct dial is, in the same words, and so is a direct one
 * (a full handshake, the ticket not resumed); node02 and node03 answer.
 * Before, the holder went on relaying over the kept link (3 ok), and a
 * direct ping resumed its ticket without looking at the certificate. */
START_TEST(expired_agent_cert)
{
	struct two_pings p;
	time_t end;

	while_valid(3, agent_cert_step, &p, &end);
	both_ways_ok(&p);
	ck_assert_msg(cu_wait(clock_past, &end, 20) >= 0, "the clock did not pass notAfter");
	ping_refused_both_ways("node01: auth-failed: agent certificate rejected: certificate has "
	    "expired", "2 ok, 1 auth-failed (node01)");
}
END_TEST

/* expired_controller_cert's valid_step: a holder on a controller
 * certificate of secs, then both pings. */
static void
controller_cert_step(int secs, time_t *end, void *arg)
{
	kill(mux_pid, SIGTERM);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	ck_assert_int_eq(harness_cert_expiring(&h, "controller", secs, end), 0);
	mux_start();
	ping_both_ways(arg);
}

/* The controller's own certificate expires while the holder holds its
 * links: every node is refused through it as directly ("agent refused
 * our certificate: it has expired (knobctl ca renew)"), exit 1.  Before,
 * the holder served on over the links it held (3 ok). */
START_TEST(expired_controller_cert)
{
	struct two_pings p;
	time_t end;

	while_valid(3, controller_cert_step, &p, &end);
	both_ways_ok(&p);
	ck_assert_msg(cu_wait(clock_past, &end, 20) >= 0, "the clock did not pass notAfter");
	ping_refused_both_ways("node[01-03] (3): auth-failed: agent refused our certificate: it "
	    "has expired (knobctl ca renew)", NULL);
}
END_TEST

/* Does the holder's log say node's dial resumed its TLS ticket? */
static int
holder_resumed(const char *node)
{
	char *log = cu_slurp(mux_err), want[128];
	int yes;

	snprintf(want, sizeof(want), "%s: TLS session resumed", node);
	yes = log && strstr(log, want) != NULL;
	free(log);
	return yes;
}

/* What restarted_holder_resumes saw while node01's certificate was
 * valid: the direct ping, the restarted holder's first ping, and per node
 * whether that came over a new link the holder resumed. */
struct restart_pings {
	int rc_direct, rc_held, via[NNODES], resumed[NNODES];
};

/* restarted_holder_resumes's valid_step: node01's certificate of secs,
 * the holder stopped, a direct ping fills the cache, a new holder's first
 * ping. */
static void
restart_step(int secs, time_t *end, void *arg)
{
	struct restart_pings *p = arg;
	char *out = NULL, *err = NULL;

	node01_expiring(secs, end);
	kill(mux_pid, SIGTERM);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	p->rc_direct = ctl(&out, &err, "--no-mux ping -a");
	mux_start_at("debug");
	p->rc_held = ctl(&out, &err, "ping -a");
	for (int i = 0; i < NNODES; i++) {
		p->via[i] = via(err, h.node[i].name);
		p->resumed[i] = holder_resumed(h.node[i].name);
	}
	free(out);
	free(err);
}

/* A restarted holder dials from the ticket cache a direct ping filled
 * (resumed, no full handshake), and its resumed link still knows node01's
 * certificate's notAfter (kept with the ticket): past it, node01 is
 * refused through the holder as directly, and a direct ping offers no
 * ticket of that certificate (a full handshake, refused).  Before, the
 * holder dialled only full handshakes (no ticket cache) after every
 * restart. */
START_TEST(restarted_holder_resumes)
{
	char *out = NULL, *err = NULL;
	struct restart_pings p;
	time_t end;

	while_valid(4, restart_step, &p, &end);
	ck_assert_int_eq(p.rc_direct, 0);
	ck_assert_int_eq(p.rc_held, 0);
	for (int i = 0; i < NNODES; i++) {
		ck_assert_int_eq(p.via[i], 0);
		ck_assert_msg(p.resumed[i], "%s: no resumed dial: %s", h.node[i].name,
		    cu_slurp(mux_err));
	}
	ck_assert_msg(cu_wait(clock_past, &end, 20) >= 0, "the clock did not pass notAfter");
	ck_assert_int_eq(ctl(&out, &err, "--no-mux ping -w node01"), 1);
	ck_assert_ptr_nonnull(strstr(err, "node01: its TLS ticket's agent certificate has expired"));
	ck_assert_ptr_null(strstr(err, "node01: TLS session resumed"));
	ping_refused_both_ways("node01: auth-failed: agent certificate rejected: certificate has "
	    "expired", "2 ok, 1 auth-failed (node01)");
	free(out);
	free(err);
}
END_TEST

/* Does the ticket cache hold a ticket of every node in the NULL-ended
 * list at arg? */
static int
cache_holds(void *arg)
{
	const char *const *names = arg;
	struct ctl c;
	struct tcache *tc = tku_open(h.cluster, h.ca_dir, &c);
	int all = 1;

	for (; *names && all; names++) {
		const char *pin;
		int64_t not_after;
		SSL_SESSION *s = tcache_get(tc, *names, &pin, &not_after);

		all = s != NULL;
		SSL_SESSION_free(s);
	}
	tku_close(&c, tc);
	return all;
}

/* Has the holder logged the text at arg? */
static int
mux_said(void *arg)
{
	return cu_file_has(mux_err, arg);
}

/* A fleet driven through the holder alone: one direct ping (node03)
 * first, then node01 and node02 only through the holder.  The holder
 * saves its links' tickets (the agent's ticket comes after the link is
 * handed over): while the test holds the cache's lock, as a direct
 * command's save does, the holder serves on and saves later, keeping
 * node03's ticket, which its own view (opened before) never had; a holder
 * restarted after a SIGKILL (no save at exit) resumes every link.  Before,
 * the holder saved none of its tickets: node01 and node02 were full
 * handshakes after every restart. */
START_TEST(holder_saves_its_tickets)
{
	static const char *all[] = { "node01", "node02", "node03", NULL };
	char *out = NULL, *err = NULL, lock[PATH_MAX];
	int fd;

	kill(mux_pid, SIGTERM);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	mux_start_at("debug");
	ck_assert_int_eq(ctl(&out, &err, "--no-mux ping -w node03"), 0);
	snprintf(lock, sizeof(lock), "%s/%s.lock", h.tmp, TCACHE_FILE);
	ck_assert_int_ge(fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600), 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01,node02"), 0);
	ck_assert_int_eq(via(err, "node01"), 0);
	ck_assert_msg(cu_wait(mux_said, (char *)(uintptr_t)
	    "the ticket cache is locked by another command", 20) >= 0, "the holder never tried to save: %s",
	    cu_slurp(mux_err));
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01,node02"), 0);
	ck_assert_int_eq(via(err, "node02"), 1);
	close(fd);
	ck_assert_msg(cu_wait(cache_holds, all, 20) >= 0, "the holder's tickets were not saved "
	    "beside node03's");
	kill(mux_pid, SIGKILL);
	cu_reap(mux_pid);
	mux_start_at("debug");
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	for (int i = 0; i < NNODES; i++)
		ck_assert_msg(holder_resumed(h.node[i].name), "%s: no resumed dial: %s",
		    h.node[i].name, cu_slurp(mux_err));
	free(out);
	free(err);
}
END_TEST

/* Is a thread of the holder blocked opening a file (the ticket cache's
 * FIFO: /proc/PID/task/TID/syscall names the call it waits in)? */
static int
holder_in_open(void *arg)
{
	char dir[64], path[PATH_MAX], *t;
	struct dirent *de;
	DIR *d;
	int yes = 0;

	(void)arg;
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)mux_pid);
	if ((d = opendir(dir)) == NULL)
		return 0;
	while (!yes && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/syscall", dir, de->d_name);
		t = cu_slurp(path);
		yes = t && strtol(t, NULL, 10) == SYS_openat && t[0] != 'r';
		free(t);
	}
	closedir(d);
	return yes;
}

/* Is the FIFO at arg gone, replaced by a regular file?  A reader waiting
 * in it is let go (an end of file) meanwhile. */
static int
fifo_replaced(void *arg)
{
	const char *fifo = arg;
	struct stat st;
	int fd;

	if (lstat(fifo, &st) < 0)
		return 0;
	if (S_ISFIFO(st.st_mode) && (fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) >= 0)
		close(fd);
	return S_ISREG(st.st_mode);
}

/* The holder's ticket save stuck on the file system (the cache is a FIFO
 * that nobody writes: its read blocks, as on a hung NFS home) does not
 * hold the holder: a ping over its kept links is relayed at once, and the
 * tickets land once the file system lets go; told to stop then, it
 * finishes that save before it exits.  Before, the save ran on the
 * holder's event loop: the ping waited its --connect-timeout for an
 * answer, then dialled directly (and hung on the FIFO itself). */
START_TEST(stuck_save_serves_on)
{
	static const char *two[] = { "node01", "node02", NULL };
	char lock[PATH_MAX], fifo[PATH_MAX], out[PATH_MAX], err[PATH_MAX + 8], *log;
	char *o = NULL, *e = NULL;
	pid_t pid;
	int fd, exited;

	snprintf(fifo, sizeof(fifo), "%s/%s", h.tmp, TCACHE_FILE);
	snprintf(lock, sizeof(lock), "%s.lock", fifo);
	snprintf(out, sizeof(out), "%s/stuck.out", h.tmp);
	snprintf(err, sizeof(err), "%s/stuck.err", h.tmp);
	/* the links' tickets wait for the lock until the FIFO is in place */
	ck_assert_int_ge(fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600), 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	ck_assert_int_eq(ctl(&o, &e, "ping -w node01,node02"), 0);
	ck_assert_int_eq(via(e, "node01"), 0);
	free(o);
	free(e);
	(void)unlink(fifo);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	close(fd);
	ck_assert_msg(cu_wait(holder_in_open, NULL, 20) >= 0, "the holder's save never "
	    "opened the FIFO: %s", cu_slurp(mux_err));
	pid = harness_knobctl_bg(&h, out, err, "--log-level debug --connect-timeout 2 "
	    "ping -w node01,node02");
	ck_assert_int_gt(pid, 0);
	exited = cu_wait(child_exited, &pid, 10) >= 0;
	if (!exited) {	/* it fell back to a direct dial: let it (and the holder) go */
		ck_assert_int_ge(cu_wait(fifo_replaced, fifo, 20), 0);
		ck_assert_int_ge(cu_wait(child_exited, &pid, 20), 0);
	}
	log = cu_slurp(err);
	ck_assert_msg(exited && pid == 0, "the ping was held by the stuck save (rc %d): %s",
	    (int)pid, log);
	ck_assert_int_eq(via(log, "node01"), 1);
	ck_assert_int_eq(via(log, "node02"), 1);
	free(log);
	/* told to stop, it closes its links and waits for the save */
	kill(mux_pid, SIGTERM);
	ck_assert_int_ge(cu_wait(mux_said, (char *)(uintptr_t)"links opened", 20), 0);
	ck_assert_int_eq(waitpid(mux_pid, NULL, WNOHANG), 0);
	ck_assert_msg(cu_wait(fifo_replaced, fifo, 20) >= 0, "the tickets never landed");
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	mux_pid = 0;
	ck_assert(cache_holds(two));
}
END_TEST

/* How often the holder's log holds text. */
static int
mux_said_times(const char *text)
{
	char *t = cu_slurp(mux_err), *p;
	int n = 0;

	for (p = t; p && (p = strstr(p, text)) != NULL; p++)
		n++;
	free(t);
	return n;
}

/* Fill the tmpfs of filler up (filler made, or grown) until ENOSPC. */
static void
fill_up(const char *filler)
{
	static char zeros[65536];
	ssize_t n;
	int fd;

	ck_assert_int_ge(fd = open(filler, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600), 0);
	while ((n = write(fd, zeros, sizeof(zeros))) > 0)
		;
	ck_assert_msg(n < 0 && errno == ENOSPC, "the tmpfs did not fill up: %s", strerror(errno));
	close(fd);
}

/* The results database (and so the ticket cache and the holder's socket)
 * moved to a 1 MiB tmpfs mounted at DIR/small, filled up to ENOSPC by
 * DIR/small/filler (its path into filler), and the holder restarted there
 * at log level debug. */
static void
holder_on_full_disk(char *filler, size_t len)
{
	char *inv = cu_slurp(h.cluster), *at;

	snprintf(small_fs, sizeof(small_fs), "%s/small", h.tmp);
	ck_assert_int_eq(mkdir(small_fs, 0700), 0);
	ck_assert_msg(mount("knobtest", small_fs, "tmpfs", 0, "size=1m,mode=0700") == 0,
	    "mount: %s", strerror(errno));
	ck_assert_ptr_nonnull(at = strstr(inv, "db=\"results.db\""));
	cu_write(h.cluster, 0644, "%.*sdb=\"small/results.db\"%s", (int)(at - inv), inv,
	    at + strlen("db=\"results.db\""));
	free(inv);
	kill(mux_pid, SIGTERM);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	mux_start_at("debug");
	snprintf(filler, len, "%s/filler", small_fs);
	fill_up(filler);
}

/* The holder's ticket save fails for real (the cache's file system is
 * full: ENOSPC): it keeps the tickets, warns once, tries again (quietly)
 * and, once space is freed, saves them without any new change, saying it
 * recovered.  Before, a failed save was dropped: the links' tickets were
 * lost until another ticket came.  Full again, a holder told to stop gives
 * the new ticket up with exit 1, naming its node. */
START_TEST(failed_save_retried)
{
	static const char *two[] = { "node01", "node02", NULL };
	char *out = NULL, *err = NULL, filler[PATH_MAX + 16];

	holder_on_full_disk(filler, sizeof(filler));
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01,node02"), 0);
	ck_assert_int_eq(via(err, "node01"), 0);
	ck_assert_msg(cu_wait(mux_said, (char *)(uintptr_t)"cannot write the ticket cache: No "
	    "space left on device", 20) >= 0, "no failed save said: %s", cu_slurp(mux_err));
	ck_assert_msg(cu_wait(mux_said, (char *)(uintptr_t)"the ticket cache still cannot be "
	    "written: No space left on device (try 2)", 10) >= 0,
	    "the failed save was not tried again: %s", cu_slurp(mux_err));
	ck_assert_int_eq(unlink(filler), 0);
	ck_assert_msg(cu_wait(cache_holds, two, 10) >= 0, "the kept tickets never landed: %s",
	    cu_slurp(mux_err));
	ck_assert_msg(cu_wait(mux_said, (char *)(uintptr_t)"the ticket cache is saved again "
	    "(after ", 10) >= 0, "no recovery said: %s", cu_slurp(mux_err));
	ck_assert_int_eq(mux_said_times("the tickets of 2 nodes are kept and tried again"), 1);
	/* full again: node03's new ticket cannot be saved, and a holder told to
	 * stop gives it up and says so in its exit status (it said 0) */
	fill_up(filler);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node03"), 0);
	ck_assert_int_eq(via(err, "node03"), 0);
	kill(mux_pid, SIGTERM);
	ck_assert_int_eq(cu_reap(mux_pid), 1);
	mux_pid = 0;
	ck_assert_msg(cu_file_has(mux_err, "exiting without saving the tickets of 1 nodes: "
	    "node03"), "%s", cu_slurp(mux_err));
	free(out);
	free(err);
}
END_TEST

/* A save that never ends (the cache a FIFO nobody opens: the save's read
 * blocks for good, as on a hung NFS home): the holder told to stop exits
 * within its wait for the save ($KNOB_TEST_MUX_SAVE_EXIT_S=1, 10 s in
 * use) with status 1, names the nodes whose tickets it did not save, and leaves no
 * partial file behind: the cache put back is read as it was (node03's
 * ticket resumes).  Before, this path had no test. */
START_TEST(endless_save_exit_bounded)
{
	char *out = NULL, *err = NULL, cache[PATH_MAX], kept[PATH_MAX + 8], tmps[PATH_MAX + 8];
	char lock[PATH_MAX + 8];
	struct stat st;
	double took;
	int fd, rc = -1;

	snprintf(cache, sizeof(cache), "%s/%s", h.tmp, TCACHE_FILE);
	snprintf(kept, sizeof(kept), "%s.kept", cache);
	snprintf(tmps, sizeof(tmps), "%s.tmp.*", cache);
	snprintf(lock, sizeof(lock), "%s.lock", cache);
	kill(mux_pid, SIGTERM);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	setenv("KNOB_TEST_MUX_SAVE_EXIT_S", "1", 1);
	mux_start();
	ck_assert_int_eq(ctl(&out, &err, "--no-mux ping -w node03"), 0);
	/* the links' tickets wait for the lock until the FIFO is in place */
	ck_assert_int_ge(fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600), 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01,node02"), 0);
	ck_assert_int_eq(via(err, "node01"), 0);
	ck_assert_int_eq(rename(cache, kept), 0);
	ck_assert_int_eq(mkfifo(cache, 0600), 0);
	close(fd);
	ck_assert_msg(cu_wait(holder_in_open, NULL, 20) >= 0, "the holder's save never "
	    "opened the FIFO: %s", cu_slurp(mux_err));
	kill(mux_pid, SIGTERM);
	took = cu_wait(holder_exited, &rc, 5);
	ck_assert_msg(took >= 0 && took < 3, "the holder did not exit within 3 s of SIGTERM "
	    "(%.1f s): %s", took, cu_slurp(mux_err));
	ck_assert_int_eq(rc, 1);	/* tickets lost: not a clean exit (it said 0) */
	ck_assert_msg(cu_file_has(mux_err, "save did not end within 1 s (a hung file system?): "
	    "exiting without it: the tickets of 2 nodes not saved: node0"), "%s",
	    cu_slurp(mux_err));
	ck_assert(cu_file_has(mux_err, "node01") && cu_file_has(mux_err, "node02"));
	/* nothing written: the FIFO as it was, no temporary file */
	ck_assert_int_eq(lstat(cache, &st), 0);
	ck_assert(S_ISFIFO(st.st_mode));
	ck_assert(!cu_glob_exists(tmps));
	ck_assert_int_eq(rename(kept, cache), 0);
	ck_assert_int_eq(ctl(&out, &err, "--no-mux ping -w node03"), 0);
	ck_assert_ptr_nonnull(strstr(err, "node03: TLS session resumed"));
	free(out);
	free(err);
}
END_TEST

START_TEST(trust_change_stops_holder)
{
	char *out = NULL, *err = NULL, e[512], *log;

	ck_assert_msg(ca_issue(h.ca_dir, "spare", 0, e, sizeof(e)) == 0, "%s", e);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_int_eq(via(err, "node01"), 0);
	ck_assert_msg(ca_revoke(h.ca_dir, "spare", NULL, e, sizeof(e)) == 0, "%s", e);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_ptr_nonnull(strstr(out, "3 ok"));
	ck_assert_ptr_nonnull(strstr(err, "(stale): dialling the nodes directly"));
	for (int i = 0; i < NNODES; i++)
		ck_assert_int_eq(via(err, h.node[i].name), -1);
	ck_assert_ptr_nonnull(strstr(err, "node01: TLS full handshake"));
	/* it could not go on holding: exit 1, which knob-mux.service restarts */
	ck_assert_int_eq(cu_reap(mux_pid), 1);
	mux_pid = 0;
	log = cu_slurp(mux_err);
	ck_assert_ptr_nonnull(strstr(log, "changed: closing every link"));
	free(log);
	ck_assert_int_eq(access(sock, F_OK), -1);
	free(out);
	free(err);
}
END_TEST

/* Does `knobctl mux --status` print arg? */
static int
status_says(void *arg)
{
	char *out = NULL;
	int ok;

	ok = harness_knobctl(&h, &out, NULL, "mux --status") == 0 && out &&
	    strstr(out, (const char *)arg) != NULL;
	free(out);
	return ok;
}

/* A channel for one node: "chan", OPEN node i as id 0, and the holder's
 * answer (K with "new" or "reused"); the channel's fd. */
static int
chan_open_node(int i, char *how, size_t len)
{
	char line[256], type;
	uint32_t id;
	int fd = mux_dial();

	ck_assert_int_eq(write(fd, "chan\n", 5), 5);
	snprintf(line, sizeof(line), "%s %s 7420 5", h.node[i].name, h.node[i].addr);
	hub_msg(fd, 'O', 0, line, strlen(line));
	ck_assert_int_eq(hub_flush(fd), 0);
	ck_assert_int_ge(hub_read(fd, &type, &id, how, len), 0);
	ck_assert_int_eq(type, 'K');
	return fd;
}

/* Two commands need node01 at the same time: the second gets a new link.
 * When both are done, one idle link per node stays, so the holder's
 * descriptors do not grow with how many commands ever overlapped. */
START_TEST(one_idle_link_per_node)
{
	char *out = NULL, *err = NULL, how[64];
	int a, b;

	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	a = chan_open_node(0, how, sizeof(how));
	ck_assert_str_eq(how, "reused");
	b = chan_open_node(0, how, sizeof(how));
	ck_assert_str_eq(how, "new");
	ck_assert_int_eq(ctl(&out, &err, "mux --status"), 0);
	ck_assert_msg(strstr(out, "links 4 channels 2 "), "%s", out);
	hub_msg(a, 'D', 0, "", 0);
	ck_assert_int_eq(hub_flush(a), 0);
	hub_msg(b, 'D', 0, "", 0);
	ck_assert_int_eq(hub_flush(b), 0);
	close(a);
	close(b);
	ck_assert_msg(cu_wait(status_says, (char *)(uintptr_t)"links 3 channels 0 ", 10) >= 0,
	    "more than one idle link per node stays");
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	for (int i = 0; i < NNODES; i++)
		ck_assert_int_eq(via(err, h.node[i].name), 1);
	free(out);
	free(err);
}
END_TEST

/* A channel that says DONE for node01 while its request is still at the
 * (frozen) agent: the link closes, so the reply on its way reaches nobody.
 * The next channel to ask for node01 gets a new link, and its own answer
 * (a facts reply to its facts request).  Before, the holder kept the link
 * idle and handed it to that channel as "reused": the first channel's
 * pong came to it as the answer to its facts request. */
START_TEST(done_with_request_out)
{
	Knob__Ping ping = KNOB__PING__INIT;
	Knob__FactsRequest fr = KNOB__FACTS_REQUEST__INIT;
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *e;
	char *out = NULL, *err = NULL, line[256], how[64], type, *buf = xmalloc(FRAME_MAX);
	uint8_t *pf, *ff;
	size_t plen, flen;
	uint32_t id;
	ssize_t n;
	int a, b;

	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	ck_assert_int_eq(frame_pack(&env, &pf, &plen), 0);
	env.body_case = KNOB__ENVELOPE__BODY_FACTS_REQUEST;
	env.facts_request = &fr;
	ck_assert_int_eq(frame_pack(&env, &ff, &flen), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	kill(h.node[0].pid, SIGSTOP);
	a = chan_open_node(0, how, sizeof(how));
	ck_assert_str_eq(how, "reused");
	hub_msg(a, 'F', 0, pf + 4, plen - 4);
	hub_msg(a, 'D', 0, "", 0);
	ck_assert_int_eq(hub_flush(a), 0);
	close(a);
	ck_assert_msg(cu_wait(status_says, (char *)(uintptr_t)"channels 0 ", 10) >= 0,
	    "the channel stays");
	/* node01's next command, while the pong is still to come */
	b = mux_dial();
	ck_assert_int_eq(write(b, "chan\n", 5), 5);
	snprintf(line, sizeof(line), "%s %s 7420 5", h.node[0].name, h.node[0].addr);
	hub_msg(b, 'O', 0, line, strlen(line));
	ck_assert_int_eq(hub_flush(b), 0);
	ck_assert_msg(cu_wait(status_says, (char *)(uintptr_t)"channels 1 nodes 1 ", 10) >= 0,
	    "the holder did not take the OPEN");
	kill(h.node[0].pid, SIGCONT);
	ck_assert_int_ge(hub_read(b, &type, &id, how, sizeof(how)), 0);
	ck_assert_int_eq(type, 'K');
	ck_assert_str_eq(how, "new");
	hub_msg(b, 'F', 0, ff + 4, flen - 4);
	ck_assert_int_eq(hub_flush(b), 0);
	ck_assert_int_gt(n = hub_read(b, &type, &id, buf, FRAME_MAX), 0);
	ck_assert_int_eq(type, 'F');
	ck_assert_ptr_nonnull(e = frame_unpack((uint8_t *)buf, (size_t)n, line, sizeof(line)));
	ck_assert_int_eq(e->body_case, KNOB__ENVELOPE__BODY_FACTS);
	knob__envelope__free_unpacked(e, NULL);
	close(b);
	free(pf);
	free(ff);
	free(buf);
	free(out);
	free(err);
}
END_TEST

/* The fds in [0, n) at their end, counted into got; holds once got
 * reaches want. */
struct eofs {
	int *fds, n, want, got;
};

static int
eofs_reach(void *arg)
{
	struct eofs *e = arg;

	e->got = 0;
	for (int i = 0; i < e->n; i++)
		e->got += at_eof(&e->fds[i]);
	return e->got >= e->want;
}

/* Out of file descriptors (its limit lowered to what it holds plus a
 * few): the holder refuses the channels it cannot take (they see it
 * close at once, so it does not spin on a listener that stays readable),
 * a command meanwhile dials the nodes itself and succeeds, and once the
 * channels are gone the holder serves again on its links. */
START_TEST(out_of_descriptors)
{
	char *out = NULL, *err = NULL, path[64], *log;
	struct rlimit rl;
	int fds[16], nfd = 0, refused = 0;
	struct eofs rest = { fds + 4, 12, 0, 0 };
	DIR *d;

	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)mux_pid);
	ck_assert_ptr_nonnull(d = opendir(path));
	while (readdir(d) != NULL)
		nfd++;
	closedir(d);
	rl.rlim_cur = rl.rlim_max = (rlim_t)(nfd - 2 + 4);	/* . and .. */
	ck_assert_int_eq(prlimit(mux_pid, RLIMIT_NOFILE, &rl, NULL), 0);
	for (int i = 0; i < 16; i++)
		fds[i] = mux_dial();
	for (int i = 0; i < 4; i++)	/* the first few, as they are now */
		refused += at_eof(&fds[i]);
	/* the rest, all at once, until enough are closed (10 s at most: one
	 * the holder took is closed then as silent, and counted, as when each
	 * of them had its own 10 s) */
	rest.want = 10 - refused;
	cu_wait(eofs_reach, &rest, 10);
	refused += rest.got;
	ck_assert_int_ge(refused, 10);
	log = cu_slurp(mux_err);
	ck_assert_ptr_nonnull(strstr(log, "out of file descriptors"));
	free(log);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_ptr_nonnull(strstr(out, "3 ok"));
	for (int i = 0; i < 16; i++)
		close(fds[i]);
	ck_assert_msg(cu_wait(status_says, (char *)(uintptr_t)"channels 0 ", 10) >= 0, "channels stay open");
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_int_eq(via(err, "node01"), 1);
	free(out);
	free(err);
}
END_TEST

/* A descriptor limit that leaves the holder room free new ones (the
 * lowest numbers it has not open: a descriptor's number must be below
 * the limit). */
static rlim_t
holder_fd_room(int room)
{
	char path[64], open_fd[4096] = { 0 };
	struct dirent *e;
	int fd = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)mux_pid);
	ck_assert_ptr_nonnull(d = opendir(path));
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && atoi(e->d_name) < (int)sizeof(open_fd))
			open_fd[atoi(e->d_name)] = 1;
	closedir(d);
	for (; room > 0; fd++)
		room -= !open_fd[fd];
	return (rlim_t)fd;
}

/* The holder at its descriptor limit: a command it cannot check the CA
 * for dials itself, and the holder goes on (before: the CA file it could
 * not open hashed as absent, it took itself for revoked, closed every
 * link and exited 1), and serves on its kept links once it has room; a
 * node it cannot dial is failed with the holder's limit as the reason
 * (before: "failed: socket: Too many open files", as if knobctl's). */
START_TEST(holder_out_of_descriptors)
{
	char *out = NULL, *err = NULL, *log;
	struct rlimit rl, old;
	int st;

	ck_assert_int_eq(ctl(&out, &err, "ping -w node[01-02]"), 0);
	ck_assert_int_eq(prlimit(mux_pid, RLIMIT_NOFILE, NULL, &old), 0);
	rl = old;
	rl.rlim_cur = holder_fd_room(1);	/* the trust question takes it */
	ck_assert_int_eq(prlimit(mux_pid, RLIMIT_NOFILE, &rl, NULL), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node[01-02]"), 0);
	ck_assert_msg(strstr(out, "2 ok") != NULL, "%s", out);
	ck_assert_msg(strstr(err, "the connection holder cannot answer now (out of file "
	    "descriptors): dialling the nodes directly") != NULL, "%s", err);
	ck_assert_msg(!holder_exited(&st), "the holder exited (%d): %s", st, cu_slurp(mux_err));
	ck_assert_int_eq(prlimit(mux_pid, RLIMIT_NOFILE, &old, NULL), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node[01-02]"), 0);
	ck_assert_int_eq(via(err, "node01"), 1);
	/* a dial raises the soft limit to the hard one (raise_nofile): both */
	rl.rlim_cur = rl.rlim_max = holder_fd_room(2);	/* node03's dial has none */
	ck_assert_int_eq(prlimit(mux_pid, RLIMIT_NOFILE, &rl, NULL), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 1);
	ck_assert_msg(strstr(out, "node03: failed: connection holder out of file descriptors (raise "
	    "its ulimit -n): socket: ") != NULL, "%s", out);
	log = cu_slurp(mux_err);
	ck_assert_msg(strstr(log, "changed: closing every link") == NULL, "%s", log);
	free(log);
	free(out);
	free(err);
}
END_TEST

/* Start a holder with ARGS and serve one ping through it. */
static void
holder_with(const char *args)
{
	char *out = NULL, *err = NULL;

	mux_pid = harness_mux_start(&h, mux_err, "--log-level info mux %s", args);
	ck_assert_msg(mux_pid > 0, "%s", cu_slurp(mux_err));
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_int_eq(via(err, "node01"), 0);
	free(out);
	free(err);
}

/* How the holder ends: SIGTERM and an idle --persist are exit 0 with the
 * socket gone; --persist 0 has no idle exit (knob-mux.service runs it so)
 * and serves a command with a long --connect-timeout; a bad --persist is
 * a usage error. */
START_TEST(persist_and_exit_status)
{
	char *out = NULL, *err = NULL, *log;
	int st = -1;

	kill(mux_pid, SIGTERM);
	ck_assert_int_eq(cu_reap(mux_pid), 0);
	mux_pid = 0;
	ck_assert_int_eq(access(sock, F_OK), -1);
	holder_with("--persist 1");
	ck_assert_msg(cu_wait(holder_exited, &st, 20) >= 0, "--persist 1: still running");
	ck_assert_int_eq(st, 0);
	log = cu_slurp(mux_err);
	ck_assert_msg(strstr(log, "1 s without a command: exiting"), "%s", log);
	free(log);
	ck_assert_int_eq(access(sock, F_OK), -1);
	holder_with("--persist 0");
	/* nothing to wait for: an exit that must not come, over 3 times the
	 * idle time the holder above left after */
	ck_assert_msg(cu_wait(holder_exited, &st, 3) < 0, "--persist 0 exited (%d)", st);
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_int_eq(via(err, "node01"), 1);
	/* any --connect-timeout knobctl takes, the holder takes too */
	ck_assert_int_eq(ctl(&out, &err, "--connect-timeout 7200 ping -a"), 0);
	ck_assert_int_eq(via(err, "node01"), 1);
	for (int i = 0; i < 3; i++) {
		static const char *const bad[] = { "-1", "", "2592001" };

		ck_assert_int_eq(ctl(&out, &err, "mux --persist '%s'", bad[i]), 2);
		ck_assert_msg(strstr(err, "--persist: seconds, 0 (never) to 2592000"), "%s", err);
	}
	free(out);
	free(err);
}
END_TEST

/* Has the peer of unix socket *(int *)arg read all we sent (SIOCOUTQ)? */
static int
sent_all_read(void *arg)
{
	int n = -1;

	return ioctl(*(int *)arg, SIOCOUTQ, &n) == 0 && n == 0;
}

/* The holder's CPU time so far (user + system, clock ticks). */
#define MUX_TICKS() harness_sh_int("awk '{print $14 + $15}' /proc/%d/stat", (int)mux_pid)

#define HOLDER_HIGH (4l << 20)	/* MUX_CHAN_HIGH in controller/cmd_mux.c */
#define FACTS_BATCH 20		/* requests per node at a time: the agent queues 64 */
#define SLOW_MOUNTS 1000	/* in the agents' mounts: large facts */

/* A channel that asks for facts and does not read. */
struct slow_chan {
	int fd;
	uint8_t *req;		/* a facts request's frame body */
	size_t reqlen, reply;	/* its length; a reply's, as the channel gets it */
	long sent[NNODES];	/* requests per node */
	long want;		/* reply bytes asked for so far */
};

/* Ask each node for FACTS_BATCH more facts over sc, in one write. */
static void
slow_ask(struct slow_chan *sc)
{
	uint8_t buf[NNODES * FACTS_BATCH * 64], *b = buf;

	ck_assert_uint_le(9 + sc->reqlen, 64);
	for (uint32_t i = 0; i < NNODES; i++)
		for (int k = 0; k < FACTS_BATCH; k++, sc->sent[i]++) {
			size_t n = 5 + sc->reqlen;

			b[0] = (uint8_t)(n >> 24); b[1] = (uint8_t)(n >> 16);
			b[2] = (uint8_t)(n >> 8); b[3] = (uint8_t)n;
			b[4] = 'F';
			b[5] = b[6] = b[7] = 0; b[8] = (uint8_t)i;
			memcpy(b + 9, sc->req, sc->reqlen);
			b += 9 + sc->reqlen;
		}
	ck_assert_int_eq(write(sc->fd, buf, (size_t)(b - buf)), b - buf);
	sc->want += NNODES * FACTS_BATCH * (long)sc->reply;
}

/* Has every reply sc asked for reached the holder's queue or sc's
 * socket, or are sc's links held? */
static int
slow_answered(void *arg)
{
	struct slow_chan *sc = arg;
	int unread = 0;

	if (holder_figure(" held ") > 0)
		return 1;
	(void)ioctl(sc->fd, FIONREAD, &unread);
	return holder_figure(" queued ") + unread >= sc->want;
}

/* Back-pressure: a channel asks three nodes for facts (1000 mounts each),
 * batch after batch, and does not read.  Once the holder's queue for it passes HOLDER_HIGH
 * its links are held ("held 1"), and asked for more it stays within one
 * reply of that; a ping through the holder is answered meanwhile; read
 * at last, every reply comes, whole.  Before, the queue grew with every
 * reply (to MUX_QUEUE, 256 MiB, where the channel was dropped). */
static void
slow_channel_held(void)
{
	struct slow_chan sc = { .fd = mux_dial() };
	Knob__FactsRequest fr = KNOB__FACTS_REQUEST__INIT;
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *e;
	char *out = NULL, *err = NULL, line[128], type, *buf = xmalloc(FRAME_MAX + 16), ebuf[128];
	long got[NNODES] = { 0 }, queued;
	uint8_t *frame;
	size_t len;
	uint32_t id;
	ssize_t n;

	for (size_t k = 0, o = 0; k < SLOW_MOUNTS; k++)	/* facts of ~40 KiB */
		o += (size_t)snprintf(buf + o, FRAME_MAX - o, "/dev/vd%zu /srv/data/%zu xfs "
		    "rw,relatime,attr2,inode64 0 0\n", k, k);
	for (int i = 0; i < NNODES; i++)
		cu_write_at(h.node[i].sysroot, "/proc/self/mounts", 0644, "%s", buf);
	env.body_case = KNOB__ENVELOPE__BODY_FACTS_REQUEST;
	env.facts_request = &fr;
	ck_assert_int_eq(frame_pack(&env, &frame, &len), 0);
	sc.req = frame + 4;
	sc.reqlen = len - 4;
	ck_assert_int_eq(write(sc.fd, "chan\n", 5), 5);
	for (int i = 0; i < NNODES; i++) {
		snprintf(line, sizeof(line), "%s %s 7420 5", h.node[i].name, h.node[i].addr);
		hub_msg(sc.fd, 'O', (uint32_t)i, line, strlen(line));
	}
	ck_assert_int_eq(hub_flush(sc.fd), 0);
	for (int i = 0; i < NNODES; i++) {
		ck_assert_int_ge(hub_read(sc.fd, &type, &id, buf, FRAME_MAX + 16), 0);
		ck_assert_int_eq(type, 'K');
	}
	hub_msg(sc.fd, 'F', 0, sc.req, sc.reqlen);	/* one reply, to know its size */
	ck_assert_int_eq(hub_flush(sc.fd), 0);
	ck_assert_int_gt(n = hub_read(sc.fd, &type, &id, buf, FRAME_MAX + 16), 0);
	ck_assert_int_eq(type, 'F');
	sc.reply = (size_t)n + 9;
	sc.sent[0] = got[0] = 1;
	for (int b = 0; sc.want < 2 * HOLDER_HIGH; b++) {
		slow_ask(&sc);
		ck_assert_msg(cu_wait(slow_answered, &sc, 10) >= 0, "the agents did not answer");
		if (holder_figure(" held ") > 0)
			break;
	}
	slow_ask(&sc);	/* more, while held: they wait at the agents */
	ck_assert_int_eq(ctl(&out, &err, "ping -a"), 0);
	ck_assert_int_ge(via(err, "node01"), 0);
	queued = holder_figure(" queued ");
	printf("slow channel: %zu-byte replies, %ld bytes asked for, the holder queued %ld, "
	    "held %ld\n", sc.reply, sc.want, queued, holder_figure(" held "));
	ck_assert_msg(queued > HOLDER_HIGH / 2 && queued <= HOLDER_HIGH + (long)sc.reply,
	    "the holder queued %ld bytes for a channel that does not read (bound %ld)", queued,
	    HOLDER_HIGH);
	ck_assert_int_eq(holder_figure(" held "), 1);
	while (got[0] + got[1] + got[2] < sc.sent[0] + sc.sent[1] + sc.sent[2]) {
		ck_assert_int_ge(n = hub_read(sc.fd, &type, &id, buf, FRAME_MAX + 16), 0);
		ck_assert_int_eq(type, 'F');
		ck_assert_uint_lt(id, NNODES);
		e = frame_unpack((uint8_t *)buf, (size_t)n, ebuf, sizeof(ebuf));
		ck_assert_msg(e != NULL && e->body_case == KNOB__ENVELOPE__BODY_FACTS, "%s", ebuf);
		knob__envelope__free_unpacked(e, NULL);
		got[id]++;
	}
	for (int i = 0; i < NNODES; i++)
		ck_assert_int_eq(got[i], sc.sent[i]);
	ck_assert_int_eq(holder_figure(" held "), 0);
	close(sc.fd);
	free(frame);
	free(buf);
	free(out);
	free(err);
}

/* A first line that comes in parts: the holder used to peek at it and
 * find no newline, again and again while the part stayed readable (199
 * ticks in 2 s).  A channel that says "cha" and no more costs the holder
 * no CPU while it waits (measured over the 2 s after it was sent; the
 * holder has taken the bytes in by then; its 10 s sweep of silent channels is silent_flood's
 * to test); one that says "sta", which the holder takes in, then "tus\n",
 * gets its status line. */
START_TEST(partial_first_line)
{
	char line[MUX_LINE];
	long t0, ticks;
	int fd = mux_dial(), fd2;

	t0 = MUX_TICKS();
	ck_assert_int_eq(write(fd, "cha", 3), 3);
	(void)poll(NULL, 0, 2000);	/* the measurement window, not a wait for an event */
	ticks = MUX_TICKS() - t0;
	printf("partial first line: the holder used %ld ticks in 2 s\n", ticks);
	ck_assert_msg(ticks < sysconf(_SC_CLK_TCK) / 5, "the holder used %ld ticks in 2 s", ticks);
	ck_assert_msg(sent_all_read(&fd), "the holder left \"cha\" unread");
	ck_assert_msg(!at_eof(&fd), "the channel was closed before the holder's 10 s");
	close(fd);
	fd2 = mux_dial();
	ck_assert_int_eq(write(fd2, "sta", 3), 3);
	ck_assert_msg(cu_wait(sent_all_read, &fd2, 10) >= 0, "the holder left \"sta\" unread");
	ck_assert_int_eq(write(fd2, "tus\n", 4), 4);
	ck_assert_int_eq(read_all_line(fd2, line, sizeof(line)), 0);
	ck_assert_msg(strncmp(line, "links ", 6) == 0, "%s", line);
	close(fd2);
	slow_channel_held();
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("mux");
	TCase *tc = tcase_create("holder");

	tcase_add_unchecked_fixture(tc, net_setup, harness_net_unshare);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, reuse_links);
	tcase_add_test(tc, tune_roundtrip);
	tcase_add_test(tc, busy_retried_via_holder);
	tcase_add_test(tc, unreachable_and_restart);
	tcase_add_test(tc, timeout_drops_link);
	tcase_add_test(tc, bad_input_and_private_socket);
	tcase_add_test(tc, trust_change_stops_holder);
	tcase_add_test(tc, expired_agent_cert);
	tcase_add_test(tc, expired_controller_cert);
	tcase_add_test(tc, restarted_holder_resumes);
	tcase_add_test(tc, holder_saves_its_tickets);
	tcase_add_test(tc, stuck_save_serves_on);
	tcase_add_test(tc, failed_save_retried);
	tcase_add_test(tc, endless_save_exit_bounded);
	tcase_add_test(tc, persist_and_exit_status);
	tcase_add_test(tc, one_idle_link_per_node);
	tcase_add_test(tc, done_with_request_out);
	tcase_add_test(tc, out_of_descriptors);
	tcase_add_test(tc, holder_out_of_descriptors);
	tcase_add_test(tc, silent_flood);
	tcase_add_test(tc, holder_killed_mid_command);
	tcase_add_test(tc, second_holder_refused);
	tcase_add_test(tc, long_dial_serves_others);
	tcase_add_test(tc, waiting_takes_freed_link);
	tcase_add_test(tc, alive_node_not_behind_dead_dial);
	tcase_add_test(tc, sigterm_during_dial);
	tcase_add_test(tc, knobctl_side);
	tcase_add_test(tc, hung_holder_bounded);
	tcase_add_test(tc, holder_of_another_uid);
	tcase_add_test(tc, partial_first_line);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
