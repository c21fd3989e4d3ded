/* tpm2-tss loaded at run time (dlopen): the daemon works without a TPM, so its binary names no
 * tss2 library and a machine without tpm2-tss never loads one. The headers give the types only;
 * every call goes through tg<name> (tg + tpm2-tss's name) after tg_tss_load() returned true. */
#ifndef TG_TSS_H
#define TG_TSS_H

/* The tables below (constants, X-macro lists) are laid out by hand. */
/* clang-format off */

#include <stdbool.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_tctildr.h>

/* Loads libtss2-esys, -tctildr and -mu and resolves every function below, once; false (and *error,
 * a static text naming the library, when error is not NULL) if it cannot. */
bool tg_tss_load(const char **error);

/* Tss2_RC_Decode's text for rc when libtss2-rc loads, else NULL (the caller shows the number). */
const char *tg_tss_decode(TSS2_RC rc);

/* (return type, tpm2-tss's name, parameters, arguments), per library. */
#define TG_TCTILDR_FUNCTIONS(X, XV)                                                                 \
    X(TSS2_RC, Tss2_TctiLdr_Initialize, (const char *conf, TSS2_TCTI_CONTEXT **t), (conf, t))       \
    XV(Tss2_TctiLdr_Finalize, (TSS2_TCTI_CONTEXT **t), (t))

#define TG_MU_FUNCTIONS(X, XV)                                                                      \
    X(TSS2_RC, Tss2_MU_TPM2B_PUBLIC_Marshal,                                                        \
      (TPM2B_PUBLIC const *src, uint8_t buf[], size_t cap, size_t *off), (src, buf, cap, off))      \
    X(TSS2_RC, Tss2_MU_TPM2B_PUBLIC_Unmarshal,                                                      \
      (uint8_t const buf[], size_t len, size_t *off, TPM2B_PUBLIC *dst), (buf, len, off, dst))      \
    X(TSS2_RC, Tss2_MU_TPM2B_PRIVATE_Marshal,                                                       \
      (TPM2B_PRIVATE const *src, uint8_t buf[], size_t cap, size_t *off), (src, buf, cap, off))     \
    X(TSS2_RC, Tss2_MU_TPM2B_PRIVATE_Unmarshal,                                                     \
      (uint8_t const buf[], size_t len, size_t *off, TPM2B_PRIVATE *dst), (buf, len, off, dst))

#define TG_ESYS_FUNCTIONS(X, XV)                                                                    \
    X(TSS2_RC, Esys_Initialize, (ESYS_CONTEXT **e, TSS2_TCTI_CONTEXT *t, TSS2_ABI_VERSION *v), (e, t, v)) \
    XV(Esys_Finalize, (ESYS_CONTEXT **e), (e))                                                      \
    XV(Esys_Free, (void *p), (p))                                                                   \
    X(TSS2_RC, Esys_TRSess_SetAttributes,                                                           \
      (ESYS_CONTEXT *e, ESYS_TR session, TPMA_SESSION flags, TPMA_SESSION mask),                    \
      (e, session, flags, mask))                                                                    \
    TG_ESYS_ASYNC_FUNCTIONS(X, XV)

/* The commands as _Async then _Finish with Esys_SetTimeout: the synchronous calls wait without
 * limit, these stop at a deadline wherever the TCTI honours the timeout (the kernel's device). */
#define TG_ESYS_ASYNC_FUNCTIONS(X, XV)                                                              \
    X(TSS2_RC, Esys_SetTimeout, (ESYS_CONTEXT *e, int32_t ms), (e, ms))                             \
    X(TSS2_RC, Esys_FlushContext_Async, (ESYS_CONTEXT *e, ESYS_TR h), (e, h))                       \
    X(TSS2_RC, Esys_FlushContext_Finish, (ESYS_CONTEXT *e), (e))                                    \
    X(TSS2_RC, Esys_GetRandom_Async, (ESYS_CONTEXT *e, ESYS_TR s1, ESYS_TR s2, ESYS_TR s3, UINT16 n), \
      (e, s1, s2, s3, n))                                                                           \
    X(TSS2_RC, Esys_GetRandom_Finish, (ESYS_CONTEXT *e, TPM2B_DIGEST **out), (e, out))              \
    X(TSS2_RC, Esys_CreatePrimary_Async,                                                            \
      (ESYS_CONTEXT *e, ESYS_TR h, ESYS_TR s1, ESYS_TR s2, ESYS_TR s3,                              \
       const TPM2B_SENSITIVE_CREATE *sens, const TPM2B_PUBLIC *pub, const TPM2B_DATA *info,         \
       const TPML_PCR_SELECTION *pcrs),                                                             \
      (e, h, s1, s2, s3, sens, pub, info, pcrs))                                                    \
    X(TSS2_RC, Esys_CreatePrimary_Finish,                                                           \
      (ESYS_CONTEXT *e, ESYS_TR *obj, TPM2B_PUBLIC **opub, TPM2B_CREATION_DATA **cdata,             \
       TPM2B_DIGEST **chash, TPMT_TK_CREATION **ticket),                                            \
      (e, obj, opub, cdata, chash, ticket))                                                         \
    X(TSS2_RC, Esys_Create_Async,                                                                   \
      (ESYS_CONTEXT *e, ESYS_TR parent, ESYS_TR s1, ESYS_TR s2, ESYS_TR s3,                         \
       const TPM2B_SENSITIVE_CREATE *sens, const TPM2B_PUBLIC *pub, const TPM2B_DATA *info,         \
       const TPML_PCR_SELECTION *pcrs),                                                             \
      (e, parent, s1, s2, s3, sens, pub, info, pcrs))                                               \
    X(TSS2_RC, Esys_Create_Finish,                                                                  \
      (ESYS_CONTEXT *e, TPM2B_PRIVATE **opriv, TPM2B_PUBLIC **opub, TPM2B_CREATION_DATA **cdata,    \
       TPM2B_DIGEST **chash, TPMT_TK_CREATION **ticket),                                            \
      (e, opriv, opub, cdata, chash, ticket))                                                       \
    X(TSS2_RC, Esys_Load_Async,                                                                     \
      (ESYS_CONTEXT *e, ESYS_TR parent, ESYS_TR s1, ESYS_TR s2, ESYS_TR s3,                         \
       const TPM2B_PRIVATE *priv, const TPM2B_PUBLIC *pub),                                         \
      (e, parent, s1, s2, s3, priv, pub))                                                           \
    X(TSS2_RC, Esys_Load_Finish, (ESYS_CONTEXT *e, ESYS_TR *obj), (e, obj))                         \
    X(TSS2_RC, Esys_Unseal_Async, (ESYS_CONTEXT *e, ESYS_TR item, ESYS_TR s1, ESYS_TR s2, ESYS_TR s3), \
      (e, item, s1, s2, s3))                                                                        \
    X(TSS2_RC, Esys_Unseal_Finish, (ESYS_CONTEXT *e, TPM2B_SENSITIVE_DATA **out), (e, out))         \
    X(TSS2_RC, Esys_StartAuthSession_Async,                                                         \
      (ESYS_CONTEXT *e, ESYS_TR key, ESYS_TR bind, ESYS_TR s1, ESYS_TR s2, ESYS_TR s3,              \
       const TPM2B_NONCE *nonce, TPM2_SE type, const TPMT_SYM_DEF *sym, TPMI_ALG_HASH hash),        \
      (e, key, bind, s1, s2, s3, nonce, type, sym, hash))                                           \
    X(TSS2_RC, Esys_StartAuthSession_Finish, (ESYS_CONTEXT *e, ESYS_TR *session), (e, session))     \
    X(TSS2_RC, Esys_PolicyPCR_Async,                                                                \
      (ESYS_CONTEXT *e, ESYS_TR session, ESYS_TR s1, ESYS_TR s2, ESYS_TR s3,                        \
       const TPM2B_DIGEST *digest, const TPML_PCR_SELECTION *pcrs),                                 \
      (e, session, s1, s2, s3, digest, pcrs))                                                       \
    X(TSS2_RC, Esys_PolicyPCR_Finish, (ESYS_CONTEXT *e), (e))                                       \
    X(TSS2_RC, Esys_PolicyGetDigest_Async,                                                          \
      (ESYS_CONTEXT *e, ESYS_TR session, ESYS_TR s1, ESYS_TR s2, ESYS_TR s3), (e, session, s1, s2, s3)) \
    X(TSS2_RC, Esys_PolicyGetDigest_Finish, (ESYS_CONTEXT *e, TPM2B_DIGEST **out), (e, out))

#define TG_TSS_PROTOTYPE(ret, name, params, args) ret tg##name params;
#define TG_TSS_PROTOTYPE_VOID(name, params, args) void tg##name params;
TG_TCTILDR_FUNCTIONS(TG_TSS_PROTOTYPE, TG_TSS_PROTOTYPE_VOID)
TG_MU_FUNCTIONS(TG_TSS_PROTOTYPE, TG_TSS_PROTOTYPE_VOID)
TG_ESYS_FUNCTIONS(TG_TSS_PROTOTYPE, TG_TSS_PROTOTYPE_VOID)

/* clang-format on */

#endif
