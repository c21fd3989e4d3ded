/* Words in a person's language: gettext, text domain "touchgate", looked up per call in a given
 * locale — shared by the PAM module (the client's language), the daemon (each request's) and the CLI. */
#ifndef TG_L10N_H
#define TG_L10N_H

#include <locale.h>
#include <stddef.h>

#define TG_TEXT_DOMAIN "touchgate"

/* The PAM module's is fixed at build time (make LOCALEDIR=…), never from the environment: it runs
 * inside setuid programs, whose environment belongs to the person being authenticated. */
#ifndef TG_LOCALEDIR
#define TG_LOCALEDIR "/usr/share/locale"
#endif

/* Marks a msgid for xgettext where the text is looked up later. */
#define N_(text) (text)

/* One call's language. loc (locale_t)0: no usable locale, so English (the msgids themselves). */
struct tg_lang {
    locale_t loc;
};

/* Opens an LC_MESSAGES-only locale for `name` (a LANG-style value; NULL, "C" or "POSIX" mean
 * English). Never changes the process's or the thread's locale. */
void tg_lang_open(struct tg_lang *lang, const char *name);

/* The same with the catalogs read from `localedir` (the daemon's and the CLI's, chosen at start). */
void tg_lang_open_at(struct tg_lang *lang, const char *name, const char *localedir);

/* Frees what tg_lang_open made; safe to repeat. */
void tg_lang_close(struct tg_lang *lang);

/* msgid translated into lang: the calling thread's locale is switched for the lookup alone and
 * restored before returning. The result is never freed; it lives as long as the process. */
const char *tg_text(const struct tg_lang *lang, const char *msgid);

/* The singular or plural form for n (the language's own plural rule, ngettext). */
const char *tg_text_plural(const struct tg_lang *lang, const char *singular, const char *plural,
                           unsigned long n);

/* The C library's sentence for errno value e in lang (strerror_l), from its own catalogs, in
 * UTF-8. Valid until the next call on this thread. */
const char *tg_strerror(const struct tg_lang *lang, int e);

/* The language tg_text gives in lang, as a locale name for the daemon: gettext lets the process's
 * LANGUAGE list choose the catalog ahead of the locale's own name, so that is the catalog's
 * "Language:" header ("zh_CN"), "C" when no catalog is found (English), "" when lang is English
 * anyway. out holds at least 2 bytes. */
void tg_lang_catalog(const struct tg_lang *lang, char *out, size_t size);

#endif /* TG_L10N_H */
