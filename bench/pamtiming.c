/* Preloaded into pamtester by the bench: times pam_authenticate() and each conversation message. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <security/pam_appl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Records stay in memory while pam_authenticate() runs, so that writing them adds nothing to the
 * interval; they are written to $BENCH_TIMING_FILE when it returns. This is a test program's
 * preload, one thread, one authentication: plain statics are fine here. */
#define MAX_RECORDS 64
static char records[MAX_RECORDS][160];
static int n_records;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock of Python's time.monotonic() */
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void flush_records(void)
{
    const char *path = getenv("BENCH_TIMING_FILE");
    int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
    for (int i = 0; fd >= 0 && i < n_records; i++)
        dprintf(fd, "%s\n", records[i]);
    if (fd >= 0)
        close(fd);
    n_records = 0;
}

int misc_conv(int num_msg, const struct pam_message **msg, struct pam_response **resp,
              void *appdata)
{
    static int (*real)(int, const struct pam_message **, struct pam_response **, void *);
    long long t = now_ns();
    for (int i = 0; i < num_msg && n_records < MAX_RECORDS; i++)
        snprintf(records[n_records++], sizeof(records[0]), "conv %lld %d %s", t, msg[i]->msg_style,
                 msg[i]->msg ? msg[i]->msg : "");
    if (!real)
        real = (int (*)(int, const struct pam_message **, struct pam_response **, void *))dlsym(
            RTLD_NEXT, "misc_conv");
    return real ? real(num_msg, msg, resp, appdata) : PAM_CONV_ERR;
}

int pam_authenticate(pam_handle_t *pamh, int flags)
{
    static int (*real)(pam_handle_t *, int);
    if (!real)
        real = (int (*)(pam_handle_t *, int))dlsym(RTLD_NEXT, "pam_authenticate");
    long long start = now_ns();
    int rc = real ? real(pamh, flags) : PAM_SYSTEM_ERR;
    long long end = now_ns();
    if (n_records < MAX_RECORDS - 1) {
        snprintf(records[n_records++], sizeof(records[0]), "start %lld", start);
        snprintf(records[n_records++], sizeof(records[0]), "end %lld %d", end, rc);
    }
    flush_records();
    return rc;
}
