/*
 * Unit tests of resources (engine/resources.c) over the memory store,
 * without a server: the defaults a declaration fills, a declaration of the
 * same settings that writes nothing, a change that keeps who declared it
 * and when, the bounds of the settings, UpdateResource and DeleteResource
 * of a missing resource.
 */
#include <check.h>

#include "engine_kit.h"
#include "resources.h"
#include "store.h"
#include "test_support.h"

static wf_store *st;
static wf_arena *arena;

#define ck_code(rc, want, err)                                                                     \
    ck_assert_msg((rc) == (want), "%s, want %s: %s", wf_code_reason(rc), wf_code_reason(want),     \
                  (err).msg)

static wf_code
declare_at(const char *actor, const wf_resource_in *in, int64_t now, wf_resource_view *out,
           wf_error *err)
{
    wf_runtime_ctx c = kit_ctx(actor);
    return wf_resources_declare(&c.ref, in, now, NULL, out, err);
}

/* Unset strategy is QUEUE; the same settings again write nothing (version
 * and update time stay); other settings bump the version and keep the
 * creator and the creation time. */
WF_TEST(test_declare_fills_and_is_idempotent)
{
    wf_resource_in in = {.name = "charges", .capacity = 2, .per_key = true};
    wf_resource_view v;
    wf_error err;
    ck_code(declare_at("ops", &in, 1000, &v, &err), WF_OK, err);
    ck_assert(v.created);
    ck_assert_int_eq(v.row.strategy, WF_RESOURCE_QUEUE);
    ck_assert_int_eq(v.row.version, 1);
    ck_code(declare_at("dev", &in, 2000, &v, &err), WF_OK, err);
    ck_assert(!v.created);
    ck_assert_int_eq(v.row.version, 1);
    ck_assert_int_eq(v.row.updated_at, 1000);
    in.strategy = WF_RESOURCE_CANCEL_NEWEST;
    ck_code(declare_at("dev", &in, 3000, &v, &err), WF_OK, err);
    ck_assert_int_eq(v.row.version, 2);
    ck_assert_int_eq(v.row.updated_at, 3000);
    ck_assert_int_eq(v.row.created_at, 1000);
    ck_assert_str_eq(v.row.created_by, "ops");
    wf_runtime_ctx c = kit_ctx("ops");
    wf_resource_row row;
    ck_code(wf_resources_get(&c.ref, "charges", &row, &err), WF_OK, err);
    ck_assert_int_eq(row.strategy, WF_RESOURCE_CANCEL_NEWEST);
    ck_assert_int_eq(row.version, 2);
}
END_TEST

/* The bounds: a period of 1 ms and of 1 day, a rate without a capacity
 * are taken; one past each bound is INVALID_ARGUMENT. */
WF_TEST(test_setting_bounds)
{
    const wf_resource_in good[] = {
        {.name = "a", .rate_limit = 1, .rate_period_ms = 1},
        {.name = "b", .rate_limit = 1, .rate_period_ms = WF_RESOURCE_PERIOD_MAX_MS},
        {.name = "c.d_e-F9", .capacity = 1, .rate_limit = 5, .rate_period_ms = 1000},
    };
    const wf_resource_in bad[] = {
        {.name = "a", .rate_limit = 1, .rate_period_ms = WF_RESOURCE_PERIOD_MAX_MS + 1},
        {.name = "a", .rate_limit = -1, .rate_period_ms = 1000},
        {.name = "a", .capacity = 1, .strategy = WF_RESOURCE_CANCEL_NEWEST + 1},
        {.name = "a/b", .capacity = 1},
        {.name = NULL, .capacity = 1},
    };
    wf_resource_view v;
    wf_error err;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_code(declare_at("ops", &good[i], 1000, &v, &err), WF_OK, err);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_code(declare_at("ops", &bad[i], 1000, &v, &err), WF_E_INVALID_ARGUMENT, err);
}
END_TEST

/* UpdateResource and DeleteResource of a missing resource, and GetResource
 * after a delete, are RESOURCE_NOT_FOUND; a negative page size is
 * refused. */
WF_TEST(test_missing_resources)
{
    wf_runtime_ctx c = kit_ctx("ops");
    wf_resource_in in = {.name = "gone", .capacity = 1};
    wf_resource_view v;
    wf_error err;
    ck_code(wf_resources_update(&c.ref, &in, 1000, NULL, &v, &err), WF_E_RESOURCE_NOT_FOUND, err);
    ck_code(declare_at("ops", &in, 1000, &v, &err), WF_OK, err);
    ck_code(wf_resources_delete(&c.ref, "gone", NULL, &err), WF_OK, err);
    ck_code(wf_resources_delete(&c.ref, "gone", NULL, &err), WF_E_RESOURCE_NOT_FOUND, err);
    wf_resource_row row;
    ck_code(wf_resources_get(&c.ref, "gone", &row, &err), WF_E_RESOURCE_NOT_FOUND, err);
    wf_resource_row *rows;
    size_t n;
    char *next;
    ck_code(wf_resources_list(&c.ref, -1, NULL, &rows, &n, &next, &err), WF_E_INVALID_ARGUMENT,
            err);
}
END_TEST

int
main(void)
{
    wf_test_quiet_log();
    kit_fixture(&st, &arena);
    return wf_test_run(wf_test_suite("resources", "engine", kit_setup, kit_teardown, 0));
}
