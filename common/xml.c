/* libxml2 attribute access (see xml.h). */
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
