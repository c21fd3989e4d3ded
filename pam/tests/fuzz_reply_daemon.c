/* The daemon's side of fuzz_reply.c: a thread that takes the module's connections and answers
 * each request with its part of the input, for as long as the harness runs (fuzz_reply.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fake.h"
#include "fuzz_reply.h"

/* `go` hands the thread an input's struct daemon, `done` is readable once the module returned,
 * `served` is written once the thread let go of it. */
static int listen_fd = -1, go[2], done[2], served[2];

/* Writes the module's request id into every frame of ours, found by following the length
 * prefixes as far as they stay in range; the lengths themselves are left as they are. */
static void fill_in_id(uint8_t *s, size_t n, uint32_t id)
{
    for (size_t pos = 0; n - pos >= TG_HEADER_SIZE;) {
        uint32_t length = get_u32(s + pos);
        if (length < TG_HEADER_REST || length > TG_MAX_FRAME)
            return;
        if (get_u32(s + pos + 8) == OURS)
            put_u32(s + pos + 8, id);
        if (n - pos - TG_LENGTH_SIZE < length)
            return;
        pos += TG_LENGTH_SIZE + length;
    }
}

/* Waits until the module read all that was sent: false if it hung up or returned first. No event
 * says that a peer read a socket's queue, so the queue is looked at again while waiting, at most
 * 1 ms at a time, on the two events that end the wait early: the module hanging up or returning. */
static bool consumed(int fd)
{
    uint64_t deadline = tg_deadline_after(2000);
    for (int i = 0; tg_now_ms() < deadline; i++) {
        int queued = 0;
        if (ioctl(fd, SIOCOUTQ, &queued) != 0 || queued == 0)
            return true;
        struct pollfd pfd[2] = { { .fd = fd, .events = POLLRDHUP },
                                 { .fd = done[0], .events = POLLIN } };
        if (poll(pfd, 2, i < 100 ? 0 : 1) > 0)
            return false;
        if (i < 100)
            sched_yield();
    }
    return true; /* the rest is sent anyway: the module's own deadlines decide */
}

/* Sends the stream in pieces: cut at up to 1 + chunk % 8 places a generator seeded with chunk
 * picks (chunk 0: in one piece), each piece read by the module before the next is sent. */
static void feed(struct daemon *d, int fd, const uint8_t *s, size_t n)
{
    size_t cuts[9], ncuts = 0;
    uint32_t rng = 0x9e3779b9u ^ d->chunk;
    for (int i = 0; d->chunk != 0 && n > 1 && i <= d->chunk % 8; i++) {
        rng ^= rng << 13; /* xorshift32 */
        rng ^= rng >> 17;
        rng ^= rng << 5;
        size_t cut = 1 + rng % (n - 1), k = ncuts++;
        for (; k > 0 && cuts[k - 1] > cut; k--) /* kept in order */
            cuts[k] = cuts[k - 1];
        cuts[k] = cut;
    }
    cuts[ncuts++] = n;
    for (size_t i = 0, off = 0; i < ncuts; off = cuts[i++]) {
        if (cuts[i] == off)
            continue;
        if (off > 0 && !consumed(fd))
            return;
        if (tg_send_all(fd, s + off, cuts[i] - off, tg_deadline_after(2000)) != TG_IO_OK)
            return; /* the module hung up */
    }
}

static void serve(struct daemon *d)
{
    for (int k = 0; k < 2; k++) {
        struct pollfd pfd[2] = { { .fd = listen_fd, .events = POLLIN },
                                 { .fd = done[0], .events = POLLIN } };
        if (poll(pfd, 2, 10000) <= 0 || pfd[0].revents == 0)
            return;
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            return;
        d->fd[d->conns++] = fd;
        uint8_t req[TG_FRAME_BUFFER];
        struct tg_frame f;
        if (!fake_read(fd, req, &f, 2000))
            return; /* d->id[k] stays 0: no request came */
        d->id[k] = f.request_id;
        d->kind[k] = f.kind;
        if (f.kind == TG_KIND_VERIFY_PASSWORD)
            tg_frame_string(&f, TG_TAG_PASSWORD, d->password, sizeof(d->password));
        explicit_bzero(req, sizeof(req));
        fill_in_id(d->stream[k], d->len[k], f.request_id);
        feed(d, fd, d->stream[k], d->len[k]);
        shutdown(fd, SHUT_WR); /* the end of the input: every read of the module's ends */
    }
}

static const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP };

static void *daemon_thread(void *arg)
{
    /* libFuzzer's timer (SIGALRM) goes to the module's thread, whose waits are to bear it; this
     * one is not interrupted (faults still reach it). */
    sigset_t block;
    sigfillset(&block);
    for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
        sigdelset(&block, faults[i]);
    pthread_sigmask(SIG_BLOCK, &block, NULL);
    (void)arg;
    for (struct daemon *d; read(go[0], &d, sizeof(d)) == sizeof(d);) {
        serve(d);
        if (write(served[1], "x", 1) != 1)
            break;
    }
    return NULL;
}

bool daemon_start(int fd)
{
    pthread_t thread;
    listen_fd = fd;
    return fcntl(listen_fd, F_SETFL, O_NONBLOCK) == 0 && pipe2(go, O_CLOEXEC) == 0 &&
           pipe2(done, O_CLOEXEC) == 0 && pipe2(served, O_CLOEXEC) == 0 &&
           pthread_create(&thread, NULL, daemon_thread, NULL) == 0 && pthread_detach(thread) == 0;
}

bool daemon_begin(struct daemon *d)
{
    return write(go[1], &d, sizeof(d)) == sizeof(d);
}

bool daemon_end(struct daemon *d)
{
    char byte;
    ssize_t got;
    if (write(done[1], "x", 1) != 1)
        return false;
    while ((got = read(served[0], &byte, 1)) < 0 && errno == EINTR)
        ;
    if (got != 1 || read(done[0], &byte, 1) != 1)
        return false;
    /* A connection the thread did not take (a third one, say) is counted all the same. */
    for (int fd; (fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
        close(fd);
        d->conns++;
    }
    return true;
}
