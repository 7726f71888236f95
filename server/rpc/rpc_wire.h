/*
 * rpc_wire: checks a serialized request against its message descriptor
 * before protobuf-c unpacks it.
 *
 * protobuf-c recurses once per nested message and has no depth limit, so a
 * small request of deeply nested messages (AssignToRequest.on_all_completed
 * refers to itself) would overflow the worker's stack; and it does not check
 * that string fields are UTF-8, which every later layer (JSON, logs, other
 * languages' clients) assumes. This walk bounds the depth and validates the
 * strings without allocating.
 */
#ifndef WF_RPC_WIRE_H
#define WF_RPC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "handler.h"
#include "wf_arena.h"
#include "wf_error.h"

/* Deepest nesting of messages a request may have (the request is depth 1). */
#define WF_RPC_MAX_DEPTH 32

/* WF_OK when data (len bytes) nests messages at most max_depth deep (at
 * most WF_RPC_MAX_DEPTH) and every string field of every message in it
 * holds valid UTF-8; else WF_E_INVALID_ARGUMENT naming the problem. For a
 * string that is not UTF-8, *bad (when bad and arena are non-NULL) is the
 * violation: its field is the path from the request, e.g.
 * "definition.transitions[2].name", allocated in arena; otherwise bad->field
 * is NULL. Malformed wire data is left to the unpacker to refuse. */
wf_code wf_rpc_wire_check(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                          int max_depth, wf_arena *arena, wf_violation *bad, wf_error *err);

#endif /* WF_RPC_WIRE_H */
