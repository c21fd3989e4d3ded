/* What the module learns from its surroundings: the client's language, remoteness, the account. */
#ifndef TG_ENV_H
#define TG_ENV_H

#include <stdbool.h>

#include <security/pam_modules.h>

#include "tg_options.h"

/* LC_ALL, LC_MESSAGES, LANG in POSIX precedence, each from the PAM environment first, then the
 * process environment; NULL if none is set. Points into one of them: valid during the call. */
const char *tg_client_locale(pam_handle_t *pamh);

/* PAM_RHOST, else "ssh" when the client runs in an SSH session; NULL when local. */
const char *tg_remote_host(pam_handle_t *pamh);

/* A PAM string item, NULL when unset or empty. */
const char *tg_pam_string(pam_handle_t *pamh, int item);

/* PAM_SUCCESS if the account exists, PAM_USER_UNKNOWN if it does not, PAM_AUTHINFO_UNAVAIL if
 * the name service cannot tell, PAM_BUF_ERR without memory. */
int tg_lookup_user(const char *user);

/* The user to authenticate (pam_get_user; under noinput PAM_USER only, PAM_AUTHINFO_UNAVAIL when
 * unset), looked up so that an unknown account is refused before any prompt. */
int tg_get_user(pam_handle_t *pamh, const struct tg_options *opt, const char **user);

#endif /* TG_ENV_H */
