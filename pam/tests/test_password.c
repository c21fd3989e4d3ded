/* The password step of biometrics-or-password through the PAM conversation (no terminal): real
 * libpam runs the built module against a fake daemon that refuses, then judges the password. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fake.h"
#include "fake_daemon.h"

#define PASSWORD            "correct horse"
#define TEXT_NOT_RESPONDING "Fingerprint service not responding: use your password"
#define TEXT_SERVICE_ERROR  "Fingerprint service error: use your password"
#define TEXT_BUSY           "Fingerprint service busy: use your password"

static struct fake_env env;

/* The module `required`, then the probe (`optional`, PAM_IGNORE), which shows what PAM_AUTHTOK
 * the step left: the stack's result is the module's. */
static void write_stacks(void)
{
    CHECK(fake_write_stack(&env, "tg-bop",
                           "auth required MODULE socket=SOCKET policy=biometrics-or-password\n"
                           "auth optional PROBE\n") &&
              fake_write_stack(&env, "tg-bio",
                               "auth required MODULE socket=SOCKET\n"
                               "auth optional PROBE\n"),
          "cannot write the stacks");
}

/* A refusal that asks for the password, then the answer to VERIFY_PASSWORD. */
static bool two_steps(struct fake_server *sv, enum behaviour refusal, enum behaviour answer,
                      const struct run_setup *setup, struct run *r)
{
    enum behaviour b[2] = { refusal, answer };
    return fake_run_against(sv, &env, 2, b, "tg-bop", setup, r);
}

/* The refusal's one line first, then one echo-off "Password: " prompt. */
static void expect_asked(const struct run *r, const char *refusal_text, const char *name)
{
    CHECK(r->shown.n >= 2 && r->shown.style[0] == PAM_ERROR_MSG &&
              strcmp(r->shown.text[0], refusal_text) == 0,
          "%s: refusal not shown first: '%s'", name, r->shown.text[0]);
    CHECK(r->shown.n >= 2 && r->shown.style[1] == PAM_PROMPT_ECHO_OFF &&
              strcmp(r->shown.text[1], "Password: ") == 0,
          "%s: no echo-off 'Password: ' prompt after it (%d shown, second '%s')", name, r->shown.n,
          r->shown.text[1]);
    CHECK(r->shown.prompts == 1, "%s: %d prompts", name, r->shown.prompts);
}

static void test_correct_password(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup setup = { .wait_fd = -1, .answer = PASSWORD, .tty = "/dev/pts/3" };

    bool pending = two_steps(&sv, ASK_LOCKOUT, PASSWORD_OK, &setup, &r);
    const struct tg_frame *v = &sv.conn[1].request;
    CHECK(!pending, "correct: a connection left over");
    CHECK(r.rc == PAM_SUCCESS, "correct: %d", r.rc);
    expect_asked(&r, FAKE_TEXT_LOCKED, "correct");
    CHECK(r.shown.n == 2, "correct: %d messages ('Password accepted' is not shown)", r.shown.n);
    CHECK(r.has_authtok && strcmp(r.authtok, PASSWORD) == 0, "correct: PAM_AUTHTOK '%s'",
          r.authtok);
    CHECK(sv.conn[1].got_request && v->kind == TG_KIND_VERIFY_PASSWORD,
          "correct: no VERIFY_PASSWORD");
    CHECK(v->request_id != 0 && v->request_id != TG_UNSOLICITED_ID, "correct: request id %#x",
          (unsigned)v->request_id);
    CHECK(frame_string_is(v, TG_TAG_USER, "root") &&
              frame_string_is(v, TG_TAG_PASSWORD, PASSWORD) &&
              frame_string_is(v, TG_TAG_SERVICE, "tg-bop") &&
              frame_string_is(v, TG_TAG_TTY, "/dev/pts/3") &&
              frame_string_is(v, TG_TAG_LOCALE, "en_US.UTF-8") &&
              frame_string_is(v, TG_TAG_RHOST, NULL),
          "correct: VERIFY_PASSWORD fields");
    CHECK(
        frame_int_is(&sv.conn[0].request, TG_TAG_FLAGS, TG_FLAG_NO_TERMINAL, true),
        "correct: FLAGS not NO_TERMINAL alone (NO_INPUT sent though the password step may follow)");
    CHECK(sv.conn[0].saw_close && sv.conn[1].saw_close, "correct: a connection not closed");
}

/* Every reason a refusal can ask for the password: the same step follows. */
static void test_each_refusal_asks(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup setup = { .wait_fd = -1, .answer = PASSWORD };

    two_steps(&sv, ASK_BOOT, PASSWORD_OK, &setup, &r);
    CHECK(r.rc == PAM_SUCCESS, "boot: %d", r.rc);
    expect_asked(&r, FAKE_TEXT_BOOT, "boot");

    two_steps(&sv, ASK_MAX_TRIES, PASSWORD_OK, &setup, &r);
    CHECK(r.rc == PAM_SUCCESS, "max tries: %d", r.rc);
    CHECK(r.shown.n == 3 && strcmp(r.shown.text[0], FAKE_TEXT_PROMPT) == 0 &&
              strcmp(r.shown.text[1], FAKE_TEXT_MAXTRIES) == 0 &&
              strcmp(r.shown.text[2], "Password: ") == 0,
          "max tries: shown %d, '%s' / '%s' / '%s'", r.shown.n, r.shown.text[0], r.shown.text[1],
          r.shown.text[2]);
}

static void test_wrong_and_backoff(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup setup = { .wait_fd = -1, .answer = "wrong" };

    two_steps(&sv, ASK_LOCKOUT, PASSWORD_WRONG, &setup, &r);
    CHECK(r.rc == PAM_AUTH_ERR, "wrong: %d", r.rc);
    expect_asked(&r, FAKE_TEXT_LOCKED, "wrong");
    CHECK(r.shown.n == 3 && r.shown.style[2] == PAM_ERROR_MSG &&
              strcmp(r.shown.text[2], FAKE_TEXT_WRONG) == 0,
          "wrong: daemon's message not shown: '%s'", r.shown.text[2]);
    CHECK(!r.has_authtok, "wrong: PAM_AUTHTOK set to '%s'", r.authtok);

    two_steps(&sv, ASK_LOCKOUT, PASSWORD_BACKOFF, &setup, &r);
    CHECK(r.rc == PAM_AUTH_ERR, "backoff: %d", r.rc);
    CHECK(r.shown.n == 3 && strcmp(r.shown.text[2], FAKE_TEXT_BACKOFF) == 0, "backoff: '%s'",
          r.shown.text[2]);
    CHECK(!r.has_authtok, "backoff: PAM_AUTHTOK set");

    /* In back-off the daemon says so with the refusal and does not ask: no prompt at all. */
    enum behaviour b = LOCKOUT_IN_BACKOFF;
    bool pending = fake_run_against(&sv, &env, 1, &b, "tg-bop", &setup, &r);
    CHECK(!pending, "told back-off: a VERIFY_PASSWORD was sent");
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "told back-off: %d", r.rc);
    CHECK(r.shown.n == 1 && r.shown.prompts == 0 &&
              strcmp(r.shown.text[0], FAKE_TEXT_LOCKED "\n" FAKE_TEXT_BACKOFF) == 0,
          "told back-off: %d shown, '%s'", r.shown.n, r.shown.text[0]);

    /* passwordNotSet: no fallback exists here; the password module decides. */
    setup.answer = PASSWORD;
    two_steps(&sv, ASK_LOCKOUT, PASSWORD_NOT_SET, &setup, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "not set: %d", r.rc);
    CHECK(r.shown.n == 3 && strcmp(r.shown.text[2], FAKE_TEXT_NOT_SET) == 0, "not set: '%s'",
          r.shown.text[2]);

    /* The daemon could not check it (its password service failed): never success, and the
     * password goes on to the password module. */
    two_steps(&sv, ASK_LOCKOUT, PASSWORD_INTERNAL, &setup, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "internal: %d", r.rc);
    CHECK(r.has_authtok && strcmp(r.authtok, PASSWORD) == 0, "internal: PAM_AUTHTOK '%s'",
          r.authtok);
}

/* Nothing typed, no answer, a failing conversation: userCancel, nothing sent. */
static void test_cancelled(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup empty = { .wait_fd = -1, .answer = "" };
    struct run_setup none = { .wait_fd = -1, .answer = NULL };
    enum behaviour b = ASK_LOCKOUT;

    bool pending = fake_run_against(&sv, &env, 1, &b, "tg-bop", &empty, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "empty: %d", r.rc);
    CHECK(!pending, "empty: an empty password was sent");
    CHECK(r.shown.prompts == 1 && !r.has_authtok, "empty: %d prompts, authtok %d", r.shown.prompts,
          r.has_authtok);

    pending = fake_run_against(&sv, &env, 1, &b, "tg-bop", &none, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "conversation error: %d", r.rc);
    CHECK(!pending, "conversation error: something was sent");
}

/* The daemon is gone, silent or refuses before it answers the password: AUTHINFO_UNAVAIL, and
 * the password goes to the password module (try_first_pass) so nobody types it twice. */
static void test_daemon_fails_after_the_refusal(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup setup = { .wait_fd = -1, .answer = PASSWORD };
    enum behaviour b[2] = { ASK_LOCKOUT, SILENT };

    /* Dies between the refusal and the password: the answer is given only once it has died. */
    sv.die_after = 1;
    if (fake_start(&sv, &env, 2, b)) {
        setup.wait_fd = sv.died[0];
        fake_run_pam(&env, "tg-bop", "root", &setup, &r);
        fake_stop(&sv, &env);
        setup.wait_fd = -1;
        CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "died: %d", r.rc);
        CHECK(r.has_authtok && strcmp(r.authtok, PASSWORD) == 0, "died: PAM_AUTHTOK '%s'",
              r.authtok);
        CHECK(r.shown.n == 2, "died: %d messages, last '%s'", r.shown.n,
              r.shown.text[r.shown.n - 1]);
    } else {
        CHECK(false, "fake daemon did not start");
    }

    two_steps(&sv, ASK_LOCKOUT, SILENT, &setup, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "silent: %d", r.rc);
    CHECK(r.has_authtok && strcmp(r.authtok, PASSWORD) == 0, "silent: PAM_AUTHTOK '%s'", r.authtok);
    CHECK(sv.conn[1].got_request && sv.conn[1].saw_close, "silent: not asked, or not hung up on");

    two_steps(&sv, ASK_LOCKOUT, CLOSE_AT_ONCE, &setup, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "closed: %d", r.rc);
    CHECK(r.has_authtok && strcmp(r.authtok, PASSWORD) == 0, "closed: PAM_AUTHTOK '%s'", r.authtok);

    two_steps(&sv, ASK_LOCKOUT, BUSY_UNSOLICITED, &setup, &r);
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "busy: %d", r.rc);
    CHECK(r.shown.n == 3 && strcmp(r.shown.text[2], TEXT_BUSY) == 0, "busy: '%s'", r.shown.text[2]);
    CHECK(r.has_authtok, "busy: PAM_AUTHTOK not handed on");

    /* A length prefix out of range is a malformed reply, as at the prompt: PAM_SYSTEM_ERR. */
    two_steps(&sv, ASK_LOCKOUT, HUGE_LENGTH, &setup, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "huge length: %d", r.rc);
    CHECK(r.has_authtok && strcmp(r.authtok, PASSWORD) == 0, "huge length: PAM_AUTHTOK '%s'",
          r.authtok);

    two_steps(&sv, ASK_LOCKOUT, WRONG_ID, &setup, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "wrong id: %d (another request's TG_OK is no success)", r.rc);
    CHECK(r.shown.n == 3 && strcmp(r.shown.text[2], TEXT_SERVICE_ERROR) == 0, "wrong id: '%s'",
          r.shown.text[2]);

    /* The unsolicited id carries only a refusal (busy, stopping, badRequest): a success under it is a
     * malformed reply. */
    two_steps(&sv, ASK_LOCKOUT, UNSOLICITED_OK, &setup, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "unsolicited success: %d", r.rc);
    CHECK(r.shown.n == 3 && strcmp(r.shown.text[2], TEXT_SERVICE_ERROR) == 0,
          "unsolicited success: '%s'", r.shown.text[2]);
    CHECK(r.has_authtok && strcmp(r.authtok, PASSWORD) == 0,
          "unsolicited success: PAM_AUTHTOK '%s'", r.authtok);

    /* A RESULT without CODE answers nothing: said as every other bad reply is, never silently. */
    two_steps(&sv, ASK_LOCKOUT, PASSWORD_NO_CODE, &setup, &r);
    CHECK(r.rc == PAM_SYSTEM_ERR, "no code: %d", r.rc);
    CHECK(r.shown.n == 3 && r.shown.style[2] == PAM_ERROR_MSG &&
              strcmp(r.shown.text[2], TEXT_SERVICE_ERROR) == 0,
          "no code: %d messages, last '%s'", r.shown.n, r.shown.text[r.shown.n - 1]);
    CHECK(r.has_authtok && strcmp(r.authtok, PASSWORD) == 0, "no code: PAM_AUTHTOK '%s'",
          r.authtok);
}

/* A password that is not UTF-8 cannot be sent: nothing reaches the daemon, no "service error" (the
 * daemon did nothing wrong), and the password module that follows judges it: PAM_AUTHTOK and
 * PAM_AUTHINFO_UNAVAIL, as for a password typed at the prompt that cannot be sent. */
static void test_unsendable_password(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup latin1 = { .wait_fd = -1, .answer = "caf\xe9" };
    enum behaviour b = ASK_LOCKOUT;

    bool pending = fake_run_against(&sv, &env, 1, &b, "tg-bop", &latin1, &r);
    CHECK(!pending, "not UTF-8: a connection was opened for it");
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "not UTF-8: %d", r.rc);
    expect_asked(&r, FAKE_TEXT_LOCKED, "not UTF-8");
    CHECK(r.shown.n == 2, "not UTF-8: %d messages, last '%s'", r.shown.n,
          r.shown.text[r.shown.n - 1]);
    CHECK(r.has_authtok && strcmp(r.authtok, "caf\xe9") == 0, "not UTF-8: PAM_AUTHTOK not kept");
}

/* The password step is the daemon's decision: the module tells it the policy, and under policy
 * biometrics the daemon leaves ASK_PASSWORD off its refusal, so nothing is asked. */
static void test_biometrics_never_asks(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup setup = { .wait_fd = -1, .answer = PASSWORD };
    enum behaviour b = REFUSE_LOCKOUT;

    bool pending = fake_run_against(&sv, &env, 1, &b, "tg-bio", &setup, &r);
    CHECK(!pending && r.rc == PAM_AUTHINFO_UNAVAIL && r.shown.prompts == 0,
          "biometrics: rc %d, %d prompts", r.rc, r.shown.prompts);
    CHECK(frame_int_is(&sv.conn[0].request, TG_TAG_POLICY, TG_POLICY_BIOMETRICS, true),
          "biometrics: POLICY not sent to the daemon");
}

/* A zh_CN client: the refusal comes from the daemon in Chinese, the prompt is the module's. */
static void test_chinese(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup setup = { .wait_fd = -1, .answer = PASSWORD, .pam_env = "LANG=zh_CN.UTF-8" };

    two_steps(&sv, ASK_LOCKOUT, PASSWORD_OK, &setup, &r);
    CHECK(r.rc == PAM_SUCCESS, "zh: %d", r.rc);
    CHECK(r.shown.n == 2 && strcmp(r.shown.text[1], "密码：") == 0, "zh: prompt '%s'",
          r.shown.text[1]);
    CHECK(frame_string_is(&sv.conn[1].request, TG_TAG_LOCALE, "zh_CN.UTF-8"),
          "zh: LOCALE not sent");

    setup.pam_env = "LANG=xx_YY.UTF-8";
    two_steps(&sv, ASK_LOCKOUT, PASSWORD_OK, &setup, &r);
    CHECK(r.shown.n == 2 && strcmp(r.shown.text[1], "Password: ") == 0, "unknown: prompt '%s'",
          r.shown.text[1]);
}

int main(int argc, char **argv)
{
    /* No controlling terminal: the conversation is the way to ask (test_tty has the terminal). */
    if (setsid() < 0) {
        pid_t pid = fork();
        if (pid > 0) {
            int status = 0;
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
        }
        setsid();
    }
    const char *why =
        fake_init(&env, argc > 2 ? argv[2] : "./pam_touchgate.so", "/tmp/tg-password");
    if (why != NULL) {
        CHECK(false, "%s", why);
        return check_summary("test_password");
    }
    write_stacks();
    test_correct_password();
    test_each_refusal_asks();
    test_wrong_and_backoff();
    test_cancelled();
    test_daemon_fails_after_the_refusal();
    test_unsendable_password();
    test_biometrics_never_asks();
    test_chinese();
    fake_cleanup(&env);
    return check_summary("test_password");
}
