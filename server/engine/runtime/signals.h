/*
 * signals: SendSignal, ListSignals, the buffered signals GetInstance shows,
 * and SetVariables (docs/behaviour.md, "Signals sent to an aggregate").
 *
 * SendSignal, in order:
 *   1. dedupe: a signal_id already in the delivery log answers DUPLICATE
 *      and changes nothing but the log (a DUPLICATE row of its own and a
 *      SIGNAL_DUPLICATE event, in a unit of work of their own);
 *   2. by instance: one unit of work on its root. An ended instance gives
 *      DROPPED; a RUNNING net fires its oldest waiting MSG work item of
 *      that name with INSTANCE correlation; else the signal is buffered
 *      (buffer_ttl > 0, SIGNAL_BUFFERED) or DROPPED, in that same unit of
 *      work, so it cannot race the instance starting to wait;
 *   3. by aggregate: the subscriptions of the aggregate, then one unit of
 *      work per root that re-checks under the lock that a subscription is
 *      still there and fires the oldest one; with no firing the signal is
 *      buffered or dropped in a unit of work of its own, under the
 *      correlation lock (wf_tx_lock_correlation) that the enabling of an
 *      AGGREGATE MSG wait takes too, after checking there that no instance
 *      began to wait meanwhile (if one did: back to the subscriptions);
 *      with start (correlate or start) and no live root of the aggregate,
 *      that unit of work logs the signal STARTED, buffered, and starts the
 *      instance, whose first wait consumes it (start_for in signals.c);
 *      a drop writes SIGNAL_DROPPED;
 *   4. every firing merges the payload into the variables and writes
 *      SIGNAL_RECEIVED, SIGNAL_CONSUMED, then TRANSITION_FIRED and the rest
 *      of the step. The delivery-log row (one per call) is written by the
 *      first unit of work that fires (CORRELATED, consumed by that
 *      instance); because signal_id is unique per tenant, a concurrent
 *      duplicate fails that insert (CONFLICT), rolls its firing back and
 *      answers DUPLICATE.
 * A firing that matches no outgoing arc still consumes the signal: the
 * payload is merged, the subscription spent and the instance FAILED with
 * an incident (like a timer).
 *
 * At MSG enablement (net_runtime.c) the oldest buffered, unexpired signal
 * that targets the instance (INSTANCE correlation) or its aggregate
 * (AGGREGATE) is consumed in the same transaction and the work item fires
 * at once, after the step that enabled it (net_runtime_int.h). A refused
 * firing there is an incident in the same way, and the call that enabled
 * the wait (StartInstance, CompleteJob, ...) still succeeds. RetryInstance
 * has the waits it finds still armed look at the buffer again the same
 * way, once the instance runs again (wf_runtime__consume_awaited).
 *
 * Must not: include protobuf or grpc headers.
 */
#ifndef WF_SIGNALS_H
#define WF_SIGNALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net_runtime.h"
#include "referral.h"
#include "store.h"
#include "uow.h"
#include "wf_error.h"

typedef struct wf_runtime_send_signal_in {
    const char *name;           /* 1-256 printable bytes */
    const char *instance_id;    /* the target: instance_id, or ... */
    const char *aggregate_type; /* ... the aggregate (both set) */
    const char *aggregate_id;
    bool has_aggregate;       /* the aggregate target was given (even empty) */
    const char *payload_json; /* JSON object; NULL/"" = {} */
    const char *signal_id;    /* NULL/"" = no deduplication */
    int64_t buffer_ttl_ms;    /* >= 0; 0 = do not buffer */
    /* Correlate or start (aggregate target only): what to start when no
     * instance of the aggregate awaits the signal and no root of it is
     * live; its aggregate and instance_id are ignored (the signal's
     * aggregate, a new id). NULL = never start. */
    const wf_start_spec *start;
} wf_runtime_send_signal_in;

/* How long a signal that started an instance (STARTED) stays buffered for
 * it when the request has no buffer_ttl: 24 hours. */
#define WF_RUNTIME_SIGNAL_START_TTL_MS (24LL * 3600 * 1000)

typedef struct wf_runtime_send_signal_out {
    wf_signal_outcome outcome;
    const char **instance_ids; /* CORRELATED: the instances fired; STARTED: the new one */
    size_t n_instance_ids;
    int64_t expires_at;      /* BUFFERED: µs */
    int64_t instance_count;  /* CORRELATED: every instance it is delivered to */
    bool deliveries_pending; /* fanned out (or QUEUED): delivered in the background */
} wf_runtime_send_signal_out;

/* A signal to an aggregate answers with at most this many instance ids
 * (the first, in the order they began to wait); instance_count has all. */
#define WF_RUNTIME_FANOUT_PAGE 100

/* At most this many deliveries of a fan-out the sender runs itself right
 * after its answer is committed (the scheduler runs the rest). */
#define WF_RUNTIME_FANOUT_INLINE 8

/* One pass of the fan-out deliveries (the scheduler's, on every
 * replica): claims up to chunk pending deliveries (of tenant; NULL: of
 * every tenant) for lease_ms and runs each in a unit of work on its root
 * that consumes the delivery row and fires the instance (or skips it when
 * it no longer waits), then resolves QUEUED signals whose turn came.
 * ctx->ref.tenant and arena are set per row; *done: deliveries run and
 * signals resolved. */
typedef struct wf_runtime_fanout_host {
    wf_store *store;
    const wf_directory *dir;
    size_t max_variables_bytes;
    wf_runtime_wake_fn wake;
    void *wake_arg;
    size_t chunk;     /* 0 = WF_RUNTIME_FANOUT_CHUNK_DEFAULT */
    int64_t lease_ms; /* 0 = WF_RUNTIME_FANOUT_LEASE_MS_DEFAULT */
} wf_runtime_fanout_host;

#define WF_RUNTIME_FANOUT_CHUNK_DEFAULT 200
#define WF_RUNTIME_FANOUT_LEASE_MS_DEFAULT 30000

wf_code wf_runtime_fanout_pass(const wf_runtime_fanout_host *h, const char *tenant,
                               int64_t deadline_ms, size_t *done, wf_error *err);

/* SendSignal. Checks the request (violations to ctx->ref.violation); its
 * units of work share idem (wf_uow_span_begin): the request id is looked
 * up with the first one and recorded with each one that has an effect.
 * Errors: INVALID_ARGUMENT, INVALID_JSON,
 * INSTANCE_NOT_FOUND, REQUEST_ID_REUSED; with start also StartInstance's
 * (ACTOR_MISSING, DEFINITION_NOT_FOUND, DEFINITION_NOT_ACTIVE,
 * NO_ARC_MATCHED). */
wf_code wf_runtime_send_signal(const wf_runtime_ctx *ctx, const wf_runtime_send_signal_in *in,
                               wf_uow_idem *idem, wf_runtime_send_signal_out *out, wf_error *err);

/* Whether the log row r may have fan-out deliveries (by aggregate,
 * CORRELATED or QUEUED), and their counts by state. */
bool wf_runtime_signal_fanned_out(const wf_signal_row *r);
wf_code wf_runtime_signal_deliveries(const wf_ref_ctx *ctx, const char *log_id,
                                     wf_delivery_counts *out, wf_error *err);

typedef struct wf_runtime_list_signals_in {
    const char *instance_id; /* or the aggregate (both set) */
    const char *aggregate_type;
    const char *aggregate_id;
    bool has_aggregate;
    const char *name;  /* optional filter */
    int32_t page_size; /* 0 = 50, at most 500, not negative */
    const char *cursor;
} wf_runtime_list_signals_in;

/* ListSignals: the delivery log, oldest first. A name filter may give
 * pages shorter than page_size (next_cursor still says whether more
 * follow). */
wf_code wf_runtime_list_signals(const wf_runtime_ctx *ctx, const wf_runtime_list_signals_in *q,
                                wf_signal_row **rows, size_t *n, char **next_cursor, wf_error *err);

/* Buffered, unconsumed, unexpired signals that could reach instance in
 * (addressed to its id or to its aggregate); none once it has ended. */
wf_code wf_runtime_buffered_signals(const wf_ref_ctx *ctx, const wf_instance_row *in,
                                    wf_signal_row **rows, size_t *n, wf_error *err);

/* SetVariables: top-level merge (VARIABLES_SET). Errors:
 * INSTANCE_NOT_FOUND, INSTANCE_NOT_RUNNING (ended), INVALID_ARGUMENT
 * (missing), INVALID_JSON (not an object), REQUEST_ID_REUSED. */
wf_code wf_runtime_set_variables(const wf_runtime_ctx *ctx, const char *instance_id,
                                 const char *variables_json, wf_uow_idem *idem,
                                 wf_instance_row *out, wf_error *err);

#endif /* WF_SIGNALS_H */
