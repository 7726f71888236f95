/*
 * wf_client: blocking unary and server-streaming calls over grpc core, with
 * identity metadata and decoding of the google.rpc.Status trailer.
 */
#include "wf_client.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "google/protobuf/any.pb-c.h"
#include "google/rpc/error_details.pb-c.h"
#include "google/rpc/status.pb-c.h"
#include "workflow/v1/workflow.pb-c.h"
#include "wf_grpc.h"

struct wf_client {
    grpc_channel *channel;
    char *api_key, *tenant, *actor, *actor_groups;
    int timeout_ms;
    bool wait_for_ready;
};

const char *
wf_client_code_name(int code)
{
    return wf_grpc_code_name(code);
}

static char *
dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

wf_client *
wf_client_new(const wf_client_options *o)
{
    wf_client *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    grpc_init();
    c->api_key = dup_or_null(o->api_key);
    c->tenant = dup_or_null(o->tenant);
    c->actor = dup_or_null(o->actor);
    c->actor_groups = dup_or_null(o->actor_groups);
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    c->wait_for_ready = o->wait_for_ready != 0;
    grpc_channel_credentials *cr =
        o->use_tls ? grpc_ssl_credentials_create(o->tls_roots_pem, NULL, NULL, NULL)
                   : grpc_insecure_credentials_create();
    /* A private subchannel pool: clients made for load tests get their own
     * connection instead of sharing one with every other client. */
    grpc_arg args[4] = {
        {GRPC_ARG_INTEGER, GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, {.integer = 1}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = 64 * 1024 * 1024}},
        {GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, {.integer = 64 * 1024 * 1024}},
    };
    grpc_channel_args cargs = {3, args};
    if (o->use_tls && o->tls_server_name != NULL)
        args[cargs.num_args++] = (grpc_arg){GRPC_ARG_STRING,
                                            GRPC_SSL_TARGET_NAME_OVERRIDE_ARG,
                                            {.string = (char *)o->tls_server_name}};
    c->channel = grpc_channel_create(o->target, cr, &cargs);
    grpc_channel_credentials_release(cr);
    return c;
}

void
wf_client_free(wf_client *c)
{
    if (c == NULL)
        return;
    grpc_channel_destroy(c->channel);
    free(c->api_key);
    free(c->tenant);
    free(c->actor);
    free(c->actor_groups);
    free(c);
    grpc_shutdown();
}

/* Builds the request metadata into md (capacity cap). */
static size_t
build_md(const wf_client *c, const wf_client_call_opts *o, grpc_metadata *md, size_t cap)
{
    size_t n = 0;
    const char *keys[] = {"x-api-key", "x-tenant-id", "x-actor-id", "x-actor-groups"};
    const char *vals[] = {c->api_key, c->tenant, c->actor, c->actor_groups};
    if (o == NULL || !o->no_identity)
        for (int i = 0; i < 4 && n < cap; i++)
            if (vals[i] != NULL) {
                md[n].key = grpc_slice_from_static_string(keys[i]);
                md[n].value = grpc_slice_from_copied_string(vals[i]);
                n++;
            }
    for (size_t i = 0; o != NULL && i < o->nmd && n < cap; i++) {
        md[n].key = grpc_slice_from_copied_string(o->md[i].key);
        md[n].value = grpc_slice_from_copied_string(o->md[i].value);
        n++;
    }
    return n;
}

static void
free_md(grpc_metadata *md, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        grpc_slice_unref(md[i].key);
        grpc_slice_unref(md[i].value);
    }
}

/* Decodes google.rpc.Status from the trailer into st. */
static void
decode_details(const grpc_metadata_array *trailers, wf_client_status *st)
{
    for (size_t i = 0; i < trailers->count; i++) {
        if (grpc_slice_str_cmp(trailers->metadata[i].key, "grpc-status-details-bin") != 0)
            continue;
        const grpc_slice *v = &trailers->metadata[i].value;
        Google__Rpc__Status *s =
            google__rpc__status__unpack(NULL, GRPC_SLICE_LENGTH(*v), GRPC_SLICE_START_PTR(*v));
        if (s == NULL)
            return;
        for (size_t d = 0; d < s->n_details; d++) {
            Google__Protobuf__Any *any = s->details[d];
            if (strcmp(any->type_url, "type.googleapis.com/google.rpc.ErrorInfo") == 0) {
                Google__Rpc__ErrorInfo *info =
                    google__rpc__error_info__unpack(NULL, any->value.len, any->value.data);
                if (info != NULL) {
                    snprintf(st->reason, sizeof st->reason, "%s", info->reason);
                    snprintf(st->domain, sizeof st->domain, "%s", info->domain);
                    st->nmetadata = (int)info->n_metadata;
                    for (size_t k = 0; k < info->n_metadata && k < 8; k++)
                        snprintf(st->metadata[k], sizeof st->metadata[k], "%s=%s",
                                 info->metadata[k]->key, info->metadata[k]->value);
                    google__rpc__error_info__free_unpacked(info, NULL);
                }
            } else if (strcmp(any->type_url, "type.googleapis.com/google.rpc.BadRequest") == 0) {
                Google__Rpc__BadRequest *br =
                    google__rpc__bad_request__unpack(NULL, any->value.len, any->value.data);
                if (br != NULL) {
                    st->nviolations = (int)br->n_field_violations;
                    for (size_t k = 0; k < br->n_field_violations && k < 8; k++) {
                        snprintf(st->violations[k], sizeof st->violations[k], "%s: %s",
                                 br->field_violations[k]->field,
                                 br->field_violations[k]->description);
                        snprintf(st->violation_reasons[k], sizeof st->violation_reasons[k], "%s",
                                 br->field_violations[k]->reason);
                    }
                    google__rpc__bad_request__free_unpacked(br, NULL);
                }
            } else if (strcmp(any->type_url, "type.googleapis.com/google.rpc.RetryInfo") == 0) {
                Google__Rpc__RetryInfo *ri =
                    google__rpc__retry_info__unpack(NULL, any->value.len, any->value.data);
                if (ri != NULL) {
                    if (ri->retry_delay != NULL)
                        st->retry_delay_ms = (int)(ri->retry_delay->seconds * 1000 +
                                                   ri->retry_delay->nanos / 1000000);
                    google__rpc__retry_info__free_unpacked(ri, NULL);
                }
            }
        }
        google__rpc__status__free_unpacked(s, NULL);
        return;
    }
}

/* Wait-for-ready is set explicitly either way, so a service config
 * cannot turn it on behind the caller's back. */
static uint32_t
initial_metadata_flags(const wf_client *c)
{
    return GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET |
           (c->wait_for_ready ? GRPC_INITIAL_METADATA_WAIT_FOR_READY : 0);
}

static gpr_timespec
deadline_of(const wf_client *c, const wf_client_call_opts *o)
{
    if (o != NULL && o->no_deadline)
        return gpr_inf_future(GPR_CLOCK_MONOTONIC);
    if (o != NULL && o->timeout_ms < 0) /* an expired deadline (tests) */
        return gpr_time_sub(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(1, GPR_TIMESPAN));
    int ms = o != NULL && o->timeout_ms > 0 ? o->timeout_ms : c->timeout_ms;
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

int
wf_client_call_raw(wf_client *c, const char *path, const void *body, size_t len,
                   const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                   const wf_client_call_opts *o, wf_client_status *st)
{
    memset(st, 0, sizeof *st);
    if (resp != NULL)
        *resp = NULL;
    grpc_metadata md[16];
    size_t nmd = build_md(c, o, md, 16);
    wf_grpc_unary_req req = {path, deadline_of(c, o), initial_metadata_flags(c), md, nmd, body,
                             len};
    wf_grpc_unary u;
    wf_grpc_unary_call(c->channel, &req, &u);
    free_md(md, nmd);
    if (u.start == GRPC_CALL_OK) {
        st->code = (int)u.status;
        snprintf(st->message, sizeof st->message, "%s", u.message);
        if (u.status != GRPC_STATUS_OK)
            decode_details(&u.trailers, st);
        else if (u.response != NULL && resp != NULL && resp_desc != NULL) {
            *resp = wf_grpc_unpack(u.response, resp_desc);
            if (*resp == NULL) {
                st->code = GRPC_STATUS_INTERNAL;
                snprintf(st->message, sizeof st->message, "could not decode the response");
            }
        }
    } else {
        st->code = GRPC_STATUS_INTERNAL;
        snprintf(st->message, sizeof st->message, "could not start the call (grpc error %d)",
                 (int)u.start);
    }
    wf_grpc_unary_done(&u);
    return st->code;
}

int
wf_client_call(wf_client *c, const char *path, const ProtobufCMessage *req,
               const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
               const wf_client_call_opts *o, wf_client_status *st)
{
    size_t n = protobuf_c_message_get_packed_size(req);
    uint8_t small[512];
    uint8_t *buf = n <= sizeof small ? small : malloc(n);
    if (buf == NULL) {
        memset(st, 0, sizeof *st);
        st->code = GRPC_STATUS_RESOURCE_EXHAUSTED;
        snprintf(st->message, sizeof st->message, "out of memory");
        return st->code;
    }
    protobuf_c_message_pack(req, buf);
    int rc = wf_client_call_raw(c, path, buf, n, resp_desc, resp, o, st);
    if (buf != small)
        free(buf);
    return rc;
}

/* ---- server streams ------------------------------------------------------ */

struct wf_client_stream {
    grpc_completion_queue *cq;
    grpc_call *call;
    grpc_metadata_array initial, trailers;
    grpc_status_code status;
    grpc_slice details;
    int status_started;
    int finished;
    grpc_byte_buffer *recv; /* the RECV_MESSAGE in flight */
    int recv_pending;
};

wf_client_stream *
wf_client_stream_open(wf_client *c, const char *path, const ProtobufCMessage *req,
                      const wf_client_call_opts *o)
{
    wf_client_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_slice method = grpc_slice_from_copied_string(path);
    s->call = grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq, method,
                                       NULL, deadline_of(c, o), NULL);
    grpc_slice_unref(method);
    grpc_metadata_array_init(&s->initial);
    grpc_metadata_array_init(&s->trailers);
    s->details = grpc_empty_slice();

    grpc_metadata md[16];
    size_t nmd = build_md(c, o, md, 16);
    size_t n = protobuf_c_message_get_packed_size(req);
    grpc_slice body = grpc_slice_malloc(n);
    protobuf_c_message_pack(req, GRPC_SLICE_START_PTR(body));
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&body, 1);
    grpc_slice_unref(body);

    grpc_op ops[4];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].flags = initial_metadata_flags(c);
    ops[0].data.send_initial_metadata.count = nmd;
    ops[0].data.send_initial_metadata.metadata = md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->initial;
    grpc_call_error rc = grpc_call_start_batch(s->call, ops, 4, s, NULL);
    free_md(md, nmd);
    if (rc == GRPC_CALL_OK)
        grpc_completion_queue_pluck(s->cq, s, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_byte_buffer_destroy(send);
    if (rc != GRPC_CALL_OK) {
        wf_client_stream_close(s);
        return NULL;
    }
    /* The status op is started now and completes when the stream ends. */
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[0].data.recv_status_on_client.trailing_metadata = &s->trailers;
    ops[0].data.recv_status_on_client.status = &s->status;
    ops[0].data.recv_status_on_client.status_details = &s->details;
    if (grpc_call_start_batch(s->call, ops, 1, &s->status, NULL) == GRPC_CALL_OK)
        s->status_started = 1;
    return s;
}

static void
stream_status(wf_client_stream *s, wf_client_status *st)
{
    memset(st, 0, sizeof *st);
    if (s->status_started && !s->finished) {
        grpc_completion_queue_pluck(s->cq, &s->status, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        s->finished = 1;
    }
    st->code = (int)s->status;
    char *m = grpc_slice_to_c_string(s->details);
    snprintf(st->message, sizeof st->message, "%s", m);
    gpr_free(m);
    if (s->status != GRPC_STATUS_OK)
        decode_details(&s->trailers, st);
}

int
wf_client_stream_next_wait(wf_client_stream *s, const ProtobufCMessageDescriptor *desc,
                           ProtobufCMessage **msg, int wait_ms, wf_client_status *st)
{
    *msg = NULL;
    if (!s->recv_pending) {
        s->recv = NULL;
        grpc_op op;
        memset(&op, 0, sizeof op);
        op.op = GRPC_OP_RECV_MESSAGE;
        op.data.recv_message.recv_message = &s->recv;
        if (grpc_call_start_batch(s->call, &op, 1, &s->recv, NULL) == GRPC_CALL_OK)
            s->recv_pending = 1;
    }
    if (s->recv_pending) {
        gpr_timespec until = wait_ms < 0
                                 ? gpr_inf_future(GPR_CLOCK_REALTIME)
                                 : gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                                gpr_time_from_millis(wait_ms, GPR_TIMESPAN));
        grpc_event ev = grpc_completion_queue_pluck(s->cq, &s->recv, until, NULL);
        if (ev.type == GRPC_QUEUE_TIMEOUT)
            return -1; /* still waiting: the receive stays posted */
        s->recv_pending = 0;
    }
    grpc_byte_buffer *recv = s->recv;
    s->recv = NULL;
    if (recv == NULL) {
        stream_status(s, st);
        return 0;
    }
    *msg = wf_grpc_unpack(recv, desc);
    grpc_byte_buffer_destroy(recv);
    if (*msg == NULL) {
        memset(st, 0, sizeof *st);
        st->code = GRPC_STATUS_INTERNAL;
        snprintf(st->message, sizeof st->message, "could not decode a stream message");
        return 0;
    }
    return 1;
}

int
wf_client_stream_next(wf_client_stream *s, const ProtobufCMessageDescriptor *desc,
                      ProtobufCMessage **msg, wf_client_status *st)
{
    return wf_client_stream_next_wait(s, desc, msg, -1, st);
}

wf_client_stream *
wf_client_stream_jobs(wf_client *c, const struct Workflow__V1__StreamActivatedJobsRequest *req,
                      const wf_client_call_opts *opts)
{
    return wf_client_stream_open(c, "/workflow.v1.WorkflowService/StreamActivatedJobs", &req->base,
                                 opts);
}

int
wf_client_next_job(wf_client_stream *s, int wait_ms, struct Workflow__V1__Job **job,
                   wf_client_status *st)
{
    ProtobufCMessage *m = NULL;
    *job = NULL;
    int r = wf_client_stream_next_wait(s, &workflow__v1__stream_activated_jobs_response__descriptor,
                                       &m, wait_ms, st);
    if (r != 1)
        return r;
    Workflow__V1__StreamActivatedJobsResponse *resp = (void *)m;
    *job = resp->job;
    resp->job = NULL; /* the caller owns the job alone */
    protobuf_c_message_free_unpacked(m, NULL);
    if (*job == NULL) {
        memset(st, 0, sizeof *st);
        st->code = GRPC_STATUS_INTERNAL;
        snprintf(st->message, sizeof st->message, "a stream message without a job");
        return 0;
    }
    return 1;
}

int
wf_client_complete_jobs(wf_client *c, const struct Workflow__V1__CompleteJobsRequest *req,
                        struct Workflow__V1__CompleteJobsResponse **resp,
                        const wf_client_call_opts *opts, wf_client_status *st)
{
    ProtobufCMessage *m = NULL;
    int rc = wf_client_call(c, "/workflow.v1.WorkflowService/CompleteJobs", &req->base,
                            &workflow__v1__complete_jobs_response__descriptor, &m, opts, st);
    *resp = (void *)m;
    return rc;
}

void
wf_client_stream_close(wf_client_stream *s)
{
    if (s == NULL)
        return;
    if (s->call != NULL) {
        grpc_call_cancel(s->call, NULL);
        if (s->recv_pending) {
            grpc_completion_queue_pluck(s->cq, &s->recv, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
            if (s->recv != NULL)
                grpc_byte_buffer_destroy(s->recv);
        }
        if (s->status_started && !s->finished)
            grpc_completion_queue_pluck(s->cq, &s->status, gpr_inf_future(GPR_CLOCK_REALTIME),
                                        NULL);
        grpc_call_unref(s->call);
    }
    grpc_slice_unref(s->details);
    grpc_metadata_array_destroy(&s->initial);
    grpc_metadata_array_destroy(&s->trailers);
    grpc_completion_queue_shutdown(s->cq);
    grpc_completion_queue_pluck(s->cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_completion_queue_destroy(s->cq);
    free(s);
}
