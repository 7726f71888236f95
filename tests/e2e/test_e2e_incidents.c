/*
 * End-to-end tests over gRPC, on the memory store and on Postgres
 * (WF_TEST_STORE=pg), of finding work:
 *   - ListIncidents: an instance that stops FAILED (a job out of attempts,
 *     a job completion no arc can route) is listed with its root,
 *     definition, transition, code, message, time and attempts;
 *     RetryInstance (INCIDENT_RESOLVED) and CancelInstance take it off the
 *     list; filters by definition key and code, paging, refusals;
 *   - ListInstances by status FAILED, creation and end time ranges and
 *     variable equalities, alone and together, paged, and each refusal
 *     with its code, reason and field.
 *
 * Postgres keeps rows between runs: every definition key, job type and
 * user is made unique with a per-test suffix, and every listing filters by
 * the test's definition key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "test_support.h"
#include "wf_arena.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED

/* ---- calls --------------------------------------------------------------------------------- */

static int64_t
us_of(const Google__Protobuf__Timestamp *t)
{
    return t == NULL ? 0 : t->seconds * 1000000 + t->nanos / 1000;
}

static Google__Protobuf__Timestamp *
ts_of(int64_t us)
{
    Google__Protobuf__Timestamp *t = wf_arena_alloc(ta, sizeof *t);
    google__protobuf__timestamp__init(t);
    t->seconds = us / 1000000;
    t->nanos = (int32_t)(us % 1000000) * 1000;
    if (t->nanos < 0) {
        t->seconds--;
        t->nanos += 1000000000;
    }
    return t;
}

static Workflow__V1__ListIncidentsResponse *
incidents_c(const char *key, const char *code, int32_t page_size, const char *token,
            wf_client_status *st)
{
    Workflow__V1__ListIncidentsRequest req = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    req.definition_key = (char *)(key != NULL ? key : "");
    req.code = (char *)(code != NULL ? code : "");
    req.page_size = page_size;
    req.page_token = (char *)(token != NULL ? token : "");
    return call(as(NULL), "ListIncidents", &req, &workflow__v1__list_incidents_response__descriptor,
                st);
}

static Workflow__V1__ListIncidentsResponse *
incidents(const char *key, const char *code)
{
    wf_client_status st;
    Workflow__V1__ListIncidentsResponse *r = incidents_c(key, code, 0, NULL, &st);
    ck_ok(st);
    return r;
}

static Workflow__V1__Instance *
cancel(const char *id)
{
    Workflow__V1__CancelInstanceRequest req = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    wf_client_status st;
    Workflow__V1__CancelInstanceResponse *r =
        call(as("ops"), "CancelInstance", &req, &workflow__v1__cancel_instance_response__descriptor,
             &st);
    ck_ok(st);
    return r->instance;
}

/* ListInstances of any starter of key; the other fields from base. */
static Workflow__V1__ListInstancesResponse *
instances_c(const char *key, Workflow__V1__ListInstancesRequest *req, wf_client_status *st)
{
    req->started_by = "*";
    req->definition_key = (char *)key;
    return call(as(NULL), "ListInstances", req, &workflow__v1__list_instances_response__descriptor,
                st);
}

/* The ids of a listing as names: the index in ids[] of each instance,
 * e.g. "0 2 " (a static buffer). */
static const char *
names_of(const Workflow__V1__ListInstancesResponse *r, char *const *ids, size_t n_ids)
{
    static char out[256];
    out[0] = '\0';
    for (size_t i = 0; i < r->n_instances; i++) {
        size_t k = 0;
        while (k < n_ids && strcmp(ids[k], r->instances[i]->id) != 0)
            k++;
        char part[16];
        snprintf(part, sizeof part, "%zu ", k);
        strcat(out, part);
    }
    return out;
}

static Workflow__V1__VariableFilter *
vf(const char *path, const char *value)
{
    Workflow__V1__VariableFilter *f = wf_arena_alloc(ta, sizeof *f);
    workflow__v1__variable_filter__init(f);
    f->path = (char *)path;
    f->value_json = (char *)value;
    return f;
}

/* ---- definitions ----------------------------------------------------------------------------- */

/* Starts an instance of key and fails its job for good (one attempt). */
static Workflow__V1__Instance *
start_and_fail(const char *key, const char *type)
{
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, "{\"amount\":1}", &st);
    ck_ok(st);
    Workflow__V1__ActivateJobsResponse *a = activate(type, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(fail_job(a->jobs[0]->key, "card declined", 0, -1, &st), 0);
    return in;
}

/* ---- ListIncidents ----------------------------------------------------------------------- */

WF_TEST(test_job_failure_is_listed_until_retry)
{
    char *key = u("inc-job");
    char *type = u("charge");
    ck_assert(deploy(guarded_job_net(key, type, 1))->created);
    int64_t before = wf_now_us();
    Workflow__V1__Instance *in = start_and_fail(key, type);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);

    Workflow__V1__ListIncidentsResponse *r = incidents(key, NULL);
    ck_assert_uint_eq(r->n_incidents, 1);
    Workflow__V1__Incident *inc = r->incidents[0];
    ck_assert_str_eq(inc->instance_id, in->id);
    ck_assert_str_eq(inc->root_instance_id, in->id);
    ck_assert_str_eq(inc->definition_key, key);
    ck_assert_int_eq(inc->definition_version, 1);
    ck_assert_str_eq(inc->transition_id, "work");
    ck_assert_str_eq(inc->code, "JOB_FAILED");
    ck_assert_str_eq(inc->message, g->last_error);
    ck_assert_msg(strstr(inc->message, "card declined") != NULL, "%s", inc->message);
    ck_assert_int_eq(inc->attempts, 1);
    ck_assert(us_of(inc->since) >= before && us_of(inc->since) <= wf_now_us());
    ck_assert_str_eq(r->next_page_token, "");
    /* By code: only its own. */
    ck_assert_uint_eq(incidents(key, "JOB_FAILED")->n_incidents, 1);
    ck_assert_uint_eq(incidents(key, "NO_ARC_MATCHED")->n_incidents, 0);
    /* Unfiltered, it is among the tenant's incidents. */
    bool found = false;
    const char *token = NULL;
    for (int page = 0; page < 1000 && !found; page++) {
        wf_client_status st;
        r = incidents_c(NULL, NULL, 500, token, &st);
        ck_ok(st);
        for (size_t i = 0; i < r->n_incidents; i++)
            found = found || strcmp(r->incidents[i]->instance_id, in->id) == 0;
        if (r->next_page_token[0] == '\0')
            break;
        token = wf_arena_strdup(ta, r->next_page_token);
    }
    ck_assert(found);
    /* ListInstances by status FAILED lists it. */
    Workflow__V1__ListInstancesRequest lr = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    lr.status = I_FAILED;
    wf_client_status st;
    Workflow__V1__ListInstancesResponse *li = instances_c(key, &lr, &st);
    ck_ok(st);
    ck_assert_uint_eq(li->n_instances, 1);
    ck_assert_str_eq(li->instances[0]->id, in->id);

    /* RetryInstance resolves it (INCIDENT_RESOLVED): off the list. */
    Workflow__V1__Instance *again = retry_c(in->id, &st);
    ck_ok(st);
    ck_assert_int_eq(again->status, I_RUNNING);
    ck_assert_uint_eq(incidents(key, NULL)->n_incidents, 0);
    ck_assert_int_eq(count_of(event_types(in->id), "INCIDENT_RESOLVED"), 1);
    lr = (Workflow__V1__ListInstancesRequest)WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    lr.status = I_FAILED;
    ck_assert_uint_eq(instances_c(key, &lr, &st)->n_instances, 0);

    /* It fails again: a new incident, later than the first. */
    int64_t first = us_of(inc->since);
    Workflow__V1__ActivateJobsResponse *a = activate(type, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(fail_job(a->jobs[0]->key, "declined again", 0, -1, &st), 0);
    r = incidents(key, NULL);
    ck_assert_uint_eq(r->n_incidents, 1);
    ck_assert_str_eq(r->incidents[0]->code, "JOB_FAILED");
    ck_assert(us_of(r->incidents[0]->since) > first);
    ck_assert_msg(strstr(r->incidents[0]->message, "declined again") != NULL, "%s",
                  r->incidents[0]->message);
}
END_TEST

WF_TEST(test_unroutable_completion_is_listed_until_cancel)
{
    char *key = u("inc-route");
    char *type = u("charge");
    ck_assert(deploy(guarded_job_net(key, type, 3))->created);
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
    ck_ok(st);
    Workflow__V1__ActivateJobsResponse *a = activate(type, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, "{\"amount\":-5}", &st), 0);

    Workflow__V1__ListIncidentsResponse *r = incidents(key, "NO_ARC_MATCHED");
    ck_assert_uint_eq(r->n_incidents, 1);
    Workflow__V1__Incident *inc = r->incidents[0];
    ck_assert_str_eq(inc->instance_id, in->id);
    ck_assert_str_eq(inc->transition_id, "work");
    ck_assert_str_eq(inc->code, "NO_ARC_MATCHED");
    ck_assert_int_eq(inc->attempts, 1);
    ck_assert_str_eq(inc->message, get_instance(in->id)->last_error);
    ck_assert_uint_eq(incidents(key, "JOB_FAILED")->n_incidents, 0);

    /* CancelInstance ends it: off the list, the instance CANCELLED. */
    ck_assert_int_eq(cancel(in->id)->status, I_CANCELLED);
    ck_assert_uint_eq(incidents(key, NULL)->n_incidents, 0);
}
END_TEST

/* s -> reserve (compensated by refund) -> p1 -> ship -> e, one attempt each. */
WF_TEST(test_failed_compensation_is_listed_until_retry)
{
    char *key = u("inc-saga");
    char *reserve = u("reserve"), *ship = u("ship"), *refund = u("refund");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p1", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "reserve", T_AUTO);
    with_job(t, reserve, 1, 0);
    t->compensation_job_type = refund;
    with_job(trans(n, "ship", T_AUTO), ship, 1, 0);
    arc(n, "s", "reserve");
    arc(n, "reserve", "p1");
    arc(n, "p1", "ship");
    arc(n, "ship", "e");
    ck_assert(deploy(n)->created);
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, NULL, &st);
    ck_ok(st);
    Workflow__V1__ActivateJobsResponse *a = activate(reserve, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(as("w1"), a->jobs[0]->key, NULL, &st), 0);
    a = activate(ship, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(fail_job(a->jobs[0]->key, "carrier down", 0, -1, &st), 0);
    /* Compensating is no incident. */
    ck_assert_int_eq(get_instance(in->id)->instance->status,
                     WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATING);
    ck_assert_uint_eq(incidents(key, NULL)->n_incidents, 0);
    a = activate(refund, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_int_eq(fail_job(a->jobs[0]->key, "refund refused", 0, -1, &st), 0);

    Workflow__V1__ListIncidentsResponse *r = incidents(key, "COMPENSATION_FAILED");
    ck_assert_uint_eq(r->n_incidents, 1);
    Workflow__V1__Incident *inc = r->incidents[0];
    ck_assert_str_eq(inc->instance_id, in->id);
    ck_assert_str_eq(inc->transition_id, "reserve");
    ck_assert_int_eq(inc->attempts, 1);
    ck_assert_msg(strstr(inc->message, "refund refused") != NULL, "%s", inc->message);
    ck_assert_str_eq(inc->message, get_instance(in->id)->last_error);

    /* The retry re-arms the refund: COMPENSATING again, no incident. */
    Workflow__V1__Instance *after = retry_c(in->id, &st);
    ck_ok(st);
    ck_assert_int_eq(after->status, WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATING);
    ck_assert_uint_eq(incidents(key, NULL)->n_incidents, 0);
    ck_assert_int_eq(count_of(event_types(in->id), "INCIDENT_RESOLVED"), 1);
}
END_TEST

WF_TEST(test_incidents_paged_and_filtered)
{
    char *key = u("inc-page");
    char *other = u("inc-other");
    char *type = u("charge");
    char *type2 = u("charge2");
    ck_assert(deploy(guarded_job_net(key, type, 1))->created);
    ck_assert(deploy(guarded_job_net(other, type2, 1))->created);
    char *ids[3];
    for (int i = 0; i < 3; i++) {
        ids[i] = start_and_fail(key, type)->id;
        sleep_ms(2);
    }
    char *oid = start_and_fail(other, type2)->id;

    /* Longest open first, one per page, every page bound to its filters. */
    const char *token = NULL;
    for (int i = 0; i < 3; i++) {
        wf_client_status st;
        Workflow__V1__ListIncidentsResponse *r = incidents_c(key, NULL, 1, token, &st);
        ck_ok(st);
        ck_assert_uint_eq(r->n_incidents, 1);
        ck_assert_str_eq(r->incidents[0]->instance_id, ids[i]);
        if (i < 2) {
            ck_assert_str_ne(r->next_page_token, "");
            /* The token with another filter, and with another code. */
            ck_assert_ptr_null(incidents_c(other, NULL, 1, r->next_page_token, &st));
            ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
            ck_assert_ptr_null(incidents_c(key, "JOB_FAILED", 1, r->next_page_token, &st));
            ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
        } else {
            ck_assert_str_eq(r->next_page_token, "");
        }
        token = wf_arena_strdup(ta, r->next_page_token);
    }
    Workflow__V1__ListIncidentsResponse *r = incidents(other, "JOB_FAILED");
    ck_assert_uint_eq(r->n_incidents, 1);
    ck_assert_str_eq(r->incidents[0]->instance_id, oid);

    /* Refusals. */
    wf_client_status st;
    ck_assert_ptr_null(incidents_c(key, "BOOM", 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_int_eq(st.nviolations, 1);
    ck_assert_msg(strncmp(st.violations[0], "code:", 5) == 0, "%s", st.violations[0]);
    ck_assert_ptr_null(incidents_c(key, NULL, -1, NULL, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_ptr_null(incidents_c(key, NULL, 0, "garbage", &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");

    /* Another tenant sees none of them. */
    Workflow__V1__ListIncidentsRequest req = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    req.definition_key = key;
    Workflow__V1__ListIncidentsResponse *o =
        call(as_tenant("elsewhere", NULL), "ListIncidents", &req,
             &workflow__v1__list_incidents_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(o->n_incidents, 0);
}
END_TEST

/* ---- ListInstances filters --------------------------------------------------------------- */

WF_TEST(test_list_instances_by_time_status_and_variables)
{
    char *key = u("find");
    char *type = u("find-job");
    ck_assert(deploy(guarded_job_net(key, type, 1))->created);
    static const char *const vars[] = {
        "{\"amount\":1,\"customer\":{\"country\":\"DE\",\"vip\":true}}",
        "{\"amount\":1.0,\"customer\":{\"country\":\"FR\"}}",
        "{\"amount\":2,\"customer\":{\"country\":\"DE\",\"vip\":null}}",
        "{\"amount\":\"1\",\"customer\":\"DE\"}",
    };
    char *ids[4];
    int64_t created[4];
    for (int i = 0; i < 4; i++) {
        wf_client_status st;
        Workflow__V1__Instance *in = start_v(as("boss"), key, 0, vars[i], &st);
        ck_ok(st);
        ids[i] = in->id;
        created[i] = us_of(in->created_at);
        sleep_ms(2);
    }
    /* 0 is cancelled, 2 fails (its job was the only one activated). */
    Workflow__V1__Instance *c0 = cancel(ids[0]);
    int64_t ended0 = us_of(c0->ended_at);
    ck_assert(ended0 > 0);

    struct {
        const char *path, *value;
    } eq[][3] = {
        {{"customer.country", "\"DE\""}},
        {{"amount", "1"}},
        {{"amount", "1.0"}},
        {{"amount", "\"1\""}},
        {{"customer.vip", "null"}},
        {{"customer.vip", "true"}},
        {{"customer", "\"DE\""}},
        {{"customer.country", "\"DE\""}, {"amount", "2"}},
        {{"customer.country", "\"DE\""}, {"customer.country", "\"FR\""}},
        {{"nope", "null"}},
    };
    const char *want[] = {"0 2 ", "0 1 ", "0 1 ", "3 ", "2 ", "0 ", "3 ", "2 ", "", ""};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        Workflow__V1__VariableFilter *f[3];
        size_t n = 0;
        while (n < 3 && eq[k][n].path != NULL) {
            f[n] = vf(eq[k][n].path, eq[k][n].value);
            n++;
        }
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        req.variables = f;
        req.n_variables = n;
        wf_client_status st;
        Workflow__V1__ListInstancesResponse *r = instances_c(key, &req, &st);
        ck_ok(st);
        ck_assert_msg(strcmp(names_of(r, ids, 4), want[k]) == 0, "case %zu: got \"%s\"", k,
                      names_of(r, ids, 4));
    }

    /* Time ranges, and with variables and status. */
    struct {
        int64_t ca, cb, ea, eb;
        int status;
        const char *path, *value;
        const char *want;
    } tc[] = {
        {created[1], 0, 0, 0, 0, NULL, NULL, "1 2 3 "},
        {0, created[1], 0, 0, 0, NULL, NULL, "0 "},
        {created[1], created[3], 0, 0, 0, NULL, NULL, "1 2 "},
        {0, 0, ended0, 0, 0, NULL, NULL, "0 "},
        {0, 0, 0, ended0, 0, NULL, NULL, ""},
        {0, 0, ended0, ended0 + 1, 0, NULL, NULL, "0 "},
        {0, 0, ended0 + 1, 0, 0, NULL, NULL, ""},
        {created[1], 0, 0, 0, 0, "customer.country", "\"DE\"", "2 "},
        {0, 0, 0, 0, I_CANCELLED, "customer.country", "\"DE\"", "0 "},
        {0, 0, 0, 0, I_RUNNING, "customer.country", "\"DE\"", "2 "},
        {0, 0, 0, 0, I_FAILED, NULL, NULL, ""},
    };
    for (size_t k = 0; k < sizeof tc / sizeof tc[0]; k++) {
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        req.created_after = tc[k].ca != 0 ? ts_of(tc[k].ca) : NULL;
        req.created_before = tc[k].cb != 0 ? ts_of(tc[k].cb) : NULL;
        req.ended_after = tc[k].ea != 0 ? ts_of(tc[k].ea) : NULL;
        req.ended_before = tc[k].eb != 0 ? ts_of(tc[k].eb) : NULL;
        req.status = tc[k].status;
        Workflow__V1__VariableFilter *f[1] = {tc[k].path != NULL ? vf(tc[k].path, tc[k].value)
                                                                 : NULL};
        req.variables = f;
        req.n_variables = tc[k].path != NULL ? 1 : 0;
        wf_client_status st;
        Workflow__V1__ListInstancesResponse *r = instances_c(key, &req, &st);
        ck_ok(st);
        ck_assert_msg(strcmp(names_of(r, ids, 4), tc[k].want) == 0, "case %zu: got \"%s\"", k,
                      names_of(r, ids, 4));
    }

    /* Instance 2 fails: FAILED lists it, with its variables. */
    Workflow__V1__ActivateJobsResponse *a = activate(type, 3, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 3);
    for (size_t i = 0; i < a->n_jobs; i++) {
        wf_client_status st;
        if (strcmp(a->jobs[i]->instance_id, ids[2]) == 0)
            ck_assert_int_eq(fail_job(a->jobs[i]->key, "no", 0, -1, &st), 0);
    }
    Workflow__V1__ListInstancesRequest freq = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    freq.status = I_FAILED;
    Workflow__V1__VariableFilter *ff[1] = {vf("customer.country", "\"DE\"")};
    freq.variables = ff;
    freq.n_variables = 1;
    wf_client_status st;
    ck_assert_str_eq(names_of(instances_c(key, &freq, &st), ids, 4), "2 ");
    ck_ok(st);

    /* Pages of one under a variable filter, bound to it. */
    const char *token = NULL;
    const char *pages[] = {"0 ", "1 "};
    for (int i = 0; i < 2; i++) {
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        Workflow__V1__VariableFilter *f[1] = {vf("amount", "1")};
        req.variables = f;
        req.n_variables = 1;
        req.page_size = 1;
        req.page_token = (char *)(token != NULL ? token : "");
        Workflow__V1__ListInstancesResponse *r = instances_c(key, &req, &st);
        ck_ok(st);
        ck_assert_str_eq(names_of(r, ids, 4), pages[i]);
        if (i == 0) {
            ck_assert_str_ne(r->next_page_token, "");
            /* The token with another value: refused. */
            Workflow__V1__ListInstancesRequest bad = req;
            Workflow__V1__VariableFilter *g[1] = {vf("amount", "2")};
            bad.variables = g;
            bad.page_token = r->next_page_token;
            ck_assert_ptr_null(instances_c(key, &bad, &st));
            ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
        }
        token = wf_arena_strdup(ta, r->next_page_token);
    }
    /* The last page of one ends with a token that lists nothing more. */
    if (token[0] != '\0') {
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        Workflow__V1__VariableFilter *f[1] = {vf("amount", "1")};
        req.variables = f;
        req.n_variables = 1;
        req.page_size = 1;
        req.page_token = (char *)token;
        Workflow__V1__ListInstancesResponse *r = instances_c(key, &req, &st);
        ck_ok(st);
        ck_assert_uint_eq(r->n_instances, 0);
        ck_assert_str_eq(r->next_page_token, "");
    }
}
END_TEST

/* One refused ListInstances: code, reason and the field of its violation. */
static void
refused(const char *key, Workflow__V1__ListInstancesRequest *req, const char *reason,
        const char *field)
{
    wf_client_status st;
    ck_assert_ptr_null(instances_c(key, req, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, reason);
    ck_assert_msg(st.nviolations >= 1, "no violation: %s", st.message);
    size_t n = strlen(field);
    ck_assert_msg(strncmp(st.violations[0], field, n) == 0 && st.violations[0][n] == ':',
                  "violation \"%s\", want field %s", st.violations[0], field);
}

WF_TEST(test_list_instances_filter_refusals)
{
    char *key = u("refuse");
    static const char *const bad_paths[] = {"", "a..b", ".a", "a.", "a.b.c.d.e.f.g.h.i", "a\tb"};
    for (size_t i = 0; i < sizeof bad_paths / sizeof bad_paths[0]; i++) {
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        Workflow__V1__VariableFilter *f[2] = {vf("ok", "1"), vf(bad_paths[i], "1")};
        req.variables = f;
        req.n_variables = 2;
        refused(key, &req, "INVALID_ARGUMENT", "variables[1].path");
    }
    char longkey[200];
    memset(longkey, 'k', 129);
    longkey[129] = '\0';
    {
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        Workflow__V1__VariableFilter *f[1] = {vf(longkey, "1")};
        req.variables = f;
        req.n_variables = 1;
        refused(key, &req, "INVALID_ARGUMENT", "variables[0].path");
    }
    static const char *const bad_values[] = {"DE", "", "{\"a\":1}", "[1]", "1 2", "'x'"};
    for (size_t i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        Workflow__V1__VariableFilter *f[1] = {vf("a", bad_values[i])};
        req.variables = f;
        req.n_variables = 1;
        refused(key, &req, "INVALID_JSON", "variables[0].value_json");
    }
    {
        /* At most 8 filters: 8 pass, 9 do not. */
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        Workflow__V1__VariableFilter *f[9];
        for (int i = 0; i < 9; i++)
            f[i] = vf("a", "1");
        req.variables = f;
        req.n_variables = 8;
        wf_client_status st;
        ck_assert_ptr_nonnull(instances_c(key, &req, &st));
        ck_ok(st);
        req.n_variables = 9;
        refused(key, &req, "INVALID_ARGUMENT", "variables");
    }
    int64_t now = wf_now_us();
    {
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        req.created_after = ts_of(now);
        req.created_before = ts_of(now);
        refused(key, &req, "INVALID_ARGUMENT", "created_before");
        req.created_before = ts_of(now - 1000000);
        refused(key, &req, "INVALID_ARGUMENT", "created_before");
    }
    {
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        req.ended_after = ts_of(now);
        req.ended_before = ts_of(now - 1);
        refused(key, &req, "INVALID_ARGUMENT", "ended_before");
    }
    {
        /* Out of the Timestamp range (years 1 to 9999). */
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        Google__Protobuf__Timestamp *t = ts_of(0);
        t->seconds = INT64_C(253402300800); /* 10000-01-01 */
        req.created_after = t;
        refused(key, &req, "INVALID_ARGUMENT", "created_after");
        Google__Protobuf__Timestamp *e = ts_of(0);
        e->seconds = INT64_C(-62135596801); /* before 0001-01-01 */
        req.created_after = NULL;
        req.ended_before = e;
        refused(key, &req, "INVALID_ARGUMENT", "ended_before");
    }
    {
        /* A bound before the epoch is allowed: nothing ended before it. */
        Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
        req.ended_before = ts_of(-1000000);
        wf_client_status st;
        Workflow__V1__ListInstancesResponse *r = instances_c(key, &req, &st);
        ck_ok(st);
        ck_assert_uint_eq(r->n_instances, 0);
    }
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_incidents", wf_test_store_name(), setup, teardown, 60));
}
