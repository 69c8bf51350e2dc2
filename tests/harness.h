/* Integration harness: real knobd processes in network namespaces.
 *
 * harness_start() creates a controller namespace "<tag>c" holding a bridge
 * and N node namespaces "<tag>1".."<tag>N", each joined to the bridge by a
 * veth pair, with addresses in 198.18.0.0/24 (RFC 2544 benchmarking range;
 * the traffic never leaves these namespaces).  It makes a CA and one
 * certificate per node plus the controller's in a temp dir (the first
 * harness of a test program makes them, the next ones of as many nodes
 * get a copy of those), writes
 * cluster.xml (nodes node01..nodeNN, group @all), and starts one knobd per
 * node namespace with --state-dir under the temp dir.  knobctl runs inside
 * the controller namespace.  Everything is removed by harness_stop(), which
 * is also registered with atexit and run from SIGINT/SIGTERM handlers, and
 * stale namespaces from a killed earlier run are removed at start.  After
 * harness_net_share(n) in the runner, harnesses of n nodes use its
 * namespaces instead of their own (made once for the program). */
#ifndef KNOB_HARNESS_H
#define KNOB_HARNESS_H

#include <limits.h>
#include <sys/types.h>
#include <time.h>
#include <openssl/ssl.h>

#include "testutil.h"

#define HARNESS_MAX 8

struct hnode {
	char name[32];		/* node01 */
	char ns[64];		/* netns name */
	char addr[32];		/* IPv4 address of the node's veth */
	char ifname[32];	/* veth name inside the node namespace ("eth0") */
	char state_dir[PATH_MAX];
	char sysroot[PATH_MAX];	/* "" unless set before harness_agent_start */
	char log[PATH_MAX];	/* knobd stderr */
	char extra_args[512];	/* extra knobd arguments, space separated */
	pid_t pid;		/* 0 when stopped */
};

struct harness {
	char tag[32];		/* namespace prefix, unique per process */
	char tmp[200];		/* temp dir, removed at stop */
	char bin[PATH_MAX];	/* directory with knobd and knobctl */
	char cluster[PATH_MAX];	/* cluster.xml */
	char ca_dir[PATH_MAX];
	char ctl_ns[64];
	int n;
	struct hnode node[HARNESS_MAX];
	int up;
	int shared;		/* its namespaces are harness_net_share's */
};

/* Create namespaces, CA, certificates and cluster.xml; start n agents
 * (unless start_agents is 0).  The binaries come from $KNOB_BIN (default
 * "build").  0 or -1 (reason on stderr). */
int harness_start(struct harness *h, int n, int start_agents);
/* In a test program's runner (an unchecked fixture): make the namespaces
 * of a harness of n nodes once, for every test's harness_start of n nodes
 * to use (their agents, CA and files are still the test's own); each
 * harness_start and harness_stop kills what is left in them instead of
 * making and deleting them, most of a harness's start-up.  0 or -1. */
int harness_net_share(int n);
/* Delete harness_net_share's namespaces (the unchecked teardown). */
void harness_net_unshare(void);
/* harness_start with every agent started with the extra knobd arguments
 * args (e.g. "--test-hooks"). 0 or -1. */
int harness_start_with(struct harness *h, int n, const char *args);
/* Start (or restart) agent i; waits until it accepts connections. 0 or -1. */
int harness_agent_start(struct harness *h, int i);
/* End the pause (knobd --test-hooks, knobctl --test-pause-ms) agent i is
 * in now, before its time: a test done with what the pause is for. */
void harness_pause_end(struct harness *h, int i);
/* Send sig to agent i and reap it. */
void harness_agent_stop(struct harness *h, int i, int sig);
/* Re-sign h's certificate NAME (ca_dir/NAME.crt: same key, subject and
 * extensions) by its CA so that it expires secs from now (its notBefore a
 * minute back), which knobctl ca issue never makes; its notAfter (unix
 * seconds) into *not_after.  Agents and holders load it when they start.
 * 0 or -1. */
int harness_cert_expiring(struct harness *h, const char *name, int secs, time_t *not_after);
/* Run "knobctl -c cluster.xml ARGS" in the controller namespace; stdout into
 * *out (malloc'd, may be NULL), stderr into *err (may be NULL).  Returns the
 * exit status, or -1 if it could not run. */
int harness_knobctl(struct harness *h, char **out, char **err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* harness_knobctl with stdout parsed as JSON (a failed check when it is
 * not JSON); the exit status in *rc.  Caller puts the result. */
struct json_object *harness_knobctl_json(struct harness *h, int *rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* harness_knobctl that also prints the command, its exit status and its
 * output on stderr for the test log; stdout into *out (malloc'd). */
int harness_knobctl_logged(struct harness *h, char **out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* harness_knobctl with --log-level debug: frees *out and *err first, keeps
 * both (malloc'd) and prints the command, its exit status and both
 * outputs on stderr for the test log.  The exit status. */
int harness_knobctl_debug(struct harness *h, char **out, char **err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Start "knobctl -c cluster.xml ARGS" in the controller namespace in the
 * background, stdout into out, stderr into err: shell redirection targets,
 * a path or "&2" (the test's stderr, its log); err NULL: with stdout.  Its
 * pid (knobctl itself: its exit status is knobctl's), -1 when
 * it could not start.  For use while the test runs other knobctl. */
pid_t harness_knobctl_bg(struct harness *h, const char *out, const char *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Start the holder, "knobctl -c cluster.xml ARGS" (ARGS: the options and
 * "mux ..."), in the background like harness_knobctl_bg, its stderr into
 * err (emptied first), and wait up to 20 s until it says it listens.  Its
 * pid, or -1 (not started, or not listening: its words are in err). */
pid_t harness_mux_start(struct harness *h, const char *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Stop the holder *pid (SIGTERM, reaped; none when 0) and zero *pid: for
 * teardowns, its exit status not judged. */
void harness_mux_stop(pid_t *pid);
/* Move this process into network namespace ns (e.g. h->ctl_ns); for a
 * forked test only.  0 or -1. */
int harness_enter_ns(const char *ns);
/* A blocking TCP connection to agent i's port from this process's
 * namespace (the controller's, after harness_enter_ns); fd or -1. */
int harness_dial(struct harness *h, int i);
/* knob's client TLS context (tls_ctx_new) with the harness CA and
 * ca/WHO.crt, ca/WHO.key (WHO: "controller", "node03"); NULL on failure. */
SSL_CTX *harness_tls_ctx(struct harness *h, const char *who);
/* harness_dial and a completed TLS handshake over it; NULL on failure. */
SSL *harness_tls_dial(struct harness *h, SSL_CTX *ctx, int i);
/* close_notify, free, close the socket. */
void harness_tls_close(SSL *ssl);
/* The first integer a shell command prints (host namespace), -1 if none. */
long harness_sh_int(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Run a shell command inside node i's namespace; returns exit status. */
int harness_node_sh(struct harness *h, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Run a shell command (host namespace), returns exit status. */
int harness_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Does agent i's log contain s? */
int harness_log_has(struct harness *h, int i, const char *s);
/* Wait until agent i's log contains s (deadline: seconds). 0 or -1. */
int harness_wait_log(struct harness *h, int i, const char *s, double seconds);
/* Tear everything down.  Safe to call twice. */
void harness_stop(struct harness *h);

/* A stand-in in a child process inside a network namespace (the
 * controller's): harness_child_start, harness_child_end. */
struct harness_child {
	pid_t pid;
	int stop, res;
};

void harness_child_start(struct harness_child *c, const char *ns, int (*fn)(int ready, int stop));
int harness_child_end(struct harness_child *c);
/* A harness_child fn: a name server on 127.87.0.1:53 that never answers. */
int harness_dns_black_hole(int ready, int stop);

/* knobctl (--connect-timeout 1, then the arguments) in the controller's
 * namespace with a resolv.conf (bound over /etc/resolv.conf in a mount
 * namespace of its own) naming a server that never answers: 3 s a lookup.
 * Its exit status; its output in *out (malloc'd), the seconds it took in
 * *took; at least five names must have gone to that server. */
int harness_knobctl_slow_dns(struct harness *h, char **out, double *took, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
