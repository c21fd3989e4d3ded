/* Terminal tests: a PAM client on a pty (forkpty) answers the fingerprint prompt with keys. */
#include <string.h>

#include "check.h"
#include "tty_bed.h"

/* ---- scenarios ----------------------------------------------------------------------------- */

static void test_enter(void)
{
    struct daemon d = { .act = ANSWER_INPUT };
    struct outcome o;
    /* Enter, then a line typed ahead for whatever reads the terminal next. */
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "\rnext\n", NULL };

    child_reads_leftover = true;
    run_tty(&s, &d, &o);
    child_reads_leftover = false;
    expect_restored(&o, "enter");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "enter: %d", o.rep.rc);
    CHECK(d.next_kind == TG_KIND_CANCEL || d.next_kind == 0, "enter: daemon saw %d", d.next_kind);
    CHECK(d.saw_close, "enter: no hang-up");
    CHECK(!o.rep.has_authtok, "enter: PAM_AUTHTOK set to '%s'", o.rep.authtok);
    CHECK(strstr(o.before, FAKE_TEXT_PROMPT) != NULL &&
              strstr(o.before, FAKE_TEXT_PROMPT) < strstr(o.before, TEXT_HINT_BIO),
          "enter: prompt then hint expected: %s", o.before);
    CHECK(printed_nothing(&o), "enter: printed '%s'", o.after);
    CHECK(strcmp(o.rep.leftover, "next\n") == 0, "enter: typed-ahead line lost: '%s'",
          o.rep.leftover);
    CHECK(frame_int_is(&d.request, TG_TAG_FLAGS, 0, false), "enter: FLAGS sent with a terminal");
}

static void test_ctrl_c(void)
{
    struct daemon d = { .act = ANSWER_INPUT };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "\x03", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "ctrl-c");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "ctrl-c: %d", o.rep.rc);
    CHECK(d.next_kind == TG_KIND_CANCEL || d.next_kind == 0, "ctrl-c: daemon saw %d", d.next_kind);
    CHECK(printed_nothing(&o), "ctrl-c: printed '%s'", o.after);
}

static void test_ctrl_d_in_chinese(void)
{
    struct daemon d = { .act = ANSWER_INPUT };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO_ZH, "\x04", NULL };

    setenv("LANG", "zh_CN.UTF-8", 1);
    run_tty(&s, &d, &o);
    setenv("LANG", "en_US.UTF-8", 1);
    expect_restored(&o, "ctrl-d");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "ctrl-d: %d", o.rep.rc);
    CHECK(d.next_kind == TG_KIND_CANCEL || d.next_kind == 0, "ctrl-d: daemon saw %d", d.next_kind);
}

static void test_password_checked_by_daemon(void)
{
    struct daemon d = { .act = ANSWER_INPUT,
                        .answer = TG_OK,
                        .answer_reason = TG_REASON_PASSWORD,
                        .answer_message = "Password accepted" };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "pw\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "password");
    CHECK(o.rep.rc == PAM_SUCCESS, "password: %d", o.rep.rc);
    CHECK(d.next_kind == TG_KIND_PASSWORD && strcmp(d.password, "pw") == 0,
          "password: daemon saw kind %d password '%s'", d.next_kind, d.password);
    CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "pw") == 0, "password: PAM_AUTHTOK '%s'",
          o.rep.authtok);
    CHECK(strstr(o.after, TEXT_TYPING) != NULL, "password: no typing note: '%s'", o.after);
    CHECK(strstr(o.after, "pw") == NULL, "password: echoed: '%s'", o.after);
}

static void test_password_edited(void)
{
    struct daemon d = { .act = ANSWER_INPUT, .answer = TG_OK, .answer_reason = TG_REASON_PASSWORD };
    struct outcome o;
    /* Ctrl-U clears "junk"; two DELs take "xw" back off "pxw". */
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "junk\x15pxw\x7f\x7fw\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "edited");
    CHECK(o.rep.rc == PAM_SUCCESS, "edited: %d", o.rep.rc);
    CHECK(strcmp(d.password, "pw") == 0, "edited: daemon saw '%s'", d.password);
}

/* Waiting behind another prompt is no reason to wait for the password: it can be typed now. */
static void test_password_while_queued(void)
{
    struct daemon d = {
        .act = ANSWER_INPUT, .queued = true, .answer = TG_OK, .answer_reason = TG_REASON_PASSWORD
    };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "pw\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "queued");
    CHECK(strstr(o.before, TEXT_QUEUED) != NULL, "queued: message not shown: '%s'", o.before);
    CHECK(o.rep.rc == PAM_SUCCESS, "queued: %d", o.rep.rc);
    CHECK(d.next_kind == TG_KIND_PASSWORD && strcmp(d.password, "pw") == 0,
          "queued: daemon saw kind %d password '%s'", d.next_kind, d.password);
}

static void test_wrong_password(void)
{
    struct daemon d = { .act = ANSWER_INPUT,
                        .answer = TG_ERR_AUTHENTICATION_FAILED,
                        .answer_reason = TG_REASON_WRONG_PASSWORD,
                        .answer_message = TEXT_WRONG };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "bad\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "wrong password");
    CHECK(o.rep.rc == PAM_AUTH_ERR, "wrong password: %d", o.rep.rc);
    CHECK(!o.rep.has_authtok, "wrong password: PAM_AUTHTOK set");
    CHECK(strstr(o.after, TEXT_WRONG) != NULL, "wrong password: not said: '%s'", o.after);
}

static void test_overlong_password(void)
{
    struct daemon d = { .act = ANSWER_INPUT, .answer = TG_OK, .answer_reason = TG_REASON_PASSWORD };
    struct outcome o;
    char keys[TG_LINE_MAX + 64];
    memset(keys, 'a', TG_LINE_MAX + 10);
    strcpy(keys + TG_LINE_MAX + 10, "\r");
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, keys, NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "overlong");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "overlong: %d", o.rep.rc);
    CHECK(d.next_kind != TG_KIND_PASSWORD, "overlong: a cut-down password was sent");
    CHECK(!o.rep.has_authtok, "overlong: PAM_AUTHTOK set");
}

static void test_password_for_the_password_module(void)
{
    struct daemon d = { .act = ANSWER_INPUT };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "secret\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "biometrics password");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "biometrics password: %d", o.rep.rc);
    CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "secret") == 0,
          "biometrics password: PAM_AUTHTOK '%s'", o.rep.authtok);
    CHECK(d.next_kind == TG_KIND_CANCEL, "biometrics password: daemon saw %d, not CANCEL",
          d.next_kind);
    CHECK(strstr(o.after, "secret") == NULL, "biometrics password: echoed: '%s'", o.after);
}

/* The module follows the daemon: policy biometrics-or-password, but a prompt not marked as taking
 * a typed password (an older daemon, or its decision): the line goes to the password module. */
static void test_unmarked_prompt_keeps_the_password(void)
{
    struct daemon d = { .act = ANSWER_INPUT, .takes_no_password = true };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BIO, "secret\r", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "unmarked prompt");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "unmarked prompt: %d", o.rep.rc);
    CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "secret") == 0,
          "unmarked prompt: PAM_AUTHTOK '%s'", o.rep.authtok);
    CHECK(d.next_kind == TG_KIND_CANCEL, "unmarked prompt: daemon saw %d, not CANCEL", d.next_kind);
}

/* A password answer without BY_PASSWORD did not judge the password, whatever its reason says (the
 * flag alone decides, docs/spec.md §3): the finger's tries used up, answered as the password was
 * on its way, fails the prompt, and the line is kept for the password module. */
static void test_unjudged_answer_is_no_verified_password(void)
{
    static const char *reasons[] = { TG_REASON_MAX_TRIES, TG_REASON_WRONG_PASSWORD };
    for (size_t i = 0; i < COUNT(reasons); i++) {
        struct daemon d = { .act = ANSWER_INPUT,
                            .answer = TG_ERR_AUTHENTICATION_FAILED,
                            .answer_reason = reasons[i],
                            .unjudged = true };
        struct outcome o;
        struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "pw\r", NULL };

        run_tty(&s, &d, &o);
        expect_restored(&o, reasons[i]);
        CHECK(o.rep.rc == PAM_MAXTRIES, "%s: %d", reasons[i], o.rep.rc);
        CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "pw") == 0, "%s: PAM_AUTHTOK %s '%s'",
              reasons[i], o.rep.has_authtok ? "set" : "unset",
              o.rep.has_authtok ? o.rep.authtok : "");
    }
}

static void test_unjudged_password_is_kept(void)
{
    static const struct {
        int after;
        int32_t answer;
        const char *name;
    } ways[] = {
        { HANGS_UP, 0, "hang-up after the password" },
        { FALLS_SILENT, 0, "silence after the password" },
        { ANSWERS, TG_ERR_SYSTEM_CANCEL, "systemCancel for the password" },
        { ANSWERS, TG_ERR_BUSY, "busy for the password" },
    };
    for (size_t i = 0; i < COUNT(ways); i++) {
        struct daemon d = { .act = ANSWER_INPUT, .answer = ways[i].answer };
        d.after_password = ways[i].after;
        struct outcome o;
        struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "pw\r", NULL };

        run_tty(&s, &d, &o);
        expect_restored(&o, ways[i].name);
        CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "%s: %d", ways[i].name, o.rep.rc);
        CHECK(d.next_kind == TG_KIND_PASSWORD && strcmp(d.password, "pw") == 0,
              "%s: daemon saw kind %d password '%s'", ways[i].name, d.next_kind, d.password);
        CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "pw") == 0, "%s: PAM_AUTHTOK '%s'",
              ways[i].name, o.rep.authtok);
    }
}

static void test_match_while_idle(void)
{
    struct daemon d = { .act = MATCH_ON_GO };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "", "" };

    run_tty(&s, &d, &o);
    expect_restored(&o, "match");
    CHECK(o.rep.rc == PAM_SUCCESS, "match: %d", o.rep.rc);
    CHECK(!o.rep.has_authtok, "match: PAM_AUTHTOK set");
    CHECK(printed_nothing(&o), "match: printed '%s'", o.after);
}

static void test_match_while_typing(void)
{
    struct daemon d = { .act = MATCH_ON_GO };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "abc", TEXT_TYPING };

    run_tty(&s, &d, &o);
    expect_restored(&o, "match while typing");
    CHECK(o.rep.rc == PAM_SUCCESS, "match while typing: %d", o.rep.rc);
    CHECK(!o.rep.has_authtok, "match while typing: the half-typed line was kept");
    /* The note's line is ended, so the terminal's next prompt starts on a fresh line. */
    const char *note = strstr(o.after, TEXT_TYPING);
    CHECK(note != NULL && strncmp(note + strlen(TEXT_TYPING), "\r\n", 2) == 0,
          "match while typing: note line not ended: '%s'", o.after);
}

/* A match while a password is typed: the rest of it, up to its Enter, never reaches what reads
 * the terminal next (a shell would run it, and keep it in its history). */
static void test_match_mid_password_drops_its_rest(void)
{
    struct daemon d = { .act = MATCH_ON_GO };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "hun", TEXT_TYPING };

    child_reads_leftover = true;
    then_wait_for = "";
    then_keys = "ter2\rnext\n";
    run_tty(&s, &d, &o);
    then_keys = NULL;
    child_reads_leftover = false;
    expect_restored(&o, "match mid-password");
    CHECK(o.rep.rc == PAM_SUCCESS, "match mid-password: %d", o.rep.rc);
    CHECK(!o.rep.has_authtok, "match mid-password: PAM_AUTHTOK set");
    CHECK(strcmp(o.rep.leftover, "next\n") == 0, "match mid-password: the client read '%s'",
          o.rep.leftover);
    CHECK(strstr(o.after, "ter2") == NULL, "match mid-password: echoed: '%s'", o.after);
}

/* A match read while keys typed before it still wait unread (the person typed a whole password
 * while a note was shown): they were the prompt's, and none of them reaches what reads the
 * terminal next; a line typed ahead after their Enter does. */
static void test_match_with_keys_unread(void)
{
    struct daemon d = { .act = MATCH_ON_GO, .note = TEXT_KEYRING };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "", "" };

    child_reads_leftover = true;
    conv_waits_for = then_wait_for = TEXT_KEYRING;
    then_keys = "hunter2\rnext\n";
    run_tty(&s, &d, &o);
    then_keys = conv_waits_for = NULL;
    child_reads_leftover = false;
    expect_restored(&o, "match with keys unread");
    CHECK(o.rep.rc == PAM_SUCCESS, "match with keys unread: %d", o.rep.rc);
    CHECK(!o.rep.has_authtok, "match with keys unread: PAM_AUTHTOK set");
    CHECK(strcmp(o.rep.leftover, "next\n") == 0, "match with keys unread: the client read '%s'",
          o.rep.leftover);
    CHECK(strstr(o.after, "hunter2") == NULL, "match with keys unread: echoed: '%s'", o.after);
}

static void test_daemon_gone(void)
{
    struct daemon d = { .act = HANG_UP_ON_GO };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "", "" };

    run_tty(&s, &d, &o);
    expect_restored(&o, "daemon gone");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "daemon gone: %d", o.rep.rc);
    CHECK(strstr(o.after, TEXT_NOT_RESPONDING) != NULL, "daemon gone: not said: '%s'", o.after);
}

static void test_daemon_silent(void)
{
    struct daemon d = { .act = GO_SILENT };
    struct outcome o;
    struct script s = { "tg-tty-bio", TEXT_HINT_BIO, "", NULL };

    run_tty(&s, &d, &o);
    expect_restored(&o, "silent");
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "silent: %d", o.rep.rc);
    CHECK(o.ms_after_keys < 4000, "silent: given up after %llu ms, not within 4 s",
          (unsigned long long)o.ms_after_keys);
    CHECK(d.saw_close, "silent: no hang-up");
}

/* noinput on a terminal: the terminal is left alone, keys stay the client's. */
static void test_noinput_on_terminal(void)
{
    struct daemon d = { .act = MATCH_ON_GO };
    struct outcome o;
    struct script s = { "tg-tty-noinput", FAKE_TEXT_PROMPT, "\r", "" };

    run_tty(&s, &d, &o);
    CHECK(o.rep.rc == PAM_SUCCESS, "noinput: %d (Enter was taken)", o.rep.rc);
    CHECK((o.mid.c_lflag & (ICANON | ECHO)) == (ICANON | ECHO), "noinput: terminal changed");
    CHECK(strstr(o.before, TEXT_HINT_BIO) == NULL && strstr(o.after, TEXT_HINT_BIO) == NULL,
          "noinput: key hint shown");
    CHECK(frame_int_is(&d.request, TG_TAG_FLAGS, TG_FLAG_NO_INPUT | TG_FLAG_NO_TERMINAL, true),
          "noinput: FLAGS NO_INPUT not sent");
    CHECK(o.reported && termios_same(&o.rep.before, &o.rep.after), "noinput: termios changed");
}

int main(int argc, char **argv)
{
    if (tty_bed_setup(argc, argv)) {
        test_enter();
        test_ctrl_c();
        test_ctrl_d_in_chinese();
        test_password_checked_by_daemon();
        test_password_edited();
        test_password_while_queued();
        test_wrong_password();
        test_overlong_password();
        test_password_for_the_password_module();
        test_unmarked_prompt_keeps_the_password();
        test_unjudged_answer_is_no_verified_password();
        test_unjudged_password_is_kept();
        test_match_while_idle();
        test_match_while_typing();
        test_match_mid_password_drops_its_rest();
        test_match_with_keys_unread();
        test_daemon_gone();
        test_daemon_silent();
        test_noinput_on_terminal();
        tty_bed_teardown();
    }
    return check_summary("test_tty");
}
