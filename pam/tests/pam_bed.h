/* What the terminal-less PAM tests share: real libpam (pam_start_confdir) running the built module
 * against a fake daemon, in a session without a controlling terminal. */
#ifndef PAM_BED_H
#define PAM_BED_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fake.h"
#include "fake_daemon.h"

#define TEXT_RETRY          "Swipe was too short, try again"
#define TEXT_NO_MATCH       "Fingerprint not recognised"
#define TEXT_NOT_RESPONDING "Fingerprint service not responding: use your password"
#define TEXT_SERVICE_ERROR  "Fingerprint service error: use your password"
#define TEXT_BUSY           "Fingerprint service busy: use your password"
/* A frozen daemon is given up on after 1.5 s of silence, not after a scan's 30 s. */
#define FROZEN_LIMIT_MS 4000

static struct fake_env env;

static void write_service(const char *name, const char *options)
{
    char lines[PATH_MAX + 256];
    snprintf(lines, sizeof(lines), "auth required MODULE %s\n", options);
    CHECK(fake_write_stack(&env, name, lines), "cannot write %s", name);
}

static void run_against(struct fake_server *sv, enum behaviour b, const char *service,
                        const struct run_setup *setup, struct run *out)
{
    bool pending = fake_run_against(sv, &env, 1, &b, service, setup, out);
    CHECK(!pending, "the module opened a connection nobody expected");
}

/* A controlling terminal would make the module read keys: these runs are about the terminal-less
 * case, so they run in a session of their own, without one (test_tty covers the terminal). */
static void detach_from_terminal(void)
{
    if (setsid() >= 0)
        return;
    pid_t pid = fork();
    if (pid < 0)
        return;
    if (pid == 0) {
        setsid();
        return;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

#endif
