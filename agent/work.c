/* The worker pool: a fixed set of threads and a bounded FIFO of work
 * items.  It owns no agent: several agent instances (a fleet simulator)
 * may share one pool.  Each item belongs to one agent and counts in that
 * agent's a->workers, which agent_fini waits on with a deadline.
 *
 * An item's life: agent_work queues it (or refuses when the queue is
 * full), a thread runs run(w), posts w->reply to the item's connection
 * when run set a body, calls done(w) to free what run made, frees the
 * request and the item, and drops the agent's count. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "log.h"
#include "util.h"

struct work_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* queue not empty, or stop */
	struct work *head, *tail;
	unsigned queued;		/* requests waiting (internal items not counted) */
	unsigned queue_max;
	int stop;
	pthread_t *th;
	unsigned nth;
};

/* Run one item to its end; the item is freed. */
static void
work_finish(struct work *w)
{
	struct agent *a = w->a;

	w->run(w);
	if (w->reply.body_case != KNOB__ENVELOPE__BODY__NOT_SET && w->conn_id != 0)
		agent_post(a, w->conn_id, w->req ? w->req->id : 0, &w->reply);
	if (w->done)
		w->done(w);
	if (w->req)
		knob__envelope__free_unpacked(w->req, NULL);
	free(w);
	pthread_mutex_lock(&a->post_mu);
	a->workers--;
	pthread_cond_broadcast(&a->workers_cv);
	pthread_mutex_unlock(&a->post_mu);
}

/* Thread body: take items until stopped and the queue is empty. */
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
		if (w->req)
			p->queued--;
		pthread_mutex_unlock(&p->mu);
		work_finish(w);
	}
}

struct work_pool *
work_pool_new(unsigned threads, unsigned queue_max)
{
	struct work_pool *p = xcalloc(1, sizeof(*p));
	int r;

	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->queue_max = queue_max ? queue_max : WORK_QUEUE_MAX;
	p->th = xcalloc(threads ? threads : WORK_THREADS, sizeof(*p->th));
	for (unsigned i = 0; i < (threads ? threads : WORK_THREADS); i++) {
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

int
agent_work(struct agent *a, struct aconn *c, Knob__Envelope *req, work_fn run, work_fn done,
    void *arg)
{
	struct work_pool *p = a->pool;
	struct work *w;

	pthread_mutex_lock(&p->mu);
	if (req != NULL && p->queued >= p->queue_max) {
		pthread_mutex_unlock(&p->mu);
		log_warnx("%s: %s request %llu refused: %u requests already wait for a worker",
		    c ? c->peer : "-", envelope_body_name(req), (unsigned long long)req->id,
		    p->queued);
		return c ? (agent_reply_error(a, c, req->id, EAGAIN, "%s: agent busy: %u "
		    "requests queued; try again", a->node, p->queued) < 0 ? -1 : 0) : 0;
	}
	w = xcalloc(1, sizeof(*w));
	w->a = a;
	w->conn_id = c ? c->id : 0;
	w->req = req;
	knob__envelope__init(&w->reply);
	w->arg = arg;
	w->run = run;
	w->done = done;
	if (req)
		p->queued++;
	if (p->tail)
		p->tail->next = w;
	else
		p->head = w;
	p->tail = w;
	pthread_mutex_lock(&a->post_mu);
	a->workers++;
	pthread_mutex_unlock(&a->post_mu);
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 1;
}

/* Outside the pool: a detached thread for work that may never return (a
 * health check on a hung mount, abandoned at its deadline), so that it
 * cannot take a pool thread for good.  It counts in a->workers too. */
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
	sa.fn(sa.arg);
	pthread_mutex_lock(&sa.a->post_mu);
	sa.a->workers--;
	pthread_cond_broadcast(&sa.a->workers_cv);
	pthread_mutex_unlock(&sa.a->post_mu);
	return NULL;
}

int
agent_spawn(struct agent *a, void *(*fn)(void *), void *arg)
{
	struct spawn_arg *sa = xmalloc(sizeof(*sa));
	pthread_attr_t attr;
	pthread_t t;
	int r;

	sa->a = a;
	sa->fn = fn;
	sa->arg = arg;
	pthread_mutex_lock(&a->post_mu);
	a->workers++;
	pthread_mutex_unlock(&a->post_mu);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, spawn_trampoline, sa);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		free(sa);
		pthread_mutex_lock(&a->post_mu);
		a->workers--;
		pthread_mutex_unlock(&a->post_mu);
		errno = r;
		log_warn("pthread_create");
		return -1;
	}
	return 0;
}
