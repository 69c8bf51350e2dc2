/* Cluster CA for knob: Ed25519 keys and X.509v3 certificates built with
 * OpenSSL 3's API (never the openssl command).
 *
 * DIR/ca.crt, DIR/ca.key        the CA (self-signed, CA:TRUE, 10 years)
 * DIR/NAME.crt, DIR/NAME.key    one per node (OU=node, serverAuth) or for
 *                               the controller (OU=controller, clientAuth)
 *
 * Key files are created 0600 with O_EXCL, so they are never readable by
 * anyone else, not even for a moment, and nothing is ever overwritten. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/stat.h>

#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "knobctl.h"
#include "tls.h"
#include "ca.h"

#define CA_DAYS		3650	/* CA validity: 10 years */
#define CERT_DAYS	1826	/* leaf validity: 5 years */
#define BACKDATE_S	3600	/* notBefore an hour back, for clock skew */
#define CA_ORG		"knob"
#define KEY_MODE	0600
#define CERT_MODE	0644

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* err = "what: <drained OpenSSL error queue>". */
static void
setssl(char *err, size_t errlen, const char *what)
{
	char buf[512];

	tls_errstr(buf, sizeof(buf));
	seterr(err, errlen, "%s: %s", what, buf);
}

/* Names become a CN, a subjectAltName and a file name in the CA directory:
 * ASCII letters, digits, '-', '.', '_' (or an IPv6 literal), at most
 * CA_NAME_MAX characters (the X.509 upper bound for a CN), not starting
 * with '.' or '-', and not "ca". */
int
ca_name_check(const char *name, char *err, size_t errlen)
{
	static const char extra[] = "-._";
	unsigned char ip6[16];
	size_t len = strlen(name);

	if (len == 0) {
		seterr(err, errlen, "empty certificate name");
		return -1;
	}
	if (len > CA_NAME_MAX) {
		seterr(err, errlen, "%.32s...: name longer than %d characters "
		    "(the X.509 limit for a common name)", name, CA_NAME_MAX);
		return -1;
	}
	if (name[0] == '.' || name[0] == '-') {
		seterr(err, errlen, "%s: name must not start with '%c'", name, name[0]);
		return -1;
	}
	if (strcmp(name, "ca") == 0) {
		seterr(err, errlen, "ca: name reserved for the CA itself");
		return -1;
	}
	if (inet_pton(AF_INET6, name, ip6) == 1)
		return 0;
	for (const char *p = name; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr(extra, c) != NULL)
			continue;
		if (c >= 0x20 && c < 0x7f)
			seterr(err, errlen, "%s: invalid character '%c' in name "
			    "(letters, digits, '-', '.', '_')", name, c);
		else
			seterr(err, errlen, "invalid byte 0x%02x in name "
			    "(letters, digits, '-', '.', '_')", c);
		return -1;
	}
	return 0;
}

/* DIR/FILE into buf; 0 or -1 with err. */
static int
ca_path(char *buf, size_t len, const char *dir, const char *name, const char *ext,
    char *err, size_t errlen)
{
	int n = snprintf(buf, len, "%s/%s%s", dir, name, ext);

	if (n < 0 || (size_t)n >= len) {
		seterr(err, errlen, "%s: path too long", dir);
		return -1;
	}
	return 0;
}

/* Fresh Ed25519 key; caller frees with EVP_PKEY_free.  NULL with err. */
static EVP_PKEY *
new_key(char *err, size_t errlen)
{
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");

	if (key == NULL)
		setssl(err, errlen, "Ed25519 key generation");
	return key;
}

/* A random positive 128-bit serial number. 0 or -1. */
static int
set_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn = NULL;
	int rc = -1;

	if (RAND_bytes(b, sizeof(b)) != 1)
		goto out;
	b[0] |= 0x01;	/* never zero; BN_bin2bn gives a positive number */
	if ((bn = BN_bin2bn(b, sizeof(b), NULL)) == NULL)
		goto out;
	if (BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL)
		goto out;
	rc = 0;
out:
	BN_free(bn);
	return rc;
}

/* Append one text attribute to a name. 0 or -1. */
static int
name_add(X509_NAME *n, const char *field, const char *value)
{
	return X509_NAME_add_entry_by_txt(n, field, MBSTRING_UTF8,
	    (const unsigned char *)value, -1, -1, 0) == 1 ? 0 : -1;
}

/* Subject O=knob[, OU=ou], CN=cn set on x. 0 or -1. */
static int
set_subject(X509 *x, const char *cn, const char *ou)
{
	X509_NAME *n = X509_NAME_new();
	int rc = -1;

	if (n == NULL)
		return -1;
	if (name_add(n, "O", CA_ORG) < 0)
		goto out;
	if (ou != NULL && name_add(n, "OU", ou) < 0)
		goto out;
	if (name_add(n, "CN", cn) < 0)
		goto out;
	if (X509_set_subject_name(x, n) != 1)
		goto out;
	rc = 0;
out:
	X509_NAME_free(n);
	return rc;
}

/* Add one v3 extension given in config syntax ("critical,CA:TRUE"). 0 or -1. */
static int
add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, ctx, nid, value);
	int rc;

	if (ext == NULL)
		return -1;
	rc = X509_add_ext(x, ext, -1) == 1 ? 0 : -1;
	X509_EXTENSION_free(ext);
	return rc;
}

/* A v3 certificate skeleton: version, serial, validity (backdated),
 * public key.  Caller frees with X509_free.  NULL on error. */
static X509 *
cert_skeleton(EVP_PKEY *key, long days)
{
	X509 *x = X509_new();

	if (x == NULL)
		return NULL;
	if (X509_set_version(x, X509_VERSION_3) != 1 || set_serial(x) < 0 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -BACKDATE_S) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), (int)days, 0, NULL) == NULL ||
	    X509_set_pubkey(x, key) != 1) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* PEM emitters for write_excl. */
static int
emit_key(FILE *fp, void *arg)
{
	return PEM_write_PrivateKey(fp, arg, NULL, NULL, 0, NULL, NULL) == 1 ? 0 : -1;
}

static int
emit_cert(FILE *fp, void *arg)
{
	return PEM_write_X509(fp, arg) == 1 ? 0 : -1;
}

/* Create path exclusively with mode (the mode is set at open, never wider)
 * and fill it through emit; fsync'd.  On failure the file is removed.
 * 0 or -1 with err. */
static int
write_excl(const char *path, mode_t mode, int (*emit)(FILE *, void *), void *arg,
    char *err, size_t errlen)
{
	FILE *fp = NULL;
	int fd, rc = -1;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* umask can only have narrowed the mode; make it exact (certs 0644). */
	if (fchmod(fd, mode) < 0) {
		seterr(err, errlen, "%s: chmod: %s", path, strerror(errno));
		close(fd);
		goto out;
	}
	if ((fp = fdopen(fd, "w")) == NULL) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		goto out;
	}
	if (emit(fp, arg) < 0) {
		setssl(err, errlen, path);
		goto out;
	}
	if (fflush(fp) != 0 || fsync(fileno(fp)) < 0) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fp != NULL && fclose(fp) != 0 && rc == 0) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		rc = -1;
	}
	if (rc < 0)
		unlink(path);
	return rc;
}

/* Write key then certificate, both exclusively; if the certificate cannot
 * be written the key is removed again.  0 or -1 with err. */
static int
write_pair(const char *keypath, EVP_PKEY *key, const char *crtpath, X509 *x,
    char *err, size_t errlen)
{
	if (write_excl(keypath, KEY_MODE, emit_key, key, err, errlen) < 0)
		return -1;
	if (write_excl(crtpath, CERT_MODE, emit_cert, x, err, errlen) < 0) {
		unlink(keypath);
		return -1;
	}
	return 0;
}

/* -1 with err when path exists (or cannot be checked), else 0. */
static int
must_not_exist(const char *path, const char *what, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st) == 0) {
		seterr(err, errlen, "%s: %s already exists; refusing to overwrite it",
		    path, what);
		return -1;
	}
	if (errno != ENOENT) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Create DIR (0700) holding a new self-signed Ed25519 CA. 0 or -1 with err. */
int
ca_init(const char *dir, char *err, size_t errlen)
{
	char crt[PATH_MAX], keyp[PATH_MAX], cn[64];
	unsigned char rnd[4];
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	X509V3_CTX v3;
	struct stat st;
	int rc = -1;

	if (dir == NULL || dir[0] == '\0') {
		seterr(err, errlen, "empty CA directory name");
		return -1;
	}
	if (ca_path(crt, sizeof(crt), dir, "ca", ".crt", err, errlen) < 0 ||
	    ca_path(keyp, sizeof(keyp), dir, "ca", ".key", err, errlen) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0) {
		if (errno != EEXIST) {
			seterr(err, errlen, "%s: %s", dir, strerror(errno));
			return -1;
		}
		if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			seterr(err, errlen, "%s: exists and is not a directory", dir);
			return -1;
		}
	}
	if (must_not_exist(crt, "a CA certificate", err, errlen) < 0 ||
	    must_not_exist(keyp, "a CA key", err, errlen) < 0)
		return -1;

	if ((key = new_key(err, errlen)) == NULL)
		goto out;
	/* A random tag in the CN tells two clusters' CAs apart in logs. */
	if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
		setssl(err, errlen, "random");
		goto out;
	}
	snprintf(cn, sizeof(cn), "knob cluster CA %02x%02x%02x%02x",
	    rnd[0], rnd[1], rnd[2], rnd[3]);
	if ((x = cert_skeleton(key, CA_DAYS)) == NULL || set_subject(x, cn, NULL) < 0 ||
	    X509_set_issuer_name(x, X509_get_subject_name(x)) != 1) {
		setssl(err, errlen, "CA certificate");
		goto out;
	}
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	if (add_ext(x, &v3, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(x, &v3, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(x, &v3, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(x, &v3, NID_authority_key_identifier, "keyid:always") < 0) {
		setssl(err, errlen, "CA certificate extensions");
		goto out;
	}
	/* Ed25519 signs the whole message: no separate digest. */
	if (X509_sign(x, key, NULL) <= 0) {
		setssl(err, errlen, "signing the CA certificate");
		goto out;
	}
	if (write_pair(keyp, key, crt, x, err, errlen) < 0)
		goto out;
	rc = 0;
out:
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

/* Read a PEM certificate; caller frees. NULL with err. */
static X509 *
read_cert(const char *path, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "re");
	X509 *x;

	if (fp == NULL) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	x = PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	if (x == NULL)
		setssl(err, errlen, path);
	return x;
}

/* Read a PEM private key (unencrypted); caller frees. NULL with err. */
static EVP_PKEY *
read_key(const char *path, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "re");
	EVP_PKEY *k;

	if (fp == NULL) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	k = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
	fclose(fp);
	if (k == NULL)
		setssl(err, errlen, path);
	return k;
}

/* Load DIR's CA certificate and key and check they belong together.
 * Caller frees both. 0 or -1 with err. */
static int
load_ca(const char *dir, X509 **cacert, EVP_PKEY **cakey, char *err, size_t errlen)
{
	char crt[PATH_MAX], keyp[PATH_MAX];

	*cacert = NULL;
	*cakey = NULL;
	if (ca_path(crt, sizeof(crt), dir, "ca", ".crt", err, errlen) < 0 ||
	    ca_path(keyp, sizeof(keyp), dir, "ca", ".key", err, errlen) < 0)
		return -1;
	if ((*cacert = read_cert(crt, err, errlen)) == NULL)
		return -1;
	if ((*cakey = read_key(keyp, err, errlen)) == NULL)
		goto fail;
	if (X509_check_private_key(*cacert, *cakey) != 1) {
		ERR_clear_error();
		seterr(err, errlen, "%s does not match %s", keyp, crt);
		goto fail;
	}
	return 0;
fail:
	X509_free(*cacert);
	EVP_PKEY_free(*cakey);
	*cacert = NULL;
	*cakey = NULL;
	return -1;
}

/* Issue DIR/NAME.crt and DIR/NAME.key signed by DIR's CA: OU=controller
 * with clientAuth, or OU=node with serverAuth.  Existing files are never
 * overwritten.  0 or -1 with err. */
int
ca_issue(const char *dir, const char *name, int controller, char *err, size_t errlen)
{
	char crt[PATH_MAX], keyp[PATH_MAX], san[2 * CA_NAME_MAX + 16];
	unsigned char ip[16];
	EVP_PKEY *cakey = NULL, *key = NULL;
	X509 *cacert = NULL, *x = NULL;
	X509V3_CTX v3;
	int rc = -1;

	if (ca_name_check(name, err, errlen) < 0)
		return -1;
	if (ca_path(crt, sizeof(crt), dir, name, ".crt", err, errlen) < 0 ||
	    ca_path(keyp, sizeof(keyp), dir, name, ".key", err, errlen) < 0)
		return -1;
	if (must_not_exist(crt, "a certificate", err, errlen) < 0 ||
	    must_not_exist(keyp, "a key", err, errlen) < 0)
		return -1;
	if (load_ca(dir, &cacert, &cakey, err, errlen) < 0)
		return -1;

	if (inet_pton(AF_INET6, name, ip) == 1)
		snprintf(san, sizeof(san), "IP:%s", name);
	else if (inet_pton(AF_INET, name, ip) == 1)
		snprintf(san, sizeof(san), "DNS:%s,IP:%s", name, name);
	else
		snprintf(san, sizeof(san), "DNS:%s", name);

	if ((key = new_key(err, errlen)) == NULL)
		goto out;
	if ((x = cert_skeleton(key, CERT_DAYS)) == NULL ||
	    set_subject(x, name, controller ? KNOB_ROLE_CONTROLLER : KNOB_ROLE_NODE) < 0 ||
	    X509_set_issuer_name(x, X509_get_subject_name(cacert)) != 1) {
		setssl(err, errlen, name);
		goto out;
	}
	/* Never outlive the CA. */
	if (ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(cacert)) > 0 &&
	    X509_set1_notAfter(x, X509_get0_notAfter(cacert)) != 1) {
		setssl(err, errlen, name);
		goto out;
	}
	X509V3_set_ctx(&v3, cacert, x, NULL, NULL, 0);
	if (add_ext(x, &v3, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, &v3, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(x, &v3, NID_ext_key_usage, controller ? "clientAuth" : "serverAuth") < 0 ||
	    add_ext(x, &v3, NID_subject_alt_name, san) < 0 ||
	    add_ext(x, &v3, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(x, &v3, NID_authority_key_identifier, "keyid:always") < 0) {
		setssl(err, errlen, "certificate extensions");
		goto out;
	}
	if (X509_sign(x, cakey, NULL) <= 0) {
		setssl(err, errlen, "signing the certificate");
		goto out;
	}
	if (write_pair(keyp, key, crt, x, err, errlen) < 0)
		goto out;
	rc = 0;
out:
	X509_free(x);
	EVP_PKEY_free(key);
	X509_free(cacert);
	EVP_PKEY_free(cakey);
	return rc;
}
