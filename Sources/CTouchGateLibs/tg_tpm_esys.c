/* See tg_tpm_esys.h. */
#include "tg_tpm.h"
#include "tg_tpm_esys.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static long long milliseconds_left(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)(deadline->tv_sec - now.tv_sec) * 1000 +
           (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

bool tg_tpm_fail(struct tg_tpm *t, const char *what, TSS2_RC rc)
{
    if (t->late) {
        snprintf(t->error, t->error_cap, "%s: the TPM did not answer within %d seconds", what,
                 TG_TPM_COMMANDS_MS / 1000);
        return false;
    }
    const char *reason = tg_tss_decode(rc);
    if (reason != NULL)
        snprintf(t->error, t->error_cap, "%s: %s", what, reason);
    else
        snprintf(t->error, t->error_cap, "%s: error 0x%x", what, (unsigned)rc);
    return false;
}

bool tg_tpm_fail_command(struct tg_tpm *t, const char *what, TSS2_RC rc, int command)
{
    t->refused = t->late ? 0 : tg_tpm_refusal(rc, command);
    return tg_tpm_fail(t, what, rc);
}

bool tg_tpm_load(char *error, size_t error_cap)
{
    const char *why = NULL;
    if (tg_tss_load(&why))
        return true;
    snprintf(error, error_cap, "tpm2-tss is not installed (%s)", why);
    return false;
}

TSS2_RC tg_tpm_arm(struct tg_tpm *t)
{
    long long left = milliseconds_left(&t->deadline);
    if (left <= 0) {
        t->late = true;
        return TSS2_ESYS_RC_GENERAL_FAILURE;
    }
    return tgEsys_SetTimeout(t->esys, (int32_t)left);
}

/* The kernel's TCTI ("device:PATH") names a device node: when there is none, there is no TPM,
 * and that is said without loading tpm2-tss, whose libraries (OpenSSL's among them) would stay
 * in the daemon for nothing. */
bool tg_tpm_device_missing(const char *tcti, char *error, size_t error_cap)
{
    static const char prefix[] = "device:";
    if (tcti == NULL || strncmp(tcti, prefix, sizeof(prefix) - 1) != 0)
        return false;
    char path[256];
    snprintf(path, sizeof(path), "%s", tcti + sizeof(prefix) - 1);
    path[strcspn(path, ",")] = '\0';
    if (path[0] == '\0' || access(path, F_OK) == 0)
        return false;
    snprintf(error, error_cap, "no TPM answers at %s: %s does not exist", tcti, path);
    return true;
}

/* Whether the TCTI names a TPM device node that is there (a "device:" TCTI whose node
 * tg_tpm_device_missing found, or the default search with a node present): one that then cannot
 * be opened (permissions, the unit's DeviceAllow=, a failing driver) is a TPM that fails, asked
 * again later, never "no TPM". */
static bool names_a_present_device(const char *tcti)
{
    if (tcti == NULL)
        return access("/dev/tpmrm0", F_OK) == 0 || access("/dev/tpm0", F_OK) == 0;
    return strncmp(tcti, "device:", strlen("device:")) == 0;
}

bool tg_tpm_open(struct tg_tpm *t, const char *tcti, char *error, size_t error_cap)
{
    *t = (struct tg_tpm){ .primary = ESYS_TR_NONE,
                          .object = ESYS_TR_NONE,
                          .session = ESYS_TR_NONE,
                          .error = error,
                          .error_cap = error_cap };
    if (tcti != NULL && tcti[0] == '\0')
        tcti = NULL;
    t->where = tcti != NULL ? tcti : "tpm2-tss's default TCTI";
    clock_gettime(CLOCK_MONOTONIC, &t->deadline);
    t->deadline.tv_sec += TG_TPM_COMMANDS_MS / 1000;
    if (tg_tpm_device_missing(tcti, error, error_cap) || !tg_tpm_load(error, error_cap)) {
        t->absent = true;
        return false;
    }

    char what[160];
    snprintf(what, sizeof(what), "no TPM answers at %s", t->where);
    TSS2_RC rc = tgTss2_TctiLdr_Initialize(tcti, &t->tcti);
    if (rc != TSS2_RC_SUCCESS) {
        t->tcti = NULL;
        /* Nothing to connect to (a socket TCTI nobody listens at) is no TPM; a device node that
         * is there but will not open is a failing one. */
        t->absent = !names_a_present_device(tcti);
        return tg_tpm_fail(t, what, rc);
    }
    rc = tgEsys_Initialize(&t->esys, t->tcti, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        t->esys = NULL;
        return tg_tpm_fail(t, what, rc);
    }
    return true;
}

void tg_tpm_flush(struct tg_tpm *t, ESYS_TR *handle)
{
    /* After a missed deadline ESAPI still waits for the old answer and refuses new commands. */
    if (*handle != ESYS_TR_NONE && !t->late)
        (void)TG_TPM_RUN(t, FlushContext, (t->esys, *handle), (t->esys));
    *handle = ESYS_TR_NONE;
}

void tg_tpm_close(struct tg_tpm *t)
{
    if (t->esys != NULL) {
        tg_tpm_flush(t, &t->session);
        tg_tpm_flush(t, &t->object);
        tg_tpm_flush(t, &t->primary);
        tgEsys_Finalize(&t->esys);
    }
    if (t->tcti != NULL)
        tgTss2_TctiLdr_Finalize(&t->tcti);
}

/* The TCG's storage key template (as tpm2_createprimary's default): ECC NIST P-256 restricted to
 * decrypting its children, with AES-128-CFB to protect them; empty auth, no policy. */
static const TPM2B_PUBLIC storage_template = {
    .publicArea = {
        .type = TPM2_ALG_ECC,
        .nameAlg = TPM2_ALG_SHA256,
        .objectAttributes = TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_FIXEDTPM |
                            TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN |
                            TPMA_OBJECT_USERWITHAUTH,
        .parameters.eccDetail = {
            .symmetric = { .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB },
            .scheme.scheme = TPM2_ALG_NULL,
            .curveID = TPM2_ECC_NIST_P256,
            .kdf.scheme = TPM2_ALG_NULL,
        },
    },
};

bool tg_tpm_primary(struct tg_tpm *t)
{
    const TPM2B_SENSITIVE_CREATE empty_sensitive = { 0 };
    const TPM2B_DATA no_outside_info = { 0 };
    const TPML_PCR_SELECTION no_creation_pcrs = { 0 };
    TSS2_RC rc =
        TG_TPM_RUN(t, CreatePrimary,
                   (t->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                    &empty_sensitive, &storage_template, &no_outside_info, &no_creation_pcrs),
                   (t->esys, &t->primary, NULL, NULL, NULL, NULL));
    if (rc != TSS2_RC_SUCCESS) {
        t->primary = ESYS_TR_NONE;
        return tg_tpm_fail_command(t, "the TPM refused to make its storage key", rc,
                                   TG_TPM_CREATE_PRIMARY);
    }
    return true;
}

bool tg_tpm_session(struct tg_tpm *t, TPM2_SE type, TPMA_SESSION attrs)
{
    /* Salted with the primary: the session key comes from a secret only that TPM can decrypt, so
     * the parameters it encrypts cannot be read by someone who only listens on the bus. */
    bool trial = type == TPM2_SE_TRIAL;
    const TPMT_SYM_DEF aes = { .algorithm = TPM2_ALG_AES,
                               .keyBits.aes = 128,
                               .mode.aes = TPM2_ALG_CFB };
    const TPMT_SYM_DEF none = { .algorithm = TPM2_ALG_NULL };
    TSS2_RC rc =
        TG_TPM_RUN(t, StartAuthSession,
                   (t->esys, trial ? ESYS_TR_NONE : t->primary, ESYS_TR_NONE, ESYS_TR_NONE,
                    ESYS_TR_NONE, ESYS_TR_NONE, NULL, type, trial ? &none : &aes, TPM2_ALG_SHA256),
                   (t->esys, &t->session));
    if (rc != TSS2_RC_SUCCESS) {
        t->session = ESYS_TR_NONE;
        return tg_tpm_fail(t, "the TPM refused a session", rc);
    }
    /* Kept open after each command, so close() flushes it whatever happened. */
    rc = tgEsys_TRSess_SetAttributes(t->esys, t->session, attrs | TPMA_SESSION_CONTINUESESSION,
                                     0xff);
    if (rc != TSS2_RC_SUCCESS)
        return tg_tpm_fail(t, "the TPM session cannot be set up", rc);
    return true;
}

TPML_PCR_SELECTION tg_tpm_pcr_selection(uint32_t mask)
{
    TPML_PCR_SELECTION selection = { .count = 1 };
    selection.pcrSelections[0].hash = TPM2_ALG_SHA256;
    selection.pcrSelections[0].sizeofSelect = 3;
    for (int i = 0; i < 3; i++)
        selection.pcrSelections[0].pcrSelect[i] = (uint8_t)(mask >> (8 * i));
    return selection;
}

bool tg_tpm_policy_pcr(struct tg_tpm *t, uint32_t mask)
{
    /* An empty digest: the TPM uses the PCRs' values of the moment. */
    const TPM2B_DIGEST current = { 0 };
    const TPML_PCR_SELECTION selection = tg_tpm_pcr_selection(mask);
    TSS2_RC rc = TG_TPM_RUN(
        t, PolicyPCR,
        (t->esys, t->session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current, &selection),
        (t->esys));
    if (rc != TSS2_RC_SUCCESS)
        return tg_tpm_fail(t, "the TPM refused the PCR policy", rc);
    return true;
}
