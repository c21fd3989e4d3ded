/* PAM run tests: real libpam (pam_start_confdir) loads the built module and talks to a fake daemon. */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_appl.h>

#include "check.h"
#include "tg_client.h"
#include "tg_codec.h"

#define MAX_SHOWN 16
#define TEXT_RETRY "Swipe was too short, try again"
#define TEXT_LOCKED "Fingerprint locked after 5 failed attempts: enter your password"
#define TEXT_NO_MATCH "Fingerprint not recognised"
#define TEXT_MAX_TRIES "Fingerprint not recognised after 2 tries"
#define TEXT_NOT_RESPONDING "Fingerprint service not responding: use your password"
#define TEXT_SERVICE_ERROR "Fingerprint service error: use your password"

/* What the conversation was shown, in order. */
struct shown {
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
};

struct server {
    int listen_fd;
    enum behaviour behaviour;
    pthread_t thread;
    bool got_request;
    bool saw_close;  /* the module hung up after it returned */
    uint8_t req[TG_FRAME_BUFFER];
    struct tg_frame request;
};

static void send_frame(int fd, struct tg_writer *w)
{
    size_t len = 0;
    if (tg_writer_finish(w, &len) == TG_CODEC_OK)
        tg_send_all(fd, w->buf, len, tg_deadline_after(2000));
}

static void send_result(int fd, uint32_t id, int32_t code, const char *message)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_writer w;
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, id);
    tg_put_int(&w, TG_TAG_CODE, code);
    if (message != NULL)
        tg_put_string(&w, TG_TAG_MESSAGE, message);
    send_frame(fd, &w);
}

static void send_progress(int fd, uint32_t id, int32_t progress, int32_t style, const char *message)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_writer w;
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_PROGRESS, id);
    tg_put_int(&w, TG_TAG_PROGRESS, progress);
    if (message != NULL) {
        tg_put_int(&w, TG_TAG_STYLE, style);
        tg_put_string(&w, TG_TAG_MESSAGE, message);
    }
    send_frame(fd, &w);
}

static void *serve(void *arg)
{
    struct server *sv = arg;
    struct pollfd pfd = { .fd = sv->listen_fd, .events = POLLIN };
    if (poll(&pfd, 1, 10000) != 1)
        return NULL;
    int fd = accept4(sv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t len = 0;
    sv->got_request =
        tg_read_frame(fd, sv->req, sizeof(sv->req), &len, tg_deadline_after(5000)) == TG_IO_OK &&
        tg_frame_decode(sv->req, len, &sv->request) == TG_CODEC_OK;
    uint32_t id = sv->request.request_id;
    if (!sv->got_request)
        goto done;

    switch (sv->behaviour) {
    case SILENT:
        break;
    case WRONG_ID:
        send_result(fd, id == 1 ? 3 : (id ^ 1), TG_OK, NULL);
        break;
    case RETRY_THEN_OK:
        send_progress(fd, id, TG_PROGRESS_RETRY, TG_STYLE_INFO, TEXT_RETRY);
        send_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
        send_result(fd, id, TG_OK, "Fingerprint recognised");
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
        close(fd);
        return NULL;
    case REFUSE_LOCKOUT:
        send_result(fd, id, TG_ERR_BIOMETRY_LOCKOUT, TEXT_LOCKED);
        break;
    case NO_MATCH_TWICE:
        send_progress(fd, id, TG_PROGRESS_NO_MATCH, TG_STYLE_ERROR, TEXT_NO_MATCH);
        send_result(fd, id, TG_ERR_AUTHENTICATION_FAILED, TEXT_MAX_TRIES);
        break;
    case KEEPALIVES_THEN_OK:
        /* The fake daemon's own pace: one keepalive per TG_KEEPALIVE_MS, past the silence deadline. */
        for (int i = 0; i * TG_KEEPALIVE_MS <= TG_SILENCE_DEADLINE_MS; i++) {
            struct timespec ts = { .tv_sec = TG_KEEPALIVE_MS / 1000,
                                   .tv_nsec = (TG_KEEPALIVE_MS % 1000) * 1000000L };
            nanosleep(&ts, NULL);
            send_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
        }
        send_result(fd, id, TG_OK, NULL);
        break;
    case EVENT_FRAME: {
        uint8_t buf[TG_FRAME_BUFFER];
        struct tg_writer w;
        tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVENT, id);
        tg_put_string(&w, TG_TAG_JSON, "{}");
        send_frame(fd, &w);
        break;
    }
    }
done:;
    /* The module must hang up once it has returned, whatever ended the exchange. */
    uint8_t scratch[TG_FRAME_BUFFER];
    sv->saw_close = tg_read_frame(fd, scratch, sizeof(scratch), &len,
                                  tg_deadline_after(10000)) == TG_IO_EOF;
    close(fd);
    return NULL;
}

static char dir[PATH_MAX];
static char module[PATH_MAX];
static char daemon_sock[PATH_MAX + 16];

static bool listen_at(const char *path, int *fd, bool do_listen)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    unlink(path);
    *fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    return *fd >= 0 && bind(*fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
           (!do_listen || listen(*fd, 4) == 0);
}

static void write_service(const char *name, const char *options)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (f == NULL)
        return;
    fprintf(f, "auth required %s %s\n", module, options);
    fclose(f);
}

struct run {
    int rc;
    uint64_t ms;
    struct shown shown;
};

static void run_pam(const char *service, const char *user, const char *tty, const char *rhost,
                    struct run *out)
{
    pam_handle_t *pamh = NULL;
    memset(out, 0, sizeof(*out));
    struct pam_conv conv = { record_conv, &out->shown };
    out->rc = pam_start_confdir(service, user, &conv, dir, &pamh);
    if (out->rc != PAM_SUCCESS)
        return;
    if (tty != NULL)
        pam_set_item(pamh, PAM_TTY, tty);
    if (rhost != NULL)
        pam_set_item(pamh, PAM_RHOST, rhost);
    uint64_t start = tg_now_ms();
    out->rc = pam_authenticate(pamh, 0);
    out->ms = tg_now_ms() - start;
    pam_end(pamh, out->rc);
}

/* Runs one PAM authentication against a fake daemon behaving as told. */
static void run_against(struct server *sv, enum behaviour b, const char *service, const char *tty,
                        const char *rhost, struct run *out)
{
    memset(sv, 0, sizeof(*sv));
    sv->behaviour = b;
    bool up = listen_at(daemon_sock, &sv->listen_fd, true) &&
              pthread_create(&sv->thread, NULL, serve, sv) == 0;
    CHECK(up, "fake daemon did not start");
    if (!up) {
        memset(out, 0, sizeof(*out));
        out->rc = -1;
        return;
    }
    run_pam(service, "root", tty, rhost, out);
    pthread_join(sv->thread, NULL);
    close(sv->listen_fd);
    unlink(daemon_sock);
}

static bool shown_once(const struct run *r, int style, const char *text)
{
    int hits = 0;
    for (int i = 0; i < r->shown.n; i++)
        hits += r->shown.style[i] == style && strcmp(r->shown.text[i], text) == 0;
    return hits == 1;
}

static bool req_string(const struct server *sv, uint16_t tag, const char *want)
{
    char got[TG_MAX_STRING + 1];
    bool present = tg_frame_string(&sv->request, tag, got, sizeof(got));
    return want == NULL ? !present && tg_frame_find(&sv->request, tag) == NULL
                        : present && strcmp(got, want) == 0;
}

static bool req_int(const struct server *sv, uint16_t tag, int32_t want, bool present)
{
    int32_t got = 0;
    return tg_frame_int(&sv->request, tag, &got) == present && (!present || got == want);
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
    CHECK(listen_at(path, &fd, false), "cannot bind %s", path);
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
    CHECK(sv.got_request && sv.request.kind == TG_KIND_EVALUATE && sv.request.request_id != 0,
          "request was not an EVALUATE");
    CHECK(req_string(&sv, TG_TAG_USER, "root"), "USER");
    CHECK(req_int(&sv, TG_TAG_POLICY, TG_POLICY_BIOMETRICS, true), "POLICY default");
    CHECK(req_string(&sv, TG_TAG_SERVICE, "tg-server"), "SERVICE");
    CHECK(req_int(&sv, TG_TAG_MAX_TRIES, 2, true), "MAX_TRIES from option");
    CHECK(req_int(&sv, TG_TAG_TIMEOUT, 0, false), "TIMEOUT sent though not given");
    CHECK(req_string(&sv, TG_TAG_LOCALE, "en_US.UTF-8"), "LOCALE from LANG");
    CHECK(req_string(&sv, TG_TAG_TTY, "/dev/pts/9"), "TTY");
    CHECK(req_string(&sv, TG_TAG_RHOST, NULL), "RHOST sent though not set");
    CHECK(sv.saw_close, "module did not hang up");

    /* (a) a daemon that never answers: AUTHINFO_UNAVAIL after the silence deadline, with a word. */
    run_against(&sv, SILENT, "tg-server", NULL, NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "silent daemon: %d", r.rc);
    CHECK(r.ms >= TG_SILENCE_DEADLINE_MS - 50 && r.ms < TG_SILENCE_DEADLINE_MS + 1500,
          "silent daemon: gave up after %llu ms", (unsigned long long)r.ms);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_NOT_RESPONDING) && r.shown.n == 1,
          "silent daemon: 'not responding' not shown once");
    CHECK(sv.saw_close, "module did not hang up on a silent daemon");

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
    CHECK(req_string(&sv, TG_TAG_LOCALE, "zh_CN.UTF-8"), "LOCALE from LC_ALL");
    CHECK(shown_once(&r, PAM_ERROR_MSG, "指纹服务无响应：请使用密码"),
          "daemon hung up: Chinese 'not responding' not shown");

    /* A refusal is relayed as an error line and lets the password module run; RHOST is sent;
     * invalid options kept their defaults. */
    run_against(&sv, REFUSE_LOCKOUT, "tg-options", NULL, "192.0.2.7", &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "lockout: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_LOCKED) && r.shown.n == 1, "lockout message");
    CHECK(req_string(&sv, TG_TAG_RHOST, "192.0.2.7"), "RHOST not sent");
    CHECK(req_int(&sv, TG_TAG_POLICY, TG_POLICY_BIOMETRICS, true), "invalid policy= changed POLICY");
    CHECK(req_int(&sv, TG_TAG_MAX_TRIES, 0, false), "invalid max_tries= sent MAX_TRIES");
    CHECK(req_int(&sv, TG_TAG_TIMEOUT, 0, false), "invalid timeout= sent TIMEOUT");

    /* Error-style progress and used-up tries: both lines shown as errors, PAM_MAXTRIES. */
    run_against(&sv, NO_MATCH_TWICE, "tg-policy", NULL, NULL, &r);
    CHECK(r.rc == PAM_MAXTRIES, "no match: %d", r.rc);
    CHECK(r.shown.n == 2 && r.shown.style[0] == PAM_ERROR_MSG &&
              strcmp(r.shown.text[0], TEXT_NO_MATCH) == 0 && r.shown.style[1] == PAM_ERROR_MSG &&
              strcmp(r.shown.text[1], TEXT_MAX_TRIES) == 0, "no match: messages");
    CHECK(req_int(&sv, TG_TAG_POLICY, TG_POLICY_BIOMETRICS_OR_PASSWORD, true), "policy= option");
    CHECK(req_int(&sv, TG_TAG_TIMEOUT, 15, true), "timeout= option");

    /* Keepalives restart the silence deadline: a prompt may last longer than it. */
    run_against(&sv, KEEPALIVES_THEN_OK, "tg-server", NULL, NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "keepalives then ok: %d", r.rc);
    CHECK(r.ms > TG_SILENCE_DEADLINE_MS, "keepalives then ok: only %llu ms",
          (unsigned long long)r.ms);
    CHECK(r.shown.n == 0, "keepalives showed %d messages", r.shown.n);
}

int main(int argc, char **argv)
{
    const char *so = argc > 2 ? argv[2] : "./pam_touchgate.so";
    if (realpath(so, module) == NULL) {
        CHECK(false, "no module at %s", so);
        return check_summary("test_pam");
    }
    snprintf(dir, sizeof(dir), "/tmp/tg-pam-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        CHECK(false, "mkdtemp");
        return check_summary("test_pam");
    }
    snprintf(daemon_sock, sizeof(daemon_sock), "%s/touchgated.sock", dir);
    unsetenv("LC_ALL");
    unsetenv("LC_MESSAGES");
    setenv("LANG", "en_US.UTF-8", 1);

    test_unreachable();
    test_fake_daemon();

    static const char *const files[] = { "tg-absent", "tg-refused", "tg-server", "tg-options",
                                         "tg-policy" };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return check_summary("test_pam");
}
