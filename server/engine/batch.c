/*
 * batch: batch operations over the instances a ListInstances filter
 * matches (batch.h explains the matching set and why each instance gets
 * the action at most once).
 *
 * Owns the filter's stored form (filter_json), the first refusals
 * (errors_json) and the chunk rule; the actions are the entry functions
 * of the single-instance RPCs, chosen by one switch (apply), and the
 * listing is wf_referral_list_instances with its own checks. The store
 * keeps the row; the scheduler only calls wf_batch_pass.
 */
#include "batch.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "instances.h"
#include "wf_id.h"
#include "wf_str.h"
#include "wf_time.h"

#define REASON_MAX 1024
#define COUNT_PAGE 500 /* the listing's largest page */
#define CHUNK_MAX 500
#define UPDATE_TRIES 3
#define LET_GO_MS 1000 /* the deadline of letting a lease go */

static wf_store_ctx
store_ctx(const wf_ref_ctx *ctx)
{
    return (wf_store_ctx){ctx->tenant, ctx->deadline_ms, ctx->arena};
}

static bool
empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}

/* The method each action's request is recorded under: the RPC's own, so
 * that the record is the one its entry function writes. NULL for what is
 * not an action: each action has its case here and in apply. */
static const char *
action_method(int action)
{
    switch ((wf_batch_action)action) {
    case WF_BATCH_CANCEL:
        return "CancelInstance";
    case WF_BATCH_RETRY:
        return "RetryInstance";
    case WF_BATCH_SUSPEND:
        return "SuspendInstance";
    case WF_BATCH_RESUME:
        return "ResumeInstance";
    case WF_BATCH_MIGRATE:
        return "MigrateInstance";
    }
    return NULL;
}

/* ---- the stored filter ------------------------------------------------------ */

static json_t *
opt_str(const char *s)
{
    return empty(s) ? json_null() : json_string(s);
}

static json_t *
opt_time(bool has, int64_t t)
{
    return has ? json_integer((json_int_t)t) : json_null();
}

/* filter_json of q (started_by already resolved): an object with one
 * key per field; NULL when out of memory. */
static char *
filter_dump(wf_arena *a, const wf_ref_instance_query *q)
{
    json_t *vars = json_array();
    for (size_t i = 0; vars != NULL && i < q->n_vars; i++)
        json_array_append_new(
            vars, json_pack("{s:s,s:s}", "path", q->vars[i].path, "value", q->vars[i].value_json));
    json_t *o = json_pack("{s:s,s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "startedBy",
                          q->started_by, "state", (int)q->state, "status", (int)q->status,
                          "definitionKey", opt_str(q->definition_key), "aggregateType",
                          opt_str(q->aggregate_type), "aggregateId", opt_str(q->aggregate_id),
                          "createdAfter", opt_time(q->created.has_after, q->created.after),
                          "createdBefore", opt_time(q->created.has_before, q->created.before),
                          "endedAfter", opt_time(q->ended.has_after, q->ended.after), "endedBefore",
                          opt_time(q->ended.has_before, q->ended.before), "variables",
                          vars != NULL ? vars : json_array());
    char *text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    char *out = text != NULL ? wf_arena_strdup(a, text) : NULL;
    free(text);
    return out;
}

static const char *
get_str(wf_arena *a, const json_t *o, const char *key, bool *oom)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (s == NULL)
        return NULL;
    char *c = wf_arena_strdup(a, s);
    *oom |= c == NULL;
    return c;
}

static void
get_time(const json_t *o, const char *key, bool *has, int64_t *t)
{
    const json_t *v = json_object_get(o, key);
    *has = json_is_integer(v);
    *t = *has ? (int64_t)json_integer_value(v) : 0;
}

/* Reads filter_json back into *q (arena strings). */
static wf_code
filter_load(wf_arena *a, const char *text, wf_ref_instance_query *q, wf_error *err)
{
    memset(q, 0, sizeof *q);
    json_t *o = json_loads(text != NULL ? text : "", 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return wf_error_set(err, WF_E_INTERNAL, "a batch operation's filter cannot be read");
    }
    bool oom = false;
    q->started_by = get_str(a, o, "startedBy", &oom);
    q->state = (wf_process_state)json_integer_value(json_object_get(o, "state"));
    q->status = (wf_instance_status)json_integer_value(json_object_get(o, "status"));
    q->definition_key = get_str(a, o, "definitionKey", &oom);
    q->aggregate_type = get_str(a, o, "aggregateType", &oom);
    q->aggregate_id = get_str(a, o, "aggregateId", &oom);
    get_time(o, "createdAfter", &q->created.has_after, &q->created.after);
    get_time(o, "createdBefore", &q->created.has_before, &q->created.before);
    get_time(o, "endedAfter", &q->ended.has_after, &q->ended.after);
    get_time(o, "endedBefore", &q->ended.has_before, &q->ended.before);
    const json_t *vars = json_object_get(o, "variables");
    size_t n = json_array_size(vars);
    wf_ref_var_filter *v = wf_arena_calloc(a, n + 1, sizeof *v);
    oom |= v == NULL;
    for (size_t i = 0; v != NULL && i < n; i++) {
        const json_t *e = json_array_get(vars, i);
        v[i].path = get_str(a, e, "path", &oom);
        v[i].value_json = get_str(a, e, "value", &oom);
    }
    q->vars = v;
    q->n_vars = v != NULL ? n : 0;
    json_decref(o);
    return oom ? wf_error_nomem(err) : WF_OK;
}

/* ---- the action's arguments (args_json) ----------------------------------------- */

/* MIGRATE's arguments as args_json: {"targetVersion":N,"placeMapping":
 * [{"from":…,"to":…}]}; NULL when out of memory. */
static char *
args_dump(wf_arena *a, const wf_batch_spec *spec)
{
    json_t *map = json_array();
    for (size_t i = 0; map != NULL && i < spec->n_mapping; i++)
        json_array_append_new(map, json_pack("{s:s,s:s}", "from", spec->mapping[i].from_place, "to",
                                             spec->mapping[i].to_place));
    json_t *o = map != NULL ? json_pack("{s:i,s:o}", "targetVersion", (int)spec->target_version,
                                        "placeMapping", map)
                            : NULL;
    char *text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    char *out = text != NULL ? wf_arena_strdup(a, text) : NULL;
    free(text);
    return out;
}

/* Reads args_json (NULL: no arguments) into v's migration arguments. */
static wf_code
args_load(wf_arena *a, const char *text, wf_batch_view *v, wf_error *err)
{
    v->target_version = 0;
    v->mapping = NULL;
    v->n_mapping = 0;
    if (text == NULL)
        return WF_OK;
    json_t *o = json_loads(text, 0, NULL);
    const json_t *map = json_object_get(o, "placeMapping");
    if (!json_is_object(o) || !json_is_array(map)) {
        json_decref(o);
        return wf_error_set(err, WF_E_INTERNAL, "a batch operation's arguments cannot be read");
    }
    bool oom = false;
    size_t n = json_array_size(map);
    v->target_version = (int32_t)json_integer_value(json_object_get(o, "targetVersion"));
    v->mapping = wf_arena_calloc(a, n + 1, sizeof *v->mapping);
    oom |= v->mapping == NULL;
    for (size_t i = 0; !oom && i < n; i++) {
        const json_t *e = json_array_get(map, i);
        v->mapping[i].from_place = get_str(a, e, "from", &oom);
        v->mapping[i].to_place = get_str(a, e, "to", &oom);
    }
    v->n_mapping = oom ? 0 : n;
    json_decref(o);
    return oom ? wf_error_nomem(err) : WF_OK;
}

/* ---- the first refusals ----------------------------------------------------- */

static wf_code
errors_load(wf_arena *a, const char *text, wf_batch_failure **out, size_t *n, wf_error *err)
{
    *out = NULL;
    *n = 0;
    json_t *arr = text != NULL ? json_loads(text, 0, NULL) : NULL;
    size_t k = json_array_size(arr);
    wf_batch_failure *v = wf_arena_calloc(a, k + 1, sizeof *v);
    bool oom = v == NULL;
    for (size_t i = 0; v != NULL && i < k; i++) {
        const json_t *e = json_array_get(arr, i);
        v[i] = (wf_batch_failure){get_str(a, e, "instanceId", &oom), get_str(a, e, "reason", &oom),
                                  get_str(a, e, "message", &oom)};
    }
    json_decref(arr);
    if (oom)
        return wf_error_nomem(err);
    *out = v;
    *n = k;
    return WF_OK;
}

/* errors_json with add[0..n_add) appended, up to WF_BATCH_MAX_ERRORS. */
static char *
errors_append(wf_arena *a, const char *text, const wf_batch_failure *add, size_t n_add)
{
    json_t *arr = text != NULL ? json_loads(text, 0, NULL) : NULL;
    if (!json_is_array(arr)) {
        json_decref(arr);
        arr = json_array();
    }
    for (size_t i = 0; arr != NULL && i < n_add && json_array_size(arr) < WF_BATCH_MAX_ERRORS; i++)
        json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "instanceId", add[i].instance_id,
                                             "reason", add[i].reason, "message", add[i].message));
    char *dumped = arr != NULL ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_decref(arr);
    char *out = dumped != NULL ? wf_arena_strdup(a, dumped) : NULL;
    free(dumped);
    return out;
}

static wf_code
view_of(wf_arena *a, const wf_batch_row *row, wf_batch_view *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    out->row = *row;
    wf_code rc = filter_load(a, row->filter_json, &out->filter, err);
    if (rc == WF_OK)
        rc = errors_load(a, row->errors_json, &out->errors, &out->n_errors, err);
    if (rc == WF_OK)
        rc = args_load(a, row->args_json, out, err);
    return rc;
}

/* ---- the matching set ------------------------------------------------------- */

/* q bounded to the instances created up to start (microseconds). */
static wf_ref_instance_query
bounded(const wf_ref_instance_query *q, int64_t start)
{
    wf_ref_instance_query b = *q;
    if (!b.created.has_before || b.created.before > start + 1) {
        b.created.has_before = true;
        b.created.before = start + 1;
    }
    /* A lower bound at or past the new upper one matches nothing; the
     * listing would refuse the pair, so the walk sees no instance. */
    return b;
}

static bool
bounded_empty(const wf_ref_instance_query *q)
{
    return q->created.has_after && q->created.has_before && q->created.after >= q->created.before;
}

/* Counts the instances q matches (q already checked and bounded). */
static wf_code
count_matching(const wf_ref_ctx *ctx, const wf_ref_instance_query *q, int64_t *total, wf_error *err)
{
    *total = 0;
    if (bounded_empty(q))
        return WF_OK;
    wf_ref_instance_query page = *q;
    page.page_size = COUNT_PAGE;
    page.cursor = NULL;
    for (;;) {
        wf_instance_row *rows = NULL;
        size_t n = 0;
        char *next = NULL;
        wf_code rc = wf_referral_list_instances(ctx, &page, &rows, &n, &next, err);
        if (rc != WF_OK)
            return rc;
        *total += (int64_t)n;
        if (next == NULL)
            return WF_OK;
        page.cursor = next;
    }
}

/* ---- StartBatchOperation ---------------------------------------------------- */

/* The filter's violations name their request path under "filter.". */
typedef struct prefixed {
    wf_ref_violation_fn fn;
    void *arg;
} prefixed;

static void
filter_violation(void *arg, const char *field, const char *reason, const char *description)
{
    const prefixed *p = arg;
    char path[128];
    snprintf(path, sizeof path, "filter.%s", field != NULL ? field : "");
    p->fn(p->arg, path, reason, description);
}

typedef struct start_op {
    const wf_batch_row *row;
} start_op;

static wf_code
start_body(wf_tx *tx, void *arg, wf_error *err)
{
    const start_op *op = arg;
    return wf_tx_put_batch(tx, op->row, err);
}

wf_code
wf_batch_start(const wf_ref_ctx *ctx, const wf_batch_spec *spec, wf_uow_idem *idem,
               wf_batch_view *out, wf_error *err)
{
    if (action_method(spec->action) == NULL)
        return wf_work_invalid(ctx, "action",
                               "is required (CANCEL, RETRY, SUSPEND, RESUME or MIGRATE)", err);
    if (spec->reason != NULL && strlen(spec->reason) > REASON_MAX)
        return wf_work_invalid(ctx, "reason", "is longer than 1024 bytes", err);
    bool migrate = spec->action == WF_BATCH_MIGRATE;
    if (migrate && empty(spec->filter.definition_key))
        return wf_work_invalid(ctx, "filter.definition_key",
                               "is required for MIGRATE (target_version is one of its versions)",
                               err);
    if (migrate) {
        wf_runtime_migrate_in args = {.target_version = spec->target_version,
                                      .mapping = spec->mapping,
                                      .n_mapping = spec->n_mapping};
        wf_code arc = wf_runtime_migrate_check_args(ctx, &args, err);
        if (arc != WF_OK)
            return arc;
    } else if (spec->target_version != 0) {
        return wf_work_invalid(ctx, "target_version", "is for the MIGRATE action only", err);
    } else if (spec->n_mapping > 0) {
        return wf_work_invalid(ctx, "place_mapping", "is for the MIGRATE action only", err);
    }
    wf_ref_instance_query q = spec->filter;
    q.page_size = 0;
    q.cursor = NULL;
    if (empty(q.started_by)) {
        if (empty(ctx->actor))
            return wf_error_set(err, WF_E_ACTOR_MISSING,
                                "x-actor-id is required when filter.started_by is empty");
        q.started_by = ctx->actor;
    }
    /* The listing checks the filter: its refusals are ListInstances'. A
     * first page of one row checks it before anything is counted. */
    wf_ref_instance_query probe = q;
    probe.page_size = 1;
    wf_instance_row *rows = NULL;
    size_t n = 0;
    char *next = NULL;
    prefixed pv = {ctx->violation, ctx->violation_arg};
    wf_ref_ctx fctx = *ctx;
    if (ctx->violation != NULL) {
        fctx.violation = filter_violation;
        fctx.violation_arg = &pv;
    }
    wf_code rc = wf_referral_list_instances(&fctx, &probe, &rows, &n, &next, err);
    if (rc != WF_OK)
        return rc;

    int64_t now = wf_now_us();
    int64_t total = 0;
    wf_ref_instance_query walk = bounded(&q, now);
    rc = count_matching(ctx, &walk, &total, err);
    if (rc != WF_OK)
        return rc;
    wf_batch_row row = {
        .id = spec->dry_run ? (char *)"" : wf_id_new(ctx->arena),
        .action = (wf_batch_action)spec->action,
        .state = total == 0 ? WF_BATCH_COMPLETED : WF_BATCH_RUNNING,
        .filter_json = filter_dump(ctx->arena, &q),
        .args_json = migrate ? args_dump(ctx->arena, spec) : NULL,
        .reason = empty(spec->reason) ? NULL : (char *)spec->reason,
        .created_by = (char *)ctx->actor,
        .total = total,
        .errors_json = "[]",
        .created_at = now,
        .updated_at = now,
        .ended_at = total == 0 ? now : 0,
    };
    if (row.id == NULL || row.filter_json == NULL || (migrate && row.args_json == NULL))
        return wf_error_nomem(err);
    wf_batch_view view;
    rc = view_of(ctx->arena, &row, &view, err);
    if (rc != WF_OK)
        return rc;
    if (spec->dry_run) {
        *out = view;
        return WF_OK;
    }
    view.row.version = 1;
    start_op op = {&row};
    wf_store_ctx sc = store_ctx(ctx);
    rc = wf_uow_run(ctx->store, &sc, idem, start_body, &op, &view, err);
    if (rc == WF_OK)
        *out = view;
    return rc;
}

/* ---- GetBatchOperation, CancelBatchOperation, ListBatchOperations ----------- */

wf_code
wf_batch_get(const wf_ref_ctx *ctx, const char *id, wf_batch_view *out, wf_error *err)
{
    wf_code rc = wf_ids_check(ctx, WF_ID_BATCH, "id", id, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = store_ctx(ctx);
    wf_batch_row row;
    rc = wf_store_get_batch(ctx->store, &sc, id, &row, err);
    return rc != WF_OK ? rc : view_of(ctx->arena, &row, out, err);
}

wf_code
wf_batch_cancel(const wf_ref_ctx *ctx, const char *id, wf_uow_idem *idem, wf_batch_view *out,
                wf_error *err)
{
    wf_code rc = wf_ids_check(ctx, WF_ID_BATCH, "id", id, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = store_ctx(ctx);
    rc = wf_uow_idem_lookup(ctx->store, &sc, idem, err);
    if (rc != WF_OK || wf_uow_idem_replayed(idem))
        return rc;
    wf_batch_row row;
    for (int attempt = 0;; attempt++) {
        rc = wf_store_get_batch(ctx->store, &sc, id, &row, err);
        if (rc != WF_OK)
            return rc;
        if (row.state != WF_BATCH_RUNNING)
            return wf_error_set(err, WF_E_BATCH_OPERATION_NOT_RUNNING,
                                "batch operation \"%s\" has already ended (%s)", id,
                                row.state == WF_BATCH_COMPLETED ? "completed" : "cancelled");
        int64_t now = wf_now_us();
        row.state = WF_BATCH_CANCELLED;
        row.updated_at = now;
        row.ended_at = now;
        rc = wf_store_update_batch(ctx->store, &sc, &row, err);
        if (rc != WF_E_CONFLICT || attempt + 1 == UPDATE_TRIES)
            break;
        wf_error_clear(err); /* a chunk wrote its progress meanwhile: again */
    }
    if (rc != WF_OK)
        return rc;
    row.version++;
    wf_batch_view view;
    rc = view_of(ctx->arena, &row, &view, err);
    if (rc == WF_OK)
        rc = wf_uow_idem_record(ctx->store, &sc, idem, &view, err);
    if (rc == WF_OK)
        *out = view;
    return rc;
}

wf_code
wf_batch_list(const wf_ref_ctx *ctx, int32_t page_size, const char *cursor, wf_batch_view **rows,
              size_t *n, char **next_cursor, wf_error *err)
{
    if (page_size < 0)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "page_size must not be negative");
    size_t size = page_size == 0 ? 50 : page_size > 500 ? 500 : (size_t)page_size;
    wf_store_ctx sc = store_ctx(ctx);
    wf_batch_row *r = NULL;
    size_t k = 0;
    char *next = NULL;
    wf_code rc = wf_store_list_batches(ctx->store, &sc, size, empty(cursor) ? NULL : cursor, &r, &k,
                                       &next, err);
    if (rc != WF_OK)
        return rc;
    wf_batch_view *v = wf_arena_calloc(ctx->arena, k + 1, sizeof *v);
    if (v == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < k; i++) {
        rc = view_of(ctx->arena, &r[i], &v[i], err);
        if (rc != WF_OK)
            return rc;
    }
    *rows = v;
    *n = k;
    *next_cursor = next;
    return WF_OK;
}

/* ---- the chunks --------------------------------------------------------------- */

/* Applies the batch's action to one instance, as the RPC of that action
 * would with request id "batch:<batch id>:<instance id>". */
static wf_code
apply(const wf_runtime_ctx *ctx, const wf_batch_row *b, const char *instance_id, wf_error *err)
{
    const char *method = action_method(b->action);
    if (method == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "batch operation \"%s\" has an unknown action",
                            b->id);
    /* The request records hold no answer: a replay only says that the
     * action was applied. */
    wf_uow_idem idem = wf_uow_idem_internal(
        method, wf_arena_printf(ctx->ref.arena, "batch:%s:%s", b->id, instance_id),
        wf_arena_printf(ctx->ref.arena, "batch:%s", b->id));
    if (idem.request_id == NULL || idem.request_hash == NULL)
        return wf_error_nomem(err);
    wf_instance_row out;
    switch (b->action) {
    case WF_BATCH_CANCEL:
        return wf_instances_cancel(ctx, instance_id, b->reason, false, &idem, &out, err);
    case WF_BATCH_RETRY:
        return wf_runtime_retry_instance(ctx, instance_id, &idem, &out, err);
    case WF_BATCH_SUSPEND:
        return wf_runtime_suspend_instance(ctx, instance_id, b->reason, &idem, &out, err);
    case WF_BATCH_RESUME:
        return wf_runtime_resume_instance(ctx, instance_id, b->reason, &idem, &out, err);
    case WF_BATCH_MIGRATE: {
        wf_batch_view args;
        wf_code rc = args_load(ctx->ref.arena, b->args_json, &args, err);
        if (rc != WF_OK)
            return rc;
        wf_runtime_migrate_in in = {.instance_id = instance_id,
                                    .target_version = args.target_version,
                                    .mapping = args.mapping,
                                    .n_mapping = args.n_mapping};
        wf_runtime_migration plan;
        return wf_runtime_migrate_instance(ctx, &in, &idem, &plan, err);
    }
    }
    return WF_E_INTERNAL; /* not reached: action_method knows every action */
}

/* Failures that say nothing about the instance: the chunk stops and runs
 * again later. Anything else (INTERNAL included) is the instance's
 * refusal, so that one instance cannot hold the batch up for ever. */
static bool
transient(wf_code rc)
{
    return wf_code_is_retryable(rc) || rc == WF_E_DEADLINE_EXCEEDED || rc == WF_E_NOMEM;
}

/* Equal strings, NULL equal to NULL only. */
static bool
same(const char *a, const char *b)
{
    return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

static bool
past(int64_t deadline_ms)
{
    return deadline_ms != 0 && wf_mono_ms() >= deadline_ms;
}

/* Writes next (the claimed row with the chunk's progress); when the row
 * changed meanwhile, keeps the progress only if it was cancelled while
 * this chunk ran (same cursor, same holder): the chunk's actions did
 * happen. *kept: the progress is stored. */
static wf_code
write_progress(wf_store *st, const wf_store_ctx *sc, const wf_batch_row *claimed,
               wf_batch_row *next, const wf_batch_chunk *c, const wf_batch_failure *fails,
               size_t n_fails, bool *kept, wf_error *err)
{
    *kept = false;
    wf_code rc = wf_store_update_batch(st, sc, next, err);
    if (rc != WF_E_CONFLICT) {
        *kept = rc == WF_OK;
        return rc;
    }
    wf_error_clear(err);
    wf_batch_row cur;
    rc = wf_store_get_batch(st, sc, claimed->id, &cur, err);
    if (rc != WF_OK)
        return rc;
    if (cur.state != WF_BATCH_CANCELLED || !same(cur.cursor, claimed->cursor) ||
        !same(cur.lease_owner, claimed->lease_owner) || cur.done != claimed->done ||
        cur.failed != claimed->failed)
        return WF_OK; /* another holder runs (or ran) these instances */
    cur.done += (int64_t)c->applied;
    cur.failed += (int64_t)c->refused;
    cur.cursor = next->cursor;
    cur.errors_json = errors_append(sc->arena, cur.errors_json, fails, n_fails);
    cur.lease_owner = NULL;
    cur.updated_at = next->updated_at;
    if (cur.errors_json == NULL)
        return wf_error_nomem(err);
    rc = wf_store_update_batch(st, sc, &cur, err);
    if (rc == WF_E_CONFLICT) {
        wf_error_clear(err);
        return WF_OK;
    }
    *kept = rc == WF_OK;
    return rc;
}

/* Lets the lease of claimed go without progress, so that the next claim
 * runs the chunk again at once. A failure here only means the lease runs
 * out by itself. It has a deadline of its own: the chunk's may be what
 * stopped it. */
static void
let_go(wf_store *st, const wf_store_ctx *chunk_ctx, const wf_batch_row *claimed)
{
    wf_store_ctx own = *chunk_ctx;
    own.deadline_ms = wf_mono_ms() + LET_GO_MS;
    const wf_store_ctx *sc = &own;
    wf_batch_row r = *claimed;
    r.lease_owner = NULL;
    r.lease_until = wf_now_us();
    wf_error e;
    wf_error_clear(&e);
    (void)wf_store_update_batch(st, sc, &r, &e);
}

wf_code
wf_batch_run_chunk(const wf_batch_host *h, const wf_batch_row *claimed, int64_t deadline_ms,
                   wf_batch_chunk *out, wf_error *err)
{
    memset(out, 0, sizeof *out);
    wf_arena *a = wf_arena_new();
    if (a == NULL)
        return wf_error_nomem(err);
    size_t chunk = h->chunk == 0          ? WF_BATCH_CHUNK_DEFAULT
                   : h->chunk > CHUNK_MAX ? CHUNK_MAX
                                          : h->chunk;
    wf_runtime_ctx nc = {
        .ref =
            {
                .store = h->store,
                .dir = h->dir,
                .tenant = claimed->tenant,
                .actor = claimed->created_by,
                .deadline_ms = deadline_ms,
                .arena = a,
                .max_variables_bytes = h->max_variables_bytes,
            },
        .wake = h->wake,
        .wake_arg = h->wake_arg,
    };
    wf_store_ctx sc = store_ctx(&nc.ref);
    wf_ref_instance_query q;
    wf_code rc = filter_load(a, claimed->filter_json, &q, err);
    wf_ref_instance_query walk = bounded(&q, claimed->created_at);
    walk.page_size = (int32_t)chunk;
    walk.cursor = claimed->cursor;
    wf_instance_row *rows = NULL;
    size_t n = 0;
    char *next = NULL;
    if (rc == WF_OK && !bounded_empty(&walk))
        rc = wf_referral_list_instances(&nc.ref, &walk, &rows, &n, &next, err);
    wf_batch_failure *fails = wf_arena_calloc(a, WF_BATCH_MAX_ERRORS + 1, sizeof *fails);
    size_t n_fails = 0;
    if (rc == WF_OK && fails == NULL)
        rc = wf_error_nomem(err);
    for (size_t i = 0; rc == WF_OK && i < n; i++) {
        if (past(deadline_ms)) {
            rc = wf_error_set(err, WF_E_DEADLINE_EXCEEDED, "the chunk ran out of time");
            break;
        }
        wf_error e;
        wf_error_clear(&e);
        wf_code arc = apply(&nc, claimed, rows[i].id, &e);
        if (arc == WF_OK) {
            out->applied++;
        } else if (transient(arc)) {
            *err = e;
            rc = arc;
        } else {
            out->refused++;
            if (n_fails < WF_BATCH_MAX_ERRORS)
                fails[n_fails++] =
                    (wf_batch_failure){rows[i].id, wf_code_reason(arc), wf_arena_strdup(a, e.msg)};
        }
    }
    if (rc != WF_OK) {
        /* Nothing of this chunk is kept: run again, its applied actions
         * replay. */
        let_go(h->store, &sc, claimed);
        memset(out, 0, sizeof *out);
        wf_arena_free(a);
        return rc;
    }
    int64_t now = wf_now_us();
    wf_batch_row upd = *claimed;
    upd.done += (int64_t)out->applied;
    upd.failed += (int64_t)out->refused;
    upd.cursor = next;
    upd.errors_json = errors_append(a, claimed->errors_json, fails, n_fails);
    upd.lease_owner = NULL;
    upd.lease_until = now; /* behind those that waited longer */
    upd.updated_at = now;
    if (next == NULL) {
        upd.state = WF_BATCH_COMPLETED;
        upd.ended_at = now;
        out->completed = true;
    }
    if (upd.errors_json == NULL)
        rc = wf_error_nomem(err);
    if (rc == WF_OK)
        rc = write_progress(h->store, &sc, claimed, &upd, out, fails, n_fails, &out->kept, err);
    if (!out->kept)
        out->completed = false;
    wf_arena_free(a);
    return rc;
}

wf_code
wf_batch_pass(const wf_batch_host *h, const char *tenant, const char *owner, size_t limit,
              int64_t deadline_ms, size_t *chunks, wf_error *err)
{
    *chunks = 0;
    wf_arena *a = wf_arena_new();
    if (a == NULL)
        return wf_error_nomem(err);
    int64_t lease_ms = h->lease_ms > 0 ? h->lease_ms : WF_BATCH_LEASE_MS_DEFAULT;
    wf_store_ctx sc = {tenant, deadline_ms, a};
    wf_batch_row *rows = NULL;
    size_t n = 0;
    wf_code rc =
        wf_store_claim_batches(h->store, &sc, owner, wf_now_us(), lease_ms, limit, &rows, &n, err);
    for (size_t i = 0; rc == WF_OK && i < n; i++) {
        wf_batch_chunk c;
        wf_error e;
        wf_error_clear(&e);
        wf_code crc = wf_batch_run_chunk(h, &rows[i], deadline_ms, &c, &e);
        if (crc == WF_OK && c.kept)
            (*chunks)++;
        if (crc == WF_E_STORE_UNAVAILABLE) {
            *err = e;
            rc = crc;
        }
    }
    wf_arena_free(a);
    return rc;
}
