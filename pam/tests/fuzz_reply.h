/* What the parts of fuzz_reply.c share: the layout of its input (whose seeds and mutator are in
 * fuzz_reply_input.c) and the daemon's side (fuzz_reply_daemon.c).
 *
 *   [mode] [chunk] [split: u16 big-endian] [stream]
 *
 *   mode   bits 0-1: the conversation's answer to "Password: " (ANSWER_*); bit 2 noinput;
 *          bit 3 authtok; bit 4 debug
 *   chunk  0: the stream in one write; else cut at up to 1 + chunk % 8 places (chosen by a
 *          generator seeded with it), each piece read by the module before the next is sent
 *   split  the first `split` bytes of the stream (at most all of it) answer the EVALUATE, the
 *          rest the VERIFY_PASSWORD of a password step, if the module makes one
 *
 * In the stream, request id OURS stands for the id of the module's request: the harness writes
 * that id into every frame of OURS it finds by following the length prefixes. Any other id is
 * another request's (TG_UNSOLICITED_ID: the daemon's refusal of a request it never read). */
#ifndef TG_FUZZ_REPLY_H
#define TG_FUZZ_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tg_codec.h"

#define INPUT_HEADER 4
#define OURS         1u

enum {
    ANSWER_EMPTY,      /* "": the password step is cancelled */
    ANSWER_PASSWORD,   /* ANSWER_TEXT: the password step sends it */
    ANSWER_NONE,       /* the conversation fails on a prompt, shows messages */
    ANSWER_CONV_FAILS, /* the conversation fails on everything */
};
#define ANSWER_TEXT  "secret"
#define MODE_NOINPUT 4
#define MODE_AUTHTOK 8
#define MODE_DEBUG   16

static inline uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Writes the seed inputs (daemon replies as touchgated writes them, by the encoder) into dir. */
bool write_seeds(const char *dir);

/* One input's authentication, as the daemon's side sees it. */
struct daemon {
    uint8_t *stream[2]; /* each connection's bytes, ids filled in once its request is read */
    size_t len[2];
    uint8_t chunk;
    int conns;
    int fd[2];
    uint32_t id[2];
    uint8_t kind[2];
    char password[TG_MAX_STRING + 1]; /* what the VERIFY_PASSWORD carried */
};

/* Starts the thread that serves the module's connections on listen_fd. */
bool daemon_start(int listen_fd);
/* Hands it an input: it serves the module's next connections (two at most) with d's streams. */
bool daemon_begin(struct daemon *d);
/* The module returned: waits until the thread let go of d, then counts in d->conns a connection
 * it did not take. */
bool daemon_end(struct daemon *d);

#endif /* TG_FUZZ_REPLY_H */
