/*
 * uow: the unit-of-work runner every mutating engine call goes through
 * (docs/architecture.md; AIP-155 idempotency).
 *
 * One run is one transaction on one root:
 *
 *     begin → idempotency lookup → body (lock_root, rules, apply)
 *           → idempotency record → commit
 *
 * and the whole run is retried a few times when the store reports
 * WF_E_CONFLICT (an optimistic instance version lost a race, a concurrent
 * creator of the same definition or request record won). The body must
 * therefore compute everything afresh on each attempt.
 *
 * Idempotency is scoped by (tenant, method, request_id). A repeated id
 * with the same request hash returns the stored response bytes without
 * running the body; with another hash it fails with REQUEST_ID_REUSED.
 * Only successful runs are recorded, always in the transaction of their
 * effect (a crash can lose both, never only the record). The engine never sees the response
 * format: the caller supplies an encoder that turns the body's result into
 * bytes inside the transaction, and decodes the bytes of a replay itself.
 */
#ifndef WF_UOW_H
#define WF_UOW_H

#include <stdbool.h>
#include <stddef.h>

#include "store.h"

/* Encodes result (what the body produced) into response bytes in arena.
 * arg is wf_uow_idem.encode_arg. */
typedef wf_code (*wf_uow_encode_fn)(const void *result, void *arg, wf_arena *arena,
                                    unsigned char **bytes, size_t *len, wf_error *err);

/* Idempotency of one call. In: method .. encode_arg. Out: replayed and
 * the stored response. */
typedef struct wf_uow_idem {
    const char *method;       /* e.g. "CompleteTask" */
    const char *request_id;   /* NULL or "" = no deduplication */
    const char *request_hash; /* fingerprint of the request and actor */
    wf_uow_encode_fn encode;
    void *encode_arg;

    /* Set by a body that changed nothing worth recording (an empty pass
     * of a long poll, a unit of work of a multi-root call that fired
     * nothing): the run commits without a record. Reset at each attempt. */
    bool no_record;
    /* spans (in): the call runs several units of work (one per root) on
     * this idem. recorded (out; kept from run to run when spans): a unit
     * of work of this call committed its record, so a later one skips the
     * lookup and amends the record's response (wf_tx_commit_amended):
     * each effect commits with its record. */
    bool spans;
    bool recorded;

    bool replayed;                 /* true: the body did not run */
    const unsigned char *response; /* the first call's response (ctx arena) */
    size_t response_len;
} wf_uow_idem;

/* The body of a unit of work: lock the root, apply the rules, write with
 * wf_tx_apply. It must not commit or roll back. */
typedef wf_code (*wf_uow_body_fn)(wf_tx *tx, void *arg, wf_error *err);

/* Runs body in a transaction as described above. idem may be NULL (no
 * deduplication); result is handed to idem->encode. On WF_OK either the
 * body's effects committed, or idem->replayed is true. */
wf_code wf_uow_run(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_uow_body_fn body,
                   void *arg, const void *result, wf_error *err);

/* For a caller that runs its own transaction tx (begun on st with ctx):
 * records the request (or amends the record, see wf_uow_idem.recorded)
 * and commits, tx is gone afterwards. When another call with the same
 * request id recorded first (WF_E_CONFLICT), the id is looked up again:
 * idem->replayed (or REQUEST_ID_REUSED) then tells the caller to answer
 * with the stored response. Without deduplication, a plain commit. */
wf_code wf_uow_commit(wf_store *st, const wf_store_ctx *ctx, wf_tx *tx, wf_uow_idem *idem,
                      const void *result, wf_error *err);

/* Loads the aggregate of instance_id for reading: a transaction that locks
 * the root, copies the rows into ctx->arena and rolls back. Used by reads
 * that need a whole tree (GetInstance, GetCompletion). */
wf_code wf_uow_read_aggregate(wf_store *st, const wf_store_ctx *ctx, const char *instance_id,
                              wf_aggregate *out, wf_error *err);

/* Idempotency of a call that is not one unit of work (SendSignal), for
 * an answer without an effect (a duplicate signal): an effect always
 * records in its own transaction (wf_uow_run, wf_uow_commit).
 * lookup (sets idem->replayed and the stored response, or fails with
 * REQUEST_ID_REUSED) and record (stores idem->encode(result)), each in a
 * transaction of its own. No-ops without a request id. */
wf_code wf_uow_idem_lookup(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_error *err);
wf_code wf_uow_idem_record(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem,
                           const void *result, wf_error *err);

/* True when request_id asks for deduplication (non-empty). */
bool wf_uow_idem_active(const wf_uow_idem *idem);

#endif /* WF_UOW_H */
