/*
 * End-to-end tests of Petri-net definitions over gRPC, on the memory store
 * and on Postgres (WF_TEST_STORE=pg): DeployDefinition with every
 * validation error at once (codes and paths in google.rpc.BadRequest),
 * versioning, GetDefinition / ListDefinitions, the validity window and the
 * snapshot of the version an instance started with; USER transitions
 * (tasks in the shared inbox, USERS quorum), the deferred choice of a USER
 * and a TIME transition in both directions, AND-split/join, a guarded
 * OR-split with a default arc and NO_ARC_MATCHED; jobs: activation,
 * completion, concurrent workers, lease expiry and stale keys, FailJob
 * with backoff and exhaustion, long polls; GetInstance's explanation of
 * where a net is parked.
 *
 * Timers are fired the way the scheduler fires them, by calling
 * wf_runtime_fire_timer on the server's store (the scheduler thread itself is
 * not part of the test server).
 *
 * Postgres keeps rows between runs: every definition key, job type and
 * user is made unique with a per-test suffix.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/status.h>

#include "defcache.h"
#include "expr.h"
#include "net_runtime.h"
#include "net_kit.h"
#include "test_support.h"
#include "wf_id.h"
#include "wf_time.h"
#include "workflow/v1/workflow.pb-c.h"

#define SVC "/workflow.v1.WorkflowService/"

static Google__Protobuf__Timestamp *
at(int64_t us)
{
    Google__Protobuf__Timestamp *t = wf_arena_calloc(ta, 1, sizeof *t);
    google__protobuf__timestamp__init(t);
    t->seconds = us / 1000000;
    t->nanos = (int32_t)(us % 1000000) * 1000;
    return t;
}

/* A USER transition's assignee: kind and ids (NULL-terminated). */
static void
user(Workflow__V1__Transition *t, Workflow__V1__AssigneeKind kind, ...)
{
    Workflow__V1__Assignee *a = wf_arena_calloc(ta, 1, sizeof *a);
    workflow__v1__assignee__init(a);
    a->kind = kind;
    a->ids = wf_arena_calloc(ta, 8, sizeof *a->ids);
    va_list ap;
    va_start(ap, kind);
    for (const char *id; (id = va_arg(ap, const char *)) != NULL;)
        a->ids[a->n_ids++] = (char *)id;
    va_end(ap);
    t->assignee = a;
}

/* ---- calls --------------------------------------------------------------------------------- */

/* The task assigned to assignee_id. */
static Workflow__V1__Task *
task_for(const Workflow__V1__GetInstanceResponse *g, const char *assignee_id)
{
    for (size_t i = 0; i < g->n_tasks; i++)
        if (strcmp(g->tasks[i]->assignee_id, assignee_id) == 0)
            return g->tasks[i];
    ck_abort_msg("no task for %s", assignee_id);
    return NULL;
}

/* ---- definitions ------------------------------------------------------------------------------
 */

WF_TEST(test_deploy_reports_every_error_at_once)
{
    nb *n = net_new(u("bad"));
    place(n, "s1", START);
    place(n, "s2", START);                               /* two START places, no END */
    Workflow__V1__Transition *t = trans(n, "t", T_USER); /* no assignee */
    (void)t;
    Workflow__V1__Arc *a0 = arc(n, "s1", "t");
    a0->guard = ".x";                          /* guard on an input arc */
    arc(n, "t", "zz");                         /* unknown target */
    Workflow__V1__Arc *a2 = arc(n, "t", "s2"); /* into a START place: allowed */
    a2->guard = ".a ==";                       /* does not compile */
    wf_client *dev = as("dev");
    wf_client_status st;

    Workflow__V1__DeployDefinitionResponse *r = deploy_d(dev, &n->d, true, &st);
    ck_ok(st);
    ck_assert_ptr_null(r->definition);
    ck_assert(!r->created);
    const char *want[][2] = {{"START_PLACE_COUNT", "places"},
                             {"END_PLACE_COUNT", "places"},
                             {"TRIGGER_FIELD_MISSING", "transitions[0].assignee"},
                             {"GUARD_ON_INPUT_ARC", "arcs[0].guard"},
                             {"UNKNOWN_REFERENCE", "arcs[1].target"},
                             {"GUARD_INVALID", "arcs[2].guard"}};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        bool found = false;
        for (size_t i = 0; i < r->n_errors && !found; i++)
            found = strcmp(r->errors[i]->code, want[w][0]) == 0 &&
                    strcmp(r->errors[i]->path, want[w][1]) == 0 &&
                    r->errors[i]->severity ==
                        WORKFLOW__V1__VALIDATION_SEVERITY__VALIDATION_SEVERITY_ERROR &&
                    r->errors[i]->message[0] != '\0';
        ck_assert_msg(found, "no %s at %s", want[w][0], want[w][1]);
    }
    size_t n_errors = 0; /* ERRORs; a MISSING_DEFAULT_ARC warning comes too */
    for (size_t i = 0; i < r->n_errors; i++)
        n_errors +=
            r->errors[i]->severity == WORKFLOW__V1__VALIDATION_SEVERITY__VALIDATION_SEVERITY_ERROR;
    ck_assert_uint_ge(n_errors, 6);
    ck_assert_uint_eq(r->n_errors, n_errors + 1);

    /* The same definition deployed: refused with every error listed. */
    ck_assert_ptr_null(deploy_d(dev, &n->d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert_int_eq(st.nviolations, (int)n_errors);
    /* Each violation: the request path, the validation code as reason. */
    bool seen = false;
    for (int i = 0; i < st.nviolations && i < 8; i++)
        seen |= strcmp(st.violations[i],
                       "definition.places: a net needs exactly one START place, found 2") == 0 &&
                strcmp(st.violation_reasons[i], "START_PLACE_COUNT") == 0;
    ck_assert_msg(seen, "violation %s (%s)", st.violations[0], st.violation_reasons[0]);
    seen = false;
    for (int i = 0; i < st.nviolations && i < 8; i++)
        seen |= strncmp(st.violations[i], "definition.arcs[1].target: ", 27) == 0 &&
                strcmp(st.violation_reasons[i], "UNKNOWN_REFERENCE") == 0;
    ck_assert(seen);
    /* ErrorInfo.metadata names the definition. */
    ck_assert_int_eq(st.nmetadata, 1);
    char want_md[160];
    snprintf(want_md, sizeof want_md, "definitionKey=%s", n->d.key);
    ck_assert_str_eq(st.metadata[0], want_md);
    /* Nothing was stored. */
    Workflow__V1__GetDefinitionRequest g = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    g.key = n->d.key;
    ck_assert_ptr_null(
        call(dev, "GetDefinition", &g, &workflow__v1__get_definition_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");

    /* No kind; an AD_HOC with places. */
    Workflow__V1__Definition d = WORKFLOW__V1__DEFINITION__INIT;
    d.key = u("nokind");
    ck_assert_ptr_null(deploy_d(dev, &d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert_int_eq(st.nviolations, 1);
    ck_assert_str_eq(st.violations[0],
                     "definition.kind: definition kind is required (AD_HOC, NET or STEPS)");
    ck_assert_str_eq(st.violation_reasons[0], "REQUIRED");
    n->d.kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_AD_HOC;
    ck_assert_ptr_null(deploy_d(dev, &n->d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    ck_assert_int_eq(st.nviolations, 3);
    /* Without an actor the interceptor refuses. */
    ck_assert_ptr_null(deploy_d(as(NULL), &d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "ACTOR_MISSING");
}
END_TEST

/* s -> review (USER reviewer) -> e */
static nb *
simple_net(const char *key, const char *reviewer, const char *name)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "review", T_USER);
    t->name = (char *)name;
    user(t, A_USER, reviewer, NULL);
    arc(n, "s", "review");
    arc(n, "review", "e");
    return n;
}

WF_TEST(test_versions_get_and_list)
{
    char *key = u("ver");
    Workflow__V1__DeployDefinitionResponse *r = deploy(simple_net(key, "alice", "First"));
    ck_assert(r->created);
    ck_assert_int_eq(r->definition->version, 1);
    ck_assert_str_eq(r->definition->created_by, "dev");
    ck_assert_ptr_nonnull(r->definition->created_at);
    ck_assert_uint_eq(r->n_errors, 0);
    ck_assert_uint_eq(r->definition->n_arcs, 2);
    ck_assert_int_eq(r->definition->arcs[0]->weight, 1); /* default made explicit */
    /* Identical content: the same version. */
    r = deploy(simple_net(key, "alice", "First"));
    ck_assert(!r->created);
    ck_assert_int_eq(r->definition->version, 1);
    /* Changed content: the next version. */
    r = deploy(simple_net(key, "alice", "Second"));
    ck_assert(r->created);
    ck_assert_int_eq(r->definition->version, 2);
    r = deploy(simple_net(key, "alice", "Third"));
    ck_assert_int_eq(r->definition->version, 3);

    wf_client *c = as(NULL);
    wf_client_status st;
    Workflow__V1__GetDefinitionRequest g = WORKFLOW__V1__GET_DEFINITION_REQUEST__INIT;
    g.key = key;
    Workflow__V1__GetDefinitionResponse *gr =
        call(c, "GetDefinition", &g, &workflow__v1__get_definition_response__descriptor, &st);
    ck_ok(st);
    ck_assert_int_eq(gr->definition->version, 3);
    ck_assert_str_eq(gr->definition->transitions[0]->name, "Third");
    g.version = 1;
    gr = call(c, "GetDefinition", &g, &workflow__v1__get_definition_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(gr->definition->transitions[0]->name, "First");
    ck_assert_int_eq(gr->definition->kind, WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_NET);
    ck_assert_str_eq(gr->definition->transitions[0]->assignee->ids[0], "alice");
    ck_assert_int_eq(gr->definition->places[0]->kind, START);
    g.version = 9;
    ck_assert_ptr_null(
        call(c, "GetDefinition", &g, &workflow__v1__get_definition_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    g.version = -1;
    ck_assert_ptr_null(
        call(c, "GetDefinition", &g, &workflow__v1__get_definition_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");

    /* Every version of the key, newest first, two per page. */
    Workflow__V1__ListDefinitionsRequest l = WORKFLOW__V1__LIST_DEFINITIONS_REQUEST__INIT;
    l.key = key;
    l.page_size = 2;
    Workflow__V1__ListDefinitionsResponse *lr =
        call(c, "ListDefinitions", &l, &workflow__v1__list_definitions_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(lr->n_definitions, 2);
    ck_assert_int_eq(lr->definitions[0]->version, 3);
    ck_assert_int_eq(lr->definitions[1]->version, 2);
    ck_assert_str_ne(lr->next_page_token, "");
    l.page_token = lr->next_page_token;
    lr = call(c, "ListDefinitions", &l, &workflow__v1__list_definitions_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(lr->n_definitions, 1);
    ck_assert_int_eq(lr->definitions[0]->version, 1);
    ck_assert_str_eq(lr->next_page_token, "");
    /* A token of another query is refused. */
    l.key = u("other");
    ck_assert_ptr_null(
        call(c, "ListDefinitions", &l, &workflow__v1__list_definitions_response__descriptor, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");

    /* The latest version of every key, by key, in small pages: this key
     * appears once, at version 3, and keys ascend. */
    char *key2 = u("ver2");
    deploy(simple_net(key2, "bob", "Only"));
    Workflow__V1__ListDefinitionsRequest all = WORKFLOW__V1__LIST_DEFINITIONS_REQUEST__INIT;
    all.page_size = 3;
    int seen = 0, seen2 = 0;
    char prev[256] = "";
    for (int pages = 0; pages < 10000; pages++) {
        lr = call(c, "ListDefinitions", &all, &workflow__v1__list_definitions_response__descriptor,
                  &st);
        ck_ok(st);
        for (size_t i = 0; i < lr->n_definitions; i++) {
            const Workflow__V1__Definition *d = lr->definitions[i];
            ck_assert_msg(strcmp(prev, d->key) < 0, "%s after %s", d->key, prev);
            snprintf(prev, sizeof prev, "%s", d->key);
            if (strcmp(d->key, key) == 0) {
                seen++;
                ck_assert_int_eq(d->version, 3);
            }
            seen2 += strcmp(d->key, key2) == 0;
        }
        if (lr->next_page_token[0] == '\0')
            break;
        all.page_token = lr->next_page_token;
    }
    ck_assert_int_eq(seen, 1);
    ck_assert_int_eq(seen2, 1);

    /* AD_HOC definitions are versioned the same way and start as before. */
    Workflow__V1__Definition ad = WORKFLOW__V1__DEFINITION__INIT;
    ad.key = u("adhoc");
    ad.kind = WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_AD_HOC;
    ad.name = "Leave";
    r = deploy_d(as("dev"), &ad, false, &st);
    ck_ok(st);
    ck_assert(r->created);
    ck_assert_int_eq(r->definition->kind, WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_AD_HOC);
    r = deploy_d(as("dev"), &ad, false, &st);
    ck_assert(!r->created);
    Workflow__V1__Instance *in = start_boss(ad.key, NULL);
    ck_assert_int_eq(in->definition_version, 1);
    ck_assert_uint_eq(get_instance(in->id)->n_marking, 0);
}
END_TEST

#define K_AD_HOC WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_AD_HOC
#define K_NET WORKFLOW__V1__DEFINITION_KIND__DEFINITION_KIND_NET

/* Versions of key, asserting each has kind. */
static size_t
versions_of(const char *key, Workflow__V1__DefinitionKind kind)
{
    Workflow__V1__ListDefinitionsRequest req = WORKFLOW__V1__LIST_DEFINITIONS_REQUEST__INIT;
    wf_client_status st;
    req.key = (char *)key;
    Workflow__V1__ListDefinitionsResponse *l =
        call(as(NULL), "ListDefinitions", &req,
             &workflow__v1__list_definitions_response__descriptor, &st);
    ck_ok(st);
    for (size_t i = 0; i < l->n_definitions; i++)
        ck_assert_int_eq(l->definitions[i]->kind, kind);
    return l->n_definitions;
}

/* A refused NET deploy, then a start that creates an AD_HOC version 1: a
 * later NET deploy of that key is refused (it once became version 2), and
 * so is an AD_HOC deploy onto a NET key. */
WF_TEST(test_a_key_never_changes_kind)
{
    char *key = u("kind");
    wf_client_status st;
    nb *bad = net_new(key);
    place(bad, "e", END); /* no START place */
    ck_assert_ptr_null(deploy_d(as("dev"), &bad->d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");
    Workflow__V1__Instance *in = start_boss(key, NULL);
    ck_assert_int_eq(in->definition_version, 1);
    ck_assert_ptr_null(deploy_d(as("dev"), &simple_net(key, "alice", "Net")->d, false, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "DEFINITION_KIND_CONFLICT");
    ck_assert_str_eq(st.message, wf_arena_printf(ta,
                                                 "definition \"%s\" is an AD_HOC definition; a "
                                                 "NET definition cannot be deployed onto its key",
                                                 key));
    ck_assert_uint_eq(versions_of(key, K_AD_HOC), 1);
    ck_assert_int_eq(start_boss(key, NULL)->definition_version, 1);

    char *net_key = u("kindnet");
    deploy(simple_net(net_key, "alice", "Net"));
    Workflow__V1__Definition ad = WORKFLOW__V1__DEFINITION__INIT;
    ad.key = net_key;
    ad.kind = K_AD_HOC;
    ck_assert_ptr_null(deploy_d(as("dev"), &ad, false, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "DEFINITION_KIND_CONFLICT");
    ck_assert_uint_eq(versions_of(net_key, K_NET), 1);
    /* validate_only checks the content only. */
    deploy_d(as("dev"), &ad, true, &st);
    ck_ok(st);
}
END_TEST

typedef struct kind_racer {
    const char *key;
    pthread_barrier_t *bar;
    bool deploys; /* else starts */
    wf_client_status st;
    int32_t version;
} kind_racer;

static void *
race_kind(void *arg)
{
    kind_racer *r = arg;
    wf_client *c = as("dev");
    nb *n = r->deploys ? simple_net(r->key, "alice", "Net") : NULL;
    pthread_barrier_wait(r->bar);
    if (r->deploys) {
        Workflow__V1__DeployDefinitionResponse *d = deploy_d(c, &n->d, false, &r->st);
        r->version = d != NULL ? d->definition->version : 0;
    } else {
        Workflow__V1__Instance *in = start_v(c, r->key, 0, NULL, &r->st);
        r->version = in != NULL ? in->definition_version : 0;
    }
    return NULL;
}

/* A NET deploy racing an auto-creating start of a new key: one kind
 * wins, the key has one version, and the start ran the winner. */
WF_TEST(test_deploy_racing_an_auto_creation_keeps_one_kind)
{
    for (int round = 0; round < 12; round++) {
        char *key = wf_arena_printf(ta, "%s-%d", u("kindrace"), round);
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, 2);
        kind_racer r[2] = {{.key = key, .bar = &bar, .deploys = true},
                           {.key = key, .bar = &bar, .deploys = false}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, race_kind, &r[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&bar);
        ck_assert_msg(r[1].st.code == 0, "start: %s %s", r[1].st.reason, r[1].st.message);
        ck_assert_int_eq(r[1].version, 1);
        if (r[0].st.code == 0) {
            ck_assert_int_eq(r[0].version, 1);
            ck_assert_uint_eq(versions_of(key, K_NET), 1);
        } else {
            ck_fails(r[0].st, GRPC_STATUS_FAILED_PRECONDITION, "DEFINITION_KIND_CONFLICT");
            ck_assert_uint_eq(versions_of(key, K_AD_HOC), 1);
        }
    }
}
END_TEST

/* WF_AUTO_CREATE_DEFINITIONS=false: an unknown key is NOT_FOUND and
 * nothing is created; deployed keys start as before. */
WF_TEST(test_auto_creation_off)
{
    wf_test_server_stop(&ts, 1000);
    const char *env[] = {"WF_AUTO_CREATE_DEFINITIONS=false", NULL};
    wf_test_server_start(&ts, env);
    char *key = u("nocreate");
    wf_client_status st;
    ck_assert_ptr_null(start_v(as("boss"), key, 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    ck_assert_str_eq(st.message, wf_arena_printf(ta, "definition \"%s\" does not exist", key));
    ck_assert_uint_eq(versions_of(key, K_AD_HOC), 0);
    Workflow__V1__Definition ad = WORKFLOW__V1__DEFINITION__INIT;
    ad.key = key;
    ad.kind = K_AD_HOC;
    deploy_d(as("dev"), &ad, false, &st);
    ck_ok(st);
    ck_assert_int_eq(start_boss(key, NULL)->definition_version, 1);
}
END_TEST

WF_TEST(test_validity_window_and_snapshot)
{
    char *key = u("window");
    deploy(simple_net(key, "alice", "One"));
    Workflow__V1__Instance *first = start_boss(key, NULL);
    ck_assert_int_eq(first->definition_version, 1);
    /* Version 2 only becomes valid in an hour. */
    nb *later = simple_net(key, "bob", "Two");
    later->d.valid_from = at(wf_now_us() + (int64_t)3600 * 1000000);
    Workflow__V1__DeployDefinitionResponse *r = deploy(later);
    ck_assert_int_eq(r->definition->version, 2);
    ck_assert_ptr_nonnull(r->definition->valid_from);
    /* Version 0 starts the newest version valid now: 1. */
    Workflow__V1__Instance *in = start_boss(key, NULL);
    ck_assert_int_eq(in->definition_version, 1);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_str_eq(g->tasks[0]->assignee_id, "alice");
    wf_client_status st;
    ck_assert_ptr_null(start_v(as("boss"), key, 2, NULL, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "DEFINITION_NOT_ACTIVE");
    ck_assert_ptr_null(start_v(as("boss"), key, 7, NULL, &st));
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "DEFINITION_NOT_FOUND");
    Workflow__V1__Instance *v1 = start_v(as("boss"), key, 1, NULL, &st);
    ck_ok(st);
    ck_assert_int_eq(v1->definition_version, 1);

    /* A key whose only version has expired. */
    char *old = u("expired");
    nb *gone = simple_net(old, "alice", "Old");
    gone->d.valid_from = at(wf_now_us() - (int64_t)7200 * 1000000);
    gone->d.valid_until = at(wf_now_us() - (int64_t)3600 * 1000000);
    deploy(gone);
    ck_assert_ptr_null(start_v(as("boss"), old, 0, NULL, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "DEFINITION_NOT_ACTIVE");
    /* valid_until before valid_from is invalid. */
    gone->d.valid_until = at(wf_now_us() - (int64_t)9000 * 1000000);
    ck_assert_ptr_null(deploy_d(as("dev"), &gone->d, false, &st));
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "DEFINITION_INVALID");

    /* Snapshot: a new version (valid now) does not change the first
     * instance, which still runs version 1 and completes by its rules. */
    deploy(simple_net(key, "carol", "Three"));
    Workflow__V1__Instance *third = start_boss(key, NULL);
    ck_assert_int_eq(third->definition_version, 3);
    g = get_instance(first->id);
    ck_assert_int_eq(g->instance->definition_version, 1);
    Workflow__V1__CompleteTaskResponse *c = complete_task_as("alice", g->tasks[0]->id, "{}", &st);
    ck_ok(st);
    ck_assert_int_eq(c->task->status, TS_DONE);
    ck_assert_int_eq(get_instance(first->id)->instance->status, I_COMPLETED);
}
END_TEST

/* ---- USER transitions and routing ----------------------------------------------------------- */

/* s -> review (USER alice) -> e and s -> timeout (TIME 1h) -> e. */
static nb *
race_net(const char *key)
{
    nb *n = simple_net(key, "alice", "Review");
    Workflow__V1__Transition *t = trans(n, "timeout", T_TIME);
    t->delay = dur(3600 * 1000);
    arc(n, "s", "timeout");
    arc(n, "timeout", "e");
    return n;
}

WF_TEST(test_deferred_choice_user_wins)
{
    char *key = u("race");
    deploy(race_net(key));
    Workflow__V1__Instance *in = start_boss(key, "{\"order\":7}");
    ck_assert_int_eq(in->status, I_RUNNING);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_tasks, 1);
    ck_assert_uint_eq(g->n_timers, 1);
    ck_assert_int_eq(marking(g, "s"), 1);
    Workflow__V1__Task *t = g->tasks[0];
    ck_assert_str_eq(t->transition_id, "review");
    ck_assert_str_eq(t->title, "Review");
    ck_assert_str_eq(t->assignee_id, "alice");
    ck_assert_str_eq(t->assigned_by, "");
    ck_assert_str_eq(t->definition_key, key);
    ck_assert_str_eq(g->timers[0]->transition_id, "timeout");
    /* The task's deadline is the competing timer's. */
    ck_assert_ptr_nonnull(t->due_at);
    ck_assert_int_eq(t->due_at->seconds, g->timers[0]->due_at->seconds);
    char *timer_id = g->timers[0]->id;

    /* Only the assignee may complete it. */
    wf_client_status st;
    ck_assert_ptr_null(complete_task_as("mallory", t->id, NULL, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    Workflow__V1__CompleteTaskResponse *c =
        complete_task_as("alice", t->id, "{\"approved\":true}", &st);
    ck_ok(st);
    ck_assert_int_eq(c->task->status, TS_DONE);
    ck_assert(c->completion->all_completed);
    ck_assert_int_eq(c->completion->done, 1);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(g->instance->variables_json, "{\"order\":7,\"approved\":true}");
    ck_assert_uint_eq(g->n_timers, 0);
    ck_assert_int_eq(marking(g, "e"), 1);
    /* The withdrawn timer never fires. */
    ck_assert(!fire_timer(in->id, timer_id));
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    ck_assert_ptr_null(complete_task_as("alice", t->id, NULL, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    ck_assert_str_eq(event_types(in->id),
                     "INSTANCE_STARTED TRANSITION_ENABLED TASK_CREATED TRANSITION_ENABLED "
                     "TIMER_SCHEDULED TASK_COMPLETED TRANSITION_FIRED WORKITEM_WITHDRAWN "
                     "INSTANCE_COMPLETED");
}
END_TEST

WF_TEST(test_deferred_choice_timer_wins)
{
    char *key = u("race");
    deploy(race_net(key));
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    char *task_id = g->tasks[0]->id;
    ck_assert(fire_timer(in->id, g->timers[0]->id));
    ck_assert(!fire_timer(in->id, g->timers[0]->id)); /* once only */
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_int_eq(task_of(g, "review", 0)->status, TS_CANCELLED);
    wf_client_status st;
    ck_assert_ptr_null(complete_task_as("alice", task_id, NULL, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_OPEN");
    const char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "TIMER_FIRED"), 1);
    ck_assert_int_eq(count_of(ev, "TASK_CANCELLED"), 1);
    ck_assert_int_eq(count_of(ev, "WORKITEM_WITHDRAWN"), 1);
}
END_TEST

WF_TEST(test_and_split_and_join)
{
    char *key = u("and");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "pa", NORMAL);
    place(n, "pb", NORMAL);
    place(n, "qa", NORMAL);
    place(n, "qb", NORMAL);
    place(n, "e", END);
    trans(n, "split", T_AUTO); /* silent */
    user(trans(n, "a", T_USER), A_USER, "alice", NULL);
    user(trans(n, "b", T_USER), A_USER, "bob", NULL);
    trans(n, "join", T_AUTO);
    arc(n, "s", "split");
    arc(n, "split", "pa");
    arc(n, "split", "pb");
    arc(n, "pa", "a");
    arc(n, "a", "qa");
    arc(n, "pb", "b");
    arc(n, "b", "qb");
    arc(n, "qa", "join");
    arc(n, "qb", "join");
    arc(n, "join", "e");
    deploy(n);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_tasks, 2);
    ck_assert_int_eq(marking(g, "pa"), 1);
    ck_assert_int_eq(marking(g, "pb"), 1);
    ck_assert_int_eq(marking(g, "s"), 0);
    wf_client_status st;
    complete_task_as("alice", task_of(g, "a", TS_OPEN)->id, "{\"a\":1}", &st);
    ck_ok(st);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_int_eq(marking(g, "qa"), 1);
    ck_assert_int_eq(marking(g, "pb"), 1);
    complete_task_as("bob", task_of(g, "b", TS_OPEN)->id, "{\"b\":2}", &st);
    ck_ok(st);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_int_eq(marking(g, "e"), 1);
    ck_assert_uint_eq(g->n_marking, 1);
    ck_assert_str_eq(g->instance->variables_json, "{\"a\":1,\"b\":2}");
    const char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "TRANSITION_FIRED"), 4);
    ck_assert_int_eq(count_of(ev, "TASK_COMPLETED"), 2);
    ck_assert_int_eq(count_of(ev, "INSTANCE_COMPLETED"), 1);

    /* TRANSITION_FIRED of the split names what it consumed and produced. */
    wf_arena *a = wf_arena_new();
    wf_store_ctx sc = {"default", 0, a};
    const char *types[] = {"TRANSITION_FIRED"};
    wf_event_filter f = {.instance_id = in->id, .types = types, .n_types = 1};
    wf_event_row *rows;
    size_t nr;
    wf_error err;
    ck_assert_int_eq(wf_store_read_events(ts.app.store, &sc, 0, &f, 10, &rows, &nr, &err), WF_OK);
    ck_assert_uint_eq(nr, 4);
    ck_assert_ptr_nonnull(strstr(rows[0].data_json, "\"transitionId\":\"split\""));
    ck_assert_ptr_nonnull(strstr(rows[0].data_json, "\"consumed\":[\"s\"]"));
    ck_assert_ptr_nonnull(strstr(rows[0].data_json, "\"produced\":[\"pa\",\"pb\"]"));
    wf_arena_free(a);
}
END_TEST

/* s -> decide (USER alice) -> [.amount > 1000] big -> approve (USER boss) -> e
 *                            -> [default] small -> auto (silent) -> e */
static nb *
or_net(const char *key, bool with_default)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "big", NORMAL);
    place(n, "small", NORMAL);
    place(n, "e", END);
    user(trans(n, "decide", T_USER), A_USER, "alice", NULL);
    user(trans(n, "approve", T_USER), A_USER, "boss", NULL);
    trans(n, "auto", T_AUTO);
    arc(n, "s", "decide");
    arc(n, "decide", "big")->guard = ".amount > 1000";
    if (with_default)
        arc(n, "decide", "small")->is_default = true;
    else
        arc(n, "decide", "small")->guard = ".amount < 0";
    arc(n, "big", "approve");
    arc(n, "approve", "e");
    arc(n, "small", "auto");
    arc(n, "auto", "e");
    return n;
}

WF_TEST(test_guarded_or_split_with_default)
{
    char *key = u("or");
    Workflow__V1__DeployDefinitionResponse *r = deploy(or_net(key, true));
    ck_assert_uint_eq(r->n_errors, 0);
    wf_client_status st;
    /* Big amount: the guarded arc. */
    Workflow__V1__Instance *big = start_boss(key, NULL);
    Workflow__V1__GetInstanceResponse *g = get_instance(big->id);
    complete_task_as("alice", task_of(g, "decide", TS_OPEN)->id, "{\"amount\":5000}", &st);
    ck_ok(st);
    g = get_instance(big->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_int_eq(marking(g, "big"), 1);
    ck_assert_ptr_nonnull(task_of(g, "approve", TS_OPEN));
    /* Small amount: no guard matches, the default arc is taken and the
     * silent transition ends the case at once. */
    Workflow__V1__Instance *small = start_boss(key, NULL);
    g = get_instance(small->id);
    complete_task_as("alice", task_of(g, "decide", TS_OPEN)->id, "{\"amount\":10}", &st);
    ck_ok(st);
    g = get_instance(small->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_ptr_null(task_of(g, "approve", 0));
}
END_TEST

WF_TEST(test_no_arc_matched_changes_nothing)
{
    char *key = u("noarc");
    Workflow__V1__DeployDefinitionResponse *r = deploy(or_net(key, false));
    /* Guarded arcs without a default: deployed, with a warning. */
    ck_assert(r->created);
    ck_assert_uint_eq(r->n_errors, 1);
    ck_assert_str_eq(r->errors[0]->code, "MISSING_DEFAULT_ARC");
    ck_assert_str_eq(r->errors[0]->path, "transitions[0]");
    ck_assert_int_eq(r->errors[0]->severity,
                     WORKFLOW__V1__VALIDATION_SEVERITY__VALIDATION_SEVERITY_WARNING);
    Workflow__V1__Instance *in = start_boss(key, "{\"n\":1}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    char *task_id = task_of(g, "decide", TS_OPEN)->id;
    const char *before = wf_arena_strdup(ta, event_types(in->id));
    wf_client_status st;
    ck_assert_ptr_null(complete_task_as("alice", task_id, "{\"amount\":5}", &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "NO_ARC_MATCHED");
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_str_eq(g->instance->variables_json, "{\"n\":1}");
    ck_assert_int_eq(task_of(g, "decide", 0)->status, TS_OPEN);
    ck_assert_str_eq(event_types(in->id), before);
    /* A matching output fires. */
    complete_task_as("alice", task_id, "{\"amount\":5000}", &st);
    ck_ok(st);
    ck_assert_ptr_nonnull(task_of(get_instance(in->id), "approve", TS_OPEN));
}
END_TEST

WF_TEST(test_users_quorum)
{
    char *key = u("vote");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "vote", T_USER);
    user(t, A_USERS, "ann", "ben", "cat", NULL);
    Workflow__V1__CompletionPolicy cp = WORKFLOW__V1__COMPLETION_POLICY__INIT;
    cp.mode = WORKFLOW__V1__COMPLETION_MODE__COMPLETION_MODE_QUORUM;
    cp.quorum = 2;
    t->completion = &cp;
    arc(n, "s", "vote");
    arc(n, "vote", "e");
    deploy(n);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_tasks, 3);
    ck_assert_uint_eq(g->n_joins, 1);
    ck_assert_str_eq(g->joins[0]->instance_id, in->id);
    ck_assert_str_eq(g->joins[0]->transition_id, "vote"); /* the USER transition */
    ck_assert_int_eq(g->joins[0]->required, 2);
    ck_assert_int_eq(g->joins[0]->total, 3);
    wf_client_status st;
    Workflow__V1__CompleteTaskResponse *c =
        complete_task_as("ann", task_for(g, "ann")->id, "{}", &st);
    ck_ok(st);
    ck_assert(!c->completion->all_completed);
    ck_assert_int_eq(c->completion->done, 1);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_int_eq(g->joins[0]->done, 1);
    c = complete_task_as("ben", task_for(g, "ben")->id, "{}", &st);
    ck_ok(st);
    ck_assert(c->completion->all_completed);
    ck_assert_int_eq(c->completion->done, 2);
    ck_assert_int_eq(c->completion->cancelled, 1);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_int_eq(task_for(g, "cat")->status, TS_CANCELLED);
    ck_assert_int_eq(task_for(g, "ann")->status, TS_DONE);
    ck_assert_uint_eq(g->n_joins, 0);
}
END_TEST

/* ---- jobs --------------------------------------------------------------------------------------
 */

WF_TEST(test_job_activate_and_complete)
{
    char *key = u("job"), *type = u("charge");
    deploy(job_net(key, type, 0, 0));
    Workflow__V1__Instance *in = start_boss(key, "{\"amount\":3}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_uint_eq(g->n_jobs, 1);
    ck_assert_str_eq(g->jobs[0]->key, "");
    ck_assert_int_eq(g->jobs[0]->attempt, 1);
    ck_assert_int_eq(g->jobs[0]->max_attempts, 3);
    Workflow__V1__ActivateJobsResponse *r = activate(type, 10, 0, 0);
    ck_assert_uint_eq(r->n_jobs, 1);
    Workflow__V1__Job *j = r->jobs[0];
    ck_assert_str_ne(j->key, "");
    ck_assert_str_eq(j->id, g->jobs[0]->id);
    ck_assert_str_eq(j->instance_id, in->id);
    ck_assert_str_eq(j->root_instance_id, in->id);
    ck_assert_str_eq(j->transition_id, "work");
    ck_assert_str_eq(j->job_type, type);
    ck_assert_str_eq(j->variables_json, "{\"amount\":3}");
    ck_assert_int_eq(j->attempt, 1);
    ck_assert_str_eq(j->worker, "w1");
    ck_assert_ptr_nonnull(j->lease_expires_at);
    /* Default lease: about 5 minutes. */
    int64_t lease_s = j->lease_expires_at->seconds - wf_now_us() / 1000000;
    ck_assert_msg(lease_s > 290 && lease_s <= 301, "lease %lld s", (long long)lease_s);
    char *idem = wf_arena_printf(ta, "%s:", in->id);
    ck_assert(strncmp(j->idempotency_key, idem, strlen(idem)) == 0);
    /* Nothing more to activate. */
    ck_assert_uint_eq(activate(type, 10, 0, 0)->n_jobs, 0);
    /* The key in GetInstance. */
    g = get_instance(in->id);
    ck_assert_str_eq(g->jobs[0]->key, j->key);

    wf_client *w = as(NULL);
    wf_client_status st;
    ck_assert_int_eq(complete_job_c(w, j->key, "[1]", &st), GRPC_STATUS_INVALID_ARGUMENT);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_JSON");
    ck_assert_int_eq(complete_job_c(w, j->key, "{\"charged\":true}", &st), GRPC_STATUS_OK);
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(g->instance->variables_json, "{\"amount\":3,\"charged\":true}");
    ck_assert_uint_eq(g->n_jobs, 0);
    /* The key is spent; a key that never was one is not found. */
    complete_job_c(w, j->key, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
    complete_job_c(w, "not-a-key", NULL, &st);
    ck_fails(st, GRPC_STATUS_NOT_FOUND, "JOB_NOT_FOUND");
    complete_job_c(w, "", NULL, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    const char *ev = event_types(in->id);
    ck_assert_str_eq(ev, "INSTANCE_STARTED TRANSITION_ENABLED JOB_CREATED JOB_ACTIVATED "
                         "JOB_COMPLETED TRANSITION_FIRED INSTANCE_COMPLETED");
    /* Bad activation requests. */
    activate_c(w, "", 1, 0, 0, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    activate_c(w, type, -1, 0, 0, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    activate_c(w, type, 1, (int64_t)25 * 3600 * 1000, 0, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
}
END_TEST

WF_TEST(test_transition_lease_and_idempotent_job_calls)
{
    char *key = u("tlease"), *type = u("timed");
    nb *n = job_net(key, type, 0, 0);
    n->t[0]->lease = dur(1500);
    deploy(n);
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__Job *j = activate(type, 1, 0, 0)->jobs[0];
    int64_t exp = j->lease_expires_at->seconds * 1000000 + j->lease_expires_at->nanos / 1000;
    int64_t left_ms = (exp - wf_now_us()) / 1000;
    ck_assert_msg(left_ms > 1000 && left_ms <= 1500, "lease left %lld ms", (long long)left_ms);
    /* A retried CompleteJob with the same request id gets the first answer. */
    Workflow__V1__CompleteJobRequest req = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
    req.job_key = j->key;
    req.request_id = u("cj");
    wf_client_status st;
    call(as(NULL), "CompleteJob", &req, &workflow__v1__complete_job_response__descriptor, &st);
    ck_ok(st);
    call(as(NULL), "CompleteJob", &req, &workflow__v1__complete_job_response__descriptor, &st);
    ck_ok(st);
    req.variables_json = "{\"x\":1}";
    call(as(NULL), "CompleteJob", &req, &workflow__v1__complete_job_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "REQUEST_ID_REUSED");
    ck_assert_int_eq(count_of(event_types(in->id), "JOB_COMPLETED"), 1);
    /* ActivateJobs with a request id: a retry returns the same jobs. */
    start_boss(key, NULL);
    Workflow__V1__ActivateJobsRequest ar = WORKFLOW__V1__ACTIVATE_JOBS_REQUEST__INIT;
    ar.job_type = type;
    ar.request_id = u("aj");
    Workflow__V1__ActivateJobsResponse *a1 =
        call(as(NULL), "ActivateJobs", &ar, &workflow__v1__activate_jobs_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(a1->n_jobs, 1);
    Workflow__V1__ActivateJobsResponse *a2 =
        call(as(NULL), "ActivateJobs", &ar, &workflow__v1__activate_jobs_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(a2->n_jobs, 1);
    ck_assert_str_eq(a2->jobs[0]->key, a1->jobs[0]->key);
}
END_TEST

WF_TEST(test_group_task_of_a_net)
{
    char *key = u("grp"), *grp = u("ops");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "triage", T_USER);
    user(t, WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP, grp, NULL);
    arc(n, "s", "triage");
    arc(n, "triage", "e");
    /* A retried deploy with the same request id gets the first answer. */
    Workflow__V1__DeployDefinitionRequest dr = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    dr.definition = &n->d;
    dr.request_id = u("dep");
    wf_client_status st;
    Workflow__V1__DeployDefinitionResponse *d1 =
        call(as("dev"), "DeployDefinition", &dr,
             &workflow__v1__deploy_definition_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__DeployDefinitionResponse *d2 =
        call(as("dev"), "DeployDefinition", &dr,
             &workflow__v1__deploy_definition_response__descriptor, &st);
    ck_ok(st);
    ck_assert(d1->created && d2->created); /* the replayed first answer */
    ck_assert_int_eq(d2->definition->version, 1);

    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__Task *task = get_instance(in->id)->tasks[0];
    ck_assert_int_eq(task->assignee_kind, WORKFLOW__V1__ASSIGNEE_KIND__ASSIGNEE_KIND_GROUP);
    ck_assert_str_eq(task->assignee_id, grp);
    /* The group's inbox shows it. */
    Workflow__V1__ListTasksRequest lr = WORKFLOW__V1__LIST_TASKS_REQUEST__INIT;
    lr.group = grp;
    Workflow__V1__ListTasksResponse *l =
        call(as("olga"), "ListTasks", &lr, &workflow__v1__list_tasks_response__descriptor, &st);
    ck_ok(st);
    ck_assert_uint_eq(l->n_tasks, 1);
    ck_assert_str_eq(l->tasks[0]->id, task->id);
    /* A group task must be claimed first (the referral rules). */
    ck_assert_ptr_null(complete_task_as("olga", task->id, NULL, &st));
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "TASK_NOT_CLAIMED");
    Workflow__V1__ClaimTaskRequest cr = WORKFLOW__V1__CLAIM_TASK_REQUEST__INIT;
    cr.task_id = task->id;
    Workflow__V1__ClaimTaskResponse *c =
        call(as("olga"), "ClaimTask", &cr, &workflow__v1__claim_task_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(c->task->claimed_by, "olga");
    ck_assert_ptr_null(complete_task_as("pete", task->id, NULL, &st));
    ck_fails(st, GRPC_STATUS_PERMISSION_DENIED, "NOT_ASSIGNEE");
    Workflow__V1__CompleteTaskRequest req = WORKFLOW__V1__COMPLETE_TASK_REQUEST__INIT;
    req.task_id = task->id;
    req.request_id = u("ct");
    Workflow__V1__CompleteTaskResponse *r1 = call(
        as("olga"), "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__CompleteTaskResponse *r2 = call(
        as("olga"), "CompleteTask", &req, &workflow__v1__complete_task_response__descriptor, &st);
    ck_ok(st);
    ck_assert_str_eq(r1->task->id, r2->task->id);
    ck_assert_int_eq(r2->task->status, TS_DONE);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    ck_assert_int_eq(count_of(event_types(in->id), "TASK_COMPLETED"), 1);
}
END_TEST

WF_TEST(test_job_sees_the_variables_at_activation)
{
    char *key = u("vars"), *type = u("print");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "pa", NORMAL);
    place(n, "pb", NORMAL);
    place(n, "qa", NORMAL);
    place(n, "qb", NORMAL);
    place(n, "e", END);
    trans(n, "fork", T_AUTO);
    user(trans(n, "ask", T_USER), A_USER, "alice", NULL);
    with_job(trans(n, "print", T_AUTO), type, 0, 0);
    trans(n, "join", T_AUTO);
    arc(n, "s", "fork");
    arc(n, "fork", "pa");
    arc(n, "fork", "pb");
    arc(n, "pa", "ask");
    arc(n, "ask", "qa");
    arc(n, "pb", "print");
    arc(n, "print", "qb");
    arc(n, "qa", "join");
    arc(n, "qb", "join");
    arc(n, "join", "e");
    deploy(n);
    Workflow__V1__Instance *in = start_boss(key, "{\"n\":1}");
    wf_client_status st;
    complete_task_as("alice", get_instance(in->id)->tasks[0]->id, "{\"copies\":2}", &st);
    ck_ok(st);
    Workflow__V1__Job *j = activate(type, 1, 0, 0)->jobs[0];
    ck_assert_str_eq(j->variables_json, "{\"n\":1,\"copies\":2}");
    ck_assert_int_eq(complete_job_c(as(NULL), j->key, "{\"printed\":true}", &st), 0);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    ck_assert_str_eq(g->instance->variables_json, "{\"n\":1,\"copies\":2,\"printed\":true}");
}
END_TEST

typedef struct racer {
    wf_client *c;
    const char *key;
    pthread_barrier_t *gate;
    wf_client_status st;
} racer;

static void *
race_complete(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->gate);
    complete_job_c(r->c, r->key, "{}", &r->st);
    return NULL;
}

WF_TEST(test_two_workers_race_one_key)
{
    char *key = u("race-job"), *type = u("ship");
    deploy(job_net(key, type, 0, 0));
    for (int round = 0; round < 4; round++) {
        Workflow__V1__Instance *in = start_boss(key, NULL);
        Workflow__V1__ActivateJobsResponse *r = activate(type, 1, 0, 0);
        ck_assert_uint_eq(r->n_jobs, 1);
        pthread_barrier_t gate;
        pthread_barrier_init(&gate, NULL, 2);
        racer rc[2] = {{.c = as(NULL), .key = r->jobs[0]->key, .gate = &gate},
                       {.c = as(NULL), .key = r->jobs[0]->key, .gate = &gate}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, race_complete, &rc[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&gate);
        int ok = (rc[0].st.code == 0) + (rc[1].st.code == 0);
        ck_assert_int_eq(ok, 1);
        racer *lost = rc[0].st.code == 0 ? &rc[1] : &rc[0];
        ck_fails(lost->st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
        ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
        ck_assert_int_eq(count_of(event_types(in->id), "JOB_COMPLETED"), 1);
    }
}
END_TEST

typedef struct worker {
    const char *type;
    int completed;
    char ids[16][WF_UUID_LEN + 1];
} worker;

static void *
work_loop(void *arg)
{
    worker *w = arg;
    wf_client_options o = {.target = ts.target, .timeout_ms = 15000, .wait_for_ready = 1};
    wf_client *c = wf_client_new(&o);
    for (int idle = 0; idle < 3;) {
        Workflow__V1__ActivateJobsRequest req = WORKFLOW__V1__ACTIVATE_JOBS_REQUEST__INIT;
        Google__Protobuf__Duration wait = GOOGLE__PROTOBUF__DURATION__INIT;
        wait.nanos = 200 * 1000000;
        req.job_type = (char *)w->type;
        req.worker = "loop";
        req.max_jobs = 2;
        req.wait = &wait;
        ProtobufCMessage *resp = NULL;
        wf_client_status st;
        if (wf_client_call(c, SVC "ActivateJobs", &req.base,
                           &workflow__v1__activate_jobs_response__descriptor, &resp, NULL,
                           &st) != 0)
            break;
        Workflow__V1__ActivateJobsResponse *r = (void *)resp;
        idle = r->n_jobs == 0 ? idle + 1 : 0;
        for (size_t i = 0; i < r->n_jobs; i++) {
            Workflow__V1__CompleteJobRequest cr = WORKFLOW__V1__COMPLETE_JOB_REQUEST__INIT;
            ProtobufCMessage *cresp = NULL;
            cr.job_key = r->jobs[i]->key;
            if (wf_client_call(c, SVC "CompleteJob", &cr.base,
                               &workflow__v1__complete_job_response__descriptor, &cresp, NULL,
                               &st) == 0) {
                if (w->completed < 16)
                    snprintf(w->ids[w->completed], sizeof w->ids[0], "%s", r->jobs[i]->id);
                w->completed++;
                protobuf_c_message_free_unpacked(cresp, NULL);
            }
        }
        protobuf_c_message_free_unpacked(resp, NULL);
    }
    wf_client_free(c);
    return NULL;
}

WF_TEST(test_concurrent_workers_complete_each_job_once)
{
    char *key = u("many"), *type = u("pack");
    deploy(job_net(key, type, 0, 0));
    enum { JOBS = 8 };
    const char *ids[JOBS];
    for (int i = 0; i < JOBS; i++)
        ids[i] = start_boss(key, NULL)->id;
    worker w[2] = {{.type = type}, {.type = type}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, work_loop, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(w[0].completed + w[1].completed, JOBS);
    for (int i = 0; i < w[0].completed; i++)
        for (int k = 0; k < w[1].completed; k++)
            ck_assert_str_ne(w[0].ids[i], w[1].ids[k]);
    for (int i = 0; i < JOBS; i++) {
        ck_assert_int_eq(get_instance(ids[i])->instance->status, I_COMPLETED);
        ck_assert_int_eq(count_of(event_types(ids[i]), "JOB_COMPLETED"), 1);
    }
}
END_TEST

WF_TEST(test_lease_expiry_gives_a_new_key)
{
    char *key = u("lease"), *type = u("slow");
    deploy(job_net(key, type, 0, 0));
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__Job *first = activate(type, 1, 200, 0)->jobs[0];
    ck_assert_int_eq(first->attempt, 1);
    ck_assert_uint_eq(activate(type, 1, 200, 0)->n_jobs, 0); /* leased */
    sleep_ms(350);
    /* A run-out lease comes back through the scheduler (this test server
     * runs none: a pass on demand), with a JOB_LEASE_EXPIRED event. */
    ck_assert_uint_eq(activate(type, 1, 5000, 0)->n_jobs, 0);
    Workflow__V1__RunSchedulerPassRequest tick = WORKFLOW__V1__RUN_SCHEDULER_PASS_REQUEST__INIT;
    wf_client_status tst;
    Workflow__V1__RunSchedulerPassResponse *pass =
        call(as(NULL), "RunSchedulerPass", &tick,
             &workflow__v1__run_scheduler_pass_response__descriptor, &tst);
    ck_ok(tst);
    ck_assert_int_ge(pass->leases_expired, 1); /* Postgres keeps earlier runs' jobs */
    ck_assert_int_eq(count_of(event_types(in->id), "JOB_LEASE_EXPIRED"), 1);
    Workflow__V1__ActivateJobsResponse *r = activate(type, 1, 5000, 0);
    ck_assert_uint_eq(r->n_jobs, 1);
    Workflow__V1__Job *second = r->jobs[0];
    ck_assert_str_eq(second->id, first->id);
    ck_assert_str_ne(second->key, first->key);
    ck_assert_int_eq(second->attempt, 1); /* an expired lease spends no attempt */
    wf_client_status st;
    complete_job_c(as(NULL), first->key, NULL, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
    fail_job(first->key, "late", -1, -1, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
    /* ExtendJobLease moves the current lease. */
    Workflow__V1__ExtendJobLeaseRequest x = WORKFLOW__V1__EXTEND_JOB_LEASE_REQUEST__INIT;
    x.job_key = second->key;
    x.lease = dur(60000);
    Workflow__V1__ExtendJobLeaseResponse *xr = call(
        as(NULL), "ExtendJobLease", &x, &workflow__v1__extend_job_lease_response__descriptor, &st);
    ck_ok(st);
    int64_t left = xr->lease_expires_at->seconds - wf_now_us() / 1000000;
    ck_assert_msg(left >= 58 && left <= 61, "lease left %lld", (long long)left);
    x.lease = NULL;
    call(as(NULL), "ExtendJobLease", &x, &workflow__v1__extend_job_lease_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    x.job_key = first->key;
    x.lease = dur(1000);
    call(as(NULL), "ExtendJobLease", &x, &workflow__v1__extend_job_lease_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
    ck_assert_int_eq(complete_job_c(as(NULL), second->key, NULL, &st), 0);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    const char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "JOB_ACTIVATED"), 2);
    ck_assert_int_eq(count_of(ev, "JOB_COMPLETED"), 1);
}
END_TEST

WF_TEST(test_fail_job_backs_off_then_retries)
{
    char *key = u("retry"), *type = u("flaky");
    /* The backoff outlasts the calls between the failure and the reads
     * below, on a loaded machine too. */
    int scale = wf_test_time_scale();
    int64_t backoff_ms = 400 * (int64_t)(scale < 10 ? scale : 10);
    deploy(job_net(key, type, 3, backoff_ms));
    Workflow__V1__Instance *in = start_boss(key, NULL);
    Workflow__V1__Job *j = activate(type, 1, 0, 0)->jobs[0];
    wf_client_status st;
    ck_assert_int_eq(fail_job(j->key, "gateway timeout", -1, -1, &st), 0);
    /* Backing off: not activatable now; GetInstance says until when. */
    ck_assert_uint_eq(activate(type, 1, 0, 0)->n_jobs, 0);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_uint_eq(g->n_jobs, 1);
    ck_assert_ptr_nonnull(g->jobs[0]->activatable_at);
    int64_t at_us =
        g->jobs[0]->activatable_at->seconds * 1000000 + g->jobs[0]->activatable_at->nanos / 1000;
    int64_t wait_us = at_us - wf_now_us();
    ck_assert_msg(wait_us > 0 && wait_us <= backoff_ms * 1200, "backoff %lld us",
                  (long long)wait_us);
    ck_assert_str_eq(g->jobs[0]->error_message, "gateway timeout");
    ck_assert_int_eq(g->jobs[0]->attempt, 2);
    ck_assert_str_eq(g->jobs[0]->key, "");
    /* A long poll gets it once the backoff is over. */
    int64_t t0 = wf_mono_ms();
    Workflow__V1__ActivateJobsResponse *r =
        activate(type, 1, 0, 5000 * (int64_t)wf_test_time_scale() + backoff_ms);
    int64_t took = wf_mono_ms() - t0;
    ck_assert_uint_eq(r->n_jobs, 1);
    ck_assert_int_eq(r->jobs[0]->attempt, 2);
    ck_assert_str_eq(r->jobs[0]->idempotency_key, j->idempotency_key);
    ck_assert_msg(took < backoff_ms + 2100 * wf_test_time_scale(), "took %lld ms", (long long)took);
    ck_assert_int_eq(complete_job_c(as(NULL), r->jobs[0]->key, NULL, &st), 0);
    ck_assert_int_eq(get_instance(in->id)->instance->status, I_COMPLETED);
    const char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "JOB_FAILED"), 1);
    ck_assert_int_eq(count_of(ev, "JOB_RETRY_SCHEDULED"), 1);
    fail_job(j->key, "x", -1, -1, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
}
END_TEST

WF_TEST(test_attempts_run_out_and_the_instance_fails)
{
    char *key = u("exhaust"), *type = u("broken");
    deploy(job_net(key, type, 2, 0));
    Workflow__V1__Instance *in = start_boss(key, NULL);
    wf_client_status st;
    Workflow__V1__Job *j = activate(type, 1, 0, 0)->jobs[0];
    ck_assert_int_eq(fail_job(j->key, "first", -1, 0, &st), 0); /* no backoff */
    j = activate(type, 1, 0, 0)->jobs[0];
    ck_assert_int_eq(j->attempt, 2);
    ck_assert_int_eq(j->max_attempts, 2);
    ck_assert_int_eq(fail_job(j->key, "card declined", -1, -1, &st), 0);
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_ptr_nonnull(strstr(g->last_error, "card declined"));
    ck_assert_ptr_nonnull(strstr(g->last_error, "after 2 attempts"));
    ck_assert_uint_eq(g->n_jobs, 0); /* the failed job is an incident, not work */
    ck_assert_uint_eq(activate(type, 1, 0, 0)->n_jobs, 0);
    const char *ev = event_types(in->id);
    ck_assert_int_eq(count_of(ev, "JOB_FAILED"), 2);
    ck_assert_int_eq(count_of(ev, "INSTANCE_FAILED"), 1);

    /* retryable = false fails the step at once, attempts left or not. */
    Workflow__V1__Instance *in2 = start_boss(key, NULL);
    j = activate(type, 1, 0, 0)->jobs[0];
    ck_assert_int_eq(fail_job(j->key, "invalid card", 0, -1, &st), 0);
    g = get_instance(in2->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_ptr_nonnull(strstr(g->last_error, "after 1 attempt:"));
    fail_job(j->key, "x", -1, -1, &st);
    ck_fails(st, GRPC_STATUS_FAILED_PRECONDITION, "JOB_LEASE_LOST");
    /* A negative backoff_override is refused and changes nothing. */
    Workflow__V1__Instance *in3 = start_boss(key, NULL);
    j = activate(type, 1, 0, 0)->jobs[0];
    Workflow__V1__FailJobRequest fr = WORKFLOW__V1__FAIL_JOB_REQUEST__INIT;
    Google__Protobuf__Duration neg = GOOGLE__PROTOBUF__DURATION__INIT;
    neg.seconds = -1;
    fr.job_key = j->key;
    fr.backoff_override = &neg;
    call(as(NULL), "FailJob", &fr, &workflow__v1__fail_job_response__descriptor, &st);
    ck_fails(st, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT");
    ck_assert_int_eq(st.nviolations, 1);
    ck_assert_int_eq(complete_job_c(as(NULL), j->key, NULL, &st), 0);
    ck_assert_int_eq(get_instance(in3->id)->instance->status, I_COMPLETED);
}
END_TEST

typedef struct poller {
    const char *type;
    int64_t wait_ms;
    int64_t took_ms;
    size_t n_jobs;
    int code;
} poller;

static void *
poll_once(void *arg)
{
    poller *p = arg;
    wf_client_options o = {.target = ts.target, .timeout_ms = 20000, .wait_for_ready = 1};
    wf_client *c = wf_client_new(&o);
    Workflow__V1__ActivateJobsRequest req = WORKFLOW__V1__ACTIVATE_JOBS_REQUEST__INIT;
    Google__Protobuf__Duration wait = GOOGLE__PROTOBUF__DURATION__INIT;
    wait.seconds = p->wait_ms / 1000;
    wait.nanos = (int32_t)(p->wait_ms % 1000) * 1000000;
    req.job_type = (char *)p->type;
    req.wait = &wait;
    ProtobufCMessage *resp = NULL;
    wf_client_status st;
    int64_t t0 = wf_mono_ms();
    p->code = wf_client_call(c, SVC "ActivateJobs", &req.base,
                             &workflow__v1__activate_jobs_response__descriptor, &resp, NULL, &st);
    p->took_ms = wf_mono_ms() - t0;
    if (resp != NULL) {
        p->n_jobs = ((Workflow__V1__ActivateJobsResponse *)resp)->n_jobs;
        protobuf_c_message_free_unpacked(resp, NULL);
    }
    wf_client_free(c);
    return NULL;
}

WF_TEST(test_long_poll_returns_when_a_job_appears)
{
    char *key = u("poll"), *type = u("wake");
    deploy(job_net(key, type, 0, 0));
    poller p = {.type = type, .wait_ms = 8000};
    pthread_t th;
    pthread_create(&th, NULL, poll_once, &p);
    sleep_ms(400); /* the worker is parked */
    start_boss(key, NULL);
    pthread_join(th, NULL);
    ck_assert_int_eq(p.code, 0);
    ck_assert_uint_eq(p.n_jobs, 1);
    ck_assert_msg(p.took_ms >= 350 && p.took_ms < 1500, "took %lld ms", (long long)p.took_ms);

    /* Nothing comes: an empty answer once the wait is over. */
    poller q = {.type = u("nothing"), .wait_ms = 600};
    poll_once(&q);
    ck_assert_int_eq(q.code, 0);
    ck_assert_uint_eq(q.n_jobs, 0);
    ck_assert_msg(q.took_ms >= 580 && q.took_ms < 2000, "took %lld ms", (long long)q.took_ms);
}
END_TEST

WF_TEST(test_get_instance_explains_a_parked_net)
{
    char *key = u("park"), *type = u("mail");
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "p", NORMAL);
    place(n, "q", NORMAL);
    place(n, "e", END);
    trans(n, "fork", T_AUTO);
    with_job(trans(n, "send", T_AUTO), type, 0, 0);
    Workflow__V1__Transition *m = trans(n, "paid", T_MSG);
    m->signal_name = "payment";
    m->correlation = WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE;
    Workflow__V1__Transition *late = trans(n, "late", T_TIME);
    late->delay = dur(90 * 1000);
    arc(n, "s", "fork");
    arc(n, "fork", "p");
    arc(n, "fork", "q");
    arc(n, "p", "send");
    arc(n, "send", "e");
    arc(n, "q", "paid");
    arc(n, "paid", "e");
    arc(n, "q", "late");
    arc(n, "late", "e");
    n->d.termination = WORKFLOW__V1__TERMINATION__TERMINATION_IMPLICIT;
    deploy(n);
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    Workflow__V1__Aggregate agg = WORKFLOW__V1__AGGREGATE__INIT;
    agg.type = "order";
    agg.id = u("A");
    req.definition_key = key;
    req.aggregate = &agg;
    wf_client_status st;
    Workflow__V1__StartInstanceResponse *sr = call(
        as("boss"), "StartInstance", &req, &workflow__v1__start_instance_response__descriptor, &st);
    ck_ok(st);
    Workflow__V1__GetInstanceResponse *g = get_instance(sr->instance->id);
    ck_assert_int_eq(marking(g, "p"), 1);
    ck_assert_int_eq(marking(g, "q"), 1);
    ck_assert_uint_eq(g->n_jobs, 1);
    ck_assert_str_eq(g->jobs[0]->transition_id, "send");
    ck_assert_uint_eq(g->n_timers, 1);
    ck_assert_str_eq(g->timers[0]->transition_id, "late");
    ck_assert_uint_eq(g->n_awaiting_signals, 1);
    Workflow__V1__AwaitingSignal *a = g->awaiting_signals[0];
    ck_assert_str_eq(a->name, "payment");
    ck_assert_str_eq(a->transition_id, "paid");
    ck_assert_int_eq(a->correlation, WORKFLOW__V1__CORRELATION__CORRELATION_AGGREGATE);
    ck_assert_ptr_nonnull(a->since);
    ck_assert_ptr_nonnull(a->times_out_at);
    ck_assert_int_eq(a->times_out_at->seconds, g->timers[0]->due_at->seconds);
    /* The subscription carries the aggregate for correlation. */
    wf_arena *ar = wf_arena_new();
    wf_store_ctx sc = {"default", 0, ar};
    wf_subscription_row *subs;
    size_t ns;
    wf_error err;
    ck_assert_int_eq(wf_store_find_subscriptions(ts.app.store, &sc, "payment", NULL, "order",
                                                 agg.id, &subs, &ns, &err),
                     WF_OK);
    ck_assert_uint_eq(ns, 1);
    ck_assert_str_eq(subs[0].instance_id, sr->instance->id);
    wf_arena_free(ar);
}
END_TEST

/* s -> wait (TIME) or decide (USER alice) -> [.x[.n] = 1] big -> fin (silent) -> e
 *                                        -> [default] e
 * With n = 1e9 the guard asks libjq for 58 GB, which ends the process
 * evaluating it: here a worker, not the server. */
static nb *
limit_net(const char *key, bool timer)
{
    nb *n = net_new(key);
    place(n, "s", START);
    place(n, "big", NORMAL);
    place(n, "e", END);
    Workflow__V1__Transition *t = trans(n, "step", timer ? T_TIME : T_USER);
    if (timer)
        t->delay = dur(3600 * 1000);
    else
        user(t, A_USER, "alice", NULL);
    trans(n, "fin", T_AUTO);
    arc(n, "s", "step");
    arc(n, "step", "big")->guard = ".x[.n] = 1";
    arc(n, "step", "e")->is_default = true;
    arc(n, "big", "fin");
    arc(n, "fin", "e");
    return n;
}

WF_TEST(test_expression_limit_fails_the_instance_and_the_server_keeps_serving)
{
    /* The memory limit must come first, however slow the machine. */
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_PROCESS,
                                         .timeout_ms = 1000 * wf_test_time_scale(),
                                         .memory_mb = 256,
                                         .workers = 2,
                                         .recycle_after = 1000});
    char *tkey = u("limit-timer"), *ukey = u("limit-user");
    ck_assert_uint_eq(deploy(limit_net(tkey, true))->n_errors, 0);
    ck_assert_uint_eq(deploy(limit_net(ukey, false))->n_errors, 0);

    /* A timer's firing: the instance gets an incident. */
    Workflow__V1__Instance *in = start_boss(tkey, "{\"n\":1e9}");
    Workflow__V1__GetInstanceResponse *g = get_instance(in->id);
    ck_assert(fire_timer(in->id, g->timers[0]->id));
    g = get_instance(in->id);
    ck_assert_int_eq(g->instance->status, I_FAILED);
    ck_assert_msg(strstr(g->last_error, "exceeded its memory limit") != NULL, "%s", g->last_error);
    ck_assert_int_eq(count_of(event_types(in->id), "INSTANCE_FAILED"), 1);

    /* A caller's completion: refused with the reason, nothing changes. */
    Workflow__V1__Instance *in2 = start_boss(ukey, NULL);
    char *task_id = task_of(get_instance(in2->id), "step", TS_OPEN)->id;
    wf_client_status st;
    ck_assert_ptr_null(complete_task_as("alice", task_id, "{\"n\":1e9}", &st));
    ck_fails(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "EXPRESSION_LIMIT");
    g = get_instance(in2->id);
    ck_assert_int_eq(g->instance->status, I_RUNNING);
    ck_assert_int_eq(task_of(g, "step", 0)->status, TS_OPEN);

    /* The server still serves, and the same guard over sane numbers works. */
    complete_task_as("alice", task_id, "{\"n\":2}", &st);
    ck_ok(st);
    g = get_instance(in2->id);
    ck_assert_int_eq(g->instance->status, I_COMPLETED);
    Workflow__V1__Instance *in3 = start_boss(tkey, "{\"n\":1}");
    ck_assert(fire_timer(in3->id, get_instance(in3->id)->timers[0]->id));
    ck_assert_int_eq(get_instance(in3->id)->instance->status, I_COMPLETED);
    ck_assert_int_eq(count_of(event_types(in3->id), "TRANSITION_FIRED"), 2); /* step, fin */

    wf_expr_shutdown();
    wf_expr_configure(&(wf_expr_options){.isolation = WF_EXPR_INLINE});
}
END_TEST

int
main(int argc, char **argv)
{
    /* The expression workers of the limit test are this binary. */
    if (argc > 1 && strcmp(argv[1], WF_EXPR_WORKER_ARG) == 0)
        return wf_expr_worker_main(argc, argv);
    return wf_test_run(wf_test_suite("e2e_net", wf_test_store_name(), setup, teardown, 60));
}
