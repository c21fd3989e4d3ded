/* A library opened with dlopen on first use and its functions resolved into pointers, once. */
#ifndef TG_DL_H
#define TG_DL_H

/* The tables below (constants, X-macro lists) are laid out by hand. */
/* clang-format off */

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

/* Defines, for a list of functions LIST(X, XV) as in tg_fprint.h: a pointer for each, the table
 * `var` that resolves them from `soname`, and tg<name> wrappers calling through the pointers. */
#define TG_DL_POINTER(ret, name, params, args) static ret(*p_##name) params;
#define TG_DL_POINTER_VOID(name, params, args) static void(*p_##name) params;
#define TG_DL_NAME(ret, name, params, args) #name,
#define TG_DL_NAME_VOID(name, params, args) #name,
#define TG_DL_SLOT(ret, name, params, args) (void **)&p_##name,
#define TG_DL_SLOT_VOID(name, params, args) (void **)&p_##name,
#define TG_DL_WRAPPER(ret, name, params, args) \
    ret tg##name params { return p_##name args; }
#define TG_DL_WRAPPER_VOID(name, params, args) \
    void tg##name params { p_##name args; }
#define TG_DL_DEFINE(LIST, var, soname)                                                    \
    LIST(TG_DL_POINTER, TG_DL_POINTER_VOID)                                                \
    static const char *const var##_names[] = {LIST(TG_DL_NAME, TG_DL_NAME_VOID)};          \
    static void **const var##_slots[] = {LIST(TG_DL_SLOT, TG_DL_SLOT_VOID)};               \
    static struct tg_dl var = TG_DL_INIT(soname, var##_names, var##_slots);                \
    LIST(TG_DL_WRAPPER, TG_DL_WRAPPER_VOID)

/* Opens and resolves on the first call (from any thread); true when every function was found,
 * else false with *error (when not NULL) saying why, every time. The library is never closed. */
bool tg_dl_load(struct tg_dl *dl, const char **error);

/* clang-format on */

#endif
