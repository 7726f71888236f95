/*
 * rpc_wire: checks a serialized request against its message descriptor
 * before protobuf-c unpacks it.
 *
 * protobuf-c recurses once per nested message and has no depth limit, so a
 * small request of deeply nested messages (AssignToRequest.on_all_completed
 * refers to itself) would overflow the worker's stack; it does not check
 * that string fields are UTF-8, which every later layer (JSON, logs, other
 * languages' clients) assumes; it hands strings on as C strings, so a NUL
 * byte would cut one silently; it reads a known field whatever wire type it
 * comes with; and it takes any Duration or Timestamp. This walk bounds the
 * depth and validates all of that without allocating.
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
 * most WF_RPC_MAX_DEPTH), every known field of every message in it has the
 * wire type of its type, every string field holds valid UTF-8 without NUL
 * bytes, and every google.protobuf.Duration and Timestamp is within its
 * documented range (a Duration also no further from now than the last
 * valid Timestamp); else WF_E_INVALID_ARGUMENT naming the problem. For a
 * field refused, *bad (when bad and arena are non-NULL) is the
 * violation: its field is the path from the request, e.g.
 * "definition.transitions[2].name", allocated in arena; otherwise bad->field
 * is NULL. Malformed wire data is left to the unpacker to refuse. */
wf_code wf_rpc_wire_check(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                          int max_depth, wf_arena *arena, wf_violation *bad, wf_error *err);

#endif /* WF_RPC_WIRE_H */
