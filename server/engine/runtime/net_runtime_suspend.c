/*
 * net_runtime_suspend: SuspendInstance and ResumeInstance of a root
 * instance's whole tree (a net or an AD_HOC referral tree).
 *
 * A suspension is one status on the root row, SUSPENDED; no job, timer or
 * subscription row changes. Whatever would move the tree forward on its
 * own looks at that status:
 *   - the store leases no job and claims no timer of a tree whose root is
 *     SUSPENDED (one condition of the lease and claim statements, store.h);
 *   - a timer claimed as the suspension committed is kept, unfired
 *     (net_runtime_timers.c), and fires after the resume;
 *   - SendSignal correlates only with a RUNNING instance, so a signal for a
 *     suspended tree is buffered (or dropped without buffer_ttl), and a MSG
 *     work item enabled meanwhile consumes nothing (signals_consume.c);
 *   - task operations and AssignTo answer INSTANCE_SUSPENDED
 *     (wf_work_check_not_suspended).
 * A job leased before the suspension may still be completed or failed
 * (net_runtime_jobs.c): the token moves and what it enables waits.
 *
 * Only a RUNNING root is suspended: FAILED waits for RetryInstance already
 * and COMPENSATING is undoing work that should not stop halfway. The
 * resume therefore always restores RUNNING, wakes the workers of the
 * tree's job types and the scheduler (due timers fire on its next pass),
 * and consumes the buffered signals its waits match, in the same unit of
 * work. Both calls are idempotent in the state they aim at, as Camunda's
 * suspension and Temporal's pause are: suspending a SUSPENDED tree or
 * resuming a RUNNING one changes nothing and writes no event.
 *
 * Must not: include protobuf or grpc headers.
 */

#include "net_runtime_int.h"

#include <jansson.h>
#include <string.h>

#include "ids.h"
#include "wf_str.h"

#define MAX_REASON 1024

typedef struct suspend_op {
    const wf_runtime_ctx *ctx;
    const char *instance_id;
    const char *reason;
    bool resume;
    wf_instance_row *out;
    const char **wake;
    size_t n_wake;
} suspend_op;

/* The checks both calls share: a root that has not ended. */
static wf_code
check_root(const net_work *w, const char *id, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    if (in->parent_id != NULL)
        return wf_error_set(err, WF_E_INSTANCE_NOT_ROOT,
                            "instance \"%s\" is not a root: its tree is suspended and resumed "
                            "through root instance \"%s\"",
                            id, in->root_id);
    if (wf_instance_ended(in->status))
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" has ended", id);
    return WF_OK;
}

/* ResumeInstance's wake-ups: every job type of the tree that is waiting
 * to be activated, and the scheduler for the timers. A job that was due
 * becomes activatable at the resume (so the store notifies the workers of
 * every replica, as for a new job); due timers lose a claim taken as the
 * suspension committed, so the next pass takes them. */
static wf_code
resume_work(net_work *w, wf_error *err)
{
    wf_code rc = wf_runtime__add_wake(w, WF_NW_WAKE_TIMERS, err);
    for (size_t i = 0; rc == WF_OK && i < w->jobs.n; i++) {
        wf_job_row *j = JOB(w, i);
        if ((w->jobs.flags[i] & NW_GONE) || j->state != WF_JOB_ACTIVATABLE)
            continue;
        if (j->activatable_at < w->rw.now) {
            j->activatable_at = w->rw.now;
            wf_runtime__dirty(&w->jobs, i);
        }
        rc = wf_runtime__add_wake(w, j->job_type, err);
    }
    for (size_t i = 0; rc == WF_OK && i < w->timers.n; i++)
        if (!(w->timers.flags[i] & NW_GONE) && TIMER(w, i)->claimed_until > w->rw.now) {
            TIMER(w, i)->claimed_until = 0;
            wf_runtime__dirty(&w->timers, i);
        }
    /* Signals buffered for the tree while it was suspended. */
    if (rc == WF_OK)
        rc = wf_runtime__consume_awaited(w, err);
    return rc;
}

static wf_code
suspend_body(wf_tx *tx, void *arg, wf_error *err)
{
    suspend_op *op = arg;
    net_work w;
    op->n_wake = 0;
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, op->instance_id, NULL, err);
    if (rc == WF_OK)
        rc = check_root(&w, op->instance_id, err);
    if (rc != WF_OK)
        return rc;
    wf_instance_row *in = &w.rw.insts[w.inst];
    wf_instance_status from = op->resume ? WF_INSTANCE_SUSPENDED : WF_INSTANCE_RUNNING;
    wf_instance_status to = op->resume ? WF_INSTANCE_RUNNING : WF_INSTANCE_SUSPENDED;
    *op->out = *in;
    if (in->status == to || (op->resume && in->status != from))
        return WF_OK; /* already there, or not suspended: nothing changes */
    if (in->status != from)
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING,
                            "instance \"%s\" is %s: only a running instance can be suspended",
                            op->instance_id,
                            in->status == WF_INSTANCE_FAILED ? "FAILED (resolve its incident "
                                                               "with RetryInstance first)"
                                                             : "COMPENSATING");
    in->status = to;
    wf_work_touch_instance(&w.rw, w.inst);
    rc = wf_runtime__event(&w, op->resume ? "INSTANCE_RESUMED" : "INSTANCE_SUSPENDED",
                           json_pack("{s:s}", "reason", op->reason != NULL ? op->reason : ""), err);
    if (rc == WF_OK && op->resume)
        rc = resume_work(&w, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK) {
        *op->out = w.rw.insts[w.inst];
        wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    }
    return rc;
}

static wf_code
run(const wf_runtime_ctx *ctx, const char *instance_id, const char *reason, bool resume,
    wf_uow_idem *idem, wf_instance_row *out, wf_error *err)
{
    wf_code rc = wf_ids_check(&ctx->ref, WF_ID_INSTANCE, "instance_id", instance_id, err);
    if (rc != WF_OK)
        return rc;
    if (reason != NULL && strlen(reason) > MAX_REASON)
        return wf_work_invalid(&ctx->ref, "reason", "must be at most 1024 bytes", err);
    suspend_op op = {
        .ctx = ctx, .instance_id = instance_id, .reason = reason, .resume = resume, .out = out};
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    rc = wf_uow_run(ctx->ref.store, &sc, idem, suspend_body, &op, out, err);
    if (rc == WF_OK && !wf_uow_idem_replayed(idem))
        wf_runtime__wake(ctx, op.wake, op.n_wake);
    return rc;
}

wf_code
wf_runtime_suspend_instance(const wf_runtime_ctx *ctx, const char *instance_id, const char *reason,
                            wf_uow_idem *idem, wf_instance_row *out, wf_error *err)
{
    return run(ctx, instance_id, reason, false, idem, out, err);
}

wf_code
wf_runtime_resume_instance(const wf_runtime_ctx *ctx, const char *instance_id, const char *reason,
                           wf_uow_idem *idem, wf_instance_row *out, wf_error *err)
{
    return run(ctx, instance_id, reason, true, idem, out, err);
}
