/*
 * test_calls: the rules of CALL transitions in the engine, without a
 * server, on the memory store:
 *   - a child whose net ends at once returns in the caller's unit of work:
 *     input and output mapped, both instances COMPLETED, one tree;
 *   - a mapping that does not yield an object refuses the caller's step;
 *   - the depth bound (wf_runtime_set_call_max_depth) stops a recursive
 *     definition with CALL_DEPTH_EXCEEDED at the deepest level, and each
 *     caller above it has CALL_CHILD_FAILED;
 *   - an unknown key is CALL_DEFINITION_NOT_FOUND, not an error;
 *   - validation: CALL_KEY_MISSING, CALL_VERSION_INVALID, call fields on
 *     another trigger.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "engine_kit.h"
#include "net.h"
#include "net_runtime.h"
#include "store.h"
#include "test_support.h"

static wf_store *st;
static wf_arena *arena;

static wf_transition *
call_t(const char *key, const char *input, const char *output)
{
    wf_transition *t = wf_arena_calloc(arena, 1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    *t = (wf_transition){.id = "pay",
                         .trigger = WF_TRIGGER_CALL,
                         .call_key = key,
                         .call_input = input,
                         .call_output = output};
    return t;
}

/* A net of one silent AUTO transition: it ends as it starts. */
static void
deploy_silent(wf_runtime_ctx c, const char *key)
{
    wf_transition *t = wf_arena_calloc(arena, 1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    *t = (wf_transition){.id = "go", .trigger = WF_TRIGGER_AUTO};
    kit_deploy_line(c, key, t);
}

static wf_instance_row
start(wf_runtime_ctx c, const char *key, const char *vars, wf_code *rc, wf_error *err)
{
    wf_start_spec spec = {.definition_key = key, .variables_json = vars};
    wf_instance_row out = {0};
    *rc = wf_instances_start(&c.ref, &spec, NULL, &out, err);
    return out;
}

static const wf_instance_row *
child_of(const wf_aggregate *g, const char *parent)
{
    for (size_t i = 0; i < g->n_instances; i++)
        if (g->instances[i].parent_id != NULL && strcmp(g->instances[i].parent_id, parent) == 0)
            return &g->instances[i];
    return NULL;
}

/* The value of key in a JSON object text, compact ("" when absent). */
static const char *
var_of(const char *json, const char *key)
{
    static char buf[256];
    json_t *o = json_loads(json, 0, NULL);
    ck_assert_ptr_nonnull(o);
    json_t *v = json_object_get(o, key);
    char *s = v != NULL ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    snprintf(buf, sizeof buf, "%s", s != NULL ? s : "");
    free(s);
    json_decref(o);
    return buf;
}

WF_TEST(test_child_that_ends_at_once_returns_in_the_same_unit)
{
    wf_runtime_ctx c = kit_ctx("boss");
    deploy_silent(c, "child");
    kit_deploy_line(c, "parent", call_t("child", "{n: (.n + 1)}", "{got: .n}"));
    wf_code rc;
    wf_error err = {0};
    wf_instance_row p = start(c, "parent", "{\"n\": 41}", &rc, &err);
    ck_assert_msg(rc == WF_OK, "%s", err.msg);
    /* The answer is the caller as the unit of work left it. */
    ck_assert_int_eq(p.status, WF_INSTANCE_COMPLETED);
    wf_instance_row now = kit_instance(p.id);
    ck_assert_int_eq(now.status, WF_INSTANCE_COMPLETED);
    ck_assert_str_eq(var_of(now.variables_json, "got"), "42");
    wf_aggregate g = kit_aggregate(p.id);
    const wf_instance_row *ch = child_of(&g, p.id);
    ck_assert_ptr_nonnull(ch);
    ck_assert_str_eq(ch->root_id, p.id);
    ck_assert_str_eq(ch->definition_key, "child");
    ck_assert_int_eq(ch->status, WF_INSTANCE_COMPLETED);
    ck_assert_str_eq(var_of(ch->variables_json, "n"), "42");
}
END_TEST

WF_TEST(test_mapping_that_is_no_object_refuses_the_step)
{
    wf_runtime_ctx c = kit_ctx("boss");
    deploy_silent(c, "child2");
    kit_deploy_line(c, "parent2", call_t("child2", ".n", NULL));
    wf_code rc;
    wf_error err = {0};
    start(c, "parent2", "{\"n\": 1}", &rc, &err);
    ck_assert_int_eq(rc, WF_E_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err.msg, "call_input_expression") != NULL, "%s", err.msg);
}
END_TEST

WF_TEST(test_depth_bound_stops_recursion)
{
    wf_runtime_ctx c = kit_ctx("boss");
    kit_deploy_line(c, "rec", call_t("rec", ".", NULL));
    wf_runtime_set_call_max_depth(2);
    wf_code rc;
    wf_error err = {0};
    wf_instance_row p = start(c, "rec", "{}", &rc, &err);
    wf_runtime_set_call_max_depth(WF_RUNTIME_CALL_MAX_DEPTH_DEFAULT);
    ck_assert_msg(rc == WF_OK, "%s", err.msg);
    ck_assert_int_eq(p.status, WF_INSTANCE_FAILED);
    wf_aggregate g = kit_aggregate(p.id);
    ck_assert_uint_eq(g.n_instances, 3);
    const wf_instance_row *l1 = child_of(&g, p.id);
    ck_assert_ptr_nonnull(l1);
    const wf_instance_row *l2 = child_of(&g, l1->id);
    ck_assert_ptr_nonnull(l2);
    ck_assert_ptr_null(child_of(&g, l2->id));
    ck_assert_str_eq(l2->incident_code, "CALL_DEPTH_EXCEEDED");
    ck_assert_str_eq(l1->incident_code, "CALL_CHILD_FAILED");
    ck_assert_str_eq(p.incident_code, "CALL_CHILD_FAILED");
}
END_TEST

WF_TEST(test_unknown_key_is_an_incident)
{
    wf_runtime_ctx c = kit_ctx("boss");
    kit_deploy_line(c, "parent3", call_t("nowhere", NULL, NULL));
    wf_code rc;
    wf_error err = {0};
    wf_instance_row p = start(c, "parent3", NULL, &rc, &err);
    ck_assert_msg(rc == WF_OK, "%s", err.msg);
    ck_assert_int_eq(p.status, WF_INSTANCE_FAILED);
    ck_assert_str_eq(p.incident_code, "CALL_DEFINITION_NOT_FOUND");
    ck_assert_str_eq(p.incident_transition_id, "pay");
}
END_TEST

/* The codes of validating a one-transition net of t. */
static const char *
codes_of(const wf_transition *t)
{
    static char buf[512];
    static const wf_place p[] = {{.id = "s", .kind = WF_PLACE_START},
                                 {.id = "e", .kind = WF_PLACE_END}};
    const wf_arc a[] = {{.source = "s", .target = t->id}, {.source = t->id, .target = "e"}};
    wf_net net = {.key = "v",
                  .places = (wf_place *)p,
                  .n_places = 2,
                  .transitions = (wf_transition *)t,
                  .n_transitions = 1,
                  .arcs = (wf_arc *)a,
                  .n_arcs = 2};
    wf_validation_error *errs;
    size_t n = 0;
    wf_error err = {0};
    ck_assert_int_eq(wf_net_validate(&net, arena, &errs, &n, &err), WF_OK);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(buf, errs[i].code, sizeof buf - strlen(buf) - 2);
        strncat(buf, " ", sizeof buf - strlen(buf) - 1);
    }
    return buf;
}

WF_TEST(test_validation_of_call_fields)
{
    ck_assert_str_eq(codes_of(call_t("", NULL, NULL)), "CALL_KEY_MISSING ");
    wf_transition *t = call_t("k", NULL, NULL);
    t->call_version = -2;
    ck_assert_str_eq(codes_of(t), "CALL_VERSION_INVALID ");
    ck_assert_str_eq(codes_of(call_t("k", "{", NULL)), "EXPRESSION_INVALID ");
    ck_assert_str_eq(codes_of(call_t("k", "{a: .a}", "{b: .b}")), "");
    wf_transition u = {.id = "work", .trigger = WF_TRIGGER_AUTO, .job_type = "j", .call_key = "k"};
    ck_assert_str_eq(codes_of(&u), "TRIGGER_FIELD_CONFLICT ");
}
END_TEST

int
main(void)
{
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("calls", "calls", kit_setup, kit_teardown, 0));
}
