/*
 * End-to-end tests of job priority, on the memory store and on Postgres
 * (WF_TEST_STORE=pg), through a real gRPC client: the priority a job gets
 * from its transition's job_priority_expression (or a job step's
 * priority_expression) over the variables, a result out of range refused
 * or an incident, UpdateJob (reordering, idempotency, refusals), the
 * activation order of ActivateJobs and StreamActivatedJobs (highest
 * priority first, oldest first within a priority, a high-priority job
 * ahead of a backlog of 1,000 low ones), and aging: under a stream of
 * high-priority jobs a low-priority one is activated before any job that
 * became activatable more than (difference of priorities) x aging step
 * after it, a bound computed from the step (WF_JOB_PRIORITY_AGING_MS), not
 * measured.
 *
 * Job types and keys are unique per test (Postgres keeps rows between
 * runs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/status.h>

#include "net_kit.h"
#include "test_support.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define NO_ID "00000000-0000-4000-8000-000000000000"
#define STEPS_KIND WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS

/* The aging steps of the cases: a long one (60 s), so that the backlog's
 * age never outweighs 100 points while the test fills it, and a short one
 * (20 ms times the test time scale), so that aging shows within seconds. */
static int short_aging_ms;

static void
setup_long_aging(void)
{
    static const char *env[] = {"WF_JOB_PRIORITY_AGING_MS=60000", NULL};
    setup_with(env);
}

static void
setup_short_aging(void)
{
    static char aging[64];
    short_aging_ms = 20 * wf_test_time_scale();
    snprintf(aging, sizeof aging, "WF_JOB_PRIORITY_AGING_MS=%d", short_aging_ms);
    const char *env[] = {aging, NULL};
    setup_with(env);
}

/* s -> work (AUTO job of type, priority from expr unless NULL) -> e;
 * deployed, its key. */
static const char *
prio_def(const char *type, const char *expr)
{
    nb *n = job_net(u("prio"), type, 0, 0);
    if (expr != NULL)
        n->t[0]->job_priority_expression = (char *)expr;
    deploy(n);
    return n->d.key;
}

/* The one unfinished job of instance id (GetInstance). */
static Workflow__V1__Job *
job_of(const char *id)
{
    Workflow__V1__GetInstanceResponse *g = get_instance(id);
    ck_assert_uint_eq(g->n_jobs, 1);
    return g->jobs[0];
}

static Workflow__V1__UpdateJobResponse *
update_job(wf_client *c, const char *instance_id, const char *job_id, int priority,
           const char *request_id, wf_client_status *st)
{
    Workflow__V1__UpdateJobRequest req = WORKFLOW__V1__UPDATE_JOB_REQUEST__INIT;
    Workflow__V1__JobPriority p = WORKFLOW__V1__JOB_PRIORITY__INIT;
    req.instance_id = (char *)instance_id;
    req.job_id = (char *)job_id;
    p.value = priority;
    req.priority = priority >= -1000 ? &p : NULL; /* below -1000: absent */
    req.request_id = (char *)(request_id != NULL ? request_id : "");
    return call(c, "UpdateJob", &req, &workflow__v1__update_job_response__descriptor, st);
}

static int64_t
us_of(const Google__Protobuf__Timestamp *t)
{
    ck_assert_ptr_nonnull(t);
    return t->seconds * 1000000 + t->nanos / 1000;
}

/* ---- the order of activation ----------------------------------------------------------- */

WF_CASE_TEST("long_aging", test_high_priority_passes_a_backlog)
{
    char *type = u("backlog");
    const char *key = prio_def(type, ".p");
    enum { LOW = 1000 };
    static Workflow__V1__Instance *low[LOW];
    for (int i = 0; i < LOW; i++)
        low[i] = start_boss(key, "{\"p\":0}");
    Workflow__V1__Instance *high = start_boss(key, "{\"p\":100}");
    /* The high-priority job, created last, first. */
    Workflow__V1__ActivateJobsResponse *r = activate(type, 1, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 1);
    ck_assert_str_eq(r->jobs[0]->instance_id, high->id);
    ck_assert_int_eq(r->jobs[0]->priority, 100);
    /* Then equal priorities in creation order. */
    r = activate(type, 3, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_str_eq(r->jobs[i]->instance_id, low[i]->id);
        ck_assert_int_eq(r->jobs[i]->priority, 0);
    }
    /* A stream takes the same order: a new high one before the backlog. */
    Workflow__V1__Instance *high2 = start_boss(key, "{\"p\":60}");
    Workflow__V1__StreamActivatedJobsRequest req =
        WORKFLOW__V1__STREAM_ACTIVATED_JOBS_REQUEST__INIT;
    req.job_type = type;
    req.worker = "ws";
    req.credit = 2;
    wf_client_call_opts o = {0};
    o.no_deadline = 1;
    wf_client_stream *s = wf_client_stream_jobs(as(NULL), &req, &o);
    ck_assert_ptr_nonnull(s);
    const char *want[2] = {high2->id, low[3]->id};
    for (int i = 0; i < 2; i++) {
        Workflow__V1__Job *j = NULL;
        wf_client_status st;
        ck_assert_int_eq(wf_client_next_job(s, 5000 * wf_test_time_scale(), &j, &st), 1);
        ck_assert_str_eq(j->instance_id, want[i]);
        protobuf_c_message_free_unpacked(&j->base, NULL);
    }
    wf_client_stream_close(s);
}
END_TEST

WF_CASE_TEST("default", test_update_job_reorders)
{
    char *type = u("reorder");
    const char *key = prio_def(type, NULL);
    Workflow__V1__Instance *in[3];
    Workflow__V1__Job *job[3];
    for (int i = 0; i < 3; i++) {
        in[i] = start_boss(key, NULL);
        job[i] = job_of(in[i]->id);
        ck_assert_int_eq(job[i]->priority, 50); /* the default */
        ck_assert_int_eq(us_of(job[i]->created_at) > 0, 1);
    }
    wf_client_status st;
    const char *rid = u("upd");
    Workflow__V1__UpdateJobResponse *r = update_job(as(NULL), in[2]->id, job[2]->id, 80, rid, &st);
    ck_ok(st);
    ck_assert_str_eq(r->job->id, job[2]->id);
    ck_assert_int_eq(r->job->priority, 80);
    /* Idempotent by request id: the same answer; another request under
     * the id is refused. */
    r = update_job(as(NULL), in[2]->id, job[2]->id, 80, rid, &st);
    ck_ok(st);
    ck_assert_int_eq(r->job->priority, 80);
    update_job(as(NULL), in[2]->id, job[2]->id, 81, rid, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");
    update_job(as(NULL), in[0]->id, job[0]->id, 10, NULL, &st);
    ck_ok(st);
    /* The same priority again changes nothing and writes no event. */
    update_job(as(NULL), in[0]->id, job[0]->id, 10, NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(count_of(event_types(in[0]->id), "JOB_UPDATED"), 1);
    ck_assert_int_eq(count_of(event_types(in[1]->id), "JOB_UPDATED"), 0);
    const wf_event_row *ev = last_event(in[2]->id, "JOB_UPDATED");
    ck_assert_ptr_nonnull(ev);
    ck_assert_ptr_nonnull(strstr(ev->data_json, "\"previousPriority\":50"));
    ck_assert_ptr_nonnull(strstr(ev->data_json, "\"priority\":80"));
    Workflow__V1__ActivateJobsResponse *a = activate(type, 3, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 3);
    ck_assert_str_eq(a->jobs[0]->id, job[2]->id);
    ck_assert_str_eq(a->jobs[1]->id, job[1]->id);
    ck_assert_str_eq(a->jobs[2]->id, job[0]->id);
    ck_assert_int_eq(a->jobs[0]->priority, 80);
    ck_assert_int_eq(a->jobs[2]->priority, 10);
    /* A leased job takes a new priority too (it counts when the job is
     * activatable again). */
    r = update_job(as(NULL), in[1]->id, job[1]->id, 95, NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(r->job->priority, 95);
    ck_assert_str_eq(r->job->key, a->jobs[1]->key);
    ck_assert_int_eq(job_of(in[1]->id)->priority, 95);
}
END_TEST

WF_CASE_TEST("default", test_update_job_refusals)
{
    char *type = u("refuse");
    const char *key = prio_def(type, NULL);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__Job *job = job_of(in->id);
    wf_client_status st;
    update_job(as(NULL), in->id, NO_ID, 60, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "JOB_NOT_FOUND");
    update_job(as(NULL), in->id, "x", 60, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "JOB_NOT_FOUND");
    update_job(as(NULL), NO_ID, job->id, 60, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "JOB_NOT_FOUND");
    /* Another tenant's job is not found. */
    update_job(as_tenant(u("other"), NULL), in->id, job->id, 60, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "JOB_NOT_FOUND");
    update_job(as(NULL), "", job->id, 60, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "instance_id", NULL));
    update_job(as(NULL), in->id, "", 60, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "job_id", NULL));
    update_job(as(NULL), in->id, job->id, 101, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "priority.value", NULL));
    update_job(as(NULL), in->id, job->id, -1, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    update_job(as(NULL), in->id, job->id, -2000, NULL, &st); /* absent */
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert(has_violation(&st, "priority", NULL));
    ck_assert_int_eq(job_of(in->id)->priority, 50);
    /* A finished job is gone. */
    Workflow__V1__Job *a = one_job(type);
    ck_assert_int_eq(complete_job_c(as(NULL), a->key, NULL, &st), GRPC_STATUS_OK);
    update_job(as(NULL), in->id, job->id, 60, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "JOB_NOT_FOUND");
}
END_TEST

/* ---- the expression ------------------------------------------------------------------------ */

WF_CASE_TEST("default", test_priority_expression_from_variables)
{
    char *type = u("vip");
    const char *key = prio_def(type, "if .vip then 90 else 20 end");
    Workflow__V1__Instance *plain = start_boss(key, "{\"vip\":false}");
    Workflow__V1__Instance *vip = start_boss(key, "{\"vip\":true}");
    ck_assert_int_eq(job_of(plain->id)->priority, 20);
    ck_assert_int_eq(job_of(vip->id)->priority, 90);
    const wf_event_row *ev = last_event(vip->id, "JOB_CREATED");
    ck_assert_ptr_nonnull(ev);
    ck_assert_ptr_nonnull(strstr(ev->data_json, "\"priority\":90"));
    Workflow__V1__ActivateJobsResponse *a = activate(type, 1, 0, 0);
    ck_assert_uint_eq(a->n_jobs, 1);
    ck_assert_str_eq(a->jobs[0]->instance_id, vip->id); /* created second, taken first */
    /* GetDefinition gives the expression back. */
    Workflow__V1__GetDefinitionRequest g = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    g.key = (char *)key;
    wf_client_status st;
    Workflow__V1__GetDefinitionResponse *d = call(
        as("dev"), "GetDefinition", &g, &workflow__v1__get_definition_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(d->definition->transitions[0]->job_priority_expression,
                     "if .vip then 90 else 20 end");
}
END_TEST

WF_CASE_TEST("default", test_priority_expression_at_deploy)
{
    wf_client_status st;
    nb *n = job_net(u("bad"), u("bad"), 0, 0);
    n->t[0]->job_priority_expression = ".p |";
    deploy_d(as("dev"), &n->d, false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(has_violation(
        &st, "definition.transitions[0].job_priority_expression: ", "EXPRESSION_INVALID"));
    nb *m = one_step(u("usr"), "t", T_USER);
    m->t[0]->assignee = user_assignee("bob", NULL);
    m->t[0]->job_priority_expression = "50";
    deploy_d(as("dev"), &m->d, false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(has_violation(
        &st, "definition.transitions[0].job_priority_expression: ", "TRIGGER_FIELD_CONFLICT"));
}
END_TEST

/* A one-step list: a job step of type with priority_expression expr. */
static Workflow__V1__Definition *
job_step_def(const char *key, const char *type, const char *expr)
{
    Workflow__V1__Definition *d = wf_arena_calloc(ta, 1, sizeof *d);
    workflow__v1__definition__init(d);
    d->key = (char *)key;
    d->kind = STEPS_KIND;
    Workflow__V1__Step *s = wf_arena_calloc(ta, 1, sizeof *s);
    workflow__v1__step__init(s);
    s->id = "charge";
    s->job = wf_arena_calloc(ta, 1, sizeof *s->job);
    workflow__v1__job_step__init(s->job);
    s->job->job_type = (char *)type;
    s->job->priority_expression = (char *)expr;
    d->steps = wf_arena_calloc(ta, 1, sizeof *d->steps);
    d->steps[0] = s;
    d->n_steps = 1;
    return d;
}

WF_CASE_TEST("default", test_job_step_priority_expression)
{
    wf_client_status st;
    char *type = u("stepjob");
    deploy_d(as("dev"), job_step_def(u("steps"), type, "[.p"), false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(
        has_violation(&st, "definition.steps[0].job.priority_expression: ", "EXPRESSION_INVALID"));
    Workflow__V1__Definition *d = job_step_def(u("steps"), type, ".p * 2");
    ck_assert_ptr_nonnull(deploy_d(as("dev"), d, false, &st));
    ck_ok(st);
    Workflow__V1__Instance *in = start_boss(d->key, "{\"p\":35}");
    ck_assert_int_eq(job_of(in->id)->priority, 70);
}
END_TEST

/* A result that is not an integer 0-100 is not clamped: the StartInstance
 * that creates the job is refused, and a job created by a later step
 * gives the instance an incident (INVALID_ARGUMENT), as any expression
 * failing there does. */
WF_CASE_TEST("default", test_priority_expression_bad_result)
{
    char *type = u("badres");
    const char *key = prio_def(type, ".p");
    wf_client_status st;
    static const char *const bad[] = {"{\"p\":101}", "{\"p\":-1}", "{\"p\":\"high\"}",
                                      "{\"p\":7.5}", "{}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(start_v(as("boss"), key, 0, bad[i], &st));
        ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
        ck_assert_msg(strstr(st.message, "job_priority_expression of transition \"work\"") != NULL,
                      "%s", st.message);
    }
    /* first (no expression) -> second (.p): the output of first makes .p
     * 101, so the second job is never created: an incident. */
    char *t1 = u("first"), *t2 = u("second");
    nb *n = net_new(u("two"));
    place(n, "s", START);
    place(n, "m", NORMAL);
    place(n, "e", END);
    with_job(trans(n, "first", T_AUTO), t1, 0, 0);
    with_job(trans(n, "second", T_AUTO), t2, 0, 0);
    n->t[1]->job_priority_expression = ".p";
    arc(n, "s", "first");
    arc(n, "first", "m");
    arc(n, "m", "second");
    arc(n, "second", "e");
    deploy(n);
    Workflow__V1__Instance *in = start_boss(n->d.key, "{\"p\":1}");
    Workflow__V1__Job *j = one_job(t1);
    ck_assert_int_eq(complete_job_c(as(NULL), j->key, "{\"p\":101}", &st), GRPC_STATUS_OK);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_msg(strstr(g->last_error, "job_priority_expression of transition \"second\" gave "
                                        "101, which is not 0 to 100") != NULL,
                  "%s", g->last_error);
    Workflow__V1__ListIncidentsRequest li = WORKFLOW__V1__LIST_INCIDENTS_REQUEST__INIT;
    li.definition_key = n->d.key;
    Workflow__V1__ListIncidentsResponse *l = call(
        as("ops"), "ListIncidents", &li, &workflow__v1__list_incidents_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_incidents, 1);
    ck_assert_str_eq(l->incidents[0]->code, "INVALID_ARGUMENT");
    ck_assert_str_eq(l->incidents[0]->instance_id, in->id);
}
END_TEST

/* ---- aging ---------------------------------------------------------------------------------- */

/* A priority-0 job, then a stream of priority-100 jobs, one activated per
 * new one. The low job ranks before every job that became activatable more
 * than 100 steps after it: each high job activated before it was created
 * at most 100 steps after it, and the one still waiting when it was
 * activated was created at least 100 steps after it. The bound is read
 * from the jobs' creation times, not from a clock. */
WF_CASE_TEST("short_aging", test_aging_bounds_the_wait)
{
    char *type = u("aging");
    const char *key = prio_def(type, ".p");
    Workflow__V1__Instance *low = start_boss(key, "{\"p\":0}");
    int64_t low_at = us_of(job_of(low->id)->created_at);
    const int64_t bound = 100 * short_aging_ms * 1000LL; /* (100 - 0) steps, in µs */
    int64_t last_high_at = 0, deadline = wf_mono_ms() + 120000LL * wf_test_time_scale();
    int before = 0;
    bool low_done = false;
    for (int i = 0; i < 100000 && !low_done; i++) {
        ck_assert_msg(wf_mono_ms() < deadline, "the low job waited past %d high ones", before);
        Workflow__V1__Instance *h = start_boss(key, "{\"p\":100}");
        last_high_at = us_of(job_of(h->id)->created_at);
        Workflow__V1__ActivateJobsResponse *r = activate(type, 1, 0, 0);
        ck_assert_uint_eq(r->n_jobs, 1);
        Workflow__V1__Job *j = r->jobs[0];
        if (strcmp(j->instance_id, low->id) == 0) {
            low_done = true;
            break;
        }
        ck_assert_int_eq(j->priority, 100);
        ck_assert_msg(us_of(j->created_at) <= low_at + bound,
                      "a high job created %lld µs after the low one went first",
                      (long long)(us_of(j->created_at) - low_at));
        before++;
    }
    ck_assert(low_done);
    /* The high job left waiting is the one the low job's age outranked. */
    ck_assert_msg(last_high_at >= low_at + bound, "low job taken %lld µs after it, bound %lld",
                  (long long)(last_high_at - low_at), (long long)bound);
}
END_TEST

int
main(void)
{
    const wf_test_case cases[] = {{"default", setup, teardown, 60},
                                  {"long_aging", setup_long_aging, teardown, 300},
                                  {"short_aging", setup_short_aging, teardown, 180},
                                  {NULL}};
    return wf_test_run(wf_test_suite_of("e2e_priority", cases));
}
