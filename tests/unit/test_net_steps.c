/*
 * Unit tests of server/engine/net_steps: compiling a step list into a net,
 * its validation (every finding at once, at step paths), the first-match
 * routing and the goto firing option of the net engine, and the canonical
 * JSON of a step list.
 */
#include <stdio.h>
#include <string.h>

#include "expr.h"
#include "net.h"
#include "engine_kit.h"
#include "test_support.h"
#include "wf_arena.h"

static wf_arena *A;

static wf_net *
list_new(const char *key, size_t cap)
{
    wf_net *n = wf_arena_calloc(A, 1, sizeof *n);
    n->key = key;
    n->steps = wf_arena_calloc(A, cap, sizeof *n->steps);
    return n;
}

static wf_step *
S(wf_net *n, const char *id)
{
    wf_step *s = &n->steps[n->n_steps++];
    s->id = id;
    s->next = wf_arena_calloc(A, 4, sizeof *s->next);
    return s;
}

static wf_step *
job(wf_net *n, const char *id, const char *type)
{
    wf_step *s = S(n, id);
    s->has_job = true;
    s->job_type = type;
    return s;
}

static void
rule(wf_step *s, const char *guard, const char *step)
{
    s->next[s->n_next++] = (wf_step_rule){guard, step};
}

static wf_net *
compile_ok(const wf_net *in)
{
    wf_net *out = NULL;
    wf_validation_error *v = NULL;
    size_t n = 0;
    wf_error err;
    ck_assert_int_eq(wf_steps_compile(in, A, &out, &v, &n, &err), WF_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(v[i].severity != WF_SEVERITY_ERROR, "%s at %s: %s", v[i].code, v[i].path,
                      v[i].message);
    ck_assert_ptr_nonnull(out);
    return out;
}

static bool
has(const wf_validation_error *v, size_t n, const char *code, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].code, code) == 0 && strcmp(v[i].path, path) == 0)
            return true;
    return false;
}

static void
dump(const wf_validation_error *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "  %s %s: %s\n", v[i].code, v[i].path, v[i].message);
}

/* ---- compiling ------------------------------------------------------------------ */

WF_TEST(test_compiles_the_documented_shape)
{
    wf_net *in = list_new("checkout", 8);
    wf_step *r = job(in, "reserve", "reserve-stock");
    r->compensation_job_type = "release-stock";
    r->retry.max_attempts = 5;
    wf_step *c = job(in, "charge", "charge");
    rule(c, ".declined", "reserve");
    wf_step *w = S(in, "carrier");
    w->has_await = true;
    w->signal_name = "picked_up";
    w->correlation = WF_CORRELATION_AGGREGATE;
    w->timeout_ms = 1000;
    w->on_timeout = "chase";
    wf_step *ch = S(in, "chase");
    ch->has_user = true;
    ch->assignee.kind = WF_NET_ASSIGNEE_GROUP;
    ch->assignee.ids = (const char *[]){"logistics"};
    ch->assignee.n_ids = 1;
    wf_step *z = S(in, "nap");
    z->has_sleep = true;
    z->duration_ms = 10;
    wf_net *net = compile_ok(in);

    ck_assert_uint_eq(net->n_places, 7); /* start, 5 steps, end */
    ck_assert_int_eq(net->places[0].kind, WF_PLACE_START);
    ck_assert_str_eq(net->places[0].id, WF_STEPS_START_PLACE);
    ck_assert_str_eq(net->places[1].id, "reserve:ready");
    ck_assert_int_eq(net->places[6].kind, WF_PLACE_END);
    /* :begin, 5 steps, the timeout of carrier */
    ck_assert_uint_eq(net->n_transitions, 7);
    int t = wf_net_transition_index(net, "reserve");
    ck_assert_int_ge(t, 0);
    ck_assert_int_eq(net->transitions[t].trigger, WF_TRIGGER_AUTO);
    ck_assert_str_eq(net->transitions[t].job_type, "reserve-stock");
    ck_assert_str_eq(net->transitions[t].compensation_job_type, "release-stock");
    ck_assert_int_eq(net->transitions[t].retry.max_attempts, 5);
    ck_assert(net->transitions[t].first_match);
    ck_assert_str_eq(net->transitions[t].step_id, "reserve");
    t = wf_net_transition_index(net, "carrier");
    ck_assert_int_eq(net->transitions[t].trigger, WF_TRIGGER_MSG);
    ck_assert_int_eq(net->transitions[t].correlation, WF_CORRELATION_AGGREGATE);
    t = wf_net_transition_index(net, "carrier:timeout");
    ck_assert_int_eq(net->transitions[t].trigger, WF_TRIGGER_TIME);
    ck_assert_int_eq(net->transitions[t].delay_ms, 1000);
    ck_assert(!net->transitions[t].fails);
    ck_assert_str_eq(net->transitions[t].step_id, "carrier");
    t = wf_net_transition_index(net, "chase");
    ck_assert_int_eq(net->transitions[t].trigger, WF_TRIGGER_USER);
    t = wf_net_transition_index(net, "nap");
    ck_assert_int_eq(net->transitions[t].trigger, WF_TRIGGER_TIME);

    /* charge: its rule first, then the default arc to the following step. */
    int rule_arc = -1, default_arc = -1;
    for (size_t i = 0; i < net->n_arcs; i++)
        if (strcmp(net->arcs[i].source, "charge") == 0) {
            if (net->arcs[i].is_default)
                default_arc = (int)i;
            else
                rule_arc = (int)i;
        }
    ck_assert_int_ge(rule_arc, 0);
    ck_assert_int_gt(default_arc, rule_arc);
    ck_assert_str_eq(net->arcs[rule_arc].target, "reserve:ready");
    ck_assert_str_eq(net->arcs[rule_arc].guard, ".declined");
    ck_assert_str_eq(net->arcs[default_arc].target, "carrier:ready");
    /* The compiled net passes the net validation untouched. */
    wf_validation_error *v;
    size_t n;
    wf_error err;
    ck_assert_int_eq(wf_net_validate(net, A, &v, &n, &err), WF_OK);
    dump(v, n);
    ck_assert_uint_eq(n, 0);
}
END_TEST

WF_TEST(test_await_without_on_timeout_fails)
{
    wf_net *in = list_new("k", 2);
    wf_step *w = S(in, "wait");
    w->has_await = true;
    w->signal_name = "go";
    w->timeout_ms = 500;
    wf_net *net = compile_ok(in);
    int t = wf_net_transition_index(net, "wait:timeout");
    ck_assert_int_ge(t, 0);
    ck_assert(net->transitions[t].fails);

    /* Firing it is refused: the runtime fails the step instead. */
    wf_net_state st, out;
    wf_net_diff d;
    wf_error err;
    ck_assert_int_eq(wf_net_start(net, NULL, "{}", A, &st, &d, &err), WF_OK);
    ck_assert_uint_eq(st.n_items, 2); /* the wait and its timeout */
    const char *timeout_item = NULL;
    for (size_t i = 0; i < st.n_items; i++)
        if (strcmp(st.items[i].transition_id, "wait:timeout") == 0)
            timeout_item = st.items[i].id;
    ck_assert_ptr_nonnull(timeout_item);
    ck_assert_int_eq(wf_net_fire(net, &st, timeout_item, "{}", A, &out, &d, &err),
                     WF_E_NO_ARC_MATCHED);
    ck_assert_ptr_nonnull(strstr(err.msg, "step \"wait\" timed out"));
}
END_TEST

/* ---- validation -------------------------------------------------------------------- */

WF_TEST(test_validation_lists_every_error)
{
    wf_net *in = list_new("bad", 12);
    in->places = wf_arena_calloc(A, 1, sizeof *in->places);
    in->places[0] = (wf_place){"p", NULL, WF_PLACE_START};
    in->n_places = 1;
    wf_step *a = job(in, "a", "t");
    rule(a, ".x >", "b");     /* guard does not compile */
    rule(a, ".y", "nowhere"); /* unknown step */
    rule(a, ".z", "");        /* no step */
    job(in, "a", "t");        /* duplicate id */
    S(in, "none");            /* no kind */
    wf_step *two = job(in, "two", "t");
    two->has_sleep = true; /* two kinds */
    two->duration_ms = 5;
    job(in, "b", ""); /* job without job_type */
    wf_step *w = S(in, "w");
    w->has_await = true;
    w->signal_name = "s";
    w->on_timeout = "b";       /* without a timeout */
    w->retry.max_attempts = 2; /* retry on an await */
    wf_step *w2 = S(in, "w2");
    w2->has_await = true;
    w2->signal_name = "s";
    w2->timeout_ms = 10;
    w2->on_timeout = "ghost"; /* unknown step */
    wf_step *u = S(in, "u");
    u->has_user = true; /* no assignee */
    wf_step *z = S(in, "z");
    z->has_sleep = true; /* neither duration nor due_expression */
    S(in, "bad id!")->has_job = true;

    wf_net *out = NULL;
    wf_validation_error *v = NULL;
    size_t n = 0;
    wf_error err;
    ck_assert_int_eq(wf_steps_compile(in, A, &out, &v, &n, &err), WF_OK);
    ck_assert_ptr_null(out);
    dump(v, n);
    ck_assert(has(v, n, "NET_FIELD_CONFLICT", "places"));
    ck_assert(has(v, n, "GUARD_INVALID", "steps[0].next[0].guard"));
    ck_assert(has(v, n, "UNKNOWN_STEP", "steps[0].next[1].step"));
    ck_assert(has(v, n, "REQUIRED", "steps[0].next[2].step"));
    ck_assert(has(v, n, "DUPLICATE_ID", "steps[1].id"));
    ck_assert(has(v, n, "STEP_KIND_MISSING", "steps[2]"));
    ck_assert(has(v, n, "STEP_KIND_CONFLICT", "steps[3]"));
    ck_assert(has(v, n, "TRIGGER_FIELD_MISSING", "steps[4].job.job_type"));
    ck_assert(has(v, n, "STEP_FIELD_CONFLICT", "steps[5].await_signal.on_timeout"));
    ck_assert(has(v, n, "STEP_FIELD_CONFLICT", "steps[5].retry"));
    ck_assert(has(v, n, "UNKNOWN_STEP", "steps[6].await_signal.on_timeout"));
    ck_assert(has(v, n, "TRIGGER_FIELD_MISSING", "steps[7].user.assignee"));
    ck_assert(has(v, n, "TRIGGER_FIELD_MISSING", "steps[8].sleep.duration"));
    ck_assert(has(v, n, "INVALID_VALUE", "steps[9].id"));
    /* Nothing names the compiled net. */
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(strncmp(v[i].path, "transitions", 11) != 0 &&
                          strncmp(v[i].path, "arcs", 4) != 0,
                      "%s at %s", v[i].code, v[i].path);
}
END_TEST

/* A user step's task expressions reach its USER transition, are kept by
 * the canonical JSON, and are reported at the step's path when they do
 * not compile. */
WF_TEST(test_user_step_task_expressions)
{
    static const char *ann[] = {"ann"};
    wf_net *in = list_new("ux", 1);
    wf_step *u = S(in, "review");
    u->has_user = true;
    u->assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = ann, .n_ids = 1};
    u->priority_expression = ".p";
    u->task_due_expression = ".due";
    u->task_follow_up_expression = ".follow";
    wf_net *net = compile_ok(in);
    const wf_transition *t = &net->transitions[wf_net_transition_index(net, "review")];
    ck_assert_str_eq(t->priority_expression, ".p");
    ck_assert_str_eq(t->task_due_expression, ".due");
    ck_assert_str_eq(t->task_follow_up_expression, ".follow");
    char *j1, *j2;
    wf_error err;
    ck_assert_int_eq(wf_net_to_json(net, A, &j1, &err), WF_OK);
    wf_net *back;
    ck_assert_int_eq(wf_net_from_json(j1, A, &back, &err), WF_OK);
    ck_assert_str_eq(back->steps[0].task_due_expression, ".due");
    t = &back->transitions[wf_net_transition_index(back, "review")];
    ck_assert_str_eq(t->task_follow_up_expression, ".follow");
    ck_assert_int_eq(wf_net_to_json(back, A, &j2, &err), WF_OK);
    ck_assert_str_eq(j1, j2);

    u->priority_expression = ".p |";
    u->task_due_expression = "[";
    u->task_follow_up_expression = ".f)";
    wf_net *out = NULL;
    wf_validation_error *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(wf_steps_compile(in, A, &out, &v, &n, &err), WF_OK);
    ck_assert_ptr_null(out);
    dump(v, n);
    ck_assert(has(v, n, "EXPRESSION_INVALID", "steps[0].user.priority_expression"));
    ck_assert(has(v, n, "EXPRESSION_INVALID", "steps[0].user.due_expression"));
    ck_assert(has(v, n, "EXPRESSION_INVALID", "steps[0].user.follow_up_expression"));
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(strstr(v[i].message, "task_") == NULL, "%s", v[i].message);
}
END_TEST

WF_TEST(test_empty_list)
{
    wf_net *in = list_new("", 1);
    wf_net *out = NULL;
    wf_validation_error *v = NULL;
    size_t n = 0;
    wf_error err;
    ck_assert_int_eq(wf_steps_compile(in, A, &out, &v, &n, &err), WF_OK);
    ck_assert_ptr_null(out);
    ck_assert(has(v, n, "STEPS_EMPTY", "steps"));
    ck_assert(has(v, n, "REQUIRED", "key"));
}
END_TEST

WF_TEST(test_limits)
{
    /* 499 awaits with timeouts, 2000 rules: the compiled net stays within
     * the net's limits; one step more is refused. */
    wf_net *in = list_new("big", 500);
    for (int i = 0; i < 499; i++) {
        wf_step *w = S(in, wf_arena_printf(A, "s%d", i));
        w->has_await = true;
        w->signal_name = "go";
        w->timeout_ms = 1000;
        w->on_timeout = "s0";
        w->next = wf_arena_calloc(A, 5, sizeof *w->next);
        for (int r = 0; r < (i < 3 ? 5 : 4); r++)
            rule(w, ".x", "s0");
    }
    size_t rules = 0;
    for (size_t i = 0; i < in->n_steps; i++)
        rules += in->steps[i].n_next;
    ck_assert_uint_eq(rules, 1999);
    in->steps[3].next[in->steps[3].n_next++] = (wf_step_rule){".y", "s1"};
    wf_net *net = compile_ok(in);
    ck_assert_uint_le(net->n_transitions, WF_NET_MAX_NODES);
    ck_assert_uint_le(net->n_arcs, WF_NET_MAX_ARCS);

    job(in, "one-more", "t");
    wf_net *out = NULL;
    wf_validation_error *v = NULL;
    size_t n = 0;
    wf_error err;
    ck_assert_int_eq(wf_steps_compile(in, A, &out, &v, &n, &err), WF_OK);
    ck_assert_ptr_null(out);
    ck_assert(has(v, n, "TOO_MANY_ELEMENTS", "steps"));
}
END_TEST

/* ---- firing: first match and goto ------------------------------------------------- */

static const char *
item_of(const wf_net_state *st, const char *transition)
{
    for (size_t i = 0; i < st->n_items; i++)
        if (strcmp(st->items[i].transition_id, transition) == 0)
            return st->items[i].id;
    return NULL;
}

static wf_net *
routing_list(void)
{
    wf_net *in = list_new("route", 4);
    wf_step *a = job(in, "a", "t");
    rule(a, ".n > 1", "c");
    rule(a, ".n > 0", "d"); /* also true for n = 2: only the first wins */
    job(in, "b", "t");
    job(in, "c", "t");
    job(in, "d", "t");
    return compile_ok(in);
}

static void
fire_a(const wf_net *net, const char *vars, const char *goto_place, const char *want_item)
{
    wf_net_state st, out;
    wf_net_diff d;
    wf_error err;
    ck_assert_int_eq(wf_net_start(net, NULL, "{}", A, &st, &d, &err), WF_OK);
    const char *a = item_of(&st, "a");
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(wf_net_fire_goto(net, &st, a, goto_place, vars, A, &out, &d, &err), WF_OK);
    ck_assert_uint_eq(out.n_items, 1);
    ck_assert_str_eq(out.items[0].transition_id, want_item);
    ck_assert_uint_eq(d.n_fired, 1);
    ck_assert_uint_eq(d.fired[0].n_produced, 1);
}

WF_TEST(test_first_matching_rule_wins)
{
    wf_net *net = routing_list();
    fire_a(net, "{\"n\":2}", NULL, "c");
    fire_a(net, "{\"n\":1}", NULL, "d");
    fire_a(net, "{\"n\":0}", NULL, "b"); /* no rule: the following step */
}
END_TEST

WF_TEST(test_goto_overrides_the_rules)
{
    wf_net *net = routing_list();
    fire_a(net, "{\"n\":2}", "d:ready", "d");
    fire_a(net, "{\"n\":2}", "a:ready", "a"); /* back to itself */

    wf_net_state st, out;
    wf_net_diff d;
    wf_error err;
    ck_assert_int_eq(wf_net_start(net, NULL, "{}", A, &st, &d, &err), WF_OK);
    ck_assert_int_eq(
        wf_net_fire_goto(net, &st, item_of(&st, "a"), "nope:ready", "{}", A, &out, &d, &err),
        WF_E_INVALID_ARGUMENT);
}
END_TEST

WF_TEST(test_last_step_ends_the_case)
{
    wf_net *in = list_new("one", 1);
    job(in, "only", "t");
    wf_net *net = compile_ok(in);
    wf_net_state st, out;
    wf_net_diff d;
    wf_error err;
    ck_assert_int_eq(wf_net_start(net, NULL, "{}", A, &st, &d, &err), WF_OK);
    ck_assert_int_eq(wf_net_fire(net, &st, item_of(&st, "only"), "{}", A, &out, &d, &err), WF_OK);
    ck_assert(d.ended);
}
END_TEST

/* Job and user steps name resources: the compiled transition carries them,
 * the canonical JSON keeps them, findings name the step; await and sleep
 * steps refuse them. */
WF_TEST(test_step_resources)
{
    static const wf_resource_use uses[] = {{"charges", ".customer"}};
    static const wf_resource_use bad[] = {{"charges", ""}, {"charges", "nope("}};
    wf_net *in = list_new("limited", 3);
    wf_step *a = job(in, "charge", "charge");
    a->resources = uses;
    a->n_resources = 1;
    wf_step *u = S(in, "approve");
    u->has_user = true;
    u->assignee.kind = WF_NET_ASSIGNEE_USER;
    u->assignee.ids = (const char *[]){"ann"};
    u->assignee.n_ids = 1;
    u->resources = uses;
    u->n_resources = 1;
    wf_net *net = compile_ok(in);
    const wf_transition *t = &net->transitions[wf_net_transition_index(net, "charge")];
    ck_assert_uint_eq(t->n_resources, 1);
    ck_assert_str_eq(t->resources[0].name, "charges");
    ck_assert_str_eq(t->resources[0].key_expression, ".customer");
    t = &net->transitions[wf_net_transition_index(net, "approve")];
    ck_assert_uint_eq(t->n_resources, 1);
    ck_assert_uint_eq(net->transitions[wf_net_transition_index(net, ":begin")].n_resources, 0);
    char *j;
    wf_error err;
    ck_assert_int_eq(wf_net_to_json(net, A, &j, &err), WF_OK);
    wf_net *back;
    ck_assert_int_eq(wf_net_from_json(j, A, &back, &err), WF_OK);
    ck_assert_uint_eq(back->steps[0].n_resources, 1);
    ck_assert_str_eq(back->steps[0].resources[0].key_expression, ".customer");
    ck_assert_uint_eq(back->steps[1].n_resources, 1);

    wf_step *z = S(in, "nap");
    z->has_sleep = true;
    z->duration_ms = 10;
    z->resources = uses;
    z->n_resources = 1;
    a->resources = bad;
    a->n_resources = 2;
    wf_net *out = NULL;
    wf_validation_error *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(wf_steps_compile(in, A, &out, &v, &n, &err), WF_OK);
    if (!has(v, n, "STEP_FIELD_CONFLICT", "steps[2].resources") ||
        !has(v, n, "RESOURCE_DUPLICATE", "steps[0].resources[1].name") ||
        !has(v, n, "EXPRESSION_INVALID", "steps[0].resources[1].key_expression"))
        dump(v, n);
    ck_assert(has(v, n, "STEP_FIELD_CONFLICT", "steps[2].resources"));
    ck_assert(has(v, n, "RESOURCE_DUPLICATE", "steps[0].resources[1].name"));
    ck_assert(has(v, n, "EXPRESSION_INVALID", "steps[0].resources[1].key_expression"));
    ck_assert_uint_eq(n, 3);
}
END_TEST

/* ---- canonical JSON ----------------------------------------------------------------- */

WF_TEST(test_json_round_trip_keeps_steps_and_flags)
{
    wf_net *in = list_new("rt", 3);
    wf_step *a = job(in, "a", "t");
    a->name = "First";
    a->lease_ms = 2000;
    rule(a, ".x", "c");
    wf_step *w = S(in, "w");
    w->has_await = true;
    w->signal_name = "go";
    w->timeout_ms = 100;
    wf_step *c = S(in, "c");
    c->has_sleep = true;
    c->due_expression = "\"2030-01-01T00:00:00Z\"";
    wf_net *net = compile_ok(in);
    char *j1, *j2;
    wf_error err;
    ck_assert_int_eq(wf_net_to_json(net, A, &j1, &err), WF_OK);
    wf_net *back;
    ck_assert_int_eq(wf_net_from_json(j1, A, &back, &err), WF_OK);
    ck_assert_uint_eq(back->n_steps, 3);
    ck_assert_str_eq(back->steps[0].name, "First");
    ck_assert(back->steps[0].has_job);
    ck_assert_int_eq(back->steps[0].lease_ms, 2000);
    ck_assert_uint_eq(back->steps[0].n_next, 1);
    ck_assert_str_eq(back->steps[0].next[0].step, "c");
    ck_assert(back->steps[1].has_await);
    ck_assert_int_eq(back->steps[1].timeout_ms, 100);
    ck_assert(back->steps[2].has_sleep);
    int t = wf_net_transition_index(back, "w:timeout");
    ck_assert(back->transitions[t].fails);
    ck_assert(back->transitions[wf_net_transition_index(back, "a")].first_match);
    ck_assert_int_eq(wf_net_to_json(back, A, &j2, &err), WF_OK);
    ck_assert_str_eq(j1, j2);
}
END_TEST

/* ---- call steps and for_each ------------------------------------------------------- */

static wf_step *
call(wf_net *n, const char *id, const char *key)
{
    wf_step *s = S(n, id);
    s->has_call = true;
    s->call_key = key;
    return s;
}

/* A call step becomes a CALL transition with the call's fields, routed by
 * its next rules as any step; the canonical JSON keeps it. */
WF_TEST(test_call_step_compiles_to_a_call_transition)
{
    wf_net *in = list_new("parent", 3);
    job(in, "prepare", "t");
    wf_step *c = call(in, "price", "pricing");
    c->call_version = 2;
    c->call_input = "{sku: .sku}";
    c->call_output = "{price: .total}";
    c->call_strict = true;
    rule(c, ".price > 100", "prepare");
    job(in, "ship", "t");
    wf_net *net = compile_ok(in);
    int k = wf_net_transition_index(net, "price");
    ck_assert_int_ge(k, 0);
    const wf_transition *t = &net->transitions[k];
    ck_assert_int_eq(t->trigger, WF_TRIGGER_CALL);
    ck_assert_str_eq(t->call_key, "pricing");
    ck_assert_int_eq(t->call_version, 2);
    ck_assert_str_eq(t->call_input, "{sku: .sku}");
    ck_assert_str_eq(t->call_output, "{price: .total}");
    ck_assert(t->call_strict);
    ck_assert_str_eq(t->step_id, "price");
    ck_assert(t->first_match);

    char *j1, *j2;
    wf_error err;
    ck_assert_int_eq(wf_net_to_json(net, A, &j1, &err), WF_OK);
    wf_net *back;
    ck_assert_int_eq(wf_net_from_json(j1, A, &back, &err), WF_OK);
    ck_assert(back->steps[1].has_call);
    ck_assert_str_eq(back->steps[1].call_key, "pricing");
    ck_assert_int_eq(back->steps[1].call_version, 2);
    ck_assert_str_eq(back->steps[1].call_output, "{price: .total}");
    ck_assert(back->steps[1].call_strict);
    ck_assert_int_eq(wf_net_to_json(back, A, &j2, &err), WF_OK);
    ck_assert_str_eq(j1, j2);
}
END_TEST

/* for_each of a job and a user step reaches their transitions, and the
 * canonical JSON keeps it. */
WF_TEST(test_for_each_reaches_job_and_user_transitions)
{
    static const char *ann[] = {"ann"};
    wf_net *in = list_new("fe", 2);
    wf_step *j = job(in, "charge", "charge");
    j->for_each = ".lines";
    j->for_each_item = "line";
    j->for_each_output = "charged";
    j->for_each_sequential = true;
    wf_step *u = S(in, "approve");
    u->has_user = true;
    u->assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USER, .ids = ann, .n_ids = 1};
    u->for_each = ".approvers";
    u->for_each_completion = (wf_completion){.mode = WF_JOIN_QUORUM, .quorum = 2};
    wf_net *net = compile_ok(in);
    const wf_transition *t = &net->transitions[wf_net_transition_index(net, "charge")];
    ck_assert_str_eq(t->for_each, ".lines");
    ck_assert_str_eq(t->for_each_item, "line");
    ck_assert_str_eq(t->for_each_output, "charged");
    ck_assert(t->for_each_sequential);
    t = &net->transitions[wf_net_transition_index(net, "approve")];
    ck_assert_str_eq(t->for_each, ".approvers");
    ck_assert_int_eq(t->for_each_completion.mode, WF_JOIN_QUORUM);
    ck_assert_int_eq(t->for_each_completion.quorum, 2);

    char *j1, *j2;
    wf_error err;
    ck_assert_int_eq(wf_net_to_json(net, A, &j1, &err), WF_OK);
    wf_net *back;
    ck_assert_int_eq(wf_net_from_json(j1, A, &back, &err), WF_OK);
    ck_assert_str_eq(back->steps[0].for_each_item, "line");
    ck_assert(back->steps[0].for_each_sequential);
    ck_assert_int_eq(back->steps[1].for_each_completion.quorum, 2);
    ck_assert_int_eq(wf_net_to_json(back, A, &j2, &err), WF_OK);
    ck_assert_str_eq(j1, j2);
}
END_TEST

/* Bad combinations are reported at the step's paths with stable codes. */
WF_TEST(test_call_and_for_each_validation)
{
    static const char *ann[] = {"ann", "bob"};
    wf_net *in = list_new("bad", 9);
    call(in, "nokey", "");                        /* 0: call without a key */
    call(in, "spaced", "a b")->call_version = -1; /* 1: bad key, bad version */
    wf_step *m = call(in, "maps", "child");       /* 2: mappings that do not compile */
    m->call_input = "{";
    m->call_output = ".x |";
    wf_step *w = S(in, "w"); /* 3: for_each on an await */
    w->has_await = true;
    w->signal_name = "go";
    w->for_each = ".xs";
    wf_step *z = S(in, "z"); /* 4: a for_each field on a sleep */
    z->has_sleep = true;
    z->duration_ms = 10;
    z->for_each_item = "x";
    wf_step *j = job(in, "j", "t"); /* 5: for_each that does not compile, bad name */
    j->for_each = ".xs |";
    j->for_each_item = "1x";
    wf_step *u = S(in, "u"); /* 6: a USERS assignee with for_each */
    u->has_user = true;
    u->assignee = (wf_assignee){.kind = WF_NET_ASSIGNEE_USERS, .ids = ann, .n_ids = 2};
    u->for_each = ".xs";
    wf_step *c = call(in, "c", "child"); /* 7: compensation on a call step */
    c->compensation_job_type = "undo";
    call(in, "fc", "child")->for_each = ".xs"; /* 8: a call per item: valid */
    wf_net *out = NULL;
    wf_validation_error *v = NULL;
    size_t n = 0;
    wf_error err;
    ck_assert_int_eq(wf_steps_compile(in, A, &out, &v, &n, &err), WF_OK);
    ck_assert_ptr_null(out);
    dump(v, n);
    ck_assert(has(v, n, "CALL_KEY_MISSING", "steps[0].call.definition_key"));
    ck_assert(has(v, n, "CALL_KEY_INVALID", "steps[1].call.definition_key"));
    ck_assert(has(v, n, "CALL_VERSION_INVALID", "steps[1].call.version"));
    ck_assert(has(v, n, "EXPRESSION_INVALID", "steps[2].call.input_expression"));
    ck_assert(has(v, n, "EXPRESSION_INVALID", "steps[2].call.output_expression"));
    ck_assert(has(v, n, "STEP_FIELD_CONFLICT", "steps[3].for_each"));
    ck_assert(has(v, n, "STEP_FIELD_CONFLICT", "steps[4].for_each"));
    ck_assert(has(v, n, "EXPRESSION_INVALID", "steps[5].for_each"));
    ck_assert(has(v, n, "INVALID_VALUE", "steps[5].for_each_item"));
    ck_assert(has(v, n, "INVALID_VALUE", "steps[6].for_each"));
    ck_assert(has(v, n, "STEP_FIELD_CONFLICT", "steps[7].compensation_job_type"));
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(strncmp(v[i].path, "steps[8]", 8) != 0, "%s at %s", v[i].code, v[i].path);
        ck_assert_msg(strncmp(v[i].path, "transitions", 11) != 0, "%s at %s", v[i].code, v[i].path);
        ck_assert_msg(strstr(v[i].message, "CALL transition") == NULL, "%s", v[i].message);
    }
}
END_TEST

int
main(void)
{
    kit_fixture(NULL, &A);
    return wf_test_run(wf_test_suite("net_steps", "core", kit_setup, kit_teardown, 0));
}
