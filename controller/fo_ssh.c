/* The fan-out's SSH transport (knobctl --via ssh): per node a libssh2
 * session (strict host keys, key or agent authentication: controller/ssh.c)
 * and one exec channel running "knobd --stdio"; the same protobuf frames as
 * over TLS travel on the channel's stdin and stdout.  The trust comes from
 * SSH, so there is no TLS inside.  --push-agent first uploads this
 * controller's knobd over SFTP to a temporary file that the command removes
 * when the session ends (and, when the upload failed, one more exec after
 * the loop: all such nodes together, within UNDO_MS; the node's line
 * then says whether its part was removed).  No close waits on
 * a node: a session is cut (ssh_cut) before anything of it is freed. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <openssl/rand.h>

#include "knobctl.h"
#include "ssh.h"
#include "util.h"
#include "wire.h"

enum { FS_SSH, FS_PUSH_SFTP, FS_PUSH, FS_PUSH_END, FS_OPEN, FS_EXEC, FS_READY };
/* Removing a failed push's part: the file closed, SFTP ended, rm run (a
 * stalled upload goes straight to the rm: its sftp-server answers nothing);
 * over: removed (U_DONE) or not (U_FAILED, why in undo_why). */
enum { U_ABORT, U_SFTP_END, U_RM_START, U_RM, U_DONE, U_FAILED };
#define UNDO_MS 2000	/* for the removals of one run, all together */

struct fo_ssh {
	struct fo_node *n;	/* whose session */
	struct ssh_conn c;
	int step;
	LIBSSH2_CHANNEL *ch;
	LIBSSH2_SFTP *sftp;
	struct ssh_upload u;
	char *cmd;
	uint8_t *in;		/* bytes from the agent not yet a whole frame */
	size_t inlen;
	uint8_t *out;		/* frames not yet written */
	size_t outlen, outoff;
	char errtext[512];	/* the agent's stderr (last bytes) */
	size_t errlen;
	int undo;		/* U_*: the removal of a failed push's part */
	struct ssh_exec x;	/* its rm */
	char *undo_cmd;
	char undo_why[160];	/* U_FAILED: why the part was not removed */
};

/* Sessions whose failed push's part is still to be removed (parked by
 * ssh_close_node, removed by ssh_finish).  --via ssh runs one loop, in
 * one thread. */
static struct fo_ssh **parked;
static size_t nparked;

/* --push-agent: this controller's knobd, read once per run for every
 * node (push_binary), freed by ssh_finish.  It was read whole for each
 * node, on the loop: 1000 nodes held 1000 copies (2 MB each, 5.5 MB
 * under ASan). */
static char *push_data;
static size_t push_len;

/* The command the channel runs: the agent in --stdio mode, named after
 * the node; with --push-agent the uploaded copy, removed afterwards. */
static char *
agent_cmd(const struct ctl *ctl, const struct fo_node *n, const char *pushed)
{
	const char *t = ctl->ssh.remote_knobd ? ctl->ssh.remote_knobd : "knobd";
	char *name = sh_quote(n->name), *cmd = NULL, *rest;

	for (; *t; t++) {	/* {node} in the template */
		if (strncmp(t, "{node}", 6) == 0) {
			str_appendf(&cmd, "%s", n->name);
			t += 5;
		} else
			str_appendf(&cmd, "%c", *t);
	}
	if (pushed) {
		/* the pushed copy instead of the template's program, same arguments */
		rest = strchr(cmd, ' ');
		char *p = xasprintf("P=%s; \"$P\"%s --stdio --node-name %s; rc=$?; rm -f \"$P\"; exit $rc",
		    pushed, rest ? rest : "", name);

		free(cmd);
		cmd = p;
	} else
		str_appendf(&cmd, " --stdio --node-name %s", name);
	free(name);
	return cmd;
}

/* Re-arm epoll for what libssh2 waits on. */
static void
rearm(struct fanout *fo, struct fo_node *n, struct fo_ssh *s)
{
	struct epoll_event ev = { .events = ssh_events(&s->c), .data.ptr = n };

	(void)fo;
	epoll_ctl(fanout_epfd(n), EPOLL_CTL_MOD, n->fd, &ev);
}

/* Every whole frame in s->in to the command. 0, or -1 when n ended. */
static int
deliver_frames(struct fanout *fo, struct fo_node *n, struct fo_ssh *s)
{
	size_t off = 0;
	int rc = 0;

	while (s->inlen - off >= 4) {
		const uint8_t *h = s->in + off;
		uint32_t len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
		char err[256];
		Knob__Envelope *env;

		if (len > FRAME_MAX) {
			fanout_end(fo, n, NS_FAILED, "agent sent a %u-byte frame", len);
			return -1;
		}
		if (s->inlen - off - 4 < len)
			break;
		if ((env = frame_unpack(h + 4, len, err, sizeof(err))) == NULL) {
			fanout_end(fo, n, NS_FAILED, "bad frame from the agent: %s", err);
			return -1;
		}
		off += 4 + len;
		if (fanout_deliver(fo, n, env) < 0) {
			rc = -1;
			break;
		}
	}
	if (rc == 0 && off > 0) {
		memmove(s->in, s->in + off, s->inlen - off);
		s->inlen -= off;
	}
	return rc;
}

/* Read what the channel has: stdout into frames, stderr kept for errors.
 * 0, 1 at EOF, -1 on error. */
static int
channel_read(struct fo_ssh *s)
{
	char buf[32768];
	ssize_t r;

	while ((r = libssh2_channel_read_stderr(s->ch, buf, sizeof(buf))) > 0) {
		size_t keep = (size_t)r < sizeof(s->errtext) - 1 ? (size_t)r : sizeof(s->errtext) - 1;

		memcpy(s->errtext, buf + r - keep, keep);
		s->errlen = keep;
		s->errtext[keep] = '\0';
	}
	for (;;) {
		r = libssh2_channel_read(s->ch, buf, sizeof(buf));
		if (r == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (r < 0)
			return -1;
		if (r == 0)
			return libssh2_channel_eof(s->ch) ? 1 : 0;
		if (s->inlen + (size_t)r > FRAME_MAX + 8)
			return -1;
		s->in = xrealloc(s->in, s->inlen + (size_t)r);
		memcpy(s->in + s->inlen, buf, (size_t)r);
		s->inlen += (size_t)r;
	}
}

/* Write queued frames. 0, or -1 on error. */
static int
channel_flush(struct fo_ssh *s)
{
	while (s->outoff < s->outlen) {
		ssize_t w = libssh2_channel_write(s->ch, (const char *)s->out + s->outoff,
		    s->outlen - s->outoff);

		if (w == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (w < 0)
			return -1;
		s->outoff += (size_t)w;
	}
	free(s->out);
	s->out = NULL;
	s->outlen = s->outoff = 0;
	return 0;
}

/* Serve the open channel: write, read, deliver. */
static void
serve(struct fanout *fo, struct fo_node *n, struct fo_ssh *s)
{
	int r;

	if (channel_flush(s) < 0) {
		fanout_end(fo, n, NS_FAILED, "ssh channel write failed");
		return;
	}
	r = channel_read(s);
	if (r < 0) {
		fanout_end(fo, n, NS_FAILED, "ssh channel read failed");
		return;
	}
	if (deliver_frames(fo, n, s) < 0)
		return;
	if (r == 1) {
		while (s->errlen && (s->errtext[s->errlen - 1] == '\n' || s->errtext[s->errlen - 1] == '\r'))
			s->errtext[--s->errlen] = '\0';
		fanout_end(fo, n, NS_FAILED, "knobd --stdio ended%s%s", s->errlen ? ": " : "",
		    s->errlen ? s->errtext : " (no knobd on the node? see --push-agent)");
		return;
	}
	rearm(fo, n, s);
}

/* For tests only: with $KNOB_TEST_SSH_REFUSE_CHANNEL set, the agent's
 * channel is refused (as a node's sshd refuses one, say at MaxSessions)
 * once the push is done, on a session that still works.  1 refused. */
static int
refuse_channel_hook(struct fo_ssh *s)
{
	if (getenv("KNOB_TEST_SSH_REFUSE_CHANNEL") == NULL)
		return 0;
	snprintf(s->c.err, sizeof(s->c.err), "ssh channel refused (test hook)");
	s->c.fail_status = NS_FAILED;
	return 1;
}

/* Steps up to the open channel: 1 moved on, 0 again, -1 failed (n ended). */
static int
step(struct fanout *fo, struct fo_node *n, struct fo_ssh *s)
{
	int r, ag;

	switch (s->step) {
	case FS_SSH:
		if ((r = ssh_step(&s->c)) < 0)
			break;
		if (r == 0)
			return 0;
		s->step = fo->ctl->ssh.push_agent ? FS_PUSH_SFTP : FS_OPEN;
		return 1;
	case FS_PUSH_SFTP:
		if ((s->sftp = ssh_sftp_open(&s->c, &ag)) == NULL) {
			if (ag)
				return 0;
			break;
		}
		{
			char path[300];
			uint64_t rnd = 0;

			/* a name nobody can guess, created new: another user of the
			 * node's /tmp cannot plant the file root then runs, and two
			 * commands on one node do not share it */
			if (RAND_bytes((unsigned char *)&rnd, sizeof(rnd)) != 1)
				break;
			snprintf(path, sizeof(path), "/tmp/knobd-push.%s.%016llx", n->name,
			    (unsigned long long)rnd);
			ssh_upload_init(&s->u, path, push_data, push_len, 0700);
			s->u.excl = 1;
		}
		s->step = FS_PUSH;
		return 1;
	case FS_PUSH:
		if ((r = ssh_upload_step(&s->c, s->sftp, &s->u)) < 0)
			break;
		if (r == 0)
			return 0;
		s->step = FS_PUSH_END;
		return 1;
	case FS_PUSH_END:
		if (libssh2_sftp_shutdown(s->sftp) == LIBSSH2_ERROR_EAGAIN)
			return 0;
		s->sftp = NULL;
		s->step = FS_OPEN;
		return 1;
	case FS_OPEN:
		if (refuse_channel_hook(s))
			break;
		if ((s->ch = libssh2_channel_open_session(s->c.s)) == NULL) {
			if (libssh2_session_last_errno(s->c.s) == LIBSSH2_ERROR_EAGAIN)
				return 0;
			snprintf(s->c.err, sizeof(s->c.err), "ssh channel refused");
			s->c.fail_status = NS_FAILED;
			break;
		}
		s->cmd = agent_cmd(fo->ctl, n, fo->ctl->ssh.push_agent ? s->u.tmp : NULL);
		s->step = FS_EXEC;
		return 1;
	case FS_EXEC:
		if ((r = libssh2_channel_exec(s->ch, s->cmd)) == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (r != 0) {
			snprintf(s->c.err, sizeof(s->c.err), "ssh exec of '%s' refused", s->cmd);
			s->c.fail_status = NS_FAILED;
			break;
		}
		s->step = FS_READY;
		fanout_opened(fo, n);
		return n->phase == FO_OPEN ? 1 : -1;
	default:
		serve(fo, n, s);
		return n->phase == FO_DONE ? -1 : 0;
	}
	fanout_end(fo, n, s->c.fail_status ? s->c.fail_status : NS_FAILED, "%s", s->c.err);
	return -1;
}

static void
ssh_advance(struct fanout *fo, struct fo_node *n)
{
	struct fo_ssh *s = n->tr;
	int r;

	if (s == NULL || n->phase == FO_DONE)
		return;
	while ((r = step(fo, n, s)) == 1)
		;
	if (r == 0 && n->phase != FO_DONE && s->step != FS_READY)
		rearm(fo, n, s);
}

static void
ssh_event(struct fanout *fo, struct fo_node *n, uint32_t events)
{
	(void)events;
	ssh_advance(fo, n);
}

static void
ssh_connect(struct fanout *fo, struct fo_node *n)
{
	struct fo_ssh *s = xcalloc(1, sizeof(*s));
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = n };

	n->tr = s;
	s->n = n;
	n->phase = FO_CONNECTING;
	fanout_deadline(n, fo->ctl->connect_timeout + fo->ctl->timeout);
	if (fo->ctl->ssh.push_agent && push_data == NULL &&
	    ctl_knobd_binary(fo->ctl, &push_data, &push_len) < 0) {
		fanout_end(fo, n, NS_FAILED, "--push-agent: cannot read this controller's knobd");
		return;
	}
	if (ssh_start(&s->c, &fo->ctl->ssh, n->name, n->addr, &fo->addrs[n->idx],
	    fo->ctl->connect_timeout) < 0) {
		fanout_end(fo, n, s->c.fail_status, "%s", s->c.err);
		return;
	}
	n->fd = s->c.fd;
	epoll_ctl(fanout_epfd(n), EPOLL_CTL_ADD, n->fd, &ev);
}

static int
ssh_send(struct fanout *fo, struct fo_node *n, Knob__Envelope *env)
{
	struct fo_ssh *s = n->tr;
	uint8_t *frame;
	size_t len;

	if (frame_pack(env, &frame, &len) < 0) {
		fanout_end(fo, n, NS_FAILED, "cannot encode request");
		return -1;
	}
	s->out = xrealloc(s->out, s->outlen + len);
	memcpy(s->out + s->outlen, frame, len);
	s->outlen += len;
	free(frame);
	if (channel_flush(s) < 0) {
		fanout_end(fo, n, NS_FAILED, "ssh channel write failed");
		return -1;
	}
	return 0;
}

/* Free s.  Its session is cut first (ssh_cut: a healthy node gets EOF on
 * the agent's stdin and a disconnect), so nothing here waits on the node. */
static void
node_free(struct fo_ssh *s)
{
	if (s->ch && s->c.s && !s->c.cut)
		libssh2_channel_send_eof(s->ch);	/* only if it goes out at once */
	ssh_cut(&s->c);
	if (s->ch)
		libssh2_channel_free(s->ch);
	if (s->sftp)
		libssh2_sftp_shutdown(s->sftp);
	ssh_exec_free(&s->x);
	ssh_close(&s->c);
	free(s->undo_cmd);
	free(s->cmd);
	free(s->in);
	free(s->out);
	free(s);
}

/* Advance the removal of s's failed push (its file has a random name:
 * nothing else would remove it) as far as it goes now.  1 over (removed,
 * or the session failed), 0 again. */
static int
undo_step(struct fo_ssh *s)
{
	char *q;
	int r;

	switch (s->undo) {
	case U_ABORT:
		if (!ssh_upload_abort(&s->u))
			return 0;
		s->undo = U_SFTP_END;
		/* FALLTHROUGH */
	case U_SFTP_END:
		if (s->sftp && libssh2_sftp_shutdown(s->sftp) == LIBSSH2_ERROR_EAGAIN)
			return 0;
		s->sftp = NULL;
		/* FALLTHROUGH */
	case U_RM_START:
		q = sh_quote(s->u.tmp);
		s->undo_cmd = xasprintf("rm -f %s", q);
		free(q);
		ssh_exec_init(&s->x, s->undo_cmd, NULL, 0);
		s->undo = U_RM;
		/* FALLTHROUGH */
	case U_RM:
		if ((r = ssh_exec_step(&s->c, &s->x)) == 0)
			return 0;
		s->undo = r > 0 && s->x.exit_status == 0 ? U_DONE : U_FAILED;
		if (r < 0)
			snprintf(s->undo_why, sizeof(s->undo_why), "%s", s->c.err);
		else if (s->undo == U_FAILED)	/* its stderr's first line */
			snprintf(s->undo_why, sizeof(s->undo_why), "rm exited %d%s%.*s",
			    s->x.exit_status, s->x.errout ? ": " : "",
			    s->x.errout ? (int)strcspn(s->x.errout, "\n") : 0,
			    s->x.errout ? s->x.errout : "");
		/* FALLTHROUGH */
	default:
		return 1;
	}
}

/* UNDO_MS, or for tests only $KNOB_TEST_UNDO_MS (100 to UNDO_MS), so
 * that a test of dead nodes does not wait it out in full. */
static uint64_t
undo_ms(void)
{
	return (uint64_t)env_number("KNOB_TEST_UNDO_MS", 100, UNDO_MS, UNDO_MS);
}

/* n's failure line says what became of its push's part (ssh_undo_text:
 * removed, or not and why: one that did not answer within UNDO_MS). */
static void
undo_note(struct fo_ssh *s)
{
	char text[1024];

	if (s->undo != U_DONE && s->undo != U_FAILED)
		snprintf(s->undo_why, sizeof(s->undo_why), "no answer within %gs", undo_ms() / 1e3);
	ssh_undo_text(text, sizeof(text), s->n->detail ? s->n->detail : "push failed",
	    s->step > FS_PUSH ? "pushed copy" : "partial upload", s->undo == U_DONE, s->u.tmp,
	    s->undo_why, "remove it by hand");
	free(s->n->detail);
	s->n->detail = xstrdup(text);
}

/* Run the parked removals side by side, each stepped as its node answers,
 * for UNDO_MS in all (a node that is gone costs no more than that, however
 * many there are); then free their sessions. */
static void
undo_parked(void)
{
	uint64_t now, end = now_mono_ns() + undo_ms() * 1000000ull;
	struct pollfd *pf = xcalloc(nparked + 1, sizeof(*pf));
	size_t i, k;

	for (;;) {
		for (i = k = 0; i < nparked; i++)
			if (!undo_step(parked[i])) {
				/* EPOLLIN and EPOLLOUT are POLLIN and POLLOUT */
				pf[k].fd = parked[i]->c.fd;
				pf[k++].events = (short)ssh_events(&parked[i]->c);
			}
		now = now_mono_ns();
		if (k == 0 || now >= end)
			break;
		if (poll(pf, k, (int)((end - now + 999999) / 1000000)) < 0 && errno != EINTR)
			break;
	}
	for (i = 0; i < nparked; i++) {
		undo_note(parked[i]);
		node_free(parked[i]);
	}
	free(pf);
	free(parked);
	parked = NULL;
	nparked = 0;
}

/* The run is over: remove the failed pushes' parts (undo_parked). */
static void
ssh_finish(struct fanout *fo)
{
	(void)fo;
	undo_parked();
	free(push_data);
	push_data = NULL;
	push_len = 0;
}

/* Did s's session end with its pushed copy (whole or part) on the node
 * and nothing to remove it: the upload under way or done, the agent's
 * command (which removes it when it ends) not started? */
static int
pushed_part(const struct fo_ssh *s)
{
	return s->c.s != NULL && s->step >= FS_PUSH && s->step <= FS_EXEC;
}

/* n is done: its session freed without waiting on the node; one whose push
 * failed midway (or after the upload, before the agent ran) is parked until the run is over (ssh_finish) to remove its
 * part, so the loop goes on for the others meanwhile. */
static void
ssh_close_node(struct fanout *fo, struct fo_node *n)
{
	struct fo_ssh *s = n->tr;
	int looping = fanout_epfd(n) >= 0;

	(void)fo;
	if (s == NULL)
		return;
	if (n->fd >= 0 && looping)
		epoll_ctl(fanout_epfd(n), EPOLL_CTL_DEL, n->fd, NULL);
	n->tr = NULL;
	n->fd = -1;
	if (!pushed_part(s)) {
		node_free(s);
		return;
	}
	/* a timeout: the upload stalled, its handle would not close either */
	s->undo = n->status == NS_TIMEOUT || n->status == NS_UNREACHABLE ? U_RM_START : U_ABORT;
	parked = xrealloc(parked, (nparked + 1) * sizeof(*parked));
	parked[nparked++] = s;
	if (!looping)	/* after the run (fanout_free): no finish to come */
		undo_parked();
}

/* n's deadline (--connect-timeout + --timeout from its dial) passed
 * before its agent ran: the line says what stalled, and that deadline.
 * Before, a stalled upload on a working session was "connect timed out
 * after" --connect-timeout alone.  1 ended n, 0 not (the agent runs). */
static int
ssh_expire(struct fanout *fo, struct fo_node *n)
{
	struct fo_ssh *s = n->tr;
	double secs = fo->ctl->connect_timeout + fo->ctl->timeout;

	if (s == NULL || s->step == FS_READY)
		return 0;
	if (s->step == FS_SSH)
		fanout_end(fo, n, NS_UNREACHABLE, "%s timed out after %.1fs", s->c.phase ==
		    SSH_CONNECT ? "connect" : "ssh login", secs);
	else if (s->step == FS_PUSH)
		fanout_end(fo, n, NS_TIMEOUT, "the upload of knobd stalled (%zu of %zu KiB sent, "
		    "not done within %.1fs)", s->u.off / 1024, s->u.len / 1024, secs);
	else
		fanout_end(fo, n, NS_TIMEOUT, "the agent's session did not start within %.1fs "
		    "(%s stalled)", secs, s->step == FS_PUSH_SFTP || s->step == FS_PUSH_END ? "SFTP" : "its channel");
	return 1;
}

const struct fo_transport fo_ssh_transport = {
	.start = ssh_connect,
	.event = ssh_event,
	.send = ssh_send,
	.close = ssh_close_node,
	.finish = ssh_finish,
	.tick = ssh_advance,
	.expire = ssh_expire,
};
