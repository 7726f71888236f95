/*
 * net_runtime: the case runtime of NET definitions (docs/architecture.md)
 * over the store: firing a work item and the mapping of the pure
 * engine's diffs (net.h) to rows and events. The units of work that fire
 * live beside it: StartInstance (net_runtime_start.c), CompleteTask of a
 * USER transition's task (net_runtime_tasks.c), jobs, timers, signals and
 * sagas; the working set is in net_runtime_work.c.
 *
 * Every mutation is one unit of work on one root (uow.h): lock the root,
 * load the working set (net_runtime_int.h), let net_fire.c compute the
 * step, turn its diff into rows, write once. Because the engine is pure
 * and the transaction rolls back on any error, a refused firing
 * (NO_ARC_MATCHED) changes nothing.
 *
 * What a diff becomes:
 *   fired item      TRANSITION_FIRED; the work item row is deleted (kept as
 *                   FIRED when its transition has a compensation_job_type:
 *                   the saga needs the completion order); its job, timer
 *                   and subscription rows are deleted
 *   withdrawn item  WORKITEM_WITHDRAWN; row deleted; its pending tasks
 *                   CANCELLED (TASK_CANCELLED); its job, timer and
 *                   subscription deleted, so a stale worker gets
 *                   JOB_LEASE_LOST and the timer can never fire
 *   tokens          inserted / deleted
 *   created item    row ENABLED, TRANSITION_ENABLED, and per trigger:
 *                   USER  tasks (TASK_CREATED): USER/GROUP one task per
 *                         id (normally one), USERS one USER task per id,
 *                         ids_expression evaluated over the variables;
 *                         priority, due and follow-up times from the
 *                         transition's expressions (a due time chosen so
 *                         is kept over that of a competing timer)
 *                   AUTO  a job ACTIVATABLE now, attempt 0, its retry
 *                         policy, idempotency key "<instance>:<work item>",
 *                         the variables as they are (JOB_CREATED); until it
 *                         is activated every write refreshes its variables
 *                   TIME  a timer at now + delay or at due_expression
 *                         (TIMER_SCHEDULED)
 *                   MSG   a subscription (signal name; the aggregate for
 *                         AGGREGATE correlation)
 *   ended           INSTANCE_COMPLETED
 *   deadlocked      INSTANCE_FAILED (an incident; last_error says why)
 * Pending USER tasks get due_at from a TIME transition competing for one
 * of their tokens.
 *
 * Must not: include protobuf or grpc headers.
 */
#include "net_runtime_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "defcache.h"
#include "vars.h"
#include "expr.h"
#include "ids.h"
#include "wf_id.h"
#include "wf_time.h"
#include "wf_str.h"

/* ---- diff -> rows ------------------------------------------------------------------------ */

/* True when the comma lists a and b share an element. */
static bool
shares_token(const char *a, const char *b)
{
    if (wf_str_empty(a) || wf_str_empty(b))
        return false;
    for (const char *p = a; *p != '\0';) {
        size_t l = strcspn(p, ",");
        for (const char *q = b; *q != '\0';) {
            size_t m = strcspn(q, ",");
            if (l == m && strncmp(p, q, l) == 0)
                return true;
            q += m + (q[m] == ',');
        }
        p += l + (p[l] == ',');
    }
    return false;
}

static size_t
find_token_any(const net_work *w, const char *id)
{
    for (size_t i = 0; id != NULL && i < w->toks.n; i++)
        if (wf_str_eq(TOK(w, i)->id, id))
            return i;
    return WF_WORK_NONE;
}

/* Place ids an item consumes: its bound tokens' places, or (an item
 * created and fired within the step) the transition's input places. */
static json_t *
consumed_places(const net_work *w, const wf_work_item_row *row, const wf_transition *t)
{
    json_t *v = json_array();
    if (v == NULL)
        return NULL;
    if (row != NULL) {
        for (const char *p = row->token_ids; p != NULL && *p != '\0';) {
            size_t l = strcspn(p, ",");
            char id[WF_UUID_LEN + 8];
            snprintf(id, sizeof id, "%.*s", (int)(l < sizeof id - 1 ? l : sizeof id - 1), p);
            size_t k = find_token_any(w, id);
            if (k != WF_WORK_NONE)
                json_array_append_new(v, json_string(TOK(w, k)->place_id));
            p += l + (p[l] == ',');
        }
        return v;
    }
    for (size_t i = 0; i < w->net->n_arcs; i++) {
        const wf_arc *a = &w->net->arcs[i];
        if (wf_str_eq(a->target, t->id) && wf_net_place_index(w->net, a->source) >= 0)
            for (int32_t k = 0; k < wf_net_arc_weight(a); k++)
                json_array_append_new(v, json_string(a->source));
    }
    return v;
}

/* Place ids a firing produced into (as the engine routed it). */
static json_t *
produced_places(const wf_net_firing *f)
{
    json_t *v = json_array();
    for (size_t i = 0; v != NULL && i < f->n_produced; i++)
        json_array_append_new(v, json_string(f->produced[i]));
    return v;
}

/* Deletes the jobs, timers and subscriptions of work item id. */
static void
drop_side_rows(net_work *w, const char *item_id)
{
    for (size_t i = 0; i < w->jobs.n; i++)
        if (wf_str_eq(JOB(w, i)->work_item_id, item_id))
            wf_runtime__gone(&w->jobs, i);
    for (size_t i = 0; i < w->timers.n; i++)
        if (wf_str_eq(TIMER(w, i)->work_item_id, item_id))
            wf_runtime__gone(&w->timers, i);
    for (size_t i = 0; i < w->subs.n; i++)
        if (wf_str_eq(SUB(w, i)->work_item_id, item_id))
            wf_runtime__gone(&w->subs, i);
}

/* Who finished item it as it fires: the worker of its job (AUTO), the
 * actor who completed its last task (USER); NULL for TIME and MSG. */
static const char *
finisher(const net_work *w, const wf_work_item_row *it)
{
    if (it->trigger == WF_TRIGGER_AUTO) {
        for (size_t i = 0; i < w->jobs.n; i++)
            if (wf_str_eq(JOB(w, i)->work_item_id, it->id) && !JOB(w, i)->compensation)
                return JOB(w, i)->worker;
        return NULL;
    }
    if (it->trigger != WF_TRIGGER_USER)
        return NULL;
    const wf_task_row *last = NULL;
    for (size_t k = 0; k < w->rw.n_tasks; k++) {
        const wf_task_row *t = &w->rw.tasks[k];
        if (wf_str_eq(t->work_item_id, it->id) && t->status == WF_TASK_DONE &&
            (last == NULL || t->ended_at >= last->ended_at))
            last = t;
    }
    return last != NULL && last->completed_by != NULL ? last->completed_by : w->rw.ctx->actor;
}

static wf_code
apply_fired(net_work *w, const wf_net_firing *f, wf_error *err)
{
    const wf_transition *t = wf_runtime__transition_of(w, f->transition_id);
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), f->work_item_id);
    if (t == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "transition \"%s\" is not in the net",
                            f->transition_id);
    json_t *data =
        json_pack("{s:s,s:s,s:s,s:o*,s:o*}", "transitionId", t->id, "workItemId", f->work_item_id,
                  "trigger", wf_net_trigger_name(t->trigger), "consumed",
                  consumed_places(w, ii != WF_WORK_NONE ? ITEM(w, ii) : NULL, t), "produced",
                  produced_places(f));
    wf_code rc = wf_runtime__event(w, "TRANSITION_FIRED", data, err);
    if (rc != WF_OK || ii == WF_WORK_NONE)
        return rc;
    const char *by = finisher(w, ITEM(w, ii));
    drop_side_rows(w, f->work_item_id);
    wf_work_item_row *it = ITEM(w, ii);
    if (!wf_str_empty(t->compensation_job_type)) {
        /* Kept live for the saga: compensation runs in reverse completion
         * order. */
        it->state = WF_WORK_ITEM_FIRED;
        it->finished_at = w->rw.now;
        it->finished_by = (char *)by;
        wf_runtime__dirty(&w->items, ii);
    } else {
        wf_runtime__end_item(w, ii, WF_WORK_ITEM_FINISHED, by);
    }
    return WF_OK;
}

static wf_code
apply_withdrawn(net_work *w, const char *item_id, wf_error *err)
{
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), item_id);
    if (ii == WF_WORK_NONE)
        return WF_OK;
    const wf_work_item_row *it = ITEM(w, ii);
    wf_code rc = wf_runtime__event(
        w, "WORKITEM_WITHDRAWN",
        json_pack("{s:s,s:s}", "transitionId", it->transition_id, "workItemId", it->id), err);
    for (size_t k = 0; rc == WF_OK && k < w->rw.n_tasks; k++)
        if (wf_str_eq(w->rw.tasks[k].work_item_id, item_id) &&
            wf_runtime__task_pending(&w->rw.tasks[k]))
            rc = wf_referral_cancel_task(&w->rw, k, err);
    if (rc == WF_OK && it->trigger == WF_TRIGGER_CALL)
        rc = wf_runtime__call_withdrawn(w, item_id, err);
    drop_side_rows(w, item_id);
    wf_runtime__end_item(w, ii, WF_WORK_ITEM_WITHDRAWN, NULL);
    return rc;
}

wf_code
wf_runtime__abandon(net_work *w, const char *keep, bool whole_tree, wf_error *err)
{
    const char *id = w->rw.insts[w->inst].id;
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < w->items.n; i++) {
        const wf_work_item_row *it = ITEM(w, i);
        if ((w->items.flags[i] & NW_GONE) || !wf_str_eq(it->instance_id, id) ||
            it->state != WF_WORK_ITEM_ENABLED)
            continue;
        if (wf_str_eq(it->id, keep))
            wf_runtime__end_item(w, i, WF_WORK_ITEM_FINISHED, w->rw.ctx->actor);
        else
            rc = apply_withdrawn(w, it->id, err);
    }
    for (size_t i = 0; i < w->jobs.n; i++)
        if (whole_tree || wf_str_eq(JOB(w, i)->instance_id, id))
            wf_runtime__gone(&w->jobs, i);
    for (size_t i = 0; i < w->timers.n; i++)
        if (whole_tree || wf_str_eq(TIMER(w, i)->instance_id, id))
            wf_runtime__gone(&w->timers, i);
    for (size_t i = 0; i < w->subs.n; i++)
        if (whole_tree || wf_str_eq(SUB(w, i)->instance_id, id))
            wf_runtime__gone(&w->subs, i);
    for (size_t i = 0; i < w->toks.n; i++)
        wf_runtime__gone(&w->toks, i);
    return rc;
}

/* Sets err to "<what> of transition \"<id>\": <err's own message>" with
 * code rc (the message is copied first: err is both source and target). */
static wf_code
expr_failed(wf_error *err, wf_code rc, const char *what, const char *transition_id)
{
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err != NULL ? err->msg : "");
    return wf_error_set(err, rc, "%s of transition \"%s\": %s", what, transition_id, why);
}

/* What the expressions of a USER transition chose for its tasks. */
typedef struct task_choice {
    int32_t priority;
    int64_t due_at;       /* 0 = none: a competing timer's, if any */
    int64_t follow_up_at; /* 0 = none */
} task_choice;

/* The range of a google.protobuf.Timestamp, in µs: a time the API can
 * answer with (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z). */
#define TASK_TIME_MIN_US (-62135596800LL * 1000000)
#define TASK_TIME_MAX_US (253402300800LL * 1000000 - 1)

/* Evaluates one time expression of transition t (field names it). */
static wf_code
eval_task_time(const wf_transition *t, const char *field, const char *src, const char *vars,
               int64_t *out, wf_error *err)
{
    wf_expr *e;
    wf_code rc = wf_expr_cached(src, &e, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_expr_eval_time(e, vars, out, err);
    wf_expr_free(e);
    if (rc != WF_OK)
        return expr_failed(err, rc, field, t->id);
    if (*out < TASK_TIME_MIN_US || *out > TASK_TIME_MAX_US)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "%s of transition \"%s\" gave a time outside 0001-01-01T00:00:00Z "
                            "to 9999-12-31T23:59:59Z",
                            field, t->id);
    return WF_OK;
}

/* The priority, due and follow-up times of the tasks of a USER
 * transition, from its expressions over vars. Errors are those of any
 * expression at enablement (WF_E_INVALID_ARGUMENT: refused, or an
 * incident where the step is not the caller's own). */
static wf_code
choose_task_fields(const wf_transition *t, const char *vars, task_choice *out, wf_error *err)
{
    *out = (task_choice){.priority = WF_TASK_PRIORITY_DEFAULT};
    wf_code rc;
    if (!wf_str_empty(t->priority_expression)) {
        wf_expr *e;
        int64_t v;
        rc = wf_expr_cached(t->priority_expression, &e, err);
        if (rc != WF_OK)
            return rc;
        rc = wf_expr_eval_int(e, vars, &v, err);
        wf_expr_free(e);
        if (rc != WF_OK)
            return expr_failed(err, rc, "priority_expression", t->id);
        if (v < 0 || v > WF_TASK_PRIORITY_MAX)
            return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                "priority_expression of transition \"%s\" gave %lld, which is "
                                "not 0 to 100",
                                t->id, (long long)v);
        out->priority = (int32_t)v;
    }
    if (!wf_str_empty(t->task_due_expression)) {
        rc = eval_task_time(t, "task_due_expression", t->task_due_expression, vars, &out->due_at,
                            err);
        if (rc != WF_OK)
            return rc;
    }
    if (!wf_str_empty(t->task_follow_up_expression)) {
        rc = eval_task_time(t, "task_follow_up_expression", t->task_follow_up_expression, vars,
                            &out->follow_up_at, err);
        if (rc != WF_OK)
            return rc;
        if (out->due_at != 0 && out->follow_up_at > out->due_at)
            return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                "task_follow_up_expression of transition \"%s\" gave a time "
                                "after that of its task_due_expression",
                                t->id);
    }
    return WF_OK;
}

static wf_code
add_task(net_work *w, const wf_work_item_row *it, const wf_transition *t, wf_assignee_kind kind,
         const char *assignee, const task_choice *ch, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    wf_task_row row = {
        .id = wf_id_new(w->rw.arena),
        .tenant = (char *)w->rw.ctx->tenant,
        .instance_id = in->id,
        .root_id = in->root_id,
        .definition_key = in->definition_key,
        .transition_id = it->transition_id,
        .work_item_id = it->id,
        .title = (char *)(wf_str_empty(t->name) ? t->id : t->name),
        .assignee_kind = kind,
        .assignee_id = wf_work_strdup(&w->rw, assignee),
        .status = WF_TASK_OPEN,
        .created_at = w->rw.now,
        .priority = ch->priority,
        .due_at = ch->due_at,
        .due_fixed = ch->due_at != 0,
        .follow_up_at = ch->follow_up_at,
    };
    size_t k;
    if (row.id == NULL || row.assignee_id == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_work_add_task(&w->rw, &row, &k, err);
    if (rc != WF_OK)
        return rc;
    return wf_runtime__event(w, "TASK_CREATED",
                             json_pack("{s:s,s:s,s:s,s:s,s:s}", "taskId", row.id, "assigneeKind",
                                       kind == WF_ASSIGNEE_GROUP ? "GROUP" : "USER", "assigneeId",
                                       row.assignee_id, "transitionId", t->id, "workItemId",
                                       it->id),
                             err);
}

wf_code
wf_runtime__enable_user(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                        const char *vars, wf_error *err)
{
    const char *const *ids = t->assignee.ids;
    size_t n = t->assignee.n_ids;
    if (!wf_str_empty(t->assignee.ids_expression)) {
        wf_expr *e;
        char **got = NULL;
        wf_code rc = wf_expr_cached(t->assignee.ids_expression, &e, err);
        if (rc != WF_OK)
            return rc;
        rc = wf_expr_eval_strings(e, vars, w->rw.arena, &got, &n, err);
        wf_expr_free(e);
        if (rc != WF_OK)
            return expr_failed(err, rc, "ids_expression", t->id);
        ids = (const char *const *)got;
        /* The ids an AssignTo's expression may give, by the same rule. */
        for (size_t i = 0; i < n; i++)
            if (!wf_referral_assignee_id_ok(ids[i]))
                return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                    "ids_expression of transition \"%s\" gave \"%.64s\", which "
                                    "is not 1 to 128 printable characters",
                                    t->id, ids[i]);
    }
    if (n == 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "transition \"%s\" has no assignee: its ids_expression gave no id",
                            t->id);
    task_choice ch;
    wf_code rc = choose_task_fields(t, vars, &ch, err);
    if (rc != WF_OK)
        return rc;
    wf_assignee_kind kind =
        t->assignee.kind == WF_NET_ASSIGNEE_GROUP ? WF_ASSIGNEE_GROUP : WF_ASSIGNEE_USER;
    size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), it->id);
    if (ii != WF_WORK_NONE) {
        /* The history names whom the item was given to. */
        char *list = wf_net_join_ids(w->rw.arena, ids, n);
        if (list == NULL)
            return wf_error_nomem(err);
        ITEM(w, ii)->assignee_kind = (int32_t)t->assignee.kind;
        ITEM(w, ii)->assignee_id = list;
    }
    for (size_t i = 0; rc == WF_OK && i < n; i++)
        rc = add_task(w, it, t, kind, ids[i], &ch, err);
    return rc;
}

/* The priority of the job of AUTO transition t: its
 * job_priority_expression over vars, or 50. A result that is not an
 * integer 0-100 is refused (WF_E_INVALID_ARGUMENT, an incident), not
 * clamped. */
static wf_code
choose_job_priority(const wf_transition *t, const char *vars, int32_t *out, wf_error *err)
{
    *out = WF_JOB_PRIORITY_DEFAULT;
    if (wf_str_empty(t->job_priority_expression))
        return WF_OK;
    wf_expr *e;
    int64_t v;
    wf_code rc = wf_expr_cached(t->job_priority_expression, &e, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_expr_eval_int(e, vars, &v, err);
    wf_expr_free(e);
    if (rc != WF_OK)
        return expr_failed(err, rc, "job_priority_expression", t->id);
    if (v < 0 || v > WF_JOB_PRIORITY_MAX)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "job_priority_expression of transition \"%s\" gave %lld, which is "
                            "not 0 to 100",
                            t->id, (long long)v);
    *out = (int32_t)v;
    return WF_OK;
}

/* The fairness key of a job from the first result of its expression
 * (JSON text j): a string of at most WF_JOB_FAIRNESS_KEY_MAX bytes or an
 * integer (its decimal text); null or "" is no key. */
static wf_code
fairness_key_of(wf_arena *a, const char *j, const wf_transition *t, char **out, wf_error *err)
{
    json_t *v = json_loads(j, JSON_DECODE_ANY, NULL);
    wf_code rc = WF_OK;
    if (json_is_string(v) && json_string_length(v) <= WF_JOB_FAIRNESS_KEY_MAX)
        *out = wf_arena_strdup(a, json_string_value(v));
    else if (json_is_integer(v))
        *out = wf_arena_printf(a, "%lld", (long long)json_integer_value(v));
    else if (json_is_null(v))
        *out = "";
    else
        rc = wf_error_set(err, WF_E_INVALID_ARGUMENT,
                          "job_fairness_key_expression of transition \"%s\" gave %.64s, which "
                          "is not a string of at most 128 bytes or an integer",
                          t->id, j);
    json_decref(v);
    if (rc == WF_OK && *out == NULL)
        rc = wf_error_nomem(err);
    return rc;
}

/* The fairness key of the job of AUTO transition t: its
 * job_fairness_key_expression over vars, or "" (no key). */
static wf_code
choose_job_fairness_key(net_work *w, const wf_transition *t, const char *vars, char **out,
                        wf_error *err)
{
    *out = "";
    if (wf_str_empty(t->job_fairness_key_expression))
        return WF_OK;
    wf_expr *e;
    char *j = NULL;
    wf_code rc = wf_expr_cached(t->job_fairness_key_expression, &e, err);
    if (rc != WF_OK)
        return rc;
    rc = wf_expr_eval_json(e, vars, w->rw.arena, &j, err);
    wf_expr_free(e);
    if (rc != WF_OK)
        return expr_failed(err, rc, "job_fairness_key_expression", t->id);
    return fairness_key_of(w->rw.arena, j, t, out, err);
}

/* The priority and fairness key of a job that is not a compensation. */
static wf_code
choose_job_order(net_work *w, const wf_transition *t, const char *vars, int32_t *priority,
                 char **key, wf_error *err)
{
    wf_code rc = choose_job_priority(t, vars, priority, err);
    if (rc == WF_OK)
        rc = choose_job_fairness_key(w, t, vars, key, err);
    return rc;
}

wf_code
wf_runtime__create_job(net_work *w, const wf_work_item_row *it, const wf_transition *t,
                       const char *vars, bool compensation, wf_job_row *out, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    wf_retry_policy r = wf_net_retry_effective(t);
    int32_t priority = WF_JOB_PRIORITY_DEFAULT;
    char *fkey = "";
    if (!compensation) {
        wf_code prc = choose_job_order(w, t, vars, &priority, &fkey, err);
        if (prc != WF_OK)
            return prc;
    }
    wf_job_row job = {
        .id = wf_id_new(w->rw.arena),
        .tenant = (char *)w->rw.ctx->tenant,
        .root_id = in->root_id,
        .instance_id = in->id,
        .work_item_id = it->id,
        .transition_id = it->transition_id,
        .job_type = (char *)(compensation ? t->compensation_job_type : t->job_type),
        .state = WF_JOB_ACTIVATABLE,
        .attempt = 0,
        .max_attempts = r.max_attempts,
        .activatable_at = w->rw.now,
        .initial_backoff_ms = r.initial_backoff_ms,
        .backoff_multiplier = r.multiplier,
        .max_backoff_ms = r.max_backoff_ms,
        .variables_json = (char *)vars,
        .idempotency_key = wf_arena_printf(w->rw.arena, compensation ? "%s:%s:compensate" : "%s:%s",
                                           in->id, it->id),
        .compensation = compensation,
        .created_at = w->rw.now,
        .priority = priority,
        .fairness_key = fkey,
    };
    if (job.id == NULL || job.idempotency_key == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_runtime__add_row(w->rw.arena, &w->jobs, &job, sizeof job, NW_NEW, NULL, err);
    if (rc == WF_OK)
        rc = wf_runtime__add_wake(w, job.job_type, err);
    if (rc == WF_OK)
        *out = job;
    return rc;
}

static wf_code
enable_auto(net_work *w, const wf_work_item_row *it, const wf_transition *t, const char *vars,
            wf_error *err)
{
    wf_job_row job;
    wf_code rc = wf_runtime__create_job(w, it, t, vars, false, &job, err);
    if (rc == WF_OK)
        rc = wf_runtime__event(w, "JOB_CREATED",
                               json_pack("{s:s,s:s,s:s,s:s,s:i,s:s}", "jobId", job.id, "jobType",
                                         t->job_type, "transitionId", t->id, "workItemId", it->id,
                                         "priority", (int)job.priority, "fairnessKey",
                                         job.fairness_key),
                               err);
    return rc;
}

static wf_code
enable_time(net_work *w, const wf_work_item_row *it, const wf_transition *t, const char *vars,
            wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    int64_t due = w->rw.now + t->delay_ms * 1000;
    if (!wf_str_empty(t->due_expression)) {
        wf_expr *e;
        wf_code rc = wf_expr_cached(t->due_expression, &e, err);
        if (rc != WF_OK)
            return rc;
        rc = wf_expr_eval_time(e, vars, &due, err);
        wf_expr_free(e);
        if (rc != WF_OK)
            return expr_failed(err, rc, "due_expression", t->id);
    }
    wf_timer_row tm = {
        .id = wf_id_new(w->rw.arena),
        .tenant = (char *)w->rw.ctx->tenant,
        .root_id = in->root_id,
        .instance_id = in->id,
        .work_item_id = it->id,
        .transition_id = it->transition_id,
        .due_at = due,
        .created_at = w->rw.now,
    };
    char *when = wf_time_rfc3339(w->rw.arena, due);
    if (tm.id == NULL || when == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_runtime__add_row(w->rw.arena, &w->timers, &tm, sizeof tm, NW_NEW, NULL, err);
    if (rc == WF_OK)
        rc = wf_runtime__add_wake(w, WF_NW_WAKE_TIMERS, err);
    if (rc == WF_OK)
        rc = wf_runtime__event(w, "TIMER_SCHEDULED",
                               json_pack("{s:s,s:s,s:s,s:s}", "timerId", tm.id, "transitionId",
                                         t->id, "workItemId", it->id, "dueAt", when),
                               err);
    return rc;
}

wf_code
wf_runtime__rearm_timer(net_work *w, size_t ii, wf_error *err)
{
    const wf_work_item_row *it = ITEM(w, ii);
    const wf_transition *t = wf_runtime__transition_of(w, it->transition_id);
    if (t == NULL || t->trigger != WF_TRIGGER_TIME)
        return wf_error_set(err, WF_E_INTERNAL, "work item \"%s\" is not a TIME work item", it->id);
    return enable_time(w, it, t, w->rw.insts[w->inst].variables_json, err);
}

static wf_code
enable_msg(net_work *w, const wf_work_item_row *it, const wf_transition *t, wf_error *err)
{
    const wf_instance_row *in = &w->rw.insts[w->inst];
    bool by_agg = t->correlation == WF_CORRELATION_AGGREGATE;
    wf_subscription_row s = {
        .id = wf_id_new(w->rw.arena),
        .tenant = (char *)w->rw.ctx->tenant,
        .root_id = in->root_id,
        .instance_id = in->id,
        .work_item_id = it->id,
        .transition_id = it->transition_id,
        .signal_name = (char *)t->signal_name,
        .aggregate_type = by_agg ? in->aggregate_type : NULL,
        .aggregate_id = by_agg ? in->aggregate_id : NULL,
        .created_at = w->rw.now,
    };
    if (s.id == NULL)
        return wf_error_nomem(err);
    return wf_runtime__add_row(w->rw.arena, &w->subs, &s, sizeof s, NW_NEW, NULL, err);
}

static wf_code
apply_created(net_work *w, const wf_work_item *ci, const char *vars, wf_error *err)
{
    const wf_transition *t = wf_runtime__transition_of(w, ci->transition_id);
    const wf_instance_row *in = &w->rw.insts[w->inst];
    if (t == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "transition \"%s\" is not in the net",
                            ci->transition_id);
    wf_work_item_row row = {
        .id = (char *)ci->id,
        .tenant = (char *)w->rw.ctx->tenant,
        .root_id = in->root_id,
        .instance_id = in->id,
        .transition_id = (char *)t->id,
        .trigger = t->trigger,
        .token_ids = wf_net_join_ids(w->rw.arena, ci->token_ids, ci->n_token_ids),
        .state = WF_WORK_ITEM_ENABLED,
        .enabled_at = w->rw.now,
        .job_type = t->trigger == WF_TRIGGER_AUTO && !wf_str_empty(t->job_type)
                        ? (char *)t->job_type
                        : NULL,
        .signal_name = t->trigger == WF_TRIGGER_MSG ? (char *)t->signal_name : NULL,
    };
    size_t ii;
    if (row.token_ids == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_runtime__add_row(w->rw.arena, &w->items, &row, sizeof row, NW_NEW, &ii, err);
    if (rc == WF_OK)
        rc = wf_runtime__event(w, "TRANSITION_ENABLED",
                               json_pack("{s:s,s:s,s:s}", "transitionId", t->id, "workItemId",
                                         row.id, "trigger", wf_net_trigger_name(t->trigger)),
                               err);
    if (rc != WF_OK)
        return rc;
    switch (t->trigger) {
    case WF_TRIGGER_USER:
        if (wf_runtime__is_foreach(t))
            return wf_runtime__foreach_enable(w, &row, t, vars, err);
        return wf_runtime__enable_user(w, &row, t, vars, err);
    case WF_TRIGGER_AUTO:
        if (wf_runtime__is_foreach(t))
            return wf_runtime__foreach_enable(w, &row, t, vars, err);
        return wf_str_empty(t->job_type) ? WF_OK : enable_auto(w, &row, t, vars, err);
    case WF_TRIGGER_TIME:
        return enable_time(w, &row, t, vars, err);
    case WF_TRIGGER_MSG:
        /* A buffered signal waiting for it is consumed now; the item fires
         * once the whole step is applied (net_runtime_int.h). */
        rc = enable_msg(w, &row, t, err);
        return rc == WF_OK ? wf_runtime__msg_enabled(w, &row, t, err) : rc;
    case WF_TRIGGER_CALL:
        if (wf_runtime__is_foreach(t))
            return wf_runtime__foreach_enable(w, &row, t, vars, err);
        return wf_runtime__call_enabled(w, &row, t, vars, err);
    }
    return WF_OK;
}

int64_t
wf_runtime__competing_due(const net_work *w, const wf_work_item_row *row)
{
    int64_t due = 0;
    for (size_t i = 0; i < w->timers.n; i++) {
        const wf_timer_row *tm = TIMER(w, i);
        if ((w->timers.flags[i] & NW_GONE) || wf_str_eq(tm->work_item_id, row->id) ||
            !wf_str_eq(tm->instance_id, row->instance_id))
            continue;
        size_t k = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), tm->work_item_id);
        if (k != WF_WORK_NONE && shares_token(ITEM(w, k)->token_ids, row->token_ids) &&
            (due == 0 || tm->due_at < due))
            due = tm->due_at;
    }
    return due;
}

/* Pending tasks of live items get the due time of a competing timer. */
static void
link_due(net_work *w)
{
    for (size_t k = 0; k < w->rw.n_tasks; k++) {
        wf_task_row *t = &w->rw.tasks[k];
        /* A due time chosen for the task (UpdateTask) is kept. */
        if (!wf_runtime__task_pending(t) || t->work_item_id == NULL || t->due_fixed ||
            !wf_str_eq(t->instance_id, w->rw.insts[w->inst].id))
            continue;
        size_t ii = wf_runtime__find(w, &w->items, sizeof(wf_work_item_row), t->work_item_id);
        if (ii == WF_WORK_NONE)
            continue;
        int64_t due = wf_runtime__competing_due(w, ITEM(w, ii));
        if (due != t->due_at) {
            t->due_at = due;
            wf_work_touch_task(&w->rw, k);
        }
    }
    /* The deadline of every live item: its own timer's due time (TIME),
     * else that of the earliest timer competing for one of its tokens
     * (the timeout of a USER, MSG or AUTO item). Written only when it
     * changed. */
    for (size_t i = 0; i < w->items.n; i++) {
        wf_work_item_row *it = ITEM(w, i);
        if ((w->items.flags[i] & NW_GONE) || it->state != WF_WORK_ITEM_ENABLED ||
            !wf_str_eq(it->instance_id, w->rw.insts[w->inst].id))
            continue;
        int64_t due = 0;
        if (it->trigger == WF_TRIGGER_TIME) {
            /* A timer spent by a refused firing keeps its due time. */
            due = it->deadline;
            for (size_t k = 0; k < w->timers.n; k++)
                if (!(w->timers.flags[k] & NW_GONE) && wf_str_eq(TIMER(w, k)->work_item_id, it->id))
                    due = TIMER(w, k)->due_at;
        } else {
            due = wf_runtime__competing_due(w, it);
        }
        if (due != it->deadline) {
            it->deadline = due;
            wf_runtime__dirty(&w->items, i);
        }
    }
}

wf_code
wf_runtime__apply_diff(net_work *w, const wf_net_diff *d, const char *vars, wf_error *err)
{
    wf_code rc = WF_OK;
    for (size_t i = 0; rc == WF_OK && i < d->n_fired; i++)
        rc = apply_fired(w, &d->fired[i], err);
    for (size_t i = 0; rc == WF_OK && i < d->n_withdrawn; i++)
        rc = apply_withdrawn(w, d->withdrawn[i], err);
    if (rc != WF_OK)
        return rc;
    const wf_instance_row *in = &w->rw.insts[w->inst];
    for (size_t i = 0; i < d->n_removed_tokens; i++) {
        size_t k = wf_runtime__find(w, &w->toks, sizeof(wf_token_row), d->removed_tokens[i]);
        if (k != WF_WORK_NONE)
            wf_runtime__gone(&w->toks, k);
    }
    for (size_t i = 0; rc == WF_OK && i < d->n_added_tokens; i++) {
        const wf_token *t = &d->added_tokens[i];
        wf_token_row row = {
            .id = (char *)t->id,
            .tenant = (char *)w->rw.ctx->tenant,
            .root_id = in->root_id,
            .instance_id = in->id,
            .place_id = (char *)t->place_id,
            .created_seq = t->seq,
        };
        rc = wf_runtime__add_row(w->rw.arena, &w->toks, &row, sizeof row, NW_NEW, NULL, err);
    }
    void *sig_mark = wf_runtime__pending_mark(w);
    for (size_t i = 0; rc == WF_OK && i < d->n_created; i++)
        rc = apply_created(w, &d->created[i], vars, err);
    /* MSG items that consumed a buffered signal fire now. */
    rc = wf_runtime__fire_pending(w, sig_mark, rc, err);
    if (rc != WF_OK)
        return rc;
    link_due(w);
    wf_work_touch_instance(&w->rw, w->inst);
    if (d->ended) {
        rc = wf_referral_finish_instance(&w->rw, w->inst, WF_INSTANCE_COMPLETED, NULL, err);
        /* Signals buffered for the ended instance can never be delivered. */
        return rc == WF_OK ? wf_runtime__discard_buffered(w, err) : rc;
    }
    if (d->deadlocked) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "no transition of definition \"%s\" is enabled and the case has not ended",
                 w->net->key != NULL ? w->net->key : "");
        return wf_runtime__fail_instance(w, "DEADLOCKED", NULL, -1, msg, err);
    }
    return WF_OK;
}

wf_code
wf_runtime__state(net_work *w, wf_net_state *st, wf_error *err)
{
    wf_arena *a = w->rw.arena;
    wf_token *toks = wf_arena_alloc(a, (w->toks.n + 1) * sizeof *toks);
    wf_work_item *items = wf_arena_alloc(a, (w->items.n + 1) * sizeof *items);
    if (toks == NULL || items == NULL)
        return wf_error_nomem(err);
    size_t nt = 0, ni = 0;
    for (size_t i = 0; i < w->toks.n; i++)
        if (!(w->toks.flags[i] & NW_GONE))
            toks[nt++] = (wf_token){TOK(w, i)->id, TOK(w, i)->place_id, TOK(w, i)->created_seq};
    for (size_t i = 0; i < w->items.n; i++) {
        const wf_work_item_row *r = ITEM(w, i);
        if ((w->items.flags[i] & NW_GONE) || r->state != WF_WORK_ITEM_ENABLED)
            continue;
        wf_work_item *it = &items[ni++];
        *it = (wf_work_item){.id = r->id, .transition_id = r->transition_id, .trigger = r->trigger};
        wf_code rc = wf_net_split_ids(a, r->token_ids, &it->token_ids, &it->n_token_ids, err);
        if (rc != WF_OK)
            return rc;
    }
    *st = (wf_net_state){.tokens = toks, .n_tokens = nt, .items = items, .n_items = ni};
    return WF_OK;
}

wf_code
wf_runtime__fire(net_work *w, const char *work_item_id, const char *patch_json, wf_error *err)
{
    return wf_runtime__fire_goto(w, work_item_id, patch_json, NULL, err);
}

wf_code
wf_runtime__fire_goto(net_work *w, const char *work_item_id, const char *patch_json,
                      const char *goto_place, wf_error *err)
{
    if (w->net == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "instance \"%s\" does not run a net",
                            w->rw.insts[w->inst].id);
    wf_instance_row *in = &w->rw.insts[w->inst];
    const char *vars = in->variables_json;
    wf_code rc;
    if (patch_json != NULL) {
        rc = wf_vars_merge(w->rw.arena, in->variables_json, patch_json, &vars, err);
        if (rc != WF_OK)
            return rc;
        in->variables_json = (char *)vars;
        wf_work_touch_instance(&w->rw, w->inst);
    }
    wf_net_state st, out;
    wf_net_diff d;
    rc = wf_runtime__state(w, &st, err);
    if (rc == WF_OK)
        rc = wf_net_fire_goto(w->net, &st, work_item_id, goto_place, vars, w->rw.arena, &out, &d,
                              err);
    if (rc == WF_OK)
        rc = wf_runtime__apply_diff(w, &d, vars, err);
    return rc;
}
