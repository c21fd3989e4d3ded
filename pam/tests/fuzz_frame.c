/* libFuzzer harness: the decoder never crashes, and every frame it accepts re-encodes to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "tg_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t out[TG_FRAME_BUFFER];
    struct tg_frame frame;
    char text[TG_MAX_STRING + 1];
    int32_t ival;

    if (tg_frame_decode(data, size, &frame) != TG_CODEC_OK) {
        if (frame.nfields != 0 || frame.kind != 0 || frame.request_id != 0)
            abort(); /* a rejected frame must leave the out-parameter zeroed */
        return 0;
    }
    struct tg_writer w;
    tg_writer_init(&w, out, sizeof(out), frame.kind, frame.request_id);
    for (size_t i = 0; i < frame.nfields; i++) {
        const struct tg_field *f = &frame.fields[i];
        if (tg_frame_int(&frame, f->tag, &ival))
            tg_put_int(&w, f->tag, f->ival);
        else
            tg_put_bytes(&w, f->tag, f->value, f->len);
        tg_frame_string(&frame, f->tag, text, sizeof(text));
    }
    size_t len = 0;
    if (tg_writer_finish(&w, &len) != TG_CODEC_OK || len != size || memcmp(out, data, size) != 0)
        abort(); /* encoder and decoder disagree about what a valid frame is */
    return 0;
}
