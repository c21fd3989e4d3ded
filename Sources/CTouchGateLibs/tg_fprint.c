/* libfprint-2 loaded with dlopen on first use (see tg_fprint.h). */
#include "tg_fprint.h"
#include "tg_dl.h"

TG_DL_DEFINE(TG_FPRINT_FUNCTIONS, libfprint, "libfprint-2.so.2")

bool tg_fprint_load(const char **error)
{
    /* libfprint's own calls need GIO, which it loads as its dependency; ours go through tg_gio. */
    return tg_dl_load(&libfprint, error) && tg_gio_load(error);
}
