/*
 * referral_query: the reads of the referral model (GetTask, GetInstance,
 * GetCompletion, ListInstances, ListTasks).
 *
 * Reads of a whole tree load the aggregate through a read-only unit of
 * work (uow.h) so they see one consistent tree; listings are the store's
 * keyset-paginated queries with the engine's rules for who sees what
 * (inbox groups, TaskFlow process states). Writes nothing.
 */
#include "referral.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "ids.h"
#include "wf_time.h"
#include "wf_str.h"

#define PAGE_DEFAULT 50
#define PAGE_MAX 500

static wf_store_ctx
store_ctx(const wf_ref_ctx *ctx)
{
    return (wf_store_ctx){ctx->tenant, ctx->deadline_ms, ctx->arena};
}

static wf_code
page_size(int32_t asked, size_t *out, wf_error *err)
{
    if (asked < 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "page_size must not be negative");
    *out = asked == 0 ? PAGE_DEFAULT : asked > PAGE_MAX ? PAGE_MAX : (size_t)asked;
    return WF_OK;
}

static bool
empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}

wf_code
wf_referral_get_task(const wf_ref_ctx *ctx, const char *task_id, wf_task_row *out, wf_error *err)
{
    wf_code rc = wf_ids_check(ctx, WF_ID_TASK, "task_id", task_id, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = store_ctx(ctx);
    return wf_store_get_task(ctx->store, &sc, task_id, out, err);
}

/* Loads the tree of instance_id and finds it; *self is its index. */
static wf_code
load_tree(const wf_ref_ctx *ctx, const char *instance_id, wf_aggregate *agg, size_t *self,
          wf_error *err)
{
    wf_code rc = wf_ids_check(ctx, WF_ID_INSTANCE, "instance_id", instance_id, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = store_ctx(ctx);
    rc = wf_uow_read_aggregate(ctx->store, &sc, instance_id, agg, err);
    if (rc != WF_OK)
        return rc;
    for (size_t i = 0; i < agg->n_instances; i++)
        if (strcmp(agg->instances[i].id, instance_id) == 0) {
            *self = i;
            return WF_OK;
        }
    return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%s\" does not exist",
                        instance_id);
}

wf_code
wf_referral_completion(const wf_ref_ctx *ctx, const char *instance_id, wf_ref_counts *out,
                       wf_error *err)
{
    wf_aggregate agg;
    size_t self;
    wf_code rc = load_tree(ctx, instance_id, &agg, &self, err);
    if (rc == WF_OK)
        wf_referral_count(agg.tasks, agg.n_tasks, instance_id, out);
    return rc;
}

/* A referral join still waiting: a running child whose join has not
 * fired. */
static bool
join_pending(const wf_instance_row *in)
{
    return in->parent_id != NULL && in->join_mode != WF_JOIN_NONE && !in->join_fired &&
           in->status == WF_INSTANCE_RUNNING;
}

static void
add_join(const wf_aggregate *agg, const wf_instance_row *in, wf_ref_instance_view *v)
{
    wf_ref_counts c;
    wf_referral_count(agg->tasks, agg->n_tasks, in->id, &c);
    v->joins[v->n_joins++] = (wf_ref_join){
        .instance_id = in->id,
        .mode = in->join_mode,
        .quorum = in->join_mode == WF_JOIN_QUORUM ? in->join_quorum : 0,
        .required = wf_referral_join_required(in->join_mode, in->join_quorum, &c),
        .done = c.done,
        .total = c.total,
    };
}

wf_code
wf_referral_get_instance(const wf_ref_ctx *ctx, const char *instance_id, wf_ref_instance_view *out,
                         wf_error *err)
{
    wf_aggregate agg;
    size_t self = 0;
    wf_code rc = load_tree(ctx, instance_id, &agg, &self, err);
    if (rc != WF_OK)
        return rc;
    memset(out, 0, sizeof *out);
    out->instance = agg.instances[self];
    out->tasks = wf_arena_calloc(ctx->arena, agg.n_tasks + 1, sizeof *out->tasks);
    out->children = wf_arena_calloc(ctx->arena, agg.n_instances + 1, sizeof *out->children);
    out->joins = wf_arena_calloc(ctx->arena, agg.n_instances + 1, sizeof *out->joins);
    if (out->tasks == NULL || out->children == NULL || out->joins == NULL)
        return wf_error_nomem(err);
    /* The store orders tasks and instances by (created_at, id): oldest
     * first, as the contract wants. */
    for (size_t i = 0; i < agg.n_tasks; i++)
        if (wf_str_eq(agg.tasks[i].instance_id, instance_id))
            out->tasks[out->n_tasks++] = agg.tasks[i];
    if (join_pending(&out->instance))
        add_join(&agg, &out->instance, out);
    for (size_t i = 0; i < agg.n_instances; i++) {
        if (!wf_str_eq(agg.instances[i].parent_id, instance_id))
            continue;
        out->children[out->n_children++] = agg.instances[i];
        if (join_pending(&agg.instances[i]))
            add_join(&agg, &agg.instances[i], out);
    }
    return WF_OK;
}

/* ---- ListInstances ---------------------------------------------------------------- */

/* The statuses a TaskFlow process state stands for, intersected with an
 * explicit status filter, and *begun, whether work has begun. Every root is
 * in exactly one state: NOT_STARTED is a RUNNING AD_HOC root without a
 * referral (no work begun); OPEN is every other root that has not ended
 * (a running NET root, a root with referrals, a FAILED, COMPENSATING or
 * SUSPENDED one); CLOSED is an ended root. */
static size_t
state_statuses(wf_process_state state, wf_instance_status status, wf_instance_status *out,
               wf_begun_filter *begun)
{
    static const wf_instance_status open[] = {WF_INSTANCE_RUNNING, WF_INSTANCE_COMPENSATING,
                                              WF_INSTANCE_FAILED, WF_INSTANCE_SUSPENDED};
    static const wf_instance_status closed[] = {WF_INSTANCE_COMPLETED, WF_INSTANCE_CANCELLED,
                                                WF_INSTANCE_COMPENSATED};
    static const wf_instance_status running[] = {WF_INSTANCE_RUNNING};
    const wf_instance_status *set = NULL;
    size_t n_set = 0, n = 0;
    *begun = WF_BEGUN_ANY;
    switch (state) {
    case WF_PROCESS_NOT_STARTED:
        set = running, n_set = 1, *begun = WF_BEGUN_NO;
        break;
    case WF_PROCESS_OPEN:
        set = open, n_set = 4, *begun = WF_BEGUN_YES;
        break;
    case WF_PROCESS_CLOSED:
        set = closed, n_set = 3;
        break;
    case WF_PROCESS_ANY:
        if (status != 0)
            out[n++] = status;
        return n;
    }
    for (size_t i = 0; i < n_set; i++)
        if (status == 0 || status == set[i])
            out[n++] = set[i];
    return n;
}

#define VAR_PATH_KEYS 8
#define VAR_KEY_MAX 128

/* Splits the dotted path of variable filter i into keys (arena copies);
 * refuses a malformed path or a value that is not a JSON scalar. */
static wf_code
var_filter(const wf_ref_ctx *ctx, size_t i, const wf_ref_var_filter *in, wf_var_filter *out,
           wf_error *err)
{
    char field[64];
    const char *path = in->path != NULL ? in->path : "";
    snprintf(field, sizeof field, "variables[%zu].path", i);
    char **keys = wf_arena_calloc(ctx->arena, VAR_PATH_KEYS, sizeof *keys);
    if (keys == NULL)
        return wf_error_nomem(err);
    size_t n = 0;
    for (const char *p = path;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot != NULL ? (size_t)(dot - p) : strlen(p);
        if (len == 0)
            return wf_work_invalid(ctx, field, "has an empty key (a dotted path of object keys)",
                                   err);
        if (len > VAR_KEY_MAX)
            return wf_work_invalid(ctx, field, "has a key longer than 128 bytes", err);
        if (n == VAR_PATH_KEYS)
            return wf_work_invalid(ctx, field, "has more than 8 keys", err);
        for (size_t k = 0; k < len; k++)
            if ((unsigned char)p[k] < 0x20 || p[k] == 0x7f)
                return wf_work_invalid(ctx, field, "holds a control character", err);
        keys[n] = wf_arena_strndup(ctx->arena, p, len);
        if (keys[n] == NULL)
            return wf_error_nomem(err);
        n++;
        if (dot == NULL)
            break;
        p = dot + 1;
    }
    snprintf(field, sizeof field, "variables[%zu].value_json", i);
    json_t *v = json_loads(in->value_json != NULL ? in->value_json : "", JSON_DECODE_ANY, NULL);
    bool scalar = v != NULL && !json_is_object(v) && !json_is_array(v);
    json_decref(v);
    if (!scalar)
        return wf_work_violation(ctx, WF_E_INVALID_JSON, field,
                                 "is not a JSON scalar (a string, number, true, false or null)",
                                 err);
    *out = (wf_var_filter){(const char *const *)keys, n, in->value_json};
    return WF_OK;
}

/* Checks a time range; *never when it excludes every instance (an upper
 * bound at or before the epoch, which no instance time is). */
static wf_code
time_range(const wf_ref_ctx *ctx, const wf_ref_time_range *r, const char *after, const char *before,
           bool *never, wf_error *err)
{
    if (r->has_after && r->has_before && r->after >= r->before) {
        char msg[96];
        snprintf(msg, sizeof msg, "must be later than %s", after);
        return wf_work_invalid(ctx, before, msg, err);
    }
    if (r->has_before && r->before <= 0)
        *never = true;
    return WF_OK;
}

wf_code
wf_referral_list_instances(const wf_ref_ctx *ctx, const wf_ref_instance_query *q,
                           wf_instance_row **rows, size_t *n, char **next_cursor, wf_error *err)
{
    size_t size = 0;
    wf_code rc = page_size(q->page_size, &size, err);
    if (rc != WF_OK)
        return rc;
    if (q->state < WF_PROCESS_ANY || q->state > WF_PROCESS_CLOSED)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "state is not a known process state");
    if (q->status < 0 || q->status > WF_INSTANCE_SUSPENDED)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "status is not a known instance status");
    if (empty(q->aggregate_type) && !empty(q->aggregate_id))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "aggregate.type is required when aggregate.id is set");
    const char *by = q->started_by;
    if (empty(by)) {
        if (empty(ctx->actor))
            return wf_error_set(err, WF_E_ACTOR_MISSING,
                                "x-actor-id is required when started_by is empty");
        by = ctx->actor;
    } else if (strcmp(by, "*") == 0) {
        by = NULL;
    }
    bool never = false;
    wf_code trc = time_range(ctx, &q->created, "created_after", "created_before", &never, err);
    if (trc == WF_OK)
        trc = time_range(ctx, &q->ended, "ended_after", "ended_before", &never, err);
    if (trc != WF_OK)
        return trc;
    if (q->n_vars > WF_REF_MAX_VAR_FILTERS)
        return wf_work_invalid(ctx, "variables", "holds more than 8 filters", err);
    wf_var_filter *vars = wf_arena_calloc(ctx->arena, q->n_vars + 1, sizeof *vars);
    if (vars == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < q->n_vars; i++) {
        trc = var_filter(ctx, i, &q->vars[i], &vars[i], err);
        if (trc != WF_OK)
            return trc;
    }
    wf_instance_status statuses[4];
    wf_instance_filter f = {
        .started_by = by,
        .definition_key = empty(q->definition_key) ? NULL : q->definition_key,
        .aggregate_type = empty(q->aggregate_type) ? NULL : q->aggregate_type,
        .aggregate_id = empty(q->aggregate_id) ? NULL : q->aggregate_id,
        .statuses = statuses,
        .roots_only = true,
        /* 0 is the store's "unbounded": a lower bound at or before the
         * epoch bounds nothing for creation, and for the end only asks
         * that the instance ended (ended_at >= 1). */
        .created_after = q->created.has_after && q->created.after > 0 ? q->created.after : 0,
        .created_before = q->created.has_before ? q->created.before : 0,
        .ended_after = !q->ended.has_after  ? 0
                       : q->ended.after > 0 ? q->ended.after
                                            : 1,
        .ended_before = q->ended.has_before ? q->ended.before : 0,
        .vars = vars,
        .n_vars = q->n_vars,
        .newest_first = q->newest_first,
    };
    if (never) {
        *rows = NULL, *n = 0, *next_cursor = NULL;
        return WF_OK;
    }
    f.n_statuses = state_statuses(q->state, q->status, statuses, &f.begun);
    if (f.n_statuses == 0 && (q->state != WF_PROCESS_ANY || q->status != 0)) {
        /* The state and the status exclude each other: nothing matches. */
        *rows = NULL, *n = 0, *next_cursor = NULL;
        return WF_OK;
    }
    wf_store_ctx sc = store_ctx(ctx);
    return wf_store_list_instances(ctx->store, &sc, &f, size, empty(q->cursor) ? NULL : q->cursor,
                                   rows, n, next_cursor, err);
}

/* ---- ListTasks -------------------------------------------------------------------- */

/* Appends the groups of a comma list (trusted x-actor-groups) to v. */
static size_t
add_header_groups(wf_arena *a, const char *list, const char **v, size_t n, size_t cap)
{
    const char *p = list;
    while (p != NULL && *p != '\0' && n < cap) {
        while (*p == ' ')
            p++;
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        while (len > 0 && p[len - 1] == ' ')
            len--;
        if (len > 0)
            v[n++] = wf_arena_strndup(a, p, len);
        p = end != NULL ? end + 1 : NULL;
    }
    return n;
}

/* The groups whose open tasks are in user's inbox: the directory's, plus
 * the trusted x-actor-groups when user is the actor. */
static wf_code
inbox_groups(const wf_ref_ctx *ctx, const char *user, const char ***out, size_t *n, wf_error *err)
{
    const char **dir_groups;
    size_t n_dir;
    if (!wf_directory_user_groups(ctx->dir, user, ctx->arena, &dir_groups, &n_dir))
        return wf_error_nomem(err);
    const char *hdr = wf_str_eq(user, ctx->actor) ? ctx->actor_groups : NULL;
    size_t cap = n_dir + (hdr != NULL ? strlen(hdr) / 2 + 2 : 0) + 1;
    const char **v = wf_arena_calloc(ctx->arena, cap, sizeof *v);
    if (v == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < n_dir; i++)
        v[i] = dir_groups[i];
    *n = hdr != NULL ? add_header_groups(ctx->arena, hdr, v, n_dir, cap) : n_dir;
    *out = v;
    return WF_OK;
}

wf_code
wf_referral_list_tasks(const wf_ref_ctx *ctx, const wf_ref_task_query *q, wf_task_row **rows,
                       size_t *n, char **next_cursor, wf_error *err)
{
    /* Defaults: a user's inbox is their pending work (open and claimed); a
     * group's queue is its open tasks, since a claimed task has left it. */
    static const wf_task_status pending[] = {WF_TASK_OPEN, WF_TASK_CLAIMED};
    size_t size = 0;
    wf_code rc = page_size(q->page_size, &size, err);
    if (rc != WF_OK)
        return rc;
    if (!empty(q->user) && !empty(q->group))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "user and group cannot both be set");
    for (size_t i = 0; i < q->n_states; i++)
        if (q->states[i] < WF_TASK_OPEN || q->states[i] > WF_TASK_CANCELLED)
            return wf_error_set(err, WF_E_INVALID_ARGUMENT, "states[%zu] is not a task status", i);
    size_t n_pending = empty(q->group) ? 2 : 1; /* OPEN only for a group */
    if (q->sort < WF_TASK_SORT_CREATED || q->sort > WF_TASK_SORT_DUE)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "sort is not a task order");
    if (q->due_after != 0 && q->due_before != 0 && q->due_after >= q->due_before)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "due_after must be before due_before");
    wf_task_filter f = {
        .states = q->n_states > 0 ? q->states : pending,
        .n_states = q->n_states > 0 ? q->n_states : n_pending,
        .sort = q->sort,
        .descending = q->descending,
        .due_after = q->due_after,
        .due_before = q->due_before,
    };
    if (!empty(q->group)) {
        f.group = q->group;
    } else {
        f.user = empty(q->user) ? ctx->actor : q->user;
        if (empty(f.user))
            return wf_error_set(err, WF_E_ACTOR_MISSING,
                                "x-actor-id is required when user and group are empty");
        const char **groups = NULL;
        rc = inbox_groups(ctx, f.user, &groups, &f.n_groups, err);
        if (rc != WF_OK)
            return rc;
        f.groups = groups;
    }
    wf_store_ctx sc = store_ctx(ctx);
    return wf_store_list_tasks(ctx->store, &sc, &f, size, empty(q->cursor) ? NULL : q->cursor, rows,
                               n, next_cursor, err);
}
