/* Cluster CA for knob: Ed25519 keys and X.509v3 certificates built with
 * OpenSSL 3's API (never the openssl command).
 *
 * DIR/ca.crt, DIR/ca.key        the CA (self-signed, CA:TRUE, 10 years)
 * DIR/NAME.crt, DIR/NAME.key    one per node (OU=node, serverAuth) or for
 *                               the controller (OU=controller, clientAuth)
 *
 * Key files are created 0600 with O_EXCL, so they are never readable by
 * anyone else, not even for a moment, and nothing is ever overwritten. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/file.h>
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
#include "keyfile.h"
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
static int record_issued(const char *dir, const char *name, X509 *x, char *err, size_t errlen);

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

static int renew_recover(const char *dir, int fix, char *err, size_t errlen);

/* ca_lock's fd, once held, after a renew a crash left half done is
 * finished or undone (renew_recover); -1 with err (the lock let go) when
 * it cannot be. */
static int
ca_locked(const char *dir, int fd, char *err, size_t errlen)
{
	if (renew_recover(dir, 1, err, errlen) >= 0)
		return fd;
	close(fd);
	return -1;
}

/* Hold DIR/ca.lock (flock, exclusive) for one change to DIR: two admins'
 * ca revoke and ca renew take turns, so that neither's revocation, CRL or
 * renewed pair is lost or mixed with the other's (issuing a new name needs
 * no turn: its files are created O_EXCL, its record appended).  Waits
 * (said once on stderr) while another holds it.  Once held, a renew a
 * crash left half done is completed or undone.  The fd for ca_unlock, or
 * -1 with err. */
static int
ca_lock(const char *dir, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int fd;

	if (ca_path(path, sizeof(path), dir, "ca", ".lock", err, errlen) < 0)
		return -1;
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return ca_locked(dir, fd, err, errlen);
	if (errno == EWOULDBLOCK)
		fprintf(stderr, "knobctl: %s: another knobctl is changing this CA (ca revoke "
		    "or ca renew); waiting for it\n", path);
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			seterr(err, errlen, "%s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
	return ca_locked(dir, fd, err, errlen);
}

/* Release ca_lock's fd (-1: nothing held). */
static void
ca_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
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

/* The new CA's lifetime in days: CA_DAYS, or for tests only
 * KNOB_TEST_CA_DAYS (1 to CA_DAYS), to make a CA that is near its end. */
static long
ca_days(void)
{
	return env_number("KNOB_TEST_CA_DAYS", 1, CA_DAYS, CA_DAYS);
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
	if ((x = cert_skeleton(key, ca_days())) == NULL || set_subject(x, cn, NULL) < 0 ||
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

/* Read one PEM object from path: a certificate, or with key an unencrypted
 * private key; caller frees.  NULL with err. */
static void *
read_pem(const char *path, int key, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "re");
	void *o;

	if (fp == NULL) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	o = key ? (void *)PEM_read_PrivateKey(fp, NULL, NULL, NULL) :
	    (void *)PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	if (o == NULL)
		setssl(err, errlen, path);
	return o;
}

static X509 *
read_cert(const char *path, char *err, size_t errlen)
{
	return read_pem(path, 0, err, errlen);
}

static EVP_PKEY *
read_key(const char *path, char *err, size_t errlen)
{
	return read_pem(path, 1, err, errlen);
}

/* Load DIR's CA certificate and key (its owner's alone) and check they
 * belong together.  Caller frees both. 0 or -1 with err. */
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
	/* its owner's alone (keyfile.h), as OpenSSH refuses such an identity */
	if ((*cakey = key_file_load(keyp, "whoever reads it can issue a controller certificate "
	    "every agent trusts", err, errlen)) == NULL)
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

/* The subjectAltName of a leaf for name: DNS, IP or both. */
static void
leaf_san(const char *name, char *san, size_t len)
{
	unsigned char ip[16];

	if (inet_pton(AF_INET6, name, ip) == 1)
		snprintf(san, len, "IP:%s", name);
	else if (inet_pton(AF_INET, name, ip) == 1)
		snprintf(san, len, "DNS:%s,IP:%s", name, name);
	else
		snprintf(san, len, "DNS:%s", name);
}

/* make_leaf with an explicit subjectAltName list ("DNS:a,DNS:b"). */
static int
make_leaf_san(X509 *cacert, EVP_PKEY *cakey, const char *name, const char *san, int controller,
    EVP_PKEY **keyp, X509 **xp, char *err, size_t errlen)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	X509V3_CTX v3;

	if ((key = new_key(err, errlen)) == NULL)
		goto fail;
	if ((x = cert_skeleton(key, CERT_DAYS)) == NULL ||
	    set_subject(x, name, controller ? KNOB_ROLE_CONTROLLER : KNOB_ROLE_NODE) < 0 ||
	    X509_set_issuer_name(x, X509_get_subject_name(cacert)) != 1) {
		setssl(err, errlen, name);
		goto fail;
	}
	/* Never outlive the CA. */
	if (ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(cacert)) > 0 &&
	    X509_set1_notAfter(x, X509_get0_notAfter(cacert)) != 1) {
		setssl(err, errlen, name);
		goto fail;
	}
	X509V3_set_ctx(&v3, cacert, x, NULL, NULL, 0);
	if (add_ext(x, &v3, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, &v3, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(x, &v3, NID_ext_key_usage, controller ? "clientAuth" : "serverAuth") < 0 ||
	    add_ext(x, &v3, NID_subject_alt_name, san) < 0 ||
	    add_ext(x, &v3, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(x, &v3, NID_authority_key_identifier, "keyid:always") < 0) {
		setssl(err, errlen, "certificate extensions");
		goto fail;
	}
	if (X509_sign(x, cakey, NULL) <= 0) {
		setssl(err, errlen, "signing the certificate");
		goto fail;
	}
	*keyp = key;
	*xp = x;
	return 0;
fail:
	X509_free(x);
	EVP_PKEY_free(key);
	return -1;
}

/* A fresh key and a certificate for name signed by the CA: OU=controller
 * with clientAuth, or OU=node with serverAuth.  The caller frees *keyp and
 * *xp.  0 or -1 with err. */
static int
make_leaf(X509 *cacert, EVP_PKEY *cakey, const char *name, int controller, EVP_PKEY **keyp,
    X509 **xp, char *err, size_t errlen)
{
	char san[2 * CA_NAME_MAX + 16];

	leaf_san(name, san, sizeof(san));
	return make_leaf_san(cacert, cakey, name, san, controller, keyp, xp, err, errlen);
}

/* A new leaf for name from DIR's CA (see make_leaf); the caller frees *keyp
 * and *xp.  0 or -1 with err. */
static int
issue_leaf(const char *dir, const char *name, int controller, EVP_PKEY **keyp, X509 **xp,
    char *err, size_t errlen)
{
	EVP_PKEY *cakey = NULL;
	X509 *cacert = NULL;
	int rc;

	if (load_ca(dir, &cacert, &cakey, err, errlen) < 0)
		return -1;
	rc = make_leaf(cacert, cakey, name, controller, keyp, xp, err, errlen);
	X509_free(cacert);
	EVP_PKEY_free(cakey);
	return rc;
}

/* Issue DIR/NAME.crt and DIR/NAME.key signed by DIR's CA: OU=controller
 * with clientAuth, or OU=node with serverAuth.  Existing files are never
 * overwritten.  0 or -1 with err. */
int
ca_issue(const char *dir, const char *name, int controller, char *err, size_t errlen)
{
	char crt[PATH_MAX], keyp[PATH_MAX];
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	int rc;

	if (ca_name_check(name, err, errlen) < 0)
		return -1;
	if (ca_path(crt, sizeof(crt), dir, name, ".crt", err, errlen) < 0 ||
	    ca_path(keyp, sizeof(keyp), dir, name, ".key", err, errlen) < 0)
		return -1;
	if (must_not_exist(crt, "a certificate", err, errlen) < 0 ||
	    must_not_exist(keyp, "a key", err, errlen) < 0)
		return -1;
	if (issue_leaf(dir, name, controller, &key, &x, err, errlen) < 0)
		return -1;
	rc = record_issued(dir, name, x, err, errlen);
	if (rc == 0)
		rc = write_pair(keyp, key, crt, x, err, errlen);
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

/* The PEM text of a key or certificate; malloc'd, NULL on error. */
static char *
pem_string(EVP_PKEY *key, X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *s = NULL;
	long n;
	int ok;

	if (b == NULL)
		return NULL;
	ok = key ? PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) : PEM_write_bio_X509(b, x);
	if (ok == 1 && (n = BIO_get_mem_data(b, &data)) > 0) {
		s = xmalloc((size_t)n + 1);
		memcpy(s, data, (size_t)n);
		s[n] = '\0';
	}
	BIO_free(b);
	return s;
}

int
ca_issue_pem(const char *dir, const char *name, int controller, char **crt, char **key,
    char *err, size_t errlen)
{
	EVP_PKEY *k = NULL;
	X509 *x = NULL;
	int rc = 0;

	*crt = *key = NULL;
	if (ca_name_check(name, err, errlen) < 0 ||
	    issue_leaf(dir, name, controller, &k, &x, err, errlen) < 0)
		return -1;
	if (record_issued(dir, name, x, err, errlen) < 0) {
		X509_free(x);
		EVP_PKEY_free(k);
		return -1;
	}
	*crt = pem_string(NULL, x);
	*key = pem_string(k, NULL);
	if (*crt == NULL || *key == NULL) {
		free(*crt);
		free(*key);
		*crt = *key = NULL;
		setssl(err, errlen, "PEM encoding");
		rc = -1;
	}
	X509_free(x);
	EVP_PKEY_free(k);
	return rc;
}

/* A serial of a list and its first place there. */
struct sidx {
	const char *serial;
	size_t at;
};

/* A list's serials sorted once, each at its first place, for bsearch: ca
 * list matches thousands of certificates against thousands of records, ca
 * revoke thousands of names (there every place of each name). */
struct sset {
	struct sidx *v;
	size_t n;
};

/* qsort: by serial, then by place. */
static int
sidx_cmp(const void *a, const void *b)
{
	const struct sidx *x = a, *y = b;
	int c = strcmp(x->serial, y->serial);

	if (c != 0)
		return c;
	return x->at < y->at ? -1 : x->at > y->at;
}

/* bsearch: a serial against an sidx. */
static int
sidx_key(const void *key, const void *e)
{
	return strcmp(key, ((const struct sidx *)e)->serial);
}

/* v's strings with their places, sorted (v must outlive it). */
static void
sset_make_all(struct sset *set, const struct strvec *v)
{
	set->v = xcalloc(v->n ? v->n : 1, sizeof(*set->v));
	for (size_t i = 0; i < v->n; i++)
		set->v[i] = (struct sidx){ v->v[i], i };
	qsort(set->v, v->n, sizeof(*set->v), sidx_cmp);
	set->n = v->n;
}

/* The set of v's serials (v must outlive it). */
static void
sset_make(struct sset *set, const struct strvec *v)
{
	size_t n = 0;

	sset_make_all(set, v);
	for (size_t i = 0; i < set->n; i++)	/* the first place of each serial */
		if (n == 0 || strcmp(set->v[n - 1].serial, set->v[i].serial) != 0)
			set->v[n++] = set->v[i];
	set->n = n;
}

/* Index in set->v of the first entry for serial, or -1. */
static long
sset_first(const struct sset *set, const char *serial)
{
	const struct sidx *e = set->n ? bsearch(serial, set->v, set->n, sizeof(*set->v),
	    sidx_key) : NULL;

	if (e == NULL)
		return -1;
	while (e > set->v && strcmp(e[-1].serial, serial) == 0)	/* sset_make_all's */
		e--;
	return e - set->v;
}

/* Where serial first is in set's list, or -1. */
static long
sset_find(const struct sset *set, const char *serial)
{
	long i = sset_first(set, serial);

	return i < 0 ? -1 : (long)set->v[i].at;
}

/* ------------------------------------------------------------ revocation
 * DIR/revoked.txt lists "SERIAL-HEX NAME" per revoked certificate; DIR/ca.crl
 * is the CRL made from it, signed by the CA, valid as long as the CA. */

/* A serial number in hex (upper case, whole bytes); malloc'd. */
static char *
asn1_hex(const ASN1_INTEGER *ai)
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(ai, NULL);
	char *h = bn ? BN_bn2hex(bn) : NULL, *s = h ? xstrdup(h) : NULL;

	OPENSSL_free(h);
	BN_free(bn);
	return s;
}

/* Serial of x in hex; malloc'd. */
static char *
serial_hex(X509 *x)
{
	return asn1_hex(X509_get0_serialNumber(x));
}

char *
ca_cert_serial(const char *path, char *err, size_t errlen)
{
	X509 *x = read_cert(path, err, errlen);
	char *hex = x ? serial_hex(x) : NULL;

	X509_free(x);
	return hex;
}

#define SERIAL_HEX_MAX 40	/* RFC 5280: a serial is at most 20 octets */

/* The serial token hex (NUL-terminated) in canonical form, as serial_hex
 * writes it (upper case, whole bytes); malloc'd, NULL when it is not 1 to
 * SERIAL_HEX_MAX hex digits and nothing else. */
static char *
serial_canon(const char *hex)
{
	size_t len = strlen(hex);
	BIGNUM *bn = NULL;
	char *h = NULL, *s = NULL;

	if (len == 0 || len > SERIAL_HEX_MAX || strspn(hex, "0123456789abcdefABCDEF") != len)
		return NULL;
	if (BN_hex2bn(&bn, hex) == (int)len && (h = BN_bn2hex(bn)) != NULL)
		s = xstrdup(h);
	OPENSSL_free(h);
	BN_free(bn);
	return s;
}

/* One "SERIAL NAME" line (CR and trailing blanks dropped, blank lines
 * skipped): its serial (canonical) onto v, and its name onto names when
 * that is not NULL.  0, or -1 with
 * "PATH:LINE: ..." in err. */
static int
serial_line(char *l, const char *path, int lineno, struct strvec *v, struct strvec *names,
    char *err, size_t errlen)
{
	size_t len = strlen(l), sl;
	const char *who;
	char *canon;

	while (len && strchr(" \t\r", l[len - 1]))
		l[--len] = '\0';
	if (len == 0)
		return 0;
	sl = strcspn(l, " \t");
	who = l + sl + strspn(l + sl, " \t");
	l[sl] = '\0';
	if ((canon = serial_canon(l)) == NULL) {
		seterr(err, errlen, "%s:%d: bad serial '%.48s' (1 to %d hex digits, nothing else)",
		    path, lineno, l, SERIAL_HEX_MAX);
		return -1;
	}
	if (*who == '\0') {
		seterr(err, errlen, "%s:%d: no name after the serial %s", path, lineno, canon);
		free(canon);
		return -1;
	}
	strvec_push_owned(v, canon);
	if (names)
		strvec_push(names, who);
	return 0;
}

/* The serials of DIR/FILE's "SERIAL NAME" lines into v, their names into
 * names (NULL: not wanted).
 * No file: none.  0, or -1 with err (a bad line is "PATH:LINE: ...", and
 * nothing of the file counts). */
static int
read_records(const char *dir, const char *file, struct strvec *v, struct strvec *names,
    char *err, size_t errlen)
{
	char path[PATH_MAX], *buf = NULL, *l, *nl;
	int r, lineno = 0, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((r = read_file_bounded(path, 16 << 20, &buf, NULL)) < 0) {
		if (r == -ENOENT)
			return 0;
		seterr(err, errlen, "%s: %s", path, strerror(-r));
		return -1;
	}
	for (l = buf; rc == 0 && l != NULL && *l != '\0'; l = nl) {
		if ((nl = strchr(l, '\n')) != NULL)
			*nl++ = '\0';
		rc = serial_line(l, path, ++lineno, v, names, err, errlen);
	}
	free(buf);
	return rc;
}

/* The serials in DIR/revoked.txt into v.  0 or -1 with err. */
static int
read_revoked(const char *dir, struct strvec *v, char *err, size_t errlen)
{
	return read_records(dir, CA_REVOKED_FILE, v, NULL, err, errlen);
}

/* Is x's serial among the revoked ones? */
static int
cert_revoked(const struct strvec *revoked, X509 *x)
{
	char *hex = serial_hex(x);
	int in = hex && strvec_contains(revoked, hex);

	free(hex);
	return in;
}

/* Take back the done bytes of buf that an append to fd (open for read
 * and write) wrote before it failed, when they are still the file's last
 * bytes (another knobctl appended nothing after them). */
static void
append_undo(int fd, const char *buf, size_t done)
{
	struct stat st;
	char *tail;

	if (done == 0 || fstat(fd, &st) < 0 || st.st_size < (off_t)done)
		return;
	tail = xmalloc(done);
	if (pread(fd, tail, done, st.st_size - (off_t)done) == (ssize_t)done &&
	    memcmp(tail, buf, done) == 0 && ftruncate(fd, st.st_size - (off_t)done) == 0)
		fsync(fd);
	free(tail);
}

/* Append buf (len bytes of whole "HEX NAME" lines) to DIR/FILE in one
 * write and one fsync.  On a full disk the part written is taken back:
 * the file never ends in half a record, which the next one would complete
 * into a wrong serial (revoked instead of the right one) or a bad line
 * that stops ca revoke and bootstrap; all of buf is on record or none.
 * 0 or -1 with err. */
static int
append_records(const char *dir, const char *file, const char *buf, size_t len, char *err,
    size_t errlen)
{
	char path[PATH_MAX];
	size_t done = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666)) < 0) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	errno = 0;
	while (done < len && (n = write(fd, buf + done, len - done)) > 0)
		done += (size_t)n;
	if (done == len && fsync(fd) == 0) {
		close(fd);
		return 0;
	}
	seterr(err, errlen, "%s: %s", path, strerror(done < len && errno == 0 ? EIO : errno));
	append_undo(fd, buf, done);
	close(fd);
	return -1;
}

/* Append "HEX NAME" to DIR/FILE, durably and whole (append_records).
 * 0 or -1 with err. */
static int
append_serial(const char *dir, const char *file, const char *hex, const char *name, char *err,
    size_t errlen)
{
	char line[CA_NAME_MAX + 64];
	size_t len;

	len = (size_t)snprintf(line, sizeof(line), "%s %s\n", hex, name);
	if (len >= sizeof(line)) {
		seterr(err, errlen, "%s/%s: record for %s too long", dir, file, name);
		return -1;
	}
	return append_records(dir, file, line, len, err, errlen);
}

/* Put x's serial on record in DIR/issued.txt under name, durably, before
 * the certificate goes anywhere: `ca revoke NAME` finds every certificate
 * issued under the name (ca issue, renew, bootstrap).  0 or -1 with err. */
static int
record_issued(const char *dir, const char *name, X509 *x, char *err, size_t errlen)
{
	char *hex = serial_hex(x);
	int rc;

	if (hex == NULL) {
		seterr(err, errlen, "%s: cannot read the serial number", name);
		return -1;
	}
	rc = append_serial(dir, CA_ISSUED_FILE, hex, name, err, errlen);
	free(hex);
	return rc;
}

/* Add one serial to crl, revoked now. 0 or -1. */
static int
crl_add(X509_CRL *crl, const char *hex, ASN1_TIME *now)
{
	X509_REVOKED *r = X509_REVOKED_new();
	BIGNUM *bn = NULL;
	ASN1_INTEGER *ai = NULL;
	int rc = -1;

	if (r == NULL || BN_hex2bn(&bn, hex) != (int)strlen(hex) ||
	    (ai = BN_to_ASN1_INTEGER(bn, NULL)) == NULL)
		goto out;
	if (X509_REVOKED_set_serialNumber(r, ai) != 1 || X509_REVOKED_set_revocationDate(r, now) != 1)
		goto out;
	if (X509_CRL_add0_revoked(crl, r) != 1)
		goto out;
	r = NULL;
	rc = 0;
out:
	X509_REVOKED_free(r);
	ASN1_INTEGER_free(ai);
	BN_free(bn);
	return rc;
}

/* Write DIR/ca.crl from DIR/revoked.txt. 0 or -1 with err. */
static int
crl_write(const char *dir, X509 *cacert, EVP_PKEY *cakey, char *err, size_t errlen)
{
	struct strvec serials = { 0 };
	X509_CRL *crl = X509_CRL_new();
	/* issued an hour back, as the certificates are: an agent whose clock is
	 * a little behind must not find the CRL "not yet valid" and refuse
	 * every controller */
	ASN1_TIME *now = ASN1_TIME_set(NULL, time(NULL) - BACKDATE_S);
	char path[PATH_MAX], *data;
	BIO *b = NULL;
	long n;
	int rc = -1;

	if (read_revoked(dir, &serials, err, errlen) < 0)
		goto out;
	if (crl == NULL || now == NULL || X509_CRL_set_version(crl, X509_CRL_VERSION_2) != 1 ||
	    X509_CRL_set_issuer_name(crl, X509_get_subject_name(cacert)) != 1 ||
	    X509_CRL_set1_lastUpdate(crl, now) != 1 ||
	    X509_CRL_set1_nextUpdate(crl, X509_get0_notAfter(cacert)) != 1)
		goto ssl;
	for (size_t i = 0; i < serials.n; i++)
		if (crl_add(crl, serials.v[i], now) < 0)
			goto ssl;
	if (X509_CRL_sort(crl) != 1 || X509_CRL_sign(crl, cakey, NULL) <= 0)
		goto ssl;
	if ((b = BIO_new(BIO_s_mem())) == NULL || PEM_write_bio_X509_CRL(b, crl) != 1 ||
	    (n = BIO_get_mem_data(b, &data)) <= 0)
		goto ssl;
	tls_crl_path(dir, path, sizeof(path));
	if (write_file_atomic(path, data, (size_t)n, CERT_MODE) < 0) {
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
	goto out;
ssl:
	setssl(err, errlen, "CRL");
out:
	BIO_free(b);
	ASN1_TIME_free(now);
	X509_CRL_free(crl);
	strvec_free(&serials);
	return rc;
}

/* DIR/NAME.crt's serial onto v when there is one.  0 or -1 with err. */
static int
crt_serial(const char *dir, const char *name, struct strvec *v, char *err, size_t errlen)
{
	char crt[PATH_MAX], *hex;
	X509 *x;

	if (ca_path(crt, sizeof(crt), dir, name, ".crt", err, errlen) < 0)
		return -1;
	if (access(crt, F_OK) < 0 && errno == ENOENT)
		return 0;
	if ((x = read_cert(crt, err, errlen)) == NULL)
		return -1;
	hex = serial_hex(x);
	X509_free(x);
	if (hex == NULL) {
		seterr(err, errlen, "%s: cannot read the serial number", crt);
		return -1;
	}
	strvec_push_owned(v, hex);
	return 0;
}

/* -1 with "nothing issued under name" in err when v is empty, else 0. */
static int
some_serial(const char *dir, const char *name, const struct strvec *v, char *err,
    size_t errlen)
{
	if (v->n > 0)
		return 0;
	seterr(err, errlen, "%s: no certificate issued under this name (no %s/%s.crt, not in "
	    "%s/%s)", name, dir, name, dir, CA_ISSUED_FILE);
	return -1;
}

#define REVOKE_ERR_MAX (PATH_MAX + 512)

/* A "SERIAL NAME" file ca revoke reads once: its serials, looked up by
 * name (every place); err is why it could not be read ("": it was). */
struct by_name {
	struct strvec serials, names;
	struct sset index;
	char err[REVOKE_ERR_MAX];
};

/* What ca revoke reads once for all its names. */
struct revoker {
	const char *dir;
	X509 *cacert;
	EVP_PKEY *cakey;
	char ca_err[REVOKE_ERR_MAX], rev_err[REVOKE_ERR_MAX];	/* "": read */
	struct by_name issued, superseded;
	struct strvec revoked;	/* DIR/revoked.txt's serials, sorted, and those added */
	char *batch;		/* the "SERIAL NAME" lines added, for revoked.txt at once */
	int crl;		/* a name was revoked: DIR/ca.crl is to be written */
	int lock;		/* ca_lock's fd, held from the records read to the CRL written */
};

/* DIR/FILE into b. */
static void
by_name_read(struct by_name *b, const char *dir, const char *file)
{
	if (read_records(dir, file, &b->serials, &b->names, b->err, sizeof(b->err)) < 0) {
		strvec_free(&b->serials);
		strvec_free(&b->names);
	} else
		b->err[0] = '\0';
	sset_make_all(&b->index, &b->names);
}

/* b's serials of name onto v, in file order.  0 or -1 with err. */
static int
by_name_serials(const struct by_name *b, const char *name, struct strvec *v, char *err,
    size_t errlen)
{
	long i = sset_first(&b->index, name);

	if (b->err[0] != '\0') {
		seterr(err, errlen, "%s", b->err);
		return -1;
	}
	for (; i >= 0 && (size_t)i < b->index.n && strcmp(b->index.v[i].serial, name) == 0; i++)
		strvec_push(v, b->serials.v[b->index.v[i].at]);
	return 0;
}

/* Read DIR's CA, then (holding ca_lock: another admin's revocation is
 * either in these records or waits for this CRL) its records and
 * revocations once into r. */
static void
revoker_open(struct revoker *r, const char *dir)
{
	memset(r, 0, sizeof(*r));
	r->dir = dir;
	r->lock = -1;
	if (load_ca(dir, &r->cacert, &r->cakey, r->ca_err, sizeof(r->ca_err)) == 0)
		r->lock = ca_lock(dir, r->ca_err, sizeof(r->ca_err));
	by_name_read(&r->issued, dir, CA_ISSUED_FILE);
	by_name_read(&r->superseded, dir, CA_SUPERSEDED_FILE);
	if (read_revoked(dir, &r->revoked, r->rev_err, sizeof(r->rev_err)) < 0)
		strvec_free(&r->revoked);
	strvec_sort(&r->revoked);
}

/* Free what revoker_open read. */
static void
revoker_close(struct revoker *r)
{
	struct by_name *b[] = { &r->issued, &r->superseded };

	for (size_t i = 0; i < 2; i++) {
		strvec_free(&b[i]->serials);
		strvec_free(&b[i]->names);
		free(b[i]->index.v);
	}
	strvec_free(&r->revoked);
	free(r->batch);
	X509_free(r->cacert);
	EVP_PKEY_free(r->cakey);
	ca_unlock(r->lock);
}

/* Every serial issued under name into v: DIR/NAME.crt's (when there is
 * one), and those in issued.txt and superseded.txt.  0 or -1 with err. */
static int
name_serials(const struct revoker *r, const char *name, struct strvec *v, char *err,
    size_t errlen)
{
	/* the current certificate, every one `ca renew` replaced and every one
	 * bootstrap installed: no certificate of the name stays valid */
	if (crt_serial(r->dir, name, v, err, errlen) < 0 ||
	    by_name_serials(&r->issued, name, v, err, errlen) < 0 ||
	    by_name_serials(&r->superseded, name, v, err, errlen) < 0)
		return -1;
	return some_serial(r->dir, name, v, err, errlen);
}

/* serial into r's batch for DIR/revoked.txt under name, unless it is
 * revoked already: 1 added, 0 not. */
static int
revoke_serial(struct revoker *r, const char *serial, const char *name)
{
	struct strvec *v = &r->revoked;
	char *last;
	size_t at;

	if (strvec_sorted_find(v, serial, &at))
		return 0;
	str_appendf(&r->batch, "%s %s\n", serial, name);
	strvec_push(v, serial);	/* at the end, then moved to its place */
	last = v->v[v->n - 1];
	memmove(v->v + at + 1, v->v + at, (v->n - 1 - at) * sizeof(*v->v));
	v->v[at] = last;
	return 1;
}

/* Revoke name's every certificate in r's batch (not yet revoked.txt nor
 * the CRL); their serials onto done (may be NULL).  1 when it added a
 * serial to the batch, 0 when all were revoked already, or -1 with err. */
static int
revoke_name(struct revoker *r, const char *name, struct strvec *done, char *err,
    size_t errlen)
{
	int added = 0;

	struct strvec all = { 0 };
	int rc = -1;

	if (ca_name_check(name, err, errlen) < 0)
		return -1;
	if (r->ca_err[0] != '\0') {
		seterr(err, errlen, "%s", r->ca_err);
		return -1;
	}
	if (name_serials(r, name, &all, err, errlen) < 0)
		goto out;
	if (r->rev_err[0] != '\0') {
		seterr(err, errlen, "%s", r->rev_err);
		goto out;
	}
	for (size_t i = 0; i < all.n; i++)
		added |= revoke_serial(r, all.v[i], name);
	for (size_t i = 0; done && i < all.n; i++)
		if (!strvec_contains(done, all.v[i]))
			strvec_push(done, all.v[i]);
	r->crl = 1;
	rc = added;
out:
	strvec_free(&all);
	return rc;
}

int
ca_revoke_names(const char *dir, const char *const *names, size_t n, ca_revoke_fn fn,
    void *arg)
{
	struct strvec *done = xcalloc(n ? n : 1, sizeof(*done));
	char **errs = xcalloc(n ? n : 1, sizeof(*errs)), err[REVOKE_ERR_MAX], crlerr[1024] = "";
	int *added = xcalloc(n ? n : 1, sizeof(*added));
	struct revoker r;
	int failed = 0;

	revoker_open(&r, dir);
	for (size_t i = 0; i < n; i++)
		if ((added[i] = revoke_name(&r, names[i], &done[i], err, sizeof(err))) < 0)
			errs[i] = xstrdup(err);
	/* every name's records in one write and one fsync (a retired rack's
	 * 200 names: one, not 200), all of them or none: each name that added
	 * one fails when they cannot be written */
	if (r.batch != NULL && append_records(dir, CA_REVOKED_FILE, r.batch, strlen(r.batch),
	    crlerr, sizeof(crlerr)) < 0)
		for (size_t i = 0; i < n; i++)
			if (added[i] > 0)
				errs[i] = xstrdup(crlerr);
	/* the CRL once for every name: each of them fails when it cannot be
	 * written */
	if (r.crl && crl_write(dir, r.cacert, r.cakey, crlerr, sizeof(crlerr)) < 0)
		for (size_t i = 0; i < n; i++)
			if (errs[i] == NULL)
				errs[i] = xstrdup(crlerr);
	for (size_t i = 0; i < n; i++) {
		failed += errs[i] != NULL;
		fn(arg, names[i], &done[i], errs[i]);
		free(errs[i]);
		strvec_free(&done[i]);
	}
	revoker_close(&r);
	free(added);
	free(errs);
	free(done);
	return failed;
}

/* ca_revoke's ca_revoke_fn: the name's serials and error. */
struct revoke_one {
	struct strvec *done;
	char *err;
	size_t errlen;
};

/* ca_revoke_fn of ca_revoke. */
static void
revoke_one(void *arg, const char *name, const struct strvec *done, const char *err)
{
	struct revoke_one *o = arg;

	(void)name;
	if (err != NULL)
		seterr(o->err, o->errlen, "%s", err);
	for (size_t i = 0; o->done && i < done->n; i++)
		if (!strvec_contains(o->done, done->v[i]))
			strvec_push(o->done, done->v[i]);
}

int
ca_revoke(const char *dir, const char *name, struct strvec *done, char *err, size_t errlen)
{
	struct revoke_one o = { done, err, errlen };

	return ca_revoke_names(dir, &name, 1, revoke_one, &o) ? -1 : 0;
}

/* The serial of this knobctl's certificate in path when it is a
 * controller's (malloc'd), else (none there, unreadable) NULL. */
static char *
own_controller_serial(const char *path)
{
	char role[64] = "", err[256], *hex = NULL;
	X509 *x = NULL;

	if (access(path, F_OK) == 0 && (x = read_cert(path, err, sizeof(err))) != NULL) {
		X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_organizationalUnitName,
		    role, sizeof(role));
		if (strcmp(role, KNOB_ROLE_CONTROLLER) == 0)
			hex = serial_hex(x);
	}
	ERR_clear_error();
	X509_free(x);
	return hex;
}

/* Is serial (may be NULL) among name's?  Errors are not (ca revoke reports
 * them). */
static int
name_has_serial(const struct revoker *r, const char *name, const char *serial)
{
	struct strvec all = { 0 };
	char err[REVOKE_ERR_MAX];
	int in = serial && ca_name_check(name, err, sizeof(err)) == 0 &&
	    name_serials(r, name, &all, err, sizeof(err)) == 0 && strvec_contains(&all, serial);

	strvec_free(&all);
	return in;
}

long
ca_revoke_check(const char *dir, const char *const *names, size_t n, const char *own,
    char *why, size_t whylen)
{
	struct revoker r;
	char *hex;
	long at = -1;

	/* another controller's certificate (a leaked one, an old head's) is
	 * what revocation is for: only this knobctl's own is guarded */
	if (own == NULL || (hex = own_controller_serial(own)) == NULL)
		return -1;
	revoker_open(&r, dir);
	for (size_t i = 0; at < 0 && i < n; i++)
		if (name_has_serial(&r, names[i], hex))
			at = (long)i;
	if (at >= 0)
		seterr(why, whylen, "%s (serial %s), this knobctl's certificate, has role '%s': once "
		    "bootstrap pushes the CRL, every agent refuses a knobctl that uses it (give "
		    "--force to revoke it anyway)", own, hex, KNOB_ROLE_CONTROLLER);
	revoker_close(&r);
	free(hex);
	return at;
}

int
ca_crl_revokes(const char *pem, size_t len, const char *cert, char *why, size_t whylen)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	X509_CRL *crl = b ? PEM_read_bio_X509_CRL(b, NULL, NULL, NULL) : NULL;
	X509_REVOKED *r = NULL;
	X509 *x = NULL;
	char *hex = NULL;
	int rc = -1;

	if (crl == NULL) {
		seterr(why, whylen, "the CRL cannot be parsed");
		goto out;
	}
	if ((x = read_cert(cert, why, whylen)) == NULL)
		goto out;
	rc = X509_CRL_get0_by_serial(crl, &r, X509_get0_serialNumber(x)) == 1;
	if (rc && (hex = serial_hex(x)) != NULL)
		seterr(why, whylen, "%s (serial %s)", cert, hex);
out:
	ERR_clear_error();
	free(hex);
	X509_free(x);
	X509_CRL_free(crl);
	BIO_free(b);
	return rc;
}

/* Days from now until x expires (negative: expired). */
static int
days_left(X509 *x)
{
	int days = 0, secs = 0;

	ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(x));
	return days;
}

/* Does x expire no earlier than cacert?  Leaves never outlive the CA, so
 * one issued now would expire no later than x: reissuing gains nothing. */
static int
ca_limited(X509 *x, X509 *cacert)
{
	return ASN1_TIME_compare(X509_get0_notAfter(x), X509_get0_notAfter(cacert)) >= 0;
}

int
ca_expiry_check(const char *dir, int min_days, char *msg, size_t msglen)
{
	char crt[PATH_MAX];

	snprintf(crt, sizeof(crt), "%s/%s", dir, CA_CERT_FILE);
	return ca_cert_expiry_check(crt, min_days, msg, msglen);
}

int
ca_cert_expiry_check(const char *crt, int min_days, char *msg, size_t msglen)
{
	char date[32] = "?";
	X509 *cacert;
	struct tm tm;
	int days, rc = 0;

	if ((cacert = read_cert(crt, msg, msglen)) == NULL)
		return -1;
	if ((days = days_left(cacert)) < min_days) {
		if (ASN1_TIME_to_tm(X509_get0_notAfter(cacert), &tm) == 1)
			strftime(date, sizeof(date), "%Y-%m-%d", &tm);
		seterr(msg, msglen, "the CA %s expires in %d days (%s): certificates cannot outlive "
		    "it; a new CA is needed", crt, days, date);
		rc = 1;
	}
	X509_free(cacert);
	return rc;
}

int
ca_check_leaf(const char *dir, const char *pem, const char *name, int min_days, char *why,
    size_t whylen)
{
	struct strvec serials = { 0 };
	char cn[CA_NAME_MAX + 1] = "", *hex = NULL;
	EVP_PKEY *capub;
	X509 *cacert = NULL, *x = NULL;
	BIO *b = BIO_new_mem_buf(pem, -1);
	char crt[PATH_MAX];
	int rc = 1;

	snprintf(crt, sizeof(crt), "%s/%s", dir, CA_CERT_FILE);
	if ((cacert = read_cert(crt, why, whylen)) == NULL ||
	    read_revoked(dir, &serials, why, whylen) < 0) {
		rc = -1;
		goto out;
	}
	capub = X509_get0_pubkey(cacert);
	if (b == NULL || (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) == NULL) {
		seterr(why, whylen, "no certificate");
		goto out;
	}
	X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
	hex = serial_hex(x);
	if (X509_verify(x, capub) != 1 ||
	    X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(cacert)) != 0)
		seterr(why, whylen, "certificate not from this CA");
	else if (strcmp(cn, name) != 0)
		seterr(why, whylen, "certificate names '%s'", cn);
	else if (hex && strvec_contains(&serials, hex))
		seterr(why, whylen, "certificate revoked");
	else if (days_left(x) < min_days && !ca_limited(x, cacert))
		seterr(why, whylen, "certificate expires in %d days", days_left(x));
	else
		rc = 0;
out:
	ERR_clear_error();
	free(hex);
	strvec_free(&serials);
	BIO_free(b);
	X509_free(x);
	X509_free(cacert);
	return rc;
}

/* The --test-kill-at hook of ca renew: a crash (SIGKILL) at step of the
 * first certificate renewed when kill_at is that step (0: never). */
static void
renew_step(int kill_at, int step)
{
	if (kill_at == step)
		raise(SIGKILL);
}

/* The four paths of name's renew: DIR/NAME.key, .crt and their .new. */
struct renew_paths {
	char key[PATH_MAX], crt[PATH_MAX], tkey[PATH_MAX + 8], tcrt[PATH_MAX + 8];
};

/* p for name in dir. */
static void
renew_paths(struct renew_paths *p, const char *dir, const char *name)
{
	snprintf(p->crt, sizeof(p->crt), "%s/%s.crt", dir, name);
	snprintf(p->key, sizeof(p->key), "%s/%s.key", dir, name);
	snprintf(p->tcrt, sizeof(p->tcrt), "%s.new", p->crt);
	snprintf(p->tkey, sizeof(p->tkey), "%s.new", p->key);
}

/* The renames that end a renew (the key's unless it is done), then the
 * directory synced.  0 or -1 with err. */
static int
renew_switch(const struct renew_paths *p, int with_key, int kill_at, char *err, size_t errlen)
{
	int r;

	if (with_key && rename(p->tkey, p->key) < 0) {
		seterr(err, errlen, "%s: %s", p->key, strerror(errno));
		return -1;
	}
	renew_step(kill_at, 5);
	if (rename(p->tcrt, p->crt) < 0) {
		seterr(err, errlen, "%s: %s", p->crt, strerror(errno));
		return -1;
	}
	if ((r = sync_parent_dir(p->crt)) < 0) {
		seterr(err, errlen, "%s: sync: %s", p->crt, strerror(-r));
		return -1;
	}
	return 0;
}

/* Write name's new pair (NAME.key.new, NAME.crt.new), both fsync'd and
 * the directory synced; on failure neither stays.  0 or -1 with err. */
static int
renew_write(const struct renew_paths *p, EVP_PKEY *key, X509 *x, int kill_at, char *err,
    size_t errlen)
{
	int r;

	if (write_excl(p->tkey, KEY_MODE, emit_key, key, err, errlen) < 0)
		return -1;
	renew_step(kill_at, 3);
	if (write_excl(p->tcrt, CERT_MODE, emit_cert, x, err, errlen) < 0) {
		unlink(p->tkey);
		return -1;
	}
	if ((r = sync_parent_dir(p->crt)) < 0) {
		seterr(err, errlen, "%s: sync: %s", p->crt, strerror(-r));
		unlink(p->tkey);
		unlink(p->tcrt);
		return -1;
	}
	return 0;
}

/* Reissue DIR/NAME.crt/.key in place (same name and role); the new serial
 * (hex, malloc'd) in *serialp.  Crash-safe with renew_finish: the records
 * first, then the new pair whole under NAME.*.new, then the key renamed,
 * then the certificate.  kill_at: the test hook (renew_step).  0 or -1. */
static int
renew_one(const char *dir, const char *name, X509 *old, X509 *cacert, EVP_PKEY *cakey,
    int kill_at, char **serialp, char *err, size_t errlen)
{
	struct renew_paths p;
	char ou[64] = "";
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	char *hex = NULL;
	int rc = -1;

	X509_NAME_get_text_by_NID(X509_get_subject_name(old), NID_organizationalUnitName, ou,
	    sizeof(ou));
	renew_paths(&p, dir, name);
	if (make_leaf(cacert, cakey, name, strcmp(ou, KNOB_ROLE_CONTROLLER) == 0, &key, &x, err,
	    errlen) < 0 || record_issued(dir, name, x, err, errlen) < 0)
		goto out;
	renew_step(kill_at, 1);
	/* the old serial stays on record: `ca revoke NAME` revokes it too (on
	 * record before the switch, which renew_finish may complete) */
	if ((hex = serial_hex(old)) == NULL ||
	    append_serial(dir, CA_SUPERSEDED_FILE, hex, name, err, errlen) < 0)
		goto out;
	renew_step(kill_at, 2);
	if (renew_write(&p, key, x, kill_at, err, errlen) < 0)
		goto out;
	renew_step(kill_at, 4);
	if (renew_switch(&p, 1, kill_at, err, errlen) < 0)
		goto out;
	*serialp = serial_hex(x);
	rc = 0;
out:
	free(hex);
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

/* Do the key in keyp and the certificate in crtp belong together (both
 * whole)? */
static int
pair_matches(const char *keyp, const char *crtp)
{
	char e[PATH_MAX + 256];
	EVP_PKEY *k = read_key(keyp, e, sizeof(e));
	X509 *x = k != NULL ? read_cert(crtp, e, sizeof(e)) : NULL;
	int ok = x != NULL && X509_check_private_key(x, k) == 1;

	ERR_clear_error();
	X509_free(x);
	EVP_PKEY_free(k);
	return ok;
}

/* Finish or undo name's renew that a crash left half done (renew_one):
 * NAME.crt.new whole and matching NAME.key.new (or, that one renamed
 * already, NAME.key): the renames are done, the new pair in place;
 * otherwise (a new file not whole) the .new files go and the old pair
 * stays.  Either way NAME.key and NAME.crt belong together.  0 or -1. */
static int
renew_finish(const char *dir, const char *name, char *err, size_t errlen)
{
	struct renew_paths p;
	int has_key, r;

	renew_paths(&p, dir, name);
	has_key = access(p.tkey, F_OK) == 0;
	if (access(p.tcrt, F_OK) == 0 && pair_matches(has_key ? p.tkey : p.key, p.tcrt))
		return renew_switch(&p, has_key, 0, err, errlen);
	if ((unlink(p.tkey) < 0 && errno != ENOENT) || (unlink(p.tcrt) < 0 && errno != ENOENT)) {
		seterr(err, errlen, "%s: %s", p.tcrt, strerror(errno));
		return -1;
	}
	if ((r = sync_parent_dir(p.crt)) < 0) {
		seterr(err, errlen, "%s: sync: %s", p.crt, strerror(-r));
		return -1;
	}
	return 0;
}

/* The NAME of a renew's leftover DIR entry (NAME.key.new, NAME.crt.new)
 * into name: 1, or 0 when de is none. */
static int
renew_leftover(const struct dirent *de, char *name, size_t len)
{
	size_t l = strlen(de->d_name);

	if (l < 9 || (strcmp(de->d_name + l - 8, ".crt.new") != 0 &&
	    strcmp(de->d_name + l - 8, ".key.new") != 0))
		return 0;
	snprintf(name, len, "%.*s", (int)(l - 8), de->d_name);
	return 1;
}

/* Every half-done renew in dir: counted (fix 0), or finished or undone
 * (renew_finish).  The count, or -1 with err. */
static int
renew_recover(const char *dir, int fix, char *err, size_t errlen)
{
	char name[NAME_MAX + 1];
	struct dirent *de;
	DIR *d;
	int n = 0;

	if ((d = opendir(dir)) == NULL) {
		seterr(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	while (n >= 0 && (de = readdir(d)) != NULL)
		if (renew_leftover(de, name, sizeof(name)))
			n = fix && renew_finish(dir, name, err, errlen) < 0 ? -1 : n + 1;
	closedir(d);
	return n;
}

int
ca_recover(const char *dir, char *err, size_t errlen)
{
	int n = renew_recover(dir, 0, err, errlen), lk;

	if (n <= 0)
		return n;
	/* ca_lock finishes them, once no renew is running */
	if ((lk = ca_lock(dir, err, errlen)) < 0)
		return -1;
	ca_unlock(lk);
	return 0;
}

int
ca_pair_recover(const char *crt, char *err, size_t errlen)
{
	char dir[PATH_MAX], name[NAME_MAX + 1], e[PATH_MAX + 256];
	const char *base = path_base(crt);
	size_t l = strlen(base);
	struct renew_paths p;

	if (l < 5 || l - 4 > NAME_MAX || strcmp(base + l - 4, ".crt") != 0)
		return 0;	/* not a pair ca renew makes */
	path_dir(crt, dir, sizeof(dir));
	snprintf(name, sizeof(name), "%.*s", (int)(l - 4), base);
	renew_paths(&p, dir, name);
	if (access(p.tcrt, F_OK) != 0 && access(p.tkey, F_OK) != 0)
		return 0;
	if (ca_recover(dir, e, sizeof(e)) >= 0)
		return 0;
	seterr(err, errlen, "%s: a ca renew of %s was interrupted (%s.new is left) and cannot "
	    "be finished here: %s; run knobctl ca list --ca-dir %s as the owner of that directory",
	    crt, name, access(p.tcrt, F_OK) == 0 ? p.crt : p.key, e, dir);
	return -1;
}

int
ca_renew(const char *dir, int min_days, int kill_at, ca_renew_fn fn, void *arg, char *err,
    size_t errlen)
{
	EVP_PKEY *cakey = NULL;
	X509 *cacert = NULL;
	struct strvec revoked = { 0 };
	struct dirent *de;
	DIR *d = NULL;
	int rc = -1, limited = 0, lk = -1;

	if (load_ca(dir, &cacert, &cakey, err, errlen) < 0)
		return -1;
	/* another renew would unlink this one's NAME.key.new and pair its key
	 * with this certificate; a revoke would miss the new serial */
	if ((lk = ca_lock(dir, err, errlen)) < 0)
		goto out;
	if (read_revoked(dir, &revoked, err, errlen) < 0)
		goto out;
	if ((d = opendir(dir)) == NULL) {
		seterr(err, errlen, "%s: %s", dir, strerror(errno));
		goto out;
	}
	rc = 0;
	while ((de = readdir(d)) != NULL) {
		char name[NAME_MAX + 1], path[PATH_MAX], e2[256], *serial = NULL;
		size_t l = strlen(de->d_name);
		X509 *x;

		if (l < 5 || strcmp(de->d_name + l - 4, ".crt") != 0 || strcmp(de->d_name, CA_CERT_FILE) == 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(l - 4), de->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if ((x = read_cert(path, e2, sizeof(e2))) == NULL)
			continue;
		if (days_left(x) >= min_days)
			;
		else if (cert_revoked(&revoked, x))
			fn(arg, path, days_left(x), NULL, CA_NOT_REVOKED);
		else if (ca_limited(x, cacert)) {
			fn(arg, path, days_left(x), NULL, CA_NOT_LIMITED);
			limited = 1;
		} else if (renew_one(dir, name, x, cacert, cakey, kill_at, &serial, err,
		    errlen) < 0)
			rc = -1;
		else
			fn(arg, path, days_left(x), serial ? serial : "?", 0);
		free(serial);
		X509_free(x);
	}
	if (rc == 0 && limited)
		rc = 1;
out:
	ca_unlock(lk);
	strvec_free(&revoked);
	if (d)
		closedir(d);
	X509_free(cacert);
	EVP_PKEY_free(cakey);
	return rc;
}

/* One certificate (OU=node, serverAuth) whose subjectAltName lists every
 * name in names, for a simulated fleet (knob-sim): DIR/FILE.crt and .key,
 * FILE being cn.  The real fleet keeps one certificate per node.  0 or -1
 * with err. */
int
ca_issue_fleet(const char *dir, const char *cn, const char *const *names, size_t n,
    char *err, size_t errlen)
{
	char crt[PATH_MAX], keyp[PATH_MAX];
	EVP_PKEY *key = NULL, *cakey = NULL;
	X509 *x = NULL, *cacert = NULL;
	char *san = NULL;
	int rc = -1;

	if (n == 0 || ca_name_check(cn, err, errlen) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (ca_name_check(names[i], err, errlen) < 0)
			goto out;
		str_appendf(&san, "%sDNS:%s", i ? "," : "", names[i]);
	}
	if (ca_path(crt, sizeof(crt), dir, cn, ".crt", err, errlen) < 0 ||
	    ca_path(keyp, sizeof(keyp), dir, cn, ".key", err, errlen) < 0 ||
	    must_not_exist(crt, "a certificate", err, errlen) < 0 ||
	    must_not_exist(keyp, "a key", err, errlen) < 0 ||
	    load_ca(dir, &cacert, &cakey, err, errlen) < 0)
		goto out;
	if (make_leaf_san(cacert, cakey, cn, san, 0, &key, &x, err, errlen) < 0 ||
	    record_issued(dir, cn, x, err, errlen) < 0)
		goto out;
	rc = write_pair(keyp, key, crt, x, err, errlen);
out:
	free(san);
	X509_free(x);
	EVP_PKEY_free(key);
	X509_free(cacert);
	EVP_PKEY_free(cakey);
	return rc;
}

/* ------------------------------------------------------------ listing */

/* An ASN1_TIME as a time_t (0 when it cannot be read). */
static time_t
asn1_time_t(const ASN1_TIME *t)
{
	struct tm tm;

	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
		return 0;
	return timegm(&tm);
}

/* "FILE: message" onto l->errors, the OpenSSL error queue drained. */
static void
list_error(struct ca_listing *l, const char *msg)
{
	ERR_clear_error();
	strvec_push(&l->errors, msg);
}

/* DIR/ca.crl's serials (hex) into revoked, when it is there and the CA
 * in cacert signed it: l->crl_*.  0, or -1 (l->errors says why). */
static int
list_crl(struct ca_listing *l, X509 *cacert, struct strvec *revoked)
{
	STACK_OF(X509_REVOKED) *sk;
	X509_CRL *crl = NULL;
	BIO *b = NULL;
	char *pem = NULL, msg[PATH_MAX + 512];
	size_t len = 0;
	int r, rc = -1;

	if ((r = read_file_bounded(l->crl, 64 << 20, &pem, &len)) < 0) {
		if (r == -ENOENT)
			return 0;
		snprintf(msg, sizeof(msg), "%s: %s", l->crl, strerror(-r));
		goto out;
	}
	if ((b = BIO_new_mem_buf(pem, (int)len)) == NULL ||
	    (crl = PEM_read_bio_X509_CRL(b, NULL, NULL, NULL)) == NULL) {
		setssl(msg, sizeof(msg), l->crl);
		goto out;
	}
	if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_subject_name(cacert)) != 0 ||
	    X509_CRL_verify(crl, X509_get0_pubkey(cacert)) != 1) {
		snprintf(msg, sizeof(msg), "%s: not signed by the CA %s (it revokes nothing)", l->crl,
		    l->crt);
		goto out;
	}
	sk = X509_CRL_get_REVOKED(crl);
	for (int i = 0; i < sk_X509_REVOKED_num(sk); i++) {
		char *hex = asn1_hex(X509_REVOKED_get0_serialNumber(sk_X509_REVOKED_value(sk, i)));

		if (hex != NULL)
			strvec_push_owned(revoked, hex);
	}
	l->crl_revoked = (size_t)sk_X509_REVOKED_num(sk);
	l->crl_last_update = asn1_time_t(X509_CRL_get0_lastUpdate(crl));
	l->crl_read = 1;
	rc = 0;
out:
	if (rc < 0) {
		l->crl_read = -1;
		list_error(l, msg);
	}
	X509_CRL_free(crl);
	BIO_free(b);
	free(pem);
	return rc;
}

/* The sets ca_list looks serials up in. */
struct list_sets {
	struct sset revoked;	/* the CRL's (or DIR/revoked.txt's) */
	struct sset files;	/* of the DIR/NAME.crt listed */
	struct sset issued;	/* DIR/issued.txt's */
	struct sset superseded;	/* DIR/superseded.txt's */
};

/* A new entry at the end of l (zeroed but for name and serial, copied). */
static struct ca_entry *
list_add(struct ca_listing *l, const char *name, const char *serial)
{
	struct ca_entry *e;

	l->v = xgrow(l->v, l->n, sizeof(*l->v));
	e = &l->v[l->n++];
	memset(e, 0, sizeof(*e));
	e->name = xstrdup(name);
	e->serial = xstrdup(serial);
	return e;
}

/* The entry of certificate x, the file DIR/NAME.crt (path); its state
 * from revoked.  Its serial onto seen. */
static void
list_cert(struct ca_listing *l, const char *name, const char *path, X509 *x,
    const struct sset *revoked, struct strvec *seen)
{
	char ou[64] = "", *hex = serial_hex(x);
	struct ca_entry *e;

	if (hex == NULL)
		return;
	X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_organizationalUnitName, ou,
	    sizeof(ou));
	e = list_add(l, name, hex);
	e->path = xstrdup(path);
	e->role = strcmp(ou, KNOB_ROLE_CONTROLLER) == 0 ? KNOB_ROLE_CONTROLLER : KNOB_ROLE_NODE;
	e->not_after = asn1_time_t(X509_get0_notAfter(x));
	e->days_left = days_left(x);
	if (sset_find(revoked, hex) >= 0)
		e->state = CA_ST_REVOKED;
	else if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0)
		e->state = CA_ST_EXPIRED;
	else if (e->days_left < CA_WARN_DAYS)
		e->state = CA_ST_EXPIRING;
	else
		e->state = CA_ST_VALID;
	strvec_push_owned(seen, hex);
}

/* Is de a certificate of DIR (NAME.crt, not the CA's)?  Its name into
 * name. */
static int
list_is_cert(const struct dirent *de, char *name, size_t len)
{
	size_t l = strlen(de->d_name);

	if (l < 5 || strcmp(de->d_name + l - 4, ".crt") != 0 || strcmp(de->d_name, CA_CERT_FILE) == 0)
		return 0;
	snprintf(name, len, "%.*s", (int)(l - 4), de->d_name);
	return 1;
}

/* Every DIR/NAME.crt the CA in cacert signed into l (one that cannot be
 * read or is another CA's: l->errors); their serials onto seen. */
static void
list_files(struct ca_listing *l, DIR *d, const char *dir, X509 *cacert,
    const struct sset *revoked, struct strvec *seen)
{
	struct dirent *de;

	while ((de = readdir(d)) != NULL) {
		char name[NAME_MAX + 1], path[PATH_MAX], msg[PATH_MAX + 512];
		X509 *x;

		if (!list_is_cert(de, name, sizeof(name)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if ((x = read_cert(path, msg, sizeof(msg))) == NULL) {
			list_error(l, msg);
			continue;
		}
		if (X509_verify(x, X509_get0_pubkey(cacert)) != 1) {
			snprintf(msg, sizeof(msg), "%s: not signed by the CA %s", path, l->crt);
			list_error(l, msg);
		} else {
			list_cert(l, name, path, x, revoked, seen);
		}
		X509_free(x);
	}
}

/* The serials on record (serials[i] issued under names[i], in
 * DIR/issued.txt, or with sup DIR/superseded.txt) that no file of DIR is
 * nor an earlier record (issued.txt before superseded.txt, each in its
 * order): their state from the revoked and superseded sets. */
static void
list_records(struct ca_listing *l, const struct strvec *serials, const struct strvec *names,
    const struct list_sets *ls, int sup)
{
	const struct sset *own = sup ? &ls->superseded : &ls->issued;

	for (size_t i = 0; i < serials->n; i++) {
		const char *s = serials->v[i];
		struct ca_entry *e;

		if (sset_find(&ls->files, s) >= 0 || sset_find(own, s) != (long)i ||
		    (sup && sset_find(&ls->issued, s) >= 0))
			continue;
		e = list_add(l, names->v[i], s);
		e->state = sset_find(&ls->revoked, s) >= 0 ? CA_ST_REVOKED :
		    sset_find(&ls->superseded, s) >= 0 ? CA_ST_SUPERSEDED : CA_ST_UNKNOWN;
	}
}

/* Order of ca_list: by name, then in order of issue. */
static int
entry_cmp(const void *a, const void *b)
{
	const struct ca_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* DIR/FILE's records into serials and names; one that cannot be read is
 * in l->errors and none of it counts. */
static void
list_read_records(struct ca_listing *l, const char *dir, const char *file,
    struct strvec *serials, struct strvec *names)
{
	char msg[PATH_MAX + 512];

	if (read_records(dir, file, serials, names, msg, sizeof(msg)) < 0) {
		list_error(l, msg);
		strvec_free(serials);
		strvec_free(names);
	}
}

/* The CA's revocations when its CRL cannot be read: DIR/revoked.txt (what
 * ca_revoke makes the CRL from). */
static void
list_revoked_fallback(struct ca_listing *l, const char *dir, struct strvec *revoked)
{
	char msg[PATH_MAX + 512];

	if (read_revoked(dir, revoked, msg, sizeof(msg)) < 0) {
		list_error(l, msg);
		strvec_free(revoked);
	}
}

int
ca_list(const char *dir, struct ca_listing *l, char *err, size_t errlen)
{
	struct strvec revoked = { 0 }, seen = { 0 }, iss = { 0 }, iss_names = { 0 };
	struct strvec sup = { 0 }, sup_names = { 0 };
	struct list_sets ls = { 0 };
	X509 *cacert = NULL;
	DIR *d = NULL;
	int rc = -1;

	memset(l, 0, sizeof(*l));
	snprintf(l->crt, sizeof(l->crt), "%s/%s", dir, CA_CERT_FILE);
	tls_crl_path(dir, l->crl, sizeof(l->crl));
	if ((d = opendir(dir)) == NULL) {
		seterr(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if ((cacert = read_cert(l->crt, err, errlen)) == NULL)
		goto out;
	l->not_after = asn1_time_t(X509_get0_notAfter(cacert));
	l->days_left = days_left(cacert);
	if (list_crl(l, cacert, &revoked) < 0)
		list_revoked_fallback(l, dir, &revoked);
	list_read_records(l, dir, CA_ISSUED_FILE, &iss, &iss_names);
	list_read_records(l, dir, CA_SUPERSEDED_FILE, &sup, &sup_names);
	sset_make(&ls.revoked, &revoked);
	sset_make(&ls.issued, &iss);
	sset_make(&ls.superseded, &sup);
	list_files(l, d, dir, cacert, &ls.revoked, &seen);
	sset_make(&ls.files, &seen);
	list_records(l, &iss, &iss_names, &ls, 0);
	list_records(l, &sup, &sup_names, &ls, 1);
	for (size_t i = 0; i < l->n; i++) {
		long at = sset_find(&ls.issued, l->v[i].serial);

		l->v[i].seq = at < 0 ? iss.n : (size_t)at;
	}
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), entry_cmp);
	rc = l->errors.n ? 1 : 0;
out:
	ERR_clear_error();
	free(ls.revoked.v);
	free(ls.files.v);
	free(ls.issued.v);
	free(ls.superseded.v);
	strvec_free(&revoked);
	strvec_free(&seen);
	strvec_free(&iss);
	strvec_free(&iss_names);
	strvec_free(&sup);
	strvec_free(&sup_names);
	X509_free(cacert);
	closedir(d);
	return rc;
}

void
ca_listing_free(struct ca_listing *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].serial);
		free(l->v[i].path);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
	strvec_free(&l->errors);
}
