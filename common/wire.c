/* Framing and buffered non-blocking I/O over TLS or plain fds. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include <sys/epoll.h>
#include <openssl/err.h>

#include "log.h"
#include "util.h"
#include "wire.h"

void
conn_init(struct conn *c, int rfd, int wfd, SSL *ssl)
{
	memset(c, 0, sizeof(*c));
	c->rfd = rfd;
	c->wfd = wfd;
	c->ssl = ssl;
}

/* Drop buffers and the SSL object; fds stay open (owned by the caller). */
void
conn_reset(struct conn *c)
{
	struct wchunk *w, *next;

	free(c->body);
	c->body = NULL;
	free(c->rbuf);
	c->rbuf = NULL;
	c->rbuf_off = c->rbuf_len = 0;
	for (w = c->wq_head; w; w = next) {
		next = w->next;
		free(w);
	}
	c->wq_head = c->wq_tail = NULL;
	c->wq_bytes = 0;
	c->body_len = c->body_have = c->body_cap = c->hdr_have = 0;
	if (c->ssl)
		SSL_free(c->ssl);
	c->ssl = NULL;
}

/* Pack into a new buffer: 4-byte big-endian length, then the message. */
int
frame_pack(const Knob__Envelope *env, uint8_t **out, size_t *len)
{
	Knob__Envelope copy = *env;
	size_t n;
	uint8_t *buf;

	if (copy.version == 0)
		copy.version = WIRE_VERSION;
	n = knob__envelope__get_packed_size(&copy);
	if (n > FRAME_MAX) {
		log_warnx("frame of %zu bytes exceeds the %u byte cap", n, FRAME_MAX);
		return -1;
	}
	buf = xmalloc(n + 4);
	buf[0] = (uint8_t)(n >> 24);
	buf[1] = (uint8_t)(n >> 16);
	buf[2] = (uint8_t)(n >> 8);
	buf[3] = (uint8_t)n;
	knob__envelope__pack(&copy, buf + 4);
	*out = buf;
	*len = n + 4;
	return 0;
}

/*
 * Decode budget.  protobuf-c allocates a struct per element of a repeated
 * message field, so 2 wire bytes (tag, length 0) become ~150 bytes of heap:
 * a 16 MiB frame of empty Settings decodes to 1.3 GB (8 million structs,
 * their pointer array and the unpacker's scan slabs; the unpack alone peaks
 * at 1.1 GB of RSS, and a knobd that went on to verify the 8 million
 * settings at 5.2 GB).  So every unpack goes through an allocator that
 * charges each allocation as a malloc chunk (size plus header, rounded to
 * 16) and refuses past the budget: the unpack fails and frees what it had.
 * Charges are cumulative (frees are not credited): a bound on the peak.
 *
 * The budget is 16 MiB plus 8 times the frame's length.  Legitimate frames,
 * charged this way, take: a PhaseResult with 4096 threads (a node's rank
 * cap), a full 3776-bucket histogram and 1 MiB of ext_output 1.8 times
 * their length; an ApplyResult of 20,000 sysfs key results 4.6; Facts with
 * 4096 block devices, a HealthResult with 2000 checks 6.8; an ApplyRequest
 * of 20,000 sysctl settings with short values 7.3, the most measured.  The
 * floor covers small frames with more structs than bytes (4096 all-zero
 * thread results: 42 KB that take 0.9 MB).  Empty repeated sub-messages
 * take 84 to 108 times their length; a 16 MiB frame of them stops at
 * 144 MiB.
 */
size_t
frame_decode_budget(size_t len)
{
	if (len > (SIZE_MAX - FRAME_DECODE_FLOOR) / FRAME_DECODE_RATIO)
		return SIZE_MAX;
	return FRAME_DECODE_FLOOR + FRAME_DECODE_RATIO * len;
}

struct decode_budget {
	size_t left;		/* bytes the unpack may still take */
	int over;		/* an allocation was refused */
};

/* protobuf-c's alloc hook: plain malloc (free_unpacked with a NULL
 * allocator frees it), NULL once the budget is spent. */
static void *
budget_alloc(void *data, size_t size)
{
	struct decode_budget *b = data;
	size_t charge = (size + 31) & ~(size_t)15;

	if (charge < size || charge > b->left) {
		b->over = 1;
		return NULL;
	}
	b->left -= charge;
	return malloc(size);
}

/* protobuf-c's free hook (a failed unpack unwinding): plain free. */
static void
budget_free(void *data, void *p)
{
	(void)data;
	free(p);
}

/* knob__envelope__unpack through the budget allocator. */
Knob__Envelope *
envelope_unpack_bounded(const uint8_t *body, size_t len, size_t budget, int *over)
{
	struct decode_budget b = { .left = budget };
	ProtobufCAllocator a = { budget_alloc, budget_free, &b };
	Knob__Envelope *env = knob__envelope__unpack(&a, len, body);

	*over = b.over;
	return env;
}

/* Unpack and check version and body; NULL plus a reason on failure. */
Knob__Envelope *
frame_unpack(const uint8_t *body, size_t len, char *err, size_t errlen)
{
	Knob__Envelope *env;
	int over;

	env = envelope_unpack_bounded(body, len, frame_decode_budget(len), &over);
	if (env == NULL && over) {
		snprintf(err, errlen, "envelope of %zu bytes would decode to more than %zu MiB",
		    len, frame_decode_budget(len) >> 20);
		return NULL;
	}
	if (env == NULL) {
		snprintf(err, errlen, "malformed envelope (%zu bytes)", len);
		return NULL;
	}
	if (env->version != WIRE_VERSION) {
		snprintf(err, errlen, "unsupported protocol version %u", env->version);
		knob__envelope__free_unpacked(env, NULL);
		return NULL;
	}
	if (env->body_case == KNOB__ENVELOPE__BODY__NOT_SET) {
		snprintf(err, errlen, "envelope %llu has no known body",
		    (unsigned long long)env->id);
		knob__envelope__free_unpacked(env, NULL);
		return NULL;
	}
	return env;
}

/* A plain read asked for fewer bytes than this (a frame's header) reads
 * up to RBUF_READ and keeps the rest: a small frame in one read(2). */
#define RBUF_SMALL 64
#define RBUF_READ 4096

/* Up to len bytes from c's kept bytes; the buffer goes once empty. */
static ssize_t
rbuf_take(struct conn *c, void *buf, size_t len)
{
	size_t k = c->rbuf_len - c->rbuf_off;

	if (k > len)
		k = len;
	memcpy(buf, c->rbuf + c->rbuf_off, k);
	c->rbuf_off += k;
	if (c->rbuf_off == c->rbuf_len) {
		free(c->rbuf);
		c->rbuf = NULL;
		c->rbuf_off = c->rbuf_len = 0;
	}
	return (ssize_t)k;
}

/* read(2) of up to c->ra bytes (RBUF_READ by default) for a small
 * request: len of them to buf, the rest kept in c->rbuf. */
static ssize_t
read_ahead(struct conn *c, void *buf, size_t len)
{
	size_t ra = c->ra > RBUF_READ ? c->ra : RBUF_READ;
	uint8_t tmp[RBUF_READ], *b = ra > RBUF_READ ? xmalloc(ra) : tmp;
	ssize_t n = read(c->rfd, b, ra);

	if (n <= 0 || (size_t)n <= len) {
		if (n > 0)
			memcpy(buf, b, (size_t)n);
		if (b != tmp)
			free(b);
		return n;
	}
	memcpy(buf, b, len);
	c->rbuf_len = (size_t)n;
	c->rbuf_off = len;
	if (b == tmp) {
		c->rbuf = xmalloc(c->rbuf_len);
		memcpy(c->rbuf, tmp, c->rbuf_len);
	} else
		c->rbuf = b;	/* kept whole: served from rbuf_off */
	return (ssize_t)len;
}

int
conn_buffered(const struct conn *c)
{
	return c->rbuf != NULL;
}

/* Read up to len bytes. >0 bytes, 0 would block, -1 EOF/error (c->err). */
static ssize_t
io_read(struct conn *c, void *buf, size_t len)
{
	ssize_t n;

	if (c->ssl) {
		int r, e;

		ERR_clear_error();
		r = SSL_read(c->ssl, buf, (int)len);
		if (r > 0)
			return r;
		e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ)
			return 0;
		if (e == SSL_ERROR_WANT_WRITE) {
			c->ssl_want_write = 1;
			return 0;
		}
		c->peer_closed = e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0);
		if (c->peer_closed)
			snprintf(c->err, sizeof(c->err), "peer closed the connection");
		else if (e == SSL_ERROR_SYSCALL)
			snprintf(c->err, sizeof(c->err), "read: %s", strerror(errno));
		else {
			char tmp[200];
			unsigned long ec = ERR_get_error();
			ERR_error_string_n(ec, tmp, sizeof(tmp));
			snprintf(c->err, sizeof(c->err), "tls read: %s", tmp);
		}
		return -1;
	}
	if (c->rbuf != NULL)
		return rbuf_take(c, buf, len);
	for (;;) {
		n = len < RBUF_SMALL ? read_ahead(c, buf, len) : read(c->rfd, buf, len);
		if (n > 0)
			return n;
		if (n == 0) {
			c->peer_closed = 1;
			snprintf(c->err, sizeof(c->err), "peer closed the connection");
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		snprintf(c->err, sizeof(c->err), "read: %s", strerror(errno));
		return -1;
	}
}

/* Takes exactly the bytes the current frame still needs (on a plain fd a
 * header's read may fetch more, kept in c for the next call: conn_buffered).
 * 1: *body holds one whole frame body of *len bytes (the caller frees). */
int
conn_recv_body(struct conn *c, uint8_t **body, size_t *len)
{
	ssize_t n;

	*body = NULL;
	for (;;) {
		if (c->hdr_have < 4) {
			n = io_read(c, c->hdr + c->hdr_have, 4 - c->hdr_have);
			if (n <= 0)
				return (int)n;
			c->hdr_have += (size_t)n;
			if (c->hdr_have < 4)
				continue;
			c->body_len = (size_t)c->hdr[0] << 24 | (size_t)c->hdr[1] << 16 |
			    (size_t)c->hdr[2] << 8 | (size_t)c->hdr[3];
			if (c->body_len > FRAME_MAX) {
				snprintf(c->err, sizeof(c->err),
				    "frame length %zu exceeds the %u byte cap", c->body_len,
				    FRAME_MAX);
				return -1;
			}
			/* the announced length is only a limit: the buffer
			 * grows with the bytes that actually arrive */
			c->body_cap = c->body_len < FRAME_CHUNK ? c->body_len : FRAME_CHUNK;
			c->body = xmalloc(c->body_cap ? c->body_cap : 1);
			c->body_have = 0;
		}
		if (c->body_have < c->body_len) {
			if (c->body_have == c->body_cap) {
				c->body_cap = c->body_cap * 2 < c->body_len ? c->body_cap * 2 :
				    c->body_len;
				c->body = xrealloc(c->body, c->body_cap);
			}
			n = io_read(c, c->body + c->body_have, c->body_cap - c->body_have);
			if (n <= 0)
				return (int)n;
			c->body_have += (size_t)n;
			if (c->body_have < c->body_len)
				continue;
		}
		*body = c->body;
		*len = c->body_len;
		c->body = NULL;
		c->hdr_have = 0;
		c->body_len = c->body_have = c->body_cap = 0;
		return 1;
	}
}

int
conn_recv(struct conn *c, Knob__Envelope **out)
{
	uint8_t *body;
	size_t len;
	int r;

	*out = NULL;
	if ((r = conn_recv_body(c, &body, &len)) <= 0)
		return r;
	*out = frame_unpack(body, len, c->err, sizeof(c->err));
	free(body);
	return *out ? 1 : -1;
}

/* Append head (hlen bytes) then tail (tlen) as one chunk; -1 when the
 * queue is full (reason in c->err). */
static int
wq_push(struct conn *c, const void *head, size_t hlen, const void *tail, size_t tlen)
{
	struct wchunk *w;

	if (c->wq_bytes >= (c->wq_max ? c->wq_max : WQ_MAX)) {
		snprintf(c->err, sizeof(c->err), "peer does not read: %zu bytes queued",
		    c->wq_bytes);
		return -1;
	}
	w = xmalloc(sizeof(*w) + hlen + tlen);
	w->next = NULL;
	w->len = hlen + tlen;
	w->off = 0;
	memcpy(w->data, head, hlen);
	if (tlen)
		memcpy(w->data + hlen, tail, tlen);
	if (c->wq_tail)
		c->wq_tail->next = w;
	else
		c->wq_head = w;
	c->wq_tail = w;
	c->wq_bytes += w->len;
	return 0;
}

int
conn_queue_frame(struct conn *c, uint8_t *frame, size_t len)
{
	int r = wq_push(c, frame, len, NULL, 0);

	free(frame);
	return r;
}

int
conn_queue_body(struct conn *c, uint8_t *body, size_t len)
{
	uint8_t hdr[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
	    (uint8_t)len };
	int r = wq_push(c, hdr, sizeof(hdr), body, len);

	free(body);
	return r;
}

int
conn_queue_tagged(struct conn *c, const void *tag, size_t tlen, const void *body, size_t blen)
{
	uint8_t head[4 + 16];
	size_t len = tlen + blen;

	if (tlen > 16) {
		snprintf(c->err, sizeof(c->err), "frame tag too long");
		return -1;
	}
	head[0] = (uint8_t)(len >> 24);
	head[1] = (uint8_t)(len >> 16);
	head[2] = (uint8_t)(len >> 8);
	head[3] = (uint8_t)len;
	if (tlen > 0)
		memcpy(head + 4, tag, tlen);
	return wq_push(c, head, 4 + tlen, body, blen);
}

int
conn_send(struct conn *c, const Knob__Envelope *env)
{
	uint8_t *frame;
	size_t len;

	if (frame_pack(env, &frame, &len) < 0)
		return -1;
	return conn_queue_frame(c, frame, len);
}

uint32_t
conn_events(const struct conn *c)
{
	return EPOLLIN | (c->wq_head != NULL || c->ssl_want_write ? EPOLLOUT : 0);
}

/* Drop n written bytes from the head of c's queue. */
static void
wq_consume(struct conn *c, size_t n)
{
	struct wchunk *w;

	c->wq_bytes -= n;
	while (n > 0 && (w = c->wq_head) != NULL) {
		size_t k = w->len - w->off < n ? w->len - w->off : n;

		w->off += k;
		n -= k;
		if (w->off < w->len)
			break;
		c->wq_head = w->next;
		if (c->wq_head == NULL)
			c->wq_tail = NULL;
		free(w);
	}
}

/* One SSL_write of the head chunk: bytes taken, 0 when OpenSSL waits, -1. */
static ssize_t
flush_tls(struct conn *c)
{
	struct wchunk *w = c->wq_head;
	int r, e;

	ERR_clear_error();
	r = SSL_write(c->ssl, w->data + w->off, (int)(w->len - w->off));
	if (r > 0)
		return r;
	e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
		c->ssl_want_write = (e == SSL_ERROR_WANT_WRITE);
		return 0;
	}
	snprintf(c->err, sizeof(c->err), "tls write failed (%d): %s", e, strerror(errno));
	return -1;
}

#define FLUSH_IOV 64

/* One writev of up to FLUSH_IOV queued chunks: bytes, 0 when the fd is
 * full, -1. */
static ssize_t
flush_plain(struct conn *c)
{
	struct iovec iov[FLUSH_IOV];
	struct wchunk *w = c->wq_head;
	int k = 0;
	ssize_t n;

	for (; w != NULL && k < FLUSH_IOV; w = w->next, k++) {
		iov[k].iov_base = w->data + w->off;
		iov[k].iov_len = w->len - w->off;
	}
	do
		n = writev(c->wfd, iov, k);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	snprintf(c->err, sizeof(c->err), "write: %s", strerror(errno));
	return -1;
}

/* Write queued chunks until the queue is empty or the fd would block. */
int
conn_flush(struct conn *c)
{
	c->ssl_want_write = 0;
	while (c->wq_head != NULL) {
		ssize_t n = c->ssl ? flush_tls(c) : flush_plain(c);

		if (n <= 0)
			return (int)n;
		wq_consume(c, (size_t)n);
	}
	return 1;
}

/* Wait for fd readiness; 1 ready, 0 timeout, -1 error. */
static int
wait_fd(int fd, short ev, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int r;

	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	return r;
}

int
conn_send_sync(struct conn *c, const Knob__Envelope *env, int timeout_ms)
{
	int r;

	if (conn_send(c, env) < 0)
		return -1;
	while ((r = conn_flush(c)) == 0)
		if (wait_fd(c->wfd, POLLOUT, timeout_ms) <= 0) {
			snprintf(c->err, sizeof(c->err), "write timed out");
			return -1;
		}
	return r < 0 ? -1 : 0;
}

int
conn_recv_sync(struct conn *c, Knob__Envelope **out, int timeout_ms)
{
	int r;

	for (;;) {
		r = conn_recv(c, out);
		if (r != 0)
			return r;
		if (c->ssl_want_write) {
			if (conn_flush(c) < 0)
				return -1;
		}
		r = wait_fd(c->rfd, POLLIN, timeout_ms);
		if (r <= 0)
			return r;
	}
}

const char *
envelope_body_name(const Knob__Envelope *env)
{
	const ProtobufCFieldDescriptor *f;

	f = protobuf_c_message_descriptor_get_field(&knob__envelope__descriptor,
	    (unsigned)env->body_case);
	return f ? f->name : "none";
}

void
pb_free_fields(ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	ProtobufCMessage *copy;

	if (d == NULL)
		return;
	/* free_unpacked frees the top message too: hand it a copy */
	copy = xmalloc(d->sizeof_message);
	memcpy(copy, m, d->sizeof_message);
	protobuf_c_message_free_unpacked(copy, NULL);
	protobuf_c_message_init(d, m);
}
