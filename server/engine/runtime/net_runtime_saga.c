/*
 * net_runtime_saga: sagas and incidents of NET instances (docs/behaviour.md,
 * "Incidents and RetryInstance").
 *
 * The completion history is the work items of transitions with a
 * compensation_job_type, kept as FIRED rows with finished_at
 * (net_runtime.c, apply_fired). Compensation:
 *   begin      a job failed for good, or CancelInstance{compensate}: the
 *              forward work is abandoned (enabled items withdrawn with
 *              their tasks, jobs, timers, subscriptions; tokens removed),
 *              the instance goes COMPENSATING (COMPENSATION_STARTED with
 *              the transition ids in compensation order) and the first
 *              compensation job is created;
 *   step       one compensation job at a time for the FIRED item finished
 *              last that has no job yet: compensation = true, job_type =
 *              the transition's compensation_job_type, its retry policy,
 *              the instance variables, idempotency key
 *              "<instance>:<work item>:compensate" (stable across attempts
 *              and RetryInstance);
 *   completed  the job and the item are deleted (never compensated twice),
 *              then the next step;
 *   failed     after the job's own retries: the job stays FAILED (the
 *              marker that compensation failed), COMPENSATION_STEP_FAILED,
 *              last_error = its message, then the next step;
 *   end        no step left: FAILED (INSTANCE_FAILED) when a compensation
 *              job FAILED, else COMPENSATED (INSTANCE_COMPENSATED).
 * RetryInstance of a FAILED instance re-arms the failed job with fresh
 * attempts (INCIDENT_RESOLVED): a failed compensation job (the one that
 * comes first in compensation order; the others are queued again) resumes
 * COMPENSATING, a failed forward job resumes RUNNING.
 *
 * A TIME or MSG firing refused by the net (NO_ARC_MATCHED, a failing
 * guard) leaves its work item ENABLED on its tokens with the timer or
 * subscription spent, and the instance FAILED (net_runtime_timers.c,
 * signals_consume.c).
 * RetryInstance re-fires that work item on the same tokens with the
 * variables as they are now (the signal's payload was merged when it
 * arrived; SetVariables may have fixed them since), as resolving a
 * Zeebe/Camunda incident re-evaluates the failed step: INCIDENT_RESOLVED,
 * then the firing's events. Refused again, the call fails with the
 * firing's reason and nothing changes. The timer is not re-armed and no
 * new signal is awaited: the time came and the signal was consumed.
 *
 * Either way, once the instance runs again its MSG waits still armed look
 * at the buffer again (wf_runtime__consume_awaited): a signal buffered while
 * it was FAILED, or put back when a firing of the step that enabled them
 * was refused, is consumed then, not only if it is sent again.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "vars.h"
#include "ids.h"
#include "wf_id.h"
#include "wf_time.h"
#include "wf_str.h"

static const char *
comp_type(const net_work *w, const wf_work_item_row *it)
{
    const wf_transition *t = wf_runtime__transition_of(w, it->transition_id);
    return t != NULL && t->compensation_job_type != NULL && t->compensation_job_type[0] != '\0'
               ? t->compensation_job_type
               : NULL;
}

static const char *
inst_id(const net_work *w)
{
    return w->rw.insts[w->inst].id;
}

/* Item i is a completed compensable step of the instance. */
static bool
compensable(const net_work *w, size_t i)
{
    const wf_work_item_row *it = ITEM(w, i);
    return !(w->items.flags[i] & NW_GONE) && it->state == WF_WORK_ITEM_FIRED &&
           wf_str_eq(it->instance_id, inst_id(w)) && comp_type(w, it) != NULL;
}

/* a is compensated before b: finished later (then enabled later, then the
 * larger, time-ordered id). */
static bool
before(const wf_work_item_row *a, const wf_work_item_row *b)
{
    if (a->finished_at != b->finished_at)
        return a->finished_at > b->finished_at;
    if (a->enabled_at != b->enabled_at)
        return a->enabled_at > b->enabled_at;
    return strcmp(a->id, b->id) > 0;
}

/* The live job (any state) of the instance for work item id; WF_WORK_NONE. */
static size_t
job_of_item(const net_work *w, const char *item_id, bool compensation)
{
    for (size_t i = 0; i < w->jobs.n; i++)
        if (!(w->jobs.flags[i] & NW_GONE) && JOB(w, i)->compensation == compensation &&
            wf_str_eq(JOB(w, i)->work_item_id, item_id))
            return i;
    return WF_WORK_NONE;
}

/* The net instance has completed transitions with a compensation_job_type
 * not compensated yet. */
static bool
has_steps(const net_work *w)
{
    for (size_t i = 0; i < w->items.n; i++)
        if (compensable(w, i))
            return true;
    return false;
}

static wf_code
create_step(net_work *w, size_t ii, wf_error *err)
{
    const wf_work_item_row *it = ITEM(w, ii);
    const wf_transition *t = wf_runtime__transition_of(w, it->transition_id);
    wf_job_row job;
    wf_code rc =
        wf_runtime__create_job(w, it, t, w->rw.insts[w->inst].variables_json, true, &job, err);
    if (rc == WF_OK)
        rc = wf_runtime__event(w, "JOB_CREATED",
                               json_pack("{s:s,s:s,s:s,s:s,s:b,s:s}", "jobId", job.id, "jobType",
                                         job.job_type, "transitionId", it->transition_id,
                                         "workItemId", it->id, "compensation", 1, "idempotencyKey",
                                         job.idempotency_key),
                               err);
    return rc;
}

/* Creates the next compensation job, or ends the compensation. */
static wf_code
next_step(net_work *w, wf_error *err)
{
    size_t best = WF_WORK_NONE;
    for (size_t i = 0; i < w->items.n; i++)
        if (compensable(w, i) && job_of_item(w, ITEM(w, i)->id, true) == WF_WORK_NONE &&
            (best == WF_WORK_NONE || before(ITEM(w, i), ITEM(w, best))))
            best = i;
    if (best != WF_WORK_NONE)
        return create_step(w, best, err);
    const wf_job_row *failed = NULL;
    for (size_t i = 0; i < w->jobs.n && failed == NULL; i++)
        if (!(w->jobs.flags[i] & NW_GONE) && JOB(w, i)->compensation &&
            JOB(w, i)->state == WF_JOB_FAILED && wf_str_eq(JOB(w, i)->instance_id, inst_id(w)))
            failed = JOB(w, i);
    wf_instance_row *in = &w->rw.insts[w->inst];
    if (failed != NULL) {
        const char *msg = in->last_error != NULL ? in->last_error : "a compensation job failed";
        return wf_runtime__fail_instance(w, "COMPENSATION_FAILED", failed->transition_id,
                                         failed->attempt, msg, err);
    }
    in->status = WF_INSTANCE_COMPENSATED;
    in->ended_at = w->rw.now;
    wf_work_touch_instance(&w->rw, w->inst);
    return wf_runtime__event(w, "INSTANCE_COMPENSATED", json_object(), err);
}

wf_code
wf_runtime__saga_begin(net_work *w, const char *cause, bool *started, wf_error *err)
{
    *started = false;
    size_t n = 0;
    for (size_t i = 0; i < w->items.n; i++)
        n += compensable(w, i);
    if (n == 0)
        return WF_OK;
    *started = true;
    /* The forward work is abandoned. */
    wf_code rc = wf_runtime__abandon(w, NULL, false, err);
    if (rc != WF_OK)
        return rc;
    /* The steps in compensation order, for the event. */
    json_t *ids = json_array();
    bool *taken = wf_arena_calloc(w->rw.arena, w->items.n + 1, sizeof *taken);
    if (ids == NULL || taken == NULL) {
        json_decref(ids);
        return wf_error_nomem(err);
    }
    for (size_t k = 0; k < n; k++) {
        size_t best = WF_WORK_NONE;
        for (size_t i = 0; i < w->items.n; i++)
            if (!taken[i] && compensable(w, i) &&
                (best == WF_WORK_NONE || before(ITEM(w, i), ITEM(w, best))))
                best = i;
        taken[best] = true;
        json_array_append_new(ids, json_string(ITEM(w, best)->transition_id));
    }
    wf_instance_row *in = &w->rw.insts[w->inst];
    in->status = WF_INSTANCE_COMPENSATING;
    in->last_error = NULL;
    wf_work_touch_instance(&w->rw, w->inst);
    rc = wf_runtime__event(
        w, "COMPENSATION_STARTED",
        json_pack("{s:o,s:s}", "transitionIds", ids, "cause", cause != NULL ? cause : ""), err);
    if (rc == WF_OK)
        rc = next_step(w, err);
    return rc;
}

wf_code
wf_runtime__saga_job_done(net_work *w, size_t ji, const char *patch, wf_error *err)
{
    wf_job_row *j = JOB(w, ji);
    wf_code rc = wf_runtime__event(
        w, "JOB_COMPLETED",
        json_pack("{s:s,s:s,s:s,s:i,s:b}", "jobId", j->id, "transitionId",
                  j->transition_id != NULL ? j->transition_id : "", "workItemId", j->work_item_id,
                  "attempt", (int)j->attempt + 1, "compensation", 1),
        err);
    if (rc != WF_OK)
        return rc;
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), j->work_item_id);
    if (ii != WF_WORK_NONE)
        wf_runtime__end_item(w, ii, WF_WORK_ITEM_FINISHED, NULL); /* compensated: history */
    wf_runtime__gone(&w->jobs, ji);
    wf_instance_row *in = &w->rw.insts[w->inst];
    if (patch != NULL && strcmp(patch, "{}") != 0) {
        const char *merged;
        rc = wf_vars_merge(w->rw.arena, in->variables_json, patch, &merged, err);
        if (rc != WF_OK)
            return rc;
        in->variables_json = (char *)merged;
        wf_work_touch_instance(&w->rw, w->inst);
    }
    return next_step(w, err);
}

wf_code
wf_runtime__saga_job_failed(net_work *w, size_t ji, const char *message, wf_error *err)
{
    wf_job_row *j = JOB(w, ji);
    j->state = WF_JOB_FAILED;
    wf_runtime__dirty(&w->jobs, ji);
    char msg[4096 + 256];
    snprintf(msg, sizeof msg,
             "compensation job \"%s\" of transition \"%s\" failed after %d attempt%s: %s", j->id,
             j->transition_id != NULL ? j->transition_id : "", (int)j->attempt,
             j->attempt == 1 ? "" : "s", message != NULL ? message : "");
    wf_instance_row *in = &w->rw.insts[w->inst];
    in->last_error = wf_work_strdup(&w->rw, msg);
    if (in->last_error == NULL)
        return wf_error_nomem(err);
    wf_work_touch_instance(&w->rw, w->inst);
    wf_code rc = wf_runtime__event(w, "COMPENSATION_STEP_FAILED",
                                   json_pack("{s:s,s:s,s:s}", "jobId", j->id, "transitionId",
                                             j->transition_id != NULL ? j->transition_id : "",
                                             "errorMessage", message != NULL ? message : ""),
                                   err);
    if (rc == WF_OK)
        rc = next_step(w, err);
    return rc;
}

/* ---- RetryInstance --------------------------------------------------------------- */

typedef struct retry_op {
    const wf_runtime_ctx *ctx;
    const char *instance_id;
    wf_instance_row *out;
    const char **wake;
    size_t n_wake;
} retry_op;

static wf_code
rearm(net_work *w, size_t ji, wf_error *err)
{
    wf_job_row *j = JOB(w, ji);
    const char *vars;
    wf_code rc = wf_runtime__job_vars(w, j, &vars, err);
    if (rc != WF_OK)
        return rc;
    j->state = WF_JOB_ACTIVATABLE;
    j->attempt = 0;
    j->activatable_at = w->rw.now;
    j->key = NULL;
    j->worker = NULL;
    j->lease_expires_at = 0;
    j->variables_json = (char *)vars;
    wf_runtime__dirty(&w->jobs, ji);
    return WF_OK;
}

/* The TIME or MSG work item of the instance whose firing was refused:
 * still ENABLED, but its timer or subscription is spent. WF_WORK_NONE. */
static size_t
refused_item(const net_work *w)
{
    for (size_t i = 0; i < w->items.n; i++) {
        const wf_work_item_row *it = ITEM(w, i);
        if ((w->items.flags[i] & NW_GONE) || it->state != WF_WORK_ITEM_ENABLED ||
            !wf_str_eq(it->instance_id, inst_id(w)))
            continue;
        /* A CALL item whose child never started (net_runtime_call.c). */
        if (it->trigger == WF_TRIGGER_CALL) {
            if (wf_work_find_instance(&w->rw, it->id) == WF_WORK_NONE)
                return i;
            continue;
        }
        if (it->trigger != WF_TRIGGER_TIME && it->trigger != WF_TRIGGER_MSG)
            continue;
        if (!wf_runtime__armed(w, it))
            return i;
    }
    return WF_WORK_NONE;
}

/* Re-fires the refused TIME/MSG work item ii (see the header comment). */
static wf_code
retry_firing(net_work *w, size_t ii, wf_error *err)
{
    const wf_work_item_row *it = ITEM(w, ii);
    const char *item_id = it->id, *trans = it->transition_id;
    wf_instance_row *in = &w->rw.insts[w->inst];
    in->status = WF_INSTANCE_RUNNING;
    in->last_error = NULL;
    in->ended_at = 0;
    in->retries++;
    wf_work_touch_instance(&w->rw, w->inst);
    wf_trigger trigger = it->trigger;
    wf_code rc = wf_runtime__event(w, "INCIDENT_RESOLVED",
                                   json_pack("{s:s,s:s,s:s}", "transitionId", trans, "workItemId",
                                             item_id, "trigger", wf_net_trigger_name(trigger)),
                                   err);
    if (rc != WF_OK)
        return rc;
    int ti = wf_net_transition_index(w->net, trans);
    if (trigger == WF_TRIGGER_CALL && ti >= 0 && wf_runtime__is_foreach(&w->net->transitions[ti]))
        /* The items whose call made no child make it again. */
        return wf_runtime__foreach_call_retry(w, ii, &w->net->transitions[ti], err);
    if (trigger == WF_TRIGGER_CALL && ti >= 0)
        /* The call is made again, with the variables as they are now. */
        return wf_runtime__call_enabled(w, ITEM(w, ii), &w->net->transitions[ti],
                                        in->variables_json, err);
    if (ti >= 0 && w->net->transitions[ti].fails)
        /* An await step that timed out waits again, a whole timeout. */
        return wf_runtime__rearm_timer(w, ii, err);
    rc = wf_runtime__fire(w, item_id, NULL, err);
    if (wf_runtime__incident_code(rc)) {
        /* Refused again: the caller rolls back, the incident stays open. */
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return wf_error_set(err, rc, "transition \"%s\" still cannot fire: %s", trans, why);
    }
    return rc;
}

static wf_code
retry_body(wf_tx *tx, void *arg, wf_error *err)
{
    retry_op *op = arg;
    net_work w;
    op->n_wake = 0;
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, op->instance_id, NULL, err);
    if (rc != WF_OK)
        return rc;
    wf_instance_row *in = &w.rw.insts[w.inst];
    if (wf_instance_ended(in->status))
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" has ended",
                            op->instance_id);
    *op->out = *in;
    if (in->status != WF_INSTANCE_FAILED)
        return WF_OK; /* no open incident: nothing changes */
    /* A failed compensation first (compensation order), else the failed
     * forward job. */
    size_t comp = WF_WORK_NONE, fwd = WF_WORK_NONE;
    for (size_t i = 0; i < w.jobs.n; i++) {
        const wf_job_row *j = JOB(&w, i);
        if ((w.jobs.flags[i] & NW_GONE) || j->state != WF_JOB_FAILED ||
            !wf_str_eq(j->instance_id, in->id))
            continue;
        if (!j->compensation) {
            if (fwd == WF_WORK_NONE)
                fwd = i;
            continue;
        }
        size_t ii = wf_runtime__find(&w, &w.items, sizeof(wf_work_item_row), j->work_item_id);
        size_t ci = comp != WF_WORK_NONE ? wf_runtime__find(&w, &w.items, sizeof(wf_work_item_row),
                                                            JOB(&w, comp)->work_item_id)
                                         : WF_WORK_NONE;
        if (comp == WF_WORK_NONE ||
            (ii != WF_WORK_NONE && (ci == WF_WORK_NONE || before(ITEM(&w, ii), ITEM(&w, ci)))))
            comp = i;
    }
    size_t ji = comp != WF_WORK_NONE ? comp : fwd;
    if (ji == WF_WORK_NONE) {
        size_t ii = refused_item(&w);
        if (ii == WF_WORK_NONE)
            return WF_OK; /* an incident this call cannot retry: unchanged */
        rc = retry_firing(&w, ii, err);
        if (rc == WF_OK)
            rc = wf_runtime__consume_awaited(&w, err);
        if (rc == WF_OK)
            rc = wf_runtime__write(&w, err);
        if (rc == WF_OK) {
            *op->out = w.rw.insts[w.inst];
            wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
        }
        return rc;
    }
    if (comp != WF_WORK_NONE) {
        /* The other failed compensations are queued again (next_step). */
        for (size_t i = 0; i < w.jobs.n; i++) {
            const wf_job_row *j = JOB(&w, i);
            if (i != comp && !(w.jobs.flags[i] & NW_GONE) && j->compensation &&
                j->state == WF_JOB_FAILED && wf_str_eq(j->instance_id, in->id))
                wf_runtime__gone(&w.jobs, i);
        }
    }
    rc = rearm(&w, ji, err);
    if (rc != WF_OK)
        return rc;
    const wf_job_row *j = JOB(&w, ji);
    in->status = comp != WF_WORK_NONE ? WF_INSTANCE_COMPENSATING : WF_INSTANCE_RUNNING;
    in->last_error = NULL;
    in->ended_at = 0;
    in->retries++;
    wf_work_touch_instance(&w.rw, w.inst);
    rc = wf_runtime__event(&w, "INCIDENT_RESOLVED",
                           json_pack("{s:s,s:s,s:s,s:b}", "jobId", j->id, "transitionId",
                                     j->transition_id != NULL ? j->transition_id : "", "workItemId",
                                     j->work_item_id != NULL ? j->work_item_id : "", "compensation",
                                     j->compensation),
                           err);
    if (rc == WF_OK)
        rc = wf_runtime__add_wake(&w, j->job_type, err);
    if (rc == WF_OK)
        rc = wf_runtime__consume_awaited(&w, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK) {
        *op->out = w.rw.insts[w.inst];
        wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    }
    return rc;
}

wf_code
wf_runtime_retry_instance(const wf_runtime_ctx *ctx, const char *instance_id, wf_uow_idem *idem,
                          wf_instance_row *out, wf_error *err)
{
    wf_code rc = wf_ids_check(&ctx->ref, WF_ID_INSTANCE, "instance_id", instance_id, err);
    if (rc != WF_OK)
        return rc;
    retry_op op = {.ctx = ctx, .instance_id = instance_id, .out = out};
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    rc = wf_uow_run(ctx->ref.store, &sc, idem, retry_body, &op, out, err);
    if (rc == WF_OK && !wf_uow_idem_replayed(idem))
        wf_runtime__wake(ctx, op.wake, op.n_wake);
    return rc;
}

/* ---- CancelInstance{compensate} ------------------------------------------------- */

typedef struct cancel_op {
    const wf_runtime_ctx *ctx;
    const char *instance_id;
    const char *reason;
    wf_instance_row *out;
    bool started;
    bool fallback;
    const char **wake;
    size_t n_wake;
} cancel_op;

static wf_code
cancel_body(wf_tx *tx, void *arg, wf_error *err)
{
    cancel_op *op = arg;
    net_work w;
    op->started = false;
    op->fallback = false;
    op->n_wake = 0;
    wf_code rc = wf_runtime__open(&w, &op->ctx->ref, tx, op->instance_id, NULL, err);
    if (rc != WF_OK)
        return rc;
    wf_instance_row *in = &w.rw.insts[w.inst];
    if (in->status != WF_INSTANCE_RUNNING && in->status != WF_INSTANCE_FAILED &&
        in->status != WF_INSTANCE_SUSPENDED)
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" has already ended",
                            op->instance_id);
    if (w.net == NULL || !has_steps(&w)) {
        /* Nothing to compensate: a plain cancel (the caller). An error, so
         * that nothing is written or recorded under the request id. */
        op->fallback = true;
        return wf_error_set(err, WF_E_UNIMPLEMENTED, "nothing to compensate");
    }
    /* Descendants (referrals under the net instance) are cancelled. */
    for (size_t t = 0; rc == WF_OK && t < w.rw.n_tasks; t++) {
        const wf_task_row *tk = &w.rw.tasks[t];
        size_t ti = wf_work_find_instance(&w.rw, tk->instance_id);
        if (ti != w.inst && (tk->status == WF_TASK_OPEN || tk->status == WF_TASK_CLAIMED) &&
            wf_work_in_subtree(&w.rw, ti, w.inst))
            rc = wf_referral_cancel_task(&w.rw, t, err);
    }
    for (size_t k = w.rw.n_insts; rc == WF_OK && k-- > 0;)
        if (k != w.inst && wf_work_in_subtree(&w.rw, k, w.inst) &&
            (w.rw.insts[k].status == WF_INSTANCE_RUNNING ||
             w.rw.insts[k].status == WF_INSTANCE_FAILED))
            rc = wf_referral_finish_instance(&w.rw, k, WF_INSTANCE_CANCELLED, op->reason, err);
    char cause[1100];
    snprintf(cause, sizeof cause, "cancelled%s%s", op->reason != NULL && op->reason[0] ? ": " : "",
             op->reason != NULL ? op->reason : "");
    if (rc == WF_OK)
        rc = wf_runtime__saga_begin(&w, cause, &op->started, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK) {
        *op->out = w.rw.insts[w.inst];
        wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    }
    return rc;
}

wf_code
wf_runtime_cancel_compensate(const wf_runtime_ctx *ctx, const char *instance_id, const char *reason,
                             wf_uow_idem *idem, wf_instance_row *out, bool *started, wf_error *err)
{
    *started = false;
    if (instance_id == NULL || !wf_uuid_valid(instance_id) ||
        (reason != NULL && strlen(reason) > 1024))
        return WF_OK; /* the plain cancel reports it */
    cancel_op op = {.ctx = ctx, .instance_id = instance_id, .reason = reason, .out = out};
    wf_store_ctx sc = wf_work_store_ctx(&ctx->ref);
    wf_code rc = wf_uow_run(ctx->ref.store, &sc, idem, cancel_body, &op, out, err);
    if (rc != WF_OK && op.fallback) {
        wf_error_clear(err);
        return WF_OK;
    }
    if (rc == WF_OK && !wf_uow_idem_replayed(idem))
        wf_runtime__wake(ctx, op.wake, op.n_wake);
    *started = rc == WF_OK;
    return rc;
}
