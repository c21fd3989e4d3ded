/* tg_tpm_refusal (tg_tpm.h): the TPM's response codes as TPM 2.0 Part 2 (§6.6) lays them out.
 *
 * tpm2-tss puts the layer that answered in bits 16–23: 0 is the TPM itself; ESAPI, the TCTI and a
 * resource manager answer in layers of their own, and none of theirs is a refusal. The TPM's code
 * is 12 bits:
 * - format one (bit 7 set): an error about a handle, session or parameter, which bits 6 and 8–11
 *   name; the error's number is bits 0–5;
 * - format zero (bit 7 clear): bit 8 set for TPM 2.0's codes (clear: TPM 1.2's), bit 10 for the
 *   vendor's, bit 11 for warnings (retry, out of memory, lockout: passing by nature); the error's
 *   number is bits 0–6.
 * Which handle, session or parameter a format-one error names does not change what it says. */
#include "tg_tpm.h"

#include <stdbool.h>
#include <tss2/tss2_tpm2_types.h>

#define FORMAT_ONE_NUMBER  0x03fu
#define FORMAT_ZERO_NUMBER 0x07fu
#define VENDOR             0x400u
#define WARNING            0x800u

/* The format-one error code (TPM2_RC_FMT1 + n), whatever it names. */
static bool format_one(uint32_t rc, TPM2_RC code)
{
    return (rc & TPM2_RC_FMT1) != 0 && (rc & FORMAT_ONE_NUMBER) == (code & FORMAT_ONE_NUMBER);
}

/* The format-zero TPM 2.0 error code (TPM2_RC_VER1 + n): no warning, no vendor's code. */
static bool format_zero(uint32_t rc, TPM2_RC code)
{
    return (rc & (TPM2_RC_FMT1 | TPM2_RC_VER1 | VENDOR | WARNING)) == TPM2_RC_VER1 &&
           (rc & FORMAT_ZERO_NUMBER) == (code & FORMAT_ZERO_NUMBER);
}

/* An authorization refused: a wrong HMAC or password, counted (AUTH_FAIL) or not (BAD_AUTH). */
static bool authorization(uint32_t rc)
{
    return format_one(rc, TPM2_RC_AUTH_FAIL) || format_one(rc, TPM2_RC_BAD_AUTH);
}

int tg_tpm_refusal(uint32_t rc, int command)
{
    if ((rc & ~0xfffu) != 0) /* another layer's, or not a TPM's code */
        return 0;
    switch (command) {
    case TG_TPM_CREATE_PRIMARY:
        /* Made with the empty authorization the owner hierarchy has until someone sets one. */
        return authorization(rc) ? TG_TPM_OWNER_REFUSED : 0;
    case TG_TPM_LOAD:
        /* The private part's integrity is checked under the parent, which the owner seed makes:
         * another seed (another TPM, or this one cleared) or altered bytes fail it. */
        return format_one(rc, TPM2_RC_INTEGRITY) || format_one(rc, TPM2_RC_BINDING) ||
                       format_zero(rc, TPM2_RC_SENSITIVE) || authorization(rc)
                   ? TG_TPM_KEY_REFUSED
                   : 0;
    case TG_TPM_UNSEAL:
        /* Bound to PCRs, the policy fails when they hold other values than at sealing. */
        return format_one(rc, TPM2_RC_POLICY_FAIL) || authorization(rc) ? TG_TPM_KEY_REFUSED : 0;
    default:
        return 0;
    }
}
