/*
 * Unit tests of schedules (engine/schedules.c) over the memory store,
 * without a server, on a clock of the test's own: create, get, list,
 * update, pause, unpause, delete and trigger with their refusals; the
 * scheduler's passes firing each fire time once (also when a pass is run
 * again after a replica died before writing its progress), through a DST
 * change, under the SKIP, ALLOW_ALL, BUFFER_ONE and CANCEL_OTHER overlap
 * policies (the waiting fire started once when a replica's pass is run
 * again), after an outage
 * (the catch-up window), and pausing after failed starts.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "engine_kit.h"
#include "instances.h"
#include "schedules.h"
#include "store.h"
#include "test_support.h"

static wf_store *st;
static wf_arena *arena;

#define MIN_US INT64_C(60000000)
#define HOUR_US (60 * MIN_US)

#define ck_code(rc, want, err)                                                                     \
    ck_assert_msg((rc) == (want), "%s, want %s: %s", wf_code_reason(rc), wf_code_reason(want),     \
                  (err).msg)

/* "work": s -> work (AUTO job, so the instance waits) -> e. */
static void
deploy_work(void)
{
    wf_transition *t = wf_arena_calloc(arena, 1, sizeof *t);
    *t = (wf_transition){.id = "work", .trigger = WF_TRIGGER_AUTO, .job_type = "work"};
    kit_deploy_line(kit_ctx("dev"), "work", t);
}

static wf_schedule_in
cron_in(const char *id, const char *cron, const char *zone)
{
    return (wf_schedule_in){
        .id = id, .definition_key = "work", .spec = {.cron = cron, .time_zone = zone}};
}

static wf_schedule_view
create(const wf_schedule_in *in, int64_t now)
{
    wf_runtime_ctx c = kit_ctx("ops");
    wf_schedule_view v;
    wf_error err;
    wf_code rc = wf_schedules_create(&c.ref, in, now, NULL, &v, &err);
    ck_code(rc, WF_OK, err);
    return v;
}

static wf_code
create_rc(const wf_schedule_in *in, wf_error *err)
{
    wf_runtime_ctx c = kit_ctx("ops");
    wf_schedule_view v;
    return wf_schedules_create(&c.ref, in, wf_test_utc_us("2026-01-01T00:00:00Z"), NULL, &v, err);
}

static wf_schedule_pass_counts
pass_at(int64_t now)
{
    wf_schedule_host h = {.store = st};
    wf_schedule_pass_counts c;
    wf_error err;
    wf_code rc = wf_schedules_pass(&h, NULL, "r1", now, 10, 0, &c, &err);
    ck_code(rc, WF_OK, err);
    return c;
}

/* A pass every quarter of an hour, from one UTC time text to another. */
static void
pass_every_quarter(const char *from, const char *to)
{
    for (int64_t t = wf_test_utc_us(from); t <= wf_test_utc_us(to); t += 15 * MIN_US)
        pass_at(t);
}

/* The runs of id, oldest first, as "<nominal UTC> <OUTCOME>" lines. */
static const char *
runs(const char *id)
{
    wf_runtime_ctx c = kit_ctx("ops");
    wf_schedule_run_row *rows = NULL;
    size_t n = 0;
    char *next = NULL;
    wf_error err;
    wf_code rc = wf_schedules_runs(&c.ref, id, 500, NULL, &rows, &n, &next, &err);
    ck_code(rc, WF_OK, err);
    static const char *names[] = {"?", "STARTED", "SKIPPED", "MISSED", "FAILED", "BUFFERED"};
    char *text = wf_arena_strdup(arena, "");
    for (size_t i = n; i > 0; i--) {
        time_t t = (time_t)(rows[i - 1].nominal_at / 1000000);
        struct tm tm;
        gmtime_r(&t, &tm);
        char when[32];
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        text = wf_arena_printf(arena, "%s%s %s%s", text, when, names[rows[i - 1].outcome],
                               i > 1 ? "\n" : "");
    }
    return text;
}

static wf_schedule_row
row_of(const char *id)
{
    wf_store_ctx sc = {"default", 0, arena};
    wf_schedule_row r;
    wf_error err;
    ck_code(wf_store_get_schedule(st, &sc, id, &r, &err), WF_OK, err);
    return r;
}

WF_TEST(test_create_get_list_and_refusals)
{
    deploy_work();
    wf_schedule_in in = cron_in("nightly", "30 2 * * *", "Europe/Berlin");
    in.variables_json = "{\"region\":\"eu\"}";
    in.note = "the nightly run";
    wf_schedule_view v = create(&in, wf_test_utc_us("2026-03-27T12:00:00Z"));
    ck_assert_int_eq(v.row.state, WF_SCHEDULE_ACTIVE);
    ck_assert_int_eq(v.row.overlap, WF_OVERLAP_SKIP);
    ck_assert_int_eq(v.row.catchup_window_ms, WF_SCHEDULE_CATCHUP_DEFAULT_MS);
    ck_assert_int_eq(v.row.next_fire_at, wf_test_utc_us("2026-03-28T01:30:00Z"));
    ck_assert_uint_eq(v.n_upcoming, WF_SCHEDULE_UPCOMING);
    ck_assert_int_eq(v.upcoming[1], wf_test_utc_us("2026-03-29T01:00:00Z"));
    ck_assert_str_eq(v.upcoming_local[0], "2026-03-28T02:30:00+01:00");
    ck_assert_str_eq(v.upcoming_local[1], "2026-03-29T03:00:00+02:00");

    wf_runtime_ctx c = kit_ctx("ops");
    wf_error err;
    wf_schedule_view got;
    ck_code(wf_schedules_get(&c.ref, "nightly", wf_test_utc_us("2026-03-27T12:00:00Z"), &got, &err),
            WF_OK, err);
    ck_assert_str_eq(got.spec.cron, "30 2 * * *");
    ck_assert_str_eq(got.spec.time_zone, "Europe/Berlin");
    ck_assert_str_eq(got.row.note, "the nightly run");
    wf_runtime_ctx other = kit_ctx("ops");
    other.ref.tenant = "other";
    ck_assert_int_eq(wf_schedules_get(&other.ref, "nightly", 0, &got, &err),
                     WF_E_SCHEDULE_NOT_FOUND);

    ck_assert_int_eq(create_rc(&in, &err), WF_E_SCHEDULE_ALREADY_EXISTS);
    wf_schedule_in bad = cron_in("b1", "61 * * * *", NULL);
    ck_assert_int_eq(create_rc(&bad, &err), WF_E_INVALID_CRON);
    bad = cron_in("b2", "@daily", "Europe/Atlantis");
    ck_assert_int_eq(create_rc(&bad, &err), WF_E_UNKNOWN_TIME_ZONE);
    bad = cron_in("b3", "@daily", NULL);
    bad.definition_key = "nope";
    ck_assert_int_eq(create_rc(&bad, &err), WF_E_DEFINITION_NOT_FOUND);
    bad = cron_in("", "@daily", NULL);
    ck_assert_int_eq(create_rc(&bad, &err), WF_E_INVALID_ARGUMENT);
    bad = cron_in("b4", "@daily", NULL);
    bad.overlap = WF_OVERLAP_CANCEL_OTHER + 1;
    ck_assert_int_eq(create_rc(&bad, &err), WF_E_INVALID_SCHEDULE);
    bad = cron_in("b5", "@daily", NULL);
    bad.variables_json = "[1]";
    ck_assert_int_eq(create_rc(&bad, &err), WF_E_INVALID_JSON);

    wf_schedule_in second = cron_in("hourly", "@hourly", NULL);
    create(&second, wf_test_utc_us("2026-03-27T12:00:00Z"));
    wf_schedule_view *rows = NULL;
    size_t n = 0;
    char *next = NULL;
    ck_code(wf_schedules_list(&c.ref, 0, NULL, 0, &rows, &n, &next, &err), WF_OK, err);
    ck_assert_uint_eq(n, 2);
    ck_code(wf_schedules_list(&other.ref, 0, NULL, 0, &rows, &n, &next, &err), WF_OK, err);
    ck_assert_uint_eq(n, 0);
}
END_TEST

WF_TEST(test_update_pause_unpause_delete)
{
    deploy_work();
    wf_schedule_in in = cron_in("s", "0 9 * * *", "UTC");
    create(&in, wf_test_utc_us("2026-01-01T00:00:00Z"));
    wf_runtime_ctx c = kit_ctx("ops");
    wf_error err;
    wf_schedule_view v;
    in.spec.cron = "0 10 * * *";
    in.overlap = WF_OVERLAP_ALLOW_ALL;
    ck_code(
        wf_schedules_update(&c.ref, &in, wf_test_utc_us("2026-01-01T00:00:00Z"), NULL, &v, &err),
        WF_OK, err);
    ck_assert_int_eq(v.row.next_fire_at, wf_test_utc_us("2026-01-01T10:00:00Z"));
    ck_assert_int_eq(row_of("s").overlap, WF_OVERLAP_ALLOW_ALL);
    in.spec.cron = "bad";
    ck_assert_int_eq(wf_schedules_update(&c.ref, &in, 0, NULL, &v, &err), WF_E_INVALID_CRON);
    in.id = "missing";
    in.spec.cron = "@daily";
    ck_assert_int_eq(wf_schedules_update(&c.ref, &in, 0, NULL, &v, &err), WF_E_SCHEDULE_NOT_FOUND);

    ck_code(wf_schedules_pause(&c.ref, "s", true, "holiday", wf_test_utc_us("2026-01-01T00:00:00Z"),
                               NULL, &v, &err),
            WF_OK, err);
    ck_assert_int_eq(v.row.state, WF_SCHEDULE_PAUSED);
    ck_assert_str_eq(v.row.pause_reason, "holiday");
    /* Paused: nothing fires, and the pause's fire times are not caught up. */
    ck_assert_uint_eq(pass_at(wf_test_utc_us("2026-01-01T10:00:30Z")).started, 0);
    ck_code(wf_schedules_pause(&c.ref, "s", false, NULL, wf_test_utc_us("2026-01-02T12:00:00Z"),
                               NULL, &v, &err),
            WF_OK, err);
    ck_assert_int_eq(v.row.state, WF_SCHEDULE_ACTIVE);
    ck_assert_int_eq(v.row.next_fire_at, wf_test_utc_us("2026-01-03T10:00:00Z"));
    ck_assert_str_eq(runs("s"), "");

    ck_code(wf_schedules_delete(&c.ref, "s", NULL, &err), WF_OK, err);
    ck_assert_int_eq(wf_schedules_delete(&c.ref, "s", NULL, &err), WF_E_SCHEDULE_NOT_FOUND);
}
END_TEST

/* A pass at the fire time starts one instance that carries the schedule;
 * run again as if the replica had died before writing its progress, it
 * finds the run and starts nothing. */
WF_TEST(test_each_fire_time_starts_once)
{
    deploy_work();
    wf_schedule_in in = cron_in("s", "*/5 * * * *", NULL);
    in.overlap = WF_OVERLAP_ALLOW_ALL;
    create(&in, wf_test_utc_us("2026-01-01T00:00:00Z"));
    wf_schedule_row before = row_of("s");
    wf_schedule_pass_counts c = pass_at(wf_test_utc_us("2026-01-01T00:05:01Z"));
    ck_assert_uint_eq(c.started, 1);
    ck_assert_int_eq(c.max_lag_us, 1000000);
    wf_schedule_row after = row_of("s");
    ck_assert_int_eq(after.next_fire_at, wf_test_utc_us("2026-01-01T00:10:00Z"));
    ck_assert_ptr_null(after.lease_owner);
    wf_instance_row inst = kit_instance(after.last_instance_id);
    ck_assert_ptr_nonnull(strstr(inst.variables_json, "\"schedule\":{\"id\":\"s\""));
    ck_assert_ptr_nonnull(strstr(inst.variables_json, "2026-01-01T00:05:00"));

    /* The replica died after the start committed, before the progress. */
    wf_store_ctx sc = {"default", 0, arena};
    wf_error err;
    after.next_fire_at = before.next_fire_at;
    after.due_at = before.due_at;
    ck_code(wf_store_update_schedule(st, &sc, &after, &err), WF_OK, err);
    c = pass_at(wf_test_utc_us("2026-01-01T00:05:40Z"));
    ck_assert_uint_eq(c.started, 0);
    ck_assert_uint_eq(c.already, 1);
    ck_assert_str_eq(runs("s"), "2026-01-01T00:05:00Z STARTED");
    ck_assert_int_eq(row_of("s").next_fire_at, wf_test_utc_us("2026-01-01T00:10:00Z"));
    /* Nothing is due before the next fire time. */
    ck_assert_uint_eq(pass_at(wf_test_utc_us("2026-01-01T00:09:59Z")).schedules, 0);
}
END_TEST

/* Berlin, 02:30 every day, polled every quarter hour through both DST
 * changes: one fire a day, at 03:00 on the day 02:30 does not exist and
 * at the first 02:30 on the day it happens twice. */
WF_TEST(test_passes_through_dst)
{
    deploy_work();
    wf_schedule_in in = cron_in("s", "30 2 * * *", "Europe/Berlin");
    in.overlap = WF_OVERLAP_ALLOW_ALL;
    create(&in, wf_test_utc_us("2026-03-27T12:00:00Z"));
    pass_every_quarter("2026-03-27T12:00:00Z", "2026-03-30T12:00:00Z");
    ck_assert_str_eq(runs("s"), "2026-03-28T01:30:00Z STARTED\n"
                                "2026-03-29T01:00:00Z STARTED\n"
                                "2026-03-30T00:30:00Z STARTED");
    wf_schedule_in fall = cron_in("f", "30 2 * * *", "Europe/Berlin");
    fall.overlap = WF_OVERLAP_ALLOW_ALL;
    create(&fall, wf_test_utc_us("2026-10-24T12:00:00Z"));
    pass_every_quarter("2026-10-24T12:00:00Z", "2026-10-26T12:00:00Z");
    ck_assert_str_eq(runs("f"), "2026-10-25T00:30:00Z STARTED\n"
                                "2026-10-26T01:30:00Z STARTED");
}
END_TEST

/* SKIP: no new instance while the last one runs; once it has ended, the
 * next fire time starts one. */
WF_TEST(test_overlap_skip)
{
    deploy_work();
    wf_schedule_in in = cron_in("s", "* * * * *", NULL);
    create(&in, wf_test_utc_us("2026-01-01T00:00:00Z"));
    pass_at(wf_test_utc_us("2026-01-01T00:01:00Z"));
    pass_at(wf_test_utc_us("2026-01-01T00:02:00Z"));
    wf_runtime_ctx c = kit_ctx("ops");
    wf_instance_row out;
    wf_error err;
    ck_code(wf_instances_cancel(&c, row_of("s").last_instance_id, "done", false, NULL, &out, &err),
            WF_OK, err);
    pass_at(wf_test_utc_us("2026-01-01T00:03:00Z"));
    ck_assert_str_eq(runs("s"), "2026-01-01T00:01:00Z STARTED\n"
                                "2026-01-01T00:02:00Z SKIPPED\n"
                                "2026-01-01T00:03:00Z STARTED");
}
END_TEST

static void
cancel_last(const char *schedule_id)
{
    wf_runtime_ctx c = kit_ctx("ops");
    wf_instance_row out;
    wf_error err;
    ck_code(wf_instances_cancel(&c, row_of(schedule_id).last_instance_id, "done", false, NULL, &out,
                                &err),
            WF_OK, err);
}

/* The run of id at the UTC time text nominal. */
static wf_schedule_run_row
run_at(const char *id, const char *nominal)
{
    wf_runtime_ctx c = kit_ctx("ops");
    wf_schedule_run_row *rows = NULL;
    size_t n = 0;
    char *next = NULL;
    wf_error err;
    ck_code(wf_schedules_runs(&c.ref, id, 500, NULL, &rows, &n, &next, &err), WF_OK, err);
    for (size_t i = 0; i < n; i++)
        if (rows[i].nominal_at == wf_test_utc_us(nominal))
            return rows[i];
    ck_abort_msg("no run of %s at %s", id, nominal);
    return rows[0];
}

/* BUFFER_ONE: a fire while the last instance runs waits (BUFFERED), a
 * second one is SKIPPED; once the instance has ended the next pass starts
 * the waiting one, which carries its own fire time. Run again as if the
 * replica had died before writing its progress (the schedule still
 * naming the waiting fire and the ended instance), the pass starts
 * nothing more. */
WF_TEST(test_overlap_buffer_one)
{
    deploy_work();
    wf_schedule_in in = cron_in("b", "* * * * *", NULL);
    in.overlap = WF_OVERLAP_BUFFER_ONE;
    create(&in, wf_test_utc_us("2026-01-01T00:00:00Z"));
    pass_at(wf_test_utc_us("2026-01-01T00:01:00Z"));
    const char *first = row_of("b").last_instance_id;
    ck_assert_uint_eq(pass_at(wf_test_utc_us("2026-01-01T00:02:00Z")).buffered, 1);
    ck_assert_int_eq(row_of("b").buffered_at, wf_test_utc_us("2026-01-01T00:02:00Z"));
    ck_assert_uint_eq(pass_at(wf_test_utc_us("2026-01-01T00:03:00Z")).skipped, 1);
    /* Looked at again within a second while it waits; still running. */
    ck_assert_int_eq(row_of("b").due_at, wf_test_utc_us("2026-01-01T00:03:01Z"));
    wf_schedule_pass_counts c = pass_at(wf_test_utc_us("2026-01-01T00:03:10Z"));
    ck_assert_uint_eq(c.schedules, 1);
    ck_assert_uint_eq(c.started, 0);
    ck_assert_str_eq(runs("b"), "2026-01-01T00:01:00Z STARTED\n"
                                "2026-01-01T00:02:00Z BUFFERED\n"
                                "2026-01-01T00:03:00Z SKIPPED");

    cancel_last("b");
    wf_schedule_row before = row_of("b");
    c = pass_at(wf_test_utc_us("2026-01-01T00:03:20Z"));
    ck_assert_uint_eq(c.started, 1);
    wf_schedule_run_row r = run_at("b", "2026-01-01T00:02:00Z");
    ck_assert_int_eq(r.outcome, WF_RUN_STARTED);
    ck_assert_int_eq(r.buffered_at, wf_test_utc_us("2026-01-01T00:02:00Z"));
    ck_assert_int_eq(r.actual_at, wf_test_utc_us("2026-01-01T00:03:20Z"));
    ck_assert_str_ne(r.instance_id, first);
    wf_instance_row inst = kit_instance(r.instance_id);
    ck_assert_ptr_nonnull(strstr(inst.variables_json, "2026-01-01T00:02:00"));
    wf_schedule_row after = row_of("b");
    ck_assert_int_eq(after.buffered_at, 0);
    ck_assert_str_eq(after.last_instance_id, r.instance_id);
    ck_assert_int_eq(after.due_at, wf_test_utc_us("2026-01-01T00:04:00Z"));

    /* The replica died after the start committed, before the progress. */
    wf_store_ctx sc = {"default", 0, arena};
    wf_error err;
    after.buffered_at = before.buffered_at;
    after.last_instance_id = before.last_instance_id;
    after.due_at = before.due_at;
    ck_code(wf_store_update_schedule(st, &sc, &after, &err), WF_OK, err);
    c = pass_at(wf_test_utc_us("2026-01-01T00:03:30Z"));
    ck_assert_uint_eq(c.started, 0);
    ck_assert_uint_eq(c.already, 1);
    ck_assert_str_eq(run_at("b", "2026-01-01T00:02:00Z").instance_id, r.instance_id);
    ck_assert_str_eq(row_of("b").last_instance_id, r.instance_id);
    ck_assert_int_eq(row_of("b").buffered_at, 0);
    /* The started one runs: the next fire waits again. */
    ck_assert_uint_eq(pass_at(wf_test_utc_us("2026-01-01T00:04:00Z")).buffered, 1);
}
END_TEST

/* CANCEL_OTHER: a fire while the last instance runs cancels it, with a
 * reason naming the schedule and the fire time in its events, and starts
 * its own; the run names the cancelled instance. With nothing running
 * nothing is cancelled. */
WF_TEST(test_overlap_cancel_other)
{
    deploy_work();
    wf_schedule_in in = cron_in("c", "* * * * *", NULL);
    in.overlap = WF_OVERLAP_CANCEL_OTHER;
    create(&in, wf_test_utc_us("2026-01-01T00:00:00Z"));
    pass_at(wf_test_utc_us("2026-01-01T00:01:00Z"));
    const char *first = row_of("c").last_instance_id;
    wf_schedule_pass_counts c = pass_at(wf_test_utc_us("2026-01-01T00:02:00Z"));
    ck_assert_uint_eq(c.started, 1);
    ck_assert_int_eq(kit_instance(first).status, WF_INSTANCE_CANCELLED);
    const char *data = kit_event_data(first, "INSTANCE_CANCELLED");
    ck_assert_ptr_nonnull(data);
    ck_assert_ptr_nonnull(strstr(data, "schedule \\\"c\\\": the fire time 2026-01-01T00:02:00"));
    wf_schedule_run_row r = run_at("c", "2026-01-01T00:02:00Z");
    ck_assert_int_eq(r.outcome, WF_RUN_STARTED);
    ck_assert_str_eq(r.cancelled_instance_id, first);
    ck_assert_int_eq(kit_instance(r.instance_id).status, WF_INSTANCE_RUNNING);

    cancel_last("c");
    pass_at(wf_test_utc_us("2026-01-01T00:03:00Z"));
    ck_assert_ptr_null(run_at("c", "2026-01-01T00:03:00Z").cancelled_instance_id);
    ck_assert_str_eq(runs("c"), "2026-01-01T00:01:00Z STARTED\n"
                                "2026-01-01T00:02:00Z STARTED\n"
                                "2026-01-01T00:03:00Z STARTED");
}
END_TEST

/* After an outage: fire times older than the catch-up window are MISSED,
 * those within it run oldest first, each once (ALLOW_ALL: each starts;
 * SKIP: the first starts and the rest find it running). */
WF_TEST(test_catch_up_window)
{
    deploy_work();
    wf_schedule_in in = cron_in("all", "* * * * *", NULL);
    in.overlap = WF_OVERLAP_ALLOW_ALL;
    in.catchup_window_ms = 3 * 60000;
    create(&in, wf_test_utc_us("2026-01-01T00:00:00Z"));
    wf_schedule_in skip = cron_in("skip", "* * * * *", NULL);
    skip.catchup_window_ms = 3 * 60000;
    create(&skip, wf_test_utc_us("2026-01-01T00:00:00Z"));
    wf_schedule_pass_counts c = pass_at(wf_test_utc_us("2026-01-01T00:06:30Z"));
    ck_assert_uint_eq(c.missed, 6);
    ck_assert_uint_eq(c.started, 4);
    ck_assert_uint_eq(c.skipped, 2);
    ck_assert_str_eq(runs("all"), "2026-01-01T00:01:00Z MISSED\n"
                                  "2026-01-01T00:02:00Z MISSED\n"
                                  "2026-01-01T00:03:00Z MISSED\n"
                                  "2026-01-01T00:04:00Z STARTED\n"
                                  "2026-01-01T00:05:00Z STARTED\n"
                                  "2026-01-01T00:06:00Z STARTED");
    ck_assert_str_eq(runs("skip"), "2026-01-01T00:01:00Z MISSED\n"
                                   "2026-01-01T00:02:00Z MISSED\n"
                                   "2026-01-01T00:03:00Z MISSED\n"
                                   "2026-01-01T00:04:00Z STARTED\n"
                                   "2026-01-01T00:05:00Z SKIPPED\n"
                                   "2026-01-01T00:06:00Z SKIPPED");
    ck_assert_int_eq(row_of("all").next_fire_at, wf_test_utc_us("2026-01-01T00:07:00Z"));
}
END_TEST

/* A start refused is a FAILED run; after pause_after_failures of them in
 * a row the schedule pauses itself. TriggerSchedule starts one now. */
WF_TEST(test_failures_pause_and_trigger)
{
    deploy_work();
    wf_schedule_in in = cron_in("s", "* * * * *", NULL);
    in.overlap = WF_OVERLAP_ALLOW_ALL;
    in.pause_after_failures = 2;
    in.version = 1;
    create(&in, wf_test_utc_us("2026-01-01T00:00:00Z"));
    /* Pinned to version 1, which goes: the starts are refused. */
    wf_store_ctx sc = {"default", 0, arena};
    wf_schedule_row r = row_of("s");
    r.def_version = 7;
    wf_error err;
    ck_code(wf_store_update_schedule(st, &sc, &r, &err), WF_OK, err);
    pass_at(wf_test_utc_us("2026-01-01T00:01:00Z"));
    ck_assert_int_eq(row_of("s").state, WF_SCHEDULE_ACTIVE);
    pass_at(wf_test_utc_us("2026-01-01T00:02:00Z"));
    wf_schedule_row paused = row_of("s");
    ck_assert_int_eq(paused.state, WF_SCHEDULE_PAUSED);
    ck_assert_int_eq(paused.failures, 2);
    ck_assert_str_eq(runs("s"), "2026-01-01T00:01:00Z FAILED\n2026-01-01T00:02:00Z FAILED");
    ck_assert_uint_eq(pass_at(wf_test_utc_us("2026-01-01T00:03:00Z")).schedules, 0);

    wf_schedule_in ok = cron_in("t", "@yearly", NULL);
    create(&ok, wf_test_utc_us("2026-01-01T00:00:00Z"));
    wf_runtime_ctx c = kit_ctx("ops");
    wf_schedule_run_row run;
    ck_code(
        wf_schedules_trigger(&c.ref, "t", wf_test_utc_us("2026-05-05T05:05:05Z"), NULL, &run, &err),
        WF_OK, err);
    ck_assert_int_eq(run.outcome, WF_RUN_STARTED);
    ck_assert_int_eq(run.manual, 1);
    ck_assert_int_eq(kit_instance(run.instance_id).status, WF_INSTANCE_RUNNING);
    ck_assert_str_eq(runs("t"), "2026-05-05T05:05:05Z STARTED");
    ck_assert_int_eq(wf_schedules_trigger(&c.ref, "nope", 0, NULL, &run, &err),
                     WF_E_SCHEDULE_NOT_FOUND);
}
END_TEST

int
main(void)
{
    wf_test_quiet_log();
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("schedules", "engine", kit_setup, kit_teardown, 0));
}
