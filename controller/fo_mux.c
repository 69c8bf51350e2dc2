/* The fan-out's third transport: nodes through the connection holder
 * (knobctl mux, controller/cmd_mux.c), which keeps one authenticated TLS
 * connection per node open between commands, as ssh's ControlMaster does.
 * Only for request/reply commands (fo_ops.via_mux: ping, facts, apply,
 * verify, rollback, active).
 *
 * The holder's channel protocol, one unix stream connection per node:
 *   us:     "node NAME ADDR PORT CONNECT_TIMEOUT\n"
 *   holder: "ok new\n" or "ok reused\n" (the agent is authenticated, the
 *           node name pinned), or "fail STATUS TEXT\n" (enum node_status,
 *           the same text as a direct dial) and it closes;
 *   then plain knob frames both ways, relayed over that node's TLS;
 *   us:     an Error envelope when the exchange is complete (the reply
 *           came, nothing is outstanding): the holder may keep the link.
 * Any other end (a timeout, a killed knobctl) closes the link as well, so
 * a late reply can never reach the next command.  The socket must be ours
 * alone: a unix socket of our uid, mode 0600 (the holder also checks the
 * peer's uid); anything else and we dial the nodes ourselves. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>

#include "knobctl.h"
#include "log.h"
#include "results.h"
#include "util.h"

#define MUX_SOCKET "knob-mux.sock"
#define MUX_LINE 512		/* longest status line */

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

/* Connect to the holder's socket at path (non-blocking if nb). fd or -1. */
static int
mux_dial(const char *path, int nb)
{
	struct sockaddr_un sa;
	int fd;

	if (mux_sockaddr(path, &sa) < 0)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nb ? SOCK_NONBLOCK : 0), 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int
mux_query(struct ctl *ctl, const char *line, char *ans, size_t len)
{
	struct timeval tv = { .tv_sec = 10 };
	char path[PATH_MAX];
	size_t got = 0;
	ssize_t r;
	int fd, e;

	mux_socket_path(ctl, path, sizeof(path));
	if ((fd = mux_dial(path, 0)) < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		goto fail;
	while (got + 1 < len && (r = read(fd, ans + got, len - 1 - got)) > 0)
		got += (size_t)r;	/* the holder closes after its answer */
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
		log_debug("%s: %s: dialling the nodes directly", path, strerror(errno));
		return 0;
	}
	if (strcmp(ans, "ok") != 0) {
		log_warnx("%s: the connection holder trusts another CA, CRL or controller "
		    "certificate (%s): dialling the nodes directly", path, ans);
		return 0;
	}
	return 1;
}

/* Open n's channel and ask for its node. */
static void
mux_start(struct fanout *fo, struct fo_node *n)
{
	char path[PATH_MAX], line[MUX_LINE];
	int len;

	n->phase = FO_HANDSHAKE;
	/* the holder dials with the same timeout, after the links it is
	 * opening for others: its verdict, with the reason, comes first */
	fanout_deadline(n, 2 * fo->ctl->connect_timeout + 1);
	mux_socket_path(fo->ctl, path, sizeof(path));
	if ((n->fd = mux_dial(path, 1)) < 0) {
		fanout_end(fo, n, NS_FAILED, "connection holder %s: %s", path, strerror(errno));
		return;
	}
	len = snprintf(line, sizeof(line), "node %s %s %d %.3f\n", n->name, n->addr, n->port,
	    fo->ctl->connect_timeout);
	/* a fresh unix socket takes a line this short whole */
	if (len >= (int)sizeof(line) || write(n->fd, line, (size_t)len) != len) {
		fanout_end(fo, n, NS_FAILED, "connection holder: cannot ask for the node");
		return;
	}
	(void)fanout_watch(fo, n, EPOLLIN);
}

/* The holder's answer for n: opened, or ended with its status and text. */
static void
mux_answer(struct fanout *fo, struct fo_node *n)
{
	char line[MUX_LINE], *nl, *end;
	ssize_t r;
	long st;

	r = recv(n->fd, line, sizeof(line) - 1, MSG_PEEK);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		fanout_end(fo, n, NS_FAILED, "connection holder closed the channel");
		return;
	}
	line[r] = '\0';
	if ((nl = strchr(line, '\n')) == NULL) {
		if (r == (ssize_t)sizeof(line) - 1)
			fanout_end(fo, n, NS_FAILED, "connection holder: malformed answer");
		return;	/* the rest of the line is on its way */
	}
	/* consume the line only: frames may follow it */
	if (read(n->fd, line, (size_t)(nl - line + 1)) != nl - line + 1) {
		fanout_end(fo, n, NS_FAILED, "connection holder: %s", strerror(errno));
		return;
	}
	*nl = '\0';
	if (strncmp(line, "ok ", 3) == 0) {
		n->resumed = strcmp(line + 3, "reused") == 0;
		log_debug("%s: via the connection holder (%s link)", n->name, line + 3);
		conn_init(&n->c, n->fd, n->fd, NULL);
		fanout_opened(fo, n);
		return;
	}
	st = strncmp(line, "fail ", 5) == 0 ? strtol(line + 5, &end, 10) : -1;
	if (st <= NS_OK || st >= NS__COUNT || *end != ' ')
		fanout_end(fo, n, NS_FAILED, "connection holder: malformed answer");
	else
		fanout_end(fo, n, (int)st, "%s", end + 1);
}

/* Write what is queued for n; 0, or -1 when n ended. */
static int
mux_push(struct fanout *fo, struct fo_node *n)
{
	int r = conn_flush(&n->c);

	if (r < 0) {
		fanout_end(fo, n, NS_FAILED, "connection holder: %s", n->c.err);
		return -1;
	}
	fanout_interest(fo, n, r == 0);
	return 0;
}

static void
mux_event(struct fanout *fo, struct fo_node *n, uint32_t events)
{
	Knob__Envelope *env;
	int r;

	if (n->phase == FO_HANDSHAKE) {
		mux_answer(fo, n);
		return;
	}
	if (n->phase != FO_OPEN)
		return;
	if ((events & EPOLLOUT) && mux_push(fo, n) < 0)
		return;
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	while ((r = conn_recv(&n->c, &env)) > 0)
		if (fanout_deliver(fo, n, env) < 0)
			return;
	if (r < 0)
		fanout_end(fo, n, NS_FAILED, "connection lost: %s", n->c.err);
}

static int
mux_send(struct fanout *fo, struct fo_node *n, Knob__Envelope *env)
{
	if (conn_send(&n->c, env) < 0) {
		fanout_end(fo, n, NS_FAILED, "cannot encode request");
		return -1;
	}
	return mux_push(fo, n);
}

/* Close n's channel; after a complete exchange, first tell the holder
 * that the link may serve the next command. */
static void
mux_close(struct fanout *fo, struct fo_node *n)
{
	Knob__Envelope end = KNOB__ENVELOPE__INIT;
	Knob__Error e = KNOB__ERROR__INIT;
	char done[] = "done";

	(void)fo;
	if (n->fd < 0)
		return;
	if (n->phase == FO_OPEN && n->reply != NULL && n->c.hdr_have == 0 &&
	    n->c.wq_head == NULL) {
		e.message = done;
		end.body_case = KNOB__ENVELOPE__BODY_ERROR;
		end.error = &e;
		if (conn_send(&n->c, &end) == 0)
			(void)conn_flush(&n->c);
	}
	conn_reset(&n->c);
	close(n->fd);
	n->fd = -1;
	n->ev = 0;
}

const struct fo_transport fo_mux_transport = {
	.start = mux_start,
	.event = mux_event,
	.send = mux_send,
	.close = mux_close,
	.tick = NULL,
};
