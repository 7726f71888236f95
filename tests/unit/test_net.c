/*
 * Unit tests of server/engine/net: the definition model, canonical JSON
 * and hash, validation (one test per rule) and the firing rules.
 */
#include <stdio.h>
#include <string.h>

#include "expr.h"
#include "net.h"
#include "engine_kit.h"
#include "test_support.h"
#include "wf_arena.h"

/* ---- building nets ---------------------------------------------------------- */

#define CAP 32

static wf_arena *A;

static wf_net *
net_new(const char *key)
{
    wf_net *n = wf_arena_calloc(A, 1, sizeof *n);
    n->key = key;
    n->places = wf_arena_calloc(A, CAP, sizeof *n->places);
    n->transitions = wf_arena_calloc(A, CAP, sizeof *n->transitions);
    n->arcs = wf_arena_calloc(A, CAP * 2, sizeof *n->arcs);
    return n;
}

static wf_place *
P(wf_net *n, const char *id, wf_place_kind kind)
{
    wf_place *p = &n->places[n->n_places++];
    p->id = id;
    p->kind = kind;
    return p;
}

static wf_transition *
T(wf_net *n, const char *id, wf_trigger trigger)
{
    wf_transition *t = &n->transitions[n->n_transitions++];
    t->id = id;
    t->trigger = trigger;
    return t;
}

/* A USER transition assigned to one user. */
static wf_transition *
U(wf_net *n, const char *id)
{
    static const char *ann[] = {"ann"};
    wf_transition *t = T(n, id, WF_TRIGGER_USER);
    t->assignee.kind = WF_NET_ASSIGNEE_USER;
    t->assignee.ids = ann;
    t->assignee.n_ids = 1;
    return t;
}

/* A silent AUTO transition. */
static wf_transition *
S(wf_net *n, const char *id)
{
    return T(n, id, WF_TRIGGER_AUTO);
}

static wf_arc *
ARC(wf_net *n, const char *src, const char *dst)
{
    wf_arc *a = &n->arcs[n->n_arcs++];
    a->source = src;
    a->target = dst;
    return a;
}

/* start -> t1 -> p1 -> t2 -> end, both USER. */
static wf_net *
sequence_net(void)
{
    wf_net *n = net_new("seq");
    P(n, "start", WF_PLACE_START);
    P(n, "p1", WF_PLACE_NORMAL);
    P(n, "end", WF_PLACE_END);
    U(n, "t1");
    U(n, "t2");
    ARC(n, "start", "t1");
    ARC(n, "t1", "p1");
    ARC(n, "p1", "t2");
    ARC(n, "t2", "end");
    return n;
}

/* ---- validation helpers ------------------------------------------------------ */

static wf_validation_error *V;
static size_t NV;

static size_t
validate(const wf_net *n)
{
    wf_error err;
    ck_assert_int_eq(wf_net_validate(n, A, &V, &NV, &err), WF_OK);
    return NV;
}

/* Severity of the finding (code, path), 0 when absent. */
static int
finding(const char *code, const char *path)
{
    for (size_t i = 0; i < NV; i++)
        if (strcmp(V[i].code, code) == 0 && strcmp(V[i].path, path) == 0)
            return (int)V[i].severity;
    return 0;
}

static void
dump_findings(void)
{
    for (size_t i = 0; i < NV; i++)
        fprintf(stderr, "  %s %s: %s\n", V[i].code, V[i].path, V[i].message);
}

#define EXPECT(code, path)                                                                         \
    do {                                                                                           \
        if (finding(code, path) != WF_SEVERITY_ERROR)                                              \
            dump_findings();                                                                       \
        ck_assert_msg(finding(code, path) == WF_SEVERITY_ERROR, "missing error %s at %s", code,    \
                      path);                                                                       \
    } while (0)

/* A net using every trigger, valid. */
static wf_net *
full_net(void)
{
    static const char *team[] = {"ann", "bob", "carl"};
    static const char *cancels[] = {"p_wait"};
    wf_net *n = net_new("order");
    n->name = "Order";
    n->description = "fulfil an order";
    P(n, "start", WF_PLACE_START);
    P(n, "p_review", WF_PLACE_NORMAL);
    P(n, "p_ship", WF_PLACE_NORMAL);
    P(n, "p_wait", WF_PLACE_NORMAL);
    P(n, "end", WF_PLACE_END);
    wf_transition *review = T(n, "review", WF_TRIGGER_USER);
    review->assignee.kind = WF_NET_ASSIGNEE_USERS;
    review->assignee.ids = team;
    review->assignee.n_ids = 3;
    review->completion.mode = WF_JOIN_QUORUM;
    review->completion.quorum = 2;
    wf_transition *timeout = T(n, "timeout", WF_TRIGGER_TIME);
    timeout->delay_ms = 3600 * 1000;
    wf_transition *ship = T(n, "ship", WF_TRIGGER_AUTO);
    ship->job_type = "ship-order";
    ship->retry.max_attempts = 5;
    ship->compensation_job_type = "unship";
    wf_transition *paid = T(n, "paid", WF_TRIGGER_MSG);
    paid->signal_name = "payment-received";
    paid->correlation = WF_CORRELATION_AGGREGATE;
    paid->cancels = cancels;
    paid->n_cancels = 1;
    wf_transition *route = S(n, "route");
    (void)route;
    ARC(n, "start", "route");
    ARC(n, "route", "p_review");
    ARC(n, "route", "p_wait");
    ARC(n, "p_review", "review");
    ARC(n, "p_review", "timeout");
    ARC(n, "review", "p_ship")->guard = ".amount > 1000";
    ARC(n, "review", "end")->is_default = true;
    ARC(n, "timeout", "end");
    ARC(n, "p_ship", "ship");
    ARC(n, "ship", "end")->weight = 1;
    ARC(n, "p_wait", "paid");
    ARC(n, "paid", "end");
    return n;
}

WF_CASE_TEST("validate", test_valid_net_has_no_findings)
{
    ck_assert_uint_eq(validate(full_net()), 0);
    ck_assert_uint_eq(validate(sequence_net()), 0);
    ck_assert(!wf_net_has_errors(V, NV));
}
END_TEST

/* USER, AUTO with a job type and CALL transitions name resources; each
 * name is a resource name, once per transition; keys compile. */
WF_CASE_TEST("validate", test_resource_uses_are_checked)
{
    static const wf_resource_use good[] = {{"charges", ".customer"}, {"db-pool_2.main", ""}};
    static const wf_resource_use bad[] = {
        {"", ""}, {"no spaces", ""}, {"charges", ".customer |"}, {"charges", ""}};
    static const wf_resource_use one[] = {{"charges", ""}};
    wf_net *n = full_net();
    n->transitions[0].resources = good; /* USER */
    n->transitions[0].n_resources = 2;
    n->transitions[2].resources = good; /* AUTO with a job type */
    n->transitions[2].n_resources = 2;
    ck_assert_uint_eq(validate(n), 0);

    n->transitions[2].resources = bad;
    n->transitions[2].n_resources = 4;
    n->transitions[1].resources = one; /* TIME */
    n->transitions[1].n_resources = 1;
    n->transitions[3].resources = one; /* MSG */
    n->transitions[3].n_resources = 1;
    n->transitions[4].resources = one; /* silent AUTO */
    n->transitions[4].n_resources = 1;
    validate(n);
    EXPECT("REQUIRED", "transitions[2].resources[0].name");
    EXPECT("INVALID_VALUE", "transitions[2].resources[1].name");
    EXPECT("EXPRESSION_INVALID", "transitions[2].resources[2].key_expression");
    EXPECT("RESOURCE_DUPLICATE", "transitions[2].resources[3].name");
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[1].resources");
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[3].resources");
    EXPECT("INVALID_VALUE", "transitions[4].resources");
    ck_assert_uint_eq(NV, 7);

    wf_resource_use many[WF_NET_MAX_RESOURCE_USES + 1];
    for (size_t i = 0; i <= WF_NET_MAX_RESOURCE_USES; i++)
        many[i] = (wf_resource_use){wf_arena_printf(A, "r%zu", i), ""};
    n = full_net();
    n->transitions[0].resources = many;
    n->transitions[0].n_resources = WF_NET_MAX_RESOURCE_USES + 1;
    validate(n);
    EXPECT("INVALID_VALUE", "transitions[0].resources");
    n->transitions[0].n_resources = WF_NET_MAX_RESOURCE_USES;
    ck_assert_uint_eq(validate(n), 0);
}
END_TEST

WF_CASE_TEST("validate", test_start_and_end_place_counts)
{
    wf_net *n = sequence_net();
    n->places[0].kind = WF_PLACE_NORMAL;
    n->places[2].kind = WF_PLACE_NORMAL;
    validate(n);
    EXPECT("START_PLACE_COUNT", "places");
    EXPECT("END_PLACE_COUNT", "places");
    n = sequence_net();
    n->places[1].kind = WF_PLACE_START;
    validate(n);
    EXPECT("START_PLACE_COUNT", "places");
    ck_assert_str_eq(V[0].message, "a net needs exactly one START place, found 2");
}
END_TEST

/* start -> draft -> p1 -> review -> end [.approved]
 *                                -> start (default: the restart arc) */
static wf_net *
restart_net(void)
{
    wf_net *n = net_new("restart");
    P(n, "start", WF_PLACE_START);
    P(n, "p1", WF_PLACE_NORMAL);
    P(n, "end", WF_PLACE_END);
    U(n, "draft");
    U(n, "review");
    ARC(n, "start", "draft");
    ARC(n, "draft", "p1");
    ARC(n, "p1", "review");
    ARC(n, "review", "end")->guard = ".approved";
    ARC(n, "review", "start")->is_default = true;
    return n;
}

WF_CASE_TEST("validate", test_start_may_have_input_but_end_no_output)
{
    /* An arc into START restarts the case (Radicore's restart arc). */
    ck_assert_uint_eq(validate(restart_net()), 0);
    wf_net *n = sequence_net();
    ARC(n, "t2", "start"); /* arcs[4]: allowed */
    ARC(n, "end", "t1");   /* arcs[5] */
    validate(n);
    ck_assert_uint_eq(NV, 1);
    EXPECT("END_PLACE_HAS_OUTPUT", "arcs[5]");
    ck_assert_int_eq(finding("START_PLACE_HAS_INPUT", "arcs[4]"), 0);
    /* The restart arc puts no node on a path it was not on: a transition
     * that only feeds START from a dead branch is still reported. */
    n = restart_net();
    P(n, "dead", WF_PLACE_NORMAL); /* places[3]: nothing puts a token here */
    U(n, "revive");                /* transitions[2] */
    ARC(n, "dead", "revive");
    ARC(n, "revive", "start");
    validate(n);
    EXPECT("NOT_ON_PATH", "places[3]");
    EXPECT("NOT_ON_PATH", "transitions[2]");
    ck_assert_int_eq(finding("NOT_ON_PATH", "places[0]"), 0);
}
END_TEST

WF_CASE_TEST("validate", test_transition_without_input_or_output)
{
    wf_net *n = sequence_net();
    U(n, "orphan_in"); /* transitions[2]: output only */
    ARC(n, "orphan_in", "p1");
    U(n, "orphan_out"); /* transitions[3]: input only */
    ARC(n, "p1", "orphan_out");
    validate(n);
    EXPECT("TRANSITION_WITHOUT_INPUT", "transitions[2]");
    EXPECT("TRANSITION_WITHOUT_OUTPUT", "transitions[3]");
}
END_TEST

WF_CASE_TEST("validate", test_arcs_join_a_place_and_a_transition)
{
    wf_net *n = sequence_net();
    ARC(n, "start", "p1"); /* arcs[4] */
    ARC(n, "t1", "t2");    /* arcs[5] */
    validate(n);
    EXPECT("ARC_INVALID_ENDPOINTS", "arcs[4]");
    EXPECT("ARC_INVALID_ENDPOINTS", "arcs[5]");
}
END_TEST

WF_CASE_TEST("validate", test_unknown_and_missing_references)
{
    static const char *cancels[] = {"nowhere", "t2"};
    wf_net *n = sequence_net();
    ARC(n, "ghost", "t1"); /* arcs[4] */
    ARC(n, "t1", "");      /* arcs[5] */
    n->transitions[0].cancels = cancels;
    n->transitions[0].n_cancels = 2;
    validate(n);
    EXPECT("UNKNOWN_REFERENCE", "arcs[4].source");
    EXPECT("REQUIRED", "arcs[5].target");
    EXPECT("UNKNOWN_REFERENCE", "transitions[0].cancels[0]");
    EXPECT("UNKNOWN_REFERENCE", "transitions[0].cancels[1]"); /* a transition, not a place */
}
END_TEST

WF_CASE_TEST("validate", test_ids_unique_non_empty_and_printable)
{
    wf_net *n = sequence_net();
    n->transitions[1].id = "p1"; /* clashes with a place */
    P(n, "", WF_PLACE_NORMAL);   /* places[3] */
    P(n, "has space", WF_PLACE_NORMAL);
    n->key = "";
    validate(n);
    EXPECT("DUPLICATE_ID", "transitions[1].id");
    EXPECT("REQUIRED", "places[3].id");
    EXPECT("INVALID_VALUE", "places[4].id");
    EXPECT("REQUIRED", "key");
}
END_TEST

WF_CASE_TEST("validate", test_weights_must_be_sane)
{
    wf_net *n = sequence_net();
    n->arcs[0].weight = -1;
    n->arcs[1].weight = WF_NET_MAX_WEIGHT + 1;
    n->arcs[2].weight = 0; /* 0 means 1 */
    validate(n);
    EXPECT("INVALID_VALUE", "arcs[0].weight");
    EXPECT("INVALID_VALUE", "arcs[1].weight");
    ck_assert_int_eq(finding("INVALID_VALUE", "arcs[2].weight"), 0);
}
END_TEST

WF_CASE_TEST("validate", test_every_node_on_a_path_from_start_to_end)
{
    wf_net *n = sequence_net();
    P(n, "dead_end", WF_PLACE_NORMAL); /* places[3]: reachable, cannot reach END */
    U(n, "t3");                        /* transitions[2] */
    ARC(n, "p1", "t3");
    ARC(n, "t3", "dead_end");
    P(n, "island", WF_PLACE_NORMAL); /* places[4]: unreachable */
    U(n, "t4");                      /* transitions[3] */
    ARC(n, "island", "t4");
    ARC(n, "t4", "end");
    validate(n);
    EXPECT("NOT_ON_PATH", "places[3]");
    EXPECT("NOT_ON_PATH", "places[4]");
    EXPECT("NOT_ON_PATH", "transitions[3]");
    ck_assert_int_eq(finding("NOT_ON_PATH", "transitions[2]"), WF_SEVERITY_ERROR);
    ck_assert_int_eq(finding("NOT_ON_PATH", "places[1]"), 0);
}
END_TEST

WF_CASE_TEST("validate", test_guards_only_on_output_arcs_and_must_compile)
{
    wf_net *n = sequence_net();
    n->arcs[0].guard = ".x";            /* input arc */
    n->arcs[1].guard = ".amount >>> 3"; /* output arc, does not compile */
    n->arcs[3].guard = "range(5)";      /* refused function */
    validate(n);
    EXPECT("GUARD_ON_INPUT_ARC", "arcs[0].guard");
    EXPECT("GUARD_INVALID", "arcs[1].guard");
    EXPECT("GUARD_INVALID", "arcs[3].guard");
    ck_assert_ptr_nonnull(strstr(V[1].message, "syntax error"));
}
END_TEST

WF_CASE_TEST("validate", test_default_arcs)
{
    wf_net *n = sequence_net();
    P(n, "p2", WF_PLACE_NORMAL);
    U(n, "t3");
    ARC(n, "p2", "t3");
    ARC(n, "t3", "end");
    ARC(n, "t1", "p2")->is_default = true;  /* arcs[6] */
    ARC(n, "t1", "end")->is_default = true; /* arcs[7]: second default */
    n->arcs[0].is_default = true;           /* on an input arc */
    wf_arc *g = ARC(n, "t2", "p2");         /* arcs[8]: default with a guard */
    g->is_default = true;
    g->guard = ".x";
    ARC(n, "t2", "p1"); /* arcs[9] */
    validate(n);
    EXPECT("MULTIPLE_DEFAULT_ARCS", "arcs[7].is_default");
    EXPECT("DEFAULT_ON_INPUT_ARC", "arcs[0].is_default");
    EXPECT("INVALID_VALUE", "arcs[8].guard");
    ARC(n, "t2", "p1"); /* arcs[10]: repeats arcs[9] */
    validate(n);
    EXPECT("DUPLICATE_ARC", "arcs[10]");
}
END_TEST

WF_CASE_TEST("validate", test_guarded_arcs_without_default_is_a_warning)
{
    wf_net *n = sequence_net();
    P(n, "p2", WF_PLACE_NORMAL);
    U(n, "t3");
    ARC(n, "p2", "t3");
    ARC(n, "t3", "end");
    n->arcs[1].guard = ".a";
    ARC(n, "t1", "p2")->guard = ".b";
    validate(n);
    ck_assert_uint_eq(NV, 1);
    ck_assert_str_eq(V[0].code, "MISSING_DEFAULT_ARC");
    ck_assert_str_eq(V[0].path, "transitions[0]");
    ck_assert_int_eq(V[0].severity, WF_SEVERITY_WARNING);
    ck_assert(!wf_net_has_errors(V, NV));
    ARC(n, "t1", "end")->is_default = true;
    ck_assert_uint_eq(validate(n), 0);
}
END_TEST

WF_CASE_TEST("validate", test_user_trigger_fields)
{
    static const char *two[] = {"ann", "ann"};
    wf_net *n = sequence_net();
    wf_transition *t = &n->transitions[0];
    t->assignee = (wf_assignee){0};
    validate(n);
    EXPECT("TRIGGER_FIELD_MISSING", "transitions[0].assignee");
    EXPECT("TRIGGER_FIELD_MISSING", "transitions[0].assignee.ids");

    t->assignee.kind = WF_NET_ASSIGNEE_USERS;
    t->assignee.ids = two;
    t->assignee.n_ids = 2;
    t->assignee.ids_expression = ".approvers |";
    t->completion.mode = WF_JOIN_QUORUM;
    t->completion.quorum = 3;
    validate(n);
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[0].assignee.ids_expression");
    EXPECT("EXPRESSION_INVALID", "transitions[0].assignee.ids_expression");
    EXPECT("INVALID_VALUE", "transitions[0].assignee.ids[1]"); /* listed twice */
    EXPECT("INVALID_VALUE", "transitions[0].completion.quorum");

    t->assignee.ids = NULL;
    t->assignee.n_ids = 0;
    t->assignee.ids_expression = ".approvers";
    t->completion.quorum = 0;
    validate(n);
    EXPECT("INVALID_VALUE", "transitions[0].completion.quorum");
    t->completion.quorum = 5; /* unknown count with an expression: fine */
    ck_assert_uint_eq(validate(n), 0);

    t->assignee.kind = WF_NET_ASSIGNEE_GROUP;
    t->completion.mode = WF_JOIN_ANY;
    t->completion.quorum = 0;
    validate(n);
    EXPECT("INVALID_VALUE", "transitions[0].completion.mode");
}
END_TEST

/* The expressions of a USER transition's tasks must compile, and belong
 * to USER transitions only. */
WF_CASE_TEST("validate", test_task_expressions)
{
    wf_net *n = sequence_net();
    wf_transition *t = &n->transitions[0];
    t->priority_expression = "if .vip then 90 else 50 end";
    t->task_due_expression = ".due";
    t->task_follow_up_expression = ".due | fromdate - 3600 | todate";
    ck_assert_uint_eq(validate(n), 0);
    t->priority_expression = ".p |";
    t->task_due_expression = "[";
    t->task_follow_up_expression = ".f)";
    ck_assert_uint_eq(validate(n), 3);
    EXPECT("EXPRESSION_INVALID", "transitions[0].priority_expression");
    EXPECT("EXPRESSION_INVALID", "transitions[0].task_due_expression");
    EXPECT("EXPRESSION_INVALID", "transitions[0].task_follow_up_expression");
    ck_assert_ptr_nonnull(strstr(V[0].message, "priority_expression does not compile"));

    *t = (wf_transition){.id = "t1", .trigger = WF_TRIGGER_TIME, .delay_ms = 1000};
    t->priority_expression = "50";
    t->task_due_expression = ".due";
    t->task_follow_up_expression = ".f";
    ck_assert_uint_eq(validate(n), 3);
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[0].priority_expression");
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[0].task_due_expression");
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[0].task_follow_up_expression");
}
END_TEST

WF_CASE_TEST("validate", test_time_trigger_fields)
{
    wf_net *n = sequence_net();
    wf_transition *t = &n->transitions[0];
    *t = (wf_transition){.id = "t1", .trigger = WF_TRIGGER_TIME};
    validate(n);
    EXPECT("TRIGGER_FIELD_MISSING", "transitions[0].delay");
    t->delay_ms = 1000;
    t->due_expression = ".due";
    validate(n);
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[0].delay");
    t->delay_ms = 0;
    t->due_expression = ".due | ";
    validate(n);
    EXPECT("EXPRESSION_INVALID", "transitions[0].due_expression");
    t->due_expression = NULL;
    t->delay_ms = -5;
    validate(n);
    EXPECT("INVALID_VALUE", "transitions[0].delay");
    t->delay_ms = 5;
    ck_assert_uint_eq(validate(n), 0);
}
END_TEST

WF_CASE_TEST("validate", test_msg_and_missing_trigger)
{
    wf_net *n = sequence_net();
    n->transitions[0] = (wf_transition){.id = "t1", .trigger = WF_TRIGGER_MSG};
    n->transitions[1] = (wf_transition){.id = "t2"};
    validate(n);
    EXPECT("TRIGGER_FIELD_MISSING", "transitions[0].signal_name");
    EXPECT("REQUIRED", "transitions[1].trigger");
    n->transitions[1].trigger = (wf_trigger)9;
    validate(n);
    EXPECT("INVALID_VALUE", "transitions[1].trigger");
}
END_TEST

WF_CASE_TEST("validate", test_fields_of_other_triggers_conflict)
{
    wf_net *n = sequence_net();
    n->transitions[0].delay_ms = 100;      /* TIME field on USER */
    n->transitions[1].job_type = "x";      /* AUTO field on USER */
    n->transitions[1].signal_name = "sig"; /* MSG field on USER */
    validate(n);
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[0].delay");
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[1].job_type");
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[1].signal_name");
    n = sequence_net();
    n->transitions[0] = (wf_transition){
        .id = "t1", .trigger = WF_TRIGGER_AUTO, .assignee = {.kind = WF_NET_ASSIGNEE_USER}};
    validate(n);
    EXPECT("TRIGGER_FIELD_CONFLICT", "transitions[0].assignee");
}
END_TEST

WF_CASE_TEST("validate", test_retry_values_sane)
{
    wf_net *n = sequence_net();
    n->transitions[0] = (wf_transition){.id = "t1", .trigger = WF_TRIGGER_AUTO, .job_type = "j"};
    n->transitions[0].retry = (wf_retry_policy){
        .max_attempts = -1, .initial_backoff_ms = 10 * 60 * 1000, .multiplier = 0.5};
    n->transitions[0].lease_ms = -1;
    validate(n);
    EXPECT("INVALID_VALUE", "transitions[0].retry.max_attempts");
    EXPECT("INVALID_VALUE", "transitions[0].retry.multiplier");
    EXPECT("INVALID_VALUE", "transitions[0].retry.max_backoff"); /* 5 min default < 10 min */
    EXPECT("INVALID_VALUE", "transitions[0].lease");
}
END_TEST

WF_CASE_TEST("validate", test_all_errors_reported_at_once)
{
    wf_net *n = sequence_net();
    n->places[2].kind = WF_PLACE_NORMAL; /* no END */
    n->arcs[1].guard = "(";              /* bad guard */
    n->transitions[1].trigger = 0;       /* no trigger */
    ARC(n, "t1", "t2");                  /* transition -> transition */
    validate(n);
    EXPECT("END_PLACE_COUNT", "places");
    EXPECT("GUARD_INVALID", "arcs[1].guard");
    EXPECT("REQUIRED", "transitions[1].trigger");
    EXPECT("ARC_INVALID_ENDPOINTS", "arcs[4]");
    ck_assert_uint_ge(NV, 4);
}
END_TEST

WF_CASE_TEST("validate", test_validity_window_and_termination)
{
    wf_net *n = sequence_net();
    n->valid_from = 2000;
    n->valid_until = 1000;
    n->termination = (wf_termination)7;
    validate(n);
    EXPECT("INVALID_VALUE", "valid_until");
    EXPECT("INVALID_VALUE", "termination");
}
END_TEST

/* ---- canonical JSON and hash --------------------------------------------------- */

WF_CASE_TEST("json", test_json_round_trip_is_stable)
{
    wf_error err;
    wf_net *n = full_net();
    n->valid_from = 1700000000000000;
    char *j1, *j2;
    ck_assert_int_eq(wf_net_to_json(n, A, &j1, &err), WF_OK);
    wf_net *back;
    ck_assert_int_eq(wf_net_from_json(j1, A, &back, &err), WF_OK);
    ck_assert_int_eq(wf_net_to_json(back, A, &j2, &err), WF_OK);
    ck_assert_str_eq(j1, j2);
    /* The decoded net is the same net. */
    ck_assert_uint_eq(back->n_places, 5);
    ck_assert_uint_eq(back->n_transitions, 5);
    ck_assert_uint_eq(back->n_arcs, 12);
    ck_assert_str_eq(back->transitions[0].assignee.ids[2], "carl");
    ck_assert_int_eq(back->transitions[0].completion.mode, WF_JOIN_QUORUM);
    ck_assert_int_eq(back->transitions[0].completion.quorum, 2);
    ck_assert_int_eq(back->transitions[2].retry.max_attempts, 5);
    ck_assert_int_eq(back->transitions[2].retry.max_backoff_ms, WF_NET_DEFAULT_MAX_BACKOFF_MS);
    ck_assert_int_eq(back->transitions[2].lease_ms, WF_NET_DEFAULT_LEASE_MS);
    ck_assert_int_eq(back->transitions[3].correlation, WF_CORRELATION_AGGREGATE);
    ck_assert_str_eq(back->transitions[3].cancels[0], "p_wait");
    ck_assert_str_eq(back->arcs[5].guard, ".amount > 1000");
    ck_assert(back->arcs[6].is_default);
    ck_assert_int_eq(back->valid_from, 1700000000000000);
    ck_assert_int_eq(back->termination, WF_TERMINATION_EXPLICIT);
    ck_assert_uint_eq(validate(back), 0);
    /* Sorted keys, compact. */
    ck_assert(strncmp(j1, "{\"arcs\":[{\"source\":\"start\",\"target\":\"route\",\"weight\":1}",
                      54) == 0);
}
END_TEST

/* A for-each transition's fields survive the canonical JSON; the deploy's
 * rules on them. */
WF_CASE_TEST("json", test_for_each_round_trip_and_rules)
{
    wf_error err;
    wf_net *n = full_net();
    wf_transition *ship = &n->transitions[2];
    ck_assert_str_eq(ship->id, "ship");
    ship->for_each = ".lines";
    ship->for_each_item = "line";
    ship->for_each_output = "shipped";
    ship->for_each_sequential = true;
    ship->for_each_completion = (wf_completion){WF_JOIN_QUORUM, 2};
    char *j;
    ck_assert_int_eq(wf_net_to_json(n, A, &j, &err), WF_OK);
    wf_net *back;
    ck_assert_int_eq(wf_net_from_json(j, A, &back, &err), WF_OK);
    const wf_transition *t = &back->transitions[2];
    ck_assert_str_eq(t->for_each, ".lines");
    ck_assert_str_eq(t->for_each_item, "line");
    ck_assert_str_eq(t->for_each_output, "shipped");
    ck_assert(t->for_each_sequential);
    ck_assert_int_eq(t->for_each_completion.mode, WF_JOIN_QUORUM);
    ck_assert_int_eq(t->for_each_completion.quorum, 2);
    ck_assert_uint_eq(validate(back), 0);
    ship->for_each_item = "2nd";
    ship->for_each_completion = (wf_completion){WF_JOIN_QUORUM, 0};
    validate(n);
    EXPECT("INVALID_VALUE", "transitions[2].for_each_item");
    EXPECT("INVALID_VALUE", "transitions[2].for_each_completion.quorum");
    ship->for_each = "";
    ship->for_each_item = "";
    validate(n);
    EXPECT("INVALID_VALUE", "transitions[2].for_each");
}
END_TEST

/* The resources a transition names survive the canonical JSON, change the
 * content hash, and are absent from the JSON of a net naming none. */
WF_CASE_TEST("json", test_resources_round_trip)
{
    static const wf_resource_use uses[] = {{"charges", ".customer"}, {"carrier.api", ""}};
    wf_error err;
    wf_net *n = full_net();
    char *plain, *h1, *h2;
    ck_assert_int_eq(wf_net_to_json(n, A, &plain, &err), WF_OK);
    ck_assert_ptr_null(strstr(plain, "resources"));
    ck_assert_int_eq(wf_net_content_hash(n, A, &h1, &err), WF_OK);
    n->transitions[2].resources = uses;
    n->transitions[2].n_resources = 2;
    char *j;
    ck_assert_int_eq(wf_net_to_json(n, A, &j, &err), WF_OK);
    wf_net *back;
    ck_assert_int_eq(wf_net_from_json(j, A, &back, &err), WF_OK);
    const wf_transition *t = &back->transitions[2];
    ck_assert_uint_eq(t->n_resources, 2);
    ck_assert_str_eq(t->resources[0].name, "charges");
    ck_assert_str_eq(t->resources[0].key_expression, ".customer");
    ck_assert_str_eq(t->resources[1].name, "carrier.api");
    ck_assert_str_eq(t->resources[1].key_expression, "");
    ck_assert_uint_eq(back->transitions[0].n_resources, 0);
    ck_assert_uint_eq(validate(back), 0);
    ck_assert_int_eq(wf_net_content_hash(n, A, &h2, &err), WF_OK);
    ck_assert_str_ne(h1, h2);
    ck_assert_int_eq(wf_net_from_json("{\"transitions\":[{\"id\":\"t\",\"resources\":[\"x\"]}]}", A,
                                      &back, &err),
                     WF_E_INVALID_JSON);
}
END_TEST

WF_CASE_TEST("json", test_hash_ignores_defaults_and_version_but_not_content)
{
    wf_error err;
    wf_net *a = full_net(), *b = full_net();
    b->version = 7;
    b->termination = WF_TERMINATION_EXPLICIT; /* the default, made explicit */
    b->arcs[0].weight = 1;                    /* idem */
    b->transitions[2].lease_ms = WF_NET_DEFAULT_LEASE_MS;
    b->transitions[2].retry.multiplier = 2.0;
    b->places[1].kind = WF_PLACE_UNSET; /* reads as NORMAL */
    char *ha, *hb;
    ck_assert_int_eq(wf_net_content_hash(a, A, &ha, &err), WF_OK);
    ck_assert_int_eq(wf_net_content_hash(b, A, &hb, &err), WF_OK);
    ck_assert_uint_eq(strlen(ha), 64);
    ck_assert_str_eq(ha, hb);
    b->arcs[5].guard = ".amount > 2000";
    ck_assert_int_eq(wf_net_content_hash(b, A, &hb, &err), WF_OK);
    ck_assert_str_ne(ha, hb);
}
END_TEST

WF_CASE_TEST("json", test_sha256_vectors)
{
    char hex[65];
    wf_sha256_hex("", 0, hex);
    ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    wf_sha256_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    wf_sha256_hex(m, strlen(m), hex);
    ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

WF_CASE_TEST("json", test_from_json_rejects_malformed_content)
{
    wf_error err;
    wf_net *n;
    ck_assert_int_eq(wf_net_from_json("[1]", A, &n, &err), WF_E_INVALID_JSON);
    ck_assert_int_eq(
        wf_net_from_json("{\"places\":[{\"id\":\"p\",\"kind\":\"WEIRD\"}]}", A, &n, &err),
        WF_E_INVALID_JSON);
    ck_assert_str_eq(err.msg, "definition content is malformed: kind");
    ck_assert_int_eq(wf_net_from_json("{\"arcs\":[{\"weight\":\"2\"}]}", A, &n, &err),
                     WF_E_INVALID_JSON);
    ck_assert_int_eq(wf_net_from_json("{\"key\":\"k\"}", A, &n, &err), WF_OK);
    ck_assert_uint_eq(n->n_places, 0);
}
END_TEST

/* ---- firing ---------------------------------------------------------------------- */

static wf_net_state ST;
static wf_net_diff D;

static void
start(const wf_net *n, const char *vars)
{
    wf_error err;
    wf_code rc = wf_net_start(n, NULL, vars, A, &ST, &D, &err);
    ck_assert_msg(rc == WF_OK, "start: %s", err.msg);
}

/* The live work item of transition tid (the n-th one). */
static const wf_work_item *
item_of(const char *tid, int nth)
{
    for (size_t i = 0; i < ST.n_items; i++)
        if (strcmp(ST.items[i].transition_id, tid) == 0 && nth-- == 0)
            return &ST.items[i];
    return NULL;
}

static size_t
items_of(const char *tid)
{
    size_t k = 0;
    for (size_t i = 0; i < ST.n_items; i++)
        k += strcmp(ST.items[i].transition_id, tid) == 0;
    return k;
}

static size_t
tokens_in(const char *pid)
{
    size_t k = 0;
    for (size_t i = 0; i < ST.n_tokens; i++)
        k += strcmp(ST.tokens[i].place_id, pid) == 0;
    return k;
}

static void
fire_net(const wf_net *n, const char *tid, const char *vars)
{
    const wf_work_item *it = item_of(tid, 0);
    ck_assert_msg(it != NULL, "%s is not enabled", tid);
    wf_error err;
    wf_net_state next;
    wf_code rc = wf_net_fire(n, &ST, it->id, vars, A, &next, &D, &err);
    ck_assert_msg(rc == WF_OK, "fire %s: %s", tid, err.msg);
    ST = next;
}

WF_CASE_TEST("fire", test_sequence)
{
    wf_net *n = sequence_net();
    start(n, "{}");
    ck_assert_uint_eq(ST.n_tokens, 1);
    ck_assert_uint_eq(tokens_in("start"), 1);
    ck_assert_uint_eq(D.n_created, 1);
    ck_assert_str_eq(D.created[0].transition_id, "t1");
    ck_assert_int_eq(D.created[0].trigger, WF_TRIGGER_USER);
    ck_assert_uint_eq(D.created[0].n_token_ids, 1);
    ck_assert_str_eq(D.created[0].token_ids[0], ST.tokens[0].id);
    ck_assert(!D.ended);
    const char *start_tok = ST.tokens[0].id;

    fire_net(n, "t1", "{}");
    ck_assert_uint_eq(D.n_fired, 1);
    ck_assert_str_eq(D.fired[0].transition_id, "t1");
    ck_assert(!D.fired[0].enabled_in_step);
    ck_assert_uint_eq(D.n_removed_tokens, 1);
    ck_assert_str_eq(D.removed_tokens[0], start_tok);
    ck_assert_uint_eq(D.n_added_tokens, 1);
    ck_assert_str_eq(D.added_tokens[0].place_id, "p1");
    ck_assert_int_gt(D.added_tokens[0].seq, 1);
    ck_assert_uint_eq(D.n_withdrawn, 0);
    ck_assert_uint_eq(items_of("t2"), 1);
    ck_assert_uint_eq(ST.n_items, 1);

    fire_net(n, "t2", "{}");
    ck_assert(D.ended);
    ck_assert(!D.deadlocked);
    ck_assert_uint_eq(tokens_in("end"), 1);
    ck_assert_uint_eq(ST.n_items, 0);
}
END_TEST

/* start -> split(silent) -> a, b; a -> ta -> a2; b -> tb -> b2;
 * a2 + b2 -> join -> end. */
static wf_net *
and_net(void)
{
    wf_net *n = net_new("and");
    P(n, "start", WF_PLACE_START);
    P(n, "a", WF_PLACE_NORMAL);
    P(n, "b", WF_PLACE_NORMAL);
    P(n, "a2", WF_PLACE_NORMAL);
    P(n, "b2", WF_PLACE_NORMAL);
    P(n, "end", WF_PLACE_END);
    S(n, "split");
    U(n, "ta");
    U(n, "tb");
    U(n, "join");
    ARC(n, "start", "split");
    ARC(n, "split", "a");
    ARC(n, "split", "b");
    ARC(n, "a", "ta");
    ARC(n, "ta", "a2");
    ARC(n, "b", "tb");
    ARC(n, "tb", "b2");
    ARC(n, "a2", "join");
    ARC(n, "b2", "join");
    ARC(n, "join", "end");
    return n;
}

WF_CASE_TEST("fire", test_and_split_and_join)
{
    wf_net *n = and_net();
    ck_assert_uint_eq(validate(n), 0);
    start(n, "{}");
    /* The silent split fired in the start step. */
    ck_assert_uint_eq(D.n_fired, 1);
    ck_assert_str_eq(D.fired[0].transition_id, "split");
    ck_assert(D.fired[0].enabled_in_step);
    ck_assert_uint_eq(tokens_in("a"), 1);
    ck_assert_uint_eq(tokens_in("b"), 1);
    ck_assert_uint_eq(D.n_created, 2);
    ck_assert_uint_eq(D.n_added_tokens, 2); /* the start token came and went */

    fire_net(n, "ta", "{}");
    ck_assert_uint_eq(items_of("join"), 0); /* waits for b2 */
    ck_assert_uint_eq(tokens_in("a2"), 1);
    fire_net(n, "tb", "{}");
    ck_assert_uint_eq(items_of("join"), 1);
    ck_assert_uint_eq(item_of("join", 0)->n_token_ids, 2);
    fire_net(n, "join", "{}");
    ck_assert(D.ended);
}
END_TEST

WF_CASE_TEST("fire", test_weights)
{
    /* start -> make (weight 2 out) -> p; p -> take (weight 2 in) -> end;
     * p -> single (weight 1) -> end. */
    wf_net *n = net_new("w");
    P(n, "start", WF_PLACE_START);
    P(n, "p", WF_PLACE_NORMAL);
    P(n, "end", WF_PLACE_END);
    U(n, "make");
    U(n, "take");
    ARC(n, "start", "make");
    ARC(n, "make", "p")->weight = 3;
    ARC(n, "p", "take")->weight = 2;
    ARC(n, "take", "end");
    n->termination = WF_TERMINATION_IMPLICIT;
    start(n, "{}");
    fire_net(n, "make", "{}");
    ck_assert_uint_eq(tokens_in("p"), 3);
    ck_assert_uint_eq(D.n_added_tokens, 3);
    /* 3 tokens: one item on 2 tokens; the third waits. */
    ck_assert_uint_eq(items_of("take"), 1);
    ck_assert_uint_eq(item_of("take", 0)->n_token_ids, 2);
    /* Oldest first. */
    ck_assert_str_eq(item_of("take", 0)->token_ids[0], ST.tokens[0].id);
    fire_net(n, "take", "{}");
    ck_assert_uint_eq(tokens_in("p"), 1);
    ck_assert_uint_eq(items_of("take"), 0);
    ck_assert(!D.ended);
    ck_assert(D.deadlocked); /* one token left, nothing can consume it */
}
END_TEST

/* review -> p_high [.amount > 1000] / p_mid [.amount > 100] / p_low default. */
static wf_net *
or_net(bool with_default)
{
    wf_net *n = net_new("or");
    P(n, "start", WF_PLACE_START);
    P(n, "high", WF_PLACE_NORMAL);
    P(n, "mid", WF_PLACE_NORMAL);
    P(n, "low", WF_PLACE_NORMAL);
    P(n, "end", WF_PLACE_END);
    U(n, "review");
    U(n, "th");
    U(n, "tm");
    U(n, "tl");
    ARC(n, "start", "review");
    ARC(n, "review", "high")->guard = ".amount > 1000";
    ARC(n, "review", "mid")->guard = ".amount > 100";
    if (with_default)
        ARC(n, "review", "low")->is_default = true;
    else
        ARC(n, "review", "low")->guard = ".amount < 0";
    ARC(n, "high", "th");
    ARC(n, "th", "end");
    ARC(n, "mid", "tm");
    ARC(n, "tm", "end");
    ARC(n, "low", "tl");
    ARC(n, "tl", "end");
    return n;
}

WF_CASE_TEST("fire", test_explicit_or_split_with_default)
{
    wf_net *n = or_net(true);
    ck_assert_uint_eq(validate(n), 0);
    wf_net_state s0;
    start(n, "{}");
    s0 = ST;
    fire_net(n, "review", "{\"amount\":5000}"); /* both guards true */
    ck_assert_uint_eq(tokens_in("high"), 1);
    ck_assert_uint_eq(tokens_in("mid"), 1);
    ck_assert_uint_eq(tokens_in("low"), 0);
    ST = s0;
    fire_net(n, "review", "{\"amount\":500}");
    ck_assert_uint_eq(tokens_in("high"), 0);
    ck_assert_uint_eq(tokens_in("mid"), 1);
    ck_assert_uint_eq(tokens_in("low"), 0);
    ST = s0;
    fire_net(n, "review", "{\"amount\":5}");
    ck_assert_uint_eq(tokens_in("low"), 1);
    ck_assert_uint_eq(ST.n_tokens, 1);
    ck_assert_uint_eq(items_of("tl"), 1);
}
END_TEST

WF_CASE_TEST("fire", test_no_arc_matched_changes_nothing)
{
    wf_net *n = or_net(false);
    validate(n);
    ck_assert_int_eq(finding("MISSING_DEFAULT_ARC", "transitions[0]"), WF_SEVERITY_WARNING);
    start(n, "{}");
    wf_net_state before = ST;
    const wf_token *tok0 = ST.tokens;
    wf_net_state out = {0};
    wf_net_diff diff = {0};
    wf_error err;
    ck_assert_int_eq(
        wf_net_fire(n, &ST, item_of("review", 0)->id, "{\"amount\":5}", A, &out, &diff, &err),
        WF_E_NO_ARC_MATCHED);
    ck_assert_str_eq(err.msg, "no output arc of transition \"review\" matched");
    ck_assert_ptr_null(out.tokens); /* out-parameters untouched */
    ck_assert_uint_eq(diff.n_fired, 0);
    ck_assert_ptr_eq(ST.tokens, tok0);
    ck_assert_uint_eq(before.n_tokens, 1);
    ck_assert_str_eq(ST.tokens[0].place_id, "start");
    ck_assert_int_eq(wf_net_fire(n, &ST, "no-such-item", "{}", A, &out, &diff, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "work item \"no-such-item\" is not enabled");
}
END_TEST

WF_CASE_TEST("fire", test_guard_runtime_error_is_refused)
{
    wf_net *n = or_net(true);
    n->arcs[1].guard = ".amount.value > 1";
    start(n, "{}");
    wf_net_state out = {0};
    wf_net_diff diff = {0};
    wf_error err;
    ck_assert_int_eq(
        wf_net_fire(n, &ST, item_of("review", 0)->id, "{\"amount\":5}", A, &out, &diff, &err),
        WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "guard of arc 1 of transition \"review\": expression failed: "
                              "cannot index number with string \"value\"");
}
END_TEST

/* p -> approve (USER) | timeout (TIME): deferred choice on one token. */
static wf_net *
race_net(void)
{
    wf_net *n = net_new("race");
    P(n, "start", WF_PLACE_START);
    P(n, "end", WF_PLACE_END);
    P(n, "rejected", WF_PLACE_NORMAL);
    U(n, "approve");
    wf_transition *t = T(n, "timeout", WF_TRIGGER_TIME);
    t->delay_ms = 1000;
    U(n, "archive");
    ARC(n, "start", "approve");
    ARC(n, "start", "timeout");
    ARC(n, "approve", "end");
    ARC(n, "timeout", "rejected");
    ARC(n, "rejected", "archive");
    ARC(n, "archive", "end");
    return n;
}

WF_CASE_TEST("fire", test_deferred_choice_withdraws_the_loser)
{
    wf_net *n = race_net();
    ck_assert_uint_eq(validate(n), 0);
    start(n, "{}");
    ck_assert_uint_eq(ST.n_items, 2);
    const wf_work_item *ap = item_of("approve", 0), *to = item_of("timeout", 0);
    ck_assert_str_eq(ap->token_ids[0], to->token_ids[0]); /* the same token */
    ck_assert_int_eq(to->trigger, WF_TRIGGER_TIME);
    const char *approve_id = ap->id;
    fire_net(n, "timeout", "{}");
    ck_assert_uint_eq(D.n_withdrawn, 1);
    ck_assert_str_eq(D.withdrawn[0], approve_id);
    ck_assert_uint_eq(items_of("approve"), 0);
    ck_assert_uint_eq(items_of("archive"), 1);
    /* The withdrawn item can never fire. */
    wf_net_state out;
    wf_net_diff diff;
    wf_error err;
    ck_assert_int_eq(wf_net_fire(n, &ST, approve_id, "{}", A, &out, &diff, &err),
                     WF_E_INVALID_ARGUMENT);
}
END_TEST

WF_CASE_TEST("fire", test_multi_merge_two_tokens_two_items)
{
    /* OR-join without synchronisation: ta and tb both feed p; two tokens
     * in p give two live items of join on disjoint tokens. */
    wf_net *n = net_new("merge");
    P(n, "start", WF_PLACE_START);
    P(n, "a", WF_PLACE_NORMAL);
    P(n, "b", WF_PLACE_NORMAL);
    P(n, "p", WF_PLACE_NORMAL);
    P(n, "end", WF_PLACE_END);
    S(n, "split");
    U(n, "ta");
    U(n, "tb");
    U(n, "join");
    ARC(n, "start", "split");
    ARC(n, "split", "a");
    ARC(n, "split", "b");
    ARC(n, "a", "ta");
    ARC(n, "ta", "p");
    ARC(n, "b", "tb");
    ARC(n, "tb", "p");
    ARC(n, "p", "join");
    ARC(n, "join", "end");
    ck_assert_uint_eq(validate(n), 0);
    start(n, "{}");
    fire_net(n, "ta", "{}");
    ck_assert_uint_eq(items_of("join"), 1);
    fire_net(n, "tb", "{}");
    ck_assert_uint_eq(tokens_in("p"), 2);
    ck_assert_uint_eq(items_of("join"), 2);
    ck_assert_str_ne(item_of("join", 0)->token_ids[0], item_of("join", 1)->token_ids[0]);
    ck_assert_uint_eq(D.n_created, 1); /* only the new one */

    /* wf_net_enablings on a hand-made marking agrees. */
    wf_token toks[3] = {{"k1", "p", 5}, {"k2", "p", 3}, {"k3", "a", 4}};
    wf_net_state s = {.tokens = toks, .n_tokens = 3};
    wf_work_item *items;
    size_t ni;
    wf_error err;
    ck_assert_int_eq(wf_net_enablings(n, &s, A, &items, &ni, &err), WF_OK);
    ck_assert_uint_eq(ni, 3);
    ck_assert_str_eq(items[0].transition_id, "ta");
    ck_assert_str_eq(items[1].transition_id, "join");
    ck_assert_str_eq(items[1].token_ids[0], "k2"); /* oldest first */
    ck_assert_str_eq(items[2].token_ids[0], "k1");
}
END_TEST

WF_CASE_TEST("fire", test_cancellation_set)
{
    static const char *cancels[] = {"b"};
    wf_net *n = and_net();
    n->termination = WF_TERMINATION_IMPLICIT;
    /* ta cancels place b: tb is withdrawn; a second route ends the case. */
    n->transitions[1].cancels = cancels;
    n->transitions[1].n_cancels = 1;
    n->arcs[4].target = "end";
    start(n, "{}");
    const char *tb_item = item_of("tb", 0)->id;
    fire_net(n, "ta", "{}");
    ck_assert_uint_eq(tokens_in("b"), 0);
    ck_assert_uint_eq(D.n_removed_tokens, 2); /* a's token and b's */
    ck_assert_uint_eq(D.n_withdrawn, 1);
    ck_assert_str_eq(D.withdrawn[0], tb_item);
    ck_assert(D.ended); /* IMPLICIT: only the END token is left */
}
END_TEST

WF_CASE_TEST("fire", test_silent_chain_fires_in_one_step)
{
    wf_net *n = net_new("chain");
    P(n, "start", WF_PLACE_START);
    P(n, "p1", WF_PLACE_NORMAL);
    P(n, "p2", WF_PLACE_NORMAL);
    P(n, "end", WF_PLACE_END);
    S(n, "s1");
    S(n, "s2");
    U(n, "u");
    ARC(n, "start", "s1");
    ARC(n, "s1", "p1");
    ARC(n, "p1", "s2");
    ARC(n, "s2", "p2");
    ARC(n, "p2", "u");
    ARC(n, "u", "end");
    start(n, "{}");
    ck_assert_uint_eq(D.n_fired, 2);
    ck_assert_str_eq(D.fired[0].transition_id, "s1");
    ck_assert_str_eq(D.fired[1].transition_id, "s2");
    ck_assert_uint_eq(D.n_created, 1);
    ck_assert_str_eq(D.created[0].transition_id, "u");
    ck_assert_uint_eq(ST.n_tokens, 1);
    ck_assert_str_eq(ST.tokens[0].place_id, "p2");
    ck_assert_uint_eq(D.n_added_tokens, 1);

    /* Silent straight to END: the case ends at start. */
    n->arcs[3].target = "end";
    start(n, "{}");
    ck_assert(D.ended);
    ck_assert_uint_eq(D.n_created, 0);
}
END_TEST

WF_CASE_TEST("fire", test_silent_cycle_hits_the_loop_bound)
{
    wf_net *n = net_new("spin");
    P(n, "start", WF_PLACE_START);
    P(n, "p1", WF_PLACE_NORMAL);
    P(n, "p2", WF_PLACE_NORMAL);
    P(n, "end", WF_PLACE_END);
    S(n, "s0");
    S(n, "s1");
    S(n, "s2");
    ARC(n, "start", "s0");
    ARC(n, "s0", "p1");
    ARC(n, "p1", "s1");
    ARC(n, "s1", "p2");
    ARC(n, "s1", "end")->guard = ".done"; /* never true */
    ARC(n, "p2", "s2");
    ARC(n, "s2", "p1");
    wf_net_state out = {0};
    wf_net_diff diff = {0};
    wf_error err;
    ck_assert_int_eq(wf_net_start(n, NULL, "{}", A, &out, &diff, &err), WF_E_DEFINITION_INVALID);
    ck_assert_str_eq(err.msg, "silent transitions of definition \"spin\" fired more than 1000 "
                              "times in one step; the net loops without waiting");
    ck_assert_ptr_null(out.tokens);
    /* With the exit open, it leaves at once. */
    ck_assert_int_eq(wf_net_start(n, NULL, "{\"done\":true}", A, &out, &diff, &err), WF_OK);
    ck_assert(diff.ended);
}
END_TEST

WF_CASE_TEST("fire", test_explicit_vs_implicit_termination)
{
    /* AND-split to two USER branches that each reach END. */
    wf_net *n = and_net();
    n->arcs[4].target = "end"; /* ta -> end */
    n->arcs[6].target = "end"; /* tb -> end */
    start(n, "{}");
    wf_net_state s0 = ST;
    fire_net(n, "ta", "{}");
    ck_assert(D.ended); /* EXPLICIT: first token in END */
    ck_assert_uint_eq(D.n_withdrawn, 1);
    ck_assert_uint_eq(ST.n_items, 0);

    n->termination = WF_TERMINATION_IMPLICIT;
    ST = s0;
    fire_net(n, "ta", "{}");
    ck_assert(!D.ended);
    ck_assert_uint_eq(items_of("tb"), 1);
    fire_net(n, "tb", "{}");
    ck_assert(D.ended);
    ck_assert_uint_eq(tokens_in("end"), 2);
}
END_TEST

WF_CASE_TEST("fire", test_loop_back_via_guard_then_exit)
{
    /* start -> s -> p0 -> review -> p1 -> decide(silent) -> end [.approved]
     *                                                    -> p0 (default) */
    wf_net *n = net_new("loop");
    P(n, "start", WF_PLACE_START);
    P(n, "p0", WF_PLACE_NORMAL);
    P(n, "p1", WF_PLACE_NORMAL);
    P(n, "end", WF_PLACE_END);
    S(n, "s");
    U(n, "review");
    S(n, "decide");
    ARC(n, "start", "s");
    ARC(n, "s", "p0");
    ARC(n, "p0", "review");
    ARC(n, "review", "p1");
    ARC(n, "p1", "decide");
    ARC(n, "decide", "end")->guard = ".approved";
    ARC(n, "decide", "p0")->is_default = true;
    ck_assert_uint_eq(validate(n), 0);
    start(n, "{}");
    for (int round = 0; round < 3; round++) {
        const char *old = item_of("review", 0)->id;
        fire_net(n, "review", "{\"approved\":false}");
        ck_assert(!D.ended);
        ck_assert_uint_eq(items_of("review"), 1);
        ck_assert_str_ne(item_of("review", 0)->id, old);
        ck_assert_uint_eq(D.n_fired, 2); /* review, then decide */
    }
    fire_net(n, "review", "{\"approved\":true}");
    ck_assert(D.ended);
}
END_TEST

WF_CASE_TEST("fire", test_restart_arc_runs_the_start_again)
{
    wf_net *n = restart_net();
    start(n, "{}");
    ck_assert_uint_eq(tokens_in("start"), 1);
    for (int round = 0; round < 2; round++) {
        const char *old = item_of("draft", 0)->id;
        fire_net(n, "draft", "{}");
        ck_assert_uint_eq(tokens_in("start"), 0);
        fire_net(n, "review", "{\"approved\":false}");
        /* Back in START: the case goes on, and the start's transition is
         * enabled again with a new work item. */
        ck_assert(!D.ended);
        ck_assert(!D.deadlocked);
        ck_assert_uint_eq(tokens_in("start"), 1);
        ck_assert_uint_eq(ST.n_tokens, 1);
        ck_assert_uint_eq(items_of("draft"), 1);
        ck_assert_uint_eq(ST.n_items, 1);
        ck_assert_str_ne(item_of("draft", 0)->id, old);
        ck_assert_uint_eq(D.n_created, 1);
        ck_assert_str_eq(D.created[0].transition_id, "draft");
    }
    fire_net(n, "draft", "{}");
    fire_net(n, "review", "{\"approved\":true}");
    ck_assert(D.ended);
    ck_assert_uint_eq(tokens_in("end"), 1);
    ck_assert_uint_eq(tokens_in("start"), 0);

    /* IMPLICIT termination: a token back in START is a token outside END,
     * so the case does not end there either. */
    n = restart_net();
    n->termination = WF_TERMINATION_IMPLICIT;
    start(n, "{}");
    fire_net(n, "draft", "{}");
    fire_net(n, "review", "{}");
    ck_assert(!D.ended);
    ck_assert_uint_eq(items_of("draft"), 1);
}
END_TEST

WF_CASE_TEST("fire", test_seq_continues_above_existing_tokens)
{
    wf_net *n = sequence_net();
    wf_token toks[1] = {{"old", "start", 41}};
    wf_work_item items[1];
    const char *tids[1] = {"old"};
    items[0] =
        (wf_work_item){.id = "wi", .transition_id = "t1", .token_ids = tids, .n_token_ids = 1};
    wf_net_state s = {.tokens = toks, .n_tokens = 1, .items = items, .n_items = 1, .next_seq = 7};
    wf_net_state out;
    wf_net_diff diff;
    wf_error err;
    ck_assert_int_eq(wf_net_fire(n, &s, "wi", "{}", A, &out, &diff, &err), WF_OK);
    ck_assert_int_eq(diff.added_tokens[0].seq, 42);
    ck_assert_int_eq(out.next_seq, 43);
    ck_assert_str_eq(diff.removed_tokens[0], "old");
    ck_assert_str_eq(diff.fired[0].work_item_id, "wi");
}
END_TEST

WF_CASE_TEST("fire", test_completion_rule)
{
    ck_assert(!wf_completion_met(WF_JOIN_ALL, 0, 2, 3));
    ck_assert(wf_completion_met(WF_JOIN_ALL, 0, 3, 3));
    ck_assert(wf_completion_met(WF_JOIN_NONE, 0, 1, 1));
    ck_assert(!wf_completion_met(WF_JOIN_ANY, 0, 0, 3));
    ck_assert(wf_completion_met(WF_JOIN_ANY, 0, 1, 3));
    ck_assert(!wf_completion_met(WF_JOIN_QUORUM, 2, 1, 3));
    ck_assert(wf_completion_met(WF_JOIN_QUORUM, 2, 2, 3));
    ck_assert(wf_completion_met(WF_JOIN_QUORUM, 5, 2, 2)); /* quorum above the count */
    ck_assert(!wf_completion_met(WF_JOIN_QUORUM, 0, 3, 3));
    ck_assert(!wf_completion_met(WF_JOIN_ALL, 0, 0, 0));
}
END_TEST

WF_CASE_TEST("fire", test_merge_variables)
{
    wf_error err;
    char *out;
    ck_assert_int_eq(wf_net_merge_variables("{\"a\":1,\"b\":{\"x\":1}}",
                                            "{\"b\":{\"y\":2},\"c\":3}", A, &out, &err),
                     WF_OK);
    ck_assert_str_eq(out, "{\"a\":1,\"b\":{\"y\":2},\"c\":3}"); /* top-level keys replaced */
    ck_assert_int_eq(wf_net_merge_variables(NULL, "{\"a\":1}", A, &out, &err), WF_OK);
    ck_assert_str_eq(out, "{\"a\":1}");
    ck_assert_int_eq(wf_net_merge_variables("{\"a\":1}", "", A, &out, &err), WF_OK);
    ck_assert_str_eq(out, "{\"a\":1}");
    ck_assert_int_eq(wf_net_merge_variables("{}", "[1]", A, &out, &err), WF_E_INVALID_JSON);
    ck_assert_str_eq(err.msg, "output variables must be a JSON object");
    ck_assert_int_eq(wf_net_merge_variables("3", "{}", A, &out, &err), WF_E_INVALID_JSON);
    ck_assert_int_eq(wf_net_merge_variables("{\"a\":", "{}", A, &out, &err), WF_E_INVALID_JSON);
}
END_TEST

WF_CASE_TEST("fire", test_join_and_split_ids)
{
    const char *ids[] = {"t1", "t2", "t3"};
    char *s = wf_net_join_ids(A, ids, 3);
    ck_assert_str_eq(s, "t1,t2,t3");
    const char **back;
    size_t n;
    wf_error err;
    ck_assert_int_eq(wf_net_split_ids(A, s, &back, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(back[2], "t3");
    ck_assert_int_eq(wf_net_split_ids(A, "", &back, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_str_eq(wf_net_join_ids(A, ids, 0), "");
}
END_TEST

int
main(void)
{
    kit_fixture(NULL, &A);
    const wf_test_case cases[] = {{"validate", kit_setup, kit_teardown, 30},
                                  {"json", kit_setup, kit_teardown, 30},
                                  {"fire", kit_setup, kit_teardown, 30},
                                  {NULL}};
    return wf_test_run(wf_test_suite_of("net", cases));
}
