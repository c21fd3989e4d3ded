/* GIO loaded with dlopen on first use (see tg_gio.h). */
#include "tg_gio.h"
#include "tg_dl.h"

#define POINTER(ret, name, params, args) static ret(*p_##name) params;
#define POINTER_VOID(name, params, args) static void(*p_##name) params;
TG_GIO_FUNCTIONS(POINTER, POINTER_VOID)

#define NAME(ret, name, params, args) #name,
#define NAME_VOID(name, params, args) #name,
static const char *const names[] = {TG_GIO_FUNCTIONS(NAME, NAME_VOID)};
#define SLOT(ret, name, params, args) (void **)&p_##name,
#define SLOT_VOID(name, params, args) (void **)&p_##name,
static void **const slots[] = {TG_GIO_FUNCTIONS(SLOT, SLOT_VOID)};

static struct tg_dl libgio = TG_DL_INIT("libgio-2.0.so.0", names, slots);

bool tg_gio_load(const char **error) { return tg_dl_load(&libgio, error); }

#define WRAPPER(ret, name, params, args) \
    ret tg##name params { return p_##name args; }
#define WRAPPER_VOID(name, params, args) \
    void tg##name params { p_##name args; }
TG_GIO_FUNCTIONS(WRAPPER, WRAPPER_VOID)
