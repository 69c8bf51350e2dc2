/* TLS contexts for knobd (server) and knobctl (client): TLS 1.3 only,
 * mutual authentication against the cluster CA (and its CRL, on the agent),
 * X25519 key exchange. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "tls.h"

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

/* Agent side: the CA's revocation list, if one sits next to the CA
 * certificate (ca.crt -> ca.crl), checked for every controller certificate.
 * 0 (also when there is none) or -1 with err. */
static int
load_crl(SSL_CTX *ctx, const char *ca, char *err, size_t errlen)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	size_t l = strlen(ca);
	char path[4096], tmp[512];
	X509_CRL *crl;
	FILE *f;

	if (l > 4 && strcmp(ca + l - 4, ".crt") == 0)
		snprintf(path, sizeof(path), "%.*s.crl", (int)(l - 4), ca);
	else
		snprintf(path, sizeof(path), "%s.crl", ca);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	crl = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
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
	ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (ctx == NULL)
		goto fail;
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION))
		goto fail;
	if (!SSL_CTX_set1_groups_list(ctx, "X25519:P-256"))
		goto fail;
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		tls_errstr(tmp, sizeof(tmp));
		snprintf(err, errlen, "%s: cannot load certificate: %s", cert, tmp);
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		tls_errstr(tmp, sizeof(tmp));
		snprintf(err, errlen, "%s: cannot load key: %s", key, tmp);
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
		tls_errstr(tmp, sizeof(tmp));
		snprintf(err, errlen, "%s: cannot load CA: %s", ca, tmp);
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (server && load_crl(ctx, ca, err, errlen) < 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
	    server ? server_verify_cb : NULL);
	SSL_CTX_set_verify_depth(ctx, 2);
	SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
	/* No session tickets: one connection per command, nothing to resume. */
	SSL_CTX_set_num_tickets(ctx, 0);
	if (server)
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
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
tls_cert_not_after(const char *certfile, int64_t *t)
{
	FILE *f = fopen(certfile, "re");
	struct tm tm;
	X509 *x;
	int rc = -1;

	if (f == NULL)
		return -1;
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (x != NULL && ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1) {
		*t = (int64_t)timegm(&tm);
		rc = 0;
	}
	X509_free(x);
	return rc;
}
