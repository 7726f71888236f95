/*
 * uow: begin → idempotency → body → record → commit, with retries on
 * WF_E_CONFLICT.
 *
 * Why retries live here: both stores report a lost race (instance version,
 * unique request record, concurrently created definition) as WF_E_CONFLICT
 * and roll the transaction back, so rerunning the whole unit is always
 * safe and is what turns "two creators" into "one creator, one reader".
 * The request-id bookkeeping of every call is here too (a call over
 * several roots, an answer again on a spent key), so that rule code only
 * passes a wf_uow_idem along.
 * Must not: know any workflow rule or any wire format.
 */
#include "uow.h"

#include <string.h>
#include <time.h>

#include "expr.h"
#include "wf_time.h"

#define UOW_ATTEMPTS 6

bool
wf_uow_idem_active(const wf_uow_idem *idem)
{
    return idem != NULL && idem->request_id != NULL && idem->request_id[0] != '\0' &&
           idem->encode != NULL;
}

/* Records nothing but that the effect was applied. */
static wf_code
encode_nothing(const void *result, void *arg, wf_arena *arena, unsigned char **bytes, size_t *len,
               wf_error *err)
{
    (void)result;
    (void)arg;
    *bytes = wf_arena_alloc(arena, 1);
    *len = 0;
    return *bytes != NULL ? WF_OK : wf_error_nomem(err);
}

wf_uow_idem
wf_uow_idem_internal(const char *method, const char *request_id, const char *hash)
{
    return (wf_uow_idem){
        .method = method, .request_id = request_id, .request_hash = hash, .encode = encode_nothing};
}

bool
wf_uow_idem_replayed(const wf_uow_idem *idem)
{
    return idem != NULL && idem->replayed;
}

void
wf_uow_idem_skip_record(wf_uow_idem *idem)
{
    if (idem != NULL)
        idem->no_record = true;
}

void
wf_uow_span_begin(wf_uow_idem *idem)
{
    if (idem == NULL)
        return;
    idem->spans = true;
    idem->looked_up = false;
    idem->recorded = false;
}

/* Sleeps a little, growing with the attempt, so racing retries spread. */
static void
backoff(int attempt)
{
    long us = (200L << attempt) + (long)(wf_now_us() % 500);
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

/* The outcome of a lookup that found row. */
static wf_code
found_record(wf_uow_idem *idem, const wf_idempotency_row *row, wf_error *err)
{
    if (row->request_hash == NULL || strcmp(row->request_hash, idem->request_hash) != 0)
        return wf_error_set(err, WF_E_REQUEST_ID_REUSED,
                            "request id \"%s\" was already used for a different %s request",
                            idem->request_id, idem->method);
    wf_error_clear(err);
    idem->replayed = true;
    idem->response = row->response;
    idem->response_len = row->response_len;
    return WF_OK;
}

/* Looks the request up in tx. *done is true when the call ends here
 * (replay or REQUEST_ID_REUSED). */
static wf_code
idem_lookup(wf_tx *tx, wf_uow_idem *idem, bool *done, wf_error *err)
{
    wf_idempotency_row row;
    bool found = false;
    *done = false;
    wf_code rc = wf_tx_idempotency_get(tx, idem->method, idem->request_id, &row, &found, err);
    if (rc != WF_OK || !found)
        return rc;
    *done = true;
    return found_record(idem, &row, err);
}

/* The record of idem with the encoded result. */
static wf_code
idem_row(const wf_store_ctx *ctx, const wf_uow_idem *idem, const void *result,
         wf_idempotency_row *row, wf_error *err)
{
    *row = (wf_idempotency_row){
        .method = (char *)idem->method,
        .request_id = (char *)idem->request_id,
        .request_hash = (char *)idem->request_hash,
        .created_at = wf_now_us(),
    };
    return idem->encode(result, idem->encode_arg, ctx->arena, &row->response, &row->response_len,
                        err);
}

/* Records the request (or amends the record of an earlier unit of the
 * same call) and commits, one round trip on Postgres; tx is gone
 * afterwards either way. */
static wf_code
idem_record(wf_tx *tx, const wf_store_ctx *ctx, wf_uow_idem *idem, const void *result,
            wf_error *err)
{
    wf_idempotency_row row;
    wf_code rc = idem_row(ctx, idem, result, &row, err);
    if (rc != WF_OK) {
        wf_tx_rollback(tx);
        return rc;
    }
    rc =
        idem->recorded ? wf_tx_commit_amended(tx, &row, err) : wf_tx_commit_recorded(tx, &row, err);
    if (rc == WF_OK)
        idem->recorded = true;
    return rc;
}

/* After the body failed: a concurrent call with the same request id may
 * have committed while this one waited for the root lock (it looked the
 * id up before that call committed). Such a retry must get the first
 * response, not the error its late view of the state produces, so the id
 * is looked up once more in a fresh transaction. idem->replayed tells whether
 * the stored response (or REQUEST_ID_REUSED) replaces rc. */
static wf_code
recheck(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_code rc, wf_error *err)
{
    wf_tx *tx = NULL;
    wf_error e2;
    bool done = false;
    if (wf_store_begin(st, ctx, &tx, &e2) != WF_OK)
        return rc;
    wf_code rc2 = idem_lookup(tx, idem, &done, &e2);
    wf_tx_rollback(tx);
    if (!done)
        return rc;
    if (rc2 != WF_OK)
        *err = e2;
    else
        wf_error_clear(err);
    return rc2;
}

static void
pause_tx(void *tx)
{
    wf_tx_pause(tx);
}

static void
resume_tx(void *tx)
{
    wf_tx_resume(tx);
}

/* One attempt. The lookup rides with the body's first statements
 * (wf_tx_idempotency_prefetch); a record found there stops the body. A
 * call that spans several units looks up in its first one only, and
 * records with the first that has an effect (wf_uow_span_begin). */
static wf_code
attempt(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_uow_body_fn body, void *arg,
        const void *result, wf_error *err)
{
    wf_tx *tx = NULL;
    bool dedupe = wf_uow_idem_active(idem);
    /* Until the call has a record of its own, a concurrent call with the
     * same id may record first: its answer is then due. */
    bool first = dedupe && !idem->recorded;
    bool lookup = first && !idem->looked_up;
    wf_idempotency_row row;
    bool found = false;
    wf_code rc = wf_store_begin(st, ctx, &tx, err);
    if (rc != WF_OK)
        return rc;
    /* Every failure of a run is handled alike (rolled back, retried on
     * CONFLICT), so writes may ride with the next flight, the commit's. */
    wf_tx_defer_writes(tx);
    if (idem != NULL)
        idem->no_record = false;
    if (lookup) {
        rc = wf_tx_idempotency_prefetch(tx, idem->method, idem->request_id, &row, &found, err);
        if (rc != WF_OK || found) {
            wf_tx_rollback(tx);
            return rc != WF_OK ? rc : found_record(idem, &row, err);
        }
    }
    /* While the body waits for an expression, the store may serve others
     * (wf_tx_pause). */
    wf_expr_wait prev = wf_expr_set_wait((wf_expr_wait){pause_tx, resume_tx, tx});
    rc = body(tx, arg, err);
    wf_expr_set_wait(prev);
    if (found) {
        wf_tx_rollback(tx);
        return found_record(idem, &row, err);
    }
    if (rc != WF_OK) {
        wf_tx_rollback(tx);
        return first && rc != WF_E_CONFLICT ? recheck(st, ctx, idem, rc, err) : rc;
    }
    if (dedupe && !idem->no_record) {
        /* A record already there fails the flight that carries ours (and,
         * when the body sent nothing before, the lookup with it): read it
         * again on its own. */
        rc = idem_record(tx, ctx, idem, result, err);
        rc = rc == WF_E_CONFLICT && first ? recheck(st, ctx, idem, rc, err) : rc;
    } else {
        rc = wf_tx_commit(tx, err);
    }
    /* The lookup found nothing and this unit ended: later units of a
     * spanning call rely on the record's key (a concurrent record fails
     * their commit, and recheck reads it). */
    if (rc == WF_OK && lookup && idem->spans)
        idem->looked_up = true;
    return rc;
}

static wf_code
run(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_uow_body_fn body, void *arg,
    const void *result, int attempts, wf_error *err)
{
    wf_code rc = WF_OK;
    if (idem != NULL) {
        idem->replayed = false;
        idem->response = NULL;
        idem->response_len = 0;
        if (!idem->spans) {
            idem->looked_up = false;
            idem->recorded = false;
        }
    }
    for (int i = 0; i < attempts; i++) {
        if (i > 0)
            backoff(i);
        rc = attempt(st, ctx, idem, body, arg, result, err);
        if (rc != WF_E_CONFLICT)
            return rc;
    }
    return rc;
}

wf_code
wf_uow_run(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_uow_body_fn body, void *arg,
           const void *result, wf_error *err)
{
    return run(st, ctx, idem, body, arg, result, UOW_ATTEMPTS, err);
}

wf_code
wf_uow_run_once(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_uow_body_fn body,
                void *arg, const void *result, wf_error *err)
{
    return run(st, ctx, idem, body, arg, result, 1, err);
}

wf_code
wf_uow_answer_again(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_code rc,
                    wf_error *err)
{
    if (rc == WF_OK || !wf_uow_idem_active(idem))
        return rc;
    wf_error e2;
    wf_code rc2 = wf_uow_idem_lookup(st, ctx, idem, &e2);
    if (rc2 == WF_OK && !idem->replayed)
        return rc;
    if (rc2 != WF_OK)
        *err = e2;
    else
        wf_error_clear(err);
    return rc2;
}

wf_code
wf_uow_read_aggregate(wf_store *st, const wf_store_ctx *ctx, const char *instance_id,
                      wf_aggregate *out, wf_error *err)
{
    wf_tx *tx = NULL;
    wf_code rc = wf_store_begin(st, ctx, &tx, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_tx_lock_root(tx, instance_id, out, err);
    /* Nothing was written: rolling back only releases the lock. */
    wf_tx_rollback(tx);
    return rc;
}

/* ---- idempotency of a call that is not a unit of work ------------------------------- */

wf_code
wf_uow_idem_lookup(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_error *err)
{
    if (!wf_uow_idem_active(idem))
        return WF_OK;
    idem->replayed = false;
    wf_tx *tx = NULL;
    bool done = false;
    wf_code rc = wf_store_begin(st, ctx, &tx, err);
    if (rc != WF_OK)
        return rc;
    rc = idem_lookup(tx, idem, &done, err);
    wf_tx_rollback(tx);
    return rc;
}

wf_code
wf_uow_idem_record(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, const void *result,
                   wf_error *err)
{
    if (!wf_uow_idem_active(idem) || idem->replayed)
        return WF_OK;
    wf_idempotency_row row;
    wf_tx *tx = NULL;
    wf_code rc = idem_row(ctx, idem, result, &row, err);
    if (rc == WF_OK)
        rc = wf_store_begin(st, ctx, &tx, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_tx_idempotency_put(tx, &row, err);
    if (rc != WF_OK) {
        wf_tx_rollback(tx);
        /* A concurrent call with the same id recorded first: nothing to
         * undo, its answer and this one have the same effect. */
        if (rc == WF_E_CONFLICT) {
            wf_error_clear(err);
            return WF_OK;
        }
        return rc;
    }
    return wf_tx_commit(tx, err);
}
