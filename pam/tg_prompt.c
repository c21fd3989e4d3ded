/* The fingerprint prompt: one EVALUATE, the daemon's messages relayed, the terminal's keys read
 * (tg_prompt_keys.c). */
#include "tg_prompt.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "tg_client.h"
#include "tg_evaluate.h"
#include "tg_outcome.h"
#include "tg_prompt_state.h"

#define DEFAULT_MAX_TRIES 3
#define DEFAULT_TIMEOUT_S 30
#define OVERALL_SLACK_MS  120000 /* queueing, password typing and messages beyond the tries */
#define DROP_IDLE_MS      3000   /* the rest of a password typed at a match: a pause ends it, */
#define DROP_CAP_MS       120000 /* and so does this much time, whatever keys come */

/* ---- the daemon -------------------------------------------------------------------------- */

/* A password sent at this prompt that the daemon did not judge (it failed, went silent, or
 * answered without looking at it: systemCancel, busy, …) is kept for the password module that
 * follows (docs/spec.md §10), as the password step keeps its own. Wiped once handed over. */
static void keep_password(struct prompt *p, const char *why)
{
    if (!p->password_sent || p->line.len == 0)
        return;
    tg_hand_over(p->c, p->line.buf);
    DEBUG(p, "typed password not judged (%s): handed to the password module", why);
    tg_line_wipe(&p->line);
}

/* How a line still being typed ends with the prompt (docs/spec.md §10): a match drops its rest;
 * any other end leaves it to be finished at the terminal (tg_prompt_run), or its rest would be read
 * next as a password of its own. One already too long to send stays so: finished, it is refused as
 * any overlong line is, and nothing of it is sent. Before the terminal is put back. A line sent as
 * a password is not this one's to settle. At a match, keys typed but not read yet (the match is
 * read first, or came while a message was shown) are a line too: a whole password may wait there,
 * and the shell would read it next. After any other end the password reader that follows reads
 * them, as it should. */
static void settle_line(struct prompt *p, bool matched)
{
    if (!p->keys || p->password_sent)
        return;
    if (matched) {
        if (p->line.len > 0 || tg_tty_pending(&p->c->tty))
            tg_tty_drop_line(&p->c->tty, tg_deadline_after(DROP_CAP_MS), DROP_IDLE_MS);
        tg_line_wipe(&p->line);
    } else if (p->line.len > 0) {
        p->typing = true;
    }
}

static int protocol_error(struct prompt *p, enum tg_failure failure, const char *what)
{
    keep_password(p, what);
    settle_line(p, false);
    tg_prompt_finish_keys(p);
    pam_syslog(p->c->pamh, LOG_ERR, "bad reply from touchgated: %s", what);
    tg_say(p->c, PAM_ERROR_MSG,
           tg_text(&p->c->lang, N_("Fingerprint service error: use your password")));
    return tg_failure_to_pam(failure);
}

static int daemon_silent(struct prompt *p, enum tg_io_status io)
{
    if (io == TG_IO_MALFORMED)
        return protocol_error(p, TG_FAIL_MALFORMED_REPLY, tg_io_strerror(io));
    keep_password(p, tg_io_strerror(io));
    settle_line(p, false);
    tg_prompt_finish_keys(p);
    pam_syslog(p->c->pamh, LOG_WARNING, "touchgated not responding (%s): falling back",
               tg_io_strerror(io));
    tg_say(p->c, PAM_ERROR_MSG,
           tg_text(&p->c->lang, N_("Fingerprint service not responding: use your password")));
    return tg_failure_to_pam(io == TG_IO_TIMEOUT ? TG_FAIL_TIMEOUT : TG_FAIL_DISCONNECTED);
}

static int on_progress(struct prompt *p, const struct tg_frame *frame)
{
    char text[TG_MAX_STRING + 1];
    int32_t kind = 0;
    int32_t style = TG_STYLE_INFO;
    int32_t flags = 0;

    tg_frame_int(frame, TG_TAG_PROGRESS, &kind);
    tg_frame_int(frame, TG_TAG_STYLE, &style);
    tg_frame_int(frame, TG_TAG_FLAGS, &flags); /* absent: 0, every flag "no" */
    if (tg_frame_string(frame, TG_TAG_MESSAGE, text, sizeof(text))) {
        DEBUG(p, "progress %d message relayed (style %d)", (int)kind, (int)style);
        if (!tg_prompt_say(p, style == TG_STYLE_ERROR ? PAM_ERROR_MSG : PAM_TEXT_INFO, text))
            return tg_prompt_client_gone(p);
    }
    if (kind == TG_PROGRESS_PROMPT || kind == TG_PROGRESS_QUEUED) {
        p->takes_password = (flags & TG_FLAG_ACCEPTS_PASSWORD) != 0;
        return tg_prompt_offer_keys(p);
    }
    return KEEP_WAITING; /* a keepalive only restarts the silence deadline */
}

/* A fingerprint match: report mode stays quiet, and with authtok the login password the daemon
 * released (docs/spec.md §12) becomes PAM_AUTHTOK for pam_gnome_keyring and the like. */
static void on_match(struct prompt *p, const struct tg_frame *frame)
{
    char secret[TG_MAX_STRING + 1];

    pam_set_data(p->c->pamh, TG_MATCH_KEY, "fingerprint", NULL);
    if (p->c->opt->authtok && tg_frame_string(frame, TG_TAG_PASSWORD, secret, sizeof(secret))) {
        int rc = pam_set_item(p->c->pamh, PAM_AUTHTOK, secret);
        /* Not set, the keyring stays locked after a match: said, as that is not expected. */
        if (rc != PAM_SUCCESS)
            pam_syslog(p->c->pamh, LOG_ERR,
                       "cannot set the sealed login password as PAM_AUTHTOK: %s",
                       pam_strerror(p->c->pamh, rc));
        else
            DEBUG(p, "sealed login password set as PAM_AUTHTOK");
    }
    explicit_bzero(secret, sizeof(secret));
}

static int on_result(struct prompt *p, const struct tg_frame *frame)
{
    char text[TG_MAX_STRING + 1];
    int32_t code;
    int32_t flags = 0;

    if (!tg_frame_int(frame, TG_TAG_CODE, &code))
        return protocol_error(p, TG_FAIL_MALFORMED_REPLY, "result without CODE");
    tg_frame_int(frame, TG_TAG_FLAGS, &flags); /* absent: 0, every flag "no" */
    bool by_password = (flags & TG_FLAG_BY_PASSWORD) != 0;
    settle_line(p, code == TG_OK && !by_password);
    /* The daemon decided: the terminal is put back before anything is shown (but for a line
     * that goes on, see tg_prompt_finish_keys). */
    tg_prompt_finish_keys(p);
    if (code == TG_ERR_BUSY) {
        tg_say(p->c, PAM_ERROR_MSG, tg_busy_text(p->c)); /* too many connections: our own words */
    } else if (code != TG_OK && tg_frame_string(frame, TG_TAG_MESSAGE, text, sizeof(text))) {
        /* "No fingerprints enrolled" is noise for people who never set up fingerprints. */
        if (code == TG_ERR_BIOMETRY_NOT_ENROLLED)
            DEBUG(p, "not shown: %s", text);
        else
            tg_say(p->c, PAM_ERROR_MSG,
                   tg_refusal_text(p->c, frame, text)); /* every other says why */
    }
    int rc = tg_outcome_to_pam(code, flags);
    /* A password sent here is judged by a success (verified) or a rejection, as at the password
     * step; any other answer leaves it unjudged. */
    bool rejected = tg_password_rejected(code, flags);
    if (rc == PAM_SUCCESS && by_password && p->password_sent)
        tg_hand_over(p->c,
                     p->line.buf); /* verified: later modules (pam_gnome_keyring) may use it */
    else if (rc == PAM_SUCCESS && !by_password)
        on_match(p, frame);
    else if (rc != PAM_SUCCESS && !rejected)
        keep_password(p, "not judged");
    /* The daemon decides whether the password step follows (from the policy, NO_INPUT and the
     * back-off); a success needs no second step, and under noinput the module asks nothing,
     * whatever a reply says (its own fact, docs/spec.md §6). */
    p->ask_password = code != TG_OK && (flags & TG_FLAG_ASK_PASSWORD) != 0 && !p->c->opt->noinput;
    if (!p->typing) /* a line still being typed was settled above */
        tg_line_wipe(&p->line);
    DEBUG(p, "result code %d flags %#x -> %s%s", (int)code, (unsigned)flags,
          pam_strerror(p->c->pamh, rc), p->ask_password ? ", password next" : "");
    return rc;
}

static int on_frame(struct prompt *p, const uint8_t *buf, size_t len)
{
    struct tg_frame frame;
    enum tg_codec_status cs = tg_frame_decode(buf, len, &frame);
    if (cs != TG_CODEC_OK)
        return protocol_error(p, TG_FAIL_MALFORMED_REPLY, tg_codec_strerror(cs));
    if (frame.request_id == TG_UNSOLICITED_ID && !tg_answers(&frame, p->id))
        return protocol_error(p, TG_FAIL_MALFORMED_REPLY, "unsolicited reply that is no refusal");
    if (!tg_answers(&frame, p->id))
        return protocol_error(p, TG_FAIL_WRONG_REQUEST_ID, "reply for another request");
    if (frame.kind == TG_KIND_PROGRESS)
        return on_progress(p, &frame);
    if (frame.kind == TG_KIND_RESULT)
        return on_result(p, &frame);
    return protocol_error(p, TG_FAIL_UNEXPECTED_REPLY, "unexpected frame kind");
}

enum wake { WAKE_DAEMON, WAKE_KEY, WAKE_TIMEOUT, WAKE_ERROR };

/* Waits for a frame or, while keys are read, a key; never past the deadline. A passed deadline
 * still looks (timeout 0): a frame that arrived while the module was in its own conversation is
 * the daemon's answer, not its silence. */
static enum wake wait_daemon_or_key(const struct prompt *p, uint64_t deadline)
{
    for (;;) {
        struct pollfd fds[2] = {
            { .fd = p->sock, .events = POLLIN },
            { .fd = p->keys ? p->c->tty.fd : -1, .events = POLLIN }, /* -1: poll skips it */
        };
        int n = poll(fds, 2, tg_remaining_ms(deadline));
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
    const struct tg_options *opt = p->c->opt;
    /* Overall cap: every try may use its whole timeout, plus slack, so a daemon that sends
     * keepalives forever is still cut off. Without the options the defaults of docs/spec.md §3 are assumed. */
    uint64_t cap_ms = (uint64_t)(opt->max_tries ? opt->max_tries : DEFAULT_MAX_TRIES) *
                          (uint64_t)(opt->timeout_s ? opt->timeout_s : DEFAULT_TIMEOUT_S) * 1000u +
                      OVERALL_SLACK_MS;
    struct tg_watch watch;
    int rc = KEEP_WAITING;

    tg_watch_start(&watch, tg_now_ms(), cap_ms);
    while (rc == KEEP_WAITING) {
        uint64_t deadline = tg_watch_deadline(&watch);
        size_t len = 0;
        enum tg_io_status io;
        switch (wait_daemon_or_key(p, deadline)) {
        case WAKE_KEY:
            rc = tg_prompt_on_key(p);
            break;
        case WAKE_DAEMON:
            io = tg_read_frame(p->sock, buf, sizeof(buf), &len, deadline);
            if (io != TG_IO_OK) {
                rc = daemon_silent(p, io);
                break;
            }
            tg_watch_frame(&watch, tg_now_ms()); /* only frames restart the silence deadline */
            rc = on_frame(p, buf, len);
            break;
        case WAKE_TIMEOUT:
            rc = daemon_silent(p, TG_IO_TIMEOUT);
            break;
        case WAKE_ERROR:
            rc = daemon_silent(p, TG_IO_ERROR);
            break;
        }
        /* Past the cap, what was already waiting is read, but nothing keeps the prompt going. */
        if (rc == KEEP_WAITING && tg_watch_capped(&watch, tg_now_ms()))
            rc = daemon_silent(p, TG_IO_TIMEOUT);
    }
    explicit_bzero(buf, sizeof(buf)); /* the last frame may carry the login password */
    return rc;
}

int tg_prompt_run(struct tg_call *c, bool *ask_password, struct tg_line *typed)
{
    struct prompt p = { .c = c, .sock = -1, .id = tg_new_request_id() };
    int rc = tg_evaluate_start(c, p.id, &p.sock);
    if (rc == PAM_SUCCESS)
        rc = await_result(&p);
    tg_prompt_finish_keys(&p); /* the terminal as found, whatever ended it (a line aside) */
    tg_line_wipe(typed);
    if (p.typing) {
        *typed = p.line;
        DEBUG(&p, "refused while a password was being typed: it goes on");
    }
    tg_line_wipe(&p.line);
    if (p.sock >= 0)
        close(p.sock); /* closing is the cancel: the daemon ends a prompt whose client left */
    *ask_password = p.ask_password;
    return rc;
}
