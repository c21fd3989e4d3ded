/* PAM entry points of pam_touchgate: parse options, ask touchgated to EVALUATE, relay, map the outcome. */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "tg_client.h"
#include "tg_codec.h"
#include "tg_outcome.h"

/* PAM_EXTERN is plain extern on Linux; the .so is built with -fvisibility=hidden. */
#define TG_PAM_EXPORT __attribute__((visibility("default")))

#define DEFAULT_SOCKET      "/run/touchgate/touchgated.sock"
#define DEFAULT_MAX_TRIES   3
#define DEFAULT_TIMEOUT_S   30
#define OVERALL_SLACK_MS    120000  /* queueing, password typing and messages beyond the tries */

/* Parsed afresh on every call and kept on the stack: nothing leaks between PAM handles. */
struct options {
    const char *socket;  /* points into argv, which outlives the call */
    int policy;
    int max_tries;       /* 0 = not given: the daemon's value applies */
    int timeout_s;       /* 0 = not given */
    bool debug;
};

#define DEBUG(opt, pamh, ...) \
    do { if ((opt)->debug) pam_syslog((pamh), LOG_DEBUG, __VA_ARGS__); } while (0)

/* Returns the value of "name=value", or NULL if arg is another option. */
static const char *option_value(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return (strncmp(arg, name, n) == 0 && arg[n] == '=') ? arg + n + 1 : NULL;
}

/* Range-checked strtol: false (and *out untouched) unless the whole string is a number in range. */
static bool parse_int(const char *s, long lo, long hi, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

static void parse_options(pam_handle_t *pamh, int argc, const char **argv, struct options *opt)
{
    *opt = (struct options){ .socket = DEFAULT_SOCKET, .policy = TG_POLICY_BIOMETRICS };
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *v;
        bool ok = true;
        if (strcmp(arg, "debug") == 0) {
            opt->debug = true;
        } else if ((v = option_value(arg, "socket")) != NULL) {
            ok = v[0] == '/' && strlen(v) < sizeof(((struct sockaddr_un *)0)->sun_path);
            if (ok)
                opt->socket = v;
        } else if ((v = option_value(arg, "policy")) != NULL) {
            if (strcmp(v, "biometrics") == 0)
                opt->policy = TG_POLICY_BIOMETRICS;
            else if (strcmp(v, "biometrics-or-password") == 0)
                opt->policy = TG_POLICY_BIOMETRICS_OR_PASSWORD;
            else
                ok = false;
        } else if ((v = option_value(arg, "max_tries")) != NULL) {
            ok = parse_int(v, 1, TG_MAX_TRIES_LIMIT, &opt->max_tries);
        } else if ((v = option_value(arg, "timeout")) != NULL) {
            ok = parse_int(v, 1, TG_TIMEOUT_LIMIT, &opt->timeout_s);
        } else {
            pam_syslog(pamh, LOG_ERR, "unknown option ignored: %s", arg);
            continue;
        }
        if (!ok)
            pam_syslog(pamh, LOG_ERR, "invalid option value ignored, default kept: %s", arg);
    }
}

/* LC_ALL, LC_MESSAGES, LANG in POSIX precedence; the PAM environment wins over the process's. */
static const char *client_locale(pam_handle_t *pamh)
{
    static const char *const names[] = { "LC_ALL", "LC_MESSAGES", "LANG" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = pam_getenv(pamh, names[i]);
        if (v == NULL || v[0] == '\0')
            v = getenv(names[i]);
        if (v != NULL && v[0] != '\0')
            return v;
    }
    return NULL;
}

/* The module's own words; everything else a person reads comes from the daemon, localized. */
static const char *text_not_responding(const char *locale)
{
    return (locale != NULL && strncmp(locale, "zh", 2) == 0)
               ? "指纹服务无响应：请使用密码"
               : "Fingerprint service not responding: use your password";
}

static const char *text_service_error(const char *locale)
{
    return (locale != NULL && strncmp(locale, "zh", 2) == 0)
               ? "指纹服务出错：请使用密码"
               : "Fingerprint service error: use your password";
}

/* Shows one line through the application's conversation. "%s": daemon text is never a format. */
static void say(pam_handle_t *pamh, const struct options *opt, int style, const char *text)
{
    int rc = pam_prompt(pamh, style, NULL, "%s", text);
    if (rc != PAM_SUCCESS)
        DEBUG(opt, pamh, "conversation refused a message: %s", pam_strerror(pamh, rc));
}

/* A correlation id, not a secret (the connection is ours alone): if the kernel's pool is not
 * ready yet (early boot), a clock-based id is good enough and never blocks a login. */
static uint32_t new_request_id(void)
{
    uint32_t id = 0;
    if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        id = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec ^ ((uint32_t)getpid() << 12);
    }
    return id != 0 ? id : 1;
}

/* PAM_SUCCESS if the account exists, PAM_USER_UNKNOWN if it does not. */
static int lookup_user(const char *user)
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
            rc = PAM_AUTHINFO_UNAVAIL;  /* NSS failing: we cannot tell, so let the password module decide */
        goto done;
    }
done:
    free(buf);
    return rc;
}

static const char *pam_string_item(pam_handle_t *pamh, int item)
{
    const void *v = NULL;
    if (pam_get_item(pamh, item, &v) != PAM_SUCCESS || v == NULL || ((const char *)v)[0] == '\0')
        return NULL;
    return v;
}

/* Reads frames until the RESULT of our request; relays PROGRESS messages on the way. */
static int await_result(pam_handle_t *pamh, const struct options *opt, int fd, uint32_t id,
                        const char *locale)
{
    uint8_t buf[TG_FRAME_BUFFER];
    char text[TG_MAX_STRING + 1];
    char reason[TG_MAX_STRING + 1];
    struct tg_frame frame;
    enum tg_failure failure;
    const char *what;
    /* Overall cap: every try may use its whole timeout, plus slack, so a daemon that sends
     * keepalives forever is still cut off. Without the options the SPEC defaults are assumed. */
    uint64_t cap_ms = (uint64_t)(opt->max_tries ? opt->max_tries : DEFAULT_MAX_TRIES) *
                          (uint64_t)(opt->timeout_s ? opt->timeout_s : DEFAULT_TIMEOUT_S) * 1000u +
                      OVERALL_SLACK_MS;
    uint64_t cap = tg_deadline_after(cap_ms);

    for (;;) {
        uint64_t silence = tg_deadline_after(TG_SILENCE_DEADLINE_MS);
        size_t len = 0;
        enum tg_io_status io = tg_read_frame(fd, buf, sizeof(buf), &len,
                                             silence < cap ? silence : cap);
        if (io == TG_IO_MALFORMED) {
            failure = TG_FAIL_MALFORMED_REPLY;
            what = tg_io_strerror(io);
            goto protocol_error;
        }
        if (io != TG_IO_OK) {
            pam_syslog(pamh, LOG_WARNING, "touchgated not responding (%s): falling back",
                       tg_io_strerror(io));
            say(pamh, opt, PAM_ERROR_MSG, text_not_responding(locale));
            return tg_failure_to_pam(io == TG_IO_TIMEOUT ? TG_FAIL_TIMEOUT : TG_FAIL_DISCONNECTED);
        }
        enum tg_codec_status cs = tg_frame_decode(buf, len, &frame);
        if (cs != TG_CODEC_OK) {
            failure = TG_FAIL_MALFORMED_REPLY;
            what = tg_codec_strerror(cs);
            goto protocol_error;
        }
        if (frame.request_id != id) {
            failure = TG_FAIL_WRONG_REQUEST_ID;
            what = "reply for another request";
            goto protocol_error;
        }
        if (frame.kind == TG_KIND_PROGRESS) {
            int32_t style = TG_STYLE_INFO;
            tg_frame_int(&frame, TG_TAG_STYLE, &style);
            if (tg_frame_string(&frame, TG_TAG_MESSAGE, text, sizeof(text))) {
                DEBUG(opt, pamh, "progress message relayed (style %d)", (int)style);
                say(pamh, opt, style == TG_STYLE_ERROR ? PAM_ERROR_MSG : PAM_TEXT_INFO, text);
            }
            continue;  /* a keepalive only restarts the silence deadline */
        }
        if (frame.kind != TG_KIND_RESULT) {
            failure = TG_FAIL_UNEXPECTED_REPLY;
            what = "unexpected frame kind";
            goto protocol_error;
        }
        int32_t code;
        if (!tg_frame_int(&frame, TG_TAG_CODE, &code)) {
            failure = TG_FAIL_MALFORMED_REPLY;
            what = "result without CODE";
            goto protocol_error;
        }
        /* The daemon sends a MESSAGE only when a person should read it: relay every refusal. */
        if (code != TG_OK && tg_frame_string(&frame, TG_TAG_MESSAGE, text, sizeof(text)))
            say(pamh, opt, PAM_ERROR_MSG, text);
        bool has_reason = tg_frame_string(&frame, TG_TAG_REASON, reason, sizeof(reason));
        int rc = tg_outcome_to_pam(code, has_reason ? reason : NULL);
        DEBUG(opt, pamh, "result code %d reason %s -> %s", (int)code,
              has_reason ? reason : "-", pam_strerror(pamh, rc));
        return rc;
    }

protocol_error:
    pam_syslog(pamh, LOG_ERR, "bad reply from touchgated: %s", what);
    say(pamh, opt, PAM_ERROR_MSG, text_service_error(locale));
    return tg_failure_to_pam(failure);
}

TG_PAM_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    struct options opt;
    uint8_t req[TG_FRAME_BUFFER];
    struct tg_writer w;
    const char *user = NULL;
    size_t req_len = 0;
    int fd = -1;
    int rc;

    /* PAM_SILENT is not honoured for the prompt: it is the interaction itself, not chatter. */
    (void)flags;
    parse_options(pamh, argc, argv, &opt);
    DEBUG(&opt, pamh, "options: socket=%s policy=%d max_tries=%d timeout=%d", opt.socket,
          opt.policy, opt.max_tries, opt.timeout_s);

    rc = pam_get_user(pamh, &user, NULL);
    if (rc != PAM_SUCCESS) {
        DEBUG(&opt, pamh, "pam_get_user: %s", pam_strerror(pamh, rc));
        rc = rc == PAM_CONV_AGAIN ? PAM_INCOMPLETE : rc;
        goto done;
    }
    if (user == NULL || user[0] == '\0') {
        rc = PAM_USER_UNKNOWN;
        goto done;
    }
    if ((rc = lookup_user(user)) != PAM_SUCCESS) {
        DEBUG(&opt, pamh, "user lookup: %s", pam_strerror(pamh, rc));
        goto done;
    }

    const char *service = pam_string_item(pamh, PAM_SERVICE);
    const char *tty = pam_string_item(pamh, PAM_TTY);
    const char *rhost = pam_string_item(pamh, PAM_RHOST);
    const char *locale = client_locale(pamh);
    /* A locale we cannot send only costs the language: drop it rather than fail. */
    if (locale != NULL && tg_string_check((const uint8_t *)locale, strlen(locale)) != TG_CODEC_OK)
        locale = NULL;
    uint32_t id = new_request_id();

    tg_writer_init(&w, req, sizeof(req), TG_KIND_EVALUATE, id);
    tg_put_string(&w, TG_TAG_USER, user);
    tg_put_int(&w, TG_TAG_POLICY, opt.policy);
    tg_put_string(&w, TG_TAG_SERVICE, service != NULL ? service : "");
    if (opt.max_tries > 0)
        tg_put_int(&w, TG_TAG_MAX_TRIES, opt.max_tries);
    if (opt.timeout_s > 0)
        tg_put_int(&w, TG_TAG_TIMEOUT, opt.timeout_s);
    if (locale != NULL)
        tg_put_string(&w, TG_TAG_LOCALE, locale);
    if (tty != NULL)
        tg_put_string(&w, TG_TAG_TTY, tty);
    /* RHOST is always sent when set (the daemon applies allow_remote); one we cannot encode
     * fails the request below rather than being dropped, which would make a remote session
     * look local. */
    if (rhost != NULL)
        tg_put_string(&w, TG_TAG_RHOST, rhost);
    enum tg_codec_status cs = tg_writer_finish(&w, &req_len);
    if (cs != TG_CODEC_OK) {
        pam_syslog(pamh, LOG_ERR, "cannot encode request: %s", tg_codec_strerror(cs));
        rc = tg_failure_to_pam(TG_FAIL_BAD_REQUEST);
        goto done;
    }

    uint64_t deadline = tg_deadline_after(TG_CONNECT_DEADLINE_MS);
    enum tg_io_status io = tg_connect(opt.socket, deadline, &fd);
    if (io != TG_IO_OK) {
        /* No daemon, no prompt: fingerprint is simply not there, and the password follows. */
        DEBUG(&opt, pamh, "connect %s: %s", opt.socket, tg_io_strerror(io));
        rc = tg_failure_to_pam(io == TG_IO_TIMEOUT ? TG_FAIL_TIMEOUT : TG_FAIL_UNREACHABLE);
        goto done;
    }
    DEBUG(&opt, pamh, "connected to %s; evaluate user %s service %s policy %d request %08x",
          opt.socket, user, service != NULL ? service : "", opt.policy, (unsigned)id);
    if ((io = tg_send_all(fd, req, req_len, deadline)) != TG_IO_OK) {
        DEBUG(&opt, pamh, "send: %s", tg_io_strerror(io));
        rc = tg_failure_to_pam(io == TG_IO_TIMEOUT ? TG_FAIL_TIMEOUT : TG_FAIL_DISCONNECTED);
        goto done;
    }
    DEBUG(&opt, pamh, "request sent (%zu bytes); waiting for the daemon", req_len);
    rc = await_result(pamh, &opt, fd, id, locale);

done:
    if (fd >= 0)
        close(fd);  /* closing is the cancel: the daemon ends a prompt whose client went away */
    DEBUG(&opt, pamh, "authenticate -> %s", pam_strerror(pamh, rc));
    return rc;
}

TG_PAM_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_SUCCESS;  /* fingerprints establish no credentials */
}
