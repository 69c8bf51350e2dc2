/* Control characters made visible (see visible.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "visible.h"

/* The length of the valid UTF-8 sequence at s (2 to 4 bytes), its code
 * point in *cp; 0 when s does not start one (a stray continuation byte,
 * an overlong form, a surrogate, a truncated sequence, above U+10FFFF). */
static size_t
utf8_seq(const unsigned char *s, unsigned *cp)
{
	static const unsigned min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	unsigned c;

	if (n == 0 || s[0] > 0xf4)
		return 0;
	c = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* The code points that are not controls yet still change what a line
 * reads as: the bidi controls (Trojan Source: a name that reorders the
 * rest of its line), the line and paragraph separators (a terminal or a
 * pager may break the line there), and the invisible format characters
 * (a zero-width space or joiner makes "n01" and "n\u200b01" look alike;
 * tag characters hide ASCII).  Inclusive ranges, ascending. */
static const struct { unsigned lo, hi; } invisible[] = {
	{ 0x00ad, 0x00ad },	/* soft hyphen */
	{ 0x061c, 0x061c },	/* Arabic letter mark */
	{ 0x180e, 0x180e },	/* Mongolian vowel separator */
	{ 0x200b, 0x200f },	/* zero-width space, (non-)joiner, LRM, RLM */
	{ 0x2028, 0x202e },	/* line/paragraph separator, LRE RLE PDF LRO RLO */
	{ 0x2060, 0x2064 },	/* word joiner, invisible operators */
	{ 0x2066, 0x2069 },	/* LRI RLI FSI PDI */
	{ 0xfeff, 0xfeff },	/* zero-width no-break space (BOM) */
	{ 0xfff9, 0xfffb },	/* interlinear annotation */
	{ 0xe0000, 0xe007f },	/* tags */
};

/* Whether non-ASCII cp is printed as an escape: a C1 control, or one of
 * invisible[]. */
static int
cp_hidden(unsigned cp)
{
	if (cp <= 0x9f)
		return 1;
	for (size_t i = 0; i < nitems(invisible); i++)
		if (cp >= invisible[i].lo && cp <= invisible[i].hi)
			return 1;
	return 0;
}

/* The escape of a code point that is not printed as itself, into d:
 * \u00NN, \uNNNN or, above the BMP, \UNNNNNNNN.  At most 10 characters
 * for a 4-byte sequence, 6 for a 2- or 3-byte one: within VIS_SIZE. */
static int
cp_escape(char *d, unsigned cp)
{
	return cp > 0xffff ? sprintf(d, "\\U%08x", cp) : sprintf(d, "\\u%04x", cp);
}

size_t
str_visible(char *dst, const char *src, int flags)
{
	const unsigned char *s = (const unsigned char *)src;
	char *d = dst;
	unsigned cp;
	size_t n;

	while (*s) {
		if (*s == '\n' && (flags & VIS_KEEP_NL))
			*d++ = (char)*s++;
		else if (*s < 0x20 || *s == 0x7f)
			d += sprintf(d, "\\x%02x", *s++);
		else if (*s < 0x80)
			*d++ = (char)*s++;
		else if ((n = utf8_seq(s, &cp)) == 0)
			d += sprintf(d, "\\x%02x", *s++);
		else if (cp_hidden(cp)) {
			d += cp_escape(d, cp);
			s += n;
		} else {
			memcpy(d, s, n);
			d += n;
			s += n;
		}
	}
	*d = '\0';
	return (size_t)(d - dst);
}

/* The JSON text of the non-ASCII character at s into d: as it is, as
 * \uNNNN (a surrogate pair above the BMP) when the rule escapes it, as
 * \ufffd when s starts no UTF-8 sequence; the bytes of s it stands for
 * into *used.  The length written: at most 12 for 4 bytes, 6 for 1. */
static int
json_char(char *d, const unsigned char *s, size_t *used)
{
	unsigned cp;

	if ((*used = utf8_seq(s, &cp)) == 0) {	/* JSON has no byte escape */
		*used = 1;
		return sprintf(d, "\\ufffd");
	}
	if (!cp_hidden(cp)) {
		memcpy(d, s, *used);
		return (int)*used;
	}
	if (cp > 0xffff)
		return sprintf(d, "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10),
		    0xdc00 + ((cp - 0x10000) & 0x3ff));
	return sprintf(d, "\\u%04x", cp);
}

char *
json_text_visible(const char *json)
{
	const unsigned char *s = (const unsigned char *)json;
	char *out = xmalloc(6 * strlen(json) + 1), *d = out;
	size_t n;

	while (*s) {
		if (*s < 0x80) {
			*d++ = (char)*s++;
			continue;
		}
		d += json_char(d, s, &n);
		s += n;
	}
	*d = '\0';
	return out;
}

char *
str_visible_dup(const char *src, int flags)
{
	char *d = xmalloc(VIS_SIZE(strlen(src)));

	str_visible(d, src, flags);
	return d;
}

/* A new JSON string of s made visible. */
static json_object *
visible_string(const char *s)
{
	char *v = str_visible_dup(s, 0);
	json_object *o = json_object_new_string(v);

	free(v);
	return o;
}

json_object *
json_visible(json_object *o)
{
	json_object *c;

	switch (json_object_get_type(o)) {
	case json_type_string:
		return visible_string(json_object_get_string(o));
	case json_type_array:
		c = json_object_new_array_ext((int)json_object_array_length(o));
		for (size_t i = 0; i < json_object_array_length(o); i++)
			json_object_array_add(c, json_visible(json_object_array_get_idx(o, i)));
		return c;
	case json_type_object: {
		c = json_object_new_object();
		json_object_object_foreach(o, k, v) {
			char *vk = str_visible_dup(k, 0);

			json_object_object_add(c, vk, json_visible(v));
			free(vk);
		}
		return c;
	}
	default:	/* null, a number, a boolean: shared, the copy only reads it */
		return json_object_get(o);
	}
}
