/* See tg_dl.h. */
#include "tg_dl.h"

#include <dlfcn.h>
#include <stdio.h>

static bool open_and_resolve(struct tg_dl *dl)
{
    void *handle = dlopen(dl->library, RTLD_LAZY | RTLD_LOCAL); /* binding as at exec */
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(dl->failure, sizeof(dl->failure), "%s", why != NULL ? why : dl->library);
        return false;
    }
    for (size_t i = 0; i < dl->count; i++) {
        *dl->slots[i] = dlsym(handle, dl->names[i]);
        if (*dl->slots[i] == NULL) {
            snprintf(dl->failure, sizeof(dl->failure), "%s has no %s", dl->library, dl->names[i]);
            return false;
        }
    }
    return true;
}

bool tg_dl_load(struct tg_dl *dl, const char **error)
{
    pthread_mutex_lock(&dl->lock);
    if (!dl->tried) {
        dl->tried = true;
        dl->loaded = open_and_resolve(dl);
    }
    bool loaded = dl->loaded;
    pthread_mutex_unlock(&dl->lock);
    if (!loaded && error != NULL)
        *error = dl->failure;
    return loaded;
}
