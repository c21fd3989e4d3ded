/* Options: each one parsed and range-checked, nothing applied partly, and the manual naming
 * exactly the options the parser accepts (the drift check of pam_touchgate.8). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tg_options.h"
#include "touchgate_wire.h"

static void test_defaults_and_values(void)
{
    struct tg_options o;
    tg_options_default(&o);
    CHECK(strcmp(o.socket, TG_DEFAULT_SOCKET) == 0 && o.policy == TG_POLICY_BIOMETRICS &&
              o.max_tries == 0 && o.timeout_s == 0 && o.device == NULL && !o.debug && !o.noinput &&
              !o.report,
          "defaults");

    CHECK(tg_option_apply(&o, "socket=/run/x.sock") == TG_OPTION_OK &&
              strcmp(o.socket, "/run/x.sock") == 0,
          "socket=");
    CHECK(tg_option_apply(&o, "policy=biometrics-or-password") == TG_OPTION_OK &&
              o.policy == TG_POLICY_BIOMETRICS_OR_PASSWORD,
          "policy=biometrics-or-password");
    CHECK(tg_option_apply(&o, "policy=biometrics") == TG_OPTION_OK &&
              o.policy == TG_POLICY_BIOMETRICS,
          "policy=biometrics");
    CHECK(tg_option_apply(&o, "max_tries=1") == TG_OPTION_OK && o.max_tries == 1, "max_tries=1");
    CHECK(tg_option_apply(&o, "max_tries=100") == TG_OPTION_OK && o.max_tries == 100,
          "max_tries=100");
    CHECK(tg_option_apply(&o, "timeout=3600") == TG_OPTION_OK && o.timeout_s == 3600,
          "timeout=3600");
    CHECK(tg_option_apply(&o, "debug") == TG_OPTION_OK && o.debug, "debug");
    CHECK(tg_option_apply(&o, "noinput") == TG_OPTION_OK && o.noinput, "noinput");
    CHECK(tg_option_apply(&o, "report") == TG_OPTION_OK && o.report, "report");
}

/* A bad value keeps what was there; an unknown option changes nothing. */
static void test_bad_values(void)
{
    static const char *const bad[] = {
        "socket=relative.sock", "socket=",
        "max_tries=0",          "max_tries=101",
        "max_tries=abc",        "max_tries=3x",
        "max_tries=",           "max_tries=99999999999999999999",
        "max_tries=-1",         "timeout=0",
        "timeout=3601",         "timeout= 5",
        "policy=nope",          "policy=",
        "policy=Biometrics",
    };
    struct tg_options o, before;
    tg_options_default(&o);
    tg_option_apply(&o, "max_tries=2");
    tg_option_apply(&o, "timeout=7");
    before = o;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(tg_option_apply(&o, bad[i]) == TG_OPTION_BAD_VALUE, "%s not refused", bad[i]);
        CHECK(memcmp(&o, &before, sizeof(o)) == 0, "%s changed the options", bad[i]);
    }
    char longpath[200];
    memset(longpath, 'a', sizeof(longpath));
    memcpy(longpath, "socket=/", 8);
    longpath[sizeof(longpath) - 1] = '\0';
    CHECK(tg_option_apply(&o, longpath) == TG_OPTION_BAD_VALUE,
          "a socket path too long for sun_path");
    static const char *const unknown[] = {
        "bogus", "Debug", "debug=1", "report=yes", "nullok", ""
    };
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        CHECK(tg_option_apply(&o, unknown[i]) == TG_OPTION_UNKNOWN, "'%s' not unknown", unknown[i]);
        CHECK(memcmp(&o, &before, sizeof(o)) == 0, "'%s' changed the options", unknown[i]);
    }
}

/* device=: a reader's name sent as written, 1 to TG_DEVICE_NAME_MAX bytes of UTF-8 without a
 * control character; a bad one keeps the reader given before (or none: the daemon's default). */
static void test_device(void)
{
    struct tg_options o, before;
    tg_options_default(&o);
    CHECK(tg_option_apply(&o, "device=virtual_image") == TG_OPTION_OK &&
              strcmp(o.device, "virtual_image") == 0,
          "device=virtual_image");
    CHECK(tg_option_apply(&o, u8"device=Lecteur d\u2019empreintes") == TG_OPTION_OK &&
              strcmp(o.device, u8"Lecteur d\u2019empreintes") == 0,
          "device= in UTF-8 beyond ASCII");
    CHECK(tg_option_apply(&o, "device=synaptics/0 Synaptics Sensors") == TG_OPTION_OK &&
              strcmp(o.device, "synaptics/0 Synaptics Sensors") == 0,
          "device= with a slash and blanks");
    char name[sizeof("device=") + TG_DEVICE_NAME_MAX + 1];
    snprintf(name, sizeof(name), "device=%0*d", TG_DEVICE_NAME_MAX, 7);
    CHECK(tg_option_apply(&o, name) == TG_OPTION_OK && strlen(o.device) == TG_DEVICE_NAME_MAX,
          "device= of %d bytes", TG_DEVICE_NAME_MAX);

    static const char *const bad[] = {
        "device=",         "device=virtual\timage",   "device=virtual_image\n",
        "device=\x1b[31m", "device=virtual\x7fimage", "device=caf\xe9",
        "device=caf\xc3",  "device=\xc0\xaf",         "device=\xed\xa0\x80",
    };
    tg_option_apply(&o, "device=synaptics");
    before = o;
    for (size_t i = 0; i < COUNT(bad); i++) {
        CHECK(tg_option_apply(&o, bad[i]) == TG_OPTION_BAD_VALUE, "'%s' not refused", bad[i]);
        CHECK(memcmp(&o, &before, sizeof(o)) == 0, "'%s' changed the options", bad[i]);
    }
    snprintf(name, sizeof(name), "device=%0*d", TG_DEVICE_NAME_MAX + 1, 7);
    CHECK(tg_option_apply(&o, name) == TG_OPTION_BAD_VALUE, "a device name of %d bytes",
          TG_DEVICE_NAME_MAX + 1);
    CHECK(memcmp(&o, &before, sizeof(o)) == 0, "a device name too long changed the options");

    /* Given alone, a bad name leaves none: the daemon's default reader. */
    tg_options_default(&o);
    CHECK(tg_option_apply(&o, "device=") == TG_OPTION_BAD_VALUE && o.device == NULL,
          "an empty device= set a reader");
}

/* What a refused option looks like in the log: shown, never obeyed (no escape sequence or line
 * break reaches syslog), and never longer than the buffer. */
static void test_printable(void)
{
    static const struct {
        const char *arg, *shown;
    } cases[] = {
        { "debug", "debug" },
        { "device=\x1b[31m", "device=\\x1b[31m" },
        { "bogus\nfake line", "bogus\\x0afake line" },
        { "a\\x41", "a\\x5cx41" },
        { "del\x7f", "del\\x7f" },
        { "device=caf\xe9", "device=caf\\xe9" },
        { "device=\xc0\xaf", "device=\\xc0\\xaf" },
        { u8"device=d\u2019empreintes", u8"device=d\u2019empreintes" },
    };
    char out[TG_OPTION_SHOWN_MAX];
    for (size_t i = 0; i < COUNT(cases); i++) {
        tg_option_printable(cases[i].arg, out, sizeof(out));
        CHECK(strcmp(out, cases[i].shown) == 0, "'%s' shown as '%s'", cases[i].shown, out);
    }

    char longest[1000];
    memset(longest, 'a', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0';
    tg_option_printable(longest, out, sizeof(out));
    CHECK(strlen(out) == sizeof(out) - 1 && strcmp(out + strlen(out) - 3, "...") == 0,
          "a long option cut to %zu bytes with '...': %zu bytes", sizeof(out) - 1, strlen(out));
    longest[sizeof(out) - 1] = '\0';
    tg_option_printable(longest, out, sizeof(out));
    CHECK(strcmp(out, longest) == 0, "an option that fits exactly was cut");
    memset(longest, '\n', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0';
    tg_option_printable(longest, out, sizeof(out));
    CHECK(strlen(out) < sizeof(out) && strchr(out, '\n') == NULL &&
              strcmp(out + strlen(out) - 3, "...") == 0,
          "line breaks escaped and cut within the buffer");

    char small[8];
    tg_option_printable(u8"ab\u2019cdefgh", small, sizeof(small));
    CHECK(strcmp(small, "ab...") == 0, "a cut inside a UTF-8 character gave '%s'", small);
    tg_option_printable("ab\x1b"
                        "cdefgh",
                        small, sizeof(small));
    CHECK(strcmp(small, "ab...") == 0, "a cut inside an escape gave '%s'", small);
    char one[1] = { 'x' };
    tg_option_printable("anything", one, sizeof(one));
    CHECK(one[0] == '\0', "a one-byte buffer holds only the NUL");
}

/* A value the manual could show for each option, so the parser can be asked about it. */
static const char *sample_value(const char *name)
{
    if (strcmp(name, "socket=") == 0)
        return "/run/touchgate/touchgated.sock";
    if (strcmp(name, "policy=") == 0)
        return "biometrics";
    if (strcmp(name, "device=") == 0)
        return "virtual_image";
    return "3";
}

/* The manual's options: each ".It Cm NAME" in its OPTIONS section (NAME, or NAME= when followed
 * by "Ns = Ns"). */
static int manual_options(const char *path, char names[][32], int max)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int n = 0;
    bool in_options = false;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL && n < max) {
        if (strncmp(line, ".Sh ", 4) == 0)
            in_options = strncmp(line + 4, "OPTIONS", 7) == 0;
        if (!in_options || strncmp(line, ".It Cm ", 7) != 0)
            continue;
        size_t len = strcspn(line + 7, " \n");
        if (len == 0 || len >= 30)
            continue;
        snprintf(names[n], 32, "%.*s%s", (int)len, line + 7, strstr(line, "Ns = Ns") ? "=" : "");
        n++;
    }
    fclose(f);
    return n;
}

static void test_manual_names_every_option(const char *manual)
{
    char names[32][32];
    int n = manual_options(manual, names, 32);
    CHECK(n > 0, "no options found in %s", manual);

    /* Every option of the manual is one the parser accepts. */
    for (int i = 0; i < n; i++) {
        struct tg_options o;
        char arg[128];
        tg_options_default(&o);
        bool valued = names[i][strlen(names[i]) - 1] == '=';
        snprintf(arg, sizeof(arg), "%s%s", names[i], valued ? sample_value(names[i]) : "");
        CHECK(tg_option_apply(&o, arg) == TG_OPTION_OK,
              "the manual names '%s', which the parser refuses", arg);
    }
    /* Every option the parser accepts is in the manual, and the list is the parser's truth. */
    int listed = 0;
    for (const char *const *name = tg_option_names; *name != NULL; name++, listed++) {
        bool found = false;
        for (int i = 0; i < n; i++)
            found |= strcmp(names[i], *name) == 0;
        CHECK(found, "the parser accepts '%s', which the manual does not name", *name);
        struct tg_options o;
        char arg[128];
        tg_options_default(&o);
        bool valued = (*name)[strlen(*name) - 1] == '=';
        snprintf(arg, sizeof(arg), "%s%s", *name, valued ? sample_value(*name) : "");
        CHECK(tg_option_apply(&o, arg) == TG_OPTION_OK,
              "tg_option_names lists '%s', which the parser refuses", arg);
    }
    CHECK(listed == n, "the manual names %d options, the parser %d", n, listed);
}

/* The parser's own names, read from its source (strcmp(arg, "x") and option_value(arg, "x")):
 * each must be in tg_option_names, so the list cannot fall behind the code. */
static void test_list_is_the_parsers(const char *source)
{
    FILE *f = fopen(source, "r");
    char line[512];
    int found = 0;
    CHECK(f != NULL, "cannot read %s", source);
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        static const char *const calls[] = { "strcmp(arg, \"", "option_value(arg, \"" };
        for (int k = 0; k < 2; k++) {
            const char *p = strstr(line, calls[k]);
            if (p == NULL)
                continue;
            p += strlen(calls[k]);
            char name[40];
            snprintf(name, sizeof(name), "%.*s%s", (int)strcspn(p, "\""), p, k == 1 ? "=" : "");
            bool listed = false;
            for (const char *const *n = tg_option_names; *n != NULL; n++)
                listed |= strcmp(*n, name) == 0;
            CHECK(listed, "%s accepts '%s', which tg_option_names lacks", source, name);
            found++;
        }
    }
    fclose(f);
    CHECK(found >= 7, "only %d option names found in %s", found, source);
}

/* The manual itself: mandoc finds no warning or error in it. */
static void test_manual_lints_clean(const char *manual)
{
    char cmd[256], out[512];
    snprintf(cmd, sizeof(cmd), "mandoc -T lint -W warning %s 2>&1", manual);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL, "cannot run mandoc");
    if (p == NULL)
        return;
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    CHECK(status == 0 && n == 0, "mandoc -T lint (status %d): %s", status, out);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    test_defaults_and_values();
    test_bad_values();
    test_device();
    test_printable();
    /* Run from pam/ by `make check`. */
    test_manual_names_every_option("pam_touchgate.8");
    test_list_is_the_parsers("tg_options.c");
    test_manual_lints_clean("pam_touchgate.8");
    return check_summary("test_options");
}
