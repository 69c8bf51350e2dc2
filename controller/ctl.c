/* Helpers every subcommand uses: targets, TLS context. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "knobctl.h"
#include "nodeset.h"
#include "tls.h"
#include "util.h"

SSL_CTX *
ctl_ssl(struct ctl *ctl)
{
	char err[1024];

	if (ctl->ssl)
		return ctl->ssl;
	ctl->ssl = tls_ctx_new(0, ctl->ca ? ctl->ca : ctl->inv->ca,
	    ctl->cert ? ctl->cert : ctl->inv->cert, ctl->key ? ctl->key : ctl->inv->key,
	    err, sizeof(err));
	if (ctl->ssl == NULL)
		fprintf(stderr, "knobctl: %s\n", err);
	return ctl->ssl;
}

int
ctl_targets(struct ctl *ctl, const char *w, const char *x, struct strvec *out)
{
	struct strvec ex = { 0 };
	char err[512];

	if (w == NULL || *w == '\0') {
		fprintf(stderr, "knobctl: no targets: use -w NODESET\n");
		return -1;
	}
	if (nodeset_expand(w, inventory_group_fn, ctl->inv, out, err, sizeof(err)) < 0) {
		fprintf(stderr, "knobctl: -w %s: %s\n", w, err);
		return -1;
	}
	if (x != NULL) {
		if (nodeset_expand(x, inventory_group_fn, ctl->inv, &ex, err, sizeof(err)) < 0) {
			fprintf(stderr, "knobctl: -x %s: %s\n", x, err);
			strvec_free(&ex);
			return -1;
		}
		nodeset_exclude(out, &ex);
		strvec_free(&ex);
	}
	if (out->n == 0) {
		fprintf(stderr, "knobctl: the node set is empty\n");
		return -1;
	}
	return 0;
}

int
ctl_parse_targets(int argc, char **argv, const char **w, const char **x)
{
	static const struct option opts[] = {
		{ "nodes", required_argument, NULL, 'w' },
		{ "exclude", required_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "w:x:", opts, NULL)) != -1) {
		switch (ch) {
		case 'w': *w = optarg; break;
		case 'x': *x = optarg; break;
		default: return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "knobctl %s: unexpected argument '%s'\n", argv[0], argv[optind]);
		return -1;
	}
	return 0;
}

