/*
 * h_jobs: ActivateJobs (a long poll), CompleteJob, FailJob and
 * ExtendJobLease, UpdateJob.
 *
 * ActivateJobs runs on the stream machinery as a unary long poll
 * (wf_stream_ops.unary): each step is one activation pass; when it leases
 * nothing and the wait is not over, the step parks the call on the topic
 * "jobs:<type>" (woken in-process when a job of the type becomes
 * activatable here, and across replicas through the store's
 * notifications) and also asks to be run again within a second, since an
 * expired lease or a retry backoff running out notifies nobody. A worker
 * thread is never blocked.
 *
 * Workers are services, not people: events written for job calls carry
 * no actor. Translation only; the rules are in
 * engine/runtime/net_runtime_jobs.c.
 */
#include <string.h>

#include "h_common.h"
#include "handlers.h"
#include "wf_time.h"

/* Longest pause between two activation passes of a waiting call. */
#define RECHECK_MS 1000
/* A long poll answers this long before the call's deadline. */
#define DEADLINE_MARGIN_MS 200

static wf_code
invalid(wf_call *call, const char *field, const char *msg, wf_error *err)
{
    wf_h_violation(call, field, msg);
    return wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s %s", field, msg);
}

/* ---- ActivateJobs ------------------------------------------------------------------------- */

typedef wf_runtime_activated activation_result;

static ProtobufCMessage *
build_activate(wf_arena *a, const void *result)
{
    const activation_result *r = result;
    Workflow__V1__ActivateJobsResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__activate_jobs_response__init(m);
    m->jobs = wf_arena_calloc(a, r->n + 1, sizeof *m->jobs);
    if (m->jobs == NULL)
        return NULL;
    for (size_t i = 0; i < r->n; i++)
        if ((m->jobs[i] = wf_h_job(a, &r->rows[i])) == NULL)
            return NULL;
    m->n_jobs = r->n;
    return &m->base;
}

static const wf_h_builder activate_builder = {build_activate,
                                              &workflow__v1__activate_jobs_response__descriptor};

typedef struct activation {
    wf_runtime_ctx ctx;
    wf_runtime_activation a;
    wf_uow_idem idem;
    int64_t wait_end_ms; /* monotonic */
} activation;

static wf_code
activate_open(wf_call *call, const ProtobufCMessage *msg, void **state, wf_error *err)
{
    const Workflow__V1__ActivateJobsRequest *req = (const void *)msg;
    activation *st = wf_arena_calloc(call->arena, 1, sizeof *st);
    if (st == NULL)
        return wf_error_nomem(err);
    wf_h_net_ctx(call, &st->ctx);
    st->ctx.ref.actor = NULL;
    st->a = (wf_runtime_activation){.job_type = req->job_type,
                                    .worker = req->worker,
                                    .max_jobs = req->max_jobs,
                                    .lease_ms = wf_h_duration_ms(req->lease)};
    if (req->lease != NULL && st->a.lease_ms <= 0)
        return invalid(call, "lease", "must be positive and at most 24 hours", err);
    int64_t wait = wf_h_duration_ms(req->wait);
    if (wait < 0)
        return invalid(call, "wait", "must not be negative", err);
    if (wait > WF_RUNTIME_MAX_WAIT_MS)
        wait = WF_RUNTIME_MAX_WAIT_MS;
    wf_code rc = wf_runtime_activation_check(&st->ctx, &st->a, err);
    /* The request id is looked up in each pass's transaction, the one
     * that records it with the leases. */
    if (rc == WF_OK)
        rc = wf_h_idem(call, msg, req->request_id, &activate_builder, &st->idem, err);
    if (rc != WF_OK)
        return rc;
    int64_t now = wf_mono_ms();
    st->wait_end_ms = now + wait;
    if (call->deadline_ms > 0 && st->wait_end_ms > call->deadline_ms - DEADLINE_MARGIN_MS)
        st->wait_end_ms = call->deadline_ms - DEADLINE_MARGIN_MS;
    call->wake_topic = wf_arena_printf(call->arena, "%s%s", WF_TOPIC_JOBS_PREFIX, req->job_type);
    if (call->wake_topic == NULL)
        return wf_error_nomem(err);
    *state = st;
    return WF_OK;
}

/* The first call's response, for a retry with its request id. */
static wf_stream_step
activate_replay(activation *st, wf_arena *scratch, ProtobufCMessage **msg, wf_error *err)
{
    ProtobufCAllocator pa = wf_arena_pb_allocator(scratch);
    *msg = protobuf_c_message_unpack(activate_builder.desc, &pa, st->idem.response_len,
                                     st->idem.response);
    if (*msg == NULL) {
        wf_error_set(err, WF_E_INTERNAL, "could not read the stored ActivateJobs response");
        return WF_STREAM_END;
    }
    return WF_STREAM_MESSAGE;
}

static wf_stream_step
activate_next(wf_call *call, void *state, wf_arena *scratch, ProtobufCMessage **msg, wf_error *err)
{
    activation *st = state;
    /* Each pass allocates in the step's scratch, not in the call's arena,
     * so a long wait does not accumulate memory. */
    wf_runtime_ctx ctx = st->ctx;
    ctx.ref.arena = scratch;
    activation_result r = {NULL, 0};
    int64_t now = wf_mono_ms();
    bool last = now >= st->wait_end_ms;
    /* The leases and the request record commit together (a pass that
     * leases nothing before the wait is over records nothing). */
    if (wf_runtime_activate_recorded(&ctx, &st->a, &st->idem, last, &r, err) != WF_OK)
        return WF_STREAM_END;
    if (st->idem.replayed)
        return activate_replay(st, scratch, msg, err);
    if (r.n == 0 && !last) {
        call->wake_at_ms = now + RECHECK_MS < st->wait_end_ms ? now + RECHECK_MS : st->wait_end_ms;
        return WF_STREAM_WAIT;
    }
    *msg = build_activate(scratch, &r);
    if (*msg == NULL) {
        wf_error_nomem(err);
        return WF_STREAM_END;
    }
    if (r.n > 0)
        wf_app_wake_streams(call->app, WF_TOPIC_EVENTS); /* JOB_ACTIVATED events */
    return WF_STREAM_MESSAGE;
}

const wf_stream_ops h_activate_jobs = {activate_open, activate_next, NULL, true};

/* ---- CompleteJob / FailJob / ExtendJobLease ------------------------------------------------ */

static ProtobufCMessage *
build_complete(wf_arena *a, const void *result)
{
    (void)result;
    Workflow__V1__CompleteJobResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__complete_job_response__init(m);
    return &m->base;
}

static ProtobufCMessage *
build_fail(wf_arena *a, const void *result)
{
    (void)result;
    Workflow__V1__FailJobResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__fail_job_response__init(m);
    return &m->base;
}

static ProtobufCMessage *
build_extend(wf_arena *a, const void *result)
{
    const int64_t *expires = result;
    Workflow__V1__ExtendJobLeaseResponse *m = wf_arena_alloc(a, sizeof *m);
    bool oom = false;
    if (m == NULL)
        return NULL;
    workflow__v1__extend_job_lease_response__init(m);
    m->lease_expires_at = wf_h_timestamp(a, *expires, &oom);
    return oom ? NULL : &m->base;
}

const wf_h_builder wf_h_complete_job_builder = {build_complete,
                                                &workflow__v1__complete_job_response__descriptor};
static const wf_h_builder fail_builder = {build_fail, &workflow__v1__fail_job_response__descriptor};
static const wf_h_builder extend_builder = {build_extend,
                                            &workflow__v1__extend_job_lease_response__descriptor};

static void
job_ctx(wf_call *call, wf_runtime_ctx *ctx)
{
    wf_h_net_ctx(call, ctx);
    ctx->ref.actor = NULL; /* workers are not people */
}

wf_code
h_complete_job(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__CompleteJobRequest *req = (const void *)msg;
    wf_runtime_ctx ctx;
    wf_uow_idem idem;
    job_ctx(call, &ctx);
    if (wf_ids_check(&ctx.ref, WF_ID_JOB_KEY, "job_key", req->job_key, err) != WF_OK)
        return err->code;
    wf_code rc = wf_h_idem(call, msg, req->request_id, &wf_h_complete_job_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_runtime_complete_job_to(&ctx, req->job_key, req->variables_json, req->next_step,
                                        &idem, err);
    if (rc == WF_OK || rc == WF_E_JOB_LEASE_LOST || rc == WF_E_JOB_NOT_FOUND)
        wf_h_job_stream_release(call->app, call->tenant, req->job_key); /* a stream's credit */
    return wf_h_respond(call, rc, &idem, &wf_h_complete_job_builder, NULL, resp, err);
}

wf_code
h_fail_job(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__FailJobRequest *req = (const void *)msg;
    wf_runtime_ctx ctx;
    wf_uow_idem idem;
    job_ctx(call, &ctx);
    if (wf_ids_check(&ctx.ref, WF_ID_JOB_KEY, "job_key", req->job_key, err) != WF_OK)
        return err->code;
    wf_runtime_job_failure f = {
        .key = req->job_key,
        .error_message = req->error_message,
        /* Absent means true (a one-field oneof gives presence). */
        .retryable = req->retryable_presence_case !=
                         WORKFLOW__V1__FAIL_JOB_REQUEST__RETRYABLE_PRESENCE_RETRYABLE ||
                     req->retryable,
        .has_backoff = req->backoff_override != NULL,
        .backoff_ms = wf_h_duration_ms(req->backoff_override),
    };
    wf_code rc = wf_h_idem(call, msg, req->request_id, &fail_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_runtime_fail_job(&ctx, &f, &idem, err);
    if (rc == WF_OK || rc == WF_E_JOB_LEASE_LOST || rc == WF_E_JOB_NOT_FOUND)
        wf_h_job_stream_release(call->app, call->tenant, req->job_key); /* a stream's credit */
    return wf_h_respond(call, rc, &idem, &fail_builder, NULL, resp, err);
}

wf_code
h_extend_job_lease(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                   wf_error *err)
{
    const Workflow__V1__ExtendJobLeaseRequest *req = (const void *)msg;
    wf_runtime_ctx ctx;
    wf_uow_idem idem;
    int64_t expires = 0;
    job_ctx(call, &ctx);
    if (wf_ids_check(&ctx.ref, WF_ID_JOB_KEY, "job_key", req->job_key, err) != WF_OK)
        return err->code;
    wf_code rc = wf_h_idem(call, msg, req->request_id, &extend_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_runtime_extend_job_lease(&ctx, req->job_key, wf_h_duration_ms(req->lease), &idem,
                                         &expires, err);
    if (rc == WF_OK && expires > 0)
        wf_h_job_stream_extended(call->app, call->tenant, req->job_key, expires);
    return wf_h_respond(call, rc, &idem, &extend_builder, &expires, resp, err);
}

/* ---- UpdateJob ------------------------------------------------------------------------------ */

static ProtobufCMessage *
build_update(wf_arena *a, const void *result)
{
    Workflow__V1__UpdateJobResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__update_job_response__init(m);
    m->job = wf_h_job(a, result);
    return m->job != NULL ? &m->base : NULL;
}

static const wf_h_builder update_builder = {build_update,
                                            &workflow__v1__update_job_response__descriptor};

wf_code
h_update_job(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__UpdateJobRequest *req = (const void *)msg;
    wf_runtime_ctx ctx;
    wf_uow_idem idem;
    wf_job_row job = {0};
    job_ctx(call, &ctx);
    if (req->priority == NULL)
        return invalid(call, "priority", "is required", err);
    wf_code rc = wf_h_idem(call, msg, req->request_id, &update_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_runtime_update_job(&ctx, req->instance_id, req->job_id, req->priority->value, &idem,
                                   &job, err);
    return wf_h_respond(call, rc, &idem, &update_builder, &job, resp, err);
}
