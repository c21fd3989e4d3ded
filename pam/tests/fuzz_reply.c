/* libFuzzer harness: the daemon's side of one authentication. The input (fuzz_reply_input.h) is
 * what touchgated sends, fed through a real socket to pam_sm_authenticate (linked in, run on a
 * real libpam handle) in chunks the input chooses, and ending where the input ends. What the
 * module returns is checked against the harness's own reading of that stream (docs/spec.md §6,
 * §10): PAM_SUCCESS only for a whole RESULT success of its own request, or of the password step
 * that request's refusal asked for; never PAM_IGNORE; a protocol fault PAM_SYSTEM_ERR, a daemon
 * gone PAM_AUTHINFO_UNAVAIL. ASan and UBSan watch the module meanwhile.
 *
 * pam_sm_authenticate is called on a handle of pam_start_confdir's, not through pam_authenticate,
 * which as root would write an audit record for every input. Outside libpam's dispatch, libpam
 * refuses the module's pam_set_data and its PAM_AUTHTOK: neither changes the code it returns.
 *
 * TG_FUZZ_WRITE_SEEDS=DIR: writes the seed inputs to DIR and exits. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_appl.h>
#include <security/pam_modules.h>

#include "fake.h"
#include "fake_daemon.h"
#include "fuzz_reply.h"

#define SERVICE "fuzz"
/* Past this, a deadline of the module's (1.5 s of silence) may have ended the exchange: only the
 * rules that hold whatever the clock does are checked. */
#define SLOW_MS 1000

static char dir[PATH_MAX], sock[PATH_MAX + 32], socket_arg[PATH_MAX + 64];

/* ---- the harness's own reading of the stream ----------------------------------------------- */

enum end {
    END_SUCCESS, /* a RESULT success of our request */
    END_REFUSED, /* a RESULT with another code, or the daemon's unsolicited refusal */
    END_FAULT,   /* malformed, another request's, an unexpected kind: PAM_SYSTEM_ERR */
    END_GONE, /* the stream ended (mid-frame or not), the conversation failed: AUTHINFO_UNAVAIL */
};

static const char *const end_names[] = { "a success", "a refusal", "a protocol fault",
                                         "the daemon gone" };

struct ending {
    enum end end;
    int32_t flags; /* END_REFUSED: the RESULT's FLAGS */
};

/* Reads the frames of one exchange as docs/spec.md §6 tells a client to: a frame counts only whole,
 * every frame echoes the request id, and a RESULT under TG_UNSOLICITED_ID answers only as a
 * refusal (busy, badRequest, systemCancel). And as the module says it does: before the password
 * step's RESULT nothing but keepalives may come (pam/tg_password.c); a message the conversation
 * cannot show ends the prompt (pam/tg_prompt_keys.c). */
static struct ending read_exchange(const uint8_t *s, size_t n, uint32_t id, bool password_step,
                                   bool conv_fails)
{
    for (size_t pos = 0;;) {
        struct tg_frame f;
        int32_t code = 0, flags = 0, progress = 0;
        if (n - pos < TG_LENGTH_SIZE)
            return (struct ending){ END_GONE, 0 };
        uint32_t length = get_u32(s + pos);
        if (length < TG_HEADER_REST || length > TG_MAX_FRAME)
            return (struct ending){ END_FAULT, 0 };
        if (n - pos - TG_LENGTH_SIZE < length)
            return (struct ending){ END_GONE, 0 };
        if (tg_frame_decode(s + pos, TG_LENGTH_SIZE + length, &f) != TG_CODEC_OK)
            return (struct ending){ END_FAULT, 0 };
        pos += TG_LENGTH_SIZE + length;
        bool has_code = tg_frame_int(&f, TG_TAG_CODE, &code);
        tg_frame_int(&f, TG_TAG_FLAGS, &flags);
        if (f.request_id == TG_UNSOLICITED_ID) {
            bool refusal =
                f.kind == TG_KIND_RESULT && has_code &&
                (code == TG_ERR_BUSY || code == TG_ERR_BAD_REQUEST || code == TG_ERR_SYSTEM_CANCEL);
            return (struct ending){ refusal ? END_REFUSED : END_FAULT, flags };
        }
        if (f.request_id != id)
            return (struct ending){ END_FAULT, 0 };
        if (f.kind == TG_KIND_RESULT) {
            if (!has_code)
                return (struct ending){ END_FAULT, 0 };
            return (struct ending){ code == TG_OK ? END_SUCCESS : END_REFUSED, flags };
        }
        if (f.kind != TG_KIND_PROGRESS)
            return (struct ending){ END_FAULT, 0 };
        if (password_step &&
            (!tg_frame_int(&f, TG_TAG_PROGRESS, &progress) || progress != TG_PROGRESS_KEEPALIVE))
            return (struct ending){ END_FAULT, 0 };
        if (!password_step && conv_fails && tg_frame_find(&f, TG_TAG_MESSAGE) != NULL)
            return (struct ending){ END_GONE, 0 };
    }
}

/* ---- one authentication --------------------------------------------------------------------- */

static const char *const answers[] = { [ANSWER_EMPTY] = "",
                                       [ANSWER_PASSWORD] = ANSWER_TEXT,
                                       [ANSWER_NONE] = NULL,
                                       [ANSWER_CONV_FAILS] = NULL };

#define FAIL(...)                                               \
    do {                                                        \
        fprintf(stderr, "fuzz_reply: " __VA_ARGS__);            \
        fprintf(stderr,                                         \
                " (mode %#x, chunk %#x, EVALUATE %zu bytes, "   \
                "VERIFY_PASSWORD %zu bytes, connections %d)\n", \
                mode, d.chunk, d.len[0], d.len[1], d.conns);    \
        abort();                                                \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < INPUT_HEADER)
        return 0;
    uint8_t mode = data[0];
    struct daemon d = { .chunk = data[1], .fd = { -1, -1 } };
    size_t n = size - INPUT_HEADER, split = (size_t)data[2] << 8 | data[3];
    d.len[0] = split < n ? split : n;
    d.len[1] = n - d.len[0];
    for (int k = 0; k < 2; k++) {
        d.stream[k] = malloc(d.len[k] + 1); /* exactly the stream: ASan sees any read past it */
        memcpy(d.stream[k], data + INPUT_HEADER + (k == 0 ? 0 : d.len[0]), d.len[k]);
    }

    int answer = mode & 3;
    bool noinput = (mode & MODE_NOINPUT) != 0;
    const char *argv[5] = { socket_arg };
    int argc = 1;
    if (noinput)
        argv[argc++] = "noinput";
    if (mode & MODE_AUTHTOK)
        argv[argc++] = "authtok";
    if (mode & MODE_DEBUG)
        argv[argc++] = "debug";

    if (!daemon_begin(&d))
        abort();
    struct shown shown = { .fail = answer == ANSWER_CONV_FAILS,
                           .answer = answers[answer],
                           .wait_fd = -1 };
    struct pam_conv conv = { fake_conv, &shown };
    pam_handle_t *pamh = NULL;
    if (pam_start_confdir(SERVICE, "root", &conv, dir, &pamh) != PAM_SUCCESS)
        abort();
    uint64_t began = tg_now_ms();
    int rc = pam_sm_authenticate(pamh, 0, argc, argv);
    bool slow = tg_now_ms() - began > SLOW_MS;
    pam_end(pamh, rc);
    if (!daemon_end(&d))
        abort();

    /* What the stream says the outcome must be. */
    struct ending first =
        read_exchange(d.stream[0], d.len[0], d.id[0], false, answer == ANSWER_CONV_FAILS);
    bool step = first.end == END_REFUSED && (first.flags & TG_FLAG_ASK_PASSWORD) != 0 && !noinput;
    /* The password is sent only when there is one: "" is a cancel, a failed conversation gone. */
    bool step_sends = step && answer == ANSWER_PASSWORD;
    enum end want = first.end;
    if (step)
        want =
            !step_sends ? END_GONE : read_exchange(d.stream[1], d.len[1], d.id[1], true, false).end;

    if (rc == PAM_IGNORE)
        FAIL("PAM_IGNORE for an authentication");
    if (rc != PAM_SUCCESS && rc != PAM_AUTH_ERR && rc != PAM_MAXTRIES && rc != PAM_USER_UNKNOWN &&
        rc != PAM_AUTHINFO_UNAVAIL && rc != PAM_SYSTEM_ERR && rc != PAM_BUF_ERR)
        FAIL("%d (%s) is not a code of docs/spec.md §10", rc, pam_strerror(NULL, rc));
    if (rc == PAM_SUCCESS && want != END_SUCCESS)
        FAIL("PAM_SUCCESS, but the stream holds no whole RESULT success of the module's request "
             "before the end of its exchange (it ends in %s)",
             end_names[want]);
    if (!slow) {
        static const int want_rc[] = {
            [END_FAULT] = PAM_SYSTEM_ERR, [END_GONE] = PAM_AUTHINFO_UNAVAIL
        };
        if (want == END_SUCCESS && rc != PAM_SUCCESS)
            FAIL("a whole RESULT success of the module's request gave %d (%s)", rc,
                 pam_strerror(NULL, rc));
        if ((want == END_FAULT || want == END_GONE) && rc != want_rc[want])
            FAIL("%s gave %d (%s)", end_names[want], rc, pam_strerror(NULL, rc));
        if (d.id[0] == 0 || d.id[0] == TG_UNSOLICITED_ID || d.kind[0] != TG_KIND_EVALUATE)
            FAIL("no EVALUATE request with a valid id was read");
        if (d.conns != 1 + step_sends)
            FAIL("%d connections, %d expected", d.conns, 1 + step_sends);
        if (step_sends && (d.id[1] == 0 || d.kind[1] != TG_KIND_VERIFY_PASSWORD ||
                           strcmp(d.password, ANSWER_TEXT) != 0 || d.id[1] == TG_UNSOLICITED_ID))
            FAIL("the password step sent no VERIFY_PASSWORD with the password typed");
    }

    for (int k = 0; k < 2; k++) {
        if (d.fd[k] >= 0)
            close(d.fd[k]);
        free(d.stream[k]);
    }
    return 0;
}

/* ---- the surroundings ----------------------------------------------------------------------- */

static void remove_dir(void)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/" SERVICE, dir);
    unlink(path);
    unlink(sock);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *seeds = getenv("TG_FUZZ_WRITE_SEEDS");
    if (seeds != NULL)
        exit(write_seeds(seeds) ? 0 : 1);
    /* The module's syslog lines (every protocol fault is one) would flood the journal. */
    setlogmask(LOG_MASK(LOG_EMERG));
    /* A controlling terminal would be read for keys and written to: the module is run without. */
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (tty >= 0 && (getsid(0) == getpid() || ioctl(tty, TIOCNOTTY) != 0)) {
        fprintf(stderr, "fuzz_reply: cannot leave the controlling terminal\n");
        exit(1);
    }
    if (tty >= 0)
        close(tty);
    unsetenv("LC_ALL");
    unsetenv("LC_MESSAGES");
    unsetenv("LANGUAGE");
    unsetenv("SSH_CONNECTION");
    unsetenv("SSH_CLIENT");
    setenv("LANG", "C.UTF-8", 1);

    /* TMPDIR (fuzz/run.sh empties its own at every run), unless the socket path would be too long. */
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] != '/' || strlen(tmp) > 64)
        tmp = "/tmp";
    snprintf(dir, sizeof(dir), "%s/tg-fuzz-reply-XXXXXX", tmp);
    if (mkdtemp(dir) == NULL) {
        perror("fuzz_reply: mkdtemp");
        exit(1);
    }
    atexit(remove_dir);
    snprintf(sock, sizeof(sock), "%s/touchgated.sock", dir);
    snprintf(socket_arg, sizeof(socket_arg), "socket=%s", sock);
    char service[PATH_MAX + 32];
    snprintf(service, sizeof(service), "%s/" SERVICE, dir);
    int fd = open(service, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    /* The module is called directly: the stack is empty, only the handle is needed. */
    int listen_fd = -1;
    if (fd < 0 || close(fd) != 0 || !fake_listen(sock, &listen_fd, true) ||
        !daemon_start(listen_fd)) {
        fprintf(stderr, "fuzz_reply: cannot set up %s and the daemon's thread\n", dir);
        exit(1);
    }
    return 0;
}
