/* Name lookups for the fan-out's TLS and SSH transports and for
 * bootstrap, done before any node's connect deadline starts.  getaddrinfo
 * blocks: done in the event loop, a slow lookup held every other node of
 * the loop while their deadlines ran, and healthy nodes were reported
 * unreachable behind slow names.  Numeric addresses are converted at once;
 * names are looked up by a few detached worker threads, all of them
 * together bounded by --connect-timeout.  A lookup still running then is
 * abandoned: its worker finishes it into the batch (freed by the last of
 * its users), never into the nodes, and its node ends "cannot resolve: no
 * answer within Ns" (fo_addr_port).  A run told to stop (fo->stop, set
 * by the holder's dial_stop_all) stops waiting within RESOLVE_TICK_NS. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "knobctl.h"
#include "log.h"
#include "util.h"

#define RESOLVE_THREADS 16	/* lookups in flight at once */
#define RESOLVE_TICK_NS 100000000ull	/* how often a wait looks at fo->stop */

/* The names of a run, shared with its workers. */
struct rbatch {
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* a lookup finished */
	size_t n, next, done;
	char **host;		/* copies: the batch may outlive the run */
	int *port;
	size_t *node;		/* the node index of each name */
	struct fo_addr *res;
	int refs;		/* the run and each worker */
	int abandoned;		/* the run stopped waiting: take no more names */
};

/* Look host:port up into a (its first address): FO_ADDR_OK or FAILED
 * with getaddrinfo's error. */
static void
lookup(const char *host, int port, int flags, struct fo_addr *a)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV | flags };
	struct addrinfo *res = NULL;
	char serv[16];

	snprintf(serv, sizeof(serv), "%d", port);
	if ((a->gai = getaddrinfo(host, serv, &hints, &res)) != 0) {
		a->state = FO_ADDR_FAILED;
		return;
	}
	memcpy(&a->sa, res->ai_addr, res->ai_addrlen);
	a->len = res->ai_addrlen;
	a->state = FO_ADDR_OK;
	freeaddrinfo(res);
}

/* Drop one user of b, whose mutex the caller holds; the last frees b. */
static void
rbatch_put(struct rbatch *b)
{
	int last = --b->refs == 0;

	pthread_mutex_unlock(&b->mu);
	if (!last)
		return;
	for (size_t i = 0; i < b->n; i++)
		free(b->host[i]);
	free(b->host);
	free(b->port);
	free(b->node);
	free(b->res);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

/* Worker: look the next name up until none is left or the run gave up. */
static void *
rworker(void *arg)
{
	struct rbatch *b = arg;

	pthread_mutex_lock(&b->mu);
	while (b->next < b->n && !b->abandoned) {
		size_t i = b->next++;
		struct fo_addr a = { 0 };

		pthread_mutex_unlock(&b->mu);
		lookup(b->host[i], b->port[i], 0, &a);
		pthread_mutex_lock(&b->mu);
		b->res[i] = a;
		b->done++;
		pthread_cond_signal(&b->cv);
	}
	rbatch_put(b);
	return NULL;
}

/* Convert fo's numeric addresses into fo->addrs; a batch (one user: the
 * run) of the names left to look up. */
static struct rbatch *
rbatch_new(struct fanout *fo)
{
	struct rbatch *b = xcalloc(1, sizeof(*b));
	pthread_condattr_t ca;
	size_t max = fo->n ? fo->n : 1;

	pthread_mutex_init(&b->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &ca);
	pthread_condattr_destroy(&ca);
	b->refs = 1;
	b->host = xcalloc(max, sizeof(*b->host));
	b->port = xcalloc(max, sizeof(*b->port));
	b->node = xcalloc(max, sizeof(*b->node));
	b->res = xcalloc(max, sizeof(*b->res));
	for (size_t i = 0; i < fo->n; i++) {
		struct fo_node *n = &fo->nodes[i];

		lookup(n->addr, n->port, AI_NUMERICHOST, &fo->addrs[i]);
		if (fo->addrs[i].state == FO_ADDR_FAILED && fo->addrs[i].gai == EAI_NONAME) {
			fo->addrs[i].state = FO_ADDR_NONE;	/* a name */
			b->host[b->n] = xstrdup(n->addr);
			b->port[b->n] = n->port;
			b->node[b->n++] = i;
		}
	}
	return b;
}

/* Start b's workers (detached); none can start: look up here. */
static void
rbatch_start(struct rbatch *b)
{
	size_t want = b->n < RESOLVE_THREADS ? b->n : RESOLVE_THREADS, started = 0;
	pthread_attr_t at;
	pthread_t th;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (size_t k = 0; k < want; k++) {
		pthread_mutex_lock(&b->mu);
		b->refs++;
		pthread_mutex_unlock(&b->mu);
		if (pthread_create(&th, &at, rworker, b) == 0) {
			started++;
			continue;
		}
		pthread_mutex_lock(&b->mu);
		b->refs--;
		pthread_mutex_unlock(&b->mu);
		break;
	}
	pthread_attr_destroy(&at);
	if (started == 0) {
		log_warnx("cannot start name lookup threads: looking names up one by one");
		b->refs++;
		rworker(b);
	}
}

/* Wait until every lookup of b ended, seconds passed or the run was told
 * to stop (fo->stop: the holder stopping); give up on the rest, copy
 * what came into fo->addrs, drop the run's use of b. */
static void
rbatch_finish(struct fanout *fo, struct rbatch *b, double seconds)
{
	uint64_t end = now_mono_ns() + (uint64_t)(seconds * 1e9), now;
	size_t late;

	pthread_mutex_lock(&b->mu);
	while (b->done < b->n && !__atomic_load_n(&fo->stop, __ATOMIC_RELAXED) &&
	    (now = now_mono_ns()) < end) {
		/* a slice of at most RESOLVE_TICK_NS: fo->stop has no signal */
		uint64_t t = end - now < RESOLVE_TICK_NS ? end : now + RESOLVE_TICK_NS;
		struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ull),
		    .tv_nsec = (long)(t % 1000000000ull) };

		(void)pthread_cond_timedwait(&b->cv, &b->mu, &ts);
	}
	b->abandoned = 1;
	for (size_t j = 0; j < b->n; j++)
		fo->addrs[b->node[j]] = b->res[j];	/* NONE when it did not end */
	late = b->n - b->done;
	if (late > 0)
		log_debug("name lookup: %zu of %zu name(s) without an answer within %.1fs", late,
		    b->n, seconds);
	rbatch_put(b);
}

void
fanout_resolve(struct fanout *fo)
{
	struct rbatch *b;

	free(fo->addrs);
	fo->addrs = xcalloc(fo->n ? fo->n : 1, sizeof(*fo->addrs));
	b = rbatch_new(fo);
	if (b->n > 0)
		rbatch_start(b);
	rbatch_finish(fo, b, fo->ctl->connect_timeout);
}

/* a's address with port in place of the one looked up (the SSH port, the
 * agent's) into *sa and *len: 0, or -1 with why there is none
 * ("cannot resolve: ...", seconds the lookups had) in err. */
int
fo_addr_port(const struct fo_addr *a, int port, double seconds, struct sockaddr_storage *sa,
    socklen_t *len, char *err, size_t errlen)
{
	if (a->state == FO_ADDR_FAILED) {
		snprintf(err, errlen, "cannot resolve: %s", gai_strerror(a->gai));
		return -1;
	}
	if (a->state != FO_ADDR_OK) {
		snprintf(err, errlen, "cannot resolve: no answer within %.1fs", seconds);
		return -1;
	}
	*sa = a->sa;
	*len = a->len;
	if (sa->ss_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
	else if (sa->ss_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
	return 0;
}
