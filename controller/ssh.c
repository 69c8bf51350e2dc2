/* Non-blocking libssh2 sessions, host-key checks, authentication, exec
 * channels and SFTP uploads (see controller/ssh.h). */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <openssl/evp.h>

#include "knobctl.h"
#include "log.h"
#include "ssh.h"
#include "util.h"

enum { S_USER = 0x1200, S_KEY, S_PORT, S_KNOWN, S_ACCEPT, S_VIA, S_RKNOBD, S_PUSH, S__END };

const struct opt opt_ssh[] = {
	{ S_VIA, "via", OPT_ARG, "ssh", "agentless: run knobd --stdio on each node over SSH, no TLS", 0 },
	{ S_USER, "ssh-user", OPT_ARG, "USER", "SSH user (default root)", 0 },
	{ S_KEY, "ssh-key", OPT_ARG, "FILE", "private key (default: ssh-agent's keys if running, then ~/.ssh/id_ed25519, id_ecdsa, id_rsa in turn)", 0 },
	{ S_PORT, "ssh-port", OPT_ARG, "N", "SSH port (default 22)", 0 },
	{ S_KNOWN, "known-hosts", OPT_ARG, "FILE", "host keys checked strictly (default ~/.ssh/known_hosts; /etc/ssh/ssh_known_hosts too)", 0 },
	{ S_ACCEPT, "accept-new", OPT_NOARG, NULL, "add unknown host keys to known_hosts (changed keys are still refused)", 0 },
	{ S_RKNOBD, "remote-knobd", OPT_ARG, "PATH", "--via ssh: the agent on the node (default knobd, or /usr/sbin/knobd)", 0 },
	{ S_PUSH, "push-agent", OPT_NOARG, NULL, "--via ssh: stream this controller's knobd to the node for the session", 0 },
	OPT_END
};

int
ssh_opt_is(int id)
{
	return id >= S_USER && id < S__END;
}

int
ssh_cfg_apply(struct ssh_cfg *cfg, int id, const char *arg)
{
	uint32_t port;

	switch (id) {
	case S_USER: cfg->user = arg; return 0;
	case S_KEY: cfg->key = arg; return 0;
	case S_KNOWN: cfg->known_hosts = arg; return 0;
	case S_ACCEPT: cfg->accept_new = 1; return 0;
	case S_RKNOBD: cfg->remote_knobd = arg; return 0;
	case S_PUSH: cfg->push_agent = 1; return 0;
	case S_PORT:
		if (opt_parse_uint(arg, 1, 65535, NULL, &port) < 0) {
			fprintf(stderr, "knobctl: bad --ssh-port '%s' (1 to 65535, digits only)\n", arg);
			return -1;
		}
		cfg->port = (int)port;
		return 0;
	case S_VIA:
		if (strcmp(arg, "ssh") != 0 && strcmp(arg, "tls") != 0) {
			fprintf(stderr, "knobctl: --via takes ssh (or tls, the default)\n");
			return -1;
		}
		cfg->via = strcmp(arg, "ssh") == 0;
		return 0;
	default:
		return 0;
	}
}

char *
sh_quote(const char *s)
{
	char *q = NULL;

	str_appendf(&q, "'");
	for (; *s; s++)
		str_appendf(&q, *s == '\'' ? "'\\''" : "%c", *s);
	str_appendf(&q, "'");
	return q;
}

void
ssh_undo_text(char *buf, size_t len, const char *err, const char *what, int removed,
    const char *path, const char *why, const char *then)
{
	if (removed)
		snprintf(buf, len, "%s; %s removed", err, what);
	else
		snprintf(buf, len, "%s; %s not removed (%s): %s", err, path, why, then);
}

/* Record a failure of c: status and reason. Returns -1. */
static int
fail(struct ssh_conn *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int
fail(struct ssh_conn *c, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	c->fail_status = status;
	return -1;
}

/* libssh2's last error text. */
static const char *
last_error(struct ssh_conn *c)
{
	char *msg = NULL;

	if (c->s == NULL)
		return "no session";
	libssh2_session_last_error(c->s, &msg, NULL, 0);
	return msg ? msg : "unknown error";
}

static int
again(struct ssh_conn *c, int r)
{
	return r == LIBSSH2_ERROR_EAGAIN ||
	    (r == 0 && c->s && libssh2_session_last_errno(c->s) == LIBSSH2_ERROR_EAGAIN);
}

int
ssh_start(struct ssh_conn *c, const struct ssh_cfg *cfg, const char *name, const char *addr,
    const struct fo_addr *a, double seconds)
{
	struct sockaddr_storage sa;
	socklen_t len;
	char why[128];
	int r, one = 1;

	memset(c, 0, sizeof(*c));
	c->cfg = cfg;
	c->name = name;
	c->addr = addr;
	c->fd = -1;
	if (fo_addr_port(a, cfg->port ? cfg->port : 22, seconds, &sa, &len, why, sizeof(why)) < 0)
		return fail(c, NS_UNREACHABLE, "%s", why);
	c->fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return fail(c, NS_FAILED, "socket: %s", strerror(errno));
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	r = connect(c->fd, (const struct sockaddr *)&sa, len);
	if (r < 0 && errno != EINPROGRESS)
		return fail(c, NS_UNREACHABLE, "ssh: %s", strerror(errno));
	c->phase = SSH_CONNECT;
	return 0;
}

static void hostkey_pref(struct ssh_conn *c);

/* libssh2's blocks for a session: each in the session's ring (its pool),
 * behind a header of sizeof(max_align_t) bytes. */
#define BLK_HDR sizeof(max_align_t)

/* Put block b in head's ring; its user part. */
static void *
pool_link(struct ssh_blk *head, struct ssh_blk *b)
{
	b->next = head->next;
	b->prev = head;
	head->next->prev = b;
	head->next = b;
	return (char *)b + BLK_HDR;
}

/* Take user part p's block out of its ring; the block. */
static struct ssh_blk *
pool_unlink(void *p)
{
	struct ssh_blk *b = (struct ssh_blk *)(void *)((char *)p - BLK_HDR);

	b->prev->next = b->next;
	b->next->prev = b->prev;
	return b;
}

static void *
pool_alloc(size_t count, void **abstract)
{
	struct ssh_blk *b = malloc(BLK_HDR + count);

	return b ? pool_link(*abstract, b) : NULL;
}

static void
pool_free(void *p, void **abstract)
{
	(void)abstract;
	if (p != NULL)
		free(pool_unlink(p));
}

static void *
pool_realloc(void *p, size_t count, void **abstract)
{
	struct ssh_blk *b, *nb;

	if (p == NULL)
		return pool_alloc(count, abstract);
	b = pool_unlink(p);
	if ((nb = realloc(b, BLK_HDR + count)) == NULL) {
		pool_link(*abstract, b);	/* unchanged, still the session's */
		return NULL;
	}
	return pool_link(*abstract, nb);
}

/* After libssh2_session_free: free what libssh2 left of the session.  An
 * SFTP handle is freed only by a close the server answered, and
 * libssh2_sftp_shutdown leaves handles still open (libssh2 1.10 does not
 * free them there), so a session cut mid-upload left its handle and the
 * unanswered writes (~60 KB) for good. */
static void
pool_drain(struct ssh_blk *head)
{
	while (head->next != NULL && head->next != head)
		free(pool_unlink((char *)head->next + BLK_HDR));
}

/* The TCP connect finished (or failed); start the SSH session. */
static int
step_connect(struct ssh_conn *c)
{
	int err = 0;
	socklen_t sl = sizeof(err);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
		err = errno;
	if (err == EINPROGRESS || err == EALREADY)
		return 0;
	if (err != 0)
		return fail(c, NS_UNREACHABLE, "ssh: %s", err == ECONNREFUSED ? "connection refused" :
		    strerror(err));
	c->pool.prev = c->pool.next = &c->pool;
	if ((c->s = libssh2_session_init_ex(pool_alloc, pool_free, pool_realloc, &c->pool)) == NULL)
		return fail(c, NS_FAILED, "ssh: cannot create a session");
	libssh2_session_set_blocking(c->s, 0);
	hostkey_pref(c);	/* reads known_hosts into c->kh, for step_hostkey too */
	c->phase = SSH_HANDSHAKE;
	return 1;
}

static int
step_handshake(struct ssh_conn *c)
{
	int r = libssh2_session_handshake(c->s, c->fd);

	if (r == LIBSSH2_ERROR_EAGAIN)
		return 0;
	if (r != 0)
		return fail(c, NS_UNREACHABLE, "ssh handshake: %s", last_error(c));
	c->phase = SSH_HOSTKEY;
	return 1;
}

/* Host key types: libssh2's, known_hosts' bits, the name known_hosts and
 * ssh-keygen use, and the signature algorithms of such a key (best first). */
static const struct hk_type {
	int type, kh;
	const char *name, *algs;
} hk_types[] = {
	{ LIBSSH2_HOSTKEY_TYPE_ED25519, LIBSSH2_KNOWNHOST_KEY_ED25519, "ssh-ed25519", "ssh-ed25519" },
	{ LIBSSH2_HOSTKEY_TYPE_ECDSA_256, LIBSSH2_KNOWNHOST_KEY_ECDSA_256, "ecdsa-sha2-nistp256",
	    "ecdsa-sha2-nistp256" },
	{ LIBSSH2_HOSTKEY_TYPE_ECDSA_384, LIBSSH2_KNOWNHOST_KEY_ECDSA_384, "ecdsa-sha2-nistp384",
	    "ecdsa-sha2-nistp384" },
	{ LIBSSH2_HOSTKEY_TYPE_ECDSA_521, LIBSSH2_KNOWNHOST_KEY_ECDSA_521, "ecdsa-sha2-nistp521",
	    "ecdsa-sha2-nistp521" },
	{ LIBSSH2_HOSTKEY_TYPE_RSA, LIBSSH2_KNOWNHOST_KEY_SSHRSA, "ssh-rsa",
	    "rsa-sha2-512,rsa-sha2-256,ssh-rsa" },
	{ LIBSSH2_HOSTKEY_TYPE_DSS, LIBSSH2_KNOWNHOST_KEY_SSHDSS, "ssh-dss", "ssh-dss" },
};

/* "ssh-ed25519 SHA256:base64" of the session's host key; *kh_type its
 * known_hosts key bits (LIBSSH2_KNOWNHOST_KEY_UNKNOWN: none of ours). */
static void
host_fingerprint(struct ssh_conn *c, char *buf, size_t len, int *kh_type)
{
	const unsigned char *h = (const unsigned char *)libssh2_hostkey_hash(c->s,
	    LIBSSH2_HOSTKEY_HASH_SHA256);
	unsigned char b64[64];
	const char *tname = "unknown";
	size_t klen;
	int type, n;

	libssh2_session_hostkey(c->s, &klen, &type);
	*kh_type = LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
	for (size_t i = 0; i < nitems(hk_types); i++)
		if (hk_types[i].type == type) {
			tname = hk_types[i].name;
			*kh_type = hk_types[i].kh;
		}
	n = h ? EVP_EncodeBlock(b64, h, 32) : 0;
	while (n > 0 && b64[n - 1] == '=')
		n--;
	snprintf(buf, len, "%s SHA256:%.*s", tname, n, (const char *)b64);
}

static const char *
known_hosts_path(const struct ssh_cfg *cfg, char *buf, size_t len)
{
	const char *home = getenv("HOME");

	if (cfg->known_hosts)
		return cfg->known_hosts;
	snprintf(buf, len, "%s/.ssh/known_hosts", home ? home : "/root");
	return buf;
}

/* OpenSSH's GlobalKnownHostsFile, read after the user's
 * ($KNOB_GLOBAL_KNOWN_HOSTS instead, for tests; empty: none), or NULL. */
static const char *
global_kh_path(void)
{
	const char *g = getenv("KNOB_GLOBAL_KNOWN_HOSTS");

	if (g == NULL)
		return "/etc/ssh/ssh_known_hosts";
	return *g ? g : NULL;
}

/* known_hosts' name for host: "host" or "[host]:port". */
static void
kh_name(const struct ssh_conn *c, const char *host, char *buf, size_t len)
{
	int port = c->cfg->port ? c->cfg->port : 22;

	if (port == 22)
		snprintf(buf, len, "%s", host);
	else
		snprintf(buf, len, "[%s]:%d", host, port);
}

/* known_hosts' name for the node: "name" or "[name]:port". */
static void
kh_host(const struct ssh_conn *c, char *buf, size_t len)
{
	kh_name(c, c->name, buf, len);
}

/* --accept-new: append the node's key to known_hosts. 0 or -1. */
static int
kh_add(struct ssh_conn *c, LIBSSH2_KNOWNHOSTS *kh, const char *path, const char *key,
    size_t klen, int kh_type)
{
	struct libssh2_knownhost *entry = NULL;
	char host[300], line[8192], last = '\n';
	size_t outlen = 0;
	off_t off;
	int fd, rc = -1;

	kh_host(c, host, sizeof(host));
	if (libssh2_knownhost_addc(kh, host, NULL, key, klen, NULL, 0, LIBSSH2_KNOWNHOST_TYPE_PLAIN |
	    LIBSSH2_KNOWNHOST_KEYENC_RAW | kh_type, &entry) != 0 ||
	    libssh2_knownhost_writeline(kh, entry, line, sizeof(line) - 2, &outlen,
	    LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0)
		return -1;
	/* one write with O_APPEND: lines of nodes added at once do not mix; a
	 * file whose last line has no newline gets one first (else the new
	 * line would be the end of that line) */
	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0 && (off = lseek(fd, 0, SEEK_END)) > 0 && pread(fd, &last, 1, off - 1) == 1 &&
	    last != '\n') {
		memmove(line + 1, line, outlen);
		line[0] = '\n';
		outlen++;
	}
	if (fd >= 0 && write(fd, line, outlen) == (ssize_t)outlen)
		rc = 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* known_hosts as read for one connection, by step_connect for the host
 * key preference and kept for step_hostkey's check (read again only when
 * the file changed in between, say a line --accept-new appended for
 * another node): libssh2's entries, the keys of the "@revoked" lines, the
 * read's error, and which file it was. */
struct ssh_kh {
	LIBSSH2_KNOWNHOSTS *kh;
	struct strvec revoked;	/* base64 keys of "@revoked" lines */
	struct strvec names;	/* the node's names, as pattern lines are matched */
	int err;		/* 0, or -errno: a file exists and cannot be read */
	const char *errpath;	/* that file */
	struct stat st[2];	/* the user's file, the global one; st_ino 0: none */
};

/* Does host match the comma-separated patterns (OpenSSH's "*" and "?",
 * "!" negates: a negated match is no match whatever else matches)? */
static int
kh_pattern_match(const char *pats, const char *host)
{
	char *list = xstrdup(pats), *save = NULL, *p;
	int found = 0;

	for (p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		int neg = *p == '!';

		if (fnmatch(p + neg, host, FNM_CASEFOLD) != 0)
			continue;
		if (neg) {
			found = 0;
			break;
		}
		found = 1;
	}
	free(list);
	return found;
}

/* A line whose hosts hold a pattern ("*", "?" or "!"), which libssh2
 * compares as a plain name: for each of the node's names it matches, the
 * line goes to libssh2 under that name, so that its key is checked as any
 * other.  0 not a pattern line, 1 done, -1 libssh2 cannot parse it. */
static int
kh_pattern_line(struct ssh_kh *k, const char *l)
{
	size_t hl = strcspn(l, " \t");
	char *pats = xasprintf("%.*s", (int)hl, l), *line;
	int rc = 1;

	if (strpbrk(pats, "*?!") == NULL) {
		free(pats);
		return 0;
	}
	for (size_t i = 0; i < k->names.n; i++) {
		if (!kh_pattern_match(pats, k->names.v[i]))
			continue;
		line = xasprintf("%s%s", k->names.v[i], l + hl);
		if (libssh2_knownhost_readline(k->kh, line, strlen(line),
		    LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0)
			rc = -1;
		free(line);
	}
	free(pats);
	return rc;
}

/* One "@revoked HOSTS TYPE KEY" line: its KEY (in line), or NULL.  The
 * host patterns are not matched: a revoked key is refused for every host,
 * as OpenSSH refuses it wherever it is listed. */
static const char *
kh_revoked_line(char *line)
{
	char *save = NULL;

	strtok_r(line, " \t", &save);			/* @revoked */
	if (strtok_r(NULL, " \t", &save) == NULL ||	/* hosts */
	    strtok_r(NULL, " \t", &save) == NULL)	/* key type */
		return NULL;
	return strtok_r(NULL, " \t\r\n", &save);
}

/* Read known_hosts (path, the user's file: which 0, the global one: 1)
 * into k a line at a time:
 * libssh2_knownhost_readfile stops at the first line it cannot parse and
 * drops every line after it (a node listed below such a line would look
 * new, and --accept-new would take a changed key for a new one).  A line
 * libssh2 cannot parse is skipped with a warning, once per command;
 * "@cert-authority" lines are skipped (host certificates are not
 * supported); the keys of "@revoked" lines, which libssh2 would read as a
 * host named "@revoked", go to k->revoked; pattern lines are matched
 * here (kh_pattern_line).  k->err: -errno when the file exists and cannot
 * be read. */
static void
kh_read(struct ssh_kh *k, const char *path, int which)
{
	static _Atomic int warned;
	FILE *f = fopen(path, "re");
	char *line = NULL;
	const char *rk;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, r;

	if (f == NULL) {
		if (errno != ENOENT && k->err == 0) {
			k->err = -errno;
			k->errpath = path;
		}
		if (stat(path, &k->st[which]) < 0)	/* kh_current: the same error, not read again */
			memset(&k->st[which], 0, sizeof(k->st[which]));
		return;
	}
	if (fstat(fileno(f), &k->st[which]) < 0)
		memset(&k->st[which], 0, sizeof(k->st[which]));
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *l = line + strspn(line, " \t");	/* as OpenSSH: blanks first */

		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';	/* CRLF: libssh2 would keep the \r in the key */
		if (strncmp(l, "@revoked", 8) == 0 && (l[8] == ' ' || l[8] == '\t')) {
			if ((rk = kh_revoked_line(l)) != NULL)
				strvec_push(&k->revoked, rk);
			continue;
		}
		if (strncmp(l, "@cert-authority", 15) == 0 || *l == '\0')
			continue;
		if ((r = kh_pattern_line(k, l)) == 0)
			r = libssh2_knownhost_readline(k->kh, l, strlen(l), LIBSSH2_KNOWNHOST_FILE_OPENSSH);
		if (r != 0 && !warned++)
			log_warnx("%s:%d: known_hosts line skipped: libssh2 cannot parse it", path, lineno);
	}
	free(line);
	fclose(f);
}

/* Free c's copy of known_hosts (none: nothing to do). */
static void
kh_drop(struct ssh_conn *c)
{
	if (c->kh == NULL)
		return;
	if (c->kh->kh)
		libssh2_knownhost_free(c->kh->kh);
	strvec_free(&c->kh->revoked);
	strvec_free(&c->kh->names);
	free(c->kh);
	c->kh = NULL;
}

/* Is c's copy of one known_hosts file (path, which as kh_read's) still
 * the file: same inode, size and modification time, or still no file? */
static int
kh_current1(const struct ssh_conn *c, const char *path, int which)
{
	const struct stat *o = &c->kh->st[which];
	struct stat st;

	if (path == NULL)
		return 1;
	if (stat(path, &st) < 0)
		return errno == ENOENT && o->st_ino == 0 && c->kh->err == 0;
	return st.st_ino == o->st_ino && st.st_dev == o->st_dev && st.st_size == o->st_size &&
	    st.st_mtim.tv_sec == o->st_mtim.tv_sec && st.st_mtim.tv_nsec == o->st_mtim.tv_nsec;
}

/* Read known_hosts (path, then the global file) for c's session into
 * c->kh, unless c already holds a current copy of both.  0, or -1 when
 * libssh2 cannot make a known-hosts list (c->kh NULL); a read error is in
 * c->kh->err.  c->kh is freed by step_hostkey or ssh_close. */
static int
kh_load(struct ssh_conn *c, const char *path)
{
	const char *global = global_kh_path();
	char name[300];

	if (c->kh != NULL && kh_current1(c, path, 0) && kh_current1(c, global, 1))
		return 0;
	kh_drop(c);
	c->kh = xcalloc(1, sizeof(*c->kh));
	if ((c->kh->kh = libssh2_knownhost_init(c->s)) == NULL) {
		kh_drop(c);
		return -1;
	}
	kh_host(c, name, sizeof(name));
	strvec_push(&c->kh->names, name);
	kh_name(c, c->addr, name, sizeof(name));
	if (strcmp(c->addr, c->name) != 0)
		strvec_push(&c->kh->names, name);
	kh_read(c->kh, path, 0);
	if (global != NULL)
		kh_read(c->kh, global, 1);
	return 0;
}

/* The files the host key was checked against, for messages: "PATH", or
 * "PATH or GLOBAL" when there is a global file. */
static void
kh_files(const struct ssh_conn *c, const char *path, char *buf, size_t len)
{
	const char *global = global_kh_path();

	if (global != NULL && c->kh->st[1].st_ino != 0)
		snprintf(buf, len, "%s or %s", path, global);
	else
		snprintf(buf, len, "%s", path);
}

/* The presented host key in base64, as known_hosts writes it. */
static void
key_b64(const char *key, size_t klen, char *buf, size_t len)
{
	if (klen > (len - 1) / 4 * 3)
		klen = 0;	/* longer than any host key: matches nothing */
	EVP_EncodeBlock((unsigned char *)buf, (const unsigned char *)key, (int)klen);
}

/* Which hk_types known_hosts (kh) lists for host at port, a mask of their
 * indexes: checked with a type's bits, a key no entry holds mismatches
 * exactly when an entry of that type names the host (libssh2 matches the
 * names, hashed ones too). */
static unsigned
kh_types_of(LIBSSH2_KNOWNHOSTS *kh, const char *host, int port)
{
	unsigned known = 0;

	for (size_t i = 0; i < nitems(hk_types); i++)
		if (libssh2_knownhost_checkp(kh, host, port, "-", 1, LIBSSH2_KNOWNHOST_TYPE_PLAIN |
		    LIBSSH2_KNOWNHOST_KEYENC_BASE64 | hk_types[i].kh, NULL) ==
		    LIBSSH2_KNOWNHOST_CHECK_MISMATCH)
			known |= 1u << i;
	return known;
}

/* The key types known_hosts lists for the node, under its name or address. */
static unsigned
kh_types(const struct ssh_conn *c, LIBSSH2_KNOWNHOSTS *kh)
{
	int port = c->cfg->port ? c->cfg->port : 22;
	unsigned known = kh_types_of(kh, c->name, port);

	if (strcmp(c->addr, c->name) != 0)
		known |= kh_types_of(kh, c->addr, port);
	return known;
}

/* Is name one of the comma-separated list's? */
static int
alg_listed(const char *list, const char *name)
{
	size_t l = strlen(name);
	const char *p = list;

	while (p != NULL) {
		if (strncmp(p, name, l) == 0 && (p[l] == ',' || p[l] == '\0'))
			return 1;
		if ((p = strchr(p, ',')) != NULL)
			p++;
	}
	return 0;
}

/* Before the handshake, as OpenSSH does: the algorithms of the key types
 * known_hosts lists for the node first, then libssh2's others in its
 * order, so that a node with several host keys (ed25519 and ecdsa, as
 * Debian makes them) presents the one known_hosts holds (libssh2 alone
 * asks for ecdsa first).  A node known under no type keeps libssh2's
 * order; known_hosts' errors are step_hostkey's to report. */
static void
hostkey_pref(struct ssh_conn *c)
{
	char pbuf[4096], *pref = NULL;
	const char **algs = NULL;
	unsigned known = 0;
	int n;

	if (kh_load(c, known_hosts_path(c->cfg, pbuf, sizeof(pbuf))) < 0)
		return;
	if (c->kh->err == 0)
		known = kh_types(c, c->kh->kh);
	if (known == 0)
		return;
	for (size_t i = 0; i < nitems(hk_types); i++)
		if (known & 1u << i)
			str_appendf(&pref, "%s%s", pref ? "," : "", hk_types[i].algs);
	n = libssh2_session_supported_algs(c->s, LIBSSH2_METHOD_HOSTKEY, &algs);
	for (int i = 0; i < n; i++)
		if (!alg_listed(pref, algs[i]))
			str_appendf(&pref, ",%s", algs[i]);
	if (n > 0)
		libssh2_free(c->s, algs);
	if (libssh2_session_method_pref(c->s, LIBSSH2_METHOD_HOSTKEY, pref) != 0)
		log_debug("%s: host key preference '%s' refused: %s", c->name, pref, last_error(c));
	free(pref);
}

/* The names of the key types in mask known ("ssh-ed25519, ssh-rsa"). */
static void
kh_type_names(unsigned known, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nitems(hk_types) && off < len; i++)
		if (known & 1u << i)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
			    hk_types[i].name);
}

/* Check the host key strictly against known_hosts (by name, then address),
 * only against entries of its own type, as OpenSSH does: a node listed
 * under other key types only is known, not new (--accept-new adds no
 * second type). */
static int
step_hostkey(struct ssh_conn *c)
{
	LIBSSH2_KNOWNHOSTS *kh;
	struct libssh2_knownhost *found = NULL;
	char pbuf[4096], fp[128], b64[8192], names[128], files[8300];
	const char *path = known_hosts_path(c->cfg, pbuf, sizeof(pbuf)), *key, *errpath;
	int port = c->cfg->port ? c->cfg->port : 22, r, kh_type, type, revoked, err, tm;
	unsigned other = 0;
	size_t klen;

	if (kh_load(c, path) < 0)
		return fail(c, NS_FAILED, "ssh: knownhost init failed");
	kh = c->kh->kh;
	key = libssh2_session_hostkey(c->s, &klen, &type);
	host_fingerprint(c, fp, sizeof(fp), &kh_type);
	key_b64(key, key ? klen : 0, b64, sizeof(b64));
	revoked = strvec_contains(&c->kh->revoked, b64);
	kh_files(c, path, files, sizeof(files));
	errpath = c->kh->errpath;
	if ((err = c->kh->err) < 0 || revoked) {
		kh_drop(c);
		if (revoked)
			return fail(c, NS_AUTH_FAILED, "host key refused: %s is marked @revoked in %s",
			    fp, files);
		return fail(c, NS_FAILED, "host key check failed: %s: %s", errpath, strerror(-err));
	}
	tm = LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | kh_type;
	r = libssh2_knownhost_checkp(kh, c->name, port, key, klen, tm, &found);
	if (r == LIBSSH2_KNOWNHOST_CHECK_NOTFOUND && strcmp(c->addr, c->name) != 0)
		r = libssh2_knownhost_checkp(kh, c->addr, port, key, klen, tm, &found);
	if (r == LIBSSH2_KNOWNHOST_CHECK_NOTFOUND)
		other = kh_types(c, kh);
	if (r == LIBSSH2_KNOWNHOST_CHECK_NOTFOUND && !other && c->cfg->accept_new) {
		if (kh_type == LIBSSH2_KNOWNHOST_KEY_UNKNOWN ||
		    kh_add(c, kh, path, key, klen, kh_type) < 0)
			r = LIBSSH2_KNOWNHOST_CHECK_FAILURE;
		else
			r = LIBSSH2_KNOWNHOST_CHECK_MATCH;
	}
	kh_drop(c);
	kh_type_names(other, names, sizeof(names));
	switch (r) {
	case LIBSSH2_KNOWNHOST_CHECK_MATCH:
		c->phase = SSH_AUTH;
		return 1;
	case LIBSSH2_KNOWNHOST_CHECK_MISMATCH:
		return fail(c, NS_AUTH_FAILED, "host key refused: %s does NOT match %s (changed host "
		    "key, or someone in between)", fp, files);
	case LIBSSH2_KNOWNHOST_CHECK_NOTFOUND:
		if (other)
			return fail(c, NS_AUTH_FAILED, "host key refused: %s is not in %s, which lists "
			    "the node under another key type only (%s): not added, even with "
			    "--accept-new (check the node's keys, then add it by hand)", fp, files, names);
		return fail(c, NS_AUTH_FAILED, "host key refused: %s is not in %s (check it, then "
		    "--accept-new)", fp, files);
	default:
		return fail(c, NS_FAILED, "host key check failed: %s", path);
	}
}

/* Note a key source refused (for the failure, if every one is). */
static void
refused(struct ssh_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
refused(struct ssh_conn *c, const char *fmt, ...)
{
	size_t l = strlen(c->refused);
	va_list ap;

	if (l && l < sizeof(c->refused) - 2)
		l += (size_t)snprintf(c->refused + l, sizeof(c->refused) - l, "; ");
	va_start(ap, fmt);
	if (l < sizeof(c->refused))
		vsnprintf(c->refused + l, sizeof(c->refused) - l, fmt, ap);
	va_end(ap);
}

/* Key-file authentication: 1 in, 0 again, -1 refused (noted). */
static int
auth_keyfile(struct ssh_conn *c, const char *user, const char *key)
{
	int r = libssh2_userauth_publickey_fromfile_ex(c->s, user, (unsigned)strlen(user), NULL, key,
	    NULL);

	if (r == LIBSSH2_ERROR_EAGAIN)
		return 0;
	if (r != 0) {
		refused(c, "key %s refused (%s)", key, last_error(c));
		return -1;
	}
	return 1;
}

#define AGENT_MS 1000	/* for the ssh-agent's answer to agent_answers */

/* Does the ssh-agent at path answer a request for its keys within
 * AGENT_MS?  libssh2 talks to the agent in blocking mode, on the event
 * loop, with no bound: a hung agent (stopped, or waiting on a prompt) held
 * every node and every deadline for good.  Asked once per process (a hung
 * agent costs AGENT_MS once, not per node).  1 yes, 0 no (why in buf). */
static int
agent_answers(const char *path, char *buf, size_t len)
{
	static _Atomic int known;	/* 1 answers, -1 does not, 0 not asked yet */
	static const unsigned char req[] = { 0, 0, 0, 1, 11 };	/* REQUEST_IDENTITIES */
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pollfd pf = { .events = POLLIN };
	uint64_t end = now_mono_ns() + AGENT_MS * 1000000ull, now;
	char b;

	snprintf(buf, len, "%s: no answer within %.0fs", path, AGENT_MS / 1e3);
	if (known)
		return known > 0;
	known = -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if ((pf.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return 0;
	if (connect(pf.fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    send(pf.fd, req, sizeof(req), MSG_NOSIGNAL) == (ssize_t)sizeof(req))
		while ((now = now_mono_ns()) < end) {
			int r = poll(&pf, 1, (int)((end - now + 999999) / 1000000));

			if (r < 0 && errno == EINTR)
				continue;
			if (r > 0 && recv(pf.fd, &b, 1, 0) == 1)
				known = 1;
			break;
		}
	close(pf.fd);
	return known > 0;
}

/* ssh-agent authentication, each identity in turn: 1 in, 0 again, -1
 * every one refused or no agent to use (noted). */
static int
auth_agent(struct ssh_conn *c, const char *user)
{
	char why[200];
	int r;

	if (c->agent == NULL) {
		if (!agent_answers(getenv("SSH_AUTH_SOCK"), why, sizeof(why))) {
			refused(c, "ssh-agent at %s", why);
			return -1;
		}
		if ((c->agent = libssh2_agent_init(c->s)) == NULL || libssh2_agent_connect(c->agent) != 0 ||
		    libssh2_agent_list_identities(c->agent) != 0) {
			refused(c, "ssh-agent: cannot use it (%s)", last_error(c));
			return -1;
		}
		if (libssh2_agent_get_identity(c->agent, &c->ident, NULL) != 0) {
			refused(c, "ssh-agent holds no keys");
			return -1;
		}
	}
	for (;;) {
		r = libssh2_agent_userauth(c->agent, user, c->ident);
		if (r == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (r == 0)
			return 1;
		c->agent_tried++;
		if (libssh2_agent_get_identity(c->agent, &c->ident, c->ident) != 0) {
			refused(c, "all %d key(s) of ssh-agent refused", c->agent_tried);
			return -1;
		}
	}
}

/* The next key source (c->auth_src) when no --ssh-key, as OpenSSH tries
 * them: ssh-agent when SSH_AUTH_SOCK is set, then each readable
 * ~/.ssh/id_ed25519, id_ecdsa, id_rsa.  1 in, 0 again, -1 none left. */
static int
auth_defaults(struct ssh_conn *c, const char *user)
{
	static const char *const names[] = { "id_ed25519", "id_ecdsa", "id_rsa" };
	const char *home = getenv("HOME");
	char key[4096];
	int r;

	for (;; c->auth_src++) {
		if (c->auth_src == 0) {
			if (getenv("SSH_AUTH_SOCK") == NULL)
				continue;
			if ((r = auth_agent(c, user)) >= 0)
				return r;
			continue;
		}
		if ((size_t)c->auth_src > nitems(names))
			return -1;
		snprintf(key, sizeof(key), "%s/.ssh/%s", home ? home : "/root", names[c->auth_src - 1]);
		if (access(key, R_OK) == 0 && (r = auth_keyfile(c, user, key)) >= 0)
			return r;
	}
}

/* First, as OpenSSH does, the methods the node accepts for user (its
 * answer to "none"): a node that takes no key (passwords only) is said to
 * be one, not reported as refusing each key in turn.  1 go on with keys
 * (or in already: c->phase), 0 again, -1 failed. */
static int
auth_methods(struct ssh_conn *c, const char *user)
{
	char *m = libssh2_userauth_list(c->s, user, (unsigned)strlen(user));
	char list[200];

	if (m == NULL && libssh2_userauth_authenticated(c->s)) {
		c->phase = SSH_READY;
		return 1;
	}
	if (m == NULL && again(c, 0))
		return 0;
	c->methods_asked = 1;
	if (m == NULL || alg_listed(m, "publickey"))
		return 1;
	snprintf(list, sizeof(list), "%s", m);
	return fail(c, NS_AUTH_FAILED, "ssh: %s accepts no key for %s, only %s: knob logs in with "
	    "a key (--ssh-key, ssh-agent, ~/.ssh/id_*): enable PubkeyAuthentication on the node and "
	    "put the public key in %s's authorized_keys", c->name, user, list[0] ? list : "(nothing)",
	    user);
}

/* Authenticate with --ssh-key, else every default source in turn; when
 * all are refused, the failure names each. */
static int
step_auth(struct ssh_conn *c)
{
	const char *user = c->cfg->user ? c->cfg->user : "root";
	int r;

	if (!c->methods_asked && ((r = auth_methods(c, user)) <= 0 || c->phase == SSH_READY))
		return r;
	r = c->cfg->key ? auth_keyfile(c, user, c->cfg->key) : auth_defaults(c, user);
	if (r == 0)
		return 0;
	if (r > 0) {
		c->phase = SSH_READY;
		return 1;
	}
	if (c->refused[0] == '\0')
		return fail(c, NS_AUTH_FAILED, "ssh: no key: give --ssh-key FILE or run ssh-agent");
	return fail(c, NS_AUTH_FAILED, "ssh authentication failed for %s: %s", user, c->refused);
}

int
ssh_step(struct ssh_conn *c)
{
	static int (*const steps[])(struct ssh_conn *) = {
		[SSH_CONNECT] = step_connect,
		[SSH_HANDSHAKE] = step_handshake,
		[SSH_HOSTKEY] = step_hostkey,
		[SSH_AUTH] = step_auth,
	};
	int r;

	while (c->phase != SSH_READY) {
		if ((r = steps[c->phase](c)) <= 0)
			return r;
	}
	return 1;
}

uint32_t
ssh_events(const struct ssh_conn *c)
{
	int dir;
	uint32_t ev = 0;

	if (c->phase == SSH_CONNECT || c->s == NULL)
		return EPOLLOUT;
	dir = libssh2_session_block_directions(c->s);
	if (dir & LIBSSH2_SESSION_BLOCK_INBOUND)
		ev |= EPOLLIN;
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		ev |= EPOLLOUT;
	return ev ? ev : EPOLLIN;
}

/* End c's connection without waiting on the peer: the disconnect goes
 * out if the socket takes it now (a healthy peer's does), then the socket
 * is shut, so whatever libssh2 sends or reads for c after (closing its
 * channels, freeing the session) fails at once instead of waiting for a
 * peer that is gone or stalled.  Once per connection. */
void
ssh_cut(struct ssh_conn *c)
{
	if (c->cut || c->s == NULL)
		return;
	c->cut = 1;
	libssh2_session_set_blocking(c->s, 0);
	libssh2_session_disconnect(c->s, "knobctl done");
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	/* blocking from here: libssh2 finishes freeing (a non-blocking free gives
	 * up with EAGAIN), and nothing can wait on a shut socket (the timeout
	 * only bounds what cannot happen) */
	libssh2_session_set_timeout(c->s, 2000);
	libssh2_session_set_blocking(c->s, 1);
}

void
ssh_close(struct ssh_conn *c)
{
	kh_drop(c);	/* before the session it belongs to */
	if (c->agent) {
		libssh2_agent_disconnect(c->agent);
		libssh2_agent_free(c->agent);
		c->agent = NULL;
	}
	if (c->s) {
		ssh_cut(c);
		libssh2_session_free(c->s);
		c->s = NULL;
		pool_drain(&c->pool);
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* ------------------------------------------------------------ exec */

enum { X_OPEN, X_EXEC, X_STDIN, X_EOF, X_READ, X_CLOSE, X_DONE };

void
ssh_exec_init(struct ssh_exec *x, const char *cmd, const char *in, size_t inlen)
{
	memset(x, 0, sizeof(*x));
	x->cmd = cmd;
	x->in = in;
	x->inlen = inlen;
	x->exit_status = -1;
}

/* Append what the channel has on one stream, up to max. 0 again, 1 EOF, -1. */
static int
drain(LIBSSH2_CHANNEL *ch, int stream, char **buf, size_t *len, size_t max)
{
	char tmp[16384];
	ssize_t n;

	for (;;) {
		n = libssh2_channel_read_ex(ch, stream, tmp, sizeof(tmp));
		if (n == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (n < 0)
			return -1;
		if (n == 0)
			return libssh2_channel_eof(ch) ? 1 : 0;
		if (*len + (size_t)n <= max) {
			*buf = xrealloc(*buf, *len + (size_t)n + 1);
			memcpy(*buf + *len, tmp, (size_t)n);
			*len += (size_t)n;
			(*buf)[*len] = '\0';
		}
	}
}

/* Read stdout and stderr until EOF on both. */
static int
exec_read(struct ssh_conn *c, struct ssh_exec *x)
{
	int a = drain(x->ch, 0, &x->out, &x->outlen, 1 << 20);
	int b = drain(x->ch, SSH_EXTENDED_DATA_STDERR, &x->errout, &x->errlen, 64 << 10);

	if (a < 0 || b < 0)
		return fail(c, NS_FAILED, "ssh: reading '%s': %s", x->cmd, last_error(c));
	return libssh2_channel_eof(x->ch) ? 1 : 0;
}

int
ssh_exec_step(struct ssh_conn *c, struct ssh_exec *x)
{
	ssize_t n;
	int r;

	for (;;) {
		switch (x->phase) {
		case X_OPEN:
			x->ch = libssh2_channel_open_session(c->s);
			if (x->ch == NULL)
				return again(c, 0) ? 0 : fail(c, NS_FAILED, "ssh channel: %s", last_error(c));
			x->phase = X_EXEC;
			break;
		case X_EXEC:
			r = libssh2_channel_exec(x->ch, x->cmd);
			if (r == LIBSSH2_ERROR_EAGAIN)
				return 0;
			if (r != 0)
				return fail(c, NS_FAILED, "ssh exec: %s", last_error(c));
			x->phase = X_STDIN;
			break;
		case X_STDIN:
			while (x->inoff < x->inlen) {
				n = libssh2_channel_write(x->ch, x->in + x->inoff, x->inlen - x->inoff);
				if (n == LIBSSH2_ERROR_EAGAIN)
					return 0;
				if (n < 0)
					return fail(c, NS_FAILED, "ssh write: %s", last_error(c));
				x->inoff += (size_t)n;
			}
			x->phase = X_EOF;
			break;
		case X_EOF:
			if ((r = libssh2_channel_send_eof(x->ch)) == LIBSSH2_ERROR_EAGAIN)
				return 0;
			x->phase = X_READ;
			break;
		case X_READ:
			if ((r = exec_read(c, x)) <= 0)
				return r;
			x->phase = X_CLOSE;
			break;
		case X_CLOSE:
			if ((r = libssh2_channel_close(x->ch)) == LIBSSH2_ERROR_EAGAIN)
				return 0;
			if ((r = libssh2_channel_wait_closed(x->ch)) == LIBSSH2_ERROR_EAGAIN)
				return 0;
			x->exit_status = libssh2_channel_get_exit_status(x->ch);
			x->phase = X_DONE;
			break;
		default:
			return 1;
		}
	}
}

void
ssh_exec_free(struct ssh_exec *x)
{
	if (x->ch)
		libssh2_channel_free(x->ch);
	free(x->out);
	free(x->errout);
	memset(x, 0, sizeof(*x));
}

/* ------------------------------------------------------------ SFTP */

enum { U_OPEN, U_WRITE, U_FSYNC, U_MODE, U_CLOSE, U_DONE };

LIBSSH2_SFTP *
ssh_sftp_open(struct ssh_conn *c, int *againp)
{
	LIBSSH2_SFTP *sftp = libssh2_sftp_init(c->s);

	*againp = sftp == NULL && again(c, 0);
	if (sftp == NULL && !*againp)
		fail(c, NS_FAILED, "sftp: %s", last_error(c));
	return sftp;
}

void
ssh_upload_init(struct ssh_upload *u, const char *path, const void *data, size_t len, long mode)
{
	memset(u, 0, sizeof(*u));
	snprintf(u->path, sizeof(u->path), "%s", path);
	snprintf(u->tmp, sizeof(u->tmp), "%s.knob-new", path);
	u->data = data;
	u->len = len;
	u->mode = mode;
}

/* Write the rest of u's data. */
static int
upload_write(struct ssh_conn *c, struct ssh_upload *u)
{
	ssize_t n;

	while (u->off < u->len) {
		size_t chunk = u->len - u->off > 30000 ? 30000 : u->len - u->off;

		n = libssh2_sftp_write(u->h, (const char *)u->data + u->off, chunk);
		if (n == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (n < 0)
			return fail(c, NS_FAILED, "sftp write %s: %s", u->tmp, last_error(c));
		u->off += (size_t)n;
	}
	return 1;
}

int
ssh_upload_step(struct ssh_conn *c, LIBSSH2_SFTP *sftp, struct ssh_upload *u)
{
	LIBSSH2_SFTP_ATTRIBUTES a = { .flags = LIBSSH2_SFTP_ATTR_PERMISSIONS };
	int r;

	for (;;) {
		switch (u->phase) {
		case U_OPEN:
			u->h = libssh2_sftp_open(sftp, u->tmp, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT |
			    (u->excl ? LIBSSH2_FXF_EXCL : LIBSSH2_FXF_TRUNC), u->mode);
			if (u->h == NULL)
				return again(c, 0) ? 0 : fail(c, NS_FAILED, "sftp open %s: %s", u->tmp,
				    last_error(c));
			u->phase = U_WRITE;
			break;
		case U_WRITE:
			if ((r = upload_write(c, u)) <= 0)
				return r;
			u->phase = U_FSYNC;
			break;
		case U_FSYNC:
			if ((r = libssh2_sftp_fsync(u->h)) == LIBSSH2_ERROR_EAGAIN)
				return 0;
			if (r != 0)
				return fail(c, NS_FAILED, "sftp fsync %s: %s", u->tmp, last_error(c));
			u->phase = U_MODE;
			break;
		case U_MODE:
			/* exact mode whatever the server's umask did at open */
			a.permissions = (unsigned long)u->mode;
			if ((r = libssh2_sftp_fsetstat(u->h, &a)) == LIBSSH2_ERROR_EAGAIN)
				return 0;
			if (r != 0)
				return fail(c, NS_FAILED, "sftp chmod %s: %s", u->tmp, last_error(c));
			u->phase = U_CLOSE;
			break;
		case U_CLOSE:
			if ((r = libssh2_sftp_close(u->h)) == LIBSSH2_ERROR_EAGAIN)
				return 0;
			u->h = NULL;
			u->phase = U_DONE;
			break;
		default:
			return 1;
		}
	}
}

/* Close u's file after a failed upload step: the node's sftp-server keeps
 * the space of a removed file while it holds it open.  1 done, 0 again. */
int
ssh_upload_abort(struct ssh_upload *u)
{
	if (u->h != NULL && libssh2_sftp_close(u->h) == LIBSSH2_ERROR_EAGAIN)
		return 0;
	u->h = NULL;
	return 1;
}
