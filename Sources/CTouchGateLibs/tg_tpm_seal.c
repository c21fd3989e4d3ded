/* Seal, unseal and probe as conversations with the TPM (tg_tpm_esys.h), run by tg_tpm.c.
 *
 * On the bus between this process and the TPM: the secret travels encrypted both ways (Create's
 * sensitive data and Unseal's answer go through a session salted with the storage primary, with
 * AES-128-CFB parameter encryption), so someone who only listens learns nothing. The primary's
 * public key is not checked against a known endorsement, so someone who can answer in the TPM's
 * place (an active interposer on the bus, or root faking the TCTI) is not kept out; the blob,
 * PCR mask and policy digest travel in clear, as they protect nothing on their own.
 * In this process, every copy of the secret made here is wiped; ESAPI's own command and response
 * buffers are freed by Esys_Finalize without wiping, which is out of reach. */
#include "tg_tpm.h"
#include "tg_tpm_esys.h"

#include <stdio.h>
#include <string.h>

/* The blob: a version byte, the PCR mask (3 bytes, little-endian), then the sealed object's
 * TPM2B_PUBLIC and TPM2B_PRIVATE as the TPM marshals them. */
#define BLOB_VERSION 1
#define BLOB_HEADER  4
#define PCR_MASK_ALL 0xffffffu

static const TPM2B_DATA no_outside_info = { 0 };
static const TPML_PCR_SELECTION no_creation_pcrs = { 0 };

static int refuse(char *error, size_t error_cap, const char *sentence)
{
    snprintf(error, error_cap, "%s", sentence);
    return -1;
}

/* The policy digest of PolicyPCR over the PCRs in mask at their current values. */
static bool pcr_policy(struct tg_tpm *t, uint32_t mask, TPM2B_DIGEST *policy)
{
    if (!tg_tpm_session(t, TPM2_SE_TRIAL, 0) || !tg_tpm_policy_pcr(t, mask))
        return false;
    TPM2B_DIGEST *digest = NULL;
    TSS2_RC rc = TG_TPM_RUN(t, PolicyGetDigest,
                            (t->esys, t->session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE),
                            (t->esys, &digest));
    if (rc != TSS2_RC_SUCCESS)
        return tg_tpm_fail(t, "the TPM cannot compute the PCR policy", rc);
    *policy = *digest;
    tgEsys_Free(digest);
    tg_tpm_flush(t, &t->session);
    return true;
}

static bool create_sealed(struct tg_tpm *t, uint32_t mask, const uint8_t *secret, size_t len,
                          TPM2B_PUBLIC **public, TPM2B_PRIVATE **private)
{
    /* No dictionary-attack counting: the auth value is empty, there is nothing to guess. */
    TPM2B_PUBLIC template = { .publicArea = {
                                  .type = TPM2_ALG_KEYEDHASH,
                                  .nameAlg = TPM2_ALG_SHA256,
                                  .objectAttributes = TPMA_OBJECT_FIXEDTPM |
                                                      TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_NODA,
                                  .parameters.keyedHashDetail.scheme.scheme = TPM2_ALG_NULL,
                              } };
    if (mask == 0)
        template.publicArea.objectAttributes |= TPMA_OBJECT_USERWITHAUTH;
    else if (!pcr_policy(t, mask, &template.publicArea.authPolicy))
        return false;
    if (!tg_tpm_session(t, TPM2_SE_HMAC, TPMA_SESSION_DECRYPT))
        return false;

    TPM2B_SENSITIVE_CREATE sensitive = { 0 };
    sensitive.sensitive.data.size = (UINT16)len;
    memcpy(sensitive.sensitive.data.buffer, secret, len);
    TSS2_RC rc = TG_TPM_RUN(t, Create,
                            (t->esys, t->primary, t->session, ESYS_TR_NONE, ESYS_TR_NONE,
                             &sensitive, &template, &no_outside_info, &no_creation_pcrs),
                            (t->esys, private, public, NULL, NULL, NULL));
    explicit_bzero(&sensitive, sizeof(sensitive));
    if (rc != TSS2_RC_SUCCESS)
        return tg_tpm_fail(t, "the TPM refused to seal", rc);
    return true;
}

static bool write_blob(uint32_t mask, const TPM2B_PUBLIC *public, const TPM2B_PRIVATE *private,
                       uint8_t *blob, size_t blob_cap, size_t *blob_len)
{
    if (blob_cap < BLOB_HEADER)
        return false;
    blob[0] = BLOB_VERSION;
    for (int i = 0; i < 3; i++)
        blob[1 + i] = (uint8_t)(mask >> (8 * i));
    size_t at = BLOB_HEADER;
    if (tgTss2_MU_TPM2B_PUBLIC_Marshal(public, blob, blob_cap, &at) != TSS2_RC_SUCCESS ||
        tgTss2_MU_TPM2B_PRIVATE_Marshal(private, blob, blob_cap, &at) != TSS2_RC_SUCCESS)
        return false;
    *blob_len = at;
    return true;
}

int tg_tpm_run_seal(const char *tcti, uint32_t pcrs, const uint8_t *secret, size_t len,
                    uint8_t *blob, size_t blob_cap, size_t *blob_len, char *error, size_t error_cap)
{
    if (len < 1 || len > TG_TPM_SECRET_MAX)
        return refuse(error, error_cap, "a sealed secret holds 1 to 128 bytes");
    if ((pcrs & ~PCR_MASK_ALL) != 0)
        return refuse(error, error_cap, "a secret can be bound to PCRs 0 to 23 only");
    struct tg_tpm t;
    TPM2B_PUBLIC *public = NULL;
    TPM2B_PRIVATE *private = NULL;
    bool sealed = tg_tpm_open(&t, tcti, error, error_cap) && tg_tpm_primary(&t) &&
                  create_sealed(&t, pcrs, secret, len, &public, &private);
    tg_tpm_close(&t);
    bool written = sealed && write_blob(pcrs, public, private, blob, blob_cap, blob_len);
    if (sealed && !written)
        snprintf(error, error_cap, "the sealed blob does not fit in %zu bytes", blob_cap);
    if (public != NULL)
        tgEsys_Free(public);
    if (private != NULL)
        tgEsys_Free(private);
    return written ? 0 : t.refused != 0 ? t.refused : -1;
}

static bool read_blob(const uint8_t *blob, size_t blob_len, uint32_t *mask, TPM2B_PUBLIC *public,
                      TPM2B_PRIVATE *private)
{
    if (blob_len < BLOB_HEADER || blob[0] != BLOB_VERSION)
        return false;
    *mask = (uint32_t)blob[1] | (uint32_t)blob[2] << 8 | (uint32_t)blob[3] << 16;
    size_t at = BLOB_HEADER;
    return tgTss2_MU_TPM2B_PUBLIC_Unmarshal(blob, blob_len, &at, public) == TSS2_RC_SUCCESS &&
           tgTss2_MU_TPM2B_PRIVATE_Unmarshal(blob, blob_len, &at, private) == TSS2_RC_SUCCESS &&
           at == blob_len;
}

static bool unseal_loaded(struct tg_tpm *t, uint32_t mask, uint8_t *secret, size_t secret_cap,
                          size_t *len)
{
    /* The answer comes back encrypted under the salted session (the policy session when bound). */
    if (mask != 0) {
        if (!tg_tpm_session(t, TPM2_SE_POLICY, TPMA_SESSION_ENCRYPT) || !tg_tpm_policy_pcr(t, mask))
            return false;
    } else if (!tg_tpm_session(t, TPM2_SE_HMAC, TPMA_SESSION_ENCRYPT)) {
        return false;
    }
    TPM2B_SENSITIVE_DATA *data = NULL;
    TSS2_RC rc = TG_TPM_RUN(t, Unseal, (t->esys, t->object, t->session, ESYS_TR_NONE, ESYS_TR_NONE),
                            (t->esys, &data));
    if (rc != TSS2_RC_SUCCESS)
        return tg_tpm_fail_command(t,
                                   mask != 0 ? "the TPM refused to unseal (the bound PCRs changed "
                                               "since sealing)"
                                             : "the TPM refused to unseal",
                                   rc, TG_TPM_UNSEAL);
    bool fits = data->size <= secret_cap;
    if (fits) {
        memcpy(secret, data->buffer, data->size);
        *len = data->size;
    } else {
        snprintf(t->error, t->error_cap, "the sealed secret is larger than %zu bytes", secret_cap);
    }
    explicit_bzero(data, sizeof(*data));
    tgEsys_Free(data);
    return fits;
}

int tg_tpm_run_unseal(const char *tcti, const uint8_t *blob, size_t blob_len, uint8_t *secret,
                      size_t secret_cap, size_t *len, char *error, size_t error_cap)
{
    uint32_t mask = 0;
    TPM2B_PUBLIC public = { 0 };
    TPM2B_PRIVATE private = { 0 };
    if (!tg_tpm_load(error, error_cap))
        return -1;
    if (!read_blob(blob, blob_len, &mask, &public, &private))
        return refuse(error, error_cap, "the sealed blob is damaged or not touchgate's");
    struct tg_tpm t;
    bool unsealed = tg_tpm_open(&t, tcti, error, error_cap) && tg_tpm_primary(&t);
    if (unsealed) {
        TSS2_RC rc = TG_TPM_RUN(
            &t, Load,
            (t.esys, t.primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &private, &public),
            (t.esys, &t.object));
        if (rc != TSS2_RC_SUCCESS) {
            t.object = ESYS_TR_NONE;
            unsealed = tg_tpm_fail_command(&t,
                                           "the TPM refused to unseal the blob (another TPM made "
                                           "it, or it was altered)",
                                           rc, TG_TPM_LOAD);
        }
    }
    unsealed = unsealed && unseal_loaded(&t, mask, secret, secret_cap, len);
    tg_tpm_close(&t);
    return unsealed ? 0 : t.refused != 0 ? t.refused : -1;
}

int tg_tpm_run_probe(const char *tcti, char *error, size_t error_cap)
{
    struct tg_tpm t;
    bool answered = tg_tpm_open(&t, tcti, error, error_cap);
    if (answered) {
        TPM2B_DIGEST *bytes = NULL;
        TSS2_RC rc = TG_TPM_RUN(
            &t, GetRandom, (t.esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, 8), (t.esys, &bytes));
        char what[160];
        snprintf(what, sizeof(what), "no TPM answers at %s", t.where);
        answered = rc == TSS2_RC_SUCCESS || tg_tpm_fail(&t, what, rc);
        if (bytes != NULL)
            tgEsys_Free(bytes);
    }
    bool absent = t.absent;
    tg_tpm_close(&t);
    return answered ? 0 : absent ? TG_TPM_ABSENT : -1;
}
