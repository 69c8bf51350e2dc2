/* Cluster CA helpers beyond the ca_init/ca_issue pair declared in
 * knobctl.h (controller/ca.c). */
#ifndef KNOB_CA_H
#define KNOB_CA_H

#include <limits.h>
#include <stddef.h>
#include <time.h>

#include "util.h"

/* Longest name accepted: the X.509 upper bound for a common name
 * (ub-common-name, RFC 5280), below the 253 of a DNS name. */
#define CA_NAME_MAX 64
#define CA_CERT_FILE "ca.crt"
#define CA_KEY_FILE "ca.key"
#define CA_REVOKED_FILE "revoked.txt"
#define CA_SUPERSEDED_FILE "superseded.txt"	/* "SERIAL NAME" of renewed-away certificates */
#define CA_ISSUED_FILE "issued.txt"	/* "SERIAL NAME" of every certificate issued */

/* 0 when name is usable as a certificate CN and a file name in the CA
 * directory, else -1 with the reason in err. */
int ca_name_check(const char *name, char *err, size_t errlen);

/* A new key and certificate for name, in memory (PEM, malloc'd): what
 * bootstrap pushes to a node.  0 or -1 with err. */
int ca_issue_pem(const char *dir, const char *name, int controller, char **crt, char **key,
    char *err, size_t errlen);
/* One node certificate DIR/CN.crt (+ .key) naming every one of names in
 * its subjectAltName: a simulated fleet's block of nodes (knob-sim).
 * 0 or -1 with err. */
int ca_issue_fleet(const char *dir, const char *cn, const char *const *names, size_t n,
    char *err, size_t errlen);
/* Revoke every certificate issued under NAME (DIR/NAME.crt, the serials
 * DIR/issued.txt and DIR/superseded.txt list for it: bootstrap's, renewed
 * ones): add them to DIR/revoked.txt and rewrite DIR/ca.crl.  Their serials
 * (hex) are added to done when it is not NULL.  0 or -1 with err (also
 * when nothing was ever issued under NAME). */
int ca_revoke(const char *dir, const char *name, struct strvec *done, char *err, size_t errlen);
/* What ca_revoke_names did for one name: its serials (done), or err when
 * it failed (then done is not to be reported). */
typedef void (*ca_revoke_fn)(void *arg, const char *name, const struct strvec *done,
    const char *err);
/* ca_revoke of each of names, reading DIR's records once and writing
 * DIR/ca.crl once (for thousands of names); fn(arg, ...) for each name, in
 * order, once the CRL is written.  The number of names that failed. */
int ca_revoke_names(const char *dir, const char *const *names, size_t n, ca_revoke_fn fn,
    void *arg);
/* Would ca_revoke_names(dir, names, n) revoke this knobctl's own
 * controller certificate: own (may be NULL: no) when it is a controller's
 * and among a name's serials?  The first such name's index (why names the
 * certificate and its role), else -1 (a name whose serials cannot be read
 * is not).  Other controllers' certificates are not guarded: revoking a
 * leaked or retired one is what revocation is for. */
long ca_revoke_check(const char *dir, const char *const *names, size_t n, const char *own,
    char *why, size_t whylen);
/* Does the CRL pem (len bytes) revoke the certificate in cert?  1 yes (why:
 * "CERT (serial S)"), 0 no, -1 either cannot be read (why). */
int ca_crl_revokes(const char *pem, size_t len, const char *cert, char *why, size_t whylen);
/* Is pem a certificate of this CA for name, not revoked, valid for at least
 * min_days (or until the CA itself expires: a new one would expire no
 * later)?  0 yes, 1 no (why says so), -1 the CA or DIR/revoked.txt cannot
 * be read (why: "DIR/revoked.txt:LINE: ..." for a bad line). */
int ca_check_leaf(const char *dir, const char *pem, const char *name, int min_days, char *why,
    size_t whylen);
/* Does DIR/ca.crt expire within min_days?  1 yes (msg: "the CA DIR/ca.crt
 * expires in N days (DATE): certificates cannot outlive it; a new CA is
 * needed"), 0 no, -1 it cannot be read (msg). */
int ca_expiry_check(const char *dir, int min_days, char *msg, size_t msglen);
/* ca_expiry_check of the CA certificate in crt, whatever it is called
 * (the one a TLS context trusts: --ca, the inventory's <tls ca=...>). */
int ca_cert_expiry_check(const char *crt, int min_days, char *msg, size_t msglen);
#define CA_WARN_DAYS 30	/* ping, facts, bootstrap: warn when the CA expires sooner */
/* Why ca_renew did not renew a certificate. */
enum { CA_NOT_REVOKED = 1, CA_NOT_LIMITED };
/* What ca_renew did with one DIR/NAME.crt (path) that had days_left: its
 * new serial (hex), or NULL when it was not renewed, why_not saying why
 * (CA_NOT_REVOKED: revoked; CA_NOT_LIMITED: it expires with the CA). */
typedef void (*ca_renew_fn)(void *arg, const char *path, int days_left, const char *serial,
    int why_not);
/* Reissue every DIR/NAME.crt expiring within min_days (same name and role)
 * unless it expires with the CA (a new one could not outlive it), telling
 * fn(arg, ...) of each.  0, 1 when some such certificate could not be
 * renewed beyond the CA, or -1 with err. */
int ca_renew(const char *dir, int min_days, int kill_at, ca_renew_fn fn, void *arg, char *err,
    size_t errlen);
/* ca renew's steps for its test hook (--test-kill-at, kill_at of ca_renew:
 * SIGKILL there, as a crash): 1 new serial on record, 2 old one on record
 * as superseded, 3 NAME.key.new written, 4 NAME.crt.new too, 5 NAME.key
 * renamed (not NAME.crt); 0: none. */
#define CA_RENEW_STEPS 5
/* Finish or undo what a renew a crash stopped left in DIR (NAME.key.new,
 * NAME.crt.new): NAME.key and NAME.crt belong together again, the new
 * pair when it was whole, else the old one.  ca revoke and ca renew do it
 * first; bootstrap calls it.  0 or -1 with err. */
int ca_recover(const char *dir, char *err, size_t errlen);
/* Before a command loads the pair DIR/NAME.crt (crt) and DIR/NAME.key: a
 * renew of it that a crash stopped (NAME.crt.new or NAME.key.new left) is
 * finished or undone by ca_recover of DIR, under DIR/ca.lock (waiting for
 * a renew that runs).  0 (nothing left, or put right), or -1 with err
 * naming the fix when it cannot be done here (DIR not ours to write). */
int ca_pair_recover(const char *crt, char *err, size_t errlen);
/* The serial (hex, malloc'd) of the certificate in path; NULL with err. */
char *ca_cert_serial(const char *path, char *err, size_t errlen);

/* What ca_list says of one certificate. */
enum ca_state {
	CA_ST_VALID,		/* valid, not within CA_WARN_DAYS of its end */
	CA_ST_EXPIRING,		/* expires within CA_WARN_DAYS */
	CA_ST_EXPIRED,
	CA_ST_REVOKED,		/* its serial is in DIR/ca.crl */
	CA_ST_SUPERSEDED,	/* renewed away (DIR/superseded.txt), not revoked */
	CA_ST_UNKNOWN,		/* not revoked, not in DIR (bootstrap's) or unreadable */
};
/* One certificate of the CA's record (ca_list). */
struct ca_entry {
	char *name;		/* the name it was issued under */
	char *serial;		/* hex */
	char *path;		/* DIR/NAME.crt when that is this certificate, else NULL */
	const char *role;	/* KNOB_ROLE_NODE or _CONTROLLER; NULL: unknown (path NULL) */
	time_t not_after;	/* 0: unknown (path NULL) */
	int days_left;		/* when not_after is known */
	enum ca_state state;
	size_t seq;		/* its line in issued.txt (order of issue) */
};
/* The state of a CA directory (ca_list; ca_listing_free frees it). */
struct ca_listing {
	char crt[PATH_MAX];	/* DIR/ca.crt */
	time_t not_after;	/* the CA's */
	int days_left;
	char crl[PATH_MAX];	/* DIR/ca.crl */
	int crl_read;		/* 1 read, 0 none, -1 unreadable or another CA's (errors) */
	size_t crl_revoked;	/* serials the CRL lists */
	time_t crl_last_update;
	struct ca_entry *v;	/* by name, then in order of issue */
	size_t n;
	struct strvec errors;	/* "FILE: message" of each file that could not be read */
};
/* Every certificate DIR's CA issued: DIR/NAME.crt, and the serials of
 * DIR/issued.txt and superseded.txt (what ca_revoke revokes), each with
 * its state against DIR/ca.crl (DIR/revoked.txt when the CRL cannot be
 * read).  A file that cannot be read is in l->errors and the rest is
 * listed.  0, 1 (l->errors), or -1 with err when DIR or DIR/ca.crt cannot
 * be read.  The caller frees l with ca_listing_free in every case. */
int ca_list(const char *dir, struct ca_listing *l, char *err, size_t errlen);
void ca_listing_free(struct ca_listing *l);

#endif
