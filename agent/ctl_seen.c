/*
 * The controller addresses knobd remembers: the local address of every
 * authenticated controller connection it has seen, newest first, at most
 * AGENT_CTL_ADDRS of them, kept in STATE/controller-addrs (one address a
 * line) across restarts.  The net driver protects their interfaces from a
 * glob as it does the live connections' (drv_net.c): the boot re-apply
 * runs before any controller connects, and a management network reached
 * through a connected subnet carries no default route, so without this a
 * glob applied while the controller's interface was protected would reach
 * that interface at the next boot.  Forgetting one: remove the file.
 *
 * Kept in the agent (a->ctl_seen, under a->ctl_mu).  The event loop only
 * notes a new address in memory; the file is read and written where the
 * list is used, on the net driver's worker (agent_ctl_seen): no file I/O
 * on the loop, and none at all for an agent that never judges a net glob.
 * That use comes before any write of the apply that needs it, so the
 * boot re-apply finds every address a glob was judged against.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "log.h"
#include "util.h"

#define SEEN_FILE "controller-addrs"

/* Text address s as a set key: 0, or -1 when it is none. */
static int
seen_parse(const char *s, struct agent_ctl_addr *k)
{
	memset(k, 0, sizeof(*k));
	k->family = strchr(s, ':') != NULL ? AF_INET6 : AF_INET;
	return inet_pton(k->family, s, k->addr) == 1 ? 0 : -1;
}

/* Is k among a's remembered addresses? */
static int
seen_has(const struct agent *a, const struct agent_ctl_addr *k)
{
	for (int i = 0; i < a->ctl_nseen; i++)
		if (a->ctl_seen[i].family == k->family && memcmp(a->ctl_seen[i].addr, k->addr,
		    16) == 0)
			return 1;
	return 0;
}

/* Read the file once, behind the addresses noted before (they are newer;
 * a line that is no address is skipped and logged).  Under ctl_mu. */
static void
seen_load(struct agent *a)
{
	char path[PATH_MAX], buf[1024], *save = NULL;
	struct agent_ctl_addr k;

	if (a->ctl_seen_loaded)
		return;
	a->ctl_seen_loaded = 1;
	if (agent_state_path(a, SEEN_FILE, path, sizeof(path)) < 0 ||
	    read_small_file(path, buf, sizeof(buf)) <= 0)
		return;
	for (char *l = strtok_r(buf, "\n", &save); l && a->ctl_nseen < AGENT_CTL_ADDRS;
	    l = strtok_r(NULL, "\n", &save)) {
		if (seen_parse(strtrim(l), &k) < 0)
			log_warnx("%s: '%s' is no IP address: skipped", path, l);
		else if (!seen_has(a, &k))
			a->ctl_seen[a->ctl_nseen++] = k;
	}
}

/* Write a's remembered addresses to the file (atomically); a failure is
 * logged, the addresses stay remembered in memory. */
static void
seen_save(struct agent *a)
{
	char path[PATH_MAX], buf[AGENT_CTL_ADDRS * (INET6_ADDRSTRLEN + 1) + 1] = "", s[64];
	size_t off = 0;
	int rc;

	if (agent_state_path(a, SEEN_FILE, path, sizeof(path)) < 0)
		return;
	for (int i = 0; i < a->ctl_nseen; i++) {
		inet_ntop(a->ctl_seen[i].family, a->ctl_seen[i].addr, s, sizeof(s));
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s\n", s);
	}
	if ((rc = write_file_atomic(path, buf, off, 0644)) < 0)
		log_warnx("%s: %s: controller addresses kept until knobd stops only", path,
		    strerror(-rc));
}

void
agent_ctl_seen_note(struct agent *a, const struct agent_ctl_addr *k)
{
	if (seen_has(a, k))
		return;
	memmove(&a->ctl_seen[1], &a->ctl_seen[0], sizeof(a->ctl_seen) - sizeof(a->ctl_seen[0]));
	a->ctl_seen[0] = *k;
	a->ctl_seen[0].n = 0;
	if (a->ctl_nseen < AGENT_CTL_ADDRS)
		a->ctl_nseen++;
	a->ctl_seen_dirty = 1;
}

int
agent_ctl_seen(struct agent *a, struct agent_ctl_addr *out)
{
	int n;

	pthread_mutex_lock(&a->ctl_mu);
	seen_load(a);
	if (a->ctl_seen_dirty) {	/* rare: once per new address */
		a->ctl_seen_dirty = 0;
		seen_save(a);
	}
	n = a->ctl_nseen;
	memcpy(out, a->ctl_seen, (size_t)n * sizeof(*out));
	pthread_mutex_unlock(&a->ctl_mu);
	return n;
}
