/* Terminal tests of the password step (policy=biometrics-or-password after a refusal) and of the
 * line editor that reads the keys. */
#include <string.h>

#include "check.h"
#include "tty_bed.h"

/* ---- the password step at the terminal ---------------------------------------------------- */

/* The refusal's line, then the module's own "Password: " with the terminal raw (echo and signal
 * keys off); the keys typed there decide. */
static void run_password_step(const char *keys, const char *prompt, struct daemon *d,
                              struct outcome *o, const char *name)
{
    struct script s = { "tg-tty-bop", prompt, keys, NULL };
    run_tty(&s, d, o);
    expect_restored(o, name);
    CHECK(strstr(o->before, TEXT_LOCKED) != NULL &&
              strstr(o->before, TEXT_LOCKED) < strstr(o->before, prompt),
          "%s: the refusal did not come before the prompt: '%s'", name, o->before);
    CHECK(strstr(o->before, TEXT_HINT_BOP) == NULL, "%s: a fingerprint hint was shown", name);
}

static void test_password_step_correct(void)
{
    struct daemon d = { .act = ASK_PASSWORD,
                        .answer = TG_OK,
                        .answer_reason = TG_REASON_PASSWORD,
                        .answer_message = "Password accepted" };
    struct outcome o;

    run_password_step("pw\r", TEXT_PASSWORD, &d, &o, "step correct");
    CHECK(o.rep.rc == PAM_SUCCESS, "step correct: %d", o.rep.rc);
    CHECK(d.verify_came && strcmp(d.password, "pw") == 0, "step correct: daemon saw '%s'",
          d.password);
    CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "pw") == 0, "step correct: PAM_AUTHTOK '%s'",
          o.rep.authtok);
    CHECK(strstr(o.after, "pw") == NULL, "step correct: echoed: '%s'", o.after);
    CHECK(strstr(o.after, "Password accepted") == NULL, "step correct: success was chattered: '%s'",
          o.after);
    CHECK(frame_int_is(&d.request, TG_TAG_FLAGS, 0, false), "step correct: EVALUATE flags set");
}

/* The application reads its input elsewhere (sudo -S: stdin a pipe), the pty still its controlling
 * terminal in the foreground: the password step asks through the conversation, which answers at
 * once, never waiting for a line at the terminal that nobody will type. The prompt still reads the
 * terminal's keys (the person may be there, piping into sudo), so no NO_TERMINAL is sent. */
static void test_password_step_stdin_elsewhere(void)
{
    struct daemon d = { .act = ASK_PASSWORD, .answer = TG_OK, .answer_reason = TG_REASON_PASSWORD };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_LOCKED, "", NULL };
    int32_t flags = 0;

    child_stdin = "from stdin\n";
    run_tty(&s, &d, &o);
    child_stdin = NULL;
    CHECK(o.rep.rc == PAM_SUCCESS, "stdin elsewhere: %d", o.rep.rc);
    CHECK(d.verify_came && strcmp(d.password, "from stdin") == 0,
          "stdin elsewhere: daemon saw '%s'", d.verify_came ? d.password : "no VERIFY_PASSWORD");
    CHECK(o.ms_after_keys < 5000, "stdin elsewhere: %llu ms", (unsigned long long)o.ms_after_keys);
    /* The person may still be at the terminal (piping into sudo): its keys are read. */
    CHECK(!tg_frame_int(&d.request, TG_TAG_FLAGS, &flags) || (flags & TG_FLAG_NO_TERMINAL) == 0,
          "stdin elsewhere: EVALUATE with NO_TERMINAL (flags %#x)", (unsigned)flags);
    CHECK((o.mid.c_lflag & (ICANON | ECHO)) == (ICANON | ECHO) &&
              termios_same(&o.rep.before, &o.rep.after),
          "stdin elsewhere: the terminal was changed");
}

static void test_password_step_wrong(void)
{
    struct daemon d = { .act = ASK_PASSWORD,
                        .answer = TG_ERR_AUTHENTICATION_FAILED,
                        .answer_reason = TG_REASON_WRONG_PASSWORD,
                        .answer_message = TEXT_WRONG };
    struct outcome o;

    run_password_step("nope\r", TEXT_PASSWORD, &d, &o, "step wrong");
    CHECK(o.rep.rc == PAM_AUTH_ERR, "step wrong: %d", o.rep.rc);
    CHECK(strstr(o.after, TEXT_WRONG) != NULL, "step wrong: not said: '%s'", o.after);
    CHECK(!o.rep.has_authtok, "step wrong: PAM_AUTHTOK set");
}

/* Ctrl-C, Ctrl-D, or Enter on nothing: userCancel, nothing sent, the terminal exactly restored. */
static void test_password_step_cancelled(void)
{
    static const struct {
        const char *keys;
        const char *name;
    } ways[] = {
        { "\x03", "step ctrl-c" },
        { "\x04", "step ctrl-d" },
        { "\r", "step empty" },
        { "ab\x03", "step ctrl-c after typing" },
    };
    for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++) {
        struct daemon d = { .act = ASK_PASSWORD,
                            .answer = TG_OK,
                            .answer_reason = TG_REASON_PASSWORD };
        struct outcome o;
        run_password_step(ways[i].keys, TEXT_PASSWORD, &d, &o, ways[i].name);
        CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "%s: %d", ways[i].name, o.rep.rc);
        CHECK(!d.verify_came, "%s: a password was sent", ways[i].name);
        CHECK(!o.rep.has_authtok, "%s: PAM_AUTHTOK set", ways[i].name);
    }
}

static void test_password_step_in_chinese(void)
{
    struct daemon d = { .act = ASK_PASSWORD, .answer = TG_OK, .answer_reason = TG_REASON_PASSWORD };
    struct outcome o;

    setenv("LANG", "zh_CN.UTF-8", 1);
    run_password_step("pw\r", TEXT_PASSWORD_ZH, &d, &o, "step zh");
    setenv("LANG", "en_US.UTF-8", 1);
    CHECK(o.rep.rc == PAM_SUCCESS, "step zh: %d", o.rep.rc);
    CHECK(strstr(o.before, TEXT_PASSWORD) == NULL, "step zh: English prompt too: '%s'", o.before);
}

/* ---- the line editor alone ----------------------------------------------------------------- */

static enum tg_key_action type(struct tg_line *line, const char *keys)
{
    enum tg_key_action last = TG_KEY_NONE;
    for (const char *k = keys; *k != '\0'; k++)
        last = tg_line_key(line, (uint8_t)*k);
    return last;
}

/* A refusal while a password is half-typed at the fingerprint prompt: the rest of it is not a
 * password of its own. The password step goes on with the line, or, when the daemon asks no
 * password, the whole line is handed to the password module that follows. The rest is typed at
 * "Password: ", or while the refusal is still being shown (a slow conversation): not echoed either
 * way. */
static void test_refused_while_typing(bool asks, bool during_refusal)
{
    char name[96];
    snprintf(name, sizeof(name), "refused while typing%s%s", asks ? ", password step" : "",
             during_refusal ? ", rest typed during the refusal" : "");
    struct daemon d = { .act = REFUSE_ON_GO,
                        .refusal = asks ? TG_ERR_AUTHENTICATION_FAILED : TG_ERR_TIMEOUT,
                        .refusal_flags = asks ? TG_FLAG_ASK_PASSWORD : 0,
                        .answer = TG_OK,
                        .answer_reason = TG_REASON_PASSWORD };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "hun", TEXT_TYPING };

    then_wait_for = during_refusal ? TEXT_REFUSED : TEXT_PASSWORD;
    conv_waits_for = during_refusal ? TEXT_REFUSED : NULL;
    then_keys = "ter2\r";
    run_tty(&s, &d, &o);
    then_keys = conv_waits_for = NULL;
    expect_restored(&o, name);
    CHECK(strstr(o.after, TEXT_REFUSED) != NULL &&
              strstr(o.after, TEXT_REFUSED) < strstr(o.after, TEXT_PASSWORD),
          "%s: the refusal did not come before the prompt: '%s'", name, o.after);
    CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "hunter2") == 0, "%s: PAM_AUTHTOK '%s'", name,
          o.rep.authtok);
    CHECK(strstr(o.after, "hun") == NULL && strstr(o.after, "ter2") == NULL, "%s: echoed: '%s'",
          name, o.after);
    if (asks) {
        CHECK(o.rep.rc == PAM_SUCCESS, "%s: %d", name, o.rep.rc);
        CHECK(d.verify_came && strcmp(d.password, "hunter2") == 0, "%s: daemon saw '%s'", name,
              d.password);
    } else {
        CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "%s: %d", name, o.rep.rc);
        CHECK(!d.verify_came, "%s: a password was sent", name);
    }
}

/* The daemon fails while a password is half-typed (it hangs up, goes silent past its deadline, or
 * sends a reply the module cannot read): the line is finished at the terminal and handed to the
 * password module whole, and nothing of it is left for the next program to read as a password of
 * its own. Its rest is typed while the failure is shown by a slow conversation: not echoed. */
static void test_daemon_fails_while_typing(enum daemon_act act, const char *said, int rc,
                                           const char *name)
{
    struct daemon d = { .act = act };
    struct outcome o;
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, "hun", TEXT_TYPING };

    child_reads_leftover = true;
    conv_waits_for = then_wait_for = said;
    then_keys = "ter2\r";
    run_tty(&s, &d, &o);
    then_keys = conv_waits_for = NULL;
    child_reads_leftover = false;
    expect_restored(&o, name);
    CHECK(o.rep.rc == rc, "%s: %d", name, o.rep.rc);
    CHECK(o.rep.has_authtok && strcmp(o.rep.authtok, "hunter2") == 0, "%s: PAM_AUTHTOK '%s'", name,
          o.rep.has_authtok ? o.rep.authtok : "");
    CHECK(strstr(o.rep.leftover, "ter2") == NULL, "%s: left for the next program: '%s'", name,
          o.rep.leftover);
    CHECK(strstr(o.after, "ter2") == NULL, "%s: echoed: '%s'", name, o.after);
}

/* A line already too long to send when the refusal comes: finished, it is refused as any overlong
 * line is; its rest is never sent as a password (nor is anything of it). */
static void test_overlong_line_refused_while_typing(void)
{
    static char keys[TG_LINE_MAX + 9];
    struct daemon d = { .act = REFUSE_ON_GO,
                        .refusal = TG_ERR_AUTHENTICATION_FAILED,
                        .refusal_flags = TG_FLAG_ASK_PASSWORD,
                        .answer = TG_OK,
                        .answer_reason = TG_REASON_PASSWORD };
    struct outcome o;

    memset(keys, 'a', sizeof(keys) - 1);
    struct script s = { "tg-tty-bop", TEXT_HINT_BOP, keys, TEXT_TYPING };
    then_wait_for = TEXT_PASSWORD;
    then_keys = "xyz\r";
    run_tty(&s, &d, &o);
    then_keys = NULL;
    expect_restored(&o, "overlong line");
    CHECK(!d.verify_came, "overlong line: the daemon was sent '%s'", d.password);
    CHECK(o.rep.rc == PAM_AUTHINFO_UNAVAIL, "overlong line: %d", o.rep.rc);
    CHECK(!o.rep.has_authtok, "overlong line: PAM_AUTHTOK '%s'", o.rep.authtok);
}

static void test_line_editor(void)
{
    struct tg_line line = { 0 };

    CHECK(tg_line_key(&line, '\n') == TG_KEY_FALLBACK, "Enter on empty line");
    CHECK(tg_line_key(&line, '\r') == TG_KEY_FALLBACK, "CR on empty line");
    CHECK(tg_line_key(&line, 0x04) == TG_KEY_FALLBACK, "Ctrl-D on empty line");
    CHECK(tg_line_key(&line, 0x03) == TG_KEY_CANCEL, "Ctrl-C");
    CHECK(tg_line_key(&line, 'a') == TG_KEY_TYPED && line.len == 1, "a typed");
    CHECK(tg_line_key(&line, 0x04) == TG_KEY_NONE, "Ctrl-D on a non-empty line");
    CHECK(tg_line_key(&line, 0x1b) == TG_KEY_NONE && line.len == 1, "Esc ignored");
    CHECK(tg_line_key(&line, 0x08) == TG_KEY_NONE && line.len == 0, "Backspace");
    CHECK(tg_line_key(&line, 0x7f) == TG_KEY_NONE && line.len == 0, "DEL on empty line");
    /* A UTF-8 character goes with one DEL. */
    type(&line, "x\xc3\xa9");
    CHECK(tg_line_key(&line, 0x7f) == TG_KEY_NONE && strcmp(line.buf, "x") == 0,
          "DEL of a UTF-8 character left '%s'", line.buf);
    /* In an 8-bit charset (Latin-1 "£°"), bytes 0x80-0xBF are characters of their own: one DEL
     * takes one, unless the bytes before it make a whole UTF-8 sequence with it. */
    type(&line, "\x15pa\xa3\xb0");
    CHECK(tg_line_key(&line, 0x7f) == TG_KEY_NONE && strcmp(line.buf, "pa\xa3") == 0,
          "DEL of an 8-bit character left '%s'", line.buf);
    type(&line, "\x15\xc3\xa9\xa9");
    CHECK(tg_line_key(&line, 0x7f) == TG_KEY_NONE && strcmp(line.buf, "\xc3\xa9") == 0,
          "DEL of a byte after a whole UTF-8 sequence left '%s'", line.buf);
    CHECK(tg_line_key(&line, 0x7f) == TG_KEY_NONE && line.len == 0,
          "DEL of the UTF-8 sequence left '%s'", line.buf);
    type(&line, "x\xe2\x82\xac\xf0\x9f\x94\x91"); /* "x€🔑" */
    CHECK(type(&line, "\x7f\x7f") == TG_KEY_NONE && strcmp(line.buf, "x") == 0,
          "DEL of 3- and 4-byte UTF-8 characters left '%s'", line.buf);
    type(&line, "\x15\xe2\x82"); /* a sequence cut short: its bytes go one by one */
    CHECK(tg_line_key(&line, 0x7f) == TG_KEY_NONE && strcmp(line.buf, "\xe2") == 0,
          "DEL of a cut-short sequence left '%s'", line.buf);
    CHECK(type(&line, "\x15") == TG_KEY_NONE && line.len == 0, "Ctrl-U");
    CHECK(type(&line, "p w\t\n") == TG_KEY_SUBMIT && strcmp(line.buf, "p w\t") == 0, "submit '%s'",
          line.buf);
    tg_line_wipe(&line);
    CHECK(line.len == 0 && line.buf[0] == '\0', "wipe");

    /* Exactly TG_LINE_MAX is kept; one more is refused on Enter, never cut down. */
    for (int i = 0; i < TG_LINE_MAX; i++)
        tg_line_key(&line, 'a');
    CHECK(!line.overflow && line.len == TG_LINE_MAX, "full line");
    CHECK(tg_line_key(&line, '\n') == TG_KEY_SUBMIT, "full line submits");
    tg_line_key(&line, 'b');
    CHECK(line.overflow && line.len == TG_LINE_MAX, "overflow");
    tg_line_key(&line, 0x7f);
    CHECK(tg_line_key(&line, '\n') == TG_KEY_FALLBACK && line.len == 0 && !line.overflow,
          "overlong line not refused and wiped");
}

int main(int argc, char **argv)
{
    if (tty_bed_setup(argc, argv)) {
        test_line_editor();
        test_password_step_correct();
        test_password_step_stdin_elsewhere();
        test_password_step_wrong();
        test_password_step_cancelled();
        test_password_step_in_chinese();
        test_refused_while_typing(true, false);
        test_refused_while_typing(false, false);
        test_refused_while_typing(true, true);
        test_refused_while_typing(false, true);
        test_daemon_fails_while_typing(HANG_UP_ON_GO, TEXT_NOT_RESPONDING, PAM_AUTHINFO_UNAVAIL,
                                       "daemon hung up while typing");
        test_daemon_fails_while_typing(GO_SILENT, TEXT_NOT_RESPONDING, PAM_AUTHINFO_UNAVAIL,
                                       "daemon silent while typing");
        test_daemon_fails_while_typing(NO_CODE_ON_GO, TEXT_SERVICE_ERROR, PAM_SYSTEM_ERR,
                                       "bad reply while typing");
        test_overlong_line_refused_while_typing();
        tty_bed_teardown();
    }
    return check_summary("test_tty_password");
}
