/* The client's waiting rule with an injected clock: keepalives restart the silence deadline, the
 * overall cap holds whatever arrives (no real time passes); and a refusal the daemon wrote before
 * hanging up is read after the request's send failed. */
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "tg_client.h"
#include "tg_codec.h"
#include "touchgate_wire.h"

static void test_keepalives_restart_the_silence_deadline(void)
{
    struct tg_watch w;
    uint64_t t = 1000000; /* any start: only differences matter */

    tg_watch_start(&w, t, 60000);
    CHECK(tg_watch_deadline(&w) == t + TG_SILENCE_DEADLINE_MS, "first deadline: silence");
    /* A keepalive every TG_KEEPALIVE_MS for far longer than the silence deadline: never expired. */
    bool expired = false;
    for (uint64_t now = t; now < t + 10 * TG_SILENCE_DEADLINE_MS; now += TG_KEEPALIVE_MS) {
        expired |= now >= tg_watch_deadline(&w);
        tg_watch_frame(&w, now);
    }
    CHECK(!expired, "keepalives at the daemon's pace let the silence deadline pass");
    /* Then silence: given up on exactly TG_SILENCE_DEADLINE_MS after the last frame. */
    uint64_t last = t + 10 * TG_SILENCE_DEADLINE_MS;
    tg_watch_frame(&w, last);
    CHECK(tg_watch_deadline(&w) == last + TG_SILENCE_DEADLINE_MS,
          "silence deadline after the last frame");
    /* A frozen daemon is given up on within 2 s (docs/spec.md §9: seconds, not fprintd's 25 s). */
    CHECK(TG_SILENCE_DEADLINE_MS <= 2000 && TG_KEEPALIVE_MS * 2 < TG_SILENCE_DEADLINE_MS,
          "silence %d ms, keepalive %d ms", TG_SILENCE_DEADLINE_MS, TG_KEEPALIVE_MS);
}

static void test_the_cap_holds_against_endless_keepalives(void)
{
    struct tg_watch w;
    uint64_t t = 5000;

    tg_watch_start(&w, t, 4000);
    for (uint64_t now = t; now < t + 3000; now += 100)
        tg_watch_frame(&w, now);
    CHECK(tg_watch_deadline(&w) == t + 4000, "cap not kept: %llu",
          (unsigned long long)(tg_watch_deadline(&w) - t));
    tg_watch_frame(&w, t + 3999);
    CHECK(tg_watch_deadline(&w) == t + 4000, "a frame moved the cap");
    CHECK(!tg_watch_capped(&w, t + 3999) && tg_watch_capped(&w, t + 4000),
          "capped not from the cap on");
}

static void test_remaining(void)
{
    CHECK(tg_remaining_ms(0) == 0, "a passed deadline leaves 0 ms");
    uint64_t d = tg_deadline_after(60000);
    int left = tg_remaining_ms(d);
    CHECK(left > 0 && left <= 60000, "remaining %d", left);
}

/* A connected pair of stream sockets: the module's end [0], the daemon's [1]. */
static bool socket_pair(int sv[2])
{
    bool made = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0;
    CHECK(made, "socketpair");
    return made;
}

/* Writes a RESULT with `code` under request `id` to fd; its bytes stay in out[*len]. */
static bool send_result(int fd, uint32_t id, int32_t code, uint8_t *out, size_t *len)
{
    struct tg_writer w;
    tg_writer_init(&w, out, TG_FRAME_BUFFER, TG_KIND_RESULT, id);
    tg_put_int(&w, TG_TAG_CODE, code);
    return tg_writer_finish(&w, len) == TG_CODEC_OK &&
           tg_send_all(fd, out, *len, tg_deadline_after(1000)) == TG_IO_OK;
}

/* A passed deadline still looks: a frame that already arrived (while the module was busy in its
 * conversation) is read; only an empty socket is a timeout. */
static void test_a_passed_deadline_still_reads_what_is_there(void)
{
    uint8_t out[TG_FRAME_BUFFER], in[TG_FRAME_BUFFER];
    size_t len = 0;
    int sv[2];

    if (!socket_pair(sv))
        return;
    uint64_t passed = tg_now_ms() - 1;
    CHECK(tg_read_frame(sv[0], in, sizeof(in), &len, passed) == TG_IO_TIMEOUT,
          "an empty socket past the deadline is not a timeout");
    CHECK(send_result(sv[1], 7, TG_OK, out, &len), "cannot send the frame");
    size_t got = 0;
    enum tg_io_status st = tg_read_frame(sv[0], in, sizeof(in), &got, passed);
    CHECK(st == TG_IO_OK && got == len, "a waiting frame past the deadline: %s",
          tg_io_strerror(st));
    close(sv[0]);
    close(sv[1]);
}

/* Refused at accept: the daemon wrote its refusal and hung up before the module sent anything.
 * The send fails (EPIPE), and the refusal is still read after it. */
static void test_a_refusal_written_before_the_request_is_read_after_a_failed_send(void)
{
    uint8_t out[TG_FRAME_BUFFER], in[TG_FRAME_BUFFER];
    size_t len = 0;
    int sv[2];

    if (!socket_pair(sv))
        return;
    CHECK(send_result(sv[1], TG_UNSOLICITED_ID, TG_ERR_BUSY, out, &len), "cannot send the refusal");
    close(sv[1]);
    CHECK(tg_send_all(sv[0], out, len, tg_deadline_after(1000)) == TG_IO_EOF,
          "a send to a closed daemon is the end of the connection");
    CHECK(tg_send_request(sv[0], out, len, tg_deadline_after(1000)) == TG_IO_OK,
          "a request's send to a closed daemon goes on to read its answer");
    size_t got = 0;
    enum tg_io_status st = tg_read_frame(sv[0], in, sizeof(in), &got, tg_deadline_after(1000));
    CHECK(st == TG_IO_OK && got == len, "the refusal is read: %s", tg_io_strerror(st));
    st = tg_read_frame(sv[0], in, sizeof(in), &got, tg_deadline_after(1000));
    CHECK(st == TG_IO_EOF, "then the end of the connection: %s", tg_io_strerror(st));
    close(sv[0]);
}

int main(void)
{
    test_keepalives_restart_the_silence_deadline();
    test_the_cap_holds_against_endless_keepalives();
    test_remaining();
    test_a_passed_deadline_still_reads_what_is_there();
    test_a_refusal_written_before_the_request_is_read_after_a_failed_send();
    return check_summary("test_client");
}
