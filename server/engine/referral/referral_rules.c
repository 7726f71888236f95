/*
 * referral_rules: the pure decisions of TaskFlow's referral model, with no
 * store and no I/O, so that unit tests can pin each one down:
 *   - who may claim, release or complete a task (one function for every
 *     RPC, so the rules are written once);
 *   - group membership (directory and trusted x-actor-groups);
 *   - task counts and join conditions.
 */
#include "referral.h"
#include "wf_str.h"

#include <string.h>

static bool
in_comma_list(const char *list, const char *item)
{
    size_t n = strlen(item);
    const char *p = list;
    while (p != NULL && *p != '\0') {
        while (*p == ' ')
            p++;
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        while (len > 0 && p[len - 1] == ' ')
            len--;
        if (len == n && strncmp(p, item, n) == 0)
            return true;
        p = end != NULL ? end + 1 : NULL;
    }
    return false;
}

bool
wf_referral_actor_in_group(const wf_directory *dir, const char *actor, const char *actor_groups,
                           const char *group)
{
    if (actor_groups != NULL && in_comma_list(actor_groups, group))
        return true;
    if (!wf_directory_is_open(dir))
        return wf_directory_is_member(dir, actor, group);
    /* Open directory: it knows no memberships. With trusted groups the
     * header is the whole truth; without any group information every
     * actor is accepted, as TaskFlow's OpenDirectory does. */
    return actor_groups == NULL;
}

static wf_code
not_open(const wf_task_row *t, wf_error *err)
{
    return wf_error_set(err, WF_E_TASK_NOT_OPEN, "task \"%s\" is %s", t->id,
                        t->status == WF_TASK_DONE ? "already done" : "cancelled");
}

static wf_code
check_claim(const wf_task_row *t, const char *actor, bool is_member, wf_error *err)
{
    if (t->status == WF_TASK_CLAIMED)
        return wf_str_eq(t->claimed_by, actor)
                   ? WF_OK
                   : wf_error_set(err, WF_E_TASK_ALREADY_CLAIMED,
                                  "task \"%s\" is already claimed by another user", t->id);
    if (t->assignee_kind == WF_ASSIGNEE_USER)
        return wf_str_eq(t->assignee_id, actor)
                   ? WF_OK
                   : wf_error_set(err, WF_E_NOT_ASSIGNEE, "task \"%s\" is assigned to another user",
                                  t->id);
    return is_member ? WF_OK
                     : wf_error_set(err, WF_E_NOT_GROUP_MEMBER,
                                    "user \"%s\" is not a member of group \"%s\"",
                                    actor != NULL ? actor : "", t->assignee_id);
}

static wf_code
check_release(const wf_task_row *t, const char *actor, wf_error *err)
{
    if (t->status == WF_TASK_OPEN)
        return wf_error_set(err, WF_E_TASK_NOT_CLAIMED, "task \"%s\" is not claimed", t->id);
    return wf_str_eq(t->claimed_by, actor)
               ? WF_OK
               : wf_error_set(err, WF_E_NOT_ASSIGNEE, "task \"%s\" is claimed by another user",
                              t->id);
}

/* Who holds a task: its claimer once CLAIMED (the delegate of a pending
 * delegation, the owner of a resolved one), else the assignee of a
 * personal task; NULL for an OPEN group task. */
static const char *
holder(const wf_task_row *t)
{
    if (t->status == WF_TASK_CLAIMED)
        return t->claimed_by;
    return t->assignee_kind == WF_ASSIGNEE_USER ? t->assignee_id : NULL;
}

static wf_code
delegated_back(const wf_task_row *t, wf_error *err)
{
    return wf_error_set(err, WF_E_NOT_ASSIGNEE, "task \"%s\" is back with its owner \"%s\"", t->id,
                        t->owner != NULL ? t->owner : "");
}

static wf_code
delegated(const wf_task_row *t, wf_error *err)
{
    return wf_error_set(err, WF_E_NOT_ASSIGNEE, "task \"%s\" is delegated to \"%s\" until resolved",
                        t->id, t->claimed_by != NULL ? t->claimed_by : "");
}

/* ReassignTask and UpdateTask: the holder, the owner of a delegated task,
 * the actor who assigned it, or a member of the group of an OPEN group
 * task. */
static wf_code
check_manage(const wf_task_row *t, const char *actor, bool is_member, wf_error *err)
{
    if (wf_str_eq(holder(t), actor) || wf_str_eq(t->owner, actor) ||
        wf_str_eq(t->assigned_by, actor))
        return WF_OK;
    if (t->assignee_kind == WF_ASSIGNEE_GROUP && t->status == WF_TASK_OPEN)
        return is_member ? WF_OK
                         : wf_error_set(err, WF_E_NOT_GROUP_MEMBER,
                                        "user \"%s\" is not a member of group \"%s\"", actor,
                                        t->assignee_id);
    return wf_error_set(err, WF_E_NOT_ASSIGNEE, "task \"%s\" is held by another user", t->id);
}

/* DelegateTask: only the holder; a group task must be claimed first. */
static wf_code
check_delegate(const wf_task_row *t, const char *actor, wf_error *err)
{
    if (t->assignee_kind == WF_ASSIGNEE_GROUP && t->status == WF_TASK_OPEN)
        return wf_error_set(err, WF_E_TASK_NOT_CLAIMED,
                            "group task \"%s\" must be claimed before it is delegated", t->id);
    return wf_str_eq(holder(t), actor)
               ? WF_OK
               : wf_error_set(err, WF_E_NOT_ASSIGNEE, "task \"%s\" is held by another user", t->id);
}

static wf_code
check_complete(const wf_task_row *t, const char *actor, wf_error *err)
{
    /* A pending delegation is the delegate's to resolve, by CompleteTask
     * (WF_TASK_OP_RESOLVE), and nobody completes it meanwhile. */
    if (t->delegation == WF_DELEGATION_PENDING)
        return delegated(t, err);
    /* A resolved delegation is back with its owner, who holds the claim. */
    if (t->delegation == WF_DELEGATION_RESOLVED && t->status == WF_TASK_CLAIMED)
        return wf_str_eq(t->claimed_by, actor) ? WF_OK : delegated_back(t, err);
    if (t->assignee_kind == WF_ASSIGNEE_USER)
        return wf_str_eq(t->assignee_id, actor)
                   ? WF_OK
                   : wf_error_set(err, WF_E_NOT_ASSIGNEE, "task \"%s\" is assigned to another user",
                                  t->id);
    /* A group task: claimed first, then only by its claimer. */
    if (t->status == WF_TASK_OPEN)
        return wf_error_set(err, WF_E_TASK_NOT_CLAIMED,
                            "group task \"%s\" must be claimed before it is completed", t->id);
    return wf_str_eq(t->claimed_by, actor)
               ? WF_OK
               : wf_error_set(err, WF_E_NOT_ASSIGNEE, "task \"%s\" is claimed by another user",
                              t->id);
}

wf_code
wf_referral_check_task_op(const wf_task_row *task, wf_task_op op, const char *actor, bool is_member,
                          wf_error *err)
{
    if (actor == NULL || actor[0] == '\0')
        return wf_error_set(err, WF_E_ACTOR_MISSING,
                            "x-actor-id is required: this call acts for a person");
    /* The task's state is checked before the actor, so a finished task
     * always answers TASK_NOT_OPEN, whoever asks. */
    if (task->status == WF_TASK_DONE || task->status == WF_TASK_CANCELLED)
        return not_open(task, err);
    switch (op) {
    case WF_TASK_OP_CLAIM:
        return check_claim(task, actor, is_member, err);
    case WF_TASK_OP_RELEASE:
        /* A delegated task returns to its owner only by being resolved. */
        if (task->delegation == WF_DELEGATION_PENDING)
            return delegated(task, err);
        return check_release(task, actor, err);
    case WF_TASK_OP_COMPLETE:
        return check_complete(task, actor, err);
    case WF_TASK_OP_REASSIGN:
    case WF_TASK_OP_UPDATE:
        return check_manage(task, actor, is_member, err);
    case WF_TASK_OP_DELEGATE:
        return check_delegate(task, actor, err);
    case WF_TASK_OP_RESOLVE:
        if (task->delegation != WF_DELEGATION_PENDING)
            return wf_error_set(err, WF_E_CONFLICT, "task \"%s\" is no longer delegated; retry",
                                task->id);
        return wf_str_eq(task->claimed_by, actor) ? WF_OK : delegated(task, err);
    }
    return wf_error_set(err, WF_E_INTERNAL, "unknown task operation");
}

void
wf_referral_count(const wf_task_row *tasks, size_t n, const char *instance_id, wf_ref_counts *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        if (!wf_str_eq(tasks[i].instance_id, instance_id))
            continue;
        out->total++;
        switch (tasks[i].status) {
        case WF_TASK_OPEN:
            out->open++;
            break;
        case WF_TASK_CLAIMED:
            out->claimed++;
            break;
        case WF_TASK_DONE:
            out->done++;
            break;
        case WF_TASK_CANCELLED:
            out->cancelled++;
            break;
        }
    }
    out->all_completed = out->total > 0 && out->open == 0 && out->claimed == 0;
}

int32_t
wf_referral_join_required(wf_join_mode mode, int32_t quorum, const wf_ref_counts *c)
{
    switch (mode) {
    case WF_JOIN_ANY:
        return 1;
    case WF_JOIN_QUORUM:
        return quorum;
    case WF_JOIN_NONE:
    case WF_JOIN_ALL:
        break;
    }
    return c->total;
}

bool
wf_referral_join_met(wf_join_mode mode, int32_t quorum, const wf_ref_counts *c)
{
    switch (mode) {
    case WF_JOIN_ANY:
        return c->done >= 1;
    case WF_JOIN_QUORUM:
        return quorum > 0 && c->done >= quorum;
    case WF_JOIN_NONE:
    case WF_JOIN_ALL:
        break;
    }
    /* ALL: the seed's allCompleted. Tasks cancelled by CancelInstance do
     * not hold the join back, but at least one task must exist. */
    return c->all_completed;
}
