/* Report lines: what this stack's password modules did, told to touchgated. */
#ifndef TG_REPORT_H
#define TG_REPORT_H

#include <security/pam_modules.h>

#include "tg_options.h"

/* auth `report`: the stack verified the password. Sent only with a password in the stack (a
 * non-empty PAM_AUTHTOK), never after a match. Not a factor: always PAM_IGNORE, so it can never
 * make a stack succeed (nor fail). */
int tg_report_password_success(pam_handle_t *pamh, const struct tg_options *opt);

/* password `authtok`: the stack changed the password, which renews a sealed keyring password.
 * Always PAM_IGNORE: it never decides a password change. */
int tg_report_password_change(pam_handle_t *pamh, int flags, const struct tg_options *opt);

#endif /* TG_REPORT_H */
