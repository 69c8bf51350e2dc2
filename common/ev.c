/* The event base: epoll for fds, a sorted list of one-shot timers whose
 * earliest deadline bounds epoll_wait.  Not thread-safe: one thread drives
 * a base; other threads wake it through an ev_async (one eventfd per base). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "ev.h"
#include "log.h"
#include "util.h"

struct ev_io {
	ev_io_fn fn;
	void *arg;
	uint32_t events;
	uint32_t gen;	/* which registration of this fd (a closed fd is reused) */
};

struct ev_base {
	int epfd;
	struct ev_io *io;	/* indexed by fd */
	size_t nio;
	struct ev_timer *timers;	/* sorted by when_ns */
	int stop;
	uint32_t gen;
	uint64_t wakeups;
	pthread_mutex_t amu;		/* the async list, from any thread */
	struct ev_async *apending;
	int afd;			/* their shared eventfd; -1 until first use */
};

struct ev_base *
ev_base_new(void)
{
	struct ev_base *b = xcalloc(1, sizeof(*b));

	if ((b->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		log_warn("epoll_create1");
		free(b);
		return NULL;
	}
	b->afd = -1;
	pthread_mutex_init(&b->amu, NULL);
	return b;
}

void
ev_base_free(struct ev_base *b)
{
	if (b == NULL)
		return;
	close(b->epfd);
	if (b->afd >= 0)
		close(b->afd);
	pthread_mutex_destroy(&b->amu);
	free(b->io);
	free(b);
}

/* The epoll data of an fd: its number and its registration. */
static uint64_t
io_key(int fd, uint32_t gen)
{
	return (uint64_t)gen << 32 | (uint32_t)fd;
}

/* Grow the fd table to hold fd. */
static void
io_room(struct ev_base *b, int fd)
{
	size_t n = b->nio ? b->nio : 64;

	if ((size_t)fd < b->nio)
		return;
	while (n <= (size_t)fd)
		n *= 2;
	b->io = xrealloc(b->io, n * sizeof(*b->io));
	memset(b->io + b->nio, 0, (n - b->nio) * sizeof(*b->io));
	b->nio = n;
}

int
ev_io_add(struct ev_base *b, int fd, uint32_t events, ev_io_fn fn, void *arg)
{
	struct epoll_event ev = { .events = events };

	if (fd < 0)
		return -1;
	if (++b->gen == 0)
		b->gen = 1;
	ev.data.u64 = io_key(fd, b->gen);
	if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -1;
	io_room(b, fd);
	b->io[fd].gen = b->gen;
	b->io[fd].fn = fn;
	b->io[fd].arg = arg;
	b->io[fd].events = events;
	return 0;
}

int
ev_io_mod(struct ev_base *b, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events };

	if (fd < 0 || (size_t)fd >= b->nio || b->io[fd].fn == NULL)
		return -1;
	if (b->io[fd].events == events)
		return 0;
	ev.data.u64 = io_key(fd, b->io[fd].gen);
	if (epoll_ctl(b->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -1;
	b->io[fd].events = events;
	return 0;
}

void
ev_io_forget(struct ev_base *b, int fd)
{
	if (fd < 0 || (size_t)fd >= b->nio || b->io[fd].fn == NULL)
		return;
	memset(&b->io[fd], 0, sizeof(b->io[fd]));
}

void
ev_io_del(struct ev_base *b, int fd)
{
	if (fd < 0 || (size_t)fd >= b->nio || b->io[fd].fn == NULL)
		return;
	epoll_ctl(b->epfd, EPOLL_CTL_DEL, fd, NULL);
	memset(&b->io[fd], 0, sizeof(b->io[fd]));
}

void
ev_timer_del(struct ev_base *b, struct ev_timer *t)
{
	if (!t->armed)
		return;
	if (t->prev)
		t->prev->next = t->next;
	else
		b->timers = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->next = t->prev = NULL;
	t->armed = 0;
}

void
ev_timer_set(struct ev_base *b, struct ev_timer *t, uint64_t after_ns, ev_timer_fn fn, void *arg)
{
	struct ev_timer **pp, *prev = NULL;

	ev_timer_del(b, t);
	t->when_ns = now_mono_ns() + after_ns;
	t->fn = fn;
	t->arg = arg;
	for (pp = &b->timers; *pp && (*pp)->when_ns <= t->when_ns; pp = &(*pp)->next)
		prev = *pp;
	t->next = *pp;
	t->prev = prev;
	if (*pp)
		(*pp)->prev = t;
	*pp = t;
	t->armed = 1;
}

/* The shared eventfd: run every pending async, one at a time (a callback
 * may delete another).  The counter is read before the list is taken, so
 * a send that finds the list empty always wakes a later round. */
static void
on_async(int fd, uint32_t events, void *arg)
{
	struct ev_base *b = arg;
	struct ev_async *as;
	uint64_t cnt;

	(void)events;
	if (read(fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		log_warn("eventfd read");
	for (;;) {
		pthread_mutex_lock(&b->amu);
		if ((as = b->apending) != NULL) {
			b->apending = as->next;
			as->next = NULL;
			as->pending = 0;
		}
		pthread_mutex_unlock(&b->amu);
		if (as == NULL)
			break;
		as->fn(as->arg);
	}
}

int
ev_async_init(struct ev_base *b, struct ev_async *as, ev_timer_fn fn, void *arg)
{
	memset(as, 0, sizeof(*as));
	as->fn = fn;
	as->arg = arg;
	if (b->afd >= 0)
		return 0;
	if ((b->afd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
	    ev_io_add(b, b->afd, EPOLLIN, on_async, b) < 0) {
		log_warn("eventfd");
		if (b->afd >= 0)
			close(b->afd);
		b->afd = -1;
		return -1;
	}
	return 0;
}

void
ev_async_send(struct ev_base *b, struct ev_async *as)
{
	uint64_t one = 1;
	int wake;

	pthread_mutex_lock(&b->amu);
	wake = b->apending == NULL;
	if (!as->pending) {
		as->pending = 1;
		as->next = b->apending;
		b->apending = as;
	}
	pthread_mutex_unlock(&b->amu);
	if (wake && write(b->afd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("eventfd write");
}

void
ev_async_del(struct ev_base *b, struct ev_async *as)
{
	struct ev_async **pp;

	pthread_mutex_lock(&b->amu);
	for (pp = &b->apending; *pp; pp = &(*pp)->next)
		if (*pp == as) {
			*pp = as->next;
			break;
		}
	as->next = NULL;
	as->pending = 0;
	pthread_mutex_unlock(&b->amu);
}

/* Milliseconds until the first timer (rounded up), capped by max_ms. */
static int
wait_ms(const struct ev_base *b, int max_ms)
{
	uint64_t now, ms;

	if (b->timers == NULL)
		return max_ms;
	now = now_mono_ns();
	if (b->timers->when_ns <= now)
		return 0;
	ms = (b->timers->when_ns - now + 999999) / 1000000;
	if (max_ms >= 0 && ms > (uint64_t)max_ms)
		return max_ms;
	return ms > 3600000 ? 3600000 : (int)ms;
}

/* Run every timer that is due. */
static void
run_timers(struct ev_base *b)
{
	uint64_t now = now_mono_ns();
	struct ev_timer *t;

	while ((t = b->timers) != NULL && t->when_ns <= now) {
		ev_timer_del(b, t);
		t->fn(t->arg);
	}
}

int
ev_run_once(struct ev_base *b, int max_ms)
{
	struct epoll_event evs[128];
	int n, i;

	n = epoll_wait(b->epfd, evs, (int)nitems(evs), wait_ms(b, max_ms));
	b->wakeups++;
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		log_warn("epoll_wait");
		return -1;
	}
	for (i = 0; i < n; i++) {
		int fd = (int)(uint32_t)evs[i].data.u64;
		uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);

		/* an earlier callback of this batch may have removed it (and
		 * its number may belong to a new registration already) */
		if ((size_t)fd < b->nio && b->io[fd].fn != NULL && b->io[fd].gen == gen)
			b->io[fd].fn(fd, evs[i].events, b->io[fd].arg);
	}
	run_timers(b);
	return 0;
}

int
ev_run(struct ev_base *b)
{
	b->stop = 0;
	while (!b->stop)
		if (ev_run_once(b, -1) < 0)
			return -1;
	return 0;
}

void
ev_stop(struct ev_base *b)
{
	b->stop = 1;
}

uint64_t
ev_wakeups(const struct ev_base *b)
{
	return b->wakeups;
}
