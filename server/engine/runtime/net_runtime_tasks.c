/*
 * net_runtime_tasks: CompleteTask and CompleteAndEnd of a task of a USER
 * transition: the task is done, and when the transition's completion
 * rule is met its work item fires (net_runtime.c); CompleteAndEnd ends
 * the whole tree instead.
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"
#include "wf_str.h"

#include <string.h>

/* ---- CompleteTask of a USER transition ----------------------------------------------------- */

typedef struct task_op {
    const wf_ref_ctx *ctx;
    const char *task_id;
    const char *instance_id;
    const char *root_id; /* of the task */
    const char *patch;
    wf_ref_completion *out; /* CompleteTask */
    wf_ref_end *end;        /* CompleteAndEnd */
    const char **wake;
    size_t n_wake;
} task_op;

void
wf_runtime__count_tasks(const wf_work *rw, const char *item_id, wf_ref_counts *c)
{
    memset(c, 0, sizeof *c);
    for (size_t k = 0; k < rw->n_tasks; k++) {
        const wf_task_row *t = &rw->tasks[k];
        if (!wf_str_eq(t->work_item_id, item_id))
            continue;
        c->total++;
        c->open += t->status == WF_TASK_OPEN;
        c->claimed += t->status == WF_TASK_CLAIMED;
        c->done += t->status == WF_TASK_DONE;
        c->cancelled += t->status == WF_TASK_CANCELLED;
    }
    c->all_completed = c->total > 0 && c->open == 0 && c->claimed == 0;
}

/* Opens the tree of op's task and checks that the actor may complete it
 * now: *t is the task, *item its live work item, *tr its transition. */
static wf_code
open_task(net_work *w, wf_tx *tx, const task_op *op, size_t *t, const char **item,
          const wf_transition **tr, wf_error *err)
{
    const wf_ref_ctx *ctx = op->ctx;
    wf_code rc = wf_runtime__open(w, ctx, tx, op->instance_id, op->root_id, err);
    if (rc != WF_OK)
        return rc;
    *t = wf_work_find_task(&w->rw, op->task_id);
    if (*t == WF_WORK_NONE)
        return wf_error_set(err, WF_E_TASK_NOT_FOUND, "task \"%s\" does not exist", op->task_id);
    const wf_task_row *task = &w->rw.tasks[*t];
    bool member =
        task->assignee_kind == WF_ASSIGNEE_GROUP &&
        wf_referral_actor_in_group(ctx->dir, ctx->actor, ctx->actor_groups, task->assignee_id);
    rc = wf_referral_check_task_op(task, WF_TASK_OP_COMPLETE, ctx->actor, member, err);
    if (rc == WF_OK)
        rc = wf_work_check_not_suspended(&w->rw, w->inst, err);
    if (rc != WF_OK)
        return rc;
    if (w->rw.insts[w->inst].status != WF_INSTANCE_RUNNING)
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" is not running",
                            w->rw.insts[w->inst].id);
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), task->work_item_id);
    if (w->net == NULL || ii == WF_WORK_NONE || ITEM(w, ii)->state != WF_WORK_ITEM_ENABLED)
        return wf_error_set(err, WF_E_TASK_NOT_OPEN, "task \"%s\" is no longer enabled", task->id);
    *item = ITEM(w, ii)->id;
    *tr = wf_runtime__transition_of(w, ITEM(w, ii)->transition_id);
    if (*tr == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "transition \"%s\" is not in the net",
                            ITEM(w, ii)->transition_id);
    return WF_OK;
}

static wf_code
task_body(wf_tx *tx, void *arg, wf_error *err)
{
    task_op *op = arg;
    net_work w;
    size_t t;
    const char *item_id = NULL;
    const wf_transition *tr;
    op->n_wake = 0;
    wf_code rc = open_task(&w, tx, op, &t, &item_id, &tr, err);
    bool each = rc == WF_OK && wf_runtime__is_foreach(tr);
    /* The task is done; its output joins the instance's variables (a
     * for-each item's: its element of the outputs). */
    if (rc == WF_OK)
        rc = wf_referral_done_task(&w.rw, t, w.inst, each ? NULL : op->patch, err);
    if (rc == WF_OK && each)
        rc = wf_runtime__foreach_task_done(
            &w, t, wf_runtime__find(&w, &w.items, sizeof(wf_work_item_row), item_id), tr, op->patch,
            err);
    if (rc != WF_OK)
        return rc;

    wf_ref_counts c;
    wf_runtime__count_tasks(&w.rw, item_id, &c);
    if (!each && wf_completion_met(tr->completion.mode, tr->completion.quorum, (size_t)c.done,
                                   (size_t)c.total)) {
        for (size_t k = 0; rc == WF_OK && k < w.rw.n_tasks; k++)
            if (wf_str_eq(w.rw.tasks[k].work_item_id, item_id) &&
                wf_runtime__task_pending(&w.rw.tasks[k]))
                rc = wf_referral_cancel_task(&w.rw, k, err);
        if (rc == WF_OK)
            rc = wf_runtime__fire(&w, item_id, NULL, err);
    }
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc != WF_OK)
        return rc;
    op->out->task = w.rw.tasks[t];
    op->out->next = NULL;
    wf_runtime__count_tasks(&w.rw, item_id, &op->out->counts);
    wf_runtime__keep_wake(&w, &op->wake, &op->n_wake);
    return WF_OK;
}

wf_code
wf_runtime_complete_task(const wf_ref_ctx *ctx, const char *task_id, const char *instance_id,
                         const char *root_id, const char *patch, wf_uow_idem *idem,
                         wf_ref_completion *out, wf_error *err)
{
    task_op op = {ctx, task_id, instance_id, root_id, patch, out, NULL, NULL, 0};
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_uow_run(ctx->store, &sc, idem, task_body, &op, out, err);
}

/* CompleteAndEnd of a net task: the task is done (its transition does not
 * fire), the rest of the tree's work is withdrawn and every instance of
 * the tree completes. */
static wf_code
end_body(wf_tx *tx, void *arg, wf_error *err)
{
    task_op *op = arg;
    net_work w;
    size_t t;
    const char *item_id = NULL;
    const wf_transition *tr;
    op->end->n_cancelled = 0;
    wf_code rc = open_task(&w, tx, op, &t, &item_id, &tr, err);
    if (rc != WF_OK)
        return rc;
    size_t root = wf_work_find_instance(&w.rw, w.rw.insts[w.inst].root_id);
    if (root == WF_WORK_NONE || w.rw.insts[root].status != WF_INSTANCE_RUNNING)
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" is not running",
                            w.rw.insts[w.inst].root_id);
    rc = wf_referral_done_task(&w.rw, t, w.inst, op->patch, err);
    /* Tasks first, so that the response lists every one cancelled; then
     * the work items (WORKITEM_WITHDRAWN), jobs, timers and subscriptions
     * of the whole tree, and the instances. */
    if (rc == WF_OK)
        rc = wf_referral_cancel_pending_except(&w.rw, t, op->end, err);
    if (rc == WF_OK)
        rc = wf_runtime__abandon(&w, item_id, true, err);
    if (rc == WF_OK)
        rc = wf_referral_complete_tree(&w.rw, root, err);
    /* Signals buffered for the ended instance can never be delivered. */
    if (rc == WF_OK)
        rc = wf_runtime__discard_buffered(&w, err);
    if (rc == WF_OK)
        rc = wf_runtime__write(&w, err);
    if (rc == WF_OK) {
        op->end->root = w.rw.insts[root];
        op->end->task = w.rw.tasks[t];
    }
    return rc;
}

wf_code
wf_runtime_complete_and_end(const wf_ref_ctx *ctx, const char *task_id, const char *instance_id,
                            const char *root_id, const char *patch, wf_uow_idem *idem,
                            wf_ref_end *out, wf_error *err)
{
    task_op op = {ctx, task_id, instance_id, root_id, patch, NULL, out, NULL, 0};
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_uow_run(ctx->store, &sc, idem, end_body, &op, out, err);
}
