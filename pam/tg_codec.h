/* Bounded encoder/decoder for touchgate wire frames (layout and rules: touchgate_wire.h). */
#ifndef TG_CODEC_H
#define TG_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "touchgate_wire.h"

/* Largest complete frame: the length prefix plus the largest length it may carry. */
#define TG_FRAME_BUFFER (TG_LENGTH_SIZE + TG_MAX_FRAME)

/* Why a frame was refused. 0 is success; every other value is a reason to reject the frame. */
enum tg_codec_status {
    TG_CODEC_OK = 0,
    TG_CODEC_TRUNCATED,   /* fewer bytes than the length field says */
    TG_CODEC_LENGTH,      /* length field outside [TG_HEADER_REST, TG_MAX_FRAME] */
    TG_CODEC_VERSION,     /* version != TG_PROTOCOL_VERSION */
    TG_CODEC_KIND,        /* unknown kind */
    TG_CODEC_FLAGS,       /* reserved flags != 0 */
    TG_CODEC_REQUEST_ID,  /* request id 0 */
    TG_CODEC_TAG,         /* tag 0 or unknown tag */
    TG_CODEC_INT_SIZE,    /* int field not exactly 4 bytes */
    TG_CODEC_STRING_SIZE, /* string longer than TG_MAX_STRING */
    TG_CODEC_NUL,         /* NUL byte inside a string */
    TG_CODEC_UTF8,        /* string is not valid UTF-8 */
    TG_CODEC_DUPLICATE,   /* a non-list tag appears twice */
    TG_CODEC_TOO_MANY,    /* more than TG_MAX_FIELDS fields */
    TG_CODEC_OVERRUN,     /* a field (or field header) runs past the end of the frame */
    TG_CODEC_TRAILING,    /* bytes after the frame */
    TG_CODEC_TYPE,        /* encoder: tag used with the wrong value type */
    TG_CODEC_SPACE,       /* encoder: caller buffer too small */
};

/* One decoded field. String values point into the decoded buffer (not NUL-terminated). */
struct tg_field {
    uint16_t tag;
    uint16_t len;
    const uint8_t *value; /* len bytes inside the caller's buffer */
    int32_t ival;         /* the value when the tag's type is TG_TYPE_INT */
};

struct tg_frame {
    uint8_t kind;
    uint32_t request_id;
    size_t nfields;
    struct tg_field fields[TG_MAX_FIELDS];
};

/* Sticky-error writer: the first error is kept and reported by tg_writer_finish, so a
 * request is built with a run of puts and one check. */
struct tg_writer {
    uint8_t *buf;
    size_t cap;
    size_t len;
    size_t nfields;
    uint32_t seen; /* bit per tag already written (TG_TAG_LAST < 32) */
    enum tg_codec_status status;
};

/* Reads the length prefix of a frame (4 bytes) and checks its range. */
enum tg_codec_status tg_frame_length(const uint8_t prefix[TG_LENGTH_SIZE], uint32_t *length);

/* Decodes exactly one complete frame: buf must hold the frame and nothing else.
 * The frame's string fields point into buf, which must outlive *out. */
enum tg_codec_status tg_frame_decode(const uint8_t *buf, size_t len, struct tg_frame *out);

/* Checks a string value against the wire rules (size, no NUL, valid UTF-8). */
enum tg_codec_status tg_string_check(const uint8_t *s, size_t len);

/* Returns the first field with this tag, or NULL. */
const struct tg_field *tg_frame_find(const struct tg_frame *frame, uint16_t tag);

/* Copies an int field to *out; false if absent or not an int tag. */
bool tg_frame_int(const struct tg_frame *frame, uint16_t tag, int32_t *out);

/* Copies a string field NUL-terminated into dst (dstsize >= TG_MAX_STRING + 1 always fits);
 * false (and dst = "") if absent, not a string tag, or too long for dst. */
bool tg_frame_string(const struct tg_frame *frame, uint16_t tag, char *dst, size_t dstsize);

void tg_writer_init(struct tg_writer *w, uint8_t *buf, size_t cap, uint8_t kind,
                    uint32_t request_id);
void tg_put_int(struct tg_writer *w, uint16_t tag, int32_t value);
void tg_put_bytes(struct tg_writer *w, uint16_t tag, const uint8_t *value, size_t len);
void tg_put_string(struct tg_writer *w, uint16_t tag, const char *value);
/* Writes the length prefix; on success *len is the size of the whole frame. */
enum tg_codec_status tg_writer_finish(struct tg_writer *w, size_t *len);

const char *tg_codec_strerror(enum tg_codec_status status);

#endif /* TG_CODEC_H */
