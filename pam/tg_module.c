/* What the parts of one pam_sm_authenticate call share: conversation lines, request ids. */
#include "tg_module.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

bool tg_say(const struct tg_call *c, int style, const char *text)
{
    int rc = pam_prompt(c->pamh, style, NULL, "%s", text);
    if (rc != PAM_SUCCESS)
        TG_DEBUG(c->opt, c->pamh, "conversation refused a message: %s", pam_strerror(c->pamh, rc));
    return rc == PAM_SUCCESS;
}

/* A correlation id, not a secret (the connection is ours alone): if the kernel's pool is not
 * ready yet (early boot), a clock-based id is good enough and never blocks a login. */
uint32_t tg_new_request_id(void)
{
    uint32_t id = 0;
    if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        id = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec ^ ((uint32_t)getpid() << 12);
    }
    /* 0 is invalid on the wire; TG_UNSOLICITED_ID would make a refusal look like our reply. */
    if (id == 0 || id == TG_UNSOLICITED_ID)
        id = 1;
    return id;
}

/* The unsolicited id is the daemon's refusal of a request it never read (touchgate_wire.h): busy
 * at accept, or a first frame it could not read. Under it any other code, a success above all,
 * answers nothing we asked: a malformed reply. */
bool tg_answers(const struct tg_frame *frame, uint32_t id)
{
    if (frame->request_id == TG_UNSOLICITED_ID) {
        int32_t code = 0;
        bool has_code = tg_frame_int(frame, TG_TAG_CODE, &code);
        return tg_unsolicited_refusal(frame->kind, has_code, code);
    }
    return frame->request_id == id;
}

bool tg_password_rejected(int32_t code, int32_t flags)
{
    return code == TG_ERR_PASSWORD_BACKOFF ||
           (code == TG_ERR_AUTHENTICATION_FAILED && (flags & TG_FLAG_BY_PASSWORD) != 0);
}

bool tg_finish_request(pam_handle_t *pamh, struct tg_writer *w, size_t *len)
{
    enum tg_codec_status cs = tg_writer_finish(w, len);
    if (cs != TG_CODEC_OK)
        pam_syslog(pamh, LOG_ERR, "cannot encode request: %s", tg_codec_strerror(cs));
    return cs == TG_CODEC_OK;
}

void tg_hand_over(const struct tg_call *c, const char *password)
{
    int rc = pam_set_item(c->pamh, PAM_AUTHTOK, password);
    /* Not handed on, the password module asks for it again: said, as that is not expected. */
    if (rc != PAM_SUCCESS)
        pam_syslog(c->pamh, LOG_ERR, "cannot set the typed password as PAM_AUTHTOK: %s",
                   pam_strerror(c->pamh, rc));
    else
        TG_DEBUG(c->opt, c->pamh, "typed password set as PAM_AUTHTOK");
}

const char *tg_busy_text(const struct tg_call *c)
{
    return tg_text(&c->lang, N_("Fingerprint service busy: use your password"));
}

const char *tg_refusal_text(const struct tg_call *c, const struct tg_frame *frame,
                            const char *message)
{
    /* An empty msgid would look up the catalog's header. */
    return frame->request_id == TG_UNSOLICITED_ID && message[0] != '\0' ? tg_text(&c->lang, message)
                                                                        : message;
}
