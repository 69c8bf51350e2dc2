/* Test helpers on the controller's TLS ticket cache (controller/tlscache.c),
 * shared by check_resume and check_sim (one helper in one place). */
#ifndef KNOB_TKTUTIL_H
#define KNOB_TKTUTIL_H

/* Give node to the ticket node from holds (pinned to from), in the cache
 * of inventory cluster (CA ca_dir/ca.crt, controller ca_dir/controller.crt),
 * through the cache API: a failed check when from has none. */
void tku_swap_ticket(const char *cluster, const char *ca_dir, const char *from, const char *to);

struct ctl;
struct tcache;
/* The ticket cache of inventory cluster as a command opens it (c holds
 * the inventory); tku_close frees both. */
struct tcache *tku_open(const char *cluster, const char *ca_dir, struct ctl *c);
void tku_close(struct ctl *c, struct tcache *tc);

#endif
