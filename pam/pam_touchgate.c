/* pam_touchgate entry points; the options and what a person sees are in pam_touchgate(8). */
#include <stdlib.h>
#include <string.h>

#include "tg_env.h"
#include "tg_module.h"
#include "tg_options.h"
#include "tg_password.h"
#include "tg_prompt.h"
#include "tg_report.h"

/* The fingerprint line: the prompt, then the password step when the daemon asks for it. */
static int authenticate(pam_handle_t *pamh, const struct tg_options *opt)
{
    struct tg_call c = { .pamh = pamh, .opt = opt };
    struct tg_line typed = { 0 };
    bool ask_password = false;
    int rc;

    tg_tty_init(&c.tty);
    tg_lang_open(&c.lang, NULL);
    /* A match remembered from an earlier pam_authenticate on this handle is not this one's. */
    pam_set_data(pamh, TG_MATCH_KEY, NULL, NULL);
    if ((rc = tg_get_user(pamh, opt, &c.user)) != PAM_SUCCESS)
        goto done;
    c.locale = tg_client_locale(pamh);
    /* A locale we cannot send only costs the language: drop it rather than fail. */
    if (c.locale != NULL &&
        tg_string_check((const uint8_t *)c.locale, strlen(c.locale)) != TG_CODEC_OK)
        c.locale = NULL;
    tg_lang_open(&c.lang, c.locale);
    /* gettext lets LANGUAGE choose the module's own words: the daemon's follow the same choice. */
    const char *language = getenv("LANGUAGE");
    if (language != NULL && language[0] != '\0' && c.lang.loc != (locale_t)0) {
        tg_lang_catalog(&c.lang, c.catalog, sizeof(c.catalog));
        c.locale = c.catalog;
        tg_lang_close(&c.lang);
        tg_lang_open(&c.lang, c.locale); /* "C": English; the module's words are the daemon's */
    }
    if (!opt->noinput) {
        if (!tg_tty_open(&c.tty))
            TG_DEBUG(opt, pamh, "no terminal in the foreground: messages only");
        else if (!c.tty.input) /* sudo -S, say: its conversation reads stdin */
            TG_DEBUG(opt, pamh,
                     "stdin is not the terminal: a password is asked in the conversation");
    }
    rc = tg_prompt_run(&c, &ask_password, &typed);
    if (ask_password)
        rc = tg_password_step(&c, &typed);
    else if (typed.len > 0)
        tg_password_finish(&c, &typed); /* the refusal's code stands; the password goes on */
done:
    tg_line_wipe(&typed);
    tg_tty_close(&c.tty); /* the terminal exactly as it was found, whatever ended the call */
    tg_lang_close(&c.lang);
    TG_DEBUG(opt, pamh, "authenticate -> %s", pam_strerror(pamh, rc));
    return rc;
}

TG_PAM_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    struct tg_options opt;

    /* PAM_SILENT is not honoured for the prompt: it is the interaction itself, not chatter. */
    (void)flags;
    tg_options_parse(pamh, argc, argv, &opt);
    TG_DEBUG(&opt, pamh,
             "options: socket=%s policy=%d max_tries=%d timeout=%d noinput=%d report=%d",
             opt.socket, opt.policy, opt.max_tries, opt.timeout_s, opt.noinput, opt.report);
    return opt.report ? tg_report_password_success(pamh, &opt) : authenticate(pamh, &opt);
}

/* The password stack: `password optional pam_touchgate.so authtok` after the password module. */
TG_PAM_EXPORT int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    struct tg_options opt;

    tg_options_parse(pamh, argc, argv, &opt);
    return tg_report_password_change(pamh, flags, &opt);
}

TG_PAM_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh;
    (void)flags;
    (void)argc;
    (void)argv;
    return PAM_SUCCESS; /* fingerprints establish no credentials */
}
