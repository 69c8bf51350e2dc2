/* gpfs driver: IBM Spectrum Scale configuration attributes (pagepool,
 * maxMBpS, lrocData, ...).  Written with "mmchconfig KEY=VALUE -i -N NODE"
 * and read back from "mmdiag --config", both run with a timeout and their
 * stderr surfaced.  The commands are found under the sysroot
 * (SYSROOT/usr/lpp/mmfs/bin), so tests use stand-in scripts.  When GPFS is
 * not installed nothing matches (unsupported).  An attribute mmchconfig
 * refuses to change immediately is set without -i, and one that mmchconfig
 * accepted but mmdiag still shows with its old value is pending-restart.
 *
 * Boolean attributes are spelt yes/no (or enable/disable) for mmchconfig
 * and mmlsconfig, while mmdiag --config may print the daemon's 1/0: the
 * attributes of gpfs_bools take any of yes, true, on, enable(d), 1 and
 * no, false, off, disable(d), 0 (any case), and their canonical value, the
 * one journaled, compared and written, is the word mmchconfig takes.
 *
 * The configured value (what "mmlsconfig ATTR" prints: the line whose
 * bracketed node list names this node, else the one without a list) can
 * differ from the live one: an admin's "mmchconfig pagepool=8G" without -i
 * waits for mmfsd to restart.  An apply's "mmchconfig ... -i" sets both,
 * so putting back only the live value would configure it too and lose
 * the admin's pending change.  When the two differ, the configured value
 * is journaled beside the attribute as the journal-only attribute
 * "configured", as mmlsconfig spells it ("8G": mmchconfig takes it back
 * as it is), and rollback puts it back after the live value: the live
 * one with "-i" (both), then the configured one without -i (mmchconfig
 * without -i or -I changes the configuration only; it takes effect when
 * mmfsd restarts).  Without mmlsconfig nothing more is journaled.
 *
 * The configured value's layout is kept too.  mmlsconfig shows an
 * attribute on a line of its own (cluster-wide) and on lines with a
 * bracketed node list ("pagepool 16G [node01]": those nodes' own value).
 * An apply writes with -N NODE, which gives this node a line of its own.
 * So a configured value this node took from the cluster-wide line is
 * journaled as CFG_CLUSTER, "(cluster-wide)", not as its value: what knob
 * changed is that this node got a line of its own, and undoing that is
 * removing the line again ("mmchconfig KEY=DEFAULT -N NODE": the node
 * follows the cluster-wide value, whatever it is by then).  Rollback never
 * runs a cluster-wide mmchconfig (without -N): that changes the
 * configuration of every node of the cluster, every node's rollback would
 * run it again, and it would overwrite a cluster-wide value an admin set
 * since on all of them; removing this node's own line touches only this
 * node.  A value from a line naming this node is journaled as it is and
 * put back with -N NODE, as before (so is one in a journal from before
 * the layout was kept).  A value of this node's own line that is the live
 * one is not journaled: the live value's "-i -N NODE" puts it back on that
 * line.  CFG_CLUSTER is journaled whether or not the cluster-wide value is
 * the live one: the apply's -N NODE gave this node a line of its own
 * either way.  Before, it was journaled only where it differed from the
 * live value, and a cluster-wide value that was the live one came back as
 * this node's own line (the live value's "-i -N NODE"), a line the admin
 * never had, no longer following the cluster-wide value. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cmd.h"
#include "log.h"
#include "normalize.h"
#include "tune.h"

#define MMFS_BIN "/usr/lpp/mmfs/bin/"
#define CFG_CLUSTER "(cluster-wide)"	/* configured: no line of this node's own */
#define MMDIAG_OUT_MAX (256u << 10)

/* Boolean attributes: the words mmchconfig takes for on and off. */
static const struct gpfs_bool {
	const char *attr, *on, *off;
} gpfs_bools[] = {
	{ "lrocData", "yes", "no" },
	{ "lrocDirectories", "yes", "no" },
	{ "lrocInodes", "yes", "no" },
	{ "lrocEnableStoringClearText", "yes", "no" },
	{ "numaMemoryInterleave", "yes", "no" },
	{ "nsdCksumTraditional", "yes", "no" },
	{ "verbsRdmaSend", "yes", "no" },
	{ "verbsRdma", "enable", "disable" },
	{ "verbsRdmaCm", "enable", "disable" },
};

/* The spellings of on (in the first row) and off. */
static const char *const bool_words[2][6] = {
	{ "yes", "true", "on", "enable", "enabled", "1" },
	{ "no", "false", "off", "disable", "disabled", "0" },
};

static const struct gpfs_bool *
gpfs_bool(const char *attr)
{
	for (size_t i = 0; i < nitems(gpfs_bools); i++)
		if (strcasecmp(gpfs_bools[i].attr, attr) == 0)
			return &gpfs_bools[i];
	return NULL;
}

/* Whether s is the journal-only attribute "configured". */
static int
is_configured(const Knob__Setting *s)
{
	return s->attr != NULL && strcmp(s->attr, "configured") == 0;
}

/* The default normaliser; a boolean attribute's on or off as its word
 * (gpfs_bools; other values are left as they are, for mmchconfig to
 * judge).  "configured" as mmlsconfig spells it ("8G"), trimmed. */
static int
gpfs_normalise(const Knob__Setting *s, const char *raw, char *out, size_t outlen,
    char *msg, size_t msglen)
{
	const struct gpfs_bool *b = gpfs_bool(s->key);
	int rc;

	if (is_configured(s)) {
		raw += strspn(raw, " \t\n");
		if ((size_t)snprintf(out, outlen, "%.*s", (int)strcspn(raw, " \t\n"), raw) < outlen)
			return 0;
		snprintf(msg, msglen, "value too long");
		return -1;
	}
	rc = tune_norm_default(s, raw, out, outlen, msg, msglen);

	for (size_t v = 0; rc == 0 && b != NULL && v < 2; v++)
		for (size_t w = 0; w < nitems(bool_words[v]); w++)
			if (strcasecmp(out, bool_words[v][w]) == 0) {
				snprintf(out, outlen, "%s", v == 0 ? b->on : b->off);
				return 0;
			}
	return rc;
}

static int
mmfs_cmd(struct agent *a, const char *cmd, char *buf, size_t len)
{
	char abs[128];

	snprintf(abs, sizeof(abs), MMFS_BIN "%s", cmd);
	return agent_path(a, buf, len, abs);
}

static int
gpfs_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	char diag[PATH_MAX], chc[PATH_MAX];

	(void)msg;
	(void)msglen;
	if (mmfs_cmd(a, "mmdiag", diag, sizeof(diag)) < 0 ||
	    mmfs_cmd(a, "mmchconfig", chc, sizeof(chc)) < 0)
		return -ENAMETOOLONG;
	if (access(diag, X_OK) == 0 && access(chc, X_OK) == 0)
		strvec_push(out, s->key);
	return 0;
}

/* Value of attribute key in "mmdiag --config" output ("! key value" lines). */
static int
parse_mmdiag(const char *text, const char *key, char *buf, size_t len)
{
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n'), *p = line, *k;
		size_t ll = nl ? (size_t)(nl - line) : strlen(line), kl;
		const char *end = line + ll;

		while (p < end && (isspace((unsigned char)*p) || *p == '!'))
			p++;
		k = p;
		while (p < end && !isspace((unsigned char)*p))
			p++;
		kl = (size_t)(p - k);
		if (kl == strlen(key) && strncasecmp(k, key, kl) == 0) {
			while (p < end && isspace((unsigned char)*p))
				p++;
			snprintf(buf, len, "%.*s", (int)(end - p), p);
			strtrim(buf);
			return 0;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* target's live value, from "mmdiag --config". */
static int
gpfs_read_live(struct agent *a, const char *target, char *buf, size_t len, char *msg,
    size_t msglen)
{
	char diag[PATH_MAX], err[1024];
	char *argv[] = { diag, (char *)(uintptr_t)"--config", NULL };
	char *out;
	int rc;

	if (mmfs_cmd(a, "mmdiag", diag, sizeof(diag)) < 0)
		return -ENAMETOOLONG;
	out = xmalloc(MMDIAG_OUT_MAX);
	rc = cmd_run(argv, tune_cmd_timeout(a), out, MMDIAG_OUT_MAX, err, sizeof(err));
	if (rc == -ETIMEDOUT) {
		snprintf(msg, msglen, "mmdiag --config timed out after %d ms", tune_cmd_timeout(a));
		goto out;
	}
	if (rc != 0) {
		snprintf(msg, msglen, "mmdiag --config failed (%s %d): %s",
		    rc < 0 ? "errno" : "exit", rc < 0 ? -rc : rc, err);
		rc = rc < 0 ? rc : -EIO;
		goto out;
	}
	rc = parse_mmdiag(out, target, buf, len);
	if (rc < 0)
		snprintf(msg, msglen, "%s is not in mmdiag --config", target);
out:
	free(out);
	return rc;
}

/* Whether the bracketed node list at br ("[node01,node02]") names node. */
static int
list_names(const char *br, const char *node)
{
	size_t nl = strlen(node), w;

	for (const char *p = br + 1; *p != '\0' && *p != ']' && *p != '\n'; p += w + (p[w] == ',')) {
		w = strcspn(p, ",]\n");
		if (w == nl && strncmp(p, node, nl) == 0)
			return 1;
	}
	return 0;
}

/* The value mmlsconfig line l gives attribute key on node, into buf: 2
 * for a line whose bracketed node list names node, 1 for one without a
 * list, 0 for another (buf untouched). */
static int
mmls_line(const char *l, const char *key, const char *node, char *buf, size_t len)
{
	size_t kl = strlen(key), n;
	const char *v, *br;

	l += strspn(l, " \t");
	n = strcspn(l, "\n");
	if (strncasecmp(l, key, kl) != 0 || (l[kl] != ' ' && l[kl] != '\t'))
		return 0;
	v = l + kl + strspn(l + kl, " \t");
	br = memchr(v, '[', n - (size_t)(v - l));
	if (br != NULL && !list_names(br, node))
		return 0;
	snprintf(buf, len, "%.*s", (int)strcspn(v, " \t\n["), v);
	return br ? 2 : 1;
}

/* Attribute key as "mmlsconfig KEY" configures it for this node, into
 * buf; *own: 1 when a line naming this node gave it, 0 for the
 * cluster-wide line. */
static int
gpfs_read_configured(struct agent *a, const char *key, char *buf, size_t len, int *own,
    char *msg, size_t msglen)
{
	char ls[PATH_MAX], err[1024], out[8192], v[NORM_VALUE_MAX];
	char *argv[] = { ls, (char *)(uintptr_t)key, NULL };
	int rc, best = 0, got;

	if (mmfs_cmd(a, "mmlsconfig", ls, sizeof(ls)) < 0)
		return -ENAMETOOLONG;
	rc = cmd_run(argv, tune_cmd_timeout(a), out, sizeof(out), err, sizeof(err));
	if (rc != 0) {
		snprintf(msg, msglen, "mmlsconfig %s failed (%s %d): %s", key,
		    rc < 0 ? "errno" : "exit", rc < 0 ? -rc : rc, err);
		return rc < 0 ? rc : -EIO;
	}
	for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0'))
		if ((got = mmls_line(l, key, a->node, v, sizeof(v))) > best) {
			best = got;
			snprintf(buf, len, "%s", v);
		}
	if (best == 0) {
		snprintf(msg, msglen, "%s is not in mmlsconfig %s", key, key);
		return -ENOENT;
	}
	*own = best == 2;
	return 0;
}

/* Read target; "configured" through mmlsconfig, CFG_CLUSTER when this
 * node has no line of its own (see the top).  Followed beside an apply's
 * write (asked with no value), a configured value of this node's own line
 * that is the live one is not journaled (TUNE_NOT_SETTABLE): putting the
 * live one back configures it too, on that line; nor one that was so when
 * the attribute's original was journaled (tune_coupled_late: it is knob's
 * own now).  CFG_CLUSTER is journaled even when it is the live value.
 * One journaled already is read as it is (tune_coupled_kept): a switch to
 * a profile that sets the attribute again keeps its original.  Before, it
 * read as nothing to journal, and the switch put CFG_CLUSTER back after
 * the new value's write, removing the line that write made. */
static int
gpfs_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf,
    size_t len, char *msg, size_t msglen)
{
	char live[NORM_VALUE_MAX], n1[NORM_VALUE_MAX], n2[NORM_VALUE_MAX], m[TUNE_MSG_MAX];
	Knob__Setting base = *s;
	int rc, own = 0;

	if (!is_configured(s))
		return gpfs_read_live(a, target, buf, len, msg, msglen);
	rc = gpfs_read_configured(a, target, buf, len, &own, msg, msglen);
	if (rc < 0)
		return rc;
	if ((s->value != NULL && *s->value != '\0') || tune_coupled_kept(a, s, target)) {
		if (!own)
			snprintf(buf, len, "%s", CFG_CLUSTER);
		return 0;
	}
	if (tune_coupled_late(a, s, target, target, "")) {
		snprintf(msg, msglen, "%s: configured as live when its original was journaled",
		    target);
		return TUNE_NOT_SETTABLE;
	}
	if (!own) {	/* journaled even when it is the live value (see the top) */
		snprintf(buf, len, "%s", CFG_CLUSTER);
		return 0;
	}
	base.attr = (char *)(uintptr_t)"";
	if ((rc = gpfs_read_live(a, target, live, sizeof(live), msg, msglen)) < 0)
		return rc;
	if (gpfs_normalise(&base, live, n1, sizeof(n1), m, sizeof(m)) == 0 &&
	    gpfs_normalise(&base, buf, n2, sizeof(n2), m, sizeof(m)) == 0 && strcmp(n1, n2) == 0) {
		snprintf(msg, msglen, "%s: configured as live (%s), nothing pending", target, buf);
		return TUNE_NOT_SETTABLE;
	}
	return 0;
}

/* The stderr of a refused "-i" says the attribute needs a restart. */
static int
needs_restart(const char *err)
{
	static const char *const pats[] = { "restart", "cannot be changed immediately",
		"-i option", "not immediately" };

	for (size_t i = 0; i < nitems(pats); i++)
		if (strcasestr(err, pats[i]) != NULL)
			return 1;
	return 0;
}

/* Put back a configured value: "mmchconfig KEY=VALUE -N NODE", without
 * -i (the configuration only: it takes effect when mmfsd restarts);
 * CFG_CLUSTER: "KEY=DEFAULT -N NODE", this node's own line removed, never
 * a cluster-wide write (see the top). */
static int
gpfs_configure(struct agent *a, char *chc, const char *target, const char *value,
    char *msg, size_t msglen)
{
	char kv[1024], err[1024];
	char *argv[] = { chc, kv, (char *)(uintptr_t)"-N", a->node, NULL };
	int rc;

	if (strcmp(value, CFG_CLUSTER) == 0)
		value = "DEFAULT";
	snprintf(kv, sizeof(kv), "%s=%s", target, value);
	rc = cmd_run(argv, tune_cmd_timeout(a), NULL, 0, err, sizeof(err));
	if (rc != 0)
		snprintf(msg, msglen, "mmchconfig %s -N %s %s (%s %d): %s", kv, a->node,
		    rc == -ETIMEDOUT ? "timed out" : "failed", rc < 0 ? "errno" : "exit",
		    rc < 0 ? -rc : rc, err);
	return rc > 0 ? -EIO : rc;
}

static int
gpfs_write(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	char chc[PATH_MAX], kv[1024], err[1024], now[NORM_VALUE_MAX], n1[NORM_VALUE_MAX],
	    n2[NORM_VALUE_MAX], m[TUNE_MSG_MAX];
	char *argv[] = { chc, kv, (char *)(uintptr_t)"-i", (char *)(uintptr_t)"-N", a->node, NULL };
	char *argv_noi[] = { chc, kv, (char *)(uintptr_t)"-N", a->node, NULL };
	int rc, pending = 0;

	if (mmfs_cmd(a, "mmchconfig", chc, sizeof(chc)) < 0)
		return -ENAMETOOLONG;
	if (is_configured(s))
		return gpfs_configure(a, chc, target, value, msg, msglen);
	/* in the unit the admin wrote ("16G"), when that is what is set; a
	 * "0x" number as its decimal; a boolean as mmchconfig spells it */
	if (gpfs_bool(target) == NULL &&
	    tune_norm_default(s, s->value, n1, sizeof(n1), m, sizeof(m)) == 0 &&
	    strcmp(n1, value) == 0 && strcasestr(s->value, "0x") == NULL)
		value = s->value;
	snprintf(kv, sizeof(kv), "%s=%s", target, value);
	rc = cmd_run(argv, tune_cmd_timeout(a), NULL, 0, err, sizeof(err));
	if (rc > 0 && needs_restart(err)) {
		rc = cmd_run(argv_noi, tune_cmd_timeout(a), NULL, 0, err, sizeof(err));
		pending = 1;
	}
	if (rc == -ETIMEDOUT) {
		snprintf(msg, msglen, "mmchconfig %s -i -N %s timed out after %d ms", kv, a->node,
		    tune_cmd_timeout(a));
		return rc;
	}
	if (rc != 0) {
		snprintf(msg, msglen, "mmchconfig %s -i -N %s failed (%s %d): %s", kv, a->node,
		    rc < 0 ? "errno" : "exit", rc < 0 ? -rc : rc, err);
		return rc < 0 ? rc : -EIO;
	}
	if (pending) {
		snprintf(msg, msglen, "mmchconfig %s: takes effect after mmfsd restarts", kv);
		return TUNE_PENDING_RESTART;
	}
	/* accepted immediately?  mmdiag tells */
	if (gpfs_read(a, s, target, now, sizeof(now), m, sizeof(m)) == 0 &&
	    gpfs_normalise(s, now, n1, sizeof(n1), m, sizeof(m)) == 0 &&
	    gpfs_normalise(s, value, n2, sizeof(n2), m, sizeof(m)) == 0 &&
	    strcmp(n1, n2) != 0) {
		snprintf(msg, msglen, "mmchconfig accepted %s; mmdiag --config still shows %s; "
		    "takes effect when mmfsd restarts", kv, now);
		return TUNE_PENDING_RESTART;
	}
	return 0;
}

#define PAGEPOOL_MAX_PCT 75

/* Would-fail: a pagepool over 75 % of the node's RAM (SYSROOT/proc/meminfo;
 * no judgement when it cannot be read).  mmfsd pins the pagepool, so that
 * memory is gone for jobs. */
static int
gpfs_check(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	char path[PATH_MAX], line[256];
	unsigned long long kb = 0, want;
	FILE *f;

	(void)s;
	if (strcasecmp(target, "pagepool") != 0 ||
	    agent_path(a, path, sizeof(path), "/proc/meminfo") < 0 ||
	    (f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) && sscanf(line, "MemTotal: %llu kB", &kb) != 1)
		;
	fclose(f);
	want = strtoull(value, NULL, 10);
	if (kb == 0 || want <= kb * 1024ull / 100 * PAGEPOOL_MAX_PCT)
		return 0;
	snprintf(msg, msglen, "pagepool %s is over %d%% of this node's RAM (MemTotal %llu MiB): "
	    "mmfsd pins it, jobs would be left without memory", s->value, PAGEPOOL_MAX_PCT,
	    kb / 1024);
	return -EINVAL;
}

/* GPFS pagepool of this node in bytes, 0 without GPFS (or when mmdiag
 * fails: logged).  Found and read exactly as the gpfs tuning driver does
 * (SYSROOT/usr/lpp/mmfs/bin, "mmdiag --config", with its timeout), so it
 * blocks: worker threads only. */
uint64_t
gpfs_pagepool(struct agent *a)
{
	Knob__Setting s = KNOB__SETTING__INIT;
	struct strvec t = { 0 };
	char raw[256], canon[NORM_VALUE_MAX], msg[TUNE_MSG_MAX];
	unsigned long long v = 0;

	s.driver = (char *)(uintptr_t)"gpfs";
	s.key = (char *)(uintptr_t)"pagepool";
	msg[0] = '\0';
	if (gpfs_resolve(a, &s, &t, msg, sizeof(msg)) < 0 || t.n == 0)
		goto out;
	if (gpfs_read(a, &s, t.v[0], raw, sizeof(raw), msg, sizeof(msg)) < 0 ||
	    tune_norm_default(&s, raw, canon, sizeof(canon), msg, sizeof(msg)) < 0 ||
	    sscanf(canon, "%llu", &v) != 1) {
		log_warnx("GPFS pagepool unknown: %s", msg[0] ? msg : "unreadable value");
		v = 0;
	}
out:
	strvec_free(&t);
	return v;
}

/* The live value first, then the configured one (mmchconfig -i sets
 * both; without -i only the configuration). */
static int
gpfs_rank(const Knob__Setting *s)
{
	return is_configured(s) ? 1 : 0;
}

/* What an attribute's write moves: its configured value. */
static const char *const *
gpfs_coupled(const Knob__Setting *s)
{
	static const char *const cfg[] = { "configured", NULL };

	return is_configured(s) ? NULL : cfg;
}

const struct tune_driver drv_gpfs = {
	.name = "gpfs",
	.resolve = gpfs_resolve,
	.read = gpfs_read,
	.normalise = gpfs_normalise,
	.write = gpfs_write,
	.describe = tune_describe_default,
	.restart_note = "takes effect when mmfsd restarts",
	.check = gpfs_check,
	.rank = gpfs_rank,
	.coupled = gpfs_coupled,
	.costly_read = 1,
	.defers = 1,
};
