/* The fingerprint prompt: one EVALUATE, the daemon's messages relayed, the terminal's keys read. */
#ifndef TG_PROMPT_H
#define TG_PROMPT_H

#include <stdbool.h>

#include "tg_module.h"

/* Runs the prompt to its end; returns the PAM code. *ask_password is set when the daemon's
 * refusal asks for the password next (TG_FLAG_ASK_PASSWORD; never under noinput): the caller
 * runs the password step (tg_password.h) instead of returning. A password being typed at the
 * terminal when the daemon refused is left in *typed (else it is empty): the rest of it is still
 * to come, and whatever reads the terminal next must not take that rest for a password of its
 * own; the caller goes on with it (tg_password_step, tg_password_finish) and wipes it. The terminal
 * is then left raw, so nothing typed meanwhile is echoed: their reader, or tg_tty_close, puts it
 * back. */
int tg_prompt_run(struct tg_call *c, bool *ask_password, struct tg_line *typed);

#endif /* TG_PROMPT_H */
