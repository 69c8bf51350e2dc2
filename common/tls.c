/* TLS contexts for knobd (server) and knobctl (client): TLS 1.3 only,
 * mutual authentication against the cluster CA and its CRL (both sides),
 * X25519 key exchange. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "keyfile.h"
#include "log.h"
#include "tls.h"

/* TLS 1.3 suites in order of preference (see tls_ctx_new) */
#define TLS_SUITES "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

void
tls_errstr(char *buf, size_t len)
{
	unsigned long e;
	size_t off = 0;

	buf[0] = '\0';
	while ((e = ERR_get_error()) != 0 && off + 2 < len) {
		char tmp[256];

		ERR_error_string_n(e, tmp, sizeof(tmp));
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "; " : "", tmp);
	}
	if (buf[0] == '\0')
		snprintf(buf, len, "unknown TLS error");
}

/* Agent side: a leaf without the clientAuth purpose (a node certificate
 * presented by a controller) passes TLS verification so that the role check
 * after the handshake can say in words why it is refused; every other
 * verification error stands. */
static int
server_verify_cb(int ok, X509_STORE_CTX *x)
{
	if (!ok && X509_STORE_CTX_get_error(x) == X509_V_ERR_INVALID_PURPOSE &&
	    X509_STORE_CTX_get_error_depth(x) == 0) {
		X509_STORE_CTX_set_error(x, X509_V_OK);
		return 1;
	}
	return ok;
}

/* Was crl signed by one of the CA certificates in st?  (A CRL of another
 * CA cannot revoke anything of this one; with CRL checking on, it would
 * make every certificate fail "unable to get certificate CRL".) */
static int
crl_from_store_ca(X509_STORE *st, X509_CRL *crl)
{
	STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(st);
	int ok = 0;

	for (int i = 0; !ok && i < sk_X509_OBJECT_num(objs); i++) {
		X509 *ca = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, i));

		ok = ca != NULL && X509_NAME_cmp(X509_get_subject_name(ca),
		    X509_CRL_get_issuer(crl)) == 0 && X509_CRL_verify(crl, X509_get0_pubkey(ca)) == 1;
	}
	ERR_clear_error();
	return ok;
}

void
tls_ca_dir(const char *ca, char *buf, size_t len)
{
	const char *slash = strrchr(ca, '/');

	if (slash == NULL)
		snprintf(buf, len, ".");
	else
		snprintf(buf, len, "%.*s", (int)(slash - ca), ca);
}

void
tls_crl_path(const char *dir, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", dir, TLS_CRL_FILE);
}

/* The CRL of CA certificate ca: the one in its directory (tls_crl_path). */
static void
crl_of_ca(const char *ca, char *buf, size_t len)
{
	char dir[4096];

	tls_ca_dir(ca, dir, sizeof(dir));
	tls_crl_path(dir, buf, len);
}

/* Both sides: the CA's revocation list, if one sits in the CA
 * certificate's directory (ca.crl, whatever the certificate is called:
 * tls_crl_path), checked for every peer's leaf (the agent
 * checks controllers, knobctl checks agents).  No file: nothing revoked.
 * A CRL the CA did not sign is ignored with a warning.  0 (also then) or
 * -1 with err (there but unreadable, or not a CRL). */
static int
load_crl(SSL_CTX *ctx, const char *ca, char *err, size_t errlen)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	char path[4096], tmp[512];
	X509_CRL *crl;
	FILE *f;

	crl_of_ca(ca, path, sizeof(path));
	if ((f = fopen(path, "re")) == NULL && errno == ENOENT)
		return 0;
	if (f == NULL) {	/* there but unreadable: not "nothing revoked" */
		snprintf(err, errlen, "%s: cannot load CRL: %s", path, strerror(errno));
		return -1;
	}
	crl = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
	if (crl != NULL && !crl_from_store_ca(st, crl)) {
		log_warnx("%s: not issued by the CA in %s: ignored (nothing revoked)", path, ca);
		X509_CRL_free(crl);
		return 0;
	}
	if (crl == NULL || X509_STORE_add_crl(st, crl) != 1) {
		tls_errstr(tmp, sizeof(tmp));
		snprintf(err, errlen, "%s: cannot load CRL: %s", path, tmp);
		X509_CRL_free(crl);
		return -1;
	}
	X509_CRL_free(crl);
	X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK);
	return 0;
}

/* Feed a whole file into md (a missing file adds nothing). 0, or -1 when
 * it exists and cannot be read. */
static int
digest_file(EVP_MD_CTX *md, const char *path)
{
	unsigned char buf[8192];
	size_t n;
	FILE *f;
	int rc = 0;

	if (path == NULL || (f = fopen(path, "re")) == NULL)
		return 0;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (EVP_DigestUpdate(md, buf, n) != 1)
			rc = -1;
	if (ferror(f))
		rc = -1;
	fclose(f);
	return rc;
}

int
tls_trust_hash(const char *ca, const char *extra, unsigned char out[TLS_HASH_LEN])
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	char crl[4096];
	unsigned int len = 0;
	int rc = -1;

	if (md == NULL || ca == NULL)
		goto out;
	crl_of_ca(ca, crl, sizeof(crl));
	if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1 || digest_file(md, ca) < 0 ||
	    EVP_DigestUpdate(md, "\0crl\0", 5) != 1 || digest_file(md, crl) < 0 ||
	    EVP_DigestUpdate(md, "\0extra\0", 7) != 1 || digest_file(md, extra) < 0 ||
	    EVP_DigestFinal_ex(md, out, &len) != 1 || len != TLS_HASH_LEN)
		goto out;
	rc = 0;
out:
	EVP_MD_CTX_free(md);
	return rc;
}

/* ------------------------------------------------------------ tickets
 * The agent issues one TLS 1.3 ticket per handshake.  Ticket keys live in
 * memory only and rotate: a new key every TICKET_ROTATE_S, the previous one
 * still decrypts (and the ticket is renewed) until it is rotate + lifetime
 * old; sessions time out after the lifetime.  Both are per context
 * (TICKET_LIFETIME_S and TICKET_ROTATE_S unless tls_ticket_times).  Every ticket carries the
 * hash of the agent's CA certificate, CRL and own certificate as its
 * application data: a ticket minted under another CA or before a CRL
 * change is ignored and the handshake is a full one, which checks the
 * controller's certificate against the current CRL. */
#define TICKET_LIFETIME_S 3600
#define TICKET_ROTATE_S 1800

struct ticket_key {
	unsigned char name[16], aes[32], hmac[32];
	time_t born;		/* 0: unused slot */
};

struct ticket_keys {
	pthread_mutex_t mu;
	struct ticket_key cur, prev;
	unsigned char bind[TLS_HASH_LEN];	/* CA + CRL + own certificate */
	time_t lifetime, rotate;		/* seconds (under mu) */
};

static int ticket_idx = -1;
static pthread_once_t ticket_once = PTHREAD_ONCE_INIT;

/* ex_data destructor: the keys die with their context. */
static void
ticket_keys_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	struct ticket_keys *tk = ptr;

	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	if (tk == NULL)
		return;
	pthread_mutex_destroy(&tk->mu);
	OPENSSL_cleanse(tk, sizeof(*tk));
	free(tk);
}

static void
ticket_index_init(void)
{
	ticket_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, ticket_keys_free);
}

/* A fresh random key born now. 0 or -1. */
static int
ticket_key_new(struct ticket_key *k, time_t now)
{
	if (RAND_bytes(k->name, sizeof(k->name)) != 1 || RAND_bytes(k->aes, sizeof(k->aes)) != 1 ||
	    RAND_bytes(k->hmac, sizeof(k->hmac)) != 1)
		return -1;
	k->born = now;
	return 0;
}

/* Rotate when the current key is due, retire a previous key past its age
 * (called with the lock held). 0 or -1. */
static int
ticket_rotate(struct ticket_keys *tk, time_t now)
{
	time_t max = tk->rotate + tk->lifetime;

	if (tk->prev.born && now - tk->prev.born >= max)
		OPENSSL_cleanse(&tk->prev, sizeof(tk->prev));
	if (tk->cur.born && now - tk->cur.born < tk->rotate)
		return 0;
	if (tk->cur.born && now - tk->cur.born < max)
		tk->prev = tk->cur;
	return ticket_key_new(&tk->cur, now);
}

/* Cipher and MAC set up for key k (enc: encrypt). 0 or -1. */
static int
ticket_crypto(const struct ticket_key *k, unsigned char *iv, EVP_CIPHER_CTX *cctx,
    EVP_MAC_CTX *hctx, int enc)
{
	char digest[] = "SHA256";
	OSSL_PARAM params[2];

	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(hctx, k->hmac, sizeof(k->hmac), params) != 1)
		return -1;
	if (enc)
		return EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes, iv) == 1 ? 0 : -1;
	return EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, k->aes, iv) == 1 ? 0 : -1;
}

/* OpenSSL's ticket key callback: encrypt with the current key; decrypt
 * with whichever key named the ticket (2 = renew: it was the previous one);
 * 0 = unknown key, full handshake; -1 = error. */
static int
ticket_key_cb(SSL *s, unsigned char key_name[16], unsigned char *iv, EVP_CIPHER_CTX *cctx,
    EVP_MAC_CTX *hctx, int enc)
{
	struct ticket_keys *tk = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(s), ticket_idx);
	const struct ticket_key *k = NULL;
	time_t now = time(NULL);
	int rc = -1;

	if (tk == NULL)
		return -1;
	pthread_mutex_lock(&tk->mu);
	if (ticket_rotate(tk, now) < 0)
		goto out;
	if (enc) {
		if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(EVP_aes_256_cbc())) != 1)
			goto out;
		memcpy(key_name, tk->cur.name, 16);
		k = &tk->cur;
		rc = 1;
	} else if (memcmp(key_name, tk->cur.name, 16) == 0) {
		k = &tk->cur;
		rc = 1;
	} else if (tk->prev.born && memcmp(key_name, tk->prev.name, 16) == 0) {
		k = &tk->prev;
		rc = 2;
		log_debug("TLS ticket under the previous key (%lld s old): accepted, renewed",
		    (long long)(now - k->born));
	} else
		rc = 0;
	if (k != NULL && ticket_crypto(k, iv, cctx, hctx, enc) < 0)
		rc = -1;
out:
	pthread_mutex_unlock(&tk->mu);
	return rc;
}

/* Stamp each new ticket with the trust hash. */
static int
ticket_gen_cb(SSL *s, void *arg)
{
	struct ticket_keys *tk = arg;

	return SSL_SESSION_set1_ticket_appdata(SSL_get0_session(s), tk->bind, sizeof(tk->bind));
}

int
tls_x509_expired(const X509 *x)
{
	return x != NULL && X509_cmp_current_time(X509_get0_notAfter(x)) < 0;
}

/* Is session ss (from a ticket) past its lifetime, the shorter of the
 * one it was minted with and the current one?  Whatever the client's
 * clock or cache says. */
static int
ticket_expired(struct ticket_keys *tk, SSL_SESSION *ss)
{
	time_t age = time(NULL) - (time_t)SSL_SESSION_get_time(ss), life;

	pthread_mutex_lock(&tk->mu);
	life = tk->lifetime;
	pthread_mutex_unlock(&tk->mu);
	if ((time_t)SSL_SESSION_get_timeout(ss) < life)
		life = (time_t)SSL_SESSION_get_timeout(ss);
	if (age < life)
		return 0;
	log_debug("TLS ticket %lld s old, past its lifetime of %lld s: full handshake",
	    (long long)age, (long long)life);
	return 1;
}

/* Has the certificate of either end of session ss expired since it was
 * verified: the controller's (the session's peer) or ours?  A resumed
 * session skips verification, so without this a ticket kept either in
 * use for up to its lifetime past the expiry (a full handshake refuses
 * it: "certificate has expired"). */
static int
ticket_cert_expired(SSL *s, SSL_SESSION *ss)
{
	X509 *peer = SSL_SESSION_get0_peer(ss), *own = SSL_get_certificate(s);

	if (!tls_x509_expired(peer) && !tls_x509_expired(own))
		return 0;
	log_debug("TLS ticket: a certificate it was verified with has expired: full handshake");
	return 1;
}

/* Use a decrypted ticket only when it was minted under the same CA, CRL
 * and agent certificate, and is within its lifetime; otherwise ignore it
 * (full handshake, new ticket). */
static SSL_TICKET_RETURN
ticket_dec_cb(SSL *s, SSL_SESSION *ss, const unsigned char *keyname, size_t keyname_len,
    SSL_TICKET_STATUS status, void *arg)
{
	struct ticket_keys *tk = arg;
	void *data = NULL;
	size_t len = 0;

	(void)s, (void)keyname, (void)keyname_len;
	switch (status) {
	case SSL_TICKET_SUCCESS:
	case SSL_TICKET_SUCCESS_RENEW:
		if (SSL_SESSION_get0_ticket_appdata(ss, &data, &len) != 1 ||
		    len != sizeof(tk->bind) || memcmp(data, tk->bind, len) != 0)
			return SSL_TICKET_RETURN_IGNORE_RENEW;
		if (ticket_expired(tk, ss) || ticket_cert_expired(s, ss))
			return SSL_TICKET_RETURN_IGNORE_RENEW;
		return status == SSL_TICKET_SUCCESS ? SSL_TICKET_RETURN_USE :
		    SSL_TICKET_RETURN_USE_RENEW;
	case SSL_TICKET_EMPTY:
	case SSL_TICKET_NO_DECRYPT:
		return SSL_TICKET_RETURN_IGNORE_RENEW;
	default:
		return SSL_TICKET_RETURN_ABORT;
	}
}

/* Agent side: stateless tickets with rotating in-memory keys, bound to the
 * trust hash. 0 or -1 with err. */
static int
tickets_setup(SSL_CTX *ctx, const char *ca, const char *cert, char *err, size_t errlen)
{
	static const unsigned char sid_ctx[] = "knobd";
	struct ticket_keys *tk;

	pthread_once(&ticket_once, ticket_index_init);
	if (ticket_idx < 0 || (tk = calloc(1, sizeof(*tk))) == NULL) {
		snprintf(err, errlen, "TLS setup: cannot allocate ticket keys");
		return -1;
	}
	pthread_mutex_init(&tk->mu, NULL);
	tk->lifetime = TICKET_LIFETIME_S;
	tk->rotate = TICKET_ROTATE_S;
	if (tls_trust_hash(ca, cert, tk->bind) < 0 || ticket_key_new(&tk->cur, time(NULL)) < 0 ||
	    SSL_CTX_set_ex_data(ctx, ticket_idx, tk) != 1) {
		ticket_keys_free(NULL, tk, NULL, 0, 0, NULL);
		snprintf(err, errlen, "TLS setup: cannot make ticket keys");
		return -1;
	}
	SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_timeout(ctx, TICKET_LIFETIME_S);
	SSL_CTX_set_num_tickets(ctx, 1);
	if (SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_key_cb) != 1 ||
	    SSL_CTX_set_session_ticket_cb(ctx, ticket_gen_cb, ticket_dec_cb, tk) != 1) {
		snprintf(err, errlen, "TLS setup: cannot install ticket callbacks");
		return -1;
	}
	return 0;
}

int
tls_ticket_times(SSL_CTX *ctx, unsigned lifetime_s, unsigned rotate_s)
{
	struct ticket_keys *tk = ticket_idx >= 0 ? SSL_CTX_get_ex_data(ctx, ticket_idx) : NULL;

	if (tk == NULL || lifetime_s == 0 || rotate_s == 0)
		return -1;
	pthread_mutex_lock(&tk->mu);
	tk->lifetime = lifetime_s;
	tk->rotate = rotate_s;
	pthread_mutex_unlock(&tk->mu);
	SSL_CTX_set_timeout(ctx, lifetime_s);
	return 0;
}

/* Is path there and not a directory?  stat, not open: a FIFO (a key
 * from "<(...)") must be opened once, when it is loaded.  0, else -1 with "PATH:
 * cannot load WHAT: REASON" in err (EISDIR for a directory). */
static int
pem_path_check(const char *path, const char *what, char *err, size_t errlen)
{
	struct stat st;
	int e = stat(path, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;

	if (e != 0)
		snprintf(err, errlen, "%s: cannot load %s: %s", path, what, strerror(e));
	return e != 0 ? -1 : 0;
}

/* Load key (keyfile.h) into ctx.  A key others may read or write, or
 * another user's, is refused at both ends, as OpenSSH refuses such an
 * identity (ssh) and host key (sshd): knobctl's key lets its holder run
 * anything as root on every node; a node's lets its holder pose as that
 * node to the controller.  The agent too refuses to start (it once only
 * warned, so that a node would not be left unmanaged): its log line names
 * the file and the chmod, the node is then unreachable (connection
 * refused), and `knobctl bootstrap` sets the mode back and restarts it
 * from the controller, no login needed.  0 or -1 with err. */
static int
ctx_use_key(SSL_CTX *ctx, int server, const char *key, char *err, size_t errlen)
{
	EVP_PKEY *pk = key_file_load(key, server ? "whoever reads it can pose as this node" :
	    "whoever reads it can pose as the controller, root on every node", err, errlen);
	char tmp[512];
	int ok = pk != NULL && SSL_CTX_use_PrivateKey(ctx, pk) == 1 &&
	    SSL_CTX_check_private_key(ctx) == 1;

	if (pk != NULL && !ok) {
		tls_errstr(tmp, sizeof(tmp));
		snprintf(err, errlen, "%s: cannot load key: %s", key, tmp);
	}
	EVP_PKEY_free(pk);
	return ok ? 0 : -1;
}

int
tls_paths_check(const char *ca, const char *cert, const char *key, char *err, size_t errlen)
{
	const char *const path[] = { cert, key, ca }, *const what[] = { "certificate", "key",
		"CA" };

	for (size_t i = 0; i < 3; i++)
		if (path[i] != NULL && pem_path_check(path[i], what[i], err, errlen) < 0)
			return -1;
	return 0;
}

/* Build a context; the caller frees it with SSL_CTX_free. */
SSL_CTX *
tls_ctx_new(int server, const char *ca, const char *cert, const char *key, char *err,
    size_t errlen)
{
	SSL_CTX *ctx;
	char tmp[512];

	if (ca == NULL || cert == NULL || key == NULL) {
		snprintf(err, errlen, "TLS needs a CA, a certificate and a key (--ca/--cert/--key "
		    "or the inventory's <tls>)");
		return NULL;
	}
	if (tls_paths_check(ca, cert, key, err, errlen) < 0)
		return NULL;
	ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (ctx == NULL)
		goto fail;
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION))
		goto fail;
	if (!SSL_CTX_set1_groups_list(ctx, "X25519:P-256"))
		goto fail;
	/* AES-128-GCM with SHA-256 first (TLS 1.3's mandatory suite, not
	 * OpenSSL's default AES-256/SHA-384): its key schedule and transcript
	 * hash use SHA-256, which CPUs accelerate; a resumed handshake costs
	 * the controller ~10 % less (bench/tls_handshake). Both ends offer
	 * the same order. */
	if (!SSL_CTX_set_ciphersuites(ctx, TLS_SUITES))
		goto fail;
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		tls_errstr(tmp, sizeof(tmp));
		snprintf(err, errlen, "%s: cannot load certificate: %s", cert, tmp);
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (ctx_use_key(ctx, server, key, err, errlen) < 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
		tls_errstr(tmp, sizeof(tmp));
		snprintf(err, errlen, "%s: cannot load CA: %s", ca, tmp);
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (load_crl(ctx, ca, err, errlen) < 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
	    server ? server_verify_cb : NULL);
	SSL_CTX_set_verify_depth(ctx, 2);
	SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
	/* Resumption only with a fresh (EC)DHE share: psk_dhe_ke, never psk_ke. */
	SSL_CTX_clear_options(ctx, SSL_OP_ALLOW_NO_DHE_KEX);
	SSL_CTX_set_max_early_data(ctx, 0);
	if (server && tickets_setup(ctx, ca, cert, err, errlen) < 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (!server)
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
		    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	/* A flight of records in one read(2), not two per record.  Bytes can
	 * then wait inside OpenSSL with none left on the socket, so every
	 * reader of a level-triggered fd reads on to WANT_READ (conn_input,
	 * the handshake falling through to it) or asks SSL_pending. */
	SSL_CTX_set_read_ahead(ctx, 1);
	return ctx;
fail:
	tls_errstr(tmp, sizeof(tmp));
	snprintf(err, errlen, "TLS setup: %s", tmp);
	SSL_CTX_free(ctx);
	return NULL;
}

/* Extract CN and OU from a subject name. */
static int
name_identity(X509_NAME *nm, char *cn, size_t cnlen, char *ou, size_t oulen)
{
	if (cn && cnlen) {
		cn[0] = '\0';
		if (X509_NAME_get_text_by_NID(nm, NID_commonName, cn, (int)cnlen) < 0)
			return -1;
	}
	if (ou && oulen) {
		ou[0] = '\0';
		if (X509_NAME_get_text_by_NID(nm, NID_organizationalUnitName, ou, (int)oulen) < 0)
			ou[0] = '\0';
	}
	return 0;
}

int
tls_peer_identity(SSL *ssl, char *cn, size_t cnlen, char *ou, size_t oulen)
{
	X509 *x = SSL_get1_peer_certificate(ssl);
	int rc;

	if (x == NULL || SSL_get_verify_result(ssl) != X509_V_OK) {
		X509_free(x);
		return -1;
	}
	rc = name_identity(X509_get_subject_name(x), cn, cnlen, ou, oulen);
	X509_free(x);
	return rc;
}

int
tls_cert_identity(const char *certfile, char *cn, size_t cnlen, char *ou, size_t oulen)
{
	FILE *f = fopen(certfile, "r");
	X509 *x;
	int rc;

	if (f == NULL)
		return -1;
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (x == NULL)
		return -1;
	rc = name_identity(X509_get_subject_name(x), cn, cnlen, ou, oulen);
	X509_free(x);
	return rc;
}

int
tls_x509_not_after(const X509 *x, int64_t *t)
{
	struct tm tm;

	if (x == NULL || ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) != 1)
		return -1;
	*t = (int64_t)timegm(&tm);
	return 0;
}

int
tls_cert_not_after(const char *certfile, int64_t *t)
{
	FILE *f = fopen(certfile, "re");
	X509 *x;
	int rc;

	if (f == NULL)
		return -1;
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	rc = tls_x509_not_after(x, t);
	X509_free(x);
	return rc;
}
