/* The one worker API: a fixed set of pool threads and a FIFO of work
 * items, plus threads of their own for long or hanging work.  The pool
 * owns no agent: every agent instance of a process (a fleet simulator)
 * shares one.  Each item belongs to one agent and counts in that agent's
 * a->nwork, the one counter agent_fini waits on, with a deadline.
 *
 * An item's life: agent_work queues it (or refuses when this agent has
 * WORK_QUEUE_MAX requests waiting), a thread runs run(w), posts w->reply to
 * the item's connection when run set a body, calls done(w) to free what
 * run made, frees the request and the item, and drops the agent's count. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "log.h"
#include "util.h"

struct work_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* queue not empty, or stop */
	struct work *head, *tail;
	int stop;
	pthread_t *th;
	unsigned nth;
	unsigned running;		/* threads with an item */
};

/* Count one more item of a's (queued says it is a request waiting). */
static void
work_count(struct agent *a, int queued)
{
	pthread_mutex_lock(&a->post_mu);
	a->nwork++;
	a->nqueued += queued;
	pthread_mutex_unlock(&a->post_mu);
}

/* One item of a's ended. */
static void
work_uncount(struct agent *a)
{
	pthread_mutex_lock(&a->post_mu);
	a->nwork--;
	pthread_cond_broadcast(&a->work_cv);
	pthread_mutex_unlock(&a->post_mu);
}

/* Run one item to its end; the item is freed. */
static void
work_finish(struct work *w)
{
	struct agent *a = w->a;

	log_set_instance(a->node);
	w->run(w);
	if (w->park != NULL) {	/* kept: it comes back through work_requeue */
		work_fn park = w->park;

		w->park = NULL;
		pthread_mutex_lock(&a->post_mu);
		a->nqueued += w->req != NULL;	/* it waits again, as if queued */
		pthread_mutex_unlock(&a->post_mu);
		log_set_instance(NULL);
		park(w);	/* the last look at w here */
		return;
	}
	if (w->reply.body_case != KNOB__ENVELOPE__BODY__NOT_SET && w->conn_id != 0)
		agent_post(a, w->conn_id, w->req ? w->req->id : 0, &w->reply);
	if (w->held)
		agent_conn_release(a, w->conn_id);
	if (w->done)
		w->done(w);
	if (w->req)
		knob__envelope__free_unpacked(w->req, NULL);
	free(w);
	log_set_instance(NULL);
	work_uncount(a);
}

/* Pool thread body: take items until stopped and the queue is empty. */
static void *
work_thread(void *arg)
{
	struct work_pool *p = arg;
	struct work *w;

	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (p->head == NULL && !p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
		if ((w = p->head) == NULL) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		p->head = w->next;
		if (p->head == NULL)
			p->tail = NULL;
		p->running++;
		pthread_mutex_unlock(&p->mu);
		if (w->req) {
			pthread_mutex_lock(&w->a->post_mu);
			w->a->nqueued--;
			pthread_mutex_unlock(&w->a->post_mu);
		}
		work_finish(w);
		pthread_mutex_lock(&p->mu);
		p->running--;
		pthread_mutex_unlock(&p->mu);
	}
}

struct work_pool *
work_pool_new(unsigned threads)
{
	struct work_pool *p = xcalloc(1, sizeof(*p));
	int r;

	if (threads == 0)
		threads = WORK_THREADS;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->th = xcalloc(threads, sizeof(*p->th));
	for (unsigned i = 0; i < threads; i++) {
		if ((r = pthread_create(&p->th[i], NULL, work_thread, p)) != 0) {
			errno = r;
			log_warn("worker pool: thread %u of %u", i + 1, threads);
			break;
		}
		p->nth++;
	}
	if (p->nth == 0) {
		work_pool_free(p);
		return NULL;
	}
	return p;
}

unsigned
work_pool_threads(const struct work_pool *p)
{
	return p->nth;
}

void
work_pool_free(struct work_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nth; i++)
		pthread_join(p->th[i], NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->th);
	free(p);
}

/* Count w in c's work still running (none without c): c waits for it
 * after its peer's end of input; work_finish releases it. */
static void
work_hold(struct work *w, struct aconn *c)
{
	if (c == NULL)
		return;
	w->held = 1;
	agent_conn_hold(c);
}

/* A new item for request req of c; req is the item's from now on. */
static struct work *
work_new(struct agent *a, struct aconn *c, Knob__Envelope *req, work_fn run, work_fn done,
    void *arg)
{
	struct work *w = xcalloc(1, sizeof(*w));

	w->a = a;
	w->conn_id = c ? c->id : 0;
	w->req = req;
	knob__envelope__init(&w->reply);
	w->arg = arg;
	w->run = run;
	w->done = done;
	if (c && c->req == req)
		c->req = NULL;	/* the loop must not free it */
	work_hold(w, c);
	return w;
}

/* Append w to p's queue and wake a thread. */
static void
pool_push(struct work_pool *p, struct work *w)
{
	w->next = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->tail)
		p->tail->next = w;
	else
		p->head = w;
	p->tail = w;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* 1 when a may queue one more request. */
static int
queue_room(struct agent *a, unsigned *waiting)
{
	int ok;

	pthread_mutex_lock(&a->post_mu);
	*waiting = a->nqueued;
	ok = a->nqueued < WORK_QUEUE_MAX;
	pthread_mutex_unlock(&a->post_mu);
	return ok;
}

/* Test hook ($KNOB_TEST_BUSY_WORK=N with --test-hooks): 1 for each of the
 * first N requests, refused as busy as if the queue were full. */
static int
test_busy(struct agent *a)
{
	int busy;

	pthread_mutex_lock(&a->post_mu);
	busy = a->test_busy_work > 0;
	if (busy)
		a->test_busy_work--;
	pthread_mutex_unlock(&a->post_mu);
	return busy;
}

int
agent_work(struct agent *a, struct aconn *c, Knob__Envelope *req, work_fn run, work_fn done,
    void *arg)
{
	struct work_pool *p = a->pool;
	struct work *w;
	unsigned waiting;

	if (req != NULL && a->cfg.test_hooks && test_busy(a)) {
		log_warnx("%s: %s request %llu refused: test hook ($KNOB_TEST_BUSY_WORK)",
		    c ? c->peer : "-", envelope_body_name(req), (unsigned long long)req->id);
		if (c)
			agent_reply_error(a, c, req->id, EAGAIN, "%s: agent busy (test hook); "
			    "try again", a->node);
		return -1;
	}
	if (req != NULL && !queue_room(a, &waiting)) {
		log_warnx("%s: %s request %llu refused: %u requests already wait for a worker",
		    c ? c->peer : "-", envelope_body_name(req), (unsigned long long)req->id,
		    waiting);
		if (c)
			agent_reply_error(a, c, req->id, EAGAIN, "%s: agent busy: %u requests "
			    "queued; try again", a->node, waiting);
		return -1;
	}
	w = work_new(a, c, req, run, done, arg);
	work_count(a, req != NULL);
	pool_push(p, w);
	return 0;
}

void
work_requeue(struct work *w)
{
	pool_push(w->a->pool, w);
}

int
work_may_block(struct agent *a)
{
	struct work_pool *p = a->pool;
	int idle;

	pthread_mutex_lock(&p->mu);
	idle = p->running < p->nth;
	pthread_mutex_unlock(&p->mu);
	return idle;
}

/* Thread body of agent_work_long. */
static void *
work_long_thread(void *arg)
{
	work_finish(arg);
	return NULL;
}

/* Start fn(arg) on a detached thread: 0, or -1 (errno set). */
static int
detached(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		errno = r;
		log_warn("pthread_create");
		return -1;
	}
	return 0;
}

int
agent_work_long(struct agent *a, struct aconn *c, Knob__Envelope *req, work_fn run,
    work_fn done, void *arg)
{
	struct work *w;

	work_count(a, 0);
	w = work_new(a, NULL, NULL, run, done, arg);
	w->conn_id = c ? c->id : 0;
	w->req = req;
	work_hold(w, c);	/* before the thread runs: it frees w */
	if (detached(work_long_thread, w) < 0) {
		if (c)
			c->pending--;
		free(w);
		work_uncount(a);
		if (c && req)
			agent_reply_error(a, c, req->id, EAGAIN, "%s: cannot start a worker "
			    "thread", a->node);
		return -1;
	}
	if (c && c->req == req)
		c->req = NULL;	/* the thread's now */
	return 0;
}

/* Outside the pool: a detached thread for work that may never return (a
 * health check on a hung mount, abandoned at its deadline), so that it
 * cannot take a pool thread for good.  It counts in a->nwork too. */
struct spawn_arg {
	struct agent *a;
	void *(*fn)(void *);
	void *arg;
};

static void *
spawn_trampoline(void *p)
{
	struct spawn_arg sa = *(struct spawn_arg *)p;

	free(p);
	log_set_instance(sa.a->node);
	sa.fn(sa.arg);
	log_set_instance(NULL);
	work_uncount(sa.a);
	return NULL;
}

int
agent_spawn(struct agent *a, void *(*fn)(void *), void *arg)
{
	struct spawn_arg *sa = xmalloc(sizeof(*sa));

	sa->a = a;
	sa->fn = fn;
	sa->arg = arg;
	work_count(a, 0);
	if (detached(spawn_trampoline, sa) < 0) {
		free(sa);
		work_uncount(a);
		return -1;
	}
	return 0;
}

int
agent_work_wait(struct agent *a, int seconds)
{
	struct timespec ts;
	unsigned n;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += seconds;
	pthread_mutex_lock(&a->post_mu);
	while (a->nwork > 0)
		if (pthread_cond_timedwait(&a->work_cv, &a->post_mu, &ts) != 0)
			break;
	n = a->nwork;
	pthread_mutex_unlock(&a->post_mu);
	if (n > 0)
		log_warnx("%u work item(s) still running after %d s", n, seconds);
	return n == 0 ? 0 : -1;
}
