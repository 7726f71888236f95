/*
 * End-to-end tests of fairness keys, on the memory store and on Postgres
 * (WF_TEST_STORE=pg), through a real gRPC client: the key a job gets from
 * its transition's job_fairness_key_expression (or a job step's
 * fairness_key_expression) over the variables, shown as Job.fairness_key;
 * results refused; and the activation order of ActivateJobs and
 * StreamActivatedJobs: a pass first takes the head of each key's queue,
 * so a backlog of one key does not hold back the single job of another
 * key beyond one pass, priority still orders the heads and each key's
 * queue, and jobs without a key keep the order of priority and age.
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
#include "workflow/v1/workflow.pb-c.h"

#define STEPS_KIND WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS

/* s -> work (AUTO job of type, fairness key from key_expr and priority
 * from prio_expr unless NULL) -> e; deployed under a new key, that key. */
static const char *
fair_def(const char *type, const char *key_expr, const char *prio_expr)
{
    static int defs; /* a key of its own for each definition */
    nb *n = job_net(wf_arena_printf(ta, "fair%d-%s", ++defs, type), type, 0, 0);
    if (key_expr != NULL)
        n->t[0]->job_fairness_key_expression = (char *)key_expr;
    if (prio_expr != NULL)
        n->t[0]->job_priority_expression = (char *)prio_expr;
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

/* Starts an instance of key with {"t": tenant, "p": priority}. */
static Workflow__V1__Instance *
start_t(const char *key, const char *tenant, int priority)
{
    char vars[128];
    snprintf(vars, sizeof vars, "{\"t\":\"%s\",\"p\":%d}", tenant, priority);
    return start_boss(key, vars);
}

/* Whether the jobs of r hold instance id. */
static bool
holds(const Workflow__V1__ActivateJobsResponse *r, const char *id)
{
    for (size_t i = 0; i < r->n_jobs; i++)
        if (strcmp(r->jobs[i]->instance_id, id) == 0)
            return true;
    return false;
}

/* ---- the order of activation ----------------------------------------------------------- */

/* One key's backlog of 1,000 older jobs, then one job each of three other
 * keys: the next pass of four takes the three and the backlog's oldest;
 * a stream likewise takes a new key's job before the backlog. */
WF_CASE_TEST("default", test_small_keys_pass_a_big_backlog)
{
    char *type = u("backlog");
    const char *key = fair_def(type, ".t", NULL);
    enum { BIG = 1000 };
    static Workflow__V1__Instance *big[BIG];
    for (int i = 0; i < BIG; i++)
        big[i] = start_t(key, "big", 50);
    Workflow__V1__Instance *small[3] = {start_t(key, "a", 50), start_t(key, "b", 50),
                                        start_t(key, "c", 50)};
    ck_assert_str_eq(job_of(small[0]->id)->fairness_key, "a");
    Workflow__V1__ActivateJobsResponse *r = activate(type, 4, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 4);
    /* The heads by rank: the backlog's oldest, then a, b, c. */
    ck_assert_str_eq(r->jobs[0]->instance_id, big[0]->id);
    ck_assert_str_eq(r->jobs[0]->fairness_key, "big");
    static const char *const names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        ck_assert_str_eq(r->jobs[i + 1]->instance_id, small[i]->id);
        ck_assert_str_eq(r->jobs[i + 1]->fairness_key, names[i]);
    }
    /* With no other key waiting, the backlog drains in full passes. */
    r = activate(type, 4, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_str_eq(r->jobs[i]->instance_id, big[i + 1]->id);
    /* A stream: a new key's job comes in the first push, before the
     * backlog's. */
    Workflow__V1__Instance *late = start_t(key, "d", 50);
    Workflow__V1__StreamActivatedJobsRequest req =
        WORKFLOW__V1__STREAM_ACTIVATED_JOBS_REQUEST__INIT;
    req.job_type = type;
    req.worker = "ws";
    req.credit = 2;
    wf_client_call_opts o = {0};
    o.no_deadline = 1;
    wf_client_stream *s = wf_client_stream_jobs(as(NULL), &req, &o);
    ck_assert_ptr_nonnull(s);
    bool seen_late = false;
    for (int i = 0; i < 2; i++) {
        Workflow__V1__Job *j = NULL;
        wf_client_status st;
        ck_assert_int_eq(wf_client_next_job(s, 5000 * wf_test_time_scale(), &j, &st), 1);
        seen_late |= strcmp(j->instance_id, late->id) == 0;
        protobuf_c_message_free_unpacked(&j->base, NULL);
    }
    wf_client_stream_close(s);
    ck_assert(seen_late);
}
END_TEST

/* Priority orders each key's queue and the heads: a's later priority-90
 * job is its head and goes before b's head; a's priority-10 job, older,
 * comes after b's. */
WF_CASE_TEST("default", test_priority_within_and_across_keys)
{
    char *type = u("prio");
    const char *key = fair_def(type, ".t", ".p");
    Workflow__V1__Instance *a_low = start_t(key, "a", 10);
    Workflow__V1__Instance *a_high = start_t(key, "a", 90);
    Workflow__V1__Instance *b_mid = start_t(key, "b", 50);
    Workflow__V1__ActivateJobsResponse *r = activate(type, 2, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 2);
    ck_assert_str_eq(r->jobs[0]->instance_id, a_high->id);
    ck_assert_int_eq(r->jobs[0]->priority, 90);
    ck_assert_str_eq(r->jobs[1]->instance_id, b_mid->id);
    r = activate(type, 2, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 1);
    ck_assert_str_eq(r->jobs[0]->instance_id, a_low->id);
}
END_TEST

/* Without an expression a job has no key (Job.fairness_key empty) and the
 * order is priority and age as before; the jobs without a key are one key
 * among the others: one of them passes a keyed backlog in one pass. */
WF_CASE_TEST("default", test_jobs_without_keys)
{
    char *type = u("plain");
    const char *key = fair_def(type, NULL, ".p");
    Workflow__V1__Instance *in[4] = {start_t(key, "x", 50), start_t(key, "y", 50),
                                     start_t(key, "z", 80), start_t(key, "w", 50)};
    ck_assert_str_eq(job_of(in[0]->id)->fairness_key, "");
    Workflow__V1__ActivateJobsResponse *r = activate(type, 4, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 4);
    const int want[4] = {2, 0, 1, 3};
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(r->jobs[i]->instance_id, in[want[i]]->id);
        ck_assert_str_eq(r->jobs[i]->fairness_key, "");
    }
    /* A keyed definition and a keyless one of one job type. */
    char *mixed = u("mixed");
    const char *keyed = fair_def(mixed, ".t", NULL);
    const char *keyless = fair_def(mixed, NULL, NULL);
    enum { BIG = 200 };
    for (int i = 0; i < BIG; i++)
        start_t(keyed, "big", 50);
    Workflow__V1__Instance *lone = start_t(keyless, "-", 50);
    r = activate(mixed, 2, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 2);
    ck_assert_msg(holds(r, lone->id), "got keys \"%s\" and \"%s\"", r->jobs[0]->fairness_key,
                  r->jobs[1]->fairness_key);
}
END_TEST

/* ---- the expression ------------------------------------------------------------------------ */

WF_CASE_TEST("default", test_fairness_key_expression_results)
{
    char *type = u("results");
    const char *key = fair_def(type, ".t", NULL);
    wf_client_status st;
    Workflow__V1__Instance *n = start_boss(key, "{\"t\":42}");
    ck_assert_str_eq(job_of(n->id)->fairness_key, "42");
    Workflow__V1__Instance *none = start_boss(key, "{}");
    ck_assert_str_eq(job_of(none->id)->fairness_key, "");
    const wf_event_row *ev = last_event(n->id, "JOB_CREATED");
    ck_assert_ptr_nonnull(ev);
    ck_assert_ptr_nonnull(strstr(ev->data_json, "\"fairnessKey\":\"42\""));
    char longkey[200];
    memset(longkey, 'k', 129);
    longkey[129] = '\0';
    char vars[256];
    snprintf(vars, sizeof vars, "{\"t\":\"%s\"}", longkey);
    const char *bad[] = {"{\"t\":{}}", "{\"t\":[1]}", "{\"t\":true}", "{\"t\":1.5}", vars};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(start_v(as("boss"), key, 0, bad[i], &st));
        ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
        ck_assert_msg(strstr(st.message, "job_fairness_key_expression of transition \"work\"") !=
                          NULL,
                      "%s", st.message);
    }
    /* GetDefinition gives the expression back. */
    Workflow__V1__GetDefinitionRequest g = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    g.key = (char *)key;
    Workflow__V1__GetDefinitionResponse *d = call(
        as("dev"), "GetDefinition", &g, &workflow__v1__get_definition_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(d->definition->transitions[0]->job_fairness_key_expression, ".t");
}
END_TEST

WF_CASE_TEST("default", test_fairness_key_expression_at_deploy)
{
    wf_client_status st;
    nb *n = job_net(u("bad"), u("bad"), 0, 0);
    n->t[0]->job_fairness_key_expression = ".t |";
    deploy_d(as("dev"), &n->d, false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(has_violation(
        &st, "definition.transitions[0].job_fairness_key_expression: ", "EXPRESSION_INVALID"));
    nb *m = one_step(u("usr"), "t", T_USER);
    m->t[0]->assignee = user_assignee("bob", NULL);
    m->t[0]->job_fairness_key_expression = ".t";
    deploy_d(as("dev"), &m->d, false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(has_violation(
        &st, "definition.transitions[0].job_fairness_key_expression: ", "TRIGGER_FIELD_CONFLICT"));
}
END_TEST

WF_CASE_TEST("default", test_job_step_fairness_key_expression)
{
    wf_client_status st;
    char *type = u("stepjob");
    Workflow__V1__Definition *d = wf_arena_calloc(ta, 1, sizeof *d);
    workflow__v1__definition__init(d);
    d->key = u("steps");
    d->kind = STEPS_KIND;
    Workflow__V1__Step *s = wf_arena_calloc(ta, 1, sizeof *s);
    workflow__v1__step__init(s);
    s->id = "charge";
    s->job = wf_arena_calloc(ta, 1, sizeof *s->job);
    workflow__v1__job_step__init(s->job);
    s->job->job_type = type;
    s->job->fairness_key_expression = "[.t";
    d->steps = wf_arena_calloc(ta, 1, sizeof *d->steps);
    d->steps[0] = s;
    d->n_steps = 1;
    deploy_d(as("dev"), d, false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(has_violation(
        &st, "definition.steps[0].job.fairness_key_expression: ", "EXPRESSION_INVALID"));
    s->job->fairness_key_expression = ".customer.id";
    ck_assert_ptr_nonnull(deploy_d(as("dev"), d, false, &st));
    ck_ok(st);
    Workflow__V1__Instance *in = start_boss(d->key, "{\"customer\":{\"id\":\"c7\"}}");
    ck_assert_str_eq(job_of(in->id)->fairness_key, "c7");
}
END_TEST

int
main(void)
{
    const wf_test_case cases[] = {{"default", setup, teardown, 180}, {NULL}};
    return wf_test_run(wf_test_suite_of("e2e_fairness", cases));
}
