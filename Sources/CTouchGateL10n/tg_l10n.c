/* Words in a person's language: gettext, text domain "touchgate", looked up per call. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* newlocale and uselocale */
#endif
#include "tg_l10n.h"

#include <libintl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define NAME_MAX_LEN 64

/* Only names that look like locale names (ll_CC.codeset@modifier): the name comes from the
 * person's environment and becomes a path under the locale directories, so no '/', no "..". */
static bool plausible_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > NAME_MAX_LEN || name[0] == '.' || strstr(name, "..") != NULL)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-' || ch == '@';
        if (!ok)
            return false;
    }
    return true;
}

static bool english_anyway(const char *name)
{
    return strcmp(name, "C") == 0 || strncmp(name, "C.", 2) == 0 || strcmp(name, "POSIX") == 0;
}

void tg_lang_open(struct tg_lang *lang, const char *name)
{
    tg_lang_open_at(lang, name, TG_LOCALEDIR);
}

void tg_lang_open_at(struct tg_lang *lang, const char *name, const char *localedir)
{
    char utf8[NAME_MAX_LEN + 16];

    lang->loc = (locale_t)0;
    if (name == NULL || !plausible_name(name) || english_anyway(name))
        return;
    /* LC_MESSAGES only, over the "C" base: nothing but message lookup uses this locale. */
    lang->loc = newlocale(LC_MESSAGES_MASK, name, (locale_t)0);
    if (lang->loc == (locale_t)0) {
        /* "zh_CN" or "zh_CN.GB18030" when only zh_CN.UTF-8 is installed: the catalog is read as
         * UTF-8 anyway (bind_textdomain_codeset below), so the language is what matters. */
        size_t base = strcspn(name, ".@");
        snprintf(utf8, sizeof(utf8), "%.*s.UTF-8", (int)base, name);
        lang->loc = newlocale(LC_MESSAGES_MASK, utf8, (locale_t)0);
    }
    if (lang->loc == (locale_t)0)
        return;
    /* Process-wide, but only for our own domain, and idempotent: glibc locks around it. */
    bindtextdomain(TG_TEXT_DOMAIN, localedir);
    bind_textdomain_codeset(TG_TEXT_DOMAIN, "UTF-8");
}

void tg_lang_close(struct tg_lang *lang)
{
    if (lang->loc != (locale_t)0)
        freelocale(lang->loc);
    lang->loc = (locale_t)0;
}

const char *tg_text(const struct tg_lang *lang, const char *msgid)
{
    if (lang->loc == (locale_t)0)
        return msgid;
    /* The thread's locale, not the process's: other threads of the client and the client's own
     * setlocale() are untouched, and it is put back before anything else runs on this thread. */
    locale_t saved = uselocale(lang->loc);
    if (saved == (locale_t)0)
        return msgid;
    const char *text = dgettext(TG_TEXT_DOMAIN, msgid);
    uselocale(saved);
    return text;
}

const char *tg_strerror(const struct tg_lang *lang, int e)
{
    if (lang->loc == (locale_t)0)
        return strerror(e);
    /* The C library's catalog has no codeset of ours bound: its sentence comes in the locale's
     * LC_CTYPE, which must be UTF-8 (lang's own is "C", which would turn it into question marks). */
    locale_t copy = duplocale(lang->loc);
    locale_t utf8 = copy != (locale_t)0 ? newlocale(LC_CTYPE_MASK, "C.UTF-8", copy) : (locale_t)0;
    if (utf8 == (locale_t)0) {
        if (copy != (locale_t)0)
            freelocale(copy);
        return strerror(e);
    }
    const char *text = strerror_l(e, utf8);
    freelocale(utf8);
    return text;
}

void tg_lang_catalog(const struct tg_lang *lang, char *out, size_t size)
{
    static const char field[] = "\nLanguage: ";
    out[0] = '\0';
    if (lang->loc == (locale_t)0)
        return;
    snprintf(out, size, "C");
    locale_t saved = uselocale(lang->loc);
    if (saved == (locale_t)0)
        return;
    const char *header = dgettext(TG_TEXT_DOMAIN, ""); /* the catalog's header, or "" */
    uselocale(saved);
    const char *at = header != NULL ? strstr(header, field) : NULL;
    if (at == NULL)
        return;
    at += sizeof(field) - 1;
    size_t n = strcspn(at, "\n");
    if (n == 0 || n >= size || n > NAME_MAX_LEN)
        return;
    char name[NAME_MAX_LEN + 1];
    memcpy(name, at, n);
    name[n] = '\0';
    if (plausible_name(name))
        memcpy(out, name, n + 1);
}

const char *tg_text_plural(const struct tg_lang *lang, const char *singular, const char *plural,
                           unsigned long n)
{
    if (lang->loc == (locale_t)0)
        return n == 1 ? singular : plural;
    locale_t saved = uselocale(lang->loc);
    if (saved == (locale_t)0)
        return n == 1 ? singular : plural;
    const char *text = dngettext(TG_TEXT_DOMAIN, singular, plural, n);
    uselocale(saved);
    return text;
}
