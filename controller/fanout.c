/* Fan-out: epoll loops dial every target at once (bounded by a window of
 * handshakes in flight), verify that each agent's certificate names the node
 * we meant to reach, and drive per-command callbacks.  No thread per node:
 * a command whose callbacks touch only their node (fo_ops.per_node) runs
 * one loop per thread (--threads, default the CPUs we may use), each with
 * every k-th target; anything else runs one loop in the calling thread. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "knobctl.h"
#include "log.h"
#include "tls.h"
#include "util.h"

#define FO_WINDOW 512		/* connects + handshakes in flight at once */
#define FO_MIN_SHARE 32		/* default threads: at least this many nodes each */
#define FO_REDIALS 2		/* dials again after a drop before the handshake */
#define NS_PER_S 1000000000ull

/* One event loop and its share of the nodes: first, first + step, ... */
struct fo_loop {
	struct fanout *fo;
	int epfd;
	size_t first, step, count;
	size_t next;		/* how many of the share have started */
	size_t active;		/* not done yet */
	size_t active_handshakes;	/* connects + handshakes in flight */
	size_t window;		/* this loop's part of FO_WINDOW */
	size_t limit;		/* this loop's part of --fanout (0: none) */
	pthread_t th;
	int rc;
};

void
fanout_init(struct fanout *fo, struct ctl *ctl, const struct strvec *names)
{
	memset(fo, 0, sizeof(*fo));
	fo->ctl = ctl;
	fo->n = names->n;
	fo->nodes = xcalloc(names->n ? names->n : 1, sizeof(*fo->nodes));
	for (size_t i = 0; i < names->n; i++) {
		struct fo_node *n = &fo->nodes[i];

		n->name = xstrdup(names->v[i]);
		n->idx = i;
		n->fd = -1;
		n->next_id = 1;
		inventory_target(ctl->inv, n->name, &n->addr, &n->port);
		if (n->addr == NULL)
			n->addr = n->name;
		if (n->port == 0)
			n->port = KNOB_DEFAULT_PORT;
	}
}

/* Write what OpenSSL put in n's memory write BIO (node_start_tls: so that
 * a handshake flight and the request after it leave in one write(2)).
 * 1 all sent, 0 the socket is full, -1 error (n->c.err). */
static int
tls_drain(struct fo_node *n)
{
	BIO *wb = SSL_get_wbio(n->c.ssl);
	char *p, sink[4096];
	long len;
	ssize_t w;

	while ((len = BIO_get_mem_data(wb, &p)) > 0) {
		if (len > WQ_MAX) {
			snprintf(n->c.err, sizeof(n->c.err), "peer does not read: %ld bytes queued",
			    len);
			return -1;
		}
		w = write(n->fd, p, (size_t)len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (w < 0) {
			snprintf(n->c.err, sizeof(n->c.err), "write: %s", strerror(errno));
			return -1;
		}
		for (int k; w > 0; w -= k)	/* consume what the socket took */
			if ((k = BIO_read(wb, sink, w < (ssize_t)sizeof(sink) ? (int)w :
			    (int)sizeof(sink))) <= 0)
				return -1;
	}
	return 1;
}

/* Close the TLS transport of n (idempotent). */
static void
tls_close(struct fanout *fo, struct fo_node *n)
{
	(void)fo;
	if (n->fd >= 0) {
		/* close(2) drops the epoll registration: fd is never duplicated */
		n->ev = 0;
		/* close_notify, so that the agent sees a clean end of the
		 * session (it does not wait for the agent's own) */
		if (n->c.ssl && n->phase == FO_OPEN)
			SSL_shutdown(n->c.ssl);
		if (n->c.ssl)
			(void)tls_drain(n);	/* the close_notify or our alert, best effort */
		conn_reset(&n->c);
		close(n->fd);
		n->fd = -1;
	}
}

/* Close n's transport, whichever it is (idempotent). */
static void
node_close(struct fanout *fo, struct fo_node *n)
{
	(fo->tr ? fo->tr : &fo_tls_transport)->close(fo, n);
}

void
fanout_free(struct fanout *fo)
{
	for (size_t i = 0; i < fo->n; i++) {
		struct fo_node *n = &fo->nodes[i];

		node_close(fo, n);
		free(n->name);
		free(n->pin);
		free(n->detail);
		if (n->reply)
			knob__envelope__free_unpacked(n->reply, NULL);
		if (n->ticket)
			SSL_SESSION_free(n->ticket);
	}
	free(fo->nodes);
	free(fo->addrs);
	fo->addrs = NULL;
	free(fo->loops);
	fo->loops = NULL;
	fo->nloops = 0;
	fo->nodes = NULL;
	fo->n = 0;
}

int
fanout_epfd(const struct fo_node *n)
{
	return n->loop ? n->loop->epfd : -1;
}

void
fanout_deadline(struct fo_node *n, double seconds)
{
	n->deadline_ns = now_mono_ns() + (uint64_t)(seconds * 1e9);
}

void
fanout_end(struct fanout *fo, struct fo_node *n, int status, const char *fmt, ...)
{
	va_list ap;

	if (n->phase == FO_DONE)
		return;
	n->status = status;
	if (fmt != NULL) {
		free(n->detail);
		va_start(ap, fmt);
		if (vasprintf(&n->detail, fmt, ap) < 0)
			n->detail = NULL;
		va_end(ap);
	}
	node_close(fo, n);
	if (n->loop && (n->phase == FO_CONNECTING || n->phase == FO_HANDSHAKE) &&
	    n->loop->active_handshakes > 0)
		n->loop->active_handshakes--;
	n->phase = FO_DONE;
	if (n->loop && n->loop->active > 0)
		n->loop->active--;
	if (fo->ops && fo->ops->on_end)
		fo->ops->on_end(fo, n);
}

/* Epoll interest for n: input always, output while something is queued
 * (a system call only when that changes). */
void
fanout_interest(struct fanout *fo, struct fo_node *n, int out)
{
	struct epoll_event ev;

	(void)fo;
	ev.events = EPOLLIN | (out ? EPOLLOUT : 0);
	if (ev.events == n->ev)
		return;
	ev.data.ptr = n;
	if (epoll_ctl(fanout_epfd(n), EPOLL_CTL_MOD, n->fd, &ev) == 0)
		n->ev = ev.events;
}

/* TLS: hand queued frames to OpenSSL, write its records, wait for output
 * room while some are left.  0, or -1 when n ended (with status st). */
static int
tls_push(struct fanout *fo, struct fo_node *n, int st)
{
	int r = conn_flush(&n->c);

	if (r >= 0)
		r = tls_drain(n);
	if (r < 0) {
		fanout_end(fo, n, st, "%s", n->c.err);
		return -1;
	}
	fanout_interest(fo, n, r == 0);
	return 0;
}

/* TLS: queue env and write what the socket takes. */
static int
tls_send(struct fanout *fo, struct fo_node *n, Knob__Envelope *env)
{
	if (conn_send(&n->c, env) < 0) {
		fanout_end(fo, n, NS_FAILED, "cannot encode request");
		return -1;
	}
	return tls_push(fo, n, NS_UNREACHABLE);
}

int
fanout_send(struct fanout *fo, struct fo_node *n, Knob__Envelope *env)
{
	if (n->phase != FO_OPEN)
		return -1;
	if (env->id == 0)
		env->id = n->next_id++;
	return fo->tr->send(fo, n, env);
}

int
fanout_watch(struct fanout *fo, struct fo_node *n, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = n };

	if (epoll_ctl(fanout_epfd(n), EPOLL_CTL_ADD, n->fd, &ev) < 0) {
		fanout_end(fo, n, NS_FAILED, "epoll_ctl: %s", strerror(errno));
		return -1;
	}
	n->ev = events;
	return 0;
}

/* A failed connect in words that are the same on every node (the node
 * set is the header), so that unreachable nodes fold by reason. */
static const char *
connect_error(int e)
{
	static const struct {
		int e;
		const char *text;
	} errs[] = {
		{ ECONNREFUSED, "connection refused" },
		{ ETIMEDOUT, "connect timed out" },
		{ EHOSTUNREACH, "no route to host" },
		{ ENETUNREACH, "network unreachable" },
		/* accepted, then reset before we said a word */
		{ ECONNRESET, "dropped before handshake (agent busy or filtered)" },
	};

	for (size_t i = 0; i < nitems(errs); i++)
		if (errs[i].e == e)
			return errs[i].text;
	return strerror(e);
}

/* Start a non-blocking connect for n, to its address looked up before
 * the run (fanout_resolve). */
static void
node_connect(struct fanout *fo, struct fo_node *n)
{
	struct sockaddr_storage sa;
	socklen_t len;
	char why[128];
	int r, one = 1;

	n->phase = FO_CONNECTING;
	fanout_deadline(n, fo->ctl->connect_timeout);
	if (fo_addr_port(&fo->addrs[n->idx], n->port, fo->ctl->connect_timeout, &sa, &len, why,
	    sizeof(why)) < 0) {
		fanout_end(fo, n, NS_UNREACHABLE, "%s", why);
		return;
	}
	n->fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (n->fd < 0) {
		fanout_end(fo, n, NS_FAILED, "socket: %s", strerror(errno));
		return;
	}
	setsockopt(n->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	r = connect(n->fd, (const struct sockaddr *)&sa, len);
	if (r < 0 && errno != EINPROGRESS) {
		fanout_end(fo, n, NS_UNREACHABLE, "%s", connect_error(errno));
		return;
	}
	(void)fanout_watch(fo, n, EPOLLOUT);
}

/* Dial n again after the agent dropped it before the handshake began (its
 * budget of unauthenticated connections under a flood, its per-address
 * limit): nothing was said, so nothing is repeated.  At most FO_REDIALS
 * times, within the first dial's deadline.  1 when dialled again. */
static int
node_redial(struct fanout *fo, struct fo_node *n)
{
	uint64_t deadline = n->deadline_ns;

	if (n->redials >= FO_REDIALS || now_mono_ns() >= deadline)
		return 0;
	n->redials++;
	log_debug("%s: dropped before handshake; dialling again (%d of %d)", n->name,
	    n->redials, FO_REDIALS);
	tls_close(fo, n);
	free(n->pin);
	n->pin = NULL;
	node_connect(fo, n);
	if (n->phase != FO_DONE)
		n->deadline_ns = deadline;
	return 1;
}

/* Connected: set up TLS with the expected host name and start the handshake. */
static int
node_start_tls(struct fanout *fo, struct fo_node *n)
{
	SSL_SESSION *sess;
	const char *pin;
	SSL *ssl;
	BIO *wb;
	int err = 0;
	socklen_t sl = sizeof(err);

	if (getsockopt(n->fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0 || err != 0) {
		if (err == ECONNRESET && node_redial(fo, n))
			return -1;
		fanout_end(fo, n, NS_UNREACHABLE, "%s", connect_error(err ? err : errno));
		return -1;
	}
	ssl = SSL_new(fo->ctl->ssl);
	if (ssl == NULL || SSL_set_fd(ssl, n->fd) != 1 || (wb = BIO_new(BIO_s_mem())) == NULL) {
		SSL_free(ssl);
		fanout_end(fo, n, NS_FAILED, "SSL_new failed");
		return -1;
	}
	/* records go to memory first; tls_drain writes them (tls_push) */
	SSL_set0_wbio(ssl, wb);
	/* The agent's certificate must name the node we dialled. */
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	SSL_set1_host(ssl, n->name);
	SSL_set_tlsext_host_name(ssl, n->name);
	SSL_set_app_data(ssl, n);
	n->not_after = INT64_MIN;	/* the handshake tells */
	if ((sess = tcache_get(fo->ctl->tickets, n->name, &pin, &n->not_after)) != NULL) {
		SSL_set_session(ssl, sess);
		SSL_SESSION_free(sess);
		free(n->pin);
		n->pin = xstrdup(pin);
	}
	conn_init(&n->c, n->fd, n->fd, ssl);
	n->phase = FO_HANDSHAKE;
	return 0;
}

/* A TLS alert from the agent as a sentence: which of our credentials it
 * refused and what to do about it; NULL for an alert not in the table.
 * This is the TLS layer: a handshake refusal carries no Error frame, so
 * OpenSSL's alert text is all there is.  Refusals after the handshake
 * arrive as an Error and are classified by its kind (fanout_deliver). */
static const char *
refusal_text(const char *err)
{
	static const struct {
		const char *alert, *text;
	} alerts[] = {
		{ "alert certificate revoked", "agent refused our certificate: it is revoked "
		    "(listed in the cluster CA's CRL)" },
		{ "alert certificate expired", "agent refused our certificate: it has expired "
		    "(knobctl ca renew)" },
		{ "alert unknown ca", "agent refused our certificate: not issued by its cluster CA" },
		{ "alert bad certificate", "agent refused our certificate: not issued by its cluster CA" },
		{ "alert unsupported certificate", "agent refused our certificate: not a controller "
		    "certificate (knobctl ca issue DIR NAME --controller)" },
		{ "alert certificate required", "agent refused us: no controller certificate presented" },
	};

	for (size_t i = 0; i < nitems(alerts); i++)
		if (strstr(err, alerts[i].alert))
			return alerts[i].text;
	return NULL;
}

const char *
fanout_refused_why(const char *err, char *buf, size_t len)
{
	const char *text = refusal_text(err);

	if (text != NULL)
		snprintf(buf, len, "%s", text);
	else
		snprintf(buf, len, "agent refused us: %s", err);
	return buf;
}

/* End n as auth-failed by the agent's TLS alert err. */
static void
end_refused(struct fanout *fo, struct fo_node *n, const char *err)
{
	char why[1024];

	fanout_end(fo, n, NS_AUTH_FAILED, "%s", fanout_refused_why(err, why, sizeof(why)));
}

void
fanout_opened(struct fanout *fo, struct fo_node *n)
{
	n->phase = FO_OPEN;
	n->t_open_ns = now_mono_ns();
	fanout_deadline(n, fo->ctl->timeout);
	if (n->loop && n->loop->active_handshakes > 0)
		n->loop->active_handshakes--;
	if (fo->ops->on_open && fo->ops->on_open(fo, n) < 0 && n->phase != FO_DONE)
		fanout_end(fo, n, NS_FAILED, "cannot send request");
}

int
fanout_detach(struct fanout *fo, struct fo_node *n, int *fd, struct conn *c)
{
	SSL *ssl = n->c.ssl;

	/* our Finished is still in the memory BIO (node_start_tls) */
	if (n->phase != FO_OPEN || tls_drain(n) != 1 || SSL_set_wfd(ssl, n->fd) != 1) {
		fanout_end(fo, n, NS_FAILED, "cannot hand over the connection");
		return -1;
	}
	epoll_ctl(fanout_epfd(n), EPOLL_CTL_DEL, n->fd, NULL);
	SSL_set_app_data(ssl, NULL);	/* later tickets: nobody's (new_session) */
	*fd = n->fd;
	*c = n->c;
	n->fd = -1;
	conn_init(&n->c, -1, -1, NULL);
	fanout_end(fo, n, NS_OK, NULL);
	return 0;
}

/* Advance the client handshake. */
static void
node_handshake(struct fanout *fo, struct fo_node *n)
{
	char err[512];
	int r, e;
	long vr;

	ERR_clear_error();
	r = SSL_connect(n->c.ssl);
	if (r == 1) {
		/* a resumed session skips verification: it must descend from a
		 * handshake that verified this very name */
		n->resumed = SSL_session_reused(n->c.ssl);
		log_debug("%s: TLS %s", n->name, n->resumed ? "session resumed" : "full handshake");
		if (n->resumed && !tcache_pinned(n->pin, n->name)) {
			fanout_end(fo, n, NS_AUTH_FAILED, "agent certificate rejected: %s",
			    X509_verify_cert_error_string(X509_V_ERR_HOSTNAME_MISMATCH));
			return;
		}
		/* resumed: the ticket's record (tcache_get); else the verified one */
		if (!n->resumed && tls_x509_not_after(SSL_get0_peer_certificate(n->c.ssl),
		    &n->not_after) < 0)
			n->not_after = INT64_MIN;
		/* our Finished leaves with the first request (on_open) */
		fanout_opened(fo, n);
		if (n->phase == FO_OPEN)
			(void)tls_push(fo, n, NS_UNREACHABLE);
		return;
	}
	e = SSL_get_error(n->c.ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		(void)tls_push(fo, n, NS_UNREACHABLE);
		return;
	}
	vr = SSL_get_verify_result(n->c.ssl);
	if (vr != X509_V_OK) {
		fanout_end(fo, n, NS_AUTH_FAILED, "agent certificate rejected: %s",
		    X509_verify_cert_error_string(vr));
		return;
	}
	tls_errstr(err, sizeof(err));
	/* Not one byte from the agent: it (or a filter) dropped the
	 * connection before TLS began; that says nothing about credentials. */
	if (BIO_number_read(SSL_get_rbio(n->c.ssl)) == 0) {
		if (node_redial(fo, n))
			return;
		fanout_end(fo, n, NS_UNREACHABLE, "dropped before handshake (agent busy or filtered)");
		return;
	}
	if (e == SSL_ERROR_SSL && strstr(err, "alert") != NULL) {
		end_refused(fo, n, err);
		return;
	}
	fanout_end(fo, n, NS_UNREACHABLE, "TLS handshake: %s",
	    e == SSL_ERROR_SSL ? err : "connection closed");
}

/* An agent that answers "busy" (EAGAIN) did nothing with the request:
 * it is sent again after 100 ms, then 200, 400, 800 and 1600
 * (FO_BUSY_TRIES times, 3.1 s in all: a burst passes, a node busy for
 * longer is reported busy), while the request's deadline (not moved by a
 * busy answer; the command's fo_ops.busy_until, which also says which of
 * its requests may be sent again) leaves room.  1 when a retry is due (env
 * consumed), 0 when the answer stands. */
#define FO_BUSY_TRIES 5
static int
busy_retry(struct fanout *fo, struct fo_node *n, Knob__Envelope *env)
{
	uint64_t ms, until, now = now_mono_ns();

	if (!fo->ops->retry_busy || env->body_case != KNOB__ENVELOPE__BODY_ERROR ||
	    env->error->kind != KNOB__ERROR_KIND__ERROR_KIND_BUSY || env->error->code != EAGAIN ||
	    n->busy_tries >= FO_BUSY_TRIES)
		return 0;
	until = fo->ops->busy_until ? fo->ops->busy_until(fo, n, env) : n->deadline_ns;
	ms = 100ull << n->busy_tries;
	if (now + ms * 1000000ull >= until)
		return 0;
	n->busy_tries++;
	n->retry_ns = now + ms * 1000000ull;
	log_debug("%s: %s; sending again in %llu ms (%d of %d)", n->name, env->error->message,
	    (unsigned long long)ms, n->busy_tries, FO_BUSY_TRIES);
	knob__envelope__free_unpacked(env, NULL);
	return 1;
}

/* Send again what a busy agent refused, once its time has come. */
static void
busy_resend(struct fanout *fo, struct fo_node *n, uint64_t now)
{
	if (n->retry_ns == 0 || now < n->retry_ns || n->phase != FO_OPEN)
		return;
	n->retry_ns = 0;
	if ((fo->ops->busy_resend ? fo->ops->busy_resend : fo->ops->on_open)(fo, n) < 0 &&
	    n->phase != FO_DONE)
		fanout_end(fo, n, NS_FAILED, "cannot send request");
}

int
fanout_deliver(struct fanout *fo, struct fo_node *n, Knob__Envelope *env)
{
	int r;

	if (env->body_case == KNOB__ENVELOPE__BODY_ERROR &&
	    env->error->kind == KNOB__ERROR_KIND__ERROR_KIND_REFUSED) {
		fanout_end(fo, n, NS_AUTH_FAILED, "agent refused us: %s", env->error->message);
		knob__envelope__free_unpacked(env, NULL);
		return -1;
	}
	if (busy_retry(fo, n, env))
		return 0;
	fanout_deadline(n, fo->ctl->timeout);
	r = fo->ops->on_msg(fo, n, env);
	if (n->phase == FO_DONE)
		return -1;
	if (r != 0) {
		fanout_end(fo, n, n->status ? n->status : (r > 0 ? NS_OK : NS_FAILED), NULL);
		return -1;
	}
	return 0;
}

/* Read every complete frame and hand it to the command. */
static void
node_input(struct fanout *fo, struct fo_node *n)
{
	Knob__Envelope *env;
	int r;

	for (;;) {
		r = conn_recv(&n->c, &env);
		if (r == 0)
			break;
		if (r < 0) {
			/* In TLS 1.3 the agent judges our certificate after our side
			 * of the handshake completed: its refusal arrives here. */
			if (n->next_id <= 2 && n->reply == NULL && strstr(n->c.err, "alert"))
				end_refused(fo, n, n->c.err);
			else
				fanout_end(fo, n, NS_FAILED, "connection lost: %s", n->c.err);
			return;
		}
		if (fanout_deliver(fo, n, env) < 0)
			return;
	}
	(void)tls_push(fo, n, NS_FAILED);
}

static void
node_event(struct fanout *fo, struct fo_node *n, uint32_t events)
{
	switch (n->phase) {
	case FO_CONNECTING:
		if (node_start_tls(fo, n) < 0)
			return;
		node_handshake(fo, n);
		return;
	case FO_HANDSHAKE:
		node_handshake(fo, n);
		return;
	case FO_OPEN:
		if ((events & EPOLLOUT) && tls_push(fo, n, NS_FAILED) < 0)
			return;
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			node_input(fo, n);
		return;
	default:
		return;
	}
}

const struct fo_transport fo_tls_transport = {
	.start = node_connect,
	.event = node_event,
	.send = tls_send,
	.close = tls_close,
	.tick = NULL,
};

/* The SSL ex_data slot of a handed-over connection's fo_sink. */
static int sink_idx = -1;

void
fanout_set_sink(SSL *ssl, struct fo_sink *sink)
{
	SSL_set_ex_data(ssl, sink_idx, sink);
}

/* OpenSSL: the agent sent a ticket; n keeps it, or after fanout_detach
 * the connection's sink, if it has one (we own sess). */
static int
new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct fo_node *n = SSL_get_app_data(ssl);
	struct fo_sink *sink;

	if (n == NULL) {
		if ((sink = SSL_get_ex_data(ssl, sink_idx)) == NULL)
			return 0;
		sink->fn(sink, sess);
		return 1;
	}
	if (n->ticket)
		SSL_SESSION_free(n->ticket);
	n->ticket = sess;
	return 1;
}

void
fanout_tls_ctx(SSL_CTX *ctx)
{
	if (sink_idx < 0)	/* before any thread */
		sink_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	SSL_CTX_sess_set_new_cb(ctx, new_session);
}

/* After a run: keep each node's new ticket, forget the tickets of nodes
 * that failed authentication, write the cache. */
static void
tickets_update(struct fanout *fo)
{
	size_t resumed = 0, full = 0;

	for (size_t i = 0; i < fo->n; i++) {
		struct fo_node *n = &fo->nodes[i];

		/* a ticket comes after a verified or a pinned handshake: of n->name */
		if (n->status == NS_AUTH_FAILED)
			tcache_put(fo->ctl->tickets, n->name, NULL, NULL, INT64_MIN);
		else if (n->ticket)
			tcache_put(fo->ctl->tickets, n->name, n->ticket, n->name, n->not_after);
		if (n->t_open_ns)
			*(n->resumed ? &resumed : &full) += 1;
		if (n->ticket)
			SSL_SESSION_free(n->ticket);
		n->ticket = NULL;
	}
	log_debug("TLS: %zu resumed, %zu full handshakes", resumed, full);
	tcache_save(fo->ctl->tickets);
}

/* The i-th node of l's share. */
static struct fo_node *
loop_node(struct fo_loop *l, size_t i)
{
	return &l->fo->nodes[l->first + i * l->step];
}

/* Expire deadlines of l's nodes: connect/handshake -> unreachable (a
 * connection holder's verdict that never came -> failed, its doing),
 * request -> timeout; send again what a busy agent refused (busy_retry). */
static void
check_deadlines(struct fo_loop *l)
{
	struct fanout *fo = l->fo;
	uint64_t now = now_mono_ns();

	for (size_t i = 0; i < l->next; i++) {
		struct fo_node *n = loop_node(l, i);

		busy_resend(fo, n, now);
		if (n->phase == FO_DONE || n->phase == FO_IDLE || now < n->deadline_ns)
			continue;
		if (fo->tr->expire && fo->tr->expire(fo, n))
			continue;
		if (n->phase == FO_HANDSHAKE && fo->tr == &fo_mux_transport) {
			/* the holder's verdict comes within its own bounds (mux_start):
			 * not the node, the holder is hung */
			fanout_end(fo, n, NS_FAILED, "the connection holder did not answer "
			    "within %.1fs", 2 * fo->ctl->connect_timeout + 1);
		} else if (n->phase == FO_CONNECTING || n->phase == FO_HANDSHAKE) {
			fanout_end(fo, n, NS_UNREACHABLE, "%s timed out after %.1fs",
			    n->phase == FO_CONNECTING ? "connect" : "TLS handshake",
			    fo->ctl->connect_timeout);
		} else
			fanout_end(fo, n, NS_TIMEOUT, "no reply within %.1fs", fo->ctl->timeout);
	}
}

/* May l start its next node?  --fanout N bounds the nodes in progress; for
 * a run where every node must be connected together, the handshakes. */
static int
may_start(const struct fo_loop *l)
{
	size_t done = l->count - l->active;

	if (l->next >= l->count || l->active_handshakes >= l->window)
		return 0;
	if (l->limit == 0)
		return 1;
	if (l->fo->all_at_once)
		return l->active_handshakes < l->limit;
	return l->next - done < l->limit;
}

/* Is the run over early: fo->stop, or the command's interrupt flag?
 * (another thread or a signal handler may set either) */
static int
loop_stopped(const struct fanout *fo)
{
	const atomic_int *in = fo->ctl->interrupt;

	return __atomic_load_n(&fo->stop, __ATOMIC_RELAXED) ||
	    (in != NULL && atomic_load_explicit(in, memory_order_relaxed) != 0);
}

/* Drive l's nodes until each is done or the run stops. 0 or -1. */
static int
loop_run(struct fo_loop *l)
{
	struct fanout *fo = l->fo;
	struct epoll_event evs[256];
	uint64_t last_tick = 0;

	/* stop: another thread may set it (the holder's dial_stop_all) */
	while (l->active > 0 && !loop_stopped(fo)) {
		int nev, i;
		uint64_t now;

		while (may_start(l)) {
			struct fo_node *n = loop_node(l, l->next++);

			l->active_handshakes++;
			fo->tr->start(fo, n);
		}
		nev = epoll_wait(l->epfd, evs, (int)nitems(evs), 100);
		if (nev < 0 && errno != EINTR) {
			log_warn("epoll_wait");
			return -1;
		}
		for (i = 0; i < nev; i++)
			fo->tr->event(fo, evs[i].data.ptr, evs[i].events);
		now = now_mono_ns();
		if (now - last_tick >= 100000000ull) {
			last_tick = now;
			check_deadlines(l);
			for (size_t k = 0; fo->tr->tick && k < l->next; k++)
				fo->tr->tick(fo, loop_node(l, k));	/* libssh2 may hold input */
			if (fo->ops->on_tick)
				fo->ops->on_tick(fo);
		}
	}
	return 0;
}

static void *
loop_thread(void *arg)
{
	struct fo_loop *l = arg;

	l->rc = loop_run(l);
	return NULL;
}

/* The CPUs this process may run on (taskset, cgroups), else online CPUs. */
static size_t
usable_cpus(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (size_t)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (size_t)n : 1;
}

/* How many loops: one unless every callback is per node and the transport
 * is TLS; then --threads, or by default the usable CPUs with at least
 * FO_MIN_SHARE nodes each; never more than the nodes, nor than --fanout N
 * (each loop gets a share of N, at least one). */
static size_t
loops_for(const struct fanout *fo, const struct fo_ops *ops)
{
	size_t t;

	if (!ops->per_node || ops->on_tick || ops->on_end || fo->all_at_once ||
	    fo->tr == &fo_ssh_transport || fo->tr == &fo_mux_transport)
		return 1;
	if (fo->ctl->threads > 0)
		t = (size_t)fo->ctl->threads;
	else {
		t = usable_cpus();
		if (t > fo->n / FO_MIN_SHARE)
			t = fo->n / FO_MIN_SHARE;
	}
	if (t > fo->n)
		t = fo->n;
	if (fo->ctl->fanout > 0 && t > (size_t)fo->ctl->fanout)
		t = (size_t)fo->ctl->fanout;
	return t ? t : 1;
}

/* Loop k's share of total over nl loops: the shares add up to total. */
static size_t
loop_share(size_t total, size_t nl, size_t k)
{
	return total / nl + (k < total % nl);
}

/* Split the nodes over nl loops (every nl-th node each) with their epoll
 * descriptors. 0 or -1. */
static int
loops_make(struct fanout *fo, size_t nl)
{
	size_t limit = fo->ctl->fanout > 0 ? (size_t)fo->ctl->fanout : 0;

	free(fo->loops);
	fo->loops = xcalloc(nl, sizeof(*fo->loops));
	fo->nloops = nl;
	for (size_t k = 0; k < nl; k++)
		fo->loops[k].epfd = -1;
	for (size_t k = 0; k < nl; k++) {
		struct fo_loop *l = &fo->loops[k];

		l->fo = fo;
		l->first = k;
		l->step = nl;
		l->count = k < fo->n ? (fo->n - k + nl - 1) / nl : 0;
		l->active = l->count;
		l->window = nl > FO_WINDOW ? 1 : loop_share(FO_WINDOW, nl, k);
		l->limit = loop_share(limit, nl, k);	/* 0: unbounded */
		if ((l->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
			log_warn("epoll_create1");
			return -1;
		}
	}
	for (size_t i = 0; i < fo->n; i++)
		fo->nodes[i].loop = &fo->loops[i % nl];
	return 0;
}

/* Run every loop: loop 0 in this thread, the others in their own. 0 or -1. */
static int
loops_run(struct fanout *fo)
{
	size_t started = 1;
	int rc;

	for (; started < fo->nloops; started++)
		if (pthread_create(&fo->loops[started].th, NULL, loop_thread,
		    &fo->loops[started]) != 0) {
			log_warnx("cannot start fan-out thread %zu: running %zu", started, started);
			break;
		}
	/* loops that did not get a thread run here, after loop 0 */
	rc = loop_run(&fo->loops[0]);
	for (size_t k = started; k < fo->nloops; k++)
		if (loop_run(&fo->loops[k]) < 0)
			rc = -1;
	for (size_t k = 1; k < started; k++) {
		pthread_join(fo->loops[k].th, NULL);
		if (fo->loops[k].rc < 0)
			rc = -1;
	}
	return rc;
}

/* SSH when --via ssh; the connection holder for a request/reply command
 * when one of ours listens (and not --no-mux) and takes the run's channel;
 * else TLS. */
static const struct fo_transport *
fanout_transport(struct fanout *fo, const struct fo_ops *ops)
{
	if (fo->ctl->ssh.via)
		return &fo_ssh_transport;
	if (ops->via_mux && !fo->ctl->no_mux && mux_usable(fo->ctl) && mux_chan_open(fo) == 0)
		return &fo_mux_transport;
	return &fo_tls_transport;
}

int
fanout_run(struct fanout *fo, const struct fo_ops *ops, void *user)
{
	int rc;

	fo->ops = ops;
	fo->user = user;
	if (fo->n == 0)
		return 0;
	fo->tr = fanout_transport(fo, ops);
	if (fo->tr == &fo_tls_transport && ctl_ssl(fo->ctl) == NULL)
		return -1;
	if (fo->tr == &fo_tls_transport || fo->tr == &fo_ssh_transport)
		fanout_resolve(fo);	/* before any deadline starts */
	if (fo->ctl->ssh.via)
		libssh2_init(0);
	raise_nofile(fo->n);
	rc = loops_make(fo, loops_for(fo, ops));
	if (rc == 0) {
		log_debug("fan-out: %zu node(s), %zu loop(s)", fo->n, fo->nloops);
		rc = loops_run(fo);
	}
	for (size_t i = 0; i < fo->n; i++)
		if (fo->nodes[i].phase != FO_DONE)
			fanout_end(fo, &fo->nodes[i], NS_FAILED, "interrupted");
	if (fo->tr->finish)
		fo->tr->finish(fo);
	for (size_t k = 0; k < fo->nloops; k++)
		if (fo->loops[k].epfd >= 0) {
			close(fo->loops[k].epfd);
			fo->loops[k].epfd = -1;
		}
	if (fo->tr == &fo_tls_transport)
		tickets_update(fo);
	return rc;
}

/* fanout_request callbacks: one request, one reply per node. */
static int
req_open(struct fanout *fo, struct fo_node *n)
{
	Knob__Envelope env = *fo->request;

	env.id = 0;
	return fanout_send(fo, n, &env);
}

/* The body that answers a request of body req; NOT_SET for one this
 * table does not know (any reply is taken then). */
static Knob__Envelope__BodyCase
reply_body(Knob__Envelope__BodyCase req)
{
	static const Knob__Envelope__BodyCase pairs[][2] = {
		{ KNOB__ENVELOPE__BODY_PING, KNOB__ENVELOPE__BODY_PONG },
		{ KNOB__ENVELOPE__BODY_FACTS_REQUEST, KNOB__ENVELOPE__BODY_FACTS },
		{ KNOB__ENVELOPE__BODY_APPLY, KNOB__ENVELOPE__BODY_APPLY_RESULT },
		{ KNOB__ENVELOPE__BODY_VERIFY, KNOB__ENVELOPE__BODY_VERIFY_RESULT },
		{ KNOB__ENVELOPE__BODY_ROLLBACK, KNOB__ENVELOPE__BODY_ROLLBACK_RESULT },
		{ KNOB__ENVELOPE__BODY_HEALTH, KNOB__ENVELOPE__BODY_HEALTH_RESULT },
	};

	for (size_t i = 0; i < nitems(pairs); i++)
		if (pairs[i][0] == req)
			return pairs[i][1];
	return KNOB__ENVELOPE__BODY__NOT_SET;
}

/* Is msg the answer to the request n has out (its id, the body that
 * answers it, or an Error)?  If not, n fails with why: a reply to
 * another request or of another kind would otherwise count as ok with
 * nothing in it. */
static int
reply_fits(struct fanout *fo, struct fo_node *n, const Knob__Envelope *msg)
{
	Knob__Envelope__BodyCase want = reply_body(fo->request->body_case);
	uint64_t sent = n->next_id - 1;

	if (msg->body_case == KNOB__ENVELOPE__BODY_ERROR)
		return 1;
	if (msg->id != sent) {
		fanout_end(fo, n, NS_FAILED, "agent answered request %llu, which was never "
		    "sent (ours: %llu)", (unsigned long long)msg->id, (unsigned long long)sent);
		return 0;
	}
	if (want != KNOB__ENVELOPE__BODY__NOT_SET && msg->body_case != want) {
		fanout_end(fo, n, NS_FAILED, "agent answered %s with %s, not %s",
		    envelope_body_name(fo->request), envelope_body_name(msg),
		    envelope_body_name(&(Knob__Envelope){ .body_case = want }));
		return 0;
	}
	return 1;
}

static int
req_msg(struct fanout *fo, struct fo_node *n, Knob__Envelope *msg)
{
	if (!reply_fits(fo, n, msg)) {
		knob__envelope__free_unpacked(msg, NULL);
		return -1;
	}
	if (n->reply)
		knob__envelope__free_unpacked(n->reply, NULL);
	n->reply = msg;
	if (msg->body_case == KNOB__ENVELOPE__BODY_ERROR) {
		n->status = NS_FAILED;
		free(n->detail);
		n->detail = xstrdup(msg->error->message);
		return -1;
	}
	n->status = NS_OK;
	return 1;
}

int
fanout_request(struct fanout *fo, const Knob__Envelope *req)
{
	static const struct fo_ops ops = { .on_open = req_open, .on_msg = req_msg, .per_node = 1,
	    .via_mux = 1, .retry_busy = 1 };

	fo->request = req;
	return fanout_run(fo, &ops, NULL);
}
