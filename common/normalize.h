/* Per-driver value normalisers and key/value validation, shared by the
 * profile loader (controller) and the tuning drivers (agent), so that
 * "would change", "changed" and "drift" mean the same thing on both sides.
 *
 * The canonical form of a value is what gets written and what is compared:
 *   choice   "none [mq-deadline] kyber" -> "mq-deadline"; an old name the
 *            kernel takes for another -> that name (scheduler "deadline" ->
 *            "mq-deadline", the name it reads back)
 *   kib      "4M" -> "4096", "256s" (512-byte sectors) -> "128", "512KiB" -> "512"
 *   mib      "1G" -> "1024"
 *   bytes    "16G" -> "17179869184"
 *   int      "0016" -> "16", "0x200" -> "512" (what is written is the decimal)
 *   auto     white space collapsed ("4096\t87380  6291456" -> "4096 87380 6291456"),
 *            integers canonical per word (hex too), "[x]" selection syntax reduced to x.
 *   a lustre llite.*.max_cached_mb reads as a "name: value" block
 *            ("users: 4\nmax_cached_mb: 15958\n..."): its max_cached_mb field, in MiB.
 * Unit suffixes are binary (K = KiB = KB = 1024), as the kernel, lctl and
 * mmchconfig read them. */
#ifndef KNOB_NORMALIZE_H
#define KNOB_NORMALIZE_H

#include <stddef.h>
#include <stdint.h>

enum norm_kind {
	NORM_AUTO = 0,
	NORM_CHOICE,
	NORM_KIB,
	NORM_MIB,
	NORM_BYTES,
	NORM_INT,
};

#define NORM_VALUE_MAX 4096

/* Parse a size with an optional unit suffix (K, KB, KiB, M, G, T, P, B, s =
 * 512-byte sectors; case-insensitive); a bare number counts in units of
 * unit bytes.  0 or -1. */
int norm_parse_size(const char *s, uint64_t unit, uint64_t *bytes);
/* Canonical form of in for kind k into out.  0, or -1 with a reason in msg. */
int norm_value(enum norm_kind k, const char *in, char *out, size_t outlen,
    char *msg, size_t msglen);
/* Which normaliser a (driver, key, attr) uses. */
enum norm_kind norm_kind_for(const char *driver, const char *key, const char *attr);
/* norm_value with the kind of (driver, key, attr). */
int norm_setting(const char *driver, const char *key, const char *attr,
    const char *in, char *out, size_t outlen, char *msg, size_t msglen);
/* The canonical name of value when value is an old name of it that the
 * kernel refuses (blockdev scheduler "noop": "none"), for the message that
 * refuses it; NULL otherwise.  An old name the kernel takes ("deadline")
 * norm_setting turns into its canonical name. */
const char *value_successor(const char *driver, const char *attr, const char *value);
/* 1 when a and b are equal after normalisation, 0 otherwise (a value
 * that does not normalise compares as a trimmed string). */
int norm_equal(const char *driver, const char *key, const char *attr,
    const char *a, const char *b);

/* Driver names known to both sides, NULL-terminated. */
extern const char *const knob_driver_names[];
/* 1 when name is a known driver. */
int driver_known(const char *name);
/* Validate a setting's key, attr, match and value for its driver.  0, or
 * -1 with a message (no file:line prefix) in msg. */
int setting_validate(const char *driver, const char *key, const char *attr,
    const char *match, const char *value, char *msg, size_t msglen);
/* A journaled (driver, key, attr, match, target): the key passes the
 * key rules and target is one the driver can resolve that key to (a
 * path under the driver's root matching the key's glob, a device or
 * interface name matching it; "" for a profile's setting, which names
 * no target).  0, or -1 with a message in msg. */
int target_validate(const char *driver, const char *key, const char *attr,
    const char *match, const char *target, char *msg, size_t msglen);
/* sysctl key -> its path or glob under /proc/sys, as sysctl(8) and
 * sysctl.d(5) read it: a key whose first separator is '/' is a path below
 * /proc/sys; otherwise dots and slashes swap ("net.ipv4.conf.eth0/100.
 * rp_filter" is net/ipv4/conf/eth0.100/rp_filter, an interface name with
 * a dot). */
void sysctl_glob(const char *key, char *out, size_t outlen);
/* The identity of a driver's key for the duplicate and override look-ups
 * of profiles: a sysctl as its path below /proc/sys (vm.dirty_ratio and
 * vm/dirty_ratio are one setting), a gpfs attribute in lower case (GPFS
 * attribute names are case-insensitive: pagePool is pagepool), in buf;
 * any other key (or one too long for buf) as written, key itself. */
const char *setting_key_id(const char *driver, const char *key, char *buf, size_t buflen);
/* The interface (a glob when path is one) whose IPv6 MTU the /proc/sys
 * path is (/proc/sys/net/ipv6/conf/IF/mtu, what sysctl_glob makes of
 * net.ipv6.conf.IF.mtu) into buf: 1, else 0 (also for "all" and
 * "default", which are no interface's).  Every write of IF's link MTU
 * sets it. */
int sysctl_ipv6_mtu_if(const char *path, char *buf, size_t len);
/* Order of two targets of driver (strcmp-like): gpfs attributes ignoring
 * case, others byte for byte.  0: the same target. */
int target_cmp(const char *driver, const char *a, const char *b);
/* Where Lustre parameters live, NULL-terminated. */
extern const char *const lustre_param_roots[];
/* A journal-only Lustre target: the "lctl set_param -P" record NAME of a
 * file system (one for all its mounts) is the target LUSTRE_RECORD NAME,
 * journaled under the key NAME (agent/drv_lustre.c). */
#define LUSTRE_RECORD "set_param -P "
/* Blockdev attribute -> path below /sys/block/DEV/ (NULL when unknown). */
const char *blockdev_attr_path(const char *attr);
/* Lustre: lctl parameter name -> relative path (dots to slashes except
 * inside IPv4 NIDs such as 192.168.1.1@o2ib).  0 or -1. */
int lustre_param_path(const char *name, char *out, size_t outlen);
/* A mount path lexically as /proc/self/mounts spells it, in place (no
 * stat or realpath: a dead mount would hang them): "//" collapsed, "."
 * dropped, ".." takes off the component before it, trailing "/" dropped
 * ("/scratch//x/.." is "/scratch").  A relative path is left as written.
 * knobctl's sweep file and knobd's mount check both go through it. */
void norm_mount_path(char *p);
/* Undo the octal escapes of /proc/self/mounts and mountinfo (\040 for a
 * space, \134 for a backslash, ...) in s, in place; s. */
char *mount_unescape(char *s);

#endif
