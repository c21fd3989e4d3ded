/* The module's options (pam_touchgate(8)), parsed afresh on every call into a stack value. */
#ifndef TG_OPTIONS_H
#define TG_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include <security/pam_modules.h>

#define TG_DEFAULT_SOCKET   "/run/touchgate/touchgated.sock"
#define TG_DEVICE_NAME_MAX  255 /* bytes of a device= value */
#define TG_OPTION_SHOWN_MAX 320 /* bytes of an option as logged, with its NUL */

struct tg_options {
    const char *socket; /* points into argv, which outlives the call */
    const char *device; /* points into argv; NULL = not given: the daemon's default reader */
    int policy;         /* TG_POLICY_* */
    int max_tries;      /* 0 = not given: the daemon's value applies */
    int timeout_s;      /* 0 = not given */
    bool debug;
    bool noinput;
    bool report;
    bool
        authtok; /* the sealed login password as PAM_AUTHTOK after a match; with report: renew it */
};

enum tg_option_status {
    TG_OPTION_OK,
    TG_OPTION_UNKNOWN,   /* no such option: ignored */
    TG_OPTION_BAD_VALUE, /* a known option with a value out of range: the default is kept */
};

/* Every option the parser accepts, as written in the manual ("name" or "name="); NULL ends it. */
extern const char *const tg_option_names[];

void tg_options_default(struct tg_options *opt);

/* Applies one argument. Never partly: on anything but TG_OPTION_OK, opt is unchanged. */
enum tg_option_status tg_option_apply(struct tg_options *opt, const char *arg);

/* An argument as it may be logged: control characters, DEL and backslashes as \xNN, and every
 * byte above 0x7f too unless the whole argument is UTF-8; cut to fit out (ending "..."), which
 * always ends with a NUL. Options come from root's /etc/pam.d, but a log line is read by people
 * and parsers, so an escape sequence or a line break in one is shown, not obeyed. */
void tg_option_printable(const char *arg, char *out, size_t size);

/* Defaults, then every argument in order; unknown options and bad values are logged, ignored. */
void tg_options_parse(pam_handle_t *pamh, int argc, const char **argv, struct tg_options *opt);

#endif /* TG_OPTIONS_H */
