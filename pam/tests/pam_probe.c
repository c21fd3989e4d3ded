/* Test-only PAM module: shows the application the PAM_AUTHTOK that earlier modules left, and
 * takes a new password in a password stack. */
#include <stdio.h>
#include <string.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#define EXPORT __attribute__((visibility("default")))

/* Applications may not read PAM_AUTHTOK; this puts it in the PAM environment as
 * TG_PROBE_AUTHTOK, where pam_getenv can. Never in a real stack. With the argument `settok` it
 * first takes a password (pam_get_authtok asks "Password: ") and leaves it as PAM_AUTHTOK, as
 * pam_unix does before a `report` line; with `want=PASSWORD` after it, it then judges that
 * password as a password module would (PAM_SUCCESS or PAM_AUTH_ERR) instead of being ignored. */
EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    const void *tok = NULL;
    const char *typed = NULL;
    char entry[600];
    (void)flags;
    if (argc > 0 && strcmp(argv[0], "settok") == 0)
        pam_get_authtok(pamh, PAM_AUTHTOK, &typed, NULL);
    if (pam_get_item(pamh, PAM_AUTHTOK, &tok) == PAM_SUCCESS && tok != NULL &&
        snprintf(entry, sizeof(entry), "TG_PROBE_AUTHTOK=%s", (const char *)tok) <
            (int)sizeof(entry))
        pam_putenv(pamh, entry);
    if (argc > 1 && strncmp(argv[1], "want=", 5) == 0)
        return tok != NULL && strcmp(tok, argv[1] + 5) == 0 ? PAM_SUCCESS : PAM_AUTH_ERR;
    return PAM_IGNORE;
}

EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_IGNORE;
}

/* The password stack's module, as pam_unix is to it: takes the new password (pam_get_authtok asks
 * "New password:" and "Retype new password:") and leaves it as PAM_AUTHTOK for the lines after it.
 * It stores nothing. */
EXPORT int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    const char *tok = NULL;
    (void)argc;
    (void)argv;
    if (flags & PAM_PRELIM_CHECK)
        return PAM_SUCCESS;
    return pam_get_authtok(pamh, PAM_AUTHTOK, &tok, NULL);
}
