/* The calls Swift's Glibc module lacks: accept4 and SO_PEERCRED (they need _GNU_SOURCE), thread
 * names, the process's own settings (core dumps, malloc arenas, free heap pages), and renameat2. */
#define _GNU_SOURCE
#include "tg_loop.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <pthread.h>
#include <unistd.h>

int tg_accept(int listen_fd)
{
    return accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int tg_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred))
        return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int64_t tg_process_real_uid(int32_t pid)
{
    char path[64];
    char buf[2048];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t n;
    do {
        n = read(fd, buf, sizeof(buf) - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *line = strstr(buf, "\nUid:");
    if (line == NULL)
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long uid = strtoul(line + 5, &end, 10);
    if (errno != 0 || end == line + 5 || uid > 0xFFFFFFFFul)
        return -1;
    return (int64_t)uid;
}

void tg_set_thread_name(const char *name)
{
    char shortened[16];
    snprintf(shortened, sizeof(shortened), "%s", name);
    pthread_setname_np(pthread_self(), shortened);
}

int tg_no_core_dumps(void)
{
    struct rlimit none = { 0, 0 };
    int limited = setrlimit(RLIMIT_CORE, &none);
    int undumpable = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    return limited == 0 && undumpable == 0 ? 0 : -1;
}

void tg_one_malloc_arena(void)
{
    mallopt(M_ARENA_MAX, 1);
}

void tg_release_free_heap(void)
{
    malloc_trim(0);
}

int tg_exchange_names(int dirfd, const char *a, const char *b)
{
    return renameat2(dirfd, a, dirfd, b, RENAME_EXCHANGE);
}
