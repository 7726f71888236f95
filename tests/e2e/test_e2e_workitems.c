/*
 * End-to-end tests over gRPC, on the memory store and on Postgres
 * (WF_TEST_STORE=pg), of two things about work items:
 *   - a job completion the net cannot route (no output arc matches) is an
 *     incident: CompleteJob (and each item of CompleteJobs) answers OK, the
 *     instance is FAILED with last_error naming the transition and the
 *     output, the job is not leased again, and SetVariables + RetryInstance
 *     re-arms the job so that a worker completes it anew and it routes;
 *   - ListWorkItems: the history of every work item of an instance, open
 *     and ended, in enabled order, with states, times, deadline, assignee
 *     or job type and who finished it, paged.
 *
 * Postgres keeps rows between runs: every definition key, job type and
 * user is made unique with a per-test suffix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "test_support.h"
#include "wf_arena.h"
#include "store.h"
#include "workflow/v1/workflow.pb-c.h"

/* ---- calls --------------------------------------------------------------------------------- */

static Workflow__V1__Instance *
retry_c(const char *id, wf_client_status *st)
{
    Workflow__V1__RetryInstanceRequest req = WORKFLOW__V1__RETRY_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    Workflow__V1__RetryInstanceResponse *r = call(
        as("ops"), "RetryInstance", &req, &workflow__v1__retry_instance_response__descriptor, st);
    return r != NULL ? r->instance : NULL;
}

static void
set_vars(const char *id, const char *vars)
{
    Workflow__V1__SetVariablesRequest req = WORKFLOW__V1__SET_VARIABLES_REQUEST__INIT;
    req.instance_id = (char *)id;
    req.variables_json = (char *)vars;
    wf_client_status st;
    call(as("ops"), "SetVariables", &req, &workflow__v1__set_variables_response__descriptor, &st);
    ck_ok(st);
}

/* CompleteJobs with one item; the item's code. */
static int
complete_jobs_one(const char *key, const char *vars)
{
    Workflow__V1__CompleteJobsRequest req = WORKFLOW__V1__COMPLETE_JOBS_REQUEST__INIT;
    Workflow__V1__CompleteJobRequest item = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    Workflow__V1__CompleteJobRequest *items[1] = {&item};
    item.job_key = (char *)key;
    item.variables_json = (char *)vars;
    req.completions = items;
    req.n_completions = 1;
    wf_client_status st;
    Workflow__V1__CompleteJobsResponse *r =
        call(as("w1"), "CompleteJobs", &req, &workflow__v1__complete_jobs_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(r->n_results, 1);
    return r->results[0]->code;
}

/* The data of the last event of type in root's tree (static buffer). */
static const char *
last_event_data(const char *root, const char *type)
{
    static char out[8192];
    wf_arena *a = wf_arena_new();
    wf_store_ctx sc = {"default", 0, a};
    wf_event_filter f = {.instance_id = root};
    wf_event_row *ev;
    size_t n;
    wf_error err;
    ck_assert_int_eq(wf_store_read_events(ts.app.store, &sc, 0, &f, 1000, &ev, &n, &err), WF_OK);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(ev[i].type, type) == 0)
            snprintf(out, sizeof out, "%s", ev[i].data_json != NULL ? ev[i].data_json : "");
    wf_arena_free(a);
    return out;
}

/* ---- a job completion no arc can route ------------------------------------------------------ */

/* s -> work (AUTO job) -> big (guard .amount > 100) | small (guard .amount
 * >= 0 and .amount <= 100); no default arc: a negative amount matches none. */
static nb *
guarded_job_net(const char *key, const char *type)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "big", NORMAL);
    place(n, "small", NORMAL);
    place(n, "e", END);
    with_job(trans(n, "work", T_AUTO), type, 3, 0);
    trans(n, "finish_big", T_AUTO);
    trans(n, "finish_small", T_AUTO);
    arc(n, "s", "work");
    arc(n, "work", "big")->guard = ".amount > 100";
    arc(n, "work", "small")->guard = ".amount >= 0 and .amount <= 100";
    arc(n, "big", "finish_big");
    arc(n, "small", "finish_small");
    arc(n, "finish_big", "e");
    arc(n, "finish_small", "e");
    return n;
}

static void
unroutable_completion_case(bool batch)
{
    char *key = u(batch ? "unroutable-batch" : "unroutable");
    char *type = u("charge");
    Workflow__V1__DeployDefinitionResponse *r = deploy(guarded_job_net(key, type));
    ck_assert(r->created);
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, "{\"n\":1}", &(wf_client_status){0});
    ck_assert_ptr_nonnull(in);
    Workflow__V1__ActivateJobsResponse *a = activate(type, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    const char *key1 = a->jobs[0]->key;

    /* The output matches no arc: OK to the worker, an incident on the
     * instance. */
    wf_client_status st;
    if (batch) {
        ck_assert_int_eq(complete_jobs_one(key1, "{\"amount\":-5}"), 0);
    } else {
        ck_assert_int_eq(complete_job_c(as("w1"), key1, "{\"amount\":-5}", &st), 0);
    }
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    const char *le = g->last_error;
    ck_assert_ptr_nonnull(le);
    ck_assert_msg(strstr(le, "\"work\"") != NULL, "%s", le);
    ck_assert_msg(strstr(le, "{\"amount\":-5}") != NULL || strstr(le, "\"amount\": -5") != NULL,
                  "%s", le);
    /* The output was not merged; the token is still before the job. */
    ck_assert_str_eq(g->instance->variables_json, "{\"n\":1}");
    ck_assert_int_eq(marking(g, "s"), 1);
    const char *types = event_types(in->id);
    ck_assert_int_eq(count_of(types, "INSTANCE_FAILED"), 1);
    const char *data = last_event_data(in->id, "INSTANCE_FAILED");
    ck_assert_msg(strstr(data, "\"transitionId\":\"work\"") != NULL ||
                      strstr(data, "\"transitionId\": \"work\"") != NULL,
                  "%s", data);
    ck_assert_msg(strstr(data, "NO_ARC_MATCHED") != NULL, "%s", data);

    /* The job is not leased again; its old key is spent. */
    ck_assert_uint_eq(activate(type, 5, 0, 0)->n_jobs, 0);
    ck_assert_int_eq(complete_job_c(as("w1"), key1, "{\"amount\":500}", &st),
                     GRPC_STATUS_FAILED_PRECONDITION);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");

    /* Fixed data, RetryInstance: the job is activated again with the
     * variables as they are now, and its completion routes. */
    set_vars(in->id, "{\"fixed\":true}");
    Workflow__V1__Instance *again = retry_c(in->id, &st);
    ck_ok(st);
    ck_assert_int_eq(again->status, I_RUNNING);
    ck_assert_int_eq(count_of(event_types(in->id), "INCIDENT_RESOLVED"), 1);
    a = activate(type, 5, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(a->jobs[0]->attempt, 1);
    ck_assert_msg(strstr(a->jobs[0]->variables_json, "fixed") != NULL, "%s",
                  a->jobs[0]->variables_json);
    if (batch)
        ck_assert_int_eq(complete_jobs_one(a->jobs[0]->key, "{\"amount\":500}"), 0);
    else
        ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, "{\"amount\":500}", &st), 0);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert(strstr(event_types(in->id), "TRANSITION_FIRED") != NULL);
}

START_TEST(test_unroutable_job_completion_is_an_incident)
{
    unroutable_completion_case(false);
}
END_TEST

START_TEST(test_unroutable_batch_completion_is_an_incident)
{
    unroutable_completion_case(true);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_workitems");
    TCase *tc = tcase_create(wf_test_store_name());
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_unroutable_job_completion_is_an_incident);
    tcase_add_test(tc, test_unroutable_batch_completion_is_an_incident);
    suite_add_tcase(s, tc);
    return wf_test_run(s);
}
