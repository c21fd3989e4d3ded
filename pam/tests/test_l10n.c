/* The module's own words: gettext in the client's language, per call and per thread, the
 * process's and the thread's locale untouched. Reads the build tree's compiled catalog. */
#include <locale.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "tg_l10n.h"

#define EN_PROMPT "Password: "
#define ZH_PROMPT "密码："
#define EN_BUSY   "Fingerprint service busy: use your password"
#define ZH_BUSY   "指纹服务繁忙：请使用密码"

static const char *in(const char *locale, const char *msgid)
{
    static char out[256];
    struct tg_lang lang;
    tg_lang_open(&lang, locale);
    snprintf(out, sizeof(out), "%s", tg_text(&lang, msgid));
    tg_lang_close(&lang);
    return out;
}

static void test_languages(void)
{
    CHECK(strcmp(in("zh_CN.UTF-8", EN_PROMPT), ZH_PROMPT) == 0, "zh_CN.UTF-8: '%s'",
          in("zh_CN.UTF-8", EN_PROMPT));
    CHECK(strcmp(in("zh_CN.utf8", EN_BUSY), ZH_BUSY) == 0, "zh_CN.utf8");
    /* Only zh_CN.UTF-8 is installed: other spellings of the language still find it. */
    CHECK(strcmp(in("zh_CN", EN_PROMPT), ZH_PROMPT) == 0, "zh_CN without codeset: '%s'",
          in("zh_CN", EN_PROMPT));
    CHECK(strcmp(in("zh_CN.GB18030", EN_PROMPT), ZH_PROMPT) == 0, "zh_CN.GB18030");
    static const char *const english[] = {
        NULL,
        "",
        "C",
        "C.UTF-8",
        "POSIX",
        "en_US.UTF-8",
        "xx_YY.UTF-8",
        "de_DE.UTF-8",
        "../zh_CN",
        "/usr/lib/locale/zh_CN.utf8",
        "zh_CN/../../x",
        "zh CN",
        ".zh_CN",
    };
    for (size_t i = 0; i < sizeof(english) / sizeof(english[0]); i++)
        CHECK(strcmp(in(english[i], EN_PROMPT), EN_PROMPT) == 0, "'%s' is not English: '%s'",
              english[i] ? english[i] : "(null)", in(english[i], EN_PROMPT));
    /* A msgid the catalog lacks comes back as it is. */
    CHECK(strcmp(in("zh_CN.UTF-8", "no such message"), "no such message") == 0, "unknown msgid");
}

/* The caller's locale (process and thread) is what it was, before and after. */
static void test_locale_untouched(void)
{
    locale_t thread_before = uselocale((locale_t)0);
    const char *global = setlocale(LC_MESSAGES, NULL);
    char global_before[64];
    snprintf(global_before, sizeof(global_before), "%s", global ? global : "");
    struct tg_lang lang;
    tg_lang_open(&lang, "zh_CN.UTF-8");
    CHECK(uselocale((locale_t)0) == thread_before, "tg_lang_open changed the thread's locale");
    CHECK(strcmp(tg_text(&lang, EN_PROMPT), ZH_PROMPT) == 0, "translation");
    CHECK(uselocale((locale_t)0) == thread_before, "tg_text left the thread's locale changed");
    tg_lang_close(&lang);
    tg_lang_close(&lang); /* safe to repeat */
    global = setlocale(LC_MESSAGES, NULL);
    CHECK(global != NULL && strcmp(global, global_before) == 0, "process locale changed: %s",
          global);
}

struct worker {
    const char *locale;
    const char *want;
    int wrong;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    struct tg_lang lang;
    tg_lang_open(&lang, w->locale);
    for (int i = 0; i < 2000; i++)
        w->wrong += strcmp(tg_text(&lang, EN_PROMPT), w->want) != 0;
    tg_lang_close(&lang);
    return NULL;
}

/* Two clients' threads at once (a display manager with two greeters), each in its language. */
static void test_threads(void)
{
    struct worker w[4] = {
        { "zh_CN.UTF-8", ZH_PROMPT, 0 },
        { "C", EN_PROMPT, 0 },
        { "zh_CN.UTF-8", ZH_PROMPT, 0 },
        { "xx_YY", EN_PROMPT, 0 },
    };
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, work, &w[i]);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].wrong == 0, "thread %d (%s): %d wrong", i, w[i].locale, w[i].wrong);
    }
}

int main(void)
{
    test_languages();
    test_locale_untouched();
    test_threads();
    return check_summary("test_l10n");
}
