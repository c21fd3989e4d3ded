/* Fingerprint prompt without a terminal: real libpam (pam_start_confdir) runs the built module
 * against a fake daemon. */
#include "pam_bed.h"

static void test_unreachable(void)
{
    struct run r;
    int fd = -1;
    char path[PATH_MAX + 32];

    /* No socket file at all. */
    write_service("tg-absent", "socket=/nonexistent/touchgate/touchgated.sock");
    fake_run_pam(&env, "tg-absent", "root", NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "absent socket: %d", r.rc);
    CHECK(r.shown.n == 0 && r.shown.prompts == 0, "absent socket showed %d messages", r.shown.n);

    /* A socket file nobody listens on: connection refused. */
    snprintf(path, sizeof(path), "%s/refused.sock", env.dir);
    CHECK(fake_listen(path, &fd, false), "cannot bind %s", path);
    char opts[PATH_MAX + 64];
    snprintf(opts, sizeof(opts), "socket=%s", path);
    write_service("tg-refused", opts);
    fake_run_pam(&env, "tg-refused", "root", NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "refused socket: %d", r.rc);
    CHECK(r.shown.n == 0 && r.shown.prompts == 0, "refused socket showed %d messages", r.shown.n);
    if (fd >= 0)
        close(fd);
    unlink(path);

    /* An account that does not exist is refused before any connection. */
    fake_run_pam(&env, "tg-absent", "tg-no-such-user-4711", NULL, &r);
    CHECK(r.rc == PAM_USER_UNKNOWN, "unknown user: %d", r.rc);
    CHECK(r.shown.n == 0, "unknown user showed %d messages", r.shown.n);
}

static void test_fake_daemon(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup on_tty = { .wait_fd = -1, .tty = "/dev/pts/9" };
    struct run_setup remote = { .wait_fd = -1, .rhost = "192.0.2.7" };

    write_service("tg-server", "socket=SOCKET max_tries=2 debug");
    /* Invalid options are ignored and keep the values before them. */
    write_service(
        "tg-options",
        "socket=SOCKET bogus max_tries=abc max_tries=101 timeout=0 policy=nope socket=rel.sock "
        "device=");
    write_service("tg-policy", "socket=SOCKET policy=biometrics-or-password timeout=15");

    /* Retry hint relayed as TEXT_INFO, keepalive shows nothing, TG_OK -> PAM_SUCCESS. */
    run_against(&sv, RETRY_THEN_OK, "tg-server", &on_tty, &r);
    const struct tg_frame *req = &sv.conn[0].request;
    CHECK(r.rc == PAM_SUCCESS, "retry then ok: %d", r.rc);
    CHECK(shown_once(&r, PAM_TEXT_INFO, TEXT_RETRY), "retry hint not relayed as TEXT_INFO");
    CHECK(r.shown.n == 1 && r.shown.prompts == 0, "retry then ok showed %d messages", r.shown.n);
    CHECK(sv.conn[0].got_request && req->kind == TG_KIND_EVALUATE, "request was not an EVALUATE");
    CHECK(req->request_id != 0 && req->request_id != TG_UNSOLICITED_ID, "request id %#x",
          (unsigned)req->request_id);
    CHECK(frame_string_is(req, TG_TAG_USER, "root"), "USER");
    CHECK(frame_int_is(req, TG_TAG_POLICY, TG_POLICY_BIOMETRICS, true), "POLICY default");
    CHECK(frame_string_is(req, TG_TAG_SERVICE, "tg-server"), "SERVICE");
    CHECK(frame_int_is(req, TG_TAG_MAX_TRIES, 2, true), "MAX_TRIES from option");
    CHECK(frame_int_is(req, TG_TAG_TIMEOUT, 0, false), "TIMEOUT sent though not given");
    CHECK(frame_string_is(req, TG_TAG_LOCALE, "en_US.UTF-8"), "LOCALE from LANG");
    CHECK(frame_string_is(req, TG_TAG_TTY, "/dev/pts/9"), "TTY");
    CHECK(frame_string_is(req, TG_TAG_RHOST, NULL), "RHOST sent though not set");
    CHECK(frame_string_is(req, TG_TAG_DEVICE, NULL), "DEVICE sent though not given");
    CHECK(frame_int_is(req, TG_TAG_FLAGS, TG_FLAG_NO_TERMINAL, true),
          "FLAGS NO_TERMINAL (alone) not sent without a terminal (policy biometrics)");
    CHECK(sv.conn[0].saw_close, "module did not hang up");

    /* A daemon that never answers (frozen): AUTHINFO_UNAVAIL after the silence deadline, with a word. */
    run_against(&sv, SILENT, "tg-server", NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "silent daemon: %d", r.rc);
    CHECK(r.ms < FROZEN_LIMIT_MS, "silent daemon: gave up after %llu ms", (unsigned long long)r.ms);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_NOT_RESPONDING) && r.shown.n == 1,
          "silent daemon: 'not responding' not shown once");
    CHECK(sv.conn[0].saw_close, "module did not hang up on a silent daemon");

    /* A TG_OK for another request id is never taken as our result. */
    run_against(&sv, WRONG_ID, "tg-server", NULL, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "wrong request id: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_SERVICE_ERROR), "wrong request id: no error shown");

    /* The daemon's refusal before it read anything (too many connections): its own id. */
    run_against(&sv, BUSY_UNSOLICITED, "tg-server", NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "busy: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_BUSY) && r.shown.n == 1,
          "busy: %d messages, first '%s'", r.shown.n, r.shown.text[0]);

    /* A daemon stopping refuses before it read the request, so in English: the module shows the
     * sentence in the person's language, from its own catalog. */
    setenv("LC_ALL", "zh_CN.UTF-8", 1);
    run_against(&sv, STOPPING_UNSOLICITED, "tg-server", NULL, &r);
    unsetenv("LC_ALL");
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "stopping: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, "指纹服务正在停止：请使用密码") && r.shown.n == 1,
          "stopping: %d messages, first '%s'", r.shown.n, r.shown.text[0]);

    /* A malformed frame. */
    run_against(&sv, MALFORMED, "tg-server", NULL, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "malformed frame: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_SERVICE_ERROR), "malformed frame: no error shown");

    /* A length prefix beyond TG_MAX_FRAME is an error at once, not a wait for 4 GiB: the
     * "service error" line, not "not responding", proves it was not waited out. */
    run_against(&sv, HUGE_LENGTH, "tg-server", NULL, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "huge length: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_SERVICE_ERROR) && r.shown.n == 1,
          "huge length: messages");

    /* A well-formed frame of a kind that cannot answer EVALUATE. */
    run_against(&sv, EVENT_FRAME, "tg-server", NULL, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "event frame: %d", r.rc);

    /* A refusal is relayed as an error line and lets the password module run; RHOST is sent;
     * invalid options kept their defaults. */
    run_against(&sv, REFUSE_LOCKOUT, "tg-options", &remote, &r);
    req = &sv.conn[0].request;
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "lockout: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, FAKE_TEXT_LOCKED) && r.shown.n == 1, "lockout message");
    CHECK(frame_string_is(req, TG_TAG_RHOST, "192.0.2.7"), "RHOST not sent");
    CHECK(frame_int_is(req, TG_TAG_POLICY, TG_POLICY_BIOMETRICS, true),
          "invalid policy= changed POLICY");
    CHECK(frame_int_is(req, TG_TAG_MAX_TRIES, 0, false), "invalid max_tries= sent MAX_TRIES");
    CHECK(frame_int_is(req, TG_TAG_TIMEOUT, 0, false), "invalid timeout= sent TIMEOUT");
    CHECK(frame_string_is(req, TG_TAG_DEVICE, NULL), "invalid device= sent DEVICE");

    /* Error-style progress and used-up tries: both lines shown as errors, PAM_MAXTRIES. Without a
     * terminal, biometrics-or-password still takes input (the password step): no NO_INPUT. */
    run_against(&sv, NO_MATCH_TWICE, "tg-policy", NULL, &r);
    req = &sv.conn[0].request;
    CHECK(r.rc == PAM_MAXTRIES, "no match: %d", r.rc);
    CHECK(r.shown.n == 2 && r.shown.style[0] == PAM_ERROR_MSG &&
              strcmp(r.shown.text[0], TEXT_NO_MATCH) == 0 && r.shown.style[1] == PAM_ERROR_MSG &&
              strcmp(r.shown.text[1], FAKE_TEXT_MAXTRIES) == 0,
          "no match: messages");
    CHECK(r.shown.prompts == 0, "no match: asked for input without ASK_PASSWORD");
    CHECK(frame_int_is(req, TG_TAG_POLICY, TG_POLICY_BIOMETRICS_OR_PASSWORD, true),
          "policy= option");
    CHECK(frame_int_is(req, TG_TAG_TIMEOUT, 15, true), "timeout= option");
    CHECK(frame_int_is(req, TG_TAG_FLAGS, TG_FLAG_NO_TERMINAL, true),
          "FLAGS not NO_TERMINAL alone for biometrics-or-password without a terminal");

    /* Keepalives are not answers: skipped, nothing shown, the RESULT after them counts. (That
     * they restart the silence deadline is test_client's, with an injected clock.) */
    run_against(&sv, KEEPALIVES_THEN_OK, "tg-server", NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "keepalives then ok: %d", r.rc);
    CHECK(r.shown.n == 0, "keepalives showed %d messages", r.shown.n);
}

/* A RESULT that arrived while the module was busy in its own conversation is read, not thrown
 * away as silence: the conversation shows the prompt until the daemon has sent its match, past
 * the silence deadline (the fake daemon sends it FAKE_SLOW_MS after the prompt). */
static void test_reply_waiting_behind_a_slow_conversation(void)
{
    static struct fake_server sv;
    enum behaviour b = SLOW_PROMPT_MATCH;
    struct run r;

    if (!fake_start(&sv, &env, 1, &b)) {
        CHECK(false, "fake daemon did not start");
        return;
    }
    struct run_setup slow = { .wait_fd = sv.sent[0], .wait_on_info = true };
    fake_run_pam(&env, "tg-server", "root", &slow, &r);
    bool pending = fake_stop(&sv, &env);
    CHECK(!pending && !sv.conn[0].hung_up_early, "slow conversation: hung up before the result");
    CHECK(r.rc == PAM_SUCCESS, "slow conversation: %d (the waiting result was not read)", r.rc);
    CHECK(r.ms >= FAKE_SLOW_MS, "slow conversation: over after %llu ms, before the result was sent",
          (unsigned long long)r.ms);
    CHECK(shown_once(&r, PAM_TEXT_INFO, FAKE_TEXT_PROMPT) && r.shown.n == 1,
          "slow conversation: %d messages, last '%s'", r.shown.n, r.shown.text[r.shown.n - 1]);
}

/* The unsolicited id answers only a refusal sent before the request was read (busy, stopping,
 * badRequest): a success under it is a malformed reply, never PAM_SUCCESS. */
static void test_unsolicited_success(void)
{
    static struct fake_server sv;
    struct run r;

    run_against(&sv, UNSOLICITED_OK, "tg-server", NULL, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "unsolicited success: %d", r.rc);
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_SERVICE_ERROR) && r.shown.n == 1,
          "unsolicited success: %d messages, first '%s'", r.shown.n, r.shown.text[0]);
}

/* Refusals say why, except "no fingerprints": that is noise for people who never set them up. */
static void test_quiet_when_not_enrolled(void)
{
    static struct fake_server sv;
    struct run r;

    run_against(&sv, NOT_ENROLLED, "tg-server", NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "not enrolled: %d", r.rc);
    CHECK(r.shown.n == 0, "not enrolled: %d messages shown, first '%s'", r.shown.n,
          r.shown.text[0]);
    CHECK(sv.conn[0].saw_close, "not enrolled: module did not hang up");
}

/* No terminal (this test runs without one) or the noinput option: only messages; the module says
 * which (FLAGS NO_TERMINAL, NO_INPUT) and the daemon decides from them. */
static void test_noinput(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup failing = { .wait_fd = -1, .fail_conv = true };

    write_service("tg-noinput", "socket=SOCKET noinput");
    write_service("tg-noinput-bop", "socket=SOCKET noinput policy=biometrics-or-password");

    /* Messages are relayed, no hint about keys is offered, the match ends it. */
    run_against(&sv, PROMPT_THEN_MATCH, "tg-noinput", NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "noinput match: %d", r.rc);
    CHECK(shown_once(&r, PAM_TEXT_INFO, FAKE_TEXT_PROMPT) && r.shown.n == 1,
          "noinput match: %d messages shown", r.shown.n);
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_FLAGS, TG_FLAG_NO_INPUT | TG_FLAG_NO_TERMINAL,
                       true),
          "noinput: FLAGS NO_INPUT not sent");

    /* GDM style with biometrics-or-password: NO_INPUT, and the refusal line only; the password
     * service beside it takes over. Even a (wrong) ASK_PASSWORD mark asks nothing here. */
    run_against(&sv, ASK_LOCKOUT, "tg-noinput-bop", NULL, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "noinput lockout: %d", r.rc);
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_FLAGS, TG_FLAG_NO_INPUT | TG_FLAG_NO_TERMINAL,
                       true),
          "noinput biometrics-or-password: NO_INPUT not sent");
    CHECK(shown_once(&r, PAM_ERROR_MSG, FAKE_TEXT_LOCKED) && r.shown.n == 1 && r.shown.prompts == 0,
          "noinput lockout: %d messages, %d prompts", r.shown.n, r.shown.prompts);

    /* The client went away: its conversation fails on the prompt message. The module stops at
     * once and hangs up, rather than waiting out the scan (the fake never ends it). */
    run_against(&sv, PROMPT_THEN_WAIT, "tg-noinput", &failing, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "conversation error: %d", r.rc);
    CHECK(r.shown.n == 1, "conversation error: %d conversation calls", r.shown.n);
    CHECK(sv.conn[0].saw_close, "conversation error: the daemon saw no hang-up");

    /* noinput asks for nothing, not even a user name: without PAM_USER the module gives way at
     * once (the conversation would answer, and nothing may be asked of it). */
    struct run_setup answers = { .wait_fd = -1, .answer = "root" };
    write_service("tg-noinput-absent", "socket=/nonexistent/touchgate/touchgated.sock noinput");
    fake_run_pam(&env, "tg-noinput-absent", NULL, &answers, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "noinput without a user: %d", r.rc);
    CHECK(r.shown.n == 0 && r.shown.prompts == 0, "noinput without a user: %d prompts, first '%s'",
          r.shown.prompts, r.shown.text[0]);

    /* Without a terminal there is no need for the option. */
    run_against(&sv, PROMPT_THEN_MATCH, "tg-server", NULL, &r);
    CHECK(r.rc == PAM_SUCCESS && r.shown.n == 1, "no terminal: %d, %d messages", r.rc, r.shown.n);
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_FLAGS, TG_FLAG_NO_TERMINAL, true),
          "no terminal: FLAGS not NO_TERMINAL alone");
}

int main(int argc, char **argv)
{
    detach_from_terminal();
    const char *why = fake_init(&env, argc > 2 ? argv[2] : "./pam_touchgate.so", "/tmp/tg-pam");
    if (why != NULL) {
        CHECK(false, "%s", why);
        return check_summary("test_pam");
    }
    test_unreachable();
    test_fake_daemon();
    test_reply_waiting_behind_a_slow_conversation();
    test_unsolicited_success();
    test_quiet_when_not_enrolled();
    test_noinput();
    fake_cleanup(&env);
    return check_summary("test_pam");
}
