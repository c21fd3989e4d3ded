/* A scripted fake touchgated and real PAM runs against it, shared by the PAM run test programs. */
#include "fake_daemon.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake.h"

static void result(int fd, uint32_t id, int32_t code, const char *reason, const char *message,
                   int32_t flags, int32_t seconds)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_writer w;
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, id);
    fake_put_result(&w, code, reason, seconds, flags, message);
    fake_send(fd, &w);
}

/* A fixed delay before the daemon's next frame, watching the connection meanwhile: false (and
 * hung_up_early) if the module hung up, or sent anything, before the delay was over. */
static bool delay_frame(int fd, struct fake_conn *c, int ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    c->hung_up_early = poll(&pfd, 1, ms) != 0;
    return !c->hung_up_early;
}

static void serve_one(struct fake_server *sv, int fd, struct fake_conn *c)
{
    if (c->behaviour == STOPPING_UNSOLICITED) {
        result(fd, TG_UNSOLICITED_ID, TG_ERR_SYSTEM_CANCEL, TG_REASON_SHUTDOWN,
               "Fingerprint service stopping: use your password", 0, 0);
        c->saw_close = fake_await_close(fd, 10000);
        return;
    }
    if (c->behaviour == BUSY_UNSOLICITED || c->behaviour == UNSOLICITED_OK) {
        /* Refused at accept: the daemon answers before it reads anything (UNSOLICITED_OK: the
         * same id with a success, which no daemon sends). */
        if (c->behaviour == BUSY_UNSOLICITED)
            result(fd, TG_UNSOLICITED_ID, TG_ERR_BUSY, TG_REASON_BUSY, "Too many connections", 0,
                   0);
        else
            result(fd, TG_UNSOLICITED_ID, TG_OK, NULL, NULL, 0, 0);
        c->saw_close = fake_await_close(fd, 10000);
        return;
    }
    c->got_request = fake_read(fd, c->req, &c->request, 5000);
    uint32_t id = c->request.request_id;
    if (!c->got_request)
        goto done;

    switch (c->behaviour) {
    case SILENT:
    case BUSY_UNSOLICITED:
    case STOPPING_UNSOLICITED:
    case UNSOLICITED_OK:
        break;
    case WRONG_ID:
        fake_result(fd, id == 1 ? 3 : (id ^ 1), TG_OK, NULL, NULL);
        break;
    case RETRY_THEN_OK:
        fake_progress(fd, id, TG_PROGRESS_RETRY, TG_STYLE_INFO, "Swipe was too short, try again");
        fake_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
        fake_result(fd, id, TG_OK, NULL, "Fingerprint recognised");
        break;
    case MALFORMED: {
        uint8_t buf[TG_FRAME_BUFFER];
        struct tg_writer w;
        size_t n = 0;
        tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, id);
        tg_put_int(&w, TG_TAG_CODE, TG_OK);
        tg_writer_finish(&w, &n);
        buf[4] = TG_PROTOCOL_VERSION + 1;
        tg_send_all(fd, buf, n, tg_deadline_after(2000));
        break;
    }
    case HUGE_LENGTH:
        tg_send_all(fd, (const uint8_t *)"\xff\xff\xff\xff", 4, tg_deadline_after(2000));
        break;
    case CLOSE_AT_ONCE:
        return;
    case REFUSE_LOCKOUT:
        fake_result(fd, id, TG_ERR_BIOMETRY_LOCKOUT, TG_REASON_LOCKOUT, FAKE_TEXT_LOCKED);
        break;
    case NO_MATCH_TWICE:
        fake_progress(fd, id, TG_PROGRESS_NO_MATCH, TG_STYLE_ERROR, "Fingerprint not recognised");
        fake_result(fd, id, TG_ERR_AUTHENTICATION_FAILED, TG_REASON_MAX_TRIES, FAKE_TEXT_MAXTRIES);
        break;
    case KEEPALIVES_THEN_OK:
        for (int i = 0; i < 3; i++)
            fake_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
        fake_result(fd, id, TG_OK, NULL, NULL);
        break;
    case EVENT_FRAME: {
        uint8_t buf[TG_FRAME_BUFFER];
        struct tg_writer w;
        tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVENT, id);
        tg_put_string(&w, TG_TAG_JSON, "{}");
        fake_send(fd, &w);
        break;
    }
    case NOT_ENROLLED:
        fake_result(fd, id, TG_ERR_BIOMETRY_NOT_ENROLLED, TG_REASON_NO_PRINTS,
                    "No fingerprints enrolled");
        break;
    case MATCH:
        fake_result(fd, id, TG_OK, NULL, "Fingerprint recognised");
        break;
    case PROMPT_THEN_MATCH:
        fake_progress(fd, id, TG_PROGRESS_PROMPT, TG_STYLE_INFO, FAKE_TEXT_PROMPT);
        fake_result(fd, id, TG_OK, NULL, "Fingerprint recognised");
        break;
    case PROMPT_THEN_WAIT:
        fake_progress(fd, id, TG_PROGRESS_PROMPT, TG_STYLE_INFO, FAKE_TEXT_PROMPT);
        break;
    case SLOW_PROMPT_MATCH:
        fake_progress(fd, id, TG_PROGRESS_PROMPT, TG_STYLE_INFO, FAKE_TEXT_PROMPT);
        if (!delay_frame(fd, c, FAKE_SLOW_MS))
            break;
        fake_result(fd, id, TG_OK, NULL, "Fingerprint recognised");
        /* Only now may the conversation return (unsignalled, it waits out its 5 s). */
        if (write(sv->sent[1], "s", 1) != 1)
            perror("fake daemon: cannot signal the conversation");
        break;
    case SLOW_REPORT_OK:
        for (int i = 0; i < 2; i++) {
            fake_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
            if (!delay_frame(fd, c, FAKE_KEEPALIVE_MS))
                goto done;
        }
        fake_result(fd, id, TG_OK, NULL, NULL);
        break;
    case REPORT_OK:
        fake_result(fd, id, TG_OK, NULL, NULL);
        break;
    case REPORT_REFUSED:
        fake_result(fd, id, TG_ERR_NOT_PERMITTED, NULL, "Not permitted");
        break;
    case ASK_LOCKOUT:
        result(fd, id, TG_ERR_BIOMETRY_LOCKOUT, TG_REASON_LOCKOUT, FAKE_TEXT_LOCKED,
               TG_FLAG_ASK_PASSWORD, 0);
        break;
    case ASK_BOOT:
        result(fd, id, TG_ERR_PASSWORD_REQUIRED, TG_REASON_BOOT, FAKE_TEXT_BOOT,
               TG_FLAG_ASK_PASSWORD, 0);
        break;
    case ASK_MAX_TRIES:
        fake_progress(fd, id, TG_PROGRESS_PROMPT, TG_STYLE_INFO, FAKE_TEXT_PROMPT);
        result(fd, id, TG_ERR_AUTHENTICATION_FAILED, TG_REASON_MAX_TRIES, FAKE_TEXT_MAXTRIES,
               TG_FLAG_ASK_PASSWORD, 0);
        break;
    case LOCKOUT_IN_BACKOFF:
        result(fd, id, TG_ERR_BIOMETRY_LOCKOUT, TG_REASON_LOCKOUT,
               FAKE_TEXT_LOCKED "\n" FAKE_TEXT_BACKOFF, 0, 0);
        break;
    case PASSWORD_OK:
        fake_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
        fake_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
        fake_result_flags(fd, id, TG_OK, TG_REASON_PASSWORD, "Password accepted",
                          TG_FLAG_BY_PASSWORD);
        break;
    case PASSWORD_WRONG:
        fake_result_flags(fd, id, TG_ERR_AUTHENTICATION_FAILED, TG_REASON_WRONG_PASSWORD,
                          FAKE_TEXT_WRONG, TG_FLAG_BY_PASSWORD);
        break;
    case PASSWORD_BACKOFF:
        result(fd, id, TG_ERR_PASSWORD_BACKOFF, TG_REASON_BACKOFF, FAKE_TEXT_BACKOFF, 0, 60);
        break;
    case PASSWORD_NOT_SET:
        fake_result(fd, id, TG_ERR_PASSWORD_NOT_SET, TG_REASON_PASSWORD_NOT_SET, FAKE_TEXT_NOT_SET);
        break;
    case PASSWORD_INTERNAL:
        fake_result(fd, id, TG_ERR_INTERNAL, TG_REASON_PASSWORD_SERVICE,
                    "The fingerprint service had an internal error");
        break;
    case PASSWORD_NO_CODE:
        fake_result_without_code(fd, id, FAKE_TEXT_WRONG);
        break;
    }
done:
    /* The module must hang up once it has returned, whatever ended the exchange. */
    c->saw_close = fake_await_close(fd, 10000);
}

static void *serve(void *arg)
{
    struct fake_server *sv = arg;
    for (int i = 0; i < sv->nconn; i++) {
        if (sv->die_after > 0 && i == sv->die_after) {
            /* The daemon dies: nobody listens any more, and the socket file is gone. */
            close(sv->listen_fd);
            sv->listen_fd = -1;
            if (write(sv->died[1], "d", 1) != 1)
                break;
            break;
        }
        int fd = fake_accept(sv->listen_fd, 10000);
        if (fd < 0)
            break;
        serve_one(sv, fd, &sv->conn[i]);
        close(fd);
    }
    return NULL;
}

const char *fake_init(struct fake_env *env, const char *so, const char *prefix)
{
    char probe[PATH_MAX + 32];
    snprintf(env->dir, sizeof(env->dir), "%s-XXXXXX", prefix);
    const char *why = fake_setup(so, env->module, env->dir, env->sock, sizeof(env->sock));
    if (why != NULL)
        return why;
    snprintf(probe, sizeof(probe), "%.*s/tests/pam_probe.so",
             (int)(strrchr(env->module, '/') - env->module), env->module);
    if (realpath(probe, env->probe) == NULL)
        return "no probe module beside the module";
    return NULL;
}

void fake_cleanup(const struct fake_env *env)
{
    char cmd[PATH_MAX + 32];
    /* Only service files live there; the dir name came from mkdtemp. */
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", env->dir);
    if (strncmp(env->dir, "/tmp/", 5) == 0 && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", env->dir);
}

bool fake_write_stack(const struct fake_env *env, const char *name, const char *lines)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", env->dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return false;
    static const struct {
        const char *word;
        size_t len;
    } words[] = {
        { "MODULE", 6 },
        { "PROBE", 5 },
        { "SOCKET", 6 },
    };
    for (const char *p = lines; *p != '\0'; p++) {
        size_t k = 0;
        while (k < 3 && strncmp(p, words[k].word, words[k].len) != 0)
            k++;
        if (k == 3) {
            fputc(*p, f);
            continue;
        }
        fputs(k == 0 ? env->module : k == 1 ? env->probe : env->sock, f);
        p += words[k].len - 1;
    }
    return fclose(f) == 0;
}

int fake_conv(int num, const struct pam_message **msg, struct pam_response **resp, void *appdata)
{
    struct shown *s = appdata;
    struct pam_response *r = calloc((size_t)num, sizeof(*r));
    if (r == NULL)
        return PAM_BUF_ERR;
    if (s->fail) {
        s->n++;
        free(r);
        return PAM_CONV_ERR;
    }
    for (int i = 0; i < num; i++) {
        bool prompt =
            msg[i]->msg_style == PAM_PROMPT_ECHO_OFF || msg[i]->msg_style == PAM_PROMPT_ECHO_ON;
        if (s->n < FAKE_MAX_SHOWN) {
            s->style[s->n] = msg[i]->msg_style;
            snprintf(s->text[s->n], sizeof(s->text[0]), "%s", msg[i]->msg);
            s->n++;
        }
        bool waits = prompt || (s->wait_on_info && msg[i]->msg_style == PAM_TEXT_INFO);
        if (waits && s->wait_fd >= 0) {
            struct pollfd pfd = { .fd = s->wait_fd, .events = POLLIN };
            poll(&pfd, 1, 5000);
        }
        if (!prompt)
            continue;
        s->prompts++;
        if (s->answer == NULL || (r[i].resp = strdup(s->answer)) == NULL) {
            for (int k = 0; k < i; k++)
                free(r[k].resp);
            free(r);
            return PAM_CONV_ERR;
        }
    }
    *resp = r;
    return PAM_SUCCESS;
}

bool shown_once(const struct run *r, int style, const char *text)
{
    int hits = 0;
    for (int i = 0; i < r->shown.n; i++)
        hits += r->shown.style[i] == style && strcmp(r->shown.text[i], text) == 0;
    return hits == 1;
}

void fake_run_pam(const struct fake_env *env, const char *service, const char *user,
                  const struct run_setup *setup, struct run *out)
{
    static const struct run_setup none = { .wait_fd = -1 };
    pam_handle_t *pamh = NULL;
    if (setup == NULL)
        setup = &none;
    memset(out, 0, sizeof(*out));
    out->shown.fail = setup->fail_conv;
    out->shown.answer = setup->answer;
    out->shown.wait_fd = setup->wait_fd;
    out->shown.wait_on_info = setup->wait_on_info;
    struct pam_conv conv = { fake_conv, &out->shown };
    out->rc = pam_start_confdir(service, user, &conv, env->dir, &pamh);
    if (out->rc != PAM_SUCCESS)
        return;
    if (setup->tty != NULL)
        pam_set_item(pamh, PAM_TTY, setup->tty);
    if (setup->rhost != NULL)
        pam_set_item(pamh, PAM_RHOST, setup->rhost);
    if (setup->pam_env != NULL)
        pam_putenv(pamh, setup->pam_env);
    uint64_t start = tg_now_ms();
    out->rc = pam_authenticate(pamh, 0);
    out->ms = tg_now_ms() - start;
    const char *tok = pam_getenv(pamh, "TG_PROBE_AUTHTOK");
    if (tok != NULL) {
        out->has_authtok = true;
        snprintf(out->authtok, sizeof(out->authtok), "%s", tok);
    }
    pam_end(pamh, out->rc);
}

bool fake_start(struct fake_server *sv, const struct fake_env *env, int nconn,
                const enum behaviour *b)
{
    int die_after = sv->die_after;
    memset(sv, 0, sizeof(*sv));
    sv->die_after = die_after;
    sv->nconn = nconn;
    for (int i = 0; i < nconn; i++)
        sv->conn[i].behaviour = b[i];
    return pipe(sv->died) == 0 && pipe(sv->sent) == 0 &&
           fake_listen(env->sock, &sv->listen_fd, true) &&
           pthread_create(&sv->thread, NULL, serve, sv) == 0;
}

bool fake_stop(struct fake_server *sv, const struct fake_env *env)
{
    pthread_join(sv->thread, NULL);
    bool pending = sv->listen_fd >= 0 && fake_pending(sv->listen_fd);
    if (sv->listen_fd >= 0)
        close(sv->listen_fd);
    close(sv->died[0]);
    close(sv->died[1]);
    close(sv->sent[0]);
    close(sv->sent[1]);
    unlink(env->sock);
    sv->die_after = 0;
    return pending;
}

bool fake_run_against(struct fake_server *sv, const struct fake_env *env, int nconn,
                      const enum behaviour *b, const char *service, const struct run_setup *setup,
                      struct run *out)
{
    if (!fake_start(sv, env, nconn, b)) {
        memset(out, 0, sizeof(*out));
        out->rc = -1;
        return false;
    }
    fake_run_pam(env, service, "root", setup, out);
    return fake_stop(sv, env);
}
