/* Cluster CA helpers beyond the ca_init/ca_issue pair declared in
 * knobctl.h (controller/ca.c). */
#ifndef KNOB_CA_H
#define KNOB_CA_H

#include <stddef.h>

/* Longest name accepted: the X.509 upper bound for a common name
 * (ub-common-name, RFC 5280), below the 253 of a DNS name. */
#define CA_NAME_MAX 64
#define CA_CERT_FILE "ca.crt"
#define CA_KEY_FILE "ca.key"

/* 0 when name is usable as a certificate CN and a file name in the CA
 * directory, else -1 with the reason in err. */
int ca_name_check(const char *name, char *err, size_t errlen);

#endif
