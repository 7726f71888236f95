/*
 * net_kit: shared fixtures and builders of the net, signal and saga
 * end-to-end suites (see net_kit.h).
 */
#include "net_kit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "defcache.h"
#include "expr.h"
#include "net_runtime.h"
#include "wf_id.h"
#include "wf_time.h"

#define SVC "/workflow.v1.WorkflowService/"

wf_test_server ts;
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
/* Grown on demand: race and load tests make thousands of calls. */
static void **kept; /* ProtobufCMessage * */
static size_t nkept, capkept;
static void **clients;    /* wf_client * */
static wf_client *reader; /* get_instance's, one per test: race loops read thousands of times */
static size_t nclients, capclients;
static char suffix[16];
wf_arena *ta; /* test-owned messages */

void
setup(void)
{
    setup_with(NULL);
}

void
setup_with(const char *const *env)
{
    wf_test_server_start(&ts, env);
    char id[WF_UUID_LEN + 1];
    wf_uuid7(id);
    snprintf(suffix, sizeof suffix, "%.8s", id + 28);
    ta = wf_arena_new();
}

static char *test_tenant; /* setup_tenant's, NULL before */

char *
setup_tenant(const char *const *env, const char *prefix)
{
    setup_with(env);
    char id[WF_UUID_LEN + 1];
    wf_uuid7(id);
    test_tenant = wf_arena_printf(ta, "%s-%s", prefix, id + 24);
    return test_tenant;
}

wf_client *
me(const char *actor)
{
    ck_assert_msg(test_tenant != NULL, "me() needs setup_tenant");
    return as_tenant(test_tenant, actor);
}

Workflow__V1__SendSignalResponse *
signal_order(wf_client *c, const char *name, const char *order_id, const char *payload,
             const char *request_id, wf_client_status *st)
{
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    agg.type = "order";
    agg.id = (char *)order_id;
    req.name = (char *)name;
    req.target_case = WORKFLOW__V1__SEND_SIGNAL_REQUEST__TARGET_AGGREGATE;
    req.aggregate = &agg;
    req.payload_json = (char *)payload;
    if (request_id != NULL)
        req.request_id = (char *)request_id;
    return call(c, "SendSignal", &req, &workflow__v1__send_signal_response__descriptor, st);
}

Workflow__V1__RunSchedulerPassResponse *
scheduler_pass(void)
{
    Workflow__V1__RunSchedulerPassRequest req = WORKFLOW__V1__RUN_SCHEDULER_PASS_REQUEST__INIT;
    wf_client_status st;
    Workflow__V1__RunSchedulerPassResponse *r =
        call(me("ops"), "RunSchedulerPass", &req,
             &workflow__v1__run_scheduler_pass_response__descriptor, &st);
    ck_ok(st);
    return r;
}

void
teardown(void)
{
    for (size_t i = 0; i < nkept; i++)
        protobuf_c_message_free_unpacked(kept[i], NULL);
    free(kept);
    kept = NULL;
    nkept = capkept = 0;
    for (size_t i = 0; i < nclients; i++)
        wf_client_free(clients[i]);
    free(clients);
    clients = NULL;
    reader = NULL;
    nclients = capclients = 0;
    if (ts.srv != NULL)
        wf_test_server_stop(&ts, 1000);
    wf_arena_free(ta);
    test_tenant = NULL;
    /* Compiled expressions hold jq stacks that LeakSanitizer cannot see
     * through (libjq points past their end). */
    wf_expr_cache_clear();
    wf_defcache_clear();
}

/* "name" -> "name-1a2b3c4d", unique to the test run. */
char *
u(const char *name)
{
    return wf_arena_printf(ta, "%s-%s", name, suffix);
}

/* Appends p to a growable array (caller holds kept_mu). */
static void
keep(void ***arr, size_t *n, size_t *cap, void *p)
{
    if (*n == *cap) {
        size_t ncap = *cap != 0 ? *cap * 2 : 256;
        void **grown = realloc(*arr, ncap * sizeof *grown);
        ck_assert_ptr_nonnull(grown);
        *arr = grown;
        *cap = ncap;
    }
    (*arr)[(*n)++] = p;
}

wf_client *
as(const char *actor)
{
    return as_groups(NULL, actor, NULL);
}

void *
call(wf_client *c, const char *method, const void *req, const ProtobufCMessageDescriptor *d,
     wf_client_status *st)
{
    char path[128];
    ProtobufCMessage *resp = NULL;
    snprintf(path, sizeof path, SVC "%s", method);
    int code = wf_client_call(c, path, req, d, &resp, NULL, st);
    if (code != GRPC_STATUS_OK)
        return NULL;
    pthread_mutex_lock(&kept_mu);
    keep(&kept, &nkept, &capkept, resp);
    pthread_mutex_unlock(&kept_mu);
    return resp;
}

Workflow__V1__DeployDefinitionResponse *
deploy_d(wf_client *c, const Workflow__V1__Definition *d, bool validate_only, wf_client_status *st)
{
    Workflow__V1__DeployDefinitionRequest req = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    req.definition = (Workflow__V1__Definition *)d;
    req.validate_only = validate_only;
    return call(c, "DeployDefinition", &req, &workflow__v1__deploy_definition_response__descriptor,
                st);
}

Workflow__V1__DeployDefinitionResponse *
deploy_as(wf_client *c, const nb *n)
{
    wf_client_status st;
    Workflow__V1__DeployDefinitionResponse *r = deploy_d(c, &n->d, false, &st);
    ck_ok(st);
    return r;
}

Workflow__V1__DeployDefinitionResponse *
deploy(const nb *n)
{
    return deploy_as(as("dev"), n);
}

Workflow__V1__GetInstanceResponse *
get_instance_as(wf_client *c, const char *id)
{
    Workflow__V1__GetInstanceRequest req = WORKFLOW__V1__GET_INSTANCE_REQUEST__INIT;
    wf_client_status st;
    req.instance_id = (char *)id;
    Workflow__V1__GetInstanceResponse *r =
        call(c, "GetInstance", &req, &workflow__v1__get_instance_response__descriptor, &st);
    ck_ok(st);
    return r;
}

Workflow__V1__GetInstanceResponse *
get_instance(const char *id)
{
    pthread_mutex_lock(&kept_mu);
    wf_client *c = reader;
    pthread_mutex_unlock(&kept_mu);
    if (c == NULL) {
        c = as(NULL);
        pthread_mutex_lock(&kept_mu);
        if (reader == NULL)
            reader = c;
        c = reader;
        pthread_mutex_unlock(&kept_mu);
    }
    return get_instance_as(c, id);
}

int
marking(const Workflow__V1__GetInstanceResponse *g, const char *place_id)
{
    for (size_t i = 0; i < g->n_marking; i++)
        if (strcmp(g->marking[i]->key, place_id) == 0)
            return g->marking[i]->value;
    return 0;
}

bool
has_violation(const wf_client_status *st, const char *prefix, const char *reason)
{
    for (int i = 0; i < st->nviolations && i < 8; i++)
        if (strncmp(st->violations[i], prefix, strlen(prefix)) == 0 &&
            (reason == NULL || strcmp(st->violation_reasons[i], reason) == 0))
            return true;
    return false;
}

nb *
net_new(const char *key)
{
    nb *n = wf_arena_calloc(ta, 1, sizeof *n);
    workflow__v1__definition__init(&n->d);
    n->d.key = (char *)key;
    n->d.kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_NET;
    n->d.places = n->p;
    n->d.transitions = n->t;
    n->d.arcs = n->a;
    return n;
}

void
place(nb *n, const char *id, Workflow__V1__PlaceKind kind)
{
    Workflow__V1__Place *p = wf_arena_calloc(ta, 1, sizeof *p);
    workflow__v1__place__init(p);
    p->id = (char *)id;
    p->kind = kind;
    n->p[n->d.n_places++] = p;
}

Workflow__V1__Transition *
trans(nb *n, const char *id, Workflow__V1__Trigger trigger)
{
    Workflow__V1__Transition *t = wf_arena_calloc(ta, 1, sizeof *t);
    workflow__v1__transition__init(t);
    t->id = (char *)id;
    t->trigger = trigger;
    n->t[n->d.n_transitions++] = t;
    return t;
}

Workflow__V1__Arc *
arc(nb *n, const char *source, const char *target)
{
    Workflow__V1__Arc *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__arc__init(a);
    a->source = (char *)source;
    a->target = (char *)target;
    n->a[n->d.n_arcs++] = a;
    return a;
}

Google__Protobuf__Duration *
dur(int64_t ms)
{
    Google__Protobuf__Duration *d = wf_arena_calloc(ta, 1, sizeof *d);
    google__protobuf__duration__init(d);
    d->seconds = ms / 1000;
    d->nanos = (int32_t)(ms % 1000) * 1000000;
    return d;
}

nb *
one_step(const char *key, const char *id, Workflow__V1__Trigger trigger)
{
    nb *n = net_new(key);
    place(n, "start", START);
    place(n, "end", END);
    trans(n, id, trigger);
    arc(n, "start", id);
    arc(n, id, "end");
    return n;
}

nb *
job_net(const char *key, const char *type, int max_attempts, int64_t initial_ms)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    with_job(trans(n, "work", T_AUTO), type, max_attempts, initial_ms);
    arc(n, "s", "work");
    arc(n, "work", "e");
    return n;
}

nb *
guarded_job_net(const char *key, const char *type, int max_attempts)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "big", NORMAL);
    place(n, "small", NORMAL);
    place(n, "e", END);
    with_job(trans(n, "work", T_AUTO), type, max_attempts, 0);
    trans(n, "finish_big", T_AUTO);
    trans(n, "finish_small", T_AUTO);
    arc(n, "s", "work");
    arc(n, "work", "big")->guard = ".amount > 100";
    arc(n, "work", "small")->guard = ".amount >= 0 and .amount <= 100";
    arc(n, "big", "finish_big");
    arc(n, "small", "finish_small");
    arc(n, "finish_big", "e");
    arc(n, "finish_small", "e");
    return n;
}

void
with_job(Workflow__V1__Transition *t, const char *type, int max_attempts, int64_t initial_ms)
{
    t->job_type = (char *)type;
    Workflow__V1__RetryPolicy *r = wf_arena_calloc(ta, 1, sizeof *r);
    workflow__v1__retry_policy__init(r);
    r->max_attempts = max_attempts;
    if (initial_ms > 0) {
        r->initial_backoff = dur(initial_ms);
        r->max_backoff = dur(initial_ms * 8);
    }
    t->retry = r;
}

sb *
steps_new(const char *key)
{
    sb *b = wf_arena_calloc(ta, 1, sizeof *b);
    workflow__v1__definition__init(&b->d);
    b->d.key = (char *)key;
    b->d.kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS;
    b->d.steps = b->s;
    return b;
}

Workflow__V1__Step *
step(sb *b, const char *id)
{
    ck_assert_uint_lt(b->d.n_steps, sizeof b->s / sizeof b->s[0]);
    Workflow__V1__Step *s = wf_arena_calloc(ta, 1, sizeof *s);
    workflow__v1__step__init(s);
    s->id = (char *)id;
    s->next = wf_arena_calloc(ta, 4, sizeof *s->next);
    b->s[b->d.n_steps++] = s;
    return s;
}

Workflow__V1__Step *
job_step(sb *b, const char *id, const char *type, int max_attempts)
{
    Workflow__V1__Step *s = step(b, id);
    s->job = wf_arena_calloc(ta, 1, sizeof *s->job);
    workflow__v1__job_step__init(s->job);
    s->job->job_type = (char *)type;
    if (max_attempts > 0) {
        s->retry = wf_arena_calloc(ta, 1, sizeof *s->retry);
        workflow__v1__retry_policy__init(s->retry);
        s->retry->max_attempts = max_attempts;
        s->retry->initial_backoff = dur(10);
    }
    return s;
}

Workflow__V1__Step *
call_step(sb *b, const char *id, const char *key, const char *input, const char *output)
{
    Workflow__V1__Step *s = step(b, id);
    s->call = wf_arena_calloc(ta, 1, sizeof *s->call);
    workflow__v1__call_step__init(s->call);
    s->call->definition_key = (char *)key;
    s->call->input_expression = (char *)(input != NULL ? input : "");
    s->call->output_expression = (char *)(output != NULL ? output : "");
    return s;
}

Workflow__V1__Step *
user_step(sb *b, const char *id, const char *user, const char *ids_expression)
{
    Workflow__V1__Step *s = step(b, id);
    s->user = wf_arena_calloc(ta, 1, sizeof *s->user);
    workflow__v1__user_step__init(s->user);
    s->user->assignee = user_assignee(user, ids_expression);
    return s;
}

Workflow__V1__Assignee *
user_assignee(const char *user, const char *ids_expression)
{
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = A_USER;
    if (ids_expression != NULL) {
        a->ids_expression = (char *)ids_expression;
    } else {
        a->ids = wf_arena_calloc(ta, 1, sizeof *a->ids);
        a->ids[0] = (char *)user;
        a->n_ids = 1;
    }
    return a;
}

void
next_rule(Workflow__V1__Step *s, const char *guard, const char *target)
{
    ck_assert_uint_lt(s->n_next, 4);
    Workflow__V1__NextRule *r = wf_arena_calloc(ta, 1, sizeof *r);
    workflow__v1__next_rule__init(r);
    r->guard = (char *)guard;
    r->step = (char *)target;
    s->next[s->n_next++] = r;
}

void
step_for_each(Workflow__V1__Step *s, const char *expr, const char *item, const char *output,
              Workflow__V1__CompletionMode mode, int quorum)
{
    s->for_each = (char *)expr;
    s->for_each_item = (char *)(item != NULL ? item : "");
    s->for_each_output = (char *)(output != NULL ? output : "");
    if (mode != 0) {
        Workflow__V1__CompletionPolicy *c = wf_arena_calloc(ta, 1, sizeof *c);
        workflow__v1__completion_policy__init(c);
        c->mode = mode;
        c->quorum = quorum;
        s->for_each_completion = c;
    }
}

Workflow__V1__Instance *
start_v(wf_client *c, const char *key, int32_t version, const char *vars, wf_client_status *st)
{
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    req.definition_key = (char *)key;
    req.version = version;
    req.variables_json = (char *)(vars != NULL ? vars : "");
    Workflow__V1__StartInstanceResponse *r =
        call(c, "StartInstance", &req, &workflow__v1__start_instance_response__descriptor, st);
    return r != NULL ? r->instance : NULL;
}

Workflow__V1__Instance *
start_order(wf_client *c, const char *key, const char *agg_id, const char *vars,
            const char *request_id)
{
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    wf_client_status st;
    req.definition_key = (char *)key;
    req.variables_json = (char *)(vars != NULL ? vars : "");
    req.request_id = (char *)(request_id != NULL ? request_id : "");
    if (agg_id != NULL) {
        agg.type = "order";
        agg.id = (char *)agg_id;
        req.aggregate = &agg;
    }
    Workflow__V1__StartInstanceResponse *r =
        call(c, "StartInstance", &req, &workflow__v1__start_instance_response__descriptor, &st);
    ck_ok(st);
    return r->instance;
}

Workflow__V1__Instance *
start_boss(const char *key, const char *vars)
{
    wf_client_status st;
    Workflow__V1__Instance *in = start_v(as("boss"), key, 0, vars, &st);
    ck_ok(st);
    return in;
}

Workflow__V1__CompleteTaskResponse *
complete_task_as(const char *actor, const char *task_id, const char *vars, wf_client_status *st)
{
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    req.task_id = (char *)task_id;
    req.variables_json = (char *)(vars != NULL ? vars : "");
    return call(as(actor), "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor,
                st);
}

Workflow__V1__Instance *
retry_c(const char *id, wf_client_status *st)
{
    Workflow__V1__RetryInstanceRequest req = WORKFLOW__V1__RETRY_INSTANCE_REQUEST__INIT;
    req.instance_id = (char *)id;
    Workflow__V1__RetryInstanceResponse *r = call(
        as("ops"), "RetryInstance", &req, &workflow__v1__retry_instance_response__descriptor, st);
    return r != NULL ? r->instance : NULL;
}

Workflow__V1__Instance *
set_vars(const char *id, const char *vars, wf_client_status *st)
{
    Workflow__V1__SetVariablesRequest req = WORKFLOW__V1__SET_VARIABLES_REQUEST__INIT;
    req.instance_id = (char *)id;
    req.variables_json = (char *)vars;
    Workflow__V1__SetVariablesResponse *r = call(
        as("ops"), "SetVariables", &req, &workflow__v1__set_variables_response__descriptor, st);
    return r != NULL ? r->instance : NULL;
}

Workflow__V1__Task *
task_of(const Workflow__V1__GetInstanceResponse *g, const char *transition_id, int status)
{
    for (size_t i = 0; i < g->n_tasks; i++)
        if (strcmp(g->tasks[i]->transition_id, transition_id) == 0 &&
            (status == 0 || (int)g->tasks[i]->status == status))
            return g->tasks[i];
    return NULL;
}

wf_client *
as_tenant(const char *tenant, const char *actor)
{
    return as_groups(tenant, actor, NULL);
}

wf_client *
as_groups(const char *tenant, const char *actor, const char *groups)
{
    wf_client_options o = {.target = ts.target,
                           .tenant = tenant,
                           .actor = actor,
                           .actor_groups = groups,
                           /* stretched like the suites' bounds: a long poll
                            * the test sizes by the time scale fits in it */
                           .timeout_ms = 15000 * wf_test_time_scale(),
                           .wait_for_ready = 1};
    wf_client *c = wf_client_new(&o);
    ck_assert_ptr_nonnull(c);
    pthread_mutex_lock(&kept_mu);
    keep(&clients, &nclients, &capclients, c);
    pthread_mutex_unlock(&kept_mu);
    return c;
}

/* As workflowd's: commits of a firing wake the streams watching them. */
static void
wake_streams(void *arg, const char *topic)
{
    wf_app_wake_streams(arg, topic);
}

static wf_code
fire_due_timer(void *arg, const wf_timer_row *timer, int64_t deadline_ms, bool *fired,
               wf_error *err)
{
    wf_runtime_host rt = {.store = ((wf_app *)arg)->store, .wake = wake_streams, .wake_arg = arg};
    return wf_runtime_fire_timer(&rt, timer, deadline_ms, fired, err);
}

bool
fire_timer(const char *instance_id, const char *timer_id)
{
    wf_timer_row row = {.id = (char *)timer_id,
                        .tenant = "default",
                        .root_id = (char *)instance_id,
                        .instance_id = (char *)instance_id};
    bool fired = false;
    wf_error err;
    wf_code rc = fire_due_timer(&ts.app, &row, wf_mono_ms() + 10000, &fired, &err);
    ck_assert_msg(rc == WF_OK, "fire: %s %s", wf_code_reason(rc), err.msg);
    return fired;
}

wf_scheduler *
scheduler_start(int64_t idle_ms)
{
    wf_scheduler_options o = {.idle_ms = idle_ms};
    wf_error err;
    wf_scheduler *s = wf_scheduler_start(ts.app.store, &o, fire_due_timer, &ts.app, &err);
    ck_assert_msg(s != NULL, "scheduler: %s", err.msg);
    return s;
}

/* ---- jobs and events ---------------------------------------------------------------------- */

Workflow__V1__ActivateJobsResponse *
activate_c(wf_client *c, const char *type, int max, int64_t lease_ms, int64_t wait_ms,
           wf_client_status *st)
{
    Workflow__V1__ActivateJobsRequest req = WORKFLOW__V1__ACTIVATE_JOBS_REQUEST__INIT;
    req.job_type = (char *)type;
    req.worker = "w1";
    req.max_jobs = max;
    if (lease_ms > 0)
        req.lease = dur(lease_ms);
    if (wait_ms > 0)
        req.wait = dur(wait_ms);
    return call(c, "ActivateJobs", &req, &workflow__v1__activate_jobs_response__descriptor, st);
}

Workflow__V1__ActivateJobsResponse *
activate(const char *type, int max, int64_t lease_ms, int64_t wait_ms)
{
    wf_client_status st;
    Workflow__V1__ActivateJobsResponse *r = activate_c(as(NULL), type, max, lease_ms, wait_ms, &st);
    ck_ok(st);
    return r;
}

int
complete_job_c(wf_client *c, const char *key, const char *vars, wf_client_status *st)
{
    Workflow__V1__CompleteJobRequest req = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    req.job_key = (char *)key;
    req.variables_json = (char *)(vars != NULL ? vars : "");
    call(c, "CompleteJob", &req, &workflow__v1__complete_job_response__descriptor, st);
    return st->code;
}

Workflow__V1__Job *
one_job(const char *type)
{
    Workflow__V1__ActivateJobsResponse *r = activate(type, 5, 0, 2000);
    ck_assert_msg(r->n_jobs == 1, "%zu jobs of %s", r->n_jobs, type);
    return r->jobs[0];
}

int
fail_job(const char *key, const char *msg, int retryable, int64_t backoff_ms, wf_client_status *st)
{
    Workflow__V1__FailJobRequest req = WORKFLOW__V1__FAIL_JOB_REQUEST__INIT;
    req.job_key = (char *)key;
    req.error_message = (char *)msg;
    if (retryable >= 0) {
        req.retryable_presence_case = WORKFLOW__V1__FAIL_JOB_REQUEST__RETRYABLE_PRESENCE_RETRYABLE;
        req.retryable = retryable;
    }
    if (backoff_ms >= 0)
        req.backoff_override = dur(backoff_ms);
    call(as(NULL), "FailJob", &req, &workflow__v1__fail_job_response__descriptor, st);
    return st->code;
}

/* root's tree events (at most 1000) read into a; *n their number. */
static wf_event_row *
read_events(const char *root, wf_arena *a, size_t *n)
{
    wf_store_ctx sc = {test_tenant != NULL ? test_tenant : "default", 0, a};
    wf_event_filter f = {.instance_id = root};
    wf_event_row *ev = NULL;
    wf_error err;
    *n = 0;
    ck_assert_int_eq(wf_store_read_events(ts.app.store, &sc, 0, &f, 1000, &ev, n, &err), WF_OK);
    return ev;
}

wf_event_row *
events_of(const char *root, size_t *n)
{
    return read_events(root, ta, n);
}

const wf_event_row *
last_event(const char *root, const char *type)
{
    size_t n;
    const wf_event_row *ev = events_of(root, &n);
    const wf_event_row *last = NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(ev[i].type, type) == 0)
            last = &ev[i];
    return last;
}

json_t *
event_data(const char *root, const char *type)
{
    const wf_event_row *e = last_event(root, type);
    ck_assert_msg(e != NULL, "no %s in %s", type, event_types(root));
    return json_parsed(e->data_json);
}

json_t *
json_parsed(const char *text)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    ck_assert_msg(v != NULL, "not JSON: %s", text);
    return v;
}

const char *
json_in_ta(json_t *v)
{
    char *s = v != NULL ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    const char *out = wf_arena_strdup(ta, s != NULL ? s : "");
    free(s);
    json_decref(v);
    return out;
}

const char *
var_of(const char *json, const char *key)
{
    json_t *o = json_parsed(json);
    const char *out = json_in_ta(json_incref(json_object_get(o, key)));
    json_decref(o);
    return out;
}

char *
event_types(const char *root)
{
    static char out[8192];
    wf_arena *a = wf_arena_new(); /* polling loops call it thousands of times */
    size_t n;
    const wf_event_row *ev = read_events(root, a, &n);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(out);
        snprintf(out + len, sizeof out - len, "%s%s", i ? " " : "", ev[i].type);
    }
    wf_arena_free(a);
    return out;
}

void
sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}
