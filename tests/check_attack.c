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
 * - the controller's own address out of its 8: the controller dials three
 *   times, reports "dropped before handshake", and gets in once the idle
 *   ones expire;
 * - an authenticated peer's 16 MiB frame of empty repeated sub-messages
 *   (protobuf-c would allocate a struct per 2 bytes): the agent refuses to
 *   decode it past its budget, closes that connection, its peak RSS stays
 *   bounded and it still answers.
 *
 * - 40 source addresses whose 320 sockets each send one byte (a TLS
 *   record type) and reconnect when dropped: every ping gets through;
 * - 2000 connections that send a byte and close: the agent's log (at info
 *   level) grows by a few summary lines that count them all;
 * - the agent out of file descriptors under a flood: its CPU and its log
 *   stay small, and it serves again once the flood ends;
 * - log lines escape control characters (a peer's string cannot forge a
 *   line of its own);
 * - a controller accepted before its ClientHello came, which then waits
 *   unread while a full accept batch fills the budget, is not dropped;
 * - knobctl dials again (twice at most) when a connection is dropped
 *   before the handshake.
 *
 * - every flood at once on node01 through a benchmark run on node01 and
 *   node02: the run gets in, its phase counts every byte, the lease
 *   holds, and pings get through during the flood and after it.
 *
 * The agent's peak RSS (VmHWM) is printed with each figure.  The attacker
 * is this program itself ("check_attack attack ADDR PORT N SECONDS
 * reopen|hold|byte|junk|hello|slow [SRC...]"; byte: reopen, and each
 * socket sends one byte once connected; hello: a real ClientHello, the
 * handshake never finished; slow: that ClientHello one byte a second),
 * run inside a namespace with ip netns exec; it attacks until the test
 * closes its standard input (SECONDS: at most). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <openssl/ssl.h>

#include "testutil.h"
#include "harness.h"
#include "log.h"
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

/* How long a ping of an agent under every flood at once may take
 * (flood_during_phase): measured 0.5 to 1.1 s at worst, 1.4 s under ASan,
 * where the agent's handshakes take about twice the CPU. */
#if defined(__SANITIZE_ADDRESS__)
#define FLOOD_PING_S	3.0
#else
#define FLOOD_PING_S	2.0
#endif

/* How long a ping of an agent under a flood of idle, churning or
 * byte-dribbling sockets may take (idle_flood_pings_get_through,
 * budget_full_oldest_dropped, byte_flood_pings_get_through): a few ms when
 * the machine is quiet; with other work on both cores the agent's
 * accept-and-refuse work took pings to 1.41 s under ASan (stop 47), and
 * with six helpers' builds and tests beside it to 1.25 s plain and 2.25 s
 * under ASan (stop 48), which failed bounds of 1 and 2 s.  What the bound
 * is for: a ping that waited for a handshake deadline (5 s) fails it.  How
 * fast the agent is under a flood is a benchmark's figure, not this
 * test's. */
#if defined(__SANITIZE_ADDRESS__)
#define IDLE_PING_S	3.0
#else
#define IDLE_PING_S	2.0
#endif

/* The controller namespace's second address, where resumed_handshake_not_dropped
 * gets its ticket from. */
#define TICKET_SRC	"198.18.0.2"

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
 * ep (for output too when tx: it sends its payload once connected); fd
 * or -1. */
static int
dial(int ep, const struct sockaddr_in *sa, const char *src, int tx)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | (tx ? EPOLLOUT : 0) };
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

/* What an attacker's sockets send once connected (mode): nothing (reopen,
 * hold), a TLS record type (byte), a line no TLS server takes (junk), a
 * real ClientHello whose handshake is never finished (hello), or that
 * ClientHello one byte a second (slow, a slowloris). */
struct payload {
	const uint8_t *bytes;
	size_t len;
	int drip;		/* one byte a second */
};

/* A TLS client's first flight (its ClientHello, TLS 1.3 with an X25519
 * key share, as knob's agents take), made over memory BIOs into buf: its
 * length, 0 on failure. */
static size_t
client_hello(uint8_t *buf, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *s = ctx ? SSL_new(ctx) : NULL;
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	int n = 0;

	if (s != NULL && rb != NULL && wb != NULL) {
		SSL_set_bio(s, rb, wb);
		rb = wb = NULL;
		SSL_set_connect_state(s);
		SSL_do_handshake(s);	/* wants the server's answer: its hello is out */
		n = BIO_read(SSL_get_wbio(s), buf, (int)cap);
	}
	BIO_free(rb);
	BIO_free(wb);
	SSL_free(s);
	SSL_CTX_free(ctx);
	return n > 0 ? (size_t)n : 0;
}

/* The payload of mode (hello: made into buf). */
static struct payload
mode_payload(const char *mode, uint8_t *buf, size_t cap)
{
	struct payload p = { NULL, 0, 0 };

	if (strcmp(mode, "byte") == 0)
		p.bytes = (const uint8_t *)"\x16";
	else if (strcmp(mode, "junk") == 0)
		p.bytes = (const uint8_t *)"GET / HTTP/1.0\r\n\r\n";
	else if (strcmp(mode, "hello") == 0 || strcmp(mode, "slow") == 0) {
		p.len = client_hello(buf, cap);
		p.bytes = p.len ? buf : NULL;
		p.drip = strcmp(mode, "slow") == 0;
		return p;
	}
	p.len = p.bytes ? strlen((const char *)p.bytes) : 0;
	return p;
}

/* An attacker's socket is connected: send its payload (a drip: its first
 * byte; sent[fd] counts what went) and watch it for input only.  0, or -1
 * (close it). */
static int
send_payload(int ep, int fd, const struct payload *p, size_t *sent)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.fd = fd };
	size_t n = p->drip ? 1 : p->len;

	if (write(fd, p->bytes, n) != (ssize_t)n)
		return -1;
	sent[fd] = n;
	return epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

/* A drip's second: each connected socket (sent[fd] > 0, fd < nfd) sends
 * its next byte (a socket with all sent goes quiet). */
static void
drip(const struct payload *p, size_t *sent, size_t nfd)
{
	for (size_t fd = 0; fd < nfd; fd++)
		if (sent[fd] > 0 && sent[fd] < p->len && write((int)fd, p->bytes + sent[fd], 1) == 1)
			sent[fd]++;
}

/* The attacker: hold n connections from the source addresses
 * src[0..nsrc) in turn (none: the default), reopening each one the agent
 * closes unless hold (and junk), each sending mode's payload once
 * connected (mode_payload), until its standard input ends (the test is
 * done with it) or secs pass; prints how many connections it opened. */
static int
attacker(const char *addr, int port, int n, int secs, const char *mode, char **src, int nsrc)
{
	int junk = strcmp(mode, "junk") == 0, hold = junk || strcmp(mode, "hold") == 0;
	uint8_t hello[2048], in_buf[4096];
	struct payload pl = mode_payload(mode, hello, sizeof(hello));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct rlimit rl;
	struct epoll_event evs[256];
	uint64_t now, end = now_mono_ns() + (uint64_t)secs * 1000000000ull, opened = 0;
	uint64_t next_drip = now_mono_ns() + 1000000000ull;
	struct epoll_event in = { .events = EPOLLIN | EPOLLRDHUP, .data.fd = 0 };
	int ep = epoll_create1(EPOLL_CLOEXEC), open_now = 0, done = 0, fd;
	size_t *sent, nfd;

	if ((strcmp(mode, "hello") == 0 || strcmp(mode, "slow") == 0) && pl.len == 0)
		return 2;	/* no ClientHello to send */
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	nfd = rl.rlim_cur < 1u << 20 ? (size_t)rl.rlim_cur : 1u << 20;
	sent = xcalloc(nfd, sizeof(*sent));
	inet_pton(AF_INET, addr, &sa.sin_addr);
	epoll_ctl(ep, EPOLL_CTL_ADD, 0, &in);
	for (int i = 0; i < n; i++)
		if (dial(ep, &sa, nsrc ? src[opened % (unsigned)nsrc] : NULL, pl.len > 0) >= 0) {
			opened++;
			open_now++;
		}
	while (!done && (now = now_mono_ns()) < end) {
		int k = epoll_wait(ep, evs, (int)nitems(evs), 50);

		for (int i = 0; i < k; i++) {
			if ((fd = evs[i].data.fd) == 0) {	/* the test closed our stdin */
				done = read(0, in_buf, 1) <= 0;
				continue;
			}
			if (pl.len > 0 && evs[i].events == EPOLLOUT &&
			    send_payload(ep, fd, &pl, sent) == 0)
				continue;
			if (read(fd, in_buf, sizeof(in_buf)) > 0)
				continue;	/* a hello's answer, never read on */
			sent[fd] = 0;
			close(fd);
			open_now--;
		}
		if (pl.drip && now >= next_drip) {
			drip(&pl, sent, nfd);
			next_drip = now + 1000000000ull;
		}
		for (; !hold && open_now < n; open_now++) {
			if (dial(ep, &sa, nsrc ? src[opened % (unsigned)nsrc] : NULL, pl.len > 0) < 0)
				break;
			opened++;
		}
	}
	printf("%llu\n", (unsigned long long)opened);
	free(sent);
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

/* Give node i's namespace the n source addresses 198.18.0.FIRST.. and
 * list them, space separated, in srcs (for attack_bg): one ip -batch for
 * all (an ip each took 25 ms: 3.2 s for 128; the batch 0.1 s). */
static void
add_sources(int i, int first, int n, char *srcs, size_t len)
{
	srcs[0] = '\0';
	for (int k = 0; k < n; k++) {
		char a[32];

		snprintf(a, sizeof(a), "198.18.0.%d", first + k);
		ck_assert_uint_lt(strlen(srcs) + strlen(a) + 1, len);
		strcat(srcs, a);
		strcat(srcs, " ");
	}
	ck_assert_int_eq(harness_node_sh(&h, i, "for a in %s; do echo addr replace $a/24 dev eth0; "
	    "done | ip -batch -", srcs), 0);
}

/* A file and an extended regular expression, for file_matches. */
struct file_re {
	const char *path, *re;
};

/* Does the file arg->path hold a match of arg->re? */
static int
file_matches(void *arg)
{
	const struct file_re *f = arg;

	return harness_sh("grep -qE '%s' '%s'", f->re, f->path) == 0;
}

/* Is the regular expression arg in node01's log? */
static int
log_matches(void *arg)
{
	struct file_re f = { h.node[0].log, arg };

	return file_matches(&f);
}

/* n pings, each must answer within limit seconds; the slowest in seconds. */
static double
pings_within(int n, double limit)
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
		ck_assert_msg(s < limit, "ping %d under the flood took %.2f s", i + 1, s);
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
	worst = pings_within(10, IDLE_PING_S);
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

	add_sources(1, 100, 12, srcs, sizeof(srcs));
	snprintf(out, sizeof(out), "%s/attack.out", h.tmp);
	att = attack_bg(h.node[1].ns, 96, 60, "reopen", srcs, out);
	ck_assert_msg(harness_wait_log(&h, 0, "before authentication", 10) == 0,
	    "the flood never reached the agent");
	worst = pings_within(5, IDLE_PING_S);
	ck_assert_msg(waitpid(att.pid, NULL, WNOHANG) == 0, "the attacker ended before the pings did");
	/* the flood goes on until the budget has filled (8 s at most, as long
	 * as it ran before) */
	ck_assert_msg(cu_wait(log_matches, (void *)(uintptr_t)"dropped [1-9][0-9]* over the budget",
	    8) >= 0, "the budget never filled");
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
	/* dialled three times (FO_REDIALS), each refused, and no more */
	ck_assert_int_eq(harness_sh_int("grep -c 'refusing a connection from 198.18.0.1:' '%s'",
	    h.node[0].log), 3);
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

/* A count of the frames in a stream read piece by piece. */
struct frame_count {
	uint8_t hdr[4];
	size_t hdr_have, body_left;
	long frames;
};

/* Count the frames whose last byte is among the n bytes of buf. */
static void
frames_count(struct frame_count *fc, const uint8_t *buf, size_t n)
{
	while (n > 0) {
		if (fc->hdr_have < 4) {
			fc->hdr[fc->hdr_have++] = *buf++;
			n--;
			if (fc->hdr_have == 4)
				fc->body_left = (size_t)fc->hdr[0] << 24 | (size_t)fc->hdr[1] << 16 |
				    (size_t)fc->hdr[2] << 8 | fc->hdr[3];
		} else {
			size_t k = fc->body_left < n ? fc->body_left : n;

			fc->body_left -= k;
			buf += k;
			n -= k;
		}
		if (fc->hdr_have == 4 && fc->body_left == 0) {
			fc->frames++;
			fc->hdr_have = 0;
		}
	}
}

/* Child, in the controller namespace: a controller writes n pings in one
 * go, reading the answers as they come; says on w how many it got and
 * whether the agent closed the connection. */
static void
pipelined_pings(int w, long n)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping ping = KNOB__PING__INIT;
	struct frame_count fc = { .frames = 0 };
	uint64_t end = now_mono_ns() + 20000000000ull;
	uint8_t *f, *all, rbuf[16384];
	size_t len, off = 0;
	int closed = 0;
	SSL_CTX *ctx;
	SSL *ssl;

	if (harness_enter_ns(h.ctl_ns) < 0 || (ctx = harness_tls_ctx(&h, "controller")) == NULL ||
	    (ssl = harness_tls_dial(&h, ctx, 0)) == NULL)
		_exit(2);
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	env.version = WIRE_VERSION;
	frame_pack(&env, &f, &len);
	all = xmalloc(len * (size_t)n);
	for (long i = 0; i < n; i++)
		memcpy(all + len * (size_t)i, f, len);
	fcntl(SSL_get_fd(ssl), F_SETFL, O_NONBLOCK);
	while (fc.frames < n && !closed && now_mono_ns() < end) {
		struct pollfd p = { .fd = SSL_get_fd(ssl), .events = POLLIN };
		int r;

		if (off < len * (size_t)n && (r = SSL_write(ssl, all + off, (int)(len * (size_t)n -
		    off < 16384 ? len * (size_t)n - off : 16384))) > 0)
			off += (size_t)r;
		while ((r = SSL_read(ssl, rbuf, sizeof(rbuf))) > 0)
			frames_count(&fc, rbuf, (size_t)r);
		closed = SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ;
		p.events |= off < len * (size_t)n ? POLLOUT : 0;
		(void)poll(&p, 1, 100);
	}
	dprintf(w, "%ld of %ld answered%s\n", fc.frames, n, closed ? ", then closed" : "");
	_exit(0);
}

/* A controller that writes 40,000 pings in one go and reads the answers
 * as they come: the agent answered the frames of one wake-up before it
 * wrote any, and 1 MiB of answers queued meant "peer does not read": it
 * closed the connection of a peer that reads. */
static void
pipelined_pings_answered(void)
{
	int fds[2];
	char buf[128] = "";
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	if ((pid = fork()) == 0) {
		close(fds[0]);
		pipelined_pings(fds[1], 40000);
	}
	close(fds[1]);
	ck_assert_int_gt(read(fds[0], buf, sizeof(buf) - 1), 0);
	close(fds[0]);
	ck_assert_int_eq(cu_reap(pid), 0);
	printf("40000 pipelined pings: %s", buf);
	ck_assert_msg(strcmp(buf, "40000 of 40000 answered\n") == 0, "%s", buf);
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
	pipelined_pings_answered();
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

/* 40 source addresses (20 in each attacker namespace) hold 8 sockets
 * each, 320 in all for a budget of 64, and every socket sends one byte
 * (the type of a TLS handshake record) and is reopened when the agent
 * drops it: a connection that had sent a byte used to be as good as a
 * controller's, whose handshake a later accept of the same wake-up
 * dropped (8 of 10 pings failed, "dropped before handshake").  Every ping
 * must get through within its connect timeout while the flood runs. */
START_TEST(byte_flood_pings_get_through)
{
	char out[2][PATH_MAX + 16], srcs[2][512], *txt = NULL;
	struct attack att[2];
	double worst;

	for (int i = 0; i < 2; i++) {
		add_sources(i + 1, 100 + 20 * i, 20, srcs[i], sizeof(srcs[i]));
		snprintf(out[i], sizeof(out[i]), "%s/attack%d.out", h.tmp, i);
		att[i] = attack_bg(h.node[i + 1].ns, 160, 60, "byte", srcs[i], out[i]);
	}
	/* the flood is on once the agent drops connections over its budget */
	ck_assert_msg(cu_wait(log_matches, (void *)(uintptr_t)"before authentication: .*dropped "
	    "[1-9]", 10) >= 0, "the flood never filled the budget");
	worst = pings_within(10, IDLE_PING_S);
	ck_assert_msg(waitpid(att[0].pid, NULL, WNOHANG) == 0 &&
	    waitpid(att[1].pid, NULL, WNOHANG) == 0, "an attacker ended before the pings did");
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(attack_end(&att[i]), 0);
		ck_assert_int_eq(read_file_bounded(out[i], 1024, &txt, NULL), 0);
		printf("byte attacker %d opened %s", i + 1, txt);
		/* more than it holds at once: the agent dropped and it reopened */
		ck_assert_msg(atol(txt) > 160, "attacker %d opened only %s", i + 1, txt);
		free(txt);
	}
	printf("byte flood (40 addresses x 8 sockets): 10 of 10 pings ok, slowest %.3f s\n",
	    worst);
}
END_TEST

/* Before-authentication events the summaries of node01's log count so far
 * (refused, dropped, failed or abandoned, refused out of descriptors). */
static long
summarised(void)
{
	char *t = cu_slurp(h.node[0].log), *p;
	long sum = 0;

	for (p = t; (p = strstr(p, "before authentication: ")) != NULL; p++) {
		unsigned r, nf, d, f;

		if (sscanf(p, "before authentication: refused %u connection(s) over the "
		    "per-address limit and %u out of file descriptors, dropped %u over the budget "
		    "(least advanced first), %u handshake(s)", &r, &nf, &d, &f) == 4)
			sum += r + nf + d + f;
	}
	free(t);
	return sum;
}

/* Have the summaries counted *(long *)arg events? */
static int
summarised_at_least(void *arg)
{
	return summarised() >= *(long *)arg;
}

/* Lines in node01's log. */
static long
log_lines(void)
{
	return harness_sh_int("wc -l < '%s'", h.node[0].log);
}

/* Child, in the controller namespace: n connections that each send one
 * byte and close at once. */
static void
byte_and_close(int n)
{
	if (harness_enter_ns(h.ctl_ns) < 0)
		_exit(2);
	for (int i = 0; i < n; i++) {
		int fd = harness_dial(&h, 0);

		if (fd < 0)
			_exit(3);
		if (write(fd, "\x16", 1) != 1)
			_exit(4);
		close(fd);
	}
	_exit(0);
}

/* Child, in the controller namespace: a connection that speaks no TLS;
 * reads until the agent, its handshake failed, closes it. */
static void
junk_handshake(void)
{
	char buf[256];
	int fd;

	if (harness_enter_ns(h.ctl_ns) < 0 || (fd = harness_dial(&h, 0)) < 0)
		_exit(2);
	if (write(fd, "GET / HTTP/1.0\r\n\r\n", 18) != 18)
		_exit(3);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	_exit(0);
}

/* junk_handshake in a child, to its end. */
static void
junk_handshake_done(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		junk_handshake();
	ck_assert_int_eq(cu_reap(pid), 0);
}

/* 2000 connections that send a byte and close, against an agent logging
 * at info level (as deployed): each used to log a warning or two (18,070
 * lines in 3 s from a few such loops).  Now the log grows by the
 * once-a-second summaries only, and they count every one of them.
 * Then a failed handshake (summarised at once), and another right after
 * that summary and SIGTERM before the next one: the agent logs it as it
 * stops (it went unlogged). */
START_TEST(failed_handshakes_summarised)
{
	long want = 2000, lines0, lines;
	double waited;
	pid_t pid;

	harness_agent_stop(&h, 0, SIGTERM);
	snprintf(h.node[0].extra_args, sizeof(h.node[0].extra_args), "--log-level info");
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	lines0 = log_lines();
	if ((pid = fork()) == 0)
		byte_and_close((int)want);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(cu_reap(pid), 0);
	waited = cu_wait(summarised_at_least, &want, 20);
	lines = log_lines() - lines0;
	printf("%ld connections that sent a byte: %ld log lines, %ld counted in summaries\n",
	    want, lines, summarised());
	ck_assert_msg(lines <= 40, "%ld log lines for %ld connections", lines, want);
	ck_assert_msg(waited >= 0, "the summaries count %ld of %ld", summarised(), want);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);

	want = summarised() + 1;
	junk_handshake_done();
	ck_assert_msg(cu_wait(summarised_at_least, &want, 5) >= 0, "no summary of one");
	junk_handshake_done();
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_msg(summarised() == want + 1, "%ld of %ld summarised at shutdown:\n%s",
	    summarised(), want + 1, cu_slurp(h.node[0].log));
}
END_TEST

/* CPU time (user + system, clock ticks) process pid has used so far. */
static long
cpu_ticks(pid_t pid)
{
	return harness_sh_int("awk '{print $14 + $15}' /proc/%d/stat", (int)pid);
}

/* Is the time *(uint64_t *)arg (monotonic ns) past? */
static int
time_past(void *arg)
{
	return now_mono_ns() >= *(uint64_t *)arg;
}

/* Does node01 answer a ping? */
static int
ping_ok(void *arg)
{
	(void)arg;
	return harness_knobctl(&h, NULL, NULL, "--connect-timeout 2 ping -w node01") == 0;
}

/* For ms milliseconds, agent pid must use less than a fifth of a CPU and
 * log max_lines lines at most; what names the case in the figures. */
static void
quiet_while(pid_t pid, unsigned ms, long max_lines, const char *what)
{
	long t0 = cpu_ticks(pid), lines0 = log_lines(), ticks, lines;
	uint64_t until = now_mono_ns() + ms * 1000000ull;

	(void)cu_wait(time_past, &until, 2);
	ticks = cpu_ticks(pid) - t0;
	lines = log_lines() - lines0;
	printf("%s: %ld CPU ticks (of %ld a second), %ld log lines in %u ms\n", what, ticks,
	    sysconf(_SC_CLK_TCK), lines, ms);
	ck_assert_msg(ticks * 5000 < sysconf(_SC_CLK_TCK) * (long)ms,
	    "the agent used %ld ticks in %u ms", ticks, ms);
	ck_assert_msg(lines <= max_lines, "%ld log lines in %u ms", lines, ms);
}

/* Out of descriptors with the spare one lost: the agent's limit set to
 * its lowest free descriptor or its spare (a /dev/null above 2, the lowest
 * such), whichever is lower, so that the slot the spare frees is over the
 * limit when accept(2) comes, as when another thread takes it between the
 * close and the accept.  The agent used to lose its spare and spin on the
 * readable listener ("accept: Too many open files" at every wake-up, a
 * core at 100%).  Now it stops watching the listener for 100 ms at a time
 * (said once), uses little CPU, and accepts again, its spare taken back,
 * once the limit is restored. */
static void
spare_lost_no_spin(pid_t pid)
{
	long lim = harness_sh_int("cd /proc/%d/fd && i=0; while [ -L $i ]; do i=$((i+1)); done; "
	    "for f in *; do [ $f -gt 2 ] && [ \"$(readlink $f)\" = /dev/null ] && echo $f; done | "
	    "{ cat; echo $i; } | sort -n | head -1", (int)pid);
	struct rlimit old, rl;
	char out[PATH_MAX + 16];
	struct attack att;

	ck_assert_int_gt(lim, 2);
	ck_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, NULL, &old), 0);
	rl = (struct rlimit){ .rlim_cur = (rlim_t)lim, .rlim_max = old.rlim_max };
	ck_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, &rl, NULL), 0);
	snprintf(out, sizeof(out), "%s/attack.out", h.tmp);
	att = attack_bg(h.node[1].ns, 1, 60, "hold", "", out);
	ck_assert_msg(cu_wait(log_matches, (void *)(uintptr_t)"none in reserve|accept: Too many",
	    5) >= 0, "the agent never ran out of descriptors");
	quiet_while(pid, 500, 5, "out of descriptors, spare lost");
	ck_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, &old, NULL), 0);
	ck_assert_int_eq(harness_wait_log(&h, 0, "accepting connections again", 5), 0);
	ck_assert_int_eq(attack_end(&att), 0);
	ck_assert_msg(cu_wait(ping_ok, NULL, 5) >= 0, "no ping once descriptors were back");
}

/* The agent's descriptors limited to what it has open and 4 more; 40 idle
 * connections held open exhaust them.  accept(2) used to fail with EMFILE
 * on a level-triggered listener at once again (669,013 log lines in
 * 1.5 s, a core at 100%).  Over a second of the flood the agent uses
 * little CPU and logs little; once the flood ends, a ping gets through. */
START_TEST(out_of_descriptors_no_spin)
{
	pid_t pid = h.node[0].pid;
	long nfd = harness_sh_int("ls /proc/%d/fd | wc -l", (int)pid);
	struct rlimit rl = { .rlim_cur = (rlim_t)nfd + 4, .rlim_max = (rlim_t)nfd + 4 };
	char out[PATH_MAX + 16];
	struct attack att;

	ck_assert_int_gt(nfd, 0);
	ck_assert_int_eq(prlimit(pid, RLIMIT_NOFILE, &rl, NULL), 0);
	snprintf(out, sizeof(out), "%s/attack.out", h.tmp);
	att = attack_bg(h.node[1].ns, 40, 60, "hold", "", out);
	ck_assert_msg(cu_wait(log_matches, (void *)(uintptr_t)"out of file descriptors|Too many "
	    "open files", 10) >= 0, "the agent never ran out of descriptors");
	quiet_while(pid, 1000, 10, "out of descriptors");	/* a second of the flood */
	ck_assert_int_eq(attack_end(&att), 0);
	ck_assert_msg(cu_wait(ping_ok, NULL, 15) >= 0, "no ping after the flood");
	spare_lost_no_spin(pid);
}
END_TEST

/* Log lines escape control characters in the message: a peer's string (a
 * server name) cannot end the line and forge one of its own with a
 * journald priority prefix. */
START_TEST(log_escapes_control_chars)
{
	char path[] = "/tmp/knob-check-log.XXXXXX", *txt;
	int fd = mkstemp(path), saved = dup(2);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(saved, 0);
	fflush(stderr);
	ck_assert_int_eq(dup2(fd, 2), 2);
	log_init("knob-sim", LOG_LVL_INFO);
	log_warnx("SNI: no simulated node named '%s'; refused",
	    "evil\n<0>knob-sim: FORGED LINE\r\t\x7f\x01");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	txt = cu_slurp(path);
	unlink(path);
	ck_assert_msg(strncmp(txt, "<4>knob-sim: ", 13) == 0, "%s", txt);
	ck_assert_msg(strchr(txt, '\n') == txt + strlen(txt) - 1, "not one line: %s", txt);
	ck_assert_msg(strstr(txt, "named 'evil\\x0a<0>knob-sim: FORGED LINE\\x0d\\x09\\x7f"
	    "\\x01'; refused\n") != NULL, "%s", txt);
	free(txt);
}
END_TEST

/* A TLS connection to addr:port asking for server name name, to its end
 * (an alert: no such node); 0 when it was refused. */
static int
sni_dial(const char *addr, unsigned port, const char *name)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = -1;
	SSL *ssl = NULL;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (ctx != NULL && fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    (ssl = SSL_new(ctx)) != NULL && SSL_set_fd(ssl, fd) == 1 &&
	    SSL_set_tlsext_host_name(ssl, name) == 1)
		rc = SSL_connect(ssl) == 1 ? -1 : 0;
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* How many times s occurs in txt. */
static int
occurrences(const char *txt, const char *s)
{
	int n = 0;

	for (const char *p = txt; (p = strstr(p, s)) != NULL; p++)
		n++;
	return n;
}

/* The sum of the counts N after each "WHAT" in txt ("WHAT N ..."). */
static long
count_sum(const char *txt, const char *what)
{
	long sum = 0;

	for (const char *p = txt; (p = strstr(p, what)) != NULL; p++)
		sum += atol(p + strlen(what));
	return sum;
}

/* knob-sim --sni logs the first 10 server names it has no node for one by
 * one; later ones went unlogged.  13 of them, then SIGTERM at once: the
 * 11th is summarised at once, the last two (within the second) as it
 * stops. */
START_TEST(sni_refusals_logged)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	char dir[] = "/dev/shm/knob-check-attack.XXXXXX", log[PATH_MAX], *txt, *cmd;
	unsigned port = 19300 + (unsigned)getpid() % 100;
	pid_t sim;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(log, sizeof(log), "%s/sim.log", dir);
	cu_write(log, 0644, "%s", "");
	cmd = xasprintf("exec %s/knob-sim 1 --dir %s --sni --base 127.93.0.1 --port %u 2>%s",
	    bin, dir, port, log);
	if ((sim = fork()) == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	ck_assert_msg(cu_wait(file_matches, &(struct file_re){ log, "agents ready" }, 30) >= 0,
	    "knob-sim not ready: %s", cu_slurp(log));
	for (int i = 0; i < 13; i++)
		ck_assert_int_eq(sni_dial("127.93.0.1", port, "nosuch"), 0);
	kill(sim, SIGTERM);
	ck_assert_int_eq(cu_reap(sim), 0);
	txt = cu_slurp(log);
	cu_rm_rf(dir);
	ck_assert_msg(occurrences(txt, "SNI: no simulated node named 'nosuch'; refused") == 10,
	    "%s", txt);
	ck_assert_msg(count_sum(txt, "SNI: refused ") == 3, "3 refusals after the first 10, "
	    "not all logged:\n%s", txt);
	free(txt);
}
END_TEST

/* One ping over established ssl: 1 when it was answered. */
static int
ssl_ping(SSL *ssl)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping ping = KNOB__PING__INIT;
	uint8_t *f;
	size_t len;
	char buf[64];
	int ok;

	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	env.version = WIRE_VERSION;
	env.id = 1;
	frame_pack(&env, &f, &len);
	ok = SSL_write(ssl, f, (int)len) == (int)len && SSL_read(ssl, buf, sizeof(buf)) > 0;
	free(f);
	return ok;
}

/* A session of node01's, from a full handshake and one ping (its ticket
 * comes with the answer), for late_hello to resume; exits the child when
 * none comes. */
static SSL_SESSION *
ticket_of_node01(SSL_CTX *ctx)
{
	struct sockaddr_in me = { .sin_family = AF_INET }, to = { .sin_family = AF_INET,
	    .sin_port = htons(7420) };
	SSL_SESSION *sess;
	SSL *ssl;
	int fd;

	/* from TICKET_SRC: a controller authenticated from 198.18.0.1 would
	 * rank it above any flood, resuming or not (ctl_src.c) */
	inet_pton(AF_INET, TICKET_SRC, &me.sin_addr);
	inet_pton(AF_INET, h.node[0].addr, &to.sin_addr);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0 ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0 || (ssl = SSL_new(ctx)) == NULL ||
	    SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1 || !ssl_ping(ssl) ||
	    (sess = SSL_get1_session(ssl)) == NULL || !SSL_SESSION_is_resumable(sess))
		_exit(9);
	SSL_shutdown(ssl);
	SSL_free(ssl);
	close(fd);
	return sess;
}

/* Child, in the controller namespace: a controller whose connection the
 * agent accepts before its ClientHello leaves.  Says "connected" on w;
 * once r says go, sends the ClientHello (says "sent"); when hold, reads
 * none of the agent's answer until r says go again (an empty pipe stands
 * in for the socket's read side meanwhile), so that its next flight waits
 * on it; then completes the handshake and one ping and says "ok", or
 * what went wrong.  When resume, the ClientHello offers a session from
 * a ticket node01 gave it first, and a full handshake is "not resumed". */
static void
late_hello(int r, int w, int hold, int resume)
{
	struct timeval tv = { .tv_sec = 10 };
	SSL_SESSION *sess = NULL;
	SSL_CTX *ctx;
	SSL *ssl;
	int fd, rc, empty[2];
	char c;

	if (harness_enter_ns(h.ctl_ns) < 0 || (ctx = harness_tls_ctx(&h, "controller")) == NULL)
		_exit(2);
	if (resume)
		sess = ticket_of_node01(ctx);
	if ((fd = harness_dial(&h, 0)) < 0 || (ssl = SSL_new(ctx)) == NULL ||
	    SSL_set_fd(ssl, fd) != 1 || (sess != NULL && SSL_set_session(ssl, sess) != 1))
		_exit(3);
	if (write(w, "connected\n", 10) != 10 || read(r, &c, 1) != 1)
		_exit(4);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (hold && (pipe2(empty, O_NONBLOCK) < 0 || SSL_set_rfd(ssl, empty[0]) != 1))
		_exit(7);
	rc = SSL_connect(ssl);	/* done at once only when the agent runs and answers fast */
	if (rc != 1 && SSL_get_error(ssl, rc) != SSL_ERROR_WANT_READ)
		_exit(5);
	if (write(w, "sent\n", 5) != 5)
		_exit(6);
	if (hold && (read(r, &c, 1) != 1 || SSL_set_rfd(ssl, fd) != 1))
		_exit(8);
	fcntl(fd, F_SETFL, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (rc != 1 && SSL_connect(ssl) != 1) {
		dprintf(w, "dropped after %lu bytes from the agent\n",
		    (unsigned long)BIO_number_read(SSL_get_rbio(ssl)));
		_exit(0);
	}
	if (resume && !SSL_session_reused(ssl))
		dprintf(w, "not resumed\n");
	else
		dprintf(w, ssl_ping(ssl) ? "ok\n" : "no reply to the ping\n");
	_exit(0);
}

/* Does node01's accept queue (ss: Recv-Q of its listener) hold *(int *)arg? */
static int
backlog_holds(void *arg)
{
	return harness_sh_int("ip netns exec %s ss -Hltn 'sport = :7420' | awk '{print $2}'",
	    h.node[0].ns) >= *(int *)arg;
}

/* Has the ClientHello from the controller's address reached node01's socket? */
static int
hello_waiting(void *arg)
{
	(void)arg;
	return harness_sh_int("ip netns exec %s ss -Htn state established src %s:7420 dst 198.18.0.1 "
	    "| awk '{print $1}' | head -1", h.node[0].ns, h.node[0].addr) > 0;
}

/* Have *(int *)arg connections to node01 from 198.18.0.100-199 bytes
 * waiting in their sockets? */
static int
bytes_waiting(void *arg)
{
	return harness_sh_int("ip netns exec %s ss -Htn state established src %s:7420 | "
	    "awk '$1 > 0 && $4 ~ /^198\\.18\\.0\\.1[0-9][0-9]:/' | wc -l", h.node[0].ns,
	    h.node[0].addr) >= *(int *)arg;
}

/* Is process *(pid_t *)arg asleep in epoll_wait (nothing left to do)? */
static int
in_epoll_wait(void *arg)
{
	return harness_sh("grep -qE 'ep_poll|epoll_wait' /proc/%d/wchan", *(int *)arg) == 0;
}

/* Is process *(pid_t *)arg stopped (SIGSTOP taken)? */
static int
stopped(void *arg)
{
	return harness_sh("awk '{exit $3 != \"T\"}' /proc/%d/stat", *(int *)arg) == 0;
}

/* late_hello(hold, resume) in a child, connected: its pid, *go the pipe that
 * tells it to go on, *in what it says. */
static pid_t
late_hello_start(int hold, int resume, int *go, FILE **in)
{
	char line[128] = "";
	int to_child[2], from_child[2];
	pid_t pid;

	ck_assert_int_eq(pipe(to_child), 0);
	ck_assert_int_eq(pipe(from_child), 0);
	if ((pid = fork()) == 0) {
		close(to_child[1]);
		close(from_child[0]);
		late_hello(to_child[0], from_child[1], hold, resume);
	}
	close(to_child[0]);
	close(from_child[1]);
	*go = to_child[1];
	*in = fdopen(from_child[0], "r");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), *in));
	ck_assert_str_eq(line, "connected\n");
	return pid;
}

/* late_hello in a child (its pid; *go: the pipe that tells it to go on,
 * *in: what it says), connected and seen by the agent; then the agent
 * stopped between wake-ups, and an attacker in mode (*att) with 64
 * connections from 8 source addresses waiting in its accept queue. */
static pid_t
late_hello_queued(const char *mode, int *go, FILE **in, struct attack *att)
{
	char out[PATH_MAX + 16], srcs[400];
	int want = 64;
	pid_t pid, agent = h.node[0].pid;

	/* first: the controller has 2 s from its accept to its first byte */
	add_sources(1, 100, 8, srcs, sizeof(srcs));
	pid = late_hello_start(0, 0, go, in);
	ck_assert_int_eq(harness_wait_log(&h, 0, "from 198.18.0.1:", 5), 0);
	/* stopped between wake-ups, not inside the one that accepted it */
	ck_assert_msg(cu_wait(in_epoll_wait, &agent, 5) >= 0, "the agent never went idle");
	ck_assert_int_eq(kill(agent, SIGSTOP), 0);
	ck_assert_msg(cu_wait(stopped, &agent, 5) >= 0, "the agent never stopped");
	snprintf(out, sizeof(out), "%s/attack.out", h.tmp);
	*att = attack_bg(h.node[1].ns, 64, 60, mode, srcs, out);
	ck_assert_msg(cu_wait(backlog_holds, &want, 10) >= 0, "the accept queue never held 64");
	return pid;
}

/* The agent accepted a controller before its ClientHello came; the
 * ClientHello arrives while the agent is busy (stopped here), after 64
 * idle connections from 8 addresses wait in the accept queue.  The next
 * wake-up accepts them all, which fills the budget of 64: the controller
 * used to be dropped, as old as it was and no further than the fresh
 * accepts ("dropped before handshake", ~1 in 12 runs of the budget test).
 * Now its waiting ClientHello is read first, and an idle one goes (or
 * none: the controller may finish its handshake meanwhile). */
START_TEST(waiting_hello_not_dropped)
{
	char line[128] = "";
	struct attack att;
	pid_t pid, agent = h.node[0].pid;
	int go;
	FILE *in;

	pid = late_hello_queued("hold", &go, &in, &att);
	ck_assert_int_eq(write(go, "g", 1), 1);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), in));
	ck_assert_str_eq(line, "sent\n");
	ck_assert_msg(cu_wait(hello_waiting, NULL, 5) >= 0, "the ClientHello never arrived");
	ck_assert_int_eq(kill(agent, SIGCONT), 0);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), in));
	ck_assert_int_eq(cu_reap(pid), 0);
	fclose(in);
	close(go);
	/* the budget was full with the controller the oldest of the least
	 * advanced: the agent read its ClientHello instead of dropping it */
	ck_assert_int_eq(harness_wait_log(&h, 0, "connections: reading what 198.18.0.1:", 5), 0);
	ck_assert_msg(strcmp(line, "ok\n") == 0, "the controller: %s", line);
	ck_assert_int_eq(attack_end(&att), 0);
}
END_TEST

/* The agent accepted a controller before its ClientHello came; while the
 * agent is stopped, 64 connections from 8 addresses that speak no TLS
 * wait in its accept queue.  The next wake-up accepts them all: each
 * handshake fails at its first step, and the connection lingers (2 s at
 * most) for its last words; the 64th fills the budget.  The controller,
 * which had sent nothing, used to be dropped as the least advanced, before
 * connections whose handshakes had already failed.  Those go first now,
 * and the controller's handshake and ping succeed. */
START_TEST(failed_handshakes_evicted_first)
{
	char line[128] = "";
	struct attack att;
	pid_t pid, agent = h.node[0].pid;
	int go, st;
	FILE *in;

	pid = late_hello_queued("junk", &go, &in, &att);
	ck_assert_msg(cu_wait(bytes_waiting, &(int){ 64 }, 5) >= 0, "the junk never arrived");
	ck_assert_int_eq(kill(agent, SIGCONT), 0);
	ck_assert_int_eq(harness_wait_log(&h, 0, "connections: dropping the least advanced", 5), 0);
	ck_assert_int_eq(write(go, "g", 1), 1);
	if (fgets(line, sizeof(line), in) == NULL)
		snprintf(line, sizeof(line), "its connection gone before its ClientHello\n");
	else if (strcmp(line, "sent\n") == 0 && fgets(line, sizeof(line), in) == NULL)
		snprintf(line, sizeof(line), "no answer\n");
	fclose(in);
	close(go);
	st = cu_reap(pid);
	ck_assert_int_eq(attack_end(&att), 0);
	ck_assert_msg(!harness_log_has(&h, 0, "nothing received in"), "the controller's first-byte "
	    "deadline passed: too slow a run to tell");
	ck_assert_msg(strcmp(line, "ok\n") == 0, "the controller (exit %d): %s", st, line);
	ck_assert_int_eq(st, 0);
}
END_TEST

/* Has the agent's answer to the ClientHello from the controller's
 * namespace reached its socket there (bytes waiting unread)? */
static int
answer_waiting(void *arg)
{
	(void)arg;
	return harness_sh_int("ip netns exec %s ss -Htn state established dst %s:7420 "
	    "| awk '{print $1}' | head -1", h.ctl_ns, h.node[0].addr) > 0;
}

/* Has node01 dropped *(int *)arg connections from 198.18.0.100-199 over
 * its budget? */
static int
flood_dropped(void *arg)
{
	return harness_sh_int("grep -c 'dropping the least advanced, from 198\\.18\\.0\\.1[0-9][0-9]:' "
	    "'%s'", h.node[0].log) >= *(int *)arg;
}

/* The agent has answered a controller's ClientHello (resuming a session
 * when resume), and its next flight is a round trip away (held here until
 * 32 of the flood's connections have been dropped over the budget); 128
 * real ClientHellos never finished, from nsrc addresses, keep all 64
 * unauthenticated places full of answered handshakes.  The controller's
 * must not be the one dropped; its handshake and ping succeed. */
static void
answered_held(int nsrc, int resume)
{
	char out[PATH_MAX + 16], srcs[2048], line[128] = "";
	int go, dropped = 32;
	uint64_t t0 = now_mono_ns();
	struct attack att;
	pid_t pid;
	FILE *in;

	add_sources(1, 100, nsrc, srcs, sizeof(srcs));
	pid = late_hello_start(1, resume, &go, &in);
	ck_assert_int_eq(write(go, "g", 1), 1);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), in));
	ck_assert_str_eq(line, "sent\n");
	ck_assert_msg(cu_wait(answer_waiting, NULL, 5) >= 0, "the agent never answered");
	snprintf(out, sizeof(out), "%s/attack.out", h.tmp);
	att = attack_bg(h.node[1].ns, 128, 60, "hello", srcs, out);
	ck_assert_msg(cu_wait(flood_dropped, &dropped, 4) >= 0, "the flood's connections were "
	    "never dropped over the budget");
	ck_assert_int_eq(write(go, "g", 1), 1);
	if (fgets(line, sizeof(line), in) == NULL)
		snprintf(line, sizeof(line), "no word from the controller\n");
	fclose(in);
	close(go);
	ck_assert_int_eq(cu_reap(pid), 0);
	ck_assert_int_eq(attack_end(&att), 0);
	ck_assert_msg(!harness_log_has(&h, 0, "dropping the least advanced, from 198.18.0.1:"),
	    "the controller's answered handshake was dropped; the controller: %s", line);
	ck_assert_msg(strcmp(line, "ok\n") == 0, "the controller: %s", line);
	printf("%s handshake held while %d of a ClientHello flood from %d addresses "
	    "were dropped: ok (%.2f s)\n", resume ? "resumed" : "answered", dropped, nsrc,
	    (double)(now_mono_ns() - t0) / 1e9);
}

/* A flood from 32 addresses, 4 places each, and a controller with no
 * ticket.  Its handshake, the oldest answered one, used to be the one
 * dropped (its ping failed, 9 runs of 9, one under ASan).  Now the
 * busiest source gives up its place first: the flood's hold two or more
 * per address, the controller's address one. */
START_TEST(answered_handshake_not_dropped)
{
	answered_held(32, 0);
}
END_TEST

/* A flood from 128 addresses, one place each: the busiest-source rule
 * cannot tell the controller apart, and its handshake, the oldest among
 * equals, was dropped (4 runs of 4).  A controller resuming a session
 * from one of the agent's tickets (knobctl's ticket cache, the holder) is
 * ranked above every answered handshake the flood can make, and kept. */
START_TEST(resumed_handshake_not_dropped)
{
	ck_assert_int_eq(harness_sh("ip -n %s addr add " TICKET_SRC "/24 dev br0", h.ctl_ns), 0);
	answered_held(128, 1);
}
END_TEST

/* node01's learned controllers' sources (agent/ctl_src.c), in a static
 * buffer. */
static const char *
sources_file(void)
{
	static char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/controller-sources", h.node[0].state_dir);
	return path;
}

/* node01 restarted (SIGTERM, the same state directory) with the file the
 * first one wrote, plus an entry that is no address and 8 sources more
 * (the 9th over the bound): each is a warning naming file:line, and the
 * source it learned still ranks first.  A known source is no reason to
 * write the file again: the test's lines are still there. */
static void
sources_kept_over_restart(void)
{
	struct stat st;
	FILE *f;

	harness_agent_stop(&h, 0, SIGTERM);	/* its write is a work item: done by exit */
	ck_assert_int_eq(stat(sources_file(), &st), 0);
	ck_assert_msg((st.st_mode & 0777) == 0600, "mode %o", (unsigned)(st.st_mode & 0777));
	ck_assert_int_eq(cu_file_has(sources_file(), "\n198.18.0.1\n"), 1);
	ck_assert_ptr_nonnull(f = fopen(sources_file(), "a"));
	fprintf(f, "198.18.0.300\n");
	for (int i = 1; i <= 8; i++)
		fprintf(f, "192.0.2.%d\n", i);
	fclose(f);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	ck_assert_msg(harness_log_has(&h, 0, "controller-sources:3: '198.18.0.300' is not an "
	    "address"), "no warning for line 3");
	ck_assert_msg(harness_log_has(&h, 0, "controller-sources:11: more than 8 sources"),
	    "no warning for line 11");
	answered_held(128, 0);
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(cu_file_has(sources_file(), "198.18.0.300"), 1);
}

/* The same flood, and a controller with no ticket (its cache emptied, a
 * new CA, a restarted holder's first round): neither the busiest-source
 * rule nor the resumed rank tells it apart, and it was dropped (the
 * known limit of the rank above).  Its source now ranks above the
 * flood's: one a controller authenticated from before, also before the
 * agent restarted (a restarted agent forgot it, and dropped the
 * controller: 5 runs of 5), and one given by --controller-from on an
 * agent whose file of learned sources is too large to be read.  (A
 * source learned in this run ranks by the same list the restarted agent
 * reads from the file, which is written from it: the restart covers both.) */
START_TEST(controller_source_kept)
{
	char *out = NULL;

	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
	sources_kept_over_restart();
	/* a source that is no address is refused at start, saying which */
	ck_assert_int_ne(cu_sh_out(&out, "%s/knobd --stdio --state-dir %s --controller-from "
	    "198.18.0.0/31,10.0.0.300 </dev/null", h.bin, h.tmp), 0);
	ck_assert_msg(strstr(out, "--controller-from: '10.0.0.300' is not an address") != NULL,
	    "%s", out);
	free(out);
	cu_write(sources_file(), 0600, "198.18.0.1\n%01100d\n", 0);
	snprintf(h.node[0].extra_args, sizeof(h.node[0].extra_args),
	    "--controller-from 192.0.2.9,198.18.0.0/31");
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	ck_assert_msg(harness_log_has(&h, 0, "controller-sources:2: over 1024 bytes"),
	    "no warning for the file too large");
	ck_assert_msg(!harness_log_has(&h, 0, "learned controllers' sources"), "a source of a file "
	    "too large was used");
	answered_held(128, 0);
}
END_TEST

/* A harness_child in node02's namespace: 16 connections to
 * [fd00:7e::1]:7420 from fd00:7e::100 to fd00:7e::10f, one /64, held
 * until stop ends: 16. */
static int
v6_holder(int ready, int stop)
{
	int fds[16];
	char c;

	for (int i = 0; i < 16; i++) {
		struct sockaddr_in6 me = { .sin6_family = AF_INET6 }, to = { .sin6_family = AF_INET6,
		    .sin6_port = htons(7420) };
		char src[32];

		snprintf(src, sizeof(src), "fd00:7e::%x", 0x100 + i);
		inet_pton(AF_INET6, src, &me.sin6_addr);
		inet_pton(AF_INET6, "fd00:7e::1", &to.sin6_addr);
		if ((fds[i] = socket(AF_INET6, SOCK_STREAM, 0)) < 0 ||
		    bind(fds[i], (struct sockaddr *)&me, sizeof(me)) < 0 ||
		    connect(fds[i], (struct sockaddr *)&to, sizeof(to)) < 0)
			return -1;	/* harness_child_start: "did not start" */
	}
	if (write(ready, "", 1) != 1 || read(stop, &c, 1) < 0)
		return -1;
	return 16;
}

/* Are *(int *)arg connections from fd00:7e::/64 refused in node01's log? */
static int
v6_refused(void *arg)
{
	return harness_sh_int("grep -c 'refusing a connection from fd00:7e::/64' '%s'",
	    h.node[0].log) >= *(int *)arg;
}

/* The per-address budget of unauthenticated connections (8) counts an
 * IPv6 source by its /64: one host picks its source address from a whole
 * /64, and 16 idle connections from 16 addresses of one were all let in
 * (the budget's 64 from one host).  Now 8 get in and 8 are refused. */
START_TEST(ipv6_source_budget_per_prefix)
{
	struct harness_child holder;
	int want = 8;

	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip -6 addr add fd00:7e::1/64 dev eth0 nodad"), 0);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(harness_node_sh(&h, 1, "ip -6 addr add fd00:7e::%x/64 dev eth0 "
		    "nodad", 0x100 + i), 0);
	snprintf(h.node[0].extra_args, sizeof(h.node[0].extra_args), "--listen [::]:7420");
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	harness_child_start(&holder, h.node[1].ns, v6_holder);
	ck_assert_msg(cu_wait(v6_refused, &want, 5) >= 0, "%ld of 16 connections from one /64 "
	    "refused", harness_sh_int("grep -c 'refusing a connection from fd00:7e::' '%s'",
	    h.node[0].log));
	ck_assert_int_eq(harness_child_end(&holder), 16);
	ck_assert_int_eq(harness_sh_int("grep -c 'refusing a connection from fd00:7e::/64' '%s'",
	    h.node[0].log), 8);
}
END_TEST

/* Child, in node02's namespace: listens on node02's address and port;
 * closes the first drop connections unanswered (all when drop < 0) and
 * relays each later one to node02's agent, listening at relay_to; when r
 * ends, says on w how many connections came. */
static void
dropper(int drop, const char *relay_to, int r, int w)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(7420) };
	int lfd, one = 1, n = 0;

	if (harness_enter_ns(h.node[1].ns) < 0 || (lfd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		_exit(2);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	inet_pton(AF_INET, h.node[1].addr, &sa.sin_addr);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 16) < 0)
		_exit(3);
	if (write(w, "listening\n", 10) != 10)
		_exit(4);
	for (;;) {
		struct pollfd p[3] = { { .fd = r, .events = POLLIN }, { .fd = lfd, .events = POLLIN } };
		int c, up;

		if (poll(p, 2, -1) < 0 || (p[0].revents && !p[1].revents))
			break;
		if ((c = accept(lfd, NULL, NULL)) < 0)
			_exit(5);
		if (++n <= drop || drop < 0) {
			close(c);
			continue;
		}
		sa.sin_addr.s_addr = inet_addr(relay_to);
		if ((up = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
		    connect(up, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(6);
		p[1] = (struct pollfd){ .fd = c, .events = POLLIN };
		p[2] = (struct pollfd){ .fd = up, .events = POLLIN };
		for (;;) {
			char buf[16384];
			ssize_t k = 0;

			if (poll(p, 3, -1) < 0 || p[0].revents)
				break;
			if (p[1].revents && ((k = read(c, buf, sizeof(buf))) <= 0 || write(up, buf, (size_t)k) != k))
				break;
			if (p[2].revents && ((k = read(up, buf, sizeof(buf))) <= 0 || write(c, buf, (size_t)k) != k))
				break;
		}
		close(c);
		close(up);
	}
	dprintf(w, "%d\n", n);
	_exit(0);
}

/* Start dropper(drop) in the background: its pid; *r and *w the pipes
 * (close *r's peer to end it, read its count from *w). */
static pid_t
dropper_bg(int drop, const char *relay_to, int *stop, FILE **count)
{
	int to[2], from[2];
	char line[32];
	pid_t pid;

	ck_assert_int_eq(pipe(to), 0);
	ck_assert_int_eq(pipe(from), 0);
	if ((pid = fork()) == 0) {
		close(to[1]);
		close(from[0]);
		dropper(drop, relay_to, to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	*stop = to[1];
	*count = fdopen(from[0], "r");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), *count));
	ck_assert_str_eq(line, "listening\n");
	return pid;
}

/* End the dropper: how many connections it took. */
static int
dropper_end(pid_t pid, int stop, FILE *count)
{
	int n = -1;

	close(stop);
	ck_assert_int_eq(fscanf(count, "%d", &n), 1);
	fclose(count);
	ck_assert_int_eq(cu_reap(pid), 0);
	return n;
}

/* An agent that drops a connection before the handshake (its budget full
 * under a flood) is dialled again: knobctl's first connection to node02
 * is closed unanswered and the next one is relayed to node02's agent (at
 * a second address).  The ping used to fail "dropped before handshake";
 * now it succeeds on the second dial.  One that keeps dropping is dialled
 * three times in all, then reported. */
START_TEST(dropped_dial_retried)
{
	char *o = NULL, *e = NULL, save[sizeof(h.node[1].addr)];
	FILE *count;
	int stop, rc;
	pid_t pid;

	ck_assert_int_eq(harness_node_sh(&h, 1, "ip addr add 198.18.0.200/24 dev eth0"), 0);
	memcpy(save, h.node[1].addr, sizeof(save));
	snprintf(h.node[1].addr, sizeof(h.node[1].addr), "198.18.0.200");
	rc = harness_agent_start(&h, 1);
	memcpy(h.node[1].addr, save, sizeof(save));
	ck_assert_int_eq(rc, 0);

	pid = dropper_bg(1, "198.18.0.200", &stop, &count);
	rc = harness_knobctl_debug(&h, &o, &e, "ping -w node02");
	ck_assert_int_eq(dropper_end(pid, stop, count), 2);
	ck_assert_msg(rc == 0, "exit %d: %s%s", rc, o, e);
	ck_assert_ptr_nonnull(strstr(e, "node02: dropped before handshake; dialling again (1 of 2)"));

	pid = dropper_bg(-1, "198.18.0.200", &stop, &count);
	rc = harness_knobctl_debug(&h, &o, &e, "ping -w node02");
	ck_assert_int_eq(dropper_end(pid, stop, count), 3);
	ck_assert_int_ne(rc, 0);
	ck_assert_ptr_nonnull(strstr(o, "dropped before handshake (agent busy or filtered)"));
	free(o);
	free(e);
}
END_TEST

/* A harness_child in the controller's namespace: a peer with the
 * controller's certificate that sends 64 frames that do not decode at a
 * time, dialling again as soon as node01 closes it, until stop: the
 * connections it made. */
static int
bad_framer(int ready, int stop)
{
	SSL_CTX *ctx = harness_tls_ctx(&h, "controller");
	uint8_t junk[64 * 20], b[256];
	int n = 0;

	for (int i = 0; i < 64; i++) {	/* a 16-byte body of wire type 7: no protobuf */
		memcpy(junk + i * 20, "\0\0\0\x10", 4);
		memset(junk + i * 20 + 4, 0xff, 16);
	}
	if (ctx == NULL || write(ready, "", 1) != 1)
		return -1;
	for (;;) {
		struct pollfd pf = { .fd = stop, .events = POLLIN };
		SSL *s;

		if (poll(&pf, 1, 0) != 0)
			break;
		if ((s = harness_tls_dial(&h, ctx, 0)) == NULL)
			continue;
		n++;
		if (SSL_write(s, junk, (int)sizeof(junk)) > 0)
			while (SSL_read(s, b, (int)sizeof(b)) > 0)
				;	/* the agent's error, until it closes */
		harness_tls_close(s);
	}
	SSL_CTX_free(ctx);
	return n;
}

/* node01's log has no lease expiry. */
static void
lease_held(void)
{
	ck_assert_msg(!harness_log_has(&h, 0, "lease expired"), "node01's lease expired under the "
	    "flood:\n%s", cu_slurp(h.node[0].log));
}

/* The phase record of a flooded run: ok, every thread counted, each
 * writing its whole file (threads x size bytes, node01 its half). */
static void
flooded_phase_whole(json_object *doc, int threads, int64_t size)
{
	json_object *p = cu_phase(doc, 0), *pn = cu_get(p, "per_node");

	ck_assert_str_eq(cu_str(p, "status"), "ok");
	ck_assert_int_eq(cu_int(p, "threads_reported"), threads);
	ck_assert(!json_object_get_boolean(cu_get(p, "partial")));
	ck_assert_int_eq(json_object_array_length(cu_get(p, "missing")), 0);
	ck_assert_int_eq(json_object_array_length(cu_get(p, "errors")), 0);
	ck_assert_int_eq(cu_int(p, "bytes"), threads * size);
	ck_assert_int_eq(json_object_array_length(pn), 2);
	for (size_t i = 0; i < 2; i++) {
		ck_assert_str_eq(cu_str(json_object_array_get_idx(pn, i), "status"), "ok");
		ck_assert_int_eq(cu_int(json_object_array_get_idx(pn, i), "bytes"),
		    threads / 2 * size);
	}
	printf("flooded phase: %.0f B/s in %.2f s (%.1f s at the rate limit)\n",
	    cu_num(p, "rate"), cu_num(p, "elapsed_s"), (double)size / 4096 / 16);
}

/* The floods of flood_during_phase on node01's port, from node03's
 * namespace and (the framer) the controller's. */
struct flood {
	struct attack att[3];
	char out[3][PATH_MAX + 16];
	struct harness_child framer;
};

static const char *const flood_mode[3] = { "reopen", "hello", "slow" };

/* Start every flood: 1000 idle sockets from 12 addresses, 200 real
 * ClientHellos from 32, 32 slowloris sockets from 4, and the framer; once
 * node01 reports refusals.  The ClientHellos alone can fill all 64
 * unauthenticated places (8 per address) with handshakes the agent has
 * answered: the controller's own, answered too, must not be the one
 * dropped (unauth_room: the busiest source gives up its place first). */
static void
flood_start(struct flood *f)
{
	static const int nconn[3] = { 1000, 200, 32 }, nsrc[3] = { 12, 32, 4 },
	    first[3] = { 100, 120, 160 };
	char srcs[512];

	for (int i = 0; i < 3; i++) {
		add_sources(2, first[i], nsrc[i], srcs, sizeof(srcs));
		snprintf(f->out[i], sizeof(f->out[i]), "%s/attack-%s.out", h.tmp, flood_mode[i]);
		f->att[i] = attack_bg(h.node[2].ns, nconn[i], 60, flood_mode[i], srcs, f->out[i]);
	}
	harness_child_start(&f->framer, h.ctl_ns, bad_framer);
	ck_assert_msg(harness_wait_log(&h, 0, "before authentication: refused", 10) == 0,
	    "no summary of refusals from node01 in 10 s: the flood never reached it, or its "
	    "loop is starved");
}

/* End every flood, each of which must have lasted until now; print what
 * each did. */
static void
flood_end(struct flood *f)
{
	char *txt = NULL;

	for (int i = 0; i < 3; i++)
		ck_assert_msg(waitpid(f->att[i].pid, NULL, WNOHANG) == 0, "the %s attacker ended "
		    "before the run did", flood_mode[i]);
	printf("the framer made %d connections\n", harness_child_end(&f->framer));
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(attack_end(&f->att[i]), 0);
		ck_assert_int_eq(read_file_bounded(f->out[i], 1024, &txt, NULL), 0);
		printf("%s attacker opened %s", flood_mode[i], txt);
		free(txt);
	}
}

/* The document of the knobctl run pid that wrote outf, which must exit 0. */
static json_object *
run_doc(pid_t pid, const char *outf)
{
	json_object *doc;
	char *txt = NULL;

	ck_assert_int_eq(cu_reap(pid), 0);
	ck_assert_int_eq(read_file_bounded(outf, 1 << 24, &txt, NULL), 0);
	ck_assert_msg((doc = json_tokener_parse(txt)) != NULL, "not JSON: %s", txt);
	free(txt);
	return doc;
}

/* Every flood at once on node01's port from before a benchmark run on
 * node01 and node02 (lease 3 s) dials its agents until after it ends:
 * 1000 idle sockets from 12 addresses (reopened when dropped: over the
 * per-address limit and the budget), 200 real ClientHellos never
 * finished (each costs the agent a key exchange and a signature) from 32
 * more, 32 slowloris sockets sending their ClientHello a byte a second,
 * and a peer with the controller's certificate sending undecodable
 * frames, dialling again at once each time it is closed.  The run gets
 * in, its phase completes with every byte counted, no lease expires,
 * pings get through during the flood (each at its first try: a dropped
 * handshake fails the test), and node01 serves after it. */
START_TEST(flood_during_phase)
{
	char outf[PATH_MAX + 16], dir[PATH_MAX];
	const int64_t size = 256 * 1024;
	struct flood f;
	json_object *doc;
	long cpu0;
	double worst;
	pid_t pid;

	harness_agent_stop(&h, 0, SIGTERM);	/* at info level, as deployed */
	snprintf(h.node[0].extra_args, sizeof(h.node[0].extra_args), "--log-level info");
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	snprintf(dir, sizeof(dir), "%s/data", h.tmp);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(outf, sizeof(outf), "%s/flood.json", h.tmp);
	cpu0 = cpu_ticks(h.node[0].pid);
	flood_start(&f);
	/* 64 ops of 4 KiB at 16 a second: 4 s, longer than the lease */
	pid = harness_knobctl_bg(&h, outf, "&2", "--json bench seq-write -w node[01-02] --dir %s "
	    "--threads 4 --bs 4k --size %lld --rate-iops 16 --lease 3", dir, (long long)size);
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(harness_wait_log(&h, 0, ": running", 60) == 0, "node01 never ran the phase");
	worst = pings_within(3, FLOOD_PING_S);
	doc = run_doc(pid, outf);
	printf("node01 under the flood: %.1f s of CPU; pings: slowest %.3f s\n",
	    (double)(cpu_ticks(h.node[0].pid) - cpu0) / (double)sysconf(_SC_CLK_TCK), worst);
	flood_end(&f);
	flooded_phase_whole(doc, 4, size);
	json_object_put(doc);
	lease_held();
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node[01-02]"), 0);
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
	tcase_add_test(tc, byte_flood_pings_get_through);
	tcase_add_test(tc, failed_handshakes_summarised);
	tcase_add_test(tc, out_of_descriptors_no_spin);
	tcase_add_test(tc, waiting_hello_not_dropped);
	tcase_add_test(tc, dropped_dial_retried);
	tcase_add_test(tc, failed_handshakes_evicted_first);
	tcase_add_test(tc, answered_handshake_not_dropped);
	tcase_add_test(tc, resumed_handshake_not_dropped);
	tcase_add_test(tc, controller_source_kept);
	tcase_add_test(tc, ipv6_source_budget_per_prefix);
	suite_add_tcase(s, tc);
	tc = cu_tcase("phase", setup, teardown, 120);
	tcase_add_test(tc, flood_during_phase);
	suite_add_tcase(s, tc);
	tc = cu_tcase("log", NULL, NULL, 30);
	tcase_add_test(tc, log_escapes_control_chars);
	tcase_add_test(tc, sni_refusals_logged);
	suite_add_tcase(s, tc);
	return s;
}

int
main(int argc, char **argv)
{
	if (argc >= 7 && strcmp(argv[1], "attack") == 0)
		return attacker(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), argv[6],
		    argv + 7, argc - 7);
	if (realpath("/proc/self/exe", self) == NULL)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	return cu_run(attack_suite());
}
