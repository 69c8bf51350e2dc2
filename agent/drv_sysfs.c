/* sysfs driver: a path or glob under /sys (absolute, or relative to /sys),
 * BIOS-style knobs such as cpu/smt/control or cpufreq governors.  Anything
 * outside /sys is refused (setting_validate) and directories are skipped.
 *
 * SMT and per-CPU keys: writing cpu/smt/control=off takes the sibling CPUs
 * offline, and the kernel then refuses reads and writes of their per-CPU
 * attributes until they are back online (cpufreq answers EBUSY while a
 * policy is inactive; other per-CPU files may be refused or removed).  So
 * smt/control is written before every other key (rank < 0: apply and
 * rollback alike, rollback turns SMT back on before it puts per-CPU
 * originals back), a glob does not reach a CPU that is offline, and a
 * per-CPU attribute the kernel refuses while its CPU is offline is
 * TUNE_NOT_SETTABLE ("not applicable now"), not a failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tune.h"

#define CPU_DIR "/sys/devices/system/cpu/cpu"

/* Whether path names the SMT switch (cpu/smt/control). */
static int
is_smt_control(const char *path)
{
	size_t pl = strlen(path), sl = strlen("/cpu/smt/control");

	return pl >= sl && strcmp(path + pl - sl, "/cpu/smt/control") == 0;
}

/* Whether target is an attribute of one CPU (/sys/devices/system/cpu/cpuN/...)
 * whose cpuN/online reads 0.  A CPU without an online file (cpu0, often)
 * cannot go offline. */
static int
cpu_offline(struct agent *a, const char *target)
{
	char path[PATH_MAX], v[16], m[TUNE_MSG_MAX];
	size_t cl = strlen(CPU_DIR), n;

	if (strncmp(target, CPU_DIR, cl) != 0)
		return 0;
	n = strspn(target + cl, "0123456789");
	if (n == 0 || target[cl + n] != '/')
		return 0;
	snprintf(path, sizeof(path), "%.*s/online", (int)(cl + n), target);
	return tune_read_path(a, path, v, sizeof(v), m, sizeof(m)) == 0 && strtrim(v)[0] == '0';
}

/* rc of a refused per-CPU read or write: TUNE_NOT_SETTABLE with msg when
 * its CPU is offline, else rc. */
static int
offline_rc(struct agent *a, const char *target, int rc, char *msg, size_t msglen)
{
	size_t cl = strlen(CPU_DIR);

	if (rc >= 0 || !cpu_offline(a, target))
		return rc;
	snprintf(msg, msglen, "cpu%.*s is offline (SMT off or unplugged): not applicable while "
	    "it is offline", (int)strspn(target + cl, "0123456789"), target + cl);
	return TUNE_NOT_SETTABLE;
}

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
		    S_ISREG(st.st_mode) && !cpu_offline(a, m.v[i]))
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

/* Read target; SMT that cannot switch and an offline CPU's attributes are
 * TUNE_NOT_SETTABLE. */
static int
sysfs_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf,
    size_t len, char *msg, size_t msglen)
{
	int rc = tune_read_default(a, s, target, buf, len, msg, msglen);

	if (rc < 0 || !is_smt_control(target)) {
		if ((rc = offline_rc(a, target, rc, msg, msglen)) == TUNE_NOT_SETTABLE)
			buf[0] = '\0';
		return rc;
	}
	for (size_t i = 0; i < nitems(smt_fixed); i++)
		if (strcmp(buf, smt_fixed[i]) == 0) {
			snprintf(msg, msglen, "SMT control reads %s: SMT cannot be switched on this "
			    "node", buf);
			return TUNE_NOT_SETTABLE;
		}
	return rc;
}

/* Write target; an offline CPU's attribute that the kernel refuses is
 * TUNE_NOT_SETTABLE (not written, not a failure). */
static int
sysfs_write(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	return offline_rc(a, target, tune_write_default(a, s, target, value, msg, msglen), msg,
	    msglen);
}

/* cpu/smt/control before every other key (of any target): it takes CPUs
 * on- and offline, which decides whether their attributes can be written. */
static int
sysfs_rank(const Knob__Setting *s)
{
	return is_smt_control(s->key) ? -1 : 0;
}

/* Whether target (below the sysroot, its links followed) is a network
 * interface's MTU file (/sys/class/net/IF/mtu, which is
 * /sys/devices/.../net/IF/mtu); IF into ifn. */
static int
is_net_mtu(struct agent *a, const char *target, char *ifn, size_t len)
{
	char full[PATH_MAX], real[PATH_MAX], *mtu, *name;

	if (agent_path(a, full, sizeof(full), target) < 0)
		return 0;
	if (realpath(full, real) == NULL)
		snprintf(real, sizeof(real), "%s", full);
	if ((mtu = strrchr(real, '/')) == NULL || strcmp(mtu, "/mtu") != 0)
		return 0;
	*mtu = '\0';
	if ((name = strrchr(real, '/')) == NULL || name - real < 4 ||
	    strncmp(name - 4, "/net", 4) != 0)
		return 0;
	snprintf(ifn, len, "%s", name + 1);
	return 1;
}

/* tune_driver.check: the file is writable, and it is no interface's MTU:
 * a write of that moves the interface's IPv6 MTU and the MTUs of the
 * devices stacked on it, which the net driver journals beside its mtu and
 * puts back, and a sysfs key would not (a rollback would leave them at
 * the MTU it restores). */
static int
sysfs_check(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	char ifn[256];
	int rc;

	if ((rc = tune_check_default(a, s, target, value, msg, msglen)) < 0 ||
	    !is_net_mtu(a, target, ifn, sizeof(ifn)))
		return rc;
	snprintf(msg, msglen, "it is %s's MTU, whose every write also sets its IPv6 MTU and the "
	    "MTUs of the devices stacked on it, which a sysfs key does not journal (a rollback "
	    "would lose them): set it with <net interface=\"%s\" attr=\"mtu\">", ifn, ifn);
	return -EPERM;
}

const struct tune_driver drv_sysfs = {
	.name = "sysfs",
	.resolve = sysfs_resolve,
	.read = sysfs_read,
	.check = sysfs_check,
	.file = tune_file_default,
	.path_keys = 1,
	.normalise = tune_norm_default,
	.write = sysfs_write,
	.describe = tune_describe_default,
	.rank = sysfs_rank,
};
