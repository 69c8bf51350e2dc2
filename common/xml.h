/* The one libxml2 attribute helper, for every XML reader (profiles,
 * inventories, plays, sweep files). */
#ifndef KNOB_XML_H
#define KNOB_XML_H

#include <libxml/tree.h>

/* Attribute name of n as a malloc'd C string, NULL when absent. */
char *xml_attr(const xmlNode *n, const char *name);

#endif
