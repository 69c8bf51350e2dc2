/* Benchmark engine: data phases with several I/Os in flight per thread
 * (queue_depth), through io_uring (liburing) or, where io_uring is not
 * available, Linux AIO (libaio).  Each slot has its own aligned buffer;
 * a slot is refilled as soon as its I/O completes, so queue_depth I/Os
 * stay in flight, as with fio's iodepth, and each I/O is submitted as soon
 * as it is queued (fio's default iodepth_batch_submit=1): refilling the
 * slots of several completions and submitting them together made the queue
 * run in bursts (0.65x fio's IOPS for 4 KiB random writes at depth 8 on a
 * virtio disk, 0.87x submitting each; README).  Latency runs from queueing
 * to reaping.  Ring set-up happens in prepare, outside the timing. */
#include <errno.h>
#include <libaio.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "log.h"
#include "util.h"

struct aio_slot {
	struct bench_op op;
	uint8_t *buf;
	uint64_t t0;
	struct iocb cb;			/* libaio */
};

/* A completion: the slot and the result (bytes or -errno). */
struct aio_done {
	struct aio_slot *slot;
	ssize_t res;
};

struct bench_aio {
	const struct aio_backend *be;
	unsigned depth, nfree, nqueued;
	struct aio_slot *slot;
	uint8_t *mem;			/* the slots' buffers, one after another */
	size_t memlen;
	struct aio_slot **free;
	struct io_uring ring;
	io_context_t ctx;
	struct iocb **queued;		/* libaio: not submitted yet */
	struct io_event *ev;
	struct aio_done *done;
	int leak;			/* a reap failed: the kernel may still write the buffers */
};

/* One asynchronous interface: set-up, queue one I/O, submit what is
 * queued, reap at least one completion, tear down. */
struct aio_backend {
	int engine;
	int (*init)(struct bench_aio *a);		/* 0 or -errno */
	void (*queue)(struct bench_aio *a, struct aio_slot *s, int fd, size_t len);
	int (*submit)(struct bench_aio *a);		/* 0 or -errno */
	int (*reap)(struct bench_aio *a, struct aio_done *out);	/* count or -errno */
	unsigned (*pending)(struct bench_aio *a);	/* queued, not given to the kernel */
	void (*fini)(struct bench_aio *a);
};

/* ------------------------------------------------------------ io_uring */

/* The ring is made and used by the I/O thread alone: ask for what fio 3.33
 * asks for (single issuer, completions run when the thread reaps), and
 * fall back to fewer flags on kernels that know fewer. */
static int
uring_init(struct bench_aio *a)
{
	static const unsigned flags[] = {
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	int rc = -EINVAL;

	for (size_t i = 0; i < nitems(flags) && rc == -EINVAL; i++) {
		struct io_uring_params pr;

		memset(&pr, 0, sizeof(pr));
		pr.flags = flags[i];
		rc = io_uring_queue_init_params(a->depth, &a->ring, &pr);
	}
	return rc;
}

static void
uring_queue(struct bench_aio *a, struct aio_slot *s, int fd, size_t len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&a->ring);

	/* never NULL: the ring has depth entries and at most depth are in flight */
	if (s->op.wr)
		io_uring_prep_write(sqe, fd, s->buf, (unsigned)len, s->op.off);
	else
		io_uring_prep_read(sqe, fd, s->buf, (unsigned)len, s->op.off);
	io_uring_sqe_set_data(sqe, s);
}

static int
uring_submit(struct bench_aio *a)
{
	int rc;

	do
		rc = io_uring_submit(&a->ring);
	while (rc == -EINTR);
	return rc < 0 ? rc : 0;
}

static int
uring_reap(struct bench_aio *a, struct aio_done *out)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	int rc;

	if (io_uring_peek_cqe(&a->ring, &cqe) != 0) {
		do
			rc = io_uring_wait_cqe(&a->ring, &cqe);
		while (rc == -EINTR);
		if (rc < 0)
			return rc;
	}
	io_uring_for_each_cqe(&a->ring, head, cqe) {
		out[n].slot = io_uring_cqe_get_data(cqe);
		out[n].res = cqe->res;
		n++;
	}
	io_uring_cq_advance(&a->ring, n);
	return (int)n;
}

/* The SQEs the kernel has not taken (a submit that failed leaves them). */
static unsigned
uring_pending(struct bench_aio *a)
{
	return io_uring_sq_ready(&a->ring);
}

static void
uring_fini(struct bench_aio *a)
{
	io_uring_queue_exit(&a->ring);
}

/* ------------------------------------------------------------ libaio */

static int
laio_init(struct bench_aio *a)
{
	int rc;

	a->queued = xcalloc(a->depth, sizeof(*a->queued));
	a->ev = xcalloc(a->depth, sizeof(*a->ev));
	if ((rc = io_setup((int)a->depth, &a->ctx)) < 0) {
		free(a->queued);
		free(a->ev);
	}
	return rc;
}

static void
laio_queue(struct bench_aio *a, struct aio_slot *s, int fd, size_t len)
{
	if (s->op.wr)
		io_prep_pwrite(&s->cb, fd, s->buf, len, (long long)s->op.off);
	else
		io_prep_pread(&s->cb, fd, s->buf, len, (long long)s->op.off);
	s->cb.data = s;
	a->queued[a->nqueued++] = &s->cb;
}

static int
laio_submit(struct bench_aio *a)
{
	int rc;

	while (a->nqueued) {
		if ((rc = io_submit(a->ctx, a->nqueued, a->queued)) < 0) {
			if (rc == -EINTR || rc == -EAGAIN)
				continue;
			return rc;
		}
		memmove(a->queued, a->queued + rc, (a->nqueued - (unsigned)rc) * sizeof(*a->queued));
		a->nqueued -= (unsigned)rc;
	}
	return 0;
}

static int
laio_reap(struct bench_aio *a, struct aio_done *out)
{
	int rc, i;

	do
		rc = io_getevents(a->ctx, 1, a->depth, a->ev, NULL);
	while (rc == -EINTR);
	for (i = 0; i < rc; i++) {
		out[i].slot = a->ev[i].data;
		out[i].res = (ssize_t)(long)a->ev[i].res;
	}
	return rc;
}

static unsigned
laio_pending(struct bench_aio *a)
{
	return a->nqueued;
}

static void
laio_fini(struct bench_aio *a)
{
	io_destroy(a->ctx);
	free(a->queued);
	free(a->ev);
}

static const struct aio_backend backends[] = {
	{ IOE_URING, uring_init, uring_queue, uring_submit, uring_reap, uring_pending, uring_fini },
	{ IOE_AIO, laio_init, laio_queue, laio_submit, laio_reap, laio_pending, laio_fini },
};

/* ------------------------------------------------------------ the loop */

int
bench_aio_setup(struct bench_thread *t)
{
	struct bench_job *j = t->job;
	size_t len = ((size_t)j->p.bs + BENCH_ALIGN - 1) / BENCH_ALIGN * BENCH_ALIGN;
	struct bench_aio *a = xcalloc(1, sizeof(*a));
	int rc = -EINVAL;

	a->depth = j->p.queue_depth ? j->p.queue_depth : 1;
	for (size_t i = 0; i < nitems(backends); i++)
		if (backends[i].engine == j->ioengine)
			a->be = &backends[i];
	if (a->be == NULL || (rc = a->be->init(a)) < 0) {
		TERR(t, "%s: %s set-up (queue depth %u): %s", j->node,
		    bench_ioengine_name(j->ioengine), a->depth, strerror(-rc));
		free(a);
		return -1;
	}
	a->slot = xcalloc(a->depth, sizeof(*a->slot));
	a->free = xcalloc(a->depth, sizeof(*a->free));
	a->done = xcalloc(a->depth, sizeof(*a->done));
	t->aio = a;	/* from here bench_aio_free releases what is made */
	/* one mapping for all of them: at 1 MiB and more it is on huge pages */
	if ((a->mem = bench_buf_alloc((size_t)a->depth * len, !j->p.small_pages)) == NULL) {
		TERR(t, "%s: no memory for %u queued %zu-byte buffers", j->node, a->depth, len);
		return -1;
	}
	a->memlen = (size_t)a->depth * len;
	memset(a->mem, 0, a->memlen);	/* fault it in before the timed loop */
	for (unsigned i = 0; i < a->depth; i++) {
		a->slot[i].buf = a->mem + (size_t)i * len;
		a->free[a->nfree++] = &a->slot[i];
	}
	return 0;
}

void
bench_aio_free(struct bench_thread *t)
{
	struct bench_aio *a = t->aio;

	if (a == NULL)
		return;
	a->be->fini(a);
	/* after a failed reap the kernel may still write them: left mapped */
	if (!a->leak)
		bench_buf_free(a->mem, a->memlen, !t->job->p.small_pages);
	free(a->slot);
	free(a->free);
	free(a->done);
	free(a);
	t->aio = NULL;
}

/* After a failed submit or reap (err, -errno): wait for the I/Os the
 * kernel has, whose buffers are its until they complete, and fail thread t
 * with what went wrong; the agent goes on.  When reaping fails too, the
 * buffers stay mapped (a->leak) rather than be reused or unmapped. */
static void
aio_fail(struct bench_thread *t, const char *what, int err)
{
	struct bench_job *j = t->job;
	struct bench_aio *a = t->aio;
	int n;

	while (!a->leak && a->depth - a->nfree > a->be->pending(a)) {
		if ((n = a->be->reap(a, a->done)) < 0) {
			log_warn("%s: %s: cannot reap queued I/O after a failed %s (%s): its "
			    "buffers stay mapped", j->node, bench_ioengine_name(j->ioengine), what,
			    strerror(-n));
			a->leak = 1;
		}
		for (int i = 0; i < n; i++)
			a->free[a->nfree++] = a->done[i].slot;
	}
	TERR(t, "%s: %s %s: %s", j->node, bench_ioengine_name(j->ioengine), what, strerror(-err));
}

/* Submit what is queued; the test hook makes the submit that fills the
 * queue fail with -EAGAIN in one thread of the first queued phase of an
 * agent with --test-hooks and $KNOB_TEST_SUBMIT_EAGAIN (bench.c). */
static int
aio_submit(struct bench_thread *t, uint64_t issued)
{
	struct bench_aio *a = t->aio;
	int one = 1;

	if (issued == a->depth && atomic_load(&t->job->test_submit_eagain) &&
	    atomic_compare_exchange_strong(&t->job->test_submit_eagain, &one, 0))
		return -EAGAIN;
	return a->be->submit(a);
}

void
bench_aio_run(struct bench_thread *t, int fd, uint64_t start_mono, bench_next_fn next,
    bench_done_fn done, int *walled)
{
	struct bench_job *j = t->job;
	struct bench_aio *a = t->aio;
	size_t bs = (size_t)j->p.bs;
	uint64_t issued = 0, completed = 0, limit = UINT64_MAX;
	int stop = 0, n, i;

	for (;;) {
		/* keep the queue full until the ops run out or something stops us */
		while (!stop && a->nfree && issued < limit && !j->abort) {
			struct aio_slot *s = a->free[a->nfree - 1];

			if (!next(t, issued, start_mono, &s->op)) {
				stop = 1;
				break;
			}
			a->nfree--;
			if (s->op.wr)
				bench_block_fill(&j->pool, s->buf, bs, t->owner, s->op.off);
			s->t0 = now_mono_ns();
			a->be->queue(a, s, fd, bs);
			issued++;
			if ((n = aio_submit(t, issued)) < 0) {
				aio_fail(t, "submit", n);
				return;
			}
		}
		if (a->nfree == a->depth)
			break;
		if ((n = a->be->reap(a, a->done)) < 0) {
			aio_fail(t, "reap", n);
			return;
		}
		for (i = 0; i < n; i++) {
			struct aio_slot *s = a->done[i].slot;
			uint64_t t1 = now_mono_ns();

			a->free[a->nfree++] = s;
			/* ops beyond a lowered (stonewall) limit were in flight: not counted */
			if (stop < 0 || ++completed > limit)
				continue;
			if (done(t, &s->op, s->buf, a->done[i].res, s->t0, t1, completed, &limit,
			    start_mono, walled) < 0)
				stop = -1;
		}
	}
}
