/* Node checks of a health sweep: profile drift (the tuning verify path),
 * NICs (rtnetlink through libnl), block devices, memory and CPU counts,
 * MCE/EDAC error counts, load average, services, and the fleet-relative
 * probe through the built-in benchmark engine.  None of them touches a
 * mount point other than the probe's own directory. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "bench.h"
#include "health.h"
#include "log.h"
#include "tune.h"
#include "util.h"

/* Read a small file under the sysroot into buf (trimmed). 0 or -1. */
static int
read_under(struct agent *a, const char *abs, char *buf, size_t len)
{
	char path[PATH_MAX];

	if (agent_path(a, path, sizeof(path), abs) < 0 || read_small_file(path, buf, len) < 0)
		return -1;
	strtrim(buf);
	return 0;
}

/* ------------------------------------------------------------ drift */

/* How the drift check counts a key's verify state, as knobctl verify
 * judges a node: a key that could not be checked here (nothing on this
 * node matches it, skipped) is no match but no drift either; pending-restart
 * and protected keys match.  Any other state (drift, failed) is drift. */
enum { DK_MATCH, DK_DRIFT, DK_UNCHECKED };

static const struct {
	Knob__KeyState key;
	int kind;
} drift_kinds[] = {
	{ KNOB__KEY_STATE__KEY_OK, DK_MATCH },
	{ KNOB__KEY_STATE__KEY_PENDING_RESTART, DK_MATCH },
	{ KNOB__KEY_STATE__KEY_PROTECTED, DK_MATCH },
	{ KNOB__KEY_STATE__KEY_UNSUPPORTED, DK_UNCHECKED },
	{ KNOB__KEY_STATE__KEY_SKIPPED, DK_UNCHECKED },
};

/* The drift kind (DK_) of a key state. */
static int
drift_kind(Knob__KeyState st)
{
	for (size_t i = 0; i < nitems(drift_kinds); i++)
		if (drift_kinds[i].key == st)
			return drift_kinds[i].kind;
	return DK_DRIFT;
}

/* The keys of one kind in a drift reason: counted, the first 4 named. */
struct dkeys {
	char *list;
	size_t n;
};

/* Count key k in l; name it while fewer than 4 are named. */
static void
dkeys_add(struct dkeys *l, const Knob__KeyResult *k)
{
	const char *what = *k->target ? k->target : k->key;

	if (l->n++ >= 4)
		return;
	if (k->state == KNOB__KEY_STATE__KEY_DRIFT)
		str_appendf(&l->list, "%s%s %s is %s, wants %s", l->list ? "; " : "", k->driver,
		    what, k->before, k->wanted);
	else
		str_appendf(&l->list, "%s%s %s: %s", l->list ? "; " : "", k->driver, what,
		    *k->message ? k->message : tune_key_state_name((int)k->state));
}

/* "D of M keys drifted: ...; U could not be checked: ..." or "K of M keys
 * match, U could not be checked: ..."; NULL when every key matches.  The
 * caller frees it. */
static char *
drift_text(const struct dkeys *d, const struct dkeys *u, size_t m)
{
	char *s = NULL;

	if (d->n)
		str_appendf(&s, "%zu of %zu keys drifted: %s%s", d->n, m, d->list,
		    d->n > 4 ? "; ..." : "");
	else if (u->n)
		str_appendf(&s, "%zu of %zu keys match", m - u->n, m);
	if (u->n)
		str_appendf(&s, "%s%zu could not be checked on this node: %s%s", d->n ? "; " : ", ",
		    u->n, u->list, u->n > 4 ? "; ..." : "");
	return s;
}

/* Verify the expected profile: fail on drifted keys (or another active
 * profile), warn on keys this node cannot check (a Lustre key without
 * Lustre, a device it does not have: not the node's failure, and no
 * drain), each named. */
void
health_drift(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out)
{
	const Knob__VerifyRequest *v = req->verify;
	Knob__VerifyResult res;
	struct dkeys d = { 0 }, u = { 0 };
	char *text;

	(void)idx;
	if (tune_verify(a, v, &res) < 0) {
		hout_add(out, "drift", v->profile, ST_FAIL, "verify failed");
		return;
	}
	for (size_t i = 0; i < res.n_keys; i++) {
		int kind = drift_kind(res.keys[i]->state);

		if (kind != DK_MATCH)
			dkeys_add(kind == DK_DRIFT ? &d : &u, res.keys[i]);
	}
	text = drift_text(&d, &u, res.n_keys);
	if (v->profile[0] && strcmp(res.active_profile, v->profile) != 0)
		hout_add(out, "drift", v->profile, ST_FAIL, "active profile is %s%s%s",
		    *res.active_profile ? res.active_profile : "(none)", text ? "; " : "",
		    text ? text : "");
	else if (text)
		hout_add(out, "drift", v->profile, d.n ? ST_FAIL : ST_WARN, "%s", text);
	else
		hout_add(out, "drift", v->profile, ST_OK, "%zu keys match", res.n_keys);
	free(text);
	free(d.list);
	free(u.list);
	tune_verify_result_free(&res);
}

/* ------------------------------------------------------------ NICs */

static const struct {
	const char *name;
	rtnl_link_stat_id_t id;
} nic_counters[] = {
	{ "rx_errors", RTNL_LINK_RX_ERRORS }, { "tx_errors", RTNL_LINK_TX_ERRORS },
	{ "rx_dropped", RTNL_LINK_RX_DROPPED }, { "tx_dropped", RTNL_LINK_TX_DROPPED },
};

/* 1 when the interface named ifname is not the one the last sweep saw
 * (deleted and created again: another ifindex); stores the new ifindex. */
static int
nic_recreated(json_object *o, const char *ifname, struct rtnl_link *l)
{
	char key[128];
	uint64_t prev;
	int idx = rtnl_link_get_ifindex(l);

	snprintf(key, sizeof(key), "nic.%s.ifindex", ifname);
	return health_counter_swap(o, key, (uint64_t)idx, &prev) && prev != (uint64_t)idx;
}

/* Compare the error/drop counters with the last sweep's; store the new
 * ones.  Appends the grown ones to *grown; a failed save's note into note
 * (health_counters_save), and a reset baseline's when a counter had no
 * previous value (health_counters_reset_note).  An interface created again
 * since the last sweep started its counters from 0 since then: all of
 * them are new. */
static void
nic_counters_check(struct agent *a, const char *ifname, struct rtnl_link *l, char **grown,
    char *note, size_t len)
{
	struct health_state *hs = a->health;
	json_object *o;
	int had = 1, fresh;

	pthread_mutex_lock(&hs->mu);
	o = health_counters(hs);
	fresh = nic_recreated(o, ifname, l);
	for (size_t i = 0; i < nitems(nic_counters); i++) {
		char key[128];
		uint64_t now = rtnl_link_get_stat(l, nic_counters[i].id), prev;

		snprintf(key, sizeof(key), "nic.%s.%s", ifname, nic_counters[i].name);
		if (!health_counter_swap(o, key, now, &prev)) {
			had = 0;
			continue;
		}
		if (fresh)
			prev = 0;
		if (now > prev)
			str_appendf(grown, "%s%s +%llu", *grown ? ", " : "", nic_counters[i].name,
			    (unsigned long long)(now - prev));
	}
	if (fresh && *grown)
		str_appendf(grown, " (the interface was created again since then)");
	health_counters_save(hs, note, len);
	if (!had)
		health_counters_reset_note(hs, note, len);
	pthread_mutex_unlock(&hs->mu);
}

/* Up: administratively, and operationally (drivers that do not track the
 * operational state, like lo, report "unknown" with the carrier flag). */
static int
link_up(struct rtnl_link *l)
{
	unsigned flags = rtnl_link_get_flags(l);
	uint8_t op = rtnl_link_get_operstate(l);

	return (flags & IFF_UP) && (op == IF_OPER_UP || (op == IF_OPER_UNKNOWN &&
	    (flags & IFF_RUNNING)));
}

/* Link up, MTU, speed and counters of one expected interface. */
void
health_nic(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out)
{
	const Knob__NicExpect *e = req->nics[idx];
	struct nl_sock *sk = nl_socket_alloc();
	struct rtnl_link *l = NULL;
	char path[128], speed[32] = "", *grown = NULL, note[HEALTH_NOTE_MAX] = "";
	Knob__HealthCheck *c;
	long mbps = -1;
	unsigned mtu;

	if (sk == NULL || nl_connect(sk, NETLINK_ROUTE) < 0 ||
	    rtnl_link_get_kernel(sk, 0, e->name, &l) < 0) {
		hout_add(out, "nic", e->name, ST_FAIL, "no such interface");
		goto out;
	}
	mtu = rtnl_link_get_mtu(l);
	snprintf(path, sizeof(path), "/sys/class/net/%s/speed", e->name);
	if (read_under(a, path, speed, sizeof(speed)) == 0)
		mbps = strtol(speed, NULL, 10);
	if (!link_up(l))
		hout_add(out, "nic", e->name, ST_FAIL, "link is down");
	else if (e->mtu && mtu != e->mtu)
		hout_add(out, "nic", e->name, ST_FAIL, "MTU %u, expected %u", mtu, e->mtu);
	else if (e->speed_mbps && mbps != e->speed_mbps)
		hout_add(out, "nic", e->name, ST_FAIL, "speed %ld Mb/s, expected %lld Mb/s", mbps,
		    (long long)e->speed_mbps);
	else {
		if (e->counters)
			nic_counters_check(a, e->name, l, &grown, note, sizeof(note));
		if (grown)
			c = hout_add(out, "nic", e->name, ST_WARN, "counters grew since the last "
			    "sweep: %s", grown);
		else
			c = hout_add(out, "nic", e->name, ST_OK, "up, MTU %u, %ld Mb/s", mtu, mbps);
		health_counters_note(c, note);
	}
out:
	free(grown);
	if (l)
		rtnl_link_put(l);
	nl_socket_free(sk);
}

/* ------------------------------------------------------------ hardware */

/* Block devices that must be present (their settings are part of drift). */
void
health_blockdevs(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out)
{
	(void)idx;
	for (size_t i = 0; i < req->n_blockdevs; i++) {
		char abs[PATH_MAX], path[PATH_MAX];

		snprintf(abs, sizeof(abs), "/sys/block/%s", req->blockdevs[i]);
		if (strchr(req->blockdevs[i], '/') != NULL ||
		    agent_path(a, path, sizeof(path), abs) < 0 || access(path, F_OK) < 0)
			hout_add(out, "blockdev", req->blockdevs[i], ST_FAIL, "absent");
		else
			hout_add(out, "blockdev", req->blockdevs[i], ST_OK, "present");
	}
}

/* Physical memory and core/thread counts against the expectation. */
void
health_hw(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out)
{
	const Knob__HwExpect *e = req->hw;
	Knob__Facts f;
	double gib, want, tol;
	uint32_t cores, threads;

	(void)idx;
	if (facts_gather(a, &f) < 0) {
		hout_add(out, "memory", NULL, ST_FAIL, "cannot read the node's facts");
		return;
	}
	gib = (double)f.mem_total_kb / (1024.0 * 1024.0);
	want = e ? (double)e->mem_total_kb / (1024.0 * 1024.0) : 0;
	tol = e && e->mem_tolerance_pct > 0 ? e->mem_tolerance_pct : 5;
	if (want > 0 && (gib < want * (1 - tol / 100) || gib > want * (1 + tol / 100)))
		hout_add(out, "memory", NULL, ST_FAIL, "%.1f GiB, expected %.1f GiB (+-%.0f%%)", gib,
		    want, tol);
	else
		hout_add(out, "memory", NULL, ST_OK, "%.1f GiB", gib);
	cores = f.cpu ? f.cpu->cores : 0;
	threads = f.cpu ? f.cpu->threads : 0;
	if (e && ((e->cores && cores != e->cores) || (e->threads && threads != e->threads))) {
		char exp[64];

		if (e->cores && e->threads)
			snprintf(exp, sizeof(exp), "%u / %u", e->cores, e->threads);
		else	/* only what the sweep file asks for */
			snprintf(exp, sizeof(exp), "%u %s", e->cores ? e->cores : e->threads,
			    e->cores ? "cores" : "threads");
		hout_add(out, "cpu", NULL, ST_FAIL, "%u cores / %u threads, expected %s", cores,
		    threads, exp);
	} else
		hout_add(out, "cpu", NULL, ST_OK, "%u cores / %u threads", cores, threads);
	facts_free(&f);
}

/* Sum of the "MCE:" row of /proc/interrupts (machine check exceptions). */
static uint64_t
mce_count(struct agent *a)
{
	char path[PATH_MAX], *buf = NULL, *line, *save = NULL, *p, *end;
	uint64_t sum = 0;

	if (agent_path(a, path, sizeof(path), "/proc/interrupts") < 0 ||
	    read_file_bounded(path, 4u << 20, &buf, NULL) < 0)
		return 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line += strspn(line, " ");
		if (strncmp(line, "MCE:", 4) != 0)
			continue;
		for (p = line + 4;; p = end) {	/* one count per CPU, then the label */
			unsigned long long v = strtoull(p, &end, 10);

			if (end == p)
				break;
			sum += v;
		}
	}
	free(buf);
	return sum;
}

/* Sum of one EDAC counter (ce_count or ue_count) over the memory controllers. */
static uint64_t
edac_count(struct agent *a, const char *name)
{
	char path[PATH_MAX], buf[64];
	struct dirent *de;
	uint64_t sum = 0;
	DIR *d;

	if (agent_path(a, path, sizeof(path), "/sys/devices/system/edac/mc") < 0 ||
	    (d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char abs[PATH_MAX];

		if (strncmp(de->d_name, "mc", 2) != 0)
			continue;
		snprintf(abs, sizeof(abs), "/sys/devices/system/edac/mc/%s/%s", de->d_name, name);
		if (read_under(a, abs, buf, sizeof(buf)) == 0)
			sum += strtoull(buf, NULL, 10);
	}
	closedir(d);
	return sum;
}

#define ERRORS_HOLD_S 86400	/* default <errors hold>: a day */

/* MCE and EDAC UE errors held failing: counts since the first, times of
 * the first and the last (seconds since the epoch; last 0: none held). */
struct held {
	int64_t mce, ue, first, last;
};

/* int64 under key in o, 0 when absent. */
static int64_t
jint(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

/* The previous value of counter key into *prev, now stored: 0 after a
 * reboot or when the counter went down (all of it is new).  0 when there
 * was none (the first sweep: a baseline), else 1. */
static int
counter_since(json_object *o, const char *key, uint64_t now, int rebooted, uint64_t *prev)
{
	int had = health_counter_swap(o, key, now, prev);

	if (had && (rebooted || now < *prev))
		*prev = 0;
	return had;
}

/* Add this sweep's new MCE (dm) and UE (du) to the held ones in o; a hold
 * whose last error is hold_s old is over.  Result in *h. */
static void
hold_update(json_object *o, uint64_t dm, uint64_t du, int64_t now_s, int64_t hold_s,
    struct held *h)
{
	h->last = jint(o, "errors.last");
	h->first = h->last && now_s < h->last + hold_s ? jint(o, "errors.first") : 0;
	h->mce = h->first ? jint(o, "errors.mce") : 0;
	h->ue = h->first ? jint(o, "errors.ue") : 0;
	if (dm || du) {
		h->mce += (int64_t)dm;
		h->ue += (int64_t)du;
		h->first = h->first ? h->first : now_s;
		h->last = now_s;
	}
	if (!h->first)
		h->last = 0;
	json_object_object_add(o, "errors.first", json_object_new_int64(h->first));
	json_object_object_add(o, "errors.last", json_object_new_int64(h->last));
	json_object_object_add(o, "errors.mce", json_object_new_int64(h->mce));
	json_object_object_add(o, "errors.ue", json_object_new_int64(h->ue));
}

/* Store this boot's id in o; 1 when the stored one was another boot's. */
static int
boot_changed(struct agent *a, json_object *o)
{
	char now[64], *old = NULL;
	json_object *v;
	int changed;

	if (read_under(a, "/proc/sys/kernel/random/boot_id", now, sizeof(now)) < 0)
		return 0;
	if (json_object_object_get_ex(o, "boot_id", &v))
		old = xstrdup(json_object_get_string(v));
	changed = old && strcmp(old, now) != 0;
	json_object_object_add(o, "boot_id", json_object_new_string(now));
	free(old);
	return changed;
}

/* Say the held MCE/UE errors: fail until hold_s after the last.  The
 * finding. */
static Knob__HealthCheck *
held_say(const struct held *h, int64_t hold_s, struct hout *out)
{
	char first[32], until[32];

	health_fmt_time((uint64_t)h->first * 1000000000ull, first, sizeof(first));
	health_fmt_time((uint64_t)(h->last + hold_s) * 1000000000ull, until, sizeof(until));
	return hout_add(out, "errors", NULL, ST_FAIL, "%lld MCE, %lld EDAC UE new since %s; "
	    "failing until %s (<errors hold> %lld s after the last)", (long long)h->mce,
	    (long long)h->ue, first, until, (long long)hold_s);
}

/* New MCE or EDAC UE errors fail, and stay failing until <errors hold>
 * after the last one, whichever sweep saw them first; new CE warn.  The
 * first sweep takes a baseline; a reboot (another boot_id) or a counter
 * that went down starts from 0.  Counters that could not be saved are
 * compared with the memory copy, and the finding says so (warn at least). */
void
health_errors(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out)
{
	struct health_state *hs = a->health;
	uint64_t mce = mce_count(a), ce = edac_count(a, "ce_count"), ue = edac_count(a, "ue_count");
	uint64_t pm = 0, pc = 0, pu = 0;
	int64_t hold = req->hw && req->hw->errors_hold_s ? req->hw->errors_hold_s : ERRORS_HOLD_S;
	struct held h = { 0 };
	char note[HEALTH_NOTE_MAX];
	Knob__HealthCheck *c;
	int had, reboot;
	json_object *o;

	(void)idx;
	pthread_mutex_lock(&hs->mu);
	o = health_counters(hs);
	reboot = boot_changed(a, o);
	had = counter_since(o, "mce", mce, reboot, &pm);
	had &= counter_since(o, "edac.ce", ce, reboot, &pc);
	had &= counter_since(o, "edac.ue", ue, reboot, &pu);
	hold_update(o, had && mce > pm ? mce - pm : 0, had && ue > pu ? ue - pu : 0,
	    (int64_t)(now_real_ns() / 1000000000ull), hold, &h);
	health_counters_save(hs, note, sizeof(note));
	if (!had)
		health_counters_reset_note(hs, note, sizeof(note));
	pthread_mutex_unlock(&hs->mu);
	if (h.last)
		c = held_say(&h, hold, out);
	else if (!had)
		c = hout_add(out, "errors", NULL, ST_OK, "baseline: %llu MCE, %llu/%llu EDAC CE/UE",
		    (unsigned long long)mce, (unsigned long long)ce, (unsigned long long)ue);
	else if (ce > pc)
		c = hout_add(out, "errors", NULL, ST_WARN, "%llu new EDAC corrected errors",
		    (unsigned long long)(ce - pc));
	else
		c = hout_add(out, "errors", NULL, ST_OK, "no new MCE or EDAC errors");
	health_counters_note(c, note);
}

/* 1-minute load average under the threshold. */
void
health_load(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out)
{
	char buf[128];
	double l1;

	(void)idx;
	if (read_under(a, "/proc/loadavg", buf, sizeof(buf)) < 0) {
		hout_add(out, "load", NULL, ST_FAIL, "cannot read /proc/loadavg");
		return;
	}
	l1 = strtod(buf, NULL);
	if (req->hw && req->hw->load_max > 0 && l1 > req->hw->load_max)
		hout_add(out, "load", NULL, ST_WARN, "load %.2f above %.2f", l1, req->hw->load_max);
	else
		hout_add(out, "load", NULL, ST_OK, "load %.2f", l1);
}

/* ------------------------------------------------------------ services */

#define COMM_MAX 15		/* TASK_COMM_LEN - 1: the kernel cuts comm there */

/* 1 when the basename of the link (exe) or of argv[0] (cmdline) of
 * /proc/PID is name. */
static int
full_name_is(struct agent *a, const char *pid, const char *name)
{
	char abs[PATH_MAX], path[PATH_MAX], buf[PATH_MAX];
	ssize_t n;

	snprintf(abs, sizeof(abs), "/proc/%s/exe", pid);
	if (agent_path(a, path, sizeof(path), abs) == 0 &&
	    (n = readlink(path, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		if (strcmp(path_base(buf), name) == 0)
			return 1;
	}
	snprintf(abs, sizeof(abs), "/proc/%s/cmdline", pid);
	return agent_path(a, path, sizeof(path), abs) == 0 &&
	    read_small_file(path, buf, sizeof(buf)) > 0 && strcmp(path_base(buf), name) == 0;
}

/* 1 when process PID is name: its comm, or for a name longer than the
 * kernel keeps in comm, comm is the first 15 characters and exe or argv[0]
 * the whole name. */
static int
process_is(struct agent *a, const char *pid, const char *name)
{
	char abs[PATH_MAX], comm[64];

	snprintf(abs, sizeof(abs), "/proc/%s/comm", pid);
	if (read_under(a, abs, comm, sizeof(comm)) < 0)
		return 0;
	if (strlen(name) <= COMM_MAX)
		return strcmp(comm, name) == 0;
	return strlen(comm) == COMM_MAX && strncmp(comm, name, COMM_MAX) == 0 &&
	    full_name_is(a, pid, name);
}

/* pid of a process named name (process_is), 0 when none. */
static long
find_process(struct agent *a, const char *name)
{
	char path[PATH_MAX];
	struct dirent *de;
	long pid = 0;
	DIR *d;

	if (agent_path(a, path, sizeof(path), "/proc") < 0 || (d = opendir(path)) == NULL)
		return 0;
	while (pid == 0 && (de = readdir(d)) != NULL)
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9' && process_is(a, de->d_name, name))
			pid = strtol(de->d_name, NULL, 10);
	closedir(d);
	return pid;
}

/* Expected processes, kernel modules and nfsd threads. */
void
health_services(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out)
{
	char abs[PATH_MAX], path[PATH_MAX], buf[32];

	(void)idx;
	for (size_t i = 0; i < req->n_processes; i++) {
		long pid = find_process(a, req->processes[i]);

		if (pid)
			hout_add(out, "service", req->processes[i], ST_OK, "running (pid %ld)", pid);
		else if (strlen(req->processes[i]) > COMM_MAX)
			hout_add(out, "service", req->processes[i], ST_FAIL, "not running (no process "
			    "whose comm is '%.*s', the kernel's first %d characters, with the whole "
			    "name as its executable or argv[0])", COMM_MAX, req->processes[i], COMM_MAX);
		else
			hout_add(out, "service", req->processes[i], ST_FAIL, "not running");
	}
	for (size_t i = 0; i < req->n_modules; i++) {
		snprintf(abs, sizeof(abs), "/sys/module/%s", req->modules[i]);
		if (strchr(req->modules[i], '/') == NULL &&
		    agent_path(a, path, sizeof(path), abs) == 0 && access(path, F_OK) == 0)
			hout_add(out, "service", req->modules[i], ST_OK, "module loaded");
		else
			hout_add(out, "service", req->modules[i], ST_FAIL, "module not loaded");
	}
	if (req->nfsd_threads) {
		long n = read_under(a, "/proc/fs/nfsd/threads", buf, sizeof(buf)) == 0 ?
		    strtol(buf, NULL, 10) : -1;

		if (n < 0)
			hout_add(out, "service", "nfsd", ST_FAIL, "nfsd not running");
		else if ((uint32_t)n < req->nfsd_threads)
			hout_add(out, "service", "nfsd", ST_FAIL, "%ld threads, expected %u", n,
			    req->nfsd_threads);
		else
			hout_add(out, "service", "nfsd", ST_OK, "%ld threads", n);
	}
}

/* ------------------------------------------------------------ probe */

/* What the passes of one probe phase did. */
struct pacc {
	double amount;		/* bytes (data) or ops (metadata) */
	uint64_t ops, ns;
};

/* Engine parameters of a probe phase of kind, in the node's own workdir
 * DIR/knob.health-probe.NODE/ (the probe directory is often shared), with
 * a stonewall of secs; count is the file size in blocks (data) or the file
 * count (metadata).  0 or -1 with err. */
static int
probe_params(struct agent *a, const Knob__ProbeSpec *ps, const char *kind, uint32_t secs,
    uint64_t count, struct bench_params *p, char *err, size_t errlen)
{
	Knob__PhaseSpec s = KNOB__PHASE_SPEC__INIT;
	uint32_t rank = 0;
	int rc;

	s.phase_id = xasprintf("health-probe-%s", kind);
	s.workdir_id = xasprintf("health-probe.%.40s", a->node);
	for (char *c = s.workdir_id; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '.' && *c != '-' && *c != '_')
			*c = '_';
	s.kind = (char *)(uintptr_t)kind;
	s.dir = ps->dir;
	s.block_size = ps->block_size ? ps->block_size : 1u << 20;
	s.file_size = s.block_size * (count ? count : 1);
	s.threads_total = 1;
	s.n_ranks = 1;
	s.ranks = &rank;
	s.nodes_total = 1;
	s.fsync = !bench_kind_is_md(bench_kind_parse(kind));
	s.stonewall_s = secs;
	s.files_per_dir = 1000;
	s.md_files = count ? count : 1;
	s.keep_files = 1;
	s.rate_iops = a->health->test_probe_rate_iops;
	rc = bench_params_from_spec(p, &s, a->sysroot, err, errlen);
	free(s.phase_id);
	free(s.workdir_id);
	return rc;
}

/* One pass of a probe phase through the in-process engine, added to acc.
 * 0 or -1 with err (the phase's files are then removed). */
static int
probe_pass(struct agent *a, const Knob__ProbeSpec *ps, const char *kind, uint32_t secs,
    uint64_t count, struct pacc *acc, char *err, size_t errlen)
{
	struct bench_params p;
	struct bench_job *j;
	int rc = -1;

	if (probe_params(a, ps, kind, secs, count, &p, err, errlen) < 0)
		return -1;
	j = bench_job_new(&p, a->node);
	if (bench_job_run(j) == 0 && j->nth == 1) {
		uint64_t ops = atomic_load(&j->th[0].ops);

		acc->ops += ops;
		acc->ns += j->th[0].end_ns - j->th[0].start_ns;
		acc->amount += bench_kind_is_md(j->p.kind) ? (double)ops :
		    (double)atomic_load(&j->th[0].bytes);
		rc = 0;
	} else {
		snprintf(err, errlen, "%s: %s", kind, j->err[0] ? j->err : "failed");
		bench_job_cleanup(j);
	}
	bench_job_free(j);
	return rc;
}

/* Remove the probe's files (what the write and create phases left). */
static void
probe_cleanup(struct agent *a, const Knob__ProbeSpec *ps, const char *kind, uint64_t count)
{
	struct bench_params p;
	char err[256];

	if (probe_params(a, ps, kind, 1, count, &p, err, sizeof(err)) == 0) {
		bench_cleanup_params(&p);
		bench_params_free(&p);
	}
}

/* Write (create) for secs, then read (stat) what was written, pass after
 * pass until secs have passed too: a single pass from the page cache is
 * over in a millisecond and too noisy to compare across nodes.  Rates in
 * r[0] and r[1].  0 or -1 with err. */
static int
probe_pair(struct agent *a, const Knob__ProbeSpec *ps, const char *wkind, const char *rkind,
    uint32_t secs, uint64_t count, double *r, char *err, size_t errlen)
{
	struct pacc w = { 0 }, rd = { 0 };
	uint64_t end;
	int rc = -1;

	if (probe_pass(a, ps, wkind, secs, count, &w, err, errlen) < 0)
		return -1;
	end = now_mono_ns() + secs * 1000000000ull;
	for (int pass = 0; pass < 100000 && (pass == 0 || now_mono_ns() < end); pass++)
		if (probe_pass(a, ps, rkind, secs, w.ops, &rd, err, errlen) < 0)
			goto out;
	r[0] = w.ns ? w.amount * 1e9 / (double)w.ns : 0;
	r[1] = rd.ns ? rd.amount * 1e9 / (double)rd.ns : 0;
	rc = 0;
out:
	probe_cleanup(a, ps, rkind, w.ops);
	return rc;
}

/* Attach metric name=value to c. */
static void
metric_add(Knob__HealthCheck *c, const char *name, double v)
{
	Knob__HealthMetric *m = xmalloc(sizeof(*m));

	knob__health_metric__init(m);
	m->name = xstrdup(name);
	m->value = v;
	c->metrics = xrealloc(c->metrics, (c->n_metrics + 1) * sizeof(*c->metrics));
	c->metrics[c->n_metrics++] = m;
}

/* One probe at a time: the engine runs on this thread, so a probe stuck on a
 * hung file system stays stuck.  A sweep that finds another sweep's probe
 * running within its deadline (two sweeps overlapping) skips its own; once
 * that probe is past its deadline (its sweep abandoned it: health_probe_late)
 * it is reported hung, and no other thread is started to pile up behind it.
 * 0 to go on. */
static int
probe_begin(struct agent *a, const Knob__ProbeSpec *ps, struct hout *out)
{
	struct health_state *h = a->health;
	uint64_t since;
	int late;

	pthread_mutex_lock(&h->mu);
	since = h->probe_since_ns;
	late = h->probe_late;
	if (since == 0)
		h->probe_since_ns = now_real_ns();
	pthread_mutex_unlock(&h->mu);
	if (since == 0)
		return 0;
	if (!late) {
		hout_add(out, "probe", ps->dir, ST_SKIPPED, "another sweep's probe is running "
		    "(started %.0f s ago, within its deadline)", (double)(now_real_ns() - since) / 1e9);
		return -1;
	}
	hout_add(out, "probe", ps->dir, ST_HUNG, "the probe started %.0f s ago has not finished",
	    (double)(now_real_ns() - since) / 1e9)->since_ns = since;
	return -1;
}

void
health_probe_late(struct agent *a)
{
	pthread_mutex_lock(&a->health->mu);
	a->health->probe_late = a->health->probe_since_ns != 0;
	pthread_mutex_unlock(&a->health->mu);
}

static void
probe_end(struct agent *a)
{
	pthread_mutex_lock(&a->health->mu);
	a->health->probe_since_ns = 0;
	a->health->probe_late = 0;
	pthread_mutex_unlock(&a->health->mu);
}

/* Fleet-relative probe: seq write then read, md create then stat; the
 * controller judges the rates against the fleet.  Skipped during a
 * benchmark so that it neither disturbs nor measures one. */
void
health_probe(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out)
{
	static const char *const kinds[] = { "seq-write", "seq-read", "md-create", "md-stat" };
	const Knob__ProbeSpec *ps = req->probe;
	uint32_t seq = ps->seq_s ? ps->seq_s : 1, md = ps->md_s ? ps->md_s : 1;
	double rate[nitems(kinds)] = { 0 };
	char err[512] = "";
	int failed;
	Knob__HealthCheck *c;

	(void)idx;
	if (bench_active(a)) {
		hout_add(out, "probe", ps->dir, ST_SKIPPED, "a knob benchmark is running");
		return;
	}
	if (probe_begin(a, ps, out) < 0)
		return;
	failed = probe_pair(a, ps, kinds[0], kinds[1], seq, 64, &rate[0], err, sizeof(err)) < 0 ||
	    probe_pair(a, ps, kinds[2], kinds[3], md, 100000, &rate[2], err, sizeof(err)) < 0;
	probe_end(a);
	if (failed) {
		hout_add(out, "probe", ps->dir, ST_FAIL, "%s", err);
		return;
	}
	c = hout_add(out, "probe", ps->dir, ST_OK,
	    "seq-write %.1f MiB/s, seq-read %.1f MiB/s, md-create %.0f/s, md-stat %.0f/s",
	    rate[0] / 1048576, rate[1] / 1048576, rate[2], rate[3]);
	for (size_t i = 0; i < nitems(kinds); i++)
		metric_add(c, kinds[i], rate[i]);
}
