/* net driver: an interface glob with mtu or txqueuelen, read and set over
 * rtnetlink with libnl-route-3 (no ip(8)).  Interfaces are those of the
 * agent's own network namespace; the sysroot does not apply to them, only
 * to the sysfs file a key names for "one file, one key" (net_file). */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/route/addr.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "tune.h"

struct nlerr_map {
	int nle, err;
};

static const struct nlerr_map nlerrs[] = {
	{ NLE_PERM, EPERM }, { NLE_INVAL, EINVAL }, { NLE_RANGE, ERANGE },
	{ NLE_NODEV, ENODEV }, { NLE_OPNOTSUPP, EOPNOTSUPP }, { NLE_NOMEM, ENOMEM },
	{ NLE_BUSY, EBUSY }, { NLE_OBJ_NOTFOUND, ENODEV },
};

static int
nl_to_errno(int nle)
{
	nle = nle < 0 ? -nle : nle;
	for (size_t i = 0; i < nitems(nlerrs); i++)
		if (nlerrs[i].nle == nle)
			return -nlerrs[i].err;
	return -EIO;
}

/* A connected NETLINK_ROUTE socket, or NULL with msg. Caller frees. */
static struct nl_sock *
net_sock(char *msg, size_t msglen)
{
	struct nl_sock *sk = nl_socket_alloc();
	int r;

	if (sk == NULL) {
		snprintf(msg, msglen, "nl_socket_alloc failed");
		return NULL;
	}
	if ((r = nl_connect(sk, NETLINK_ROUTE)) < 0) {
		snprintf(msg, msglen, "netlink: %s", nl_geterror(r));
		nl_socket_free(sk);
		return NULL;
	}
	return sk;
}

/* What the resolve dump matches each interface against (the key) and
 * where the matching primary names go. */
struct net_match {
	const char *pattern;
	struct strvec *out;
};

/* The string of a string attribute (IFLA_IFNAME, IFLA_ALT_IFNAME), NULL
 * when absent or not NUL-terminated. */
static const char *
net_nla_str(const struct nlattr *na)
{
	const char *s = na ? nla_data(na) : NULL;

	return s && nla_len(na) > 0 && s[nla_len(na) - 1] == '\0' ? s : NULL;
}

/* One RTM_NEWLINK of the dump: its name is pushed when it, or one of its
 * alternative names (IFLA_PROP_LIST's IFLA_ALT_IFNAME: ip link property
 * add ... altname, set by systemd; libnl-route 3.7 does not parse them),
 * matches.  The primary name is the target. */
static int
net_match_cb(struct nl_msg *m, void *arg)
{
	struct net_match *nm = arg;
	struct nlattr *tb[IFLA_MAX + 1], *alt;
	const char *name, *an;
	int rem, hit;

	if (nlmsg_parse(nlmsg_hdr(m), sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0 ||
	    (name = net_nla_str(tb[IFLA_IFNAME])) == NULL)
		return NL_OK;
	hit = fnmatch(nm->pattern, name, 0) == 0;
	if (!hit && tb[IFLA_PROP_LIST])
		nla_for_each_nested(alt, tb[IFLA_PROP_LIST], rem)
			if (nla_type(alt) == IFLA_ALT_IFNAME && (an = net_nla_str(alt)) != NULL &&
			    fnmatch(nm->pattern, an, 0) == 0)
				hit = 1;
	if (hit && !strvec_contains(nm->out, name))
		strvec_push(nm->out, name);
	return NL_OK;
}

/* The interfaces whose name or an alternative name matches the key, by
 * their primary names, from one RTM_GETLINK dump. */
static int
net_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct net_match nm = { s->key, out };
	struct nl_sock *sk;
	int r;

	(void)a;
	if ((sk = net_sock(msg, msglen)) == NULL)
		return -EIO;
	if ((r = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, net_match_cb, &nm)) < 0 ||
	    (r = nl_send_simple(sk, RTM_GETLINK, NLM_F_DUMP, &ifi, sizeof(ifi))) < 0 ||
	    (r = nl_recvmsgs_default(sk)) < 0) {
		snprintf(msg, msglen, "link list: %s", nl_geterror(r));
		nl_socket_free(sk);
		return nl_to_errno(r);
	}
	nl_socket_free(sk);
	return 0;
}

/* Set attr (mtu or txqueuelen) of interface name to v over sk.  0 or
 * -errno with msg. */
static int
net_set(struct nl_sock *sk, const char *name, const char *attr, unsigned int v, char *msg,
    size_t msglen)
{
	struct rtnl_link *orig = NULL, *change;
	int r;

	if ((r = rtnl_link_get_kernel(sk, 0, name, &orig)) < 0) {
		snprintf(msg, msglen, "%s: %s", name, nl_geterror(r));
		return nl_to_errno(r);
	}
	if ((change = rtnl_link_alloc()) == NULL) {
		rtnl_link_put(orig);
		snprintf(msg, msglen, "rtnl_link_alloc failed");
		return -ENOMEM;
	}
	if (strcmp(attr, "mtu") == 0)
		rtnl_link_set_mtu(change, v);
	else
		rtnl_link_set_txqlen(change, v);
	if ((r = rtnl_link_change(sk, orig, change, 0)) < 0)
		snprintf(msg, msglen, "set %s %s %u: %s", name, attr, v, nl_geterror(r));
	rtnl_link_put(change);
	rtnl_link_put(orig);
	return r < 0 ? nl_to_errno(r) : 0;
}

/* ------------------------------------------------------------ upper_mtu */
/* The kernel lowers the MTU of the devices stacked on an interface (vlan,
 * macvlan, ipvlan and their taps: IFLA_LINK is the interface) when the
 * interface's MTU drops below theirs, and raising it again leaves them
 * low.  The driver journals their MTUs beside mtu as one journal-only
 * attribute of the interface, "upper_mtu": "NAME=MTU ..." (by name; the
 * devices of this namespace only), restored after the interface's own.
 * An interface with none has none (TUNE_NOT_SETTABLE: nothing
 * journaled). */
static const char *const net_stacked_kinds[] = {
	"vlan", "macvlan", "macvtap", "ipvlan", "ipvtap", NULL,
};

/* Is l a device stacked on ifindex in this namespace? */
static int
net_is_upper(struct rtnl_link *l, int ifindex)
{
	const char *kind = rtnl_link_get_type(l);
	int32_t ns;

	if (kind == NULL || rtnl_link_get_link(l) != ifindex ||
	    rtnl_link_get_ifindex(l) == ifindex || rtnl_link_get_link_netnsid(l, &ns) == 0)
		return 0;
	for (size_t i = 0; net_stacked_kinds[i]; i++)
		if (strcmp(kind, net_stacked_kinds[i]) == 0)
			return 1;
	return 0;
}

/* The ifindex of interface name, or -errno with msg. */
static int
net_ifindex(struct nl_sock *sk, const char *name, char *msg, size_t msglen)
{
	struct rtnl_link *l = NULL;
	int r;

	if ((r = rtnl_link_get_kernel(sk, 0, name, &l)) < 0) {
		snprintf(msg, msglen, "%s: %s", name, nl_geterror(r));
		return nl_to_errno(r);
	}
	r = rtnl_link_get_ifindex(l);
	rtnl_link_put(l);
	return r;
}

/* "NAME=MTU ..." of the devices stacked on target, by name, into buf.
 * 0, TUNE_NOT_SETTABLE when there are none, or -errno with msg. */
static int
net_uppers_read(struct nl_sock *sk, const char *target, char *buf, size_t len, char *msg,
    size_t msglen)
{
	struct nl_cache *cache = NULL;
	struct strvec v = { 0 };
	char one[64];
	size_t o = 0;
	int ifindex, r;

	if ((ifindex = net_ifindex(sk, target, msg, msglen)) < 0)
		return ifindex;
	if ((r = rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache)) < 0) {
		snprintf(msg, msglen, "link list: %s", nl_geterror(r));
		return nl_to_errno(r);
	}
	for (struct nl_object *ob = nl_cache_get_first(cache); ob; ob = nl_cache_get_next(ob))
		if (net_is_upper((struct rtnl_link *)ob, ifindex)) {
			snprintf(one, sizeof(one), "%s=%u",
			    rtnl_link_get_name((struct rtnl_link *)ob),
			    rtnl_link_get_mtu((struct rtnl_link *)ob));
			strvec_push(&v, one);
		}
	nl_cache_free(cache);
	strvec_sort(&v);
	buf[0] = '\0';
	for (size_t i = 0; i < v.n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? " " : "", v.v[i]);
	r = v.n == 0 ? TUNE_NOT_SETTABLE : o >= len ? -E2BIG : 0;
	if (r != 0)
		snprintf(msg, msglen, r > 0 ? "no devices stacked on %s" :
		    "%s: too many stacked devices", target);
	strvec_free(&v);
	return r;
}

/* Put back one "NAME=MTU" of target's snapshot: only to a device still
 * stacked on target.  0 or -errno with msg. */
static int
net_upper_put(struct nl_sock *sk, int ifindex, const char *target, char *tok, char *msg,
    size_t msglen)
{
	struct rtnl_link *l = NULL;
	char *eq = strchr(tok, '='), *end;
	unsigned long v;
	int r, upper;

	if (eq == NULL || (*eq = '\0', errno = 0, v = strtoul(eq + 1, &end, 10), errno) ||
	    *end || v > UINT32_MAX) {
		snprintf(msg, msglen, "%s upper_mtu: bad entry '%s'", target, tok);
		return -EINVAL;
	}
	if ((r = rtnl_link_get_kernel(sk, 0, tok, &l)) < 0) {
		snprintf(msg, msglen, "%s (stacked on %s): %s", tok, target, nl_geterror(r));
		return nl_to_errno(r);
	}
	upper = net_is_upper(l, ifindex);
	r = rtnl_link_get_mtu(l) == v;
	rtnl_link_put(l);
	if (!upper) {
		snprintf(msg, msglen, "%s is no longer stacked on %s: its MTU %lu is not written",
		    tok, target, v);
		return -ENODEV;
	}
	return r ? 0 : net_set(sk, tok, "mtu", (unsigned int)v, msg, msglen);
}

/* Put the MTUs of the devices stacked on target back from a snapshot
 * net_uppers_read gave.  0 or -errno with msg (the first failure; the
 * others are still written). */
static int
net_uppers_write(struct nl_sock *sk, const char *target, const char *value, char *msg,
    size_t msglen)
{
	char copy[NORM_VALUE_MAX], m[TUNE_MSG_MAX], *save = NULL;
	int ifindex, rc = 0, r;

	if ((ifindex = net_ifindex(sk, target, msg, msglen)) < 0)
		return ifindex;
	snprintf(copy, sizeof(copy), "%s", value);
	for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
		if ((r = net_upper_put(sk, ifindex, target, t, m, sizeof(m))) < 0 && rc == 0) {
			rc = r;
			snprintf(msg, msglen, "%s", m);
		}
	return rc;
}

/* ------------------------------------------------------------ ipv6_mtu */
/* Every MTU change of an interface sets its IPv6 MTU
 * (net.ipv6.conf.IF.mtu) to the new MTU, up or down (addrconf's
 * NETDEV_CHANGEMTU; below 1280 IPv6 leaves the interface and its conf
 * directory goes, to come back at the MTU once it is 1280 again), and the
 * sysctl refuses a value above the MTU.  The driver journals it beside
 * mtu as the journal-only attribute "ipv6_mtu", restored after the
 * interface's own.  An interface without IPv6 has none
 * (TUNE_NOT_SETTABLE: nothing journaled).  The file is the agent's
 * namespace's /proc/sys/net: the sysroot does not apply to it. */

/* /proc/sys/net/ipv6/conf/TARGET/mtu into buf. */
static void
net_ipv6_path(const char *target, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/sys/net/ipv6/conf/%s/mtu", target);
}

/* target's IPv6 MTU into buf: 0, TUNE_NOT_SETTABLE when it has no IPv6,
 * or -errno with msg. */
static int
net_ipv6_read(const char *target, char *buf, size_t len, char *msg, size_t msglen)
{
	char path[PATH_MAX];
	ssize_t n;

	net_ipv6_path(target, path, sizeof(path));
	if ((n = read_small_file(path, buf, len)) == -ENOENT) {
		snprintf(msg, msglen, "%s has no IPv6 (no %s)", target, path);
		return TUNE_NOT_SETTABLE;
	}
	if (n < 0) {
		snprintf(msg, msglen, "read %s: %s", path, strerror((int)-n));
		return (int)n;
	}
	return 0;
}

/* Write target's IPv6 MTU.  0 or -errno with msg. */
static int
net_ipv6_write(const char *target, const char *value, char *msg, size_t msglen)
{
	char path[PATH_MAX];
	int rc;

	net_ipv6_path(target, path, sizeof(path));
	if ((rc = write_small_file(path, value)) < 0)
		snprintf(msg, msglen, "write %s: %s", path, strerror(-rc));
	return rc;
}

static int
net_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf, size_t len,
    char *msg, size_t msglen)
{
	struct rtnl_link *link = NULL;
	struct nl_sock *sk;
	int r;

	(void)a;
	if (strcmp(s->attr, "ipv6_mtu") == 0)
		return net_ipv6_read(target, buf, len, msg, msglen);
	if ((sk = net_sock(msg, msglen)) == NULL)
		return -EIO;
	if (strcmp(s->attr, "upper_mtu") == 0) {
		r = net_uppers_read(sk, target, buf, len, msg, msglen);
		nl_socket_free(sk);
		return r;
	}
	if ((r = rtnl_link_get_kernel(sk, 0, target, &link)) < 0) {
		snprintf(msg, msglen, "%s: %s", target, nl_geterror(r));
		nl_socket_free(sk);
		return nl_to_errno(r);
	}
	if (strcmp(s->attr, "mtu") == 0)
		snprintf(buf, len, "%u", rtnl_link_get_mtu(link));
	else
		snprintf(buf, len, "%u", rtnl_link_get_txqlen(link));
	rtnl_link_put(link);
	nl_socket_free(sk);
	return 0;
}

static int
net_write(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	struct nl_sock *sk;
	unsigned long v = 0;
	char *end = NULL;
	int rc;

	(void)a;
	if (strcmp(s->attr, "upper_mtu") != 0) {
		errno = 0;
		v = strtoul(value, &end, 10);
		if (errno || *end || v > UINT32_MAX) {
			snprintf(msg, msglen, "%s %s: bad value %s", target, s->attr, value);
			return -EINVAL;
		}
	}
	if (strcmp(s->attr, "ipv6_mtu") == 0)
		return net_ipv6_write(target, value, msg, msglen);
	if ((sk = net_sock(msg, msglen)) == NULL)
		return -EIO;
	if (strcmp(s->attr, "upper_mtu") == 0)
		rc = net_uppers_write(sk, target, value, msg, msglen);
	else
		rc = net_set(sk, target, s->attr, (unsigned int)v, msg, msglen);
	nl_socket_free(sk);
	return rc;
}

/* The canonical form of a value: upper_mtu's snapshot as it is (white
 * space trimmed), the others through norm_setting. */
static int
net_normalise(const Knob__Setting *s, const char *raw, char *out, size_t outlen, char *msg,
    size_t msglen)
{
	char tmp[NORM_VALUE_MAX];

	if (strcmp(s->attr, "upper_mtu") != 0)
		return tune_norm_default(s, raw, out, outlen, msg, msglen);
	snprintf(tmp, sizeof(tmp), "%s", raw);
	if ((size_t)snprintf(out, outlen, "%s", strtrim(tmp)) >= outlen) {
		snprintf(msg, msglen, "value too long");
		return -1;
	}
	return 0;
}

/* mtu, then the MTUs of the devices stacked on it and its IPv6 MTU
 * (which cannot exceed it), then txqueuelen (an MTU change can reset
 * queue settings). */
static int
net_rank(const Knob__Setting *s)
{
	if (strcmp(s->attr, "mtu") == 0)
		return 0;
	return strcmp(s->attr, "upper_mtu") == 0 || strcmp(s->attr, "ipv6_mtu") == 0 ? 1 : 2;
}

/* What an mtu write moves: the MTUs of the devices stacked on it and its
 * IPv6 MTU. */
static const char *const *
net_coupled(const Knob__Setting *s)
{
	static const char *const upper[] = { "upper_mtu", "ipv6_mtu", NULL };

	return strcmp(s->attr, "mtu") == 0 ? upper : NULL;
}

/* ------------------------------------------------------------ check */
/* Below 1280 the kernel takes IPv6 off an interface whole (addrconf's
 * NETDEV_CHANGEMTU: its addresses, routes and net.ipv6.conf.IF
 * settings), and from the devices stacked on it, which follow its MTU
 * down.  Raising the MTU again brings back a fresh IPv6 with the default
 * settings and no configured address, which no rollback can undo.  So an
 * mtu below 1280 is refused before any write when the interface has IPv6
 * (its conf directory exists; a device stacked on it cannot have IPv6
 * without it, its MTU being no larger); one that has none (IPv6 off, or
 * an MTU already below 1280) is tuned as asked. */
#define NET_IPV6_MIN_MTU 1280

/* Does interface name have IPv6 in the agent's namespace (its IPv6 MTU
 * file, net_ipv6_path, exists)? */
static int
net_has_ipv6(const char *name)
{
	char path[PATH_MAX];

	net_ipv6_path(name, path, sizeof(path));
	return access(path, F_OK) == 0;
}

/* An mtu of target while sysctl net.ipv6.conf.TARGET.mtu is in play
 * (written by this apply, or journaled: tune_key_in_play): -EEXIST with
 * msg, else 0.  Every link MTU write sets the IPv6 MTU, so the two keys
 * would fight over it, and over its original (the profile loader refuses
 * both in one profile; this is --stack, a switch, and globs). */
static int
net_check_ipv6_sysctl(struct agent *a, const char *target, char *msg, size_t msglen)
{
	char path[PATH_MAX];
	const char *why;

	net_ipv6_path(target, path, sizeof(path));
	if ((why = tune_key_in_play(a, "sysctl", path, "")) == NULL)
		return 0;
	snprintf(msg, msglen, "every write of %s's link MTU sets its IPv6 MTU, and sysctl "
	    "net.ipv6.conf.%s.mtu sets it too (%s): one of the two keys tunes it; set the "
	    "link MTU alone, or roll back first", target, target, why);
	return -EEXIST;
}

/* tune_driver.check: an mtu where the sysctl of the IPv6 MTU is in play,
 * or below 1280 where it would take IPv6 away. */
static int
net_check(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	unsigned long v;
	char *end;
	int rc;

	if (strcmp(s->attr, "mtu") != 0)
		return 0;
	if ((rc = net_check_ipv6_sysctl(a, target, msg, msglen)) < 0)
		return rc;
	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno != 0 || end == value || *end != '\0' || v >= NET_IPV6_MIN_MTU)
		return 0;	/* the kernel judges the rest */
	if (!net_has_ipv6(target))
		return 0;
	snprintf(msg, msglen, "%s mtu %lu is below %d: the kernel would take IPv6 off %s and "
	    "the devices stacked on it, with their addresses and net.ipv6.conf settings, which "
	    "a rollback cannot bring back", target, v, NET_IPV6_MIN_MTU, target);
	return -EPERM;
}

/* ------------------------------------------------------------ protected */
/* A glob (an exact name, or an alternative name of it, is the admin's
 * word) never reaches the loopback nor an interface that carries a
 * default route (IPv4 or IPv6, main table, of the agent's namespace),
 * nor the devices beneath such an interface (the ports of a bridge or
 * bond, the interface a vlan or macvlan sits on), whose MTU bounds its:
 * one careless "*" or "e*" would cut the node off from the controller,
 * and the agent's own connection with it, mid-apply.  The interface that
 * owns the local address of an authenticated controller connection (the
 * loop records them: agent_ctl_addr_add) is protected the same way, with
 * the devices beneath it: a management network reached through a
 * connected subnet or a specific route carries no default route.  So is
 * the one that owns a controller connection's address seen before
 * (ctl_seen.c: remembered across restarts, for the boot re-apply). */
#define NET_UPLINK_DEPTH 4	/* levels of masters and stacked devices followed */

/* Is route r a unicast default route of the main table leaving through
 * ifindex (by any of its nexthops)? */
static int
net_default_via(struct rtnl_route *r, int ifindex)
{
	struct nl_addr *dst = rtnl_route_get_dst(r);

	if (rtnl_route_get_table(r) != RT_TABLE_MAIN || rtnl_route_get_type(r) != RTN_UNICAST ||
	    (dst != NULL && nl_addr_get_prefixlen(dst) != 0))
		return 0;
	for (int i = 0; i < rtnl_route_get_nnexthops(r); i++)
		if (rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(r, i)) == ifindex)
			return 1;
	return 0;
}

/* 4 or 6: the family of a default route of routes (net_default_via)
 * that leaves through ifindex; 0 when none does. */
static int
net_default_family(struct nl_cache *routes, int ifindex)
{
	for (struct nl_object *ob = nl_cache_get_first(routes); ob; ob = nl_cache_get_next(ob))
		if (net_default_via((struct rtnl_route *)ob, ifindex))
			return rtnl_route_get_family((struct rtnl_route *)ob) == AF_INET6 ? 6 : 4;
	return 0;
}

/* What protects an interface: the routes, and the interfaces (ifindex,
 * 0: none) that own the controllers' local addresses (text in ctl_s):
 * the live connections' first, then the ones seen before (ctl_seen.c;
 * ctl_old set), which the boot re-apply has alone. */
struct net_guard {
	struct nl_cache *routes;
	int nctl;
	int ctl_if[2 * AGENT_CTL_ADDRS];
	int ctl_old[2 * AGENT_CTL_ADDRS];
	char ctl_s[2 * AGENT_CTL_ADDRS][INET6_ADDRSTRLEN];
};

/* The live controller addresses of a, then the ones seen before that are
 * not live (marked in old), into ca: how many. */
static int
net_ctl_addrs(struct agent *a, struct agent_ctl_addr *ca, int *old)
{
	struct agent_ctl_addr seen[AGENT_CTL_ADDRS];
	int n = agent_ctl_addrs(a, ca), ns = agent_ctl_seen(a, seen);

	for (int i = 0; i < n; i++)
		old[i] = 0;
	for (int i = 0; i < ns; i++) {
		int live = 0;

		for (int k = 0; k < n && !live; k++)
			live = ca[k].family == seen[i].family && memcmp(ca[k].addr, seen[i].addr,
			    16) == 0;
		if (!live) {
			old[n] = 1;
			ca[n++] = seen[i];
		}
	}
	return n;
}

/* Fill g's controller interfaces from a's controller addresses (live and
 * seen before) and the address list of sk's namespace: 0, or -1 (nl error
 * in *err). */
static int
net_guard_ctl(struct nl_sock *sk, struct agent *a, struct net_guard *g, int *err)
{
	struct agent_ctl_addr ca[2 * AGENT_CTL_ADDRS];
	struct nl_cache *addrs = NULL;

	if ((g->nctl = net_ctl_addrs(a, ca, g->ctl_old)) == 0)
		return 0;	/* nothing to look up: no address list */
	if ((*err = rtnl_addr_alloc_cache(sk, &addrs)) < 0)
		return -1;
	for (int i = 0; i < g->nctl; i++) {
		g->ctl_if[i] = 0;
		inet_ntop(ca[i].family, ca[i].addr, g->ctl_s[i], sizeof(g->ctl_s[i]));
		for (struct nl_object *ob = nl_cache_get_first(addrs); ob;
		    ob = nl_cache_get_next(ob)) {
			struct nl_addr *l = rtnl_addr_get_local((struct rtnl_addr *)ob);

			if (l != NULL && nl_addr_get_family(l) == ca[i].family &&
			    nl_addr_get_len(l) == (ca[i].family == AF_INET ? 4u : 16u) &&
			    memcmp(nl_addr_get_binary_addr(l), ca[i].addr, nl_addr_get_len(l)) == 0)
				g->ctl_if[i] = rtnl_addr_get_ifindex((struct rtnl_addr *)ob);
		}
	}
	nl_cache_free(addrs);
	return 0;
}

/* Does ifindex carry a default route or a controller's connection (g)?
 * 1 with what ("the IPv6 default route", "the controller's connection
 * (10.0.0.1)"), else 0. */
static int
net_carries(const struct net_guard *g, int ifindex, char *what, size_t len)
{
	int fam = net_default_family(g->routes, ifindex);

	if (fam != 0) {
		snprintf(what, len, "the %sdefault route", fam == 6 ? "IPv6 " : "");
		return 1;
	}
	for (int i = 0; i < g->nctl; i++)
		if (g->ctl_if[i] == ifindex) {
			snprintf(what, len, g->ctl_old[i] ? "a controller's earlier connection (%s)" :
			    "the controller's connection (%s)", g->ctl_s[i]);
			return 1;
		}
	return 0;
}

/* The interface of links that carries a default route or a controller's
 * connection (net_carries: what) and l's traffic with it: l itself, or
 * up to depth levels above it its master (bridge, bond, team) or a device
 * stacked on it (vlan, macvlan: net_is_upper); NULL when none.  Borrowed
 * from links or l. */
static struct rtnl_link *
net_uplink(struct nl_cache *links, const struct net_guard *g, struct rtnl_link *l, int depth,
    char *what, size_t len)
{
	int ifindex = rtnl_link_get_ifindex(l);
	struct rtnl_link *u = NULL;

	if (net_carries(g, ifindex, what, len))
		return l;
	for (struct nl_object *ob = nl_cache_get_first(links); ob && depth > 0 && u == NULL;
	    ob = nl_cache_get_next(ob))
		if (rtnl_link_get_ifindex((struct rtnl_link *)ob) == rtnl_link_get_master(l) ||
		    net_is_upper((struct rtnl_link *)ob, ifindex))
			u = net_uplink(links, g, (struct rtnl_link *)ob, depth - 1, what, len);
	return u;
}

/* Why a glob must not touch interface target ("is the loopback",
 * "carries the default route", "is beneath br0, which carries ...",
 * "carries the controller's connection (ADDR)"), into why: 1 with it
 * (also when the lists cannot be read: unknown is not safe), 0 when
 * nothing protects it or it is gone. */
static int
net_protect_why(struct nl_sock *sk, struct agent *a, const char *target, char *why, size_t len)
{
	struct nl_cache *links = NULL;
	struct net_guard g = { 0 };
	struct rtnl_link *l = NULL, *u;
	char what[128];
	int r, hit = 1;

	if ((r = rtnl_link_alloc_cache(sk, AF_UNSPEC, &links)) < 0 ||
	    (r = rtnl_route_alloc_cache(sk, AF_UNSPEC, 0, &g.routes)) < 0)
		snprintf(why, len, "may carry the default route (%s)", nl_geterror(r));
	else if (net_guard_ctl(sk, a, &g, &r) < 0)
		snprintf(why, len, "may carry the controller's connection (%s)", nl_geterror(r));
	else if ((l = rtnl_link_get_by_name(links, target)) == NULL)
		hit = 0;
	else if (rtnl_link_get_flags(l) & IFF_LOOPBACK)
		snprintf(why, len, "is the loopback");
	else if ((u = net_uplink(links, &g, l, NET_UPLINK_DEPTH, what, sizeof(what))) == NULL)
		hit = 0;
	else if (u == l)
		snprintf(why, len, "carries %s", what);
	else
		snprintf(why, len, "is beneath %s, which carries %s", rtnl_link_get_name(u), what);
	if (l != NULL)
		rtnl_link_put(l);
	if (g.routes != NULL)
		nl_cache_free(g.routes);
	if (links != NULL)
		nl_cache_free(links);
	return hit;
}

/* tune_driver.protect: 1 with msg for the loopback and the interfaces
 * that carry a default route or a controller's connection or sit beneath
 * one, else 0 (also when target
 * is gone: its read says so). */
static int
net_protect(struct agent *a, const Knob__Setting *s, const char *target, char *msg,
    size_t msglen)
{
	struct nl_sock *sk;
	char why[300];
	int hit;

	(void)s;
	if ((sk = net_sock(msg, msglen)) == NULL)
		return 0;
	hit = net_protect_why(sk, a, target, why, sizeof(why));
	nl_socket_free(sk);
	if (hit)
		snprintf(msg, msglen, "%s %s: a glob never touches it (name the interface exactly "
		    "to tune it)", target, why);
	return hit;
}

/* ------------------------------------------------------------ file */
/* tune_driver.file: the sysfs file that holds attribute s of interface
 * target, which a sysfs key reaches too: /sys/class/net/IF/mtu for mtu,
 * /sys/class/net/IF/tx_queue_len for txqueuelen (below the sysroot, as
 * the sysfs key's; compared by device and inode, so the link into
 * /sys/devices is followed alike).  -1 for the journal-only attributes:
 * upper_mtu is other devices' MTUs, and ipv6_mtu
 * (net.ipv6.conf.IF.mtu) is the IPv6 MTU, another setting than the
 * link's. */
static int
net_file(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	static const char *const files[][2] = {
		{ "mtu", "mtu" }, { "txqueuelen", "tx_queue_len" },
	};

	for (size_t i = 0; i < nitems(files); i++)
		if (s->attr != NULL && strcmp(s->attr, files[i][0]) == 0)
			return snprintf(buf, len, "/sys/class/net/%s/%s", target, files[i][1]) <
			    (int)len ? 0 : -1;
	return -1;
}

const struct tune_driver drv_net = {
	.name = "net",
	.resolve = net_resolve,
	.read = net_read,
	.normalise = net_normalise,
	.write = net_write,
	.describe = tune_describe_default,
	.rank = net_rank,
	.coupled = net_coupled,
	.check = net_check,
	.protect = net_protect,
	.file = net_file,
};
