/* What the parts of one pam_sm_authenticate call share: the handle, options, words, terminal. */
#ifndef TG_MODULE_H
#define TG_MODULE_H

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "tg_codec.h"
#include "tg_l10n.h"
#include "tg_options.h"
#include "tg_tty.h"

/* PAM_EXTERN is plain extern on Linux; the .so is built with -fvisibility=hidden. */
#define TG_PAM_EXPORT __attribute__((visibility("default")))

/* One call of the module, on the caller's stack: nothing outlives it, nothing is shared. */
struct tg_call {
    pam_handle_t *pamh;
    const struct tg_options *opt;
    const char *user;    /* looked up: the account exists */
    const char *locale;  /* the client's LC_ALL / LC_MESSAGES / LANG, sent to the daemon */
    char catalog[72];    /* with LANGUAGE set: the language gettext chose, sent instead */
    struct tg_lang lang; /* the module's own words in that language */
    struct tg_tty tty;   /* fd -1: no terminal to read (none, background, or noinput) */
};

#define TG_DEBUG(opt, pamh, ...)                        \
    do {                                                \
        if ((opt)->debug)                               \
            pam_syslog((pamh), LOG_DEBUG, __VA_ARGS__); \
    } while (0)

/* Shows one line through the application's conversation ("%s": daemon text is never a format).
 * False when the conversation failed: the application cannot show anything any more. */
bool tg_say(const struct tg_call *c, int style, const char *text);

/* pam_set_data key: this handle's fingerprint line matched, so report mode has nothing to say. */
#define TG_MATCH_KEY "pam_touchgate_matched"

/* The typed password as PAM_AUTHTOK: how it reaches pam_unix (try_first_pass, use_first_pass)
 * and later modules such as pam_gnome_keyring, so nobody types it twice. PAM keeps a copy. */
void tg_hand_over(const struct tg_call *c, const char *password);

/* The line for a daemon that refused the connection as busy (TG_ERR_BUSY). */
const char *tg_busy_text(const struct tg_call *c);

/* A refusal's MESSAGE as shown: the daemon's words, already in the person's language, except in
 * a RESULT sent before our request was read (TG_UNSOLICITED_ID: the service stopping), which the
 * daemon could only write in English; that sentence is one of the catalog's, looked up here. */
const char *tg_refusal_text(const struct tg_call *c, const struct tg_frame *frame,
                            const char *message);

/* A request id for a new connection: never 0 (invalid) and never TG_UNSOLICITED_ID. */
uint32_t tg_new_request_id(void);

/* Whether a decoded frame answers request `id`: its own id, or the daemon's unsolicited refusal
 * (TG_UNSOLICITED_ID: a RESULT busy or badRequest, sent before our request was read), which
 * answers whatever we asked. Any other frame under that id is malformed and answers nothing. */
bool tg_answers(const struct tg_frame *frame, uint32_t id);

/* Whether the daemon's answer to a password sent to it (code, flags) rejects it: judged wrong
 * (BY_PASSWORD set: the daemon alone says so, never its reason), or not even looked at in
 * back-off; it then goes no further. Any other answer leaves it unjudged, a finger's tries used up
 * included (that answer may cross the password on its way). */
bool tg_password_rejected(int32_t code, int32_t flags);

/* Finishes an encoded request; false (logged) if it cannot be encoded. */
bool tg_finish_request(pam_handle_t *pamh, struct tg_writer *w, size_t *len);

#endif /* TG_MODULE_H */
