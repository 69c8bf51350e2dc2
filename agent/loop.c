/* The agent's network side, plugged into an event base it is given
 * (common/ev.c; knobd gives it its own, knob-sim hosts many agents per
 * base).  Each controller connection runs its own small state machine
 * (TLS handshake -> open -> closing).  Work that may block (tuning,
 * benchmarks) runs through agent_work (work.c) and comes back through
 * agent_post().  Subsystems are reached only through their hooks
 * (subsys.c).  The timer runs only while a deadline or a subsystem needs
 * it: an idle agent does not wake up.
 *
 * Limits before trust: connections that have not authenticated have their
 * own budget (cfg.max_unauth, default 64; at most cfg.max_unauth_per_addr,
 * default 8, from one source address), 2 s for the first byte of the
 * ClientHello and 5 s for the whole handshake.  When the budget is full the
 * least advanced unauthenticated connection makes room for the new one:
 * one whose handshake is over (failed, lingering for its alert), then one
 * that has sent nothing, then one that has sent bytes but no
 * ClientHello we could answer, then one we sent our ServerHello to, the
 * oldest first among equals; among those last, the source address holding
 * the most places gives up its oldest first: never-finished ClientHellos
 * from 32 addresses fill all 64 places with answered handshakes, and the
 * controller's own, answered too and one of a place or two from its
 * address, was dropped whenever its next flight was late (every run of
 * check_attack answered_handshake_not_dropped; from 64 addresses holding
 * one place each, it still is: 4 runs of 4; so a handshake resuming one of
 * our tickets ranks above, and one from a controller's source, configured
 * or learned (ctl_src.c), above all).  Each connection gets one handshake
 * step as soon as it is accepted (a controller's ClientHello is usually
 * waiting already), one whose bytes wait unread gets its step before it
 * could be dropped, and one accepted in the same wake-up of the listener
 * counts as talking: so a flood of sockets that send a byte cannot push
 * out a controller whose handshake is under way.  Failed and abandoned
 * handshakes, refusals and evictions are logged at debug level and
 * summarised once a second and at shutdown; out of file descriptors, the
 * waiting connection is refused with a spare one (accept_refuse_one)
 * instead of spinning on a readable listener, and when even that fails the
 * listener is paused for a moment (listen_failed).  Authenticated
 * controllers count against cfg.max_conns only. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <openssl/err.h>

#include "agent.h"
#include "log.h"
#include "tls.h"
#include "util.h"

#define TICK_NS (250ull * 1000000ull)	/* timer period while a deadline runs */
#define SUBSYS_TICK_NS 1000000000ull	/* subsystem ticks (leases) */
#define ACCEPT_BATCH 64			/* accepts per listener wake-up */
#define FRAMES_PER_TURN 64		/* frames of one connection per turn */

static void on_agent_fd(int fd, uint32_t events, void *arg);
static void on_posts(void *arg);
static void event_done(struct agent *a);
static void on_stop(int fd, uint32_t events, void *arg);
static void on_conn(int fd, uint32_t events, void *arg);
static void conn_event(struct agent *a, struct aconn *c, uint32_t events);
static void hs_failed(struct agent *a, struct aconn *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

int
agent_path(const struct agent *a, char *buf, size_t len, const char *abs)
{
	return path_under_root(buf, len, a->sysroot, abs);
}

/* A lease's keepalive idle time: probes start after half of it (at most
 * the kernel's 32767 s). */
static int
lease_idle_s(unsigned lease_s)
{
	unsigned s = lease_s > 2 ? lease_s / 2 : 1;

	return s > 32767 ? 32767 : (int)s;
}

/* A lease's TCP_USER_TIMEOUT: twice the lease (at most INT_MAX ms). */
static unsigned
lease_timeout_ms(unsigned lease_s)
{
	uint64_t ms = 2ull * lease_s * 1000u;

	return ms > INT_MAX ? INT_MAX : (unsigned)ms;
}

/* Keepalive probes and TCP_USER_TIMEOUT, so that a cut link ends the
 * connection: unacknowledged data or unanswered probes for twice the
 * lease close it. */
static void
sock_lease(int fd, unsigned lease_s)
{
	unsigned ms = lease_timeout_ms(lease_s);

	if (sock_keepalive(fd, lease_idle_s(lease_s), 1, 3) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms)) < 0)
		log_warn("keepalive/TCP_USER_TIMEOUT");
}

/* The options a controller connection starts with: no Nagle delay, and
 * the default lease's keepalive and TCP_USER_TIMEOUT. */
static void
sock_conn_opts(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	sock_lease(fd, AGENT_LEASE_DEFAULT_S);
}

/* Did accepted fd come with sock_conn_opts from its listener?  Linux copies
 * a listening socket's TCP options to the sockets it accepts; this asks
 * the kernel rather than assume it. */
static int
conn_opts_inherited(int fd)
{
	int nd = 0, idle = 0;
	unsigned ut = 0;
	socklen_t l1 = sizeof(nd), l2 = sizeof(idle), l3 = sizeof(ut);

	return getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nd, &l1) == 0 && nd == 1 &&
	    getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, &l2) == 0 &&
	    idle == lease_idle_s(AGENT_LEASE_DEFAULT_S) &&
	    getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, &l3) == 0 &&
	    ut == lease_timeout_ms(AGENT_LEASE_DEFAULT_S);
}

int
agent_listen(const char *spec, char *err, size_t errlen)
{
	char host[256] = "", port[16] = "7420";
	struct addrinfo hints, *res = NULL, *ai;
	const char *colon;
	int fd = -1, one = 1, r;

	if (spec == NULL || *spec == '\0')
		spec = "0.0.0.0:7420";
	if (spec[0] == '[') {
		const char *end = strchr(spec, ']');
		if (end == NULL || (size_t)(end - spec - 1) >= sizeof(host)) {
			snprintf(err, errlen, "bad listen address '%s'", spec);
			return -1;
		}
		memcpy(host, spec + 1, (size_t)(end - spec - 1));
		host[end - spec - 1] = '\0';
		if (end[1] == ':')
			snprintf(port, sizeof(port), "%s", end + 2);
	} else if ((colon = strrchr(spec, ':')) != NULL) {
		if ((size_t)(colon - spec) >= sizeof(host)) {
			snprintf(err, errlen, "bad listen address '%s'", spec);
			return -1;
		}
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = '\0';
		snprintf(port, sizeof(port), "%s", colon + 1);
	} else
		snprintf(port, sizeof(port), "%s", spec);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	r = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (r != 0) {
		snprintf(err, errlen, "listen address '%s': %s", spec, gai_strerror(r));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* a deep accept queue: connections a flood keeps opening wait there
		 * until the loop refuses them, and a full queue would drop the
		 * controller's SYN too (1 s until its retransmission) */
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
			sock_conn_opts(fd);	/* for what it accepts (conn_start) */
			break;
		}
		snprintf(err, errlen, "listen on '%s': %s", spec, strerror(errno));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* The pause of a listener is over: take a spare descriptor again if the
 * last one was lost, and watch the listener again. */
static void
listen_resume(void *arg)
{
	struct listen_pause *p = arg;

	fd_spare_reserve();
	ev_io_mod(p->b, p->lfd, EPOLLIN);
}

/* Stop watching p's listener for LISTEN_PAUSE_NS (a level-triggered
 * listener with a connection waiting would wake the loop again at once);
 * the first pause of an episode is logged, with why. */
static void
listen_pause(struct listen_pause *p, const char *why)
{
	if (p->pauses++ == 0)
		log_warnx("%s%s: not accepting for %llu ms at a time until that changes", p->who,
		    why, LISTEN_PAUSE_NS / 1000000ull);
	ev_io_mod(p->b, p->lfd, 0);
	ev_timer_set(p->b, &p->t, LISTEN_PAUSE_NS, listen_resume, p);
}

int
listen_failed(struct listen_pause *p, int e)
{
	switch (e) {
	case EAGAIN:
#if EWOULDBLOCK != EAGAIN
	case EWOULDBLOCK:
#endif
	case EINTR:
		return 0;
	case EMFILE:
	case ENFILE:
		if (accept_refuse_one(p->lfd))
			return 2;
		listen_pause(p, "out of file descriptors, and none in reserve to refuse a "
		    "connection with");
		return 0;
	/* the waiting connection's own network error (accept(2)): the next
	 * one does not have it */
	case ECONNABORTED: case EPROTO: case ENOPROTOOPT: case ENETDOWN: case ENONET:
	case EHOSTDOWN: case EHOSTUNREACH: case EOPNOTSUPP: case ENETUNREACH: case EPERM:
		log_debug("%saccept: %s", p->who, strerror(e));
		return 1;
	default:	/* ENOBUFS, ENOMEM: the system's, for a while */
		listen_pause(p, strerror(e));
		return 0;
	}
}

void
listen_accepted(struct listen_pause *p)
{
	if (p->pauses == 0)
		return;
	log_warnx("%saccepting connections again, after %lu pause(s)", p->who, p->pauses);
	p->pauses = 0;
}

void
listen_pause_stop(struct listen_pause *p)
{
	if (p->b != NULL)
		ev_timer_del(p->b, &p->t);
}

/* The instance's TLS context (cfg->ssl_ctx shares one). 0 or -1. */
static int
agent_tls(struct agent *a, const struct agent_cfg *cfg, char *err, size_t errlen)
{
	if (cfg->ssl_ctx != NULL) {
		SSL_CTX_up_ref(cfg->ssl_ctx);
		a->ssl_ctx = cfg->ssl_ctx;
		return 0;
	}
	a->ssl_ctx = tls_ctx_new(1, cfg->ca, cfg->cert, cfg->key, err, errlen);
	if (a->ssl_ctx == NULL)
		return -1;
	if (cfg->ticket_lifetime_s && tls_ticket_times(a->ssl_ctx, cfg->ticket_lifetime_s,
	    cfg->ticket_rotate_s) < 0) {
		snprintf(err, errlen, "TLS: cannot set the ticket times");
		return -1;
	}
	/* idle connections do not keep 34 KiB TLS buffers each */
	SSL_CTX_set_mode(a->ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
	return 0;
}

int
agent_state_path(const struct agent *a, const char *name, char *buf, size_t len)
{
	if (a->state_dir[0] == '\0')
		return -1;
	return snprintf(buf, len, "%s/%s", a->state_dir, name) < (int)len ? 0 : -1;
}

/* Set up the instance: TLS context, node name, listener, subsystems, all
 * plugged into the event base.  Journal recovery (the tuning subsystem's
 * init) happens here, before anything is served. */
int
agent_init(struct agent *a, const struct agent_cfg *cfg)
{
	char err[512], ou[64];

	memset(a, 0, sizeof(*a));
	a->cfg = *cfg;
	a->lfd = -1;
	a->next_conn_id = 1;
	pthread_mutex_init(&a->post_mu, NULL);
	pthread_mutex_init(&a->ctl_mu, NULL);
	pthread_mutex_init(&a->ctl_src_mu, NULL);
	pthread_cond_init(&a->work_cv, NULL);
	snprintf(a->sysroot, sizeof(a->sysroot), "%s",
	    (cfg->sysroot && strcmp(cfg->sysroot, "/") != 0) ? cfg->sysroot : "");
	while (a->sysroot[0] && a->sysroot[strlen(a->sysroot) - 1] == '/')
		a->sysroot[strlen(a->sysroot) - 1] = '\0';
	snprintf(a->state_dir, sizeof(a->state_dir), "%s",
	    cfg->state_dir ? cfg->state_dir : "/var/lib/knob");

	if (agent_ctl_from_parse(a, cfg->controller_from, err, sizeof(err)) < 0) {
		log_err("%s", err);
		return -1;
	}
	if (!cfg->stdio && agent_tls(a, cfg, err, sizeof(err)) < 0) {
		log_err("%s", err);
		return -1;
	}
	if (cfg->node_name)
		snprintf(a->node, sizeof(a->node), "%s", cfg->node_name);
	else if (cfg->cert && tls_cert_identity(cfg->cert, a->node, sizeof(a->node), ou,
	    sizeof(ou)) == 0) {
		if (strcmp(ou, KNOB_ROLE_NODE) != 0)
			log_warnx("%s: certificate role is '%s', expected '%s'", cfg->cert, ou,
			    KNOB_ROLE_NODE);
	} else if (gethostname(a->node, sizeof(a->node)) < 0)
		snprintf(a->node, sizeof(a->node), "unknown");
	log_set_instance(a->node);
	agent_ctl_src_load(a);

	a->pool = cfg->pool;
	a->fini_wait_s = AGENT_FINI_WAIT_S;
	if (cfg->test_hooks) {
		a->test_busy_work = (unsigned)env_number("KNOB_TEST_BUSY_WORK", 0,
		    TEST_BUSY_WORK_MAX, 0);
		a->fini_wait_s = (unsigned)env_number("KNOB_TEST_FINI_WAIT_S", 1,
		    AGENT_FINI_WAIT_S, AGENT_FINI_WAIT_S);
	}
	if (a->pool == NULL && (a->pool = a->own_pool = work_pool_new(WORK_THREADS)) == NULL)
		return -1;
	a->base = cfg->base;
	if (a->base == NULL && (a->base = a->own_base = ev_base_new()) == NULL)
		return -1;
	if (agent_subsys_init(a) < 0)
		return -1;

	if (ev_async_init(a->base, &a->wake, on_posts, a) < 0)
		return -1;
	a->post_base = a->base;
	if (cfg->stop_fd >= 0 && ev_io_add(a->base, cfg->stop_fd, EPOLLIN, on_stop, a) < 0) {
		log_warn("stop fd");
		return -1;
	}
	if (!cfg->stdio && !cfg->no_listen) {
		a->lfd = agent_listen(cfg->listen, err, sizeof(err));
		if (a->lfd < 0) {
			log_err("%s", err);
			return -1;
		}
		ev_io_add(a->base, a->lfd, EPOLLIN, on_agent_fd, a);
		fd_spare_reserve();	/* accept_conns, out of descriptors */
		a->lpause = (struct listen_pause){ .b = a->base, .lfd = a->lfd, .who = "" };
		log_info("node %s listening on %s (sysroot '%s', state %s)", a->node,
		    cfg->listen ? cfg->listen : "0.0.0.0:7420", a->sysroot, a->state_dir);
	}
	agent_timer_update(a);	/* a recovered lease may need it */
	log_set_instance(NULL);
	return 0;
}

/* Update the epoll interest of c: input until the peer ended it, output
 * while queued.  A --stdio session reads fd 0 and writes fd 1, so output
 * is watched on fd 1 (when it can be: a regular file is always writable). */
static void
conn_interest(struct agent *a, struct aconn *c)
{
	uint32_t ev = conn_events(&c->c);

	if (c->peer_eof)	/* a socket at EOF stays readable */
		ev &= ~(uint32_t)EPOLLIN;
	if (!c->stdio) {
		ev_io_mod(a->base, c->fd, ev);
		return;
	}
	if (!c->peer_eof)	/* else fd 0 is out of the loop (conn_peer_eof) */
		ev_io_mod(a->base, 0, EPOLLIN);
	if (c->out_watched)
		ev_io_mod(a->base, 1, ev & EPOLLOUT);
}

/* Remove c from the loop, tell the subsystems, free it. */
static void
conn_close(struct agent *a, struct aconn *c, const char *why)
{
	if (why)	/* unauthenticated ones at debug: a flood must not flood the log */
		log_msg(c->authed ? LOG_LVL_INFO : LOG_LVL_DEBUG, 0, __FILE__, __LINE__,
		    "connection %llu from %s (%s) closed: %s", (unsigned long long)c->id,
		    c->addr, c->peer[0] ? c->peer : "-", why);
	ev_io_del(a->base, c->fd);
	if (c->out_watched)
		ev_io_del(a->base, 1);
	if (c->prev)
		c->prev->next = c->next;
	else
		a->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (!c->peer_eof)	/* else told at the peer's EOF */
		agent_subsys_conn_closed(a, c->id);
	agent_ctl_addr_del(a, &c->ctl);
	if (c->req)	/* closed while its request was being dispatched */
		knob__envelope__free_unpacked(c->req, NULL);
	conn_reset(&c->c);
	if (!c->stdio)	/* never close stdin in --stdio mode */
		close(c->fd);
	free(c);
}

/* Half-close c and discard what the peer still sends until it closes (or
 * AGENT_CLOSE_NS pass), so that our last words (a TLS alert, an Error
 * frame) reach it instead of being destroyed by a reset from unread input
 * at close(). */
static void
conn_linger(struct agent *a, struct aconn *c, const char *why)
{
	if (why)
		log_debug("connection %llu from %s: %s; lingering", (unsigned long long)c->id,
		    c->addr, why);
	if (c->stdio) {	/* nothing to linger on */
		conn_close(a, c, why);
		return;
	}
	shutdown(c->fd, SHUT_WR);
	c->draining = 1;
	c->handshaking = 0;
	c->last_rx_ns = now_mono_ns();
	ev_io_mod(a->base, c->fd, EPOLLIN);
}

/* Read and drop input on a lingering connection, 64 KiB at most per
 * event (the socket stays readable): a peer that sends faster than the
 * loop reads must not keep it here, where the timer that enforces the
 * deadline never runs.  (Not provoked by a test: a peer blasting over the
 * test's veth pair for 10 s was cut at its 2 s deadline with or without
 * the bound; the loop read faster than it could send.)  Close at EOF. */
static void
conn_drain(struct agent *a, struct aconn *c)
{
	char buf[4096];
	ssize_t n;
	int k = 0;

	while ((n = read(c->fd, buf, sizeof(buf))) > 0)
		if (++k == 16)
			return;
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		conn_close(a, c, NULL);
}

/* Close c at once, with a reset when it is a socket (SO_LINGER 0): what
 * it still had to send is dropped, and no orphan socket goes on trying. */
static void
conn_abort(struct agent *a, struct aconn *c, const char *why)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (!c->stdio && setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
		log_warn("SO_LINGER");
	conn_close(a, c, why);
}

/* Bytes the kernel still has to send on c's socket (0 for --stdio). */
static int
unsent(const struct aconn *c)
{
	int n = 0;

	return !c->stdio && ioctl(c->fd, TIOCOUTQ, &n) == 0 ? n : 0;
}

/* Flush c's queue; close on error or when a requested close has drained.
 * A closing c's deadline (conn_deadlines) starts again with each byte out. */
static int
conn_kick(struct agent *a, struct aconn *c)
{
	size_t queued = c->c.wq_bytes;
	int r = conn_flush(&c->c);

	if (c->closing && c->c.wq_bytes < queued)
		c->tx_ns = now_mono_ns();
	if (r < 0) {
		conn_close(a, c, c->c.err);
		return -1;
	}
	if (r == 1 && c->closing && c->peer_eof) {
		/* every answer is out and the peer sent its last: no input
		 * left to reset our close, nothing to linger for */
		conn_close(a, c, "peer closed the connection");
		return -1;
	}
	if (r == 1 && c->closing) {
		conn_linger(a, c, "closed after reply");
		return -1;
	}
	conn_interest(a, c);
	return 0;
}

/* Close c once its queued replies are out (conn_kick, then conn_linger);
 * a peer that takes none of them for AGENT_CLOSE_NS is cut.  -1 when c is
 * gone already. */
static int
conn_finish(struct agent *a, struct aconn *c)
{
	c->closing = 1;
	c->tx_ns = now_mono_ns();
	return conn_kick(a, c);
}

int
agent_reply(struct agent *a, struct aconn *c, uint64_t id, Knob__Envelope *env)
{
	(void)a;
	env->id = id;
	env->version = WIRE_VERSION;
	if (conn_send(&c->c, env) < 0) {
		c->overflow = 1;	/* conn_input closes it */
		return -1;
	}
	return 0;
}

/* The wire classification of each errno an agent replies with: the
 * controller acts on the kind, never on the message text. */
static const struct {
	int code;
	Knob__ErrorKind kind;
} error_kinds[] = {
	{ EACCES, KNOB__ERROR_KIND__ERROR_KIND_REFUSED },
	{ EBUSY, KNOB__ERROR_KIND__ERROR_KIND_BUSY },
	{ EAGAIN, KNOB__ERROR_KIND__ERROR_KIND_BUSY },
	{ EINVAL, KNOB__ERROR_KIND__ERROR_KIND_INVALID },
	{ EPROTO, KNOB__ERROR_KIND__ERROR_KIND_INVALID },
	{ ENOSYS, KNOB__ERROR_KIND__ERROR_KIND_UNSUPPORTED },
	{ ENOENT, KNOB__ERROR_KIND__ERROR_KIND_NOT_FOUND },
};

/* The kind an errno is sent as; FAILED for any other. */
static Knob__ErrorKind
error_kind(int code)
{
	for (size_t i = 0; i < nitems(error_kinds); i++)
		if (error_kinds[i].code == code)
			return error_kinds[i].kind;
	return KNOB__ERROR_KIND__ERROR_KIND_FAILED;
}

int
agent_reply_error(struct agent *a, struct aconn *c, uint64_t id, int code, const char *fmt, ...)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Error e = KNOB__ERROR__INIT;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e.code = code;
	e.kind = error_kind(code);
	e.message = msg;
	env.body_case = KNOB__ENVELOPE__BODY_ERROR;
	env.error = &e;
	return agent_reply(a, c, id, &env);
}

/* Queue p for the loop (any thread) and wake it; the loop frees p. */
static void
post_push(struct agent *a, struct agent_post *p)
{
	pthread_mutex_lock(&a->post_mu);
	if (a->posts_tail)
		a->posts_tail->next = p;
	else
		a->posts = p;
	a->posts_tail = p;
	pthread_mutex_unlock(&a->post_mu);
	ev_async_send(a->post_base, &a->wake);
}

/* Called from any thread: pack now, hand over to the loop via the eventfd. */
int
agent_post(struct agent *a, uint64_t conn_id, uint64_t id, Knob__Envelope *env)
{
	struct agent_post *p;

	env->id = id;
	env->version = WIRE_VERSION;
	p = xcalloc(1, sizeof(*p));
	p->conn_id = conn_id;
	if (frame_pack(env, &p->frame, &p->len) < 0) {
		free(p);
		return -1;
	}
	post_push(a, p);
	return 0;
}

void
agent_conn_hold(struct aconn *c)
{
	c->pending++;
}

/* A post without a frame: the release drain_posts counts. */
void
agent_conn_release(struct agent *a, uint64_t conn_id)
{
	struct agent_post *p = xcalloc(1, sizeof(*p));

	p->conn_id = conn_id;
	post_push(a, p);
}

void
agent_wake(struct agent *a)
{
	if (a->post_base != NULL)
		ev_async_send(a->post_base, &a->wake);
}

int
agent_ctl_addr_key(const struct sockaddr *sa, struct agent_ctl_addr *k)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

	memset(k, 0, sizeof(*k));
	if (sa->sa_family == AF_INET) {
		k->family = AF_INET;
		memcpy(k->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		k->family = AF_INET;
		memcpy(k->addr, s6->sin6_addr.s6_addr + 12, 4);
	} else if (sa->sa_family == AF_INET6) {
		k->family = AF_INET6;
		memcpy(k->addr, &s6->sin6_addr, 16);
	} else
		return -1;
	return 0;
}

/* The slot of a->ctl_addrs that holds k's address, else a free one
 * (n 0), else NULL.  Under ctl_mu. */
static struct agent_ctl_addr *
ctl_addr_slot(struct agent *a, const struct agent_ctl_addr *k)
{
	struct agent_ctl_addr *free_slot = NULL;

	for (int i = 0; i < AGENT_CTL_ADDRS; i++) {
		struct agent_ctl_addr *e = &a->ctl_addrs[i];

		if (e->n > 0 && e->family == k->family && memcmp(e->addr, k->addr, 16) == 0)
			return e;
		if (e->n == 0 && free_slot == NULL)
			free_slot = e;
	}
	return free_slot;
}

void
agent_ctl_addr_add(struct agent *a, const struct sockaddr *sa, struct agent_ctl_addr *key)
{
	struct agent_ctl_addr *e;

	if (agent_ctl_addr_key(sa, key) < 0)
		return;
	pthread_mutex_lock(&a->ctl_mu);
	if ((e = ctl_addr_slot(a, key)) != NULL) {
		if (e->n++ == 0) {
			e->family = key->family;
			memcpy(e->addr, key->addr, 16);
			agent_ctl_seen_note(a, e);
		}
	} else {
		agent_ctl_seen_note(a, key);	/* still protected as one seen */
		key->family = 0;	/* full: unrecorded */
	}
	pthread_mutex_unlock(&a->ctl_mu);
}

void
agent_ctl_addr_del(struct agent *a, const struct agent_ctl_addr *key)
{
	struct agent_ctl_addr *e;

	if (key->family == 0)
		return;
	pthread_mutex_lock(&a->ctl_mu);
	if ((e = ctl_addr_slot(a, key)) != NULL && e->n > 0)
		e->n--;
	pthread_mutex_unlock(&a->ctl_mu);
}

int
agent_ctl_addrs(struct agent *a, struct agent_ctl_addr *out)
{
	int n = 0;

	pthread_mutex_lock(&a->ctl_mu);
	for (int i = 0; i < AGENT_CTL_ADDRS; i++)
		if (a->ctl_addrs[i].n > 0)
			out[n++] = a->ctl_addrs[i];
	pthread_mutex_unlock(&a->ctl_mu);
	return n;
}

Knob__Envelope *
agent_req_take(struct aconn *c, Knob__Envelope *req)
{
	if (c->req == req)
		c->req = NULL;
	return req;
}

static struct aconn *
conn_find(struct agent *a, uint64_t id)
{
	struct aconn *c;

	for (c = a->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

/* Move posted frames onto their connections' write queues. */
static void
drain_posts(struct agent *a)
{
	struct agent_post *p, *next;

	pthread_mutex_lock(&a->post_mu);
	p = a->posts;
	a->posts = a->posts_tail = NULL;
	pthread_mutex_unlock(&a->post_mu);
	for (; p; p = next) {
		struct aconn *c;

		next = p->next;
		c = conn_find(a, p->conn_id);
		if (p->frame == NULL) {	/* a release: the last work item of an ended peer? */
			if (c != NULL && c->pending > 0 && --c->pending == 0 && c->peer_eof &&
			    !c->closing)
				conn_finish(a, c);
		} else if (c != NULL && !c->closing && !c->draining) {
			if (conn_queue_frame(&c->c, p->frame, p->len) < 0) {
				log_warnx("%s (%s): %s; closing", c->addr, c->peer, c->c.err);
				conn_close(a, c, c->c.err);
			} else
				conn_kick(a, c);
		} else
			free(p->frame);
		free(p);
	}
}

void
agent_conn_lease(struct agent *a, uint64_t conn_id, unsigned lease_s)
{
	struct aconn *c = conn_find(a, conn_id);

	if (c != NULL && !c->stdio)
		sock_lease(c->fd, lease_s);
}

/* Unread bytes wait in c's socket: a handshake step would advance it. */
static int
input_waiting(struct aconn *c)
{
	int n = 0;

	return !c->draining && ioctl(c->fd, FIONREAD, &n) == 0 && n > 0;
}

/* Has the peer of c sent anything yet (its ClientHello may be waiting in
 * the socket while the loop is busy accepting)? */
static int
sent_something(struct aconn *c)
{
	if (!c->got_byte && input_waiting(c))
		c->got_byte = 1;
	return c->got_byte;
}

/* How far the handshake of unauthenticated c got: -1 over (failed or
 * refused: c lingers only for its last words to get out), 0 nothing
 * received, 1 bytes but no ClientHello answered yet (also one accepted in
 * this wake-up of the listener: its ClientHello may be on its way), 2 our
 * ServerHello went out, 3 it went out resuming a session from one of our
 * tickets; 4 more when c comes from a controller's source (ctl_src.c).
 * Reaching 2 takes a well-formed ClientHello, and costs us a key
 * exchange and a signature, so it is ranked above what costs a byte; 3
 * takes a ticket we gave an authenticated controller (a flood from any
 * number of addresses cannot make one: only a replay of a ClientHello
 * seen on the wire can), so it is ranked above a flood of answered
 * handshakes; a controller's source, configured or one a controller
 * authenticated from, above anything a flood from elsewhere can make. */
static int
hs_progress(struct agent *a, struct aconn *c)
{
	int lvl;

	if (c->draining || c->closing)
		return -1;
	if (c->hello_done)
		lvl = 2 + (SSL_session_reused(c->c.ssl) == 1);
	else
		lvl = sent_something(c) || c->accept_gen == a->accept_gen;
	return c->from_ctl || agent_ctl_host_known(a, c->host) ? lvl + 4 : lvl;
}

/* Which unauthenticated connection goes first when the budget is full:
 * the least advanced handshake (hs_progress), the oldest among equals. */
static int
evict_before(struct agent *a, struct aconn *x, struct aconn *y)
{
	int px = hs_progress(a, x), py = hs_progress(a, y);

	if (px != py)
		return px < py;
	return x->accept_ns < y->accept_ns;
}

/* qsort order of unauthenticated connections: by source (host). */
static int
host_order(const void *x, const void *y)
{
	return strcmp((*(struct aconn *const *)x)->host, (*(struct aconn *const *)y)->host);
}

/* The one of the n unauthenticated connections at hs_progress level (2,
 * 3 or more: answered; none is below it) that makes room: from the source
 * holding the most of them, the oldest among equals.  A flood of
 * ClientHellos it never goes on with, from many addresses, holds several
 * places per address; a controller, one or two; so it is the flood's that go, each in its turn
 * (none is kept past the handshake deadline), while the controller's next
 * flight takes its round trip.  Sorting keeps this at n log n. */
static struct aconn *
busiest_source_oldest(struct agent *a, unsigned n, int level)
{
	struct aconn **v = xcalloc(n, sizeof(*v)), *c, *best = NULL;
	unsigned k = 0, best_run = 0;

	for (c = a->conns; c && k < n; c = c->next)
		if (!c->authed && hs_progress(a, c) == level)
			v[k++] = c;
	qsort(v, k, sizeof(*v), host_order);
	for (unsigned i = 0, j; i < k; i = j) {
		struct aconn *old = v[i];

		for (j = i + 1; j < k && strcmp(v[j]->host, v[i]->host) == 0; j++)
			if (v[j]->accept_ns < old->accept_ns)
				old = v[j];
		if (j - i > best_run || (j - i == best_run && old->accept_ns < best->accept_ns)) {
			best_run = j - i;
			best = old;
		}
	}
	free(v);
	return best;
}

/* Room for one more unauthenticated connection from host: 0, or -1 when
 * host already has its share (the newcomer is refused).  When the whole
 * budget is used, the least advanced one (evict_before; among answered
 * handshakes, busiest_source_oldest) is closed; but one whose bytes wait
 * unread (a controller's ClientHello, come while this wake-up was
 * accepting, or its next flight after our ServerHello) first gets the
 * handshake step it is due, so that a busy loop never drops it for being
 * late to read it.  A few such steps per newcomer at most: each reads what
 * waits. */
static int
unauth_room(struct agent *a, const char *host)
{
	unsigned max = a->cfg.max_unauth > 0 ? (unsigned)a->cfg.max_unauth : 64;
	unsigned per = a->cfg.max_unauth_per_addr > 0 ?
	    (unsigned)a->cfg.max_unauth_per_addr : 8;

	for (int steps = 0;; steps++) {
		unsigned n = 0, same = 0;
		struct aconn *c, *oldest = NULL;

		for (c = a->conns; c; c = c->next) {
			if (c->authed)
				continue;
			n++;
			same += strcmp(c->host, host) == 0;
			if (oldest == NULL || evict_before(a, c, oldest))
				oldest = c;
		}
		if (same >= per) {
			log_debug("refusing a connection from %s: %u unauthenticated from that "
			    "address already", host, same);
			a->refused++;	/* summarised once a second (a flood must not flood the log) */
			return -1;
		}
		if (n < max || oldest == NULL)
			return 0;
		if (hs_progress(a, oldest) >= 2)
			oldest = busiest_source_oldest(a, n, hs_progress(a, oldest));
		if (steps < 8 && hs_progress(a, oldest) >= 0 && input_waiting(oldest)) {
			log_debug("%u unauthenticated connections: reading what %s sent first",
			    n, oldest->addr);
			conn_event(a, oldest, EPOLLIN);	/* may close it */
			continue;
		}
		log_debug("%u unauthenticated connections: dropping the least advanced, from %s",
		    n, oldest->addr);
		a->evicted++;
		conn_close(a, oldest, NULL);
		return 0;
	}
}

/* The source a per-address budget counts for sa, into host (numeric): the
 * address, but an IPv6 address's /64 prefix (as "PREFIX/64"), since one
 * host commonly has a whole /64 to pick its source address from. */
static void
budget_source(const struct sockaddr *sa, const char *numeric, char *host, size_t len)
{
	struct in6_addr a6;
	char buf[INET6_ADDRSTRLEN];

	snprintf(host, len, "%s", numeric);
	if (sa->sa_family != AF_INET6)
		return;
	a6 = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	if (IN6_IS_ADDR_V4MAPPED(&a6))
		return;
	memset(a6.s6_addr + 8, 0, 8);
	if (inet_ntop(AF_INET6, &a6, buf, sizeof(buf)) != NULL)
		snprintf(host, len, "%s/64", buf);
}

/* Take accepted connection fd into the instance: budget, socket options,
 * its TLS state.  The instance owns fd.  The connection, or NULL (refused,
 * closed). */
static struct aconn *
conn_start(struct agent *a, int fd, const struct sockaddr *sa, socklen_t sl)
{
	char host[64] = "?", serv[16] = "?", source[64];
	struct aconn *c;
	SSL *ssl;

	getnameinfo(sa, sl, host, sizeof(host), serv, sizeof(serv),
	    NI_NUMERICHOST | NI_NUMERICSERV);
	budget_source(sa, host, source, sizeof(source));
	if (unauth_room(a, source) < 0) {
		close(fd);
		return NULL;
	}
	/* set on the listener: asked of the first connection, and set on each
	 * only if the kernel did not pass them on (six system calls saved) */
	if (a->conn_opts == 0)
		a->conn_opts = conn_opts_inherited(fd) ? 1 : -1;
	if (a->conn_opts < 0)
		sock_conn_opts(fd);
	ssl = SSL_new(a->ssl_ctx);
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
		log_warnx("SSL_new failed");
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->a = a;
	c->id = a->next_conn_id++;
	c->fd = fd;
	c->handshaking = 1;
	c->accept_ns = c->last_rx_ns = now_mono_ns();
	c->accept_gen = a->accept_gen;
	snprintf(c->addr, sizeof(c->addr), "%s:%s", host, serv);
	snprintf(c->host, sizeof(c->host), "%s", source);
	c->from_ctl = agent_ctl_from_match(a, sa);
	conn_init(&c->c, fd, fd, ssl);
	c->next = a->conns;
	if (a->conns)
		a->conns->prev = c;
	a->conns = c;
	ev_io_add(a->base, fd, EPOLLIN, on_conn, c);
	log_debug("connection %llu from %s", (unsigned long long)c->id, c->addr);
	return c;
}

/* A connection just accepted: its first handshake step at once when its
 * peer has sent something (the ClientHello of a controller is there
 * before a flood's later accepts could push it out), as if it had been
 * reported readable: a handshake that completes in that step (the peer
 * answered meanwhile) goes on to read what came with it. */
static void
conn_first_step(struct agent *a, struct aconn *c)
{
	if (sent_something(c))
		conn_event(a, c, EPOLLIN);	/* may close c */
}

/* Accept pending connections (at most ACCEPT_BATCH per wake-up, so that
 * a flood of connects cannot starve the handshakes and requests already
 * accepted; the listener stays readable) and start their TLS handshakes.
 * Out of descriptors, the waiting ones are refused (counted in the
 * summary) rather than left to keep the listener readable. */
static void
accept_conns(struct agent *a)
{
	a->accept_gen++;
	for (int batch = 0; batch < ACCEPT_BATCH; batch++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct aconn *c;
		int fd;

		fd = accept4(a->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int r = listen_failed(&a->lpause, errno);

			if (r == 0)
				return;
			a->nofile += r == 2;
			continue;
		}
		listen_accepted(&a->lpause);
		if ((c = conn_start(a, fd, (struct sockaddr *)&ss, sl)) != NULL)
			conn_first_step(a, c);
	}
}

int
agent_adopt(struct agent *a, int fd, const struct sockaddr *sa, socklen_t salen)
{
	struct aconn *c;

	log_set_instance(a->node);
	if ((c = conn_start(a, fd, sa, salen)) != NULL) {
		c->got_byte = 1;	/* its ClientHello is waiting */
		conn_first_step(a, c);
	}
	event_done(a);
	return c != NULL ? 0 : -1;
}

/* A handshake of c failed or was abandoned: logged at debug level, counted
 * for the summary with the last one's reason (a flood of them must not
 * flood the log). */
static void
hs_failed(struct agent *a, struct aconn *c, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	log_debug("%s: %s", c->addr, why);
	a->hs_failed++;
	snprintf(a->hs_last, sizeof(a->hs_last), "%s: %s", c->addr, why);
}

/* Record c's local address among the controllers' (TCP only). */
static void
conn_record_local(struct agent *a, struct aconn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (!c->stdio && getsockname(c->fd, (struct sockaddr *)&ss, &sl) == 0)
		agent_ctl_addr_add(a, (struct sockaddr *)&ss, &c->ctl);
}

/* Authenticated controllers have their own cap: 0, or -1 when full. */
static int
auth_room(struct agent *a)
{
	unsigned max = a->cfg.max_conns > 0 ? (unsigned)a->cfg.max_conns : 256, n = 0;

	for (struct aconn *c = a->conns; c; c = c->next)
		n += c->authed;
	return n < max ? 0 : -1;
}

/* Advance the handshake; once done, insist on the controller role. */
static int
conn_handshake(struct agent *a, struct aconn *c)
{
	char ou[64], err[512];
	int r, e;

	ERR_clear_error();
	r = SSL_accept(c->c.ssl);
	if (r != 1) {
		e = SSL_get_error(c->c.ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			c->c.ssl_want_write = (e == SSL_ERROR_WANT_WRITE);
			c->hello_done |= BIO_number_written(SSL_get_wbio(c->c.ssl)) > 0;
			conn_interest(a, c);
			return 0;
		}
		tls_errstr(err, sizeof(err));
		if (SSL_get_verify_result(c->c.ssl) != X509_V_OK)
			hs_failed(a, c, "TLS handshake failed: peer certificate: %s",
			    X509_verify_cert_error_string(SSL_get_verify_result(c->c.ssl)));
		else
			hs_failed(a, c, "TLS handshake failed: %s", err);
		conn_linger(a, c, "handshake failed");
		return -1;
	}
	c->c.ssl_want_write = 0;
	if (tls_peer_identity(c->c.ssl, c->peer, sizeof(c->peer), ou, sizeof(ou)) < 0) {
		log_warnx("%s: peer certificate not verified", c->addr);
		conn_close(a, c, NULL);
		return -1;
	}
	if (strcmp(ou, KNOB_ROLE_CONTROLLER) != 0) {
		log_warnx("%s: refusing peer '%s': certificate role '%s' is not '%s'", c->addr,
		    c->peer, ou, KNOB_ROLE_CONTROLLER);
		/* Say why before closing; nothing from this peer is ever served. */
		c->handshaking = 0;
		agent_reply_error(a, c, 0, EACCES, "certificate of '%s' has role '%s'; only a "
		    "'%s' certificate may command this agent", c->peer, ou, KNOB_ROLE_CONTROLLER);
		conn_finish(a, c);
		return -1;
	}
	c->handshaking = 0;
	if (auth_room(a) < 0) {
		log_warnx("%s: refusing controller '%s': %d controllers connected", c->addr,
		    c->peer, a->cfg.max_conns > 0 ? a->cfg.max_conns : 256);
		agent_reply_error(a, c, 0, EBUSY, "too many controllers connected");
		conn_finish(a, c);
		return -1;
	}
	c->authed = 1;
	agent_ctl_host_note(a, c->host);
	conn_record_local(a, c);
	log_info("controller %s connected from %s", c->peer, c->addr);
	conn_interest(a, c);
	return 0;
}

/* The peer of c ended its input (EOF, or TLS close_notify) after whole
 * frames: read no more, tell the subsystems its controller went away (as
 * a close would: phases abort, waits for the tuning lock give up), and
 * close once the work still running for its requests (c->pending) has
 * posted its replies and they are out, so that a peer that half-closes
 * after its last request (printf ... | ssh node knobd --stdio) gets every
 * answer. */
static void
conn_peer_eof(struct agent *a, struct aconn *c)
{
	log_debug("connection %llu from %s: end of input; %u request(s) still running",
	    (unsigned long long)c->id, c->addr, c->pending);
	c->peer_eof = 1;
	c->more_input = 0;
	if (c->stdio)	/* a pipe at its end stays readable (EPOLLHUP) */
		ev_io_del(a->base, 0);
	agent_subsys_conn_closed(a, c->id);	/* c stays: subsystems only post */
	if (c->pending == 0 && !c->closing)
		conn_finish(a, c);
	else
		conn_kick(a, c);
}

/* Read and dispatch the complete frames available on c, FRAMES_PER_TURN
 * at most, then write the answers: a peer that sends frames as fast as the
 * loop answers them must not keep it from the others, nor see its answers
 * pile up unwritten until they count as a peer that does not read.  The
 * rest waits for c's next turn (c->more_input: from the timer, after the
 * other connections' events; OpenSSL may hold them, which epoll would not
 * report). */
static void
conn_input(struct agent *a, struct aconn *c)
{
	Knob__Envelope *env;
	int r;

	for (int n = 0;; n++) {
		if (n == FRAMES_PER_TURN) {
			c->more_input = 1;
			break;
		}
		r = conn_recv(&c->c, &env);
		if (r == 0)
			break;
		if (r < 0 && c->c.peer_closed && c->c.hdr_have == 0) {
			conn_peer_eof(a, c);
			return;
		}
		if (r < 0) {
			if (!c->c.peer_closed) {
				log_warnx("%s (%s): %s; closing", c->addr,
				    c->peer[0] ? c->peer : "-", c->c.err);
				a->session_failed |= c->stdio;
			}
			conn_close(a, c, c->c.err);
			return;
		}
		if (c->closing) {	/* refused or finishing: serve nothing more */
			knob__envelope__free_unpacked(env, NULL);
			continue;
		}
		c->last_rx_ns = now_mono_ns();
		agent_subsys_conn_activity(a, c->id);
		c->req = env;	/* the loop's, unless agent_work takes it */
		r = agent_dispatch(a, c, env);
		if (c->req)
			knob__envelope__free_unpacked(c->req, NULL);
		c->req = NULL;
		if (c->overflow) {
			log_warnx("%s (%s): %s; closing", c->addr, c->peer, c->c.err);
			conn_close(a, c, c->c.err);
			return;
		}
		if (r < 0) {	/* a message the agent does not take */
			a->session_failed |= c->stdio;
			conn_finish(a, c);
			return;
		}
	}
	conn_kick(a, c);
}

/* One connection event. */
static void
conn_event(struct agent *a, struct aconn *c, uint32_t events)
{
	if (c->draining) {
		conn_drain(a, c);
		return;
	}
	if (c->peer_eof) {	/* only writes; a reset or hang-up ends it */
		if (events & (EPOLLERR | EPOLLHUP))
			conn_close(a, c, "connection reset after the peer's end of input");
		else if (events & EPOLLOUT)
			conn_kick(a, c);
		return;
	}
	if (c->handshaking) {
		c->got_byte |= (events & EPOLLIN) != 0;
		if (events & (EPOLLERR | EPOLLHUP)) {
			hs_failed(a, c, "hang-up during handshake");
			conn_close(a, c, NULL);
			return;
		}
		if (conn_handshake(a, c) < 0 || c->handshaking)
			return;
		/* fall through: data may already be buffered */
	}
	if (events & EPOLLOUT) {
		if (conn_kick(a, c) < 0)
			return;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		conn_input(a, c);
}

/* When the timer must run for the connections: at once for one whose
 * frames wait for their next turn, TICK_NS while one has a deadline;
 * UINT64_MAX when none needs it. */
static uint64_t
conns_need_timer(const struct agent *a)
{
	uint64_t after = UINT64_MAX;

	for (const struct aconn *c = a->conns; c; c = c->next) {
		if (c->more_input)
			return 0;
		if (c->handshaking || c->draining || c->closing)
			after = TICK_NS;
	}
	return after;
}

/* The next turn of the connections whose frames were more than a turn's. */
static void
conns_next_turn(struct agent *a)
{
	struct aconn *c, *next;

	for (c = a->conns; c; c = next) {
		next = c->next;	/* c's turn may close c, never another */
		if (c->more_input) {
			c->more_input = 0;
			conn_event(a, c, EPOLLIN);
		}
	}
}

/* Drop handshakes and lingering connections past their deadlines. */
static void
conn_deadlines(struct agent *a, uint64_t now)
{
	uint64_t first = a->cfg.handshake_s ? a->cfg.handshake_s * 1000000000ull :
	    AGENT_FIRST_BYTE_NS;
	uint64_t all = a->cfg.handshake_s ? a->cfg.handshake_s * 1000000000ull :
	    AGENT_HANDSHAKE_NS;
	struct aconn *c, *next;

	for (c = a->conns; c; c = next) {
		next = c->next;
		if (c->handshaking && !c->got_byte && now - c->accept_ns > first) {
			log_debug("%s: nothing received in %llu s; closing", c->addr,
			    (unsigned long long)(first / 1000000000ull));
			conn_close(a, c, NULL);
		} else if (c->handshaking && now - c->accept_ns > all) {
			hs_failed(a, c, "TLS handshake not done in %llu s; closing",
			    (unsigned long long)(all / 1000000000ull));
			conn_close(a, c, NULL);
		} else if (c->closing && !c->draining && now - c->tx_ns > AGENT_CLOSE_NS) {
			log_warnx("%s (%s): its last replies not read in %llu s; resetting the "
			    "connection", c->addr, c->peer[0] ? c->peer : "-",
			    (unsigned long long)(AGENT_CLOSE_NS / 1000000000ull));
			conn_abort(a, c, "last replies not read");
		} else if (c->draining && now - c->last_rx_ns > AGENT_CLOSE_NS) {
			if (unsent(c) > 0)	/* its peer does not read: no orphan goes on */
				conn_abort(a, c, NULL);
			else
				conn_close(a, c, NULL);
		}
	}
}

/* Has anything happened before authentication since the last summary? */
static int
unauth_news(const struct agent *a)
{
	return a->refused || a->evicted || a->hs_failed || a->nofile;
}

/* Once a second, and at shutdown: what happened before authentication, in
 * one line. */
static void
unauth_summary(struct agent *a)
{
	if (unauth_news(a))
		log_warnx("before authentication: refused %u connection(s) over the per-address "
		    "limit and %u out of file descriptors, dropped %u over the budget (least "
		    "advanced first), %u handshake(s) failed or abandoned%s%s", a->refused,
		    a->nofile, a->evicted, a->hs_failed, a->hs_failed ? "; the last: " : "",
		    a->hs_failed ? a->hs_last : "");
	a->refused = a->evicted = a->hs_failed = a->nofile = 0;
}

/* The timer: deadlines every TICK_NS; once a second the summary of what
 * happened before authentication and the subsystems' ticks. */
static void
on_timer(void *arg)
{
	struct agent *a = arg;
	uint64_t now;

	log_set_instance(a->node);
	conns_next_turn(a);
	/* read after those turns: one that starts a deadline (a linger) stamps
	 * it later than a clock read before, and now - stamp would wrap */
	now = now_mono_ns();
	conn_deadlines(a, now);
	if (now - a->last_tick_ns >= SUBSYS_TICK_NS) {
		a->last_tick_ns = now;
		unauth_summary(a);
		agent_subsys_tick(a);
	}
	agent_timer_update(a);
	log_set_instance(NULL);
}

void
agent_timer_update(struct agent *a)
{
	uint64_t now, after;

	if (a->base == NULL)
		return;
	after = conns_need_timer(a);
	if (after == UINT64_MAX && (unauth_news(a) || agent_subsys_wants_tick(a))) {
		now = now_mono_ns();
		after = now - a->last_tick_ns >= SUBSYS_TICK_NS ? 0 :
		    SUBSYS_TICK_NS - (now - a->last_tick_ns);
	}
	if (after == UINT64_MAX) {
		ev_timer_del(a->base, &a->timer);
		return;
	}
	if (!a->timer.armed || a->timer.when_ns > now_mono_ns() + after)
		ev_timer_set(a->base, &a->timer, after, on_timer, a);
}

/* An event callback's last step: the timer follows what it changed. */
static void
event_done(struct agent *a)
{
	agent_timer_update(a);
	log_set_instance(NULL);
}

/* The listener is readable. */
static void
on_agent_fd(int fd, uint32_t events, void *arg)
{
	struct agent *a = arg;

	(void)fd;
	(void)events;
	log_set_instance(a->node);
	accept_conns(a);
	event_done(a);
}

/* Workers posted replies (ev_async). */
static void
on_posts(void *arg)
{
	struct agent *a = arg;

	log_set_instance(a->node);
	drain_posts(a);
	event_done(a);
}

/* knobd's signalfd (cfg.stop_fd): SIGHUP is logged and ignored (the agent
 * has nothing to reload: a HUP sent out of habit must not leave it down
 * with exit status 0, which Restart=on-failure does not restart); any
 * other signal shuts down. */
static void
on_stop(int fd, uint32_t events, void *arg)
{
	struct agent *a = arg;
	struct signalfd_siginfo si;

	(void)events;
	log_set_instance(a->node);
	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si) && si.ssi_signo == SIGHUP)
		log_info("SIGHUP: nothing to reload (certificates and settings are read at "
		    "start-up; restart knobd to change them); going on");
	else {
		log_info("shutting down");
		a->stop = 1;
	}
	log_set_instance(NULL);
}

/* An event on a connection. */
static void
on_conn(int fd, uint32_t events, void *arg)
{
	struct aconn *c = arg;
	struct agent *a = c->a;

	(void)fd;
	log_set_instance(a->node);
	conn_event(a, c, events);	/* may free c */
	event_done(a);
}

int
agent_run(struct agent *a)
{
	while (!a->stop)
		if (ev_run_once(a->base, -1) < 0)
			return -1;
	return 0;
}

/* --stdio's fd 1 is writable again (flush), or its reader is gone. */
static void
on_stdout(int fd, uint32_t events, void *arg)
{
	struct aconn *c = arg;
	struct agent *a = c->a;

	(void)fd;
	if (events & (EPOLLERR | EPOLLHUP))
		conn_close(a, c, "standard output closed");
	else
		conn_kick(a, c);
	event_done(a);
}

/* The parent of pid, from /proc/PID/stat (after the command's last ')'),
 * or -1. */
static long
proc_parent(long pid)
{
	char path[64], buf[1024], *e;
	long ppid;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (read_small_file(path, buf, sizeof(buf)) < 0 || (e = strrchr(buf, ')')) == NULL ||
	    sscanf(e + 1, " %*c %ld", &ppid) != 1)
		return -1;
	return ppid;
}

/* SSH_CONNECTION's value as an ancestor of this process was started with,
 * nearest first, up to 16 levels below init: sudo's env_reset drops it from
 * knobd's environment but not from sudo's own or the shell's sshd started.
 * Into buf; 0, or -1 when no ancestor has it.  A forged one can only add
 * an interface that globs keep off, never take one away. */
static int
ancestor_ssh_connection(char *buf, size_t len)
{
	static const char key[] = "SSH_CONNECTION=";
	long pid = (long)getppid();

	for (int depth = 0; depth < 16 && pid > 1; depth++, pid = proc_parent(pid)) {
		char path[64], *env = NULL;
		size_t n = 0;

		snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
		if (read_file_bounded(path, 1u << 20, &env, &n) < 0)
			continue;
		for (char *p = env; p < env + n; p += strlen(p) + 1)
			if (strncmp(p, key, sizeof(key) - 1) == 0) {
				str_copy(buf, p + sizeof(key) - 1, len);
				free(env);
				return 0;
			}
		free(env);
	}
	return -1;
}

/* The local address of the SSH connection a --stdio session runs over
 * (sshd's SSH_CONNECTION: "CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT",
 * from knobd's environment, else from an ancestor's: a sudo in between),
 * recorded as an authenticated controller connection's local address
 * (agent_ctl_addr_add, into c->ctl): the net driver then keeps a glob off
 * the interface the session arrives on, as for a TLS controller.  Nothing
 * when no process up to init has it (not under sshd) or it is malformed;
 * an IPv6 zone ("%eth0") is left out. */
static void
stdio_ssh_addr(struct agent *a, struct aconn *c)
{
	const char *e = getenv("SSH_CONNECTION");
	char anc[256];
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	char ip[INET6_ADDRSTRLEN + 32];

	memset(&ss, 0, sizeof(ss));
	if (e == NULL && ancestor_ssh_connection(anc, sizeof(anc)) == 0)
		e = anc;
	if (e == NULL || sscanf(e, "%*s %*s %77s %*s", ip) != 1)
		return;
	ip[strcspn(ip, "%")] = '\0';
	if (inet_pton(AF_INET, ip, &s4->sin_addr) == 1)
		s4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, ip, &s6->sin6_addr) == 1)
		s6->sin6_family = AF_INET6;
	else
		return;
	agent_ctl_addr_add(a, (struct sockaddr *)&ss, &c->ctl);
	log_debug("stdio: the SSH connection arrives at %s%s", ip, e == anc ? " (from an ancestor "
	    "process's SSH_CONNECTION)" : "");
}

/* Serve one plaintext session on stdin/stdout (for SSH exec channels); the
 * loop ends with the session.  -1 when it ended on a protocol error (a
 * malformed frame, a message the agent does not take). */
int
agent_run_stdio(struct agent *a)
{
	struct aconn *c;
	struct stat st;
	int ifl = fcntl(0, F_GETFL), ofl = -1;

	set_nonblock(0);
	/* output too, when it is a pipe or socket (sshd's exec channel): a
	 * reader that stops reading must not stop the loop (its timers, its
	 * signals) in write(2); its flags come back when the session ends */
	if (fstat(1, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) &&
	    (ofl = fcntl(1, F_GETFL)) >= 0 && fcntl(1, F_SETFL, ofl | O_NONBLOCK) < 0)
		ofl = -1;
	c = xcalloc(1, sizeof(*c));
	c->a = a;
	c->id = a->next_conn_id++;
	c->fd = 0;
	c->stdio = 1;
	snprintf(c->addr, sizeof(c->addr), "stdio");
	snprintf(c->peer, sizeof(c->peer), "stdio");
	c->authed = 1;	/* the SSH session authenticated it */
	stdio_ssh_addr(a, c);
	conn_init(&c->c, 0, 1, NULL);
	a->conns = c;
	if (ev_io_add(a->base, 0, EPOLLIN, on_conn, c) < 0) {
		log_warn("epoll on stdin");
		return -1;
	}
	/* EPERM: a regular file or the like, never full */
	c->out_watched = ev_io_add(a->base, 1, 0, on_stdout, c) == 0;
	while (!a->stop && a->conns != NULL)
		if (ev_run_once(a->base, -1) < 0)
			break;
	if (ofl >= 0)
		(void)fcntl(1, F_SETFL, ofl);
	if (ifl >= 0)	/* last: fd 0 and fd 1 may share their flags */
		(void)fcntl(0, F_SETFL, ifl);
	if (a->session_failed)
		return -1;
	return a->stop || a->conns == NULL ? 0 : -1;
}

int
agent_fini(struct agent *a)
{
	struct agent_post *p, *next;
	int busy;

	log_set_instance(a->node);
	while (a->conns)
		conn_close(a, a->conns, NULL);	/* aborts running phases */
	unauth_summary(a);	/* what came after the last one (knob-sim sums its agents' first) */
	agent_subsys_stop(a);
	busy = agent_work_wait(a, (int)a->fini_wait_s) < 0;
	if (busy)	/* the items still use the instance: leave it allocated */
		log_warnx("leaving the subsystems' state to the work items still running");
	else
		agent_subsys_fini(a);
	for (p = a->posts; p && !busy; p = next) {
		next = p->next;
		free(p->frame);
		free(p);
	}
	if (a->base) {
		ev_timer_del(a->base, &a->timer);
		listen_pause_stop(&a->lpause);
		ev_io_del(a->base, a->lfd);
		if (!busy)	/* a late agent_post still sends it */
			ev_async_del(a->base, &a->wake);
		ev_io_del(a->base, a->cfg.stop_fd);
	}
	if (a->lfd >= 0)
		close(a->lfd);
	if (!busy)	/* ... to the base, which stays */
		ev_base_free(a->own_base);
	a->base = a->own_base = NULL;
	SSL_CTX_free(a->ssl_ctx);
	a->ssl_ctx = NULL;
	if (!busy) {
		work_pool_free(a->own_pool);
		pthread_cond_destroy(&a->work_cv);
		pthread_mutex_destroy(&a->post_mu);
		pthread_mutex_destroy(&a->ctl_mu);
		pthread_mutex_destroy(&a->ctl_src_mu);
	}
	log_set_instance(NULL);
	return busy ? -1 : 0;
}
