/* Unit tests for framing: round trips, partial delivery, the length cap,
 * truncated and garbage frames; a plain queue written many chunks per
 * writev, and a writev cut inside a chunk; a 64 KiB read-ahead; the decode
 * budget: empty repeated sub-messages refused, the biggest legitimate
 * messages decoded. */
#include <check.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "testutil.h"
#include "hist.h"
#include "log.h"
#include "util.h"
#include "wire.h"

static int sv[2];
static struct conn rx;

static void
setup(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	conn_init(&rx, sv[0], sv[0], NULL);
}

static void
teardown(void)
{
	conn_reset(&rx);
	close(sv[0]);
	close(sv[1]);
}

static void
put(const void *p, size_t n)
{
	ck_assert_int_eq(write(sv[1], p, n), (ssize_t)n);
}

static void
put_len(uint32_t len)
{
	uint8_t h[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len };
	put(h, 4);
}

START_TEST(roundtrip)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Ping ping = KNOB__PING__INIT;
	uint8_t *f;
	size_t len;

	env.id = 42;
	ping.t_send_ns = 123456789;
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	ck_assert_int_eq(frame_pack(&env, &f, &len), 0);
	ck_assert_uint_eq((size_t)f[0] << 24 | f[1] << 16 | f[2] << 8 | f[3], len - 4);
	put(f, len);
	free(f);
	ck_assert_int_eq(conn_recv(&rx, &got), 1);
	ck_assert_uint_eq(got->id, 42);
	ck_assert_uint_eq(got->version, WIRE_VERSION);
	ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_PING);
	ck_assert_uint_eq(got->ping->t_send_ns, 123456789);
	knob__envelope__free_unpacked(got, NULL);
	ck_assert_int_eq(conn_recv(&rx, &got), 0);	/* nothing more: would block */
}
END_TEST

START_TEST(partial_delivery)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Error e = KNOB__ERROR__INIT;
	uint8_t *f;
	size_t len;

	e.code = 5;
	e.message = (char *)(uintptr_t)"byte by byte";
	env.id = 7;
	env.body_case = KNOB__ENVELOPE__BODY_ERROR;
	env.error = &e;
	ck_assert_int_eq(frame_pack(&env, &f, &len), 0);
	for (size_t i = 0; i + 1 < len; i++) {
		put(f + i, 1);
		ck_assert_int_eq(conn_recv(&rx, &got), 0);
	}
	put(f + len - 1, 1);
	free(f);
	ck_assert_int_eq(conn_recv(&rx, &got), 1);
	ck_assert_str_eq(got->error->message, "byte by byte");
	knob__envelope__free_unpacked(got, NULL);
}
END_TEST

START_TEST(length_cap_4gib)
{
	Knob__Envelope *got = NULL;

	put_len(0xffffffffu);
	ck_assert_int_eq(conn_recv(&rx, &got), -1);
	ck_assert_ptr_null(got);
	ck_assert_ptr_null(rx.body);	/* nothing was allocated for it */
	ck_assert_ptr_nonnull(strstr(rx.err, "exceeds"));
}
END_TEST

START_TEST(length_just_over_cap)
{
	Knob__Envelope *got = NULL;

	put_len(FRAME_MAX + 1);
	ck_assert_int_eq(conn_recv(&rx, &got), -1);
	ck_assert_ptr_null(rx.body);
}
END_TEST

START_TEST(garbage_body)
{
	static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x99, 0x01 };
	Knob__Envelope *got = NULL;

	put_len(sizeof(junk));
	put(junk, sizeof(junk));
	ck_assert_int_eq(conn_recv(&rx, &got), -1);
	ck_assert_ptr_nonnull(strstr(rx.err, "malformed"));
}
END_TEST

START_TEST(unknown_body)
{
	/* version=1, id=9, then field 99 (varint 1): a body this build does not know */
	static const uint8_t msg[] = { 0x08, 0x01, 0x10, 0x09, 0x98, 0x06, 0x01 };
	Knob__Envelope *got = NULL;

	put_len(sizeof(msg));
	put(msg, sizeof(msg));
	ck_assert_int_eq(conn_recv(&rx, &got), -1);
	ck_assert_ptr_nonnull(strstr(rx.err, "no known body"));
}
END_TEST

START_TEST(wrong_version)
{
	static const uint8_t msg[] = { 0x08, 0x07, 0x10, 0x01, 0x52, 0x00 };	/* version 7, ping{} */
	Knob__Envelope *got = NULL;

	put_len(sizeof(msg));
	put(msg, sizeof(msg));
	ck_assert_int_eq(conn_recv(&rx, &got), -1);
	ck_assert_ptr_nonnull(strstr(rx.err, "version 7"));
}
END_TEST

START_TEST(truncated_then_eof)
{
	static const uint8_t part[] = { 0x08, 0x01 };
	Knob__Envelope *got = NULL;

	put_len(100);
	put(part, sizeof(part));
	ck_assert_int_eq(conn_recv(&rx, &got), 0);
	close(sv[1]);
	sv[1] = open("/dev/null", 0);	/* keep teardown's close harmless */
	ck_assert_int_eq(conn_recv(&rx, &got), -1);
	ck_assert_ptr_nonnull(strstr(rx.err, "closed"));
}
END_TEST

/* Pack a Ping with id into *f (*len bytes). */
static void
ping_frame(uint64_t id, uint8_t **f, size_t *len)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping ping = KNOB__PING__INIT;

	env.id = id;
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	ck_assert_int_eq(frame_pack(&env, f, len), 0);
}

/* The next frame is a Ping with id. */
static void
expect_ping(uint64_t id)
{
	Knob__Envelope *got = NULL;

	ck_assert_int_eq(conn_recv(&rx, &got), 1);
	ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_PING);
	ck_assert_uint_eq(got->id, id);
	knob__envelope__free_unpacked(got, NULL);
}

/* Bytes still on the socket, not yet read. */
static int
unread(void)
{
	int n = -1;

	ck_assert_int_eq(ioctl(sv[0], FIONREAD, &n), 0);
	return n;
}

/* Small frames sent together are taken off the socket by the first
 * header's read and handed out one by one from the connection; a frame
 * cut short stays pending until its last bytes come. */
START_TEST(frames_in_one_read)
{
	uint8_t *f[4], all[1024];
	size_t len[4], n = 0;
	Knob__Envelope *got = NULL;

	for (int i = 0; i < 4; i++) {
		ping_frame((uint64_t)i + 1, &f[i], &len[i]);
		memcpy(all + n, f[i], i < 3 ? len[i] : 6);
		n += i < 3 ? len[i] : 6;
	}
	put(all, n);
	expect_ping(1);
	ck_assert_int_eq(unread(), 0);	/* one read(2) took all of it */
	ck_assert_int_eq(conn_buffered(&rx), 1);
	expect_ping(2);
	expect_ping(3);
	ck_assert_int_eq(conn_recv(&rx, &got), 0);	/* the fourth is cut short */
	ck_assert_int_eq(conn_buffered(&rx), 0);
	put(f[3] + 6, len[3] - 6);
	expect_ping(4);
	ck_assert_int_eq(conn_recv(&rx, &got), 0);
	for (int i = 0; i < 4; i++)
		free(f[i]);
}
END_TEST

/* A frame longer than the header's read: its first bytes come from the
 * connection, the rest straight from the socket, and the frame after it
 * is intact. */
START_TEST(long_frame_then_small)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Error e = KNOB__ERROR__INIT;
	char *msg = xmalloc(10001);
	uint8_t *f, *p;
	size_t len, plen;

	memset(msg, 'x', 10000);
	msg[10000] = '\0';
	msg[4500] = 'y';	/* past the first read's bytes */
	e.message = msg;
	env.id = 9;
	env.body_case = KNOB__ENVELOPE__BODY_ERROR;
	env.error = &e;
	ck_assert_int_eq(frame_pack(&env, &f, &len), 0);
	ping_frame(10, &p, &plen);
	put(f, len);
	put(p, plen);
	ck_assert_int_eq(conn_recv(&rx, &got), 1);
	ck_assert_uint_eq(got->id, 9);
	ck_assert_str_eq(got->error->message, msg);
	knob__envelope__free_unpacked(got, NULL);
	expect_ping(10);
	ck_assert_int_eq(conn_buffered(&rx), 0);
	free(f);
	free(p);
	free(msg);
}
END_TEST

START_TEST(pack_refuses_oversize)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Error e = KNOB__ERROR__INIT;
	uint8_t *f = NULL;
	size_t len = 0;
	char *big = xmalloc(FRAME_MAX + 10);

	memset(big, 'x', FRAME_MAX + 9);
	big[FRAME_MAX + 9] = '\0';
	e.message = big;
	env.body_case = KNOB__ENVELOPE__BODY_ERROR;
	env.error = &e;
	ck_assert_int_eq(frame_pack(&env, &f, &len), -1);
	free(big);
}
END_TEST

START_TEST(queue_and_flush)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Ping ping = KNOB__PING__INIT;
	struct conn tx;

	conn_init(&tx, sv[1], sv[1], NULL);
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	for (int i = 1; i <= 3; i++) {
		env.id = (uint64_t)i;
		ck_assert_int_eq(conn_send(&tx, &env), 0);
	}
	ck_assert_int_eq(conn_flush(&tx), 1);
	for (int i = 1; i <= 3; i++) {
		ck_assert_int_eq(conn_recv(&rx, &got), 1);
		ck_assert_uint_eq(got->id, (uint64_t)i);
		knob__envelope__free_unpacked(got, NULL);
	}
	conn_reset(&tx);
}
END_TEST

/* Write system calls this process made so far (/proc/self/io syscw),
 * -1 if unknown.  No ck_assert (cu_slurp has one): each writes to
 * check's own channel, which syscw would count. */
static long
syscw_self(void)
{
	char *t = NULL, *p;
	long n;

	if (read_file_bounded("/proc/self/io", 4096, &t, NULL) < 0)
		return -1;
	p = strstr(t, "syscw: ");
	n = p ? strtol(p + 7, NULL, 10) : -1;

	free(t);
	return n;
}

/* A plain connection's queue goes out FLUSH_IOV (64) chunks per writev:
 * 100 frames in two system calls, in order. */
START_TEST(flush_gathers)
{
	Knob__Envelope *got = NULL;
	struct conn tx;
	uint8_t *f;
	size_t len;
	long w0, w1;
	int r;

	conn_init(&tx, sv[1], sv[1], NULL);
	for (int i = 1; i <= 100; i++) {
		ping_frame((uint64_t)i, &f, &len);
		ck_assert_int_eq(conn_queue_frame(&tx, f, len), 0);
	}
	w0 = syscw_self();
	r = conn_flush(&tx);
	w1 = syscw_self();
	ck_assert_int_eq(r, 1);
	ck_assert_int_ge(w0, 0);
	ck_assert_int_eq(w1 - w0, 2);
	for (int i = 1; i <= 100; i++)
		expect_ping((uint64_t)i);
	ck_assert_int_eq(conn_recv(&rx, &got), 0);
	conn_reset(&tx);
}
END_TEST

/* A writev the socket takes only part of: the rest, from inside a
 * chunk, goes out on the next flushes, every byte once and in order. */
START_TEST(flush_partial)
{
	struct conn tx;
	uint8_t *body;
	size_t len, got = 0;
	int r, nf = 0;

	conn_init(&tx, sv[1], sv[1], NULL);
	tx.wq_max = 64u << 20;
	for (int i = 0; i < 300; i++) {
		uint8_t b[10000];

		memset(b, i & 0xff, sizeof(b));
		ck_assert_int_eq(conn_queue_tagged(&tx, "T", 1, b, sizeof(b)), 0);
	}
	while ((r = conn_flush(&tx)) == 0 || nf < 300) {
		ck_assert_int_ge(r, 0);
		while (conn_recv_body(&rx, &body, &len) == 1) {
			ck_assert_uint_eq(len, 10001);
			ck_assert_int_eq(body[0], 'T');
			ck_assert_int_eq(body[1], nf & 0xff);
			ck_assert_int_eq(body[10000], nf & 0xff);
			free(body);
			nf++;
			got += len;
		}
		if (r == 1 && nf == 300)
			break;
	}
	ck_assert_int_eq(nf, 300);
	ck_assert_uint_eq(tx.wq_bytes, 0);
	conn_reset(&tx);
}
END_TEST

/* A connection reading ahead 64 KiB (the holder's channel): a long
 * frame, three pings and part of a fifth in one read, served from the
 * kept bytes; the cut frame completes from the socket. */
START_TEST(wide_read_ahead)
{
	uint8_t all[20000], *f, *p[4];
	size_t len, plen[4], n = 0;
	Knob__Envelope *got = NULL;
	uint8_t *body;
	size_t blen;

	rx.ra = 64u << 10;
	f = xmalloc(12004);
	f[0] = 0; f[1] = 0; f[2] = 0x2e; f[3] = 0xe0;	/* 12000 */
	memset(f + 4, 'z', 12000);
	len = 12004;
	memcpy(all, f, len);
	n = len;
	for (int i = 0; i < 4; i++) {
		ping_frame((uint64_t)i + 1, &p[i], &plen[i]);
		memcpy(all + n, p[i], i < 3 ? plen[i] : 5);
		n += i < 3 ? plen[i] : 5;
	}
	put(all, n);
	ck_assert_int_eq(conn_recv_body(&rx, &body, &blen), 1);
	ck_assert_uint_eq(blen, 12000);
	ck_assert_int_eq(body[11999], 'z');
	free(body);
	ck_assert_int_eq(unread(), 0);	/* one read(2) took all of it */
	expect_ping(1);
	expect_ping(2);
	expect_ping(3);
	ck_assert_int_eq(conn_recv(&rx, &got), 0);
	ck_assert_int_eq(conn_buffered(&rx), 0);
	put(p[3] + 5, plen[3] - 5);
	expect_ping(4);
	free(f);
	for (int i = 0; i < 4; i++)
		free(p[i]);
}
END_TEST

/* A body of empty repeated Settings is refused with the reason, at 1 MiB
 * and at the frame cap (where an unbounded unpack takes 1.3 GB); 64 KiB
 * of them, within the floor, still decodes. */
START_TEST(decode_budget_refuses_empty_repeated)
{
	size_t lens[] = { 1u << 20, FRAME_MAX };
	char err[256], want[128];
	Knob__Envelope *got;
	uint8_t *b;

	for (size_t i = 0; i < nitems(lens); i++) {
		b = cu_empty_settings_body(lens[i]);
		err[0] = '\0';
		ck_assert_ptr_null(frame_unpack(b, lens[i], err, sizeof(err)));
		snprintf(want, sizeof(want), "envelope of %zu bytes would decode to more than "
		    "%zu MiB", lens[i], frame_decode_budget(lens[i]) >> 20);
		ck_assert_msg(strcmp(err, want) == 0, "%s", err);
		free(b);
	}
	b = cu_empty_settings_body(64u << 10);
	got = frame_unpack(b, 64u << 10, err, sizeof(err));
	ck_assert_msg(got != NULL, "%s", err);
	ck_assert_uint_gt(got->verify->n_settings, 32000);
	knob__envelope__free_unpacked(got, NULL);
	free(b);
}
END_TEST

/* frame_pack and frame_unpack of env: the decoded envelope, *wire its
 * body's length; a failed check when it is refused. */
static Knob__Envelope *
repack(const Knob__Envelope *env, size_t *wire)
{
	Knob__Envelope *got;
	char err[256] = "";
	uint8_t *f;
	size_t len;

	ck_assert_int_eq(frame_pack(env, &f, &len), 0);
	*wire = len - 4;
	got = frame_unpack(f + 4, len - 4, err, sizeof(err));
	ck_assert_msg(got != NULL, "a %zu-byte frame was refused: %s", len - 4, err);
	free(f);
	return got;
}

/* A PhaseResult and what it points to. */
struct result {
	Knob__Envelope env;
	Knob__PhaseResult pr;
	Knob__Histogram hg;
	Knob__ThreadResult *tr, **tp;
	Knob__PhaseExtOp op, **ops;
	struct hist h;
};

static char enospc[] = "write at offset 17592186044416: No space left on device";

/* threads[i] of a PhaseResult: every counter set, an error each. */
static void
result_thread(Knob__ThreadResult *t, uint32_t i)
{
	knob__thread_result__init(t);
	t->rank = 1000000 + i;
	t->bytes = t->first_done_bytes = t->read_bytes = 1ull << 44;
	t->ops = t->stonewall_ops = t->read_ops = t->first_done_ops = 1ull << 34;
	t->start_ns = 1800000000000000000ull + i;
	t->end_ns = t->stonewall_ns = t->start_ns + 3600000000000ull;
	t->cpu_ns = 3600000000000ull;
	t->error = enospc;
}

/* r->env: a PhaseResult of nt threads (result_thread), the first nb
 * histogram buckets, nops summary ops (at least 1) and out as the tool's
 * output (NULL: none).  result_free releases it. */
static void
result_make(struct result *r, uint32_t nt, unsigned nb, size_t nops, char *out)
{
	static char id[] = "p0001-seq-write", node[] = "node0001", opname[] = "File creation";

	knob__envelope__init(&r->env);
	knob__phase_result__init(&r->pr);
	knob__phase_ext_op__init(&r->op);
	r->tr = xcalloc(nt, sizeof(*r->tr));
	r->tp = xcalloc(nt, sizeof(*r->tp));
	for (uint32_t i = 0; i < nt; i++) {
		result_thread(&r->tr[i], i);
		r->tp[i] = &r->tr[i];
	}
	hist_init(&r->h);
	for (unsigned i = 0; i < nb; i++)
		hist_add(&r->h, hist_bucket_low(i));
	hist_to_proto(&r->h, &r->hg);
	r->op.op = opname;
	r->op.bw_bytes = r->op.iops = r->op.runtime_s = r->op.lat_p50_ns = 1e9;
	r->ops = xcalloc(nops, sizeof(*r->ops));
	for (size_t i = 0; i < nops; i++)
		r->ops[i] = &r->op;
	r->pr.phase_id = id;
	r->pr.node = node;
	r->pr.n_threads = nt;
	r->pr.threads = r->tp;
	r->pr.latency = &r->hg;
	if (out)
		r->pr.ext_output = out;
	r->pr.n_ext_ops = nops;
	r->pr.ext_ops = r->ops;
	r->env.body_case = KNOB__ENVELOPE__BODY_PHASE_RESULT;
	r->env.phase_result = &r->pr;
}

static void
result_free(struct result *r)
{
	hist_proto_free(&r->hg);
	free(r->ops);
	free(r->tp);
	free(r->tr);
}

#define BIG_THREADS	4096	/* a node's rank cap (bench_params.c) */
#define BIG_OUT		(1u << 20)	/* tool output sent back (bench_ext.c) */

/* The biggest PhaseResult an agent sends: a node's 4096 ranks with every
 * counter and an error, a latency histogram with all 3776 buckets, 1 MiB
 * of tool output and its parsed summary: it decodes, whole. */
START_TEST(decode_budget_big_phase_result)
{
	struct result *r = xcalloc(1, sizeof(*r));
	struct hist *back = xcalloc(1, sizeof(*back));
	char *out = xmalloc(BIG_OUT);
	Knob__Envelope *got;
	size_t wire;

	memset(out, 'x', BIG_OUT - 1);
	out[BIG_OUT - 1] = '\0';
	result_make(r, BIG_THREADS, HIST_NBUCKETS, 16, out);
	ck_assert_uint_eq(r->hg.n_idx, HIST_NBUCKETS);
	got = repack(&r->env, &wire);
	ck_assert_uint_eq(got->phase_result->n_threads, BIG_THREADS);
	ck_assert_uint_eq(got->phase_result->threads[BIG_THREADS - 1]->rank,
	    1000000 + BIG_THREADS - 1);
	ck_assert_uint_eq(strlen(got->phase_result->ext_output), BIG_OUT - 1);
	ck_assert_uint_eq(got->phase_result->n_ext_ops, 16);
	hist_init(back);
	ck_assert_int_eq(hist_merge_proto(back, got->phase_result->latency), 0);
	ck_assert_uint_eq(back->total, r->h.total);
	printf("phase result of %zu bytes decodes (budget %zu MiB)\n", wire,
	    frame_decode_budget(wire) >> 20);
	knob__envelope__free_unpacked(got, NULL);
	result_free(r);
	free(out);
	free(back);
	free(r);
}
END_TEST

/* Refused at each allocation of a decode in turn (a budget growing by 16
 * bytes), protobuf-c unwinds without a leak or a double free (ASan and
 * LeakSanitizer in the sanitizer pass): a PhaseResult with threads, errors,
 * a histogram and summary ops, sent twice (the second replaces the first)
 * and followed by an unknown field. */
START_TEST(decode_budget_refused_anywhere)
{
	struct result *r = xcalloc(1, sizeof(*r));
	Knob__Envelope *got;
	uint8_t *f, *body;
	size_t len, blen, budget;
	int over, refused = 0;

	result_make(r, 3, 3, 2, NULL);
	ck_assert_int_eq(frame_pack(&r->env, &f, &len), 0);
	blen = 2 * (len - 4) + 3;
	body = xmalloc(blen);
	memcpy(body, f + 4, len - 4);
	memcpy(body + len - 4, f + 4, len - 4);
	memcpy(body + blen - 3, "\x98\x06\x01", 3);	/* field 99 = 1 */
	for (budget = 0; (got = envelope_unpack_bounded(body, blen, budget, &over)) == NULL;
	    budget += 16) {
		ck_assert_int_eq(over, 1);
		refused++;
	}
	ck_assert_int_eq(over, 0);
	ck_assert_int_gt(refused, 30);
	ck_assert_uint_eq(got->phase_result->n_threads, 3);
	ck_assert_uint_eq(got->phase_result->n_ext_ops, 2);
	ck_assert_uint_eq(got->base.n_unknown_fields, 1);
	knob__envelope__free_unpacked(got, NULL);
	result_free(r);
	free(body);
	free(f);
	free(r);
}
END_TEST

/* env decodes, from a frame body of more than min_wire bytes. */
static void
decodes_from(const Knob__Envelope *env, size_t min_wire)
{
	size_t wire;
	Knob__Envelope *got = repack(env, &wire);

	ck_assert_uint_gt(wire, min_wire);
	knob__envelope__free_unpacked(got, NULL);
}

/* Frames filled with the densest realistic messages decode: an apply's
 * reply of sysfs key results (4.6 times its length in malloc chunks), and
 * an apply of sysctl settings with short values (7.3, the most of the
 * messages measured for frame_decode_budget). */
START_TEST(decode_budget_full_frames)
{
	Knob__Envelope res = KNOB__ENVELOPE__INIT, req = KNOB__ENVELOPE__INIT;
	Knob__ApplyResult ar = KNOB__APPLY_RESULT__INIT;
	Knob__ApplyRequest rq = KNOB__APPLY_REQUEST__INIT;
	Knob__KeyResult k = KNOB__KEY_RESULT__INIT;
	Knob__Setting st = KNOB__SETTING__INIT;
	size_t nk = 140000, ns = 360000;
	Knob__KeyResult **kp = xcalloc(nk, sizeof(*kp));
	Knob__Setting **sp = xcalloc(ns, sizeof(*sp));
	char sysfs[] = "sysfs", glob[] = "block/*/queue/nr_requests",
	    target[] = "/sys/block/sdq/queue/nr_requests", before[] = "64", after[] = "256",
	    origin[] = "lustre-oss.xml:12", sysctl[] = "sysctl", key[] = "vm.dirty_ratio",
	    val[] = "10", sorigin[] = "tuned.xml:3", prof[] = "tuned";

	k.driver = sysfs;
	k.key = glob;
	k.target = target;
	k.state = KNOB__KEY_STATE__KEY_CHANGED;
	k.before = before;
	k.wanted = k.after = after;
	k.origin = origin;
	st.driver = sysctl;
	st.key = key;
	st.value = val;
	st.origin = sorigin;
	for (size_t i = 0; i < ns; i++) {
		if (i < nk)
			kp[i] = &k;
		sp[i] = &st;
	}
	ar.n_keys = nk;
	ar.keys = kp;
	rq.profile = prof;
	rq.n_settings = ns;
	rq.settings = sp;
	res.body_case = KNOB__ENVELOPE__BODY_APPLY_RESULT;
	res.apply_result = &ar;
	req.body_case = KNOB__ENVELOPE__BODY_APPLY;
	req.apply = &rq;
	decodes_from(&res, 12u << 20);
	decodes_from(&req, 14u << 20);
	free(sp);
	free(kp);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("framing");

	log_init("check_wire", LOG_LVL_ERR);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, roundtrip);
	tcase_add_test(tc, partial_delivery);
	tcase_add_test(tc, length_cap_4gib);
	tcase_add_test(tc, length_just_over_cap);
	tcase_add_test(tc, garbage_body);
	tcase_add_test(tc, unknown_body);
	tcase_add_test(tc, wrong_version);
	tcase_add_test(tc, truncated_then_eof);
	tcase_add_test(tc, pack_refuses_oversize);
	tcase_add_test(tc, queue_and_flush);
	tcase_add_test(tc, frames_in_one_read);
	tcase_add_test(tc, long_frame_then_small);
	tcase_add_test(tc, flush_gathers);
	tcase_add_test(tc, flush_partial);
	tcase_add_test(tc, wide_read_ahead);
	tcase_add_test(tc, decode_budget_refuses_empty_repeated);
	tcase_add_test(tc, decode_budget_big_phase_result);
	tcase_add_test(tc, decode_budget_full_frames);
	tcase_add_test(tc, decode_budget_refused_anywhere);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
