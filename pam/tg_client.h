/* Unix-socket transport to touchgated: connect, send a frame, read one frame, all with deadlines. */
#ifndef TG_CLIENT_H
#define TG_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tg_io_status {
    TG_IO_OK = 0,
    TG_IO_UNREACHABLE, /* connect refused, no socket file, path unusable */
    TG_IO_TIMEOUT,     /* the deadline passed */
    TG_IO_EOF,         /* the peer closed the connection (possibly mid-frame) */
    TG_IO_ERROR,       /* any other socket error */
    TG_IO_MALFORMED,   /* the length prefix is out of range: the frame cannot be read */
};

/* Deadlines are absolute CLOCK_MONOTONIC times in milliseconds. */
uint64_t tg_now_ms(void);
uint64_t tg_deadline_after(uint64_t ms);
/* Milliseconds left until the deadline, clamped to [0, INT_MAX]. */
int tg_remaining_ms(uint64_t deadline);

/* The two limits on waiting for a result: silence, restarted by every frame, and an overall cap
 * that nothing restarts, so neither a frozen daemon nor one that only sends keepalives holds the
 * client. Times are tg_now_ms() values passed in, so the rule can be tested without waiting. */
struct tg_watch {
    uint64_t cap;
    uint64_t silence;
};

void tg_watch_start(struct tg_watch *w, uint64_t now, uint64_t cap_ms);
/* A frame arrived at `now`: the silence deadline starts again. */
void tg_watch_frame(struct tg_watch *w, uint64_t now);
/* The earlier of the two deadlines. */
uint64_t tg_watch_deadline(const struct tg_watch *w);
/* The cap has passed at `now`: a frame that was already waiting may still end the wait (a read
 * past a deadline still looks), but none may prolong it. */
bool tg_watch_capped(const struct tg_watch *w, uint64_t now);

/* Connects a SOCK_CLOEXEC stream socket to path; *fd is -1 unless TG_IO_OK. */
enum tg_io_status tg_connect(const char *path, uint64_t deadline, int *fd);

/* Sends all len bytes (MSG_NOSIGNAL: a closed daemon must not SIGPIPE the PAM client). */
enum tg_io_status tg_send_all(int fd, const uint8_t *buf, size_t len, uint64_t deadline);

/* Sends a request as tg_send_all does, but a daemon that hung up (EPIPE) is not yet an answer:
 * refused at accept (busy), it wrote its refusal before closing without reading anything, and the
 * read that follows finds it, or the end of the connection. */
enum tg_io_status tg_send_request(int fd, const uint8_t *buf, size_t len, uint64_t deadline);

/* Reads exactly one frame (length prefix included) into buf; never reads past it.
 * cap must be at least TG_FRAME_BUFFER. Past the deadline, bytes already there are still read:
 * only a wait for more is a timeout. */
enum tg_io_status tg_read_frame(int fd, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline);

const char *tg_io_strerror(enum tg_io_status status);

#endif /* TG_CLIENT_H */
