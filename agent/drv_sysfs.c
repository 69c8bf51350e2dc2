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

const struct tune_driver drv_sysfs = {
	.name = "sysfs",
	.resolve = sysfs_resolve,
	.read = tune_read_default,
	.normalise = tune_norm_default,
	.write = tune_write_default,
	.describe = tune_describe_default,
};
