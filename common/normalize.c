/* Value normalisers and key validation shared by knobctl and knobd. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "normalize.h"
#include "util.h"

const char *const knob_driver_names[] = {
	"sysfs", "sysctl", "blockdev", "lustre", "gpfs", "nfsd", "net", NULL
};

struct unit {
	const char *suffix;
	uint64_t mult;
};

/* Longest suffixes first is not needed: we compare whole suffixes. */
static const struct unit units[] = {
	{ "b", 1 }, { "s", 512 }, { "sector", 512 }, { "sectors", 512 },
	{ "k", 1ull << 10 }, { "kb", 1ull << 10 }, { "kib", 1ull << 10 },
	{ "m", 1ull << 20 }, { "mb", 1ull << 20 }, { "mib", 1ull << 20 },
	{ "g", 1ull << 30 }, { "gb", 1ull << 30 }, { "gib", 1ull << 30 },
	{ "t", 1ull << 40 }, { "tb", 1ull << 40 }, { "tib", 1ull << 40 },
	{ "p", 1ull << 50 }, { "pb", 1ull << 50 }, { "pib", 1ull << 50 },
};

int
norm_parse_size(const char *s, uint64_t unit, uint64_t *bytes)
{
	char suf[16];
	const char *p = s;
	uint64_t n = 0, mult = unit;
	size_t i, sl;
	int digits = 0;

	while (isspace((unsigned char)*p))
		p++;
	for (; isdigit((unsigned char)*p); p++, digits++) {
		if (n > (UINT64_MAX - 9) / 10)
			return -1;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	if (digits == 0)
		return -1;
	while (isspace((unsigned char)*p))
		p++;
	sl = strlen(p);
	while (sl > 0 && isspace((unsigned char)p[sl - 1]))
		sl--;
	if (sl >= sizeof(suf))
		return -1;
	for (i = 0; i < sl; i++)
		suf[i] = (char)tolower((unsigned char)p[i]);
	suf[sl] = '\0';
	if (sl > 0) {
		for (i = 0; i < nitems(units); i++)
			if (strcmp(units[i].suffix, suf) == 0)
				break;
		if (i == nitems(units))
			return -1;
		mult = units[i].mult;
	}
	if (mult != 0 && n > UINT64_MAX / mult)
		return -1;
	*bytes = n * mult;
	return 0;
}

/* A "0x" hexadecimal integer (optionally signed, as the kernel's sysctl
 * and sysfs integer parsers take it) in decimal into out; 0 when s is not
 * one or does not fit 64 bits. */
static int
canon_hex(const char *buf, char *out, size_t outlen)
{
	int neg = buf[0] == '-';
	const char *h = buf + (buf[0] == '-' || buf[0] == '+');
	unsigned long long v;
	char *end;

	if (h[0] != '0' || (h[1] != 'x' && h[1] != 'X') || !isxdigit((unsigned char)h[2]))
		return 0;
	errno = 0;
	v = strtoull(h + 2, &end, 16);
	if (errno != 0 || *end != '\0')
		return 0;
	snprintf(out, outlen, "%s%llu", neg && v != 0 ? "-" : "", v);
	return 1;
}

/* True when s is an optionally signed integer, decimal or "0x" hex;
 * canonical (decimal) form in out. */
static int
canon_int(const char *s, size_t len, char *out, size_t outlen)
{
	char buf[64];
	long long v;
	char *end;

	if (len == 0 || len >= sizeof(buf))
		return 0;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!isdigit((unsigned char)buf[0]) &&
	    !((buf[0] == '-' || buf[0] == '+') && isdigit((unsigned char)buf[1])))
		return 0;
	if (canon_hex(buf, out, outlen))
		return 1;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno != 0 || *end != '\0') {
		/* too large for long long: keep digits, drop leading zeros */
		size_t i = (buf[0] == '+' || buf[0] == '-') ? 1 : 0;
		for (size_t j = i; buf[j]; j++)
			if (!isdigit((unsigned char)buf[j]))
				return 0;
		while (buf[i] == '0' && buf[i + 1] != '\0')
			i++;
		snprintf(out, outlen, "%s%s", buf[0] == '-' ? "-" : "", buf + i);
		return 1;
	}
	snprintf(out, outlen, "%lld", v);
	return 1;
}

/* "a [b] c" -> "b"; returns 1 when the selection syntax was found. */
static int
selected_choice(const char *in, char *out, size_t outlen)
{
	const char *l = strchr(in, '['), *r;

	if (l == NULL || (r = strchr(l, ']')) == NULL || r == l + 1)
		return 0;
	snprintf(out, outlen, "%.*s", (int)(r - l - 1), l + 1);
	return 1;
}

/* Collapse white space; integers per word canonical; "[x]" reduced to x. */
static int
norm_auto(const char *in, char *out, size_t outlen)
{
	char sel[256], w[128];
	const char *p = in;
	size_t o = 0;

	if (selected_choice(in, sel, sizeof(sel))) {
		snprintf(out, outlen, "%s", strtrim(sel));
		return 0;
	}
	out[0] = '\0';
	while (*p) {
		const char *s;
		size_t len;

		while (isspace((unsigned char)*p))
			p++;
		if (*p == '\0')
			break;
		s = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		len = (size_t)(p - s);
		if (o > 0 && o + 1 < outlen)
			out[o++] = ' ';
		if (canon_int(s, len, w, sizeof(w))) {
			s = w;
			len = strlen(w);
		}
		if (o + len + 1 > outlen)
			return -1;
		memcpy(out + o, s, len);
		o += len;
		out[o] = '\0';
	}
	return 0;
}

int
norm_value(enum norm_kind k, const char *in, char *out, size_t outlen,
    char *msg, size_t msglen)
{
	char tmp[NORM_VALUE_MAX], sel[256];
	uint64_t b, unit;

	if (in == NULL)
		in = "";
	str_copy(tmp, in, sizeof(tmp));
	strtrim(tmp);
	switch (k) {
	case NORM_CHOICE:
		if (selected_choice(tmp, sel, sizeof(sel)))
			str_copy(tmp, strtrim(sel), sizeof(tmp));
		if (tmp[0] == '\0' || strpbrk(tmp, " \t\n[]") != NULL) {
			snprintf(msg, msglen, "'%s' is not a single choice", in);
			return -1;
		}
		str_copy(out, tmp, outlen);
		return 0;
	case NORM_KIB:
	case NORM_MIB:
	case NORM_BYTES:
		unit = k == NORM_KIB ? 1024 : k == NORM_MIB ? 1ull << 20 : 1;
		if (norm_parse_size(tmp, unit, &b) < 0) {
			snprintf(msg, msglen, "'%s' is not a size (number with optional unit K, M, G, T, s)", in);
			return -1;
		}
		if (b % unit != 0) {
			snprintf(msg, msglen, "'%s' is not a whole number of %s", in,
			    k == NORM_KIB ? "KiB" : "MiB");
			return -1;
		}
		snprintf(out, outlen, "%" PRIu64, b / unit);
		return 0;
	case NORM_INT:
		if (!canon_int(tmp, strlen(tmp), out, outlen)) {
			snprintf(msg, msglen, "'%s' is not an integer", in);
			return -1;
		}
		return 0;
	case NORM_AUTO:
	default:
		if (norm_auto(tmp, out, outlen) < 0) {
			snprintf(msg, msglen, "value too long");
			return -1;
		}
		return 0;
	}
}

struct kind_rule {
	const char *driver;
	const char *attr;	/* NULL: any */
	const char *key_suffix;	/* NULL: any; gpfs: case-insensitive */
	enum norm_kind kind;
	const char *field;	/* the file is a "name: value" block: this field's value */
};

/* First match wins. */
static const struct kind_rule kind_rules[] = {
	{ "blockdev", "scheduler", NULL, NORM_CHOICE, NULL },
	{ "blockdev", "read_ahead_kb", NULL, NORM_KIB, NULL },
	{ "blockdev", "max_sectors_kb", NULL, NORM_KIB, NULL },
	{ "blockdev", "nr_requests", NULL, NORM_INT, NULL },
	{ "blockdev", "rq_affinity", NULL, NORM_INT, NULL },
	{ "blockdev", "nomerges", NULL, NORM_INT, NULL },
	{ "blockdev", "add_random", NULL, NORM_INT, NULL },
	{ "blockdev", "rotational", NULL, NORM_INT, NULL },
	{ "net", NULL, NULL, NORM_INT, NULL },
	{ "nfsd", NULL, NULL, NORM_INT, NULL },
	{ "gpfs", NULL, "pagepool", NORM_BYTES, NULL },
	{ "gpfs", NULL, "maxblocksize", NORM_BYTES, NULL },
	{ "gpfs", NULL, "lrocDataMaxFileSize", NORM_BYTES, NULL },
	{ "gpfs", NULL, "lrocDataStubFileSize", NORM_BYTES, NULL },
	/* llite.*.max_cached_mb reads "users: N\nmax_cached_mb: M\nused_mb: ..."
	 * and takes a plain size (or that block) when written */
	{ "lustre", NULL, ".max_cached_mb", NORM_MIB, "max_cached_mb" },
	{ "lustre", NULL, "_mb", NORM_MIB, NULL },
};

/* Does s end in suf (icase: ignoring case)? */
static int
has_suffix(const char *s, const char *suf, int icase)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && (icase ? strcasecmp(s + a - b, suf) : strcmp(s + a - b, suf)) == 0;
}

/* The rule a (driver, key, attr) normalises by, NULL for NORM_AUTO.  GPFS
 * attribute names are case-insensitive (pagePool is pagepool). */
static const struct kind_rule *
kind_rule_for(const char *driver, const char *key, const char *attr)
{
	for (size_t i = 0; i < nitems(kind_rules); i++) {
		const struct kind_rule *r = &kind_rules[i];

		if (strcmp(r->driver, driver) != 0)
			continue;
		if (r->attr != NULL && (attr == NULL || strcmp(r->attr, attr) != 0))
			continue;
		if (r->key_suffix != NULL && (key == NULL ||
		    !has_suffix(key, r->key_suffix, strcmp(driver, "gpfs") == 0)))
			continue;
		return r;
	}
	return NULL;
}

enum norm_kind
norm_kind_for(const char *driver, const char *key, const char *attr)
{
	const struct kind_rule *r = kind_rule_for(driver, key, attr);

	return r ? r->kind : NORM_AUTO;
}

/* The value of "name:" in a "name: value" block (one field a line), into
 * out; 0 when in has no such line. */
static int
block_field(const char *in, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name);
	const char *l = in;

	while (l != NULL) {
		l += strspn(l, " \t");
		if (strncmp(l, name, nl) == 0 && l[nl] == ':') {
			snprintf(out, outlen, "%.*s", (int)strcspn(l + nl + 1, "\n"), l + nl + 1);
			return 1;
		}
		if ((l = strchr(l, '\n')) != NULL)
			l++;
	}
	return 0;
}

/* Old names of a value.  taken: the kernel takes the alias for the
 * canonical name (6.18: mq-deadline registers "deadline" as its
 * elevator_alias, and reads back "[mq-deadline]"), so the alias
 * normalises to the canonical name, which is what is written, compared and
 * offered; otherwise the alias is a single-queue elevator gone since 5.0
 * that the kernel refuses (EINVAL), named in the refusal
 * (value_successor). */
static const struct value_alias {
	const char *driver, *attr, *alias, *canonical;
	int taken;
} value_aliases[] = {
	{ "blockdev", "scheduler", "deadline", "mq-deadline", 1 },
	{ "blockdev", "scheduler", "noop", "none", 0 },
	{ "blockdev", "scheduler", "cfq", "bfq", 0 },
};

/* The alias entry of (driver, attr, value), NULL when none. */
static const struct value_alias *
value_alias_of(const char *driver, const char *attr, const char *value)
{
	for (size_t i = 0; attr != NULL && i < nitems(value_aliases); i++) {
		const struct value_alias *v = &value_aliases[i];

		if (strcmp(v->driver, driver) == 0 && strcmp(v->attr, attr) == 0 &&
		    strcmp(v->alias, value) == 0)
			return v;
	}
	return NULL;
}

const char *
value_successor(const char *driver, const char *attr, const char *value)
{
	const struct value_alias *v = value_alias_of(driver, attr, value);

	return v != NULL && !v->taken ? v->canonical : NULL;
}

int
norm_setting(const char *driver, const char *key, const char *attr,
    const char *in, char *out, size_t outlen, char *msg, size_t msglen)
{
	const struct kind_rule *r = kind_rule_for(driver, key, attr);
	const struct value_alias *v;
	char field[NORM_VALUE_MAX];

	if (r != NULL && r->field != NULL && in != NULL &&
	    block_field(in, r->field, field, sizeof(field)))
		in = field;
	if (norm_value(r ? r->kind : NORM_AUTO, in, out, outlen, msg, msglen) < 0)
		return -1;
	if ((v = value_alias_of(driver, attr, out)) != NULL && v->taken)
		str_copy(out, v->canonical, outlen);
	return 0;
}

int
norm_equal(const char *driver, const char *key, const char *attr,
    const char *a, const char *b)
{
	char na[NORM_VALUE_MAX], nb[NORM_VALUE_MAX], msg[256];

	if (norm_setting(driver, key, attr, a, na, sizeof(na), msg, sizeof(msg)) < 0 &&
	    norm_value(NORM_AUTO, a, na, sizeof(na), msg, sizeof(msg)) < 0)
		return 0;
	if (norm_setting(driver, key, attr, b, nb, sizeof(nb), msg, sizeof(msg)) < 0 &&
	    norm_value(NORM_AUTO, b, nb, sizeof(nb), msg, sizeof(msg)) < 0)
		return 0;
	return strcmp(na, nb) == 0;
}

int
driver_known(const char *name)
{
	for (size_t i = 0; knob_driver_names[i]; i++)
		if (strcmp(knob_driver_names[i], name) == 0)
			return 1;
	return 0;
}

struct bd_attr {
	const char *attr, *path;
};

static const struct bd_attr bd_attrs[] = {
	{ "scheduler", "queue/scheduler" },
	{ "read_ahead_kb", "queue/read_ahead_kb" },
	{ "nr_requests", "queue/nr_requests" },
	{ "max_sectors_kb", "queue/max_sectors_kb" },
	{ "rq_affinity", "queue/rq_affinity" },
	{ "nomerges", "queue/nomerges" },
	{ "add_random", "queue/add_random" },
	{ "rotational", "queue/rotational" },
};

const char *
blockdev_attr_path(const char *attr)
{
	for (size_t i = 0; attr && i < nitems(bd_attrs); i++)
		if (strcmp(bd_attrs[i].attr, attr) == 0)
			return bd_attrs[i].path;
	return NULL;
}

/* A path component ".." anywhere in s. */
static int
has_dotdot(const char *s)
{
	const char *p = s;

	while ((p = strstr(p, "..")) != NULL) {
		if ((p == s || p[-1] == '/' || p[-1] == '.') &&
		    (p[2] == '\0' || p[2] == '/' || p[2] == '.'))
			return 1;
		p += 2;
	}
	return 0;
}

static int
chars_ok(const char *s, const char *extra)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && strchr(extra, *s) == NULL)
			return 0;
	return 1;
}

/* Is s made only of digits? */
static int
all_digits(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* Does s end in a digit ("192", "MGC192")? */
static int
ends_digit(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && isdigit((unsigned char)s[n - 1]);
}

int
lustre_param_path(const char *name, char *out, size_t outlen)
{
	char buf[1024];
	char *tok[128];
	size_t nt = 0, o = 0;
	char *p, *save = NULL;

	if (snprintf(buf, sizeof(buf), "%s", name) >= (int)sizeof(buf))
		return -1;
	for (p = strtok_r(buf, ".", &save); p && nt < nitems(tok); p = strtok_r(NULL, ".", &save))
		tok[nt++] = p;
	if (p != NULL || nt == 0)
		return -1;
	out[0] = '\0';
	for (size_t i = 0; i < nt; i++) {
		const char *sep = o ? "/" : "";
		int n;

		/* a.b.c.d@net: four digit groups joined back with dots; the
		 * first may carry a prefix (mgc.MGC192.168.1.1@o2ib.import) */
		if (i + 3 < nt && ends_digit(tok[i]) &&
		    all_digits(tok[i + 1], strlen(tok[i + 1])) &&
		    all_digits(tok[i + 2], strlen(tok[i + 2])) &&
		    strchr(tok[i + 3], '@') != NULL &&
		    all_digits(tok[i + 3], (size_t)(strchr(tok[i + 3], '@') - tok[i + 3]))) {
			n = snprintf(out + o, outlen - o, "%s%s.%s.%s.%s", sep, tok[i],
			    tok[i + 1], tok[i + 2], tok[i + 3]);
			i += 3;
		} else
			n = snprintf(out + o, outlen - o, "%s%s", sep, tok[i]);
		if (n < 0 || (size_t)n >= outlen - o)
			return -1;
		o += (size_t)n;
	}
	return 0;
}

static const char *const nfsd_keys[] = {
	"threads", "max_block_size", "nfsv4leasetime", "nfsv4gracetime", NULL
};
static const char *const net_attrs[] = { "mtu", "txqueuelen", NULL };

static int
in_list(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (strcmp(*l, s) == 0)
			return 1;
	return 0;
}

/* The rules every driver's key shares: a key, an attr where (and only
 * where) the driver takes one, a match for blockdev only. 0 or -1 with msg. */
static int
key_common(const char *driver, const char *key, const char *attr,
    const char *match, char *msg, size_t msglen)
{
	int needs_attr = strcmp(driver, "blockdev") == 0 || strcmp(driver, "net") == 0;

	if (key == NULL || key[0] == '\0') {
		snprintf(msg, msglen, "%s: empty key", driver);
		return -1;
	}
	if (needs_attr && (attr == NULL || attr[0] == '\0')) {
		snprintf(msg, msglen, "%s '%s': missing attr", driver, key);
		return -1;
	}
	if (!needs_attr && attr != NULL && attr[0] != '\0') {
		snprintf(msg, msglen, "%s '%s': attr is only for blockdev and net", driver, key);
		return -1;
	}
	if (match != NULL && match[0] != '\0' &&
	    (strcmp(driver, "blockdev") != 0 ||
	    (strcmp(match, "rotational=0") != 0 && strcmp(match, "rotational=1") != 0))) {
		snprintf(msg, msglen, "%s '%s': bad match '%s' (blockdev only: rotational=0|1)",
		    driver, key, match);
		return -1;
	}
	return 0;
}

/* A sysfs key: a path under /sys (absolute or relative to it). */
static int
key_sysfs(const char *key, const char *attr, char *msg, size_t msglen)
{
	(void)attr;
	if ((key[0] == '/' && strncmp(key, "/sys/", 5) != 0) || has_dotdot(key) ||
	    strstr(key, "//") != NULL) {
		snprintf(msg, msglen, "sysfs key '%s' is not a path under /sys", key);
		return -1;
	}
	return 0;
}

/* A sysctl key: a dotted or slashed name (glob allowed), never a path. */
static int
key_sysctl(const char *key, const char *attr, char *msg, size_t msglen)
{
	(void)attr;
	/* "//" is ".." once sysctl_glob swaps a dotted key's separators */
	if (key[0] == '/' || has_dotdot(key) || strstr(key, "//") != NULL ||
	    !chars_ok(key, "._-*?[]/")) {
		snprintf(msg, msglen, "bad sysctl name '%s'", key);
		return -1;
	}
	return 0;
}

/* A blockdev key: a device name glob, and a known queue attribute. */
static int
key_blockdev(const char *key, const char *attr, char *msg, size_t msglen)
{
	if (strchr(key, '/') != NULL || has_dotdot(key) || !chars_ok(key, "._-*?[]!:")) {
		snprintf(msg, msglen, "bad block device glob '%s'", key);
		return -1;
	}
	if (blockdev_attr_path(attr) == NULL) {
		snprintf(msg, msglen, "unknown blockdev attr '%s'", attr);
		return -1;
	}
	return 0;
}

/* A lustre key: a parameter name (glob allowed) with a path on a node. */
static int
key_lustre(const char *key, const char *attr, char *msg, size_t msglen)
{
	char path[1024];

	(void)attr;
	if (strchr(key, '/') != NULL || has_dotdot(key) ||
	    !chars_ok(key, "._-*?[]@,") || lustre_param_path(key, path, sizeof(path)) < 0) {
		snprintf(msg, msglen, "bad lustre parameter name '%s'", key);
		return -1;
	}
	return 0;
}

/* A gpfs key: an mmchconfig attribute name. */
static int
key_gpfs(const char *key, const char *attr, char *msg, size_t msglen)
{
	(void)attr;
	if (!chars_ok(key, "_")) {
		snprintf(msg, msglen, "bad gpfs attribute '%s'", key);
		return -1;
	}
	return 0;
}

/* An nfsd key: one of nfsd_keys. */
static int
key_nfsd(const char *key, const char *attr, char *msg, size_t msglen)
{
	(void)attr;
	if (!in_list(nfsd_keys, key)) {
		snprintf(msg, msglen, "unknown nfsd key '%s' (threads, max_block_size, nfsv4leasetime, nfsv4gracetime)", key);
		return -1;
	}
	return 0;
}

/* A net key: an interface name glob, and one of net_attrs. */
static int
key_net(const char *key, const char *attr, char *msg, size_t msglen)
{
	if (strchr(key, '/') != NULL || !chars_ok(key, "._-*?[]!:@")) {
		snprintf(msg, msglen, "bad interface glob '%s'", key);
		return -1;
	}
	if (!in_list(net_attrs, attr)) {
		snprintf(msg, msglen, "unknown net attr '%s' (mtu, txqueuelen)", attr);
		return -1;
	}
	return 0;
}

/* Each driver's key rules (key_common applied first). */
static const struct {
	const char *driver;
	int (*check)(const char *key, const char *attr, char *msg, size_t msglen);
} key_rules[] = {
	{ "sysfs", key_sysfs }, { "sysctl", key_sysctl }, { "blockdev", key_blockdev },
	{ "lustre", key_lustre }, { "gpfs", key_gpfs }, { "nfsd", key_nfsd },
	{ "net", key_net },
};

/* Key and attribute rules of one driver. 0 or -1 with msg. */
static int
key_validate(const char *driver, const char *key, const char *attr,
    const char *match, char *msg, size_t msglen)
{
	if (key_common(driver, key, attr, match, msg, msglen) < 0)
		return -1;
	for (size_t i = 0; i < nitems(key_rules); i++)
		if (strcmp(driver, key_rules[i].driver) == 0)
			return key_rules[i].check(key, attr, msg, msglen);
	snprintf(msg, msglen, "unknown driver '%s'", driver);
	return -1;
}

const char *const lustre_param_roots[] = {
	"/sys/fs/lustre", "/proc/fs/lustre", "/sys/kernel/debug/lustre", NULL,
};

/* Does path (absolute, no "..", no "//") match the glob pat, each '*'
 * within one component, as the agent's glob(3) expansion of pat would? */
static int
path_matches(const char *pat, const char *path)
{
	return path[0] == '/' && !has_dotdot(path) && strstr(path, "//") == NULL &&
	    fnmatch(pat, path, FNM_PATHNAME) == 0;
}

/* A name in one directory (a block device, an interface) that glob
 * matches: no '/', not "." or "..". */
static int
name_matches(const char *glob, const char *name)
{
	return name[0] != '\0' && strchr(name, '/') == NULL && strcmp(name, ".") != 0 &&
	    strcmp(name, "..") != 0 && fnmatch(glob, name, 0) == 0;
}

void
sysctl_glob(const char *key, char *out, size_t outlen)
{
	size_t o = (size_t)snprintf(out, outlen, "/proc/sys/");
	const char *sep = strpbrk(key, "./");
	int path = sep != NULL && *sep == '/';

	for (const char *p = key; *p && o + 1 < outlen; p++)
		out[o++] = path ? *p : *p == '.' ? '/' : *p == '/' ? '.' : *p;
	out[o] = '\0';
}

const char *
setting_key_id(const char *driver, const char *key, char *buf, size_t buflen)
{
	size_t n = strlen(key);

	if (strcmp(driver, "sysctl") == 0 && n + sizeof("/proc/sys/") <= buflen) {
		sysctl_glob(key, buf, buflen);
		return buf;
	}
	if (strcmp(driver, "gpfs") == 0 && n < buflen) {
		for (size_t i = 0; i <= n; i++)
			buf[i] = (char)tolower((unsigned char)key[i]);
		return buf;
	}
	return key;
}

int
sysctl_ipv6_mtu_if(const char *path, char *buf, size_t len)
{
	static const char pre[] = "/proc/sys/net/ipv6/conf/";
	const char *k = path + strlen(pre);
	size_t n;

	if (strncmp(path, pre, strlen(pre)) != 0)
		return 0;
	n = strlen(k);
	if (n <= 4 || n - 4 >= len || strcmp(k + n - 4, "/mtu") != 0 ||
	    memchr(k, '/', n - 4) != NULL)
		return 0;
	memcpy(buf, k, n - 4);
	buf[n - 4] = '\0';
	return strcmp(buf, "all") != 0 && strcmp(buf, "default") != 0;
}

int
target_cmp(const char *driver, const char *a, const char *b)
{
	return strcmp(driver, "gpfs") == 0 ? strcasecmp(a, b) : strcmp(a, b);
}

/* Is target one that the lustre key can resolve to (a root, then the
 * key's relative glob)? */
static int
lustre_target_ok(const char *key, const char *target)
{
	char rel[1024], pat[1200];

	if (lustre_param_path(key, rel, sizeof(rel)) < 0)
		return 0;
	for (size_t r = 0; lustre_param_roots[r]; r++) {
		snprintf(pat, sizeof(pat), "%s/%s", lustre_param_roots[r], rel);
		if (path_matches(pat, target))
			return 1;
	}
	return 0;
}

/* Is target what driver's key can name on a node (glob expanded)? */
static int
target_form_ok(const char *driver, const char *key, const char *target)
{
	char pat[1200];

	if (strcmp(driver, "sysfs") == 0) {
		snprintf(pat, sizeof(pat), "%s%s", key[0] == '/' ? "" : "/sys/", key);
		return strncmp(target, "/sys/", 5) == 0 && path_matches(pat, target);
	}
	if (strcmp(driver, "sysctl") == 0) {
		sysctl_glob(key, pat, sizeof(pat));
		return strncmp(target, "/proc/sys/", 10) == 0 && path_matches(pat, target);
	}
	if (strcmp(driver, "blockdev") == 0 || strcmp(driver, "net") == 0)
		return name_matches(key, target);
	if (strcmp(driver, "lustre") == 0)
		return lustre_target_ok(key, target) ||
		    (strncmp(target, LUSTRE_RECORD, strlen(LUSTRE_RECORD)) == 0 &&
		    strcmp(target + strlen(LUSTRE_RECORD), key) == 0);
	if (strcmp(driver, "nfsd") == 0) {
		snprintf(pat, sizeof(pat), "/proc/fs/nfsd/%s", key);
		return strcmp(target, pat) == 0;
	}
	return strcmp(driver, "gpfs") == 0 && strcmp(target, key) == 0;
}

/* The attribute a journal-only attribute stands beside (the key whose
 * write moves what it records: blockdev "iosched", the elevator's
 * tunables, beside "scheduler"; net "upper_mtu", the MTUs of the devices
 * stacked on an interface, and "ipv6_mtu", its IPv6 MTU, beside "mtu";
 * gpfs "configured", what mmlsconfig shows, beside the live value of the
 * attribute, no attr), else attr itself.  Only the agent journals them: a
 * journal may name them, a profile may not. */
static const char *
journal_attr_base(const char *driver, const char *attr)
{
	static const char *const only[][3] = {
		{ "blockdev", "iosched", "scheduler" }, { "net", "upper_mtu", "mtu" },
		{ "net", "ipv6_mtu", "mtu" }, { "gpfs", "configured", "" },
	};

	for (size_t i = 0; attr && i < nitems(only); i++)
		if (strcmp(driver, only[i][0]) == 0 && strcmp(attr, only[i][1]) == 0)
			return only[i][2];
	return attr;
}

/* A net key may name an interface by an alternative name (ip link
 * property add ... altname): the agent journals the primary name, which
 * the key's glob need not match.  Any plain interface name (shorter than
 * IFNAMSIZ, no '/') is taken: it is looked up by name, no path is made
 * of it. */
static int
net_primary_ok(const char *driver, const char *target)
{
	return strcmp(driver, "net") == 0 && strlen(target) < 16 && name_matches("*", target);
}

/* A key only the agent journals (nfsd "pool_threads", which the kernel
 * moves when threads is written): a journal may name it, a profile may
 * not (writing it can stop the server, and no check of knob's guards
 * that). */
static int
journal_key_only(const char *driver, const char *key, const char *attr, const char *match)
{
	return strcmp(driver, "nfsd") == 0 && strcmp(key, "pool_threads") == 0 &&
	    (attr == NULL || *attr == '\0') && (match == NULL || *match == '\0');
}

int
target_validate(const char *driver, const char *key, const char *attr, const char *match,
    const char *target, char *msg, size_t msglen)
{
	attr = journal_attr_base(driver, attr);
	if (!journal_key_only(driver, key, attr, match) &&
	    key_validate(driver, key, attr, match, msg, msglen) < 0)
		return -1;
	if (target[0] != '\0' && !target_form_ok(driver, key, target) &&
	    !net_primary_ok(driver, target)) {
		snprintf(msg, msglen, "%s target '%.200s' is not one that key '%.200s' names",
		    driver, target, key);
		return -1;
	}
	return 0;
}

int
setting_validate(const char *driver, const char *key, const char *attr,
    const char *match, const char *value, char *msg, size_t msglen)
{
	char out[NORM_VALUE_MAX], why[256];

	if (key_validate(driver, key, attr, match, msg, msglen) < 0)
		return -1;
	if (value == NULL) {
		snprintf(msg, msglen, "%s '%s': missing value", driver, key);
		return -1;
	}
	if (norm_setting(driver, key, attr, value, out, sizeof(out), why, sizeof(why)) < 0) {
		snprintf(msg, msglen, "bad value for %s %s%s%s: %s", driver, key,
		    attr && *attr ? " " : "", attr ? attr : "", why);
		return -1;
	}
	if (strcmp(driver, "net") == 0 && strcmp(attr, "mtu") == 0 &&
	    (atoll(out) < 68 || atoll(out) > 65536)) {
		snprintf(msg, msglen, "bad value for net %s mtu: %s is outside 68..65536", key, out);
		return -1;
	}
	if (strcmp(driver, "nfsd") == 0 && strcmp(key, "threads") == 0 &&
	    (atoll(out) < 0 || atoll(out) > 8192)) {
		snprintf(msg, msglen, "bad value for nfsd threads: %s is outside 0..8192", out);
		return -1;
	}
	return 0;
}

/* A mount path as /proc/self/mounts spells the mount point, in place and
 * lexically (no look at the file system: a dead NFS or Lustre mount would
 * hang a stat): "//" collapsed, "." dropped, ".." takes off the component
 * before it (at "/" it stays "/"), trailing slashes dropped: "/sys/" and
 * "/scratch//x/.." are "/sys" and "/scratch".  A relative path is left as
 * written. */
void
norm_mount_path(char *p)
{
	char *w = p;
	const char *r = p;

	if (*p != '/')
		return;
	while (*r) {
		size_t n;

		while (*r == '/')
			r++;
		n = strcspn(r, "/");
		if (n == 2 && r[0] == '.' && r[1] == '.') {
			while (w > p && *--w != '/')
				;
		} else if (n > 0 && !(n == 1 && r[0] == '.')) {
			*w++ = '/';
			memmove(w, r, n);
			w += n;
		}
		r += n;
	}
	if (w == p)
		*w++ = '/';
	*w = '\0';
}

/* Undo the octal escapes of /proc/self/mounts (\040 etc.) in place. */
char *
mount_unescape(char *s)
{
	char *r = s, *w = s;

	while (*r != '\0') {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
			r += 4;
		} else
			*w++ = *r++;
	}
	*w = '\0';
	return s;
}
