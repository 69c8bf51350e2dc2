/* README claims about the agent's TLS and connection handling, each
 * against a real knobd in a network namespace (tests/harness.h), with
 * OpenSSL clients this test drives itself from the controller namespace:
 *
 * - "Mutual TLS 1.3 only": a client capped at TLS 1.2 is refused in the
 *   handshake, and the agent goes on serving;
 * - "Certificates are Ed25519, key exchange X25519": what knob's own client
 *   context (the one knobctl uses) negotiates with the agent;
 * - "2 s for the first byte of the ClientHello, 5 s for the whole
 *   handshake": a silent client and a stalled ClientHello are closed on
 *   those deadlines, not before;
 * - "authenticated controllers count only against their own cap (256)":
 *   256 held controllers are served, the 257th gets Error{EBUSY}, and a
 *   new one gets in once one leaves;
 * - "Logs go to stderr as <prio>knobd: file:line: message": every line of
 *   the agent's log, and the priority of each level (3, 4, 6, 7);
 * - the controller: "at most 512 connects/handshakes are in flight at once
 *   and the open-file limit is raised to its hard maximum": knobctl started
 *   with a soft limit of 256 against 600 targets that accept TCP and never
 *   answer TLS, its sockets counted in /proc while it runs. */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <regex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <json-c/json.h>

#include "testutil.h"
#include "harness.h"
#include "log.h"
#include "tls.h"
#include "util.h"
#include "wire.h"

#define AUTH_CAP	256	/* agent_cfg.max_conns default (README) */
#define FO_WINDOW	512	/* knobctl's connects + handshakes in flight (README) */
#define NTARGETS	600

static struct harness h;

static void
setup(void)
{
	ck_assert_msg(harness_start(&h, 1, 1) == 0, "harness start failed");
}

static void
teardown(void)
{
	harness_stop(&h);
}

/* One request of body type body (ping or facts) over ssl; the reply's
 * body type, or -1 when there was none within 10 s.  *code: the Error's
 * code when the reply is an Error. */
static int
request(SSL *ssl, Knob__Envelope__BodyCase body, int *code)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Ping ping = KNOB__PING__INIT;
	struct conn c;
	int r = -1;

	conn_init(&c, SSL_get_fd(ssl), SSL_get_fd(ssl), ssl);
	env.id = 7;
	env.body_case = body;
	env.ping = &ping;
	if (conn_send_sync(&c, &env, 10000) == 0 && conn_recv_sync(&c, &got, 10000) == 1) {
		r = (int)got->body_case;
		if (got->body_case == KNOB__ENVELOPE__BODY_ERROR && code != NULL)
			*code = got->error->code;
		knob__envelope__free_unpacked(got, NULL);
	}
	c.ssl = NULL;	/* the caller's */
	conn_reset(&c);
	return r;
}

/* Seconds until the peer closes fd (EOF or reset), -1 after max seconds. */
static double
closed_after(int fd, uint64_t t0, double max)
{
	char buf[256];

	while ((double)(now_mono_ns() - t0) / 1e9 < max) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 50) > 0 && read(fd, buf, sizeof(buf)) <= 0)
			return (double)(now_mono_ns() - t0) / 1e9;
	}
	return -1;
}

#define HALF_PINGS 100	/* more than a turn's frames (FRAMES_PER_TURN, 64) */
#define STUCK_PINGS 12000	/* ~680 KB of answers: more than the sockets hold, less
				 * than the agent's write queue (WQ_MAX, 1 MiB) */

/* Queue n pings (ids 1..n) on c and write them all.  0 or -1. */
static int
send_pings(struct conn *c, int n)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping ping = KNOB__PING__INIT;

	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	for (int i = 1; i <= n; i++) {
		env.id = (uint64_t)i;
		if (conn_send(c, &env) < 0)
			return -1;
	}
	while (conn_flush(c) == 0)
		;	/* a blocking socket: returns 0 only for OpenSSL's own reasons */
	return c->wq_head == NULL ? 0 : -1;
}

/* A controller that sends pings, then close_notify and shuts down its
 * write side (a half-close): every ping is answered before the agent
 * closes.  The agent used to close at once, dropping the answers. */
START_TEST(half_close_answered)
{
	Knob__Envelope *got;
	SSL_CTX *ctx;
	struct conn c;
	SSL *ssl;
	int pongs = 0, r;

	ck_assert_int_eq(harness_enter_ns(h.ctl_ns), 0);
	ck_assert_ptr_nonnull(ctx = harness_tls_ctx(&h, "controller"));
	ck_assert_ptr_nonnull(ssl = harness_tls_dial(&h, ctx, 0));
	conn_init(&c, SSL_get_fd(ssl), SSL_get_fd(ssl), ssl);
	ck_assert_int_eq(send_pings(&c, HALF_PINGS), 0);
	ck_assert_int_ge(SSL_shutdown(ssl), 0);	/* close_notify: no more requests */
	ck_assert_int_eq(shutdown(SSL_get_fd(ssl), SHUT_WR), 0);
	while ((r = conn_recv_sync(&c, &got, 10000)) == 1) {
		pongs += got->body_case == KNOB__ENVELOPE__BODY_PONG && got->id >= 1 &&
		    got->id <= HALF_PINGS;
		knob__envelope__free_unpacked(got, NULL);
	}
	ck_assert_msg(pongs == HALF_PINGS, "%d of %d pings answered after the half-close (%s)",
	    pongs, HALF_PINGS, r == 0 ? "timed out" : c.err);
	ck_assert_int_eq(r, -1);	/* then the agent closed */
	close(SSL_get_fd(ssl));
	conn_reset(&c);
	SSL_CTX_free(ctx);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
}
END_TEST

/* A TLS connection to agent 0 whose receive buffer is as small as the
 * kernel allows (so that the agent's answers soon wait in its own queue). */
static SSL *
dial_small_window(SSL_CTX *ctx)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(7420) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), small = 1;
	SSL *ssl;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	ck_assert_int_eq(inet_pton(AF_INET, h.node[0].addr, &sin.sin_addr), 1);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_ptr_nonnull(ssl = SSL_new(ctx));
	ck_assert_int_eq(SSL_set_fd(ssl, fd), 1);
	ck_assert_int_eq(SSL_connect(ssl), 1);
	return ssl;
}

/* Does agent 0 hold *(int *)arg sockets or fewer? */
static int
agent_sockets_at_most(void *arg)
{
	int n = cu_count_sockets(h.node[0].pid);

	return n >= 0 && n <= *(int *)arg;
}

/* A controller that stops reading while the agent closes its connection
 * (a message the agent does not take, after pings whose answers fill the
 * sockets and wait in the agent's queue): the agent resets the connection
 * AGENT_CLOSE_NS (2 s) after the last byte went out, and its descriptor
 * goes; it serves another controller meanwhile.  It used to keep both
 * until TCP_USER_TIMEOUT (20 s). */
START_TEST(closing_peer_not_reading_cut)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Pong pong = KNOB__PONG__INIT;
	int base, gone_in_time;
	uint64_t t0;
	double took;
	SSL_CTX *ctx;
	struct conn c;
	SSL *ssl;

	ck_assert_int_eq(harness_enter_ns(h.ctl_ns), 0);
	ck_assert_ptr_nonnull(ctx = harness_tls_ctx(&h, "controller"));
	base = cu_count_sockets(h.node[0].pid);	/* the listener */
	ssl = dial_small_window(ctx);
	conn_init(&c, SSL_get_fd(ssl), SSL_get_fd(ssl), ssl);
	ck_assert_int_eq(send_pings(&c, STUCK_PINGS), 0);
	env.body_case = KNOB__ENVELOPE__BODY_PONG;	/* not a request: the agent closes */
	env.pong = &pong;
	ck_assert_int_eq(conn_send_sync(&c, &env, 10000), 0);
	t0 = now_mono_ns();
	ck_assert_int_eq(harness_wait_log(&h, 0, "unexpected pong message; closing", 10), 0);
	ck_assert_int_eq(cu_count_sockets(h.node[0].pid), base + 1);
	/* served while that one waits for its reader */
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
	gone_in_time = cu_wait(agent_sockets_at_most, &base, 6) >= 0;
	took = (double)(now_mono_ns() - t0) / 1e9;
	printf("agent sockets back to %d %.2f s after the close began\n", base, took);
	ck_assert_msg(gone_in_time, "the agent still holds %d sockets (%d before) %.1f s after "
	    "closing a connection whose peer does not read", cu_count_sockets(h.node[0].pid),
	    base, took);
	ck_assert_msg(harness_log_has(&h, 0, "its last replies not read in 2 s; resetting"),
	    "no reset logged");
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
	SSL_free(ssl);	/* its socket is reset: no close_notify */
	close(c.rfd);
	c.ssl = NULL;
	conn_reset(&c);
	SSL_CTX_free(ctx);
}
END_TEST

/* A plain OpenSSL client context capped at TLS 1.2, with the controller's
 * (valid) certificate: only the protocol version is wrong. */
static SSL_CTX *
tls12_ctx(void)
{
	char ca[PATH_MAX + 16], cert[PATH_MAX + 32], key[PATH_MAX + 32];
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	snprintf(ca, sizeof(ca), "%s/ca.crt", h.ca_dir);
	snprintf(cert, sizeof(cert), "%s/controller.crt", h.ca_dir);
	snprintf(key, sizeof(key), "%s/controller.key", h.ca_dir);
	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION), 1);
	ck_assert_int_eq(SSL_CTX_use_certificate_chain_file(ctx, cert), 1);
	ck_assert_int_eq(SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM), 1);
	ck_assert_int_eq(SSL_CTX_load_verify_locations(ctx, ca, NULL), 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	return ctx;
}

/* TLS 1.2 (with a certificate the agent would otherwise accept) is
 * refused in the handshake; TLS 1.3 on the next connection is served. */
START_TEST(tls12_refused)
{
	SSL_CTX *ctx = tls12_ctx(), *ok;
	char err[512];
	SSL *ssl;
	int fd;

	ck_assert_int_eq(harness_enter_ns(h.ctl_ns), 0);
	ck_assert_int_ge(fd = harness_dial(&h, 0), 0);
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	ERR_clear_error();
	ck_assert_int_ne(SSL_connect(ssl), 1);
	tls_errstr(err, sizeof(err));
	printf("TLS 1.2 client: %s\n", err);
	ck_assert_msg(strstr(err, "protocol version") != NULL, "client saw: %s", err);
	SSL_free(ssl);
	close(fd);
	SSL_CTX_free(ctx);
	ck_assert_msg(harness_wait_log(&h, 0, "unsupported protocol", 10) == 0,
	    "the agent did not log the refused version");

	ck_assert_ptr_nonnull(ok = harness_tls_ctx(&h, "controller"));
	ck_assert_ptr_nonnull(ssl = harness_tls_dial(&h, ok, 0));
	ck_assert_int_eq(SSL_version(ssl), TLS1_3_VERSION);
	ck_assert_int_eq(request(ssl, KNOB__ENVELOPE__BODY_PING, NULL), KNOB__ENVELOPE__BODY_PONG);
	harness_tls_close(ssl);
	SSL_CTX_free(ok);
}
END_TEST

/* The key type of x's public key (EVP_PKEY_ED25519, ...). */
static int
key_type(X509 *x)
{
	ck_assert_ptr_nonnull(x);
	return EVP_PKEY_get_base_id(X509_get0_pubkey(x));
}

/* knob's client context and the agent agree on X25519 for the key
 * exchange; both certificates are Ed25519 and the agent signs with it. */
START_TEST(x25519_ed25519)
{
	SSL_CTX *ctx;
	SSL *ssl;
	int nid = NID_undef;

	ck_assert_int_eq(harness_enter_ns(h.ctl_ns), 0);
	ck_assert_ptr_nonnull(ctx = harness_tls_ctx(&h, "controller"));
	ck_assert_ptr_nonnull(ssl = harness_tls_dial(&h, ctx, 0));
	ck_assert_int_eq(SSL_version(ssl), TLS1_3_VERSION);
	ck_assert_msg(SSL_get_negotiated_group(ssl) == NID_X25519, "group %s",
	    OBJ_nid2sn(SSL_get_negotiated_group(ssl)));
	ck_assert_int_eq(key_type(SSL_get0_peer_certificate(ssl)), EVP_PKEY_ED25519);
	ck_assert_int_eq(key_type(SSL_get_certificate(ssl)), EVP_PKEY_ED25519);
	ck_assert_int_eq(SSL_get_peer_signature_type_nid(ssl, &nid), 1);
	ck_assert_int_eq(nid, NID_ED25519);
	printf("negotiated: %s, %s, peer key %s, peer signature %s\n", SSL_get_version(ssl),
	    OBJ_nid2sn(SSL_get_negotiated_group(ssl)),
	    OBJ_nid2sn(key_type(SSL_get0_peer_certificate(ssl))), OBJ_nid2sn(nid));
	ck_assert_int_eq(request(ssl, KNOB__ENVELOPE__BODY_PING, NULL), KNOB__ENVELOPE__BODY_PONG);
	harness_tls_close(ssl);
	SSL_CTX_free(ctx);
}
END_TEST

static void log_priority_prefix(void);

/* A client that never sends a byte is closed 2 s after accept; one that
 * sends a TLS record header announcing a ClientHello and then stalls is
 * closed 5 s after accept, and so is one that stalls after the record
 * header alone.  All at once, timed from before connect(), so none can be
 * early; the margin covers the 250 ms tick on a loaded VM.  Then the log
 * these made (log_priority_prefix: the 5 s are waited for once). */
START_TEST(handshake_deadlines)
{
	static const unsigned char hello_hdr[] = { 0x16, 0x03, 0x01, 0x00, 0xc8, 0x01 };
	double silent, stalled, bare;
	uint64_t t0;
	int fs, fh, fr;

	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
	ck_assert_int_eq(harness_enter_ns(h.ctl_ns), 0);
	t0 = now_mono_ns();
	ck_assert_int_ge(fs = harness_dial(&h, 0), 0);
	ck_assert_int_ge(fh = harness_dial(&h, 0), 0);
	ck_assert_int_ge(fr = harness_dial(&h, 0), 0);
	ck_assert_int_eq(write(fh, hello_hdr, sizeof(hello_hdr)), (ssize_t)sizeof(hello_hdr));
	ck_assert_int_eq(write(fr, hello_hdr, 5), 5);
	silent = closed_after(fs, t0, 10);
	stalled = closed_after(fh, t0, 15);
	bare = closed_after(fr, t0, 15);
	printf("silent client closed after %.2f s, stalled ClientHello after %.2f s, bare record "
	    "header after %.2f s\n", silent, stalled, bare);
	ck_assert_msg(silent >= 2.0 && silent < 4.5, "silent client: %.2f s", silent);
	ck_assert_msg(stalled >= 5.0 && stalled < 8.0, "stalled ClientHello: %.2f s", stalled);
	ck_assert_msg(bare >= 5.0 && bare < 8.0, "bare record header: %.2f s", bare);
	ck_assert(harness_log_has(&h, 0, "nothing received in 2 s; closing"));
	ck_assert(harness_log_has(&h, 0, "TLS handshake not done in 5 s; closing"));
	close(fs);
	close(fh);
	close(fr);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
	log_priority_prefix();
}
END_TEST

/* AUTH_CAP controllers held open (each proven served by a ping) fill the
 * cap: the next one completes TLS and gets Error{EBUSY}, knobctl is turned
 * away the same way, the held ones are still served, and once one leaves
 * knobctl gets in. */
START_TEST(auth_cap)
{
	SSL *held[AUTH_CAP], *extra;
	SSL_CTX *ctx;
	char *out = NULL;
	int code = 0, rc = -1;

	ck_assert_int_eq(harness_enter_ns(h.ctl_ns), 0);
	ck_assert_ptr_nonnull(ctx = harness_tls_ctx(&h, "controller"));
	for (int i = 0; i < AUTH_CAP; i++) {
		held[i] = harness_tls_dial(&h, ctx, 0);
		ck_assert_msg(held[i] != NULL, "controller %d not connected", i + 1);
		ck_assert_int_eq(request(held[i], KNOB__ENVELOPE__BODY_PING, NULL),
		    KNOB__ENVELOPE__BODY_PONG);
	}
	ck_assert_ptr_nonnull(extra = harness_tls_dial(&h, ctx, 0));
	ck_assert_int_eq(request(extra, KNOB__ENVELOPE__BODY_PING, &code),
	    KNOB__ENVELOPE__BODY_ERROR);
	ck_assert_int_eq(code, EBUSY);
	ck_assert_msg(closed_after(SSL_get_fd(extra), now_mono_ns(), 5) >= 0,
	    "the refused controller's connection stayed open");
	harness_tls_close(extra);
	ck_assert(harness_log_has(&h, 0, "controllers connected"));
	rc = harness_knobctl(&h, &out, NULL, "ping -w node01");
	ck_assert_msg(rc == 1 && strstr(out, "too many controllers connected") != NULL,
	    "knobctl past the cap: exit %d: %s", rc, out);
	free(out);
	ck_assert_int_eq(request(held[0], KNOB__ENVELOPE__BODY_FACTS_REQUEST, NULL),
	    KNOB__ENVELOPE__BODY_FACTS);
	ck_assert_int_eq(request(held[AUTH_CAP - 1], KNOB__ENVELOPE__BODY_PING, NULL),
	    KNOB__ENVELOPE__BODY_PONG);
	harness_tls_close(held[0]);
	/* the agent sees the close on its next loop turn */
	for (uint64_t end = now_mono_ns() + 10000000000ull; rc != 0 && now_mono_ns() < end; )
		rc = harness_knobctl(&h, NULL, NULL, "ping -w node01");
	ck_assert_msg(rc == 0, "knobctl not served after a controller left");
	for (int i = 1; i < AUTH_CAP; i++)
		harness_tls_close(held[i]);
	SSL_CTX_free(ctx);
}
END_TEST

/* The priority the line of the log that contains s starts with; -1 when
 * no line contains it. */
static int
prio_of(const char *log, const char *s)
{
	const char *p = strstr(log, s);

	if (p == NULL)
		return -1;
	while (p > log && p[-1] != '\n')
		p--;
	return p[0] == '<' && p[1] >= '0' && p[1] <= '7' && p[2] == '>' ? p[1] - '0' : -1;
}

/* Every line of the agent's log is "<N>knobd: file.c:line: message"; the
 * levels map to syslog priorities: 3 an error (knobd started with a
 * missing certificate, stderr into a file, not a tty), 4 a warning
 * (the once-a-second summary that counts a stalled handshake), 6 info
 * (listening), 7 debug (a silent client, the stalled handshake itself).
 * The end of handshake_deadlines, whose clients made those lines. */
static void
log_priority_prefix(void)
{
	char *log = NULL, *save = NULL, *out = NULL;
	regex_t re;
	int lines = 0;

	ck_assert_int_eq(harness_wait_log(&h, 0, "handshake(s) failed or abandoned; the last: ", 15), 0);
	log = cu_slurp(h.node[0].log);
	ck_assert_int_eq(prio_of(log, "listening on"), LOG_LVL_INFO);
	ck_assert_int_eq(prio_of(log, "nothing received in 2 s"), LOG_LVL_DEBUG);
	ck_assert_int_eq(prio_of(log, "TLS handshake not done"), LOG_LVL_DEBUG);
	ck_assert_int_eq(prio_of(log, "handshake(s) failed or abandoned"), LOG_LVL_WARN);
	/* the prefix, then the agent instance the line is about */
	ck_assert_int_eq(regcomp(&re, "^<[0-7]>knobd: node01: [a-z_/]+\\.c:[0-9]+: .",
	    REG_EXTENDED | REG_NOSUB), 0);
	for (char *l = strtok_r(log, "\n", &save); l; l = strtok_r(NULL, "\n", &save), lines++)
		ck_assert_msg(regexec(&re, l, 0, NULL, 0) == 0, "log line without prefix: %s", l);
	ck_assert_int_ge(lines, 4);
	free(log);

	ck_assert_int_ne(cu_sh_out(&out, "%s/knobd --listen 127.0.0.1:18201 --ca %s/ca.crt "
	    "--cert %s/missing.crt --key %s/node01.key --state-dir %s/node01/state", h.bin,
	    h.ca_dir, h.ca_dir, h.ca_dir, h.tmp), 0);
	ck_assert_msg(prio_of(out, "missing.crt") == LOG_LVL_ERR, "%s", out);
	regfree(&re);
	/* before the agent has a name (its certificate is missing): no instance */
	ck_assert_int_eq(regcomp(&re, "^<[0-7]>knobd: [a-z_/]+\\.c:[0-9]+: .",
	    REG_EXTENDED | REG_NOSUB), 0);
	ck_assert_int_eq(regexec(&re, out, 0, NULL, 0), 0);
	regfree(&re);
	free(out);
}

/* A child in node i's namespace listening on its agent port with a deep
 * backlog, never accepting: the kernel completes TCP, nobody speaks TLS.
 * Returns once it listens; its pid. */
static pid_t
mute_listener(int i)
{
	int pfd[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(pfd), 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(7420) };
		int fd, one = 1;

		if (harness_enter_ns(h.node[i].ns) < 0 || (fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
			_exit(1);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		inet_pton(AF_INET, h.node[i].addr, &sin.sin_addr);
		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 4096) < 0)
			_exit(1);
		if (write(pfd[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	return pid;
}

/* The soft "Max open files" of pid, -1 when unreadable. */
static long
soft_nofile(pid_t pid)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	if (read_small_file(path, buf, sizeof(buf)) < 0 || (p = strstr(buf, "Max open files")) == NULL)
		return -1;
	return strtol(p + strlen("Max open files"), NULL, 10);
}

static void
setup_window(void)
{
	ck_assert_msg(harness_start(&h, 1, 0) == 0, "harness start failed");
}

/* 600 targets, all node01's address, whose TLS never answers; knobctl
 * starts with a soft open-file limit of 256 (below the 600 + 64 it wants;
 * the hard limit stays).  While it runs: at most 512 sockets at once, and
 * at some point more than 256 (so the limit was raised); its soft limit
 * equals the hard one.  Every target ends unreachable (TLS timed out). */
START_TEST(fanout_window_and_nofile)
{
	char inv[PATH_MAX + 16], out[PATH_MAX + 16], *txt = NULL;
	struct rlimit rl;
	long soft = -1;
	int most = 0, n, st;
	pid_t lis, pid, reaped;
	FILE *f;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_msg(rl.rlim_max >= NTARGETS + 64, "hard open-file limit %llu too low here",
	    (unsigned long long)rl.rlim_max);
	lis = mute_listener(0);
	snprintf(inv, sizeof(inv), "%s/many.xml", h.tmp);
	ck_assert_ptr_nonnull(f = fopen(inv, "w"));
	fprintf(f, "<cluster port=\"7420\">\n  <tls ca=\"ca/ca.crt\" cert=\"ca/controller.crt\" "
	    "key=\"ca/controller.key\"/>\n");
	for (int i = 1; i <= NTARGETS; i++)
		fprintf(f, "  <node name=\"t%03d\" addr=\"%s\"/>\n", i, h.node[0].addr);
	fprintf(f, "</cluster>\n");
	ck_assert_int_eq(fclose(f), 0);
	snprintf(out, sizeof(out), "%s/many.out", h.tmp);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		rl.rlim_cur = 256;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", xasprintf("exec ip netns exec %s %s/knobctl -c %s "
		    "--connect-timeout 2 ping -w 't[001-%03d]' >%s 2>&1", h.ctl_ns, h.bin, inv,
		    NTARGETS, out), (char *)NULL);
		_exit(127);
	}
	while ((reaped = waitpid(pid, &st, WNOHANG)) == 0) {
		long l = soft_nofile(pid);

		if ((n = cu_count_sockets(pid)) > most)
			most = n;
		if (l > soft)
			soft = l;
		usleep(2000);
	}
	ck_assert_int_eq(reaped, pid);
	kill(lis, SIGKILL);
	waitpid(lis, NULL, 0);
	txt = cu_slurp(out);
	printf("knobctl against %d mute targets: at most %d sockets at once, soft open-file "
	    "limit %ld (started at 256, hard %llu)\n", NTARGETS, most, soft,
	    (unsigned long long)rl.rlim_max);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "knobctl: %s", txt);
	ck_assert_msg(strstr(txt, "600 unreachable") != NULL, "%s", txt);
	ck_assert_msg(strstr(txt, "TLS handshake timed out") != NULL, "%s", txt);
	free(txt);
	ck_assert_msg(most <= FO_WINDOW, "%d sockets open at once", most);
	ck_assert_msg(most > 256, "never more than %d sockets: the window or the raise is missing",
	    most);
	ck_assert_int_eq(soft, (long)rl.rlim_max);
}
END_TEST

/* "status" and "detail" of the one node of a knobctl --json ping, as
 * "STATUS: DETAIL" in buf; the exit status in *rc. */
static const char *
ping_one(int *rc, char *buf, size_t len)
{
	json_object *doc = harness_knobctl_json(&h, rc, "--json ping -w node01"), *nodes, *st, *d;

	snprintf(buf, len, "(no node)");
	if (json_object_object_get_ex(doc, "nodes", &nodes) &&
	    json_object_array_length(nodes) == 1 &&
	    json_object_object_get_ex(json_object_array_get_idx(nodes, 0), "status", &st)) {
		if (!json_object_object_get_ex(json_object_array_get_idx(nodes, 0), "detail", &d))
			d = NULL;
		snprintf(buf, len, "%s: %s", json_object_get_string(st),
		    d ? json_object_get_string(d) : "");
	}
	json_object_put(doc);
	return buf;
}

/* The CRL is ca.crl in the CA certificate's directory whatever that file
 * is called: with the inventory and the agent on trust.crt (a copy of
 * ca.crt), what `knobctl ca revoke` writes revokes at both ends: the agent
 * (restarted, as bootstrap does) refuses the revoked controller, knobctl
 * the revoked node.  Before, both looked for trust.crl and let them in. */
START_TEST(crl_beside_renamed_ca)
{
	struct hnode *x = &h.node[0];
	char *out = NULL, r[512], crl[PATH_MAX + 8];
	int rc;

	ck_assert_int_eq(harness_sh("cp %s/ca.crt %s/trust.crt && sed -i 's|ca/ca.crt|ca/trust.crt|' %s",
	    h.ca_dir, h.ca_dir, h.cluster), 0);
	snprintf(x->extra_args, sizeof(x->extra_args), "--ca %s/trust.crt", h.ca_dir);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	ck_assert_msg(strncmp(ping_one(&rc, r, sizeof(r)), "ok:", 3) == 0 && rc == 0, "exit %d: %s",
	    rc, r);
	/* the agent's end: the controller revoked */
	ck_assert_int_eq(harness_knobctl_logged(&h, &out, "ca revoke --force controller"), 0);
	free(out);
	snprintf(crl, sizeof(crl), "%s/ca.crl", h.ca_dir);
	ck_assert_int_eq(access(crl, F_OK), 0);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	ck_assert_msg(strstr(ping_one(&rc, r, sizeof(r)), "auth-failed: agent refused our "
	    "certificate: it is revoked") == r && rc == 1, "exit %d: %s", rc, r);
	/* knobctl's end: a new controller, the node revoked */
	ck_assert_int_eq(harness_knobctl_logged(&h, &out, "ca issue %s ctl2 --controller",
	    h.ca_dir), 0);
	free(out);
	ck_assert_int_eq(harness_sh("sed -i 's|ca/controller\\.|ca/ctl2.|g' %s", h.cluster), 0);
	ck_assert_msg(strncmp(ping_one(&rc, r, sizeof(r)), "ok:", 3) == 0 && rc == 0, "exit %d: %s",
	    rc, r);
	ck_assert_int_eq(harness_knobctl_logged(&h, &out, "ca revoke node01"), 0);
	ck_assert_str_eq(ping_one(&rc, r, sizeof(r)),
	    "auth-failed: agent certificate rejected: certificate revoked");
	ck_assert_int_eq(rc, 1);
	free(out);
}
END_TEST

/* knobctl -c cluster.xml ping -w node01 with the controller's key refused:
 * exit status 2, nothing on stdout, exactly want on stderr. */
static void
ping_refused(const char *want)
{
	char *o = NULL, *e = NULL;
	int rc = harness_knobctl(&h, &o, &e, "ping -w node01");

	ck_assert_msg(rc == 2 && strcmp(o, "") == 0 && strcmp(e, want) == 0,
	    "exit %d: stdout %s, stderr %s, wanted %s", rc, o, e, want);
	free(o);
	free(e);
}

/* A controller key others may read or write (0644, group-readable 0640),
 * or another user's, is refused as ssh refuses such an identity: the
 * mode (or owner) and the chmod on stderr, exit status 2, nothing sent:
 * the agent's first connection is the ping at 0600 after.  Before, a
 * warning, and the key was used. */
START_TEST(controller_loose_key_refused)
{
	static const char *const mode[] = { "0644", "0640" };
	char key[PATH_MAX + 32], want[3 * PATH_MAX], r[512];
	int rc;

	snprintf(key, sizeof(key), "%s/controller.key", h.ca_dir);
	for (size_t i = 0; i < nitems(mode); i++) {
		ck_assert_int_eq(harness_sh("chmod %s %s", mode[i], key), 0);
		snprintf(want, sizeof(want), "knobctl: %s: mode %s: a private key others can read "
		    "or write: whoever reads it can pose as the controller, root on every node: "
		    "not used; chmod 600 %s\n", key, mode[i], key);
		ping_refused(want);
	}
	ck_assert_int_eq(harness_sh("chmod 600 %s && chown 65534 %s", key, key), 0);
	snprintf(want, sizeof(want), "knobctl: %s: owned by uid 65534, neither this user (uid 0) "
	    "nor root: its owner can read it or replace it, and whoever reads it can pose as the "
	    "controller, root on every node: not used; chown 0 %s\n", key, key);
	ping_refused(want);
	ck_assert_int_eq(harness_sh("chown 0 %s", key), 0);
	ck_assert_msg(strncmp(ping_one(&rc, r, sizeof(r)), "ok:", 3) == 0 && rc == 0, "exit %d: %s",
	    rc, r);
	ck_assert(harness_log_has(&h, 0, "connection 1 from "));
	ck_assert_msg(!harness_log_has(&h, 0, "connection 2 from "), "a refused ping connected");
}
END_TEST

/* knobd with a node key others may read refuses to start, as sshd refuses
 * such a host key: exit status 1, an error-priority line naming the file
 * and the chmod (the journal's line under systemd); the node is then
 * unreachable, connection refused; at 0600 it starts.  Before, a
 * warning, and it served with the key. */
START_TEST(agent_loose_key_refused)
{
	struct hnode *x = &h.node[0];
	char key[PATH_MAX + 32], log[sizeof(h.tmp) + 32], want[3 * PATH_MAX], r[512], *buf = NULL;
	int rc;

	snprintf(key, sizeof(key), "%s/node01.key", h.ca_dir);
	snprintf(log, sizeof(log), "%s/refused.log", h.tmp);
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(harness_sh("chmod 644 %s", key), 0);
	/* timeout: an agent that starts (as before) fails the test in 10 s */
	rc = harness_node_sh(&h, 0, "timeout 10 %s/knobd --listen %s:7420 --ca %s/ca.crt --cert %s/node01.crt "
	    "--key %s --state-dir %s 2>%s", h.bin, x->addr, h.ca_dir, h.ca_dir, key, x->state_dir,
	    log);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(read_file_bounded(log, 1 << 16, &buf, NULL), 0);
	snprintf(want, sizeof(want), ": %s: mode 0644: a private key others can read or write: "
	    "whoever reads it can pose as this node: not used; chmod 600 %s\n", key, key);
	ck_assert_msg(strncmp(buf, "<3>knobd: ", 10) == 0 && strstr(buf, want) != NULL &&
	    strchr(buf, '\n') == buf + strlen(buf) - 1, "log: %s", buf);
	free(buf);
	ck_assert_str_eq(ping_one(&rc, r, sizeof(r)), "unreachable: connection refused");
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(harness_sh("chmod 600 %s", key), 0);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	ck_assert_msg(strncmp(ping_one(&rc, r, sizeof(r)), "ok:", 3) == 0 && rc == 0, "exit %d: %s",
	    rc, r);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("tls");
	TCase *tc = cu_tcase("agent", setup, teardown, 90);

	signal(SIGPIPE, SIG_IGN);
	log_init("check_tls", LOG_LVL_ERR);
	tcase_add_test(tc, tls12_refused);
	tcase_add_test(tc, x25519_ed25519);
	tcase_add_test(tc, handshake_deadlines);
	tcase_add_test(tc, auth_cap);
	tcase_add_test(tc, crl_beside_renamed_ca);
	tcase_add_test(tc, controller_loose_key_refused);
	tcase_add_test(tc, agent_loose_key_refused);
	suite_add_tcase(s, tc);
	tc = cu_tcase("close", setup, teardown, 90);
	tcase_add_test(tc, half_close_answered);
	tcase_add_test(tc, closing_peer_not_reading_cut);
	suite_add_tcase(s, tc);
	tc = cu_tcase("window", setup_window, teardown, 90);
	tcase_add_test(tc, fanout_window_and_nofile);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
