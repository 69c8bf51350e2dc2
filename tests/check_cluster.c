/* Integration tests for the foundation: real knobd processes in four
 * network namespaces, real mutual TLS, knobctl driving them. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include <openssl/ssl.h>

#include "testutil.h"
#include "harness.h"
#include "log.h"
#include "tls.h"
#include "util.h"
#include "wire.h"

static struct harness h;

static void
setup(void)
{
	ck_assert_msg(harness_start(&h, 4, 1) == 0, "harness start failed");
}

static void
teardown(void)
{
	harness_stop(&h);
}

START_TEST(facts_four_nodes)
{
	char *out = NULL, *err = NULL;
	json_object *doc, *nodes, *summary, *v;
	int rc;

	rc = harness_knobctl(&h, &out, &err, "--json facts -w @all");
	ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "not JSON: %s", out);
	ck_assert(json_object_object_get_ex(doc, "nodes", &nodes));
	ck_assert_int_eq(json_object_array_length(nodes), 4);
	for (int i = 0; i < 4; i++) {
		json_object *rec = json_object_array_get_idx(nodes, (size_t)i), *facts;
		const char *name;

		ck_assert(json_object_object_get_ex(rec, "node", &v));
		name = json_object_get_string(v);
		ck_assert_str_eq(name, h.node[i].name);
		ck_assert(json_object_object_get_ex(rec, "status", &v));
		ck_assert_str_eq(json_object_get_string(v), "ok");
		ck_assert(json_object_object_get_ex(rec, "facts", &facts));
		/* the agent reports the name its certificate carries */
		ck_assert(json_object_object_get_ex(facts, "node", &v));
		ck_assert_str_eq(json_object_get_string(v), name);
		ck_assert(json_object_object_get_ex(facts, "kernel", &v));
		ck_assert(strlen(json_object_get_string(v)) > 0);
	}
	ck_assert(json_object_object_get_ex(doc, "summary", &summary));
	ck_assert(json_object_object_get_ex(summary, "ok", &v));
	ck_assert_int_eq(json_object_get_int(v), 4);
	json_object_put(doc);
	free(out);
	free(err);

	/* Text mode: the summary line counts four ok nodes. */
	rc = harness_knobctl(&h, &out, NULL, "facts -w node[01-04]");
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "4 ok") != NULL, "%s", out);
	free(out);
}
END_TEST

START_TEST(one_agent_stopped)
{
	char *out = NULL;
	int rc;

	harness_agent_stop(&h, 1, SIGTERM);
	rc = harness_knobctl(&h, &out, NULL, "ping -w node[01-04]");
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "3 ok, 1 unreachable (node02)") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "node[01,03-04]") != NULL, "ok nodes not folded: %s", out);
	free(out);

	/* JSON marks exactly that node unreachable. */
	rc = harness_knobctl(&h, &out, NULL, "--json ping -w @all");
	ck_assert_int_eq(rc, 1);
	{
		json_object *doc = json_tokener_parse(out), *nodes, *v;
		ck_assert_ptr_nonnull(doc);
		ck_assert(json_object_object_get_ex(doc, "nodes", &nodes));
		for (int i = 0; i < 4; i++) {
			json_object *rec = json_object_array_get_idx(nodes, (size_t)i);
			ck_assert(json_object_object_get_ex(rec, "status", &v));
			ck_assert_str_eq(json_object_get_string(v), i == 1 ? "unreachable" : "ok");
		}
		json_object_put(doc);
	}
	free(out);
}
END_TEST

START_TEST(foreign_ca_refused)
{
	char *out = NULL, *err = NULL;
	int rc;

	ck_assert_int_eq(harness_sh("cd %s && %s/knobctl ca init other >/dev/null && "
	    "%s/knobctl ca issue other controller --controller >/dev/null", h.tmp, h.bin, h.bin), 0);
	/* Trust the real CA (so we accept the agent) but present a foreign cert. */
	rc = harness_knobctl(&h, &out, &err, "--ca %s/ca/ca.crt --cert %s/other/controller.crt "
	    "--key %s/other/controller.key --json ping -w node01", h.tmp, h.tmp, h.tmp);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "\"auth-failed\"") != NULL, "%s", out);
	ck_assert(harness_log_has(&h, 0, "unable to get local issuer certificate"));
	free(out);
	free(err);
}
END_TEST

/* A node certificate presented as a controller's: it chains to the cluster
 * CA, so TLS completes (the agent lets the missing clientAuth purpose
 * through for this), then the agent's role check answers Error{EACCES}
 * naming the role and closes; knobctl reports the refusal in words. */
START_TEST(node_cert_as_controller_refused)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Ping ping = KNOB__PING__INIT;
	char *out = NULL;
	struct conn c;
	SSL_CTX *ctx;
	SSL *ssl;
	int rc;

	rc = harness_knobctl(&h, &out, NULL, "--cert %s/ca/node03.crt --key %s/ca/node03.key "
	    "ping -w node01", h.tmp, h.tmp);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "auth-failed: agent refused us: certificate of 'node03' has "
	    "role 'node'; only a 'controller' certificate may command this agent") != NULL, "%s",
	    out);
	free(out);
	ck_assert(harness_log_has(&h, 0, "refusing peer 'node03': certificate role 'node' is "
	    "not 'controller'"));
	ck_assert(!harness_log_has(&h, 0, "unsuitable certificate purpose"));

	/* the same on the wire: handshake done, a Ping gets Error{EACCES}, EOF */
	ck_assert_int_eq(harness_enter_ns(h.ctl_ns), 0);
	ck_assert_ptr_nonnull(ctx = harness_tls_ctx(&h, "node03"));
	ck_assert_ptr_nonnull(ssl = harness_tls_dial(&h, ctx, 0));
	conn_init(&c, SSL_get_fd(ssl), SSL_get_fd(ssl), ssl);
	env.id = 1;
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	conn_send_sync(&c, &env, 5000);	/* the agent may have closed already */
	ck_assert_int_eq(conn_recv_sync(&c, &got, 5000), 1);
	ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_ERROR);
	ck_assert_int_eq(got->error->code, EACCES);
	ck_assert_ptr_nonnull(strstr(got->error->message, "has role 'node'"));
	knob__envelope__free_unpacked(got, NULL);
	ck_assert_int_eq(conn_recv_sync(&c, &got, 5000), -1);	/* closed, no Pong */
	close(SSL_get_fd(ssl));
	conn_reset(&c);
	SSL_CTX_free(ctx);
}
END_TEST

START_TEST(agent_must_name_dialled_node)
{
	char path[PATH_MAX], *out = NULL;
	FILE *f;
	int rc;

	/* "node01" points at node02's address: node02's certificate does not
	 * name node01, so the controller must refuse it. */
	snprintf(path, sizeof(path), "%s/wrong.xml", h.tmp);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "<cluster port=\"7420\">\n"
	    "  <tls ca=\"ca/ca.crt\" cert=\"ca/controller.crt\" key=\"ca/controller.key\"/>\n"
	    "  <node name=\"node01\" addr=\"%s\"/>\n</cluster>\n", h.node[1].addr);
	fclose(f);
	rc = harness_sh("ip netns exec %s %s/knobctl -c %s ping -w node01 > %s/wrong.out 2>&1",
	    h.ctl_ns, h.bin, path, h.tmp);
	ck_assert_int_eq(rc, 1);
	snprintf(path, sizeof(path), "%s/wrong.out", h.tmp);
	ck_assert_int_eq(read_file_bounded(path, 1 << 20, &out, NULL), 0);
	ck_assert_msg(strstr(out, "auth-failed") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "certificate") != NULL, "%s", out);
	free(out);
}
END_TEST

/* Wait up to 3 s for the peer to close fd; 1 if it did. */
static int
closed_by_peer(int fd, SSL *ssl)
{
	char buf[256];

	for (int i = 0; i < 30; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) > 0) {
			int n = ssl ? SSL_read(ssl, buf, sizeof(buf)) : (int)read(fd, buf, sizeof(buf));
			if (n <= 0)
				return 1;
		}
	}
	return 0;
}

START_TEST(garbage_and_huge_frames)
{
	static const uint8_t huge[4] = { 0xff, 0xff, 0xff, 0xff };
	static const uint8_t junk[] = { 0, 0, 0, 6, 0xde, 0xad, 0xbe, 0xef, 0x13, 0x37 };
	char *out = NULL;
	SSL_CTX *ctx;
	SSL *ssl;
	int fd, rc;

	ck_assert_int_eq(harness_enter_ns(h.ctl_ns), 0);
	/* 1. raw TCP garbage instead of a TLS hello */
	ck_assert_int_ge(fd = harness_dial(&h, 0), 0);
	ck_assert_int_eq(write(fd, "GET / HTTP/1.0\r\n\r\n", 18), 18);
	ck_assert_msg(closed_by_peer(fd, NULL), "agent kept a garbage connection open");
	close(fd);

	ck_assert_ptr_nonnull(ctx = harness_tls_ctx(&h, "controller"));

	/* 2. an authenticated controller sending a 4 GiB length prefix */
	ck_assert_ptr_nonnull(ssl = harness_tls_dial(&h, ctx, 0));
	fd = SSL_get_fd(ssl);
	ck_assert_int_eq(SSL_write(ssl, huge, 4), 4);
	ck_assert_msg(closed_by_peer(fd, ssl), "agent kept a 4 GiB frame connection open");
	SSL_free(ssl);
	close(fd);

	/* 3. an authenticated controller sending a garbage frame body */
	ck_assert_ptr_nonnull(ssl = harness_tls_dial(&h, ctx, 0));
	fd = SSL_get_fd(ssl);
	ck_assert_int_eq(SSL_write(ssl, junk, sizeof(junk)), (int)sizeof(junk));
	ck_assert_msg(closed_by_peer(fd, ssl), "agent kept a garbage frame connection open");
	SSL_free(ssl);
	close(fd);
	SSL_CTX_free(ctx);

	ck_assert(harness_log_has(&h, 0, "exceeds the"));
	ck_assert(harness_log_has(&h, 0, "malformed envelope"));
	/* The agent is still serving. */
	rc = harness_knobctl(&h, &out, NULL, "ping -w node01");
	ck_assert_msg(rc == 0, "ping after garbage: exit %d: %s", rc, out);
	ck_assert(h.node[0].pid > 0 && kill(h.node[0].pid, 0) == 0);
	free(out);
}
END_TEST

/* Our end of a dialled connection and, once the agent has accepted it,
 * the agent's end duplicated into this process (pidfd_getfd). */
struct side {
	pid_t pid;
	int fd, theirs;
};

/* cu_wait condition: find the agent's socket whose peer is our end. */
static int
agent_side(void *arg)
{
	struct side *sd = arg;
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl;
	char dir[64];
	struct dirent *e;
	DIR *d;
	int pfd;

	ck_assert_int_eq(getsockname(sd->fd, (struct sockaddr *)&me, &ml), 0);
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)sd->pid);
	ck_assert_int_ge(pfd = pidfd_open(sd->pid, 0), 0);
	ck_assert_ptr_nonnull(d = opendir(dir));
	while (sd->theirs < 0 && (e = readdir(d)) != NULL) {
		int x;

		if (e->d_name[0] == '.' || (x = pidfd_getfd(pfd, atoi(e->d_name), 0)) < 0)
			continue;
		pl = sizeof(peer);
		if (getpeername(x, (struct sockaddr *)&peer, &pl) == 0 && pl == ml &&
		    memcmp(&peer, &me, ml) == 0)
			sd->theirs = x;
		else
			close(x);
	}
	closedir(d);
	close(pfd);
	return sd->theirs >= 0;
}

/* Socket option opt of fd at level lvl. */
static int
opt_of(int fd, int lvl, int opt)
{
	int v = -1;
	socklen_t l = sizeof(v);

	ck_assert_int_eq(getsockopt(fd, lvl, opt, &v, &l), 0);
	return v;
}

/* Every connection the agent accepts has no Nagle delay, keepalive probes
 * and TCP_USER_TIMEOUT (a cut link ends it): the first, which asks whether
 * the listener passed them on, and those after it, which rely on that. */
START_TEST(accepted_socket_options)
{
	ck_assert_int_eq(harness_enter_ns(h.ctl_ns), 0);
	for (int i = 0; i < 3; i++) {
		struct side sd = { h.node[0].pid, -1, -1 };

		ck_assert_int_ge(sd.fd = harness_dial(&h, 0), 0);
		ck_assert_msg(cu_wait(agent_side, &sd, 10) >= 0, "connection %d never accepted", i);
		ck_assert_int_eq(opt_of(sd.theirs, IPPROTO_TCP, TCP_NODELAY), 1);
		ck_assert_int_eq(opt_of(sd.theirs, SOL_SOCKET, SO_KEEPALIVE), 1);
		ck_assert_int_eq(opt_of(sd.theirs, IPPROTO_TCP, TCP_KEEPIDLE), 5);
		ck_assert_int_eq(opt_of(sd.theirs, IPPROTO_TCP, TCP_KEEPINTVL), 1);
		ck_assert_int_eq(opt_of(sd.theirs, IPPROTO_TCP, TCP_KEEPCNT), 3);
		ck_assert_int_eq(opt_of(sd.theirs, IPPROTO_TCP, TCP_USER_TIMEOUT), 20000);
		close(sd.theirs);
		close(sd.fd);
	}
}
END_TEST

START_TEST(exclusion_and_usage_errors)
{
	char *out = NULL, *err = NULL;
	int rc;

	rc = harness_knobctl(&h, &out, NULL, "ping -w @all -x node[02-03]");
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "2 ok") != NULL, "%s", out);
	free(out);
	rc = harness_knobctl(&h, &out, &err, "ping -w 'node[01-'");
	ck_assert_int_eq(rc, 2);
	ck_assert_msg(strlen(err) > 0, "no message for a bad node set");
	free(out);
	free(err);
	rc = harness_knobctl(&h, &out, &err, "frobnicate");
	ck_assert_int_eq(rc, 2);
	free(out);
	free(err);
}
END_TEST

/* A frozen agent: TCP connects (the kernel accepts), TLS never completes.
 * Only that node is unreachable, and the others do not wait for it. */
START_TEST(handshake_timeout)
{
	char *out = NULL;
	uint64_t t0;
	int rc;

	kill(h.node[1].pid, SIGSTOP);
	t0 = now_mono_ns();
	rc = harness_knobctl(&h, &out, NULL, "--connect-timeout 1 ping -w @all");
	kill(h.node[1].pid, SIGCONT);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node02: unreachable: TLS handshake timed out") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "3 ok, 1 unreachable (node02)") != NULL, "%s", out);
	ck_assert_msg(now_mono_ns() - t0 < 4000000000ull, "took %.1fs",
	    (double)(now_mono_ns() - t0) / 1e9);
	free(out);
}
END_TEST

/* Black holes: n listeners on 127.87.0.1, ports 20100 up, in this
 * process's namespace; TCP connects, TLS never answers.  0 or -1. */
static int
holes_listen(int *lfd, int n)
{
	for (int i = 0; i < n; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(20100 + i) };
		int one = 1;

		inet_pton(AF_INET, "127.87.0.1", &sa.sin_addr);
		lfd[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (lfd[i] < 0 || setsockopt(lfd[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		    bind(lfd[i], (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd[i], 16) < 0)
			return -1;
	}
	return 0;
}

/* Drop the connections of cfd[0..*nc) whose peer closed; bytes are read
 * and ignored. */
static void
holes_drop_closed(int *cfd, int *nc)
{
	char buf[4096];

	for (int i = 0; i < *nc; i++) {
		ssize_t r;

		while ((r = recv(cfd[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			;
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
			close(cfd[i]);
			cfd[i--] = cfd[--*nc];
		}
	}
}

/* The most connections open at once on lfd[0..n) until stop is readable.
 * Each round accepts every pending connection, then reads every peer's
 * close before counting: a node closed before the next one connected is
 * never counted with it. */
static int
holes_count(const int *lfd, int n, int stop)
{
	struct pollfd pf[8];
	int cfd[64], nc = 0, most = 0;

	for (;;) {
		for (int i = 0; i < n; i++) {
			int c;

			while (nc < (int)nitems(cfd) && (c = accept4(lfd[i], NULL, NULL, SOCK_CLOEXEC)) >= 0)
				cfd[nc++] = c;
		}
		holes_drop_closed(cfd, &nc);
		if (nc > most)
			most = nc;
		for (int i = 0; i < n; i++)
			pf[i] = (struct pollfd){ .fd = lfd[i], .events = POLLIN };
		pf[n] = (struct pollfd){ .fd = stop, .events = POLLIN };
		if (poll(pf, (nfds_t)n + 1, 20) > 0 && pf[n].revents)
			return most;
	}
}

/* harness_child: six black holes; the most connections open at once. */
static int
holes_serve(int ready, int stop)
{
	int lfd[6];

	if (holes_listen(lfd, 6) < 0 || write(ready, "", 1) != 1)
		_exit(1);
	return holes_count(lfd, 6, stop);
}

/* An inventory in the harness's directory, with its CA and certificate,
 * the given <node> lines; its path (static). */
static const char *
write_inventory(const char *name, const char *nodes)
{
	static char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", h.tmp, name);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "<cluster>\n  <tls ca=\"ca/ca.crt\" cert=\"ca/controller.crt\" "
	    "key=\"ca/controller.key\"/>\n  <results db=\"results.db\"/>\n%s</cluster>\n", nodes);
	fclose(f);
	return path;
}

/* --fanout N bounds the whole command, not each fan-out thread: six
 * black-hole nodes, four threads, --fanout 2; the listeners (in the
 * controller's namespace) never see more than two connections open at
 * once (review G, finding 2: each thread took ceil(N / threads), four). */
START_TEST(fanout_bounds_all_threads)
{
	char nodes[1024] = "", *out = NULL;
	const char *inv;
	struct harness_child c;
	int most, rc;

	for (int i = 0; i < 6; i++)
		snprintf(nodes + strlen(nodes), sizeof(nodes) - strlen(nodes),
		    "  <node name=\"hole%d\" addr=\"127.87.0.1\" port=\"%d\"/>\n", i + 1, 20100 + i);
	inv = write_inventory("holes.xml", nodes);
	harness_child_start(&c, h.ctl_ns, holes_serve);
	rc = harness_knobctl(&h, &out, NULL, "-c %s --no-mux --connect-timeout 0.5 "
	    "ping -w hole[1-6] --threads 4 --fanout 2", inv);
	most = harness_child_end(&c);
	fprintf(stderr, "fanout_bounds_all_threads: at most %d connection(s) open at once\n", most);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "hole[1-6] (6): unreachable: TLS handshake timed out") != NULL,
	    "%s", out);
	ck_assert_msg(most >= 1 && most <= 2, "%d connections in flight at once (--fanout 2)", most);
	free(out);
}
END_TEST

/* Names that resolve slowly (harness_knobctl_slow_dns: 3 s a lookup)
 * do not hold the healthy nodes: their lookups run
 * before any deadline, together bounded by --connect-timeout (review G,
 * finding 1: looked up one by one in the event loop, they made the four
 * agents "TLS handshake timed out"). */
START_TEST(slow_names_do_not_hold_others)
{
	double took;
	char *out;
	int rc;

	rc = harness_knobctl_slow_dns(&h, &out, &took, "--no-mux ping -w node[01-04],zz[1-5]");
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "zz[1-5] (5): unreachable: cannot resolve: no answer within 1.0s")
	    != NULL, "%s", out);
	ck_assert_msg(strstr(out, "4 ok, 5 unreachable (zz[1-5])") != NULL, "%s", out);
	ck_assert_msg(took < 2.9, "took %.1fs (lookups of 3 s, --connect-timeout 1)", took);
	free(out);
}
END_TEST

/* An agent that is connected but busy past --timeout: that node is
 * "timeout", the others finish.  The busy agent is a real apply held by
 * the --test-hooks pause point, tuning a sysctl of its own namespace. */
START_TEST(request_timeout)
{
	char prof[PATH_MAX], *out = NULL;
	FILE *f;
	int rc;

	for (int i = 0; i < 2; i++) {
		snprintf(h.node[i].extra_args, sizeof(h.node[i].extra_args), "--test-hooks");
		ck_assert_int_eq(harness_agent_start(&h, i), 0);
	}
	snprintf(prof, sizeof(prof), "%s/somaxconn.xml", h.tmp);
	f = fopen(prof, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "<profile name=\"somaxconn\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"2048\"/>\n</profile>\n");
	fclose(f);
	rc = harness_knobctl(&h, &out, NULL, "--timeout 1 apply %s -w node[01-02] "
	    "--test-pause-ms 4000 --test-pause-at 'after journaling'", prof);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "2 timeout (node[01-02])") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "no reply within 1.0s") != NULL, "%s", out);
	free(out);
	/* the agents keep serving others meanwhile */
	rc = harness_knobctl(&h, &out, NULL, "ping -w node[01-04]");
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
	for (int i = 0; i < 2; i++)	/* done: the agents stop at once */
		harness_pause_end(&h, i);
}
END_TEST

/* knobd --stdio: the same frames over a pipe pair, no TLS (for SSH exec). */
START_TEST(stdio_session)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Ping ping = KNOB__PING__INIT;
	Knob__FactsRequest fr = KNOB__FACTS_REQUEST__INIT;
	const char *bin = getenv("KNOB_BIN");
	char path[PATH_MAX], state[] = "/tmp/knob-stdio.XXXXXX";
	int in[2], out[2], st;
	struct conn c;
	pid_t pid;

	ck_assert_ptr_nonnull(mkdtemp(state));
	snprintf(path, sizeof(path), "%s/knobd", bin ? bin : "build");
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(path, "knobd", "--stdio", "--state-dir", state, "--node-name", "stdio-node",
		    "--log-level", "err", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	conn_init(&c, out[0], in[1], NULL);
	ping.t_send_ns = 99;
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	env.id = 1;
	ck_assert_int_eq(conn_send_sync(&c, &env, 5000), 0);
	ck_assert_int_eq(conn_recv_sync(&c, &got, 5000), 1);
	ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_PONG);
	ck_assert_uint_eq(got->id, 1);
	ck_assert_uint_eq(got->pong->t_echo_ns, 99);
	ck_assert_str_eq(got->pong->node, "stdio-node");
	knob__envelope__free_unpacked(got, NULL);
	env.body_case = KNOB__ENVELOPE__BODY_FACTS_REQUEST;
	env.facts_request = &fr;
	env.id = 2;
	ck_assert_int_eq(conn_send_sync(&c, &env, 5000), 0);
	ck_assert_int_eq(conn_recv_sync(&c, &got, 5000), 1);
	ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_FACTS);
	ck_assert_str_eq(got->facts->node, "stdio-node");
	knob__envelope__free_unpacked(got, NULL);
	/* closing stdin ends the session and the process */
	close(in[1]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(out[0]);
	conn_reset(&c);
	cu_rm_rf(state);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cluster");
	TCase *tc = cu_tcase("namespaces", setup, teardown, 60);

	if (geteuid() != 0) {
		fprintf(stderr, "check_cluster needs root (network namespaces)\n");
		return 1;
	}
	log_init("check_cluster", LOG_LVL_ERR);
	tcase_add_test(tc, facts_four_nodes);
	tcase_add_test(tc, one_agent_stopped);
	tcase_add_test(tc, foreign_ca_refused);
	tcase_add_test(tc, node_cert_as_controller_refused);
	tcase_add_test(tc, agent_must_name_dialled_node);
	tcase_add_test(tc, garbage_and_huge_frames);
	tcase_add_test(tc, accepted_socket_options);
	tcase_add_test(tc, exclusion_and_usage_errors);
	tcase_add_test(tc, handshake_timeout);
	tcase_add_test(tc, fanout_bounds_all_threads);
	tcase_add_test(tc, slow_names_do_not_hold_others);
	tcase_add_test(tc, request_timeout);
	suite_add_tcase(s, tc);
	tc = tcase_create("stdio");
	tcase_add_test(tc, stdio_session);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
