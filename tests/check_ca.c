/* Tests for the cluster CA (controller/ca.c, controller/cmd_ca.c): files
 * and modes, chains verified with OpenSSL's own verifier, names, roles,
 * key types, refusals.  Everything lives in a mkdtemp directory. */
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "testutil.h"
#include "harness.h"
#include "knobctl.h"
#include "tls.h"
#include "ca.h"

/* Each test works in its own directory below cu_base(). */
static char tmpdir[PATH_MAX];
static char cadir[PATH_MAX + 8];

static void
setup(void)
{
	cu_subdir(tmpdir, sizeof(tmpdir), "t");
	snprintf(cadir, sizeof(cadir), "%s/ca", tmpdir);
	umask(022);
}

static void
teardown(void)
{
	if (tmpdir[0] != '\0')
		cu_rm_rf(tmpdir);
	tmpdir[0] = '\0';
}

/* DIR/NAME into a static-free caller buffer. */
static const char *
pth(char *buf, size_t len, const char *dir, const char *file)
{
	snprintf(buf, len, "%s/%s", dir, file);
	return buf;
}

static X509 *
load_cert(const char *path)
{
	FILE *fp = fopen(path, "r");
	X509 *x;

	ck_assert_msg(fp != NULL, "open %s", path);
	x = PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	ck_assert_msg(x != NULL, "parse %s", path);
	return x;
}

static EVP_PKEY *
load_key(const char *path)
{
	FILE *fp = fopen(path, "r");
	EVP_PKEY *k;

	ck_assert_msg(fp != NULL, "open %s", path);
	k = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
	fclose(fp);
	ck_assert_msg(k != NULL, "parse %s", path);
	return k;
}

static mode_t
file_mode(const char *path)
{
	struct stat st;

	ck_assert_msg(stat(path, &st) == 0, "stat %s", path);
	return st.st_mode & 07777;
}

/* Verify crtfile against the CA in cafile for a purpose (0: any).
 * Returns X509_V_OK or the verifier's error code. */
static int
verify_with(const char *cafile, const char *crtfile, int purpose)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509 *x = load_cert(crtfile);
	int rc;

	ck_assert_int_eq(X509_STORE_load_file(st, cafile), 1);
	ck_assert_int_eq(X509_STORE_CTX_init(ctx, st, x, NULL), 1);
	if (purpose != 0)
		ck_assert_int_eq(X509_STORE_CTX_set_purpose(ctx, purpose), 1);
	rc = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
	if (rc == X509_V_OK)
		rc = X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	X509_free(x);
	return rc;
}

static void
subject_field(X509 *x, int nid, char *buf, int len)
{
	buf[0] = '\0';
	X509_NAME_get_text_by_NID(X509_get_subject_name(x), nid, buf, len);
}

/* Seconds from now to t (negative: in the past). */
static double
secs_from_now(const ASN1_TIME *t)
{
	int days, secs;

	ck_assert_int_eq(ASN1_TIME_diff(&days, &secs, NULL, t), 1);
	return (double)days * 86400.0 + secs;
}

/* The SAN DNS and IP entries of x, comma separated, into buf. */
static void
san_text(X509 *x, char *buf, size_t len)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	size_t off = 0;

	buf[0] = '\0';
	if (gens == NULL)
		return;
	for (int i = 0; i < sk_GENERAL_NAME_num(gens); i++) {
		GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		char one[128] = "";

		if (g->type == GEN_DNS)
			snprintf(one, sizeof(one), "DNS:%s",
			    (const char *)ASN1_STRING_get0_data(g->d.dNSName));
		else if (g->type == GEN_IPADD) {
			const unsigned char *ip = ASN1_STRING_get0_data(g->d.iPAddress);
			if (ASN1_STRING_length(g->d.iPAddress) == 4)
				snprintf(one, sizeof(one), "IP:%u.%u.%u.%u",
				    ip[0], ip[1], ip[2], ip[3]);
			else
				snprintf(one, sizeof(one), "IP:v6");
		}
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", one);
		if (off >= len)
			break;
	}
	GENERAL_NAMES_free(gens);
}

START_TEST(test_ca_init)
{
	char err[512], p[PATH_MAX * 2];
	X509 *ca;
	EVP_PKEY *k;
	char cn[256];
	ASN1_BIT_STRING *ku;

	ck_assert_msg(ca_init(cadir, err, sizeof(err)) == 0, "ca_init: %s", err);
	ck_assert_int_eq(file_mode(cadir), 0700);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "ca.key")), 0600);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "ca.crt")), 0644);

	ca = load_cert(pth(p, sizeof(p), cadir, "ca.crt"));
	k = load_key(pth(p, sizeof(p), cadir, "ca.key"));
	ck_assert_int_eq(EVP_PKEY_get_id(k), EVP_PKEY_ED25519);
	ck_assert_int_eq(EVP_PKEY_get_id(X509_get0_pubkey(ca)), EVP_PKEY_ED25519);
	ck_assert_int_eq(X509_check_private_key(ca, k), 1);
	ck_assert_int_eq(X509_check_ca(ca), 1);
	ck_assert(X509_get_extension_flags(ca) & EXFLAG_CA);
	ck_assert(X509_get_extension_flags(ca) & EXFLAG_SS);
	ck_assert_int_eq(X509_get_version(ca), X509_VERSION_3);
	/* basicConstraints is critical */
	ck_assert_int_eq(X509_EXTENSION_get_critical(X509_get_ext(ca,
	    X509_get_ext_by_NID(ca, NID_basic_constraints, -1))), 1);
	ku = X509_get_ext_d2i(ca, NID_key_usage, NULL, NULL);
	ck_assert_ptr_nonnull(ku);
	ck_assert(X509_get_key_usage(ca) & KU_KEY_CERT_SIGN);
	ASN1_BIT_STRING_free(ku);
	subject_field(ca, NID_commonName, cn, sizeof(cn));
	ck_assert_msg(strncmp(cn, "knob cluster CA ", 16) == 0, "CN %s", cn);
	/* Self-signed chain verifies against itself. */
	pth(p, sizeof(p), cadir, "ca.crt");
	ck_assert_int_eq(verify_with(p, p, 0), X509_V_OK);
	/* ~10 years, backdated about an hour. */
	ck_assert(secs_from_now(X509_get0_notBefore(ca)) <= -3500);
	ck_assert(secs_from_now(X509_get0_notBefore(ca)) >= -3700);
	ck_assert(secs_from_now(X509_get0_notAfter(ca)) > 9.9 * 365 * 86400);
	ck_assert(secs_from_now(X509_get0_notAfter(ca)) < 10.1 * 365 * 86400);
	X509_free(ca);
	EVP_PKEY_free(k);
}
END_TEST

/* Issue one certificate and check everything about it. */
static void
check_leaf(const char *name, int controller)
{
	char err[512], crt[PATH_MAX * 2], key[PATH_MAX * 2], cafile[PATH_MAX * 2];
	char buf[256], san[512], want[512];
	X509 *x;
	EVP_PKEY *k;
	const BIGNUM *bn;
	BIGNUM *serial;

	snprintf(buf, sizeof(buf), "%s.crt", name);
	pth(crt, sizeof(crt), cadir, buf);
	snprintf(buf, sizeof(buf), "%s.key", name);
	pth(key, sizeof(key), cadir, buf);
	pth(cafile, sizeof(cafile), cadir, "ca.crt");

	ck_assert_msg(ca_issue(cadir, name, controller, err, sizeof(err)) == 0,
	    "ca_issue %s: %s", name, err);
	ck_assert_int_eq(file_mode(key), 0600);
	ck_assert_int_eq(file_mode(crt), 0644);

	x = load_cert(crt);
	k = load_key(key);
	ck_assert_int_eq(EVP_PKEY_get_id(k), EVP_PKEY_ED25519);
	ck_assert_int_eq(EVP_PKEY_get_id(X509_get0_pubkey(x)), EVP_PKEY_ED25519);
	ck_assert_int_eq(X509_get_signature_nid(x), NID_ED25519);
	ck_assert_int_eq(X509_check_private_key(x, k), 1);
	ck_assert_int_eq(X509_check_ca(x), 0);

	subject_field(x, NID_commonName, buf, sizeof(buf));
	ck_assert_str_eq(buf, name);
	subject_field(x, NID_organizationalUnitName, buf, sizeof(buf));
	ck_assert_str_eq(buf, controller ? KNOB_ROLE_CONTROLLER : KNOB_ROLE_NODE);
	subject_field(x, NID_organizationName, buf, sizeof(buf));
	ck_assert_str_eq(buf, "knob");

	san_text(x, san, sizeof(san));
	if (strspn(name, "0123456789.") == strlen(name))
		snprintf(want, sizeof(want), "DNS:%s,IP:%s", name, name);
	else
		snprintf(want, sizeof(want), "DNS:%s", name);
	ck_assert_str_eq(san, want);
	ck_assert_int_eq(X509_check_host(x, name, 0, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, NULL), 1);
	ck_assert_int_eq(X509_check_host(x, "other-node", 0, 0, NULL), 0);

	/* Chain and role: a node is a TLS server, the controller a client. */
	ck_assert_int_eq(verify_with(cafile, crt, 0), X509_V_OK);
	if (controller) {
		ck_assert_int_eq(verify_with(cafile, crt, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
		ck_assert_int_ne(verify_with(cafile, crt, X509_PURPOSE_SSL_SERVER), X509_V_OK);
	} else {
		ck_assert_int_eq(verify_with(cafile, crt, X509_PURPOSE_SSL_SERVER), X509_V_OK);
		ck_assert_int_ne(verify_with(cafile, crt, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
	}

	/* Random serial: positive, more than 64 significant bits (fails
	 * with probability 2^-64 for a correct 128-bit random serial). */
	serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	bn = serial;
	ck_assert(!BN_is_negative(bn));
	ck_assert_int_gt(BN_num_bits(bn), 64);
	ck_assert_int_le(BN_num_bits(bn), 128);
	BN_free(serial);

	/* 5 years, backdated about an hour. */
	ck_assert(secs_from_now(X509_get0_notBefore(x)) <= -3500);
	ck_assert(secs_from_now(X509_get0_notAfter(x)) > 4.9 * 365 * 86400);
	ck_assert(secs_from_now(X509_get0_notAfter(x)) < 5.1 * 365 * 86400);

	X509_free(x);
	EVP_PKEY_free(k);
}

START_TEST(test_issue_node_and_controller)
{
	char err[512], a[PATH_MAX * 2], b[PATH_MAX * 2];
	X509 *x1, *x2;

	ck_assert_msg(ca_init(cadir, err, sizeof(err)) == 0, "ca_init: %s", err);
	check_leaf("node01", 0);
	check_leaf("node02.cluster.example", 0);
	check_leaf("10.1.2.3", 0);
	check_leaf("head_ctl", 1);

	/* Two certificates never share a serial. */
	x1 = load_cert(pth(a, sizeof(a), cadir, "node01.crt"));
	x2 = load_cert(pth(b, sizeof(b), cadir, "head_ctl.crt"));
	ck_assert_int_ne(ASN1_INTEGER_cmp(X509_get0_serialNumber(x1),
	    X509_get0_serialNumber(x2)), 0);
	X509_free(x1);
	X509_free(x2);
}
END_TEST

/* A ca_renew_fn that takes no note. */
static void
renew_ignored(void *arg, const char *path, int days_left, const char *serial, int why_not)
{
	(void)arg;
	(void)path;
	(void)days_left;
	(void)serial;
	(void)why_not;
}

START_TEST(test_umask_does_not_matter)
{
	char err[512], p[PATH_MAX * 2];

	umask(0);
	ck_assert_msg(ca_init(cadir, err, sizeof(err)) == 0, "ca_init: %s", err);
	ck_assert_msg(ca_issue(cadir, "n1", 0, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "ca.key")), 0600);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "n1.key")), 0600);
	umask(077);
	ck_assert_msg(ca_issue(cadir, "n2", 0, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "n2.key")), 0600);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "n2.crt")), 0644);
	/* the controller's key, and the new keys of a renew, under umask 000 */
	umask(0);
	ck_assert_msg(ca_issue(cadir, "ctl", 1, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "ctl.key")), 0600);
	ck_assert_msg(ca_renew(cadir, 36500, 0, renew_ignored, NULL, err, sizeof(err)) == 0, "%s",
	    err);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "ctl.key")), 0600);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "n1.key")), 0600);
	umask(022);
}
END_TEST

START_TEST(test_init_twice_refused)
{
	char err[512], p[PATH_MAX * 2], *before, *after;

	ck_assert_msg(ca_init(cadir, err, sizeof(err)) == 0, "ca_init: %s", err);
	before = cu_slurp(pth(p, sizeof(p), cadir, "ca.crt"));
	err[0] = '\0';
	ck_assert_int_eq(ca_init(cadir, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "already exists") != NULL, "err: %s", err);
	after = cu_slurp(p);
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(cu_dir_size(cadir), 2);
	free(before);
	free(after);

	/* A lone ca.key (half a CA) is refused too. */
	unlink(p);
	ck_assert_int_eq(ca_init(cadir, err, sizeof(err)), -1);
	ck_assert_int_eq(cu_dir_size(cadir), 1);
}
END_TEST

START_TEST(test_issue_twice_refused)
{
	char err[512], p[PATH_MAX * 2], *before, *after;

	ck_assert_msg(ca_init(cadir, err, sizeof(err)) == 0, "ca_init: %s", err);
	ck_assert_msg(ca_issue(cadir, "node01", 0, err, sizeof(err)) == 0, "%s", err);
	before = cu_slurp(pth(p, sizeof(p), cadir, "node01.key"));
	ck_assert_int_eq(ca_issue(cadir, "node01", 1, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "already exists") != NULL, "err: %s", err);
	after = cu_slurp(p);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
}
END_TEST

START_TEST(test_invalid_names)
{
	static const char *bad[] = {
		"", "../evil", "a/b", "/abs", "-rf", ".hidden", "..", "bad name",
		"semi;colon", "quote\"", "star*", "new\nline", "ca", "caf\xc3\xa9",
	};
	char err[512], longname[CA_NAME_MAX + 2];

	ck_assert_msg(ca_init(cadir, err, sizeof(err)) == 0, "ca_init: %s", err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(ca_issue(cadir, bad[i], 0, err, sizeof(err)) == -1,
		    "accepted %s", bad[i]);
		ck_assert_msg(err[0] != '\0', "no message for %s", bad[i]);
	}
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_int_eq(ca_issue(cadir, longname, 0, err, sizeof(err)), -1);
	/* Nothing was written for any of them. */
	ck_assert_int_eq(cu_dir_size(cadir), 2);
	/* The longest valid name works. */
	longname[CA_NAME_MAX] = '\0';
	ck_assert_msg(ca_issue(cadir, longname, 0, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(cu_dir_size(cadir), 5);	/* + .crt, .key, issued.txt */
}
END_TEST

START_TEST(test_second_ca_does_not_verify)
{
	char err[512], dir2[PATH_MAX + 8], ca1[PATH_MAX * 2], ca2[PATH_MAX * 2];
	char crt2[PATH_MAX * 2], crt1[PATH_MAX * 2];

	snprintf(dir2, sizeof(dir2), "%s/ca2", tmpdir);
	ck_assert_msg(ca_init(cadir, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(ca_init(dir2, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(ca_issue(cadir, "node01", 0, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(ca_issue(dir2, "node01", 1, err, sizeof(err)) == 0, "%s", err);
	pth(ca1, sizeof(ca1), cadir, "ca.crt");
	pth(ca2, sizeof(ca2), dir2, "ca.crt");
	pth(crt1, sizeof(crt1), cadir, "node01.crt");
	pth(crt2, sizeof(crt2), dir2, "node01.crt");
	ck_assert_int_eq(verify_with(ca1, crt1, 0), X509_V_OK);
	ck_assert_int_eq(verify_with(ca2, crt2, 0), X509_V_OK);
	ck_assert_int_ne(verify_with(ca1, crt2, 0), X509_V_OK);
	ck_assert_int_ne(verify_with(ca2, crt1, 0), X509_V_OK);
	/* Two CAs have distinct subjects, so logs can tell them apart. */
	{
		X509 *a = load_cert(ca1), *b = load_cert(ca2);

		ck_assert_int_ne(X509_NAME_cmp(X509_get_subject_name(a),
		    X509_get_subject_name(b)), 0);
		X509_free(a);
		X509_free(b);
	}
}
END_TEST

START_TEST(test_issue_without_ca)
{
	char err[512];

	ck_assert_int_eq(mkdir(cadir, 0700), 0);
	ck_assert_int_eq(ca_issue(cadir, "node01", 0, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "ca.crt") != NULL, "err: %s", err);
	ck_assert_int_eq(cu_dir_size(cadir), 0);
}
END_TEST

/* Run the ca command with the arguments ap (up to a NULL); its stdout into
 * *out (malloc'd).  The exit status. */
static int
run_ca(char **out, const char *first, va_list ap)
{
	char *argv[32];
	int argc = 0, rc;
	struct ctl ctl;
	size_t len;

	memset(&ctl, 0, sizeof(ctl));
	ctl.out = open_memstream(out, &len);
	ck_assert_ptr_nonnull(ctl.out);
	argv[argc++] = (char *)(uintptr_t)"ca";
	for (const char *s = first; s != NULL && argc < 31; s = va_arg(ap, const char *))
		argv[argc++] = (char *)(uintptr_t)s;
	argv[argc] = NULL;
	rc = ctl_run(&ctl, &cmd_ca_entry, argc, argv);
	fclose(ctl.out);
	opt_free(&ctl);
	inventory_free(ctl.inv);
	strvec_free(&ctl.w);
	strvec_free(&ctl.x);
	return rc;
}

/* Run the ca command with a NULL-terminated list; its stdout is dropped. */
static int
run_cmd(const char *first, ...)
{
	char *out = NULL;
	va_list ap;
	int rc;

	va_start(ap, first);
	rc = run_ca(&out, first, ap);
	va_end(ap);
	free(out);
	return rc;
}

/* Run the ca command with a NULL-terminated list; its stdout into *out
 * (malloc'd).  The exit status. */
static int
run_ca_list(char **out, const char *first, ...)
{
	va_list ap;
	int rc;

	va_start(ap, first);
	rc = run_ca(out, first, ap);
	va_end(ap);
	return rc;
}

/* Run the ca command with a NULL-terminated list, which must exit 0 and
 * print one JSON object; caller puts it. */
static json_object *
run_json(const char *first, ...)
{
	json_object *doc;
	char *out = NULL;
	va_list ap;

	va_start(ap, first);
	ck_assert_int_eq(run_ca(&out, first, ap), 0);
	va_end(ap);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc && json_object_is_type(doc, json_type_object), "not JSON: %s", out);
	free(out);
	return doc;
}

START_TEST(test_cmd_ca)
{
	char p[PATH_MAX * 2], cafile[PATH_MAX * 2];

	ck_assert_int_eq(run_cmd(NULL), 2);
	ck_assert_int_eq(run_cmd("bogus", NULL), 2);
	ck_assert_int_eq(run_cmd("init", NULL), 2);
	ck_assert_int_eq(run_cmd("init", cadir, "extra", NULL), 2);
	ck_assert_int_eq(run_cmd("init", cadir, NULL), 0);
	ck_assert_int_eq(run_cmd("init", cadir, NULL), 1);
	ck_assert_int_eq(run_cmd("issue", cadir, NULL), 2);
	ck_assert_int_eq(run_cmd("issue", cadir, "--bogus", "n1", NULL), 2);
	/* One bad name: nothing at all is written. */
	ck_assert_int_eq(run_cmd("issue", cadir, "good1", "bad/name", NULL), 2);
	ck_assert_int_eq(cu_dir_size(cadir), 2);

	ck_assert_int_eq(run_cmd("issue", cadir, "node[01-03]", "extra", NULL), 0);
	ck_assert_int_eq(cu_dir_size(cadir), 11);	/* 4 pairs, issued.txt */
	ck_assert_int_eq(run_cmd("issue", cadir, "--controller", "admin", NULL), 0);
	pth(cafile, sizeof(cafile), cadir, "ca.crt");
	ck_assert_int_eq(verify_with(cafile, pth(p, sizeof(p), cadir, "node02.crt"),
	    X509_PURPOSE_SSL_SERVER), X509_V_OK);
	ck_assert_int_eq(verify_with(cafile, pth(p, sizeof(p), cadir, "admin.crt"),
	    X509_PURPOSE_SSL_CLIENT), X509_V_OK);
	/* Re-issuing an existing name fails, the others still go through. */
	ck_assert_int_eq(run_cmd("issue", cadir, "node[03-04]", NULL), 1);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "node04.key")), 0600);
}
END_TEST

/* doc[key] (an object or array) at index i (-1: doc[key] itself), then
 * its member k when k is not NULL, as a string ("" when missing). */
static const char *
jget(json_object *doc, const char *key, int i, const char *k)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(doc, key, &v))
		return "";
	if (i >= 0)
		v = json_object_array_get_idx(v, (size_t)i);
	if (k && !json_object_object_get_ex(v, k, &v))
		return "";
	return v ? json_object_get_string(v) : "";
}

/* The serial of the certificate in path, hex as OpenSSL prints it (malloc'd). */
static char *
serial_of(const char *path)
{
	X509 *x = load_cert(path);
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *h = BN_bn2hex(bn), *s = xstrdup(h);

	OPENSSL_free(h);
	BN_free(bn);
	X509_free(x);
	return s;
}

/* --json: init, issue, revoke and renew each print one document saying
 * what they did: the files written, the names issued (role, serial: that
 * of the file), revoked (their serials) and renewed (the new serial). */
START_TEST(test_cmd_ca_json)
{
	char p[PATH_MAX * 2], *s1, *s2;
	json_object *doc;

	doc = run_json("init", cadir, "--json", NULL);
	ck_assert_str_eq(jget(doc, "command", -1, NULL), "ca init");
	ck_assert_str_eq(jget(doc, "written", 0, NULL), pth(p, sizeof(p), cadir, "ca.crt"));
	ck_assert_str_eq(jget(doc, "written", 1, NULL), pth(p, sizeof(p), cadir, "ca.key"));
	json_object_put(doc);

	doc = run_json("issue", "--json", cadir, "n[1-2]", NULL);
	s1 = serial_of(pth(p, sizeof(p), cadir, "n1.crt"));
	s2 = serial_of(pth(p, sizeof(p), cadir, "n2.crt"));
	ck_assert_str_eq(jget(doc, "issued", 0, "name"), "n1");
	ck_assert_str_eq(jget(doc, "issued", 0, "role"), "node");
	ck_assert_str_eq(jget(doc, "issued", 0, "serial"), s1);
	ck_assert_str_eq(jget(doc, "issued", 0, "cert"), pth(p, sizeof(p), cadir, "n1.crt"));
	ck_assert_str_eq(jget(doc, "issued", 1, "serial"), s2);
	ck_assert_str_eq(jget(doc, "issued", 1, "key"), pth(p, sizeof(p), cadir, "n2.key"));
	ck_assert_int_eq(json_object_array_length(json_object_object_get(doc, "written")), 4);
	ck_assert_str_eq(jget(doc, "exit_status", -1, NULL), "0");
	json_object_put(doc);

	doc = run_json("revoke", "n1", "--ca-dir", cadir, "--json", NULL);
	ck_assert_str_eq(jget(doc, "revoked", 0, "name"), "n1");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    json_object_object_get(json_object_array_get_idx(json_object_object_get(doc, "revoked"), 0),
	    "serials"), 0)), s1);
	ck_assert_str_eq(jget(doc, "written", 0, NULL), pth(p, sizeof(p), cadir, "ca.crl"));
	json_object_put(doc);

	/* n2 renewed (its new serial is the file's), n1 not: revoked */
	doc = run_json("--json", "renew", "--days", "36500", "--ca-dir", cadir, NULL);
	ck_assert_str_eq(jget(doc, "days", -1, NULL), "36500");
	ck_assert_str_eq(jget(doc, "renewed", 0, "cert"), pth(p, sizeof(p), cadir, "n2.crt"));
	free(s2);
	s2 = serial_of(p);
	ck_assert_str_eq(jget(doc, "renewed", 0, "serial"), s2);
	ck_assert_str_eq(jget(doc, "not_renewed", 0, "cert"), pth(p, sizeof(p), cadir, "n1.crt"));
	ck_assert_str_eq(jget(doc, "not_renewed", 0, "reason"), "revoked");
	json_object_put(doc);
	free(s1);
	free(s2);
}
END_TEST

/* --days is renew's window, a whole number of days (1 to 36500): junk is a
 * usage error, and so is --days on init, issue and revoke (a new
 * certificate is valid for 5 years), with nothing written. */
START_TEST(test_cmd_ca_days)
{
	char p[PATH_MAX * 2];

	ck_assert_int_eq(run_cmd("init", cadir, NULL), 0);
	ck_assert_int_eq(run_cmd("issue", cadir, "n1", NULL), 0);
	ck_assert_int_eq(run_cmd("renew", "--days", "2000x", "--ca-dir", cadir, NULL), 2);
	ck_assert_int_eq(run_cmd("renew", "--days", "0", "--ca-dir", cadir, NULL), 2);
	ck_assert_int_eq(run_cmd("renew", "--days", "-3", "--ca-dir", cadir, NULL), 2);
	ck_assert_int_eq(run_cmd("renew", "--days", "36501", "--ca-dir", cadir, NULL), 2);
	ck_assert_int_eq(run_cmd("renew", "--days", "30", "--ca-dir", cadir, NULL), 0);
	ck_assert_int_eq(run_cmd("issue", cadir, "n3", "--days", "3", NULL), 2);
	ck_assert_int_eq(access(pth(p, sizeof(p), cadir, "n3.crt"), F_OK), -1);
	ck_assert_int_eq(run_cmd("revoke", "n1", "--ca-dir", cadir, "--days", "3", NULL), 2);
	ck_assert_int_eq(access(pth(p, sizeof(p), cadir, "ca.crl"), F_OK), -1);
	ck_assert_int_eq(run_cmd("init", "--days", "3", pth(p, sizeof(p), cadir, "2"), NULL), 2);
	ck_assert_int_eq(access(p, F_OK), -1);
}
END_TEST

/* A new CA in dir with node01 and name (controller: its role) issued;
 * node01's certificate (PEM, malloc'd). */
static char *
ca_node01_and(const char *dir, const char *name, int controller)
{
	char err[1024], p[PATH_MAX * 2], *pem = NULL;

	ck_assert_int_eq(ca_init(dir, err, sizeof(err)), 0);
	ck_assert_int_eq(ca_issue(dir, "node01", 0, err, sizeof(err)), 0);
	ck_assert_int_eq(ca_issue(dir, name, controller, err, sizeof(err)), 0);
	ck_assert_int_eq(read_file_bounded(pth(p, sizeof(p), dir, "node01.crt"), 1 << 20, &pem, NULL), 0);
	return pem;
}

/* ca_renew's report into the strvec arg: "PATH renewed" or "PATH revoked". */
static void
renew_record(void *arg, const char *path, int days_left, const char *serial, int why_not)
{
	(void)days_left;
	(void)why_not;
	strvec_push_owned(arg, xasprintf("%s %s", path, serial ? "renewed" : "revoked"));
}

/* Revocation: ca.crl lists the serial (once, however often revoked);
 * ca_check_leaf judges a node's certificate as bootstrap does; renewal
 * reissues only what expires within the window. */
START_TEST(test_revoke_check_renew)
{
	char err[1024], p[PATH_MAX * 2], *pem, *crt = NULL, *key = NULL, *before = NULL, *after = NULL;
	struct strvec said = { 0 };
	X509_CRL *crl;
	FILE *f;

	pem = ca_node01_and(cadir, "ctl2", 1);
	ck_assert_int_eq(ca_check_leaf(cadir, pem, "node01", 30, err, sizeof(err)), 0);
	ck_assert_int_eq(ca_check_leaf(cadir, pem, "node02", 30, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "certificate names 'node01'");
	ck_assert_int_eq(ca_check_leaf(cadir, pem, "node01", 100000, err, sizeof(err)), 1);
	ck_assert_ptr_nonnull(strstr(err, "certificate expires in"));
	ck_assert_int_eq(ca_check_leaf(cadir, "garbage", "node01", 30, err, sizeof(err)), 1);
	/* in memory, for bootstrap: a fresh pair that passes the same check */
	ck_assert_int_eq(ca_issue_pem(cadir, "node07", 0, &crt, &key, err, sizeof(err)), 0);
	ck_assert_int_eq(ca_check_leaf(cadir, crt, "node07", 30, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(key, "PRIVATE KEY"));

	ck_assert_int_eq(ca_revoke(cadir, "node01", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(ca_revoke(cadir, "node01", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(ca_revoke(cadir, "nosuch", NULL, err, sizeof(err)), -1);
	ck_assert_int_eq(ca_check_leaf(cadir, pem, "node01", 30, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "certificate revoked");
	f = fopen(pth(p, sizeof(p), cadir, "ca.crl"), "r");
	ck_assert_ptr_nonnull(f);
	crl = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
	ck_assert_ptr_nonnull(crl);
	ck_assert_int_eq(sk_X509_REVOKED_num(X509_CRL_get_REVOKED(crl)), 1);
	/* issued an hour back, as certificates are: an agent whose clock is a
	 * few seconds behind does not find it "not yet valid" */
	{
		int day, sec;

		ck_assert_int_eq(ASN1_TIME_diff(&day, &sec, X509_CRL_get0_lastUpdate(crl), NULL), 1);
		ck_assert_int_ge(day * 86400 + sec, 3500);
	}
	X509_CRL_free(crl);

	/* nothing expires within 30 days: nothing renewed */
	ck_assert_int_eq(read_file_bounded(pth(p, sizeof(p), cadir, "ctl2.crt"), 1 << 20, &before, NULL), 0);
	ck_assert_int_eq(ca_renew(cadir, 30, 0, renew_record, &said, err, sizeof(err)), 0);
	ck_assert_int_eq(said.n, 0);
	ck_assert_int_eq(ca_renew(cadir, 100000, 0, renew_record, &said, err, sizeof(err)), 0);
	ck_assert_int_gt(said.n, 0);
	strvec_free(&said);
	ck_assert_int_eq(read_file_bounded(pth(p, sizeof(p), cadir, "ctl2.crt"), 1 << 20, &after, NULL), 0);
	ck_assert_str_ne(before, after);
	ck_assert_int_eq(file_mode(pth(p, sizeof(p), cadir, "ctl2.key")), 0600);
	ck_assert_int_eq(verify_with(pth(err, sizeof(err), cadir, "ca.crt"), pth(p, sizeof(p), cadir,
	    "ctl2.crt"), X509_PURPOSE_SSL_CLIENT), X509_V_OK);
	/* a renewed name's old certificate is revoked with it (its key may be
	 * the one that leaked), and a revoked name is not renewed */
	ck_assert_int_eq(ca_revoke(cadir, "ctl2", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(ca_check_leaf(cadir, before, "ctl2", 30, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "certificate revoked");
	ck_assert_int_eq(ca_check_leaf(cadir, after, "ctl2", 30, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "certificate revoked");
	ck_assert_int_eq(ca_renew(cadir, 100000, 0, renew_record, &said, err, sizeof(err)), 0);
	ck_assert_msg(strvec_contains(&said, pth(p, sizeof(p), cadir, "ctl2.crt revoked")),
	    "a revoked name was renewed");
	strvec_free(&said);
	free(pem);
	ck_assert_int_eq(read_file_bounded(pth(p, sizeof(p), cadir, "ctl2.crt"), 1 << 20, &pem, NULL), 0);
	ck_assert_str_eq(pem, after);
	free(pem);
	free(crt);
	free(key);
	free(before);
	free(after);
}
END_TEST

/* The number of serials ca.crl in dir revokes. */
static int
crl_count(const char *dir)
{
	char p[PATH_MAX * 2];
	X509_CRL *crl;
	FILE *f = fopen(pth(p, sizeof(p), dir, "ca.crl"), "r");
	int n;

	ck_assert_ptr_nonnull(f);
	crl = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
	ck_assert_ptr_nonnull(crl);
	n = sk_X509_REVOKED_num(X509_CRL_get_REVOKED(crl));
	X509_CRL_free(crl);
	return n;
}

/* "knobctl ca SUB --ca-dir cadir ARG" (the real binary) in the background,
 * its stderr on a pipe whose read end goes into *errfd.  Its pid. */
static pid_t
ca_bg(int *errfd, const char *sub, const char *arg)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	char exe[PATH_MAX];
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	snprintf(exe, sizeof(exe), "%s/knobctl", bin);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		unsetenv("KNOB_CLUSTER");
		execl(exe, "knobctl", "ca", sub, "--ca-dir", cadir, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*errfd = p[0];
	return pid;
}

/* Read fd until what came holds s: 1, or 0 at its end (what came, up to
 * len - 1 bytes, in buf). */
static int
read_until(int fd, const char *s, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	buf[0] = '\0';
	while (strstr(buf, s) == NULL) {
		if (got + 1 >= len || (n = read(fd, buf + got, len - 1 - got)) <= 0)
			return 0;
		got += (size_t)n;
		buf[got] = '\0';
	}
	return 1;
}

/* Two admins' knobctl at once (here while a third holds the CA, as its
 * change would): each waits its turn, says so, and then does its whole
 * change.  Before, nothing was locked: two revokes each wrote the CRL from
 * revoked.txt as they had read it, so the last one written could drop the
 * other's revocation, and two renews unlinked each other's NAME.key.new. */
START_TEST(test_ca_concurrent_admins)
{
	static const char *const cmd[2][2][2] = {
		{ { "revoke", "node01" }, { "revoke", "node02" } },
		{ { "renew", "--days=36500" }, { "renew", "--days=36500" } } };
	char err[1024], p[PATH_MAX * 2], buf[2][4096], *sup;
	int fd[2], lk;
	pid_t pid[2];
	EVP_PKEY *k;
	X509 *x;

	ck_assert_int_eq(ca_init(cadir, err, sizeof(err)), 0);
	for (int i = 1; i <= 3; i++) {
		snprintf(p, sizeof(p), "node%02d", i);
		ck_assert_msg(ca_issue(cadir, p, 0, err, sizeof(err)) == 0, "%s", err);
	}
	for (int s = 0; s < 2; s++) {
		lk = open(pth(p, sizeof(p), cadir, "ca.lock"), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		ck_assert_int_ge(lk, 0);
		ck_assert_int_eq(flock(lk, LOCK_EX), 0);
		for (int i = 0; i < 2; i++) {
			pid[i] = ca_bg(&fd[i], cmd[s][i][0], cmd[s][i][1]);
			ck_assert_msg(read_until(fd[i], "waiting for it\n", buf[i], sizeof(buf[i])),
			    "ca %s %s did not wait for the CA lock: '%s'", cmd[s][i][0], cmd[s][i][1],
			    buf[i]);
		}
		if (s == 0)
			ck_assert_int_eq(access(pth(p, sizeof(p), cadir, "ca.crl"), F_OK), -1);
		close(lk);
		for (int i = 0; i < 2; i++) {
			ck_assert_int_eq(cu_reap(pid[i]), 0);
			close(fd[i]);
		}
	}
	/* both revocations in the CRL; node03 renewed twice, its key that of
	 * its certificate */
	ck_assert_int_eq(crl_count(cadir), 2);
	x = load_cert(pth(p, sizeof(p), cadir, "node03.crt"));
	k = load_key(pth(p, sizeof(p), cadir, "node03.key"));
	ck_assert_int_eq(X509_check_private_key(x, k), 1);
	X509_free(x);
	EVP_PKEY_free(k);
	sup = cu_slurp(pth(p, sizeof(p), cadir, "superseded.txt"));
	ck_assert_msg(sup && strstr(sup, " node03\n") && strstr(strstr(sup, " node03\n") + 1,
	    " node03\n"), "%s", sup ? sup : "no superseded.txt");
	free(sup);
}
END_TEST

/* "knobctl ca renew --days=36500 --ca-dir DIR --test-kill-at=STEP": it
 * must die there of SIGKILL (a crash: no clean-up of its own). */
static void
renew_killed_in(const char *dir, int step)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	char exe[PATH_MAX], at[32];
	pid_t pid;
	int st;

	snprintf(exe, sizeof(exe), "%s/knobctl", bin);
	snprintf(at, sizeof(at), "--test-kill-at=%d", step);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		unsetenv("KNOB_CLUSTER");
		execl(exe, "knobctl", "ca", "renew", "--days=36500", "--ca-dir", dir, at,
		    (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "step %d: status 0x%x", step,
	    st);
}

/* renew_killed_in of cadir */
static void
renew_killed(int step)
{
	renew_killed_in(cadir, step);
}

/* DIR/node01's serial (hex, malloc'd) once its key and certificate are
 * checked to belong together and the certificate to be the CA's. */
static char *
pair_serial(int step)
{
	char p[PATH_MAX * 2], cafile[PATH_MAX * 2], err[256];
	EVP_PKEY *k = load_key(pth(p, sizeof(p), cadir, "node01.key"));
	X509 *x = load_cert(pth(p, sizeof(p), cadir, "node01.crt"));

	ck_assert_msg(X509_check_private_key(x, k) == 1,
	    "step %d: node01.key does not belong to node01.crt", step);
	ck_assert_int_eq(verify_with(pth(cafile, sizeof(cafile), cadir, "ca.crt"), p, 0),
	    X509_V_OK);
	X509_free(x);
	EVP_PKEY_free(k);
	return ca_cert_serial(p, err, sizeof(err));
}

/* ca renew killed at each of its steps (--test-kill-at; a crash, power
 * lost): the next ca command (here ca list) finds node01's key and
 * certificate belonging together, the old pair (killed before the new one
 * was whole) or the new one, nothing left behind; then ca renew renews.
 * Before, the key was renamed into place before the certificate: killed
 * between the two, NAME.key and NAME.crt did not match and nothing put
 * them right (a controller or node could not start). */
START_TEST(test_renew_crash_safe)
{
	char err[1024], p[PATH_MAX * 2], *old, *now, *iss, *last;

	ck_assert_int_eq(ca_init(cadir, err, sizeof(err)), 0);
	ck_assert_msg(ca_issue(cadir, "node01", 0, err, sizeof(err)) == 0, "%s", err);
	for (int step = 1; step <= CA_RENEW_STEPS + 1; step++) {
		int torn = step == CA_RENEW_STEPS + 1;	/* crt.new cut short */

		old = pair_serial(step);
		renew_killed(torn ? 4 : step);
		if (torn)
			ck_assert_int_eq(truncate(pth(p, sizeof(p), cadir, "node01.crt.new"), 200), 0);
		ck_assert_int_eq(run_cmd("list", "--ca-dir", cadir, NULL), 0);
		now = pair_serial(step);
		iss = cu_slurp(pth(p, sizeof(p), cadir, "issued.txt"));
		ck_assert_ptr_nonnull(iss);
		iss[strlen(iss) - 1] = '\0';
		last = strrchr(iss, '\n') ? strrchr(iss, '\n') + 1 : iss;
		/* the new pair once both its files were whole, and it is the last issued */
		if (step >= 4 && !torn)
			ck_assert_msg(strncmp(last, now, strlen(now)) == 0, "step %d: %s, not %s",
			    step, now, last);
		else
			ck_assert_str_eq(now, old);
		ck_assert_int_eq(access(pth(p, sizeof(p), cadir, "node01.key.new"), F_OK), -1);
		ck_assert_int_eq(access(pth(p, sizeof(p), cadir, "node01.crt.new"), F_OK), -1);
		free(iss);
		free(now);
		/* and the next renew renews */
		ck_assert_int_eq(run_cmd("renew", "--days=36500", "--ca-dir", cadir, NULL), 0);
		now = pair_serial(step);
		ck_assert_str_ne(now, old);
		free(now);
		free(old);
	}
}
END_TEST

/* ca renew of the controller's own pair killed between its renames
 * (--test-kill-at 5: controller.key new, controller.crt old).  A ping with
 * the CA directory read-only (a mount: it may not finish the renew) is
 * refused with what to run, not an OpenSSL error, and changes nothing; a
 * ping that may write there finishes the renew under ca.lock, as ca list
 * would, and the agent answers it (the new certificate).  Before, every
 * ping failed "controller.key: cannot load key: ... key values mismatch"
 * until a ca command or bootstrap ran. */
START_TEST(test_ping_after_renew_crash)
{
	char p[PATH_MAX * 2], q[PATH_MAX * 2], ro[PATH_MAX * 2], *out = NULL, *txt;
	struct harness hh;
	EVP_PKEY *k;
	X509 *x;

	ck_assert_int_eq(harness_start(&hh, 1, 1), 0);
	/* node01 aside: the renew's first (and killed) pair is the controller's */
	ck_assert_int_eq(rename(pth(p, sizeof(p), hh.ca_dir, "node01.crt"),
	    pth(q, sizeof(q), hh.ca_dir, "node01.pem")), 0);
	renew_killed_in(hh.ca_dir, 5);
	ck_assert_int_eq(rename(q, p), 0);
	ck_assert_int_eq(access(pth(p, sizeof(p), hh.ca_dir, "controller.crt.new"), F_OK), 0);
	snprintf(ro, sizeof(ro), "%s/ro.out", hh.tmp);
	ck_assert_int_ne(harness_sh("ip netns exec %s unshare -m sh -c 'mount --bind -o ro %s %s "
	    "&& exec %s/knobctl -c %s ping -a' >%s 2>&1", hh.ctl_ns, hh.ca_dir, hh.ca_dir, hh.bin,
	    hh.cluster, ro), 0);
	txt = cu_slurp(ro);
	ck_assert_msg(strstr(txt, "controller.crt: a ca renew of controller was interrupted "
	    "(") && strstr(txt, "run knobctl ca list --ca-dir ") && !strstr(txt, "cannot load"),
	    "%s", txt);
	free(txt);
	ck_assert_int_eq(access(p, F_OK), 0);
	ck_assert_int_eq(harness_knobctl(&hh, &out, NULL, "ping -a"), 0);
	ck_assert_msg(strstr(out, "1 ok") != NULL, "%s", out);
	ck_assert_int_eq(access(p, F_OK), -1);
	x = load_cert(pth(p, sizeof(p), hh.ca_dir, "controller.crt"));
	k = load_key(pth(q, sizeof(q), hh.ca_dir, "controller.key"));
	ck_assert_int_eq(X509_check_private_key(x, k), 1);
	X509_free(x);
	EVP_PKEY_free(k);
	free(out);
	harness_stop(&hh);
}
END_TEST

/* A CA key others can read or write (restored from a backup as 0644, a
 * group-shared copy), or one another user owns, is not used: issue, revoke
 * and renew refuse it with a message saying why and what to do, and write
 * nothing; at 0600 and root's again all work.  Before, any mode was used
 * as it was, and any owner (the owner check is on the file read: fstat). */
START_TEST(test_ca_key_mode_refused)
{
	static const mode_t bad[] = { 0644, 0640, 0604, 0620 };
	char err[1024], p[PATH_MAX * 2], *out = NULL;
	int n;

	ck_assert_int_eq(ca_init(cadir, err, sizeof(err)), 0);
	ck_assert_msg(ca_issue(cadir, "node01", 0, err, sizeof(err)) == 0, "%s", err);
	n = cu_dir_size(cadir);
	pth(p, sizeof(p), cadir, "ca.key");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(chmod(p, bad[i]), 0);
		ck_assert_int_eq(ca_issue(cadir, "node02", 0, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, "ca.key: mode 0") && strstr(err, "chmod 600"), "%s", err);
		ck_assert_int_eq(run_cmd("revoke", "node01", "--ca-dir", cadir, NULL), 1);
		ck_assert_int_eq(run_ca_list(&out, "renew", "--days", "36500", "--ca-dir", cadir,
		    NULL), 1);
		free(out);
		ck_assert_int_eq(cu_dir_size(cadir), n);
	}
	/* 0600 but another user's: that user can read it, or chmod it */
	ck_assert_int_eq(chmod(p, 0600), 0);
	ck_assert_int_eq(chown(p, 65534, 0), 0);
	ck_assert_int_eq(ca_issue(cadir, "node02", 0, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "ca.key: owned by uid 65534, neither this user (uid 0) nor root") &&
	    strstr(err, "not used; chown 0 "), "%s", err);
	ck_assert_int_eq(cu_dir_size(cadir), n);
	ck_assert_int_eq(chown(p, 0, 0), 0);
	ck_assert_msg(ca_issue(cadir, "node02", 0, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(run_cmd("revoke", "node01", "--ca-dir", cadir, NULL), 0);
	ck_assert_int_eq(crl_count(cadir), 1);
}
END_TEST

/* Fill the file system that holds dir with a file there; the file's path
 * into path. */
static void
fill_fs(const char *dir, char *path, size_t len)
{
	static const char block[4096];
	int fd;

	snprintf(path, len, "%s/filler", dir);
	ck_assert_int_ge(fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), 0);
	while (write(fd, block, sizeof(block)) > 0)
		;
	while (write(fd, block, 1) > 0)
		;
	ck_assert_int_eq(errno, ENOSPC);
	close(fd);
}

/* Blank lines (skipped by readers) at the end of the records file path up
 * to room bytes before its page's end, then the file system at mnt filled
 * (filler: the file that fills it): the next records fit only in part.
 * path's text (malloc'd). */
static char *
fill_but(const char *path, off_t room, const char *mnt, char *filler, size_t len)
{
	struct stat st;
	int fd;

	ck_assert_int_ge(fd = open(path, O_WRONLY | O_APPEND), 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	for (off_t i = st.st_size; i < 4096 - room; i++)
		ck_assert_int_eq(write(fd, "\n", 1), 1);
	close(fd);
	fill_fs(mnt, filler, len);
	return cu_slurp(path);
}

/* ca_revoke_names' report: the count of names that failed into arg. */
static void
count_failed(void *arg, const char *name, const struct strvec *done, const char *err)
{
	(void)name;
	(void)done;
	*(int *)arg += err != NULL;
}

/* A disk that fills up while ca issue records a serial: issued.txt ends
 * as it was, never in half a record, and the next issue and revoke work.
 * Before, the part that fitted stayed; the next record completed it into
 * a wrong serial ("ca revoke" revoked that one, not the node's) or a bad
 * line that stopped ca revoke and bootstrap. */
START_TEST(test_records_whole_on_full_disk)
{
	char err[1024], small[PATH_MAX + 16], ca[PATH_MAX + 32], p[PATH_MAX * 2],
	    filler[PATH_MAX * 2], *before, *after, *serial, *revoked;

	/* a 64 KiB tmpfs in a mount namespace of this test's own */
	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(small, sizeof(small), "%s/small", tmpdir);
	ck_assert_int_eq(mkdir(small, 0700), 0);
	ck_assert_msg(mount("knobtest", small, "tmpfs", 0, "size=64k") == 0, "mount: %s",
	    strerror(errno));
	snprintf(ca, sizeof(ca), "%s/ca", small);
	ck_assert_int_eq(ca_init(ca, err, sizeof(err)), 0);
	ck_assert_msg(ca_issue(ca, "node01", 0, err, sizeof(err)) == 0, "%s", err);
	/* 10 bytes left: the next record fits only in part */
	before = fill_but(pth(p, sizeof(p), ca, "issued.txt"), 10, small, filler, sizeof(filler));

	ck_assert_int_eq(ca_issue(ca, "node02", 0, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "issued.txt: No space left on device"), "%s", err);
	after = cu_slurp(p);
	ck_assert_msg(strcmp(before, after) == 0, "issued.txt kept %zu bytes of a record: '%s'",
	    strlen(after) - strlen(before), after + strlen(before));
	ck_assert_int_eq(access(pth(p, sizeof(p), ca, "node02.key"), F_OK), -1);

	/* space again: node03's record is whole, and revoking it revokes it */
	ck_assert_int_eq(unlink(filler), 0);
	ck_assert_msg(ca_issue(ca, "node03", 0, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(ca_revoke(ca, "node03", NULL, err, sizeof(err)) == 0, "%s", err);
	serial = serial_of(pth(p, sizeof(p), ca, "node03.crt"));
	ck_assert_int_eq(crl_count(ca), 1);
	revoked = cu_slurp(pth(p, sizeof(p), ca, "revoked.txt"));
	ck_assert_msg(strstr(revoked, serial), "%s not in %s", serial, revoked);
	free(revoked);
	free(serial);
	free(before);
	free(after);

	/* two names revoked at once on a full disk: their records (one write)
	 * are all on record or none, and both names fail */
	ck_assert_msg(ca_issue(ca, "node04", 0, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(ca_issue(ca, "node05", 0, err, sizeof(err)) == 0, "%s", err);
	before = fill_but(pth(p, sizeof(p), ca, "revoked.txt"), 60, small, filler, sizeof(filler));
	ck_assert_int_eq(ca_revoke_names(ca, (const char *const[]){ "node04", "node05" }, 2,
	    count_failed, &(int){ 0 }), 2);
	after = cu_slurp(p);
	ck_assert_msg(strcmp(before, after) == 0, "revoked.txt kept '%s'", after + strlen(before));
	free(before);
	free(after);
	ck_assert_int_eq(umount2(small, MNT_DETACH), 0);
}
END_TEST

/* This process's write system calls so far (/proc/self/io syscw). */
static long
writes_so_far(void)
{
	char *io = cu_slurp("/proc/self/io"), *at;
	long n;

	ck_assert_ptr_nonnull(io);
	ck_assert_ptr_nonnull(at = strstr(io, "syscw: "));
	n = atol(at + 7);
	free(io);
	return n;
}

/* Does DIR/ca.crl (signed by DIR/ca.crt) revoke the certificate in crt? */
static int
crl_has(const char *crt)
{
	char p[PATH_MAX * 2], why[512], *pem;
	int in;

	pem = cu_slurp(pth(p, sizeof(p), cadir, "ca.crl"));
	ck_assert_ptr_nonnull(pem);
	in = ca_crl_revokes(pem, strlen(pem), crt, why, sizeof(why)) == 1;
	free(pem);
	return in;
}

#define RACK 40

/* One ca revoke of a retired rack's names: every serial in revoked.txt
 * and the CRL, and the records go in one write (and one fsync), not one
 * per name.  Before, each name's record was appended and fsync'd on its
 * own: 200 names took a second on a loop-device ext4. */
START_TEST(test_revoke_many_names)
{
	char err[1024], p[PATH_MAX * 2], names[RACK][16], *rev, *serial;
	const char *v[RACK];
	long before;
	int failed = 0;

	ck_assert_int_eq(ca_init(cadir, err, sizeof(err)), 0);
	for (int i = 0; i < RACK; i++) {
		snprintf(names[i], sizeof(names[i]), "rack%03d", i);
		v[i] = names[i];
		ck_assert_msg(ca_issue(cadir, v[i], 0, err, sizeof(err)) == 0, "%s", err);
	}
	before = writes_so_far();
	ck_assert_int_eq(ca_revoke_names(cadir, v, RACK, count_failed, &failed), 0);
	ck_assert_msg(writes_so_far() - before < RACK / 4, "%ld writes for %d names",
	    writes_so_far() - before, RACK);
	ck_assert_int_eq(failed, 0);
	ck_assert_int_eq(crl_count(cadir), RACK);
	rev = cu_slurp(pth(p, sizeof(p), cadir, "revoked.txt"));
	ck_assert_ptr_nonnull(rev);
	for (int i = 0; i < RACK; i++) {
		snprintf(p, sizeof(p), "%s/%s.crt", cadir, v[i]);
		serial = serial_of(p);
		ck_assert_msg(strstr(rev, serial) != NULL, "%s (%s) not in revoked.txt", v[i],
		    serial);
		ck_assert_msg(crl_has(p), "%s not in the CRL", v[i]);
		free(serial);
	}
	free(rev);
}
END_TEST

/* What bootstrap issues (ca_issue_pem: never written as DIR/NAME.crt) is
 * on record: `ca revoke NAME` revokes it, with or without a DIR/NAME.crt
 * of `ca issue`, every certificate of the name at once, and says which. */
START_TEST(test_revoke_bootstrap_issued)
{
	char err[1024], *c1 = NULL, *c2 = NULL, *c3 = NULL, *k = NULL;
	struct strvec done = { 0 };

	ck_assert_int_eq(ca_init(cadir, err, sizeof(err)), 0);
	ck_assert_int_eq(ca_issue(cadir, "node01", 0, err, sizeof(err)), 0);
	ck_assert_int_eq(ca_issue_pem(cadir, "node01", 0, &c1, &k, err, sizeof(err)), 0);
	free(k);
	ck_assert_int_eq(ca_issue_pem(cadir, "node01", 0, &c2, &k, err, sizeof(err)), 0);
	free(k);
	ck_assert_int_eq(ca_issue_pem(cadir, "node02", 0, &c3, &k, err, sizeof(err)), 0);
	free(k);
	/* bootstrap's node02 has no DIR/node02.crt */
	ck_assert_msg(ca_revoke(cadir, "node02", &done, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq((int)done.n, 1);
	ck_assert_int_eq(ca_check_leaf(cadir, c3, "node02", 30, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "certificate revoked");
	strvec_free(&done);
	/* node01: the ca issue pair and both bootstrap ones */
	ck_assert_msg(ca_revoke(cadir, "node01", &done, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq((int)done.n, 3);
	ck_assert_int_eq(ca_check_leaf(cadir, c1, "node01", 30, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "certificate revoked");
	ck_assert_int_eq(ca_check_leaf(cadir, c2, "node01", 30, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "certificate revoked");
	ck_assert_int_eq(crl_count(cadir), 4);
	ck_assert_int_eq(ca_revoke(cadir, "node09", NULL, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "no certificate issued under this name") != NULL, "%s", err);
	strvec_free(&done);
	free(c1);
	free(c2);
	free(c3);
}
END_TEST

/* Bad revoked.txt lines are "revoked.txt:LINE: ..." errors that revoke
 * nothing (no partial serial such as 0x12 of "12zz"); good ones are read
 * whatever their case and leading zeros. */
START_TEST(test_revoked_txt_bad_lines)
{
	static const struct { const char *text, *want; } bad[] = {
		{ "12zz node7\n", ":1: bad serial '12zz' (1 to 40 hex digits, nothing else)" },
		{ "\nAB node3\n4B:1B:2C node7\n", ":3: bad serial '4B:1B:2C' (1 to" },
		{ "zz node7\n", ":1: bad serial 'zz' (1 to" },
		{ "AB node3\nABCD\n", ":2: no name after the serial ABCD" },
		{ "0123456789012345678901234567890123456789A n\n", ":1: bad serial '0123" },
	};
	char err[1024], p[PATH_MAX * 2], want[PATH_MAX * 3], *pem, *hex, *lower;
	BIGNUM *bn;
	X509 *x;
	FILE *f;

	pem = ca_node01_and(cadir, "node02", 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cu_write(pth(p, sizeof(p), cadir, "revoked.txt"), 0644, "%s", bad[i].text);
		snprintf(want, sizeof(want), "%s%s", p, bad[i].want);
		ck_assert_int_eq(ca_revoke(cadir, "node02", NULL, err, sizeof(err)), -1);
		ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "want %s, got %s", want, err);
		ck_assert_int_eq(ca_check_leaf(cadir, pem, "node01", 30, err, sizeof(err)), -1);
		ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "want %s, got %s", want, err);
		ck_assert_int_eq(access(pth(p, sizeof(p), cadir, "ca.crl"), F_OK), -1);
	}
	/* node01's serial in lower case with a leading zero, and 0ab */
	f = fopen(pth(p, sizeof(p), cadir, "node01.crt"), "r");
	ck_assert_ptr_nonnull(f);
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	ck_assert_ptr_nonnull(x);
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	hex = BN_bn2hex(bn);
	BN_free(bn);
	lower = xasprintf("0%s", hex);
	for (char *c = lower; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	cu_write(pth(p, sizeof(p), cadir, "revoked.txt"), 0644, "0ab node9\r\n%s node01  \n", lower);
	ck_assert_msg(ca_revoke(cadir, "node02", NULL, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(ca_check_leaf(cadir, pem, "node01", 30, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "certificate revoked");
	ck_assert_int_eq(crl_count(cadir), 3);
	free(lower);
	OPENSSL_free(hex);
	X509_free(x);
	free(pem);
}
END_TEST

/* knobctl's TLS context with dir's CA and ctl2's pair; NULL with err. */
static SSL_CTX *
ctl_ctx(const char *dir, char *err, size_t errlen)
{
	char ca[PATH_MAX * 2], crt[PATH_MAX * 2], key[PATH_MAX * 2];

	return tls_ctx_new(0, pth(ca, sizeof(ca), dir, "ca.crt"), pth(crt, sizeof(crt), dir,
	    "ctl2.crt"), pth(key, sizeof(key), dir, "ctl2.key"), err, errlen);
}

/* The controller's context loads the CRL next to its CA: none, nothing
 * revoked; its own, checked (CRL_CHECK); another CA's, ignored; one that
 * is there but cannot be opened, an error (never "nothing revoked"). */
START_TEST(test_controller_loads_crl)
{
	char err[1024], p[PATH_MAX * 2], other[PATH_MAX * 2], *pem;
	SSL_CTX *ctx;

	pem = ca_node01_and(cadir, "ctl2", 1);
	free(pem);
	ck_assert_ptr_nonnull(ctx = ctl_ctx(cadir, err, sizeof(err)));
	ck_assert_int_eq(X509_VERIFY_PARAM_get_flags(X509_STORE_get0_param(
	    SSL_CTX_get_cert_store(ctx))) & X509_V_FLAG_CRL_CHECK, 0);
	SSL_CTX_free(ctx);
	ck_assert_int_eq(ca_revoke(cadir, "node01", NULL, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(ctx = ctl_ctx(cadir, err, sizeof(err)));
	ck_assert_int_ne(X509_VERIFY_PARAM_get_flags(X509_STORE_get0_param(
	    SSL_CTX_get_cert_store(ctx))) & X509_V_FLAG_CRL_CHECK, 0);
	SSL_CTX_free(ctx);
	/* another CA's CRL in its place: ignored */
	snprintf(other, sizeof(other), "%s/ca2", tmpdir);
	pem = ca_node01_and(other, "x", 0);
	free(pem);
	ck_assert_int_eq(ca_revoke(other, "x", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(rename(pth(err, sizeof(err), other, "ca.crl"), pth(p, sizeof(p), cadir,
	    "ca.crl")), 0);
	ck_assert_ptr_nonnull(ctx = ctl_ctx(cadir, err, sizeof(err)));
	ck_assert_int_eq(X509_VERIFY_PARAM_get_flags(X509_STORE_get0_param(
	    SSL_CTX_get_cert_store(ctx))) & X509_V_FLAG_CRL_CHECK, 0);
	SSL_CTX_free(ctx);
	/* there but unopenable (a symlink loop; root reads any mode) */
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(symlink("ca.crl", p), 0);
	ck_assert_ptr_null(ctx = ctl_ctx(cadir, err, sizeof(err)));
	ck_assert_msg(strstr(err, "ca.crl: cannot load CRL: Too many levels of symbolic links"),
	    "%s", err);
}
END_TEST

/* ca revoke refuses this knobctl's own controller certificate without
 * --force (exit 2, nothing written, not even the other names'
 * revocations), also when DIR/NAME.crt is gone and only the name's serials
 * hold it; another controller's certificate (a leaked or retired one) is
 * revoked as a node's is; --force is revoke's only. */
START_TEST(test_revoke_controller_guard)
{
	char p[PATH_MAX * 2], own[PATH_MAX * 2], other[PATH_MAX * 2];

	ck_assert_int_eq(run_cmd("init", cadir, NULL), 0);
	ck_assert_int_eq(run_cmd("issue", cadir, "ctl1", "head", "--controller", NULL), 0);
	ck_assert_int_eq(run_cmd("issue", cadir, "n1", NULL), 0);
	pth(own, sizeof(own), cadir, "ctl1.crt");
	ck_assert_int_eq(run_cmd("revoke", "ctl1", "--ca-dir", cadir, "--cert", own, NULL), 2);
	ck_assert_int_eq(run_cmd("revoke", "n1", "ctl1", "--ca-dir", cadir, "--cert", own, NULL),
	    2);
	ck_assert_int_lt(access(pth(p, sizeof(p), cadir, "revoked.txt"), F_OK), 0);
	ck_assert_int_lt(access(pth(p, sizeof(p), cadir, "ca.crl"), F_OK), 0);
	ck_assert_int_eq(run_cmd("revoke", "n1", "--ca-dir", cadir, "--cert", own, NULL), 0);
	/* this knobctl is head: ctl1, another controller, is revoked */
	pth(other, sizeof(other), cadir, "head.crt");
	ck_assert_int_eq(run_cmd("revoke", "ctl1", "--ca-dir", cadir, "--cert", other, NULL), 0);
	ck_assert_int_eq(run_cmd("issue", cadir, "n2", "--force", NULL), 2);
	/* head.crt moved away (its serial still in issued.txt): the role is
	 * known only from this knobctl's own certificate */
	snprintf(own, sizeof(own), "%s.own.crt", cadir);
	ck_assert_int_eq(rename(other, own), 0);
	ck_assert_int_eq(run_cmd("revoke", "head", "--ca-dir", cadir, "--cert", own, NULL), 2);
	ck_assert_int_eq(run_cmd("revoke", "head", "--ca-dir", cadir, "--cert", own, "--force",
	    NULL), 0);
	unlink(own);
}
END_TEST

/* ca_init of tmpdir/ca-N with KNOB_TEST_CA_DAYS=v; ca_expiry_check of it
 * against min_days (1: it expires within them). */
static int
ca_days_hook(int n, const char *v, int min_days)
{
	char err[PATH_MAX + 256], dir[PATH_MAX + 16];

	snprintf(dir, sizeof(dir), "%s/ca-%d", tmpdir, n);
	ck_assert_int_eq(setenv("KNOB_TEST_CA_DAYS", v, 1), 0);
	ck_assert_msg(ca_init(dir, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(unsetenv("KNOB_TEST_CA_DAYS"), 0);
	return ca_expiry_check(dir, min_days, err, sizeof(err));
}

/* KNOB_TEST_CA_DAYS outside 1 to 3650, or not a number, is ignored (the
 * 10-year CA), not cut to the range; leading digits count ("10d": 10). */
START_TEST(test_ca_days_hook_range)
{
	static const char *const ignored[] = { "0", "-5", "3651", "x", "", "99999999999999999999" };

	for (size_t i = 0; i < nitems(ignored); i++)
		ck_assert_msg(ca_days_hook((int)i, ignored[i], 3600) == 0,
		    "KNOB_TEST_CA_DAYS='%s' gave a CA that ends within 3600 days", ignored[i]);
	ck_assert_int_eq(ca_days_hook(99, "10d", 30), 1);
}
END_TEST

/* A CA that expires in 10 days (KNOB_TEST_CA_DAYS, read by ca init for
 * tests only): the leaves it signs expire with it.  A fresh one passes the
 * leaf check every time (it was judged "expires within 30 days" at once:
 * bootstrap re-keyed every node on every run), ca renew reissues nothing
 * and says why (exit 1), and the CA's own expiry is worded (ping: once). */
START_TEST(test_ca_near_expiry_not_rekeyed)
{
	char err[PATH_MAX + 256], want[PATH_MAX + 256], p[PATH_MAX * 2], *crt = NULL, *key = NULL;
	char *before = NULL, *after = NULL, *out = NULL;
	json_object *doc;

	ck_assert_int_eq(setenv("KNOB_TEST_CA_DAYS", "10", 1), 0);
	ck_assert_int_eq(run_cmd("init", cadir, NULL), 0);
	ck_assert_int_eq(unsetenv("KNOB_TEST_CA_DAYS"), 0);
	ck_assert_int_eq(ca_issue(cadir, "node01", 0, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ca_issue_pem(cadir, "node07", 0, &crt, &key, err, sizeof(err)), 0);
		ck_assert_msg(ca_check_leaf(cadir, crt, "node07", 30, err, sizeof(err)) == 0,
		    "a fresh leaf of a CA in its last days: %s", err);
		ck_assert_int_eq(ca_check_leaf(cadir, crt, "node07", 30, err, sizeof(err)), 0);
		free(crt);
		free(key);
	}
	ck_assert_int_eq(ca_expiry_check(cadir, 30, err, sizeof(err)), 1);
	snprintf(want, sizeof(want), "the CA %s/ca.crt expires in ", cadir);
	ck_assert_msg(strstr(err, want) && (strstr(err, " in 10 days (") || strstr(err,
	    " in 9 days (")) && strstr(err, "): certificates cannot outlive it; a new CA is needed"),
	    "%s", err);
	ck_assert_int_eq(ca_expiry_check(cadir, 5, err, sizeof(err)), 0);

	ck_assert_int_eq(read_file_bounded(pth(p, sizeof(p), cadir, "node01.crt"), 1 << 20, &before,
	    NULL), 0);
	ck_assert_int_eq(run_ca_list(&out, "renew", "--ca-dir", cadir, NULL), 1);
	snprintf(want, sizeof(want), "not renewed %s/node01.crt: it expires with the CA (a new one "
	    "cannot outlive the CA)", cadir);
	ck_assert_msg(strstr(out, want) && !strstr(out, "renewed %s"), "%s", out);
	free(out);
	ck_assert_int_eq(read_file_bounded(p, 1 << 20, &after, NULL), 0);
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(run_ca_list(&out, "--json", "renew", "--ca-dir", cadir, NULL), 1);
	doc = json_tokener_parse(out);
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(jget(doc, "not_renewed", 0, "reason"), "ca_expires");
	ck_assert_str_eq(jget(doc, "renewed", -1, NULL), "[ ]");
	json_object_put(doc);
	free(out);
	free(before);
	free(after);

	/* ping says so too, once (the node: loopback, nothing listening) */
	ck_assert_int_eq(ca_issue(cadir, "head", 1, err, sizeof(err)), 0);
	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER %s/knobctl --ca %s/ca.crt --cert "
	    "%s/head.crt --key %s/head.key --connect-timeout 1 ping -w 127.0.0.1", getenv("KNOB_BIN") ?
	    getenv("KNOB_BIN") : "build", cadir, cadir, cadir), 1);
	snprintf(want, sizeof(want), "knobctl ping: warning: the CA %s/ca.crt expires in ", cadir);
	ck_assert_msg(strstr(out, want) && strstr(strstr(out, want) + 1, want) == NULL, "%s", out);
	free(out);

	/* the CA certificate at another name, in a directory with no ca.crt:
	 * the one TLS trusts is checked (DIR/ca.crt was: silence) */
	snprintf(p, sizeof(p), "%s.trust/cluster-ca.pem", cadir);
	ck_assert_int_eq(cu_sh_out(&out, "mkdir -p %s.trust && cp %s/ca.crt %s", cadir, cadir, p), 0);
	free(out);
	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER %s/knobctl --ca %s --cert "
	    "%s/head.crt --key %s/head.key --connect-timeout 1 ping -w 127.0.0.1", getenv("KNOB_BIN") ?
	    getenv("KNOB_BIN") : "build", p, cadir, cadir), 1);
	snprintf(want, sizeof(want), "knobctl ping: warning: the CA %s expires in ", p);
	ck_assert_msg(strstr(out, want), "%s", out);
	free(out);
	snprintf(p, sizeof(p), "%s.trust", cadir);
	cu_rm_rf(p);
}
END_TEST

/* The line of `ca list`'s text out that shows serial, its columns joined
 * by '|' (NAME|ROLE|SERIAL|NOT AFTER|STATE); malloc'd, "" when none. */
static char *
list_row(const char *out, const char *serial)
{
	const char *p = strstr(out, serial), *b, *e;
	char *row, *w;

	if (p == NULL)
		return xstrdup("");
	for (b = p; b > out && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	e = e ? e : p + strlen(p);
	row = w = xcalloc(1, (size_t)(e - b) + 1);
	for (const char *c = b; c < e; c++) {
		if (c[0] == ' ' && c + 1 < e && c[1] == ' ') {
			while (c + 1 < e && c[1] == ' ')
				c++;
			*w++ = '|';
		} else {
			*w++ = *c;
		}
	}
	return row;
}

/* The not-after day (YYYY-MM-DD, UTC) of the certificate in path. */
static void
not_after_day(const char *path, char *buf, size_t len)
{
	X509 *x = load_cert(path);
	struct tm tm;

	ck_assert_int_eq(ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm), 1);
	strftime(buf, len, "%Y-%m-%d", &tm);
	X509_free(x);
}

/* The record of serial in `ca list --json`'s "certificates" (NULL: none). */
static json_object *
list_cert_json(json_object *doc, const char *serial)
{
	json_object *certs = json_object_object_get(doc, "certificates");

	for (size_t i = 0; i < json_object_array_length(certs); i++) {
		json_object *c = json_object_array_get_idx(certs, i);

		if (strcmp(json_object_get_string(json_object_object_get(c, "serial")), serial) == 0)
			return c;
	}
	return NULL;
}

/* Expect DIR/NAME.crt's row in out to be NAME|ROLE|SERIAL|DAY|state. */
static void
expect_row(const char *out, const char *name, const char *role, const char *state)
{
	char p[PATH_MAX * 2], day[32], *serial, *row, *want;

	pth(p, sizeof(p), cadir, name);
	strcat(p, ".crt");
	serial = serial_of(p);
	not_after_day(p, day, sizeof(day));
	row = list_row(out, serial);
	want = xasprintf("%s|%s|%s|%s|%s", name, role, serial, day, state);
	ck_assert_msg(strcmp(row, want) == 0, "want '%s', got '%s' in\n%s", want, row, out);
	free(want);
	free(row);
	free(serial);
}

/* Expect the row of serial (its certificate not in DIR) in out to be
 * NAME|-|SERIAL|-|state. */
static void
expect_bare_row(const char *out, const char *name, const char *serial, const char *state)
{
	char *row = list_row(out, serial), *want = xasprintf("%s|-|%s|-|%s", name, serial, state);

	ck_assert_msg(strcmp(row, want) == 0, "want '%s', got '%s' in\n%s", want, row, out);
	free(want);
	free(row);
}

/* Expect DIR/NAME.crt's record in `ca list --json` doc: role and state. */
static void
expect_json(json_object *doc, const char *name, const char *role, const char *state)
{
	char p[PATH_MAX * 2], day[32], *serial;
	json_object *c;

	pth(p, sizeof(p), cadir, name);
	strcat(p, ".crt");
	serial = serial_of(p);
	not_after_day(p, day, sizeof(day));
	ck_assert_msg((c = list_cert_json(doc, serial)) != NULL, "%s: no record", name);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(c, "name")), name);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(c, "role")), role);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(c, "state")), state);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(c, "cert")), p);
	ck_assert_msg(strncmp(json_object_get_string(json_object_object_get(c, "not_after")), day,
	    strlen(day)) == 0, "%s: not_after %s", name,
	    json_object_get_string(json_object_object_get(c, "not_after")));
	free(serial);
}

/* ca list: every certificate the CA issued (DIR/NAME.crt and what
 * issued.txt records: bootstrap's too) with its role, serial, not-after
 * and state; revoked is the CRL's word; the CA's end and the CRL. */
START_TEST(test_ca_list)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	char err[1024], want[PATH_MAX * 2], line[PATH_MAX * 2 + 64], *out = NULL, *crt = NULL, *key = NULL, *hex, *old;
	json_object *doc, *c;
	BIGNUM *bn;
	X509 *x;
	BIO *b;

	ck_assert_int_eq(run_cmd("init", cadir, NULL), 0);
	ck_assert_int_eq(run_cmd("issue", cadir, "node[01-03]", NULL), 0);
	ck_assert_int_eq(run_cmd("issue", cadir, "--controller", "head", NULL), 0);
	ck_assert_int_eq(run_cmd("revoke", "node02", "--ca-dir", cadir, NULL), 0);
	/* bootstrap's: on record in issued.txt only */
	ck_assert_int_eq(ca_issue_pem(cadir, "node07", 0, &crt, &key, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(b = BIO_new_mem_buf(crt, -1));
	ck_assert_ptr_nonnull(x = PEM_read_bio_X509(b, NULL, NULL, NULL));
	ck_assert_ptr_nonnull(bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL));
	hex = BN_bn2hex(bn);

	ck_assert_int_eq(run_ca_list(&out, "list", "--ca-dir", cadir, NULL), 0);
	expect_row(out, "node01", "node", "valid");
	expect_row(out, "node02", "node", "revoked");
	expect_row(out, "node03", "node", "valid");
	expect_row(out, "head", "controller", "valid");
	expect_bare_row(out, "node07", hex, "unknown");
	snprintf(want, sizeof(want), "CA %s/ca.crt: not after ", cadir);
	ck_assert_msg(strncmp(out, want, strlen(want)) == 0 && strstr(out, " days left)\n"), "%s", out);
	snprintf(want, sizeof(want), "\nCRL %s/ca.crl: 1 revoked serial, last update 20", cadir);
	ck_assert_msg(strstr(out, want) && strstr(out, " UTC\n"), "%s", out);
	free(out);

	doc = run_json("list", "--json", "--ca-dir", cadir, NULL);
	ck_assert_str_eq(jget(doc, "command", -1, NULL), "ca list");
	ck_assert_int_eq(json_object_array_length(json_object_object_get(doc, "certificates")), 5);
	expect_json(doc, "node01", "node", "valid");
	expect_json(doc, "node02", "node", "revoked");
	expect_json(doc, "node03", "node", "valid");
	expect_json(doc, "head", "controller", "valid");
	ck_assert_ptr_nonnull(c = list_cert_json(doc, hex));
	ck_assert_str_eq(json_object_get_string(json_object_object_get(c, "state")), "unknown");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(c, "name")), "node07");
	ck_assert_str_eq(jget(doc, "crl", -1, "revoked"), "1");
	ck_assert_str_eq(jget(doc, "crl", -1, "file"), pth(want, sizeof(want), cadir, "ca.crl"));
	ck_assert_msg(strncmp(jget(doc, "crl", -1, "last_update"), "20", 2) == 0, "%s",
	    jget(doc, "crl", -1, "last_update"));
	ck_assert_msg(strncmp(jget(doc, "ca", -1, "not_after"), "20", 2) == 0, "%s",
	    jget(doc, "ca", -1, "not_after"));
	ck_assert_str_eq(jget(doc, "errors", -1, NULL), "[ ]");
	ck_assert_str_eq(jget(doc, "exit_status", -1, NULL), "0");
	json_object_put(doc);

	/* renewed: the old node01 is on record only (superseded), the new one
	 * valid, node02 (revoked) not renewed */
	old = serial_of(pth(want, sizeof(want), cadir, "node01.crt"));
	ck_assert_int_eq(run_cmd("renew", "--days", "36500", "--ca-dir", cadir, NULL), 0);
	ck_assert_int_eq(run_ca_list(&out, "list", "--ca-dir", cadir, NULL), 0);
	expect_row(out, "node01", "node", "valid");
	expect_row(out, "node02", "node", "revoked");
	expect_bare_row(out, "node01", old, "superseded (renewed away)");
	free(old);
	free(out);

	/* no CA there: an input error */
	pth(want, sizeof(want), tmpdir, "nosuch");
	ck_assert_int_eq(run_cmd("list", "--ca-dir", want, NULL), 2);
	/* said once, as the error: before, a warning of the same words came
	 * first (the crash recovery's failure on a directory not there) */
	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER %s/knobctl ca list --ca-dir %s 2>&1",
	    bin, want), 2);
	snprintf(line, sizeof(line), "knobctl: ca list: %s: No such file or directory\n", want);
	ck_assert_str_eq(out, line);
	free(out);
	ck_assert_int_eq(run_cmd("list", "extra", "--ca-dir", cadir, NULL), 2);
	OPENSSL_free(hex);
	BN_free(bn);
	X509_free(x);
	BIO_free(b);
	free(crt);
	free(key);
}
END_TEST

/* ca list of a CA that ends in 10 days (KNOB_TEST_CA_DAYS): its leaves
 * "expire in N days", the CA line says so and the CA's near-expiry
 * warning is given; 20 days later (libfaketime) both have expired. */
START_TEST(test_ca_list_expiring)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	char want[PATH_MAX * 2], *out = NULL;
	json_object *doc;
	int days;

	ck_assert_int_eq(setenv("KNOB_TEST_CA_DAYS", "10", 1), 0);
	ck_assert_int_eq(run_cmd("init", cadir, NULL), 0);
	ck_assert_int_eq(unsetenv("KNOB_TEST_CA_DAYS"), 0);
	ck_assert_int_eq(run_cmd("issue", cadir, "node01", NULL), 0);
	ck_assert_int_eq(run_ca_list(&out, "list", "--ca-dir", cadir, NULL), 0);
	days = strstr(out, "  expires in 10 days\n") ? 10 : 9;
	snprintf(want, sizeof(want), "expires in %d days", days);
	expect_row(out, "node01", "node", want);
	snprintf(want, sizeof(want), "(expires in %d days)\n", days);
	ck_assert_msg(strstr(out, want) < strchr(out, '\n') && strstr(out, want), "%s", out);
	free(out);
	doc = run_json("list", "--ca-dir", cadir, "--json", NULL);
	expect_json(doc, "node01", "node", "expiring");
	ck_assert_msg(strstr(jget(doc, "ca", -1, "warning"), "expires in ") != NULL, "%s",
	    jget(doc, "ca", -1, "warning"));
	json_object_put(doc);

	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER %s/knobctl ca list --ca-dir %s", bin,
	    cadir), 0);
	snprintf(want, sizeof(want), "knobctl ca list: warning: the CA %s/ca.crt expires in ", cadir);
	ck_assert_msg(strstr(out, want) && strstr(out, "certificates cannot outlive it; a new CA "
	    "is needed"), "%s", out);
	free(out);

	cu_faketime_begin();
	ck_assert_int_eq(cu_sh_out(&out, "FAKETIME=+20d %s/knobctl ca list --ca-dir %s", bin, cadir),
	    0);
	cu_faketime_end();
	expect_row(out, "node01", "node", "expired");
	ck_assert_msg(strstr(out, "(expired)\n") < strstr(out, "\nNAME "), "%s", out);
	free(out);
}
END_TEST

/* A file that cannot be read is named (FILE: message), the rest is still
 * listed, exit 1: a truncated ca.crl (revocations then from revoked.txt),
 * a certificate that is not one. */
START_TEST(test_ca_list_bad_files)
{
	char p[PATH_MAX * 2], want[PATH_MAX * 2], *out = NULL, *pem = NULL, *serial;
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	json_object *doc;
	size_t len;

	ck_assert_int_eq(run_cmd("init", cadir, NULL), 0);
	ck_assert_int_eq(run_cmd("issue", cadir, "node[01-03]", NULL), 0);
	ck_assert_int_eq(run_cmd("revoke", "node02", "--ca-dir", cadir, NULL), 0);
	pth(p, sizeof(p), cadir, "ca.crl");
	ck_assert_int_eq(read_file_bounded(p, 1 << 20, &pem, &len), 0);
	ck_assert_int_eq(write_file_atomic(p, pem, len / 2, 0644), 0);
	free(pem);

	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER %s/knobctl ca list --ca-dir %s", bin,
	    cadir), 1);
	snprintf(want, sizeof(want), "knobctl: ca list: %s: ", p);
	ck_assert_msg(strstr(out, want), "%s", out);
	expect_row(out, "node01", "node", "valid");
	expect_row(out, "node02", "node", "revoked");
	expect_row(out, "node03", "node", "valid");
	snprintf(want, sizeof(want), "CRL %s: cannot be used (revocations from revoked.txt)\n", p);
	ck_assert_msg(strstr(out, want), "%s", out);
	free(out);

	/* and node03.crt not a certificate: named, its record still listed */
	serial = serial_of(pth(p, sizeof(p), cadir, "node03.crt"));
	ck_assert_int_eq(write_file_atomic(p, "garbage\n", 8, 0644), 0);
	ck_assert_int_eq(run_ca_list(&out, "--json", "list", "--ca-dir", cadir, NULL), 1);
	ck_assert_ptr_nonnull(doc = json_tokener_parse(out));
	snprintf(want, sizeof(want), "%s/ca.crl: ", cadir);
	ck_assert_msg(strncmp(jget(doc, "errors", 0, NULL), want, strlen(want)) == 0, "%s", out);
	snprintf(want, sizeof(want), "%s: ", p);
	ck_assert_msg(strncmp(jget(doc, "errors", 1, NULL), want, strlen(want)) == 0, "%s", out);
	expect_json(doc, "node02", "node", "revoked");
	ck_assert_str_eq(jget(doc, "crl", -1, "usable"), "false");
	ck_assert_str_eq(jget(doc, "exit_status", -1, NULL), "1");
	json_object_put(doc);
	free(out);
	ck_assert_int_eq(run_ca_list(&out, "list", "--ca-dir", cadir, NULL), 1);
	expect_row(out, "node01", "node", "valid");
	expect_bare_row(out, "node03", serial, "unknown");
	free(serial);
	free(out);
}
END_TEST

static Suite *
ca_suite(void)
{
	Suite *s = suite_create("ca");
	TCase *tc = tcase_create("ca");

	tcase_add_unchecked_fixture(tc, cu_base_setup, cu_base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_ca_init);
	tcase_add_test(tc, test_issue_node_and_controller);
	tcase_add_test(tc, test_umask_does_not_matter);
	tcase_add_test(tc, test_init_twice_refused);
	tcase_add_test(tc, test_issue_twice_refused);
	tcase_add_test(tc, test_ca_concurrent_admins);
	tcase_add_test(tc, test_renew_crash_safe);
	tcase_add_test(tc, test_ping_after_renew_crash);
	tcase_add_test(tc, test_ca_key_mode_refused);
	tcase_add_test(tc, test_records_whole_on_full_disk);
	tcase_add_test(tc, test_revoke_many_names);
	tcase_add_test(tc, test_invalid_names);
	tcase_add_test(tc, test_second_ca_does_not_verify);
	tcase_add_test(tc, test_issue_without_ca);
	tcase_add_test(tc, test_cmd_ca);
	tcase_add_test(tc, test_cmd_ca_json);
	tcase_add_test(tc, test_cmd_ca_days);
	tcase_add_test(tc, test_revoke_check_renew);
	tcase_add_test(tc, test_revoke_bootstrap_issued);
	tcase_add_test(tc, test_revoked_txt_bad_lines);
	tcase_add_test(tc, test_controller_loads_crl);
	tcase_add_test(tc, test_revoke_controller_guard);
	tcase_add_test(tc, test_ca_near_expiry_not_rekeyed);
	tcase_add_test(tc, test_ca_days_hook_range);
	tcase_add_test(tc, test_ca_list);
	tcase_add_test(tc, test_ca_list_expiring);
	tcase_add_test(tc, test_ca_list_bad_files);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run(ca_suite());
}
