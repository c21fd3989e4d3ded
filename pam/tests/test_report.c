/* Report mode: PASSWORD_SUCCESS after the password module, never a factor (always PAM_IGNORE). */
#include <string.h>

#include "check.h"
#include "fake.h"
#include "fake_daemon.h"

static struct fake_env env;

/* The stacks turn IGNORE into PAM_SUCCESS and anything else into a failure:
 *   [ignore=ignore default=1] report  ->  sufficient pam_permit | required pam_deny */
static void write_stacks(void)
{
    CHECK(fake_write_stack(&env, "tg-report",
                           "auth [ignore=ignore default=1] MODULE report socket=SOCKET debug\n"
                           "auth sufficient pam_permit.so\n"
                           "auth required pam_deny.so\n") &&
              fake_write_stack(
                  &env, "tg-report-absent",
                  "auth [ignore=ignore default=1] MODULE report socket=/nonexistent/tg.sock\n"
                  "auth sufficient pam_permit.so\n"
                  "auth required pam_deny.so\n") &&
              fake_write_stack(&env, "tg-match-report",
                               "auth [success=ok default=ignore] MODULE socket=SOCKET\n"
                               "auth [ignore=ignore default=1] MODULE report socket=SOCKET\n"
                               "auth sufficient pam_permit.so\n"
                               "auth required pam_deny.so\n"),
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
    bool pending = fake_run_against(&sv, &env, 1, ok, "tg-report", NULL, &r);
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
    CHECK(r.shown.n == 0, "report: %d messages shown", r.shown.n);
    CHECK(sv.conn[0].saw_close, "report: module did not hang up");

    /* The daemon's refusal (not root, say) changes nothing and shows nothing. */
    fake_run_against(&sv, &env, 1, refused, "tg-report", NULL, &r);
    CHECK(r.rc == PAM_SUCCESS && r.shown.n == 0, "report refused: stack %d, %d messages", r.rc,
          r.shown.n);

    /* Refused unread (busy): the same. */
    fake_run_against(&sv, &env, 1, busy, "tg-report", NULL, &r);
    CHECK(r.rc == PAM_SUCCESS && r.shown.n == 0, "report busy: stack %d, %d messages", r.rc,
          r.shown.n);

    /* A daemon that answers nothing: PAM_IGNORE after the reply deadline, within 2 s. */
    fake_run_against(&sv, &env, 1, silent, "tg-report", NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "report, silent daemon: stack %d", r.rc);
    CHECK(r.ms < 2000, "report, silent daemon: %llu ms", (unsigned long long)r.ms);

    /* No daemon at all. */
    fake_run_pam(&env, "tg-report-absent", "root", NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "report, daemon down: stack %d", r.rc);

    /* After a fingerprint match in the same transaction there is nothing to report. */
    pending = fake_run_against(&sv, &env, 1, match, "tg-match-report", NULL, &r);
    CHECK(r.rc == PAM_SUCCESS, "match then report: %d", r.rc);
    CHECK(!pending, "match then report: a report was sent after a fingerprint match");

    /* Without a match it is sent. */
    pending = fake_run_against(&sv, &env, 2, refuse_then_report, "tg-match-report", NULL, &r);
    CHECK(r.rc == PAM_SUCCESS && !pending, "refusal then report: %d", r.rc);
    CHECK(sv.conn[1].got_request && sv.conn[1].request.kind == TG_KIND_PASSWORD_SUCCESS,
          "refusal then report: no PASSWORD_SUCCESS");

    /* One handle, two pam_authenticate calls: the first call's match does not silence the second. */
    if (!fake_start(&sv, &env, 3, match_refuse_report)) {
        CHECK(false, "fake daemon did not start");
        return;
    }
    pam_handle_t *pamh = NULL;
    struct shown shown = { .wait_fd = -1 };
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

int main(int argc, char **argv)
{
    const char *why = fake_init(&env, argc > 2 ? argv[2] : "./pam_touchgate.so", "/tmp/tg-report");
    if (why != NULL) {
        CHECK(false, "%s", why);
        return check_summary("test_report");
    }
    write_stacks();
    test_report();
    fake_cleanup(&env);
    return check_summary("test_report");
}
