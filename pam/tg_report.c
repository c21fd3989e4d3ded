/* Report mode: tells touchgated that this stack's password module verified the password. */
#include "tg_report.h"

#include <string.h>
#include <unistd.h>

#include "tg_client.h"
#include "tg_env.h"
#include "tg_module.h"

/* The answer is only logged; the daemon accepts the report from root callers alone (SO_PEERCRED),
 * so no user process can clear its own lockout this way. */
int tg_report_password_success(pam_handle_t *pamh, const struct tg_options *opt)
{
    uint8_t req[TG_FRAME_BUFFER];
    uint8_t reply[TG_FRAME_BUFFER];
    struct tg_writer w;
    struct tg_frame frame;
    const void *matched = NULL;
    size_t len = 0;
    int fd = -1;
    int32_t code = 0;
    uint32_t id = tg_new_request_id();
    /* PAM_USER, never pam_get_user: report mode must not prompt for anything. */
    const char *user = tg_pam_string(pamh, PAM_USER);
    const char *service = tg_pam_string(pamh, PAM_SERVICE);
    enum tg_io_status io;

    if (pam_get_data(pamh, TG_MATCH_KEY, &matched) == PAM_SUCCESS && matched != NULL) {
        TG_DEBUG(opt, pamh,
                 "report: the fingerprint matched in this transaction, nothing to report");
        goto done;
    }
    if (user == NULL) {
        TG_DEBUG(opt, pamh, "report: no user");
        goto done;
    }
    tg_writer_init(&w, req, sizeof(req), TG_KIND_PASSWORD_SUCCESS, id);
    tg_put_string(&w, TG_TAG_USER, user);
    tg_put_string(&w, TG_TAG_SERVICE, service != NULL ? service : "");
    /* authtok: the password the stack just verified renews a sealed keyring password. */
    const void *authtok = NULL;
    if (opt->authtok && pam_get_item(pamh, PAM_AUTHTOK, &authtok) == PAM_SUCCESS &&
        authtok != NULL && *(const char *)authtok != '\0')
        tg_put_string(&w, TG_TAG_PASSWORD, (const char *)authtok);
    if (!tg_finish_request(pamh, &w, &len))
        goto done;
    uint64_t deadline = tg_deadline_after(TG_CONNECT_DEADLINE_MS);
    if ((io = tg_connect(opt->socket, deadline, &fd)) != TG_IO_OK ||
        (io = tg_send_all(fd, req, len, deadline)) != TG_IO_OK ||
        (io = tg_read_frame(fd, reply, sizeof(reply), &len,
                            tg_deadline_after(TG_REPLY_DEADLINE_MS))) != TG_IO_OK) {
        TG_DEBUG(opt, pamh, "report: %s", tg_io_strerror(io));
        goto done;
    }
    if (tg_frame_decode(reply, len, &frame) != TG_CODEC_OK || !tg_answers(&frame, id) ||
        frame.kind != TG_KIND_RESULT || !tg_frame_int(&frame, TG_TAG_CODE, &code)) {
        TG_DEBUG(opt, pamh, "report: bad reply");
        goto done;
    }
    TG_DEBUG(opt, pamh, "report: password success for %s -> code %d%s", user, (int)code,
             frame.request_id == TG_UNSOLICITED_ID ? " (refused unread)" : "");
done:
    explicit_bzero(req, sizeof(req)); /* it may hold the password */
    if (fd >= 0)
        close(fd);
    return PAM_IGNORE;
}
