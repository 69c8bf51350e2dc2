/* What a run was measured on: each node's facts and active profile as the
 * agent reports them (Facts), the live value of every key of that profile
 * (Verify with the profile resolved here), and the run's resolved profile
 * with its SHA-256, so that two runs with the same hash ran the same
 * settings.  The profile is the controller's file at bench time: a key
 * whose live value was not what that file says (the file edited after the
 * apply, a key unsupported on a node) is recorded in node_info's "live",
 * and runinfo_not_in_effect names it wherever the run is shown. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>

#include "knobctl.h"
#include "log.h"
#include "pbjson.h"
#include "profile.h"
#include "rundoc.h"
#include "nodeset.h"
#include "util.h"

void
sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	out[0] = '\0';
	if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
		return;
	for (unsigned int i = 0; i < mdlen; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

json_object *
runinfo_profile_json(const struct profile *p)
{
	json_object *o = json_object_new_object();
	char hex[65], *text = xstrdup("");

	if (p == NULL) {
		free(text);
		json_object_object_add(o, "name", json_object_new_string(""));
		return o;
	}
	/* one line per resolved setting, in the order it is applied */
	for (size_t i = 0; i < p->n; i++) {
		const struct psetting *s = &p->s[i];

		str_appendf(&text, "%s %s%s%s%s%s = %s%s\n", s->driver, s->key, s->attr[0] ? " " : "",
		    s->attr, s->match[0] ? " " : "", s->match, s->value, s->persistent ?
		    " (persistent)" : "");
	}
	sha256_hex(text, strlen(text), hex);
	json_object_object_add(o, "name", json_object_new_string(p->name));
	json_object_object_add(o, "path", json_object_new_string(p->path ? p->path : ""));
	json_object_object_add(o, "sha256", json_object_new_string(hex));
	json_object_object_add(o, "text", json_object_new_string(text));
	free(text);
	return o;
}

/* Live values of profile name on the nodes of fo whose active profile it
 * is (per node i, into live[i]). */
static void
verify_group(struct ctl *ctl, const struct strvec *names, const char *pname, json_object **live)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__VerifyRequest req = KNOB__VERIFY_REQUEST__INIT;
	struct strvec errs = { 0 };
	struct profile *p = profile_load(pname, &errs);
	struct fanout fo;

	strvec_free(&errs);
	/* not in this controller's search path (or stacked, "A+B"): each node
	 * verifies the settings it journaled for its active profile */
	req.profile = p ? p->name : (char *)(uintptr_t)"";
	req.settings = p ? settings_build(p) : NULL;
	req.n_settings = p ? p->n : 0;
	env.body_case = KNOB__ENVELOPE__BODY_VERIFY;
	env.verify = &req;
	fanout_init(&fo, ctl, names);
	if (fanout_request(&fo, &env) == 0)
		for (size_t i = 0; i < fo.n; i++) {
			Knob__Envelope *r = fo.nodes[i].reply;
			json_object *arr;

			if (r == NULL || r->body_case != KNOB__ENVELOPE__BODY_VERIFY_RESULT)
				continue;
			arr = json_object_new_array();
			for (size_t k = 0; k < r->verify_result->n_keys; k++) {
				const Knob__KeyResult *kr = r->verify_result->keys[k];
				json_object *o = json_object_new_object();

				json_object_object_add(o, "driver", json_object_new_string(kr->driver));
				json_object_object_add(o, "key", json_object_new_string(kr->key));
				json_object_object_add(o, "target", json_object_new_string(kr->target));
				json_object_object_add(o, "wanted", json_object_new_string(kr->wanted));
				json_object_object_add(o, "value", json_object_new_string(kr->after));
				json_object_object_add(o, "state", json_object_new_string(
				    kr->state == KNOB__KEY_STATE__KEY_OK ? "ok" :
				    kr->state == KNOB__KEY_STATE__KEY_DRIFT ? "drift" : "other"));
				json_object_array_add(arr, o);
			}
			live[i] = arr;
		}
	fanout_free(&fo);
	if (req.settings)
		settings_free(req.settings, req.n_settings);
	profile_free(p);
}

/* The resolved profile name (NULL: untuned) as JSON; only its name when it
 * is not in this controller's profile search path. */
static json_object *
resolved(const char *name)
{
	struct strvec errs = { 0 };
	struct profile *p = name ? profile_load(name, &errs) : NULL;
	json_object *o = runinfo_profile_json(p);

	if (name && p == NULL)
		json_object_object_add(o, "name", json_object_new_string(name));
	profile_free(p);
	strvec_free(&errs);
	return o;
}

/* The run's profile: the one every node has active; for nodes with
 * different ones, "mixed" with each group's resolved profile, and a text
 * (and its SHA-256) that says which nodes ran which settings. */
static json_object *
run_profile(const struct fo_node *nodes, size_t n, const struct strvec *active,
    const struct strvec *distinct)
{
	json_object *o, *groups;
	char hex[65], *text = NULL;
	struct strvec names = { 0 };

	if (distinct->n == 0)
		return runinfo_profile_json(NULL);
	if (distinct->n == 1 && !strvec_contains(active, ""))
		return resolved(distinct->v[0]);
	for (size_t k = 0; k < distinct->n; k++)
		strvec_push(&names, distinct->v[k]);
	if (strvec_contains(active, ""))
		strvec_push(&names, "");
	o = json_object_new_object();
	groups = json_object_new_array();
	text = xstrdup("");
	for (size_t k = 0; k < names.n; k++) {
		struct strvec who = { 0 };
		json_object *g = resolved(names.v[k][0] ? names.v[k] : NULL);
		char *f;

		for (size_t i = 0; i < n; i++)
			if (strcmp(active->v[i], names.v[k]) == 0)
				strvec_push(&who, nodes[i].name);
		f = nodeset_fold(who.v, who.n);
		json_object_object_add(g, "nodes", json_object_new_string(f));
		str_appendf(&text, "# %s: %s\n%s", f, names.v[k][0] ? names.v[k] : "(untuned)",
		    js_str(g, "text"));
		json_object_array_add(groups, g);
		free(f);
		strvec_free(&who);
	}
	sha256_hex(text, strlen(text), hex);
	json_object_object_add(o, "name", json_object_new_string("mixed"));
	json_object_object_add(o, "sha256", json_object_new_string(hex));
	json_object_object_add(o, "text", json_object_new_string(text));
	json_object_object_add(o, "profiles", groups);
	free(text);
	strvec_free(&names);
	return o;
}

json_object *
runinfo_gather(struct ctl *ctl, const struct strvec *nodes)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__FactsRequest req = KNOB__FACTS_REQUEST__INIT;
	json_object *out = json_object_new_object(), *arr = json_object_new_array(), **live;
	struct strvec active = { 0 }, distinct = { 0 };
	struct fanout fo;
	size_t i, k;

	live = xcalloc(nodes->n ? nodes->n : 1, sizeof(*live));
	env.body_case = KNOB__ENVELOPE__BODY_FACTS_REQUEST;
	env.facts_request = &req;
	fanout_init(&fo, ctl, nodes);
	if (fanout_request(&fo, &env) < 0)
		fo.n = 0;
	for (i = 0; i < fo.n; i++) {
		Knob__Envelope *r = fo.nodes[i].reply;
		const char *a = r && r->body_case == KNOB__ENVELOPE__BODY_FACTS ?
		    r->facts->active_profile : "";

		strvec_push(&active, a);
		if (a[0] && !strvec_contains(&distinct, a))
			strvec_push(&distinct, a);
	}
	/* one Verify fan-out per distinct active profile */
	for (k = 0; k < distinct.n; k++) {
		struct strvec grp = { 0 };
		json_object **gl = xcalloc(fo.n ? fo.n : 1, sizeof(*gl));
		size_t g = 0;

		for (i = 0; i < fo.n; i++)
			if (strcmp(active.v[i], distinct.v[k]) == 0)
				strvec_push(&grp, fo.nodes[i].name);
		verify_group(ctl, &grp, distinct.v[k], gl);
		for (i = 0; i < fo.n; i++)
			if (strcmp(active.v[i], distinct.v[k]) == 0)
				live[i] = gl[g++];
		free(gl);
		strvec_free(&grp);
	}
	for (i = 0; i < fo.n; i++) {
		Knob__Envelope *r = fo.nodes[i].reply;
		json_object *n = json_object_new_object();

		json_object_object_add(n, "node", json_object_new_string(fo.nodes[i].name));
		json_object_object_add(n, "active_profile", json_object_new_string(active.v[i]));
		json_object_object_add(n, "live", live[i] ? live[i] : json_object_new_array());
		if (r && r->body_case == KNOB__ENVELOPE__BODY_FACTS)
			json_object_object_add(n, "facts", pb_to_json(&r->facts->base));
		else
			json_object_object_add(n, "facts_error", json_object_new_string(
			    node_status_name(fo.nodes[i].status)));
		json_object_array_add(arr, n);
	}
	json_object_object_add(out, "node_info", arr);
	json_object_object_add(out, "profile", run_profile(fo.nodes, fo.n, &active, &distinct));
	fanout_free(&fo);
	strvec_free(&active);
	strvec_free(&distinct);
	free(live);
	return out;
}

/* One line per key of doc's profile that was not in effect on a node when
 * the run started (node_info[].live: drift, or not checkable), appended to
 * out; how many.  Old runs carry the same "live" records. */
size_t
runinfo_not_in_effect(json_object *doc, struct strvec *out)
{
	json_object *ni = json_object_object_get(doc, "node_info");
	size_t n = 0;

	for (size_t i = 0; ni && i < json_object_array_length(ni); i++) {
		json_object *node = json_object_array_get_idx(ni, i);
		json_object *live = json_object_object_get(node, "live");

		for (size_t k = 0; live && k < json_object_array_length(live); k++) {
			json_object *o = json_object_array_get_idx(live, k);
			const char *st = js_str(o, "state");
			char *line;

			if (strcmp(st, "ok") == 0)
				continue;
			/* a glob's key says less than the file it landed on */
			const char *what = strchr(js_str(o, "key"), '*') && js_str(o, "target")[0] ?
			    js_str(o, "target") : js_str(o, "key");

			line = strcmp(st, "drift") == 0 ?
			    xasprintf("%s: %s %s is %s, the profile says %s", js_str(node, "node"),
			    js_str(o, "driver"), what, js_str(o, "value"), js_str(o, "wanted")) :
			    xasprintf("%s: %s %s could not be checked (the profile says %s)",
			    js_str(node, "node"), js_str(o, "driver"), what, js_str(o, "wanted"));
			strvec_push(out, line);
			free(line);
			n++;
		}
	}
	return n;
}
