/* knobd: one agent instance.  All state hangs off struct agent so that a
 * fleet simulator can host many instances in one process: no mutable
 * globals in the agent. */
#ifndef KNOB_AGENT_H
#define KNOB_AGENT_H

#include <pthread.h>
#include <stdint.h>
#include <limits.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include "ev.h"
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
	int stop_fd;		/* knobd's signalfd: SIGHUP is logged and ignored,
				 * anything else shuts down; -1 none */
	int max_conns;		/* authenticated controllers; 0: default 256 */
	int max_unauth;		/* connections before authentication; 0: 64 */
	int max_unauth_per_addr;	/* ... from one source address; 0: 8 */
	struct work_pool *pool;	/* shared worker pool; NULL: the agent makes its own */
	struct ev_base *base;	/* event base to plug into; NULL: the agent makes its own */
	SSL_CTX *ssl_ctx;	/* shared server context (knob-sim); NULL: from ca/cert/key */
	unsigned handshake_s;	/* both handshake deadlines; 0: 2 s first byte, 5 s in all */
	int no_listen;		/* no listener: connections come through agent_adopt */
	unsigned ticket_lifetime_s, ticket_rotate_s;	/* test hook; 0: 1 h, 30 min */
	const char *controller_from;	/* "ADDR[/BITS],...": controllers' sources (ctl_src.c) */
};

#define AGENT_LEASE_DEFAULT_S	10	/* controller lease (benchmark phases) */
#define AGENT_FIRST_BYTE_NS	(2ull * 1000000000ull)	/* accept -> ClientHello's first byte */
#define AGENT_HANDSHAKE_NS	(5ull * 1000000000ull)	/* accept -> authenticated */
/* A connection the agent closes: its last replies may take this long
 * without a byte going out (a peer that stops reading), then it is reset;
 * and its linger after them (conn_linger) lasts this long. */
#define AGENT_CLOSE_NS		(2ull * 1000000000ull)

/* A listener that accept(2) may fail on for a while (listen_failed):
 * set b, lfd and who (a log prefix, "" or "SNI: "), zero the rest. */
struct listen_pause {
	struct ev_timer t;	/* armed while the listener is not watched */
	struct ev_base *b;
	int lfd;
	const char *who;
	unsigned long pauses;	/* in this episode (0: none logged) */
};
#define LISTEN_PAUSE_NS (100ull * 1000000ull)

/* A local address of the agent's authenticated controller connections
 * (family 0: none), with how many of them use it. */
struct agent_ctl_addr {
	int family;		/* AF_INET or AF_INET6 (an IPv4-mapped one as AF_INET) */
	unsigned char addr[16];
	unsigned n;
};
#define AGENT_CTL_ADDRS 8	/* distinct addresses recorded; the rest go unrecorded */

/* One ADDR/BITS of --controller-from (ctl_src.c). */
struct agent_src_net {
	int family;		/* AF_INET or AF_INET6 */
	unsigned char addr[16];
	unsigned bits;
};
#define AGENT_CTL_FROM	16	/* --controller-from entries at most */
#define AGENT_CTL_HOSTS	8	/* authenticated controllers' sources remembered */
#define AGENT_CTL_SRC_MAX 1024	/* bytes of STATE/controller-sources at most */

/* One controller connection. */
struct aconn {
	struct aconn *next, *prev;
	struct agent *a;	/* the instance it belongs to */
	uint64_t id;		/* unique per agent, never reused */
	int fd;
	int handshaking;
	int authed;		/* handshake done, controller role checked */
	int got_byte;		/* the peer sent something (handshake deadline) */
	int hello_done;		/* our ServerHello went out (its ClientHello was good) */
	uint64_t accept_gen;	/* the listener wake-up that accepted it */
	int overflow;		/* a reply did not fit its write queue: close */
	uint64_t accept_ns;	/* monotonic */
	struct conn c;
	char peer[256];		/* peer CN */
	char addr[64];		/* peer address for logs */
	char host[64];		/* source address alone, an IPv6 one's /64 (per-address
				 * budget: budget_source) */
	int stdio;		/* the --stdio session on fds 0/1 (never closed, no linger) */
	int out_watched;	/* --stdio: fd 1 is in the loop for its own EPOLLOUT */
	Knob__Envelope *req;	/* the request being dispatched; NULL once a worker took it */
	int closing;		/* close once the write queue drains (within
				 * AGENT_CLOSE_NS of the last bytes out) */
	uint64_t tx_ns;		/* closing: when it began or bytes last went out */
	int peer_eof;		/* the peer ended its input: no more reads; the
				 * replies to what it sent go out, then it closes */
	unsigned pending;	/* work items of its requests still running
				 * (agent_conn_hold) */
	int draining;		/* half-closed: discarding input until the peer closes */
	int more_input;		/* frames may wait beyond this turn's (conn_input) */
	uint64_t last_rx_ns;	/* monotonic time of the last frame received */
	struct agent_ctl_addr ctl;	/* its local address once authenticated (TCP) */
	int from_ctl;		/* its source is in --controller-from (ctl_src.c) */
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
	struct ev_base *base;		/* cfg.base or own_base */
	struct ev_base *own_base;
	int lfd;			/* listener (-1: none, cfg.no_listen) */
	struct listen_pause lpause;	/* lfd out of descriptors */
	struct ev_async wake;		/* posts are waiting (the base's shared eventfd) */
	struct ev_base *post_base;	/* the base wake belongs to; outlives a busy fini */
	struct ev_timer timer;		/* armed only while something needs it */
	struct aconn *conns;
	uint64_t next_conn_id;
	int conn_opts;		/* accepted sockets: 0 not asked yet, 1 inherit
				 * the listener's options, -1 set on each */
	pthread_mutex_t post_mu;
	struct agent_post *posts, *posts_tail;
	volatile int stop;
	pthread_cond_t work_cv;		/* signalled when a work item of ours ends */
	unsigned nwork;			/* THE count of our work items (post_mu) */
	unsigned nqueued;		/* ... of which requests waiting for a pool thread */
	unsigned fini_wait_s;		/* agent_fini's wait for work items: AGENT_FINI_WAIT_S,
					 * or $KNOB_TEST_FINI_WAIT_S with --test-hooks */
	unsigned test_busy_work;	/* $KNOB_TEST_BUSY_WORK with --test-hooks: requests
					 * agent_work still refuses as busy (post_mu) */
	struct work_pool *pool;		/* cfg.pool or own_pool */
	struct work_pool *own_pool;
	uint64_t last_tick_ns;		/* subsystem ticks once a second */
	/* before authentication, since the last summary (once a second):
	 * refused over the per-address limit, dropped over the budget,
	 * handshakes failed or abandoned (the last one's address and reason),
	 * connections refused for want of file descriptors */
	unsigned refused, evicted, hs_failed, nofile;
	char hs_last[192];
	uint64_t accept_gen;		/* listener wake-ups */
	int session_failed;		/* --stdio: the session ended on a protocol error */
	/* the local addresses of the authenticated controller connections, for
	 * the net driver's workers (a glob never touches their interface) */
	pthread_mutex_t ctl_mu;
	struct agent_ctl_addr ctl_addrs[AGENT_CTL_ADDRS];
	/* ... and the ones seen before, newest first (ctl_seen.c) */
	struct agent_ctl_addr ctl_seen[AGENT_CTL_ADDRS];
	int ctl_nseen;
	int ctl_seen_loaded;	/* STATE/controller-addrs read */
	int ctl_seen_dirty;	/* noted since it was last written */
	/* the sources taken for controllers' before authentication (ctl_src.c):
	 * --controller-from, and those controllers authenticated from (budget
	 * sources, newest first; loop thread) */
	struct agent_src_net ctl_from[AGENT_CTL_FROM];
	int ctl_nfrom;
	char ctl_hosts[AGENT_CTL_HOSTS][64];
	/* ... those kept in STATE/controller-sources: the text for it the loop
	 * rendered last and its generation, the generation written, whether a
	 * pool thread writes it now (ctl_src_mu; ctl_src.c) */
	pthread_mutex_t ctl_src_mu;
	char ctl_src_text[AGENT_CTL_SRC_MAX];
	unsigned ctl_src_gen, ctl_src_written;
	int ctl_src_busy;
	struct tune_state *tune;
	struct bench_state *bench;
	struct health_state *health;
};

/* Handler for one body type: 0 when done (replied, or nothing to say), -1
 * to close the connection once its queued replies are out.  The loop owns
 * req and frees it after the handler, unless agent_work took it. */
typedef int (*agent_handler_fn)(struct agent *a, struct aconn *c, Knob__Envelope *req);
/* For a handler whose req must outlive every thread it starts (health):
 * the loop will not free req; the caller frees it with
 * knob__envelope__free_unpacked.  Returns req. */
Knob__Envelope *agent_req_take(struct aconn *c, Knob__Envelope *req);

/* Queue a reply on connection c, from the loop thread.  env->id should be
 * the request's id; version is filled in.  0 or -1. */
int agent_reply(struct agent *a, struct aconn *c, uint64_t id, Knob__Envelope *env);
/* Queue an Error reply. */
int agent_reply_error(struct agent *a, struct aconn *c, uint64_t id, int code,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Thread-safe: pack env and hand it to the loop for connection conn_id.
 * Dropped silently if that connection is gone.  0 or -1. */
int agent_post(struct agent *a, uint64_t conn_id, uint64_t id, Knob__Envelope *env);
/* From the loop thread: one more work item of c's runs; its reply (if
 * any) goes out before the agent_conn_release that ends it. */
void agent_conn_hold(struct aconn *c);
/* Thread-safe: a work item of connection conn_id that agent_conn_hold
 * counted has posted its last reply (a connection whose peer ended its
 * input closes once none runs). */
void agent_conn_release(struct agent *a, uint64_t conn_id);
/* Thread-safe: wake the loop, which then looks again at what needs its
 * timer (agent_subsys_wants_tick). */
void agent_wake(struct agent *a);
/* Thread-safe: count sa (an IP address) in a's controller addresses;
 * *key: what to hand agent_ctl_addr_del (family 0 when not recorded). */
void agent_ctl_addr_add(struct agent *a, const struct sockaddr *sa, struct agent_ctl_addr *key);
/* Thread-safe: uncount key (agent_ctl_addr_add's; family 0: nothing). */
void agent_ctl_addr_del(struct agent *a, const struct agent_ctl_addr *key);
/* Thread-safe: copy a's controller addresses into out (AGENT_CTL_ADDRS
 * slots); how many. */
int agent_ctl_addrs(struct agent *a, struct agent_ctl_addr *out);
/* Under ctl_mu: remember k (a live controller address) in a's addresses
 * seen, in memory (agent_ctl_seen writes STATE/controller-addrs). */
void agent_ctl_seen_note(struct agent *a, const struct agent_ctl_addr *k);
/* sa's address as a set key (an IPv4-mapped IPv6 one as IPv4): 0, or -1
 * when sa is no IP address. */
int agent_ctl_addr_key(const struct sockaddr *sa, struct agent_ctl_addr *k);

/* ctl_src.c: the controllers' sources.  Parse --controller-from's list
 * into a (0, or -1 with err set); is sa in it; note that a controller
 * authenticated from budget source host; is host one of those. */
int agent_ctl_from_parse(struct agent *a, const char *list, char *err, size_t errlen);
int agent_ctl_from_match(const struct agent *a, const struct sockaddr *sa);
void agent_ctl_host_note(struct agent *a, const char *host);
int agent_ctl_host_known(const struct agent *a, const char *host);
/* The learned sources across restarts: read STATE/controller-sources
 * into a (agent_init, before serving; not for --stdio), a bad file or
 * line a warning with file:line that ranks nothing.  agent_ctl_host_note
 * has a pool thread write the file when a source is new. */
void agent_ctl_src_load(struct agent *a);
/* Thread-safe, off the event loop (file I/O): copy the controller
 * addresses seen, live or not, newest first (AGENT_CTL_ADDRS slots), after
 * reading STATE/controller-addrs once and writing it when one is new; how
 * many. */
int agent_ctl_seen(struct agent *a, struct agent_ctl_addr *out);

/* Worker pool (agent/work.c): a fixed number of threads and a queue,
 * which several agent instances share.  Blocking work runs here, never on
 * the loop thread. */
struct work;
typedef void (*work_fn)(struct work *w);
struct work {
	struct work *next;
	struct agent *a;
	uint64_t conn_id;	/* where the reply goes (0: nowhere) */
	int held;		/* counted in its connection's pending (agent_conn_hold) */
	Knob__Envelope *req;	/* owned: freed after done (NULL for internal work) */
	Knob__Envelope reply;	/* run fills it; posted to conn_id when its body is set */
	void *arg;		/* the caller's, for run and done */
	work_fn run;		/* on a worker thread */
	work_fn done;		/* after the reply went out: free what run made (may be NULL) */
	work_fn park;		/* set by run: not finished; park(w) keeps it, and it
				 * comes back through work_requeue (it still counts) */
};
#define WORK_THREADS	4	/* default pool size, per process */
#define WORK_QUEUE_MAX	64	/* requests waiting for a thread, per agent */
#define TEST_BUSY_WORK_MAX 100	/* $KNOB_TEST_BUSY_WORK: larger is ignored */
#define AGENT_FINI_WAIT_S 10	/* agent_fini waits this long for work items (tests:
				 * $KNOB_TEST_FINI_WAIT_S, 1 to this, with --test-hooks) */
struct work_pool *work_pool_new(unsigned threads);
/* Stop the threads once the queue is empty and free the pool. */
void work_pool_free(struct work_pool *p);
unsigned work_pool_threads(const struct work_pool *p);
/* The one worker API.  Queue run(w) on the pool for request req of
 * connection c (c and req NULL: internal work, never refused).  A thread
 * runs run(w), posts w->reply to c when run set a body, calls done(w),
 * frees req and w.  0: queued (req is the item's now); -1: refused because
 * WORK_QUEUE_MAX requests of this agent wait already -- an "agent busy"
 * (EAGAIN) Error reply went to c and req stays the loop's; undo and return
 * 0.  Every item counts in a->nwork until it ends. */
int agent_work(struct agent *a, struct aconn *c, Knob__Envelope *req, work_fn run,
    work_fn done, void *arg);
/* Queue a parked item (see park) on the pool again. */
void work_requeue(struct work *w);
/* A pool thread is about to block for long (waiting for what another
 * item holds): 1 when it may, because another pool thread is idle at this
 * moment (so at most all but one block: other requests keep a thread);
 * 0 when it must park instead. */
int work_may_block(struct agent *a);
/* Same contract, but run(w) gets a thread of its own (never refused): for
 * work that blocks for long, such as a benchmark phase, which must not
 * hold one of the few pool threads every instance shares. */
int agent_work_long(struct agent *a, struct aconn *c, Knob__Envelope *req, work_fn run,
    work_fn done, void *arg);
/* Start fn(arg) on a detached thread outside the pool, for work that may
 * hang and is abandoned at a deadline (health checks); counted in
 * a->nwork.  0 or -1. */
int agent_spawn(struct agent *a, void *(*fn)(void *), void *arg);
/* Wait at most seconds for a->nwork to reach 0: 0, or -1 (still busy). */
int agent_work_wait(struct agent *a, int seconds);
/* Set keepalive and TCP_USER_TIMEOUT of controller connection conn_id
 * for a lease of lease_s (user timeout = twice the lease). */
void agent_conn_lease(struct agent *a, uint64_t conn_id, unsigned lease_s);
/* Resolve an absolute path under the agent's sysroot into buf. 0 or -errno. */
int agent_path(const struct agent *a, char *buf, size_t len, const char *abs);

/* Parse "ADDR:PORT", "[V6]:PORT", ":PORT" or "PORT" and bind a
 * non-blocking listener with a deep queue.  The fd, or -1 with err. */
int agent_listen(const char *spec, char *err, size_t errlen);
/* accept(2) on p's listener failed with errno e.  2: out of descriptors,
 * the waiting connection was refused with the spare one
 * (accept_refuse_one); 1: that connection's own network error (the next
 * one does not have it); both: accept again.  0: accept no more in this
 * wake-up: none waits, or the listener is paused for LISTEN_PAUSE_NS
 * (logged once per episode): out of descriptors when the spare could not
 * refuse (none left, or another thread took the slot it freed before the
 * accept; it is taken again when the listener resumes), or the system
 * short of memory (ENOBUFS, ENOMEM). */
int listen_failed(struct listen_pause *p, int e);
/* An accept(2) on p's listener succeeded: the end of an episode of
 * pauses, if one was under way, is logged. */
void listen_accepted(struct listen_pause *p);
/* Stop p's timer (the listener is about to be closed). */
void listen_pause_stop(struct listen_pause *p);
/* Lifecycle (agent/loop.c).  agent_init plugs the instance into cfg->base
 * (or a base of its own); whoever drives that base serves it. */
int agent_init(struct agent *a, const struct agent_cfg *cfg);
/* STATE/name into buf: 0, or -1 when there is no state dir (`--state-dir
 * ''`: never the root directory's) or it does not fit. */
int agent_state_path(const struct agent *a, const char *name, char *buf, size_t len);
int agent_run(struct agent *a);		/* drive the base until a->stop (knobd) */
/* Serve connection fd, accepted elsewhere (knob-sim's SNI listener), on
 * the instance's base thread: TLS handshake with its own context, then as
 * if its listener had accepted it.  The instance owns fd from here on
 * (also when it refuses it).  0, or -1 when refused (fd closed). */
int agent_adopt(struct agent *a, int fd, const struct sockaddr *sa, socklen_t salen);
int agent_run_stdio(struct agent *a);	/* one session on fds 0/1 (--stdio) */
/* Close every connection, stop the subsystems, wait a->fini_wait_s
 * (AGENT_FINI_WAIT_S) at most for the work items, then free.  0, or -1
 * past the deadline: the state those items use is left allocated (said
 * so), and the caller must not free a or a pool they use (exiting is
 * fine). */
int agent_fini(struct agent *a);
/* Re-arm the instance's timer after a change from the loop thread (a phase
 * started): it runs only while a deadline or a subsystem needs it. */
void agent_timer_update(struct agent *a);

/* Subsystem hooks: the loop knows subsystems only through this table
 * (agent/subsys.c), never by name.  Every member may be NULL. */
struct agent_subsys {
	const char *name;
	int (*init)(struct agent *a);		/* before serving; -1 refuses to start */
	void (*stop)(struct agent *a);		/* shutdown begins: abort, wake workers */
	void (*fini)(struct agent *a);		/* after every work item ended */
	void (*tick)(struct agent *a);		/* once a second, while wants_tick */
	int (*wants_tick)(struct agent *a);	/* 1 while a lease or a phase needs ticks */
	void (*conn_closed)(struct agent *a, uint64_t conn_id);	/* controller gone */
	void (*conn_activity)(struct agent *a, uint64_t conn_id);	/* a frame from it */
};
extern const struct agent_subsys tune_subsys, bench_subsys, health_subsys;
extern const struct agent_subsys *const agent_subsystems[];	/* NULL-terminated */
int agent_subsys_init(struct agent *a);	/* in order; -1 at the first refusal */
void agent_subsys_stop(struct agent *a);	/* reverse order */
void agent_subsys_fini(struct agent *a);	/* reverse order */
void agent_subsys_tick(struct agent *a);
int agent_subsys_wants_tick(struct agent *a);
void agent_subsys_conn_closed(struct agent *a, uint64_t conn_id);
void agent_subsys_conn_activity(struct agent *a, uint64_t conn_id);

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

/* Tuning (agent/tune.c).  Its init hook recovers any unfinished
 * transaction from the journal before the agent serves. */
/* The active profile ("" when none) and its note ("re-applied at boot
 * ..." or ""), copied (malloc'd) under the lock apply publishes them with. */
void tune_active(struct agent *a, char **profile, char **note);

/* Benchmarks (agent/bench.c). */
int bench_active(struct agent *a);	/* a phase is prepared or running */

#endif
