/* touchgate wire protocol: the one definition shared by the Swift daemon/CLI and the C PAM module. */
#ifndef TOUCHGATE_WIRE_H
#define TOUCHGATE_WIRE_H

/* The tables below (constants, X-macro lists) are laid out by hand. */
/* clang-format off */

/*
 * Frame layout (all integers big-endian):
 *
 *   offset 0  u32  length      bytes that follow this field (TG_HEADER_REST + fields),
 *                              TG_HEADER_REST <= length <= TG_MAX_FRAME
 *   offset 4  u8   version     TG_PROTOCOL_VERSION
 *   offset 5  u8   kind        TG_KIND_*
 *   offset 6  u16  flags       0 (reserved; non-zero is rejected)
 *   offset 8  u32  request_id  chosen by the client, non-zero; every reply and progress frame
 *                              echoes it, so a frame for another request is never taken as a result
 *   offset 12 fields           repeated { u16 tag, u16 len, u8 value[len] }
 *
 * Field values: TG_TYPE_INT tags carry exactly 4 bytes (signed, two's complement);
 * TG_TYPE_STRING tags carry 0..TG_MAX_STRING bytes of UTF-8 with no NUL byte.
 * A tag may appear once, except the repeatable list tags (FINGER, DEVICE) and JSON (a document
 * in pieces, joined in order).
 * Unknown kinds, unknown tags, a wrong value size, a repeated non-list tag, trailing bytes,
 * more than TG_MAX_FIELDS fields: the frame is malformed; the receiver answers (if it is the
 * daemon) with TG_ERR_BAD_REQUEST and closes the connection.
 */

#define TG_PROTOCOL_VERSION 1
#define TG_LENGTH_SIZE      4
#define TG_HEADER_REST      8       /* version + kind + flags + request_id */
#define TG_HEADER_SIZE      12      /* TG_LENGTH_SIZE + TG_HEADER_REST */
#define TG_FIELD_HEADER     4       /* tag + len */
#define TG_MAX_FRAME        8192    /* max value of the length field */
#define TG_MAX_STRING       1024
#define TG_MAX_FIELDS       64

/* Deadlines (milliseconds). Every wait on the socket is bounded. */
#define TG_CONNECT_DEADLINE_MS  1000  /* connect + sending the request */
#define TG_REPLY_DEADLINE_MS    1500  /* a short request (canEvaluate, list, …) */
#define TG_KEEPALIVE_MS          500  /* the daemon sends a keepalive at least this often during a prompt */
#define TG_SILENCE_DEADLINE_MS  1500  /* a client gives up on a prompt after this long without any frame */

/* request_id of a RESULT the daemon sends before it has read any request: the connection was
 * refused at accept (TG_ERR_BUSY; TG_ERR_SYSTEM_CANCEL while the daemon stops) or its first
 * frame could not be read (TG_ERR_BAD_REQUEST).
 * Clients never choose this id, so such a RESULT is never mistaken for another request's. */
#define TG_UNSOLICITED_ID       0xFFFFFFFFu

/* Request kinds (client -> daemon). Any request may also carry LOCALE (the language of its
 * messages) and SERVICE, TTY, RHOST (recorded in its events); docs/spec.md §6 has the tables. */
#define TG_KIND_CAN_EVALUATE     0x01  /* USER POLICY [SERVICE] [RHOST] [LOCALE] [DEVICE] */
#define TG_KIND_EVALUATE         0x02  /* USER POLICY [SERVICE] [MAX_TRIES] [TIMEOUT] [LOCALE] [TTY] [RHOST] [DEVICE]
                                        * [FLAGS] */
#define TG_KIND_CANCEL           0x03  /* (no fields) request_id = the request to cancel */
#define TG_KIND_ENROLL           0x04  /* USER FINGER [PASSWORD] [DEVICE]  (PASSWORD: needed unless the caller is root) */
#define TG_KIND_LIST             0x05  /* USER [DEVICE] */
#define TG_KIND_DELETE           0x06  /* USER (FINGER | ALL=1) [PASSWORD] [DEVICE]  (as ENROLL);
                                        * RESULT: a FINGER for each finger deleted */
#define TG_KIND_DEVICES          0x07  /* (no fields) */
#define TG_KIND_STATUS           0x08  /* USER [DEVICE] */
#define TG_KIND_ENABLE           0x09  /* USER [PASSWORD]  (as ENROLL) */
#define TG_KIND_DISABLE          0x0A  /* USER */
#define TG_KIND_LOCK             0x0B  /* USER */
#define TG_KIND_RESET            0x0C  /* USER */
#define TG_KIND_DOMAIN_STATE     0x0D  /* USER [SERVICE] */
#define TG_KIND_MONITOR          0x0E  /* [USER] */
#define TG_KIND_PASSWORD         0x0F  /* PASSWORD  (during an EVALUATE with policy biometrics-or-password: the
                                        * password the user typed at its prompt, which the daemon checks) */
#define TG_KIND_PASSWORD_SUCCESS 0x10  /* USER [SERVICE] [PASSWORD] (root only: the PAM stack verified the
                                        * password; with PASSWORD, a sealed keyring password is renewed) */
#define TG_KIND_VERIFY_PASSWORD  0x11  /* USER PASSWORD [SERVICE] [TTY] [RHOST] [LOCALE]: the daemon checks the
                                        * user's password itself (back-off applies; a success clears lockout
                                        * and passwordRequired); the user themself or root */
#define TG_KIND_KEYRING_ENABLE   0x12  /* USER PASSWORD: the daemon checks the user's login password and keeps it
                                        * sealed for keyring unlocking (the user themself or root) */
#define TG_KIND_KEYRING_DISABLE  0x13  /* USER: forgets the sealed password (the user themself or root) */
#define TG_KIND_KEYRING_RENEW    0x14  /* USER PASSWORD [SERVICE] (root only: the PAM password stack changed the
                                        * password; a sealed keyring password is renewed with it) */

/* Reply kinds (daemon -> client). */
#define TG_KIND_RESULT           0x40  /* CODE [MESSAGE] [REASON] [SECONDS] [FLAGS] [FINGER…] [DEVICE…] [DOMAIN_STATE] [JSON] */
#define TG_KIND_PROGRESS         0x41  /* PROGRESS [STYLE] [MESSAGE] [STAGE STAGES] [FLAGS] */
#define TG_KIND_EVENT            0x42  /* JSON (monitor stream) */

/* Field tags. */
#define TG_TAG_USER          1   /* string */
#define TG_TAG_POLICY        2   /* int: TG_POLICY_* */
#define TG_TAG_SERVICE       3   /* string: PAM service name */
#define TG_TAG_MAX_TRIES     4   /* int: 1..TG_MAX_TRIES_LIMIT, overrides the daemon's max_tries downwards only */
#define TG_TAG_TIMEOUT       5   /* int: seconds 1..TG_TIMEOUT_LIMIT, overrides the daemon's timeout downwards only */
#define TG_TAG_LOCALE        6   /* string: the PAM client's LC_ALL / LC_MESSAGES / LANG */
#define TG_TAG_TTY           7   /* string */
#define TG_TAG_RHOST         8   /* string */
#define TG_TAG_FINGER        9   /* string: fprintd finger name; repeatable in RESULT */
#define TG_TAG_ALL           10  /* int: 1 = all fingers */
#define TG_TAG_CODE          11  /* int: TG_OK or TG_ERR_* */
#define TG_TAG_MESSAGE       12  /* string: text for a person, in the requested language */
#define TG_TAG_STYLE         13  /* int: TG_STYLE_* */
#define TG_TAG_PROGRESS      14  /* int: TG_PROGRESS_* */
#define TG_TAG_STAGE         15  /* int */
#define TG_TAG_STAGES        16  /* int */
#define TG_TAG_DEVICE        17  /* string: reader name; in a request (CAN_EVALUATE, EVALUATE, ENROLL, LIST,
                                 * DELETE, STATUS), the reader asked for (driver, name or DRIVER/DEVICE-ID;
                                 * absent: the default reader; DELETE: every reader); repeatable in RESULT */
#define TG_TAG_REASON        18  /* string: machine reason, TG_REASON_* */
#define TG_TAG_SECONDS       19  /* int: seconds left (passwordBackoff) */
#define TG_TAG_FLAGS         20  /* int: TG_FLAG_* (EVALUATE: NO_INPUT NO_TERMINAL WANT_AUTHTOK; PROGRESS: ACCEPTS_PASSWORD;
                                 * RESULT: ASK_PASSWORD BY_PASSWORD) */
#define TG_TAG_PASSWORD      21  /* string: never logged (in a RESULT of EVALUATE: the sealed login password,
                                 * released after a match to a root caller that set WANT_AUTHTOK) */
#define TG_TAG_DOMAIN_STATE  22  /* string: hex */
#define TG_TAG_JSON          23  /* string: a JSON document (status, events); a longer one
                                   * is several JSON fields, in order, to be joined */
#define TG_TAG_LAST          23

#define TG_TYPE_INT     1
#define TG_TYPE_STRING  2
/* Type of each tag, indexed by tag (0 = no such tag). */
#define TG_TAG_TYPES { 0, \
    TG_TYPE_STRING, TG_TYPE_INT, TG_TYPE_STRING, TG_TYPE_INT, TG_TYPE_INT, TG_TYPE_STRING, \
    TG_TYPE_STRING, TG_TYPE_STRING, TG_TYPE_STRING, TG_TYPE_INT, TG_TYPE_INT, TG_TYPE_STRING, \
    TG_TYPE_INT, TG_TYPE_INT, TG_TYPE_INT, TG_TYPE_INT, TG_TYPE_STRING, TG_TYPE_STRING, \
    TG_TYPE_INT, TG_TYPE_INT, TG_TYPE_STRING, TG_TYPE_STRING, TG_TYPE_STRING }

#define TG_POLICY_BIOMETRICS              1
#define TG_POLICY_BIOMETRICS_OR_PASSWORD  2

#define TG_STYLE_INFO   1   /* PAM_TEXT_INFO */
#define TG_STYLE_ERROR  2   /* PAM_ERROR_MSG */

#define TG_PROGRESS_PROMPT        1  /* the reader is listening: show the prompt now */
#define TG_PROGRESS_RETRY         2  /* a retry hint (too short, not centred, …): not a failed match */
#define TG_PROGRESS_NO_MATCH      3  /* a failed match; the prompt goes on */
#define TG_PROGRESS_QUEUED        4  /* waiting for the reader (another prompt has it) */
#define TG_PROGRESS_ENROLL_STAGE  5  /* STAGE of STAGES done */
#define TG_PROGRESS_KEEPALIVE     6  /* nothing to show; proves the daemon is alive */
#define TG_PROGRESS_NOTE          7  /* a sentence to show (MESSAGE); nothing else changes */

/* Flags (FLAGS field). The client sends what only it knows; the daemon decides from them and says
 * what the client may do. A flag that is absent means "no": a client never infers one. */
#define TG_FLAG_NO_INPUT        0x1  /* EVALUATE: the client will not send input (GDM-style fingerprint stack) */
#define TG_FLAG_ASK_PASSWORD    0x2  /* RESULT of EVALUATE: the fingerprint cannot be used now; show MESSAGE,
                                      * ask for the password and send it in a VERIFY_PASSWORD request */
#define TG_FLAG_NO_TERMINAL     0x4  /* EVALUATE: the client reads no keys during the prompt (no terminal);
                                      * it may still ask a password afterwards */
#define TG_FLAG_ACCEPTS_PASSWORD 0x8 /* PROGRESS (prompt, queued): a password typed at this prompt may be
                                      * sent in a PASSWORD frame and the daemon checks it; without the flag
                                      * a typed password is the next module's (userFallback) */
#define TG_FLAG_BY_PASSWORD     0x10 /* RESULT: the answer judges a password the daemon checked (success:
                                      * verified; authenticationFailed: wrong); absent: not a password */
#define TG_FLAG_WANT_AUTHTOK    0x20 /* EVALUATE: after a match, release the user's sealed login password in
                                      * the RESULT's PASSWORD (pam_touchgate's authtok option; root callers
                                      * and keyring_services only) */

/* Machine reasons (REASON): which case of a code applies (docs/spec.md §2 has the table). */
#define TG_REASON_MAX_TRIES          "maxTries"
#define TG_REASON_WRONG_PASSWORD     "wrongPassword"
#define TG_REASON_SUSPEND            "suspend"
#define TG_REASON_SHUTDOWN           "shutdown"
#define TG_REASON_CANCELLED          "cancelled"
#define TG_REASON_CLIENT_GONE        "clientGone"
#define TG_REASON_NO_READER          "noReader"
#define TG_REASON_REMOVED            "removed"
#define TG_REASON_TOO_HOT            "tooHot"
#define TG_REASON_BUSY               "busy"
#define TG_REASON_READER_ERROR       "readerError"
#define TG_REASON_REMOTE             "remote"
#define TG_REASON_PRINTS_UNSAFE      "printsUnsafe"
#define TG_REASON_PRINTS_SEALED      "printsSealed"
#define TG_REASON_PROTOCOL           "protocol"
#define TG_REASON_NO_PRINTS          "noPrints"
#define TG_REASON_NOT_ENABLED        "notEnabled"
#define TG_REASON_LOCKOUT            "lockout"
#define TG_REASON_STATE_UNREADABLE   "stateUnreadable"
#define TG_REASON_BOOT               "boot"
#define TG_REASON_IDLE               "idle"
#define TG_REASON_INTERVAL           "interval"
#define TG_REASON_ENROLLMENT_CHANGED "enrollmentChanged"
#define TG_REASON_ADMIN_LOCK         "adminLock"
#define TG_REASON_BACKOFF            "backoff"
#define TG_REASON_PASSWORD_NOT_SET   "passwordNotSet"
#define TG_REASON_PASSWORD_NEEDED    "passwordNeeded"
#define TG_REASON_STORAGE            "storage"
#define TG_REASON_PASSWORD_SERVICE   "passwordService"
#define TG_REASON_STORAGE_FULL       "storageFull"
#define TG_REASON_TIMEOUT            "timeout"
#define TG_REASON_TEMPLATE_DAMAGED   "templateDamaged"
#define TG_REASON_DUPLICATE          "duplicate"
#define TG_REASON_PASSWORD           "password"
#define TG_REASON_PAM_STACK          "pamStack"
#define TG_REASON_PASSWORD_SUCCESS   "passwordSuccess"
#define TG_REASON_NOT_DELETED_FROM_READER "notDeletedFromReader"

#define TG_MAX_TRIES_LIMIT  100
#define TG_TIMEOUT_LIMIT    3600

/* Outcome codes: 0 = success; LAError numbers (docs/spec.md §2); touchgate's own below -2000. */
#define TG_OK                          0
#define TG_ERR_AUTHENTICATION_FAILED  (-1)   /* FLAGS BY_PASSWORD (REASON wrongPassword) when it was a password */
#define TG_ERR_USER_CANCEL            (-2)
#define TG_ERR_USER_FALLBACK          (-3)
#define TG_ERR_SYSTEM_CANCEL          (-4)
#define TG_ERR_PASSWORD_NOT_SET       (-5)
#define TG_ERR_BIOMETRY_NOT_AVAILABLE (-6)
#define TG_ERR_BIOMETRY_NOT_ENROLLED  (-7)
#define TG_ERR_BIOMETRY_LOCKOUT       (-8)
#define TG_ERR_APP_CANCEL             (-9)
#define TG_ERR_INVALID_CONTEXT        (-10)
#define TG_ERR_PASSWORD_REQUIRED      (-11)
#define TG_ERR_PASSWORD_BACKOFF       (-12)
#define TG_ERR_NOT_INTERACTIVE        (-1004)
#define TG_ERR_USER_UNKNOWN           (-2001)  /* no such account */
#define TG_ERR_NOT_PERMITTED          (-2002)  /* the peer may not do this (SO_PEERCRED) */
#define TG_ERR_BAD_REQUEST            (-2003)  /* malformed, oversized or unknown message */
#define TG_ERR_INTERNAL               (-2004)  /* a failure inside the daemon (storage, password service) */
#define TG_ERR_NOT_FOUND              (-2005)  /* no such finger enrolled */
#define TG_ERR_TIMEOUT                (-2006)  /* no finger within `timeout` seconds */
#define TG_ERR_TEMPLATE_DAMAGED       (-2007)  /* every enrolled print of the user is damaged; FINGER names them */
#define TG_ERR_BUSY                   (-2008)  /* too many connections (from this user, or in all), or account look-ups */
#define TG_ERR_DUPLICATE              (-2009)  /* enroll: the finger is already enrolled (for this or another user) */

/* clang-format on */

/* Whether a frame with TG_UNSOLICITED_ID stands as the answer to a client's request: only the
 * daemon's refusal of a request it never read, a RESULT whose CODE is TG_ERR_BUSY,
 * TG_ERR_BAD_REQUEST or TG_ERR_SYSTEM_CANCEL (the daemon stopping as it accepted the connection).
 * The one statement of the rule for every client (docs/spec.md §6). */
static inline int tg_unsolicited_refusal(int kind, int has_code, int code)
{
    return kind == TG_KIND_RESULT && has_code &&
           (code == TG_ERR_BUSY || code == TG_ERR_BAD_REQUEST || code == TG_ERR_SYSTEM_CANCEL);
}

#endif /* TOUCHGATE_WIRE_H */
