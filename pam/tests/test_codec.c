/* Codec tests: the shared golden vectors (Tests/Vectors), decoded and re-encoded (the edges of
 * every rule: test_codec_rules.c). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tg_codec.h"

#define MAX_EXPECTED 8

struct expected_field {
    uint16_t tag;
    int32_t ival;
    const char *sval; /* NULL for an int field */
};

struct good_vector {
    const char *name;
    uint8_t kind;
    uint32_t request_id;
    size_t nfields;
    struct expected_field fields[MAX_EXPECTED];
};

/* The table of Tests/Vectors/README.md, field by field, in order. */
static const struct good_vector good[] = {
    { "evaluate_request",
      TG_KIND_EVALUATE,
      0x01020304,
      7,
      { { TG_TAG_USER, 0, "alice" },
        { TG_TAG_POLICY, 1, NULL },
        { TG_TAG_SERVICE, 0, "sudo" },
        { TG_TAG_MAX_TRIES, 3, NULL },
        { TG_TAG_TIMEOUT, 30, NULL },
        { TG_TAG_LOCALE, 0, "en_US.UTF-8" },
        { TG_TAG_TTY, 0, "/dev/pts/1" } } },
    { "can_evaluate_request",
      TG_KIND_CAN_EVALUATE,
      1,
      3,
      { { TG_TAG_USER, 0, "bob" }, { TG_TAG_POLICY, 2, NULL }, { TG_TAG_SERVICE, 0, "login" } } },
    { "cancel_request", TG_KIND_CANCEL, 0x01020304, 0, { { 0, 0, NULL } } },
    { "result_success",
      TG_KIND_RESULT,
      0x01020304,
      2,
      { { TG_TAG_CODE, 0, NULL }, { TG_TAG_MESSAGE, 0, "Fingerprint recognised" } } },
    { "result_max_tries",
      TG_KIND_RESULT,
      9,
      2,
      { { TG_TAG_CODE, -1, NULL },
        { TG_TAG_MESSAGE, 0, "Fingerprint not recognised after 3 tries" } } },
    { "result_backoff",
      TG_KIND_RESULT,
      10,
      4,
      { { TG_TAG_CODE, -12, NULL },
        { TG_TAG_REASON, 0, "backoff" },
        { TG_TAG_SECONDS, 60, NULL },
        { TG_TAG_MESSAGE, 0, "Too many wrong passwords: try again in 60 seconds" } } },
    { "result_list",
      TG_KIND_RESULT,
      11,
      3,
      { { TG_TAG_CODE, 0, NULL },
        { TG_TAG_FINGER, 0, "left-index-finger" },
        { TG_TAG_FINGER, 0, "right-thumb" } } },
    { "progress_retry",
      TG_KIND_PROGRESS,
      0x01020304,
      3,
      { { TG_TAG_PROGRESS, 2, NULL },
        { TG_TAG_STYLE, 1, NULL },
        { TG_TAG_MESSAGE, 0, "Swipe was too short, try again" } } },
    { "progress_prompt_zh",
      TG_KIND_PROGRESS,
      0xFFFFFFFF,
      3,
      { { TG_TAG_PROGRESS, 1, NULL },
        { TG_TAG_STYLE, 1, NULL },
        { TG_TAG_MESSAGE, 0, "请将手指放在指纹识别器上" } } },
    { "progress_enroll_stage",
      TG_KIND_PROGRESS,
      5,
      3,
      { { TG_TAG_PROGRESS, 5, NULL }, { TG_TAG_STAGE, 2, NULL }, { TG_TAG_STAGES, 5, NULL } } },
    { "progress_keepalive", TG_KIND_PROGRESS, 5, 1, { { TG_TAG_PROGRESS, 6, NULL } } },
    { "progress_prompt_accepts_password",
      TG_KIND_PROGRESS,
      12,
      4,
      { { TG_TAG_PROGRESS, 1, NULL },
        { TG_TAG_STYLE, 1, NULL },
        { TG_TAG_MESSAGE, 0, "Place your finger on the fingerprint reader" },
        { TG_TAG_FLAGS, TG_FLAG_ACCEPTS_PASSWORD, NULL } } },
    { "result_password_accepted",
      TG_KIND_RESULT,
      12,
      4,
      { { TG_TAG_CODE, 0, NULL },
        { TG_TAG_REASON, 0, TG_REASON_PASSWORD },
        { TG_TAG_FLAGS, TG_FLAG_BY_PASSWORD, NULL },
        { TG_TAG_MESSAGE, 0, "Password accepted" } } },
};

struct bad_vector {
    const char *name;
    enum tg_codec_status why;
};

static const struct bad_vector bad[] = {
    { "bad_version", TG_CODEC_VERSION },
    { "bad_flags", TG_CODEC_FLAGS },
    { "bad_zero_request_id", TG_CODEC_REQUEST_ID },
    { "bad_unknown_kind", TG_CODEC_KIND },
    { "bad_unknown_tag", TG_CODEC_TAG },
    { "bad_tag_zero", TG_CODEC_TAG },
    { "bad_int_size", TG_CODEC_INT_SIZE },
    { "bad_string_nul", TG_CODEC_NUL },
    { "bad_duplicate_tag", TG_CODEC_DUPLICATE },
    { "bad_truncated_field", TG_CODEC_TRUNCATED },
    { "bad_field_overruns", TG_CODEC_OVERRUN },
    { "bad_length_too_small", TG_CODEC_LENGTH },
    { "bad_length_too_large", TG_CODEC_LENGTH },
    { "bad_string_too_long", TG_CODEC_STRING_SIZE },
    { "bad_invalid_utf8", TG_CODEC_UTF8 },
};

static const char *vector_dir = "../Tests/Vectors";

/* Reads NAME.hex into buf; returns the byte count, or -1 if missing or not hex. */
static long load_vector(const char *name, uint8_t *buf, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.hex", vector_dir, name);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long n = 0;
    int hi = -1, c;
    while ((c = fgetc(f)) != EOF) {
        int v;
        if (c >= '0' && c <= '9')
            v = c - '0';
        else if (c >= 'a' && c <= 'f')
            v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v = c - 'A' + 10;
        else if (c == '\n' || c == '\r' || c == ' ')
            continue;
        else {
            n = -1;
            break;
        }
        if (hi < 0) {
            hi = v;
            continue;
        }
        if ((size_t)n == cap) {
            n = -1;
            break;
        }
        buf[n++] = (uint8_t)(hi << 4 | v);
        hi = -1;
    }
    fclose(f);
    return hi >= 0 ? -1 : n;
}

static bool field_matches(const struct tg_field *got, const struct expected_field *want)
{
    if (got->tag != want->tag)
        return false;
    if (want->sval == NULL)
        return got->len == 4 && got->ival == want->ival;
    return got->len == strlen(want->sval) && memcmp(got->value, want->sval, got->len) == 0;
}

static void encode_expected(const struct good_vector *v, uint8_t *out, size_t cap, size_t *len,
                            enum tg_codec_status *st)
{
    struct tg_writer w;
    tg_writer_init(&w, out, cap, v->kind, v->request_id);
    for (size_t i = 0; i < v->nfields; i++) {
        if (v->fields[i].sval == NULL)
            tg_put_int(&w, v->fields[i].tag, v->fields[i].ival);
        else
            tg_put_string(&w, v->fields[i].tag, v->fields[i].sval);
    }
    *st = tg_writer_finish(&w, len);
}

static void test_good_vectors(void)
{
    uint8_t buf[TG_FRAME_BUFFER + 16], enc[TG_FRAME_BUFFER];
    struct tg_frame frame;

    for (size_t i = 0; i < COUNT(good); i++) {
        const struct good_vector *v = &good[i];
        long n = load_vector(v->name, buf, sizeof(buf));
        CHECK(n > 0, "%s: vector missing or unreadable", v->name);
        if (n <= 0)
            continue;
        enum tg_codec_status st = tg_frame_decode(buf, (size_t)n, &frame);
        CHECK(st == TG_CODEC_OK, "%s: decode: %s", v->name, tg_codec_strerror(st));
        CHECK(frame.kind == v->kind, "%s: kind 0x%02x", v->name, frame.kind);
        CHECK(frame.request_id == v->request_id, "%s: request id 0x%08x", v->name,
              frame.request_id);
        CHECK(frame.nfields == v->nfields, "%s: %zu fields", v->name, frame.nfields);
        for (size_t k = 0; k < v->nfields && k < frame.nfields; k++)
            CHECK(field_matches(&frame.fields[k], &v->fields[k]), "%s: field %zu (tag %u)", v->name,
                  k, frame.fields[k].tag);

        /* Encoding the README's fields must give the vector's bytes exactly. */
        size_t len = 0;
        encode_expected(v, enc, sizeof(enc), &len, &st);
        CHECK(st == TG_CODEC_OK && len == (size_t)n && memcmp(enc, buf, len) == 0,
              "%s: re-encoding differs (%s, %zu vs %ld bytes)", v->name, tg_codec_strerror(st), len,
              n);

        /* Every proper prefix is incomplete, and one extra byte is trailing. */
        bool prefixes_rejected = true;
        for (long cut = 0; cut < n; cut++)
            if (tg_frame_decode(buf, (size_t)cut, &frame) == TG_CODEC_OK || frame.nfields != 0)
                prefixes_rejected = false;
        CHECK(prefixes_rejected, "%s: a truncated copy was accepted", v->name);
        buf[n] = 0;
        CHECK(tg_frame_decode(buf, (size_t)n + 1, &frame) == TG_CODEC_TRAILING,
              "%s: trailing byte accepted", v->name);
    }
}

static void test_accessors(void)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_frame frame;
    char text[TG_MAX_STRING + 1];
    int32_t code = 99;

    long n = load_vector("result_backoff", buf, sizeof(buf));
    CHECK(n > 0 && tg_frame_decode(buf, (size_t)n, &frame) == TG_CODEC_OK, "result_backoff");
    CHECK(tg_frame_int(&frame, TG_TAG_CODE, &code) && code == TG_ERR_PASSWORD_BACKOFF,
          "CODE read as %d", code);
    CHECK(!tg_frame_int(&frame, TG_TAG_STAGE, &code) && code == 0, "absent int reads as 0");
    CHECK(!tg_frame_int(&frame, TG_TAG_REASON, &code), "a string tag is not an int");
    CHECK(tg_frame_string(&frame, TG_TAG_REASON, text, sizeof(text)) &&
              strcmp(text, "backoff") == 0,
          "REASON read as '%s'", text);
    CHECK(!tg_frame_string(&frame, TG_TAG_REASON, text, 4) && text[0] == '\0',
          "a too-small buffer gets nothing, not a cut string");
    CHECK(!tg_frame_string(&frame, TG_TAG_CODE, text, sizeof(text)), "an int tag is no string");
    CHECK(!tg_frame_string(&frame, TG_TAG_TTY, text, sizeof(text)), "absent string");
}

static void test_bad_vectors(void)
{
    uint8_t buf[TG_FRAME_BUFFER + 16];
    struct tg_frame frame;

    for (size_t i = 0; i < COUNT(bad); i++) {
        long n = load_vector(bad[i].name, buf, sizeof(buf));
        CHECK(n > 0, "%s: vector missing or unreadable", bad[i].name);
        if (n <= 0)
            continue;
        memset(&frame, 0xA5, sizeof(frame));
        enum tg_codec_status st = tg_frame_decode(buf, (size_t)n, &frame);
        CHECK(st == bad[i].why, "%s: got '%s', want '%s'", bad[i].name, tg_codec_strerror(st),
              tg_codec_strerror(bad[i].why));
        CHECK(frame.kind == 0 && frame.request_id == 0 && frame.nfields == 0,
              "%s: out-parameter not zeroed", bad[i].name);
    }
}

/* Every *.hex in the directory must be in one of the tables: a new vector cannot go unchecked. */
static void test_all_vectors_known(void)
{
    DIR *d = opendir(vector_dir);
    CHECK(d != NULL, "cannot open %s", vector_dir);
    if (d == NULL)
        return;
    size_t seen = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".hex") != 0)
            continue;
        bool known = false;
        for (size_t i = 0; i < COUNT(good); i++)
            known |=
                strlen(good[i].name) == len - 4 && strncmp(good[i].name, e->d_name, len - 4) == 0;
        for (size_t i = 0; i < COUNT(bad); i++)
            known |=
                strlen(bad[i].name) == len - 4 && strncmp(bad[i].name, e->d_name, len - 4) == 0;
        CHECK(known, "%s is not in the test's tables", e->d_name);
        seen++;
    }
    closedir(d);
    CHECK(seen == COUNT(good) + COUNT(bad), "found %zu vectors, tables list %zu", seen,
          COUNT(good) + COUNT(bad));
}

int main(int argc, char **argv)
{
    if (argc > 1)
        vector_dir = argv[1];
    test_all_vectors_known();
    test_good_vectors();
    test_bad_vectors();
    test_accessors();
    return check_summary("test_codec");
}
