/*
 * rpc_interceptors: the ordered checks every call passes before its payload
 * is unpacked (request id/trace, metadata size, API key → tenant, actor,
 * deadline).
 *
 * They read only metadata and configuration, so they are unit-tested with
 * fake metadata arrays and no server. The first failing link stops the chain
 * and its code becomes the call's status. The access log is written after
 * the call, for every outcome, by rpc_server.c.
 */
#ifndef WF_RPC_INTERCEPTORS_H
#define WF_RPC_INTERCEPTORS_H

#include <stdint.h>

#include <grpc/grpc.h>

#include "wf_arena.h"
#include "wf_config.h"
#include "wf_error.h"

/* The most request metadata a call may carry, counted as HTTP/2 counts a
 * header list (name + value + 32 bytes per entry); more is refused with
 * RESOURCE_EXHAUSTED TOO_LARGE. Core's own limit (the server's channel
 * args) sits far above, so that an oversized header block is still parsed
 * whole: core refusing it part-way loses the connection's HPACK state and
 * with it every other call on the connection. */
#define WF_RPC_MAX_METADATA_BYTES (16 * 1024)
#define WF_RPC_CORE_MAX_METADATA_BYTES (256 * 1024)

/* What the chain reads and what it establishes. Output strings live in the
 * arena (or point into the call's metadata, valid until the call ends). */
typedef struct wf_rpc_ctx {
    /* inputs */
    const wf_config *cfg;
    const grpc_metadata_array *md;
    unsigned route_flags;  /* WF_ROUTE_* of the method; 0 for health */
    int public_method;     /* 1: no API key needed (health) */
    gpr_timespec deadline; /* the call's deadline (monotonic clock) */
    wf_arena *arena;

    /* outputs */
    const char *request_id;   /* x-request-id or a generated UUID */
    const char *trace_id;     /* from traceparent, NULL when absent/invalid */
    const char *tenant;       /* never NULL after the tenant link */
    const char *key_id;       /* non-secret id of the key used, NULL in open access */
    const char *actor;        /* x-actor-id or NULL */
    const char *actor_groups; /* x-actor-groups when trusted, else NULL */
    int64_t deadline_ms;      /* monotonic ms, 0 = none */
} wf_rpc_ctx;

/* Runs the whole chain. WF_OK or the first failure (err set). */
wf_code wf_rpc_intercept(wf_rpc_ctx *ctx, wf_error *err);

/* Looks a metadata key up. Returns the number of occurrences; *value is set
 * to the first (NUL-terminated copy in the arena) when there is one, and
 * *len (when len is non-NULL) to its whole length: a value may hold NUL
 * bytes (raw HTTP/2 allows them), which strlen would not count. */
int wf_rpc_md_get(const grpc_metadata_array *md, const char *key, wf_arena *arena,
                  const char **value, size_t *len);

/* Constant-time comparison of a presented secret with a configured one:
 * the time depends only on the configured key's length. */
int wf_rpc_secret_equal(const char *presented, size_t presented_len, const char *expected);

#endif /* WF_RPC_INTERCEPTORS_H */
