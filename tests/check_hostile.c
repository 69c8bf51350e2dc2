/* A hostile node against knobctl and the connection holder (knobctl mux):
 * node01 and node02 are real knobd agents; node03 is a stand-in TLS server
 * in this program (a child in node03's namespace, on its address and
 * port, with node03's real certificate: what an attacker who owns node03
 * holds), which answers each request as the case says:
 *
 * - a reply of the wrong type (Facts to a ping, Pong to anything else),
 *   a reply to a request id never sent, a stream of progress frames;
 * - a frame that announces FRAME_MAX or more; Facts with a million empty
 *   block devices (2 MB that protobuf-c would make ~150 MB of);
 * - a Pong whose version string carries terminal escapes;
 * - a reply dribbled a byte at a time (--timeout 1 must end it);
 * - a good reply, then a reset.
 *
 * Each case runs ping (and facts, apply, verify for the wrong type)
 * directly and through the holder (and sweep, direct only, against the
 * stream): node03 must be reported with a clear
 * reason while node01 and node02 finish, the exit status must say so, and
 * nothing the node sent may reach the admin's terminal raw. */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/sockios.h>
#include <openssl/ssl.h>

#include "harness.h"
#include "tls.h"
#include "testutil.h"
#include "util.h"
#include "wire.h"

#define NNODES 3
#define EVIL 2			/* node03 */

enum mode { M_WRONG_TYPE, M_WRONG_ID, M_PROGRESS, M_HUGE, M_MANY, M_ANSI, M_DRIBBLE, M_RESET };

#define MANY 1000000		/* M_MANY: empty block devices in one Facts (2 MB) */

static struct harness h;
static pid_t mux_pid;
static char mux_err[PATH_MAX];
static SSL_CTX *evil_ctx;	/* the stand-in's: node03's certificate */
static enum mode evil_mode;	/* set before the stand-in forks */

/* Real agents on node01 and node02 (a fake /proc/sys each: apply writes
 * there), none on node03, a holder in the controller's namespace. */
static void
setup(void)
{
	char ca[PATH_MAX + 16], cert[PATH_MAX + 16], key[PATH_MAX + 16], err[256];

	ck_assert_int_eq(harness_start(&h, NNODES, 0), 0);
	for (int i = 0; i < EVIL; i++) {
		snprintf(h.node[i].sysroot, sizeof(h.node[i].sysroot), "%s/root%d", h.tmp, i);
		cu_write_at(h.node[i].sysroot, "/proc/sys/vm/dirty_ratio", 0644, "20\n");
		ck_assert_int_eq(harness_agent_start(&h, i), 0);
	}
	snprintf(ca, sizeof(ca), "%s/ca.crt", h.ca_dir);
	snprintf(cert, sizeof(cert), "%s/node03.crt", h.ca_dir);
	snprintf(key, sizeof(key), "%s/node03.key", h.ca_dir);
	evil_ctx = tls_ctx_new(1, ca, cert, key, err, sizeof(err));
	ck_assert_msg(evil_ctx != NULL, "%s", err);
	snprintf(mux_err, sizeof(mux_err), "%s/mux.err", h.tmp);
	mux_pid = harness_mux_start(&h, mux_err, "--log-level info mux --persist 300");
	ck_assert_msg(mux_pid > 0, "knobctl mux did not start: %s", cu_slurp(mux_err));
}

static void
teardown(void)
{
	if (mux_pid > 0) {
		kill(mux_pid, SIGTERM);
		cu_reap(mux_pid);
		mux_pid = 0;
	}
	SSL_CTX_free(evil_ctx);
	evil_ctx = NULL;
	harness_stop(&h);
}

/* Write env as one frame, or (dribble) a byte at a time, 200 ms apart
 * (SSL_write may take part: the context allows partial writes).  0, or
 * -1 when the peer went. */
static int
evil_put(SSL *ssl, Knob__Envelope *env, int dribble)
{
	uint8_t *f;
	size_t len, off = 0;
	int w = 1;

	ck_assert_int_eq(frame_pack(env, &f, &len), 0);
	while (off < len && (w = SSL_write(ssl, f + off, dribble ? 1 : (int)(len - off))) > 0) {
		off += (size_t)w;
		if (dribble)
			poll(NULL, 0, 200);
	}
	free(f);
	return w > 0 ? 0 : -1;
}

/* The stand-in's answer to req, as evil_mode says. */
static void
evil_answer(SSL *ssl, const Knob__Envelope *req)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Pong pong = KNOB__PONG__INIT;
	Knob__Facts facts = KNOB__FACTS__INIT;
	Knob__PhaseProgress prog = KNOB__PHASE_PROGRESS__INIT;
	Knob__BlockDevFacts dev = KNOB__BLOCK_DEV_FACTS__INIT;
	static const uint8_t huge[4] = { 0xff, 0xff, 0xff, 0xff };
	static char node[] = "node03", version[] = "9.9";
	static char escapes[] = "9.9\033[2J\033]0;owned\007\033[31m";

	env.id = req->id;
	env.body_case = KNOB__ENVELOPE__BODY_PONG;
	env.pong = &pong;
	pong.node = node;
	pong.agent_version = version;
	switch (evil_mode) {
	case M_WRONG_TYPE:
		if (req->body_case == KNOB__ENVELOPE__BODY_PING) {
			env.body_case = KNOB__ENVELOPE__BODY_FACTS;
			env.facts = &facts;
		}
		break;
	case M_WRONG_ID:
		env.id = req->id + 7;
		break;
	case M_PROGRESS:	/* until the peer goes */
		env.body_case = KNOB__ENVELOPE__BODY_PHASE_PROGRESS;
		env.phase_progress = &prog;
		while (evil_put(ssl, &env, 0) == 0)
			prog.bytes++;
		return;
	case M_HUGE:
		(void)SSL_write(ssl, huge, sizeof(huge));
		return;
	case M_MANY:		/* to a facts request */
		facts.n_blockdevs = MANY;
		facts.blockdevs = xcalloc(MANY, sizeof(*facts.blockdevs));
		for (size_t i = 0; i < MANY; i++)
			facts.blockdevs[i] = &dev;
		env.body_case = KNOB__ENVELOPE__BODY_FACTS;
		env.facts = &facts;
		(void)evil_put(ssl, &env, 0);
		free(facts.blockdevs);
		return;
	case M_ANSI:
		pong.agent_version = escapes;
		break;
	default:
		break;
	}
	(void)evil_put(ssl, &env, evil_mode == M_DRIBBLE);
}

/* Reset fd once the peer has acknowledged all we sent (an RST discards
 * what is still queued: the answer must have left). */
static void
evil_reset(int fd)
{
	struct linger lg = { 1, 0 };
	int queued = 1;

	for (int i = 0; i < 500 && ioctl(fd, SIOCOUTQ, &queued) == 0 && queued > 0; i++)
		poll(NULL, 0, 10);
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* One connection: the handshake, the request, the answer; then wait until
 * the peer closes (at most 5 s), or (M_RESET) reset at once. */
static void
evil_serve(int fd)
{
	struct timeval tv = { 5, 0 };
	Knob__Envelope *req = NULL;
	struct conn c;
	SSL *ssl = SSL_new(evil_ctx);
	char b;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_accept(ssl) != 1) {
		SSL_free(ssl);
		return;
	}
	conn_init(&c, fd, fd, ssl);
	if (conn_recv_sync(&c, &req, 5000) == 1) {
		evil_answer(ssl, req);
		knob__envelope__free_unpacked(req, NULL);
		if (evil_mode == M_RESET)
			evil_reset(fd);
		else
			while (SSL_read(ssl, &b, 1) > 0)
				;
	}
	conn_reset(&c);
}

/* harness_child fn: node03's port, one connection at a time until stop;
 * the connections served. */
static int
evil_agent(int ready, int stop)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(7420) };
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), served = 0;

	signal(SIGPIPE, SIG_IGN);
	inet_pton(AF_INET, h.node[EVIL].addr, &sa.sin_addr);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 64) < 0 ||
	    write(ready, "", 1) != 1)
		_exit(1);
	for (;;) {
		struct pollfd pf[2] = { { .fd = lfd, .events = POLLIN }, { .fd = stop, .events = POLLIN } };
		int fd;

		if (poll(pf, 2, -1) < 0 || pf[1].revents)
			return served;
		if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
			continue;
		evil_serve(fd);
		close(fd);
		served++;
	}
}

/* Run "knobctl [--no-mux] --timeout 1 ARGS" (--no-mux when direct): the
 * good nodes must be ok and node03's line must carry why; exit status
 * want.  The seconds it took. */
static double
run_case(int direct, int want, const char *why, const char *args)
{
	char *out = NULL;
	uint64_t t0 = now_mono_ns();
	int rc;

	rc = harness_knobctl_logged(&h, &out, "%s--timeout 1 --connect-timeout 2 %s",
	    direct ? "--no-mux " : "", args);
	ck_assert_msg(rc == want, "%s%s: exit %d, not %d:\n%s", direct ? "direct " : "via holder ",
	    args, rc, want, out ? out : "");
	ck_assert_msg(out && strstr(out, why), "%s: no \"%s\" in:\n%s", args, why, out ? out : "");
	/* node01 and node02 folded together: the same good answer */
	ck_assert_msg(want == 0 ? strstr(out, "3 ok") != NULL : strstr(out, "node[01-02] (2)") &&
	    (strstr(out, ", 1 failed (node03)") || strstr(out, ", 1 timeout (node03)")),
	    "%s: node01 and node02 not both ok:\n%s", args, out);
	ck_assert_msg(strchr(out, '\033') == NULL && strchr(out, '\007') == NULL,
	    "%s: a raw escape reached the terminal:\n%s", args, out);
	free(out);
	return (double)(now_mono_ns() - t0) / 1e9;
}

/* The holder is still running and serves the good nodes. */
static void
holder_alive(void)
{
	ck_assert_msg(waitpid(mux_pid, NULL, WNOHANG) == 0, "the holder died:\n%s",
	    cu_slurp(mux_err));
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node[01-02]"), 0);
}

/* Start the stand-in in mode m, run each command direct then via the
 * holder, stop it. */
static void
against(enum mode m, int want, const char *why, const char *const *cmds)
{
	struct harness_child c;

	evil_mode = m;
	harness_child_start(&c, h.node[EVIL].ns, evil_agent);
	for (size_t i = 0; cmds[i] != NULL; i++)
		for (int direct = 1; direct >= 0; direct--)
			(void)run_case(direct, want, why, cmds[i]);
	ck_assert_int_gt(harness_child_end(&c), 0);
	holder_alive();
}

static const char *const ping_all[] = { "ping -a", NULL };
static const char *const facts_all[] = { "facts -a", NULL };

START_TEST(wrong_type_fails)
{
	char prof[PATH_MAX + 16], apply[PATH_MAX + 32];
	const char *rest[] = { "facts -a", apply, "verify -a", NULL };

	snprintf(prof, sizeof(prof), "%s/p.xml", h.tmp);
	cu_write(prof, 0644, "%s", "<?xml version=\"1.0\"?>\n<profile name=\"p\" summary=\"p\">\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"33\"/>\n</profile>\n");
	snprintf(apply, sizeof(apply), "apply %s -a", prof);
	against(M_WRONG_TYPE, 1, "agent answered ping with facts, not pong", ping_all);
	against(M_WRONG_TYPE, 1, "with pong, not", rest);
}
END_TEST

/* The cases that need nothing but the stand-in's mode: a loop test. */
static const struct {
	enum mode mode;
	int want;
	const char *why;
	const char *const *cmds;
} cases[] = {
	{ M_WRONG_ID, 1, "which was never sent", ping_all },
	{ M_PROGRESS, 1, "agent answered ping with phase_progress, not pong", ping_all },
	{ M_HUGE, 1, "exceeds the 16777216 byte cap", ping_all },
	{ M_MANY, 1, "would decode to more than", facts_all },
	{ M_ANSI, 0, "9.9\\x1b[2J", ping_all },
	{ M_RESET, 0, "pong (knobd 9.9)", ping_all },
};

START_TEST(hostile_case)
{
	against(cases[_i].mode, cases[_i].want, cases[_i].why, cases[_i].cmds);
}
END_TEST

START_TEST(dribble_timed_out)
{
	struct harness_child c;

	evil_mode = M_DRIBBLE;
	harness_child_start(&c, h.node[EVIL].ns, evil_agent);
	for (int direct = 1; direct >= 0; direct--)
		ck_assert_double_lt(run_case(direct, 1, "no reply within 1.0s", "ping -a"), 4.0);
	ck_assert_int_gt(harness_child_end(&c), 0);
	holder_alive();
}
END_TEST

/* knobctl sweep ignored frames it did not ask for, and each moved the
 * node's deadline: a node streaming them held the sweep for ever. */
START_TEST(sweep_stream_ends)
{
	struct harness_child c;
	uint64_t t0;
	char *out = NULL;
	int rc;

	evil_mode = M_PROGRESS;
	harness_child_start(&c, h.node[EVIL].ns, evil_agent);
	t0 = now_mono_ns();
	rc = harness_knobctl_logged(&h, &out, "--timeout 1 sweep -a");
	ck_assert_double_lt((double)(now_mono_ns() - t0) / 1e9, 4.0);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(out && strstr(out, "node03: agent fail (") &&
	    strstr(out, "agent sent phase_progress, not pong"), "%s", out ? out : "");
	free(out);
	ck_assert_int_gt(harness_child_end(&c), 0);
}
END_TEST

static Suite *
hostile_suite(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc = cu_tcase("hostile", setup, teardown, 60);

	tcase_add_test(tc, wrong_type_fails);
	tcase_add_loop_test(tc, hostile_case, 0, (int)nitems(cases));
	tcase_add_test(tc, dribble_timed_out);
	tcase_add_test(tc, sweep_stream_ends);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return cu_run(hostile_suite());
}
