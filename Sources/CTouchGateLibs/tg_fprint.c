/* libfprint-2 loaded with dlopen on first use (see tg_fprint.h). */
#include "tg_fprint.h"
#include "tg_dl.h"

#define POINTER(ret, name, params, args) static ret(*p_##name) params;
#define POINTER_VOID(name, params, args) static void(*p_##name) params;
TG_FPRINT_FUNCTIONS(POINTER, POINTER_VOID)

#define NAME(ret, name, params, args) #name,
#define NAME_VOID(name, params, args) #name,
static const char *const names[] = {TG_FPRINT_FUNCTIONS(NAME, NAME_VOID)};
#define SLOT(ret, name, params, args) (void **)&p_##name,
#define SLOT_VOID(name, params, args) (void **)&p_##name,
static void **const slots[] = {TG_FPRINT_FUNCTIONS(SLOT, SLOT_VOID)};

static struct tg_dl libfprint = TG_DL_INIT("libfprint-2.so.2", names, slots);

bool tg_fprint_load(const char **error)
{
    /* libfprint's own calls need GIO, which it loads as its dependency; ours go through tg_gio. */
    return tg_dl_load(&libfprint, error) && tg_gio_load(error);
}

#define WRAPPER(ret, name, params, args) \
    ret tg##name params { return p_##name args; }
#define WRAPPER_VOID(name, params, args) \
    void tg##name params { p_##name args; }
TG_FPRINT_FUNCTIONS(WRAPPER, WRAPPER_VOID)
