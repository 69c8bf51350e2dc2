/* Private key files, checked on the file actually read.  A key that
 * anyone but its owner may read or write, or that belongs to another
 * user (not this one, not root), is refused, as OpenSSH refuses such an
 * identity or host key: whoever else can read it can pose as its owner
 * (a controller key: run anything as root on every node).  The mode and
 * owner are those of the open file (fstat), never of a path looked at
 * again: the file checked is the file loaded, through any symbolic link,
 * and a FIFO ("<(...)") is opened once. */
#ifndef KNOB_KEYFILE_H
#define KNOB_KEYFILE_H

#include <stddef.h>
#include <openssl/evp.h>

/* The unencrypted PEM private key in path, if its file is private to
 * this user (or root); why says what another reader could do ("they can
 * pose as its owner").  Caller frees.  NULL with err: "PATH: mode 0644:
 * WHY: not used; chmod 600 PATH", "PATH: owned by uid N, ...: not used;
 * chown ...", "PATH: cannot load key: REASON". */
EVP_PKEY *key_file_load(const char *path, const char *why, char *err, size_t errlen);

#endif
