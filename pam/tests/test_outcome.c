/* Outcome mapping tests: one assertion per row of docs/spec.md §10, plus the never-SUCCESS/never-IGNORE sweep. */
#include <limits.h>
#include <security/pam_modules.h>

#include "check.h"
#include "tg_outcome.h"
#include "touchgate_wire.h"

#define EXPECT(code, flags, want)                                                               \
    CHECK(tg_outcome_to_pam((code), (flags)) == (want), "%s (flags %#x) -> %d, want %s", #code, \
          (unsigned)(flags), tg_outcome_to_pam((code), (flags)), #want)

#define EXPECT_FAILURE(failure, want)                                          \
    CHECK(tg_failure_to_pam(failure) == (want), "%s -> %d, want %s", #failure, \
          tg_failure_to_pam(failure), #want)

int main(void)
{
    const int32_t none = 0;
    const int32_t by_password = TG_FLAG_BY_PASSWORD;

    /* fingerprint match, or password verified by the daemon */
    EXPECT(TG_OK, none, PAM_SUCCESS);
    /* authenticationFailed after max_tries no-matches */
    EXPECT(TG_ERR_AUTHENTICATION_FAILED, none, PAM_MAXTRIES);
    EXPECT(TG_ERR_AUTHENTICATION_FAILED, TG_FLAG_ASK_PASSWORD, PAM_MAXTRIES);
    /* wrong password (the daemon marks its judgement of a password), passwordBackoff */
    EXPECT(TG_ERR_AUTHENTICATION_FAILED, by_password, PAM_AUTH_ERR);
    EXPECT(TG_ERR_AUTHENTICATION_FAILED, ~by_password, PAM_MAXTRIES); /* that flag only */
    EXPECT(TG_ERR_PASSWORD_BACKOFF, by_password, PAM_AUTH_ERR);
    EXPECT(TG_ERR_PASSWORD_BACKOFF, none, PAM_AUTH_ERR);
    /* user does not exist */
    EXPECT(TG_ERR_USER_UNKNOWN, none, PAM_USER_UNKNOWN);
    /* everything that must let the password module run */
    EXPECT(TG_ERR_BIOMETRY_NOT_AVAILABLE, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_BIOMETRY_NOT_ENROLLED, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_BIOMETRY_LOCKOUT, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_PASSWORD_REQUIRED, TG_FLAG_ASK_PASSWORD, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_USER_FALLBACK, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_USER_CANCEL, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_SYSTEM_CANCEL, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_APP_CANCEL, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_TIMEOUT, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_NOT_INTERACTIVE, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_PASSWORD_NOT_SET, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_INVALID_CONTEXT, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_NOT_PERMITTED, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_TEMPLATE_DAMAGED, none, PAM_AUTHINFO_UNAVAIL);
    EXPECT(TG_ERR_BUSY, none, PAM_AUTHINFO_UNAVAIL);
    /* internal errors: never SUCCESS or IGNORE */
    EXPECT(TG_ERR_BAD_REQUEST, none, PAM_SYSTEM_ERR);
    EXPECT(TG_ERR_INTERNAL, none, PAM_SYSTEM_ERR);
    EXPECT(TG_ERR_NOT_FOUND, none, PAM_SYSTEM_ERR);
    EXPECT(-13, none, PAM_SYSTEM_ERR);
    EXPECT(1, none, PAM_SYSTEM_ERR);
    EXPECT(INT32_MIN, none, PAM_SYSTEM_ERR);
    EXPECT(INT32_MAX, by_password, PAM_SYSTEM_ERR);
    EXPECT(TG_ERR_INTERNAL, by_password, PAM_SYSTEM_ERR);

    /* Module-internal failures. */
    EXPECT_FAILURE(TG_FAIL_UNREACHABLE, PAM_AUTHINFO_UNAVAIL);
    EXPECT_FAILURE(TG_FAIL_TIMEOUT, PAM_AUTHINFO_UNAVAIL);
    EXPECT_FAILURE(TG_FAIL_DISCONNECTED, PAM_AUTHINFO_UNAVAIL);
    EXPECT_FAILURE(TG_FAIL_MALFORMED_REPLY, PAM_SYSTEM_ERR);
    EXPECT_FAILURE(TG_FAIL_WRONG_REQUEST_ID, PAM_SYSTEM_ERR);
    EXPECT_FAILURE(TG_FAIL_UNEXPECTED_REPLY, PAM_SYSTEM_ERR);
    EXPECT_FAILURE(TG_FAIL_BAD_REQUEST, PAM_SYSTEM_ERR);
    EXPECT_FAILURE(TG_FAIL_NO_MEMORY, PAM_BUF_ERR);
    EXPECT_FAILURE((enum tg_failure)999, PAM_SYSTEM_ERR);

    /* Sweep: only TG_OK may give PAM_SUCCESS, nothing may give PAM_IGNORE, whatever the flags. */
    static const int32_t flag_sets[] = { 0, TG_FLAG_BY_PASSWORD, TG_FLAG_ASK_PASSWORD, -1,
                                         TG_FLAG_ACCEPTS_PASSWORD };
    long violations = 0, tried = 0;
    for (long code = -70000; code <= 70000; code++) {
        for (size_t r = 0; r < sizeof(flag_sets) / sizeof(flag_sets[0]); r++) {
            int rc = tg_outcome_to_pam((int32_t)code, flag_sets[r]);
            tried++;
            if ((rc == PAM_SUCCESS) != (code == TG_OK) || rc == PAM_IGNORE) {
                violations++;
                fprintf(stderr, "code %ld flags %#x -> %d\n", code, (unsigned)flag_sets[r], rc);
            }
        }
    }
    for (int32_t code = INT32_MIN;; code += 65521) {
        int rc = tg_outcome_to_pam(code, 0);
        tried++;
        if ((rc == PAM_SUCCESS) != (code == TG_OK) || rc == PAM_IGNORE)
            violations++;
        if (code > INT32_MAX - 65521)
            break;
    }
    CHECK(violations == 0 && tried > 700000, "%ld of %ld codes gave SUCCESS wrongly or IGNORE",
          violations, tried);
    long fail_violations = 0;
    for (int f = -5; f < 64; f++) {
        int rc = tg_failure_to_pam((enum tg_failure)f);
        if (rc == PAM_SUCCESS || rc == PAM_IGNORE)
            fail_violations++;
    }
    CHECK(fail_violations == 0, "%ld internal failures gave SUCCESS or IGNORE", fail_violations);

    return check_summary("test_outcome");
}
