/* The terminal tests' fake touchgated: one connection at a time, scripted by `enum daemon_act`.
 * Header-only; included by tty_bed.h after the includes and globals it uses. */
#ifndef TG_TTY_DAEMON_H
#define TG_TTY_DAEMON_H

/* ---- the fake daemon ----------------------------------------------------------------------- */

enum daemon_act {
    ANSWER_INPUT,  /* PROMPT, then waits for the client's next frame; a PASSWORD gets `answer` */
    MATCH_ON_GO,   /* PROMPT, then RESULT TG_OK when the test says go (with `note`, a NOTE just
                    * before it, as the keyring's) */
    HANG_UP_ON_GO, /* PROMPT, then closes the connection when the test says go */
    GO_SILENT,     /* PROMPT, then nothing at all (no keepalives) until the client hangs up */
    ASK_PASSWORD,  /* no PROMPT: RESULT lockout with ASK_PASSWORD; then a VERIFY_PASSWORD, if one
                    * comes before the test's "go", gets `answer` */
    REFUSE_ON_GO,  /* PROMPT, then RESULT `refusal` with `refusal_flags` when the test says go;
                    * with ASK_PASSWORD among them, a VERIFY_PASSWORD then gets `answer` */
    NO_CODE_ON_GO, /* PROMPT, then a RESULT without CODE (a malformed reply) when the test says go */
};

struct daemon {
    enum daemon_act act;
    bool queued;    /* QUEUED (behind another prompt) instead of PROMPT */
    int32_t answer; /* RESULT code for a PASSWORD */
    const char *answer_reason;
    const char *answer_message;
    bool takes_no_password; /* the prompt is not marked ACCEPTS_PASSWORD, whatever the policy */
    bool unjudged;          /* a password's answer lacks BY_PASSWORD (as from an older daemon) */
    int32_t refusal;        /* REFUSE_ON_GO: the RESULT's code, */
    int32_t refusal_flags;  /* and its FLAGS */
    const char *note;       /* MATCH_ON_GO: a NOTE's text sent before the RESULT, or NULL */
    enum { ANSWERS, HANGS_UP, FALLS_SILENT } after_password; /* what a PASSWORD gets */
    int listen_fd;
    int go[2]; /* pipe: the test's "go" */
    pthread_t thread;
    /* What the daemon saw. */
    bool got_request;
    uint8_t req[TG_FRAME_BUFFER];
    struct tg_frame request;
    int next_kind; /* the frame after EVALUATE: its kind, 0 = hang-up, -1 = nothing */
    char password[TG_MAX_STRING + 1];
    bool saw_close;
    bool verify_came; /* ASK_PASSWORD: a second connection brought VERIFY_PASSWORD */
};

static inline bool wait_go(struct daemon *d)
{
    struct pollfd pfd = { .fd = d->go[0], .events = POLLIN };
    char c;
    return poll(&pfd, 1, 10000) == 1 && read(d->go[0], &c, 1) == 1;
}

/* As the daemon marks them: a success or authenticationFailed answering a password judges it. */
static inline int32_t judged(const struct daemon *d)
{
    bool judgement = d->answer == TG_OK || d->answer == TG_ERR_AUTHENTICATION_FAILED;
    return judgement && !d->unjudged ? TG_FLAG_BY_PASSWORD : 0;
}

/* As the daemon decides it: policy biometrics-or-password, from a client that reads keys. */
static inline int32_t prompt_flags(const struct daemon *d)
{
    int32_t policy = 0, flags = 0;
    tg_frame_int(&d->request, TG_TAG_POLICY, &policy);
    tg_frame_int(&d->request, TG_TAG_FLAGS, &flags);
    bool takes = policy == TG_POLICY_BIOMETRICS_OR_PASSWORD &&
                 (flags & (TG_FLAG_NO_INPUT | TG_FLAG_NO_TERMINAL)) == 0 && !d->takes_no_password;
    return takes ? TG_FLAG_ACCEPTS_PASSWORD : 0;
}

static inline void answer_input(struct daemon *d, int fd, uint32_t id)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_frame f;
    size_t len = 0;
    enum tg_io_status st = tg_read_frame(fd, buf, sizeof(buf), &len, tg_deadline_after(10000));
    if (st == TG_IO_EOF) {
        d->next_kind = 0;
        return;
    }
    if (st != TG_IO_OK || tg_frame_decode(buf, len, &f) != TG_CODEC_OK || f.request_id != id)
        return;
    d->next_kind = f.kind;
    if (f.kind == TG_KIND_PASSWORD) {
        tg_frame_string(&f, TG_TAG_PASSWORD, d->password, sizeof(d->password));
        if (d->after_password == HANGS_UP)
            shutdown(fd, SHUT_RDWR); /* as a daemon that died: the module reads end of file */
        if (d->after_password == ANSWERS)
            fake_result_flags(fd, id, d->answer, d->answer_reason, d->answer_message, judged(d));
    }
    /* A CANCEL is deliberately left unanswered, and the prompt kept alive with keepalives at
     * the daemon's pace until the module hangs up: a module that waited for an answer would
     * never return, and run_tty's deadline would fail the test. */
    while (f.kind == TG_KIND_CANCEL) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        if (poll(&pfd, 1, TG_KEEPALIVE_MS) != 0)
            return; /* the hang-up (or anything else): the module is done with us */
        fake_progress(fd, id, TG_PROGRESS_KEEPALIVE, 0, NULL);
    }
}

/* The password step's connection: VERIFY_PASSWORD, answered with d->answer. Accepts until the
 * test's "go" (sent once the client has finished), so a step that never connects ends there. */
static inline void verify_password(struct daemon *d)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_frame f;
    struct pollfd fds[2] = { { .fd = d->listen_fd, .events = POLLIN },
                             { .fd = d->go[0], .events = POLLIN } };
    if (poll(fds, 2, 10000) <= 0 || fds[0].revents == 0)
        return;
    int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (fake_read(fd, buf, &f, 5000) && f.kind == TG_KIND_VERIFY_PASSWORD) {
        d->verify_came = true;
        tg_frame_string(&f, TG_TAG_PASSWORD, d->password, sizeof(d->password));
        fake_result_flags(fd, f.request_id, d->answer, d->answer_reason, d->answer_message,
                          judged(d));
    }
    fake_await_close(fd, 10000);
    close(fd);
}

static inline void *daemon_main(void *arg)
{
    struct daemon *d = arg;
    int fd = fake_accept(d->listen_fd, 10000);
    if (fd < 0)
        return NULL;
    d->got_request = fake_read(fd, d->req, &d->request, 5000);
    uint32_t id = d->request.request_id;
    if (!d->got_request)
        goto done;
    if (d->act == ASK_PASSWORD) {
        uint8_t buf[TG_FRAME_BUFFER];
        struct tg_writer w;
        tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, id);
        tg_put_int(&w, TG_TAG_CODE, TG_ERR_BIOMETRY_LOCKOUT);
        tg_put_string(&w, TG_TAG_REASON, TG_REASON_LOCKOUT);
        tg_put_int(&w, TG_TAG_FLAGS, TG_FLAG_ASK_PASSWORD);
        tg_put_string(&w, TG_TAG_MESSAGE, TEXT_LOCKED);
        fake_send(fd, &w);
        d->saw_close = fake_await_close(fd, 10000);
        close(fd);
        verify_password(d);
        return NULL;
    }
    if (d->queued)
        fake_progress_flags(fd, id, TG_PROGRESS_QUEUED, TG_STYLE_INFO, TEXT_QUEUED,
                            prompt_flags(d));
    else
        fake_progress_flags(fd, id, TG_PROGRESS_PROMPT, TG_STYLE_INFO, FAKE_TEXT_PROMPT,
                            prompt_flags(d));
    switch (d->act) {
    case ANSWER_INPUT:
        answer_input(d, fd, id);
        break;
    case MATCH_ON_GO:
        if (!wait_go(d))
            break;
        if (d->note != NULL) {
            /* The NOTE and the RESULT in one send: the RESULT waits in the socket while the note
             * is shown, as a daemon's does when both leave together, never a moment later. */
            uint8_t buf[2 * TG_FRAME_BUFFER];
            size_t note_len = 0, result_len = 0;
            struct tg_writer w;
            tg_writer_init(&w, buf, TG_FRAME_BUFFER, TG_KIND_PROGRESS, id);
            tg_put_int(&w, TG_TAG_PROGRESS, TG_PROGRESS_NOTE);
            tg_put_int(&w, TG_TAG_STYLE, TG_STYLE_INFO);
            tg_put_string(&w, TG_TAG_MESSAGE, d->note);
            bool encoded = tg_writer_finish(&w, &note_len) == TG_CODEC_OK;
            tg_writer_init(&w, buf + note_len, TG_FRAME_BUFFER, TG_KIND_RESULT, id);
            tg_put_int(&w, TG_TAG_CODE, TG_OK);
            tg_put_string(&w, TG_TAG_MESSAGE, "Fingerprint recognised");
            if (encoded && tg_writer_finish(&w, &result_len) == TG_CODEC_OK)
                tg_send_all(fd, buf, note_len + result_len, tg_deadline_after(2000));
            break;
        }
        fake_result(fd, id, TG_OK, NULL, "Fingerprint recognised");
        break;
    case NO_CODE_ON_GO:
        if (wait_go(d))
            fake_result_without_code(fd, id, TEXT_REFUSED);
        break;
    case REFUSE_ON_GO:
        if (!wait_go(d))
            break;
        fake_result_flags(fd, id, d->refusal, NULL, TEXT_REFUSED, d->refusal_flags);
        d->saw_close = fake_await_close(fd, 10000);
        close(fd);
        if ((d->refusal_flags & TG_FLAG_ASK_PASSWORD) != 0)
            verify_password(d);
        return NULL;
    case HANG_UP_ON_GO:
        wait_go(d);
        close(fd);
        return NULL;
    case GO_SILENT:
    case ASK_PASSWORD:
        break;
    }
done:
    d->saw_close = fake_await_close(fd, 10000);
    close(fd);
    return NULL;
}

#endif /* TG_TTY_DAEMON_H */
