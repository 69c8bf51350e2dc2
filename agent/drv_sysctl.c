/* sysctl driver: dotted names (vm.dirty_ratio) under /proc/sys, globs
 * allowed (net.ipv4.conf.*.rp_filter).  A name containing '/' is taken as a
 * path below /proc/sys (for interface names with dots).  Values of
 * multi-value sysctls are compared with white space collapsed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tune.h"

static int
sysctl_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	char pat[PATH_MAX];
	size_t o;
	int rc;

	o = (size_t)snprintf(pat, sizeof(pat), "/proc/sys/");
	for (const char *p = s->key; *p && o + 1 < sizeof(pat); p++)
		pat[o++] = strchr(s->key, '/') ? *p : (*p == '.' ? '/' : *p);
	pat[o] = '\0';
	if (strstr(pat, "/../") != NULL) {
		snprintf(msg, msglen, "bad sysctl name %s", s->key);
		return -EINVAL;
	}
	rc = tune_glob(a, pat, out);
	if (rc < 0)
		snprintf(msg, msglen, "glob %s: %s", pat, strerror(-rc));
	return rc;
}

/* "/proc/sys/net/core/somaxconn" -> "net.core.somaxconn" */
static void
sysctl_describe(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	size_t o = 0;
	const char *p = target;

	(void)s;
	if (strncmp(p, "/proc/sys/", 10) == 0)
		p += 10;
	for (; *p && o + 1 < len; p++)
		buf[o++] = *p == '/' ? '.' : *p;
	buf[o] = '\0';
}

const struct tune_driver drv_sysctl = {
	.name = "sysctl",
	.resolve = sysctl_resolve,
	.read = tune_read_default,
	.normalise = tune_norm_default,
	.write = tune_write_default,
	.describe = sysctl_describe,
	.check = tune_check_default,
	.path_keys = 1,
};
