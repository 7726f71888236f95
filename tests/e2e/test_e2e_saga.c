/*
 * End-to-end tests of sagas and incidents over gRPC, on the memory store
 * and on Postgres (WF_TEST_STORE=pg): a checkout net (reserve -> charge ->
 * ship, AUTO jobs, reserve compensated by "release", charge by "refund")
 * whose ship job runs out of attempts is compensated in reverse order
 * (refund then release), one job at a time, with idempotency keys stable
 * across retries; a failing compensation is recorded and compensation
 * continues, the instance ends FAILED and RetryInstance resumes it;
 * CancelInstance{compensate} compensates the completed steps; RetryInstance
 * re-arms a plainly failed job.
 *
 * Postgres keeps rows between runs: keys and job types carry a per-test
 * suffix.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/status.h>

#include "defcache.h"
#include "expr.h"
#include "net_runtime.h"
#include "net_kit.h"
#include "test_support.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define SVC "/workflow.v1.WorkflowService/"

#define I_COMPENSATING WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATING
#define I_COMPENSATED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_COMPENSATED
#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED

typedef struct checkout {
    char *key, *reserve, *charge, *ship, *release, *refund;
} checkout;

/* s -> reserve -> p1 -> charge -> p2 -> ship -> e; reserve compensated by
 * release, charge by refund (2 attempts each), ship 2 attempts. */
static checkout
checkout_net(void)
{
    checkout c = {u("checkout"), u("reserve"), u("charge"), u("ship"), u("release"), u("refund")};
    nb *n = net_new(c.key);
    place(n, "s", START);
    place(n, "p1", NORMAL);
    place(n, "p2", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "reserve", T_AUTO);
    with_job(t, c.reserve, 2, 10);
    t->compensation_job_type = c.release;
    t = trans(n, "charge", T_AUTO);
    with_job(t, c.charge, 2, 10);
    t->compensation_job_type = c.refund;
    t = trans(n, "ship", T_AUTO);
    with_job(t, c.ship, 2, 10);
    arc(n, "s", "reserve");
    arc(n, "reserve", "p1");
    arc(n, "p1", "charge");
    arc(n, "charge", "p2");
    arc(n, "p2", "ship");
    arc(n, "ship", "e");
    deploy(n);
    return c;
}

static void
complete_ok(const Workflow__V1__Job *j, const char *vars)
{
    wf_client_status st;
    complete_job_c(as(NULL), j->key, vars, &st);
    ck_ok(st);
}

static void
fail_ok(const Workflow__V1__Job *j, const char *msg, int retryable)
{
    wf_client_status st;
    fail_job(j->key, msg, retryable, 0, &st);
    ck_ok(st);
}

static Workflow__V1__Instance *
cancel_c(const char *id, bool compensate, wf_client_status *st)
{
    Workflow__V1__CancelInstanceRequest req = WORKFLOW__V1__CANCEL_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    req.reason = "customer changed their mind";
    req.compensate = compensate;
    Workflow__V1__CancelInstanceResponse *r = call(
        as("ops"), "CancelInstance", &req, &workflow__v1__cancel_instance_response__descriptor, st);
    return r != NULL ? r->instance : NULL;
}

/* Runs reserve and charge to completion, then ship to exhaustion. */
static void
run_until_ship_fails(const checkout *c, const char *id)
{
    complete_ok(one_job(c->reserve), "{\"reserved\":true}");
    complete_ok(one_job(c->charge), "{\"charged\":true}");
    Workflow__V1__Job *s = one_job(c->ship);
    ck_assert_str_eq(s->instance_id, id);
    ck_assert(!s->compensation);
    fail_ok(s, "carrier down", 1);
    s = one_job(c->ship);
    ck_assert_int_eq(s->attempt, 2);
    fail_ok(s, "carrier still down", 1);
}

WF_TEST(test_ship_exhausts_and_compensates_in_reverse_order)
{
    checkout c = checkout_net();
    Workflow__V1__Instance *in = start_boss(c.key, "{\"order\":7}");
    run_until_ship_fails(&c, in->id);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPENSATING);
    ck_assert_int_eq(g->n_marking, 0);
    ck_assert_uint_eq(g->n_jobs, 1); /* one compensation job at a time */
    ck_assert(g->jobs[0]->compensation);
    ck_assert_str_eq(g->jobs[0]->job_type, c.refund);
    /* release waits for refund. */
    ck_assert_uint_eq(activate(c.release, 5, 0, 0)->n_jobs, 0);
    Workflow__V1__Job *r = one_job(c.refund);
    ck_assert(r->compensation);
    ck_assert_str_eq(r->transition_id, "charge");
    ck_assert_int_eq(r->attempt, 1);
    ck_assert_ptr_nonnull(strstr(r->variables_json, "\"charged\""));
    char *key1 = wf_arena_strdup(ta, r->idempotency_key);
    char *id1 = wf_arena_strdup(ta, r->id);
    ck_assert_ptr_nonnull(strstr(key1, ":compensate"));
    ck_assert_ptr_nonnull(strstr(key1, in->id));
    fail_ok(r, "bank timeout", 1); /* retried by its own policy */
    ck_assert_uint_eq(activate(c.release, 5, 0, 0)->n_jobs, 0);
    r = one_job(c.refund);
    ck_assert_int_eq(r->attempt, 2);
    ck_assert_str_eq(r->idempotency_key, key1);
    ck_assert_str_eq(r->id, id1);
    complete_ok(r, NULL);
    /* A completed compensation is never run again. */
    ck_assert_uint_eq(activate(c.refund, 5, 0, 0)->n_jobs, 0);
    Workflow__V1__Job *rel = one_job(c.release);
    ck_assert(rel->compensation);
    ck_assert_str_eq(rel->transition_id, "reserve");
    ck_assert_ptr_nonnull(strstr(rel->idempotency_key, ":compensate"));
    ck_assert_str_ne(rel->idempotency_key, key1);
    complete_ok(rel, NULL);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPENSATED);
    ck_assert_uint_eq(g->n_jobs, 0);
    ck_assert_str_eq(g->last_error, "");
    ck_assert_ptr_nonnull(g->instance->ended_at);
    char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "COMPENSATION_STARTED"), 1);
    ck_assert_int_eq(count_of(ev, "INSTANCE_COMPENSATED"), 1);
    ck_assert_int_eq(count_of(ev, "INSTANCE_FAILED"), 0);
    ck_assert_int_eq(count_of(ev, "COMPENSATION_STEP_FAILED"), 0);
    /* Events: COMPENSATION_STARTED before INSTANCE_COMPENSATED, last. */
    ck_assert_ptr_nonnull(strstr(ev, "COMPENSATION_STARTED"));
    const char *tail = ev + strlen(ev) - strlen("INSTANCE_COMPENSATED");
    ck_assert_str_eq(tail, "INSTANCE_COMPENSATED");
    /* An ended saga: RetryInstance refuses, CancelInstance too. */
    wf_client_status st;
    ck_assert_ptr_null(retry_c(in->id, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
    ck_assert_ptr_null(cancel_c(in->id, true, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
}
END_TEST

WF_TEST(test_failing_compensation_is_recorded_and_compensation_continues)
{
    checkout c = checkout_net();
    Workflow__V1__Instance *in = start_boss(c.key, "{}");
    run_until_ship_fails(&c, in->id);
    Workflow__V1__Job *r = one_job(c.refund);
    char *key1 = wf_arena_strdup(ta, r->idempotency_key);
    fail_ok(r, "refund refused", 0); /* not retryable: fails for good */
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPENSATING);
    /* release still runs */
    Workflow__V1__Job *rel = one_job(c.release);
    ck_assert_str_eq(rel->transition_id, "reserve");
    complete_ok(rel, NULL);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_ptr_nonnull(strstr(g->last_error, "refund refused"));
    ck_assert_ptr_nonnull(strstr(g->last_error, "charge"));
    char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "COMPENSATION_STEP_FAILED"), 1);
    ck_assert_int_eq(count_of(ev, "INSTANCE_FAILED"), 1);
    ck_assert_int_eq(count_of(ev, "INSTANCE_COMPENSATED"), 0);
    /* RetryInstance re-arms the failed refund: COMPENSATING, same key. */
    wf_client_status st;
    Workflow__V1__Instance *after = retry_c(in->id, &st);
    ck_ok(st);
    ck_assert_int_eq(after->status, I_COMPENSATING);
    r = one_job(c.refund);
    ck_assert_int_eq(r->attempt, 1);
    ck_assert_str_eq(r->idempotency_key, key1);
    complete_ok(r, NULL);
    ck_assert_uint_eq(activate(c.release, 5, 0, 0)->n_jobs, 0); /* never twice */
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPENSATED);
    ck_assert_int_eq(count_of(event_types(in->id), "INCIDENT_RESOLVED"), 1);
}
END_TEST

WF_TEST(test_cancel_with_compensate_compensates_completed_steps)
{
    checkout c = checkout_net();
    Workflow__V1__Instance *in = start_boss(c.key, "{}");
    complete_ok(one_job(c.reserve), NULL);
    Workflow__V1__Job *ch = one_job(c.charge); /* in flight */
    wf_client_status st;
    Workflow__V1__Instance *out = cancel_c(in->id, true, &st);
    ck_ok(st);
    ck_assert_int_eq(out->status, I_COMPENSATING);
    /* The forward job is gone: its worker loses the lease. */
    complete_job_c(as(NULL), ch->key, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
    ck_assert_uint_eq(activate(c.refund, 5, 0, 0)->n_jobs, 0); /* charge never completed */
    Workflow__V1__Job *rel = one_job(c.release);
    ck_assert(rel->compensation);
    complete_ok(rel, NULL);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPENSATED);
    char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "COMPENSATION_STARTED"), 1);
    ck_assert_int_eq(count_of(ev, "WORKITEM_WITHDRAWN"), 1);
    /* Nothing completed yet: compensate means a plain cancel. */
    Workflow__V1__Instance *in2 = start_boss(c.key, "{}");
    out = cancel_c(in2->id, true, &st);
    ck_ok(st);
    ck_assert_int_eq(out->status, I_CANCELLED);
    ck_assert_uint_eq(activate(c.reserve, 5, 0, 0)->n_jobs, 0);
}
END_TEST

WF_TEST(test_retry_instance_after_a_plain_failure)
{
    char *key = u("plain"), *type = u("ship-plain");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    with_job(trans(n, "ship", T_AUTO), type, 1, 10);
    arc(n, "s", "ship");
    arc(n, "ship", "e");
    deploy(n);
    Workflow__V1__Instance *in = start_boss(key, "{}");
    wf_client_status st;
    /* No incident: RetryInstance changes nothing. */
    Workflow__V1__Instance *same = retry_c(in->id, &st);
    ck_ok(st);
    ck_assert_int_eq(same->status, I_RUNNING);
    ck_assert_int_eq(count_of(event_types(in->id), "INCIDENT_RESOLVED"), 0);
    Workflow__V1__Job *j = one_job(type);
    char *job_id = wf_arena_strdup(ta, j->id);
    char *ikey = wf_arena_strdup(ta, j->idempotency_key);
    fail_ok(j, "label printer on fire", 1); /* 1 attempt: fails for good */
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_ptr_nonnull(strstr(g->last_error, "label printer on fire"));
    ck_assert_ptr_nonnull(strstr(g->last_error, job_id));
    ck_assert_ptr_nonnull(strstr(g->last_error, "\"ship\""));
    ck_assert_int_eq(marking(g, "s"), 1); /* parked where it failed */
    ck_assert_int_eq(count_of(event_types(in->id), "COMPENSATION_STARTED"), 0);
    ck_assert_uint_eq(activate(type, 5, 0, 0)->n_jobs, 0);
    Workflow__V1__Instance *after = retry_c(in->id, &st);
    ck_ok(st);
    ck_assert_int_eq(after->status, I_RUNNING);
    g = get_instance(in->id);
    ck_assert_str_eq(g->last_error, "");
    ck_assert_uint_eq(g->n_jobs, 1);
    ck_assert_int_eq(count_of(event_types(in->id), "INCIDENT_RESOLVED"), 1);
    j = one_job(type);
    ck_assert_int_eq(j->attempt, 1); /* fresh attempts */
    ck_assert_str_eq(j->id, job_id);
    ck_assert_str_eq(j->idempotency_key, ikey);
    complete_ok(j, NULL);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_ptr_null(retry_c(in->id, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "INSTANCE_NOT_RUNNING");
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_saga", wf_test_store_name(), setup, teardown, 60));
}
