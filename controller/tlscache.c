/* The controller's TLS ticket cache: one TLS 1.3 session per node, kept
 * between commands in a file next to the results database, so that the
 * next command resumes (psk_dhe_ke: a fresh X25519 share, no certificate
 * decoding, no signature) instead of repeating the full handshake.
 *
 * File (mode 0600, owned by the user; anything else is ignored):
 *	"KNOBTKT3", 32-byte trust hash, u32 count, then count records of
 *	u16 name length, name, u16 pin length, pin, i64 notAfter of the
 *	agent's certificate (unix s), u32 DER length, DER SSL_SESSION
 *	(big-endian).  A "KNOBTKT2" file (no notAfter) is a cold cache: full
 *	handshakes, and the next save writes KNOBTKT3.  Its sessions were
 *	saved without the agent's certificate too (as tcache_der does), so
 *	the notAfter cannot be taken from them: resuming one would be
 *	resuming with no expiry known.
 * The trust hash covers the CA certificate, its CRL and the controller's
 * certificate: a new CA, a CRL change or a renewed controller certificate
 * makes every ticket in the file void.
 *
 * Commands run at once (an admin's, a sweep's timer, the holder's): each
 * save takes an flock on FILE.lock (waiting TC_LOCK_WAIT_MS at most, else
 * the save is skipped: tickets cost time, never safety; the holder's
 * saver thread, tcache_save_later, tries again later, as after a failed
 * write), reads the file
 * again and writes it back with only the nodes this command learned or
 * dropped since its last save changed, so one command's tickets do not
 * wipe out another's (last writer wins only for a node both touched).  A
 * command whose CA, CRL or certificate changed while it ran does not save:
 * the file may already hold tickets of the new ones.
 *
 * A resumed session is still pinned to the node name: the pin is the name
 * the agent's certificate was verified for (SSL_set1_host) in the full
 * handshake the session descends from, and fanout.c resumes a session for
 * that name only.  The certificate itself is not kept: OpenSSL 3.0 decodes
 * a certificate's public key eagerly, and that decoding cost more
 * controller CPU than the rest of a resumed handshake.  Its notAfter is:
 * a session is not offered past it (a full handshake refuses the agent,
 * as it would), and a resumed connection knows when its agent's
 * certificate expires (the holder stops relaying then, cmd_mux.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <openssl/ssl.h>
#include <openssl/asn1.h>

#include "knobctl.h"
#include "log.h"
#include "results.h"
#include "tls.h"
#include "util.h"

#define TC_MAGIC "KNOBTKT3"
#define TC_MAGIC_OLD "KNOBTKT2"	/* no notAfter: read as a cold cache */
#define TC_MAX_FILE (256u << 20)
#define TC_MAX_DER 65535u
#define TC_LOCK_WAIT_MS 2000

struct tc_entry {
	char *name;
	char *pin;		/* the name its certificate was verified for */
	unsigned char *der;	/* NULL: dropped */
	size_t len;
	int64_t not_after;	/* the agent's certificate expires then (unix s) */
	int touched;		/* put or dropped by this command */
};

struct tcache {
	char path[PATH_MAX];
	char *ca, *cert;	/* what bind hashes, hashed again at save */
	unsigned char bind[TLS_HASH_LEN];
	struct tc_entry *v;
	size_t n, cap;
	size_t *slot;		/* open addressing: index + 1, 0 = empty */
	size_t nslot;		/* power of two, > 2 n */
	int dirty;
};

/* The slot that holds name, or the empty one where it would go. */
static size_t *
tc_slot(struct tcache *tc, const char *name)
{
	size_t i = (size_t)str_hash(name) & (tc->nslot - 1);

	while (tc->slot[i] && strcmp(tc->v[tc->slot[i] - 1].name, name) != 0)
		i = (i + 1) & (tc->nslot - 1);
	return &tc->slot[i];
}

/* Rebuild the index for at least want entries. */
static void
tc_reindex(struct tcache *tc, size_t want)
{
	size_t ns = 64;

	while (ns < 2 * want + 2)
		ns *= 2;
	free(tc->slot);
	tc->slot = xcalloc(ns, sizeof(*tc->slot));
	tc->nslot = ns;
	for (size_t i = 0; i < tc->n; i++)
		*tc_slot(tc, tc->v[i].name) = i + 1;
}

/* The entry for name, created (empty) when create is set. */
static struct tc_entry *
tc_find(struct tcache *tc, const char *name, int create)
{
	size_t *s = tc_slot(tc, name);

	if (*s)
		return &tc->v[*s - 1];
	if (!create)
		return NULL;
	if (tc->n == tc->cap) {
		tc->cap = tc->cap ? 2 * tc->cap : 64;
		tc->v = xrealloc(tc->v, tc->cap * sizeof(*tc->v));
	}
	tc->v[tc->n].name = xstrdup(name);
	tc->v[tc->n].pin = NULL;
	tc->v[tc->n].der = NULL;
	tc->v[tc->n].len = 0;
	tc->v[tc->n].not_after = INT64_MIN;
	tc->v[tc->n].touched = 0;
	tc->n++;
	if (2 * tc->n + 2 > tc->nslot)
		tc_reindex(tc, tc->n);
	else
		*s = tc->n;
	return &tc->v[tc->n - 1];
}

static uint32_t
get_be(const unsigned char *p, int bytes)
{
	uint32_t v = 0;

	for (int i = 0; i < bytes; i++)
		v = (v << 8) | p[i];
	return v;
}

static void
put_be(unsigned char *p, uint32_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

/* A u16-length string at *off into buf (256 bytes), *off past it. 0 or -1. */
static int
get_name(const unsigned char *p, size_t len, size_t *off, char *buf)
{
	size_t nl;

	if (*off + 2 > len || (nl = get_be(p + *off, 2)) == 0 || nl >= 256 ||
	    *off + 2 + nl > len)
		return -1;
	memcpy(buf, p + *off + 2, nl);
	buf[nl] = '\0';
	*off += 2 + nl;
	return 0;
}

/* e holds der (len bytes, a copy made here; NULL: dropped) pinned to pin
 * (which may be e's own), of an agent certificate valid until not_after. */
static void
tc_set(struct tc_entry *e, const unsigned char *der, size_t len, const char *pin,
    int64_t not_after)
{
	char *np = pin ? xstrdup(pin) : NULL;

	free(e->der);
	free(e->pin);
	e->der = der ? xmalloc(len) : NULL;
	if (der)
		memcpy(e->der, der, len);
	e->len = der ? len : 0;
	e->pin = np;
	e->not_after = not_after;
}

/* Parse the file's records into tc; a truncated or foreign file counts as
 * empty. 0, or -1 (ignored: the caller starts afresh). */
static int
tc_parse(struct tcache *tc, const unsigned char *p, size_t len)
{
	size_t off = 8 + TLS_HASH_LEN + 4;
	uint32_t count;

	if (len >= 8 && memcmp(p, TC_MAGIC_OLD, 8) == 0) {
		log_debug("%s: tickets without their agents' certificate expiry (KNOBTKT2): "
		    "full handshakes", tc->path);
		return -1;
	}
	if (len < off || memcmp(p, TC_MAGIC, 8) != 0 ||
	    memcmp(p + 8, tc->bind, TLS_HASH_LEN) != 0)
		return -1;
	count = get_be(p + 8 + TLS_HASH_LEN, 4);
	tc_reindex(tc, count < 1000000 ? count : 0);
	for (uint32_t i = 0; i < count; i++) {
		size_t dl;
		int64_t not_after;
		char name[256], pin[256];

		if (get_name(p, len, &off, name) < 0 || get_name(p, len, &off, pin) < 0 ||
		    off + 12 > len)
			return -1;
		not_after = (int64_t)(((uint64_t)get_be(p + off, 4) << 32) | get_be(p + off + 4, 4));
		dl = get_be(p + off + 8, 4);
		off += 12;
		if (dl == 0 || dl > TC_MAX_DER || off + dl > len)
			return -1;
		tc_set(tc_find(tc, name, 1), p + off, dl, pin, not_after);
		off += dl;
	}
	return 0;
}

/* Forget every entry. */
static void
tc_clear(struct tcache *tc)
{
	for (size_t i = 0; i < tc->n; i++) {
		free(tc->v[i].name);
		free(tc->v[i].pin);
		free(tc->v[i].der);
	}
	tc->n = 0;
}

/* Read the cache file if it is ours alone (0600, our uid); quiet: no
 * warning (said once, at open). */
static void
tc_read(struct tcache *tc, int quiet)
{
	struct stat st;
	char *data = NULL;
	size_t len = 0;
	int fd;

	if ((fd = open(tc->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		if (!quiet)
			log_warnx("%s: not a private file of this user (mode 0600 wanted); "
			    "ignored", tc->path);
		close(fd);
		return;
	}
	close(fd);
	if (read_file_bounded(tc->path, TC_MAX_FILE, &data, &len) < 0)
		return;
	if (tc_parse(tc, (unsigned char *)data, len) < 0) {
		tc_clear(tc);
		tc_reindex(tc, 0);
		log_debug("%s: tickets of another CA, CRL or certificate (or unreadable): "
		    "full handshakes", tc->path);
	}
	free(data);
}

struct tcache *
tcache_open(struct ctl *ctl, const char *ca, const char *cert)
{
	struct tcache *tc = xcalloc(1, sizeof(*tc));

	results_side_path(ctl, TCACHE_FILE, tc->path, sizeof(tc->path));
	tc_reindex(tc, 0);
	if (tls_trust_hash(ca, cert, tc->bind) < 0) {
		log_warnx("%s: cannot hash the CA and CRL: no session resumption", ca);
		tc->path[0] = '\0';
		return tc;
	}
	tc->ca = xstrdup(ca);
	tc->cert = xstrdup(cert);
	tc_read(tc, 0);
	return tc;
}

void
tcache_free(struct tcache *tc)
{
	if (tc == NULL)
		return;
	tc_clear(tc);
	free(tc->v);
	free(tc->slot);
	free(tc->ca);
	free(tc->cert);
	free(tc);
}

SSL_SESSION *
tcache_get(struct tcache *tc, const char *name, const char **pin, int64_t *not_after)
{
	struct tc_entry *e;
	const unsigned char *p;
	SSL_SESSION *s;
	uint64_t life;

	if (tc == NULL || tc->path[0] == '\0' || (e = tc_find(tc, name, 0)) == NULL ||
	    e->der == NULL)
		return NULL;
	if ((int64_t)time(NULL) > e->not_after) {	/* a full handshake refuses it */
		log_debug("%s: its TLS ticket's agent certificate has expired: full handshake",
		    name);
		return NULL;
	}
	p = e->der;
	if ((s = d2i_SSL_SESSION(NULL, &p, (long)e->len)) == NULL)
		return NULL;
	/* the agent's lifetime (the ticket's hint) is usually the shorter */
	life = (uint64_t)SSL_SESSION_get_timeout(s);
	if (SSL_SESSION_get_ticket_lifetime_hint(s) > 0 &&
	    SSL_SESSION_get_ticket_lifetime_hint(s) < life)
		life = SSL_SESSION_get_ticket_lifetime_hint(s);
	if (!SSL_SESSION_is_resumable(s) ||
	    (uint64_t)time(NULL) >= (uint64_t)SSL_SESSION_get_time(s) + life) {
		SSL_SESSION_free(s);
		return NULL;
	}
	*pin = e->pin;
	*not_after = e->not_after;
	return s;
}

unsigned char *
tcache_der(SSL_SESSION *s, size_t *outlen)
{
	unsigned char *der = NULL, *body = NULL, *out = NULL, *o;
	const unsigned char *p, *end, *el;
	long len;
	int n, r, tag, cls, total;
	size_t keep = 0;

	if ((n = i2d_SSL_SESSION(s, &der)) <= 0)
		return NULL;
	p = der;
	r = ASN1_get_object(&p, &len, &tag, &cls, n);
	if (r != V_ASN1_CONSTRUCTED || tag != V_ASN1_SEQUENCE || p + len != der + n)
		goto out;
	body = xmalloc((size_t)len);
	for (end = p + len; p < end; p += len) {
		el = p;
		r = ASN1_get_object(&p, &len, &tag, &cls, end - p);
		if ((r & 0x80) || (r & 1))	/* error, or an indefinite length */
			goto out;
		if (cls == V_ASN1_CONTEXT_SPECIFIC && tag == 3)
			continue;	/* the peer certificate */
		memcpy(body + keep, el, (size_t)(p + len - el));
		keep += (size_t)(p + len - el);
	}
	total = ASN1_object_size(1, (int)keep, V_ASN1_SEQUENCE);
	if (total <= 0)
		goto out;
	out = o = xmalloc((size_t)total);
	ASN1_put_object(&o, 1, (int)keep, V_ASN1_SEQUENCE, V_ASN1_UNIVERSAL);
	memcpy(o, body, keep);
	*outlen = (size_t)total;
out:
	OPENSSL_free(der);
	free(body);
	return out;
}

void
tcache_put(struct tcache *tc, const char *name, SSL_SESSION *s, const char *pin,
    int64_t not_after)
{
	struct tc_entry *e;
	unsigned char *der;
	size_t len = 0;

	if (tc == NULL || tc->path[0] == '\0' || strlen(name) > 255)
		return;
	if (s == NULL) {
		if ((e = tc_find(tc, name, 0)) != NULL && e->der != NULL) {
			free(e->der);
			e->der = NULL;
			e->touched = 1;
			tc->dirty = 1;
		}
		return;
	}
	if (pin == NULL || strlen(pin) == 0 || strlen(pin) > 255 || not_after == INT64_MIN ||
	    (der = tcache_der(s, &len)) == NULL)
		return;
	if (len > TC_MAX_DER) {
		free(der);
		return;
	}
	e = tc_find(tc, name, 1);
	tc_set(e, der, len, pin, not_after);	/* pin may be e's own (tcache_get's) */
	free(der);
	e->touched = 1;
	tc->dirty = 1;
}

/* Write name as a u16-length string at off; the offset past it. */
static size_t
put_name(unsigned char *buf, size_t off, const char *name)
{
	size_t nl = strlen(name);

	put_be(buf + off, (uint32_t)nl, 2);
	memcpy(buf + off + 2, name, nl);
	return off + 2 + nl;
}

/* Write tc's live entries to its file (atomically). 0 or -errno. */
static int
tc_write(struct tcache *tc)
{
	size_t len = 8 + TLS_HASH_LEN + 4, off, count = 0;
	unsigned char *buf;
	int r;

	for (size_t i = 0; i < tc->n; i++)
		if (tc->v[i].der) {
			len += 2 + strlen(tc->v[i].name) + 2 + strlen(tc->v[i].pin) + 12 +
			    tc->v[i].len;
			count++;
		}
	buf = xmalloc(len);
	memcpy(buf, TC_MAGIC, 8);
	memcpy(buf + 8, tc->bind, TLS_HASH_LEN);
	put_be(buf + 8 + TLS_HASH_LEN, (uint32_t)count, 4);
	off = 8 + TLS_HASH_LEN + 4;
	for (size_t i = 0; i < tc->n; i++) {
		if (tc->v[i].der == NULL)
			continue;
		off = put_name(buf, off, tc->v[i].name);
		off = put_name(buf, off, tc->v[i].pin);
		put_be(buf + off, (uint32_t)((uint64_t)tc->v[i].not_after >> 32), 4);
		put_be(buf + off + 4, (uint32_t)tc->v[i].not_after, 4);
		put_be(buf + off + 8, (uint32_t)tc->v[i].len, 4);
		memcpy(buf + off + 12, tc->v[i].der, tc->v[i].len);
		off += 12 + tc->v[i].len;
	}
	r = write_file_atomic(tc->path, buf, len, 0600);
	free(buf);
	return r;
}

/* src's puts and drops (copied) over dst's entries, put or dropped by dst
 * from now on. */
static void
tc_apply(struct tcache *dst, const struct tcache *src)
{
	for (size_t i = 0; i < src->n; i++) {
		const struct tc_entry *e = &src->v[i];
		struct tc_entry *d;

		if (!e->touched)
			continue;
		d = tc_find(dst, e->name, 1);
		tc_set(d, e->der, e->len, e->pin, e->not_after);
		d->touched = 1;
		dst->dirty = 1;
	}
}

/* An empty cache of tc's file, bound to what tc trusts. */
static struct tcache *
tc_empty_like(const struct tcache *tc, size_t want)
{
	struct tcache *m = xcalloc(1, sizeof(*m));

	memcpy(m->path, tc->path, sizeof(m->path));
	memcpy(m->bind, tc->bind, sizeof(m->bind));
	tc_reindex(m, want);
	return m;
}

/* The file as it is now, with this command's puts and drops over it. */
static struct tcache *
tc_merged(const struct tcache *tc)
{
	struct tcache *m = tc_empty_like(tc, tc->n);

	tc_read(m, 1);
	tc_apply(m, tc);
	return m;
}

struct tcache *
tcache_changes(struct tcache *tc)
{
	struct tcache *c;
	size_t n = 0;

	if (tc == NULL || tc->path[0] == '\0' || !tc->dirty)
		return NULL;
	for (size_t i = 0; i < tc->n; i++)
		n += tc->v[i].touched != 0;
	c = tc_empty_like(tc, n);
	c->ca = xstrdup(tc->ca);
	c->cert = xstrdup(tc->cert);
	tc_apply(c, tc);
	for (size_t i = 0; i < tc->n; i++)	/* handed over: saved by c's owner */
		tc->v[i].touched = 0;
	tc->dirty = 0;
	return c;
}

void
tcache_absorb(struct tcache *into, struct tcache *newer)
{
	tc_apply(into, newer);
	tcache_free(newer);
}

/* How long a save waits for FILE.lock: TC_LOCK_WAIT_MS, or for tests only
 * KNOB_TEST_TC_LOCK_WAIT_MS (1 to TC_LOCK_WAIT_MS), to be done sooner. */
static int
tc_lock_wait_ms(void)
{
	return (int)env_number("KNOB_TEST_TC_LOCK_WAIT_MS", 1, TC_LOCK_WAIT_MS, TC_LOCK_WAIT_MS);
}

/* FILE.lock, taken within tc_lock_wait_ms() (quiet: not warned when it
 * is not): its fd;
 * -1 when there is no lock file to take (a read-only place: saved
 * unlocked, as before), -2 when another command holds it too long (the
 * save is skipped). */
static int
tc_lock(const struct tcache *tc, int quiet)
{
	char lock[PATH_MAX + 8];
	int fd, wait_ms = tc_lock_wait_ms();

	snprintf(lock, sizeof(lock), "%s.lock", tc->path);
	if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0) {
		log_debug("%s: %s: saved without the lock", lock, strerror(errno));
		return -1;
	}
	for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 10) {
		if (errno != EWOULDBLOCK && errno != EINTR) {	/* ENOLCK: NFS without locks */
			log_debug("%s: %s: saved without the lock", lock, strerror(errno));
			close(fd);
			return -1;
		}
		if (waited >= wait_ms) {
			if (!quiet)
				log_warnx("%s: held by another command for %d ms: tickets not "
				    "saved", lock, waited);
			close(fd);
			return -2;
		}
		usleep(10000);	/* flock has no timeout */
	}
	return fd;
}

/* Did the CA, its CRL or the certificate change since the cache opened? */
static int
tc_trust_moved(const struct tcache *tc)
{
	unsigned char now[TLS_HASH_LEN];

	return tls_trust_hash(tc->ca, tc->cert, now) < 0 ||
	    memcmp(now, tc->bind, TLS_HASH_LEN) != 0;
}

/* tcache_save (the lock waited for as tc_lock does): 0, -errno when the
 * write failed, or 1 when the lock was held for longer (either way nothing
 * saved, tc still dirty; warned unless quiet). */
static int
tc_save(struct tcache *tc, int quiet)
{
	struct tcache *m;
	int fd, r;

	if (tc == NULL || tc->path[0] == '\0' || !tc->dirty)
		return 0;
	results_mkparent(tc->path);
	if ((fd = tc_lock(tc, quiet)) == -2)
		return 1;
	if (tc_trust_moved(tc)) {	/* under the lock: no newer save slips in */
		log_debug("%s: the CA, CRL or certificate changed: tickets not saved", tc->path);
		if (fd >= 0)
			close(fd);
		return 0;
	}
	m = tc_merged(tc);
	r = tc_write(m);
	tcache_free(m);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		if (!quiet)
			log_warnx("%s: cannot write the ticket cache: %s", tc->path, strerror(-r));
		return r;
	}
	for (size_t i = 0; i < tc->n; i++)	/* saved: the next save adds only newer ones */
		tc->v[i].touched = 0;
	tc->dirty = 0;
	return 0;
}

int
tcache_save(struct tcache *tc)
{
	return tc_save(tc, 0) < 0 ? -1 : 0;
}

int
tcache_save_later(struct tcache *tc)
{
	return tc_save(tc, 1);
}

const char *
tcache_path(const struct tcache *tc)
{
	return tc->path;
}

size_t
tcache_pending(const struct tcache *tc, char *buf, size_t len)
{
	size_t n = 0, used = 0, left = 0;

	if (buf != NULL && len > 0)
		buf[0] = '\0';
	for (size_t i = 0; tc != NULL && i < tc->n; i++) {
		const char *name = tc->v[i].name;

		if (!tc->v[i].touched)
			continue;
		n++;
		if (buf != NULL && left == 0 && used + strlen(name) + 2 + 16 < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
			    name);
		else
			left++;
	}
	if (buf != NULL && left > 0 && used < len)
		snprintf(buf + used, len - used, " and %zu more", left);
	return n;
}

int
tcache_pinned(const char *pin, const char *name)
{
	return pin != NULL && strcmp(pin, name) == 0;
}
