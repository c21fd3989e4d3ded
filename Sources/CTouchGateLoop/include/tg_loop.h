/* The daemon's one event loop for Swift: a GLib main context run by one thread, with a job queue,
 * fd watches and timers, and the few socket calls Swift's Glibc module does not offer. */
#ifndef TG_LOOP_H
#define TG_LOOP_H

#include <stdint.h>

typedef struct tg_loop tg_loop;

/* Events of an fd watch (the values of GLib's G_IO_* conditions). */
#define TG_EV_IN  1u
#define TG_EV_OUT 4u
#define TG_EV_ERR 8u
#define TG_EV_HUP 16u

typedef void (*tg_job_fn)(void *arg);
/* Returns non-zero to keep the watch, 0 to remove it. */
typedef int (*tg_fd_fn)(int fd, unsigned revents, void *arg);
/* Returns non-zero to fire again after the same interval, 0 to stop. */
typedef int (*tg_timer_fn)(void *arg);

/* A new loop over a new GLib main context (never the default one, which the reader owns). */
tg_loop *tg_loop_new(void);

/* The calling thread becomes the loop's thread: the context is its thread-default context (so
 * GDBus objects created there dispatch here) until tg_loop_quit makes this return. */
void tg_loop_run(tg_loop *loop);
void tg_loop_quit(tg_loop *loop);

/* From any thread: fn(arg) runs on the loop thread, after the jobs posted before it. */
void tg_loop_post(tg_loop *loop, tg_job_fn fn, void *arg);

/* Loop thread only. Ids are never 0; removing a finished or removed id does nothing. */
unsigned tg_loop_watch(tg_loop *loop, int fd, unsigned events, tg_fd_fn fn, void *arg);
void tg_loop_watch_events(tg_loop *loop, unsigned id, unsigned events);
unsigned tg_loop_timer(tg_loop *loop, unsigned milliseconds, tg_timer_fn fn, void *arg);
void tg_loop_remove(tg_loop *loop, unsigned id);

/* The GMainContext, for GLib code (GDBus) that must dispatch on this loop. */
void *tg_loop_main_context(tg_loop *loop);

/* accept4(SOCK_NONBLOCK | SOCK_CLOEXEC); -1 with errno as accept4 sets it. */
int tg_accept(int listen_fd);

/* The peer of a Unix socket as the kernel reports it (SO_PEERCRED); 0 on success, -1 otherwise. */
int tg_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid);

/* The real uid of a process (first field of Uid: in /proc/PID/status); -1 when it cannot be read.
 * For accounting only: a setuid client's connections count against the person who ran it. */
int64_t tg_process_real_uid(int32_t pid);

/* Names the calling thread (at most 15 bytes show in ps and /proc). */
void tg_set_thread_name(const char *name);

/* No core file and no ptrace by others for this process: it holds the data key and sealed
 * passwords in memory (RLIMIT_CORE 0, PR_SET_DUMPABLE 0). 0 on success, -1 otherwise. */
int tg_no_core_dumps(void);

/* Every thread allocates from malloc's one main arena (M_ARENA_MAX 1) instead of one arena per
 * thread. Called before the process starts a thread. */
void tg_one_malloc_arena(void);

/* Gives the kernel back the free pages malloc holds, inside the heap as well as at its top
 * (malloc_trim). By itself glibc returns only the top, so the holes a burst of clients leaves
 * between longer-lived blocks stay resident. Walks the free lists: not for a hot path. */
void tg_release_free_heap(void);

/* Swaps the entries `a` and `b` of one directory in one step (renameat2 RENAME_EXCHANGE, which
 * Swift's Glibc module lacks): 0 on success, -1 with errno otherwise (ENOENT when either is
 * missing; EINVAL where the file system cannot exchange). */
int tg_exchange_names(int dirfd, const char *a, const char *b);

#endif /* TG_LOOP_H */
