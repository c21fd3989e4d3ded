/* The one mapping from daemon outcomes and module-internal failures to PAM return codes (docs/spec.md §10). */
#include "tg_outcome.h"

#include <security/pam_modules.h>

#include "touchgate_wire.h"

int tg_outcome_to_pam(int32_t code, int32_t flags)
{
    switch (code) {
    case TG_OK:
        return PAM_SUCCESS; /* the only path to PAM_SUCCESS: a match or a password the daemon verified */

    case TG_ERR_AUTHENTICATION_FAILED:
        /* A wrong password (the daemon marks its judgement of a password) is an ordinary
         * failure; used-up fingerprint tries tell the application that retrying this module is
         * pointless. Either way a failure. */
        if ((flags & TG_FLAG_BY_PASSWORD) != 0)
            return PAM_AUTH_ERR;
        return PAM_MAXTRIES;
    case TG_ERR_PASSWORD_BACKOFF:
        return PAM_AUTH_ERR; /* a refusal of this attempt, not "fingerprint unavailable" */
    case TG_ERR_USER_UNKNOWN:
        return PAM_USER_UNKNOWN;

    /* AUTHINFO_UNAVAIL, not AUTH_ERR: when the fingerprint cannot decide, the password module
     * that follows must run — none of these may stand between a user and their password. */
    case TG_ERR_BIOMETRY_NOT_AVAILABLE:
    case TG_ERR_BIOMETRY_NOT_ENROLLED:
    case TG_ERR_BIOMETRY_LOCKOUT:  /* only a password success unlocks: let it be typed */
    case TG_ERR_PASSWORD_REQUIRED: /* the policy itself asks for the password */
    case TG_ERR_USER_FALLBACK:     /* the user chose the password */
    case TG_ERR_USER_CANCEL:
    case TG_ERR_SYSTEM_CANCEL:
    case TG_ERR_APP_CANCEL:
    case TG_ERR_TIMEOUT: /* no finger in time: the password follows */
    case TG_ERR_NOT_INTERACTIVE:
    case TG_ERR_PASSWORD_NOT_SET:
    case TG_ERR_INVALID_CONTEXT:
    case TG_ERR_NOT_PERMITTED:    /* e.g. a request for another user's account */
    case TG_ERR_TEMPLATE_DAMAGED: /* re-enroll that finger; the password works meanwhile */
    case TG_ERR_BUSY: /* too many connections: an attacker's flood must not lock anyone out */
        return PAM_AUTHINFO_UNAVAIL;

    case TG_ERR_BAD_REQUEST:
    case TG_ERR_INTERNAL:
    default:
        /* SYSTEM_ERR, never SUCCESS or IGNORE: an error we cannot interpret must not let a
         * required factor pass or be skipped (cf. pam-u2f CVE-2025-23013). This includes
         * TG_ERR_NOT_FOUND, which cannot answer an evaluation. */
        return PAM_SYSTEM_ERR;
    }
}

int tg_failure_to_pam(enum tg_failure failure)
{
    switch (failure) {
    case TG_FAIL_UNREACHABLE:
    case TG_FAIL_TIMEOUT:
    case TG_FAIL_DISCONNECTED:
        /* AUTHINFO_UNAVAIL, not AUTH_ERR: a dead or frozen daemon must not block password login. */
        return PAM_AUTHINFO_UNAVAIL;
    case TG_FAIL_MALFORMED_REPLY:
    case TG_FAIL_WRONG_REQUEST_ID: /* never take another request's reply as our result */
    case TG_FAIL_UNEXPECTED_REPLY:
    case TG_FAIL_BAD_REQUEST:
        /* SYSTEM_ERR: a protocol fault is a defect to report, never a success or an ignore. */
        return PAM_SYSTEM_ERR;
    case TG_FAIL_NO_MEMORY:
        return PAM_BUF_ERR;
    }
    return PAM_SYSTEM_ERR; /* an unlisted failure is still a failure */
}
