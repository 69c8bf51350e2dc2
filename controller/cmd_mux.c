/* knobctl mux: the connection holder.  It keeps one authenticated TLS
 * connection (a link) per node open between commands, as ssh's
 * ControlMaster does, so that a request/reply command (ping, facts, apply,
 * verify, rollback, active) costs each node one relayed exchange instead
 * of a TLS handshake.  knobctl finds it by its socket next to the results
 * database; the channel protocol is in controller/fo_mux.c.
 *
 * One thread, one event base (common/ev.c).  A channel asking for a node
 * whose link is idle gets it at once; the channels that need new links
 * are collected and dialled together by the ordinary fan-out (the same
 * verification, name pinning, ticket cache and error texts as a direct
 * command), which hands each open connection over (fanout_detach); the
 * holder's loop waits while it runs.  A link goes back to the idle set only
 * when its channel says the exchange is complete; any other end closes it.
 * An idle link that the agent closes, or that says anything, is closed.
 * The holder exits after --persist seconds without a channel, or on
 * SIGTERM/SIGINT or `knobctl mux --stop`, closing every link cleanly. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ev.h"
#include "knobctl.h"
#include "log.h"
#include "opt.h"
#include "results.h"
#include "util.h"

#define MUX_BUCKETS 16384
#define MUX_LINE 512
#define MUX_HEADER_NS (10 * 1000000000ull)	/* for a channel's first line */

enum { CH_HEADER, CH_WAIT, CH_RELAY };

struct mux;
struct mux_chan;

/* A TLS connection to one node, idle or serving one channel. */
struct mux_link {
	struct mux *m;
	char *key;		/* "NAME ADDR PORT" */
	int fd;
	struct conn c;
	struct mux_chan *ch;	/* NULL: idle */
	struct mux_link *next;	/* hash chain */
};

/* One knobctl node channel (a unix connection). */
struct mux_chan {
	struct mux *m;
	int fd;
	struct conn c;		/* plain frames */
	int state;
	char line[MUX_LINE];
	size_t ll;
	char *name, *addr, *key;
	int port;
	double ctimeout;
	struct mux_link *link;
	struct mux_chan *wnext;	/* waiting for a new link */
	int closing;		/* the last answer is queued: close when written */
	uint64_t t_accept;	/* monotonic */
	struct mux_chan *fnext, *fprev;	/* in m->fresh until its first line */
};

struct mux {
	struct ctl *ctl;
	struct ev_base *ev;
	int lfd, sfd;
	char path[PATH_MAX];
	struct mux_link *tab[MUX_BUCKETS];
	struct mux_chan *waiting;
	struct ev_timer idle_t, sweep_t;
	struct mux_chan *fresh, *fresh_tail;	/* no first line yet, oldest first */
	double persist;
	int stop;
	char trust[65];		/* ctl_trust_id when we started */
	uid_t uid;		/* ours: the only peers served */
	size_t nchan, nlinks;
	unsigned long long opened, reused, closed;
};

static void chan_free(struct mux_chan *ch);
static void fresh_remove(struct mux_chan *ch);
static void link_event(int fd, uint32_t events, void *arg);

static struct mux_link **
link_slot(struct mux *m, const char *key)
{
	uint32_t h = 2166136261u;

	for (const char *p = key; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return &m->tab[h % MUX_BUCKETS];
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
	return 0;
}

/* Queue a status line to ch (as raw bytes, before any frame). */
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

/* Write lk's queue; a dead link ends its channel too.  0 or -1 (freed). */
static int
link_flush(struct mux_link *lk)
{
	if (conn_flush(&lk->c) < 0) {
		if (lk->ch)
			chan_free(lk->ch);	/* and lk with it */
		else
			link_free(lk);
		return -1;
	}
	ev_io_mod(lk->m->ev, lk->fd, conn_events(&lk->c));
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

/* Give ch the link lk. */
static void
chan_attach(struct mux_chan *ch, struct mux_link *lk, const char *how)
{
	ch->link = lk;
	lk->ch = ch;
	ch->state = CH_RELAY;
	chan_say(ch, "ok %s\n", how);
}

/* "trust ID": does knobctl trust what we do (ok), another CA, CRL or
 * certificate (other)?  When ours changed since we started (stale), our
 * links no longer descend from what we would verify now: we go. */
static void
chan_trust(struct mux_chan *ch, const char *id)
{
	struct mux *m = ch->m;
	char now[65];

	ch->closing = 1;
	if (ctl_trust_id(m->ctl, now) < 0 || strcmp(now, m->trust) != 0) {
		log_warnx("mux: the CA, its CRL or the controller certificate changed: "
		    "closing every link");
		m->stop = 1;
		chan_say(ch, "stale\n");
		return;
	}
	chan_say(ch, strcmp(id, now) == 0 ? "ok\n" : "other\n");
}

/* The header "node NAME ADDR PORT CTIMEOUT", "status", "trust ID" or "stop". */
static void
chan_header(struct mux_chan *ch, char *line)
{
	struct mux *m = ch->m;
	char name[256], addr[256];
	struct mux_link *lk;

	if (strcmp(line, "status") == 0) {
		ch->closing = 1;
		chan_say(ch, "links %zu channels %zu opened %llu reused %llu closed %llu\n",
		    m->nlinks, m->nchan - 1, m->opened, m->reused, m->closed);
		return;
	}
	if (strncmp(line, "trust ", 6) == 0) {
		chan_trust(ch, line + 6);
		return;
	}
	if (strcmp(line, "stop") == 0) {
		ch->closing = 1;
		chan_say(ch, "stopping\n");
		m->stop = 1;
		return;
	}
	if (sscanf(line, "node %255s %255s %d %lf", name, addr, &ch->port, &ch->ctimeout) != 4 ||
	    ch->port <= 0 || ch->port > 65535 || !(ch->ctimeout > 0 && ch->ctimeout < 3600)) {
		log_warnx("mux: malformed request \"%.60s\"", line);
		chan_free(ch);
		return;
	}
	ch->name = xstrdup(name);
	ch->addr = xstrdup(addr);
	ch->key = xasprintf("%s %s %d", name, addr, ch->port);
	for (lk = *link_slot(m, ch->key); lk; lk = lk->next)
		if (lk->ch == NULL && strcmp(lk->key, ch->key) == 0)
			break;
	if (lk && !link_alive(lk)) {
		link_free(lk);
		lk = NULL;
	}
	if (lk) {
		m->reused++;
		chan_attach(ch, lk, "reused");
		return;
	}
	ch->state = CH_WAIT;
	ch->wnext = m->waiting;
	m->waiting = ch;	/* dialled after this round of events (mux_serve) */
}

/* Read ch's header line (nothing may follow it before our answer). */
static void
chan_read_header(struct mux_chan *ch)
{
	ssize_t r = read(ch->fd, ch->line + ch->ll, sizeof(ch->line) - 1 - ch->ll);
	char *nl;

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		chan_free(ch);
		return;
	}
	ch->ll += (size_t)r;
	ch->line[ch->ll] = '\0';
	if ((nl = strchr(ch->line, '\n')) == NULL) {
		if (ch->ll == sizeof(ch->line) - 1)
			chan_free(ch);
		return;
	}
	if (nl[1] != '\0') {
		chan_free(ch);
		return;
	}
	*nl = '\0';
	fresh_remove(ch);
	chan_header(ch, ch->line);
}

/* A frame from knobctl goes to the node as it came (unpacked only to be
 * checked); its "done" lets the link idle.  1: one relayed, ch alive; 0:
 * no whole frame yet; -1: ch freed. */
static int
chan_relay_one(struct mux_chan *ch)
{
	struct mux_link *lk = ch->link;
	Knob__Envelope *env;
	uint8_t *body;
	size_t len;
	int r, done;

	if ((r = conn_recv_body(&ch->c, &body, &len)) <= 0) {
		if (r < 0)
			chan_free(ch);	/* knobctl went away mid-exchange: the link goes too */
		return r;
	}
	if ((env = frame_unpack(body, len, ch->c.err, sizeof(ch->c.err))) == NULL) {
		free(body);
		chan_free(ch);
		return -1;
	}
	done = env->body_case == KNOB__ENVELOPE__BODY_ERROR;
	knob__envelope__free_unpacked(env, NULL);
	if (done) {
		free(body);
		/* complete: nothing of ours is unsent or unanswered */
		if (lk->c.wq_head == NULL && lk->c.hdr_have == 0) {
			lk->ch = NULL;
			ch->link = NULL;
		}
		chan_free(ch);
		return -1;
	}
	if (conn_queue_body(&lk->c, body, len) < 0) {
		chan_free(ch);
		return -1;
	}
	return link_flush(lk) < 0 ? -1 : 1;	/* a dead link ends ch too */
}

/* One frame a wake-up: the channel is a plain socket, level-triggered, so
 * what is left on it wakes us again, and knobctl sends one frame and waits
 * for the answer (no read that would only say EAGAIN).  Bytes the frame's
 * read fetched past it are not on the socket any more: relayed now. */
static void
chan_relay(struct mux_chan *ch)
{
	while (chan_relay_one(ch) > 0 && conn_buffered(&ch->c))
		;
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
	switch (ch->state) {
	case CH_HEADER:
		chan_read_header(ch);
		return;
	case CH_WAIT: {
		char b;

		/* nothing may come before our answer; the end is the end */
		if (recv(ch->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0)
			chan_free(ch);
		return;
	}
	default:
		chan_relay(ch);
	}
}

/* Unlink ch from the waiting list (if there). */
static void
wait_remove(struct mux_chan *ch)
{
	for (struct mux_chan **pp = &ch->m->waiting; *pp; pp = &(*pp)->wnext)
		if (*pp == ch) {
			*pp = ch->wnext;
			return;
		}
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

static void
chan_free(struct mux_chan *ch)
{
	struct mux *m = ch->m;

	if (ch->state == CH_WAIT)
		wait_remove(ch);
	fresh_remove(ch);
	if (ch->link)
		link_free(ch->link);	/* clears nothing of ch: it goes now */
	ev_io_forget(m->ev, ch->fd);	/* closed below, never duplicated */
	conn_reset(&ch->c);
	close(ch->fd);
	free(ch->name);
	free(ch->addr);
	free(ch->key);
	free(ch);
	if (--m->nchan == 0)
		ev_timer_set(m->ev, &m->idle_t, (uint64_t)(m->persist * 1e9), idle_timeout, m);
}

/* Dialling: the fan-out hands each connection over as soon as it is open. */
static int
dial_open(struct fanout *fo, struct fo_node *n)
{
	struct mux_link *lk = xcalloc(1, sizeof(*lk));

	(void)fo;
	if (fanout_detach(fo, n, &lk->fd, &lk->c) < 0) {
		free(lk);
		return -1;
	}
	n->user = lk;
	return 0;
}

static int
dial_msg(struct fanout *fo, struct fo_node *n, Knob__Envelope *msg)
{
	(void)fo;
	(void)n;
	knob__envelope__free_unpacked(msg, NULL);
	return 1;
}

/* A new link for ch from the fan-out's node n, or the reason it failed. */
static void
dial_result(struct mux *m, struct mux_chan *ch, struct fo_node *n)
{
	struct mux_link *lk = n->user, **slot;
	if (lk == NULL || n->status != NS_OK) {
		ch->closing = 1;
		ch->state = CH_HEADER;	/* nothing more is read from it */
		chan_say(ch, "fail %d %s\n", n->status ? n->status : NS_FAILED,
		    n->detail ? n->detail : "failed");
		return;
	}
	lk->m = m;
	lk->key = xstrdup(ch->key);
	/* an idle link to a node that died without a word goes within ~90 s */
	(void)sock_keepalive(lk->fd, 60, 10, 3);
	slot = link_slot(m, lk->key);
	lk->next = *slot;
	*slot = lk;
	m->nlinks++;
	m->opened++;
	if (ev_io_add(m->ev, lk->fd, EPOLLIN, link_event, lk) < 0) {
		link_free(lk);
		ch->closing = 1;
		chan_say(ch, "fail %d cannot watch the connection\n", NS_FAILED);
		return;
	}
	chan_attach(ch, lk, "new");
}

/* Dial every waiting channel's node together. */
static void
dial_waiting(struct mux *m)
{
	static const struct fo_ops ops = { .on_open = dial_open, .on_msg = dial_msg,
	    .per_node = 1 };
	struct mux_chan *ch, *list = m->waiting, **v;
	struct strvec names = { 0 };
	struct fanout fo;
	double ct = 0;
	size_t i, k = 0;

	m->waiting = NULL;
	for (ch = list; ch; ch = ch->wnext) {
		strvec_push(&names, ch->name);
		if (ch->ctimeout > ct)
			ct = ch->ctimeout;
	}
	if (names.n == 0)
		return;
	v = xcalloc(names.n, sizeof(*v));
	for (ch = list; ch; ch = ch->wnext)
		v[k++] = ch;
	fanout_init(&fo, m->ctl, &names);
	for (i = 0; i < names.n; i++) {
		fo.nodes[i].addr = v[i]->addr;	/* the caller's inventory */
		fo.nodes[i].port = v[i]->port;
		v[i]->state = CH_HEADER;	/* out of the waiting list */
	}
	m->ctl->connect_timeout = ct;
	if (fanout_run(&fo, &ops, m) < 0)
		for (i = 0; i < names.n; i++)
			fanout_end(&fo, &fo.nodes[i], NS_FAILED, "cannot dial");
	for (i = 0; i < names.n; i++)
		dial_result(m, v[i], &fo.nodes[i]);
	fanout_free(&fo);
	strvec_free(&names);
	free(v);
}

/* The node's frames go to its channel as they came (knobctl checks
 * them); on an idle link anything ends it. */
static void
link_event(int fd, uint32_t events, void *arg)
{
	struct mux_link *lk = arg;
	uint8_t *body;
	size_t len;
	int r;

	(void)fd;
	if ((events & EPOLLOUT) && link_flush(lk) < 0)
		return;
	while ((r = conn_recv_body(&lk->c, &body, &len)) > 0) {
		struct mux_chan *ch = lk->ch;

		if (ch == NULL) {
			free(body);
			link_free(lk);
			return;
		}
		if (conn_queue_body(&ch->c, body, len) < 0) {
			chan_free(ch);
			return;
		}
		if (chan_flush(ch) < 0)
			return;
	}
	if (r < 0) {
		if (lk->ch)
			chan_free(lk->ch);	/* knobctl sees the end: connection lost */
		else
			link_free(lk);
		return;
	}
	ev_io_mod(lk->m->ev, lk->fd, conn_events(&lk->c));
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

/* Close the channels that sent no first line within MUX_HEADER_NS (one
 * timer for all of them: they are in accept order). */
static void
sweep_silent(void *arg)
{
	struct mux *m = arg;
	uint64_t now = now_mono_ns();

	while (m->fresh && now - m->fresh->t_accept >= MUX_HEADER_NS) {
		log_info("mux: a channel sent no request within %llu s: closed",
		    MUX_HEADER_NS / 1000000000ull);
		chan_free(m->fresh);
	}
	if (m->fresh)
		ev_timer_set(m->ev, &m->sweep_t, m->fresh->t_accept + MUX_HEADER_NS - now,
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
		ev_timer_set(m->ev, &m->sweep_t, MUX_HEADER_NS, sweep_silent, m);
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
		ev_timer_del(m->ev, &m->idle_t);
		fresh_add(m, ch);
	}
}

static void
signal_event(int fd, uint32_t events, void *arg)
{
	struct signalfd_siginfo si;

	(void)events;
	if (read(fd, &si, sizeof(si)) == sizeof(si))
		((struct mux *)arg)->stop = 1;
}

/* Bind the holder's socket (0600), unless a holder already answers there. */
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
	while (m->waiting)
		chan_free(m->waiting);
	while (m->fresh)
		chan_free(m->fresh);
	for (size_t b = 0; b < MUX_BUCKETS; b++)
		while (m->tab[b]) {
			if (m->tab[b]->ch)
				chan_free(m->tab[b]->ch);
			else
				link_free(m->tab[b]);
		}
	unlink(m->path);
	close(m->lfd);
	if (m->sfd >= 0)
		close(m->sfd);
	ev_base_free(m->ev);
}

/* Run the holder until it is told to stop or stays unused. */
static int
mux_serve(struct mux *m)
{
	sigset_t ss;

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
	ev_timer_set(m->ev, &m->idle_t, (uint64_t)(m->persist * 1e9), idle_timeout, m);
	fprintf(stderr, "knobctl mux: holding connections on %s\n", m->path);
	while (!m->stop && ev_run_once(m->ev, -1) == 0)
		if (m->waiting && !m->stop)
			dial_waiting(m);
	log_info("mux: %llu links opened, %llu reuses", m->opened, m->reused);
	mux_close_all(m);
	return 0;
}

enum { M_PERSIST = 256, M_STOP, M_STATUS };

static const struct opt mux_opts[] = {
	{ M_PERSIST, "persist", OPT_ARG, "S", "exit after S seconds without a command (default 600)", 0 },
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
	m->sfd = -1;
	m->uid = geteuid();
	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		switch (ch) {
		case M_PERSIST:
			m->persist = strtod(optarg, &end);
			if (*end != '\0' || !(m->persist > 0 && m->persist <= 86400 * 30)) {
				fprintf(stderr, "knobctl mux: --persist: seconds, more than 0\n");
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
	if (ctl_ssl(ctl) == NULL || ctl_trust_id(ctl, m->trust) < 0 || mux_listen(m) < 0)
		rc = 1;
	else
		rc = mux_serve(m);
	free(m);
	return rc;
}

const struct cmd_entry cmd_mux_entry = {
	"mux", "", "hold the nodes' TLS connections open between commands (like ssh's ControlMaster)",
	0, mux_opts, cmd_mux,
	"Runs in the foreground (start it with & or a systemd unit) until --persist\n"
	"seconds pass without a command, SIGTERM, or mux --stop.  Its socket,\n"
	"knob-mux.sock next to the results database, is private (mode 0600; only\n"
	"this uid may connect).  ping, facts, apply, verify, rollback and active\n"
	"then go through it; --no-mux dials the nodes directly.  Benchmarks, sweeps\n"
	"and --via ssh always dial.",
};
