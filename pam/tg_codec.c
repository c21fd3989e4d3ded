/* Bounded encoder/decoder for touchgate wire frames, in the style of OpenSSH sshbuf. */
#include "tg_codec.h"

#include <string.h>

static const uint8_t tag_types[TG_TAG_LAST + 1] = TG_TAG_TYPES;
_Static_assert(sizeof((uint8_t[])TG_TAG_TYPES) == TG_TAG_LAST + 1, "one type per tag");
_Static_assert(TG_TAG_LAST < 32, "the seen-tag bitmask is a uint32_t");
_Static_assert(TG_MAX_STRING <= UINT16_MAX, "field lengths are u16");

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t get_u32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static bool kind_known(uint8_t kind)
{
    return (kind >= TG_KIND_CAN_EVALUATE && kind <= TG_KIND_KEYRING_RENEW) ||
           (kind >= TG_KIND_RESULT && kind <= TG_KIND_EVENT);
}

static int tag_type(uint16_t tag)
{
    return tag <= TG_TAG_LAST ? tag_types[tag] : 0;
}

static bool tag_repeatable(uint16_t tag)
{
    return tag == TG_TAG_FINGER || tag == TG_TAG_DEVICE || tag == TG_TAG_JSON;
}

/* Strict UTF-8 (RFC 3629): no overlongs, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the first continuation byte */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                lo = 0xA0; /* overlong */
            if (c == 0xED)
                hi = 0x9F; /* surrogates U+D800..U+DFFF */
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                lo = 0x90; /* overlong */
            if (c == 0xF4)
                hi = 0x8F; /* above U+10FFFF */
        } else {
            return false; /* continuation byte, C0/C1 overlong lead, or F5..FF */
        }
        if (len - i - 1 < need)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
        i += need + 1;
    }
    return true;
}

enum tg_codec_status tg_string_check(const uint8_t *s, size_t len)
{
    if (len > TG_MAX_STRING)
        return TG_CODEC_STRING_SIZE;
    if (len > 0 && memchr(s, 0, len) != NULL)
        return TG_CODEC_NUL;
    if (!utf8_valid(s, len))
        return TG_CODEC_UTF8;
    return TG_CODEC_OK;
}

enum tg_codec_status tg_frame_length(const uint8_t prefix[TG_LENGTH_SIZE], uint32_t *length)
{
    *length = 0;
    uint32_t n = get_u32(prefix);
    if (n < TG_HEADER_REST || n > TG_MAX_FRAME)
        return TG_CODEC_LENGTH;
    *length = n;
    return TG_CODEC_OK;
}

enum tg_codec_status tg_frame_decode(const uint8_t *buf, size_t len, struct tg_frame *out)
{
    enum tg_codec_status st;
    uint32_t length;
    uint32_t seen = 0;

    memset(out, 0, sizeof(*out));
    if (len < TG_LENGTH_SIZE)
        return TG_CODEC_TRUNCATED;
    if ((st = tg_frame_length(buf, &length)) != TG_CODEC_OK)
        return st;
    if (len - TG_LENGTH_SIZE < length)
        return TG_CODEC_TRUNCATED;
    if (len - TG_LENGTH_SIZE > length)
        return TG_CODEC_TRAILING;

    /* From here on, length >= TG_HEADER_REST guarantees the header is inside buf. */
    const uint8_t *p = buf + TG_LENGTH_SIZE;
    size_t left = length;
    if (p[0] != TG_PROTOCOL_VERSION)
        return TG_CODEC_VERSION;
    if (!kind_known(p[1]))
        return TG_CODEC_KIND;
    if (get_u16(p + 2) != 0)
        return TG_CODEC_FLAGS;
    uint32_t request_id = get_u32(p + 4);
    if (request_id == 0)
        return TG_CODEC_REQUEST_ID;
    p += TG_HEADER_REST;
    left -= TG_HEADER_REST;

    struct tg_frame frame = { .kind = buf[TG_LENGTH_SIZE + 1], .request_id = request_id };
    while (left > 0) {
        if (left < TG_FIELD_HEADER)
            return TG_CODEC_OVERRUN;
        uint16_t tag = get_u16(p);
        uint16_t flen = get_u16(p + 2);
        p += TG_FIELD_HEADER;
        left -= TG_FIELD_HEADER;
        if (frame.nfields == TG_MAX_FIELDS)
            return TG_CODEC_TOO_MANY;
        int type = tag_type(tag);
        if (type == 0)
            return TG_CODEC_TAG;
        if (flen > left)
            return TG_CODEC_OVERRUN;
        if (!tag_repeatable(tag) && (seen & (1u << tag)))
            return TG_CODEC_DUPLICATE;
        seen |= 1u << tag;

        struct tg_field *f = &frame.fields[frame.nfields];
        f->tag = tag;
        f->len = flen;
        f->value = p;
        if (type == TG_TYPE_INT) {
            if (flen != 4)
                return TG_CODEC_INT_SIZE;
            f->ival = (int32_t)get_u32(p); /* two's complement on every Linux target */
        } else if ((st = tg_string_check(p, flen)) != TG_CODEC_OK) {
            return st;
        }
        frame.nfields++;
        p += flen;
        left -= flen;
    }
    /* Publish only a frame that passed every check. */
    *out = frame;
    return TG_CODEC_OK;
}

const struct tg_field *tg_frame_find(const struct tg_frame *frame, uint16_t tag)
{
    for (size_t i = 0; i < frame->nfields; i++)
        if (frame->fields[i].tag == tag)
            return &frame->fields[i];
    return NULL;
}

bool tg_frame_int(const struct tg_frame *frame, uint16_t tag, int32_t *out)
{
    *out = 0;
    if (tag_type(tag) != TG_TYPE_INT)
        return false;
    const struct tg_field *f = tg_frame_find(frame, tag);
    if (f == NULL)
        return false;
    *out = f->ival;
    return true;
}

bool tg_frame_string(const struct tg_frame *frame, uint16_t tag, char *dst, size_t dstsize)
{
    if (dstsize == 0)
        return false;
    dst[0] = '\0';
    if (tag_type(tag) != TG_TYPE_STRING)
        return false;
    const struct tg_field *f = tg_frame_find(frame, tag);
    if (f == NULL || f->len >= dstsize)
        return false;
    memcpy(dst, f->value, f->len);
    dst[f->len] = '\0';
    return true;
}

void tg_writer_init(struct tg_writer *w, uint8_t *buf, size_t cap, uint8_t kind,
                    uint32_t request_id)
{
    memset(w, 0, sizeof(*w));
    w->buf = buf;
    w->cap = cap < TG_FRAME_BUFFER ? cap : TG_FRAME_BUFFER; /* never build an oversized frame */
    if (w->cap < TG_HEADER_SIZE) {
        w->status = TG_CODEC_SPACE;
        return;
    }
    if (!kind_known(kind)) {
        w->status = TG_CODEC_KIND;
        return;
    }
    if (request_id == 0) {
        w->status = TG_CODEC_REQUEST_ID;
        return;
    }
    put_u32(buf, 0); /* length, filled in by tg_writer_finish */
    buf[4] = TG_PROTOCOL_VERSION;
    buf[5] = kind;
    put_u16(buf + 6, 0);
    put_u32(buf + 8, request_id);
    w->len = TG_HEADER_SIZE;
}

/* Appends one field after the same checks the decoder applies, so we never send
 * a frame the daemon would have to reject. */
static void put_field(struct tg_writer *w, uint16_t tag, int type, const uint8_t *value, size_t len)
{
    if (w->status != TG_CODEC_OK)
        return;
    if (tag_type(tag) == 0) {
        w->status = TG_CODEC_TAG;
        return;
    }
    if (tag_type(tag) != type) {
        w->status = TG_CODEC_TYPE;
        return;
    }
    if (type == TG_TYPE_STRING && (w->status = tg_string_check(value, len)) != TG_CODEC_OK)
        return;
    if (!tag_repeatable(tag) && (w->seen & (1u << tag))) {
        w->status = TG_CODEC_DUPLICATE;
        return;
    }
    if (w->nfields == TG_MAX_FIELDS) {
        w->status = TG_CODEC_TOO_MANY;
        return;
    }
    if (w->cap - w->len < TG_FIELD_HEADER + len) {
        w->status = TG_CODEC_SPACE;
        return;
    }
    put_u16(w->buf + w->len, tag);
    put_u16(w->buf + w->len + 2, (uint16_t)len);
    if (len > 0)
        memcpy(w->buf + w->len + TG_FIELD_HEADER, value, len);
    w->len += TG_FIELD_HEADER + len;
    w->nfields++;
    w->seen |= 1u << tag;
}

void tg_put_int(struct tg_writer *w, uint16_t tag, int32_t value)
{
    uint8_t be[4];
    put_u32(be, (uint32_t)value);
    put_field(w, tag, TG_TYPE_INT, be, sizeof(be));
}

void tg_put_bytes(struct tg_writer *w, uint16_t tag, const uint8_t *value, size_t len)
{
    put_field(w, tag, TG_TYPE_STRING, value, len);
}

void tg_put_string(struct tg_writer *w, uint16_t tag, const char *value)
{
    if (value == NULL) {
        if (w->status == TG_CODEC_OK)
            w->status = TG_CODEC_TYPE;
        return;
    }
    /* strnlen: a string longer than the limit is refused without scanning all of it. */
    put_field(w, tag, TG_TYPE_STRING, (const uint8_t *)value, strnlen(value, TG_MAX_STRING + 1));
}

enum tg_codec_status tg_writer_finish(struct tg_writer *w, size_t *len)
{
    *len = 0;
    if (w->status != TG_CODEC_OK)
        return w->status;
    put_u32(w->buf, (uint32_t)(w->len - TG_LENGTH_SIZE));
    *len = w->len;
    return TG_CODEC_OK;
}

const char *tg_codec_strerror(enum tg_codec_status status)
{
    switch (status) {
    case TG_CODEC_OK:
        return "ok";
    case TG_CODEC_TRUNCATED:
        return "frame shorter than its length";
    case TG_CODEC_LENGTH:
        return "length out of range";
    case TG_CODEC_VERSION:
        return "unsupported protocol version";
    case TG_CODEC_KIND:
        return "unknown kind";
    case TG_CODEC_FLAGS:
        return "reserved flags set";
    case TG_CODEC_REQUEST_ID:
        return "request id 0";
    case TG_CODEC_TAG:
        return "unknown tag";
    case TG_CODEC_INT_SIZE:
        return "int field not 4 bytes";
    case TG_CODEC_STRING_SIZE:
        return "string too long";
    case TG_CODEC_NUL:
        return "NUL in string";
    case TG_CODEC_UTF8:
        return "invalid UTF-8";
    case TG_CODEC_DUPLICATE:
        return "repeated tag";
    case TG_CODEC_TOO_MANY:
        return "too many fields";
    case TG_CODEC_OVERRUN:
        return "field overruns frame";
    case TG_CODEC_TRAILING:
        return "trailing bytes";
    case TG_CODEC_TYPE:
        return "wrong value type for tag";
    case TG_CODEC_SPACE:
        return "buffer too small";
    }
    return "unknown codec error";
}
