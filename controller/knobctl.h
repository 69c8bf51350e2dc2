/* knobctl: one controller run.  State lives in struct ctl, passed down. */
#ifndef KNOB_KNOBCTL_H
#define KNOB_KNOBCTL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <openssl/ssl.h>
#include <json-c/json.h>

#include "knob.pb-c.h"
#include "opt.h"
#include "ssh.h"
#include "util.h"
#include "wire.h"

/* ------------------------------------------------------------ inventory
 * cluster.xml: groups, port, per-node address/port overrides, CA and
 * controller certificate, results database (controller/inventory.c). */
struct inv_node {
	char *name;
	char *addr;		/* NULL: resolve the name */
	int port;		/* 0: inventory default */
};
struct inv_group {
	char *name;
	struct strvec members;	/* node-set expressions */
};
struct inventory {
	char *path;
	int port;		/* default KNOB_DEFAULT_PORT */
	char *ca, *cert, *key;	/* controller credentials (paths, relative to the file's dir resolved) */
	char *db;		/* results database path */
	struct inv_node *nodes;
	size_t nnodes;
	struct inv_group *groups;
	size_t ngroups;
};
/* Load and validate; on error returns NULL and err holds "file:line: message"
 * (all errors, newline separated). */
struct inventory *inventory_load(const char *path, char *err, size_t errlen);
void inventory_free(struct inventory *inv);
/* nodeset_group_fn for @group lookups (arg = struct inventory *). */
int inventory_group_fn(void *arg, const char *group, struct strvec *out);
/* Address and port to dial for node. */
void inventory_target(const struct inventory *inv, const char *node, const char **addr, int *port);

struct option;
/* ------------------------------------------------------------ run state */
struct ctl {
	const char *cluster_path;
	struct inventory *inv;	/* may be an empty default inventory */
	int json;		/* --json */
	double timeout;		/* --timeout S: per-request timeout */
	double connect_timeout;
	const char *ca, *cert, *key;	/* overrides of the inventory */
	SSL_CTX *ssl;		/* created on first use */
	struct tcache *tickets;	/* TLS sessions per node, loaded with ssl */
	FILE *out;		/* stdout */
	int tty;		/* stderr is a terminal (live progress) */
	int log_level;		/* --log-level */
	/* the command line (controller/opt.c) */
	const struct cmd_entry *cmd;	/* the subcommand */
	struct strvec w, x;	/* -w and -x expressions, in order (additive) */
	int all;		/* -a */
	int fanout;		/* --fanout N; 0: the command's default */
	int threads;		/* --threads N; 0: the CPUs knobctl may run on */
	struct ssh_cfg ssh;	/* --via ssh, --ssh-key, ... (controller/ssh.c) */
	struct option *lopts;	/* getopt_long tables built for cmd */
	char *sopts;
	int no_mux;		/* --no-mux: dial every node even if a holder runs */
	int units_decimal;	/* --units decimal: MB/s, GB/s (default binary: MiB/s, GiB/s) */
	/* the play a command runs for, recorded with its runs: {"play",
	 * "play_file", "play_sha256", "play_text", "play_vars"}; NULL none */
	json_object *play_info;
	/* non-zero (a signal's number) ends every fan-out loop early, as
	 * fo->stop does: a play's SIGINT or SIGTERM during a bench or a sweep
	 * (controller/play_run.c); NULL: never */
	const atomic_int *interrupt;
	/* a play's bench: seconds its stop waits for the nodes' answers to the
	 * abort (bench_req.stop_wait_s; 0: a plain bench's stall limit) */
	uint32_t stop_wait_s;
};

/* Parse argv (argv[0] = the command's name), load the inventory unless ce
 * says CMD_NOINV, run ce; returns the exit status. */
int ctl_run(struct ctl *ctl, const struct cmd_entry *ce, int argc, char **argv);
/* The target list from every -w, -a and -x given; 0 or -1 (message printed). */
int ctl_targets(struct ctl *ctl, struct strvec *out);
/* The same set without the checks (may be empty); 0 or -1 (printed). */
int ctl_expand(struct ctl *ctl, struct strvec *out);
/* The cluster CA's directory: where --ca or the inventory's CA certificate
 * is (ca.key next to it).  0 or -1 (none configured). */
int ctl_ca_dir(struct ctl *ctl, char *buf, size_t len);
/* Warn on stderr ("knobctl CMD: warning: the CA CRT expires in ...") when
 * the CA certificate TLS trusts (--ca, else the inventory's <tls ca=...>,
 * whatever it is called) expires within days; silent otherwise. */
void ctl_ca_expiry_warn(struct ctl *ctl, const char *cmd, int days);
/* The directory knobctl runs from. */
void ctl_exe_dir(char *buf, size_t len);
/* This controller's agent binary (the knobd next to knobctl, else
 * /usr/sbin/knobd): path into buf. */
void ctl_knobd_path(char *buf, size_t len);
/* Its contents (malloc'd). 0 or -1. */
int ctl_knobd_binary(struct ctl *ctl, char **data, size_t *len);
/* TLS context for dialling agents, created on first use (ctl_pair_recover
 * first). NULL on error (printed). */
SSL_CTX *ctl_ssl(struct ctl *ctl);
/* Our certificate's pair, if a ca renew of it was stopped by a crash,
 * finished or undone (ca_pair_recover).  0, or -1 (printed: what to run). */
int ctl_pair_recover(struct ctl *ctl);
/* What this command would trust: a hash of the CA certificate, its CRL
 * and the controller certificate, in hex (the ticket cache's binding).
 * 0, or -1 when they cannot be read. */
int ctl_trust_id(struct ctl *ctl, char out[65]);

/* ------------------------------------------------------------ ticket cache
 * One TLS 1.3 session per node between commands (controller/tlscache.c),
 * in TCACHE_FILE next to the results database. */
#define TCACHE_FILE "tls-tickets"
struct tcache;
/* Load the cache bound to this CA (+ CRL) and controller certificate; a
 * file bound to others is ignored.  Never NULL. */
struct tcache *tcache_open(struct ctl *ctl, const char *ca, const char *cert);
void tcache_free(struct tcache *tc);
/* A fresh session for name, NULL if none, expired or of an agent
 * certificate past its notAfter (caller frees); *pin is the node name the
 * agent's certificate was verified for when the session began (valid
 * until the next tcache_put), *not_after that certificate's notAfter. */
SSL_SESSION *tcache_get(struct tcache *tc, const char *name, const char **pin,
    int64_t *not_after);
/* Keep s for name, pinned to pin (copied, without the agent's certificate;
 * NULL drops name's ticket), of an agent certificate valid until not_after
 * (unix s; INT64_MIN, unknown: not kept). */
void tcache_put(struct tcache *tc, const char *name, SSL_SESSION *s, const char *pin,
    int64_t not_after);
/* Write the file if anything changed. 0 or -1 (warned). */
int tcache_save(struct tcache *tc);
/* The same, but quiet: 0, 1 when another command holds the lock for
 * longer than a save waits, or -errno when the write failed (either way
 * nothing saved and tc still dirty: try again). */
int tcache_save_later(struct tcache *tc);
/* How many nodes tc put or dropped and has not saved; their names, comma
 * separated ("and N more" past len), in buf (NULL: only counted). */
size_t tcache_pending(const struct tcache *tc, char *buf, size_t len);
/* The file tc saves to (for the log). */
const char *tcache_path(const struct tcache *tc);
/* A new cache (the caller's, NULL when none) holding copies of what tc
 * put or dropped since it last saved or handed its changes over, bound to
 * tc's file and trust: saving it saves them, tc no longer does.  Only
 * memory: for a loop that hands its changes to a thread that saves. */
struct tcache *tcache_changes(struct tcache *tc);
/* newer's changes (tcache_changes, later) over into's; newer is freed. */
void tcache_absorb(struct tcache *into, struct tcache *newer);
/* A thread that saves the changes handed to it (controller/tcsaver.c), one
 * save at a time, trying again while another command holds the lock or
 * after a failed write (ENOSPC, EIO): NULL when no thread can be made. */
struct tcache_saver;
struct tcache_saver *tcache_saver_start(const char *who);
/* Hand tc's changes since the last hand-over to sv (NULL: saved here). */
void tcache_saver_hand(struct tcache_saver *sv, struct tcache *tc);
/* Hand tc's last changes over and wait wait_s at most for what is pending
 * to be saved (tried once more if the lock is held or the last write
 * failed).  0, or -1 when tickets went unsaved: the save did not end in
 * time (the thread is left to the process's exit) or failed once more
 * (both warned, naming the nodes not saved). */
int tcache_saver_stop(struct tcache_saver *sv, struct tcache *tc, int wait_s);
/* The DER of session s as the cache keeps it: without the agent's
 * certificate (the [3] peer element of OpenSSL's SSL_SESSION sequence), so
 * that a session decoded from it resumes without decoding a certificate.
 * malloc'd, length in *outlen; NULL on error. */
unsigned char *tcache_der(SSL_SESSION *s, size_t *outlen);
/* May a session pinned to pin be resumed as node name? */
int tcache_pinned(const char *pin, const char *name);

/* ------------------------------------------------------------ fan-out
 * A few epoll loops (one per thread, --threads) over all targets; no thread
 * per node, no serial connects (controller/fanout.c). */
enum node_status {
	NS_PENDING = 0,
	NS_OK,
	NS_CHANGED,
	NS_WOULD_CHANGE,
	NS_DRIFT,
	NS_DEGRADED,
	NS_FAILED,
	NS_TIMEOUT,
	NS_UNREACHABLE,
	NS_AUTH_FAILED,
	NS_SKIPPED,		/* apply: keys not attempted (nothing, or not all, written) */
	NS_UNSUPPORTED,		/* apply: keys this node cannot have */
	NS_BUSY,		/* another controller holds the node's tuning lock */
	NS__COUNT
};
const char *node_status_name(int st);
int node_status_is_error(int st);	/* what makes a command exit 1 */
int node_status_by_name(const char *s);	/* -1: no such status */

enum fo_phase { FO_IDLE, FO_CONNECTING, FO_HANDSHAKE, FO_OPEN, FO_DONE };

/* A node's address, looked up before the run's deadlines start
 * (controller/fo_resolve.c). */
enum fo_addr_state { FO_ADDR_NONE, FO_ADDR_OK, FO_ADDR_FAILED };
struct fo_addr {
	struct sockaddr_storage sa;
	socklen_t len;
	int state;		/* enum fo_addr_state; NONE: no answer in time */
	int gai;		/* getaddrinfo's error when FAILED */
};

struct fanout;
struct fo_node {
	char *name;
	const char *addr;
	int port;
	size_t idx;
	int status;		/* enum node_status */
	char *detail;		/* error text for failed/unreachable/... */
	Knob__Envelope *reply;	/* fanout_request: the reply */
	void *user;		/* per-command per-node state */
	/* transport */
	int phase;		/* enum fo_phase */
	int fd;
	uint32_t ev;		/* TLS: the epoll events fd is registered for */
	struct conn c;
	uint64_t deadline_ns;	/* monotonic */
	uint64_t next_id;
	uint64_t t_open_ns;
	void *tr;		/* the transport's own state (SSH: the session; the holder:
				 * its channel, while the holder knows the node) */
	SSL_SESSION *ticket;	/* TLS: the session the agent sent for next time */
	char *pin;		/* TLS: the offered session's pin (tcache_get) */
	int64_t not_after;	/* TLS: the agent certificate's notAfter (unix s): verified
				 * (full handshake) or the resumed ticket's; INT64_MIN unknown */
	int resumed;		/* TLS: this connection resumed a session */
	int redials;		/* TLS: dialled again after a drop before the handshake */
	int busy_tries;		/* "agent busy" answers sent again (fo_ops.retry_busy);
				 * a command that sends several requests zeroes it
				 * before each one that may be refused so */
	uint64_t retry_ns;	/* monotonic: when to send again; 0: not waiting */
	struct fo_loop *loop;	/* the event loop (thread) that drives this node */
};

/* How frames reach a node: TLS (controller/fanout.c) or an SSH exec channel
 * to "knobd --stdio" (--via ssh, controller/fo_ssh.c).  start begins the
 * connection; event and tick drive it (tick about every 100 ms, may be
 * NULL); send queues a frame; close releases it.  Failures end the node
 * with fanout_end; a transport calls fanout_opened when the node can take
 * requests and fanout_deliver for each message. */
struct fo_transport {
	void (*start)(struct fanout *fo, struct fo_node *n);
	void (*event)(struct fanout *fo, struct fo_node *n, uint32_t events);
	void (*tick)(struct fanout *fo, struct fo_node *n);
	int (*send)(struct fanout *fo, struct fo_node *n, Knob__Envelope *env);
	void (*close)(struct fanout *fo, struct fo_node *n);
	/* The run is over (may be NULL): release what start shared. */
	void (*finish)(struct fanout *fo);
	/* n's deadline passed (may be NULL): 1 when it ended n in its own
	 * words (what stalled), 0 for the fan-out's. */
	int (*expire)(struct fanout *fo, struct fo_node *n);
};
extern const struct fo_transport fo_tls_transport, fo_ssh_transport, fo_mux_transport;
/* Is a connection holder of ours listening (controller/fo_mux.c)?  Its
 * socket path into path (next to the results database). */
int mux_usable(struct ctl *ctl);
/* Open the run's channel to the holder (mux_usable said yes): 0, or -1
 * when the holder went meanwhile (warned about: the run dials itself). */
int mux_chan_open(struct fanout *fo);
void mux_socket_path(struct ctl *ctl, char *path, size_t len);
/* The unix address of path; -1 (ENAMETOOLONG) when it does not fit. */
struct sockaddr_un;
int mux_sockaddr(const char *path, struct sockaddr_un *sa);
/* One line to the holder and its one-line answer (without the newline)
 * into ans.  0, or -1 when no holder answers (errno). */
int mux_query(struct ctl *ctl, const char *line, char *ans, size_t len);
/* The holder's multiplexed channel (controller/fo_mux.c): messages are
 * frames whose body is a type byte, a 4-byte big-endian node id, then
 * the payload. */
enum mux_msg {
	MUX_OPEN = 'O',		/* knobctl: "NAME ADDR PORT CONNECT_TIMEOUT" */
	MUX_FRAME = 'F',	/* either way: one knob frame body for the node */
	MUX_DONE = 'D',		/* knobctl: the exchange is complete, the link may idle */
	MUX_ABORT = 'A',	/* knobctl: the node ended otherwise, drop its link */
	MUX_OK = 'K',		/* holder: "new" or "reused" (authenticated, name pinned) */
	MUX_FAIL = 'X',		/* holder: "STATUS TEXT", the same as a direct dial (before OK,
				 * or after it: a certificate expired, a refusal) */
	MUX_LOST = 'L',		/* holder: the link went (TEXT) */
};
#define MUX_TAG 5
#define MUX_LINE 512		/* longest status line, node request or reason */
#define MUX_READ (64u << 10)	/* read-ahead of a channel carrying many nodes */
#define MUX_QUEUE (256u << 20)	/* its write queue's cap */
struct conn;
/* Queue message type for node id with the payload p (len bytes). 0 or -1. */
int mux_put(struct conn *c, int type, uint32_t id, const void *p, size_t len);
/* Split a message body into its type, id and payload. 0, or -1 if short. */
int mux_split(const uint8_t *body, size_t len, int *type, uint32_t *id, const uint8_t **p,
    size_t *plen);
/* Watch n's fd in its loop's epoll set for events; n ends failed if that
 * fails.  0 or -1. */
int fanout_watch(struct fanout *fo, struct fo_node *n, uint32_t events);
/* Epoll interest of n's fd: input, and output when out (TLS and mux). */
void fanout_interest(struct fanout *fo, struct fo_node *n, int out);
/* Take n's open TLS connection out of the run (the holder keeps it):
 * its fd and conn (the socket as write BIO, pending records written) go
 * to *fd and *c; n then ends ok without a close.  0, or -1 (n failed). */
int fanout_detach(struct fanout *fo, struct fo_node *n, int *fd, struct conn *c);
/* Where the tickets go that a connection taken out with fanout_detach
 * gets later (the agent sends its ticket after our Finished): fn owns
 * sess.  The sink must outlive the connection's SSL. */
struct fo_sink {
	void (*fn)(struct fo_sink *sink, SSL_SESSION *sess);
};
void fanout_set_sink(SSL *ssl, struct fo_sink *sink);
/* A TLS alert from the agent (OpenSSL's "... alert certificate expired")
 * as the sentence of the node's auth-failed, into buf: which of our
 * credentials it refused and what to do.  buf. */
const char *fanout_refused_why(const char *err, char *buf, size_t len);
void fanout_opened(struct fanout *fo, struct fo_node *n);
/* Hand env to the command (it owns env); 0, or -1 when n ended. */
int fanout_deliver(struct fanout *fo, struct fo_node *n, Knob__Envelope *env);

struct fo_ops {
	/* Connection up (TLS verified): send the first request(s). 0 or -1. */
	int (*on_open)(struct fanout *fo, struct fo_node *n);
	/* A message arrived.  Return 0 to keep the connection, 1 when the
	 * node is finished (set n->status first), -1 on error (status set).
	 * The callback owns msg. */
	int (*on_msg)(struct fanout *fo, struct fo_node *n, Knob__Envelope *msg);
	/* Called about every 100 ms (may be NULL). */
	void (*on_tick)(struct fanout *fo);
	/* A node ended (done, failed, timed out, unreachable; may be NULL). */
	void (*on_end)(struct fanout *fo, struct fo_node *n);
	/* The callbacks touch only their own node (and read shared state that
	 * does not change during the run): the TLS fan-out may then drive the
	 * nodes from several threads (--threads).  Needs on_tick and on_end NULL. */
	int per_node;
	/* One request, one reply per node (fanout_request): the nodes may go
	 * through the connection holder (knobctl mux, controller/fo_mux.c). */
	int via_mux;
	/* An "agent busy" answer (kind BUSY, code EAGAIN: refused before
	 * anything was done, or a read-only health sweep) calls on_open again
	 * after a backoff, within the node's deadline (fanout.c busy_retry). */
	int retry_busy;
	/* With retry_busy, for a command of several requests on one
	 * connection (bench): the deadline (monotonic ns) by which the request
	 * that the busy answer env refused may be sent again, 0 when it may
	 * not be; and the callback that sends it again.  NULL: n's deadline,
	 * and on_open. */
	uint64_t (*busy_until)(struct fanout *fo, struct fo_node *n, const Knob__Envelope *env);
	int (*busy_resend)(struct fanout *fo, struct fo_node *n);
};

struct fanout {
	struct ctl *ctl;
	struct fo_node *nodes;
	size_t n;
	const struct fo_ops *ops;
	void *user;
	struct fo_loop *loops;	/* one epoll loop per thread, each with a share of the nodes */
	size_t nloops;
	int stop;		/* set by callbacks to end the run early */
	int all_at_once;	/* every node must be connected together (bench):
				 * --fanout then bounds the handshakes, not the nodes */
	const Knob__Envelope *request;	/* fanout_request's request */
	const struct fo_transport *tr;	/* set by fanout_run */
	void *tr_run;		/* the transport's state for the run (the holder's channel) */
	struct fo_addr *addrs;	/* TLS, SSH: every node's address, by index (fanout_resolve) */
};

/* Allocate nodes for the names (addresses from the inventory). */
void fanout_init(struct fanout *fo, struct ctl *ctl, const struct strvec *names);
void fanout_free(struct fanout *fo);
/* Look every node's address up into fo->addrs, for at most
 * --connect-timeout in all (controller/fo_resolve.c). */
void fanout_resolve(struct fanout *fo);
/* a's address with port in place of the one looked up: 0, or -1 with
 * "cannot resolve: ..." (seconds: the lookups' bound) in err. */
int fo_addr_port(const struct fo_addr *a, int port, double seconds, struct sockaddr_storage *sa,
    socklen_t *len, char *err, size_t errlen);
/* Run until every node is done or fo->stop.  0, or -1 on a setup error. */
int fanout_run(struct fanout *fo, const struct fo_ops *ops, void *user);
/* Set up the controller's TLS context for fan-outs (the agents' tickets
 * go to the node whose connection got them); once, before any thread. */
void fanout_tls_ctx(SSL_CTX *ctx);
/* Queue env to n (id assigned if 0, version filled). 0 or -1. */
int fanout_send(struct fanout *fo, struct fo_node *n, Knob__Envelope *env);
/* The epoll descriptor of the loop that drives n (-1 outside a run). */
int fanout_epfd(const struct fo_node *n);
/* Push n's deadline to now + seconds. */
void fanout_deadline(struct fo_node *n, double seconds);
/* End n with a status and optional detail; closes its connection. */
void fanout_end(struct fanout *fo, struct fo_node *n, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Send req to every node, keep each reply in n->reply, status OK (or FAILED on
 * an Error reply).  0, or -1 on a setup error. */
int fanout_request(struct fanout *fo, const Knob__Envelope *req);

/* ------------------------------------------------------------ output
 * Folding (controller/output.c): nodes whose rendered text is identical
 * print once under their folded node set, then a summary line
 * "16 ok, 1 unreachable (node007)". */
typedef char *(*render_fn)(struct fanout *fo, struct fo_node *n, void *arg);	/* malloc'd text or NULL */
void output_folded(struct ctl *ctl, struct fanout *fo, render_fn render, void *arg);
void output_summary(struct ctl *ctl, struct fanout *fo);
/* fflush(f), keeping the errno of standard output's first failed flush
 * (ENOSPC, EPIPE) for output_stdout_errno: knobctl's exit names it. */
void output_flush(FILE *f);
int output_stdout_errno(void);
/* Exit status per DESIGN.md: 0 all ok, 1 some node failed/drifted/unreachable. */
int output_exit_status(struct fanout *fo);
/* --json: {"nodes":[{"node":..,"status":..,"detail":..,<extra>}], "summary":{...}} printed on ctl->out.
 * extra(n) returns a json object merged into that node's record (may be NULL). */
typedef json_object *(*json_fn)(struct fanout *fo, struct fo_node *n, void *arg);
void output_json(struct ctl *ctl, struct fanout *fo, json_fn extra, void *arg);
/* --json of a command without nodes: doc, pretty, on f, the bidi and C1
 * controls in its strings as \uNNNN (json_text_visible); puts doc. */
void output_doc(FILE *f, json_object *doc);
/* The same text of o without putting it; spaced 0: json-c's "key":value
 * (the bench's, a play's and the results commands' documents). */
void output_text(FILE *f, json_object *o, int spaced);
/* n's reply when n is ok and answered with body_case body, else NULL. */
const Knob__Envelope *output_answer(const struct fo_node *n, int body);
/* The request-then-print flow of a command without operands (ping, facts):
 * req to every target, then the folded text (render) and the summary, or
 * the JSON records (json).  Returns the exit status. */
int output_request(struct ctl *ctl, int argc, char **argv, const Knob__Envelope *req,
    render_fn render, json_fn json);

/* ------------------------------------------------------------ subcommands
 * One file each; argv[0] is the subcommand name.  Return the exit status. */
int cmd_ca(struct ctl *ctl, int argc, char **argv);
int cmd_ping(struct ctl *ctl, int argc, char **argv);
int cmd_facts(struct ctl *ctl, int argc, char **argv);
int cmd_profile(struct ctl *ctl, int argc, char **argv);
int cmd_apply(struct ctl *ctl, int argc, char **argv);
int cmd_verify(struct ctl *ctl, int argc, char **argv);
int cmd_rollback(struct ctl *ctl, int argc, char **argv);
int cmd_bench(struct ctl *ctl, int argc, char **argv);
int cmd_results(struct ctl *ctl, int argc, char **argv);
int cmd_sweep(struct ctl *ctl, int argc, char **argv);
extern const struct cmd_entry cmd_ca_entry, cmd_ping_entry, cmd_facts_entry, cmd_profile_entry,
    cmd_apply_entry, cmd_verify_entry, cmd_rollback_entry, cmd_bench_entry, cmd_results_entry,
    cmd_nodeset_entry, cmd_help_entry, cmd_off_entry, cmd_active_entry,
    cmd_report_entry, cmd_play_entry, cmd_sweep_entry, cmd_bootstrap_entry, cmd_mux_entry;
int cmd_report(struct ctl *ctl, int argc, char **argv);
int cmd_play(struct ctl *ctl, int argc, char **argv);
int cmd_mux(struct ctl *ctl, int argc, char **argv);

/* Wire settings of a resolved profile (cmd_profile.c); settings_free releases them. */
struct profile;
/* Load a profile (a NAME in the search path or a FILE) or print its errors;
 * NULL on error. */
struct profile *ctl_profile_load(const char *arg);
Knob__Setting **settings_build(const struct profile *p);
void settings_free(Knob__Setting **v, size_t n);

/* What each node runs, before a benchmark (controller/runinfo.c): facts,
 * the active profile as the agent reports it and the live value of each of
 * its keys, and the run's resolved profile (content and SHA-256).  Returns
 * {"node_info":[...], "profile":{...}} (caller puts it); never NULL. */
json_object *runinfo_gather(struct ctl *ctl, const struct strvec *nodes);
/* The SHA-256 of data in hex into out[65] ("" when OpenSSL cannot). */
void sha256_hex(const void *data, size_t len, char out[65]);
/* {"name","sha256","text"} of a resolved profile (NULL: none). */
json_object *runinfo_profile_json(const struct profile *p);
/* Lines naming each key of a stored run's profile that was not in effect
 * on a node when it started (appended to out); how many. */
size_t runinfo_not_in_effect(json_object *doc, struct strvec *out);

/* CA (controller/ca.c): create a cluster CA in dir; issue certificates. */
int ca_init(const char *dir, char *err, size_t errlen);
int ca_issue(const char *dir, const char *name, int controller, char *err, size_t errlen);

#endif
