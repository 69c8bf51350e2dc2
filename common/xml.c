/* libxml2 helpers (see xml.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/relaxng.h>

#include "util.h"
#include "xml.h"

char *
xml_attr(const xmlNode *n, const char *name)
{
	xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
	char *s;

	if (v == NULL)
		return NULL;
	s = xstrdup((const char *)v);
	xmlFree(v);
	return s;
}

int
xml_read_path(const char *path, size_t max, int opts, xmlDocPtr *doc)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = read_file_bounded(path, max, &buf, &len);

	*doc = NULL;
	if (rc < 0)
		return rc;
	*doc = xmlReadMemory(buf, (int)len, path, NULL, opts);
	free(buf);
	return 0;
}

char *
xml_err_msg(const xmlError *e, char *buf, size_t len)
{
	if (e == NULL || e->level == XML_ERR_WARNING)
		return NULL;
	snprintf(buf, len, "%s", e->message ? e->message : "error");
	return strtrim(buf);
}

/* Count the schema errors that read msg (arg: struct rng_count). */
struct rng_count {
	const char *msg;
	int n;
};

static void
count_msg(void *arg, xmlErrorPtr e)
{
	struct rng_count *c = arg;
	char buf[512], *msg = xml_err_msg(e, buf, sizeof(buf));

	c->n += msg && strcmp(msg, c->msg) == 0;
}

/* Does element n, copied alone under bare copies of its ancestors (their
 * attributes, no other child), give the schema error msg? */
static int
fails_alone(xmlRelaxNGPtr schema, xmlNodePtr n, const char *msg)
{
	xmlDocPtr d = xmlNewDoc((const xmlChar *)"1.0");
	xmlNodePtr top = xmlDocCopyNode(n, d, 1);
	xmlRelaxNGValidCtxtPtr vc = xmlRelaxNGNewValidCtxt(schema);
	struct rng_count c = { msg, 0 };

	for (xmlNodePtr p = n->parent; top && p && p->type == XML_ELEMENT_NODE; p = p->parent) {
		xmlNodePtr a = xmlDocCopyNode(p, d, 2);

		if (a)
			xmlAddChild(a, top);
		else
			xmlFreeNode(top);
		top = a;
	}
	if (top && vc) {
		xmlDocSetRootElement(d, top);
		xmlRelaxNGSetValidStructuredErrors(vc, count_msg, &c);
		(void)xmlRelaxNGValidateDoc(vc, d);
	} else if (top)
		xmlFreeNode(top);
	if (vc)
		xmlRelaxNGFreeValidCtxt(vc);
	xmlFreeDoc(d);
	return c.n > 0;
}

/* The node after n in document order (into elements only), or NULL. */
static xmlNodePtr
next_node(xmlNodePtr n)
{
	if (n->type == XML_ELEMENT_NODE && n->children)
		return n->children;
	for (; n && n->type != XML_DOCUMENT_NODE; n = n->parent)
		if (n->next)
			return n->next;
	return NULL;
}

long
xml_rng_locate(xmlRelaxNGPtr schema, xmlDocPtr doc, const char *name, const char *msg,
    xmlNodePtr *at)
{
	xmlNodePtr n = *at ? next_node(*at) : xmlDocGetRootElement(doc);

	for (; n; n = next_node(n))
		if (n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0 &&
		    fails_alone(schema, n, msg)) {
			*at = n;
			return xmlGetLineNo(n);
		}
	return 0;
}
