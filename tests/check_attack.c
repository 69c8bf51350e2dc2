/* Attacks on a real knobd in a network namespace (tests/harness.h):
 *
 * - an idle-connection flood without certificates from two attacker
 *   namespaces (1000 sockets each that never send a byte, each reopened
 *   as soon as the agent drops it) while the controller pings 10 times:
 *   every ping must get through within 1 s;
 * - authenticated peers that announce 16 MiB frames and send only a few
 *   bytes, and one that sends requests but never reads the replies: the
 *   agent's peak RSS must stay bounded and the non-reader is closed.
 *
 * - more idle sources than the budget holds: the oldest idle sockets are
 *   dropped and pings still get through;
 * - the controller's own address out of its 8: the controller reports
 *   "dropped before handshake", and gets in once the idle ones expire;
 * - an authenticated peer's 16 MiB frame of empty repeated sub-messages
 *   (protobuf-c would allocate a struct per 2 bytes): the agent refuses to
 *   decode it past its budget, closes that connection, its peak RSS stays
 *   bounded and it still answers.
 *
 * The agent's peak RSS (VmHWM) is printed with each figure.  The attacker
 * is this program itself ("check_attack attack ADDR PORT N SECONDS
 * reopen|hold [SRC...]"), run inside a namespace with ip netns exec; it
 * attacks until the test closes its standard input (SECONDS: at most). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <openssl/ssl.h>

#include "testutil.h"
#include "harness.h"
#include "tls.h"
#include "util.h"
#include "wire.h"

/* Growth of the agent's peak RSS allowed under the 16 MiB attack (40
 * frames at their announced length would be 640 MiB).  An ASan build of
 * knobd (make check's second pass) keeps up to 256 MiB of freed memory in
 * its quarantine, so there the bound is that much higher. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_BOUND_KB	((48 + 256) * 1024)
#else
#define RSS_BOUND_KB	(48 * 1024)
#endif

/* Growth of the agent's peak RSS allowed for one 16 MiB frame of empty
 * repeated sub-messages: its body (16 MiB) and the decode budget
 * (frame_decode_budget: 144 MiB), with room (measured: +147 MB; without
 * the budget +5.2 GB).  Under ASan freed memory waits in its quarantine
 * and small allocations carry a redzone (measured: +197 MB). */
#if defined(__SANITIZE_ADDRESS__)
#define DECODE_RSS_BOUND_KB	(384 * 1024)
#else
#define DECODE_RSS_BOUND_KB	(256 * 1024)
#endif

static struct harness h;
static char self[PATH_MAX];

/* A field of /proc/PID/status in kB ("VmHWM", "VmRSS"); -1 when absent. */
static long
status_kb(pid_t pid, const char *field)
{
	char path[64], buf[4096], *p;
	size_t fl = strlen(field);

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_small_file(path, buf, sizeof(buf)) < 0)
		return -1;
	for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, field, fl) == 0 && p[fl] == ':')
			return strtol(p + fl + 1, NULL, 10);
	return -1;
}

/* One non-blocking connect to addr:port from src (NULL: any), watched by
 * ep; fd or -1. */
static int
dial(int ep, const struct sockaddr_in *sa, const char *src)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct sockaddr_in me = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (src != NULL && (inet_pton(AF_INET, src, &me.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0)) {
		close(fd);
		return -1;
	}
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	ev.data.fd = fd;
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	return fd;
}

/* The attacker: hold n idle connections from the source addresses
 * src[0..nsrc) in turn (none: the default), reopening each one the agent
 * closes unless hold, until its standard input ends (the test is done
 * with it) or secs pass; prints how many connections it opened. */
static int
attacker(const char *addr, int port, int n, int secs, int hold, char **src, int nsrc)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct rlimit rl;
	struct epoll_event evs[256];
	uint64_t end = now_mono_ns() + (uint64_t)secs * 1000000000ull, opened = 0;
	struct epoll_event in = { .events = EPOLLIN | EPOLLRDHUP, .data.fd = 0 };
	int ep = epoll_create1(EPOLL_CLOEXEC), open_now = 0, done = 0;

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	inet_pton(AF_INET, addr, &sa.sin_addr);
	epoll_ctl(ep, EPOLL_CTL_ADD, 0, &in);
	for (int i = 0; i < n; i++)
		if (dial(ep, &sa, nsrc ? src[opened % (unsigned)nsrc] : NULL) >= 0) {
			opened++;
			open_now++;
		}
	while (!done && now_mono_ns() < end) {
		int k = epoll_wait(ep, evs, (int)nitems(evs), 50);

		for (int i = 0; i < k; i++) {
			char c;

			if (evs[i].data.fd == 0) {	/* the test closed our stdin */
				done = read(0, &c, 1) <= 0;
				continue;
			}
			if (read(evs[i].data.fd, &c, 1) > 0)
				continue;	/* never happens: the agent says nothing first */
			close(evs[i].data.fd);
			open_now--;
		}
		for (; !hold && open_now < n; open_now++) {
			if (dial(ep, &sa, nsrc ? src[opened % (unsigned)nsrc] : NULL) < 0)
				break;
			opened++;
		}
	}
	printf("%llu\n", (unsigned long long)opened);
	return 0;
}

static void
setup(void)
{
	ck_assert_msg(harness_start(&h, 3, 0) == 0, "harness start failed");
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);	/* node01; 02 and 03 attack */
}

static void
teardown(void)
{
	harness_stop(&h);
}

/* An attacker: its pid, and the pipe on its standard input (closing it
 * ends the attack). */
struct attack {
	pid_t pid;
	int stop;
};

/* Start the attacker in namespace ns ("reopen" or "hold" mode, optional
 * source addresses, space separated) for at most secs; its count goes to
 * out.  attack_end ends it. */
static struct attack
attack_bg(const char *ns, int n, int secs, const char *mode, const char *srcs, const char *out)
{
	char *cmd = xasprintf("exec ip netns exec %s %s attack %s 7420 %d %d %s %s >%s", ns, self,
	    h.node[0].addr, n, secs, mode, srcs, out);
	struct attack a;
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);	/* no other child holds it open */
	a.pid = fork();
	ck_assert_int_ge(a.pid, 0);
	if (a.pid == 0) {
		dup2(p[0], 0);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	a.stop = p[1];
	free(cmd);
	return a;
}

/* End the attack: its exit status (cu_reap). */
static int
attack_end(struct attack *a)
{
	close(a->stop);
	return cu_reap(a->pid);
}

/* Is the regular expression arg in node01's log? */
static int
log_matches(void *arg)
{
	return harness_sh("grep -qE '%s' '%s'", (const char *)arg, h.node[0].log) == 0;
}

/* n pings, each must answer within 1 s; the slowest in seconds. */
static double
pings_within_1s(int n)
{
	double worst = 0;

	for (int i = 0; i < n; i++) {
		uint64_t t0 = now_mono_ns();
		char *o = NULL, *e = NULL;
		int rc = harness_knobctl(&h, &o, &e, "--connect-timeout 2 --timeout 2 ping "
		    "-w node01");
		double s = (double)(now_mono_ns() - t0) / 1e9;

		if (s > worst)
			worst = s;
		ck_assert_msg(rc == 0, "ping %d under the flood failed (exit %d): %s%s", i + 1, rc,
		    o, e);
		free(o);
		free(e);
		ck_assert_msg(s < 1.0, "ping %d under the flood took %.2f s", i + 1, s);
	}
	return worst;
}

START_TEST(idle_flood_pings_get_through)
{
	char out[2][PATH_MAX + 16], *txt = NULL;
	struct attack att[2];
	uint64_t t0 = now_mono_ns();
	double worst, secs;

	for (int i = 0; i < 2; i++) {
		snprintf(out[i], sizeof(out[i]), "%s/attack%d.out", h.tmp, i);
		att[i] = attack_bg(h.node[i + 1].ns, 1000, 60, "reopen", "", out[i]);
	}
	/* the flood is on once the agent reports refusals */
	ck_assert_msg(harness_wait_log(&h, 0, "before authentication: refused", 10) == 0,
	    "the flood never reached the agent");
	worst = pings_within_1s(10);
	/* every ping came while both attackers ran: the first to end does so
	 * here, when the test ends it (its 60 s are a deadline only) */
	ck_assert_msg(waitpid(att[0].pid, NULL, WNOHANG) == 0 &&
	    waitpid(att[1].pid, NULL, WNOHANG) == 0, "an attacker ended before the pings did");
	secs = (double)(now_mono_ns() - t0) / 1e9;
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(attack_end(&att[i]), 0);
		ck_assert_int_eq(read_file_bounded(out[i], 1024, &txt, NULL), 0);
		printf("attacker %d opened %s", i + 1, txt);
		free(txt);
	}
	printf("idle flood (2 x 1000 sockets, %.1f s): 10 of 10 pings ok, slowest %.3f s, "
	    "agent peak RSS %ld kB\n", secs, worst, status_kb(h.node[0].pid, "VmHWM"));
}
END_TEST

/* Twelve source addresses with 8 sockets each are more than the budget of
 * 64: the agent drops the oldest idle ones, and pings still get through. */
START_TEST(budget_full_oldest_dropped)
{
	char out[PATH_MAX + 16], srcs[400] = "";
	struct attack att;
	double worst;

	for (int i = 0; i < 12; i++) {
		char a[32];

		snprintf(a, sizeof(a), "198.18.0.%d", 100 + i);
		ck_assert_int_eq(harness_node_sh(&h, 1, "ip addr add %s/24 dev eth0", a), 0);
		strcat(srcs, a);
		strcat(srcs, " ");
	}
	snprintf(out, sizeof(out), "%s/attack.out", h.tmp);
	att = attack_bg(h.node[1].ns, 96, 60, "reopen", srcs, out);
	ck_assert_msg(harness_wait_log(&h, 0, "before authentication", 10) == 0,
	    "the flood never reached the agent");
	worst = pings_within_1s(5);
	ck_assert_msg(waitpid(att.pid, NULL, WNOHANG) == 0, "the attacker ended before the pings did");
	/* the flood goes on until the budget has filled (8 s at most, as long
	 * as it ran before) */
	ck_assert_msg(cu_wait(log_matches, (void *)(uintptr_t)"dropped [1-9][0-9]* oldest", 8) >= 0,
	    "the budget never filled");
	ck_assert_int_eq(attack_end(&att), 0);
	printf("budget full (12 addresses x 8 idle sockets): 5 of 5 pings ok, slowest %.3f s\n",
	    worst);
}
END_TEST

/* The controller's own address holds its 8 idle sockets: the agent closes
 * the next connection before TLS, and the controller says so in words
 * that point at the agent, not at certificates.  Once the idle ones pass
 * their 2 s, the controller gets in again. */
START_TEST(dropped_before_handshake_reported)
{
	char out[PATH_MAX + 16], *txt = NULL;
	struct attack att;
	int rc;

	snprintf(out, sizeof(out), "%s/attack.out", h.tmp);
	att = attack_bg(h.ctl_ns, 8, 60, "hold", "", out);
	ck_assert_int_eq(harness_wait_log(&h, 0, "connection 8 from", 5), 0);
	rc = harness_knobctl(&h, &txt, NULL, "ping -w node01");
	ck_assert_int_ne(rc, 0);
	ck_assert_msg(strstr(txt, "dropped before handshake (agent busy or filtered)") != NULL,
	    "%s", txt);
	ck_assert_ptr_null(strstr(txt, "auth"));
	free(txt);
	ck_assert_int_eq(harness_wait_log(&h, 0, "nothing received in 2 s", 5), 0);
	/* in while the attacker still holds what it opened: the agent's expiry
	 * let it in, not the attacker's exit */
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
	ck_assert_int_eq(attack_end(&att), 0);
}
END_TEST

/* Child, in the controller namespace: 40 peers announce 16 MiB and send
 * 1000 bytes; says "ready" on fd w, holds them until r closes; then one
 * peer sends pings without reading until the agent closes it and reports
 * the number sent ("closed N") or "open" after 30 s. */
static void
big_peers(int r, int w)
{
	uint8_t hdr[4] = { 0x01, 0x00, 0x00, 0x00 }, junk[1000];
	SSL *peers[40], *nr;
	SSL_CTX *ctx;
	char c;

	if (harness_enter_ns(h.ctl_ns) < 0)
		_exit(2);
	if ((ctx = harness_tls_ctx(&h, "controller")) == NULL)
		_exit(3);
	memset(junk, 0x55, sizeof(junk));
	for (int i = 0; i < 40; i++) {
		if ((peers[i] = harness_tls_dial(&h, ctx, 0)) == NULL)
			_exit(4);
		if (SSL_write(peers[i], hdr, 4) != 4 || SSL_write(peers[i], junk, 1000) != 1000)
			_exit(5);
	}
	if (write(w, "ready\n", 6) != 6 || read(r, &c, 1) < 0)
		_exit(6);
	for (int i = 0; i < 40; i++)
		SSL_free(peers[i]);
	if ((nr = harness_tls_dial(&h, ctx, 0)) == NULL)
		_exit(7);
	{
		Knob__Envelope env = KNOB__ENVELOPE__INIT;
		Knob__Ping ping = KNOB__PING__INIT;
		uint64_t end = now_mono_ns() + 30000000000ull, sent = 0;
		struct timeval tv = { .tv_sec = 1 };
		uint8_t *f;
		size_t len;

		env.body_case = KNOB__ENVELOPE__BODY_PING;
		env.ping = &ping;
		env.version = WIRE_VERSION;
		frame_pack(&env, &f, &len);
		setsockopt(SSL_get_fd(nr), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		while (now_mono_ns() < end) {
			if (SSL_write(nr, f, (int)len) <= 0)
				break;
			sent++;
		}
		free(f);
		dprintf(w, now_mono_ns() < end ? "closed %llu\n" : "open\n",
		    (unsigned long long)sent);
	}
	_exit(0);
}

START_TEST(big_frames_and_non_reader)
{
	int to_child[2], from_child[2], st;
	long base, peak;
	char buf[128] = "";
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(to_child), 0);
	ck_assert_int_eq(pipe(from_child), 0);
	/* a few requests first, so the baseline includes a warmed-up agent */
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "facts -w node01"), 0);
	base = status_kb(h.node[0].pid, "VmHWM");
	pid = fork();
	if (pid == 0) {
		close(to_child[1]);
		close(from_child[0]);
		big_peers(to_child[0], from_child[1]);
	}
	close(to_child[0]);
	close(from_child[1]);
	n = read(from_child[0], buf, sizeof(buf) - 1);
	ck_assert_msg(n > 0 && strncmp(buf, "ready", 5) == 0, "peers did not connect");
	/* a ping answered after the 40 peers' bytes were sent: the loop has
	 * read them (events are served in order) and holds 40 partial frames */
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
	peak = status_kb(h.node[0].pid, "VmHWM");
	printf("40 peers announcing 16 MiB: agent peak RSS %ld kB (before %ld kB, bound "
	    "+%d kB; %d MiB if buffers followed the announced length)\n", peak, base,
	    RSS_BOUND_KB, 40 * 16);
	ck_assert_msg(peak - base < RSS_BOUND_KB, "peak RSS grew by %ld kB", peak - base);
	close(to_child[1]);
	memset(buf, 0, sizeof(buf));
	n = read(from_child[0], buf, sizeof(buf) - 1);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "peer child failed: %d", st);
	ck_assert_msg(strncmp(buf, "closed", 6) == 0, "the non-reading peer was not closed: %s",
	    buf);
	printf("non-reading peer: closed by the agent after %s", buf + 7);
	ck_assert(harness_log_has(&h, 0, "peer does not read"));
	peak = status_kb(h.node[0].pid, "VmHWM");
	printf("after the non-reader: agent peak RSS %ld kB\n", peak);
	ck_assert_msg(peak - base < RSS_BOUND_KB, "peak RSS grew by %ld kB", peak - base);
	/* and the agent still serves */
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
}
END_TEST

/* Child, in the controller namespace: a controller sends one FRAME_MAX
 * frame of empty Settings (cu_empty_settings_body) and reads until the
 * agent closes the connection; "closed" or "open" (still open after 20 s)
 * on fd w. */
static void
bloat_peer(int w)
{
	struct timeval tv = { .tv_sec = 20 };
	uint8_t hdr[4] = { FRAME_MAX >> 24, FRAME_MAX >> 16 & 0xff, FRAME_MAX >> 8 & 0xff,
	    FRAME_MAX & 0xff }, *body, buf[4096];
	uint64_t end;
	SSL_CTX *ctx;
	SSL *ssl;

	if (harness_enter_ns(h.ctl_ns) < 0)
		_exit(2);
	if ((ctx = harness_tls_ctx(&h, "controller")) == NULL ||
	    (ssl = harness_tls_dial(&h, ctx, 0)) == NULL)
		_exit(3);
	body = cu_empty_settings_body(FRAME_MAX);
	setsockopt(SSL_get_fd(ssl), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(SSL_get_fd(ssl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (SSL_write(ssl, hdr, 4) != 4)
		_exit(4);
	for (int n, off = 0; off < (int)FRAME_MAX; off += n)	/* partial writes on */
		if ((n = SSL_write(ssl, body + off, (int)FRAME_MAX - off)) <= 0)
			_exit(5);
	end = now_mono_ns() + 20000000000ull;
	while (SSL_read(ssl, buf, sizeof(buf)) > 0)
		;	/* an answer would be the unbounded agent's */
	dprintf(w, now_mono_ns() < end ? "closed\n" : "open\n");
	_exit(0);
}

/* A 16 MiB frame of empty repeated sub-messages (8 million empty Settings
 * in a VerifyRequest; unbounded, protobuf-c decodes it to 1.3 GB): the
 * agent closes that connection with the reason, its peak RSS stays
 * bounded, and it answers a ping on a new connection. */
START_TEST(empty_repeated_frame_bounded)
{
	int fds[2], st;
	long base, peak;
	char buf[64] = "";
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "facts -w node01"), 0);
	base = status_kb(h.node[0].pid, "VmHWM");
	if ((pid = fork()) == 0) {
		close(fds[0]);
		bloat_peer(fds[1]);
	}
	close(fds[1]);
	ck_assert_int_ge(read(fds[0], buf, sizeof(buf) - 1), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "peer child failed: %d", st);
	peak = status_kb(h.node[0].pid, "VmHWM");
	printf("16 MiB of empty Settings: agent peak RSS %ld kB (before %ld kB, bound +%d kB; "
	    "unbounded decode 1.3 GB)\n", peak, base, DECODE_RSS_BOUND_KB);
	fflush(stdout);	/* the figure also when a check below fails */
	ck_assert_msg(strncmp(buf, "closed", 6) == 0, "the connection was not closed: %s", buf);
	ck_assert_msg(harness_log_has(&h, 0, "would decode to more than"),
	    "no reason in the agent's log");
	ck_assert_msg(peak - base < DECODE_RSS_BOUND_KB, "peak RSS grew by %ld kB", peak - base);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
}
END_TEST

static Suite *
attack_suite(void)
{
	Suite *s = suite_create("attack");
	TCase *tc = cu_tcase("attack", setup, teardown, 120);

	tcase_add_test(tc, idle_flood_pings_get_through);
	tcase_add_test(tc, budget_full_oldest_dropped);
	tcase_add_test(tc, dropped_before_handshake_reported);
	tcase_add_test(tc, big_frames_and_non_reader);
	tcase_add_test(tc, empty_repeated_frame_bounded);
	suite_add_tcase(s, tc);
	return s;
}

int
main(int argc, char **argv)
{
	if (argc >= 7 && strcmp(argv[1], "attack") == 0)
		return attacker(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
		    strcmp(argv[6], "hold") == 0, argv + 7, argc - 7);
	if (realpath("/proc/self/exe", self) == NULL)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	return cu_run(attack_suite());
}
