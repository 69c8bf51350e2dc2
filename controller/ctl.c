/* Helpers every subcommand uses: targets, TLS context. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "ca.h"
#include "knobctl.h"
#include "log.h"
#include "nodeset.h"
#include "tls.h"
#include "util.h"
#include "visible.h"

/* An inventory with nothing but defaults (no cluster.xml anywhere). */
static struct inventory *
empty_inventory(void)
{
	struct inventory *inv = xcalloc(1, sizeof(*inv));

	inv->path = xstrdup("(none)");
	inv->port = KNOB_DEFAULT_PORT;
	return inv;
}

/* Load the inventory from -c, $KNOB_CLUSTER or /etc/knob/cluster.xml; with
 * none of them, an empty one (port 7420, TLS from --ca/--cert/--key). */
static int
load_inventory(struct ctl *ctl)
{
	const char *path = ctl->cluster_path;
	char err[8192];

	if (path == NULL)
		path = getenv("KNOB_CLUSTER");
	if (path == NULL && access("/etc/knob/cluster.xml", R_OK) == 0)
		path = "/etc/knob/cluster.xml";
	if (path == NULL) {
		ctl->inv = empty_inventory();
		return 0;
	}
	ctl->inv = inventory_load(path, err, sizeof(err));
	if (ctl->inv == NULL) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

int
ctl_run(struct ctl *ctl, const struct cmd_entry *ce, int argc, char **argv)
{
	int r;

	if ((r = opt_prescan(ctl, ce, argc, argv)) != 0)
		return r > 0 ? 0 : 2;
	log_init("knobctl", ctl->log_level);
	if (!(ce->flags & CMD_NOINV) && ctl->inv == NULL && load_inventory(ctl) < 0)
		return 2;
	return ce->fn(ctl, argc, argv);
}

int
ctl_ca_dir(struct ctl *ctl, char *buf, size_t len)
{
	const char *ca = ctl->ca ? ctl->ca : ctl->inv ? ctl->inv->ca : NULL;

	if (ca == NULL)
		return -1;
	tls_ca_dir(ca, buf, len);
	return 0;
}

void
ctl_ca_expiry_warn(struct ctl *ctl, const char *cmd, int days)
{
	const char *ca = ctl->ca ? ctl->ca : ctl->inv ? ctl->inv->ca : NULL;
	char msg[4096 + 256];

	if (ca != NULL && ca_cert_expiry_check(ca, days, msg, sizeof(msg)) == 1)
		fprintf(stderr, "knobctl %s: warning: %s\n", cmd, msg);
}

void
ctl_exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	buf[n > 0 ? n : 0] = '\0';
	if ((slash = strrchr(buf, '/')) != NULL)
		*slash = '\0';
}

void
ctl_knobd_path(char *buf, size_t len)
{
	char dir[4096];

	ctl_exe_dir(dir, sizeof(dir));
	snprintf(buf, len, "%s/knobd", dir);
	if (access(buf, X_OK) != 0)
		snprintf(buf, len, "/usr/sbin/knobd");
}

int
ctl_knobd_binary(struct ctl *ctl, char **data, size_t *len)
{
	char path[4200];

	(void)ctl;
	ctl_knobd_path(path, sizeof(path));
	return read_file_bounded(path, 256u << 20, data, len);
}

int
ctl_pair_recover(struct ctl *ctl)
{
	const char *cert = ctl->cert ? ctl->cert : ctl->inv->cert;
	char err[3 * PATH_MAX];

	if (cert == NULL || ca_pair_recover(cert, err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "knobctl: %s\n", err);
	return -1;
}

SSL_CTX *
ctl_ssl(struct ctl *ctl)
{
	char err[1024];

	const char *ca = ctl->ca ? ctl->ca : ctl->inv->ca;
	const char *cert = ctl->cert ? ctl->cert : ctl->inv->cert;

	if (ctl->ssl)
		return ctl->ssl;
	/* a directory given for a file: its one error, not the ticket
	 * cache's warning first */
	if (tls_paths_check(ca, cert, ctl->key ? ctl->key : ctl->inv->key, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "knobctl: %s\n", err);
		return NULL;
	}
	/* a ca renew of our pair that a crash stopped: a key and a certificate
	 * that do not match (an OpenSSL error) unless it is finished first */
	if (ctl_pair_recover(ctl) < 0)
		return NULL;
	/* once per command: the ticket cache, then CA store, CRL, key and
	 * chain.  The cache hashes the CA and CRL first: a CRL that changes
	 * in between makes the save-time check drop our tickets, so none
	 * verified under an older CRL is saved as of a newer one.  Without a
	 * CA or a certificate there is nothing to hash: tls_ctx_new says what
	 * is missing, alone. */
	if (ctl->tickets == NULL && ca != NULL && cert != NULL)
		ctl->tickets = tcache_open(ctl, ca, cert);
	ctl->ssl = tls_ctx_new(0, ca, cert, ctl->key ? ctl->key : ctl->inv->key, err, sizeof(err));
	if (ctl->ssl == NULL) {
		fprintf(stderr, "knobctl: %s\n", err);
		return NULL;
	}
	fanout_tls_ctx(ctl->ssl);
	return ctl->ssl;
}

int
ctl_trust_id(struct ctl *ctl, char out[65])
{
	const char *ca = ctl->ca ? ctl->ca : ctl->inv->ca;
	const char *cert = ctl->cert ? ctl->cert : ctl->inv->cert;
	unsigned char h[TLS_HASH_LEN];

	out[0] = '\0';
	if (ca == NULL || cert == NULL || tls_trust_hash(ca, cert, h) < 0)
		return -1;
	sha256_hex(h, sizeof(h), out);
	return out[0] ? 0 : -1;
}

/* Append the names of expr to out that are not there yet; 0 or -1 (printed,
 * naming the option). */
static int
expand_add(struct ctl *ctl, const char *expr, const char *opt, struct strvec *out)
{
	struct strvec more = { 0 };
	char err[512];

	if (nodeset_expand(expr, inventory_group_fn, ctl->inv, &more, err, sizeof(err)) < 0) {
		char *v = str_visible_dup(expr, 0);

		fprintf(stderr, "knobctl: %s %s: %s\n", opt, v, err);
		free(v);
		strvec_free(&more);
		return -1;
	}
	nodeset_exclude(&more, out);
	for (size_t i = 0; i < more.n; i++)
		strvec_push(out, more.v[i]);
	strvec_free(&more);
	return 0;
}

/* Expand every expression of v (and @all first when all) onto out: -w and
 * -x are additive, as in clush.  0 or -1. */
static int
expand_union(struct ctl *ctl, const struct strvec *v, int all, const char *opt,
    struct strvec *out)
{
	if (all && expand_add(ctl, "@all", "-a", out) < 0)
		return -1;
	for (size_t i = 0; i < v->n; i++)
		if (expand_add(ctl, v->v[i], opt, out) < 0)
			return -1;
	return 0;
}

int
ctl_expand(struct ctl *ctl, struct strvec *out)
{
	struct strvec ex = { 0 };
	int rc = -1;

	if (expand_union(ctl, &ctl->w, ctl->all, "-w", out) < 0 ||
	    expand_union(ctl, &ctl->x, 0, "-x", &ex) < 0)
		goto out;
	nodeset_exclude(out, &ex);
	rc = 0;
out:
	strvec_free(&ex);
	return rc;
}

int
ctl_targets(struct ctl *ctl, struct strvec *out)
{
	if (ctl->w.n == 0 && !ctl->all) {
		fprintf(stderr, "knobctl: no targets: use -w NODESET or -a\n");
		return -1;
	}
	if (ctl_expand(ctl, out) < 0)
		return -1;
	if (out->n == 0) {
		fprintf(stderr, "knobctl: the node set is empty\n");
		return -1;
	}
	return 0;
}
