/* The password step of biometrics-or-password (deviceOwnerAuthentication): ask, let touchgated check. */
#include "tg_password.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tg_client.h"
#include "tg_env.h"
#include "tg_outcome.h"

#define TYPING_DEADLINE_MS 120000 /* a person who walked away: the password module asks afresh */
#define CHECK_CAP_MS       30000  /* the daemon's own PAM check (pam_unix delays a wrong one) */

#define DEBUG(c, ...) TG_DEBUG((c)->opt, (c)->pamh, __VA_ARGS__)

enum asked {
    ASKED_LINE,    /* line holds what was typed (possibly empty) */
    ASKED_CANCEL,  /* Ctrl-C, Ctrl-D, an overlong line, or nobody answered in time */
    ASKED_GONE,    /* the terminal or the conversation went away */
    ASKED_NOWHERE, /* the terminal cannot be set up: ask through the conversation instead */
};

/* The module's own terminal reader: "Password: ", echo and signals off (the same tg_tty code as
 * the fingerprint prompt), so Ctrl-C and Ctrl-D are keys with a meaning and the terminal is put
 * back exactly as found whatever ends it. A line begun at the fingerprint prompt goes on, the
 * terminal still raw from there (tg_tty_raw keeps the termios it saved then). */
static enum asked ask_on_terminal(struct tg_call *c, struct tg_line *line)
{
    if (!tg_tty_raw(&c->tty))
        return ASKED_NOWHERE;
    tg_tty_write(&c->tty, tg_text(&c->lang, N_("Password: ")));
    /* Enter or Ctrl-D on an empty line, Ctrl-C, an overlong line, no Enter in time: nothing is sent. */
    enum tg_line_end end =
        tg_tty_read_line(&c->tty, line, tg_deadline_after(TYPING_DEADLINE_MS), -1);
    enum asked asked = end == TG_LINE_ENTERED ? ASKED_LINE
                       : end == TG_LINE_GONE  ? ASKED_GONE
                                              : ASKED_CANCEL;
    tg_tty_restore(&c->tty);
    tg_tty_write(&c->tty, "\n"); /* the Enter was not echoed: end the prompt's line */
    if (asked != ASKED_LINE)
        tg_line_wipe(line);
    return asked;
}

/* Through the application's conversation (graphical clients, clients without a terminal or that
 * read their input elsewhere, sudo -S). */
static enum asked ask_in_conversation(struct tg_call *c, struct tg_line *line)
{
    char *answer = NULL;
    enum asked asked = ASKED_GONE;
    int rc = pam_prompt(c->pamh, PAM_PROMPT_ECHO_OFF, &answer, "%s",
                        tg_text(&c->lang, N_("Password: ")));
    if (rc != PAM_SUCCESS) {
        DEBUG(c, "conversation refused the password prompt: %s", pam_strerror(c->pamh, rc));
        goto done;
    }
    size_t len = answer != NULL ? strlen(answer) : 0;
    /* Never cut down: a longer answer is not what the person typed (as at the terminal). */
    if (len > TG_LINE_MAX) {
        asked = ASKED_CANCEL;
        goto done;
    }
    memcpy(line->buf, answer != NULL ? answer : "", len + 1);
    line->len = len;
    asked = ASKED_LINE;
done:
    if (answer != NULL) {
        explicit_bzero(answer, strlen(answer));
        free(answer);
    }
    return asked;
}

/* How the exchange with the daemon ended. */
enum exchanged {
    ANSWERED,   /* frame holds the RESULT */
    NOT_SENT,   /* the password cannot go over the wire (not UTF-8): nothing was sent */
    NO_ANSWER,  /* connect, send or read failed (*io says why) */
    BAD_ANSWER, /* a frame that answers nothing: malformed, another request's, not a keepalive */
};

/* Connects, sends VERIFY_PASSWORD and reads its RESULT into buf/frame. The request, which holds
 * the password, is wiped whatever happens. */
static enum exchanged exchange(struct tg_call *c, const char *password, uint8_t *buf,
                               struct tg_frame *frame, enum tg_io_status *io)
{
    uint8_t req[TG_FRAME_BUFFER];
    struct tg_writer w;
    size_t len = 0;
    int fd = -1;
    uint32_t id = tg_new_request_id();
    const char *service = tg_pam_string(c->pamh, PAM_SERVICE);
    const char *tty = tg_pam_string(c->pamh, PAM_TTY);
    const char *rhost = tg_remote_host(c->pamh);
    enum exchanged end = NO_ANSWER;

    *io = TG_IO_ERROR;
    tg_writer_init(&w, req, sizeof(req), TG_KIND_VERIFY_PASSWORD, id);
    tg_put_string(&w, TG_TAG_USER, c->user);
    tg_put_string(&w, TG_TAG_PASSWORD, password);
    tg_put_string(&w, TG_TAG_SERVICE, service != NULL ? service : "");
    if (tty != NULL)
        tg_put_string(&w, TG_TAG_TTY, tty);
    if (rhost != NULL)
        tg_put_string(&w, TG_TAG_RHOST, rhost);
    if (c->locale != NULL)
        tg_put_string(&w, TG_TAG_LOCALE, c->locale);
    /* Not UTF-8, say (the other fields went out in the EVALUATE): the daemon cannot be asked,
     * the password module can still judge it. */
    if (tg_writer_finish(&w, &len) != TG_CODEC_OK) {
        end = NOT_SENT;
        goto done;
    }
    uint64_t deadline = tg_deadline_after(TG_CONNECT_DEADLINE_MS);
    if ((*io = tg_connect(c->opt->socket, deadline, &fd)) != TG_IO_OK ||
        (*io = tg_send_request(fd, req, len, deadline)) != TG_IO_OK)
        goto done;
    explicit_bzero(req, sizeof(req));

    /* Keepalives while the daemon's PAM service checks: silence and an overall cap bound it. */
    struct tg_watch watch;
    tg_watch_start(&watch, tg_now_ms(), CHECK_CAP_MS);
    for (;;) {
        *io = tg_read_frame(fd, buf, TG_FRAME_BUFFER, &len, tg_watch_deadline(&watch));
        if (*io == TG_IO_MALFORMED)
            end = BAD_ANSWER; /* a length out of range: a malformed reply, not a silent daemon */
        if (*io != TG_IO_OK)
            break;
        tg_watch_frame(&watch, tg_now_ms());
        int32_t progress = 0;
        if (tg_frame_decode(buf, len, frame) != TG_CODEC_OK || !tg_answers(frame, id)) {
            end = BAD_ANSWER;
            break;
        }
        if (frame->kind == TG_KIND_RESULT) {
            end = ANSWERED;
            break;
        }
        if (frame->kind != TG_KIND_PROGRESS || !tg_frame_int(frame, TG_TAG_PROGRESS, &progress) ||
            progress != TG_PROGRESS_KEEPALIVE) {
            end = BAD_ANSWER; /* nothing but keepalives may come before the answer */
            break;
        }
        if (tg_watch_capped(&watch, tg_now_ms())) {
            *io = TG_IO_TIMEOUT; /* a keepalive read past the cap does not prolong the wait */
            break;
        }
    }
done:
    explicit_bzero(req, sizeof(req));
    if (fd >= 0)
        close(fd);
    return end;
}

/* A reply that answers nothing: said as at the fingerprint prompt, and the password, which nobody
 * judged, goes on to the password module. */
static int bad_reply(struct tg_call *c, const char *what, const char *password)
{
    pam_syslog(c->pamh, LOG_ERR, "password step: bad reply from touchgated: %s", what);
    tg_say(c, PAM_ERROR_MSG, tg_text(&c->lang, N_("Fingerprint service error: use your password")));
    tg_hand_over(c, password);
    return tg_failure_to_pam(TG_FAIL_MALFORMED_REPLY);
}

/* The daemon's judgement of the password: PAM code, message shown, password handed on or not. */
static int judge(struct tg_call *c, const struct tg_frame *frame, const char *password)
{
    char text[TG_MAX_STRING + 1];
    int32_t code;
    int32_t flags = 0;

    if (!tg_frame_int(frame, TG_TAG_CODE, &code))
        return bad_reply(c, "result without CODE", password);
    tg_frame_int(frame, TG_TAG_FLAGS, &flags); /* absent: 0, every flag "no" */
    int rc = tg_outcome_to_pam(code, flags);
    if (code == TG_ERR_BUSY)
        tg_say(c, PAM_ERROR_MSG, tg_busy_text(c));
    else if (code != TG_OK && tg_frame_string(frame, TG_TAG_MESSAGE, text, sizeof(text)))
        tg_say(c, PAM_ERROR_MSG,
               tg_refusal_text(c, frame, text)); /* "Wrong password", the back-off… */
    /* The password goes on unless the daemon judged it wrong (or refused to look, in back-off):
     * verified, it serves later modules; unjudged, pam_unix try_first_pass judges it. */
    if (!tg_password_rejected(code, flags))
        tg_hand_over(c, password);
    DEBUG(c, "password step: code %d flags %#x -> %s", (int)code, (unsigned)flags,
          pam_strerror(c->pamh, rc));
    return rc;
}

/* Asks on the terminal, going on with what was typed at the prompt, else in the conversation
 * (where nothing typed at the terminal belongs). */
static enum asked ask(struct tg_call *c, struct tg_line *line)
{
    enum asked asked = c->tty.fd >= 0 && c->tty.input ? ask_on_terminal(c, line) : ASKED_NOWHERE;
    if (asked == ASKED_NOWHERE) {
        tg_line_wipe(line);
        asked = ask_in_conversation(c, line);
    }
    return asked;
}

void tg_password_finish(struct tg_call *c, struct tg_line *typed)
{
    /* Only at the terminal it was begun at: the next module asks through the conversation. */
    if (c->tty.fd >= 0 && ask_on_terminal(c, typed) == ASKED_LINE && typed->len > 0) {
        tg_hand_over(c, typed->buf);
        DEBUG(c, "password finished after the refusal: handed to the password module");
    }
    tg_line_wipe(typed);
}

int tg_password_step(struct tg_call *c, struct tg_line *typed)
{
    struct tg_line line = *typed;
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_frame frame;
    enum tg_io_status io = TG_IO_OK;
    int rc = PAM_SYSTEM_ERR;

    tg_line_wipe(typed);
    enum asked asked = ask(c, &line);
    if (asked == ASKED_GONE) {
        rc = tg_outcome_to_pam(TG_ERR_APP_CANCEL, 0);
        goto done;
    }
    /* An empty password is never sent: it is how a person says "not now" (userCancel). */
    if (asked == ASKED_CANCEL || line.len == 0) {
        DEBUG(c, "password step cancelled");
        rc = tg_outcome_to_pam(TG_ERR_USER_CANCEL, 0);
        goto done;
    }
    switch (exchange(c, line.buf, buf, &frame, &io)) {
    case NOT_SENT:
        /* No daemon fault and nothing sent: as a password typed at the prompt that cannot be
         * sent, the password module that follows judges it (userFallback, docs/spec.md §10). */
        DEBUG(c, "password step: password cannot be sent (not UTF-8): handed to the password "
                 "module");
        tg_hand_over(c, line.buf);
        rc = tg_outcome_to_pam(TG_ERR_USER_FALLBACK, 0);
        break;
    case BAD_ANSWER:
        rc = bad_reply(c, "malformed or unexpected frame", line.buf);
        break;
    case NO_ANSWER:
        /* AUTHINFO_UNAVAIL with the password handed on: a daemon that died since the refusal
         * must not cost the person their password; pam_unix checks it without asking again. */
        pam_syslog(c->pamh, LOG_WARNING,
                   "password step: touchgated %s: handed to the password module",
                   tg_io_strerror(io));
        tg_hand_over(c, line.buf);
        rc = tg_failure_to_pam(io == TG_IO_TIMEOUT ? TG_FAIL_TIMEOUT : TG_FAIL_DISCONNECTED);
        break;
    case ANSWERED:
        rc = judge(c, &frame, line.buf);
        break;
    }
    explicit_bzero(buf, sizeof(buf)); /* held only the reply, but frames are wiped alike */
done:
    tg_line_wipe(&line);
    return rc;
}
