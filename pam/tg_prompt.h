/* The fingerprint prompt: one EVALUATE, the daemon's messages relayed, the terminal's keys read. */
#ifndef TG_PROMPT_H
#define TG_PROMPT_H

#include <stdbool.h>

#include "tg_module.h"

/* Runs the prompt to its end; returns the PAM code. *ask_password is set when the daemon's
 * refusal asks for the password next (TG_FLAG_ASK_PASSWORD; never under noinput): the caller
 * runs the password step (tg_password.h) instead of returning. */
int tg_prompt_run(struct tg_call *c, bool *ask_password);

#endif /* TG_PROMPT_H */
