/* GIO loaded with dlopen on first use (see tg_gio.h). */
#include "tg_gio.h"
#include "tg_dl.h"

TG_DL_DEFINE(TG_GIO_FUNCTIONS, libgio, "libgio-2.0.so.0")

bool tg_gio_load(const char **error)
{
    return tg_dl_load(&libgio, error);
}
