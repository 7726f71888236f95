/*
 * referral_inbox: the inbox's own task operations, shared by the tasks of
 * referrals and of USER transitions: ReassignTask, DelegateTask (and the
 * delegate's resolve at CompleteTask) and UpdateTask.
 *
 * Each is one unit of work on the task's root, like ClaimTask: the
 * permission rules are referral_rules.c's (one place for every task
 * operation), the change and its event are written together. None of them
 * fires a transition or a join: the task stays pending.
 *
 * Must not: include protobuf or grpc headers.
 */
#include "referral.h"

#include <jansson.h>
#include <string.h>

#include "referral_int.h"
#include "vars.h"
#include "wf_str.h"
#include "wf_time.h"

/* RFC 3339 text of a time in microseconds (event data); NULL for 0. */
static char *
time_text(wf_arena *a, int64_t us)
{
    return us != 0 ? wf_time_rfc3339(a, us) : NULL;
}

static const char *
kind_name(wf_assignee_kind k)
{
    return k == WF_ASSIGNEE_GROUP ? "GROUP" : "USER";
}

/* One inbox operation on a located task. */
typedef struct inbox_op {
    const wf_ref_ctx *ctx;
    wf_ref_task_at at;
    wf_task_op op;
    const wf_task_reassign *reassign;
    const char *delegate;
    const wf_task_update *update;
    const char *patch; /* resolve: the delegate's output variables */
    void *out;
    wf_aggregate agg; /* as locked by open_op: the live work items */
} inbox_op;

static wf_code
run(const wf_ref_ctx *ctx, inbox_op *op, const char *task_id, wf_uow_body_fn body,
    wf_uow_idem *idem, wf_error *err)
{
    wf_code rc = wf_referral_locate_task(ctx, task_id, &op->at, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_uow_run(ctx->store, &sc, idem, body, op, op->out, err);
}

/* Opens the task under op's rules; then the body changes w.tasks[*t]. */
static wf_code
open_op(inbox_op *op, wf_tx *tx, wf_work *w, size_t *t, size_t *i, wf_error *err)
{
    return wf_referral__open_task(op->ctx, tx, &op->at, op->op, w, t, i, &op->agg, err);
}

/* The work item kind of a net's USERS assignee (store.h: a USER item's
 * assignee_kind is the net's, whose USER and GROUP equal the task's). */
#define ITEM_KIND_USERS 3

/* Who holds a task now: the delegate while a delegation is pending, else
 * its assignee. */
static const char *
holder(const wf_task_row *t)
{
    return t->delegation == WF_DELEGATION_PENDING && t->claimed_by != NULL ? t->claimed_by
                                                                           : t->assignee_id;
}

/* The USER work item of task t (a net's task) as it should read after the
 * operation: ListWorkItems names whom its tasks are with now, so a
 * reassignment or a delegation shows the new holder. *out is NULL when
 * the task has no live work item or the item already reads so. */
static wf_code
item_after(const inbox_op *op, const wf_work *w, size_t t, wf_work_item_row **out, wf_error *err)
{
    *out = NULL;
    const wf_task_row *task = &w->tasks[t];
    if (task->work_item_id == NULL)
        return WF_OK;
    const wf_work_item_row *it = NULL;
    for (size_t k = 0; k < op->agg.n_work_items; k++)
        if (wf_str_eq(op->agg.work_items[k].id, task->work_item_id))
            it = &op->agg.work_items[k];
    if (it == NULL || it->trigger != WF_TRIGGER_USER)
        return WF_OK;
    /* The holders of the item's tasks, in creation order, once each. */
    size_t cap = 1, len = 0, n = 0;
    for (size_t k = 0; k < w->n_tasks; k++)
        if (wf_str_eq(w->tasks[k].work_item_id, it->id))
            cap += strlen(holder(&w->tasks[k])) + 1;
    char *list = wf_arena_alloc(w->arena, cap);
    if (list == NULL)
        return wf_error_nomem(err);
    list[0] = '\0';
    const wf_task_row *only = NULL;
    for (size_t k = 0; k < w->n_tasks; k++) {
        const wf_task_row *x = &w->tasks[k];
        if (!wf_str_eq(x->work_item_id, it->id))
            continue;
        const char *h = holder(x);
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen =
                wf_str_eq(w->tasks[j].work_item_id, it->id) && wf_str_eq(holder(&w->tasks[j]), h);
        if (seen)
            continue;
        len += (size_t)snprintf(list + len, cap - len, "%s%s", n > 0 ? "," : "", h);
        only = x;
        n++;
    }
    int32_t kind = it->assignee_kind;
    if (kind != ITEM_KIND_USERS && n == 1)
        kind = only->delegation == WF_DELEGATION_PENDING ? (int32_t)WF_ASSIGNEE_USER
                                                         : (int32_t)only->assignee_kind;
    if (kind == it->assignee_kind && wf_str_eq(list, it->assignee_id))
        return WF_OK;
    wf_work_item_row *row = wf_arena_alloc(w->arena, sizeof *row);
    if (row == NULL)
        return wf_error_nomem(err);
    *row = *it;
    row->assignee_kind = kind;
    row->assignee_id = list;
    *out = row;
    return WF_OK;
}

static wf_code
finish(inbox_op *op, wf_tx *tx, wf_work *w, size_t t, size_t i, const char *type, json_t *data,
       wf_error *err)
{
    wf_work_touch_task(w, t);
    wf_work_touch_instance(w, i);
    wf_work_item_row *item = NULL;
    wf_code rc = wf_work_event(w, i, type, data, err);
    if (rc == WF_OK)
        rc = item_after(op, w, t, &item, err);
    if (rc == WF_OK)
        rc = wf_referral__write_work(tx, w, item, err);
    if (rc == WF_OK && op->op != WF_TASK_OP_RESOLVE)
        *(wf_task_row *)op->out = w->tasks[t];
    return rc;
}

/* ---- ReassignTask ------------------------------------------------------------------ */

static wf_code
reassign_body(wf_tx *tx, void *arg, wf_error *err)
{
    inbox_op *op = arg;
    wf_work w;
    size_t t, i;
    wf_code rc = open_op(op, tx, &w, &t, &i, err);
    if (rc != WF_OK)
        return rc;
    const wf_task_reassign *r = op->reassign;
    wf_task_row *task = &w.tasks[t];
    const char *from_kind = kind_name(task->assignee_kind);
    const char *from_id = task->assignee_id;
    bool group = r->group != NULL && r->group[0] != '\0';
    task->assignee_kind = group ? WF_ASSIGNEE_GROUP : WF_ASSIGNEE_USER;
    task->assignee_id = wf_work_strdup(&w, group ? r->group : r->user);
    /* A fresh assignment: OPEN for the new assignee, no claim, no
     * delegation. */
    task->status = WF_TASK_OPEN;
    task->claimed_by = NULL;
    task->owner = NULL;
    task->delegation = WF_DELEGATION_NONE;
    if (task->assignee_id == NULL)
        return wf_error_nomem(err);
    return finish(op, tx, &w, t, i, "TASK_REASSIGNED",
                  json_pack("{s:s,s:s,s:s*,s:s,s:s,s:s}", "taskId", task->id, "fromKind", from_kind,
                            "fromId", from_id, "assigneeKind", kind_name(task->assignee_kind),
                            "assigneeId", task->assignee_id, "reason",
                            r->reason != NULL ? r->reason : ""),
                  err);
}

wf_code
wf_referral_reassign(const wf_ref_ctx *ctx, const char *task_id, const wf_task_reassign *r,
                     wf_uow_idem *idem, wf_task_row *out, wf_error *err)
{
    bool user = r->user != NULL && r->user[0] != '\0';
    bool group = r->group != NULL && r->group[0] != '\0';
    if (user == group)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "exactly one of user and group must be set");
    const char *id = user ? r->user : r->group;
    if (!wf_referral_assignee_id_ok(id))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "%s must be 1 to 128 printable ASCII bytes",
                            user ? "user" : "group");
    if (r->reason != NULL && strlen(r->reason) > 1024)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "reason must be at most 1024 bytes");
    if (user && !wf_directory_has_user(ctx->dir, id))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "user \"%s\" is not in the directory", id);
    if (group && !wf_directory_has_group(ctx->dir, id))
        return wf_error_set(err, WF_E_EMPTY_GROUP, "group \"%s\" has no members", id);
    inbox_op op = {.ctx = ctx, .op = WF_TASK_OP_REASSIGN, .reassign = r, .out = out};
    return run(ctx, &op, task_id, reassign_body, idem, err);
}

/* ---- DelegateTask ------------------------------------------------------------------ */

static wf_code
delegate_body(wf_tx *tx, void *arg, wf_error *err)
{
    inbox_op *op = arg;
    wf_work w;
    size_t t, i;
    wf_code rc = open_op(op, tx, &w, &t, &i, err);
    if (rc != WF_OK)
        return rc;
    wf_task_row *task = &w.tasks[t];
    /* Delegated again, a task keeps its first owner (Camunda). */
    const char *owner = task->owner != NULL ? task->owner : op->ctx->actor;
    if (wf_str_eq(owner, op->delegate))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "user \"%s\" owns task \"%s\": it returns to them when resolved",
                            op->delegate, task->id);
    task->owner = wf_work_strdup(&w, owner);
    task->claimed_by = wf_work_strdup(&w, op->delegate);
    task->status = WF_TASK_CLAIMED;
    task->delegation = WF_DELEGATION_PENDING;
    if (task->owner == NULL || task->claimed_by == NULL)
        return wf_error_nomem(err);
    return finish(op, tx, &w, t, i, "TASK_DELEGATED",
                  json_pack("{s:s,s:s,s:s}", "taskId", task->id, "owner", task->owner, "delegate",
                            task->claimed_by),
                  err);
}

wf_code
wf_referral_delegate(const wf_ref_ctx *ctx, const char *task_id, const char *user,
                     wf_uow_idem *idem, wf_task_row *out, wf_error *err)
{
    if (user == NULL || user[0] == '\0' || !wf_referral_assignee_id_ok(user))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "user must be 1 to 128 printable ASCII bytes");
    if (wf_str_eq(user, ctx->actor))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "a task cannot be delegated to its holder");
    if (!wf_directory_has_user(ctx->dir, user))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "user \"%s\" is not in the directory",
                            user);
    inbox_op op = {.ctx = ctx, .op = WF_TASK_OP_DELEGATE, .delegate = user, .out = out};
    return run(ctx, &op, task_id, delegate_body, idem, err);
}

/* ---- resolve (CompleteTask by the delegate) -------------------------------------------- */

static wf_code
resolve_body(wf_tx *tx, void *arg, wf_error *err)
{
    inbox_op *op = arg;
    wf_ref_completion *out = op->out;
    wf_work w;
    size_t t, i;
    out->next = NULL;
    wf_code rc = open_op(op, tx, &w, &t, &i, err);
    if (rc != WF_OK)
        return rc;
    /* The delegate's output is merged into the task's instance now, as
     * Camunda's resolveTask sets its variables; nothing fires. */
    wf_instance_row *in = &w.insts[i];
    const char *merged;
    rc = wf_vars_merge(w.arena, in->variables_json, op->patch, &merged, err);
    if (rc != WF_OK)
        return rc;
    in->variables_json = (char *)merged;
    wf_task_row *task = &w.tasks[t];
    const char *delegate = task->claimed_by;
    task->claimed_by = task->owner;
    task->delegation = WF_DELEGATION_RESOLVED;
    rc = finish(op, tx, &w, t, i, "TASK_RESOLVED",
                json_pack("{s:s,s:s,s:s}", "taskId", task->id, "owner", task->owner, "resolvedBy",
                          delegate),
                err);
    if (rc != WF_OK)
        return rc;
    out->task = w.tasks[t];
    wf_referral_count(w.tasks, w.n_tasks, out->task.instance_id, &out->counts);
    return WF_OK;
}

wf_code
wf_referral_resolve_at(const wf_ref_ctx *ctx, const wf_ref_task_at *at, const char *patch,
                       wf_uow_idem *idem, wf_ref_completion *out, wf_error *err)
{
    inbox_op op = {.ctx = ctx, .at = *at, .op = WF_TASK_OP_RESOLVE, .patch = patch, .out = out};
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_uow_run(ctx->store, &sc, idem, resolve_body, &op, out, err);
}

/* ---- UpdateTask -------------------------------------------------------------------- */

static wf_code
update_body(wf_tx *tx, void *arg, wf_error *err)
{
    inbox_op *op = arg;
    wf_work w;
    size_t t, i;
    wf_code rc = open_op(op, tx, &w, &t, &i, err);
    if (rc != WF_OK)
        return rc;
    const wf_task_update *u = op->update;
    wf_task_row *task = &w.tasks[t];
    if (u->set_priority)
        task->priority = u->priority;
    if (u->set_due) {
        task->due_at = u->due_at;
        /* Cleared, a net task's due time is the competing timer's again
         * (from the next step of its net). */
        task->due_fixed = u->due_at != 0;
    }
    if (u->set_follow_up)
        task->follow_up_at = u->follow_up_at;
    if (task->follow_up_at != 0 && task->due_at != 0 && task->follow_up_at > task->due_at)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "follow_up_at of task \"%s\" must not be after its due_at", task->id);
    return finish(op, tx, &w, t, i, "TASK_UPDATED",
                  json_pack("{s:s,s:i,s:s*,s:s*}", "taskId", task->id, "priority",
                            (int)task->priority, "dueAt", time_text(w.arena, task->due_at),
                            "followUpAt", time_text(w.arena, task->follow_up_at)),
                  err);
}

wf_code
wf_referral_update_task(const wf_ref_ctx *ctx, const char *task_id, const wf_task_update *u,
                        wf_uow_idem *idem, wf_task_row *out, wf_error *err)
{
    if (!u->set_priority && !u->set_due && !u->set_follow_up)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "nothing to update: set priority, due_at or follow_up_at");
    if (u->set_priority && (u->priority < 0 || u->priority > WF_TASK_PRIORITY_MAX))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "priority must be 0 to 100");
    inbox_op op = {.ctx = ctx, .op = WF_TASK_OP_UPDATE, .update = u, .out = out};
    return run(ctx, &op, task_id, update_body, idem, err);
}
