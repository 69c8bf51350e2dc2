/*
 * The sources knobd takes for its controllers' before they authenticate,
 * for the flood defence's ranking (loop.c, hs_progress): a handshake from
 * such a source ranks above every other when the budget of unauthenticated
 * connections is full, so that a ClientHello flood from any number of
 * other addresses cannot push out a controller that has no ticket to
 * resume with (its first command after its ticket cache was emptied, a
 * new CA, a restarted holder's first round).  Two kinds:
 * - configured: `knobd --controller-from ADDR[/BITS][,...]` (the head
 *   node's addresses), from start-up on;
 * - learned: the budget source (an address, an IPv6 one's /64) of every
 *   controller that authenticated since the agent started, newest first,
 *   AGENT_CTL_HOSTS of them; in memory only, on the loop thread.
 * Only the order changes: such a handshake still meets its deadlines, the
 * per-address budget still counts it, and it must still authenticate.  A
 * source is an address seen on a TCP connection, which an attacker off
 * the path cannot forge.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "util.h"

/* One ADDR[/BITS] of --controller-from into n: 0, or -1. */
static int
net_parse(const char *s, struct agent_src_net *n)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	unsigned long bits;

	if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
		return -1;
	if ((slash = strchr(buf, '/')) != NULL)
		*slash++ = '\0';
	memset(n, 0, sizeof(*n));
	if (inet_pton(AF_INET, buf, n->addr) == 1)
		n->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, n->addr) == 1)
		n->family = AF_INET6;
	else
		return -1;
	n->bits = n->family == AF_INET ? 32 : 128;
	if (slash == NULL)
		return 0;
	bits = strtoul(slash, &end, 10);
	if (*slash == '\0' || *end != '\0' || bits > n->bits)
		return -1;
	n->bits = (unsigned)bits;
	return 0;
}

int
agent_ctl_from_parse(struct agent *a, const char *list, char *err, size_t errlen)
{
	char *copy, *tok, *save = NULL;
	int rc = 0;

	a->ctl_nfrom = 0;
	if (list == NULL || *list == '\0')
		return 0;
	copy = xstrdup(list);
	for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		if (a->ctl_nfrom == AGENT_CTL_FROM) {
			snprintf(err, errlen, "--controller-from: more than %d sources",
			    AGENT_CTL_FROM);
			rc = -1;
			break;
		}
		if (net_parse(tok, &a->ctl_from[a->ctl_nfrom]) < 0) {
			snprintf(err, errlen, "--controller-from: '%s' is not an address or "
			    "ADDR/BITS", tok);
			rc = -1;
			break;
		}
		a->ctl_nfrom++;
	}
	free(copy);
	return rc;
}

/* Do the first bits of x and y agree? */
static int
prefix_eq(const unsigned char *x, const unsigned char *y, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;

	if (memcmp(x, y, whole) != 0)
		return 0;
	return rest == 0 || ((x[whole] ^ y[whole]) & (0xff << (8 - rest)) & 0xff) == 0;
}

int
agent_ctl_from_match(const struct agent *a, const struct sockaddr *sa)
{
	struct agent_ctl_addr k;

	if (agent_ctl_addr_key(sa, &k) < 0)
		return 0;
	for (int i = 0; i < a->ctl_nfrom; i++)
		if (a->ctl_from[i].family == k.family &&
		    prefix_eq(a->ctl_from[i].addr, k.addr, a->ctl_from[i].bits))
			return 1;
	return 0;
}

void
agent_ctl_host_note(struct agent *a, const char *host)
{
	int i;

	for (i = 0; i < AGENT_CTL_HOSTS - 1 && strcmp(a->ctl_hosts[i], host) != 0; i++)
		;
	memmove(a->ctl_hosts[1], a->ctl_hosts[0], (size_t)i * sizeof(a->ctl_hosts[0]));
	snprintf(a->ctl_hosts[0], sizeof(a->ctl_hosts[0]), "%s", host);
}

int
agent_ctl_host_known(const struct agent *a, const char *host)
{
	for (int i = 0; i < AGENT_CTL_HOSTS && a->ctl_hosts[i][0]; i++)
		if (strcmp(a->ctl_hosts[i], host) == 0)
			return 1;
	return 0;
}
