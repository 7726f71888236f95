/*
 * test_e2e_resources: the resources of a tenant (DeclareResource,
 * GetResource, ListResources, UpdateResource, DeleteResource) through the
 * real gRPC client, on the store WF_TEST_STORE names (memory and
 * Postgres): declaring is idempotent, the settings read back as written,
 * listing pages newest first, every refusal has its reason and field, and
 * a tenant sees only its own resources; transitions and steps name the
 * resources they need, checked at deploy and read back by GetDefinition.
 */
#include <string.h>

#include "net_kit.h"

#define R_QUEUE WORKFLOW__V1__RESOURCE_STRATEGY__RESOURCE_STRATEGY_QUEUE
#define R_CANCEL_NEWEST WORKFLOW__V1__RESOURCE_STRATEGY__RESOURCE_STRATEGY_CANCEL_NEWEST

static char *tenant;

static void
res_setup(void)
{
    tenant = setup_tenant(NULL, "res");
}

/* True when the error's metadata holds "key=value". */
static bool
has_meta(const wf_client_status *st, const char *kv)
{
    for (int i = 0; i < st->nmetadata && i < 8; i++)
        if (strcmp(st->metadata[i], kv) == 0)
            return true;
    return false;
}

/* The settings of a Declare or Update request. */
typedef struct res_spec {
    const char *name;
    int32_t capacity;
    bool per_key;
    int32_t rate_limit;
    int64_t period_ms;
    int strategy;
    const char *request_id;
} res_spec;

static Workflow__V1__ResourceRate *
rate_of(const res_spec *s)
{
    if (s->rate_limit == 0 && s->period_ms == 0)
        return NULL;
    Workflow__V1__ResourceRate *r = wf_arena_calloc(ta, 1, sizeof *r);
    workflow__v1__resource_rate__init(r);
    r->limit = s->rate_limit;
    r->period = s->period_ms != 0 ? dur(s->period_ms) : NULL;
    return r;
}

static Workflow__V1__DeclareResourceResponse *
declare_c(wf_client *c, const res_spec *s, wf_client_status *st)
{
    Workflow__V1__DeclareResourceRequest req = WORKFLOW__V1__DECLARE_RESOURCE_REQUEST__INIT;
    req.name = (char *)s->name;
    req.capacity = s->capacity;
    req.per_key = s->per_key;
    req.rate = rate_of(s);
    req.strategy = (Workflow__V1__ResourceStrategy)s->strategy;
    req.request_id = (char *)(s->request_id != NULL ? s->request_id : "");
    return call(c, "DeclareResource", &req, &workflow__v1__declare_resource_response__descriptor,
                st);
}

static Workflow__V1__Resource *
update_c(wf_client *c, const res_spec *s, wf_client_status *st)
{
    Workflow__V1__UpdateResourceRequest req = WORKFLOW__V1__UPDATE_RESOURCE_REQUEST__INIT;
    req.name = (char *)s->name;
    req.capacity = s->capacity;
    req.per_key = s->per_key;
    req.rate = rate_of(s);
    req.strategy = (Workflow__V1__ResourceStrategy)s->strategy;
    req.request_id = (char *)(s->request_id != NULL ? s->request_id : "");
    Workflow__V1__UpdateResourceResponse *r =
        call(c, "UpdateResource", &req, &workflow__v1__update_resource_response__descriptor, st);
    return r != NULL ? r->resource : NULL;
}

static Workflow__V1__Resource *
get_c(wf_client *c, const char *name, wf_client_status *st)
{
    Workflow__V1__GetResourceRequest req = WORKFLOW__V1__GET_RESOURCE_REQUEST__INIT;
    req.name = (char *)name;
    Workflow__V1__GetResourceResponse *r =
        call(c, "GetResource", &req, &workflow__v1__get_resource_response__descriptor, st);
    return r != NULL ? r->resource : NULL;
}

static Workflow__V1__ListResourcesResponse *
list_c(wf_client *c, int32_t page_size, const char *token, wf_client_status *st)
{
    Workflow__V1__ListResourcesRequest req = WORKFLOW__V1__LIST_RESOURCES_REQUEST__INIT;
    req.page_size = page_size;
    req.page_token = (char *)(token != NULL ? token : "");
    return call(c, "ListResources", &req, &workflow__v1__list_resources_response__descriptor, st);
}

static void
delete_c(wf_client *c, const char *name, const char *request_id, wf_client_status *st)
{
    Workflow__V1__DeleteResourceRequest req = WORKFLOW__V1__DELETE_RESOURCE_REQUEST__INIT;
    req.name = (char *)name;
    req.request_id = (char *)(request_id != NULL ? request_id : "");
    call(c, "DeleteResource", &req, &workflow__v1__delete_resource_response__descriptor, st);
}

static Workflow__V1__Resource *
declare_ok(const res_spec *s, bool created)
{
    wf_client_status st;
    Workflow__V1__DeclareResourceResponse *r = declare_c(me("ops"), s, &st);
    ck_ok(st);
    ck_assert_int_eq(r->created, created);
    return r->resource;
}

/* A keyed capacity and a rate read back as declared, with the defaults
 * (QUEUE) filled; GetResource answers the same. */
WF_TEST(test_declare_and_get)
{
    res_spec charges = {.name = "charges", .capacity = 2, .per_key = true};
    Workflow__V1__Resource *r = declare_ok(&charges, true);
    ck_assert_str_eq(r->name, "charges");
    ck_assert_int_eq(r->capacity, 2);
    ck_assert(r->per_key);
    ck_assert_ptr_null(r->rate);
    ck_assert_int_eq(r->strategy, R_QUEUE);
    ck_assert_int_eq(r->version, 1);
    ck_assert_str_eq(r->created_by, "ops");
    ck_assert_ptr_nonnull(r->create_time);

    res_spec carrier = {
        .name = "carrier.api", .rate_limit = 100, .period_ms = 60000, .strategy = R_CANCEL_NEWEST};
    declare_ok(&carrier, true);
    wf_client_status st;
    Workflow__V1__Resource *g = get_c(me("viewer"), "carrier.api", &st);
    ck_ok(st);
    ck_assert_int_eq(g->capacity, 0);
    ck_assert(!g->per_key);
    ck_assert_ptr_nonnull(g->rate);
    ck_assert_int_eq(g->rate->limit, 100);
    ck_assert_int_eq(g->rate->period->seconds, 60);
    ck_assert_int_eq(g->strategy, R_CANCEL_NEWEST);
}
END_TEST

/* Declaring the same settings again writes nothing (version 1, created
 * false); other settings replace them (version 2); a request id replays
 * its first answer. */
WF_TEST(test_declare_is_idempotent)
{
    res_spec s = {.name = "charges", .capacity = 2, .per_key = true};
    declare_ok(&s, true);
    Workflow__V1__Resource *again = declare_ok(&s, false);
    ck_assert_int_eq(again->version, 1);
    s.capacity = 3;
    s.request_id = "d-1";
    Workflow__V1__Resource *changed = declare_ok(&s, false);
    ck_assert_int_eq(changed->version, 2);
    ck_assert_int_eq(changed->capacity, 3);
    /* The same request id: the first answer, nothing written twice. */
    Workflow__V1__Resource *replayed = declare_ok(&s, false);
    ck_assert_int_eq(replayed->version, 2);
    wf_client_status st;
    ck_assert_int_eq(get_c(me("ops"), "charges", &st)->version, 2);
    /* The same request id with other settings is refused. */
    s.capacity = 4;
    declare_c(me("ops"), &s, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");
}
END_TEST

/* Each bad setting is INVALID_ARGUMENT with a violation naming its field. */
WF_TEST(test_declare_refusals)
{
    char long_name[140];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    const struct {
        res_spec s;
        const char *field;
    } bad[] = {
        {{.name = "", .capacity = 1}, "name"},
        {{.name = long_name, .capacity = 1}, "name"},
        {{.name = "a b", .capacity = 1}, "name"},
        {{.name = "r", .capacity = -1}, "capacity"},
        {{.name = "r"}, "capacity"},
        {{.name = "r", .rate_limit = 5}, "rate.period"},
        {{.name = "r", .period_ms = 1000}, "rate.limit"},
        {{.name = "r", .rate_limit = 5, .period_ms = 86400001}, "rate.period"},
        {{.name = "r", .capacity = 1, .strategy = 9}, "strategy"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wf_client_status st;
        declare_c(me("ops"), &bad[i].s, &st);
        ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
        ck_assert_msg(has_violation(&st, bad[i].field, "INVALID_ARGUMENT"), "case %zu: %s", i,
                      st.message);
    }
    wf_client_status st;
    res_spec ok = {.name = "r", .capacity = 1};
    declare_c(as_tenant(tenant, NULL), &ok, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
    get_c(me("ops"), "r", &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "RESOURCE_NOT_FOUND");
}
END_TEST

/* UpdateResource replaces the settings of a resource that exists and
 * refuses an unknown one; DeleteResource removes it (then NOT_FOUND). */
WF_TEST(test_update_and_delete)
{
    res_spec s = {.name = "charges", .capacity = 2};
    declare_ok(&s, true);
    wf_client_status st;
    s.capacity = 5;
    s.per_key = true;
    Workflow__V1__Resource *r = update_c(me("ops"), &s, &st);
    ck_ok(st);
    ck_assert_int_eq(r->capacity, 5);
    ck_assert(r->per_key);
    ck_assert_int_eq(r->version, 2);
    ck_assert_int_eq(get_c(me("ops"), "charges", &st)->capacity, 5);

    res_spec none = {.name = "nothing", .capacity = 1};
    update_c(me("ops"), &none, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "RESOURCE_NOT_FOUND");
    ck_assert(has_meta(&st, "resourceName=nothing"));

    delete_c(me("ops"), "charges", "del-1", &st);
    ck_ok(st);
    get_c(me("ops"), "charges", &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "RESOURCE_NOT_FOUND");
    /* The same request id replays the deletion's answer. */
    delete_c(me("ops"), "charges", "del-1", &st);
    ck_ok(st);
    delete_c(me("ops"), "charges", NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "RESOURCE_NOT_FOUND");
}
END_TEST

/* ListResources pages newest first; another tenant sees none of them and
 * may declare the same name for itself. */
WF_TEST(test_list_pages_and_tenants)
{
    const char *names[] = {"a", "b", "c"};
    for (size_t i = 0; i < 3; i++) {
        res_spec s = {.name = names[i], .capacity = 1};
        declare_ok(&s, true);
    }
    wf_client_status st;
    const char *token = NULL;
    size_t seen = 0;
    for (int page = 0; page < 5; page++) {
        Workflow__V1__ListResourcesResponse *l = list_c(me("ops"), 2, token, &st);
        ck_ok(st);
        seen += l->n_resources;
        token = l->next_page_token;
        if (token[0] == '\0')
            break;
    }
    ck_assert_uint_eq(seen, 3);

    wf_client *other = as_tenant(u("res-other"), "ops");
    Workflow__V1__ListResourcesResponse *l = list_c(other, 0, NULL, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_resources, 0);
    get_c(other, "a", &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "RESOURCE_NOT_FOUND");
    res_spec mine = {.name = "a", .capacity = 7};
    Workflow__V1__DeclareResourceResponse *d = declare_c(other, &mine, &st);
    ck_ok(st);
    ck_assert(d->created);
    ck_assert_int_eq(get_c(me("ops"), "a", &st)->capacity, 1);
    list_c(me("ops"), -1, NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

/* ---- resources named by definitions ------------------------------------------------------ */

static Workflow__V1__ResourceUse *
use_of(const char *name, const char *key_expression)
{
    Workflow__V1__ResourceUse *r = wf_arena_calloc(ta, 1, sizeof *r);
    workflow__v1__resource_use__init(r);
    r->name = (char *)name;
    r->key_expression = (char *)key_expression;
    return r;
}

static void
uses(Workflow__V1__ResourceUse ***v, size_t *n, Workflow__V1__ResourceUse *a,
     Workflow__V1__ResourceUse *b)
{
    *v = wf_arena_calloc(ta, 2, sizeof **v);
    (*v)[0] = a;
    (*v)[1] = b;
    *n = b != NULL ? 2 : 1;
}

static const Workflow__V1__Definition *
get_definition_c(const char *key)
{
    Workflow__V1__GetDefinitionRequest req = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    wf_client_status st;
    req.key = (char *)key;
    Workflow__V1__GetDefinitionResponse *g = call(
        me("dev"), "GetDefinition", &req, &workflow__v1__get_definition_response__descriptor, &st);
    ck_ok(st);
    return g->definition;
}

/* True when the deploy's findings hold code at path. */
static bool
has_finding(const Workflow__V1__DeployDefinitionResponse *r, const char *code, const char *path)
{
    for (size_t i = 0; r != NULL && i < r->n_errors; i++)
        if (strcmp(r->errors[i]->code, code) == 0 && strcmp(r->errors[i]->path, path) == 0)
            return true;
    return false;
}

/* A job transition names a keyed resource and a whole one: the deploy
 * keeps both, GetDefinition answers them in order, and naming none
 * deploys as before. */
WF_TEST(test_transition_names_resources)
{
    nb *n = job_net("limited", "charge", 0, 0);
    Workflow__V1__Transition *t = n->t[0];
    uses(&t->resources, &t->n_resources, use_of("charges", ".customer"), use_of("carrier.api", ""));
    Workflow__V1__DeployDefinitionResponse *r = deploy_as(me("dev"), n);
    ck_assert(r->created);
    const Workflow__V1__Definition *d = get_definition_c("limited");
    ck_assert_uint_eq(d->n_transitions, 1);
    t = d->transitions[0];
    ck_assert_uint_eq(t->n_resources, 2);
    ck_assert_str_eq(t->resources[0]->name, "charges");
    ck_assert_str_eq(t->resources[0]->key_expression, ".customer");
    ck_assert_str_eq(t->resources[1]->name, "carrier.api");
    ck_assert_str_eq(t->resources[1]->key_expression, "");
    /* Another key expression is other content: the next version. */
    n->t[0]->resources[0]->key_expression = ".region";
    r = deploy_as(me("dev"), n);
    ck_assert(r->created);
    ck_assert_int_eq(r->definition->version, 2);
    ck_assert_str_eq(r->definition->transitions[0]->resources[0]->key_expression, ".region");
}
END_TEST

/* A step names resources: GetDefinition answers them on the step and on
 * its compiled transition. */
WF_TEST(test_step_names_resources)
{
    Workflow__V1__Definition d = WORKFLOW__V1__DEFINITION__INIT;
    Workflow__V1__Step *s = wf_arena_calloc(ta, 1, sizeof *s);
    workflow__v1__step__init(s);
    s->id = "charge";
    s->job = wf_arena_calloc(ta, 1, sizeof *s->job);
    workflow__v1__job_step__init(s->job);
    s->job->job_type = "charge";
    uses(&s->resources, &s->n_resources, use_of("charges", ".customer"), NULL);
    d.key = "limited-steps";
    d.kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_STEPS;
    d.steps = &s;
    d.n_steps = 1;
    wf_client_status st;
    deploy_d(me("dev"), &d, false, &st);
    ck_ok(st);
    const Workflow__V1__Definition *g = get_definition_c("limited-steps");
    ck_assert_uint_eq(g->n_steps, 1);
    ck_assert_uint_eq(g->steps[0]->n_resources, 1);
    ck_assert_str_eq(g->steps[0]->resources[0]->name, "charges");
    ck_assert_str_eq(g->steps[0]->resources[0]->key_expression, ".customer");
    bool compiled = false;
    for (size_t i = 0; i < g->n_transitions; i++)
        if (strcmp(g->transitions[i]->id, "charge") == 0)
            compiled = g->transitions[i]->n_resources == 1;
    ck_assert(compiled);
}
END_TEST

/* Every refusal of a named resource, each at its path, and a deploy with
 * them refused as a whole. */
WF_TEST(test_resource_uses_refused_at_deploy)
{
    nb *n = job_net("limited-bad", "charge", 0, 0);
    Workflow__V1__Transition *w = n->t[0];
    w->resources = wf_arena_calloc(ta, 4, sizeof *w->resources);
    w->resources[0] = use_of("", "");
    w->resources[1] = use_of("a b", "");
    w->resources[2] = use_of("charges", ".customer |");
    w->resources[3] = use_of("charges", "");
    w->n_resources = 4;
    Workflow__V1__Transition *wait = trans(n, "wait", WORKFLOW__V1__TRIGGER__TRIGGER_TIME);
    wait->delay = dur(1000);
    uses(&wait->resources, &wait->n_resources, use_of("charges", ""), NULL);
    arc(n, "s", "wait");
    arc(n, "wait", "e");
    wf_client_status st;
    Workflow__V1__DeployDefinitionResponse *r = deploy_d(me("dev"), &n->d, true, &st);
    ck_ok(st);
    ck_assert(has_finding(r, "REQUIRED", "transitions[0].resources[0].name"));
    ck_assert(has_finding(r, "INVALID_VALUE", "transitions[0].resources[1].name"));
    ck_assert(has_finding(r, "EXPRESSION_INVALID", "transitions[0].resources[2].key_expression"));
    ck_assert(has_finding(r, "RESOURCE_DUPLICATE", "transitions[0].resources[3].name"));
    ck_assert(has_finding(r, "TRIGGER_FIELD_CONFLICT", "transitions[1].resources"));
    deploy_d(me("dev"), &n->d, false, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert(
        has_violation(&st, "definition.transitions[0].resources[3].name", "RESOURCE_DUPLICATE"));
}
END_TEST

int
main(void)
{
    return wf_test_run(wf_test_suite("e2e_resources", "resources", res_setup, teardown, 30));
}
