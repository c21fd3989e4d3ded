/* Codec tests: the edges of every rule (UTF-8, the limits, what the encoder refuses); the shared
 * golden vectors are test_codec.c's. */
#include <string.h>

#include "check.h"
#include "tg_codec.h"

/* A RESULT frame with CODE 0 and one MESSAGE holding the given bytes. */
static size_t message_frame(uint8_t *buf, const uint8_t *msg, size_t len)
{
    static const uint8_t head[] = { 0, 0, 0,  0, 1, 0x40, 0, 0, 0, 0, 0,
                                    1, 0, 11, 0, 4, 0,    0, 0, 0, 0, 12 };
    memcpy(buf, head, sizeof(head));
    size_t total = sizeof(head) + 2 + len;
    buf[3] = (uint8_t)(total - 4);
    buf[sizeof(head)] = (uint8_t)(len >> 8);
    buf[sizeof(head) + 1] = (uint8_t)len;
    memcpy(buf + sizeof(head) + 2, msg, len);
    return total;
}

static void test_utf8(void)
{
    static const struct {
        const char *what;
        const char *bytes;
        bool ok;
    } cases[] = {
        { "ascii", "abc", true },
        { "empty", "", true },
        { "2-byte", "\xC3\xA9", true },
        { "3-byte max", "\xEF\xBF\xBF", true },
        { "U+D7FF", "\xED\x9F\xBF", true },
        { "U+E000", "\xEE\x80\x80", true },
        { "4-byte", "\xF0\x9F\x98\x80", true },
        { "U+10FFFF", "\xF4\x8F\xBF\xBF", true },
        { "overlong C0", "\xC0\x80", false },
        { "overlong C1", "\xC1\xBF", false },
        { "overlong E0", "\xE0\x80\xAF", false },
        { "overlong F0", "\xF0\x8F\xBF\xBF", false },
        { "surrogate D800", "\xED\xA0\x80", false },
        { "surrogate DFFF", "\xED\xBF\xBF", false },
        { "above U+10FFFF", "\xF4\x90\x80\x80", false },
        { "F5 lead", "\xF5\x80\x80\x80", false },
        { "FF", "\xFF", false },
        { "lone continuation", "\x80", false },
        { "cut 2-byte", "\xC3", false },
        { "cut 3-byte", "\xE4\xB8", false },
        { "cut 4-byte", "a\xF0\x9F\x98", false },
        { "bad 2nd continuation", "\xE4\xB8\x28", false },
    };
    uint8_t buf[256];
    struct tg_frame frame;
    for (size_t i = 0; i < COUNT(cases); i++) {
        size_t len = strlen(cases[i].bytes);
        enum tg_codec_status want = cases[i].ok ? TG_CODEC_OK : TG_CODEC_UTF8;
        CHECK(tg_string_check((const uint8_t *)cases[i].bytes, len) == want, "utf8 %s",
              cases[i].what);
        size_t n = message_frame(buf, (const uint8_t *)cases[i].bytes, len);
        CHECK(tg_frame_decode(buf, n, &frame) == want, "utf8 in frame: %s", cases[i].what);
    }
}

static void test_limits(void)
{
    static uint8_t buf[TG_FRAME_BUFFER + 64];
    static uint8_t big[TG_MAX_STRING + 1];
    struct tg_frame frame;
    struct tg_writer w;
    size_t len;

    /* TG_MAX_FIELDS list fields are fine; one more is not (the encoder refuses it too). */
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, 7);
    for (int i = 0; i < TG_MAX_FIELDS; i++)
        tg_put_string(&w, TG_TAG_FINGER, "right-thumb");
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_OK, "64 fields encode");
    CHECK(tg_frame_decode(buf, len, &frame) == TG_CODEC_OK && frame.nfields == TG_MAX_FIELDS,
          "64 fields decode");
    tg_put_string(&w, TG_TAG_FINGER, "x");
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_TOO_MANY, "65th field refused by encoder");
    /* Hand-append a 65th field to a valid 64-field frame. */
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, 7);
    for (int i = 0; i < TG_MAX_FIELDS; i++)
        tg_put_string(&w, TG_TAG_FINGER, "f");
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_OK, "64 short fields");
    memcpy(buf + len, "\x00\x09\x00\x01g", 5);
    len += 5;
    buf[0] = (uint8_t)((len - 4) >> 24);
    buf[1] = (uint8_t)((len - 4) >> 16);
    buf[2] = (uint8_t)((len - 4) >> 8);
    buf[3] = (uint8_t)(len - 4);
    CHECK(tg_frame_decode(buf, len, &frame) == TG_CODEC_TOO_MANY, "65 fields decode refused");

    /* Strings of exactly TG_MAX_STRING bytes fill a frame up to exactly TG_MAX_FRAME. */
    memset(big, 'x', sizeof(big));
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, 7);
    size_t used = TG_HEADER_REST;
    while (used + TG_FIELD_HEADER + TG_MAX_STRING <= TG_MAX_FRAME) {
        tg_put_bytes(&w, TG_TAG_DEVICE, big, TG_MAX_STRING);
        used += TG_FIELD_HEADER + TG_MAX_STRING;
    }
    size_t rest = TG_MAX_FRAME - used - TG_FIELD_HEADER;
    tg_put_bytes(&w, TG_TAG_FINGER, big, rest);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_OK && len == TG_FRAME_BUFFER,
          "a frame of exactly TG_MAX_FRAME encodes (%zu)", len);
    CHECK(tg_frame_decode(buf, len, &frame) == TG_CODEC_OK,
          "a frame of exactly TG_MAX_FRAME decodes");
    tg_put_bytes(&w, TG_TAG_FINGER, big, 0);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_SPACE, "one more field would exceed TG_MAX_FRAME");

    /* A string of TG_MAX_STRING + 1 bytes is refused by the encoder, too. */
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, 7);
    tg_put_bytes(&w, TG_TAG_MESSAGE, big, TG_MAX_STRING + 1);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_STRING_SIZE, "encoder: string too long");
    big[TG_MAX_STRING] = '\0';
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, 7);
    tg_put_string(&w, TG_TAG_MESSAGE, (const char *)big);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_OK, "encoder: string of TG_MAX_STRING");

    /* A field header cut in half at the end of the frame. */
    static const uint8_t half[] = { 0, 0, 0, 10, 1, 0x40, 0, 0, 0, 0, 0, 1, 0, 11 };
    CHECK(tg_frame_decode(half, sizeof(half), &frame) == TG_CODEC_OVERRUN, "half field header");
    /* Reply and request kinds at the edges of their ranges, and just outside. */
    static const struct {
        uint8_t kind;
        bool ok;
    } kinds[] = {
        { 0x00, false }, { 0x01, true }, { 0x11, true }, { 0x14, true },  { 0x15, false },
        { 0x3F, false }, { 0x40, true }, { 0x42, true }, { 0x43, false }, { 0xFF, false },
    };
    for (size_t i = 0; i < COUNT(kinds); i++) {
        uint8_t f[12] = { 0, 0, 0, 8, 1, kinds[i].kind, 0, 0, 0, 0, 0, 1 };
        CHECK((tg_frame_decode(f, sizeof(f), &frame) == TG_CODEC_OK) == kinds[i].ok, "kind 0x%02x",
              kinds[i].kind);
    }
    /* The length prefix alone: in range, and out of it on both sides. */
    uint32_t length = 99;
    CHECK(tg_frame_length((const uint8_t *)"\x00\x00\x00\x08", &length) == TG_CODEC_OK &&
              length == 8,
          "length 8");
    CHECK(tg_frame_length((const uint8_t *)"\x00\x00\x20\x00", &length) == TG_CODEC_OK &&
              length == TG_MAX_FRAME,
          "length TG_MAX_FRAME");
    CHECK(tg_frame_length((const uint8_t *)"\xff\xff\xff\xff", &length) == TG_CODEC_LENGTH &&
              length == 0,
          "length 2^32-1");
    CHECK(tg_frame_length((const uint8_t *)"\x00\x00\x00\x00", &length) == TG_CODEC_LENGTH,
          "length 0");
}

static void test_encoder_refusals(void)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_writer w;
    size_t len = 99;

    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVALUATE, 0);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_REQUEST_ID && len == 0, "request id 0");
    tg_writer_init(&w, buf, sizeof(buf), 0x7f, 1);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_KIND, "unknown kind");
    tg_writer_init(&w, buf, 8, TG_KIND_EVALUATE, 1);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_SPACE, "buffer smaller than a header");
    tg_writer_init(&w, buf, 20, TG_KIND_EVALUATE, 1);
    tg_put_string(&w, TG_TAG_USER, "a-long-user-name");
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_SPACE, "field beyond the buffer");

    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVALUATE, 1);
    tg_put_string(&w, TG_TAG_USER, "alice");
    tg_put_string(&w, TG_TAG_USER, "mallory");
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_DUPLICATE, "duplicate USER");
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVALUATE, 1);
    tg_put_int(&w, TG_TAG_USER, 1);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_TYPE, "int for a string tag");
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVALUATE, 1);
    tg_put_string(&w, TG_TAG_POLICY, "1");
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_TYPE, "string for an int tag");
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVALUATE, 1);
    tg_put_int(&w, 0, 1);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_TAG, "tag 0");
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVALUATE, 1);
    tg_put_int(&w, TG_TAG_LAST + 1, 1);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_TAG, "tag past TG_TAG_LAST");
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVALUATE, 1);
    tg_put_bytes(&w, TG_TAG_USER, (const uint8_t *)"a\0b", 3);
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_NUL, "NUL in a string");
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVALUATE, 1);
    tg_put_string(&w, TG_TAG_LOCALE, "\xC0\x80");
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_UTF8, "invalid UTF-8");
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVALUATE, 1);
    tg_put_string(&w, TG_TAG_USER, NULL);
    CHECK(tg_writer_finish(&w, &len) != TG_CODEC_OK, "NULL string");
    /* The first error sticks even when later puts are fine. */
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_EVALUATE, 1);
    tg_put_int(&w, TG_TAG_USER, 1);
    tg_put_string(&w, TG_TAG_SERVICE, "sudo");
    CHECK(tg_writer_finish(&w, &len) == TG_CODEC_TYPE && len == 0, "first error sticks");
}

int main(void)
{
    test_utf8();
    test_limits();
    test_encoder_refusals();
    return check_summary("test_codec_rules");
}
