/*
 * h_instances: StartInstance, GetInstance, ListInstances and
 * CancelInstance for ad-hoc (TaskFlow) trees; SetVariables, ModifyInstance,
 * MigrateInstance, RetryInstance, SuspendInstance, ResumeInstance; ListWorkItems.
 *
 * Translation only: the rules are in the engine: engine/instances.c
 * (referral or net), engine/referral/ (ad-hoc trees, the listing) and
 * engine/runtime/ (the net's instances; ListWorkItems is
 * engine/runtime/net_runtime_history.c).
 */
#include <string.h>

#include "await.h"
#include "h_common.h"
#include "handlers.h"
#include "signals.h"
#include "vars.h"

/* ---- StartInstance ------------------------------------------------------------------ */

static const wf_h_builder start_builder = {NULL,
                                           &workflow__v1__start_instance_response__descriptor};

/* await_result: the condition and timeout, and the names it uses against
 * the definition version the start will pick, before anything starts. */
static wf_code
start_await_check(wf_call *call, const Workflow__V1__StartInstanceRequest *req, void **wait,
                  wf_error *err)
{
    const Workflow__V1__AwaitResult *aw = req->await_result;
    wf_code rc = wf_h_await_parse(call, "await_result", aw->until, aw->timeout, wait, err);
    if (rc != WF_OK)
        return rc;
    wf_runtime_ctx nctx;
    wf_h_net_ctx(call, &nctx);
    return wf_await_check_definition(&nctx, req->definition_key, req->version,
                                     wf_h_await_until(*wait), err);
}

wf_code
h_start_instance(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__StartInstanceRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_uow_idem idem;
    wf_instance_row out;
    wf_h_ref_ctx(call, &ctx);
    wf_start_spec spec = {
        .definition_key = req->definition_key,
        .version = req->version,
        .variables_json = req->variables_json,
        .aggregate_type = req->aggregate != NULL ? req->aggregate->type : NULL,
        .aggregate_id = req->aggregate != NULL ? req->aggregate->id : NULL,
    };
    void *wait = NULL;
    wf_code rc = req->await_result != NULL ? start_await_check(call, req, &wait, err) : WF_OK;
    if (rc == WF_OK)
        rc = wf_h_idem(call, msg, req->request_id, &start_builder, &idem, err);
    if (rc == WF_OK)
        rc = wf_instances_start(&ctx, &spec, &idem, &out, err);
    rc = wf_h_respond(call, rc, &idem, &start_builder, &out, resp, err);
    if (rc == WF_OK && wait != NULL) {
        Workflow__V1__StartInstanceResponse *r = (void *)*resp;
        wf_h_await_park(call, wait, r->instance->id, *resp);
    }
    return rc;
}

/* ---- GetInstance ------------------------------------------------------------------- */

/* One JoinProgress of GetInstance: a referral's join or a net's USERS join. */
static Workflow__V1__JoinProgress *
join_progress(wf_arena *a, const wf_ref_join *in)
{
    Workflow__V1__JoinProgress *j = wf_arena_alloc(a, sizeof *j);
    if (j == NULL)
        return NULL;
    workflow__v1__join_progress__init(j);
    j->instance_id = (char *)in->instance_id;
    if (in->transition_id != NULL)
        j->transition_id = (char *)in->transition_id;
    j->mode = (Workflow__V1__CompletionMode)in->mode;
    j->quorum = in->quorum;
    j->required = in->required;
    j->done = in->done;
    j->total = in->total;
    return j;
}

static Workflow__V1__JoinProgress **
build_joins(wf_arena *a, const wf_ref_instance_view *v)
{
    Workflow__V1__JoinProgress **joins = wf_arena_calloc(a, v->n_joins + 1, sizeof *joins);
    for (size_t i = 0; joins != NULL && i < v->n_joins; i++)
        if ((joins[i] = join_progress(a, &v->joins[i])) == NULL)
            return NULL;
    return joins;
}

/* The for-each progress of a net instance (GetInstanceResponse.for_each). */
static wf_code
fill_for_each(wf_arena *a, const wf_runtime_view *nv, Workflow__V1__GetInstanceResponse *m)
{
    m->for_each = wf_arena_calloc(a, nv->n_for_each + 1, sizeof *m->for_each);
    if (m->for_each == NULL)
        return WF_E_INTERNAL;
    for (size_t i = 0; i < nv->n_for_each; i++) {
        const wf_runtime_foreach *f = &nv->for_each[i];
        Workflow__V1__ForEachProgress *p = wf_arena_alloc(a, sizeof *p);
        if (p == NULL)
            return WF_E_INTERNAL;
        workflow__v1__for_each_progress__init(p);
        p->transition_id = (char *)f->transition_id;
        p->work_item_id = (char *)f->work_item_id;
        p->total = f->total;
        p->completed = f->completed;
        p->mode = (Workflow__V1__CompletionMode)f->mode;
        p->quorum = f->quorum;
        p->required = f->required;
        p->sequential = f->sequential;
        m->for_each[m->n_for_each++] = p;
    }
    return WF_OK;
}

/* Marking, jobs, timers, awaited signals, USERS joins and current steps
 * of a net. */
/* GetInstanceResponse.calls of a net's view. */
static wf_code
fill_calls(wf_arena *a, const wf_runtime_view *nv, Workflow__V1__GetInstanceResponse *m)
{
    m->calls = wf_arena_calloc(a, nv->n_calls + 1, sizeof *m->calls);
    if (m->calls == NULL)
        return WF_E_INTERNAL;
    for (size_t i = 0; i < nv->n_calls; i++) {
        const wf_instance_row *c = nv->calls[i].child;
        Workflow__V1__InstanceCall *x = wf_arena_alloc(a, sizeof *x);
        if (x == NULL)
            return WF_E_INTERNAL;
        workflow__v1__instance_call__init(x);
        x->instance_id = c->id;
        x->transition_id = (char *)nv->calls[i].transition_id;
        x->definition_key = c->definition_key;
        x->definition_version = c->definition_version;
        x->status = (Workflow__V1__InstanceStatus)c->status;
        m->calls[m->n_calls++] = x;
    }
    return WF_OK;
}

static wf_code
fill_net_view(wf_arena *a, const wf_runtime_view *nv, Workflow__V1__GetInstanceResponse *m)
{
    bool oom = false;
    m->marking = wf_arena_calloc(a, nv->n_marking + 1, sizeof *m->marking);
    m->jobs = wf_arena_calloc(a, nv->n_jobs + 1, sizeof *m->jobs);
    m->timers = wf_arena_calloc(a, nv->n_timers + 1, sizeof *m->timers);
    m->awaiting_signals = wf_arena_calloc(a, nv->n_awaiting + 1, sizeof *m->awaiting_signals);
    Workflow__V1__JoinProgress **joins =
        wf_arena_calloc(a, m->n_joins + nv->n_joins + 1, sizeof *joins);
    if (!m->marking || !m->jobs || !m->timers || !m->awaiting_signals || !joins)
        return WF_E_INTERNAL;
    for (size_t i = 0; i < nv->n_marking; i++) {
        Workflow__V1__GetInstanceResponse__MarkingEntry *e = wf_arena_alloc(a, sizeof *e);
        if (e == NULL)
            return WF_E_INTERNAL;
        workflow__v1__get_instance_response__marking_entry__init(e);
        e->key = (char *)nv->marking[i].place_id;
        e->value = nv->marking[i].count;
        m->marking[m->n_marking++] = e;
    }
    for (size_t i = 0; i < nv->n_jobs; i++)
        if ((m->jobs[m->n_jobs++] = wf_h_job(a, &nv->jobs[i])) == NULL)
            return WF_E_INTERNAL;
    for (size_t i = 0; i < nv->n_timers; i++)
        if ((m->timers[m->n_timers++] = wf_h_timer(a, &nv->timers[i])) == NULL)
            return WF_E_INTERNAL;
    for (size_t i = 0; i < nv->n_awaiting; i++) {
        Workflow__V1__AwaitingSignal *s = wf_arena_alloc(a, sizeof *s);
        if (s == NULL)
            return WF_E_INTERNAL;
        workflow__v1__awaiting_signal__init(s);
        s->name = nv->awaiting[i].sub.signal_name;
        s->transition_id = nv->awaiting[i].sub.transition_id != NULL
                               ? nv->awaiting[i].sub.transition_id
                               : (char *)protobuf_c_empty_string;
        s->since = wf_h_timestamp(a, nv->awaiting[i].sub.created_at, &oom);
        s->times_out_at = wf_h_timestamp(a, nv->awaiting[i].times_out_at, &oom);
        s->correlation = (Workflow__V1__Correlation)nv->awaiting[i].correlation;
        m->awaiting_signals[m->n_awaiting_signals++] = s;
    }
    for (size_t i = 0; i < m->n_joins; i++)
        joins[i] = m->joins[i];
    for (size_t i = 0; i < nv->n_joins; i++)
        if ((joins[m->n_joins + i] = join_progress(a, &nv->joins[i])) == NULL)
            return WF_E_INTERNAL;
    m->joins = joins;
    m->n_joins += nv->n_joins;
    m->current_steps = wf_arena_calloc(a, nv->n_current_steps + 1, sizeof *m->current_steps);
    if (m->current_steps == NULL)
        return WF_E_INTERNAL;
    if (fill_calls(a, nv, m) != WF_OK)
        return WF_E_INTERNAL;
    for (size_t i = 0; i < nv->n_current_steps; i++) {
        const wf_step *st = nv->current_steps[i];
        Workflow__V1__CurrentStep *c = wf_arena_alloc(a, sizeof *c);
        if (c == NULL)
            return WF_E_INTERNAL;
        workflow__v1__current_step__init(c);
        c->id = (char *)st->id;
        c->name = (char *)(st->name != NULL && st->name[0] != '\0' ? st->name : st->id);
        m->current_steps[m->n_current_steps++] = c;
    }
    if (fill_for_each(a, nv, m) != WF_OK)
        return WF_E_INTERNAL;
    return oom ? WF_E_INTERNAL : WF_OK;
}

/* Keeps a GetInstance answer within budget bytes: leaves out the
 * variables of children (from the last), then of jobs, then the payloads
 * of buffered signals, each marked as left out. The size is the packed
 * size less what was left out, plus the flags. A tree so large that even then it does not
 * fit (thousands of tasks) fails with TOO_LARGE rather than an answer the
 * transport would refuse. */
static wf_code
fit_answer(Workflow__V1__GetInstanceResponse *m, const char *id, size_t budget, wf_error *err)
{
    if (budget == 0)
        return WF_OK;
    size_t size = protobuf_c_message_get_packed_size(&m->base);
    for (size_t i = m->n_children; size > budget && i > 0; i--) {
        Workflow__V1__Instance *c = m->children[i - 1];
        size = size - strlen(c->variables_json) + 2; /* the flag */
        c->variables_json = (char *)protobuf_c_empty_string;
        c->variables_omitted = true;
    }
    for (size_t i = m->n_jobs; size > budget && i > 0; i--) {
        Workflow__V1__Job *j = m->jobs[i - 1];
        size = size - strlen(j->variables_json) + 2; /* the flag */
        j->variables_json = (char *)protobuf_c_empty_string;
        j->variables_omitted = true;
    }
    for (size_t i = m->n_buffered_signals; size > budget && i > 0; i--) {
        Workflow__V1__Signal *sg = m->buffered_signals[i - 1];
        size = size - strlen(sg->payload_json) + 2; /* the flag */
        sg->payload_json = (char *)protobuf_c_empty_string;
        sg->payload_omitted = true;
    }
    if (size > budget)
        return wf_error_set(err, WF_E_TOO_LARGE,
                            "instance \"%s\" has more to show than an answer holds (%zu bytes)", id,
                            budget);
    return WF_OK;
}

wf_code
wf_h_instance_view(wf_call *call, wf_arena *a, const char *id,
                   Workflow__V1__GetInstanceResponse **out, wf_instance_view *iv, wf_error *err)
{
    wf_ref_ctx ctx;
    wf_h_ref_ctx(call, &ctx);
    ctx.arena = a;
    wf_code rc = wf_instances_get(&ctx, id, iv, err);
    if (rc != WF_OK)
        return rc;
    const wf_ref_instance_view *v = &iv->tree;
    Workflow__V1__GetInstanceResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__get_instance_response__init(m);
    m->instance = wf_h_instance(a, &v->instance);
    m->n_tasks = v->n_tasks;
    m->tasks = wf_h_tasks(a, v->tasks, v->n_tasks);
    m->n_children = v->n_children;
    m->children = wf_h_instances(a, v->children, v->n_children);
    m->n_joins = v->n_joins;
    m->joins = build_joins(a, v);
    if (v->instance.last_error != NULL)
        m->last_error = v->instance.last_error;
    if (m->instance == NULL || m->tasks == NULL || m->children == NULL || m->joins == NULL)
        return wf_error_nomem(err);
    if (iv->net.is_net && fill_net_view(a, &iv->net, m) != WF_OK)
        return wf_error_nomem(err);
    m->buffered_signals = wf_h_signals(a, iv->buffered, iv->n_buffered);
    m->n_buffered_signals = iv->n_buffered;
    if (m->buffered_signals == NULL)
        return wf_error_nomem(err);
    rc = fit_answer(m, id, ctx.answer_bytes, err);
    if (rc != WF_OK)
        return rc;
    *out = m;
    return WF_OK;
}

wf_code
h_get_instance(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__GetInstanceRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_instance_view iv;
    Workflow__V1__GetInstanceResponse *m = NULL;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_INSTANCE, "instance_id", req->instance_id, err) != WF_OK)
        return err->code;
    wf_code rc = wf_h_instance_view(call, call->arena, req->instance_id, &m, &iv, err);
    if (rc == WF_OK)
        *resp = &m->base;
    return rc;
}

/* ---- ListInstances ---------------------------------------------------------------- */

/* schedule_id as one more variable filter: "schedule.id" equals it (the
 * variable a schedule's start sets, engine/schedules.h). */
static wf_code
schedule_filter(wf_arena *a, const char *schedule_id, wf_ref_var_filter *vars, size_t *n,
                wf_error *err)
{
    if (schedule_id == NULL || schedule_id[0] == '\0')
        return WF_OK;
    if (strlen(schedule_id) > 128)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "schedule_id must be at most 128 bytes");
    const char *value = wf_vars_quote(a, schedule_id);
    if (value == NULL)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "schedule_id must be UTF-8 text");
    vars[(*n)++] = (wf_ref_var_filter){"schedule.id", value};
    return WF_OK;
}

wf_code
wf_h_instance_query(wf_arena *a, const Workflow__V1__InstanceFilter *f, wf_ref_instance_query *q,
                    wf_error *err)
{
    *q = (wf_ref_instance_query){
        .started_by = f->started_by,
        .state = (wf_process_state)f->state,
        .status = (wf_instance_status)f->status,
        .definition_key = f->definition_key,
        .aggregate_type = f->aggregate != NULL ? f->aggregate->type : NULL,
        .aggregate_id = f->aggregate != NULL ? f->aggregate->id : NULL,
        .created = {f->created_after != NULL, f->created_before != NULL,
                    wf_h_time_us(f->created_after), wf_h_time_us(f->created_before)},
        .ended = {f->ended_after != NULL, f->ended_before != NULL, wf_h_time_us(f->ended_after),
                  wf_h_time_us(f->ended_before)},
        .n_vars = f->n_variables,
    };
    wf_ref_var_filter *vars = wf_arena_calloc(a, f->n_variables + 2, sizeof *vars);
    if (vars == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < f->n_variables; i++)
        vars[i] = (wf_ref_var_filter){f->variables[i]->path, f->variables[i]->value_json};
    q->vars = vars;
    return schedule_filter(a, f->schedule_id, vars, &q->n_vars, err);
}

wf_net_place_map *
wf_h_place_mapping(wf_arena *a, Workflow__V1__PlaceMapping *const *m, size_t n)
{
    wf_net_place_map *map = wf_arena_calloc(a, n + 1, sizeof *map);
    for (size_t i = 0; map != NULL && i < n; i++)
        map[i] = (wf_net_place_map){m[i]->from_place, m[i]->to_place};
    return map;
}

Workflow__V1__PlaceMapping **
wf_h_place_mapping_msgs(wf_arena *a, const wf_net_place_map *m, size_t n, bool *oom)
{
    Workflow__V1__PlaceMapping **v = wf_arena_calloc(a, n + 1, sizeof *v);
    *oom |= v == NULL;
    for (size_t i = 0; v != NULL && i < n; i++) {
        v[i] = wf_arena_alloc(a, sizeof *v[i]);
        if (v[i] == NULL) {
            *oom = true;
            return NULL;
        }
        workflow__v1__place_mapping__init(v[i]);
        v[i]->from_place = (char *)m[i].from_place;
        v[i]->to_place = (char *)m[i].to_place;
    }
    return v;
}

Workflow__V1__InstanceFilter *
wf_h_instance_filter(wf_arena *a, const wf_ref_instance_query *q)
{
    bool oom = false;
    Workflow__V1__InstanceFilter *f = wf_arena_alloc(a, sizeof *f);
    Workflow__V1__VariableFilter **vars = wf_arena_calloc(a, q->n_vars + 1, sizeof *vars);
    if (f == NULL || vars == NULL)
        return NULL;
    workflow__v1__instance_filter__init(f);
    f->started_by = q->started_by != NULL ? (char *)q->started_by : "";
    f->state = (Workflow__V1__ProcessState)q->state;
    f->status = (Workflow__V1__InstanceStatus)q->status;
    f->definition_key = q->definition_key != NULL ? (char *)q->definition_key : "";
    if (q->aggregate_type != NULL) {
        Workflow__V1__Aggregate *g = wf_arena_alloc(a, sizeof *g);
        if (g == NULL)
            return NULL;
        workflow__v1__aggregate__init(g);
        g->type = (char *)q->aggregate_type;
        g->id = q->aggregate_id != NULL ? (char *)q->aggregate_id : "";
        f->aggregate = g;
    }
    f->created_after = q->created.has_after ? wf_h_timestamp(a, q->created.after, &oom) : NULL;
    f->created_before = q->created.has_before ? wf_h_timestamp(a, q->created.before, &oom) : NULL;
    f->ended_after = q->ended.has_after ? wf_h_timestamp(a, q->ended.after, &oom) : NULL;
    f->ended_before = q->ended.has_before ? wf_h_timestamp(a, q->ended.before, &oom) : NULL;
    for (size_t i = 0; i < q->n_vars; i++) {
        Workflow__V1__VariableFilter *v = wf_arena_alloc(a, sizeof *v);
        if (v == NULL)
            return NULL;
        workflow__v1__variable_filter__init(v);
        v->path = (char *)q->vars[i].path;
        v->value_json = (char *)q->vars[i].value_json;
        vars[i] = v;
    }
    f->variables = vars;
    f->n_variables = q->n_vars;
    return oom ? NULL : f;
}

wf_code
h_list_instances(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__ListInstancesRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_instance_row *rows = NULL;
    size_t n = 0;
    char *next = NULL;
    wf_h_ref_ctx(call, &ctx);
    /* The filter fields of the request, as the InstanceFilter that
     * StartBatchOperation takes: one translation for both. */
    Workflow__V1__InstanceFilter f = {
        .base = PROTOBUF_C_MESSAGE_INIT(&workflow__v1__instance_filter__descriptor),
        .started_by = req->started_by,
        .state = req->state,
        .definition_key = req->definition_key,
        .aggregate = req->aggregate,
        .status = req->status,
        .created_after = req->created_after,
        .created_before = req->created_before,
        .ended_after = req->ended_after,
        .ended_before = req->ended_before,
        .n_variables = req->n_variables,
        .variables = req->variables,
        .schedule_id = req->schedule_id,
    };
    wf_ref_instance_query q;
    wf_code rc = wf_h_instance_query(call->arena, &f, &q, err);
    if (rc != WF_OK)
        return rc;
    q.page_size = req->page_size;
    q.newest_first = req->newest_first;
    rc = wf_h_page_in(call, msg, req->page_token, &q.cursor, err);
    if (rc == WF_OK)
        rc = wf_referral_list_instances(&ctx, &q, &rows, &n, &next, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__ListInstancesResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__list_instances_response__init(m);
    m->n_instances = n;
    m->instances = wf_h_instances(call->arena, rows, n);
    m->next_page_token = wf_h_page_out(call, msg, next);
    if (m->instances == NULL || m->next_page_token == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

/* ---- ListIncidents ---------------------------------------------------------------- */

static Workflow__V1__Incident **
build_incidents(wf_arena *a, const wf_runtime_incident *v, size_t n)
{
    Workflow__V1__Incident **out = wf_arena_calloc(a, n + 1, sizeof *out);
    bool oom = false;
    for (size_t i = 0; out != NULL && i < n; i++) {
        Workflow__V1__Incident *m = wf_arena_alloc(a, sizeof *m);
        if (m == NULL)
            return NULL;
        workflow__v1__incident__init(m);
        m->instance_id = (char *)v[i].instance_id;
        m->root_instance_id = (char *)v[i].root_id;
        m->definition_key = (char *)v[i].definition_key;
        m->definition_version = v[i].definition_version;
        if (v[i].transition_id != NULL)
            m->transition_id = (char *)v[i].transition_id;
        m->code = (char *)v[i].code;
        if (v[i].message != NULL)
            m->message = (char *)v[i].message;
        m->since = wf_h_timestamp(a, v[i].since, &oom);
        m->attempts = v[i].attempts;
        if (oom)
            return NULL;
        out[i] = m;
    }
    return out;
}

wf_code
h_list_incidents(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__ListIncidentsRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_runtime_incident *v = NULL;
    size_t n = 0;
    char *next = NULL;
    wf_h_ref_ctx(call, &ctx);
    wf_runtime_incident_query q = {
        .definition_key = req->definition_key,
        .code = req->code,
        .page_size = req->page_size,
    };
    wf_code rc = wf_h_page_in(call, msg, req->page_token, &q.cursor, err);
    if (rc == WF_OK)
        rc = wf_runtime_list_incidents(&ctx, &q, &v, &n, &next, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__ListIncidentsResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__list_incidents_response__init(m);
    m->n_incidents = n;
    m->incidents = build_incidents(call->arena, v, n);
    m->next_page_token = wf_h_page_out(call, msg, next);
    if (m->incidents == NULL || m->next_page_token == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

/* ---- the mutating calls on one instance -------------------------------------------- */

/* The engine's part of a mutating call on one instance: req is the call's
 * request, out the result its builder reads. */
typedef wf_code (*instance_op_fn)(wf_call *call, const wf_runtime_ctx *ctx,
                                  const ProtobufCMessage *req, wf_uow_idem *idem, void *out,
                                  wf_error *err);

typedef struct instance_method {
    wf_h_builder builder; /* of the response */
    instance_op_fn op;
} instance_method;

/* Runs a mutating call on the instance instance_id: checks the id, prepares
 * the idempotency of request_id (NULL or "": none), runs the method's
 * operation and answers (out: storage for its result). */
static wf_code
on_instance(wf_call *call, const ProtobufCMessage *msg, const char *instance_id,
            const char *request_id, const instance_method *m, void *out, ProtobufCMessage **resp,
            wf_error *err)
{
    wf_runtime_ctx ctx;
    wf_uow_idem idem;
    wf_h_net_ctx(call, &ctx);
    if (wf_ids_check(&ctx.ref, WF_ID_INSTANCE, "instance_id", instance_id, err) != WF_OK)
        return err->code;
    wf_code rc = wf_h_idem(call, msg, request_id, &m->builder, &idem, err);
    if (rc == WF_OK)
        rc = m->op(call, &ctx, msg, &idem, out, err);
    return wf_h_respond(call, rc, &idem, &m->builder, out, resp, err);
}

/* ---- SetVariables ---------------------------------------------------------------- */

static wf_code
set_variables(wf_call *call, const wf_runtime_ctx *ctx, const ProtobufCMessage *msg,
              wf_uow_idem *idem, void *out, wf_error *err)
{
    const Workflow__V1__SetVariablesRequest *req = (const void *)msg;
    (void)call;
    return wf_runtime_set_variables(ctx, req->instance_id, req->variables_json, idem, out, err);
}

static const instance_method set_variables_method = {
    {NULL, &workflow__v1__set_variables_response__descriptor}, set_variables};

wf_code
h_set_variables(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__SetVariablesRequest *req = (const void *)msg;
    wf_instance_row out;
    return on_instance(call, msg, req->instance_id, req->request_id, &set_variables_method, &out,
                       resp, err);
}

/* ---- ModifyInstance -------------------------------------------------------------- */

static ProtobufCMessage *
build_modify(wf_arena *a, const void *result)
{
    const wf_runtime_modified *r = result;
    Workflow__V1__ModifyInstanceResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__modify_instance_response__init(m);
    m->instance = wf_h_instance(a, &r->instance);
    m->marking = wf_arena_calloc(a, r->n_marking + 1, sizeof *m->marking);
    m->tokens = wf_arena_calloc(a, r->n_tokens + 1, sizeof *m->tokens);
    if (m->instance == NULL || m->marking == NULL || m->tokens == NULL)
        return NULL;
    for (size_t i = 0; i < r->n_marking; i++) {
        Workflow__V1__ModifyInstanceResponse__MarkingEntry *e = wf_arena_alloc(a, sizeof *e);
        if (e == NULL)
            return NULL;
        workflow__v1__modify_instance_response__marking_entry__init(e);
        e->key = (char *)r->marking[i].place_id;
        e->value = r->marking[i].count;
        m->marking[m->n_marking++] = e;
    }
    for (size_t i = 0; i < r->n_tokens; i++) {
        Workflow__V1__Token *t = wf_arena_alloc(a, sizeof *t);
        if (t == NULL)
            return NULL;
        workflow__v1__token__init(t);
        t->id = (char *)r->tokens[i].id;
        t->place_id = (char *)r->tokens[i].place_id;
        m->tokens[m->n_tokens++] = t;
    }
    return &m->base;
}

static wf_code
modify(wf_call *call, const wf_runtime_ctx *ctx, const ProtobufCMessage *msg, wf_uow_idem *idem,
       void *out, wf_error *err)
{
    const Workflow__V1__ModifyInstanceRequest *req = (const void *)msg;
    wf_net_mod *ops = wf_arena_calloc(call->arena, req->n_operations + 1, sizeof *ops);
    if (ops == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < req->n_operations; i++) {
        const Workflow__V1__TokenOperation *o = req->operations[i];
        ops[i] = (wf_net_mod){
            .kind = (wf_net_mod_kind)o->kind,
            .place_id = o->place_id,
            .to_place_id = o->to_place_id,
            .count = o->count,
            .token_id = o->token_id,
        };
    }
    wf_runtime_modify_in in = {
        .instance_id = req->instance_id,
        .ops = ops,
        .n_ops = req->n_operations,
        .variables_json = req->variables_json,
        .allow_empty = req->allow_empty,
        .reason = req->reason,
    };
    return wf_runtime_modify_instance(ctx, &in, idem, out, err);
}

static const instance_method modify_method = {
    {build_modify, &workflow__v1__modify_instance_response__descriptor}, modify};

wf_code
h_modify_instance(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                  wf_error *err)
{
    const Workflow__V1__ModifyInstanceRequest *req = (const void *)msg;
    wf_runtime_modified out;
    return on_instance(call, msg, req->instance_id, req->request_id, &modify_method, &out, resp,
                       err);
}

/* ---- MigrateInstance ------------------------------------------------------------- */

static Workflow__V1__MigrationWorkItem **
plan_items(wf_arena *a, const wf_runtime_plan_item *items, size_t n)
{
    Workflow__V1__MigrationWorkItem **v = wf_arena_calloc(a, n + 1, sizeof *v);
    for (size_t i = 0; v != NULL && i < n; i++) {
        Workflow__V1__MigrationWorkItem *m = wf_arena_alloc(a, sizeof *m);
        if (m == NULL)
            return NULL;
        workflow__v1__migration_work_item__init(m);
        m->work_item_id = (char *)items[i].work_item_id;
        m->transition_id = (char *)items[i].transition_id;
        m->trigger = (Workflow__V1__Trigger)items[i].trigger;
        v[i] = m;
    }
    return v;
}

static Workflow__V1__MigrationPlan *
plan_out(wf_arena *a, const wf_runtime_migration *r)
{
    Workflow__V1__MigrationPlan *p = wf_arena_alloc(a, sizeof *p);
    if (p == NULL)
        return NULL;
    workflow__v1__migration_plan__init(p);
    p->source_version = r->source_version;
    p->target_version = r->target_version;
    p->tokens = wf_arena_calloc(a, r->n_tokens + 1, sizeof *p->tokens);
    p->kept = plan_items(a, r->kept, r->n_kept);
    p->withdrawn = plan_items(a, r->withdrawn, r->n_withdrawn);
    p->created = plan_items(a, r->created, r->n_created);
    p->fired_transition_ids = wf_arena_calloc(a, r->n_fired + 1, sizeof *p->fired_transition_ids);
    if (p->tokens == NULL || p->kept == NULL || p->withdrawn == NULL || p->created == NULL ||
        p->fired_transition_ids == NULL)
        return NULL;
    p->n_kept = r->n_kept;
    p->n_withdrawn = r->n_withdrawn;
    p->n_created = r->n_created;
    for (size_t i = 0; i < r->n_tokens; i++) {
        Workflow__V1__MigrationTokenMove *t = wf_arena_alloc(a, sizeof *t);
        if (t == NULL)
            return NULL;
        workflow__v1__migration_token_move__init(t);
        t->token_id = (char *)r->tokens[i].token_id;
        t->from_place = (char *)r->tokens[i].from_place;
        t->to_place = (char *)r->tokens[i].to_place;
        p->tokens[p->n_tokens++] = t;
    }
    for (size_t i = 0; i < r->n_fired; i++)
        p->fired_transition_ids[p->n_fired_transition_ids++] = (char *)r->fired[i];
    p->completes = r->completes;
    return p;
}

static ProtobufCMessage *
build_migrate(wf_arena *a, const void *result)
{
    const wf_runtime_migration *r = result;
    Workflow__V1__MigrateInstanceResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__migrate_instance_response__init(m);
    m->instance = wf_h_instance(a, &r->instance);
    m->plan = plan_out(a, r);
    m->problems = wf_arena_calloc(a, r->n_problems + 1, sizeof *m->problems);
    if (m->instance == NULL || m->plan == NULL || m->problems == NULL)
        return NULL;
    for (size_t i = 0; i < r->n_problems; i++) {
        Workflow__V1__MigrationProblem *p = wf_arena_alloc(a, sizeof *p);
        if (p == NULL)
            return NULL;
        workflow__v1__migration_problem__init(p);
        p->code = (char *)r->problems[i].code;
        p->path = (char *)r->problems[i].path;
        p->message = (char *)r->problems[i].message;
        m->problems[m->n_problems++] = p;
    }
    m->applied = r->applied;
    return &m->base;
}

static wf_code
migrate(wf_call *call, const wf_runtime_ctx *ctx, const ProtobufCMessage *msg, wf_uow_idem *idem,
        void *out, wf_error *err)
{
    const Workflow__V1__MigrateInstanceRequest *req = (const void *)msg;
    wf_net_place_map *map =
        wf_h_place_mapping(call->arena, req->place_mapping, req->n_place_mapping);
    if (map == NULL)
        return wf_error_nomem(err);
    wf_runtime_migrate_in in = {
        .instance_id = req->instance_id,
        .target_version = req->target_version,
        .mapping = map,
        .n_mapping = req->n_place_mapping,
        .dry_run = req->dry_run,
    };
    return wf_runtime_migrate_instance(ctx, &in, idem, out, err);
}

static const instance_method migrate_method = {
    {build_migrate, &workflow__v1__migrate_instance_response__descriptor}, migrate};

/* A dry run changes nothing: it records no request. */
wf_code
h_migrate_instance(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                   wf_error *err)
{
    const Workflow__V1__MigrateInstanceRequest *req = (const void *)msg;
    wf_runtime_migration out;
    return on_instance(call, msg, req->instance_id, req->dry_run ? NULL : req->request_id,
                       &migrate_method, &out, resp, err);
}

/* ---- CancelInstance, RetryInstance, SuspendInstance, ResumeInstance ---------------- */

static wf_code
cancel(wf_call *call, const wf_runtime_ctx *ctx, const ProtobufCMessage *msg, wf_uow_idem *idem,
       void *out, wf_error *err)
{
    const Workflow__V1__CancelInstanceRequest *req = (const void *)msg;
    (void)call;
    return wf_instances_cancel(ctx, req->instance_id, req->reason, req->compensate, idem, out, err);
}

static const instance_method cancel_method = {
    {NULL, &workflow__v1__cancel_instance_response__descriptor}, cancel};

wf_code
h_cancel_instance(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                  wf_error *err)
{
    const Workflow__V1__CancelInstanceRequest *req = (const void *)msg;
    wf_instance_row out;
    return on_instance(call, msg, req->instance_id, req->request_id, &cancel_method, &out, resp,
                       err);
}

static wf_code
retry(wf_call *call, const wf_runtime_ctx *ctx, const ProtobufCMessage *msg, wf_uow_idem *idem,
      void *out, wf_error *err)
{
    const Workflow__V1__RetryInstanceRequest *req = (const void *)msg;
    (void)call;
    return wf_runtime_retry_instance(ctx, req->instance_id, idem, out, err);
}

static const instance_method retry_method = {
    {NULL, &workflow__v1__retry_instance_response__descriptor}, retry};

wf_code
h_retry_instance(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__RetryInstanceRequest *req = (const void *)msg;
    wf_instance_row out;
    return on_instance(call, msg, req->instance_id, req->request_id, &retry_method, &out, resp,
                       err);
}

static wf_code
suspend(wf_call *call, const wf_runtime_ctx *ctx, const ProtobufCMessage *msg, wf_uow_idem *idem,
        void *out, wf_error *err)
{
    const Workflow__V1__SuspendInstanceRequest *req = (const void *)msg;
    (void)call;
    return wf_runtime_suspend_instance(ctx, req->instance_id, req->reason, idem, out, err);
}

static const instance_method suspend_method = {
    {NULL, &workflow__v1__suspend_instance_response__descriptor}, suspend};

wf_code
h_suspend_instance(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                   wf_error *err)
{
    const Workflow__V1__SuspendInstanceRequest *req = (const void *)msg;
    wf_instance_row out;
    return on_instance(call, msg, req->instance_id, req->request_id, &suspend_method, &out, resp,
                       err);
}

static wf_code
resume(wf_call *call, const wf_runtime_ctx *ctx, const ProtobufCMessage *msg, wf_uow_idem *idem,
       void *out, wf_error *err)
{
    const Workflow__V1__ResumeInstanceRequest *req = (const void *)msg;
    (void)call;
    return wf_runtime_resume_instance(ctx, req->instance_id, req->reason, idem, out, err);
}

static const instance_method resume_method = {
    {NULL, &workflow__v1__resume_instance_response__descriptor}, resume};

wf_code
h_resume_instance(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                  wf_error *err)
{
    const Workflow__V1__ResumeInstanceRequest *req = (const void *)msg;
    wf_instance_row out;
    return on_instance(call, msg, req->instance_id, req->request_id, &resume_method, &out, resp,
                       err);
}

/* ---- ListWorkItems ------------------------------------------------------------------------- */

/* "a,b" → ["a", "b"] in the arena; *n = 0 for NULL or "". */
static char **
split_ids(wf_arena *a, const char *list, size_t *n, bool *oom)
{
    *n = 0;
    if (list == NULL || list[0] == '\0')
        return NULL;
    size_t cap = 1;
    for (const char *p = list; *p != '\0'; p++)
        cap += *p == ',';
    char **v = wf_arena_calloc(a, cap, sizeof *v);
    if (v == NULL) {
        *oom = true;
        return NULL;
    }
    for (const char *p = list;;) {
        const char *c = strchr(p, ',');
        size_t len = c != NULL ? (size_t)(c - p) : strlen(p);
        v[*n] = wf_arena_strndup(a, p, len);
        if (v[*n] == NULL)
            *oom = true;
        (*n)++;
        if (c == NULL)
            break;
        p = c + 1;
    }
    return v;
}

static Workflow__V1__WorkItem *
work_item_msg(wf_arena *a, const wf_runtime_item *it, bool *oom)
{
    Workflow__V1__WorkItem *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL) {
        *oom = true;
        return NULL;
    }
    workflow__v1__work_item__init(m);
    const wf_work_item_row *r = &it->row;
    m->id = r->id;
    m->instance_id = r->instance_id;
    m->transition_id = r->transition_id;
    m->transition_name = it->transition_name != NULL ? (char *)it->transition_name : "";
    m->trigger = (Workflow__V1__Trigger)r->trigger;
    m->state = (Workflow__V1__WorkItemState)it->state;
    m->enabled_at = wf_h_timestamp(a, r->enabled_at, oom);
    m->finished_at = wf_h_timestamp(a, it->finished_at, oom);
    m->cancelled_at = wf_h_timestamp(a, it->cancelled_at, oom);
    m->deadline = wf_h_timestamp(a, r->deadline, oom);
    m->assignee_kind = (Workflow__V1__AssigneeKind)r->assignee_kind;
    m->assignee_ids = split_ids(a, r->assignee_id, &m->n_assignee_ids, oom);
    m->job_type = r->job_type != NULL ? r->job_type : "";
    m->signal_name = r->signal_name != NULL ? r->signal_name : "";
    m->finished_by =
        it->state == WF_RUNTIME_ITEM_FINISHED && r->finished_by != NULL ? r->finished_by : "";
    return m;
}

wf_code
h_list_work_items(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                  wf_error *err)
{
    const Workflow__V1__ListWorkItemsRequest *req = (const void *)msg;
    wf_ref_ctx ctx;
    wf_h_ref_ctx(call, &ctx);
    if (wf_ids_check(&ctx, WF_ID_INSTANCE, "instance_id", req->instance_id, err) != WF_OK)
        return err->code;
    int *states = wf_arena_calloc(call->arena, req->n_states + 1, sizeof *states);
    if (states == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < req->n_states; i++)
        states[i] = (int)req->states[i];
    wf_runtime_list_items_in q = {
        .instance_id = req->instance_id,
        .states = states,
        .n_states = req->n_states,
        .page_size = req->page_size,
    };
    wf_runtime_item *items = NULL;
    size_t n = 0;
    char *next = NULL;
    wf_code rc = wf_h_page_in(call, msg, req->page_token, &q.cursor, err);
    if (rc == WF_OK)
        rc = wf_runtime_list_work_items(&ctx, &q, &items, &n, &next, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__ListWorkItemsResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__list_work_items_response__init(m);
    bool oom = false;
    m->work_items = wf_arena_calloc(call->arena, n + 1, sizeof *m->work_items);
    oom = m->work_items == NULL;
    for (size_t i = 0; !oom && i < n; i++)
        m->work_items[i] = work_item_msg(call->arena, &items[i], &oom);
    m->n_work_items = n;
    m->next_page_token = wf_h_page_out(call, msg, next);
    if (oom || m->next_page_token == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}
