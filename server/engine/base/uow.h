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
 * effect (a crash can lose both, never only the record). The lookup rides
 * with the body's first statements and the record with the commit, so a
 * request id costs no round trip of its own. A call that spans several
 * roots runs one unit of work per root under one request id
 * (wf_uow_span_begin). This module owns the request-id bookkeeping: rule
 * code never sets or reads a wf_uow_idem field past encode_arg.
 *
 * The engine never sees the response format: the caller supplies an
 * encoder that turns the body's result into bytes inside the transaction,
 * and decodes the bytes of a replay itself.
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
 * the stored response. The fields after those are this module's own:
 * rule code sets them through wf_uow_idem_skip_record and
 * wf_uow_span_begin, and reads replayed through wf_uow_idem_replayed. */
typedef struct wf_uow_idem {
    const char *method;       /* e.g. "CompleteTask" */
    const char *request_id;   /* NULL or "" = no deduplication */
    const char *request_hash; /* fingerprint of the request and actor */
    wf_uow_encode_fn encode;
    void *encode_arg;

    bool replayed;                 /* true: the body did not run */
    const unsigned char *response; /* the first call's response (ctx arena) */
    size_t response_len;

    /* Private to uow.c. */
    bool no_record; /* this attempt commits without a record; reset at each one */
    bool spans;     /* wf_uow_span_begin: the runs on this idem are one call */
    bool looked_up; /* spans: a run looked the id up, found none, and ended */
    bool recorded;  /* spans: a run committed the record (later ones amend it) */
} wf_uow_idem;

/* The body of a unit of work: lock the root, apply the rules, write with
 * wf_tx_apply. It must not commit or roll back. */
typedef wf_code (*wf_uow_body_fn)(wf_tx *tx, void *arg, wf_error *err);

/* Runs body in a transaction as described above. idem may be NULL (no
 * deduplication); result is handed to idem->encode. On WF_OK either the
 * body's effects committed, or idem->replayed is true. */
wf_code wf_uow_run(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_uow_body_fn body,
                   void *arg, const void *result, wf_error *err);

/* As wf_uow_run, but one attempt: a CONFLICT is returned to the caller,
 * for a body whose conflicts have a better answer than running it again
 * (a duplicate signal id is DUPLICATE; a start that lost a race is seen
 * by the caller's next round). */
wf_code wf_uow_run_once(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem,
                        wf_uow_body_fn body, void *arg, const void *result, wf_error *err);

/* Loads the aggregate of instance_id for reading: a transaction that locks
 * the root, copies the rows into ctx->arena and rolls back. Used by reads
 * that need a whole tree (GetInstance, GetCompletion). */
wf_code wf_uow_read_aggregate(wf_store *st, const wf_store_ctx *ctx, const char *instance_id,
                              wf_aggregate *out, wf_error *err);

/* A call whose effect spans several units of work under one request id
 * (SendSignal to an aggregate: one unit per root it fires, or the one that
 * buffers it, or the one that logs it a duplicate). From now on the
 * wf_uow_run calls on idem are that call's: the first looks the id up in
 * its first flight (a record found there replays, and ends the call),
 * later ones do not look again; the first with an effect commits the
 * record with it, each later one amends the record's response
 * (wf_tx_commit_amended), so every committed effect has its record. A
 * record another call committed meanwhile fails the commit of this
 * call's first record, and is then read again (a replay). No-op for NULL
 * or without a request id. */
void wf_uow_span_begin(wf_uow_idem *idem);

/* For a body: this attempt changed nothing worth recording (an empty pass
 * of a long poll, a unit of a spanning call that fired nothing), so it
 * commits without a record. NULL-safe. */
void wf_uow_idem_skip_record(wf_uow_idem *idem);

/* True when the last run on idem answered with the stored response of a
 * first call (the body did not run, or its effect was rolled back).
 * False for NULL. */
bool wf_uow_idem_replayed(const wf_uow_idem *idem);

/* Answer again on a spent key: a call that failed with rc before its unit
 * of work ran, with an error a retry of a successful call would also see
 * (CompleteJob's job key spent by that call: JOB_LEASE_LOST), asks the
 * request id. When it is recorded the first response is due: WF_OK with
 * idem replayed, or REQUEST_ID_REUSED for another request; when the
 * lookup fails, its error. Otherwise rc (and err) as they are. One
 * transaction of its own, and none for WF_OK or without a request id. */
wf_code wf_uow_answer_again(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_code rc,
                            wf_error *err);

/* Idempotency of a call that is not a unit of work (CancelBatchOperation,
 * whose write is a store call of its own): lookup (sets idem->replayed
 * and the stored response, or fails with REQUEST_ID_REUSED) and record
 * (stores idem->encode(result); a record of a concurrent call with the
 * same id is left as it is), each in a transaction of its own. No-ops
 * without a request id. */
wf_code wf_uow_idem_lookup(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem, wf_error *err);
wf_code wf_uow_idem_record(wf_store *st, const wf_store_ctx *ctx, wf_uow_idem *idem,
                           const void *result, wf_error *err);

/* The idem of an effect the engine applies for itself, as the RPC method
 * would under request_id (a batch operation's action on one instance, a
 * schedule's cancel of the instance before): hash fingerprints the
 * source, and the record keeps no answer (a replay says the effect was
 * applied). The strings are borrowed. */
wf_uow_idem wf_uow_idem_internal(const char *method, const char *request_id, const char *hash);

/* True when idem asks for deduplication: a non-empty request id and an
 * encoder. */
bool wf_uow_idem_active(const wf_uow_idem *idem);

#endif /* WF_UOW_H */
