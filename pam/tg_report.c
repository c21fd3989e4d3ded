/* Report lines: telling touchgated what this stack's password modules did — a password verified
 * (auth, `report`), or changed (password, `authtok`). The answers are only logged. */
#include "tg_report.h"

#include <string.h>
#include <unistd.h>

#include "tg_client.h"
#include "tg_env.h"
#include "tg_module.h"

/* PAM_AUTHTOK when set and not empty, else NULL. */
static const char *stack_authtok(pam_handle_t *pamh)
{
    const void *authtok = NULL;
    if (pam_get_item(pamh, PAM_AUTHTOK, &authtok) != PAM_SUCCESS || authtok == NULL ||
        *(const char *)authtok == '\0')
        return NULL;
    return authtok;
}

/* PAM_AUTHTOK when the wire can carry it, else NULL, logged (without the password): one that is
 * not UTF-8 or longer than a field only costs the renewal of a sealed keyring password. */
static const char *sendable_authtok(pam_handle_t *pamh, const char *what)
{
    const char *authtok = stack_authtok(pamh);
    if (authtok == NULL)
        return NULL;
    enum tg_codec_status cs =
        tg_string_check((const uint8_t *)authtok, strnlen(authtok, TG_MAX_STRING + 1));
    if (cs == TG_CODEC_OK)
        return authtok;
    pam_syslog(pamh, LOG_NOTICE, "%s: PAM_AUTHTOK cannot be sent (%s): no keyring password renewed",
               what, tg_codec_strerror(cs));
    return NULL;
}

/* Reads frames until the RESULT of request `id`, skipping the keepalives the daemon sends while it
 * works, within the deadline; false (logged) on anything else. */
static bool read_result(pam_handle_t *pamh, const struct tg_options *opt, const char *what, int fd,
                        uint32_t id, uint8_t *reply, struct tg_frame *frame)
{
    uint64_t deadline = tg_deadline_after(TG_REPLY_DEADLINE_MS);
    size_t len = 0;
    int32_t progress = 0;

    for (;;) {
        enum tg_io_status io = tg_read_frame(fd, reply, TG_FRAME_BUFFER, &len, deadline);
        if (io != TG_IO_OK) {
            TG_DEBUG(opt, pamh, "%s: %s", what, tg_io_strerror(io));
            return false;
        }
        if (tg_frame_decode(reply, len, frame) != TG_CODEC_OK || !tg_answers(frame, id))
            break;
        if (frame->kind == TG_KIND_RESULT)
            return true;
        if (frame->kind != TG_KIND_PROGRESS || !tg_frame_int(frame, TG_TAG_PROGRESS, &progress) ||
            progress != TG_PROGRESS_KEEPALIVE)
            break; /* nothing but keepalives may come before the answer */
        if (tg_remaining_ms(deadline) == 0) {
            TG_DEBUG(opt, pamh, "%s: %s", what, tg_io_strerror(TG_IO_TIMEOUT));
            return false; /* a keepalive read past the deadline does not prolong the wait */
        }
    }
    TG_DEBUG(opt, pamh, "%s: bad reply", what);
    return false;
}

/* Sends one request of `kind` for `user` (with the password when not NULL), waits for its RESULT
 * within the deadlines, logs the code. The request buffer is wiped: it may hold the password. */
static void tell_daemon(pam_handle_t *pamh, const struct tg_options *opt, uint8_t kind,
                        const char *what, const char *user, const char *password)
{
    uint8_t req[TG_FRAME_BUFFER];
    uint8_t reply[TG_FRAME_BUFFER];
    struct tg_writer w;
    struct tg_frame frame;
    size_t len = 0;
    int fd = -1;
    int32_t code = 0;
    uint32_t id = tg_new_request_id();
    const char *service = tg_pam_string(pamh, PAM_SERVICE);
    enum tg_io_status io;

    tg_writer_init(&w, req, sizeof(req), kind, id);
    tg_put_string(&w, TG_TAG_USER, user);
    tg_put_string(&w, TG_TAG_SERVICE, service != NULL ? service : "");
    if (password != NULL)
        tg_put_string(&w, TG_TAG_PASSWORD, password);
    if (!tg_finish_request(pamh, &w, &len))
        goto done;
    uint64_t deadline = tg_deadline_after(TG_CONNECT_DEADLINE_MS);
    if ((io = tg_connect(opt->socket, deadline, &fd)) != TG_IO_OK ||
        (io = tg_send_request(fd, req, len, deadline)) != TG_IO_OK) {
        TG_DEBUG(opt, pamh, "%s: %s", what, tg_io_strerror(io));
        goto done;
    }
    if (!read_result(pamh, opt, what, fd, id, reply, &frame))
        goto done;
    if (!tg_frame_int(&frame, TG_TAG_CODE, &code)) {
        TG_DEBUG(opt, pamh, "%s: bad reply", what);
        goto done;
    }
    TG_DEBUG(opt, pamh, "%s for %s -> code %d%s", what, user, (int)code,
             frame.request_id == TG_UNSOLICITED_ID ? " (refused unread)" : "");
done:
    explicit_bzero(req, sizeof(req));
    if (fd >= 0)
        close(fd);
}

/* The daemon accepts the report from root callers alone (SO_PEERCRED), so no user process can
 * clear its own lockout this way. Reaching this line says only that the stack succeeded so far:
 * another factor may have (a smartcard, a FIDO key, pam_succeed_if), and what the report lifts (a
 * lockout, every reason that requires a password, docs/spec.md §10) only a password may. So it is
 * sent only when a password is in the stack: PAM_AUTHTOK, set by the password module that verified
 * it (or by this module, for that password module to verify). */
int tg_report_password_success(pam_handle_t *pamh, const struct tg_options *opt)
{
    const void *matched = NULL;
    /* PAM_USER, never pam_get_user: report mode must not prompt for anything. */
    const char *user = tg_pam_string(pamh, PAM_USER);

    if (pam_get_data(pamh, TG_MATCH_KEY, &matched) == PAM_SUCCESS && matched != NULL)
        TG_DEBUG(opt, pamh,
                 "report: the fingerprint matched in this transaction, nothing to report");
    else if (user == NULL)
        TG_DEBUG(opt, pamh, "report: no user");
    else if (stack_authtok(pamh) == NULL)
        TG_DEBUG(opt, pamh,
                 "report: no password in this stack (PAM_AUTHTOK unset or empty), "
                 "nothing to report");
    else /* authtok: the password the stack just verified renews a sealed keyring password; the
          * report itself goes without a password the wire cannot carry */
        tell_daemon(pamh, opt, TG_KIND_PASSWORD_SUCCESS, "report: password success", user,
                    opt->authtok ? sendable_authtok(pamh, "report") : NULL);
    return PAM_IGNORE;
}

int tg_report_password_change(pam_handle_t *pamh, int flags, const struct tg_options *opt)
{
    const char *user = tg_pam_string(pamh, PAM_USER);

    /* Only once the password module has set the new password (not in the preliminary pass);
     * without a password the wire can carry there is nothing to renew, and nothing is sent. */
    if (!(flags & PAM_UPDATE_AUTHTOK) || !opt->authtok || user == NULL)
        return PAM_IGNORE;
    const char *password = sendable_authtok(pamh, "password change");
    if (password != NULL)
        tell_daemon(pamh, opt, TG_KIND_KEYRING_RENEW, "password change", user, password);
    return PAM_IGNORE;
}
