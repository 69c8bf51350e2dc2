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
 *   controller that has authenticated, newest first, AGENT_CTL_HOSTS of
 *   them; on the loop thread, and kept across restarts (an upgrade, a
 *   reboot, a crash) in STATE/controller-sources, one a line, so that a
 *   flood right after a restart does not push out a controller that has
 *   no ticket.  The file is read once, before the agent serves; it is
 *   written (atomically, mode 0600) only when a source is new, by a pool
 *   thread: the loop only renders the text (under ctl_src_mu, a copy),
 *   never waits for the disk.  Only root can write the state directory;
 *   still, a line that is no source, or a file larger than any the agent
 *   writes, is a warning (file:line) and ranks nothing.  Forgetting them:
 *   remove the file while knobd is stopped.
 * Only the order changes: such a handshake still meets its deadlines, the
 * per-address budget still counts it, and it must still authenticate.  A
 * source is an address seen on a TCP connection, which an attacker off
 * the path cannot forge.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "util.h"

#define SRC_FILE "controller-sources"

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

/* s, a learned source, into out in the form budget_source (loop.c) gives
 * one: "ADDR" (IPv4, or IPv4-mapped IPv6) or "PREFIX/64" (IPv6, the low
 * 64 bits cleared).  0, or -1 when s is none. */
static int
src_canon(const char *s, char *out, size_t len)
{
	char buf[INET6_ADDRSTRLEN + 4], *slash;
	struct in6_addr a6;
	struct in_addr a4;

	if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
		return -1;
	if ((slash = strchr(buf, '/')) != NULL) {
		*slash++ = '\0';
		if (strcmp(slash, "64") != 0 || inet_pton(AF_INET6, buf, &a6) != 1 ||
		    IN6_IS_ADDR_V4MAPPED(&a6))
			return -1;
		memset(a6.s6_addr + 8, 0, 8);
		inet_ntop(AF_INET6, &a6, buf, sizeof(buf));
		return snprintf(out, len, "%s/64", buf) < (int)len ? 0 : -1;
	}
	if (inet_pton(AF_INET, buf, &a4) == 1)
		inet_ntop(AF_INET, &a4, buf, sizeof(buf));
	else if (inet_pton(AF_INET6, buf, &a6) == 1 && IN6_IS_ADDR_V4MAPPED(&a6))
		inet_ntop(AF_INET6, &a6, buf, sizeof(buf));
	else
		return -1;
	return snprintf(out, len, "%s", buf) < (int)len ? 0 : -1;
}

/* On a pool thread: write the text the loop rendered last, and again
 * while the loop renders a newer one meanwhile; then no writer is busy.
 * A failure is logged: the sources stay known until knobd stops. */
static void
src_save_run(struct work *w)
{
	struct agent *a = w->a;
	char path[PATH_MAX], text[sizeof(a->ctl_src_text)];
	unsigned gen;
	int rc;

	pthread_mutex_lock(&a->ctl_src_mu);
	while (a->ctl_src_written != a->ctl_src_gen) {
		gen = a->ctl_src_gen;
		memcpy(text, a->ctl_src_text, sizeof(text));
		pthread_mutex_unlock(&a->ctl_src_mu);
		if (agent_state_path(a, SRC_FILE, path, sizeof(path)) < 0)
			rc = -ENAMETOOLONG;
		else
			rc = write_file_atomic(path, text, strlen(text), 0600);
		if (rc < 0)
			log_warnx("%s/" SRC_FILE ": %s: the controllers' sources are kept until "
			    "knobd stops only", a->state_dir, strerror(-rc));
		pthread_mutex_lock(&a->ctl_src_mu);
		a->ctl_src_written = gen;
	}
	a->ctl_src_busy = 0;
	pthread_mutex_unlock(&a->ctl_src_mu);
}

/* From the loop: render a's learned sources (those that are sources) for
 * the file, and have a pool thread write it unless one does already. */
static void
src_save(struct agent *a)
{
	char canon[64];
	size_t off;
	int start;

	if (a->state_dir[0] == '\0')	/* nowhere to keep them */
		return;
	pthread_mutex_lock(&a->ctl_src_mu);
	off = (size_t)snprintf(a->ctl_src_text, sizeof(a->ctl_src_text), "# knobd: sources "
	    "controllers authenticated from, newest first\n");
	for (int i = 0; i < AGENT_CTL_HOSTS && a->ctl_hosts[i][0]; i++)
		if (src_canon(a->ctl_hosts[i], canon, sizeof(canon)) == 0)
			off += (size_t)snprintf(a->ctl_src_text + off,
			    sizeof(a->ctl_src_text) - off, "%s\n", canon);
	a->ctl_src_gen++;
	start = !a->ctl_src_busy;
	a->ctl_src_busy = 1;
	pthread_mutex_unlock(&a->ctl_src_mu);
	if (start)
		agent_work(a, NULL, NULL, src_save_run, NULL, NULL);
}

void
agent_ctl_host_note(struct agent *a, const char *host)
{
	int i, is_new;

	for (i = 0; i < AGENT_CTL_HOSTS - 1 && strcmp(a->ctl_hosts[i], host) != 0; i++)
		;
	is_new = strcmp(a->ctl_hosts[i], host) != 0;
	memmove(a->ctl_hosts[1], a->ctl_hosts[0], (size_t)i * sizeof(a->ctl_hosts[0]));
	snprintf(a->ctl_hosts[0], sizeof(a->ctl_hosts[0]), "%s", host);
	if (is_new)	/* rare: the order alone is not worth a write */
		src_save(a);
}

int
agent_ctl_host_known(const struct agent *a, const char *host)
{
	for (int i = 0; i < AGENT_CTL_HOSTS && a->ctl_hosts[i][0]; i++)
		if (strcmp(a->ctl_hosts[i], host) == 0)
			return 1;
	return 0;
}

/* Read path (a regular file of AGENT_CTL_SRC_MAX bytes at most) into buf
 * (len: AGENT_CTL_SRC_MAX + 2): its length, 0 when there is none (or
 * nothing in it), -1 when it is unusable (said so, file:line). */
static ssize_t
src_read(const char *path, char *buf, size_t len)
{
	struct stat st;
	size_t raw = 0;
	ssize_t n;
	int fd, line = 1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0) {
		if (errno == ENOENT)	/* none learned yet: normal */
			return 0;
		log_warn("%s: the controllers' sources learned before are not used", path);
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		log_warnx("%s: not a regular file: the controllers' sources learned before are "
		    "not used", path);
		close(fd);
		return -1;
	}
	n = read_small_fd(fd, buf, len, &raw);
	close(fd);
	if (n >= 0 && raw <= len - 2)
		return n;
	for (size_t k = 0; n >= 0 && k < len - 2; k++)	/* the line past the bound */
		line += buf[k] == '\n';
	if (n < 0)
		log_warnx("%s:%d: %s: the controllers' sources learned before are not used",
		    path, line, strerror((int)-n));
	else
		log_warnx("%s:%d: over %d bytes: the controllers' sources learned before are "
		    "not used", path, line, AGENT_CTL_SRC_MAX);
	return -1;
}

/* One line (number line) of the file into a's learned sources (*n of
 * them read so far, counting those past the bound): a comment or a blank
 * is nothing, a source is added behind those read before, and anything
 * else is a warning. */
static void
src_line(struct agent *a, const char *path, int line, char *l, int *n)
{
	char canon[64];

	l = strtrim(l);
	if (*l == '\0' || *l == '#')
		return;
	if (src_canon(l, canon, sizeof(canon)) < 0)
		log_warnx("%s:%d: '%.64s' is not an address or PREFIX/64: skipped", path, line, l);
	else if (*n >= AGENT_CTL_HOSTS) {
		if ((*n)++ == AGENT_CTL_HOSTS)	/* once */
			log_warnx("%s:%d: more than %d sources: this one and the rest skipped",
			    path, line, AGENT_CTL_HOSTS);
	} else if (!agent_ctl_host_known(a, canon))
		snprintf(a->ctl_hosts[(*n)++], sizeof(a->ctl_hosts[0]), "%s", canon);
}

void
agent_ctl_src_load(struct agent *a)
{
	char path[PATH_MAX], buf[AGENT_CTL_SRC_MAX + 2], *l, *next;
	int line = 1, n = 0;

	if (a->cfg.stdio || agent_state_path(a, SRC_FILE, path, sizeof(path)) < 0 ||
	    src_read(path, buf, sizeof(buf)) <= 0)
		return;
	for (l = buf; l != NULL; l = next, line++) {
		if ((next = strchr(l, '\n')) != NULL)
			*next++ = '\0';
		src_line(a, path, line, l, &n);
	}
	if ((n = n > AGENT_CTL_HOSTS ? AGENT_CTL_HOSTS : n) > 0)
		log_info("%s: %d learned controllers' sources: first among handshakes under a "
		    "flood", path, n);
}

