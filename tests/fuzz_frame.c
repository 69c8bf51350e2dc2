/* libFuzzer target: a byte stream from an authenticated peer, as the agent
 * sees it.  The bytes are framed and decoded (conn_recv: header, growing
 * body buffer, Envelope checks) and every envelope is dispatched to a real
 * agent instance (agent_init in --stdio mode, an empty --sysroot and state
 * directory in a temp dir) through a fake connection; the agent's work
 * items are waited for after each input.  Never a crash, a leak or an out
 * of bounds access, and every accepted envelope prints and re-packs.
 *
 * Not dispatched: apply, rollback, phase-prepare and health.  They would
 * change this machine (network interfaces through netlink, which no
 * --sysroot covers) or write to directories the request names (benchmark
 * files, health probes); check_tune*, check_bench*, check_sweep* exercise
 * them against real agents. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "agent.h"
#include "fuzz_common.h"
#include "pbjson.h"
#include "util.h"
#include "wire.h"

static struct agent *ag;
static int in_fd = -1, out_fd = -1;

/* Bodies that would touch the machine rather than the sysroot. */
static int
skipped(const Knob__Envelope *env)
{
	return env->body_case == KNOB__ENVELOPE__BODY_APPLY ||
	    env->body_case == KNOB__ENVELOPE__BODY_ROLLBACK ||
	    env->body_case == KNOB__ENVELOPE__BODY_PHASE_PREPARE ||
	    env->body_case == KNOB__ENVELOPE__BODY_HEALTH;
}

/* One agent for the whole run, with a sysroot and state dir of its own. */
static void
init_agent(void)
{
	static char root[4200], state[4200];
	struct agent_cfg cfg;

	snprintf(root, sizeof(root), "%s/root", fuzz_dir());
	snprintf(state, sizeof(state), "%s/state", fuzz_dir());
	if (mkdir(root, 0755) < 0 || mkdir(state, 0700) < 0)
		abort();
	memset(&cfg, 0, sizeof(cfg));
	cfg.stdio = 1;
	cfg.sysroot = root;
	cfg.state_dir = state;
	cfg.node_name = "fuzz";
	cfg.stop_fd = -1;
	ag = xcalloc(1, sizeof(*ag));
	if (agent_init(ag, &cfg) < 0)
		abort();
	in_fd = memfd_create("peer-bytes", MFD_CLOEXEC);
	out_fd = memfd_create("agent-replies", MFD_CLOEXEC);
	if (in_fd < 0 || out_fd < 0)
		abort();
}

/* Wait for this input's work items, then drop what they posted. */
static void
settle(void)
{
	struct agent_post *p, *next;

	if (agent_work_wait(ag, 60) < 0)
		abort();
	pthread_mutex_lock(&ag->post_mu);
	p = ag->posts;
	ag->posts = ag->posts_tail = NULL;
	pthread_mutex_unlock(&ag->post_mu);
	for (; p; p = next) {
		next = p->next;
		free(p->frame);
		free(p);
	}
}

/* Whatever was accepted must print and re-pack. */
static void
roundtrip(const Knob__Envelope *env)
{
	uint8_t *frame;
	size_t len;

	json_object_put(pb_to_json(&env->base));
	if (frame_pack(env, &frame, &len) == 0)
		free(frame);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t next_id = 1;
	struct aconn c;
	Knob__Envelope *env;
	int r;

	if (ag == NULL)
		init_agent();
	if (ftruncate(in_fd, 0) < 0 || pwrite(in_fd, data, size, 0) != (ssize_t)size ||
	    lseek(in_fd, 0, SEEK_SET) < 0 || ftruncate(out_fd, 0) < 0)
		abort();
	memset(&c, 0, sizeof(c));
	c.id = next_id++;
	c.authed = 1;
	snprintf(c.peer, sizeof(c.peer), "fuzzer");
	snprintf(c.addr, sizeof(c.addr), "memfd");
	conn_init(&c.c, in_fd, out_fd, NULL);
	while ((r = conn_recv(&c.c, &env)) == 1) {
		roundtrip(env);
		if (skipped(env)) {
			knob__envelope__free_unpacked(env, NULL);
			continue;
		}
		c.req = env;	/* as the agent's loop: its own unless a worker took it */
		r = agent_dispatch(ag, &c, env);
		if (c.req)
			knob__envelope__free_unpacked(c.req, NULL);
		c.req = NULL;
		if (r < 0 || c.overflow)
			break;
	}
	agent_subsys_conn_closed(ag, c.id);	/* the peer is gone: phases abort */
	settle();
	conn_reset(&c.c);
	return 0;
}
