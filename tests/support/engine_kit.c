/*
 * engine_kit: engine_kit.h.
 */
#include "engine_kit.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "defcache.h"
#include "expr.h"

/* Where the running case's store and arena live (kit_fixture). */
static wf_store **case_store;
static wf_arena **case_arena;

void
kit_fixture(wf_store **st, wf_arena **arena)
{
    case_store = st;
    case_arena = arena;
}

void
kit_setup(void)
{
    ck_assert_msg(case_arena != NULL, "kit_setup before kit_fixture");
    if (case_store != NULL) {
        wf_error err;
        *case_store = wf_store_mem_new(&err);
        ck_assert_ptr_nonnull(*case_store);
    }
    *case_arena = wf_arena_new();
    ck_assert_ptr_nonnull(*case_arena);
}

void
kit_teardown(void)
{
    if (case_store != NULL) {
        wf_store_free(*case_store);
        *case_store = NULL;
    }
    wf_arena_free(*case_arena);
    *case_arena = NULL;
    wf_expr_cache_clear();
    wf_defcache_clear();
}

wf_runtime_ctx
kit_ctx(const char *actor)
{
    return (wf_runtime_ctx){
        .ref = {.store = *case_store, .tenant = "default", .actor = actor, .arena = *case_arena}};
}

wf_runtime_deployed
kit_deploy(const wf_runtime_ctx *c, const wf_net *net)
{
    wf_runtime_deploy_in in = {WF_DEF_NET, net, false};
    wf_runtime_deployed out;
    wf_error err;
    wf_code rc = wf_runtime_deploy(c, &in, NULL, &out, &err);
    ck_assert_msg(rc == WF_OK, "deploy: %s %s", wf_code_reason(rc), err.msg);
    return out;
}

void
kit_deploy_line(wf_runtime_ctx c, const char *key, wf_transition *t)
{
    static const wf_place p[] = {{.id = "s", .kind = WF_PLACE_START},
                                 {.id = "e", .kind = WF_PLACE_END}};
    const wf_arc a[] = {{.source = "s", .target = t->id}, {.source = t->id, .target = "e"}};
    wf_net net = {.key = key,
                  .places = (wf_place *)p,
                  .n_places = 2,
                  .transitions = t,
                  .n_transitions = 1,
                  .arcs = (wf_arc *)a,
                  .n_arcs = 2};
    kit_deploy(&c, &net);
}

void
kit_deploy_msg_net(wf_runtime_ctx c, const char *key, wf_correlation corr)
{
    wf_transition *t = wf_arena_calloc(c.ref.arena, 1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    *t = (wf_transition){
        .id = "paid", .trigger = WF_TRIGGER_MSG, .signal_name = "payment", .correlation = corr};
    kit_deploy_line(c, key, t);
}

wf_start_spec
kit_order_spec(const char *key, const char *aggregate_id)
{
    return (wf_start_spec){.definition_key = key,
                           .aggregate_type = aggregate_id != NULL ? "order" : NULL,
                           .aggregate_id = aggregate_id};
}

wf_instance_row
kit_start(const wf_ref_ctx *c, const wf_start_spec *spec, wf_uow_idem *idem)
{
    wf_instance_row in;
    wf_error err;
    wf_code rc = wf_instances_start(c, spec, idem, &in, &err);
    ck_assert_msg(rc == WF_OK, "start: %s %s", wf_code_reason(rc), err.msg);
    return in;
}

wf_instance_row
kit_start_order(wf_runtime_ctx c, const char *key, const char *aggregate_id)
{
    wf_start_spec spec = kit_order_spec(key, aggregate_id);
    return kit_start(&c.ref, &spec, NULL);
}

wf_instance_row
kit_instance(const char *id)
{
    wf_store_ctx sc = {"default", 0, *case_arena};
    wf_instance_row in;
    wf_error err;
    ck_assert_int_eq(wf_store_get_instance(*case_store, &sc, id, &in, &err), WF_OK);
    return in;
}

wf_aggregate
kit_aggregate(const char *id)
{
    wf_store_ctx sc = {"default", 0, *case_arena};
    wf_aggregate agg;
    wf_error err;
    ck_assert_int_eq(wf_uow_read_aggregate(*case_store, &sc, id, &agg, &err), WF_OK);
    return agg;
}

wf_event_row *
kit_events(const char *root, size_t *n)
{
    wf_store_ctx sc = {"default", 0, *case_arena};
    wf_event_filter f = {.instance_id = root};
    wf_event_row *ev = NULL;
    wf_error err;
    *n = 0;
    ck_assert_int_eq(wf_store_read_events(*case_store, &sc, 0, &f, 1000, &ev, n, &err), WF_OK);
    return ev;
}

size_t
kit_n_events(const char *root)
{
    size_t n;
    kit_events(root, &n);
    return n;
}

const char *
kit_event_types(const char *root, size_t skip)
{
    static char out[4096];
    size_t n;
    const wf_event_row *ev = kit_events(root, &n);
    out[0] = '\0';
    for (size_t i = skip; i < n; i++) {
        size_t len = strlen(out);
        snprintf(out + len, sizeof out - len, "%s%s", i > skip ? " " : "", ev[i].type);
    }
    return out;
}

const char *
kit_event_data(const char *root, const char *type)
{
    size_t n;
    const wf_event_row *ev = kit_events(root, &n);
    const char *data = NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(ev[i].type, type) == 0)
            data = ev[i].data_json;
    ck_assert_msg(data != NULL, "no %s event", type);
    return data;
}

/* Response bytes: a fixed text (what is stored is not the point here). */
static wf_code
encode_fixed(const void *result, void *arg, wf_arena *a, unsigned char **bytes, size_t *len,
             wf_error *err)
{
    (void)result;
    (void)arg;
    *bytes = wf_arena_alloc(a, 2);
    if (*bytes == NULL)
        return wf_error_set(err, WF_E_INTERNAL, "out of memory");
    memcpy(*bytes, "ok", 2);
    *len = 2;
    return WF_OK;
}

wf_uow_idem
kit_request(wf_arena *arena, const char *method)
{
    static int request_no;
    char *id = wf_arena_printf(arena, "req-%d", ++request_no);
    ck_assert_ptr_nonnull(id);
    return (wf_uow_idem){
        .method = method, .request_id = id, .request_hash = "h", .encode = encode_fixed};
}
