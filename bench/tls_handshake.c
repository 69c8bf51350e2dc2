/* bench/tls_handshake: what one knobctl command pays per node for mutual
 * TLS 1.3 with knob's certificates (Ed25519) — full handshakes through
 * memory BIOs, so only CPU is measured — for each key-exchange group.
 * Prints handshakes/s, CPU per handshake on each side, the projected
 * controller CPU for 10,000 agents, and ratios against X25519; then the
 * same for a resumed session (TLS 1.3 ticket, psk_dhe_ke) per group and
 * cipher suite, the controller's side including decoding the session from
 * its cache form (tcache_der) and taking the agent's new ticket, as knobctl
 * does per node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "knobctl.h"
#include "log.h"
#include "tls.h"
#include "util.h"

/* Thread CPU time in seconds. */
static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Move pending bytes from one side's write BIO to the other's read BIO. */
static void
pump(BIO *from, BIO *to)
{
	char buf[16384];
	int n;

	while ((n = BIO_read(from, buf, sizeof(buf))) > 0)
		BIO_write(to, buf, n);
}

/* A session as knobctl's ticket cache holds it (tcache_der). */
struct sess_der {
	unsigned char *der;
	int len;
	int reused;		/* the last handshake resumed */
	double decode, ticket;	/* CPU in d2i_SSL_SESSION, in taking the new ticket */
};

/* Client side after the handshake: read the agent's ticket (we are in
 * the ticket cache's place) and keep it as DER in sd. */
static void
take_ticket(SSL *c, BIO *s_out, BIO *c_in, struct sess_der *sd, double *ccpu)
{
	char buf[1];
	double t;
	SSL_SESSION *ss;

	pump(s_out, c_in);
	t = cpu_now();
	(void)SSL_read(c, buf, sizeof(buf));	/* WANT_READ after the ticket */
	ss = SSL_get1_session(c);
	free(sd->der);
	sd->der = NULL;
	if (ss != NULL) {
		size_t len = 0;

		sd->der = tcache_der(ss, &len);
		sd->len = (int)len;
	}
	SSL_SESSION_free(ss);
	sd->ticket += cpu_now() - t;
	*ccpu += cpu_now() - t;
}

/* One mutual handshake (resuming sd's session when sd holds one); adds
 * each side's CPU time. 0 or -1. */
static int
handshake(SSL_CTX *cctx, SSL_CTX *sctx, struct sess_der *sd, double *ccpu, double *scpu)
{
	SSL *c = SSL_new(cctx), *s = SSL_new(sctx);
	BIO *c_in = BIO_new(BIO_s_mem()), *c_out = BIO_new(BIO_s_mem());
	BIO *s_in = BIO_new(BIO_s_mem()), *s_out = BIO_new(BIO_s_mem());
	int cdone = 0, sdone = 0, rounds = 0, rc = -1;
	double t;

	SSL_set_bio(c, c_in, c_out);
	SSL_set_bio(s, s_in, s_out);
	SSL_set1_host(c, "node0001");
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
	if (sd && sd->der) {
		const unsigned char *p = sd->der;
		SSL_SESSION *ss;

		t = cpu_now();
		if ((ss = d2i_SSL_SESSION(NULL, &p, sd->len)) != NULL)
			SSL_set_session(c, ss);
		SSL_SESSION_free(ss);
		sd->decode += cpu_now() - t;
		*ccpu += cpu_now() - t;
	}
	while ((!cdone || !sdone) && rounds++ < 20) {
		t = cpu_now();
		if (!cdone && SSL_do_handshake(c) == 1)
			cdone = 1;
		*ccpu += cpu_now() - t;
		pump(c_out, s_in);
		t = cpu_now();
		if (!sdone && SSL_do_handshake(s) == 1)
			sdone = 1;
		*scpu += cpu_now() - t;
		pump(s_out, c_in);
	}
	if (cdone && sdone)
		rc = 0;
	if (rc == 0 && sd) {
		sd->reused = SSL_session_reused(c);
		take_ticket(c, s_out, c_in, sd, ccpu);
	}
	SSL_free(c);
	SSL_free(s);
	return rc;
}

/* One row of the resumed table: n resumed handshakes over group with
 * suite, after one full one. 0 or -1. */
static int
resumed_row(int n, const char *group, const char *suite, const char *ca, const char *cc,
    const char *ck, const char *nc, const char *nk)
{
	char err[512];
	SSL_CTX *cctx = tls_ctx_new(0, ca, cc, ck, err, sizeof(err));
	SSL_CTX *sctx = tls_ctx_new(1, ca, nc, nk, err, sizeof(err));
	struct sess_der sd = { NULL, 0, 0, 0, 0 };
	double ccpu = 0, scpu = 0, fc = 0, fs = 0;
	int ok = 0, rc = -1;

	if (cctx == NULL || sctx == NULL || SSL_CTX_set1_groups_list(cctx, group) != 1 ||
	    SSL_CTX_set1_groups_list(sctx, group) != 1 ||
	    SSL_CTX_set_ciphersuites(cctx, suite) != 1 ||
	    SSL_CTX_set_ciphersuites(sctx, suite) != 1 ||
	    handshake(cctx, sctx, &sd, &fc, &fs) < 0 || sd.der == NULL) {
		fprintf(stderr, "%s %s: resumption set-up failed\n", group, suite);
		goto out;
	}
	sd.decode = sd.ticket = 0;
	for (int i = 0; i < n; i++)
		ok += handshake(cctx, sctx, &sd, &ccpu, &scpu) == 0 && sd.reused;
	if (ok != n) {
		fprintf(stderr, "%s %s: %d of %d handshakes did not resume\n", group, suite, n - ok, n);
		goto out;
	}
	printf("%-10s %-24s %10.1f %10.1f %10.1f %10.1f %10.2f\n", group, suite, ccpu / n * 1e6,
	    sd.decode / n * 1e6, sd.ticket / n * 1e6, scpu / n * 1e6, ccpu / n * 10000);
	rc = 0;
out:
	free(sd.der);
	SSL_CTX_free(cctx);
	SSL_CTX_free(sctx);
	return rc;
}

int
main(int argc, char **argv)
{
	static const char *groups[] = { "X25519", "P-256", "P-384", "ffdhe2048" };
	static const char *suites[] = { "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384" };
	char dir[] = "/tmp/knob-hs.XXXXXX", err[512], ca[PATH_MAX], cc[PATH_MAX], ck[PATH_MAX],
	    nc[PATH_MAX], nk[PATH_MAX];
	int n = argc > 1 ? atoi(argv[1]) : 400;
	double base = 0;

	log_init("tls_handshake", LOG_LVL_ERR);
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(ca, sizeof(ca), "%s/ca/ca.crt", dir);
	snprintf(cc, sizeof(cc), "%s/ca/controller.crt", dir);
	snprintf(ck, sizeof(ck), "%s/ca/controller.key", dir);
	snprintf(nc, sizeof(nc), "%s/ca/node0001.crt", dir);
	snprintf(nk, sizeof(nk), "%s/ca/node0001.key", dir);
	{
		char cadir[PATH_MAX];
		snprintf(cadir, sizeof(cadir), "%s/ca", dir);
		if (ca_init(cadir, err, sizeof(err)) < 0 ||
		    ca_issue(cadir, "controller", 1, err, sizeof(err)) < 0 ||
		    ca_issue(cadir, "node0001", 0, err, sizeof(err)) < 0) {
			fprintf(stderr, "ca: %s\n", err);
			return 1;
		}
	}
	printf("mutual TLS 1.3 handshakes, Ed25519 certificates, %d per group (CPU only, memory BIOs)\n", n);
	printf("%-10s %12s %14s %14s %22s %8s\n", "group", "handshakes/s", "ctl us/hs", "agent us/hs",
	    "ctl CPU for 10k nodes", "ratio");
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		SSL_CTX *cctx = tls_ctx_new(0, ca, cc, ck, err, sizeof(err));
		SSL_CTX *sctx = tls_ctx_new(1, ca, nc, nk, err, sizeof(err));
		double ccpu = 0, scpu = 0, per;
		int ok = 0;

		if (cctx == NULL || sctx == NULL) {
			fprintf(stderr, "tls: %s\n", err);
			return 1;
		}
		SSL_CTX_set1_groups_list(cctx, groups[g]);
		SSL_CTX_set1_groups_list(sctx, groups[g]);
		for (int i = 0; i < n; i++)
			ok += handshake(cctx, sctx, NULL, &ccpu, &scpu) == 0;
		if (ok != n) {
			fprintf(stderr, "%s: %d of %d handshakes failed\n", groups[g], n - ok, n);
			ERR_print_errors_fp(stderr);
			return 1;
		}
		per = (ccpu + scpu) / n;
		if (g == 0)
			base = per;
		printf("%-10s %12.0f %14.1f %14.1f %20.2f s %7.2fx\n", groups[g], 1.0 / per,
		    ccpu / n * 1e6, scpu / n * 1e6, ccpu / n * 10000, per / base);
		SSL_CTX_free(cctx);
		SSL_CTX_free(sctx);
	}
	printf("(ratio: total CPU per handshake relative to X25519, knob's default)\n");
	printf("\nresumed (TLS 1.3 ticket, psk_dhe_ke), %d per row; the controller side includes "
	    "decoding the session from its cache form and taking the agent's new ticket\n", n);
	printf("%-10s %-24s %10s %10s %10s %10s %10s\n", "group", "suite", "ctl us/hs", "decode",
	    "ticket", "agent us", "10k ctl s");
	for (size_t g = 0; g < 2; g++)
		for (size_t k = 0; k < sizeof(suites) / sizeof(suites[0]); k++)
			if (resumed_row(n, groups[g], suites[k], ca, cc, ck, nc, nk) < 0)
				return 1;
	printf("(goal: controller <= 300 us per resumed handshake; knob offers %s first)\n",
	    suites[0]);
	{
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			return 1;
	}
	return 0;
}
