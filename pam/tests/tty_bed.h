/* The terminal tests' bed: a fake touchgated on a Unix socket and a PAM client on a pty (forkpty)
 * whose keys and screen the test drives. Header-only, like fake.h: each test program is one file. */
#ifndef TG_TTY_BED_H
#define TG_TTY_BED_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <security/pam_appl.h>

#include "check.h"
#include "fake.h"
#include "tg_tty.h"

#define TEXT_HINT_BIO       "(or press Enter to use your password)"
#define TEXT_HINT_BOP       "(or type your password and press Enter)"
#define TEXT_HINT_BIO_ZH    "（或按回车键使用密码）"
#define TEXT_TYPING         "(typing password — press Enter)"
#define TEXT_NOT_RESPONDING "Fingerprint service not responding: use your password"
#define TEXT_SERVICE_ERROR  "Fingerprint service error: use your password"
#define TEXT_KEYRING        "Keyring not unlocked: type your password once"
#define TEXT_WRONG          "Wrong password"
#define TEXT_QUEUED         "Waiting for the fingerprint reader (1 ahead in the queue)"
#define TEXT_LOCKED         "Fingerprint locked after 5 failed attempts: enter your password"
#define TEXT_PASSWORD       "Password: "
#define TEXT_REFUSED        "Fingerprint not recognised"
#define TEXT_PASSWORD_ZH    "密码："
#define OUTPUT_MAX          8192

static char dir[PATH_MAX];
static char module[PATH_MAX];
static char probe[PATH_MAX];
static char daemon_sock[PATH_MAX + 16];

#include "tty_daemon.h"

/* ---- the PAM client on the pty --------------------------------------------------------------- */

struct child_report {
    int rc;
    bool has_authtok;
    char authtok[TG_LINE_MAX + 1];
    char leftover[64]; /* what the client read from the terminal afterwards */
    struct termios before, after;
};

/* Set before the fork: the child reads the terminal after pam_authenticate. */
static bool child_reads_leftover;
/* Set before the fork: a message with this text is shown by a slow conversation, which returns
 * only once a key can be read from the terminal (the test types while it is shown; 5 s at most). */
static const char *conv_waits_for;
/* Set before the fork: the child's stdin is a pipe holding this text while the pty stays its
 * controlling terminal, stdout and stderr, and the conversation answers a password prompt with a
 * line of stdin, as sudo -S does. NULL: stdin is the pty, and the conversation asks nothing. */
static const char *child_stdin;

/* The line sudo -S reads: stdin up to a newline or its end, at most TG_LINE_MAX bytes. */
static inline char *stdin_line(void)
{
    char line[TG_LINE_MAX + 1];
    size_t n = 0;
    while (n < TG_LINE_MAX && read(0, line + n, 1) == 1 && line[n] != '\n')
        n++;
    line[n] = '\0';
    return strdup(line);
}

/* Shows messages on the terminal as a console client does (misc_conv style). */
static inline int tty_conv(int num, const struct pam_message **msg, struct pam_response **resp,
                           void *appdata)
{
    (void)appdata;
    struct pam_response *r = calloc((size_t)num, sizeof(*r));
    if (r == NULL)
        return PAM_BUF_ERR;
    for (int i = 0; i < num; i++) {
        int fd = msg[i]->msg_style == PAM_ERROR_MSG ? 2 : 1;
        if (msg[i]->msg_style == PAM_PROMPT_ECHO_OFF && child_stdin != NULL) {
            /* The prompt on stderr, the answer from stdin, as sudo -S. */
            if (write(2, msg[i]->msg, strlen(msg[i]->msg)) >= 0 &&
                (r[i].resp = stdin_line()) != NULL)
                continue;
            free(r);
            return PAM_CONV_ERR;
        }
        if (msg[i]->msg_style != PAM_TEXT_INFO && msg[i]->msg_style != PAM_ERROR_MSG) {
            free(r);
            return PAM_CONV_ERR; /* the module must never ask for input */
        }
        if (write(fd, msg[i]->msg, strlen(msg[i]->msg)) < 0 || write(fd, "\n", 1) < 0) {
            free(r);
            return PAM_CONV_ERR;
        }
        if (conv_waits_for != NULL && strcmp(msg[i]->msg, conv_waits_for) == 0) {
            struct pollfd pfd = { .fd = 0, .events = POLLIN };
            poll(&pfd, 1, 5000);
        }
    }
    *resp = r;
    return PAM_SUCCESS;
}

static inline void child_main(const char *service, int report_fd)
{
    struct child_report rep;
    struct termios t;
    pam_handle_t *pamh = NULL;
    struct pam_conv conv = { tty_conv, NULL };

    memset(&rep, 0, sizeof(rep));
    rep.rc = -1;
    /* Unusual but valid canonical settings: the module must put back exactly these, not defaults.
     * (Through stdout: the pty, whatever stdin is.) */
    if (tcgetattr(1, &t) == 0) {
        t.c_cc[VMIN] = 3;
        t.c_cc[VTIME] = 7;
        t.c_lflag &= ~(tcflag_t)IEXTEN;
        t.c_iflag |= IUTF8;
        tcsetattr(1, TCSANOW, &t);
    }
    tcgetattr(1, &rep.before);
    int in[2]; /* the whole text fits in the pipe; closed, its end ends a line too */
    if (child_stdin != NULL &&
        (pipe(in) != 0 || write(in[1], child_stdin, strlen(child_stdin)) < 0 ||
         dup2(in[0], 0) < 0 || close(in[0]) != 0 || close(in[1]) != 0))
        _exit(3);
    if (pam_start_confdir(service, "root", &conv, dir, &pamh) == PAM_SUCCESS) {
        rep.rc = pam_authenticate(pamh, 0);
        const char *tok = pam_getenv(pamh, "TG_PROBE_AUTHTOK");
        if (tok != NULL) {
            rep.has_authtok = true;
            snprintf(rep.authtok, sizeof(rep.authtok), "%s", tok);
        }
        pam_end(pamh, rep.rc);
    }
    tcgetattr(1, &rep.after);
    if (child_reads_leftover) {
        struct pollfd pfd = { .fd = 0, .events = POLLIN };
        if (poll(&pfd, 1, 3000) == 1) {
            ssize_t n = read(0, rep.leftover, sizeof(rep.leftover) - 1);
            rep.leftover[n > 0 ? n : 0] = '\0';
        }
    }
    if (write(report_fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
        _exit(2);
    _exit(0);
}

/* ---- the test's side of the pty ----------------------------------------------------------- */

struct outcome {
    bool reported;
    struct child_report rep;
    bool hint_seen;
    struct termios mid;      /* the terminal while the prompt listened */
    uint64_t ms_after_keys;  /* from the keys to the child's report */
    char before[OUTPUT_MAX]; /* printed before the keys */
    size_t nbefore;
    char after[OUTPUT_MAX]; /* printed after the keys */
    size_t nafter;
};

/* Appends what the master has to buf; false once the child's side is closed (EIO) or on error. */
static inline bool drain(int master, char *buf, size_t *n, int timeout_ms)
{
    struct pollfd pfd = { .fd = master, .events = POLLIN };
    if (poll(&pfd, 1, timeout_ms) <= 0)
        return true;
    ssize_t got = read(master, buf + *n, OUTPUT_MAX - 1 - *n);
    if (got <= 0)
        return false;
    *n += (size_t)got;
    buf[*n] = '\0';
    return *n < OUTPUT_MAX - 1;
}

/* Reads the master until text appears in buf, within 5 s. */
static inline bool await_output(int master, char *buf, size_t *n, const char *text)
{
    uint64_t deadline = tg_deadline_after(5000);
    while (strstr(buf, text) == NULL) {
        int left = tg_remaining_ms(deadline);
        if (left == 0 || !drain(master, buf, n, left))
            return strstr(buf, text) != NULL;
    }
    return true;
}

struct script {
    const char *service;
    const char *wait_for; /* output that shows the prompt listens (the hint) */
    const char *keys;     /* typed once it does */
    const char *go_after; /* output to wait for after the keys before "go"; "" = go at once */
};

/* Set before run_tty: after "go", output to wait for, then keys typed (none when NULL). */
static const char *then_wait_for, *then_keys;

static inline void run_tty(const struct script *s, struct daemon *d, struct outcome *o)
{
    int report[2] = { -1, -1 };
    int master = -1;
    memset(o, 0, sizeof(*o));
    d->next_kind = -1;
    bool ready =
        pipe(report) == 0 && pipe(d->go) == 0 && fake_listen(daemon_sock, &d->listen_fd, true);
    CHECK(ready, "%s: setup failed", s->service);
    if (!ready)
        return;

    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    if (pid == 0) {
        close(report[0]);
        close(d->listen_fd);
        child_main(s->service, report[1]);
    }
    close(report[1]);
    CHECK(pid > 0, "forkpty failed");
    if (pid < 0)
        goto cleanup;
    pthread_create(&d->thread, NULL, daemon_main, d);

    o->hint_seen = await_output(master, o->before, &o->nbefore, s->wait_for);
    CHECK(o->hint_seen, "%s: '%s' never shown; output so far: %s", s->service, s->wait_for,
          o->before);
    tcgetattr(master, &o->mid); /* a pty master reports its slave's termios */
    if (s->keys[0] != '\0' && write(master, s->keys, strlen(s->keys)) < 0)
        CHECK(false, "%s: cannot type", s->service);
    uint64_t t0 = tg_now_ms();
    if (s->go_after != NULL) {
        if (s->go_after[0] != '\0')
            CHECK(await_output(master, o->after, &o->nafter, s->go_after), "%s: '%s' never shown",
                  s->service, s->go_after);
        if (write(d->go[1], "g", 1) != 1)
            CHECK(false, "cannot signal the fake daemon");
    }
    if (then_keys != NULL) {
        CHECK(await_output(master, o->after, &o->nafter, then_wait_for), "%s: '%s' never shown",
              s->service, then_wait_for);
        if (write(master, then_keys, strlen(then_keys)) < 0)
            CHECK(false, "%s: cannot type", s->service);
    }

    /* The child's report, draining the terminal meanwhile so the child never blocks on it. */
    uint64_t deadline = tg_deadline_after(10000);
    while (!o->reported && tg_remaining_ms(deadline) > 0) {
        struct pollfd fds[2] = { { .fd = report[0], .events = POLLIN },
                                 { .fd = master, .events = POLLIN } };
        if (poll(fds, 2, tg_remaining_ms(deadline)) <= 0)
            break;
        if (fds[0].revents != 0) {
            o->reported = read(report[0], &o->rep, sizeof(o->rep)) == (ssize_t)sizeof(o->rep);
            o->ms_after_keys = tg_now_ms() - t0;
            if (!o->reported)
                break;
        }
        if (fds[1].revents != 0 && !drain(master, o->after, &o->nafter, 0))
            fds[1].fd = -1;
    }
    CHECK(o->reported, "%s: the client never finished", s->service);
    if (!o->reported)
        kill(pid, SIGKILL);
    if (write(d->go[1], "g", 1) != 1) /* the client is done: a daemon still waiting stops */
        CHECK(false, "cannot signal the fake daemon");
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    /* The child has exited: whatever it printed is read up to EIO. */
    while (drain(master, o->after, &o->nafter, 1000))
        ;
    pthread_join(d->thread, NULL);
    if (getenv("TG_TEST_VERBOSE") != NULL) /* the transcript, to see what a person would see */
        printf("---- %s, keys %zu bytes\n%s[keys]\n%s\n", s->service, strlen(s->keys), o->before,
               o->after);

cleanup:
    if (master >= 0)
        close(master);
    close(report[0]);
    close(d->go[0]);
    close(d->go[1]);
    close(d->listen_fd);
    unlink(daemon_sock);
}

static inline bool termios_same(const struct termios *a, const struct termios *b)
{
    return a->c_iflag == b->c_iflag && a->c_oflag == b->c_oflag && a->c_cflag == b->c_cflag &&
           a->c_lflag == b->c_lflag && memcmp(a->c_cc, b->c_cc, sizeof(a->c_cc)) == 0;
}

/* The terminal was changed while the prompt listened, and is exactly as before afterwards. */
static inline void expect_restored(const struct outcome *o, const char *name)
{
    if (!o->reported)
        return;
    CHECK((o->mid.c_lflag & (ICANON | ECHO | ISIG)) == 0 && o->mid.c_cc[VMIN] == 1 &&
              o->mid.c_cc[VTIME] == 0,
          "%s: the terminal was not in raw mode while the prompt listened (lflag %#x)", name,
          (unsigned)o->mid.c_lflag);
    CHECK((o->rep.before.c_lflag & (ICANON | ECHO | ISIG)) == (ICANON | ECHO | ISIG) &&
              o->rep.before.c_cc[VMIN] == 3 && o->rep.before.c_cc[VTIME] == 7,
          "%s: unexpected starting termios", name);
    CHECK(termios_same(&o->rep.before, &o->rep.after),
          "%s: termios not restored: lflag %#x -> %#x, iflag %#x -> %#x, VMIN %d -> %d, "
          "VTIME %d -> %d",
          name, (unsigned)o->rep.before.c_lflag, (unsigned)o->rep.after.c_lflag,
          (unsigned)o->rep.before.c_iflag, (unsigned)o->rep.after.c_iflag, o->rep.before.c_cc[VMIN],
          o->rep.after.c_cc[VMIN], o->rep.before.c_cc[VTIME], o->rep.after.c_cc[VTIME]);
}

/* Nothing but line ends was printed after the keys. */
static inline bool printed_nothing(const struct outcome *o)
{
    for (size_t i = 0; i < o->nafter; i++)
        if (o->after[i] != '\r' && o->after[i] != '\n')
            return false;
    return true;
}

/* The PAM services the tests run, each the module with these options. */
static const struct {
    const char *name, *options;
} tty_stacks[] = {
    { "tg-tty-bio", "" },
    { "tg-tty-bop", "policy=biometrics-or-password" },
    { "tg-tty-noinput", "noinput" },
};

/* Where the PAM service `name` lives in the bed's directory. */
static inline void stack_path(char *path, size_t size, const char *name)
{
    snprintf(path, size, "%s/%s", dir, name);
}

static inline void write_stack(const char *name, const char *options)
{
    char path[PATH_MAX + 64];
    stack_path(path, sizeof(path), name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (f == NULL)
        return;
    fprintf(f, "auth required %s socket=%s %s\nauth optional %s\n", module, daemon_sock, options,
            probe);
    fclose(f);
}

/* The module, the probe and the three PAM services in a temporary directory; false (with a failed
 * CHECK) when the bed cannot be made. */
static inline bool tty_bed_setup(int argc, char **argv)
{
    const char *so = argc > 2 ? argv[2] : "./pam_touchgate.so";
    char probe_path[PATH_MAX + 32];
    snprintf(dir, sizeof(dir), "/tmp/tg-tty-XXXXXX");
    const char *why = fake_setup(so, module, dir, daemon_sock, sizeof(daemon_sock));
    if (why != NULL) {
        CHECK(false, "%s (%s)", why, so);
        return false;
    }
    snprintf(probe_path, sizeof(probe_path), "%.*s/tests/pam_probe.so",
             (int)(strrchr(module, '/') - module), module);
    if (realpath(probe_path, probe) == NULL) {
        CHECK(false, "no probe module at %s", probe_path);
        return false;
    }
    for (size_t i = 0; i < COUNT(tty_stacks); i++)
        write_stack(tty_stacks[i].name, tty_stacks[i].options);

    return true;
}

/* Removes what tty_bed_setup made; a file left behind (a run's socket, say) fails the check. */
static inline void tty_bed_teardown(void)
{
    for (size_t i = 0; i < COUNT(tty_stacks); i++) {
        char path[PATH_MAX + 64];
        stack_path(path, sizeof(path), tty_stacks[i].name);
        CHECK(unlink(path) == 0, "remove %s: %s", path, strerror(errno));
    }
    CHECK(rmdir(dir) == 0, "remove %s: %s", dir, strerror(errno));
}

#endif /* TG_TTY_BED_H */
