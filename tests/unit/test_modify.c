/*
 * Unit tests of ModifyInstance without a server: the pure rule
 * (wf_net_modify over an in-memory case state: the tokens taken and made,
 * withdrawals, enablings, silent firings, termination, UNKNOWN_PLACE and
 * TOKENS_NOT_HELD with the failing operation) and the runtime over the
 * memory store (wf_runtime_modify_instance: tasks cancelled and created, a
 * job created, an instance completed by a silent transition, emptied and
 * cancelled with allow_empty, a FAILED instance taken past its incident,
 * the events and their data, the bound on variables, and every refusal
 * with its reason).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "defcache.h"
#include "engine_kit.h"
#include "expr.h"
#include "instances.h"
#include "net.h"
#include "net_runtime.h"
#include "store.h"
#include "wf_time.h"
#include "test_support.h"

static wf_store *st;
static wf_arena *arena;

static const char *last_field;

static void
record_violation(void *arg, const char *field, const char *reason, const char *msg)
{
    (void)arg;
    (void)reason;
    (void)msg;
    last_field = wf_arena_strdup(arena, field);
}

static wf_runtime_ctx
as(const char *actor)
{
    last_field = NULL;
    wf_runtime_ctx c = kit_ctx(actor);
    c.ref.violation = record_violation;
    return c;
}

static const char *alice[] = {"alice"};

/*
 *   s -review(USER)-> a -approve(USER)-> b -ship(AUTO "ship")-> e
 *                     a -detour(USER)-> c -skip(silent)-> e
 *                     b -split(USER)-> d (2 tokens) -pair(USER, needs 2)-> e
 */
static wf_net *
shop_net(const char *key)
{
    wf_net *n = wf_arena_calloc(arena, 1, sizeof *n);
    wf_place *p = wf_arena_calloc(arena, 6, sizeof *p);
    wf_transition *t = wf_arena_calloc(arena, 7, sizeof *t);
    wf_arc *a = wf_arena_calloc(arena, 14, sizeof *a);
    const char *places[] = {"s", "a", "b", "c", "d", "e"};
    for (int i = 0; i < 6; i++)
        p[i] = (wf_place){.id = places[i],
                          .kind = i == 0   ? WF_PLACE_START
                                  : i == 5 ? WF_PLACE_END
                                           : WF_PLACE_NORMAL};
    const char *users[] = {"review", "approve", "detour", "split", "pair"};
    for (int i = 0; i < 5; i++) {
        t[i] = (wf_transition){.id = users[i], .trigger = WF_TRIGGER_USER};
        t[i].assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = alice, .n_ids = 1};
    }
    t[5] = (wf_transition){.id = "skip", .trigger = WF_TRIGGER_AUTO};
    t[6] = (wf_transition){.id = "ship", .trigger = WF_TRIGGER_AUTO, .job_type = "ship"};
    const char *arcs[][2] = {{"s", "review"}, {"review", "a"}, {"a", "approve"}, {"approve", "b"},
                             {"b", "ship"},   {"ship", "e"},   {"a", "detour"},  {"detour", "c"},
                             {"c", "skip"},   {"skip", "e"},   {"b", "split"},   {"split", "d"},
                             {"d", "pair"},   {"pair", "e"}};
    for (int i = 0; i < 14; i++)
        a[i] = (wf_arc){.source = arcs[i][0], .target = arcs[i][1]};
    a[11].weight = 2; /* split -> d */
    a[12].weight = 2; /* d -> pair */
    *n = (wf_net){.key = key,
                  .places = p,
                  .n_places = 6,
                  .transitions = t,
                  .n_transitions = 7,
                  .arcs = a,
                  .n_arcs = 14};
    return n;
}

static wf_instance_row
start_shop(const char *key)
{
    wf_runtime_ctx c = as("dev");
    kit_deploy(&c, shop_net(key));
    wf_start_spec spec = {.definition_key = key, .variables_json = "{\"n\":1}"};
    return kit_start(&c.ref, &spec, NULL);
}

/* The data of the last event of type in root's events (parsed). */
static json_t *
event_data(const char *root, const char *type)
{
    json_t *v = json_loads(kit_event_data(root, type), 0, NULL);
    ck_assert_ptr_nonnull(v);
    return v;
}

static size_t
tasks_with(const wf_aggregate *agg, const char *transition, wf_task_status status)
{
    size_t n = 0;
    for (size_t i = 0; i < agg->n_tasks; i++)
        n += strcmp(agg->tasks[i].transition_id, transition) == 0 && agg->tasks[i].status == status;
    return n;
}

static wf_code
modify(const char *id, const wf_net_mod *ops, size_t n, const char *vars, bool allow_empty,
       wf_runtime_modified *out, wf_error *err)
{
    wf_runtime_ctx c = as("ops");
    wf_runtime_modify_in in = {.instance_id = id,
                               .ops = ops,
                               .n_ops = n,
                               .variables_json = vars,
                               .allow_empty = allow_empty,
                               .reason = "fix"};
    return wf_runtime_modify_instance(&c, &in, NULL, out, err);
}

static void
modify_ok(const char *id, const wf_net_mod *ops, size_t n, const char *vars, bool allow_empty,
          wf_runtime_modified *out)
{
    wf_error err;
    wf_code rc = modify(id, ops, n, vars, allow_empty, out, &err);
    ck_assert_msg(rc == WF_OK, "modify: %s %s", wf_code_reason(rc), err.msg);
}

/* ---- the pure rule --------------------------------------------------------------------- */

WF_TEST(test_pure_move_withdraws_and_enables)
{
    const wf_net *net = shop_net("pure");
    wf_token toks[] = {{"t1", "s", 1}};
    const char *bound[] = {"t1"};
    wf_work_item items[] = {
        {.id = "w1", .transition_id = "review", .token_ids = bound, .n_token_ids = 1}};
    wf_net_state s = {toks, 1, items, 1, 2};
    wf_net_mod ops[] = {{.kind = WF_NET_MOD_MOVE, .place_id = "s", .to_place_id = "a"}};
    wf_net_state out;
    wf_net_diff d;
    wf_net_mod_done done[1];
    size_t bad;
    wf_error err;
    ck_assert_int_eq(wf_net_modify(net, &s, ops, 1, "{}", arena, &out, &d, done, &bad, &err),
                     WF_OK);
    ck_assert_uint_eq(done[0].n_taken, 1);
    ck_assert_str_eq(done[0].taken[0], "t1");
    ck_assert_uint_eq(done[0].n_made, 1);
    ck_assert_uint_eq(d.n_withdrawn, 1);
    ck_assert_str_eq(d.withdrawn[0], "w1");
    ck_assert_uint_eq(d.n_removed_tokens, 1);
    ck_assert_uint_eq(d.n_added_tokens, 1);
    ck_assert_str_eq(d.added_tokens[0].place_id, "a");
    ck_assert_str_eq(d.added_tokens[0].id, done[0].made[0]);
    ck_assert(d.added_tokens[0].seq >= 2);
    /* approve and detour compete for the new token. */
    ck_assert_uint_eq(d.n_created, 2);
    ck_assert_uint_eq(d.n_fired, 0);
    ck_assert(!d.ended && !d.deadlocked);
    ck_assert_uint_eq(out.n_tokens, 1);

    /* A move onto the same place restarts the work of its token. */
    wf_net_mod same[] = {{.kind = WF_NET_MOD_MOVE, .place_id = "s", .to_place_id = "s"}};
    ck_assert_int_eq(wf_net_modify(net, &s, same, 1, "{}", arena, &out, &d, done, &bad, &err),
                     WF_OK);
    ck_assert_uint_eq(d.n_withdrawn, 1);
    ck_assert_uint_eq(d.n_created, 1);
    ck_assert_str_eq(d.created[0].transition_id, "review");
    ck_assert_str_ne(d.created[0].id, "w1");
    ck_assert_str_eq(d.created[0].token_ids[0], done[0].made[0]);
}
END_TEST

WF_TEST(test_pure_add_fires_a_silent_transition_to_the_end)
{
    const wf_net *net = shop_net("pure");
    wf_token toks[] = {{"t1", "s", 1}};
    const char *bound[] = {"t1"};
    wf_work_item items[] = {
        {.id = "w1", .transition_id = "review", .token_ids = bound, .n_token_ids = 1}};
    wf_net_state s = {toks, 1, items, 1, 2};
    wf_net_mod ops[] = {{.kind = WF_NET_MOD_ADD, .place_id = "c"}};
    wf_net_state out;
    wf_net_diff d;
    size_t bad;
    wf_error err;
    ck_assert_int_eq(wf_net_modify(net, &s, ops, 1, "{}", arena, &out, &d, NULL, &bad, &err),
                     WF_OK);
    ck_assert_uint_eq(d.n_fired, 1);
    ck_assert_str_eq(d.fired[0].transition_id, "skip");
    ck_assert(d.ended);
    /* The review lost nothing but is withdrawn by the end. */
    ck_assert_uint_eq(d.n_withdrawn, 1);
}
END_TEST

WF_TEST(test_pure_refusals_name_the_operation)
{
    const wf_net *net = shop_net("pure");
    wf_token toks[] = {{"t1", "s", 1}, {"t2", "a", 2}};
    wf_net_state s = {toks, 2, NULL, 0, 3};
    wf_net_state out;
    wf_net_diff d;
    size_t bad;
    wf_error err;
    wf_net_mod unknown[] = {{.kind = WF_NET_MOD_ADD, .place_id = "a"},
                            {.kind = WF_NET_MOD_MOVE, .place_id = "a", .to_place_id = "nowhere"}};
    ck_assert_int_eq(wf_net_modify(net, &s, unknown, 2, "{}", arena, &out, &d, NULL, &bad, &err),
                     WF_E_UNKNOWN_PLACE);
    ck_assert_uint_eq(bad, 1);
    ck_assert_ptr_nonnull(strstr(err.msg, "place \"nowhere\""));
    wf_net_mod many[] = {{.kind = WF_NET_MOD_REMOVE, .place_id = "s", .count = 2}};
    ck_assert_int_eq(wf_net_modify(net, &s, many, 1, "{}", arena, &out, &d, NULL, &bad, &err),
                     WF_E_TOKENS_NOT_HELD);
    ck_assert_uint_eq(bad, 0);
    ck_assert_str_eq(err.msg, "place \"s\" holds 1 token(s), fewer than the 2 to take");
    wf_net_mod wrong[] = {{.kind = WF_NET_MOD_REMOVE, .place_id = "s", .token_id = "t2"}};
    ck_assert_int_eq(wf_net_modify(net, &s, wrong, 1, "{}", arena, &out, &d, NULL, &bad, &err),
                     WF_E_TOKENS_NOT_HELD);
    ck_assert_str_eq(err.msg, "place \"s\" holds no token with id \"t2\"");
    /* By id, and a token made by an earlier operation taken by a later
     * one: the diff shows neither. */
    wf_net_mod chain[] = {{.kind = WF_NET_MOD_REMOVE, .place_id = "a", .token_id = "t2"},
                          {.kind = WF_NET_MOD_ADD, .place_id = "b"},
                          {.kind = WF_NET_MOD_REMOVE, .place_id = "b"}};
    wf_net_mod_done done[3];
    ck_assert_int_eq(wf_net_modify(net, &s, chain, 3, "{}", arena, &out, &d, done, &bad, &err),
                     WF_OK);
    ck_assert_str_eq(done[0].taken[0], "t2");
    ck_assert_str_eq(done[2].taken[0], done[1].made[0]);
    ck_assert_uint_eq(d.n_added_tokens, 0);
    ck_assert_uint_eq(d.n_removed_tokens, 1);
    ck_assert_uint_eq(out.n_tokens, 1);
    ck_assert_str_eq(out.tokens[0].id, "t1");
}
END_TEST

/* ---- the runtime ------------------------------------------------------------------------ */

WF_TEST(test_move_withdraws_the_task_and_creates_others)
{
    wf_instance_row in = start_shop("move");
    size_t before = kit_n_events(in.id);
    wf_net_mod ops[] = {{.kind = WF_NET_MOD_MOVE, .place_id = "s", .to_place_id = "a"}};
    wf_runtime_modified out;
    modify_ok(in.id, ops, 1, "{\"fixed\":true}", false, &out);
    ck_assert_int_eq(out.instance.status, WF_INSTANCE_RUNNING);
    ck_assert_str_eq(out.instance.variables_json, "{\"n\":1,\"fixed\":true}");
    ck_assert_uint_eq(out.n_marking, 1);
    ck_assert_str_eq(out.marking[0].place_id, "a");
    ck_assert_int_eq(out.marking[0].count, 1);
    ck_assert_uint_eq(out.n_tokens, 1);
    ck_assert_str_eq(out.tokens[0].place_id, "a");

    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(tasks_with(&agg, "review", WF_TASK_CANCELLED), 1);
    ck_assert_uint_eq(tasks_with(&agg, "approve", WF_TASK_OPEN), 1);
    ck_assert_uint_eq(tasks_with(&agg, "detour", WF_TASK_OPEN), 1);
    ck_assert_uint_eq(agg.n_tokens, 1);
    ck_assert_str_eq(agg.tokens[0].id, out.tokens[0].id);
    ck_assert_uint_eq(agg.n_work_items, 2);
    ck_assert_str_eq(kit_event_types(in.id, before),
                     "INSTANCE_MODIFIED VARIABLES_SET WORKITEM_WITHDRAWN TASK_CANCELLED "
                     "TRANSITION_ENABLED TASK_CREATED TRANSITION_ENABLED TASK_CREATED");

    /* The payload: the operation with the tokens taken and made, the
     * reason, the actor. */
    json_t *d = event_data(in.id, "INSTANCE_MODIFIED");
    json_t *op = json_array_get(json_object_get(d, "operations"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(op, "kind")), "MOVE");
    ck_assert_str_eq(json_string_value(json_object_get(op, "placeId")), "s");
    ck_assert_str_eq(json_string_value(json_object_get(op, "toPlaceId")), "a");
    ck_assert_int_eq(json_integer_value(json_object_get(op, "count")), 1);
    ck_assert_uint_eq(json_array_size(json_object_get(op, "takenTokenIds")), 1);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(op, "madeTokenIds"), 0)),
                     out.tokens[0].id);
    ck_assert_str_eq(json_string_value(json_object_get(d, "reason")), "fix");
    ck_assert_str_eq(json_string_value(json_object_get(d, "actor")), "ops");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(d, "variableKeys"), 0)),
                     "fixed");
    json_decref(d);

    /* The withdrawn task cannot be completed any more. */
    wf_ref_ctx a = as("alice").ref;
    wf_ref_completion done;
    wf_error err;
    const char *review = NULL;
    for (size_t i = 0; i < agg.n_tasks; i++)
        if (strcmp(agg.tasks[i].transition_id, "review") == 0)
            review = agg.tasks[i].id;
    ck_assert_int_eq(wf_instances_complete_task(&a, review, "{}", NULL, &done, &err),
                     WF_E_TASK_NOT_OPEN);
}
END_TEST

WF_TEST(test_add_creates_a_job_and_a_silent_transition_completes)
{
    wf_instance_row in = start_shop("addjob");
    wf_net_mod ops[] = {{.kind = WF_NET_MOD_ADD, .place_id = "b"}};
    wf_runtime_modified out;
    size_t before = kit_n_events(in.id);
    modify_ok(in.id, ops, 1, NULL, false, &out);
    ck_assert_uint_eq(out.n_marking, 2);
    ck_assert_str_eq(out.marking[0].place_id, "s");
    ck_assert_str_eq(out.marking[1].place_id, "b");
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_jobs, 1);
    ck_assert_str_eq(agg.jobs[0].job_type, "ship");
    ck_assert_uint_eq(tasks_with(&agg, "review", WF_TASK_OPEN), 1);
    ck_assert_uint_eq(tasks_with(&agg, "split", WF_TASK_OPEN), 1);
    ck_assert_str_eq(kit_event_types(in.id, before),
                     "INSTANCE_MODIFIED TRANSITION_ENABLED TASK_CREATED TRANSITION_ENABLED "
                     "JOB_CREATED");

    /* A token in c: the silent skip fires to END and the instance
     * completes, withdrawing everything else. */
    wf_net_mod to_c[] = {{.kind = WF_NET_MOD_ADD, .place_id = "c"}};
    modify_ok(in.id, to_c, 1, NULL, false, &out);
    ck_assert_int_eq(out.instance.status, WF_INSTANCE_COMPLETED);
    agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_jobs, 0);
    ck_assert_uint_eq(agg.n_work_items, 0);
    ck_assert_uint_eq(tasks_with(&agg, "review", WF_TASK_CANCELLED), 1);
    const char *ev = kit_event_types(in.id, before);
    ck_assert_ptr_nonnull(strstr(ev, "TRANSITION_FIRED"));
    ck_assert_ptr_nonnull(strstr(ev, "INSTANCE_COMPLETED"));

    /* Ended: no more changes. */
    wf_error err;
    ck_assert_int_eq(modify(in.id, to_c, 1, NULL, false, &out, &err), WF_E_INSTANCE_NOT_RUNNING);
    ck_assert_str_eq(err.msg, wf_arena_printf(arena, "instance \"%s\" is completed", in.id));
}
END_TEST

WF_TEST(test_remove_all_needs_allow_empty_and_then_cancels)
{
    wf_instance_row in = start_shop("empty");
    wf_net_mod ops[] = {{.kind = WF_NET_MOD_REMOVE, .place_id = "s"}};
    wf_runtime_modified out;
    wf_error err;
    size_t before = kit_n_events(in.id);
    ck_assert_int_eq(modify(in.id, ops, 1, NULL, false, &out, &err), WF_E_INSTANCE_WOULD_BE_EMPTY);
    ck_assert_uint_eq(kit_n_events(in.id), before);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_tokens, 1);
    ck_assert_uint_eq(tasks_with(&agg, "review", WF_TASK_OPEN), 1);

    modify_ok(in.id, ops, 1, NULL, true, &out);
    ck_assert_int_eq(out.instance.status, WF_INSTANCE_CANCELLED);
    ck_assert_uint_eq(out.n_tokens, 0);
    agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_tokens, 0);
    ck_assert_uint_eq(agg.n_work_items, 0);
    ck_assert_uint_eq(tasks_with(&agg, "review", WF_TASK_CANCELLED), 1);
    ck_assert_str_eq(kit_event_types(in.id, before),
                     "INSTANCE_MODIFIED WORKITEM_WITHDRAWN TASK_CANCELLED INSTANCE_CANCELLED");
    json_t *d = event_data(in.id, "INSTANCE_CANCELLED");
    ck_assert_str_eq(json_string_value(json_object_get(d, "reason")), "fix");
    json_decref(d);
}
END_TEST

WF_TEST(test_refusals_change_nothing)
{
    wf_instance_row in = start_shop("refuse");
    size_t before = kit_n_events(in.id);
    wf_runtime_modified out;
    wf_error err;
    /* A deadlock: one token in d, which pair needs two of. */
    wf_net_mod dead[] = {{.kind = WF_NET_MOD_MOVE, .place_id = "s", .to_place_id = "d"}};
    ck_assert_int_eq(modify(in.id, dead, 1, NULL, true, &out, &err), WF_E_MODIFICATION_DEADLOCKS);
    /* Two tokens are fine. */
    wf_net_mod ok2[] = {{.kind = WF_NET_MOD_ADD, .place_id = "d", .count = 2}};
    wf_net_mod unknown[] = {{.kind = WF_NET_MOD_MOVE, .place_id = "s", .to_place_id = "zz"}};
    ck_assert_int_eq(modify(in.id, unknown, 1, NULL, false, &out, &err), WF_E_UNKNOWN_PLACE);
    ck_assert_str_eq(last_field, "operations[0].to_place_id");
    wf_net_mod unknown_from[] = {{.kind = WF_NET_MOD_REMOVE, .place_id = "zz"}};
    ck_assert_int_eq(modify(in.id, unknown_from, 1, NULL, false, &out, &err), WF_E_UNKNOWN_PLACE);
    ck_assert_str_eq(last_field, "operations[0].place_id");
    wf_net_mod missing[] = {{.kind = WF_NET_MOD_REMOVE, .place_id = "a"}};
    ck_assert_int_eq(modify(in.id, missing, 1, NULL, false, &out, &err), WF_E_TOKENS_NOT_HELD);
    ck_assert_str_eq(err.msg, "place \"a\" holds 0 token(s), fewer than the 1 to take");
    ck_assert_int_eq(modify(in.id, ok2, 1, "[1]", false, &out, &err), WF_E_INVALID_JSON);
    ck_assert_int_eq(modify(in.id, ok2, 0, NULL, false, &out, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(last_field, "operations");
    ck_assert_uint_eq(kit_n_events(in.id), before);

    struct {
        wf_net_mod op;
        const char *field;
    } bad[] = {
        {{.place_id = "s"}, "operations[0].kind"},
        {{.kind = WF_NET_MOD_ADD}, "operations[0].place_id"},
        {{.kind = WF_NET_MOD_MOVE, .place_id = "s"}, "operations[0].to_place_id"},
        {{.kind = WF_NET_MOD_ADD, .place_id = "s", .to_place_id = "a"},
         "operations[0].to_place_id"},
        {{.kind = WF_NET_MOD_ADD, .place_id = "s", .count = -1}, "operations[0].count"},
        {{.kind = WF_NET_MOD_ADD, .place_id = "s", .count = 101}, "operations[0].count"},
        {{.kind = WF_NET_MOD_ADD, .place_id = "s", .token_id = "x"}, "operations[0].token_id"},
        {{.kind = WF_NET_MOD_REMOVE, .place_id = "s", .token_id = "x", .count = 2},
         "operations[0].count"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(modify(in.id, &bad[i].op, 1, NULL, false, &out, &err),
                         WF_E_INVALID_ARGUMENT);
        ck_assert_str_eq(last_field, bad[i].field);
    }
    wf_net_mod *lots = wf_arena_calloc(arena, WF_NET_MAX_MODIFY_OPS + 1, sizeof *lots);
    for (size_t i = 0; i <= WF_NET_MAX_MODIFY_OPS; i++)
        lots[i] = ok2[0];
    ck_assert_int_eq(modify(in.id, lots, WF_NET_MAX_MODIFY_OPS + 1, NULL, false, &out, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(err.msg, "operations must hold at most 100 operations");

    ck_assert_int_eq(modify("no-such-instance", ok2, 1, NULL, false, &out, &err),
                     WF_E_INSTANCE_NOT_FOUND);

    /* An AD_HOC instance has no net. */
    wf_runtime_ctx c = as("boss");
    wf_start_spec spec = {.definition_key = "adhoc-modify"};
    wf_instance_row adhoc = kit_start(&c.ref, &spec, NULL);
    ck_assert_int_eq(modify(adhoc.id, ok2, 1, NULL, false, &out, &err), WF_E_NOT_A_NET_INSTANCE);

    modify_ok(in.id, ok2, 1, NULL, false, &out);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(tasks_with(&agg, "pair", WF_TASK_OPEN), 1);
}
END_TEST

WF_TEST(test_variables_are_bounded)
{
    wf_instance_row in = start_shop("bounded");
    wf_runtime_ctx c = as("ops");
    c.ref.max_variables_bytes = 64;
    wf_net_mod ops[] = {{.kind = WF_NET_MOD_MOVE, .place_id = "s", .to_place_id = "a"}};
    char big[128];
    snprintf(big, sizeof big, "{\"blob\":\"%080d\"}", 0);
    wf_runtime_modify_in m = {.instance_id = in.id, .ops = ops, .n_ops = 1, .variables_json = big};
    wf_runtime_modified out;
    wf_error err;
    size_t before = kit_n_events(in.id);
    ck_assert_int_eq(wf_runtime_modify_instance(&c, &m, NULL, &out, &err),
                     WF_E_VARIABLES_TOO_LARGE);
    ck_assert_uint_eq(kit_n_events(in.id), before);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_str_eq(agg.tokens[0].place_id, "s");
    ck_assert_str_eq(agg.instances[0].variables_json, "{\"n\":1}");
}
END_TEST

/* start -> wait (TIME, due in 1 ms) -> e, guard .go: a refused firing is
 * an incident; a move past it runs the instance again. */
WF_TEST(test_failed_instance_modified_past_its_incident)
{
    wf_net *n = wf_arena_calloc(arena, 1, sizeof *n);
    wf_place *p = wf_arena_calloc(arena, 3, sizeof *p);
    wf_transition *t = wf_arena_calloc(arena, 2, sizeof *t);
    wf_arc *a = wf_arena_calloc(arena, 4, sizeof *a);
    p[0] = (wf_place){.id = "s", .kind = WF_PLACE_START};
    p[1] = (wf_place){.id = "m", .kind = WF_PLACE_NORMAL};
    p[2] = (wf_place){.id = "e", .kind = WF_PLACE_END};
    t[0] = (wf_transition){.id = "wait", .trigger = WF_TRIGGER_TIME, .delay_ms = 1};
    t[1] = (wf_transition){.id = "check", .trigger = WF_TRIGGER_USER};
    t[1].assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = alice, .n_ids = 1};
    a[0] = (wf_arc){.source = "s", .target = "wait"};
    a[1] = (wf_arc){.source = "wait", .target = "m", .guard = ".go == true"};
    a[2] = (wf_arc){.source = "m", .target = "check"};
    a[3] = (wf_arc){.source = "check", .target = "e"};
    *n = (wf_net){.key = "incident",
                  .places = p,
                  .n_places = 3,
                  .transitions = t,
                  .n_transitions = 2,
                  .arcs = a,
                  .n_arcs = 4};
    wf_runtime_ctx c = as("dev");
    kit_deploy(&c, n);
    wf_start_spec spec = {.definition_key = "incident", .variables_json = "{\"go\":false}"};
    wf_instance_row in = kit_start(&c.ref, &spec, NULL);

    wf_store_ctx sc = {"default", 0, arena};
    wf_timer_row *rows;
    size_t nt;
    wf_error err;
    ck_assert_int_eq(
        wf_store_claim_due_timers(st, &sc, wf_now_us() + 1000000, 10, 30000, &rows, &nt, &err),
        WF_OK);
    ck_assert_uint_eq(nt, 1);
    wf_runtime_host rt = {.store = st};
    bool fired = false;
    ck_assert_int_eq(wf_runtime_fire_timer(&rt, &rows[0], wf_mono_ms() + 5000, &fired, &err),
                     WF_OK);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_FAILED);

    /* Adding a token elsewhere leaves the refused item: still FAILED. */
    wf_net_mod add_m[] = {{.kind = WF_NET_MOD_ADD, .place_id = "m"}};
    wf_runtime_modified out;
    modify_ok(in.id, add_m, 1, NULL, false, &out);
    ck_assert_int_eq(out.instance.status, WF_INSTANCE_FAILED);
    ck_assert_ptr_nonnull(out.instance.last_error);

    /* Taking the token of the refused wait: RUNNING, INCIDENT_RESOLVED. */
    wf_net_mod take_s[] = {{.kind = WF_NET_MOD_REMOVE, .place_id = "s"}};
    size_t before = kit_n_events(in.id);
    modify_ok(in.id, take_s, 1, NULL, false, &out);
    ck_assert_int_eq(out.instance.status, WF_INSTANCE_RUNNING);
    ck_assert_ptr_null(out.instance.last_error);
    ck_assert_str_eq(kit_event_types(in.id, before),
                     "INSTANCE_MODIFIED WORKITEM_WITHDRAWN INCIDENT_RESOLVED");
    agg = kit_aggregate(in.id);
    ck_assert_uint_eq(tasks_with(&agg, "check", WF_TASK_OPEN), 1);
    ck_assert_uint_eq(agg.n_work_items, 1);
}
END_TEST

/* A suspended instance is refused with INSTANCE_SUSPENDED, as its task
 * operations are, and nothing changes; resumed, the same change applies. */
WF_TEST(test_suspended_instance_is_refused_as_suspended)
{
    wf_net *n = wf_arena_calloc(arena, 1, sizeof *n);
    wf_place *p = wf_arena_calloc(arena, 2, sizeof *p);
    wf_transition *t = wf_arena_calloc(arena, 1, sizeof *t);
    wf_arc *a = wf_arena_calloc(arena, 2, sizeof *a);
    p[0] = (wf_place){.id = "s", .kind = WF_PLACE_START};
    p[1] = (wf_place){.id = "e", .kind = WF_PLACE_END};
    t[0] = (wf_transition){.id = "check", .trigger = WF_TRIGGER_USER};
    t[0].assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = alice, .n_ids = 1};
    a[0] = (wf_arc){.source = "s", .target = "check"};
    a[1] = (wf_arc){.source = "check", .target = "e"};
    *n = (wf_net){.key = "susp",
                  .places = p,
                  .n_places = 2,
                  .transitions = t,
                  .n_transitions = 1,
                  .arcs = a,
                  .n_arcs = 2};
    wf_runtime_ctx c = as("dev");
    kit_deploy(&c, n);
    wf_start_spec spec = {.definition_key = "susp"};
    wf_instance_row in = kit_start(&c.ref, &spec, NULL);
    wf_instance_row root;
    wf_error err;
    ck_assert_int_eq(wf_runtime_suspend_instance(&c, in.id, "audit", NULL, &root, &err), WF_OK);
    size_t before = kit_n_events(in.id);
    wf_net_mod add_m[] = {{.kind = WF_NET_MOD_ADD, .place_id = "s"}};
    wf_runtime_modified out;
    ck_assert_int_eq(modify(in.id, add_m, 1, "{\"x\":1}", false, &out, &err),
                     WF_E_INSTANCE_SUSPENDED);
    ck_assert_ptr_nonnull(strstr(err.msg, "is suspended"));
    ck_assert_uint_eq(kit_n_events(in.id), before);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_int_eq(agg.instances[0].status, WF_INSTANCE_SUSPENDED);
    ck_assert_uint_eq(agg.n_tokens, 1);
    ck_assert_str_eq(agg.instances[0].variables_json, "{}");
    ck_assert_int_eq(wf_runtime_resume_instance(&c, in.id, "done", NULL, &root, &err), WF_OK);
    modify_ok(in.id, add_m, 1, NULL, false, &out);
    ck_assert_int_eq(out.instance.status, WF_INSTANCE_RUNNING);
    ck_assert_uint_eq(kit_aggregate(in.id).n_tokens, 2);
}
END_TEST

int
main(void)
{
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("modify", "memory", kit_setup, kit_teardown, 0));
}
