/* The agent's subsystems, as a table of hooks: the loop (loop.c) calls
 * them through these walkers and knows none of them by name. */
#include <stddef.h>

#include "agent.h"
#include "log.h"

const struct agent_subsys *const agent_subsystems[] = {
	&tune_subsys,	/* first: journal recovery before anything else */
	&bench_subsys,
	&health_subsys,
	NULL,
};

int
agent_subsys_init(struct agent *a)
{
	for (size_t i = 0; agent_subsystems[i]; i++) {
		const struct agent_subsys *s = agent_subsystems[i];

		if (s->init && s->init(a) < 0) {
			log_err("%s: initialisation failed; refusing to serve", s->name);
			return -1;
		}
	}
	return 0;
}

/* Number of subsystems in the table. */
static size_t
nsubsys(void)
{
	size_t n = 0;

	while (agent_subsystems[n])
		n++;
	return n;
}

void
agent_subsys_stop(struct agent *a)
{
	for (size_t i = nsubsys(); i-- > 0;)
		if (agent_subsystems[i]->stop)
			agent_subsystems[i]->stop(a);
}

void
agent_subsys_fini(struct agent *a)
{
	for (size_t i = nsubsys(); i-- > 0;)
		if (agent_subsystems[i]->fini)
			agent_subsystems[i]->fini(a);
}

void
agent_subsys_tick(struct agent *a)
{
	for (size_t i = 0; agent_subsystems[i]; i++)
		if (agent_subsystems[i]->tick)
			agent_subsystems[i]->tick(a);
}

int
agent_subsys_wants_tick(struct agent *a)
{
	for (size_t i = 0; agent_subsystems[i]; i++)
		if (agent_subsystems[i]->wants_tick && agent_subsystems[i]->wants_tick(a))
			return 1;
	return 0;
}

void
agent_subsys_conn_closed(struct agent *a, uint64_t conn_id)
{
	for (size_t i = 0; agent_subsystems[i]; i++)
		if (agent_subsystems[i]->conn_closed)
			agent_subsystems[i]->conn_closed(a, conn_id);
}

void
agent_subsys_conn_activity(struct agent *a, uint64_t conn_id)
{
	for (size_t i = 0; agent_subsystems[i]; i++)
		if (agent_subsystems[i]->conn_activity)
			agent_subsystems[i]->conn_activity(a, conn_id);
}
