/* knob-sim --sni: one listening socket for every simulated agent.  A
 * connection waits here until its ClientHello has arrived; the server
 * name it asks for (the controller sends SNI = node name) picks the agent
 * instance, and the connection is handed to that instance, which runs the
 * whole TLS handshake with its own context (certificate block, ticket
 * keys) and serves it as if its own listener had accepted it.
 *
 * The ClientHello is read with MSG_PEEK and parsed by OpenSSL (a throwaway
 * SSL over memory BIOs whose client-hello callback reads the server_name
 * extension), so the bytes stay in the socket for the agent.  It is
 * peeked and parsed only when another whole TLS record has arrived (the
 * socket's FIONREAD against the end of the record its header announced),
 * all of them within SNI_PEEK_MAX: a client that sends its ClientHello a
 * byte at a time costs a system call per byte and one parse per record,
 * not a peek and a parse of everything so far per byte.  A name the
 * simulator does not know, or none, gets an unrecognized_name alert and
 * the connection is closed.  Connections that send no ClientHello within
 * the deadline are closed; at most SNI_PEND_MAX wait at once (the oldest
 * goes first). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <openssl/ssl.h>

#include "agent.h"
#include "log.h"
#include "sim.h"
#include "util.h"

#define SNI_PEEK_MAX	(16384 + 5)	/* one TLS record: a ClientHello fits */
#define TLS_HDR		5		/* a TLS record's header */
#define TLS_HANDSHAKE	22		/* its content type for a ClientHello */
#define SNI_TICK_NS	(250ull * 1000000ull)
#define SNI_UNKNOWN_LOGGED 10	/* refused names logged one by one; then summed */

/* An accepted connection whose ClientHello has not arrived yet. */
struct sni_pend {
	struct sni_pend *next, *prev;
	struct sim_sni *f;
	int fd;
	uint64_t accept_ns;
	struct sockaddr_storage ss;
	socklen_t sl;
	size_t parsed;		/* bytes of whole records parsed (0: none yet) */
	size_t want;		/* bytes the next whole record ends at (FIONREAD) */
	unsigned parses;	/* for the log at hand-off */
};

struct sim_sni {
	struct ev_base *base;
	int lfd;
	SSL_CTX *peek_ctx;		/* parses ClientHellos, never completes one */
	sim_sni_lookup_fn lookup;
	sim_sni_handoff_fn handoff;
	void *arg;
	uint64_t deadline_ns;
	struct sni_pend *pend;		/* newest first */
	struct sni_pend *oldest;
	unsigned npend;
	struct ev_timer timer;
	struct listen_pause lpause;	/* lfd out of descriptors */
	unsigned long unknown;		/* refused names, for the log */
	/* refusals not logged one by one (out of descriptors; names after
	 * the first SNI_UNKNOWN_LOGGED), until the next summary */
	unsigned long nofile, unknown_quiet;
	uint64_t summary_ns;		/* the last summary (once a second) */
};

/* What the client-hello callback found. */
struct sni_peek {
	struct sim_sni *f;
	struct agent *agent;		/* NULL: unknown name */
	char name[256];
};

/* The host_name of a server_name extension (RFC 6066 3) into buf: 0, or
 * -1 when there is none. */
static int
sni_host_name(const unsigned char *p, size_t len, char *buf, size_t buflen)
{
	size_t list, n;

	if (len < 2 || (list = (size_t)p[0] << 8 | p[1]) != len - 2)
		return -1;
	for (p += 2; list >= 3; p += 3 + n, list -= 3 + n) {
		n = (size_t)p[1] << 8 | p[2];
		if (n > list - 3)
			return -1;
		if (p[0] == TLSEXT_NAMETYPE_host_name && n > 0 && n < buflen) {
			memcpy(buf, p + 3, n);
			buf[n] = '\0';
			return memchr(buf, '\0', n) ? -1 : 0;
		}
	}
	return -1;
}

/* OpenSSL's client-hello callback: find the instance, then pause (the
 * real handshake is the agent's); an unknown name is an alert. */
static int
sni_hello_cb(SSL *s, int *al, void *arg)
{
	struct sni_peek *pk = SSL_get_app_data(s);
	const unsigned char *p;
	size_t len;

	(void)arg;
	if (SSL_client_hello_get0_ext(s, TLSEXT_TYPE_server_name, &p, &len) == 1 &&
	    sni_host_name(p, len, pk->name, sizeof(pk->name)) == 0)
		pk->agent = pk->f->lookup(pk->f->arg, pk->name);
	if (pk->agent != NULL)
		return SSL_CLIENT_HELLO_RETRY;
	*al = SSL_AD_UNRECOGNIZED_NAME;
	return SSL_CLIENT_HELLO_ERROR;
}

/* Parse the n peeked bytes: 1 = instance found (pk->agent), 0 = the
 * ClientHello is not complete yet (and more may come: !last), -1 =
 * refused; alert bytes (malloc'd) in *out, *outlen. */
static int
sni_parse(struct sim_sni *f, const unsigned char *buf, size_t n, int last,
    struct sni_peek *pk, char **out, long *outlen)
{
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	SSL *s = SSL_new(f->peek_ctx);
	char *data;
	int r, e, rc = -1;

	*out = NULL;
	*outlen = 0;
	if (rb == NULL || wb == NULL || s == NULL || BIO_write(rb, buf, (int)n) != (int)n) {
		BIO_free(rb);
		BIO_free(wb);
		SSL_free(s);
		return -1;
	}
	BIO_set_mem_eof_return(rb, -1);	/* the end of the peek: "want more" */
	SSL_set_bio(s, rb, wb);
	SSL_set_app_data(s, pk);
	r = SSL_accept(s);
	e = SSL_get_error(s, r);
	if (e == SSL_ERROR_WANT_CLIENT_HELLO_CB && pk->agent != NULL)
		rc = 1;
	else if (e == SSL_ERROR_WANT_READ && !last)
		rc = 0;
	if (rc < 0 && (*outlen = BIO_get_mem_data(wb, &data)) > 0) {
		*out = xmalloc((size_t)*outlen);
		memcpy(*out, data, (size_t)*outlen);
	}
	SSL_free(s);
	return rc;
}

static void on_pend(int fd, uint32_t events, void *arg);

/* The refusals not logged one by one since the last summary, at most
 * once a second unless now (the listener goes). */
static void
sni_summary(struct sim_sni *f, int now)
{
	uint64_t t = now_mono_ns();

	if ((f->nofile == 0 && f->unknown_quiet == 0) ||
	    (!now && t - f->summary_ns < 1000000000ull))
		return;
	if (f->nofile)
		log_warnx("SNI: out of file descriptors: refused %lu connection(s)", f->nofile);
	if (f->unknown_quiet)
		log_warnx("SNI: refused %lu more connection(s) naming no simulated node",
		    f->unknown_quiet);
	f->nofile = f->unknown_quiet = 0;
	f->summary_ns = t;
}

/* Forget p (its fd is closed unless keep). */
static void
pend_drop(struct sim_sni *f, struct sni_pend *p, int keep)
{
	ev_io_del(f->base, p->fd);
	if (!keep)
		close(p->fd);
	if (p->prev)
		p->prev->next = p->next;
	else
		f->pend = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		f->oldest = p->prev;
	f->npend--;
	free(p);
	if (f->npend == 0)
		ev_timer_del(f->base, &f->timer);
}

/* Refuse p: the alert, then close (its ClientHello is read first, so the
 * close is a FIN and not a reset that would destroy the alert). */
static void
pend_refuse(struct sim_sni *f, struct sni_pend *p, const struct sni_peek *pk,
    const char *alert, long alertlen)
{
	char sink[4096];

	if (f->unknown++ < SNI_UNKNOWN_LOGGED)
		log_warnx("SNI: no simulated node named '%s'; refused",
		    pk->name[0] ? pk->name : "(no server name)");
	else {
		f->unknown_quiet++;
		sni_summary(f, 0);
	}
	while (recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
	if (alert != NULL && write(p->fd, alert, (size_t)alertlen) < 0)
		log_debug("SNI: alert: %s", strerror(errno));
	shutdown(p->fd, SHUT_WR);
	pend_drop(f, p, 0);
}

/* The bytes of the whole TLS records at the start of the n bytes of buf
 * (their sum), and in *want where the next one ends once its header is
 * there (else its header's end); -1 when a header is not a handshake
 * record's (no TLS: the parse refuses it). */
static long
sni_whole(const unsigned char *buf, size_t n, size_t *want)
{
	size_t off = 0, len;

	for (;;) {
		*want = off + TLS_HDR;
		if (off + TLS_HDR > n)
			return (long)off;
		len = (size_t)buf[off + 3] << 8 | buf[off + 4];
		if (buf[off] != TLS_HANDSHAKE || len > SNI_PEEK_MAX - TLS_HDR)
			return -1;
		*want = off + TLS_HDR + len;
		if (*want > n)
			return (long)off;
		off = *want;
	}
}

/* Hand p over, or refuse it, by what the parse r of its peek (pk, alert)
 * said; 0 (the ClientHello is not complete yet) leaves it waiting. */
static void
pend_decide(struct sim_sni *f, struct sni_pend *p, int r, const struct sni_peek *pk,
    const char *alert, long alertlen)
{
	struct sockaddr_storage ss = p->ss;
	socklen_t sl = p->sl;
	int fd = p->fd;

	if (r == 1) {
		log_debug("SNI: connection for %s: ClientHello of %zu bytes parsed %u time(s)",
		    pk->name, p->parsed, p->parses);
		pend_drop(f, p, 1);
		f->handoff(f->arg, pk->agent, fd, (struct sockaddr *)&ss, (unsigned)sl);
	} else if (r < 0)
		pend_refuse(f, p, pk, alert, alertlen);
}

/* Peek at p's bytes (n of them waiting, SNI_PEEK_MAX at most) and parse
 * the whole records among them when there are more than last time, or
 * everything when no more can come (hup) or it is no TLS. */
static void
pend_peek(struct sim_sni *f, struct sni_pend *p, size_t n, int hup)
{
	struct sni_peek pk = { .f = f };
	unsigned char *buf = xmalloc(n);
	char *alert = NULL;
	long whole, alertlen = 0;
	ssize_t got;
	int last, r;

	got = recv(p->fd, buf, n, MSG_PEEK | MSG_DONTWAIT);
	if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		goto out;
	if (got <= 0) {
		pend_drop(f, p, 0);
		goto out;
	}
	whole = sni_whole(buf, (size_t)got, &p->want);
	last = hup || whole < 0 || p->want > SNI_PEEK_MAX;
	if (whole < 0 || (last && whole == 0))
		whole = got;	/* for the refusal and its alert */
	if ((size_t)whole <= p->parsed && !last)
		goto out;	/* no new whole record */
	p->parsed = (size_t)whole;
	p->parses++;
	r = sni_parse(f, buf, (size_t)whole, last, &pk, &alert, &alertlen);
	pend_decide(f, p, r, &pk, alert, alertlen);
	free(alert);
out:
	free(buf);
}

/* Data (or a hang-up) on a waiting connection: hand it over once its
 * ClientHello names an instance.  Nothing is peeked until the bytes
 * waiting reach the end of the next record (p->want). */
static void
on_pend(int fd, uint32_t events, void *arg)
{
	struct sni_pend *p = arg;
	int avail = 0, hup = (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;

	if (ioctl(fd, FIONREAD, &avail) < 0 || avail < 0)
		avail = 0;
	if ((size_t)avail > SNI_PEEK_MAX)
		avail = SNI_PEEK_MAX;
	if (!hup && (size_t)avail < p->want)
		return;
	pend_peek(p->f, p, hup && avail == 0 ? 1 : (size_t)avail, hup);
}

/* Close waiting connections past the deadline; tick while any wait. */
static void
on_sni_timer(void *arg)
{
	struct sim_sni *f = arg;
	uint64_t now = now_mono_ns();

	while (f->oldest != NULL && now - f->oldest->accept_ns > f->deadline_ns) {
		log_debug("SNI: no ClientHello from a connection in %llu s; closing",
		    (unsigned long long)(f->deadline_ns / 1000000000ull));
		pend_drop(f, f->oldest, 0);
	}
	if (f->npend)
		ev_timer_set(f->base, &f->timer, SNI_TICK_NS, on_sni_timer, f);
}

/* accept(2) failed with errno e (listen_failed): refusals for want of
 * descriptors are summarised.  1 to accept again, 0 to stop. */
static int
sni_accept_failed(struct sim_sni *f, int e)
{
	int r = listen_failed(&f->lpause, e);

	if (r == 2) {
		f->nofile++;
		sni_summary(f, 0);
	}
	return r != 0;
}

/* New connections on the shared listener: wait for their ClientHellos
 * (edge-triggered: the peeked bytes stay readable until the agent reads). */
static void
on_sni_listen(int lfd, uint32_t events, void *arg)
{
	struct sim_sni *f = arg;

	(void)events;
	for (int batch = 0; batch < 64; batch++) {
		struct sni_pend *p = xcalloc(1, sizeof(*p));

		p->sl = sizeof(p->ss);
		p->fd = accept4(lfd, (struct sockaddr *)&p->ss, &p->sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (p->fd < 0) {
			int e = errno;

			free(p);
			if (!sni_accept_failed(f, e))
				return;
			continue;
		}
		listen_accepted(&f->lpause);
		if (f->npend >= SNI_PEND_MAX)
			pend_drop(f, f->oldest, 0);
		p->f = f;
		p->accept_ns = now_mono_ns();
		p->want = TLS_HDR;
		if (ev_io_add(f->base, p->fd, EPOLLIN | EPOLLRDHUP | EPOLLET, on_pend, p) < 0) {
			log_warn("epoll");
			close(p->fd);
			free(p);
			continue;
		}
		p->next = f->pend;
		if (f->pend)
			f->pend->prev = p;
		else
			f->oldest = p;
		f->pend = p;
		if (f->npend++ == 0)
			ev_timer_set(f->base, &f->timer, SNI_TICK_NS, on_sni_timer, f);
	}
}

struct sim_sni *
sim_sni_new(struct ev_base *base, const char *listen, unsigned deadline_s,
    sim_sni_lookup_fn lookup, sim_sni_handoff_fn handoff, void *arg, char *err, size_t errlen)
{
	struct sim_sni *f = xcalloc(1, sizeof(*f));

	f->base = base;
	f->lookup = lookup;
	f->handoff = handoff;
	f->arg = arg;
	f->deadline_ns = (uint64_t)deadline_s * 1000000000ull;
	f->peek_ctx = SSL_CTX_new(TLS_server_method());
	if (f->peek_ctx == NULL || !SSL_CTX_set_min_proto_version(f->peek_ctx, TLS1_3_VERSION)) {
		snprintf(err, errlen, "SNI: cannot make a TLS context");
		goto fail;
	}
	SSL_CTX_set_client_hello_cb(f->peek_ctx, sni_hello_cb, NULL);
	if ((f->lfd = agent_listen(listen, err, errlen)) < 0)
		goto fail;
	fd_spare_reserve();	/* sni_accept_failed */
	f->lpause = (struct listen_pause){ .b = base, .lfd = f->lfd, .who = "SNI: " };
	if (ev_io_add(base, f->lfd, EPOLLIN, on_sni_listen, f) < 0) {
		snprintf(err, errlen, "SNI: epoll: %s", strerror(errno));
		close(f->lfd);
		goto fail;
	}
	return f;
fail:
	SSL_CTX_free(f->peek_ctx);
	free(f);
	return NULL;
}

void
sim_sni_free(struct sim_sni *f)
{
	if (f == NULL)
		return;
	while (f->pend)
		pend_drop(f, f->pend, 0);
	sni_summary(f, 1);
	ev_timer_del(f->base, &f->timer);
	listen_pause_stop(&f->lpause);
	ev_io_del(f->base, f->lfd);
	close(f->lfd);
	SSL_CTX_free(f->peek_ctx);
	free(f);
}
