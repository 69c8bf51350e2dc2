/* sysfs driver: a path or glob under /sys (absolute, or relative to /sys),
 * BIOS-style knobs such as cpu/smt/control or cpufreq governors.  Anything
 * outside /sys is refused (setting_validate) and directories are skipped. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tune.h"

/* Expand the key's glob to regular files under SYSROOT/sys. */
static int
sysfs_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	struct strvec m = { 0 };
	char pat[PATH_MAX], full[PATH_MAX];
	int rc;

	if (s->key[0] == '/')
		snprintf(pat, sizeof(pat), "%s", s->key);
	else
		snprintf(pat, sizeof(pat), "/sys/%s", s->key);
	if (strncmp(pat, "/sys/", 5) != 0 || strstr(pat, "/../") != NULL) {
		snprintf(msg, msglen, "%s is not under /sys", s->key);
		return -EINVAL;
	}
	rc = tune_glob(a, pat, &m);
	for (size_t i = 0; rc == 0 && i < m.n; i++) {
		struct stat st;

		if (agent_path(a, full, sizeof(full), m.v[i]) == 0 && stat(full, &st) == 0 &&
		    S_ISREG(st.st_mode))
			strvec_push(out, m.v[i]);
	}
	strvec_free(&m);
	if (rc < 0)
		snprintf(msg, msglen, "glob %s: %s", pat, strerror(-rc));
	return rc;
}

/* Values of cpu/smt/control that mean the node cannot switch SMT at all
 * (a VM without SMT, a CPU without it, or "nosmt" on the kernel command
 * line): the key is unsupported there, not a failure. */
static const char *const smt_fixed[] = { "notsupported", "forceoff", "notimplemented" };

static int
sysfs_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf,
    size_t len, char *msg, size_t msglen)
{
	size_t tl = strlen(target), sl = strlen("/cpu/smt/control");
	int rc = tune_read_default(a, s, target, buf, len, msg, msglen);

	if (rc < 0 || tl < sl || strcmp(target + tl - sl, "/cpu/smt/control") != 0)
		return rc;
	for (size_t i = 0; i < nitems(smt_fixed); i++)
		if (strcmp(buf, smt_fixed[i]) == 0) {
			snprintf(msg, msglen, "SMT control reads %s: SMT cannot be switched on this "
			    "node", buf);
			return TUNE_NOT_SETTABLE;
		}
	return rc;
}

const struct tune_driver drv_sysfs = {
	.name = "sysfs",
	.resolve = sysfs_resolve,
	.read = sysfs_read,
	.check = tune_check_default,
	.path_keys = 1,
	.normalise = tune_norm_default,
	.write = tune_write_default,
	.describe = tune_describe_default,
};
