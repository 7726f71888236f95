/*
 * h_scheduler: RunSchedulerPass, and the glue that lets workflowd's
 * background scheduler (engine/scheduler.c) fire timers through the net
 * runtime and wake this app's streams.
 *
 * The RPC runs the same passes as the background thread, on the calling
 * worker, scoped to the caller's tenant. It uses a scheduler of its own in
 * manual mode (no thread) rather than the process's one, so it works the
 * same wherever the app runs (workflowd, the in-process test server) and
 * the claims keep it apart from the thread.
 */
#include <string.h>

#include "h_common.h"
#include "handlers.h"
#include "scheduler.h"
#include "wf_time.h"

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
    wf_net_rt rt = {app->store, wake_app, app};
    wf_net_fire_timers(&rt, rows, n, deadline_ms, fired, codes, errs);
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
}

wf_code
wf_app_fire_timer(void *arg, const wf_timer_row *timer, int64_t deadline_ms, bool *fired,
                  wf_error *err)
{
    wf_app *app = arg;
    wf_net_rt rt = {app->store, wake_app, app};
    return wf_net_fire_timer(&rt, timer, deadline_ms, fired, err);
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
    *resp = &m->base;
    return WF_OK;
}
