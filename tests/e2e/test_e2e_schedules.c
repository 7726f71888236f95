/*
 * test_e2e_schedules: schedules (CreateSchedule, GetSchedule,
 * ListSchedules, UpdateSchedule, DeleteSchedule, PauseSchedule,
 * UnpauseSchedule, TriggerSchedule, ListScheduleRuns, BackfillSchedule),
 * specs of cron, interval and iCalendar recurrence rules, and the overlap
 * policies through the real gRPC client, on the store WF_TEST_STORE names
 * (memory and Postgres).
 *
 * The in-process server runs no background scheduler: schedules fire by
 * RunSchedulerPass (tenant-scoped, each test in a tenant of its own), on
 * the server's test clock (wf_app.clock), which the tests move through a
 * DST change in a few calls.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "net_kit.h"

#define OUT_STARTED WORKFLOW__V1__SCHEDULE_RUN_OUTCOME__SCHEDULE_RUN_OUTCOME_STARTED
#define OUT_SKIPPED WORKFLOW__V1__SCHEDULE_RUN_OUTCOME__SCHEDULE_RUN_OUTCOME_SKIPPED
#define OUT_MISSED WORKFLOW__V1__SCHEDULE_RUN_OUTCOME__SCHEDULE_RUN_OUTCOME_MISSED
#define OUT_BUFFERED WORKFLOW__V1__SCHEDULE_RUN_OUTCOME__SCHEDULE_RUN_OUTCOME_BUFFERED
#define O_BUFFER_ONE WORKFLOW__V1__SCHEDULE_OVERLAP_POLICY__SCHEDULE_OVERLAP_POLICY_BUFFER_ONE
#define O_CANCEL_OTHER WORKFLOW__V1__SCHEDULE_OVERLAP_POLICY__SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER
#define I_CANCELLED WORKFLOW__V1__INSTANCE_STATUS__INSTANCE_STATUS_CANCELLED
#define S_ACTIVE WORKFLOW__V1__SCHEDULE_STATE__SCHEDULE_STATE_ACTIVE
#define S_PAUSED WORKFLOW__V1__SCHEDULE_STATE__SCHEDULE_STATE_PAUSED
#define O_ALLOW_ALL WORKFLOW__V1__SCHEDULE_OVERLAP_POLICY__SCHEDULE_OVERLAP_POLICY_ALLOW_ALL
#define HOUR_US INT64_C(3600000000)

static char *tenant;
static int64_t clock_us; /* the server's "now" for schedules */

static int64_t
test_clock(void *arg)
{
    (void)arg;
    return __atomic_load_n(&clock_us, __ATOMIC_SEQ_CST);
}

static void
set_clock(int64_t us)
{
    __atomic_store_n(&clock_us, us, __ATOMIC_SEQ_CST);
}

static int64_t
ts_us(const Google__Protobuf__Timestamp *t)
{
    return t == NULL ? 0 : t->seconds * 1000000 + t->nanos / 1000;
}

static void
sched_setup(void)
{
    tenant = setup_tenant(NULL, "sched");
    set_clock(wf_test_utc_us("2026-03-27T12:00:00Z"));
    ts.app.clock = test_clock;
}

/* key: start -> work (AUTO job) -> end, so its instances wait. */
static void
deploy_work(const char *key)
{
    nb *n = net_new(key);
    place(n, "start", START);
    place(n, "end", END);
    Workflow__V1__Transition *t = trans(n, "work", T_AUTO);
    with_job(t, u("work"), 1, 0);
    arc(n, "start", "work");
    arc(n, "work", "end");
    deploy_as(me("dev"), n);
}

static Workflow__V1__ScheduleSpec *
cron_spec(const char *cron, const char *zone)
{
    Workflow__V1__ScheduleSpec *s = wf_arena_calloc(ta, 1, sizeof *s);
    workflow__v1__schedule_spec__init(s);
    s->cron = (char *)cron;
    s->time_zone = (char *)(zone != NULL ? zone : "");
    return s;
}

static Workflow__V1__Schedule *
create_c(wf_client *c, const char *id, const char *key, Workflow__V1__ScheduleSpec *spec,
         const char *rid, wf_client_status *st)
{
    Workflow__V1__CreateScheduleRequest req = WORKFLOW__V1__CREATE_SCHEDULE_REQUEST__INIT;
    Workflow__V1__SchedulePolicy *p = wf_arena_calloc(ta, 1, sizeof *p);
    workflow__v1__schedule_policy__init(p);
    p->overlap = O_ALLOW_ALL;
    p->catchup_window = dur(2 * 3600000); /* the tests pass every hour */
    req.id = (char *)id;
    req.definition_key = (char *)key;
    req.spec = spec;
    req.policy = p;
    req.variables_json = "{\"region\":\"eu\"}";
    req.request_id = (char *)(rid != NULL ? rid : "");
    Workflow__V1__CreateScheduleResponse *r =
        call(c, "CreateSchedule", &req, &workflow__v1__create_schedule_response__descriptor, st);
    return r != NULL ? r->schedule : NULL;
}

static Workflow__V1__Schedule *
get_c(wf_client *c, const char *id, wf_client_status *st)
{
    Workflow__V1__GetScheduleRequest req = WORKFLOW__V1__GET_SCHEDULE_REQUEST__INIT;
    req.id = (char *)id;
    Workflow__V1__GetScheduleResponse *r =
        call(c, "GetSchedule", &req, &workflow__v1__get_schedule_response__descriptor, st);
    return r != NULL ? r->schedule : NULL;
}

static Workflow__V1__ListScheduleRunsResponse *
runs_c(const char *id, wf_client_status *st)
{
    Workflow__V1__ListScheduleRunsRequest req = WORKFLOW__V1__LIST_SCHEDULE_RUNS_REQUEST__INIT;
    req.schedule_id = (char *)id;
    req.page_size = 100;
    return call(me("ops"), "ListScheduleRuns", &req,
                &workflow__v1__list_schedule_runs_response__descriptor, st);
}

static Workflow__V1__ScheduleRun **
runs_ok(const char *id, size_t *n)
{
    wf_client_status st;
    Workflow__V1__ListScheduleRunsResponse *r = runs_c(id, &st);
    ck_ok(st);
    *n = r->n_runs;
    return r->runs;
}

/* Create and Get answer the schedule with its next fire times in its zone
 * and in UTC; the refusals have stable reasons; a request id replays. */
WF_TEST(test_create_get_list_and_refusals)
{
    deploy_work("work");
    wf_client_status st;
    Workflow__V1__Schedule *s = create_c(me("ops"), "nightly", "work",
                                         cron_spec("30 2 * * *", "Europe/Berlin"), "r-1", &st);
    ck_ok(st);
    ck_assert_str_eq(s->id, "nightly");
    ck_assert_int_eq(s->state, S_ACTIVE);
    ck_assert_str_eq(s->created_by, "ops");
    ck_assert_uint_eq(s->n_upcoming, 10);
    ck_assert_int_eq(ts_us(s->upcoming[0]->time), wf_test_utc_us("2026-03-28T01:30:00Z"));
    ck_assert_str_eq(s->upcoming[1]->local_time, "2026-03-29T03:00:00+02:00");
    ck_assert_int_eq(ts_us(s->upcoming[1]->time), wf_test_utc_us("2026-03-29T01:00:00Z"));
    /* The same request id: the first answer, nothing created twice. */
    Workflow__V1__Schedule *again = create_c(me("ops"), "nightly", "work",
                                             cron_spec("30 2 * * *", "Europe/Berlin"), "r-1", &st);
    ck_ok(st);
    ck_assert_str_eq(again->id, "nightly");

    create_c(me("ops"), "nightly", "work", cron_spec("@daily", NULL), NULL, &st);
    ck_fails(st, GRPC_STATUS_ALREADY_EXISTS, "SCHEDULE_ALREADY_EXISTS");
    create_c(me("ops"), "b1", "work", cron_spec("61 * * * *", NULL), NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_CRON");
    create_c(me("ops"), "b2", "work", cron_spec("@daily", "Europe/Atlantis"), NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "UNKNOWN_TIME_ZONE");
    create_c(me("ops"), "b3", "no-such-definition", cron_spec("@daily", NULL), NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    create_c(me("ops"), "b4", "work", cron_spec("", NULL), NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_SCHEDULE");
    create_c(me("ops"), "", "work", cron_spec("@daily", NULL), NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    create_c(as_tenant(tenant, NULL), "b5", "work", cron_spec("@daily", NULL), NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");

    s = get_c(me("ops"), "nightly", &st);
    ck_ok(st);
    ck_assert_str_eq(s->spec->cron, "30 2 * * *");
    ck_assert_str_eq(s->spec->time_zone, "Europe/Berlin");
    ck_assert_str_eq(s->variables_json, "{\"region\":\"eu\"}");
    get_c(as("ops"), "nightly", &st); /* another tenant */
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "SCHEDULE_NOT_FOUND");
    runs_c("nope", &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "SCHEDULE_NOT_FOUND");

    Workflow__V1__ListSchedulesRequest lreq = WORKFLOW__V1__LIST_SCHEDULES_REQUEST__INIT;
    Workflow__V1__ListSchedulesResponse *l = call(
        me("ops"), "ListSchedules", &lreq, &workflow__v1__list_schedules_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_schedules, 1);
    l = call(as("ops"), "ListSchedules", &lreq, &workflow__v1__list_schedules_response__descriptor,
             &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_schedules, 0);
}
END_TEST

/* Berlin at 02:30 every day, the scheduler passing every hour through
 * the spring-forward night: one instance a day, 03:00 on the day 02:30
 * does not exist, each carrying the schedule and its fire time. Passes
 * run again at the same instant start nothing more. */
WF_TEST(test_fires_once_through_dst)
{
    deploy_work("work");
    wf_client_status st;
    create_c(me("ops"), "nightly", "work", cron_spec("30 2 * * *", "Europe/Berlin"), NULL, &st);
    ck_ok(st);
    int64_t handled = 0;
    for (int64_t t = wf_test_utc_us("2026-03-27T12:00:00Z");
         t <= wf_test_utc_us("2026-03-30T12:00:00Z"); t += HOUR_US) {
        set_clock(t);
        handled += scheduler_pass()->schedule_runs;
        handled += scheduler_pass()->schedule_runs;
    }
    ck_assert_int_eq(handled, 3);
    size_t n = 0;
    Workflow__V1__ScheduleRun **r = runs_ok("nightly", &n);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(ts_us(r[0]->nominal_time), wf_test_utc_us("2026-03-30T00:30:00Z"));
    ck_assert_int_eq(ts_us(r[1]->nominal_time), wf_test_utc_us("2026-03-29T01:00:00Z"));
    ck_assert_int_eq(ts_us(r[2]->nominal_time), wf_test_utc_us("2026-03-28T01:30:00Z"));
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(r[i]->outcome, OUT_STARTED);
        ck_assert_str_ne(r[i]->instance_id, "");
    }
    Workflow__V1__GetInstanceResponse *g = get_instance_as(me("ops"), r[1]->instance_id);
    ck_assert_ptr_nonnull(strstr(g->instance->variables_json, "\"schedule\":{\"id\":\"nightly\""));
    ck_assert_ptr_nonnull(strstr(g->instance->variables_json, "2026-03-29T01:00:00"));
    ck_assert_ptr_nonnull(strstr(g->instance->variables_json, "\"region\":\"eu\""));
}
END_TEST

/* Pause, update, unpause, trigger and delete, with their answers. */
WF_TEST(test_pause_update_trigger_delete)
{
    deploy_work("work");
    wf_client_status st;
    create_c(me("ops"), "hourly", "work", cron_spec("@hourly", NULL), NULL, &st);
    ck_ok(st);

    Workflow__V1__PauseScheduleRequest p = WORKFLOW__V1__PAUSE_SCHEDULE_REQUEST__INIT;
    p.id = "hourly";
    p.reason = "maintenance";
    Workflow__V1__PauseScheduleResponse *pr = call(
        me("ops"), "PauseSchedule", &p, &workflow__v1__pause_schedule_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(pr->schedule->state, S_PAUSED);
    ck_assert_str_eq(pr->schedule->pause_reason, "maintenance");
    set_clock(wf_test_utc_us("2026-03-27T13:00:30Z"));
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 0);
    p.id = "nope";
    call(me("ops"), "PauseSchedule", &p, &workflow__v1__pause_schedule_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "SCHEDULE_NOT_FOUND");

    Workflow__V1__UpdateScheduleRequest up = WORKFLOW__V1__UPDATE_SCHEDULE_REQUEST__INIT;
    up.id = "hourly";
    up.definition_key = "work";
    up.spec = cron_spec("0 */2 * * *", NULL);
    up.paused = true;
    Workflow__V1__UpdateScheduleResponse *ur = call(
        me("ops"), "UpdateSchedule", &up, &workflow__v1__update_schedule_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(ur->schedule->spec->cron, "0 */2 * * *");
    up.spec = cron_spec("0 */2 * *", NULL);
    call(me("ops"), "UpdateSchedule", &up, &workflow__v1__update_schedule_response__descriptor,
         &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_CRON");

    Workflow__V1__UnpauseScheduleRequest un = WORKFLOW__V1__UNPAUSE_SCHEDULE_REQUEST__INIT;
    un.id = "hourly";
    Workflow__V1__UnpauseScheduleResponse *unr =
        call(me("ops"), "UnpauseSchedule", &un,
             &workflow__v1__unpause_schedule_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(unr->schedule->state, S_ACTIVE);
    ck_assert_int_eq(ts_us(unr->schedule->upcoming[0]->time),
                     wf_test_utc_us("2026-03-27T14:00:00Z"));
    set_clock(wf_test_utc_us("2026-03-27T14:00:01Z"));
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 1);

    Workflow__V1__TriggerScheduleRequest tr = WORKFLOW__V1__TRIGGER_SCHEDULE_REQUEST__INIT;
    tr.id = "hourly";
    tr.request_id = "t-1";
    Workflow__V1__TriggerScheduleResponse *trr =
        call(me("ops"), "TriggerSchedule", &tr,
             &workflow__v1__trigger_schedule_response__descriptor, &st);
    ck_ok(st);
    ck_assert(trr->run->manual);
    ck_assert_int_eq(trr->run->outcome, OUT_STARTED);
    char *first = trr->run->instance_id;
    trr = call(me("ops"), "TriggerSchedule", &tr,
               &workflow__v1__trigger_schedule_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(trr->run->instance_id, first); /* replayed, not started twice */
    size_t n = 0;
    runs_ok("hourly", &n);
    ck_assert_uint_eq(n, 2);

    Workflow__V1__DeleteScheduleRequest d = WORKFLOW__V1__DELETE_SCHEDULE_REQUEST__INIT;
    d.id = "hourly";
    call(me("ops"), "DeleteSchedule", &d, &workflow__v1__delete_schedule_response__descriptor, &st);
    ck_ok(st);
    call(me("ops"), "DeleteSchedule", &d, &workflow__v1__delete_schedule_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "SCHEDULE_NOT_FOUND");
    tr.request_id = "";
    call(me("ops"), "TriggerSchedule", &tr, &workflow__v1__trigger_schedule_response__descriptor,
         &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "SCHEDULE_NOT_FOUND");
    /* The instances it started stay. */
    ck_assert_int_eq(get_instance_as(me("ops"), first)->instance->status, I_RUNNING);
}
END_TEST

/* After an outage, fire times older than the catch-up window are MISSED
 * and the rest run, oldest first. */
WF_TEST(test_catch_up_after_outage)
{
    deploy_work("work");
    wf_client_status st;
    Workflow__V1__CreateScheduleRequest req = WORKFLOW__V1__CREATE_SCHEDULE_REQUEST__INIT;
    Workflow__V1__SchedulePolicy p = WORKFLOW__V1__SCHEDULE_POLICY__INIT;
    p.overlap = O_ALLOW_ALL;
    p.catchup_window = dur(3 * 60000);
    Workflow__V1__ScheduleSpec spec = WORKFLOW__V1__SCHEDULE_SPEC__INIT;
    spec.interval = "every 1m";
    req.id = "minutely";
    req.definition_key = "work";
    req.spec = &spec;
    req.policy = &p;
    call(me("ops"), "CreateSchedule", &req, &workflow__v1__create_schedule_response__descriptor,
         &st);
    ck_ok(st);
    set_clock(wf_test_utc_us("2026-03-27T12:06:30Z"));
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 6);
    size_t n = 0;
    Workflow__V1__ScheduleRun **r = runs_ok("minutely", &n);
    ck_assert_uint_eq(n, 6);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(r[i]->outcome, OUT_STARTED);
    for (size_t i = 3; i < 6; i++)
        ck_assert_int_eq(r[i]->outcome, OUT_MISSED);
    ck_assert_int_eq(ts_us(r[5]->nominal_time), wf_test_utc_us("2026-03-27T12:01:00Z"));
}
END_TEST

/* An every-minute schedule of "work" under overlap, created at the test
 * clock's start (12:00). */
static void
create_minutely(const char *id, Workflow__V1__ScheduleOverlapPolicy overlap)
{
    Workflow__V1__CreateScheduleRequest req = WORKFLOW__V1__CREATE_SCHEDULE_REQUEST__INIT;
    Workflow__V1__SchedulePolicy p = WORKFLOW__V1__SCHEDULE_POLICY__INIT;
    p.overlap = overlap;
    Workflow__V1__ScheduleSpec spec = WORKFLOW__V1__SCHEDULE_SPEC__INIT;
    spec.interval = "every 1m";
    req.id = (char *)id;
    req.definition_key = "work";
    req.spec = &spec;
    req.policy = &p;
    wf_client_status st;
    Workflow__V1__CreateScheduleResponse *r =
        call(me("ops"), "CreateSchedule", &req, &workflow__v1__create_schedule_response__descriptor,
             &st);
    ck_ok(st);
    ck_assert_int_eq(r->schedule->policy->overlap, overlap);
}

/* The run of id at the UTC time text nominal. */
static Workflow__V1__ScheduleRun *
run_at(const char *id, const char *nominal)
{
    size_t n = 0;
    Workflow__V1__ScheduleRun **r = runs_ok(id, &n);
    for (size_t i = 0; i < n; i++)
        if (ts_us(r[i]->nominal_time) == wf_test_utc_us(nominal))
            return r[i];
    ck_abort_msg("no run of %s at %s", id, nominal);
    return NULL;
}

/* BUFFER_ONE: the fire while the first instance runs waits (BUFFERED),
 * the next is SKIPPED; when a worker completes the first instance's job,
 * the next pass starts the waiting fire, once however many passes see the
 * end, with its own fire time and when it was buffered. */
WF_TEST(test_overlap_buffer_one)
{
    deploy_work("work");
    create_minutely("b", O_BUFFER_ONE);
    set_clock(wf_test_utc_us("2026-03-27T12:01:00Z"));
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 1);
    set_clock(wf_test_utc_us("2026-03-27T12:02:00Z"));
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 1);
    set_clock(wf_test_utc_us("2026-03-27T12:03:00Z"));
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 1);
    ck_assert_int_eq(run_at("b", "2026-03-27T12:02:00Z")->outcome, OUT_BUFFERED);
    ck_assert_int_eq(run_at("b", "2026-03-27T12:03:00Z")->outcome, OUT_SKIPPED);
    const char *first = run_at("b", "2026-03-27T12:01:00Z")->instance_id;

    wf_client_status st;
    Workflow__V1__ActivateJobsResponse *jobs = activate_c(me("w1"), u("work"), 5, 0, 2000, &st);
    ck_ok(st);
    ck_assert_uint_eq(jobs->n_jobs, 1);
    ck_assert_int_eq(complete_job_c(me("w1"), jobs->jobs[0]->key, NULL, &st), GRPC_STATUS_OK);
    set_clock(wf_test_utc_us("2026-03-27T12:03:10Z"));
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 1);
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 0);
    Workflow__V1__ScheduleRun *r = run_at("b", "2026-03-27T12:02:00Z");
    ck_assert_int_eq(r->outcome, OUT_STARTED);
    ck_assert_int_eq(ts_us(r->buffered_time), wf_test_utc_us("2026-03-27T12:02:00Z"));
    ck_assert_int_eq(ts_us(r->actual_time), wf_test_utc_us("2026-03-27T12:03:10Z"));
    ck_assert_str_ne(r->instance_id, first);
    Workflow__V1__GetInstanceResponse *g = get_instance_as(me("ops"), r->instance_id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_ptr_nonnull(strstr(g->instance->variables_json, "2026-03-27T12:02:00"));
    ck_assert_ptr_null(run_at("b", "2026-03-27T12:01:00Z")->buffered_time);
    size_t n = 0;
    runs_ok("b", &n);
    ck_assert_uint_eq(n, 3);
}
END_TEST

/* CANCEL_OTHER: the fire while the first instance runs cancels it, with a
 * reason naming the schedule and the fire time in its events, and starts
 * its own; the run names the cancelled instance. */
WF_TEST(test_overlap_cancel_other)
{
    deploy_work("work");
    create_minutely("c", O_CANCEL_OTHER);
    set_clock(wf_test_utc_us("2026-03-27T12:01:00Z"));
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 1);
    const char *first = run_at("c", "2026-03-27T12:01:00Z")->instance_id;
    set_clock(wf_test_utc_us("2026-03-27T12:02:00Z"));
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 1);
    Workflow__V1__ScheduleRun *r = run_at("c", "2026-03-27T12:02:00Z");
    ck_assert_int_eq(r->outcome, OUT_STARTED);
    ck_assert_str_eq(r->cancelled_instance_id, first);
    ck_assert_int_eq(get_instance_as(me("ops"), first)->instance->status, I_CANCELLED);
    ck_assert_int_eq(get_instance_as(me("ops"), r->instance_id)->instance->status, I_RUNNING);
    const wf_event_row *e = last_event(first, "INSTANCE_CANCELLED");
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(
        strstr(e->data_json, "schedule \\\"c\\\": the fire time 2026-03-27T12:02:00"));
    ck_assert_str_eq(run_at("c", "2026-03-27T12:01:00Z")->cancelled_instance_id, "");
}
END_TEST

/* ListInstances by schedule_id: the instances that schedule started, and
 * none of another schedule's or started by hand; an id over 128 bytes is
 * refused. */
WF_TEST(test_list_instances_by_schedule)
{
    deploy_work("work");
    create_minutely("x", O_ALLOW_ALL);
    create_minutely("y", O_ALLOW_ALL);
    wf_client_status st;
    start_v(me("ops"), "work", 0, NULL, &st);
    ck_ok(st);
    set_clock(wf_test_utc_us("2026-03-27T12:02:00Z"));
    ck_assert_int_eq(scheduler_pass()->schedule_runs, 4);
    Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    req.started_by = "*";
    req.schedule_id = "x";
    Workflow__V1__ListInstancesResponse *l = call(
        me("ops"), "ListInstances", &req, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_instances, 2);
    const char *a = run_at("x", "2026-03-27T12:01:00Z")->instance_id;
    const char *b = run_at("x", "2026-03-27T12:02:00Z")->instance_id;
    for (size_t i = 0; i < l->n_instances; i++)
        ck_assert(strcmp(l->instances[i]->id, a) == 0 || strcmp(l->instances[i]->id, b) == 0);
    req.schedule_id = "none";
    l = call(me("ops"), "ListInstances", &req, &workflow__v1__list_instances_response__descriptor,
             &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_instances, 0);
    char long_id[140];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    req.schedule_id = long_id;
    call(me("ops"), "ListInstances", &req, &workflow__v1__list_instances_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

/* A Timestamp of the UTC time text t in the test's arena. */
static Google__Protobuf__Timestamp *
tsp(const char *t)
{
    Google__Protobuf__Timestamp *m = wf_arena_calloc(ta, 1, sizeof *m);
    google__protobuf__timestamp__init(m);
    m->seconds = wf_test_utc_us(t) / 1000000;
    return m;
}

static Workflow__V1__BackfillScheduleResponse *
backfill_c(wf_client *c, const char *id, const char *from, const char *to,
           Workflow__V1__ScheduleOverlapPolicy overlap, const char *rid, wf_client_status *st)
{
    Workflow__V1__BackfillScheduleRequest req = WORKFLOW__V1__BACKFILL_SCHEDULE_REQUEST__INIT;
    req.schedule_id = (char *)id;
    req.from_time = from != NULL ? tsp(from) : NULL;
    req.to_time = to != NULL ? tsp(to) : NULL;
    req.overlap = overlap;
    req.request_id = (char *)(rid != NULL ? rid : "");
    return call(c, "BackfillSchedule", &req, &workflow__v1__backfill_schedule_response__descriptor,
                st);
}

static Workflow__V1__BackfillScheduleResponse *
backfill_ok(const char *id, const char *from, const char *to,
            Workflow__V1__ScheduleOverlapPolicy overlap, const char *rid)
{
    wf_client_status st;
    Workflow__V1__BackfillScheduleResponse *r =
        backfill_c(me("ops"), id, from, to, overlap, rid, &st);
    ck_ok(st);
    return r;
}

/* The instances schedule id started, counted by ListInstances. */
static size_t
instances_of(const char *id)
{
    Workflow__V1__ListInstancesRequest req = WORKFLOW__V1__LIST_INSTANCES_REQUEST__INIT;
    req.started_by = "*";
    req.schedule_id = (char *)id;
    req.page_size = 100;
    wf_client_status st;
    Workflow__V1__ListInstancesResponse *l = call(
        me("ops"), "ListInstances", &req, &workflow__v1__list_instances_response__descriptor, &st);
    ck_ok(st);
    return l->n_instances;
}

/* BackfillSchedule runs the fire times of a past range oldest first, each
 * once: a repeat with a new request id starts nothing and counts them as
 * handled, the same request id replays the first answer, the calendar
 * takes a backfilled fire time as handled, and a backfill over the
 * calendar's runs starts nothing. Every fire time has one run and at
 * most one instance; ListScheduleRuns marks the backfill's. */
WF_TEST(test_backfill_each_fire_time_once)
{
    deploy_work("work");
    create_minutely("bf", O_ALLOW_ALL);
    set_clock(wf_test_utc_us("2026-03-27T12:05:30Z"));
    Workflow__V1__BackfillScheduleResponse *r =
        backfill_ok("bf", "2026-03-27T12:00:00Z", "2026-03-27T12:03:00Z", 0, "bf-1");
    ck_assert_uint_eq(r->n_runs, 3);
    ck_assert_int_eq(r->already_handled, 0);
    const char *first = r->runs[0]->instance_id;
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(ts_us(r->runs[i]->nominal_time),
                         wf_test_utc_us("2026-03-27T12:00:00Z") + (int64_t)i * 60000000);
        ck_assert_int_eq(r->runs[i]->outcome, OUT_STARTED);
        ck_assert(r->runs[i]->backfill);
        ck_assert(!r->runs[i]->manual);
        ck_assert_int_eq(ts_us(r->runs[i]->actual_time), wf_test_utc_us("2026-03-27T12:05:30Z"));
    }
    Workflow__V1__GetInstanceResponse *g = get_instance_as(me("ops"), r->runs[1]->instance_id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_ptr_nonnull(strstr(g->instance->variables_json, "2026-03-27T12:01:00"));

    r = backfill_ok("bf", "2026-03-27T12:00:00Z", "2026-03-27T12:03:00Z", 0, "bf-2");
    ck_assert_uint_eq(r->n_runs, 0);
    ck_assert_int_eq(r->already_handled, 3);
    r = backfill_ok("bf", "2026-03-27T12:00:00Z", "2026-03-27T12:03:00Z", 0, "bf-1");
    ck_assert_uint_eq(r->n_runs, 3); /* replayed */
    ck_assert_str_eq(r->runs[0]->instance_id, first);

    /* The calendar (catch-up window 1 min): 12:01 and 12:02 are the
     * backfill's, 12:03 and 12:04 MISSED, 12:05 started. */
    scheduler_pass();
    ck_assert_int_eq(run_at("bf", "2026-03-27T12:03:00Z")->outcome, OUT_MISSED);
    ck_assert_int_eq(run_at("bf", "2026-03-27T12:05:00Z")->outcome, OUT_STARTED);
    ck_assert(!run_at("bf", "2026-03-27T12:05:00Z")->backfill);
    ck_assert(run_at("bf", "2026-03-27T12:01:00Z")->backfill);
    ck_assert_str_eq(run_at("bf", "2026-03-27T12:00:00Z")->instance_id, first);

    /* Over the calendar's runs (MISSED ones included) nothing starts. */
    r = backfill_ok("bf", "2026-03-27T12:00:00Z", "2026-03-27T12:05:30Z", 0, NULL);
    ck_assert_uint_eq(r->n_runs, 0);
    ck_assert_int_eq(r->already_handled, 6);
    size_t n = 0;
    Workflow__V1__ScheduleRun **runs = runs_ok("bf", &n);
    ck_assert_uint_eq(n, 6);
    for (size_t i = 1; i < n; i++)
        ck_assert_int_lt(ts_us(runs[i]->nominal_time), ts_us(runs[i - 1]->nominal_time));
    ck_assert_uint_eq(instances_of("bf"), 4);
}
END_TEST

/* The backfill's overlap: the schedule's (SKIP) starts the first fire
 * time and skips the rest while it runs; the request's CANCEL_OTHER
 * cancels the one before; ALLOW_ALL starts each. */
WF_TEST(test_backfill_overlap)
{
    deploy_work("work");
    create_minutely("s", WORKFLOW__V1__SCHEDULE_OVERLAP_POLICY__SCHEDULE_OVERLAP_POLICY_SKIP);
    set_clock(wf_test_utc_us("2026-03-27T12:30:00Z"));
    Workflow__V1__BackfillScheduleResponse *r =
        backfill_ok("s", "2026-03-27T12:00:00Z", "2026-03-27T12:03:00Z", 0, NULL);
    ck_assert_uint_eq(r->n_runs, 3);
    ck_assert_int_eq(r->runs[0]->outcome, OUT_STARTED);
    ck_assert_int_eq(r->runs[1]->outcome, OUT_SKIPPED);
    ck_assert_int_eq(r->runs[2]->outcome, OUT_SKIPPED);
    const char *first = r->runs[0]->instance_id;

    r = backfill_ok("s", "2026-03-27T12:03:00Z", "2026-03-27T12:05:00Z", O_CANCEL_OTHER, NULL);
    ck_assert_uint_eq(r->n_runs, 2);
    ck_assert_int_eq(r->runs[0]->outcome, OUT_STARTED);
    ck_assert_str_eq(r->runs[0]->cancelled_instance_id, first);
    ck_assert_str_eq(r->runs[1]->cancelled_instance_id, r->runs[0]->instance_id);
    ck_assert_int_eq(get_instance_as(me("ops"), first)->instance->status, I_CANCELLED);

    r = backfill_ok("s", "2026-03-27T12:10:00Z", "2026-03-27T12:13:00Z", O_ALLOW_ALL, NULL);
    ck_assert_uint_eq(r->n_runs, 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_int_eq(r->runs[i]->outcome, OUT_STARTED);
}
END_TEST

/* Refusals, with stable reasons: more fire times than one call may run
 * (the default 1000), a range missing, empty or ending after now, an
 * unknown schedule, no actor. Nothing is recorded. */
WF_TEST(test_backfill_refusals)
{
    deploy_work("work");
    create_minutely("r", O_ALLOW_ALL);
    wf_client_status st;
    backfill_c(me("ops"), "r", "2026-03-26T00:00:00Z", "2026-03-27T12:00:00Z", 0, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "BACKFILL_TOO_LARGE");
    backfill_c(me("ops"), "r", "2026-03-27T11:00:00Z", "2026-03-27T13:00:00Z", 0, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    backfill_c(me("ops"), "r", NULL, "2026-03-27T11:00:00Z", 0, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    backfill_c(me("ops"), "r", "2026-03-27T11:00:00Z", "2026-03-27T11:00:00Z", 0, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    backfill_c(me("ops"), "nope", "2026-03-27T11:00:00Z", "2026-03-27T11:10:00Z", 0, NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "SCHEDULE_NOT_FOUND");
    backfill_c(as_tenant(tenant, NULL), "r", "2026-03-27T11:00:00Z", "2026-03-27T11:10:00Z", 0,
               NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
    size_t n = 0;
    runs_ok("r", &n);
    ck_assert_uint_eq(n, 0);
}
END_TEST

static Workflow__V1__ScheduleSpec *
rrule_spec(const char *rule, const char *zone)
{
    Workflow__V1__ScheduleSpec *s = cron_spec("", zone);
    s->rrules = wf_arena_calloc(ta, 1, sizeof *s->rrules);
    s->rrules[0] = (char *)rule;
    s->n_rrules = 1;
    return s;
}

static Workflow__V1__Schedule *
update_c(const char *id, Workflow__V1__ScheduleSpec *spec, wf_client_status *st)
{
    Workflow__V1__UpdateScheduleRequest up = WORKFLOW__V1__UPDATE_SCHEDULE_REQUEST__INIT;
    up.id = (char *)id;
    up.definition_key = "work";
    up.spec = spec;
    Workflow__V1__UpdateScheduleResponse *r = call(
        me("ops"), "UpdateSchedule", &up, &workflow__v1__update_schedule_response__descriptor, st);
    return r != NULL ? r->schedule : NULL;
}

/* A recurrence rule: its next fire times in its zone and UTC, the rule
 * and its start answered back; a rule beside a cron; the refusals, a rule
 * that never occurs among them, on create and on update. */
WF_TEST(test_rrule_create_get_update_and_refusals)
{
    deploy_work("work");
    wf_client_status st;
    Workflow__V1__ScheduleSpec *spec =
        rrule_spec("FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=9;BYMINUTE=0;BYSECOND=0", "Europe/Berlin");
    spec->rrule_start = "2026-01-01T00:00:00";
    char *excluded[] = {"2026-04-03"};
    spec->exclude_dates = excluded;
    spec->n_exclude_dates = 1;
    Workflow__V1__Schedule *s = create_c(me("ops"), "twice-weekly", "work", spec, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(s->n_upcoming, 10);
    /* Friday 27 March 09:00 has passed (the clock is 12:00Z); Friday 3
     * April is excluded. */
    ck_assert_int_eq(ts_us(s->upcoming[0]->time), wf_test_utc_us("2026-03-30T07:00:00Z"));
    ck_assert_str_eq(s->upcoming[0]->local_time, "2026-03-30T09:00:00+02:00");
    ck_assert_int_eq(ts_us(s->upcoming[1]->time), wf_test_utc_us("2026-04-06T07:00:00Z"));
    /* Read back from the store: the rule, its start and the dates. */
    s = get_c(me("ops"), "twice-weekly", &st);
    ck_ok(st);
    ck_assert_int_eq(ts_us(s->upcoming[1]->time), wf_test_utc_us("2026-04-06T07:00:00Z"));
    ck_assert_uint_eq(s->spec->n_exclude_dates, 1);
    ck_assert_str_eq(s->spec->exclude_dates[0], "2026-04-03");
    ck_assert_uint_eq(s->spec->n_rrules, 1);
    ck_assert_str_eq(s->spec->rrules[0], "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=9;BYMINUTE=0;BYSECOND=0");
    ck_assert_str_eq(s->spec->rrule_start, "2026-01-01T00:00:00");
    ck_assert_str_eq(s->spec->cron, "");

    /* Beside a cron: both calendars, an instant both name once. */
    Workflow__V1__ScheduleSpec *both =
        rrule_spec("FREQ=DAILY;BYHOUR=12,18;BYMINUTE=0;BYSECOND=0", NULL);
    both->cron = "0 12 * * *";
    s = update_c("twice-weekly", both, &st);
    ck_ok(st);
    ck_assert_int_eq(ts_us(s->upcoming[0]->time), wf_test_utc_us("2026-03-27T18:00:00Z"));
    ck_assert_int_eq(ts_us(s->upcoming[1]->time), wf_test_utc_us("2026-03-28T12:00:00Z"));
    ck_assert_int_eq(ts_us(s->upcoming[2]->time), wf_test_utc_us("2026-03-28T18:00:00Z"));

    create_c(me("ops"), "never", "work", rrule_spec("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", NULL),
             NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "SCHEDULE_RRULE_NEVER_FIRES");
    create_c(me("ops"), "never", "work",
             rrule_spec("FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30", "America/New_York"), NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "SCHEDULE_RRULE_NEVER_FIRES");
    update_c("twice-weekly", rrule_spec("FREQ=HOURLY;BYMONTH=4;BYMONTHDAY=31", NULL), &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "SCHEDULE_RRULE_NEVER_FIRES");
    create_c(me("ops"), "bad", "work", rrule_spec("FREQ=FORTNIGHTLY", NULL), NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_SCHEDULE");
    create_c(me("ops"), "bad", "work", rrule_spec("FREQ=SECONDLY", NULL), NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_SCHEDULE");
    spec = rrule_spec("FREQ=DAILY", NULL);
    spec->rrule_start = "2026-02-30T00:00:00";
    create_c(me("ops"), "bad", "work", spec, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_SCHEDULE");
    create_c(me("ops"), "bad", "work", rrule_spec("FREQ=DAILY", "Europe/Atlantis"), NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "UNKNOWN_TIME_ZONE");
    ck_assert_str_eq(get_c(me("ops"), "twice-weekly", &st)->spec->cron, "0 12 * * *");
}
END_TEST

/* Passes every half hour through a night of DST change, a pass twice at
 * each instant: the fire times of rule in zone between from and to, each
 * one run, in want (newest first). */
static void
rrule_fires_through(const char *id, const char *zone, const char *from, const char *to,
                    const char *const *want, size_t n_want)
{
    wf_client_status st;
    set_clock(wf_test_utc_us(from));
    create_c(me("ops"), id, "work", rrule_spec("FREQ=HOURLY;BYMINUTE=30;BYSECOND=0", zone), NULL,
             &st);
    ck_ok(st);
    for (int64_t t = wf_test_utc_us(from); t <= wf_test_utc_us(to); t += HOUR_US / 2) {
        set_clock(t);
        scheduler_pass();
        scheduler_pass();
    }
    size_t n = 0;
    Workflow__V1__ScheduleRun **r = runs_ok(id, &n);
    ck_assert_uint_eq(n, n_want);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(ts_us(r[i]->nominal_time) == wf_test_utc_us(want[i]), "%s run %zu", id, i);
        ck_assert_int_eq(r[i]->outcome, OUT_STARTED);
    }
}

/* An hourly rule at :30 through both changes of two zones: the wall time
 * the clock skips fires once at the end of the gap, the one it repeats
 * fires once. */
WF_TEST(test_rrule_fires_once_through_dst)
{
    deploy_work("work");
    const char *berlin_spring[] = {"2026-03-29T01:30:00Z", "2026-03-29T01:00:00Z",
                                   "2026-03-29T00:30:00Z"};
    rrule_fires_through("b-spring", "Europe/Berlin", "2026-03-29T00:00:00Z", "2026-03-29T01:30:00Z",
                        berlin_spring, 3);
    const char *berlin_fall[] = {"2026-10-25T02:30:00Z", "2026-10-25T00:30:00Z",
                                 "2026-10-24T23:30:00Z"};
    rrule_fires_through("b-fall", "Europe/Berlin", "2026-10-24T23:00:00Z", "2026-10-25T02:30:00Z",
                        berlin_fall, 3);
    const char *ny_spring[] = {"2026-03-08T07:30:00Z", "2026-03-08T07:00:00Z",
                               "2026-03-08T06:30:00Z"};
    rrule_fires_through("ny-spring", "America/New_York", "2026-03-08T06:00:00Z",
                        "2026-03-08T07:30:00Z", ny_spring, 3);
    const char *ny_fall[] = {"2026-11-01T07:30:00Z", "2026-11-01T05:30:00Z",
                             "2026-11-01T04:30:00Z"};
    rrule_fires_through("ny-fall", "America/New_York", "2026-11-01T04:00:00Z",
                        "2026-11-01T07:30:00Z", ny_fall, 3);
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_schedules", "schedules", sched_setup, teardown, 30));
}
