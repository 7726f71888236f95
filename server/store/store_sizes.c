/*
 * store_sizes.c: estimates of the bytes rows take in an answer, with which
 * both stores bound pages, event batches and job activations (store_int.h),
 * so that no answer passes the server's send limit.
 */
#include "store_int.h"

#include <string.h>

size_t
wf_store__row_bytes(const wf_row_desc *d, const void *row)
{
    /* Each field as protobuf sends it: a tag and a length before text, a
     * varint or a Timestamp message for a number (16 covers either). */
    size_t n = 16;
    for (size_t i = 0; i < d->n_fields; i++) {
        const wf_field *f = &d->fields[i];
        const char *at = (const char *)row + f->off;
        if (f->type == WF_F_STR) {
            const char *str = *(char *const *)at;
            n += 6 + (str != NULL ? strlen(str) : 0);
        } else if (f->type == WF_F_BYTES) {
            n += 6 + *(const size_t *)((const char *)row + f->len_off);
        } else {
            n += 16;
        }
    }
    return n;
}

size_t
wf_store__job_answer_bytes(const wf_job_row *job)
{
    size_t n = 1024;
    const char *parts[] = {job->variables_json, job->last_error, job->idempotency_key};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        n += parts[i] != NULL ? strlen(parts[i]) : 0;
    return n;
}

wf_code
wf_store__job_too_large(const wf_job_row *job, size_t max_bytes, wf_error *err)
{
    return wf_error_set(err, WF_E_VARIABLES_TOO_LARGE,
                        "job \"%s\" takes %zu bytes with its variables, more than an answer "
                        "holds (%zu)",
                        job->id, wf_store__job_answer_bytes(job), max_bytes);
}

size_t
wf_store__rows_within(const wf_row_desc *d, const void *rows, size_t n, size_t budget)
{
    if (budget == 0)
        return n;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += wf_store__row_bytes(d, (const char *)rows + i * d->size);
        if (total > budget)
            return i > 0 ? i : 1;
    }
    return n;
}
