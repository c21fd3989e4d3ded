/* The password step of biometrics-or-password (deviceOwnerAuthentication): ask, let touchgated check. */
#ifndef TG_PASSWORD_H
#define TG_PASSWORD_H

#include "tg_module.h"

/* Asks for the password (the module's own terminal reader when it reads keys, going on with
 * *typed, what was typed at the fingerprint prompt; else the PAM conversation), sends it in a VERIFY_PASSWORD request and maps the answer:
 *   verified                            PAM_SUCCESS, the password set as PAM_AUTHTOK
 *   wrong, or password entry backed off PAM_AUTH_ERR, the daemon's message shown
 *   empty, Ctrl-C, Ctrl-D, no answer    userCancel: PAM_AUTHINFO_UNAVAIL, nothing sent
 *   daemon gone, silent, not judging    PAM_AUTHINFO_UNAVAIL (or the mapped error), the password
 *                                       set as PAM_AUTHTOK so pam_unix try_first_pass checks it
 *   not UTF-8: it cannot be sent        PAM_AUTHINFO_UNAVAIL (userFallback), nothing sent, no
 *                                       message, the password set as PAM_AUTHTOK */
int tg_password_step(struct tg_call *c, struct tg_line *typed);

/* A password half-typed at the fingerprint prompt when the daemon refused without asking for
 * the password step: its rest is read the same way, and the whole line handed to the password
 * module that follows as PAM_AUTHTOK (try_first_pass), as one typed there and not judged. Empty,
 * Ctrl-C or Ctrl-D hands nothing on. *typed is wiped. */
void tg_password_finish(struct tg_call *c, struct tg_line *typed);

#endif /* TG_PASSWORD_H */
