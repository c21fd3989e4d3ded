/* Report mode: PASSWORD_SUCCESS after the password module, never a factor (always PAM_IGNORE). */
#include <string.h>

#include "check.h"
#include "fake.h"
#include "fake_daemon.h"

static struct fake_env env;

/* The password the probe takes, as pam_unix does, and leaves as PAM_AUTHTOK for the report. */
static const struct run_setup password_typed = { .wait_fd = -1, .answer = "correct horse" };

/* The stacks turn IGNORE into PAM_SUCCESS and anything else into a failure:
 *   [ignore=ignore default=1] report  ->  sufficient pam_permit | required pam_deny
 * The probe before the report line stands for the password module (`settok`: it asks for the
 * password and leaves it as PAM_AUTHTOK). */
static void write_stacks(void)
{
    CHECK(fake_write_stack(&env, "tg-report",
                           "auth optional PROBE settok\n"
                           "auth [ignore=ignore default=1] MODULE report socket=SOCKET debug\n"
                           "auth sufficient pam_permit.so\n"
                           "auth required pam_deny.so\n") &&
              fake_write_stack(
                  &env, "tg-report-absent",
                  "auth optional PROBE settok\n"
                  "auth [ignore=ignore default=1] MODULE report socket=/nonexistent/tg.sock\n"
                  "auth sufficient pam_permit.so\n"
                  "auth required pam_deny.so\n") &&
              fake_write_stack(&env, "tg-match-report",
                               "auth [success=ok default=ignore] MODULE socket=SOCKET\n"
                               "auth optional PROBE settok\n"
                               "auth [ignore=ignore default=1] MODULE report socket=SOCKET\n"
                               "auth sufficient pam_permit.so\n"
                               "auth required pam_deny.so\n") &&
              /* Another Primary module succeeds (a smartcard, a FIDO key): no password typed. */
              fake_write_stack(&env, "tg-report-other-factor",
                               "auth [success=1 default=ignore] pam_succeed_if.so user = root\n"
                               "auth requisite pam_deny.so\n"
                               "auth [ignore=ignore default=1] MODULE report socket=SOCKET debug\n"
                               "auth sufficient pam_permit.so\n"
                               "auth required pam_deny.so\n") &&
              fake_write_stack(&env, "tg-report-authtok",
                               "auth optional PROBE settok\n"
                               "auth [ignore=ignore default=1] MODULE report authtok "
                               "socket=SOCKET debug\n"
                               "auth sufficient pam_permit.so\n"
                               "auth required pam_deny.so\n") &&
              fake_write_stack(&env, "tg-renew",
                               "password required PROBE\n"
                               "password optional MODULE authtok socket=SOCKET debug\n"),
          "cannot write the stacks");
}

static void test_report(void)
{
    static struct fake_server sv;
    struct run r;
    static const enum behaviour ok[] = { REPORT_OK };
    static const enum behaviour refused[] = { REPORT_REFUSED };
    static const enum behaviour silent[] = { SILENT };
    static const enum behaviour busy[] = { BUSY_UNSOLICITED };
    static const enum behaviour match[] = { MATCH };
    static const enum behaviour refuse_then_report[] = { NOT_ENROLLED, REPORT_OK };
    static const enum behaviour match_refuse_report[] = { MATCH, NOT_ENROLLED, REPORT_OK };

    /* The frame: PASSWORD_SUCCESS with USER and SERVICE only. */
    bool pending = fake_run_against(&sv, &env, 1, ok, "tg-report", &password_typed, &r);
    const struct tg_frame *f = &sv.conn[0].request;
    CHECK(r.rc == PAM_SUCCESS && !pending,
          "report: stack %d, so the module did not return PAM_IGNORE", r.rc);
    CHECK(sv.conn[0].got_request && f->kind == TG_KIND_PASSWORD_SUCCESS,
          "report: no PASSWORD_SUCCESS (kind %#x)", f->kind);
    CHECK(frame_string_is(f, TG_TAG_USER, "root") &&
              frame_string_is(f, TG_TAG_SERVICE, "tg-report"),
          "report: USER/SERVICE");
    CHECK(f->nfields == 2, "report: %zu fields", f->nfields);
    CHECK(f->request_id != 0 && f->request_id != TG_UNSOLICITED_ID, "report: request id %#x",
          (unsigned)f->request_id);
    CHECK(r.shown.n == 1 && r.shown.prompts == 1,
          "report: %d messages shown besides the password module's prompt", r.shown.n - 1);
    CHECK(sv.conn[0].saw_close, "report: module did not hang up");

    /* The daemon's refusal (not root, say) changes nothing and shows nothing. */
    fake_run_against(&sv, &env, 1, refused, "tg-report", &password_typed, &r);
    CHECK(r.rc == PAM_SUCCESS && r.shown.n == 1, "report refused: stack %d, %d messages", r.rc,
          r.shown.n - 1);

    /* Refused unread (busy): the same. */
    fake_run_against(&sv, &env, 1, busy, "tg-report", &password_typed, &r);
    CHECK(r.rc == PAM_SUCCESS && r.shown.n == 1, "report busy: stack %d, %d messages", r.rc,
          r.shown.n - 1);

    /* A daemon that answers nothing: PAM_IGNORE after the reply deadline (1.5 s; 4 s leaves a loaded
     * machine room). */
    fake_run_against(&sv, &env, 1, silent, "tg-report", &password_typed, &r);
    CHECK(r.rc == PAM_SUCCESS, "report, silent daemon: stack %d", r.rc);
    CHECK(r.ms < 4000, "report, silent daemon: %llu ms", (unsigned long long)r.ms);

    /* No daemon at all. */
    fake_run_pam(&env, "tg-report-absent", "root", &password_typed, &r);
    CHECK(r.rc == PAM_SUCCESS, "report, daemon down: stack %d", r.rc);

    /* After a fingerprint match in the same transaction there is nothing to report. */
    pending = fake_run_against(&sv, &env, 1, match, "tg-match-report", &password_typed, &r);
    CHECK(r.rc == PAM_SUCCESS, "match then report: %d", r.rc);
    CHECK(!pending, "match then report: a report was sent after a fingerprint match");

    /* Without a match it is sent. */
    pending =
        fake_run_against(&sv, &env, 2, refuse_then_report, "tg-match-report", &password_typed, &r);
    CHECK(r.rc == PAM_SUCCESS && !pending, "refusal then report: %d", r.rc);
    CHECK(sv.conn[1].got_request && sv.conn[1].request.kind == TG_KIND_PASSWORD_SUCCESS,
          "refusal then report: no PASSWORD_SUCCESS");

    /* One handle, two pam_authenticate calls: the first call's match does not silence the second. */
    if (!fake_start(&sv, &env, 3, match_refuse_report)) {
        CHECK(false, "fake daemon did not start");
        return;
    }
    pam_handle_t *pamh = NULL;
    struct shown shown = { .wait_fd = -1, .answer = "correct horse" };
    struct pam_conv conv = { fake_conv, &shown };
    int rc1 = -1, rc2 = -1;
    if (pam_start_confdir("tg-match-report", "root", &conv, env.dir, &pamh) == PAM_SUCCESS) {
        rc1 = pam_authenticate(pamh, 0);
        rc2 = pam_authenticate(pamh, 0);
        pam_end(pamh, rc2);
    }
    pending = fake_stop(&sv, &env);
    CHECK(rc1 == PAM_SUCCESS && rc2 == PAM_SUCCESS && !pending, "same handle: %d %d", rc1, rc2);
    CHECK(sv.conn[0].request.kind == TG_KIND_EVALUATE &&
              sv.conn[1].request.kind == TG_KIND_EVALUATE,
          "same handle: two EVALUATEs expected");
    CHECK(sv.conn[2].got_request && sv.conn[2].request.kind == TG_KIND_PASSWORD_SUCCESS,
          "same handle: the second call's report was not sent");
}

/* Only a password lifts what the report lifts (a lockout, every reason that requires one): without
 * a password in the stack (PAM_AUTHTOK unset or empty) nothing is sent, whichever module made the
 * stack succeed; the server serves no connection, so one made is left pending. */
static void test_report_needs_a_password(void)
{
    static struct fake_server sv;
    static const enum behaviour ok[] = { REPORT_OK };
    static const struct {
        const char *service, *answer, *name;
    } ways[] = {
        { "tg-report-other-factor", NULL, "another factor succeeded" },
        { "tg-report", NULL, "no password given" },
        { "tg-report", "", "an empty password" },
    };
    struct run r;

    for (size_t i = 0; i < COUNT(ways); i++) {
        struct run_setup setup = { .wait_fd = -1, .answer = ways[i].answer };
        CHECK(fake_start(&sv, &env, 0, ok), "%s: fake daemon did not start", ways[i].name);
        fake_run_pam(&env, ways[i].service, "root", &setup, &r);
        bool pending = fake_stop(&sv, &env);
        CHECK(r.rc == PAM_SUCCESS, "%s: stack %d", ways[i].name, r.rc);
        CHECK(!pending, "%s: PASSWORD_SUCCESS sent without a password", ways[i].name);
        CHECK(r.has_authtok == (ways[i].answer != NULL) && r.authtok[0] == '\0',
              "%s: PAM_AUTHTOK '%s' (set: %d)", ways[i].name, r.authtok, r.has_authtok);
    }

    /* The password module's password: reported. */
    bool pending = fake_run_against(&sv, &env, 1, ok, "tg-report", &password_typed, &r);
    CHECK(r.rc == PAM_SUCCESS && !pending && sv.conn[0].got_request &&
              sv.conn[0].request.kind == TG_KIND_PASSWORD_SUCCESS,
          "a password given: no PASSWORD_SUCCESS");
}

/* The daemon works on the report for a while, sending keepalives as it does: the module waits
 * past them for the RESULT (the fake daemon sends it FAKE_KEEPALIVE_MS after each keepalive). */
static void test_keepalives_before_the_answer(void)
{
    static struct fake_server sv;
    static const enum behaviour slow[] = { SLOW_REPORT_OK };
    struct run r;

    bool pending = fake_run_against(&sv, &env, 1, slow, "tg-report", &password_typed, &r);
    CHECK(r.rc == PAM_SUCCESS && !pending, "keepalives: stack %d", r.rc);
    CHECK(sv.conn[0].got_request && !sv.conn[0].hung_up_early,
          "keepalives: the module hung up at a keepalive, before the RESULT");
    CHECK(sv.conn[0].saw_close && r.ms < TG_REPLY_DEADLINE_MS,
          "keepalives: the RESULT was not taken (%llu ms)", (unsigned long long)r.ms);
}

/* A password stack: the probe takes the new password (answered twice), then the module's line. */
static void run_chauthtok(const char *answer, struct run *out)
{
    pam_handle_t *pamh = NULL;
    memset(out, 0, sizeof(*out));
    out->shown.wait_fd = -1;
    out->shown.answer = answer;
    struct pam_conv conv = { fake_conv, &out->shown };
    out->rc = pam_start_confdir("tg-renew", "root", &conv, env.dir, &pamh);
    if (out->rc != PAM_SUCCESS)
        return;
    out->rc = pam_chauthtok(pamh, 0);
    pam_end(pamh, out->rc);
}

/* `authtok`: PAM_AUTHTOK goes with the report, and renews a keyring password on a change. A
 * PAM_AUTHTOK the wire cannot carry (not UTF-8, longer than a field) costs only the renewal: the
 * report is still sent, without it; a password change has nothing to renew and sends nothing. */
static void test_authtok(void)
{
    static struct fake_server sv;
    static const enum behaviour ok[] = { REPORT_OK };
    static char overlong[TG_MAX_STRING + 2];
    struct run r;
    struct run_setup typed = { .wait_fd = -1, .answer = "correct horse" };

    bool pending = fake_run_against(&sv, &env, 1, ok, "tg-report-authtok", &typed, &r);
    const struct tg_frame *f = &sv.conn[0].request;
    CHECK(r.rc == PAM_SUCCESS && !pending, "report authtok: stack %d", r.rc);
    CHECK(sv.conn[0].got_request && f->kind == TG_KIND_PASSWORD_SUCCESS &&
              frame_string_is(f, TG_TAG_PASSWORD, "correct horse"),
          "report authtok: no PASSWORD_SUCCESS with the password");

    memset(overlong, 'a', TG_MAX_STRING + 1);
    const char *unsendable[] = { "caf\xe9", overlong };
    for (size_t i = 0; i < COUNT(unsendable); i++) {
        typed.answer = unsendable[i];
        pending = fake_run_against(&sv, &env, 1, ok, "tg-report-authtok", &typed, &r);
        CHECK(r.rc == PAM_SUCCESS && !pending, "report authtok %zu: stack %d", i, r.rc);
        CHECK(sv.conn[0].got_request && f->kind == TG_KIND_PASSWORD_SUCCESS &&
                  frame_string_is(f, TG_TAG_USER, "root") &&
                  frame_string_is(f, TG_TAG_PASSWORD, NULL),
              "report authtok %zu: the report was not sent without the password", i);
    }

    CHECK(fake_start(&sv, &env, 1, ok), "renew: fake daemon did not start");
    run_chauthtok("new horse", &r);
    pending = fake_stop(&sv, &env);
    CHECK(r.rc == PAM_SUCCESS && !pending, "renew: %d", r.rc);
    CHECK(sv.conn[0].got_request && f->kind == TG_KIND_KEYRING_RENEW &&
              frame_string_is(f, TG_TAG_PASSWORD, "new horse"),
          "renew: no KEYRING_RENEW with the new password");

    /* Nothing to renew with: no connection at all (the server serves none). */
    CHECK(fake_start(&sv, &env, 0, ok), "renew: fake daemon did not start");
    run_chauthtok("caf\xe9", &r);
    pending = fake_stop(&sv, &env);
    CHECK(r.rc == PAM_SUCCESS && !pending, "renew, not UTF-8: %d, a request was sent", r.rc);
}

int main(int argc, char **argv)
{
    const char *why = fake_init(&env, argc > 2 ? argv[2] : "./pam_touchgate.so", "/tmp/tg-report");
    if (why != NULL) {
        CHECK(false, "%s", why);
        return check_summary("test_report");
    }
    write_stacks();
    test_report();
    test_report_needs_a_password();
    test_keepalives_before_the_answer();
    test_authtok();
    fake_cleanup(&env);
    return check_summary("test_report");
}
