/*
 * Unit tests of the rpc layer without a server: the interceptor chain on
 * fake metadata, the status mapping, the error trailer, the method table and
 * the reflection index.
 */
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>
#include <grpc/support/time.h>

#include "google/protobuf/any.pb-c.h"
#include "google/rpc/error_details.pb-c.h"
#include "google/rpc/status.pb-c.h"
#include "rpc_interceptors.h"
#include "rpc_reflection.h"
#include "rpc_status.h"
#include "rpc_table.h"
#include "rpc_wire.h"
#include "test_support.h"
#include "workflow/v1/workflow.pb-c.h"

/* ---- fixtures: a config and a metadata array ------------------------------ */

static wf_config *cfg;
static wf_arena *arena;
static grpc_metadata md_items[16];
static grpc_metadata_array md;

static void
setup(void)
{
    const char *env[] = {"WF_ENV=development", "WF_API_KEYS=k1,k2=tenant-b", NULL};
    wf_error err;
    cfg = wf_config_load((char *const *)env, &err);
    ck_assert_ptr_nonnull(cfg);
    arena = wf_arena_new();
    memset(&md, 0, sizeof md);
    md.metadata = md_items;
}

static void
teardown(void)
{
    wf_arena_free(arena);
    wf_config_free(cfg);
}

static void
md_add(const char *k, const char *v)
{
    md_items[md.count].key = grpc_slice_from_static_string(k);
    md_items[md.count].value = grpc_slice_from_static_string(v);
    md.count++;
}

static wf_rpc_ctx
ctx_for(unsigned flags)
{
    wf_rpc_ctx ctx = {
        .cfg = cfg,
        .md = &md,
        .route_flags = flags,
        .deadline = gpr_inf_future(GPR_CLOCK_MONOTONIC),
        .arena = arena,
    };
    return ctx;
}

static wf_code
run(wf_rpc_ctx *ctx, wf_error *err)
{
    wf_error_clear(err);
    return wf_rpc_intercept(ctx, err);
}

/* A value of n bytes (NUL bytes included), as raw HTTP/2 can send it. */
static void
md_add_bytes(const char *k, const char *v, size_t n)
{
    md_items[md.count].key = grpc_slice_from_static_string(k);
    md_items[md.count].value = grpc_slice_from_static_buffer(v, n);
    md.count++;
}

/* ---- interceptors --------------------------------------------------------- */

WF_CASE_TEST("interceptors", test_missing_key_is_unauthenticated)
{
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_E_API_KEY_MISSING);
    ck_assert_ptr_nonnull(ctx.request_id); /* set before the failure, for the log */
}
END_TEST

WF_CASE_TEST("interceptors", test_wrong_key_is_invalid_and_not_echoed)
{
    md_add("x-api-key", "secret-guess");
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_E_API_KEY_INVALID);
    ck_assert_ptr_null(strstr(err.msg, "secret-guess"));
}
END_TEST

WF_CASE_TEST("interceptors", test_key_prefix_is_not_a_match)
{
    md_add("x-api-key", "k");
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_E_API_KEY_INVALID);
    md.count = 0;
    md_add("x-api-key", "k1x");
    ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_E_API_KEY_INVALID);
}
END_TEST

/* A NUL inside a metadata value is part of it: "k1\0junk" is not k1, and
 * an actor or tenant with a NUL is refused, not cut. */
WF_CASE_TEST("interceptors", test_nul_in_metadata_is_not_an_end)
{
    wf_error err;
    const char *keys[] = {"k1\0junk", "k1\0"};
    for (size_t i = 0; i < 2; i++) {
        md.count = 0;
        md_add_bytes("x-api-key", keys[i], i == 0 ? 7 : 3);
        wf_rpc_ctx ctx = ctx_for(0);
        ck_assert_int_eq(run(&ctx, &err), WF_E_API_KEY_INVALID);
        md.count = 0;
        md_add_bytes("authorization", i == 0 ? "Bearer k1\0junk" : "Bearer k1\0", i == 0 ? 14 : 10);
        ctx = ctx_for(0);
        ck_assert_int_eq(run(&ctx, &err), WF_E_API_KEY_INVALID);
    }
    md.count = 0;
    md_add("x-api-key", "k1");
    md_add_bytes("x-actor-id", "alice\0bob", 9);
    wf_rpc_ctx ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "x-actor-id"));
    md.count = 0;
    md_add("x-api-key", "k1");
    md_add_bytes("x-tenant-id", "t1\0x", 4);
    ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "x-tenant-id"));
}
END_TEST

/* More metadata than WF_RPC_MAX_METADATA_BYTES is TOO_LARGE, whatever the
 * key; just under it passes. */
WF_CASE_TEST("interceptors", test_oversized_metadata_is_too_large)
{
    static char pad[WF_RPC_MAX_METADATA_BYTES + 1];
    size_t fits = WF_RPC_MAX_METADATA_BYTES - (strlen("x-api-key") + 2 + 32) - (5 + 32);
    memset(pad, 'a', sizeof pad - 1);
    md_add("x-api-key", "k1");
    md_add_bytes("x-pad", pad, fits);
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    md.count = 0;
    md_add("x-api-key", "k1");
    md_add_bytes("x-pad", pad, fits + 1);
    ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_E_TOO_LARGE);
    ck_assert_ptr_nonnull(strstr(err.msg, "metadata"));
    ck_assert_ptr_nonnull(ctx.request_id); /* logged with the failure */
}
END_TEST

WF_CASE_TEST("interceptors", test_valid_key_default_tenant)
{
    md_add("x-api-key", "k1");
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_str_eq(ctx.tenant, "default");
    wf_key_match k1;
    ck_assert(wf_config_find_key(cfg, "k1", 2, &k1));
    ck_assert_str_eq(ctx.key_id, k1.key_id);
    ck_assert_ptr_null(ctx.actor);
}
END_TEST

WF_CASE_TEST("interceptors", test_bearer_token_is_accepted)
{
    md_add("authorization", "Bearer k1");
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    md.count = 0;
    md_add("authorization", "Basic azE6");
    ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_E_API_KEY_INVALID);
}
END_TEST

WF_CASE_TEST("interceptors", test_duplicated_key_is_refused)
{
    md_add("x-api-key", "k1");
    md_add("x-api-key", "k1");
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_E_API_KEY_INVALID);
}
END_TEST

WF_CASE_TEST("interceptors", test_bound_key_and_tenant)
{
    md_add("x-api-key", "k2");
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_str_eq(ctx.tenant, "tenant-b");

    md_add("x-tenant-id", "tenant-a");
    ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_E_TENANT_FORBIDDEN);

    md.count = 0;
    md_add("x-api-key", "k2");
    md_add("x-tenant-id", "tenant-b");
    ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_OK);

    /* An unbound key may act in any tenant. */
    md.count = 0;
    md_add("x-api-key", "k1");
    md_add("x-tenant-id", "tenant-a");
    ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_str_eq(ctx.tenant, "tenant-a");
}
END_TEST

WF_CASE_TEST("interceptors", test_malformed_tenant_is_invalid)
{
    md_add("x-api-key", "k1");
    md_add("x-tenant-id", "a tenant");
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_E_INVALID_ARGUMENT);
}
END_TEST

WF_CASE_TEST("interceptors", test_actor_required_and_validated)
{
    md_add("x-api-key", "k1");
    wf_rpc_ctx ctx = ctx_for(WF_ROUTE_ACTOR);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_E_ACTOR_MISSING);

    char long_actor[200];
    memset(long_actor, 'a', sizeof long_actor - 1);
    long_actor[sizeof long_actor - 1] = '\0';
    md_add("x-actor-id", long_actor);
    ctx = ctx_for(WF_ROUTE_ACTOR);
    ck_assert_int_eq(run(&ctx, &err), WF_E_INVALID_ARGUMENT);

    md.count = 1;
    md_add("x-actor-id", "alice");
    ctx = ctx_for(WF_ROUTE_ACTOR);
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_str_eq(ctx.actor, "alice");
}
END_TEST

WF_CASE_TEST("interceptors", test_actor_groups_only_when_trusted)
{
    md_add("x-api-key", "k1");
    md_add("x-actor-id", "alice");
    md_add("x-actor-groups", "it,finance");
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_ptr_null(ctx.actor_groups);
    cfg->trust_actor_groups = true;
    ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_str_eq(ctx.actor_groups, "it,finance");
}
END_TEST

WF_CASE_TEST("interceptors", test_public_method_needs_no_key)
{
    wf_rpc_ctx ctx = ctx_for(0);
    ctx.public_method = 1;
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_str_eq(ctx.tenant, "default");
}
END_TEST

WF_CASE_TEST("interceptors", test_open_access_in_development_without_keys)
{
    wf_config_free(cfg);
    const char *env[] = {"WF_ENV=development", NULL};
    wf_error err;
    cfg = wf_config_load((char *const *)env, &err);
    wf_rpc_ctx ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_ptr_null(ctx.key_id);
}
END_TEST

WF_CASE_TEST("interceptors", test_request_id_and_trace)
{
    md_add("x-api-key", "k1");
    md_add("x-request-id", "req-42");
    md_add("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    wf_rpc_ctx ctx = ctx_for(0);
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_str_eq(ctx.request_id, "req-42");
    ck_assert_str_eq(ctx.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");

    md.count = 1;
    md_add("traceparent", "garbage");
    ctx = ctx_for(0);
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_ptr_null(ctx.trace_id);
    ck_assert_uint_eq(strlen(ctx.request_id), 36); /* generated */
}
END_TEST

WF_CASE_TEST("interceptors", test_expired_deadline)
{
    md_add("x-api-key", "k1");
    wf_rpc_ctx ctx = ctx_for(0);
    ctx.deadline =
        gpr_time_sub(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(5, GPR_TIMESPAN));
    wf_error err;
    ck_assert_int_eq(run(&ctx, &err), WF_E_DEADLINE_EXCEEDED);

    ctx = ctx_for(0);
    ctx.deadline =
        gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(5000, GPR_TIMESPAN));
    ck_assert_int_eq(run(&ctx, &err), WF_OK);
    ck_assert_int_gt(ctx.deadline_ms, 0);
}
END_TEST

WF_CASE_TEST("interceptors", test_secret_compare)
{
    ck_assert(wf_rpc_secret_equal("abc", 3, "abc"));
    ck_assert(!wf_rpc_secret_equal("abd", 3, "abc"));
    ck_assert(!wf_rpc_secret_equal("ab", 2, "abc"));
    ck_assert(!wf_rpc_secret_equal("abcd", 4, "abc"));
    ck_assert(!wf_rpc_secret_equal("", 0, "abc"));
}
END_TEST

/* ---- status mapping and trailer ------------------------------------------- */

WF_CASE_TEST("status_and_table", test_status_mapping_matches_design)
{
    struct {
        wf_code code;
        grpc_status_code status;
    } cases[] = {
        {WF_OK, GRPC_STATUS_OK},
        {WF_E_TASK_NOT_FOUND, GRPC_STATUS_NOT_FOUND},
        {WF_E_INVALID_JSON, GRPC_STATUS_INVALID_ARGUMENT},
        {WF_E_DEFINITION_INVALID, GRPC_STATUS_INVALID_ARGUMENT},
        {WF_E_ACTOR_MISSING, GRPC_STATUS_INVALID_ARGUMENT},
        {WF_E_TASK_ALREADY_CLAIMED, GRPC_STATUS_FAILED_PRECONDITION},
        {WF_E_REQUEST_ID_REUSED, GRPC_STATUS_FAILED_PRECONDITION},
        {WF_E_DEFINITION_KIND_CONFLICT, GRPC_STATUS_FAILED_PRECONDITION},
        {WF_E_INSTANCE_SUSPENDED, GRPC_STATUS_FAILED_PRECONDITION},
        {WF_E_INSTANCE_NOT_ROOT, GRPC_STATUS_FAILED_PRECONDITION},
        {WF_E_UNKNOWN_PLACE, GRPC_STATUS_INVALID_ARGUMENT},
        {WF_E_TOKENS_NOT_HELD, GRPC_STATUS_FAILED_PRECONDITION},
        {WF_E_INSTANCE_WOULD_BE_EMPTY, GRPC_STATUS_FAILED_PRECONDITION},
        {WF_E_MODIFICATION_DEADLOCKS, GRPC_STATUS_FAILED_PRECONDITION},
        {WF_E_NOT_A_NET_INSTANCE, GRPC_STATUS_FAILED_PRECONDITION},
        {WF_E_MIGRATION_INVALID, GRPC_STATUS_FAILED_PRECONDITION},
        {WF_E_NOT_GROUP_MEMBER, GRPC_STATUS_PERMISSION_DENIED},
        {WF_E_TENANT_FORBIDDEN, GRPC_STATUS_PERMISSION_DENIED},
        {WF_E_API_KEY_MISSING, GRPC_STATUS_UNAUTHENTICATED},
        {WF_E_STORE_UNAVAILABLE, GRPC_STATUS_UNAVAILABLE},
        {WF_E_TOO_LARGE, GRPC_STATUS_RESOURCE_EXHAUSTED},
        {WF_E_VARIABLES_TOO_LARGE, GRPC_STATUS_RESOURCE_EXHAUSTED},
        {WF_E_NOMEM, GRPC_STATUS_RESOURCE_EXHAUSTED},
        {WF_E_DEADLINE_EXCEEDED, GRPC_STATUS_DEADLINE_EXCEEDED},
        {WF_E_UNIMPLEMENTED, GRPC_STATUS_UNIMPLEMENTED},
        {WF_E_INTERNAL, GRPC_STATUS_INTERNAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_int_eq(wf_rpc_status_code(cases[i].code), cases[i].status);
    /* Every code maps somewhere other than UNKNOWN, and only bugs to INTERNAL. */
    for (int c = 0; c < WF_CODE_COUNT_; c++) {
        grpc_status_code s = wf_rpc_status_code((wf_code)c);
        ck_assert_int_ne(s, GRPC_STATUS_UNKNOWN);
        ck_assert(s != GRPC_STATUS_INTERNAL || c == WF_E_INTERNAL);
    }
}
END_TEST

WF_CASE_TEST("status_and_table", test_status_details_decode)
{
    wf_violation v[2] = {{"definition.places", "START_PLACE_COUNT", "no START place"},
                         {"definition.arcs[1].guard", NULL, "does not compile"}};
    uint8_t *bytes = NULL;
    size_t n = wf_rpc_status_details(arena, WF_E_DEFINITION_INVALID,
                                     "definition \"order\" is invalid", v, 2, &bytes);
    ck_assert_uint_gt(n, 0);
    Google__Rpc__Status *st = google__rpc__status__unpack(NULL, n, bytes);
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(st->code, GRPC_STATUS_INVALID_ARGUMENT);
    ck_assert_str_eq(st->message, "definition \"order\" is invalid");
    ck_assert_uint_eq(st->n_details, 2);
    ck_assert_str_eq(st->details[0]->type_url, "type.googleapis.com/google.rpc.ErrorInfo");
    Google__Rpc__ErrorInfo *info = google__rpc__error_info__unpack(NULL, st->details[0]->value.len,
                                                                   st->details[0]->value.data);
    ck_assert_str_eq(info->reason, "DEFINITION_INVALID");
    ck_assert_str_eq(info->domain, "workflow.v1");
    /* The id the message names. */
    ck_assert_uint_eq(info->n_metadata, 1);
    ck_assert_str_eq(info->metadata[0]->key, "definitionKey");
    ck_assert_str_eq(info->metadata[0]->value, "order");
    google__rpc__error_info__free_unpacked(info, NULL);
    Google__Rpc__BadRequest *br = google__rpc__bad_request__unpack(NULL, st->details[1]->value.len,
                                                                   st->details[1]->value.data);
    ck_assert_uint_eq(br->n_field_violations, 2);
    ck_assert_str_eq(br->field_violations[0]->field, "definition.places");
    ck_assert_str_eq(br->field_violations[0]->reason, "START_PLACE_COUNT");
    ck_assert_str_eq(br->field_violations[0]->description, "no START place");
    ck_assert_str_eq(br->field_violations[1]->field, "definition.arcs[1].guard");
    /* Without a code of its own, a violation has the error's reason. */
    ck_assert_str_eq(br->field_violations[1]->reason, "DEFINITION_INVALID");
    google__rpc__bad_request__free_unpacked(br, NULL);
    google__rpc__status__free_unpacked(st, NULL);
}
END_TEST

WF_CASE_TEST("status_and_table", test_code_names)
{
    const char *const names[] = {"OK",
                                 "CANCELLED",
                                 "UNKNOWN",
                                 "INVALID_ARGUMENT",
                                 "DEADLINE_EXCEEDED",
                                 "NOT_FOUND",
                                 "ALREADY_EXISTS",
                                 "PERMISSION_DENIED",
                                 "RESOURCE_EXHAUSTED",
                                 "FAILED_PRECONDITION",
                                 "ABORTED",
                                 "OUT_OF_RANGE",
                                 "UNIMPLEMENTED",
                                 "INTERNAL",
                                 "UNAVAILABLE",
                                 "DATA_LOSS",
                                 "UNAUTHENTICATED"};
    for (int c = 0; c < 17; c++)
        ck_assert_str_eq(wf_rpc_code_name(c), names[c]);
    ck_assert_str_eq(wf_rpc_code_name(GRPC_STATUS_UNAVAILABLE), "UNAVAILABLE");
    ck_assert_str_eq(wf_rpc_code_name(-1), "UNKNOWN");
    ck_assert_str_eq(wf_rpc_code_name(17), "UNKNOWN");
}
END_TEST

/* An out-of-memory error is often built in the call's arena right after an
 * allocation from it failed: the trailer must not give up because the
 * arena's failure flag is set. */
WF_CASE_TEST("status_and_table", test_status_details_on_a_failed_arena)
{
    ck_assert_ptr_null(wf_arena_alloc(arena, WF_ARENA_MAX_BYTES + 1));
    ck_assert(wf_arena_failed(arena));
    wf_violation v[1] = {{"request.variables", NULL, "too large"}};
    uint8_t *bytes = NULL;
    size_t n = wf_rpc_status_details(arena, WF_E_NOMEM, "out of memory", v, 1, &bytes);
    ck_assert_uint_gt(n, 0);
    Google__Rpc__Status *st = google__rpc__status__unpack(NULL, n, bytes);
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(st->code, GRPC_STATUS_RESOURCE_EXHAUSTED);
    ck_assert_uint_eq(st->n_details, 2);
    Google__Rpc__ErrorInfo *info = google__rpc__error_info__unpack(NULL, st->details[0]->value.len,
                                                                   st->details[0]->value.data);
    ck_assert_ptr_nonnull(info);
    ck_assert_str_eq(info->reason, "OUT_OF_MEMORY");
    google__rpc__error_info__free_unpacked(info, NULL);
    google__rpc__status__free_unpacked(st, NULL);
}
END_TEST

/* ---- reflection ----------------------------------------------------------- */

extern const unsigned char wf_descriptor_set[];
extern const size_t wf_descriptor_set_len;

WF_CASE_TEST("status_and_table", test_reflection_answer_out_of_memory)
{
    static const char *const services[] = {"workflow.v1.WorkflowService", "grpc.health.v1.Health"};
    wf_error err;
    wf_reflection *r =
        wf_reflection_new(wf_descriptor_set, wf_descriptor_set_len, services, 2, &err);
    ck_assert_ptr_nonnull(r);
    Grpc__Reflection__V1__ServerReflectionRequest list =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__INIT;
    list.message_request_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES;
    list.list_services = "";
    Grpc__Reflection__V1__ServerReflectionRequest sym =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__INIT;
    sym.message_request_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL;
    sym.file_containing_symbol = "workflow.v1.WorkflowService";

    Grpc__Reflection__V1__ServerReflectionResponse *resp =
        wf_reflection_answer(r, &list, arena, &err);
    ck_assert_ptr_nonnull(resp);
    ck_assert_ptr_nonnull(resp->list_services_response);
    ck_assert_uint_eq(resp->list_services_response->n_service, 2);
    ck_assert_str_eq(resp->list_services_response->service[1]->name, "grpc.health.v1.Health");
    resp = wf_reflection_answer(r, &sym, arena, &err);
    ck_assert_ptr_nonnull(resp);
    ck_assert_uint_gt(resp->file_descriptor_response->n_file_descriptor_proto, 1);

    /* Once an allocation from the arena has failed, no answer is half built:
     * NULL and OUT_OF_MEMORY, whichever builder ran. */
    ck_assert_ptr_null(wf_arena_alloc(arena, WF_ARENA_MAX_BYTES + 1));
    wf_error_clear(&err);
    ck_assert_ptr_null(wf_reflection_answer(r, &list, arena, &err));
    ck_assert_int_eq(err.code, WF_E_NOMEM);
    wf_error_clear(&err);
    ck_assert_ptr_null(wf_reflection_answer(r, &sym, arena, &err));
    ck_assert_int_eq(err.code, WF_E_NOMEM);
    wf_reflection_free(r);
}
END_TEST

/* ---- method table --------------------------------------------------------- */

WF_CASE_TEST("status_and_table", test_table_covers_every_method)
{
    wf_rpc_method *t = NULL;
    size_t n = 0;
    wf_error err;
    ck_assert_int_eq(
        wf_rpc_table_build(&workflow__v1__workflow_service__descriptor, wf_routes, &t, &n, &err),
        WF_OK);
    const ProtobufCServiceDescriptor *svc = &workflow__v1__workflow_service__descriptor;
    ck_assert_uint_eq(n, svc->n_methods + 4);
    ck_assert_str_eq(t[0].path, "/workflow.v1.WorkflowService/DeployDefinition");
    for (unsigned i = 0; i < svc->n_methods; i++) {
        ck_assert_ptr_nonnull(t[i].route);
        ck_assert_str_eq(t[i].route->method, svc->methods[i].name);
        ck_assert_ptr_eq(t[i].input, svc->methods[i].input);
    }
    ck_assert_str_eq(t[n - 4].path, "/grpc.health.v1.Health/Check");
    ck_assert_str_eq(t[n - 3].path, "/grpc.health.v1.Health/Watch");
    ck_assert_str_eq(t[n - 2].path, "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo");
    ck_assert_str_eq(t[n - 1].path,
                     "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo");
    ck_assert_int_eq(t[n - 1].kind, WF_RPC_REFLECTION);
    free(t);
}
END_TEST

static wf_code
dummy(wf_call *call, const ProtobufCMessage *req, ProtobufCMessage **resp, wf_error *err)
{
    (void)call, (void)req, (void)resp, (void)err;
    return WF_OK;
}

WF_CASE_TEST("status_and_table", test_table_rejects_missing_and_extra_routes)
{
    const ProtobufCServiceDescriptor *svc = &workflow__v1__workflow_service__descriptor;
    wf_route routes[64];
    size_t nr = 0;
    for (unsigned i = 1; i < svc->n_methods; i++) /* the first method is left out */
        routes[nr++] = (wf_route){svc->methods[i].name, dummy, 0, NULL};
    routes[nr] = (wf_route){NULL, NULL, 0, NULL};
    wf_rpc_method *t = NULL;
    size_t n = 0;
    wf_error err;
    ck_assert_int_eq(wf_rpc_table_build(svc, routes, &t, &n, &err), WF_E_INTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, svc->methods[0].name));

    routes[nr++] = (wf_route){svc->methods[0].name, dummy, 0, NULL};
    routes[nr++] = (wf_route){"NoSuchMethod", dummy, 0, NULL};
    routes[nr] = (wf_route){NULL, NULL, 0, NULL};
    ck_assert_int_eq(wf_rpc_table_build(svc, routes, &t, &n, &err), WF_E_INTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "NoSuchMethod"));

    nr--;
    routes[nr++] = (wf_route){svc->methods[0].name, dummy, 0, NULL}; /* duplicate */
    routes[nr] = (wf_route){NULL, NULL, 0, NULL};
    ck_assert_int_eq(wf_rpc_table_build(svc, routes, &t, &n, &err), WF_E_INTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "twice"));
}
END_TEST

/* ---- wire checks before unpacking ------------------------------------------ */

/* AssignToRequest nested through on_all_completed, depth levels deep. */
static uint8_t *
nested_assign(int depth, size_t *len)
{
    Workflow__V1__AssignToRequest *r = calloc((size_t)depth, sizeof *r);
    for (int i = 0; i < depth; i++) {
        workflow__v1__assign_to_request__init(&r[i]);
        r[i].title = "t";
        if (i + 1 < depth)
            r[i].on_all_completed = &r[i + 1];
    }
    *len = workflow__v1__assign_to_request__get_packed_size(&r[0]);
    uint8_t *buf = malloc(*len);
    workflow__v1__assign_to_request__pack(&r[0], buf);
    free(r);
    return buf;
}

WF_CASE_TEST("status_and_table", test_wire_depth_is_bounded_before_unpacking)
{
    wf_error err;
    size_t len;
    uint8_t *ok = nested_assign(WF_RPC_MAX_DEPTH, &len);
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__assign_to_request__descriptor, ok, len,
                                       WF_RPC_MAX_DEPTH, NULL, NULL, &err),
                     WF_OK);
    free(ok);
    /* Deep enough to overflow a worker's stack inside protobuf-c. */
    uint8_t *deep = nested_assign(20000, &len);
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__assign_to_request__descriptor, deep, len,
                                       WF_RPC_MAX_DEPTH, NULL, NULL, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.msg, "nests messages"));
    free(deep);
}
END_TEST

WF_CASE_TEST("status_and_table", test_wire_strings_must_be_utf8)
{
    wf_error err;
    Workflow__V1__GetTaskRequest req = WORKFLOW__V1__GET_TASK_REQUEST__INIT;
    uint8_t buf[64];
    req.task_id = "\xd8\xaa\xd8\xb3\xd9\x88\xdb\x8c\xd9\x87"; /* Persian, valid */
    size_t n = workflow__v1__get_task_request__pack(&req, buf);
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__get_task_request__descriptor, buf, n, 32,
                                       NULL, NULL, &err),
                     WF_OK);
    const char *bad[] = {"\xff", "\xc0\xaf" /* overlong */, "\xed\xa0\x80" /* surrogate */,
                         "\xe2\x82" /* truncated */};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        req.task_id = (char *)bad[i];
        n = workflow__v1__get_task_request__pack(&req, buf);
        ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__get_task_request__descriptor, buf, n, 32,
                                           NULL, NULL, &err),
                         WF_E_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(strstr(err.msg, "task_id"));
    }
    /* Malformed wire data is left to the unpacker. */
    const uint8_t junk[] = {0xff, 0xff, 0xff};
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__get_task_request__descriptor, junk, 3, 32,
                                       NULL, NULL, &err),
                     WF_OK);
}
END_TEST

/* protobuf-c hands strings on as C strings: a NUL would cut one, so the
 * wire check refuses it (valid UTF-8 as it is), naming the field. */
WF_CASE_TEST("status_and_table", test_wire_strings_must_not_hold_nul)
{
    Workflow__V1__StartInstanceRequest req = WORKFLOW__V1__START_INSTANCE_REQUEST__INIT;
    req.definition_key = "k";
    req.variables_json = "{\"a\":1}#";
    uint8_t buf[64];
    size_t n = workflow__v1__start_instance_request__pack(&req, buf);
    wf_violation bad;
    wf_error err;
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__start_instance_request__descriptor, buf, n,
                                       WF_RPC_MAX_DEPTH, arena, &bad, &err),
                     WF_OK);
    uint8_t *hash = memchr(buf, '#', n);
    ck_assert_ptr_nonnull(hash);
    *hash = '\0';
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__start_instance_request__descriptor, buf, n,
                                       WF_RPC_MAX_DEPTH, arena, &bad, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(bad.field, "variables_json");
    ck_assert_str_eq(bad.description, "must not contain NUL bytes");
    ck_assert_ptr_nonnull(strstr(err.msg, "variables_json"));
}
END_TEST

/* A known field with a wire type its type does not use is refused
 * (protobuf-c would read a length-delimited bool as true); packed
 * repeated scalars and unknown fields pass. */
WF_CASE_TEST("status_and_table", test_wire_types_must_match_the_field)
{
    wf_violation bad;
    wf_error err;
    /* WatchEventsRequest.follow (5, bool) as length-delimited, then as
     * 64-bit and as 32-bit. */
    const uint8_t follow_ld[] = {(5 << 3) | 2, 1, 1};
    const uint8_t follow_64[] = {(5 << 3) | 1, 1, 0, 0, 0, 0, 0, 0, 0};
    const uint8_t follow_32[] = {(5 << 3) | 5, 1, 0, 0, 0};
    const uint8_t follow_ok[] = {(5 << 3) | 0, 1};
    const struct {
        const uint8_t *b;
        size_t n;
    } bad_ones[] = {{follow_ld, sizeof follow_ld},
                    {follow_64, sizeof follow_64},
                    {follow_32, sizeof follow_32}};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__watch_events_request__descriptor,
                                           bad_ones[i].b, bad_ones[i].n, WF_RPC_MAX_DEPTH, arena,
                                           &bad, &err),
                         WF_E_INVALID_ARGUMENT);
        ck_assert_str_eq(bad.field, "follow");
        ck_assert_str_eq(bad.description, "has the wrong wire type");
    }
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__watch_events_request__descriptor, follow_ok,
                                       sizeof follow_ok, WF_RPC_MAX_DEPTH, arena, &bad, &err),
                     WF_OK);
    /* A string sent as a varint; a message sent as a varint. */
    const uint8_t id_varint[] = {(1 << 3) | 0, 7};
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__get_task_request__descriptor, id_varint,
                                       sizeof id_varint, WF_RPC_MAX_DEPTH, arena, &bad, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(bad.field, "task_id");
    /* An unknown field (99) of any type is skipped. */
    const uint8_t unknown[] = {0x98, 0x06, 1, 0x9d, 0x06, 0, 0, 0, 0};
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__get_task_request__descriptor, unknown,
                                       sizeof unknown, WF_RPC_MAX_DEPTH, arena, &bad, &err),
                     WF_OK);
}
END_TEST

/* Durations and Timestamps within their documented ranges only. */
WF_CASE_TEST("status_and_table", test_wire_durations_and_timestamps_in_range)
{
    Workflow__V1__SendSignalRequest req = WORKFLOW__V1__SEND_SIGNAL_REQUEST__INIT;
    Google__Protobuf__Duration d = GOOGLE__PROTOBUF__DURATION__INIT;
    req.name = "n";
    req.buffer_ttl = &d;
    const struct {
        int64_t s;
        int32_t ns;
        bool ok;
    } cases[] = {
        {60, 0, true},
        {0, 999999999, true},
        {-1, -5, true}, /* negative: in range (the handler refuses it with its own words) */
        {86400LL * 365 * 1000, 0, true},
        {1, 1000000000, false},
        {1, -1, false},
        {-1, 1, false},
        {315576000001LL, 0, false},
        {-315576000001LL, 0, false},
        {10000000000000LL, 0, false},
        {253402300799LL, 0, false}, /* from now, past 9999-12-31 */
        /* docs/behaviour.md's examples: about 8,240 years from now passes
         * 9999-12-31, about 3,170 years does not. */
        {260000000000LL, 0, false},
        {100000000000LL, 0, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d.seconds = cases[i].s;
        d.nanos = cases[i].ns;
        uint8_t buf[128];
        size_t n = workflow__v1__send_signal_request__pack(&req, buf);
        wf_violation bad;
        wf_error err;
        wf_code rc = wf_rpc_wire_check(&workflow__v1__send_signal_request__descriptor, buf, n,
                                       WF_RPC_MAX_DEPTH, arena, &bad, &err);
        ck_assert_msg(rc == (cases[i].ok ? WF_OK : WF_E_INVALID_ARGUMENT), "case %zu: %s", i,
                      err.msg);
        if (!cases[i].ok) {
            ck_assert_str_eq(bad.field, "buffer_ttl");
            ck_assert_ptr_nonnull(strstr(bad.description, "valid Duration"));
        }
    }
    Workflow__V1__Definition def = WORKFLOW__V1__DEFINITION__INIT;
    Workflow__V1__DeployDefinitionRequest dr = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    Google__Protobuf__Timestamp t = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    def.key = "k";
    def.valid_until = &t;
    dr.definition = &def;
    const struct {
        int64_t s;
        int32_t ns;
        bool ok;
    } times[] = {
        {0, 0, true},
        {253402300799LL, 999999999, true},
        {-62135596800LL, 0, true},
        {253402300800LL, 0, false},
        {-62135596801LL, 0, false},
        {0, -1, false},
        {0, 1000000000, false},
    };
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        t.seconds = times[i].s;
        t.nanos = times[i].ns;
        uint8_t buf[128];
        size_t n = workflow__v1__deploy_definition_request__pack(&dr, buf);
        wf_violation bad;
        wf_error err;
        wf_code rc = wf_rpc_wire_check(&workflow__v1__deploy_definition_request__descriptor, buf, n,
                                       WF_RPC_MAX_DEPTH, arena, &bad, &err);
        ck_assert_msg(rc == (times[i].ok ? WF_OK : WF_E_INVALID_ARGUMENT), "time %zu: %s", i,
                      err.msg);
        if (!times[i].ok)
            ck_assert_str_eq(bad.field, "definition.valid_until");
    }
}
END_TEST

/* Every string field of every request is checked, nested ones included:
 * a definition's names reached the JSON layer before (fuzz finding K1). */
WF_CASE_TEST("status_and_table", test_wire_names_the_non_utf8_field)
{
    Workflow__V1__Place p[2] = {WORKFLOW__V1__PLACE__INIT, WORKFLOW__V1__PLACE__INIT};
    Workflow__V1__Place *pp[2] = {&p[0], &p[1]};
    Workflow__V1__Transition t[3] = {WORKFLOW__V1__TRANSITION__INIT, WORKFLOW__V1__TRANSITION__INIT,
                                     WORKFLOW__V1__TRANSITION__INIT};
    Workflow__V1__Transition *tp[3] = {&t[0], &t[1], &t[2]};
    Workflow__V1__Definition d = WORKFLOW__V1__DEFINITION__INIT;
    Workflow__V1__DeployDefinitionRequest req = WORKFLOW__V1__DEPLOY_DEFINITION_REQUEST__INIT;
    p[0].id = "s";
    p[1].id = "e";
    t[0].id = "a";
    t[1].id = "b";
    t[2].id = "c";
    t[2].name = "caf\xe9"; /* Latin-1 */
    d.key = "k";
    d.n_places = 2;
    d.places = pp;
    d.n_transitions = 3;
    d.transitions = tp;
    req.definition = &d;
    uint8_t buf[512];
    size_t n = workflow__v1__deploy_definition_request__pack(&req, buf);
    wf_violation bad;
    wf_error err;
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__deploy_definition_request__descriptor, buf, n,
                                       WF_RPC_MAX_DEPTH, arena, &bad, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(bad.field, "definition.transitions[2].name");
    ck_assert_str_eq(bad.description, "must be valid UTF-8");
    t[2].name = "caf\xc3\xa9";
    d.description = "\xff";
    n = workflow__v1__deploy_definition_request__pack(&req, buf);
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__deploy_definition_request__descriptor, buf, n,
                                       WF_RPC_MAX_DEPTH, arena, &bad, &err),
                     WF_E_INVALID_ARGUMENT);
    ck_assert_str_eq(bad.field, "definition.description");
    d.description = "fine";
    n = workflow__v1__deploy_definition_request__pack(&req, buf);
    ck_assert_int_eq(wf_rpc_wire_check(&workflow__v1__deploy_definition_request__descriptor, buf, n,
                                       WF_RPC_MAX_DEPTH, arena, &bad, &err),
                     WF_OK);
    ck_assert_ptr_null(bad.field);
}
END_TEST

/* Many long violations: the trailer stays small enough for every client,
 * and the last entry says how many were left out. */
WF_CASE_TEST("status_and_table", test_status_details_cap_the_violations)
{
    enum { N = 100 };
    wf_violation v[N];
    for (int i = 0; i < N; i++) {
        char *f = wf_arena_alloc(arena, 700);
        int k = snprintf(f, 700, "on_all_completed");
        for (int d = 0; d < i % 40 && k < 680; d++)
            k += snprintf(f + k, (size_t)(700 - k), ".on_all_completed");
        v[i] = (wf_violation){.field = f};
        v[i].description =
            wf_arena_printf(arena, "violation %d: the chain link has no assignee", i);
    }
    uint8_t *bytes = NULL;
    size_t n =
        wf_rpc_status_details(arena, WF_E_INVALID_ARGUMENT, "the request is invalid", v, N, &bytes);
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_le(n, 4096);
    Google__Rpc__Status *st = google__rpc__status__unpack(NULL, n, bytes);
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(st->n_details, 2);
    Google__Rpc__BadRequest *br = google__rpc__bad_request__unpack(NULL, st->details[1]->value.len,
                                                                   st->details[1]->value.data);
    ck_assert_ptr_nonnull(br);
    size_t k = br->n_field_violations;
    ck_assert_uint_ge(k, 2);
    ck_assert_uint_le(k, 20);
    /* The kept ones come first and unchanged. */
    ck_assert_str_eq(br->field_violations[0]->field, "on_all_completed");
    ck_assert_str_eq(br->field_violations[0]->description,
                     "violation 0: the chain link has no assignee");
    char want[64];
    snprintf(want, sizeof want, "%zu more violations, from this field on, not listed",
             (size_t)N - (k - 1));
    ck_assert_str_eq(br->field_violations[k - 1]->description, want);
    google__rpc__bad_request__free_unpacked(br, NULL);
    google__rpc__status__free_unpacked(st, NULL);

    /* Twenty short ones: nineteen and a count of one. */
    for (int i = 0; i < 20; i++)
        v[i].field = "f";
    n = wf_rpc_status_details(arena, WF_E_INVALID_ARGUMENT, "m", v, 20, &bytes);
    st = google__rpc__status__unpack(NULL, n, bytes);
    ck_assert_ptr_nonnull(st);
    br = google__rpc__bad_request__unpack(NULL, st->details[1]->value.len,
                                          st->details[1]->value.data);
    ck_assert_ptr_nonnull(br);
    ck_assert_uint_eq(br->n_field_violations, 20);
    ck_assert_str_eq(br->field_violations[19]->description,
                     "1 more violation, from this field on, not listed");
    google__rpc__bad_request__free_unpacked(br, NULL);
    google__rpc__status__free_unpacked(st, NULL);
}
END_TEST

int
main(void)
{
    const wf_test_case cases[] = {
        {"interceptors", setup, teardown, 0}, {"status_and_table", setup, teardown, 0}, {NULL}};
    return wf_test_run(wf_test_suite_of("rpc_unit", cases));
}
