/* tpm2-tss loaded with dlopen on first use (see tg_tss.h). */
#include "tg_tss.h"
#include "tg_dl.h"

#include <tss2/tss2_rc.h>

TG_DL_DEFINE(TG_TCTILDR_FUNCTIONS, libtctildr, "libtss2-tctildr.so.0")
TG_DL_DEFINE(TG_MU_FUNCTIONS, libmu, "libtss2-mu.so.0")
TG_DL_DEFINE(TG_ESYS_FUNCTIONS, libesys, "libtss2-esys.so.0")

/* The lists are written by hand: each pointer must have the type tpm2-tss's header declares. */
#define TG_TSS_SAME_TYPE(ret, name, params, args) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), __typeof__(p_##name)), #name);
#define TG_TSS_SAME_TYPE_VOID(name, params, args) TG_TSS_SAME_TYPE(void, name, params, args)
TG_TCTILDR_FUNCTIONS(TG_TSS_SAME_TYPE, TG_TSS_SAME_TYPE_VOID)
TG_MU_FUNCTIONS(TG_TSS_SAME_TYPE, TG_TSS_SAME_TYPE_VOID)
TG_ESYS_FUNCTIONS(TG_TSS_SAME_TYPE, TG_TSS_SAME_TYPE_VOID)

/* Only for the error sentences: without it they carry the response code's number. */
#define TG_RC_FUNCTIONS(X, XV) X(const char *, Tss2_RC_Decode, (TSS2_RC rc), (rc))
TG_RC_FUNCTIONS(TG_TSS_PROTOTYPE, TG_TSS_PROTOTYPE_VOID)
TG_DL_DEFINE(TG_RC_FUNCTIONS, librc, "libtss2-rc.so.0")

bool tg_tss_load(const char **error)
{
    return tg_dl_load(&libtctildr, error) && tg_dl_load(&libmu, error) &&
           tg_dl_load(&libesys, error);
}

const char *tg_tss_decode(TSS2_RC rc)
{
    return tg_dl_load(&librc, NULL) ? tgTss2_RC_Decode(rc) : NULL;
}
