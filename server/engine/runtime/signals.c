/*
 * signals: SendSignal (signals.h): dedupe, delivery to an instance or an
 * aggregate, buffering, dropping and correlate-or-start. The consumption
 * of buffered signals by MSG work items is in signals_consume.c.
 *
 * Must not: include protobuf or grpc headers.
 */

#include "signals_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "vars.h"
#include "wf_id.h"
#include "wf_time.h"
#include "wf_str.h"

#define MAX_NAME 256
#define MAX_AGG 128
#define MAX_SIGNAL_ID 256

bool
wf_runtime__printable(const char *s, size_t max)
{
    size_t n = 0;
    if (s == NULL)
        return false;
    for (; s[n] != '\0'; n++)
        if ((unsigned char)s[n] < 0x20 || s[n] == 0x7f)
            return false;
    return n >= 1 && n <= max;
}

/* ---- SendSignal ----------------------------------------------------------------------------- */

/* A violation of SendSignalRequest.start: the field named under start
 * (arg is the caller's wf_ref_ctx). */
static void
start_violation(void *arg, const char *field, const char *reason, const char *msg)
{
    const wf_ref_ctx *c = arg;
    char *f = wf_arena_printf(c->arena, "start.%s", field);
    c->violation(c->violation_arg, f != NULL ? f : field, reason, msg);
}

static wf_code push_id(wf_arena *a, wf_runtime_send_signal_out *out, const char *id, wf_error *err);

static wf_signal_row
log_row(const send_op *op, wf_signal_outcome outcome)
{
    const wf_runtime_send_signal_in *in = op->in;
    bool by_agg = wf_str_empty(in->instance_id);
    wf_signal_row r = {
        .id = (char *)op->log_id,
        .tenant = (char *)op->ctx->ref.tenant,
        .signal_id = wf_str_empty(in->signal_id) ? NULL : (char *)in->signal_id,
        .name = (char *)in->name,
        .instance_id = by_agg ? NULL : (char *)in->instance_id,
        .aggregate_type = by_agg ? (char *)in->aggregate_type : NULL,
        .aggregate_id = by_agg ? (char *)in->aggregate_id : NULL,
        .payload_json = (char *)op->payload,
        .outcome = outcome,
        .received_at = op->received_at,
    };
    if (outcome == WF_SIGNAL_BUFFERED || outcome == WF_SIGNAL_STARTED) {
        int64_t ttl_ms = in->buffer_ttl_ms;
        if (outcome == WF_SIGNAL_STARTED && ttl_ms == 0)
            ttl_ms = WF_RUNTIME_SIGNAL_START_TTL_MS;
        r.buffered = true;
        r.expires_at = op->received_at + ttl_ms * 1000;
    }
    return r;
}

static wf_code
write_log(wf_tx *tx, const wf_signal_row *r, const wf_event_row *ev, wf_error *err)
{
    wf_store_changes c = {.signals = r, .n_signals = 1, .events = ev, .n_events = ev ? 1 : 0};
    return wf_tx_apply(tx, &c, err);
}

/* The oldest waiting subscription of the net instance for this signal:
 * INSTANCE correlation when sent by id, the aggregate when sent to it. */
size_t
wf_runtime__sig_pick_sub(const net_work *w, const wf_runtime_send_signal_in *in)
{
    const wf_instance_row *inst = &w->rw.insts[w->inst];
    size_t best = WF_WORK_NONE;
    int64_t best_at = 0;
    const char *best_id = NULL;
    for (size_t i = 0; i < w->subs.n; i++) {
        const wf_subscription_row *s = SUB(w, i);
        if ((w->subs.flags[i] & NW_GONE) || !wf_str_eq(s->instance_id, inst->id) ||
            !wf_str_eq(s->signal_name, in->name))
            continue;
        if (wf_str_empty(in->instance_id)) {
            if (!wf_str_eq(s->aggregate_type, in->aggregate_type) ||
                !wf_str_eq(s->aggregate_id, in->aggregate_id))
                continue;
        } else if (s->aggregate_type != NULL) {
            continue; /* AGGREGATE correlation: not reachable by id */
        }
        size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), s->work_item_id);
        if (ii == WF_WORK_NONE || ITEM(w, ii)->state != WF_WORK_ITEM_ENABLED)
            continue;
        const wf_work_item_row *it = ITEM(w, ii);
        if (best == WF_WORK_NONE || it->enabled_at < best_at ||
            (it->enabled_at == best_at && strcmp(it->id, best_id) < 0)) {
            best = i;
            best_at = it->enabled_at;
            best_id = it->id;
        }
    }
    return best;
}

static json_t *
received_data(const send_op *op)
{
    return json_pack("{s:s,s:s,s:s*}", "signalName", op->in->name, "signalLogId", op->log_id,
                     "signalId", wf_str_empty(op->in->signal_id) ? NULL : op->in->signal_id);
}

/* The data of a delivery's event: the signal and its target. */
static json_t *
delivery_data(const send_op *op)
{
    const wf_runtime_send_signal_in *in = op->in;
    bool by_agg = wf_str_empty(in->instance_id);
    return json_pack("{s:s,s:s,s:s*,s:s*,s:s*,s:s*}", "signalName", in->name, "signalLogId",
                     op->log_id, "signalId", wf_str_empty(in->signal_id) ? NULL : in->signal_id,
                     "instanceId", by_agg ? NULL : in->instance_id, "aggregateType",
                     by_agg ? in->aggregate_type : NULL, "aggregateId",
                     by_agg ? in->aggregate_id : NULL);
}

/* Fires subscription si of w with the payload (or turns a refused firing
 * into an incident, wf_runtime__fire_signal). */
wf_code
wf_runtime__sig_fire_sub(net_work *w, send_op *op, size_t si, wf_error *err)
{
    const char *item_id = SUB(w, si)->work_item_id;
    const char *trans = SUB(w, si)->transition_id;
    wf_signal_row consumed = log_row(op, WF_SIGNAL_CORRELATED);
    wf_code rc = wf_runtime__event(w, "SIGNAL_RECEIVED", received_data(op), err);
    if (rc == WF_OK)
        rc = wf_runtime__event(w, "SIGNAL_CONSUMED",
                               wf_runtime__consumed_data(&consumed, trans, item_id), err);
    if (rc == WF_OK)
        rc = wf_runtime__fire_signal(w, op->in->name, item_id, trans, op->payload, err);
    return rc;
}

/* Writes the CORRELATED log row for the instance just fired. */
wf_code
wf_runtime__sig_log_fired(net_work *w, send_op *op, const char *trans, wf_error *err)
{
    wf_signal_row r = log_row(op, WF_SIGNAL_CORRELATED);
    r.consumed_at = w->rw.now;
    r.consumed_by_instance = w->rw.insts[w->inst].id;
    r.transition_id = (char *)trans;
    return write_log(w->tx, &r, NULL, err);
}

/* By instance id: everything in one unit of work on its root. */
static wf_code
send_instance_body(wf_tx *tx, void *arg, wf_error *err)
{
    send_op *op = arg;
    net_work w;
    op->fired = op->logged = false;
    op->n_wake = 0;
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, op->in->instance_id, NULL, err);
    if (rc != WF_OK)
        return rc;
    op->received_at = w.rw.now;
    wf_instance_status st = w.rw.insts[w.inst].status;
    size_t si = WF_WORK_NONE;
    if (st == WF_INSTANCE_RUNNING && w.net != NULL)
        si = wf_runtime__sig_pick_sub(&w, op->in);
    if (si != WF_WORK_NONE) {
        const char *trans = SUB(&w, si)->transition_id;
        rc = wf_runtime__sig_fire_sub(&w, op, si, err);
        if (rc == WF_OK)
            rc = wf_runtime__write(&w, err);
        if (rc == WF_OK)
            rc = wf_runtime__sig_log_fired(&w, op, trans, err);
        if (rc != WF_OK)
            return rc;
        op->outcome = WF_SIGNAL_CORRELATED;
        op->fired = true;
        op->fired_instance = w.rw.insts[w.inst].id;
        wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
        return WF_OK;
    }
    bool buffer = !wf_instance_ended(st) && op->in->buffer_ttl_ms > 0;
    wf_signal_row r = log_row(op, buffer ? WF_SIGNAL_BUFFERED : WF_SIGNAL_DROPPED);
    if (buffer) {
        rc = wf_runtime__event(
            &w, "SIGNAL_BUFFERED",
            json_pack("{s:s,s:s,s:s*,s:s}", "signalName", op->in->name, "signalLogId", op->log_id,
                      "signalId", wf_str_empty(op->in->signal_id) ? NULL : op->in->signal_id,
                      "expiresAt", wf_runtime__time_text(w.rw.arena, r.expires_at)),
            err);
    } else {
        rc = wf_runtime__event(&w, "SIGNAL_DROPPED", delivery_data(op), err);
    }
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK)
        rc = write_log(tx, &r, NULL, err);
    if (rc != WF_OK)
        return rc;
    op->outcome = r.outcome;
    op->expires_at = r.expires_at;
    op->logged = true;
    return WF_OK;
}

/* send_instance_body with the response it records filled in. */
static wf_code
send_instance_rec_body(wf_tx *tx, void *arg, wf_error *err)
{
    send_op *op = arg;
    op->out->n_instance_ids = 0;
    op->out->expires_at = 0;
    wf_code rc = send_instance_body(tx, arg, err);
    if (rc != WF_OK)
        return rc;
    op->out->outcome = op->outcome;
    if (op->fired)
        return push_id(op->ctx->ref.arena, op->out, op->fired_instance, err);
    if (op->outcome == WF_SIGNAL_BUFFERED)
        op->out->expires_at = op->expires_at;
    return WF_OK;
}

/* By aggregate: one root, re-checked under its lock. */
static wf_code
send_root_body(wf_tx *tx, void *arg, wf_error *err)
{
    send_op *op = arg;
    net_work w;
    op->fired = op->logged = false;
    op->n_wake = 0;
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, op->instance_id, op->root, err);
    if (rc == WF_E_INSTANCE_NOT_FOUND || rc == WF_E_DEFINITION_NOT_FOUND) {
        wf_error_clear(err);
        return WF_OK;
    }
    if (rc != WF_OK)
        return rc;
    if (w.rw.insts[w.inst].status != WF_INSTANCE_RUNNING || w.net == NULL)
        return WF_OK;
    size_t si = wf_runtime__sig_pick_sub(&w, op->in);
    if (si == WF_WORK_NONE)
        return WF_OK; /* fired or withdrawn meanwhile */
    const char *trans = SUB(&w, si)->transition_id;
    rc = wf_runtime__sig_fire_sub(&w, op, si, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK && op->write_log) {
        rc = wf_runtime__sig_log_fired(&w, op, trans, err);
        op->logged = rc == WF_OK;
    }
    if (rc != WF_OK)
        return rc;
    op->fired = true;
    op->fired_instance = w.rw.insts[w.inst].id;
    wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    return WF_OK;
}

/* send_root_body with this root's instance added to the response it
 * records; a root that fired nothing records nothing. */
static wf_code
send_root_rec_body(wf_tx *tx, void *arg, wf_error *err)
{
    send_op *op = arg;
    op->out->n_instance_ids = op->base_ids; /* an attempt again */
    wf_code rc = send_root_body(tx, arg, err);
    if (rc != WF_OK)
        return rc;
    if (!op->fired) {
        wf_uow_idem_skip_record(op->idem);
        return WF_OK;
    }
    op->out->outcome = WF_SIGNAL_CORRELATED;
    op->out->instance_count = (int64_t)op->out->n_instance_ids + 1;
    return push_id(op->ctx->ref.arena, op->out, op->fired_instance, err);
}

/* True when signal_id is already in the delivery log; *original (may be
 * NULL) is then the id of its row (the first delivery, not a DUPLICATE). */
static wf_code
seen_before(const wf_runtime_ctx *ctx, const char *signal_id, bool *seen, const char **original,
            wf_error *err)
{
    *seen = false;
    if (wf_str_empty(signal_id))
        return WF_OK;
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_signal_filter f = {.signal_id = signal_id};
    wf_signal_row *rows = NULL;
    size_t n = 0;
    char *next = NULL;
    wf_code rc = wf_store_list_signals(ctx->ref.store, &sc, &f, 1, NULL, &rows, &n, &next, err);
    if (rc == WF_OK)
        *seen = n > 0;
    if (*seen && original != NULL)
        *original = rows[0].id;
    return rc;
}

/* A lost dedupe race: CONFLICT with the signal_id now in the log is a
 * DUPLICATE (*original: the winner's row). */
static bool
lost_dedupe_race(const wf_runtime_ctx *ctx, const wf_runtime_send_signal_in *in, wf_code rc,
                 const char **original, wf_error *err)
{
    if (rc != WF_E_CONFLICT || wf_str_empty(in->signal_id))
        return false;
    wf_error e2;
    bool seen = false;
    if (seen_before(ctx, in->signal_id, &seen, original, &e2) != WF_OK || !seen)
        return false;
    wf_error_clear(err);
    return true;
}

/* An event of a delivery that reached no instance (DROPPED by aggregate,
 * DUPLICATE): written without an instance, so WatchEvents shows it to a
 * watcher without an instance or definition filter (e.g. types =
 * SIGNAL_DROPPED, SIGNAL_DUPLICATE). data is taken. */
static wf_code
delivery_event(const wf_runtime_ctx *ctx, const char *type, json_t *data, int64_t at,
               wf_event_row *ev, wf_error *err)
{
    *ev = (wf_event_row){
        .tenant = (char *)ctx->ref.tenant,
        .type = (char *)type,
        .actor = (char *)ctx->ref.actor,
        .time = at,
    };
    ev->data_json = data != NULL ? wf_vars_dump(ctx->ref.arena, data) : NULL;
    json_decref(data);
    return ev->data_json != NULL ? WF_OK : wf_error_nomem(err);
}

/* Logs a DUPLICATE delivery: a row of its own (the unique signal_id
 * index leaves DUPLICATE rows out) and SIGNAL_DUPLICATE naming the
 * original row; nothing is consumed, buffered or changed. */
static wf_code
duplicate_body(wf_tx *tx, void *arg, wf_error *err)
{
    send_op *op = arg;
    op->received_at = wf_now_us();
    wf_signal_row r = log_row(op, WF_SIGNAL_DUPLICATE);
    json_t *data = delivery_data(op);
    if (data != NULL && op->original != NULL)
        json_object_set_new(data, "originalSignalLogId", json_string(op->original));
    wf_event_row ev;
    wf_code rc = delivery_event(op->ctx, "SIGNAL_DUPLICATE", data, op->received_at, &ev, err);
    if (rc == WF_OK)
        rc = write_log(tx, &r, &ev, err);
    if (rc != WF_OK)
        return rc;
    op->out->outcome = WF_SIGNAL_DUPLICATE;
    op->out->n_instance_ids = 0;
    op->out->expires_at = 0;
    return WF_OK;
}

/* Answers DUPLICATE and logs it, with the request record (a retry of the
 * same request id answers the first response). */
static wf_code
log_duplicate(send_op *op, wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(&op->ctx->ref);
    memset(op->out, 0, sizeof *op->out);
    op->log_id = wf_id_new(op->ctx->ref.arena);
    if (op->log_id == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_uow_run(op->ctx->ref.store, &sc, op->idem, duplicate_body, op, op->out, err);
    if (rc == WF_OK && wf_uow_idem_replayed(op->idem))
        memset(op->out, 0, sizeof *op->out);
    return rc;
}

static wf_code
check_send(const wf_ref_ctx *ctx, const wf_runtime_send_signal_in *in, wf_error *err)
{
    if (!wf_runtime__printable(in->name, MAX_NAME))
        return wf_work_violation(ctx, WF_E_INVALID_ARGUMENT, "name",
                                 "must be 1 to 256 printable bytes", err);
    if (in->has_aggregate) {
        if (!wf_runtime__printable(in->aggregate_type, MAX_AGG))
            return wf_work_violation(ctx, WF_E_INVALID_ARGUMENT, "aggregate.type",
                                     "must be 1 to 128 printable bytes", err);
        if (!wf_runtime__printable(in->aggregate_id, MAX_AGG))
            return wf_work_violation(ctx, WF_E_INVALID_ARGUMENT, "aggregate.id",
                                     "must be 1 to 128 printable bytes", err);
    } else if (wf_str_empty(in->instance_id)) {
        return wf_work_violation(ctx, WF_E_INVALID_ARGUMENT, "target",
                                 "instance_id or aggregate is required", err);
    }
    if (in->start != NULL && !in->has_aggregate)
        return wf_work_violation(ctx, WF_E_INVALID_ARGUMENT, "start",
                                 "needs the signal sent to an aggregate, not to an instance_id",
                                 err);
    if (in->buffer_ttl_ms < 0)
        return wf_work_violation(ctx, WF_E_INVALID_ARGUMENT, "buffer_ttl", "must not be negative",
                                 err);
    if (!wf_str_empty(in->signal_id) && !wf_runtime__printable(in->signal_id, MAX_SIGNAL_ID))
        return wf_work_violation(ctx, WF_E_INVALID_ARGUMENT, "signal_id",
                                 "must be at most 256 printable bytes", err);
    return WF_OK;
}

static wf_code
push_id(wf_arena *a, wf_runtime_send_signal_out *out, const char *id, wf_error *err)
{
    const char **v = wf_arena_alloc(a, (out->n_instance_ids + 1) * sizeof *v);
    char *copy = wf_arena_strdup(a, id);
    if (v == NULL || copy == NULL)
        return wf_error_nomem(err);
    if (out->n_instance_ids > 0)
        memcpy(v, out->instance_ids, out->n_instance_ids * sizeof *v);
    v[out->n_instance_ids++] = copy;
    out->instance_ids = v;
    return WF_OK;
}

/* Correlate or start, under the correlation lock of the aggregate with
 * nobody waiting for the signal: when no root instance of the aggregate is
 * live, logs the signal STARTED, buffered (SIGNAL_BUFFERED, without an
 * instance as any signal buffered for an aggregate), then starts the
 * instance of op->in->start bound to the aggregate, as StartInstance
 * would, in tx: a first wait of its net for the signal consumes it there
 * (SIGNAL_CONSUMED). Every sender with start takes the same lock, so one
 * aggregate gets at most one instance: the next sender sees it live.
 * *started says whether this one started it (op->started). */
static wf_code
start_for(const wf_runtime_ctx *ctx, send_op *op, wf_tx *tx, bool *started, wf_error *err)
{
    wf_arena *a = ctx->ref.arena;
    bool live = true;
    *started = false;
    wf_code rc = wf_tx_aggregate_live(tx, op->in->aggregate_type, op->in->aggregate_id, &live, err);
    if (rc != WF_OK || live)
        return rc;
    char *id = wf_id_new(a);
    if (id == NULL)
        return wf_error_nomem(err);
    wf_start_spec spec = *op->in->start;
    spec.aggregate_type = op->in->aggregate_type;
    spec.aggregate_id = op->in->aggregate_id;
    spec.instance_id = id;
    wf_signal_row r = log_row(op, WF_SIGNAL_STARTED);
    json_t *data = delivery_data(op);
    if (data != NULL) {
        json_object_set_new(data, "expiresAt", json_string(wf_runtime__time_text(a, r.expires_at)));
        json_object_set_new(data, "outcome", json_string("STARTED"));
        json_object_set_new(data, "instanceId", json_string(id));
    }
    wf_event_row ev;
    rc = delivery_event(ctx, "SIGNAL_BUFFERED", data, op->received_at, &ev, err);
    if (rc == WF_OK)
        rc = write_log(tx, &r, &ev, err);
    wf_instance_row root;
    if (rc == WF_OK)
        rc = wf_runtime_start_in(&ctx->ref, tx, &spec, op->start_vars, &root, err);
    if (rc != WF_OK)
        return rc;
    op->started = id;
    *started = true;
    return WF_OK;
}

/* Buffers or drops a signal sent to an aggregate nobody awaits (or, with
 * start, starts an instance for it), under the correlation lock that tx
 * holds: the log row, its event and the answer (op->out). */
wf_code
wf_runtime__sig_settle_unawaited(wf_tx *tx, send_op *op, bool may_start, wf_error *err)
{
    const wf_runtime_ctx *ctx = op->ctx;
    wf_arena *a = ctx->ref.arena;
    op->started = NULL;
    bool buffer = op->in->buffer_ttl_ms > 0;
    wf_signal_row r = log_row(op, buffer ? WF_SIGNAL_BUFFERED : WF_SIGNAL_DROPPED);
    json_t *data = delivery_data(op);
    if (buffer && data != NULL)
        json_object_set_new(data, "expiresAt", json_string(wf_runtime__time_text(a, r.expires_at)));
    wf_event_row ev;
    wf_code rc = delivery_event(ctx, buffer ? "SIGNAL_BUFFERED" : "SIGNAL_DROPPED", data,
                                op->received_at, &ev, err);
    bool started = false;
    if (rc == WF_OK && may_start && op->in->start != NULL)
        rc = start_for(ctx, op, tx, &started, err);
    if (rc == WF_OK && started)
        r = log_row(op, WF_SIGNAL_STARTED);
    else if (rc == WF_OK)
        rc = write_log(tx, &r, &ev, err);
    if (rc != WF_OK)
        return rc;
    op->outcome = r.outcome;
    op->expires_at = r.expires_at;
    op->out->outcome = r.outcome;
    op->out->expires_at = r.buffered ? r.expires_at : 0;
    return started ? push_id(a, op->out, op->started, err) : WF_OK;
}

/* The log row of a signal fanned out (CORRELATED) or QUEUED behind
 * earlier deliveries to its aggregate. A QUEUED row keeps in expires_at
 * when it would expire if buffered (its TTL counts from its receipt; a
 * start's 24 hours when it has start and no TTL). */
wf_code
wf_runtime__sig_log_fanout(wf_tx *tx, send_op *op, wf_signal_outcome outcome, wf_error *err)
{
    wf_signal_row r = log_row(op, outcome);
    if (outcome == WF_SIGNAL_QUEUED) {
        int64_t ttl_ms = op->in->buffer_ttl_ms;
        if (ttl_ms == 0 && op->in->start != NULL)
            ttl_ms = WF_RUNTIME_SIGNAL_START_TTL_MS;
        r.expires_at = ttl_ms > 0 ? op->received_at + ttl_ms * 1000 : 0;
    }
    return write_log(tx, &r, NULL, err);
}

/* Looks at pending deliveries before the signal queues behind them: up
 * to QUEUE_LOOKS units of work; in between, the sender runs them itself
 * when they are few (wf_runtime__sig_help), else waits QUEUE_LOOK_MS, doubling. */
#define QUEUE_LOOKS 10
#define QUEUE_LOOK_MS 2

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Under the correlation lock: the delivery rows of the waiting instances
 * (a fan-out), else QUEUED behind earlier deliveries, else buffered,
 * dropped or started. One unit of work, whose answer it records. */
static wf_code
fanout_body(wf_tx *tx, void *arg, wf_error *err)
{
    send_op *op = arg;
    const wf_runtime_send_signal_in *in = op->in;
    wf_runtime_send_signal_out *out = op->out;
    memset(out, 0, sizeof *out); /* an attempt again */
    op->received_at = wf_now_us();
    op->started = NULL;
    wf_fanout_out fo;
    wf_code rc =
        wf_tx_lock_correlation(tx, in->name, in->aggregate_type, in->aggregate_id, NULL, err);
    if (rc == WF_OK)
        rc = wf_tx_fanout_targets(tx, op->log_id, in->name, in->aggregate_type, in->aggregate_id,
                                  INT64_MAX, "", op->received_at, op->received_at,
                                  WF_RUNTIME_FANOUT_PAGE, &fo, err);
    if (rc != WF_OK)
        return rc;
    if (fo.count == 0 && !fo.queued)
        return wf_runtime__sig_settle_unawaited(tx, op, true, err);
    if (fo.queued && !op->may_queue) {
        /* Deliveries before it are pending: most end within milliseconds
         * (a sender delivering a few itself), so look again first. */
        op->would_queue = true;
        wf_uow_idem_skip_record(op->idem);
        return WF_OK;
    }
    op->outcome = fo.queued ? WF_SIGNAL_QUEUED : WF_SIGNAL_CORRELATED;
    rc = wf_runtime__sig_log_fanout(tx, op, op->outcome, err);
    if (rc != WF_OK)
        return rc;
    out->outcome = op->outcome;
    out->instance_ids = (const char **)fo.ids;
    out->n_instance_ids = fo.n_ids;
    out->instance_count = fo.count;
    out->deliveries_pending = true;
    return WF_OK;
}

/* The one instance that waits, fired in one unit of work on its root
 * (the common case, as cheap as a signal by instance id). *fired: it was;
 * otherwise nothing was written or recorded. */
static wf_code
send_one(const wf_runtime_ctx *ctx, send_op *op, const wf_subscription_row *sub, bool *fired,
         wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    *fired = false;
    op->root = sub->root_id;
    op->instance_id = sub->instance_id;
    op->write_log = true;
    op->base_ids = 0;
    wf_code rc = wf_uow_run(ctx->ref.store, &sc, op->idem, send_root_rec_body, op, op->out, err);
    if (rc != WF_OK || wf_uow_idem_replayed(op->idem) || !op->fired)
        return rc;
    *fired = true;
    wf_runtime__wake(ctx, op->wake, op->n_wake);
    return WF_OK;
}

/* True when every subscription is of one instance. */
static bool
one_instance(const wf_subscription_row *subs, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (!wf_str_eq(subs[i].instance_id, subs[0].instance_id))
            return false;
    return n > 0;
}

/* A signal to an aggregate: one waiting instance is fired at once; any
 * other case is settled in one unit of work under the correlation lock
 * (fanout_body), its deliveries run after the answer. */
static wf_code
send_aggregate(const wf_runtime_ctx *ctx, send_op *op, wf_runtime_send_signal_out *out,
               wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_subscription_row *subs = NULL;
    size_t n = 0;
    wf_code rc =
        wf_store_find_subscriptions(ctx->ref.store, &sc, op->in->name, NULL, op->in->aggregate_type,
                                    op->in->aggregate_id, &subs, &n, err);
    bool fired = false;
    if (rc == WF_OK && one_instance(subs, n))
        rc = send_one(ctx, op, &subs[0], &fired, err);
    if (rc == WF_OK && !fired && !wf_uow_idem_replayed(op->idem)) {
        /* A start that lost a race (a definition created at once) runs
         * again and sees the winner. */
        for (int i = 0; i < QUEUE_LOOKS + 3; i++) {
            op->would_queue = false;
            op->may_queue = i >= QUEUE_LOOKS - 1;
            rc = wf_uow_run(ctx->ref.store, &sc, op->idem, fanout_body, op, out, err);
            if (rc == WF_OK && op->would_queue && !wf_uow_idem_replayed(op->idem)) {
                if (!wf_runtime__sig_help(ctx, op->in->aggregate_type, op->in->aggregate_id))
                    sleep_ms(QUEUE_LOOK_MS << (i < 4 ? i : 4));
                continue;
            }
            if (rc != WF_E_CONFLICT || op->in->start == NULL)
                break;
        }
    }
    if (rc != WF_OK) {
        memset(out, 0, sizeof *out);
        if (!lost_dedupe_race(ctx, op->in, rc, &op->original, err))
            return rc;
        out->outcome = WF_SIGNAL_DUPLICATE;
        return WF_OK;
    }
    if (fired || wf_uow_idem_replayed(op->idem))
        return WF_OK;
    if (op->started != NULL)
        wf_runtime__wake(ctx, NULL, 0);
    if (out->deliveries_pending)
        wf_runtime__sig_after_fanout(ctx, op->log_id, out);
    return WF_OK;
}

wf_code
wf_runtime_send_signal(const wf_runtime_ctx *ctx, const wf_runtime_send_signal_in *in,
                       wf_uow_idem *idem, wf_runtime_send_signal_out *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    const wf_ref_ctx *rc_ = &ctx->ref;
    const char *payload = NULL;
    wf_code rc = check_send(rc_, in, err);
    if (rc == WF_OK) {
        rc = wf_vars_object(rc_->arena, in->payload_json, "payload_json", &payload, err);
        if (rc != WF_OK && rc_->violation != NULL)
            rc_->violation(rc_->violation_arg, "payload_json", NULL, "must be a JSON object");
    }
    if (rc != WF_OK)
        return rc;
    send_op op = {.ctx = ctx,
                  .in = in,
                  .payload = payload,
                  .received_at = wf_now_us(), /* a unit of work may take its own clock */
                  .log_id = wf_id_new(rc_->arena),
                  .idem = wf_uow_idem_active(idem) ? idem : NULL,
                  .out = out};
    if (op.log_id == NULL)
        return wf_error_nomem(err);
    if (in->start != NULL) {
        /* StartInstance's rules, its violations named under start. */
        wf_ref_ctx sctx = *rc_;
        sctx.violation = rc_->violation != NULL ? start_violation : NULL;
        sctx.violation_arg = (void *)rc_;
        wf_start_spec spec = *in->start;
        spec.aggregate_type = in->aggregate_type;
        spec.aggregate_id = in->aggregate_id;
        rc = wf_referral_check_start(&sctx, &spec, &op.start_vars, err);
        if (rc != WF_OK)
            return rc;
    }
    /* Every answer has an effect (a delivery, a buffered, dropped or
     * duplicate log row) and records the request with it: the units of
     * work of this call share the request id (the first looks it up in
     * its first flight, the first with an effect records with its
     * commit, later ones amend the record). */
    wf_uow_span_begin(op.idem);
    bool seen = false;
    rc = seen_before(ctx, in->signal_id, &seen, &op.original, err);
    if (rc != WF_OK)
        return rc;
    if (seen)
        return log_duplicate(&op, err);
    if (!in->has_aggregate) {
        wf_store_ctx sc = wf_work_store_ctx(rc_);
        rc = wf_uow_run(rc_->store, &sc, op.idem, send_instance_rec_body, &op, out, err);
        if (rc != WF_OK) {
            memset(out, 0, sizeof *out);
            if (!lost_dedupe_race(ctx, in, rc, &op.original, err))
                return rc;
            rc = WF_OK;
            out->outcome = WF_SIGNAL_DUPLICATE;
        } else if (wf_uow_idem_replayed(op.idem)) {
            memset(out, 0, sizeof *out);
            return WF_OK;
        } else if (op.fired) {
            wf_runtime__wake(ctx, op.wake, op.n_wake);
        }
    } else {
        rc = send_aggregate(ctx, &op, out, err);
        if (rc == WF_OK && wf_uow_idem_replayed(op.idem)) {
            memset(out, 0, sizeof *out);
            return WF_OK;
        }
    }
    if (rc == WF_OK && out->outcome == WF_SIGNAL_DUPLICATE)
        return log_duplicate(&op, err); /* found by a lost race */
    return rc;
}
