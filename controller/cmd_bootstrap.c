/* knobctl bootstrap -w NODES: install the agent over SSH (libssh2).
 *
 * Per node, in one event loop over all targets (at most --fanout at once,
 * no thread per node):
 *   ssh      connect, strict host-key check, key or ssh-agent authentication
 *   probe    one exec: make the directories, sha256, mode and owner of what
 *            is installed, with --deb whether dpkg has the package, the
 *            node's certificate; then the directories made root's and
 *            leftover PATH.knob-new files removed
 *   plan     compare hashes, modes and owners; reissue the node certificate
 *            when it is not this CA's, names another node, is revoked or
 *            expires soon
 *   upload   SFTP: each changed file to PATH.knob-new (created new: EXCL),
 *            mode set, fsync'd
 *   install  one exec: chown 0:0 what another user or group owns, chmod
 *            what has the wrong mode, chown 0:0 and mv -f each upload into
 *            place (rename(2): atomic), dpkg -i for a .deb, then the service
 *            command (systemctl by default)
 * then every node that got through is confirmed with a TLS ping on the real
 * agent port (always TLS, whatever --via says); on a node where nothing
 * changed and the agent did not answer, another SSH session runs the service
 * command once and it is pinged again; a last short SSH session removes the
 * service-pending marker of each node whose agent answered after its
 * service command.  Nothing changed on a node: it reports "unchanged". */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "ca.h"
#include "knobctl.h"
#include "log.h"
#include "ssh.h"
#include "tls.h"
#include "util.h"

/* reset-failed: an agent that failed to start 5 times within 300 s
 * (StartLimitBurst) would otherwise not be restarted at all */
#define DEFAULT_SERVICE_CMD "systemctl daemon-reload && systemctl enable knobd.service && " \
	"{ systemctl reset-failed knobd.service 2>/dev/null || true; } && " \
	"systemctl restart knobd.service"
#define CERT_MIN_DAYS 30	/* reissue a node certificate expiring sooner */
/* Made before an install's first mv, removed (over SSH again) only once
 * the agent answered over TLS after it: while it is there, a re-run runs
 * the service command again even when no file differs (a failed restart,
 * or an agent that died right after a start that exited 0, is not left
 * for good). */
#define SVC_PENDING "etc/knob/bootstrap-service-pending"
#define SVC_PENDING_MARK "--- service pending"
#define KEY_MARK "--- key "	/* then ok, missing, unreadable, differs or unchecked */
/* then the octal mode, owner and group (numeric) and the path of an installed file */
#define MODE_MARK "--- mode "
/* --deb: then dpkg-query's "${Status} ${Version}" of the package (nothing:
 * dpkg knows no such package) */
#define DPKG_MARK "--- dpkg "
#define DEB_PACKAGE "knob"	/* pkg/control.in */

/* The files bootstrap installs, then (from BF_DIRS on) the directories of
 * its own that the probe makes. */
enum { BF_KNOBD, BF_DEB, BF_CA, BF_CRL, BF_CRT, BF_KEY, BF_UNIT, BF_DIR_ETC, BF_DIR_STATE,
	BF_DIR_CACHE, BF__COUNT, BF_DIRS = BF_DIR_ETC };

/* What bootstrap installs, relative to the node's root (mode -1: not set by
 * bootstrap; the probe makes var/lib/knob 0700 each time). */
static const struct {
	const char *path;
	long mode;
	const char *label;
} bfiles[BF__COUNT] = {
	[BF_KNOBD] = { "usr/sbin/knobd", 0755, "knobd" },
	[BF_DEB] = { "var/cache/knob/knob.deb", 0644, "knob.deb" },
	[BF_CA] = { "etc/knob/ca.crt", 0644, "ca.crt" },
	/* beside ca.crt, where the agent looks (tls_crl_path) */
	[BF_CRL] = { "etc/knob/" TLS_CRL_FILE, 0644, TLS_CRL_FILE },
	[BF_CRT] = { "etc/knob/node.crt", 0644, "node.crt" },
	[BF_KEY] = { "etc/knob/node.key", 0600, "node.key" },
	[BF_UNIT] = { "lib/systemd/system/knobd.service", 0644, "knobd.service" },
	[BF_DIR_ETC] = { "etc/knob", -1, "etc/knob" },
	[BF_DIR_STATE] = { "var/lib/knob", -1, "var/lib/knob" },
	[BF_DIR_CACHE] = { "var/cache/knob", -1, "var/cache/knob" },
};

enum { B_SSH, B_PROBE, B_SFTP, B_UPLOAD, B_SFTP_END, B_INSTALL, B_CLEAR, B_UNDO, B_UNDO_RM,
	B_OK, B_FAILED };

/* The SSH passes: install (probe, upload, install); restart (the service
 * command on nodes where nothing changed and the agent did not answer);
 * clear (remove the markers of nodes whose agent answered after it). */
enum { P_INSTALL, P_RESTART, P_CLEAR };

struct bnode {
	struct fo_node *fn;	/* name, address, final status */
	struct ssh_conn ssh;
	int step;
	int started;
	uint64_t deadline_ns;
	struct ssh_exec x;
	char *cmd;		/* the current exec's command */
	LIBSSH2_SFTP *sftp;
	int up[BF__COUNT];	/* files to upload, in order */
	int nup, cur;
	struct ssh_upload u;
	char *crt, *key;	/* this node's new certificate (PEM) */
	char remote_hash[BF__COUNT][65];
	long remote_mode[BF__COUNT];	/* -1: no such file */
	long remote_uid[BF__COUNT], remote_gid[BF__COUNT];
	int fix[BF__COUNT];	/* files kept whose mode the install sets */
	int nfix;
	int own[BF__COUNT];	/* files kept whose owner the install sets to 0:0 */
	int nown;
	char note[400];
	int knobd_was_missing, knobd_replaced;
	int pkg;		/* --deb: dpkg's database has the package installed */
	char pkg_version[64];
	int svc_pending;	/* the last install's service command did not succeed */
	int svc_ran;		/* this run's install (and service command) succeeded */
	int restarted;		/* nothing changed, the agent did not answer: service command run */
	int rm_crl;		/* the node has a ca.crl, the CA none: remove it */
	int in_pass;		/* takes part in this restart or clear pass */
	char *root;		/* --root for this node ({node} filled in) */
	char undo_err[512];	/* the upload's failure, while its leftovers are removed */
	int undo_status;	/* and its status (NS_FAILED, NS_TIMEOUT for a stall) */
};

/* The run: options, what is installed (same for every node), nodes. */
struct boot {
	struct ctl *ctl;
	const char *root, *deb, *unit, *service_cmd;
	char *knobd;		/* the agent binary's path */
	int upgrade;
	char cadir[4096];
	char *data[BF__COUNT];	/* local contents (BF_CRT/BF_KEY per node) */
	size_t len[BF__COUNT];
	char hash[BF__COUNT][65];
	struct fanout fo;
	struct bnode *b;
	int epfd;
	int pass;		/* P_INSTALL, P_RESTART or P_CLEAR */
};

enum { O_ROOT = 256, O_KNOBD, O_DEB, O_UNIT, O_SERVICE, O_UPGRADE };

static const struct opt boot_opts[] = {
	{ O_KNOBD, "knobd", OPT_ARG, "FILE", "agent binary to install (default: the knobd next to knobctl, else /usr/sbin/knobd)", 0 },
	{ O_DEB, "deb", OPT_ARG, "FILE", "install this .deb with dpkg -i instead of the binary and unit", 0 },
	{ O_UNIT, "unit", OPT_ARG, "FILE", "systemd unit (default /lib/systemd/system/knobd.service, else the source tree's)", 0 },
	{ O_SERVICE, "service-cmd", OPT_ARG, "CMD", "run on the node after a change ({root}, {node} substituted; "
	    "default: " DEFAULT_SERVICE_CMD ")", 0 },
	{ O_UPGRADE, "upgrade", OPT_NOARG, NULL, "replace a knobd that differs and restart the agent "
	    "(journal and originals stay)", 0 },
	{ O_ROOT, "root", OPT_ARG, "DIR", "install under DIR on the node ({node} substituted; containers, tests; default /)", 0 },
	OPT_END
};

/* Read a local file into b's slot f (bounded at 256 MiB). 0, 1 when
 * missing_ok and there is no such file (ENOENT, nothing else), or -1
 * (printed). */
static int
load_local(struct boot *b, int f, const char *path, int missing_ok)
{
	int r = read_file_bounded(path, 256u << 20, &b->data[f], &b->len[f]);

	if (r == -ENOENT && missing_ok)
		return 1;
	if (r < 0) {
		fprintf(stderr, "knobctl bootstrap: %s: %s\n", path, strerror(-r));
		return -1;
	}
	sha256_hex(b->data[f], b->len[f], b->hash[f]);
	return 0;
}

/* The unit: --unit, the installed one, or the source tree's with the
 * sbin directory filled in. 0 or -1. */
static int
load_unit(struct boot *b)
{
	char dir[4096], path[4200], *s, *at;

	if (b->unit)
		return load_local(b, BF_UNIT, b->unit, 0);
	if (access("/lib/systemd/system/knobd.service", R_OK) == 0)
		return load_local(b, BF_UNIT, "/lib/systemd/system/knobd.service", 0);
	ctl_exe_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/../agent/knobd.service", dir);
	if (load_local(b, BF_UNIT, path, 0) < 0)
		return -1;
	while ((at = strstr(b->data[BF_UNIT], "@SBINDIR@")) != NULL) {
		*at = '\0';
		s = xasprintf("%s/usr/sbin%s", b->data[BF_UNIT], at + 9);
		free(b->data[BF_UNIT]);
		b->data[BF_UNIT] = s;
	}
	b->len[BF_UNIT] = strlen(b->data[BF_UNIT]);
	sha256_hex(b->data[BF_UNIT], b->len[BF_UNIT], b->hash[BF_UNIT]);
	return 0;
}

/* Everything every node gets: agent (or .deb), unit, CA certificate, CRL. */
static int
load_sources(struct boot *b)
{
	char path[4200], err[PATH_MAX + 256];

	if (ctl_ca_dir(b->ctl, b->cadir, sizeof(b->cadir)) < 0) {
		fprintf(stderr, "knobctl bootstrap: no cluster CA: the inventory's <tls ca=...> "
		    "(or --ca) names the CA certificate, its key next to it\n");
		return -1;
	}
	/* a renew a crash stopped is finished first: this controller's own
	 * pair may be the one it left half done */
	if (ca_recover(b->cadir, err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl bootstrap: %s\n", err);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", b->cadir, CA_CERT_FILE);
	if (load_local(b, BF_CA, path, 0) < 0)
		return -1;
	ctl_ca_expiry_warn(b->ctl, "bootstrap", CERT_MIN_DAYS);
	tls_crl_path(b->cadir, path, sizeof(path));
	/* no such file: no CRL (the nodes' goes); one that cannot be read is
	 * an error, never "nothing revoked" */
	if (load_local(b, BF_CRL, path, 1) < 0)
		return -1;
	if (b->deb)
		return load_local(b, BF_DEB, b->deb, 0);
	if (b->knobd == NULL) {
		ctl_knobd_path(path, sizeof(path));
		b->knobd = xstrdup(path);
	}
	return load_local(b, BF_KNOBD, b->knobd, 0) < 0 ? -1 : load_unit(b);
}

/* Would the CRL bootstrap pushes revoke this controller's own certificate
 * (every agent would then refuse it: locked out of the fleet)?  0 no, -1
 * it would or either cannot be read (printed; no node is touched). */
static int
crl_spares_self(const struct boot *b)
{
	const char *cert = b->ctl->cert ? b->ctl->cert : b->ctl->inv->cert;
	char why[1024], crl[4096];
	int r;

	if (b->data[BF_CRL] == NULL || cert == NULL)
		return 0;
	tls_crl_path(b->cadir, crl, sizeof(crl));
	if ((r = ca_crl_revokes(b->data[BF_CRL], b->len[BF_CRL], cert, why, sizeof(why))) == 0)
		return 0;
	if (r < 0)
		fprintf(stderr, "knobctl bootstrap: checking %s against %s: %s\n", cert, crl, why);
	else
		fprintf(stderr, "knobctl bootstrap: %s revokes this controller's own certificate %s: "
		    "pushed, every agent would refuse this controller; not pushed, no node touched "
		    "(use a controller certificate that is not revoked: --cert/--key or the "
		    "inventory's <tls cert=...>)\n", crl, why);
	return -1;
}

/* The node's path for a file under its --root. */
static char *
node_path(const struct bnode *n, const char *rel)
{
	size_t l = strlen(n->root);

	return xasprintf("%.*s/%s", (int)(l && n->root[l - 1] == '/' ? l - 1 : l), n->root, rel);
}

/* The probe's check of node.key against node.crt, on the node: the two
 * public keys compared there, only a word comes back (never the key). */
static void
probe_key(char **cmd)
{
	const char *key = bfiles[BF_KEY].path, *crt = bfiles[BF_CRT].path;

	str_appendf(cmd, "; if [ ! -f %s ]; then echo '" KEY_MARK "missing'; "
	    "elif ! command -v openssl >/dev/null 2>&1; then echo '" KEY_MARK "unchecked'; "
	    "else k=$(openssl pkey -in %s -pubout 2>/dev/null) || k=; "
	    "c=$(openssl x509 -in %s -noout -pubkey 2>/dev/null) || c=; "
	    "if [ -z \"$k\" ]; then echo '" KEY_MARK "unreadable'; "
	    "elif [ \"$k\" = \"$c\" ]; then echo '" KEY_MARK "ok'; "
	    "else echo '" KEY_MARK "differs'; fi; fi", key, key, crt);
}

/* Before any upload, as root: the directories of bootstrap's own made
 * root's (their owner could plant a file after the probe; the owner
 * reported is the one stat saw, so the line still says "owner fixed"),
 * then every leftover PATH.knob-new removed (rm -f removes a symbolic
 * link, never what it points to); the uploads create them anew (EXCL). */
static void
probe_clean(char **cmd)
{
	str_appendf(cmd, "; chown 0:0");
	for (int f = BF_DIRS; f < BF__COUNT; f++)
		str_appendf(cmd, " %s", bfiles[f].path);
	str_appendf(cmd, " && rm -f");
	for (int f = 0; f < BF_DIRS; f++)
		str_appendf(cmd, " %s.knob-new", bfiles[f].path);
	str_appendf(cmd, " || exit 1");
}

/* --deb, first in the probe: no dpkg-query on the node stops it (exit 3,
 * said on stderr) before anything is made. */
static void
probe_dpkg_there(char **cmd)
{
	str_appendf(cmd, "; if ! command -v dpkg-query >/dev/null 2>&1; then echo 'no dpkg-query "
	    "on the node: --deb installs the package with dpkg' >&2; exit 3; fi");
}

/* --deb: whether dpkg's database (the node's, or the one under its --root)
 * has the package: DPKG_MARK and its status and version (from stdout
 * alone: a warning on stderr is no status), nothing after the mark when
 * dpkg knows no such package (exit 1); dpkg-query failing otherwise stops
 * the probe, its stderr said. */
static void
probe_dpkg(char **cmd)
{
	static const char *q = "-W -f='${Status} ${Version}' " DEB_PACKAGE " 2>&1 >&3";

	str_appendf(cmd, "; printf '%%s' '" DPKG_MARK "'; if [ \"$R\" = / ]; then "
	    "e=$(dpkg-query %s); else e=$(dpkg-query --admindir=\"$R/var/lib/dpkg\" %s); fi 3>&1; "
	    "r=$?; echo; case $r in 0|1) ;; *) echo \"dpkg-query: $e\" >&2; exit 3;; esac", q, q);
}

/* The probe: directories, hashes, modes and owners of what is there,
 * whether dpkg has the package (--deb), node.key's check, the node
 * certificate. */
static char *
probe_cmd(const struct boot *b, const struct bnode *n)
{
	char *q = sh_quote(n->root), *cmd = NULL;

	str_appendf(&cmd, "R=%s", q);
	if (b->data[BF_DEB] != NULL)
		probe_dpkg_there(&cmd);
	str_appendf(&cmd, "; mkdir -p \"$R\" && cd \"$R\" && mkdir -p etc/knob var/lib/knob "
	    "usr/sbin lib/systemd/system var/cache/knob && chmod 0700 var/lib/knob || exit 1");
	if (b->data[BF_DEB] != NULL)
		probe_dpkg(&cmd);
	str_appendf(&cmd, "; for f in");
	for (int f = 0; f < BF_DIRS; f++)
		if (f != BF_KEY && f != BF_CRT)
			str_appendf(&cmd, " %s", bfiles[f].path);
	str_appendf(&cmd, "; do if [ -f \"$f\" ]; then sha256sum \"$f\"; fi; done; for f in");
	for (int f = 0; f < BF__COUNT; f++)
		str_appendf(&cmd, " %s", bfiles[f].path);
	str_appendf(&cmd, "; do if [ -f \"$f\" ] || [ -d \"$f\" ]; then stat -L -c '" MODE_MARK
	    "%%a %%u %%g %%n' \"$f\"; fi; done; if [ -f %s ]; then echo '%s'; fi", SVC_PENDING,
	    SVC_PENDING_MARK);
	probe_clean(&cmd);
	probe_key(&cmd);
	str_appendf(&cmd, "; echo '--- cert'; cat %s 2>/dev/null; true", bfiles[BF_CRT].path);
	free(q);
	return cmd;
}

/* One number of a probe line at *p, in base, then a blank (or the end at
 * stop); *p moves past it.  The number, or -1. */
static long
probe_num(const char **p, const char *stop, int base)
{
	char *end;
	long v;

	if (**p < '0' || **p > '9')
		return -1;
	v = strtol(*p, &end, base);
	if (end > stop || (end < stop && *end != ' ') || v < 0 || v == LONG_MAX)
		return -1;
	*p = end < stop ? end + 1 : end;
	return v;
}

/* One line of the probe (l, ll bytes long) about file f: "SHA256  PATH"
 * into n->remote_hash[f], MODE_MARK "OCTAL UID GID PATH" into
 * n->remote_mode[f], remote_uid[f] and remote_gid[f]. */
static void
probe_line(struct bnode *n, int f, const char *l, size_t ll)
{
	const char *path = bfiles[f].path, *p, *stop;
	size_t pl = strlen(path), ml = strlen(MODE_MARK);
	long m, u, g;

	if (ll == 66 + pl && strncmp(l + 66, path, pl) == 0) {
		snprintf(n->remote_hash[f], 65, "%.64s", l);
		return;
	}
	if (ll < ml + pl + 2 || strncmp(l, MODE_MARK, ml) != 0 || l[ll - pl - 1] != ' ' ||
	    strncmp(l + ll - pl, path, pl) != 0)
		return;
	p = l + ml;
	stop = l + ll - pl - 1;
	m = probe_num(&p, stop, 8);
	u = probe_num(&p, stop, 10);
	g = probe_num(&p, stop, 10);
	if (p != stop || m < 0 || m > 07777 || u < 0 || g < 0)
		return;
	n->remote_mode[f] = m;
	n->remote_uid[f] = u;
	n->remote_gid[f] = g;
}

/* The hashes, modes and owners in the probe's output (before the
 * certificate). */
static void
parse_probe(struct bnode *n, const char *out)
{
	for (int f = 0; f < BF__COUNT; f++)
		n->remote_mode[f] = -1;
	for (const char *l = out; l && *l && strncmp(l, "--- cert", 8) != 0;) {
		const char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);

		for (int f = 0; f < BF__COUNT; f++)
			probe_line(n, f, l, ll);
		l = nl ? nl + 1 : NULL;
	}
}

/* What the probe said of node.key (before the certificate): 0 it matches
 * node.crt (or could not be checked: a note says so), 1 it does not (why
 * says how). */
static int
key_bad(struct bnode *n, const char *out, char *why, size_t whylen)
{
	const char *k = strstr(out, KEY_MARK), *cert = strstr(out, "--- cert\n");
	static const struct { const char *word, *why; } said[] = {
		{ "missing\n", "node.key missing" },
		{ "unreadable\n", "node.key unreadable" },
		{ "differs\n", "node.key does not match node.crt" },
	};

	if (k == NULL || (cert != NULL && k > cert))
		return 0;
	k += strlen(KEY_MARK);
	if (strncmp(k, "unchecked\n", 10) == 0)
		snprintf(n->note, sizeof(n->note), "node.key not checked (no openssl on the node)");
	for (size_t i = 0; i < nitems(said); i++)
		if (strncmp(k, said[i].word, strlen(said[i].word)) == 0) {
			snprintf(why, whylen, "%s", said[i].why);
			return 1;
		}
	return 0;
}

/* The node's certificate: keep it, or issue a new key and certificate
 * (also when node.key is missing or does not match). */
static int
plan_cert(struct boot *b, struct bnode *n, const char *out)
{
	const char *pem = strstr(out, "--- cert\n");
	char why[256], err[512];
	int r;

	r = ca_check_leaf(b->cadir, pem ? pem + 9 : "", n->fn->name, CERT_MIN_DAYS, why, sizeof(why));
	if (r < 0) {
		snprintf(n->ssh.err, sizeof(n->ssh.err), "CA: %s", why);
		return -1;
	}
	if (r == 0 && !key_bad(n, out, why, sizeof(why)))
		return 0;
	if (r == 0)
		snprintf(n->note, sizeof(n->note), "%s: new key and certificate", why);
	if (ca_issue_pem(b->cadir, n->fn->name, 0, &n->crt, &n->key, err, sizeof(err)) < 0) {
		snprintf(n->ssh.err, sizeof(n->ssh.err), "issuing the node certificate: %s", err);
		return -1;
	}
	n->up[n->nup++] = BF_CRT;
	n->up[n->nup++] = BF_KEY;
	return 0;
}

/* Is file f among n's uploads (which set its mode)? */
static int
uploading(const struct bnode *n, int f)
{
	for (int i = 0; i < n->nup; i++)
		if (n->up[i] == f)
			return 1;
	return 0;
}

/* The files that stay but have another mode than bootstrap gives them (a
 * node.key left world-readable; the install chmods them) or another owner
 * or group than root's, 0:0 (a node.key its owner could read, a knobd its
 * owner could replace, an /etc/knob whose owner could replace node.key;
 * the install chowns them).  Only files that are this controller's (same
 * hash; the node's own key and certificate) and its own directories: a
 * knobd kept without --upgrade, or what a --deb installed, is not. */
static void
plan_fixes(const struct boot *b, struct bnode *n)
{
	for (int f = 0; f < BF__COUNT; f++) {
		if (n->remote_mode[f] < 0 || uploading(n, f))
			continue;
		if (f < BF_DIRS && f != BF_CRT && f != BF_KEY &&
		    (b->data[f] == NULL || strcmp(n->remote_hash[f], b->hash[f]) != 0))
			continue;
		if (bfiles[f].mode >= 0 && n->remote_mode[f] != bfiles[f].mode)
			n->fix[n->nfix++] = f;
		if (n->remote_uid[f] != 0 || n->remote_gid[f] != 0)
			n->own[n->nown++] = f;
	}
}

/* What the probe said of the package (DPKG_MARK, before the
 * certificate): n->pkg when dpkg has it installed (any state but
 * not-installed and config-files: unpacked, half-configured... too), and
 * its version. */
static void
parse_pkg(struct bnode *n, const char *out)
{
	const char *p = strstr(out, DPKG_MARK), *cert = strstr(out, "--- cert\n");
	char line[160], want[16], flag[16], state[32];

	n->pkg = 0;
	n->pkg_version[0] = '\0';
	if (p == NULL || (cert != NULL && p > cert))
		return;
	p += strlen(DPKG_MARK);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
	if (sscanf(line, "%15s %15s %31s %63[^\n]", want, flag, state, n->pkg_version) < 3)
		return;
	n->pkg = strcmp(state, "not-installed") != 0 && strcmp(state, "config-files") != 0;
}

/* Is a knob of its own already on n for file f (BF_KNOBD or BF_DEB): the
 * file itself; for a .deb the package in dpkg's database (whether or not
 * its knobd is still there), or a knobd no package installed (make
 * install, a copy), which the package would overwrite. */
static int
knob_present(const struct bnode *n, int f)
{
	if (f == BF_DEB)
		return n->pkg || n->remote_hash[BF_KNOBD][0] != '\0';
	return n->remote_hash[f][0] != '\0';
}

/* n's note on a knob (file f) kept since it differs and no --upgrade. */
static void
note_differs(struct bnode *n, int f)
{
	char *knobd;

	if (f == BF_KNOBD)
		snprintf(n->note, sizeof(n->note), "%s differs from this controller's (--upgrade "
		    "replaces it)", bfiles[f].label);
	else if (n->pkg)
		snprintf(n->note, sizeof(n->note), "the package " DEB_PACKAGE " %s is installed "
		    "(dpkg), not from this controller's knob.deb (--upgrade replaces it)",
		    n->pkg_version);
	else {
		knobd = node_path(n, bfiles[BF_KNOBD].path);
		snprintf(n->note, sizeof(n->note), "%s is there but no package installed it "
		    "(make install?): knob.deb not installed over it (--upgrade installs it)", knobd);
		free(knobd);
	}
}

/* Which files to send: whatever differs from here (knobd, or the .deb,
 * only with --upgrade once a knobd is installed), and the certificate
 * when needed; whether to remove the node's CRL. */
static int
plan(struct boot *b, struct bnode *n, const char *out)
{
	const char *mark = strstr(out, SVC_PENDING_MARK), *cert = strstr(out, "--- cert\n");

	parse_probe(n, out);
	parse_pkg(n, out);
	n->svc_pending = mark != NULL && (cert == NULL || mark < cert);
	for (int f = 0; f < BF__COUNT; f++) {
		if (b->data[f] == NULL || f == BF_CRT || f == BF_KEY)
			continue;
		if (strcmp(n->remote_hash[f], b->hash[f]) == 0)
			continue;
		if ((f == BF_KNOBD || f == BF_DEB) && knob_present(n, f) && !b->upgrade) {
			note_differs(n, f);
			continue;
		}
		if (f == BF_KNOBD || f == BF_DEB) {
			n->knobd_was_missing = !knob_present(n, f);
			n->knobd_replaced = !n->knobd_was_missing;
		}
		n->up[n->nup++] = f;
	}
	/* no CRL here: none there either (one of an old CA refuses everyone) */
	n->rm_crl = b->data[BF_CRL] == NULL && n->remote_hash[BF_CRL][0] != '\0';
	if (plan_cert(b, n, out) < 0)
		return -1;
	plan_fixes(b, n);
	return 0;
}

/* t with {root} and {node} filled in for n (root may be NULL: not yet known). */
static char *
subst(const char *t, const char *root, const char *node)
{
	char *s = NULL;

	str_appendf(&s, "%s", "");
	while (*t) {
		if (root && strncmp(t, "{root}", 6) == 0) {
			str_appendf(&s, "%s", root);
			t += 6;
		} else if (strncmp(t, "{node}", 6) == 0) {
			str_appendf(&s, "%s", node);
			t += 6;
		} else
			str_appendf(&s, "%c", *t++);
	}
	return s;
}

/* Does n's install run dpkg -i: a new .deb, or the same one again when
 * the last install did not get through (its dpkg may have failed). */
static int
deb_install(const struct boot *b, const struct bnode *n)
{
	if (uploading(n, BF_DEB))
		return 1;
	return n->svc_pending && b->data[BF_DEB] != NULL &&
	    strcmp(n->remote_hash[BF_DEB], b->hash[BF_DEB]) == 0;
}

/* Does n's install run the service command: a file sent or removed, the
 * last one's not confirmed, or an agent that did not answer (a mode or
 * owner fixed alone does not restart the agent). */
static int
needs_service(const struct bnode *n)
{
	return n->nup || n->rm_crl || n->svc_pending || n->restarted;
}

/* chown 0:0 the files another owns, chmod those whose mode is wrong (after:
 * a chown may clear set-id bits), then (when needs_service) mv -f
 * each upload into place, remove a CRL the CA does not have, dpkg -i a new
 * .deb, then the service (the marker stays). */
static char *
install_cmd(const struct boot *b, const struct bnode *n)
{
	char *q = sh_quote(n->root), *cmd = NULL, *svc;

	str_appendf(&cmd, "R=%s; cd \"$R\"", q);
	free(q);
	for (int i = 0; i < n->nown; i++)
		str_appendf(&cmd, " && chown 0:0 %s", bfiles[n->own[i]].path);
	for (int i = 0; i < n->nfix; i++)
		str_appendf(&cmd, " && chmod %04lo %s", bfiles[n->fix[i]].mode, bfiles[n->fix[i]].path);
	if (!needs_service(n))
		return cmd;
	svc = subst(b->service_cmd ? b->service_cmd : DEFAULT_SERVICE_CMD, n->root, n->fn->name);
	str_appendf(&cmd, " && : > %s", SVC_PENDING);
	for (int i = 0; i < n->nup; i++)
		str_appendf(&cmd, " && chown 0:0 %s.knob-new && mv -f %s.knob-new %s",
		    bfiles[n->up[i]].path, bfiles[n->up[i]].path, bfiles[n->up[i]].path);
	if (n->rm_crl)
		str_appendf(&cmd, " && rm -f %s", bfiles[BF_CRL].path);
	if (deb_install(b, n))
		str_appendf(&cmd, " && if [ \"$R\" = / ]; then dpkg -i %s; else dpkg --root=\"$R\" -i %s; fi",
		    bfiles[BF_DEB].path, bfiles[BF_DEB].path);
	/* a subshell: a service command that cd's or exits still ends here;
	 * the marker stays until the agent answers (clear_markers) */
	str_appendf(&cmd, " && ( %s )", svc);
	free(svc);
	return cmd;
}

/* Remove the service-pending marker (the agent answered). */
static char *
clear_cmd(const struct bnode *n)
{
	char *q = sh_quote(n->root), *cmd = xasprintf("rm -f %s/%s", q, SVC_PENDING);

	free(q);
	return cmd;
}

/* Contents to upload for file f of node n. */
static void
file_data(const struct boot *b, const struct bnode *n, int f, const void **data, size_t *len)
{
	if (f == BF_CRT || f == BF_KEY) {
		*data = f == BF_CRT ? n->crt : n->key;
		*len = strlen(*data);
		return;
	}
	*data = b->data[f];
	*len = b->len[f];
}

/* Run n->cmd on an exec channel; 1 when it exited 0. */
static int
run_exec(struct bnode *n, const char *what)
{
	int r = ssh_exec_step(&n->ssh, &n->x);

	if (r <= 0)
		return r;
	if (n->x.exit_status != 0) {
		const char *e = n->x.errout ? n->x.errout : "";
		size_t l = strlen(e);

		while (l && e[l - 1] == '\n')
			l--;
		snprintf(n->ssh.err, sizeof(n->ssh.err), "%s failed (exit %d)%s%.*s", what,
		    n->x.exit_status, l ? ": " : "", (int)l, e);
		n->ssh.fail_status = NS_FAILED;
		return -1;
	}
	return 1;
}

static void
start_exec(struct bnode *n, char *cmd)
{
	free(n->cmd);
	n->cmd = cmd;
	ssh_exec_free(&n->x);
	ssh_exec_init(&n->x, n->cmd, NULL, 0);
}

static void
start_upload(struct boot *b, struct bnode *n)
{
	const void *data;
	size_t len;
	char *path = node_path(n, bfiles[n->up[n->cur]].path);

	file_data(b, n, n->up[n->cur], &data, &len);
	ssh_upload_init(&n->u, path, data, len, bfiles[n->up[n->cur]].mode);
	n->u.excl = 1;	/* the probe removed any leftover: never follow or reuse one */
	free(path);
}

/* The first exec of this pass on n's new session. */
static void
pass_start(struct boot *b, struct bnode *n)
{
	static const int first[] = { [P_INSTALL] = B_PROBE, [P_RESTART] = B_INSTALL,
	    [P_CLEAR] = B_CLEAR };

	start_exec(n, b->pass == P_INSTALL ? probe_cmd(b, n) : b->pass == P_RESTART ?
	    install_cmd(b, n) : clear_cmd(n));
	n->step = first[b->pass];
}

/* An upload to n failed (a full disk, say): its error kept, on to
 * removing what the uploads left on the node (B_UNDO).  1. */
static int
upload_failed(struct bnode *n)
{
	snprintf(n->undo_err, sizeof(n->undo_err), "%s", n->ssh.err);
	n->undo_status = NS_FAILED;
	n->step = B_UNDO;
	return 1;
}

/* After a failed upload: every PATH.knob-new of n's uploads removed (a
 * part of knobd must not keep the node's disk full), then the KiB free
 * on the file system of the file that failed. */
static char *
undo_cmd(const struct bnode *n)
{
	char *q = sh_quote(n->root), *cmd = NULL, dir[256];
	const char *path = bfiles[n->up[n->cur]].path, *slash = strrchr(path, '/');

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	str_appendf(&cmd, "R=%s; cd \"$R\" && rm -f", q);
	free(q);
	for (int i = 0; i < n->nup; i++)
		str_appendf(&cmd, " %s.knob-new", bfiles[n->up[i]].path);
	str_appendf(&cmd, " && { df -Pk %s | awk 'NR == 2 { print $4 }'; }", dir);
	return cmd;
}

/* n's failure after undo_cmd: the upload's error and whether its
 * leftovers went; when they did, the room there is against the size of
 * the file that did not fit. */
static void
undo_report(struct bnode *n, int removed)
{
	const char *path = bfiles[n->up[n->cur]].path, *slash = strrchr(path, '/');
	unsigned long need = (unsigned long)((n->u.len + 1023) / 1024);
	char *end = NULL, why[96], part[300];
	long kib = removed && n->x.out ? strtol(n->x.out, &end, 10) : -1;
	size_t l;

	snprintf(why, sizeof(why), "%s", n->ssh.err);
	snprintf(part, sizeof(part), "%s.knob-new", path);
	ssh_undo_text(n->ssh.err, sizeof(n->ssh.err), n->undo_err, "partial upload", removed, part,
	    why, "the next run removes it");
	l = strlen(n->ssh.err);
	if (removed && end != n->x.out && kib >= 0 && n->undo_status != NS_TIMEOUT)
		snprintf(n->ssh.err + l, sizeof(n->ssh.err) - l, "; %.*s on the node has %ld KiB "
		    "free, %s needs %lu KiB%s", slash ? (int)(slash - path) : 1, slash ? path : ".",
		    kib, slash ? slash + 1 : path, need, (unsigned long)kib < need ? " (disk full)" : "");
	n->ssh.fail_status = n->undo_status;
}

/* n's upload made no progress within --timeout (the node's sftp-server
 * or disk stopped answering): its error kept, the leftovers removed by an
 * exec on the same session, with one more --timeout for it.  The sftp
 * handle is not closed first (its server would not answer that either);
 * when the session itself is dead the exec fails and the line says the
 * next run's probe removes them.  0 (nothing to undo: not uploading) or 1. */
static int
upload_stalled(struct boot *b, struct bnode *n)
{
	if (n->step != B_UPLOAD)
		return 0;
	snprintf(n->undo_err, sizeof(n->undo_err), "%s", n->ssh.err);
	n->undo_status = NS_TIMEOUT;
	start_exec(n, undo_cmd(n));
	n->step = B_UNDO_RM;
	n->deadline_ns = now_mono_ns() + (uint64_t)(b->ctl->timeout * 1e9);
	return 1;
}

/* The undo itself made no progress within --timeout: n fails with the
 * upload's error, its leftovers not removed.  0 (not undoing) or 1. */
static int
undo_stalled(struct bnode *n)
{
	if (n->step != B_UNDO && n->step != B_UNDO_RM)
		return 0;
	undo_report(n, 0);
	return 1;
}

/* One step of node n's machine: 1 moved on, 0 again, -1 failed. */
static int
node_step(struct boot *b, struct bnode *n)
{
	int r, ag;

	switch (n->step) {
	case B_SSH:
		if ((r = ssh_step(&n->ssh)) <= 0)
			return r;
		pass_start(b, n);
		return 1;
	case B_PROBE:
		if ((r = run_exec(n, "probe")) <= 0)
			return r;
		if (plan(b, n, n->x.out ? n->x.out : "") < 0) {
			n->ssh.fail_status = NS_FAILED;
			return -1;
		}
		if (n->nup == 0 && (n->svc_pending || n->rm_crl || n->nfix || n->nown)) {	/* nothing to send */
			start_exec(n, install_cmd(b, n));
			n->step = B_INSTALL;
		} else
			n->step = n->nup ? B_SFTP : B_OK;
		return 1;
	case B_SFTP:
		if ((n->sftp = ssh_sftp_open(&n->ssh, &ag)) == NULL)
			return ag ? 0 : -1;
		start_upload(b, n);
		n->step = B_UPLOAD;
		return 1;
	case B_UPLOAD:
		if ((r = ssh_upload_step(&n->ssh, n->sftp, &n->u)) < 0)
			return upload_failed(n);
		if (r == 0)
			return 0;
		if (++n->cur < n->nup)
			start_upload(b, n);
		else
			n->step = B_SFTP_END;
		return 1;
	case B_SFTP_END:
		if (libssh2_sftp_shutdown(n->sftp) == LIBSSH2_ERROR_EAGAIN)
			return 0;
		n->sftp = NULL;
		start_exec(n, install_cmd(b, n));
		n->step = B_INSTALL;
		return 1;
	case B_INSTALL:
		if ((r = run_exec(n, b->pass == P_RESTART ? "service command" : "install")) <= 0)
			return r;
		n->svc_ran = needs_service(n);
		n->step = B_OK;
		return 1;
	case B_CLEAR:
		if ((r = run_exec(n, "removing the service-pending marker")) <= 0)
			return r;
		n->step = B_OK;
		return 1;
	case B_UNDO:
		if (!ssh_upload_abort(&n->u) || libssh2_sftp_shutdown(n->sftp) == LIBSSH2_ERROR_EAGAIN)
			return 0;
		n->sftp = NULL;
		start_exec(n, undo_cmd(n));
		n->step = B_UNDO_RM;
		return 1;
	case B_UNDO_RM:
		if ((r = run_exec(n, "removing the partial upload")) == 0)
			return 0;
		undo_report(n, r > 0);
		return -1;
	default:
		return 0;
	}
}

/* Finish n's SSH part (ok or failed): out of the loop, session closed.
 * In the clear pass a failure is a note: the agent answered, the next
 * run merely restarts it once more. */
static void
node_finish(struct boot *b, struct bnode *n, int failed)
{
	if (n->ssh.fd >= 0)
		epoll_ctl(b->epfd, EPOLL_CTL_DEL, n->ssh.fd, NULL);
	if (failed && b->pass == P_RESTART) {
		char *d = xasprintf("unchanged but the agent did not answer over TLS, and running the "
		    "service command for it failed: %s", n->ssh.err);

		snprintf(n->ssh.err, sizeof(n->ssh.err), "%s", d);
		free(d);
	}
	if (failed && b->pass == P_CLEAR) {
		size_t l = strlen(n->note);

		n->step = B_OK;
		snprintf(n->note + l, sizeof(n->note) - l, "%s%s not removed (%.60s): the next run "
		    "runs the service command again", l ? "; " : "", SVC_PENDING, n->ssh.err);
	} else if (failed) {
		n->step = B_FAILED;
		n->fn->status = n->ssh.fail_status ? n->ssh.fail_status : NS_FAILED;
		free(n->fn->detail);
		n->fn->detail = xstrdup(n->ssh.err);
	}
	ssh_cut(&n->ssh);	/* what is freed now cannot wait on the node */
	if (n->sftp)
		libssh2_sftp_shutdown(n->sftp);
	n->sftp = NULL;
	ssh_exec_free(&n->x);
	ssh_close(&n->ssh);
	n->u.h = NULL;	/* an unclosed handle went with the session (ssh_close) */
}

/* Drive n as far as it goes now; re-arm its epoll interest. */
static void
node_advance(struct boot *b, struct bnode *n)
{
	struct epoll_event ev;
	size_t off = n->u.off;
	int r, moved = 0;

	while ((r = node_step(b, n)) == 1)
		moved = 1;
	if (moved || n->u.off != off)
		n->deadline_ns = now_mono_ns() + (uint64_t)(b->ctl->timeout * 1e9);
	if (r < 0 || n->step == B_OK) {
		node_finish(b, n, r < 0);
		return;
	}
	ev.events = ssh_events(&n->ssh);
	ev.data.ptr = n;
	epoll_ctl(b->epfd, EPOLL_CTL_MOD, n->ssh.fd, &ev);
}

/* Start n's connection. */
static void
node_start(struct boot *b, struct bnode *n)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = n };

	n->started = 1;
	if (n->root == NULL)
		n->root = subst(b->root, NULL, n->fn->name);
	n->deadline_ns = now_mono_ns() + (uint64_t)(b->ctl->connect_timeout * 1e9);
	if (ssh_start(&n->ssh, &b->ctl->ssh, n->fn->name, n->fn->addr, &b->fo.addrs[n->fn->idx],
	    b->ctl->connect_timeout) < 0) {
		node_finish(b, n, 1);
		return;
	}
	epoll_ctl(b->epfd, EPOLL_CTL_ADD, n->ssh.fd, &ev);
}

static int
node_active(const struct bnode *n)
{
	return n->started && n->step != B_OK && n->step != B_FAILED;
}

/* n made no progress before its deadline: a stalled upload goes on to
 * remove what it left (upload_stalled), anything else fails (timeout,
 * or unreachable while connecting). */
static void
node_expire(struct boot *b, struct bnode *n)
{
	snprintf(n->ssh.err, sizeof(n->ssh.err), "ssh: no progress within %.0fs",
	    n->step == B_SSH && n->ssh.phase <= SSH_HANDSHAKE ? b->ctl->connect_timeout :
	    b->ctl->timeout);
	n->ssh.fail_status = n->step == B_SSH ? NS_UNREACHABLE : NS_TIMEOUT;
	if (upload_stalled(b, n)) {
		node_advance(b, n);
		return;
	}
	undo_stalled(n);
	node_finish(b, n, 1);
}

/* Every active node: advance (libssh2 may hold buffered input) and expire. */
static size_t
tick(struct boot *b)
{
	uint64_t now = now_mono_ns();
	size_t active = 0;

	for (size_t i = 0; i < b->fo.n; i++) {
		struct bnode *n = &b->b[i];

		if (!node_active(n))
			continue;
		if (now > n->deadline_ns)
			node_expire(b, n);
		else
			node_advance(b, n);
		active += node_active(n);
	}
	return active;
}

/* The SSH part for every node, --fanout at a time, in one epoll loop. */
static int
ssh_loop(struct boot *b)
{
	struct epoll_event evs[64];
	size_t next = 0, limit = b->ctl->fanout > 0 ? (size_t)b->ctl->fanout : 64, active = 0;

	if ((b->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return -1;
	while (next < b->fo.n || active > 0) {
		int nev;

		while (next < b->fo.n && active < limit) {
			if (b->pass == P_INSTALL || b->b[next].in_pass)
				node_start(b, &b->b[next]);
			active += node_active(&b->b[next++]);
		}
		nev = epoll_wait(b->epfd, evs, (int)nitems(evs), 100);
		for (int i = 0; i < nev; i++) {
			struct bnode *n = evs[i].data.ptr;

			if (node_active(n))
				node_advance(b, n);
		}
		active = tick(b);
	}
	close(b->epfd);
	return 0;
}

/* Still to ping: through this pass's SSH part, and not answered yet, or
 * not listening yet after its service command (an agent that ran on is
 * asked once: if it does not answer, restart_silent starts it). */
static int
retry(const struct boot *b, const struct bnode *n)
{
	if (n->step != B_OK || (b->pass == P_RESTART && !n->in_pass))
		return 0;
	return n->fn->status == NS_PENDING || (n->fn->status == NS_UNREACHABLE && n->svc_ran);
}

/* The pause between two pings of confirm_tls, in microseconds: 200 ms, or
 * for tests only KNOB_TEST_CONFIRM_RETRY_MS (1 to 200), to be done sooner. */
static useconds_t
confirm_retry_us(void)
{
	return (useconds_t)env_number("KNOB_TEST_CONFIRM_RETRY_MS", 1, 200, 200) * 1000;
}

/* Confirm over TLS (always: bootstrap resets --via ssh, whose knobd
 * --stdio would answer with no agent running): ping every node the SSH
 * part finished, retrying while a freshly started agent is not listening
 * yet (until --timeout). */
static void
confirm_tls(struct boot *b)
{
	uint64_t end = now_mono_ns() + (uint64_t)(b->ctl->timeout * 1e9);
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping ping = KNOB__PING__INIT;
	struct strvec pending = { 0 };
	struct fanout fo;

	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	for (;;) {
		strvec_free(&pending);
		for (size_t i = 0; i < b->fo.n; i++)
			if (retry(b, &b->b[i]))
				strvec_push(&pending, b->fo.nodes[i].name);
		if (pending.n == 0)
			break;
		fanout_init(&fo, b->ctl, &pending);
		if (fanout_request(&fo, &env) < 0) {
			fanout_free(&fo);
			break;
		}
		for (size_t i = 0, j = 0; i < b->fo.n && j < fo.n; i++) {
			struct fo_node *dst = &b->fo.nodes[i];

			if (!retry(b, &b->b[i]))
				continue;
			dst->status = fo.nodes[j].status;
			free(dst->detail);
			dst->detail = fo.nodes[j].detail ? xstrdup(fo.nodes[j].detail) : NULL;
			j++;
		}
		fanout_free(&fo);
		if (now_mono_ns() > end)
			break;
		usleep(confirm_retry_us());	/* an agent just (re)started needs a moment */
	}
	strvec_free(&pending);
}

/* Did n's install change a file (sent one, or removed the CRL)? */
static int
changed(const struct bnode *n)
{
	return n->nup > 0 || n->rm_crl;
}

/* Start pass over again for the nodes marked in_pass; 0 when none is. */
static int
pass_begin(struct boot *b, int pass)
{
	int any = 0;

	for (size_t i = 0; i < b->fo.n; i++) {
		struct bnode *n = &b->b[i];

		if (n->in_pass) {
			n->step = B_SSH;
			n->started = 0;
			any = 1;
		}
	}
	b->pass = pass;
	return any;
}

/* Restart pass: over SSH again, run the service command once on every
 * node where nothing changed and nothing ran and whose agent did not
 * answer (stopped, failed, killed; as an install does, with the marker),
 * then ping those again.  0 or -1 (epoll). */
static int
restart_silent(struct boot *b)
{
	for (size_t i = 0; i < b->fo.n; i++) {
		struct bnode *n = &b->b[i];

		n->in_pass = n->step == B_OK && !n->svc_ran && n->fn->status != NS_OK;
		n->restarted = n->in_pass;
		if (n->in_pass)
			n->fn->status = NS_PENDING;
	}
	if (!pass_begin(b, P_RESTART))
		return 0;
	if (ssh_loop(b) < 0)
		return -1;
	confirm_tls(b);
	return 0;
}

/* Clear pass: over SSH again, remove the service-pending marker of every
 * node whose install ran the service command and whose agent answered. */
static int
clear_markers(struct boot *b)
{
	for (size_t i = 0; i < b->fo.n; i++) {
		struct bnode *n = &b->b[i];

		n->in_pass = n->step == B_OK && n->svc_ran && n->fn->status == NS_OK;
	}
	return pass_begin(b, P_CLEAR) ? ssh_loop(b) : 0;
}

/* The final status of every node from its SSH part and the TLS ping. */
static void
settle(struct boot *b)
{
	for (size_t i = 0; i < b->fo.n; i++) {
		struct bnode *n = &b->b[i];
		struct fo_node *fn = n->fn;

		if (n->step != B_OK)
			continue;
		if (fn->status == NS_OK) {
			fn->status = n->nup || n->svc_ran || n->nfix || n->nown ? NS_CHANGED : NS_OK;
			continue;
		}
		{
			char *d = xasprintf("%s but the agent does not answer over TLS: %s",
			    changed(n) ? "installed" : n->restarted ? "unchanged, service command run (the "
			    "agent did not answer)" : n->svc_ran ? "unchanged, service command run again" :
			    "unchanged", fn->detail ? fn->detail : node_status_name(fn->status));
			free(fn->detail);
			fn->detail = d;
			fn->status = NS_FAILED;
		}
	}
}

/* Why n's service command ran, for its line. */
static const char *
svc_why(const struct bnode *n)
{
	if (changed(n))
		return "";
	return n->restarted ? ": the agent did not answer" : " again (the agent had not answered "
	    "since the last install)";
}

/* "installed: knobd, ca.crt, ...; agent answers over TLS", "mode fixed:
 * node.key (was 0644, now 0600)", "owner fixed: node.key (was 65534:0,
 * now 0:0)" or "unchanged". */
static char *
render_boot(struct fanout *fo, struct fo_node *fn, void *arg)
{
	struct boot *b = arg;
	struct bnode *n = &b->b[fn - fo->nodes];
	char *s = NULL;

	if (fn->status != NS_OK && fn->status != NS_CHANGED)
		return NULL;
	if (changed(n)) {
		str_appendf(&s, "%s:", n->knobd_was_missing ? "installed" : n->knobd_replaced ?
		    "upgraded" : "updated");
		for (int i = 0; i < n->nup; i++)
			str_appendf(&s, "%s %s", i ? "," : "", bfiles[n->up[i]].label);
		if (n->rm_crl)
			str_appendf(&s, "%s removed %s (the CA has none)", n->nup ? ";" : "",
			    bfiles[BF_CRL].label);
	}
	for (int i = 0; i < n->nfix; i++)
		str_appendf(&s, "%s%s (was %04lo, now %04lo)", i ? ", " : s ? "; mode fixed: " :
		    "mode fixed: ", bfiles[n->fix[i]].label, n->remote_mode[n->fix[i]],
		    bfiles[n->fix[i]].mode);
	for (int i = 0; i < n->nown; i++)
		str_appendf(&s, "%s%s (was %ld:%ld, now 0:0)", i ? ", " : s ? "; owner fixed: " :
		    "owner fixed: ", bfiles[n->own[i]].label, n->remote_uid[n->own[i]],
		    n->remote_gid[n->own[i]]);
	if (s == NULL)
		str_appendf(&s, "unchanged");
	if (n->svc_ran)
		str_appendf(&s, "; service command run%s", svc_why(n));
	if (n->svc_ran || n->nfix || n->nown)
		str_appendf(&s, "; agent answers over TLS");
	if (n->note[0])
		str_appendf(&s, "; %s", n->note);
	return s;
}

static json_object *
json_boot(struct fanout *fo, struct fo_node *fn, void *arg)
{
	struct boot *b = arg;
	struct bnode *n = &b->b[fn - fo->nodes];
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	for (int i = 0; i < n->nup; i++)
		json_object_array_add(a, json_object_new_string(bfiles[n->up[i]].label));
	json_object_object_add(o, "sent", a);
	a = json_object_new_array();
	if (n->rm_crl)
		json_object_array_add(a, json_object_new_string(bfiles[BF_CRL].label));
	json_object_object_add(o, "removed", a);
	a = json_object_new_array();
	for (int i = 0; i < n->nfix; i++)
		json_object_array_add(a, json_object_new_string(bfiles[n->fix[i]].label));
	json_object_object_add(o, "mode_fixed", a);
	a = json_object_new_array();
	for (int i = 0; i < n->nown; i++)
		json_object_array_add(a, json_object_new_string(bfiles[n->own[i]].label));
	json_object_object_add(o, "owner_fixed", a);
	json_object_object_add(o, "restarted", json_object_new_boolean(n->restarted));
	json_object_object_add(o, "service_run", json_object_new_boolean(n->svc_ran));
	if (n->note[0])
		json_object_object_add(o, "note", json_object_new_string(n->note));
	return o;
}

/* --remote-knobd and --push-agent pick the knobd a --via ssh session
 * runs; bootstrap installs its own (--knobd, --deb) and confirms it over
 * TLS, so they are refused wherever on the line they came.  0 or -1
 * (printed).  --via ssh itself is harmless: bootstrap works over SSH. */
static int
refuse_agentless(const struct ctl *ctl)
{
	const char *opt = ctl->ssh.remote_knobd ? "--remote-knobd" :
	    ctl->ssh.push_agent ? "--push-agent" : NULL;

	if (opt == NULL)
		return 0;
	fprintf(stderr, "knobctl bootstrap: %s does not apply: bootstrap installs its own knobd "
	    "(--knobd or --deb) and confirms it over TLS\n", opt);
	return -1;
}

static int
parse_boot(struct boot *b, int argc, char **argv)
{
	int ch;

	b->root = "/";
	while ((ch = opt_next(b->ctl, argc, argv)) != -1) {
		switch (ch) {
		case O_ROOT: b->root = optarg; break;
		case O_KNOBD: free(b->knobd); b->knobd = xstrdup(optarg); break;
		case O_DEB: b->deb = optarg; break;
		case O_UNIT: b->unit = optarg; break;
		case O_SERVICE: b->service_cmd = optarg; break;
		case O_UPGRADE: b->upgrade = 1; break;
		default: return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "knobctl bootstrap: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (b->root[0] != '/') {
		fprintf(stderr, "knobctl bootstrap: --root must be absolute\n");
		return -1;
	}
	if (b->deb && (b->knobd || b->unit)) {
		fprintf(stderr, "knobctl bootstrap: --deb installs the package's knobd and unit: "
		    "not with --%s\n", b->knobd ? "knobd" : "unit");
		return -1;
	}
	return refuse_agentless(b->ctl);
}

static void
boot_free(struct boot *b)
{
	for (size_t i = 0; b->b && i < b->fo.n; i++) {
		free(b->b[i].crt);
		free(b->b[i].key);
		free(b->b[i].cmd);
		free(b->b[i].root);
	}
	free(b->b);
	for (int f = 0; f < BF__COUNT; f++)
		free(b->data[f]);
	free(b->knobd);
	b->knobd = NULL;
	fanout_free(&b->fo);
}

static int
cmd_bootstrap(struct ctl *ctl, int argc, char **argv)
{
	struct strvec names = { 0 };
	struct boot b;
	int rc = 2;

	memset(&b, 0, sizeof(b));
	b.ctl = ctl;
	if (parse_boot(&b, argc, argv) < 0 || ctl_targets(ctl, &names) < 0)
		goto out_names;
	/* bootstrap's own sessions are SSH whatever --via says; its
	 * confirmation is the installed agent answering over TLS (over SSH a
	 * fresh knobd --stdio would answer with no agent running) */
	ctl->ssh.via = 0;
	libssh2_init(0);
	if (load_sources(&b) < 0 || crl_spares_self(&b) < 0 || ctl_ssl(ctl) == NULL)
		goto out;
	fanout_init(&b.fo, ctl, &names);
	fanout_resolve(&b.fo);	/* every pass's SSH part, before any deadline starts */
	b.b = xcalloc(b.fo.n, sizeof(*b.b));
	for (size_t i = 0; i < b.fo.n; i++) {
		b.b[i].fn = &b.fo.nodes[i];
		b.b[i].ssh.fd = -1;
	}
	if (ssh_loop(&b) < 0) {
		fprintf(stderr, "knobctl bootstrap: epoll: %s\n", strerror(errno));
		goto out;
	}
	confirm_tls(&b);
	if (restart_silent(&b) < 0 || clear_markers(&b) < 0) {
		fprintf(stderr, "knobctl bootstrap: epoll: %s\n", strerror(errno));
		goto out;
	}
	settle(&b);
	if (ctl->json)
		output_json(ctl, &b.fo, json_boot, &b);
	else {
		output_folded(ctl, &b.fo, render_boot, &b);
		output_summary(ctl, &b.fo);
	}
	rc = output_exit_status(&b.fo);
out:
	boot_free(&b);
	libssh2_exit();
out_names:
	free(b.knobd);		/* parse_boot's, when it stopped before boot_free */
	strvec_free(&names);
	return rc;
}

const struct cmd_entry cmd_bootstrap_entry = {
	"bootstrap", "", "install and start the agent on nodes over SSH, certificates issued on the fly",
	CMD_NODES | CMD_FANOUT | CMD_SSH, boot_opts, cmd_bootstrap,
	"Host keys are checked strictly against known_hosts (--accept-new adds unknown ones).\n"
	"Files go over SFTP to NAME.knob-new (mode set, fsync'd), then mv -f into place.\n"
	"A re-run sends only what differs (sha256), fixes modes, and reports 'unchanged'; it runs\n"
	"the service command again when the last one did not succeed or the agent does not answer.\n"
	"The agent is confirmed over TLS; --via ssh changes nothing (bootstrap works over SSH),\n"
	"--remote-knobd and --push-agent are refused (exit 2). --fanout defaults to 64.",
};
