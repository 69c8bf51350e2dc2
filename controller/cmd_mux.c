/* knobctl mux: the connection holder.  It keeps one authenticated TLS
 * connection (a link) per node open between commands, as ssh's
 * ControlMaster does, so that a request/reply command (ping, facts, apply,
 * verify, rollback, active) costs each node one relayed exchange instead
 * of a TLS handshake.  knobctl finds it by its socket next to the results
 * database; the channel protocol is in controller/fo_mux.c.
 *
 * One thread, one event base (common/ev.c).  A command's channel (one
 * unix connection) carries all of its nodes.  A node whose link is idle
 * gets it at once; the nodes that need new links after a round of events
 * are dialled together (a batch) by the ordinary fan-out (the same
 * verification, name pinning, ticket cache and error texts as a direct
 * command; a link knows its agent certificate's notAfter, verified or
 * recorded with the ticket it resumed, to stop at its expiry), which
 * hands each open connection over (fanout_detach).  The agent's ticket
 * comes on the link after that: the holder keeps it (link_ticket) and,
 * once a second at most and at exit (tickets_save), hands what changed to
 * a thread that writes the ticket cache (controller/tcsaver.c): the loop
 * never waits on the cache's lock or its disk.  Each
 * batch runs on a thread of its own, at once, beside the batches already
 * out (at most MUX_DIALS of them, and with --fanout N at most N nodes in
 * flight in all; a node that finds no room for as long as its command
 * waits for a verdict is unreachable, with why: wait_expire), and each of
 * its nodes' links or failures comes to the
 * loop as soon as that node's dial ends (an eventfd): a dead node's dial
 * holds nobody else, neither the commands on kept links nor a node alive
 * that is dialled beside it.  A node being dialled takes a link to its
 * node that goes idle meanwhile.  What a round of events queued for a channel is
 * written at the round's end, in one writev for many nodes.  A link goes back to the idle
 * set only when the channel says its node's exchange is complete (DONE);
 * any other end closes it.  A channel whose knobctl does not read has its
 * links' input held once its queue passes MUX_CHAN_HIGH (back-pressure).
 * An idle link that the agent closes, or that says anything, is closed.
 * The holder exits after --persist seconds without a channel (never with
 * --persist 0, as under systemd), or on SIGTERM/SIGINT or `knobctl mux
 * --stop`, closing every link cleanly: exit status 0.  When the CA, its CRL
 * or the controller certificate changed under it, it closes every link and
 * exits 1: it could not go on holding (as when its event loop fails),
 * and a supervisor (controller/knob-mux.service, Restart=on-failure)
 * starts it again on the new files.  One holder a socket: an flock on
 * knob-mux.lock beside it (mux_lock). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "ev.h"
#include "knobctl.h"
#include "log.h"
#include "opt.h"
#include "results.h"
#include "tls.h"
#include "util.h"

#define MUX_LOCK "knob-mux.lock"	/* beside the socket: one holder per socket */
#define MUX_BUCKETS 16384
#define MUX_NODE_BUCKETS 4096
#define MUX_HEADER_MS 10000	/* for a channel's first line (mux_header_ns) */
#define MUX_DIALS 32		/* batches being dialled at once (a thread each) */
#define MUX_WAIT_TICK_NS (100 * 1000000ull)	/* how often waiting nodes are looked at */
/* The links' tickets are handed to the saver this long after the first
 * one not yet saved (one write for a round of dials), and at exit. */
#define MUX_TICKETS_NS (1000 * 1000000ull)
/* At exit, the saver's last save is waited for this long at most (its
 * lock wait, TC_LOCK_WAIT_MS, and a write): then the holder exits. */
#define MUX_SAVE_EXIT_S 10
/* Back-pressure: a channel whose queue for knobctl holds more than this
 * has its links' input held (not read, so the agents' replies wait in
 * TCP) until it drains below half of it.  It then exceeds this by one
 * reply at most (FRAME_MAX), so MUX_QUEUE, which drops a channel, is
 * only a last resort (for the nodes' status lines). */
#define MUX_CHAN_HIGH (4u << 20)

enum { CH_HEADER, CH_NODES };

struct mux;
struct mux_chan;
struct mux_node;
struct dial_batch;

/* A TLS connection to one node, idle or serving one channel's node. */
struct mux_link {
	struct mux *m;
	char *key;		/* "NAME ADDR PORT" */
	char *name;		/* NAME: its tickets' node and pin */
	int fd;
	struct conn c;
	struct fo_sink sink;	/* the agent's tickets (link_ticket) */
	struct mux_node *mn;	/* NULL: idle */
	int64_t not_after;	/* the agent's certificate expires then (unix s) */
	int answered;		/* a reply came: the agent accepted our certificate */
	struct mux_link *next;	/* hash chain */
};

/* One node of a channel: the id knobctl gave it, its link once it has one. */
struct mux_node {
	struct mux_chan *ch;
	uint32_t id;
	char *name, *addr, *key;
	int port;
	double ctimeout;
	struct mux_link *link;
	int waiting;		/* on m->waiting, for a new link */
	uint64_t t_open;	/* monotonic, at its OPEN */
	struct dial_batch *batch;	/* being dialled (its v[bidx]) */
	size_t bidx;
	struct mux_node *knext;	/* being dialled: in m->dtab, by key */
	unsigned asked;		/* requests relayed to the node without a reply yet */
	struct mux_node *wnext, *wprev;
	struct mux_node *hnext;	/* in ch->tab */
};

/* One knobctl connection: a status line, or a command's nodes. */
struct mux_chan {
	struct mux *m;
	int fd;
	struct conn c;
	int state;
	int closing;		/* the last answer is queued: close when written */
	uint64_t t_accept;	/* monotonic */
	char hdr[MUX_LINE];	/* CH_HEADER: the first line so far */
	size_t hlen;
	struct mux_chan *fnext, *fprev;	/* in m->fresh until its first line */
	struct mux_chan *cnext, *cprev;	/* in m->chans */
	struct mux_node **tab;	/* CH_NODES: MUX_NODE_BUCKETS chains by id */
	int dirty;		/* on m->dirty: output to write after this round */
	struct mux_chan *dnext;
	int held;		/* its queue went over MUX_CHAN_HIGH: links not read */
};

/* Nodes dialled together, on a thread of their own. */
struct dial_batch {
	struct mux *m;
	struct ctl ctl;		/* the holder's, with the batch's connect timeout
				 * and ticket cache (the threads share none) */
	struct fanout fo;
	struct mux_node **v;	/* NULL where the node went or got its answer */
	char **keys, **addrs;	/* copies: the nodes may go meanwhile */
	pthread_t th;
	int threaded;
	struct dial_batch *next;	/* in m->dials */
};

/* From a dialling thread to the loop: node i's dial ended (its link, or
 * status and detail), or (i == SIZE_MAX) the batch's run is over. */
struct dial_done {
	struct dial_batch *b;
	size_t i;
	int status;
	char *detail;
	struct mux_link *lk;
	struct dial_done *next;
};

struct mux {
	struct ctl *ctl;
	struct ev_base *ev;
	int lfd, sfd;
	int lockfd;		/* MUX_LOCK, flocked while we run */
	char path[PATH_MAX];
	struct mux_link *tab[MUX_BUCKETS];
	struct mux_node *dtab[MUX_BUCKETS];	/* nodes being dialled, by key */
	struct mux_node *waiting, *waiting_tail;	/* oldest first */
	struct mux_chan *dirty;
	struct mux_chan *chans;	/* every channel */
	struct ev_timer idle_t, sweep_t, wait_t, tickets_t;
	struct mux_chan *fresh, *fresh_tail;	/* no first line yet, oldest first */
	struct dial_batch *dials;	/* the batches being dialled, each on its thread */
	size_t ndials, inflight;	/* batches out; their nodes without an answer */
	pthread_mutex_t done_mu;	/* guards done: the threads post, the loop takes */
	struct dial_done *done, **done_tail;
	int dial_efd;		/* a thread posted */
	struct tcache_saver *saver;	/* writes ctl->tickets' changes (NULL: we do) */
	double persist;		/* 0: no idle exit */
	int stop;
	int stale;		/* stopped on a trust change: exit 1 */
	char trust[65];		/* ctl_trust_id when we started */
	int64_t not_after;	/* our own certificate expires then (unix s) */
	uint64_t header_ns;	/* a channel's first line comes within it */
	uid_t uid;		/* ours: the only peers served */
	size_t nchan, nlinks, nnodes, nasked;
	unsigned long long opened, reused, closed;
};

static void chan_free(struct mux_chan *ch);
static void fresh_remove(struct mux_chan *ch);
static void link_event(int fd, uint32_t events, void *arg);
static void wait_arm(struct mux *m);
static void chan_resume(struct mux_chan *ch);
static void tickets_due(struct mux *m);

static struct mux_link **
link_slot(struct mux *m, const char *key)
{
	return &m->tab[str_hash(key) % MUX_BUCKETS];
}

/* Close lk (close_notify first) and forget it. */
static void
link_free(struct mux_link *lk)
{
	struct mux_link **pp = link_slot(lk->m, lk->key);

	for (; *pp; pp = &(*pp)->next)
		if (*pp == lk) {
			*pp = lk->next;
			break;
		}
	ev_io_forget(lk->m->ev, lk->fd);	/* closed below, never duplicated */
	if (lk->c.ssl)
		SSL_shutdown(lk->c.ssl);
	conn_reset(&lk->c);
	close(lk->fd);
	lk->m->nlinks--;
	lk->m->closed++;
	free(lk->key);
	free(lk->name);
	free(lk);
}

/* Write ch's queue; close it when its last answer went out.  0 or -1 (freed). */
static int
chan_flush(struct mux_chan *ch)
{
	int r = conn_flush(&ch->c);

	if (r < 0 || (r == 1 && ch->closing)) {
		chan_free(ch);
		return -1;
	}
	ev_io_mod(ch->m->ev, ch->fd, conn_events(&ch->c));
	if (ch->held && ch->c.wq_bytes < MUX_CHAN_HIGH / 2)
		chan_resume(ch);
	return 0;
}

/* ch has output: written when this round of events is over (mux_serve). */
static void
chan_dirty(struct mux_chan *ch)
{
	if (ch->dirty)
		return;
	ch->dirty = 1;
	ch->dnext = ch->m->dirty;
	ch->m->dirty = ch;
}

/* Queue a status line to ch (as raw bytes: the answer to its first line). */
static void
chan_say(struct mux_chan *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
chan_say(struct mux_chan *ch, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatal("vasprintf");
	(void)conn_queue_frame(&ch->c, (uint8_t *)s, (size_t)n);	/* takes s */
	(void)chan_flush(ch);
}

/* Queue a message about node id to ch.  0, or -1: ch cannot take it (it
 * does not read) and is marked to go. */
static int
chan_put(struct mux_chan *ch, int type, uint32_t id, const void *p, size_t len)
{
	if (ch->closing)
		return -1;
	if (mux_put(&ch->c, type, id, p, len) < 0) {
		log_warnx("mux: a channel: %s: closed", ch->c.err);
		ch->closing = 1;
		conn_reset(&ch->c);	/* nothing more goes out: it closes after this round */
		conn_init(&ch->c, ch->fd, ch->fd, NULL);
		chan_dirty(ch);
		return -1;
	}
	if (ch->c.wq_bytes > MUX_CHAN_HIGH)
		ch->held = 1;	/* its links' input waits (link_interest) */
	chan_dirty(ch);
	return 0;
}

/* Is lk's input held: its channel does not take what it has queued? */
static int
link_held(const struct mux_link *lk)
{
	return lk->mn != NULL && lk->mn->ch->held;
}

/* lk's events to wait for: its input, unless held; its output. */
static uint32_t
link_interest(const struct mux_link *lk)
{
	return conn_events(&lk->c) & ~(link_held(lk) ? (uint32_t)EPOLLIN : 0);
}

/* A text message (FAIL, LOST, OK) about mn. */
static void
node_say(struct mux_node *mn, int type, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void
node_say(struct mux_node *mn, int type, const char *fmt, ...)
{
	char line[MUX_LINE];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	(void)chan_put(mn->ch, type, mn->id, line, (size_t)n < sizeof(line) ? (size_t)n :
	    sizeof(line) - 1);
}

/* Tell lk's node that lk went, as a direct dial would: a TLS alert before
 * the first reply is the agent refusing our certificate (TLS 1.3 judges
 * it after our side of the handshake is done), auth-failed in fanout's
 * words; anything else is "connection lost" (LOST). */
static void
link_lost(struct mux_link *lk)
{
	char why[MUX_LINE];

	if (!lk->answered && strstr(lk->c.err, "alert") != NULL) {
		node_say(lk->mn, MUX_FAIL, "%d %s", NS_AUTH_FAILED,
		    fanout_refused_why(lk->c.err, why, sizeof(why)));
		/* as a direct command forgets an auth-failed node's ticket */
		tcache_put(lk->m->ctl->tickets, lk->name, NULL, NULL, INT64_MIN);
		tickets_due(lk->m);
	} else
		node_say(lk->mn, MUX_LOST, "%s", lk->c.err);	/* knobctl: connection lost */
}

/* mn's chain head in its channel's table. */
static struct mux_node **
node_slot(struct mux_chan *ch, uint32_t id)
{
	return &ch->tab[id % MUX_NODE_BUCKETS];
}

static struct mux_node *
node_find(struct mux_chan *ch, uint32_t id)
{
	struct mux_node *mn = *node_slot(ch, id);

	while (mn && mn->id != id)
		mn = mn->hnext;
	return mn;
}

/* Count mn's requests out: one more relayed (delta 1), one answered (-1),
 * none (0).  The status's "pending" counts the nodes with some out. */
static void
node_asked(struct mux_node *mn, int delta)
{
	struct mux *m = mn->ch->m;
	unsigned was = mn->asked;

	mn->asked = delta > 0 ? was + 1 : delta < 0 && was > 0 ? was - 1 : 0;
	m->nasked += (size_t)(mn->asked && !was);
	m->nasked -= (size_t)(!mn->asked && was);
}

/* Take mn off the list of nodes waiting for a new link. */
static void
wait_remove(struct mux_node *mn)
{
	struct mux *m = mn->ch->m;

	if (!mn->waiting)
		return;
	if (mn->wprev)
		mn->wprev->wnext = mn->wnext;
	else
		m->waiting = mn->wnext;
	if (mn->wnext)
		mn->wnext->wprev = mn->wprev;
	else
		m->waiting_tail = mn->wprev;
	mn->waiting = 0;
	mn->wnext = mn->wprev = NULL;
}

/* Does another idle link go to lk's node?  Commands that overlapped on a
 * node each got a link; one idle link per node is kept, so the holder's
 * descriptors do not grow with how many commands ever overlapped. */
static int
idle_twin(const struct mux_link *lk)
{
	for (const struct mux_link *o = *link_slot(lk->m, lk->key); o; o = o->next)
		if (o != lk && o->mn == NULL && strcmp(o->key, lk->key) == 0)
			return 1;
	return 0;
}

static struct mux_node **
dial_slot(struct mux *m, const char *key)
{
	return &m->dtab[str_hash(key) % MUX_BUCKETS];
}

/* mn's dial no longer concerns it (it went, got its answer or another
 * link): off its batch and m->dtab.  The dial's link, if it comes, is
 * kept idle (dial_node_done). */
static void
dial_unlink(struct mux_node *mn)
{
	struct mux_node **pp = dial_slot(mn->ch->m, mn->key);

	if (mn->batch == NULL)
		return;
	mn->batch->v[mn->bidx] = NULL;
	mn->batch = NULL;
	while (*pp != mn)
		pp = &(*pp)->knext;
	*pp = mn->knext;
	mn->knext = NULL;
}

/* Give mn the link lk. */
static void
node_attach(struct mux_node *mn, struct mux_link *lk, const char *how)
{
	mn->link = lk;
	lk->mn = mn;
	ev_io_mod(lk->m->ev, lk->fd, link_interest(lk));
	node_say(mn, MUX_OK, "%s", how);
}

/* lk's exchange is complete: a node being dialled for its node takes it
 * at once; else it idles, unless its node has an idle link already. */
static void
link_idle(struct mux_link *lk)
{
	struct mux_node *mn = *dial_slot(lk->m, lk->key);

	lk->mn = NULL;
	ev_io_mod(lk->m->ev, lk->fd, link_interest(lk));	/* idle: its input is watched */
	while (mn && (strcmp(mn->key, lk->key) != 0 || mn->ch->closing))
		mn = mn->knext;
	if (mn != NULL) {
		dial_unlink(mn);
		lk->m->reused++;
		node_attach(mn, lk, "reused");
	} else if (idle_twin(lk))
		link_free(lk);
}

/* Forget mn; its link goes back to the idle set when keep (a complete
 * exchange), else it closes. */
static void
node_free(struct mux_node *mn, int keep)
{
	struct mux_node **pp = node_slot(mn->ch, mn->id);

	while (*pp != mn)
		pp = &(*pp)->hnext;
	*pp = mn->hnext;
	wait_remove(mn);
	dial_unlink(mn);
	node_asked(mn, 0);
	if (mn->link && keep)
		link_idle(mn->link);
	else if (mn->link)
		link_free(mn->link);
	mn->ch->m->nnodes--;
	free(mn->name);
	free(mn->addr);
	free(mn->key);
	free(mn);
}

/* Write lk's queue; a dead link is lost to its node.  0 or -1 (freed). */
static int
link_flush(struct mux_link *lk)
{
	if (conn_flush(&lk->c) < 0) {
		if (lk->mn) {
			link_lost(lk);
			node_free(lk->mn, 0);	/* and lk with it */
		} else
			link_free(lk);
		return -1;
	}
	ev_io_mod(lk->m->ev, lk->fd, link_interest(lk));
	return 0;
}

/* Is idle lk still up: no end of stream, nothing unread? */
static int
link_alive(struct mux_link *lk)
{
	char b;
	ssize_t r = recv(lk->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && SSL_pending(lk->c.ssl) == 0;
}

/* Has a certificate lk was authenticated with expired since: the agent's
 * or ours?  A direct dial would be refused now, so the link may carry
 * nothing more.  The sentence that dial would end with (as "STATUS
 * TEXT", a FAIL's payload) into why; 0 when both are still valid. */
static int
link_expired(const struct mux_link *lk, char *why, size_t len)
{
	int64_t now = (int64_t)time(NULL);
	char text[256];

	if (now > lk->m->not_after)	/* the agent's alert, in fanout's words */
		snprintf(why, len, "%d %s", NS_AUTH_FAILED,
		    fanout_refused_why("alert certificate expired", text, sizeof(text)));
	else if (now > lk->not_after)
		snprintf(why, len, "%d agent certificate rejected: %s", NS_AUTH_FAILED,
		    X509_verify_cert_error_string(X509_V_ERR_CERT_HAS_EXPIRED));
	else
		return 0;
	return 1;
}

/* Nodes being dialled whose command is still there. */
static size_t
dialling(const struct mux *m)
{
	size_t n = 0;

	for (const struct dial_batch *b = m->dials; b; b = b->next)
		for (size_t i = 0; i < b->fo.n; i++)
			n += b->v[i] != NULL;
	return n;
}

/* Out of descriptors (EMFILE, ENFILE), as the last call said? */
static int
errno_nofile(void)
{
	return errno == EMFILE || errno == ENFILE;
}

/* Our trust id now, into now: 0 as when we started, 1 changed, -1 not
 * known (out of descriptors: the hash counts a file it cannot open as
 * absent, so a holder at its limit took itself for revoked and exited). */
static int
trust_now(struct mux *m, char now[65])
{
	const char *ca = m->ctl->ca ? m->ctl->ca : m->ctl->inv->ca;
	int fd = -1;

	if (ctl_trust_id(m->ctl, now) == 0 && strcmp(now, m->trust) == 0)
		return 0;
	if (ca != NULL && (fd = open(ca, O_RDONLY | O_CLOEXEC)) < 0 && errno_nofile())
		return -1;
	if (fd >= 0)
		close(fd);
	return 1;
}

/* "trust ID": does knobctl trust what we do (ok, and we multiplex:
 * "chan"), another CA, CRL or certificate (other)?  When ours changed
 * since we started (stale), our links no longer descend from what we
 * would verify now: we go.  Out of descriptors we cannot tell ("error"):
 * that command dials itself, and we go on. */
static void
chan_trust(struct mux_chan *ch, const char *id)
{
	struct mux *m = ch->m;
	char now[65];
	int t;

	ch->closing = 1;
	if ((t = trust_now(m, now)) < 0) {
		log_warnx("mux: out of file descriptors (%d links, %zu channels): cannot read the "
		    "CA to answer a command; it dials the nodes itself", (int)m->nlinks, m->nchan);
		chan_say(ch, "error out of file descriptors\n");
		return;
	}
	if (t > 0) {
		log_warnx("mux: the CA, its CRL or the controller certificate changed: "
		    "closing every link");
		m->stop = m->stale = 1;
		chan_say(ch, "stale\n");
		return;
	}
	chan_say(ch, strcmp(id, now) == 0 ? "ok chan\n" : "other\n");
}

/* The largest queue of a channel for its knobctl (bytes); how many
 * channels have their links' input held (*held). */
static size_t
chan_queued(const struct mux *m, size_t *held)
{
	size_t most = 0;

	*held = 0;
	for (const struct mux_chan *ch = m->chans; ch; ch = ch->cnext) {
		most = ch->c.wq_bytes > most ? ch->c.wq_bytes : most;
		*held += (size_t)ch->held;
	}
	return most;
}

/* Answer "status": the holder's links and counters. */
static void
chan_status(struct mux_chan *ch)
{
	struct mux *m = ch->m;
	size_t held, most = chan_queued(m, &held);

	chan_say(ch, "links %zu channels %zu nodes %zu pending %zu opened %llu reused %llu "
	    "closed %llu queued %zu held %zu dialling %zu\n", m->nlinks, m->nchan - 1, m->nnodes,
	    m->nasked, m->opened, m->reused, m->closed, most, held, dialling(m));
}

/* The first line: "chan" (a command's nodes follow), "status", "trust ID"
 * or "stop". */
static void
chan_header(struct mux_chan *ch, char *line)
{
	struct mux *m = ch->m;

	if (strcmp(line, "chan") == 0) {
		ch->state = CH_NODES;
		ch->tab = xcalloc(MUX_NODE_BUCKETS, sizeof(*ch->tab));
		ch->c.ra = MUX_READ;
		ch->c.wq_max = MUX_QUEUE;
		return;
	}
	ch->closing = 1;
	if (strcmp(line, "status") == 0)
		chan_status(ch);
	else if (strncmp(line, "trust ", 6) == 0)
		chan_trust(ch, line + 6);
	else if (strcmp(line, "stop") == 0) {
		chan_say(ch, "stopping\n");
		m->stop = 1;
	} else {
		log_warnx("mux: malformed request \"%.60s\"", line);
		chan_free(ch);
	}
}

/* Read ch's first line into ch->hdr, and not a byte past it (a command's
 * messages follow it at once).  A part without its newline is taken out
 * of the socket too: left there, it would keep the socket readable and
 * the loop spinning until the rest came. */
static void
chan_read_header(struct mux_chan *ch)
{
	char *buf = ch->hdr + ch->hlen, *nl;
	ssize_t r = recv(ch->fd, buf, sizeof(ch->hdr) - 1 - ch->hlen, MSG_PEEK), n;

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		chan_free(ch);
		return;
	}
	nl = memchr(buf, '\n', (size_t)r);
	n = nl ? nl - buf + 1 : r;
	if (read(ch->fd, buf, (size_t)n) != n) {
		chan_free(ch);
		return;
	}
	ch->hlen += (size_t)n;
	if (nl == NULL) {
		if (ch->hlen == sizeof(ch->hdr) - 1)
			chan_free(ch);	/* too long for a first line */
		return;		/* the rest of the line is on its way */
	}
	*nl = '\0';
	fresh_remove(ch);
	chan_header(ch, ch->hdr);
}

/* Give mn an idle link to its node if there is one that is still up and
 * whose certificates are still valid (an expired one closes: the new dial
 * is refused as a direct one is).  1 when it got one. */
static int
take_idle(struct mux_node *mn)
{
	struct mux *m = mn->ch->m;
	struct mux_link *lk;
	char why[MUX_LINE];

	if (mn->ch->closing)	/* its links go with it */
		return 0;
	for (lk = *link_slot(m, mn->key); lk; lk = lk->next)
		if (lk->mn == NULL && strcmp(lk->key, mn->key) == 0)
			break;
	if (lk && (!link_alive(lk) || link_expired(lk, why, sizeof(why)))) {
		link_free(lk);	/* a new dial says why, as a direct one would */
		lk = NULL;
	}
	if (lk == NULL)
		return 0;
	m->reused++;
	node_attach(mn, lk, "reused");
	return 1;
}

/* OPEN "NAME ADDR PORT CTIMEOUT" for id: an idle link now, or a new one
 * dialled after this round.  0, or -1 (malformed, or id in use). */
static int
node_open(struct mux_chan *ch, uint32_t id, const uint8_t *p, size_t len)
{
	struct mux *m = ch->m;
	char line[MUX_LINE], name[256], addr[256];
	struct mux_node *mn;
	int port;
	double ct;

	if (len >= sizeof(line) || node_find(ch, id) != NULL)
		return -1;
	memcpy(line, p, len);
	line[len] = '\0';
	if (sscanf(line, "%255s %255s %d %lf", name, addr, &port, &ct) != 4 || port <= 0 ||
	    port > 65535 || !(ct >= OPT_SECONDS_MIN && ct <= OPT_SECONDS_MAX))
		return -1;
	mn = xcalloc(1, sizeof(*mn));
	mn->ch = ch;
	mn->id = id;
	mn->name = xstrdup(name);
	mn->addr = xstrdup(addr);
	mn->port = port;
	mn->ctimeout = ct;
	mn->t_open = now_mono_ns();
	mn->key = xasprintf("%s %s %d", name, addr, port);
	mn->hnext = *node_slot(ch, id);
	*node_slot(ch, id) = mn;
	m->nnodes++;
	if (take_idle(mn))
		return 0;
	mn->waiting = 1;	/* dialled after this round of events (mux_serve) */
	mn->wprev = m->waiting_tail;
	if (m->waiting_tail)
		m->waiting_tail->wnext = mn;
	else
		m->waiting = mn;
	m->waiting_tail = mn;
	return 0;
}

/* FRAME for mn: to the node as it came (unpacked only to be checked),
 * unless a certificate its link stands on has expired since (then mn
 * fails as a direct dial would, and the link closes).  0, or -1
 * (malformed, or before the node's OK). */
static int
node_relay(struct mux_node *mn, const uint8_t *p, size_t len)
{
	struct mux_link *lk = mn->link;
	Knob__Envelope *env;
	char err[256], why[MUX_LINE];

	if (lk == NULL || (env = frame_unpack(p, len, err, sizeof(err))) == NULL)
		return -1;
	knob__envelope__free_unpacked(env, NULL);
	if (link_expired(lk, why, sizeof(why))) {
		node_say(mn, MUX_FAIL, "%s", why);
		node_free(mn, 0);
		return 0;
	}
	if (conn_queue_tagged(&lk->c, NULL, 0, p, len) < 0) {
		node_say(mn, MUX_LOST, "%s", lk->c.err);
		node_free(mn, 0);
		return 0;
	}
	node_asked(mn, 1);
	(void)link_flush(lk);	/* a dead link is LOST to knobctl */
	return 0;
}

/* One message from knobctl.  0, or -1 when it breaks the protocol (the
 * channel closes, and with it every link it had busy). */
static int
chan_message(struct mux_chan *ch, const uint8_t *body, size_t len)
{
	const uint8_t *p;
	struct mux_node *mn;
	size_t plen;
	uint32_t id;
	int type;

	if (mux_split(body, len, &type, &id, &p, &plen) < 0)
		return -1;
	if (type == MUX_OPEN)
		return node_open(ch, id, p, plen);
	if (type != MUX_FRAME && type != MUX_DONE && type != MUX_ABORT)
		return -1;
	if ((mn = node_find(ch, id)) == NULL)
		return 0;	/* failed or lost here meanwhile: knobctl is being told */
	if (type == MUX_FRAME)
		return node_relay(mn, p, plen);
	/* complete: nothing of ours is unsent or unanswered (a DONE with a
	 * request out, its reply still on its way, would hand that reply to
	 * the next command that took the link) */
	node_free(mn, type == MUX_DONE && mn->link && mn->asked == 0 &&
	    mn->link->c.wq_head == NULL && mn->link->c.hdr_have == 0);
	return 0;
}

/* Every message knobctl sent; a malformed one closes the channel. */
static void
chan_input(struct mux_chan *ch)
{
	uint8_t *body;
	size_t len;
	int r;

	while ((r = conn_recv_body(&ch->c, &body, &len)) > 0) {
		int bad = chan_message(ch, body, len);

		free(body);
		if (bad < 0) {
			log_warnx("mux: a malformed message: channel closed");
			chan_free(ch);
			return;
		}
	}
	if (r < 0)
		chan_free(ch);	/* knobctl went: the links it had busy go too */
}

static void
chan_event(int fd, uint32_t events, void *arg)
{
	struct mux_chan *ch = arg;

	(void)fd;
	if ((events & EPOLLOUT) && chan_flush(ch) < 0)
		return;
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	if (ch->state == CH_HEADER)
		chan_read_header(ch);
	else if (!ch->closing)
		chan_input(ch);
	else
		chan_free(ch);	/* its queue was refused: nothing more is served */
}

static void
idle_timeout(void *arg)
{
	struct mux *m = arg;

	if (m->nchan == 0) {
		log_info("mux: %.0f s without a command: exiting", m->persist);
		m->stop = 1;
	}
}

/* (Re)start the idle clock, unless the holder persists until told to stop. */
static void
idle_arm(struct mux *m)
{
	if (m->persist > 0)
		ev_timer_set(m->ev, &m->idle_t, (uint64_t)(m->persist * 1e9), idle_timeout, m);
}

static void
chan_free(struct mux_chan *ch)
{
	struct mux *m = ch->m;

	fresh_remove(ch);
	for (size_t b = 0; ch->tab && b < MUX_NODE_BUCKETS; b++)
		while (ch->tab[b])
			node_free(ch->tab[b], 0);
	for (struct mux_chan **pp = &m->dirty; ch->dirty && *pp; pp = &(*pp)->dnext)
		if (*pp == ch) {
			*pp = ch->dnext;
			break;
		}
	if (ch->cprev)
		ch->cprev->cnext = ch->cnext;
	else
		m->chans = ch->cnext;
	if (ch->cnext)
		ch->cnext->cprev = ch->cprev;
	ev_io_forget(m->ev, ch->fd);	/* closed below, never duplicated */
	conn_reset(&ch->c);
	close(ch->fd);
	free(ch->tab);
	free(ch);
	if (--m->nchan == 0)
		idle_arm(m);
}

/* Write what this round of events queued for each channel. */
static void
flush_dirty(struct mux *m)
{
	struct mux_chan *ch;

	while ((ch = m->dirty) != NULL) {
		m->dirty = ch->dnext;
		ch->dirty = 0;
		(void)chan_flush(ch);
	}
}

/* Dialling: the fan-out hands each connection over as soon as it is open
 * (dial_end passes it on, or frees lk when the hand-over failed). */
static int
dial_open(struct fanout *fo, struct fo_node *n)
{
	struct mux_link *lk = xcalloc(1, sizeof(*lk));

	n->user = lk;
	lk->not_after = n->not_after;	/* INT64_MIN (unknown): not trusted */
	return fanout_detach(fo, n, &lk->fd, &lk->c);
}

static int
dial_msg(struct fanout *fo, struct fo_node *n, Knob__Envelope *msg)
{
	(void)fo;
	(void)n;
	knob__envelope__free_unpacked(msg, NULL);
	return 1;
}

/* On a dialling thread: tell the loop that node i's dial ended (status,
 * a copy of detail, the link lk when it is up), or (i == SIZE_MAX) that
 * b's run is over. */
static void
dial_post(struct dial_batch *b, size_t i, int status, const char *detail, struct mux_link *lk)
{
	struct mux *m = b->m;
	struct dial_done *d = xcalloc(1, sizeof(*d));
	uint64_t one = 1;

	d->b = b;
	d->i = i;
	d->status = status;
	d->detail = detail ? xstrdup(detail) : NULL;
	d->lk = lk;
	pthread_mutex_lock(&m->done_mu);
	*m->done_tail = d;
	m->done_tail = &d->next;
	pthread_mutex_unlock(&m->done_mu);
	if (b->threaded && write(m->dial_efd, &one, sizeof(one)) < 0)
		log_warn("mux: eventfd");
}

/* A node's dial ended (open and handed over, or failed): the loop hears
 * of it now, not when the batch's slowest node is done. */
static void
dial_end(struct fanout *fo, struct fo_node *n)
{
	struct mux_link *lk = n->user;

	n->user = NULL;
	if (n->status != NS_OK) {
		free(lk);	/* never filled: the hand-over failed, or no open */
		lk = NULL;
	}
	dial_post(fo->user, n->idx, n->status, n->detail, lk);
}

/* Hand the links' tickets to the saver (a copy: the loop never waits on
 * the cache's lock or its disk). */
static void
tickets_save(void *arg)
{
	struct mux *m = arg;

	tcache_saver_hand(m->saver, m->ctl->tickets);
}

/* A ticket is waiting to be saved: the save is due in MUX_TICKETS_NS. */
static void
tickets_due(struct mux *m)
{
	if (!m->tickets_t.armed)
		ev_timer_set(m->ev, &m->tickets_t, MUX_TICKETS_NS, tickets_save, m);
}

/* The agent of lk sent a ticket (after the handshake, so after the dial
 * handed lk over): kept for lk's node, pinned to the name the dial
 * verified or resumed for, with the notAfter the link knows. */
static void
link_ticket(struct fo_sink *sink, SSL_SESSION *sess)
{
	struct mux_link *lk = (struct mux_link *)((char *)sink - offsetof(struct mux_link, sink));

	tcache_put(lk->m->ctl->tickets, lk->name, sess, lk->name, lk->not_after);
	SSL_SESSION_free(sess);
	tickets_due(lk->m);
}

/* Keep lk, just dialled for key, among the holder's links. 0, or -1
 * (freed). */
static int
link_adopt(struct mux *m, struct mux_link *lk, const char *key)
{
	struct mux_link **slot;

	lk->m = m;
	lk->key = xstrdup(key);
	lk->name = xstrdup(key);
	lk->name[strcspn(lk->name, " ")] = '\0';
	lk->sink.fn = link_ticket;
	fanout_set_sink(lk->c.ssl, &lk->sink);
	/* an idle link to a node that died without a word goes within ~90 s */
	(void)sock_keepalive(lk->fd, 60, 10, 3);
	slot = link_slot(m, lk->key);
	lk->next = *slot;
	*slot = lk;
	m->nlinks++;
	m->opened++;
	if (ev_io_add(m->ev, lk->fd, EPOLLIN, link_event, lk) < 0) {
		link_free(lk);
		return -1;
	}
	return 0;
}

/* A new link lk for mn, or the reason its dial failed (status, detail;
 * a dial out of descriptors is the holder's limit, not the node's). */
static void
dial_result(struct mux *m, struct mux_node *mn, int status, const char *detail,
    struct mux_link *lk)
{
	if (lk == NULL || status != NS_OK) {
		int nofile = detail && (strstr(detail, strerror(EMFILE)) ||
		    strstr(detail, strerror(ENFILE)));

		node_say(mn, MUX_FAIL, "%d %s%s", status ? status : NS_FAILED, nofile ?
		    "connection holder out of file descriptors (raise its ulimit -n): " : "",
		    detail ? detail : "failed");
		node_free(mn, 0);
		return;
	}
	if (link_adopt(m, lk, mn->key) < 0) {
		node_say(mn, MUX_FAIL, "%d cannot watch the connection", NS_FAILED);
		node_free(mn, 0);
		return;
	}
	node_attach(mn, lk, "new");
}

/* The batch's own ticket cache (the threads' runs may not share one: a
 * run's end rewrites it), bound to what the holder trusts; none when that
 * moved since it started (the holder is stale at the next command's
 * question, and no ticket of this dial is saved as of the new files). */
static struct tcache *
dial_tickets(struct dial_batch *b)
{
	struct ctl *c = &b->ctl;
	struct tcache *tc = tcache_open(c, c->ca ? c->ca : c->inv->ca,
	    c->cert ? c->cert : c->inv->cert);
	char now[65];

	if (ctl_trust_id(c, now) == 0 && strcmp(now, b->m->trust) == 0)
		return tc;
	tcache_free(tc);
	return NULL;
}

/* The dialling thread: the fan-out (each node posted as it ends), then a
 * word that the run is over. */
static void *
dial_thread(void *arg)
{
	static const struct fo_ops ops = { .on_open = dial_open, .on_msg = dial_msg,
	    .on_end = dial_end, .per_node = 1 };
	struct dial_batch *b = arg;

	b->ctl.tickets = dial_tickets(b);
	if (fanout_run(&b->fo, &ops, b) < 0)	/* the nodes it ended were posted */
		for (size_t i = 0; i < b->fo.n; i++)
			fanout_end(&b->fo, &b->fo.nodes[i], NS_FAILED, "cannot dial");
	tcache_free(b->ctl.tickets);
	b->ctl.tickets = NULL;
	dial_post(b, SIZE_MAX, 0, NULL, NULL);
	return NULL;
}

/* Node d->i's dial is over: its node, if it still waits for it, gets the
 * link or the failure; else a link is kept idle (or handed on). */
static void
dial_node_done(struct mux *m, struct dial_done *d)
{
	struct dial_batch *b = d->b;
	struct mux_node *mn = b->v[d->i];

	m->inflight--;
	if (mn != NULL) {
		dial_unlink(mn);
		dial_result(m, mn, d->status, d->detail, d->lk);
	} else if (d->lk != NULL && link_adopt(m, d->lk, b->keys[d->i]) == 0)
		link_idle(d->lk);
}

/* b's run is over (every node posted before): join its thread, free it. */
static void
dial_finish(struct mux *m, struct dial_batch *b)
{
	struct dial_batch **pp = &m->dials;

	if (b->threaded)
		pthread_join(b->th, NULL);
	while (*pp != b)	/* MUX_DIALS at most */
		pp = &(*pp)->next;
	*pp = b->next;
	m->ndials--;
	for (size_t i = 0; i < b->fo.n; i++) {
		free(b->keys[i]);
		free(b->addrs[i]);
	}
	fanout_free(&b->fo);
	free(b->v);
	free(b->keys);
	free(b->addrs);
	free(b);
	/* the batch's thread arena held its ticket cache and handshakes: give
	 * what is free back, or a first dial of 10,000 nodes keeps its peak */
	malloc_trim(0);
}

/* What the dialling threads posted, in order: nodes' ends, runs' ends. */
static void
dial_drain(struct mux *m)
{
	struct dial_done *d, *next;

	pthread_mutex_lock(&m->done_mu);
	d = m->done;
	m->done = NULL;
	m->done_tail = &m->done;
	pthread_mutex_unlock(&m->done_mu);
	for (; d != NULL; d = next) {
		next = d->next;
		if (d->i == SIZE_MAX)
			dial_finish(m, d->b);
		else
			dial_node_done(m, d);
		free(d->detail);
		free(d);
	}
}

/* A dialling thread posted (its eventfd). */
static void
dial_event(int fd, uint32_t events, void *arg)
{
	uint64_t v;

	(void)events;
	if (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		dial_drain(arg);
}

/* Waiting nodes take links that went idle since they began to wait
 * (another command's DONE, a link kept from a dial whose command went). */
static void
waiting_take_idle(struct mux *m)
{
	struct mux_node *mn, *next;

	for (mn = m->waiting; mn; mn = next) {
		next = mn->wnext;
		if (take_idle(mn))
			wait_remove(mn);
	}
}

/* How many more nodes may be dialled now: --fanout N bounds the nodes in
 * flight over every batch; MUX_DIALS the batches. */
static size_t
dial_room(const struct mux *m)
{
	size_t cap = m->ctl->fanout > 0 ? (size_t)m->ctl->fanout : SIZE_MAX;

	if (m->ndials >= MUX_DIALS || m->inflight >= cap)
		return 0;
	return cap - m->inflight;
}

/* Waiting node mn becomes b's node i (b->fo.nodes[i], named after it). */
static void
batch_take(struct dial_batch *b, size_t i, struct mux_node *mn)
{
	struct mux_node **slot = dial_slot(b->m, mn->key);

	wait_remove(mn);
	mn->batch = b;
	mn->bidx = i;
	mn->knext = *slot;
	*slot = mn;
	b->v[i] = mn;
	b->keys[i] = xstrdup(mn->key);
	b->addrs[i] = xstrdup(mn->addr);
	b->fo.nodes[i].addr = b->addrs[i];	/* the caller's inventory */
	b->fo.nodes[i].port = mn->port;
}

/* A batch of the oldest waiting nodes that asked for the oldest one's
 * connect timeout, at most room of them; they leave m->waiting.  One
 * timeout a batch: its name lookups take up to it before any node is
 * dialled, and a command's nodes must not wait for another's longer one
 * (its knobctl gives up after twice its own). */
static struct dial_batch *
batch_new(struct mux *m, size_t room)
{
	struct dial_batch *b = xcalloc(1, sizeof(*b));
	struct strvec names = { 0 };
	struct mux_node *mn, *next;
	double ct = m->waiting->ctimeout;
	size_t i = 0;

	b->m = m;
	b->ctl = *m->ctl;	/* shared read-only: inventory, SSL_CTX */
	b->ctl.tickets = NULL;	/* its own, opened on its thread */
	b->ctl.connect_timeout = ct;
	for (mn = m->waiting; mn && names.n < room; mn = mn->wnext)
		if (mn->ctimeout == ct)
			strvec_push(&names, mn->name);
	b->v = xcalloc(names.n, sizeof(*b->v));
	b->keys = xcalloc(names.n, sizeof(*b->keys));
	b->addrs = xcalloc(names.n, sizeof(*b->addrs));
	fanout_init(&b->fo, &b->ctl, &names);	/* copies the names */
	strvec_free(&names);
	for (mn = m->waiting; i < b->fo.n; mn = next) {
		next = mn->wnext;
		if (mn->ctimeout == ct)
			batch_take(b, i++, mn);
	}
	m->inflight += b->fo.n;
	return b;
}

/* Nodes that waited for a dial (dial_room: MUX_DIALS batches out to dead
 * nodes or slow names, or the holder's --fanout N taken) as long as their
 * command waits for a verdict (twice its connect timeout: mux_start in
 * fo_mux.c, which adds a second) are unreachable, and told why; else
 * knobctl said "TLS handshake timed out" of a handshake never begun. */
static void
wait_expire(void *arg)
{
	struct mux *m = arg;
	uint64_t now = now_mono_ns();
	struct mux_node *mn, *next;
	char why[64];

	if (dial_room(m) > 0)
		return;		/* a dial ended this round: they are dialled after it */
	if (m->ndials >= MUX_DIALS)
		snprintf(why, sizeof(why), "its %d dials are out: dead nodes or slow names",
		    MUX_DIALS);
	else
		snprintf(why, sizeof(why), "its --fanout %d nodes are in flight", m->ctl->fanout);
	for (mn = m->waiting; mn; mn = next) {
		next = mn->wnext;
		if (now - mn->t_open < (uint64_t)(2 * mn->ctimeout * 1e9))
			continue;
		node_say(mn, MUX_FAIL, "%d connection holder: no dial free within %.1fs (%s)",
		    NS_UNREACHABLE, 2 * mn->ctimeout, why);
		node_free(mn, 0);
	}
	wait_arm(m);
}

/* Nodes are left waiting for room to dial: look at them until none is. */
static void
wait_arm(struct mux *m)
{
	if (m->waiting && !m->wait_t.armed)
		ev_timer_set(m->ev, &m->wait_t, MUX_WAIT_TICK_NS, wait_expire, m);
}

/* Dial the waiting nodes now, as far as dial_room lets, a batch for each
 * connect timeout asked for, each on a thread of its own (at once, in the
 * loop, when no thread can be made). */
static void
dial_waiting(struct mux *m)
{
	struct dial_batch *b;
	size_t room;

	while (m->waiting != NULL && (room = dial_room(m)) > 0) {
		b = batch_new(m, room);
		b->next = m->dials;
		m->dials = b;
		m->ndials++;
		b->threaded = m->dial_efd >= 0;	/* read by the thread: set before it starts */
		if (b->threaded && pthread_create(&b->th, NULL, dial_thread, b) != 0)
			b->threaded = 0;
		if (!b->threaded) {
			dial_thread(b);
			dial_drain(m);
		}
	}
}

/* The node's frames go to its channel as they came (knobctl checks
 * them); on an idle link anything ends it. */
static void
link_event(int fd, uint32_t events, void *arg)
{
	struct mux_link *lk = arg;
	uint8_t *body;
	size_t len;
	int r = 0, gone = (events & (EPOLLHUP | EPOLLERR)) != 0;

	(void)fd;
	if ((events & EPOLLOUT) && link_flush(lk) < 0)
		return;
	/* held: the rest waits in TCP (a dead link is read to its end) */
	while ((gone || !link_held(lk)) && (r = conn_recv_body(&lk->c, &body, &len)) > 0) {
		struct mux_node *mn = lk->mn;

		if (mn == NULL || len + MUX_TAG > FRAME_MAX) {
			free(body);
			if (mn) {
				node_say(mn, MUX_LOST, "a reply of %zu bytes is too large to relay", len);
				node_free(mn, 0);
			} else
				link_free(lk);
			return;
		}
		node_asked(mn, -1);
		lk->answered = 1;
		r = chan_put(mn->ch, MUX_FRAME, mn->id, body, len);
		free(body);
		if (r < 0)
			return;
	}
	if (r < 0) {
		if (lk->mn) {
			link_lost(lk);
			node_free(lk->mn, 0);
		} else
			link_free(lk);
		return;
	}
	ev_io_mod(lk->m->ev, lk->fd, link_interest(lk));
}

/* ch drained below half its bound: its links are read again, from what
 * they had buffered on.  A link may go meanwhile (its node only). */
static void
chan_resume(struct mux_chan *ch)
{
	struct mux_node *mn, *next;

	ch->held = 0;
	for (size_t b = 0; b < MUX_NODE_BUCKETS; b++)
		for (mn = ch->tab[b]; mn; mn = next) {
			next = mn->hnext;
			if (mn->link && !ch->held)
				link_event(mn->link->fd, 0, mn->link);
			else if (mn->link)
				ev_io_mod(ch->m->ev, mn->link->fd, link_interest(mn->link));
		}
}

/* Take ch off the list of channels that have not sent their first line. */
static void
fresh_remove(struct mux_chan *ch)
{
	struct mux *m = ch->m;

	if (ch->fprev == NULL && m->fresh != ch)
		return;
	if (ch->fprev)
		ch->fprev->fnext = ch->fnext;
	else
		m->fresh = ch->fnext;
	if (ch->fnext)
		ch->fnext->fprev = ch->fprev;
	else
		m->fresh_tail = ch->fprev;
	ch->fnext = ch->fprev = NULL;
}

/* How long a channel may take to send its first line: MUX_HEADER_MS, or
 * for tests only $KNOB_TEST_MUX_HEADER_MS (100 to MUX_HEADER_MS), so that
 * a test of the sweep need not wait out the 10 s. */
static uint64_t
mux_header_ns(void)
{
	return (uint64_t)env_number("KNOB_TEST_MUX_HEADER_MS", 100, MUX_HEADER_MS,
	    MUX_HEADER_MS) * 1000000ull;
}

/* How long the holder waits at exit for its last ticket save:
 * MUX_SAVE_EXIT_S, or for tests only $KNOB_TEST_MUX_SAVE_EXIT_S (1 to
 * MUX_SAVE_EXIT_S), so that a test of a save that never ends need not
 * wait out the 10 s. */
static int
mux_save_exit_s(void)
{
	return (int)env_number("KNOB_TEST_MUX_SAVE_EXIT_S", 1, MUX_SAVE_EXIT_S,
	    MUX_SAVE_EXIT_S);
}

/* Close the channels that sent no first line within m->header_ns (one
 * timer for all of them: they are in accept order). */
static void
sweep_silent(void *arg)
{
	struct mux *m = arg;
	uint64_t now = now_mono_ns();

	while (m->fresh && now - m->fresh->t_accept >= m->header_ns) {
		log_info("mux: a channel sent no request within %.1f s: closed",
		    m->header_ns / 1e9);
		chan_free(m->fresh);
	}
	if (m->fresh)
		ev_timer_set(m->ev, &m->sweep_t, m->fresh->t_accept + m->header_ns - now,
		    sweep_silent, m);
}

/* ch waits for its first line: last on the list, the sweep armed. */
static void
fresh_add(struct mux *m, struct mux_chan *ch)
{
	ch->t_accept = now_mono_ns();
	ch->fprev = m->fresh_tail;
	if (m->fresh_tail)
		m->fresh_tail->fnext = ch;
	else
		m->fresh = ch;
	m->fresh_tail = ch;
	if (!m->sweep_t.armed)
		ev_timer_set(m->ev, &m->sweep_t, m->header_ns, sweep_silent, m);
}

/* Out of descriptors: refuse the waiting connection (accept_refuse_one),
 * so that it does not keep the loop spinning: that knobctl sees the holder
 * go and dials the nodes itself. */
static void
refuse_one(struct mux *m, int lfd)
{
	if (accept_refuse_one(lfd) <= 0)
		return;
	log_warnx("mux: out of file descriptors (%d links, %zu channels): refused a command; "
	    "it dials the nodes itself", (int)m->nlinks, m->nchan);
}

/* New channels: only from our own uid. */
static void
listen_event(int fd, uint32_t events, void *arg)
{
	struct mux *m = arg;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	int c;

	(void)events;
	while ((c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct mux_chan *ch;

		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != m->uid) {
			log_warnx("mux: refused a connection from uid %d", (int)cr.uid);
			close(c);
			continue;
		}
		ch = xcalloc(1, sizeof(*ch));
		ch->m = m;
		ch->fd = c;
		conn_init(&ch->c, c, c, NULL);
		if (ev_io_add(m->ev, c, EPOLLIN, chan_event, ch) < 0) {
			close(c);
			free(ch);
			continue;
		}
		m->nchan++;
		ch->cnext = m->chans;
		if (m->chans)
			m->chans->cprev = ch;
		m->chans = ch;
		ev_timer_del(m->ev, &m->idle_t);
		fresh_add(m, ch);
	}
	if (errno_nofile())
		refuse_one(m, fd);
}

static void
signal_event(int fd, uint32_t events, void *arg)
{
	struct signalfd_siginfo si;

	(void)events;
	if (read(fd, &si, sizeof(si)) == sizeof(si))
		((struct mux *)arg)->stop = 1;
}

/* Take the holder's lock (MUX_LOCK beside the socket, our pid in it) for
 * as long as we run: a second holder is refused at once, even beside one
 * that is stopped and does not answer (it used to take the socket over
 * after --connect-timeout, and the first one's exit then removed the
 * second's socket: a holder running that no command could reach).  The
 * kernel drops the lock when we die, so a killed holder's socket is
 * taken over. */
static int
mux_lock(struct mux *m)
{
	char path[PATH_MAX], pid[32] = "";
	ssize_t n;
	int fd;

	results_side_path(m->ctl, MUX_LOCK, path, sizeof(path));
	results_mkparent(path);
	if ((fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
		fprintf(stderr, "knobctl mux: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if ((n = pread(fd, pid, sizeof(pid) - 1, 0)) > 0)
			pid[strcspn(pid, "\n")] = '\0';
		fprintf(stderr, "knobctl mux: a holder already runs on %s (pid %s, holding %s)\n",
		    m->path, pid[0] ? pid : "?", path);
		close(fd);
		return -1;
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, strlen(pid), 0) < 0)
		log_warn("mux: %s", path);	/* the lock holds all the same */
	m->lockfd = fd;
	return 0;
}

/* Bind the holder's socket (0600), unless a holder already answers there
 * (one of an older knobctl, which takes no lock). */
static int
mux_listen(struct mux *m)
{
	struct sockaddr_un sa;
	char ans[MUX_LINE];
	mode_t old;
	int fd;

	if (mux_sockaddr(m->path, &sa) < 0) {
		fprintf(stderr, "knobctl mux: %s: path too long for a socket\n", m->path);
		return -1;
	}
	if (mux_query(m->ctl, "status\n", ans, sizeof(ans)) == 0) {
		fprintf(stderr, "knobctl mux: a holder already listens on %s (%s)\n", m->path, ans);
		return -1;
	}
	results_mkparent(m->path);
	unlink(m->path);	/* a dead holder's */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	old = umask(077);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4096) < 0) {
		umask(old);
		fprintf(stderr, "knobctl mux: %s: %s\n", m->path, strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	chmod(m->path, 0600);	/* connecting needs write permission: ours only */
	m->lfd = fd;
	return 0;
}

/* Send a one-line command to the running holder and print its answer. */
static int
mux_tell(struct ctl *ctl, const char *what)
{
	char path[PATH_MAX], ans[MUX_LINE];

	mux_socket_path(ctl, path, sizeof(path));
	if (!mux_usable(ctl) || mux_query(ctl, what, ans, sizeof(ans)) < 0) {
		fprintf(stderr, "knobctl mux: no holder of ours answers on %s\n", path);
		return 1;
	}
	fprintf(ctl->out, "%s\n", ans);
	return 0;
}

/* Close every link (close_notify) and channel, remove the socket. */
static void
mux_close_all(struct mux *m)
{
	while (m->chans)
		chan_free(m->chans);
	for (size_t b = 0; b < MUX_BUCKETS; b++)
		while (m->tab[b])
			link_free(m->tab[b]);	/* idle: the channels took theirs */
	if (m->path[0])
		unlink(m->path);
	if (m->lfd >= 0)
		close(m->lfd);
	if (m->sfd >= 0)
		close(m->sfd);
	if (m->dial_efd >= 0)
		close(m->dial_efd);
	ev_base_free(m->ev);
}

/* Stopping with dials out: the socket and the listener go at once (new
 * commands dial themselves, and a new holder's socket is not ours), each
 * run is told to stop (its loop, or its wait for name lookups, sees it
 * within a tenth of a second; a lookup still running is abandoned), and
 * we wait for their threads. */
static void
dial_stop_all(struct mux *m)
{
	unlink(m->path);
	m->path[0] = '\0';
	ev_io_del(m->ev, m->lfd);
	close(m->lfd);		/* those queued to connect too */
	m->lfd = -1;
	for (struct dial_batch *b = m->dials; b; b = b->next)
		__atomic_store_n(&b->fo.stop, 1, __ATOMIC_RELAXED);	/* read by its loop */
	while (m->dials != NULL) {
		struct pollfd p = { .fd = m->dial_efd, .events = POLLIN };
		uint64_t v;

		if (poll(&p, 1, 1000) > 0 && read(m->dial_efd, &v, sizeof(v)) < 0)
			log_warn("mux: eventfd");
		dial_drain(m);
	}
}

/* Run the holder until it is told to stop or stays unused (0), or its
 * trust changed or its event loop failed (1); 1 also when at exit its
 * last ticket save did not end in time or failed (tickets lost). */
static int
mux_serve(struct mux *m)
{
	sigset_t ss;
	int failed = 0;

	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	signal(SIGPIPE, SIG_IGN);
	m->sfd = signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC);
	if (m->sfd < 0 || (m->ev = ev_base_new()) == NULL ||
	    ev_io_add(m->ev, m->lfd, EPOLLIN, listen_event, m) < 0 ||
	    ev_io_add(m->ev, m->sfd, EPOLLIN, signal_event, m) < 0) {
		fprintf(stderr, "knobctl mux: cannot start its event loop\n");
		return 1;
	}
	/* no eventfd: batches are dialled in the loop, one at a time (dial_waiting) */
	m->dial_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (m->dial_efd >= 0 && ev_io_add(m->ev, m->dial_efd, EPOLLIN, dial_event, m) < 0) {
		close(m->dial_efd);
		m->dial_efd = -1;
	}
	if ((m->saver = tcache_saver_start("mux")) == NULL)
		log_warnx("mux: no thread to save the ticket cache: saved by the event loop");
	idle_arm(m);
	fd_spare_reserve();	/* to refuse a channel when out of descriptors */
	fprintf(stderr, "knobctl mux: holding connections on %s\n", m->path);
	while (!m->stop && (failed = ev_run_once(m->ev, -1) < 0) == 0) {
		flush_dirty(m);
		if (m->waiting && !m->stop) {
			waiting_take_idle(m);
			dial_waiting(m);
			wait_arm(m);
			flush_dirty(m);
		}
	}
	if (failed)
		fprintf(stderr, "knobctl mux: its event loop failed: %s\n", strerror(errno));
	if (m->dials != NULL)
		dial_stop_all(m);
	log_info("mux: %llu links opened, %llu reuses", m->opened, m->reused);
	mux_close_all(m);
	/* what came since the last save, and what is still being saved */
	if (tcache_saver_stop(m->saver, m->ctl->tickets, mux_save_exit_s()) < 0)
		failed = 1;
	return m->stale || failed;
}

enum { M_PERSIST = 256, M_STOP, M_STATUS };

static const struct opt mux_opts[] = {
	{ M_PERSIST, "persist", OPT_ARG, "S", "exit after S seconds without a command (default 600; 0: never)", 0 },
	{ M_STOP, "stop", OPT_NOARG, NULL, "tell the running holder to close its links and exit", 0 },
	{ M_STATUS, "status", OPT_NOARG, NULL, "print the running holder's links and counters", 0 },
	OPT_END
};

int
cmd_mux(struct ctl *ctl, int argc, char **argv)
{
	struct mux *m;
	char *end;
	int ch, rc;

	m = xcalloc(1, sizeof(*m));
	m->ctl = ctl;
	m->persist = 600;
	m->header_ns = mux_header_ns();
	m->sfd = -1;
	m->dial_efd = -1;
	m->lockfd = -1;
	m->uid = geteuid();
	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		switch (ch) {
		case M_PERSIST:
			m->persist = strtod(optarg, &end);
			if (end == optarg || *end != '\0' || !(m->persist >= 0 &&
			    m->persist <= 86400 * 30)) {
				fprintf(stderr, "knobctl mux: --persist: seconds, 0 (never) to "
				    "2592000\n");
				free(m);
				return 2;
			}
			break;
		case M_STOP: free(m); return mux_tell(ctl, "stop\n");
		case M_STATUS: free(m); return mux_tell(ctl, "status\n");
		default: free(m); return 2;
		}
	}
	if (optind != argc) {
		opt_help(stderr, ctl->cmd);
		free(m);
		return 2;
	}
	mux_socket_path(ctl, m->path, sizeof(m->path));
	/* two descriptors per node in use: its link and its channel */
	raise_nofile(0);
	m->done_tail = &m->done;
	pthread_mutex_init(&m->done_mu, NULL);
	/* the trust id before the context loads the CA and CRL: a revocation in
	 * between makes us stale at once, never trusted under the old CRL (and
	 * of our pair once a renew a crash stopped is finished, not of the
	 * certificate that renew replaces: stale at the first command) */
	if (ctl_pair_recover(ctl) < 0 || ctl_trust_id(ctl, m->trust) < 0 ||
	    ctl_ssl(ctl) == NULL ||
	    tls_x509_not_after(SSL_CTX_get0_certificate(ctl->ssl), &m->not_after) < 0 ||
	    mux_lock(m) < 0 || mux_listen(m) < 0)
		rc = 1;
	else
		rc = mux_serve(m);
	if (m->lockfd >= 0)
		close(m->lockfd);	/* our socket is gone: the next holder may start */
	pthread_mutex_destroy(&m->done_mu);
	free(m);
	return rc;
}

const struct cmd_entry cmd_mux_entry = {
	"mux", "", "hold the nodes' TLS connections open between commands (like ssh's ControlMaster)",
	0, mux_opts, cmd_mux,
	"Runs in the foreground (start it with &, or knob-mux.service) until --persist\n"
	"seconds pass without a command, SIGTERM, or mux --stop (exit 0), or until\n"
	"the CA, its CRL or the controller certificate changes (exit 1).  Exit 1 also\n"
	"when its last save of the TLS ticket cache at exit did not end within 10 s\n"
	"or failed (warned, naming the nodes whose tickets were not saved).  Its socket,\n"
	"knob-mux.sock next to the results database, is private (mode 0600; only\n"
	"this uid may connect).  ping, facts, apply, verify, rollback and active\n"
	"then go through it; --no-mux dials the nodes directly.  Benchmarks, sweeps\n"
	"and --via ssh always dial.",
};
