/* TLS 1.3 session resumption between knobctl commands: real knobd agents
 * in network namespaces, the real ticket cache file next to the results
 * database.  Whether a connection resumed is read from knobctl's debug
 * line ("NODE: TLS session resumed" / "NODE: TLS full handshake"), which
 * is SSL_session_reused() after the handshake. */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include <openssl/ssl.h>

#include "ca.h"
#include "harness.h"
#include "testutil.h"
#include "tktutil.h"
#include "knobctl.h"
#include "tls.h"
#include "util.h"
#include "wire.h"

static struct harness h;

static void
setup(void)
{
	ck_assert_msg(harness_start(&h, 3, 1) == 0, "harness start failed");
}

static void
teardown(void)
{
	harness_stop(&h);
}

/* Path of a file in the harness temp dir. */
static const char *
tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", h.tmp, name);
	return buf;
}

/* knobctl ARGS with --log-level debug; stdout and stderr kept for checks. */
#define ctl(out, err, ...) harness_knobctl_debug(&h, out, err, __VA_ARGS__)

/* Did knobctl's stderr say node's connection resumed (1), was a full
 * handshake (0), or neither (-1)? */
static int
resumed(const char *err, const char *node)
{
	char r[128], f[128];

	snprintf(r, sizeof(r), "%s: TLS session resumed", node);
	snprintf(f, sizeof(f), "%s: TLS full handshake", node);
	if (err && strstr(err, r))
		return 1;
	if (err && strstr(err, f))
		return 0;
	return -1;
}

/* Copy a file (the test keeps an old ticket cache aside). */
static void
copy_file(const char *from, const char *to)
{
	char *data = NULL;
	size_t len = 0;

	ck_assert_int_eq(read_file_bounded(from, 1u << 26, &data, &len), 0);
	ck_assert_int_eq(write_file_atomic(to, data, len, 0600), 0);
	free(data);
}

/* Re-stamp a cache file with the trust hash of the current CA, CRL and
 * controller certificate, as if it had been written under them: the
 * tickets inside are then presented to the agents. */
static void
restamp(const char *path)
{
	unsigned char hash[TLS_HASH_LEN];
	char ca[PATH_MAX], cert[PATH_MAX];
	int fd;

	snprintf(ca, sizeof(ca), "%s/ca.crt", h.ca_dir);
	snprintf(cert, sizeof(cert), "%s/controller.crt", h.ca_dir);
	ck_assert_int_eq(tls_trust_hash(ca, cert, hash), 0);
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, hash, sizeof(hash), 8), (ssize_t)sizeof(hash));
	close(fd);
}

/* Restart every agent (they read the CA and CRL at start). */
static void
restart_agents(void)
{
	for (int i = 0; i < h.n; i++) {
		harness_agent_stop(&h, i, SIGTERM);
		ck_assert_int_eq(harness_agent_start(&h, i), 0);
	}
}

/* Field key ("status", "detail") of node i in a --json reply. */
static const char *
json_field(const char *out, int i, const char *key, char *buf, size_t len)
{
	json_object *doc = json_tokener_parse(out ? out : ""), *nodes, *rec, *v;

	buf[0] = '\0';
	if (doc && json_object_object_get_ex(doc, "nodes", &nodes) &&
	    (rec = json_object_array_get_idx(nodes, (size_t)i)) != NULL &&
	    json_object_object_get_ex(rec, key, &v))
		snprintf(buf, len, "%s", json_object_get_string(v));
	json_object_put(doc);
	return buf;
}

/* A second command resumes every node; the cache file is private; an
 * agent takes real requests (facts) on a resumed session. */
START_TEST(second_command_resumes)
{
	char *out = NULL, *err = NULL, path[PATH_MAX];
	struct stat st;

	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 0);
	ck_assert_int_eq(stat(tmp_path(path, sizeof(path), TCACHE_FILE), &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(ctl(&out, &err, "--json facts -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 1);
	ck_assert_int_eq(resumed(err, "node02"), 1);
	ck_assert_ptr_nonnull(strstr(out, "\"kernel\""));
	/* the resumed session brought a fresh ticket: a third command resumes too */
	ck_assert_int_eq(ctl(&out, &err, "ping -w node02"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 1);
	/* a cache file anyone can read is not trusted */
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 0);
	free(out);
	free(err);
}
END_TEST

/* The ticket node has in the cache file now, as bytes (malloc'd). */
static unsigned char *
file_ticket(const char *node, size_t *len)
{
	struct ctl c;
	struct tcache *tc = tku_open(h.cluster, h.ca_dir, &c);
	const char *pin;
	int64_t not_after;
	SSL_SESSION *s = tcache_get(tc, node, &pin, &not_after);
	const unsigned char *t = NULL;
	unsigned char *copy;

	ck_assert_msg(s != NULL, "no ticket of %s in the cache", node);
	SSL_SESSION_get0_ticket(s, &t, len);
	ck_assert_int_gt(*len, 0);
	copy = xmalloc(*len);
	memcpy(copy, t, *len);
	SSL_SESSION_free(s);
	tku_close(&c, tc);
	return copy;
}

/* Rewrite the cache file at path as a knobctl before the agents'
 * certificate expiry was kept would have (KNOBTKT2: no i64 notAfter
 * between a record's pin and its DER), trust hash and sessions kept. */
static void
downgrade_cache(const char *path)
{
	char *data = NULL;
	unsigned char *p, *o, *out;
	size_t len = 0, off = 8 + TLS_HASH_LEN + 4, n = 0;
	uint32_t count;

	ck_assert_int_eq(read_file_bounded(path, 1u << 26, &data, &len), 0);
	p = (unsigned char *)data;
	ck_assert_msg(len >= off && memcmp(p, "KNOBTKT3", 8) == 0, "not a KNOBTKT3 file");
	out = o = xmalloc(len);
	memcpy(o, "KNOBTKT2", 8);
	memcpy(o + 8, p + 8, off - 8);
	o += off;
	count = (uint32_t)p[off - 4] << 24 | p[off - 3] << 16 | p[off - 2] << 8 | p[off - 1];
	for (; n < count; n++) {
		size_t start = off, dl;

		off += 2 + (size_t)(p[off] << 8 | p[off + 1]);	/* name */
		off += 2 + (size_t)(p[off] << 8 | p[off + 1]);	/* pin */
		memcpy(o, p + start, off - start);
		o += off - start;
		off += 8;	/* the notAfter, left out */
		dl = (size_t)p[off] << 24 | p[off + 1] << 16 | p[off + 2] << 8 | p[off + 3];
		ck_assert_int_le(off + 4 + dl, len);
		memcpy(o, p + off, 4 + dl);
		o += 4 + dl;
		off += 4 + dl;
	}
	ck_assert_int_eq(off, len);
	ck_assert_int_eq(write_file_atomic(path, out, (size_t)(o - out), 0600), 0);
	free(out);
	free(data);
}

/* A cache file of the format before (KNOBTKT2, sessions without their
 * agent certificate's notAfter) is a cold cache: the command does full
 * handshakes and succeeds, without a warning, and writes the file anew
 * (KNOBTKT3, mode 0600), from which the next command resumes.  Before,
 * that format was current and its sessions resumed with no expiry known. */
START_TEST(old_format_cache_is_cold)
{
	char *out = NULL, *err = NULL, path[PATH_MAX], *data = NULL;
	size_t len = 0;
	struct stat st;

	tmp_path(path, sizeof(path), TCACHE_FILE);
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	downgrade_cache(path);
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 0);
	ck_assert_ptr_nonnull(strstr(err, "(KNOBTKT2): full handshakes"));
	ck_assert_ptr_null(strstr(err, "<4>"));	/* no warning */
	ck_assert_int_eq(read_file_bounded(path, 1u << 26, &data, &len), 0);
	ck_assert_msg(len > 8 && memcmp(data, "KNOBTKT3", 8) == 0, "the old file was not rewritten");
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 1);
	ck_assert_int_eq(resumed(err, "node02"), 1);
	free(data);
	free(out);
	free(err);
}
END_TEST

/* Two commands at once: one loaded the cache and renewed node01's ticket,
 * and saves after another command saved node02's: both stay (each save
 * re-reads the file under a lock and changes only its own nodes; before,
 * the last writer's view won and node02 went back to a full handshake).
 * Then the first one saves again (node03) after a third command changed
 * node01's: node01 keeps the third command's ticket (a save carries only
 * what changed since the last one). */
START_TEST(concurrent_saves_merge)
{
	char *out = NULL, *err = NULL;
	unsigned char *want, *got;
	size_t wl, gl;
	struct tcache *tc;
	SSL_SESSION *s;
	const char *pin;
	char pin1[256];
	int64_t na1, na;
	struct ctl c;

	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	tc = tku_open(h.cluster, h.ca_dir, &c);	/* the first command's view */
	ck_assert_int_eq(ctl(&out, &err, "ping -w node02"), 0);	/* the second one's */
	ck_assert_int_eq(resumed(err, "node02"), 0);
	s = tcache_get(tc, "node01", &pin, &na1);
	ck_assert_ptr_nonnull(s);
	snprintf(pin1, sizeof(pin1), "%s", pin);
	ck_assert_ptr_null(tcache_get(tc, "node02", &pin, &na));
	tcache_put(tc, "node01", s, pin1, na1);
	ck_assert_int_eq(tcache_save(tc), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node[01-02]"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 1);
	ck_assert_int_eq(resumed(err, "node02"), 1);
	/* a third command gives node01 another ticket (node02's bytes, to
	 * tell them apart); then the first one saves node03 */
	tku_swap_ticket(h.cluster, h.ca_dir, "node02", "node01");
	want = file_ticket("node01", &wl);
	tcache_put(tc, "node03", s, pin1, na1);
	SSL_SESSION_free(s);
	ck_assert_int_eq(tcache_save(tc), 0);
	tku_close(&c, tc);
	got = file_ticket("node01", &gl);
	ck_assert_msg(gl == wl && memcmp(got, want, wl) == 0,
	    "node01's newer ticket was overwritten by an older save");
	free(want);
	free(got);
	free(out);
	free(err);
}
END_TEST

/* A new cluster CA: the controller drops the tickets bound to the old one
 * (full handshake), and old tickets presented anyway are refused by the
 * agents, which fall back to a full handshake. */
START_TEST(new_ca_refuses_old_tickets)
{
	char *out = NULL, *err = NULL, cache[PATH_MAX], old[PATH_MAX], ca2[PATH_MAX],
	    caold[PATH_MAX], e[512];

	tmp_path(cache, sizeof(cache), TCACHE_FILE);
	tmp_path(old, sizeof(old), "tickets.old");
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 1);
	copy_file(cache, old);

	/* the same names under a new CA, in the same place */
	tmp_path(ca2, sizeof(ca2), "ca2");
	tmp_path(caold, sizeof(caold), "ca.old");
	ck_assert_msg(ca_init(ca2, e, sizeof(e)) == 0, "%s", e);
	ck_assert_msg(ca_issue(ca2, "node01", 0, e, sizeof(e)) == 0, "%s", e);
	ck_assert_msg(ca_issue(ca2, "node02", 0, e, sizeof(e)) == 0, "%s", e);
	ck_assert_msg(ca_issue(ca2, "node03", 0, e, sizeof(e)) == 0, "%s", e);
	ck_assert_msg(ca_issue(ca2, "controller", 1, e, sizeof(e)) == 0, "%s", e);
	ck_assert_int_eq(rename(h.ca_dir, caold), 0);
	ck_assert_int_eq(rename(ca2, h.ca_dir), 0);
	restart_agents();

	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 0);

	/* tickets of the old CA, presented under the new one */
	copy_file(old, cache);
	restamp(cache);
	ck_assert_int_eq(ctl(&out, &err, "--json ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 0);
	/* and the fresh tickets of that full handshake resume */
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 1);
	free(out);
	free(err);
}
END_TEST

/* A CRL change voids the tickets: after the controller's own certificate
 * is revoked, its old tickets do not get it past the agents. */
START_TEST(crl_change_voids_tickets)
{
	char *out = NULL, *err = NULL, cache[PATH_MAX], old[PATH_MAX], e[512], st[32], d[512];

	tmp_path(cache, sizeof(cache), TCACHE_FILE);
	tmp_path(old, sizeof(old), "tickets.old");
	ck_assert_msg(ca_issue(h.ca_dir, "spare", 0, e, sizeof(e)) == 0, "%s", e);
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 1);

	/* a CRL that does not concern us: a full handshake, still ok */
	ck_assert_msg(ca_revoke(h.ca_dir, "spare", NULL, e, sizeof(e)) == 0, "%s", e);
	restart_agents();
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 1);
	copy_file(cache, old);

	/* revoke the controller: its tickets (re-stamped for the new CRL, as a
	 * stolen cache would be) must not resume, and the agents refuse it */
	ck_assert_msg(ca_revoke(h.ca_dir, "controller", NULL, e, sizeof(e)) == 0, "%s", e);
	restart_agents();
	copy_file(old, cache);
	restamp(cache);
	ck_assert_int_eq(ctl(&out, &err, "--json ping -w @all"), 1);
	ck_assert_int_ne(resumed(err, "node01"), 1);
	ck_assert_int_ne(resumed(err, "node02"), 1);
	ck_assert_str_eq(json_field(out, 0, "status", st, sizeof(st)), "auth-failed");
	ck_assert_str_eq(json_field(out, 1, "status", st, sizeof(st)), "auth-failed");
	ck_assert_ptr_nonnull(strstr(json_field(out, 0, "detail", d, sizeof(d)), "revoked"));
	free(out);
	free(err);
}
END_TEST

/* The controller checks the agents' certificates against the CRL next to
 * its CA: a revoked node is auth-failed "certificate revoked", whether it
 * had a ticket (the CRL change voids it: a full handshake) or not, and
 * the other nodes go on. */
START_TEST(revoked_node_refused)
{
	char *out = NULL, *err = NULL, e[512], st[32], d[512];

	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 1);
	ck_assert_msg(ca_revoke(h.ca_dir, "node02", NULL, e, sizeof(e)) == 0, "%s", e);
	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(ctl(&out, &err, "--json ping -w @all"), 1);
		ck_assert_int_ne(resumed(err, "node02"), 1);
		ck_assert_str_eq(json_field(out, 0, "status", st, sizeof(st)), "ok");
		ck_assert_str_eq(json_field(out, 1, "status", st, sizeof(st)), "auth-failed");
		ck_assert_str_eq(json_field(out, 1, "detail", d, sizeof(d)),
		    "agent certificate rejected: certificate revoked");
		ck_assert_str_eq(json_field(out, 2, "status", st, sizeof(st)), "ok");
	}
	/* no ticket of node02 was kept: the tickets of the others resume */
	ck_assert_int_eq(ctl(&out, &err, "ping -w node[01,03]"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 1);
	free(out);
	free(err);
}
END_TEST

/* Rewrite cluster.xml with node01's address pointing at node02's agent
 * (mis) or back to its own (mis = 0). */
static void
point_node01(int mis)
{
	FILE *f = fopen(h.cluster, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "<?xml version=\"1.0\"?>\n<cluster port=\"7420\">\n"
	    "  <tls ca=\"ca/ca.crt\" cert=\"ca/controller.crt\" key=\"ca/controller.key\"/>\n"
	    "  <results db=\"results.db\"/>\n"
	    "  <group name=\"all\" nodes=\"node[01-03]\"/>\n"
	    "  <node name=\"node01\" addr=\"%s\"/>\n  <node name=\"node02\" addr=\"%s\"/>\n"
	    "  <node name=\"node03\" addr=\"%s\"/>\n"
	    "</cluster>\n", h.node[mis ? 1 : 0].addr, h.node[1].addr, h.node[2].addr);
	ck_assert_int_eq(fclose(f), 0);
}

/* A mis-pointed address stays auth-failed: with node01's own ticket (the
 * wrong agent cannot use it: full handshake, name mismatch) and with a
 * ticket that agent does accept (resumed, but its saved certificate names
 * node02, not node01). */
START_TEST(mispointed_resumed_is_auth_failed)
{
	char *out = NULL, *err = NULL, st[32], d[512];

	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	point_node01(1);
	ck_assert_int_eq(ctl(&out, &err, "--json ping -w node01"), 1);
	ck_assert_int_ne(resumed(err, "node01"), 1);
	ck_assert_str_eq(json_field(out, 0, "status", st, sizeof(st)), "auth-failed");

	point_node01(0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w @all"), 0);
	tku_swap_ticket(h.cluster, h.ca_dir, "node02", "node01");
	point_node01(1);
	ck_assert_int_eq(ctl(&out, &err, "--json ping -w node01"), 1);
	ck_assert_int_eq(resumed(err, "node01"), 1);
	ck_assert_str_eq(json_field(out, 0, "status", st, sizeof(st)), "auth-failed");
	ck_assert_ptr_nonnull(strstr(json_field(out, 0, "detail", d, sizeof(d)), "hostname mismatch"));
	/* the bad ticket is forgotten: the right address does a full handshake */
	point_node01(0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 0);
	free(out);
	free(err);
}
END_TEST

#define TKT_LIFETIME_S	5	/* node01's shortened ticket times (test hook) */
#define TKT_ROTATE_S	1
#define TKT_SHORT_S	3	/* agent_refuses_ticket_past_lifetime: the lifetime, */
#define TKT_SLOW_S	30	/* ... and a rotation that keeps its key meanwhile */

/* Has the clock reached *(time_t *)arg? */
static int
clock_at(void *arg)
{
	return time(NULL) >= *(time_t *)arg;
}

/* Wait (on the clock, with a deadline) until time at. */
static void
wait_until(time_t at)
{
	ck_assert(cu_wait(clock_at, &at, (double)(at - time(NULL)) + 30) >= 0);
}

/* Ticket lifetime and key rotation, shortened on node01 by the test hook
 * (5 s and 1 s instead of 1 h and 30 min): a ticket minted before a
 * rotation, still within its lifetime, resumes (the previous key decrypts
 * it and the agent renews it); a ticket past its lifetime is not used:
 * the command does a full handshake and succeeds; the next one resumes
 * again.  It waits 2 s, then 6 after the renewal (was a lifetime of 6 s
 * and 8 after it: 10 s of waits, now 8; the 6 leave a second for the
 * clock's granularity). */
START_TEST(ticket_lifetime_and_rotation)
{
	char *out = NULL, *err = NULL;
	time_t t;

	snprintf(h.node[0].extra_args, sizeof(h.node[0].extra_args),
	    "--test-hooks --test-ticket-times %d,%d", TKT_LIFETIME_S, TKT_ROTATE_S);
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);

	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 0);
	t = time(NULL);	/* the ticket and its key are at most this old */
	ck_assert(!harness_log_has(&h, 0, "accepted, renewed"));

	/* past a rotation (the key that minted it is the previous one now),
	 * well within the lifetime */
	wait_until(t + TKT_ROTATE_S + 1);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 1);
	ck_assert(harness_log_has(&h, 0, "TLS ticket under the previous key"));
	t = time(NULL);

	/* past the lifetime of the renewed ticket: a full handshake, ok */
	wait_until(t + TKT_LIFETIME_S + 1);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 1);
	free(out);
	free(err);
}
END_TEST

/* One Ping to node01 over a TLS connection of our own from the
 * controller's namespace, offering sess (NULL: none): 1 if the agent
 * resumed it, 0 for a full handshake; the Pong must come either way.  The
 * session the agent's new ticket made goes to *next. */
static int
raw_ping(SSL_CTX *ctx, SSL_SESSION *sess, SSL_SESSION **next)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Ping ping = KNOB__PING__INIT;
	struct conn c;
	SSL *ssl = SSL_new(ctx);
	unsigned char *der = NULL;
	const unsigned char *p;
	int fd = harness_dial(&h, 0), reused, len;

	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_nonnull(ssl);
	SSL_set_fd(ssl, fd);
	SSL_set1_host(ssl, "node01");
	SSL_set_tlsext_host_name(ssl, "node01");
	if (sess != NULL)
		ck_assert_int_eq(SSL_set_session(ssl, sess), 1);
	ck_assert_int_eq(SSL_connect(ssl), 1);
	reused = SSL_session_reused(ssl);
	conn_init(&c, fd, fd, ssl);
	env.id = 1;
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	ck_assert_int_eq(conn_send_sync(&c, &env, 10000), 0);
	ck_assert_int_eq(conn_recv_sync(&c, &got, 10000), 1);	/* the ticket came before it */
	ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_PONG);
	knob__envelope__free_unpacked(got, NULL);
	/* through DER, as knobctl's cache keeps it: OpenSSL marks the
	 * in-memory session of a closed TLS 1.3 connection single-use */
	sess = SSL_get1_session(ssl);
	ck_assert_ptr_nonnull(sess);
	ck_assert_int_gt(len = i2d_SSL_SESSION(sess, &der), 0);
	p = der;
	*next = d2i_SSL_SESSION(NULL, &p, len);
	ck_assert_ptr_nonnull(*next);
	OPENSSL_free(der);
	SSL_SESSION_free(sess);
	SSL_shutdown(ssl);
	close(fd);
	conn_reset(&c);
	return reused;
}

/* The agent enforces the lifetime itself, whatever the client believes: a
 * ticket past it, whose key the agent still holds, offered by a client
 * whose session says it is fresh (its time moved to now), gets a full
 * handshake, and the ping is served.  The agent's log shows that its own
 * check (common/tls.c ticket_expired) refused it; OpenSSL's session
 * timeout would too, behind it. */
START_TEST(agent_refuses_ticket_past_lifetime)
{
	SSL_CTX *ctx;
	SSL_SESSION *s1, *s2, *s3;
	time_t t;

	snprintf(h.node[0].extra_args, sizeof(h.node[0].extra_args),
	    "--test-hooks --test-ticket-times %d,%d", TKT_SHORT_S, TKT_SLOW_S);
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	ck_assert_int_eq(harness_enter_ns(h.ctl_ns), 0);
	ck_assert_ptr_nonnull(ctx = harness_tls_ctx(&h, "controller"));

	ck_assert_int_eq(raw_ping(ctx, NULL, &s1), 0);
	ck_assert_int_eq(raw_ping(ctx, s1, &s2), 1);	/* our client does resume */
	t = time(NULL);
	wait_until(t + TKT_SHORT_S + 1);	/* past the lifetime, its key still current */
	ck_assert_int_ne(SSL_SESSION_set_time(s2, (long)time(NULL)), 0);
	ck_assert_int_eq(raw_ping(ctx, s2, &s3), 0);
	ck_assert_msg(harness_log_has(&h, 0, "past its lifetime"), "agent log: %s",
	    cu_slurp(h.node[0].log));
	SSL_SESSION_free(s1);
	SSL_SESSION_free(s2);
	SSL_SESSION_free(s3);
	SSL_CTX_free(ctx);
}
END_TEST

/* knobctl CMD --threads T; its stdout in *out, exit status returned,
 * and the fan-out must have run L loops. */
static int
ctl_threads(char **out, const char *cmd, int t, int loops)
{
	char args[128], want[64], *err = NULL;
	int rc;

	snprintf(args, sizeof(args), "%s --threads %d", cmd, t);
	snprintf(want, sizeof(want), "fan-out: 3 node(s), %d loop(s)", loops);
	rc = ctl(out, &err, "%s", args);
	ck_assert_msg(strstr(err, want) != NULL, "%s: no '%s' in:\n%s", args, want, err);
	free(err);
	return rc;
}

/* The fan-out over several threads (--threads) prints the same folded
 * output and exit status as one loop, an unreachable node included, and
 * says how many loops it ran.  Facts change between two commands without
 * any fault: "certificate: expires ... (N days)" counts whole days left on a
 * certificate the harness just made (1826 in the second it was made, 1825
 * after), and block devices and mounts are host-wide.  So one loop runs
 * before and after the three, and a round whose two one-loop runs differ
 * is taken again, as is one whose outputs differ at all (at most 3 rounds). */
START_TEST(threads_same_output)
{
	static const char *const cmds[] = { "ping -w @all", "--json ping -w @all",
	    "facts -w @all" };
	char *one = NULL, *three = NULL, *again = NULL;
	int rc1, rc3, rc1b;

	harness_agent_stop(&h, 2, SIGTERM);
	for (size_t i = 0; i < nitems(cmds); i++) {
		for (int round = 0; round < 3; round++) {
			rc1 = ctl_threads(&one, cmds[i], 1, 1);
			rc3 = ctl_threads(&three, cmds[i], 3, 3);
			rc1b = ctl_threads(&again, cmds[i], 1, 1);
			/* another test program may retune its loop device (host-wide)
			 * between any two runs: a round is taken again when the three
			 * differ, and a real difference of --threads fails every round */
			if (rc1 == rc1b && strcmp(one, again) == 0 && strcmp(three, one) == 0)
				break;
			fprintf(stderr, "%s: the outputs differ, the node state may have changed "
			    "between the runs: again\n", cmds[i]);
		}
		ck_assert_str_eq(again, one);
		ck_assert_int_eq(rc1, 1);
		ck_assert_int_eq(rc3, rc1);
		ck_assert_str_eq(three, one);
		ck_assert_ptr_nonnull(strstr(one, "node03"));
		ck_assert_ptr_nonnull(strstr(one, "unreachable"));
	}
	free(one);
	free(three);
	free(again);
}
END_TEST

/* The cache file's lock: held by another command past TC_LOCK_WAIT_MS
 * (shortened to 200 ms by KNOB_TEST_TC_LOCK_WAIT_MS), the command still
 * succeeds, says its tickets were not saved, and does not wait for the
 * holder (the next command does a full handshake); a
 * lock file that cannot be opened (a directory here, a read-only place
 * or NFS without locks in life) saves without the lock. */
START_TEST(cache_lock_held_or_missing)
{
	char *out = NULL, *err = NULL, lock[PATH_MAX + 8];
	uint64_t t0;
	int fd;

	snprintf(lock, sizeof(lock), "%s/%s.lock", h.tmp, TCACHE_FILE);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	t0 = now_mono_ns();
	setenv("KNOB_TEST_TC_LOCK_WAIT_MS", "200", 1);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	unsetenv("KNOB_TEST_TC_LOCK_WAIT_MS");
	ck_assert_msg(now_mono_ns() - t0 < 10000000000ull, "the command waited for the lock");
	ck_assert_msg(strstr(err, "tickets not saved") != NULL, "no warning in:\n%s", err);
	close(fd);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 0);	/* nothing was saved */
	ck_assert_int_eq(ctl(&out, &err, "ping -w node01"), 0);
	ck_assert_int_eq(resumed(err, "node01"), 1);
	/* no lock to take: saved all the same */
	ck_assert_int_eq(unlink(lock), 0);
	ck_assert_int_eq(mkdir(lock, 0700), 0);
	ck_assert_int_eq(ctl(&out, &err, "ping -w node02"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 0);
	ck_assert_ptr_null(strstr(err, "tickets not saved"));
	ck_assert_int_eq(ctl(&out, &err, "ping -w node02"), 0);
	ck_assert_int_eq(resumed(err, "node02"), 1);
	ck_assert_int_eq(rmdir(lock), 0);
	free(out);
	free(err);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("resume");
	TCase *tc = cu_tcase("resume", setup, teardown, 120);

	tcase_add_test(tc, second_command_resumes);
	tcase_add_test(tc, concurrent_saves_merge);
	tcase_add_test(tc, old_format_cache_is_cold);
	tcase_add_test(tc, cache_lock_held_or_missing);
	tcase_add_test(tc, new_ca_refuses_old_tickets);
	tcase_add_test(tc, crl_change_voids_tickets);
	tcase_add_test(tc, revoked_node_refused);
	tcase_add_test(tc, mispointed_resumed_is_auth_failed);
	tcase_add_test(tc, threads_same_output);
	tcase_add_test(tc, ticket_lifetime_and_rotation);
	tcase_add_test(tc, agent_refuses_ticket_past_lifetime);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
