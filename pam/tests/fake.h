/* Pieces of a fake touchgated shared by the PAM run tests: frames out, requests in, a listening socket. */
#ifndef TG_FAKE_H
#define TG_FAKE_H

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tg_client.h"
#include "tg_codec.h"

#define FAKE_TEXT_PROMPT "Swipe your finger across the fingerprint reader"

/* The common start of a PAM run test program: the module's absolute path (service files need
 * one), a private temp dir (`dir` holds a mkdtemp template) with the fake daemon's socket path in
 * it, English messages, no SSH session. Returns NULL, or what could not be had. */
static inline const char *fake_setup(const char *so, char module[PATH_MAX], char dir[PATH_MAX],
                                     char *sock, size_t sock_size)
{
    if (realpath(so, module) == NULL)
        return "no module at the given path";
    if (mkdtemp(dir) == NULL)
        return "mkdtemp failed";
    snprintf(sock, sock_size, "%s/touchgated.sock", dir);
    unsetenv("LC_ALL");
    unsetenv("LC_MESSAGES");
    setenv("LANG", "en_US.UTF-8", 1);
    unsetenv("SSH_CONNECTION"); /* run from an SSH session, every request would be remote */
    unsetenv("SSH_CLIENT");
    return NULL;
}

static inline void fake_send(int fd, struct tg_writer *w)
{
    size_t len = 0;
    if (tg_writer_finish(w, &len) == TG_CODEC_OK)
        tg_send_all(fd, w->buf, len, tg_deadline_after(2000));
}

/* A RESULT's fields: CODE, then REASON and MESSAGE unless NULL, SECONDS when above 0 and FLAGS
 * when not 0. */
static inline void fake_put_result(struct tg_writer *w, int32_t code, const char *reason,
                                   int32_t seconds, int32_t flags, const char *message)
{
    tg_put_int(w, TG_TAG_CODE, code);
    if (reason != NULL)
        tg_put_string(w, TG_TAG_REASON, reason);
    if (seconds > 0)
        tg_put_int(w, TG_TAG_SECONDS, seconds);
    if (flags != 0)
        tg_put_int(w, TG_TAG_FLAGS, flags);
    if (message != NULL)
        tg_put_string(w, TG_TAG_MESSAGE, message);
}

/* A RESULT with FLAGS (0: none sent); reason and message may be NULL. */
static inline void fake_result_flags(int fd, uint32_t id, int32_t code, const char *reason,
                                     const char *message, int32_t flags)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_writer w;
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, id);
    fake_put_result(&w, code, reason, 0, flags, message);
    fake_send(fd, &w);
}

/* A RESULT; reason and message may be NULL. */
static inline void fake_result(int fd, uint32_t id, int32_t code, const char *reason,
                               const char *message)
{
    fake_result_flags(fd, id, code, reason, message, 0);
}

/* A RESULT with a MESSAGE and no CODE, which no daemon sends. */
static inline void fake_result_without_code(int fd, uint32_t id, const char *message)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_writer w;
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_RESULT, id);
    tg_put_string(&w, TG_TAG_MESSAGE, message);
    fake_send(fd, &w);
}

/* A PROGRESS with FLAGS (0: none sent); message may be NULL. */
static inline void fake_progress_flags(int fd, uint32_t id, int32_t progress, int32_t style,
                                       const char *message, int32_t flags)
{
    uint8_t buf[TG_FRAME_BUFFER];
    struct tg_writer w;
    tg_writer_init(&w, buf, sizeof(buf), TG_KIND_PROGRESS, id);
    tg_put_int(&w, TG_TAG_PROGRESS, progress);
    if (message != NULL) {
        tg_put_int(&w, TG_TAG_STYLE, style);
        tg_put_string(&w, TG_TAG_MESSAGE, message);
    }
    if (flags != 0)
        tg_put_int(&w, TG_TAG_FLAGS, flags);
    fake_send(fd, &w);
}

static inline void fake_progress(int fd, uint32_t id, int32_t progress, int32_t style,
                                 const char *message)
{
    fake_progress_flags(fd, id, progress, style, message, 0);
}

/* Reads and decodes one frame into buf/frame; false on EOF, timeout or a malformed frame. */
static inline bool fake_read(int fd, uint8_t *buf, struct tg_frame *frame, int timeout_ms)
{
    size_t len = 0;
    return tg_read_frame(fd, buf, TG_FRAME_BUFFER, &len, tg_deadline_after(timeout_ms)) ==
               TG_IO_OK &&
           tg_frame_decode(buf, len, frame) == TG_CODEC_OK;
}

/* Accepts one connection within timeout_ms; -1 if none came. */
static inline int fake_accept(int listen_fd, int timeout_ms)
{
    struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };
    if (poll(&pfd, 1, timeout_ms) != 1)
        return -1;
    return accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

/* True when the peer hangs up within timeout_ms, whatever it sends first. */
static inline bool fake_await_close(int fd, int timeout_ms)
{
    uint8_t scratch[TG_FRAME_BUFFER];
    size_t len = 0;
    enum tg_io_status st;
    uint64_t deadline = tg_deadline_after((uint64_t)timeout_ms);
    while ((st = tg_read_frame(fd, scratch, sizeof(scratch), &len, deadline)) == TG_IO_OK)
        ;
    return st == TG_IO_EOF;
}

/* True if a connection is waiting to be accepted: someone connected that nobody served. */
static inline bool fake_pending(int listen_fd)
{
    struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };
    return poll(&pfd, 1, 0) == 1;
}

static inline bool fake_listen(const char *path, int *fd, bool do_listen)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    size_t len = strlen(path);
    *fd = -1;
    if (len >= sizeof(addr.sun_path))
        return false;
    memcpy(addr.sun_path, path, len + 1);
    unlink(path);
    *fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    return *fd >= 0 && bind(*fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
           (!do_listen || listen(*fd, 4) == 0);
}

static inline bool frame_string_is(const struct tg_frame *f, uint16_t tag, const char *want)
{
    char got[TG_MAX_STRING + 1];
    bool present = tg_frame_string(f, tag, got, sizeof(got));
    return want == NULL ? !present && tg_frame_find(f, tag) == NULL
                        : present && strcmp(got, want) == 0;
}

static inline bool frame_int_is(const struct tg_frame *f, uint16_t tag, int32_t want, bool present)
{
    int32_t got = 0;
    return tg_frame_int(f, tag, &got) == present && (!present || got == want);
}

#endif /* TG_FAKE_H */
