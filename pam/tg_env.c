/* What the module learns from its surroundings: the client's language, remoteness, the account. */
#include "tg_env.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>

#include "tg_outcome.h"

#define DEBUG(opt, pamh, ...)                           \
    do {                                                \
        if ((opt)->debug)                               \
            pam_syslog((pamh), LOG_DEBUG, __VA_ARGS__); \
    } while (0)

/* The PAM environment's value, else the process's; NULL when neither is set and non-empty. */
static const char *pam_or_process_env(pam_handle_t *pamh, const char *name)
{
    const char *v = pam_getenv(pamh, name);
    if (v == NULL || v[0] == '\0')
        v = getenv(name);
    return (v != NULL && v[0] != '\0') ? v : NULL;
}

const char *tg_client_locale(pam_handle_t *pamh)
{
    static const char *const names[] = { "LC_ALL", "LC_MESSAGES", "LANG" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = pam_or_process_env(pamh, names[i]);
        if (v != NULL)
            return v;
    }
    return NULL;
}

const char *tg_pam_string(pam_handle_t *pamh, int item)
{
    const void *v = NULL;
    if (pam_get_item(pamh, item, &v) != PAM_SUCCESS || v == NULL || ((const char *)v)[0] == '\0')
        return NULL;
    return v;
}

/* Whether the environment the process was started with names one of `names` with a non-empty
 * value. sudo swaps environ for its env_reset copy before it authenticates, so getenv misses an
 * SSH session's variables there; /proc/self/environ still holds the exec-time block. Bounded. */
static bool initial_environment_has(const char *const *names, size_t count)
{
    char buf[4096];
    char entry[256];
    size_t len = 0, total = 0;
    bool found = false;
    int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    while (!found && total < (1u << 20)) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        total += (size_t)n;
        for (ssize_t i = 0; i < n && !found; i++) {
            if (buf[i] != '\0') {
                if (len < sizeof(entry) - 1)
                    entry[len++] =
                        buf[i]; /* only the name and the first byte of the value matter */
                continue;
            }
            entry[len] = '\0';
            for (size_t k = 0; k < count && !found; k++) {
                size_t nl = strlen(names[k]);
                found =
                    strncmp(entry, names[k], nl) == 0 && entry[nl] == '=' && entry[nl + 1] != '\0';
            }
            len = 0;
        }
    }
    close(fd);
    return found;
}

/* PAM_RHOST, else "ssh" inside an SSH session: sudo and su there leave PAM_RHOST unset, and
 * without it the daemon's allow_remote rule would take a remote person for a local one. */
const char *tg_remote_host(pam_handle_t *pamh)
{
    static const char *const names[] = { "SSH_CONNECTION", "SSH_CLIENT" };
    const size_t count = sizeof(names) / sizeof(names[0]);
    const char *rhost = tg_pam_string(pamh, PAM_RHOST);
    if (rhost != NULL)
        return rhost;
    for (size_t i = 0; i < count; i++)
        if (pam_or_process_env(pamh, names[i]) != NULL)
            return "ssh";
    /* Remote if the client was started from an SSH session, whatever it did to environ since. */
    return initial_environment_has(names, count) ? "ssh" : NULL;
}

int tg_lookup_user(const char *user)
{
    int rc;
    long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
    size_t size = hint > 0 ? (size_t)hint : 16384;
    char *buf = NULL;

    for (;;) {
        struct passwd pw, *found = NULL;
        char *grown = realloc(buf, size);
        if (grown == NULL) {
            rc = tg_failure_to_pam(TG_FAIL_NO_MEMORY);
            goto done;
        }
        buf = grown;
        int err = getpwnam_r(user, &pw, buf, size, &found);
        if (err == ERANGE && size < (1u << 20)) {
            size *= 2;
            continue;
        }
        if (found != NULL)
            rc = PAM_SUCCESS;
        else if (err == 0 || err == ENOENT || err == ESRCH || err == EBADF || err == EPERM)
            rc = PAM_USER_UNKNOWN;
        else
            rc =
                PAM_AUTHINFO_UNAVAIL; /* NSS failing: we cannot tell, so let the password module decide */
        goto done;
    }
done:
    free(buf);
    return rc;
}

int tg_get_user(pam_handle_t *pamh, const struct tg_options *opt, const char **user)
{
    int rc;
    /* noinput asks nothing, not even a name (pam_get_user would ask for one): without the
     * application's user the fingerprint cannot decide, and the service beside it does. */
    if (opt->noinput) {
        *user = tg_pam_string(pamh, PAM_USER);
        if (*user == NULL) {
            DEBUG(opt, pamh, "noinput and no PAM_USER: nobody to ask for");
            return PAM_AUTHINFO_UNAVAIL;
        }
    } else if ((rc = pam_get_user(pamh, user, NULL)) != PAM_SUCCESS) {
        DEBUG(opt, pamh, "pam_get_user: %s", pam_strerror(pamh, rc));
        return rc == PAM_CONV_AGAIN ? PAM_INCOMPLETE : rc;
    }
    if (*user == NULL || (*user)[0] == '\0')
        return PAM_USER_UNKNOWN;
    if ((rc = tg_lookup_user(*user)) != PAM_SUCCESS)
        DEBUG(opt, pamh, "user lookup: %s", pam_strerror(pamh, rc));
    return rc;
}
