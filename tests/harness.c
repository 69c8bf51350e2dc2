/* Integration harness: namespaces, certificates and real knobd processes.
 * See harness.h.  Test code: plain and synchronous on purpose. */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <sched.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "harness.h"
#include "testutil.h"
#include "tls.h"
#include "util.h"

/* The harness of this process, for the exit and signal clean-up paths. */
static struct harness *active_h;
/* The test program's own process (Check's runner, which forks each test):
 * its harnesses share one set of certificates (make_certs). */
static pid_t runner_pid;

int
harness_sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int r;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		return -1;
	va_end(ap);
	r = system(cmd);
	free(cmd);
	if (r == -1)
		return -1;
	return WIFEXITED(r) ? WEXITSTATUS(r) : 128 + WTERMSIG(r);
}

int
harness_node_sh(struct harness *h, int i, const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int r;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		return -1;
	va_end(ap);
	r = harness_sh("ip netns exec %s sh -c '%s'", h->node[i].ns, cmd);
	free(cmd);
	return r;
}

/* Delete namespaces (their processes killed first: a failed test's
 * agents hold its mounts) and then temp dirs (cu_reap_stale) left by
 * earlier runs, or failed tests, whose process is gone. */
static void
remove_stale(void)
{
	FILE *f = popen("ip netns list 2>/dev/null", "r");
	char line[256];

	if (f == NULL) {
		cu_reap_stale();
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[128];
		long pid;

		if (sscanf(line, "%127s", name) != 1 || strncmp(name, "kt", 2) != 0)
			continue;
		pid = strtol(name + 2, NULL, 10);
		if (pid > 0 && kill((pid_t)pid, 0) == 0)
			continue;
		harness_sh("ip netns pids %s 2>/dev/null | xargs -r kill -9 2>/dev/null; "
		    "ip netns del %s 2>/dev/null", name, name);
	}
	pclose(f);
	cu_reap_stale();
}

static void
on_signal(int sig)
{
	if (active_h)
		harness_stop(active_h);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
on_exit_cleanup(void)
{
	if (active_h)
		harness_stop(active_h);
}

/* The certificate cache of this test program for n nodes, into buf. */
static void
ca_cache_path(char *buf, size_t len, int n)
{
	snprintf(buf, len, "/tmp/knob-test.kt%ld.ca%d", (long)runner_pid, n);
}

/* At the runner's exit (not a forked test's): its certificate caches go. */
static void
ca_cache_drop(void)
{
	char path[64];

	if (getpid() != runner_pid)
		return;
	for (int n = 1; n <= HARNESS_MAX; n++) {
		ca_cache_path(path, sizeof(path), n);
		if (access(path, F_OK) == 0)
			harness_sh("rm -rf '%s'", path);
	}
}

/* Before main: note the runner. */
__attribute__((constructor)) static void
harness_init(void)
{
	runner_pid = getpid();
	atexit(ca_cache_drop);
}

/* The CA and the certificates of nodes (" node01 node02") and the
 * controller into h->ca_dir: a copy of those the program's first harness
 * of as many nodes made (knobctl ca init, ca issue; kept for the next
 * ones, unless $KNOB_TEST_CA_DAYS asks for a special CA).  A test changes
 * its own copy only.  0 or -1. */
static int
make_certs(struct harness *h, const char *names)
{
	int cache = getenv("KNOB_TEST_CA_DAYS") == NULL;
	char path[64];

	ca_cache_path(path, sizeof(path), h->n);
	if (cache && access(path, F_OK) == 0)
		return harness_sh("cp -a '%s' '%s'", path, h->ca_dir) == 0 ? 0 : -1;
	if (harness_sh("cd %s && %s/knobctl ca init ca >/dev/null", h->tmp, h->bin) != 0 ||
	    harness_sh("cd %s && %s/knobctl ca issue ca%s >/dev/null && "
	    "%s/knobctl ca issue ca controller --controller >/dev/null", h->tmp, h->bin, names,
	    h->bin) != 0)
		return -1;
	if (cache)	/* published whole, or not at all */
		harness_sh("cp -a '%s' '%s.%ld' && mv -T '%s.%ld' '%s' 2>/dev/null || "
		    "rm -rf '%s.%ld'", h->ca_dir, path, (long)getpid(), path, (long)getpid(), path,
		    path, (long)getpid());
	return 0;
}

/* PEM file path read as a certificate (key 0) or private key; NULL when
 * it cannot be. */
static void *
pem_read(const char *path, int key)
{
	FILE *f = fopen(path, "re");
	void *v;

	if (f == NULL)
		return NULL;
	v = key ? (void *)PEM_read_PrivateKey(f, NULL, NULL, NULL) :
	    (void *)PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	return v;
}

int
harness_cert_expiring(struct harness *h, const char *name, int secs, time_t *not_after)
{
	char crt[PATH_MAX + 64], tmp[PATH_MAX + 80], cakey[PATH_MAX + 16];
	EVP_PKEY *k;
	X509 *x;
	FILE *f = NULL;
	int64_t t;
	int rc = -1;

	snprintf(crt, sizeof(crt), "%s/%s.crt", h->ca_dir, name);
	snprintf(tmp, sizeof(tmp), "%s.short", crt);
	snprintf(cakey, sizeof(cakey), "%s/ca.key", h->ca_dir);
	k = pem_read(cakey, 1);
	x = pem_read(crt, 0);
	if (k == NULL || x == NULL || X509_gmtime_adj(X509_getm_notBefore(x), -60) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), secs) == NULL || X509_sign(x, k, NULL) <= 0 ||
	    tls_x509_not_after(x, &t) < 0 || (f = fopen(tmp, "we")) == NULL)
		goto out;
	if (PEM_write_X509(f, x) == 1 && fclose(f) == 0 && rename(tmp, crt) == 0) {
		*not_after = (time_t)t;
		rc = 0;
	}
	f = NULL;
out:
	if (f != NULL)
		fclose(f);
	X509_free(x);
	EVP_PKEY_free(k);
	return rc;
}

/* Write cluster.xml naming every node with its namespace address. */
static int
write_cluster(struct harness *h)
{
	FILE *f = fopen(h->cluster, "w");

	if (f == NULL)
		return -1;
	fprintf(f, "<?xml version=\"1.0\"?>\n<cluster port=\"7420\">\n"
	    "  <tls ca=\"ca/ca.crt\" cert=\"ca/controller.crt\" key=\"ca/controller.key\"/>\n"
	    "  <results db=\"results.db\"/>\n"
	    "  <group name=\"all\" nodes=\"node[01-%02d]\"/>\n", h->n);
	for (int i = 0; i < h->n; i++)
		fprintf(f, "  <node name=\"%s\" addr=\"%s\"/>\n", h->node[i].name, h->node[i].addr);
	fprintf(f, "</cluster>\n");
	return fclose(f);
}

/* $KNOB_TEST_NS_TAG (up to 8 letters and digits, else ignored): appended
 * to the namespaces' names, after the pid (remove_stale reads that), so
 * that runs sharing a machine can tell theirs apart. */
static const char *
ns_tag(void)
{
	const char *t = getenv("KNOB_TEST_NS_TAG");

	if (t == NULL || strlen(t) > 8 || !isalpha((unsigned char)t[0]))
		return "";	/* a leading digit would read as part of the pid */
	for (const char *p = t; *p; p++)
		if (!isalnum((unsigned char)*p))
			return "";
	return t;
}

/* The namespaces harness_net_share made in the runner for harnesses of
 * shared_n nodes (0: none), named with shared_tag; a test's harness of as
 * many nodes uses them instead of making its own. */
static int shared_n;
static char shared_tag[32];

/* Make h's namespaces (h->ctl_ns, h->node[].ns, names set): the
 * controller's with its bridge, one per node joined to it.  0 or -1. */
static int
net_create(struct harness *h)
{
	if (harness_sh("ip netns add %s && ip -n %s link set lo up && "
	    "ip -n %s link add br0 type bridge && ip -n %s link set br0 up && "
	    "ip -n %s addr add 198.18.0.1/24 dev br0", h->ctl_ns, h->ctl_ns, h->ctl_ns,
	    h->ctl_ns, h->ctl_ns) != 0)
		return -1;
	for (int i = 0; i < h->n; i++) {
		struct hnode *x = &h->node[i];

		if (harness_sh("ip netns add %s && ip -n %s link set lo up && "
		    "ip -n %s link add kv%d type veth peer name eth0 netns %s && "
		    "ip -n %s link set kv%d master br0 up && "
		    "ip -n %s addr add %s/24 dev eth0 && ip -n %s link set eth0 up",
		    x->ns, x->ns, h->ctl_ns, i + 1, x->ns, h->ctl_ns, i + 1, x->ns, x->addr,
		    x->ns) != 0)
			return -1;
	}
	return 0;
}

/* SIGKILL every process but this one whose network namespace is one of
 * h's (inodes ino[0..n]); the number of them found. */
static int
net_kill_others(const ino_t *ino, int n)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	struct stat st;
	char path[64];
	int found = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		long pid = strtol(e->d_name, NULL, 10);

		if (pid <= 0 || pid == (long)getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
		if (stat(path, &st) != 0)	/* gone, or a zombie: holds no port */
			continue;
		for (int i = 0; i < n; i++)
			if (st.st_ino == ino[i]) {
				kill((pid_t)pid, SIGKILL);
				found++;
				break;
			}
	}
	closedir(d);
	return found;
}

/* SIGKILL every process in h's namespaces but this one (what a test left,
 * a failed one's agents too) and wait until they are gone, their ports
 * free for the next test's agents; the shared namespaces stay. */
static void
net_clear(struct harness *h)
{
	ino_t ino[HARNESS_MAX + 1];
	struct stat st;
	char path[PATH_MAX];
	int n = 0;

	for (int i = 0; i <= h->n; i++) {
		snprintf(path, sizeof(path), "/run/netns/%s", i < h->n ? h->node[i].ns : h->ctl_ns);
		if (stat(path, &st) == 0)
			ino[n++] = st.st_ino;
	}
	for (int tries = 0; tries < 500 && net_kill_others(ino, n) > 0; tries++)
		usleep(10000);	/* a killed process's exit: 5 s at most */
}

/* The names of h's namespaces, node names and addresses, h->tag and h->n
 * set. */
static void
net_names(struct harness *h)
{
	char tag[sizeof(h->tag)];	/* a local copy: the fields all live inside *h */

	memcpy(tag, h->tag, sizeof(tag));
	snprintf(h->ctl_ns, sizeof(h->ctl_ns), "%sc", tag);
	for (int i = 0; i < h->n; i++) {
		struct hnode *x = &h->node[i];

		snprintf(x->name, sizeof(x->name), "node%02d", i + 1);
		snprintf(x->ns, sizeof(x->ns), "%sn%d", tag, i + 1);
		snprintf(x->addr, sizeof(x->addr), "198.18.0.%d", 11 + i);
		snprintf(x->ifname, sizeof(x->ifname), "eth0");
	}
}

int
harness_net_share(int n)
{
	struct harness net;

	if (n < 1 || n > HARNESS_MAX || shared_n != 0)
		return -1;
	remove_stale();
	memset(&net, 0, sizeof(net));
	net.n = n;
	snprintf(net.tag, sizeof(net.tag), "kt%ld%s", (long)getpid(), ns_tag());
	net_names(&net);
	memcpy(shared_tag, net.tag, sizeof(shared_tag));
	shared_n = n;
	if (net_create(&net) == 0)
		return 0;
	harness_net_unshare();
	return -1;
}

void
harness_net_unshare(void)
{
	struct harness net;

	if (shared_n == 0)
		return;
	memset(&net, 0, sizeof(net));
	net.n = shared_n;
	memcpy(net.tag, shared_tag, sizeof(net.tag));
	net_names(&net);
	for (int i = 0; i <= net.n; i++)
		harness_sh("ip netns pids %s 2>/dev/null | grep -vx %ld | xargs -r kill -9 "
		    "2>/dev/null; ip netns del %s 2>/dev/null", i < net.n ? net.node[i].ns :
		    net.ctl_ns, (long)getpid(), i < net.n ? net.node[i].ns : net.ctl_ns);
	shared_n = 0;
}

int
harness_start(struct harness *h, int n, int start_agents)
{
	const char *bin = getenv("KNOB_BIN");
	char names[HARNESS_MAX * 8 + 1] = "";

	if (n < 1 || n > HARNESS_MAX)
		return -1;
	memset(h, 0, sizeof(*h));
	h->n = n;
	h->shared = shared_n == n;
	if (bin == NULL)
		bin = "build";
	if (realpath(bin, h->bin) == NULL) {
		fprintf(stderr, "harness: KNOB_BIN %s: %s\n", bin, strerror(errno));
		return -1;
	}
	snprintf(h->tag, sizeof(h->tag), "kt%ld%s", (long)getpid(), ns_tag());
	/* below a program's cu_base when it has one, which its runner removes
	 * even after a failed check (that ends the test without harness_stop) */
	if (cu_base()[0])
		snprintf(h->tmp, sizeof(h->tmp), "%s/knob-test.%s.XXXXXX", cu_base(), h->tag);
	else
		snprintf(h->tmp, sizeof(h->tmp), "/tmp/knob-test.%s.XXXXXX", h->tag);
	if (mkdtemp(h->tmp) == NULL)
		return -1;
	chmod(h->tmp, 0755);
	remove_stale();
	cu_reap_hook = remove_stale;
	active_h = h;
	h->up = 1;
	atexit(on_exit_cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (h->shared)
		memcpy(h->tag, shared_tag, sizeof(h->tag));
	net_names(h);
	snprintf(h->cluster, sizeof(h->cluster), "%s/cluster.xml", h->tmp);
	snprintf(h->ca_dir, sizeof(h->ca_dir), "%s/ca", h->tmp);
	if (h->shared)
		net_clear(h);
	else if (net_create(h) != 0)
		goto fail;
	for (int i = 0; i < n; i++) {
		struct hnode *x = &h->node[i];
		char tmp[sizeof(h->tmp)], nm[sizeof(x->name)];	/* local copies, as above */

		memcpy(tmp, h->tmp, sizeof(tmp));
		memcpy(nm, x->name, sizeof(nm));
		snprintf(x->state_dir, sizeof(x->state_dir), "%s/%s/state", tmp, nm);
		snprintf(x->log, sizeof(x->log), "%s/%s/knobd.log", tmp, nm);
		cu_mkparents(x->log);	/* no shell: a shell a time is most of a start */
		if (mkdir(x->state_dir, 0755) != 0)
			goto fail;
		strcat(names, " ");
		strcat(names, x->name);
	}
	if (make_certs(h, names) < 0)
		goto fail;
	if (write_cluster(h) < 0)
		goto fail;
	if (start_agents)
		for (int i = 0; i < n; i++)
			if (harness_agent_start(h, i) < 0)
				goto fail;
	return 0;
fail:
	fprintf(stderr, "harness: setup failed (tag %s, tmp %s)\n", h->tag, h->tmp);
	harness_stop(h);
	return -1;
}

int
harness_start_with(struct harness *h, int n, const char *args)
{
	if (harness_start(h, n, 0) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		snprintf(h->node[i].extra_args, sizeof(h->node[i].extra_args), "%s", args);
		if (harness_agent_start(h, i) < 0) {
			harness_stop(h);
			return -1;
		}
	}
	return 0;
}

/* Wait for "listening on" in the agent's log, or for it to die. */
static int
wait_listening(struct hnode *x)
{
	for (int tries = 0; tries < 1000; tries++) {
		char *buf = NULL;
		int st;

		if (read_file_bounded(x->log, 1 << 20, &buf, NULL) == 0) {
			int ok = strstr(buf, "listening on") != NULL;
			free(buf);
			if (ok)
				return 0;
		}
		if (waitpid(x->pid, &st, WNOHANG) == x->pid) {
			x->pid = 0;
			fprintf(stderr, "harness: knobd %s exited during start-up; log %s\n",
			    x->name, x->log);
			return -1;
		}
		usleep(5000);	/* 5 s in all */
	}
	fprintf(stderr, "harness: knobd %s did not start listening; log %s\n", x->name, x->log);
	return -1;
}

int
harness_agent_start(struct harness *h, int i)
{
	struct hnode *x = &h->node[i];
	char listen[64], ca[PATH_MAX + 16], cert[PATH_MAX + 16], key[PATH_MAX + 16];
	char *argv[48], *extra = NULL, *tok, *save = NULL;
	int ac = 0, fd;
	pid_t pid;

	if (x->pid > 0)
		harness_agent_stop(h, i, SIGTERM);
	snprintf(listen, sizeof(listen), "%s:7420", x->addr);
	snprintf(ca, sizeof(ca), "%s/ca.crt", h->ca_dir);
	snprintf(cert, sizeof(cert), "%s/%s.crt", h->ca_dir, x->name);
	snprintf(key, sizeof(key), "%s/%s.key", h->ca_dir, x->name);
	argv[ac++] = (char *)(uintptr_t)"ip";
	argv[ac++] = (char *)(uintptr_t)"netns";
	argv[ac++] = (char *)(uintptr_t)"exec";
	argv[ac++] = x->ns;
	argv[ac++] = xasprintf("%s/knobd", h->bin);
	argv[ac++] = (char *)(uintptr_t)"--listen";
	argv[ac++] = listen;
	argv[ac++] = (char *)(uintptr_t)"--ca";
	argv[ac++] = ca;
	argv[ac++] = (char *)(uintptr_t)"--cert";
	argv[ac++] = cert;
	argv[ac++] = (char *)(uintptr_t)"--key";
	argv[ac++] = key;
	argv[ac++] = (char *)(uintptr_t)"--state-dir";
	argv[ac++] = x->state_dir;
	argv[ac++] = (char *)(uintptr_t)"--log-level";
	argv[ac++] = (char *)(uintptr_t)"debug";
	if (x->sysroot[0]) {
		argv[ac++] = (char *)(uintptr_t)"--sysroot";
		argv[ac++] = x->sysroot;
	}
	extra = xstrdup(x->extra_args);
	for (tok = strtok_r(extra, " ", &save); tok && ac < 46; tok = strtok_r(NULL, " ", &save))
		argv[ac++] = tok;
	argv[ac] = NULL;
	{	/* keep the previous run's log beside the new one */
		char prev[PATH_MAX + 8];
		snprintf(prev, sizeof(prev), "%s.prev", x->log);
		rename(x->log, prev);
	}
	pid = fork();
	if (pid < 0) {
		free(argv[4]);
		free(extra);
		return -1;
	}
	if (pid == 0) {
		fd = open(x->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			close(fd);
		}
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			close(fd);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	free(argv[4]);
	free(extra);
	x->pid = pid;
	return wait_listening(x);
}

void
harness_agent_stop(struct harness *h, int i, int sig)
{
	struct hnode *x = &h->node[i];
	int st;

	if (x->pid <= 0)
		return;
	kill(x->pid, sig);
	for (int tries = 0; tries < 200; tries++) {
		if (waitpid(x->pid, &st, WNOHANG) == x->pid) {
			x->pid = 0;
			return;
		}
		usleep(10000);
	}
	kill(x->pid, SIGKILL);
	waitpid(x->pid, &st, 0);
	x->pid = 0;
}

void
harness_pause_end(struct harness *h, int i)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/test-pause-end", h->node[i].state_dir);
	cu_write(path, 0600, "%s", "");
}

/* Read a capture file into *out (if out) and remove it. */
static void
slurp(const char *path, char **out)
{
	if (out) {
		*out = NULL;
		if (read_file_bounded(path, 64 << 20, out, NULL) < 0)
			*out = xstrdup("");
	}
	unlink(path);
}

int
harness_knobctl(struct harness *h, char **out, char **err, const char *fmt, ...)
{
	char o[PATH_MAX + 16], e[PATH_MAX + 16];
	static unsigned seq;
	va_list ap;
	char *args;
	int r;

	va_start(ap, fmt);
	if (vasprintf(&args, fmt, ap) < 0)
		return -1;
	va_end(ap);
	seq++;
	snprintf(o, sizeof(o), "%s/ctl.%u.out", h->tmp, seq);
	snprintf(e, sizeof(e), "%s/ctl.%u.err", h->tmp, seq);
	r = harness_sh("ip netns exec %s %s/knobctl -c %s %s >%s 2>%s </dev/null", h->ctl_ns,
	    h->bin, h->cluster, args, o, e);
	free(args);
	slurp(o, out);
	slurp(e, err);
	return r;
}

/* vasprintf into a malloc'd string, NULL on failure. */
static char *
fmt_args(const char *fmt, va_list ap)
{
	char *s;

	return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

struct json_object *
harness_knobctl_json(struct harness *h, int *rc, const char *fmt, ...)
{
	char *out = NULL, *err = NULL, *args;
	json_object *doc;
	va_list ap;

	va_start(ap, fmt);
	args = fmt_args(fmt, ap);
	va_end(ap);
	if (args == NULL)
		return NULL;
	*rc = harness_knobctl(h, &out, &err, "%s", args);
	doc = json_tokener_parse(out ? out : "");
	if (doc == NULL)
		fprintf(stderr, "knobctl %s: not JSON (exit %d): %s\nstderr: %s\n", args, *rc,
		    out ? out : "", err ? err : "");
	free(out);
	free(err);
	free(args);
	return doc;
}

int
harness_knobctl_logged(struct harness *h, char **out, const char *fmt, ...)
{
	char *args, *err = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	args = fmt_args(fmt, ap);
	va_end(ap);
	if (args == NULL)
		return -1;
	rc = harness_knobctl(h, out, &err, "%s", args);
	fprintf(stderr, "$ knobctl %s   (exit %d)\n%s%s", args, rc, *out ? *out : "",
	    err && *err ? err : "");
	free(err);
	free(args);
	return rc;
}

int
harness_knobctl_debug(struct harness *h, char **out, char **err, const char *fmt, ...)
{
	va_list ap;
	char *args;
	int rc;

	va_start(ap, fmt);
	args = fmt_args(fmt, ap);
	va_end(ap);
	free(*out);
	free(*err);
	*out = *err = NULL;
	if (args == NULL)
		return -1;
	rc = harness_knobctl(h, out, err, "--log-level debug %s", args);
	fprintf(stderr, "knobctl %s -> %d\n%s%s", args, rc, *out ? *out : "", *err ? *err : "");
	free(args);
	return rc;
}

pid_t
harness_knobctl_bg(struct harness *h, const char *out, const char *err, const char *fmt, ...)
{
	char *args, *cmd;
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	args = fmt_args(fmt, ap);
	va_end(ap);
	cmd = args == NULL ? NULL : xasprintf("exec ip netns exec %s %s/knobctl -c %s %s >%s "
	    "2>%s </dev/null", h->ctl_ns, h->bin, h->cluster, args, out, err ? err : "&1");
	free(args);
	if (cmd == NULL)
		return -1;
	pid = fork();
	if (pid == 0) {
		/* as from a terminal: an ignored signal is inherited across exec,
		 * and the suite may run under nohup (knobctl keeps a SIGHUP that
		 * was ignored when it started ignored, as nohup asks) */
		signal(SIGHUP, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	return pid;
}

/* Has the holder whose stderr is the file arg said it listens? */
static int
mux_listening(void *arg)
{
	return cu_file_has(arg, "holding connections on");
}

pid_t
harness_mux_start(struct harness *h, const char *err, const char *fmt, ...)
{
	char *args;
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	args = fmt_args(fmt, ap);
	va_end(ap);
	cu_write(err, 0644, "%s", "");
	pid = args == NULL ? -1 : harness_knobctl_bg(h, "/dev/null", err, "%s", args);
	free(args);
	if (pid > 0 && cu_wait(mux_listening, (void *)(uintptr_t)err, 20) < 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

void
harness_mux_stop(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	cu_reap(*pid);
	*pid = 0;
}

int
harness_enter_ns(const char *ns)
{
	char p[128];
	int fd, rc;

	snprintf(p, sizeof(p), "/run/netns/%s", ns);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	return rc;
}

int
harness_dial(struct harness *h, int i)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(7420) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (inet_pton(AF_INET, h->node[i].addr, &sin.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

SSL_CTX *
harness_tls_ctx(struct harness *h, const char *who)
{
	char ca[PATH_MAX + 16], cert[PATH_MAX + 64], key[PATH_MAX + 64], err[512];
	SSL_CTX *ctx;

	snprintf(ca, sizeof(ca), "%s/ca.crt", h->ca_dir);
	snprintf(cert, sizeof(cert), "%s/%s.crt", h->ca_dir, who);
	snprintf(key, sizeof(key), "%s/%s.key", h->ca_dir, who);
	if ((ctx = tls_ctx_new(0, ca, cert, key, err, sizeof(err))) == NULL)
		fprintf(stderr, "harness: %s\n", err);
	return ctx;
}

SSL *
harness_tls_dial(struct harness *h, SSL_CTX *ctx, int i)
{
	int fd = harness_dial(h, i);
	SSL *ssl;

	if (fd < 0)
		return NULL;
	ssl = SSL_new(ctx);
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1) {
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	return ssl;
}

void
harness_tls_close(SSL *ssl)
{
	int fd = SSL_get_fd(ssl);

	SSL_shutdown(ssl);
	SSL_free(ssl);
	close(fd);
}

long
harness_sh_int(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	long n = -1;
	FILE *p;

	va_start(ap, fmt);
	cmd = fmt_args(fmt, ap);
	va_end(ap);
	if (cmd == NULL)
		return -1;
	p = popen(cmd, "r");
	free(cmd);
	if (p == NULL)
		return -1;
	if (fscanf(p, "%ld", &n) != 1)
		n = -1;
	pclose(p);
	return n;
}

void
harness_stop(struct harness *h)
{
	if (!h->up)
		return;
	h->up = 0;
	for (int i = 0; i < h->n; i++)
		harness_agent_stop(h, i, SIGTERM);
	if (h->shared)	/* the namespaces stay for the next test */
		net_clear(h);
	for (int i = 0; i < h->n && !h->shared; i++)
		if (h->node[i].ns[0])
			harness_sh("ip netns pids %s 2>/dev/null | xargs -r kill -9 2>/dev/null; "
			    "ip netns del %s 2>/dev/null", h->node[i].ns, h->node[i].ns);
	if (h->ctl_ns[0] && !h->shared)	/* a test may have entered it: spare this process */
		harness_sh("ip netns pids %s 2>/dev/null | grep -vx %ld | xargs -r kill -9 2>/dev/null; "
		    "ip netns del %s 2>/dev/null", h->ctl_ns, (long)getpid(), h->ctl_ns);
	if (h->tmp[0] && getenv("KNOB_KEEP_TMP") == NULL)
		cu_rm_rf(h->tmp);
	if (active_h == h)
		active_h = NULL;
}

int
harness_log_has(struct harness *h, int i, const char *s)
{
	char *buf = NULL;
	int found;

	if (read_file_bounded(h->node[i].log, 8 << 20, &buf, NULL) < 0)
		return 0;
	found = strstr(buf, s) != NULL;
	free(buf);
	return found;
}

int
harness_wait_log(struct harness *h, int i, const char *s, double seconds)
{
	uint64_t end = now_mono_ns() + (uint64_t)(seconds * 1e9);

	while (!harness_log_has(h, i, s)) {
		if (now_mono_ns() > end)
			return -1;
		usleep(20000);
	}
	return 0;
}

/* Start fn in a child inside the network namespace ns: fn sets up what
 * it serves, writes a byte to ready, serves until stop is readable and
 * returns a count (harness_child_end's result); it exits 1 when it cannot. */
void
harness_child_start(struct harness_child *c, const char *ns, int (*fn)(int ready, int stop))
{
	int ready[2], stop[2], res[2];
	char b;

	ck_assert(pipe(ready) == 0 && pipe(stop) == 0 && pipe(res) == 0);
	if ((c->pid = fork()) == 0) {
		int v;

		close(ready[0]);
		close(stop[1]);
		close(res[0]);
		if (harness_enter_ns(ns) < 0)
			_exit(1);
		v = fn(ready[1], stop[0]);
		_exit(write(res[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
	}
	ck_assert_int_gt(c->pid, 0);
	close(ready[1]);
	close(stop[0]);
	close(res[1]);
	ck_assert_msg(read(ready[0], &b, 1) == 1, "the stand-in did not start");
	close(ready[0]);
	c->stop = stop[1];
	c->res = res[0];
}

/* Stop the stand-in; the count it returned. */
int
harness_child_end(struct harness_child *c)
{
	int v = -1, st;

	close(c->stop);
	ck_assert(read(c->res, &v, sizeof(v)) == sizeof(v));
	close(c->res);
	waitpid(c->pid, &st, 0);
	return v;
}

/* harness_child: a name server on 127.87.0.1:53 (the child's namespace
 * only) that never answers; the queries it got. */
int
harness_dns_black_hole(int ready, int stop)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), queries = 0;
	char buf[512];

	inet_pton(AF_INET, "127.87.0.1", &sa.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || write(ready, "", 1) != 1)
		_exit(1);
	for (;;) {
		struct pollfd pf[2] = { { .fd = fd, .events = POLLIN }, { .fd = stop, .events = POLLIN } };

		if (poll(pf, 2, -1) < 0 || pf[1].revents)
			return queries;
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			queries++;
	}
}

int
harness_knobctl_slow_dns(struct harness *h, char **out, double *took, const char *fmt, ...)
{
	char conf[PATH_MAX + 16], outf[PATH_MAX + 16];
	struct harness_child c;
	uint64_t t0;
	int rc, queries;
	va_list ap;
	char *args;

	va_start(ap, fmt);
	args = fmt_args(fmt, ap);
	va_end(ap);
	ck_assert_ptr_nonnull(args);
	snprintf(conf, sizeof(conf), "%s/resolv.conf", h->tmp);
	snprintf(outf, sizeof(outf), "%s/slow-names.out", h->tmp);
	cu_write(conf, 0644, "nameserver 127.87.0.1\noptions timeout:3 attempts:1\n");
	harness_child_start(&c, h->ctl_ns, harness_dns_black_hole);
	t0 = now_mono_ns();
	rc = harness_sh("unshare -m --propagation private sh -c 'mount --bind %s /etc/resolv.conf "
	    "&& exec ip netns exec %s %s/knobctl -c %s --connect-timeout 1 %s' >%s 2>&1 </dev/null",
	    conf, h->ctl_ns, h->bin, h->cluster, args, outf);
	*took = (double)(now_mono_ns() - t0) / 1e9;
	queries = harness_child_end(&c);
	*out = cu_slurp(outf);
	fprintf(stderr, "---- slow names: %.1fs, %d DNS queries: %s\n%s", *took, queries, args,
	    *out);
	free(args);
	ck_assert_int_ge(queries, 5);	/* the names went to the slow server */
	return rc;
}
