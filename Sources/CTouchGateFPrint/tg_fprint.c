/* libfprint-2 loaded with dlopen on first use (see tg_fprint.h). */
#include "tg_fprint.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define TG_FPRINT_POINTER(ret, name, params, args) static ret(*p_##name) params;
#define TG_FPRINT_POINTER_VOID(name, params, args) static void(*p_##name) params;
TG_FPRINT_FUNCTIONS(TG_FPRINT_POINTER, TG_FPRINT_POINTER_VOID)

#define LIBRARY "libfprint-2.so.2"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static char failure[256] = "not loaded";

static bool resolve(void *library, const char *name, void **slot)
{
    *slot = dlsym(library, name);
    if (*slot == NULL) {
        snprintf(failure, sizeof(failure), "%s has no %s", LIBRARY, name);
        return false;
    }
    return true;
}

static void load(void)
{
    /* Never unloaded: libfprint registers GObject types and keeps threads. */
    void *library = dlopen(LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(failure, sizeof(failure), "%s", why != NULL ? why : "cannot load " LIBRARY);
        return;
    }
#define TG_FPRINT_RESOLVE(ret, name, params, args) \
    if (!resolve(library, #name, (void **)&p_##name)) return;
#define TG_FPRINT_RESOLVE_VOID(name, params, args) \
    if (!resolve(library, #name, (void **)&p_##name)) return;
    TG_FPRINT_FUNCTIONS(TG_FPRINT_RESOLVE, TG_FPRINT_RESOLVE_VOID)
    loaded = true;
}

bool tg_fprint_load(const char **error)
{
    pthread_once(&once, load);
    if (!loaded && error != NULL)
        *error = failure;
    return loaded;
}

#define TG_FPRINT_WRAPPER(ret, name, params, args) \
    ret tg##name params { return p_##name args; }
#define TG_FPRINT_WRAPPER_VOID(name, params, args) \
    void tg##name params { p_##name args; }
TG_FPRINT_FUNCTIONS(TG_FPRINT_WRAPPER, TG_FPRINT_WRAPPER_VOID)
