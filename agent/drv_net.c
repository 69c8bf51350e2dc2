/* net driver: an interface glob with mtu or txqueuelen, read and set over
 * rtnetlink with libnl-route-3 (no ip(8)).  Interfaces are those of the
 * agent's own network namespace; the sysroot does not apply to them. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/netlink.h>
#include <netlink/errno.h>
#include <netlink/route/link.h>

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

static int
net_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	struct nl_cache *cache = NULL;
	struct nl_sock *sk;
	struct nl_object *o;
	int r;

	(void)a;
	if ((sk = net_sock(msg, msglen)) == NULL)
		return -EIO;
	if ((r = rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache)) < 0) {
		snprintf(msg, msglen, "link list: %s", nl_geterror(r));
		nl_socket_free(sk);
		return nl_to_errno(r);
	}
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		const char *name = rtnl_link_get_name((struct rtnl_link *)o);

		if (name && fnmatch(s->key, name, 0) == 0 && !strvec_contains(out, name))
			strvec_push(out, name);
	}
	nl_cache_free(cache);
	nl_socket_free(sk);
	return 0;
}

static int
net_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf, size_t len,
    char *msg, size_t msglen)
{
	struct rtnl_link *link = NULL;
	struct nl_sock *sk;
	int r;

	(void)a;
	if ((sk = net_sock(msg, msglen)) == NULL)
		return -EIO;
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
	struct rtnl_link *orig = NULL, *change = NULL;
	struct nl_sock *sk;
	unsigned long v;
	char *end;
	int r, rc = 0;

	(void)a;
	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno || *end || v > UINT32_MAX) {
		snprintf(msg, msglen, "%s %s: bad value %s", target, s->attr, value);
		return -EINVAL;
	}
	if ((sk = net_sock(msg, msglen)) == NULL)
		return -EIO;
	if ((r = rtnl_link_get_kernel(sk, 0, target, &orig)) < 0) {
		snprintf(msg, msglen, "%s: %s", target, nl_geterror(r));
		rc = nl_to_errno(r);
		goto out;
	}
	change = rtnl_link_alloc();
	if (strcmp(s->attr, "mtu") == 0)
		rtnl_link_set_mtu(change, (unsigned int)v);
	else
		rtnl_link_set_txqlen(change, (unsigned int)v);
	if ((r = rtnl_link_change(sk, orig, change, 0)) < 0) {
		snprintf(msg, msglen, "set %s %s %lu: %s", target, s->attr, v, nl_geterror(r));
		rc = nl_to_errno(r);
	}
out:
	if (change)
		rtnl_link_put(change);
	if (orig)
		rtnl_link_put(orig);
	nl_socket_free(sk);
	return rc;
}

/* mtu before txqueuelen (an MTU change can reset queue settings). */
static int
net_rank(const Knob__Setting *s)
{
	return strcmp(s->attr, "mtu") == 0 ? 0 : 1;
}

const struct tune_driver drv_net = {
	.name = "net",
	.resolve = net_resolve,
	.read = net_read,
	.normalise = tune_norm_default,
	.write = net_write,
	.describe = tune_describe_default,
	.rank = net_rank,
};
