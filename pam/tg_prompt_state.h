/* The fingerprint prompt's state, shared by its two halves: the terminal's keys (tg_prompt_keys.c)
 * and the daemon's frames (tg_prompt.c). Private to the module. */
#ifndef TG_PROMPT_STATE_H
#define TG_PROMPT_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "tg_module.h"

/* Returned by the prompt's steps while the prompt goes on; every PAM code is >= 0. */
#define KEEP_WAITING (-1)

/* What the module knows while it waits for the daemon and the keys. */
struct prompt {
    struct tg_call *c;
    uint32_t id;
    int sock;
    bool keys;           /* reading keys now: the terminal is in raw mode */
    bool keys_offered;   /* the terminal was offered once (the hint is shown once) */
    bool typing_noted;   /* the "typing password" note was shown (once) */
    bool line_open;      /* that note ended without a newline, which is still owed */
    bool password_sent;  /* a PASSWORD went out: the RESULT judges it */
    bool takes_password; /* the daemon said a password typed at this prompt is sent to it */
    bool ask_password;   /* the RESULT asks for the password step */
    bool typing;         /* ended, not by a match, mid-password: the line goes on (raw still) */
    struct tg_line line; /* the typed password, wiped on every way out */
};

#define DEBUG(p, ...) TG_DEBUG((p)->c->opt, (p)->c->pamh, __VA_ARGS__)

/* Ends the terminal part: the owed newline, then the exact termios as found (left raw while a line
 * still being typed goes on at the password reader). Safe to repeat. */
void tg_prompt_finish_keys(struct prompt *p);

/* A message while the prompt goes on; false when the conversation failed. */
bool tg_prompt_say(struct prompt *p, int style, const char *text);

/* The application's conversation failed: the prompt stops at once (appCancel). */
int tg_prompt_client_gone(struct prompt *p);

/* One key from the terminal: KEEP_WAITING, or the PAM code that ends the prompt. */
int tg_prompt_on_key(struct prompt *p);

/* Once the reader listens (or the request is queued), the terminal is read too. */
int tg_prompt_offer_keys(struct prompt *p);

#endif /* TG_PROMPT_STATE_H */
