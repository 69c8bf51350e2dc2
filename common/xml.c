/* libxml2 helpers (see xml.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <libxml/parser.h>
#include <libxml/relaxng.h>
#include <libxml/SAX2.h>

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
	*doc = xml_read_mem(buf, len, path, opts);
	free(buf);
	return 0;
}

#define LINE16_MAX 65535	/* the line libxml2 gives a node past it */

/* libxml2's start of an element, then its line kept in the element's
 * _private (the application's field) when it is past 65535. */
static void
start_element_line(void *ctx, const xmlChar *name, const xmlChar *prefix, const xmlChar *uri,
    int nns, const xmlChar **ns, int nattrs, int ndefaulted, const xmlChar **attrs)
{
	xmlParserCtxtPtr c = ctx;
	xmlNodePtr parent = c->node;

	xmlSAX2StartElementNs(ctx, name, prefix, uri, nns, ns, nattrs, ndefaulted, attrs);
	if (c->node != NULL && c->node != parent && c->input != NULL &&
	    c->input->line >= LINE16_MAX)
		c->node->_private = (void *)(intptr_t)c->input->line;
}

xmlDocPtr
xml_read_mem(const char *buf, size_t len, const char *url, int opts)
{
	xmlParserCtxtPtr c = xmlNewParserCtxt();
	xmlDocPtr doc;

	if (c == NULL)
		return NULL;
	c->sax->startElementNs = start_element_line;
	doc = xmlCtxtReadMemory(c, buf, (int)len, url, NULL, opts | XML_PARSE_BIG_LINES);
	xmlFreeParserCtxt(c);
	return doc;
}

long
xml_line(const xmlNode *n)
{
	if (n == NULL)
		return 0;
	if (n->type == XML_ELEMENT_NODE && n->line == LINE16_MAX && n->_private != NULL)
		return (long)(intptr_t)n->_private;
	return xmlGetLineNo(n);
}

long
xml_err_line(const xmlError *e)
{
	const xmlNode *n = e->node;

	if (n != NULL && n->type == XML_ATTRIBUTE_NODE)
		n = n->parent;
	if (n != NULL && n->type == XML_ELEMENT_NODE && n->line == LINE16_MAX)
		return xml_line(n);
	return e->line;
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
			return xml_line(n);
		}
	return 0;
}
