/* The EVALUATE request that starts a fingerprint prompt: what the daemon is told, and the connection. */
#include "tg_evaluate.h"

#include "tg_client.h"
#include "tg_env.h"
#include "tg_outcome.h"

/* What only the module knows, told to the daemon, which decides from it what a password may do
 * (docs/spec.md §6): noinput asks the person nothing at all; without a terminal no key is read
 * during the prompt. */
static int32_t local_facts(const struct tg_call *c)
{
    int32_t flags = 0;
    if (c->opt->noinput)
        flags |= TG_FLAG_NO_INPUT;
    if (c->tty.fd < 0)
        flags |= TG_FLAG_NO_TERMINAL;
    if (c->opt->authtok)
        flags |= TG_FLAG_WANT_AUTHTOK;
    return flags;
}

int tg_evaluate_start(const struct tg_call *c, uint32_t id, int *sock)
{
    uint8_t req[TG_FRAME_BUFFER];
    struct tg_writer w;
    size_t len = 0;
    const struct tg_options *opt = c->opt;
    const char *service = tg_pam_string(c->pamh, PAM_SERVICE);
    const char *tty = tg_pam_string(c->pamh, PAM_TTY);
    const char *rhost = tg_remote_host(c->pamh);

    tg_writer_init(&w, req, sizeof(req), TG_KIND_EVALUATE, id);
    tg_put_string(&w, TG_TAG_USER, c->user);
    tg_put_int(&w, TG_TAG_POLICY, opt->policy);
    tg_put_string(&w, TG_TAG_SERVICE, service != NULL ? service : "");
    if (opt->max_tries > 0)
        tg_put_int(&w, TG_TAG_MAX_TRIES, opt->max_tries);
    if (opt->timeout_s > 0)
        tg_put_int(&w, TG_TAG_TIMEOUT, opt->timeout_s);
    if (c->locale != NULL)
        tg_put_string(&w, TG_TAG_LOCALE, c->locale);
    if (tty != NULL)
        tg_put_string(&w, TG_TAG_TTY, tty);
    /* RHOST is always sent when known (the daemon applies allow_remote); one we cannot encode
     * fails the request rather than being dropped, which would make a remote session look local. */
    if (rhost != NULL)
        tg_put_string(&w, TG_TAG_RHOST, rhost);
    /* The reader asked for; without it the daemon uses its default reader. A name that matches no
     * reader is refused as "no reader", and the password follows. */
    if (opt->device != NULL)
        tg_put_string(&w, TG_TAG_DEVICE, opt->device);
    if (local_facts(c) != 0)
        tg_put_int(&w, TG_TAG_FLAGS, local_facts(c));
    if (!tg_finish_request(c->pamh, &w, &len))
        return tg_failure_to_pam(TG_FAIL_BAD_REQUEST);

    uint64_t deadline = tg_deadline_after(TG_CONNECT_DEADLINE_MS);
    enum tg_io_status io = tg_connect(opt->socket, deadline, sock);
    if (io != TG_IO_OK) {
        /* No daemon, no prompt: fingerprint is simply not there, and the password follows. */
        TG_DEBUG(opt, c->pamh, "connect %s: %s", opt->socket, tg_io_strerror(io));
        return tg_failure_to_pam(io == TG_IO_TIMEOUT ? TG_FAIL_TIMEOUT : TG_FAIL_UNREACHABLE);
    }
    TG_DEBUG(opt, c->pamh,
             "evaluate user %s service %s policy %d rhost %s device %s keys %s request %08x",
             c->user, service != NULL ? service : "", opt->policy, rhost != NULL ? rhost : "-",
             opt->device != NULL ? opt->device : "-", c->tty.fd >= 0 ? "yes" : "no", (unsigned)id);
    if ((io = tg_send_request(*sock, req, len, deadline)) != TG_IO_OK) {
        TG_DEBUG(opt, c->pamh, "send: %s", tg_io_strerror(io));
        return tg_failure_to_pam(io == TG_IO_TIMEOUT ? TG_FAIL_TIMEOUT : TG_FAIL_DISCONNECTED);
    }
    return PAM_SUCCESS;
}
