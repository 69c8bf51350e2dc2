/* Non-blocking SSH for the controller (libssh2): one session per node,
 * driven by the caller's event loop.  Strict host-key checking against
 * known_hosts (libssh2's knownhost API), key authentication from a key file
 * or ssh-agent and the default key files in turn, exec channels and SFTP uploads as step machines that return
 * 1 done, 0 again (wait for ssh_events()), -1 failed (reason in c->err). */
#ifndef KNOB_SSH_H
#define KNOB_SSH_H

#include <stddef.h>
#include <stdint.h>
#include <libssh2.h>
#include <libssh2_sftp.h>

#include "opt.h"

/* What the command line says about SSH (shared by bootstrap and --via ssh). */
struct ssh_cfg {
	const char *user;	/* --ssh-user (default root) */
	const char *key;	/* --ssh-key FILE; NULL: ssh-agent, else ~/.ssh/id_* */
	const char *known_hosts;	/* --known-hosts (default ~/.ssh/known_hosts) */
	int port;		/* --ssh-port (default 22) */
	int accept_new;		/* --accept-new: add unknown host keys */
	int via;		/* --via ssh */
	const char *remote_knobd;	/* --remote-knobd PATH (agentless: default knobd) */
	int push_agent;		/* --push-agent */
};

extern const struct opt opt_ssh[];
/* Apply one of opt_ssh's options (id) to cfg; 0 or -1 (printed). */
int ssh_cfg_apply(struct ssh_cfg *cfg, int id, const char *arg);
int ssh_opt_is(int id);

enum ssh_phase { SSH_CONNECT, SSH_HANDSHAKE, SSH_HOSTKEY, SSH_AUTH, SSH_READY };

struct ssh_kh;		/* known_hosts as read for one connection (ssh.c) */

/* Every block libssh2 allocates for one session, in a ring (ssh.c's
 * pool_*): what it cannot free itself is freed after the session. */
struct ssh_blk {
	struct ssh_blk *prev, *next;
};

struct ssh_conn {
	const struct ssh_cfg *cfg;
	const char *name;	/* node name (known_hosts, messages) */
	const char *addr;	/* where to connect */
	int fd;
	LIBSSH2_SESSION *s;
	LIBSSH2_AGENT *agent;
	struct libssh2_agent_publickey *ident;
	int agent_tried;
	int auth_src;		/* step_auth: 0 ssh-agent, then 1 + a default key file's index */
	char refused[400];	/* each key source refused so far, for the failure */
	int methods_asked;	/* step_auth: the node's methods checked for publickey */
	int phase;		/* enum ssh_phase */
	struct ssh_kh *kh;	/* read before the handshake, freed after the host key check */
	int fail_status;	/* knobctl node status for the failure (NS_*) */
	int cut;		/* ssh_cut done: the socket is shut */
	struct ssh_blk pool;	/* the session's blocks (ring head) */
	char err[512];
};

struct fo_addr;
/* Start the TCP connect to a (addr looked up before the run, within
 * seconds: fanout_resolve) on the SSH port.  0, or -1 with c->err. */
int ssh_start(struct ssh_conn *c, const struct ssh_cfg *cfg, const char *name, const char *addr,
    const struct fo_addr *a, double seconds);
/* Advance connect, handshake, host key and authentication. */
int ssh_step(struct ssh_conn *c);
/* EPOLLIN/EPOLLOUT that the last "again" waits for. */
uint32_t ssh_events(const struct ssh_conn *c);
/* End the connection without waiting on the peer (a disconnect only if it
 * goes out at once, then the socket shut): channels and SFTP freed after
 * it cannot block.  ssh_close does it first. */
void ssh_cut(struct ssh_conn *c);
/* Free c (ssh_cut first: never waits on the peer) and every block of its
 * session that libssh2 left (an SFTP handle whose close got no answer):
 * no handle of c's may be used after. */
void ssh_close(struct ssh_conn *c);

/* One command on an exec channel: stdin from in (may be NULL), stdout
 * collected up to 1 MiB, stderr up to 64 KiB, exit status. */
struct ssh_exec {
	LIBSSH2_CHANNEL *ch;
	int phase;
	const char *cmd;
	const char *in;
	size_t inlen, inoff;
	char *out, *errout;
	size_t outlen, errlen;
	int exit_status;
};
void ssh_exec_init(struct ssh_exec *x, const char *cmd, const char *in, size_t inlen);
int ssh_exec_step(struct ssh_conn *c, struct ssh_exec *x);
void ssh_exec_free(struct ssh_exec *x);

/* One file over SFTP to path.knob-new (mode set, fsync'd); the caller
 * renames it into place (atomically, on the node). */
struct ssh_upload {
	char path[4096];	/* the final path */
	char tmp[4200];
	const uint8_t *data;
	size_t len, off;
	long mode;
	int excl;		/* the file must not exist yet (a name in a shared /tmp) */
	int phase;
	LIBSSH2_SFTP_HANDLE *h;
};
void ssh_upload_init(struct ssh_upload *u, const char *path, const void *data, size_t len,
    long mode);
int ssh_upload_step(struct ssh_conn *c, LIBSSH2_SFTP *sftp, struct ssh_upload *u);
/* Close u's file after ssh_upload_step failed.  1 done, 0 again. */
int ssh_upload_abort(struct ssh_upload *u);
/* SFTP session; NULL with again=1 while in progress, NULL with again=0 on error. */
LIBSSH2_SFTP *ssh_sftp_open(struct ssh_conn *c, int *again);

/* The failure err of an upload, with what the removal of its part did:
 * "ERR; WHAT removed" (WHAT: "partial upload", or "pushed copy" for an
 * upload that was done), or "ERR; PATH not removed (WHY): THEN"
 * (bootstrap and --push-agent say it alike).  Into buf. */
void ssh_undo_text(char *buf, size_t len, const char *err, const char *what, int removed,
    const char *path, const char *why, const char *then);

/* A single-quoted shell word for s; malloc'd. */
char *sh_quote(const char *s);

#endif
