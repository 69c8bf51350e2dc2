/* lustre driver: lctl-style parameter names (osc.*OST*.max_rpcs_in_flight,
 * llite.*.max_read_ahead_mb, timeout).  Resolved natively the way lctl does:
 * dots become slashes except inside NIDs (192.168.1.1@o2ib), then the path is
 * globbed under /sys/fs/lustre, /proc/fs/lustre and /sys/kernel/debug/lustre
 * (a parameter found under an earlier root hides the same one under a later
 * root) and every match is written.  persistent="yes" also records the value
 * with "lctl set_param -P" (lctl found under the sysroot: usr/sbin/lctl or
 * usr/bin/lctl); rollback deletes that record with "lctl set_param -P -d".
 * A -P record lives on the MGS and every client applies it at mount, so
 * its name carries no client instance: the "-ffff8801..." suffix of a
 * mount's devices (the kernel address of its super block, another one on
 * every node and at every mount) becomes "-*" (pmt_name).
 *
 * A glob key reaches the instances that exist when it is applied; the
 * boot re-apply resolves it again, so a remounted client's new instances
 * are new targets, their originals journaled before the write like any
 * apply's.  The old instances' originals stay journaled; once their
 * directory is gone they read as their original (instance_gone), so a
 * rollback drops them instead of failing on them for good.  No identity:
 * an instance name is never reused by another mount. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "tune.h"

#define LRU_TRIES 3	/* reads of lru_size against lock_unused_count */

/* The length of the client instance p starts with (after a '-'): "ffff"
 * and more hex digits up to the end of the name or its next '.' or '/';
 * 0 when it is none. */
static size_t
instance_len(const char *p)
{
	size_t n = strspn(p, "0123456789abcdef");

	return n >= 8 && strncmp(p, "ffff", 4) == 0 && strchr("./", p[n]) != NULL ? n : 0;
}

/* Is target a parameter of a client instance (a mount's device, "...-osc-
 * ffff8801/...") whose directory is gone?  Its mount ended: the same
 * instance never comes back (a new mount has another address), nothing
 * is left to put back. */
static int
instance_gone(struct agent *a, const char *target)
{
	char dir[PATH_MAX], full[PATH_MAX];
	size_t n;

	for (const char *p = target; (p = strchr(p, '-')) != NULL; p++)
		if ((n = instance_len(p + 1)) > 0) {
			snprintf(dir, sizeof(dir), "%.*s", (int)(p + 1 + n - target), target);
			return agent_path(a, full, sizeof(full), dir) == 0 && !tune_fd_exists(full);
		}
	return 0;
}

/* ldlm.namespaces.NS.lru_size is not a plain value.  With dynamic LRU
 * sizing on (Lustre's default when the server supports it) a read shows the
 * number of unused locks, not a setting; writing a non-zero value fixes the
 * size and turns dynamic sizing off; only writing 0 turns it back on.  So
 * its canonical value in dynamic mode is "0": journaled as the original,
 * rollback writes 0 and gets dynamic sizing back (journaling the count, as
 * before, turned it off for good).  A client cannot read the mode, so it is
 * told from lock_unused_count (the same counter in dynamic mode): lru_size
 * reading the same number, or lock_unused_count unreadable, is dynamic,
 * unless the number is the value the setting itself asks for, or the one
 * the journal says knob left there until a rollback starts putting the
 * original back (a limit knob wrote, which a full LRU also reaches: the
 * steady state of a busy client; a rollback's setting asks for the
 * original, and once it wrote 0 the same count is dynamic mode's);
 * lru_size differing from it in LRU_TRIES pairs of reads is a static
 * limit, kept as it reads.  Lustre shows nothing else that tells the
 * modes apart, so a full LRU under a static limit knob did not write
 * still reads as dynamic. */
static int
is_lru_size(const char *target)
{
	size_t tl = strlen(target), sl = strlen("/lru_size");

	return strstr(target, "/ldlm/namespaces/") != NULL && tl > sl &&
	    strcmp(target + tl - sl, "/lru_size") == 0;
}

/* Whether lru is a limit knob wrote on target: the value of setting s, or
 * the one the journal says knob left there (an original's "set", until a
 * rollback is restoring it). */
static int
lru_knobs(struct agent *a, const Knob__Setting *s, const char *target,
    unsigned long long lru)
{
	const struct journal *j = a->tune ? &a->tune->j : NULL;
	long k = j ? journal_find(j->orig, j->norig, "lustre", target, "") : -1;

	return (s->value && lru == strtoull(s->value, NULL, 10)) ||
	    (k >= 0 && !j->orig[k].restoring && j->orig[k].set &&
	    lru == strtoull(j->orig[k].set, NULL, 10));
}

/* Whether the namespace of lru_size target (which reads buf) is in dynamic
 * LRU mode, as told above. */
static int
lru_dynamic(struct agent *a, const Knob__Setting *s, const char *target, const char *buf)
{
	char path[PATH_MAX], v[32], m[TUNE_MSG_MAX];
	unsigned long long lru = strtoull(buf, NULL, 10);

	if (lru == 0 || lru_knobs(a, s, target, lru))
		return 0;
	snprintf(path, sizeof(path), "%.*slock_unused_count",
	    (int)(strlen(target) - strlen("lru_size")), target);
	for (int i = 0; i < LRU_TRIES; i++) {
		if (tune_read_path(a, path, v, sizeof(v), m, sizeof(m)) < 0 ||
		    strtoull(v, NULL, 10) == lru)
			return 1;
		if (tune_read_path(a, target, v, sizeof(v), m, sizeof(m)) < 0)
			return 1;
		lru = strtoull(v, NULL, 10);
	}
	return 0;
}

/* Read target; lru_size in dynamic LRU mode reads "0".  A parameter of a
 * client instance that is gone (instance_gone: a journaled target of a
 * mount that ended, read by rollback, a switch or crash recovery) reads
 * as the value s asks for, the original: it holds, and its journal entry
 * is dropped instead of failing every rollback after every remount. */
static int
lustre_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf,
    size_t len, char *msg, size_t msglen)
{
	int rc = tune_read_default(a, s, target, buf, len, msg, msglen);

	if (rc == -ENOENT && s->value && instance_gone(a, target)) {
		snprintf(buf, len, "%s", s->value);
		return 0;
	}

	if (rc == 0 && is_lru_size(target) && lru_dynamic(a, s, target, buf))
		snprintf(buf, len, "0");
	return rc;
}

static int
lustre_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	struct strvec seen = { 0 };
	char rel[PATH_MAX], pat[PATH_MAX + 64];
	int rc = 0;

	if (lustre_param_path(s->key, rel, sizeof(rel)) < 0) {
		snprintf(msg, msglen, "bad lustre parameter name %s", s->key);
		return -EINVAL;
	}
	for (size_t r = 0; lustre_param_roots[r] && rc == 0; r++) {
		struct strvec m = { 0 };
		size_t rl = strlen(lustre_param_roots[r]);

		/* a root this node lacks (known once per transaction) */
		if (agent_path(a, pat, sizeof(pat), lustre_param_roots[r]) == 0 && !tune_fd_exists(pat))
			continue;
		snprintf(pat, sizeof(pat), "%s/%s", lustre_param_roots[r], rel);
		rc = tune_glob(a, pat, &m);
		for (size_t i = 0; i < m.n; i++) {
			const char *tail = m.v[i] + rl;

			if (strvec_contains(&seen, tail))
				continue;
			strvec_push(&seen, tail);
			strvec_push(out, m.v[i]);
		}
		strvec_free(&m);
	}
	strvec_free(&seen);
	if (rc < 0)
		snprintf(msg, msglen, "glob %s: %s", rel, strerror(-rc));
	return rc;
}

/* Concrete path -> lctl name: "/sys/fs/lustre/osc/fs-OST0000-osc/x" -> "osc.fs-OST0000-osc.x". */
static void
lustre_describe(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	const char *p = target;
	size_t o = 0;

	(void)s;
	for (size_t r = 0; lustre_param_roots[r]; r++) {
		size_t rl = strlen(lustre_param_roots[r]);

		if (strncmp(target, lustre_param_roots[r], rl) == 0 && target[rl] == '/') {
			p = target + rl + 1;
			break;
		}
	}
	for (; *p && o + 1 < len; p++)
		buf[o++] = *p == '/' ? '.' : *p;
	buf[o] = '\0';
}

/* The -P name of target: its lctl name with each client instance suffix
 * ("osc.fs-OST0001-osc-ffff8801.x") as "*" ("osc.fs-OST0001-osc-*.x"). */
static void
pmt_name(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	char name[PATH_MAX];
	size_t o = 0, n;

	lustre_describe(s, target, name, sizeof(name));
	for (const char *p = name; *p && o + 1 < len; p++) {
		buf[o++] = *p;
		if (*p == '-' && (n = instance_len(p + 1)) > 0 && o + 1 < len) {
			buf[o++] = '*';
			p += n;
		}
	}
	buf[o] = '\0';
}

/* lctl set_param -P NAME=VALUE, or -P -d NAME when value is NULL. */
static int
lctl_persist(struct agent *a, const char *name, const char *value, char *msg, size_t msglen)
{
	char lctl[PATH_MAX], arg[PATH_MAX + 4096], err[1024];
	const char *cands[] = { "/usr/sbin/lctl", "/usr/bin/lctl" };
	char *argv[6];
	int rc, i = 0;

	lctl[0] = '\0';
	for (size_t k = 0; k < nitems(cands); k++)
		if (agent_path(a, lctl, sizeof(lctl), cands[k]) == 0 && access(lctl, X_OK) == 0)
			break;
		else
			lctl[0] = '\0';
	if (lctl[0] == '\0') {
		snprintf(msg, msglen, "lctl not found (needed for persistent=\"yes\")");
		return -ENOENT;
	}
	argv[i++] = lctl;
	argv[i++] = (char *)(uintptr_t)"set_param";
	argv[i++] = (char *)(uintptr_t)"-P";
	if (value == NULL) {
		argv[i++] = (char *)(uintptr_t)"-d";
		snprintf(arg, sizeof(arg), "%s", name);
	} else
		snprintf(arg, sizeof(arg), "%s=%s", name, value);
	argv[i++] = arg;
	argv[i] = NULL;
	rc = cmd_run(argv, tune_cmd_timeout(a), NULL, 0, err, sizeof(err));
	if (rc == -ETIMEDOUT) {
		snprintf(msg, msglen, "lctl set_param -P %s timed out after %d ms", arg,
		    tune_cmd_timeout(a));
		return rc;
	}
	if (rc != 0) {
		snprintf(msg, msglen, "lctl set_param -P %s failed (%s %d): %s", arg,
		    rc < 0 ? "errno" : "exit", rc < 0 ? -rc : rc, err);
		return rc < 0 ? rc : -EIO;
	}
	return 0;
}

/* The permanent record first (-P), then the live value.  When the live
 * write fails, the record just made is deleted again: the key keeps its
 * live value, so no revert comes to undo it, and a remount would
 * otherwise bring a value the apply reported as failed. */
static int
lustre_write(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	char name[PATH_MAX], m[TUNE_MSG_MAX];
	size_t len;
	int rc;

	if (!s->persistent)
		return tune_write_path(a, target, value, msg, msglen);
	pmt_name(s, target, name, sizeof(name));
	if ((rc = lctl_persist(a, name, value, msg, msglen)) < 0 ||
	    (rc = tune_write_path(a, target, value, msg, msglen)) >= 0)
		return rc;
	len = strlen(msg);
	if (lctl_persist(a, name, NULL, m, sizeof(m)) < 0)
		snprintf(msg + len, msglen - len, "; and the permanent record stays: %s", m);
	else
		snprintf(msg + len, msglen - len, "; permanent record deleted again");
	return rc;
}

static int
lustre_restore(struct agent *a, const Knob__Setting *s, const char *target,
    const char *value, char *msg, size_t msglen)
{
	char name[PATH_MAX];
	int rc;

	if (s->persistent) {
		pmt_name(s, target, name, sizeof(name));
		if ((rc = lctl_persist(a, name, NULL, msg, msglen)) < 0)
			return rc;
	}
	return tune_write_path(a, target, value, msg, msglen);
}

const struct tune_driver drv_lustre = {
	.name = "lustre",
	.resolve = lustre_resolve,
	.read = lustre_read,
	.normalise = tune_norm_default,
	.write = lustre_write,
	.restore = lustre_restore,
	.describe = lustre_describe,
	.check = tune_check_default,
	.file = tune_file_default,	/* a target is its file: /sys/fs/lustre/... */
};
