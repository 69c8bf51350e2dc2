/* Private key files: load one only when the file read is its owner's
 * alone (keyfile.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "keyfile.h"
#include "tls.h"

/* 0 when the open file fd (path) is private: owned by this user or root,
 * no group or other permission bits; else -1 with err saying what to do. */
static int
key_fd_private(int fd, const char *path, const char *why, char *err, size_t errlen)
{
	struct stat st;
	uid_t me = geteuid();

	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s: cannot load key: %s", path, strerror(errno));
		return -1;
	}
	if (st.st_uid != me && st.st_uid != 0) {
		snprintf(err, errlen, "%s: owned by uid %u, neither this user (uid %u) nor root: its "
		    "owner can read it or replace it, and %s: not used; chown %u %s", path,
		    (unsigned)st.st_uid, (unsigned)me, why, (unsigned)me, path);
		return -1;
	}
	if ((st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s: mode %04o: a private key others can read or write: %s: "
		    "not used; chmod 600 %s", path, (unsigned)(st.st_mode & 07777), why, path);
		return -1;
	}
	return 0;
}

EVP_PKEY *
key_file_load(const char *path, const char *why, char *err, size_t errlen)
{
	char tmp[512];
	EVP_PKEY *key = NULL;
	FILE *fp = fopen(path, "re");

	if (fp == NULL) {
		snprintf(err, errlen, "%s: cannot load key: %s", path, strerror(errno));
		return NULL;
	}
	if (key_fd_private(fileno(fp), path, why, err, errlen) == 0 &&
	    (key = PEM_read_PrivateKey(fp, NULL, NULL, NULL)) == NULL) {
		tls_errstr(tmp, sizeof(tmp));
		snprintf(err, errlen, "%s: cannot load key: %s", path, tmp);
	}
	fclose(fp);
	return key;
}
