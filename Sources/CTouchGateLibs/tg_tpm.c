/* The sealing shim's calls (see tg_tpm.h), each on a thread of its own with a deadline.
 *
 * ESAPI's timeout reaches only the TCTIs that honour it: the kernel's device does, but the swtpm
 * and mssim TCTIs read their socket without limit, in their handshake too. So the conversation
 * (tg_tpm_seal.c) runs on a worker thread and the caller waits for it until TG_TPM_DEADLINE_MS.
 * A worker still stuck then is left behind, owning a copy of its inputs, which it wipes and frees
 * when the TPM finally answers or the connection drops; the caller gets its sentence in time. */
#include "tg_tpm.h"
#include "tg_tpm_esys.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum call { PROBE, SEAL, UNSEAL };

/* The longest TCTI configuration taken (a path or host and port, with options). */
#define TCTI_MAX 512

/* Owned by the caller and the worker together; the last one to let go wipes and frees it. */
struct job {
    pthread_mutex_t lock;
    pthread_cond_t finished;
    bool done, abandoned;
    enum call call;
    char tcti[TCTI_MAX];
    uint32_t pcrs;
    uint8_t in[TG_TPM_BLOB_MAX]; /* the secret to seal, or the blob to unseal */
    size_t in_len;
    uint8_t out[TG_TPM_BLOB_MAX]; /* the blob made, or the secret unsealed */
    size_t out_cap, out_len;
    int status;
    char error[256];
};

static void release(struct job *job)
{
    pthread_mutex_destroy(&job->lock);
    pthread_cond_destroy(&job->finished);
    explicit_bzero(job, sizeof(*job));
    free(job);
}

/* One conversation at a time in this process: without a resource manager (swtpm, /dev/tpm0) the
 * TPM holds three or so objects, and two conversations at once each load a primary and an object.
 * A worker stuck on a silent TPM keeps it; the ones behind it wait, their callers answered in time. */
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

/* Workers left behind, still stuck in a conversation. While one is, a new call would only queue
 * behind it on one_at_a_time, a thread each (a silent swtpm or mssim TCTI never lets go): it is
 * answered at once instead, so at most one thread waits on a TPM that does not answer. */
static pthread_mutex_t stuck_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t unstuck = PTHREAD_COND_INITIALIZER; /* CLOCK_REALTIME, its default */
static int stuck;

bool tg_tpm_settled(int timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&stuck_lock);
    while (stuck > 0 && pthread_cond_timedwait(&unstuck, &stuck_lock, &deadline) == 0)
        ;
    bool settled = stuck == 0;
    pthread_mutex_unlock(&stuck_lock);
    return settled;
}

static void *work(void *arg)
{
    struct job *job = arg;
    char *e = job->error;
    size_t cap = sizeof(job->error);
    pthread_mutex_lock(&one_at_a_time);
    if (job->call == PROBE)
        job->status = tg_tpm_run_probe(job->tcti, e, cap);
    else if (job->call == SEAL)
        job->status = tg_tpm_run_seal(job->tcti, job->pcrs, job->in, job->in_len, job->out,
                                      job->out_cap, &job->out_len, e, cap);
    else
        job->status = tg_tpm_run_unseal(job->tcti, job->in, job->in_len, job->out, job->out_cap,
                                        &job->out_len, e, cap);
    pthread_mutex_unlock(&one_at_a_time);
    pthread_mutex_lock(&job->lock);
    job->done = true;
    bool abandoned = job->abandoned;
    pthread_cond_signal(&job->finished);
    pthread_mutex_unlock(&job->lock);
    if (abandoned) {
        pthread_mutex_lock(&stuck_lock);
        stuck--;
        pthread_cond_broadcast(&unstuck);
        pthread_mutex_unlock(&stuck_lock);
        release(job);
    }
    return NULL;
}

static struct job *new_job(enum call call, const char *tcti)
{
    struct job *job = tcti == NULL || strlen(tcti) < TCTI_MAX ? calloc(1, sizeof(*job)) : NULL;
    if (job == NULL)
        return NULL;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&job->finished, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&job->lock, NULL);
    job->call = call;
    snprintf(job->tcti, sizeof(job->tcti), "%s", tcti != NULL ? tcti : "");
    return job;
}

/* Runs job on a worker; true when it finished in time (the caller then reads and releases it),
 * false with a sentence in error (the job is then the worker's, or already released). */
static bool run(struct job *job, char *error, size_t error_cap)
{
    pthread_mutex_lock(&stuck_lock);
    bool waiting = stuck > 0;
    pthread_mutex_unlock(&stuck_lock);
    if (waiting) {
        snprintf(error, error_cap, "no TPM answers at %s: its last call has not ended",
                 job->tcti[0] != '\0' ? job->tcti : "tpm2-tss's default TCTI");
        release(job);
        return false;
    }
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = pthread_create(&thread, &attr, work, job);
    pthread_attr_destroy(&attr);
    if (started != 0) {
        release(job);
        snprintf(error, error_cap, "the TPM call cannot start a thread (%s)", strerror(started));
        return false;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += TG_TPM_DEADLINE_MS / 1000;
    pthread_mutex_lock(&job->lock);
    while (!job->done && pthread_cond_timedwait(&job->finished, &job->lock, &deadline) == 0)
        ;
    bool done = job->done;
    /* Written before letting go: once abandoned, the worker may free the job at any moment. */
    if (!done)
        snprintf(error, error_cap, "no TPM answers at %s: it did not answer within %d seconds",
                 job->tcti[0] != '\0' ? job->tcti : "tpm2-tss's default TCTI",
                 TG_TPM_DEADLINE_MS / 1000);
    job->abandoned = !done;
    if (!done) {
        pthread_mutex_lock(&stuck_lock);
        stuck++;
        pthread_mutex_unlock(&stuck_lock);
    }
    pthread_mutex_unlock(&job->lock);
    return done;
}

/* Hands the job's status and sentence to the caller, then releases it. */
static int finish(struct job *job, char *error, size_t error_cap)
{
    int status = job->status;
    if (status != 0)
        snprintf(error, error_cap, "%s", job->error);
    release(job);
    return status;
}

static int no_job(const char *tcti, char *error, size_t error_cap)
{
    if (tcti != NULL && strlen(tcti) >= TCTI_MAX)
        snprintf(error, error_cap, "the TCTI configuration is too long");
    else
        snprintf(error, error_cap, "the TPM call is out of memory");
    return -1;
}

int tg_tpm_probe(const char *tcti, char *error, size_t error_cap)
{
    if (tg_tpm_device_missing(tcti, error, error_cap))
        return TG_TPM_ABSENT; /* at once: no thread, no deadline to wait out */
    struct job *job = new_job(PROBE, tcti);
    if (job == NULL)
        return no_job(tcti, error, error_cap);
    return run(job, error, error_cap) ? finish(job, error, error_cap) : -1;
}

int tg_tpm_seal(const char *tcti, uint32_t pcrs, const uint8_t *secret, size_t len, uint8_t *blob,
                size_t blob_cap, size_t *blob_len, char *error, size_t error_cap)
{
    if (len < 1 || len > TG_TPM_SECRET_MAX) {
        snprintf(error, error_cap, "a sealed secret holds 1 to %d bytes", TG_TPM_SECRET_MAX);
        return -1;
    }
    struct job *job = new_job(SEAL, tcti);
    if (job == NULL)
        return no_job(tcti, error, error_cap);
    job->pcrs = pcrs;
    memcpy(job->in, secret, len);
    job->in_len = len;
    job->out_cap = blob_cap < sizeof(job->out) ? blob_cap : sizeof(job->out);
    if (!run(job, error, error_cap))
        return -1;
    if (job->status == 0) {
        memcpy(blob, job->out, job->out_len);
        *blob_len = job->out_len;
    }
    return finish(job, error, error_cap);
}

int tg_tpm_unseal(const char *tcti, const uint8_t *blob, size_t blob_len, uint8_t *secret,
                  size_t secret_cap, size_t *len, char *error, size_t error_cap)
{
    if (blob_len == 0 || blob_len > TG_TPM_BLOB_MAX) {
        snprintf(error, error_cap, "the sealed blob is damaged or not touchgate's");
        return -1;
    }
    struct job *job = new_job(UNSEAL, tcti);
    if (job == NULL)
        return no_job(tcti, error, error_cap);
    memcpy(job->in, blob, blob_len);
    job->in_len = blob_len;
    job->out_cap = secret_cap < sizeof(job->out) ? secret_cap : sizeof(job->out);
    if (!run(job, error, error_cap))
        return -1;
    if (job->status == 0) {
        memcpy(secret, job->out, job->out_len);
        *len = job->out_len;
    }
    return finish(job, error, error_cap);
}
