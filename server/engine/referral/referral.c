/*
 * referral: the mutations of TaskFlow's ad-hoc referral model (start,
 * AssignTo, claim, release, complete with the parallel join,
 * CompleteAndEnd, cancel).
 *
 * Each public function validates its input, then runs one unit of work
 * (uow.h) whose body locks the root, applies the rules to a working set
 * (referral_int.h) and writes the changed rows and their events with one
 * wf_tx_apply. Because the root lock serialises every mutation of a tree,
 * a join is evaluated by exactly one completion: the one that makes it
 * true, which also sets join_fired so it never runs again.
 *
 * Must not: include protobuf or grpc headers, or know response formats.
 */
#include "referral.h"

#include <jansson.h>
#include <string.h>

#include "vars.h"
#include "ids.h"
#include "referral_int.h"
#include "wf_id.h"
#include "wf_time.h"

/* ---- shared helpers ----------------------------------------------------------- */

static wf_code
need_actor(const wf_ref_ctx *ctx, wf_error *err)
{
    if (ctx->actor == NULL || ctx->actor[0] == '\0')
        return wf_error_set(err, WF_E_ACTOR_MISSING,
                            "x-actor-id is required: this call acts for a person");
    return WF_OK;
}

/* Ids are server-made UUIDs: anything else cannot exist, and is answered
 * NOT_FOUND without a store round trip (and without reaching a uuid column
 * that would call it a data error). */
static wf_code
check_instance_id(const char *id, wf_error *err)
{
    return wf_ids_check(NULL, WF_ID_INSTANCE, "instance_id", id, err);
}

static wf_code
check_task_id(const char *id, wf_error *err)
{
    return wf_ids_check(NULL, WF_ID_TASK, "task_id", id, err);
}

/* Locks the root of instance_id and starts a working set over it.
 * root_hint: see wf_tx_lock_root_hint. agg (NULL = not wanted) receives
 * the aggregate as locked. */
static wf_code
open_work(const wf_ref_ctx *ctx, wf_tx *tx, const char *instance_id, const char *root_hint,
          wf_work *w, wf_aggregate *agg, wf_error *err)
{
    wf_aggregate own;
    if (agg == NULL)
        agg = &own;
    wf_code rc = wf_tx_lock_root_hint(tx, instance_id, root_hint, agg, err);
    if (rc != WF_OK)
        return rc;
    return wf_work_init(w, ctx, agg, err);
}

static wf_code
write_work(wf_tx *tx, const wf_work *w, wf_error *err)
{
    wf_store_changes c;
    wf_code rc = wf_work_check_variables(w, err);
    if (rc != WF_OK)
        return rc;
    wf_work_changes(w, &c);
    return wf_tx_apply(tx, &c, err);
}

static const char *
kind_name(wf_assignee_kind k)
{
    return k == WF_ASSIGNEE_GROUP ? "GROUP" : "USER";
}

/* ---- StartInstance -------------------------------------------------------------- */

typedef struct start_op {
    const wf_ref_ctx *ctx;
    const wf_start_spec *spec;
    const char *vars; /* normalised */
    wf_instance_row *out;
} start_op;

/* The definition to start: the existing one, or a new AD_HOC version 1
 * for a key without any definition asked at version 0 (TaskFlow's Start),
 * unless auto-creation is off (wf_ref_ctx.no_auto_create). */
wf_code
wf_referral_start_definition(const wf_ref_ctx *ctx, wf_tx *tx, const wf_start_spec *s,
                             wf_definition_row *def, wf_error *err)
{
    bool found = false;
    wf_code rc = wf_tx_get_definition(tx, s->definition_key, s->version, def, &found, err);
    if (rc != WF_OK)
        return rc;
    if (!found && s->version != 0)
        return wf_error_set(err, WF_E_DEFINITION_NOT_FOUND, "definition \"%s\" has no version %d",
                            s->definition_key, (int)s->version);
    if (!found && ctx->no_auto_create)
        return wf_error_set(err, WF_E_DEFINITION_NOT_FOUND, "definition \"%s\" does not exist",
                            s->definition_key);
    if (!found) {
        wf_definition_row nd = {
            .key = (char *)s->definition_key,
            .kind = WF_DEF_AD_HOC,
            .name = (char *)s->definition_key,
            .created_at = wf_now_us(),
            .created_by = (char *)ctx->actor,
        };
        /* A concurrent creator (or deploy of another kind) makes this
         * WF_E_CONFLICT; the retried unit of work then finds its
         * definition. */
        int32_t version = 0;
        rc = wf_tx_put_definition(tx, &nd, &version, err);
        if (rc == WF_E_DEFINITION_KIND_CONFLICT)
            rc = wf_error_set(err, WF_E_CONFLICT, "definition \"%s\" was deployed concurrently",
                              s->definition_key);
        *def = nd;
        def->version = version;
        return rc;
    }
    return WF_OK;
}

static wf_code
start_root(start_op *op, wf_tx *tx, const wf_definition_row *def, wf_error *err)
{
    const wf_start_spec *s = op->spec;
    int32_t version = def->version;
    wf_work w;
    int64_t now = wf_now_us();
    if ((def->valid_from != 0 && now < def->valid_from) ||
        (def->valid_until != 0 && now >= def->valid_until))
        return wf_error_set(err, WF_E_DEFINITION_NOT_ACTIVE,
                            "definition \"%s\" version %d is outside its validity window", def->key,
                            (int)def->version);
    wf_code rc = wf_work_init(&w, op->ctx, NULL, err);
    if (rc != WF_OK)
        return rc;
    char *id = s->instance_id != NULL ? wf_work_strdup(&w, s->instance_id) : wf_id_new(w.arena);
    if (id == NULL)
        return wf_error_nomem(err);
    bool has_agg = s->aggregate_type != NULL && s->aggregate_type[0] != '\0';
    wf_instance_row root = {
        .id = id,
        .tenant = (char *)op->ctx->tenant,
        .definition_key = wf_work_strdup(&w, s->definition_key),
        .definition_version = version,
        .root_id = id,
        .status = WF_INSTANCE_RUNNING,
        .variables_json = (char *)op->vars,
        .aggregate_type = has_agg ? wf_work_strdup(&w, s->aggregate_type) : NULL,
        .aggregate_id = has_agg ? wf_work_strdup(&w, s->aggregate_id) : NULL,
        .started_by = wf_work_strdup(&w, op->ctx->actor),
        .created_at = w.now,
        .updated_at = w.now,
    };
    size_t i;
    rc = wf_work_add_instance(&w, &root, &i, err);
    if (rc == WF_OK)
        rc = wf_work_event(&w, i, "INSTANCE_STARTED",
                           json_pack("{s:s,s:i}", "definitionKey", root.definition_key,
                                     "definitionVersion", (int)version),
                           err);
    if (rc == WF_OK)
        rc = write_work(tx, &w, err);
    if (rc == WF_OK)
        *op->out = w.insts[i];
    return rc;
}

static bool
printable_key(const char *s, size_t max)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

static bool
printable_text(const char *s, size_t max)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

static wf_code
check_start(const wf_ref_ctx *ctx, const wf_start_spec *s, wf_error *err)
{
    bool has_type = s->aggregate_type != NULL && s->aggregate_type[0] != '\0';
    bool has_id = s->aggregate_id != NULL && s->aggregate_id[0] != '\0';
    if (!printable_key(s->definition_key, 128))
        return wf_work_invalid(ctx, "definition_key",
                               "must be 1 to 128 printable characters without spaces", err);
    if (s->version < 0)
        return wf_work_invalid(ctx, "version", "must not be negative", err);
    if (has_type != has_id)
        return wf_work_invalid(ctx, "aggregate", "needs both type and id, or neither", err);
    if (has_type && !printable_text(s->aggregate_type, 128))
        return wf_work_invalid(ctx, "aggregate.type", "must be 1 to 128 printable characters", err);
    if (has_id && !printable_text(s->aggregate_id, 128))
        return wf_work_invalid(ctx, "aggregate.id", "must be 1 to 128 printable characters", err);
    return WF_OK;
}

wf_code
wf_referral_check_start(const wf_ref_ctx *ctx, const wf_start_spec *spec, const char **vars,
                        wf_error *err)
{
    wf_code rc = need_actor(ctx, err);
    if (rc == WF_OK)
        rc = check_start(ctx, spec, err);
    if (rc == WF_OK)
        rc = wf_vars_object(ctx->arena, spec->variables_json, "variables_json", vars, err);
    return rc;
}

wf_code
wf_referral_start_root(const wf_ref_ctx *ctx, wf_tx *tx, const wf_start_spec *spec,
                       const char *vars, const wf_definition_row *def, wf_instance_row *out,
                       wf_error *err)
{
    start_op op = {.ctx = ctx, .spec = spec, .vars = vars, .out = out};
    return start_root(&op, tx, def, err);
}

/* ---- AssignTo --------------------------------------------------------------------- */

/* The AD_HOC definition key (latest version) a referral runs. */
static wf_code
referral_definition(wf_tx *tx, const char *key, int32_t *version, wf_error *err)
{
    wf_definition_row def;
    bool found = false;
    wf_code rc = wf_tx_get_definition(tx, key, 0, &def, &found, err);
    if (rc != WF_OK)
        return rc;
    if (!found)
        return wf_error_set(err, WF_E_DEFINITION_NOT_FOUND, "definition \"%s\" does not exist",
                            key);
    if (def.kind != WF_DEF_AD_HOC)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "definition \"%s\" is a %s definition; AssignTo needs an AD_HOC "
                            "definition",
                            key, def.kind == WF_DEF_STEPS ? "STEPS" : "NET");
    *version = def.version;
    return WF_OK;
}

/* The directory must know every assignee (static directories only). */
static wf_code
check_assignees(const wf_work *w, const wf_assign_spec *s, wf_error *err)
{
    const wf_directory *dir = w->ctx->dir;
    for (size_t i = 0; i < s->n_ids; i++) {
        if (s->kind == WF_REF_ASSIGNEE_GROUP && !wf_directory_has_group(dir, s->ids[i]))
            return wf_error_set(err, WF_E_EMPTY_GROUP, "group \"%s\" has no members", s->ids[i]);
        if (s->kind != WF_REF_ASSIGNEE_GROUP && !wf_directory_has_user(dir, s->ids[i]))
            return wf_error_set(err, WF_E_INVALID_ARGUMENT, "user \"%s\" is not in the directory",
                                s->ids[i]);
    }
    return WF_OK;
}

/* What can be checked of the on_all_completed chain now, so a bad next
 * step fails the AssignTo rather than a later CompleteTask: assignees,
 * explicit definitions, explicit parents (which must be in this tree). */
static wf_code
precheck_chain(const wf_work *w, wf_tx *tx, const wf_assign_spec *s, wf_error *err)
{
    wf_code rc = WF_OK;
    for (; rc == WF_OK && s != NULL; s = s->next) {
        int32_t version;
        rc = check_assignees(w, s, err);
        if (rc == WF_OK && s->definition_key != NULL && s->definition_key[0] != '\0')
            rc = referral_definition(tx, s->definition_key, &version, err);
        if (rc == WF_OK && s->parent_id != NULL && s->parent_id[0] != '\0' &&
            wf_work_find_instance(w, s->parent_id) == WF_WORK_NONE)
            rc = wf_error_set(err, WF_E_INVALID_ARGUMENT,
                              "on_all_completed.parent_instance_id \"%.64s\" is not an instance "
                              "of this process tree",
                              s->parent_id);
    }
    return rc;
}

static wf_code
add_referral_task(wf_work *w, size_t child, const wf_assign_spec *s, const char *assignee,
                  const char *by, size_t *index, wf_error *err)
{
    const wf_instance_row *c = &w->insts[child];
    wf_task_row t = {
        .id = wf_id_new(w->arena),
        .tenant = (char *)w->ctx->tenant,
        .instance_id = c->id,
        .root_id = c->root_id,
        .definition_key = c->definition_key,
        .title = wf_work_strdup(w, s->title),
        .assignee_kind = s->kind == WF_REF_ASSIGNEE_GROUP ? WF_ASSIGNEE_GROUP : WF_ASSIGNEE_USER,
        .assignee_id = wf_work_strdup(w, assignee),
        .assigned_by = (char *)by,
        .status = WF_TASK_OPEN,
        .created_at = w->now,
        .priority = s->has_priority ? s->priority : WF_TASK_PRIORITY_DEFAULT,
        .due_at = s->due_at,
        .due_fixed = s->due_at != 0,
        .follow_up_at = s->follow_up_at,
    };
    if (t.id == NULL || t.title == NULL || t.assignee_id == NULL)
        return wf_error_nomem(err);
    wf_code rc = wf_work_add_task(w, &t, index, err);
    if (rc != WF_OK)
        return rc;
    return wf_work_event(w, child, "TASK_CREATED",
                         json_pack("{s:s,s:s,s:s}", "taskId", t.id, "assigneeKind",
                                   kind_name(t.assignee_kind), "assigneeId", t.assignee_id),
                         err);
}

/* Builds the child row of a referral under parent p. */
static wf_code
make_child(wf_work *w, const wf_assign_spec *s, size_t p, const char *key, int32_t version,
           const char *by, wf_instance_row *out, wf_error *err)
{
    const char *vars;
    wf_code rc = wf_vars_object(w->arena, s->variables_json, "variables_json", &vars, err);
    if (rc != WF_OK)
        return rc;
    const wf_instance_row *parent = &w->insts[p];
    *out = (wf_instance_row){
        .id = wf_id_new(w->arena),
        .tenant = (char *)w->ctx->tenant,
        .definition_key = wf_work_strdup(w, key),
        .definition_version = version,
        .parent_id = parent->id,
        .root_id = parent->root_id,
        .status = WF_INSTANCE_RUNNING,
        .variables_json = (char *)vars,
        .started_by = (char *)by,
        .title = wf_work_strdup(w, s->title),
        /* An unset join reads as ALL: the referral completes when all its
         * tasks are done, with or without a next step. */
        .join_mode = s->join_mode == WF_JOIN_NONE ? WF_JOIN_ALL : s->join_mode,
        .join_quorum = s->join_mode == WF_JOIN_QUORUM ? s->join_quorum : 0,
        .created_at = w->now,
        .updated_at = w->now,
    };
    if (out->id == NULL)
        return wf_error_nomem(err);
    if (s->next != NULL)
        rc = wf_referral_spec_encode(w->arena, s->next, by, &out->on_all_completed,
                                     &out->on_all_completed_len, err);
    return rc;
}

/* The spec to run: s itself, or, with an ids_expression, s with the ids
 * the expression gives over the parent's variables merged with the
 * request's variables_json. The referral's own variables stay the
 * request's alone; its assignees are chosen in the context it is created
 * in, which is the parent's (a root's business data, an earlier step's
 * output). A spec run by a join reports no field violations: the
 * CompleteTask that fired it has no such field. */
static wf_code
resolve_ids(wf_work *w, const wf_assign_spec *s, size_t p, bool joined, wf_assign_spec *out,
            wf_error *err)
{
    if (s->ids_expression == NULL || s->ids_expression[0] == '\0') {
        *out = *s;
        return WF_OK;
    }
    const char *vars;
    wf_code rc = wf_vars_merge(w->arena, w->insts[p].variables_json, s->variables_json, &vars, err);
    if (rc != WF_OK)
        return rc;
    wf_ref_ctx quiet = *w->ctx;
    quiet.violation = NULL;
    rc = wf_referral_spec_resolve(joined ? &quiet : w->ctx, s, vars, out, err);
    if (rc != WF_OK && joined) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return wf_error_set(err, rc, "on_all_completed \"%.64s\": %s", s->title, msg);
    }
    return rc;
}

wf_code
wf_referral__assign(wf_work *w, const wf_assign_spec *s, wf_tx *tx, const char *default_parent,
                    bool joined, wf_ref_assignment *out, wf_error *err)
{
    const char *parent_id =
        s->parent_id != NULL && s->parent_id[0] != '\0' ? s->parent_id : default_parent;
    const char *by = s->assigned_by != NULL ? s->assigned_by : w->ctx->actor;
    size_t p = wf_work_find_instance(w, parent_id);
    if (p == WF_WORK_NONE)
        return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%.64s\" does not exist",
                            parent_id != NULL ? parent_id : "");
    wf_code rc = wf_work_check_not_suspended(w, p, err);
    if (rc != WF_OK)
        return rc;
    if (w->insts[p].status != WF_INSTANCE_RUNNING)
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" is not running",
                            parent_id);
    const char *key = s->definition_key != NULL && s->definition_key[0] != '\0'
                          ? s->definition_key
                          : w->insts[p].definition_key;
    int32_t version = 0;
    wf_instance_row child;
    wf_assign_spec r; /* s with its ids resolved */
    size_t c;
    rc = referral_definition(tx, key, &version, err);
    if (rc == WF_OK)
        rc = resolve_ids(w, s, p, joined, &r, err);
    if (rc == WF_OK)
        rc = check_assignees(w, &r, err);
    if (rc == WF_OK)
        rc = precheck_chain(w, tx, s->next, err);
    if (rc == WF_OK)
        rc = make_child(w, &r, p, key, version, by, &child, err);
    if (rc == WF_OK)
        rc = wf_work_add_instance(w, &child, &c, err);
    if (rc == WF_OK)
        rc = wf_work_event(w, c, "INSTANCE_STARTED",
                           json_pack("{s:s,s:i,s:s}", "definitionKey", key, "definitionVersion",
                                     (int)version, "parentInstanceId", w->insts[p].id),
                           err);
    if (rc != WF_OK)
        return rc;
    size_t first = w->n_tasks;
    for (size_t i = 0; rc == WF_OK && i < r.n_ids; i++) {
        size_t t;
        rc = add_referral_task(w, c, &r, r.ids[i], by, &t, err);
    }
    if (rc != WF_OK)
        return rc;
    out->instance = w->insts[c];
    out->n_tasks = w->n_tasks - first;
    out->tasks = wf_arena_calloc(w->arena, out->n_tasks + 1, sizeof *out->tasks);
    if (out->tasks == NULL)
        return wf_error_nomem(err);
    memcpy(out->tasks, &w->tasks[first], out->n_tasks * sizeof *out->tasks);
    return WF_OK;
}

typedef struct assign_op {
    const wf_ref_ctx *ctx;
    const wf_assign_spec *spec;
    wf_ref_assignment *out;
} assign_op;

static wf_code
assign_body(wf_tx *tx, void *arg, wf_error *err)
{
    assign_op *op = arg;
    wf_work w;
    wf_code rc = open_work(op->ctx, tx, op->spec->parent_id, NULL, &w, NULL, err);
    if (rc == WF_OK)
        rc = wf_referral__assign(&w, op->spec, tx, NULL, false, op->out, err);
    if (rc == WF_OK)
        rc = write_work(tx, &w, err);
    return rc;
}

wf_code
wf_referral_assign(const wf_ref_ctx *ctx, const wf_assign_spec *spec, wf_uow_idem *idem,
                   wf_ref_assignment *out, wf_error *err)
{
    assign_op op = {ctx, spec, out};
    wf_code rc = need_actor(ctx, err);
    if (rc == WF_OK)
        rc = wf_referral_spec_validate(ctx, spec, false, err);
    if (rc == WF_OK)
        rc = check_instance_id(spec->parent_id, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_uow_run(ctx->store, &sc, idem, assign_body, &op, out, err);
}

/* ---- task operations ---------------------------------------------------------------- */

/* One task operation: where the task is and what the rules decided. */
typedef struct task_op {
    const wf_ref_ctx *ctx;
    const char *task_id;
    const char *instance_id; /* of the task, read before the transaction */
    const char *root_id;     /* of the task, likewise */
    wf_task_op op;
    const char *patch; /* CompleteTask / CompleteAndEnd output variables */
    void *out;
} task_op;

/* Finds the task's instance (which never changes) before the unit of
 * work, since the lock is taken by instance. */
wf_code
wf_referral_locate_task(const wf_ref_ctx *ctx, const char *task_id, wf_ref_task_at *out,
                        wf_error *err)
{
    wf_code rc = need_actor(ctx, err);
    if (rc == WF_OK)
        rc = check_task_id(task_id, err);
    if (rc != WF_OK)
        return rc;
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    wf_task_row t;
    rc = wf_store_get_task(ctx->store, &sc, task_id, &t, err);
    if (rc == WF_OK) {
        out->task_id = task_id;
        out->instance_id = t.instance_id;
        out->root_id = t.root_id;
        out->transition_id = t.transition_id;
        out->delegation = t.delegation;
    }
    return rc;
}

/* Locks the tree of the task and applies the permission rules of op.
 * *t and *i are the task's and its instance's indexes. */
static wf_code
open_task(task_op *op, wf_tx *tx, wf_work *w, size_t *t, size_t *i, wf_aggregate *agg,
          wf_error *err)
{
    const wf_ref_ctx *ctx = op->ctx;
    wf_code rc = open_work(ctx, tx, op->instance_id, op->root_id, w, agg, err);
    if (rc != WF_OK)
        return rc;
    *t = wf_work_find_task(w, op->task_id);
    *i = *t != WF_WORK_NONE ? wf_work_find_instance(w, w->tasks[*t].instance_id) : WF_WORK_NONE;
    if (*t == WF_WORK_NONE || *i == WF_WORK_NONE)
        return wf_error_set(err, WF_E_TASK_NOT_FOUND, "task \"%s\" does not exist", op->task_id);
    const wf_task_row *task = &w->tasks[*t];
    bool member =
        task->assignee_kind == WF_ASSIGNEE_GROUP &&
        wf_referral_actor_in_group(ctx->dir, ctx->actor, ctx->actor_groups, task->assignee_id);
    rc = wf_referral_check_task_op(task, op->op, ctx->actor, member, err);
    if (rc == WF_OK)
        rc = wf_work_check_not_suspended(w, *i, err);
    if (rc != WF_OK)
        return rc;
    if (w->insts[*i].status != WF_INSTANCE_RUNNING)
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" is not running",
                            w->insts[*i].id);
    /* Claim and release of a net task follow the referral rules; its
     * completion and CompleteAndEnd are the net runtime's (run_task_op). */
    return WF_OK;
}

static wf_code
claim_body(wf_tx *tx, void *arg, wf_error *err)
{
    task_op *op = arg;
    wf_work w;
    size_t t, i;
    wf_code rc = open_task(op, tx, &w, &t, &i, NULL, err);
    if (rc != WF_OK)
        return rc;
    wf_task_row *task = &w.tasks[t];
    if (task->status == WF_TASK_OPEN) {
        task->status = WF_TASK_CLAIMED;
        task->claimed_by = wf_work_strdup(&w, op->ctx->actor);
        wf_work_touch_task(&w, t);
        wf_work_touch_instance(&w, i);
        rc = wf_work_event(
            &w, i, "TASK_CLAIMED",
            json_pack("{s:s,s:s}", "taskId", task->id, "claimedBy", task->claimed_by), err);
        if (rc == WF_OK)
            rc = write_work(tx, &w, err);
    }
    if (rc == WF_OK)
        *(wf_task_row *)op->out = w.tasks[t];
    return rc;
}

static wf_code
release_body(wf_tx *tx, void *arg, wf_error *err)
{
    task_op *op = arg;
    wf_work w;
    size_t t, i;
    wf_code rc = open_task(op, tx, &w, &t, &i, NULL, err);
    if (rc != WF_OK)
        return rc;
    wf_task_row *task = &w.tasks[t];
    task->status = WF_TASK_OPEN;
    task->claimed_by = NULL;
    wf_work_touch_task(&w, t);
    wf_work_touch_instance(&w, i);
    rc = wf_work_event(&w, i, "TASK_RELEASED", json_pack("{s:s}", "taskId", task->id), err);
    if (rc == WF_OK)
        rc = write_work(tx, &w, err);
    if (rc == WF_OK)
        *(wf_task_row *)op->out = w.tasks[t];
    return rc;
}

wf_code
wf_referral__open_task(const wf_ref_ctx *ctx, wf_tx *tx, const wf_ref_task_at *at, wf_task_op op,
                       wf_work *w, size_t *t, size_t *i, wf_aggregate *agg, wf_error *err)
{
    task_op o = {.ctx = ctx,
                 .task_id = at->task_id,
                 .instance_id = at->instance_id,
                 .root_id = at->root_id,
                 .op = op};
    return open_task(&o, tx, w, t, i, agg, err);
}

wf_code
wf_referral__write_work(wf_tx *tx, const wf_work *w, const wf_work_item_row *item, wf_error *err)
{
    if (item == NULL)
        return write_work(tx, w, err);
    wf_store_changes c;
    wf_code rc = wf_work_check_variables(w, err);
    if (rc != WF_OK)
        return rc;
    wf_work_changes(w, &c);
    c.work_items = item;
    c.n_work_items = 1;
    return wf_tx_apply(tx, &c, err);
}

static wf_code
run_located(const wf_ref_ctx *ctx, task_op *op, wf_uow_body_fn body, wf_uow_idem *idem,
            wf_error *err)
{
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_uow_run(ctx->store, &sc, idem, body, op, op->out, err);
}

static wf_code
run_task_op(const wf_ref_ctx *ctx, task_op *op, wf_uow_body_fn body, wf_uow_idem *idem,
            wf_error *err)
{
    wf_ref_task_at at;
    wf_code rc = wf_referral_locate_task(ctx, op->task_id, &at, err);
    if (rc != WF_OK)
        return rc;
    op->instance_id = at.instance_id;
    op->root_id = at.root_id;
    return run_located(ctx, op, body, idem, err);
}

wf_code
wf_referral_claim(const wf_ref_ctx *ctx, const char *task_id, wf_uow_idem *idem, wf_task_row *out,
                  wf_error *err)
{
    task_op op = {.ctx = ctx, .task_id = task_id, .op = WF_TASK_OP_CLAIM, .out = out};
    return run_task_op(ctx, &op, claim_body, idem, err);
}

wf_code
wf_referral_release(const wf_ref_ctx *ctx, const char *task_id, wf_uow_idem *idem, wf_task_row *out,
                    wf_error *err)
{
    task_op op = {.ctx = ctx, .task_id = task_id, .op = WF_TASK_OP_RELEASE, .out = out};
    return run_task_op(ctx, &op, release_body, idem, err);
}

wf_code
wf_referral_done_task(wf_work *w, size_t t, size_t i, const char *patch, wf_error *err)
{
    wf_task_row *task = &w->tasks[t];
    wf_instance_row *in = &w->insts[i];
    const char *merged;
    wf_code rc = wf_vars_merge(w->arena, in->variables_json, patch, &merged, err);
    if (rc != WF_OK)
        return rc;
    in->variables_json = (char *)merged;
    wf_work_touch_instance(w, i);
    task->status = WF_TASK_DONE;
    task->completed_by = wf_work_strdup(w, w->ctx->actor);
    task->ended_at = w->now;
    wf_work_touch_task(w, t);
    return wf_work_event(w, i, "TASK_COMPLETED",
                         json_pack("{s:s,s:s,s:s*}", "taskId", task->id, "completedBy",
                                   task->completed_by, "transitionId", task->transition_id),
                         err);
}

static bool
pending(const wf_task_row *t)
{
    return t->status == WF_TASK_OPEN || t->status == WF_TASK_CLAIMED;
}

/* Where the next step of a join goes by default: under the nearest ancestor
 * of the joined referral that is still running — normally its parent; a
 * parent that has already completed (its own join fired first) hands the
 * step up towards the root. NULL when nothing above is running. */
static const char *
running_ancestor(wf_work *w, size_t c)
{
    const char *id = w->insts[c].parent_id;
    while (id != NULL) {
        size_t p = wf_work_find_instance(w, id);
        if (p == WF_WORK_NONE)
            return NULL;
        if (w->insts[p].status == WF_INSTANCE_RUNNING)
            return id;
        id = w->insts[p].parent_id;
    }
    return NULL;
}

/* Fires the join of referral c when it is met: cancels what ANY/QUORUM
 * leave over, completes the referral, marks the join fired and runs the
 * next AssignTo. *next stays NULL when nothing ran. */
static wf_code
fire_join(wf_work *w, wf_tx *tx, size_t c, wf_ref_assignment **next, wf_error *err)
{
    wf_instance_row *in = &w->insts[c];
    wf_ref_counts counts;
    if (in->parent_id == NULL || in->join_fired || in->status != WF_INSTANCE_RUNNING)
        return WF_OK;
    wf_referral_count(w->tasks, w->n_tasks, in->id, &counts);
    if (!wf_referral_join_met(in->join_mode, in->join_quorum, &counts))
        return WF_OK;
    wf_code rc = WF_OK;
    for (size_t t = 0; rc == WF_OK && t < w->n_tasks; t++)
        if (strcmp(w->tasks[t].instance_id, in->id) == 0 && pending(&w->tasks[t]))
            rc = wf_referral_cancel_task(w, t, err);
    if (rc == WF_OK)
        rc = wf_referral_finish_instance(w, c, WF_INSTANCE_COMPLETED, NULL, err);
    if (rc != WF_OK)
        return rc;
    in = &w->insts[c];
    in->join_fired = true;
    if (in->on_all_completed == NULL || in->on_all_completed_len == 0)
        return WF_OK;
    wf_assign_spec *spec;
    rc = wf_referral_spec_decode(w->arena, in->on_all_completed, in->on_all_completed_len, &spec,
                                 err);
    if (rc != WF_OK)
        return rc;
    *next = wf_arena_calloc(w->arena, 1, sizeof **next);
    if (*next == NULL)
        return wf_error_nomem(err);
    /* "" as parent: see running_ancestor. */
    return wf_referral__assign(w, spec, tx, running_ancestor(w, c), true, *next, err);
}

static wf_code
complete_body(wf_tx *tx, void *arg, wf_error *err)
{
    task_op *op = arg;
    wf_ref_completion *out = op->out;
    wf_work w;
    size_t t, i;
    out->next = NULL;
    wf_code rc = open_task(op, tx, &w, &t, &i, NULL, err);
    if (rc == WF_OK)
        rc = wf_referral_done_task(&w, t, i, op->patch, err);
    if (rc == WF_OK)
        rc = fire_join(&w, tx, i, &out->next, err);
    if (rc == WF_OK)
        rc = write_work(tx, &w, err);
    if (rc != WF_OK)
        return rc;
    out->task = w.tasks[t];
    wf_referral_count(w.tasks, w.n_tasks, out->task.instance_id, &out->counts);
    return WF_OK;
}

wf_code
wf_referral_complete_at(const wf_ref_ctx *ctx, const wf_ref_task_at *at, const char *patch,
                        wf_uow_idem *idem, wf_ref_completion *out, wf_error *err)
{
    task_op op = {.ctx = ctx,
                  .task_id = at->task_id,
                  .instance_id = at->instance_id,
                  .root_id = at->root_id,
                  .op = WF_TASK_OP_COMPLETE,
                  .patch = patch,
                  .out = out};
    return run_located(ctx, &op, complete_body, idem, err);
}

/* ---- CompleteAndEnd ---------------------------------------------------------------- */

wf_code
wf_referral_cancel_pending_except(wf_work *w, size_t keep, wf_ref_end *out, wf_error *err)
{
    wf_code rc = WF_OK;
    out->cancelled = wf_arena_calloc(w->arena, w->n_tasks + 1, sizeof *out->cancelled);
    if (out->cancelled == NULL)
        return wf_error_nomem(err);
    for (size_t t = 0; rc == WF_OK && t < w->n_tasks; t++) {
        if (t == keep || !pending(&w->tasks[t]))
            continue;
        rc = wf_referral_cancel_task(w, t, err);
        out->cancelled[out->n_cancelled++] = w->tasks[t];
    }
    return rc;
}

wf_code
wf_referral_complete_tree(wf_work *w, size_t root, wf_error *err)
{
    wf_code rc = WF_OK;
    /* Descendants first, the root last: the root's INSTANCE_COMPLETED is
     * the final event of the process. */
    for (size_t k = 0; rc == WF_OK && k < w->n_insts; k++)
        if (k != root && w->insts[k].status == WF_INSTANCE_RUNNING)
            rc = wf_referral_finish_instance(w, k, WF_INSTANCE_COMPLETED, NULL, err);
    if (rc == WF_OK)
        rc = wf_referral_finish_instance(w, root, WF_INSTANCE_COMPLETED, NULL, err);
    return rc;
}

static wf_code
end_body(wf_tx *tx, void *arg, wf_error *err)
{
    task_op *op = arg;
    wf_ref_end *out = op->out;
    wf_work w;
    size_t t, i;
    out->n_cancelled = 0;
    wf_code rc = open_task(op, tx, &w, &t, &i, NULL, err);
    if (rc != WF_OK)
        return rc;
    size_t root = wf_work_find_instance(&w, w.insts[i].root_id);
    if (root == WF_WORK_NONE || w.insts[root].status != WF_INSTANCE_RUNNING)
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" is not running",
                            w.insts[i].root_id);
    rc = wf_referral_done_task(&w, t, i, op->patch, err);
    if (rc == WF_OK)
        rc = wf_referral_cancel_pending_except(&w, t, out, err);
    if (rc == WF_OK)
        rc = wf_referral_complete_tree(&w, root, err);
    if (rc == WF_OK)
        rc = write_work(tx, &w, err);
    if (rc == WF_OK) {
        out->root = w.insts[root];
        out->task = w.tasks[t];
    }
    return rc;
}

wf_code
wf_referral_end_at(const wf_ref_ctx *ctx, const wf_ref_task_at *at, const char *patch,
                   wf_uow_idem *idem, wf_ref_end *out, wf_error *err)
{
    task_op op = {.ctx = ctx,
                  .task_id = at->task_id,
                  .instance_id = at->instance_id,
                  .root_id = at->root_id,
                  .op = WF_TASK_OP_COMPLETE,
                  .patch = patch,
                  .out = out};
    return run_located(ctx, &op, end_body, idem, err);
}

/* ---- CancelInstance -------------------------------------------------------------------- */

typedef struct cancel_op {
    const wf_ref_ctx *ctx;
    const char *instance_id;
    const char *reason;
    wf_instance_row *out;
} cancel_op;

/* A SUSPENDED tree can be cancelled, as a running one. */
static bool
cancellable(wf_instance_status s)
{
    return s == WF_INSTANCE_RUNNING || s == WF_INSTANCE_FAILED || s == WF_INSTANCE_SUSPENDED;
}

/* Removes the jobs, timers and signal subscriptions of the subtree of a
 * (net work that has no meaning once the instance is cancelled). */
static wf_code
drop_net_rows(wf_work *w, const wf_aggregate *agg, size_t a, wf_error *err)
{
    wf_code rc = WF_OK;
    for (size_t k = 0; rc == WF_OK && k < agg->n_jobs; k++)
        if (wf_work_in_subtree(w, wf_work_find_instance(w, agg->jobs[k].instance_id), a))
            rc = wf_work_del(w, &w->del_jobs, &w->n_del_jobs, agg->jobs[k].id, err);
    for (size_t k = 0; rc == WF_OK && k < agg->n_timers; k++)
        if (wf_work_in_subtree(w, wf_work_find_instance(w, agg->timers[k].instance_id), a))
            rc = wf_work_del(w, &w->del_timers, &w->n_del_timers, agg->timers[k].id, err);
    for (size_t k = 0; rc == WF_OK && k < agg->n_subscriptions; k++)
        if (wf_work_in_subtree(w, wf_work_find_instance(w, agg->subscriptions[k].instance_id), a))
            rc = wf_work_del(w, &w->del_subs, &w->n_del_subs, agg->subscriptions[k].id, err);
    return rc;
}

static wf_code
cancel_body(wf_tx *tx, void *arg, wf_error *err)
{
    cancel_op *op = arg;
    wf_aggregate agg;
    wf_work w;
    wf_code rc = wf_tx_lock_root(tx, op->instance_id, &agg, err);
    if (rc == WF_OK)
        rc = wf_work_init(&w, op->ctx, &agg, err);
    if (rc != WF_OK)
        return rc;
    size_t a = wf_work_find_instance(&w, op->instance_id);
    if (a == WF_WORK_NONE)
        return wf_error_set(err, WF_E_INSTANCE_NOT_FOUND, "instance \"%s\" does not exist",
                            op->instance_id);
    if (!cancellable(w.insts[a].status))
        return wf_error_set(err, WF_E_INSTANCE_NOT_RUNNING, "instance \"%s\" has already ended",
                            op->instance_id);
    for (size_t t = 0; rc == WF_OK && t < w.n_tasks; t++)
        if (pending(&w.tasks[t]) &&
            wf_work_in_subtree(&w, wf_work_find_instance(&w, w.tasks[t].instance_id), a))
            rc = wf_referral_cancel_task(&w, t, err);
    if (rc == WF_OK)
        rc = drop_net_rows(&w, &agg, a, err);
    /* Descendants (created after their parents) newest first, then a. */
    for (size_t k = w.n_insts; rc == WF_OK && k-- > 0;)
        if (k != a && cancellable(w.insts[k].status) && wf_work_in_subtree(&w, k, a))
            rc = wf_referral_finish_instance(&w, k, WF_INSTANCE_CANCELLED, op->reason, err);
    if (rc == WF_OK)
        rc = wf_referral_finish_instance(&w, a, WF_INSTANCE_CANCELLED, op->reason, err);
    if (rc == WF_OK)
        rc = write_work(tx, &w, err);
    if (rc == WF_OK)
        *op->out = w.insts[a];
    return rc;
}

wf_code
wf_referral_cancel(const wf_ref_ctx *ctx, const char *instance_id, const char *reason,
                   wf_uow_idem *idem, wf_instance_row *out, wf_error *err)
{
    cancel_op op = {ctx, instance_id, reason, out};
    wf_code rc = need_actor(ctx, err);
    if (rc == WF_OK)
        rc = check_instance_id(instance_id, err);
    if (rc != WF_OK)
        return rc;
    if (reason != NULL && strlen(reason) > 1024)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "reason must be at most 1024 bytes");
    wf_store_ctx sc = wf_work_store_ctx(ctx);
    return wf_uow_run(ctx->store, &sc, idem, cancel_body, &op, out, err);
}

/* ---- state changes every rule shares ------------------------------------------ */

wf_code
wf_referral_cancel_task(wf_work *w, size_t t, wf_error *err)
{
    wf_task_row *task = &w->tasks[t];
    task->status = WF_TASK_CANCELLED;
    task->ended_at = w->now;
    wf_work_touch_task(w, t);
    size_t i = wf_work_find_instance(w, task->instance_id);
    if (i == WF_WORK_NONE)
        return wf_error_set(err, WF_E_INTERNAL, "task \"%s\" has no instance", task->id);
    return wf_work_event(w, i, "TASK_CANCELLED", json_pack("{s:s}", "taskId", task->id), err);
}

wf_code
wf_referral_finish_instance(wf_work *w, size_t i, wf_instance_status status, const char *reason,
                            wf_error *err)
{
    wf_instance_row *in = &w->insts[i];
    in->status = status;
    in->ended_at = w->now;
    wf_work_touch_instance(w, i);
    if (status == WF_INSTANCE_CANCELLED)
        return wf_work_event(w, i, "INSTANCE_CANCELLED",
                             json_pack("{s:s}", "reason", reason != NULL ? reason : ""), err);
    return wf_work_event(w, i, "INSTANCE_COMPLETED", json_object(), err);
}
