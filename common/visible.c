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
		else if (cp <= 0x9f) {	/* 2 bytes, 6 characters: within VIS_SIZE */
			d += sprintf(d, "\\u%04x", cp);
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
