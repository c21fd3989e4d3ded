/* Unix-socket transport to touchgated: every wait is a poll bounded by a monotonic deadline. */
#include "tg_client.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tg_codec.h"

uint64_t tg_now_ms(void)
{
    struct timespec ts;
    /* CLOCK_MONOTONIC: a wall-clock jump must not stretch or cut a deadline. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t tg_deadline_after(uint64_t ms)
{
    return tg_now_ms() + ms;
}

int tg_remaining_ms(uint64_t deadline)
{
    uint64_t now = tg_now_ms();
    if (now >= deadline)
        return 0;
    uint64_t left = deadline - now;
    return left > INT_MAX ? INT_MAX : (int)left;
}

void tg_watch_start(struct tg_watch *w, uint64_t now, uint64_t cap_ms)
{
    w->cap = now + cap_ms;
    w->silence = now + TG_SILENCE_DEADLINE_MS;
}

void tg_watch_frame(struct tg_watch *w, uint64_t now)
{
    w->silence = now + TG_SILENCE_DEADLINE_MS;
}

uint64_t tg_watch_deadline(const struct tg_watch *w)
{
    return w->silence < w->cap ? w->silence : w->cap;
}

bool tg_watch_capped(const struct tg_watch *w, uint64_t now)
{
    return now >= w->cap;
}

/* Waits for events on fd until the deadline. EINTR restarts the wait with the time left. A passed
 * deadline still looks (timeout 0): what already arrived, while the caller was busy elsewhere (in
 * its conversation, say), is read rather than thrown away as silence. */
static enum tg_io_status wait_for(int fd, short events, uint64_t deadline)
{
    for (;;) {
        struct pollfd pfd = { .fd = fd, .events = events };
        int n = poll(&pfd, 1, tg_remaining_ms(deadline));
        if (n > 0)
            return TG_IO_OK; /* readable, writable, HUP or ERR: the next call says which */
        if (n == 0)
            return TG_IO_TIMEOUT;
        if (errno != EINTR)
            return TG_IO_ERROR;
    }
}

enum tg_io_status tg_connect(const char *path, uint64_t deadline, int *fd)
{
    enum tg_io_status st = TG_IO_UNREACHABLE;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    size_t plen = strlen(path);
    int s = -1;

    *fd = -1;
    if (plen == 0 || plen >= sizeof(addr.sun_path))
        goto done;
    memcpy(addr.sun_path, path, plen + 1);

    /* Non-blocking so that the connect itself is bounded by the deadline. */
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) {
        st = TG_IO_ERROR;
        goto done;
    }
    for (;;) {
        if (connect(s, (const struct sockaddr *)&addr, sizeof(addr)) == 0)
            break;
        if (errno == EINPROGRESS || errno == EINTR) {
            /* The connection completes in the background; SO_ERROR tells how it went. */
            int err = 0;
            socklen_t elen = sizeof(err);
            if ((st = wait_for(s, POLLOUT, deadline)) != TG_IO_OK)
                goto done;
            if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0) {
                st = TG_IO_UNREACHABLE;
                goto done;
            }
            break;
        }
        if (errno == EAGAIN) {
            /* Unix sockets: the listen backlog is full and nothing was started. A busy
             * daemon gets a few short retries, never more than the deadline. */
            int left = tg_remaining_ms(deadline);
            if (left == 0) {
                st = TG_IO_TIMEOUT;
                goto done;
            }
            poll(NULL, 0, left < 10 ? left : 10);
            continue;
        }
        st = TG_IO_UNREACHABLE; /* ENOENT, ECONNREFUSED, EACCES, …: no daemon for us */
        goto done;
    }
    *fd = s;
    s = -1;
    st = TG_IO_OK;
done:
    if (s >= 0)
        close(s);
    return st;
}

enum tg_io_status tg_send_all(int fd, const uint8_t *buf, size_t len, uint64_t deadline)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            enum tg_io_status st = wait_for(fd, POLLOUT, deadline);
            if (st != TG_IO_OK)
                return st;
            continue;
        }
        return (n < 0 && (errno == EPIPE || errno == ECONNRESET)) ? TG_IO_EOF : TG_IO_ERROR;
    }
    return TG_IO_OK;
}

enum tg_io_status tg_send_request(int fd, const uint8_t *buf, size_t len, uint64_t deadline)
{
    enum tg_io_status st = tg_send_all(fd, buf, len, deadline);
    return st == TG_IO_EOF ? TG_IO_OK : st;
}

/* Reads exactly len bytes, waiting at most until the deadline. */
static enum tg_io_status read_exact(int fd, uint8_t *buf, size_t len, uint64_t deadline)
{
    size_t off = 0;
    while (off < len) {
        enum tg_io_status st = wait_for(fd, POLLIN, deadline);
        if (st != TG_IO_OK)
            return st;
        ssize_t n = recv(fd, buf + off, len - off, 0);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n == 0)
            return TG_IO_EOF;
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
            continue;
        return errno == ECONNRESET ? TG_IO_EOF : TG_IO_ERROR;
    }
    return TG_IO_OK;
}

enum tg_io_status tg_read_frame(int fd, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline)
{
    enum tg_io_status st;
    uint32_t length;

    *len = 0;
    if (cap < TG_FRAME_BUFFER)
        return TG_IO_ERROR;
    if ((st = read_exact(fd, buf, TG_LENGTH_SIZE, deadline)) != TG_IO_OK)
        return st;
    /* Range-check the length before reading the body: a huge length is an error, not a wait. */
    if (tg_frame_length(buf, &length) != TG_CODEC_OK)
        return TG_IO_MALFORMED;
    if ((st = read_exact(fd, buf + TG_LENGTH_SIZE, length, deadline)) != TG_IO_OK)
        return st;
    *len = TG_LENGTH_SIZE + (size_t)length;
    return TG_IO_OK;
}

const char *tg_io_strerror(enum tg_io_status status)
{
    switch (status) {
    case TG_IO_OK:
        return "ok";
    case TG_IO_UNREACHABLE:
        return "daemon unreachable";
    case TG_IO_TIMEOUT:
        return "deadline passed";
    case TG_IO_EOF:
        return "connection closed";
    case TG_IO_ERROR:
        return "socket error";
    case TG_IO_MALFORMED:
        return "frame length out of range";
    }
    return "unknown transport error";
}
