/* The fan-out's third transport: nodes through the connection holder
 * (knobctl mux, controller/cmd_mux.c), which keeps one authenticated TLS
 * connection per node open between commands, as ssh's ControlMaster does.
 * Only for request/reply commands (fo_ops.via_mux: ping, facts, apply,
 * verify, rollback, active).
 *
 * One unix stream connection per command carries every node (the
 * channel): after the line "chan\n", knob frames both ways, each body a
 * type byte, the node's id (its index in the run) and a payload
 * (enum mux_msg in knobctl.h):
 *   us:     OPEN "NAME ADDR PORT CONNECT_TIMEOUT";
 *   holder: OK "new" or "reused" (the agent is authenticated, the node
 *           name pinned), or FAIL "STATUS TEXT" (enum node_status, the
 *           same text as a direct dial);
 *   then FRAME messages both ways, each one knob frame relayed over that
 *   node's TLS; LOST "TEXT" when the holder's link to the node went;
 *   FAIL "STATUS TEXT" instead of relaying a request when the agent's
 *   certificate or ours has expired since the link was authenticated
 *   (the words a direct dial would now get);
 *   us:     DONE when the exchange is complete (the reply came, nothing is
 *           outstanding): the holder may keep the link; ABORT for any
 *           other end (a timeout): the link goes, so a late reply can never
 *           reach the next command.  The channel's end (a killed knobctl)
 *           drops every link still busy with it.
 * Messages are queued and written together (one writev for many nodes),
 * and read 64 KiB at a time: the per-node cost of the relay is the
 * holder's TLS, not the channel.  The socket must be ours alone: a unix
 * socket of our uid, mode 0600, and the process listening on it of our
 * uid too (SO_PEERCRED, after each connect; the holder checks ours the
 * same way); anything else and we dial the nodes ourselves.  The trust
 * question is bounded by --connect-timeout: a hung holder costs that. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "knobctl.h"
#include "log.h"
#include "results.h"
#include "util.h"

#define MUX_SOCKET "knob-mux.sock"

void
mux_socket_path(struct ctl *ctl, char *path, size_t len)
{
	results_side_path(ctl, MUX_SOCKET, path, len);
}

int
mux_sockaddr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa->sun_path, path, strlen(path) + 1);
	return 0;
}

/* Is the process that listens on fd's peer ours (SO_PEERCRED: the same
 * uid as our effective one; root's holder serves root only)?  0, or -1
 * with errno EPERM (warned about) or getsockopt's. */
static int
mux_peer_ours(int fd, const char *path)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
		return -1;
	if (cr.uid == geteuid())
		return 0;
	log_warnx("%s: the process listening on it (pid %d) runs as uid %d, not as ours (%d): "
	    "not using it", path, (int)cr.pid, (int)cr.uid, (int)geteuid());
	errno = EPERM;
	return -1;
}

/* Connect to the holder's socket at path (non-blocking if nb) and check
 * that the holder is ours. fd or -1. */
static int
mux_dial(const char *path, int nb)
{
	struct sockaddr_un sa;
	int fd, e;

	if (mux_sockaddr(path, &sa) < 0)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nb ? SOCK_NONBLOCK : 0), 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || mux_peer_ours(fd, path) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Wait until fd is readable or the monotonic time end_ns passes: 1
 * readable, 0 (errno ETIMEDOUT) or -1. */
static int
mux_wait_in(int fd, uint64_t end_ns)
{
	for (;;) {
		uint64_t now = now_mono_ns();
		int r;

		if (now >= end_ns) {
			errno = ETIMEDOUT;
			return 0;
		}
		r = poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1,
		    (int)((end_ns - now + 999999) / 1000000));
		if (r != 0 && !(r < 0 && errno == EINTR))
			return r < 0 ? -1 : 1;
	}
}

/* Send the holder one line and read its one-line answer (it closes after
 * it), all within --connect-timeout: a hung holder costs a command that,
 * then it dials the nodes itself. 0, or -1 with errno (ETIMEDOUT). */
int
mux_query(struct ctl *ctl, const char *line, char *ans, size_t len)
{
	uint64_t end = now_mono_ns() + (uint64_t)(ctl->connect_timeout * 1e9);
	char path[PATH_MAX];
	size_t got = 0;
	ssize_t r;
	int fd, e;

	mux_socket_path(ctl, path, sizeof(path));
	if ((fd = mux_dial(path, 1)) < 0)
		return -1;
	/* a fresh unix socket takes a line this short whole */
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		goto fail;
	while (got + 1 < len) {
		if ((r = read(fd, ans + got, len - 1 - got)) > 0)
			got += (size_t)r;
		else if (r == 0)
			break;	/* the holder closes after its answer */
		else if ((errno != EAGAIN && errno != EINTR) || mux_wait_in(fd, end) <= 0)
			goto fail;
	}
	ans[got] = '\0';
	ans[strcspn(ans, "\n")] = '\0';
	close(fd);
	return got ? 0 : -1;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

int
mux_usable(struct ctl *ctl)
{
	char path[PATH_MAX], id[65], line[96], ans[MUX_LINE];
	struct stat st;

	mux_socket_path(ctl, path, sizeof(path));
	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
		log_warnx("%s: not a private socket of this user (mode 0600 wanted); "
		    "dialling the nodes directly", path);
		return 0;
	}
	/* the holder's links were verified with what it trusted: ours? */
	if (ctl_trust_id(ctl, id) < 0)
		return 0;
	snprintf(line, sizeof(line), "trust %s\n", id);
	if (mux_query(ctl, line, ans, sizeof(ans)) < 0) {
		if (errno == ETIMEDOUT)
			log_warnx("%s: the connection holder did not answer within %.1fs "
			    "(--connect-timeout): dialling the nodes directly", path,
			    ctl->connect_timeout);
		else
			log_debug("%s: %s: dialling the nodes directly", path, strerror(errno));
		return 0;
	}
	if (strcmp(ans, "ok") == 0) {
		log_warnx("%s: the connection holder is an older knobctl (one channel per "
		    "node): dialling the nodes directly; restart it (mux --stop)", path);
		return 0;
	}
	if (strncmp(ans, "error ", 6) == 0) {
		log_warnx("%s: the connection holder cannot answer now (%s): dialling the nodes "
		    "directly", path, ans + 6);
		return 0;
	}
	if (strcmp(ans, "ok chan") != 0) {
		log_warnx("%s: the connection holder trusts another CA, CRL or controller "
		    "certificate (%s): dialling the nodes directly", path, ans);
		return 0;
	}
	return 1;
}

int
mux_put(struct conn *c, int type, uint32_t id, const void *p, size_t len)
{
	uint8_t tag[MUX_TAG] = { (uint8_t)type, (uint8_t)(id >> 24), (uint8_t)(id >> 16),
	    (uint8_t)(id >> 8), (uint8_t)id };

	return conn_queue_tagged(c, tag, sizeof(tag), p, len);
}

int
mux_split(const uint8_t *body, size_t len, int *type, uint32_t *id, const uint8_t **p,
    size_t *plen)
{
	if (len < MUX_TAG)
		return -1;
	*type = body[0];
	*id = (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 | (uint32_t)body[3] << 8 | body[4];
	*p = body + MUX_TAG;
	*plen = len - MUX_TAG;
	return 0;
}

/* The run's channel to the holder.  Its fd is watched in the (single)
 * loop with tag as the event's node; a node the holder knows has n->tr
 * pointing here. */
struct mux_hub {
	int fd;
	struct conn c;
	struct fo_node tag;
	uint32_t ev;		/* the epoll events fd is registered for */
	int in_event;		/* in hub_event: it flushes when done */
	char err[300];		/* why the channel failed (nodes after it end so) */
};

/* Epoll interest of the channel: input, and output while queued bytes wait. */
static void
hub_interest(struct mux_hub *h, int out)
{
	struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = &h->tag };

	if (ev.events != h->ev && epoll_ctl(fanout_epfd(&h->tag), EPOLL_CTL_MOD, h->fd, &ev) == 0)
		h->ev = ev.events;
}

/* The channel failed: every node it carried ends with why. */
static void
hub_fail(struct fanout *fo, struct mux_hub *h, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void
hub_fail(struct fanout *fo, struct mux_hub *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->err, sizeof(h->err), fmt, ap);
	va_end(ap);
	if (h->fd >= 0) {
		close(h->fd);	/* drops its epoll registration */
		h->fd = -1;
	}
	for (size_t i = 0; i < fo->n; i++)
		if (fo->nodes[i].tr == h) {
			fo->nodes[i].tr = NULL;
			fanout_end(fo, &fo->nodes[i], NS_FAILED, "%s", h->err);
		}
}

/* Write what is queued; wait for room while some is left (unless in
 * hub_event, which flushes when its batch is done). */
static void
hub_push(struct fanout *fo, struct mux_hub *h)
{
	int r;

	if (h->fd < 0 || h->in_event)
		return;
	if ((r = conn_flush(&h->c)) < 0) {
		hub_fail(fo, h, "connection lost: connection holder: %s", h->c.err);
		return;
	}
	hub_interest(h, r == 0);
}

/* Queue a message to the holder. 0, or -1 when the channel failed. */
static int
hub_put(struct fanout *fo, struct mux_hub *h, int type, uint32_t id, const void *p, size_t len)
{
	if (h->fd < 0)
		return -1;
	if (mux_put(&h->c, type, id, p, len) < 0) {
		hub_fail(fo, h, "connection lost: connection holder: %s", h->c.err);
		return -1;
	}
	/* many nodes' messages go out together: from a batch of events at
	 * its end, else when the loop next waits (EPOLLOUT) */
	if (!h->in_event)
		hub_interest(h, 1);
	return 0;
}

int
mux_chan_open(struct fanout *fo)
{
	struct mux_hub *h = xcalloc(1, sizeof(*h));
	char path[PATH_MAX];

	mux_socket_path(fo->ctl, path, sizeof(path));
	h->tag.fd = -1;
	/* a fresh unix socket takes a line this short whole */
	if ((h->fd = mux_dial(path, 1)) < 0 || write(h->fd, "chan\n", 5) != 5) {
		log_warnx("%s: the connection holder went (%s): dialling the nodes directly", path,
		    strerror(errno));
		if (h->fd >= 0)
			close(h->fd);
		free(h);
		return -1;
	}
	h->tag.fd = h->fd;
	conn_init(&h->c, h->fd, h->fd, NULL);
	h->c.ra = MUX_READ;
	h->c.wq_max = MUX_QUEUE;
	fo->tr_run = h;
	return 0;
}

/* Watch the run's channel in n's loop (the run has one), at its first
 * node.  A channel that cannot be watched fails (h->err). */
static void
hub_watch(struct mux_hub *h, struct fo_node *n)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &h->tag };

	h->tag.loop = n->loop;
	if (epoll_ctl(fanout_epfd(n), EPOLL_CTL_ADD, h->fd, &ev) < 0) {
		snprintf(h->err, sizeof(h->err), "connection holder: cannot watch the channel: %s",
		    strerror(errno));
		conn_reset(&h->c);
		close(h->fd);
		h->fd = -1;
		return;
	}
	h->ev = EPOLLIN;
}

/* Ask the holder for n. */
static void
mux_start(struct fanout *fo, struct fo_node *n)
{
	struct mux_hub *h = fo->tr_run;	/* mux_chan_open's */
	char line[MUX_LINE];
	int len;

	if (h->fd >= 0 && h->ev == 0)
		hub_watch(h, n);

	n->phase = FO_HANDSHAKE;
	n->fd = -1;
	/* the holder dials with the same timeout (after a name lookup bounded
	 * by it too, as a direct dial), at once unless its bound on dials in
	 * flight makes the node wait for one to end: its verdict, with the
	 * reason, comes first */
	fanout_deadline(n, 2 * fo->ctl->connect_timeout + 1);
	if (h->fd < 0) {
		fanout_end(fo, n, NS_FAILED, "%s", h->err);
		return;
	}
	len = snprintf(line, sizeof(line), "%s %s %d %.3f", n->name, n->addr, n->port,
	    fo->ctl->connect_timeout);
	if (len >= (int)sizeof(line)) {
		fanout_end(fo, n, NS_FAILED, "connection holder: cannot ask for the node");
		return;
	}
	if (hub_put(fo, h, MUX_OPEN, (uint32_t)n->idx, line, (size_t)len) == 0)
		n->tr = h;
	else
		fanout_end(fo, n, NS_FAILED, "%s", h->err);
}

/* The holder's verdict on n (OK, or FAIL: before its OK, or after it when
 * a certificate expired), payload p. */
static void
hub_answer(struct fanout *fo, struct fo_node *n, int type, const char *p)
{
	char *end;
	long st;

	if (type == MUX_OK) {
		n->resumed = strcmp(p, "reused") == 0;
		log_debug("%s: via the connection holder (%s link)", n->name, p);
		fanout_opened(fo, n);
		return;
	}
	n->tr = NULL;		/* the holder forgot n */
	st = strtol(p, &end, 10);
	if (end == p || st <= NS_OK || st >= NS__COUNT || *end != ' ')
		fanout_end(fo, n, NS_FAILED, "connection holder: malformed answer");
	else
		fanout_end(fo, n, (int)st, "%s", end + 1);
}

/* One message from the holder.  0, or -1 when it breaks the protocol. */
static int
hub_message(struct fanout *fo, struct mux_hub *h, uint8_t *body, size_t len)
{
	const uint8_t *p;
	struct fo_node *n;
	Knob__Envelope *env;
	char text[MUX_LINE], err[256];
	size_t plen;
	uint32_t id;
	int type;

	if (mux_split(body, len, &type, &id, &p, &plen) < 0 || id >= fo->n)
		return -1;
	n = &fo->nodes[id];
	if (n->tr != h)
		return 0;	/* ended here meanwhile (a timeout): its ABORT is on its way */
	if (type == MUX_FRAME && n->phase == FO_OPEN) {
		if ((env = frame_unpack(p, plen, err, sizeof(err))) == NULL)
			fanout_end(fo, n, NS_FAILED, "connection holder: %s", err);
		else
			(void)fanout_deliver(fo, n, env);
		return 0;
	}
	if (plen >= sizeof(text))
		plen = sizeof(text) - 1;	/* a reason, cut */
	memcpy(text, p, plen);
	text[plen] = '\0';
	/* a FAIL after the OK: a certificate the link stood on expired (the
	 * holder refuses to relay what a direct dial could not send) */
	if ((type == MUX_OK && n->phase == FO_HANDSHAKE) ||
	    (type == MUX_FAIL && (n->phase == FO_HANDSHAKE || n->phase == FO_OPEN))) {
		hub_answer(fo, n, type, text);
		return 0;
	}
	if (type != MUX_LOST)
		return -1;
	n->tr = NULL;
	fanout_end(fo, n, NS_FAILED, "connection lost: %s", text);
	return 0;
}

/* Every message the holder sent, then what that made us queue, written. */
static void
hub_event(struct fanout *fo, struct mux_hub *h, uint32_t events)
{
	uint8_t *body;
	size_t len;
	int r = 0;

	h->in_event = 1;
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		while (h->fd >= 0 && (r = conn_recv_body(&h->c, &body, &len)) > 0) {
			int bad = hub_message(fo, h, body, len);

			free(body);
			if (bad < 0) {
				h->in_event = 0;
				hub_fail(fo, h, "connection holder: malformed answer");
				return;
			}
		}
	h->in_event = 0;
	if (h->fd < 0)
		return;		/* failed meanwhile: every node has ended */
	if (r < 0) {
		if (h->c.peer_closed)
			hub_fail(fo, h, "connection lost: the connection holder closed the channel");
		else
			hub_fail(fo, h, "connection lost: connection holder: %s", h->c.err);
		return;
	}
	hub_push(fo, h);
}

static void
mux_event(struct fanout *fo, struct fo_node *n, uint32_t events)
{
	struct mux_hub *h = fo->tr_run;

	if (h != NULL && n == &h->tag)
		hub_event(fo, h, events);
}

static int
mux_send(struct fanout *fo, struct fo_node *n, Knob__Envelope *env)
{
	struct mux_hub *h = n->tr;
	uint8_t *frame;
	size_t len;
	int r;

	if (h == NULL || frame_pack(env, &frame, &len) < 0) {
		fanout_end(fo, n, NS_FAILED, "cannot encode request");
		return -1;
	}
	r = hub_put(fo, h, MUX_FRAME, (uint32_t)n->idx, frame + 4, len - 4);
	free(frame);
	return r;
}

/* n ended: tell the holder whether its link may serve the next command
 * (the exchange is complete) or must go. */
static void
mux_close(struct fanout *fo, struct fo_node *n)
{
	struct mux_hub *h = n->tr;

	if (h == NULL)
		return;
	n->tr = NULL;
	(void)hub_put(fo, h, n->phase == FO_OPEN && n->reply != NULL ? MUX_DONE : MUX_ABORT,
	    (uint32_t)n->idx, NULL, 0);
}

/* The run is over: what is queued (the last DONEs) goes out, then the
 * channel closes; waits at most 5 s for the holder to take it. */
static void
mux_finish(struct fanout *fo)
{
	struct mux_hub *h = fo->tr_run;
	uint64_t until = now_mono_ns() + 5000000000ull;
	int r = 1;

	if (h == NULL)
		return;
	fo->tr_run = NULL;
	if (h->fd >= 0) {
		while ((r = conn_flush(&h->c)) == 0 && now_mono_ns() < until) {
			struct pollfd p = { .fd = h->fd, .events = POLLOUT };

			(void)poll(&p, 1, 100);
		}
		if (r != 1)
			log_debug("connection holder: %s", r < 0 ? h->c.err : "channel full at exit");
		close(h->fd);
	}
	conn_reset(&h->c);
	free(h);
}

const struct fo_transport fo_mux_transport = {
	.start = mux_start,
	.event = mux_event,
	.send = mux_send,
	.close = mux_close,
	.finish = mux_finish,
	.tick = NULL,
};
