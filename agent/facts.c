/* Node facts for knobd: OS, CPU topology, memory, block devices, NICs,
 * mounts and storage software, answered to FactsRequest.
 *
 * Every /proc and /sys path is resolved under the agent's sysroot, so a
 * fake tree serves the tests.  NICs are the exception: they come from
 * rtnetlink (libnl-route-3) in the agent's own network namespace, and
 * only their speed is read from (sysroot) sysfs.  All reads are bounded;
 * anything unreadable stays empty.  Mount points are never stat'ed: a hung
 * NFS or Lustre mount must not hang the agent, so mounts come only from
 * the text of /proc/self/mounts. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "agent.h"
#include "log.h"
#include "tls.h"
#include "tune.h"
#include "normalize.h"
#include "util.h"

#define ATTR_MAX	4096		/* one sysfs/procfs attribute */
#define CPUINFO_MAX	(1u << 20)	/* first MiB of /proc/cpuinfo */
#define MEMINFO_MAX	16384
#define MOUNTS_MAX	(8u << 20)	/* /proc/self/mounts, ~50k mounts */
#define DPKG_MAX	(32u << 20)	/* /var/lib/dpkg/status */
#define MAX_BLOCKDEVS	16384
#define MAX_CPUS	65536

/* Append x to a protobuf-c repeated field (arr, n) with capacity cap. */
#define ARR_PUSH(arr, n, cap, x) do {					\
	if ((n) == (cap)) {						\
		(cap) = (cap) ? (cap) * 2 : 8;				\
		(arr) = xrealloc((arr), (cap) * sizeof(*(arr)));	\
	}								\
	(arr)[(n)++] = (x);						\
} while (0)

/* Free a string field unless it is protobuf-c's shared empty string. */
static void
free_str(char *s)
{
	if (s != NULL && s != protobuf_c_empty_string)
		free(s);
}

static int
has_sysroot(const struct agent *a)
{
	return a->sysroot[0] != '\0' && strcmp(a->sysroot, "/") != 0;
}

static int vpath(const struct agent *, char *, size_t, const char *, va_list)
    __attribute__((format(printf, 4, 0)));
static ssize_t read_attr(const struct agent *, char *, size_t, const char *, ...)
    __attribute__((format(printf, 4, 5)));
static int read_u64(const struct agent *, uint64_t *, const char *, ...)
    __attribute__((format(printf, 3, 4)));

/* printf an absolute path and resolve it under the sysroot. 0 or -errno. */
static int
vpath(const struct agent *a, char *buf, size_t len, const char *fmt, va_list ap)
{
	char abs[PATH_MAX];
	int n = vsnprintf(abs, sizeof(abs), fmt, ap);

	if (n < 0 || (size_t)n >= sizeof(abs))
		return -ENAMETOOLONG;
	return agent_path(a, buf, len, abs);
}

/* Resolved path of a printf-formatted absolute path. 0 or -errno. */
static int rpath(const struct agent *, char *, size_t, const char *, ...)
    __attribute__((format(printf, 4, 5)));
static int
rpath(const struct agent *a, char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vpath(a, buf, len, fmt, ap);
	va_end(ap);
	return rc;
}

/* Read one small attribute (sysroot-resolved), white space trimmed.
 * Returns its length or -errno; buf is "" on error. */
static ssize_t
read_attr(const struct agent *a, char *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	ssize_t n;
	char *t;
	int rc;

	buf[0] = '\0';
	va_start(ap, fmt);
	rc = vpath(a, path, sizeof(path), fmt, ap);
	va_end(ap);
	if (rc < 0)
		return rc;
	if ((n = read_small_file(path, buf, len)) < 0) {
		buf[0] = '\0';
		return n;
	}
	t = strtrim(buf);
	if (t != buf)
		memmove(buf, t, strlen(t) + 1);
	return (ssize_t)strlen(buf);
}

/* Read a decimal attribute. 0 or -errno (-EINVAL when not a number). */
static int
read_u64(const struct agent *a, uint64_t *out, const char *fmt, ...)
{
	char path[PATH_MAX], buf[64], *end;
	unsigned long long v;
	va_list ap;
	ssize_t n;
	int rc;

	va_start(ap, fmt);
	rc = vpath(a, path, sizeof(path), fmt, ap);
	va_end(ap);
	if (rc < 0)
		return rc;
	if ((n = read_small_file(path, buf, sizeof(buf))) < 0)
		return (int)n;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (end == buf || errno != 0 || buf[0] == '-')
		return -EINVAL;
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0')
		return -EINVAL;
	*out = v;
	return 0;
}

static uint32_t
clamp_u32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* ------------------------------------------------------------- OS */

/* Hostname, kernel release and uptime.  With a sysroot they come from its
 * /proc/sys/kernel files; without one from uname(2). */
static void
gather_os(struct agent *a, Knob__Facts *f)
{
	struct utsname u;
	char buf[ATTR_MAX];
	double up;

	if (!has_sysroot(a)) {
		if (uname(&u) == 0) {
			f->hostname = xstrdup(u.nodename);
			f->kernel = xstrdup(u.release);
		}
	} else {
		if (read_attr(a, buf, sizeof(buf), "/proc/sys/kernel/hostname") > 0)
			f->hostname = xstrdup(buf);
		if (read_attr(a, buf, sizeof(buf), "/proc/sys/kernel/osrelease") > 0)
			f->kernel = xstrdup(buf);
	}
	if (read_attr(a, buf, sizeof(buf), "/proc/uptime") > 0 &&
	    sscanf(buf, "%lf", &up) == 1 && up >= 0 && up < 1e15)
		f->uptime_s = (uint64_t)up;
}

/* ------------------------------------------------------------- CPU */

/* cpuinfo keys naming the CPU model, best first (x86, MIPS, old ARM, POWER). */
static const char *const cpu_model_keys[] = { "model name", "cpu model", "Processor", "cpu" };

/* If line is "KEY<blanks>: value", return value (trimmed, in place), else NULL. */
static char *
cpuinfo_value(char *line, const char *key)
{
	size_t kl = strlen(key);
	char *p;

	if (strncmp(line, key, kl) != 0)
		return NULL;
	p = line + kl;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != ':')
		return NULL;
	return strtrim(p + 1);
}

static int
cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Number of distinct values in v[0..n) (sorts v). */
static uint32_t
count_distinct(uint64_t *v, size_t n)
{
	uint32_t d = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || v[i] != v[i - 1])
			d++;
	return d;
}

/* Topology key: package in the high half, core in the low half. */
static uint64_t
topo_key(uint64_t pkg, uint64_t core)
{
	return (pkg & 0xffffffffu) << 32 | (core & 0xffffffffu);
}

/* Sockets, cores and online threads from sysfs cpuN/topology.  Returns the
 * number of online CPUs found (0: no usable sysfs). */
static uint32_t
cpu_topology_sysfs(struct agent *a, Knob__CpuFacts *c)
{
	char dirp[PATH_MAX], buf[32];
	uint64_t *pkgs = NULL, *cores = NULL, pkg, core;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (rpath(a, dirp, sizeof(dirp), "/sys/devices/system/cpu") < 0 ||
	    (d = opendir(dirp)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL && n < MAX_CPUS) {
		const char *s = de->d_name;

		if (strncmp(s, "cpu", 3) != 0 || s[3] == '\0' ||
		    strspn(s + 3, "0123456789") != strlen(s + 3))
			continue;
		/* No "online" file (cpu0 on many systems) means online. */
		if (read_attr(a, buf, sizeof(buf), "/sys/devices/system/cpu/%s/online", s) >= 0 &&
		    strcmp(buf, "0") == 0)
			continue;
		if (read_u64(a, &pkg, "/sys/devices/system/cpu/%s/topology/physical_package_id", s) < 0)
			pkg = 0;
		if (read_u64(a, &core, "/sys/devices/system/cpu/%s/topology/core_id", s) < 0)
			core = strtoull(s + 3, NULL, 10);	/* unknown: count it as its own core */
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			pkgs = xrealloc(pkgs, cap * sizeof(*pkgs));
			cores = xrealloc(cores, cap * sizeof(*cores));
		}
		pkgs[n] = pkg;
		cores[n] = topo_key(pkg, core);
		n++;
	}
	closedir(d);
	if (n > 0) {
		c->threads = (uint32_t)n;
		c->sockets = count_distinct(pkgs, n);
		c->cores = count_distinct(cores, n);
	}
	free(pkgs);
	free(cores);
	return (uint32_t)n;
}

/* Model from /proc/cpuinfo; topology too when sysfs gave none. */
static void
cpu_from_cpuinfo(struct agent *a, Knob__CpuFacts *c, int want_topology)
{
	char path[PATH_MAX], *buf = NULL, *line, *save = NULL, *v;
	char *model[nitems(cpu_model_keys)] = { NULL };
	uint64_t *pkgs = NULL, *cores = NULL, pkg = 0, core = 0;
	size_t n = 0, cap = 0;
	int have_proc = 0, have_core = 0;

	if (rpath(a, path, sizeof(path), "/proc/cpuinfo") < 0)
		return;
	buf = xmalloc(CPUINFO_MAX);
	if (read_small_file(path, buf, CPUINFO_MAX) < 0)
		goto out;
	/* One extra pass through the loop (line == NULL) closes the last block. */
	for (line = strtok_r(buf, "\n", &save); ; line = strtok_r(NULL, "\n", &save)) {
		int newproc = line != NULL && cpuinfo_value(line, "processor") != NULL;

		if ((line == NULL || newproc) && have_proc && n < MAX_CPUS) {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				pkgs = xrealloc(pkgs, cap * sizeof(*pkgs));
				cores = xrealloc(cores, cap * sizeof(*cores));
			}
			pkgs[n] = pkg;
			cores[n] = topo_key(pkg, have_core ? core : n);
			n++;
		}
		if (line == NULL)
			break;
		if (newproc) {
			have_proc = 1;
			have_core = 0;
			pkg = 0;
			continue;
		}
		if ((v = cpuinfo_value(line, "physical id")) != NULL)
			pkg = strtoull(v, NULL, 10);
		else if ((v = cpuinfo_value(line, "core id")) != NULL) {
			core = strtoull(v, NULL, 10);
			have_core = 1;
		}
		for (size_t k = 0; k < nitems(cpu_model_keys); k++)
			if (model[k] == NULL && (v = cpuinfo_value(line, cpu_model_keys[k])) != NULL &&
			    *v != '\0')
				model[k] = v;
	}
	for (size_t k = 0; k < nitems(cpu_model_keys); k++)
		if (model[k] != NULL) {
			c->model = xstrdup(model[k]);
			break;
		}
	if (want_topology && n > 0) {
		c->threads = (uint32_t)n;
		c->sockets = count_distinct(pkgs, n);
		c->cores = count_distinct(cores, n);
	}
out:
	free(pkgs);
	free(cores);
	free(buf);
}

/* CPU model, topology and SMT control; caller frees via facts_free. */
static void
gather_cpu(struct agent *a, Knob__Facts *f)
{
	Knob__CpuFacts *c = xmalloc(sizeof(*c));
	char buf[ATTR_MAX];
	uint32_t n;

	knob__cpu_facts__init(c);
	f->cpu = c;
	n = cpu_topology_sysfs(a, c);
	cpu_from_cpuinfo(a, c, n == 0);
	if (c->threads == 0 && !has_sysroot(a)) {
		long on = sysconf(_SC_NPROCESSORS_ONLN);
		if (on > 0)
			c->threads = c->cores = (uint32_t)on;
	}
	if (read_attr(a, buf, sizeof(buf), "/sys/devices/system/cpu/smt/control") > 0)
		c->smt = xstrdup(buf);
}

/* ------------------------------------------------------------- memory */

static void
gather_mem(struct agent *a, Knob__Facts *f)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "MemTotal:", offsetof(Knob__Facts, mem_total_kb) },
		{ "MemAvailable:", offsetof(Knob__Facts, mem_available_kb) },
	};
	char path[PATH_MAX], buf[MEMINFO_MAX], *line, *save = NULL;

	if (rpath(a, path, sizeof(path), "/proc/meminfo") < 0 ||
	    read_small_file(path, buf, sizeof(buf)) < 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		for (size_t i = 0; i < nitems(keys); i++) {
			size_t kl = strlen(keys[i].key);
			unsigned long long v;

			if (strncmp(line, keys[i].key, kl) == 0 &&
			    sscanf(line + kl, "%llu", &v) == 1)
				*(uint64_t *)(void *)((char *)f + keys[i].off) = v;
		}
	}
}

/* ------------------------------------------------------------- block */

/* "noop [mq-deadline] kyber" -> "mq-deadline"; a lone "none" stays. */
static char *
selected_scheduler(const char *s)
{
	const char *o = strchr(s, '['), *e;

	if (o == NULL)
		return strchr(s, ' ') == NULL ? xstrdup(s) : xstrdup("");
	if ((e = strchr(o + 1, ']')) == NULL)
		return xstrdup("");
	return xasprintf("%.*s", (int)(e - o - 1), o + 1);
}

static int
cmp_blockdev(const void *x, const void *y)
{
	const Knob__BlockDevFacts *a = *(Knob__BlockDevFacts *const *)x;
	const Knob__BlockDevFacts *b = *(Knob__BlockDevFacts *const *)y;

	return strverscmp(a->name, b->name);
}

/* One /sys/block entry, or NULL when it has no size (empty loop devices,
 * drives without media).  Caller frees. */
static Knob__BlockDevFacts *
blockdev_one(struct agent *a, const char *name)
{
	Knob__BlockDevFacts *b;
	char buf[ATTR_MAX];
	uint64_t v;

	if (read_u64(a, &v, "/sys/block/%s/size", name) < 0 || v == 0)
		return NULL;
	b = xmalloc(sizeof(*b));
	knob__block_dev_facts__init(b);
	b->name = xstrdup(name);
	b->size_bytes = v * 512;
	if (read_attr(a, buf, sizeof(buf), "/sys/block/%s/queue/rotational", name) > 0)
		b->rotational = strcmp(buf, "1") == 0;
	if (read_attr(a, buf, sizeof(buf), "/sys/block/%s/queue/scheduler", name) > 0)
		b->scheduler = selected_scheduler(buf);
	if (read_u64(a, &v, "/sys/block/%s/queue/read_ahead_kb", name) == 0)
		b->read_ahead_kb = clamp_u32(v);
	if (read_u64(a, &v, "/sys/block/%s/queue/nr_requests", name) == 0)
		b->nr_requests = clamp_u32(v);
	if (read_u64(a, &v, "/sys/block/%s/queue/max_sectors_kb", name) == 0)
		b->max_sectors_kb = clamp_u32(v);
	if (read_attr(a, buf, sizeof(buf), "/sys/block/%s/device/model", name) > 0)
		b->model = xstrdup(buf);
	return b;
}

/* Every block device with a size, sorted naturally by name. */
static void
gather_block(struct agent *a, Knob__Facts *f)
{
	Knob__BlockDevFacts *b;
	char dirp[PATH_MAX];
	struct dirent *de;
	size_t cap = 0;
	DIR *d;

	if (rpath(a, dirp, sizeof(dirp), "/sys/block") < 0 || (d = opendir(dirp)) == NULL)
		return;
	while ((de = readdir(d)) != NULL && f->n_blockdevs < MAX_BLOCKDEVS) {
		if (de->d_name[0] == '.')
			continue;
		if ((b = blockdev_one(a, de->d_name)) != NULL)
			ARR_PUSH(f->blockdevs, f->n_blockdevs, cap, b);
	}
	closedir(d);
	if (f->n_blockdevs > 1)
		qsort(f->blockdevs, f->n_blockdevs, sizeof(*f->blockdevs), cmp_blockdev);
}

/* ------------------------------------------------------------- NICs */

/* Link speed in Mb/s from (sysroot) sysfs; -1 when unknown or invalid. */
static int64_t
nic_speed(struct agent *a, const char *ifname)
{
	char buf[64], *end;
	long long v;

	if (strchr(ifname, '/') != NULL ||
	    read_attr(a, buf, sizeof(buf), "/sys/class/net/%s/speed", ifname) <= 0)
		return -1;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno != 0 || end == buf || *end != '\0' || v < 0 || v > INT32_MAX)
		return -1;
	return v;
}

static int
cmp_nic(const void *x, const void *y)
{
	const Knob__NicFacts *a = *(Knob__NicFacts *const *)x;
	const Knob__NicFacts *b = *(Knob__NicFacts *const *)y;

	return a->ifindex < b->ifindex ? -1 : a->ifindex > b->ifindex;
}

/* Links of the agent's network namespace through rtnetlink, sorted by
 * ifindex.  A netlink failure is logged and leaves the list empty. */
static void
gather_nics(struct agent *a, Knob__Facts *f)
{
	struct nl_sock *sk;
	struct nl_cache *cache = NULL;
	struct nl_object *obj;
	size_t cap = 0;
	int err;

	if ((sk = nl_socket_alloc()) == NULL) {
		log_warnx("facts: cannot allocate a netlink socket");
		return;
	}
	if ((err = nl_connect(sk, NETLINK_ROUTE)) < 0) {
		log_warnx("facts: netlink connect: %s", nl_geterror(err));
		goto out;
	}
	if ((err = rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache)) < 0) {
		log_warnx("facts: netlink link dump: %s", nl_geterror(err));
		cache = NULL;
		goto out;
	}
	for (obj = nl_cache_get_first(cache); obj != NULL; obj = nl_cache_get_next(obj)) {
		struct rtnl_link *l = (struct rtnl_link *)obj;
		Knob__NicFacts *n;
		struct nl_addr *ad;
		const char *name = rtnl_link_get_name(l), *kind;
		char buf[256];

		if (name == NULL)
			continue;
		n = xmalloc(sizeof(*n));
		knob__nic_facts__init(n);
		n->name = xstrdup(name);
		n->ifindex = (uint32_t)rtnl_link_get_ifindex(l);
		n->operstate = xstrdup(rtnl_link_operstate2str(rtnl_link_get_operstate(l),
		    buf, sizeof(buf)));
		n->mtu = rtnl_link_get_mtu(l);
		n->txqueuelen = rtnl_link_get_txqlen(l);
		if ((ad = rtnl_link_get_addr(l)) != NULL && nl_addr_get_len(ad) > 0 &&
		    nl_addr2str(ad, buf, sizeof(buf)) != NULL)
			n->address = xstrdup(buf);
		if ((kind = rtnl_link_get_type(l)) != NULL)
			n->link_kind = xstrdup(kind);
		n->speed_mbps = nic_speed(a, name);
		ARR_PUSH(f->nics, f->n_nics, cap, n);
	}
	if (f->n_nics > 1)
		qsort(f->nics, f->n_nics, sizeof(*f->nics), cmp_nic);
out:
	if (cache != NULL)
		nl_cache_free(cache);
	nl_socket_free(sk);
}

/* ------------------------------------------------------------- mounts */

/* fstype -> kind for the file systems knob cares about; others are "local". */
static const struct {
	const char *fstype;
	const char *kind;
} mount_kinds[] = {
	{ "lustre", "lustre" },
	{ "gpfs", "gpfs" },
	{ "nfs", "nfs" },
	{ "nfs4", "nfs" },
};

/* Kernel pseudo file systems left out of the mount list: they hold no
 * data and only bury the storage mounts an admin is looking for. */
static const char *const pseudo_fs[] = {
	"autofs", "binfmt_misc", "bpf", "cgroup", "cgroup2", "configfs", "debugfs",
	"devpts", "devtmpfs", "efivarfs", "fusectl", "hugetlbfs", "mqueue", "nfsd",
	"nsfs", "proc", "pstore", "rpc_pipefs", "securityfs", "selinuxfs", "sysfs",
	"tracefs",
};

/* Split one /proc/self/mounts line (in place) into source, target, type. */
static int
mount_fields(char *line, char **src, char **dst, char **type)
{
	char *save = NULL;

	if ((*src = strtok_r(line, " \t", &save)) == NULL ||
	    (*dst = strtok_r(NULL, " \t", &save)) == NULL ||
	    (*type = strtok_r(NULL, " \t", &save)) == NULL)
		return -1;
	return 0;
}

/* The type of the file system path (resolved) lies on: the mount of
 * (sysroot) /proc/self/mounts with the longest target that contains it. */
int
facts_fs_type(const struct agent *a, const char *path, char *buf, size_t len)
{
	char mpath[PATH_MAX], *text = NULL, *line, *save = NULL, *src, *dst, *type;
	size_t best = 0;
	int rc;

	buf[0] = '\0';
	if (rpath(a, mpath, sizeof(mpath), "/proc/self/mounts") < 0 ||
	    (rc = read_file_bounded(mpath, MOUNTS_MAX, &text, NULL)) < 0)
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t n;

		if (mount_fields(line, &src, &dst, &type) < 0)
			continue;
		mount_unescape(dst);
		n = strlen(dst);
		if (strncmp(path, dst, n) != 0 || (n > 1 && path[n] != '/' && path[n] != '\0'))
			continue;
		if (n >= best) {
			best = n;
			snprintf(buf, len, "%s", type);
		}
	}
	free(text);
	return buf[0] ? 0 : -1;
}

/* Mounted file systems, from the text of (sysroot) /proc/self/mounts only. */
static void
gather_mounts(struct agent *a, Knob__Facts *f)
{
	char path[PATH_MAX], *buf = NULL, *line, *save = NULL;
	size_t cap = 0;
	int rc;

	if (rpath(a, path, sizeof(path), "/proc/self/mounts") < 0)
		return;
	if ((rc = read_file_bounded(path, MOUNTS_MAX, &buf, NULL)) < 0) {
		log_debug("facts: %s: %s", path, strerror(-rc));
		return;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *src, *dst, *type;
		const char *kind = "local";
		Knob__MountFacts *m;
		int skip = 0;

		if (mount_fields(line, &src, &dst, &type) < 0)
			continue;
		for (size_t i = 0; i < nitems(pseudo_fs); i++)
			if (strcmp(type, pseudo_fs[i]) == 0)
				skip = 1;
		if (skip)
			continue;
		for (size_t i = 0; i < nitems(mount_kinds); i++)
			if (strcmp(type, mount_kinds[i].fstype) == 0)
				kind = mount_kinds[i].kind;
		m = xmalloc(sizeof(*m));
		knob__mount_facts__init(m);
		m->source = xstrdup(mount_unescape(src));
		m->target = xstrdup(mount_unescape(dst));
		m->fstype = xstrdup(type);
		m->kind = xstrdup(kind);
		ARR_PUSH(f->mounts, f->n_mounts, cap, m);
	}
	free(buf);
}

/* ------------------------------------------------------------- software */

static Knob__SoftwareFacts *
software_new(const char *name)
{
	Knob__SoftwareFacts *s = xmalloc(sizeof(*s));

	knob__software_facts__init(s);
	s->name = xstrdup(name);
	return s;
}

/* Lustre: the modules are loaded when /sys/fs/lustre (or the older
 * /proc/fs/lustre) exists.  "version" holds "2.15.4" (sysfs) or
 * "lustre: 2.12.9\nkernel: ..." (older procfs). */
static void
sw_lustre(struct agent *a, Knob__SoftwareFacts *s)
{
	static const char *const dirs[] = { "/sys/fs/lustre", "/proc/fs/lustre" };
	char path[PATH_MAX], buf[ATTR_MAX], *v, *nl;

	for (size_t i = 0; i < nitems(dirs); i++) {
		if (rpath(a, path, sizeof(path), "%s", dirs[i]) == 0 && access(path, F_OK) == 0)
			s->present = 1;
		if (read_attr(a, buf, sizeof(buf), "%s/version", dirs[i]) <= 0)
			continue;
		s->present = 1;
		v = buf;
		if (strncmp(v, "lustre:", 7) == 0)
			v += 7;
		else if ((nl = strstr(v, "\nlustre:")) != NULL)
			v = nl + 8;
		if ((nl = strchr(v, '\n')) != NULL)
			*nl = '\0';
		v = strtrim(v);
		if (*v != '\0') {
			free_str(s->version);
			s->version = xstrdup(v);
			return;
		}
	}
}

/* Version of a Debian package from the dpkg status database, or NULL
 * (caller frees).  RPM-based systems keep theirs in a binary database
 * this does not read. */
static char *
dpkg_version(struct agent *a, const char *pkg)
{
	char path[PATH_MAX], *buf = NULL, *p, *end, *v, *ver = NULL;
	char want[128];

	if (rpath(a, path, sizeof(path), "/var/lib/dpkg/status") < 0 ||
	    read_file_bounded(path, DPKG_MAX, &buf, NULL) < 0)
		return NULL;
	snprintf(want, sizeof(want), "Package: %s\n", pkg);
	for (p = buf; (p = strstr(p, want)) != NULL; p += strlen(want)) {
		if (p != buf && p[-1] != '\n')
			continue;
		/* The stanza ends at the next blank line. */
		if ((end = strstr(p, "\n\n")) != NULL)
			*end = '\0';
		if ((v = strstr(p, "\nVersion: ")) != NULL) {
			v += 10;
			v[strcspn(v, "\n")] = '\0';
			ver = xstrdup(strtrim(v));
		}
		break;
	}
	free(buf);
	return ver;
}

/* GPFS / Storage Scale: present when mmdiag is installed under the
 * sysroot.  The installed version is only read from the dpkg database
 * (package gpfs.base); running mmdiag --version would block on the daemon,
 * so it is not done here. */
static void
sw_gpfs(struct agent *a, Knob__SoftwareFacts *s)
{
	char path[PATH_MAX], *v;

	if (rpath(a, path, sizeof(path), "/usr/lpp/mmfs/bin/mmdiag") < 0 ||
	    access(path, F_OK) != 0)
		return;
	s->present = 1;
	if ((v = dpkg_version(a, "gpfs.base")) != NULL)
		s->version = v;
}

/* Kernel NFS server: present when the nfsd file system is mounted at
 * /proc/fs/nfsd (threads readable).  version = the enabled protocol
 * versions ("+3 +4 -2" -> "3 4"), threads = configured nfsd threads. */
static void
sw_nfsd(struct agent *a, Knob__SoftwareFacts *s)
{
	char buf[ATTR_MAX], out[ATTR_MAX], *tok, *save = NULL;
	size_t off = 0;
	uint64_t v;

	if (read_u64(a, &v, "/proc/fs/nfsd/threads") < 0)
		return;
	s->present = 1;
	s->threads = clamp_u32(v);
	if (read_attr(a, buf, sizeof(buf), "/proc/fs/nfsd/versions") <= 0)
		return;
	out[0] = '\0';
	for (tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		int n;

		if (tok[0] != '+')
			continue;
		n = snprintf(out + off, sizeof(out) - off, "%s%s", off ? " " : "", tok + 1);
		if (n < 0 || (size_t)n >= sizeof(out) - off)
			break;
		off += (size_t)n;
	}
	s->version = xstrdup(out);
}

static const struct {
	const char *name;
	void (*probe)(struct agent *, Knob__SoftwareFacts *);
} software_probes[] = {
	{ "lustre-client", sw_lustre },
	{ "gpfs", sw_gpfs },
	{ "nfs-server", sw_nfsd },
};

/* One SoftwareFacts per probe, present or not. */
static void
gather_software(struct agent *a, Knob__Facts *f)
{
	f->n_software = nitems(software_probes);
	f->software = xcalloc(f->n_software, sizeof(*f->software));
	for (size_t i = 0; i < nitems(software_probes); i++) {
		f->software[i] = software_new(software_probes[i].name);
		software_probes[i].probe(a, f->software[i]);
	}
}

/* ------------------------------------------------------------- entry points */

/* Fill f (initialised here) with this node's facts; unreadable facts stay
 * empty.  Free with facts_free.  Always 0. */
int
facts_gather(struct agent *a, Knob__Facts *f)
{

	knob__facts__init(f);
	f->node = xstrdup(a->node);
	gather_os(a, f);
	gather_cpu(a, f);
	gather_mem(a, f);
	gather_block(a, f);
	gather_nics(a, f);
	gather_mounts(a, f);
	for (size_t i = 0; i < f->n_mounts; i++)
		if (strcmp(f->mounts[i]->kind, "gpfs") == 0) {
			f->gpfs_pagepool_bytes = gpfs_pagepool(a);
			break;
		}
	gather_software(a, f);
	f->agent_version = xstrdup(KNOB_VERSION);
	tune_active(a, &f->active_profile, &f->active_note);
	f->agent_time_ns = now_real_ns();
	if (a->cfg.cert != NULL)
		tls_cert_not_after(a->cfg.cert, &f->cert_not_after);
	return 0;
}

/* Free everything facts_gather allocated (not f itself); f is left
 * re-initialised. */
void
facts_free(Knob__Facts *f)
{
	pb_free_fields(&f->base);
}

/* Worker: gather (sysfs, procfs, netlink reads) off the event loop; the
 * pool posts the reply. */
static void
facts_run(struct work *w)
{
	Knob__Facts *f = xcalloc(1, sizeof(*f));
	static Knob__Error e = { .base = PROTOBUF_C_MESSAGE_INIT(&knob__error__descriptor),
	    .code = EIO, .kind = KNOB__ERROR_KIND__ERROR_KIND_FAILED,
	    .message = (char *)(uintptr_t)"cannot gather facts" };

	w->arg = f;
	if (facts_gather(w->a, f) < 0) {
		w->reply.body_case = KNOB__ENVELOPE__BODY_ERROR;
		w->reply.error = &e;
	} else {
		w->reply.body_case = KNOB__ENVELOPE__BODY_FACTS;
		w->reply.facts = f;
	}
}

static void
facts_done(struct work *w)
{
	facts_free(w->arg);
	free(w->arg);
}

int
h_facts(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	agent_work(a, c, req, facts_run, facts_done, NULL);	/* -1: the busy reply is out */
	return 0;
}
