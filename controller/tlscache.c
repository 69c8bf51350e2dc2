/* The controller's TLS ticket cache: one TLS 1.3 session per node, kept
 * between commands in a file next to the results database, so that the
 * next command resumes (psk_dhe_ke: a fresh X25519 share, no certificate
 * decoding, no signature) instead of repeating the full handshake.
 *
 * File (mode 0600, owned by the user; anything else is ignored):
 *	"KNOBTKT1", 32-byte trust hash, u32 count, then count records of
 *	u16 name length, name, u32 DER length, DER SSL_SESSION (big-endian).
 * The trust hash covers the CA certificate, its CRL and the controller's
 * certificate: a new CA, a CRL change or a renewed controller certificate
 * makes every ticket in the file void.  A resumed session is still pinned
 * to the node name (controller/fanout.c checks the certificate saved with
 * the session). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "knobctl.h"
#include "log.h"
#include "results.h"
#include "tls.h"
#include "util.h"

#define TC_MAGIC "KNOBTKT1"
#define TC_MAX_FILE (256u << 20)
#define TC_MAX_DER 65535u

struct tc_entry {
	char *name;
	unsigned char *der;	/* NULL: dropped */
	size_t len;
};

struct tcache {
	char path[PATH_MAX];
	unsigned char bind[TLS_HASH_LEN];
	struct tc_entry *v;
	size_t n, cap;
	size_t *slot;		/* open addressing: index + 1, 0 = empty */
	size_t nslot;		/* power of two, > 2 n */
	int dirty;
};

/* FNV-1a of a node name. */
static size_t
name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

/* The slot that holds name, or the empty one where it would go. */
static size_t *
tc_slot(struct tcache *tc, const char *name)
{
	size_t i = name_hash(name) & (tc->nslot - 1);

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
	tc->v[tc->n].der = NULL;
	tc->v[tc->n].len = 0;
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

/* Parse the file's records into tc; a truncated or foreign file counts as
 * empty. 0, or -1 (ignored: the caller starts afresh). */
static int
tc_parse(struct tcache *tc, const unsigned char *p, size_t len)
{
	size_t off = 8 + TLS_HASH_LEN + 4;
	uint32_t count;

	if (len < off || memcmp(p, TC_MAGIC, 8) != 0 ||
	    memcmp(p + 8, tc->bind, TLS_HASH_LEN) != 0)
		return -1;
	count = get_be(p + 8 + TLS_HASH_LEN, 4);
	tc_reindex(tc, count < 1000000 ? count : 0);
	for (uint32_t i = 0; i < count; i++) {
		size_t nl, dl;
		char name[256];
		struct tc_entry *e;

		if (off + 2 > len || (nl = get_be(p + off, 2)) == 0 || nl >= sizeof(name) ||
		    off + 2 + nl + 4 > len)
			return -1;
		memcpy(name, p + off + 2, nl);
		name[nl] = '\0';
		off += 2 + nl;
		dl = get_be(p + off, 4);
		off += 4;
		if (dl == 0 || dl > TC_MAX_DER || off + dl > len)
			return -1;
		e = tc_find(tc, name, 1);
		free(e->der);
		e->der = xmalloc(dl);
		memcpy(e->der, p + off, dl);
		e->len = dl;
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
		free(tc->v[i].der);
	}
	tc->n = 0;
}

/* Read the cache file if it is ours alone (0600, our uid). */
static void
tc_read(struct tcache *tc)
{
	struct stat st;
	char *data = NULL;
	size_t len = 0;
	int fd;

	if ((fd = open(tc->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		log_warnx("%s: not a private file of this user (mode 0600 wanted); ignored",
		    tc->path);
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
	char db[PATH_MAX], *slash;

	results_db_path(ctl, db, sizeof(db));
	if ((slash = strrchr(db, '/')) != NULL)
		*slash = '\0';
	else
		snprintf(db, sizeof(db), ".");
	snprintf(tc->path, sizeof(tc->path), "%s/%s", db, TCACHE_FILE);
	tc_reindex(tc, 0);
	if (tls_trust_hash(ca, cert, tc->bind) < 0) {
		log_warnx("%s: cannot hash the CA and CRL: no session resumption", ca);
		tc->path[0] = '\0';
		return tc;
	}
	tc_read(tc);
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
	free(tc);
}

SSL_SESSION *
tcache_get(struct tcache *tc, const char *name)
{
	struct tc_entry *e;
	const unsigned char *p;
	SSL_SESSION *s;

	if (tc == NULL || tc->path[0] == '\0' || (e = tc_find(tc, name, 0)) == NULL ||
	    e->der == NULL)
		return NULL;
	p = e->der;
	if ((s = d2i_SSL_SESSION(NULL, &p, (long)e->len)) == NULL)
		return NULL;
	if (!SSL_SESSION_is_resumable(s) ||
	    (uint64_t)time(NULL) >= (uint64_t)SSL_SESSION_get_time(s) +
	    (uint64_t)SSL_SESSION_get_timeout(s)) {
		SSL_SESSION_free(s);
		return NULL;
	}
	return s;
}

void
tcache_put(struct tcache *tc, const char *name, SSL_SESSION *s)
{
	struct tc_entry *e;
	unsigned char *p;
	int len;

	if (tc == NULL || tc->path[0] == '\0' || strlen(name) > 255)
		return;
	if (s == NULL) {
		if ((e = tc_find(tc, name, 0)) != NULL && e->der != NULL) {
			free(e->der);
			e->der = NULL;
			tc->dirty = 1;
		}
		return;
	}
	len = i2d_SSL_SESSION(s, NULL);
	if (len <= 0 || (unsigned)len > TC_MAX_DER)
		return;
	e = tc_find(tc, name, 1);
	free(e->der);
	e->der = p = xmalloc((size_t)len);
	e->len = (size_t)i2d_SSL_SESSION(s, &p);
	tc->dirty = 1;
}

int
tcache_save(struct tcache *tc)
{
	size_t len = 8 + TLS_HASH_LEN + 4, off, count = 0;
	unsigned char *buf;
	int r;

	if (tc == NULL || tc->path[0] == '\0' || !tc->dirty)
		return 0;
	for (size_t i = 0; i < tc->n; i++)
		if (tc->v[i].der) {
			len += 2 + strlen(tc->v[i].name) + 4 + tc->v[i].len;
			count++;
		}
	buf = xmalloc(len);
	memcpy(buf, TC_MAGIC, 8);
	memcpy(buf + 8, tc->bind, TLS_HASH_LEN);
	put_be(buf + 8 + TLS_HASH_LEN, (uint32_t)count, 4);
	off = 8 + TLS_HASH_LEN + 4;
	for (size_t i = 0; i < tc->n; i++) {
		size_t nl = strlen(tc->v[i].name);

		if (tc->v[i].der == NULL)
			continue;
		put_be(buf + off, (uint32_t)nl, 2);
		memcpy(buf + off + 2, tc->v[i].name, nl);
		off += 2 + nl;
		put_be(buf + off, (uint32_t)tc->v[i].len, 4);
		memcpy(buf + off + 4, tc->v[i].der, tc->v[i].len);
		off += 4 + tc->v[i].len;
	}
	results_mkparent(tc->path);
	r = write_file_atomic(tc->path, buf, len, 0600);
	free(buf);
	if (r < 0) {
		log_warnx("%s: cannot write the ticket cache: %s", tc->path, strerror(-r));
		return -1;
	}
	tc->dirty = 0;
	return 0;
}

int
tcache_pinned(SSL *ssl, const char *name)
{
	X509 *x = SSL_get0_peer_certificate(ssl);

	return x != NULL && SSL_get_verify_result(ssl) == X509_V_OK &&
	    X509_check_host(x, name, 0, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS, NULL) == 1;
}
