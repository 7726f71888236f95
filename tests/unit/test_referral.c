/*
 * Unit tests of the referral engine without a server: the pure rules
 * (task permissions, group membership, counts and joins, JSON variables,
 * the AssignTo spec's validation and encoding) and the mutations over the
 * memory store (joins fired once, ANY cancelling the rest, CompleteAndEnd,
 * cancel, idempotency), asserting codes, rows and events.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "directory.h"
#include "vars.h"
#include "engine_kit.h"
#include "expr.h"
#include "instances.h"
#include "referral.h"
#include "store.h"
#include "wf_config.h"
#include "test_support.h"

/* ---- pure rules ----------------------------------------------------------------------- */

static wf_task_row
task(wf_assignee_kind kind, const char *assignee, wf_task_status status, const char *claimed_by)
{
    return (wf_task_row){.id = "t-1",
                         .instance_id = "i-1",
                         .assignee_kind = kind,
                         .assignee_id = (char *)assignee,
                         .status = status,
                         .claimed_by = (char *)claimed_by};
}

static wf_code
op(wf_task_row t, wf_task_op o, const char *actor, bool member)
{
    wf_error err;
    return wf_referral_check_task_op(&t, o, actor, member, &err);
}

WF_CASE_TEST("rules", test_personal_task_only_assignee_completes)
{
    wf_task_row t = task(WF_ASSIGNEE_USER, "alice", WF_TASK_OPEN, NULL);
    ck_assert_int_eq(op(t, WF_TASK_OP_COMPLETE, "alice", false), WF_OK);
    ck_assert_int_eq(op(t, WF_TASK_OP_COMPLETE, "bob", true), WF_E_NOT_ASSIGNEE);
    /* The contract lets the assignee claim a personal task, nobody else. */
    ck_assert_int_eq(op(t, WF_TASK_OP_CLAIM, "alice", false), WF_OK);
    ck_assert_int_eq(op(t, WF_TASK_OP_CLAIM, "bob", false), WF_E_NOT_ASSIGNEE);
    ck_assert_int_eq(op(t, WF_TASK_OP_RELEASE, "alice", false), WF_E_TASK_NOT_CLAIMED);
}
END_TEST

WF_CASE_TEST("rules", test_inbox_rules_reassign_delegate_update)
{
    /* A personal task: its assignee and its assigner manage it. */
    wf_task_row t = task(WF_ASSIGNEE_USER, "alice", WF_TASK_OPEN, NULL);
    t.assigned_by = "boss";
    ck_assert_int_eq(op(t, WF_TASK_OP_REASSIGN, "alice", false), WF_OK);
    ck_assert_int_eq(op(t, WF_TASK_OP_UPDATE, "boss", false), WF_OK);
    ck_assert_int_eq(op(t, WF_TASK_OP_REASSIGN, "carol", true), WF_E_NOT_ASSIGNEE);
    ck_assert_int_eq(op(t, WF_TASK_OP_DELEGATE, "alice", false), WF_OK);
    ck_assert_int_eq(op(t, WF_TASK_OP_DELEGATE, "boss", false), WF_E_NOT_ASSIGNEE);
    /* An open group task: members manage it; it is delegated once claimed. */
    wf_task_row g = task(WF_ASSIGNEE_GROUP, "it", WF_TASK_OPEN, NULL);
    ck_assert_int_eq(op(g, WF_TASK_OP_REASSIGN, "bob", true), WF_OK);
    ck_assert_int_eq(op(g, WF_TASK_OP_UPDATE, "carol", false), WF_E_NOT_GROUP_MEMBER);
    ck_assert_int_eq(op(g, WF_TASK_OP_DELEGATE, "bob", true), WF_E_TASK_NOT_CLAIMED);
    g = task(WF_ASSIGNEE_GROUP, "it", WF_TASK_CLAIMED, "bob");
    ck_assert_int_eq(op(g, WF_TASK_OP_DELEGATE, "bob", true), WF_OK);
    ck_assert_int_eq(op(g, WF_TASK_OP_REASSIGN, "alice", true), WF_E_NOT_ASSIGNEE);
    /* Pending: only the delegate resolves; nobody completes or releases. */
    wf_task_row d = task(WF_ASSIGNEE_USER, "alice", WF_TASK_CLAIMED, "dave");
    d.owner = "alice";
    d.delegation = WF_DELEGATION_PENDING;
    ck_assert_int_eq(op(d, WF_TASK_OP_RESOLVE, "dave", false), WF_OK);
    ck_assert_int_eq(op(d, WF_TASK_OP_RESOLVE, "alice", false), WF_E_NOT_ASSIGNEE);
    ck_assert_int_eq(op(d, WF_TASK_OP_COMPLETE, "alice", false), WF_E_NOT_ASSIGNEE);
    ck_assert_int_eq(op(d, WF_TASK_OP_COMPLETE, "dave", false), WF_E_NOT_ASSIGNEE);
    ck_assert_int_eq(op(d, WF_TASK_OP_RELEASE, "dave", false), WF_E_NOT_ASSIGNEE);
    ck_assert_int_eq(op(d, WF_TASK_OP_REASSIGN, "alice", false), WF_OK);
    ck_assert_int_eq(op(d, WF_TASK_OP_DELEGATE, "dave", false), WF_OK);
    /* Resolved: back with the owner, who completes; the delegate may not. */
    d.claimed_by = "alice";
    d.delegation = WF_DELEGATION_RESOLVED;
    ck_assert_int_eq(op(d, WF_TASK_OP_COMPLETE, "alice", false), WF_OK);
    ck_assert_int_eq(op(d, WF_TASK_OP_COMPLETE, "dave", false), WF_E_NOT_ASSIGNEE);
    ck_assert_int_eq(op(d, WF_TASK_OP_RESOLVE, "dave", false), WF_E_CONFLICT);
    /* A finished task is not open, whoever asks. */
    wf_task_row done = task(WF_ASSIGNEE_USER, "alice", WF_TASK_DONE, NULL);
    ck_assert_int_eq(op(done, WF_TASK_OP_REASSIGN, "alice", false), WF_E_TASK_NOT_OPEN);
    ck_assert_int_eq(op(done, WF_TASK_OP_DELEGATE, "alice", false), WF_E_TASK_NOT_OPEN);
    ck_assert_int_eq(op(done, WF_TASK_OP_UPDATE, "alice", false), WF_E_TASK_NOT_OPEN);
}
END_TEST

WF_CASE_TEST("rules", test_task_sort_keys)
{
    wf_task_row t = {.created_at = 7, .priority = 80};
    ck_assert_int_eq(wf_task_sort_key(&t, WF_TASK_SORT_CREATED), 7);
    ck_assert_int_eq(wf_task_sort_key(&t, WF_TASK_SORT_PRIORITY), 80);
    /* Without a due time a task sorts after every dated one. */
    ck_assert(wf_task_sort_key(&t, WF_TASK_SORT_DUE) == INT64_MAX);
    t.due_at = 5;
    ck_assert_int_eq(wf_task_sort_key(&t, WF_TASK_SORT_DUE), 5);
}
END_TEST

WF_CASE_TEST("rules", test_group_task_claim_rules)
{
    wf_task_row open = task(WF_ASSIGNEE_GROUP, "it", WF_TASK_OPEN, NULL);
    ck_assert_int_eq(op(open, WF_TASK_OP_CLAIM, "alice", true), WF_OK);
    ck_assert_int_eq(op(open, WF_TASK_OP_CLAIM, "mallory", false), WF_E_NOT_GROUP_MEMBER);
    ck_assert_int_eq(op(open, WF_TASK_OP_COMPLETE, "alice", true), WF_E_TASK_NOT_CLAIMED);
    ck_assert_int_eq(op(open, WF_TASK_OP_RELEASE, "alice", true), WF_E_TASK_NOT_CLAIMED);

    wf_task_row held = task(WF_ASSIGNEE_GROUP, "it", WF_TASK_CLAIMED, "alice");
    ck_assert_int_eq(op(held, WF_TASK_OP_CLAIM, "alice", true), WF_OK); /* no change */
    ck_assert_int_eq(op(held, WF_TASK_OP_CLAIM, "bob", true), WF_E_TASK_ALREADY_CLAIMED);
    ck_assert_int_eq(op(held, WF_TASK_OP_COMPLETE, "alice", true), WF_OK);
    ck_assert_int_eq(op(held, WF_TASK_OP_COMPLETE, "bob", true), WF_E_NOT_ASSIGNEE);
    ck_assert_int_eq(op(held, WF_TASK_OP_RELEASE, "bob", true), WF_E_NOT_ASSIGNEE);
    ck_assert_int_eq(op(held, WF_TASK_OP_RELEASE, "alice", true), WF_OK);
}
END_TEST

WF_CASE_TEST("rules", test_finished_tasks_are_not_open_for_anyone)
{
    wf_task_status st[] = {WF_TASK_DONE, WF_TASK_CANCELLED};
    wf_task_op ops[] = {WF_TASK_OP_CLAIM, WF_TASK_OP_RELEASE, WF_TASK_OP_COMPLETE};
    for (size_t i = 0; i < 2; i++)
        for (size_t j = 0; j < 3; j++) {
            wf_task_row t = task(WF_ASSIGNEE_GROUP, "it", st[i], "alice");
            ck_assert_int_eq(op(t, ops[j], "alice", true), WF_E_TASK_NOT_OPEN);
            ck_assert_int_eq(op(t, ops[j], "zed", false), WF_E_TASK_NOT_OPEN);
        }
    wf_task_row t = task(WF_ASSIGNEE_USER, "alice", WF_TASK_OPEN, NULL);
    ck_assert_int_eq(op(t, WF_TASK_OP_COMPLETE, NULL, false), WF_E_ACTOR_MISSING);
}
END_TEST

static wf_config *
config(char **env)
{
    wf_error err;
    wf_config *cfg = wf_config_load(env, &err);
    ck_assert_msg(cfg != NULL, "%s", err.msg);
    return cfg;
}

WF_CASE_TEST("rules", test_static_directory_membership)
{
    char *env[] = {"WF_ENV=development", "WF_USERS=carol", "WF_GROUP_it=alice,bob",
                   "WF_GROUP_empty=", NULL};
    wf_config *cfg = config(env);
    wf_error err;
    wf_directory *d = wf_directory_new(cfg, &err);
    wf_config_free(cfg);
    ck_assert_ptr_nonnull(d);
    ck_assert(!wf_directory_is_open(d));
    ck_assert(wf_directory_has_user(d, "carol"));
    ck_assert(wf_directory_has_user(d, "alice")); /* a group member is a known user */
    ck_assert(!wf_directory_has_user(d, "zed"));
    ck_assert(wf_directory_has_group(d, "it"));
    ck_assert(!wf_directory_has_group(d, "empty"));
    ck_assert(!wf_directory_has_group(d, "nope"));
    ck_assert(wf_referral_actor_in_group(d, "bob", NULL, "it"));
    ck_assert(!wf_referral_actor_in_group(d, "carol", NULL, "it"));
    /* Trusted x-actor-groups adds to the directory. */
    ck_assert(wf_referral_actor_in_group(d, "carol", "ops, it", "it"));
    ck_assert(!wf_referral_actor_in_group(d, "carol", "ops,itx", "it"));
    wf_arena *a = wf_arena_new();
    const char **g;
    size_t n;
    ck_assert(wf_directory_user_groups(d, "alice", a, &g, &n));
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(g[0], "it");
    wf_arena_free(a);
    wf_directory_free(d);
}
END_TEST

WF_CASE_TEST("rules", test_open_directory_accepts_without_group_info)
{
    char *env[] = {"WF_ENV=development", NULL};
    wf_config *cfg = config(env);
    wf_error err;
    wf_directory *d = wf_directory_new(cfg, &err);
    wf_config_free(cfg);
    ck_assert(wf_directory_is_open(d));
    ck_assert(wf_directory_has_user(d, "anyone"));
    ck_assert(wf_directory_has_group(d, "any-group"));
    ck_assert(wf_referral_actor_in_group(d, "x", NULL, "g"));
    /* With trusted groups the header is the whole truth. */
    ck_assert(wf_referral_actor_in_group(d, "x", "g,h", "g"));
    ck_assert(!wf_referral_actor_in_group(d, "x", "h", "g"));
    wf_directory_free(d);
}
END_TEST

static wf_ref_counts
counts(const wf_task_status *st, size_t n)
{
    wf_task_row rows[8];
    for (size_t i = 0; i < n; i++)
        rows[i] = (wf_task_row){.instance_id = "c", .status = st[i]};
    rows[n] = (wf_task_row){.instance_id = "other", .status = WF_TASK_OPEN};
    wf_ref_counts c;
    wf_referral_count(rows, n + 1, "c", &c);
    return c;
}

WF_CASE_TEST("rules", test_join_conditions)
{
    wf_ref_counts none = counts(NULL, 0);
    ck_assert(!none.all_completed); /* no task: never completed */
    ck_assert(!wf_referral_join_met(WF_JOIN_ALL, 0, &none));

    wf_task_status half[] = {WF_TASK_DONE, WF_TASK_CLAIMED, WF_TASK_OPEN};
    wf_ref_counts c = counts(half, 3);
    ck_assert_int_eq(c.total, 3);
    ck_assert_int_eq(c.done, 1);
    ck_assert_int_eq(c.claimed, 1);
    ck_assert_int_eq(c.open, 1);
    ck_assert(!wf_referral_join_met(WF_JOIN_ALL, 0, &c));
    ck_assert(!wf_referral_join_met(WF_JOIN_NONE, 0, &c));
    ck_assert(wf_referral_join_met(WF_JOIN_ANY, 0, &c));
    ck_assert(wf_referral_join_met(WF_JOIN_QUORUM, 1, &c));
    ck_assert(!wf_referral_join_met(WF_JOIN_QUORUM, 2, &c));
    ck_assert_int_eq(wf_referral_join_required(WF_JOIN_ALL, 0, &c), 3);
    ck_assert_int_eq(wf_referral_join_required(WF_JOIN_ANY, 0, &c), 1);
    ck_assert_int_eq(wf_referral_join_required(WF_JOIN_QUORUM, 2, &c), 2);

    wf_task_status all[] = {WF_TASK_DONE, WF_TASK_DONE, WF_TASK_CANCELLED};
    c = counts(all, 3);
    ck_assert(c.all_completed);
    ck_assert(wf_referral_join_met(WF_JOIN_ALL, 0, &c));
    ck_assert(wf_referral_join_met(WF_JOIN_QUORUM, 2, &c));
}
END_TEST

WF_CASE_TEST("rules", test_json_variables_must_be_objects)
{
    wf_arena *a = wf_arena_new();
    wf_error err;
    const char *out;
    ck_assert_int_eq(wf_vars_object(a, "[1]", "variables_json", &out, &err), WF_E_INVALID_JSON);
    ck_assert_str_eq(err.msg, "variables_json must be a JSON object");
    ck_assert_int_eq(wf_vars_object(a, "not json", "variables_json", &out, &err),
                     WF_E_INVALID_JSON);
    ck_assert_ptr_nonnull(strstr(err.msg, "variables_json is not valid JSON"));
    ck_assert_int_eq(wf_vars_object(a, "\"s\"", "variables_json", &out, &err), WF_E_INVALID_JSON);
    ck_assert_int_eq(wf_vars_object(a, "", "variables_json", &out, &err), WF_OK);
    ck_assert_str_eq(out, "{}");
    ck_assert_int_eq(wf_vars_object(a, " {\"a\" : 1} ", "v", &out, &err), WF_OK);
    ck_assert_str_eq(out, "{\"a\":1}");
    /* Nesting libjq could not read later is refused up front: 128 levels
     * are fine, 300 are not. */
    char deep[1024];
    for (int levels = 128; levels <= 300; levels += 172) {
        size_t n = 0;
        for (int i = 0; i < levels; i++)
            n += (size_t)snprintf(deep + n, sizeof deep - n, i == 0 ? "{\"a\":" : "[");
        deep[n++] = '1';
        for (int i = levels - 1; i >= 0; i--)
            deep[n++] = i == 0 ? '}' : ']';
        deep[n] = '\0';
        wf_code rc = wf_vars_object(a, deep, "variables_json", &out, &err);
        ck_assert_int_eq(rc, levels == 128 ? WF_OK : WF_E_INVALID_JSON);
    }
    ck_assert_str_eq(err.msg, "variables_json nests deeper than 128 levels");
    ck_assert_int_eq(wf_vars_merge(a, "{\"a\":1,\"b\":2}", "{\"b\":null,\"c\":[3]}", &out, &err),
                     WF_OK);
    ck_assert_str_eq(out, "{\"a\":1,\"b\":null,\"c\":[3]}");
    ck_assert_int_eq(wf_vars_merge(a, "{}", "[]", &out, &err), WF_E_INVALID_JSON);
    wf_arena_free(a);
}
END_TEST

/* Collects violations reported through wf_ref_ctx. */
typedef struct vlist {
    char fields[16][128];
    int n;
} vlist;

static void
collect(void *arg, const char *field, const char *reason, const char *description)
{
    vlist *v = arg;
    (void)reason;
    (void)description;
    if (v->n < 16)
        snprintf(v->fields[v->n++], sizeof v->fields[0], "%s", field);
}

WF_CASE_TEST("rules", test_spec_validation_reports_every_violation)
{
    wf_arena *a = wf_arena_new();
    vlist v = {0};
    wf_ref_ctx ctx = {.arena = a, .violation = collect, .violation_arg = &v};
    const char *dup[] = {"u1", "u1"};
    wf_assign_spec next = {.title = "", .kind = WF_REF_ASSIGNEE_GROUP};
    wf_assign_spec s = {.parent_id = "",
                        .title = "Review",
                        .kind = WF_REF_ASSIGNEE_USERS,
                        .ids = dup,
                        .n_ids = 2,
                        .variables_json = "[1]",
                        .join_mode = WF_JOIN_QUORUM,
                        .join_quorum = 3,
                        .next = &next};
    wf_error err;
    ck_assert_int_eq(wf_referral_spec_validate(&ctx, &s, false, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_int_eq(v.n, 6);
    ck_assert_str_eq(v.fields[0], "parent_instance_id");
    ck_assert_str_eq(v.fields[1], "assignee.ids[1]");
    ck_assert_str_eq(v.fields[2], "join.quorum");
    ck_assert_str_eq(v.fields[3], "variables_json");
    ck_assert_str_eq(v.fields[4], "on_all_completed.title");
    ck_assert_str_eq(v.fields[5], "on_all_completed.assignee.ids");

    /* A nested spec may leave the parent empty. */
    const char *one[] = {"it"};
    wf_assign_spec ok = {.title = "x", .kind = WF_REF_ASSIGNEE_GROUP, .ids = one, .n_ids = 1};
    ck_assert_int_eq(wf_referral_spec_validate(&ctx, &ok, true, &err), WF_OK);
    wf_arena_free(a);
}
END_TEST

WF_CASE_TEST("rules", test_spec_encoding_round_trips)
{
    wf_arena *a = wf_arena_new();
    const char *ids[] = {"alice", "bob"};
    const char *grp[] = {"it"};
    wf_assign_spec last = {.title = "Archive",
                           .kind = WF_REF_ASSIGNEE_GROUP,
                           .ids = grp,
                           .n_ids = 1,
                           .definition_key = "other"};
    wf_assign_spec mid = {.parent_id = "p-9",
                          .title = "Sign",
                          .kind = WF_REF_ASSIGNEE_USERS,
                          .ids = ids,
                          .n_ids = 2,
                          .variables_json = "{\"k\":1}",
                          .join_mode = WF_JOIN_QUORUM,
                          .join_quorum = 1,
                          .next = &last};
    unsigned char *bytes;
    size_t len;
    wf_error err;
    ck_assert_int_eq(wf_referral_spec_encode(a, &mid, "boss", &bytes, &len, &err), WF_OK);
    wf_assign_spec *d;
    ck_assert_int_eq(wf_referral_spec_decode(a, bytes, len, &d, &err), WF_OK);
    ck_assert_str_eq(d->parent_id, "p-9");
    ck_assert_str_eq(d->title, "Sign");
    ck_assert_int_eq(d->kind, WF_REF_ASSIGNEE_USERS);
    ck_assert_uint_eq(d->n_ids, 2);
    ck_assert_str_eq(d->ids[1], "bob");
    ck_assert_str_eq(d->variables_json, "{\"k\":1}");
    ck_assert_int_eq(d->join_mode, WF_JOIN_QUORUM);
    ck_assert_int_eq(d->join_quorum, 1);
    ck_assert_str_eq(d->assigned_by, "boss");
    ck_assert_ptr_nonnull(d->next);
    ck_assert_str_eq(d->next->definition_key, "other");
    ck_assert_str_eq(d->next->assigned_by, "boss");
    ck_assert_ptr_null(d->next->next);
    ck_assert_int_eq(wf_referral_spec_decode(a, (const unsigned char *)"{}", 2, &d, &err),
                     WF_E_INTERNAL);
    wf_arena_free(a);
}
END_TEST

WF_CASE_TEST("rules", test_spec_validation_of_ids_expression)
{
    wf_arena *a = wf_arena_new();
    vlist v = {0};
    wf_ref_ctx ctx = {.arena = a, .violation = collect, .violation_arg = &v};
    const char *one[] = {"it"};
    /* The quorum's upper bound waits for the ids; a nested expression is
     * compiled too. */
    wf_assign_spec next = {.title = "Next", .kind = WF_REF_ASSIGNEE_USERS, .ids_expression = ".["};
    wf_assign_spec s = {.parent_id = "p",
                        .title = "Review",
                        .kind = WF_REF_ASSIGNEE_USERS,
                        .ids_expression = ".reviewers",
                        .join_mode = WF_JOIN_QUORUM,
                        .join_quorum = 5,
                        .next = &next};
    wf_error err;
    ck_assert_int_eq(wf_referral_spec_validate(&ctx, &s, false, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_int_eq(v.n, 1);
    ck_assert_str_eq(v.fields[0], "on_all_completed.assignee.ids_expression");
    ck_assert_ptr_nonnull(strstr(err.msg, "does not compile"));
    next.ids_expression = "[.a, .b]";
    ck_assert_int_eq(wf_referral_spec_validate(&ctx, &s, false, &err), WF_OK);

    /* Ids and an expression at once, a refused builtin, a zero quorum. */
    v.n = 0;
    s.next = NULL;
    s.ids = one;
    s.n_ids = 1;
    s.ids_expression = "range(10)";
    s.join_quorum = 0;
    ck_assert_int_eq(wf_referral_spec_validate(&ctx, &s, false, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_int_eq(v.n, 3);
    ck_assert_str_eq(v.fields[0], "assignee.ids_expression");
    ck_assert_str_eq(v.fields[1], "assignee.ids_expression");
    ck_assert_str_eq(v.fields[2], "join.quorum");
    ck_assert_str_eq(err.msg, "assignee.ids_expression: must be empty when ids are listed");
    wf_arena_free(a);
}
END_TEST

WF_CASE_TEST("rules", test_spec_encoding_keeps_ids_expression)
{
    wf_arena *a = wf_arena_new();
    const char *grp[] = {"it"};
    wf_assign_spec last = {.title = "Sign", .kind = WF_REF_ASSIGNEE_USERS, .ids_expression = ".x"};
    wf_assign_spec s = {
        .title = "One", .kind = WF_REF_ASSIGNEE_GROUP, .ids = grp, .n_ids = 1, .next = &last};
    unsigned char *bytes;
    size_t len;
    wf_error err;
    ck_assert_int_eq(wf_referral_spec_encode(a, &s, "boss", &bytes, &len, &err), WF_OK);
    wf_assign_spec *d;
    ck_assert_int_eq(wf_referral_spec_decode(a, bytes, len, &d, &err), WF_OK);
    ck_assert_ptr_null(d->ids_expression);
    ck_assert_str_eq(d->next->ids_expression, ".x");
    ck_assert_uint_eq(d->next->n_ids, 0);
    /* A document written before the field existed reads as "no
     * expression". */
    const char *old = "{\"v\":1,\"parent\":\"\",\"key\":\"\",\"title\":\"t\",\"kind\":1,"
                      "\"ids\":[\"a\"],\"vars\":\"\",\"join\":0,\"quorum\":0,\"by\":\"b\"}";
    ck_assert_int_eq(wf_referral_spec_decode(a, (const unsigned char *)old, strlen(old), &d, &err),
                     WF_OK);
    ck_assert_ptr_null(d->ids_expression);
    ck_assert_str_eq(d->ids[0], "a");
    wf_arena_free(a);
}
END_TEST

/* ---- the engine over the memory store ---------------------------------------------- */

static wf_store *st;
static wf_arena *arena;
static wf_directory *dir;

static void
setup(void)
{
    kit_setup();
    dir = wf_directory_new_open();
}

/* kit_teardown empties the cache of compiled ids_expressions too, so
 * leak checks see none. */
static void
teardown(void)
{
    kit_teardown();
    wf_directory_free(dir);
}

static wf_ref_ctx
as(const char *actor)
{
    return (wf_ref_ctx){.store = st, .dir = dir, .tenant = "t1", .actor = actor, .arena = arena};
}

static char *
start(const char *actor)
{
    wf_ref_ctx c = as(actor);
    wf_start_spec s = {.definition_key = "leave", .variables_json = "{\"days\":3}"};
    wf_instance_row root;
    wf_error err;
    ck_assert_int_eq(wf_instances_start(&c, &s, NULL, &root, &err), WF_OK);
    ck_assert_int_eq(root.status, WF_INSTANCE_RUNNING);
    ck_assert_str_eq(root.started_by, actor);
    ck_assert_int_eq(root.definition_version, 1);
    return root.id;
}

/* Event types of the tree of root, in order, as one space-separated string. */
static char *
event_types(const char *root)
{
    wf_store_ctx sc = {"t1", 0, arena};
    wf_event_filter f = {.instance_id = root};
    wf_event_row *ev;
    size_t n;
    wf_error err;
    ck_assert_int_eq(wf_store_read_events(st, &sc, 0, &f, 1000, &ev, &n, &err), WF_OK);
    char *s = wf_arena_calloc(arena, 4096, 1);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(s);
        snprintf(s + len, 4096 - len, "%s%s", i ? " " : "", ev[i].type);
    }
    return s;
}

WF_CASE_TEST("engine", test_all_join_runs_next_once_with_original_assigner)
{
    char *root = start("boss");
    const char *users[] = {"alice", "bob"};
    const char *grp[] = {"it"};
    wf_assign_spec next = {
        .title = "Archive", .kind = WF_REF_ASSIGNEE_GROUP, .ids = grp, .n_ids = 1};
    wf_assign_spec s = {.parent_id = root,
                        .title = "Approve",
                        .kind = WF_REF_ASSIGNEE_USERS,
                        .ids = users,
                        .n_ids = 2,
                        .next = &next};
    wf_ref_ctx boss = as("boss"), alice = as("alice"), bob = as("bob");
    wf_ref_assignment asg;
    wf_error err;
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &asg, &err), WF_OK);
    ck_assert_uint_eq(asg.n_tasks, 2);
    ck_assert_str_eq(asg.tasks[0].assignee_id, "alice");
    ck_assert_str_eq(asg.instance.parent_id, root);
    ck_assert_int_eq(asg.instance.join_mode, WF_JOIN_ALL);

    wf_ref_completion c1, c2;
    ck_assert_int_eq(
        wf_instances_complete_task(&alice, asg.tasks[0].id, "{\"ok\":true}", NULL, &c1, &err),
        WF_OK);
    ck_assert_ptr_null(c1.next);
    ck_assert(!c1.counts.all_completed);
    ck_assert_int_eq(wf_instances_complete_task(&bob, asg.tasks[1].id, "", NULL, &c2, &err), WF_OK);
    ck_assert(c2.counts.all_completed);
    ck_assert_ptr_nonnull(c2.next);
    ck_assert_uint_eq(c2.next->n_tasks, 1);
    ck_assert_str_eq(c2.next->tasks[0].assignee_id, "it");
    ck_assert_str_eq(c2.next->tasks[0].assigned_by, "boss");
    ck_assert_str_eq(c2.next->instance.parent_id, root); /* "" = the referral's parent */

    wf_ref_instance_view v;
    ck_assert_int_eq(wf_referral_get_instance(&boss, asg.instance.id, &v, &err), WF_OK);
    ck_assert_int_eq(v.instance.status, WF_INSTANCE_COMPLETED);
    ck_assert_str_eq(v.instance.variables_json, "{\"ok\":true}");
    ck_assert_int_eq(wf_referral_get_instance(&boss, root, &v, &err), WF_OK);
    ck_assert_uint_eq(v.n_children, 2);
    ck_assert_uint_eq(v.n_joins, 1); /* the new referral's join is pending */
    ck_assert_str_eq(event_types(root),
                     "INSTANCE_STARTED INSTANCE_STARTED TASK_CREATED TASK_CREATED "
                     "TASK_COMPLETED TASK_COMPLETED INSTANCE_COMPLETED INSTANCE_STARTED "
                     "TASK_CREATED");
    /* A DONE task cannot be completed again. */
    ck_assert_int_eq(wf_instances_complete_task(&bob, asg.tasks[1].id, "", NULL, &c2, &err),
                     WF_E_TASK_NOT_OPEN);
}
END_TEST

WF_CASE_TEST("engine", test_any_join_cancels_the_rest)
{
    char *root = start("boss");
    const char *users[] = {"a", "b", "c"};
    wf_assign_spec s = {.parent_id = root,
                        .title = "Vote",
                        .kind = WF_REF_ASSIGNEE_USERS,
                        .ids = users,
                        .n_ids = 3,
                        .join_mode = WF_JOIN_ANY};
    wf_ref_ctx boss = as("boss"), b = as("b");
    wf_ref_assignment asg;
    wf_ref_completion c;
    wf_error err;
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &asg, &err), WF_OK);
    ck_assert_int_eq(wf_instances_complete_task(&b, asg.tasks[1].id, "", NULL, &c, &err), WF_OK);
    ck_assert_int_eq(c.counts.done, 1);
    ck_assert_int_eq(c.counts.cancelled, 2);
    ck_assert(c.counts.all_completed);
    ck_assert_ptr_null(c.next);
    wf_ref_counts k;
    ck_assert_int_eq(wf_referral_completion(&boss, asg.instance.id, &k, &err), WF_OK);
    ck_assert_int_eq(k.cancelled, 2);
    ck_assert_int_eq(wf_instances_complete_task(&boss, asg.tasks[0].id, "", NULL, &c, &err),
                     WF_E_TASK_NOT_OPEN);
}
END_TEST

WF_CASE_TEST("engine", test_complete_and_end_closes_the_tree)
{
    char *root = start("boss");
    const char *u1[] = {"a"}, *u2[] = {"b", "c"};
    wf_assign_spec s1 = {
        .parent_id = root, .title = "One", .kind = WF_REF_ASSIGNEE_USER, .ids = u1, .n_ids = 1};
    wf_assign_spec s2 = {
        .parent_id = root, .title = "Two", .kind = WF_REF_ASSIGNEE_USERS, .ids = u2, .n_ids = 2};
    wf_ref_ctx boss = as("boss"), a = as("a");
    wf_ref_assignment r1, r2;
    wf_error err;
    ck_assert_int_eq(wf_referral_assign(&boss, &s1, NULL, &r1, &err), WF_OK);
    ck_assert_int_eq(wf_referral_assign(&boss, &s2, NULL, &r2, &err), WF_OK);
    wf_ref_end end;
    ck_assert_int_eq(wf_instances_complete_and_end(&a, r1.tasks[0].id, "", NULL, &end, &err),
                     WF_OK);
    ck_assert_int_eq(end.root.status, WF_INSTANCE_COMPLETED);
    ck_assert_int_eq(end.task.status, WF_TASK_DONE);
    ck_assert_uint_eq(end.n_cancelled, 2);
    wf_ref_instance_view v;
    ck_assert_int_eq(wf_referral_get_instance(&boss, root, &v, &err), WF_OK);
    for (size_t i = 0; i < v.n_children; i++)
        ck_assert_int_eq(v.children[i].status, WF_INSTANCE_COMPLETED);
    ck_assert_uint_eq(v.n_joins, 0);
    wf_instance_row out;
    ck_assert_int_eq(wf_referral_cancel(&boss, root, "late", NULL, &out, &err),
                     WF_E_INSTANCE_NOT_RUNNING);
}
END_TEST

/* Ids of the tasks a query lists, space-separated. */
static char *
listed(const wf_ref_ctx *c, const wf_ref_task_query *q)
{
    wf_task_row *rows;
    size_t n;
    char *next;
    wf_error err;
    ck_assert_int_eq(wf_referral_list_tasks(c, q, &rows, &n, &next, &err), WF_OK);
    char *s = wf_arena_calloc(arena, 1024, 1);
    for (size_t i = 0; i < n; i++)
        snprintf(s + strlen(s), 1024 - strlen(s), "%s ", rows[i].id);
    return s;
}

WF_CASE_TEST("engine", test_group_queue_lists_open_tasks_by_default)
{
    char *root = start("boss");
    const char *grp[] = {"it"};
    wf_assign_spec s = {
        .parent_id = root, .title = "Fix", .kind = WF_REF_ASSIGNEE_GROUP, .ids = grp, .n_ids = 1};
    wf_ref_ctx boss = as("boss"), carol = as("carol");
    wf_ref_assignment a1, a2;
    wf_error err;
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &a1, &err), WF_OK);
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &a2, &err), WF_OK);
    wf_task_row held;
    ck_assert_int_eq(wf_referral_claim(&carol, a1.tasks[0].id, NULL, &held, &err), WF_OK);
    char want[128];
    /* The group's queue: OPEN only. */
    wf_ref_task_query q = {.group = "it"};
    snprintf(want, sizeof want, "%s ", a2.tasks[0].id);
    ck_assert_str_eq(listed(&boss, &q), want);
    /* Asked for, CLAIMED lists the held one. */
    static const wf_task_status claimed[] = {WF_TASK_CLAIMED};
    q.states = claimed;
    q.n_states = 1;
    snprintf(want, sizeof want, "%s ", a1.tasks[0].id);
    ck_assert_str_eq(listed(&boss, &q), want);
    /* The claimer's inbox keeps its default: OPEN and CLAIMED. */
    wf_ref_task_query mine = {0};
    ck_assert_str_eq(listed(&carol, &mine), want);
}
END_TEST

/* The process states (N, O, C) whose ListInstances list id. */
static char *
states_of(const char *id)
{
    static const wf_process_state states[] = {WF_PROCESS_NOT_STARTED, WF_PROCESS_OPEN,
                                              WF_PROCESS_CLOSED};
    char *s = wf_arena_calloc(arena, 4, 1);
    wf_ref_ctx c = as("boss");
    for (size_t k = 0; k < 3; k++) {
        wf_ref_instance_query q = {.started_by = "*", .state = states[k]};
        wf_instance_row *rows;
        size_t n;
        char *next;
        wf_error err;
        ck_assert_int_eq(wf_referral_list_instances(&c, &q, &rows, &n, &next, &err), WF_OK);
        for (size_t i = 0; i < n; i++)
            if (strcmp(rows[i].id, id) == 0)
                s[strlen(s)] = "NOC"[k];
    }
    return s;
}

WF_CASE_TEST("engine", test_every_root_in_one_process_state)
{
    char *fresh = start("boss"), *referred = start("boss"), *ended = start("boss");
    const char *ann[] = {"ann"};
    wf_assign_spec s = {
        .parent_id = referred, .title = "Do", .kind = WF_REF_ASSIGNEE_USER, .ids = ann, .n_ids = 1};
    wf_ref_ctx boss = as("boss");
    wf_ref_assignment asg;
    wf_instance_row out;
    wf_error err;
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &asg, &err), WF_OK);
    ck_assert_int_eq(wf_referral_cancel(&boss, ended, "no", NULL, &out, &err), WF_OK);
    ck_assert_str_eq(states_of(fresh), "N");
    ck_assert_str_eq(states_of(referred), "O");
    ck_assert_str_eq(states_of(ended), "C");
}
END_TEST

WF_CASE_TEST("engine", test_cancel_subtree_only)
{
    char *root = start("boss");
    const char *u[] = {"a"};
    wf_assign_spec s = {
        .parent_id = root, .title = "One", .kind = WF_REF_ASSIGNEE_USER, .ids = u, .n_ids = 1};
    wf_ref_ctx boss = as("boss");
    wf_ref_assignment r1, r2;
    wf_error err;
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &r1, &err), WF_OK);
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &r2, &err), WF_OK);
    wf_instance_row out;
    ck_assert_int_eq(wf_referral_cancel(&boss, r1.instance.id, "no", NULL, &out, &err), WF_OK);
    ck_assert_int_eq(out.status, WF_INSTANCE_CANCELLED);
    wf_task_row t;
    ck_assert_int_eq(wf_referral_get_task(&boss, r1.tasks[0].id, &t, &err), WF_OK);
    ck_assert_int_eq(t.status, WF_TASK_CANCELLED);
    ck_assert_int_eq(wf_referral_get_task(&boss, r2.tasks[0].id, &t, &err), WF_OK);
    ck_assert_int_eq(t.status, WF_TASK_OPEN);
}
END_TEST

/* A fake response encoding: the instance id. */
static wf_code
enc(const void *result, void *arg, wf_arena *a, unsigned char **bytes, size_t *len, wf_error *err)
{
    (void)arg;
    (void)err;
    const wf_instance_row *r = result;
    *bytes = (unsigned char *)wf_arena_strdup(a, r->id);
    *len = strlen(r->id);
    return WF_OK;
}

WF_CASE_TEST("engine", test_idempotent_start)
{
    wf_ref_ctx c = as("boss");
    wf_start_spec s = {.definition_key = "k"};
    wf_uow_idem idem = {
        .method = "StartInstance", .request_id = "r1", .request_hash = "h1", .encode = enc};
    wf_instance_row first, again;
    wf_error err;
    ck_assert_int_eq(wf_instances_start(&c, &s, &idem, &first, &err), WF_OK);
    ck_assert(!idem.replayed);
    ck_assert_int_eq(wf_instances_start(&c, &s, &idem, &again, &err), WF_OK);
    ck_assert(idem.replayed);
    ck_assert_uint_eq(idem.response_len, strlen(first.id));
    ck_assert(memcmp(idem.response, first.id, idem.response_len) == 0);
    idem.request_hash = "h2";
    ck_assert_int_eq(wf_instances_start(&c, &s, &idem, &again, &err), WF_E_REQUEST_ID_REUSED);
    /* Another method may reuse the id. */
    idem.method = "Other";
    ck_assert_int_eq(wf_instances_start(&c, &s, &idem, &again, &err), WF_OK);
    ck_assert(!idem.replayed);
}
END_TEST

static char *
start_vars(const char *vars)
{
    wf_ref_ctx c = as("boss");
    wf_start_spec s = {.definition_key = "leave", .variables_json = vars};
    wf_instance_row root;
    wf_error err;
    ck_assert_int_eq(wf_instances_start(&c, &s, NULL, &root, &err), WF_OK);
    return root.id;
}

/* The boss's context, collecting field violations into v. */
static wf_ref_ctx
boss_collecting(vlist *v)
{
    wf_ref_ctx c = as("boss");
    c.violation = collect;
    c.violation_arg = v;
    return c;
}

WF_CASE_TEST("engine", test_ids_expression_reads_parent_and_request_variables)
{
    char *root = start_vars("{\"reviewers\":[\"alice\",\"bob\",\"alice\"],\"lead\":\"carol\"}");
    vlist v = {0};
    wf_ref_ctx boss = boss_collecting(&v);
    wf_assign_spec s = {.parent_id = root,
                        .title = "Review",
                        .kind = WF_REF_ASSIGNEE_USERS,
                        .ids_expression = ".reviewers",
                        .join_mode = WF_JOIN_QUORUM,
                        .join_quorum = 2};
    wf_ref_assignment asg;
    wf_error err;
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &asg, &err), WF_OK);
    /* The duplicate is dropped, the order kept. */
    ck_assert_uint_eq(asg.n_tasks, 2);
    ck_assert_str_eq(asg.tasks[0].assignee_id, "alice");
    ck_assert_str_eq(asg.tasks[1].assignee_id, "bob");
    ck_assert_int_eq(asg.instance.join_quorum, 2);
    /* The referral's variables stay the request's. */
    ck_assert_str_eq(asg.instance.variables_json, "{}");

    /* The request's variables override the parent's, key by key. */
    s.kind = WF_REF_ASSIGNEE_USER;
    s.ids_expression = ".lead";
    s.variables_json = "{\"lead\":\"dave\"}";
    s.join_mode = WF_JOIN_NONE;
    s.join_quorum = 0;
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &asg, &err), WF_OK);
    ck_assert_uint_eq(asg.n_tasks, 1);
    ck_assert_str_eq(asg.tasks[0].assignee_id, "dave");
    ck_assert_int_eq(asg.tasks[0].assignee_kind, WF_ASSIGNEE_USER);
    ck_assert_str_eq(asg.instance.variables_json, "{\"lead\":\"dave\"}");
    s.kind = WF_REF_ASSIGNEE_GROUP;
    s.ids_expression = "\"team-\" + .lead";
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &asg, &err), WF_OK);
    ck_assert_str_eq(asg.tasks[0].assignee_id, "team-dave");
    ck_assert_int_eq(asg.tasks[0].assignee_kind, WF_ASSIGNEE_GROUP);
    ck_assert_int_eq(v.n, 0);
    ck_assert_str_eq(event_types(root), "INSTANCE_STARTED INSTANCE_STARTED TASK_CREATED "
                                        "TASK_CREATED INSTANCE_STARTED TASK_CREATED "
                                        "INSTANCE_STARTED TASK_CREATED");
}
END_TEST

/* Assigns s under root and expects code with one violation on field;
 * asserts that nothing was written. */
static void
assign_fails(const char *root, wf_assign_spec *s, wf_code code, const char *field)
{
    vlist v = {0};
    wf_ref_ctx boss = boss_collecting(&v);
    char *before = wf_arena_strdup(arena, event_types(root));
    wf_ref_assignment asg;
    wf_error err;
    ck_assert_int_eq(wf_referral_assign(&boss, s, NULL, &asg, &err), code);
    if (field != NULL) {
        ck_assert_int_eq(v.n, 1);
        ck_assert_str_eq(v.fields[0], field);
    } else {
        ck_assert_int_eq(v.n, 0);
    }
    ck_assert_str_eq(event_types(root), before);
}

WF_CASE_TEST("engine", test_ids_expression_results_follow_the_literal_rules)
{
    char *root = start_vars("{\"none\":[],\"two\":[\"a\",\"b\"],\"n\":7,\"long\":\"\"}");
    wf_assign_spec s = {.parent_id = root,
                        .title = "Review",
                        .kind = WF_REF_ASSIGNEE_USERS,
                        .ids_expression = ".none[]"};
    /* Nothing, a number, a null, an empty string. */
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "assignee.ids_expression");
    s.ids_expression = ".none";
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "assignee.ids_expression");
    s.ids_expression = ".n";
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "assignee.ids_expression");
    s.ids_expression = ".missing";
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "assignee.ids_expression");
    s.ids_expression = "[.two[], .long]";
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "assignee.ids_expression");
    /* A runtime error is the request's too. */
    s.ids_expression = ".n[0]";
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "assignee.ids_expression");
    /* An id a literal list could not hold. */
    s.ids_expression = "\"a b\n\"";
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "assignee.ids_expression");
    s.ids_expression = "\"x\" * 129";
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "assignee.ids_expression");
    /* USER and GROUP take exactly one. */
    s.ids_expression = ".two";
    s.kind = WF_REF_ASSIGNEE_USER;
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "assignee.ids_expression");
    /* A quorum above the ids it gave, with the literal list's field. */
    s.kind = WF_REF_ASSIGNEE_USERS;
    s.join_mode = WF_JOIN_QUORUM;
    s.join_quorum = 3;
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "join.quorum");
    /* A compile error never reaches the unit of work. */
    s.join_quorum = 2;
    s.ids_expression = ".two[";
    assign_fails(root, &s, WF_E_INVALID_ARGUMENT, "assignee.ids_expression");
    /* Too many ids: the expression engine's bound. */
    s.join_mode = WF_JOIN_NONE;
    s.join_quorum = 0;
    s.ids_expression = "\"a,\" * 1001 | split(\",\") | to_entries | map(\"u\\(.key)\")";
    assign_fails(root, &s, WF_E_TOO_LARGE, NULL);
    s.ids_expression = ".two";
    wf_error err;
    wf_ref_ctx boss = as("boss");
    wf_ref_assignment asg;
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &asg, &err), WF_OK);
    ck_assert_uint_eq(asg.n_tasks, 2);
}
END_TEST

/* root -> P (USERS p1, p2) -> A (USER alice) with on_all_completed B
 * (USERS from .approvers): B's ids are read when A's join fires, from P
 * as it is then. */
WF_CASE_TEST("engine", test_ids_expression_in_a_chain_reads_variables_when_the_join_fires)
{
    char *root = start_vars("{}");
    wf_ref_ctx boss = as("boss"), alice = as("alice"), p1 = as("p1");
    const char *ps[] = {"p1", "p2"}, *al[] = {"alice"};
    wf_assign_spec sp = {
        .parent_id = root, .title = "P", .kind = WF_REF_ASSIGNEE_USERS, .ids = ps, .n_ids = 2};
    wf_ref_assignment pa, aa;
    wf_error err;
    ck_assert_int_eq(wf_referral_assign(&boss, &sp, NULL, &pa, &err), WF_OK);
    wf_assign_spec b = {.title = "B",
                        .kind = WF_REF_ASSIGNEE_USERS,
                        .ids_expression = ".approvers",
                        .variables_json = "{\"step\":\"b\"}"};
    wf_assign_spec sa = {.parent_id = pa.instance.id,
                         .title = "A",
                         .kind = WF_REF_ASSIGNEE_USER,
                         .ids = al,
                         .n_ids = 1,
                         .next = &b};
    /* P has no approvers yet, and that is fine until the join fires. */
    ck_assert_int_eq(wf_referral_assign(&boss, &sa, NULL, &aa, &err), WF_OK);

    /* The join fires, the expression gives nothing: the completion is
     * refused and nothing changes. */
    wf_ref_completion c;
    ck_assert_int_eq(wf_instances_complete_task(&alice, aa.tasks[0].id, "", NULL, &c, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "on_all_completed \"B\""));
    wf_task_row t;
    ck_assert_int_eq(wf_referral_get_task(&alice, aa.tasks[0].id, &t, &err), WF_OK);
    ck_assert_int_eq(t.status, WF_TASK_OPEN);

    /* p1's output lands in P; now the join finds approvers there. */
    ck_assert_int_eq(wf_instances_complete_task(&p1, pa.tasks[0].id,
                                                "{\"approvers\":[\"x\",\"y\"]}", NULL, &c, &err),
                     WF_OK);
    ck_assert_ptr_null(c.next);
    ck_assert_int_eq(wf_instances_complete_task(&alice, aa.tasks[0].id, "", NULL, &c, &err), WF_OK);
    ck_assert_ptr_nonnull(c.next);
    ck_assert_uint_eq(c.next->n_tasks, 2);
    ck_assert_str_eq(c.next->tasks[0].assignee_id, "x");
    ck_assert_str_eq(c.next->tasks[1].assignee_id, "y");
    ck_assert_str_eq(c.next->tasks[1].assigned_by, "boss");
    ck_assert_str_eq(c.next->instance.parent_id, pa.instance.id);
    ck_assert_str_eq(c.next->instance.variables_json, "{\"step\":\"b\"}");
}
END_TEST

WF_CASE_TEST("engine", test_assign_errors)
{
    char *root = start("boss");
    wf_ref_ctx boss = as("boss");
    const char *u[] = {"a"};
    wf_assign_spec s = {.parent_id = root,
                        .title = "x",
                        .kind = WF_REF_ASSIGNEE_USER,
                        .ids = u,
                        .n_ids = 1,
                        .definition_key = "missing"};
    wf_ref_assignment r;
    wf_error err;
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &r, &err), WF_E_DEFINITION_NOT_FOUND);
    s.definition_key = NULL;
    s.parent_id = "not-a-uuid";
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &r, &err), WF_E_INSTANCE_NOT_FOUND);
    s.parent_id = "01890000-0000-7000-8000-000000000000";
    ck_assert_int_eq(wf_referral_assign(&boss, &s, NULL, &r, &err), WF_E_INSTANCE_NOT_FOUND);
    /* Another tenant sees nothing. */
    wf_ref_ctx other = boss;
    other.tenant = "t2";
    s.parent_id = root;
    ck_assert_int_eq(wf_referral_assign(&other, &s, NULL, &r, &err), WF_E_INSTANCE_NOT_FOUND);
}
END_TEST

int
main(void)
{
    kit_fixture(&st, &arena);
    const wf_test_case cases[] = {{"rules", NULL, NULL, 0}, {"engine", setup, teardown, 0}, {NULL}};
    return wf_test_run(wf_test_suite_of("referral", cases));
}
