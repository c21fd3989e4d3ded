/* A TPM 2.0 seals a short secret (touchgate's data key) to this machine: tpm2-tss's ESAPI, loaded
 * with dlopen on first use (libtss2-esys, -tctildr, -mu), so a machine without a TPM or without
 * tpm2-tss never loads it. The secret is a keyed-hash object under a primary storage key the TPM
 * derives again from its owner seed at every call (nothing persistent is created in the TPM); the
 * blob holds the object's public and private parts, which only the TPM that made them can load.
 * Every call opens the TPM, does its work, flushes what it loaded and closes it again. Each blocks
 * its caller (tens to hundreds of milliseconds with a TPM) and answers within 10 seconds even when
 * the TPM stops answering. Calls may come from several threads; they reach the TPM one at a time. */
#ifndef TG_TPM_H
#define TG_TPM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest secret sealed (TPM 2.0 guarantees 128 bytes for a sealed object) and blob made. */
#define TG_TPM_SECRET_MAX 128
#define TG_TPM_BLOB_MAX   2048

/* tcti: tpm2-tss's TCTI configuration ("device:/dev/tpmrm0", "swtpm:host=127.0.0.1,port=2321"),
 *       or NULL/"" for tpm2-tss's own default search.
 * pcrs: a bit mask of SHA-256 PCRs 0–23 the secret is bound to (0: none); unsealing then needs
 *       the same PCR values as at sealing.
 * Each returns 0, or -1 (or a code below) with a one-line English sentence in error (never the
 * secret nor the blob), e.g. "no TPM answers at <tcti>: ...", "the TPM refused to unseal ...:
 * <tpm2-tss's reason>". */

/* True once no call is left behind in a conversation the TPM never answered (at most one is:
 * while it is, every call is answered at once that the last one has not ended), within
 * timeout_ms; false if one still is then. */
bool tg_tpm_settled(int timeout_ms);

/* What tg_tpm_probe returns when there is no TPM to ask: the device node the TCTI names does not
 * exist, tpm2-tss is not installed, or the TCTI finds nothing to connect to. */
#define TG_TPM_ABSENT 1

/* 0 when a TPM answers through tcti (a GetRandom of a few bytes); TG_TPM_ABSENT when there is
 * none; -1 when one is there and failed (no answer in time, an error), with the sentence. */
int tg_tpm_probe(const char *tcti, char *error, size_t error_cap);

/* What tg_tpm_seal and tg_tpm_unseal return, instead of -1, when the TPM answered with a refusal
 * that asking again does not change while nothing changes on the machine:
 * TG_TPM_KEY_REFUSED: it will not load or unseal this blob: another TPM made it (the disk comes
 *   from another machine, or this TPM was cleared since: its owner seed changed), it was altered,
 *   or the PCRs it is bound to hold other values now;
 * TG_TPM_OWNER_REFUSED: it will not make the storage key under its owner hierarchy, whose
 *   authorization is not empty (an owner password is set).
 * A TPM that does not answer, cannot be opened, or answers a warning (out of memory, retry,
 * lockout) is -1: asked again later, it may do. */
#define TG_TPM_KEY_REFUSED   2
#define TG_TPM_OWNER_REFUSED 3

/* The commands whose refusals tg_tpm_refusal reads. */
#define TG_TPM_CREATE_PRIMARY 1
#define TG_TPM_LOAD           2
#define TG_TPM_UNSEAL         3

/* How the answer rc (a TSS2_RC as ESAPI returns it) to command reads: TG_TPM_KEY_REFUSED,
 * TG_TPM_OWNER_REFUSED, or 0 for anything else (not the TPM's own answer, a warning, another
 * error). The shim's own reading, given here so that it can be checked code by code. */
int tg_tpm_refusal(uint32_t rc, int command);

/* Seals secret[0..len) (1 ≤ len ≤ TG_TPM_SECRET_MAX); blob gets ≤ TG_TPM_BLOB_MAX bytes. */
int tg_tpm_seal(const char *tcti, uint32_t pcrs, const uint8_t *secret, size_t len, uint8_t *blob,
                size_t blob_cap, size_t *blob_len, char *error, size_t error_cap);

/* Unseals a blob made by tg_tpm_seal on the same TPM (and, when bound, with the same PCRs). The
 * caller wipes secret after use. */
int tg_tpm_unseal(const char *tcti, const uint8_t *blob, size_t blob_len, uint8_t *secret,
                  size_t secret_cap, size_t *len, char *error, size_t error_cap);

#endif
