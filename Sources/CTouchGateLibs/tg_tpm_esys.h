/* One conversation with the TPM for tg_tpm.c: open, the storage primary, sessions, PCR policy,
 * and a close that flushes everything loaded (without a resource manager, as under swtpm or on
 * /dev/tpm0, a transient object left behind stays in the TPM until it fills up). */
#ifndef TG_TPM_ESYS_H
#define TG_TPM_ESYS_H

#include "tg_tss.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* Each call of tg_tpm.h answers within TG_TPM_DEADLINE_MS (tg_tpm.c); its commands stop a second
 * earlier, so where the TCTI honours ESAPI's timeout (the kernel's device) the conversation still
 * ends with everything flushed. */
#define TG_TPM_DEADLINE_MS 10000
#define TG_TPM_COMMANDS_MS (TG_TPM_DEADLINE_MS - 1000)

struct tg_tpm {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    ESYS_TR primary, object, session; /* ESYS_TR_NONE when not loaded */
    struct timespec deadline;         /* CLOCK_MONOTONIC */
    bool late;                        /* a command passed the deadline: the context is unusable */
    bool absent;                      /* no TPM to open: no node, no tpm2-tss, no peer */
    int refused;                      /* TG_TPM_*_REFUSED: refused for good (tg_tpm.h), or 0 */
    const char *where;                /* the TCTI configuration, for sentences */
    char *error;
    size_t error_cap;
};

/* True, with the sentence in error, when tcti is the kernel's ("device:PATH") and PATH does not
 * exist: no TPM, said without loading tpm2-tss or starting a thread. */
bool tg_tpm_device_missing(const char *tcti, char *error, size_t error_cap);

/* Loads tpm2-tss; false with a sentence in error when it is not installed. */
bool tg_tpm_load(char *error, size_t error_cap);

/* Loads tpm2-tss and connects through tcti (NULL/"": tpm2-tss's default); false with error set. */
bool tg_tpm_open(struct tg_tpm *t, const char *tcti, char *error, size_t error_cap);

/* Flushes the session, object and primary still loaded, then closes; safe after any failure. */
void tg_tpm_close(struct tg_tpm *t);

/* Flushes *handle when loaded (and the TPM still answers); *handle is then ESYS_TR_NONE. */
void tg_tpm_flush(struct tg_tpm *t, ESYS_TR *handle);

/* Writes "<what>: <tpm2-tss's reason>" (or that the deadline passed) into t->error; false. */
bool tg_tpm_fail(struct tg_tpm *t, const char *what, TSS2_RC rc);

/* The same for the answer rc to command (TG_TPM_LOAD, ...), recording in t->refused whether it
 * is a refusal for good (tg_tpm_refusal). */
bool tg_tpm_fail_command(struct tg_tpm *t, const char *what, TSS2_RC rc, int command);

/* Sets the ESAPI timeout to the time left; nonzero (and t->late) once the deadline passed. */
TSS2_RC tg_tpm_arm(struct tg_tpm *t);

/* Runs the ESAPI command cmd: _Async with the arguments in, then _Finish with out until the TPM
 * answers or the deadline passes (the synchronous Esys_<cmd> would wait forever). */
/* clang-format off */
#define TG_TPM_RUN(t, cmd, in, out)                         \
    __extension__({                                         \
        TSS2_RC rc_ = tgEsys_##cmd##_Async in;              \
        while (rc_ == TSS2_RC_SUCCESS) {                    \
            rc_ = tg_tpm_arm(t);                            \
            if (rc_ != TSS2_RC_SUCCESS)                     \
                break;                                      \
            rc_ = tgEsys_##cmd##_Finish out;                \
            if (rc_ != TSS2_ESYS_RC_TRY_AGAIN)              \
                break;                                      \
            rc_ = TSS2_RC_SUCCESS;                          \
        }                                                   \
        rc_;                                                \
    })
/* clang-format on */

/* The storage primary under the owner hierarchy into t->primary: the same key at every call, as
 * the TPM derives it from its owner seed and the fixed template. Refused for good (t->refused)
 * when the owner hierarchy has a password. */
bool tg_tpm_primary(struct tg_tpm *t);

/* Starts a session into t->session (TPM2_SE_HMAC, _POLICY or _TRIAL). HMAC and policy sessions
 * are salted with the primary and carry AES-128-CFB parameter encryption with attributes attrs. */
bool tg_tpm_session(struct tg_tpm *t, TPM2_SE type, TPMA_SESSION attrs);

/* The selection of the SHA-256 PCRs in mask (bits 0–23). */
TPML_PCR_SELECTION tg_tpm_pcr_selection(uint32_t mask);

/* PolicyPCR on t->session over the PCRs in mask, at their current values. */
bool tg_tpm_policy_pcr(struct tg_tpm *t, uint32_t mask);

/* tg_tpm.h's three calls as conversations in the calling thread (tg_tpm_seal.c); tg_tpm.c runs
 * them on a thread of their own to hold the deadline whatever the TCTI does. */
int tg_tpm_run_probe(const char *tcti, char *error, size_t error_cap);
int tg_tpm_run_seal(const char *tcti, uint32_t pcrs, const uint8_t *secret, size_t len,
                    uint8_t *blob, size_t blob_cap, size_t *blob_len, char *error,
                    size_t error_cap);
int tg_tpm_run_unseal(const char *tcti, const uint8_t *blob, size_t blob_len, uint8_t *secret,
                      size_t secret_cap, size_t *len, char *error, size_t error_cap);

#endif
