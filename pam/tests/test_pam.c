/* PAM run tests: real libpam (pam_start_confdir) loads the built module and talks to a fake daemon. */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_appl.h>

#include "check.h"
#include "fake.h"
#include "tg_client.h"
#include "tg_codec.h"

#define MAX_SHOWN 16
#define TEXT_RETRY "Swipe was too short, try again"
#define TEXT_LOCKED "Fingerprint locked after 5 failed attempts: enter your password"
#define TEXT_NO_MATCH "Fingerprint not recognised"
#define TEXT_MAX_TRIES "Fingerprint not recognised after 2 tries"
#define TEXT_NOT_RESPONDING "Fingerprint service not responding: use your password"
#define TEXT_SERVICE_ERROR "Fingerprint service error: use your password"
#define TEXT_NOT_ENROLLED "No fingerprints enrolled"
#define TEXT_HINT "(or press Enter to use your password)"

/* What the conversation was shown, in order. */
struct shown {
    bool fail;    /* the conversation fails every call, as a client that went away */
    int n;
    int prompts;  /* messages that asked for input: the module must never ask */
    int style[MAX_SHOWN];
    char text[MAX_SHOWN][TG_MAX_STRING + 1];
};

static int record_conv(int num, const struct pam_message **msg, struct pam_response **resp,
                       void *appdata)
{
    struct shown *s = appdata;
    struct pam_response *r = calloc((size_t)num, sizeof(*r));
    if (r == NULL)
        return PAM_BUF_ERR;
    if (s->fail) {
        s->n++;
        free(r);
        return PAM_CONV_ERR;
    }
    for (int i = 0; i < num; i++) {
        if (msg[i]->msg_style == PAM_PROMPT_ECHO_OFF || msg[i]->msg_style == PAM_PROMPT_ECHO_ON)
            s->prompts++;
        if (s->n < MAX_SHOWN) {
            s->style[s->n] = msg[i]->msg_style;
            snprintf(s->text[s->n], sizeof(s->text[0]), "%s", msg[i]->msg);
            s->n++;
        }
    }
    *resp = r;
    return PAM_SUCCESS;
}

enum behaviour {
    SILENT,             /* reads the request, never answers */
    WRONG_ID,           /* RESULT TG_OK for another request id */
    RETRY_THEN_OK,      /* PROGRESS retry, keepalive, RESULT TG_OK */
    MALFORMED,          /* a frame with version 2 */
    HUGE_LENGTH,        /* a length prefix of 2^32-1, then nothing */
    CLOSE_AT_ONCE,      /* hangs up after the request */
    REFUSE_LOCKOUT,     /* RESULT biometryLockout with a MESSAGE */
    NO_MATCH_TWICE,     /* PROGRESS no-match (error style), RESULT authenticationFailed */
    KEEPALIVES_THEN_OK, /* keepalives for longer than the silence deadline, then TG_OK */
    EVENT_FRAME,        /* a well-formed EVENT frame, which cannot answer EVALUATE */
    NOT_ENROLLED,       /* RESULT biometryNotEnrolled "noPrints" with a MESSAGE */
    MATCH,              /* RESULT TG_OK at once */
    PROMPT_THEN_MATCH,  /* PROGRESS prompt with its message, RESULT TG_OK */
    PROMPT_THEN_WAIT,   /* PROGRESS prompt with its message, then only listens */
    REPORT_OK,          /* RESULT TG_OK (an answer to PASSWORD_SUCCESS) */
    REPORT_REFUSED,     /* RESULT notPermitted with a MESSAGE */
};

#define MAX_CONNS 3

/* One connection the fake daemon serves. */
struct conn {
    enum behaviour behaviour;
    bool got_request;
    bool saw_close;  /* the module hung up after it returned */
    uint64_t close_ms;  /* when, after the request arrived */
    uint8_t req[TG_FRAME_BUFFER];
    struct tg_frame request;
};

struct server {
    int listen_fd;
    int nconn;       /* connections to accept, one after the other */
    pthread_t thread;
    struct conn conn[MAX_CONNS];
};

static void serve_one(int fd, struct conn *c)
{
    c->got_request = fake_read(fd, c->req, &c->request, 5000);
    uint32_t id = c->request.request_id;
    uint64_t start = tg_now_ms();
    if (!c->got_request)
        goto done;

    switch (c->behaviour) {
    case SILENT:
        break;
    case WRONG_ID:
        fake_result(fd, id == 1 ? 3 : (id ^ 1), TG_OK, NULL, NULL);
        break;
    case RETRY_THEN_OK:
        fake_progress(fd, id, TG_PROGRESS_RETRY, TG_STYLE_INFO, TEXT_RETRY);
        fake_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
        fake_result(fd, id, TG_OK, NULL, "Fingerprint recognised");
        break;
    case MALFORMED: {
        uint8_t buf[TG_FRAME_BUFFER];
        struct tg_writer w;
        size_t n = 0;
        tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, id);
        tg_put_int(&w, TG_TAG_CODE, TG_OK);
        tg_writer_finish(&w, &n);
        buf[4] = TG_PROTOCOL_VERSION + 1;
        tg_send_all(fd, buf, n, tg_deadline_after(2000));
        break;
    }
    case HUGE_LENGTH:
        tg_send_all(fd, (const uint8_t *)"\xff\xff\xff\xff", 4, tg_deadline_after(2000));
        break;
    case CLOSE_AT_ONCE:
        return;
    case REFUSE_LOCKOUT:
        fake_result(fd, id, TG_ERR_BIOMETRY_LOCKOUT, "lockout", TEXT_LOCKED);
        break;
    case NO_MATCH_TWICE:
        fake_progress(fd, id, TG_PROGRESS_NO_MATCH, TG_STYLE_ERROR, TEXT_NO_MATCH);
        fake_result(fd, id, TG_ERR_AUTHENTICATION_FAILED, "maxTries", TEXT_MAX_TRIES);
        break;
    case KEEPALIVES_THEN_OK:
        /* The fake daemon's own pace: one keepalive per TG_KEEPALIVE_MS, past the silence deadline. */
        for (int i = 0; i * TG_KEEPALIVE_MS <= TG_SILENCE_DEADLINE_MS; i++) {
            struct timespec ts = { .tv_sec = TG_KEEPALIVE_MS / 1000,
                                   .tv_nsec = (TG_KEEPALIVE_MS % 1000) * 1000000L };
            nanosleep(&ts, NULL);
            fake_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
        }
        fake_result(fd, id, TG_OK, NULL, NULL);
        break;
    case EVENT_FRAME: {
        uint8_t buf[TG_FRAME_BUFFER];
        struct tg_writer w;
        tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVENT, id);
        tg_put_string(&w, TG_TAG_JSON, "{}");
        fake_send(fd, &w);
        break;
    }
    case NOT_ENROLLED:
        fake_result(fd, id, TG_ERR_BIOMETRY_NOT_ENROLLED, "noPrints", TEXT_NOT_ENROLLED);
        break;
    case MATCH:
        fake_result(fd, id, TG_OK, NULL, "Fingerprint recognised");
        break;
    case PROMPT_THEN_MATCH:
        fake_progress(fd, id, TG_PROGRESS_PROMPT, TG_STYLE_INFO, FAKE_TEXT_PROMPT);
        fake_result(fd, id, TG_OK, NULL, "Fingerprint recognised");
        break;
    case PROMPT_THEN_WAIT:
        fake_progress(fd, id, TG_PROGRESS_PROMPT, TG_STYLE_INFO, FAKE_TEXT_PROMPT);
        break;
    case REPORT_OK:
        fake_result(fd, id, TG_OK, NULL, NULL);
        break;
    case REPORT_REFUSED:
        fake_result(fd, id, TG_ERR_NOT_PERMITTED, NULL, "Not permitted");
        break;
    }
done:
    /* The module must hang up once it has returned, whatever ended the exchange. */
    c->saw_close = fake_await_close(fd, 10000);
    c->close_ms = tg_now_ms() - start;
}

static void *serve(void *arg)
{
    struct server *sv = arg;
    for (int i = 0; i < sv->nconn; i++) {
        int fd = fake_accept(sv->listen_fd, 10000);
        if (fd < 0)
            break;
        serve_one(fd, &sv->conn[i]);
        close(fd);
    }
    return NULL;
}

static char dir[PATH_MAX];
static char module[PATH_MAX];
static char daemon_sock[PATH_MAX + 16];

/* Writes a service file; every "MODULE" in lines is replaced by the module's path. */
static void write_stack(const char *name, const char *lines)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (f == NULL)
        return;
    for (const char *p = lines; *p != '\0'; p++) {
        if (strncmp(p, "MODULE", 6) == 0) {
            fputs(module, f);
            p += 5;
        } else {
            fputc(*p, f);
        }
    }
    fclose(f);
}

static void write_service(const char *name, const char *options)
{
    char lines[PATH_MAX + 256];
    snprintf(lines, sizeof(lines), "auth required MODULE %s\n", options);
    write_stack(name, lines);
}

struct run {
    int rc;
    uint64_t ms;
    struct shown shown;
};

/* Set before a run: fail_conv makes the conversation fail, pam_env_entry is put in the PAM env. */
static bool fail_conv;
static const char *pam_env_entry;

static void run_pam(const char *service, const char *user, const char *tty, const char *rhost,
                    struct run *out)
{
    pam_handle_t *pamh = NULL;
    memset(out, 0, sizeof(*out));
    out->shown.fail = fail_conv;
    struct pam_conv conv = { record_conv, &out->shown };
    out->rc = pam_start_confdir(service, user, &conv, dir, &pamh);
    if (out->rc != PAM_SUCCESS)
        return;
    if (tty != NULL)
        pam_set_item(pamh, PAM_TTY, tty);
    if (rhost != NULL)
        pam_set_item(pamh, PAM_RHOST, rhost);
    if (pam_env_entry != NULL)
        pam_putenv(pamh, pam_env_entry);
    uint64_t start = tg_now_ms();
    out->rc = pam_authenticate(pamh, 0);
    out->ms = tg_now_ms() - start;
    pam_end(pamh, out->rc);
}

static bool start_server(struct server *sv, int nconn, const enum behaviour *b)
{
    memset(sv, 0, sizeof(*sv));
    sv->nconn = nconn;
    for (int i = 0; i < nconn; i++)
        sv->conn[i].behaviour = b[i];
    bool up = fake_listen(daemon_sock, &sv->listen_fd, true) &&
              pthread_create(&sv->thread, NULL, serve, sv) == 0;
    CHECK(up, "fake daemon did not start");
    return up;
}

/* Joins the server; true if a connection is left that nobody served (someone connected anyway). */
static bool stop_server(struct server *sv)
{
    pthread_join(sv->thread, NULL);
    bool pending = fake_pending(sv->listen_fd);
    close(sv->listen_fd);
    unlink(daemon_sock);
    return pending;
}

/* Runs one PAM authentication against a fake daemon serving connections as told. */
static bool run_against_many(struct server *sv, int nconn, const enum behaviour *b,
                             const char *service, const char *tty, const char *rhost,
                             struct run *out)
{
    if (!start_server(sv, nconn, b)) {
        memset(out, 0, sizeof(*out));
        out->rc = -1;
        return false;
    }
    run_pam(service, "root", tty, rhost, out);
    return stop_server(sv);
}

static void run_against(struct server *sv, enum behaviour b, const char *service, const char *tty,
                        const char *rhost, struct run *out)
{
    bool pending = run_against_many(sv, 1, &b, service, tty, rhost, out);
    CHECK(!pending, "the module opened a connection nobody expected");
}

static bool shown_once(const struct run *r, int style, const char *text)
{
    int hits = 0;
    for (int i = 0; i < r->shown.n; i++)
        hits += r->shown.style[i] == style && strcmp(r->shown.text[i], text) == 0;
    return hits == 1;
}

static void test_unreachable(void)
{
    struct run r;
    int fd = -1;
    char path[PATH_MAX + 32];

    /* No socket file at all. */
    write_service("tg-absent", "socket=/nonexistent/touchgate/touchgated.sock");
    run_pam("tg-absent", "root", NULL, NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "absent socket: %d", r.rc);
    CHECK(r.ms < 2000, "absent socket took %llu ms", (unsigned long long)r.ms);
    CHECK(r.shown.n == 0 && r.shown.prompts == 0, "absent socket showed %d messages", r.shown.n);

    /* A socket file nobody listens on: connection refused. */
    snprintf(path, sizeof(path), "%s/refused.sock", dir);
    CHECK(fake_listen(path, &fd, false), "cannot bind %s", path);
    char opts[PATH_MAX + 64];
    snprintf(opts, sizeof(opts), "socket=%s", path);
    write_service("tg-refused", opts);
    run_pam("tg-refused", "root", NULL, NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "refused socket: %d", r.rc);
    CHECK(r.ms < 2000, "refused socket took %llu ms", (unsigned long long)r.ms);
    CHECK(r.shown.n == 0 && r.shown.prompts == 0, "refused socket showed %d messages", r.shown.n);
    if (fd >= 0)
        close(fd);
    unlink(path);

    /* An account that does not exist is refused before any connection. */
    run_pam("tg-absent", "tg-no-such-user-4711", NULL, NULL, &r);
    CHECK(r.rc == PAM_USER_UNKNOWN, "unknown user: %d", r.rc);
    CHECK(r.shown.n == 0, "unknown user showed %d messages", r.shown.n);
}

static void test_fake_daemon(void)
{
    static struct server sv;
    struct run r;
    char opts[PATH_MAX + 256];

    snprintf(opts, sizeof(opts), "socket=%s max_tries=2 debug", daemon_sock);
    write_service("tg-server", opts);
    /* Invalid options are ignored and keep the values before them. */
    snprintf(opts, sizeof(opts),
             "socket=%s bogus max_tries=abc max_tries=101 timeout=0 policy=nope socket=rel.sock",
             daemon_sock);
    write_service("tg-options", opts);
    snprintf(opts, sizeof(opts), "socket=%s policy=biometrics-or-password timeout=15", daemon_sock);
    write_service("tg-policy", opts);

    /* (c) retry hint relayed as TEXT_INFO, keepalive shows nothing, TG_OK -> PAM_SUCCESS. */
    run_against(&sv, RETRY_THEN_OK, "tg-server", "/dev/pts/9", NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "retry then ok: %d", r.rc);
    CHECK(shown_once(&r, PAM_TEXT_INFO, TEXT_RETRY), "retry hint not relayed as TEXT_INFO");
    CHECK(r.shown.n == 1 && r.shown.prompts == 0, "retry then ok showed %d messages", r.shown.n);
    CHECK(sv.conn[0].got_request && sv.conn[0].request.kind == TG_KIND_EVALUATE && sv.conn[0].request.request_id != 0,
          "request was not an EVALUATE");
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_USER, "root"), "USER");
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_POLICY, TG_POLICY_BIOMETRICS, true), "POLICY default");
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_SERVICE, "tg-server"), "SERVICE");
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_MAX_TRIES, 2, true), "MAX_TRIES from option");
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_TIMEOUT, 0, false), "TIMEOUT sent though not given");
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_LOCALE, "en_US.UTF-8"), "LOCALE from LANG");
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_TTY, "/dev/pts/9"), "TTY");
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, NULL), "RHOST sent though not set");
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_FLAGS, TG_FLAG_NO_INPUT, true),
          "FLAGS NO_INPUT not sent without a terminal");
    CHECK(sv.conn[0].saw_close, "module did not hang up");

    /* (a) a daemon that never answers: AUTHINFO_UNAVAIL after the silence deadline, with a word. */
    run_against(&sv, SILENT, "tg-server", NULL, NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "silent daemon: %d", r.rc);
    CHECK(r.ms >= TG_SILENCE_DEADLINE_MS - 50 && r.ms < TG_SILENCE_DEADLINE_MS + 1500,
          "silent daemon: gave up after %llu ms", (unsigned long long)r.ms);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_NOT_RESPONDING) && r.shown.n == 1,
          "silent daemon: 'not responding' not shown once");
    CHECK(sv.conn[0].saw_close, "module did not hang up on a silent daemon");

    /* (b) a TG_OK for another request id is never taken as our result. */
    run_against(&sv, WRONG_ID, "tg-server", NULL, NULL, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "wrong request id: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_SERVICE_ERROR), "wrong request id: no error shown");

    /* (d) a malformed frame. */
    run_against(&sv, MALFORMED, "tg-server", NULL, NULL, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "malformed frame: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_SERVICE_ERROR), "malformed frame: no error shown");

    /* A length prefix beyond TG_MAX_FRAME is an error at once, not a wait for 4 GiB. */
    run_against(&sv, HUGE_LENGTH, "tg-server", NULL, NULL, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "huge length: %d", r.rc);
    CHECK(r.ms < 1000, "huge length took %llu ms", (unsigned long long)r.ms);

    /* A well-formed frame of a kind that cannot answer EVALUATE. */
    run_against(&sv, EVENT_FRAME, "tg-server", NULL, NULL, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "event frame: %d", r.rc);

    /* Hang-up after the request: fall back at once, in the client's language (LC_ALL wins). */
    setenv("LC_ALL", "zh_CN.UTF-8", 1);
    run_against(&sv, CLOSE_AT_ONCE, "tg-server", NULL, NULL, &r);
    unsetenv("LC_ALL");
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "daemon hung up: %d", r.rc);
    CHECK(r.ms < 1000, "daemon hung up: took %llu ms", (unsigned long long)r.ms);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_LOCALE, "zh_CN.UTF-8"), "LOCALE from LC_ALL");
    CHECK(shown_once(&r, PAM_ERROR_MSG, "指纹服务无响应：请使用密码"),
          "daemon hung up: Chinese 'not responding' not shown");

    /* A refusal is relayed as an error line and lets the password module run; RHOST is sent;
     * invalid options kept their defaults. */
    run_against(&sv, REFUSE_LOCKOUT, "tg-options", NULL, "192.0.2.7", &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "lockout: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_LOCKED) && r.shown.n == 1, "lockout message");
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, "192.0.2.7"), "RHOST not sent");
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_POLICY, TG_POLICY_BIOMETRICS, true), "invalid policy= changed POLICY");
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_MAX_TRIES, 0, false), "invalid max_tries= sent MAX_TRIES");
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_TIMEOUT, 0, false), "invalid timeout= sent TIMEOUT");

    /* Error-style progress and used-up tries: both lines shown as errors, PAM_MAXTRIES. */
    run_against(&sv, NO_MATCH_TWICE, "tg-policy", NULL, NULL, &r);
    CHECK(r.rc == PAM_MAXTRIES, "no match: %d", r.rc);
    CHECK(r.shown.n == 2 && r.shown.style[0] == PAM_ERROR_MSG &&
              strcmp(r.shown.text[0], TEXT_NO_MATCH) == 0 && r.shown.style[1] == PAM_ERROR_MSG &&
              strcmp(r.shown.text[1], TEXT_MAX_TRIES) == 0, "no match: messages");
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_POLICY, TG_POLICY_BIOMETRICS_OR_PASSWORD, true), "policy= option");
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_TIMEOUT, 15, true), "timeout= option");

    /* Keepalives restart the silence deadline: a prompt may last longer than it. */
    run_against(&sv, KEEPALIVES_THEN_OK, "tg-server", NULL, NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "keepalives then ok: %d", r.rc);
    CHECK(r.ms > TG_SILENCE_DEADLINE_MS, "keepalives then ok: only %llu ms",
          (unsigned long long)r.ms);
    CHECK(r.shown.n == 0, "keepalives showed %d messages", r.shown.n);
}

/* Refusals say why, except "no fingerprints": that is noise for people who never set them up. */
static void test_quiet_when_not_enrolled(void)
{
    static struct server sv;
    struct run r;

    run_against(&sv, NOT_ENROLLED, "tg-server", NULL, NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "not enrolled: %d", r.rc);
    CHECK(r.shown.n == 0, "not enrolled: %d messages shown, first '%s'", r.shown.n,
          r.shown.text[0]);
    CHECK(sv.conn[0].saw_close, "not enrolled: module did not hang up");
}

/* No terminal (this test runs without one) or the noinput option: only messages, FLAGS NO_INPUT. */
static void test_noinput(void)
{
    static struct server sv;
    struct run r;
    char opts[PATH_MAX + 64];

    snprintf(opts, sizeof(opts), "socket=%s noinput", daemon_sock);
    write_service("tg-noinput", opts);

    /* Messages are relayed, no hint about keys is offered, the match ends it. */
    run_against(&sv, PROMPT_THEN_MATCH, "tg-noinput", NULL, NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "noinput match: %d", r.rc);
    CHECK(shown_once(&r, PAM_TEXT_INFO, FAKE_TEXT_PROMPT) && r.shown.n == 1,
          "noinput match: %d messages shown", r.shown.n);
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_FLAGS, TG_FLAG_NO_INPUT, true),
          "noinput: FLAGS NO_INPUT not sent");

    /* The client went away: its conversation fails on the prompt message. The module stops at
     * once and hangs up, rather than waiting out the scan. */
    fail_conv = true;
    run_against(&sv, PROMPT_THEN_WAIT, "tg-noinput", NULL, NULL, &r);
    fail_conv = false;
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "conversation error: %d", r.rc);
    CHECK(r.ms < 1000, "conversation error: returned after %llu ms", (unsigned long long)r.ms);
    CHECK(r.shown.n == 1, "conversation error: %d conversation calls", r.shown.n);
    CHECK(sv.conn[0].saw_close && sv.conn[0].close_ms < 1000,
          "conversation error: the daemon saw no hang-up (after %llu ms)",
          (unsigned long long)sv.conn[0].close_ms);

    /* Without a terminal there is no need for the option. */
    run_against(&sv, PROMPT_THEN_MATCH, "tg-server", NULL, NULL, &r);
    CHECK(r.rc == PAM_SUCCESS && r.shown.n == 1, "no terminal: %d, %d messages", r.rc,
          r.shown.n);
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_FLAGS, TG_FLAG_NO_INPUT, true),
          "no terminal: FLAGS NO_INPUT not sent");
}

/* sudo or su inside an SSH session leave PAM_RHOST unset: the daemon must still see a remote. */
static void test_ssh_session(void)
{
    static struct server sv;
    struct run r;

    setenv("SSH_CONNECTION", "192.0.2.1 50000 192.0.2.2 22", 1);
    run_against(&sv, MATCH, "tg-server", NULL, NULL, &r);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, "ssh"),
          "SSH_CONNECTION: RHOST not \"ssh\"");
    /* PAM_RHOST, when set, is the better answer. */
    run_against(&sv, MATCH, "tg-server", NULL, "192.0.2.9", &r);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, "192.0.2.9"),
          "PAM_RHOST not preferred over SSH_CONNECTION");
    unsetenv("SSH_CONNECTION");

    setenv("SSH_CLIENT", "192.0.2.1 50000 22", 1);
    run_against(&sv, MATCH, "tg-server", NULL, NULL, &r);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, "ssh"), "SSH_CLIENT: RHOST not \"ssh\"");
    unsetenv("SSH_CLIENT");

    /* From the PAM environment (pam_env, or the application) too. */
    pam_env_entry = "SSH_CONNECTION=192.0.2.1 50000 192.0.2.2 22";
    run_against(&sv, MATCH, "tg-server", NULL, NULL, &r);
    pam_env_entry = NULL;
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, "ssh"),
          "PAM env SSH_CONNECTION: RHOST not \"ssh\"");

    run_against(&sv, MATCH, "tg-server", NULL, NULL, &r);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, NULL), "RHOST without any SSH sign");
}

/* report: PASSWORD_SUCCESS after the password module, never a factor (always PAM_IGNORE).
 * The stacks turn IGNORE into PAM_SUCCESS and anything else into a failure:
 *   [ignore=ignore default=1] report  ->  sufficient pam_permit | required pam_deny */
static void test_report(void)
{
    static struct server sv;
    struct run r;
    char lines[2 * PATH_MAX + 512];
    static const enum behaviour match[] = { MATCH };
    static const enum behaviour refuse_then_report[] = { NOT_ENROLLED, REPORT_OK };
    static const enum behaviour match_refuse_report[] = { MATCH, NOT_ENROLLED, REPORT_OK };

    snprintf(lines, sizeof(lines),
             "auth [ignore=ignore default=1] MODULE report socket=%s debug\n"
             "auth sufficient pam_permit.so\n"
             "auth required pam_deny.so\n", daemon_sock);
    write_stack("tg-report", lines);
    write_stack("tg-report-absent",
                "auth [ignore=ignore default=1] MODULE report socket=/nonexistent/tg.sock\n"
                "auth sufficient pam_permit.so\n"
                "auth required pam_deny.so\n");
    snprintf(lines, sizeof(lines),
             "auth [success=ok default=ignore] MODULE socket=%s\n"
             "auth [ignore=ignore default=1] MODULE report socket=%s\n"
             "auth sufficient pam_permit.so\n"
             "auth required pam_deny.so\n", daemon_sock, daemon_sock);
    write_stack("tg-match-report", lines);

    /* The frame: PASSWORD_SUCCESS with USER and SERVICE only. */
    run_against(&sv, REPORT_OK, "tg-report", NULL, NULL, &r);
    const struct tg_frame *f = &sv.conn[0].request;
    CHECK(r.rc == PAM_SUCCESS, "report: stack %d, so the module did not return PAM_IGNORE", r.rc);
    CHECK(sv.conn[0].got_request && f->kind == TG_KIND_PASSWORD_SUCCESS,
          "report: no PASSWORD_SUCCESS (kind %#x)", f->kind);
    CHECK(frame_string_is(f, TG_TAG_USER, "root") && frame_string_is(f, TG_TAG_SERVICE, "tg-report"),
          "report: USER/SERVICE");
    CHECK(f->nfields == 2, "report: %zu fields", f->nfields);
    CHECK(r.shown.n == 0, "report: %d messages shown", r.shown.n);
    CHECK(sv.conn[0].saw_close, "report: module did not hang up");

    /* The daemon's refusal (not root, say) changes nothing and shows nothing. */
    run_against(&sv, REPORT_REFUSED, "tg-report", NULL, NULL, &r);
    CHECK(r.rc == PAM_SUCCESS && r.shown.n == 0, "report refused: stack %d, %d messages", r.rc,
          r.shown.n);

    /* A daemon that answers nothing: PAM_IGNORE after the reply deadline, not later. */
    run_against(&sv, SILENT, "tg-report", NULL, NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "report, silent daemon: stack %d", r.rc);
    CHECK(r.ms >= TG_REPLY_DEADLINE_MS - 50 && r.ms < TG_REPLY_DEADLINE_MS + 1000,
          "report, silent daemon: %llu ms", (unsigned long long)r.ms);

    /* No daemon at all. */
    run_pam("tg-report-absent", "root", NULL, NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "report, daemon down: stack %d", r.rc);
    CHECK(r.ms < 1000, "report, daemon down: %llu ms", (unsigned long long)r.ms);

    /* After a fingerprint match in the same transaction there is nothing to report. */
    bool pending = run_against_many(&sv, 1, match, "tg-match-report", NULL, NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "match then report: %d", r.rc);
    CHECK(!pending, "match then report: a report was sent after a fingerprint match");

    /* Without a match it is sent. */
    pending = run_against_many(&sv, 2, refuse_then_report, "tg-match-report", NULL, NULL, &r);
    CHECK(r.rc == PAM_SUCCESS && !pending, "refusal then report: %d", r.rc);
    CHECK(sv.conn[1].got_request && sv.conn[1].request.kind == TG_KIND_PASSWORD_SUCCESS,
          "refusal then report: no PASSWORD_SUCCESS");

    /* One handle, two pam_authenticate calls: the first call's match does not silence the second. */
    if (!start_server(&sv, 3, match_refuse_report))
        return;
    pam_handle_t *pamh = NULL;
    struct shown shown = { 0 };
    struct pam_conv conv = { record_conv, &shown };
    int rc1 = -1, rc2 = -1;
    if (pam_start_confdir("tg-match-report", "root", &conv, dir, &pamh) == PAM_SUCCESS) {
        rc1 = pam_authenticate(pamh, 0);
        rc2 = pam_authenticate(pamh, 0);
        pam_end(pamh, rc2);
    }
    pending = stop_server(&sv);
    CHECK(rc1 == PAM_SUCCESS && rc2 == PAM_SUCCESS && !pending, "same handle: %d %d", rc1, rc2);
    CHECK(sv.conn[0].request.kind == TG_KIND_EVALUATE && sv.conn[1].request.kind == TG_KIND_EVALUATE,
          "same handle: two EVALUATEs expected");
    CHECK(sv.conn[2].got_request && sv.conn[2].request.kind == TG_KIND_PASSWORD_SUCCESS,
          "same handle: the second call's report was not sent");
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
    while (waitpid(pid, &status, 0) < 0)
        ;
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

int main(int argc, char **argv)
{
    const char *so = argc > 2 ? argv[2] : "./pam_touchgate.so";
    detach_from_terminal();
    snprintf(dir, sizeof(dir), "/tmp/tg-pam-XXXXXX");
    const char *why = fake_setup(so, module, dir, daemon_sock, sizeof(daemon_sock));
    if (why != NULL) {
        CHECK(false, "%s (%s)", why, so);
        return check_summary("test_pam");
    }

    test_unreachable();
    test_fake_daemon();
    test_quiet_when_not_enrolled();
    test_noinput();
    test_ssh_session();
    test_report();

    static const char *const files[] = { "tg-absent", "tg-refused", "tg-server", "tg-options",
                                         "tg-policy", "tg-noinput", "tg-report",
                                         "tg-report-absent", "tg-match-report" };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return check_summary("test_pam");
}
