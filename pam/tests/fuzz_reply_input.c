/* The input of fuzz_reply.c (its layout: fuzz_reply.h): seeds, and a mutator that changes the frames in
 * it as frames (a field's value, a request id, a kind, a body with its length kept right, whole
 * frames added, dropped or repeated), besides libFuzzer's own byte mutations. */
#include "fuzz_reply.h"

#include <stdio.h>
#include <string.h>

#include "fake.h"
#include "tg_codec.h"

struct seed {
    uint8_t buf[INPUT_HEADER + 2 * TG_FRAME_BUFFER];
    size_t len;
    bool broken; /* a frame could not be encoded */
};

static void seed_start(struct seed *s, uint8_t mode, uint8_t chunk)
{
    memset(s, 0, sizeof(*s));
    s->buf[0] = mode;
    s->buf[1] = chunk;
    s->len = INPUT_HEADER;
}

/* What follows answers the password step: the EVALUATE's part ends here. */
static void seed_split(struct seed *s)
{
    size_t split = s->len - INPUT_HEADER;
    s->buf[2] = (uint8_t)(split >> 8);
    s->buf[3] = (uint8_t)split;
}

static void seed_frame(struct seed *s, struct tg_writer *w)
{
    size_t len = 0;
    if (tg_writer_finish(w, &len) == TG_CODEC_OK)
        s->len += len;
    else
        s->broken = true;
}

static void seed_result(struct seed *s, uint32_t id, int32_t code, const char *reason,
                        int32_t flags, const char *message)
{
    struct tg_writer w;
    tg_writer_init(&w, s->buf + s->len, sizeof(s->buf) - s->len, TG_KIND_RESULT, id);
    fake_put_result(&w, code, reason, 0, flags, message);
    seed_frame(s, &w);
}

static void seed_progress(struct seed *s, int32_t progress, int32_t style, const char *message)
{
    struct tg_writer w;
    tg_writer_init(&w, s->buf + s->len, sizeof(s->buf) - s->len, TG_KIND_PROGRESS, OURS);
    tg_put_int(&w, TG_TAG_PROGRESS, progress);
    if (message != NULL) {
        tg_put_int(&w, TG_TAG_STYLE, style);
        tg_put_string(&w, TG_TAG_MESSAGE, message);
    }
    seed_frame(s, &w);
}

static bool seed_write(const char *dir, const char *name, struct seed *s)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = s->broken ? NULL : fopen(path, "wb");
    if (f == NULL)
        return false;
    bool ok = fwrite(s->buf, 1, s->len, f) == s->len;
    return fclose(f) == 0 && ok;
}

#define PROMPT "Swipe your finger across the fingerprint reader"

bool write_seeds(const char *dir)
{
    struct seed s;
    bool ok = true;

    /* a match, the stream in one piece */
    seed_start(&s, ANSWER_EMPTY, 0);
    seed_progress(&s, TG_PROGRESS_PROMPT, TG_STYLE_INFO, PROMPT);
    seed_result(&s, OURS, TG_OK, NULL, 0, "Fingerprint recognised");
    seed_split(&s);
    ok &= seed_write(dir, "match", &s);

    /* a match after keepalives, in four pieces */
    seed_start(&s, ANSWER_EMPTY, 0x13);
    seed_progress(&s, TG_PROGRESS_KEEPALIVE, 0, NULL);
    seed_progress(&s, TG_PROGRESS_RETRY, TG_STYLE_INFO, "Swipe was too short, try again");
    seed_result(&s, OURS, TG_OK, NULL, 0, NULL);
    seed_split(&s);
    ok &= seed_write(dir, "match-chunked", &s);

    /* no match: the tries used up */
    seed_start(&s, ANSWER_EMPTY, 0);
    seed_progress(&s, TG_PROGRESS_NO_MATCH, TG_STYLE_ERROR, "Fingerprint not recognised");
    seed_result(&s, OURS, TG_ERR_AUTHENTICATION_FAILED, TG_REASON_MAX_TRIES, 0,
                "Fingerprint not recognised after 2 tries: use your password");
    seed_split(&s);
    ok &= seed_write(dir, "max-tries", &s);

    /* busy at accept: the unsolicited refusal */
    seed_start(&s, ANSWER_EMPTY, 0);
    seed_result(&s, TG_UNSOLICITED_ID, TG_ERR_BUSY, TG_REASON_BUSY, 0, "Too many connections");
    seed_split(&s);
    ok &= seed_write(dir, "busy", &s);

    /* the daemon stopping as it accepted */
    seed_start(&s, ANSWER_EMPTY, 0);
    seed_result(&s, TG_UNSOLICITED_ID, TG_ERR_SYSTEM_CANCEL, TG_REASON_SHUTDOWN, 0,
                "Fingerprint service stopping: use your password");
    seed_split(&s);
    ok &= seed_write(dir, "stopping", &s);

    /* a success for another request */
    seed_start(&s, ANSWER_EMPTY, 0);
    seed_result(&s, OURS + 1, TG_OK, NULL, 0, NULL);
    seed_split(&s);
    ok &= seed_write(dir, "other-request", &s);

    /* locked out: the password step, which the daemon accepts */
    seed_start(&s, ANSWER_PASSWORD, 0);
    seed_result(&s, OURS, TG_ERR_BIOMETRY_LOCKOUT, TG_REASON_LOCKOUT, TG_FLAG_ASK_PASSWORD,
                "Fingerprint locked after 5 failed attempts: enter your password");
    seed_split(&s);
    seed_progress(&s, TG_PROGRESS_KEEPALIVE, 0, NULL);
    seed_result(&s, OURS, TG_OK, TG_REASON_PASSWORD, TG_FLAG_BY_PASSWORD, "Password accepted");
    ok &= seed_write(dir, "password-step", &s);

    /* required once after boot: a wrong password, in three pieces */
    seed_start(&s, ANSWER_PASSWORD, 0x22);
    seed_progress(&s, TG_PROGRESS_PROMPT, TG_STYLE_INFO, PROMPT);
    seed_result(&s, OURS, TG_ERR_PASSWORD_REQUIRED, TG_REASON_BOOT, TG_FLAG_ASK_PASSWORD,
                "Enter your password: it is required once after the computer starts");
    seed_split(&s);
    seed_result(&s, OURS, TG_ERR_AUTHENTICATION_FAILED, TG_REASON_WRONG_PASSWORD,
                TG_FLAG_BY_PASSWORD, "Wrong password");
    ok &= seed_write(dir, "password-wrong", &s);

    /* authtok, debug: a match that releases the login password */
    seed_start(&s, MODE_AUTHTOK | MODE_DEBUG, 0);
    {
        struct tg_writer w;
        tg_writer_init(&w, s.buf + s.len, sizeof(s.buf) - s.len, TG_KIND_RESULT, OURS);
        tg_put_int(&w, TG_TAG_CODE, TG_OK);
        tg_put_string(&w, TG_TAG_PASSWORD, "login password");
        seed_frame(&s, &w);
    }
    seed_split(&s);
    ok &= seed_write(dir, "match-authtok", &s);

    /* a refusal near the largest frame, in eight pieces */
    seed_start(&s, ANSWER_EMPTY, 0x07);
    {
        static char text[TG_MAX_STRING + 1];
        struct tg_writer w;
        memset(text, 'x', TG_MAX_STRING);
        tg_writer_init(&w, s.buf + s.len, sizeof(s.buf) - s.len, TG_KIND_RESULT, OURS);
        tg_put_int(&w, TG_TAG_CODE, TG_ERR_TEMPLATE_DAMAGED);
        tg_put_string(&w, TG_TAG_MESSAGE, text);
        for (int i = 0; i < 6; i++)
            tg_put_string(&w, TG_TAG_FINGER, text);
        seed_frame(&s, &w);
    }
    seed_split(&s);
    ok &= seed_write(dir, "long-refusal", &s);

    /* a conversation that fails: the prompt's message ends it */
    seed_start(&s, ANSWER_CONV_FAILS, 0);
    seed_progress(&s, TG_PROGRESS_PROMPT, TG_STYLE_INFO, PROMPT);
    seed_result(&s, OURS, TG_OK, NULL, 0, NULL);
    seed_split(&s);
    ok &= seed_write(dir, "conversation-gone", &s);
    return ok;
}

/* ---- the mutator ---------------------------------------------------------------------------- */

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static uint32_t rng;

static uint32_t pick(uint32_t n)
{
    rng ^= rng << 13; /* xorshift32 */
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return n == 0 ? 0 : rng % n;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Values an int field may take that mean something: every outcome, the flags, the progress kinds
 * and styles, the extremes. */
/* clang-format off */
static const int32_t codes[] = {
    TG_OK, TG_ERR_AUTHENTICATION_FAILED, TG_ERR_USER_CANCEL, TG_ERR_USER_FALLBACK,
    TG_ERR_SYSTEM_CANCEL, TG_ERR_PASSWORD_NOT_SET, TG_ERR_BIOMETRY_NOT_AVAILABLE,
    TG_ERR_BIOMETRY_NOT_ENROLLED, TG_ERR_BIOMETRY_LOCKOUT, TG_ERR_APP_CANCEL,
    TG_ERR_INVALID_CONTEXT, TG_ERR_PASSWORD_REQUIRED, TG_ERR_PASSWORD_BACKOFF,
    TG_ERR_NOT_INTERACTIVE, TG_ERR_USER_UNKNOWN, TG_ERR_NOT_PERMITTED, TG_ERR_BAD_REQUEST,
    TG_ERR_INTERNAL, TG_ERR_NOT_FOUND, TG_ERR_TIMEOUT, TG_ERR_TEMPLATE_DAMAGED, TG_ERR_BUSY,
    TG_ERR_DUPLICATE,
};
static const int32_t flags[] = {
    TG_FLAG_ASK_PASSWORD, TG_FLAG_ACCEPTS_PASSWORD, TG_FLAG_BY_PASSWORD,
    TG_FLAG_ASK_PASSWORD | TG_FLAG_BY_PASSWORD,
};
static const int32_t others[] = {
    TG_PROGRESS_PROMPT, TG_PROGRESS_RETRY, TG_PROGRESS_NO_MATCH, TG_PROGRESS_QUEUED,
    TG_PROGRESS_KEEPALIVE, TG_PROGRESS_NOTE, TG_STYLE_ERROR, INT32_MIN, INT32_MAX,
};
/* clang-format on */

static int32_t any_value(void)
{
    switch (pick(3)) {
    case 0:
        return codes[pick(COUNT(codes))];
    case 1:
        return flags[pick(COUNT(flags))];
    default:
        return others[pick(COUNT(others))];
    }
}

/* Mostly the module's own request: the frames that can end its exchange. */
static const uint32_t ids[] = { OURS, OURS, OURS, OURS + 1, TG_UNSOLICITED_ID };
static const uint8_t kinds[] = { TG_KIND_RESULT, TG_KIND_PROGRESS, TG_KIND_EVENT,
                                 TG_KIND_EVALUATE };

static size_t split_of(const uint8_t *d, size_t size)
{
    size_t split = (size_t)d[2] << 8 | d[3];
    return split < size - INPUT_HEADER ? split : size - INPUT_HEADER;
}

struct span {
    size_t at, len; /* a whole frame: its length prefix at d + at */
    bool first;     /* in the EVALUATE's part */
};

/* The whole frames of both parts, in order, as far as the length prefixes lead. */
static size_t find_frames(const uint8_t *d, size_t size, struct span *out, size_t most)
{
    size_t n = 0;
    size_t bounds[3] = { INPUT_HEADER, INPUT_HEADER + split_of(d, size), size };
    for (int k = 0; k < 2; k++) {
        for (size_t pos = bounds[k]; n < most && bounds[k + 1] - pos >= TG_HEADER_SIZE;) {
            uint32_t length = get_u32(d + pos);
            if (length < TG_HEADER_REST || length > TG_MAX_FRAME ||
                bounds[k + 1] - pos - TG_LENGTH_SIZE < length)
                break;
            out[n++] = (struct span){ pos, TG_LENGTH_SIZE + length, k == 0 };
            pos += TG_LENGTH_SIZE + length;
        }
    }
    return n;
}

/* Replaces old bytes at d + at by the new ones (not inside d), moving the split with them when
 * they are the EVALUATE's; 0 if the result does not fit. */
static size_t replace(uint8_t *d, size_t size, size_t max, size_t at, size_t old,
                      const uint8_t *new, size_t new_len, bool first)
{
    size_t split = split_of(d, size);
    size_t out = size - old + new_len;
    if (out > max || out - INPUT_HEADER > 0xffff)
        return 0;
    memmove(d + at + new_len, d + at + old, size - at - old);
    memcpy(d + at, new, new_len);
    if (first) {
        split = split - old + new_len;
        d[2] = (uint8_t)(split >> 8);
        d[3] = (uint8_t)split;
    }
    return out;
}

/* A frame of the daemon's, made by the encoder from values that mean something. */
static size_t new_frame(uint8_t *buf, size_t cap)
{
    struct tg_writer w;
    size_t len = 0;
    uint8_t kind = pick(3) == 0 ? TG_KIND_PROGRESS : TG_KIND_RESULT;
    tg_writer_init(&w, buf, cap, kind, ids[pick(COUNT(ids))]);
    if (kind == TG_KIND_RESULT && pick(8) != 0)
        tg_put_int(&w, TG_TAG_CODE, pick(2) == 0 ? TG_OK : codes[pick(COUNT(codes))]);
    if (kind == TG_KIND_PROGRESS)
        tg_put_int(&w, TG_TAG_PROGRESS, (int32_t)pick(9));
    if (pick(2) == 0)
        tg_put_int(&w, TG_TAG_FLAGS, flags[pick(COUNT(flags))]);
    if (pick(2) == 0)
        tg_put_string(&w, TG_TAG_MESSAGE, "m");
    if (kind == TG_KIND_RESULT && pick(4) == 0)
        tg_put_string(&w, TG_TAG_PASSWORD, "pw");
    return tg_writer_finish(&w, &len) == TG_CODEC_OK ? len : 0;
}

/* One change to a frame; 0 when there was none to make. */
static size_t mutate_frames(uint8_t *d, size_t size, size_t max)
{
    static uint8_t frame[TG_FRAME_BUFFER];
    struct span f[64];
    size_t n = find_frames(d, size, f, 64);
    struct span at = n > 0 ? f[pick((uint32_t)n)] : (struct span){ INPUT_HEADER, 0, true };
    size_t len = 0;

    switch (pick(9)) {
    case 0: /* the mode, the chunks */
        d[pick(2)] ^= (uint8_t)(1u << pick(8));
        return size;
    case 1: /* the split, at a frame's start or end */
        len = at.at - INPUT_HEADER + (pick(2) == 0 ? at.len : 0);
        d[2] = (uint8_t)(len >> 8);
        d[3] = (uint8_t)len;
        return size;
    case 2: /* whose frame */
        if (n == 0)
            return 0;
        put_u32(d + at.at + 8, ids[pick(COUNT(ids))]);
        return size;
    case 3: /* its kind */
        if (n == 0)
            return 0;
        d[at.at + 5] = kinds[pick(sizeof(kinds))];
        return size;
    case 4: { /* an int's value (a field of 4 bytes) */
        size_t ints[TG_MAX_FIELDS], nints = 0, end = at.at + at.len;
        for (size_t pos = at.at + TG_HEADER_SIZE; n > 0 && nints < COUNT(ints) && end - pos >= 4;) {
            size_t flen = (size_t)d[pos + 2] << 8 | d[pos + 3];
            if (flen > end - pos - 4)
                break;
            if (flen == 4)
                ints[nints++] = pos + 4;
            pos += 4 + flen;
        }
        if (nints == 0)
            return 0;
        put_u32(d + ints[pick((uint32_t)nints)], (uint32_t)any_value());
        return size;
    }
    case 5: /* its fields, byte-mutated, the length prefix kept right */
        if (n == 0 || at.len == TG_HEADER_SIZE)
            return 0;
        memcpy(frame, d + at.at, at.len);
        len = TG_HEADER_SIZE + LLVMFuzzerMutate(frame + TG_HEADER_SIZE, at.len - TG_HEADER_SIZE,
                                                TG_FRAME_BUFFER - TG_HEADER_SIZE);
        put_u32(frame, (uint32_t)(len - TG_LENGTH_SIZE));
        return replace(d, size, max, at.at, at.len, frame, len, at.first);
    case 6: /* dropped */
        return n == 0 ? 0 : replace(d, size, max, at.at, at.len, frame, 0, at.first);
    case 7: /* repeated */
        if (n == 0)
            return 0;
        memcpy(frame, d + at.at, at.len);
        return replace(d, size, max, at.at, 0, frame, at.len, at.first);
    default: /* a new one, before or after */
        len = new_frame(frame, sizeof(frame));
        return len == 0 ? 0
                        : replace(d, size, max, at.at + (pick(2) == 0 ? at.len : 0), 0, frame, len,
                                  at.first);
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    rng = seed | 1;
    size_t out = 0;
    if (size >= INPUT_HEADER && max_size >= size && pick(4) != 0)
        out = mutate_frames(data, size, max_size);
    return out != 0 ? out : LLVMFuzzerMutate(data, size, max_size);
}
