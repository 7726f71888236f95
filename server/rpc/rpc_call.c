/*
 * rpc_call.c: a call from arrival to its final status: call contexts,
 * request slots, protobuf <-> byte buffers, finishing a call, dispatch to
 * the handler table, and the worker threads (rpc_server.c explains the
 * design).
 */
#include "rpc_server_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "expr.h"
#include "grpc/health/v1/health.pb-c.h"
#include "rpc_status.h"
#include "rpc_wire.h"
#include "wf_bulkhead.h"
#include "wf_log.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

/* ---- call contexts ------------------------------------------------------ */

static void
call_free(struct call *c)
{
    grpc_metadata_array_destroy(&c->md);
    if (c->m == NULL)
        grpc_call_details_destroy(&c->details);
    if (c->payload != NULL)
        grpc_byte_buffer_destroy(c->payload);
    if (c->send != NULL)
        grpc_byte_buffer_destroy(c->send);
    if (c->recv != NULL)
        grpc_byte_buffer_destroy(c->recv);
    if (c->sops != NULL && c->sops->close != NULL)
        c->sops->close(c->sstate);
    if (c->call != NULL)
        grpc_call_unref(c->call);
    wf_arena_free(c->arena);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Posts one request slot for method m (NULL = catch-all) on queue q. */
void
wf_rpc__post_slot(struct queue *q, const wf_rpc_method *m)
{
    struct call *c = calloc(1, sizeof *c);
    if (c == NULL) {
        WF_LOG(WF_LOG_ERROR, "rpc_slot", "out of memory posting a request slot");
        return;
    }
    c->q = q;
    c->m = m;
    pthread_mutex_init(&c->mu, NULL);
    c->t_new = (struct tag){c, T_NEW};
    c->t_batch = (struct tag){c, T_BATCH};
    c->t_close = (struct tag){c, T_CLOSE};
    c->t_wake = (struct tag){c, T_WAKE};
    c->t_recv = (struct tag){c, T_RECV};
    c->t_dispatch = (struct tag){c, T_DISPATCH};
    grpc_metadata_array_init(&c->md);
    grpc_call_error rc;
    if (m != NULL) {
        /* Bidi methods read their messages themselves (no initial payload). */
        grpc_byte_buffer **payload = m->kind == WF_RPC_REFLECTION ? NULL : &c->payload;
        rc = grpc_server_request_registered_call(q->srv->server, m->handle, &c->call, &c->deadline,
                                                 &c->md, payload, q->cq, q->notify, &c->t_new);
    } else {
        grpc_call_details_init(&c->details);
        rc = grpc_server_request_call(q->srv->server, &c->call, &c->details, &c->md, q->cq,
                                      q->notify, &c->t_new);
    }
    if (rc != GRPC_CALL_OK) {
        WF_LOG(WF_LOG_ERROR, "rpc_slot", "could not post a request slot (grpc error %d)", (int)rc);
        call_free(c);
        return;
    }
    c->pending = 1;
}

/* Starts a batch on c under its mutex; counts the tag when it was started.
 * Never starts anything once the server is quiescing. */
int
wf_rpc__start_batch_locked(struct call *c, const grpc_op *ops, size_t nops, struct tag *tag)
{
    if (atomic_load(&c->q->srv->quiescing))
        return 0;
    grpc_call_error rc = grpc_call_start_batch(c->call, ops, nops, tag, NULL);
    if (rc != GRPC_CALL_OK) {
        WF_LOG(WF_LOG_ERROR, "rpc_batch", "could not start a batch (grpc error %d)", (int)rc);
        return 0;
    }
    c->pending++;
    return 1;
}

/* ---- protobuf <-> byte buffers ------------------------------------------ */

/* Decodes the request into the call's arena: WF_OK with *msg, or
 * INVALID_ARGUMENT for malformed bytes, excessive nesting, strings that are
 * not UTF-8 or hold a NUL, wrong wire types or out-of-range Durations and
 * Timestamps (rpc_wire.c, before protobuf-c, which trusts all of them;
 * *bad then names the field). */
static wf_code
unpack(struct call *c, const ProtobufCMessageDescriptor *d, ProtobufCMessage **msg,
       wf_violation *bad, wf_error *err)
{
    grpc_byte_buffer_reader r;
    if (!grpc_byte_buffer_reader_init(&r, c->payload))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "the request could not be read");
    grpc_slice all = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    const uint8_t *bytes = GRPC_SLICE_START_PTR(all);
    size_t len = GRPC_SLICE_LENGTH(all);
    wf_code rc = wf_rpc_wire_check(d, bytes, len, WF_RPC_MAX_DEPTH, c->arena, bad, err);
    if (rc == WF_OK) {
        ProtobufCAllocator a = wf_arena_pb_allocator(c->arena);
        *msg = protobuf_c_message_unpack(d, &a, len, bytes);
        if (*msg == NULL)
            rc = wf_error_set(err, WF_E_INVALID_ARGUMENT, "the request is not a valid %s message",
                              d->name);
    }
    grpc_slice_unref(all);
    return rc;
}

grpc_byte_buffer *
wf_rpc__pack(const ProtobufCMessage *msg)
{
    return wf_rpc__pack_answer(NULL, msg, NULL);
}

/* The handlers bound what they answer (pages, activations, GetInstance)
 * within the send limit; this is the backstop for the rest: an answer the
 * client's receive limit would refuse is not sent. */
grpc_byte_buffer *
wf_rpc__pack_answer(struct call *c, const ProtobufCMessage *msg, wf_error *err)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    const wf_config *cfg = c != NULL ? c->q->srv->app->cfg : NULL;
    if (cfg != NULL && n > (size_t)wf_config_send_limit(cfg)) {
        wf_error_set(err, WF_E_TOO_LARGE,
                     "the answer takes %zu bytes, more than WF_MAX_ANSWER_BYTES (%d) lets the "
                     "server send",
                     n, wf_config_send_limit(cfg));
        return NULL;
    }
    grpc_slice s = grpc_slice_malloc(n);
    protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(s));
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    return bb;
}

/* ---- the ids a call concerns ------------------------------------------------ */

static const char *const id_fields[3] = {"instance_id", "task_id", "job_key"};

/* The non-empty string field name of msg, or NULL. */
static const char *
string_field(const ProtobufCMessage *msg, const char *name)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, name);
    if (f == NULL || f->type != PROTOBUF_C_TYPE_STRING || f->label == PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        const uint32_t *which = (const void *)((const char *)msg + f->quantifier_offset);
        if (*which != f->id)
            return NULL;
    }
    const char *v = *(const char *const *)(const void *)((const char *)msg + f->offset);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* Notes the ids msg names (a request's fields; a response's "instance",
 * "task" or "job" message and its id or key) where none is known yet. */
static void
note_ids(struct call *c, const ProtobufCMessage *msg, bool response)
{
    static const char *const parts[3][2] = {{"instance", "id"}, {"task", "id"}, {"job", "key"}};
    for (int i = 0; msg != NULL && i < 3; i++) {
        if (c->ids[i] != NULL)
            continue;
        if (!response) {
            c->ids[i] = string_field(msg, id_fields[i]);
            continue;
        }
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, parts[i][0]);
        if (f == NULL || f->type != PROTOBUF_C_TYPE_MESSAGE ||
            f->label == PROTOBUF_C_LABEL_REPEATED)
            continue;
        const ProtobufCMessage *sub =
            *(const ProtobufCMessage *const *)(const void *)((const char *)msg + f->offset);
        if (sub != NULL)
            c->ids[i] = string_field(sub, parts[i][1]);
    }
}

/* ---- finishing a call ----------------------------------------------------- */

static const char *
call_path(struct call *c)
{
    if (c->m != NULL)
        return c->m->path;
    char *p = wf_arena_strndup(c->arena, (const char *)GRPC_SLICE_START_PTR(c->details.method),
                               GRPC_SLICE_LENGTH(c->details.method));
    return p != NULL ? p : "?";
}

static size_t
method_index(const struct call *c)
{
    return c->m != NULL ? (size_t)(c->m - c->q->srv->methods) : c->q->srv->nmethods;
}

/* The end of a call, whatever its outcome: one access-log line and the
 * handled counters. Runs exactly once per call. */
void
wf_rpc__call_done(struct call *c, grpc_status_code status, wf_code code)
{
    if (c->done)
        return;
    c->done = 1;
    double secs = (double)(wf_now_us() - c->start_us) / 1e6;
    wf_rpc_metrics_handled(c->q->srv->metrics, method_index(c), status, secs);
    wf_log_level lvl = code == WF_E_INTERNAL ? WF_LOG_ERROR : WF_LOG_INFO;
    if (lvl < wf_log_threshold)
        return;
    wf_log_line l;
    wf_log_line_begin(&l, lvl, "rpc");
    wf_log_line_str(&l, "method", call_path(c));
    wf_log_line_str(&l, "code", wf_rpc_code_name(status));
    if (code != WF_OK)
        wf_log_line_str(&l, "reason", wf_code_reason(code));
    wf_log_line_double(&l, "dur_ms", secs * 1000.0);
    wf_log_line_str(&l, "tenant", c->ictx.tenant);
    wf_log_line_str(&l, "actor", c->ictx.actor);
    wf_log_line_str(&l, "key_id", c->ictx.key_id);
    wf_log_line_str(&l, "request_id", c->ictx.request_id);
    wf_log_line_str(&l, "trace_id", c->ictx.trace_id);
    for (int i = 0; i < 3; i++)
        wf_log_line_str(&l, id_fields[i], c->ids[i]);
    wf_log_line_end(&l);
}

/* Fills the response's initial metadata: x-request-id echoes the request id
 * (sent or generated). Returns the count; *rid must be unref'd after the
 * batch has started. */
size_t
wf_rpc__initial_metadata(struct call *c, grpc_metadata md[1], grpc_slice *rid)
{
    *rid = grpc_empty_slice();
    if (c->ictx.request_id == NULL)
        return 0;
    *rid = grpc_slice_from_copied_string(c->ictx.request_id);
    md[0].key = grpc_slice_from_static_string("x-request-id");
    md[0].value = *rid;
    return 1;
}

/* Fills a SEND_STATUS_FROM_SERVER op: the status, its message and, for a
 * core error, the google.rpc.Status trailer. *msg and *details must be
 * unref'd after the batch has started. */
void
wf_rpc__status_op(struct call *c, grpc_op *op, grpc_status_code status, wf_code code,
                  const char *message, const wf_violation *violations, size_t nviolations,
                  grpc_slice *msg, grpc_metadata trailer[1], grpc_slice *details)
{
    *msg = grpc_empty_slice();
    *details = grpc_empty_slice();
    op->op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    op->data.send_status_from_server.status = status;
    if (status != GRPC_STATUS_OK) {
        *msg = grpc_slice_from_copied_string(message);
        op->data.send_status_from_server.status_details = msg;
    }
    if (code == WF_OK)
        return;
    uint8_t *bytes = NULL;
    size_t len = wf_rpc_status_details(c->arena, code, message, violations, nviolations, &bytes);
    if (len == 0)
        return;
    *details = grpc_slice_from_copied_buffer((const char *)bytes, len);
    trailer[0].key = grpc_slice_from_static_string("grpc-status-details-bin");
    trailer[0].value = *details;
    op->data.send_status_from_server.trailing_metadata_count = 1;
    op->data.send_status_from_server.trailing_metadata = trailer;
}

/* Sends the final batch of a unary call: the response when status is OK,
 * otherwise the status with its message and, when code is a core error,
 * the google.rpc.Status trailer. */
void
wf_rpc__finish_with(struct call *c, const ProtobufCMessage *resp, grpc_status_code status,
                    wf_code code, const char *message, const wf_violation *violations,
                    size_t nviolations)
{
    grpc_op ops[4];
    memset(ops, 0, sizeof ops);
    size_t n = 0;

    grpc_metadata initial[1];
    grpc_slice rid = grpc_empty_slice();
    if (!c->started) {
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[n].data.send_initial_metadata.count = wf_rpc__initial_metadata(c, initial, &rid);
        ops[n].data.send_initial_metadata.metadata = initial;
        n++;
        c->started = 1;
    }

    wf_error too_large;
    grpc_byte_buffer *bb = NULL;
    if (status == GRPC_STATUS_OK && resp != NULL) {
        bb = wf_rpc__pack_answer(c, resp, &too_large);
        if (bb == NULL) {
            code = too_large.code;
            status = wf_rpc_status_code(code);
            message = too_large.msg;
            violations = NULL;
            nviolations = 0;
        }
    }
    if (bb != NULL) {
        c->send = bb;
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->send;
        n++;
    }

    grpc_slice msg, details;
    grpc_metadata trailer[1];
    wf_rpc__status_op(c, &ops[n++], status, code, message, violations, nviolations, &msg, trailer,
                      &details);

    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n].data.recv_close_on_server.cancelled = &c->cancelled;
    n++;

    /* Counted and logged before the answer can reach the client: a caller
     * that reads /metrics right after its answer sees its call. */
    wf_rpc__call_done(c, status, code);
    pthread_mutex_lock(&c->mu);
    wf_rpc__start_batch_locked(c, ops, n, &c->t_batch);
    pthread_mutex_unlock(&c->mu);
    /* Core took its own references during start_batch. */
    grpc_slice_unref(rid);
    grpc_slice_unref(msg);
    grpc_slice_unref(details);
}

void
wf_rpc__finish_unary(struct call *c, const ProtobufCMessage *resp, const wf_error *err,
                     const wf_violation *violations, size_t nviolations)
{
    wf_rpc__finish_with(c, resp, wf_rpc_status_code(err->code), err->code, err->msg, violations,
                        nviolations);
}

/* ---- dispatch ------------------------------------------------------------- */

/* wf_call.status_code: the one mapping of rpc_status.c. */
static int
status_code_of(wf_code code)
{
    return (int)wf_rpc_status_code(code);
}

static void
dispatch(struct call *c)
{
    wf_rpc_server *srv = c->q->srv;
    const wf_config *cfg = srv->app->cfg;
    wf_error err;
    wf_error_clear(&err);
    c->start_us = wf_now_us();
    wf_rpc_metrics_started(srv->metrics, method_index(c));
    c->arena = wf_arena_new();
    if (c->arena == NULL) {
        /* Nothing can be built without memory: cancel with a static status. */
        grpc_call_cancel_with_status(c->call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory",
                                     NULL);
        return;
    }
    c->ictx.cfg = cfg;
    c->ictx.md = &c->md;
    c->ictx.arena = c->arena;
    c->ictx.deadline = c->m != NULL ? c->deadline : c->details.deadline;
    c->ictx.public_method = c->m == NULL || c->m->kind != WF_RPC_WORKFLOW;
    c->ictx.route_flags = c->m != NULL && c->m->route != NULL ? c->m->route->flags : 0;

    if (c->m == NULL) {
        wf_rpc_intercept(&c->ictx, &err); /* for the request id in the log only */
        wf_error_set(&err, WF_E_UNIMPLEMENTED, "method %s is not served here", call_path(c));
        wf_rpc__finish_unary(c, NULL, &err, NULL, 0);
        return;
    }
    if (wf_rpc_intercept(&c->ictx, &err) != WF_OK) {
        wf_rpc__finish_unary(c, NULL, &err, NULL, 0);
        return;
    }
    if (c->m->kind == WF_RPC_REFLECTION) {
        wf_rpc__reflection_start(c);
        return;
    }
    if (c->payload == NULL) {
        wf_error_set(&err, WF_E_INVALID_ARGUMENT, "the request message is missing");
        wf_rpc__finish_unary(c, NULL, &err, NULL, 0);
        return;
    }
    if (grpc_byte_buffer_length(c->payload) > (size_t)cfg->max_message_bytes) {
        wf_error_set(&err, WF_E_TOO_LARGE, "the request is larger than %d bytes",
                     cfg->max_message_bytes);
        wf_rpc__finish_unary(c, NULL, &err, NULL, 0);
        return;
    }
    ProtobufCMessage *req = NULL;
    wf_violation bad;
    if (unpack(c, c->m->input, &req, &bad, &err) != WF_OK) {
        wf_rpc__finish_unary(c, NULL, &err, &bad, bad.field != NULL ? 1 : 0);
        return;
    }

    switch (c->m->kind) {
    case WF_RPC_HEALTH_CHECK: {
        const Grpc__Health__V1__HealthCheckRequest *hreq = (const void *)req;
        enum health_service s = wf_rpc__health_service_of(hreq->service);
        if (s == HS_UNKNOWN) {
            /* The health protocol answers NOT_FOUND, without our error
             * details: it is grpc's contract, not workflow.v1's. */
            char msg[160];
            snprintf(msg, sizeof msg, "unknown service \"%.100s\"", hreq->service);
            wf_rpc__finish_with(c, NULL, GRPC_STATUS_NOT_FOUND, WF_OK, msg, NULL, 0);
            return;
        }
        Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
        resp.status = wf_rpc__health_status(srv, s);
        wf_rpc__finish_unary(c, &resp.base, &err, NULL, 0);
        return;
    }
    case WF_RPC_HEALTH_WATCH: {
        const Grpc__Health__V1__HealthCheckRequest *hreq = (const void *)req;
        struct health_watch *hw = wf_arena_alloc(c->arena, sizeof *hw);
        if (hw == NULL) {
            wf_error_nomem(&err);
            wf_rpc__finish_unary(c, NULL, &err, NULL, 0);
            return;
        }
        hw->srv = srv;
        hw->service = wf_rpc__health_service_of(hreq->service);
        hw->sent = -1;
        c->scall.wake_topic = TOPIC_HEALTH;
        wf_rpc__stream_start(c, &wf_rpc__health_watch_ops, hw);
        return;
    }
    case WF_RPC_REFLECTION: /* handled above */
    case WF_RPC_WORKFLOW:
        break;
    }
    note_ids(c, req, false);

    wf_call *call = &c->scall;
    *call = (wf_call){
        .app = srv->app,
        .arena = c->arena,
        .method = c->m->route->method,
        .tenant = c->ictx.tenant,
        .actor = c->ictx.actor,
        .actor_groups = c->ictx.actor_groups,
        .request_id = c->ictx.request_id,
        .deadline_ms = c->ictx.deadline_ms,
        .status_code = status_code_of,
    };
    /* A route with both a handler and stream ops runs the handler, which
     * may park the call on the stream ops (wf_call.park_state). */
    const wf_stream_ops *sops = c->m->route->fn == NULL ? c->m->route->stream : NULL;
    /* Expression work of the handler waits for a worker no longer than the
     * call may run; work of a bulkhead gives this thread's seat away. */
    wf_expr_set_call_deadline(c->ictx.deadline_ms);
    wf_rpc__handler_begin(srv);
    if (sops != NULL) {
        void *state = NULL;
        wf_code orc = sops->open(call, req, &state, &err);
        wf_rpc__handler_end();
        wf_expr_set_call_deadline(0);
        if (orc != WF_OK) {
            wf_rpc__finish_unary(c, NULL, &err, call->violations, call->nviolations);
            return;
        }
        wf_rpc__stream_start(c, sops, state);
        return;
    }
    ProtobufCMessage *resp = NULL;
    wf_code rc = c->m->route->fn(call, req, &resp, &err);
    wf_rpc__handler_end();
    wf_expr_set_call_deadline(0);
    if (rc == WF_OK)
        note_ids(c, resp, true);
    if (rc == WF_OK && call->park_state != NULL && c->m->route->stream != NULL) {
        /* Answered later, from a wake-up: the call holds no thread meanwhile. */
        wf_rpc__stream_start(c, c->m->route->stream, call->park_state);
        return;
    }
    if (rc == WF_OK && resp == NULL)
        wf_error_set(&err, WF_E_INTERNAL, "the handler of %s produced no response", call->method);
    else if (rc == WF_OK)
        wf_error_clear(&err);
    else if (err.code != rc)
        wf_error_set(&err, rc, "%s", err.msg[0] ? err.msg : wf_code_reason(rc));
    wf_rpc__finish_unary(c, resp, &err, call->violations, call->nviolations);
}

/* ---- admission ------------------------------------------------------------ */

/* Answers c RESOURCE_EXHAUSTED OVERLOADED without running anything of it:
 * no interceptor, no unpacking, no handler. */
static void
refuse(struct call *c)
{
    wf_rpc_server *srv = c->q->srv;
    c->start_us = wf_now_us();
    wf_rpc_metrics_started(srv->metrics, method_index(c));
    wf_rpc_metrics_refused(srv->metrics);
    c->arena = wf_arena_new();
    if (c->arena == NULL) {
        grpc_call_cancel_with_status(c->call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory",
                                     NULL);
        return;
    }
    char msg[128];
    snprintf(msg, sizeof msg, "the server is overloaded (%d calls wait for a thread); retry later",
             srv->max_queued);
    wf_rpc__finish_with(c, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, WF_E_OVERLOADED, msg, NULL, 0);
}

/* On the accept thread: hands c to the pool (an empty batch whose tag,
 * T_DISPATCH, comes back on the pool queue), or refuses it when the pool's
 * queue is full. */
static void
admit(struct call *c)
{
    wf_rpc_server *srv = c->q->srv;
    if (wf_rpc_metrics_enqueue(srv->metrics) >= srv->max_queued) {
        wf_rpc_metrics_dequeue(srv->metrics);
        refuse(c);
        return;
    }
    pthread_mutex_lock(&c->mu);
    int ok = wf_rpc__start_batch_locked(c, NULL, 0, &c->t_dispatch);
    pthread_mutex_unlock(&c->mu);
    if (!ok)
        wf_rpc_metrics_dequeue(srv->metrics);
}

/* ---- seats ---------------------------------------------------------------- */

/* The worker of the calling thread (NULL outside the server's threads). */
static _Thread_local struct worker *self;

int
wf_rpc__nthreads(const wf_rpc_server *srv)
{
    return srv->nworkers + srv->nspares + 2;
}

/* Waits until the pool has a free seat, then takes it. Once quiescing,
 * takes one at once: the thread only drains its queue from then on. */
static void
take_seat(wf_rpc_server *srv, struct worker *w)
{
    pthread_mutex_lock(&srv->seat_mu);
    while (srv->seated >= srv->nworkers && !atomic_load(&srv->quiescing)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += POLL_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&srv->seat_cv, &srv->seat_mu, &until);
    }
    if (atomic_load(&srv->quiescing))
        atomic_store(&w->quiesced, 1);
    srv->seated++;
    w->seated = 1;
    pthread_mutex_unlock(&srv->seat_mu);
}

/* The hand-off of a call that joins a bulkhead (core/wf_bulkhead.h): its
 * thread gives its seat to a spare and carries on with the call; it takes
 * a seat again once the call is over. */
static void
give_seat(void *arg)
{
    struct worker *w = arg;
    wf_rpc_server *srv = w->q->srv;
    pthread_mutex_lock(&srv->seat_mu);
    if (w->seated) {
        w->seated = 0;
        srv->seated--;
        pthread_cond_signal(&srv->seat_cv);
    }
    pthread_mutex_unlock(&srv->seat_mu);
}

void
wf_rpc__handler_begin(wf_rpc_server *srv)
{
    struct worker *w = self != NULL && self->q == &srv->pool ? self : NULL;
    wf_bulkhead_call_begin(w != NULL ? give_seat : NULL, w);
}

void
wf_rpc__handler_end(void)
{
    wf_bulkhead_call_end();
}

/* ---- workers -------------------------------------------------------------- */

/* Handles one event of c. Its tag stays counted in c->pending while it is
 * handled: another thread taking another event of the same call cannot free
 * it meanwhile. */
static void
on_event(struct tag *t, int ok)
{
    struct call *c = t->call;
    wf_rpc_server *srv = c->q->srv;
    int quiescing = atomic_load(&srv->quiescing);

    if (t->kind == T_NEW) {
        /* ok == 0: a slot given back at shutdown (no call attached). */
        if (ok && !quiescing) {
            /* The next call of this method is matched at once, to whichever
             * thread of the queue is idle. */
            if (atomic_load(&srv->accepting))
                wf_rpc__post_slot(c->q, c->m);
            if (c->q == &srv->pool)
                admit(c); /* on the accept thread */
            else
                dispatch(c);
        }
    } else if (t->kind == T_DISPATCH) {
        wf_rpc_metrics_dequeue(srv->metrics);
        if (ok && !quiescing)
            dispatch(c);
    } else if (t->kind == T_RECV) {
        if (!quiescing)
            wf_rpc__reflection_step(c, ok);
    } else if (t->kind == T_CLOSE) {
        wf_rpc__stream_unlist(c); /* before taking c->mu: lock order is hmu → c->mu */
        pthread_mutex_lock(&c->mu);
        c->closed = 1;
        /* A stream that never sent its status was cancelled: by the client,
         * its deadline, or the shutdown. */
        if (c->sops != NULL && !c->ended)
            wf_rpc__call_done(c, GRPC_STATUS_CANCELLED, WF_E_CANCELLED);
        pthread_mutex_unlock(&c->mu);
    } else {
        pthread_mutex_lock(&c->mu);
        if (t->kind == T_BATCH)
            c->sending = 0;
        else
            c->wake_inflight = 0;
        int pull = c->sops != NULL && (ok || t->kind == T_WAKE);
        pthread_mutex_unlock(&c->mu);
        if (pull)
            wf_rpc__stream_pull(c);
    }

    pthread_mutex_lock(&c->mu);
    int done = --c->pending == 0;
    pthread_mutex_unlock(&c->mu);
    if (done)
        call_free(c);
}

void *
wf_rpc__worker_main(void *arg)
{
    struct worker *w = arg;
    wf_rpc_server *srv = w->q->srv;
    self = w;
    for (;;) {
        /* Between two events: from here on this thread is in no handler. */
        if (atomic_load(&srv->quiescing))
            atomic_store(&w->quiesced, 1);
        if (w->q == &srv->pool && !w->seated)
            take_seat(srv, w);
        gpr_timespec until =
            gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(POLL_MS, GPR_TIMESPAN));
        grpc_event ev = grpc_completion_queue_next(w->q->cq, until, NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type == GRPC_QUEUE_TIMEOUT)
            continue;
        on_event(ev.tag, ev.success);
    }
    return NULL;
}
