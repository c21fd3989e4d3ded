/* The PAM client's terminal during a prompt: keys in without echo, the exact termios back out. */
#include "tg_tty.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "tg_client.h"
#include "tg_codec.h"

#define KEY_CTRL_C    0x03
#define KEY_CTRL_D    0x04
#define KEY_BACKSPACE 0x08
#define KEY_CTRL_U    0x15
#define KEY_DEL       0x7f

void tg_tty_init(struct tg_tty *t)
{
    memset(t, 0, sizeof(*t));
    t->fd = -1;
}

/* Whether stdin is this process's controlling terminal. Device numbers cannot tell (/dev/tty's
 * fstat gives its own, 5,0): the terminal on stdin is asked for its foreground process group,
 * which a terminal tells only the session it controls (any other gets ENOTTY), and which the
 * caller found to be this process's on /dev/tty. */
static bool stdin_is_the_terminal(void)
{
    return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

bool tg_tty_open(struct tg_tty *t)
{
    tg_tty_init(t);
    /* O_NOCTTY: never acquire a terminal; O_NONBLOCK: this open file description is ours
     * alone, and no read or write of ours may hang the prompt. */
    int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    /* Only the foreground may use it: from the background, changing or reading the terminal
     * would stop the whole process (SIGTTOU, SIGTTIN) with the terminal half set up. */
    if (!isatty(fd) || tcgetpgrp(fd) != getpgrp()) {
        close(fd);
        return false;
    }
    t->fd = fd;
    /* The terminal is where the application takes its password only when stdin is it. One that
     * reads elsewhere (sudo -S) answers the password step through its conversation: a password
     * asked here would wait for a line nobody types at the terminal. Keys are still read during
     * the prompt (Enter to the password): the person at a terminal may be piping into sudo. */
    t->input = stdin_is_the_terminal();
    return true;
}

bool tg_tty_raw(struct tg_tty *t)
{
    struct termios raw;

    if (t->fd < 0 || t->raw)
        goto done;
    if (tcgetattr(t->fd, &t->saved) != 0)
        goto done;
    raw = t->saved;
    /* No echo (a password may be typed), no line editing by the kernel (Enter must reach us
     * at once), no signals (Ctrl-C must not kill the client with echo still off). */
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ECHONL | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    /* Marked changed before the call: a partly applied tcsetattr is still undone. */
    t->raw = true;
    if (tcsetattr(t->fd, TCSANOW, &raw) != 0)
        tg_tty_restore(t);
done:
    return t->raw;
}

void tg_tty_restore(struct tg_tty *t)
{
    if (t->fd < 0 || !t->raw)
        return;
    /* TCSANOW, not TCSAFLUSH: keys typed ahead for the next prompt must not be thrown away. */
    while (tcsetattr(t->fd, TCSANOW, &t->saved) != 0 && errno == EINTR)
        ;
    t->raw = false;
}

void tg_tty_close(struct tg_tty *t)
{
    tg_tty_restore(t);
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
}

enum tg_tty_read tg_tty_read_key(const struct tg_tty *t, uint8_t *key)
{
    ssize_t n = read(t->fd, key, 1);
    if (n == 1)
        return TG_TTY_KEY;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return TG_TTY_NONE;
    return TG_TTY_GONE;
}

bool tg_tty_pending(const struct tg_tty *t)
{
    struct pollfd pfd = { .fd = t->fd, .events = POLLIN };
    int n;
    while ((n = poll(&pfd, 1, 0)) < 0 && errno == EINTR)
        ;
    return n == 1 && (pfd.revents & POLLIN) != 0;
}

void tg_tty_write(const struct tg_tty *t, const char *text)
{
    size_t len = strlen(text);
    size_t off = 0;
    while (t->fd >= 0 && off < len) {
        ssize_t n = write(t->fd, text + off, len - off);
        if (n > 0)
            off += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else
            return; /* EAGAIN (output stopped) or an error: the line is only a courtesy */
    }
}

void tg_line_wipe(struct tg_line *line)
{
    explicit_bzero(line, sizeof(*line));
}

/* Removes the last character: a whole UTF-8 sequence (up to three continuation bytes and the
 * first byte before them, valid together), else one byte. In an 8-bit charset 0x80-0xBF are
 * characters of their own ("£°" in Latin-1), not pieces of the character before them. */
static void erase_last(struct tg_line *line)
{
    size_t n = 1;
    while (n < 4 && n < line->len && ((uint8_t)line->buf[line->len - n] & 0xC0) == 0x80)
        n++;
    if (n > 1 && tg_string_check((const uint8_t *)line->buf + line->len - n, n) != TG_CODEC_OK)
        n = 1;
    while (n-- > 0 && line->len > 0)
        line->buf[--line->len] = '\0';
}

enum tg_key_action tg_line_key(struct tg_line *line, uint8_t key)
{
    bool empty = line->len == 0 && !line->overflow;

    switch (key) {
    case '\r':
    case '\n':
        if (empty)
            return TG_KEY_FALLBACK;
        if (line->overflow) {
            /* Fail closed: a cut-down line is not what the user typed, so it is never sent
             * as a password; the password module asks afresh. */
            tg_line_wipe(line);
            return TG_KEY_FALLBACK;
        }
        return TG_KEY_SUBMIT;
    case KEY_CTRL_D:
        return empty ? TG_KEY_FALLBACK : TG_KEY_NONE;
    case KEY_CTRL_C:
        return TG_KEY_CANCEL;
    case KEY_BACKSPACE:
    case KEY_DEL:
        erase_last(line);
        return TG_KEY_NONE;
    case KEY_CTRL_U:
        tg_line_wipe(line);
        return TG_KEY_NONE;
    default:
        break;
    }
    if (key < 0x20 && key != '\t')
        return TG_KEY_NONE; /* other control keys (Esc, Ctrl-Z, …) mean nothing here */
    if (line->len >= TG_LINE_MAX) {
        line->overflow = true;
        return TG_KEY_TYPED;
    }
    line->buf[line->len++] = (char)key;
    line->buf[line->len] = '\0';
    return TG_KEY_TYPED;
}

enum tg_line_end tg_tty_read_line(const struct tg_tty *t, struct tg_line *line, uint64_t deadline,
                                  int idle_ms)
{
    uint64_t idle_end = idle_ms >= 0 ? tg_deadline_after((uint64_t)idle_ms) : deadline;
    for (;;) {
        struct pollfd pfd = { .fd = t->fd, .events = POLLIN };
        int left = tg_remaining_ms(idle_end < deadline ? idle_end : deadline);
        int n = left > 0 ? poll(&pfd, 1, left) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? TG_LINE_TIMEOUT : TG_LINE_GONE;
        uint8_t key = 0;
        enum tg_tty_read got = tg_tty_read_key(t, &key);
        if (got == TG_TTY_NONE)
            continue;
        if (got == TG_TTY_GONE)
            return TG_LINE_GONE;
        if (idle_ms >= 0)
            idle_end = tg_deadline_after((uint64_t)idle_ms);
        switch (tg_line_key(line, key)) {
        case TG_KEY_SUBMIT:
            return TG_LINE_ENTERED;
        case TG_KEY_FALLBACK:
        case TG_KEY_CANCEL:
            return TG_LINE_ABANDONED;
        case TG_KEY_NONE:
        case TG_KEY_TYPED:
            break;
        }
    }
}

void tg_tty_drop_line(const struct tg_tty *t, uint64_t deadline, int idle_ms)
{
    struct tg_line rest = { 0 };
    if (t->fd >= 0)
        tg_tty_read_line(t, &rest, deadline, idle_ms);
    tg_line_wipe(&rest);
}
