/* pam_touchgate entry points: options, the fingerprint prompt (conversation, terminal), reports.
 *
 * Options (parsed afresh on every call; an unknown option or a bad value is logged and ignored):
 *   socket=PATH       touchgated's socket (default /run/touchgate/touchgated.sock)
 *   policy=NAME       biometrics (default): fingerprint only; whatever ends the prompt without a
 *                     match lets the password module that follows run.
 *                     biometrics-or-password: the password may also be typed at the same prompt;
 *                     touchgated checks it itself, so its counters and back-off apply.
 *   max_tries=N       failed matches per prompt (1..100); only ever lowers the daemon's value
 *   timeout=SECONDS   time per try waiting for a finger (1..3600); only ever lowers the daemon's
 *   debug             log the exchange with pam_syslog at LOG_DEBUG (never a password)
 *   noinput           read no keys at all, only relay messages: for a graphical fingerprint stack
 *                     beside a password stack (GDM style). Automatic when there is no terminal.
 *   report            not a fingerprint line: placed after the password module, it tells
 *                     touchgated that this stack verified the password (clears lockout and
 *                     passwordRequired, as the passcode does on an Apple device). Root callers
 *                     only (the daemon checks SO_PEERCRED). Always PAM_IGNORE.
 *
 * At a terminal, once the reader listens (or the prompt waits in the queue) the module reads the
 * keys itself, without echo, and puts the terminal back exactly as it found it on every way out:
 *   finger on the reader            PAM_SUCCESS, no key needed
 *   Enter, or Ctrl-D, on empty line userFallback: CANCEL sent, PAM_AUTHINFO_UNAVAIL at once
 *   Ctrl-C                          userCancel: the same, and nothing printed
 *   characters, then Enter          the password: with biometrics-or-password touchgated checks
 *                                   it (PAM_SUCCESS / PAM_AUTH_ERR); with biometrics it becomes
 *                                   PAM_AUTHTOK for the password module (try_first_pass) and the
 *                                   prompt ends with PAM_AUTHINFO_UNAVAIL
 *   Backspace/DEL, Ctrl-U           edit the line (at most 512 bytes; longer is never sent)
 *
 * Stacks (Debian common-auth order; pam-auth-update computes the jumps):
 *   sudo, su, login:   auth [success=2 default=ignore] pam_touchgate.so
 *                      auth [success=1 default=ignore] pam_unix.so nullok try_first_pass
 *                      auth requisite  pam_deny.so
 *                      auth optional   pam_touchgate.so report
 *                      auth required   pam_permit.so
 *   console locker:    auth sufficient pam_touchgate.so policy=biometrics-or-password
 *                      auth required   pam_unix.so try_first_pass
 *   GDM fingerprint:   auth required   pam_touchgate.so noinput
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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
#include "tg_tty.h"

/* PAM_EXTERN is plain extern on Linux; the .so is built with -fvisibility=hidden. */
#define TG_PAM_EXPORT __attribute__((visibility("default")))

#define DEFAULT_SOCKET      "/run/touchgate/touchgated.sock"
#define DEFAULT_MAX_TRIES   3
#define DEFAULT_TIMEOUT_S   30
#define OVERALL_SLACK_MS    120000  /* queueing, password typing and messages beyond the tries */
#define CANCEL_DEADLINE_MS  200     /* a CANCEL is a courtesy: closing the socket cancels too */

/* pam_set_data key: this handle's fingerprint line matched, so report mode has nothing to say. */
#define MATCH_KEY "pam_touchgate_matched"

/* Returned by the prompt's steps while the prompt goes on; every PAM code is >= 0. */
#define KEEP_WAITING (-1)

/* Parsed afresh on every call and kept on the stack: nothing leaks between PAM handles. */
struct options {
    const char *socket;  /* points into argv, which outlives the call */
    int policy;
    int max_tries;       /* 0 = not given: the daemon's value applies */
    int timeout_s;       /* 0 = not given */
    bool debug;
    bool noinput;
    bool report;
};

/* One fingerprint prompt: what the module knows while it waits for the daemon and the keys. */
struct prompt {
    pam_handle_t *pamh;
    const struct options *opt;
    const char *locale;
    uint32_t id;
    int sock;
    struct tg_tty tty;       /* fd -1: no terminal to read (none, background, or noinput) */
    bool keys;               /* reading keys now: the terminal is in raw mode */
    bool keys_offered;       /* the terminal was offered once (the hint is shown once) */
    bool typing_noted;       /* the "typing password" note was shown (once) */
    bool line_open;          /* that note ended without a newline, which is still owed */
    bool password_sent;      /* a PASSWORD went out: the RESULT judges it */
    struct tg_line line;     /* the typed password, wiped on every way out */
};

#define DEBUG(opt, pamh, ...) \
    do { if ((opt)->debug) pam_syslog((pamh), LOG_DEBUG, __VA_ARGS__); } while (0)

/* ---- options ---------------------------------------------------------------------------- */

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
        } else if (strcmp(arg, "noinput") == 0) {
            opt->noinput = true;
        } else if (strcmp(arg, "report") == 0) {
            opt->report = true;
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

/* ---- the client's language and the module's own words ---------------------------------- */

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

static bool chinese(const char *locale)
{
    return locale != NULL && strncmp(locale, "zh", 2) == 0;
}

/* Everything else a person reads comes from the daemon, already localized. */
static const char *text_not_responding(const char *locale)
{
    return chinese(locale) ? "指纹服务无响应：请使用密码"
                           : "Fingerprint service not responding: use your password";
}

static const char *text_service_error(const char *locale)
{
    return chinese(locale) ? "指纹服务出错：请使用密码"
                           : "Fingerprint service error: use your password";
}

static const char *text_hint(const char *locale, int policy)
{
    if (policy == TG_POLICY_BIOMETRICS_OR_PASSWORD)
        return chinese(locale) ? "（或输入密码后按回车键）" : "(or type your password and press Enter)";
    return chinese(locale) ? "（或按回车键使用密码）" : "(or press Enter to use your password)";
}

static const char *text_typing(const char *locale)
{
    return chinese(locale) ? "（正在输入密码——按回车键）" : "(typing password — press Enter)";
}

/* Shows one line through the application's conversation. "%s": daemon text is never a format.
 * False when the conversation failed: the application cannot show the prompt any more. */
static bool say(pam_handle_t *pamh, const struct options *opt, int style, const char *text)
{
    int rc = pam_prompt(pamh, style, NULL, "%s", text);
    if (rc != PAM_SUCCESS)
        DEBUG(opt, pamh, "conversation refused a message: %s", pam_strerror(pamh, rc));
    return rc == PAM_SUCCESS;
}

/* ---- small helpers ----------------------------------------------------------------------- */

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

/* PAM_RHOST, else "ssh" inside an SSH session: sudo and su there leave PAM_RHOST unset, and
 * without it the daemon's allow_remote rule would take a remote person for a local one. */
/* Whether the environment the process was started with names `name` with a non-empty value.
 * sudo swaps environ for its env_reset copy before it authenticates, so getenv misses an SSH
 * session's variables there; /proc/self/environ still holds the exec-time block. Bounded read. */
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
                    entry[len++] = buf[i];  /* only the name and the first byte of the value matter */
                continue;
            }
            entry[len] = '\0';
            for (size_t k = 0; k < count && !found; k++) {
                size_t nl = strlen(names[k]);
                found = strncmp(entry, names[k], nl) == 0 && entry[nl] == '=' && entry[nl + 1] != '\0';
            }
            len = 0;
        }
    }
    close(fd);
    return found;
}

static const char *remote_host(pam_handle_t *pamh)
{
    static const char *const names[] = { "SSH_CONNECTION", "SSH_CLIENT" };
    const char *rhost = pam_string_item(pamh, PAM_RHOST);
    if (rhost != NULL)
        return rhost;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = pam_getenv(pamh, names[i]);
        if (v == NULL || v[0] == '\0')
            v = getenv(names[i]);
        if (v != NULL && v[0] != '\0')
            return "ssh";
    }
    /* Remote if the client was started from an SSH session, whatever it did to environ since. */
    if (initial_environment_has(names, sizeof(names) / sizeof(names[0])))
        return "ssh";
    return NULL;
}

/* The user to authenticate, looked up so that an unknown account is refused before any prompt. */
static int get_user(pam_handle_t *pamh, const struct options *opt, const char **user)
{
    int rc = pam_get_user(pamh, user, NULL);
    if (rc != PAM_SUCCESS) {
        DEBUG(opt, pamh, "pam_get_user: %s", pam_strerror(pamh, rc));
        return rc == PAM_CONV_AGAIN ? PAM_INCOMPLETE : rc;
    }
    if (*user == NULL || (*user)[0] == '\0')
        return PAM_USER_UNKNOWN;
    if ((rc = lookup_user(*user)) != PAM_SUCCESS)
        DEBUG(opt, pamh, "user lookup: %s", pam_strerror(pamh, rc));
    return rc;
}

/* Encodes a finished request into req; false (logged) if it cannot be encoded. */
static bool finish_request(pam_handle_t *pamh, struct tg_writer *w, size_t *len)
{
    enum tg_codec_status cs = tg_writer_finish(w, len);
    if (cs != TG_CODEC_OK)
        pam_syslog(pamh, LOG_ERR, "cannot encode request: %s", tg_codec_strerror(cs));
    return cs == TG_CODEC_OK;
}

/* ---- the prompt: the terminal ------------------------------------------------------------ */

/* Ends the terminal part: the owed newline, then the exact termios as found. Safe to repeat. */
static void finish_keys(struct prompt *p)
{
    if (p->line_open)
        tg_tty_write(&p->tty, "\n");  /* the terminal's next prompt starts on a fresh line */
    p->line_open = false;
    p->keys = false;
    tg_tty_restore(&p->tty);
}

/* A message while the prompt goes on; false when the conversation failed. */
static bool say_in_prompt(struct prompt *p, int style, const char *text)
{
    if (p->line_open) {
        tg_tty_write(&p->tty, "\n");
        p->line_open = false;
    }
    return say(p->pamh, p->opt, style, text);
}

/* The application's conversation failed: it went away or its prompt was closed (a graphical
 * fingerprint conversation that was cancelled). Stop at once; closing the socket (done: in
 * authenticate) makes the daemon cancel the scan. */
static int client_gone(struct prompt *p)
{
    DEBUG(p->opt, p->pamh, "conversation failed mid-prompt: prompt ended");
    finish_keys(p);
    return tg_outcome_to_pam(TG_ERR_APP_CANCEL, NULL);
}

/* Tells the daemon to stop the scan, without waiting for its answer. */
static void send_cancel(const struct prompt *p)
{
    uint8_t req[TG_HEADER_SIZE + 16];
    struct tg_writer w;
    size_t len = 0;
    tg_writer_init(&w, req, sizeof(req), TG_KIND_CANCEL, p->id);
    if (finish_request(p->pamh, &w, &len))
        tg_send_all(p->sock, req, len, tg_deadline_after(CANCEL_DEADLINE_MS));
}

/* The user ended the prompt (userFallback, userCancel) or left the terminal: no wait for the
 * daemon's answer, the password module runs at once. */
static int end_prompt(struct prompt *p, int32_t outcome, const char *why)
{
    finish_keys(p);
    tg_line_wipe(&p->line);
    send_cancel(p);
    DEBUG(p->opt, p->pamh, "prompt ended by the terminal: %s", why);
    return tg_outcome_to_pam(outcome, NULL);
}

/* The typed password as PAM_AUTHTOK: this is how it reaches pam_unix (try_first_pass or
 * use_first_pass) and later modules such as pam_gnome_keyring, so nobody types it twice. */
static void hand_over_password(struct prompt *p)
{
    int rc = pam_set_item(p->pamh, PAM_AUTHTOK, p->line.buf);
    DEBUG(p->opt, p->pamh, "typed password set as PAM_AUTHTOK: %s", pam_strerror(p->pamh, rc));
}

/* Sends the typed line as the PASSWORD of this request; the frame is wiped after use. */
static bool send_password(struct prompt *p)
{
    uint8_t req[TG_FRAME_BUFFER];
    struct tg_writer w;
    size_t len = 0;
    bool sent = false;

    tg_writer_init(&w, req, sizeof(req), TG_KIND_PASSWORD, p->id);
    tg_put_string(&w, TG_TAG_PASSWORD, p->line.buf);
    /* A line that is not UTF-8 cannot go over the wire; the password module can still judge it. */
    if (tg_writer_finish(&w, &len) == TG_CODEC_OK)
        sent = tg_send_all(p->sock, req, len, tg_deadline_after(TG_REPLY_DEADLINE_MS)) == TG_IO_OK;
    explicit_bzero(req, sizeof(req));
    return sent;
}

/* Enter ended a non-empty line. */
static int submit_password(struct prompt *p)
{
    finish_keys(p);  /* no more keys: the terminal is back to normal for the rest of the wait */
    if (p->opt->policy == TG_POLICY_BIOMETRICS_OR_PASSWORD) {
        if (send_password(p)) {
            p->password_sent = true;
            DEBUG(p->opt, p->pamh, "typed password sent to the daemon");
            return KEEP_WAITING;
        }
        DEBUG(p->opt, p->pamh, "typed password could not be sent: handed to the password module");
    }
    /* policy=biometrics: the daemon checks no password in this policy, so the password module
     * that follows checks it, and the prompt ends as on Enter. */
    hand_over_password(p);
    return end_prompt(p, TG_ERR_USER_FALLBACK, "password typed");
}

/* One key from the terminal. */
static int on_key(struct prompt *p)
{
    uint8_t key = 0;
    switch (tg_tty_read_key(&p->tty, &key)) {
    case TG_TTY_NONE:
        return KEEP_WAITING;
    case TG_TTY_GONE:
        return end_prompt(p, TG_ERR_APP_CANCEL, "terminal gone");
    case TG_TTY_KEY:
        break;
    }
    switch (tg_line_key(&p->line, key)) {
    case TG_KEY_NONE:
        return KEEP_WAITING;
    case TG_KEY_TYPED:
        /* Nothing is echoed; one note, once, says the keys are being taken as a password. */
        if (!p->typing_noted) {
            tg_tty_write(&p->tty, text_typing(p->locale));
            p->typing_noted = p->line_open = true;
        }
        return KEEP_WAITING;
    case TG_KEY_FALLBACK:
        return end_prompt(p, TG_ERR_USER_FALLBACK, "Enter");
    case TG_KEY_CANCEL:
        return end_prompt(p, TG_ERR_USER_CANCEL, "Ctrl-C");
    case TG_KEY_SUBMIT:
        return submit_password(p);
    }
    return KEEP_WAITING;
}

/* Once the reader listens (or the request waits in the queue), the terminal is read too, so the
 * password is always one Enter away and never behind a timeout. */
static int offer_keys(struct prompt *p)
{
    if (p->keys_offered || p->tty.fd < 0 || p->password_sent)
        return KEEP_WAITING;
    p->keys_offered = true;
    if (!tg_tty_raw(&p->tty)) {
        DEBUG(p->opt, p->pamh, "terminal cannot be set up: no keys read");
        return KEEP_WAITING;
    }
    p->keys = true;
    if (!say_in_prompt(p, PAM_TEXT_INFO, text_hint(p->locale, p->opt->policy)))
        return client_gone(p);
    return KEEP_WAITING;
}

/* ---- the prompt: the daemon -------------------------------------------------------------- */

static int protocol_error(struct prompt *p, enum tg_failure failure, const char *what)
{
    finish_keys(p);
    pam_syslog(p->pamh, LOG_ERR, "bad reply from touchgated: %s", what);
    say(p->pamh, p->opt, PAM_ERROR_MSG, text_service_error(p->locale));
    return tg_failure_to_pam(failure);
}

static int daemon_silent(struct prompt *p, enum tg_io_status io)
{
    if (io == TG_IO_MALFORMED)
        return protocol_error(p, TG_FAIL_MALFORMED_REPLY, tg_io_strerror(io));
    finish_keys(p);
    pam_syslog(p->pamh, LOG_WARNING, "touchgated not responding (%s): falling back",
               tg_io_strerror(io));
    say(p->pamh, p->opt, PAM_ERROR_MSG, text_not_responding(p->locale));
    return tg_failure_to_pam(io == TG_IO_TIMEOUT ? TG_FAIL_TIMEOUT : TG_FAIL_DISCONNECTED);
}

static int on_progress(struct prompt *p, const struct tg_frame *frame)
{
    char text[TG_MAX_STRING + 1];
    int32_t kind = 0;
    int32_t style = TG_STYLE_INFO;

    tg_frame_int(frame, TG_TAG_PROGRESS, &kind);
    tg_frame_int(frame, TG_TAG_STYLE, &style);
    if (tg_frame_string(frame, TG_TAG_MESSAGE, text, sizeof(text))) {
        DEBUG(p->opt, p->pamh, "progress %d message relayed (style %d)", (int)kind, (int)style);
        if (!say_in_prompt(p, style == TG_STYLE_ERROR ? PAM_ERROR_MSG : PAM_TEXT_INFO, text))
            return client_gone(p);
    }
    if (kind == TG_PROGRESS_PROMPT || kind == TG_PROGRESS_QUEUED)
        return offer_keys(p);
    return KEEP_WAITING;  /* a keepalive only restarts the silence deadline */
}

static int on_result(struct prompt *p, const struct tg_frame *frame)
{
    char text[TG_MAX_STRING + 1];
    char reason[TG_MAX_STRING + 1];
    int32_t code;

    if (!tg_frame_int(frame, TG_TAG_CODE, &code))
        return protocol_error(p, TG_FAIL_MALFORMED_REPLY, "result without CODE");
    finish_keys(p);  /* the daemon decided: the terminal is put back before anything is shown */
    bool has_reason = tg_frame_string(frame, TG_TAG_REASON, reason, sizeof(reason));
    bool by_password = has_reason && strcmp(reason, "password") == 0;
    if (code != TG_OK && tg_frame_string(frame, TG_TAG_MESSAGE, text, sizeof(text))) {
        /* "No fingerprints enrolled" is noise for people who never set up fingerprints. */
        if (code == TG_ERR_BIOMETRY_NOT_ENROLLED)
            DEBUG(p->opt, p->pamh, "not shown: %s", text);
        else
            say(p->pamh, p->opt, PAM_ERROR_MSG, text);  /* every other refusal says why */
    }
    int rc = tg_outcome_to_pam(code, has_reason ? reason : NULL);
    if (rc == PAM_SUCCESS && by_password && p->password_sent)
        hand_over_password(p);  /* verified: later modules (pam_gnome_keyring) may use it */
    else if (rc == PAM_SUCCESS && !by_password)
        pam_set_data(p->pamh, MATCH_KEY, "fingerprint", NULL);  /* report mode stays quiet */
    tg_line_wipe(&p->line);  /* a half-typed line is dropped when the daemon answers first */
    DEBUG(p->opt, p->pamh, "result code %d reason %s -> %s", (int)code,
          has_reason ? reason : "-", pam_strerror(p->pamh, rc));
    return rc;
}

static int on_frame(struct prompt *p, const uint8_t *buf, size_t len)
{
    struct tg_frame frame;
    enum tg_codec_status cs = tg_frame_decode(buf, len, &frame);
    if (cs != TG_CODEC_OK)
        return protocol_error(p, TG_FAIL_MALFORMED_REPLY, tg_codec_strerror(cs));
    if (frame.request_id != p->id)
        return protocol_error(p, TG_FAIL_WRONG_REQUEST_ID, "reply for another request");
    if (frame.kind == TG_KIND_PROGRESS)
        return on_progress(p, &frame);
    if (frame.kind == TG_KIND_RESULT)
        return on_result(p, &frame);
    return protocol_error(p, TG_FAIL_UNEXPECTED_REPLY, "unexpected frame kind");
}

enum wake { WAKE_DAEMON, WAKE_KEY, WAKE_TIMEOUT, WAKE_ERROR };

/* Waits for a frame or, while keys are read, a key; never past the deadline. */
static enum wake wait_daemon_or_key(const struct prompt *p, uint64_t deadline)
{
    for (;;) {
        struct pollfd fds[2] = {
            { .fd = p->sock, .events = POLLIN },
            { .fd = p->keys ? p->tty.fd : -1, .events = POLLIN },  /* -1: poll skips it */
        };
        int left = tg_remaining_ms(deadline);
        if (left == 0)
            return WAKE_TIMEOUT;
        int n = poll(fds, 2, left);
        if (n == 0)
            return WAKE_TIMEOUT;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return WAKE_ERROR;
        }
        /* The daemon first: a match that arrives together with a key press wins. */
        return fds[0].revents != 0 ? WAKE_DAEMON : WAKE_KEY;
    }
}

/* Runs the prompt until the RESULT of our request, a key that ends it, or a deadline. */
static int await_result(struct prompt *p)
{
    uint8_t buf[TG_FRAME_BUFFER];
    /* Overall cap: every try may use its whole timeout, plus slack, so a daemon that sends
     * keepalives forever is still cut off. Without the options the SPEC defaults are assumed. */
    uint64_t cap_ms = (uint64_t)(p->opt->max_tries ? p->opt->max_tries : DEFAULT_MAX_TRIES) *
                          (uint64_t)(p->opt->timeout_s ? p->opt->timeout_s : DEFAULT_TIMEOUT_S) *
                          1000u +
                      OVERALL_SLACK_MS;
    uint64_t cap = tg_deadline_after(cap_ms);
    uint64_t silence = tg_deadline_after(TG_SILENCE_DEADLINE_MS);  /* only frames restart it */
    int rc = KEEP_WAITING;

    while (rc == KEEP_WAITING) {
        uint64_t deadline = silence < cap ? silence : cap;
        size_t len = 0;
        enum tg_io_status io;
        switch (wait_daemon_or_key(p, deadline)) {
        case WAKE_KEY:
            rc = on_key(p);
            break;
        case WAKE_DAEMON:
            io = tg_read_frame(p->sock, buf, sizeof(buf), &len, deadline);
            if (io != TG_IO_OK) {
                rc = daemon_silent(p, io);
                break;
            }
            silence = tg_deadline_after(TG_SILENCE_DEADLINE_MS);
            rc = on_frame(p, buf, len);
            break;
        case WAKE_TIMEOUT:
            rc = daemon_silent(p, TG_IO_TIMEOUT);
            break;
        case WAKE_ERROR:
            rc = daemon_silent(p, TG_IO_ERROR);
            break;
        }
    }
    return rc;
}

/* Connects and sends the EVALUATE request; p->sock is the connection on PAM_SUCCESS. */
static int start_evaluate(struct prompt *p, const char *user)
{
    uint8_t req[TG_FRAME_BUFFER];
    struct tg_writer w;
    size_t len = 0;
    const struct options *opt = p->opt;
    const char *service = pam_string_item(p->pamh, PAM_SERVICE);
    const char *tty = pam_string_item(p->pamh, PAM_TTY);
    const char *rhost = remote_host(p->pamh);

    tg_writer_init(&w, req, sizeof(req), TG_KIND_EVALUATE, p->id);
    tg_put_string(&w, TG_TAG_USER, user);
    tg_put_int(&w, TG_TAG_POLICY, opt->policy);
    tg_put_string(&w, TG_TAG_SERVICE, service != NULL ? service : "");
    if (opt->max_tries > 0)
        tg_put_int(&w, TG_TAG_MAX_TRIES, opt->max_tries);
    if (opt->timeout_s > 0)
        tg_put_int(&w, TG_TAG_TIMEOUT, opt->timeout_s);
    if (p->locale != NULL)
        tg_put_string(&w, TG_TAG_LOCALE, p->locale);
    if (tty != NULL)
        tg_put_string(&w, TG_TAG_TTY, tty);
    /* RHOST is always sent when known (the daemon applies allow_remote); one we cannot encode
     * fails the request rather than being dropped, which would make a remote session look local. */
    if (rhost != NULL)
        tg_put_string(&w, TG_TAG_RHOST, rhost);
    if (p->tty.fd < 0)
        tg_put_int(&w, TG_TAG_FLAGS, TG_FLAG_NO_INPUT);
    if (!finish_request(p->pamh, &w, &len))
        return tg_failure_to_pam(TG_FAIL_BAD_REQUEST);

    uint64_t deadline = tg_deadline_after(TG_CONNECT_DEADLINE_MS);
    enum tg_io_status io = tg_connect(opt->socket, deadline, &p->sock);
    if (io != TG_IO_OK) {
        /* No daemon, no prompt: fingerprint is simply not there, and the password follows. */
        DEBUG(opt, p->pamh, "connect %s: %s", opt->socket, tg_io_strerror(io));
        return tg_failure_to_pam(io == TG_IO_TIMEOUT ? TG_FAIL_TIMEOUT : TG_FAIL_UNREACHABLE);
    }
    DEBUG(opt, p->pamh, "evaluate user %s service %s policy %d rhost %s keys %s request %08x",
          user, service != NULL ? service : "", opt->policy, rhost != NULL ? rhost : "-",
          p->tty.fd >= 0 ? "yes" : "no", (unsigned)p->id);
    if ((io = tg_send_all(p->sock, req, len, deadline)) != TG_IO_OK) {
        DEBUG(opt, p->pamh, "send: %s", tg_io_strerror(io));
        return tg_failure_to_pam(io == TG_IO_TIMEOUT ? TG_FAIL_TIMEOUT : TG_FAIL_DISCONNECTED);
    }
    return PAM_SUCCESS;
}

/* The fingerprint line: one EVALUATE, relayed and mapped. */
static int authenticate(pam_handle_t *pamh, const struct options *opt)
{
    struct prompt p = { .pamh = pamh, .opt = opt, .sock = -1 };
    const char *user = NULL;
    int rc;

    tg_tty_init(&p.tty);
    /* A match remembered from an earlier pam_authenticate on this handle is not this one's. */
    pam_set_data(pamh, MATCH_KEY, NULL, NULL);
    if ((rc = get_user(pamh, opt, &user)) != PAM_SUCCESS)
        goto done;
    p.locale = client_locale(pamh);
    /* A locale we cannot send only costs the language: drop it rather than fail. */
    if (p.locale != NULL &&
        tg_string_check((const uint8_t *)p.locale, strlen(p.locale)) != TG_CODEC_OK)
        p.locale = NULL;
    p.id = new_request_id();
    if (!opt->noinput && !tg_tty_open(&p.tty))
        DEBUG(opt, pamh, "no terminal in the foreground: messages only");
    if ((rc = start_evaluate(&p, user)) != PAM_SUCCESS)
        goto done;
    rc = await_result(&p);
done:
    tg_tty_close(&p.tty);  /* the terminal exactly as it was found, whatever ended the prompt */
    tg_line_wipe(&p.line);
    if (p.sock >= 0)
        close(p.sock);  /* closing is the cancel: the daemon ends a prompt whose client left */
    DEBUG(opt, pamh, "authenticate -> %s", pam_strerror(pamh, rc));
    return rc;
}

/* ---- report mode --------------------------------------------------------------------------- */

/* Tells the daemon that the password module of this stack verified the password. Not a factor:
 * it always returns PAM_IGNORE, so it can never make a stack succeed (nor fail); the answer is
 * only logged. The daemon accepts it from root callers alone. */
static int report_password_success(pam_handle_t *pamh, const struct options *opt)
{
    uint8_t req[TG_FRAME_BUFFER];
    uint8_t reply[TG_FRAME_BUFFER];
    struct tg_writer w;
    struct tg_frame frame;
    const void *matched = NULL;
    size_t len = 0;
    int fd = -1;
    int32_t code = 0;
    uint32_t id = new_request_id();
    /* PAM_USER, never pam_get_user: report mode must not prompt for anything. */
    const char *user = pam_string_item(pamh, PAM_USER);
    const char *service = pam_string_item(pamh, PAM_SERVICE);
    enum tg_io_status io;

    if (pam_get_data(pamh, MATCH_KEY, &matched) == PAM_SUCCESS && matched != NULL) {
        DEBUG(opt, pamh, "report: the fingerprint matched in this transaction, nothing to report");
        goto done;
    }
    if (user == NULL) {
        DEBUG(opt, pamh, "report: no user");
        goto done;
    }
    tg_writer_init(&w, req, sizeof(req), TG_KIND_PASSWORD_SUCCESS, id);
    tg_put_string(&w, TG_TAG_USER, user);
    tg_put_string(&w, TG_TAG_SERVICE, service != NULL ? service : "");
    if (!finish_request(pamh, &w, &len))
        goto done;
    uint64_t deadline = tg_deadline_after(TG_CONNECT_DEADLINE_MS);
    if ((io = tg_connect(opt->socket, deadline, &fd)) != TG_IO_OK ||
        (io = tg_send_all(fd, req, len, deadline)) != TG_IO_OK ||
        (io = tg_read_frame(fd, reply, sizeof(reply), &len,
                            tg_deadline_after(TG_REPLY_DEADLINE_MS))) != TG_IO_OK) {
        DEBUG(opt, pamh, "report: %s", tg_io_strerror(io));
        goto done;
    }
    if (tg_frame_decode(reply, len, &frame) != TG_CODEC_OK || frame.request_id != id ||
        frame.kind != TG_KIND_RESULT || !tg_frame_int(&frame, TG_TAG_CODE, &code)) {
        DEBUG(opt, pamh, "report: bad reply");
        goto done;
    }
    DEBUG(opt, pamh, "report: password success for %s -> code %d", user, (int)code);
done:
    if (fd >= 0)
        close(fd);
    return PAM_IGNORE;
}

/* ---- entry points ------------------------------------------------------------------------- */

TG_PAM_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    struct options opt;

    /* PAM_SILENT is not honoured for the prompt: it is the interaction itself, not chatter. */
    (void)flags;
    parse_options(pamh, argc, argv, &opt);
    DEBUG(&opt, pamh, "options: socket=%s policy=%d max_tries=%d timeout=%d noinput=%d report=%d",
          opt.socket, opt.policy, opt.max_tries, opt.timeout_s, opt.noinput, opt.report);
    return opt.report ? report_password_success(pamh, &opt) : authenticate(pamh, &opt);
}

TG_PAM_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_SUCCESS;  /* fingerprints establish no credentials */
}
