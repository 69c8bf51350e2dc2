/* Test helpers on the controller's TLS ticket cache. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <check.h>
#include <openssl/ssl.h>

#include "knobctl.h"
#include "tktutil.h"

struct tcache *
tku_open(const char *cluster, const char *ca_dir, struct ctl *c)
{
	char err[1024], ca[PATH_MAX], cert[PATH_MAX];

	memset(c, 0, sizeof(*c));
	c->inv = inventory_load(cluster, err, sizeof(err));
	ck_assert_msg(c->inv != NULL, "%s", err);
	snprintf(ca, sizeof(ca), "%s/ca.crt", ca_dir);
	snprintf(cert, sizeof(cert), "%s/controller.crt", ca_dir);
	return tcache_open(c, ca, cert);
}

void
tku_close(struct ctl *c, struct tcache *tc)
{
	tcache_free(tc);
	inventory_free(c->inv);
}

void
tku_swap_ticket(const char *cluster, const char *ca_dir, const char *from, const char *to)
{
	struct ctl c;
	struct tcache *tc = tku_open(cluster, ca_dir, &c);
	SSL_SESSION *s;
	const char *pin;
	int64_t not_after;

	s = tcache_get(tc, from, &pin, &not_after);
	ck_assert_msg(s != NULL, "no ticket of %s in the cache", from);
	tcache_put(tc, to, s, pin, not_after);
	SSL_SESSION_free(s);
	ck_assert_int_eq(tcache_save(tc), 0);
	tku_close(&c, tc);
}
