/*
 * test_e2e_batch: batch operations (StartBatchOperation,
 * GetBatchOperation, CancelBatchOperation, ListBatchOperations) through
 * the real gRPC client, on the store WF_TEST_STORE names (memory and
 * Postgres).
 *
 * The in-process server runs no background scheduler: a batch moves only
 * by RunSchedulerPass (tenant-scoped, so each test works in a tenant of
 * its own), or, for the crash of a replica between a chunk's actions and
 * its progress, by the engine's chunk run directly on the server's store.
 */
#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "net_kit.h"
#include "store.h"
#include "wf_id.h"
#include "wf_time.h"

#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED
#define I_SUSPENDED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_SUSPENDED
#define I_FAILED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_FAILED
#define A_CANCEL WORKFLOW__V1__BATCH_ACTION__BATCH_ACTION_CANCEL
#define A_RETRY WORKFLOW__V1__BATCH_ACTION__BATCH_ACTION_RETRY
#define A_SUSPEND WORKFLOW__V1__BATCH_ACTION__BATCH_ACTION_SUSPEND
#define A_RESUME WORKFLOW__V1__BATCH_ACTION__BATCH_ACTION_RESUME
#define A_MIGRATE WORKFLOW__V1__BATCH_ACTION__BATCH_ACTION_MIGRATE
#define B_RUNNING WORKFLOW__V1__BATCH_OPERATION_STATE__BATCH_OPERATION_STATE_RUNNING
#define B_COMPLETED WORKFLOW__V1__BATCH_OPERATION_STATE__BATCH_OPERATION_STATE_COMPLETED
#define B_CANCELLED WORKFLOW__V1__BATCH_OPERATION_STATE__BATCH_OPERATION_STATE_CANCELLED

static char *tenant; /* this test's tenant */

static void
batch_setup(void)
{
    tenant = setup_tenant(NULL, "batch");
}

/* ---- calls --------------------------------------------------------------------------------- */

/* A filter of the instances of definition key, any starter. */
static Workflow__V1__InstanceFilter *
by_key(const char *key)
{
    Workflow__V1__InstanceFilter *f = wf_arena_calloc(ta, 1, sizeof *f);
    workflow__v1__instance_filter__init(f);
    f->started_by = "*";
    f->definition_key = (char *)key;
    return f;
}

static Workflow__V1__BatchOperation *
start_c(wf_client *c, Workflow__V1__InstanceFilter *f, Workflow__V1__BatchAction action,
        const char *rid, wf_client_status *st)
{
    Workflow__V1__StartBatchOperationRequest req =
        WORKFLOW__V1__START_BATCH_OPERATION_REQUEST__INIT;
    req.filter = f;
    req.action = action;
    req.reason = "cleanup";
    req.request_id = (char *)(rid != NULL ? rid : "");
    Workflow__V1__StartBatchOperationResponse *r =
        call(c, "StartBatchOperation", &req,
             &workflow__v1__start_batch_operation_response__descriptor, st);
    return r != NULL ? r->batch_operation : NULL;
}

static Workflow__V1__BatchOperation *
start_ok(Workflow__V1__InstanceFilter *f, Workflow__V1__BatchAction action)
{
    wf_client_status st;
    Workflow__V1__BatchOperation *b = start_c(me("ops"), f, action, NULL, &st);
    ck_ok(st);
    return b;
}

static Workflow__V1__BatchOperation *
get_c(wf_client *c, const char *id, wf_client_status *st)
{
    Workflow__V1__GetBatchOperationRequest req = WORKFLOW__V1__GET_BATCH_OPERATION_REQUEST__INIT;
    req.id = (char *)id;
    Workflow__V1__GetBatchOperationResponse *r = call(
        c, "GetBatchOperation", &req, &workflow__v1__get_batch_operation_response__descriptor, st);
    return r != NULL ? r->batch_operation : NULL;
}

static Workflow__V1__BatchOperation *
get_ok(const char *id)
{
    wf_client_status st;
    Workflow__V1__BatchOperation *b = get_c(me("reader"), id, &st);
    ck_ok(st);
    return b;
}

static Workflow__V1__BatchOperation *
cancel_c(const char *id, const char *rid, wf_client_status *st)
{
    Workflow__V1__CancelBatchOperationRequest req =
        WORKFLOW__V1__CANCEL_BATCH_OPERATION_REQUEST__INIT;
    req.id = (char *)id;
    req.request_id = (char *)(rid != NULL ? rid : "");
    Workflow__V1__CancelBatchOperationResponse *r =
        call(me("ops"), "CancelBatchOperation", &req,
             &workflow__v1__cancel_batch_operation_response__descriptor, st);
    return r != NULL ? r->batch_operation : NULL;
}

static Workflow__V1__ListBatchOperationsResponse *
list_c(int32_t size, const char *token, wf_client_status *st)
{
    Workflow__V1__ListBatchOperationsRequest req =
        WORKFLOW__V1__LIST_BATCH_OPERATIONS_REQUEST__INIT;
    req.page_size = size;
    req.page_token = (char *)(token != NULL ? token : "");
    return call(me("reader"), "ListBatchOperations", &req,
                &workflow__v1__list_batch_operations_response__descriptor, st);
}

static int
status_of(const char *id)
{
    return get_instance_as(me("reader"), id)->instance->status;
}

/* Events of type in root's tree (this tenant), read from the store. */
static size_t
count_type(const char *root, const char *type)
{
    wf_store_ctx sc = {tenant, 0, ta};
    wf_event_filter f = {.instance_id = root};
    wf_event_row *ev = NULL;
    size_t n = 0, k = 0;
    wf_error err;
    ck_assert_int_eq(wf_store_read_events(ts.app.store, &sc, 0, &f, 1000, &ev, &n, &err), WF_OK);
    for (size_t i = 0; i < n; i++)
        k += strcmp(ev[i].type, type) == 0;
    return k;
}

/* key: start -> work (AUTO, a job of *type, one attempt) -> end. */
static void
deploy_job_net(const char *key, const char **type)
{
    *type = u("work");
    nb *n = net_new(key);
    place(n, "start", START);
    place(n, "end", END);
    Workflow__V1__Transition *t = trans(n, "work", T_AUTO);
    with_job(t, *type, 1, 0);
    arc(n, "start", "work");
    arc(n, "work", "end");
    deploy_as(me("dev"), n);
}

/* n instances of key, each waiting for its job. */
static Workflow__V1__Instance **
start_n(const char *key, size_t n)
{
    Workflow__V1__Instance **v = wf_arena_calloc(ta, n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = start_order(me("boss"), key, NULL, NULL, NULL);
    return v;
}

static void
cancel_instance_ok(const char *id)
{
    Workflow__V1__CancelInstanceRequest req = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    wf_client_status st;
    call(me("ops"), "CancelInstance", &req, &workflow__v1__cancel_instance_response__descriptor,
         &st);
    ck_ok(st);
}

/* ---- the walk ------------------------------------------------------------------------------ */

/* CANCEL over a definition's instances: RUNNING with the count at start,
 * then COMPLETED by a scheduler pass; each instance cancelled once with
 * the batch's reason and actor; the one already ended is a refusal kept
 * among the first errors, and the batch went on past it. */
WF_TEST(test_cancel_completes_through_scheduler_passes)
{
    const char *key = u("batch-cancel"), *type;
    deploy_job_net(key, &type);
    Workflow__V1__Instance **in = start_n(key, 5);
    cancel_instance_ok(in[1]->id);
    Workflow__V1__BatchOperation *b = start_ok(by_key(key), A_CANCEL);
    ck_assert_int_eq(b->state, B_RUNNING);
    ck_assert_int_eq(b->action, A_CANCEL);
    ck_assert_int_eq(b->total, 5);
    ck_assert_int_eq(b->done, 0);
    ck_assert_str_eq(b->created_by, "ops");
    ck_assert_str_eq(b->reason, "cleanup");
    ck_assert_str_eq(b->filter->definition_key, key);
    ck_assert_str_eq(b->filter->started_by, "*");
    ck_assert_ptr_nonnull(b->created_at);
    ck_assert_ptr_null(b->ended_at);

    scheduler_pass();
    Workflow__V1__BatchOperation *g = get_ok(b->id);
    ck_assert_int_eq(g->state, B_COMPLETED);
    ck_assert_int_eq(g->total, 5);
    ck_assert_int_eq(g->done, 4);
    ck_assert_int_eq(g->failed, 1);
    ck_assert_uint_eq(g->n_errors, 1);
    ck_assert_str_eq(g->errors[0]->instance_id, in[1]->id);
    ck_assert_str_eq(g->errors[0]->reason, "INSTANCE_NOT_RUNNING");
    ck_assert_ptr_nonnull(g->ended_at);
    for (size_t i = 0; i < 5; i++) {
        ck_assert_int_eq(status_of(in[i]->id), I_CANCELLED);
        ck_assert_uint_eq(count_type(in[i]->id, "INSTANCE_CANCELLED"), 1);
    }
    /* More passes change nothing. */
    scheduler_pass();
    ck_assert_int_eq(get_ok(b->id)->done, 4);
}
END_TEST

/* A filter that matches nothing: COMPLETED at once, total 0. */
WF_TEST(test_zero_match_completes_at_once)
{
    Workflow__V1__BatchOperation *b = start_ok(by_key(u("no-such-key")), A_SUSPEND);
    ck_assert_int_eq(b->state, B_COMPLETED);
    ck_assert_int_eq(b->total, 0);
    ck_assert_int_eq(b->done, 0);
    ck_assert_ptr_nonnull(b->ended_at);
    ck_assert_int_eq(get_ok(b->id)->state, B_COMPLETED);
}
END_TEST

/* SUSPEND, then RESUME by status: the matching set is fixed at start (an
 * instance created after it is not visited); a status filter picks the
 * suspended ones. */
WF_TEST(test_suspend_and_resume_fix_the_set_at_start)
{
    const char *key = u("batch-susp"), *type;
    deploy_job_net(key, &type);
    Workflow__V1__Instance **in = start_n(key, 3);
    Workflow__V1__BatchOperation *b = start_ok(by_key(key), A_SUSPEND);
    ck_assert_int_eq(b->total, 3);
    Workflow__V1__Instance *late = start_order(me("boss"), key, NULL, NULL, NULL);
    scheduler_pass();
    Workflow__V1__BatchOperation *g = get_ok(b->id);
    ck_assert_int_eq(g->state, B_COMPLETED);
    ck_assert_int_eq(g->done, 3);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(status_of(in[i]->id), I_SUSPENDED);
        ck_assert_uint_eq(count_type(in[i]->id, "INSTANCE_SUSPENDED"), 1);
    }
    ck_assert_int_eq(status_of(late->id), I_RUNNING);

    Workflow__V1__InstanceFilter *f = by_key(key);
    f->status = I_SUSPENDED;
    Workflow__V1__BatchOperation *r = start_ok(f, A_RESUME);
    ck_assert_int_eq(r->total, 3);
    ck_assert_int_eq(r->filter->status, I_SUSPENDED);
    scheduler_pass();
    ck_assert_int_eq(get_ok(r->id)->done, 3);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(status_of(in[i]->id), I_RUNNING);
        ck_assert_uint_eq(count_type(in[i]->id, "INSTANCE_RESUMED"), 1);
    }
}
END_TEST

/* RETRY of the FAILED instances of a definition. */
WF_TEST(test_retry_resolves_the_failed_instances)
{
    const char *key = u("batch-retry"), *type;
    deploy_job_net(key, &type);
    Workflow__V1__Instance **in = start_n(key, 2);
    wf_client_status st;
    Workflow__V1__ActivateJobsResponse *jobs = activate_c(me(NULL), type, 5, 60000, 2000, &st);
    ck_ok(st);
    ck_assert_uint_eq(jobs->n_jobs, 2);
    for (size_t i = 0; i < jobs->n_jobs; i++) {
        Workflow__V1__FailJobRequest req = WORKFLOW__V1__FAIL_JOB_REQUEST__INIT;
        req.job_key = jobs->jobs[i]->key;
        req.error_message = "down";
        call(me(NULL), "FailJob", &req, &workflow__v1__fail_job_response__descriptor, &st);
        ck_ok(st);
    }
    for (size_t i = 0; i < 2; i++)
        ck_assert_int_eq(status_of(in[i]->id), I_FAILED);
    Workflow__V1__InstanceFilter *f = by_key(key);
    f->status = I_FAILED;
    Workflow__V1__BatchOperation *b = start_ok(f, A_RETRY);
    ck_assert_int_eq(b->total, 2);
    scheduler_pass();
    Workflow__V1__BatchOperation *g = get_ok(b->id);
    ck_assert_int_eq(g->done, 2);
    ck_assert_int_eq(g->failed, 0);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(status_of(in[i]->id), I_RUNNING);
        ck_assert_uint_eq(count_type(in[i]->id, "INCIDENT_RESOLVED"), 1);
    }
}
END_TEST

/* A replica runs a chunk's actions and dies before its progress is
 * written (simulated: the chunk runs, then the row is put back as it was,
 * lease run out). The next pass runs the chunk again: the actions replay
 * from their request records, so every instance is cancelled exactly
 * once, the refusal counts once, and done + failed == total. */
WF_TEST(test_chunk_lost_with_its_replica_applies_each_action_once)
{
    const char *key = u("batch-crash"), *type;
    deploy_job_net(key, &type);
    Workflow__V1__Instance **in = start_n(key, 6);
    cancel_instance_ok(in[0]->id);
    Workflow__V1__BatchOperation *b = start_ok(by_key(key), A_CANCEL);
    ck_assert_int_eq(b->total, 6);

    wf_store_ctx sc = {tenant, 0, ta};
    wf_error err;
    wf_batch_row *claimed = NULL, before;
    size_t n = 0;
    ck_assert_int_eq(wf_store_get_batch(ts.app.store, &sc, b->id, &before, &err), WF_OK);
    ck_assert_int_eq(wf_store_claim_batches(ts.app.store, &sc, "dead-replica", wf_now_us(), 60000,
                                            1, &claimed, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    wf_batch_host h = {.store = ts.app.store, .chunk = 4};
    wf_batch_chunk c;
    ck_assert_int_eq(wf_batch_run_chunk(&h, &claimed[0], 0, &c, &err), WF_OK);
    ck_assert_uint_eq(c.applied, 3);
    ck_assert_uint_eq(c.refused, 1);
    ck_assert(c.kept);
    for (size_t i = 1; i < 4; i++)
        ck_assert_int_eq(status_of(in[i]->id), I_CANCELLED);
    ck_assert_int_eq(status_of(in[4]->id), I_RUNNING);
    /* The progress is lost with the replica. */
    wf_batch_row now;
    ck_assert_int_eq(wf_store_get_batch(ts.app.store, &sc, b->id, &now, &err), WF_OK);
    before.version = now.version;
    ck_assert_int_eq(wf_store_update_batch(ts.app.store, &sc, &before, &err), WF_OK);
    ck_assert_int_eq(get_ok(b->id)->done, 0);

    scheduler_pass();
    Workflow__V1__BatchOperation *g = get_ok(b->id);
    ck_assert_int_eq(g->state, B_COMPLETED);
    ck_assert_int_eq(g->done, 5);
    ck_assert_int_eq(g->failed, 1);
    ck_assert_int_eq(g->done + g->failed, g->total);
    ck_assert_uint_eq(g->n_errors, 1);
    for (size_t i = 0; i < 6; i++) {
        ck_assert_int_eq(status_of(in[i]->id), I_CANCELLED);
        ck_assert_uint_eq(count_type(in[i]->id, "INSTANCE_CANCELLED"), 1);
    }
}
END_TEST

/* A claim held by a live replica keeps every pass off the batch until its
 * lease runs out. */
WF_TEST(test_held_batch_is_left_to_its_holder)
{
    const char *key = u("batch-held"), *type;
    deploy_job_net(key, &type);
    Workflow__V1__Instance **in = start_n(key, 2);
    Workflow__V1__BatchOperation *b = start_ok(by_key(key), A_SUSPEND);
    wf_store_ctx sc = {tenant, 0, ta};
    wf_error err;
    wf_batch_row *claimed = NULL;
    size_t n = 0;
    ck_assert_int_eq(wf_store_claim_batches(ts.app.store, &sc, "other-replica", wf_now_us(), 60000,
                                            1, &claimed, &n, &err),
                     WF_OK);
    ck_assert_uint_eq(n, 1);
    scheduler_pass();
    ck_assert_int_eq(get_ok(b->id)->done, 0);
    ck_assert_int_eq(status_of(in[0]->id), I_RUNNING);
}
END_TEST

/* ---- cancel, replay, listing -------------------------------------------------------------- */

/* CancelBatchOperation stops it: no pass applies anything afterwards; a
 * second cancel is BATCH_OPERATION_NOT_RUNNING, as is the cancel of a
 * completed one; a request id replays the first answer. */
WF_TEST(test_cancel_stops_it)
{
    const char *key = u("batch-stop"), *type;
    deploy_job_net(key, &type);
    Workflow__V1__Instance **in = start_n(key, 3);
    Workflow__V1__BatchOperation *b = start_ok(by_key(key), A_CANCEL);
    wf_client_status st;
    const char *rid = u("rid-cancel");
    Workflow__V1__BatchOperation *c = cancel_c(b->id, rid, &st);
    ck_ok(st);
    ck_assert_int_eq(c->state, B_CANCELLED);
    ck_assert_ptr_nonnull(c->ended_at);
    scheduler_pass();
    Workflow__V1__BatchOperation *g = get_ok(b->id);
    ck_assert_int_eq(g->state, B_CANCELLED);
    ck_assert_int_eq(g->done, 0);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(status_of(in[i]->id), I_RUNNING);
    Workflow__V1__BatchOperation *again = cancel_c(b->id, rid, &st);
    ck_ok(st);
    ck_assert_int_eq(again->state, B_CANCELLED);
    ck_assert_int_eq(again->ended_at->nanos, c->ended_at->nanos);
    cancel_c(b->id, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "BATCH_OPERATION_NOT_RUNNING");
    Workflow__V1__BatchOperation *z = start_ok(by_key(u("none")), A_CANCEL);
    cancel_c(z->id, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "BATCH_OPERATION_NOT_RUNNING");
}
END_TEST

/* StartBatchOperation with a request id: the repeat answers the first
 * batch (no second one); another request under the id is refused. */
WF_TEST(test_request_id_replays_the_first_start)
{
    const char *key = u("batch-rid"), *type;
    deploy_job_net(key, &type);
    start_n(key, 2);
    const char *rid = u("rid-start");
    wf_client_status st;
    Workflow__V1__BatchOperation *a = start_c(me("ops"), by_key(key), A_SUSPEND, rid, &st);
    ck_ok(st);
    Workflow__V1__BatchOperation *b = start_c(me("ops"), by_key(key), A_SUSPEND, rid, &st);
    ck_ok(st);
    ck_assert_str_eq(a->id, b->id);
    Workflow__V1__ListBatchOperationsResponse *l = list_c(0, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_batch_operations, 1);
    start_c(me("ops"), by_key(key), A_CANCEL, rid, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");
}
END_TEST

/* Newest first, paged, this tenant's only. */
WF_TEST(test_list_is_newest_first_and_paged)
{
    const char *ids[3];
    for (size_t i = 0; i < 3; i++)
        ids[i] = start_ok(by_key(u("k")), A_CANCEL)->id;
    wf_client_status st;
    Workflow__V1__ListBatchOperationsResponse *p1 = list_c(2, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(p1->n_batch_operations, 2);
    ck_assert_str_eq(p1->batch_operations[0]->id, ids[2]);
    ck_assert_str_eq(p1->batch_operations[1]->id, ids[1]);
    ck_assert_str_ne(p1->next_page_token, "");
    Workflow__V1__ListBatchOperationsResponse *p2 = list_c(2, p1->next_page_token, &st);
    ck_ok(st);
    ck_assert_uint_eq(p2->n_batch_operations, 1);
    ck_assert_str_eq(p2->batch_operations[0]->id, ids[0]);
    ck_assert_str_eq(p2->next_page_token, "");
    list_c(-1, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    list_c(2, "garbage", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

/* ---- refusals ----------------------------------------------------------------------------- */

/* Another tenant's batch id, a malformed id and an unknown one are
 * BATCH_OPERATION_NOT_FOUND; an empty one INVALID_ARGUMENT. */
WF_TEST(test_other_tenants_and_unknown_ids_are_not_found)
{
    Workflow__V1__BatchOperation *b = start_ok(by_key(u("k")), A_CANCEL);
    wf_client_status st;
    get_c(as_tenant(u("other"), "reader"), b->id, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "BATCH_OPERATION_NOT_FOUND");
    get_c(me("reader"), "not-an-id", &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "BATCH_OPERATION_NOT_FOUND");
    char id[WF_UUID_LEN + 1];
    wf_uuid7(id);
    get_c(me("reader"), id, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "BATCH_OPERATION_NOT_FOUND");
    cancel_c(id, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "BATCH_OPERATION_NOT_FOUND");
    get_c(me("reader"), "", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

/* The action is required; the filter is refused as ListInstances refuses
 * it; a reason over 1024 bytes is refused; the actor is required. */
WF_TEST(test_bad_requests_are_refused)
{
    wf_client_status st;
    start_c(me("ops"), by_key("k"), WORKFLOW__V1__BATCH_ACTION__BATCH_ACTION_UNSPECIFIED, NULL,
            &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    start_c(me("ops"), by_key("k"), (Workflow__V1__BatchAction)5, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");

    Workflow__V1__InstanceFilter *f = by_key("k");
    f->state = (Workflow__V1__ProcessState)9;
    start_c(me("ops"), f, A_CANCEL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");

    f = by_key("k");
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    agg.id = "o-1";
    f->aggregate = &agg;
    start_c(me("ops"), f, A_CANCEL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");

    f = by_key("k");
    Workflow__V1__VariableFilter v = WORKFLOW__V1__VARIABLE_FILTER__INIT;
    Workflow__V1__VariableFilter *vs[1] = {&v};
    v.path = "a..b";
    v.value_json = "1";
    f->variables = vs;
    f->n_variables = 1;
    start_c(me("ops"), f, A_CANCEL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    v.path = "a";
    v.value_json = "{\"x\":1}";
    start_c(me("ops"), f, A_CANCEL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");

    Workflow__V1__StartBatchOperationRequest req =
        WORKFLOW__V1__START_BATCH_OPERATION_REQUEST__INIT;
    char reason[1100];
    memset(reason, 'r', sizeof reason - 1);
    reason[sizeof reason - 1] = '\0';
    req.filter = by_key("k");
    req.action = A_CANCEL;
    req.reason = reason;
    call(me("ops"), "StartBatchOperation", &req,
         &workflow__v1__start_batch_operation_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");

    start_c(me(NULL), by_key("k"), A_CANCEL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
    /* Nothing was stored. */
    Workflow__V1__ListBatchOperationsResponse *l = list_c(0, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_batch_operations, 0);
}
END_TEST

/* ---- MIGRATE ------------------------------------------------------------------------------- */

/* StartBatchOperation MIGRATE of key's instances to version, with the
 * pairs from[i] -> to[i]. */
static Workflow__V1__BatchOperation *
start_migrate(const char *key, int32_t version, const char *from, const char *to,
              wf_client_status *st)
{
    Workflow__V1__StartBatchOperationRequest req =
        WORKFLOW__V1__START_BATCH_OPERATION_REQUEST__INIT;
    Workflow__V1__PlaceMapping pm = WORKFLOW__V1__PLACE_MAPPING__INIT;
    Workflow__V1__PlaceMapping *pms[1] = {&pm};
    req.filter = key != NULL ? by_key(key) : by_key("");
    if (key == NULL)
        req.filter->definition_key = "";
    req.action = A_MIGRATE;
    req.target_version = version;
    if (from != NULL) {
        pm.from_place = (char *)from;
        pm.to_place = (char *)to;
        req.place_mapping = pms;
        req.n_place_mapping = 1;
    }
    Workflow__V1__StartBatchOperationResponse *r =
        call(me("ops"), "StartBatchOperation", &req,
             &workflow__v1__start_batch_operation_response__descriptor, st);
    return r != NULL ? r->batch_operation : NULL;
}

/* Version 2 of key: the job's place is renamed "ready", the same "work"
 * transition and job type. */
static void
deploy_job_net_v2(const char *key, const char *type)
{
    nb *n = net_new(key);
    place(n, "ready", START);
    place(n, "end", END);
    Workflow__V1__Transition *t = trans(n, "work", T_AUTO);
    with_job(t, type, 1, 0);
    arc(n, "ready", "work");
    arc(n, "work", "end");
    deploy_as(me("dev"), n);
}

/* MIGRATE: without the mapping every instance is a refusal
 * (MIGRATION_INVALID: its token's place is gone in version 2) and
 * nothing moves; with it each running instance moves once (one
 * INSTANCE_MIGRATED, the job kept), the ended one is refused, and a
 * second batch to the same version is a no-op for each. */
WF_TEST(test_migrate_moves_each_instance_once)
{
    const char *key = u("batch-migrate"), *type;
    deploy_job_net(key, &type);
    Workflow__V1__Instance **in = start_n(key, 4);
    cancel_instance_ok(in[3]->id);
    deploy_job_net_v2(key, type);
    wf_client_status st;

    Workflow__V1__BatchOperation *b = start_migrate(key, 2, NULL, NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(b->action, A_MIGRATE);
    ck_assert_int_eq(b->target_version, 2);
    ck_assert_uint_eq(b->n_place_mapping, 0);
    scheduler_pass();
    Workflow__V1__BatchOperation *g = get_ok(b->id);
    ck_assert_int_eq(g->state, B_COMPLETED);
    ck_assert_int_eq(g->done, 0);
    ck_assert_int_eq(g->failed, 4);
    ck_assert_str_eq(g->errors[0]->reason, "MIGRATION_INVALID");
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(get_instance_as(me("reader"), in[i]->id)->instance->definition_version, 1);
        ck_assert_uint_eq(count_type(in[i]->id, "INSTANCE_MIGRATED"), 0);
    }

    b = start_migrate(key, 2, "start", "ready", &st);
    ck_ok(st);
    ck_assert_uint_eq(b->n_place_mapping, 1);
    ck_assert_str_eq(b->place_mapping[0]->from_place, "start");
    ck_assert_str_eq(b->place_mapping[0]->to_place, "ready");
    scheduler_pass();
    g = get_ok(b->id);
    ck_assert_int_eq(g->state, B_COMPLETED);
    ck_assert_int_eq(g->total, 4);
    ck_assert_int_eq(g->done, 3);
    ck_assert_int_eq(g->failed, 1);
    ck_assert_str_eq(g->errors[0]->instance_id, in[3]->id);
    ck_assert_str_eq(g->errors[0]->reason, "INSTANCE_NOT_RUNNING");
    ck_assert_int_eq(g->target_version, 2);
    ck_assert_str_eq(g->place_mapping[0]->to_place, "ready");
    for (size_t i = 0; i < 3; i++) {
        Workflow__V1__GetInstanceResponse *gi = get_instance_as(me("reader"), in[i]->id);
        ck_assert_int_eq(gi->instance->definition_version, 2);
        ck_assert_uint_eq(gi->n_jobs, 1); /* the job of "work" was kept */
        ck_assert_uint_eq(count_type(in[i]->id, "INSTANCE_MIGRATED"), 1);
    }

    /* Again to the same version: done for each, nothing written. */
    b = start_migrate(key, 2, "start", "ready", &st);
    ck_ok(st);
    scheduler_pass();
    ck_assert_int_eq(get_ok(b->id)->done, 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_uint_eq(count_type(in[i]->id, "INSTANCE_MIGRATED"), 1);
}
END_TEST

/* MIGRATE's arguments are checked at the start, before anything is
 * stored, and refused with the other actions. */
WF_TEST(test_migrate_arguments_are_checked_at_start)
{
    wf_client_status st;
    start_migrate(NULL, 2, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_msg(st.nviolations == 1 &&
                      strncmp(st.violations[0], "filter.definition_key:", 22) == 0,
                  "%s", st.nviolations > 0 ? st.violations[0] : "");
    start_migrate("k", 0, NULL, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_msg(st.nviolations == 1 && strncmp(st.violations[0], "target_version:", 15) == 0,
                  "%s", st.nviolations > 0 ? st.violations[0] : "");
    start_migrate("k", 2, "start", "", &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_msg(st.nviolations == 1 &&
                      strncmp(st.violations[0], "place_mapping[0].to_place:", 26) == 0,
                  "%s", st.nviolations > 0 ? st.violations[0] : "");

    Workflow__V1__StartBatchOperationRequest req =
        WORKFLOW__V1__START_BATCH_OPERATION_REQUEST__INIT;
    req.filter = by_key("k");
    req.action = A_CANCEL;
    req.target_version = 2;
    call(me("ops"), "StartBatchOperation", &req,
         &workflow__v1__start_batch_operation_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_msg(st.nviolations == 1 && strncmp(st.violations[0], "target_version:", 15) == 0,
                  "%s", st.nviolations > 0 ? st.violations[0] : "");
    Workflow__V1__ListBatchOperationsResponse *l = list_c(0, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_batch_operations, 0);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_batch", "batch", batch_setup, teardown, 30));
}
