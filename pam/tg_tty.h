/* The PAM client's terminal during a prompt: keys in without echo, the exact termios back out. */
#ifndef TG_TTY_H
#define TG_TTY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <termios.h>

/* Longest password the prompt collects; a longer line is refused, never cut down and sent. */
#define TG_LINE_MAX 512

struct tg_tty {
    int fd;               /* /dev/tty, or -1: no terminal to read */
    bool input;           /* stdin is that terminal: the application takes its password there */
    bool raw;             /* the terminal is changed: saved must be put back */
    struct termios saved; /* the termios as we found it */
};

/* fd = -1: no terminal. Call before anything else, so tg_tty_close is always safe. */
void tg_tty_init(struct tg_tty *t);

/* Opens the controlling terminal when this process has one and is in its foreground (false, and
 * t->fd stays -1, otherwise); t->input says whether the application reads its own input there
 * (stdin is that terminal, docs/spec.md §6): if not, keys are read, a password is asked in the
 * conversation. */
bool tg_tty_open(struct tg_tty *t);

/* Non-canonical mode, ECHO and ISIG off, VMIN=1 VTIME=0. False: the terminal is as it was. */
bool tg_tty_raw(struct tg_tty *t);

/* The one way back: the exact saved termios, with TCSANOW so typed-ahead input is kept.
 * Does nothing unless tg_tty_raw changed the terminal; safe to call any number of times. */
void tg_tty_restore(struct tg_tty *t);

/* Restores, then closes the terminal. */
void tg_tty_close(struct tg_tty *t);

enum tg_tty_read {
    TG_TTY_KEY,  /* one byte read */
    TG_TTY_NONE, /* nothing to read after all (EAGAIN, EINTR) */
    TG_TTY_GONE, /* hang-up, end of file or a read error: nobody is at this terminal */
};

/* Reads one byte, never more: input after an Enter stays queued for whoever reads next. */
enum tg_tty_read tg_tty_read_key(const struct tg_tty *t, uint8_t *key);

/* Whether a key waits to be read, without waiting for one. */
bool tg_tty_pending(const struct tg_tty *t);

/* Best effort, never blocks (opened O_NONBLOCK): output stopped with ^S loses the text. */
void tg_tty_write(const struct tg_tty *t, const char *text);

/* The line typed at the prompt: a password, never logged, wiped after use. */
struct tg_line {
    size_t len;
    bool overflow;             /* more than TG_LINE_MAX bytes were typed */
    char buf[TG_LINE_MAX + 1]; /* NUL-terminated */
};

enum tg_key_action {
    TG_KEY_NONE,     /* edited the line, or a key with no meaning here */
    TG_KEY_TYPED,    /* a character was added to the line */
    TG_KEY_FALLBACK, /* Enter or Ctrl-D on an empty line: the user wants the password prompt */
    TG_KEY_CANCEL,   /* Ctrl-C */
    TG_KEY_SUBMIT,   /* Enter ended a non-empty line: line->buf is the typed password */
};

/* Applies one key to the line. Backspace/DEL delete a character (a whole UTF-8 sequence),
 * Ctrl-U clears the line. Enter on an overlong line wipes it and answers TG_KEY_FALLBACK. */
enum tg_key_action tg_line_key(struct tg_line *line, uint8_t key);

void tg_line_wipe(struct tg_line *line);

enum tg_line_end {
    TG_LINE_ENTERED,   /* Enter ended a non-empty line */
    TG_LINE_ABANDONED, /* Enter or Ctrl-D on an empty line, Ctrl-C, or Enter on an overlong line */
    TG_LINE_TIMEOUT,   /* no key within idle_ms, or the deadline passed */
    TG_LINE_GONE,      /* the terminal went away */
};

/* Reads keys into the line (the terminal raw) until it ends: at the latest at `deadline`
 * (absolute, tg_client.h's clock), and, when idle_ms >= 0, after idle_ms without a key. */
enum tg_line_end tg_tty_read_line(const struct tg_tty *t, struct tg_line *line, uint64_t deadline,
                                  int idle_ms);

/* After a match while a password was being typed (or keys wait unread): the rest of that line, up
 * to its Enter, is read and dropped, so it never reaches what reads the terminal next (a shell
 * would run it and keep it in its history). Ends as tg_tty_read_line does, after idle_ms without
 * a key or at `deadline`. The terminal must be raw. */
void tg_tty_drop_line(const struct tg_tty *t, uint64_t deadline, int idle_ms);

#endif /* TG_TTY_H */
