/* The .deb (make deb): what it holds, lintian without errors, the man
 * pages render with man -l, and dpkg -i installs it into a scratch chroot
 * (tests/pkg-chroot.sh: overlay on the machine's /usr, private mount
 * namespace) where postinst makes /etc/knob and /var/lib/knob and starts
 * the agent only once its certificates exist, an upgrade only try-restarts,
 * a reinstall after dpkg -r enables and starts again the units enabled
 * before, and purge removes the node's credentials and state (a stand-in
 * systemctl records what the scripts ask of it there); and the unit under a real
 * systemd in a systemd-nspawn container (PID 1 of this machine is not
 * systemd). */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <glob.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "harness.h"
#include "util.h"

static char deb[4096], tmp[256];

/* Output of a shell command (stdout and stderr) and its exit status. */
static int
sh_out(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int
sh_out(char **out, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = cu_sh_out(out, "%s", cmd);
	fprintf(stderr, "---- %s -> %d\n%s", cmd, rc, *out);
	return rc;
}

static void
setup(void)
{
	const char *d = getenv("KNOB_DEB");

	snprintf(deb, sizeof(deb), "%s", d ? d : "build-deb/knob.deb");
	ck_assert_msg(access(deb, R_OK) == 0, "%s missing: make deb", deb);
	cu_subdir(tmp, sizeof(tmp), "pkg");	/* under cu_base: gone also after a failure */
}

static void
teardown(void)
{
	cu_rm_rf(tmp);
}

START_TEST(contents)
{
	static const char *const want[] = {
		"./usr/sbin/knobd", "./usr/bin/knobctl", "./lib/systemd/system/knobd.service",
		"./usr/share/man/man1/knobctl.1.gz", "./usr/share/man/man8/knobd.8.gz",
		"./usr/share/man/man8/knob-sweep.8.gz", "./lib/systemd/system/knob-sweep.service",
		"./lib/systemd/system/knob-sweep.timer",
		"./usr/share/bash-completion/completions/knobctl", "./usr/share/knob/profiles/",
		"./usr/share/knob/plays/", "./usr/share/doc/knob/copyright",
		"./usr/share/knob/profiles/hpc-storage-base.xml",
	};
	char *out;

	ck_assert_int_eq(sh_out(&out, "dpkg-deb -c %s", deb), 0);
	for (size_t i = 0; i < nitems(want); i++)
		ck_assert_msg(strstr(out, want[i]), "no %s in the package", want[i]);
	/* the state directory is postinst's, never shipped */
	ck_assert_ptr_null(strstr(out, "./var/lib/knob"));
	free(out);
	ck_assert_int_eq(sh_out(&out, "dpkg-deb -f %s Package Version Depends", deb), 0);
	ck_assert_msg(strstr(out, "Package: knob") && strstr(out, "libssh2-1") && strstr(out, "libc6"),
	    "%s", out);
	free(out);
	/* what the description promises is what postinst does: no start for
	 * certificates that come after the install (before, "the agent starts
	 * once its certificates exist") */
	ck_assert_int_eq(sh_out(&out, "dpkg-deb -f %s Description", deb), 0);
	ck_assert_msg(strstr(out, "need\n systemctl enable --now knobd.") &&
	    !strstr(out, "starts once its certificates exist"), "%s", out);
	free(out);
}
END_TEST

START_TEST(lintian_no_errors)
{
	char *out;
	int rc = sh_out(&out, "lintian --fail-on error --display-info %s", deb);

	ck_assert_msg(rc == 0, "lintian: %s", out);
	ck_assert_msg(strstr(out, "\nE: ") == NULL && strncmp(out, "E: ", 3) != 0, "%s", out);
	free(out);
}
END_TEST

/* man -l renders page without groff warnings, and the text has want1, want2. */
static void
renders(const char *page, const char *want1, const char *want2)
{
	char *out;

	ck_assert_int_eq(sh_out(&out, "MANWIDTH=80 man --warnings -l %s/x/%s 2>&1 >/dev/null", tmp, page), 0);
	ck_assert_msg(out[0] == '\0', "groff warnings: %s", out);
	free(out);
	ck_assert_int_eq(sh_out(&out, "MANWIDTH=80 man -l %s/x/%s | col -b", tmp, page), 0);
	ck_assert_msg(strstr(out, want1) && strstr(out, want2), "%s", out);
	free(out);
}

START_TEST(man_pages_render)
{
	char *out;

	ck_assert_int_eq(sh_out(&out, "dpkg-deb -x %s %s/x", deb, tmp), 0);
	free(out);
	renders("usr/share/man/man1/knobctl.1.gz", "knobctl - tune and benchmark", "bootstrap -w NODESET");
	renders("usr/share/man/man1/knobctl.1.gz", "--fanout N", "--via ssh");
	renders("usr/share/man/man8/knobd.8.gz", "knobd - the knob storage tuning and benchmark agent",
	    "--stdio");
	/* the page knob-sweep.service's Documentation= names */
	renders("usr/share/man/man8/knob-sweep.8.gz", "knob-sweep - scheduled knob health sweeps",
	    "KNOB_SWEEP_TARGETS");
}
END_TEST

/* Between the markers a and b of out (both there, in order): the text. */
static char *
section(const char *out, const char *a, const char *b)
{
	const char *s = strstr(out, a), *e = s ? strstr(s, b) : NULL;

	ck_assert_msg(s && e, "no %s ... %s in: %s", a, b, out);
	return strndup(s, (size_t)(e - s));
}

/* pkg-chroot.sh's upgrade, remove and purge steps.  The upgrade (postinst
 * configure OLD-VERSION) neither enables nor (re)starts anything: it only
 * try-restarts the agent and the holder, which systemd does where they run,
 * and an /etc/knob tightened to 0700 stays 0700.  dpkg -r stops the units
 * with one systemctl call, disables them with another that does not reload
 * (one reload took about 1 s), reloads systemd once after the units went
 * and keeps bootstrap's service-pending marker
 * (/etc/knob/bootstrap-service-pending: so does the reinstall, so the next
 * bootstrap still runs dpkg -i and the service command again); dpkg
 * --purge removes the node's credentials, that marker, the
 * agent's state and bootstrap's cached .deb, and keeps the admin's
 * cluster.xml and results database, and the tuning journal: it holds the
 * originals of settings still tuned; and, beside that journal only, the
 * agent's controller-addrs, which keeps a net glob of the journal's
 * profile off the controllers' interfaces when a reinstall after a reboot
 * re-applies it (before, purge removed it: that re-apply could reach the
 * management interface). */
static void
upgrade_remove_purge(const char *out)
{
	char *up = section(out, "== upgrade", "== files");
	char *rm = section(out, "== remove", "== reinstall");
	char *purge = section(out, "== purge", "== done");

	ck_assert_msg(strstr(up, "systemctl try-restart knobd.service knob-mux.service\n"), "%s", up);
	ck_assert_msg(!strstr(up, "enable") && !strstr(up, " restart") && !strstr(up, " start"),
	    "%s", up);
	ck_assert_msg(strstr(up, "\n700 ") && strstr(up, "/root/etc/knob\n"), "%s", up);
	ck_assert_msg(strstr(rm, "systemctl stop knobd.service knob-mux.service knob-sweep.timer "
	    "knob-sweep.service\nsystemctl disable --no-reload knobd.service knob-mux.service "
	    "knob-sweep.timer\nsystemctl daemon-reload\n"), "%s", rm);
	ck_assert_msg(strstr(rm, "node.key: kept\nbootstrap-service-pending: kept\n"), "%s", rm);
	ck_assert_msg(strstr(purge, "systemctl daemon-reload\n"), "%s", purge);
	ck_assert_msg(strstr(purge, "\nleft: etc/knob/cluster.xml var/lib/knob/controller-addrs "
	    "var/lib/knob/results.db var/lib/knob/tune-journal.json\n"),
	    "%s", purge);
	/* the journal gone (rolled back), the controller addresses go too */
	ck_assert_msg(strstr(purge, "\nleft: etc/knob/cluster.xml var/lib/knob/results.db\n"),
	    "%s", purge);
	free(up);
	free(rm);
	free(purge);
}

/* pkg-chroot.sh's reinstall steps (the stand-in systemctl answers
 * is-enabled from what enable and disable recorded).  dpkg -r records the
 * units enabled then (the agent and the holder) in
 * /var/lib/knob/units-enabled and leaves the package in config-files; the
 * reinstall (dpkg -i: postinst configure OLD-VERSION) enables and restarts
 * both again and drops the record, and an upgrade after it only
 * try-restarts.  postinst abort-remove undoes a prerm remove the same way.
 * An agent the admin disabled before dpkg -r is not recorded and stays
 * disabled after the reinstall, the holder is enabled again; dpkg -r then
 * dpkg --purge leaves no record (upgrade_remove_purge checks what is
 * left). */
static void
reinstall_after_remove(const char *out)
{
	static const char both[] = "systemctl enable --no-reload knobd.service knob-mux.service\n"
	    "systemctl daemon-reload\nsystemctl restart knobd.service knob-mux.service\n"
	    "recorded: none\nenabled: enabled enabled\n";
	char *rm = section(out, "== remove", "== reinstall");
	char *re = section(out, "== reinstall", "== upgrade after");
	char *up = section(out, "== upgrade after", "== abort-remove");
	char *abort = section(out, "== abort-remove", "== remove (the agent disabled");
	char *dis = section(out, "== remove (the agent disabled", "== remove, then purge");
	char *last = section(out, "== remove, then purge", "== purge");

	ck_assert_msg(strstr(rm, "recorded: knobd.service knob-mux.service\n") &&
	    strstr(rm, "deinstall ok config-files\n"), "%s", rm);
	ck_assert_msg(strstr(re, both) && !strstr(re, "try-restart") &&
	    strstr(re, "bootstrap-service-pending: kept\n"), "%s", re);
	ck_assert_str_eq(up, "== upgrade after the reinstall\nsystemctl daemon-reload\n"
	    "systemctl try-restart knobd.service knob-mux.service\nrecorded: none\n");
	ck_assert_msg(strstr(abort, "recorded: knobd.service knob-mux.service\n") && strstr(abort, both),
	    "%s", abort);
	ck_assert_msg(strstr(dis, "recorded: knob-mux.service\n"
	    "systemctl enable --no-reload knob-mux.service\nsystemctl daemon-reload\n"
	    "systemctl restart knob-mux.service\n"
	    "recorded: none\nenabled: disabled enabled\n"), "%s", dis);
	ck_assert_msg(!strstr(dis, "enable knobd") && !strstr(dis, "start knobd"), "%s", dis);
	ck_assert_msg(strstr(last, "recorded: knob-mux.service\n"), "%s", last);
	free(rm);
	free(re);
	free(up);
	free(abort);
	free(dis);
	free(last);
}

/* pkg-chroot.sh's removal without systemd (a chroot, an image build): the
 * links the real systemctl enable made offline stay after dpkg -r (a
 * reinstall finds its units enabled again) and go with dpkg --purge, and
 * so do the .wants directories they leave empty.  Before, prerm and postrm
 * did nothing without systemd and purge left the links dangling. */
static void
purge_without_systemd(const char *out)
{
	static const char links[] = "links: multi-user.target.wants/knob-mux.service "
	    "multi-user.target.wants/knobd.service timers.target.wants/knob-sweep.timer\n";
	char *s = section(out, "== without systemd", "== done");
	const char *rm = strstr(s, links);

	ck_assert_msg(rm && strstr(rm + 1, links) && strstr(s, "links: none\nwants dirs: none\n"),
	    "%s", s);
	free(s);
}

START_TEST(dpkg_install_chroot)
{
	char *out, *nocert, *withcert;

	ck_assert_int_eq(sh_out(&out, "unshare -m tests/pkg-chroot.sh %s %s", deb, tmp), 0);
	ck_assert_ptr_nonnull(strstr(out, "install ok installed"));
	ck_assert_msg(strstr(out, "700 ") && strstr(out, "/var/lib/knob\n") && strstr(out, "/etc/knob\n"),
	    "%s", out);
	nocert = strstr(out, "== systemctl calls without certificates");
	withcert = strstr(out, "== with certificates");
	ck_assert(nocert && withcert && withcert > nocert);
	/* no certificates: the agent is neither enabled nor started */
	ck_assert_ptr_null(memmem(nocert, (size_t)(withcert - nocert), "restart", 7));
	ck_assert_ptr_null(memmem(nocert, (size_t)(withcert - nocert), "enable", 6));
	ck_assert_ptr_nonnull(strstr(withcert, "systemctl enable --no-reload knobd.service\n"
	    "systemctl daemon-reload\n"));
	ck_assert_ptr_nonnull(strstr(withcert, "systemctl restart knobd.service"));
	upgrade_remove_purge(out);
	reinstall_after_remove(out);
	purge_without_systemd(out);
	ck_assert_ptr_nonnull(strstr(out, "knobctl 0."));
	/* the profiles ship in /usr/share/knob/profiles, where knobctl looks */
	ck_assert_msg(strstr(out, "NAME ") && strstr(out, "gpfs-client "), "%s", out);
	ck_assert_msg(strstr(out, "755 ") && strstr(out, "/upper/sbin/knobd\n"), "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "== done"));
	free(out);
}
END_TEST

/* The holder's unit in the same container (pkg-nspawn.sh's output from
 * "== the connection holder"): not enabled by the package; started, it
 * holds node01's link (a second ping reuses it) on a private socket; a
 * renewed controller certificate makes the next command dial itself and
 * the holder exit 1, and Restart=on-failure brings it back on the new
 * files; systemctl stop is a clean exit that removes the socket.  Then both
 * units and the sweep timer run again and the package is removed: prerm
 * stops and disables all three, /var/lib/knob stays. */
static void
holder_under_systemd(const char *out)
{
	const char *mux = strstr(out, "== the connection holder: knob-mux.service");
	const char *renew = mux ? strstr(mux, "-- a renewed controller certificate") : NULL;

	ck_assert_msg(mux && renew, "%s", out);
	ck_assert_ptr_nonnull(strstr(mux, "mux enabled: disabled\n"));
	ck_assert_ptr_nonnull(strstr(mux, "mux status: links 0 "));
	ck_assert_ptr_nonnull(strstr(mux, "mux ping 1: node01: via the connection holder "
	    "(new link)  1 ok\n"));
	ck_assert_ptr_nonnull(strstr(mux, "mux ping 2: node01: via the connection holder "
	    "(reused link)  1 ok\n"));
	ck_assert_ptr_nonnull(memmem(mux, (size_t)(renew - mux), "NRestarts=0", 11));
	ck_assert_ptr_nonnull(strstr(mux, "mux socket: 600 root\n"));
	ck_assert_ptr_nonnull(strstr(renew, "mux ping after renewal: direct stale 1 ok\n"));
	ck_assert_ptr_nonnull(strstr(renew, "changed: closing every link"));
	ck_assert_ptr_nonnull(strstr(renew, "code=exited, status=1/FAILURE"));
	ck_assert_ptr_nonnull(strstr(renew, "NRestarts=1"));
	ck_assert_ptr_nonnull(strstr(renew, "mux ping 3: node01: via the connection holder "
	    "(new link)  1 ok\n"));
	ck_assert_ptr_nonnull(strstr(renew, "mux after stop: inactive success socket gone\n"));
	/* removal: prerm stops and disables both units, the state stays */
	ck_assert_ptr_nonnull(strstr(renew, "before remove: active active \n"));
	ck_assert_ptr_nonnull(strstr(renew, "after remove: inactive inactive  mux unit enabled: no\n"));
	ck_assert_ptr_nonnull(strstr(renew, "\nstate dir kept: 700\n"));
	/* and the sweep timer an admin enabled: before, it stayed enabled and
	 * kept firing a knobctl the removal took away */
	ck_assert_ptr_nonnull(strstr(renew, "sweep timer before remove: active\n"));
	ck_assert_msg(strstr(renew, "sweep timer after remove: inactive, enabled: no\n"), "%s",
	    strstr(renew, "sweep timer after remove"));
}

/* The unit's hardening under the real systemd leaves knobd what it tunes:
 * of the mounts under /sys and /proc that knobd's namespace has and the
 * container's PID 1 has not (pkg-nspawn.sh's "the unit's own mounts"),
 * only /proc/kmsg (ProtectKernelLogs) and /sys/fs/cgroup
 * (ProtectControlGroups): no read-only /proc/sys, /sys, /proc/fs (nfsd,
 * Lustre) or /sys/kernel/debug (Lustre's debugfs), as ProtectKernelTunables
 * would add. */
static void
unit_mounts_leave_tunables(const char *out)
{
	static const char tag[] = "the unit's own mounts under /sys, /proc:";
	const char *s = strstr(out, tag);
	char *line, *tok, *save = NULL;
	int point = 1;

	ck_assert_msg(s, "no \"%s\" in the output", tag);
	line = strndup(s + strlen(tag), strcspn(s + strlen(tag), "\n"));
	for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save), point = !point)
		ck_assert_msg(!point || strcmp(tok, "/proc/kmsg") == 0 ||
		    strncmp(tok, "/sys/fs/cgroup", 14) == 0, "the unit mounts %s read-only", tok);
	free(line);
}

/* pkg-nspawn.sh's upgrade from the previous package (this .deb with its
 * version lowered to VERSION~prev) with a profile active, under the real
 * systemd (the packaged unit, --sysroot added by a drop-in: a stand-in for
 * the container's read-only /proc/sys whose boot_id is the container's):
 * the profile applied over TLS, the admin then changes its key; dpkg -i
 * restarts the agent (a new main PID), which keeps the journal and the
 * active profile and leaves the admin's value: restarted in the same boot,
 * not re-applied; the files in /etc (certificates, inventory, drop-ins)
 * are kept. */
static void
upgrade_with_profile_active(const char *out)
{
	char *up = section(out, "== upgrade with a profile active", "== downgrade");

	ck_assert_msg(strstr(up, "changed         sysctl vm.dirty_ratio: 20 -> 10\n") &&
	    strstr(up, "applied: dirty_ratio 10\n"), "%s", up);
	ck_assert_msg(strstr(up, "Unpacking knob (" KNOB_VERSION ") over (" KNOB_VERSION "~prev)"),
	    "%s", up);
	ck_assert_msg(strstr(up, "after upgrade: restarted journal kept dirty_ratio 30\n"), "%s", up);
	ck_assert_msg(strstr(up, "node01:   pkgup (restarted in the same boot ") &&
	    strstr(up, "not re-applied, 1 key(s) differ (1 changed since knob set them))\n"), "%s", up);
	ck_assert_msg(strstr(up, "files in /etc: kept\n") && !strstr(up, "downgrading"), "%s", up);
	ck_assert_msg(strstr(up, "active profile pkgup: knobd restarted in the same boot (boot id "),
	    "%s", up);
	free(up);
}

/* pkg-nspawn.sh's downgrade to the previous package, which dpkg allows
 * with a warning, and prerm says the journal is kept and what an agent
 * that cannot read it does: the same as the upgrade (journal kept, agent
 * restarted, the admin's value left, files in /etc kept).  Then a journal of a newer
 * format than the agent reads (version 2, as a later package may write
 * before a downgrade): the agent refuses to start, loudly ("unsupported
 * journal version" in the unit's log, the unit failed once systemd gave up
 * restarting it), and leaves the file and the tuned value as they were;
 * the journal put back, it starts and the profile is active again. */
static void
downgrade_with_profile_active(const char *out)
{
	char *down = section(out, "== downgrade with a profile active", "== stop");

	ck_assert_msg(strstr(down, "downgrading knob from " KNOB_VERSION " to " KNOB_VERSION "~prev") &&
	    strstr(down, "Unpacking knob (" KNOB_VERSION "~prev) over (" KNOB_VERSION ")"), "%s", down);
	/* and the package says what becomes of the journal (prerm upgrade) */
	ck_assert_msg(strstr(down, "downgrading from " KNOB_VERSION " to " KNOB_VERSION "~prev: "
	    "/var/lib/knob/tune-journal.json (the originals of settings knob tuned) is kept; a knobd "
	    "that cannot read it refuses to start"), "%s", down);
	ck_assert_msg(strstr(down, "after downgrade: restarted journal kept dirty_ratio 30\n") &&
	    strstr(down, "not re-applied, 1 key(s) differ (1 changed since knob set them))\n") &&
	    strstr(down, "files in /etc: kept\n"), "%s", down);
	ck_assert_msg(strstr(down, "journal version now: \"version\":") &&
	    strstr(down, "newer journal: failed, untouched, dirty_ratio 30\n") &&
	    strstr(down, "/var/lib/knob/tune-journal.json:2: unsupported journal version\n"), "%s", down);
	ck_assert_msg(strstr(down, "journal put back: active on 1 node(s)\nnode01:   pkgup "), "%s", down);
	free(down);
}

/* pkg-nspawn.sh's reinstalls under the real systemd: after dpkg -r with
 * the agent and the holder enabled and running, dpkg -i of the .deb enables
 * and starts both again (the agent answers a TLS ping, the holder its
 * status); an agent the admin disabled and stopped before dpkg -r stays
 * so after the reinstall, while the enabled holder runs again. */
static void
reinstall_under_systemd(const char *out)
{
	char *re = section(out, "== reinstall (dpkg -i after dpkg -r)", "== the agent disabled");
	char *dis = section(out, "== the agent disabled by the admin", "== power off");

	ck_assert_msg(strstr(re, "ping: node01: pong (knobd " KNOB_VERSION ")\n1 ok\n") &&
	    strstr(re, "mux status: links ") &&
	    strstr(re, "after reinstall: enabled enabled, active active\n") &&
	    strstr(re, "sweep timer after reinstall: enabled active\n"), "%s", re);
	ck_assert_msg(strstr(dis, "mux status: links ") &&
	    strstr(dis, "after reinstall: disabled enabled, inactive active\n"), "%s", dis);
	free(re);
	free(dis);
}

/* nftw callback: remove a cgroup directory (its files go with it). */
static int
rmdir_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP && rmdir(p) < 0)
		fprintf(stderr, "could not remove cgroup %s: %s\n", p, strerror(errno));
	return 0;
}

/* Remove pkg-nspawn.sh's cgroups (knob-test.kt<pid>..., in each
 * hierarchy) of the test process mine (after its run) and of those no
 * longer running (a killed run's), deepest first; one still holding a
 * process stays. */
static void
remove_cgroups(pid_t mine)
{
	glob_t g = { 0 };
	int r = glob("/sys/fs/cgroup/knob-test.kt*", 0, NULL, &g);

	glob("/sys/fs/cgroup/*/knob-test.kt*", r == 0 ? GLOB_APPEND : 0, NULL, &g);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		long pid = strtol(strstr(g.gl_pathv[i], "knob-test.kt") + 12, NULL, 10);

		if (pid <= 0 || (pid != mine && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)))
			continue;
		nftw(g.gl_pathv[i], rmdir_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	globfree(&g);
}

/* The last n bytes of s (all of it when shorter). */
static const char *
tail_of(const char *s, size_t n)
{
	size_t len = strlen(s);

	return len > n ? s + len - n : s;
}

/* The packaged unit under a real systemd: a systemd-nspawn container
 * booted from a scratch tree holding the installed .deb
 * (tests/pkg-nspawn.sh), in a cgroup of its own and in mount, network
 * and PID namespaces that end with the script (a killed run leaves no
 * container, mount or network namespace; its cgroup goes at the next
 * run's start).  Without certificates the agent is neither enabled nor
 * running; the postinst, run again once they exist, enables and starts
 * it through the container's systemctl; it answers a TLS ping, is
 * restarted by systemd after a SIGKILL, stops cleanly; an upgrade
 * (dpkg -i again) after the
 * admin disabled and stopped it leaves it so, while the enabled, running
 * holder is restarted; a reinstall after dpkg -r enables and starts again
 * what was enabled (reinstall_under_systemd); the container powers off;
 * the holder's unit runs there too (holder_under_systemd); an upgrade
 * from the previous package and a downgrade to it with a profile active
 * keep it without re-applying it over the admin's change, and a journal
 * newer than the agent reads stops the agent, not the journal
 * (upgrade_with_profile_active, downgrade_with_profile_active).  The
 * container's units restart 0.1 s after a failure (a drop-in), not 5 s. */
START_TEST(unit_under_systemd)
{
	const char *bin = getenv("KNOB_BIN");
	char tag[64], knobctl[4096], *out, *nocert, *cert, want[128];
	int rc;

	snprintf(tag, sizeof(tag), "kt%ldsd", (long)getpid());	/* pid-tagged: remove_cgroups */
	snprintf(knobctl, sizeof(knobctl), "%s/knobctl", bin && *bin ? bin : "build");
	remove_cgroups(0);
	rc = sh_out(&out, "timeout 170 unshare -m -n -p --kill-child --mount-proc "
	    "tests/pkg-nspawn.sh %s %s %s %s", deb, tmp, tag, knobctl);
	remove_cgroups(getpid());
	ck_assert_msg(rc == 0, "pkg-nspawn.sh: exit %d; its output's end:\n%s", rc,
	    tail_of(out, 3000));
	ck_assert_ptr_nonnull(strstr(out, "pid1: systemd\n"));
	/* PID 1 of its namespaces: the container dies with it, also when the
	 * run is killed (no container left to clash with the next run's) */
	ck_assert_msg(strstr(out, "\nscript pid: 1\n"), "%s", tail_of(out, 3000));
	/* its own cgroup, not the /payload of every other run's container */
	snprintf(want, sizeof(want), "container cgroup: /knob-test.%s/payload/", tag);
	ck_assert_msg(strstr(out, want), "no %s in:\n%s", want, tail_of(out, 3000));
	nocert = strstr(out, "== without certificates");
	cert = strstr(out, "== certificates");
	ck_assert(nocert && cert && cert > nocert);
	ck_assert_ptr_nonnull(memmem(nocert, (size_t)(cert - nocert), "enabled: disabled", 17));
	ck_assert_ptr_nonnull(memmem(nocert, (size_t)(cert - nocert), "active: inactive", 16));
	ck_assert_ptr_nonnull(strstr(cert, "enabled: enabled\nping: node01: pong (knobd "));
	ck_assert_ptr_nonnull(strstr(cert, "NRestarts=0\nActiveState=active\nSubState=running"));
	ck_assert_ptr_nonnull(strstr(cert, "main pid comm: knobd\n"));
	ck_assert_ptr_nonnull(strstr(cert, "state dir: 700 root\n"));
	unit_mounts_leave_tunables(cert);
	ck_assert_ptr_nonnull(strstr(cert, "Main process exited, code=killed, status=9/KILL"));
	ck_assert_ptr_nonnull(strstr(cert, "ping: node01: pong (knobd " KNOB_VERSION ")\n1 ok\n"
	    "NRestarts=1\nActiveState=active"));
	ck_assert_ptr_nonnull(strstr(cert, "after stop: inactive  success"));
	ck_assert_ptr_nonnull(strstr(cert, "container exit: 0\n== done"));
	/* an upgrade leaves the disabled, stopped agent so and restarts the
	 * running holder (on the new binary) */
	ck_assert_ptr_nonnull(strstr(cert, "after upgrade: knobd disabled inactive, mux active restarted\n"));
	holder_under_systemd(out);
	upgrade_with_profile_active(out);
	downgrade_with_profile_active(out);
	reinstall_under_systemd(out);
	free(out);
}
END_TEST

static Suite *
pkg_suite(void)
{
	Suite *s = suite_create("pkg");
	TCase *tc = cu_tcase("deb", setup, teardown, 180);

	tcase_add_unchecked_fixture(tc, cu_base_setup, cu_base_teardown);

	tcase_add_test(tc, contents);
	tcase_add_test(tc, lintian_no_errors);
	tcase_add_test(tc, man_pages_render);
	tcase_add_test(tc, dpkg_install_chroot);
	tcase_add_test(tc, unit_under_systemd);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run(pkg_suite());
}
