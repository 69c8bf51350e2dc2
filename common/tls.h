/* Mutual TLS 1.3 with the cluster CA.  Certificates carry the node name in
 * CN and a DNS subjectAltName, and the role in OU: "controller" or "node".
 * Ed25519 keys, X25519 key exchange. */
#ifndef KNOB_TLS_H
#define KNOB_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>

#define KNOB_ROLE_CONTROLLER "controller"
#define KNOB_ROLE_NODE "node"

/* Do cert, key and ca (in the order tls_ctx_new loads them) name
 * something there that is not a directory?  0, else -1 with "PATH: cannot
 * load WHAT: REASON" in err: one clear error, not OpenSSL's PEM parse of
 * a directory ("no start line").  A NULL path is not checked. */
int tls_paths_check(const char *ca, const char *cert, const char *key, char *err,
    size_t errlen);
/* server=1 for knobd, 0 for knobctl.  NULL with err on failure. */
SSL_CTX *tls_ctx_new(int server, const char *ca, const char *cert, const char *key,
    char *err, size_t errlen);
/* Subject CN and OU of the verified peer certificate. 0 or -1. */
int tls_peer_identity(SSL *ssl, char *cn, size_t cnlen, char *ou, size_t oulen);
/* CN and OU of a certificate file (the agent learns its own node name). */
int tls_cert_identity(const char *certfile, char *cn, size_t cnlen, char *ou, size_t oulen);
/* When certfile's certificate expires (unix seconds). 0 or -1. */
int tls_cert_not_after(const char *certfile, int64_t *t);
/* When x expires (unix seconds). 0, or -1 (no x, a date OpenSSL cannot read). */
int tls_x509_not_after(const X509 *x, int64_t *t);
/* Is x past its notAfter now, as verification would say (0 for no x)? */
int tls_x509_expired(const X509 *x);
#define TLS_HASH_LEN 32
/* The directory holding CA certificate file ca ("." for a bare name). */
void tls_ca_dir(const char *ca, char *buf, size_t len);
/* The CRL of the CA whose certificate is in directory dir: always
 * DIR/ca.crl, whatever the certificate is called (ca.crt, trust.crt).
 * knobctl ca revoke writes it there, bootstrap pushes it, knobctl and
 * knobd load it beside their CA certificate. */
#define TLS_CRL_FILE "ca.crl"
void tls_crl_path(const char *dir, char *buf, size_t len);
/* SHA-256 over the CA certificate file, its CRL (if any) and the file
 * extra (may be NULL): what session tickets are bound to.  0 or -1. */
int tls_trust_hash(const char *ca, const char *extra, unsigned char out[TLS_HASH_LEN]);
/* Agent side: session lifetime and ticket key rotation of server context
 * ctx, in seconds (defaults 3600 and 1800; a previous key still decrypts
 * until it is rotate + lifetime old).  Tests shorten them (knobd
 * --test-hooks --test-ticket-times).  0, or -1 when ctx has no tickets. */
int tls_ticket_times(SSL_CTX *ctx, unsigned lifetime_s, unsigned rotate_s);
/* Fill buf with OpenSSL's error queue, drained. */
void tls_errstr(char *buf, size_t len);

#endif
