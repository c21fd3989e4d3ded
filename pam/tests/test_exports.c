/* Export test: the built module resolves and offers exactly the PAM entry points, nothing else. */
#include <dlfcn.h>
#include <security/pam_modules.h>

#include "check.h"

typedef int (*pam_entry)(pam_handle_t *, int, int, const char **);

int main(int argc, char **argv)
{
    const char *so = argc > 2 ? argv[2] : "./pam_touchgate.so";
    /* RTLD_NOW: an unresolved symbol in the module fails here, not inside sudo at 3 a.m. */
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen %s: %s", so, dlerror());
    if (h == NULL)
        return check_summary("test_exports");

    pam_entry auth = (pam_entry)dlsym(h, "pam_sm_authenticate");
    pam_entry setcred = (pam_entry)dlsym(h, "pam_sm_setcred");
    CHECK(auth != NULL, "pam_sm_authenticate not exported");
    CHECK(setcred != NULL, "pam_sm_setcred not exported");
    CHECK(dlsym(h, "pam_sm_chauthtok") != NULL, "pam_sm_chauthtok not exported");
    if (setcred != NULL)
        CHECK(setcred(NULL, 0, 0, NULL) == PAM_SUCCESS, "pam_sm_setcred must return PAM_SUCCESS");

    /* The helpers are there, but must stay private to the module. */
    static const char *const hidden[] = {
        "tg_frame_decode",   "tg_writer_init",    "tg_connect",       "tg_read_frame",
        "tg_outcome_to_pam", "tg_failure_to_pam", "pam_sm_acct_mgmt", "pam_sm_open_session",
    };
    for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
        CHECK(dlsym(h, hidden[i]) == NULL, "%s is exported", hidden[i]);
    dlclose(h);
    return check_summary("test_exports");
}
