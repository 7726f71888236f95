/*
 * Unit tests of MigrateInstance without a server: the pure rule
 * (wf_net_migrate over an in-memory case state: tokens mapped with their
 * ids, items kept, every problem listed at once) and the runtime over the
 * memory store (wf_runtime_migrate_instance: a claimed task kept, a job kept,
 * a timer kept with its due time, a signal subscription kept,
 * items withdrawn and created as a firing would, a completion through the
 * END place, a dry run that changes nothing, a refused run whose problems
 * reach the violation sink, a STEPS definition through its compiled net,
 * the no-op and every refusal with its reason).
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
#include "test_support.h"

static wf_store *st;
static wf_arena *arena;

/* The violations of the last call: field and reason, "field=REASON ...". */
static char violations[1024];

static void
record_violation(void *arg, const char *field, const char *reason, const char *msg)
{
    (void)arg;
    (void)msg;
    size_t len = strlen(violations);
    snprintf(violations + len, sizeof violations - len, "%s%s=%s", len > 0 ? " " : "", field,
             reason != NULL ? reason : "");
}

static wf_runtime_ctx
as(const char *actor)
{
    violations[0] = '\0';
    wf_runtime_ctx c = kit_ctx(actor);
    c.ref.violation = record_violation;
    return c;
}

static const char *alice[] = {"alice"};

/* One transition of a test net: one input place, one output place. */
typedef struct tdef {
    const char *id;
    wf_trigger trigger;
    const char *job_type; /* AUTO */
    const char *in, *out;
} tdef;

/* A net of places (the first START, the last END) and transitions; USER
 * transitions go to alice. */
static wf_net *
mk(const char *key, int32_t version, const char *const *places, size_t np, const tdef *td,
   size_t nt)
{
    wf_net *n = wf_arena_calloc(arena, 1, sizeof *n);
    wf_place *p = wf_arena_calloc(arena, np, sizeof *p);
    wf_transition *t = wf_arena_calloc(arena, nt, sizeof *t);
    wf_arc *a = wf_arena_calloc(arena, 2 * nt, sizeof *a);
    for (size_t i = 0; i < np; i++)
        p[i] = (wf_place){.id = places[i],
                          .kind = i == 0        ? WF_PLACE_START
                                  : i == np - 1 ? WF_PLACE_END
                                                : WF_PLACE_NORMAL};
    for (size_t i = 0; i < nt; i++) {
        t[i] =
            (wf_transition){.id = td[i].id, .trigger = td[i].trigger, .job_type = td[i].job_type};
        if (td[i].trigger == WF_TRIGGER_USER)
            t[i].assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = alice, .n_ids = 1};
        a[2 * i] = (wf_arc){.source = td[i].in, .target = td[i].id};
        a[2 * i + 1] = (wf_arc){.source = td[i].id, .target = td[i].out};
    }
    *n = (wf_net){.key = key,
                  .version = version,
                  .places = p,
                  .n_places = np,
                  .transitions = t,
                  .n_transitions = nt,
                  .arcs = a,
                  .n_arcs = 2 * nt};
    return n;
}

#define U WF_TRIGGER_USER
#define J WF_TRIGGER_AUTO

/* v1: s -review-> a -approve-> b -ship(job "ship")-> e */
static wf_net *
v1(const char *key)
{
    static const char *const p[] = {"s", "a", "b", "e"};
    static const tdef t[] = {{"review", U, NULL, "s", "a"},
                             {"approve", U, NULL, "a", "b"},
                             {"ship", J, "ship", "b", "e"}};
    return mk(key, 1, p, 4, t, 3);
}

/* v1 with place a renamed a2. */
static wf_net *
v_renamed(const char *key)
{
    static const char *const p[] = {"s", "a2", "b", "e"};
    static const tdef t[] = {{"review", U, NULL, "s", "a2"},
                             {"approve", U, NULL, "a2", "b"},
                             {"ship", J, "ship", "b", "e"}};
    return mk(key, 2, p, 4, t, 3);
}

/* v1 plus place x: a -flag(USER)-> x -escalate(USER)-> b. */
static wf_net *
v_escalate(const char *key)
{
    static const char *const p[] = {"s", "a", "x", "b", "e"};
    static const tdef t[] = {{"review", U, NULL, "s", "a"},
                             {"approve", U, NULL, "a", "b"},
                             {"flag", U, NULL, "a", "x"},
                             {"escalate", U, NULL, "x", "b"},
                             {"ship", J, "ship", "b", "e"}};
    return mk(key, 2, p, 5, t, 5);
}

/* Without review and place a (s -check-> b, s -route-> c -approve-> b);
 * ship has another job type. */
static wf_net *
v_broken(const char *key)
{
    static const char *const p[] = {"s", "c", "b", "e"};
    static const tdef t[] = {{"check", U, NULL, "s", "b"},
                             {"route", U, NULL, "s", "c"},
                             {"approve", U, NULL, "c", "b"},
                             {"ship", J, "ship2", "b", "e"}};
    return mk(key, 2, p, 4, t, 4);
}

static wf_instance_row
start_v1(const char *key)
{
    wf_runtime_ctx c = as("dev");
    kit_deploy(&c, v1(key));
    wf_start_spec spec = {.definition_key = key, .version = 1};
    return kit_start(&c.ref, &spec, NULL);
}

static const wf_instance_row *
instance_of(const wf_aggregate *agg, const char *id)
{
    for (size_t i = 0; i < agg->n_instances; i++)
        if (strcmp(agg->instances[i].id, id) == 0)
            return &agg->instances[i];
    ck_abort_msg("instance %s not in its aggregate", id);
    return NULL;
}

static json_t *
event_data(const char *root, const char *type)
{
    json_t *v = json_loads(kit_event_data(root, type), 0, NULL);
    ck_assert_ptr_nonnull(v);
    return v;
}

static const wf_task_row *
task_of(const wf_aggregate *agg, const char *transition, wf_task_status status)
{
    for (size_t i = 0; i < agg->n_tasks; i++)
        if (strcmp(agg->tasks[i].transition_id, transition) == 0 && agg->tasks[i].status == status)
            return &agg->tasks[i];
    return NULL;
}

static void
complete(const char *task_id)
{
    wf_ref_ctx c = as("alice").ref;
    wf_ref_completion done;
    wf_error err;
    wf_code rc = wf_instances_complete_task(&c, task_id, "{}", NULL, &done, &err);
    ck_assert_msg(rc == WF_OK, "complete: %s %s", wf_code_reason(rc), err.msg);
}

/* The v1 instance of key with review done: its token in a, approve open. */
static wf_instance_row
start_at_a(const char *key)
{
    wf_instance_row in = start_v1(key);
    wf_aggregate agg = kit_aggregate(in.id);
    complete(task_of(&agg, "review", WF_TASK_OPEN)->id);
    return in;
}

static wf_code
migrate(const char *id, int32_t version, const wf_net_place_map *map, size_t n, bool dry,
        wf_runtime_migration *out, wf_error *err)
{
    wf_runtime_ctx c = as("ops");
    wf_runtime_migrate_in in = {.instance_id = id,
                                .target_version = version,
                                .mapping = map,
                                .n_mapping = n,
                                .dry_run = dry};
    return wf_runtime_migrate_instance(&c, &in, NULL, out, err);
}

static void
migrate_ok(const char *id, int32_t version, const wf_net_place_map *map, size_t n, bool dry,
           wf_runtime_migration *out)
{
    wf_error err;
    wf_code rc = migrate(id, version, map, n, dry, out, &err);
    ck_assert_msg(rc == WF_OK, "migrate: %s %s", wf_code_reason(rc), err.msg);
}

static bool
has_problem(const wf_validation_error *v, size_t n, const char *code, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].code, code) == 0 && strcmp(v[i].path, path) == 0)
            return true;
    return false;
}

/* ---- the pure rule --------------------------------------------------------------------- */

WF_TEST(test_pure_maps_tokens_and_keeps_items)
{
    const wf_net *from = v1("p"), *to = v_renamed("p");
    const wf_token toks[] = {{"t1", "a", 1}};
    const char *bound[] = {"t1"};
    const wf_work_item items[] = {{"w1", "approve", WF_TRIGGER_USER, bound, 1}};
    wf_net_state s = {toks, 1, items, 1, 2}, out;
    wf_net_diff d;
    wf_validation_error *v;
    size_t nv;
    wf_error err;

    /* a has no place of that id in the target: one problem. */
    ck_assert_int_eq(wf_net_migrate(from, to, &s, NULL, 0, "{}", arena, &out, &d, &v, &nv, &err),
                     WF_OK);
    ck_assert_uint_eq(nv, 1);
    ck_assert_str_eq(v[0].code, "UNMAPPED_PLACE");
    ck_assert_str_eq(v[0].path, "place_mapping");
    ck_assert_ptr_nonnull(strstr(v[0].message, "\"a\""));

    /* Mapped: the token keeps its id, the item is kept, nothing else. */
    const wf_net_place_map map[] = {{"a", "a2"}};
    ck_assert_int_eq(wf_net_migrate(from, to, &s, map, 1, "{}", arena, &out, &d, &v, &nv, &err),
                     WF_OK);
    ck_assert_uint_eq(nv, 0);
    ck_assert_uint_eq(out.n_tokens, 1);
    ck_assert_str_eq(out.tokens[0].id, "t1");
    ck_assert_str_eq(out.tokens[0].place_id, "a2");
    ck_assert_uint_eq(out.n_items, 1);
    ck_assert_str_eq(out.items[0].id, "w1");
    ck_assert_uint_eq(d.n_created, 0);
    ck_assert_uint_eq(d.n_withdrawn, 0);
    ck_assert_uint_eq(d.n_added_tokens, 0);
    ck_assert_uint_eq(d.n_removed_tokens, 0);
    ck_assert(!d.ended);
}
END_TEST

WF_TEST(test_pure_lists_every_problem)
{
    const wf_net *from = v1("p"), *to = v_broken("p");
    const wf_token toks[] = {{"t1", "s", 1}, {"t2", "a", 2}, {"t3", "b", 3}};
    const char *b1[] = {"t1"}, *b2[] = {"t2"}, *b3[] = {"t3"};
    const wf_work_item items[] = {{"w1", "review", WF_TRIGGER_USER, b1, 1},
                                  {"w2", "approve", WF_TRIGGER_USER, b2, 1},
                                  {"w3", "ship", WF_TRIGGER_AUTO, b3, 1}};
    wf_net_state s = {toks, 3, items, 3, 4}, out;
    wf_net_diff d;
    wf_validation_error *v;
    size_t nv;
    wf_error err;
    const wf_net_place_map map[] = {{"zz", "s"}, {"s", "nowhere"}, {"s", "s"}};
    ck_assert_int_eq(wf_net_migrate(from, to, &s, map, 3, "{}", arena, &out, &d, &v, &nv, &err),
                     WF_OK);
    ck_assert(has_problem(v, nv, "UNKNOWN_SOURCE_PLACE", "place_mapping[0].from_place"));
    ck_assert(has_problem(v, nv, "UNKNOWN_TARGET_PLACE", "place_mapping[1].to_place"));
    ck_assert(has_problem(v, nv, "DUPLICATE_MAPPING", "place_mapping[2].from_place"));
    ck_assert(has_problem(v, nv, "UNMAPPED_PLACE", "place_mapping"));
    ck_assert(has_problem(v, nv, "TRANSITION_MISSING", "target_version"));
    ck_assert(has_problem(v, nv, "JOB_TYPE_CHANGED", "target_version"));
    /* s maps through entry 1 (first wins) to a place the target lacks: a
     * second UNMAPPED_PLACE, for s. */
    ck_assert_uint_eq(nv, 7);
}
END_TEST

WF_TEST(test_pure_a_changed_trigger_is_a_problem)
{
    static const char *const p[] = {"s", "a", "b", "e"};
    static const tdef t[] = {{"review", J, "review", "s", "a"},
                             {"approve", U, NULL, "a", "b"},
                             {"ship", J, "ship", "b", "e"}};
    const wf_net *from = v1("p"), *to = mk("p", 2, p, 4, t, 3);
    const wf_token toks[] = {{"t1", "s", 1}};
    const char *b1[] = {"t1"};
    const wf_work_item items[] = {{"w1", "review", WF_TRIGGER_USER, b1, 1}};
    wf_net_state s = {toks, 1, items, 1, 2}, out;
    wf_net_diff d;
    wf_validation_error *v;
    size_t nv;
    wf_error err;
    ck_assert_int_eq(wf_net_migrate(from, to, &s, NULL, 0, "{}", arena, &out, &d, &v, &nv, &err),
                     WF_OK);
    ck_assert_uint_eq(nv, 1);
    ck_assert_str_eq(v[0].code, "TRIGGER_CHANGED");
    ck_assert_ptr_nonnull(strstr(v[0].message, "USER"));
}
END_TEST

/* ---- the runtime ------------------------------------------------------------------- */

WF_TEST(test_claimed_task_is_kept)
{
    wf_instance_row in = start_v1("keep");
    wf_aggregate agg = kit_aggregate(in.id);
    const char *review = task_of(&agg, "review", WF_TASK_OPEN)->id;
    wf_ref_ctx ac = as("alice").ref;
    wf_task_row claimed;
    wf_error err;
    ck_assert_int_eq(wf_referral_claim(&ac, review, NULL, &claimed, &err), WF_OK);
    wf_runtime_ctx dev = as("dev");
    kit_deploy(&dev, v_renamed("keep"));
    size_t before = kit_n_events(in.id);

    wf_runtime_migration out;
    migrate_ok(in.id, 2, NULL, 0, false, &out);
    ck_assert(out.applied);
    ck_assert_int_eq(out.instance.definition_version, 2);
    ck_assert_int_eq(out.source_version, 1);
    ck_assert_uint_eq(out.n_kept, 1);
    ck_assert_str_eq(out.kept[0].transition_id, "review");
    ck_assert_uint_eq(out.n_withdrawn + out.n_created, 0);
    ck_assert_str_eq(kit_event_types(in.id, before), "INSTANCE_MIGRATED");

    agg = kit_aggregate(in.id);
    ck_assert_int_eq(instance_of(&agg, in.id)->definition_version, 2);
    const wf_task_row *t = task_of(&agg, "review", WF_TASK_CLAIMED);
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(t->id, review);
    ck_assert_str_eq(t->claimed_by, "alice");

    json_t *d = event_data(in.id, "INSTANCE_MIGRATED");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "sourceVersion")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "targetVersion")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(d, "actor")), "ops");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(d, "keptWorkItemIds"), 0)),
                     out.kept[0].work_item_id);
    json_decref(d);

    /* The instance now runs the target: review leads to place a2. */
    complete(review);
    agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_tokens, 1);
    ck_assert_str_eq(agg.tokens[0].place_id, "a2");
    ck_assert_ptr_nonnull(task_of(&agg, "approve", WF_TASK_OPEN));
}
END_TEST

WF_TEST(test_mapping_withdraws_and_creates)
{
    wf_instance_row in = start_at_a("esc");
    wf_aggregate agg = kit_aggregate(in.id);
    const char *approve = task_of(&agg, "approve", WF_TASK_OPEN)->id;
    const char *token = agg.tokens[0].id;
    wf_runtime_ctx dev = as("dev");
    kit_deploy(&dev, v_escalate("esc"));
    size_t before = kit_n_events(in.id);

    const wf_net_place_map map[] = {{"a", "x"}};
    wf_runtime_migration out;
    migrate_ok(in.id, 2, map, 1, false, &out);
    ck_assert_uint_eq(out.n_tokens, 1);
    ck_assert_str_eq(out.tokens[0].token_id, token);
    ck_assert_str_eq(out.tokens[0].from_place, "a");
    ck_assert_str_eq(out.tokens[0].to_place, "x");
    ck_assert_uint_eq(out.n_withdrawn, 1);
    ck_assert_str_eq(out.withdrawn[0].transition_id, "approve");
    ck_assert_uint_eq(out.n_created, 1);
    ck_assert_str_eq(out.created[0].transition_id, "escalate");
    ck_assert_str_ne(out.created[0].work_item_id, "");
    ck_assert_str_eq(kit_event_types(in.id, before),
                     "INSTANCE_MIGRATED WORKITEM_WITHDRAWN TASK_CANCELLED TRANSITION_ENABLED "
                     "TASK_CREATED");

    agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_tokens, 1);
    ck_assert_str_eq(agg.tokens[0].id, token);
    ck_assert_str_eq(agg.tokens[0].place_id, "x");
    ck_assert_ptr_nonnull(task_of(&agg, "approve", WF_TASK_CANCELLED));
    const wf_task_row *esc = task_of(&agg, "escalate", WF_TASK_OPEN);
    ck_assert_ptr_nonnull(esc);

    /* The withdrawn task is closed; the new one moves the case on. */
    wf_ref_ctx ac = as("alice").ref;
    wf_ref_completion done;
    wf_error err;
    ck_assert_int_eq(wf_instances_complete_task(&ac, approve, "{}", NULL, &done, &err),
                     WF_E_TASK_NOT_OPEN);
    complete(esc->id);
    agg = kit_aggregate(in.id);
    ck_assert_str_eq(agg.tokens[0].place_id, "b");
    ck_assert_uint_eq(agg.n_jobs, 1);
}
END_TEST

WF_TEST(test_mapping_to_end_completes)
{
    wf_instance_row in = start_at_a("fin");
    wf_runtime_ctx dev = as("dev");
    kit_deploy(&dev, v_escalate("fin"));
    const wf_net_place_map map[] = {{"a", "e"}};
    wf_runtime_migration out;
    migrate_ok(in.id, 2, map, 1, false, &out);
    ck_assert(out.completes);
    ck_assert_int_eq(out.instance.status, WF_INSTANCE_COMPLETED);
    ck_assert_uint_eq(out.n_withdrawn, 1);
}
END_TEST

WF_TEST(test_job_is_kept_and_a_changed_type_refused)
{
    wf_instance_row in = start_at_a("job");
    wf_aggregate agg = kit_aggregate(in.id);
    complete(task_of(&agg, "approve", WF_TASK_OPEN)->id);
    agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_jobs, 1);
    const char *job = agg.jobs[0].id;
    wf_runtime_ctx dev = as("dev");
    kit_deploy(&dev, v_broken("job"));   /* v2: ship has job type ship2 */
    kit_deploy(&dev, v_escalate("job")); /* v3: ship unchanged */

    wf_runtime_migration out;
    wf_error err;
    ck_assert_int_eq(migrate(in.id, 2, NULL, 0, false, &out, &err), WF_E_MIGRATION_INVALID);
    ck_assert_str_eq(violations, "target_version=JOB_TYPE_CHANGED");
    ck_assert_ptr_nonnull(strstr(err.msg, "1 problem"));

    migrate_ok(in.id, 3, NULL, 0, false, &out);
    ck_assert_uint_eq(out.n_kept, 1);
    agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_jobs, 1);
    ck_assert_str_eq(agg.jobs[0].id, job);
    ck_assert_str_eq(agg.jobs[0].job_type, "ship");
    ck_assert_int_eq(instance_of(&agg, in.id)->definition_version, 3);
}
END_TEST

WF_TEST(test_dry_run_changes_nothing)
{
    wf_instance_row in = start_at_a("dry");
    wf_runtime_ctx dev = as("dev");
    kit_deploy(&dev, v_escalate("dry"));
    size_t before = kit_n_events(in.id);
    const wf_net_place_map map[] = {{"a", "x"}};
    wf_runtime_migration out;
    migrate_ok(in.id, 2, map, 1, true, &out);
    ck_assert(!out.applied);
    ck_assert_uint_eq(out.n_problems, 0);
    ck_assert_int_eq(out.instance.definition_version, 1);
    ck_assert_int_eq(out.target_version, 2);
    ck_assert_uint_eq(out.n_withdrawn, 1);
    ck_assert_uint_eq(out.n_created, 1);
    ck_assert_str_eq(out.created[0].work_item_id, "");
    ck_assert_str_eq(out.created[0].transition_id, "escalate");
    ck_assert_uint_eq(kit_n_events(in.id), before);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_int_eq(instance_of(&agg, in.id)->definition_version, 1);
    ck_assert_str_eq(agg.tokens[0].place_id, "a");
    ck_assert_ptr_nonnull(task_of(&agg, "approve", WF_TASK_OPEN));
}
END_TEST

WF_TEST(test_problems_in_a_dry_run_and_a_refused_run)
{
    wf_instance_row in = start_at_a("bad");
    wf_runtime_ctx dev = as("dev");
    kit_deploy(&dev, v_broken("bad"));
    size_t before = kit_n_events(in.id);
    wf_runtime_migration out;
    migrate_ok(in.id, 2, NULL, 0, true, &out);
    ck_assert_uint_eq(out.n_problems, 1);
    ck_assert_str_eq(out.problems[0].code, "UNMAPPED_PLACE");
    ck_assert_str_eq(violations, "");

    wf_error err;
    ck_assert_int_eq(migrate(in.id, 2, NULL, 0, false, &out, &err), WF_E_MIGRATION_INVALID);
    ck_assert_str_eq(violations, "place_mapping=UNMAPPED_PLACE");
    ck_assert_uint_eq(kit_n_events(in.id), before);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_int_eq(instance_of(&agg, in.id)->definition_version, 1);

    /* Mapped to c, the approve item is kept (approve reads c in v2). */
    const wf_net_place_map map[] = {{"a", "c"}};
    migrate_ok(in.id, 2, map, 1, false, &out);
    ck_assert_uint_eq(out.n_kept, 1);
    ck_assert_str_eq(out.kept[0].transition_id, "approve");
}
END_TEST

WF_TEST(test_steps_follow_their_compiled_net)
{
    wf_runtime_ctx dev = as("dev");
    wf_step s1[] = {{.id = "a", .has_job = true, .job_type = "A"},
                    {.id = "b", .has_job = true, .job_type = "B"}};
    wf_step s2[] = {{.id = "a", .has_job = true, .job_type = "A"},
                    {.id = "c", .has_job = true, .job_type = "C"}};
    wf_step s3[] = {{.id = "a", .has_job = true, .job_type = "A2"}};
    wf_net n1 = {.key = "steps", .steps = s1, .n_steps = 2};
    wf_net n2 = {.key = "steps", .steps = s2, .n_steps = 2};
    wf_net n3 = {.key = "steps", .steps = s3, .n_steps = 1};
    wf_runtime_deployed d;
    wf_error err;
    wf_runtime_deploy_in in1 = {WF_DEF_STEPS, &n1, false}, in2 = {WF_DEF_STEPS, &n2, false},
                         in3 = {WF_DEF_STEPS, &n3, false};
    ck_assert_int_eq(wf_runtime_deploy(&dev, &in1, NULL, &d, &err), WF_OK);
    wf_start_spec spec = {.definition_key = "steps", .version = 1};
    wf_instance_row in = kit_start(&dev.ref, &spec, NULL);
    ck_assert_int_eq(wf_runtime_deploy(&dev, &in2, NULL, &d, &err), WF_OK);
    ck_assert_int_eq(wf_runtime_deploy(&dev, &in3, NULL, &d, &err), WF_OK);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_jobs, 1);
    const char *job = agg.jobs[0].id;

    wf_runtime_migration out;
    ck_assert_int_eq(migrate(in.id, 3, NULL, 0, false, &out, &err), WF_E_MIGRATION_INVALID);
    ck_assert_str_eq(violations, "target_version=JOB_TYPE_CHANGED");

    migrate_ok(in.id, 2, NULL, 0, false, &out);
    ck_assert_uint_eq(out.n_kept, 1);
    ck_assert_str_eq(out.kept[0].transition_id, "a");

    /* The job of step a, completed, leads to step c of version 2. */
    wf_runtime_activation act = {.job_type = "A", .worker = "w"};
    wf_job_row *rows;
    size_t n;
    ck_assert_int_eq(wf_runtime_activate_jobs(&dev, &act, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(rows[0].id, job);
    ck_assert_int_eq(wf_runtime_complete_job(&dev, rows[0].key, "{}", NULL, &err), WF_OK);
    agg = kit_aggregate(in.id);
    size_t c = 0;
    for (size_t i = 0; i < agg.n_jobs; i++)
        c += strcmp(agg.jobs[i].job_type, "C") == 0;
    ck_assert_uint_eq(c, 1);
}
END_TEST

/* key: s -ship(job "ship")-> a, then a -> e by `last` (t). */
static void
deploy_wait(const char *key, int32_t version, wf_transition last)
{
    static const char *const p[] = {"s", "a", "e"};
    static const tdef td[] = {{"ship", J, "ship", "s", "a"}, {"wait", J, "x", "a", "e"}};
    wf_net *n = mk(key, version, p, 3, td, 2);
    last.id = "wait";
    n->transitions[1] = last;
    wf_runtime_ctx dev = as("dev");
    kit_deploy(&dev, n);
}

/* The v1 instance of key past its ship job: waiting in a. */
static wf_instance_row
start_waiting(const char *key, wf_transition last)
{
    deploy_wait(key, 1, last);
    wf_runtime_ctx dev = as("dev");
    wf_start_spec spec = {.definition_key = key, .version = 1};
    wf_instance_row in = kit_start(&dev.ref, &spec, NULL);
    wf_runtime_activation act = {.job_type = "ship", .worker = "w"};
    wf_job_row *rows;
    size_t n;
    wf_error err;
    ck_assert_int_eq(wf_runtime_activate_jobs(&dev, &act, &rows, &n, &err), WF_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(wf_runtime_complete_job(&dev, rows[0].key, "{}", NULL, &err), WF_OK);
    return in;
}

WF_TEST(test_timer_is_kept_with_its_due_time)
{
    wf_transition t = {.trigger = WF_TRIGGER_TIME, .delay_ms = 3600 * 1000};
    wf_instance_row in = start_waiting("timer", t);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_timers, 1);
    wf_timer_row before = agg.timers[0];
    /* Version 2 waits two hours: the armed timer keeps its due time. */
    t.delay_ms = 2 * 3600 * 1000;
    deploy_wait("timer", 2, t);
    wf_runtime_migration out;
    migrate_ok(in.id, 2, NULL, 0, false, &out);
    ck_assert_uint_eq(out.n_kept, 1);
    ck_assert_int_eq(out.kept[0].trigger, WF_TRIGGER_TIME);
    agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_timers, 1);
    ck_assert_str_eq(agg.timers[0].id, before.id);
    ck_assert_int_eq(agg.timers[0].due_at, before.due_at);
    /* A version where the wait is a USER task: the trigger changed. */
    wf_transition user = {.trigger = WF_TRIGGER_USER,
                          .assignee = {.kind = WF_NET_ASSIGNEE_USER, .ids = alice, .n_ids = 1}};
    deploy_wait("timer", 3, user);
    wf_error err;
    ck_assert_int_eq(migrate(in.id, 3, NULL, 0, false, &out, &err), WF_E_MIGRATION_INVALID);
    ck_assert_str_eq(violations, "target_version=TRIGGER_CHANGED");
}
END_TEST

WF_TEST(test_subscription_is_kept_and_a_changed_signal_refused)
{
    wf_transition t = {.trigger = WF_TRIGGER_MSG, .signal_name = "payment"};
    wf_instance_row in = start_waiting("msg", t);
    wf_aggregate agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_subscriptions, 1);
    const char *sub = agg.subscriptions[0].id;
    t.signal_name = "refund";
    deploy_wait("msg", 2, t);
    wf_runtime_migration out;
    wf_error err;
    ck_assert_int_eq(migrate(in.id, 2, NULL, 0, false, &out, &err), WF_E_MIGRATION_INVALID);
    ck_assert_str_eq(violations, "target_version=SIGNAL_CHANGED");
    /* The same signal, the wait kept; the next deploy differs elsewhere. */
    static const char *const p[] = {"s", "a", "e"};
    static const tdef td[] = {{"ship", J, "ship", "s", "a"}, {"wait", J, "x", "a", "e"}};
    wf_net *n = mk("msg", 3, p, 3, td, 2);
    n->transitions[1] = (wf_transition){
        .id = "wait", .trigger = WF_TRIGGER_MSG, .signal_name = "payment", .name = "Paid"};
    wf_runtime_ctx dev = as("dev");
    kit_deploy(&dev, n);
    migrate_ok(in.id, 3, NULL, 0, false, &out);
    ck_assert_uint_eq(out.n_kept, 1);
    agg = kit_aggregate(in.id);
    ck_assert_uint_eq(agg.n_subscriptions, 1);
    ck_assert_str_eq(agg.subscriptions[0].id, sub);
}
END_TEST

WF_TEST(test_refusals_and_the_no_op)
{
    wf_instance_row in = start_v1("ref");
    wf_runtime_migration out;
    wf_error err;
    size_t before = kit_n_events(in.id);

    /* The version it runs: nothing written. */
    migrate_ok(in.id, 1, NULL, 0, false, &out);
    ck_assert(!out.applied);
    ck_assert_int_eq(out.instance.definition_version, 1);
    ck_assert_uint_eq(kit_n_events(in.id), before);

    ck_assert_int_eq(migrate(in.id, 7, NULL, 0, false, &out, &err), WF_E_DEFINITION_NOT_FOUND);
    ck_assert_str_eq(err.msg, "definition \"ref\" has no version 7");
    ck_assert_int_eq(migrate(in.id, 0, NULL, 0, false, &out, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(violations, "target_version=INVALID_ARGUMENT");
    const wf_net_place_map empty[] = {{"a", ""}};
    ck_assert_int_eq(migrate(in.id, 2, empty, 1, false, &out, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(violations, "place_mapping[0].to_place=INVALID_ARGUMENT");
    ck_assert_int_eq(migrate("nope", 2, NULL, 0, false, &out, &err), WF_E_INSTANCE_NOT_FOUND);

    /* Suspended, then ended. */
    wf_runtime_ctx ops = as("ops");
    wf_instance_row r;
    ck_assert_int_eq(wf_runtime_suspend_instance(&ops, in.id, "", NULL, &r, &err), WF_OK);
    ck_assert_int_eq(migrate(in.id, 1, NULL, 0, false, &out, &err), WF_E_INSTANCE_SUSPENDED);
    ck_assert_int_eq(wf_instances_cancel(&ops, in.id, "stop", false, NULL, &r, &err), WF_OK);
    ck_assert_int_eq(migrate(in.id, 1, NULL, 0, false, &out, &err), WF_E_INSTANCE_NOT_RUNNING);

    /* An AD_HOC root has no net; its child is not a root. */
    wf_start_spec spec = {.definition_key = "adhoc"};
    wf_instance_row adhoc = kit_start(&ops.ref, &spec, NULL);
    ck_assert_int_eq(migrate(adhoc.id, 1, NULL, 0, false, &out, &err), WF_E_NOT_A_NET_INSTANCE);
    wf_assign_spec as_spec = {.parent_id = adhoc.id,
                              .definition_key = "adhoc",
                              .title = "look",
                              .kind = WF_REF_ASSIGNEE_USER,
                              .ids = alice,
                              .n_ids = 1};
    wf_ref_assignment assigned;
    ck_assert_int_eq(wf_referral_assign(&ops.ref, &as_spec, NULL, &assigned, &err), WF_OK);
    ck_assert_int_eq(migrate(assigned.instance.id, 1, NULL, 0, false, &out, &err),
                     WF_E_INSTANCE_NOT_ROOT);
}
END_TEST

int
main(void)
{
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("migrate", "migrate", kit_setup, kit_teardown, 0));
}
