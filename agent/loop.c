/* knobd's event loop: one non-blocking epoll loop per agent instance.
 * Each controller connection runs its own small state machine
 * (TLS handshake -> open -> closing).  Work that may block (tuning,
 * benchmarks) runs on the worker pool (work.c) and comes back through
 * agent_post().
 *
 * Limits before trust: connections that have not authenticated have their
 * own budget (cfg.max_unauth, default 64; at most cfg.max_unauth_per_addr,
 * default 8, from one source address), 2 s for the first byte of the
 * ClientHello and 5 s for the whole handshake.  When the budget is full the
 * oldest unauthenticated connection makes room for the new one (one that
 * has sent nothing goes before one that is talking TLS), so a flood cannot
 * keep a controller out; authenticated controllers count against
 * cfg.max_conns only. */
#include <errno.h>
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
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <openssl/err.h>

#include "agent.h"
#include "log.h"
#include "tls.h"
#include "util.h"

#define TICK_NS (250ull * 1000000ull)	/* timer period: handshake deadlines */
#define ACCEPT_BATCH 64			/* accepts per listener wake-up */

/* Tags for the non-connection fds in epoll data (never valid pointers). */
#define TAG_LISTEN ((void *)(uintptr_t)1)
#define TAG_EVENT ((void *)(uintptr_t)2)
#define TAG_TIMER ((void *)(uintptr_t)3)
#define TAG_STOP ((void *)(uintptr_t)4)

int
agent_path(const struct agent *a, char *buf, size_t len, const char *abs)
{
	return path_under_root(buf, len, a->sysroot, abs);
}

/* Parse "ADDR:PORT", "[V6]:PORT", ":PORT" or "PORT" and bind a listener. */
static int
listen_on(const char *spec, char *err, size_t errlen)
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
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0)
			break;
		snprintf(err, errlen, "listen on '%s': %s", spec, strerror(errno));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* Set up the instance: TLS context, node name, listener, epoll, subsystems.
 * Journal recovery (tune_init) happens here, before anything is served. */
int
agent_init(struct agent *a, const struct agent_cfg *cfg)
{
	struct epoll_event ev;
	struct itimerspec its;
	char err[512], ou[64];

	memset(a, 0, sizeof(*a));
	a->cfg = *cfg;
	a->epfd = a->lfd = a->evfd = a->tfd = -1;
	a->next_conn_id = 1;
	pthread_mutex_init(&a->post_mu, NULL);
	pthread_cond_init(&a->workers_cv, NULL);
	snprintf(a->sysroot, sizeof(a->sysroot), "%s",
	    (cfg->sysroot && strcmp(cfg->sysroot, "/") != 0) ? cfg->sysroot : "");
	while (a->sysroot[0] && a->sysroot[strlen(a->sysroot) - 1] == '/')
		a->sysroot[strlen(a->sysroot) - 1] = '\0';
	snprintf(a->state_dir, sizeof(a->state_dir), "%s",
	    cfg->state_dir ? cfg->state_dir : "/var/lib/knob");

	if (!cfg->stdio) {
		a->ssl_ctx = tls_ctx_new(1, cfg->ca, cfg->cert, cfg->key, err, sizeof(err));
		if (a->ssl_ctx == NULL) {
			log_err("%s", err);
			return -1;
		}
		/* idle connections do not keep 34 KiB TLS buffers each */
		SSL_CTX_set_mode(a->ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
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

	a->pool = cfg->pool;
	if (a->pool == NULL && (a->pool = a->own_pool = work_pool_new(WORK_THREADS,
	    WORK_QUEUE_MAX)) == NULL)
		return -1;
	if (tune_init(a) < 0) {
		log_err("tuning journal recovery failed; refusing to serve");
		return -1;
	}
	if (bench_init(a) < 0 || health_init(a) < 0)
		return -1;

	a->epfd = epoll_create1(EPOLL_CLOEXEC);
	a->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	a->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (a->epfd < 0 || a->evfd < 0 || a->tfd < 0) {
		log_warn("epoll/eventfd/timerfd");
		return -1;
	}
	memset(&its, 0, sizeof(its));
	its.it_value.tv_nsec = (long)TICK_NS;
	its.it_interval.tv_nsec = (long)TICK_NS;
	timerfd_settime(a->tfd, 0, &its, NULL);
	ev.events = EPOLLIN;
	ev.data.ptr = TAG_EVENT;
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->evfd, &ev);
	ev.data.ptr = TAG_TIMER;
	epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->tfd, &ev);
	if (cfg->stop_fd >= 0) {
		ev.data.ptr = TAG_STOP;
		epoll_ctl(a->epfd, EPOLL_CTL_ADD, cfg->stop_fd, &ev);
	}
	if (!cfg->stdio) {
		a->lfd = listen_on(cfg->listen, err, sizeof(err));
		if (a->lfd < 0) {
			log_err("%s", err);
			return -1;
		}
		ev.data.ptr = TAG_LISTEN;
		epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->lfd, &ev);
		log_info("node %s listening on %s (sysroot '%s', state %s)", a->node,
		    cfg->listen ? cfg->listen : "0.0.0.0:7420", a->sysroot, a->state_dir);
	}
	return 0;
}

/* Keepalive probes and TCP_USER_TIMEOUT, so that a cut link ends the
 * connection: unacknowledged data or unanswered probes for twice the
 * lease close it. */
static void
sock_lease(int fd, unsigned lease_s)
{
	int one = 1, idle = lease_s > 2 ? (int)lease_s / 2 : 1, intvl = 1, cnt = 3;
	unsigned ms = 2 * lease_s * 1000;

	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms)) < 0)
		log_warn("keepalive/TCP_USER_TIMEOUT");
}

/* Update the epoll interest of c: always input, output while queued. */
static void
conn_interest(struct agent *a, struct aconn *c)
{
	struct epoll_event ev;

	ev.events = EPOLLIN;
	if (c->c.wq_head != NULL || c->c.ssl_want_write)
		ev.events |= EPOLLOUT;
	ev.data.ptr = c;
	epoll_ctl(a->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Remove c from the loop, tell the subsystems, free it. */
static void
conn_close(struct agent *a, struct aconn *c, const char *why)
{
	if (why)
		log_info("connection %llu from %s (%s) closed: %s", (unsigned long long)c->id,
		    c->addr, c->peer[0] ? c->peer : "-", why);
	epoll_ctl(a->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (c->prev)
		c->prev->next = c->next;
	else
		a->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	bench_conn_closed(a, c->id);
	conn_reset(&c->c);
	if (c->c.rfd != 0)	/* never close stdin in --stdio mode */
		close(c->fd);
	free(c);
}

/* Half-close c and discard what the peer still sends until it closes (or
 * 2 s pass), so that our last words (a TLS alert, an Error frame) reach it
 * instead of being destroyed by a reset from unread input at close(). */
static void
conn_linger(struct agent *a, struct aconn *c, const char *why)
{
	struct epoll_event ev;

	if (why)
		log_debug("connection %llu from %s: %s; lingering", (unsigned long long)c->id,
		    c->addr, why);
	if (c->c.rfd == 0) {	/* --stdio: nothing to linger on */
		conn_close(a, c, why);
		return;
	}
	shutdown(c->fd, SHUT_WR);
	c->draining = 1;
	c->handshaking = 0;
	c->last_rx_ns = now_mono_ns();
	ev.events = EPOLLIN;
	ev.data.ptr = c;
	epoll_ctl(a->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Read and drop input on a lingering connection; close at EOF. */
static void
conn_drain(struct agent *a, struct aconn *c)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(c->fd, buf, sizeof(buf))) > 0)
		;
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		conn_close(a, c, NULL);
}

/* Flush c's queue; close on error or when a requested close has drained. */
static int
conn_kick(struct agent *a, struct aconn *c)
{
	int r = conn_flush(&c->c);

	if (r < 0) {
		conn_close(a, c, c->c.err);
		return -1;
	}
	if (r == 1 && c->closing) {
		conn_linger(a, c, "closed after reply");
		return -1;
	}
	conn_interest(a, c);
	return 0;
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
	e.message = msg;
	env.body_case = KNOB__ENVELOPE__BODY_ERROR;
	env.error = &e;
	return agent_reply(a, c, id, &env);
}

/* Called from any thread: pack now, hand over to the loop via the eventfd. */
int
agent_post(struct agent *a, uint64_t conn_id, uint64_t id, Knob__Envelope *env)
{
	struct agent_post *p;
	uint64_t one = 1;

	env->id = id;
	env->version = WIRE_VERSION;
	p = xcalloc(1, sizeof(*p));
	p->conn_id = conn_id;
	if (frame_pack(env, &p->frame, &p->len) < 0) {
		free(p);
		return -1;
	}
	pthread_mutex_lock(&a->post_mu);
	if (a->posts_tail)
		a->posts_tail->next = p;
	else
		a->posts = p;
	a->posts_tail = p;
	pthread_mutex_unlock(&a->post_mu);
	if (write(a->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("eventfd write");
	return 0;
}

/* Wait (bounded) for our work items to end, so the instance can be freed. */
static int
wait_workers(struct agent *a, int seconds)
{
	struct timespec ts;
	unsigned n;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += seconds;
	pthread_mutex_lock(&a->post_mu);
	while (a->workers > 0)
		if (pthread_cond_timedwait(&a->workers_cv, &a->post_mu, &ts) != 0)
			break;
	n = a->workers;
	if (n > 0)
		log_warnx("%u work item(s) still running at shutdown", n);
	pthread_mutex_unlock(&a->post_mu);
	return n == 0 ? 0 : -1;
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
	uint64_t cnt;

	if (read(a->evfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		log_warn("eventfd read");
	pthread_mutex_lock(&a->post_mu);
	p = a->posts;
	a->posts = a->posts_tail = NULL;
	pthread_mutex_unlock(&a->post_mu);
	for (; p; p = next) {
		struct aconn *c;

		next = p->next;
		c = conn_find(a, p->conn_id);
		if (c != NULL && !c->closing && !c->draining) {
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

	if (c != NULL && c->c.rfd != 0)
		sock_lease(c->fd, lease_s);
}

/* Has the peer of c sent anything yet (its ClientHello may be waiting in
 * the socket while the loop is busy accepting)? */
static int
sent_something(struct aconn *c)
{
	int n = 0;

	if (!c->got_byte && !c->draining && ioctl(c->fd, FIONREAD, &n) == 0 && n > 0)
		c->got_byte = 1;
	return c->got_byte;
}

/* Which unauthenticated connection goes first when the budget is full:
 * one that has sent nothing (an idle socket) before one that is talking
 * TLS, and the oldest among equals. */
static int
evict_before(struct aconn *x, struct aconn *y)
{
	int sx = sent_something(x), sy = sent_something(y);

	if (sx != sy)
		return !sx;
	return x->accept_ns < y->accept_ns;
}

/* Room for one more unauthenticated connection from host: 0, or -1 when
 * host already has its share (the newcomer is refused).  When the whole
 * budget is used, the oldest unauthenticated connection is closed. */
static int
unauth_room(struct agent *a, const char *host)
{
	unsigned max = a->cfg.max_unauth > 0 ? (unsigned)a->cfg.max_unauth : 64;
	unsigned per = a->cfg.max_unauth_per_addr > 0 ?
	    (unsigned)a->cfg.max_unauth_per_addr : 8;
	unsigned n = 0, same = 0;
	struct aconn *c, *oldest = NULL;

	for (c = a->conns; c; c = c->next) {
		if (c->authed)
			continue;
		n++;
		same += strcmp(c->host, host) == 0;
		if (oldest == NULL || evict_before(c, oldest))
			oldest = c;
	}
	if (same >= per) {
		log_debug("refusing a connection from %s: %u unauthenticated from that address "
		    "already", host, same);
		a->refused++;	/* summarised once a second (a flood must not flood the log) */
		return -1;
	}
	if (n >= max && oldest != NULL) {
		log_debug("%u unauthenticated connections: dropping the oldest, from %s", n,
		    oldest->addr);
		a->evicted++;
		conn_close(a, oldest, NULL);
	}
	return 0;
}

/* Accept pending connections (at most ACCEPT_BATCH per wake-up, so that
 * a flood of connects cannot starve the handshakes and requests already
 * accepted; the listener stays readable) and start their TLS handshakes. */
static void
accept_conns(struct agent *a)
{
	for (int batch = 0; batch < ACCEPT_BATCH; batch++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct epoll_event ev;
		struct aconn *c;
		SSL *ssl;
		int fd, one = 1;
		char host[64] = "?", serv[16] = "?";

		fd = accept4(a->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				log_warn("accept");
			return;
		}
		getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
		    NI_NUMERICHOST | NI_NUMERICSERV);
		if (unauth_room(a, host) < 0) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		sock_lease(fd, AGENT_LEASE_DEFAULT_S);
		ssl = SSL_new(a->ssl_ctx);
		if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
			log_warnx("SSL_new failed");
			SSL_free(ssl);
			close(fd);
			continue;
		}
		c = xcalloc(1, sizeof(*c));
		c->id = a->next_conn_id++;
		c->fd = fd;
		c->handshaking = 1;
		c->accept_ns = c->last_rx_ns = now_mono_ns();
		snprintf(c->addr, sizeof(c->addr), "%s:%s", host, serv);
		snprintf(c->host, sizeof(c->host), "%s", host);
		conn_init(&c->c, fd, fd, ssl);
		c->next = a->conns;
		if (a->conns)
			a->conns->prev = c;
		a->conns = c;
		ev.events = EPOLLIN;
		ev.data.ptr = c;
		epoll_ctl(a->epfd, EPOLL_CTL_ADD, fd, &ev);
		log_debug("connection %llu from %s", (unsigned long long)c->id, c->addr);
	}
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
			conn_interest(a, c);
			return 0;
		}
		tls_errstr(err, sizeof(err));
		if (SSL_get_verify_result(c->c.ssl) != X509_V_OK)
			log_warnx("TLS handshake with %s failed: peer certificate: %s", c->addr,
			    X509_verify_cert_error_string(SSL_get_verify_result(c->c.ssl)));
		else
			log_warnx("TLS handshake with %s failed: %s", c->addr, err);
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
		c->closing = 1;
		agent_reply_error(a, c, 0, EACCES, "certificate of '%s' has role '%s'; only a "
		    "'%s' certificate may command this agent", c->peer, ou, KNOB_ROLE_CONTROLLER);
		conn_kick(a, c);
		return -1;
	}
	c->handshaking = 0;
	if (auth_room(a) < 0) {
		log_warnx("%s: refusing controller '%s': %d controllers connected", c->addr,
		    c->peer, a->cfg.max_conns > 0 ? a->cfg.max_conns : 256);
		c->closing = 1;
		agent_reply_error(a, c, 0, EBUSY, "too many controllers connected");
		conn_kick(a, c);
		return -1;
	}
	c->authed = 1;
	log_info("controller %s connected from %s", c->peer, c->addr);
	conn_interest(a, c);
	return 0;
}

/* Read and dispatch every complete frame available on c. */
static void
conn_input(struct agent *a, struct aconn *c)
{
	Knob__Envelope *env;
	int r;

	for (;;) {
		r = conn_recv(&c->c, &env);
		if (r == 0)
			break;
		if (r < 0) {
			if (strstr(c->c.err, "peer closed") == NULL)
				log_warnx("%s (%s): %s; closing", c->addr,
				    c->peer[0] ? c->peer : "-", c->c.err);
			conn_close(a, c, c->c.err);
			return;
		}
		if (c->closing) {	/* refused or finishing: serve nothing more */
			knob__envelope__free_unpacked(env, NULL);
			continue;
		}
		c->last_rx_ns = now_mono_ns();
		bench_conn_activity(a, c->id);
		r = agent_dispatch(a, c, env);
		if (r <= 0)	/* 1: the handler kept it */
			knob__envelope__free_unpacked(env, NULL);
		if (c->overflow) {
			log_warnx("%s (%s): %s; closing", c->addr, c->peer, c->c.err);
			conn_close(a, c, c->c.err);
			return;
		}
		if (r < 0) {
			c->closing = 1;
			conn_kick(a, c);
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
	if (c->handshaking) {
		c->got_byte |= (events & EPOLLIN) != 0;
		if (events & (EPOLLERR | EPOLLHUP)) {
			conn_close(a, c, "hang-up during handshake");
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

/* Every TICK_NS: drop handshakes past their deadlines; once a second,
 * tick the subsystems. */
static void
on_timer(struct agent *a)
{
	struct aconn *c, *next;
	uint64_t exp, now = now_mono_ns();

	if (read(a->tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
		log_warn("timerfd read");
	for (c = a->conns; c; c = next) {
		next = c->next;
		if (c->handshaking && !c->got_byte && now - c->accept_ns > AGENT_FIRST_BYTE_NS) {
			log_debug("%s: nothing received in %llu s; closing", c->addr,
			    AGENT_FIRST_BYTE_NS / 1000000000ull);
			conn_close(a, c, NULL);
		} else if (c->handshaking && now - c->accept_ns > AGENT_HANDSHAKE_NS) {
			log_warnx("%s: TLS handshake not done in %llu s; closing", c->addr,
			    AGENT_HANDSHAKE_NS / 1000000000ull);
			conn_close(a, c, NULL);
		} else if (c->draining && now - c->last_rx_ns > 2000000000ull)
			conn_close(a, c, NULL);
	}
	if (now - a->last_tick_ns >= 1000000000ull) {
		a->last_tick_ns = now;
		if (a->refused || a->evicted)
			log_warnx("before authentication: refused %u connection(s) over the "
			    "per-address limit, dropped %u oldest over the budget", a->refused,
			    a->evicted);
		a->refused = a->evicted = 0;
		bench_tick(a);
	}
}

/* Run one loop iteration set until stopped.  In --stdio mode the loop ends
 * with the session. */
static int
loop(struct agent *a, int stdio)
{
	struct epoll_event evs[64];
	int n, i;

	while (!a->stop) {
		if (stdio && a->conns == NULL)
			break;
		n = epoll_wait(a->epfd, evs, (int)nitems(evs), 1000);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_warn("epoll_wait");
			return -1;
		}
		for (i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == TAG_LISTEN)
				accept_conns(a);
			else if (p == TAG_EVENT)
				drain_posts(a);
			else if (p == TAG_TIMER)
				on_timer(a);
			else if (p == TAG_STOP) {
				log_info("shutting down");
				a->stop = 1;
			} else {
				/* the connection may have been closed earlier in this batch */
				struct aconn *c;
				for (c = a->conns; c && c != p; c = c->next)
					;
				if (c)
					conn_event(a, c, evs[i].events);
			}
		}
	}
	return 0;
}

int
agent_run(struct agent *a)
{
	return loop(a, 0);
}

/* Serve one plaintext session on stdin/stdout (for SSH exec channels). */
int
agent_run_stdio(struct agent *a)
{
	struct epoll_event ev;
	struct aconn *c;

	set_nonblock(0);
	c = xcalloc(1, sizeof(*c));
	c->id = a->next_conn_id++;
	c->fd = 0;
	snprintf(c->addr, sizeof(c->addr), "stdio");
	snprintf(c->peer, sizeof(c->peer), "stdio");
	c->authed = 1;	/* the SSH session authenticated it */
	conn_init(&c->c, 0, 1, NULL);
	a->conns = c;
	ev.events = EPOLLIN;
	ev.data.ptr = c;
	if (epoll_ctl(a->epfd, EPOLL_CTL_ADD, 0, &ev) < 0) {
		log_warn("epoll on stdin");
		return -1;
	}
	return loop(a, 1);
}

void
agent_fini(struct agent *a)
{
	struct agent_post *p, *next;
	int busy;

	while (a->conns)
		conn_close(a, a->conns, NULL);	/* aborts running phases */
	busy = wait_workers(a, 10) < 0;
	health_fini(a);
	bench_fini(a);
	tune_fini(a);
	for (p = a->posts; p; p = next) {
		next = p->next;
		free(p->frame);
		free(p);
	}
	if (a->lfd >= 0)
		close(a->lfd);
	if (a->evfd >= 0)
		close(a->evfd);
	if (a->tfd >= 0)
		close(a->tfd);
	if (a->epfd >= 0)
		close(a->epfd);
	SSL_CTX_free(a->ssl_ctx);
	if (!busy)	/* else the threads still use this instance: leave them be */
		work_pool_free(a->own_pool);
	if (a->workers == 0) {
		pthread_cond_destroy(&a->workers_cv);
		pthread_mutex_destroy(&a->post_mu);
	}
}
