/* Control characters made visible: the one rule for every string knob
 * prints for people that it did not write itself (a run's label, a node's
 * facts, an agent's error, a peer's server name in a log line).  Such a
 * string printed raw could move the cursor, retitle or clear the terminal,
 * or end a line and forge the next one.
 *
 * Escaped: every C0 control (below 0x20, tab and line feed included,
 * unless VIS_KEEP_NL keeps the line feed of a multi-line text) and DEL
 * as \xNN; the C1 controls (U+0080..U+009F, which some terminals take as
 * ESC sequences: U+009B is CSI) as \u00NN; a byte that is not part of
 * valid UTF-8 (a lone 0x9b is CSI to a terminal in an 8-bit locale) as
 * \xNN; the code points that reorder or hide text or break the line
 * without being controls (bidi overrides and isolates U+202A..U+202E,
 * U+2066..U+2069, LRM/RLM, the separators U+2028/U+2029, zero-width and
 * other invisible format characters such as U+200B..U+200D, U+FEFF, the
 * tags U+E0000..U+E007F) as \uNNNN or \UNNNNNNNN: such a name could make
 * its line read as something it is not.  Everything else (printable
 * ASCII, other UTF-8 such as "±") passes, a backslash too: the result
 * has no control character, so escaping it again changes nothing. */
#ifndef KNOB_VISIBLE_H
#define KNOB_VISIBLE_H

#include <stddef.h>
#include <json-c/json.h>

#define VIS_KEEP_NL	1	/* a line feed stays (a multi-line text) */

/* src made visible into dst, which holds VIS_SIZE(strlen(src)) bytes;
 * the length written. */
#define VIS_SIZE(n)	(4 * (n) + 1)
size_t str_visible(char *dst, const char *src, int flags);
/* The same, malloc'd. */
char *str_visible_dup(const char *src, int flags);
/* json, a JSON text json-c wrote (it leaves non-ASCII raw), with each
 * code point the rule escapes (C1, bidi, separators, invisible format
 * characters; only strings hold them) as JSON's \uNNNN (a surrogate pair
 * above the BMP): the same document to a parser, inert on a terminal.  A
 * byte that is not UTF-8, which JSON cannot carry, becomes U+FFFD (\ufffd),
 * as Go's encoder does: the document stays valid JSON.  Malloc'd. */
char *json_text_visible(const char *json);
/* A copy of o (new reference) with every string, member names too, made
 * visible (flags 0): the text renderers print from it, so no stored
 * string reaches the terminal raw.  NULL for NULL. */
json_object *json_visible(json_object *o);

#endif
