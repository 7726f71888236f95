/*
 * h_schedules: CreateSchedule, GetSchedule, ListSchedules,
 * UpdateSchedule, DeleteSchedule, PauseSchedule, UnpauseSchedule,
 * TriggerSchedule, ListScheduleRuns and BackfillSchedule.
 *
 * Translation only: the rules, and the passes that fire schedules, are in
 * engine/schedules.c. "Now" is the app's clock (wf_app_now).
 */
#include "h_common.h"
#include "handlers.h"
#include "schedules.h"

static char *
str(char *s)
{
    return s != NULL ? s : "";
}

static Workflow__V1__ScheduleSpec *
spec_msg(wf_arena *a, const wf_schedule_spec_in *in, bool *oom)
{
    Workflow__V1__ScheduleSpec *m = wf_arena_alloc(a, sizeof *m);
    char **dates = wf_arena_calloc(a, in->n_exclude_dates + 1, sizeof *dates);
    char **rules = wf_arena_calloc(a, in->n_rrules + 1, sizeof *rules);
    if (m == NULL || dates == NULL || rules == NULL) {
        *oom = true;
        return NULL;
    }
    workflow__v1__schedule_spec__init(m);
    m->cron = str((char *)in->cron);
    m->interval = str((char *)in->interval);
    m->time_zone = str((char *)in->time_zone);
    m->start_at = wf_h_timestamp(a, in->start_at, oom);
    m->end_at = wf_h_timestamp(a, in->end_at, oom);
    m->jitter = wf_h_duration(a, in->jitter_us / 1000, oom);
    for (size_t i = 0; i < in->n_exclude_dates; i++)
        dates[i] = (char *)in->exclude_dates[i];
    m->exclude_dates = dates;
    m->n_exclude_dates = in->n_exclude_dates;
    for (size_t i = 0; i < in->n_rrules; i++)
        rules[i] = (char *)in->rrules[i];
    m->rrules = rules;
    m->n_rrules = in->n_rrules;
    m->rrule_start = str((char *)in->rrule_start);
    return m;
}

static Workflow__V1__ScheduleFireTime **
upcoming_msgs(wf_arena *a, const wf_schedule_view *v, bool *oom)
{
    Workflow__V1__ScheduleFireTime **out = wf_arena_calloc(a, v->n_upcoming + 1, sizeof *out);
    for (size_t i = 0; out != NULL && i < v->n_upcoming; i++) {
        Workflow__V1__ScheduleFireTime *f = wf_arena_alloc(a, sizeof *f);
        if (f == NULL)
            return NULL;
        workflow__v1__schedule_fire_time__init(f);
        f->time = wf_h_timestamp(a, v->upcoming[i], oom);
        f->local_time = (char *)v->upcoming_local[i];
        out[i] = f;
    }
    *oom |= out == NULL;
    return out;
}

static Workflow__V1__Schedule *
schedule_msg(wf_arena *a, const wf_schedule_view *v)
{
    bool oom = false;
    const wf_schedule_row *r = &v->row;
    Workflow__V1__Schedule *m = wf_arena_alloc(a, sizeof *m);
    Workflow__V1__SchedulePolicy *p = wf_arena_alloc(a, sizeof *p);
    if (m == NULL || p == NULL)
        return NULL;
    workflow__v1__schedule__init(m);
    workflow__v1__schedule_policy__init(p);
    m->id = str(r->id);
    m->definition_key = str(r->definition_key);
    m->version = r->def_version;
    m->variables_json = str(r->variables_json);
    if (r->aggregate_type != NULL) {
        Workflow__V1__Aggregate *g = wf_arena_alloc(a, sizeof *g);
        if (g == NULL)
            return NULL;
        workflow__v1__aggregate__init(g);
        g->type = r->aggregate_type;
        g->id = str(r->aggregate_id);
        m->aggregate = g;
    }
    m->spec = spec_msg(a, &v->spec, &oom);
    p->overlap = (Workflow__V1__ScheduleOverlapPolicy)r->overlap;
    p->catchup_window = wf_h_duration(a, r->catchup_window_ms, &oom);
    p->pause_after_failures = r->pause_after_failures;
    m->policy = p;
    m->state = (Workflow__V1__ScheduleState)r->state;
    m->pause_reason = str(r->pause_reason);
    m->note = str(r->note);
    m->upcoming = upcoming_msgs(a, v, &oom);
    m->n_upcoming = v->n_upcoming;
    m->last_instance_id = str(r->last_instance_id);
    m->failures = r->failures;
    m->created_by = str(r->created_by);
    m->create_time = wf_h_timestamp(a, r->created_at, &oom);
    m->update_time = wf_h_timestamp(a, r->updated_at, &oom);
    return oom ? NULL : m;
}

static Workflow__V1__ScheduleRun *
run_msg(wf_arena *a, const wf_schedule_run_row *r)
{
    bool oom = false;
    Workflow__V1__ScheduleRun *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__schedule_run__init(m);
    m->schedule_id = str(r->schedule_id);
    m->nominal_time = wf_h_timestamp(a, r->nominal_at, &oom);
    m->actual_time = wf_h_timestamp(a, r->actual_at, &oom);
    m->outcome = (Workflow__V1__ScheduleRunOutcome)r->outcome;
    m->instance_id = str(r->instance_id);
    m->detail = str(r->detail);
    m->manual = r->manual != 0;
    m->buffered_time = wf_h_timestamp(a, r->buffered_at, &oom);
    m->cancelled_instance_id = str(r->cancelled_instance_id);
    m->backfill = r->backfill != 0;
    return oom ? NULL : m;
}

/* The request fields CreateSchedule and UpdateSchedule share. */
typedef struct schedule_req {
    const char *id, *definition_key;
    int32_t version;
    const char *variables_json;
    const Workflow__V1__Aggregate *aggregate;
    const Workflow__V1__ScheduleSpec *spec;
    const Workflow__V1__SchedulePolicy *policy;
    bool paused;
    const char *note;
} schedule_req;

static wf_schedule_in
schedule_in(const schedule_req *q)
{
    wf_schedule_in in = {.id = q->id,
                         .definition_key = q->definition_key,
                         .version = q->version,
                         .variables_json = q->variables_json,
                         .paused = q->paused,
                         .note = q->note};
    if (q->aggregate != NULL) {
        in.aggregate_type = q->aggregate->type;
        in.aggregate_id = q->aggregate->id;
    }
    if (q->spec != NULL) {
        in.spec =
            (wf_schedule_spec_in){.cron = q->spec->cron,
                                  .interval = q->spec->interval,
                                  .time_zone = q->spec->time_zone,
                                  .start_at = wf_h_time_us(q->spec->start_at),
                                  .end_at = wf_h_time_us(q->spec->end_at),
                                  .jitter_us = wf_h_duration_ms(q->spec->jitter) * 1000,
                                  .exclude_dates = (const char *const *)q->spec->exclude_dates,
                                  .n_exclude_dates = q->spec->n_exclude_dates,
                                  .rrules = (const char *const *)q->spec->rrules,
                                  .n_rrules = q->spec->n_rrules,
                                  .rrule_start = q->spec->rrule_start};
    }
    if (q->policy != NULL) {
        in.overlap = (int)q->policy->overlap;
        in.catchup_window_ms = wf_h_duration_ms(q->policy->catchup_window);
        in.pause_after_failures = q->policy->pause_after_failures;
    }
    return in;
}

/* ---- CreateSchedule, UpdateSchedule --------------------------------------------- */

#define SCHEDULE_BUILDER(fn, type, init)                                                           \
    static ProtobufCMessage *fn(wf_arena *a, const void *result)                                   \
    {                                                                                              \
        type *m = wf_arena_alloc(a, sizeof *m);                                                    \
        if (m == NULL)                                                                             \
            return NULL;                                                                           \
        init(m);                                                                                   \
        m->schedule = schedule_msg(a, result);                                                     \
        return m->schedule != NULL ? &m->base : NULL;                                              \
    }

SCHEDULE_BUILDER(build_create, Workflow__V1__CreateScheduleResponse,
                 workflow__v1__create_schedule_response__init)
SCHEDULE_BUILDER(build_update, Workflow__V1__UpdateScheduleResponse,
                 workflow__v1__update_schedule_response__init)
SCHEDULE_BUILDER(build_pause, Workflow__V1__PauseScheduleResponse,
                 workflow__v1__pause_schedule_response__init)
SCHEDULE_BUILDER(build_unpause, Workflow__V1__UnpauseScheduleResponse,
                 workflow__v1__unpause_schedule_response__init)

static const wf_h_builder create_builder = {build_create,
                                            &workflow__v1__create_schedule_response__descriptor};
static const wf_h_builder update_builder = {build_update,
                                            &workflow__v1__update_schedule_response__descriptor};
static const wf_h_builder pause_builder = {build_pause,
                                           &workflow__v1__pause_schedule_response__descriptor};
static const wf_h_builder unpause_builder = {build_unpause,
                                             &workflow__v1__unpause_schedule_response__descriptor};

wf_code
h_create_schedule(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                  wf_error *err)
{
    const Workflow__V1__CreateScheduleRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_schedule_view out;
    wf_h_ref_ctx(call, &ctx);
    schedule_req q = {req->id,        req->definition_key, req->version, req->variables_json,
                      req->aggregate, req->spec,           req->policy,  req->paused,
                      req->note};
    wf_schedule_in in = schedule_in(&q);
    wf_code rc = wf_h_idem(call, msg, req->request_id, &create_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_schedules_create(&ctx, &in, wf_app_now(call->app), &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &create_builder, &out, resp, err);
}

wf_code
h_update_schedule(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                  wf_error *err)
{
    const Workflow__V1__UpdateScheduleRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_schedule_view out;
    wf_h_ref_ctx(call, &ctx);
    schedule_req q = {req->id,        req->definition_key, req->version, req->variables_json,
                      req->aggregate, req->spec,           req->policy,  req->paused,
                      req->note};
    wf_schedule_in in = schedule_in(&q);
    wf_code rc = wf_h_idem(call, msg, req->request_id, &update_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_schedules_update(&ctx, &in, wf_app_now(call->app), &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &update_builder, &out, resp, err);
}

/* ---- GetSchedule, ListSchedules ----------------------------------------------- */

wf_code
h_get_schedule(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__GetScheduleRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_schedule_view v;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_schedules_get(&ctx, req->id, wf_app_now(call->app), &v, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__GetScheduleResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__get_schedule_response__init(m);
    m->schedule = schedule_msg(call->arena, &v);
    if (m->schedule == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

wf_code
h_list_schedules(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__ListSchedulesRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_schedule_view *v = NULL;
    size_t n = 0;
    char *next = NULL;
    const char *cursor = NULL;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_h_page_in(call, msg, req->page_token, &cursor, err);
    if (rc == WF_OK)
        rc = wf_schedules_list(&ctx, req->page_size, cursor, wf_app_now(call->app), &v, &n, &next,
                               err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__ListSchedulesResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    Workflow__V1__Schedule **rows = wf_arena_calloc(call->arena, n + 1, sizeof *rows);
    if (m == NULL || rows == NULL)
        return wf_error_nomem(err);
    workflow__v1__list_schedules_response__init(m);
    for (size_t i = 0; i < n; i++)
        if ((rows[i] = schedule_msg(call->arena, &v[i])) == NULL)
            return wf_error_nomem(err);
    m->schedules = rows;
    m->n_schedules = n;
    m->next_page_token = wf_h_page_out(call, msg, next);
    if (m->next_page_token == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

/* ---- DeleteSchedule, PauseSchedule, UnpauseSchedule ----------------------------- */

static ProtobufCMessage *
build_delete(wf_arena *a, const void *result)
{
    (void)result;
    Workflow__V1__DeleteScheduleResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__delete_schedule_response__init(m);
    return &m->base;
}

static const wf_h_builder delete_builder = {build_delete,
                                            &workflow__v1__delete_schedule_response__descriptor};

wf_code
h_delete_schedule(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                  wf_error *err)
{
    const Workflow__V1__DeleteScheduleRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_h_idem(call, msg, req->request_id, &delete_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_schedules_delete(&ctx, req->id, &idem, err);
    return wf_h_respond(call, rc, &idem, &delete_builder, NULL, resp, err);
}

static wf_code
pause_call(wf_call *call, const ProtobufCMessage *msg, const char *id, bool pause,
           const char *reason, const char *request_id, const wf_h_builder *b,
           ProtobufCMessage **resp, wf_error *err)
{
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_schedule_view out;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_h_idem(call, msg, request_id, b, &idem, err);
    if (rc == WF_OK)
        rc = wf_schedules_pause(&ctx, id, pause, reason, wf_app_now(call->app), &idem, &out, err);
    return wf_h_respond(call, rc, &idem, b, &out, resp, err);
}

wf_code
h_pause_schedule(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__PauseScheduleRequest *req = (const void *)msg;
    return pause_call(call, msg, req->id, true, req->reason, req->request_id, &pause_builder, resp,
                      err);
}

wf_code
h_unpause_schedule(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                   wf_error *err)
{
    const Workflow__V1__UnpauseScheduleRequest *req = (const void *)msg;
    return pause_call(call, msg, req->id, false, req->reason, req->request_id, &unpause_builder,
                      resp, err);
}

/* ---- TriggerSchedule, ListScheduleRuns ----------------------------------------- */

static ProtobufCMessage *
build_trigger(wf_arena *a, const void *result)
{
    Workflow__V1__TriggerScheduleResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__trigger_schedule_response__init(m);
    m->run = run_msg(a, result);
    return m->run != NULL ? &m->base : NULL;
}

static const wf_h_builder trigger_builder = {build_trigger,
                                             &workflow__v1__trigger_schedule_response__descriptor};

wf_code
h_trigger_schedule(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                   wf_error *err)
{
    const Workflow__V1__TriggerScheduleRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_schedule_run_row out;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_h_idem(call, msg, req->request_id, &trigger_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_schedules_trigger(&ctx, req->id, wf_app_now(call->app), &idem, &out, err);
    if (rc == WF_OK && !wf_uow_idem_replayed(&idem))
        wf_app_wake_streams(call->app, WF_TOPIC_EVENTS);
    return wf_h_respond(call, rc, &idem, &trigger_builder, &out, resp, err);
}

wf_code
h_list_schedule_runs(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                     wf_error *err)
{
    const Workflow__V1__ListScheduleRunsRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_schedule_run_row *v = NULL;
    size_t n = 0;
    char *next = NULL;
    const char *cursor = NULL;
    wf_h_ref_ctx(call, &ctx);
    wf_code rc = wf_h_page_in(call, msg, req->page_token, &cursor, err);
    if (rc == WF_OK)
        rc = wf_schedules_runs(&ctx, req->schedule_id, req->page_size, cursor, &v, &n, &next, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__ListScheduleRunsResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    Workflow__V1__ScheduleRun **rows = wf_arena_calloc(call->arena, n + 1, sizeof *rows);
    if (m == NULL || rows == NULL)
        return wf_error_nomem(err);
    workflow__v1__list_schedule_runs_response__init(m);
    for (size_t i = 0; i < n; i++)
        if ((rows[i] = run_msg(call->arena, &v[i])) == NULL)
            return wf_error_nomem(err);
    m->runs = rows;
    m->n_runs = n;
    m->next_page_token = wf_h_page_out(call, msg, next);
    if (m->next_page_token == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

/* ---- BackfillSchedule -------------------------------------------------------- */

static ProtobufCMessage *
build_backfill(wf_arena *a, const void *result)
{
    const wf_schedule_backfill_out *r = result;
    Workflow__V1__BackfillScheduleResponse *m = wf_arena_alloc(a, sizeof *m);
    Workflow__V1__ScheduleRun **rows = wf_arena_calloc(a, r->n_runs + 1, sizeof *rows);
    if (m == NULL || rows == NULL)
        return NULL;
    workflow__v1__backfill_schedule_response__init(m);
    for (size_t i = 0; i < r->n_runs; i++)
        if ((rows[i] = run_msg(a, &r->runs[i])) == NULL)
            return NULL;
    m->runs = rows;
    m->n_runs = r->n_runs;
    m->already_handled = (int32_t)r->already;
    return &m->base;
}

static const wf_h_builder backfill_builder = {
    build_backfill, &workflow__v1__backfill_schedule_response__descriptor};

wf_code
h_backfill_schedule(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                    wf_error *err)
{
    const Workflow__V1__BackfillScheduleRequest *req = (const void *)msg;
    wf_runtime_ctx rt;
    wf_uow_idem idem;
    wf_schedule_backfill_out out = {0};
    wf_h_net_ctx(call, &rt);
    rt.ref.no_auto_create = true;
    const wf_config *cfg = call->app->cfg;
    wf_schedule_backfill_in in = {.id = req->schedule_id,
                                  .from = wf_h_time_us(req->from_time),
                                  .to = wf_h_time_us(req->to_time),
                                  .overlap = (int)req->overlap,
                                  .max = cfg != NULL ? (size_t)cfg->schedule_backfill_max : 0};
    wf_code rc = wf_h_idem(call, msg, req->request_id, &backfill_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_schedules_backfill(&rt, &in, wf_app_now(call->app), &idem, &out, err);
    if (rc == WF_OK && !wf_uow_idem_replayed(&idem) && out.n_runs > 0)
        wf_app_wake_streams(call->app, WF_TOPIC_EVENTS);
    return wf_h_respond(call, rc, &idem, &backfill_builder, &out, resp, err);
}
