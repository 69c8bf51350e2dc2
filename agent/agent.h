/* knobd: one agent instance.  All state hangs off struct agent so that a
 * fleet simulator can host many instances in one process: no mutable
 * globals in the agent. */
#ifndef KNOB_AGENT_H
#define KNOB_AGENT_H

#include <pthread.h>
#include <stdint.h>
#include <limits.h>
#include <openssl/ssl.h>

#include "knob.pb-c.h"
#include "wire.h"

struct tune_state;	/* agent/tune.c: drivers, journal, apply */
struct work_pool;	/* agent/work.c: bounded worker threads */
struct bench_state;	/* agent/bench.c: benchmark phases */
struct health_state;	/* agent/health.c: health sweeps */

struct agent_cfg {
	const char *listen;	/* "ADDR:PORT", default 0.0.0.0:7420 */
	const char *ca, *cert, *key;
	const char *sysroot;	/* "" for the real root */
	const char *state_dir;	/* default /var/lib/knob */
	int stdio;		/* serve one plaintext session on stdin/stdout */
	int test_hooks;		/* honour test-only fields (pause points) */
	int no_reapply;		/* do not re-apply the active profile at start-up */
	const char *node_name;	/* override; default is the certificate's CN */
	int stop_fd;		/* readable => shut down (knobd's signalfd); -1 none */
	int max_conns;		/* authenticated controllers; 0: default 256 */
	int max_unauth;		/* connections before authentication; 0: 64 */
	int max_unauth_per_addr;	/* ... from one source address; 0: 8 */
	struct work_pool *pool;	/* shared worker pool; NULL: the agent makes its own */
};

#define AGENT_LEASE_DEFAULT_S	10	/* controller lease (benchmark phases) */
#define AGENT_FIRST_BYTE_NS	(2ull * 1000000000ull)	/* accept -> ClientHello's first byte */
#define AGENT_HANDSHAKE_NS	(5ull * 1000000000ull)	/* accept -> authenticated */

/* One controller connection. */
struct aconn {
	struct aconn *next, *prev;
	uint64_t id;		/* unique per agent, never reused */
	int fd;
	int handshaking;
	int authed;		/* handshake done, controller role checked */
	int got_byte;		/* the peer sent something (handshake deadline) */
	int overflow;		/* a reply did not fit its write queue: close */
	uint64_t accept_ns;	/* monotonic */
	struct conn c;
	char peer[256];		/* peer CN */
	char addr[64];		/* peer address for logs */
	char host[64];		/* source address alone (per-address budget) */
	int closing;		/* close once the write queue drains */
	int draining;		/* half-closed: discarding input until the peer closes */
	uint64_t last_rx_ns;	/* monotonic time of the last frame received */
};

/* A reply produced on another thread, waiting for the loop. */
struct agent_post {
	struct agent_post *next;
	uint64_t conn_id;
	uint8_t *frame;
	size_t len;
};

struct agent {
	struct agent_cfg cfg;
	char node[256];		/* our node name (certificate CN) */
	char sysroot[PATH_MAX];	/* "" or a directory without trailing slash */
	char state_dir[PATH_MAX];
	SSL_CTX *ssl_ctx;
	int epfd, lfd, evfd, tfd;	/* epoll, listener, eventfd (posts), timerfd (1 s ticks) */
	struct aconn *conns;
	uint64_t next_conn_id;
	pthread_mutex_t post_mu;
	struct agent_post *posts, *posts_tail;
	volatile int stop;
	pthread_cond_t workers_cv;	/* signalled when a work item of ours ends */
	unsigned workers;		/* our queued + running work items (post_mu) */
	struct work_pool *pool;		/* cfg.pool or own_pool */
	struct work_pool *own_pool;
	uint64_t last_tick_ns;		/* bench_tick once a second */
	unsigned refused, evicted;	/* unauthenticated, since the last summary */
	struct tune_state *tune;
	struct bench_state *bench;
	struct health_state *health;
};

/* Handler for one body type.  Return 0 when done with req (the loop frees
 * it), 1 when the handler kept req (it frees it later with
 * knob__envelope__free_unpacked), -1 to close the connection (the loop
 * frees req). */
typedef int (*agent_handler_fn)(struct agent *a, struct aconn *c, Knob__Envelope *req);

/* Queue a reply on connection c, from the loop thread.  env->id should be
 * the request's id; version is filled in.  0 or -1. */
int agent_reply(struct agent *a, struct aconn *c, uint64_t id, Knob__Envelope *env);
/* Queue an Error reply. */
int agent_reply_error(struct agent *a, struct aconn *c, uint64_t id, int code,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Thread-safe: pack env and hand it to the loop for connection conn_id.
 * Dropped silently if that connection is gone.  0 or -1. */
int agent_post(struct agent *a, uint64_t conn_id, uint64_t id, Knob__Envelope *env);

/* Worker pool (agent/work.c): a fixed number of threads and a bounded
 * queue, which several agent instances may share.  Blocking work runs
 * here, never on the loop thread. */
struct work;
typedef void (*work_fn)(struct work *w);
struct work {
	struct work *next;
	struct agent *a;
	uint64_t conn_id;	/* where the reply goes (0: nowhere) */
	Knob__Envelope *req;	/* owned: freed after done (NULL for internal work) */
	Knob__Envelope reply;	/* run fills it; posted to conn_id when its body is set */
	void *arg;		/* the caller's, for run and done */
	work_fn run;		/* on a worker thread */
	work_fn done;		/* after the reply went out: free what run made (may be NULL) */
};
#define WORK_THREADS	16	/* default pool size */
#define WORK_QUEUE_MAX	64	/* requests waiting for a thread, per pool */
struct work_pool *work_pool_new(unsigned threads, unsigned queue_max);
/* Stop the threads once the queue is empty and free the pool. */
void work_pool_free(struct work_pool *p);
/* Run run(w) on the pool for request req of connection c (c and req may be
 * NULL for internal work, which is never refused), then post w->reply,
 * call done(w), free req and w.  Returns 1 (req is taken), or, when the
 * queue is full, replies "agent busy" (EAGAIN) and returns 0 (req stays the
 * caller's), -1 if even that reply failed.  Every item counts in
 * a->workers until it ends; agent_fini waits for them with a deadline. */
int agent_work(struct agent *a, struct aconn *c, Knob__Envelope *req, work_fn run,
    work_fn done, void *arg);
/* Start fn(arg) on a detached thread outside the pool, for work that may
 * hang and is abandoned at a deadline (health checks); counted in
 * a->workers.  Anything else goes through agent_work.  0 or -1. */
int agent_spawn(struct agent *a, void *(*fn)(void *), void *arg);
/* Set keepalive and TCP_USER_TIMEOUT of controller connection conn_id
 * for a lease of lease_s (user timeout = twice the lease). */
void agent_conn_lease(struct agent *a, uint64_t conn_id, unsigned lease_s);
/* Resolve an absolute path under the agent's sysroot into buf. 0 or -errno. */
int agent_path(const struct agent *a, char *buf, size_t len, const char *abs);

/* Lifecycle (agent/loop.c). */
int agent_init(struct agent *a, const struct agent_cfg *cfg);
int agent_run(struct agent *a);		/* until a->stop */
int agent_run_stdio(struct agent *a);	/* one session on fds 0/1 */
void agent_fini(struct agent *a);

/* Request dispatch (agent/dispatch.c). */
int agent_dispatch(struct agent *a, struct aconn *c, Knob__Envelope *req);

/* Handlers, one subsystem per file. */
int h_ping(struct agent *, struct aconn *, Knob__Envelope *);		/* dispatch.c */
int h_facts(struct agent *, struct aconn *, Knob__Envelope *);		/* facts.c */
int h_apply(struct agent *, struct aconn *, Knob__Envelope *);		/* tune.c */
int h_verify(struct agent *, struct aconn *, Knob__Envelope *);		/* tune.c */
int h_rollback(struct agent *, struct aconn *, Knob__Envelope *);	/* tune.c */
int h_phase_prepare(struct agent *, struct aconn *, Knob__Envelope *);	/* bench.c */
int h_phase_go(struct agent *, struct aconn *, Knob__Envelope *);	/* bench.c */
int h_phase_abort(struct agent *, struct aconn *, Knob__Envelope *);	/* bench.c */
int h_health(struct agent *, struct aconn *, Knob__Envelope *);		/* health.c */

/* Facts (agent/facts.c): fill f; free with facts_free. 0 or -1. */
int facts_gather(struct agent *a, Knob__Facts *f);
void facts_free(Knob__Facts *f);
/* Type of the file system a resolved path lies on, from (sysroot)
 * /proc/self/mounts ("tmpfs", "gpfs", ...).  0, or -1 (buf ""). */
int facts_fs_type(const struct agent *a, const char *path, char *buf, size_t len);

/* Tuning subsystem hooks (agent/tune.c).  tune_init recovers any
 * unfinished transaction from the journal before the agent serves. */
int tune_init(struct agent *a);
void tune_fini(struct agent *a);
const char *tune_active_profile(struct agent *a);	/* "" when none */
const char *tune_active_note(struct agent *a);	/* "re-applied at boot ..." or "" */

/* Benchmark subsystem hooks (agent/bench.c). */
int bench_init(struct agent *a);
void bench_fini(struct agent *a);
void bench_conn_closed(struct agent *a, uint64_t conn_id);	/* controller gone */
void bench_conn_activity(struct agent *a, uint64_t conn_id);	/* any frame from it */
void bench_tick(struct agent *a);				/* once a second */
int bench_active(struct agent *a);	/* a phase is prepared or running */

/* Health subsystem hooks (agent/health.c). */
int health_init(struct agent *a);
void health_fini(struct agent *a);

#endif
