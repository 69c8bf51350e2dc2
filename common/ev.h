/* A small event base in the style of Redis's ae: one epoll set, fd
 * callbacks and one-shot timers, driven by one thread.  The agent plugs
 * into a base it is given, so one thread can host many agents (knob-sim). */
#ifndef KNOB_EV_H
#define KNOB_EV_H

#include <stdint.h>

struct ev_base;
typedef void (*ev_io_fn)(int fd, uint32_t events, void *arg);
typedef void (*ev_timer_fn)(void *arg);

/* A one-shot timer, embedded in its user's struct; zero it before use. */
struct ev_timer {
	struct ev_timer *next, *prev;
	uint64_t when_ns;	/* monotonic */
	ev_timer_fn fn;
	void *arg;
	int armed;
};

/* A wake-up other threads send to the base's thread: every ev_async of a
 * base shares one eventfd (made on first use), so that a thread hosting
 * thousands of agents does not spend an fd on each.  Embed and zero it. */
struct ev_async {
	struct ev_async *next;
	ev_timer_fn fn;		/* on the base's thread, once per batch of sends */
	void *arg;
	int pending;		/* under the base's lock */
};

struct ev_base *ev_base_new(void);
void ev_base_free(struct ev_base *b);
/* Watch fd for epoll events (EPOLLIN/EPOLLOUT); fn(fd, revents, arg). 0 or -1. */
int ev_io_add(struct ev_base *b, int fd, uint32_t events, ev_io_fn fn, void *arg);
int ev_io_mod(struct ev_base *b, int fd, uint32_t events);
/* Stop watching fd; events already fetched for it are dropped. */
void ev_io_del(struct ev_base *b, int fd);
/* Forget fd without a system call, because the caller closes it now and
 * it has no duplicate: the close ends its registration (an event already
 * fetched for it carries the old generation and is dropped). */
void ev_io_forget(struct ev_base *b, int fd);
/* (Re)arm t to call fn(arg) once, after_ns from now. */
void ev_timer_set(struct ev_base *b, struct ev_timer *t, uint64_t after_ns, ev_timer_fn fn,
    void *arg);
void ev_timer_del(struct ev_base *b, struct ev_timer *t);
/* Make as a wake-up of b calling fn(arg). 0 or -1 (no eventfd). */
int ev_async_init(struct ev_base *b, struct ev_async *as, ev_timer_fn fn, void *arg);
/* From any thread: have fn run on b's thread soon (sends coalesce). */
void ev_async_send(struct ev_base *b, struct ev_async *as);
/* On b's thread: forget as (a send already queued is dropped). */
void ev_async_del(struct ev_base *b, struct ev_async *as);
/* Wait at most max_ms (-1: until an event) and run what is due. 0 or -1. */
int ev_run_once(struct ev_base *b, int max_ms);
/* Run until ev_stop. 0 or -1. */
int ev_run(struct ev_base *b);
void ev_stop(struct ev_base *b);	/* from a callback on the base's thread */
/* Wake-ups so far (an idle base does none). */
uint64_t ev_wakeups(const struct ev_base *b);

#endif
