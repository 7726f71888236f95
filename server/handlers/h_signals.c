/*
 * h_signals: SendSignal and ListSignals.
 *
 * Translation only: the rules are in engine/runtime/signals*.c.
 */
#include <string.h>

#include "await.h"
#include "h_common.h"
#include "handlers.h"
#include "signals.h"
#include "wf_time.h"

/* An instance's delivery of a fanned-out signal (the store's states 0,
 * 1, 2 are the enum's 1, 2, 3). */
static Workflow__V1__SignalDelivery *
build_delivery(wf_arena *a, const wf_signal_row *r, bool *oom)
{
    Workflow__V1__SignalDelivery *d = wf_arena_alloc(a, sizeof *d);
    if (d == NULL) {
        *oom = true;
        return NULL;
    }
    workflow__v1__signal_delivery__init(d);
    d->state = (Workflow__V1__SignalDeliveryState)(r->delivery_state + 1);
    if (r->delivery_state == WF_DELIVERY_DELIVERED)
        d->outcome = WORKFLOW__V1__SIGNAL_OUTCOME__SIGNAL_OUTCOME_CORRELATED;
    d->delivered_at = wf_h_timestamp(a, r->delivered_at, oom);
    d->signal_log_id = r->id;
    return d;
}

/* One delivery-log row as a Workflow__V1__Signal. */
static Workflow__V1__Signal *
build_signal(wf_arena *a, const wf_signal_row *r)
{
    bool oom = false;
    Workflow__V1__Signal *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__signal__init(m);
    m->id = r->id;
    m->name = r->name;
    if (r->instance_id != NULL)
        m->instance_id = r->instance_id;
    if (r->aggregate_type != NULL) {
        Workflow__V1__Aggregate *g = wf_arena_alloc(a, sizeof *g);
        if (g == NULL)
            return NULL;
        workflow__v1__aggregate__init(g);
        g->type = r->aggregate_type;
        g->id = r->aggregate_id != NULL ? r->aggregate_id : (char *)protobuf_c_empty_string;
        m->aggregate = g;
    }
    m->payload_json = r->payload_json != NULL ? r->payload_json : "{}";
    m->outcome = (Workflow__V1__SignalOutcome)r->outcome;
    m->received_at = wf_h_timestamp(a, r->received_at, &oom);
    m->consumed_at = wf_h_timestamp(a, r->consumed_at, &oom);
    if (r->consumed_by_instance != NULL)
        m->consumed_by_instance = r->consumed_by_instance;
    if (r->transition_id != NULL)
        m->transition_id = r->transition_id;
    m->expires_at = wf_h_timestamp(a, r->expires_at, &oom);
    if (r->signal_id != NULL)
        m->signal_id = r->signal_id;
    /* Its TTL ran out unconsumed: consuming needs expires_at > now, so the
     * answer holds whether or not the scheduler has marked it yet. */
    m->expired = (r->outcome == WF_SIGNAL_BUFFERED || r->outcome == WF_SIGNAL_STARTED) &&
                 r->consumed_at == 0 && r->expires_at > 0 && r->expires_at <= wf_now_us();
    if (r->delivery)
        m->delivery = build_delivery(a, r, &oom);
    return oom ? NULL : m;
}

Workflow__V1__Signal **
wf_h_signals(wf_arena *a, const wf_signal_row *rows, size_t n)
{
    Workflow__V1__Signal **v = wf_arena_calloc(a, n + 1, sizeof *v);
    for (size_t i = 0; v != NULL && i < n; i++)
        if ((v[i] = build_signal(a, &rows[i])) == NULL)
            return NULL;
    return v;
}

/* ---- SendSignal ------------------------------------------------------------------------------ */

static ProtobufCMessage *
build_send(wf_arena *a, const void *result)
{
    const wf_runtime_send_signal_out *r = result;
    bool oom = false;
    Workflow__V1__SendSignalResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__send_signal_response__init(m);
    m->outcome = (Workflow__V1__SignalOutcome)r->outcome;
    m->instance_ids = wf_arena_calloc(a, r->n_instance_ids + 1, sizeof *m->instance_ids);
    if (m->instance_ids == NULL)
        return NULL;
    for (size_t i = 0; i < r->n_instance_ids; i++)
        m->instance_ids[i] = (char *)r->instance_ids[i];
    m->n_instance_ids = r->n_instance_ids;
    m->expires_at = wf_h_timestamp(a, r->expires_at, &oom);
    m->instance_count = r->instance_count;
    m->deliveries_pending = r->deliveries_pending;
    return oom ? NULL : &m->base;
}

static const wf_h_builder send_builder = {build_send,
                                          &workflow__v1__send_signal_response__descriptor};

/* await_result: only for an instance_id target; the condition, timeout
 * and names (against the instance's net) are checked before any delivery. */
static wf_code
send_await_check(wf_call *call, const Workflow__V1__SendSignalRequest *req, void **wait,
                 wf_error *err)
{
    if (req->target_case != WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID ||
        req->instance_id[0] == '\0') {
        wf_h_violation_coded(call, "await_result", wf_code_reason(WF_E_AWAIT_NEEDS_ONE_INSTANCE),
                             "await_result needs an instance_id target");
        return wf_error_set(err, WF_E_AWAIT_NEEDS_ONE_INSTANCE,
                            "await_result needs an instance_id target: an aggregate may reach "
                            "many instances");
    }
    const Workflow__V1__AwaitResult *aw = req->await_result;
    wf_code rc = wf_h_await_parse(call, "await_result", aw->until, aw->timeout, wait, err);
    Workflow__V1__GetInstanceResponse *view;
    wf_instance_view iv;
    if (rc == WF_OK && wf_await_until_names(wf_h_await_until(*wait)))
        rc = wf_h_instance_view(call, call->arena, req->instance_id, &view, &iv, err);
    if (rc == WF_OK && wf_await_until_names(wf_h_await_until(*wait)))
        rc = wf_await_check_net(iv.net.is_net ? iv.net.net : NULL, wf_h_await_until(*wait), err);
    return rc;
}

wf_code
h_send_signal(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__SendSignalRequest *req = (const void *)msg;
    wf_runtime_ctx ctx;
    wf_uow_idem idem;
    wf_runtime_send_signal_out out;
    wf_h_net_ctx(call, &ctx);
    if (req->start == NULL)
        ctx.ref.actor = NULL; /* no actor needed; events carry none */
    bool by_agg = req->target_case == WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
    wf_start_spec start = {0};
    if (req->start != NULL) {
        start.definition_key = req->start->definition_key;
        start.version = req->start->version;
        start.variables_json = req->start->variables_json;
    }
    wf_runtime_send_signal_in in = {
        .name = req->name,
        .instance_id = req->target_case == WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_INSTANCE_ID
                           ? req->instance_id
                           : NULL,
        .has_aggregate = by_agg,
        .aggregate_type = by_agg && req->aggregate != NULL ? req->aggregate->type : NULL,
        .aggregate_id = by_agg && req->aggregate != NULL ? req->aggregate->id : NULL,
        .payload_json = req->payload_json,
        .signal_id = req->signal_id,
        .buffer_ttl_ms = req->buffer_ttl != NULL ? wf_h_duration_ms(req->buffer_ttl) : 0,
        .start = req->start != NULL ? &start : NULL,
    };
    if (req->buffer_ttl != NULL && (req->buffer_ttl->seconds < 0 || req->buffer_ttl->nanos < 0))
        in.buffer_ttl_ms = -1;
    /* An empty instance_id is an unset target: the engine names "target". */
    if (in.instance_id != NULL && in.instance_id[0] != '\0' &&
        wf_ids_check(&ctx.ref, WF_ID_INSTANCE, "instance_id", in.instance_id, err) != WF_OK)
        return err->code;
    void *wait = NULL;
    wf_code rc = req->await_result != NULL ? send_await_check(call, req, &wait, err) : WF_OK;
    if (rc == WF_OK)
        rc = wf_h_idem(call, msg, req->request_id, &send_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_runtime_send_signal(&ctx, &in, &idem, &out, err);
    rc = wf_h_respond(call, rc, &idem, &send_builder, &out, resp, err);
    if (rc == WF_OK && wait != NULL)
        wf_h_await_park(call, wait, req->instance_id, *resp);
    return rc;
}

/* ---- ListSignals ------------------------------------------------------------------------------
 */

wf_code
h_list_signals(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__ListSignalsRequest *req = (const void *)msg;
    wf_runtime_ctx ctx;
    wf_h_net_ctx(call, &ctx);
    bool by_agg = req->target_case == WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_AGGREGATE;
    wf_runtime_list_signals_in q = {
        .instance_id = req->target_case == WORKFLOW__V1__LIST_SIGNALS_REQUEST__TARGET_INSTANCE_ID
                           ? req->instance_id
                           : NULL,
        .has_aggregate = by_agg,
        .aggregate_type = by_agg && req->aggregate != NULL ? req->aggregate->type : NULL,
        .aggregate_id = by_agg && req->aggregate != NULL ? req->aggregate->id : NULL,
        .name = req->name,
        .page_size = req->page_size,
    };
    wf_signal_row *rows = NULL;
    size_t n = 0;
    char *next = NULL;
    wf_code rc = wf_h_page_in(call, msg, req->page_token, &q.cursor, err);
    if (rc == WF_OK)
        rc = wf_runtime_list_signals(&ctx, &q, &rows, &n, &next, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__ListSignalsResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__list_signals_response__init(m);
    m->signals = wf_h_signals(call->arena, rows, n);
    m->n_signals = n;
    m->next_page_token = wf_h_page_out(call, msg, next);
    if (m->signals == NULL || m->next_page_token == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < n; i++) {
        wf_delivery_counts c;
        if (!wf_runtime_signal_fanned_out(&rows[i]))
            continue;
        rc = wf_runtime_signal_deliveries(&ctx.ref, rows[i].id, &c, err);
        if (rc != WF_OK)
            return rc;
        m->signals[i]->deliveries_pending = c.pending;
        m->signals[i]->deliveries_delivered = c.delivered;
        m->signals[i]->deliveries_skipped = c.skipped;
    }
    *resp = &m->base;
    return WF_OK;
}
