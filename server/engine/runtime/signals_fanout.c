/*
 * signals_fanout: the deliveries of a signal sent to an aggregate and
 * fanned out to the instances that waited for it (signals.h,
 * wf_runtime_fanout_pass). SendSignal wrote one delivery row per instance
 * with the signal's log row; here each row is consumed in the unit of
 * work that fires its instance (or skips it: no longer waiting), so an
 * instance gets the signal exactly once whichever replica runs it and
 * however often a claim is retried. QUEUED signals are resolved here too,
 * once the deliveries before them are done.
 *
 * Must not: include protobuf or grpc headers.
 */

#include "signals_int.h"

#include <string.h>

#include "wf_log.h"
#include "wf_str.h"
#include "wf_time.h"

#define QUEUED_PER_PASS 16

/* The send_op of a delivery or a resolution, from the signal's log row:
 * a QUEUED row keeps its would-be expiry in expires_at. */
static void
op_from_row(send_op *op, wf_runtime_send_signal_in *in, const wf_runtime_ctx *ctx,
            const wf_signal_row *r, wf_runtime_send_signal_out *out)
{
    *in = (wf_runtime_send_signal_in){
        .name = r->name,
        .aggregate_type = r->aggregate_type,
        .aggregate_id = r->aggregate_id,
        .has_aggregate = true,
        .payload_json = r->payload_json,
        .signal_id = r->signal_id,
        .buffer_ttl_ms =
            r->expires_at > r->received_at ? (r->expires_at - r->received_at) / 1000 : 0,
    };
    memset(out, 0, sizeof *out);
    *op = (send_op){
        .ctx = ctx,
        .in = in,
        .payload = r->payload_json != NULL ? r->payload_json : "{}",
        .received_at = r->received_at,
        .log_id = r->id,
        .out = out,
    };
}

typedef struct deliver_op {
    send_op op;
    const char *log_id, *instance_id, *root_id;
    bool first;     /* the first in the waits' order: its log row names it */
    bool gone;      /* the instance (or its definition) is not there */
    bool taken;     /* this unit consumed the delivery row */
    bool delivered; /* ... and fired the instance */
} deliver_op;

/* One delivery: fires the instance's oldest wait for the signal, or
 * skips it when it no longer waits; the row is consumed with it. */
static wf_code
deliver_body(wf_tx *tx, void *arg, wf_error *err)
{
    deliver_op *x = arg;
    send_op *op = &x->op;
    net_work w;
    x->taken = x->delivered = x->gone = false;
    op->n_wake = 0;
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, x->instance_id, x->root_id, err);
    if (rc == WF_E_INSTANCE_NOT_FOUND || rc == WF_E_DEFINITION_NOT_FOUND) {
        wf_error_clear(err);
        x->gone = true; /* skipped in a unit of its own */
        return WF_OK;
    }
    if (rc != WF_OK)
        return rc;
    size_t si = WF_WORK_NONE;
    if (w.rw.insts[w.inst].status == WF_INSTANCE_RUNNING && w.net != NULL)
        si = wf_runtime__sig_pick_sub(&w, op->in);
    const wf_instance_row *in = &w.rw.insts[w.inst];
    rc = wf_tx_take_delivery(
        tx, x->log_id, in->root_id != NULL ? in->root_id : in->id, x->instance_id,
        si != WF_WORK_NONE ? WF_DELIVERY_DELIVERED : WF_DELIVERY_SKIPPED, w.rw.now, &x->taken, err);
    if (rc != WF_OK || !x->taken || si == WF_WORK_NONE)
        return rc;
    const char *trans = SUB(&w, si)->transition_id;
    rc = wf_runtime__sig_fire_sub(&w, op, si, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK && x->first)
        rc = wf_runtime__sig_log_fired(&w, op, trans, err);
    if (rc != WF_OK)
        return rc;
    x->delivered = true;
    wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    return WF_OK;
}

static wf_code
skip_body(wf_tx *tx, void *arg, wf_error *err)
{
    deliver_op *x = arg;
    if (x->root_id == NULL)
        return WF_OK; /* left to a scheduler, whose claimed row names its root */
    return wf_tx_take_delivery(tx, x->log_id, x->root_id, x->instance_id, WF_DELIVERY_SKIPPED,
                               wf_now_us(), &x->taken, err);
}

/* Runs the delivery of signal sig to instance_id (root_id: a hint, may
 * be NULL) in ctx (its arena receives everything). */
static wf_code
deliver_one(const wf_runtime_ctx *ctx, const wf_signal_row *sig, const char *instance_id,
            const char *root_id, bool first, wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_runtime_send_signal_in in;
    wf_runtime_send_signal_out out;
    deliver_op x = {
        .log_id = sig->id, .instance_id = instance_id, .root_id = root_id, .first = first};
    op_from_row(&x.op, &in, ctx, sig, &out);
    wf_code rc = wf_uow_run(ctx->ref.store, &sc, NULL, deliver_body, &x, NULL, err);
    if (rc == WF_OK && x.gone)
        rc = wf_uow_run(ctx->ref.store, &sc, NULL, skip_body, &x, NULL, err);
    if (rc == WF_OK && x.delivered)
        wf_runtime__wake(ctx, x.op.wake, x.op.n_wake);
    return rc;
}

/* The log row id of ctx's tenant, as committed. */
static wf_code
read_signal(const wf_runtime_ctx *ctx, const char *id, wf_signal_row *out, bool *found,
            wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_tx *tx = NULL;
    wf_code rc = wf_store_begin(ctx->ref.store, &sc, &tx, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_tx_get_signal(tx, id, out, found, err);
    wf_tx_rollback(tx);
    return rc;
}

void
wf_runtime__sig_after_fanout(const wf_runtime_ctx *ctx, const char *log_id,
                             const wf_runtime_send_signal_out *out)
{
    if (out->outcome != WF_SIGNAL_CORRELATED || out->instance_count > WF_RUNTIME_FANOUT_INLINE) {
        if (ctx->wake != NULL)
            ctx->wake(ctx->wake_arg, WF_RUNTIME_TOPIC_TIMERS); /* the schedulers */
        return;
    }
    /* A few: delivered before the answer, as one unit of work per root
     * would; a failure leaves the rest to the schedulers. */
    wf_error e;
    wf_error_clear(&e);
    wf_signal_row sig;
    bool found = false;
    if (read_signal(ctx, log_id, &sig, &found, &e) != WF_OK || !found)
        return;
    for (size_t i = 0; i < out->n_instance_ids; i++)
        if (deliver_one(ctx, &sig, out->instance_ids[i], NULL, i == 0, &e) != WF_OK)
            return;
}

bool
wf_runtime__sig_help(const wf_runtime_ctx *ctx, const char *aggregate_type,
                     const char *aggregate_id)
{
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_delivery_row *rows = NULL;
    size_t n = 0;
    wf_error e;
    wf_error_clear(&e);
    if (wf_store_pending_deliveries(ctx->ref.store, &sc, aggregate_type, aggregate_id,
                                    WF_RUNTIME_FANOUT_INLINE + 1, &rows, &n, &e) != WF_OK ||
        n == 0 || n > WF_RUNTIME_FANOUT_INLINE)
        return false;
    wf_signal_row sig;
    bool have = false;
    for (size_t i = 0; i < n; i++) {
        bool found = true;
        if (!have || !wf_str_eq(sig.id, rows[i].signal_log_id)) {
            have = read_signal(ctx, rows[i].signal_log_id, &sig, &found, &e) == WF_OK && found;
            if (!have)
                return false;
        }
        if (deliver_one(ctx, &sig, rows[i].instance_id, rows[i].root_id, rows[i].seq == 1, &e) !=
            WF_OK)
            return false;
    }
    return true;
}

/* ---- the schedulers' pass ------------------------------------------------------------------ */

static bool
past(int64_t deadline_ms)
{
    return deadline_ms != 0 && wf_mono_ms() >= deadline_ms;
}

static wf_runtime_ctx
host_ctx(const wf_runtime_fanout_host *h, const char *tenant, int64_t deadline_ms, wf_arena *a)
{
    return (wf_runtime_ctx){
        .ref =
            {
                .store = h->store,
                .dir = h->dir,
                .tenant = tenant,
                .deadline_ms = deadline_ms,
                .arena = a,
                .max_variables_bytes = h->max_variables_bytes,
            },
        .wake = h->wake,
        .wake_arg = h->wake_arg,
    };
}

/* The signal of delivery d, read once per pass (rows of one fan-out
 * come together): *cache holds the last one read, in arena a. */
static wf_code
signal_of(const wf_runtime_fanout_host *h, const wf_delivery_row *d, int64_t deadline_ms,
          wf_arena *a, wf_signal_row *cache, bool *have, wf_error *err)
{
    if (*have && wf_str_eq(cache->id, d->signal_log_id) && wf_str_eq(cache->tenant, d->tenant))
        return WF_OK;
    wf_runtime_ctx c = host_ctx(h, d->tenant, deadline_ms, a);
    bool found = false;
    wf_code rc = read_signal(&c, d->signal_log_id, cache, &found, err);
    *have = rc == WF_OK && found;
    if (rc == WF_OK && !found)
        rc = wf_error_set(err, WF_E_INTERNAL, "signal \"%s\" of a delivery is not in the log",
                          d->signal_log_id);
    return rc;
}

/* Each claimed delivery in a unit of work of its own, each with an arena
 * of its own (the pass's memory stays bounded by one delivery). */
static wf_code
run_deliveries(const wf_runtime_fanout_host *h, const wf_delivery_row *rows, size_t n,
               int64_t deadline_ms, wf_arena *pass, size_t *done, wf_error *err)
{
    wf_signal_row sig;
    bool have = false;
    for (size_t i = 0; i < n && !past(deadline_ms); i++) {
        wf_error e;
        wf_error_clear(&e);
        wf_code rc = signal_of(h, &rows[i], deadline_ms, pass, &sig, &have, &e);
        wf_arena *a = rc == WF_OK ? wf_arena_new() : NULL;
        if (rc == WF_OK && a == NULL)
            rc = wf_error_nomem(&e);
        if (rc == WF_OK) {
            wf_runtime_ctx c = host_ctx(h, rows[i].tenant, deadline_ms, a);
            rc = deliver_one(&c, &sig, rows[i].instance_id, rows[i].root_id, rows[i].seq == 1, &e);
        }
        wf_arena_free(a);
        if (rc == WF_OK) {
            (*done)++;
            continue;
        }
        if (rc == WF_E_STORE_UNAVAILABLE) {
            *err = e;
            return rc;
        }
        /* The claim runs out and the delivery is tried again. */
        WF_LOG(WF_LOG_WARN, "fanout", "delivery of signal %s to %s failed: %s",
               rows[i].signal_log_id, rows[i].instance_id, e.msg);
    }
    return WF_OK;
}

typedef struct resolve_op {
    send_op op;
    const wf_signal_row *sig;
    bool resolved;
} resolve_op;

/* A QUEUED signal whose turn came, as if it were sent now: fanned out to
 * the instances waiting now, else buffered (for what is left of its TTL)
 * or dropped. Re-checked under the correlation lock. */
static wf_code
resolve_body(wf_tx *tx, void *arg, wf_error *err)
{
    resolve_op *x = arg;
    send_op *op = &x->op;
    const wf_signal_row *s = x->sig;
    wf_signal_row cur;
    bool found = false;
    wf_fanout_out fo;
    x->resolved = false;
    wf_code rc = wf_tx_lock_correlation(tx, s->name, s->aggregate_type, s->aggregate_id, NULL, err);
    if (rc == WF_OK)
        rc = wf_tx_get_signal(tx, s->id, &cur, &found, err);
    if (rc != WF_OK || !found || cur.outcome != WF_SIGNAL_QUEUED)
        return rc; /* resolved by another replica */
    int64_t now = wf_now_us();
    rc = wf_tx_fanout_targets(tx, s->id, s->name, s->aggregate_type, s->aggregate_id,
                              s->received_at, s->id, s->received_at, now, 1, &fo, err);
    if (rc != WF_OK || fo.queued)
        return rc;
    x->resolved = true;
    if (fo.count > 0)
        return wf_runtime__sig_log_fanout(tx, op, WF_SIGNAL_CORRELATED, err);
    wf_runtime_send_signal_in *in = (wf_runtime_send_signal_in *)op->in;
    if (s->expires_at <= now)
        in->buffer_ttl_ms = 0; /* its TTL ran out while it waited */
    return wf_runtime__sig_settle_unawaited(tx, op, false, err);
}

static wf_code
resolve_queued(const wf_runtime_fanout_host *h, const char *tenant, int64_t deadline_ms,
               size_t *done, wf_error *err)
{
    wf_arena *a = wf_arena_new();
    if (a == NULL)
        return wf_error_nomem(err);
    wf_store_ctx sc = {tenant, deadline_ms, a};
    wf_signal_row *rows = NULL;
    size_t n = 0;
    wf_code rc = wf_store_find_queued_signals(h->store, &sc, QUEUED_PER_PASS, &rows, &n, err);
    for (size_t i = 0; rc == WF_OK && i < n && !past(deadline_ms); i++) {
        wf_runtime_ctx c = host_ctx(h, rows[i].tenant, deadline_ms, a);
        wf_store_ctx csc = wf_work_store_ctx(&c.ref);
        wf_runtime_send_signal_in in;
        wf_runtime_send_signal_out out;
        resolve_op x = {.sig = &rows[i]};
        op_from_row(&x.op, &in, &c, &rows[i], &out);
        wf_error e;
        wf_error_clear(&e);
        wf_code r = wf_uow_run(h->store, &csc, NULL, resolve_body, &x, NULL, &e);
        if (r == WF_E_STORE_UNAVAILABLE) {
            *err = e;
            rc = r;
        } else if (r != WF_OK) {
            WF_LOG(WF_LOG_WARN, "fanout", "queued signal %s: %s", rows[i].id, e.msg);
        } else if (x.resolved) {
            (*done)++;
        }
    }
    wf_arena_free(a);
    return rc;
}

wf_code
wf_runtime_fanout_pass(const wf_runtime_fanout_host *h, const char *tenant, int64_t deadline_ms,
                       size_t *done, wf_error *err)
{
    *done = 0;
    wf_arena *a = wf_arena_new();
    if (a == NULL)
        return wf_error_nomem(err);
    size_t chunk = h->chunk > 0 ? h->chunk : WF_RUNTIME_FANOUT_CHUNK_DEFAULT;
    int64_t lease_ms = h->lease_ms > 0 ? h->lease_ms : WF_RUNTIME_FANOUT_LEASE_MS_DEFAULT;
    wf_store_ctx sc = {tenant, deadline_ms, a};
    wf_delivery_row *rows = NULL;
    size_t n = 0;
    wf_code rc =
        wf_store_claim_deliveries(h->store, &sc, wf_now_us(), lease_ms, chunk, &rows, &n, err);
    if (rc == WF_OK)
        rc = run_deliveries(h, rows, n, deadline_ms, a, done, err);
    wf_arena_free(a);
    if (rc == WF_OK && !past(deadline_ms))
        rc = resolve_queued(h, tenant, deadline_ms, done, err);
    return rc;
}
