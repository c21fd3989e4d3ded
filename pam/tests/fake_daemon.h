/* A scripted fake touchgated and real PAM runs against it, shared by the PAM run test programs. */
#ifndef TG_FAKE_DAEMON_H
#define TG_FAKE_DAEMON_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <security/pam_appl.h>

#include "tg_codec.h"

enum behaviour {
    SILENT,               /* reads the request, never answers */
    WRONG_ID,             /* RESULT TG_OK for another request id */
    RETRY_THEN_OK,        /* PROGRESS retry, keepalive, RESULT TG_OK */
    MALFORMED,            /* a frame with version 2 */
    HUGE_LENGTH,          /* a length prefix of 2^32-1, then nothing */
    CLOSE_AT_ONCE,        /* hangs up after the request */
    REFUSE_LOCKOUT,       /* RESULT biometryLockout with a MESSAGE */
    NO_MATCH_TWICE,       /* PROGRESS no-match (error style), RESULT authenticationFailed */
    KEEPALIVES_THEN_OK,   /* three keepalives, then TG_OK */
    EVENT_FRAME,          /* a well-formed EVENT frame, which cannot answer EVALUATE */
    NOT_ENROLLED,         /* RESULT biometryNotEnrolled "noPrints" with a MESSAGE */
    MATCH,                /* RESULT TG_OK at once */
    PROMPT_THEN_MATCH,    /* PROGRESS prompt with its message, RESULT TG_OK */
    PROMPT_THEN_WAIT,     /* PROGRESS prompt with its message, then only listens */
    REPORT_OK,            /* RESULT TG_OK (an answer to PASSWORD_SUCCESS) */
    REPORT_REFUSED,       /* RESULT notPermitted with a MESSAGE */
    BUSY_UNSOLICITED,     /* before reading anything: RESULT TG_ERR_BUSY, id TG_UNSOLICITED_ID */
    STOPPING_UNSOLICITED, /* before reading anything: RESULT systemCancel "shutdown", its English
                           * MESSAGE, id TG_UNSOLICITED_ID (a daemon stopping) */
    /* What no daemon sends, and a daemon that takes its time. */
    UNSOLICITED_OK,    /* before reading anything: RESULT TG_OK, id TG_UNSOLICITED_ID */
    SLOW_PROMPT_MATCH, /* PROGRESS prompt with its message; RESULT TG_OK FAKE_SLOW_MS later, then
                        * the server's `sent` pipe is written */
    SLOW_REPORT_OK,    /* keepalives FAKE_KEEPALIVE_MS apart, then RESULT TG_OK */
    /* Refusals that ask for the password step (TG_FLAG_ASK_PASSWORD), with their MESSAGE. */
    ASK_LOCKOUT,        /* biometryLockout "lockout" */
    ASK_BOOT,           /* passwordRequired "boot" */
    ASK_MAX_TRIES,      /* PROGRESS prompt, then authenticationFailed "maxTries" */
    LOCKOUT_IN_BACKOFF, /* biometryLockout with the back-off line and no ASK_PASSWORD flag */
    /* Answers to VERIFY_PASSWORD. */
    PASSWORD_OK,       /* two keepalives, then TG_OK "password" BY_PASSWORD "Password accepted" */
    PASSWORD_WRONG,    /* authenticationFailed "wrongPassword" BY_PASSWORD "Wrong password" */
    PASSWORD_BACKOFF,  /* passwordBackoff "backoff" SECONDS 60 */
    PASSWORD_NOT_SET,  /* passwordNotSet "passwordNotSet" */
    PASSWORD_INTERNAL, /* TG_ERR_INTERNAL "passwordService" */
    PASSWORD_NO_CODE,  /* a RESULT without CODE (a malformed reply) */
};

#define FAKE_MAX_CONNS 3

/* Fixed delays of the fake daemon, which create a situation (never a wait for one): a RESULT
 * sent past the silence deadline, and keepalives at the daemon's pace. */
#define FAKE_SLOW_MS      (TG_SILENCE_DEADLINE_MS + 300)
#define FAKE_KEEPALIVE_MS 250

#define FAKE_TEXT_LOCKED   "Fingerprint locked after 5 failed attempts: enter your password"
#define FAKE_TEXT_BOOT     "Enter your password: it is required once after the computer starts"
#define FAKE_TEXT_MAXTRIES "Fingerprint not recognised after 2 tries: use your password"
#define FAKE_TEXT_WRONG    "Wrong password"
#define FAKE_TEXT_BACKOFF  "Too many wrong passwords: try again in 1 minute"
#define FAKE_TEXT_NOT_SET  "This account has no usable password"

/* One connection the fake daemon serves. */
struct fake_conn {
    enum behaviour behaviour;
    bool got_request;
    bool saw_close;     /* the module hung up after it returned */
    bool hung_up_early; /* the module hung up while the daemon delayed its next frame */
    uint8_t req[TG_FRAME_BUFFER];
    struct tg_frame request;
};

struct fake_server {
    int listen_fd;
    int nconn;     /* connections to accept, one after the other */
    int die_after; /* after serving this many, stop listening and remove the socket (0: never) */
    int died[2];   /* pipe: written once it stopped listening */
    int sent[2];   /* pipe: written once a delayed frame was sent (SLOW_PROMPT_MATCH) */
    pthread_t thread;
    struct fake_conn conn[FAKE_MAX_CONNS];
};

/* What the conversation was shown, in order, and how it answers. */
#define FAKE_MAX_SHOWN 16
struct shown {
    bool fail;          /* every call fails, as a client that went away */
    const char *answer; /* the reply to PAM_PROMPT_ECHO_OFF (NULL: the conversation fails) */
    int wait_fd; /* >= 0: a prompt waits until this becomes readable (an event), 5 s at most */
    bool wait_on_info; /* a PAM_TEXT_INFO message waits for wait_fd too (a slow conversation) */
    int n;
    int prompts; /* messages that asked for input */
    int style[FAKE_MAX_SHOWN];
    char text[FAKE_MAX_SHOWN][TG_MAX_STRING + 1];
};

struct run {
    int rc;
    uint64_t ms;
    struct shown shown;
    char authtok[TG_MAX_STRING + 1]; /* PAM_AUTHTOK left by the stack (pam_probe), "" if none */
    bool has_authtok;
};

/* The test's surroundings, filled by fake_init. */
struct fake_env {
    char dir[PATH_MAX];
    char module[PATH_MAX];
    char probe[PATH_MAX];
    char sock[PATH_MAX + 16];
};

/* Module and probe paths, a temp dir (prefix like "/tmp/tg-pam"), English, no SSH session.
 * NULL, or what could not be had. */
const char *fake_init(struct fake_env *env, const char *so, const char *prefix);
/* Removes the service files written and the temp dir. */
void fake_cleanup(const struct fake_env *env);

/* Writes a service file; every "MODULE" in lines becomes the module's path, "PROBE" the probe's
 * (a test module that shows PAM_AUTHTOK), "SOCKET" the fake daemon's socket. */
bool fake_write_stack(const struct fake_env *env, const char *name, const char *lines);

bool fake_start(struct fake_server *sv, const struct fake_env *env, int nconn,
                const enum behaviour *b);
/* Joins the server; true if a connection is left that nobody served (someone connected anyway). */
bool fake_stop(struct fake_server *sv, const struct fake_env *env);

/* Set before a run: the conversation fails, the answer to a password prompt, a PAM env entry. */
struct run_setup {
    bool fail_conv;
    const char *answer;
    int wait_fd;
    bool wait_on_info;
    const char *pam_env;
    const char *tty;
    const char *rhost;
};

void fake_run_pam(const struct fake_env *env, const char *service, const char *user,
                  const struct run_setup *setup, struct run *out);

/* One PAM authentication against a fake daemon serving these connections; true if a
 * connection was left unserved. */
bool fake_run_against(struct fake_server *sv, const struct fake_env *env, int nconn,
                      const enum behaviour *b, const char *service, const struct run_setup *setup,
                      struct run *out);

/* The conversation function recording into a struct shown. */
int fake_conv(int num, const struct pam_message **msg, struct pam_response **resp, void *appdata);

/* True if exactly one message of this style and text was shown. */
bool shown_once(const struct run *r, int style, const char *text);

#endif /* TG_FAKE_DAEMON_H */
