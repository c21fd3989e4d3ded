/* The module's options (pam_touchgate(8)), parsed afresh on every call into a stack value. */
#include "tg_options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <syslog.h>

#include <security/pam_ext.h>

#include "tg_codec.h"
#include "touchgate_wire.h"

/* The one list of names: tg_option_apply below accepts exactly these, and the manual's drift
 * check (tests/test_options.c) compares them with pam_touchgate.8. */
const char *const tg_option_names[] = {
    "socket=", "policy=", "max_tries=", "timeout=", "device=",
    "debug",   "noinput", "report",     "authtok",  NULL,
};

void tg_options_default(struct tg_options *opt)
{
    *opt = (struct tg_options){ .socket = TG_DEFAULT_SOCKET, .policy = TG_POLICY_BIOMETRICS };
}

/* Returns the value of "name=value", or NULL if arg is another option. */
static const char *option_value(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return (strncmp(arg, name, n) == 0 && arg[n] == '=') ? arg + n + 1 : NULL;
}

/* Range-checked strtol: false (and *out untouched) unless the whole string is a number in range. */
static bool parse_int(const char *s, long lo, long hi, int *out)
{
    char *end = NULL;
    /* Digits only: strtol would also take leading blanks and a sign. */
    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

/* A reader's name as the daemon matches it (driver, full name or DRIVER/DEVICE-ID): 1 to
 * TG_DEVICE_NAME_MAX bytes of UTF-8 (what the wire carries), no control character. */
static bool device_name_ok(const char *s)
{
    size_t n = strnlen(s, TG_DEVICE_NAME_MAX + 1);
    if (n == 0 || n > TG_DEVICE_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f)
            return false;
    }
    return tg_string_check((const uint8_t *)s, n) == TG_CODEC_OK;
}

enum tg_option_status tg_option_apply(struct tg_options *opt, const char *arg)
{
    const char *v;

    if (strcmp(arg, "debug") == 0) {
        opt->debug = true;
    } else if (strcmp(arg, "noinput") == 0) {
        opt->noinput = true;
    } else if (strcmp(arg, "report") == 0) {
        opt->report = true;
    } else if (strcmp(arg, "authtok") == 0) {
        opt->authtok = true;
    } else if ((v = option_value(arg, "socket")) != NULL) {
        /* Absolute only: a relative path would depend on the client's working directory. */
        if (v[0] != '/' || strlen(v) >= sizeof(((struct sockaddr_un *)0)->sun_path))
            return TG_OPTION_BAD_VALUE;
        opt->socket = v;
    } else if ((v = option_value(arg, "policy")) != NULL) {
        if (strcmp(v, "biometrics") == 0)
            opt->policy = TG_POLICY_BIOMETRICS;
        else if (strcmp(v, "biometrics-or-password") == 0)
            opt->policy = TG_POLICY_BIOMETRICS_OR_PASSWORD;
        else
            return TG_OPTION_BAD_VALUE;
    } else if ((v = option_value(arg, "max_tries")) != NULL) {
        if (!parse_int(v, 1, TG_MAX_TRIES_LIMIT, &opt->max_tries))
            return TG_OPTION_BAD_VALUE;
    } else if ((v = option_value(arg, "timeout")) != NULL) {
        if (!parse_int(v, 1, TG_TIMEOUT_LIMIT, &opt->timeout_s))
            return TG_OPTION_BAD_VALUE;
    } else if ((v = option_value(arg, "device")) != NULL) {
        if (!device_name_ok(v))
            return TG_OPTION_BAD_VALUE;
        opt->device = v;
    } else {
        return TG_OPTION_UNKNOWN;
    }
    return TG_OPTION_OK;
}

static bool shown_escaped(unsigned char ch, bool utf8)
{
    return ch < 0x20 || ch == 0x7f || ch == '\\' || (ch > 0x7f && !utf8);
}

void tg_option_printable(const char *arg, char *out, size_t size)
{
    static const char hex[] = "0123456789abcdef";
    size_t len = strlen(arg), whole = 1, o = 0, i = 0;
    bool utf8 = tg_string_check((const uint8_t *)arg, len) == TG_CODEC_OK;
    if (size == 0)
        return;
    for (size_t k = 0; k < len; k++)
        whole += shown_escaped((unsigned char)arg[k], utf8) ? 4 : 1;
    /* Cut short: leave room for "..." and the NUL. */
    size_t room = whole <= size ? size - 1 : (size >= 4 ? size - 4 : 0);
    for (; i < len; i++) {
        unsigned char ch = (unsigned char)arg[i];
        bool escape = shown_escaped(ch, utf8);
        if (o + (escape ? 4 : 1) > room)
            break;
        if (escape) {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 0xf];
        } else {
            out[o++] = (char)ch;
        }
    }
    if (i < len) {
        /* Never half a UTF-8 character: a cut inside one drops the bytes copied of it. */
        if (utf8 && ((unsigned char)arg[i] & 0xc0) == 0x80) {
            while (o > 0 && ((unsigned char)out[o - 1] & 0xc0) == 0x80)
                o--;
            if (o > 0)
                o--;
        }
        if (o + 3 < size) {
            memcpy(out + o, "...", 3);
            o += 3;
        }
    }
    out[o] = '\0';
}

void tg_options_parse(pam_handle_t *pamh, int argc, const char **argv, struct tg_options *opt)
{
    tg_options_default(opt);
    for (int i = 0; i < argc; i++) {
        enum tg_option_status status = tg_option_apply(opt, argv[i]);
        if (status == TG_OPTION_OK)
            continue;
        char shown[TG_OPTION_SHOWN_MAX];
        tg_option_printable(argv[i], shown, sizeof(shown));
        pam_syslog(pamh, LOG_ERR,
                   status == TG_OPTION_UNKNOWN ? "unknown option ignored: %s"
                                               : "invalid option value ignored, default kept: %s",
                   shown);
    }
}
