/* Tuning profiles: XML files validated against profiles/profile.rng
 * (RelaxNG), with inheritance through extends="NAME" (multi-level, a child
 * overrides by key and can <remove> an inherited key).  Every error is
 * reported as "file:line: message", all of them, not only the first.
 *
 * Lookup of a profile NAME: $KNOB_PROFILE_PATH (colon separated), the
 * profiles/ directory of the source tree (found from the executable's
 * location), /usr/local/share/knob/profiles, /etc/knob/profiles.  An
 * argument containing '/' or ending in ".xml" is a file.  extends="NAME" is
 * looked up in the child's own directory first, then along the search path;
 * extends="x.xml" is relative to the child's directory.  The schema
 * (profile.rng) is taken from the profile's directory, else the search path. */
#ifndef KNOB_PROFILE_H
#define KNOB_PROFILE_H

#include <stddef.h>
#include "util.h"

struct psetting {
	char *driver;		/* sysfs, sysctl, blockdev, lustre, gpfs, nfsd, net */
	char *key;		/* blockdev: device glob; net: interface glob */
	char *attr;		/* blockdev/net attribute, "" otherwise */
	char *match;		/* blockdev "rotational=0|1", "" otherwise */
	char *value;		/* as written in the profile */
	int persistent;		/* lustre: lctl set_param -P */
	char *comment;		/* optional comment="..." */
	char *cite;		/* optional cite="REPORT: where", the value's source */
	char *file;		/* origin: file and line */
	int line;
	char *profile;		/* name of the profile that set it */
};

struct profile {
	char *name;
	char *path;		/* file it was loaded from */
	char *description;	/* of this profile ("" when none) */
	char *summary;		/* one line: summary="..." or the description's first sentence */
	struct strvec chain;	/* profile names, root ancestor first, this one last */
	struct strvec chain_paths;
	struct psetting *s;	/* resolved settings, inherited ones first */
	size_t n;
};

/* Search path, in order (caller frees with strvec_free). */
void profile_search_path(struct strvec *out);
/* Path of profile NAME (or the file itself); malloc'd, NULL when absent. */
char *profile_find(const char *name_or_file);
/* Load and resolve a profile by name or file.  NULL on error; errs gets
 * every "file:line: message" (caller frees errs). */
struct profile *profile_load(const char *name_or_file, struct strvec *errs);
void profile_free(struct profile *p);
/* Identity of a setting for override/remove: "driver key [attr]". Caller frees. */
char *psetting_id(const struct psetting *s);

#endif
