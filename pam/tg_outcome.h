/* The one mapping from daemon outcomes and module-internal failures to PAM return codes (docs/spec.md §10). */
#ifndef TG_OUTCOME_H
#define TG_OUTCOME_H

#include <stdint.h>

/* Failures inside the module, before or instead of a daemon outcome. */
enum tg_failure {
    TG_FAIL_UNREACHABLE,      /* no daemon listening, socket refused */
    TG_FAIL_TIMEOUT,          /* connect deadline, silence deadline or overall cap passed */
    TG_FAIL_DISCONNECTED,     /* the daemon closed the connection or the socket failed */
    TG_FAIL_MALFORMED_REPLY,  /* a frame the codec rejects, or a reply missing its CODE */
    TG_FAIL_WRONG_REQUEST_ID, /* a frame answering some other request */
    TG_FAIL_UNEXPECTED_REPLY, /* a well-formed frame of a kind that cannot answer EVALUATE */
    TG_FAIL_BAD_REQUEST,      /* our own request could not be encoded */
    TG_FAIL_NO_MEMORY,
};

/* Daemon outcome code (TG_OK / TG_ERR_*) plus the RESULT's FLAGS (0 if absent) → PAM code. */
int tg_outcome_to_pam(int32_t code, int32_t flags);

int tg_failure_to_pam(enum tg_failure failure);

#endif /* TG_OUTCOME_H */
