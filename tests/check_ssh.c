/* knobctl bootstrap against real OpenSSH: Debian's sshd runs inside each
 * node namespace with a host key and an authorized_keys the test generates
 * (its own config file; the machine's sshd and its config are untouched).
 * There is no systemd here, so --service-cmd starts the agent by hand (a
 * small script that stops the previous one and starts the new one); every
 * node then answers over TLS on the real agent port.
 *
 * All nodes share the machine's file system, so each is installed under
 * its own --root (TMP/root-NODE).
 *
 * The namespaces, the CA and the SSH keys are made once per case; each
 * test (forked) starts from a fresh copy of TMP, new sshds, and nothing
 * else running in the namespaces (setup).  Made per test, they took
 * over a third of the program's time (117 of 291 s, 153 of 467 s under
 * ASan, on a loaded machine). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "testutil.h"
#include "harness.h"
#include "util.h"

#define NNODES 3

static struct harness h;
static pid_t sshd_pid[NNODES];

/* A fresh host key for node i (ssh-keygen). */
static void
host_key(int i)
{
	ck_assert_int_eq(harness_sh("rm -f %s/ssh%d/hostkey %s/ssh%d/hostkey.pub && ssh-keygen -q -t "
	    "ed25519 -N '' -f %s/ssh%d/hostkey", h.tmp, i, h.tmp, i, h.tmp, i), 0);
}

/* Start sshd in node i's namespace, its sftp subsystem sftp, extra
 * appended to its config (sshd_wait: until it listens). */
static void
sshd_spawn_sftp(int i, const char *sftp, const char *extra)
{
	char dir[4096], cfg[4200], log[4200];
	char *argv[] = { (char *)(uintptr_t)"ip", (char *)(uintptr_t)"netns", (char *)(uintptr_t)"exec",
	    h.node[i].ns, (char *)(uintptr_t)"/usr/sbin/sshd", (char *)(uintptr_t)"-D",
	    (char *)(uintptr_t)"-f", cfg, (char *)(uintptr_t)"-E", log, NULL };

	snprintf(dir, sizeof(dir), "%s/ssh%d", h.tmp, i);
	snprintf(cfg, sizeof(cfg), "%s/sshd_config", dir);
	snprintf(log, sizeof(log), "%s/sshd.log", dir);
	unlink(log);
	/* the sessions' HOME is dir, not root's: bash run by sshd reads
	 * ~/.bashrc before each command, and a machine's own (here: pyenv
	 * init, 0.2 s of processes per command) is no part of the test */
	cu_write(cfg, 0644, "ListenAddress %s\nPort 22\nHostKey %s/hostkey\nPidFile %s/sshd.pid\n"
	    "AuthorizedKeysFile %s/authorized_keys\nPermitRootLogin prohibit-password\n"
	    "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
	    "Subsystem sftp %s\nLogLevel VERBOSE\nSetEnv HOME=%s\n%s",
	    h.node[i].addr, dir, dir, h.tmp, sftp, dir, extra);
	sshd_pid[i] = fork();
	ck_assert_int_ge(sshd_pid[i], 0);
	if (sshd_pid[i] == 0) {
		execvp("ip", argv);
		_exit(127);
	}
}

/* Start sshd in node i's namespace, extra appended to its config
 * (sshd_wait: until it listens). */
static void
sshd_spawn_cfg(int i, const char *extra)
{
	sshd_spawn_sftp(i, "/usr/lib/openssh/sftp-server", extra);
}

/* Wait for node i's sshd to say "Server listening" (10 s at most). */
static void
sshd_wait(int i)
{
	uint64_t end = now_mono_ns() + 10000000000ull;
	char log[4200], *buf = NULL;

	snprintf(log, sizeof(log), "%s/ssh%d/sshd.log", h.tmp, i);
	for (;;) {
		free(buf);
		buf = NULL;
		if (read_file_bounded(log, 1 << 20, &buf, NULL) == 0 && strstr(buf, "Server listening"))
			break;
		ck_assert_msg(now_mono_ns() < end, "sshd %d did not start: %s", i, buf ? buf : "");
		usleep(20000);
	}
	free(buf);
}

/* Start sshd in node i's namespace (sshd_wait: until it listens). */
static void
sshd_spawn(int i)
{
	sshd_spawn_cfg(i, "");
}

/* Start sshd in node i's namespace, extra appended to its config; wait
 * for "Server listening". */
static void
sshd_start_cfg(int i, const char *extra)
{
	sshd_spawn_cfg(i, extra);
	sshd_wait(i);
}

/* Start sshd in node i's namespace; wait for "Server listening". */
static void
sshd_start(int i)
{
	sshd_start_cfg(i, "");
}

static void
sshd_stop(int i)
{
	if (sshd_pid[i] > 0) {
		kill(sshd_pid[i], SIGTERM);
		waitpid(sshd_pid[i], NULL, 0);
	}
	sshd_pid[i] = 0;
}

/* SIGTERM to the agent the service script started under node i's root
 * (its pid file goes); its pid, 0 when there is none. */
static pid_t
agent_term(int i)
{
	char path[4200], *buf = NULL;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/root-%s/knobd.pid", h.tmp, h.node[i].name);
	if (read_file_bounded(path, 64, &buf, NULL) < 0)
		return 0;
	pid = (pid_t)atoi(buf);
	free(buf);
	unlink(path);
	return pid > 0 && kill(pid, SIGTERM) == 0 ? pid : 0;
}

/* Stop the agent under node i's root (agent_term) and wait until it has
 * ended (10 s at most). */
static void
agent_stop(int i)
{
	uint64_t end = now_mono_ns() + 10000000000ull;
	pid_t pid = agent_term(i);

	while (pid > 0 && !cu_pid_gone(pid) && now_mono_ns() < end)
		usleep(20000);
}

/* The case's namespaces, CA and keys are made once, by the runner (an
 * unchecked fixture: making them took about half of each test's time);
 * every test starts from a copy of them in a fresh TMP (setup). */
static pid_t runner;
static int case_up;

/* TMP/.keep: TMP as every test starts it, copied over (tmp_reset): the
 * CA directory and cluster.xml as harness_start made them, the user keys
 * id and wrong (authorized_keys allows id), a host key per node
 * (sshI/hostkey) and the service script.  0 or -1. */
static int
keep_make(void)
{
	if (harness_sh("K=%s/.keep && mkdir -p /run/sshd $K/ssh0 $K/ssh1 $K/ssh2 && cp -a %s %s $K/ "
	    "&& ssh-keygen -q -t ed25519 -N '' -f $K/id && ssh-keygen -q -t ed25519 -N '' -f "
	    "$K/wrong && cp $K/id.pub $K/authorized_keys && for i in 0 1 2; do ssh-keygen -q -t "
	    "ed25519 -N '' -f $K/ssh$i/hostkey || exit 1; done", h.tmp, h.ca_dir, h.cluster) != 0)
		return -1;
	/* the service command: stop the agent this root runs, start the new one */
	cu_write_at(h.tmp, ".keep/svc.sh", 0755,
	    "#!/bin/sh\n# stand-in for systemctl restart knobd (no systemd in the tests)\n"
	    "R=$1; cd \"$R\" || exit 1\n"
	    "# wait up to 10 s for it to end; a zombie has ended (init reaps it late)\n"
	    "if [ -f knobd.pid ]; then p=$(cat knobd.pid); kill $p 2>/dev/null && for i in $(seq 500); do "
	    "s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null) || break; case $s in Z*|X*) break;; esac; "
	    "sleep 0.02; done; fi\n"
	    "setsid \"$R/usr/sbin/knobd\" --ca \"$R/etc/knob/ca.crt\" --cert \"$R/etc/knob/node.crt\" "
	    "--key \"$R/etc/knob/node.key\" --state-dir \"$R/var/lib/knob\" --log-level info "
	    "</dev/null >>\"$R/knobd.log\" 2>&1 &\necho $! > knobd.pid\n");
	return 0;
}

/* Unchecked setup (the runner, once per case): the namespaces and TMP/.keep. */
static void
case_setup(void)
{
	runner = getpid();
	case_up = harness_start(&h, NNODES, 0) == 0 && keep_make() == 0;
}

/* Unchecked teardown: the namespaces and TMP go. */
static void
case_teardown(void)
{
	h.up = 1;	/* the runner's: a forked test's copy said 0 */
	harness_stop(&h);
}

/* SIGKILL to every process in the named network namespace but this one
 * (as ip netns pids lists them: those whose /proc/PID/ns/net is it); then
 * wait until they have ended (a zombie has: its sockets are closed), so
 * that a new sshd can listen where a killed one did. */
static void
ns_kill_all(const char *ns)
{
	uint64_t end = now_mono_ns() + 5000000000ull;
	pid_t killed[256];
	char path[300];
	struct stat want, st;
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	if (stat(path, &want) < 0 || (dir = opendir("/proc")) == NULL)
		return;
	while ((d = readdir(dir)) != NULL) {
		pid_t pid = (pid_t)atoi(d->d_name);

		snprintf(path, sizeof(path), "/proc/%s/ns/net", d->d_name);
		if (pid > 0 && pid != getpid() && stat(path, &st) == 0 && st.st_ino == want.st_ino &&
		    st.st_dev == want.st_dev && kill(pid, SIGKILL) == 0 && n < 256)
			killed[n++] = pid;
	}
	closedir(dir);
	for (int i = 0; i < n; i++)
		while (!cu_pid_gone(killed[i]) && now_mono_ns() < end)
			usleep(10000);
}

/* Every process left in the nodes' and the controller's namespaces is
 * killed: what a test (even a failed one, which ends without its
 * teardown) started there is gone before the next begins. */
static void
ns_sweep(void)
{
	for (int i = 0; i < NNODES; i++)
		ns_kill_all(h.node[i].ns);
	ns_kill_all(h.ctl_ns);
}

/* TMP as every test starts it: what the test before wrote is removed,
 * TMP/.keep copied over it. */
static void
tmp_reset(void)
{
	ck_assert_int_eq(harness_sh("cd %s && find . -mindepth 1 -maxdepth 1 ! -name .keep -exec "
	    "rm -rf {} + && cp -a .keep/. .", h.tmp), 0);
}

/* Checked setup (each test, forked): a fresh TMP, the three sshds. */
static void
setup(void)
{
	ck_assert_msg(case_up, "the case's namespaces or keys could not be made");
	/* this copy of h does not own the namespaces: a forked test's exit
	 * (harness's atexit) must leave them to the runner */
	h.up = getpid() == runner;
	ns_sweep();
	tmp_reset();
	/* bootstrap pings a just started agent every 20 ms, not every 200 */
	setenv("KNOB_TEST_CONFIRM_RETRY_MS", "20", 1);
	for (int i = 0; i < NNODES; i++)	/* the three start side by side */
		sshd_spawn(i);
	for (int i = 0; i < NNODES; i++)
		sshd_wait(i);
}

/* The agents and the sshds are stopped side by side: each is told first,
 * then each is waited for (an agent: 10 s at most); then whatever else
 * the test left in the namespaces. */
static void
teardown(void)
{
	uint64_t end = now_mono_ns() + 10000000000ull;
	pid_t agent[NNODES];

	for (int i = 0; i < NNODES; i++) {
		agent[i] = agent_term(i);
		if (sshd_pid[i] > 0)
			kill(sshd_pid[i], SIGTERM);
	}
	for (int i = 0; i < NNODES; i++) {
		while (agent[i] > 0 && !cu_pid_gone(agent[i]) && now_mono_ns() < end)
			usleep(20000);
		sshd_stop(i);
	}
	ns_sweep();
}

/* No pushed knobd (/tmp/knobd-push.node0*) is left on the nodes (the
 * test's nodes share this /tmp). */
static int
no_pushed_copy(void *arg)
{
	(void)arg;
	return harness_sh("ls /tmp/knobd-push.node0* >/dev/null 2>&1") != 0;
}

/* knobctl bootstrap with the test's SSH settings plus extra arguments. */
static int
boot(char **out, const char *key, const char *extra)
{
	char *err = NULL;
	int rc = harness_knobctl(&h, out, &err, "bootstrap -a --ssh-key %s/%s --known-hosts %s/known_hosts "
	    "--root %s/root-{node} --service-cmd 'sh %s/svc.sh {root}' --timeout 20 %s",
	    h.tmp, key, h.tmp, h.tmp, h.tmp, extra);

	fprintf(stderr, "---- bootstrap %s -> %d\n%s%s", extra, rc, *out, err);
	free(err);
	return rc;
}

/* bootstrap node01 alone with the test's service script, run from
 * another directory (the marker is still removed). */
static int
boot1(char **out)
{
	int rc = harness_knobctl(&h, out, NULL, "bootstrap -w node01 --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --root %s/root-{node} --service-cmd 'cd / && sh %s/svc.sh {root}' "
	    "--timeout 20", h.tmp, h.tmp, h.tmp, h.tmp);

	fprintf(stderr, "---- bootstrap node01 -> %d\n%s", rc, *out);
	return rc;
}

/* "ssh-ed25519 SHA256:..." of node i's host key, as ssh-keygen prints it. */
static char *
fingerprint(int i)
{
	char cmd[4200], line[512] = "", *fp, *sp;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ssh-keygen -l -f %s/ssh%d/hostkey.pub", h.tmp, i);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	pclose(p);
	/* "256 SHA256:xxxx comment (ED25519)" */
	fp = strchr(line, ' ');
	ck_assert_ptr_nonnull(fp);
	sp = strchr(fp + 1, ' ');
	ck_assert_ptr_nonnull(sp);
	*sp = '\0';
	return xasprintf("ssh-ed25519 %s", fp + 1);
}

/* The notAfter of the certificate installed on node i, in seconds. */
static time_t
cert_not_after(int i)
{
	char path[4200];
	struct tm tm;
	X509 *x;
	FILE *f;

	snprintf(path, sizeof(path), "%s/root-%s/etc/knob/node.crt", h.tmp, h.node[i].name);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm), 1);
	X509_free(x);
	return timegm(&tm);
}

static mode_t
mode_of(int i, const char *rel)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/root-%s/%s", h.tmp, h.node[i].name, rel);
	ck_assert_msg(stat(path, &st) == 0, "%s: %s", path, strerror(errno));
	return st.st_mode & 07777;
}

/* From nothing: unknown host keys refused, a wrong user key refused, then
 * three nodes installed and answering over TLS; a re-run changes nothing;
 * a changed host key refuses that node only. */
START_TEST(bootstrap_fleet)
{
	char *out = NULL, *fp, want[8192], left[2][32];
	time_t t0, t1, na;
	int rc;

	/* unknown host keys: each node refused, naming its key's fingerprint */
	rc = boot(&out, "id", "");
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "3 auth-failed (node[01-03])"), "%s", out);
	for (int i = 0; i < NNODES; i++) {
		fp = fingerprint(i);
		snprintf(want, sizeof(want), "%s: auth-failed: host key refused: %s is not in %s/known_hosts",
		    h.node[i].name, fp, h.tmp);
		ck_assert_msg(strstr(out, want), "want %s: %s", want, out);
		free(fp);
	}
	free(out);

	/* --accept-new adds the keys; the wrong user key is refused clearly */
	rc = boot(&out, "wrong", "--accept-new");
	ck_assert_int_eq(rc, 1);
	snprintf(want, sizeof(want), "node[01-03] (3): auth-failed: ssh authentication failed for root: "
	    "key %s/wrong refused", h.tmp);
	ck_assert_msg(strstr(out, want), "want %s: %s", want, out);
	free(out);

	rc = boot(&out, "id", "");
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "node[01-03] (3): installed: knobd, ca.crt, knobd.service, node.crt, "
	    "node.key; service command run; agent answers over TLS"), "%s", out);
	ck_assert_msg(strstr(out, "3 changed"), "%s", out);
	free(out);
	for (int i = 0; i < NNODES; i++) {
		ck_assert_int_eq(mode_of(i, "etc/knob/node.key"), 0600);
		ck_assert_int_eq(mode_of(i, "usr/sbin/knobd"), 0755);
		ck_assert_int_eq(mode_of(i, "etc/knob/node.crt"), 0644);
		ck_assert_int_eq(mode_of(i, "var/lib/knob"), 0700);
	}
	/* the agents serve real requests over TLS; facts show the
	 * certificate's expiry: issued just now for 5 years (1826 days), so
	 * 1826 days left in the second it was issued, 1825 after that; the
	 * days are those of node01's certificate at the time facts ran */
	t0 = time(NULL);
	rc = harness_knobctl(&h, &out, NULL, "facts -a");
	t1 = time(NULL);
	ck_assert_msg(rc == 0, "%s", out);
	na = cert_not_after(0);
	ck_assert_msg((na - t0) / 86400 == 1826 || (na - t0) / 86400 == 1825,
	    "node01's certificate has %lld days left", (long long)(na - t0) / 86400);
	snprintf(left[0], sizeof(left[0]), " (%lld days)", (long long)(na - t0) / 86400);
	snprintf(left[1], sizeof(left[1]), " (%lld days)", (long long)(na - t1) / 86400);
	ck_assert_msg(strstr(out, "certificate: expires ") && (strstr(out, left[0]) ||
	    strstr(out, left[1])), "want%s or%s: %s", left[0], left[1], out);
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "--json facts -a");
	ck_assert_int_eq(rc, 0);
	{
		int nexp = 0;

		for (const char *p = out; (p = strstr(p, "\"cert_not_after\"")) != NULL; p++)
			nexp++;
		ck_assert_msg(nexp == NNODES, "%d expiries: %s", nexp, out);
	}
	free(out);

	rc = boot(&out, "id", "");
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "node[01-03] (3): unchanged\n"), "%s", out);
	ck_assert_msg(strstr(out, "3 ok"), "%s", out);
	free(out);

	/* node02 gets a new host key */
	sshd_stop(1);
	host_key(1);
	sshd_start(1);
	fp = fingerprint(1);
	rc = boot(&out, "id", "--accept-new");
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node[01,03] (2): unchanged"), "%s", out);
	ck_assert_msg(strstr(out, "node02: auth-failed: host key refused: "), "%s", out);
	ck_assert_msg(strstr(out, fp) && strstr(out, "does NOT match"), "want %s: %s", fp, out);
	free(out);
	free(fp);
}
END_TEST

/* Copy what arrives on either of fds a and b to the other until one ends
 * (or stop is readable). */
static void
relay(int a, int b, int stop)
{
	struct pollfd pf[3] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN },
	    { .fd = stop, .events = POLLIN } };
	char buf[16384];
	ssize_t n;

	while (poll(pf, 3, -1) > 0 && !pf[2].revents)
		for (int i = 0; i < 2; i++) {
			if (!pf[i].revents)
				continue;
			if ((n = read(pf[i].fd, buf, sizeof(buf))) <= 0 ||
			    write(pf[!i].fd, buf, (size_t)n) != n)
				return;
		}
}

/* A stand-in in node01's namespace (harness_child) between knobctl and
 * node01's sshd, on port 2222: it takes one connection and reads the
 * client's banner (knobctl read known_hosts before it sent it, for its
 * host key preference), then marks node01's host key @revoked in
 * TMP/known_hosts.swap (a new file put in place with mv), then relays to
 * sshd.  1 when it did so. */
static int
kh_swap_proxy(int ready, int stop)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(2222) };
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, c, sfd, swapped;
	char buf[4096];
	ssize_t n = 0, r;

	inet_pton(AF_INET, h.node[0].addr, &sa.sin_addr);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0 ||
	    write(ready, "", 1) != 1 || (c = accept(lfd, NULL, NULL)) < 0)
		_exit(1);
	while (n < (ssize_t)sizeof(buf) && memchr(buf, '\n', (size_t)n) == NULL &&
	    (r = read(c, buf + n, sizeof(buf) - (size_t)n)) > 0)
		n += r;
	swapped = harness_sh("kh=%s/known_hosts.swap; { cat $kh; echo \"@revoked * $(cut -d' ' "
	    "-f1,2 %s/ssh0/hostkey.pub)\"; } > $kh.new && mv $kh.new $kh", h.tmp, h.tmp) == 0;
	sa.sin_port = htons(22);
	if ((sfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(sfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || write(sfd, buf, (size_t)n) != n)
		_exit(1);
	relay(c, sfd, stop);
	return swapped;
}

/* known_hosts as OpenSSH users keep it: a line libssh2 cannot parse (here a
 * truncated one) at the top must not hide the lines below it, or a changed
 * host key would look new and --accept-new would take it; CRLF line ends
 * are read as OpenSSH reads them; a key marked "@revoked" (after blanks)
 * is refused.  The wrong user key stops every bootstrap at
 * authentication, after the host key check this test is about. */
START_TEST(known_hosts_bad_line_revoked)
{
	char *out = NULL, *err = NULL, kh[4200], want[8192], *pub = NULL, *fp;
#define KH_BOOT "bootstrap -a --ssh-key %s/wrong --known-hosts %s --root %s/root-{node} " \
	    "--timeout 20 --accept-new"
	const char *p;
	int rc, nwarn = 0;

	snprintf(kh, sizeof(kh), "%s/known_hosts", h.tmp);
	rc = harness_knobctl(&h, &out, NULL, KH_BOOT, h.tmp, kh, h.tmp);
	ck_assert_int_eq(rc, 1);	/* keys added, then the user key refused */
	free(out);
	/* a truncated line on top of the three good ones, every line ending in
	 * CRLF (a file edited on another system) */
	ck_assert_int_eq(harness_sh("{ echo 'node09 ssh-ed25519'; cat %s; } | sed 's/$/\\r/' > %s.new "
	    "&& mv %s.new %s", kh, kh, kh, kh), 0);
	sshd_stop(1);
	host_key(1);
	sshd_start(1);
	fp = fingerprint(1);
	rc = harness_knobctl(&h, &out, &err, KH_BOOT, h.tmp, kh, h.tmp);
	fprintf(stderr, "---- changed key under a bad line -> %d\n%s%s", rc, out, err);
	ck_assert_int_eq(rc, 1);
	snprintf(want, sizeof(want), "node02: auth-failed: host key refused: %s does NOT match %s", fp, kh);
	ck_assert_msg(strstr(out, want), "want %s: %s", want, out);
	snprintf(want, sizeof(want), "node[01,03] (2): auth-failed: ssh authentication failed for root: "
	    "key %s/wrong refused", h.tmp);
	ck_assert_msg(strstr(out, want), "want %s: %s", want, out);
	for (p = err; (p = strstr(p, "known_hosts:1: known_hosts line skipped")) != NULL; p++)
		nwarn++;
	ck_assert_msg(nwarn == 1, "%d warnings: %s", nwarn, err);
	free(out);
	free(err);
	free(fp);
	/* node01's key revoked: refused, even though its line is still there */
	snprintf(want, sizeof(want), "%s/ssh0/hostkey.pub", h.tmp);
	ck_assert_int_eq(read_file_bounded(want, 4096, &pub, NULL), 0);
	ck_assert_int_eq(harness_sh("echo '  @revoked * %.*s' >> %s", (int)strcspn(pub, "\n"), pub, kh), 0);
	free(pub);
	fp = fingerprint(0);
	rc = harness_knobctl(&h, &out, NULL, KH_BOOT, h.tmp, kh, h.tmp);
	fprintf(stderr, "---- revoked -> %d\n%s", rc, out);
	ck_assert_int_eq(rc, 1);
	snprintf(want, sizeof(want), "node01: auth-failed: host key refused: %s is marked @revoked in %s",
	    fp, kh);
	ck_assert_msg(strstr(out, want), "want %s: %s", want, out);
	snprintf(want, sizeof(want), "node03: auth-failed: ssh authentication failed for root: "
	    "key %s/wrong refused", h.tmp);
	ck_assert_msg(strstr(out, want), "want %s: %s", want, out);
	free(out);

	/* node01's key revoked while bootstrap connects to it: known_hosts
	 * read for the host key preference, then changed (kh_swap_proxy), is
	 * read again for the check, which refuses the key (with the copy read
	 * first, it went on to authenticate) */
	{
		struct harness_child px;

		snprintf(kh, sizeof(kh), "%s/known_hosts.swap", h.tmp);
		ck_assert_int_eq(harness_sh("echo \"[node01]:2222 $(cut -d' ' -f1,2 "
		    "%s/ssh0/hostkey.pub)\" > %s", h.tmp, kh), 0);
		harness_child_start(&px, h.node[0].ns, kh_swap_proxy);
		rc = harness_knobctl(&h, &out, NULL, "bootstrap -w node01 --ssh-port 2222 --ssh-key "
		    "%s/wrong --known-hosts %s --root %s/root-{node} --timeout 20", h.tmp, kh, h.tmp);
		fprintf(stderr, "---- revoked while connecting -> %d\n%s", rc, out);
		ck_assert_int_eq(harness_child_end(&px), 1);
		ck_assert_int_eq(rc, 1);
		snprintf(want, sizeof(want), "node01: auth-failed: host key refused: %s is marked "
		    "@revoked in %s", fp, kh);
		ck_assert_msg(strstr(out, want), "want %s: %s", want, out);
		free(out);
	}
	free(fp);
#undef KH_BOOT
}
END_TEST

/* A service command that fails leaves the node failed; a re-run with no
 * file to send runs it again (until one succeeds), then a third run runs
 * nothing: the agent started by the second keeps its pid. */
START_TEST(bootstrap_service_retried)
{
	char *out = NULL, *pid1 = NULL, *pid2 = NULL, path[4200];
	int rc;

	rc = harness_knobctl(&h, &out, NULL, "bootstrap -w node01 --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --accept-new --root %s/root-{node} --service-cmd 'echo no restart >&2; "
	    "exit 3' --timeout 20", h.tmp, h.tmp, h.tmp);
	fprintf(stderr, "---- failing service -> %d\n%s", rc, out);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node01: failed: install failed (exit 3): no restart"), "%s", out);
	free(out);
	rc = boot1(&out);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "node01: unchanged; service command run again (the agent had "
	    "not answered since the last install); agent answers over TLS"), "%s", out);
	free(out);
	snprintf(path, sizeof(path), "%s/root-node01/etc/knob/bootstrap-service-pending", h.tmp);
	ck_assert_msg(access(path, F_OK) < 0, "the marker outlived a successful service command");
	snprintf(path, sizeof(path), "%s/root-node01/knobd.pid", h.tmp);
	ck_assert_int_eq(read_file_bounded(path, 64, &pid1, NULL), 0);
	rc = boot1(&out);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "node01: unchanged\n"), "%s", out);
	free(out);
	ck_assert_int_eq(read_file_bounded(path, 64, &pid2, NULL), 0);
	ck_assert_str_eq(pid1, pid2);
	free(pid1);
	free(pid2);
}
END_TEST

/* A service command that exits 0 but leaves no agent answering (systemd
 * forks knobd, which dies at once): the marker stays until the agent
 * answers over TLS, so the re-run starts the agent again, then clears it. */
START_TEST(bootstrap_agent_died_retried)
{
	char *out = NULL, marker[4200];
	int rc;

	snprintf(marker, sizeof(marker), "%s/root-node01/etc/knob/bootstrap-service-pending", h.tmp);
	rc = harness_knobctl(&h, &out, NULL, "bootstrap -w node01 --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --accept-new --root %s/root-{node} --service-cmd true --timeout 1",
	    h.tmp, h.tmp, h.tmp);
	fprintf(stderr, "---- service exits 0, no agent -> %d\n%s", rc, out);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node01: failed: installed but the agent does not answer over "
	    "TLS"), "%s", out);
	free(out);
	ck_assert_msg(access(marker, F_OK) == 0, "no marker although the agent never answered");
	ck_assert_int_eq(boot1(&out), 0);
	ck_assert_msg(strstr(out, "node01: unchanged; service command run again (the agent had "
	    "not answered since the last install); agent answers over TLS"), "%s", out);
	free(out);
	ck_assert_msg(access(marker, F_OK) < 0, "the marker outlived an answering agent");
	ck_assert_int_eq(boot1(&out), 0);
	ck_assert_msg(strstr(out, "node01: unchanged\n"), "%s", out);
	free(out);
}
END_TEST

/* ping -w node (rc), retried for up to 10 s while a restarted agent is
 * not listening yet; its output into *out. */
static int
ping_retry(char **out, const char *node)
{
	int rc = -1;

	for (int i = 0; i < 50 && rc != 0; i++) {
		if (i) {
			free(*out);
			usleep(200000);
		}
		rc = harness_knobctl(&h, out, NULL, "ping -w %s", node);
	}
	return rc;
}

/* A node.key that is missing (node01) or belongs to another certificate
 * (node02) is repaired: a new key and certificate, the agent restarted
 * on them; then every node is unchanged. */
/* The second SSH connection (the one that removes the service-pending
 * marker once the agent answers) fails: the service command stopped the
 * node's sshd.  The install stands (exit 0, the agent answers) and the
 * output says the marker stays; the next run, with sshd back, runs the
 * service command once more and removes it. */
START_TEST(bootstrap_second_ssh_fails)
{
	char *out = NULL, marker[4200];
	int rc;

	snprintf(marker, sizeof(marker), "%s/root-node01/etc/knob/bootstrap-service-pending", h.tmp);
	rc = harness_knobctl(&h, &out, NULL, "bootstrap -w node01 --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --accept-new --root %s/root-{node} --service-cmd 'cd / && sh %s/svc.sh "
	    "{root} && kill $(cat %s/ssh0/sshd.pid)' --timeout 20", h.tmp, h.tmp, h.tmp, h.tmp, h.tmp);
	fprintf(stderr, "---- sshd gone before the second connection -> %d\n%s", rc, out);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "agent answers over TLS") && strstr(out, "bootstrap-service-pending "
	    "not removed") && strstr(out, "the next run runs the service command again"), "%s", out);
	free(out);
	ck_assert_msg(access(marker, F_OK) == 0, "the marker went although its removal failed");
	ck_assert_int_eq(waitpid(sshd_pid[0], NULL, 0), sshd_pid[0]);
	sshd_pid[0] = 0;
	sshd_start(0);
	ck_assert_int_eq(boot1(&out), 0);
	ck_assert_msg(strstr(out, "node01: unchanged; service command run again (the agent had "
	    "not answered since the last install); agent answers over TLS"), "%s", out);
	free(out);
	ck_assert_msg(access(marker, F_OK) < 0, "the marker outlived the second run");
}
END_TEST

START_TEST(bootstrap_key_repaired)
{
	char *out = NULL;
	int rc;

	ck_assert_int_eq(boot(&out, "id", "--accept-new"), 0);
	free(out);
	ck_assert_int_eq(harness_sh("rm %s/root-node01/etc/knob/node.key && cp %s/ca/node02.key "
	    "%s/root-node02/etc/knob/node.key", h.tmp, h.tmp, h.tmp), 0);
	ck_assert_int_eq(boot(&out, "id", ""), 0);
	ck_assert_msg(strstr(out, "node01: updated: node.crt, node.key; service command run; agent "
	    "answers over TLS; node.key missing: new key and certificate"), "%s", out);
	ck_assert_msg(strstr(out, "node02: updated: node.crt, node.key; service command run; agent "
	    "answers over TLS; node.key does not match node.crt: new key and certificate"), "%s", out);
	ck_assert_msg(strstr(out, "node03: unchanged"), "%s", out);
	free(out);
	ck_assert_int_eq(mode_of(0, "etc/knob/node.key"), 0600);
	ck_assert_int_eq(boot(&out, "id", ""), 0);
	ck_assert_msg(strstr(out, "node[01-03] (3): unchanged\n"), "%s", out);
	free(out);
	/* the agents run on the new pairs: restarted, they still answer */
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(harness_node_sh(&h, i, "sh %s/svc.sh %s/root-%s", h.tmp, h.tmp,
		    h.node[i].name), 0);
	rc = ping_retry(&out, "node[01-02]");
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
}
END_TEST

/* --upgrade replaces the binary and restarts the agent; the journal (the
 * originals of a profile applied before) survives, and rollback works. */
START_TEST(upgrade_keeps_journal)
{
	char *out = NULL, prof[4200], newbin[4200], jpath[4200], extra[8400];
	int rc;

	ck_assert_int_eq(boot(&out, "id", "--accept-new"), 0);
	free(out);
	snprintf(prof, sizeof(prof), "%s/somax.xml", h.tmp);
	cu_write(prof, 0644, "<?xml version=\"1.0\"?>\n<profile name=\"somax\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"1234\"/>\n</profile>\n");
	ck_assert_int_eq(harness_node_sh(&h, 0, "sysctl -qw net.core.somaxconn=777"), 0);
	rc = harness_knobctl(&h, &out, NULL, "apply %s -w node01", prof);
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
	snprintf(jpath, sizeof(jpath), "%s/root-node01/var/lib/knob", h.tmp);
	ck_assert_int_eq(harness_sh("cd %s && find . -type f | sort | xargs cat > %s/journal.before", jpath, h.tmp), 0);

	/* a different agent binary: the same program with bytes appended */
	snprintf(newbin, sizeof(newbin), "%s/knobd.new", h.tmp);
	ck_assert_int_eq(harness_sh("cp %s/knobd %s && echo upgrade >> %s", h.bin, newbin, newbin), 0);
	snprintf(extra, sizeof(extra), "--knobd %s", newbin);
	rc = boot(&out, "id", extra);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "knobd differs from this controller's (--upgrade replaces it)"), "%s", out);
	free(out);
	snprintf(extra, sizeof(extra), "--knobd %s --upgrade -w node01", newbin);
	rc = boot(&out, "id", extra);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "upgraded: knobd; service command run; agent answers over TLS"),
	    "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("cmp -s %s %s/root-node01/usr/sbin/knobd", newbin, h.tmp), 0);
	ck_assert_int_eq(harness_sh("cd %s && find . -type f | sort | xargs cat > %s/journal.after", jpath, h.tmp), 0);
	ck_assert_int_eq(harness_sh("test -s %s/journal.before && cmp %s/journal.before %s/journal.after",
	    h.tmp, h.tmp, h.tmp), 0);
	rc = harness_knobctl(&h, &out, NULL, "rollback -w node01");
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
	ck_assert_int_eq(harness_node_sh(&h, 0, "test $(cat /proc/sys/net/core/somaxconn) = 777"), 0);
}
END_TEST

/* A revoked controller certificate: bootstrap pushes the CRL, the
 * restarted agents refuse that certificate and keep serving the others. */
START_TEST(revoked_controller_refused)
{
	char *out = NULL;
	int rc;

	ck_assert_int_eq(boot(&out, "id", "--accept-new"), 0);
	free(out);
	ck_assert_int_eq(harness_sh("%s/knobctl -c %s ca issue %s/ca ctl2 --controller >/dev/null",
	    h.bin, h.cluster, h.tmp), 0);
	rc = harness_knobctl(&h, &out, NULL, "ping -a --cert %s/ca/ctl2.crt --key %s/ca/ctl2.key",
	    h.tmp, h.tmp);
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("%s/knobctl -c %s ca revoke ctl2 >/dev/null", h.bin, h.cluster), 0);
	rc = boot(&out, "id", "");
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "node[01-03] (3): updated: ca.crl; service command run"), "%s", out);
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "ping -a --cert %s/ca/ctl2.crt --key %s/ca/ctl2.key",
	    h.tmp, h.tmp);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node[01-03] (3): auth-failed: agent refused our certificate: it is "
	    "revoked"), "%s", out);
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "ping -a");
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
}
END_TEST

/* A node certificate that bootstrap issued is on record: `ca revoke`
 * revokes it (with the `ca issue` one of the same name), the controller
 * then refuses that node, and a bootstrap re-run gives it a new pair. */
START_TEST(revoked_node_bootstrapped)
{
	char *out = NULL;
	int rc;

	ck_assert_int_eq(boot(&out, "id", "--accept-new"), 0);
	free(out);
	rc = cu_sh_out(&out, "%s/knobctl -c %s ca revoke node01", h.bin, h.cluster);
	fprintf(stderr, "---- ca revoke node01 -> %d\n%s", rc, out);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "revoked node01 (2 certificates, serial"), "%s", out);
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "ping -a");
	fprintf(stderr, "---- ping after revoke -> %d\n%s", rc, out);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node01: auth-failed: agent certificate rejected: certificate "
	    "revoked"), "%s", out);
	ck_assert_msg(strstr(out, "node[02-03] (2): pong"), "%s", out);
	free(out);
	ck_assert_int_eq(boot(&out, "id", ""), 0);
	ck_assert_msg(strstr(out, "node01: updated: ca.crl, node.crt, node.key; service command run"),
	    "%s", out);
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "ping -a");
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
}
END_TEST

/* A ca.crl left on a node (here another CA's) while the CA has none: the
 * agent ignores a CRL its CA did not sign (it cannot revoke anything of
 * it) instead of refusing every controller, and bootstrap removes it, then
 * reports the node unchanged. */
START_TEST(stale_crl_removed)
{
	char *out = NULL, crl[4200];
	int rc;

	ck_assert_int_eq(boot(&out, "id", "--accept-new"), 0);
	free(out);
	ck_assert_int_eq(harness_sh("K=%s/knobctl; $K ca init %s/ca2 && $K ca issue %s/ca2 old "
	    "--controller && $K ca revoke --ca-dir %s/ca2 old", h.bin, h.tmp, h.tmp, h.tmp), 0);
	snprintf(crl, sizeof(crl), "%s/root-node01/etc/knob/ca.crl", h.tmp);
	ck_assert_int_eq(harness_sh("cp %s/ca2/ca.crl %s", h.tmp, crl), 0);
	ck_assert_int_eq(harness_node_sh(&h, 0, "sh %s/svc.sh %s/root-node01", h.tmp, h.tmp), 0);
	rc = ping_retry(&out, "node01");
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("grep -q 'ca.crl: not issued by the CA in .*: ignored' "
	    "%s/root-node01/knobd.log", h.tmp), 0);
	ck_assert_int_eq(boot(&out, "id", ""), 0);
	ck_assert_msg(strstr(out, "node01: updated: removed ca.crl (the CA has none); service "
	    "command run; agent answers over TLS"), "%s", out);
	free(out);
	ck_assert_msg(access(crl, F_OK) < 0, "%s is still there", crl);
	ck_assert_int_eq(boot(&out, "id", ""), 0);
	ck_assert_msg(strstr(out, "node[01-03] (3): unchanged\n"), "%s", out);
	free(out);
}
END_TEST

/* Agentless: no agent runs anywhere; facts and apply --check travel as the
 * same frames over an SSH exec channel to knobd --stdio.  --push-agent
 * streams this controller's knobd to nodes that have none. */
START_TEST(agentless_via_ssh)
{
	char *out = NULL, *err = NULL, prof[4200], ssh[8192];
	int rc;

	snprintf(ssh, sizeof(ssh), "--via ssh --ssh-key %s/id --known-hosts %s/known_hosts --accept-new",
	    h.tmp, h.tmp);
	for (int i = 0; i < NNODES; i++)
		ck_assert_int_eq(harness_sh("mkdir -p %s/state-%s", h.tmp, h.node[i].name), 0);
	/* nothing listens on the agent port: TLS reaches nobody */
	rc = harness_knobctl(&h, &out, NULL, "ping -a --connect-timeout 2");
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "3 unreachable"), "%s", out);
	free(out);

	/* the node has no knobd: said so; then pushed */
	rc = harness_knobctl(&h, &out, &err, "%s --remote-knobd /nonexistent/knobd facts -a", ssh);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node[01-03] (3): failed: knobd --stdio ended: ") &&
	    strstr(out, "/nonexistent/knobd: No such file or directory\n"), "%s%s", out, err);
	free(out);
	free(err);
	rc = harness_knobctl(&h, &out, &err, "%s --push-agent --remote-knobd 'knobd --state-dir "
	    "%s/state-{node}' facts -a", ssh, h.tmp);
	if (rc != 0)
		fprintf(stderr, "---- stderr\n%s", err);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	free(err);
	/* every node answered (their facts need not fold into one block: the
	 * loop devices of a shared machine come and go between the answers) */
	ck_assert_msg(strstr(out, "3 ok") && strstr(out, "kernel "), "%s", out);
	free(out);
	/* the pushed copies go: the remote shell removes each once its knobd
	 * ended, which can be just after knobctl returned */
	ck_assert_msg(cu_wait(no_pushed_copy, NULL, 10) >= 0, "a pushed knobd is left in /tmp");

	/* apply --check with the node's own knobd (here: the build's, same file system) */
	snprintf(prof, sizeof(prof), "%s/somax.xml", h.tmp);
	cu_write(prof, 0644, "<?xml version=\"1.0\"?>\n<profile name=\"somax\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"1234\"/>\n</profile>\n");
	ck_assert_int_eq(harness_node_sh(&h, 0, "sysctl -qw net.core.somaxconn=777"), 0);
	rc = harness_knobctl(&h, &out, NULL, "apply %s -w node01 --check %s --remote-knobd '%s/knobd "
	    "--state-dir %s/state-{node}'", prof, ssh, h.bin, h.tmp);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_msg(strstr(out, "would-change    sysctl net.core.somaxconn") &&
	    strstr(out, "1 would-change (node01)"), "%s", out);
	free(out);
	ck_assert_int_eq(harness_node_sh(&h, 0, "test $(cat /proc/sys/net/core/somaxconn) = 777"), 0);
}
END_TEST

/* Agentless, a net glob: knobd --stdio takes the SSH connection's local
 * address from sshd's SSH_CONNECTION, so eth0 (node01's 198.18.0.11, a
 * connected /24 without any default route) is kept from "eth*" as under
 * a TLS controller, while naming it exactly would change it (--check:
 * nothing is written either way).  Before, the glob would have set eth0's
 * MTU, under the SSH session that carried the apply.  Under a real sudo
 * (env_reset: knobd's environment has no SSH_CONNECTION) the address comes
 * from sudo's own environment; before, eth0 was would-change there. */
START_TEST(agentless_net_glob_protected)
{
	/* eth*, eth0 named exactly, eth* under a sudo whose env_reset drops
	 * SSH_CONNECTION from knobd's environment (found in sudo's own) */
	const char *want[] = { "eth0 carries the controller's connection (198.18.0.11): a glob "
	    "never touches it", "would-change    net eth0", "eth0 carries the controller's "
	    "connection (198.18.0.11): a glob never touches it" };
	char *out = NULL, prof[4200], ssh[8192];

	ck_assert_int_eq(harness_sh("mkdir -p %s/state-node01", h.tmp), 0);
	snprintf(prof, sizeof(prof), "%s/mtu.xml", h.tmp);
	for (int v = 0; v < 3; v++) {
		snprintf(ssh, sizeof(ssh), "--via ssh --ssh-key %s/id --known-hosts %s/known_hosts "
		    "--accept-new --remote-knobd '%s%s/knobd --state-dir %s/state-{node}'", h.tmp,
		    h.tmp, v == 2 ? "sudo " : "", h.bin, h.tmp);
		cu_write(prof, 0644, "<?xml version=\"1.0\"?>\n<profile name=\"mtu\">\n"
		    "  <net interface=\"%s\" attr=\"mtu\" value=\"1400\"/>\n</profile>\n",
		    v == 1 ? "eth0" : "eth*");
		ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "apply %s -w node01 --check %s",
		    prof, ssh), 0);
		ck_assert_msg(strstr(out, want[v]) != NULL, "'%s' not in %s", want[v], out);
		free(out);
	}
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link show eth0 | grep -q 'mtu 1500'"), 0);
}
END_TEST

/* The value of net.core.somaxconn in node i's namespace. */
static long
somaxconn(int i)
{
	return harness_sh_int("ip netns exec %s cat /proc/sys/net/core/somaxconn", h.node[i].ns);
}

/* Agentless, the rest of the commands: apply, verify (ok, then a drift
 * made behind knob's back on node02), rollback to the non-default values
 * the nodes started with, a benchmark phase on all three at once, and a
 * health sweep, each over SSH exec channels to knobd --stdio with its own
 * state directory per node (the journal outlives each session). */
START_TEST(agentless_verify_rollback_bench_sweep)
{
	char *out = NULL, prof[4200], sweep[4200], data[4200], via[12600];
	int rc;

	snprintf(via, sizeof(via), "--via ssh --ssh-key %s/id --known-hosts %s/known_hosts "
	    "--accept-new --remote-knobd '%s/knobd --state-dir %s/state-{node}'", h.tmp, h.tmp,
	    h.bin, h.tmp);
	snprintf(prof, sizeof(prof), "%s/somax.xml", h.tmp);
	cu_write(prof, 0644, "<?xml version=\"1.0\"?>\n<profile name=\"somax\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"1234\"/>\n</profile>\n");
	for (int i = 0; i < NNODES; i++) {
		ck_assert_int_eq(harness_sh("mkdir -p %s/state-%s", h.tmp, h.node[i].name), 0);
		ck_assert_int_eq(harness_node_sh(&h, i, "sysctl -qw net.core.somaxconn=%d", 700 + i),
		    0);
	}
	rc = harness_knobctl_logged(&h, &out, "apply %s -a %s", prof, via);
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
	for (int i = 0; i < NNODES; i++)
		ck_assert_int_eq(somaxconn(i), 1234);

	rc = harness_knobctl_logged(&h, &out, "verify %s -a %s", prof, via);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "node[01-03] (3):") && strstr(out, "1 of 1 key(s) match"), "%s",
	    out);
	free(out);
	ck_assert_int_eq(harness_node_sh(&h, 1, "sysctl -qw net.core.somaxconn=999"), 0);
	rc = harness_knobctl_logged(&h, &out, "verify %s -a %s", prof, via);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node02") && strstr(out, "node[01,03] (2):") &&
	    strstr(out, "sysctl net.core.somaxconn: is 999, profile wants 1234"), "%s", out);
	free(out);

	/* node02's value changed since knob set it: left alone there unless
	 * --force; the others get their originals back */
	rc = harness_knobctl_logged(&h, &out, "rollback -a %s", via);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "is 999, knob set 1234, original 701: changed since knob set it") &&
	    strstr(out, "2 changed (node[01,03]), 1 failed (node02)"), "%s", out);
	free(out);
	ck_assert_int_eq(somaxconn(1), 999);
	rc = harness_knobctl_logged(&h, &out, "rollback -w node02 --force %s", via);
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
	for (int i = 0; i < NNODES; i++)	/* the originals, from each node's journal */
		ck_assert_int_eq(somaxconn(i), 700 + i);

	/* a phase on all three nodes at once: every byte, and no file left */
	snprintf(data, sizeof(data), "%s/data", h.tmp);
	ck_assert_int_eq(mkdir(data, 0755), 0);
	rc = harness_knobctl_logged(&h, &out, "--json bench seq-write -a --dir %s --threads 3 "
	    "--size 4m --bs 1m %s", data, via);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_msg(strstr(out, "\"bytes\":12582912") && strstr(out, "\"status\":\"ok\"") &&
	    !strstr(out, "\"status\":\"degraded") && !strstr(out, "\"status\":\"failed"),
	    "%.2000s", out);	/* the whole document is in the log */
	free(out);
	ck_assert_int_ne(harness_sh("ls -d %s/knob.* >/dev/null 2>&1", data), 0);

	/* a sweep: the agents' findings come back folded; the SSH-started
	 * knobd is the process it looks for */
	snprintf(sweep, sizeof(sweep), "%s/sweep.xml", h.tmp);
	cu_write(sweep, 0644, "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <process name=\"knobd\"/>\n    <module name=\"knob_no_such_module\"/>\n"
	    "  </defaults>\n</sweep>\n");
	rc = harness_knobctl_logged(&h, &out, "sweep -a -v -f %s %s", sweep, via);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node[01-03]: service knob_no_such_module fail (module not "
	    "loaded)") && strstr(out, "service knobd ok (running (pid ") &&
	    strstr(out, "node[01-03]: reach ok (answered over SSH (host key checked))") &&
	    strstr(out, "3 fail (node[01-03])"), "%s", out);
	free(out);
}
END_TEST

/* known_hosts as node i's line "NAME KEYFILE's key" (replacing the file). */
static void
kh_only(int i, const char *keyfile)
{
	ck_assert_int_eq(harness_sh("printf '%%s %%s\\n' %s \"$(cut -d' ' -f1,2 %s)\" > %s/known_hosts",
	    h.node[i].name, keyfile, h.tmp), 0);
}

/* bootstrap (boot, extra) refuses node01: exit 1, the output holds want
 * and want2 (unless NULL), and known_hosts is left as it was. */
static void
boot_refused_kh_kept(const char *extra, const char *want, const char *want2)
{
	char *out = NULL, kh[4200], *before = NULL, *after = NULL;

	snprintf(kh, sizeof(kh), "%s/known_hosts", h.tmp);
	ck_assert_int_eq(read_file_bounded(kh, 1 << 20, &before, NULL), 0);
	ck_assert_int_eq(boot(&out, "id", extra), 1);
	ck_assert_msg(strstr(out, want) && (want2 == NULL || strstr(out, want2)), "want %s%s%s: %s",
	    want, want2 ? " and " : "", want2 ? want2 : "", out);
	free(out);
	ck_assert_int_eq(read_file_bounded(kh, 1 << 20, &after, NULL), 0);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
}

/* node01's sshd has an ed25519 and an ecdsa host key (Debian's default);
 * known_hosts lists its ed25519 key only.  libssh2 alone asks for ecdsa
 * first: bootstrap (and --via ssh) now ask for the type known_hosts holds
 * and compare only keys of that type, as OpenSSH does.  A wrong ed25519
 * key is still a changed key; a node listed under another type only is
 * known, not new: --accept-new adds no second type. */
START_TEST(hostkey_two_types)
{
	char *out = NULL, *err = NULL, kh[4200], want[8192];
	int rc;

	snprintf(kh, sizeof(kh), "%s/known_hosts", h.tmp);
	ck_assert_int_eq(harness_sh("ssh-keygen -q -t ecdsa -N '' -f %s/ssh0/hostkey_ecdsa && "
	    "ssh-keygen -q -t ecdsa -b 384 -N '' -f %s/other384 && mkdir -p %s/state-node01",
	    h.tmp, h.tmp, h.tmp), 0);
	sshd_stop(0);
	snprintf(want, sizeof(want), "HostKey %s/ssh0/hostkey_ecdsa\n", h.tmp);
	sshd_start_cfg(0, want);
	snprintf(want, sizeof(want), "%s/ssh0/hostkey.pub", h.tmp);
	kh_only(0, want);
	ck_assert_int_eq(boot1(&out), 0);
	ck_assert_msg(strstr(out, "node01: installed: "), "%s", out);
	free(out);
	rc = harness_knobctl(&h, &out, &err, "--via ssh --ssh-key %s/id --known-hosts %s "
	    "--remote-knobd '%s/knobd --state-dir %s/state-{node}' ping -w node01", h.tmp, kh, h.bin,
	    h.tmp);
	ck_assert_msg(rc == 0, "%s%s", out, err);
	free(out);
	free(err);

	/* another ed25519 key (node02's) for node01: changed, --accept-new or not */
	snprintf(want, sizeof(want), "%s/ssh1/hostkey.pub", h.tmp);
	kh_only(0, want);
	ck_assert_int_eq(boot(&out, "id", "-x node[02-03] --accept-new"), 1);
	ck_assert_msg(strstr(out, "node01: auth-failed: host key refused: ssh-ed25519 SHA256:") &&
	    strstr(out, "does NOT match"), "%s", out);
	free(out);

	/* listed under ecdsa-sha2-nistp384 only: refused, known_hosts untouched */
	snprintf(want, sizeof(want), "%s/other384.pub", h.tmp);
	kh_only(0, want);
	boot_refused_kh_kept("-x node[02-03] --accept-new", "node01: auth-failed: host key refused: ",
	    "lists the node under another key type only (ecdsa-sha2-nistp384): not added, even with "
	    "--accept-new");
}
END_TEST

/* bootstrap --via ssh: its confirmation is still the installed agent
 * answering over TLS, not a knobd --stdio started over SSH for it.  The
 * service command starts nothing: the node fails, the marker stays.  A
 * knobd on the session's PATH (its ~/.bashrc) would answer over SSH:
 * bootstrap refuses --remote-knobd, which named one before. */
START_TEST(bootstrap_via_ssh_confirms_tls)
{
	char *out = NULL, marker[4200];
	int rc;

	ck_assert_int_eq(harness_sh("mkdir -p %s/state-node01 %s/rbin && printf '#!/bin/sh\\nexec "
	    "%s/knobd --state-dir %s/state-node01 \"$@\"\\n' >%s/rbin/knobd && chmod 0755 %s/rbin/knobd "
	    "&& echo 'PATH=%s/rbin:$PATH' >%s/ssh0/.bashrc", h.tmp, h.tmp, h.bin, h.tmp, h.tmp, h.tmp,
	    h.tmp, h.tmp), 0);
	snprintf(marker, sizeof(marker), "%s/root-node01/etc/knob/bootstrap-service-pending", h.tmp);
	rc = boot(&out, "id", "-x node[02-03] --accept-new --service-cmd true --timeout 1 --via ssh");
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node01: failed: installed but the agent does not answer over "
	    "TLS"), "%s", out);
	free(out);
	ck_assert_msg(access(marker, F_OK) == 0, "no marker although no agent answered over TLS");
}
END_TEST

/* An agent that stopped (killed, failed) on a node where no file differs:
 * the re-run's ping fails once, the service command runs once more over
 * SSH, the agent answers again; the other nodes run nothing. */
START_TEST(bootstrap_restarts_stopped_agent)
{
	char *out = NULL, marker[4200];

	snprintf(marker, sizeof(marker), "%s/root-node01/etc/knob/bootstrap-service-pending", h.tmp);
	ck_assert_int_eq(boot(&out, "id", "--accept-new"), 0);
	free(out);
	agent_stop(0);
	ck_assert_int_eq(boot(&out, "id", ""), 0);
	ck_assert_msg(strstr(out, "node01: unchanged; service command run: the agent did not "
	    "answer; agent answers over TLS"), "%s", out);
	ck_assert_msg(strstr(out, "node[02-03] (2): unchanged\n"), "%s", out);
	free(out);
	ck_assert_msg(access(marker, F_OK) < 0, "the marker outlived an answering agent");
	ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "ping -w node01"), 0);
	free(out);
}
END_TEST

/* node01 bootstrapped with the default service command (systemctl ...).
 * There is no systemd here (PID 1 is no init), so a stand-in systemctl
 * under TMP/sysctl-bin, first on the session's PATH (node01's ~/.bashrc),
 * plays the unit: restart runs svc.sh, except while TMP/root-node01/
 * start-limit-hit is there (systemd's StartLimitBurst reached: restart
 * fails at once), which reset-failed removes; each call is logged in
 * TMP/root-node01/systemctl.calls.  The agent stopped and its unit at the
 * start limit: the re-run's service command re-arms the unit and the
 * agent answers again.  Without reset-failed the restart fails (exit 1). */
START_TEST(bootstrap_resets_start_limit)
{
	char *out = NULL, calls[4200], *log = NULL, *reset, *last;
	int rc;

	snprintf(calls, sizeof(calls), "%s/root-node01/systemctl.calls", h.tmp);
	cu_write_at(h.tmp, "sysctl-bin/systemctl", 0755, "#!/bin/sh\nR=%s/root-node01\n"
	    "echo \"$*\" >>\"$R/systemctl.calls\"\ncase \"$1\" in\n"
	    "reset-failed) rm -f \"$R/start-limit-hit\";;\n"
	    "restart) if [ -f \"$R/start-limit-hit\" ]; then echo 'Job for knobd.service failed "
	    "because the service was restarted too quickly (start-limit-hit)' >&2; exit 1; fi\n"
	    "\texec sh %s/svc.sh \"$R\";;\nesac\n", h.tmp, h.tmp);
	cu_write_at(h.tmp, "ssh0/.bashrc", 0644, "PATH=%s/sysctl-bin:$PATH\n", h.tmp);
	rc = harness_knobctl(&h, &out, NULL, "bootstrap -w node01 --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --accept-new --root %s/root-{node} --timeout 20", h.tmp, h.tmp, h.tmp);
	fprintf(stderr, "---- default service command -> %d\n%s", rc, out);
	ck_assert_int_eq(rc, 0);
	free(out);
	agent_stop(0);
	cu_write_at(h.tmp, "root-node01/start-limit-hit", 0644, "%s", "");
	unlink(calls);
	rc = harness_knobctl(&h, &out, NULL, "bootstrap -w node01 --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --root %s/root-{node} --timeout 20", h.tmp, h.tmp, h.tmp);
	fprintf(stderr, "---- unit at its start limit -> %d\n%s", rc, out);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "node01: unchanged; service command run: the agent did not "
	    "answer; agent answers over TLS"), "%s", out);
	free(out);
	ck_assert_int_eq(read_file_bounded(calls, 4096, &log, NULL), 0);
	reset = strstr(log, "reset-failed knobd.service\n");
	last = strstr(log, "restart knobd.service\n");
	ck_assert_msg(reset && last && reset < last, "systemctl calls:\n%s", log);
	free(log);
}
END_TEST

/* A node.key made world-readable and a ca.crt 0666, contents unchanged:
 * the re-run puts the modes bootstrap installs back without restarting
 * the agent (same pid), and says so; then the node is unchanged. */
/* node01 bootstrapped, then spoil run in its etc/knob, then bootstrapped
 * again: exit 0, the line is want, the agent not restarted (same pid). */
static void
boot_repair(const char *spoil, const char *want)
{
	char *out = NULL, *pid1 = NULL, *pid2 = NULL, path[4200];

	ck_assert_int_eq(boot(&out, "id", "-x node[02-03] --accept-new"), 0);
	free(out);
	ck_assert_int_eq(harness_sh("cd %s/root-node01/etc/knob && %s", h.tmp, spoil), 0);
	snprintf(path, sizeof(path), "%s/root-node01/knobd.pid", h.tmp);
	ck_assert_int_eq(read_file_bounded(path, 64, &pid1, NULL), 0);
	ck_assert_int_eq(boot(&out, "id", "-x node[02-03]"), 0);
	ck_assert_msg(strstr(out, want), "want %s: %s", want, out);
	free(out);
	ck_assert_int_eq(read_file_bounded(path, 64, &pid2, NULL), 0);
	ck_assert_str_eq(pid1, pid2);
	free(pid1);
	free(pid2);
}

START_TEST(bootstrap_modes_fixed)
{
	char *out = NULL;

	boot_repair("chmod 0644 node.key && chmod 0666 ca.crt", "node01: mode fixed: ca.crt (was "
	    "0666, now 0644), node.key (was 0644, now 0600); agent answers over TLS\n");
	ck_assert_int_eq(mode_of(0, "etc/knob/node.key"), 0600);
	ck_assert_int_eq(mode_of(0, "etc/knob/ca.crt"), 0644);
	ck_assert_int_eq(boot(&out, "id", "-x node[02-03]"), 0);
	ck_assert_msg(strstr(out, "node01: unchanged\n"), "%s", out);
	free(out);
}
END_TEST

/* Wait (10 s at most) until file path says s. */
static void
wait_file_has(const char *path, const char *s)
{
	uint64_t end = now_mono_ns() + 10000000000ull;
	char *buf = NULL;

	while (read_file_bounded(path, 1 << 20, &buf, NULL) < 0 || strstr(buf, s) == NULL) {
		ck_assert_msg(now_mono_ns() < end, "%s never said %s: %s", path, s, buf ? buf : "");
		free(buf);
		buf = NULL;
		usleep(20000);
	}
	free(buf);
}

/* An agent that refuses to start on a node.key others can read (as a
 * reboot would find it) leaves the node unreachable; bootstrap sets the
 * mode back and runs the service command, and the agent answers: no
 * login on the node needed. */
START_TEST(bootstrap_restarts_refusing_agent)
{
	char *out = NULL, log[4200];

	snprintf(log, sizeof(log), "%s/root-node01/knobd.log", h.tmp);
	ck_assert_int_eq(boot(&out, "id", "-x node[02-03] --accept-new"), 0);
	free(out);
	ck_assert_int_eq(harness_sh("chmod 0644 %s/root-node01/etc/knob/node.key", h.tmp), 0);
	ck_assert_int_eq(harness_node_sh(&h, 0, "sh %s/svc.sh %s/root-node01", h.tmp, h.tmp), 0);
	wait_file_has(log, "node.key: mode 0644: a private key others can read or write: whoever "
	    "reads it can pose as this node: not used; chmod 600 ");
	ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "ping -w node01"), 1);
	ck_assert_msg(strstr(out, "node01: unreachable: connection refused"), "%s", out);
	free(out);
	ck_assert_int_eq(boot(&out, "id", "-x node[02-03]"), 0);
	ck_assert_msg(strstr(out, "node01: mode fixed: node.key (was 0644, now 0600); service command "
	    "run: the agent did not answer; agent answers over TLS\n"), "%s", out);
	free(out);
	ck_assert_int_eq(mode_of(0, "etc/knob/node.key"), 0600);
}
END_TEST

/* node.key is created on the node 0600 from its first byte, whatever the
 * umask: node01's sftp-server runs with umask 000 (-u 000) and logs each
 * open; bootstrap's open of node.key.knob-new asks for mode 0600 (0100600:
 * a regular file), created
 * new (EXCL), not a wider file chmod'ed after it is written. */
START_TEST(bootstrap_key_created_private)
{
	char *out = NULL, wrap[4200], log[4200], want[8400];

	snprintf(wrap, sizeof(wrap), "%s/sftp-umask0", h.tmp);
	snprintf(log, sizeof(log), "%s/sftp-umask0.log", h.tmp);
	cu_write(wrap, 0755, "#!/bin/sh\nexec /usr/lib/openssh/sftp-server -u 000 -e -l INFO "
	    "2>>%s\n", log);
	sshd_stop(0);
	sshd_spawn_sftp(0, wrap, "");
	sshd_wait(0);
	ck_assert_int_eq(boot(&out, "id", "-x node[02-03] --accept-new"), 0);
	free(out);
	snprintf(want, sizeof(want), "open \"%s/root-node01/etc/knob/node.key.knob-new\" flags "
	    "WRITE,CREATE,EXCL mode 0100600", h.tmp);
	wait_file_has(log, want);
	ck_assert_int_eq(mode_of(0, "etc/knob/node.key"), 0600);
}
END_TEST

/* The CA's CRL cannot be read (here a symbolic link loop: ELOOP, which
 * root gets as anyone gets EACCES): bootstrap stops with exit 2 naming the
 * file, and the nodes keep their ca.crl (no CRL would remove it: every
 * revoked certificate accepted again).  knobctl's own trust is the CA
 * certificate under another name (--ca DIR/trust.crt), whose CRL it looks
 * for as DIR/trust.crl: so only bootstrap's own reading of DIR/ca.crl can
 * stop it (with ca.crt, knobctl's TLS set-up fails on the loop as well). */
START_TEST(bootstrap_crl_unreadable)
{
	char *out = NULL, *err = NULL, crl[4200];
	int rc;

	ck_assert_int_eq(harness_sh("%s/knobctl -c %s ca issue %s/ca ctl2 --controller >/dev/null && "
	    "%s/knobctl -c %s ca revoke ctl2 >/dev/null", h.bin, h.cluster, h.tmp, h.bin, h.cluster), 0);
	ck_assert_int_eq(boot(&out, "id", "-x node[02-03] --accept-new"), 0);
	ck_assert_msg(strstr(out, "node01: installed: ") && strstr(out, "ca.crl"), "%s", out);
	free(out);
	snprintf(crl, sizeof(crl), "%s/root-node01/etc/knob/ca.crl", h.tmp);
	ck_assert_int_eq(harness_sh("cmp %s/ca/ca.crl %s && mv %s/ca/ca.crl %s/ca/ca.crl.real && "
	    "ln -s ca.crl %s/ca/ca.crl && cp %s/ca/ca.crt %s/ca/trust.crt", h.tmp, crl, h.tmp, h.tmp,
	    h.tmp, h.tmp, h.tmp), 0);
	rc = harness_knobctl(&h, &out, &err, "bootstrap -w node01 --ca %s/ca/trust.crt --ssh-key %s/id "
	    "--known-hosts %s/known_hosts --root %s/root-{node} --service-cmd 'sh %s/svc.sh {root}' "
	    "--timeout 20", h.tmp, h.tmp, h.tmp, h.tmp, h.tmp);
	fprintf(stderr, "---- CRL a symlink loop -> %d\n%s%s", rc, out, err);
	ck_assert_int_eq(rc, 2);
	ck_assert_msg(strstr(err, "/ca/ca.crl: Too many levels of symbolic links"), "%s", err);
	free(out);
	free(err);
	ck_assert_int_eq(harness_sh("cmp %s/ca/ca.crl.real %s", h.tmp, crl), 0);
}
END_TEST

/* known_hosts holding node i's key from keyfile under "[name]:port",
 * then hashed by OpenSSH (ssh-keygen -H: "|1|salt|hash TYPE KEY"). */
static void
kh_hashed(int i, int port, const char *keyfile)
{
	ck_assert_int_eq(harness_sh("printf '[%%s]:%d %%s\\n' %s \"$(cut -d' ' -f1,2 %s)\" > "
	    "%s/known_hosts && ssh-keygen -q -H -f %s/known_hosts >/dev/null 2>&1 && rm -f "
	    "%s/known_hosts.old && grep -q '^|1|' %s/known_hosts && ! grep -q %s %s/known_hosts",
	    port, h.node[i].name, keyfile, h.tmp, h.tmp, h.tmp, h.tmp, h.node[i].name, h.tmp), 0);
}

/* Hashed known_hosts (ssh-keygen -H) with node01 under "[node01]:2222":
 * its sshd (port 2222) has an ed25519 and an ecdsa host key.  Only the
 * ed25519 key hashed: bootstrap asks for that type (libssh2 alone asks
 * for ecdsa first) and connects; only the ecdsa key: connects too;
 * node02's ed25519 key hashed for node01: a changed key, refused naming
 * the node, even with --accept-new, and known_hosts is left alone. */
START_TEST(hostkey_hashed)
{
	char *out = NULL, want[8192], *fp;

	ck_assert_int_eq(harness_sh("ssh-keygen -q -t ecdsa -N '' -f %s/ssh0/hostkey_ecdsa",
	    h.tmp), 0);
	sshd_stop(0);
	snprintf(want, sizeof(want), "Port 2222\nHostKey %s/ssh0/hostkey_ecdsa\n", h.tmp);
	sshd_start_cfg(0, want);
	snprintf(want, sizeof(want), "%s/ssh0/hostkey.pub", h.tmp);
	kh_hashed(0, 2222, want);
	ck_assert_int_eq(boot(&out, "id", "-x node[02-03] --ssh-port 2222"), 0);
	ck_assert_msg(strstr(out, "node01: installed: "), "%s", out);
	free(out);

	snprintf(want, sizeof(want), "%s/ssh0/hostkey_ecdsa.pub", h.tmp);
	kh_hashed(0, 2222, want);
	ck_assert_int_eq(boot(&out, "id", "-x node[02-03] --ssh-port 2222"), 0);
	ck_assert_msg(strstr(out, "node01: unchanged\n"), "%s", out);
	free(out);

	snprintf(want, sizeof(want), "%s/ssh1/hostkey.pub", h.tmp);
	kh_hashed(0, 2222, want);
	fp = fingerprint(0);
	snprintf(want, sizeof(want), "node01: auth-failed: host key refused: %s does NOT match "
	    "%s/known_hosts (changed host key", fp, h.tmp);
	free(fp);
	boot_refused_kh_kept("-x node[02-03] --ssh-port 2222 --accept-new", want, NULL);
}
END_TEST

/* "UID:GID" of a file under node i's root. */
static void
owner_of(int i, const char *rel, char *buf, size_t len)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/root-%s/%s", h.tmp, h.node[i].name, rel);
	ck_assert_msg(stat(path, &st) == 0, "%s: %s", path, strerror(errno));
	snprintf(buf, len, "%u:%u", (unsigned)st.st_uid, (unsigned)st.st_gid);
}

/* A node.key owned by 65534:65534 (its owner could read the node's
 * private key) and a ca.crt by 1:1, contents and modes unchanged: the
 * re-run chowns them back to 0:0 without restarting the agent (same pid),
 * keeps their modes and says so; then node.key owned by 65534:0 and
 * etc/knob by 65534:65534: --json lists both in "owner_fixed"; then the
 * node is unchanged. */
START_TEST(bootstrap_owner_fixed)
{
	char *out = NULL, own[64];
	json_object *doc;
	int rc;

	boot_repair("chown 65534:65534 node.key && chown 1:1 ca.crt", "node01: owner fixed: ca.crt "
	    "(was 1:1, now 0:0), node.key (was 65534:65534, now 0:0); agent answers over TLS\n");
	owner_of(0, "etc/knob/node.key", own, sizeof(own));
	ck_assert_str_eq(own, "0:0");
	owner_of(0, "etc/knob/ca.crt", own, sizeof(own));
	ck_assert_str_eq(own, "0:0");
	ck_assert_int_eq(mode_of(0, "etc/knob/node.key"), 0600);
	ck_assert_int_eq(mode_of(0, "etc/knob/ca.crt"), 0644);

	/* --json: both in "owner_fixed", none in "mode_fixed" */
	ck_assert_int_eq(harness_sh("chown 65534:0 %s/root-node01/etc/knob/node.key && chown "
	    "65534:65534 %s/root-node01/etc/knob", h.tmp, h.tmp), 0);
	doc = harness_knobctl_json(&h, &rc, "--json bootstrap -w node01 --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --root %s/root-{node} --service-cmd 'sh %s/svc.sh {root}' --timeout 20",
	    h.tmp, h.tmp, h.tmp, h.tmp);
	out = xstrdup(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
	fprintf(stderr, "---- bootstrap --json -> %d\n%s\n", rc, out);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "\"mode_fixed\":[],\"owner_fixed\":[\"node.key\",\"etc/knob\"]"),
	    "%s", out);
	free(out);
	owner_of(0, "etc/knob/node.key", own, sizeof(own));
	ck_assert_str_eq(own, "0:0");
	owner_of(0, "etc/knob", own, sizeof(own));
	ck_assert_str_eq(own, "0:0");

	ck_assert_int_eq(boot(&out, "id", "-x node[02-03]"), 0);
	ck_assert_msg(strstr(out, "node01: unchanged\n"), "%s", out);
	free(out);
}
END_TEST

/* Leftover PATH.knob-new files, as a non-root owner of /etc/knob could
 * plant them: ca.crt.knob-new a symbolic link to a victim file (root
 * would write the CA certificate through it and chmod it 0644),
 * node.key.knob-new a file of 65534's (the key uploaded into it would
 * stay theirs).  The probe removes them as root before any upload, which
 * creates each file anew (EXCL): the victim keeps its contents and mode,
 * the installed node.key is root's, 0600. */
START_TEST(bootstrap_knob_new_not_followed)
{
	char *out = NULL, *vic = NULL, path[4200], own[64];
	struct stat st;

	ck_assert_int_eq(harness_sh("mkdir -p %s/root-node01/etc/knob && printf precious > %s/victim "
	    "&& chmod 0600 %s/victim && ln -s %s/victim %s/root-node01/etc/knob/ca.crt.knob-new && "
	    "printf mine > %s/root-node01/etc/knob/node.key.knob-new && chown 65534:65534 "
	    "%s/root-node01/etc/knob/node.key.knob-new && chmod 0644 "
	    "%s/root-node01/etc/knob/node.key.knob-new", h.tmp, h.tmp, h.tmp, h.tmp, h.tmp, h.tmp,
	    h.tmp, h.tmp), 0);
	ck_assert_int_eq(boot(&out, "id", "-x node[02-03] --accept-new"), 0);
	ck_assert_msg(strstr(out, "node01: installed: "), "%s", out);
	free(out);
	snprintf(path, sizeof(path), "%s/victim", h.tmp);
	ck_assert_int_eq(read_file_bounded(path, 4096, &vic, NULL), 0);
	ck_assert_str_eq(vic, "precious");
	free(vic);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	owner_of(0, "etc/knob/node.key", own, sizeof(own));
	ck_assert_str_eq(own, "0:0");
	ck_assert_int_eq(mode_of(0, "etc/knob/node.key"), 0600);
	owner_of(0, "etc/knob/ca.crt", own, sizeof(own));
	ck_assert_str_eq(own, "0:0");
}
END_TEST

/* Keys OpenSSH would check that libssh2 alone does not see: a pattern line
 * ("node0* KEY", node02's key) in known_hosts, and the global file
 * (/etc/ssh/ssh_known_hosts, here $KNOB_GLOBAL_KNOWN_HOSTS) pinning
 * node02's key for node01.  Either way node01's key is a changed one,
 * refused even with --accept-new, and known_hosts is left alone; a
 * pattern that negates node01 ("!node01,node0*") does not pin it: its
 * key is new, added (the wrong user key then stops at authentication). */
START_TEST(hostkey_pattern_global)
{
	char want[8192], kh[4200], global[4200], *out = NULL, *fp = fingerprint(0);

	snprintf(kh, sizeof(kh), "%s/known_hosts", h.tmp);
	snprintf(global, sizeof(global), "%s/ssh_known_hosts", h.tmp);
	ck_assert_int_eq(harness_sh("printf 'node0* %%s\\n' \"$(cut -d' ' -f1,2 %s/ssh1/hostkey.pub)\" > "
	    "%s", h.tmp, kh), 0);
	snprintf(want, sizeof(want), "node01: auth-failed: host key refused: %s does NOT match %s", fp,
	    kh);
	boot_refused_kh_kept("-x node[02-03] --accept-new", want, NULL);

	ck_assert_int_eq(harness_sh(": > %s && printf 'node01 %%s\\n' \"$(cut -d' ' -f1,2 "
	    "%s/ssh1/hostkey.pub)\" > %s", kh, h.tmp, global), 0);
	setenv("KNOB_GLOBAL_KNOWN_HOSTS", global, 1);
	snprintf(want, sizeof(want), "node01: auth-failed: host key refused: %s does NOT match %s or %s",
	    fp, kh, global);
	boot_refused_kh_kept("-x node[02-03] --accept-new", want, NULL);
	unsetenv("KNOB_GLOBAL_KNOWN_HOSTS");

	ck_assert_int_eq(harness_sh("printf '!node01,node0* %%s\\n' \"$(cut -d' ' -f1,2 "
	    "%s/ssh1/hostkey.pub)\" > %s", h.tmp, kh), 0);
	ck_assert_int_eq(boot(&out, "wrong", "-x node[02-03] --accept-new"), 1);
	ck_assert_msg(strstr(out, "node01: auth-failed: ssh authentication failed"), "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("grep -q '^node01 ssh-ed25519 ' %s", kh), 0);
	free(fp);
}
END_TEST

/* bootstrap --deb decides by dpkg's database (dpkg-query, the one under
 * the node's --root here) whether knob is installed, not by a knobd in
 * usr/sbin.  A knobd no package installed (make install, a copy): without
 * --upgrade the package is neither sent nor installed (no dpkg -i over
 * it), the node says so.  The package installed (a stanza in a fake
 * var/lib/dpkg/status) but its knobd removed by hand: still installed,
 * --upgrade needed (it was taken for a node without knob: the package
 * sent and dpkg -i'ed).  No dpkg-query on the node (PATH without it, set
 * by the session's .bashrc): the node fails, saying so.  The .deb is a
 * stand-in (not a package: an install would run the real dpkg on it,
 * under the node's --root, and fail); its knobd is the build's, which the
 * test's service script starts. */
START_TEST(bootstrap_deb_needs_upgrade)
{
	char *out = NULL, deb[4200], cached[4200], extra[8400], want[8400];

	snprintf(deb, sizeof(deb), "%s/knob-standin.deb", h.tmp);
	cu_write(deb, 0644, "not a package\n");
	ck_assert_int_eq(harness_sh("mkdir -p %s/root-node01/usr/sbin && cp %s/knobd "
	    "%s/root-node01/usr/sbin/knobd", h.tmp, h.bin, h.tmp), 0);
	snprintf(extra, sizeof(extra), "-x node[02-03] --accept-new --deb %s", deb);
	ck_assert_int_eq(boot(&out, "id", extra), 0);
	snprintf(want, sizeof(want), "node01: updated: ca.crt, node.crt, node.key; service command "
	    "run; agent answers over TLS; %s/root-node01/usr/sbin/knobd is there but no package "
	    "installed it (make install?): knob.deb not installed over it (--upgrade installs it)",
	    h.tmp);
	ck_assert_msg(strstr(out, want), "%s", out);
	free(out);
	snprintf(cached, sizeof(cached), "%s/root-node01/var/cache/knob/knob.deb", h.tmp);
	ck_assert_msg(access(cached, F_OK) < 0, "%s was sent", cached);

	cu_write_at(h.tmp, "/root-node01/var/lib/dpkg/status", 0644, "%s", "Package: knob\n"
	    "Status: install ok installed\nVersion: 0.9-1\nArchitecture: amd64\n"
	    "Maintainer: t <t@example.org>\nDescription: stand-in\n");
	ck_assert_int_eq(harness_sh("rm %s/root-node01/usr/sbin/knobd", h.tmp), 0);
	ck_assert_int_eq(boot(&out, "id", extra), 0);
	ck_assert_msg(strstr(out, "node01: unchanged; the package knob 0.9-1 is installed (dpkg), "
	    "not from this controller's knob.deb (--upgrade replaces it)"), "%s", out);
	free(out);
	ck_assert_msg(access(cached, F_OK) < 0, "%s was sent", cached);

	cu_write_at(h.tmp, "/ssh0/.bashrc", 0644, "%s", "PATH=/nonexistent\n");
	ck_assert_int_eq(boot(&out, "id", extra), 1);
	ck_assert_msg(strstr(out, "node01: failed: probe failed (exit 3): no dpkg-query on the "
	    "node: --deb installs the package with dpkg"), "%s", out);
	free(out);
}
END_TEST

/* bootstrap --deb whose dpkg -i failed: the .deb is in var/cache/knob
 * and the service-pending marker stays, so the re-run, with no file to
 * send, runs dpkg -i on that same .deb again before the service command
 * (the first one may have left the package unconfigured or absent), and
 * the agent it installs answers; the marker goes.  A stand-in dpkg, first
 * on the session's PATH (node01's ~/.bashrc), logs each call in
 * dpkg.calls under the node's root and "installs" the build's knobd there,
 * except while the root holds dpkg-fails.  Without the re-install the
 * re-run only runs the service command: no knobd, no agent, exit 1. */
START_TEST(bootstrap_deb_reinstalled_while_pending)
{
	char *out = NULL, deb[4200], marker[4200], calls[4200], extra[4400], want[4300];
	char *log = NULL;

	snprintf(deb, sizeof(deb), "%s/knob-standin.deb", h.tmp);
	cu_write(deb, 0644, "not a package\n");
	snprintf(marker, sizeof(marker), "%s/root-node01/etc/knob/bootstrap-service-pending", h.tmp);
	snprintf(calls, sizeof(calls), "%s/root-node01/dpkg.calls", h.tmp);
	cu_write_at(h.tmp, "dpkg-bin/dpkg", 0755, "#!/bin/sh\n# cwd: the node's root\n"
	    "echo \"$*\" >>dpkg.calls\nif [ -f dpkg-fails ]; then echo 'dpkg: error processing "
	    "archive (stand-in)' >&2; exit 1; fi\nmkdir -p usr/sbin && cp %s/knobd usr/sbin/knobd\n",
	    h.bin);
	cu_write_at(h.tmp, "ssh0/.bashrc", 0644, "PATH=%s/dpkg-bin:$PATH\n", h.tmp);
	cu_write_at(h.tmp, "root-node01/dpkg-fails", 0644, "%s", "");
	snprintf(extra, sizeof(extra), "-x node[02-03] --accept-new --deb %s", deb);
	ck_assert_int_eq(boot(&out, "id", extra), 1);
	ck_assert_msg(strstr(out, "node01: failed: install failed (exit 1): dpkg: error processing "
	    "archive (stand-in)"), "%s", out);
	free(out);
	ck_assert_msg(access(marker, F_OK) == 0, "no marker after a failed dpkg -i");
	ck_assert_int_eq(harness_sh("rm %s/root-node01/dpkg-fails", h.tmp), 0);
	ck_assert_int_eq(boot(&out, "id", extra), 0);
	ck_assert_msg(strstr(out, "node01: unchanged; service command run again (the agent had "
	    "not answered since the last install); agent answers over TLS"), "%s", out);
	free(out);
	ck_assert_msg(access(marker, F_OK) < 0, "the marker outlived an answering agent");
	ck_assert_int_eq(read_file_bounded(calls, 4096, &log, NULL), 0);
	snprintf(want, sizeof(want), "--root=%s/root-node01 -i var/cache/knob/knob.deb\n", h.tmp);
	ck_assert_msg(strncmp(log, want, strlen(want)) == 0 && strcmp(log + strlen(want), want) == 0,
	    "dpkg calls (want two, each %s):\n%s", want, log);
	free(log);
}
END_TEST

/* No --ssh-key and no ssh-agent: the default key files are tried in turn,
 * as OpenSSH tries them, not only the first readable one.  HOME's
 * id_ed25519 is not authorised, its id_rsa is: node01 is installed.
 * (libssh2 1.10 signs with ssh-rsa, SHA-1, which OpenSSH 8.8 and later
 * refuse unless allowed: node01's sshd allows it.) */
START_TEST(bootstrap_default_keys_in_turn)
{
	char *out = NULL, *err = NULL, home[4200];
	int rc;

	snprintf(home, sizeof(home), "%s/home", h.tmp);
	ck_assert_int_eq(harness_sh("mkdir -p %s/.ssh && cp %s/wrong %s/.ssh/id_ed25519 && "
	    "ssh-keygen -q -t rsa -b 2048 -N '' -f %s/.ssh/id_rsa && cat %s/.ssh/id_rsa.pub >> "
	    "%s/authorized_keys", home, h.tmp, home, home, home, h.tmp), 0);
	sshd_stop(0);
	sshd_start_cfg(0, "PubkeyAcceptedAlgorithms +ssh-rsa\n");
	setenv("HOME", home, 1);
	unsetenv("SSH_AUTH_SOCK");
	rc = harness_knobctl(&h, &out, &err, "bootstrap -w node01 --known-hosts %s/known_hosts "
	    "--accept-new --root %s/root-{node} --service-cmd 'sh %s/svc.sh {root}' --timeout 20",
	    h.tmp, h.tmp, h.tmp);
	fprintf(stderr, "---- default keys in turn -> %d\n%s%s", rc, out, err);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "node01: installed: "), "%s", out);
	free(out);
	free(err);
	/* neither authorised: the failure names each key refused */
	ck_assert_int_eq(harness_sh("cp %s/id.pub %s/authorized_keys", h.tmp, h.tmp), 0);
	rc = harness_knobctl(&h, &out, NULL, "bootstrap -w node01 --known-hosts %s/known_hosts "
	    "--root %s/root-{node} --service-cmd 'sh %s/svc.sh {root}' --timeout 20", h.tmp, h.tmp,
	    h.tmp);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node01: auth-failed: ssh authentication failed for root: key ") &&
	    strstr(out, "/.ssh/id_ed25519 refused") && strstr(out, "; key ") &&
	    strstr(out, "/.ssh/id_rsa refused"), "%s", out);
	free(out);
}
END_TEST

/* The controller's own certificate: ca revoke refuses it without --force
 * (exit 2, naming it and its role); revoked with --force, bootstrap
 * refuses to push the CRL that would lock it out of every agent (exit 2)
 * before any node is touched (no root made, no host key looked at). */
START_TEST(bootstrap_refuses_own_revoked)
{
	char *out = NULL, *err = NULL, path[4200];
	int rc;

	rc = cu_sh_out(&out, "%s/knobctl -c %s ca revoke controller", h.bin, h.cluster);
	ck_assert_msg(rc == 2 && strstr(out, "ca revoke: controller: not revoked: the controller "
	    "certificate ") && strstr(out, "/ca/controller.crt (serial ") && strstr(out, "has role "
	    "'controller'"), "exit %d: %s", rc, out);
	free(out);
	ck_assert_int_eq(harness_sh("%s/knobctl -c %s ca revoke --force controller >/dev/null", h.bin,
	    h.cluster), 0);
	rc = harness_knobctl(&h, &out, &err, "bootstrap -a --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --accept-new --root %s/root-{node} --service-cmd 'sh %s/svc.sh {root}' "
	    "--timeout 20", h.tmp, h.tmp, h.tmp, h.tmp);
	fprintf(stderr, "---- own certificate revoked -> %d\n%s%s", rc, out, err);
	ck_assert_int_eq(rc, 2);
	ck_assert_msg(strstr(err, "/ca/ca.crl revokes this controller's own certificate ") &&
	    strstr(err, "no node touched"), "%s", err);
	free(out);
	free(err);
	snprintf(path, sizeof(path), "%s/root-node01", h.tmp);
	ck_assert_msg(access(path, F_OK) < 0, "%s was made", path);
	snprintf(path, sizeof(path), "%s/known_hosts", h.tmp);
	ck_assert_msg(access(path, F_OK) < 0, "%s was written", path);
}
END_TEST

/* Bad values refused before anything runs (exit 2): an --ssh-port that is
 * not all digits or out of range; --deb with --knobd or --unit (the
 * package brings its own: they would be ignored). */
START_TEST(bootstrap_cli_refusals)
{
	static const struct {
		const char *args, *msg;
	} bad[] = {
		{ "--ssh-port 2222x", "bad --ssh-port '2222x'" },
		{ "--ssh-port ' 22'", "bad --ssh-port ' 22'" },
		{ "--ssh-port 65536", "bad --ssh-port '65536'" },
		{ "--ssh-port 0", "bad --ssh-port '0'" },
		{ "--deb /dev/null --knobd /bin/true", "--deb installs the package's knobd and unit: "
		    "not with --knobd" },
		{ "--unit /dev/null --deb /dev/null", "--deb installs the package's knobd and unit: "
		    "not with --unit" },
	};
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	char *out = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = cu_sh_out(&out, "env -u KNOB_CLUSTER %s/knobctl bootstrap -w n1 %s", bin,
		    bad[i].args);

		ck_assert_msg(rc == 2 && strstr(out, bad[i].msg), "%s: exit %d: %s", bad[i].args, rc,
		    out);
		free(out);
	}
}
END_TEST

/* --push-agent reads this controller's knobd once per run, for every
 * node: it read the whole binary for each node as it dialled, and held
 * each copy until the node ended (200 nodes refused at once: 415 MB of
 * peak RSS plain, 13 MB now).  100 nodes whose SSH port refuses (a port
 * on 127.0.200.x where nothing listens): the peak RSS stays within 32
 * copies of knobd above one run's base (plain: 2 MB a copy; ASan: 5.5). */
START_TEST(push_binary_read_once)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	char dir[PATH_MAX], inv[PATH_MAX + 8], path[PATH_MAX + 16], *out = NULL;
	struct stat st;
	long kb = 0;
	FILE *f;
	int rc;

	cu_subdir(dir, sizeof(dir), "push1");	/* under cu_base: removed even on failure */
	snprintf(inv, sizeof(inv), "%s/c.xml", dir);
	ck_assert_ptr_nonnull(f = fopen(inv, "w"));
	fprintf(f, "<cluster><results db=\"%s/r.db\"/>\n", dir);
	for (int i = 1; i <= 100; i++)
		fprintf(f, "<node name=\"n%03d\" addr=\"127.0.200.%d\"/>\n", i, i);
	fprintf(f, "</cluster>\n");
	fclose(f);
	snprintf(path, sizeof(path), "%s/knobd", bin);
	ck_assert_int_eq(stat(path, &st), 0);
	rc = cu_sh_out(&out, "/usr/bin/time -f 'maxrss %%M' %s/knobctl -c %s --via ssh "
	    "--push-agent --ssh-port 1 --connect-timeout 1 ping -w 'n[001-100]' 2>&1 | tail -3",
	    bin, inv);
	ck_assert_msg(strstr(out, "100 unreachable") != NULL, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "maxrss ") != NULL && sscanf(strstr(out, "maxrss "),
	    "maxrss %ld", &kb) == 1, "%s", out);
	ck_assert_msg(kb * 1024 < 64 * 1024 * 1024 + 32 * st.st_size, "peak RSS %ld KB for 100 "
	    "nodes (knobd is %lld KB): the binary is held once per node", kb,
	    (long long)st.st_size / 1024);
	free(out);
}
END_TEST

/* Names that resolve slowly do not hold the healthy nodes over SSH either:
 * bootstrap and --via ssh look every name up before any deadline starts,
 * together bounded by --connect-timeout (they looked each up in the event
 * loop, one after another: 15 s, and the good nodes' connect deadlines
 * ran out meanwhile). */
START_TEST(ssh_slow_names_do_not_hold_others)
{
	char *out = NULL, args[8192];
	double took;
	int rc;

	snprintf(args, sizeof(args), "bootstrap -w node[01-03],zz[1-5] --ssh-key %s/id "
	    "--known-hosts %s/known_hosts --accept-new --root %s/root-{node} --service-cmd "
	    "\"sh %s/svc.sh {root}\" --timeout 20", h.tmp, h.tmp, h.tmp, h.tmp);
	rc = harness_knobctl_slow_dns(&h, &out, &took, "%s", args);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "zz[1-5] (5): unreachable: cannot resolve: no answer within 1.0s")
	    && strstr(out, "node[01-03] (3): installed: ") && strstr(out, "3 changed"), "%s", out);
	/* serial lookups took 15 s; bootstrap itself 1-3 s here, 5.2 s seen beside
	 * sanitizer programs on two loaded cores: the bound leaves that room */
	ck_assert_msg(took < 9, "bootstrap took %.1fs (lookups of 3 s, --connect-timeout 1)", took);
	free(out);

	for (int i = 0; i < NNODES; i++)
		ck_assert_int_eq(harness_sh("mkdir -p %s/state-%s", h.tmp, h.node[i].name), 0);
	snprintf(args, sizeof(args), "--via ssh --ssh-key %s/id --known-hosts %s/known_hosts "
	    "--remote-knobd \"%s/knobd --state-dir %s/state-{node}\" ping -w node[01-03],zz[1-5]",
	    h.tmp, h.tmp, h.bin, h.tmp);
	rc = harness_knobctl_slow_dns(&h, &out, &took, "%s", args);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "zz[1-5] (5): unreachable: cannot resolve: no answer within 1.0s")
	    && strstr(out, "3 ok, 5 unreachable (zz[1-5])"), "%s", out);
	ck_assert_msg(took < 9, "--via ssh ping took %.1fs (lookups of 3 s, --connect-timeout 1)",
	    took);
	free(out);
}
END_TEST

/* A CA in its last 10 days (KNOB_TEST_CA_DAYS, test-only): the nodes'
 * certificates expire with it, so a re-run keeps them ("unchanged": it
 * issued a new key for every node and restarted every agent on every run)
 * and says, once, that the CA itself expires. */
START_TEST(bootstrap_ca_near_expiry_keeps_keys)
{
	char *out = NULL, want[8192], ca[4200];
	int rc;

	snprintf(ca, sizeof(ca), "%s/shortca", h.tmp);
	ck_assert_int_eq(harness_sh("KNOB_TEST_CA_DAYS=10 %s/knobctl ca init %s >/dev/null && "
	    "%s/knobctl ca issue %s --controller head >/dev/null", h.bin, ca, h.bin, ca), 0);
	snprintf(want, sizeof(want), "--ca %s/ca.crt --cert %s/head.crt --key %s/head.key "
	    "bootstrap", ca, ca, ca);
	for (int run = 0; run < 2; run++) {
		char *err = NULL;

		rc = harness_knobctl(&h, &out, &err, "%s -a --ssh-key %s/id --known-hosts "
		    "%s/known_hosts --accept-new --root %s/root-{node} --service-cmd 'sh %s/svc.sh "
		    "{root}' --timeout 20", want, h.tmp, h.tmp, h.tmp, h.tmp);
		fprintf(stderr, "---- bootstrap, CA near its end, run %d -> %d\n%s%s", run, rc, out,
		    err);
		ck_assert_msg(rc == 0, "%s%s", out, err);
		ck_assert_msg(strstr(out, run ? "node[01-03] (3): unchanged\n" :
		    "node[01-03] (3): installed: "), "%s", out);
		ck_assert_msg(strstr(err, "knobctl bootstrap: warning: the CA ") &&
		    strstr(err, "/shortca/ca.crt expires in ") && strstr(err, "certificates cannot "
		    "outlive it; a new CA is needed") && strstr(strstr(err, "warning") + 1,
		    "warning") == NULL, "%s", err);
		free(out);
		free(err);
	}
}
END_TEST

/* A node whose disk is full (node02's /usr/sbin: a 1 MiB tmpfs in its
 * sshd's mount namespace; knobd does not fit): node02 fails saying what
 * failed and how much room there is, the others are installed, and no
 * part of knobd is left on node02 to keep its disk full.  Once there is
 * room, the next run installs node02.  Before, knobd.knob-new stayed
 * (the file system at 100 %) until a later bootstrap's probe, and the
 * line said only "sftp write ...: FXP write failed". */
START_TEST(bootstrap_node_disk_full)
{
	char *out = NULL, sbin[4200], want[4400];
	int pid = (int)sshd_pid[1];

	snprintf(sbin, sizeof(sbin), "%s/root-node02/usr/sbin", h.tmp);
	ck_assert_int_eq(harness_sh("mkdir -p %s && nsenter -t %d -m mount -t tmpfs -o size=1m "
	    "knob-test %s", sbin, pid, sbin), 0);
	ck_assert_int_eq(boot(&out, "id", "--accept-new"), 1);
	ck_assert_msg(strstr(out, "node[01,03] (2): installed: "), "%s", out);
	snprintf(want, sizeof(want), "node02: failed: sftp write %s/knobd.knob-new: ", sbin);
	ck_assert_msg(strstr(out, want), "want %s: %s", want, out);
	ck_assert_msg(strstr(out, "; partial upload removed; usr/sbin on the node has 1024 KiB "
	    "free, knobd needs ") && strstr(out, " KiB (disk full)\n"), "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("nsenter -t %d -m sh -c '[ -z \"$(ls -A %s)\" ] && "
	    "df -Pk %s | grep -q \" 0 *1024 \"'", pid, sbin, sbin), 0);
	ck_assert_int_eq(harness_sh("nsenter -t %d -m umount %s", pid, sbin), 0);
	ck_assert_int_eq(boot(&out, "id", ""), 0);
	ck_assert_msg(strstr(out, "node02: installed: knobd, "), "%s", out);
	free(out);
}
END_TEST

/* A bootstrap of node alone (--accept-new) with --timeout secs; its
 * output into *out.  Its stderr shows no leak report (a build-san
 * knobctl with detect_leaks=1: sessions cut mid-upload left libssh2's
 * SFTP handle, ~60 KB).  The exit status. */
static int
boot_one(char **out, const char *node, int secs, const char *what)
{
	char *err = NULL;
	int rc = harness_knobctl(&h, out, &err, "bootstrap -w %s --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --accept-new --root %s/root-{node} --service-cmd 'sh %s/svc.sh {root}' "
	    "--timeout %d", node, h.tmp, h.tmp, h.tmp, h.tmp, secs);

	fprintf(stderr, "---- bootstrap %s, %s -> %d\n%s%s", node, what, rc, *out, err);
	ck_assert_msg(strstr(err, "LeakSanitizer") == NULL, "%s", err);
	free(err);
	return rc;
}

/* Restart node i's sshd with an sftp-server that gets each session's first
 * 64 KiB, then nothing (an upload stalls); with the script's .dead file
 * present the session's sshd stops too, its pid in that file (its path
 * into dead). */
static void
sshd_stall(int i, char *dead, size_t len)
{
	char sftp[4200];

	snprintf(sftp, sizeof(sftp), "%s/stall-sftp%d.sh", h.tmp, i);
	snprintf(dead, len, "%s.dead", sftp);
	cu_write(sftp, 0755, "#!/bin/sh\n# the first 64 KiB reach sftp-server, the rest is "
	    "swallowed; with $0.dead the session's sshd stops too (its pid in that file)\n"
	    "{ dd bs=4096 count=65536 iflag=count_bytes status=none; if [ -e \"$0.dead\" ]; then "
	    "echo $PPID > \"$0.dead\"; kill -STOP $PPID; fi; cksum > \"$0.sink\"; } | "
	    "/usr/lib/openssh/sftp-server\n");
	sshd_stop(i);
	sshd_spawn_sftp(i, sftp, "");
	sshd_wait(i);
}

/* Kill the stopped session sshd whose pid the stall script wrote to dead. */
static void
stall_kill(const char *dead)
{
	char *pid = cu_slurp(dead);

	ck_assert_ptr_nonnull(pid);
	ck_assert_int_gt(atoi(pid), 1);
	kill(atoi(pid), SIGKILL);
	free(pid);
}

/* An upload that stalls (node02's sftp-server gets the session's first
 * 64 KiB, then nothing: knobd.knob-new is created and part written, no
 * write is ever answered): after --timeout node02 is a timeout whose
 * partial upload is removed by an exec on the same session.  When the
 * session is dead too (node02's sshd for it stopped), that cannot be: the
 * line says so, and the next run's probe removes it.  Before, the session
 * was closed at once and knobd.knob-new stayed (30000 bytes) until a
 * later bootstrap, which nothing said.  --timeout 1 there: each stall
 * waits it out (the second twice: the upload, then the removal). */
START_TEST(bootstrap_upload_stall_removed)
{
	char *out = NULL, dead[4300];

	sshd_stall(1, dead, sizeof(dead));
	ck_assert_int_eq(boot_one(&out, "node02", 1, "upload stalled"), 1);
	ck_assert_msg(strstr(out, "node02: timeout: ssh: no progress within 1s; partial upload "
	    "removed\n"), "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("! find %s/root-node02 -name '*.knob-new' | grep -q .", h.tmp),
	    0);

	cu_write(dead, 0644, "%s", "");
	ck_assert_int_eq(boot_one(&out, "node02", 1, "session dead"), 1);
	ck_assert_msg(strstr(out, "node02: timeout: ssh: no progress within 1s; "
	    "usr/sbin/knobd.knob-new not removed (ssh: no progress within 1s): the next run "
	    "removes it\n"), "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("find %s/root-node02 -name '*.knob-new' | grep -q .", h.tmp), 0);
	stall_kill(dead);
	sshd_stop(1);
	sshd_start(1);
	ck_assert_int_eq(boot_one(&out, "node02", 2, "sshd as it was"), 0);
	ck_assert_msg(strstr(out, "node02: installed: knobd, "), "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("! find %s/root-node02 -name '*.knob-new' | grep -q .", h.tmp),
	    0);
}
END_TEST

/* The line of out (with its newline) that begins "NODE: ", or NULL;
 * malloc'd. */
static char *
line_of(const char *out, const char *node)
{
	char *start = xasprintf("%s: ", node), *line = NULL;
	const char *p = out, *end;

	for (; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, start, strlen(start)) == 0) {
			end = strchr(p, '\n');
			line = xasprintf("%.*s", end ? (int)(end - p + 1) : (int)strlen(p), p);
			break;
		}
	free(start);
	return line;
}

/* node01's sshd logged a session's "knobctl done" disconnect (a cu_wait
 * condition). */
static int
node01_disconnected(void *arg)
{
	(void)arg;
	return harness_sh("grep -q 'Received disconnect from .*:11: knobctl done' %s/ssh0/sshd.log",
	    h.tmp) == 0;
}

/* Sessions that die mid-upload (node02's and node03's sshd stop after
 * 64 KiB of it) are dropped together, each without waiting on its peer:
 * bootstrap and --push-agent each take about one --timeout for the dead
 * nodes, not one per node, and node01 beside them is done on its own
 * time: with --push-agent its session has ended (its sshd logged the
 * disconnect) before the dead nodes' deadline.  The dead nodes' lines say
 * their pushed part was not removed (and it is still there); a push that
 * stalls on a live session is removed, and its line says so.  Before, each
 * close waited 2 s for the dead peer to take a disconnect (the push's
 * removal more: 2 s per step), one node after another, the loop stopped;
 * the total bound alone passed a node01 held until the dead nodes' end;
 * and the agentless lines said nothing of the part left in /tmp. */
START_TEST(ssh_dead_sessions_closed_together)
{
	char *out = NULL, *line, dead[2][4300], outf[4200];
	uint64_t t0;
	double took, node01_at;
	pid_t pid;
	int rc;

	for (int i = 1; i < NNODES; i++) {
		sshd_stall(i, dead[i - 1], sizeof(dead[i - 1]));
		cu_write(dead[i - 1], 0644, "%s", "");
		/* the pushed copy goes to a /tmp of the node's own (a tmpfs gone
		 * with its sshd), not the machine's */
		ck_assert_int_eq(harness_sh("nsenter -t %d -m sh -c 'exec 3<%s && mount -t tmpfs "
		    "-o size=64m knob-test /tmp && mkdir -p %s && mount --no-canonicalize --bind "
		    "/proc/self/fd/3 %s'", (int)sshd_pid[i], h.tmp, h.tmp, h.tmp), 0);
		ck_assert_int_eq(harness_sh("mkdir -p %s/state-%s", h.tmp, h.node[i].name), 0);
	}
	ck_assert_int_eq(harness_sh("mkdir -p %s/state-node01", h.tmp), 0);
	t0 = now_mono_ns();
	rc = boot_one(&out, "node[01-03]", 1, "two sessions dead");
	took = (double)(now_mono_ns() - t0) / 1e9;
	fprintf(stderr, "---- took %.2fs\n", took);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node01: installed: ") && strstr(out, "node[02-03] (2): timeout: "
	    "ssh: no progress within 1s; "), "%s", out);
	free(out);
	stall_kill(dead[0]);
	stall_kill(dead[1]);
	ck_assert_msg(took < 5.5, "bootstrap took %.1fs", took);

	/* node01's healthy session ends with a disconnect, before the dead
	 * nodes' deadline (--connect-timeout 1 plus --timeout 2: node01 takes
	 * over 1 s on this machine when loaded) */
	ck_assert_int_eq(harness_sh(": > %s/ssh0/sshd.log", h.tmp), 0);
	snprintf(outf, sizeof(outf), "%s/via-dead.out", h.tmp);
	setenv("KNOB_TEST_UNDO_MS", "500", 1);	/* the dead nodes' removals: 0.5 s, not 2 */
	t0 = now_mono_ns();
	pid = harness_knobctl_bg(&h, outf, "&2", "--via ssh --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --push-agent --remote-knobd 'knobd --state-dir %s/state-{node}' "
	    "--connect-timeout 1 --timeout 2 ping -a", h.tmp, h.tmp, h.tmp);
	ck_assert_int_gt(pid, 0);
	node01_at = cu_wait(node01_disconnected, NULL, 10);
	node01_at = node01_at < 0 ? -1 : (double)(now_mono_ns() - t0) / 1e9;
	rc = cu_reap(pid);
	took = (double)(now_mono_ns() - t0) / 1e9;
	unsetenv("KNOB_TEST_UNDO_MS");
	stall_kill(dead[0]);
	stall_kill(dead[1]);
	out = cu_slurp(outf);
	fprintf(stderr, "---- --via ssh --push-agent, two sessions dead -> %d in %.2fs (node01 "
	    "disconnected at %.2fs)\n%s", rc, took, node01_at, out);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "1 ok, 2 timeout"), "%s", out);
	for (int i = 1; i < NNODES; i++) {
		char want[200];

		line = line_of(out, h.node[i].name);
		snprintf(want, sizeof(want), "; /tmp/knobd-push.%s.", h.node[i].name);
		ck_assert_msg(line && strstr(line, ": timeout: the upload of knobd stalled (") &&
		    strstr(line, " KiB sent, not done within 3.0s)") &&
		    strstr(line, want) && strstr(line, ".knob-new not removed (no answer within 0.5s): "
		    "remove it by hand\n"), "%s", out);
		free(line);
	}
	free(out);
	ck_assert_msg(took < 6.5, "--via ssh --push-agent took %.1fs", took);
	ck_assert_msg(node01_at >= 0 && node01_at < 3, "node01 disconnected at %.2fs, not before "
	    "the dead nodes' deadline (3 s)", node01_at);
	for (int i = 1; i < NNODES; i++)	/* the line told the truth: the part is there */
		ck_assert_int_eq(harness_sh("nsenter -t %d -m sh -c 'ls /tmp | grep -q "
		    "\"^knobd-push\\.%s\\..*\\.knob-new$\"'", (int)sshd_pid[i], h.node[i].name), 0);

	/* a push that stalls on a live session: its part is still removed */
	unlink(dead[0]);
	ck_assert_int_eq(harness_sh("nsenter -t %d -m sh -c 'rm -f /tmp/knobd-push.*'",
	    (int)sshd_pid[1]), 0);
	rc = harness_knobctl(&h, &out, NULL, "--via ssh --ssh-key %s/id --known-hosts %s/known_hosts "
	    "--push-agent --connect-timeout 1 --timeout 1 ping -w node02", h.tmp, h.tmp);
	fprintf(stderr, "---- --via ssh --push-agent, upload stalled -> %d\n%s", rc, out);
	line = line_of(out, "node02");
	ck_assert_msg(rc == 1 && line && strstr(line, ": timeout: the upload of knobd stalled (") &&
	    strstr(line, " KiB sent, not done within 2.0s); partial upload removed\n"), "%s", out);
	free(line);
	free(out);
	ck_assert_int_eq(harness_sh("nsenter -t %d -m sh -c '! ls -A /tmp | grep -q knobd-push'",
	    (int)sshd_pid[1]), 0);
}
END_TEST

/* The state a ca renew killed between its two renames leaves of this
 * controller's own pair (check_ca test_renew_crash_safe kills it there):
 * controller.key the new key, controller.crt still the old certificate,
 * the new one as controller.crt.new.  bootstrap finishes the renew before
 * it loads the pair, and installs over TLS.  Before, bootstrap (and every
 * command) failed: the controller's key did not match its certificate. */
START_TEST(bootstrap_finishes_half_renew)
{
	char *out = NULL;

	ck_assert_int_eq(harness_sh("cd %s && %s/knobctl ca issue . renewed --controller "
	    ">%s/issue.out && mv renewed.key controller.key && mv renewed.crt controller.crt.new",
	    h.ca_dir, h.bin, h.tmp), 0);
	ck_assert_int_eq(boot_one(&out, "node01", 20, "half-renewed controller pair"), 0);
	ck_assert_msg(strstr(out, "node01: installed: ") && strstr(out, "agent answers over TLS"),
	    "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("cd %s && [ ! -e controller.crt.new ] && openssl x509 -in "
	    "controller.crt -noout -subject | grep -q 'CN *= *renewed'", h.ca_dir), 0);
}
END_TEST

/* --push-agent to a node whose /tmp is full (node02's sshd sees a 1 MiB
 * tmpfs on /tmp, the test's directory bound back into it): node02 fails
 * naming the upload, and its partial copy is removed.  Before, the part of
 * knobd written stayed in /tmp under its random name, which nothing ever
 * removes, and kept /tmp full. */
START_TEST(agentless_push_tmp_full)
{
	char *out = NULL;
	int pid = (int)sshd_pid[1], rc;

	ck_assert_int_eq(harness_sh("nsenter -t %d -m sh -c 'exec 3<%s && mount -t tmpfs -o "
	    "size=1m knob-test /tmp && mkdir -p %s && mount --no-canonicalize --bind "
	    "/proc/self/fd/3 %s'", pid, h.tmp, h.tmp, h.tmp), 0);
	rc = harness_knobctl(&h, &out, NULL, "--via ssh --ssh-key %s/id --known-hosts "
	    "%s/known_hosts --accept-new --push-agent facts -w node02", h.tmp, h.tmp);
	fprintf(stderr, "---- push to a full /tmp -> %d\n%s", rc, out);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node02: failed: sftp write /tmp/knobd-push.node02."), "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("nsenter -t %d -m sh -c '! ls -A /tmp | grep -q knobd-push && "
	    "df -Pk /tmp | grep -q \" 0 *1024 \"'", pid), 0);
}
END_TEST

/* --push-agent whose upload is done but whose agent's channel the node
 * refuses ($KNOB_TEST_SSH_REFUSE_CHANNEL: the session still works): the
 * whole pushed copy is removed, and the line and --json's detail say so.
 * Before, only a failure during the upload removed its part: this one
 * left /tmp/knobd-push.node02.*.knob-new (the whole knobd) and said
 * nothing of it. */
#define PUSH_REFUSED "--via ssh --ssh-key %s/id --known-hosts %s/known_hosts --accept-new " \
	"--push-agent %sping -w node02"
START_TEST(agentless_push_channel_refused)
{
	char *out = NULL;
	int rc;

	setenv("KNOB_TEST_SSH_REFUSE_CHANNEL", "1", 1);
	rc = harness_knobctl(&h, &out, NULL, PUSH_REFUSED, h.tmp, h.tmp, "");
	fprintf(stderr, "---- push done, channel refused -> %d\n%s", rc, out);
	ck_assert_msg(rc == 1 && strstr(out, "node02: failed: ssh channel refused (test hook); "
	    "pushed copy removed\n"), "%s", out);
	free(out);
	ck_assert(no_pushed_copy(NULL));
	rc = harness_knobctl(&h, &out, NULL, PUSH_REFUSED, h.tmp, h.tmp, "--json ");
	unsetenv("KNOB_TEST_SSH_REFUSE_CHANNEL");
	fprintf(stderr, "---- --json, channel refused -> %d\n%s", rc, out);
	ck_assert_msg(rc == 1 && strstr(out, "ssh channel refused (test hook); pushed copy "
	    "removed\""), "%s", out);
	free(out);
	ck_assert(no_pushed_copy(NULL));
}
END_TEST

/* A node that takes passwords only (node02's sshd: no publickey): its
 * line says so, and what to change, instead of each key "refused", which
 * sent the admin looking for a missing authorized_keys line; the nodes
 * that take keys are installed. */
START_TEST(bootstrap_password_only_host)
{
	char *out = NULL;

	sshd_stop(1);
	sshd_start_cfg(1, "Match all\n\tPubkeyAuthentication no\n\tPasswordAuthentication yes\n");
	ck_assert_int_eq(boot(&out, "id", "--accept-new"), 1);
	ck_assert_msg(strstr(out, "node[01,03] (2): installed: "), "%s", out);
	ck_assert_msg(strstr(out, "node02: auth-failed: ssh: node02 accepts no key for root, only "
	    "password: knob logs in with a key (--ssh-key, ssh-agent, ~/.ssh/id_*): enable "
	    "PubkeyAuthentication on the node and put the public key in root's authorized_keys\n"),
	    "%s", out);
	free(out);
}
END_TEST

/* A harness_child: an ssh-agent at TMP/agent.sock that takes each
 * connection and never answers (a stopped agent, or one waiting on a
 * prompt); the connections it took. */
static int
hung_agent(int ready, int stop)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), conns = 0;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/agent.sock", h.tmp);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 16) < 0 ||
	    write(ready, "", 1) != 1)
		_exit(1);
	for (;;) {
		struct pollfd pf[2] = { { .fd = lfd, .events = POLLIN }, { .fd = stop, .events = POLLIN } };

		if (poll(pf, 2, -1) < 0 || pf[1].revents)
			return conns;
		if (accept(lfd, NULL, NULL) >= 0)	/* kept open, never answered */
			conns++;
	}
}

/* Has the process *arg ended (a cu_wait condition)? */
static int
pid_ended(void *arg)
{
	return cu_pid_gone(*(pid_t *)arg);
}

/* A hung ssh-agent (SSH_AUTH_SOCK takes the connection, never answers)
 * is skipped as a key source: with no --ssh-key, knobctl --via ssh goes on
 * to ~/.ssh/id_ed25519 and the nodes answer, within the deadline.  Before,
 * libssh2's agent calls blocked the event loop for good: knobctl
 * --timeout 1 was still running 15 s later, no deadline fired. */
START_TEST(ssh_agent_hung_skipped)
{
	struct harness_child agent;
	char sock[4200], home[4200], outf[4200], *out;
	pid_t pid;
	double t;
	int rc;

	snprintf(sock, sizeof(sock), "%s/agent.sock", h.tmp);
	snprintf(home, sizeof(home), "%s/home", h.tmp);
	snprintf(outf, sizeof(outf), "%s/agent-hung.out", h.tmp);
	ck_assert_int_eq(harness_sh("mkdir -p %s/.ssh %s/state-node01 %s/state-node02 && cp %s/id "
	    "%s/.ssh/id_ed25519", home, h.tmp, h.tmp, h.tmp, home), 0);
	harness_child_start(&agent, h.ctl_ns, hung_agent);
	setenv("SSH_AUTH_SOCK", sock, 1);
	setenv("HOME", home, 1);
	pid = harness_knobctl_bg(&h, outf, "&2", "--via ssh --known-hosts %s/known_hosts "
	    "--accept-new --remote-knobd '%s/knobd --state-dir %s/state-{node}' --connect-timeout 1 "
	    "--timeout 1 ping -w node[01-02]", h.tmp, h.bin, h.tmp);
	ck_assert_int_gt(pid, 0);
	t = cu_wait(pid_ended, &pid, 10);
	if (t < 0)
		kill(pid, SIGKILL);
	rc = cu_reap(pid);
	fprintf(stderr, "---- hung ssh-agent: the agent took %d connection(s)\n",
	    harness_child_end(&agent));
	out = cu_slurp(outf);
	fprintf(stderr, "---- --via ssh, ssh-agent hung -> %d in %.2fs\n%s", rc, t, out ? out : "");
	ck_assert_msg(t >= 0, "knobctl --timeout 1 still running after 10 s: blocked on the agent");
	ck_assert_msg(rc == 0 && out && strstr(out, "2 ok"), "exit %d: %s", rc, out ? out : "");
	free(out);
}
END_TEST

static Suite *
ssh_suite(void)
{
	Suite *s = suite_create("ssh");
	TCase *tc = cu_tcase("bootstrap", setup, teardown, 120);

	tcase_add_unchecked_fixture(tc, case_setup, case_teardown);
	tcase_add_test(tc, bootstrap_fleet);
	tcase_add_test(tc, upgrade_keeps_journal);
	tcase_add_test(tc, known_hosts_bad_line_revoked);
	tcase_add_test(tc, bootstrap_service_retried);
	tcase_add_test(tc, bootstrap_agent_died_retried);
	tcase_add_test(tc, bootstrap_second_ssh_fails);
	tcase_add_test(tc, bootstrap_key_repaired);
	tcase_add_test(tc, revoked_controller_refused);
	tcase_add_test(tc, revoked_node_bootstrapped);
	tcase_add_test(tc, stale_crl_removed);
	tcase_add_test(tc, agentless_via_ssh);
	tcase_add_test(tc, agentless_net_glob_protected);
	tcase_add_test(tc, agentless_verify_rollback_bench_sweep);
	tcase_add_test(tc, hostkey_two_types);
	tcase_add_test(tc, bootstrap_via_ssh_confirms_tls);
	tcase_add_test(tc, bootstrap_restarts_stopped_agent);
	tcase_add_test(tc, bootstrap_resets_start_limit);
	tcase_add_test(tc, bootstrap_modes_fixed);
	tcase_add_test(tc, bootstrap_crl_unreadable);
	tcase_add_test(tc, hostkey_hashed);
	tcase_add_test(tc, bootstrap_owner_fixed);
	tcase_add_test(tc, bootstrap_knob_new_not_followed);
	tcase_add_test(tc, hostkey_pattern_global);
	tcase_add_test(tc, bootstrap_deb_needs_upgrade);
	tcase_add_test(tc, bootstrap_deb_reinstalled_while_pending);
	tcase_add_test(tc, bootstrap_default_keys_in_turn);
	tcase_add_test(tc, bootstrap_refuses_own_revoked);
	tcase_add_test(tc, ssh_slow_names_do_not_hold_others);
	tcase_add_test(tc, bootstrap_ca_near_expiry_keeps_keys);
	tcase_add_test(tc, bootstrap_node_disk_full);
	tcase_add_test(tc, bootstrap_upload_stall_removed);
	tcase_add_test(tc, ssh_dead_sessions_closed_together);
	tcase_add_test(tc, bootstrap_finishes_half_renew);
	tcase_add_test(tc, agentless_push_tmp_full);
	tcase_add_test(tc, agentless_push_channel_refused);
	tcase_add_test(tc, bootstrap_password_only_host);
	tcase_add_test(tc, ssh_agent_hung_skipped);
	tcase_add_test(tc, bootstrap_restarts_refusing_agent);
	tcase_add_test(tc, bootstrap_key_created_private);
	suite_add_tcase(s, tc);
	tc = tcase_create("cli");
	tcase_add_unchecked_fixture(tc, cu_base_setup, cu_base_teardown);
	tcase_add_test(tc, bootstrap_cli_refusals);
	tcase_add_test(tc, push_binary_read_once);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run(ssh_suite());
}
