/* Terminal tests: a PAM client on a pty (forkpty) answers the fingerprint prompt with keys. */
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

#define TEXT_HINT_BIO    "(or press Enter to use your password)"
#define TEXT_HINT_BOP    "(or type your password and press Enter)"
#define TEXT_HINT_BIO_ZH "（或按回车键使用密码）"
#define TEXT_TYPING      "(typing password — press Enter)"
#define TEXT_NOT_RESPONDING "Fingerprint service not responding: use your password"
#define TEXT_WRONG       "Wrong password"
#define TEXT_QUEUED      "Waiting for the fingerprint reader (1 ahead in the queue)"
#define TEXT_LOCKED      "Fingerprint locked after 5 failed attempts: enter your password"
#define TEXT_PASSWORD    "Password: "
#define TEXT_PASSWORD_ZH "密码："
#define OUTPUT_MAX       8192

static char dir[PATH_MAX];
static char module[PATH_MAX];
static char probe[PATH_MAX];
static char daemon_sock[PATH_MAX + 16];

/* ---- the fake daemon ----------------------------------------------------------------------- */

enum daemon_act {
    ANSWER_INPUT,  /* PROMPT, then waits for the client's next frame; a PASSWORD gets `answer` */
    MATCH_ON_GO,   /* PROMPT, then RESULT TG_OK when the test says go */
    HANG_UP_ON_GO, /* PROMPT, then closes the connection when the test says go */
    GO_SILENT,     /* PROMPT, then nothing at all (no keepalives) until the client hangs up */
    ASK_PASSWORD,  /* no PROMPT: RESULT lockout with ASK_PASSWORD; then a VERIFY_PASSWORD, if one
                    * comes before the test's "go", gets `answer` */
};

struct daemon {
    enum daemon_act act;
    bool queued;                /* QUEUED (behind another prompt) instead of PROMPT */
    int32_t answer;             /* RESULT code for a PASSWORD */
    const char *answer_reason;
    const char *answer_message;
    int listen_fd;
    int go[2];                  /* pipe: the test's "go" */
    pthread_t thread;
    /* What the daemon saw. */
    bool got_request;
    uint8_t req[TG_FRAME_BUFFER];
    struct tg_frame request;
    int next_kind;              /* the frame after EVALUATE: its kind, 0 = hang-up, -1 = nothing */
    char password[TG_MAX_STRING + 1];
    bool saw_close;
    bool verify_came;           /* ASK_PASSWORD: a second connection brought VERIFY_PASSWORD */
};

static bool wait_go(struct daemon *d)
{
    struct pollfd pfd = { .fd = d->go[0], .events = POLLIN };
    char c;
    return poll(&pfd, 1, 10000) == 1 && read(d->go[0], &c, 1) == 1;
}

static void answer_input(struct daemon *d, int fd, uint32_t id)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_frame f;
    size_t len = 0;
    enum tg_io_status st = tg_read_frame(fd, buf, sizeof(buf), &len, tg_deadline_after(10000));
    if (st == TG_IO_EOF) {
        d->next_kind = 0;
        return;
    }
    if (st != TG_IO_OK || tg_frame_decode(buf, len, &f) != TG_CODEC_OK || f.request_id != id)
        return;
    d->next_kind = f.kind;
    if (f.kind == TG_KIND_PASSWORD) {
        tg_frame_string(&f, TG_TAG_PASSWORD, d->password, sizeof(d->password));
        fake_result(fd, id, d->answer, d->answer_reason, d->answer_message);
    }
    /* A CANCEL is deliberately left unanswered, and the prompt kept alive with keepalives at
     * the daemon's pace until the module hangs up: a module that waited for an answer would
     * never return, and run_tty's deadline would fail the test. */
    while (f.kind == TG_KIND_CANCEL) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        if (poll(&pfd, 1, TG_KEEPALIVE_MS) != 0)
            return;  /* the hang-up (or anything else): the module is done with us */
        fake_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
    }
}

/* The password step's connection: VERIFY_PASSWORD, answered with d->answer. Accepts until the
 * test's "go" (sent once the client has finished), so a step that never connects ends there. */
static void verify_password(struct daemon *d)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_frame f;
    struct pollfd fds[2] = { { .fd = d->listen_fd, .events = POLLIN }, { .fd = d->go[0], .events = POLLIN } };
    if (poll(fds, 2, 10000) <= 0 || fds[0].revents == 0)
        return;
    int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (fake_read(fd, buf, &f, 5000) && f.kind == TG_KIND_VERIFY_PASSWORD) {
        d->verify_came = true;
        tg_frame_string(&f, TG_TAG_PASSWORD, d->password, sizeof(d->password));
        fake_result(fd, f.request_id, d->answer, d->answer_reason, d->answer_message);
    }
    fake_await_close(fd, 10000);
    close(fd);
}

static void *daemon_main(void *arg)
{
    struct daemon *d = arg;
    int fd = fake_accept(d->listen_fd, 10000);
    if (fd < 0)
        return NULL;
    d->got_request = fake_read(fd, d->req, &d->request, 5000);
    uint32_t id = d->request.request_id;
    if (!d->got_request)
        goto done;
    if (d->act == ASK_PASSWORD) {
        uint8_t buf[TG_FRAME_BUFFER];
        struct tg_writer w;
        tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, id);
        tg_put_int(&w, TG_TAG_CODE, TG_ERR_BIOMETRY_LOCKOUT);
        tg_put_string(&w, TG_TAG_REASON, "lockout");
        tg_put_int(&w, TG_TAG_FLAGS, TG_FLAG_ASK_PASSWORD);
        tg_put_string(&w, TG_TAG_MESSAGE, TEXT_LOCKED);
        fake_send(fd, &w);
        d->saw_close = fake_await_close(fd, 10000);
        close(fd);
        verify_password(d);
        return NULL;
    }
    if (d->queued)
        fake_progress(fd, id, TG_PROGRESS_QUEUED, TG_STYLE_INFO, TEXT_QUEUED);
    else
        fake_progress(fd, id, TG_PROGRESS_PROMPT, TG_STYLE_INFO, FAKE_TEXT_PROMPT);
    switch (d->act) {
    case ANSWER_INPUT:
        answer_input(d, fd, id);
        break;
    case MATCH_ON_GO:
        if (wait_go(d))
            fake_result(fd, id, TG_OK, NULL, "Fingerprint recognised");
        break;
    case HANG_UP_ON_GO:
        wait_go(d);
        close(fd);
        return NULL;
    case GO_SILENT:
    case ASK_PASSWORD:
        break;
    }
done:
    d->saw_close = fake_await_close(fd, 10000);
    close(fd);
    return NULL;
}

/* ---- the PAM client on the pty --------------------------------------------------------------- */

struct child_report {
    int rc;
    bool has_authtok;
    char authtok[TG_LINE_MAX + 1];
    char leftover[64];             /* what the client read from the terminal afterwards */
    struct termios before, after;
};

/* Set before the fork: the child reads the terminal after pam_authenticate. */
static bool child_reads_leftover;

/* Shows messages on the terminal as a console client does (misc_conv style). */
static int tty_conv(int num, const struct pam_message **msg, struct pam_response **resp,
                    void *appdata)
{
    (void)appdata;
    struct pam_response *r = calloc((size_t)num, sizeof(*r));
    if (r == NULL)
        return PAM_BUF_ERR;
    for (int i = 0; i < num; i++) {
        int fd = msg[i]->msg_style == PAM_ERROR_MSG ? 2 : 1;
        if (msg[i]->msg_style != PAM_TEXT_INFO && msg[i]->msg_style != PAM_ERROR_MSG) {
            free(r);
            return PAM_CONV_ERR;  /* the module must never ask for input */
        }
        if (write(fd, msg[i]->msg, strlen(msg[i]->msg)) < 0 || write(fd, "\n", 1) < 0) {
            free(r);
            return PAM_CONV_ERR;
        }
    }
    *resp = r;
    return PAM_SUCCESS;
}

static void child_main(const char *service, int report_fd)
{
    struct child_report rep;
    struct termios t;
    pam_handle_t *pamh = NULL;
    struct pam_conv conv = { tty_conv, NULL };

    memset(&rep, 0, sizeof(rep));
    rep.rc = -1;
    /* Unusual but valid canonical settings: the module must put back exactly these, not defaults. */
    if (tcgetattr(0, &t) == 0) {
        t.c_cc[VMIN] = 3;
        t.c_cc[VTIME] = 7;
        t.c_lflag &= ~(tcflag_t)IEXTEN;
        t.c_iflag |= IUTF8;
        tcsetattr(0, TCSANOW, &t);
    }
    tcgetattr(0, &rep.before);
    if (pam_start_confdir(service, "root", &conv, dir, &pamh) == PAM_SUCCESS) {
        rep.rc = pam_authenticate(pamh, 0);
        const char *tok = pam_getenv(pamh, "TG_PROBE_AUTHTOK");
        if (tok != NULL) {
            rep.has_authtok = true;
            snprintf(rep.authtok, sizeof(rep.authtok), "%s", tok);
        }
        pam_end(pamh, rep.rc);
    }
    tcgetattr(0, &rep.after);
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
    struct termios mid;             /* the terminal while the prompt listened */
    uint64_t ms_after_keys;         /* from the keys to the child's report */
    char before[OUTPUT_MAX];        /* printed before the keys */
    size_t nbefore;
    char after[OUTPUT_MAX];         /* printed after the keys */
    size_t nafter;
};

/* Appends what the master has to buf; false once the child's side is closed (EIO) or on error. */
static bool drain(int master, char *buf, size_t *n, int timeout_ms)
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
static bool await_output(int master, char *buf, size_t *n, const char *text)
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
    const char *wait_for;   /* output that shows the prompt listens (the hint) */
    const char *keys;       /* typed once it does */
    const char *go_after;   /* output to wait for after the keys before "go"; "" = go at once */
};

static void run_tty(const struct script *s, struct daemon *d, struct outcome *o)
{
    int report[2] = { -1, -1 };
    int master = -1;
    memset(o, 0, sizeof(*o));
    d->next_kind = -1;
    bool ready = pipe(report) == 0 && pipe(d->go) == 0 &&
                 fake_listen(daemon_sock, &d->listen_fd, true);
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
    tcgetattr(master, &o->mid);  /* a pty master reports its slave's termios */
    if (s->keys[0] != '\0' && write(master, s->keys, strlen(s->keys)) < 0)
        CHECK(false, "%s: cannot type", s->service);
    uint64_t t0 = tg_now_ms();
    if (s->go_after != NULL) {
        if (s->go_after[0] != '\0')
            CHECK(await_output(master, o->after, &o->nafter, s->go_after),
                  "%s: '%s' never shown", s->service, s->go_after);
        if (write(d->go[1], "g", 1) != 1)
            CHECK(false, "cannot signal the fake daemon");
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
    if (write(d->go[1], "g", 1) != 1)  /* the client is done: a daemon still waiting stops */
        CHECK(false, "cannot signal the fake daemon");
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    /* The child has exited: whatever it printed is read up to EIO. */
    while (drain(master, o->after, &o->nafter, 1000))
        ;
    pthread_join(d->thread, NULL);
    if (getenv("TG_TEST_VERBOSE") != NULL)  /* the transcript, to see what a person would see */
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

static bool termios_same(const struct termios *a, const struct termios *b)
{
    return a->c_iflag == b->c_iflag && a->c_oflag == b->c_oflag && a->c_cflag == b->c_cflag &&
           a->c_lflag == b->c_lflag && memcmp(a->c_cc, b->c_cc, sizeof(a->c_cc)) == 0;
}

/* The terminal was changed while the prompt listened, and is exactly as before afterwards. */
static void expect_restored(const struct outcome *o, const char *name)
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
          "VTIME %d -> %d", name, (unsigned)o->rep.before.c_lflag, (unsigned)o->rep.after.c_lflag,
          (unsigned)o->rep.before.c_iflag, (unsigned)o->rep.after.c_iflag,
          o->rep.before.c_cc[VMIN], o->rep.after.c_cc[VMIN], o->rep.before.c_cc[VTIME],
          o->rep.after.c_cc[VTIME]);
}

/* Nothing but line ends was printed after the keys. */
static bool printed_nothing(const struct outcome *o)
{
    for (size_t i = 0; i < o->nafter; i++)
        if (o->after[i] != '\r' && o->after[i] != '\n')
            return false;
    return true;
}

/* ---- scenarios ----------------------------------------------------------------------------- */

static void test_enter(void)
{
    struct daemon d = { .act = ANSWER_INPUT };
    struct outcome o;
    /* Enter, then a line typed ahead for whatever reads the terminal next. */
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "\rnext\n", NULL };

    child_reads_leftover = true;
    run_tty(&s, &d, &o);
    child_reads_leftover = false;
    expect_restored(&o, "enter");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "enter: %d", o.rep.rc);
    CHECK(d.next_kind == TG_KIND_CANCEL || d.next_kind == 0, "enter: daemon saw %d",
          d.next_kind);
    CHECK(d.saw_close, "enter: no hang-up");
    CHECK(!o.rep.has_authtok, "enter: PAM_AUTHTOK set to '%s'", o.rep.authtok);
    CHECK(strstr(o.before, FAKE_TEXT_PROMPT) != NULL &&
              strstr(o.before, FAKE_TEXT_PROMPT) < strstr(o.before, TEXT_HINT_BIO),
          "enter: prompt then hint expected: %s", o.before);
    CHECK(printed_nothing(&o), "enter: printed '%s'", o.after);
    CHECK(strcmp(o.rep.leftover, "next\n") == 0, "enter: typed-ahead line lost: '%s'",
          o.rep.leftover);
    CHECK(frame_int_is(&d.request, TG_TAG_FLAGS, 0, false), "enter: FLAGS sent with a terminal");
}

static void test_ctrl_c(void)
{
    struct daemon d = { .act = ANSWER_INPUT };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "\x03", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "ctrl-c");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "ctrl-c: %d", o.rep.rc);
    CHECK(d.next_kind == TG_KIND_CANCEL || d.next_kind == 0, "ctrl-c: daemon saw %d",
          d.next_kind);
    CHECK(printed_nothing(&o), "ctrl-c: printed '%s'", o.after);
}

static void test_ctrl_d_in_chinese(void)
{
    struct daemon d = { .act = ANSWER_INPUT };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO_ZH, "\x04", NULL };

    setenv("LANG", "zh_CN.UTF-8", 1);
    run_tty(&s, &d, &o);
    setenv("LANG", "en_US.UTF-8", 1);
    expect_restored(&o, "ctrl-d");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "ctrl-d: %d", o.rep.rc);
    CHECK(d.next_kind == TG_KIND_CANCEL || d.next_kind == 0, "ctrl-d: daemon saw %d",
          d.next_kind);
}

static void test_password_checked_by_daemon(void)
{
    struct daemon d = { .act = ANSWER_INPUT, .answer = TG_OK, .answer_reason = "password",
                        .answer_message = "Password accepted" };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "pw\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "password");
    CHECK(o.rep.rc == PAM_SUCCESS, "password: %d", o.rep.rc);
    CHECK(d.next_kind == TG_KIND_PASSWORD && strcmp(d.password, "pw") == 0,
          "password: daemon saw kind %d password '%s'", d.next_kind, d.password);
    CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "pw") == 0,
          "password: PAM_AUTHTOK '%s'", o.rep.authtok);
    CHECK(strstr(o.after, TEXT_TYPING) != NULL, "password: no typing note: '%s'", o.after);
    CHECK(strstr(o.after, "pw") == NULL, "password: echoed: '%s'", o.after);
}

static void test_password_edited(void)
{
    struct daemon d = { .act = ANSWER_INPUT, .answer = TG_OK, .answer_reason = "password" };
    struct outcome o;
    /* Ctrl-U clears "junk"; two DELs take "xw" back off "pxw". */
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "junk\x15pxw\x7f\x7fw\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "edited");
    CHECK(o.rep.rc == PAM_SUCCESS, "edited: %d", o.rep.rc);
    CHECK(strcmp(d.password, "pw") == 0, "edited: daemon saw '%s'", d.password);
}

/* Waiting behind another prompt is no reason to wait for the password: it can be typed now. */
static void test_password_while_queued(void)
{
    struct daemon d = { .act = ANSWER_INPUT, .queued = true, .answer = TG_OK,
                        .answer_reason = "password" };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "pw\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "queued");
    CHECK(strstr(o.before, TEXT_QUEUED) != NULL, "queued: message not shown: '%s'", o.before);
    CHECK(o.rep.rc == PAM_SUCCESS, "queued: %d", o.rep.rc);
    CHECK(d.next_kind == TG_KIND_PASSWORD && strcmp(d.password, "pw") == 0,
          "queued: daemon saw kind %d password '%s'", d.next_kind, d.password);
}

static void test_wrong_password(void)
{
    struct daemon d = { .act = ANSWER_INPUT, .answer = TG_ERR_AUTHENTICATION_FAILED,
                        .answer_reason = "wrongPassword", .answer_message = TEXT_WRONG };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "bad\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "wrong password");
    CHECK(o.rep.rc == PAM_AUTH_ERR, "wrong password: %d", o.rep.rc);
    CHECK(!o.rep.has_authtok, "wrong password: PAM_AUTHTOK set");
    CHECK(strstr(o.after, TEXT_WRONG) != NULL, "wrong password: not said: '%s'", o.after);
}

static void test_overlong_password(void)
{
    struct daemon d = { .act = ANSWER_INPUT, .answer = TG_OK, .answer_reason = "password" };
    struct outcome o;
    char keys[TG_LINE_MAX + 64];
    memset(keys, 'a', TG_LINE_MAX + 10);
    strcpy(keys + TG_LINE_MAX + 10, "\r");
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, keys, NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "overlong");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "overlong: %d", o.rep.rc);
    CHECK(d.next_kind != TG_KIND_PASSWORD, "overlong: a cut-down password was sent");
    CHECK(!o.rep.has_authtok, "overlong: PAM_AUTHTOK set");
}

static void test_password_for_the_password_module(void)
{
    struct daemon d = { .act = ANSWER_INPUT };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "secret\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "biometrics password");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "biometrics password: %d", o.rep.rc);
    CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "secret") == 0,
          "biometrics password: PAM_AUTHTOK '%s'", o.rep.authtok);
    CHECK(d.next_kind == TG_KIND_CANCEL, "biometrics password: daemon saw %d, not CANCEL",
          d.next_kind);
    CHECK(strstr(o.after, "secret") == NULL, "biometrics password: echoed: '%s'", o.after);
}

static void test_match_while_idle(void)
{
    struct daemon d = { .act = MATCH_ON_GO };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "", "" };

    run_tty(&s, &d, &o);
    expect_restored(&o, "match");
    CHECK(o.rep.rc == PAM_SUCCESS, "match: %d", o.rep.rc);
    CHECK(!o.rep.has_authtok, "match: PAM_AUTHTOK set");
    CHECK(printed_nothing(&o), "match: printed '%s'", o.after);
}

static void test_match_while_typing(void)
{
    struct daemon d = { .act = MATCH_ON_GO };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "abc", TEXT_TYPING };

    run_tty(&s, &d, &o);
    expect_restored(&o, "match while typing");
    CHECK(o.rep.rc == PAM_SUCCESS, "match while typing: %d", o.rep.rc);
    CHECK(!o.rep.has_authtok, "match while typing: the half-typed line was kept");
    /* The note's line is ended, so the terminal's next prompt starts on a fresh line. */
    const char *note = strstr(o.after, TEXT_TYPING);
    CHECK(note != NULL && strncmp(note + strlen(TEXT_TYPING), "\r\n", 2) == 0,
          "match while typing: note line not ended: '%s'", o.after);
}

static void test_daemon_gone(void)
{
    struct daemon d = { .act = HANG_UP_ON_GO };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "", "" };

    run_tty(&s, &d, &o);
    expect_restored(&o, "daemon gone");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "daemon gone: %d", o.rep.rc);
    CHECK(strstr(o.after, TEXT_NOT_RESPONDING) != NULL, "daemon gone: not said: '%s'", o.after);
}

static void test_daemon_silent(void)
{
    struct daemon d = { .act = GO_SILENT };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "silent");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "silent: %d", o.rep.rc);
    CHECK(o.ms_after_keys < 2000, "silent: given up after %llu ms, not within 2 s",
          (unsigned long long)o.ms_after_keys);
    CHECK(d.saw_close, "silent: no hang-up");
}

/* noinput on a terminal: the terminal is left alone, keys stay the client's. */
static void test_noinput_on_terminal(void)
{
    struct daemon d = { .act = MATCH_ON_GO };
    struct outcome o;
    struct script s = { "tg-tty-noinput", FAKE_TEXT_PROMPT, "\r", "" };

    run_tty(&s, &d, &o);
    CHECK(o.rep.rc == PAM_SUCCESS, "noinput: %d (Enter was taken)", o.rep.rc);
    CHECK((o.mid.c_lflag & (ICANON | ECHO)) == (ICANON | ECHO), "noinput: terminal changed");
    CHECK(strstr(o.before, TEXT_HINT_BIO) == NULL && strstr(o.after, TEXT_HINT_BIO) == NULL,
          "noinput: key hint shown");
    CHECK(frame_int_is(&d.request, TG_TAG_FLAGS, TG_FLAG_NO_INPUT, true),
          "noinput: FLAGS NO_INPUT not sent");
    CHECK(o.reported && termios_same(&o.rep.before, &o.rep.after), "noinput: termios changed");
}

/* ---- the password step at the terminal ---------------------------------------------------- */

/* The refusal's line, then the module's own "Password: " with the terminal raw (echo and signal
 * keys off); the keys typed there decide. */
static void run_password_step(const char *keys, const char *prompt, struct daemon *d, struct outcome *o,
                              const char *name)
{
    struct script s = { "tg-tty-bop", prompt, keys, NULL };
    run_tty(&s, d, o);
    expect_restored(o, name);
    CHECK(strstr(o->before, TEXT_LOCKED) != NULL && strstr(o->before, TEXT_LOCKED) < strstr(o->before, prompt),
          "%s: the refusal did not come before the prompt: '%s'", name, o->before);
    CHECK(strstr(o->before, TEXT_HINT_BOP) == NULL, "%s: a fingerprint hint was shown", name);
}

static void test_password_step_correct(void)
{
    struct daemon d = { .act = ASK_PASSWORD, .answer = TG_OK, .answer_reason = "password",
                        .answer_message = "Password accepted" };
    struct outcome o;

    run_password_step("pw\r", TEXT_PASSWORD, &d, &o, "step correct");
    CHECK(o.rep.rc == PAM_SUCCESS, "step correct: %d", o.rep.rc);
    CHECK(d.verify_came && strcmp(d.password, "pw") == 0, "step correct: daemon saw '%s'", d.password);
    CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "pw") == 0, "step correct: PAM_AUTHTOK '%s'", o.rep.authtok);
    CHECK(strstr(o.after, "pw") == NULL, "step correct: echoed: '%s'", o.after);
    CHECK(strstr(o.after, "Password accepted") == NULL, "step correct: success was chattered: '%s'", o.after);
}

static void test_password_step_wrong(void)
{
    struct daemon d = { .act = ASK_PASSWORD, .answer = TG_ERR_AUTHENTICATION_FAILED,
                        .answer_reason = "wrongPassword", .answer_message = TEXT_WRONG };
    struct outcome o;

    run_password_step("nope\r", TEXT_PASSWORD, &d, &o, "step wrong");
    CHECK(o.rep.rc == PAM_AUTH_ERR, "step wrong: %d", o.rep.rc);
    CHECK(strstr(o.after, TEXT_WRONG) != NULL, "step wrong: not said: '%s'", o.after);
    CHECK(!o.rep.has_authtok, "step wrong: PAM_AUTHTOK set");
}

/* Ctrl-C, Ctrl-D, or Enter on nothing: userCancel, nothing sent, the terminal exactly restored. */
static void test_password_step_cancelled(void)
{
    static const struct { const char *keys; const char *name; } ways[] = {
        { "\x03", "step ctrl-c" }, { "\x04", "step ctrl-d" }, { "\r", "step empty" },
        { "ab\x03", "step ctrl-c after typing" },
    };
    for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
        struct daemon d = { .act = ASK_PASSWORD, .answer = TG_OK, .answer_reason = "password" };
        struct outcome o;
        run_password_step(ways[i].keys, TEXT_PASSWORD, &d, &o, ways[i].name);
        CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "%s: %d", ways[i].name, o.rep.rc);
        CHECK(!d.verify_came, "%s: a password was sent", ways[i].name);
        CHECK(!o.rep.has_authtok, "%s: PAM_AUTHTOK set", ways[i].name);
    }
}

static void test_password_step_in_chinese(void)
{
    struct daemon d = { .act = ASK_PASSWORD, .answer = TG_OK, .answer_reason = "password" };
    struct outcome o;

    setenv("LANG", "zh_CN.UTF-8", 1);
    run_password_step("pw\r", TEXT_PASSWORD_ZH, &d, &o, "step zh");
    setenv("LANG", "en_US.UTF-8", 1);
    CHECK(o.rep.rc == PAM_SUCCESS, "step zh: %d", o.rep.rc);
    CHECK(strstr(o.before, TEXT_PASSWORD) == NULL, "step zh: English prompt too: '%s'", o.before);
}

/* ---- the line editor alone ----------------------------------------------------------------- */

static enum tg_key_action type(struct tg_line *line, const char *keys)
{
    enum tg_key_action last = TG_KEY_NONE;
    for (const char *k = keys; *k != '\0'; k++)
        last = tg_line_key(line, (uint8_t)*k);
    return last;
}

static void test_line_editor(void)
{
    struct tg_line line = { 0 };

    CHECK(tg_line_key(&line, '\n') == TG_KEY_FALLBACK, "Enter on empty line");
    CHECK(tg_line_key(&line, '\r') == TG_KEY_FALLBACK, "CR on empty line");
    CHECK(tg_line_key(&line, 0x04) == TG_KEY_FALLBACK, "Ctrl-D on empty line");
    CHECK(tg_line_key(&line, 0x03) == TG_KEY_CANCEL, "Ctrl-C");
    CHECK(tg_line_key(&line, 'a') == TG_KEY_TYPED && line.len == 1, "a typed");
    CHECK(tg_line_key(&line, 0x04) == TG_KEY_NONE, "Ctrl-D on a non-empty line");
    CHECK(tg_line_key(&line, 0x1b) == TG_KEY_NONE && line.len == 1, "Esc ignored");
    CHECK(tg_line_key(&line, 0x08) == TG_KEY_NONE && line.len == 0, "Backspace");
    CHECK(tg_line_key(&line, 0x7f) == TG_KEY_NONE && line.len == 0, "DEL on empty line");
    /* A UTF-8 character goes with one DEL. */
    type(&line, "x\xc3\xa9");
    CHECK(tg_line_key(&line, 0x7f) == TG_KEY_NONE && strcmp(line.buf, "x") == 0,
          "DEL of a UTF-8 character left '%s'", line.buf);
    CHECK(type(&line, "\x15") == TG_KEY_NONE && line.len == 0, "Ctrl-U");
    CHECK(type(&line, "p w\t\n") == TG_KEY_SUBMIT && strcmp(line.buf, "p w\t") == 0,
          "submit '%s'", line.buf);
    tg_line_wipe(&line);
    CHECK(line.len == 0 && line.buf[0] == '\0', "wipe");

    /* Exactly TG_LINE_MAX is kept; one more is refused on Enter, never cut down. */
    for (int i = 0; i < TG_LINE_MAX; i++)
        tg_line_key(&line, 'a');
    CHECK(!line.overflow && line.len == TG_LINE_MAX, "full line");
    CHECK(tg_line_key(&line, '\n') == TG_KEY_SUBMIT, "full line submits");
    tg_line_key(&line, 'b');
    CHECK(line.overflow && line.len == TG_LINE_MAX, "overflow");
    tg_line_key(&line, 0x7f);
    CHECK(tg_line_key(&line, '\n') == TG_KEY_FALLBACK && line.len == 0 && !line.overflow,
          "overlong line not refused and wiped");
}

static void write_stack(const char *name, const char *options)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (f == NULL)
        return;
    fprintf(f, "auth required %s socket=%s %s\nauth optional %s\n", module, daemon_sock, options,
            probe);
    fclose(f);
}

int main(int argc, char **argv)
{
    const char *so = argc > 2 ? argv[2] : "./pam_touchgate.so";
    char probe_path[PATH_MAX + 32];
    snprintf(dir, sizeof(dir), "/tmp/tg-tty-XXXXXX");
    const char *why = fake_setup(so, module, dir, daemon_sock, sizeof(daemon_sock));
    if (why != NULL) {
        CHECK(false, "%s (%s)", why, so);
        return check_summary("test_tty");
    }
    snprintf(probe_path, sizeof(probe_path), "%.*s/tests/pam_probe.so",
             (int)(strrchr(module, '/') - module), module);
    if (realpath(probe_path, probe) == NULL) {
        CHECK(false, "no probe module at %s", probe_path);
        return check_summary("test_tty");
    }
    write_stack("tg-tty-bio", "");
    write_stack("tg-tty-bop", "policy=biometrics-or-password");
    write_stack("tg-tty-noinput", "noinput");

    test_line_editor();
    test_enter();
    test_ctrl_c();
    test_ctrl_d_in_chinese();
    test_password_checked_by_daemon();
    test_password_edited();
    test_password_while_queued();
    test_wrong_password();
    test_overlong_password();
    test_password_for_the_password_module();
    test_match_while_idle();
    test_match_while_typing();
    test_daemon_gone();
    test_daemon_silent();
    test_noinput_on_terminal();
    test_password_step_correct();
    test_password_step_wrong();
    test_password_step_cancelled();
    test_password_step_in_chinese();

    static const char *const files[] = { "tg-tty-bio", "tg-tty-bop", "tg-tty-noinput" };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return check_summary("test_tty");
}
