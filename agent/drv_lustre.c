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
 * So one record serves every mount of a file system: a glob that matches
 * two mounts' instances (llite.fs-ffff8801 and llite.fs-ffff8802) names
 * one record, "llite.fs-*.max_read_ahead_mb".  It is journaled once, as
 * its own journal-only target LUSTRE_RECORD NAME (coupled_target of each
 * instance; the plan keeps one), with the value the record had before:
 * an admin's own -P value, or RECORD_NONE when there was none.  Rollback
 * writes the instances' live values and puts the record back once: "lctl
 * set_param -P NAME=VALUE" for a value, "lctl set_param -P -d NAME" for
 * none.  Before, each instance's rollback deleted the record, the admin's
 * included.  Modelled on lctl(8) and the MGS: set_param -P replaces the
 * record of that name in the "params" log (the last one wins), -P -d
 * removes it, and "lctl --device MGS llog_print params" lists the records
 * as "- { index: N, event: set_param, device: general, param: NAME,
 * value: VALUE }" lines; set_param -P runs on the MGS, so llog_print can
 * run there too.  A journal from before, whose persistent instance has no
 * record journaled, deletes the record as it did.
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
#define RECORD_NONE "(none)"	/* a record's value when there is none */
#define LLOG_OUT_MAX (256u << 10)

/* Whether target is a -P record (LUSTRE_RECORD NAME), not a file. */
static int
is_record(const char *target)
{
	return strncmp(target, LUSTRE_RECORD, strlen(LUSTRE_RECORD)) == 0;
}

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

/* Read target (a -P record: record_read); lru_size in dynamic LRU mode reads "0".  A parameter of a
 * client instance that is gone (instance_gone: a journaled target of a
 * mount that ended, read by rollback, a switch or crash recovery) reads
 * as the value s asks for, the original: it holds, and its journal entry
 * is dropped instead of failing every rollback after every remount. */
static int record_read(struct agent *a, const Knob__Setting *s, const char *target,
    char *buf, size_t len, char *msg, size_t msglen);

static int
lustre_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf,
    size_t len, char *msg, size_t msglen)
{
	int rc;

	if (is_record(target))
		return record_read(a, s, target, buf, len, msg, msglen);
	rc = tune_read_default(a, s, target, buf, len, msg, msglen);

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

/* Concrete path -> lctl name: "/sys/fs/lustre/osc/fs-OST0000-osc/x" -> "osc.fs-OST0000-osc.x";
 * a -P record -> its name (the key it is journaled under). */
static void
lustre_describe(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	const char *p = target;
	size_t o = 0;

	(void)s;
	if (is_record(target)) {
		snprintf(buf, len, "%s", target + strlen(LUSTRE_RECORD));
		return;
	}
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

/* lctl under the sysroot (usr/sbin or usr/bin) into buf: 0, or -ENOENT
 * with msg. */
static int
lctl_path(struct agent *a, char *buf, size_t len, char *msg, size_t msglen)
{
	const char *cands[] = { "/usr/sbin/lctl", "/usr/bin/lctl" };

	for (size_t k = 0; k < nitems(cands); k++)
		if (agent_path(a, buf, len, cands[k]) == 0 && access(buf, X_OK) == 0)
			return 0;
	snprintf(msg, msglen, "lctl not found (needed for persistent=\"yes\")");
	return -ENOENT;
}

/* lctl set_param -P NAME=VALUE, or -P -d NAME when value is NULL. */
static int
lctl_persist(struct agent *a, const char *name, const char *value, char *msg, size_t msglen)
{
	char lctl[PATH_MAX], arg[PATH_MAX + 4096], err[1024];
	char *argv[6];
	int rc, i = 0;

	if ((rc = lctl_path(a, lctl, sizeof(lctl), msg, msglen)) < 0)
		return rc;
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

/* The record target of a parameter target (thread's own buffer), NULL
 * for a record: every mount's instance of one file system names the
 * same. */
static const char *
lustre_record_of(const char *target)
{
	static _Thread_local char buf[PATH_MAX + 16];
	char name[PATH_MAX];

	if (is_record(target))
		return NULL;
	pmt_name(NULL, target, name, sizeof(name));
	snprintf(buf, sizeof(buf), LUSTRE_RECORD "%s", name);
	return buf;
}

/* The value of record name in "llog_print params" output text, into buf
 * (RECORD_NONE when it has none): the last record of that name. */
static void
llog_value(const char *text, const char *name, char *buf, size_t len)
{
	size_t nl = strlen(name);

	snprintf(buf, len, RECORD_NONE);
	for (const char *l = text; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0')) {
		const char *p = strstr(l, "param: "), *v;
		size_t ll = strcspn(l, "\n");

		if (p == NULL || p >= l + ll || strncmp(p + 7, name, nl) != 0 ||
		    p[7 + nl] == '\0' || strchr(",} ", p[7 + nl]) == NULL ||
		    (v = strstr(p, "value: ")) == NULL || v >= l + ll)
			continue;
		v += 7;
		snprintf(buf, len, "%.*s", (int)strcspn(v, ",}\n"), v);
		strtrim(buf);
	}
}

/* Whether record target, read for the first time (empty s->value), has
 * a persistent parameter journaled by a journal from before (without the
 * record): knob wrote the record, its rollback deletes it, and its value
 * now is knob's, never an original. */
static int
record_late(struct agent *a, const Knob__Setting *s, const char *target)
{
	const struct journal *j = a->tune ? &a->tune->j : NULL;
	const char *rec;

	if (j == NULL || (s->value != NULL && *s->value != '\0') ||
	    journal_find(j->orig, j->norig, "lustre", target, "") >= 0)
		return 0;
	for (size_t i = 0; i < j->norig; i++)
		if (strcmp(j->orig[i].driver, "lustre") == 0 && j->orig[i].persistent &&
		    (rec = lustre_record_of(j->orig[i].target)) != NULL && strcmp(rec, target) == 0)
			return 1;
	return 0;
}

/* Read record target: the value of its -P record, RECORD_NONE when there
 * is none.  Only a persistent setting has one journaled
 * (TUNE_NOT_SETTABLE otherwise). */
static int
record_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf,
    size_t len, char *msg, size_t msglen)
{
	char lctl[PATH_MAX], err[1024], *out;
	char *argv[] = { lctl, (char *)(uintptr_t)"--device", (char *)(uintptr_t)"MGS",
		(char *)(uintptr_t)"llog_print", (char *)(uintptr_t)"params", NULL };
	int rc;

	if (!s->persistent || record_late(a, s, target)) {
		snprintf(msg, msglen, "no set_param -P record to journal (not persistent, or "
		    "journaled before knob journaled records)");
		return TUNE_NOT_SETTABLE;
	}
	if ((rc = lctl_path(a, lctl, sizeof(lctl), msg, msglen)) < 0)
		return rc;
	out = xmalloc(LLOG_OUT_MAX);
	rc = cmd_run(argv, tune_cmd_timeout(a), out, LLOG_OUT_MAX, err, sizeof(err));
	if (rc != 0) {
		snprintf(msg, msglen, "lctl --device MGS llog_print params %s (%s %d): %s",
		    rc == -ETIMEDOUT ? "timed out" : "failed", rc < 0 ? "errno" : "exit",
		    rc < 0 ? -rc : rc, err);
		rc = rc > 0 ? -EIO : rc;
	} else
		llog_value(out, target + strlen(LUSTRE_RECORD), buf, len);
	free(out);
	return rc;
}

/* Put record target's value back: set_param -P, or -P -d for none. */
static int
record_write(struct agent *a, const char *target, const char *value, char *msg,
    size_t msglen)
{
	return lctl_persist(a, target + strlen(LUSTRE_RECORD),
	    strcmp(value, RECORD_NONE) == 0 ? NULL : value, msg, msglen);
}

/* Whether the journal holds record target's original (a journal from
 * before journaled none: the instance's rollback deletes the record). */
static int
record_journaled(struct agent *a, const char *target)
{
	const struct journal *j = a->tune ? &a->tune->j : NULL;
	const char *rec = lustre_record_of(target);

	return j != NULL && rec != NULL && journal_find(j->orig, j->norig, "lustre", rec, "") >= 0;
}

/* The permanent record first (-P), then the live value.  When the live
 * write fails, the record goes back to what it was (deleted again when
 * there was none): the key keeps its live value, so no revert comes to
 * undo it, and a remount would otherwise bring a value the apply
 * reported as failed.  A -P record target: record_write. */
static int
lustre_write(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	char name[PATH_MAX], was[NORM_VALUE_MAX], m[TUNE_MSG_MAX];
	const char *rec = lustre_record_of(target);
	size_t len;
	int rc;

	if (is_record(target))
		return record_write(a, target, value, msg, msglen);
	if (!s->persistent)
		return tune_write_path(a, target, value, msg, msglen);
	pmt_name(s, target, name, sizeof(name));
	if ((rc = record_read(a, s, rec, was, sizeof(was), msg, msglen)) < 0 ||
	    (rc = lctl_persist(a, name, value, msg, msglen)) < 0 ||
	    (rc = tune_write_path(a, target, value, msg, msglen)) >= 0)
		return rc;
	len = strlen(msg);
	if (record_write(a, rec, was, m, sizeof(m)) < 0)
		snprintf(msg + len, msglen - len, "; and the permanent record stays: %s", m);
	else if (strcmp(was, RECORD_NONE) == 0)
		snprintf(msg + len, msglen - len, "; permanent record deleted again");
	else
		snprintf(msg + len, msglen - len, "; permanent record back to %s", was);
	return rc;
}

/* Put back an original: a -P record once (record_write); a parameter's
 * live value.  A persistent parameter whose record is not journaled (a
 * journal from before) deletes the record first, as it did then. */
static int
lustre_restore(struct agent *a, const Knob__Setting *s, const char *target,
    const char *value, char *msg, size_t msglen)
{
	char name[PATH_MAX];
	int rc;

	if (is_record(target))
		return record_write(a, target, value, msg, msglen);
	if (s->persistent && !record_journaled(a, target)) {
		pmt_name(s, target, name, sizeof(name));
		if ((rc = lctl_persist(a, name, NULL, msg, msglen)) < 0)
			return rc;
	}
	return tune_write_path(a, target, value, msg, msglen);
}

/* The default check; a -P record is not a file (nothing to check). */
static int
lustre_check(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	return is_record(target) ? 0 : tune_check_default(a, s, target, value, msg, msglen);
}

/* A target is its file (/sys/fs/lustre/...); a -P record is none. */
static int
lustre_file(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	return is_record(target) ? -1 : tune_file_default(s, target, buf, len);
}

const struct tune_driver drv_lustre = {
	.name = "lustre",
	.resolve = lustre_resolve,
	.read = lustre_read,
	.normalise = tune_norm_default,
	.write = lustre_write,
	.restore = lustre_restore,
	.describe = lustre_describe,
	.coupled_target = lustre_record_of,
	.coupled_left = "putting the -P record back would set every mount of the file system "
	    "(lctl set_param -P reaches mounted clients too), that one included",
	.check = lustre_check,
	.file = lustre_file,
};
