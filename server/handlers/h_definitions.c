/*
 * h_definitions: DeployDefinition, GetDefinition, ListDefinitions and
 * GetDefinitionStatistics.
 *
 * Translation only: workflow.v1.Definition <-> the engine's wf_net (every
 * field, durations in ms, times in µs); validation, versioning and paging
 * are in engine/runtime/net_runtime_defs.c. The proto enums of definitions carry
 * the numbers of net.h's enums (checked below), so they convert by cast;
 * unknown numbers pass through and validation names them.
 */
#include <string.h>

#include "h_common.h"
#include "handlers.h"

_Static_assert((int)WF_PLACE_END == (int)WORKFLOW__V1__PLACE_KIND__PLACE_KIND_END, "place kind");
_Static_assert((int)WF_TRIGGER_MSG == (int)WORKFLOW__V1__TRIGGER__TRIGGER_MSG, "trigger");
_Static_assert((int)WF_TRIGGER_CALL == (int)WORKFLOW__V1__TRIGGER__TRIGGER_CALL, "trigger");
_Static_assert((int)WF_TERMINATION_IMPLICIT == (int)WORKFLOW__V1__TERMINATION__TERMINATION_IMPLICIT,
               "termination");
_Static_assert((int)WF_NET_ASSIGNEE_USERS == (int)WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_USERS,
               "assignee kind");
_Static_assert((int)WF_CORRELATION_AGGREGATE ==
                   (int)WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE,
               "correlation");
_Static_assert((int)WF_DEF_NET == (int)WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_NET,
               "definition kind");
_Static_assert((int)WF_DEF_STEPS == (int)WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS,
               "definition kind");
_Static_assert((int)WF_SEVERITY_WARNING ==
                   (int)WORKFLOW__V1__VALIDATION_SEVERITY__VALIDATION_SEVERITY_WARNING,
               "severity");

static char *
str(const char *s)
{
    return s != NULL ? (char *)s : (char *)protobuf_c_empty_string;
}

/* ---- Definition -> wf_net ------------------------------------------------------------------- */

static void
user_in(const Workflow__V1__Assignee *as, const Workflow__V1__CompletionPolicy *cp, wf_assignee *a,
        wf_completion *c)
{
    if (as != NULL) {
        a->kind = (wf_net_assignee_kind)as->kind;
        a->ids = (const char **)as->ids;
        a->n_ids = as->n_ids;
        a->ids_expression = as->ids_expression;
    }
    if (cp != NULL) {
        c->mode = (wf_join_mode)cp->mode;
        c->quorum = cp->quorum;
    }
}

static void
retry_in(const Workflow__V1__RetryPolicy *m, wf_retry_policy *r)
{
    if (m != NULL) {
        r->max_attempts = m->max_attempts;
        r->initial_backoff_ms = wf_h_duration_ms(m->initial_backoff);
        r->multiplier = m->multiplier;
        r->max_backoff_ms = wf_h_duration_ms(m->max_backoff);
    }
}

/* A positive duration in ms; an explicit zero or negative one must reach
 * validation as such (-1). */
static int64_t
positive_ms(const Google__Protobuf__Duration *d)
{
    int64_t ms = wf_h_duration_ms(d);
    return d != NULL && ms == 0 ? -1 : ms;
}

/* The resources a transition or step names, in arena storage (NULL with
 * *oom set when out of memory). */
static const wf_resource_use *
resources_in(wf_arena *a, Workflow__V1__ResourceUse *const *m, size_t n, bool *oom)
{
    wf_resource_use *v = wf_arena_calloc(a, n + 1, sizeof *v);
    if (v == NULL) {
        *oom = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (wf_resource_use){m[i]->name, m[i]->key_expression};
    return v;
}

static void
step_in(const Workflow__V1__Step *m, wf_step *st)
{
    memset(st, 0, sizeof *st);
    st->id = m->id;
    st->name = m->name;
    if (m->job != NULL) {
        st->has_job = true;
        st->job_type = m->job->job_type;
        st->lease_ms = wf_h_duration_ms(m->job->lease);
        st->job_priority_expression = m->job->priority_expression;
        st->job_fairness_key_expression = m->job->fairness_key_expression;
    }
    if (m->user != NULL) {
        st->has_user = true;
        user_in(m->user->assignee, m->user->completion, &st->assignee, &st->completion);
        st->priority_expression = m->user->priority_expression;
        st->task_due_expression = m->user->due_expression;
        st->task_follow_up_expression = m->user->follow_up_expression;
    }
    if (m->await_signal != NULL) {
        st->has_await = true;
        st->signal_name = m->await_signal->signal_name;
        st->correlation = (wf_correlation)m->await_signal->correlation;
        st->timeout_ms = positive_ms(m->await_signal->timeout);
        st->on_timeout = m->await_signal->on_timeout;
    }
    if (m->sleep != NULL) {
        st->has_sleep = true;
        st->duration_ms = positive_ms(m->sleep->duration);
        st->due_expression = m->sleep->due_expression;
    }
    if (m->call != NULL) {
        st->has_call = true;
        st->call_key = m->call->definition_key;
        st->call_version = m->call->version;
        st->call_input = m->call->input_expression;
        st->call_output = m->call->output_expression;
        st->call_strict = m->call->require_deployed;
    }
    st->for_each = m->for_each;
    st->for_each_item = m->for_each_item;
    st->for_each_output = m->for_each_output;
    st->for_each_sequential = m->for_each_sequential;
    user_in(NULL, m->for_each_completion, &st->assignee, &st->for_each_completion);
    retry_in(m->retry, &st->retry);
    st->compensation_job_type = m->compensation_job_type;
}

static wf_code
transition_in(wf_arena *a, const Workflow__V1__Transition *m, wf_transition *t)
{
    memset(t, 0, sizeof *t);
    t->id = m->id;
    t->name = m->name;
    t->trigger = (wf_trigger)m->trigger;
    t->cancels = (const char **)m->cancels;
    t->n_cancels = m->n_cancels;
    user_in(m->assignee, m->completion, &t->assignee, &t->completion);
    t->priority_expression = m->priority_expression;
    t->task_due_expression = m->task_due_expression;
    t->task_follow_up_expression = m->task_follow_up_expression;
    t->job_type = m->job_type;
    retry_in(m->retry, &t->retry);
    t->lease_ms = wf_h_duration_ms(m->lease);
    t->compensation_job_type = m->compensation_job_type;
    t->job_priority_expression = m->job_priority_expression;
    t->job_fairness_key_expression = m->job_fairness_key_expression;
    t->for_each = m->for_each;
    t->for_each_item = m->for_each_item;
    t->for_each_output = m->for_each_output;
    t->for_each_sequential = m->for_each_sequential;
    user_in(NULL, m->for_each_completion, &t->assignee, &t->for_each_completion);
    t->call_key = m->call_definition_key;
    t->call_version = m->call_version;
    t->call_input = m->call_input_expression;
    t->call_output = m->call_output_expression;
    t->call_strict = m->call_require_deployed;
    t->delay_ms = wf_h_duration_ms(m->delay);
    /* An explicit zero or negative delay must reach validation as such. */
    if (m->delay != NULL && t->delay_ms == 0)
        t->delay_ms = -1;
    t->due_expression = m->due_expression;
    t->signal_name = m->signal_name;
    t->correlation = (wf_correlation)m->correlation;
    bool oom = false;
    t->resources = resources_in(a, m->resources, m->n_resources, &oom);
    t->n_resources = m->n_resources;
    return oom ? WF_E_NOMEM : WF_OK;
}

static wf_code
net_in(wf_arena *a, const Workflow__V1__Definition *d, wf_net *net, wf_error *err)
{
    memset(net, 0, sizeof *net);
    net->key = d->key;
    net->name = d->name;
    net->description = d->description;
    net->termination = (wf_termination)d->termination;
    net->valid_from = wf_h_time_us(d->valid_from);
    net->valid_until = wf_h_time_us(d->valid_until);
    net->places = wf_arena_calloc(a, d->n_places + 1, sizeof *net->places);
    net->transitions = wf_arena_calloc(a, d->n_transitions + 1, sizeof *net->transitions);
    net->arcs = wf_arena_calloc(a, d->n_arcs + 1, sizeof *net->arcs);
    if (net->places == NULL || net->transitions == NULL || net->arcs == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < d->n_places; i++)
        net->places[i] =
            (wf_place){d->places[i]->id, d->places[i]->name, (wf_place_kind)d->places[i]->kind};
    net->n_places = d->n_places;
    for (size_t i = 0; i < d->n_transitions; i++)
        if (transition_in(a, d->transitions[i], &net->transitions[i]) != WF_OK)
            return wf_error_nomem(err);
    net->n_transitions = d->n_transitions;
    for (size_t i = 0; i < d->n_arcs; i++) {
        const Workflow__V1__Arc *m = d->arcs[i];
        net->arcs[i] = (wf_arc){.source = m->source,
                                .target = m->target,
                                .weight = m->weight,
                                .guard = m->guard,
                                .is_default = m->is_default};
    }
    net->n_arcs = d->n_arcs;
    net->steps = wf_arena_calloc(a, d->n_steps + 1, sizeof *net->steps);
    if (net->steps == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < d->n_steps; i++) {
        wf_step *st = &net->steps[i];
        step_in(d->steps[i], st);
        st->next = wf_arena_calloc(a, d->steps[i]->n_next + 1, sizeof *st->next);
        if (st->next == NULL)
            return wf_error_nomem(err);
        for (size_t r = 0; r < d->steps[i]->n_next; r++)
            st->next[r] = (wf_step_rule){d->steps[i]->next[r]->guard, d->steps[i]->next[r]->step};
        st->n_next = d->steps[i]->n_next;
        bool oom = false;
        st->resources = resources_in(a, d->steps[i]->resources, d->steps[i]->n_resources, &oom);
        st->n_resources = d->steps[i]->n_resources;
        if (oom)
            return wf_error_nomem(err);
    }
    net->n_steps = d->n_steps;
    return WF_OK;
}

/* ---- wf_net -> Definition ------------------------------------------------------------------- */

static void *
alloc_or(wf_arena *a, size_t size, bool *oom)
{
    void *p = wf_arena_alloc(a, size);
    if (p == NULL)
        *oom = true;
    return p;
}

static Workflow__V1__Assignee *
assignee_out(wf_arena *a, const wf_assignee *as, bool *oom)
{
    if (as->kind == WF_NET_ASSIGNEE_UNSET && as->n_ids == 0 &&
        (as->ids_expression == NULL || as->ids_expression[0] == '\0'))
        return NULL;
    Workflow__V1__Assignee *m = alloc_or(a, sizeof *m, oom);
    if (m == NULL)
        return NULL;
    workflow__v1__assignee__init(m);
    m->kind = (Workflow__V1__AssigneeKind)as->kind;
    m->ids = (char **)as->ids;
    m->n_ids = as->n_ids;
    m->ids_expression = str(as->ids_expression);
    return m;
}

static Workflow__V1__CompletionPolicy *
completion_out(wf_arena *a, const wf_completion *c, bool *oom)
{
    if (c->mode == WF_JOIN_NONE && c->quorum == 0)
        return NULL;
    Workflow__V1__CompletionPolicy *m = alloc_or(a, sizeof *m, oom);
    if (m == NULL)
        return NULL;
    workflow__v1__completion_policy__init(m);
    m->mode = (Workflow__V1__CompletionMode)c->mode;
    m->quorum = c->quorum;
    return m;
}

static Workflow__V1__RetryPolicy *
retry_out(wf_arena *a, const wf_retry_policy *r, bool *oom)
{
    if (r->max_attempts == 0 && r->initial_backoff_ms == 0 && r->multiplier == 0 &&
        r->max_backoff_ms == 0)
        return NULL;
    Workflow__V1__RetryPolicy *m = alloc_or(a, sizeof *m, oom);
    if (m == NULL)
        return NULL;
    workflow__v1__retry_policy__init(m);
    m->max_attempts = r->max_attempts;
    m->initial_backoff = wf_h_duration(a, r->initial_backoff_ms, oom);
    m->multiplier = r->multiplier;
    m->max_backoff = wf_h_duration(a, r->max_backoff_ms, oom);
    return m;
}

static Workflow__V1__ResourceUse **
resources_out(wf_arena *a, const wf_resource_use *v, size_t n, bool *oom)
{
    Workflow__V1__ResourceUse **m = wf_arena_calloc(a, n + 1, sizeof *m);
    if (m == NULL) {
        *oom = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if ((m[i] = alloc_or(a, sizeof *m[i], oom)) == NULL)
            return NULL;
        workflow__v1__resource_use__init(m[i]);
        m[i]->name = str(v[i].name);
        m[i]->key_expression = str(v[i].key_expression);
    }
    return m;
}

static Workflow__V1__Step *
step_out(wf_arena *a, const wf_step *st, bool *oom)
{
    Workflow__V1__Step *m = alloc_or(a, sizeof *m, oom);
    if (m == NULL)
        return NULL;
    workflow__v1__step__init(m);
    m->id = str(st->id);
    m->name = str(st->name);
    if (st->has_job && (m->job = alloc_or(a, sizeof *m->job, oom)) != NULL) {
        workflow__v1__job_step__init(m->job);
        m->job->job_type = str(st->job_type);
        m->job->lease = wf_h_duration(a, st->lease_ms, oom);
        m->job->priority_expression = str(st->job_priority_expression);
        m->job->fairness_key_expression = str(st->job_fairness_key_expression);
    }
    if (st->has_user && (m->user = alloc_or(a, sizeof *m->user, oom)) != NULL) {
        workflow__v1__user_step__init(m->user);
        m->user->assignee = assignee_out(a, &st->assignee, oom);
        m->user->completion = completion_out(a, &st->completion, oom);
        m->user->priority_expression = str(st->priority_expression);
        m->user->due_expression = str(st->task_due_expression);
        m->user->follow_up_expression = str(st->task_follow_up_expression);
    }
    if (st->has_await && (m->await_signal = alloc_or(a, sizeof *m->await_signal, oom)) != NULL) {
        workflow__v1__await_step__init(m->await_signal);
        m->await_signal->signal_name = str(st->signal_name);
        m->await_signal->correlation = (Workflow__V1__Correlation)st->correlation;
        m->await_signal->timeout = wf_h_duration(a, st->timeout_ms, oom);
        m->await_signal->on_timeout = str(st->on_timeout);
    }
    if (st->has_sleep && (m->sleep = alloc_or(a, sizeof *m->sleep, oom)) != NULL) {
        workflow__v1__sleep_step__init(m->sleep);
        m->sleep->duration = wf_h_duration(a, st->duration_ms, oom);
        m->sleep->due_expression = str(st->due_expression);
    }
    if (st->has_call && (m->call = alloc_or(a, sizeof *m->call, oom)) != NULL) {
        workflow__v1__call_step__init(m->call);
        m->call->definition_key = str(st->call_key);
        m->call->version = st->call_version;
        m->call->input_expression = str(st->call_input);
        m->call->output_expression = str(st->call_output);
        m->call->require_deployed = st->call_strict;
    }
    m->for_each = str(st->for_each);
    m->for_each_item = str(st->for_each_item);
    m->for_each_output = str(st->for_each_output);
    m->for_each_sequential = st->for_each_sequential;
    m->for_each_completion = completion_out(a, &st->for_each_completion, oom);
    m->retry = retry_out(a, &st->retry, oom);
    m->compensation_job_type = str(st->compensation_job_type);
    if (st->n_resources > 0) {
        m->resources = resources_out(a, st->resources, st->n_resources, oom);
        m->n_resources = m->resources != NULL ? st->n_resources : 0;
    }
    m->next = wf_arena_calloc(a, st->n_next + 1, sizeof *m->next);
    if (m->next == NULL) {
        *oom = true;
        return NULL;
    }
    for (size_t r = 0; r < st->n_next; r++) {
        Workflow__V1__NextRule *n = alloc_or(a, sizeof *n, oom);
        if (n == NULL)
            return NULL;
        workflow__v1__next_rule__init(n);
        n->guard = str(st->next[r].guard);
        n->step = str(st->next[r].step);
        m->next[m->n_next++] = n;
    }
    return m;
}

static Workflow__V1__Transition *
transition_out(wf_arena *a, const wf_transition *t, bool *oom)
{
    Workflow__V1__Transition *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL) {
        *oom = true;
        return NULL;
    }
    workflow__v1__transition__init(m);
    m->id = str(t->id);
    m->name = str(t->name);
    m->trigger = (Workflow__V1__Trigger)t->trigger;
    m->cancels = (char **)t->cancels;
    m->n_cancels = t->n_cancels;
    m->assignee = assignee_out(a, &t->assignee, oom);
    m->completion = completion_out(a, &t->completion, oom);
    m->priority_expression = str(t->priority_expression);
    m->task_due_expression = str(t->task_due_expression);
    m->task_follow_up_expression = str(t->task_follow_up_expression);
    m->job_type = str(t->job_type);
    m->retry = retry_out(a, &t->retry, oom);
    m->lease = wf_h_duration(a, t->lease_ms, oom);
    m->compensation_job_type = str(t->compensation_job_type);
    m->job_priority_expression = str(t->job_priority_expression);
    m->job_fairness_key_expression = str(t->job_fairness_key_expression);
    m->for_each = str(t->for_each);
    m->for_each_item = str(t->for_each_item);
    m->for_each_output = str(t->for_each_output);
    m->for_each_sequential = t->for_each_sequential;
    m->for_each_completion = completion_out(a, &t->for_each_completion, oom);
    m->call_definition_key = str(t->call_key);
    m->call_version = t->call_version;
    m->call_input_expression = str(t->call_input);
    m->call_output_expression = str(t->call_output);
    m->call_require_deployed = t->call_strict;
    m->delay = wf_h_duration(a, t->delay_ms, oom);
    m->due_expression = str(t->due_expression);
    m->signal_name = str(t->signal_name);
    m->correlation = (Workflow__V1__Correlation)t->correlation;
    if (t->n_resources > 0) {
        m->resources = resources_out(a, t->resources, t->n_resources, oom);
        m->n_resources = m->resources != NULL ? t->n_resources : 0;
    }
    return m;
}

static Workflow__V1__Definition *
definition_out(wf_arena *a, const wf_definition_row *row, const wf_net *net)
{
    Workflow__V1__Definition *m = wf_arena_alloc(a, sizeof *m);
    bool oom = false;
    if (m == NULL)
        return NULL;
    workflow__v1__definition__init(m);
    m->key = str(row->key);
    m->version = row->version;
    m->name = str(net->name != NULL && net->name[0] != '\0' ? net->name : row->name);
    m->description = str(net->description);
    m->kind = (Workflow__V1__DefinitionKind)row->kind;
    m->termination = (Workflow__V1__Termination)net->termination;
    m->valid_from = wf_h_timestamp(a, row->valid_from, &oom);
    m->valid_until = wf_h_timestamp(a, row->valid_until, &oom);
    m->created_at = wf_h_timestamp(a, row->created_at, &oom);
    m->created_by = str(row->created_by);
    m->places = wf_arena_calloc(a, net->n_places + 1, sizeof *m->places);
    m->transitions = wf_arena_calloc(a, net->n_transitions + 1, sizeof *m->transitions);
    m->arcs = wf_arena_calloc(a, net->n_arcs + 1, sizeof *m->arcs);
    if (m->places == NULL || m->transitions == NULL || m->arcs == NULL)
        return NULL;
    for (size_t i = 0; i < net->n_places; i++) {
        Workflow__V1__Place *p = wf_arena_alloc(a, sizeof *p);
        if (p == NULL)
            return NULL;
        workflow__v1__place__init(p);
        p->id = str(net->places[i].id);
        p->name = str(net->places[i].name);
        p->kind = (Workflow__V1__PlaceKind)net->places[i].kind;
        m->places[i] = p;
    }
    m->n_places = net->n_places;
    for (size_t i = 0; i < net->n_transitions; i++)
        if ((m->transitions[i] = transition_out(a, &net->transitions[i], &oom)) == NULL)
            return NULL;
    m->n_transitions = net->n_transitions;
    for (size_t i = 0; i < net->n_arcs; i++) {
        Workflow__V1__Arc *r = wf_arena_alloc(a, sizeof *r);
        if (r == NULL)
            return NULL;
        workflow__v1__arc__init(r);
        r->source = str(net->arcs[i].source);
        r->target = str(net->arcs[i].target);
        r->weight = wf_net_arc_weight(&net->arcs[i]);
        r->guard = str(net->arcs[i].guard);
        r->is_default = net->arcs[i].is_default;
        m->arcs[i] = r;
    }
    m->n_arcs = net->n_arcs;
    m->steps = wf_arena_calloc(a, net->n_steps + 1, sizeof *m->steps);
    if (m->steps == NULL)
        return NULL;
    for (size_t i = 0; i < net->n_steps; i++)
        if ((m->steps[m->n_steps++] = step_out(a, &net->steps[i], &oom)) == NULL)
            return NULL;
    return oom ? NULL : m;
}

/* ---- DeployDefinition ----------------------------------------------------------------------- */

static ProtobufCMessage *
build_deploy(wf_arena *a, const void *result)
{
    const wf_runtime_deployed *d = result;
    Workflow__V1__DeployDefinitionResponse *m = wf_arena_alloc(a, sizeof *m);
    if (m == NULL)
        return NULL;
    workflow__v1__deploy_definition_response__init(m);
    if (d->net != NULL && (m->definition = definition_out(a, &d->row, d->net)) == NULL)
        return NULL;
    m->created = d->created;
    m->errors = wf_arena_calloc(a, d->n_errors + 1, sizeof *m->errors);
    if (m->errors == NULL)
        return NULL;
    for (size_t i = 0; i < d->n_errors; i++) {
        Workflow__V1__ValidationError *e = wf_arena_alloc(a, sizeof *e);
        if (e == NULL)
            return NULL;
        workflow__v1__validation_error__init(e);
        e->code = str(d->errors[i].code);
        e->path = str(d->errors[i].path);
        e->message = str(d->errors[i].message);
        e->severity = (Workflow__V1__ValidationSeverity)d->errors[i].severity;
        m->errors[m->n_errors++] = e;
    }
    return &m->base;
}

static const wf_h_builder deploy_builder = {build_deploy,
                                            &workflow__v1__deploy_definition_response__descriptor};

wf_code
h_deploy_definition(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                    wf_error *err)
{
    const Workflow__V1__DeployDefinitionRequest *req = (const void *)msg;
    wf_runtime_ctx ctx;
    wf_uow_idem idem;
    wf_runtime_deployed out;
    wf_net net;
    wf_h_net_ctx(call, &ctx);
    if (req->definition == NULL) {
        wf_h_violation(call, "definition", "is required");
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "definition is required");
    }
    wf_code rc = net_in(call->arena, req->definition, &net, err);
    if (rc == WF_OK)
        rc = wf_h_idem(call, msg, req->request_id, &deploy_builder, &idem, err);
    if (rc != WF_OK)
        return rc;
    wf_runtime_deploy_in in = {(wf_def_kind)req->definition->kind, &net, req->validate_only};
    rc = wf_runtime_deploy(&ctx, &in, &idem, &out, err);
    return wf_h_respond(call, rc, &idem, &deploy_builder, &out, resp, err);
}

/* ---- GetDefinition -------------------------------------------------------------------------- */

wf_code
h_get_definition(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp, wf_error *err)
{
    const Workflow__V1__GetDefinitionRequest *req = (const void *)msg;
    wf_runtime_ctx ctx;
    wf_definition_row row;
    const wf_net *net;
    wf_h_net_ctx(call, &ctx);
    wf_code rc = wf_runtime_get_definition(&ctx, req->key, req->version, &row, &net, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__GetDefinitionResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__get_definition_response__init(m);
    if ((m->definition = definition_out(call->arena, &row, net)) == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

/* ---- ListDefinitions ------------------------------------------------------------------------- */

wf_code
h_list_definitions(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                   wf_error *err)
{
    const Workflow__V1__ListDefinitionsRequest *req = (const void *)msg;
    wf_runtime_ctx ctx;
    wf_definition_row *rows = NULL;
    const wf_net **nets = NULL;
    size_t n = 0;
    char *next = NULL;
    const char *cursor = NULL;
    wf_h_net_ctx(call, &ctx);
    wf_code rc = wf_h_page_in(call, msg, req->page_token, &cursor, err);
    if (rc == WF_OK)
        rc = wf_runtime_list_definitions(&ctx, req->key, req->page_size, cursor, &rows, &nets, &n,
                                         &next, err);
    if (rc != WF_OK)
        return rc;
    Workflow__V1__ListDefinitionsResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__list_definitions_response__init(m);
    m->definitions = wf_arena_calloc(call->arena, n + 1, sizeof *m->definitions);
    if (m->definitions == NULL)
        return wf_error_nomem(err);
    for (size_t i = 0; i < n; i++)
        if ((m->definitions[i] = definition_out(call->arena, &rows[i], nets[i])) == NULL)
            return wf_error_nomem(err);
    m->n_definitions = n;
    m->next_page_token = wf_h_page_out(call, msg, next);
    if (m->next_page_token == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}

/* ---- GetDefinitionStatistics ----------------------------------------------------------------- */

static Workflow__V1__ElementCount **
element_counts(wf_arena *a, const wf_element_count *v, size_t n)
{
    Workflow__V1__ElementCount **out = wf_arena_calloc(a, n + 1, sizeof *out);
    for (size_t i = 0; out != NULL && i < n; i++) {
        Workflow__V1__ElementCount *m = wf_arena_alloc(a, sizeof *m);
        if (m == NULL)
            return NULL;
        workflow__v1__element_count__init(m);
        m->element_id = v[i].element_id;
        m->count = v[i].count;
        out[i] = m;
    }
    return out;
}

_Static_assert((int)WF_FLEET_INCIDENTS ==
                   (int)WORKFLOW__V1__ELEMENT_COUNT_KIND__ELEMENT_COUNT_KIND_INCIDENTS,
               "element count kind");

/* GetDefinitionStatistics with `at`: a page of the instances there. */
static wf_code
statistics_page(wf_call *call, const Workflow__V1__GetDefinitionStatisticsRequest *req,
                Workflow__V1__GetDefinitionStatisticsResponse *m, wf_error *err)
{
    wf_runtime_ctx ctx;
    wf_h_net_ctx(call, &ctx);
    wf_runtime_fleet_page_in in = {.key = req->definition_key,
                                   .version = req->version,
                                   .kind = (int)req->at,
                                   .element = req->element_id,
                                   .page_size = req->page_size};
    char **ids = NULL, *next = NULL;
    size_t n = 0;
    wf_code rc = wf_h_page_in(call, &req->base, req->page_token, &in.cursor, err);
    if (rc == WF_OK)
        rc = wf_runtime_definition_instances(&ctx, &in, &ids, &n, &next, err);
    if (rc != WF_OK)
        return rc;
    m->instance_ids = ids;
    m->n_instance_ids = n;
    m->next_page_token = wf_h_page_out(call, &req->base, next);
    return m->next_page_token != NULL ? WF_OK : wf_error_nomem(err);
}

wf_code
h_get_definition_statistics(wf_call *call, const ProtobufCMessage *msg, ProtobufCMessage **resp,
                            wf_error *err)
{
    const Workflow__V1__GetDefinitionStatisticsRequest *req = (const void *)msg;
    Workflow__V1__GetDefinitionStatisticsResponse *m = wf_arena_alloc(call->arena, sizeof *m);
    if (m == NULL)
        return wf_error_nomem(err);
    workflow__v1__get_definition_statistics_response__init(m);
    if (req->at != 0 || req->element_id[0] != '\0') {
        wf_code rc = statistics_page(call, req, m, err);
        if (rc == WF_OK)
            *resp = &m->base;
        return rc;
    }
    wf_runtime_ctx ctx;
    wf_fleet_counts c;
    wf_h_net_ctx(call, &ctx);
    wf_code rc = wf_runtime_definition_statistics(&ctx, req->definition_key, req->version, &c, err);
    if (rc != WF_OK)
        return rc;
    m->live_instances = c.live;
    m->n_tokens = c.n_tokens;
    m->tokens = element_counts(call->arena, c.tokens, c.n_tokens);
    m->n_enabled_work_items = c.n_enabled;
    m->enabled_work_items = element_counts(call->arena, c.enabled, c.n_enabled);
    m->n_incidents = c.n_incidents;
    m->incidents = element_counts(call->arena, c.incidents, c.n_incidents);
    if (m->tokens == NULL || m->enabled_work_items == NULL || m->incidents == NULL)
        return wf_error_nomem(err);
    *resp = &m->base;
    return WF_OK;
}
