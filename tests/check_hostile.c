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
 * nothing the node sent may reach the admin's terminal raw.
 *
 * As a bench node (knobctl bench, direct: the holder does not carry
 * benches) the stand-in answers the clock-sync pings and the prepare and
 * then, after GO, streams progress with moving counts for ever, or counts
 * that change without rising, or reports 9 GiB done of a 64 KiB phase (in
 * its progress, or in its result), or says for ever that it is still
 * removing the phase's files, or that every thread is done and nothing
 * more, or results of another phase and failed answers to releases never
 * asked for (each was an entry in cleanup_failed); or streams frames instead of pongs, or streams after its phase was aborted:
 * the run must end within its bound (bench_time_bounded,
 * bench_count_bounded). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/sockios.h>
#include <json-c/json.h>
#include <openssl/ssl.h>

#include "harness.h"
#include "tls.h"
#include "testutil.h"
#include "util.h"
#include "wire.h"

#define NNODES 3
#define EVIL 2			/* node03 */

enum mode { M_WRONG_TYPE, M_WRONG_ID, M_PROGRESS, M_HUGE, M_MANY, M_ANSI, M_DRIBBLE, M_RESET,
	/* a bench node: pongs, Ready, then after GO (bench_stream) */
	M_B_RUN,		/* progress with moving counts, for ever */
	M_B_FLAP,		/* progress whose ops go 1, 2, 1, 2: changing, never rising */
	M_B_DONE,		/* progress of every thread done, for ever: no first
				 * thread's end, no result */
	M_B_BEYOND,		/* progress of 9 GiB done */
	M_B_RESULT,		/* a result of 9 GiB done */
	M_B_RELEASE,		/* a result of nothing, then "still removing" for ever */
	M_B_SPAM,		/* results of another phase that could not remove its
				 * files, and answers to releases never asked for that
				 * could not either, for ever */
	M_B_NOSYNC,		/* progress frames instead of pongs */
	M_B_ABORTED,		/* M_B_FLAP's progress after its phase was aborted (the
				 * others' prepare failed: bench_cases' dir is not there) */
};

#define M_BENCH M_B_RUN		/* the modes from here on are a bench node's */
#define NINE_GIB (9ull << 30)

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
	harness_mux_stop(&mux_pid);
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

/* What the stand-in bench node knows of its phase. */
struct evil_phase {
	char phase_id[80], workdir[80];
	uint32_t rank;			/* its first rank */
	int go, release;		/* GO came; a release came */
	uint64_t go_id, rel_id, k;	/* the requests they came in; frames streamed */
};

/* Its answer to a ping: a pong with the clocks (M_B_NOSYNC: none, its
 * stream begins instead). */
static int
bench_pong(SSL *ssl, const Knob__Envelope *req, struct evil_phase *ph)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Pong pong = KNOB__PONG__INIT;
	static char node[] = "node03", version[] = "9.9";

	if (evil_mode == M_B_NOSYNC) {
		ph->go = 1;
		return 0;
	}

	env.id = req->id;
	env.body_case = KNOB__ENVELOPE__BODY_PONG;
	env.pong = &pong;
	pong.node = node;
	pong.agent_version = version;
	pong.t_echo_ns = req->ping->t_send_ns;
	pong.agent_time_ns = now_real_ns();
	return evil_put(ssl, &env, 0);
}

/* Its Ready to a prepare (it keeps the phase's ids and its first rank). */
static int
bench_ready(SSL *ssl, const Knob__Envelope *req, struct evil_phase *ph)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseReady rd = KNOB__PHASE_READY__INIT;
	const Knob__PhaseSpec *sp = req->phase_prepare->spec;
	static char node[] = "node03";

	snprintf(ph->phase_id, sizeof(ph->phase_id), "%s", sp->phase_id);
	snprintf(ph->workdir, sizeof(ph->workdir), "%s", sp->workdir_id);
	ph->rank = sp->n_ranks ? sp->ranks[0] : 0;
	env.id = req->id;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_READY;
	env.phase_ready = &rd;
	rd.phase_id = ph->phase_id;
	rd.ok = 1;
	rd.node = node;
	rd.threads = (uint32_t)sp->n_ranks;
	return evil_put(ssl, &env, 0);
}

/* Its result of the phase: of nothing done (M_B_RELEASE), or of 9 GiB
 * (M_B_RESULT), one thread. */
static int
bench_result(SSL *ssl, struct evil_phase *ph)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseResult r = KNOB__PHASE_RESULT__INIT;
	Knob__ThreadResult t = KNOB__THREAD_RESULT__INIT, *tp = &t;
	static char node[] = "node03";

	t.rank = ph->rank;
	t.start_ns = now_real_ns();
	t.end_ns = t.start_ns + 1000000;
	if (evil_mode == M_B_RESULT) {
		t.bytes = NINE_GIB;
		t.ops = NINE_GIB / 4096;
	}
	r.phase_id = ph->phase_id;
	r.ok = 1;
	r.node = node;
	r.start_ns = t.start_ns;
	r.end_ns = t.end_ns;
	r.bytes = t.bytes;
	r.ops = t.ops;
	r.n_threads = 1;
	r.threads = &tp;
	env.id = ph->go_id;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_RESULT;
	env.phase_result = &r;
	return evil_put(ssl, &env, 0);
}

/* M_B_SPAM's frame k: a result of another phase whose clean-up failed, or
 * a failed answer to a release never asked for. */
static int
bench_spam(SSL *ssl, struct evil_phase *ph)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseResult r = KNOB__PHASE_RESULT__INIT;
	static char other[] = "p-other", wd[] = "w-other", err[] = "left: everything";

	env.body_case = KNOB__ENVELOPE__BODY_PHASE_RESULT;
	env.phase_result = &r;
	env.id = ph->go_id;
	if (ph->k % 2)
		r.released_workdir = wd;
	else
		r.phase_id = other;
	r.cleanup_error = r.error = err;
	return evil_put(ssl, &env, 0);
}

/* One frame of the stream the mode says, once GO (or the release) came. */
static int
bench_stream(SSL *ssl, struct evil_phase *ph)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhaseProgress pg = KNOB__PHASE_PROGRESS__INIT;
	static char none[] = "";

	if (!ph->go || (evil_mode == M_B_RELEASE && !ph->release))
		return 0;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_PROGRESS;
	env.phase_progress = &pg;
	env.id = ph->go_id;
	pg.phase_id = ph->phase_id;
	pg.agent_time_ns = now_real_ns();
	ph->k++;
	if (evil_mode == M_B_SPAM)
		return bench_spam(ssl, ph);
	if (evil_mode == M_B_RELEASE) {
		env.id = ph->rel_id;
		pg.phase_id = none;
		pg.releasing_workdir = ph->workdir;
		pg.release_removed = ph->k;
	} else if (evil_mode == M_B_FLAP || evil_mode == M_B_ABORTED) {
		pg.ops = 1 + ph->k % 2;
		pg.bytes = pg.ops * 4096;
	} else if (evil_mode == M_B_DONE) {
		pg.ops = 16;
		pg.bytes = 65536;
		pg.threads_done = 1;
	} else {
		pg.ops = ph->k;
		pg.bytes = evil_mode == M_B_BEYOND ? NINE_GIB : ph->k * 4096;
	}
	return evil_put(ssl, &env, 0);
}

/* The stand-in's answer to a bench request: pong, Ready, and on GO the
 * result (M_B_RESULT, M_B_RELEASE) or the start of the stream; a release
 * starts M_B_RELEASE's.  Other requests are not answered. */
static int
bench_answer(SSL *ssl, const Knob__Envelope *req, struct evil_phase *ph)
{
	switch (req->body_case) {
	case KNOB__ENVELOPE__BODY_PING:
		return bench_pong(ssl, req, ph);
	case KNOB__ENVELOPE__BODY_PHASE_PREPARE:
		return bench_ready(ssl, req, ph);
	case KNOB__ENVELOPE__BODY_PHASE_GO:
		if (req->phase_go->wearout || req->phase_go->first_done || ph->go)
			return 0;
		ph->go = 1;
		ph->go_id = req->id;
		return evil_mode == M_B_RESULT || evil_mode == M_B_RELEASE ?
		    bench_result(ssl, ph) : 0;
	case KNOB__ENVELOPE__BODY_PHASE_ABORT:
		if (req->phase_abort->workdir_id[0] && !ph->release) {
			ph->release = 1;
			ph->rel_id = req->id;
		} else if (evil_mode == M_B_ABORTED)
			ph->go = 1;	/* its stream instead of an answer */
		return 0;
	default:
		return 0;
	}
}

/* The next request within ms, read with the socket non-blocking (conn_recv
 * reads until there is no more: on a blocking socket it would wait for
 * the next frame); writes stay blocking.  1, 0 (none came), -1. */
static int
bench_recv(struct conn *c, Knob__Envelope **req, int ms)
{
	int fl = fcntl(c->rfd, F_GETFL), r;

	ck_assert_int_eq(fcntl(c->rfd, F_SETFL, fl | O_NONBLOCK), 0);
	r = conn_recv_sync(c, req, ms);
	ck_assert_int_eq(fcntl(c->rfd, F_SETFL, fl), 0);
	return r;
}

/* A bench conversation from its first request req (freed here): each
 * request answered, and once the stream began a frame each 50 ms (the
 * wait for the next request), until the peer goes or 30 s passed. */
static void
evil_bench(SSL *ssl, struct conn *c, Knob__Envelope *req)
{
	struct evil_phase ph = { .go = 0 };
	uint64_t end = now_mono_ns() + 30000000000ull;
	int r = 1;

	while (r >= 0 && now_mono_ns() < end) {
		if (r == 1) {
			r = bench_answer(ssl, req, &ph);
			knob__envelope__free_unpacked(req, NULL);
			req = NULL;
			if (r < 0)
				break;
		}
		if (bench_stream(ssl, &ph) < 0)
			break;
		r = bench_recv(c, &req, ph.go ? 50 : 5000);
	}
	if (req)
		knob__envelope__free_unpacked(req, NULL);
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
	if (conn_recv_sync(&c, &req, 5000) == 1 && evil_mode >= M_BENCH)
		evil_bench(ssl, &c, req);
	else if (req) {
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

/* A bench against the stand-in as node03 (its real certificate; it
 * answers pings and the prepare, then what the mode says), node01 and
 * node02 real agents: seq-write, 3 threads of 4 KiB blocks, so node03
 * has rank 2.  Each stand-in once held the run for ever: its frames kept
 * the connection's deadline moving, and nothing bounded what it
 * reported.  Now it is ended as failed within the bound, with its words;
 * the phase is recorded with the real agents' figures, degraded (after
 * M_B_RELEASE's result, of nothing, the phase is over: its words are in
 * the clean-up's; M_B_ABORTED's phase failed on the real agents); node03's
 * files are named as maybe left (not M_B_NOSYNC's: it never had ranks);
 * exit 1.  The first TIME_CASES are bench_time_bounded's, the others
 * bench_count_bounded's (two tests: one harness for several runs). */
static const struct {
	enum mode mode;
	const char *args;	/* sizes and bounds */
	const char *why;	/* node03's error, after "node03: failed: " */
	double within;		/* seconds the run may take (well under the stand-in's
				 * 30 s: it took those before) */
	int released;		/* ended in the release: why is in its clean-up entry */
} bench_cases[] = {
	/* moving counts, never a result: a 1 s phase, 2 s stall limit */
	{ M_B_RUN, "--size 64k --runtime 1 --stall-timeout 2",
	  "still running 3 s into a 1 s phase (--runtime), past that and the 2 s stall limit",
	  15, 0 },
	/* ops that change and never rise are no progress */
	{ M_B_FLAP, "--size 64k --stall-timeout 2", "stalled: no progress for 2 s: I/O stuck?", 15, 0 },
	/* all done, so waiting for us (it was, for ever), but it never said
	 * when its first thread ended, which is what we would wait for */
	{ M_B_DONE, "--size 64k --stall-timeout 2", "stalled: no progress for 2 s: I/O stuck?", 15, 0 },
	{ M_B_NOSYNC, "--size 64k", "no answer to the clock-sync ping within 2.0 s", 15, 0 },
	{ M_B_ABORTED, "--size 64k --stall-timeout 2", "no answer to the abort for 2 s", 15, 0 },
	{ M_B_BEYOND, "--size 64k", "reported 9663676416 bytes in a seq-write phase that allows "
	  "it 64k (1 rank x 64k): not an agent's count", 10, 0 },
	{ M_B_RESULT, "--size 64k", "its result says 9663676416 bytes in a seq-write phase that "
	  "allows it 64k (1 rank x 64k): not an agent's count", 10, 0 },
	/* ignored, each of them, while it stalls (no entry into cleanup_failed:
	 * a flood of them grew the run's document without bound) */
	{ M_B_SPAM, "--size 64k --stall-timeout 2", "stalled: no progress for 2 s: I/O stuck?",
	  12, 0 },
	/* "still removing" with a rising count: beyond 1 rank's 18 entries */
	{ M_B_RELEASE, "--size 64k", "reported 19 entries removed from knob.", 12, 1 },
};

#define TIME_CASES 5

/* The JSON array a of strings has one that contains s. */
static int
has_string(json_object *a, const char *s)
{
	for (size_t i = 0; a && i < json_object_array_length(a); i++)
		if (strstr(json_object_get_string(json_object_array_get_idx(a, i)), s))
			return 1;
	return 0;
}

/* Phase p's per_node: node01 and node02 ok with bytes (node03 missing,
 * unless released: its result came). */
static void
real_nodes_counted(json_object *p, int released)
{
	json_object *all = cu_get(p, "per_node"), *pn;
	int seen = 0;

	for (size_t i = 0; i < json_object_array_length(all); i++) {
		pn = json_object_array_get_idx(all, i);
		if (strcmp(cu_str(pn, "node"), "node03") == 0) {
			ck_assert_str_eq(cu_str(pn, "status"), released ? "ok" : "missing");
			continue;
		}
		ck_assert_str_eq(cu_str(pn, "status"), "ok");
		ck_assert_int_gt(cu_int(pn, "bytes"), 0);
		seen++;
	}
	ck_assert_int_eq(seen, 2);
}

/* Phase p of bench case i: its status, node03's words, the real agents'
 * figures (doc: the run). */
static void
bench_phase_said(size_t i, json_object *doc, json_object *p)
{
	int released = bench_cases[i].released, aborted = bench_cases[i].mode == M_B_ABORTED;
	char why[256];

	ck_assert_str_eq(cu_str(p, "status"), released ? "ok" : aborted ? "failed" : "degraded");
	ck_assert_int_eq(json_object_array_length(cu_get(p, "missing")), !released);
	snprintf(why, sizeof(why), "node03: %s%s", released ? "lost (failed: " : "failed: ",
	    bench_cases[i].why);
	ck_assert_msg(has_string(released ? cu_get(doc, "cleanup_failed") : cu_get(p, "errors"),
	    why), "no \"%s\" in phase %s", why, json_object_get_string(p));
	if (!aborted)
		real_nodes_counted(p, released);
}

/* Run bench case i against a fresh stand-in in a directory of its own. */
static void
bench_case(size_t i)
{
	struct harness_child c;
	char data[PATH_MAX + 16], why[PATH_MAX + 64], *out = NULL, *err = NULL;
	json_object *doc, *cf;
	uint64_t t0;
	double took;
	int rc;

	evil_mode = bench_cases[i].mode;
	snprintf(data, sizeof(data), "%s/bench%zu", h.tmp, i);
	ck_assert_int_eq(mkdir(data, 0755), 0);
	harness_child_start(&c, h.node[EVIL].ns, evil_agent);
	t0 = now_mono_ns();
	rc = harness_knobctl(&h, &out, &err, "--timeout 2 --json bench seq-write -w node[01-03] "
	    "--dir %s%s --threads 3 --bs 4k %s", data, evil_mode == M_B_ABORTED ? "/gone" : "",
	    bench_cases[i].args);
	took = (double)(now_mono_ns() - t0) / 1e9;
	fprintf(stderr, "bench against the stand-in (mode %d): exit %d in %.1f s\n%s\n",
	    evil_mode, rc, took, err ? err : "");
	ck_assert_msg(took < bench_cases[i].within, "mode %d: %.1f s, not within %.0f", evil_mode,
	    took, bench_cases[i].within);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg((doc = json_tokener_parse(out)) != NULL, "not JSON: %s", out);
	bench_phase_said(i, doc, cu_phase(doc, 0));
	/* where node03's files may be */
	cf = json_object_object_get(doc, "cleanup_failed");
	if (evil_mode == M_B_NOSYNC)
		ck_assert_ptr_null(cf);
	else {
		snprintf(why, sizeof(why), "the files of its ranks 2 may be left in %s%s/knob.",
		    data, evil_mode == M_B_ABORTED ? "/gone" : "");
		ck_assert_int_eq(json_object_array_length(cf), 1);
		ck_assert_str_eq(cu_str(json_object_array_get_idx(cf, 0), "node"), "node03");
		ck_assert_msg(strstr(cu_str(json_object_array_get_idx(cf, 0), "error"), why),
		    "no \"%s\" in %s", why, out);
	}
	/* the real agents removed theirs */
	ck_assert_int_eq(cu_count_entries(data), 0);
	json_object_put(doc);
	free(out);
	free(err);
	ck_assert_int_gt(harness_child_end(&c), 0);
}

/* The stand-in streams for ever: the phase's length, the stall limit, the
 * clock sync's and the abort's deadlines end it. */
START_TEST(bench_time_bounded)
{
	for (size_t i = 0; i < TIME_CASES; i++)
		bench_case(i);
}
END_TEST

/* The stand-in reports more than its ranks can do: ended at once. */
START_TEST(bench_count_bounded)
{
	for (size_t i = TIME_CASES; i < nitems(bench_cases); i++)
		bench_case(i);
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
	tcase_add_test(tc, bench_time_bounded);
	tcase_add_test(tc, bench_count_bounded);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return cu_run(hostile_suite());
}
