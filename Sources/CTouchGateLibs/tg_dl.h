/* A library opened with dlopen on first use and its functions resolved into pointers, once. */
#ifndef TG_DL_H
#define TG_DL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct tg_dl {
    const char *library;          /* soname, looked up as the dynamic loader would */
    const char *const *names;     /* the functions, and where each pointer goes */
    void **const *slots;
    size_t count;
    pthread_mutex_t lock;
    bool tried, loaded;
    char failure[256];
};

#define TG_DL_INIT(soname, names_, slots_) \
    { soname, names_, slots_, sizeof(names_) / sizeof((names_)[0]), PTHREAD_MUTEX_INITIALIZER, false, false, "" }

/* Opens and resolves on the first call (from any thread); true when every function was found,
 * else false with *error (when not NULL) saying why, every time. The library is never closed. */
bool tg_dl_load(struct tg_dl *dl, const char **error);

#endif
