/* The EVALUATE request that starts a fingerprint prompt: what the daemon is told, and the connection. */
#ifndef TG_EVALUATE_H
#define TG_EVALUATE_H

#include <stdint.h>

#include "tg_module.h"

/* Connects to the daemon and sends EVALUATE (user, policy, service, limits, language, tty, remote
 * host, the reader of the device option, and the flags NO_INPUT and NO_TERMINAL). PAM_SUCCESS, or
 * the PAM code (the daemon unreachable: PAM_AUTHINFO_UNAVAIL). *sock is the connection whenever
 * one was made (the caller closes it), else -1. */
int tg_evaluate_start(const struct tg_call *c, uint32_t id, int *sock);

#endif /* TG_EVALUATE_H */
