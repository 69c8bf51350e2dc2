/* Framing: 4-byte big-endian length + one packed knob.Envelope, over a
 * connection that is either TLS (SSL*) or a plain pair of fds (--stdio). */
#ifndef KNOB_WIRE_H
#define KNOB_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>

#include "knob.pb-c.h"

#define FRAME_MAX (16u << 20)	/* hard cap on an announced frame length */
#define FRAME_CHUNK (64u << 10)	/* first allocation for a frame body; it
				 * doubles as bytes arrive, up to the length */
#define WQ_MAX (1u << 20)	/* write queue cap: more than this queued
				 * behind an unsent frame means the peer
				 * does not read; conn_queue_frame refuses */
#define WIRE_VERSION KNOB__VERSION__VERSION_1
#define WAIT_MAX_S 86400u	/* an apply's or rollback's wait_s for the tuning
				 * lock: knobctl refuses more, the agent caps it */
/* What one frame may decode to (frame_decode_budget): a floor plus a
 * multiple of the frame's length; the reasons are in wire.c. */
#define FRAME_DECODE_FLOOR (16u << 20)
#define FRAME_DECODE_RATIO 8u

struct wchunk {
	struct wchunk *next;
	size_t len, off;
	uint8_t data[];
};

struct conn {
	int rfd, wfd;		/* same fd for sockets */
	SSL *ssl;		/* NULL for plain (stdio) */
	/* reader state: header, then body of exactly body_len bytes */
	uint8_t hdr[4];
	size_t hdr_have;
	uint8_t *body;
	size_t body_len, body_have, body_cap;
	/* plain fds: bytes read past what a call asked for, until consumed */
	uint8_t *rbuf;
	size_t rbuf_off, rbuf_len;
	size_t ra;		/* plain fds: a small read fetches up to this
				 * (0: RBUF_READ, 4 KiB; a stream of many
				 * small frames, as the holder's, sets more) */
	/* writer queue */
	struct wchunk *wq_head, *wq_tail;
	size_t wq_bytes;
	size_t wq_max;		/* 0: WQ_MAX */
	int ssl_want_write;	/* last SSL op wanted POLLOUT */
	int peer_closed;	/* the last -1 was the peer closing, not an error */
	char err[256];		/* reason for the last -1 */
};

void conn_init(struct conn *c, int rfd, int wfd, SSL *ssl);
/* Free buffers and the SSL object; does not close fds. */
void conn_reset(struct conn *c);

/* Pack env (version filled in if 0) into a newly allocated frame. */
int frame_pack(const Knob__Envelope *env, uint8_t **out, size_t *len);
/* Validate and unpack one frame body; NULL with reason in err on failure
 * (malformed, or it would decode to more than frame_decode_budget(len)).
 * The envelope is plain malloc memory: knob__envelope__free_unpacked(env,
 * NULL) frees it. */
Knob__Envelope *frame_unpack(const uint8_t *body, size_t len, char *err, size_t errlen);
/* Heap bytes (malloc's chunks, counted cumulatively) an unpack of a len-byte
 * body may take: FRAME_DECODE_FLOOR + FRAME_DECODE_RATIO * len. */
size_t frame_decode_budget(size_t len);
/* frame_unpack's decode with the budget given: NULL when body is malformed
 * or would take more (then *over is 1).  Plain malloc memory, as above. */
Knob__Envelope *envelope_unpack_bounded(const uint8_t *body, size_t len, size_t budget,
    int *over);

/* Non-blocking receive of one envelope.
 * 1: *out set (caller frees with knob__envelope__free_unpacked(*out, NULL));
 * 0: need more input (it reads until the socket and the TLS buffer are
 * empty, so epoll's next wake-up is enough); -1: closed or protocol error
 * (reason in c->err). */
int conn_recv(struct conn *c, Knob__Envelope **out);
/* The same for one frame's bytes, not unpacked (a relay's view): 1 with
 * *body (*len bytes, the caller frees), 0 or -1 as conn_recv. */
int conn_recv_body(struct conn *c, uint8_t **body, size_t *len);
/* 1 when bytes already read from a plain fd wait in c (a reader that stops
 * after one frame must come back for them: epoll will not say). */
int conn_buffered(const struct conn *c);
/* Queue a packed frame (takes ownership of frame).  0, or -1 when the
 * queue already holds WQ_MAX bytes (the peer does not read; the frame is
 * dropped, the reason is in c->err and the caller closes). */
int conn_queue_frame(struct conn *c, uint8_t *frame, size_t len);
/* Queue a frame body from conn_recv_body with its length header (takes
 * ownership of body).  0 or -1 as conn_queue_frame. */
int conn_queue_body(struct conn *c, uint8_t *body, size_t len);
/* Queue one frame made of tag (tlen bytes) then body (blen), both
 * copied: a relay's frame with a prefix of its own.  0 or -1 as
 * conn_queue_frame. */
int conn_queue_tagged(struct conn *c, const void *tag, size_t tlen, const void *body,
    size_t blen);
/* Pack and queue env. 0 or -1. */
int conn_send(struct conn *c, const Knob__Envelope *env);
/* The epoll events c needs: input always, output while it has a queue
 * (or OpenSSL wants to write). */
uint32_t conn_events(const struct conn *c);
/* Write as much as possible (a plain fd: many chunks to one writev).
 * 1: queue empty, 0: more pending, -1: error. */
int conn_flush(struct conn *c);
/* Blocking convenience used by simple clients and --stdio: send + flush. */
int conn_send_sync(struct conn *c, const Knob__Envelope *env, int timeout_ms);
/* Blocking receive of one envelope with a timeout. 1 ok, 0 timeout, -1 error. */
int conn_recv_sync(struct conn *c, Knob__Envelope **out, int timeout_ms);

/* Name of an envelope's body, for logs ("ping", "apply", ...). */
const char *envelope_body_name(const Knob__Envelope *env);
/* Free what a message built field by field with malloc holds: strings
 * (not the empty default), repeated fields and sub-messages, through
 * protobuf-c's own walk of the descriptor.  The message itself is not
 * freed; it is left initialised, so a second call is harmless. */
void pb_free_fields(ProtobufCMessage *m);

#endif
