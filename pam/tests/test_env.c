/* The module's surroundings: the client's language (PAM environment first), SSH as remote, the
 * account lookup. A real PAM handle (pam_start_confdir) carries the PAM environment. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <security/pam_appl.h>

#include "check.h"
#include "tg_env.h"

static char dir[PATH_MAX];

static int quiet_conv(int num, const struct pam_message **msg, struct pam_response **resp,
                      void *data)
{
    (void)num;
    (void)msg;
    (void)resp;
    (void)data;
    return PAM_CONV_ERR;
}

static pam_handle_t *handle(void)
{
    static struct pam_conv conv = { quiet_conv, NULL };
    pam_handle_t *pamh = NULL;
    CHECK(pam_start_confdir("tg-env", "root", &conv, dir, &pamh) == PAM_SUCCESS,
          "pam_start_confdir");
    return pamh;
}

static bool same(const char *got, const char *want)
{
    return (got == NULL && want == NULL) || (got != NULL && want != NULL && strcmp(got, want) == 0);
}

static void test_client_locale(void)
{
    pam_handle_t *pamh = handle();
    if (pamh == NULL)
        return;
    unsetenv("LC_ALL");
    unsetenv("LC_MESSAGES");
    unsetenv("LANG");
    CHECK(tg_client_locale(pamh) == NULL, "no locale at all");
    setenv("LANG", "de_DE.UTF-8", 1);
    CHECK(same(tg_client_locale(pamh), "de_DE.UTF-8"), "process LANG");
    setenv("LC_MESSAGES", "fr_FR.UTF-8", 1);
    CHECK(same(tg_client_locale(pamh), "fr_FR.UTF-8"), "process LC_MESSAGES before LANG");
    /* The PAM environment wins over the process's, name by name in POSIX order. */
    pam_putenv(pamh, "LANG=zh_CN.UTF-8");
    CHECK(same(tg_client_locale(pamh), "fr_FR.UTF-8"), "process LC_MESSAGES before PAM LANG");
    pam_putenv(pamh, "LC_MESSAGES=zh_CN.UTF-8");
    CHECK(same(tg_client_locale(pamh), "zh_CN.UTF-8"),
          "PAM LC_MESSAGES before process LC_MESSAGES");
    setenv("LC_ALL", "ja_JP.UTF-8", 1);
    CHECK(same(tg_client_locale(pamh), "ja_JP.UTF-8"), "process LC_ALL before PAM LC_MESSAGES");
    pam_putenv(pamh, "LC_ALL="); /* set but empty: as if unset */
    CHECK(same(tg_client_locale(pamh), "ja_JP.UTF-8"), "empty PAM LC_ALL taken");
    pam_putenv(pamh, "LC_ALL=C");
    CHECK(same(tg_client_locale(pamh), "C"), "PAM LC_ALL first");
    unsetenv("LC_ALL");
    unsetenv("LC_MESSAGES");
    unsetenv("LANG");
    pam_end(pamh, PAM_SUCCESS);
}

static void test_remote_host(void)
{
    pam_handle_t *pamh = handle();
    if (pamh == NULL)
        return;
    unsetenv("SSH_CONNECTION");
    unsetenv("SSH_CLIENT");
    /* `make check` starts the tests without SSH_* in their environment: local. */
    CHECK(tg_remote_host(pamh) == NULL, "local session taken for remote");
    setenv("SSH_CLIENT", "192.0.2.1 50000 22", 1);
    CHECK(same(tg_remote_host(pamh), "ssh"), "SSH_CLIENT");
    unsetenv("SSH_CLIENT");
    setenv("SSH_CONNECTION", "", 1);
    CHECK(tg_remote_host(pamh) == NULL, "an empty SSH_CONNECTION taken for remote");
    pam_putenv(pamh, "SSH_CONNECTION=192.0.2.1 50000 192.0.2.2 22");
    CHECK(same(tg_remote_host(pamh), "ssh"), "PAM env SSH_CONNECTION");
    pam_set_item(pamh, PAM_RHOST, "host.example");
    CHECK(same(tg_remote_host(pamh), "host.example"), "PAM_RHOST first");
    unsetenv("SSH_CONNECTION");
    pam_end(pamh, PAM_SUCCESS);
}

static void test_lookup_user(void)
{
    CHECK(tg_lookup_user("root") == PAM_SUCCESS, "root");
    CHECK(tg_lookup_user("tg-no-such-user-4711") == PAM_USER_UNKNOWN, "unknown user");
    pam_handle_t *pamh = handle();
    if (pamh == NULL)
        return;
    CHECK(same(tg_pam_string(pamh, PAM_SERVICE), "tg-env"), "PAM_SERVICE");
    CHECK(tg_pam_string(pamh, PAM_TTY) == NULL, "unset PAM_TTY");
    pam_set_item(pamh, PAM_TTY, "");
    CHECK(tg_pam_string(pamh, PAM_TTY) == NULL, "empty PAM_TTY");
    struct tg_options opt;
    const char *user = NULL;
    tg_options_default(&opt);
    CHECK(tg_get_user(pamh, &opt, &user) == PAM_SUCCESS && same(user, "root"), "tg_get_user");
    pam_set_item(pamh, PAM_USER, "tg-no-such-user-4711");
    CHECK(tg_get_user(pamh, &opt, &user) == PAM_USER_UNKNOWN, "tg_get_user: unknown");
    pam_end(pamh, PAM_SUCCESS);
}

int main(void)
{
    char path[PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "/tmp/tg-env-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        CHECK(false, "mkdtemp");
        return check_summary("test_env");
    }
    snprintf(path, sizeof(path), "%s/tg-env", dir);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fputs("auth required pam_deny.so\n", f);
        fclose(f);
    }
    test_client_locale();
    test_remote_host();
    test_lookup_user();
    unlink(path);
    rmdir(dir);
    return check_summary("test_env");
}
