/* What the module tells the daemon about its client, without a terminal: the language (LC_ALL,
 * LANGUAGE), the remote session (PAM_RHOST, SSH_CONNECTION) and the reader asked for (device=). */
#include "pam_bed.h"

/* The language the module speaks in, and asks the daemon to speak in. */
static void test_languages(void)
{
    static struct fake_server sv;
    struct run r;

    write_service("tg-server", "socket=SOCKET max_tries=2 debug");
    /* Hang-up after the request: fall back, in the client's language (LC_ALL wins). */
    setenv("LC_ALL", "zh_CN.UTF-8", 1);
    run_against(&sv, CLOSE_AT_ONCE, "tg-server", NULL, &r);
    unsetenv("LC_ALL");
    CHECK(r.rc == PAM_AUTHINFO_UNAVAIL, "daemon hung up: %d", r.rc);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_LOCALE, "zh_CN.UTF-8"), "LOCALE from LC_ALL");
    CHECK(shown_once(&r, PAM_ERROR_MSG, "指纹服务无响应：请使用密码"),
          "daemon hung up: Chinese 'not responding' not shown: '%s'", r.shown.text[0]);

    /* LANGUAGE chooses the module's words ahead of the locale, as gettext lets it: the daemon is
     * sent that choice, so its lines and the module's are in one language. */
    setenv("LC_ALL", "zh_CN.UTF-8", 1);
    setenv("LANGUAGE", "en", 1);
    run_against(&sv, CLOSE_AT_ONCE, "tg-server", NULL, &r);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_LOCALE, "C"), "LOCALE with LANGUAGE=en");
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_NOT_RESPONDING),
          "LANGUAGE=en: English 'not responding' not shown: '%s'", r.shown.text[0]);
    setenv("LANGUAGE", "fr:zh_CN", 1); /* no French catalog: the next one */
    run_against(&sv, CLOSE_AT_ONCE, "tg-server", NULL, &r);
    unsetenv("LANGUAGE");
    unsetenv("LC_ALL");
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_LOCALE, "zh_CN"),
          "LOCALE with LANGUAGE=fr:zh_CN");
    CHECK(shown_once(&r, PAM_ERROR_MSG, "指纹服务无响应：请使用密码"),
          "LANGUAGE=fr:zh_CN: Chinese 'not responding' not shown: '%s'", r.shown.text[0]);

    /* An unknown locale: English, and still sent as it is for the daemon to judge. */
    setenv("LC_ALL", "xx_YY.UTF-8", 1);
    run_against(&sv, CLOSE_AT_ONCE, "tg-server", NULL, &r);
    unsetenv("LC_ALL");
    CHECK(shown_once(&r, PAM_ERROR_MSG, TEXT_NOT_RESPONDING), "unknown locale: '%s'",
          r.shown.text[0]);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_LOCALE, "xx_YY.UTF-8"),
          "unknown LOCALE not sent");
}

/* sudo or su inside an SSH session leave PAM_RHOST unset: the daemon must still see a remote. */
static void test_ssh_session(void)
{
    static struct fake_server sv;
    struct run r;
    struct run_setup rhost = { .wait_fd = -1, .rhost = "192.0.2.9" };
    struct run_setup pam_env = { .wait_fd = -1,
                                 .pam_env = "SSH_CONNECTION=192.0.2.1 50000 192.0.2.2 22" };

    setenv("SSH_CONNECTION", "192.0.2.1 50000 192.0.2.2 22", 1);
    run_against(&sv, MATCH, "tg-server", NULL, &r);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, "ssh"),
          "SSH_CONNECTION: RHOST not \"ssh\"");
    /* PAM_RHOST, when set, is the better answer. */
    run_against(&sv, MATCH, "tg-server", &rhost, &r);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, "192.0.2.9"),
          "PAM_RHOST not preferred over SSH_CONNECTION");
    unsetenv("SSH_CONNECTION");

    /* From the PAM environment (pam_env, or the application) too. */
    run_against(&sv, MATCH, "tg-server", &pam_env, &r);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, "ssh"),
          "PAM env SSH_CONNECTION: RHOST not \"ssh\"");

    run_against(&sv, MATCH, "tg-server", NULL, &r);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_RHOST, NULL), "RHOST without any SSH sign");
}

/* device= names the reader in the EVALUATE request, as written; the daemon matches it. */
static void test_device(void)
{
    static struct fake_server sv;
    struct run r;

    write_service("tg-device", "socket=SOCKET device=virtual_image");
    run_against(&sv, MATCH, "tg-device", NULL, &r);
    const struct tg_frame *req = &sv.conn[0].request;
    CHECK(r.rc == PAM_SUCCESS, "device= match: %d", r.rc);
    CHECK(sv.conn[0].got_request && req->kind == TG_KIND_EVALUATE, "device=: not an EVALUATE");
    CHECK(frame_string_is(req, TG_TAG_DEVICE, "virtual_image"), "device=: DEVICE not sent");

    /* A full name with blanks, in pam.conf's square brackets. */
    write_service("tg-device-name", "socket=SOCKET [device=Virtual image device for debugging]");
    run_against(&sv, MATCH, "tg-device-name", NULL, &r);
    CHECK(frame_string_is(&sv.conn[0].request, TG_TAG_DEVICE, "Virtual image device for debugging"),
          "[device=...]: DEVICE not the name with its blanks");
}

int main(int argc, char **argv)
{
    detach_from_terminal();
    const char *why =
        fake_init(&env, argc > 2 ? argv[2] : "./pam_touchgate.so", "/tmp/tg-pam-request");
    if (why != NULL) {
        CHECK(false, "%s", why);
        return check_summary("test_pam_request");
    }
    test_languages();
    test_ssh_session();
    test_device();
    fake_cleanup(&env);
    return check_summary("test_pam_request");
}
