/*
 * rpc_interceptors: request id/trace → metadata size → API key → tenant →
 * actor → deadline.
 *
 * Messages never contain the presented key. Duplicated security-relevant
 * metadata (two x-api-key, two x-tenant-id, two x-actor-id) is refused
 * rather than guessed at.
 */
#include "rpc_interceptors.h"

#include <string.h>

#include <grpc/support/time.h>

#include "handler.h"
#include "wf_id.h"
#include "wf_time.h"

#define MAX_ID_LEN 128

int
wf_rpc_md_get(const grpc_metadata_array *md, const char *key, wf_arena *arena, const char **value,
              size_t *len)
{
    int n = 0;
    *value = NULL;
    if (len != NULL)
        *len = 0;
    for (size_t i = 0; i < md->count; i++) {
        if (grpc_slice_str_cmp(md->metadata[i].key, key) != 0)
            continue;
        if (n++ == 0) {
            const grpc_slice *v = &md->metadata[i].value;
            *value = wf_arena_strndup(arena, (const char *)GRPC_SLICE_START_PTR(*v),
                                      GRPC_SLICE_LENGTH(*v));
            if (len != NULL && *value != NULL)
                *len = GRPC_SLICE_LENGTH(*v);
        }
    }
    return n;
}

int
wf_rpc_secret_equal(const char *presented, size_t presented_len, const char *expected)
{
    return wf_secret_equal(presented, presented_len, expected);
}

/* 1..max printable ASCII bytes (n bytes at s: a NUL is not printable). */
static int
printable_id(const char *s, size_t n, size_t max)
{
    if (s == NULL || n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return 0;
    return 1;
}

static wf_code
icpt_request_id(wf_rpc_ctx *ctx, wf_error *err)
{
    const char *v;
    size_t vlen;
    if (wf_rpc_md_get(ctx->md, "x-request-id", ctx->arena, &v, &vlen) > 0 &&
        printable_id(v, vlen, MAX_ID_LEN)) {
        ctx->request_id = v;
    } else {
        char *id = wf_arena_alloc(ctx->arena, WF_UUID_LEN + 1);
        if (id == NULL)
            return wf_error_nomem(err);
        wf_uuid7(id);
        ctx->request_id = id;
    }
    /* W3C traceparent: "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>". */
    if (wf_rpc_md_get(ctx->md, "traceparent", ctx->arena, &v, NULL) > 0 && strlen(v) >= 55 &&
        v[2] == '-' && v[35] == '-') {
        char *t = wf_arena_strndup(ctx->arena, v + 3, 32);
        int ok = t != NULL;
        for (int i = 0; ok && i < 32; i++)
            ok = (t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f');
        if (ok)
            ctx->trace_id = t;
    }
    return WF_OK;
}

static wf_code
icpt_metadata_size(wf_rpc_ctx *ctx, wf_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < ctx->md->count; i++)
        total += GRPC_SLICE_LENGTH(ctx->md->metadata[i].key) +
                 GRPC_SLICE_LENGTH(ctx->md->metadata[i].value) + 32;
    if (total > WF_RPC_MAX_METADATA_BYTES)
        return wf_error_set(err, WF_E_TOO_LARGE,
                            "the request's metadata is %zu bytes; at most %d are accepted", total,
                            WF_RPC_MAX_METADATA_BYTES);
    return WF_OK;
}

/* Finds the presented key: x-api-key, or authorization: Bearer <key>.
 * *klen is its whole length: a NUL inside is part of it, not its end. */
static wf_code
presented_key(wf_rpc_ctx *ctx, const char **key, size_t *klen, wf_error *err)
{
    const char *api, *auth;
    size_t api_len, auth_len;
    int napi = wf_rpc_md_get(ctx->md, "x-api-key", ctx->arena, &api, &api_len);
    int nauth = wf_rpc_md_get(ctx->md, "authorization", ctx->arena, &auth, &auth_len);
    *key = NULL;
    *klen = 0;
    if (napi > 1 || nauth > 1)
        return wf_error_set(err, WF_E_API_KEY_INVALID, "API key metadata appears more than once");
    if (napi == 1) {
        *key = api;
        *klen = api_len;
    } else if (nauth == 1 && auth != NULL) {
        if (auth_len <= 7 || strncmp(auth, "Bearer ", 7) != 0)
            return wf_error_set(err, WF_E_API_KEY_INVALID,
                                "authorization metadata must be \"Bearer <key>\"");
        *key = auth + 7;
        *klen = auth_len - 7;
    }
    if (*key == NULL || *klen == 0)
        return wf_error_set(err, WF_E_API_KEY_MISSING,
                            "an API key is required in x-api-key or authorization: Bearer");
    return WF_OK;
}

static wf_code
icpt_auth_tenant(wf_rpc_ctx *ctx, wf_error *err)
{
    const wf_config *cfg = ctx->cfg;
    const char *tenant;
    size_t tenant_len;
    int ntenant = wf_rpc_md_get(ctx->md, "x-tenant-id", ctx->arena, &tenant, &tenant_len);
    if (ntenant > 1)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "x-tenant-id appears more than once");
    if (ntenant == 1 && !wf_id_tenant_valid(tenant, tenant_len))
        return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                            "x-tenant-id must be 1 to 64 characters of letters, digits, \".\", "
                            "\"_\" or \"-\"");

    wf_key_match match = {"", ""};
    bool bound = false;
    if (!ctx->public_method && !wf_config_open_access(cfg)) {
        const char *key;
        size_t klen;
        wf_code rc = presented_key(ctx, &key, &klen, err);
        if (rc != WF_OK)
            return rc;
        /* Compared against every configured key, without early exit. The
         * match is a copy: the set may be replaced during the call. */
        if (!wf_config_find_key(cfg, key, klen, &match))
            return wf_error_set(err, WF_E_API_KEY_INVALID, "the API key is not valid");
        ctx->key_id = wf_arena_strdup(ctx->arena, match.key_id);
        if (ctx->key_id == NULL)
            return wf_error_nomem(err);
        bound = match.tenant[0] != '\0';
    }

    if (bound) {
        if (ntenant == 1 && strcmp(tenant, match.tenant) != 0)
            return wf_error_set(err, WF_E_TENANT_FORBIDDEN,
                                "the API key may not act in tenant \"%s\"", tenant);
        ctx->tenant = wf_arena_strdup(ctx->arena, match.tenant);
        if (ctx->tenant == NULL)
            return wf_error_nomem(err);
    } else {
        ctx->tenant = ntenant == 1 ? tenant : "default";
    }
    return WF_OK;
}

static wf_code
icpt_actor(wf_rpc_ctx *ctx, wf_error *err)
{
    const char *actor;
    size_t actor_len;
    int n = wf_rpc_md_get(ctx->md, "x-actor-id", ctx->arena, &actor, &actor_len);
    if (n > 1)
        return wf_error_set(err, WF_E_INVALID_ARGUMENT, "x-actor-id appears more than once");
    if (n == 1) {
        if (!printable_id(actor, actor_len, MAX_ID_LEN))
            return wf_error_set(err, WF_E_INVALID_ARGUMENT,
                                "x-actor-id must be 1 to 128 printable ASCII characters");
        ctx->actor = actor;
    } else if (ctx->route_flags & WF_ROUTE_ACTOR) {
        return wf_error_set(err, WF_E_ACTOR_MISSING,
                            "x-actor-id is required: this call acts for a person");
    }
    if (ctx->cfg->trust_actor_groups) {
        const char *groups;
        size_t groups_len;
        if (wf_rpc_md_get(ctx->md, "x-actor-groups", ctx->arena, &groups, &groups_len) == 1 &&
            groups != NULL && strlen(groups) == groups_len)
            ctx->actor_groups = groups;
    }
    return WF_OK;
}

static wf_code
icpt_deadline(wf_rpc_ctx *ctx, wf_error *err)
{
    gpr_timespec d = ctx->deadline;
    if (d.tv_sec == INT64_MAX || gpr_time_cmp(d, gpr_inf_future(d.clock_type)) == 0) {
        ctx->deadline_ms = 0;
        return WF_OK;
    }
    gpr_timespec now = gpr_now(d.clock_type);
    if (gpr_time_cmp(d, now) <= 0)
        return wf_error_set(err, WF_E_DEADLINE_EXCEEDED, "the call's deadline has passed");
    int64_t left = gpr_time_to_millis(gpr_time_sub(d, now));
    ctx->deadline_ms = wf_mono_ms() + (left > 0 ? left : 1);
    return WF_OK;
}

typedef wf_code (*interceptor_fn)(wf_rpc_ctx *ctx, wf_error *err);

/* The order matters: the request id comes first so that every later failure
 * is logged with it; the key is checked before anything about the caller's
 * claims (tenant, actor) is believed. */
static const interceptor_fn chain[] = {
    icpt_request_id, icpt_metadata_size, icpt_auth_tenant, icpt_actor, icpt_deadline,
};

wf_code
wf_rpc_intercept(wf_rpc_ctx *ctx, wf_error *err)
{
    for (size_t i = 0; i < sizeof chain / sizeof chain[0]; i++) {
        wf_code rc = chain[i](ctx, err);
        if (rc != WF_OK)
            return rc;
    }
    return WF_OK;
}
