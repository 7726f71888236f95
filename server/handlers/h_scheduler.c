/*
 * h_scheduler: RunSchedulerPass, and the glue that lets workflowd's
 * background scheduler (scheduler/scheduler.c) fire timers through the net
 * runtime and wake this app's streams.
 *
 * The RPC runs the same passes as the background thread, on the calling
 * worker, scoped to the caller's tenant. It uses a scheduler of its own in
 * manual mode (no thread) rather than the process's one, so it works the
 * same wherever the app runs (workflowd, the in-process test server) and
 * the claims keep it apart from the thread.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "h_common.h"
#include "handlers.h"
#include "batch.h"
#include "schedules.h"
#include "scheduler.h"
#include "signals.h"
#include "wf_id.h"
#include "wf_time.h"

/* Batch operations claimed by one pass (one chunk each). */
#define BATCHES_PER_PASS 16
/* Schedules claimed by one pass. */
#define SCHEDULES_PER_PASS 32

/* Time kept back from the call's deadline to send the answer. */
#define ANSWER_MARGIN_MS 50

static void
wake_app(void *arg, const char *topic)
{
    wf_app_wake_streams(arg, topic);
}

static void
fire_timers(void *arg, const wf_timer_row *rows, size_t n, int64_t deadline_ms, bool *fired,
            wf_code *codes, wf_error *errs)
{
    wf_app *app = arg;
    wf_runtime_host rt = {app->store, wake_app, app};
    wf_runtime_fire_timers(&rt, rows, n, deadline_ms, fired, codes, errs);
}

/* A pass of batch operations (engine/batch.h) on this app's store, its
 * commits waking this app's streams. The owner of the claims,
 * "<pid>/<uuid>", is fresh for each pass (it tells one pass's leases from
 * another's) and names the process holding a lease, for operators. */
static wf_code
run_batches(void *arg, const char *tenant, int64_t deadline_ms, size_t *chunks, wf_error *err)
{
    wf_app *app = arg;
    char owner[64];
    wf_arena *a = wf_arena_new();
    const char *id = a != NULL ? wf_id_new(a) : NULL;
    if (id == NULL) {
        wf_arena_free(a);
        return wf_error_nomem(err);
    }
    snprintf(owner, sizeof owner, "%ld/%s", (long)getpid(), id);
    wf_arena_free(a);
    wf_batch_host h = {
        .store = app->store,
        .dir = app->directory,
        .max_variables_bytes = app->cfg != NULL ? (size_t)app->cfg->max_variables_bytes : 0,
        .wake = wake_app,
        .wake_arg = app,
        .lease_ms = app->cfg != NULL ? app->cfg->batch_lease_s * 1000 : 0,
    };
    wf_code rc = wf_batch_pass(&h, tenant, owner, BATCHES_PER_PASS, deadline_ms, chunks, err);
    if (rc != WF_OK)
        return rc;
    /* Then a chunk of signal fan-out deliveries (engine/runtime/signals.h). */
    wf_runtime_fanout_host fh = {
        .store = app->store,
        .dir = app->directory,
        .max_variables_bytes = h.max_variables_bytes,
        .wake = wake_app,
        .wake_arg = app,
        .chunk = app->cfg != NULL ? (size_t)app->cfg->fanout_chunk : 0,
        .lease_ms = h.lease_ms, /* a dead replica's claims, as its batches */
    };
    size_t done = 0;
    rc = wf_runtime_fanout_pass(&fh, tenant, deadline_ms, &done, err);
    *chunks += done > 0;
    return rc;
}

int64_t
wf_app_now(const wf_app *app)
{
    return app != NULL && app->clock != NULL ? app->clock(app->clock_arg) : wf_now_us();
}

/* Adds what a pass of schedules did to the app's counters (/metrics). */
static void
note_schedule_runs(wf_app *app, const wf_schedule_pass_counts *c)
{
    const size_t n[6] = {0, c->started, c->skipped, c->missed, c->failed, c->buffered};
    for (int i = 1; i < 6; i++)
        __atomic_add_fetch(&app->schedule_runs[i], (uint64_t)n[i], __ATOMIC_RELAXED);
    if (c->started == 0)
        return;
    __atomic_store_n(&app->schedule_lag_us, c->max_lag_us, __ATOMIC_RELAXED);
    int64_t max = __atomic_load_n(&app->schedule_lag_max_us, __ATOMIC_RELAXED);
    while (c->max_lag_us > max &&
           !__atomic_compare_exchange_n(&app->schedule_lag_max_us, &max, c->max_lag_us, false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* A pass of schedules (engine/schedules.h) on this app's store at the
 * app's clock; the owner of the claims as run_batches'. */
static wf_code
run_schedules(void *arg, const char *tenant, int64_t deadline_ms, size_t *claimed, size_t *runs,
              wf_error *err)
{
    wf_app *app = arg;
    char owner[64];
    wf_arena *a = wf_arena_new();
    const char *id = a != NULL ? wf_id_new(a) : NULL;
    if (id == NULL) {
        wf_arena_free(a);
        return wf_error_nomem(err);
    }
    snprintf(owner, sizeof owner, "%ld/%s", (long)getpid(), id);
    wf_arena_free(a);
    wf_schedule_host h = {
        .store = app->store,
        .dir = app->directory,
        .max_variables_bytes = app->cfg != NULL ? (size_t)app->cfg->max_variables_bytes : 0,
        .wake = wake_app,
        .wake_arg = app,
    };
    wf_schedule_pass_counts c;
    wf_code rc = wf_schedules_pass(&h, tenant, owner, wf_app_now(app), SCHEDULES_PER_PASS,
                                   deadline_ms, &c, err);
    *claimed = c.schedules;
    *runs = c.started + c.skipped + c.missed + c.failed + c.buffered;
    note_schedule_runs(app, &c);
    return rc;
}

void
wf_app_scheduler_options(const wf_app *app, wf_scheduler_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->wake = wake_app;
    opt->fire_batch = fire_timers;
    opt->sweep_interval_ms = app->cfg->sweep_interval_s * 1000;
    opt->idempotency_retention_ms = app->cfg->idempotency_retention_s * 1000;
    opt->signal_retention_ms = app->cfg->signal_retention_s * 1000;
    opt->event_retention_ms = app->cfg->event_retention_s * 1000;
    opt->batches = run_batches;
    opt->schedules = run_schedules;
}

wf_code
wf_app_fire_timer(void *arg, const wf_timer_row *timer, int64_t deadline_ms, bool *fired,
                  wf_error *err)
{
    wf_app *app = arg;
    wf_runtime_host rt = {app->store, wake_app, app};
    return wf_runtime_fire_timer(&rt, timer, deadline_ms, fired, err);
}

wf_code
h_run_scheduler_pass(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp,
                     wf_error *err)
{
    (void)req;
    wf_scheduler_options opt;
    wf_app_scheduler_options(call->app, &opt);
    opt.manual = true;
    int64_t until = 0;
    if (call->deadline_ms != 0) {
        until = call->deadline_ms - ANSWER_MARGIN_MS;
        int64_t left = until - wf_mono_ms();
        /* Each store call and firing gets at most what is left. */
        opt.call_timeout_ms = left > 1 ? left : 1;
    }
    wf_scheduler *s = wf_scheduler_start(call->app->store, &opt, wf_app_fire_timer, call->app, err);
    if (s == NULL)
        return err->code;
    wf_sched_counts c;
    wf_code rc = wf_scheduler_run(s, call->tenant, true, until, &c, err);
    wf_scheduler_stop(s);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__RunSchedulerPassResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__run_scheduler_pass_response__init(m);
    m->timers_fired = (int64_t)c.timers_fired;
    m->leases_expired = (int64_t)c.leases_expired;
    m->signals_expired = (int64_t)c.signals_expired;
    m->rows_removed = (int64_t)c.rows_removed;
    m->schedule_runs = (int64_t)c.schedule_runs;
    *resp = &m->base;
    return WF_OK;
}
