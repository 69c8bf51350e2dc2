/* lustre driver: lctl-style parameter names (osc.*OST*.max_rpcs_in_flight,
 * llite.*.max_read_ahead_mb, timeout).  Resolved natively the way lctl does:
 * dots become slashes except inside NIDs (192.168.1.1@o2ib), then the path is
 * globbed under /sys/fs/lustre, /proc/fs/lustre and /sys/kernel/debug/lustre
 * (a parameter found under an earlier root hides the same one under a later
 * root) and every match is written.  persistent="yes" also records the value
 * with "lctl set_param -P" (lctl found under the sysroot: usr/sbin/lctl or
 * usr/bin/lctl); rollback deletes that record with "lctl set_param -P -d". */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"

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
	rc = tune_run_cmd(argv, tune_cmd_timeout(a), NULL, 0, err, sizeof(err));
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
	lustre_describe(s, target, name, sizeof(name));
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
		lustre_describe(s, target, name, sizeof(name));
		if ((rc = lctl_persist(a, name, NULL, msg, msglen)) < 0)
			return rc;
	}
	return tune_write_path(a, target, value, msg, msglen);
}

const struct tune_driver drv_lustre = {
	.name = "lustre",
	.resolve = lustre_resolve,
	.read = tune_read_default,
	.normalise = tune_norm_default,
	.write = lustre_write,
	.restore = lustre_restore,
	.describe = lustre_describe,
	.check = tune_check_default,
};
