/* Report mode: tells touchgated that this stack's password module verified the password. */
#ifndef TG_REPORT_H
#define TG_REPORT_H

#include <security/pam_modules.h>

#include "tg_options.h"

/* Not a factor: always PAM_IGNORE, so it can never make a stack succeed (nor fail). */
int tg_report_password_success(pam_handle_t *pamh, const struct tg_options *opt);

#endif /* TG_REPORT_H */
