/* The fingerprint prompt's terminal half: keys read raw, a typed password sent or handed on, the
 * terminal given back exactly as found (the daemon's half is tg_prompt.c). */
#include <string.h>

#include "tg_client.h"
#include "tg_outcome.h"
#include "tg_prompt_state.h"

#define CANCEL_DEADLINE_MS 200 /* a CANCEL is a courtesy: closing the socket cancels too */

/* Ends the terminal part: the owed newline, then the exact termios as found. Safe to repeat.
 * A line still being typed (p->typing) goes on at the password reader, so the terminal stays as
 * it is, without echo: the refusal may take a while to show, and keys typed meanwhile must not
 * appear on the screen. The password reader, or tg_tty_close on any other way out, puts it back. */
void tg_prompt_finish_keys(struct prompt *p)
{
    if (p->line_open)
        tg_tty_write(&p->c->tty, "\n"); /* the terminal's next prompt starts on a fresh line */
    p->line_open = false;
    p->keys = false;
    if (!p->typing)
        tg_tty_restore(&p->c->tty);
}

/* A message while the prompt goes on; false when the conversation failed. */
bool tg_prompt_say(struct prompt *p, int style, const char *text)
{
    if (p->line_open) {
        tg_tty_write(&p->c->tty, "\n");
        p->line_open = false;
    }
    return tg_say(p->c, style, text);
}

/* The application's conversation failed: it went away or its prompt was closed (a graphical
 * fingerprint conversation that was cancelled). Stop at once; closing the socket (done by
 * tg_prompt_run) makes the daemon cancel the scan. */
int tg_prompt_client_gone(struct prompt *p)
{
    DEBUG(p, "conversation failed mid-prompt: prompt ended");
    tg_prompt_finish_keys(p);
    return tg_outcome_to_pam(TG_ERR_APP_CANCEL, 0);
}

/* Tells the daemon to stop the scan, without waiting for its answer. */
static void send_cancel(const struct prompt *p)
{
    uint8_t req[TG_HEADER_SIZE + 16];
    struct tg_writer w;
    size_t len = 0;
    tg_writer_init(&w, req, sizeof(req), TG_KIND_CANCEL, p->id);
    if (tg_finish_request(p->c->pamh, &w, &len))
        tg_send_all(p->sock, req, len, tg_deadline_after(CANCEL_DEADLINE_MS));
}

/* The user ended the prompt (userFallback, userCancel) or left the terminal: no wait for the
 * daemon's answer, the password module runs at once. */
static int end_prompt(struct prompt *p, int32_t outcome, const char *why)
{
    tg_prompt_finish_keys(p);
    tg_line_wipe(&p->line);
    send_cancel(p);
    DEBUG(p, "prompt ended by the terminal: %s", why);
    return tg_outcome_to_pam(outcome, 0);
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
    tg_prompt_finish_keys(
        p); /* no more keys: the terminal is back to normal for the rest of the wait */
    if (p->takes_password) {
        if (send_password(p)) {
            p->password_sent = true;
            DEBUG(p, "typed password sent to the daemon");
            return KEEP_WAITING;
        }
        DEBUG(p, "typed password could not be sent: handed to the password module");
    }
    /* The daemon takes no password at this prompt (policy biometrics): the password module that
     * follows checks it, and the prompt ends as on Enter. */
    tg_hand_over(p->c, p->line.buf);
    return end_prompt(p, TG_ERR_USER_FALLBACK, "password typed");
}

/* One key from the terminal. */
int tg_prompt_on_key(struct prompt *p)
{
    uint8_t key = 0;
    switch (tg_tty_read_key(&p->c->tty, &key)) {
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
            tg_tty_write(&p->c->tty, tg_text(&p->c->lang, N_("(typing password — press Enter)")));
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

static const char *hint(const struct prompt *p)
{
    if (p->takes_password)
        return tg_text(&p->c->lang, N_("(or type your password and press Enter)"));
    return tg_text(&p->c->lang, N_("(or press Enter to use your password)"));
}

/* Once the reader listens (or the request waits in the queue), the terminal is read too, so the
 * password is always one Enter away and never behind a timeout. */
int tg_prompt_offer_keys(struct prompt *p)
{
    if (p->keys_offered || p->c->tty.fd < 0 || p->password_sent)
        return KEEP_WAITING;
    p->keys_offered = true;
    if (!tg_tty_raw(&p->c->tty)) {
        DEBUG(p, "terminal cannot be set up: no keys read");
        return KEEP_WAITING;
    }
    p->keys = true;
    if (!tg_prompt_say(p, PAM_TEXT_INFO, hint(p)))
        return tg_prompt_client_gone(p);
    return KEEP_WAITING;
}
