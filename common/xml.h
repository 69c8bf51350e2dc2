/* The libxml2 helpers, for every XML reader (profiles, inventories, plays,
 * sweep files). */
#ifndef KNOB_XML_H
#define KNOB_XML_H

#include <libxml/relaxng.h>
#include <libxml/tree.h>

/* Attribute name of n as a malloc'd C string, NULL when absent. */
char *xml_attr(const xmlNode *n, const char *name);

/* The message of libxml2 error e, trimmed, into buf (strtrim may move its
 * start: the pointer returned); NULL when e is NULL or a warning. */
char *xml_err_msg(const xmlError *e, char *buf, size_t len);

/* The largest XML file a loader reads (a profile or a sweep file is a
 * few KiB). */
#define XML_FILE_MAX	(16u << 20)

/* The document in the file at path (at most max bytes) parsed with opts
 * (XML_PARSE_*) into *doc, libxml2's errors to the handler the caller set.
 * The file is read whole first, so a path that cannot be read (a
 * directory given for a file) is one error, -errno such as -EISDIR,
 * before libxml2 says anything (it gave its own I/O error, then "Document
 * is empty").  0 otherwise, *doc NULL when the parse failed. */
int xml_read_path(const char *path, size_t max, int opts, xmlDocPtr *doc);

/* The document in buf (len bytes, named url in errors) parsed with opts
 * (XML_PARSE_BIG_LINES added), each element's line kept past 65535 for
 * xml_line; NULL when the parse failed.  Every XML reader parses
 * through it. */
xmlDocPtr xml_read_mem(const char *buf, size_t len, const char *url, int opts);

/* The line of node n of a document from xml_read_mem: an element's is the
 * line libxml2 gives its start tag, past 65535 too.  (libxml2 2.9 keeps
 * an element's line in 16 bits, 65535 past that, where xmlGetLineNo
 * borrows a neighbour's: the next line, or further.)  0 for NULL. */
long xml_line(const xmlNode *n);

/* The line of libxml2 error e: its own, or past 65535 its element's
 * (xml_line): libxml2 stamps a schema error with xmlGetLineNo's borrowed
 * line there. */
long xml_err_line(const xmlError *e);

/* The line of the element a schema error without a node or line is about
 * (libxml2 gives none for some attribute errors): the first element named
 * name after *at in document order (from the root when *at is NULL) that,
 * copied alone under bare copies of its ancestors, gives the error msg
 * (trimmed) against schema.  *at moves to it, so that the next identical
 * error goes on from there: each element is tried once (plays place each
 * error at its own element; sweep files call again until 0, every element
 * that gives it).  0 when none does. */
long xml_rng_locate(xmlRelaxNGPtr schema, xmlDocPtr doc, const char *name, const char *msg,
    xmlNodePtr *at);

#endif
