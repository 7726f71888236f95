/*
 * rpc_status: wf_code → gRPC status, and the google.rpc.Status trailer.
 *
 * This is the only place that knows how the core's error vocabulary maps to
 * gRPC codes. Every error status carries, in the grpc-status-details-bin
 * trailer, a google.rpc.Status with an ErrorInfo{reason, domain
 * "workflow.v1"} and, for validation failures, a google.rpc.BadRequest;
 * an OVERLOADED or BULKHEAD_FULL refusal adds a google.rpc.RetryInfo.
 */
#ifndef WF_RPC_STATUS_H
#define WF_RPC_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/status.h>

#include "handler.h"
#include "wf_arena.h"
#include "wf_error.h"

#define WF_ERROR_DOMAIN "workflow.v1"

/* The gRPC status code of a core code. */
grpc_status_code wf_rpc_status_code(wf_code code);

/* The canonical name of a grpc status code ("UNAVAILABLE"). */
const char *wf_rpc_code_name(int code);

/* The delay an OVERLOADED refusal asks for in its google.rpc.RetryInfo. */
#define WF_RPC_RETRY_DELAY_MS 200
/* The delay a BULKHEAD_FULL refusal asks for: the work of a full class
 * (a layout, a compile, a slow expression) takes up to seconds. */
#define WF_RPC_BULKHEAD_RETRY_DELAY_MS 1000

/* Serializes google.rpc.Status{code, message, details: [ErrorInfo,
 * BadRequest?, RetryInfo (OVERLOADED and BULKHEAD_FULL only)?]}
 * into the arena. Returns the byte length (0 when out of memory) and sets
 * *out. */
size_t wf_rpc_status_details(wf_arena *arena, wf_code code, const char *message,
                             const wf_violation *violations, size_t nviolations, uint8_t **out);

#endif /* WF_RPC_STATUS_H */
